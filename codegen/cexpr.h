// codegen/cexpr.h: the C dialect that c.c (C11) and cuda.c (CUDA C) both print — the
// prelude of helper functions, the scalar expressions of ir/loop.h and the statements
// every kernel shape shares — parameterised by a CDialect, which holds only what the
// two languages spell differently. Each backend keeps its loops, kernels and entry.
#ifndef TDSLC_CODEGEN_CEXPR_H
#define TDSLC_CODEGEN_CEXPR_H

#include "codegen/codegen.h"

typedef struct CDialect CDialect;
typedef struct CExprGen CExprGen;

// ---- the prelude: helper groups, printed per compute type ----
typedef enum {
  G_INT,       // wrapping add sub mul neg abs square (ints)
  G_FLOAT,     // composite ops printed as helpers: their formulas (ir/opmath.c), floats
  G_MAXMIN,    // maximum, minimum
  G_SIGN,
  G_RELU,
  G_FLOORDIV,  // floor_divide
  G_REM,       // remainder
  G_POW,       // ints (floats use the math library's pow)
  G_SEL,       // a select whose arms may raise: both evaluated
  G_F2I,       // float -> int cast, per target int type
  G_COUNT
} HelperGroup;

// H_REDUCE: CUDA's own (the mma fragments' helpers); H_SHUFFLE, H_STREAM: the C backend's vector moves
typedef enum { H_ERR, H_F16, H_BF16, H_INDEX, H_REDUCE, H_SHUFFLE, H_STREAM, H_COUNT } SingleHelper;

enum { CEXPR_MAX_LANES = 64 };  // the most lanes of a vector value (64 bytes of i8)

typedef struct Prelude {
  bool group[G_COUNT][DT_COUNT];
  bool single[H_COUNT];
  bool composite[OP_COUNT][DT_COUNT];  // a composite op's helper outside G_FLOAT's first four
  bool vec[DT_COUNT][CEXPR_MAX_LANES + 1];  // a dialect with vector types: those of dt x lanes used
  bool tree[CEXPR_MAX_LANES + 1];            // ... and tdsl_g_treeN, a sum of N lanes, used
  bool selgt[DT_COUNT][CEXPR_MAX_LANES + 1]; // ... and the select tdsl_g_selgt of dt x lanes, used
  bool selgtn[DT_COUNT][CEXPR_MAX_LANES + 1]; // ... and tdsl_g_selgtn (argmax's NaN-first select), used
  bool maxmin[DT_COUNT][CEXPR_MAX_LANES + 1]; // ... and tdsl_g_max, tdsl_g_min of dt x lanes, used
} Prelude;

// How a dtype is spelled. Substitutions in helper texts: $T the C type, $U its
// unsigned twin, $S the suffix, $F the math suffix, $L the literal suffix, $M the
// minimum, $Z a zero for copysign. Floats also name their nan, inf and -inf.
typedef struct TypeText {
  const char *T, *U, *S, *F, *L, *M, *Z;
  const char *nan, *inf, *ninf;
} TypeText;

struct CDialect {
  const char *name;        // "c", in internal errors
  const char *decl;        // $D: what a helper's definition begins with ("static inline ")
  const char *err_params;  // $E: a raising helper's parameters after its operands
  const char *raise_rank;  // $R: what tdsl_g_raise takes after the value
  const TypeText *types;   // per DType; f32 and f64 for constants of f16/bf16 too
  const char *round;       // OP_ROUND: the math function rounding half to even
  const char *no_err;      // the trailing arguments of a raising helper that may not raise
  // ... of one that raises error err of the kernel
  void (*err_args)(CExprGen *g, int err);
  // The text around a value of dtype `from` whose bits become a `to` (LX_BITCAST).
  void (*bitcast)(CExprGen *g, DType from, DType to, const char **pre, const char **post);
  const char *err_text;     // H_ERR: the error record and tdsl_g_raise
  const char *f16_text;     // H_F16: tdsl_g_h2f, and tdsl_g_f2h up to its `sign` and `a`
  const char *bf16_text;    // H_BF16: tdsl_g_bf2f, tdsl_g_f2bf
  const char *reduce_text;  // H_REDUCE, if the dialect has it (CUDA: the tensor cores' helpers)
  // The GPU form's expressions (LX_SHFL, LX_IDIV; LX_INSERT where a statement's value),
  // CUDA's alone: NULL in C.
  void (*gpu_expr)(CExprGen *g, const LExpr *e);
  // Vector values (ir/loop.h's Lanes) are values of the prelude's vector types
  // tdsl_g_<f32>x<N>, each vector operation one helper call (C). Else (CUDA) a vector
  // local is an array and a statement of a vector value a loop over its lanes.
  bool vectors;
};

// Prints the helpers pr asks for (and those they need); whether there were any.
bool cexpr_prelude(Buf *b, const CDialect *d, Prelude *pr);

// ---- types ----
const char *cexpr_type(DType dt);          // the C type a value is carried in
const char *cexpr_storage_type(DType dt);  // the element type of a buffer

// ---- the printer of one kernel ----
struct CExprGen {
  Ctx *cx;
  const CDialect *d;
  Prelude *pr;
  const LProgram *p;
  const LKernel *k;
  Buf *b;               // where the text goes
  bool has_err;         // some expression of the kernel can raise
  bool lane_loops;      // a statement was printed as a loop over its lanes (arrays)
  bool *arg_used;       // per kernel arg
  bool *local_read;     // per local
  int *decl_depth;      // per local: the block depth it was declared at, -1 if not in scope
  const char **lname;   // per local: its name in the text being printed ("t<i>")
  int *lanes;           // per local: its lanes (loop_local_lanes); a vector local is an array
  int depth;            // the block depth of the statement being printed
  bool lane;            // printing the statement of a lane loop: vectors print lane tdsl_g_l
  bool streamed;        // a store past the caches was printed (cleared by the caller)
};

// Readies g for kernel k of p: which args and locals it uses, whether it raises (then
// pr gets the error record). The caller sets g->b.
void cexpr_begin(CExprGen *g, Ctx *cx, const CDialect *d, Prelude *pr, const LProgram *p, const LKernel *k);
DType cexpr_arg_dtype(const CExprGen *g, int arg);
// "tdsl_g_<name>_<suffix>", the helper of group grp for dt, which the prelude will print.
const char *cexpr_helper(CExprGen *g, HelperGroup grp, const char *name, DType dt);
void cexpr_expr(CExprGen *g, const LExpr *e);
void cexpr_index(CExprGen *g, const LIndex *ix);

// Whether a vector of `lanes` lanes is a value of a vector type: the dialect has them and
// lanes is a power of two (GNU C's vectors are); else its lanes live in an array.
bool cexpr_vec(const CExprGen *g, int lanes);
// The type of a vector of dt x lanes, "tdsl_g_f32x16" (where cexpr_vec; the prelude will
// define it).
const char *cexpr_vec_type(CExprGen *g, DType dt, int lanes);

// ---- statements, each on its own lines at g->depth ----
// A statement whose value is a vector of N lanes: with the dialect's vectors, one
// assignment of a vector value (`t3 = tdsl_g_fma_f32x16(a, t4, t3);`, a store
// `tdsl_g_st_f32x16(&b2[i], t3);`); else a loop over the lanes, which gcc vectorizes:
// `for (int tdsl_g_l = 0; tdsl_g_l < N; tdsl_g_l++) t3[tdsl_g_l] = ...;`.
void cexpr_let(CExprGen *g, const LStmt *s);    // LS_LET, LS_SET
// LS_STORE. A vector store of 64 bytes (a whole line: narrower ones would leave lines
// half written in the write-combining buffers) to a streamed argument (LArg.stream),
// aligned to them, bypasses the caches where the target has the instructions (AVX-512F;
// else plain stores): g->streamed is then set, and the caller ends its function with
// cexpr_fence_streams.
void cexpr_store(CExprGen *g, const LStmt *s);
bool cexpr_stream_loop(CExprGen *g, const LStmt *s);  // a streamed scalar loop in strips of a line; false: not one
void cexpr_fence_streams(CExprGen *g);  // orders the streamed stores before what follows
void cexpr_open_loop(CExprGen *g, const LStmt *s);     // "for (int64_t vN = 0; ...) {", one level deeper
void cexpr_open_if(CExprGen *g, const LExpr *cond);    // "if (cond) {", one level deeper
void cexpr_close(CExprGen *g);  // "}": one level up; the locals declared below go out of scope

#endif
