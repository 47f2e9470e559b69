// tests/unit/codegen_fixture.h: what the backend tests (test_c.c, test_llvm.c,
// test_ptx.c) share, with the prefix fx_:
//   - programs built from source by the whole pipeline (parse, sema, lower, fuse,
//     kernel_build, loop_verify), for the host CPU or for a GPU;
//   - programs built by hand: parameters, results and kernels over the lx_*/ls_*
//     constructors of ir/loop.h;
//   - runtime tensors filled from C arrays, and the text an emitter writes to a FILE;
//   - the checks both CPU backends run on the same entries (elementwise, f16/bf16
//   conversions, Python's integer and float ops, a located data error, the first index
//   error of a parallel loop), with expected values computed here independently of
//   every backend: by hand, by the runtime's own f16/bf16 conversions, or by plain C.
// Every helper asserts (cmocka), so a failure fails the calling test.
#ifndef TDSLC_UNIT_CODEGEN_FIXTURE_H
#define TDSLC_UNIT_CODEGEN_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "frontend/frontend.h"
#include "ir/loop.h"
#include "tdsl.h"

// Entries of one and two parameters and one result.
typedef int (*Fn1)(const tdsl_tensor *, tdsl_tensor *);
typedef int (*Fn2)(const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *);

// ---- programs from source ----
// The whole pipeline on src (file "t.tdsl"): every function of the file, in order, into
// out[0..max); returns how many. fx_compile schedules for the host CPU; fx_compile_gpu
// builds GPU programs (kernel_build without a CpuTarget).
int fx_compile(Ctx *cx, const char *src, LProgram **out, int max);
int fx_compile_gpu(Ctx *cx, const char *src, LProgram **out, int max);

// ---- programs by hand ----
LProgram *fx_program(Ctx *cx, const char *name);  // no parameters yet, file "t.tdsl"
// A parameter (its buffer, returned, is the next one of p) and a result (an output that
// is all of its own new buffer, contiguous).
int fx_param(Ctx *cx, LProgram *p, const char *name, DType dt, int ndim, const int64_t *shape);
int fx_result(Ctx *cx, LProgram *p, const char *name, DType dt, int ndim, const int64_t *shape);
// Kernel "k0" of p, with nvars loop variables, whose argument i is buffer i of p, read
// and written as said.
LKernel *fx_kernel(Ctx *cx, LProgram *p, const bool *read, const bool *written, int nvars);
// base + c0 * var v0 + c1 * var v1; a term whose coefficient is 0 is left out.
LIndex fx_at(int64_t base, int v0, int64_t c0, int v1, int64_t c1);
LExpr *fx_vbinary(Ctx *cx, Op op, LExpr *a, LExpr *b);  // a op b lane by lane (lx_binary makes scalars)
// "gpar" (parallel) or "gseq": out[i] = x[checked(idx[i], 10)] for idx: i64[n], x: f32[10],
// a negative index wrapping as in PyTorch; a bad one raises
// "t.tdsl:1:5: error: index %lld is out of bounds for dimension 0 with size 10".
LProgram *fx_gather_program(Ctx *cx, bool parallel, int64_t n);

// ---- tensors and text ----
tdsl_tensor fx_tensor(tdsl_dtype dt, int ndim, const int64_t *shape);  // new, uninitialized
tdsl_tensor fx_f32(int64_t n, const float *v);                         // f32[n] holding v
tdsl_tensor fx_i64(int64_t n, const int64_t *v);                       // i64[n] holding v
bool fx_same_bits_f32(float a, float b);                               // or both nan

// A FILE writing to memory: fx_text_open, write, then fx_text_close returns the text,
// NUL-terminated (free() it), and sets t->len.
typedef struct FxText {
  char *text;
  size_t len;
  FILE *f;
} FxText;
FILE *fx_text_open(FxText *t);
char *fx_text_close(FxText *t);

// ---- expectations both CPU backends check on their own entries ----
// Python's floor division and modulo on int64, b == -1 wrapping as the backends do.
int64_t fx_floordiv(int64_t a, int64_t b);
int64_t fx_mod(int64_t a, int64_t b);

// f of FX_ELEMENTWISE_SRC: x * 2 + y, x: f32[2, 3] and y: f32[3] broadcast.
#define FX_ELEMENTWISE_SRC "fn f(x: f32[2, 3], y: f32[3]) -> f32[2, 3] {\n  return x * 2 + y\n}\n"
void fx_expect_elementwise(Fn2 f);

// up(h: f16[65536], b: bf16[65536]) -> (h.float(), b.float()): every bit pattern widens
// as the runtime widens it. down(x: f32[n]) -> (x.half(), x.bfloat16()) on xs rounds to
// nearest even as the runtime does (nan: to a nan). fx_half_edges holds the inputs that
// matter (subnormals, ties, overflow, specials), FX_NHALF_EDGES of them.
typedef int (*FxHalfUp)(const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *);
typedef int (*FxHalfDown)(const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *);
enum { FX_NHALF_EDGES = 24 };
extern const float fx_half_edges[FX_NHALF_EDGES];
void fx_expect_widening(FxHalfUp up);
void fx_expect_narrowing(FxHalfDown down, const float *xs, int64_t n);

// o[0..5) of a // b, a % b, a * b, -a, a ** 3 for a = fx_int_a, b = fx_int_b (i64[8]): the
// Python results, wrapping on overflow (INT64_MIN // -1 included).
enum { FX_NINT = 8 };
extern const int64_t fx_int_a[FX_NINT], fx_int_b[FX_NINT];
void fx_expect_int_ops(const tdsl_tensor *o);

// o[0..4) of maximum(a, b), a // b, a % b, a.int() for a = fx_float_a, b = fx_float_b
// (f32[6]): nan propagates, floor and remainder as PyTorch, casts truncate and send nan
// and out-of-range values to INT32_MIN.
enum { FX_NFLOAT = 6 };
extern const float fx_float_a[FX_NFLOAT], fx_float_b[FX_NFLOAT];
void fx_expect_float_ops(const tdsl_tensor *o);

// f of FX_ZERO_DIVISION_SRC on a zero divisor: TDSL_ERR_DATA, the located message, no result.
#define FX_ZERO_DIVISION_SRC "fn f(a: i32[4], b: i32[4]) -> i32[4] {\n  return a // b\n}\n"
void fx_expect_zero_division(Fn2 f);

// par and seq: the entries of fx_gather_program(cx, true/false, n). With the indices
// bad[0..4) out of range (in that order of iteration) each call, whichever entry and
// however the threads run, reports the first; with them in range every value is right.
void fx_expect_first_index_error(Fn2 par, Fn2 seq, int64_t n, const int64_t bad[4]);

#endif
