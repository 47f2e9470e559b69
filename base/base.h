// base/base.h: what every stage of tdslc shares and nothing else — the context,
// the arena, source files and locations, diagnostics and internal assertions.
// Includes only libc. Everything the compiler allocates lives in cx->arena and is
// released at once by ctx_free().
#ifndef TDSLC_BASE_BASE_H
#define TDSLC_BASE_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct Arena Arena;
typedef struct ArenaChunk ArenaChunk;
typedef struct SrcFile SrcFile;
typedef struct Loc Loc;
typedef struct Ctx Ctx;

#define TD_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define TD_NORETURN _Noreturn

// ---- arena: zeroed bump allocation, freed all at once ----
struct Arena {
  ArenaChunk *head;
  size_t total;
};
void *arena_alloc(Arena *a, size_t size);  // zeroed, 16-byte aligned
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_strdup(Arena *a, const char *s);
char *arena_printf(Arena *a, const char *fmt, ...) TD_PRINTF(2, 3);
void arena_reset(Arena *a);

// ---- growable arrays in the arena: VEC(T) v = {0}; vec_push(cx, &v, x) ----
#define VEC(T) struct { T *data; int len, cap; }
void *vec_grow(Arena *a, void *data, int *cap, size_t elem);
#define vec_push(arena, v, x)                                                        \
  do {                                                                               \
    if ((v)->len == (v)->cap)                                                        \
      (v)->data = vec_grow((arena), (v)->data, &(v)->cap, sizeof(*(v)->data));       \
    (v)->data[(v)->len++] = (x);                                                     \
  } while (0)

// ---- source files and locations ----
// A Loc is a byte range [begin, end) of one source file; line:col is computed
// lazily from the file's line map when a diagnostic is printed.
struct SrcFile {
  const char *path;
  const char *text;  // NUL-terminated copy (the file may contain NUL bytes: len is the truth)
  size_t len;
  uint32_t *line_starts;  // offset of each line, built when the file is read
  int nlines;
};
struct Loc {
  const SrcFile *file;
  uint32_t begin, end;
};
// NULL (and a one-line message on cx->diag_out) when the file cannot be read or is not UTF-8
// text (an invalid UTF-8 sequence or a NUL byte): the caller's exit status is 2.
SrcFile *srcfile_read(Ctx *cx, const char *path);
SrcFile *srcfile_from_string(Ctx *cx, const char *path, const char *text, size_t len);
// 0 when text[0, len) is UTF-8 text (valid UTF-8, no NUL byte), else 1 + the offset of
// the first byte that is not.
size_t srcfile_not_text(const char *text, size_t len);
void srcfile_linecol(const SrcFile *f, uint32_t off, int *line, int *col);  // 1-based, byte columns
Loc loc_join(Loc a, Loc b);  // the range covering both
int loc_line(Loc loc);       // 1-based line of loc.begin; 0 for a Loc without a file

// ---- the context: one per compilation ----
enum { DIAG_ERROR_LIMIT = 20 };  // the default of Ctx.error_limit (tdslc -ferror-limit=N)
struct Ctx {
  Arena arena;
  int nerrors, nwarnings;
  int error_limit;     // errors printed before "too many errors emitted" (0: no limit)
  bool stopped;        // the limit was reached: later errors are counted, nothing is printed
  const char *src_path;  // the source file last read (srcfile_*), for outputs that name it
  FILE *diag_out;      // stderr unless a test redirects it
  uint64_t *reported;  // hashes of (loc, message) already printed: inlining may meet one mistake twice
  int nreported, capreported;
};
void ctx_init(Ctx *cx);
void ctx_free(Ctx *cx);

// ---- diagnostics: path:line:col: error: msg, the source line, ^~~~ under [begin, end) ----
// Bounded as a compiler's are: after cx->error_limit errors, one "too many errors
// emitted, stopping now" and silence; the echoed line shows control bytes and invalid
// UTF-8 as <U+XXXX> and <XX>, and a line wider than DIAG_LINE_WIDTH columns is cut to a
// window around the caret ("..." marks a cut); a message is cut after DIAG_MAX_MESSAGE bytes.
enum { DIAG_LINE_WIDTH = 100, DIAG_MAX_MESSAGE = 2048 };
void diag_error(Ctx *cx, Loc loc, const char *fmt, ...) TD_PRINTF(3, 4);
void diag_warning(Ctx *cx, Loc loc, const char *fmt, ...) TD_PRINTF(3, 4);
void diag_note(Ctx *cx, Loc loc, const char *fmt, ...) TD_PRINTF(3, 4);
// A run-time data error found at loc: printed as "path:line:col: error: msg" (exit 3 follows).
void diag_verror(Ctx *cx, const char *kind, Loc loc, const char *fmt, va_list ap);

// ---- internal errors: never a signal, exit status 4 ----
TD_NORETURN void td_internal_error(const char *file, int line, const char *fmt, ...) TD_PRINTF(3, 4);
#define TD_ASSERT(c) \
  ((c) ? (void)0 : td_internal_error(__FILE__, __LINE__, "assertion failed: %s", #c))
#define td_unreachable() td_internal_error(__FILE__, __LINE__, "unreachable")

// ---- checked int64 arithmetic: how sizes, strides, offsets and counts are computed ----
// td_add/td_mul: false on overflow (*r is then the wrapped value). td_sat_*: for
// estimates (FLOP and byte counts), saturating at INT64_MAX.
static inline bool td_add(int64_t a, int64_t b, int64_t *r) { return !__builtin_add_overflow(a, b, r); }
static inline bool td_mul(int64_t a, int64_t b, int64_t *r) { return !__builtin_mul_overflow(a, b, r); }
static inline int64_t td_sat_add(int64_t a, int64_t b) {
  int64_t r;
  return td_add(a, b, &r) ? r : INT64_MAX;
}
static inline int64_t td_sat_mul(int64_t a, int64_t b) {
  int64_t r;
  return td_mul(a, b, &r) ? r : INT64_MAX;
}

#endif
