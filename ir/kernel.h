// ir/kernel.h: internal to the kernel builder, the pass that turns the fused graph into
// loop IR (kernel_build, whose public entry is in ir/loop.h). Nothing outside its files
// includes it (but tests/unit/test_kernel.c, for kernel_build_naive). Its files:
//   ir/kernel.c  the driver: the program's buffers, one LKernel per fused kernel (its
//                kind from fusion), and the loop helpers every schedule shares;
//   ir/ew.c      EW kernels (elementwise nodes over one shape, tiled transposed reads)
//                and ONE kernels (cat, stack, store);
//   ir/scatter.c ONE kernels that write at run-time positions (index_put, scatter);
//   ir/depthwise.c  ONE kernels of a depthwise convolution (its input read in place);
//   ir/matmul.c  MATMUL kernels: the plain nest, the GPU row schedule, the glue to
//                ir/gemm.c (the CPU schedules); fills LKernel.mm;
//   ir/row.c     ROW kernels: reductions and softmax row by row, or (COL) by columns;
//                fills LKernel.softmax;
//   ir/sort.c    SORT kernels: each row sorted in place in the results by a sorting
//                network of affine compare-exchange loops;
//   ir/attn.c    ATTN kernels: attention row by row, the keys in blocks, the softmax
//                online (only a block's scores are held); the GPU's and the naive form;
//   ir/attn_tile.c  the CPU schedule of ATTN kernels: tiles of query rows x key blocks,
//                both products register-tiled as ir/gemm.c's micro-tile;
//   ir/attn_gpu.c   the facts of a GPU program's ATTN kernel (LKernel.attn) for the GPU
//                schedule's flash kernel;
//   ir/recur_build.c  RECUR kernels: a scan's steps in a loop inside each row of its state;
//   ir/scalar.c  the scalar expression of every op, indices, values at an index.
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
  LV_ROWBUF,   // an inline node's values on the current row, kept in scratch arg `local` at
               // base + sum(rstride[p] * index[p]) (ir/row.c's row_cache); elsewhere recomputed
} LocalKind;

typedef struct LocalVal {
  LocalKind kind;
  int local;           // LV_LOCAL
  int max, sum;        // LV_SOFTMAX: the row max and 1 / the sum of exp (log_softmax: log of the sum)
  int nat;             // LV_LOCAL/LV_SOFTMAX: dims of `at` that must match a reader's index
  LIndex at[TD_MAX_DIMS];
  bool fixed[TD_MAX_DIMS];  // which dims of `at` are checked
  int64_t rstride[TD_MAX_DIMS];  // LV_ROWBUF: the row buffer's stride of each dim (0: a kept dim)
  int64_t base;                  // LV_ROWBUF: where the row starts in it
} LocalVal;

enum {
  PARALLEL_WORK = 32768,    // a kernel with less arithmetic than this runs on one thread
  PARALLEL_MIN_ITERS = 16,  // a parallel loop should have at least this many iterations
  // a matmul of fewer multiply-adds runs on one thread: its vector FMAs do 256K in ~10 us
  // on one core, where waking the pool's threads costs microseconds and, on a shared
  // machine, a busy core can hold the whole kernel back (issue 27.6)
  MATMUL_PARALLEL_WORK = 1 << 18,
  PROBE_VAR = 1 << 24,      // loop variables of probe indices: never in a kernel
};

typedef VEC(const Node *) NodeList;

// Where the inline cats an EW kernel reads split its output dims (ir/ew.c's probe, filled
// by kb_node_expr): at[d][0..n[d]) the first output index of a new piece along dim d,
// unsorted, possibly repeated or outside the dim; bad: a cat read at an index no split
// of one output dim resolves, or more cuts than fit (the cat then reads through selects).
enum { KB_MAX_CUTS = 64 };
typedef struct KbCuts {
  int n[TD_MAX_DIMS];
  int64_t at[TD_MAX_DIMS][KB_MAX_CUTS];
  bool bad;
} KbCuts;

// The builder's state while it builds one program (kernel.c's kernel_build).
typedef struct KernelBuilder {
  Ctx *cx;
  const Graph *g;
  LProgram *p;
  int *buf_of;   // graph Buffer id -> LProgram buffer index, -1 when it has none
  int kid;       // the kernel being built
  LKernel *k;
  LocalVal *lv;  // per node id, valid for the kernel being built
  bool naive;    // every kernel in its output's row-major order (no row/column schedules)
  const CpuTarget *cpu;  // the CPU the schedules are for (ir/gemm.c), NULL for a GPU
  const Recur *recur;    // while a recurrence's template step is built (ir/recur_build.c):
  int recur_var;         // kb_value reads its leaves at step var recur_var
  VEC(int64_t) var_ext;  // per loop variable of the kernel being built: its loop's extent
                         // (kb_loop's; 0 where unknown): an inline cat's piece (scalar.c)
  KbCuts *cuts;          // while ew_build probes: where inline cats split its dims
  int64_t probe_ext[TD_MAX_DIMS];  // while ew_build probes one range between cuts: the
                                   // extent of probe variable PROBE_VAR + d (0: unknown)
} KernelBuilder;

// kernel_build without the schedules that reorder loops (the blocked matmul row
// schedule, column reductions, tiled transposed copies): the reference the tests
// compare them with, bit for bit. (sched_cpu's lanes, applied after kernel_build, do
// change the rounding of reductions: tests compare those with a tolerance.)
LProgram *kernel_build_naive(Ctx *cx, const Graph *g);

// ---- kernel.c: the loop helpers the schedules share ----
static inline int64_t kb_iabs(int64_t x) { return x < 0 ? -x : x; }
void kb_push(KernelBuilder *kb, LStmtList *list, LStmt *s);
// Loops over the dims of shape (size-1 dims get index 0 and no loop), the outermost
// parallel if `parallel`; idx[d] receives each dim's index, loops[0..) (unless NULL)
// the loops made, outermost first. Returns the innermost body.
LStmtList *kb_nest(KernelBuilder *kb, LStmtList *into, int nd, const int64_t *shape, LIndex *idx, bool parallel,
                   LStmt **loops);
// Loops over dims[0..n) (each of size > 1), outermost first; idx[dims[p]] gets each
// loop's var. With par, the first loop by which PARALLEL_MIN_ITERS iterations are
// reached is parallel (the outermost if none is). Returns the innermost body.
LStmtList *kb_outer_loops(KernelBuilder *kb, LStmtList *into, int n, const int *dims, const int64_t *shape,
                          LIndex *idx, bool par);
// A loop of n iterations whose index *at is base + step * var; no loop when n == 1
// (*at is base). Returns its body.
LStmtList *kb_step_loop(KernelBuilder *kb, LStmtList *into, int64_t n, LIndex base, int64_t step, bool par,
                        LIndex *at);
// Consecutive indices per parallel block of a dim of size S whose index covers w
// elements of an accumulator row: about S / BLOCK_TARGET, a multiple of 64 when w == 1
// (the dim is innermost: vector loops stay whole); 0 when fewer than two blocks fill.
int64_t kb_block_size(int64_t S, int64_t w);
int kb_let_local(KernelBuilder *kb, LStmtList *into, LExpr *val);  // a new local let to val
// The cuts c the probe recorded, of the dims of v, made sorted, distinct and inside each dim,
// in place (all dropped where c is bad: a cat read through selects); whether any dim is split.
bool kb_cuts_sorted(KbCuts *c, const View *v);
bool kb_same_shape(const View *a, const View *b);
int64_t kb_ix_coef(const LIndex *x, int var);  // the coefficient of var in x (0 if it has none)
// A load of / a store to program buffer buf (of its own dtype: val is cast to it).
LExpr *kb_buf_load(KernelBuilder *kb, int buf, LIndex idx);
void kb_buf_store(KernelBuilder *kb, LStmtList *into, int buf, LIndex idx, LExpr *val);
// buf[contiguous index of idx] = val, for a stored node.
void kb_store_node(KernelBuilder *kb, LStmtList *into, const Node *n, const LIndex *idx, LExpr *val);
// A new LB_TEMP of numel elements of dt (the entry allocates and frees it).
int kb_new_temp(KernelBuilder *kb, DType dt, int64_t numel, const char *what);
// Node n's value at its output index at (every dim fixed) is local `local` from here on.
void kb_local_at(KernelBuilder *kb, const Node *n, int local, const LIndex *at);

// ---- ew.c: EW and ONE kernels ----
void ew_build(KernelBuilder *kb, const NodeList *ns);  // elementwise nodes over one shape
void ew_build_one(KernelBuilder *kb, const Node *n);   // cat, stack, store
// W x W (a power of two, at most 32) in the registers: rows[r] the local of W lanes of dt
// holding row r; col[c] gets the local holding column c (rows in order), by log2(W)
// rounds of shuffles (ir/ew.c's transposing copies)
void ew_transpose(KernelBuilder *kb, LStmtList *into, DType dt, int W, const int *rows, int *col);
// scatter.c: index_put and scatter, writing at run-time positions (ONE kernels)
void scatter_build(KernelBuilder *kb, const Node *n);
// depthwise.c: a depthwise convolution reading its input in place (a ONE kernel)
void depthwise_build(KernelBuilder *kb, const Node *n);

// ---- matmul.c: MATMUL kernels (sets kb->k->mm) ----
void matmul_build(KernelBuilder *kb, const NodeList *ns);
// The output dims of M (*rd) and N (*jd) of matmul n, -1 where PyTorch's 1-D rules drop them.
void kb_matmul_dims(const Node *n, int *rd, int *jd);
// The logical indices of matmul n's operands for output index o and k index kv (one
// index per dim k spans, matmul_nk(n) of them).
void kb_matmul_indices(const Node *n, const LIndex *o, const LIndex *kv, LIndex *ai, LIndex *bi);

// ---- row.c: ROW kernels (sets kb->k->softmax) ----
void row_build(KernelBuilder *kb, const NodeList *ns);

// ---- recur_build.c: RECUR kernels (a recurrence of ir/recur.c) ----
void recur_build(KernelBuilder *kb, const Recur *r);

// ---- sort.c: SORT kernels (a sort and/or an argsort of one input, along its last dim) ----
void sort_build(KernelBuilder *kb, const NodeList *ns);

// ---- attn.c: ATTN kernels (one scaled_dot_product_attention) ----
void attn_build(KernelBuilder *kb, const NodeList *ns);
const Value *attn_mask(const Node *n);  // attention n's mask, or NULL
// A softmax weight: zero (may be NULL) or d below EXP_FLOOR ? 0 : exp(d), d let into a local
// in `into` (ir/attn.c: no subnormal weights)
LExpr *attn_weight(KernelBuilder *kb, LStmtList *into, DType cd, LExpr *d, LExpr *zero);
// The element of attention n's source s at idx (its dims), in dtype cd: rotated when s is
// q (0) or k (1) and attr.rope says so
LExpr *attn_operand(KernelBuilder *kb, const Node *n, int s, const LIndex *idx, DType cd);
// Rotated operand s's pair c (idx: its last dim's index c < E/2), in dtype cd, and where
// its two elements lie in that dim (c and c + E/2, or 2c and 2c + 1: ir/attn.c)
void attn_rope_pair(KernelBuilder *kb, const Node *n, int s, const LIndex *idx, DType cd, LExpr **lo, LExpr **hi,
                    LIndex *at_lo, LIndex *at_hi);
// ---- attn_tile.c: the CPU schedule (tiles of query rows x key blocks); false: not
// taken (nothing to compute, or too few query rows to fill the lanes), build the rows
// of attn.c ----
bool attn_tile_build(KernelBuilder *kb, const NodeList *ns);
// ---- gemm_chain.c: an MLP chain (ir/fuse.c's chain_of: ns = the first matmul, the second,
// the second's epilogues) on a CPU by blocks of rows; false: not taken (a naive build, or
// weights it cannot read in place), ir/matmul.c then stores the hidden ----
bool gemm_chain_build(KernelBuilder *kb, const NodeList *ns);
// ---- attn_gpu.c: a GPU program's facts of attention n (sets kb->k->attn) ----
void attn_gpu_facts(KernelBuilder *kb, const Node *n);

// ---- gemm.c: the CPU matmul schedules; false: nothing to compute (an empty output
// or K == 0), build the plain nest ----
bool gemm_build(KernelBuilder *kb, const NodeList *ns);
// (matmul.c) The epilogues ns[1..] of a matmul at output index o, in order: elementwise
// nodes stored with their values, store epilogues (ir/fuse.c's store_fits: target[o] =
// value[o], or target[o] op= value[o], the target the kernel's last result) stored, the
// target's node reading as the stored value in the epilogues after it.
void kb_store_epilogues(KernelBuilder *kb, LStmtList *into, const NodeList *ns, const LIndex *o);
// The GEMM micro-kernel, a function of the program (one per shape: LProgram.funcs),
// for other schedules too (ir/attn_tile.c's products): c[r*ldc + j] (+)= sum over k < kc
// of A(r, k) * B(k, j), r < MR, j < NR (NR a multiple of V, the lanes of a vector),
// A packed (a[k*MR + r]), its rows in place (a[r*lda + k]) or its columns in place
// (a[k*lda + r]); B packed (b[k*NR + j]) or its rows in place (b[k*ldb + j]).
typedef enum { GA_PACKED, GA_ROWS, GA_COLS } GemmAForm;
typedef struct GemmMicro {
  DType cd;
  int MR, NR, V;
  GemmAForm aform;
  bool binplace;
  bool prefetch;  // A's rows in place: each term also prefetches a[MR*lda + MR*k], which walks the
                  // next MR rows (the next panel, its rows contiguous: lda = kc) a tile ahead
  int pfk;        // B packed: each step of the k loop also prefetches, a line at a time, B's rows
                  // (and A's columns where packed) pfk terms on (b[(k+pfk)*NR], a[(k+pfk)*MR]); 0: none
  int unroll;     // NR >= V: the k loop's terms a step (then a loop over the kc % unroll left;
                  // 0 or 1: not unrolled)
} GemmMicro;
// The terms a step of an unrolled micro-kernel (ir/gemm.c's micro_of, ir/gemm_chain.c)
enum { GEMM_MICRO_UNROLL = 4 };
// A call: A from element a of arg aa (lda: A's rows or columns apart), B from b of ba
// (ldb: its rows apart, in place), the tile at c of ca (rows ldc apart); load (i64)
// non-zero adds to the tile's values.
void gemm_micro_call(KernelBuilder *kb, LStmtList *into, const GemmMicro *m, int aa, LIndex a, int64_t lda, int ba,
                     LIndex b, int64_t ldb, int ca, LIndex c, int64_t kc, int64_t ldc, LExpr *load);

// ---- scalar.c: constructors (every field set; err = -1 unless said) ----
LExpr *kb_expr(KernelBuilder *kb, LExprKind kind, DType dt);
LExpr *kb_fconst(KernelBuilder *kb, DType dt, double v);   // dt float; F16/BF16 give a cast of an F32 const
LExpr *kb_iconst(KernelBuilder *kb, DType dt, int64_t v);  // dt int or bool
LExpr *kb_num(KernelBuilder *kb, DType dt, double f, int64_t i);  // f for float dt, i otherwise
LExpr *kb_local_ref(KernelBuilder *kb, int local);
LExpr *kb_unary(KernelBuilder *kb, Op op, DType dt, LExpr *a);
LExpr *kb_binary(KernelBuilder *kb, Op op, DType dt, LExpr *a, LExpr *b);
LExpr *kb_select(KernelBuilder *kb, LExpr *c, LExpr *a, LExpr *b);
LExpr *kb_cast(KernelBuilder *kb, LExpr *a, DType dt);  // folds constants, routes F16/BF16 through F32
LExpr *kb_arith(KernelBuilder *kb, Op op, DType dt, LExpr *a, LExpr *b);  // bool + is or, bool * is and
LStmt *kb_loop(KernelBuilder *kb, int var, int64_t extent);
LStmt *kb_store_stmt(KernelBuilder *kb, int buf, LIndex idx, LExpr *val);
LStmt *kb_let(KernelBuilder *kb, int local, LExpr *val);
LStmt *kb_set(KernelBuilder *kb, int local, LExpr *val);
LStmt *kb_if(KernelBuilder *kb, LExpr *cond);
int kb_new_local(KernelBuilder *kb, DType dt);
int kb_new_var(KernelBuilder *kb);
int kb_arg(KernelBuilder *kb, int buf, bool read, bool written);  // the kernel's arg for a program buffer
int kb_error(KernelBuilder *kb, Loc loc, const char *msg);        // a located message, deduplicated

// ---- scalar.c: indices ----
LIndex kb_ix_const(int64_t c);
LIndex kb_ix_var(int var);
void kb_ix_addmul(KernelBuilder *kb, LIndex *acc, const LIndex *x, int64_t m);  // acc += m * x
LExpr *kb_ix_expr(KernelBuilder *kb, const LIndex *x);                          // as an i64 expression
LIndex kb_view_index(KernelBuilder *kb, const View *v, const LIndex *idx);      // storage element of v at idx
bool kb_ix_equal(const LIndex *a, const LIndex *b);
static inline LIndex kb_ix_plus(LIndex x, int64_t c) {  // x + c
  x.base += c;
  return x;
}
static inline LIndex kb_ix_sum(KernelBuilder *kb, LIndex a, const LIndex *x, int64_t m) {  // a + m * x
  kb_ix_addmul(kb, &a, x, m);
  return a;
}

// ---- scalar.c: values ----
DType kb_result_type(Value *const *vs, int n);  // torch.result_type over values (scalars included)
// The value of v at logical index idx (v->view.ndim entries), of dtype v->dtype.
LExpr *kb_value(KernelBuilder *kb, const Value *v, const LIndex *idx);
// The value of an elementwise node at a logical index of its output, of its out dtype.
LExpr *kb_node_expr(KernelBuilder *kb, const Node *n, const LIndex *idx);
// Softmax/log_softmax row value (LV_SOFTMAX) at a logical index of its output.
LExpr *kb_softmax_value(KernelBuilder *kb, const Node *n, const LIndex *idx);
// Operand i of n at n's output index idx, PyTorch's broadcasting (aligned from the right).
LExpr *kb_src(KernelBuilder *kb, const Node *n, int i, const LIndex *idx);
// a (an index into a dim of size `size`) checked: see LX_CHECKED_INDEX in ir/loop.h
LExpr *kb_checked_index(KernelBuilder *kb, LExpr *a, int64_t size, int err, bool wrap);
LIndex kb_dyn_index(LExpr *e);  // an element index that is e alone (dyn only)
void kb_broadcast_index(const View *src, int out_ndim, const LIndex *idx, LIndex *sidx);

#endif
