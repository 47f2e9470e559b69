// frontend/sema_einsum.c: torch.einsum(equation, *operands), built from parts. The
// equation is read and checked as PyTorch 1.13's einsum reads it (its messages, in its
// order). Each operand becomes a term: its repeated labels taken as diagonals, its size-1
// dims dropped (they broadcast, as PyTorch counts only dims of another size). Then the
// terms are combined left to right, two at a time: the labels only one side has and
// nothing later needs (a later operand, the output) are summed out of that side first;
// the labels both sides have and nothing later needs are contracted by one matmul whose
// operands are views of the two (the shared kept labels its batch dims, one label of
// each side its rows and columns, the others broadcast batch dims); a pair with nothing
// to contract is a broadcast mul. The result is permuted to the output's order.
// Invariant: the parts are views, except sum, mul, matmul, and a reshape that merges
// several contracted labels (a copy only where the strides do not allow a view).
#include "frontend/sema_internal.h"

#include <inttypes.h>
#include <string.h>

// A label: 'A'..'Z' are 0..25 and 'a'..'z' 26..51 (PyTorch's order: an implicit output
// lists its letters so), the ellipsis' dims are NLETTER + j; a dim a matmul adds is NOLAB.
enum { NLETTER = 52, NLABEL = NLETTER + TD_MAX_DIMS, NOLAB = -1 };

static bool is_letter(int c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
static int letter_id(int c) { return c <= 'Z' ? c - 'A' : c - 'a' + 26; }

// A tensor and the label of each of its dims.
typedef struct Term {
  Ast *x;
  int n;
  int lab[TD_MAX_DIMS];
} Term;

static int term_find(const Term *t, int l) {
  for (int i = 0; i < t->n; i++)
    if (t->lab[i] == l) return i;
  return -1;
}

static bool step(Term *t, Ast *y) {
  t->x = y;
  return !is_poison(y->ty);
}

// t's dims in the order of labels order[0..t->n)
static bool term_permute(Sema *sema, const Ast *e, Term *t, const int *order) {
  int64_t perm[TD_MAX_DIMS];
  bool same = true;
  for (int i = 0; i < t->n; i++) {
    perm[i] = term_find(t, order[i]);
    TD_ASSERT(perm[i] >= 0);
    same = same && perm[i] == i;
  }
  if (same) return true;
  memcpy(t->lab, order, sizeof(int) * (size_t)t->n);
  return step(t, part_call(sema, e, "permute", (Ast *[]){t->x, part_ints(sema, e, t->n, perm)}, 2));
}

// a new size-1 dim labelled l at position at
static bool term_unsqueeze(Sema *sema, const Ast *e, Term *t, int at, int l) {
  if (!check_rank(sema, call_loc(e), t->n + 1)) return false;
  memmove(t->lab + at + 1, t->lab + at, sizeof(int) * (size_t)(t->n - at));
  t->lab[at] = l;
  t->n++;
  return step(t, part_call(sema, e, "unsqueeze", (Ast *[]){t->x, part_int(sema, e, at)}, 2));
}

static bool term_squeeze(Sema *sema, const Ast *e, Term *t, int at) {
  memmove(t->lab + at, t->lab + at + 1, sizeof(int) * (size_t)(t->n - at - 1));
  t->n--;
  return step(t, part_call(sema, e, "squeeze", (Ast *[]){t->x, part_int(sema, e, at)}, 2));
}

// t summed over the dims whose label is not in need
static bool term_sum(Sema *sema, const Ast *e, Term *t, const bool *need) {
  int64_t dims[TD_MAX_DIMS];
  int nd = 0, k = 0;
  for (int i = 0; i < t->n; i++) {
    if (need[t->lab[i]]) t->lab[k++] = t->lab[i];
    else dims[nd++] = i;
  }
  if (nd == 0) return true;
  t->n = k;
  return step(t, part_call(sema, e, "sum", (Ast *[]){t->x, part_ints(sema, e, nd, dims)}, 2));
}

// t with its dims at [from, from + k) merged into one (a view when the strides allow)
static bool term_merge(Sema *sema, const Ast *e, Term *t, int from, int k) {
  if (k == 1) return true;
  const View *v = &t->x->ty->view;
  int64_t shape[TD_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < v->ndim; i++) {
    if (i > from && i < from + k) shape[n - 1] = wrap_mul(shape[n - 1], v->shape[i]);
    else shape[n++] = v->shape[i];
  }
  memmove(t->lab + from + 1, t->lab + from + k, sizeof(int) * (size_t)(t->n - from - k));
  t->n = n;
  return step(t, part_call(sema, e, "reshape", (Ast *[]){t->x, part_ints(sema, e, n, shape)}, 2));
}

// ============================================================================
// Combining two terms
// ============================================================================
// x * y broadcast, labelled as x's labels and then y's own: y permuted to that order,
// with a size-1 dim for each label of x's after its first (broadcasting adds the others)
static bool pair_mul(Sema *sema, const Ast *e, Term *x, Term *y) {
  int all[2 * TD_MAX_DIMS], n = 0, order[TD_MAX_DIMS], k = 0;
  for (int i = 0; i < x->n; i++) all[n++] = x->lab[i];
  for (int i = 0; i < y->n; i++)
    if (term_find(x, y->lab[i]) < 0) all[n++] = y->lab[i];
  if (!check_rank(sema, call_loc(e), n)) return false;
  for (int i = 0; i < n; i++)
    if (term_find(y, all[i]) >= 0) order[k++] = all[i];
  if (!term_permute(sema, e, y, order)) return false;
  for (int i = 0, j = 0; i < n; i++) {
    if (term_find(y, all[i]) >= 0) j++;
    else if (j > 0 && !term_unsqueeze(sema, e, y, j++, all[i])) return false;
  }
  while (x->n < n)
    if (!term_unsqueeze(sema, e, x, x->n, all[x->n])) return false;
  Term r = {.x = part_binary(sema, e, OP_MUL, "mul", x->x, y->x), .n = n};
  memcpy(r.lab, all, sizeof(int) * (size_t)n);
  *x = r;
  return !is_poison(r.x->ty);
}

// the labels both have and nothing later needs, contracted by one matmul
static bool pair_matmul(Sema *sema, const Ast *e, Term *x, Term *y, const bool *keep) {
  const TType *ta = x->x->ty, *tb = y->x->ty;
  if (ta->dtype != tb->dtype) {  // bmm's checks: PyTorch contracts with it
    diag_error(sema->cx, call_loc(e), "expected scalar type %s but found %s", torch_name(ta->dtype),
               torch_name(tb->dtype));
    return false;
  }
  if (!dtype_is_float(ta->dtype)) {
    diag_error(sema->cx, call_loc(e), "\"bmm_cuda\" not implemented for '%s'", torch_name(ta->dtype));
    return false;
  }
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
  if (nc > 1 && view_numel(tb->view) > view_numel(ta->view))
    for (int i = 0, k = 0; i < y->n; i++)
      if (!keep[y->lab[i]] && term_find(x, y->lab[i]) >= 0) C[k++] = y->lab[i];
  // rows: x's last own label, columns: y's; their other own labels are batch dims the
  // other side broadcasts: x [B, M', 1.., m, C], y [B, 1.., N', C, n] -> [B, M', N', m, n]
  int mr = nm ? nm - 1 : 0, nr = nn ? nn - 1 : 0;
  if (!check_rank(sema, call_loc(e), nb + mr + nr + 2)) return false;
  int order[TD_MAX_DIMS], k = 0;
  for (int i = 0; i < nb; i++) order[k++] = B[i];
  for (int i = 0; i < nm; i++) order[k++] = M[i];
  for (int i = 0; i < nc; i++) order[k++] = C[i];
  if (!term_permute(sema, e, x, order)) return false;
  if (nm == 0 && !term_unsqueeze(sema, e, x, nb, NOLAB)) return false;
  for (int i = 0; i < nr && nb + mr > 0; i++)
    if (!term_unsqueeze(sema, e, x, nb + mr, N[i])) return false;
  if (!term_merge(sema, e, x, x->n - nc, nc)) return false;
  k = 0;
  for (int i = 0; i < nb; i++) order[k++] = B[i];
  for (int i = 0; i < nr; i++) order[k++] = N[i];
  for (int i = 0; i < nc; i++) order[k++] = C[i];
  if (nn) order[k++] = N[nn - 1];
  if (!term_permute(sema, e, y, order)) return false;
  if (nn == 0 && !term_unsqueeze(sema, e, y, y->n, NOLAB)) return false;
  for (int i = 0; i < mr && nb > 0; i++)
    if (!term_unsqueeze(sema, e, y, nb, M[i])) return false;
  if (!term_merge(sema, e, y, y->n - 1 - nc, nc)) return false;
  Ast *p = part_call(sema, e, "matmul", (Ast *[]){x->x, y->x}, 2);
  Term r = {.x = p};
  for (int i = 0; i < nb; i++) r.lab[r.n++] = B[i];
  for (int i = 0; i < mr; i++) r.lab[r.n++] = M[i];
  for (int i = 0; i < nr; i++) r.lab[r.n++] = N[i];
  r.lab[r.n++] = nm ? M[nm - 1] : NOLAB;
  r.lab[r.n++] = nn ? N[nn - 1] : NOLAB;
  if (is_poison(p->ty)) return false;
  TD_ASSERT(p->ty->view.ndim == r.n);
  if (nn == 0 && !term_squeeze(sema, e, &r, r.n - 1)) return false;
  if (nm == 0 && !term_squeeze(sema, e, &r, r.n - 1 - (nn > 0))) return false;
  *x = r;
  return true;
}

// x combined with y; keep: the labels a later operand or the output has
static bool pair(Sema *sema, const Ast *e, Term *x, Term *y, const bool *keep) {
  bool need[NLABEL];
  memcpy(need, keep, sizeof need);
  for (int i = 0; i < y->n; i++) need[y->lab[i]] = true;
  if (!term_sum(sema, e, x, need)) return false;
  memcpy(need, keep, sizeof need);
  for (int i = 0; i < x->n; i++) need[x->lab[i]] = true;
  if (!term_sum(sema, e, y, need)) return false;
  for (int i = 0; i < x->n; i++)
    if (!keep[x->lab[i]] && term_find(y, x->lab[i]) >= 0) return pair_matmul(sema, e, x, y, keep);
  return pair_mul(sema, e, x, y);
}

// ============================================================================
// The equation
// ============================================================================
typedef struct Equation {
  int nops;
  int begin[MAX_LIST], end[MAX_LIST];  // each operand's subscripts in the text
  int nout, out[NLABEL];               // the output's labels
  int ell;                             // the dims an ellipsis covers
} Equation;

// The operands' subscripts: PyTorch's checks of the left side, in its order.
static bool read_lhs(Sema *sema, Loc loc, const char *s, int len, int nops, Equation *q) {
  int cur = 0;
  bool ell = false;
  q->begin[0] = 0;
  for (int i = 0; i < len; i++) {
    char c = s[i];
    if (c == ' ') continue;
    if (c == '.') {
      if (ell) {
        diag_error(sema->cx, loc, "einsum(): found '.' for operand %d for which an ellipsis was already found", cur);
        return false;
      }
      if (!(i + 2 < len && s[i + 1] == '.' && s[i + 2] == '.')) {
        diag_error(sema->cx, loc, "einsum(): found '.' for operand %d that is not part of any ellipsis", cur);
        return false;
      }
      i += 2;
      ell = true;
    } else if (c == ',') {
      q->end[cur++] = i;
      if (cur >= nops) {
        diag_error(sema->cx, loc, "einsum(): fewer operands were provided than specified in the equation");
        return false;
      }
      q->begin[cur] = i + 1;
      ell = false;
    } else if (!is_letter(c)) {
      diag_error(sema->cx, loc, "einsum(): invalid subscript given at index %d in the equation string, subscripts "
                 "must be in [a-zA-Z]", i);
      return false;
    }
  }
  q->end[cur] = len;
  if (cur != nops - 1) {
    diag_error(sema->cx, loc, "einsum(): more operands were provided than specified in the equation");
    return false;
  }
  q->nops = nops;
  return true;
}

// The output's labels: written after "->", else the ellipsis' dims and the letters
// written once, in PyTorch's order.
static bool read_rhs(Sema *sema, Loc loc, const char *s, int lhs_len, bool arrow, const int *count, Equation *q) {
  q->nout = 0;
  if (!arrow) {
    for (int j = 0; j < q->ell; j++) q->out[q->nout++] = NLETTER + j;
    for (int l = 0; l < NLETTER; l++)
      if (count[l] == 1) q->out[q->nout++] = l;
    return true;
  }
  const char *r = s + lhs_len + 2;
  int len = (int)strlen(r);
  bool ell = false, in_out[NLETTER] = {0};
  for (int i = 0; i < len; i++) {
    char c = r[i];
    if (c == ' ') continue;
    if (c == '.') {
      if (ell) {
        diag_error(sema->cx, loc, "einsum(): found '.' for output but an ellipsis (...) was already found");
        return false;
      }
      if (!(i + 2 < len && r[i + 1] == '.' && r[i + 2] == '.')) {
        diag_error(sema->cx, loc, "einsum(): found '.' for output that is not part of any ellipsis (...)");
        return false;
      }
      i += 2;
      ell = true;
      for (int j = 0; j < q->ell && q->nout < NLABEL; j++) q->out[q->nout++] = NLETTER + j;
      continue;
    }
    if (!is_letter(c)) {
      diag_error(sema->cx, loc, "einsum(): invalid subscript given at index %d in the equation string, subscripts "
                 "must be in [a-zA-Z]", lhs_len + 2 + i);
      return false;
    }
    int l = letter_id(c);
    if (count[l] == 0 || in_out[l]) {
      diag_error(sema->cx, loc, "einsum(): output subscript %c %s", c,
                 in_out[l] ? "appears more than once in the output" : "does not appear in the equation for any input "
                 "operand");
      return false;
    }
    in_out[l] = true;
    if (q->nout < NLABEL) q->out[q->nout++] = l;
  }
  return true;
}

// Operand i as a term: its labels checked against its dims and the sizes seen so far
// (PyTorch's checks and order), its diagonals taken, its size-1 dims dropped.
static bool read_operand(Sema *sema, const Ast *e, Loc loc, const char *s, const Equation *q, int i, Ast *x,
                         int64_t *size, Term *t) {
  const View *v = &x->ty->view;
  int nlab = 0, d = 0, first[NLETTER];
  for (int k = q->begin[i]; k < q->end[i]; k++) {
    if (s[k] == '.') k += 2;
    else if (s[k] != ' ') nlab++;
  }
  memset(first, -1, sizeof first);
  t->x = x;
  t->n = v->ndim;
  for (int k = q->begin[i]; k < q->end[i]; k++) {
    if (s[k] == ' ') continue;
    if (s[k] == '.') {
      k += 2;
      int nd = v->ndim - nlab;
      for (int j = q->ell - nd; j < q->ell; j++, d++) {
        int64_t z = v->shape[d];
        if (z != 1 && size[NLETTER + j] != 1 && size[NLETTER + j] != z) {
          diag_error(sema->cx, loc, "einsum(): dimension %d covered by ellipsis in operand %dhas size %" PRId64
                     " which does not broadcast with previously seen ellipsis with size %" PRId64
                     " for the respective dimension", j, i, z, size[NLETTER + j]);
          return false;
        }
        if (z != 1) size[NLETTER + j] = z;
        t->lab[d] = NLETTER + j;
      }
      continue;
    }
    int l = letter_id(s[k]);
    int64_t z = v->shape[d];
    if (first[l] < 0) {
      if (z != 1 && size[l] != 1 && size[l] != z) {
        diag_error(sema->cx, loc, "einsum(): subscript %c has size %" PRId64 " for operand %d which does not "
                   "broadcast with previously seen size %" PRId64, s[k], z, i, size[l]);
        return false;
      }
      if (z != 1) size[l] = z;
      first[l] = d;
    } else if (z != v->shape[first[l]]) {
      diag_error(sema->cx, loc, "einsum(): subscript %c is repeated for operand %d but the sizes don't match, %" PRId64
                 " != %" PRId64, s[k], i, z, v->shape[first[l]]);
      return false;
    }
    t->lab[d++] = l;
  }
  // a repeated label: the diagonal of its two dims, last
  for (int a = 0; a < t->n; a++)
    for (int b = a + 1; b < t->n; b++) {
      if (t->lab[a] != t->lab[b]) continue;
      int l = t->lab[a];
      Ast *args[4] = {t->x, part_int(sema, e, 0), part_int(sema, e, a), part_int(sema, e, b)};
      memmove(t->lab + b, t->lab + b + 1, sizeof(int) * (size_t)(t->n - b - 1));
      memmove(t->lab + a, t->lab + a + 1, sizeof(int) * (size_t)(t->n - a - 1));
      t->lab[t->n - 2] = l;
      t->n--;
      if (!step(t, part_call(sema, e, "diagonal", args, 4))) return false;
      a = -1;  // again from the start
      break;
    }
  for (int a = t->n - 1; a >= 0; a--)
    if (t->x->ty->view.shape[a] == 1 && !term_squeeze(sema, e, t, a)) return false;
  return true;
}

// ============================================================================
// einsum(*args): torch.einsum's Python wrapper, then ATen's einsum
// ============================================================================
// The letters of subscript list a (0..25: 'A'..'Z', 26..51: 'a'..'z') appended to s.
static bool sublist(Sema *sema, const Ast *e, Ast *a, char *s, int *len) {
  int64_t v[MAX_LIST];
  int n;
  if (!get_ints(sema, e, a, "subscripts", v, &n)) return false;
  for (int i = 0; i < n; i++) {
    if (v[i] < 0 || v[i] >= NLETTER) {
      diag_error(sema->cx, a->loc, "einsum(): subscript in subscript list is not within the valid range [0, 52)");
      return false;
    }
    s[(*len)++] = (char)(v[i] < 26 ? 'A' + v[i] : 'a' + v[i] - 26);
  }
  return true;
}

// einsum(op0, sub0, op1, sub1, ..., [out]): the wrapper writes the equation of the
// lists; the operands are the arguments between them.
static bool sublist_equation(Sema *sema, const Ast *e, Ast **args, int nargs, const char **eq, Ast ***ops,
                             int *nops) {
  char *s = arena_alloc(&sema->cx->arena, (size_t)nargs * (MAX_LIST + 1) + 3);
  int len = 0;
  for (int k = 1; k < nargs; k += 2) {
    if (k > 1) s[len++] = ',';
    if (!sublist(sema, e, args[k], s, &len)) return false;
  }
  if (nargs % 2) {
    s[len++] = '-', s[len++] = '>';
    if (!sublist(sema, e, args[nargs - 1], s, &len)) return false;
  }
  s[len] = 0;
  *eq = s;
  *nops = 0;
  *ops = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)nargs);
  for (int k = 0; k < nargs - nargs % 2; k += 2) (*ops)[(*nops)++] = args[k];
  return true;
}

TType *ck_einsum(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast **args, **ops;
  int nargs, nops, npos = 0;
  for (int i = 0; i < e->list.len; i++) npos += e->list.data[i]->kind != AST_KWARG;
  if (npos < 2 || !seq_items(sema, e->bargs[0], &args, &nargs) || nargs < 2) {
    diag_error(sema->cx, call_loc(e), "einsum(): must specify the equation string and at least one operand, or at "
               "least one operand and its subscripts list");
    return poison(sema);
  }
  Ast *eqa = args[0];
  const char *s;
  Loc loc = eqa->loc;
  if (is_tensor(eqa->ty)) {  // einsum(op0, sub0, op1, sub1, ..., [out])
    loc = call_loc(e);
    if (!sublist_equation(sema, e, args, nargs, &s, &ops, &nops)) return poison(sema);
  } else if (eqa->ty->kind != TY_STR) {
    diag_error(sema->cx, eqa->loc, "einsum(): argument 'equation' (position 1) must be str, not %s",
               py_type_name(eqa->ty));
    return poison(sema);
  } else {
    s = eqa->ty->module;
    ops = args + 1;
    nops = nargs - 1;
  }
  while (nops == 1 && (ops[0]->ty->kind == TY_LIST || ops[0]->ty->kind == TY_TUPLE)) {  // einsum(eq, [a, b])
    Ast *l = ops[0];
    if (!seq_items(sema, l, &ops, &nops)) {
      diag_error(sema->cx, l->loc, "einsum of the tuple a function returns is not supported: unpack it first");
      return poison(sema);
    }
    if (nops == 0) {
      diag_error(sema->cx, call_loc(e), "einsum(): must specify the equation string and at least one operand, or at "
                 "least one operand and its subscripts list");
      return poison(sema);
    }
  }
  for (int i = 0; i < nops; i++)
    if (!is_tensor(ops[i]->ty)) {
      diag_error(sema->cx, ops[i]->loc, "expected Tensor as element %d in argument 1, but got %s", i,
                 py_type_name(ops[i]->ty));
      return poison(sema);
    }
  if (nops > MAX_LIST) {
    diag_error(sema->cx, call_loc(e), "einsum of %d operands is not supported: at most %d", nops, MAX_LIST);
    return poison(sema);
  }
  // the equation, as ATen reads it
  const char *arrow = strstr(s, "->");
  int lhs_len = arrow ? (int)(arrow - s) : (int)strlen(s);
  Equation q;
  if (!read_lhs(sema, loc, s, lhs_len, nops, &q)) return poison(sema);
  int count[NLETTER] = {0};
  q.ell = 0;
  for (int i = 0; i < nops; i++) {
    int nlab = 0, nd = ops[i]->ty->view.ndim;
    bool ell = false;
    for (int k = q.begin[i]; k < q.end[i]; k++) {
      if (s[k] == '.') ell = true, k += 2;
      else if (s[k] != ' ') nlab++, count[letter_id(s[k])]++;
    }
    if (ell && nd - nlab > q.ell) q.ell = nd - nlab;
    if (ell && nlab > nd) {
      diag_error(sema->cx, loc, "einsum(): the number of subscripts in the equation (%d) is more than the number of "
                 "dimensions (%d) for operand %d", nlab, nd, i);
      return poison(sema);
    }
    if (!ell && nlab != nd) {
      diag_error(sema->cx, loc, "einsum(): the number of subscripts in the equation (%d) does not match the number of "
                 "dimensions (%d) for operand %d and no ellipsis was given", nlab, nd, i);
      return poison(sema);
    }
  }
  if (!read_rhs(sema, loc, s, lhs_len, arrow != NULL, count, &q)) return poison(sema);
  if (!check_rank(sema, call_loc(e), q.nout)) return poison(sema);
  // the terms
  int64_t size[NLABEL];
  for (int l = 0; l < NLABEL; l++) size[l] = 1;
  Term *ts = arena_alloc(&sema->cx->arena, sizeof(Term) * (size_t)nops);
  for (int i = 0; i < nops; i++)
    if (!read_operand(sema, e, loc, s, &q, i, ops[i], size, &ts[i])) return poison(sema);
  // left to right, each pair keeping what the output and the later operands have
  bool keep[NLABEL] = {0};
  for (int k = 0; k < q.nout; k++) keep[q.out[k]] = true;
  Term *r = &ts[0];
  for (int i = 1; i < nops; i++) {
    bool later[NLABEL];
    memcpy(later, keep, sizeof later);
    for (int j = i + 1; j < nops; j++)
      for (int k = 0; k < ts[j].n; k++) later[ts[j].lab[k]] = true;
    if (!pair(sema, e, r, &ts[i], later)) return poison(sema);
  }
  if (!term_sum(sema, e, r, keep)) return poison(sema);
  // the output's order; the labels every operand had as size 1 come back as size-1 dims
  int order[TD_MAX_DIMS], k = 0;
  for (int j = 0; j < q.nout; j++)
    if (term_find(r, q.out[j]) >= 0) order[k++] = q.out[j];
  TD_ASSERT(k == r->n);
  if (!term_permute(sema, e, r, order)) return poison(sema);
  for (int j = 0; j < q.nout; j++)
    if (j >= r->n || r->lab[j] != q.out[j])
      if (!term_unsqueeze(sema, e, r, j, q.out[j])) return poison(sema);
  if (r->x == ops[0]) {  // 'ij->ij': the operand itself, as a view
    int64_t id[TD_MAX_DIMS];
    for (int j = 0; j < r->n; j++) id[j] = j;
    step(r, part_call(sema, e, "permute", (Ast *[]){r->x, part_ints(sema, e, r->n, id)}, 2));
  }
  return become(sema, e, r->x);
}
