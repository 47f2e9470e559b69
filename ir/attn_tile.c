// ir/attn_tile.c: the CPU schedule of ATTN kernels (attn_tile_build, called by
// ir/attn.c for a CPU): scaled_dot_product_attention on tiles of MR query rows, two
// vector registers wide (AVX-512 f32: 32 rows; one vector when L is at most that), a
// last tile of fewer rows padded, against blocks of KB = 32 keys. ir/attn.c's header
// gives the arithmetic (the running max m, sum l and sums acc, the factor c); this file
// orders it so that the query rows are the vector lanes throughout: every per-row
// quantity (a score of one key for the tile's rows, m, l, c, a sum for one value
// column) is one vector, so neither product nor the softmax ever reduces across lanes.
//
//   for batch... [parallel], query tiles i0 (MR rows) [parallel when the batch loop is not]:
//     (k rotated, attr.rope: kr[j][e] = k's row j rotated, all S keys, once per batch: the
//      micro-kernel's k rows then)
//     (q rotated, attr.rope: qr[r][e] = q's row i0 + r rotated, pair by pair, qt's source then)
//     qt[e][r] = q[i0 + r, e] * scale (0 in the padding); m[r] = -inf, l[r] = 0, acc[e][r] = 0
//     for key blocks j0 (KB keys, the last S % KB; a causal tile skips the blocks
//                        past its last row's diagonal):
//       scores: sc[jj][..] = sum over e of k[j0 + jj, e] * qt[e][..]: the program's GEMM
//         micro-kernel (ir/gemm.c, LProgram.funcs), k's rows read in place as its rows,
//         qt its B panel, sc its tile, 8 keys a call (the last call ending at the
//         block's end, the rows it shares with the one before computed again, alike);
//         k's block first copied and converted into scratch when it is not of the
//         computing dtype or not unit-stride in e; fewer keys than a call: register
//         tiles (KR keys x 2 row vectors of FMA accumulators, each k element broadcast)
//       softmax, loops over r innermost (the backends vectorize them; exp by sched_cpu):
//         x = sc (+ mask, or -inf where hidden) into sc, b[r] = max over jj
//         m'[r] = maximum(m[r], b[r]); c[r] = m == m' ? 1 : exp(m - m'); m = m'
//         p = x == -inf ? 0 : exp(x - m) into sc, b[r] = sum over jj; l = l * c + b
//         (c's and p's exp by attn_weight: 0 below a floor, no subnormals)
//       values: acc[e][..] *= c[..], then acc[e][..] += sum over jj of v[j0 + jj, e] *
//         sc[jj][..]: the micro-kernel again, v's columns read in place as its rows (a
//         divisor of Ev a call), sc its B panel, acc its tile (its sums loaded); v's
//         block copied into scratch as k's may be; Ev smaller than a call: registers
//     out[i0 + r, e] = acc[e][r] * (1 / l[r])
// With a single key block (S <= KB, T.one) there is nothing to rescale: b is m, l and acc
// start from that block's own (no c, no exp(m - m'), no acc *= c, no zeroing of acc). A
// padded last tile's state loops run over all MR lanes (whole vectors, as a full tile's)
// unless a mask is read at the row; its padding rows (q = 0) stay finite and are never
// stored.
//
// q is copied once per tile into qt, and acc * (1 / l) stored out, V x V blocks through
// the registers where q's and out's rows are unit-stride, else scalar (copy_tile). The
// LB_TEMPs qt, sc, acc and st (m, l, b and c), each MR lanes wide, have a region per batch when the batch loop is the parallel one
// (the tiles of a batch take turns in it, so it stays in the caches), per tile when the
// tile loop is, else one: parallel iterations share nothing. The rows being lanes, the
// tiling changes no rounding (results do not depend on MR); the products' FMA and the
// scale applied to q do, so results differ from ir/attn.c's rows in the last bits.
#include <math.h>

#include "ir/kernel.h"

enum { MAX_REG = 32, MAX_RV = 2, KB_ROWS = 32 };
enum { ST_M, ST_L, ST_B, ST_C, NST };  // st's rows: running max, running sum, block's max/sum, factor

typedef struct Tile {
  KernelBuilder *kb;
  const Node *n;
  const Value *q, *k, *v, *mask;
  int nd, id, ed;  // dims: count, query rows (L), the last (E, Ev)
  int64_t L, S, E, Ev;
  int64_t Lpad;    // L rounded up to whole tiles: every tile's temps hold MR rows (lanes)
  DType cd;
  int V, MR, KB;   // lanes of a vector; query rows per tile (MAX_RV vectors); keys per block
  int KR, EC;      // keys of a scores sub-tile, value columns of a values sub-tile (registers)
  bool kmicro, vmicro;    // the products as the GEMM micro-kernel (k's rows, v's columns in place)
  GemmMicro km, vm;       //   its shapes: keys x MR lanes, value columns x MR lanes
  int64_t ldk, ldv;       //   k's and v's rows apart
  bool kcopy, vcopy;      //   a block of k (v) copied first, converted, into scratch (its
                          //   dtype is not the computing one, or its e stride is not 1)
  int kv;                 //   that scratch (a buffer: kt at 0, KB x E; vt at KB * E, KB x Ev)
  bool krot;              // k rotated (attr.rope): all S keys of the batch into kr first, read there
  int kr;                 //   that buffer (S x E; per thread where the batch loop is the parallel one)
  int qr;                 // q rotated (attr.rope): the tile's rows rotated into this scratch (MR x E,
                          //   row-major: vector loops) first, copied from there; else -1
  bool qvec, ovec;        // q's rows (or its rotated ones) read, out's rows written, by vectors
                          //   (unit-stride in e, the computing dtype: the copies' blocks)
  bool one;               // a single key block (S <= KB): no running rescale (see key_block)
  int qt, sc, acc, st;      // the temps (program buffers)
  enum { SLOT_ONE, SLOT_BATCH, SLOT_TILE } slots;  // which tiles share a region of them (tile_at)
  LIndex idx[TD_MAX_DIMS];  // the batch dims' indices
  LIndex bat;               // the batch, linear
} Tile;

// The tile being built: rows i0 + 0..mr; its state loops (softmax, m, l, c) run over
// lanes 0..all: MR, so that a padded last tile's loops are whole vectors like the others'
// (its padding rows have q = 0: finite scores, state and sums, never stored), or mr
// where a mask is read at the row.
typedef struct Rows {
  LIndex i0;
  int mr, all;
} Rows;

static LExpr *fc(const Tile *T, double v) { return kb_fconst(T->kb, T->cd, v); }
static LExpr *bin(const Tile *T, Op op, LExpr *x, LExpr *y) { return kb_binary(T->kb, op, T->cd, x, y); }
static LExpr *ref(const Tile *T, int local) { return kb_local_ref(T->kb, local); }
static LExpr *vref(const Tile *T, int lanes, int local) {
  return lanes > 1 ? lx_local_v(T->kb->cx, T->cd, lanes, local) : kb_local_ref(T->kb, local);
}
static LExpr *splat(const Tile *T, int lanes, LExpr *x) { return lanes > 1 ? lx_splat(T->kb->cx, lanes, x) : x; }
static LExpr *vload(const Tile *T, int buf, LIndex at, int lanes) {
  KernelBuilder *kb = T->kb;
  int arg = kb_arg(kb, buf, true, true);
  return lanes > 1 ? lx_vload(kb->cx, T->cd, lanes, arg, at) : lx_load(kb->cx, T->cd, arg, at);
}
static void vstore(const Tile *T, LStmtList *into, int buf, LIndex at, LExpr *x) {
  kb_push(T->kb, into, kb_store_stmt(T->kb, kb_arg(T->kb, buf, true, true), at, x));
}
static LExpr *fma_v(const Tile *T, int lanes, LExpr *s, LExpr *x, int acc) {
  return lx_fma(T->kb->cx, splat(T, lanes, s), x, vref(T, lanes, acc));
}

// The logical index of tensor dims (batch dims from the tile, then row i and column c).
static void index_of(const Tile *T, LIndex i, LIndex c, LIndex *x) {
  for (int d = 0; d < T->id; d++)
    x[d] = T->idx[d];
  x[T->id] = i, x[T->ed] = c;
}

static LExpr *value_at(const Tile *T, const Value *src, LIndex i, LIndex c) {
  LIndex x[TD_MAX_DIMS];
  index_of(T, i, c, x);
  return kb_cast(T->kb, kb_value(T->kb, src, x), T->cd);
}

// Rotated source s's pair c < E/2 at row i, and its elements' columns (ir/attn.c).
static void rope_pair(const Tile *T, int s, LIndex i, LIndex c, LExpr **lo, LExpr **hi, LIndex *at_lo,
                      LIndex *at_hi) {
  LIndex x[TD_MAX_DIMS];
  index_of(T, i, c, x);
  attn_rope_pair(T->kb, T->n, s, x, T->cd, lo, hi, at_lo, at_hi);
}

// Element (row r of the tile, column x) of a temp laid out per tile as [w][mr], in the
// tile's region: MR x w elements per batch when the batch loop is the parallel one (the
// tiles of a batch take turns), per tile when the tile loop is, else one for all.
static LIndex tile_at(const Tile *T, const Rows *R, int64_t w, LIndex x, LIndex r) {
  LIndex at = kb_ix_sum(T->kb, r, &x, T->MR);
  if (T->slots == SLOT_BATCH)
    at = kb_ix_sum(T->kb, at, &T->bat, T->MR * w);
  if (T->slots == SLOT_TILE)
    at = kb_ix_sum(T->kb, kb_ix_sum(T->kb, at, &T->bat, T->Lpad * w), &R->i0, w);
  return at;
}

// A loop over the tile's rows (*r: its index) into `into`; returns the body.
static LStmtList *rows_loop(const Tile *T, LStmtList *into, const Rows *R, LIndex *r) {
  return kb_step_loop(T->kb, into, R->mr, kb_ix_const(0), 1, false, r);
}

// A loop over the lanes of the tile's state (Rows.all).
static LStmtList *state_loop(const Tile *T, LStmtList *into, const Rows *R, LIndex *r) {
  return kb_step_loop(T->kb, into, R->all, kb_ix_const(0), 1, false, r);
}

// st row `which` of the tile, at row r.
static LIndex st_at(const Tile *T, const Rows *R, int which, LIndex r) {
  return tile_at(T, R, NST, kb_ix_const(which), r);
}

// How a row of w elements is taken in sub-tiles of at most most: *per each (as even
// as the registers allow), and the count of full ones (the rest w % *per).
static int64_t sub_tiles(int64_t w, int most, int *per) {
  int64_t n = (w + most - 1) / most;
  *per = (int)((w + n - 1) / n);
  return w / *per;
}

// ---- the transposing copies ----
// qt from q (rows in, lanes out) and out from acc (lanes in, rows out) read or write
// one side MR elements apart. Where the row side is unit-stride in e and of the
// computing dtype (q or its rotated rows read, out written), they move V x V blocks
// through the registers: V vector loads, scaled (q by the scale, acc by 1 / l: each
// element as the scalar copy would, so the results are the same bits), log2(V) rounds
// of shuffles (ew_transpose), V vector stores: bench/workloads/sdpa.tdsl's sdpa_256 and
// sdpa_causal_256 0.93x and 0.91x the time of the scalar copies with the LLVM backend,
// 1.00x and 0.98x with C (gcc vectorized the scalar loop itself, with permutes), sdpa_1024
// and the seed attention unchanged (1024 keys a tile: the copies weigh little). For the C
// backend (CpuTarget.c_source) they stay scalar: no faster there, and each shuffle's C
// (with its fallback for compilers without vector extensions) is ~600 bytes, 64 a block
// (GPT-2 small's --emit=c 59 -> 210 KB). The rows
// and columns past whole blocks (a padded tile's last rows, E % V columns), and every
// element where the row side is not so, stay scalar loops (LStmt.vector 1: the
// vectorizer would make 16-lane gathers or scatters of 64-bit indices, which x86 splits
// in two and which cost LLVM ~20M instructions to compile), COPY_UNROLL columns an
// iteration.
enum { COPY_UNROLL = 4 };

typedef enum { COPY_Q, COPY_OUT } CopyKind;

// One element of a copy: row r of the tile, column e; l: the local holding 1 / l (out).
static void copy_elem(const Tile *T, LStmtList *into, const Rows *R, CopyKind kind, LIndex r, LIndex e, int l) {
  KernelBuilder *kb = T->kb;
  LIndex i = kb_ix_sum(kb, R->i0, &r, 1);
  if (kind == COPY_Q) {
    LExpr *qv = T->qr >= 0 ? kb_buf_load(kb, T->qr, kb_ix_sum(kb, kb_ix_sum(kb, kb_ix_const(0), &r, T->E), &e, 1))
                           : value_at(T, T->q, i, e);
    LExpr *qs = bin(T, OP_MUL, qv, fc(T, T->n->attr.scale));
    kb_buf_store(kb, into, T->qt, tile_at(T, R, T->E, e, r), qs);
    return;
  }
  LIndex x[TD_MAX_DIMS];
  index_of(T, i, e, x);
  kb_store_node(kb, into, T->n, x, bin(T, OP_MUL, kb_buf_load(kb, T->acc, tile_at(T, R, T->Ev, e, r)), ref(T, l)));
}

// Columns c0..w of row r: a scalar loop of COPY_UNROLL columns an iteration, the rest after it.
static void copy_row(const Tile *T, LStmtList *into, const Rows *R, CopyKind kind, LIndex r, int64_t c0, int64_t w,
                     int l) {
  int64_t n = (w - c0) / COPY_UNROLL;
  LIndex e;
  if (n) {
    LStmtList *in = kb_step_loop(T->kb, into, n, kb_ix_const(c0), COPY_UNROLL, false, &e);
    if (n > 1)
      into->data[into->len - 1]->vector = 1;  // (kb_step_loop's loop: keep it scalar)
    for (int u = 0; u < COPY_UNROLL; u++)
      copy_elem(T, in, R, kind, r, kb_ix_plus(e, u), l);
  }
  for (int64_t c = c0 + n * COPY_UNROLL; c < w; c++)
    copy_elem(T, into, R, kind, r, kb_ix_const(c), l);
}

// Where a copy's row side (q's row i or out's, column c) is: *arg and *at. (q rotated:
// its scratch, read by copy_block_v itself.)
static void row_side(const Tile *T, CopyKind kind, LIndex i, LIndex c, int *arg, LIndex *at) {
  KernelBuilder *kb = T->kb;
  LIndex x[TD_MAX_DIMS];
  index_of(T, i, c, x);
  if (kind == COPY_Q) {
    LExpr *e = kb_value(kb, T->q, x);
    TD_ASSERT(e->kind == LX_LOAD && e->dt == T->cd && !e->idx.dyn);
    *arg = e->buf, *at = e->idx;
    return;
  }
  *arg = kb_arg(kb, kb->buf_of[T->n->out->buf->id], false, true);
  *at = kb_view_index(kb, &T->n->out->view, x);
}

// The V x V block of rows r0.., columns e0.. (l: the local of 1 / l's lanes r0.., out).
static void copy_block_v(const Tile *T, LStmtList *into, const Rows *R, CopyKind kind, int r0, LIndex e0, int l) {
  KernelBuilder *kb = T->kb;
  int V = T->V, in[KB_ROWS], out[KB_ROWS], arg;
  LIndex at, rr = kb_ix_const(r0);
  for (int k = 0; k < V; k++) {
    LExpr *x;
    if (kind == COPY_Q) {  // row r0 + k: columns e0..
      LIndex i = kb_ix_plus(R->i0, r0 + k);
      if (T->qr >= 0) {
        x = vload(T, T->qr, kb_ix_sum(kb, kb_ix_const((int64_t)(r0 + k) * T->E), &e0, 1), V);
      } else {
        row_side(T, kind, i, e0, &arg, &at);
        x = lx_vload(kb->cx, T->cd, V, arg, at);
      }
      x = lx_binary(kb->cx, OP_MUL, T->cd, x, splat(T, V, fc(T, T->n->attr.scale)));
    } else {  // column e0 + k: rows r0..
      x = lx_binary(kb->cx, OP_MUL, T->cd, vload(T, T->acc, tile_at(T, R, T->Ev, kb_ix_plus(e0, k), rr), V),
                    vref(T, V, l));
    }
    x->lanes = V;
    in[k] = kb_let_local(kb, into, x);
  }
  ew_transpose(kb, into, T->cd, V, in, out);
  for (int k = 0; k < V; k++) {
    LExpr *x = vref(T, V, out[k]);
    if (kind == COPY_Q) {  // column e0 + k: rows r0..
      vstore(T, into, T->qt, tile_at(T, R, T->E, kb_ix_plus(e0, k), rr), x);
      continue;
    }
    row_side(T, kind, kb_ix_plus(R->i0, r0 + k), e0, &arg, &at);  // row r0 + k: columns e0..
    kb_push(kb, into, kb_store_stmt(kb, arg, at, x));
  }
}

// The copy of the tile's rows, columns 0..w: V x V blocks where row_side allows, the rest
// scalar. out: 1 / l is in st's ST_L row.
static void copy_tile(const Tile *T, LStmtList *into, const Rows *R, CopyKind kind, int64_t w) {
  KernelBuilder *kb = T->kb;
  int V = T->V, nv = R->mr / V, l = -1;
  LIndex r, e0;
  int64_t ec = w / V;
  if (V > KB_ROWS || !(kind == COPY_Q ? T->qvec : T->ovec))
    nv = 0, ec = 0;
  for (int h = 0; h < nv && ec; h++) {
    if (kind == COPY_OUT)
      l = kb_let_local(kb, into, vload(T, T->st, st_at(T, R, ST_L, kb_ix_const(h * V)), V));
    copy_block_v(T, kb_step_loop(kb, into, ec, kb_ix_const(0), V, false, &e0), R, kind, h * V, e0, l);
  }
  int64_t done = ec ? (int64_t)nv * V : 0;  // rows done in blocks (their columns past ec * V left)
  for (int part = 0; part < 2; part++) {
    int64_t from = part ? done : 0, to = part ? R->mr : done;
    if (from == to || (!part && ec * V == w))
      continue;
    LStmtList *in = kb_step_loop(kb, into, to - from, kb_ix_const(from), 1, false, &r);
    if (to - from > 1 && w - (part ? 0 : ec * V) < 2 * COPY_UNROLL)
      into->data[into->len - 1]->vector = 1;  // (its body has no loop: keep it scalar)
    if (kind == COPY_OUT)
      l = kb_let_local(kb, in, kb_buf_load(kb, T->st, st_at(T, R, ST_L, r)));
    copy_row(T, in, R, kind, r, part ? 0 : ec * V, w, l);
  }
}

// ---- the products ----

// The tile's rows as vectors: count, and each one's lanes (V, the last mr % V).
static int row_vectors(const Tile *T, const Rows *R, int *lanes) {
  int n = 0;
  for (int at = 0; at < R->mr; at += T->V)
    lanes[n++] = R->mr - at < T->V ? R->mr - at : T->V;
  return n;
}

// scores: keys c0 + 0..kr of the block from key jb, sc[c0 + c][..] = sum over e of
// k[jb + c0 + c, e] * qt[e][..]; kr x (row vectors) accumulators.
static void scores_sub(const Tile *T, LStmtList *into, const Rows *R, LIndex jb, LIndex c0, int kr) {
  KernelBuilder *kb = T->kb;
  LIndex j = kb_ix_sum(kb, jb, &c0, 1), e;
  int lanes[MAX_RV], nv = row_vectors(T, R, lanes), s[MAX_REG][MAX_RV], x[MAX_RV];
  for (int c = 0; c < kr; c++)
    for (int h = 0; h < nv; h++)
      s[c][h] = kb_let_local(kb, into, splat(T, lanes[h], fc(T, 0)));
  LStmtList *in = kb_step_loop(kb, into, T->E, kb_ix_const(0), 1, false, &e);
  for (int h = 0; h < nv; h++)
    x[h] = kb_let_local(kb, in, vload(T, T->qt, tile_at(T, R, T->E, e, kb_ix_const(h * T->V)), lanes[h]));
  for (int c = 0; c < kr; c++) {
    LExpr *kx = T->krot ? kb_buf_load(kb, T->kr, kb_ix_sum(kb, kb_ix_sum(kb, kb_ix_const(c * T->E), &j, T->E), &e, 1))
                        : value_at(T, T->k, kb_ix_plus(j, c), e);
    int w = kb_let_local(kb, in, kx);
    for (int h = 0; h < nv; h++)
      kb_push(kb, in, kb_set(kb, s[c][h], fma_v(T, lanes[h], ref(T, w), vref(T, lanes[h], x[h]), s[c][h])));
  }
  for (int c = 0; c < kr; c++)
    for (int h = 0; h < nv; h++)
      vstore(T, into, T->sc, tile_at(T, R, T->KB, kb_ix_plus(c0, c), kb_ix_const(h * T->V)),
             vref(T, lanes[h], s[c][h]));
}

// values: columns e0 + 0..ec, acc[e][..] = acc * c + sum over jj of v[jb + jj, e] *
// sc[jj][..]; ec x (row vectors) accumulators.
static void values_sub(const Tile *T, LStmtList *into, const Rows *R, LIndex jb, int64_t nb, LIndex e0, int ec) {
  KernelBuilder *kb = T->kb;
  int lanes[MAX_RV], nv = row_vectors(T, R, lanes), a[MAX_REG][MAX_RV], p[MAX_RV];
  for (int h = 0; h < nv; h++) {
    LIndex rh = kb_ix_const(h * T->V);
    if (T->one) {  // the only block: the sums start at 0
      for (int e = 0; e < ec; e++)
        a[e][h] = kb_let_local(kb, into, splat(T, lanes[h], fc(T, 0)));
      continue;
    }
    int c = kb_let_local(kb, into, vload(T, T->st, st_at(T, R, ST_C, rh), lanes[h]));
    for (int e = 0; e < ec; e++) {
      LExpr *old = vload(T, T->acc, tile_at(T, R, T->Ev, kb_ix_plus(e0, e), rh), lanes[h]);
      LExpr *x = lx_binary(kb->cx, OP_MUL, T->cd, old, vref(T, lanes[h], c));
      x->lanes = lanes[h];
      a[e][h] = kb_let_local(kb, into, x);
    }
  }
  LIndex jj;
  LStmtList *in = kb_step_loop(kb, into, nb, kb_ix_const(0), 1, false, &jj);
  LIndex j = kb_ix_sum(kb, jb, &jj, 1);
  for (int h = 0; h < nv; h++)
    p[h] = kb_let_local(kb, in, vload(T, T->sc, tile_at(T, R, T->KB, jj, kb_ix_const(h * T->V)), lanes[h]));
  for (int e = 0; e < ec; e++) {
    int w = kb_let_local(kb, in, value_at(T, T->v, j, kb_ix_plus(e0, e)));
    for (int h = 0; h < nv; h++)
      kb_push(kb, in, kb_set(kb, a[e][h], fma_v(T, lanes[h], ref(T, w), vref(T, lanes[h], p[h]), a[e][h])));
  }
  for (int e = 0; e < ec; e++)
    for (int h = 0; h < nv; h++)
      vstore(T, into, T->acc, tile_at(T, R, T->Ev, kb_ix_plus(e0, e), kb_ix_const(h * T->V)),
             vref(T, lanes[h], a[e][h]));
}

// ---- the softmax step of a block ----

static void softmax(const Tile *T, LStmtList *into, const Rows *R, LIndex jb, int64_t nb) {
  KernelBuilder *kb = T->kb;
  const Node *n = T->n;
  LIndex r, jj;
  // b = -inf; x = s (+ mask), -inf where hidden, into sc (s itself when there is neither);
  // b = x > b ? x : b (a NaN score need not reach m: its p is NaN, which makes the row's l
  // and acc NaN). The only block (T->one): b is m itself (m was -inf, so m' = b), l = 0,
  // and p's sum goes to l (l and acc were 0: c would scale zeros)
  LStmtList *in = state_loop(T, into, R, &r);
  kb_buf_store(kb, in, T->st, st_at(T, R, T->one ? ST_M : ST_B, r), fc(T, -INFINITY));
  if (T->one)
    kb_buf_store(kb, in, T->st, st_at(T, R, ST_L, r), fc(T, 0));
  in = kb_step_loop(kb, into, nb, kb_ix_const(0), 1, false, &jj);
  in = state_loop(T, in, R, &r);
  LIndex i = kb_ix_sum(kb, R->i0, &r, 1), j = kb_ix_sum(kb, jb, &jj, 1), at = tile_at(T, R, T->KB, jj, r);
  LExpr *x = kb_buf_load(kb, T->sc, at);
  bool plain = true;  // x is s
  if (T->mask && T->mask->dtype != DT_BOOL)
    x = bin(T, OP_ADD, x, value_at(T, T->mask, i, j)), plain = false;
  if (n->attr.causal || (T->mask && T->mask->dtype == DT_BOOL)) {
    LIndex mi[TD_MAX_DIMS];
    index_of(T, i, j, mi);
    LExpr *seen = T->mask ? kb_value(kb, T->mask, mi)
                          : kb_binary(kb, OP_LE, DT_BOOL, kb_ix_expr(kb, &j), kb_ix_expr(kb, &i));
    x = kb_select(kb, seen, x, fc(T, -INFINITY)), plain = false;
  }
  int xs = kb_let_local(kb, in, x);
  if (!plain)
    kb_buf_store(kb, in, T->sc, at, ref(T, xs));
  LIndex bi = st_at(T, R, T->one ? ST_M : ST_B, r);
  int b = kb_let_local(kb, in, kb_buf_load(kb, T->st, bi));
  LExpr *gt = kb_binary(kb, OP_GT, DT_BOOL, ref(T, xs), ref(T, b));
  kb_buf_store(kb, in, T->st, bi, kb_select(kb, gt, ref(T, xs), ref(T, b)));
  // m' = max(m, b); c = m == m' ? 1 : exp(m - m'); m = m'; b = 0
  if (!T->one) {
    in = state_loop(T, into, R, &r);
    LIndex mi = st_at(T, R, ST_M, r);
    bi = st_at(T, R, ST_B, r);
    int m = kb_let_local(kb, in, kb_buf_load(kb, T->st, mi));
    int mn = kb_let_local(kb, in, bin(T, OP_MAXIMUM, ref(T, m), kb_buf_load(kb, T->st, bi)));
    LExpr *shift = attn_weight(kb, in, T->cd, bin(T, OP_SUB, ref(T, m), ref(T, mn)), NULL);
    LExpr *same = kb_binary(kb, OP_EQ, DT_BOOL, ref(T, m), ref(T, mn));
    kb_buf_store(kb, in, T->st, st_at(T, R, ST_C, r), kb_select(kb, same, fc(T, 1), shift));
    kb_buf_store(kb, in, T->st, mi, ref(T, mn));
    kb_buf_store(kb, in, T->st, bi, fc(T, 0));
  }
  // p = exp(x - m) (0 for a hidden key) into sc; b (the only block: l) = b + p
  in = kb_step_loop(kb, into, nb, kb_ix_const(0), 1, false, &jj);
  in = state_loop(T, in, R, &r);
  at = tile_at(T, R, T->KB, jj, r);
  bi = st_at(T, R, T->one ? ST_L : ST_B, r);
  int xv = kb_let_local(kb, in, kb_buf_load(kb, T->sc, at));
  LExpr *d = bin(T, OP_SUB, ref(T, xv), kb_buf_load(kb, T->st, st_at(T, R, ST_M, r)));
  LExpr *hidden = kb_binary(kb, OP_EQ, DT_BOOL, ref(T, xv), fc(T, -INFINITY));
  int p = kb_let_local(kb, in, attn_weight(kb, in, T->cd, d, hidden));
  kb_buf_store(kb, in, T->sc, at, ref(T, p));
  kb_buf_store(kb, in, T->st, bi, bin(T, OP_ADD, kb_buf_load(kb, T->st, bi), ref(T, p)));
  if (T->one)
    return;
  // l = l * c + b
  in = state_loop(T, into, R, &r);
  LIndex li = st_at(T, R, ST_L, r);
  LExpr *lc = bin(T, OP_MUL, kb_buf_load(kb, T->st, li), kb_buf_load(kb, T->st, st_at(T, R, ST_C, r)));
  kb_buf_store(kb, in, T->st, li, bin(T, OP_ADD, lc, kb_buf_load(kb, T->st, st_at(T, R, ST_B, r))));
}

// ---- a block, a tile ----

// The element of src (k or v) at key j, column c of the current batch: its arg and index.
static void elem_at(const Tile *T, const Value *src, LIndex j, LIndex c, int *arg, LIndex *at) {
  LIndex x[TD_MAX_DIMS];
  index_of(T, j, c, x);
  LExpr *e = kb_value(T->kb, src, x);
  TD_ASSERT(e->kind == LX_LOAD && e->dt == T->cd && !e->idx.dyn);
  *arg = e->buf, *at = e->idx;
}

// Keys jb + 0..nb of src (k or v: w columns), converted, into the scratch at `off`,
// rows w apart: what the micro-kernel reads when src itself will not do.
static void copy_block(const Tile *T, LStmtList *into, const Value *src, int64_t w, int64_t off, LIndex jb, int64_t nb) {
  KernelBuilder *kb = T->kb;
  LIndex j, e;
  LStmtList *in = kb_step_loop(kb, into, nb, kb_ix_const(0), 1, false, &j);
  in = kb_step_loop(kb, in, w, kb_ix_const(0), 1, false, &e);
  LIndex at = kb_ix_sum(kb, kb_ix_sum(kb, kb_ix_const(off), &j, w), &e, 1);
  kb_push(kb, in, kb_store_stmt(kb, kb_arg(kb, T->kv, true, true), at, value_at(T, src, kb_ix_sum(kb, jb, &j, 1), e)));
}

// Where the micro-kernel reads src's key j (from jb), column c: src itself, its copy, or
// the rotated keys.
static void micro_at(const Tile *T, const Value *src, bool copied, int64_t w, int64_t off, LIndex jb, LIndex j,
                     LIndex c, int *arg, LIndex *at) {
  if (src == T->k && T->krot) {
    *arg = kb_arg(T->kb, T->kr, true, true);
    *at = kb_ix_sum(T->kb, kb_ix_sum(T->kb, kb_ix_sum(T->kb, kb_ix_const(0), &jb, T->E), &j, T->E), &c, 1);
    return;
  }
  if (!copied) {
    elem_at(T, src, kb_ix_sum(T->kb, jb, &j, 1), c, arg, at);
    return;
  }
  *arg = kb_arg(T->kb, T->kv, true, true);
  *at = kb_ix_sum(T->kb, kb_ix_sum(T->kb, kb_ix_const(off), &j, w), &c, 1);
}

// scores of keys jb + 0..nb as the GEMM micro-kernel: sc[c][..] = sum over e of
// k[jb + c, e] * qt[e][..], KR keys a call (k's rows in place), the last call ending at
// the block's last key (rows it shares with the one before are computed again, alike).
static void scores_micro(const Tile *T, LStmtList *into, const Rows *R, LIndex jb, int64_t nb) {
  KernelBuilder *kb = T->kb;
  int kr = T->km.MR;
  int64_t full = nb / kr;
  int ka, qa = kb_arg(kb, T->qt, true, true), sa = kb_arg(kb, T->sc, true, true);
  LIndex at, c0, zero = kb_ix_const(0);
  if (T->kcopy)
    copy_block(T, into, T->k, T->E, 0, jb, nb);
  LStmtList *in = kb_step_loop(kb, into, full, zero, kr, false, &c0);
  for (int last = 0; last < 2; last++) {
    if (last) {
      if (nb % kr == 0)
        break;
      in = into, c0 = kb_ix_const(nb - kr);
    }
    micro_at(T, T->k, T->kcopy, T->E, 0, jb, c0, zero, &ka, &at);
    gemm_micro_call(kb, in, &T->km, ka, at, T->kcopy || T->krot ? T->E : T->ldk, qa, tile_at(T, R, T->E, zero, zero),
                    0, sa, tile_at(T, R, T->KB, c0, zero), T->E, T->MR, kb_iconst(kb, DT_I64, 0));
  }
}

// values as the GEMM micro-kernel: acc[e][..] = acc * c, then acc[e][..] += sum over jj of
// v[jb + jj, e] * sc[jj][..], EC columns a call (v's columns in place); the columns left
// (Ev % EC) by values_sub.
static void values_micro(const Tile *T, LStmtList *into, const Rows *R, LIndex jb, int64_t nb) {
  KernelBuilder *kb = T->kb;
  int ec = T->vm.MR;
  int64_t full = T->Ev / ec;
  LIndex r, e, e0, zero = kb_ix_const(0);
  if (!T->one) {  // (the only block: the call starts the sums, load 0)
    LStmtList *in = kb_step_loop(kb, into, full * ec, zero, 1, false, &e);
    in = state_loop(T, in, R, &r);
    LIndex ai = tile_at(T, R, T->Ev, e, r);
    kb_buf_store(kb, in, T->acc, ai,
                 bin(T, OP_MUL, kb_buf_load(kb, T->acc, ai), kb_buf_load(kb, T->st, st_at(T, R, ST_C, r))));
  }
  if (T->vcopy)
    copy_block(T, into, T->v, T->Ev, T->KB * T->E, jb, nb);
  LStmtList *in = kb_step_loop(kb, into, full, zero, ec, false, &e0);
  int va, sa = kb_arg(kb, T->sc, true, true), aa = kb_arg(kb, T->acc, true, true);
  LIndex at;
  micro_at(T, T->v, T->vcopy, T->Ev, T->KB * T->E, jb, zero, e0, &va, &at);
  gemm_micro_call(kb, in, &T->vm, va, at, T->vcopy ? T->Ev : T->ldv, sa, tile_at(T, R, T->KB, zero, zero), 0, aa,
                  tile_at(T, R, T->Ev, e0, zero), nb, T->MR, kb_iconst(kb, DT_I64, !T->one));
  if (T->Ev % ec)
    values_sub(T, into, R, jb, nb, kb_ix_const(full * ec), (int)(T->Ev % ec));
}

static void key_block(const Tile *T, LStmtList *into, const Rows *R, LIndex jb, int64_t nb) {
  KernelBuilder *kb = T->kb;
  if (T->n->attr.causal) {  // the block is seen by the tile's last row
    LIndex last = kb_ix_plus(R->i0, R->mr - 1);
    LStmt *s = kb_if(kb, kb_binary(kb, OP_LE, DT_BOOL, kb_ix_expr(kb, &jb), kb_ix_expr(kb, &last)));
    kb_push(kb, into, s);
    into = &s->body;
  }
  int kr, ec;
  int64_t full;
  LIndex c0;
  if (T->kmicro && nb >= T->km.MR) {
    scores_micro(T, into, R, jb, nb);
  } else {
    full = sub_tiles(nb, T->KR, &kr);
    if (full)
      scores_sub(T, kb_step_loop(kb, into, full, kb_ix_const(0), kr, false, &c0), R, jb, c0, kr);
    if (nb % kr)
      scores_sub(T, into, R, jb, kb_ix_const(full * kr), (int)(nb % kr));
  }
  softmax(T, into, R, jb, nb);
  if (T->vmicro) {
    values_micro(T, into, R, jb, nb);
    return;
  }
  full = sub_tiles(T->Ev, T->EC, &ec);
  if (full)
    values_sub(T, kb_step_loop(kb, into, full, kb_ix_const(0), ec, false, &c0), R, jb, nb, c0, ec);
  if (T->Ev % ec)
    values_sub(T, into, R, jb, nb, kb_ix_const(full * ec), (int)(T->Ev % ec));
}

static void tile(const Tile *T, LStmtList *into, LIndex i0, int mr) {
  KernelBuilder *kb = T->kb;
  Rows R = {.i0 = i0, .mr = mr, .all = T->mask ? mr : T->MR};
  LIndex e, r;
  // qt = q's rows times the scale, transposed (read along the rows); acc = 0; m = -inf; l = 0
  LStmtList *in;
  if (mr < T->MR) {  // the lanes past the tile's rows (the products compute all MR): zero
    in = kb_step_loop(kb, into, T->E, kb_ix_const(0), 1, false, &e);  // (all MR: whole vectors)
    in = kb_step_loop(kb, in, T->MR, kb_ix_const(0), 1, false, &r);
    kb_buf_store(kb, in, T->qt, tile_at(T, &R, T->E, e, r), fc(T, 0));
  }
  if (T->qr >= 0) {  // the rows rotated, pair by pair
    LIndex c, el, eh;
    LExpr *lo, *hi;
    in = kb_step_loop(kb, rows_loop(T, into, &R, &r), T->E / 2, kb_ix_const(0), 1, false, &c);
    rope_pair(T, 0, kb_ix_sum(kb, R.i0, &r, 1), c, &lo, &hi, &el, &eh);
    LIndex row = kb_ix_sum(kb, kb_ix_const(0), &r, T->E);
    kb_buf_store(kb, in, T->qr, kb_ix_sum(kb, row, &el, 1), lo);
    kb_buf_store(kb, in, T->qr, kb_ix_sum(kb, row, &eh, 1), hi);
  }
  copy_tile(T, into, &R, COPY_Q, T->E);
  if (!T->one) {  // (the only block sets them itself)
    Rows all = {.i0 = i0, .mr = T->MR};
    in = kb_step_loop(kb, into, T->Ev, kb_ix_const(0), 1, false, &e);
    in = rows_loop(T, in, &all, &r);
    kb_buf_store(kb, in, T->acc, tile_at(T, &R, T->Ev, e, r), fc(T, 0));
    in = state_loop(T, into, &R, &r);
    kb_buf_store(kb, in, T->st, st_at(T, &R, ST_M, r), fc(T, -INFINITY));
    kb_buf_store(kb, in, T->st, st_at(T, &R, ST_L, r), fc(T, 0));
  }
  int64_t full = T->S / T->KB, rest = T->S % T->KB;
  if (full) {
    LIndex jb;
    key_block(T, kb_step_loop(kb, into, full, kb_ix_const(0), T->KB, false, &jb), &R, jb, T->KB);
  }
  if (rest)
    key_block(T, into, &R, kb_ix_const(full * T->KB), rest);
  // out = acc * (1 / l) (l = 0 with acc = 0, a row that sees no key: NaN)
  in = state_loop(T, into, &R, &r);
  LIndex li = st_at(T, &R, ST_L, r);
  kb_buf_store(kb, in, T->st, li, bin(T, OP_DIV, fc(T, 1), kb_buf_load(kb, T->st, li)));
  copy_tile(T, into, &R, COPY_OUT, T->Ev);
}

// Whether src (k or v) is read at (j, e) by a plain load of the computing dtype,
// unit-stride in e and moving by *ld >= 0 elements from one key to the next.
static bool micro_operand(Tile *T, const Value *src, int64_t *ld) {
  LIndex x[TD_MAX_DIMS];
  for (int d = 0; d < T->id; d++)
    x[d] = kb_ix_const(0);
  x[T->id] = kb_ix_var(PROBE_VAR), x[T->ed] = kb_ix_var(PROBE_VAR + 1);
  LExpr *e = kb_value(T->kb, src, x);
  if (e->kind != LX_LOAD || e->dt != T->cd || e->idx.dyn || kb_ix_coef(&e->idx, PROBE_VAR + 1) != 1)
    return false;
  *ld = kb_ix_coef(&e->idx, PROBE_VAR);
  return *ld >= 0;
}

// The batch loops as one parallel loop where there are several batch dims (sizes B_0 x
// ... x B_n-1 in order; every other one 1) and the first alone has too few iterations to
// share out: the heads of grouped-query attention split into KV x R (and a batch before
// them), which as serial loops around a parallel one over R cost a parallel region, and
// its wait, per (batch, KV head) (a C kernel 1.4x slower with 2 threads than one region
// over all heads). The loop runs over f < B_0 * ... * B_n-1; dim k < n-1's index a_k
// comes from a serial loop over B_k of which one iteration, 0 <= f - sum over j <= k of
// a_j P_j < P_k (P_k: the sizes after dim k multiplied), goes on, the last dim's index
// being f - sum of a_k P_k: affine, so the micro-kernel's pointers stay affine too. Only
// where every operand's index stays in its tensor over the loops' whole ranges (the
// iterations the guards skip too: what the kernel's argument ranges are worked out
// over): an operand whose index is f's alone (its batch dims laid out as f counts them)
// or the a's (the last dim's stride 0: k or v at their KV heads), or whose mix of them
// (LLaMA's q and result, a sequence dim between the batch and the heads) still lands
// in it. Returns the body, or NULL.
static LStmtList *flat_batches(Tile *T, const View *ov, int nl, const int *dims, bool par_bat) {
  KernelBuilder *kb = T->kb;
  if (!par_bat || nl < 2 || ov->shape[dims[0]] >= PARALLEL_MIN_ITERS)
    return NULL;
  int64_t P[TD_MAX_DIMS], all = 1;
  for (int k = nl - 1; k >= 0; k--)
    P[k] = all, all *= ov->shape[dims[k]];
  for (int o = 0; o <= T->n->nsrc; o++) {  // every source (the rope tables too), then the result
    const View *v = o < T->n->nsrc ? &T->n->srcs[o]->view : &T->n->out->view;
    if (v->ndim != ov->ndim)
      return NULL;
    int64_t st[TD_MAX_DIMS] = {0}, lo = v->offset, hi = v->offset, vlo, vhi, last;
    for (int d = 0; d < v->ndim; d++)
      st[d] = v->shape[d] == 1 ? 0 : v->strides[d];  // (a size-1 dim's index is 0)
    last = st[dims[nl - 1]];
    for (int t = 0; t < nl + 2; t++) {  // the terms: a_0 .. a_n-2, f, then the row and column
      int64_t c = t < nl - 1 ? st[dims[t]] - last * P[t] : t == nl - 1 ? last : st[T->id + t - nl];
      int64_t top = t < nl - 1 ? ov->shape[dims[t]] - 1 : t == nl - 1 ? all - 1 : v->shape[T->id + t - nl] - 1;
      if (c > 0)
        hi += c * top;
      else
        lo += c * top;
    }
    if (!view_extent(*v, &vlo, &vhi) || lo < vlo || hi > vhi)
      return NULL;
  }
  int f = kb_new_var(kb);
  LStmt *fl = kb_loop(kb, f, all);
  fl->parallel = true;
  kb_push(kb, &kb->k->body, fl);
  LStmtList *body = &fl->body;
  LIndex r = kb_ix_var(f);  // f less the dims so far: the rest's flat index
  for (int k = 0; k < nl - 1; k++) {
    int a = kb_new_var(kb);
    LStmt *al = kb_loop(kb, a, ov->shape[dims[k]]);
    kb_push(kb, body, al);
    LIndex av = kb_ix_var(a);
    kb_ix_addmul(kb, &r, &av, -P[k]);
    LExpr *re = kb_ix_expr(kb, &r);
    LExpr *in = kb_binary(kb, OP_LOGICAL_AND, DT_BOOL, kb_binary(kb, OP_GE, DT_BOOL, re, kb_iconst(kb, DT_I64, 0)),
                          kb_binary(kb, OP_LT, DT_BOOL, re, kb_iconst(kb, DT_I64, P[k])));
    LStmt *g = kb_if(kb, in);
    kb_push(kb, &al->body, g);
    body = &g->body;
    T->idx[dims[k]] = av;
  }
  T->idx[dims[nl - 1]] = r;
  return body;
}

// ---- the pass ----

bool attn_tile_build(KernelBuilder *kb, const NodeList *ns) {
  const Node *n = ns->data[0];
  const View *ov = &n->out->view;
  Tile T = {.kb = kb, .n = n, .q = n->srcs[0], .k = n->srcs[1], .v = n->srcs[2],
            .mask = attn_mask(n), .cd = dtype_compute(n->out->dtype)};
  T.nd = ov->ndim, T.id = T.nd - 2, T.ed = T.nd - 1;
  T.L = ov->shape[T.id], T.S = T.k->view.shape[T.id], T.E = T.q->view.shape[T.ed], T.Ev = ov->shape[T.ed];
  if (view_numel(*ov) == 0 || T.S == 0 || T.E == 0 || (T.cd != DT_F32 && T.cd != DT_F64))
    return false;
  const CpuTarget *t = kb->cpu;
  T.V = t->vec_bytes / dtype_size(T.cd);
  T.V = T.V < 2 ? 2 : T.V;
  if (2 * T.L < T.V)
    return false;  // fewer query rows than half a vector (decoding): ir/attn.c's rows do better
  T.MR = T.L <= T.V ? T.V : MAX_RV * T.V;  // (a last tile of fewer rows is padded: lanes past them idle)
  T.KB = KB_ROWS;
  T.one = T.S <= T.KB;
  // each broadcast element of k or v meets every row vector: kr x MAX_RV accumulators,
  // MAX_RV row vectors and the broadcast in the registers
  int regs = (t->nregs - 1 - MAX_RV) / MAX_RV;
  T.KR = T.EC = regs < 2 ? 2 : regs > MAX_REG ? MAX_REG : regs;
  // the products as the GEMM micro-kernel where k's rows and v's columns are unit-stride
  // in e and of the computing dtype: scores keys x MR lanes (k's rows in place, at most
  // 8: their pointers fit the registers), values columns x MR lanes (v's columns in
  // place: as many as divide Ev, up to the registers' room)
  int nv = T.MR / T.V, room = (t->nregs - nv - 1) / nv;
  T.km = (GemmMicro){T.cd, room < 8 ? room : 8, T.MR, T.V, GA_ROWS, false, false, 0, 0};
  T.vm = (GemmMicro){T.cd, 0, T.MR, T.V, GA_COLS, false, false, 0, 0};
  for (int r = room < 14 ? room : 14; r >= 4 && !T.vm.MR; r--)
    if (T.Ev % r == 0)
      T.vm.MR = r;
  T.vm.MR = T.vm.MR ? T.vm.MR : (room < 14 ? room : 14);
  T.kmicro = true, T.vmicro = T.Ev >= T.vm.MR;
  T.krot = n->attr.rope & 2;
  T.kcopy = !T.krot && !micro_operand(&T, T.k, &T.ldk);
  T.vcopy = T.vmicro && !micro_operand(&T, T.v, &T.ldv);
  int64_t ldq;
  bool shuf = !kb->cpu->c_source;  // (C: scalar copies, see the transposing copies)
  T.qvec = shuf && ((n->attr.rope & 1) || micro_operand(&T, T.q, &ldq));
  T.ovec = shuf && n->out->dtype == T.cd && (ov->strides[T.ed] == 1 || ov->shape[T.ed] == 1);
  if (T.kcopy || T.vcopy) {
    T.kv = kb_new_temp(kb, T.cd, T.KB * (T.E + T.Ev), "attention keys and values");
    kb->p->bufs.data[T.kv].scratch = true;
  }
  // the batch loops (parallel when there are enough of them), then the query tiles
  // (parallel otherwise)
  int64_t nbatch = view_numel(*ov) / (T.L * T.Ev), rows = nbatch * T.L, tiles = T.L / T.MR;
  bool par = rows * T.S * (T.E + T.Ev + 4) >= PARALLEL_WORK;
  bool par_bat = par && nbatch >= PARALLEL_MIN_ITERS, par_tiles = par && !par_bat && tiles >= 2;
  T.slots = par_bat ? SLOT_BATCH : par_tiles ? SLOT_TILE : SLOT_ONE;
  T.Lpad = (T.L + T.MR - 1) / T.MR * T.MR;
  int64_t per = T.slots == SLOT_BATCH ? nbatch * T.MR : T.slots == SLOT_TILE ? nbatch * T.Lpad : T.MR;  // temps' rows
  T.qt = kb_new_temp(kb, T.cd, per * T.E, "attention queries");
  T.sc = kb_new_temp(kb, T.cd, per * T.KB, "attention scores");
  T.acc = kb_new_temp(kb, T.cd, per * T.Ev, "attention sums");
  T.st = kb_new_temp(kb, T.cd, per * NST, "attention row state");
  int dims[TD_MAX_DIMS], nl = 0;
  for (int d = 0; d < T.id; d++) {
    T.idx[d] = kb_ix_const(0);
    if (ov->shape[d] != 1)
      dims[nl++] = d;
  }
  LStmtList *body = flat_batches(&T, ov, nl, dims, par_bat);
  if (!body)
    body = kb_outer_loops(kb, &kb->k->body, nl, dims, ov->shape, T.idx, par_bat);
  T.bat = kb_ix_const(0);
  int64_t st = 1;
  for (int d = T.id - 1; d >= 0; st *= ov->shape[d--])
    kb_ix_addmul(kb, &T.bat, &T.idx[d], st);
  T.qr = -1;
  if (n->attr.rope & 1) {
    T.qr = kb_new_temp(kb, T.cd, T.MR * T.E, "attention rotated queries");
    kb->p->bufs.data[T.qr].scratch = true;
  }
  if (T.krot) {  // the batch's keys rotated, once for all its tiles
    T.kr = kb_new_temp(kb, T.cd, T.S * T.E, "attention rotated keys");
    kb->p->bufs.data[T.kr].scratch = T.slots == SLOT_BATCH;  // (else written before the parallel tiles: shared)
    LIndex j, e;
    LStmtList *in = kb_step_loop(kb, body, T.S, kb_ix_const(0), 1, false, &j);
    in = kb_step_loop(kb, in, T.E / 2, kb_ix_const(0), 1, false, &e);
    LExpr *lo, *hi;
    LIndex el, eh, row = kb_ix_sum(kb, kb_ix_const(0), &j, T.E);
    rope_pair(&T, 1, j, e, &lo, &hi, &el, &eh);
    kb_push(kb, in, kb_store_stmt(kb, kb_arg(kb, T.kr, true, true), kb_ix_sum(kb, row, &el, 1), lo));
    kb_push(kb, in, kb_store_stmt(kb, kb_arg(kb, T.kr, true, true), kb_ix_sum(kb, row, &eh, 1), hi));
  }
  if (tiles) {
    LIndex i0;
    tile(&T, kb_step_loop(kb, body, tiles, kb_ix_const(0), T.MR, par_tiles, &i0), i0, T.MR);
  }
  if (T.L % T.MR)
    tile(&T, body, kb_ix_const(tiles * T.MR), (int)(T.L % T.MR));
  Arena *ar = &kb->cx->arena;
  kb->k->sched = arena_printf(ar, "attention tiles %d rows x %d keys, scores %s, values %s", T.MR, T.KB,
                              T.kmicro ? arena_printf(ar, "micro-kernel %d keys", T.km.MR)
                                       : arena_printf(ar, "registers %d keys", T.KR),
                              T.vmicro ? arena_printf(ar, "micro-kernel %d columns", T.vm.MR)
                                       : arena_printf(ar, "registers %d columns", T.EC));
  return true;
}
