// ir/build_einsum.c: torch.einsum's contraction of operands whose labels the front end
// has read and checked (EinsumArgs, ir/build.h). Each operand becomes a term: its repeated
// labels taken as diagonals, its size-1 dims dropped (they broadcast, as PyTorch counts
// only dims of another size). Then the terms are combined left to right, two at a time:
// the labels only one side has and nothing later needs (a later operand, the output) are
// summed out of that side first; the labels both sides have and nothing later needs are
// contracted by one matmul whose operands are views of the two (the shared kept labels
// its batch dims, one label of each side its rows and columns, the others broadcast batch
// dims); a pair with nothing to contract is a broadcast mul. The result is permuted to
// the output's order.
// Invariant: every value made is a view, except sum, mul, matmul, and a reshape that
// merges several contracted labels (a copy only where the strides do not allow a view).
// The dry run's checks (bmm's dtypes, the rank) stop the walk at the first refusal.
#include "ir/build.h"

#include <string.h>

enum { NOLAB = -1 };  // the label of a dim a matmul adds

// A value and the label of each of its dims.
typedef struct Term {
  Value *x;
  int n;
  int lab[TD_MAX_DIMS];
} Term;

static int term_find(const Term *t, int l) {
  for (int i = 0; i < t->n; i++)
    if (t->lab[i] == l) return i;
  return -1;
}

static bool step(Builder *b, Term *t, Value *y) {
  t->x = y;
  return !b->failed;
}

// t's dims in the order of labels order[0..t->n)
static bool term_permute(Builder *b, Term *t, const int *order) {
  int perm[TD_MAX_DIMS];
  bool same = true;
  for (int i = 0; i < t->n; i++) {
    perm[i] = term_find(t, order[i]);
    TD_ASSERT(perm[i] >= 0);
    same = same && perm[i] == i;
  }
  if (same) return true;
  memcpy(t->lab, order, sizeof(int) * (size_t)t->n);
  return step(b, t, build_permute(b, t->x, perm));
}

// a new size-1 dim labelled l at position at
static bool term_unsqueeze(Builder *b, Term *t, int at, int l) {
  if (!build_rank(b, t->n + 1)) return false;
  memmove(t->lab + at + 1, t->lab + at, sizeof(int) * (size_t)(t->n - at));
  t->lab[at] = l;
  t->n++;
  return step(b, t, build_unsqueeze(b, t->x, at));
}

static bool term_squeeze(Builder *b, Term *t, int at) {
  memmove(t->lab + at, t->lab + at + 1, sizeof(int) * (size_t)(t->n - at - 1));
  t->n--;
  return step(b, t, build_squeeze(b, t->x, at));
}

// t summed over the dims whose label is not in need (sum(x, dims))
static bool term_sum(Builder *b, Term *t, const bool *need) {
  uint32_t mask = 0;
  int nd = 0, k = 0, one = -1;
  for (int i = 0; i < t->n; i++) {
    if (need[t->lab[i]]) t->lab[k++] = t->lab[i];
    else mask |= 1u << i, nd++, one = i;
  }
  if (nd == 0) return true;
  t->n = k;
  return step(b, t, build_reduce_mask(b, OP_SUM, t->x, mask, nd == 1 ? one : -1, false, DT_COUNT));
}

// t with its dims at [from, from + k) merged into one (a view when the strides allow)
static bool term_merge(Builder *b, Term *t, int from, int k) {
  if (k == 1) return true;
  const View *v = &t->x->view;
  int64_t shape[TD_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < v->ndim; i++) {
    if (i > from && i < from + k) shape[n - 1] *= v->shape[i];
    else shape[n++] = v->shape[i];
  }
  memmove(t->lab + from + 1, t->lab + from + k, sizeof(int) * (size_t)(t->n - from - k));
  t->n = n;
  return step(b, t, build_reshape(b, t->x, n, shape));
}

// ============================================================================
// Combining two terms
// ============================================================================
// x * y broadcast, labelled as x's labels and then y's own: y permuted to that order,
// with a size-1 dim for each label of x's after its first (broadcasting adds the others)
static bool pair_mul(Builder *b, Term *x, Term *y) {
  int all[2 * TD_MAX_DIMS], n = 0, order[TD_MAX_DIMS], k = 0;
  for (int i = 0; i < x->n; i++) all[n++] = x->lab[i];
  for (int i = 0; i < y->n; i++)
    if (term_find(x, y->lab[i]) < 0) all[n++] = y->lab[i];
  if (!build_rank(b, n)) return false;
  for (int i = 0; i < n; i++)
    if (term_find(y, all[i]) >= 0) order[k++] = all[i];
  if (!term_permute(b, y, order)) return false;
  for (int i = 0, j = 0; i < n; i++) {
    if (term_find(y, all[i]) >= 0) j++;
    else if (j > 0 && !term_unsqueeze(b, y, j++, all[i])) return false;
  }
  while (x->n < n)
    if (!term_unsqueeze(b, x, x->n, all[x->n])) return false;
  Term r = {.x = b_mul(b, x->x, y->x), .n = n};
  memcpy(r.lab, all, sizeof(int) * (size_t)n);
  *x = r;
  return !b->failed;
}

// the labels both have and nothing later needs, contracted by one matmul
static bool pair_matmul(Builder *b, Term *x, Term *y, const bool *keep) {
  if (b->check && b->check->bmm && !b->check->bmm(b->check_ctx, x->x, y->x)) {  // PyTorch contracts with bmm
    b->failed = true;
    return false;
  }
  const View ta = x->x->view, tb = y->x->view;
  int B[TD_MAX_DIMS], M[TD_MAX_DIMS], N[TD_MAX_DIMS], C[TD_MAX_DIMS], nb = 0, nm = 0, nn = 0, nc = 0;
  for (int i = 0; i < x->n; i++) {
    int l = x->lab[i];
    if (term_find(y, l) < 0) M[nm++] = l;
    else if (keep[l]) B[nb++] = l;
    else C[nc++] = l;
  }
  for (int i = 0; i < y->n; i++)
    if (term_find(x, y->lab[i]) < 0) N[nn++] = y->lab[i];
  // several contracted labels are merged in the order of the larger side: where the
  // other's strides do not allow a view, the smaller one is copied
  if (nc > 1 && view_numel(tb) > view_numel(ta))
    for (int i = 0, k = 0; i < y->n; i++)
      if (!keep[y->lab[i]] && term_find(x, y->lab[i]) >= 0) C[k++] = y->lab[i];
  // rows: x's last own label, columns: y's; their other own labels are batch dims the
  // other side broadcasts: x [B, M', 1.., m, C], y [B, 1.., N', C, n] -> [B, M', N', m, n]
  int mr = nm ? nm - 1 : 0, nr = nn ? nn - 1 : 0;
  if (!build_rank(b, nb + mr + nr + 2)) return false;
  int order[TD_MAX_DIMS], k = 0;
  for (int i = 0; i < nb; i++) order[k++] = B[i];
  for (int i = 0; i < nm; i++) order[k++] = M[i];
  for (int i = 0; i < nc; i++) order[k++] = C[i];
  if (!term_permute(b, x, order)) return false;
  if (nm == 0 && !term_unsqueeze(b, x, nb, NOLAB)) return false;
  for (int i = 0; i < nr && nb + mr > 0; i++)
    if (!term_unsqueeze(b, x, nb + mr, N[i])) return false;
  if (!term_merge(b, x, x->n - nc, nc)) return false;
  k = 0;
  for (int i = 0; i < nb; i++) order[k++] = B[i];
  for (int i = 0; i < nr; i++) order[k++] = N[i];
  for (int i = 0; i < nc; i++) order[k++] = C[i];
  if (nn) order[k++] = N[nn - 1];
  if (!term_permute(b, y, order)) return false;
  if (nn == 0 && !term_unsqueeze(b, y, y->n, NOLAB)) return false;
  for (int i = 0; i < mr && nb > 0; i++)
    if (!term_unsqueeze(b, y, nb, M[i])) return false;
  if (!term_merge(b, y, y->n - 1 - nc, nc)) return false;
  Term r = {.x = build_matmul(b, x->x, y->x)};
  for (int i = 0; i < nb; i++) r.lab[r.n++] = B[i];
  for (int i = 0; i < mr; i++) r.lab[r.n++] = M[i];
  for (int i = 0; i < nr; i++) r.lab[r.n++] = N[i];
  r.lab[r.n++] = nm ? M[nm - 1] : NOLAB;
  r.lab[r.n++] = nn ? N[nn - 1] : NOLAB;
  if (b->failed) return false;
  TD_ASSERT(r.x->view.ndim == r.n);
  if (nn == 0 && !term_squeeze(b, &r, r.n - 1)) return false;
  if (nm == 0 && !term_squeeze(b, &r, r.n - 1 - (nn > 0))) return false;
  *x = r;
  return true;
}

// x combined with y; keep: the labels a later operand or the output has
static bool pair(Builder *b, Term *x, Term *y, const bool *keep) {
  bool need[EINSUM_LABELS];
  memcpy(need, keep, sizeof need);
  for (int i = 0; i < y->n; i++) need[y->lab[i]] = true;
  if (!term_sum(b, x, need)) return false;
  memcpy(need, keep, sizeof need);
  for (int i = 0; i < x->n; i++) need[x->lab[i]] = true;
  if (!term_sum(b, y, need)) return false;
  for (int i = 0; i < x->n; i++)
    if (!keep[x->lab[i]] && term_find(y, x->lab[i]) >= 0) return pair_matmul(b, x, y, keep);
  return pair_mul(b, x, y);
}

// Operand i as a term: its diagonals taken (a repeated label: the diagonal of its two
// dims, last), its size-1 dims dropped.
static bool term_of(Builder *b, const EinsumArgs *a, int i, Term *t) {
  t->x = b_in(b, i);
  t->n = a->n[i];
  for (int d = 0; d < t->n; d++) t->lab[d] = a->lab[i][d];
  for (int p = 0; p < t->n; p++)
    for (int q = p + 1; q < t->n; q++) {
      if (t->lab[p] != t->lab[q]) continue;
      int l = t->lab[p];
      Value *dg = build_diagonal(b, t->x, 0, p, q);
      memmove(t->lab + q, t->lab + q + 1, sizeof(int) * (size_t)(t->n - q - 1));
      memmove(t->lab + p, t->lab + p + 1, sizeof(int) * (size_t)(t->n - p - 1));
      t->lab[t->n - 2] = l;
      t->n--;
      if (!step(b, t, dg)) return false;
      p = -1;  // again from the start
      break;
    }
  for (int d = t->n - 1; d >= 0; d--)
    if (t->x->view.shape[d] == 1 && !term_squeeze(b, t, d)) return false;
  return true;
}

int build_einsum(Builder *b, const void *args, Value **out) {
  const EinsumArgs *a = args;
  out[0] = b->dummy;
  Term ts[EINSUM_MAX_OPERANDS] = {0};  // zeroed: -O3 cannot see nops >= 1
  for (int i = 0; i < a->nops; i++)
    if (!term_of(b, a, i, &ts[i])) return 1;
  // left to right, each pair keeping what the output and the later operands have
  bool keep[EINSUM_LABELS] = {0};
  for (int k = 0; k < a->nout; k++) keep[a->out[k]] = true;
  Term *r = &ts[0];
  for (int i = 1; i < a->nops; i++) {
    bool later[EINSUM_LABELS];
    memcpy(later, keep, sizeof later);
    for (int j = i + 1; j < a->nops; j++)
      for (int k = 0; k < ts[j].n; k++) later[ts[j].lab[k]] = true;
    if (!pair(b, r, &ts[i], later)) return 1;
  }
  if (!term_sum(b, r, keep)) return 1;
  // the output's order; the labels every operand had as size 1 come back as size-1 dims
  int order[TD_MAX_DIMS], k = 0;
  for (int j = 0; j < a->nout; j++)
    if (term_find(r, a->out[j]) >= 0) order[k++] = a->out[j];
  TD_ASSERT(k == r->n);
  if (!term_permute(b, r, order)) return 1;
  for (int j = 0; j < a->nout; j++)
    if (j >= r->n || r->lab[j] != a->out[j])
      if (!term_unsqueeze(b, r, j, a->out[j])) return 1;
  out[0] = r->x;
  return 1;
}
