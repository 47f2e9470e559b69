// ir/ew.c: the kernel builder's EW and ONE kernels (ir/kernel.h). EW: elementwise
// nodes over one shape, each stored at every index of it, in the output's row-major
// order or, when an operand is read transposed, in tiles (below), then the stores
// into the whole result that joined them (ir/fuse.c's store_fits: y.add_(r) after
// y = x * w), each element written once, its last value (ew_stores); ONE: cat and stack
// (one nest per operand, writing its slice of the result) and stores into a view of a
// buffer (x[idx] = v, x[idx] op= v), each node alone in its kernel.
//
// Invariants: every element of a written view is stored exactly once, with the value
// the row-major nest gives it (a tiled order changes no result); probe expressions
// built to choose the order leave no argument or error behind.
#include "ir/kernel.h"

#include <stdlib.h>
#include <string.h>

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
// Only the order changes: every element is computed as in the row-major nest. An
// untiled copy of f16 or bf16 with unit strides along the last dim moves vectors of its
// bits along it (ew_vector_row; ew_build says why).
//
// A copy (one stored node whose value is one such load of its own dtype: contiguous()
// or clone() of a permuted view, on a CPU) moves square blocks of W x W elements
// through vector registers instead, W = min(the widest vector's elements, the vector
// registers with AVX-512's 32, half of them with 16) (f32 with AVX-512: 16 x 16; with
// AVX2 8 x 8; f64 8 x 8 and 4 x 4; 2-byte and 1-byte types 32 x 32 in 64- and 32-byte
// vectors with AVX-512, 8 x 8 with AVX2; with AVX-512, W = 32 rather than 16 took
// 4096² f16 from 1.94-1.96 to 1.76-1.83 ms (LLVM; C 2.03-2.06 to 1.90-1.93), i8 from
// 1.29 to 1.11-1.18 (C 1.62 to 1.38-1.40), a clone of the i8 0.67; the spills of a
// block of all 32 registers cost less than the shuffles that join 16-wide blocks
// into lines; W = 64 (i8) spilled more and gained nothing): W vector loads along di, one
// from each of W consecutive source rows (j), log2(W) rounds of two-source shuffles,
// W vector stores along dj, one into each of W output rows (i). Round u = 1, 2, .. W/2
// pairs vectors v and v + u (v with bit u clear) and makes lo(v, v + u) and
// hi(v, v + u): within each group of P = max(L, 2u) lanes (L: the lanes of 128 bits,
// in which x86's unpack and shuffle instructions work), the first (lo) or second (hi)
// half of each, interleaved in runs of u lanes (ew_shuffle_sel; for f32 with 16 lanes:
// unpcklps/unpckhps, unpcklpd/unpckhpd, vshuff32x4 twice); after the last round vector
// ew_final[c] holds source column c. Vectors only move bits (f16, bf16 and bool move as
// i16 and u8): the copy is exact for every dtype, NaN payloads included. Inside a tile,
// blocks run W along dj (outer) then along di: W source rows read in runs of Ti. Where
// a block's rows are narrower than a 64-byte line (1-byte types with AVX-512, every
// type with AVX2), the nb blocks that fill a line are built side by side and each
// output row's pieces joined by shuffles into one 64-byte vector, stored once: a
// streamed line is written whole (pieces of lines written far apart through the
// write-combining buffers made f16 transposes twice as slow). Where a tile's extents
// are not multiples of W, the rest of it is the scalar nest. With the
// result streamed past the caches (ir/sched.c's LArg.stream) both CPU backends reach
// ~80% of the copy bandwidth on 4096² f32 (C: 3.5x the scalar tiles, which gcc 12
// keeps scalar for their strided load).
//
// The stores of a tile go to Ti output rows a row's length apart, a line or two each,
// which no prefetcher follows: plain stores then wait for every line's read for
// ownership. So a tiled kernel asks for its results to be streamed (LArg.stream, set
// here) whatever the last-level cache: ir/sched.c then streams a result of 8 MiB or
// more that no later kernel reads, as it does any result too large for the LLC, and
// the runtime still measures both store forms (runtime/stream.c). On this 480 MB-L3
// VM (sysfs), where the LLC rule streamed nothing of 4096² f32, plain stores took 5x
// as long: x.t().contiguous() 17.5-18.3 ms against 3.4-3.6 ms streamed (a clone of the
// same 64 MiB: 3.3-3.5 ms), x.t() * 2 (scalar tiles) 11-14.7 ms against 4.7-7.2 ms;
// a standalone AVX-512 16 x 16 transpose: 19.4 ms plain, 3.7 ms non-temporal, at
// 2048² 1.16 against 0.92 ms, at 1024² alike. The tile shape barely matters once the
// stores are streamed (Ti 64 to 512 and Tj 16 to 64: 3.5-4.5 ms), nor does prefetching
// the next rows in software.
enum { EW_ROW_BYTES = 128, EW_RUN_BYTES = 2048, EW_MIN_TILES = 8, EW_MAX_W = 32, EW_LINE = 64, EW_MAX_GROUP = 8 };

typedef struct EwTile {
  const NodeList *ns;
  const KbCuts *cuts;         // the inline cats' piece bounds along each dim (kb_cuts_sorted)
  const View *ov;
  int di, dj;                 // the tiled dims (di < dj)
  int64_t tile[TD_MAX_DIMS];  // di and dj: Ti and Tj
  LIndex idx[TD_MAX_DIMS];    // the index of each dim; of di and dj: their tile's first
  int64_t ext[TD_MAX_DIMS];   // di and dj: their tile's extent
  int w;                      // the register blocks' W, 0: scalar tiles
  int vl;                     // no tiles: a copy of f16 or bf16 moved as vectors of vl, or 0
  DType bits;                 // the vectors' dtype (lx_bits_dtype of the copy's)
} EwTile;

// The dim by which a load of e moves with unit stride while it strides along probe
// dim dj, or -1.
static int transposed_dim(const LExpr *e, int nd, int dj) {
  if (!e)
    return -1;
  if (e->kind == LX_LOAD && kb_iabs(kb_ix_coef(&e->idx, PROBE_VAR + dj)) > 1)
    for (int d = 0; d < nd; d++)
      if (kb_iabs(kb_ix_coef(&e->idx, PROBE_VAR + d)) == 1)
        return d;
  int d = transposed_dim(e->a, nd, dj);
  if (d < 0)
    d = transposed_dim(e->b, nd, dj);
  if (d < 0)
    d = transposed_dim(e->c, nd, dj);
  return d < 0 && e->kind == LX_LOAD ? transposed_dim(e->idx.dyn, nd, dj) : d;
}

// The probe index of dim d of view ov: its probe variable, or 0 where the dim has size 1.
static LIndex probe_index(const View *ov, int d) {
  return ov->shape[d] == 1 ? kb_ix_const(0) : kb_ix_var(PROBE_VAR + d);
}

// Whether probe value e of node n is a copy read along probe dim di: one load of n's own
// dtype, at a static index, with unit stride along di.
static bool copy_load(const LExpr *e, const Node *n, int di) {
  return e->kind == LX_LOAD && e->dt == n->out->dtype && !e->idx.dyn && kb_ix_coef(&e->idx, PROBE_VAR + di) == 1;
}

// Range c (0 .. n[d]) of dim d between t's cuts (all of the dim if none): its first
// index in *from, its end returned.
static int64_t cut_range(const EwTile *t, int d, int c, int64_t *from) {
  *from = c ? t->cuts->at[d][c - 1] : 0;
  return c < t->cuts->n[d] ? t->cuts->at[d][c] : t->ov->shape[d];
}

// What store n writes at target index idx, of the target's dtype: val (the value there)
// or, for x[idx] op= v, x[idx] op val.
static LExpr *store_value(KernelBuilder *kb, const Node *n, LExpr *val, const LIndex *idx) {
  const Value *t = n->srcs[0], *v = n->srcs[1];
  if (n->attr.aug != OP_COUNT) {
    Value *both[2] = {(Value *)t, (Value *)v};
    DType cd = dtype_compute(kb_result_type(both, 2));
    if (n->attr.aug == OP_DIV && !dtype_is_float(cd))
      cd = DT_F32;
    LExpr *cur = kb_cast(kb, kb_value(kb, t, idx), cd);
    val = kb_arith(kb, (Op)n->attr.aug, cd, cur, kb_cast(kb, val, cd));
  }
  return kb_cast(kb, val, t->dtype);
}

// Member n's value at idx: an elementwise node's, or a store's, of the target's dtype
// (ir/fuse.c's store_fits: into the whole result of the kernel's first node, of a value
// of its shape or a scalar).
static LExpr *ew_value(KernelBuilder *kb, const Node *n, const LIndex *idx) {
  if (n->op != OP_STORE)
    return kb_node_expr(kb, n, idx);
  const Value *t = n->srcs[0], *v = n->srcs[1];
  TD_ASSERT(kb_same_shape(&t->view, &t->buf->producer->out->view) &&
            (v->is_scalar || kb_same_shape(&v->view, &t->view)));
  return store_value(kb, n, kb_value(kb, v, idx), idx);
}

// The stores of every node at idx. A result that a later store of the kernel writes
// over, whole (y = x * w + b; y.clamp_(0, 6)), is not stored but kept in a local, which
// that store's value reads: each element is written once, with its final value.
static void ew_stores(KernelBuilder *kb, const EwTile *t, LStmtList *into, const LIndex *idx) {
  for (int i = 0; i < t->ns->len; i++) {
    const Node *n = t->ns->data[i];
    const Node *own = n->op == OP_STORE ? n->srcs[0]->buf->producer : n;  // the node whose result it writes
    TD_ASSERT((op_is_elementwise(n->op) || n->op == OP_STORE) && kb_same_shape(&own->out->view, t->ov));
    bool over = false;
    for (int j = i + 1; j < t->ns->len && !over; j++)
      over = t->ns->data[j]->op == OP_STORE && t->ns->data[j]->srcs[0]->buf == own->out->buf;
    LExpr *val = ew_value(kb, n, idx);
    if (over)
      kb_local_at(kb, own, kb_let_local(kb, into, kb_cast(kb, val, own->out->dtype)), idx);
    else if (n->op == OP_STORE)
      kb_push(kb, into, kb_store_stmt(kb, kb_arg(kb, kb->buf_of[n->srcs[0]->buf->id], false, true),
                                      kb_view_index(kb, &n->srcs[0]->view, idx), val));
    else
      kb_store_node(kb, into, n, idx, val);
  }
  for (int i = 0; i < t->ns->len; i++)  // (the bindings made above)
    if (t->ns->data[i]->op == OP_STORE)
      kb->lv[t->ns->data[i]->srcs[0]->buf->producer->id].kind = LV_NONE;
}

// The scalar nest of the part of a tile from idx (di and dj: that part's first) with
// extents ei and ej.
static void ew_scalar_tile(KernelBuilder *kb, const EwTile *t, LStmtList *into, const LIndex *at, int64_t ei,
                           int64_t ej, bool par) {
  if (ei <= 0 || ej <= 0)
    return;
  LIndex idx[TD_MAX_DIMS];
  memcpy(idx, at, sizeof idx);
  into = kb_step_loop(kb, into, ei, at[t->di], 1, par, &idx[t->di]);
  into = kb_step_loop(kb, into, ej, at[t->dj], 1, par && ei == 1, &idx[t->dj]);
  ew_stores(kb, t, into, idx);
}

// Lane l of the lo (hi) vector of round u of the W x W transpose (the comment at the
// top): lanes of the concatenation a ++ b.
static void ew_shuffle_sel(int W, int L, int u, bool hi, int *sel) {
  int P = L > 2 * u ? L : 2 * u, n = 0;
  for (int g = 0; g < W; g += P) {
    int st = g + (hi ? P / 2 : 0);
    for (int blk = 0; blk < P / 2; blk += u) {
      for (int k = 0; k < u; k++)
        sel[n++] = st + blk + k;
      for (int k = 0; k < u; k++)
        sel[n++] = W + st + blk + k;
    }
  }
  TD_ASSERT(n == W);
}

// final[c]: the vector holding source column c after the rounds, found by running them
// on (row, column) labels.
static void ew_final(int W, int L, int *final) {
  int v[EW_MAX_W][EW_MAX_W], nv[EW_MAX_W][EW_MAX_W], lo[EW_MAX_W], hi[EW_MAX_W];
  for (int r = 0; r < W; r++)
    for (int c = 0; c < W; c++)
      v[r][c] = r * W + c;
  for (int u = 1; u < W; u *= 2) {
    ew_shuffle_sel(W, L, u, false, lo);
    ew_shuffle_sel(W, L, u, true, hi);
    for (int r = 0; r < W; r++) {
      if (r & u)
        continue;
      for (int l = 0; l < W; l++) {
        nv[r][l] = lo[l] < W ? v[r][lo[l]] : v[r + u][lo[l] - W];
        nv[r + u][l] = hi[l] < W ? v[r][hi[l]] : v[r + u][hi[l] - W];
      }
    }
    memcpy(v, nv, sizeof v);
  }
  for (int r = 0; r < W; r++) {
    int c = v[r][0] % W;
    for (int l = 0; l < W; l++)
      TD_ASSERT(v[r][l] == l * W + c);  // column c, rows in order
    final[c] = r;
  }
}

// One W x W block: source rows j = J.. in vectors along i = I.., transposed: col[c]
// gets the local holding output row I + c's W elements from J. at: the index with
// di = I and dj = J.
static void ew_block(KernelBuilder *kb, const EwTile *t, LStmtList *into, const LIndex *at, int *col) {
  const Node *n = t->ns->data[0];
  int W = t->w, cur[EW_MAX_W];
  LIndex idx[TD_MAX_DIMS];
  memcpy(idx, at, sizeof idx);
  for (int r = 0; r < W; r++) {
    idx[t->dj] = at[t->dj];
    idx[t->dj].base += r;
    LExpr *e = kb_node_expr(kb, n, idx);
    TD_ASSERT(e->kind == LX_LOAD && !e->idx.dyn);
    cur[r] = kb_new_local(kb, t->bits);
    kb_push(kb, into, ls_let(kb->cx, cur[r], lx_vload(kb->cx, t->bits, W, e->buf, e->idx)));
  }
  ew_transpose(kb, into, t->bits, W, cur, col);
}

void ew_transpose(KernelBuilder *kb, LStmtList *into, DType dt, int W, const int *rows, int *col) {
  int L = 16 / dtype_size(dt);
  if (L > W)
    L = W;
  int cur[EW_MAX_W], sel[EW_MAX_W], final[EW_MAX_W];
  TD_ASSERT(W <= EW_MAX_W);
  memcpy(cur, rows, sizeof(int) * (size_t)W);
  for (int u = 1; u < W; u *= 2) {
    int next[EW_MAX_W];
    for (int r = 0; r < W; r++) {
      if (r & u)
        continue;
      LExpr *a = lx_local_v(kb->cx, dt, W, cur[r]), *b = lx_local_v(kb->cx, dt, W, cur[r + u]);
      for (int h = 0; h < 2; h++) {
        ew_shuffle_sel(W, L, u, h, sel);
        int l = next[r + h * u] = kb_new_local(kb, dt);
        kb_push(kb, into, ls_let(kb->cx, l, lx_shuffle(kb->cx, a, b, sel, W)));
      }
    }
    memcpy(cur, next, sizeof(int) * (size_t)W);
  }
  ew_final(W, L, final);
  for (int c = 0; c < W; c++)
    col[c] = cur[final[c]];
}

// nb blocks side by side along dj (nb W elements: a 64-byte line of each output row
// where one block's rows are narrower), each output row's pieces joined by shuffles
// into one vector and stored once.
static void ew_blocks(KernelBuilder *kb, const EwTile *t, LStmtList *into, const LIndex *at, int nb) {
  const Node *n = t->ns->data[0];
  int W = t->w, col[EW_MAX_GROUP][EW_MAX_W];
  LIndex idx[TD_MAX_DIMS];
  memcpy(idx, at, sizeof idx);
  for (int g = 0; g < nb; g++) {
    idx[t->dj] = at[t->dj];
    idx[t->dj].base += g * W;
    ew_block(kb, t, into, idx, col[g]);
  }
  int arg = kb_arg(kb, kb->buf_of[n->out->buf->id], false, true), sel[EW_MAX_GROUP * EW_MAX_W];
  idx[t->dj] = at[t->dj];
  for (int c = 0; c < W; c++) {
    int piece[EW_MAX_GROUP], lanes = W;
    for (int g = 0; g < nb; g++)
      piece[g] = col[g][c];
    for (int k = nb; k > 1; k /= 2, lanes *= 2) {  // halve the pieces, doubling their lanes
      for (int l = 0; l < 2 * lanes; l++)
        sel[l] = l;
      for (int g = 0; g < k / 2; g++) {
        LExpr *a = lx_local_v(kb->cx, t->bits, lanes, piece[2 * g]), *b = lx_local_v(kb->cx, t->bits, lanes, piece[2 * g + 1]);
        int l = kb_new_local(kb, t->bits);
        kb_push(kb, into, ls_let(kb->cx, l, lx_shuffle(kb->cx, a, b, sel, 2 * lanes)));
        piece[g] = l;
      }
    }
    idx[t->di] = at[t->di];
    idx[t->di].base += c;
    LExpr *v = lx_local_v(kb->cx, t->bits, lanes, piece[0]);
    kb_push(kb, into, kb_store_stmt(kb, arg, kb_view_index(kb, &n->out->view, idx), v));
  }
}

// A tile of extents ext[di] x ext[dj] from idx: groups of nb W x W blocks that fill
// a line of each output row, single blocks where ext[dj] leaves fewer, the rest scalar.
static void ew_vector_tile(KernelBuilder *kb, const EwTile *t, LStmtList *into, bool par) {
  int W = t->w, di = t->di, dj = t->dj, nb = EW_LINE / (W * dtype_size(t->bits));
  if (nb < 1)
    nb = 1;
  int64_t ei = t->ext[di], ej = t->ext[dj], iv = ei / W * W, jv = ej / W * W, jg = ej / (nb * W) * (nb * W);
  if (!iv || !jv) {
    ew_scalar_tile(kb, t, into, t->idx, ei, ej, par);
    return;
  }
  LIndex at[TD_MAX_DIMS];
  memcpy(at, t->idx, sizeof at);
  if (jg) {
    LStmtList *in = kb_step_loop(kb, into, jg / (nb * W), t->idx[dj], nb * W, par, &at[dj]);
    in = kb_step_loop(kb, in, iv / W, t->idx[di], W, par && jg == nb * W, &at[di]);
    ew_blocks(kb, t, in, at, nb);
  }
  if (jv > jg) {  // single blocks over the columns that fill no line
    memcpy(at, t->idx, sizeof at);
    at[dj].base += jg;
    LIndex base = at[dj];
    LStmtList *in = kb_step_loop(kb, into, (jv - jg) / W, base, W, par && !jg, &at[dj]);
    in = kb_step_loop(kb, in, iv / W, t->idx[di], W, false, &at[di]);
    ew_blocks(kb, t, in, at, 1);
  }
  memcpy(at, t->idx, sizeof at);
  at[di].base += iv;  // the rows below the blocks, every column
  ew_scalar_tile(kb, t, into, at, ei - iv, ej, false);
  at[di] = t->idx[di];
  at[dj].base += jv;  // the columns right of the blocks
  ew_scalar_tile(kb, t, into, at, iv, ej - jv, false);
}

// The last dim (dj) of an untiled copy that moves bits, from..from + S: vectors of t->vl
// elements, then the scalar rest.
static void ew_vector_row(KernelBuilder *kb, EwTile *t, LStmtList *into, int64_t from, int64_t S, bool par) {
  const Node *n = t->ns->data[0];
  int64_t vl = t->vl, nv = S / vl;
  if (nv) {
    LStmtList *in = kb_step_loop(kb, into, nv, kb_ix_const(from), vl, par, &t->idx[t->dj]);
    LExpr *e = kb_node_expr(kb, n, t->idx);
    TD_ASSERT(e->kind == LX_LOAD && !e->idx.dyn);
    LExpr *v = lx_vload(kb->cx, t->bits, (int)vl, e->buf, e->idx);
    int arg = kb_arg(kb, kb->buf_of[n->out->buf->id], false, true);
    kb_push(kb, in, kb_store_stmt(kb, arg, kb_view_index(kb, &n->out->view, t->idx), v));
  }
  if (S % vl)
    ew_stores(kb, t, kb_step_loop(kb, into, S % vl, kb_ix_const(from + nv * vl), 1, par && !nv, &t->idx[t->dj]),
              t->idx);
}

// The loops of dims d.. (the first loop made is parallel with par), then the stores.
static void ew_nest(KernelBuilder *kb, EwTile *t, LStmtList *into, int d, bool par) {
  const View *ov = t->ov;
  if (d == ov->ndim) {
    if (t->di >= 0 && t->w)
      ew_vector_tile(kb, t, into, par);
    else if (t->di >= 0)
      ew_scalar_tile(kb, t, into, t->idx, t->ext[t->di], t->ext[t->dj], par);
    else
      ew_stores(kb, t, into, t->idx);
    return;
  }
  for (int c = 0; c <= t->cuts->n[d]; c++) {  // each range between cuts (all of the dim if none)
    int64_t from, S = cut_range(t, d, c, &from) - from;
    if (t->vl && d == t->dj) {
      ew_vector_row(kb, t, into, from, S, par);
      continue;
    }
    if (d != t->di && d != t->dj) {
      ew_nest(kb, t, kb_step_loop(kb, into, S, kb_ix_const(from), 1, par, &t->idx[d]), d + 1, par && S == 1);
      continue;
    }
    int64_t T = t->tile[d], nt = S / T;
    t->ext[d] = T;
    if (nt)
      ew_nest(kb, t, kb_step_loop(kb, into, nt, kb_ix_const(from), T, par, &t->idx[d]), d + 1, par && nt == 1);
    if (S % T) {  // the last tile, shorter
      t->idx[d] = kb_ix_const(from + nt * T);
      t->ext[d] = S % T;
      ew_nest(kb, t, into, d + 1, par && !nt);
    }
  }
}

// Whether node n, split at t's cuts, is a copy in every range between them (one load of
// its own dtype, unit-stride along t->di: a piece of each cat): ranges of the cut dims
// one combination after another (at most EW_MAX_RANGES), each probed with its extents.
enum { EW_MAX_RANGES = 64 };
static bool ew_copy_pieces(KernelBuilder *kb, const EwTile *t, const Node *n) {
  int nd = t->ov->ndim, at[TD_MAX_DIMS] = {0};
  int64_t combos = 1;
  for (int d = 0; d < nd; d++)
    combos *= t->cuts->n[d] + 1;
  if (combos > EW_MAX_RANGES)
    return false;
  bool copy = true;
  for (int64_t c = 0; c < combos && copy; c++) {
    LIndex pidx[TD_MAX_DIMS];
    for (int d = 0; d < nd; d++) {
      int64_t from, to = cut_range(t, d, at[d], &from);
      pidx[d] = probe_index(t->ov, d);
      pidx[d].base = from;
      kb->probe_ext[d] = t->cuts->n[d] ? to - from : 0;
    }
    LExpr *e = kb_node_expr(kb, n, pidx);
    copy = copy_load(e, n, t->di) && transposed_dim(e, nd, t->dj) == t->di;
    for (int d = 0; d < nd && ++at[d] > t->cuts->n[d]; d++)  // the next combination
      at[d] = 0;
  }
  memset(kb->probe_ext, 0, sizeof kb->probe_ext);
  return copy;
}

void ew_build(KernelBuilder *kb, const NodeList *ns) {
  const View *ov = &ns->data[0]->out->view;
  KbCuts cuts = {0};
  EwTile t = {.ns = ns, .cuts = &cuts, .ov = ov, .di = -1, .dj = -1};
  LIndex pidx[TD_MAX_DIMS];
  for (int d = 0; d < ov->ndim; d++) {
    pidx[d] = probe_index(ov, d);
    if (ov->shape[d] > 1)
      t.dj = d;
  }
  // probe the loads and the inline cats' pieces; the args and errors that registers are
  // dropped again (they come back in store order when the nest is built)
  int nargs = kb->k->args.len, nerr = kb->k->errors.len;
  bool copy = false;
  kb->cuts = &cuts;
  for (int i = 0; i < ns->len; i++) {
    const Node *n = ns->data[i];
    LExpr *e = ew_value(kb, n, pidx);  // (a store's: for the cuts of the cats it reads)
    if (t.dj < 0 || t.di >= 0 || kb->naive || n->op == OP_STORE)
      continue;
    t.di = transposed_dim(e, ov->ndim, t.dj);
    copy = ns->len == 1 && t.di >= 0 && copy_load(e, n, t.di);
  }
  kb->cuts = NULL;
  bool split = kb_cuts_sorted(&cuts, ov);  // each range's loops read one piece of each cat directly
  if (split && t.di >= 0)  // (tiles lie within the ranges between cuts)
    copy = ns->len == 1 && ew_copy_pieces(kb, &t, ns->data[0]);
  kb->k->args.len = nargs;
  kb->k->errors.len = nerr;
  if (t.di < 0) {
    // a copy of f16 or bf16 along unit strides (clone, a permute that keeps the last
    // dim): vectors of its bits, as the blocks move them, where the scalar nest converts
    // each element to f32 and back in integer ops (4096² f16 clone: C 16.1-16.8 ms ->
    // 1.25, LLVM 6.4-10.7 -> 1.37-1.42; bf16 head split [8, 512, 12, 64]: C 0.43 ->
    // 0.28, LLVM 0.26 either way; --cpu=znver3, 64-byte vectors so that a streamed
    // line is written whole: 4.7-32 -> 1.24-1.31). The scalar rest converts (a NaN's
    // payload may quiet).
    const Node *n = ns->data[0];
    DType dt = n->out->dtype;
    int64_t vl = kb->cpu ? EW_LINE / dtype_size(dt) : 0;  // (a line: streamed whole with AVX2 too)
    bool half = dt == DT_F16 || dt == DT_BF16;
    if (ns->len == 1 && !kb->naive && half && ov->ndim > 0 && t.dj == ov->ndim - 1 && vl >= 2 &&
        !split && ov->shape[t.dj] >= vl) {
      LExpr *e = kb_node_expr(kb, n, pidx);
      LIndex oi = kb_view_index(kb, &n->out->view, pidx);
      if (copy_load(e, n, t.dj) && kb_ix_coef(&oi, PROBE_VAR + t.dj) == 1 && !oi.dyn) {
        t.vl = (int)vl;
        t.bits = lx_bits_dtype(dt);
      }
      kb->k->args.len = nargs;
      kb->k->errors.len = nerr;
    }
    if (!t.vl)
      t.dj = -1;
  } else {  // the tile shape of the comment above, in elements of the (first) output
    int64_t es = dtype_size(ns->data[0]->out->dtype), tj = EW_ROW_BYTES / es, ti = EW_RUN_BYTES / es;
    while (ti > tj && ov->shape[t.di] / ti < EW_MIN_TILES)
      ti /= 2;
    t.tile[t.di] = ti;
    t.tile[t.dj] = tj;
    // register blocks: a copy on a CPU, both dims at least W (a wide W halved, down to
    // half the registers, for a dim shorter than it)
    int64_t w = kb->cpu ? kb->cpu->vec_bytes / es : 0, half = kb->cpu ? kb->cpu->nregs / 2 : 0;
    if (kb->cpu && w > (half >= 16 ? 2 * half : half))
      w = half >= 16 ? 2 * half : half;
    while (w > half && (ov->shape[t.di] < w || ov->shape[t.dj] < w))
      w /= 2;
    if (copy && w >= 2 && w <= EW_MAX_W && ov->shape[t.di] >= w && ov->shape[t.dj] >= w && tj % w == 0) {
      t.w = (int)w;
      t.bits = lx_bits_dtype(ns->data[0]->out->dtype);
    }
  }
  ew_nest(kb, &t, &kb->k->body, 0, view_numel(*ov) >= PARALLEL_WORK);
  if (t.di >= 0 && kb->cpu)  // tiles write lines far apart: results streamed whatever the LLC (the top)
    for (int a = 0; a < kb->k->args.len; a++)
      kb->k->args.data[a].stream |= kb->k->args.data[a].written;
}

// ============================================================================
// ONE: cat, stack, store (each alone in its kernel)
// ============================================================================
// A part already in place (ir/place.c): its kernel wrote it into the join's buffer.
static bool part_placed(const Node *n, int i) { return n->srcs[i]->buf == n->out->buf; }

static void build_cat(KernelBuilder *kb, const Node *n) {
  bool stack = n->op == OP_STACK;
  int a = n->attr.dim, left = 0;
  for (int i = 0; i < n->nsrc; i++)
    left += !part_placed(n, i);
  if (!left)
    return;
  if (stack) {  // the parts have one shape: one nest over it, each part stored at its index of dim a
                // (a complex result's (real, imaginary) pairs are written together, in one pass)
    const Value *s0 = n->srcs[0];
    LIndex idx[TD_MAX_DIMS], oidx[TD_MAX_DIMS];
    LStmtList *body = kb_nest(kb, &kb->k->body, s0->view.ndim, s0->view.shape, idx,
                              view_numel(s0->view) * left >= PARALLEL_WORK, NULL);
    for (int i = 0; i < n->nsrc; i++) {
      if (part_placed(n, i))
        continue;
      for (int d = 0, k = 0; d < n->out->view.ndim; d++)
        oidx[d] = d == a ? kb_ix_const(i) : idx[k++];
      kb_store_node(kb, body, n, oidx, kb_value(kb, n->srcs[i], idx));
    }
    return;
  }
  int64_t off = 0;
  for (int i = 0; i < n->nsrc; i++) {  // a cat: a nest per part, stored from its offset along dim a
    const Value *s = n->srcs[i];
    int64_t at = off;
    off += s->view.shape[a];
    if (part_placed(n, i))
      continue;
    LIndex idx[TD_MAX_DIMS], oidx[TD_MAX_DIMS];
    LStmtList *body =
        kb_nest(kb, &kb->k->body, s->view.ndim, s->view.shape, idx, view_numel(s->view) >= PARALLEL_WORK, NULL);
    memcpy(oidx, idx, sizeof *idx * (size_t)s->view.ndim);
    oidx[a].base += at;
    kb_store_node(kb, body, n, oidx, kb_value(kb, s, idx));
  }
}

// x[idx] = v or x[idx] op= v: srcs[0] the target view, srcs[1] the value.
static void build_store(KernelBuilder *kb, const Node *n) {
  const Value *t = n->srcs[0], *v = n->srcs[1];
  int buf = kb->buf_of[t->buf->id];
  TD_ASSERT(buf >= 0);
  LIndex idx[TD_MAX_DIMS], vidx[TD_MAX_DIMS];
  LStmtList *body =
      kb_nest(kb, &kb->k->body, t->view.ndim, t->view.shape, idx, view_numel(t->view) >= PARALLEL_WORK, NULL);
  // PyTorch's setitem drops the value's leading size-1 dims: align from the right
  if (!v->is_scalar) {
    int lead = t->view.ndim - v->view.ndim;
    for (int j = 0; j < v->view.ndim; j++)
      vidx[j] = (j + lead < 0 || v->view.shape[j] == 1) ? kb_ix_const(0) : idx[j + lead];
  }
  LExpr *val = store_value(kb, n, kb_value(kb, v, vidx), idx);
  kb_push(kb, body, kb_store_stmt(kb, kb_arg(kb, buf, false, true), kb_view_index(kb, &t->view, idx), val));
}

void ew_build_one(KernelBuilder *kb, const Node *n) {
  switch (n->op) {
  case OP_CAT: case OP_STACK: build_cat(kb, n); break;
  case OP_STORE: build_store(kb, n); break;
  case OP_INDEX_PUT: case OP_SCATTER: scatter_build(kb, n); break;
  case OP_DWCONV: depthwise_build(kb, n); break;
  default: td_unreachable();
  }
}
