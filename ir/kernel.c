// ir/kernel.c: the fused graph -> loop IR (kernel_build), the driver half of the kernel
// builder; ir/scalar.c builds the scalar expressions. It obeys the fusion plan of
// ir/fuse.c: each kernel becomes one LKernel, in kernel order, whose loop nests compute
// its NM_STORED nodes into their buffers; NM_INLINE producers are recomputed inside
// their readers, NM_LOCAL matmul/reduction results live in locals of their kernel.
//
// Scheduling is decided here, where the loops are built, not by a later pass over the
// loop IR: the builder knows what each loop computes, so it can reorder a nest and
// move accumulators into buffers without recovering that from the IR. Three kernel
// shapes get a loop order other than the output's row-major one (below, with their
// own comments): elementwise kernels that read a transposed operand run in tiles
// (build_ew); matmuls whose k loop would stride through b accumulate blocks of output
// rows in place (build_matmul_rows); and reductions that keep the input's unit-stride
// dim accumulate whole rows of partial results (COL, build_col). Each computes every
// element, and adds every term of an output, in the same order as the row-major nest,
// so results are bit-identical to kernel_build_naive, which builds without them (the
// tests' reference). That row schedule serves GPU programs only: on a CPU (kernel_build
// with a CpuTarget) every matmul goes through ir/gemm.c, whose FMA tiles sum in
// another order.
//
// Invariants kept:
//   - buffers: one LB_PARAM per parameter (in order), then one per NM_STORED node that
//     owns storage (not OP_STORE, which writes its target's buffer), LB_RESULT when an
//     output views it; outputs that view a parameter point at that parameter's buffer;
//     then the LB_TEMP accumulators the schedules add, kernel by kernel;
//   - every store writes a value of the buffer's own dtype (casts are explicit);
//   - loops iterate the written tensor's dims in row-major order (innermost unit stride
//     on the output), except in the three schedules above; size-1 dims get no loop;
//     the outermost loop is `parallel` when its iterations are independent and the
//     kernel's work is >= PARALLEL_WORK (the reduction and matmul schedules pick the
//     first loop that gives PARALLEL_MIN_ITERS iterations, or split a dim into
//     parallel blocks);
//   - locals are declared (LS_LET) inside the loop they serve, so they are private to
//     an iteration of a parallel loop; a temp accumulator is indexed by the output
//     element, so parallel iterations never share one.
#include "ir/kernel.h"

#include <math.h>
#include <string.h>

static void push(KB *kb, LStmtList *list, LStmt *s) { vec_push(&kb->cx->arena, list, s); }

// Loops over the dims of shape (size-1 dims get index 0 and no loop); idx[d] receives
// each dim's index. Returns the innermost body.
static LStmtList *nest(KB *kb, LStmtList *into, int nd, const int64_t *shape, LIndex *idx, bool parallel) {
  for (int d = 0; d < nd; d++) {
    if (shape[d] == 1) {
      idx[d] = kb_ix_const(0);
      continue;
    }
    int v = kb_new_var(kb);
    LStmt *s = kb_loop(kb, v, shape[d]);
    s->parallel = parallel;
    parallel = false;
    push(kb, into, s);
    into = &s->body;
    idx[d] = kb_ix_var(v);
  }
  return into;
}

void kb_local_at(KB *kb, const Node *n, int local, const LIndex *at) {
  LocalVal *lv = &kb->lv[n->id];
  lv->kind = LV_LOCAL;
  lv->local = local;
  lv->nat = n->out->view.ndim;
  for (int d = 0; d < lv->nat; d++)
    lv->at[d] = at[d], lv->fixed[d] = true;
}

void kb_store_node(KB *kb, LStmtList *into, const Node *n, const LIndex *idx, LExpr *val) {
  int buf = kb->buf_of[n->out->buf->id];
  TD_ASSERT(buf >= 0);
  int arg = kb_arg(kb, buf, false, true);
  push(kb, into, kb_store_stmt(kb, arg, kb_view_index(kb, &n->out->view, idx), kb_cast(kb, val, n->out->dtype)));
}

static bool same_shape(const View *a, const View *b) {
  if (a->ndim != b->ndim)
    return false;
  for (int i = 0; i < a->ndim; i++)
    if (a->shape[i] != b->shape[i])
      return false;
  return true;
}

static int add_buf(KB *kb, LBuf b) {
  vec_push(&kb->cx->arena, &kb->p->bufs, b);
  return kb->p->bufs.len - 1;
}

// ============================================================================
// Schedule helpers: temps, loads and stores of accumulator rows, parallel loops
// ============================================================================
enum {
  BLOCK_TARGET = 16,        // blocks a split dim aims for
};

int kb_new_temp(KB *kb, DType dt, int64_t numel, const char *what) {
  const char *name = arena_printf(&kb->cx->arena, "%s.%s", kb->k->name, what);
  return add_buf(kb, (LBuf){LB_TEMP, dt, numel, name, -1, false});
}

static LExpr *buf_load(KB *kb, int buf, LIndex idx) {
  LExpr *e = kb_expr(kb, LX_LOAD, kb->p->bufs.data[buf].dtype);
  e->buf = kb_arg(kb, buf, true, false);
  e->idx = idx;
  return e;
}

static void buf_store(KB *kb, LStmtList *into, int buf, LIndex idx, LExpr *val) {
  int arg = kb_arg(kb, buf, false, true);
  push(kb, into, kb_store_stmt(kb, arg, idx, kb_cast(kb, val, kb->p->bufs.data[buf].dtype)));
}

// Consecutive indices per parallel block of a dim of size S whose index covers w
// elements of an accumulator row: about S / BLOCK_TARGET, a multiple of 64 when w == 1
// (the dim is innermost: vector loops stay whole); 0 when fewer than two blocks fill.
static int64_t block_size(int64_t S, int64_t w) {
  int64_t b = (S + BLOCK_TARGET - 1) / BLOCK_TARGET;
  if (w == 1)
    b = (b + 63) / 64 * 64;
  return b > 0 && S / b >= 2 ? b : 0;
}

// Loops over dims[0..n) (each of size > 1), outermost first; idx[dims[p]] gets each
// loop's var. With par, the first loop by which PARALLEL_MIN_ITERS iterations are
// reached is parallel (the outermost if none is). Returns the innermost body.
static LStmtList *outer_loops(KB *kb, LStmtList *into, int n, const int *dims, const int64_t *shape, LIndex *idx,
                              bool par) {
  int pp = par && n > 0 ? 0 : -1;
  int64_t iters = 1;
  for (int p = 0; p < n && pp >= 0; p++)
    if ((iters *= shape[dims[p]]) >= PARALLEL_MIN_ITERS) {
      pp = p;
      break;
    }
  for (int p = 0; p < n; p++) {
    int v = kb_new_var(kb);
    LStmt *s = kb_loop(kb, v, shape[dims[p]]);
    s->parallel = p == pp;
    push(kb, into, s);
    into = &s->body;
    idx[dims[p]] = kb_ix_var(v);
  }
  return into;
}

// A loop of n iterations whose index *at is base + step * var; no loop when n == 1
// (*at is base). Returns its body.
static LStmtList *step_loop(KB *kb, LStmtList *into, int64_t n, LIndex base, int64_t step, bool par, LIndex *at) {
  *at = base;
  if (n == 1)
    return into;
  int v = kb_new_var(kb);
  LStmt *s = kb_loop(kb, v, n);
  s->parallel = par;
  push(kb, into, s);
  LIndex vi = kb_ix_var(v);
  kb_ix_addmul(kb, at, &vi, step);
  return &s->body;
}

static int let_local(KB *kb, LStmtList *into, LExpr *val) {
  int l = kb_new_local(kb, val->dt);
  push(kb, into, kb_let(kb, l, val));
  return l;
}

// The coefficient of variable var in x (0 if it has none).
static int64_t ix_coef(const LIndex *x, int var) {
  for (int t = 0; t < x->nterms; t++)
    if (x->var[t] == var)
      return x->coef[t];
  return 0;
}

static int64_t iabs(int64_t x) { return x < 0 ? -x : x; }

// ============================================================================
// EW: elementwise nodes over one shape
// ============================================================================
// Loops follow the output's row-major order, except when a load's unit-stride dim di
// is not the output's innermost dim dj (a transposed read: x.t().contiguous()). Then
// both are tiled:
//   for ..., i0 in 0..Si step Ti [parallel], ..., j0 in 0..Sj step Tj, ... {
//     for i in i0..i0+Ti, j in j0..j0+Tj: out[.., i, .., j] = f(..)
//   }
// (the tile loops in their dims' places, the intra-tile loops innermost; the last
// Si % Ti indices of a dim get a nest of their own, and a dim shorter than its tile no
// tile loop). A tile writes Tj elements = EW_ROW_BYTES of each of Ti output rows (whole
// lines, a 512-bit gather each for f32) and reads Ti = EW_RUN_BYTES along each of Tj
// source rows: long runs keep the hardware prefetchers streaming (4096² f32 with the
// LLVM backend: 32×32 tiles 6.4 ms, 512×32 5.0 ms; C 11.9 -> 8.5 ms). Ti shrinks, down
// to Tj, while it leaves fewer than EW_MIN_TILES tiles of Si to share among threads.
// Only the order changes: every element is computed as in the row-major nest.
enum { EW_ROW_BYTES = 128, EW_RUN_BYTES = 2048, EW_MIN_TILES = 8 };

typedef struct EwTile {
  const NodeList *ns;
  const View *ov;
  int di, dj;                 // the tiled dims (di < dj)
  int64_t tile[TD_MAX_DIMS];  // di and dj: Ti and Tj
  LIndex idx[TD_MAX_DIMS];    // the index of each dim; of di and dj: their tile's first
  int64_t ext[TD_MAX_DIMS];   // di and dj: their tile's extent
} EwTile;

// The dim by which a load of e moves with unit stride while it strides along probe
// dim dj, or -1.
static int transposed_dim(const LExpr *e, int nd, int dj) {
  if (!e)
    return -1;
  if (e->kind == LX_LOAD && iabs(ix_coef(&e->idx, PROBE_VAR + dj)) > 1)
    for (int d = 0; d < nd; d++)
      if (iabs(ix_coef(&e->idx, PROBE_VAR + d)) == 1)
        return d;
  int d = transposed_dim(e->a, nd, dj);
  if (d < 0)
    d = transposed_dim(e->b, nd, dj);
  if (d < 0)
    d = transposed_dim(e->c, nd, dj);
  return d < 0 && e->kind == LX_LOAD ? transposed_dim(e->idx.dyn, nd, dj) : d;
}

// The loops of dims d.. (the first loop made is parallel with par), then the stores.
static void ew_nest(KB *kb, EwTile *t, LStmtList *into, int d, bool par) {
  const View *ov = t->ov;
  if (d == ov->ndim) {
    LIndex idx[TD_MAX_DIMS];
    memcpy(idx, t->idx, sizeof idx);
    if (t->di >= 0) {
      into = step_loop(kb, into, t->ext[t->di], t->idx[t->di], 1, par, &idx[t->di]);
      into = step_loop(kb, into, t->ext[t->dj], t->idx[t->dj], 1, par && t->ext[t->di] == 1, &idx[t->dj]);
    }
    for (int i = 0; i < t->ns->len; i++) {
      const Node *n = t->ns->data[i];
      TD_ASSERT(op_is_elementwise(n->op) && same_shape(&n->out->view, ov));
      kb_store_node(kb, into, n, idx, kb_node_expr(kb, n, idx));
    }
    return;
  }
  if (d != t->di && d != t->dj) {
    int64_t S = ov->shape[d];
    ew_nest(kb, t, step_loop(kb, into, S, kb_ix_const(0), 1, par, &t->idx[d]), d + 1, par && S == 1);
    return;
  }
  int64_t S = ov->shape[d], T = t->tile[d], nt = S / T;
  t->ext[d] = T;
  if (nt)
    ew_nest(kb, t, step_loop(kb, into, nt, kb_ix_const(0), T, par, &t->idx[d]), d + 1, par && nt == 1);
  if (S % T) {  // the last tile, shorter
    t->idx[d] = kb_ix_const(nt * T);
    t->ext[d] = S % T;
    ew_nest(kb, t, into, d + 1, par && !nt);
  }
}

static void build_ew(KB *kb, const NodeList *ns) {
  const View *ov = &ns->data[0]->out->view;
  EwTile t = {.ns = ns, .ov = ov, .di = -1, .dj = -1};
  LIndex pidx[TD_MAX_DIMS];
  for (int d = 0; d < ov->ndim; d++) {
    pidx[d] = ov->shape[d] == 1 ? kb_ix_const(0) : kb_ix_var(PROBE_VAR + d);
    if (ov->shape[d] > 1)
      t.dj = d;
  }
  // probe the loads; the args and errors that registers are dropped again (they come
  // back in store order when the nest is built)
  int nargs = kb->k->args.len, nerr = kb->k->errors.len;
  for (int i = 0; i < ns->len && t.dj >= 0 && t.di < 0 && !kb->naive; i++)
    t.di = transposed_dim(kb_node_expr(kb, ns->data[i], pidx), ov->ndim, t.dj);
  kb->k->args.len = nargs;
  kb->k->errors.len = nerr;
  if (t.di < 0) {
    t.dj = -1;
  } else {  // the tile shape of the comment above, in elements of the (first) output
    int64_t es = dtype_size(ns->data[0]->out->dtype), tj = EW_ROW_BYTES / es, ti = EW_RUN_BYTES / es;
    while (ti > tj && ov->shape[t.di] / ti < EW_MIN_TILES)
      ti /= 2;
    t.tile[t.di] = ti;
    t.tile[t.dj] = tj;
  }
  ew_nest(kb, &t, &kb->k->body, 0, view_numel(*ov) >= PARALLEL_WORK);
}

// ============================================================================
// MATMUL: out[o] = sum_k a[..] * b[..] with PyTorch's 1-D / 2-D / batched rules,
// then elementwise epilogues at the same index
// ============================================================================
void kb_matmul_indices(const Node *n, const LIndex *o, LIndex kv, LIndex *ai, LIndex *bi) {
  const View *a = &n->srcs[0]->view, *b = &n->srcs[1]->view;
  int da = a->ndim, db = b->ndim, on = n->out->view.ndim;
  if (da == 1)
    ai[0] = kv;
  if (db == 1)
    bi[0] = kv;
  if (da >= 3 && db <= 2) {  // a's leading dims are the output's
    for (int i = 0; i < da - 1; i++)
      ai[i] = o[i];
    ai[da - 1] = kv;
    if (db == 2)
      bi[0] = kv, bi[1] = o[on - 1];
    return;
  }
  if (db >= 3 && da <= 2) {
    for (int i = 0; i < db - 2; i++)
      bi[i] = o[i];
    bi[db - 2] = kv;
    bi[db - 1] = o[on - 1];
    if (da == 2)
      ai[0] = o[on - 2], ai[1] = kv;
    return;
  }
  if (da <= 2 && db <= 2) {
    if (da == 2)
      ai[0] = o[0], ai[1] = kv;
    if (db == 2)
      bi[0] = kv, bi[1] = o[on - 1];
    return;
  }
  // batched: batch dims broadcast from the right
  int nbt = on - 2;
  for (int i = 0; i < da - 2; i++)
    ai[i] = a->shape[i] == 1 ? kb_ix_const(0) : o[i + nbt - (da - 2)];
  for (int i = 0; i < db - 2; i++)
    bi[i] = b->shape[i] == 1 ? kb_ix_const(0) : o[i + nbt - (db - 2)];
  ai[da - 2] = o[nbt], ai[da - 1] = kv;
  bi[db - 2] = kv, bi[db - 1] = o[nbt + 1];
}

static void build_matmul(KB *kb, const NodeList *ns) {
  const Node *mm = ns->data[0];
  TD_ASSERT(mm->op == OP_MATMUL);
  const View *ov = &mm->out->view, *av = &mm->srcs[0]->view;
  int64_t K = av->shape[av->ndim - 1];
  DType od = mm->out->dtype, cd = kb_compute_dtype(od);
  LIndex o[TD_MAX_DIMS];
  LStmtList *body = nest(kb, &kb->k->body, ov->ndim, ov->shape, o, view_numel(*ov) * (K ? K : 1) >= PARALLEL_WORK);
  int acc = kb_new_local(kb, cd);
  push(kb, body, kb_let(kb, acc, kb_num(kb, cd, 0, 0)));
  LIndex kv = kb_ix_const(0);
  LStmtList *kbody = body;
  if (K != 1) {
    int v = kb_new_var(kb);
    LStmt *kl = kb_loop(kb, v, K);
    push(kb, body, kl);
    kbody = &kl->body;
    kv = kb_ix_var(v);
  }
  LIndex ai[TD_MAX_DIMS], bi[TD_MAX_DIMS];
  kb_matmul_indices(mm, o, kv, ai, bi);
  LExpr *x = kb_cast(kb, kb_value(kb, mm->srcs[0], ai), cd), *y = kb_cast(kb, kb_value(kb, mm->srcs[1], bi), cd);
  push(kb, kbody, kb_set(kb, acc, kb_arith(kb, OP_ADD, cd, kb_local_ref(kb, acc), kb_arith(kb, OP_MUL, cd, x, y))));
  kb_local_at(kb, mm, acc, o);
  if (mm->mode == NM_STORED)
    kb_store_node(kb, body, mm, o, kb_local_ref(kb, acc));
  for (int i = 1; i < ns->len; i++) {
    const Node *e = ns->data[i];
    TD_ASSERT(op_is_elementwise(e->op) && same_shape(&e->out->view, ov));
    kb_store_node(kb, body, e, o, kb_node_expr(kb, e, o));
  }
}

// Row schedule, register and cache blocked. The innermost loop walks the output's
// last dim j (unit stride in the accumulator and, for a row-major b, in b) instead of
// k, and the output is accumulated in place in a buffer acc of the accumulation dtype:
//   for batch, i0 in 0..M step MC [parallel] {       // macro rows: their acc tile stays in L2
//     for j0 in 0..N step JT {                       // column tile: whole rows unless N is large
//       for i in i0..i0+MC step R, j: acc[i+r, j0+j] = 0              (every r < R)
//       for kc in 0..K step KC {                     // k block: its KC x JT block of b stays in L2
//         for i in i0..i0+MC step R {                // R rows: their R x JT block of acc stays in L1
//           for k0 in kc..kc+KC step U {
//             let h[r][u] = a[i+r, k0+u]                               (every r < R, u < U)
//             for j {
//               let w[u] = b[k0+u, j0+j]                               (every u < U)
//               acc[i+r, j0+j] = (..(acc[i+r, j0+j] + h[r][0] * w[0]) + ..) + h[r][U-1] * w[U-1]
//             }
//           }
//           (when U does not divide KC: one more step with the KC % U terms left)
//       } }
//       for i in i0..i0+MC step R, j: out[i+r, j0+j] = acc[i+r, j0+j]; epilogues there
//   } }
// Each remainder (M % MC rows, then M % R rows; N % JT columns; K % KC terms) gets a
// nest of its own. Each w loaded feeds R products, and acc is loaded and stored once
// per U of them. Every output still adds its k terms one at a time in order from 0,
// each sum rounded to the accumulation dtype: bit-identical to build_matmul.
// For a matrix @ vector the roles turn (a walks j, the vector's elements are hoisted);
// R rows are blocked only when the walking operand does not read the row dim.
// acc is the matmul's own buffer when it is stored in the accumulation dtype, else an
// epilogue's buffer of that dtype (updated in place by the last pass), else a temp of
// the whole output's size (blocks of a parallel loop never share it). With few row
// blocks the column tiles, made smaller, are the parallel loop instead (MC = M).
// The sizes were measured on 1024^2 and 256x2048x4096 f32 matmuls (48 KiB L1d, 2 MiB
// L2): JT tiles narrower than the row make b's rows start 4 KiB apart and fight over
// cache sets; k blocks of 128-256 rows keep b in L2; R x U from 4x4 up to 8x4 all
// keep the vector units busy, 4x4 keeps the least code.
enum {
  MM_R = 4,               // rows per block: each element of b loaded feeds R products
  MM_U = 4,               // k terms per pass over a block: acc moves once per U products
  MM_MC = 64,             // at most this many rows per macro block
  MM_JT = 1024,           // columns per tile when N >= 2 * MM_JT (else one tile)
  MM_PANEL = 512 * 1024,  // bytes of the KC x JT block of b a k block reads (kept in L2)
};

typedef struct MMRows {
  const NodeList *ns;
  DType cd;               // the accumulation dtype
  bool bwalks;            // b walks j (a's element is hoisted), else a walks j
  int acc;                // the accumulator buffer
  const Node *own;        // the node whose buffer acc is, or NULL (a temp)
  View cv;                // the output's contiguous View (acc's index)
  int rd;                 // the row dim blocked by MM_R (the walking operand does not read it), or -1
  int64_t K, N, jt, kc;   // the k extent, the j extent, the column tile, the k block
  LIndex o[TD_MAX_DIMS];  // the outer loops' indices (rd, j and size-1 dims: 0)
} MMRows;

// One step of U = nu k terms, from k0, for the nr rows o[0..nr) of a block.
static void mm_kstep(KB *kb, const MMRows *m, LStmtList *into, LIndex (*o)[TD_MAX_DIMS], int nr, LIndex k0, int nu,
                     LIndex jbase, int64_t jext) {
  const Node *mm = m->ns->data[0];
  const Value *hold = mm->srcs[m->bwalks ? 0 : 1], *walk = mm->srcs[m->bwalks ? 1 : 0];
  int on = mm->out->view.ndim;
  LIndex ai[TD_MAX_DIMS], bi[TD_MAX_DIMS], kv[MM_U], j;
  int h[MM_R][MM_U], w[MM_U];
  for (int u = 0; u < nu; u++)
    kv[u] = k0, kv[u].base += u;
  for (int r = 0; r < nr; r++)
    for (int u = 0; u < nu; u++) {
      o[r][on - 1] = kb_ix_const(0);  // the hoisted operand does not read it
      kb_matmul_indices(mm, o[r], kv[u], ai, bi);
      h[r][u] = let_local(kb, into, kb_cast(kb, kb_value(kb, hold, m->bwalks ? ai : bi), m->cd));
    }
  LStmtList *in = step_loop(kb, into, jext, jbase, 1, false, &j);
  for (int r = 0; r < nr; r++)
    o[r][on - 1] = j;
  for (int u = 0; u < nu; u++) {
    kb_matmul_indices(mm, o[0], kv[u], ai, bi);
    w[u] = let_local(kb, in, kb_cast(kb, kb_value(kb, walk, m->bwalks ? bi : ai), m->cd));
  }
  for (int r = 0; r < nr; r++) {
    LIndex oi = kb_view_index(kb, &m->cv, o[r]);
    LExpr *s = buf_load(kb, m->acc, oi);
    for (int u = 0; u < nu; u++) {
      LExpr *x = kb_local_ref(kb, m->bwalks ? h[r][u] : w[u]), *y = kb_local_ref(kb, m->bwalks ? w[u] : h[r][u]);
      s = kb_arith(kb, OP_ADD, m->cd, s, kb_arith(kb, OP_MUL, m->cd, x, y));
    }
    buf_store(kb, in, m->acc, oi, s);
  }
}

// What a pass over a block does: zero acc, add k terms kbase .. kbase + kext, or
// store the results and epilogues.
typedef enum { MM_ZERO, MM_ADD, MM_FINAL } MMPass;

// One pass over the block of nr rows from row (dim rd) and columns jbase + 0..jext.
static void mm_block(KB *kb, const MMRows *m, LStmtList *into, MMPass pass, LIndex row, int nr, LIndex jbase,
                     int64_t jext, LIndex kbase, int64_t kext) {
  const Node *mm = m->ns->data[0];
  const View *ov = &mm->out->view;
  int on = ov->ndim;
  LIndex o[MM_R][TD_MAX_DIMS], j, k0;
  for (int r = 0; r < nr; r++) {
    memcpy(o[r], m->o, sizeof o[r]);
    if (m->rd >= 0)
      o[r][m->rd] = row, o[r][m->rd].base += r;
  }
  if (pass == MM_ADD) {
    if (kext >= MM_U)
      mm_kstep(kb, m, step_loop(kb, into, kext / MM_U, kbase, MM_U, false, &k0), o, nr, k0, MM_U, jbase, jext);
    k0 = kbase;
    k0.base += kext - kext % MM_U;
    if (kext % MM_U)
      mm_kstep(kb, m, into, o, nr, k0, (int)(kext % MM_U), jbase, jext);
    return;
  }
  LStmtList *in = step_loop(kb, into, jext, jbase, 1, false, &j);
  for (int r = 0; r < nr; r++) {
    o[r][on - 1] = j;
    LIndex oi = kb_view_index(kb, &m->cv, o[r]);
    if (pass == MM_ZERO) {
      buf_store(kb, in, m->acc, oi, kb_num(kb, m->cd, 0, 0));
      continue;
    }
    int l = let_local(kb, in, buf_load(kb, m->acc, oi));
    kb_local_at(kb, mm, l, o[r]);
    if (mm->mode == NM_STORED && m->own != mm)
      kb_store_node(kb, in, mm, o[r], kb_local_ref(kb, l));
    for (int i = 1; i < m->ns->len; i++) {
      const Node *e = m->ns->data[i];
      TD_ASSERT(op_is_elementwise(e->op) && same_shape(&e->out->view, ov));
      kb_store_node(kb, in, e, o[r], kb_node_expr(kb, e, o[r]));
    }
  }
}

// One pass over rows row .. row + nrows (of dim rd; one row without it) of the column
// tile jbase + 0..jext: blocks of MM_R rows, then the rest.
static void mm_rows(KB *kb, const MMRows *m, LStmtList *into, MMPass pass, LIndex row, int64_t nrows, LIndex jbase,
                    int64_t jext, LIndex kbase, int64_t kext) {
  int64_t R = m->rd >= 0 ? MM_R : 1, nb = nrows / R;
  LIndex at;
  if (nb)
    mm_block(kb, m, step_loop(kb, into, nb, row, R, false, &at), pass, at, (int)R, jbase, jext, kbase, kext);
  at = row;
  at.base += nb * R;
  if (nrows % R)
    mm_block(kb, m, into, pass, at, (int)(nrows % R), jbase, jext, kbase, kext);
}

// Rows row .. row + nrows of the column tile jbase + 0..jext, whole: zero, k blocks of
// m->kc terms (then the rest), results.
static void mm_tile(KB *kb, const MMRows *m, LStmtList *into, LIndex row, int64_t nrows, LIndex jbase, int64_t jext) {
  LIndex none = kb_ix_const(0), k0;
  int64_t nk = m->K / m->kc;
  mm_rows(kb, m, into, MM_ZERO, row, nrows, jbase, jext, none, 0);
  if (nk)
    mm_rows(kb, m, step_loop(kb, into, nk, none, m->kc, false, &k0), MM_ADD, row, nrows, jbase, jext, k0, m->kc);
  if (m->K % m->kc)
    mm_rows(kb, m, into, MM_ADD, row, nrows, jbase, jext, kb_ix_const(nk * m->kc), m->K % m->kc);
  if (!(m->own == m->ns->data[0] && m->ns->len == 1))  // else the result is in place
    mm_rows(kb, m, into, MM_FINAL, row, nrows, jbase, jext, none, 0);
}

// Rows row .. row + nrows, every column: tiles of m->jt columns, then the rest.
static void mm_macro(KB *kb, const MMRows *m, LStmtList *into, LIndex row, int64_t nrows, bool par) {
  int64_t nt = m->N / m->jt;
  LIndex j0;
  if (nt)
    mm_tile(kb, m, step_loop(kb, into, nt, kb_ix_const(0), m->jt, par && nt > 1, &j0), row, nrows, j0, m->jt);
  if (m->N % m->jt)
    mm_tile(kb, m, into, row, nrows, kb_ix_const(nt * m->jt), m->N % m->jt);
}

// Builds the row schedule when it makes the innermost loop walk memory with unit
// stride in more operands than build_matmul's k loop does; false: not built.
static bool build_matmul_rows(KB *kb, const NodeList *ns) {
  const Node *mm = ns->data[0];
  const View *ov = &mm->out->view, *av = &mm->srcs[0]->view, *bv = &mm->srcs[1]->view;
  int on = ov->ndim;
  int64_t K = av->shape[av->ndim - 1];
  if (on == 0 || K <= 1 || ov->shape[on - 1] <= 1 || view_numel(*ov) == 0)
    return false;
  int64_t N = ov->shape[on - 1];
  // which operand walks j, and each operand's strides along j, k and the row dim
  LIndex o[TD_MAX_DIMS], ai[TD_MAX_DIMS], bi[TD_MAX_DIMS];
  for (int d = 0; d < on; d++)
    o[d] = ov->shape[d] == 1 ? kb_ix_const(0) : kb_ix_var(PROBE_VAR + d);
  kb_matmul_indices(mm, o, kb_ix_var(PROBE_VAR + on), ai, bi);
  LIndex ia = kb_view_index(kb, av, ai), ib = kb_view_index(kb, bv, bi);
  int64_t aj = ix_coef(&ia, PROBE_VAR + on - 1), bj = ix_coef(&ib, PROBE_VAR + on - 1);
  int64_t ak = ix_coef(&ia, PROBE_VAR + on), bk = ix_coef(&ib, PROBE_VAR + on);
  if ((aj != 0) == (bj != 0))
    return false;
  int strided_k = (iabs(ak) > 1) + (iabs(bk) > 1), strided_j = iabs(aj ? aj : bj) > 1;
  if (strided_j >= strided_k)
    return false;
  kb_value(kb, mm->srcs[0], ai);  // the operands come first in the kernel's args
  kb_value(kb, mm->srcs[1], bi);
  MMRows m = {.ns = ns, .cd = kb_compute_dtype(mm->out->dtype), .bwalks = bj != 0, .rd = -1, .K = K, .N = N};
  if (mm->mode == NM_STORED && mm->out->dtype == m.cd)
    m.own = mm;
  for (int i = 1; i < ns->len && !m.own; i++)
    if (ns->data[i]->out->dtype == m.cd)
      m.own = ns->data[i];
  m.acc = m.own ? kb->buf_of[m.own->out->buf->id] : kb_new_temp(kb, m.cd, view_numel(*ov), "acc");
  TD_ASSERT(m.acc >= 0);
  m.cv = view_contiguous(on, ov->shape);
  if (on >= 2 && ov->shape[on - 2] > 1 && !ix_coef(m.bwalks ? &ib : &ia, PROBE_VAR + on - 2))
    m.rd = on - 2;
  m.jt = N < 2 * MM_JT ? N : MM_JT;  // a whole row of acc when it is not too long
  // the outer loops: every output dim but rd and j
  int dims[TD_MAX_DIMS], nd = 0;
  int64_t bat = 1, M = m.rd >= 0 ? ov->shape[m.rd] : 1;
  for (int d = 0; d < on; d++) {
    m.o[d] = kb_ix_const(0);
    if (d < on - 1 && d != m.rd && ov->shape[d] > 1)
      dims[nd++] = d, bat *= ov->shape[d];
  }
  // macro blocks of MC rows, about PARALLEL_MIN_ITERS of them. The parallel loop is
  // the first of batch and macro rows to reach PARALLEL_MIN_ITERS iterations, or the
  // column tiles, made smaller, when they give more iterations than rows do
  int64_t mc = M / (MM_R * PARALLEL_MIN_ITERS), cb = block_size(N, 1);
  mc = MM_R * (mc < 1 ? 1 : mc > MM_MC / MM_R ? MM_MC / MM_R : mc);
  if (mc > M)
    mc = M;
  bool par = view_numel(*ov) * K >= PARALLEL_WORK;
  bool pcol = par && bat * (M / mc) < PARALLEL_MIN_ITERS && cb && N / cb > bat * (M / mc);
  if (pcol)
    mc = M, m.jt = cb < m.jt ? cb : m.jt;
  bool pmac = par && !pcol && bat < PARALLEL_MIN_ITERS && M / mc > 1;
  m.kc = MM_PANEL / (m.jt * dtype_size(mm->srcs[m.bwalks ? 1 : 0]->dtype)) / MM_U * MM_U;
  if (m.kc < MM_U)
    m.kc = MM_U;
  LStmtList *body = outer_loops(kb, &kb->k->body, nd, dims, ov->shape, m.o, par && !pcol && !pmac);
  LIndex i0;
  if (M / mc)
    mm_macro(kb, &m, step_loop(kb, body, M / mc, kb_ix_const(0), mc, pmac, &i0), i0, mc, pcol);
  if (M % mc)
    mm_macro(kb, &m, body, kb_ix_const(M - M % mc), M % mc, false);
  return true;
}

// ============================================================================
// ROW: reductions / softmax over the same input shape and reduced dims, then
// elementwise epilogues over the reduced or the input shape
// ============================================================================
typedef struct Row {
  const View *xv;  // the row nodes' input shape
  uint32_t mask;   // reduced dims of it
  LIndex xidx[TD_MAX_DIMS];  // outer dims: the outer loop vars
  LStmtList *body;           // inside the outer loops
  int64_t n;                 // elements per row
  const Node *done[64];      // row nodes already computed, for reuse
  int ndone;
} Row;

// A pass over the current row: loops over the reduced dims; idx gets the input index.
static LStmtList *row_pass(KB *kb, Row *r, LIndex *idx) {
  LStmtList *into = r->body;
  for (int d = 0; d < r->xv->ndim; d++) {
    if (!(r->mask >> d & 1)) {
      idx[d] = r->xidx[d];
      continue;
    }
    if (r->xv->shape[d] == 1) {
      idx[d] = kb_ix_const(0);
      continue;
    }
    int v = kb_new_var(kb);
    LStmt *s = kb_loop(kb, v, r->xv->shape[d]);
    push(kb, into, s);
    into = &s->body;
    idx[d] = kb_ix_var(v);
  }
  return into;
}

// The row-major position of idx within the reduced dims `mask` of xv (argmax's answer).
static LIndex row_position(KB *kb, const View *xv, uint32_t mask, const LIndex *idx) {
  LIndex pos = kb_ix_const(0);
  int64_t mul = 1;
  for (int d = xv->ndim - 1; d >= 0; d--)
    if (mask >> d & 1) {
      kb_ix_addmul(kb, &pos, &idx[d], mul);
      mul *= xv->shape[d];
    }
  return pos;
}

static LExpr *inf_of(KB *kb, DType dt, bool neg, bool for_max) {
  // the identity of max (for_max) or min in dt
  if (dtype_is_float(dt))
    return kb_fconst(kb, dt, neg ? -INFINITY : INFINITY);
  if (dt == DT_BOOL)
    return kb_iconst(kb, dt, for_max ? 0 : 1);
  int64_t lo = dt == DT_I32 ? INT32_MIN : INT64_MIN, hi = dt == DT_I32 ? INT32_MAX : INT64_MAX;
  return kb_iconst(kb, dt, neg ? lo : hi);
}

// One accumulation pass: local acc (init) updated by acc = acc op f(x) over the row.
static int row_fold(KB *kb, Row *r, const Node *n, Op op, DType cd, LExpr *init, int sub_local, bool square) {
  int acc = kb_new_local(kb, cd);
  push(kb, r->body, kb_let(kb, acc, init));
  LIndex idx[TD_MAX_DIMS];
  LStmtList *in = row_pass(kb, r, idx);
  LExpr *x = kb_cast(kb, kb_value(kb, n->srcs[0], idx), cd);
  if (sub_local >= 0)
    x = kb_binary(kb, OP_SUB, cd, x, kb_local_ref(kb, sub_local));
  if (square)
    x = kb_unary(kb, OP_SQUARE, cd, x);
  if (op == OP_EXP) {  // sum of exp
    x = kb_unary(kb, OP_EXP, cd, x);
    op = OP_ADD;
  }
  push(kb, in, kb_set(kb, acc, kb_arith(kb, op, cd, kb_local_ref(kb, acc), x)));
  return acc;
}

// Whether x replaces the best so far of argmax (mx) or argmin, both of dtype cd.
static LExpr *argext_cond(KB *kb, bool mx, DType cd, LExpr *xv, LExpr *bv) {
  LExpr *cond = kb_binary(kb, mx ? OP_GT : OP_LT, DT_BOOL, xv, bv);
  if (dtype_is_float(cd)) {  // nan is the extreme; the first nan wins
    LExpr *xnan = kb_binary(kb, OP_NE, DT_BOOL, xv, xv), *bnum = kb_binary(kb, OP_EQ, DT_BOOL, bv, bv);
    cond = kb_binary(kb, OP_LOGICAL_OR, DT_BOOL, cond, kb_binary(kb, OP_LOGICAL_AND, DT_BOOL, xnan, bnum));
  }
  return cond;
}

static int row_argext(KB *kb, Row *r, const Node *n) {
  DType cd = kb_compute_dtype(n->srcs[0]->dtype);
  bool mx = n->op == OP_ARGMAX;
  int best = let_local(kb, r->body, inf_of(kb, cd, mx, mx));
  int pos = let_local(kb, r->body, kb_iconst(kb, DT_I64, 0));
  LIndex idx[TD_MAX_DIMS];
  LStmtList *in = row_pass(kb, r, idx);
  int x = let_local(kb, in, kb_cast(kb, kb_value(kb, n->srcs[0], idx), cd));
  LExpr *cond = argext_cond(kb, mx, cd, kb_local_ref(kb, x), kb_local_ref(kb, best));
  LStmt *upd = kb_if(kb, cond);
  push(kb, in, upd);
  push(kb, &upd->body, kb_set(kb, best, kb_local_ref(kb, x)));
  LIndex p = row_position(kb, r->xv, r->mask, idx);
  push(kb, &upd->body, kb_set(kb, pos, kb_ix_expr(kb, &p)));
  return pos;
}

// Row node n's result is `local`, valid at the reduced index of input index xidx (the
// kept dims' indices; keepdim dims have size 1).
static void reduced_local(KB *kb, const Node *n, const View *xv, uint32_t mask, const LIndex *xidx, int local) {
  LocalVal *lv = &kb->lv[n->id];
  lv->kind = LV_LOCAL;
  lv->local = local;
  lv->nat = n->out->view.ndim;
  int o = 0;
  for (int d = 0; d < xv->ndim; d++) {
    if (!(mask >> d & 1)) {
      lv->at[o] = xidx[d];
      lv->fixed[o++] = true;
    } else if (n->attr.keepdim) {
      lv->at[o] = kb_ix_const(0);
      lv->fixed[o++] = false;
    }
  }
  TD_ASSERT(o == lv->nat);
}

// The local of a mean of the same input in dtype cd already computed on this row, or -1.
static int same_mean(KB *kb, const Row *r, const Node *n, DType cd) {
  const Value *x = n->srcs[0];
  for (int i = 0; i < r->ndone; i++) {
    const Node *m = r->done[i];
    const Value *y = m->srcs[0];
    const LocalVal *lv = &kb->lv[m->id];
    if (m->op == OP_MEAN && lv->kind == LV_LOCAL && kb->k->locals.data[lv->local] == cd &&
        (x == y || (x->buf == y->buf && x->buf && view_equal(x->view, y->view))) && x->dtype == y->dtype)
      return lv->local;
  }
  return -1;
}

// Computes row node n over the current row; sets its LocalVal.
static void row_node(KB *kb, Row *r, const Node *n) {
  DType od = n->out->dtype, cd = kb_compute_dtype(od);
  LocalVal *lv = &kb->lv[n->id];
  int res = -1;
  LExpr *N = kb_num(kb, dtype_is_float(cd) ? cd : DT_F64, (double)r->n, r->n);
  switch (n->op) {
  case OP_SUM: res = row_fold(kb, r, n, OP_ADD, cd, kb_num(kb, cd, 0, 0), -1, false); break;
  case OP_PROD: res = row_fold(kb, r, n, OP_MUL, cd, kb_num(kb, cd, 1, 1), -1, false); break;
  case OP_MEAN: {
    int s = row_fold(kb, r, n, OP_ADD, cd, kb_num(kb, cd, 0, 0), -1, false);
    res = let_local(kb, r->body, kb_binary(kb, OP_DIV, cd, kb_local_ref(kb, s), N));
    break;
  }
  case OP_AMAX: case OP_MAX:
    res = row_fold(kb, r, n, OP_MAXIMUM, cd, inf_of(kb, cd, true, true), -1, false);
    break;
  case OP_AMIN: case OP_MIN:
    res = row_fold(kb, r, n, OP_MINIMUM, cd, inf_of(kb, cd, false, false), -1, false);
    break;
  case OP_ALL: res = row_fold(kb, r, n, OP_LOGICAL_AND, DT_BOOL, kb_iconst(kb, DT_BOOL, 1), -1, false); break;
  case OP_ANY: res = row_fold(kb, r, n, OP_LOGICAL_OR, DT_BOOL, kb_iconst(kb, DT_BOOL, 0), -1, false); break;
  case OP_VAR: case OP_STD: {  // two passes: the mean (reused if computed), then the squared deviations
    int m = same_mean(kb, r, n, cd);
    if (m < 0) {
      int s = row_fold(kb, r, n, OP_ADD, cd, kb_num(kb, cd, 0, 0), -1, false);
      m = let_local(kb, r->body, kb_binary(kb, OP_DIV, cd, kb_local_ref(kb, s), N));
    }
    int ss = row_fold(kb, r, n, OP_ADD, cd, kb_num(kb, cd, 0, 0), m, true);
    int64_t div = r->n - (n->attr.unbiased ? 1 : 0);
    LExpr *v = kb_binary(kb, OP_DIV, cd, kb_local_ref(kb, ss), kb_fconst(kb, cd, (double)(div > 0 ? div : 0)));
    if (n->op == OP_STD)
      v = kb_unary(kb, OP_SQRT, cd, v);
    res = let_local(kb, r->body, v);
    break;
  }
  case OP_LOGSUMEXP: {  // max-shifted; an infinite max shifts by 0 (all -inf gives -inf)
    int m = row_fold(kb, r, n, OP_MAXIMUM, cd, inf_of(kb, cd, true, true), -1, false);
    LExpr *mv = kb_local_ref(kb, m);
    LExpr *isinf = kb_binary(kb, OP_EQ, DT_BOOL, kb_unary(kb, OP_ABS, cd, mv), kb_fconst(kb, cd, INFINITY));
    int sh = let_local(kb, r->body, kb_select(kb, isinf, kb_fconst(kb, cd, 0), mv));
    int s = row_fold(kb, r, n, OP_EXP, cd, kb_fconst(kb, cd, 0), sh, false);
    res = let_local(kb, r->body,
                    kb_binary(kb, OP_ADD, cd, kb_unary(kb, OP_LOG, cd, kb_local_ref(kb, s)), kb_local_ref(kb, sh)));
    break;
  }
  case OP_ARGMAX: case OP_ARGMIN: res = row_argext(kb, r, n); break;
  case OP_SOFTMAX: case OP_LOG_SOFTMAX: {
    int m = row_fold(kb, r, n, OP_MAXIMUM, cd, inf_of(kb, cd, true, true), -1, false);
    int s = row_fold(kb, r, n, OP_EXP, cd, kb_fconst(kb, cd, 0), m, false);
    // log_softmax subtracts log(sum); softmax multiplies by 1 / sum, as PyTorch's CPU
    // kernel does (a division per element would cost more and round differently)
    if (n->op == OP_LOG_SOFTMAX)
      s = let_local(kb, r->body, kb_unary(kb, OP_LOG, cd, kb_local_ref(kb, s)));
    else
      s = let_local(kb, r->body, kb_binary(kb, OP_DIV, cd, kb_fconst(kb, cd, 1), kb_local_ref(kb, s)));
    lv->kind = LV_SOFTMAX;
    lv->max = m;
    lv->sum = s;
    lv->nat = r->xv->ndim;
    for (int d = 0; d < r->xv->ndim; d++)
      lv->at[d] = r->xidx[d], lv->fixed[d] = !(r->mask >> d & 1);
    return;
  }
  default: td_unreachable();
  }
  reduced_local(kb, n, r->xv, r->mask, r->xidx, res);
}

// The index of a node of the reduced shape (with or without keepdim) of input shape xv
// reduced over `mask`, at input index xidx (only its kept dims are read); false if
// its shape is neither.
static bool reduced_index(const View *xv, uint32_t mask, const LIndex *xidx, const View *v, LIndex *idx) {
  int nout = 0;
  for (int d = 0; d < xv->ndim; d++)
    nout += !(mask >> d & 1);
  if (v->ndim == nout) {
    int o = 0;
    for (int d = 0; d < xv->ndim; d++)
      if (!(mask >> d & 1)) {
        if (v->shape[o] != xv->shape[d])
          return false;
        idx[o++] = xidx[d];
      }
    return true;
  }
  if (v->ndim != xv->ndim)
    return false;
  for (int d = 0; d < v->ndim; d++) {
    bool red = mask >> d & 1;
    if (v->shape[d] != (red ? 1 : xv->shape[d]))
      return false;
    idx[d] = red ? kb_ix_const(0) : xidx[d];
  }
  return true;
}

static void build_row(KB *kb, const NodeList *ns) {
  const Node *first = ns->data[0];
  Row r = {.xv = &first->srcs[0]->view, .mask = first->attr.dims};
  int64_t total = view_numel(*r.xv);
  r.n = 1;
  for (int d = 0; d < r.xv->ndim; d++)
    if (r.mask >> d & 1)
      r.n *= r.xv->shape[d];
  // outer loops: the dims that are not reduced
  int64_t oshape[TD_MAX_DIMS];
  int no = 0;
  for (int d = 0; d < r.xv->ndim; d++)
    if (!(r.mask >> d & 1))
      oshape[no++] = r.xv->shape[d];
  LIndex oidx[TD_MAX_DIMS];
  r.body = nest(kb, &kb->k->body, no, oshape, oidx, total >= PARALLEL_WORK);
  for (int d = 0, o = 0; d < r.xv->ndim; d++)
    r.xidx[d] = (r.mask >> d & 1) ? kb_ix_const(0) : oidx[o++];
  int i = 0;
  for (; i < ns->len && op_is_row(ns->data[i]->op); i++) {
    const Node *n = ns->data[i];
    TD_ASSERT(same_shape(&n->srcs[0]->view, r.xv) && n->attr.dims == r.mask);
    row_node(kb, &r, n);
    if (r.ndone < 64)
      r.done[r.ndone++] = n;
  }
  // results of the reduced shape, then a last pass over the row for the rest
  NodeList full = {0};
  for (int j = 0; j < ns->len; j++) {
    const Node *n = ns->data[j];
    LIndex idx[TD_MAX_DIMS];
    bool softmax = n->op == OP_SOFTMAX || n->op == OP_LOG_SOFTMAX;
    if (j >= i)
      TD_ASSERT(op_is_elementwise(n->op));
    if (n->mode != NM_STORED && j < i)
      continue;
    bool full_shape = j >= i && same_shape(&n->out->view, r.xv);
    if (softmax || (full_shape && !reduced_index(r.xv, r.mask, r.xidx, &n->out->view, idx))) {
      vec_push(&kb->cx->arena, &full, n);
      continue;
    }
    TD_ASSERT(reduced_index(r.xv, r.mask, r.xidx, &n->out->view, idx));
    kb_store_node(kb, r.body, n, idx, j < i ? kb_cast(kb, kb_local_ref(kb, kb->lv[n->id].local), n->out->dtype)
                                            : kb_node_expr(kb, n, idx));
  }
  if (full.len == 0)
    return;
  LIndex idx[TD_MAX_DIMS];
  LStmtList *in = row_pass(kb, &r, idx);
  for (int j = 0; j < full.len; j++) {
    const Node *n = full.data[j];
    TD_ASSERT(same_shape(&n->out->view, r.xv));
    bool softmax = n->op == OP_SOFTMAX || n->op == OP_LOG_SOFTMAX;
    kb_store_node(kb, in, n, idx, softmax ? kb_softmax_value(kb, n, idx) : kb_node_expr(kb, n, idx));
  }
}

// ============================================================================
// COL: a ROW kernel whose input's unit-stride dim is kept (x.sum(0) of a row-major
// x). Run row by row, its reduction loop would stride through memory; the column
// schedule runs the input's dims in memory order instead, every pass sweeping whole
// rows of partial results held in buffers (a result's own buffer when it is stored in
// the accumulator's dtype, else a temp of the reduced shape):
//   for o in outer kept dims [parallel] {
//     for j in inner kept dims: acc[o, j] = identity
//     for the reduced and inner kept dims, in memory order: acc[o, j] = acc[o, j] op x[..]
//     for j in inner kept dims: out[o, j] = finish(acc[o, j]); epilogues
//   }
// (var/std: a mean pass, a pass dividing it, a pass of squared deviations; argmax:
// the best value in a temp, the position in the result; logsumexp: the max pass, its
// shift, the pass of exp). The reduced dims keep their row-major order among
// themselves, so every output combines the same terms in the same order as build_row:
// bit-identical. With fewer than PARALLEL_MIN_ITERS outer iterations the outermost
// inner kept dim is split into blocks run in parallel (plus a serial tail). Kernels
// whose epilogues need the input's shape (softmax, a row epilogue) or whose row nodes
// read each other keep build_row.
// ============================================================================
typedef struct Col {
  const View *xv;
  uint32_t mask;                 // reduced dims of xv
  int64_t n;                     // elements reduced into each output
  int order[TD_MAX_DIMS], nord;  // xv's dims of size > 1, in loop order
  int nouter;                    // order[0..nouter): kept dims looped outside every pass
  int64_t ostride[TD_MAX_DIMS];  // kept dims: their stride in the contiguous reduced shape
  int bdim;                      // the kept dim split into blocks, -1 if none
  LIndex bbase;                  // this instance's first index of bdim
  int64_t bext;                  // and its extent
  LIndex xidx[TD_MAX_DIMS];      // outer kept dims: their loop vars; other dims 0
  LStmtList *body;               // where this instance's passes go
  int *acc, *aux;                // per row node: its accumulator buffer and a second one (-1: none)
} Col;

static bool reduced(const Col *c, int d) { return c->mask >> d & 1; }

// The loops of a pass over order[nouter..]: every dim (all) or the kept ones only; idx
// gets the input index (the reduced dims 0 when not looped).
static LStmtList *col_pass(KB *kb, const Col *c, bool all, LIndex *idx) {
  LStmtList *into = c->body;
  memcpy(idx, c->xidx, sizeof(LIndex) * (size_t)c->xv->ndim);
  for (int p = c->nouter; p < c->nord; p++) {
    int d = c->order[p];
    if (reduced(c, d) && !all)
      continue;
    int v = kb_new_var(kb);
    LStmt *s = kb_loop(kb, v, d == c->bdim ? c->bext : c->xv->shape[d]);
    push(kb, into, s);
    into = &s->body;
    idx[d] = kb_ix_var(v);
    if (d == c->bdim)
      kb_ix_addmul(kb, &idx[d], &c->bbase, 1);
  }
  return into;
}

// The accumulators' element for input index idx (the contiguous reduced index).
static LIndex col_slot(KB *kb, const Col *c, const LIndex *idx) {
  LIndex o = kb_ix_const(0);
  for (int d = 0; d < c->xv->ndim; d++)
    if (!reduced(c, d) && c->xv->shape[d] > 1)
      kb_ix_addmul(kb, &o, &idx[d], c->ostride[d]);
  return o;
}

// A pass acc = acc op f(x) over every dim, f as in row_fold (sub: a buffer to subtract).
static void col_fold(KB *kb, const Col *c, const Node *n, int acc, Op op, DType cd, int sub, bool square) {
  LIndex idx[TD_MAX_DIMS];
  LStmtList *in = col_pass(kb, c, true, idx);
  LIndex o = col_slot(kb, c, idx);
  LExpr *x = kb_cast(kb, kb_value(kb, n->srcs[0], idx), cd);
  if (sub >= 0)
    x = kb_binary(kb, OP_SUB, cd, x, buf_load(kb, sub, o));
  if (square)
    x = kb_unary(kb, OP_SQUARE, cd, x);
  if (op == OP_EXP) {  // sum of exp
    x = kb_unary(kb, OP_EXP, cd, x);
    op = OP_ADD;
  }
  buf_store(kb, in, acc, o, kb_arith(kb, op, cd, buf_load(kb, acc, o), x));
}

// The argmax/argmin pass: best value in `best`, its row-major position in `pos`.
static void col_argext(KB *kb, const Col *c, const Node *n, int best, int pos) {
  DType cd = kb_compute_dtype(n->srcs[0]->dtype);
  LIndex idx[TD_MAX_DIMS];
  LStmtList *in = col_pass(kb, c, true, idx);
  LIndex o = col_slot(kb, c, idx);
  int x = let_local(kb, in, kb_cast(kb, kb_value(kb, n->srcs[0], idx), cd));
  int b = let_local(kb, in, buf_load(kb, best, o));
  LStmt *upd = kb_if(kb, argext_cond(kb, n->op == OP_ARGMAX, cd, kb_local_ref(kb, x), kb_local_ref(kb, b)));
  push(kb, in, upd);
  buf_store(kb, &upd->body, best, o, kb_local_ref(kb, x));
  LIndex p = row_position(kb, c->xv, c->mask, idx);
  buf_store(kb, &upd->body, pos, o, kb_ix_expr(kb, &p));
}

// Whether row node i's result is its accumulator and that is its own buffer.
static bool col_in_place(const KB *kb, const Col *c, const Node *n, int i) {
  bool bare = n->op != OP_MEAN && n->op != OP_VAR && n->op != OP_STD && n->op != OP_LOGSUMEXP;
  return bare && n->mode == NM_STORED && c->acc[i] == kb->buf_of[n->out->buf->id];
}

// One copy of the passes over the current block (or everything): init, the row
// nodes' passes, and the final pass that stores results and epilogues.
static void col_instance(KB *kb, const Col *c, const NodeList *ns, int nrow) {
  LIndex idx[TD_MAX_DIMS];
  LStmtList *in = col_pass(kb, c, false, idx);
  LIndex o = col_slot(kb, c, idx);
  for (int i = 0; i < nrow; i++) {
    const Node *n = ns->data[i];
    DType cd = kb_compute_dtype(n->out->dtype), xd = kb_compute_dtype(n->srcs[0]->dtype);
    LExpr *init;
    switch (n->op) {
    case OP_PROD: init = kb_num(kb, cd, 1, 1); break;
    case OP_AMAX: case OP_MAX: init = inf_of(kb, cd, true, true); break;
    case OP_AMIN: case OP_MIN: init = inf_of(kb, cd, false, false); break;
    case OP_ALL: init = kb_iconst(kb, DT_BOOL, 1); break;
    case OP_ANY: init = kb_iconst(kb, DT_BOOL, 0); break;
    case OP_ARGMAX: case OP_ARGMIN: {
      bool mx = n->op == OP_ARGMAX;
      buf_store(kb, in, c->aux[i], o, inf_of(kb, xd, mx, mx));
      init = kb_iconst(kb, DT_I64, 0);
      break;
    }
    case OP_LOGSUMEXP:
      buf_store(kb, in, c->aux[i], o, inf_of(kb, cd, true, true));
      init = kb_fconst(kb, cd, 0);
      break;
    case OP_VAR: case OP_STD:
      buf_store(kb, in, c->aux[i], o, kb_num(kb, cd, 0, 0));
      init = kb_num(kb, cd, 0, 0);
      break;
    default: init = kb_num(kb, cd, 0, 0); break;  // sum, mean
    }
    buf_store(kb, in, c->acc[i], o, init);
  }
  for (int i = 0; i < nrow; i++) {
    const Node *n = ns->data[i];
    DType cd = kb_compute_dtype(n->out->dtype);
    LExpr *N = kb_num(kb, dtype_is_float(cd) ? cd : DT_F64, (double)c->n, c->n);
    int acc = c->acc[i], aux = c->aux[i];
    switch (n->op) {
    case OP_SUM: case OP_MEAN: col_fold(kb, c, n, acc, OP_ADD, cd, -1, false); break;
    case OP_PROD: col_fold(kb, c, n, acc, OP_MUL, cd, -1, false); break;
    case OP_AMAX: case OP_MAX: col_fold(kb, c, n, acc, OP_MAXIMUM, cd, -1, false); break;
    case OP_AMIN: case OP_MIN: col_fold(kb, c, n, acc, OP_MINIMUM, cd, -1, false); break;
    case OP_ALL: col_fold(kb, c, n, acc, OP_LOGICAL_AND, DT_BOOL, -1, false); break;
    case OP_ANY: col_fold(kb, c, n, acc, OP_LOGICAL_OR, DT_BOOL, -1, false); break;
    case OP_ARGMAX: case OP_ARGMIN: col_argext(kb, c, n, aux, acc); break;
    case OP_VAR: case OP_STD:  // the mean, then the squared deviations from it
      col_fold(kb, c, n, aux, OP_ADD, cd, -1, false);
      in = col_pass(kb, c, false, idx);
      o = col_slot(kb, c, idx);
      buf_store(kb, in, aux, o, kb_binary(kb, OP_DIV, cd, buf_load(kb, aux, o), N));
      col_fold(kb, c, n, acc, OP_ADD, cd, aux, true);
      break;
    case OP_LOGSUMEXP: {  // the max, the shift (0 for an infinite max), the sum of exp
      col_fold(kb, c, n, aux, OP_MAXIMUM, cd, -1, false);
      in = col_pass(kb, c, false, idx);
      o = col_slot(kb, c, idx);
      LExpr *mv = buf_load(kb, aux, o);
      LExpr *isinf = kb_binary(kb, OP_EQ, DT_BOOL, kb_unary(kb, OP_ABS, cd, mv), kb_fconst(kb, cd, INFINITY));
      buf_store(kb, in, aux, o, kb_select(kb, isinf, kb_fconst(kb, cd, 0), mv));
      col_fold(kb, c, n, acc, OP_EXP, cd, aux, false);
      break;
    }
    default: td_unreachable();
    }
  }
  bool final = ns->len > nrow;
  for (int i = 0; i < nrow; i++)
    final |= !col_in_place(kb, c, ns->data[i], i);
  if (!final)
    return;
  in = col_pass(kb, c, false, idx);
  o = col_slot(kb, c, idx);
  for (int i = 0; i < nrow; i++) {
    const Node *n = ns->data[i];
    if (col_in_place(kb, c, n, i) && ns->len == nrow)
      continue;  // done, and no epilogue reads it
    DType cd = kb_compute_dtype(n->out->dtype);
    LExpr *N = kb_num(kb, dtype_is_float(cd) ? cd : DT_F64, (double)c->n, c->n);
    LExpr *v = buf_load(kb, c->acc[i], o);
    switch (n->op) {
    case OP_MEAN: v = kb_binary(kb, OP_DIV, cd, v, N); break;
    case OP_VAR: case OP_STD: {
      int64_t div = c->n - (n->attr.unbiased ? 1 : 0);
      v = kb_binary(kb, OP_DIV, cd, v, kb_fconst(kb, cd, (double)(div > 0 ? div : 0)));
      if (n->op == OP_STD)
        v = kb_unary(kb, OP_SQRT, cd, v);
      break;
    }
    case OP_LOGSUMEXP: v = kb_binary(kb, OP_ADD, cd, kb_unary(kb, OP_LOG, cd, v), buf_load(kb, c->aux[i], o)); break;
    default: break;
    }
    int l = let_local(kb, in, v);
    reduced_local(kb, n, c->xv, c->mask, idx, l);
    if (n->mode != NM_STORED || col_in_place(kb, c, n, i))
      continue;
    LIndex oi[TD_MAX_DIMS];
    TD_ASSERT(reduced_index(c->xv, c->mask, idx, &n->out->view, oi));
    kb_store_node(kb, in, n, oi, kb_local_ref(kb, l));
  }
  for (int j = nrow; j < ns->len; j++) {
    const Node *n = ns->data[j];
    LIndex oi[TD_MAX_DIMS];
    TD_ASSERT(op_is_elementwise(n->op) && reduced_index(c->xv, c->mask, idx, &n->out->view, oi));
    kb_store_node(kb, in, n, oi, kb_node_expr(kb, n, oi));
  }
}

// Whether v, through the producers it recomputes, reads a row node of this kernel.
static bool reads_kernel_row(const KB *kb, const Value *v) {
  if (v->is_scalar || !v->buf || v->buf->kind != BUF_KERNEL)
    return false;
  const Node *n = v->buf->producer;
  if (n->kernel == kb->kid && op_is_row(n->op))
    return true;
  if (n->mode != NM_INLINE && !(n->kernel == kb->kid && op_is_elementwise(n->op)))
    return false;
  for (int i = 0; i < n->nsrc; i++)
    if (reads_kernel_row(kb, n->srcs[i]))
      return true;
  return false;
}

// stride[d]: the smallest nonzero |coefficient| of probe variable PROBE_VAR + d over
// the loads of e (dim d's memory stride; untouched where no load moves with d).
static void probe_strides(const LExpr *e, int nd, int64_t *stride) {
  if (!e)
    return;
  if (e->kind == LX_LOAD) {
    for (int t = 0; t < e->idx.nterms; t++) {
      int d = e->idx.var[t] - PROBE_VAR;
      int64_t s = iabs(e->idx.coef[t]);
      if (d >= 0 && d < nd && s && (!stride[d] || s < stride[d]))
        stride[d] = s;
    }
    probe_strides(e->idx.dyn, nd, stride);
  }
  probe_strides(e->a, nd, stride);
  probe_strides(e->b, nd, stride);
  probe_strides(e->c, nd, stride);
}

// The loop order of the column schedule, or false when the row schedule is kept: dims
// by decreasing memory stride of the inputs' loads, the reduced ones then put back in
// their row-major order in the places they got; the column schedule applies when the
// innermost dim is kept.
static bool col_plan(KB *kb, const NodeList *ns, int nrow, Col *c) {
  const Node *first = ns->data[0];
  c->xv = &first->srcs[0]->view;
  c->mask = first->attr.dims;
  const View *xv = c->xv;
  if (view_numel(*xv) == 0)
    return false;
  LIndex zero[TD_MAX_DIMS], oi[TD_MAX_DIMS], pidx[TD_MAX_DIMS];
  for (int d = 0; d < xv->ndim; d++) {
    zero[d] = kb_ix_const(0);
    pidx[d] = xv->shape[d] == 1 ? kb_ix_const(0) : kb_ix_var(PROBE_VAR + d);
  }
  for (int i = 0; i < ns->len; i++) {
    const Node *n = ns->data[i];
    if (i >= nrow) {  // epilogues: of the reduced shape only
      if (!reduced_index(xv, c->mask, zero, &n->out->view, oi))
        return false;
      continue;
    }
    switch (n->op) {
    case OP_SUM: case OP_PROD: case OP_MEAN: case OP_AMAX: case OP_MAX: case OP_AMIN: case OP_MIN: case OP_ALL:
    case OP_ANY: case OP_VAR: case OP_STD: case OP_LOGSUMEXP: case OP_ARGMAX: case OP_ARGMIN: break;
    default: return false;  // softmax, log_softmax
    }
    if (reads_kernel_row(kb, n->srcs[0]))
      return false;
  }
  int64_t stride[TD_MAX_DIMS] = {0};
  for (int i = 0; i < nrow; i++)
    probe_strides(kb_value(kb, ns->data[i]->srcs[0], pidx), xv->ndim, stride);
  c->nord = 0;
  for (int d = 0; d < xv->ndim; d++)
    if (xv->shape[d] > 1)
      c->order[c->nord++] = d;
  for (int p = 1; p < c->nord; p++)  // stable; a dim no load moves with goes outermost
    for (int q = p; q > 0; q--) {
      int64_t s0 = stride[c->order[q - 1]], s1 = stride[c->order[q]];
      if ((s0 ? s0 : INT64_MAX) >= (s1 ? s1 : INT64_MAX))
        break;
      int t = c->order[q];
      c->order[q] = c->order[q - 1];
      c->order[q - 1] = t;
    }
  int red[TD_MAX_DIMS], nred = 0;
  for (int d = 0; d < xv->ndim; d++)
    if (xv->shape[d] > 1 && reduced(c, d))
      red[nred++] = d;
  for (int p = 0, r = 0; p < c->nord; p++)
    if (reduced(c, c->order[p]))
      c->order[p] = red[r++];
  if (nred == 0 || reduced(c, c->order[c->nord - 1]))
    return false;
  c->nouter = 0;
  while (!reduced(c, c->order[c->nouter]))
    c->nouter++;
  c->n = 1;
  int64_t s = 1;
  for (int d = xv->ndim - 1; d >= 0; d--) {
    if (reduced(c, d))
      c->n *= xv->shape[d];
    else
      c->ostride[d] = s, s *= xv->shape[d];
  }
  return true;
}

// An accumulator buffer of dtype dt for row node n: its own when stored in dt.
static int col_buffer(KB *kb, const Node *n, DType dt, int64_t numel, const char *what) {
  if (n->mode == NM_STORED && n->out->dtype == dt)
    return kb->buf_of[n->out->buf->id];
  return kb_new_temp(kb, dt, numel, what);
}

// Builds the column schedule when it applies; false: not built.
static bool build_col(KB *kb, const NodeList *ns) {
  int nrow = 0;
  while (nrow < ns->len && op_is_row(ns->data[nrow]->op))
    nrow++;
  Col c;
  memset(&c, 0, sizeof c);
  if (!col_plan(kb, ns, nrow, &c))
    return false;
  const View *xv = c.xv;
  int64_t onumel = view_numel(*xv) / c.n;
  c.acc = arena_alloc(&kb->cx->arena, sizeof(int) * (size_t)nrow);
  c.aux = arena_alloc(&kb->cx->arena, sizeof(int) * (size_t)nrow);
  for (int i = 0; i < nrow; i++) {
    const Node *n = ns->data[i];
    DType cd = kb_compute_dtype(n->out->dtype);
    c.aux[i] = -1;
    switch (n->op) {
    case OP_ARGMAX: case OP_ARGMIN:
      c.aux[i] = kb_new_temp(kb, kb_compute_dtype(n->srcs[0]->dtype), onumel, "best");
      break;
    case OP_VAR: case OP_STD: c.aux[i] = kb_new_temp(kb, cd, onumel, "mean"); break;
    case OP_LOGSUMEXP: c.aux[i] = kb_new_temp(kb, cd, onumel, "shift"); break;
    default: break;
    }
    c.acc[i] = col_buffer(kb, n, cd, onumel, "acc");
  }
  // the outer loops, parallel; or, with too few of them, blocks of an inner kept dim
  for (int d = 0; d < xv->ndim; d++)
    c.xidx[d] = kb_ix_const(0);
  int64_t outer = 1;
  for (int p = 0; p < c.nouter; p++)
    outer *= xv->shape[c.order[p]];
  bool par = view_numel(*xv) >= PARALLEL_WORK;
  int64_t B = 0;
  c.bdim = -1;
  if (par && outer < PARALLEL_MIN_ITERS) {
    int bp = c.nouter;
    while (reduced(&c, c.order[bp]))
      bp++;
    int64_t w = 1;
    for (int p = bp + 1; p < c.nord; p++)
      if (!reduced(&c, c.order[p]))
        w *= xv->shape[c.order[p]];
    if ((B = block_size(xv->shape[c.order[bp]], w)))
      c.bdim = c.order[bp];
  }
  LStmtList *body = outer_loops(kb, &kb->k->body, c.nouter, c.order, xv->shape, c.xidx, par && !B);
  c.body = body;
  if (!B) {
    col_instance(kb, &c, ns, nrow);
    return true;
  }
  int64_t S = xv->shape[c.bdim], nb = S / B;
  int jb = kb_new_var(kb);
  LStmt *bl = kb_loop(kb, jb, nb);
  bl->parallel = true;
  push(kb, body, bl);
  LIndex jbi = kb_ix_var(jb);
  c.bbase = kb_ix_const(0);
  kb_ix_addmul(kb, &c.bbase, &jbi, B);
  c.bext = B;
  c.body = &bl->body;
  col_instance(kb, &c, ns, nrow);
  if (S > nb * B) {
    c.bbase = kb_ix_const(nb * B);
    c.bext = S - nb * B;
    c.body = body;
    col_instance(kb, &c, ns, nrow);
  }
  return true;
}

// ============================================================================
// ONE: cat, stack, store
// ============================================================================
static void build_cat(KB *kb, const Node *n) {
  bool stack = n->op == OP_STACK;
  int a = n->attr.dim;
  int64_t off = 0;
  for (int i = 0; i < n->nsrc; i++) {
    const Value *s = n->srcs[i];
    LIndex idx[TD_MAX_DIMS], oidx[TD_MAX_DIMS];
    int64_t work = view_numel(s->view);
    LStmtList *body = nest(kb, &kb->k->body, s->view.ndim, s->view.shape, idx, work >= PARALLEL_WORK);
    for (int d = 0, k = 0; d < n->out->view.ndim; d++) {
      if (stack && d == a) {
        oidx[d] = kb_ix_const(i);
        continue;
      }
      oidx[d] = idx[k++];
      if (!stack && d == a)
        oidx[d].base += off;
    }
    if (!stack)
      off += s->view.shape[a];
    kb_store_node(kb, body, n, oidx, kb_value(kb, s, idx));
  }
}

// x[idx] = v or x[idx] op= v: srcs[0] the target view, srcs[1] the value.
static void build_store(KB *kb, const Node *n) {
  const Value *t = n->srcs[0], *v = n->srcs[1];
  int buf = kb->buf_of[t->buf->id];
  TD_ASSERT(buf >= 0);
  LIndex idx[TD_MAX_DIMS], vidx[TD_MAX_DIMS];
  LStmtList *body = nest(kb, &kb->k->body, t->view.ndim, t->view.shape, idx, view_numel(t->view) >= PARALLEL_WORK);
  // PyTorch's setitem drops the value's leading size-1 dims: align from the right
  if (!v->is_scalar) {
    int lead = t->view.ndim - v->view.ndim;
    for (int j = 0; j < v->view.ndim; j++)
      vidx[j] = (j + lead < 0 || v->view.shape[j] == 1) ? kb_ix_const(0) : idx[j + lead];
  }
  LExpr *val = kb_value(kb, v, vidx);
  if (n->attr.aug != OP_COUNT) {
    Value *both[2] = {(Value *)t, (Value *)v};
    DType cd = kb_compute_dtype(kb_result_type(both, 2));
    if (n->attr.aug == OP_DIV && !dtype_is_float(cd))
      cd = DT_F32;
    LExpr *cur = kb_cast(kb, kb_value(kb, t, idx), cd);
    val = kb_arith(kb, (Op)n->attr.aug, cd, cur, kb_cast(kb, val, cd));
  }
  int arg = kb_arg(kb, buf, false, true);
  push(kb, body, kb_store_stmt(kb, arg, kb_view_index(kb, &t->view, idx), kb_cast(kb, val, t->dtype)));
}

// ============================================================================
// The pass
// ============================================================================

static void build_kernel(KB *kb, int kid) {
  const Graph *g = kb->g;
  LKernel *k = arena_alloc(&kb->cx->arena, sizeof *k);
  k->name = arena_printf(&kb->cx->arena, "k%d", kid);
  kb->k = k;
  kb->kid = kid;
  memset(kb->lv, 0, sizeof(LocalVal) * (size_t)(g->nodes.len ? g->nodes.len : 1));
  NodeList ns = {0};
  for (int i = 0; i < g->nodes.len; i++) {
    const Node *n = g->nodes.data[i];
    if (n->kernel != kid)
      continue;
    vec_push(&kb->cx->arena, &k->ops, op_name(n->op));
    int line = loc_line(n->loc), j = 0;
    while (j < k->lines.len && k->lines.data[j] < line)
      j++;
    if (j == k->lines.len || k->lines.data[j] != line) {  // sorted, distinct
      vec_push(&kb->cx->arena, &k->lines, 0);
      memmove(&k->lines.data[j + 1], &k->lines.data[j], sizeof(int) * (size_t)(k->lines.len - 1 - j));
      k->lines.data[j] = line;
    }
    if (n->mode != NM_INLINE)
      vec_push(&kb->cx->arena, &ns, n);
  }
  TD_ASSERT(ns.len > 0);
  const Node *first = ns.data[0];
  if (first->op == OP_MATMUL) {
    // on a CPU every matmul with arithmetic to do goes through ir/gemm.c
    if (kb->naive || !(kb->cpu ? gemm_build(kb, &ns) : build_matmul_rows(kb, &ns)))
      build_matmul(kb, &ns);
  } else if (op_is_row(first->op)) {
    if (kb->naive || !build_col(kb, &ns))
      build_row(kb, &ns);
  } else if (first->op == OP_CAT || first->op == OP_STACK || first->op == OP_STORE) {
    TD_ASSERT(ns.len == 1);
    if (first->op == OP_STORE)
      build_store(kb, first);
    else
      build_cat(kb, first);
  } else
    build_ew(kb, &ns);
  vec_push(&kb->cx->arena, &kb->p->kernels, k);
}

static LProgram *build(Ctx *cx, const Graph *g, const CpuTarget *cpu, bool naive) {
  LProgram *p = arena_alloc(&cx->arena, sizeof *p);
  p->name = g->name;
  p->file = g->loc.file ? g->loc.file->path : NULL;
  KB kb = {.cx = cx, .g = g, .p = p, .naive = naive, .cpu = cpu};
  kb.buf_of = arena_alloc(&cx->arena, sizeof(int) * (size_t)(g->bufs.len + 1));
  for (int i = 0; i < g->bufs.len; i++)
    kb.buf_of[i] = -1;
  kb.lv = arena_alloc(&cx->arena, sizeof(LocalVal) * (size_t)(g->nodes.len + 1));
  for (int i = 0; i < g->params.len; i++) {
    const Value *v = g->params.data[i];
    const Buffer *b = v->buf;
    int bi = add_buf(&kb, (LBuf){LB_PARAM, b->dtype, b->numel, b->name, i, b->mut});
    kb.buf_of[b->id] = bi;
    LParam prm = {.name = v->name, .dtype = v->dtype, .ndim = v->view.ndim, .mut = b->mut, .buf = bi};
    memcpy(prm.shape, v->view.shape, sizeof(int64_t) * (size_t)v->view.ndim);
    vec_push(&cx->arena, &p->params, prm);
  }
  for (int i = 0; i < g->nodes.len; i++) {
    const Node *n = g->nodes.data[i];
    if (n->mode != NM_STORED || n->op == OP_STORE)
      continue;
    const Buffer *b = n->out->buf;
    const char *name = b->name ? b->name : arena_printf(&cx->arena, "t%d", n->id);
    kb.buf_of[b->id] = add_buf(&kb, (LBuf){LB_TEMP, b->dtype, b->numel, name, -1, false});
  }
  for (int i = 0; i < g->outputs.len; i++) {
    const Value *v = g->outputs.data[i];
    TD_ASSERT(!v->is_scalar && v->buf);
    int bi = kb.buf_of[v->buf->id];
    TD_ASSERT(bi >= 0);
    if (p->bufs.data[bi].kind == LB_TEMP)
      p->bufs.data[bi].kind = LB_RESULT;
    vec_push(&cx->arena, &p->outputs, ((LOutput){bi, v->dtype, v->view}));
  }
  for (int k = 0; k < g->nkernels; k++)
    build_kernel(&kb, k);
  return p;
}

LProgram *kernel_build(Ctx *cx, const Graph *g, const CpuTarget *cpu) { return build(cx, g, cpu, false); }

LProgram *kernel_build_naive(Ctx *cx, const Graph *g) { return build(cx, g, NULL, true); }
