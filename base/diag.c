// base/diag.c: source files, line maps and diagnostics. A message is printed as
// `path:line:col: kind: msg`, then the source line, then a caret with tildes under
// [begin, end) of that line. Columns are 1-based byte columns. The same message at
// the same place is printed once (inlining can check one body several times).
//
// Bounded, as a compiler's diagnostics are, whatever the input:
//   - after cx->error_limit errors the next one prints "too many errors emitted,
//     stopping now" instead, and from then on nothing is printed (errors are still
//     counted, so the driver still fails);
//   - the echoed source line shows a control byte as <U+XXXX> and a byte that is not
//     UTF-8 as <XX> (a tab stays a tab, in the caret line too, so the two line up); a
//     line wider than DIAG_LINE_WIDTH columns is cut to a window of that width around
//     the caret, "..." marking each cut; the caret line follows the window;
//   - a message has its control bytes escaped and is cut after DIAG_MAX_MESSAGE bytes;
//   - srcfile_read refuses a file that is not UTF-8 text (invalid UTF-8, or a NUL
//     byte) in one line, before any stage reads it.
#include "base/base.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

// ---- UTF-8 ----
// The length of the UTF-8 sequence at s[0, n) (1 to 4), or 0 when it is not a valid
// one (a stray continuation byte, a truncated or overlong sequence, a surrogate, a
// code point above U+10FFFF). *cp: its code point.
static int utf8_seq(const unsigned char *s, size_t n, uint32_t *cp) {
  unsigned c = s[0];
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  int len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
  if (!len || (size_t)len > n || (len == 3 && c > 0xEF))
    return 0;
  uint32_t v = c & (0x7F >> len);
  for (int i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80)
      return 0;
    v = v << 6 | (s[i] & 0x3F);
  }
  static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (v < least[len] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
    return 0;
  *cp = v;
  return len;
}

size_t srcfile_not_text(const char *text, size_t len) {
  const unsigned char *s = (const unsigned char *)text;
  for (size_t i = 0; i < len;) {
    uint32_t cp;
    int n = s[i] ? utf8_seq(s + i, len - i, &cp) : 0;
    if (!n)
      return i + 1;
    i += (size_t)n;
  }
  return 0;
}

SrcFile *srcfile_from_string(Ctx *cx, const char *path, const char *text, size_t len) {
  SrcFile *f = arena_alloc(&cx->arena, sizeof *f);
  f->path = arena_strdup(&cx->arena, path);
  cx->src_path = f->path;
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
    fprintf(cx->diag_out, "tdslc: error: cannot open '%s': %s\n", path, strerror(errno));
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
    fprintf(cx->diag_out, "tdslc: error: cannot read '%s'\n", path);
    return NULL;
  }
  // Not text: said in one line (where, and the byte), exit status 2 as for a file that
  // cannot be read; no stage sees it, so a binary file costs no flood of errors.
  size_t at = srcfile_not_text(buf, len);
  if (at--) {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at; i++)
      line += buf[i] == '\n', col = buf[i] == '\n' ? 1 : col + 1;
    fprintf(cx->diag_out, "tdslc: error: '%s' is not UTF-8 text: %s 0x%02X at line %zu, byte column %zu\n", path,
            buf[at] ? "invalid byte" : "NUL byte", (unsigned char)buf[at], line, col);
    free(buf);
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

// ---- the echoed line and its caret ----
enum { TABSTOP = 8 };

// One character of a source line as displayed: *nbytes bytes of the source, shown as
// text (NUL-terminated) over the returned number of columns; col is the display column
// it starts at (for a tab's width). A tab is itself (it advances to the next tab
// stop); a control character is <U+XXXX>; a byte that does not begin a valid UTF-8
// sequence is <XX>; any other character is its bytes, one column.
static int cell(const char *line, uint32_t i, uint32_t stop, int col, char text[16], int *nbytes) {
  const unsigned char *s = (const unsigned char *)line + i;
  uint32_t cp;
  int n = utf8_seq(s, stop - i, &cp);
  *nbytes = n ? n : 1;
  if (!n)
    return snprintf(text, 16, "<%02X>", s[0]);
  if (cp == '\t') {
    strcpy(text, "\t");
    return TABSTOP - col % TABSTOP;
  }
  if (cp < 0x20 || (cp >= 0x7F && cp < 0xA0))
    return snprintf(text, 16, "<U+%04X>", (unsigned)cp);
  memcpy(text, s, (size_t)n);
  text[n] = 0;
  return 1;
}

// w blanks under a character w columns wide; a tab (w < 0) under a tab.
static void blanks(FILE *out, int w) {
  if (w < 0)
    fputc('\t', out);
  for (int k = 0; k < w; k++)
    fputc(' ', out);
}

// Prints the source line holding loc.begin and a caret under the part of [begin, end)
// that lies on it (a caret alone at the end of the line when begin is there). A line
// wider than DIAG_LINE_WIDTH shows a window of that width around the caret.
static void print_caret(FILE *out, Loc loc) {
  const SrcFile *f = loc.file;
  const char *t = f->text;
  int l = line_of(f, loc.begin > f->len ? (uint32_t)f->len : loc.begin);
  uint32_t start = f->line_starts[l], stop = start;
  while (stop < f->len && t[stop] != '\n')
    stop++;
  if (stop > start && t[stop - 1] == '\r')  // a CRLF line ends before its CR
    stop--;
  uint32_t end = loc.end > stop ? stop : loc.end;
  uint32_t begin = loc.begin > stop ? stop : loc.begin;
  // The display columns of begin and end, and of the whole line.
  char text[16];
  int col = 0, cb = -1, ce = -1, nb;
  for (uint32_t i = start; i < stop; i += (uint32_t)nb) {
    if (i >= begin && cb < 0)
      cb = col;
    if (i >= end && ce < 0)
      ce = col;
    col += cell(t, i, stop, col, text, &nb);
  }
  int width = col;
  if (cb < 0)
    cb = width;
  if (ce < 0)
    ce = width;
  if (ce <= cb)
    ce = cb + 1;  // the caret alone
  // The window [ws, we): all of the line when it fits, else DIAG_LINE_WIDTH columns that
  // start at the caret less half the room its range leaves.
  int ws = 0, we = width;
  if (width > DIAG_LINE_WIDTH) {
    int range = ce - cb < DIAG_LINE_WIDTH ? ce - cb : DIAG_LINE_WIDTH;
    ws = cb - (DIAG_LINE_WIDTH - range) / 2;
    if (ws > width - DIAG_LINE_WIDTH)
      ws = width - DIAG_LINE_WIDTH;
    if (ws < 0)
      ws = 0;
    we = ws + DIAG_LINE_WIDTH;
  }
  // The line: the characters wholly inside the window, "..." where it cuts. Then the
  // caret line under the same characters: blanks (a tab stays a tab) up to the caret,
  // then ^ and a ~ per column of the range.
  for (int pass = 0; pass < 2; pass++) {
    fputs("    ", out);
    col = 0;
    bool cut = false, shown = false;
    for (uint32_t i = start; i < stop; i += (uint32_t)nb) {
      int w = cell(t, i, stop, col, text, &nb);
      if (col + w > we) {
        if (pass == 0)
          fputs("...", out);
        break;
      }
      if (col < ws) {
        cut = true;
        col += w;
        continue;
      }
      if (!shown && cut)
        fputs(pass == 0 ? "..." : "   ", out);
      shown = true;
      if (pass == 0)
        fputs(text, out);
      else if (col + w <= cb)
        blanks(out, text[0] == '\t' ? -1 : w);
      else if (col < ce)
        for (int k = 0; k < w; k++)
          fputc(col + k == cb ? '^' : '~', out);
      else
        break;
      col += w;
    }
    if (pass == 1 && cb >= width)  // the caret just past the line's last character
      fputs(cut && !shown ? "   ^" : "^", out);
    fputc('\n', out);
  }
}

// msg with its control characters as <U+XXXX> (a newline in a message is one on
// purpose: it stays), invalid UTF-8 as <XX>, cut after DIAG_MAX_MESSAGE bytes.
static void print_message(FILE *out, const char *msg) {
  const unsigned char *s = (const unsigned char *)msg;
  size_t n = strlen(msg);
  for (size_t i = 0; i < n;) {
    if (i >= DIAG_MAX_MESSAGE) {
      fputs(" [...]", out);
      break;
    }
    uint32_t cp;
    int k = utf8_seq(s + i, n - i, &cp);
    if (!k)
      fprintf(out, "<%02X>", s[i]);
    else if ((cp < 0x20 && cp != '\n' && cp != '\t') || (cp >= 0x7F && cp < 0xA0))
      fprintf(out, "<U+%04X>", (unsigned)cp);
    else
      fwrite(s + i, 1, (size_t)k, out);
    i += k ? (size_t)k : 1;
  }
}

static void report(Ctx *cx, const char *kind, Loc loc, const char *fmt, va_list ap) {
  if (cx->stopped)  // past the error limit: nothing more is printed
    return;
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
  if (strcmp(kind, "error") == 0 && cx->error_limit > 0 && cx->nerrors >= cx->error_limit) {
    // This error is one too many: it is counted (diag_error), not printed.
    fprintf(out, "tdslc: error: too many errors emitted, stopping now [-ferror-limit=%d]\n", cx->error_limit);
    cx->stopped = true;
  } else if (loc.file) {
    int line, col;
    srcfile_linecol(loc.file, loc.begin, &line, &col);
    fprintf(out, "%s:%d:%d: %s: ", loc.file->path, line, col, kind);
    print_message(out, msg);
    fputc('\n', out);
    print_caret(out, loc);
  } else {
    fprintf(out, "tdslc: %s: ", kind);
    print_message(out, msg);
    fputc('\n', out);
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
  bool stopped = cx->stopped;
  report(cx, "error", loc, fmt, ap);
  va_end(ap);
  // A repeated message was not printed and does not count twice; past the error limit
  // every error counts, printed or not.
  if (stopped || cx->nreported != before || !loc.file)
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
