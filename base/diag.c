// base/diag.c: source files, line maps and diagnostics. A message is printed as
// `path:line:col: kind: msg`, then the source line, then a caret with tildes under
// [begin, end) of that line. Columns are 1-based byte columns. The same message at
// the same place is printed once (inlining can check one body several times).
#include "base/base.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

SrcFile *srcfile_from_string(Ctx *cx, const char *path, const char *text, size_t len) {
  SrcFile *f = arena_alloc(&cx->arena, sizeof *f);
  f->path = arena_strdup(&cx->arena, path);
  f->text = arena_strndup(&cx->arena, text, len);
  f->len = len;
  int n = 1;
  for (size_t i = 0; i < len; i++)
    n += text[i] == '\n';
  f->line_starts = arena_alloc(&cx->arena, sizeof(uint32_t) * (size_t)n);
  f->nlines = n;
  for (size_t i = 0, k = 1; i < len; i++)
    if (text[i] == '\n')
      f->line_starts[k++] = (uint32_t)i + 1;
  return f;
}

SrcFile *srcfile_read(Ctx *cx, const char *path) {
  FILE *fp = fopen(path, "rb");
  if (!fp) {
    fprintf(stderr, "tdslc: error: cannot open '%s': %s\n", path, strerror(errno));
    return NULL;
  }
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  size_t n;
  while (buf && (n = fread(buf + len, 1, cap - len, fp)) > 0) {
    len += n;
    if (len == cap) {
      char *nb = realloc(buf, cap *= 2);
      if (!nb)
        free(buf);
      buf = nb;
    }
  }
  bool bad = !buf || ferror(fp);
  fclose(fp);
  if (bad) {
    free(buf);
    fprintf(stderr, "tdslc: error: cannot read '%s'\n", path);
    return NULL;
  }
  SrcFile *f = srcfile_from_string(cx, path, buf, len);
  free(buf);
  return f;
}

static int line_of(const SrcFile *f, uint32_t off) {
  int lo = 0, hi = f->nlines - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (f->line_starts[mid] <= off)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

void srcfile_linecol(const SrcFile *f, uint32_t off, int *line, int *col) {
  if (off > f->len)
    off = (uint32_t)f->len;
  int l = line_of(f, off);
  *line = l + 1;
  *col = (int)(off - f->line_starts[l]) + 1;
}

int loc_line(Loc loc) {
  if (!loc.file)
    return 0;
  int line, col;
  srcfile_linecol(loc.file, loc.begin, &line, &col);
  return line;
}

Loc loc_join(Loc a, Loc b) {
  if (!a.file)
    return b;
  if (!b.file)
    return a;
  Loc r = a;
  r.begin = a.begin < b.begin ? a.begin : b.begin;
  r.end = a.end > b.end ? a.end : b.end;
  return r;
}

static uint64_t hash_message(Loc loc, const char *kind, const char *msg) {
  uint64_t h = 1469598103934665603ull ^ loc.begin ^ ((uint64_t)loc.end << 32);
  for (const char *s = kind; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  for (const char *s = msg; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static bool seen_before(Ctx *cx, uint64_t h) {
  for (int i = 0; i < cx->nreported; i++)
    if (cx->reported[i] == h)
      return true;
  if (cx->nreported == cx->capreported) {
    int ncap = cx->capreported ? cx->capreported * 2 : 16;
    uint64_t *p = realloc(cx->reported, sizeof(uint64_t) * (size_t)ncap);
    if (!p)
      return false;
    cx->reported = p;
    cx->capreported = ncap;
  }
  cx->reported[cx->nreported++] = h;
  return false;
}

static bool is_continuation(char c) { return ((unsigned char)c & 0xC0) == 0x80; }

// Prints the source line holding loc.begin and a caret under the part of [begin, end)
// that lies on it. Tabs are kept so the caret lines up in a terminal.
static void print_caret(FILE *out, Loc loc) {
  const SrcFile *f = loc.file;
  int l = line_of(f, loc.begin > f->len ? (uint32_t)f->len : loc.begin);
  uint32_t start = f->line_starts[l], stop = start;
  while (stop < f->len && f->text[stop] != '\n')
    stop++;
  uint32_t end = loc.end > stop ? stop : loc.end;
  uint32_t begin = loc.begin > stop ? stop : loc.begin;
  fputs("    ", out);
  for (uint32_t i = start; i < stop; i++) {
    unsigned char c = (unsigned char)f->text[i];
    fputc(c == 0 || c == '\r' ? ' ' : c, out);
  }
  // One column per character: UTF-8 continuation bytes take no column of their own.
  fputs("\n    ", out);
  for (uint32_t i = start; i < begin; i++)
    if (!is_continuation(f->text[i]))
      fputc(f->text[i] == '\t' ? '\t' : ' ', out);
  fputc('^', out);
  for (uint32_t i = begin + 1; i < end; i++)
    if (!is_continuation(f->text[i]))
      fputc('~', out);
  fputc('\n', out);
}

static void report(Ctx *cx, const char *kind, Loc loc, const char *fmt, va_list ap) {
  char stackbuf[1024];
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(stackbuf, sizeof stackbuf, fmt, ap);
  char *msg = stackbuf;
  if (n >= (int)sizeof stackbuf && (msg = malloc((size_t)n + 1)))
    vsnprintf(msg, (size_t)n + 1, fmt, ap2);
  else if (!msg)
    msg = stackbuf;
  va_end(ap2);
  if (strcmp(kind, "note") != 0 && seen_before(cx, hash_message(loc, kind, msg))) {
    if (msg != stackbuf)
      free(msg);
    return;
  }
  FILE *out = cx->diag_out ? cx->diag_out : stderr;
  if (loc.file) {
    int line, col;
    srcfile_linecol(loc.file, loc.begin, &line, &col);
    fprintf(out, "%s:%d:%d: %s: %s\n", loc.file->path, line, col, kind, msg);
    print_caret(out, loc);
  } else {
    fprintf(out, "tdslc: %s: %s\n", kind, msg);
  }
  if (msg != stackbuf)
    free(msg);
}

void diag_verror(Ctx *cx, const char *kind, Loc loc, const char *fmt, va_list ap) {
  report(cx, kind, loc, fmt, ap);
}

void diag_error(Ctx *cx, Loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int before = cx->nreported;
  report(cx, "error", loc, fmt, ap);
  va_end(ap);
  // A repeated message was not printed and does not count twice.
  if (cx->nreported != before || !loc.file)
    cx->nerrors++;
}

void diag_warning(Ctx *cx, Loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  report(cx, "warning", loc, fmt, ap);
  va_end(ap);
  cx->nwarnings++;
}

void diag_note(Ctx *cx, Loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  report(cx, "note", loc, fmt, ap);
  va_end(ap);
}

void td_internal_error(const char *file, int line, const char *fmt, ...) {
  fflush(stdout);
  fprintf(stderr, "tdslc: internal error at %s:%d: ", file, line);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  exit(4);
}
