// ir/kernel.h: internal to the kernel builder (ir/kernel.c drives the pass and builds
// the loop nests, ir/scalar.c builds the scalar expression of every op). Nothing
// outside these two files includes it: the pass's public entry is kernel_build in
// ir/loop.h.
//
// A logical index into a tensor is one LIndex per dim (an affine combination of loop
// variables, plus an optional i64 expression `dyn` for data-dependent indices).
// Expressions are built typed: an expression of dtype DT_F16/DT_BF16 only ever comes
// from a load or a cast to that dtype, and casts from or to those dtypes always go
// through DT_F32 (so a backend sees F16/BF16 <-> F32 casts only).
#ifndef TDSLC_IR_KERNEL_H
#define TDSLC_IR_KERNEL_H

#include "ir/loop.h"

// How a node of the kernel being built is available without a load.
typedef enum {
  LV_NONE,
  LV_LOCAL,    // local `local` (dtype: the computation dtype) holds the value at index `at`
  LV_SOFTMAX,  // a softmax/log_softmax row: recomputed from its input with locals max/sum
} LocalKind;

typedef struct LocalVal {
  LocalKind kind;
  int local;           // LV_LOCAL
  int max, sum;        // LV_SOFTMAX: the row max and 1 / the sum of exp (log_softmax: log of the sum)
  int nat;             // LV_LOCAL/LV_SOFTMAX: dims of `at` that must match a reader's index
  LIndex at[TD_MAX_DIMS];
  bool fixed[TD_MAX_DIMS];  // which dims of `at` are checked
} LocalVal;

enum {
  PARALLEL_WORK = 32768,    // a kernel with less arithmetic than this runs on one thread
  PARALLEL_MIN_ITERS = 16,  // a parallel loop should have at least this many iterations
  PROBE_VAR = 1 << 24,      // loop variables of probe indices: never in a kernel
};

typedef VEC(const Node *) NodeList;

typedef struct KB {
  Ctx *cx;
  const Graph *g;
  LProgram *p;
  int *buf_of;   // graph Buffer id -> LProgram buffer index, -1 when it has none
  int kid;       // the kernel being built
  LKernel *k;
  LocalVal *lv;  // per node id, valid for the kernel being built
  bool naive;    // every kernel in its output's row-major order (no row/column schedules)
  const CpuTarget *cpu;  // the CPU the schedules are for (ir/gemm.c), NULL for a GPU
} KB;

// kernel_build without the schedules that reorder loops (ir/kernel.c: the blocked matmul
// row schedule, column reductions, tiled transposed copies): the reference the tests
// compare them with, bit for bit. (sched_cpu's lanes, applied after kernel_build, do
// change the rounding of reductions: tests compare those with a tolerance.)
LProgram *kernel_build_naive(Ctx *cx, const Graph *g);

// ---- kernel.c: shared with gemm.c ----
// buf[contiguous index of idx] = val, for a stored node.
void kb_store_node(KB *kb, LStmtList *into, const Node *n, const LIndex *idx, LExpr *val);
// A new LB_TEMP of numel elements of dt (the entry allocates and frees it).
int kb_new_temp(KB *kb, DType dt, int64_t numel, const char *what);
// Node n's value at its output index at (every dim fixed) is local `local` from here on.
void kb_local_at(KB *kb, const Node *n, int local, const LIndex *at);
// The logical indices of matmul n's operands for output index o and k index kv.
void kb_matmul_indices(const Node *n, const LIndex *o, LIndex kv, LIndex *ai, LIndex *bi);

// ---- gemm.c: the CPU matmul schedules; false: nothing to compute (an empty output
// or K == 0), build the plain nest ----
bool gemm_build(KB *kb, const NodeList *ns);

// ---- scalar.c: constructors (every field set; err = -1 unless said) ----
LExpr *kb_expr(KB *kb, LExprKind kind, DType dt);
LExpr *kb_fconst(KB *kb, DType dt, double v);   // dt float; F16/BF16 give a cast of an F32 const
LExpr *kb_iconst(KB *kb, DType dt, int64_t v);  // dt int or bool
LExpr *kb_num(KB *kb, DType dt, double f, int64_t i);  // f for float dt, i otherwise
LExpr *kb_local_ref(KB *kb, int local);
LExpr *kb_unary(KB *kb, Op op, DType dt, LExpr *a);
LExpr *kb_binary(KB *kb, Op op, DType dt, LExpr *a, LExpr *b);
LExpr *kb_select(KB *kb, LExpr *c, LExpr *a, LExpr *b);
LExpr *kb_cast(KB *kb, LExpr *a, DType dt);  // folds constants, routes F16/BF16 through F32
LExpr *kb_arith(KB *kb, Op op, DType dt, LExpr *a, LExpr *b);  // bool + is or, bool * is and
LStmt *kb_loop(KB *kb, int var, int64_t extent);
LStmt *kb_store_stmt(KB *kb, int buf, LIndex idx, LExpr *val);
LStmt *kb_let(KB *kb, int local, LExpr *val);
LStmt *kb_set(KB *kb, int local, LExpr *val);
LStmt *kb_if(KB *kb, LExpr *cond);
int kb_new_local(KB *kb, DType dt);
int kb_new_var(KB *kb);
int kb_arg(KB *kb, int buf, bool read, bool written);  // the kernel's arg for a program buffer
int kb_error(KB *kb, Loc loc, const char *msg);        // a located message, deduplicated

// ---- scalar.c: indices ----
LIndex kb_ix_const(int64_t c);
LIndex kb_ix_var(int var);
void kb_ix_addmul(KB *kb, LIndex *acc, const LIndex *x, int64_t m);  // acc += m * x
LExpr *kb_ix_expr(KB *kb, const LIndex *x);                          // as an i64 expression
LIndex kb_view_index(KB *kb, const View *v, const LIndex *idx);      // storage element of v at idx
bool kb_ix_equal(const LIndex *a, const LIndex *b);

// ---- scalar.c: values ----
DType kb_compute_dtype(DType dt);  // F16/BF16 -> F32, else dt
DType kb_result_type(Value *const *vs, int n);  // torch.result_type over values (scalars included)
// The value of v at logical index idx (v->view.ndim entries), of dtype v->dtype.
LExpr *kb_value(KB *kb, const Value *v, const LIndex *idx);
// The value of an elementwise node at a logical index of its output, of its out dtype.
LExpr *kb_node_expr(KB *kb, const Node *n, const LIndex *idx);
// Softmax/log_softmax row value (LV_SOFTMAX) at a logical index of its output.
LExpr *kb_softmax_value(KB *kb, const Node *n, const LIndex *idx);
// Operand i of n at n's output index idx, PyTorch's broadcasting (aligned from the right).
LExpr *kb_src(KB *kb, const Node *n, int i, const LIndex *idx);
void kb_broadcast_index(const View *src, int out_ndim, const LIndex *idx, LIndex *sidx);

#endif
