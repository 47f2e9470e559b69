// ir/gemm.c: the CPU matmul schedules (gemm_build, called by ir/matmul.c for a CPU).
// Every matmul, mm, bmm and batched @ of a CPU program with arithmetic to do becomes
// one of three loop nests, whatever the operands' strides (a transposed, sliced or
// expanded operand is an index here, never a copy the user sees). The output is seen
// as [batch..., M, N] with k the reduced dim (PyTorch's 1-D rules make M or N 1).
//
// PACKED — the general schedule, register- and cache-blocked:
//   pack a: ap[batch][i*K + k*MR + r] = a[i + r, k]  (panels of MR rows, the last M % MR)
//   for batch, column blocks of NB panels of NR columns {
//     pack b's block: bp[batch][j*K + k*NR + c] = b[k, j + c]   (the last panel N % NR)
//     for k blocks of KC, row panels i [parallel], column panels j of the block {
//       let acc[r]: NR lanes = 0, or (after the first k block) out[i+r, j..j+NR]
//       for k: let w = bp[j*K + k*NR +0..NR]; acc[r] = fma(splat(ap[i*K + k*MR + r]), w, acc[r])
//       out[i+r, j..j+NR] = acc[r] (vector stores), then (last k block) one loop over
//       the tile applies the epilogues
//   } }
//   A b that does not depend on the batch is packed whole, once, before the batch loops;
//   else block by block, so the panels just written are read back from L2.
// DIRECT — the same micro-kernel reading a and b where they are, when b's rows are
// unit-stride in j, of the accumulation dtype, and either a has few rows (packing would
// cost more than it saves) or b's rows are short (DIRECT_MAX_ROW: no cache-set fights).
// DOT — rows of a and columns of b both unit-stride in k (nn.Linear's x @ w.t()) with
// few rows (decoding) or one column: lanes run along k, a tile of IB x JB outputs
// keeps IB x JB vector accumulators, each weight is loaded once per IB rows, and the
// lanes are summed in a fixed tree after the k loop (then the K % V terms left).
//
// A contraction (attr.nk: a convolution, the weight times a window view of its input)
// may have k span several dims, and M, N and the batch be any output dims: packing
// walks k's dims as nested loops and lays their terms out linearly, so the micro-kernel
// of PACKED sees one k; DIRECT, which reads in place, runs the nested loops in its
// tile; DOT takes only a single k dim.
// MR x NR comes from the target (CpuTarget): NR is two vectors, MR the rows whose
// accumulators and operands fit the registers (AVX2 f32: 6 x 16, AVX-512: 14 x 32).
// The column block NB keeps K x NB*NR of packed b within half the L2; k blocks (KC)
// keep a row panel and a column panel within half the L2 (only for very long K). Float sums use
// LX_FMA (fused where the target has FMA), so results differ from the naive k order
// in rounding. f16/bf16 operands are packed as f32 (the accumulation dtype); DIRECT
// and DOT read only operands of the accumulation dtype.
// Parallel (one loop): the batch loop when it has PARALLEL_MIN_ITERS iterations, else
// the row panels when they do, else the batch loop when it has FEW_BATCHES, else the
// column blocks (made small enough to give PARALLEL_MIN_ITERS where N allows).
#include <inttypes.h>
#include <string.h>

#include "ir/kernel.h"

enum { SCHED_PACKED, SCHED_DIRECT, SCHED_DOT };
static const char *const SCHED_NAMES[] = {"packed", "direct", "dot"};

enum {
  DOT_MAX_M = 8,         // at most this many rows use the DOT schedule
  DIRECT_MAX_ROW = 1024, // b's rows of at most this many bytes are read in place (no packing)
  FEW_BATCHES = 4,       // batches enough for the threads when rows and columns are few
  MAX_MR = 16,
  KC_MIN = 64,           // shorter k blocks would reload the sums too often
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
  int64_t kn[TD_MAX_DIMS];  // their sizes (K is their product)
  int V, MR, NR;  // lanes of a vector, the micro-tile
  int64_t nb;     // panels per column block
  int sched;
  bool par, par_bat, par_rows, par_cols;  // par: the work is worth threads
  int ap, bp;               // packed scratch (program buffers), -1 when not packed
  bool ap_bat, bp_bat;      // packed per batch (the operand depends on the batch)
  bool bp_block;            // b is packed block by block, just before its tiles
  int64_t ap_per, bp_per;   // elements per batch
  int64_t kc;               // k terms per k block (KC), 0: one block of all K
  LIndex k0;                // the k block being built: its first k, its length, and
  int64_t klen;             //   whether it is the first / the last (bool expressions,
  LExpr *kfirst, *klast;    //   constants where the block loop decides statically)
  LIndex o[TD_MAX_DIMS];    // the current output index (batch dims set by the loops)
  LIndex obat;              // the current batch, linear (for packed scratch)
} Gemm;

static LIndex plus(LIndex x, int64_t c) {
  x.base += c;
  return x;
}

// The output index of row i and column j (of the current batch).
static void out_index(const Gemm *G, LIndex i, LIndex j, LIndex *o) {
  memcpy(o, G->o, sizeof(LIndex) * TD_MAX_DIMS);
  if (G->rd >= 0)
    o[G->rd] = i;
  if (G->jd >= 0)
    o[G->jd] = j;
}

// Operand which (0: a, 1: b) at row i, column j, k (an index per dim k spans): its
// value (of its own dtype).
static LExpr *operand(Gemm *G, int which, LIndex i, LIndex j, const LIndex *k) {
  LIndex o[TD_MAX_DIMS], ai[TD_MAX_DIMS], bi[TD_MAX_DIMS];
  out_index(G, i, j, o);
  kb_matmul_indices(G->mm, o, k, ai, bi);
  return kb_value(G->kb, G->mm->srcs[which], which ? bi : ai);
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

// Whether operand which is a plain load (of the accumulation dtype, with cd) moving
// with unit stride along dim `dim` (0: i, 1: j, 2: k, its last dim) of a probe.
static bool unit_along(Gemm *G, int which, int dim, bool cd) {
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
    return false;
  int var = dim == 2 ? K_PROBE + G->nk - 1 : PROBE_VAR + dim;
  for (int t = 0; t < e->idx.nterms; t++)
    if (e->idx.var[t] == var)
      return e->idx.coef[t] == 1;
  return false;
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

// ---- packing ----

// The loops over k's terms k0 + 0..klen into `into`: one loop, or where k spans several
// dims and an operand is read in place (`dims`; all of K then, never blocked) one per
// dim, outermost first. Sets *lin, the term's linear number (what packed panels are
// laid out by), and k[] (an index per dim; with one loop only where k has one dim).
static LStmtList *k_loops(Gemm *G, LStmtList *into, LIndex k0, int64_t klen, bool dims, LIndex *k, LIndex *lin) {
  if (G->nk == 1 || !dims) {
    into = kb_step_loop(G->kb, into, klen, k0, 1, false, &k[0]);
    *lin = k[0];
    return into;
  }
  TD_ASSERT(klen == G->K && k0.nterms == 0 && k0.base == 0);
  *lin = kb_ix_const(0);
  int64_t stride = G->K;
  for (int q = 0; q < G->nk; q++) {
    stride /= G->kn[q];
    into = kb_step_loop(G->kb, into, G->kn[q], kb_ix_const(0), 1, false, &k[q]);
    kb_ix_addmul(G->kb, lin, &k[q], stride);
  }
  return into;
}

// np panels of operand which (a: rows, b: columns), each `width` wide, from row or
// column `start`: the panel at row/column x holds element (k, q) at x*K + k*width + q
// (the panels before it are MR or NR wide, then a's last M % MR rows are one panel,
// b's last N % NR columns the panels last_panel gives),
// in scratch buf (per batch: plus the batch's `per` elements).
static void pack_panels(Gemm *G, LStmtList *into, int which, LIndex start, int64_t np, int width, bool par) {
  KernelBuilder *kb = G->kb;
  int buf = which ? G->bp : G->ap;
  int arg = kb_arg(kb, buf, false, true);
  LIndex base = kb_ix_const(0);
  if (which ? G->bp_bat : G->ap_bat)
    kb_ix_addmul(kb, &base, &G->obat, which ? G->bp_per : G->ap_per);
  // the source's unit-stride dim inside: k when it moves by 1, else the panel's (the
  // panel's first where k spans several dims: its last is a window's short row)
  bool p_unit = unit_along(G, which, which ? 1 : 0, false);
  bool k_inner = !p_unit || (G->nk == 1 && unit_along(G, which, 2, false));
  LIndex p, k[TD_MAX_DIMS], kl, q;
  LStmtList *body =
      kb_step_loop(G->kb, into, np, start, width, par && np > 1 && np * width * G->K >= PARALLEL_WORK, &p);
  LIndex at = base;
  kb_ix_addmul(kb, &at, &p, G->K);
  LStmtList *in;
  if (k_inner) {
    in = kb_step_loop(G->kb, body, width, kb_ix_const(0), 1, false, &q);
    in = k_loops(G, in, kb_ix_const(0), G->K, true, k, &kl);
  } else {
    in = k_loops(G, body, kb_ix_const(0), G->K, true, k, &kl);
    in = kb_step_loop(G->kb, in, width, kb_ix_const(0), 1, false, &q);
  }
  kb_ix_addmul(kb, &at, &kl, width);
  kb_ix_addmul(kb, &at, &q, 1);
  LIndex x = p;
  kb_ix_addmul(kb, &x, &q, 1);
  LExpr *v = operand_cd(G, which, which ? kb_ix_const(0) : x, which ? x : kb_ix_const(0), k);
  kb_push(G->kb, in, kb_store_stmt(kb, arg, at, v));
}

// Every panel of operand which: n rows or columns in panels of w, then the rest.
// The width of the next of the last columns' panels, `rest` (< NR) of them left: one
// vector register's lanes while more than that are left, then the rest (a vector of 24
// lanes, which LLVM 14 builds lane by lane, is one of 16 and one of 8).
static int last_panel(const Gemm *G, int64_t rest) { return rest > G->V ? G->V : (int)rest; }

static void pack_all(Gemm *G, LStmtList *into, int which, int w, int64_t n, bool par) {
  if (n / w)
    pack_panels(G, into, which, kb_ix_const(0), n / w, w, par);
  for (int64_t at = n - n % w; at < n;) {
    int pw = which ? last_panel(G, n - at) : (int)(n - at);
    pack_panels(G, into, which, kb_ix_const(at), 1, pw, false);
    at += pw;
  }
}

// ---- the micro-kernel ----

// The node whose buffer takes the accumulators as vectors: the matmul's own when it
// is stored in the accumulation dtype, else a stored epilogue node of that dtype (it
// is then updated in place by the epilogue pass), else NULL.
static const Node *acc_owner(const Gemm *G) {
  if (G->jd != G->on - 1)
    return NULL;  // no column dim: nothing to store as a vector
  if (G->mm->mode == NM_STORED && G->mm->out->dtype == G->cd)
    return G->mm;
  for (int i = 1; i < G->ns->len; i++)
    if (G->ns->data[i]->mode == NM_STORED && G->ns->data[i]->out->dtype == G->cd)
      return G->ns->data[i];
  return NULL;
}

// The matmul's result (local l) at output index o, stored with the epilogues; `own`
// (if any) already holds it there.
static void epilogue_at(Gemm *G, LStmtList *into, const LIndex *o, int l, const Node *own) {
  KernelBuilder *kb = G->kb;
  const Node *mm = G->mm;
  kb_local_at(kb, mm, l, o);
  if (mm->mode == NM_STORED && mm != own)
    kb_store_node(kb, into, mm, o, kb_local_ref(kb, l));
  for (int i = 1; i < G->ns->len; i++)
    kb_store_node(kb, into, G->ns->data[i], o, kb_node_expr(kb, G->ns->data[i], o));
}

// The accumulators, as vectors, to own's buffer at rows i0 + 0..mr, columns j0 + 0..nl.
static void store_acc(Gemm *G, LStmtList *into, const int *acc, int mr, LIndex i0, LIndex j0, int nl,
                      const Node *own) {
  KernelBuilder *kb = G->kb;
  int buf = kb->buf_of[own->out->buf->id];
  bool read = G->ns->len > 1 || G->kc;  // by the epilogue pass, or by the next k block
  for (int r = 0; r < mr; r++) {
    LIndex o[TD_MAX_DIMS];
    out_index(G, plus(i0, r), j0, o);
    LExpr *v = nl > 1 ? lx_local_v(kb->cx, G->cd, nl, acc[r]) : kb_local_ref(kb, acc[r]);
    kb_push(G->kb, into, kb_store_stmt(kb, kb_arg(kb, buf, read, true), kb_view_index(kb, &own->out->view, o), v));
  }
}

// Stores the tile's results, out[i0 + r, j0 + c] for r < mr, c < nl, and applies the
// epilogues. With an owner buffer (acc_owner) the accumulators go there as vectors,
// and a loop over the tile then reads them back for the epilogues (a loop the
// vectorizers take, not mr * nl copies of the epilogue); else lane by lane.
static void store_tile(Gemm *G, LStmtList *into, const int *acc, int mr, LIndex i0, LIndex j0, int nl) {
  KernelBuilder *kb = G->kb;
  Ctx *cx = kb->cx;
  const Node *own = acc_owner(G);
  LIndex o[TD_MAX_DIMS];
  if (own) {
    int buf = kb->buf_of[own->out->buf->id];
    store_acc(G, into, acc, mr, i0, j0, nl, own);
    if (G->ns->len == 1)
      return;
    LIndex i, j;
    LStmtList *in = kb_step_loop(G->kb, into, mr, i0, 1, false, &i);
    in = kb_step_loop(G->kb, in, nl, j0, 1, false, &j);
    out_index(G, i, j, o);
    LExpr *x = lx_load(cx, G->cd, kb_arg(kb, buf, true, false), kb_view_index(kb, &own->out->view, o));
    int l = kb_new_local(kb, G->cd);
    kb_push(G->kb, in, kb_let(kb, l, x));
    epilogue_at(G, in, o, l, own);
    return;
  }
  for (int r = 0; r < mr; r++)
    for (int c = 0; c < nl; c++) {
      out_index(G, plus(i0, r), plus(j0, c), o);
      LExpr *s = nl > 1 ? lx_lane(cx, lx_local_v(cx, G->cd, nl, acc[r]), c) : kb_local_ref(kb, acc[r]);
      int l = kb_new_local(kb, G->cd);
      kb_push(G->kb, into, kb_let(kb, l, s));
      epilogue_at(G, into, o, l, NULL);
    }
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

// One tile over the k block G->k0 + 0..klen: rows i0 + 0..mr (packed: panel at apan),
// columns j0 + 0..nl (packed: bpan).
static void micro(Gemm *G, LStmtList *into, LIndex i0, int mr, LIndex apan, LIndex j0, int nl, LIndex bpan) {
  KernelBuilder *kb = G->kb;
  Ctx *cx = kb->cx;
  int acc[MAX_MR];
  for (int r = 0; r < mr; r++) {
    acc[r] = kb_new_local(kb, G->cd);
    kb_push(G->kb, into, kb_let(kb, acc[r], zero(G, nl)));
  }
  // after the first k block the sums so far come back from the owner's buffer
  const Node *own = G->kc ? acc_owner(G) : NULL;
  LStmtList *resume = when(G, into, G->kfirst, false);
  for (int r = 0; resume && r < mr; r++) {
    LIndex o[TD_MAX_DIMS];
    out_index(G, plus(i0, r), j0, o);
    LExpr *v = lx_vload(cx, G->cd, nl, kb_arg(kb, kb->buf_of[own->out->buf->id], true, false),
                        kb_view_index(kb, &own->out->view, o));
    kb_push(G->kb, resume, kb_set(kb, acc[r], v));
  }
  LIndex k[TD_MAX_DIMS], kl;
  LStmtList *in = k_loops(G, into, G->k0, G->klen, G->ap < 0 || G->bp < 0, k, &kl);
  LExpr *w;
  if (G->bp >= 0) {
    LIndex at = bpan;
    kb_ix_addmul(kb, &at, &kl, nl);
    w = lx_vload(cx, G->cd, nl, kb_arg(kb, G->bp, true, false), at);
  } else {
    w = nl > 1 ? operand_vec(G, 1, i0, j0, k, nl) : operand_cd(G, 1, i0, j0, k);
  }
  int wl = kb_new_local(kb, G->cd);
  kb_push(G->kb, in, kb_let(kb, wl, w));
  for (int r = 0; r < mr; r++) {
    LExpr *x;
    if (G->ap >= 0) {  // the panel is mr wide (the last one M % MR)
      LIndex at = apan;
      kb_ix_addmul(kb, &at, &kl, mr);
      at.base += r;
      x = lx_load(cx, G->cd, kb_arg(kb, G->ap, true, false), at);
    } else {
      x = operand_cd(G, 0, plus(i0, r), j0, k);
    }
    if (nl > 1)
      x = lx_splat(cx, nl, x);
    LExpr *cur = nl > 1 ? lx_local_v(cx, G->cd, nl, acc[r]) : kb_local_ref(kb, acc[r]);
    LExpr *wv = nl > 1 ? lx_local_v(cx, G->cd, nl, wl) : kb_local_ref(kb, wl);
    kb_push(G->kb, in, kb_set(kb, acc[r], mul_add(G, x, wv, cur)));
  }
  LStmtList *fin = when(G, into, G->klast, true), *part = when(G, into, G->klast, false);
  if (fin)
    store_tile(G, fin, acc, mr, i0, j0, nl);
  if (part)
    store_acc(G, part, acc, mr, i0, j0, nl, own);
}

// The packed panel of the tile at row i0 / column j0: it starts at i0*K (j0*K), the
// panels before it being MR (NR) wide.
static LIndex panel(Gemm *G, bool per_batch, int64_t per, LIndex ij0) {
  LIndex at = kb_ix_const(0);
  if (per_batch)
    kb_ix_addmul(G->kb, &at, &G->obat, per);
  kb_ix_addmul(G->kb, &at, &ij0, G->K);
  return at;
}

// The tiles of one row panel (rows i0 + 0..mr): npanels column panels of nl columns
// from column j0.
static void row_tiles(Gemm *G, LStmtList *into, LIndex i0, int mr, LIndex j0, int64_t npanels, int nl) {
  LIndex j;
  LStmtList *body = kb_step_loop(G->kb, into, npanels, j0, nl, false, &j);
  micro(G, body, i0, mr, panel(G, G->ap_bat, G->ap_per, i0), j, nl, panel(G, G->bp_bat, G->bp_per, j));
}

// Every row panel (the row loop parallel with par) over npanels column panels of nl
// columns from column j0: each row panel of a stays in L1/L2 while it meets them.
static void row_panels(Gemm *G, LStmtList *into, LIndex j0, int64_t npanels, int nl, bool par) {
  int64_t full = G->M / G->MR;
  if (full) {
    LIndex i0;
    row_tiles(G, kb_step_loop(G->kb, into, full, kb_ix_const(0), G->MR, par, &i0), i0, G->MR, j0, npanels, nl);
  }
  if (G->M % G->MR)
    row_tiles(G, into, kb_ix_const(full * G->MR), (int)(G->M % G->MR), j0, npanels, nl);
}

// Columns from j0: npanels panels of nl columns, packed first when b is packed block
// by block (bp_block), then every row panel over them. Outside the parallel loop of
// column blocks (the rest of the panels), the row panels are the parallel loop.
static void col_group(Gemm *G, LStmtList *into, LIndex j0, int64_t npanels, int nl, bool in_block) {
  bool par = G->par_rows || (G->par_cols && !in_block);
  if (G->bp_block)
    pack_panels(G, into, 1, j0, npanels, nl, par);
  KernelBuilder *kb = G->kb;
  LExpr *yes = kb_iconst(kb, DT_BOOL, 1), *no = kb_iconst(kb, DT_BOOL, 0);
  if (!G->kc) {
    G->k0 = kb_ix_const(0), G->klen = G->K, G->kfirst = yes, G->klast = yes;
    row_panels(G, into, j0, npanels, nl, par);
    return;
  }
  // k blocks of kc terms (the first and the last known by the block's index), then the rest
  int64_t nfull = G->K / G->kc, rest = G->K % G->kc;
  if (nfull) {
    LIndex kb0;
    LStmtList *body = kb_step_loop(G->kb, into, nfull, kb_ix_const(0), G->kc, false, &kb0);
    LExpr *at = kb_ix_expr(kb, &kb0);
    G->k0 = kb0, G->klen = G->kc;
    LExpr *at_first = lx_binary(kb->cx, OP_EQ, DT_BOOL, at, kb_iconst(kb, DT_I64, 0));
    LExpr *at_last = lx_binary(kb->cx, OP_EQ, DT_BOOL, at, kb_iconst(kb, DT_I64, G->K - G->kc));
    G->kfirst = nfull == 1 ? yes : at_first;
    G->klast = rest ? no : nfull == 1 ? yes : at_last;
    row_panels(G, body, j0, npanels, nl, par);
  }
  if (rest) {
    G->k0 = kb_ix_const(nfull * G->kc), G->klen = rest, G->kfirst = nfull ? no : yes, G->klast = yes;
    row_panels(G, into, j0, npanels, nl, par);
  }
}

// Column blocks of nb full panels (packed b stays in L2 while every row panel meets
// it), the rest of the full panels, then the last N % NR columns (last_panel's).
static void build_tiles(Gemm *G, LStmtList *into) {
  int64_t full = G->N / G->NR, blocks = full / G->nb;
  if (blocks) {
    LIndex jb;
    LStmtList *body = kb_step_loop(G->kb, into, blocks, kb_ix_const(0), G->nb * G->NR, G->par_cols, &jb);
    col_group(G, body, jb, G->nb, G->NR, true);
  }
  if (full % G->nb)
    col_group(G, into, kb_ix_const(blocks * G->nb * G->NR), full % G->nb, G->NR, false);
  for (int64_t at = full * G->NR; at < G->N;) {
    int w = last_panel(G, G->N - at);
    col_group(G, into, kb_ix_const(at), 1, w, false);
    at += w;
  }
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
    kb_push(G->kb, in, kb_let(kb, xs[r], operand_vec(G, 0, plus(i0, r), j0, &kv, V)));
  }
  for (int c = 0; c < jb; c++) {
    ws[c] = kb_new_local(kb, G->cd);
    kb_push(G->kb, in, kb_let(kb, ws[c], operand_vec(G, 1, i0, plus(j0, c), &kv, V)));
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
        LExpr *x = operand_cd(G, 0, plus(i0, r), plus(j0, c), &k), *y = operand_cd(G, 1, plus(i0, r), plus(j0, c), &k);
        kb_push(G->kb, tail, kb_set(kb, s, mul_add(G, x, y, kb_local_ref(kb, s))));
      }
      store_tile(G, into, &s, 1, plus(i0, r), plus(j0, c), 1);
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

static void build_dot(Gemm *G, LStmtList *into) {
  int jb = G->M == 1 ? DOT_JB : 4;
  int64_t full = G->N / jb;
  if (full) {
    LIndex j0;
    dot_rows(G, kb_step_loop(G->kb, into, full, kb_ix_const(0), jb, G->par_cols, &j0), j0, jb);
  }
  if (G->N % jb)
    dot_rows(G, into, kb_ix_const(full * jb), (int)(G->N % jb));
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

static bool foldable(Gemm *G) {
  if (G->nbat == 0 || G->rd < 0 || reads_batch(G, 1))
    return false;
  int dims[TD_MAX_DIMS + 1], n = 0;
  for (int b = 0; b < G->nbat; b++)
    if (G->bat[b] > G->rd)
      return false;  // (the batch dims come first)
    else
      dims[n++] = G->bat[b];
  dims[n++] = G->rd;
  KernelBuilder *kb = G->kb;
  LIndex o[TD_MAX_DIMS];
  for (int d = 0; d < G->on; d++)
    o[d] = kb_ix_var(PROBE_VAR + d);
  memcpy(G->o, o, sizeof o);
  LIndex j = G->jd >= 0 ? o[G->jd] : kb_ix_const(0), k[TD_MAX_DIMS];
  k_probe(G, k);
  bool ok = flat_loads(G, operand(G, 0, o[G->rd], j, k), dims, n);
  // the epilogues read the matmul's value at o (a placeholder local here)
  int placeholder = kb_new_local(kb, G->cd);
  kb_local_at(kb, G->mm, placeholder, o);
  for (int i = 0; i < G->ns->len && ok; i++) {
    const Node *e = G->ns->data[i];
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

// ---- the pass ----

bool gemm_build(KernelBuilder *kb, const NodeList *ns) {
  const Node *mm = ns->data[0];
  const View *ov = &mm->out->view;
  Gemm G = {.kb = kb, .ns = ns, .mm = mm, .cd = dtype_compute(mm->out->dtype), .on = ov->ndim, .ap = -1,
            .bp = -1, .rd = -1, .jd = -1, .nbatch = 1};
  G.K = matmul_k(mm, G.kn);
  G.nk = matmul_nk(mm);
  if (view_numel(*ov) == 0 || G.K == 0 || (G.cd != DT_F32 && G.cd != DT_F64))  // (sema allows no int matmul)
    return false;
  // which output dims are M and N (PyTorch's 1-D rules drop them)
  kb_matmul_dims(mm, &G.rd, &G.jd);
  G.M = G.rd >= 0 ? ov->shape[G.rd] : 1;
  G.N = G.jd >= 0 ? ov->shape[G.jd] : 1;
  for (int d = 0; d < G.on; d++) {
    G.o[d] = kb_ix_const(0);
    if (d != G.rd && d != G.jd && ov->shape[d] > 1)
      G.bat[G.nbat++] = d, G.nbatch *= ov->shape[d];
  }
  if (foldable(&G)) {  // one GEMM of nbatch * M rows
    G.M *= G.nbatch;
    G.nbat = 0;
    G.nbatch = 1;
  }
  // the micro-tile from the target
  const CpuTarget *t = kb->cpu;
  G.V = t->vec_bytes / dtype_size(G.cd);
  if (G.V < 2)
    G.V = 2;
  G.NR = 2 * G.V;
  G.MR = (t->nregs - 3) / 2;
  G.MR = G.MR > 14 ? 14 : G.MR < 1 ? 1 : G.MR;
  if (G.M < G.MR)
    G.MR = (int)G.M;
  // the schedule
  bool a_k = unit_along(&G, 0, 2, true), b_k = unit_along(&G, 1, 2, true), b_j = unit_along(&G, 1, 1, true);
  if (G.nk == 1 && a_k && b_k && G.K >= G.V && (G.M <= DOT_MAX_M || G.N == 1))
    G.sched = SCHED_DOT;
  else if (b_j && G.nk == 1 && (G.M <= 2 * G.MR || G.N * dtype_size(G.cd) <= DIRECT_MAX_ROW))
    G.sched = SCHED_DIRECT;
  else
    G.sched = SCHED_PACKED;
  // k blocks (KC) where a row panel of a and a column panel of b, the tile's operands,
  // would not fit half the L2 (split evenly; the sums in between wait in a buffer of
  // the accumulation dtype). Sized from the L1 instead (the textbook choice) they made
  // 1024² and x[128, 4096] @ w.t() 2-6% slower here: panels in L2 feed the tile fast
  // enough, and each block reloads the sums.
  int64_t kcmax = t->l2 / 2 / ((G.MR + G.NR) * dtype_size(G.cd));
  if ((G.nk == 1 ? G.sched != SCHED_DOT : G.sched == SCHED_PACKED) && kcmax >= KC_MIN && G.K > kcmax &&
      acc_owner(&G)) {
    int64_t nblocks = (G.K + kcmax - 1) / kcmax;
    G.kc = ((G.K + nblocks - 1) / nblocks + 7) / 8 * 8;
  }
  // column blocks: K x NB*NR of b within half the L2
  int64_t panels = G.N / G.NR, per_panel = G.K * G.NR * dtype_size(G.cd);
  G.nb = t->l2 / 2 / (per_panel ? per_panel : 1);
  G.nb = G.nb < 1 ? 1 : G.nb;
  // parallel: batch, else row panels, else column blocks
  G.par = view_numel(*ov) * G.K >= PARALLEL_WORK;
  int64_t rows = G.sched == SCHED_DOT ? 0 : G.M / G.MR;
  if (G.par && G.nbatch >= PARALLEL_MIN_ITERS)
    G.par_bat = true;
  else if (G.par && rows >= PARALLEL_MIN_ITERS)
    G.par_rows = true;
  else if (G.par && G.nbatch >= FEW_BATCHES)  // (attention's heads: each a small GEMM)
    G.par_bat = true;
  else if (G.par && panels < 2 && rows >= 2)
    G.par_rows = true;
  else if (G.par) {
    G.par_cols = true;
    int64_t want = panels / PARALLEL_MIN_ITERS;
    if (want < G.nb)
      G.nb = want < 1 ? 1 : want;
  }
  if (G.nb > panels && panels > 0)
    G.nb = panels;
  // packed scratch
  if (G.sched == SCHED_PACKED) {
    G.bp_bat = reads_batch(&G, 1);
    G.ap_bat = reads_batch(&G, 0);
    G.bp_per = G.N * G.K;
    G.ap_per = G.M * G.K;
    G.bp = kb_new_temp(kb, G.cd, G.bp_per * (G.bp_bat ? G.nbatch : 1), "bpack");
    G.ap = kb_new_temp(kb, G.cd, G.ap_per * (G.ap_bat ? G.nbatch : 1), "apack");
  }
  // the batch loops, then packing and tiles inside them
  LStmtList *body = &kb->k->body;
  int64_t stride = 1;
  G.obat = kb_ix_const(0);
  for (int b = G.nbat - 1; b >= 0; b--)
    stride *= ov->shape[G.bat[b]];
  // What does not depend on the batch is packed once, before the batch loops; b is
  // packed block by block where it is packed once per tile loop (no batch, or per
  // batch): the panels just written are read from L2, not from memory.
  bool packed = G.sched == SCHED_PACKED;
  G.bp_block = packed && (G.bp_bat || G.nbat == 0);
  if (packed && !G.bp_block)
    pack_all(&G, body, 1, G.NR, G.N, G.par);
  if (packed && !G.ap_bat)
    pack_all(&G, body, 0, G.MR, G.M, G.par);
  for (int b = 0; b < G.nbat; b++) {
    int d = G.bat[b];
    stride /= ov->shape[d];
    LIndex v;
    body = kb_step_loop(G.kb, body, ov->shape[d], kb_ix_const(0), 1, G.par_bat && b == 0, &v);
    G.o[d] = v;
    kb_ix_addmul(kb, &G.obat, &v, stride);
  }
  if (packed && G.ap_bat)
    pack_all(&G, body, 0, G.MR, G.M, G.par && !G.par_bat);
  if (G.sched == SCHED_DOT)
    build_dot(&G, body);
  else
    build_tiles(&G, body);
  // what --emit=kernels shows: the schedule and its tiles
  const char *what = G.sched == SCHED_DOT
                         ? arena_printf(&kb->cx->arena, "gemm %s %dx%d lanes %d", SCHED_NAMES[G.sched],
                                        G.M == 1 ? 1 : DOT_IB, G.M == 1 ? DOT_JB : 4, G.V)
                         : arena_printf(&kb->cx->arena, "gemm %s %dx%d nc %" PRId64 "%s", SCHED_NAMES[G.sched], G.MR,
                                        G.NR, G.nb * G.NR < G.N ? G.nb * G.NR : G.N,
                                        G.kc ? arena_printf(&kb->cx->arena, " kc %" PRId64, G.kc) : "");
  kb->k->sched = what;
  return true;
}
