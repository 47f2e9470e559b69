// ir/gemm.c: the CPU matmul schedules (gemm_build, called by ir/matmul.c for a CPU).
// Every matmul, mm, bmm and batched @ of a CPU program with arithmetic to do becomes
// one of two loop nests, whatever the operands' strides (a transposed, sliced or
// expanded operand is an index here, never a copy the user sees). The output is seen
// as [batch..., M, N] with k the reduced dim (PyTorch's 1-D rules make M or N 1).
//
// PACKED — the general schedule, as a BLAS computes it: blocks of the operands are
// packed into panels (a's of MR rows, b's of NR columns, each laid out k by k, the last
// panel of each padded with zeros), and one micro-kernel multiplies a panel of a by a
// panel of b into an MR x NR tile of the output held in vector registers:
//   micro(kc, ap, bp, c, ldc, load):  acc[r] = load ? c[r*ldc + 0..NR] : 0
//                                     for k < kc: acc[r] += splat(ap[k*MR + r]) * bp[k*NR + 0..NR]
//                                     c[r*ldc + 0..NR] = acc[r]          (r < MR)
// The micro-kernel is a function of the program (LProgram.funcs: ir/loop.h's
// Functions), written once for each tile shape and dtype and called by every matmul of
// the program: its size, not the matmuls' shapes, sets the code's. A tile that the
// output has fewer rows or columns for goes through a tile buffer (T) and is copied.
// Where the panels live (at most a few cache-sized blocks per thread, never a copy of a
// whole operand — the result buffer excepted):
//   COLS  (a small next to the call's data: nn.Linear's x @ w.t()): a is packed once
//         (all of it, row panels in a temp, in parallel), then the column blocks of NC
//         columns are the parallel loop: each packs its block of b, KC terms at a time,
//         into its thread's scratch (ir/loop.h's Scratch: L2-sized) and multiplies
//         every row panel by it (rows outer: a row panel stays in L1 while it meets the
//         block's column panels, the block in L2);
//   ROWS  (a large, as in a square matmul): for each column block and k block, the
//         block of b is packed once into a temp (in parallel), then the row blocks of MC
//         rows are the parallel loop: each packs its block of a into scratch (L2) and
//         multiplies it by the column panels (columns outer: a panel of b stays in L1);
//         with A's rows read in place and few columns (x @ w.t() at 64 tokens: the
//         weights a stream from memory) the micro-kernel prefetches the next row panel;
//   BATCH (batches enough for the threads, as attention's heads; or little work): each
//         batch (in parallel) is one serial task: its column blocks, k blocks and all
//         its rows, both operands packed into scratch.
// After the last k block of a tile its epilogues run over the tile (a loop the
// vectorizers take), reading the sums from the buffer that holds them (acc_owner: the
// matmul's own when stored in the accumulation dtype, else an epilogue's of that
// dtype, updated in place); between k blocks the sums wait there too. Without such a
// buffer every tile goes through T and K is one block.
// DOT — rows of a and columns of b both unit-stride in k (nn.Linear's x @ w.t()) with
// few rows (decoding) or one column: lanes run along k, a tile of IB x JB outputs
// keeps IB x JB vector accumulators, each weight is loaded once per IB rows, and the
// lanes are summed in a fixed tree after the k loop (then the K % V terms left).
//
// A contraction (attr.nk: a convolution, the weight times a window view of its input)
// may have k span several dims, and M, N and the batch be any output dims: packing
// walks k's dims as nested loops and lays their terms out linearly, a k block being
// whole indices of the outermost (a channel's taps), so the micro-kernel sees one k;
// DOT takes only a single k dim. Folded output rows (a convolution's) make B's columns a
// table's offsets; a full panel of them, B a plain load of the accumulation dtype, is
// packed by runs along the output rows (pack_runs: one function call per run, copying
// it for all the block's k terms). A contraction's last panel of B, when it has fewer
// columns than NR, is as narrow as its whole vectors, or, a few columns with A's rows
// in place, packed by columns and multiplied with the lanes along k (new_micro_dot).
// A zero padding fusion left unstored (ir/fuse.c's plan_pads) is packed from the
// unpadded input, runs clipped to it, or copied once into a temp of the kernel (below).
// The tile comes from the target (CpuTarget): NR is nv vectors, MR the rows whose
// accumulators and operands fit the registers (MR * nv + nv + 1 of them), of the
// shapes those allow the one that wastes the least on the output's edges (AVX-512 f32:
// 14x32, 8x48 or 6x64; AVX2: 6x16 or 4x24). KC keeps a block of b within half the L2
// (ROWS with A's rows in place: the rows within the L1, where they or the block overflow;
// A packed: at most 512 terms, which makes a.t() @ b at 2048^2 COLS).
// Float sums use LX_FMA (fused where the target has FMA), so results differ from the
// naive k order in rounding. f16/bf16 operands are packed as f32 (the accumulation
// dtype); DOT reads only operands of the accumulation dtype.
// Weights are packed on every call, not kept packed between calls: a packed copy kept
// would hold a second copy of every weight (GPT-2's 0.5 GB twice), and the packing of a
// block just before it is used costs a few percent of the multiply (bench/GAPS.md).
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ir/kernel.h"

enum { SCHED_PACKED, SCHED_DOT, SCHED_DIRECT };
enum { MODE_BATCH, MODE_COLS, MODE_ROWS };
static const char *const MODE_NAMES[] = {"batch", "cols", "rows"};

enum {
  DOT_MAX_M = 8,         // at most this many rows use the DOT schedule
  FEW_BATCHES = 4,       // batches enough for the threads when rows and columns are few
  MAX_MR = 16,
  MAX_NV = 4,
  MAX_DOT_NR = 4,        // a last panel of at most this many columns is new_micro_dot's
  KC_MAX = 768,          // k terms per block: a panel of b (KC x NR) stays in L2
  KC_PACKED_MAX = 512,   //   with A packed (a.t() @ b) at most this many (gemm_build)
  KC_MIN = 128,          // ROWS' k blocks sized for the rows read in place (in L1): at least this
  A_SHARED_BYTES = 1 << 20,  // COLS: a k block of a packed in a temp, at most this or 10% of the data
  B_SHARED_BYTES = 4 << 20,  // ROWS: a packed block of b (KC x NC) in a temp, at most this
  ADIRECT_MAX_MR = 8,
  T_GROUP_ROWS = 48,
  BDIRECT_MAX_M = 64,        // at most this many rows of A read B's rows in place         // transposed: rows through T together (tile_group)        // rows read in place: their pointers fit the registers, their lines the L1's ways
  SMALL_GEMM = 1 << 26,      // multiply-adds of a GEMM too small to split (a batch's: BATCH)
  DIRECT_MAX_M = 16,         // a contraction of at most this many rows (a depthwise convolution's 1) is DIRECT
  DIRECT_MAX_R = 4,          // DIRECT: rows of a block
  DIRECT_MAX_U = 4,          //   and vectors of columns it keeps per row
  PF_MAX_COLS = 64,          // ROWS: at most this many columns prefetch A's rows (gemm_build's pf)
  PF_TERMS = 16,             // A and B packed: the micro-kernel prefetches their panels this many terms ahead
};

typedef struct Gemm {
  KernelBuilder *kb;
  const NodeList *ns;
  const Node *mm;
  DType cd;       // the accumulation dtype
  int on;         // output dims
  int rd, jd;     // the output dims of M and N, -1 when the output has none
  int nbat;       // batch dims of the output (size > 1)
  int bat[TD_MAX_DIMS];
  int64_t M, N, K, nbatch;
  int nk;                   // the dims k spans (a convolution's window: channels and taps)
  int nfold;                // output dims folded into the columns before jd (a convolution's
  int fold[TD_MAX_DIMS];    //   output rows: fold_columns), outermost first
  int cols;                 // folded: B's element offset of each column (an i64 temp), -1 when none
  int koffs;                // folded, packed by runs: B's element offset of each k term (an i64 temp), -1: none
  int64_t sj, rowlen;       //   B's stride along jd and jd's size (a run's longest)
  int64_t kn[TD_MAX_DIMS];  // their sizes (K is their product)
  int V, MR, NR, nv;        // lanes of a vector; the tile: MR rows, NR = nv * V columns
  bool trans;               // the tiles' rows are j and their columns i (C^T = b^T a^T)
  int64_t R, C;             // the tiles' rows and columns: M and N, or N and M (trans)
  bool adirect;             // the micro-kernel reads its rows' operand in place (unit k),
  int64_t lda;              //   lda elements between rows; else from packed panels
  bool bdirect;             // ... its columns' operand's rows in place (unit along them),
  int64_t ldb;              //   ldb elements between rows (a few rows of A: packing B would
                            //   cost more than it saves)
  bool pf;                  // ROWS, A's rows in place streamed: the micro-kernel prefetches the next panel
  int sched, mode;
  bool par, par_bat;        // par: the work is worth threads; par_bat: the batch loop is the parallel one
  int64_t kc, nc, mc;       // the blocks: k terms, columns, rows (ROWS)
  int64_t tg;               // transposed: row panels per group through T (tile_group)
  const Node *own;          // acc_owner: where the sums wait, NULL: none (every tile through T)
  int64_t ldc;              // own's stride between rows (its columns are unit-stride)
  int fn;                   // the micro-kernel (LProgram.funcs)
  int sbuf;                 // the scratch buffer (program buffer), -1 when none
  int64_t s_b, s_a, s_t;    // its regions: b's block, a's block, the tile T (element offsets)
  int64_t s_u;              // transposed with epilogues: T's group transposed (U), else -1
  int ap;                   // COLS: a packed whole (a temp; per batch when a reads the batch)
  int bp;                   // ROWS: the block of b (a temp)
  LIndex o[TD_MAX_DIMS];    // the current output index (batch dims set by the loops)
  const Value *px;          // B is a zero padding of px (ir/fuse.c's fuse_pad_chain), never stored; NULL: not
  const View *pv;           //   the padded tensor P's (contiguous) View
  int64_t pl[TD_MAX_DIMS];  //   the zeros before px along each dim of P
  ViewMap pm;               //   B's View onto P
  int ptemp;                //   P copied into a temp (pad_copy), -1: none
  bool pclip;               //   packed by runs straight from px, zeros where a window leaves it (pad_clips)
  int prow, pcol;           //   clipped: px's row and column of each column's window (k term 0) and
  int krow, kcol;           //   what each k term adds to them (i64 temps)
  int64_t sw;               //   clipped: the step of px's column per column of B
} Gemm;

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// The output index of row i and column j (of the current batch).
static void out_index(const Gemm *G, LIndex i, LIndex j, LIndex *o) {
  memcpy(o, G->o, sizeof(LIndex) * TD_MAX_DIMS);
  if (G->rd >= 0)
    o[G->rd] = i;
  if (G->jd >= 0)
    o[G->jd] = j;
}

// Folded columns (fold_columns): column j's index in each folded dim and in jd, by
// division from the innermost (j >= 0; a division by a constant is a multiply).
static void unfold_column(Gemm *G, LIndex j, LIndex *o) {
  KernelBuilder *kb = G->kb;
  const int64_t *shape = G->mm->out->view.shape;
  LExpr *rest = kb_ix_expr(kb, &j);
  for (int f = G->nfold; f >= 0; f--) {
    int d = f == G->nfold ? G->jd : G->fold[f];
    LIndex x = kb_ix_const(0);
    x.dyn = f ? kb_binary(kb, OP_REMAINDER, DT_I64, rest, kb_iconst(kb, DT_I64, shape[d])) : rest;
    o[d] = x;
    if (f)
      rest = kb_binary(kb, OP_FLOOR_DIVIDE, DT_I64, rest, kb_iconst(kb, DT_I64, shape[d]));
  }
}

static LExpr *padded_value(Gemm *G, const LIndex *bi);

// Operand which (0: a, 1: b) at row i, column j, k (an index per dim k spans): its
// value (of its own dtype).
static LExpr *operand(Gemm *G, int which, LIndex i, LIndex j, const LIndex *k) {
  LIndex o[TD_MAX_DIMS], ai[TD_MAX_DIMS], bi[TD_MAX_DIMS];
  out_index(G, i, j, o);
  if (which == 1 && G->nfold)
    unfold_column(G, j, o);
  kb_matmul_indices(G->mm, o, k, ai, bi);
  if (which == 1 && G->px)
    return padded_value(G, bi);
  return kb_value(G->kb, G->mm->srcs[which], which ? bi : ai);
}

// The operand as the program reads it: with folded columns, B at column j of jd (the
// folded dims' indices those of G->o), not unfolded (the division is the schedule's).
static LExpr *operand_as_is(Gemm *G, int which, LIndex i, LIndex j, const LIndex *k) {
  int nfold = G->nfold;
  G->nfold = 0;
  LExpr *e = operand(G, which, i, j, k);
  G->nfold = nfold;
  return e;
}

static LExpr *operand_cd(Gemm *G, int which, LIndex i, LIndex j, const LIndex *k) {
  return kb_cast(G->kb, operand(G, which, i, j, k), G->cd);
}

// The operand's load as a vector of lanes elements from (i, j, k): only where the
// schedule was chosen for it (unit_along: a plain load of the accumulation dtype with
// unit stride along the lanes).
static LExpr *operand_vec(Gemm *G, int which, LIndex i, LIndex j, const LIndex *k, int lanes) {
  LExpr *e = operand(G, which, i, j, k);
  TD_ASSERT(e->kind == LX_LOAD && e->dt == G->cd && !e->idx.dyn);
  return lx_vload(G->kb->cx, e->dt, lanes, e->buf, e->idx);
}

// k's probe indices, after any the output's probes use.
enum { K_PROBE = PROBE_VAR + 3 + TD_MAX_DIMS };
static void k_probe(const Gemm *G, LIndex *k) {
  for (int q = 0; q < G->nk; q++)
    k[q] = kb_ix_var(K_PROBE + q);
}

// The stride of operand which along dim `dim` (0: i, 1: j, 2: k, its last dim) of a
// probe where it is a plain load (of the accumulation dtype, with cd), else 0.
static int64_t stride_along(Gemm *G, int which, int dim, bool cd) {
  LIndex saved[TD_MAX_DIMS], k[TD_MAX_DIMS];
  memcpy(saved, G->o, sizeof saved);
  for (int d = 0; d < G->on; d++)
    G->o[d] = kb_ix_var(PROBE_VAR + 3 + d);
  k_probe(G, k);
  LExpr *e = operand(G, which, kb_ix_var(PROBE_VAR), kb_ix_var(PROBE_VAR + 1), k);
  memcpy(G->o, saved, sizeof saved);
  while (!cd && e->kind == LX_CAST)  // f16 -> f32 (and bf16 through f32)
    e = e->a;
  if (e->kind != LX_LOAD || (cd && e->dt != G->cd) || e->idx.dyn)
    return 0;
  int var = dim == 2 ? K_PROBE + G->nk - 1 : PROBE_VAR + dim;
  for (int t = 0; t < e->idx.nterms; t++)
    if (e->idx.var[t] == var)
      return e->idx.coef[t];
  return 0;
}

// Whether operand which is a plain load moving with unit stride along dim (stride_along).
static bool unit_along(Gemm *G, int which, int dim, bool cd) { return stride_along(G, which, dim, cd) == 1; }

// Whether operand which is a load (perhaps converted), not an expression computed from
// loads (fusion may leave one: ir/fuse.c's matmul_packs).
static bool plain_load(Gemm *G, int which) {
  LIndex saved[TD_MAX_DIMS], k[TD_MAX_DIMS];
  memcpy(saved, G->o, sizeof saved);
  k_probe(G, k);
  LExpr *e = operand_as_is(G, which, kb_ix_const(0), kb_ix_const(0), k);
  memcpy(G->o, saved, sizeof saved);
  while (e->kind == LX_CAST)
    e = e->a;
  return e->kind == LX_LOAD && !e->idx.dyn;
}

// Whether operand which reads some batch dim.
static bool reads_batch(Gemm *G, int which) {
  LIndex saved[TD_MAX_DIMS];
  memcpy(saved, G->o, sizeof saved);
  for (int d = 0; d < G->on; d++)
    G->o[d] = kb_ix_var(PROBE_VAR + d);
  LIndex z[TD_MAX_DIMS];
  for (int q = 0; q < TD_MAX_DIMS; q++)
    z[q] = kb_ix_const(0);
  LIndex o[TD_MAX_DIMS], ai[TD_MAX_DIMS], bi[TD_MAX_DIMS];
  out_index(G, z[0], z[0], o);
  kb_matmul_indices(G->mm, o, z, ai, bi);
  const View *v = &G->mm->srcs[which]->view;
  const LIndex *x = which ? bi : ai;
  bool reads = false;
  for (int d = 0; d < v->ndim; d++)
    for (int t = 0; t < x[d].nterms; t++)
      for (int b = 0; b < G->nbat; b++)
        reads |= x[d].var[t] == PROBE_VAR + G->bat[b];
  memcpy(G->o, saved, sizeof saved);
  return reads;
}

static LExpr *mul_add(Gemm *G, LExpr *x, LExpr *y, LExpr *acc) { return lx_fma(G->kb->cx, x, y, acc); }

static LExpr *zero(Gemm *G, int lanes) {
  LExpr *z = kb_num(G->kb, G->cd, 0, 0);
  return lanes > 1 ? lx_splat(G->kb->cx, lanes, z) : z;
}

// Where statements run when cond (a bool expression) is `is`: into itself for a
// constant that says so, NULL for one that says otherwise, else the body of an if.
static LStmtList *when(Gemm *G, LStmtList *into, LExpr *cond, bool is) {
  if (cond->kind == LX_CONST)
    return (cond->i != 0) == is ? into : NULL;
  LStmt *s = kb_if(G->kb, is ? cond : lx_unary(G->kb->cx, OP_LOGICAL_NOT, DT_BOOL, cond));
  kb_push(G->kb, into, s);
  return &s->body;
}

// k over several dims: the terms of one index of the outermost (a channel's taps), the
// unit k blocks are made of (kc_inner), and a block's first term k0 (a multiple of it)
// as that dim's index.
static int64_t kc_inner(const Gemm *G) { return G->K / G->kn[0]; }

static LIndex k_outer(const Gemm *G, LIndex k0) {
  int64_t P = kc_inner(G);
  TD_ASSERT(!k0.dyn && k0.base % P == 0);
  k0.base /= P;
  for (int t = 0; t < k0.nterms; t++) {
    TD_ASSERT(k0.coef[t] % P == 0);
    k0.coef[t] /= P;
  }
  return k0;
}

// ---- roles ----
// The tiles' rows are operand A's and their columns operand B's. Plainly A is a (rows
// i) and B is b (columns j); transposed (trans), A is b^T (rows j) and B is a^T
// (columns i), which lets the operand that is unit-stride in k be read in place by the
// micro-kernel (adirect) instead of transposed into panels.

// The operand (0: a, 1: b) in role 0 (A) or 1 (B).
static int role_operand(const Gemm *G, int role) { return G->trans ? 1 - role : role; }

// Role's operand at row or column x, k (its own dtype).
static LExpr *role_value(Gemm *G, int role, LIndex x, const LIndex *k) {
  int w = role_operand(G, role);
  return operand(G, w, w ? kb_ix_const(0) : x, w ? x : kb_ix_const(0), k);
}

// The output index of the tiles' row x and column y.
static void tile_out(const Gemm *G, LIndex x, LIndex y, LIndex *o) {
  if (G->trans)
    out_index(G, y, x, o);
  else
    out_index(G, x, y, o);
}

// Loops over a tile's mr rows (var *r) and nr columns (*c) in into, in the output's
// memory order: T's columns are the output's rows, so with trans the rows go inside
// (each row's run contiguous). Returns the innermost body.
static LStmtList *tile_loops(Gemm *G, LStmtList *into, int64_t mr, int64_t nr, LIndex *r, LIndex *c) {
  KernelBuilder *kb = G->kb;
  if (G->trans) {
    into = kb_step_loop(kb, into, nr, kb_ix_const(0), 1, false, c);
    return kb_step_loop(kb, into, mr, kb_ix_const(0), 1, false, r);
  }
  into = kb_step_loop(kb, into, mr, kb_ix_const(0), 1, false, r);
  return kb_step_loop(kb, into, nr, kb_ix_const(0), 1, false, c);
}

// ---- the micro-kernel: one function per tile shape, dtype and A's form ----
// f<N>(ap, bp, c; kc, ldc, load[, lda]): B's panel bp (k*NR + 0..NR), the tile c (rows
// ldc apart, read and written), A in one of three forms (ir/kernel.h's GemmMicro): a
// packed panel ([k][r]: k*MR + r), rows in place (r*lda + k: unit-stride in k), or
// columns in place (k*lda + r: unit-stride along the rows, as attention's values).
// The buffers' sizes, and the k loop's bound, grow with the longest block and the
// farthest element any call of the program passes.
// Rows and columns in place stay two functions. Tried (issue 31): one function for both,
// A(r, k) at r*rs + k*ks with both strides i64 arguments as a BLAS micro-kernel takes
// them (attention's scores and values, both 8x16 with AVX-512, then share it). The object
// of examples/attention.tdsl had one function fewer (62 instructions of assembly), yet
// tdslc did more work: 126.4M -> 128.4M instructions (callgrind; SelectionDAG, instcombine
// and register allocation each a little more: every in-place A, the matmul's 5x64 rows
// too, then multiplies k by a stride each term), though perf stat's task-clock read
// 0.96x (29.2 -> 28.1 ms, 3 x 20 runs interleaved); sdpa_256 ran 1.02x slower (10 rounds
// interleaved, each 1.00-1.15: the k loop recomputes k * ks with an imul each term),
// matmul_nt and the attention example unchanged; k * ks kept in an i64 local stepped by
// ks each term (LSR is off: llvm_emit.c) took the imul out of the loop but cost 133.5M.
// A k loop left empty (its loads and FMAs dropped) saves 6.9M in the columns form,
// 20.4M in the rows form (the matmul's 5x64 and the scores' 8x16): what these functions
// cost to compile is their loops' address arithmetic and FMAs, not their number.

static void fn_push(Ctx *cx, LStmtList *into, LStmt *s) { vec_push(&cx->arena, into, s); }

static int fn_local(Ctx *cx, LKernel *k, DType dt) {
  vec_push(&cx->arena, &k->locals, dt);
  return k->locals.len - 1;
}

// The element index r * a<arg> + c.
static LIndex arg_row(Ctx *cx, int arg, int r, int64_t c) {
  LIndex x = kb_ix_const(c);
  if (r)
    x.dyn = lx_binary(cx, OP_MUL, DT_I64, lx_arg(cx, arg), lx_const_i(cx, DT_I64, r));
  return x;
}

static const char *const AFORM_NAMES[] = {"", ", rows in place", ", columns in place"};

// The lanes of vector local l summed in a fixed tree (lanes lo + 0..n).
static LExpr *fn_lane_sum(Ctx *cx, DType cd, int V, int l, int lo, int n) {
  if (n == 1)
    return lx_lane(cx, lx_local_v(cx, cd, V, l), lo);
  return lx_binary(cx, OP_ADD, cd, fn_lane_sum(cx, cd, V, l, lo, n / 2),
                   fn_lane_sum(cx, cd, V, l, lo + n / 2, n - n / 2));
}

// A's rows in place (r*lda + k) at term k = the i64 expression kx.
static LIndex arg_row_at(Ctx *cx, int r, LExpr *kx) {
  LIndex x = arg_row(cx, 3, r, 0);
  x.dyn = x.dyn ? lx_binary(cx, OP_ADD, DT_I64, x.dyn, kx) : kx;
  return x;
}

// The micro-kernel of a few columns (NR < V, A's rows in place: the last panel of a
// contraction's B when few columns are left, 49 = 48 + 1 at 7 x 7, 196 = 3 x 64 + 4 at
// 14 x 14), its panel laid out by columns (column q at bp[q*kc + k]): both operands are
// unit-stride in k, so the lanes run along k as DOT's do: acc[r][q] += A(r, k + 0..V) *
// bp[q*kc + k + 0..V] for the whole vectors of kc, the lanes summed in a fixed tree, then
// the kc % V terms left; c[r*ldc + q] = (load ? c[r*ldc + q] : 0) + the sum.
static void new_micro_dot(Ctx *cx, LKernel *k, const GemmMicro *m) {
  int MR = m->MR, V = m->V, NR = m->NR;
  DType cd = m->cd;
  int acc[MAX_MR][MAX_DOT_NR];
  LExpr *z = lx_splat(cx, V, lx_const_f(cx, cd, 0));
  for (int r = 0; r < MR; r++)
    for (int q = 0; q < NR; q++) {
      acc[r][q] = fn_local(cx, k, cd);
      fn_push(cx, &k->body, ls_let(cx, acc[r][q], z));
    }
  k->nvars = 2;
  LExpr *kc = lx_arg(cx, 0), *nvec = lx_binary(cx, OP_FLOOR_DIVIDE, DT_I64, kc, lx_const_i(cx, DT_I64, V));
  LStmt *kl = ls_loop(cx, 0, 1);
  kl->n = nvec;
  fn_push(cx, &k->body, kl);
  int w[MAX_DOT_NR];
  for (int q = 0; q < NR; q++) {
    LIndex at = {.nterms = 1, .var = {0}, .coef = {V}};
    if (q)
      at.dyn = lx_binary(cx, OP_MUL, DT_I64, kc, lx_const_i(cx, DT_I64, q));
    w[q] = fn_local(cx, k, cd);
    fn_push(cx, &kl->body, ls_let(cx, w[q], lx_vload(cx, cd, V, 1, at)));
  }
  for (int r = 0; r < MR; r++) {
    LIndex at = arg_row(cx, 3, r, 0);
    at.nterms = 1, at.var[0] = 0, at.coef[0] = V;
    int a = fn_local(cx, k, cd);
    fn_push(cx, &kl->body, ls_let(cx, a, lx_vload(cx, cd, V, 0, at)));
    for (int q = 0; q < NR; q++)
      fn_push(cx, &kl->body, ls_set(cx, acc[r][q], lx_fma(cx, lx_local_v(cx, cd, V, a), lx_local_v(cx, cd, V, w[q]),
                                                          lx_local_v(cx, cd, V, acc[r][q]))));
  }
  int sum[MAX_MR][MAX_DOT_NR];
  for (int r = 0; r < MR; r++)
    for (int q = 0; q < NR; q++) {
      sum[r][q] = fn_local(cx, k, cd);
      fn_push(cx, &k->body, ls_let(cx, sum[r][q], fn_lane_sum(cx, cd, V, acc[r][q], 0, V)));
    }
  LStmt *rl = ls_loop(cx, 1, V - 1);  // the terms left: k = nvec * V + i1
  rl->n = lx_binary(cx, OP_REMAINDER, DT_I64, kc, lx_const_i(cx, DT_I64, V));
  fn_push(cx, &k->body, rl);
  LExpr *kx = lx_binary(cx, OP_ADD, DT_I64, lx_binary(cx, OP_MUL, DT_I64, nvec, lx_const_i(cx, DT_I64, V)),
                        lx_var(cx, 1));
  for (int r = 0; r < MR; r++)
    for (int q = 0; q < NR; q++) {
      LExpr *bx = q ? lx_binary(cx, OP_ADD, DT_I64, kx, lx_binary(cx, OP_MUL, DT_I64, kc, lx_const_i(cx, DT_I64, q)))
                    : kx;
      fn_push(cx, &rl->body,
              ls_set(cx, sum[r][q], lx_fma(cx, lx_load(cx, cd, 0, arg_row_at(cx, r, kx)),
                                           lx_load(cx, cd, 1, (LIndex){.dyn = bx}), lx_local(cx, cd, sum[r][q]))));
    }
  LStmt *load = ls_if(cx, lx_binary(cx, OP_NE, DT_BOOL, lx_arg(cx, 2), lx_const_i(cx, DT_I64, 0)));
  fn_push(cx, &k->body, load);
  for (int r = 0; r < MR; r++)
    for (int q = 0; q < NR; q++)
      fn_push(cx, &load->body, ls_set(cx, sum[r][q], lx_binary(cx, OP_ADD, cd, lx_local(cx, cd, sum[r][q]),
                                                                lx_load(cx, cd, 2, arg_row(cx, 1, r, q)))));
  for (int r = 0; r < MR; r++)
    for (int q = 0; q < NR; q++)
      fn_push(cx, &k->body, ls_store(cx, 2, arg_row(cx, 1, r, q), lx_local(cx, cd, sum[r][q])));
}

// The element at + coef * k of term k: k = U*i0 + u (the unrolled k loop), or the i64
// expression kx (the terms left after it).
static LIndex at_term(Ctx *cx, LIndex at, int64_t coef, int U, int u, LExpr *kx) {
  if (kx) {
    LExpr *d = coef == 1 ? kx : lx_binary(cx, OP_MUL, DT_I64, kx, lx_const_i(cx, DT_I64, coef));
    at.dyn = at.dyn ? lx_binary(cx, OP_ADD, DT_I64, at.dyn, d) : d;
    return at;
  }
  TD_ASSERT(at.nterms == 0);
  at.base += coef * u;
  at.nterms = 1, at.var[0] = 0, at.coef[0] = coef * U;
  return at;
}

// Term k (at_term's) times the i64 scalar argument arg, at element base + that.
static LIndex at_term_arg(Ctx *cx, int64_t base, int arg, int U, int u, LExpr *kx) {
  if (!kx) {
    kx = U > 1 ? lx_binary(cx, OP_MUL, DT_I64, lx_var(cx, 0), lx_const_i(cx, DT_I64, U)) : lx_var(cx, 0);
    kx = u ? lx_binary(cx, OP_ADD, DT_I64, kx, lx_const_i(cx, DT_I64, u)) : kx;
  }
  return (LIndex){.base = base, .dyn = lx_binary(cx, OP_MUL, DT_I64, kx, lx_arg(cx, arg))};
}

// One term of new_micro's k loop into body: w[v] = B's row k; acc[r][v] += splat(A(r, k)) * w[v]; and its
// prefetches.
static void micro_term(Ctx *cx, LKernel *k, const GemmMicro *m, LStmtList *body, int acc[][MAX_NV], int U, int u,
                       LExpr *kx) {
  int MR = m->MR, V = m->V, NR = m->NR, nv = NR / V;
  DType cd = m->cd;
  int w[MAX_NV];
  for (int v = 0; v < nv; v++) {
    w[v] = fn_local(cx, k, cd);
    LIndex at = m->binplace ? at_term_arg(cx, v * V, 4, U, u, kx) : at_term(cx, kb_ix_const(v * V), NR, U, u, kx);
    fn_push(cx, body, ls_let(cx, w[v], lx_vload(cx, cd, V, 1, at)));
  }
  for (int r = 0; r < MR; r++) {
    LIndex at = m->aform == GA_ROWS   ? at_term(cx, arg_row(cx, 3, r, 0), 1, U, u, kx)
                : m->aform == GA_COLS ? at_term_arg(cx, r, 3, U, u, kx)
                                      : at_term(cx, kb_ix_const(r), MR, U, u, kx);
    LExpr *x = lx_splat(cx, V, lx_load(cx, cd, 0, at));
    for (int v = 0; v < nv; v++)
      fn_push(cx, body,
              ls_set(cx, acc[r][v], lx_fma(cx, x, lx_local_v(cx, cd, V, w[v]), lx_local_v(cx, cd, V, acc[r][v]))));
  }
  if (m->prefetch && m->aform == GA_ROWS)  // a[MR*lda + MR*k] (gemm_build's pf)
    fn_push(cx, body, ls_prefetch(cx, 0, at_term(cx, arg_row(cx, 3, MR, 0), MR, U, u, kx)));
}

// The prefetches of one step of new_micro's unrolled k loop (U terms from k = U*i0):
// the lines of B's rows and of A's columns (packed) pfk terms on, one a line.
static void micro_prefetch(Ctx *cx, const GemmMicro *m, LStmtList *body, int U) {
  int64_t line = 64 / dtype_size(m->cd);
  for (int64_t e = 0; e < (int64_t)U * m->NR; e += line)
    fn_push(cx, body, ls_prefetch(cx, 1, at_term(cx, kb_ix_const(m->pfk * m->NR + e), m->NR, U, 0, NULL)));
  for (int64_t e = 0; m->aform == GA_PACKED && e < (int64_t)U * m->MR; e += line)
    fn_push(cx, body, ls_prefetch(cx, 0, at_term(cx, kb_ix_const(m->pfk * m->MR + e), m->MR, U, 0, NULL)));
}

static LProgram *new_micro(KernelBuilder *kb, const GemmMicro *m, const char *key, int index) {
  Ctx *cx = kb->cx;
  const LProgram *p = kb->p;
  int MR = m->MR, V = m->V, nv = m->NR / m->V, NR = m->NR;
  DType cd = m->cd;
  LProgram *fp = arena_alloc(&cx->arena, sizeof *fp);
  fp->name = p->name;
  fp->file = p->file;
  static const char *const names[] = {"ap", "bp", "c"};
  for (int i = 0; i < 3; i++)
    vec_push(&cx->arena, &fp->bufs, ((LBuf){LB_PARAM, cd, 1, names[i], i, false, false}));
  LKernel *k = arena_alloc(&cx->arena, sizeof *k);
  k->name = arena_printf(&cx->arena, "f%d", index);
  k->kind = KK_MATMUL;
  k->sched = key;
  k->nscalars = 5;  // kc, ldc, load, lda, ldb (the last two 0 where unused)
  for (int i = 0; i < 3; i++)
    vec_push(&cx->arena, &k->args, ((LArg){.buf = i, .read = true, .written = i == 2}));
  vec_push(&cx->arena, &fp->kernels, k);
  if (m->NR < V) {
    TD_ASSERT(m->aform == GA_ROWS && !m->binplace && NR <= MAX_DOT_NR);
    new_micro_dot(cx, k, m);
    return fp;
  }
  // let acc[r][v] = 0; if (load) acc[r][v] = c[r*ldc + v*V + 0..V]
  int acc[MAX_MR][MAX_NV];
  LExpr *z = lx_splat(cx, V, lx_const_f(cx, cd, 0));
  for (int r = 0; r < MR; r++)
    for (int v = 0; v < nv; v++) {
      acc[r][v] = fn_local(cx, k, cd);
      fn_push(cx, &k->body, ls_let(cx, acc[r][v], z));
    }
  LStmt *load = ls_if(cx, lx_binary(cx, OP_NE, DT_BOOL, lx_arg(cx, 2), lx_const_i(cx, DT_I64, 0)));
  fn_push(cx, &k->body, load);
  for (int r = 0; r < MR; r++)
    for (int v = 0; v < nv; v++)
      fn_push(cx, &load->body, ls_set(cx, acc[r][v], lx_vload(cx, cd, V, 2, arg_row(cx, 1, r, v * V))));
  // for k < kc: w[v] = bp[k*NR + v*V + 0..V]; acc[r][v] = fma(splat(A(r, k)), w[v], acc[r][v]),
  // unrolled: a loop of kc / U steps of U terms, then one over the kc % U terms left
  int U = m->unroll > 1 ? m->unroll : 1;
  k->nvars = U > 1 ? 2 : 1;
  LStmt *kl = ls_loop(cx, 0, U > 1 ? 0 : 1);  // (its bound grows with the calls: micro_fn)
  kl->n = U > 1 ? lx_binary(cx, OP_FLOOR_DIVIDE, DT_I64, lx_arg(cx, 0), lx_const_i(cx, DT_I64, U)) : lx_arg(cx, 0);
  fn_push(cx, &k->body, kl);
  for (int u = 0; u < U; u++)
    micro_term(cx, k, m, &kl->body, acc, U, u, NULL);
  if (m->pfk && !m->binplace)
    micro_prefetch(cx, m, &kl->body, U);
  if (U > 1) {
    LStmt *rl = ls_loop(cx, 1, U - 1);
    rl->n = lx_binary(cx, OP_REMAINDER, DT_I64, lx_arg(cx, 0), lx_const_i(cx, DT_I64, U));
    fn_push(cx, &k->body, rl);
    LExpr *steps = lx_binary(cx, OP_FLOOR_DIVIDE, DT_I64, lx_arg(cx, 0), lx_const_i(cx, DT_I64, U));
    LExpr *kx = lx_binary(cx, OP_ADD, DT_I64, lx_binary(cx, OP_MUL, DT_I64, steps, lx_const_i(cx, DT_I64, U)),
                          lx_var(cx, 1));
    micro_term(cx, k, m, &rl->body, acc, 1, 0, kx);
  }
  // c[r*ldc + v*V + 0..V] = acc[r][v]
  for (int r = 0; r < MR; r++)
    for (int v = 0; v < nv; v++)
      fn_push(cx, &k->body, ls_store(cx, 2, arg_row(cx, 1, r, v * V), lx_local_v(cx, cd, V, acc[r][v])));
  return fp;
}

// The elements a call reaches through ap, bp and c.
static void micro_reach(const GemmMicro *m, int64_t kc, int64_t lda, int64_t ldb, int64_t ldc, int64_t *reach) {
  reach[0] = m->aform == GA_ROWS ? (m->MR - 1) * lda + kc : m->aform == GA_COLS ? (kc - 1) * lda + m->MR : kc * m->MR;
  reach[1] = m->binplace ? (kc - 1) * ldb + m->NR : kc * m->NR;
  reach[2] = (m->MR - 1) * ldc + m->NR;
}

static const char *micro_key(Ctx *cx, const GemmMicro *m) {
  return arena_printf(&cx->arena, "gemm micro-kernel %s %dx%d%s%s%s%s%s", dtype_name(m->cd), m->MR, m->NR,
                      AFORM_NAMES[m->aform], m->binplace ? ", b in place" : "", m->prefetch ? ", prefetching" : "",
                      m->pfk ? arena_printf(&cx->arena, ", prefetching %d ahead", m->pfk) : "",
                      m->unroll > 1 ? arena_printf(&cx->arena, ", unrolled %d", m->unroll) : "");
}

// The program's micro-kernel m (made on first use), its bounds grown for a call of kc
// terms, A's rows (columns) lda apart and the tile's rows ldc apart: its index in funcs.
static int micro_fn(KernelBuilder *kb, const GemmMicro *m, int64_t kc, int64_t lda, int64_t ldb, int64_t ldc) {
  LProgram *p = kb->p;
  const char *key = micro_key(kb->cx, m);
  int f = 0;
  while (f < p->funcs.len && strcmp(p->funcs.data[f]->kernels.data[0]->sched, key) != 0)
    f++;
  if (f == p->funcs.len)
    vec_push(&kb->cx->arena, &p->funcs, new_micro(kb, m, key, f));
  LProgram *fp = p->funcs.data[f];
  LStmt *kl = NULL;
  for (int i = 0; i < fp->kernels.data[0]->body.len && !kl; i++)
    if (fp->kernels.data[0]->body.data[i]->kind == LS_LOOP)
      kl = fp->kernels.data[0]->body.data[i];
  TD_ASSERT(kl);
  int U = m->NR >= m->V && m->unroll > 1 ? m->unroll : 1;
  int64_t steps = m->NR < m->V ? kc / m->V : kc / U;  // (few columns: the k loop steps by vectors)
  if (steps > kl->extent)
    kl->extent = steps;
  int64_t reach[3], kmax = kl->extent * U;  // (the unrolled loop's bound checks: k < extent * U)
  micro_reach(m, kc, lda, ldb, ldc, reach);
  if (m->aform == GA_PACKED && reach[0] < kmax * m->MR)
    reach[0] = kmax * m->MR;
  if (m->aform == GA_COLS && reach[0] < (kmax - 1) * lda + m->MR)  // (its bound check: k < extent)
    reach[0] = (kmax - 1) * lda + m->MR;
  if (!m->binplace && m->NR >= m->V && reach[1] < kmax * m->NR)
    reach[1] = kmax * m->NR;
  for (int i = 0; i < 3; i++)
    if (fp->bufs.data[i].numel < reach[i])
      fp->bufs.data[i].numel = reach[i];
  return f;
}

void gemm_micro_call(KernelBuilder *kb, LStmtList *into, const GemmMicro *m, int aa, LIndex a, int64_t lda, int ba,
                     LIndex b, int64_t ldb, int ca, LIndex c, int64_t kc, int64_t ldc, LExpr *load) {
  int f = micro_fn(kb, m, kc, lda, ldb, ldc);
  LStmt *s = ls_call(kb->cx, f, 3, 5);
  LCall *call = s->call;
  int args[3] = {aa, ba, ca};
  LIndex at[3] = {a, b, c};
  micro_reach(m, kc, lda, ldb, ldc, call->reach);
  for (int i = 0; i < 3; i++)
    call->ptr[i] = args[i], call->at[i] = at[i];
  call->val[0] = kb_iconst(kb, DT_I64, kc);
  call->val[1] = kb_iconst(kb, DT_I64, ldc);
  call->val[2] = load;
  call->val[3] = kb_iconst(kb, DT_I64, m->aform == GA_PACKED ? 0 : lda);
  call->val[4] = kb_iconst(kb, DT_I64, m->binplace ? ldb : 0);
  kb_push(kb, into, s);
}

// Where a micro-kernel reads A: the arg and the element of its panel's (or first row's)
// first term.
typedef struct Ptr {
  int arg;
  LIndex at;
} Ptr;

// The width of B's last panel when it has n < NR columns: a contraction's (a
// convolution's output rows folded: 196 columns at 14 x 14 are 4 panels of 48 and 4)
// is whole vectors, and its tiles call a micro-kernel that narrow, instead of a full
// panel of zeros (a fifth of the FMAs at 14 x 14); one column with A's rows in place
// is the one-column micro-kernel (lanes along k: new_micro_dot); else NR.
static int tail_width(const Gemm *G, int mr, int64_t n) {
  if (!G->mm->attr.nk || G->trans || G->bdirect)
    return G->NR;
  if (G->adirect && n <= MAX_DOT_NR && n < G->V && mr * n + n + 1 <= G->kb->cpu->nregs && G->K >= G->V)
    return (int)n;  // (new_micro_dot: its accumulators, columns and a row of A fit the registers,
                    // and some k block has a vector of terms: its loop's bound)
  return (int)round_up(n, G->V);
}

// The micro-kernel of an mr x nr tile (B's rows in place with binplace). Unrolled where
// A's rows are read in place (a @ b, a @ b.t(), a.t() @ b.t() at 1024^2: 1.09-1.10x with
// 4 terms a step, 1.07-1.08x with 2, 1.04x with 8; the loop's address arithmetic, LSR
// being off, then runs once every 4 terms), and with both panels packed (a.t() @ b)
// prefetching them PF_TERMS terms ahead, a line at a time: B's panel of 512 x 32 (64 KB)
// overflows the L1 and meets 5 row panels; 1.05-1.10x at 1024^2 with 16 to 64 terms
// (1.10x with Zen 3's 4x24 tile, whose rows are 1.5 lines). Prefetching B's panel with
// A's rows in place measured slower once unrolled (0.90-0.99x at 8 to 64 terms). B's
// rows in place (a few rows of A: attention's p @ v) keep the loop as it was (not measured).
static GemmMicro micro_of(const Gemm *G, int mr, int nr, bool binplace) {
  GemmMicro m = {G->cd, mr, nr, G->V, G->adirect ? GA_ROWS : GA_PACKED, binplace, G->pf, 0, 1};
  if (m.aform == GA_PACKED && !binplace)
    m.pfk = PF_TERMS;
  if (nr >= G->V && !binplace && (G->adirect || m.pfk))
    m.unroll = GEMM_MICRO_UNROLL;
  return m;
}

// A call of the micro-kernel nr columns wide: kc terms from A at a and B at b (its rows in place when
// binplace), into the tile at c, rows ldc apart; load: an i64, non-zero to add to the
// tile's values.
static void micro_call(Gemm *G, LStmtList *into, Ptr a, Ptr b, bool binplace, Ptr c, int nr, int64_t kc,
                       int64_t ldc, LExpr *load) {
  GemmMicro m = micro_of(G, G->MR, nr, binplace);
  gemm_micro_call(G->kb, into, &m, a.arg, a.at, G->lda, b.arg, b.at, G->ldb, c.arg, c.at, kc, ldc, load);
}

// A's rows x + 0.. read in place from term k0: the operand's load there.
static Ptr direct_at(Gemm *G, LIndex x, LIndex k0) {
  LIndex k[TD_MAX_DIMS];  // (k over several dims: A flat in k, a_flat_k; k0 whole outer indices)
  k[0] = G->nk > 1 ? k_outer(G, k0) : k0;
  for (int q = 1; q < G->nk; q++)
    k[q] = kb_ix_const(0);
  LExpr *e = role_value(G, 0, x, k);
  TD_ASSERT(e->kind == LX_LOAD && e->dt == G->cd && !e->idx.dyn);
  return (Ptr){e->buf, e->idx};
}

// B's rows read in place from column y, term k0: the operand's load there.
static Ptr bdirect_at(Gemm *G, LIndex y, LIndex k0) {
  LExpr *e = role_value(G, 1, y, &k0);
  TD_ASSERT(e->kind == LX_LOAD && e->dt == G->cd && !e->idx.dyn);
  return (Ptr){e->buf, e->idx};
}

// ---- packing ----

// The loops over k's terms k0 + 0..klen into `into`: one loop, or where k spans several
// dims one per dim, outermost first (a block is whole indices of the outermost: k0 and
// klen multiples of kc_inner). Sets *lin, the term's number within the block (what
// packed panels are laid out by), and k[] (an index per dim).
static LStmtList *k_loops(Gemm *G, LStmtList *into, LIndex k0, int64_t klen, LIndex *k, LIndex *lin) {
  KernelBuilder *kb = G->kb;
  if (G->nk == 1) {
    into = kb_step_loop(kb, into, klen, kb_ix_const(0), 1, false, lin);
    k[0] = kb_ix_sum(kb, k0, lin, 1);
    return into;
  }
  int64_t P = kc_inner(G);
  TD_ASSERT(klen % P == 0);
  LIndex c0 = k_outer(G, k0), c;
  into = kb_step_loop(kb, into, klen / P, kb_ix_const(0), 1, false, &c);
  k[0] = kb_ix_sum(kb, c0, &c, 1);
  *lin = kb_ix_const(0);
  kb_ix_addmul(kb, lin, &c, P);
  int64_t stride = P;
  for (int q = 1; q < G->nk; q++) {
    stride /= G->kn[q];
    into = kb_step_loop(kb, into, G->kn[q], kb_ix_const(0), 1, false, &k[q]);
    kb_ix_addmul(kb, lin, &k[q], stride);
  }
  return into;
}

// A packed operand: panel p of a block starts at `at` + p * pstride in arg's buffer,
// its element (k, q) at k * width + q (width: MR for A, NR for B).
typedef struct Panels {
  int arg;
  LIndex at;
  int64_t pstride;
} Panels;

static LIndex panel_at(Gemm *G, const Panels *P, LIndex p) { return kb_ix_sum(G->kb, P->at, &p, P->pstride); }

// Element (k, q) of a panel of `width` columns at `at`: k * width + q, or in B's panel
// narrower than a vector (a last panel for new_micro_dot) by columns, q * klen + k.
static LIndex panel_elem(Gemm *G, int role, LIndex at, LIndex k, LIndex q, int width, int64_t klen) {
  if (role == 1 && width < G->V)
    return kb_ix_sum(G->kb, kb_ix_sum(G->kb, at, &q, klen), &k, 1);
  return kb_ix_sum(G->kb, kb_ix_sum(G->kb, at, &k, width), &q, 1);
}

static void fill_pad_tables(Gemm *G, LStmtList *in, bool cols, LIndex at, const LIndex *k);

// ---- folded columns: B read through a table of offsets ----
// Column j of a folded B (fold_columns) is at B's element cols[j] (its batch and k
// terms 0) plus what its batch and k terms add, which is affine: the table is filled
// once a call, before the batch loops, so that packing reads B with k outer and the
// panel's columns inner (stores along the panel; no division per element).

// B's load (under its conversions, rebuilt around the load) at offset `plus` from the
// load of batch o, column 0 (unfolded), k terms k.
static LExpr *folded_load(Gemm *G, const LIndex *k, LExpr *plus) {
  KernelBuilder *kb = G->kb;
  LExpr *e = operand_as_is(G, 1, kb_ix_const(0), kb_ix_const(0), k);
  DType casts[8];
  int nc = 0;
  for (; e->kind == LX_CAST; e = e->a) {
    TD_ASSERT(nc < 8);
    casts[nc++] = e->dt;
  }
  TD_ASSERT(e->kind == LX_LOAD && !e->idx.dyn);
  LIndex at = e->idx;
  at.dyn = plus;
  LExpr *v = lx_load(kb->cx, e->dt, e->buf, at);
  while (nc > 0)
    v = kb_cast(kb, v, casts[--nc]);
  return v;
}

// The table: cols[j] = B's element of column j, batch and k terms 0, less that of
// column 0 (one loop over the columns, where the kernel starts).
static void fill_cols(Gemm *G, LStmtList *into) {
  KernelBuilder *kb = G->kb;
  LIndex j, z[TD_MAX_DIMS];
  for (int q = 0; q < TD_MAX_DIMS; q++)
    z[q] = kb_ix_const(0);
  LStmtList *in = kb_step_loop(kb, into, G->N, kb_ix_const(0), 1, false, &j);
  LExpr *e = operand(G, 1, kb_ix_const(0), j, z), *e0 = operand_as_is(G, 1, kb_ix_const(0), kb_ix_const(0), z);
  while (e->kind == LX_CAST)
    e = e->a;
  while (e0->kind == LX_CAST)
    e0 = e0->a;
  LIndex d = e->idx;
  kb_ix_addmul(kb, &d, &e0->idx, -1);
  kb_push(kb, in, kb_store_stmt(kb, kb_arg(kb, G->cols, true, true), j, kb_ix_expr(kb, &d)));
  if (G->pclip)
    fill_pad_tables(G, in, true, j, NULL);
}

// ---- folded columns packed by runs ----
// A panel of a folded B is a few runs: its columns of one output row (jd) are B's
// elements sj apart (a window row of the input), the next row's start elsewhere. Where
// B is a plain load of the accumulation dtype, each run is copied for all the block's k
// terms by one function of the program (as the micro-kernels are), a loop along the run
// that the compilers vectorize, instead of a load through the column table per element:
//   runs(b, bp, koffs; klen, n, q0, off):  for k < klen, q < n:
//                                            bp[k*NR + q0 + q] = b[koffs[k] + off + q*sj]
// off is the run's first column's table entry, koffs[k] B's offset of k term k (a second
// table, filled once a call with the columns'). Stride 2 goes by vectors (runs_stride2).
// A panel of NR columns meets at most (NR - 1) / rowlen + 2 rows: so many calls, those
// past the panel's end of no terms.
enum { RUNS_MIN_ROW = 4 };  // shorter rows (a run of a few elements) keep the table's loads

// Whether the folded B is packed by runs (sets sj and rowlen).
static bool runs_fit(Gemm *G) {
  LIndex z[TD_MAX_DIMS];
  for (int q = 0; q < TD_MAX_DIMS; q++)
    z[q] = kb_ix_const(0);
  LExpr *e = operand_as_is(G, 1, kb_ix_const(0), kb_ix_var(PROBE_VAR + 1), z);
  if (G->nbat || e->kind != LX_LOAD || e->dt != G->cd || e->idx.dyn)
    return false;
  G->sj = kb_ix_coef(&e->idx, PROBE_VAR + 1);
  G->rowlen = G->mm->out->view.shape[G->jd];
  return G->sj > 0 && G->rowlen >= RUNS_MIN_ROW;
}

// The table: koffs[k] = B's element of k term k, less that of term 0 (column 0).
static void fill_koffs(Gemm *G, LStmtList *into) {
  KernelBuilder *kb = G->kb;
  LIndex k[TD_MAX_DIMS], lin, z[TD_MAX_DIMS];
  for (int q = 0; q < TD_MAX_DIMS; q++)
    z[q] = kb_ix_const(0);
  LStmtList *in = k_loops(G, into, kb_ix_const(0), G->K, k, &lin);
  LIndex d = operand_as_is(G, 1, kb_ix_const(0), kb_ix_const(0), k)->idx;
  kb_ix_addmul(kb, &d, &operand_as_is(G, 1, kb_ix_const(0), kb_ix_const(0), z)->idx, -1);
  kb_push(kb, in, kb_store_stmt(kb, kb_arg(kb, G->koffs, true, true), lin, kb_ix_expr(kb, &d)));
  if (G->pclip)
    fill_pad_tables(G, in, false, lin, k);
}

// A stride-2 run by vectors (LLVM makes gathers of the strided loop): two loads of V
// lanes, the second V - 1 on (so it ends at the run's last element), their even and odd
// lanes shuffled into one vector; then the terms left one by one. n terms from B's
// element base into the panel at row (its k term's terms) + dst0, the loops' vars v and v + 1.
static void runs_stride2(Ctx *cx, LKernel *k, LStmtList *into, DType cd, int NR, int V, LExpr *n, LIndex row,
                         LExpr *dst0, LExpr *base, int v) {
  LExpr *nv = lx_binary(cx, OP_FLOOR_DIVIDE, DT_I64, n, lx_const_i(cx, DT_I64, V));
  LStmt *vl = ls_loop(cx, v, NR / V), *rl = ls_loop(cx, v + 1, V - 1);
  vl->n = nv;
  rl->n = lx_binary(cx, OP_REMAINDER, DT_I64, n, lx_const_i(cx, DT_I64, V));
  fn_push(cx, into, vl);
  fn_push(cx, into, rl);
  int x[2];
  for (int h = 0; h < 2; h++) {
    x[h] = fn_local(cx, k, cd);
    LIndex at = {.base = h ? V - 1 : 0, .nterms = 1, .var = {v}, .coef = {2 * V}, .dyn = base};
    fn_push(cx, &vl->body, ls_let(cx, x[h], lx_vload(cx, cd, V, 0, at)));
  }
  int sel[64];
  TD_ASSERT(V <= 64);
  for (int l = 0; l < V; l++)
    sel[l] = l < V / 2 ? 2 * l : 2 * l + 1;
  LIndex dst = row;
  dst.var[dst.nterms] = v, dst.coef[dst.nterms++] = V, dst.dyn = dst0;
  int y = fn_local(cx, k, cd);  // (the C backend prints a shuffle as a let's value)
  fn_push(cx, &vl->body,
          ls_let(cx, y, lx_shuffle(cx, lx_local_v(cx, cd, V, x[0]), lx_local_v(cx, cd, V, x[1]), sel, V)));
  fn_push(cx, &vl->body, ls_store(cx, 1, dst, lx_local_v(cx, cd, V, y)));
  LExpr *q = lx_binary(cx, OP_ADD, DT_I64, lx_binary(cx, OP_MUL, DT_I64, nv, lx_const_i(cx, DT_I64, V)),
                       lx_var(cx, v + 1));
  LExpr *two_q = lx_binary(cx, OP_MUL, DT_I64, q, lx_const_i(cx, DT_I64, 2));
  LIndex src1 = {.dyn = lx_binary(cx, OP_ADD, DT_I64, base, two_q)};
  LIndex dst1 = row;
  dst1.dyn = lx_binary(cx, OP_ADD, DT_I64, dst0, q);
  fn_push(cx, &rl->body, ls_store(cx, 1, dst1, lx_load(cx, cd, 0, src1)));
}

static LProgram *new_runs(KernelBuilder *kb, const char *key, int index, DType cd, int NR, int V, int64_t sj) {
  Ctx *cx = kb->cx;
  LProgram *fp = arena_alloc(&cx->arena, sizeof *fp);
  fp->name = kb->p->name;
  fp->file = kb->p->file;
  static const char *const names[] = {"b", "bp", "koffs"};
  for (int i = 0; i < 3; i++)
    vec_push(&cx->arena, &fp->bufs, ((LBuf){LB_PARAM, i == 2 ? DT_I64 : cd, 1, names[i], i, false, false}));
  LKernel *k = arena_alloc(&cx->arena, sizeof *k);
  k->name = arena_printf(&cx->arena, "f%d", index);
  k->kind = KK_MATMUL;
  k->sched = key;
  k->nscalars = 4;  // klen, n, q0, off
  k->nvars = 2;
  for (int i = 0; i < 3; i++)
    vec_push(&cx->arena, &k->args, ((LArg){.buf = i, .read = i != 1, .written = i == 1}));
  vec_push(&cx->arena, &fp->kernels, k);
  LStmt *kl = ls_loop(cx, 0, 1), *ql = ls_loop(cx, 1, NR);
  kl->n = lx_arg(cx, 0);
  ql->n = lx_arg(cx, 1);
  fn_push(cx, &k->body, kl);
  LExpr *ko = lx_load(cx, DT_I64, 2, (LIndex){.nterms = 1, .var = {0}, .coef = {1}});
  if (sj == 2 && V > 1 && NR % V == 0) {
    k->nvars = 3;
    runs_stride2(cx, k, &kl->body, cd, NR, V, lx_arg(cx, 1), (LIndex){.nterms = 1, .var = {0}, .coef = {NR}},
                 lx_arg(cx, 2), lx_binary(cx, OP_ADD, DT_I64, ko, lx_arg(cx, 3)), 1);
    return fp;
  }
  fn_push(cx, &kl->body, ql);
  LIndex src = {.nterms = 1, .var = {1}, .coef = {sj}, .dyn = lx_binary(cx, OP_ADD, DT_I64, ko, lx_arg(cx, 3))};
  LIndex dst = {.nterms = 2, .var = {0, 1}, .coef = {NR, 1}, .dyn = lx_arg(cx, 2)};
  fn_push(cx, &ql->body, ls_store(cx, 1, dst, lx_load(cx, cd, 0, src)));
  return fp;
}

static LProgram *new_runs_clipped(KernelBuilder *kb, const char *key, int index, DType cd, int NR, int V,
                                  int64_t sj, int64_t sw, int64_t T);

// The program's runs function for G (made on first use; clipped: pclip's), its bounds
// grown for a call of klen terms reaching breach elements of B: its index in funcs.
static int runs_fn(Gemm *G, int64_t klen, int64_t breach) {
  KernelBuilder *kb = G->kb;
  LProgram *p = kb->p;
  const char *key =
      G->pclip ? arena_printf(&kb->cx->arena, "gemm pack runs clipped %s %d stride %" PRId64 " step %" PRId64
                              " taps %" PRId64, dtype_name(G->cd), G->NR, G->sj, G->sw, kc_inner(G))
               : arena_printf(&kb->cx->arena, "gemm pack runs %s %d stride %" PRId64, dtype_name(G->cd), G->NR, G->sj);
  int f = 0;
  while (f < p->funcs.len && strcmp(p->funcs.data[f]->kernels.data[0]->sched, key) != 0)
    f++;
  if (f == p->funcs.len)
    vec_push(&kb->cx->arena, &p->funcs,
             G->pclip ? new_runs_clipped(kb, key, f, G->cd, G->NR, G->V, G->sj, G->sw, kc_inner(G))
                      : new_runs(kb, key, f, G->cd, G->NR, G->V, G->sj));
  LProgram *fp = p->funcs.data[f];
  LStmt *kl = fp->kernels.data[0]->body.data[0];
  if (G->pclip)  // (the channels' loop, inside the taps')
    kl = kl->body.data[kl->body.len - 1];
  int64_t ext = G->pclip ? klen / kc_inner(G) : klen;
  kl->extent = ext > kl->extent ? ext : kl->extent;
  int64_t reach[5] = {breach, klen * G->NR, klen, klen, klen};
  for (int i = 0; i < fp->bufs.len; i++)
    if (fp->bufs.data[i].numel < reach[i])
      fp->bufs.data[i].numel = reach[i];
  return f;
}

// Panel p's columns start + p * NR + 0..NR (full), k terms k0 + 0..klen, into the
// panel at `at`: one call per row it may meet.
static void pack_runs(Gemm *G, LStmtList *into, LIndex j0, LIndex k0, int64_t klen, int dst, LIndex at) {
  KernelBuilder *kb = G->kb;
  Ctx *cx = kb->cx;
  LExpr *b0 = operand_as_is(G, 1, kb_ix_const(0), kb_ix_const(0), (LIndex[TD_MAX_DIMS]){0});
  int barg = b0->buf;
  // (clipped: b from its buffer's start, column 0 of term 0 may lie before it)
  int64_t bstart = G->pclip ? 0 : b0->idx.base;
  int64_t breach = kb->p->bufs.data[kb->k->args.data[barg].buf].numel - bstart;
  int f = runs_fn(G, klen, breach);
  int ca = kb_arg(kb, G->cols, true, false), ka = kb_arg(kb, G->koffs, true, false);
  LExpr *jx = kb_ix_expr(kb, &j0), *NR = kb_iconst(kb, DT_I64, G->NR), *W = kb_iconst(kb, DT_I64, G->rowlen);
  LExpr *first = kb_binary(kb, OP_SUB, DT_I64, W, kb_binary(kb, OP_REMAINDER, DT_I64, jx, W));
  int64_t nruns = (G->NR - 1) / G->rowlen + 2;
  for (int64_t s = 0; s < nruns; s++) {
    LExpr *q0 = s ? kb_binary(kb, OP_MINIMUM, DT_I64, NR,
                              kb_binary(kb, OP_ADD, DT_I64, first, kb_iconst(kb, DT_I64, (s - 1) * G->rowlen)))
                  : kb_iconst(kb, DT_I64, 0);
    LExpr *q1 = kb_binary(kb, OP_MINIMUM, DT_I64, NR,
                          kb_binary(kb, OP_ADD, DT_I64, first, kb_iconst(kb, DT_I64, s * G->rowlen)));
    LExpr *qc = s ? kb_binary(kb, OP_MINIMUM, DT_I64, q0, kb_iconst(kb, DT_I64, G->NR - 1)) : q0;
    LIndex jr = kb_dyn_index(kb_binary(kb, OP_ADD, DT_I64, jx, qc));
    LExpr *off = lx_load(cx, DT_I64, ca, jr);
    LStmt *c = ls_call(cx, f, G->pclip ? 5 : 3, G->pclip ? 8 : 4);
    int args[5] = {barg, dst, ka, -1, -1};
    LIndex ats[5] = {kb_ix_const(bstart), at, k0, k0, k0};
    int64_t reach[5] = {breach, klen * G->NR, klen, klen, klen};
    if (G->pclip) {
      args[3] = kb_arg(kb, G->krow, true, false), args[4] = kb_arg(kb, G->kcol, true, false);
      off = kb_binary(kb, OP_ADD, DT_I64, off, kb_iconst(kb, DT_I64, b0->idx.base));
      const View *xv = &G->px->view;
      c->call->val[4] = lx_load(cx, DT_I64, kb_arg(kb, G->prow, true, false), jr);
      c->call->val[5] = lx_load(cx, DT_I64, kb_arg(kb, G->pcol, true, false), jr);
      c->call->val[6] = kb_iconst(kb, DT_I64, xv->shape[2]);
      c->call->val[7] = kb_iconst(kb, DT_I64, xv->shape[3]);
    }
    for (int i = 0; i < (G->pclip ? 5 : 3); i++)
      c->call->ptr[i] = args[i], c->call->at[i] = ats[i], c->call->reach[i] = reach[i];
    c->call->val[0] = kb_iconst(kb, DT_I64, klen);
    c->call->val[1] = kb_binary(kb, OP_SUB, DT_I64, q1, q0);
    c->call->val[2] = q0;
    c->call->val[3] = off;
    kb_push(kb, into, c);
  }
}

// ---- B a convolution's zero padding ----
// B is the window view of P, px padded with zeros (ir/fuse.c leaves P's cats unstored).
// Where B is packed by runs (a 2-D convolution of one image, its output rows folded:
// pad_clips), each run is copied straight from px, clipped to it: per k term, the run's
// input row (rb + krow[k]) outside px gives zeros, else its columns from
// cb + kcol[k] by sw, those outside px zeros (the padding is never written anywhere
// but into the panels); the last, narrow panel loads px at a clamped index, selected.
// Every other schedule reads P from a temp (pad_copy: zeros, then px inside: one copy
// in this kernel, where the padding was a kernel per padded dim).

// B's index in P at its View's index bi.
static void padded_at(Gemm *G, const LIndex *bi, LIndex *pc) {
  for (int p = 0; p < G->pv->ndim; p++)
    pc[p] = kb_ix_const(G->pm.start[p]);
  const View *bv = &G->mm->srcs[1]->view;
  for (int d = 0; d < bv->ndim; d++)
    if (G->pm.pdim[d] >= 0)
      kb_ix_addmul(G->kb, &pc[G->pm.pdim[d]], &bi[d], G->pm.mult[d]);
}

// B's value at bi: px's (clipped: the caller reads only inside it), or the temp's (before
// the choice, a probe's load of the temp's layout, never emitted).
static LExpr *padded_value(Gemm *G, const LIndex *bi) {
  KernelBuilder *kb = G->kb;
  LIndex pc[TD_MAX_DIMS];
  padded_at(G, bi, pc);
  if (G->pclip) {
    for (int p = 0; p < G->pv->ndim; p++)
      pc[p].base -= G->pl[p];
    return kb_value(kb, G->px, pc);
  }
  int buf = G->ptemp >= 0 ? G->ptemp : kb->buf_of[G->px->buf->id];
  return lx_load(kb->cx, G->mm->srcs[1]->dtype, kb_arg(kb, buf, true, false), kb_view_index(kb, G->pv, pc));
}

// B's index in P at column j (unfolded: the flat column; else j of jd) and k terms k.
static void b_coords(Gemm *G, LIndex j, const LIndex *k, bool unfold, LIndex *pc) {
  LIndex o[TD_MAX_DIMS], ai[TD_MAX_DIMS], bi[TD_MAX_DIMS];
  out_index(G, kb_ix_const(0), j, o);
  if (unfold && G->nfold)
    unfold_column(G, j, o);
  kb_matmul_indices(G->mm, o, k, ai, bi);
  padded_at(G, bi, pc);
}

// P copied into a temp that B then reads.
static void pad_copy(Gemm *G, LStmtList *into) {
  KernelBuilder *kb = G->kb;
  DType dt = G->mm->srcs[1]->dtype;
  int64_t n = view_numel(*G->pv);
  G->ptemp = kb_new_temp(kb, dt, n, "padded");
  int arg = kb_arg(kb, G->ptemp, false, true);
  LIndex e, x[TD_MAX_DIMS], pc[TD_MAX_DIMS];
  bool par = n >= PARALLEL_WORK;  // (in parallel: the first loop of more than one index)
  LStmtList *zl = kb_step_loop(kb, into, n, kb_ix_const(0), 1, par, &e);
  kb_push(kb, zl, kb_store_stmt(kb, arg, e, kb_cast(kb, lx_const_f(kb->cx, G->cd, 0), dt)));
  const View *xv = &G->px->view;
  LStmtList *in = into;
  for (int d = 0; d < xv->ndim; d++) {
    in = kb_step_loop(kb, in, xv->shape[d], kb_ix_const(0), 1, par && xv->shape[d] > 1, &x[d]);
    par &= xv->shape[d] <= 1;
    pc[d] = kb_ix_plus(x[d], G->pl[d]);
  }
  kb_push(kb, in, kb_store_stmt(kb, arg, kb_view_index(kb, G->pv, pc), kb_value(kb, G->px, x)));
}

// Whether B is packed by runs from px, clipped (sets pclip, sj, rowlen, sw): a 2-D
// convolution [1, C, H, W] padded along H and W only, its output rows folded, px a plain
// load of the accumulation dtype, a column moving P's last dim alone.
static bool pad_clips(Gemm *G) {
  const View *pv = G->pv, *xv = &G->px->view;
  if (G->sched != SCHED_PACKED || G->nfold != 1 || pv->ndim != 4 || G->pl[0] || G->pl[1] ||
      xv->shape[0] != pv->shape[0] || xv->shape[1] != pv->shape[1])
    return false;
  G->pclip = true;
  LIndex k[TD_MAX_DIMS], pc[TD_MAX_DIMS];
  k_probe(G, k);
  b_coords(G, kb_ix_var(PROBE_VAR + 1), k, false, pc);
  G->sw = kb_ix_coef(&pc[3], PROBE_VAR + 1);
  bool moves = false;
  for (int p = 0; p < 3; p++)
    moves |= kb_ix_coef(&pc[p], PROBE_VAR + 1) != 0;
  G->pclip = G->sw > 0 && !moves && !pc[2].dyn && !pc[3].dyn && plain_load(G, 1) && runs_fit(G);
  return G->pclip;
}

// The clipped runs' tables of the columns (prow, pcol: at column j, in the columns'
// loop `in`) and of the k terms (krow, kcol: at k term lin of k, in theirs).
static void fill_pad_tables(Gemm *G, LStmtList *in, bool cols, LIndex at, const LIndex *k) {
  KernelBuilder *kb = G->kb;
  LIndex z[TD_MAX_DIMS], pc[TD_MAX_DIMS], p0[TD_MAX_DIMS];
  for (int q = 0; q < TD_MAX_DIMS; q++)
    z[q] = kb_ix_const(0);
  b_coords(G, cols ? at : kb_ix_const(0), cols ? z : k, cols, pc);
  b_coords(G, kb_ix_const(0), z, false, p0);
  for (int p = 2; p < 4; p++) {
    LIndex d = pc[p];
    if (cols)
      d.base -= G->pl[p];
    else
      kb_ix_addmul(kb, &d, &p0[p], -1);
    int t = cols ? (p == 2 ? G->prow : G->pcol) : (p == 2 ? G->krow : G->kcol);
    kb_push(kb, in, kb_store_stmt(kb, kb_arg(kb, t, true, true), at, kb_ix_expr(kb, &d)));
  }
}

// The clipped runs function: runs(b, bp, koffs, krow, kcol; klen, n, q0, off, rb, cb, H, W):
//   for k < klen: ih = rb + krow[k], iw = cb + kcol[k]; q in [qa, qb) have 0 <= iw + q*sw < W
//     (none when ih is outside [0, H)): bp[k*NR + q0 + q] = b[koffs[k] + off + q*sj] there, else 0
static LProgram *new_runs_clipped(KernelBuilder *kb, const char *key, int index, DType cd, int NR, int V,
                                  int64_t sj, int64_t sw, int64_t T) {
  Ctx *cx = kb->cx;
  LProgram *fp = arena_alloc(&cx->arena, sizeof *fp);
  fp->name = kb->p->name;
  fp->file = kb->p->file;
  static const char *const names[] = {"b", "bp", "koffs", "krow", "kcol"};
  for (int i = 0; i < 5; i++)
    vec_push(&cx->arena, &fp->bufs, ((LBuf){LB_PARAM, i >= 2 ? DT_I64 : cd, 1, names[i], i, false, false}));
  LKernel *k = arena_alloc(&cx->arena, sizeof *k);
  k->name = arena_printf(&cx->arena, "f%d", index);
  k->kind = KK_MATMUL;
  k->sched = key;
  k->nscalars = 8;  // klen, n, q0, off, rb, cb, H, W
  k->nvars = 6;     // the tap, the channel, the zeros before, the copy (and its rest), the zeros after
  for (int i = 0; i < 5; i++)
    vec_push(&cx->arena, &k->args, ((LArg){.buf = i, .read = i != 1, .written = i == 1}));
  vec_push(&cx->arena, &fp->kernels, k);
  // taps outside (the clipping is the tap's), channels inside: k term c * T + t
  LStmt *tl = ls_loop(cx, 0, T), *cl = ls_loop(cx, 1, 1);
  cl->n = lx_binary(cx, OP_FLOOR_DIVIDE, DT_I64, lx_arg(cx, 0), lx_const_i(cx, DT_I64, T));
  fn_push(cx, &k->body, tl);
  LIndex tx = {.nterms = 1, .var = {0}, .coef = {1}}, kx = {.nterms = 2, .var = {1, 0}, .coef = {T, 1}};
  LIndex row = {.nterms = 2, .var = {1, 0}, .coef = {T * NR, NR}};
#define TD_I(v) lx_const_i(cx, DT_I64, v)
#define TD_B2(op, a, b) lx_binary(cx, op, DT_I64, a, b)
  LExpr *ih = TD_B2(OP_ADD, lx_arg(cx, 4), lx_load(cx, DT_I64, 3, tx));
  LExpr *iw = TD_B2(OP_ADD, lx_arg(cx, 5), lx_load(cx, DT_I64, 4, tx));
  LExpr *n = lx_arg(cx, 1);
  // qa = min(n, ceil(max(0, -iw) / sw)), qb = min(n, max(qa, ceil(max(0, W - iw) / sw)))
  LExpr *qa = TD_B2(OP_MINIMUM, n,
                    TD_B2(OP_FLOOR_DIVIDE, TD_B2(OP_ADD, TD_B2(OP_MAXIMUM, TD_I(0), TD_B2(OP_SUB, TD_I(0), iw)), TD_I(sw - 1)),
                          TD_I(sw)));
  int la = fn_local(cx, k, DT_I64), lb = fn_local(cx, k, DT_I64);
  LExpr *rowok = lx_binary(cx, OP_LOGICAL_AND, DT_BOOL, lx_binary(cx, OP_GE, DT_BOOL, ih, TD_I(0)),
                           lx_binary(cx, OP_LT, DT_BOOL, ih, lx_arg(cx, 6)));
  fn_push(cx, &tl->body, ls_let(cx, la, lx_select(cx, rowok, qa, n)));
  LExpr *A = lx_local(cx, DT_I64, la);
  LExpr *qb = TD_B2(OP_MINIMUM, n,
                    TD_B2(OP_MAXIMUM, A,
                          TD_B2(OP_FLOOR_DIVIDE,
                                TD_B2(OP_ADD, TD_B2(OP_MAXIMUM, TD_I(0), TD_B2(OP_SUB, lx_arg(cx, 7), iw)), TD_I(sw - 1)),
                                TD_I(sw))));
  fn_push(cx, &tl->body, ls_let(cx, lb, lx_select(cx, rowok, qb, n)));
  fn_push(cx, &tl->body, cl);
  LExpr *Bq = lx_local(cx, DT_I64, lb);
  LExpr *zero = lx_const_f(cx, cd, 0);
  LExpr *starts[3] = {TD_I(0), A, Bq}, *counts[3] = {A, TD_B2(OP_SUB, Bq, A), TD_B2(OP_SUB, n, Bq)};
  LExpr *base = TD_B2(OP_ADD, TD_B2(OP_ADD, lx_load(cx, DT_I64, 2, kx), lx_arg(cx, 3)), TD_B2(OP_MUL, A, TD_I(sj)));
  for (int part = 0; part < 3; part++) {
    if (part == 1 && sj == 2 && V > 1 && NR % V == 0) {  // (vars 3 and 4)
      runs_stride2(cx, k, &cl->body, cd, NR, V, counts[1], row, TD_B2(OP_ADD, lx_arg(cx, 2), A), base, 3);
      continue;
    }
    LStmt *ql = ls_loop(cx, part ? 1 + 2 * part : 2, NR);
    ql->n = counts[part];
    fn_push(cx, &cl->body, ql);
    LIndex dst = row;
    dst.var[dst.nterms] = ql->var, dst.coef[dst.nterms++] = 1;
    dst.dyn = TD_B2(OP_ADD, lx_arg(cx, 2), starts[part]);
    LExpr *v = zero;
    if (part == 1)
      v = lx_load(cx, cd, 0, (LIndex){.nterms = 1, .var = {ql->var}, .coef = {sj}, .dyn = base});
    fn_push(cx, &ql->body, ls_store(cx, 1, dst, v));
  }
#undef TD_I
#undef TD_B2
  return fp;
}

// Clipped: B at column col, k term kl (the narrow last panel's), px's element or 0
// outside it: a load at px's first element there, selected away.
static LExpr *clipped_load(Gemm *G, LIndex col, LIndex kl) {
  KernelBuilder *kb = G->kb;
  Ctx *cx = kb->cx;
  LIndex z[TD_MAX_DIMS];
  for (int q = 0; q < TD_MAX_DIMS; q++)
    z[q] = kb_ix_const(0);
  LExpr *b0 = operand_as_is(G, 1, kb_ix_const(0), kb_ix_const(0), z);
  int tabs[4] = {G->prow, G->krow, G->pcol, G->kcol};
  LExpr *t[4];
  for (int i = 0; i < 4; i++)
    t[i] = lx_load(cx, DT_I64, kb_arg(kb, tabs[i], true, false), i % 2 ? kl : col);
  LExpr *ih = kb_binary(kb, OP_ADD, DT_I64, t[0], t[1]), *iw = kb_binary(kb, OP_ADD, DT_I64, t[2], t[3]);
  const View *xv = &G->px->view;
  LExpr *ok = NULL;
  for (int p = 0; p < 2; p++) {
    LExpr *c = p ? iw : ih, *in = lx_binary(cx, OP_LOGICAL_AND, DT_BOOL,
                                           lx_binary(cx, OP_GE, DT_BOOL, c, kb_iconst(kb, DT_I64, 0)),
                                           lx_binary(cx, OP_LT, DT_BOOL, c, kb_iconst(kb, DT_I64, xv->shape[2 + p])));
    ok = ok ? lx_binary(cx, OP_LOGICAL_AND, DT_BOOL, ok, in) : in;
  }
  LExpr *at = kb_binary(kb, OP_ADD, DT_I64,
                        kb_binary(kb, OP_ADD, DT_I64, lx_load(cx, DT_I64, kb_arg(kb, G->cols, true, false), col),
                                  lx_load(cx, DT_I64, kb_arg(kb, G->koffs, true, false), kl)),
                        kb_iconst(kb, DT_I64, b0->idx.base));
  LExpr *inside = kb_iconst(kb, DT_I64, kb_view_index(kb, xv, z).base);
  LExpr *v = lx_load(cx, G->cd, b0->buf, kb_dyn_index(lx_select(cx, ok, at, inside)));
  return lx_select(cx, ok, v, lx_const_f(cx, G->cd, 0));
}

// pack's B columns start + 0..n, k terms k0 + 0..klen, of a folded B into P.
static void pack_folded(Gemm *G, LStmtList *into, LIndex start, int64_t n, LIndex k0, int64_t klen, Panels P,
                        bool par) {
  KernelBuilder *kb = G->kb;
  int ca = kb_arg(kb, G->cols, true, false);
  int64_t full = n / G->NR;
  int rest = (int)(n % G->NR);
  for (int part = 0; part < 2; part++) {
    int64_t np = part ? (rest ? 1 : 0) : full;
    int w = part ? rest : G->NR, width = part ? tail_width(G, G->MR, rest) : G->NR;
    if (!np)
      continue;
    LIndex p, k[TD_MAX_DIMS], kl, q;
    if (!part && G->koffs >= 0) {
      // runs: where the panels are too few for the threads, the k terms are split
      // among them (chunks of whole units of kc_inner)
      int64_t units = klen / kc_inner(G), nch = 1;
      bool kpar = par && np < PARALLEL_MIN_ITERS && np * width * klen >= PARALLEL_WORK;
      for (int64_t c = kpar ? PARALLEL_MIN_ITERS : 1; c > 1 && nch == 1; c--)
        nch = units % c == 0 ? c : 1;
      int64_t csize = klen / nch;
      LIndex c0;
      LStmtList *body = kb_step_loop(kb, into, nch, kb_ix_const(0), csize, nch > 1, &c0);
      bool ppar = par && nch == 1 && np > 1 && np * width * klen >= PARALLEL_WORK;
      body = kb_step_loop(kb, body, np, kb_ix_const(0), 1, ppar, &p);
      LIndex at = kb_ix_sum(kb, panel_at(G, &P, p), &c0, G->NR);
      pack_runs(G, body, kb_ix_sum(kb, start, &p, G->NR), kb_ix_sum(kb, k0, &c0, 1), csize, P.arg, at);
      continue;
    }
    LStmtList *body =
        kb_step_loop(kb, into, np, kb_ix_const(0), 1, par && np > 1 && np * width * klen >= PARALLEL_WORK, &p);
    LIndex at = panel_at(G, &P, kb_ix_plus(p, part ? full : 0));
    LStmtList *in = k_loops(G, body, k0, klen, k, &kl);
    in = kb_step_loop(kb, in, w, kb_ix_const(0), 1, false, &q);
    LIndex x = kb_ix_sum(kb, kb_ix_plus(start, part ? full * G->NR : 0), &p, width);
    kb_ix_addmul(kb, &x, &q, 1);
    LExpr *v = G->pclip ? clipped_load(G, x, kb_ix_sum(kb, kl, &k0, 1))
                        : kb_cast(kb, folded_load(G, k, lx_load(kb->cx, DT_I64, ca, x)), G->cd);
    kb_push(kb, in, kb_store_stmt(kb, P.arg, panel_elem(G, 1, at, kl, q, width, klen), v));
    if (part && w < width) {  // the padding: zeros
      LIndex kz, qz;
      LStmtList *zl = kb_step_loop(kb, body, klen, kb_ix_const(0), 1, false, &kz);
      zl = kb_step_loop(kb, zl, width - w, kb_ix_const(w), 1, false, &qz);
      kb_push(kb, zl, kb_store_stmt(kb, P.arg, kb_ix_sum(kb, kb_ix_sum(kb, at, &kz, width), &qz, 1), zero(G, 1)));
    }
  }
}

// Packs role's (A: rows, B: columns) start + 0..n, k terms k0 + 0..klen, into P in
// panels of width (MR or NR); a last panel of fewer is padded with zeros. par: the
// loop over full panels is parallel (when it has the work for it).
static void pack(Gemm *G, LStmtList *into, int role, LIndex start, int64_t n, LIndex k0, int64_t klen, Panels P,
                 bool par) {
  KernelBuilder *kb = G->kb;
  if (role == 1 && G->cols >= 0) {
    pack_folded(G, into, start, n, k0, klen, P, par);
    return;
  }
  int full_w = role ? G->NR : G->MR, w_op = role_operand(G, role);
  int64_t full = n / full_w;
  int rest = (int)(n % full_w);
  // the source's unit-stride dim inside: k when it moves by 1, else the panel's (the
  // panel's first where k spans several dims: its last is a window's short row)
  bool p_unit = unit_along(G, w_op, w_op ? 1 : 0, false);
  bool k_inner = !p_unit || (G->nk == 1 && unit_along(G, w_op, 2, false));
  for (int part = 0; part < 2; part++) {
    int64_t np = part ? (rest ? 1 : 0) : full;
    int w = part ? rest : full_w, width = part && role ? tail_width(G, G->MR, rest) : full_w;
    if (!np)
      continue;
    LIndex p;
    LIndex first = kb_ix_plus(start, part ? full * full_w : 0);
    LStmtList *body =
        kb_step_loop(kb, into, np, kb_ix_const(0), 1, par && np > 1 && np * width * klen >= PARALLEL_WORK, &p);
    LIndex at = panel_at(G, &P, kb_ix_plus(p, part ? full : 0));
    // k inner where the source is unit-stride along it: a line of each row at a time (a
    // cache-blocked transpose; the rows' lines read and the panel's written stay in the
    // L1) where whole lines are, then the terms left; a row at a time, a panel's rows far
    // apart and each term a line of the panel written, was 1.1x slower on a @ b.t() at
    // 1024^2 (48 KB L1, 2 MB L2, C and LLVM)
    int64_t line = 64 / dtype_size(G->cd), kfull = klen / line * line;
    bool by_lines = k_inner && G->nk == 1 && w > 1 && kfull > 0 && !(role == 1 && width < G->V);
    // the operand one panel (x @ w.t()'s x at 64 tokens, a GELU computed at packing): its
    // lines in parallel (two panels, as Mamba's 80 columns of 48 and 32, stay serial: one
    // parallel loop each measured no faster)
    bool par_lines = par && n <= full_w && kfull / line > 1 && width * klen >= PARALLEL_WORK;
    for (int kpart = 0; kpart < (by_lines && kfull < klen ? 2 : 1); kpart++) {
      LIndex k[TD_MAX_DIMS], kl, q;
      LStmtList *in;
      if (by_lines) {  // kpart 0: the whole lines, 1: the terms left
        LIndex l0 = kb_ix_const(kfull);
        in = kpart ? body : kb_step_loop(kb, body, kfull / line, kb_ix_const(0), line, par_lines, &l0);
        in = kb_step_loop(kb, in, w, kb_ix_const(0), 1, false, &q);
        in = kb_step_loop(kb, in, kpart ? klen - kfull : line, l0, 1, false, &kl);
        k[0] = kb_ix_sum(kb, k0, &kl, 1);
      } else if (k_inner) {
        in = kb_step_loop(kb, body, w, kb_ix_const(0), 1, false, &q);
        in = k_loops(G, in, k0, klen, k, &kl);
      } else {
        in = k_loops(G, body, k0, klen, k, &kl);
        in = kb_step_loop(kb, in, w, kb_ix_const(0), 1, false, &q);
      }
      LIndex x = kb_ix_sum(kb, first, &p, width);
      kb_ix_addmul(kb, &x, &q, 1);
      LExpr *v = kb_cast(kb, role_value(G, role, x, k), G->cd);
      kb_push(kb, in, kb_store_stmt(kb, P.arg, panel_elem(G, role, at, kl, q, width, klen), v));
    }
    if (part && w < width) {  // the padding: zeros
      LIndex kz, qz;
      LStmtList *zl = kb_step_loop(kb, body, klen, kb_ix_const(0), 1, false, &kz);
      zl = kb_step_loop(kb, zl, width - w, kb_ix_const(w), 1, false, &qz);
      kb_push(kb, zl, kb_store_stmt(kb, P.arg, kb_ix_sum(kb, kb_ix_sum(kb, at, &kz, width), &qz, 1), zero(G, 1)));
    }
  }
}

// ---- tiles ----

// Drops the stores of l from `from` on that a later one of the list overwrites: the
// same argument, index and lanes, with only lets, sets and stores between that load
// nothing from that argument (a node stored, then `out += identity` and its ReLU into
// the same buffer: one store per element is left, so that the result may take the
// buffer of the operand it adds, ir/inplace.c).
static void drop_overwritten_stores(LStmtList *l, int from) {
  int n = from;
  for (int i = from; i < l->len; i++) {
    const LStmt *s = l->data[i];
    bool dead = false;
    for (int j = i + 1; s->kind == LS_STORE && !s->idx.dyn && !dead && j < l->len; j++) {
      const LStmt *t = l->data[j];
      if ((t->kind != LS_LET && t->kind != LS_SET && t->kind != LS_STORE) || lx_loads(t->val, s->buf) ||
          (t->kind == LS_STORE && lx_loads(t->idx.dyn, s->buf)))
        break;
      dead = t->kind == LS_STORE && t->buf == s->buf && lx_same_index(&t->idx, &s->idx) &&
             t->val->lanes == s->val->lanes;
    }
    if (!dead)
      l->data[n++] = l->data[i];
  }
  l->len = n;
}

// The matmul's result (local l) at output index o, stored with the epilogues; `own`
// (if any) already holds it there.
static void epilogue_at(Gemm *G, LStmtList *into, const LIndex *o, int l, const Node *own) {
  KernelBuilder *kb = G->kb;
  const Node *mm = G->mm;
  int from = into->len;
  kb_local_at(kb, mm, l, o);
  if (mm->mode == NM_STORED && mm != own)
    kb_store_node(kb, into, mm, o, kb_local_ref(kb, l));
  kb_store_epilogues(kb, into, G->ns, o);
  drop_overwritten_stores(into, from);
}

// Whether the sums go through T rather than wait in own's buffer: own is an epilogue's
// that a store epilogue (a residual add, out += identity) updates, so that no call of
// the micro-kernel writes own's buffer and the result may take the buffer of the
// operand it adds where that one is read for the last time here (ir/inplace.c, ir/share.c:
// a bottleneck's output over its identity). Only where k is one block anyway.
static bool residual_through_t(const Gemm *G, int64_t kc_max) {
  if (!G->own || G->own == G->mm || G->K > kc_max)
    return false;
  for (int i = 1; i < G->ns->len; i++)
    if (G->ns->data[i]->op == OP_STORE && G->ns->data[i]->srcs[0]->buf == G->own->out->buf)
      return true;
  return false;
}

// own's buffer (its arg: read and written) and the index of output o in it.
static int own_arg(Gemm *G) { return kb_arg(G->kb, G->kb->buf_of[G->own->out->buf->id], true, true); }

static LIndex own_at(Gemm *G, const LIndex *o) { return kb_view_index(G->kb, &G->own->out->view, o); }

static int scratch_arg(Gemm *G) { return kb_arg(G->kb, G->sbuf, true, true); }

// One tile: rows x + 0..mr, columns y + 0..nr, kc terms from A at a and B at b; load
// (i64) says whether the sums so far are in own's buffer, last (bool) whether this is
// the last k block (the epilogues run). The tile's rows are T's from row `shift` on,
// its columns from `cshift` on (an operand read in place: the last rows' or columns'
// tile starts early, so that all it reads exists); bin: B's rows are read in place.
static void tile(Gemm *G, LStmtList *into, LIndex x, int mr, LIndex y, int nr, Ptr a, Ptr b, bool bin, int64_t kc,
                 LExpr *load, LExpr *last, int shift, int cshift) {
  KernelBuilder *kb = G->kb;
  Ctx *cx = kb->cx;
  LIndex r, c, o[TD_MAX_DIMS];
  LStmtList *in;
  int nrf = nr == G->NR ? G->NR : tail_width(G, G->MR, nr);
  if (G->own && !G->trans && mr == G->MR && nr == nrf) {  // straight into own's buffer
    tile_out(G, x, y, o);
    micro_call(G, into, a, b, bin, (Ptr){own_arg(G), own_at(G, o)}, nrf, kc, G->ldc, load);
    LStmtList *fin = G->ns->len > 1 ? when(G, into, last, true) : NULL;
    if (!fin)
      return;
    in = kb_step_loop(kb, fin, mr, x, 1, false, &r);
    in = kb_step_loop(kb, in, nr, y, 1, false, &c);
    tile_out(G, r, c, o);
    epilogue_at(G, in, o, kb_let_local(kb, in, lx_load(cx, G->cd, own_arg(G), own_at(G, o))), G->own);
    return;
  }
  // through T (at s_t, rows NR apart): the sums so far copied in, the micro-kernel, the
  // sums copied out (or the epilogues)
  int sa = scratch_arg(G);
  LIndex t0 = kb_ix_const(G->s_t), tr = kb_ix_const(G->s_t + (int64_t)shift * G->NR + cshift);
  LExpr *resumes = load->kind == LX_CONST ? kb_iconst(kb, DT_BOOL, load->i != 0)
                                          : lx_binary(cx, OP_NE, DT_BOOL, load, kb_iconst(kb, DT_I64, 0));
  LStmtList *resume = G->own ? when(G, into, resumes, true) : NULL;
  if (resume) {
    in = tile_loops(G, resume, mr, nr, &r, &c);
    tile_out(G, kb_ix_sum(kb, x, &r, 1), kb_ix_sum(kb, y, &c, 1), o);
    kb_push(kb, in, kb_store_stmt(kb, sa, kb_ix_sum(kb, kb_ix_sum(kb, tr, &r, G->NR), &c, 1),
                                  lx_load(cx, G->cd, own_arg(G), own_at(G, o))));
  }
  micro_call(G, into, a, b, bin, (Ptr){sa, t0}, nrf, kc, G->NR, G->own ? load : kb_iconst(kb, DT_I64, 0));
  for (int fin = 0; fin < 2; fin++) {
    LStmtList *at = when(G, into, last, fin);
    if (!at)
      continue;
    in = tile_loops(G, at, mr, nr, &r, &c);
    tile_out(G, kb_ix_sum(kb, x, &r, 1), kb_ix_sum(kb, y, &c, 1), o);
    LExpr *v = lx_load(cx, G->cd, sa, kb_ix_sum(kb, kb_ix_sum(kb, tr, &r, G->NR), &c, 1));
    if (fin)
      epilogue_at(G, in, o, kb_let_local(kb, in, v), NULL);
    else  // a k block before the last: the sums wait in own's buffer
      kb_push(kb, in, kb_store_stmt(kb, own_arg(G), own_at(G, o), v));
  }
}

// Transposed, a group of np full row panels from row x (panel p of A) goes through T
// together, so that each output row the copies write gets np * MR consecutive
// elements, not MR: those rows lie a row of the output apart, which in a large output
// is a multiple of 4 KiB, and MR elements each would cost a line of L1 per store.
static void tile_group(Gemm *G, LStmtList *into, LIndex x, LIndex p, int64_t np, LIndex y, int nr, const Panels *A,
                       LIndex k0, Ptr b, int64_t kc, LExpr *load, LExpr *last) {
  KernelBuilder *kb = G->kb;
  Ctx *cx = kb->cx;
  int sa = scratch_arg(G);
  int64_t rows = np * G->MR;
  LIndex t0 = kb_ix_const(G->s_t), r, c, pp, o[TD_MAX_DIMS];
  LStmtList *in;
  LExpr *resumes = load->kind == LX_CONST ? kb_iconst(kb, DT_BOOL, load->i != 0)
                                          : lx_binary(cx, OP_NE, DT_BOOL, load, kb_iconst(kb, DT_I64, 0));
  LStmtList *resume = G->own ? when(G, into, resumes, true) : NULL;
  if (resume) {
    in = kb_step_loop(kb, resume, nr, kb_ix_const(0), 1, false, &c);
    in = kb_step_loop(kb, in, rows, kb_ix_const(0), 1, false, &r);
    tile_out(G, kb_ix_sum(kb, x, &r, 1), kb_ix_sum(kb, y, &c, 1), o);
    kb_push(kb, in, kb_store_stmt(kb, sa, kb_ix_sum(kb, kb_ix_sum(kb, t0, &r, G->NR), &c, 1),
                                  lx_load(cx, G->cd, own_arg(G), own_at(G, o))));
  }
  in = kb_step_loop(kb, into, np, kb_ix_const(0), 1, false, &pp);
  Ptr a = G->adirect ? direct_at(G, kb_ix_sum(kb, x, &pp, G->MR), k0)
                     : (Ptr){A->arg, panel_at(G, A, kb_ix_sum(kb, p, &pp, 1))};
  micro_call(G, in, a, b, false, (Ptr){sa, kb_ix_sum(kb, t0, &pp, (int64_t)G->MR * G->NR)}, G->NR, kc, G->NR,
             G->own ? load : kb_iconst(kb, DT_I64, 0));
  for (int fin = 0; fin < 2; fin++) {
    LStmtList *at = when(G, into, last, fin);
    if (!at)
      continue;
    // the epilogues read the sums from U (T transposed: an output row's sums
    // consecutive), so that their loop along the row vectorizes with plain loads: gcc 12
    // leaves a loop with T's strided load scalar (gelu(x @ w.t() + b): erf scalar)
    bool tr = fin && G->s_u >= 0;
    LIndex u0 = kb_ix_const(G->s_u);
    if (tr) {
      in = kb_step_loop(kb, at, rows, kb_ix_const(0), 1, false, &r);
      in = kb_step_loop(kb, in, nr, kb_ix_const(0), 1, false, &c);
      kb_push(kb, in, kb_store_stmt(kb, sa, kb_ix_sum(kb, kb_ix_sum(kb, u0, &c, rows), &r, 1),
                                    lx_load(cx, G->cd, sa, kb_ix_sum(kb, kb_ix_sum(kb, t0, &r, G->NR), &c, 1))));
    }
    in = kb_step_loop(kb, at, nr, kb_ix_const(0), 1, false, &c);
    in = kb_step_loop(kb, in, rows, kb_ix_const(0), 1, false, &r);
    tile_out(G, kb_ix_sum(kb, x, &r, 1), kb_ix_sum(kb, y, &c, 1), o);
    LExpr *v = tr ? lx_load(cx, G->cd, sa, kb_ix_sum(kb, kb_ix_sum(kb, u0, &c, rows), &r, 1))
                  : lx_load(cx, G->cd, sa, kb_ix_sum(kb, kb_ix_sum(kb, t0, &r, G->NR), &c, 1));
    if (fin)
      epilogue_at(G, in, o, kb_let_local(kb, in, v), NULL);
    else
      kb_push(kb, in, kb_store_stmt(kb, own_arg(G), own_at(G, o), v));
  }
}

// The tiles of rows x0 + 0..nrows by columns y0 + 0..ncols, kc terms from term k0 of
// A (row panel p: panel_at(A, p), or A's rows in place) and B (column panel q); rows
// outer (A's panel stays in L1), or columns outer (cols_outer: B's does).
static void tiles(Gemm *G, LStmtList *into, LIndex x0, int64_t nrows, LIndex y0, int64_t ncols, const Panels *A,
                  const Panels *B, LIndex k0, int64_t kc, LExpr *load, LExpr *last, bool cols_outer) {
  KernelBuilder *kb = G->kb;
  int64_t fr = nrows / G->MR, fc = ncols / G->NR;
  int er = (int)(nrows % G->MR), ec = (int)(ncols % G->NR);
  for (int rpart = 0; rpart < 2; rpart++) {
    int64_t nr_ = rpart ? (er ? 1 : 0) : fr;
    for (int cpart = 0; cpart < 2; cpart++) {
      int64_t nc_ = cpart ? (ec ? 1 : 0) : fc;
      if (!nr_ || !nc_)
        continue;
      if (G->trans && !rpart) {  // groups of full row panels, columns outer
        LIndex q, g;
        LStmtList *in = kb_step_loop(kb, into, nc_, kb_ix_const(cpart ? fc : 0), 1, false, &q);
        Ptr b = {B->arg, panel_at(G, B, q)};
        LIndex y = kb_ix_sum(kb, y0, &q, G->NR);
        int64_t ng = fr / G->tg, rest = fr % G->tg;
        if (ng) {
          LStmtList *gl = kb_step_loop(kb, in, ng, kb_ix_const(0), G->tg, false, &g);
          tile_group(G, gl, kb_ix_sum(kb, x0, &g, G->MR), g, G->tg, y, cpart ? ec : G->NR, A, k0, b, kc, load, last);
        }
        if (rest)
          tile_group(G, in, kb_ix_plus(x0, ng * G->tg * G->MR), kb_ix_const(ng * G->tg), rest, y, cpart ? ec : G->NR, A,
                     k0, b, kc, load, last);
        continue;
      }
      LIndex p, q;
      LStmtList *in;
      if (cols_outer) {
        in = kb_step_loop(kb, into, nc_, kb_ix_const(cpart ? fc : 0), 1, false, &q);
        in = kb_step_loop(kb, in, nr_, kb_ix_const(rpart ? fr : 0), 1, false, &p);
      } else {
        in = kb_step_loop(kb, into, nr_, kb_ix_const(rpart ? fr : 0), 1, false, &p);
        in = kb_step_loop(kb, in, nc_, kb_ix_const(cpart ? fc : 0), 1, false, &q);
      }
      LIndex x = kb_ix_sum(kb, x0, &p, G->MR), y = kb_ix_sum(kb, y0, &q, G->NR);
      int shift = G->adirect && rpart ? G->MR - er : 0;  // (rows read in place all exist)
      int cshift = G->bdirect && cpart ? G->NR - ec : 0;
      Ptr a = G->adirect ? direct_at(G, kb_ix_plus(x, -shift), k0) : (Ptr){A->arg, panel_at(G, A, p)};
      Ptr b = G->bdirect ? bdirect_at(G, kb_ix_plus(y, -cshift), k0) : (Ptr){B->arg, panel_at(G, B, q)};
      tile(G, in, x, rpart ? er : G->MR, y, cpart ? ec : G->NR, a, b, G->bdirect, kc, load, last, shift, cshift);
    }
  }
}

// ---- the k blocks ----
// What a k block is: its first term (k0), its length, and (i64 / bool expressions,
// constants where the block loop decides statically) whether the sums so far are to
// be loaded and whether it is the last.
typedef struct KBlock {
  LIndex k0;
  int64_t kc;
  LExpr *load, *last;
} KBlock;

// The k blocks: the loop over the full ones (or none, for one), then the rest; fills
// blk[0..n) (n: 1 or 2) and the list each block's statements go into.
static int k_blocks(Gemm *G, LStmtList *into, KBlock *blk, LStmtList **lists) {
  KernelBuilder *kb = G->kb;
  int64_t nfull = G->K / G->kc, rest = G->K % G->kc;
  LExpr *yes = kb_iconst(kb, DT_BOOL, 1), *no = kb_iconst(kb, DT_BOOL, 0);
  int n = 0;
  if (nfull) {
    LIndex kb0;
    lists[n] = kb_step_loop(kb, into, nfull, kb_ix_const(0), G->kc, false, &kb0);
    LExpr *at = kb_ix_expr(kb, &kb0);
    LExpr *at_last = lx_binary(kb->cx, OP_EQ, DT_BOOL, at, kb_iconst(kb, DT_I64, G->K - G->kc));
    blk[n++] = (KBlock){kb0, G->kc, nfull == 1 ? kb_iconst(kb, DT_I64, 0) : at,
                        rest ? no : nfull == 1 ? yes : at_last};
  }
  if (rest) {
    lists[n] = into;
    blk[n++] = (KBlock){kb_ix_const(nfull * G->kc), rest, kb_iconst(kb, DT_I64, nfull ? 1 : 0), yes};
  }
  return n;
}

// ---- the three ways to run the blocks ----

// One k block of columns y0 + 0..ncols and all rows: B's block packed into scratch,
// then A's (BATCH), or A's block already packed (COLS: Ashared), or A read in place;
// then the tiles.
static void cols_task(Gemm *G, LStmtList *into, LIndex y0, int64_t ncols, const KBlock *blk, const Panels *Ashared) {
  int sa = scratch_arg(G);
  Panels B = {sa, kb_ix_const(G->s_b), blk->kc * G->NR};
  if (!G->bdirect)
    pack(G, into, 1, y0, ncols, blk->k0, blk->kc, B, false);
  Panels A = {sa, kb_ix_const(G->s_a), blk->kc * G->MR};
  if (Ashared)
    A = *Ashared;
  else if (!G->adirect)
    pack(G, into, 0, kb_ix_const(0), G->R, blk->k0, blk->kc, A, false);
  tiles(G, into, kb_ix_const(0), G->R, y0, ncols, &A, &B, blk->k0, blk->kc, blk->load, blk->last, false);
}

// Column blocks of nc from y0 + 0..ncols of the k block blk (NULL: each block walks
// all the k blocks itself, BATCH); the block loop parallel with par.
static void col_group(Gemm *G, LStmtList *into, LIndex y0, int64_t ncols, const KBlock *blk, const Panels *Ashared) {
  if (blk) {
    cols_task(G, into, y0, ncols, blk, Ashared);
    return;
  }
  KBlock kbs[2];
  LStmtList *lists[2];
  int nb = k_blocks(G, into, kbs, lists);
  for (int b = 0; b < nb; b++)
    cols_task(G, lists[b], y0, ncols, &kbs[b], Ashared);
}

// Blocks of `size` from 0..n (n / size full ones, then the rest): a loop over the full
// ones, then the rest's statements; or, where the loop is parallel and the full blocks
// are odd in number (an even number of threads leaves one idle for the last of them),
// one parallel loop over all of them, the rest its last iteration (under a test), so
// that the idle thread takes it. (With an even number, the rest in the loop would be
// dealt with a full block in the runtime's chunks: slower at 14 x 14, 14 blocks of 18
// rows and 4 rows left.) Sets lists[0..2) (the full
// blocks' and the rest's, NULL where there is none) and *y0 (the full blocks' start).
static void block_loop(Gemm *G, LStmtList *into, int64_t n, int64_t size, bool par, LStmtList **lists, LIndex *y0) {
  KernelBuilder *kb = G->kb;
  int64_t full = n / size, rest = n % size;
  lists[0] = lists[1] = NULL;
  if (par && full % 2 && rest) {
    LStmtList *in = kb_step_loop(kb, into, full + 1, kb_ix_const(0), size, true, y0);
    LExpr *is_full = lx_binary(kb->cx, OP_LT, DT_BOOL, lx_var(kb->cx, y0->var[0]), kb_iconst(kb, DT_I64, full));
    lists[0] = when(G, in, is_full, true);
    lists[1] = when(G, in, is_full, false);
    return;
  }
  if (full)
    lists[0] = kb_step_loop(kb, into, full, kb_ix_const(0), size, par && full > 1, y0);
  if (rest)
    lists[1] = into;
}

static void col_blocks(Gemm *G, LStmtList *into, const KBlock *blk, const Panels *Ashared, bool par) {
  LStmtList *lists[2];
  LIndex y0;
  block_loop(G, into, G->C, G->nc, par, lists, &y0);
  if (lists[0])
    col_group(G, lists[0], y0, G->nc, blk, Ashared);
  if (lists[1])
    col_group(G, lists[1], kb_ix_const(G->C / G->nc * G->nc), G->C % G->nc, blk, Ashared);
}

// COLS: per k block, A's block packed into a temp (in parallel; once, before the batch
// loops, when it is all of K and reads no batch: packed_a; not at all when the
// micro-kernel reads A in place), then the column blocks in parallel, each packing
// its block of B into scratch.
static void col_mode(Gemm *G, LStmtList *into, bool packed_a) {
  KernelBuilder *kb = G->kb;
  KBlock blk[2];
  LStmtList *lists[2];
  int nb = k_blocks(G, into, blk, lists);
  for (int b = 0; b < nb; b++) {
    Panels A = {G->ap >= 0 ? kb_arg(kb, G->ap, true, true) : -1, kb_ix_const(0), blk[b].kc * G->MR};
    if (!packed_a && !G->adirect)
      pack(G, lists[b], 0, kb_ix_const(0), G->R, blk[b].k0, blk[b].kc, A, G->par);
    col_blocks(G, lists[b], &blk[b], G->adirect ? NULL : &A, G->par);
  }
}

// ROWS, a contraction's rows left over from the row blocks (fewer than MR at 14 x 14:
// 256 rows in blocks of 18 leave 4) are not one thread's while the other waits: their
// tiles are a parallel loop over B's column panels (the last, narrow one its last
// iteration or after it: block_loop). Only with A read in place (a block of A packed
// would be in one thread's scratch) and B packed in the shared temp.
static bool rest_by_cols(const Gemm *G, int64_t ncols) {
  return G->par && G->mm->attr.nk && G->adirect && !G->bdirect && !G->trans && ncols > G->NR;
}

static void rest_rows(Gemm *G, LStmtList *into, LIndex x0, int64_t rows, LIndex y0, int64_t ncols, const Panels *A,
                      const Panels *B, const KBlock *blk) {
  KernelBuilder *kb = G->kb;
  LStmtList *cl[2];
  LIndex yq;
  block_loop(G, into, ncols, G->NR, true, cl, &yq);
  int64_t full = ncols / G->NR;
  for (int part = 0; part < 2; part++) {
    if (!cl[part])
      continue;
    Panels Bq = *B;  // (B's panel of column yq: kc terms of NR columns each, yq / NR panels on)
    Bq.at = part ? kb_ix_plus(B->at, full * B->pstride) : kb_ix_sum(kb, B->at, &yq, blk->kc);
    LIndex y = part ? kb_ix_plus(y0, full * G->NR) : kb_ix_sum(kb, y0, &yq, 1);
    tiles(G, cl[part], x0, rows, y, part ? ncols % G->NR : G->NR, A, &Bq, blk->k0, blk->kc, blk->load, blk->last,
          true);
  }
}

// ROWS: per column block and k block, B's block packed into a temp (in parallel), then
// the row blocks of mc in parallel, each packing its A block into scratch (or reading
// A in place).
static void rows_block(Gemm *G, LStmtList *into, LIndex y0, int64_t ncols) {
  KernelBuilder *kb = G->kb;
  KBlock blk[2];
  LStmtList *lists[2];
  int nb = k_blocks(G, into, blk, lists);
  for (int b = 0; b < nb; b++) {
    Panels B = {G->bp >= 0 ? kb_arg(kb, G->bp, true, true) : -1, kb_ix_const(0), blk[b].kc * G->NR};
    if (!G->bdirect)
      pack(G, lists[b], 1, y0, ncols, blk[b].k0, blk[b].kc, B, G->par);
    LStmtList *parts[2];
    LIndex xf;
    block_loop(G, lists[b], G->R, G->mc, G->par, parts, &xf);
    for (int part = 0; part < 2; part++) {
      int64_t rows = part ? G->R % G->mc : G->mc;
      if (!parts[part])
        continue;
      LIndex x0 = part ? kb_ix_const(G->R / G->mc * G->mc) : xf;
      LStmtList *in = parts[part];
      Panels A = {scratch_arg(G), kb_ix_const(G->s_a), blk[b].kc * G->MR};
      if (!G->adirect)
        pack(G, in, 0, x0, rows, blk[b].k0, blk[b].kc, A, false);
      if (part && rest_by_cols(G, ncols))
        rest_rows(G, in, x0, rows, y0, ncols, &A, &B, &blk[b]);
      else
        tiles(G, in, x0, rows, y0, ncols, &A, &B, blk[b].k0, blk[b].kc, blk[b].load, blk[b].last, true);
    }
  }
}

static void row_mode(Gemm *G, LStmtList *into) {
  int64_t full = G->C / G->nc, rest = G->C % G->nc;
  if (full) {
    LIndex y0;
    rows_block(G, kb_step_loop(G->kb, into, full, kb_ix_const(0), G->nc, false, &y0), y0, G->nc);
  }
  if (rest)
    rows_block(G, into, kb_ix_const(full * G->nc), rest);
}

// ---- DOT: lanes along k ----

// Sum of the lanes of vector local l, in a fixed tree.
static LExpr *lane_sum(Gemm *G, int l, int lo, int n) {
  Ctx *cx = G->kb->cx;
  if (n == 1)
    return lx_lane(cx, lx_local_v(cx, G->cd, G->V, l), lo);
  return kb_arith(G->kb, OP_ADD, G->cd, lane_sum(G, l, lo, n / 2), lane_sum(G, l, lo + n / 2, n - n / 2));
}

enum { DOT_IB = 4, DOT_JB = 8 };

static void dot_tile(Gemm *G, LStmtList *into, LIndex i0, int ib, LIndex j0, int jb) {
  KernelBuilder *kb = G->kb;
  Ctx *cx = kb->cx;
  int V = G->V, acc[DOT_IB][DOT_JB];
  for (int r = 0; r < ib; r++)
    for (int c = 0; c < jb; c++) {
      acc[r][c] = kb_new_local(kb, G->cd);
      kb_push(G->kb, into, kb_let(kb, acc[r][c], zero(G, V)));
    }
  LIndex kv;
  LStmtList *in = kb_step_loop(G->kb, into, G->K / V, kb_ix_const(0), V, false, &kv);
  int xs[DOT_IB], ws[DOT_JB];
  for (int r = 0; r < ib; r++) {
    xs[r] = kb_new_local(kb, G->cd);
    kb_push(G->kb, in, kb_let(kb, xs[r], operand_vec(G, 0, kb_ix_plus(i0, r), j0, &kv, V)));
  }
  for (int c = 0; c < jb; c++) {
    ws[c] = kb_new_local(kb, G->cd);
    kb_push(G->kb, in, kb_let(kb, ws[c], operand_vec(G, 1, i0, kb_ix_plus(j0, c), &kv, V)));
  }
  for (int r = 0; r < ib; r++)
    for (int c = 0; c < jb; c++)
      kb_push(G->kb, in,
              kb_set(kb, acc[r][c],
                     mul_add(G, lx_local_v(cx, G->cd, V, xs[r]), lx_local_v(cx, G->cd, V, ws[c]),
                             lx_local_v(cx, G->cd, V, acc[r][c]))));
  for (int r = 0; r < ib; r++)
    for (int c = 0; c < jb; c++) {
      int s = kb_new_local(kb, G->cd);
      kb_push(G->kb, into, kb_let(kb, s, lane_sum(G, acc[r][c], 0, V)));
      if (G->K % V) {
        LIndex k;
        LStmtList *tail = kb_step_loop(G->kb, into, G->K % V, kb_ix_const(G->K - G->K % V), 1, false, &k);
        LIndex i = kb_ix_plus(i0, r), j = kb_ix_plus(j0, c);
        LExpr *x = operand_cd(G, 0, i, j, &k), *y = operand_cd(G, 1, i, j, &k);
        kb_push(G->kb, tail, kb_set(kb, s, mul_add(G, x, y, kb_local_ref(kb, s))));
      }
      LIndex o[TD_MAX_DIMS];
      out_index(G, kb_ix_plus(i0, r), kb_ix_plus(j0, c), o);
      epilogue_at(G, into, o, s, NULL);
    }
}

static void dot_rows(Gemm *G, LStmtList *into, LIndex j0, int jb) {
  int ib = G->M < DOT_IB ? (int)G->M : jb > 4 ? 1 : DOT_IB;
  int64_t full = G->M / ib;
  if (full) {
    LIndex i0;
    dot_tile(G, kb_step_loop(G->kb, into, full, kb_ix_const(0), ib, false, &i0), i0, ib, j0, jb);
  }
  if (G->M % ib)
    dot_tile(G, into, kb_ix_const(full * ib), (int)(G->M % ib), j0, jb);
}

static void build_dot(Gemm *G, LStmtList *into, bool par) {
  int jb = G->M == 1 ? DOT_JB : 4;
  int64_t full = G->N / jb;
  if (full) {
    LIndex j0;
    dot_rows(G, kb_step_loop(G->kb, into, full, kb_ix_const(0), jb, par, &j0), j0, jb);
  }
  if (G->N % jb)
    dot_rows(G, into, kb_ix_const(full * jb), (int)(G->N % jb));
}

// ---- DIRECT: few rows against B read in place ----
// (B's columns are unit-stride, or stride 2 (a strided window view): a vector of
// columns j + 0..V is then two loads, [2j, 2j + V) and [2j + V - 1, 2j + 2V - 1), whose
// even and odd lanes it takes: no element past the last column's is read.)

// B's vector of V columns from j at term k, its columns `bs` (1 or 2) apart.
static LExpr *direct_bvec(Gemm *G, LStmtList *into, LIndex i, LIndex j, const LIndex *k, int bs) {
  KernelBuilder *kb = G->kb;
  Ctx *cx = kb->cx;
  int V = G->V;
  if (bs == 1)
    return operand_vec(G, 1, i, j, k, V);
  LExpr *e = operand(G, 1, i, j, k);
  TD_ASSERT(e->kind == LX_LOAD && e->dt == G->cd && !e->idx.dyn && bs == 2);
  int lo = kb_let_local(kb, into, lx_vload(cx, e->dt, V, e->buf, e->idx));
  int hi = kb_let_local(kb, into, lx_vload(cx, e->dt, V, e->buf, kb_ix_plus(e->idx, V - 1)));
  int sel[64];
  TD_ASSERT(V <= 64);
  for (int l = 0; l < V; l++)
    sel[l] = l < V / 2 ? 2 * l : V + 2 * (l - V / 2) + 1;
  return lx_shuffle(cx, lx_local_v(cx, e->dt, V, lo), lx_local_v(cx, e->dt, V, hi), sel, V);
}
// A contraction with few rows (a depthwise convolution: one output channel per group;
// a convolution of few output channels) whose B is unit-stride along the columns (a
// stride-1 window view): no packing. A block of R rows by U vectors of columns keeps
// R x U vector accumulators, and each term k adds splat(A(r, k)) * B(k, j0 + 0..U*V)
// read in place. The sums go through T (scratch) to the epilogues (without any: into
// the result, whose columns are unit-stride there: acc_owner). Columns past the
// last whole block: one block of the whole vectors left, then one vector ending at the
// last column (it overlaps columns already done: only its new ones go to the
// epilogues). Batches (groups, output rows) are the parallel loop.

// Rows i0 + 0..R by nvec vectors of columns from j0; the epilogues of columns skip.. only.
static void direct_block(Gemm *G, LStmtList *into, LIndex i0, int R, LIndex j0, int nvec, int skip) {
  KernelBuilder *kb = G->kb;
  Ctx *cx = kb->cx;
  int V = G->V, acc[DIRECT_MAX_R][DIRECT_MAX_U];
  for (int r = 0; r < R; r++)
    for (int u = 0; u < nvec; u++) {
      acc[r][u] = kb_new_local(kb, G->cd);
      kb_push(kb, into, kb_let(kb, acc[r][u], zero(G, V)));
    }
  LIndex k[TD_MAX_DIMS], lin;
  LStmtList *in = k_loops(G, into, kb_ix_const(0), G->K, k, &lin);
  int bv[DIRECT_MAX_U];
  for (int u = 0; u < nvec; u++) {
    LExpr *b = direct_bvec(G, in, i0, kb_ix_plus(j0, (int64_t)u * V), k, (int)stride_along(G, 1, 1, true));
    bv[u] = kb_new_local(kb, G->cd);
    kb_push(kb, in, kb_let(kb, bv[u], b));
  }
  for (int r = 0; r < R; r++) {
    LExpr *a = lx_splat(cx, V, operand_cd(G, 0, kb_ix_plus(i0, r), j0, k));
    for (int u = 0; u < nvec; u++)
      kb_push(kb, in,
              kb_set(kb, acc[r][u], mul_add(G, a, lx_local_v(cx, G->cd, V, bv[u]), lx_local_v(cx, G->cd, V, acc[r][u]))));
  }
  int w = nvec * V;
  LIndex rr, c, o[TD_MAX_DIMS];
  if (G->own && G->ns->len == 1) {  // no epilogue: the sums straight into the result (an overlap
    for (int r = 0; r < R; r++)     // stores the same sums again)
      for (int u = 0; u < nvec; u++) {
        out_index(G, kb_ix_plus(i0, r), kb_ix_plus(j0, (int64_t)u * V), o);
        kb_push(kb, into, kb_store_stmt(kb, own_arg(G), own_at(G, o), lx_local_v(cx, G->cd, V, acc[r][u])));
      }
    return;
  }
  int sa = scratch_arg(G);
  for (int r = 0; r < R; r++)
    for (int u = 0; u < nvec; u++)
      kb_push(kb, into,
              kb_store_stmt(kb, sa, kb_ix_const((int64_t)r * w + u * V), lx_local_v(cx, G->cd, V, acc[r][u])));
  LStmtList *el = kb_step_loop(kb, into, R, kb_ix_const(0), 1, false, &rr);
  el = kb_step_loop(kb, el, w - skip, kb_ix_const(skip), 1, false, &c);
  out_index(G, kb_ix_sum(kb, i0, &rr, 1), kb_ix_sum(kb, j0, &c, 1), o);
  LExpr *v = lx_load(cx, G->cd, sa, kb_ix_sum(kb, c, &rr, w));
  epilogue_at(G, el, o, kb_let_local(kb, el, v), NULL);
}

// Rows i0 + 0..R, every column.
static void direct_rows(Gemm *G, LStmtList *into, LIndex i0, int R, int U, bool par) {
  KernelBuilder *kb = G->kb;
  int64_t w = (int64_t)U * G->V, full = G->N / w, nv = G->N % w / G->V, done = G->N - G->N % G->V;
  LIndex j0;
  if (full)
    direct_block(G, kb_step_loop(kb, into, full, kb_ix_const(0), w, par && full > 1, &j0), i0, R, j0, U, 0);
  if (nv)
    direct_block(G, into, i0, R, kb_ix_const(full * w), (int)nv, 0);
  if (done < G->N)
    direct_block(G, into, i0, R, kb_ix_const(G->N - G->V), 1, (int)(G->V - (G->N - done)));
}

static bool direct_fits(Gemm *G) {
  int64_t bs = G->mm->attr.nk && G->nk > 1 ? stride_along(G, 1, 1, true) : 0;
  return (bs == 1 || bs == 2) && G->M <= DIRECT_MAX_M && G->jd >= 0 && G->N >= G->V;
}

static void build_direct(Gemm *G, LStmtList *into, bool par) {
  KernelBuilder *kb = G->kb;
  int R = G->M < DIRECT_MAX_R ? (int)G->M : DIRECT_MAX_R, U = (kb->cpu->nregs - 1) / R - 1;
  U = U > DIRECT_MAX_U ? DIRECT_MAX_U : U < 1 ? 1 : U;
  G->sbuf = kb_new_temp(kb, G->cd, (int64_t)R * U * G->V, "scratch");
  kb->p->bufs.data[G->sbuf].scratch = true;
  int64_t full = G->M / R, rest = G->M % R;
  LIndex i0;
  if (full)
    direct_rows(G, kb_step_loop(kb, into, full, kb_ix_const(0), R, false, &i0), i0, R, U, par);
  if (rest)
    direct_rows(G, into, kb_ix_const(full * R), (int)rest, U, par);
}

// ---- folding the batch into the rows ----
// x @ w.t() with x [B, T, C] is one GEMM of B*T rows when w reads no batch dim and
// every tensor indexed by the output's (batch..., row) dims steps through them as one
// flat dim: then the row index alone, running over B*T, addresses all of them (the
// batch dims' indices stay 0). Checked on every load and store the kernel would make,
// built over probe indices. An epilogue that computes with the index itself (tril and
// triu's mask, arange, eye: an LX_VAR of a batch or row probe) would see the folded
// row (batch * M + i) and batch 0, not the true index: such a kernel is not folded.

// Whether every load in e (and the store index at, if not NULL) walks the chain of
// dims dims[0..n) (outermost first, the last the row dim) as one flat dim: the
// coefficient of each dim's probe is the next one's times the next dim's size; and
// (flat_loads) whether e reads none of those dims' indices as a value.
static bool flat_index(const Gemm *G, const LIndex *at, const int *dims, int n) {
  if (at->dyn)
    return false;
  int64_t c[TD_MAX_DIMS + 1] = {0};
  for (int t = 0; t < at->nterms; t++)
    for (int p = 0; p < n; p++)
      if (at->var[t] == PROBE_VAR + dims[p])
        c[p] = at->coef[t];
  for (int p = 0; p + 1 < n; p++)
    if (c[p] != c[p + 1] * G->mm->out->view.shape[dims[p + 1]])
      return false;
  return true;
}

static bool flat_loads(const Gemm *G, const LExpr *e, const int *dims, int n) {
  if (!e)
    return true;
  if (e->kind == LX_LOAD && !flat_index(G, &e->idx, dims, n))
    return false;
  for (int p = 0; p < n && e->kind == LX_VAR; p++)
    if (e->var == PROBE_VAR + dims[p])
      return false;  // the index as a value: folded, it would be the wrong one
  return flat_loads(G, e->a, dims, n) && flat_loads(G, e->b, dims, n) && flat_loads(G, e->c, dims, n);
}

static bool flat_kernel(Gemm *G, const int *dims, int n, int which);

static bool reads_dims(Gemm *G, int which, const int *dims, int n);

// The batch dims that fold into the rows: the longest run of the last ones (those
// before the row dim) that the kernel walks with it as one flat dim and B reads none
// of; their sizes multiply M. All of them make one GEMM of nbatch * M rows; a run of
// the inner ones, as a permuted NCHW input's H next to its W (a ConvNeXt block's
// x.permute(0, 2, 3, 1) @ w.t(): rows (n, h, w) with n's stride not h's times H),
// batches of H * W rows instead of W (14 rows a GEMM at 14 x 14: tiles of 32 rows
// less than half full).
static void fold_rows(Gemm *G) {
  if (G->nbat == 0 || G->rd < 0)
    return;
  int nb = G->nbat;
  while (nb > 0 && G->bat[nb - 1] > G->rd)
    nb--;  // (a batch dim after the row dim stays a batch)
  for (int start = 0; start < nb; start++) {
    int dims[TD_MAX_DIMS + 1], n = 0;
    for (int b = start; b < nb; b++)
      dims[n++] = G->bat[b];
    dims[n++] = G->rd;
    if (reads_dims(G, 1, dims, n - 1) || !flat_kernel(G, dims, n, 0))
      continue;
    for (int b = start; b < nb; b++)
      G->M *= G->mm->out->view.shape[G->bat[b]], G->nbatch /= G->mm->out->view.shape[G->bat[b]];
    memmove(G->bat + start, G->bat + nb, sizeof(int) * (size_t)(G->nbat - nb));
    G->nbat -= nb - start;
    return;
  }
}

// Whether the loads and stores of the kernel walk dims[0..n) as one flat dim: those of
// the epilogues, and those of operand `which` (0, 1) unless it is -1.
static bool flat_kernel(Gemm *G, const int *dims, int n, int which) {
  KernelBuilder *kb = G->kb;
  LIndex o[TD_MAX_DIMS];
  for (int d = 0; d < G->on; d++)
    o[d] = kb_ix_var(PROBE_VAR + d);
  memcpy(G->o, o, sizeof o);
  LIndex row = G->rd >= 0 ? o[G->rd] : kb_ix_const(0), j = G->jd >= 0 ? o[G->jd] : kb_ix_const(0), k[TD_MAX_DIMS];
  k_probe(G, k);
  bool ok = which < 0 || flat_loads(G, operand_as_is(G, which, row, j, k), dims, n);
  // the epilogues read the matmul's value at o (a placeholder local here)
  int placeholder = kb_new_local(kb, G->cd);
  kb_local_at(kb, G->mm, placeholder, o);
  for (int i = 0; i < G->ns->len && ok; i++) {
    const Node *e = G->ns->data[i];
    if (e->op == OP_STORE) {  // (a store epilogue: its target's index, its value's loads)
      LIndex at = kb_view_index(kb, &e->srcs[0]->view, o);
      ok = flat_index(G, &at, dims, n) && flat_loads(G, kb_value(kb, e->srcs[1], o), dims, n);
      continue;
    }
    if (e->mode == NM_STORED) {
      LIndex at = kb_view_index(kb, &e->out->view, o);
      ok = flat_index(G, &at, dims, n);
    }
    if (i > 0 && ok)
      ok = flat_loads(G, kb_node_expr(kb, e, o), dims, n);
  }
  kb->lv[G->mm->id].kind = LV_NONE;
  if (kb->k->locals.len == placeholder + 1)  // it is never declared: drop it
    kb->k->locals.len--;
  for (int d = 0; d < G->on; d++)
    G->o[d] = kb_ix_const(0);
  return ok;
}

// ---- folding output rows into the columns ----
// A convolution's output [N, O, OH, OW] has OW columns per GEMM and OH batches of them;
// at 7 x 7 a tile of NR = 32 columns would be 7/32 full, and every batch would pack the
// whole weight again. Its output rows (the dims just before the column dim, up to the
// row dim) fold into the columns when the output and every epilogue's load and store
// walk them and the column dim as one flat dim, and A reads none of them: then column
// j is the flat index (the folded dims' indices stay 0) for all but B, which reads
// (OH, OW) at j / OW, j % OW (unfold_column), when it is not flat over them itself (a
// window view with padding or a stride, where a row of windows is not the next
// row's continuation). Only contractions (attr.nk) with k over several dims: their B
// is always packed (never read in place), so only packing sees the division.

// Whether operand which's index moves with any of dims[0..n).
static bool reads_dims(Gemm *G, int which, const int *dims, int n) {
  LIndex o[TD_MAX_DIMS], z[TD_MAX_DIMS], ai[TD_MAX_DIMS], bi[TD_MAX_DIMS];
  for (int d = 0; d < G->on; d++)
    o[d] = kb_ix_var(PROBE_VAR + d);
  for (int q = 0; q < TD_MAX_DIMS; q++)
    z[q] = kb_ix_const(0);
  kb_matmul_indices(G->mm, o, z, ai, bi);
  const View *v = &G->mm->srcs[which]->view;
  const LIndex *x = which ? bi : ai;
  bool reads = false;
  for (int d = 0; d < v->ndim; d++)
    for (int t = 0; t < x[d].nterms; t++)
      for (int q = 0; q < n; q++)
        reads |= x[d].var[t] == PROBE_VAR + dims[q] && x[d].coef[t] != 0;
  return reads;
}

static void fold_columns(Gemm *G) {
  const int64_t *shape = G->mm->out->view.shape;
  if (!G->mm->attr.nk || G->nk < 2 || G->jd < 1 || G->nbat == 0)
    return;
  int chain[TD_MAX_DIMS + 1], n = 0;
  for (int d = G->jd - 1; d >= 0 && d != G->rd; d--)
    if (shape[d] > 1)
      chain[n++] = d;
  for (int a = 0, b = n - 1; a < b; a++, b--) {  // outermost first
    int t = chain[a];
    chain[a] = chain[b], chain[b] = t;
  }
  for (int start = 0; start < n; start++) {  // the longest flat run ending at jd
    int dims[TD_MAX_DIMS + 1], m = n - start;
    memcpy(dims, chain + start, sizeof(int) * (size_t)m);
    dims[m] = G->jd;
    if (reads_dims(G, 0, dims, m + 1) || !flat_kernel(G, dims, m + 1, -1))
      continue;
    G->nfold = flat_kernel(G, dims, m + 1, 1) ? 0 : m;  // B flat too: nothing to unfold
    memcpy(G->fold, dims, sizeof(int) * (size_t)m);
    int nb = 0;
    for (int b = 0; b < G->nbat; b++) {
      bool folded = false;
      for (int q = 0; q < m; q++)
        folded |= G->bat[b] == dims[q];
      if (folded)
        G->N *= shape[G->bat[b]], G->nbatch /= shape[G->bat[b]];
      else
        G->bat[nb++] = G->bat[b];
    }
    G->nbat = nb;
    return;
  }
}

// ---- choices ----

// k over several dims (a convolution's channels and taps) with a (the weight) a plain
// load of the accumulation dtype whose k dims are one flat run of unit stride (a
// contiguous weight [O, C, k...]): term k of the linear order is a's element k of its
// row, so the micro-kernel reads a's rows in place (adirect) instead of packing them.
static bool a_flat_k(Gemm *G) {
  if (G->nk < 2 || G->trans)
    return false;
  LIndex k[TD_MAX_DIMS];
  k_probe(G, k);
  LExpr *e = operand(G, 0, kb_ix_var(PROBE_VAR), kb_ix_const(0), k);
  if (e->kind != LX_LOAD || e->dt != G->cd || e->idx.dyn)
    return false;
  int64_t want = 1;
  for (int q = G->nk - 1; q >= 0; q--) {
    if (G->kn[q] > 1 && kb_ix_coef(&e->idx, K_PROBE + q) != want)
      return false;
    want *= G->kn[q];
  }
  return true;
}

// The node whose buffer takes the sums as vectors: the matmul's own when it is stored
// in the accumulation dtype, else a stored epilogue node of that dtype (it is then
// updated in place by the epilogues), else NULL; its columns must be unit-stride
// (*ldc: the stride between its rows).
static const Node *acc_owner(Gemm *G, int64_t *ldc) {
  if (G->jd != G->on - 1)
    return NULL;  // no column dim: nothing to store as a vector
  const Node *own = NULL;
  if (G->mm->mode == NM_STORED && G->mm->out->dtype == G->cd)
    own = G->mm;
  for (int i = 1; i < G->ns->len && !own; i++)
    if (G->ns->data[i]->mode == NM_STORED && G->ns->data[i]->op != OP_STORE && G->ns->data[i]->out->dtype == G->cd)
      own = G->ns->data[i];
  if (!own)
    return NULL;
  G->own = own;
  LIndex o[TD_MAX_DIMS];
  out_index(G, kb_ix_var(PROBE_VAR), kb_ix_var(PROBE_VAR + 1), o);
  LIndex x = own_at(G, o);
  G->own = NULL;
  if (x.dyn || kb_ix_coef(&x, PROBE_VAR + 1) != 1)
    return NULL;
  *ldc = G->rd >= 0 ? kb_ix_coef(&x, PROBE_VAR) : 0;
  return own;
}


// The tile: of the shapes the registers allow (nv vectors of columns and up to mr_max
// rows, MR * nv + nv + 1 registers, or a few rows fewer), the one of least cost: the
// padding on the output's edges (rows and columns padded to whole tiles) over the
// tile's speed, taken to fall short of the FMA units' with fewer than ACC_SAT
// accumulators (they hide the FMA latency, two units x five cycles on Haswell, and
// each panel load feeds more of them: fewer bytes from L2 per FMA); within 1% of
// that, the one with the most accumulators (then the wider).
enum { ACC_SAT = 20 };
static const double REUSE_COST = 1.05;

// A tile the program's micro-kernels already have for G's dtype and A's form (*mr x
// *nv vectors), the i-th one; false when there is none.
static bool existing_tile(const Gemm *G, int i, int *mr, int *nv) {
  const LProgram *p = G->kb->p;
  for (int f = 0; f < p->funcs.len; f++) {
    char dt[16];
    int r, nr;
    const char *key = p->funcs.data[f]->kernels.data[0]->sched;
    if (sscanf(key, "gemm micro-kernel %15s %dx%d", dt, &r, &nr) != 3 || strcmp(dt, dtype_name(G->cd)) ||
        nr % G->V || r < 1 || r > MAX_MR)
      continue;
    GemmMicro m = micro_of(G, r, nr, false);
    m.prefetch = false;
    if (strcmp(key, micro_key(G->kb->cx, &m)) || i-- > 0)
      continue;
    *mr = r, *nv = nr / G->V;
    return true;
  }
  return false;
}

static double tile_cost(const Gemm *G, int mr, int nv) {
  int r = G->R < mr ? (int)G->R : mr;
  int64_t nr = (int64_t)nv * G->V, cols = round_up(G->C, nr);
  if (G->C % nr && G->mm->attr.nk && !G->trans)  // a contraction's last panel is narrow (tail_width)
    cols = G->C / nr * nr + tail_width(G, r, G->C % nr);
  double waste = (double)round_up(G->R, r) * (double)cols / ((double)G->R * (double)G->C);
  return waste / (r * nv >= ACC_SAT ? 1 : (double)(r * nv) / ACC_SAT);
}

static void choose_tile(Gemm *G, const CpuTarget *t, int mr_max) {
  typedef struct Cand {
    int mr, nv;
    double cost;
  } Cand;
  Cand c[3 * MAX_NV];
  int n = 0;
  double best = 0;
  for (int nv = 2; nv <= MAX_NV; nv++) {
    int top = (t->nregs - nv - 1) / nv;
    top = top > mr_max ? mr_max : top;
    for (int mr = top; mr >= top - 2 && mr >= (nv > 2 ? 4 : 2); mr--) {
      c[n++] = (Cand){mr, nv, tile_cost(G, mr, nv)};
      best = !best || c[n - 1].cost < best ? c[n - 1].cost : best;
    }
  }
  TD_ASSERT(n > 0);
  G->MR = 0;
  for (int i = 0; i < n; i++) {
    if (c[i].cost > best * 1.01)
      continue;
    int acc = c[i].mr * c[i].nv, cur = G->MR * G->nv;
    if (!G->MR || acc > cur || (acc == cur && c[i].nv > G->nv))
      G->MR = c[i].mr, G->nv = c[i].nv;
  }
  // a micro-kernel the program already has, if it costs at most REUSE_COST more: one
  // function less to compile
  double have = 0;
  int mr, nv;
  for (int i = 0; existing_tile(G, i, &mr, &nv); i++) {
    double cost = tile_cost(G, mr, nv);
    if (nv <= MAX_NV && mr <= mr_max && mr * nv + nv + 1 <= t->nregs && cost <= best * REUSE_COST &&
        (!have || cost < have))
      have = cost, G->MR = G->R < mr ? (int)G->R : mr, G->nv = nv;
  }
  if (G->MR > G->R)
    G->MR = (int)G->R;
  G->NR = G->nv * G->V;
}

// ---- the pass ----

bool gemm_build(KernelBuilder *kb, const NodeList *ns) {
  const Node *mm = ns->data[0];
  const View *ov = &mm->out->view;
  Gemm G = {.kb = kb, .ns = ns, .mm = mm, .cd = dtype_compute(mm->out->dtype), .on = ov->ndim, .ap = -1,
            .bp = -1, .sbuf = -1, .s_u = -1, .rd = -1, .jd = -1, .nbatch = 1, .cols = -1, .koffs = -1,
            .ptemp = -1, .prow = -1, .pcol = -1, .krow = -1, .kcol = -1};
  G.K = matmul_k(mm, G.kn);
  G.nk = matmul_nk(mm);
  if (view_numel(*ov) == 0 || G.K == 0 || (G.cd != DT_F32 && G.cd != DT_F64))  // (sema allows no int matmul)
    return false;
  // B a zero padding fusion left unstored (ir/fuse.c's plan_pads)
  const Node *pcat = mm->srcs[1]->buf && mm->srcs[1]->buf->kind == BUF_KERNEL ? mm->srcs[1]->buf->producer : NULL;
  if (pcat && pcat->op == OP_CAT && pcat->mode == NM_INLINE) {
    G.px = fuse_pad_chain(mm->srcs[1], G.pl);
    G.pv = &pcat->out->view;
    TD_ASSERT(G.px && view_decompose(mm->srcs[1]->view, G.pv->ndim, G.pv->shape, &G.pm));
  }
  // which output dims are M and N (PyTorch's 1-D rules drop them)
  kb_matmul_dims(mm, &G.rd, &G.jd);
  G.M = G.rd >= 0 ? ov->shape[G.rd] : 1;
  G.N = G.jd >= 0 ? ov->shape[G.jd] : 1;
  for (int d = 0; d < G.on; d++) {
    G.o[d] = kb_ix_const(0);
    if (d != G.rd && d != G.jd && ov->shape[d] > 1)
      G.bat[G.nbat++] = d, G.nbatch *= ov->shape[d];
  }
  fold_rows(&G);
  const CpuTarget *t = kb->cpu;
  int cds = dtype_size(G.cd);
  G.V = t->vec_bytes / cds < 2 ? 2 : t->vec_bytes / cds;
  bool a_k = unit_along(&G, 0, 2, true), b_k = unit_along(&G, 1, 2, true);
  G.sched = G.nk == 1 && a_k && b_k && G.K >= G.V && (G.M <= DOT_MAX_M || G.N == 1) ? SCHED_DOT : SCHED_PACKED;
  if (G.sched == SCHED_PACKED && direct_fits(&G))
    G.sched = SCHED_DIRECT;
  else if (G.sched == SCHED_PACKED)
    fold_columns(&G);
  if (G.px && !pad_clips(&G))
    pad_copy(&G, &kb->k->body);
  G.par = view_numel(*ov) * G.K >= MATMUL_PARALLEL_WORK;
  if (G.sched == SCHED_DIRECT) {
    G.own = acc_owner(&G, &G.ldc);
    G.par_bat = G.par && G.nbatch > 1;
    LStmtList *body = &kb->k->body;
    for (int b = 0; b < G.nbat; b++) {
      LIndex v;
      body = kb_step_loop(kb, body, ov->shape[G.bat[b]], kb_ix_const(0), 1, G.par_bat && b == 0, &v);
      G.o[G.bat[b]] = v;
    }
    build_direct(&G, body, G.par && !G.par_bat);
    kb->k->sched = arena_printf(&kb->cx->arena, "gemm direct %" PRId64 " rows lanes %d", G.M, G.V);
    return true;
  }
  // the batch loops (outermost), each output's batch index
  LStmtList *body = &kb->k->body;
  if (G.sched == SCHED_DOT) {
    G.par_bat = G.par && G.nbatch >= FEW_BATCHES;
    for (int b = 0; b < G.nbat; b++) {
      LIndex v;
      body = kb_step_loop(kb, body, ov->shape[G.bat[b]], kb_ix_const(0), 1, G.par_bat && b == 0, &v);
      G.o[G.bat[b]] = v;
    }
    build_dot(&G, body, G.par && !G.par_bat);
    kb->k->sched = arena_printf(&kb->cx->arena, "gemm dot %dx%d lanes %d", G.M == 1 ? 1 : DOT_IB,
                                G.M == 1 ? DOT_JB : 4, G.V);
    return true;
  }
  // where the sums wait, and k blocks only where they can
  G.own = acc_owner(&G, &G.ldc);
  // which operand the tiles' rows are, and whether the micro-kernel reads it in place:
  // an operand unit-stride in k is read in place rather than transposed into panels;
  // where both are (x @ w.t()), the larger (the weight) is, and the other is packed; so
  // is a computed at packing (a layer norm fusion leaves to it)
  bool a_i = unit_along(&G, 0, 0, false), a_plain = plain_load(&G, 0);
  G.trans = G.nk == 1 && b_k && (a_i || (a_k && G.M < G.N) || !a_plain);
  G.R = G.trans ? G.N : G.M;
  G.C = G.trans ? G.M : G.N;
  G.adirect = G.nk == 1 ? (G.trans ? b_k : a_k) : a_flat_k(&G);
  if (G.adirect) {  // (rows that step backwards, as a flip's, are packed)
    LIndex k0[TD_MAX_DIMS];
    for (int q = 0; q < G.nk; q++)
      k0[q] = kb_ix_const(0);
    LExpr *e = role_value(&G, 0, kb_ix_var(PROBE_VAR), k0);
    G.lda = kb_ix_coef(&e->idx, PROBE_VAR);
    G.adirect = G.lda >= 0;
  }
  choose_tile(&G, t, G.adirect ? ADIRECT_MAX_MR : 14);
  // B's rows read in place where few rows of A meet them (and all its columns exist)
  if (!G.trans && G.nk == 1 && G.M <= BDIRECT_MAX_M && G.C >= G.NR && unit_along(&G, 1, 1, true)) {
    LIndex k0 = kb_ix_var(PROBE_VAR);
    LExpr *e = role_value(&G, 1, kb_ix_const(0), &k0);
    G.ldb = kb_ix_coef(&e->idx, PROBE_VAR);
    G.bdirect = G.ldb >= 0;
  }
  // k blocks: a panel of B stays in L2 (KC_MAX terms, or with A read in place as many as
  // half the L2 holds: the tiles then make fewer passes over the sums; a convolution's
  // as many as the whole L2 holds: its K of 9 taps a channel, 2304 and 4608 in
  // ResNet-50, is then one block, and each block costs two parallel loops and a pass
  // over the sums: 6-7% faster at 14 x 14 and 7 x 7 with 2 threads on a loaded
  // machine, the same with one). A packed with one k dim (a.t() @ b: A's rows are not
  // unit-stride in k), KC_PACKED_MAX terms: at 2048^2 a k block of A is then under a
  // tenth of the data (4.2 MB, blocks of 688 were 5.6), so A's block is packed whole and
  // the column blocks are the parallel loop (COLS), the block of B in L2 meeting every
  // row panel: 1.19x faster (C and LLVM, 2 threads; Zen 3's tiles on this machine
  // 1.13x) than ROWS' row blocks of 140 over a shared block of B in L3; 584 terms as
  // fast, 624 (ROWS again) as slow. ROWS re-blocks below.
  int64_t kc_max = !G.adirect && G.nk == 1 ? KC_PACKED_MAX : KC_MAX, l2_share = G.nk > 1 ? t->l2 : t->l2 / 2;
  if (G.adirect && l2_share / ((int64_t)G.NR * cds) > kc_max)
    kc_max = l2_share / ((int64_t)G.NR * cds);
  if (residual_through_t(&G, kc_max))
    G.own = NULL;
  G.kc = G.K;
  if (G.own && G.nk == 1 && G.K > kc_max) {
    int64_t nblocks = (G.K + kc_max - 1) / kc_max;
    G.kc = round_up((G.K + nblocks - 1) / nblocks, 8);
  }
  if (G.own && G.nk > 1 && G.K > kc_max) {  // whole indices of the outermost k dim (a channel's taps)
    int64_t P = kc_inner(&G), nblocks = (G.K + kc_max - 1) / kc_max;
    G.kc = (G.kn[0] + nblocks - 1) / nblocks * P;
  }
  // the mode and the blocks
  int64_t l2 = t->l2, mpad = round_up(G.R, G.MR);
  int64_t nc_l2 = (l2 / 2) / (G.kc * cds) / G.NR * G.NR;
  nc_l2 = nc_l2 < G.NR ? G.NR : nc_l2;
  // (in double: the bytes of a GEMM whose sizes near 2^62 pass the element count's check
  // overflow int64_t, tests/fuzz/regressions/matmul_flops_overflow.tdsl)
  double data = ((double)G.M * G.K + (double)G.K * G.N + (double)G.M * G.N) * cds;
  double a_bytes = (double)mpad * G.kc * cds;
  bool a_small = G.adirect || a_bytes <= A_SHARED_BYTES || a_bytes * 10 <= data;
  int64_t nc_par = round_up((G.C + PARALLEL_MIN_ITERS - 1) / PARALLEL_MIN_ITERS, G.NR);
  int64_t mc_l2 = (l2 / 4) / (G.kc * cds) / G.MR * G.MR;
  mc_l2 = mc_l2 < G.MR ? G.MR : mc_l2;
  int64_t mc_par = round_up((G.R + PARALLEL_MIN_ITERS - 1) / PARALLEL_MIN_ITERS, G.MR);
  // the most tasks one GEMM gives by columns and by rows: columns when A is small (or
  // read in place) and they give enough (or as many as rows do); a batch of small GEMMs
  // goes by batches
  int64_t col_tasks = (G.C + G.NR - 1) / G.NR, row_tasks = (G.R + G.MR - 1) / G.MR;
  bool by_cols = a_small && (col_tasks >= PARALLEL_MIN_ITERS || col_tasks >= row_tasks);
  bool small_each = G.M * G.N * G.K < SMALL_GEMM;
  if (!G.par || G.nbatch >= PARALLEL_MIN_ITERS || (G.nbatch >= FEW_BATCHES && small_each)) {
    G.mode = MODE_BATCH;
    G.par_bat = G.par && G.nbatch > 1;
    G.nc = nc_l2;
  } else if (by_cols) {
    G.mode = MODE_COLS;
    G.nc = nc_l2 < nc_par ? nc_l2 : nc_par;
  } else {
    G.mode = MODE_ROWS;
    // a row panel read in place meets every column panel of the block of B before the
    // next: where its MR rows overflow the L1 or the block the L2, k is split into
    // blocks whose rows take a third of the L1 (each block costs a pass over the sums),
    // unless there is one column panel, which meets each row panel once (GPT-2's c_proj
    // at 64 tokens, 64 x 3072 by 3072 x 768 with the GELU computed at packing, 1.14-1.16x
    // faster as one block; its whole forward 1.06x).
    // On a 48 KB L1 and 2 MB L2: at K = 1536, 392 rows and 384 columns (a ConvNeXt
    // block's second linear: a block of 2.4 MB) blocks of 512 terms are 1.15-1.3x
    // faster, at K = 3072, 128 rows and 768 columns (rows of 72 KB) 1.05-1.15x; at K =
    // 1536, 128 rows and 768 columns (rows of 36 KB, a block of 0.8 MB) one block is 3%
    // faster. The row blocks are then sized for the k blocks' rows (mc_l2 again): at K =
    // 3072, 2048 rows and 768 columns, mc 132 rather than 42 (the whole K's) is 1.25x
    // faster; at 128 rows 1.1x (1.07x with Zen 3's tiles and caches)
    int64_t kc_l1 = t->l1d / 3 / ((int64_t)G.MR * cds);
    kc_l1 = kc_l1 < KC_MIN ? KC_MIN : kc_l1;
    bool spills = (G.MR * G.kc * cds > t->l1d || G.C * G.kc * cds > l2) && G.C > G.NR;
    if (G.adirect && G.own && G.nk == 1 && G.kc > kc_l1 && spills) {
      int64_t nblocks = (G.K + kc_l1 - 1) / kc_l1;
      G.kc = round_up((G.K + nblocks - 1) / nblocks, 8);
      mc_l2 = (l2 / 4) / (G.kc * cds) / G.MR * G.MR;
      mc_l2 = mc_l2 < G.MR ? G.MR : mc_l2;
    }
    G.nc = (B_SHARED_BYTES / (G.kc * cds)) / G.NR * G.NR;
    G.nc = G.nc < G.NR ? G.NR : G.nc;
    G.mc = mc_l2 < mc_par ? mc_l2 : mc_par;
    G.mc = G.mc >= G.R ? G.R : G.mc;
    // few columns (nn.Linear's x @ w.t() at 64 tokens) make the rows read in place a
    // stream: each weight element from memory feeds 2 * C flops (at C = 64 the 2 cores'
    // peak needs 14 GB/s of weights, 60% of this DRAM's copy rate), and the first tile to
    // meet a row waits on it (the hardware prefetchers start each row's stream late). The
    // micro-kernel then prefetches the next row panel a whole tile ahead, where the rows
    // are contiguous and one k block (lda = kc: a[MR*lda + MR*k] walks the next panel). 16
    // cycled 64 x 3072 x 768 GEMMs (weights from DRAM): 1.31x faster; GPT-2 at (1, 64)
    // 1.18x. At C = 128 (a second pass over the rows, from the L2) it measured no faster.
    G.pf = G.adirect && G.nk == 1 && G.kc == G.K && G.lda == G.K && G.C <= PF_MAX_COLS;
  }
  G.nc = G.nc >= G.C ? G.C : G.nc;
  // the buffers: scratch (b's block, a's block, the tile T), and the temps
  int64_t ncpad = round_up(G.nc, G.NR);
  G.s_b = 0;
  G.s_a = G.mode == MODE_ROWS ? 0 : ncpad * G.kc;
  int64_t a_rows = G.adirect ? 0 : G.mode == MODE_BATCH ? mpad : G.mode == MODE_ROWS ? round_up(G.mc, G.MR) : 0;
  G.s_t = round_up(G.s_a + a_rows * G.kc, 64 / cds);
  G.tg = G.trans ? (T_GROUP_ROWS + G.MR - 1) / G.MR : 1;
  G.s_u = G.trans && G.ns->len > 1 ? G.s_t + G.tg * G.MR * G.NR : -1;
  G.sbuf = kb_new_temp(kb, G.cd, G.s_t + (G.s_u >= 0 ? 2 : 1) * G.tg * G.MR * G.NR, "scratch");
  kb->p->bufs.data[G.sbuf].scratch = true;
  if (G.mode == MODE_COLS && !G.adirect)
    G.ap = kb_new_temp(kb, G.cd, mpad * G.kc, "apack");
  if (G.mode == MODE_ROWS && !G.bdirect)
    G.bp = kb_new_temp(kb, G.cd, ncpad * G.kc, "bpack");
  // a, when it is one k block and reads no batch, is packed once, before the batch loops
  bool packed_a = G.mode == MODE_COLS && !G.adirect && G.kc == G.K && !reads_batch(&G, role_operand(&G, 0));
  if (packed_a)
    pack(&G, body, 0, kb_ix_const(0), G.R, kb_ix_const(0), G.K,
         (Panels){kb_arg(kb, G.ap, true, true), kb_ix_const(0), (int64_t)G.MR * G.K}, G.par);
  if (G.nfold && plain_load(&G, 1)) {
    G.cols = kb_new_temp(kb, DT_I64, G.N, "columns");
    if (G.pclip) {
      const char *names[4] = {"padrows", "padcols", "krows", "kcols"};
      int *tabs[4] = {&G.prow, &G.pcol, &G.krow, &G.kcol};
      for (int i = 0; i < 4; i++)
        *tabs[i] = kb_new_temp(kb, DT_I64, i < 2 ? G.N : G.K, names[i]);
    }
    fill_cols(&G, body);
    if (runs_fit(&G)) {
      G.koffs = kb_new_temp(kb, DT_I64, G.K, "koffsets");
      fill_koffs(&G, body);
    }
  }
  for (int b = 0; b < G.nbat; b++) {
    LIndex v;
    body = kb_step_loop(kb, body, ov->shape[G.bat[b]], kb_ix_const(0), 1, G.par_bat && b == 0, &v);
    G.o[G.bat[b]] = v;
  }
  if (G.mode == MODE_ROWS)
    row_mode(&G, body);
  else if (G.mode == MODE_COLS)
    col_mode(&G, body, packed_a);
  else
    col_blocks(&G, body, NULL, NULL, false);
  // what --emit=kernels shows: the schedule and its tiles
  Arena *ar = &kb->cx->arena;
  kb->k->sched = arena_printf(ar, "gemm packed %dx%d%s%s%s %s nc %" PRId64 "%s%s", G.MR, G.NR,
                              G.trans ? " transposed" : "", G.adirect ? " rows in place" : "",
                              G.bdirect ? " b in place" : "", MODE_NAMES[G.mode], G.nc,
                              G.mode == MODE_ROWS ? arena_printf(ar, " mc %" PRId64, G.mc) : "",
                              G.kc < G.K ? arena_printf(ar, " kc %" PRId64, G.kc) : "");
  return true;
}
