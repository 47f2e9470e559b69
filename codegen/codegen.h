// codegen/codegen.h: the backends. Each one prints or builds the loop IR of
// ir/loop.h — it decides nothing the schedule did not — and exports only its
// Target. emit.c holds what the text backends share: the Buf text writer, the
// affine index renderer, names that cannot clash with user names, and the C
// declarations of the entries (--emit=header), which are the same for every
// backend (DESIGN.md, "The generated C ABI").
#ifndef TDSLC_CODEGEN_CODEGEN_H
#define TDSLC_CODEGEN_CODEGEN_H

#include "ir/loop.h"

typedef struct Buf Buf;
typedef struct Target Target;

// A backend: `emit` writes one translation unit (or module) holding every program
// given, in order, to out.
struct Target {
  const char *name;  // "c"
  const char *ext;   // ".c"
  void (*emit)(Ctx *cx, LProgram *const *progs, int nprogs, FILE *out);
};

extern const Target target_c;
extern const Target target_llvm;  // codegen/llvm.c (built with TDSLC_WITH_LLVM): optimised .ll

// ---- emit.c: a growable text buffer in cx->arena ----
struct Buf {
  Ctx *cx;
  char *data;  // NUL-terminated
  size_t len, cap;
};
void buf_init(Buf *b, Ctx *cx);
void buf_printf(Buf *b, const char *fmt, ...) TD_PRINTF(2, 3);
void buf_puts(Buf *b, const char *s);
void buf_indent(Buf *b, int level);  // two spaces per level
void buf_c_string(Buf *b, const char *s);  // a C string literal, quotes included
void buf_write(const Buf *b, FILE *out);

// base + sum coef * var (+ (dyn)), the loop variable k named "v<k>"; the dynamic
// part, if any, is printed by dyn(ctx, b, e).
void emit_index(Buf *b, const LIndex *ix, void (*dyn)(void *ctx, Buf *b, const LExpr *e), void *ctx);

// The C name of parameter i of p: its source name when that is a safe C
// identifier (no C keyword, no libc macro, no name the entry uses itself), else
// "tdsl_g_p<i>". Generated static names all begin with "tdsl_g_".
const char *emit_param_name(Ctx *cx, const LProgram *p, int i);
// "int NAME(const tdsl_tensor *x, ..., tdsl_tensor *out0, ...)", no ';'.
void emit_entry_decl(Ctx *cx, Buf *b, const LProgram *p);
// --emit=header: the declarations of every program's entry, with an include guard.
void emit_header(Ctx *cx, LProgram *const *progs, int nprogs, FILE *out);

#endif
