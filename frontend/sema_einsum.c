// frontend/sema_einsum.c: torch.einsum(equation, *operands). The equation is read and
// checked as PyTorch 1.13's einsum reads it (its messages, in its order): each operand's
// labels against its dims and the sizes seen so far, the output's labels. ir/build_einsum.c
// contracts the operands so labelled (EinsumArgs); its dry run reports what bmm refuses.
#include "frontend/sema_internal.h"

#include <inttypes.h>
#include <string.h>

// A label: 'A'..'Z' are 0..25 and 'a'..'z' 26..51 (PyTorch's order: an implicit output
// lists its letters so), the ellipsis' dims are NLETTER + j.
enum { NLETTER = EINSUM_LETTERS, NLABEL = EINSUM_LABELS };

static bool is_letter(int c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
static int letter_id(int c) { return c <= 'Z' ? c - 'A' : c - 'a' + 26; }

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

// Operand i's labels (a->lab[i]), checked against its dims and the sizes seen so far
// (PyTorch's checks and order).
static bool read_operand(Sema *sema, Loc loc, const char *s, const Equation *q, int i, const Ast *x, int64_t *size,
                         EinsumArgs *a) {
  const View *v = &x->ty->view;
  int nlab = 0, d = 0, first[NLETTER];
  for (int k = q->begin[i]; k < q->end[i]; k++) {
    if (s[k] == '.') k += 2;
    else if (s[k] != ' ') nlab++;
  }
  memset(first, -1, sizeof first);
  a->n[i] = v->ndim;
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
        a->lab[i][d] = (int8_t)(NLETTER + j);
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
    a->lab[i][d++] = (int8_t)l;
  }
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
  return einsum_equation(sema, e, d->b.build, s, loc, ops, nops);
}

TType *einsum_equation(Sema *sema, Ast *e, BuildFn build, const char *s, Loc loc, Ast **ops, int nops) {
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
  // the operands' labels
  int64_t size[NLABEL];
  for (int l = 0; l < NLABEL; l++) size[l] = 1;
  EinsumArgs ea = {.nops = nops, .nout = q.nout};
  for (int i = 0; i < nops; i++)
    if (!read_operand(sema, loc, s, &q, i, ops[i], size, &ea)) return poison(sema);
  for (int j = 0; j < q.nout; j++) ea.out[j] = (int8_t)q.out[j];
  return built(sema, e, build, KEEP(sema, ea), ops, nops);
}
