// frontend/sema_einops.c: einops' rearrange, repeat and reduce, as einops reads a pattern
// (`rearrange(x, 'b c (h h2) (w w2) -> b (c h2 w2) h w', h2=2, w2=2)`): its grammar (named
// axes, anonymous axes, parentheses, `...`, `()` and `1`, sizes as keywords, a list of
// tensors stacked first), its checks in its order and its messages ("Error while
// processing rearrange-reduction pattern ..."), each located in the pattern where the
// axis or group it names is written. A pattern becomes einops' recipe over the shapes
// known when compiling (EinopsArgs: reshape to the elementary axes, permute, reduce, new
// axes expanded, reshape to the result's dims), built by ir/build_einops.c.
// Invariants: a pattern is a compile-time str; the recipe is einops' own, step for step,
// so what is a view in PyTorch is one here; only a recipe of more than TD_MAX_DIMS
// elementary axes has neighbours merged first, and only those a view of the input can
// merge (the result's layout is the same).
#include "frontend/sema_internal.h"

#include <inttypes.h>
#include <string.h>

enum { EO_MAX = 64 };  // the axes, and the dims, one side of a pattern may write
enum { EO_REARRANGE, EO_REPEAT, EO_REDUCE, EO_UNKNOWN };  // the rows' variants; a reduction einops lacks

// ============================================================================
// One side of a pattern (einops' ParsedExpression)
// ============================================================================
typedef struct Axis {
  const char *name;  // a named axis; NULL: an anonymous one or the ellipsis
  bool ellipsis;
  int64_t value;     // an anonymous axis' length
  int at, len;       // where it is written in the pattern
} Axis;

typedef struct Group {  // one dim: an axis, (axes ...), () or 1
  int first, n;         // its axes, side->ax[first .. first + n)
  int at, len;
  bool paren;
} Group;

typedef struct Side {
  int at, len;
  Axis ax[EO_MAX];
  int nax;
  Group g[EO_MAX];
  int ng;
  bool ellipsis, ellipsis_paren, anon;  // einops' has_ellipsis, ..._parenthesized, has_non_unitary_anonymous_axes
} Side;

// An error einops raises: its message and where in the pattern (len 0: the pattern
// argument); raw: not an EinopsError (not wrapped in "Error while processing ...").
typedef struct Fail {
  const char *msg;
  int at, len;
  bool raw;
  const Ast *arg;  // at this argument instead (the reduction, a keyword)
} Fail;

static bool fail(Fail *f, int at, int len, const char *msg) {
  *f = (Fail){msg, at, len, false, NULL};
  return false;
}

static bool is_digit(int c) { return c >= '0' && c <= '9'; }
static bool is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80; }

// The text of pat[at, at + len) as einops shows it: "..." is its one character "…".
static const char *shown(Sema *sema, const char *pat, int at, int len) {
  char *s = arena_alloc(&sema->cx->arena, (size_t)len + 1);
  int k = 0;
  for (int i = 0; i < len; i++) {
    if (i + 2 < len && !memcmp(pat + at + i, "...", 3)) {
      memcpy(s + k, "\xe2\x80\xa6", 3);  // U+2026
      k += 3;
      i += 2;
    } else {
      s[k++] = pat[at + i];
    }
  }
  s[k] = 0;
  return s;
}

// Why name (its text x, len n) is no axis name (einops' check_axis_name_return_reason),
// NULL when it is one. underscore: `_` alone is one (einsum).
static const char *name_reason(const char *x, int n, bool ell, bool underscore) {
  bool ident = n > 0 && !ell && !is_digit((unsigned char)x[0]);
  for (int i = 0; i < n && ident; i++) ident = is_alpha((unsigned char)x[i]) || is_digit((unsigned char)x[i]);
  if (!ident) return "not a valid python identifier";
  if (x[0] == '_' || x[n - 1] == '_') {
    if (n == 1 && underscore) return NULL;
    return "axis name should should not start or end with underscore";
  }
  return NULL;
}

// Python's keywords: einops warns of them as axis names.
static bool py_keyword(const char *x, int n) {
  static const char *const kw[] = {"False", "None", "True", "and", "as", "assert", "async", "await", "break",
                                   "class", "continue", "def", "del", "elif", "else", "except", "finally", "for",
                                   "from", "global", "if", "import", "in", "is", "lambda", "nonlocal", "not", "or",
                                   "pass", "raise", "return", "try", "while", "with", "yield"};
  for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++)
    if ((int)strlen(kw[i]) == n && !memcmp(kw[i], x, (size_t)n)) return true;
  return false;
}

typedef struct Reader {
  Sema *sema;
  const char *pat;
  Loc (*loc)(const void *ctx, int at, int len);  // a place in the pattern, for warnings
  const void *loc_ctx;
  bool underscore, dups;  // einsum: `_` is a name; names may repeat
  int warned[EO_MAX], nwarned;  // the names warned of (at), once each as Python's warnings are
} Reader;

// Python's warning of name x (n bytes at p), once per name.
static void warn_name(Reader *r, int p, int n, const char *msg) {
  for (int i = 0; i < r->nwarned; i++)
    if (!strncmp(r->pat + r->warned[i], r->pat + p, (size_t)n) && !is_alpha((unsigned char)r->pat[r->warned[i] + n]) &&
        !is_digit((unsigned char)r->pat[r->warned[i] + n]))
      return;
  if (r->nwarned < EO_MAX) r->warned[r->nwarned++] = p;
  diag_warning(r->sema->cx, r->loc(r->loc_ctx, p, n), "%s", msg);
}

static bool push_group(Side *s, int first, int n, int at, int len, bool paren, Fail *f) {
  if (s->ng >= EO_MAX) return fail(f, at, len, "einops patterns of more than 64 dims on one side are not supported");
  s->g[s->ng++] = (Group){first, n, at, len, paren};
  return true;
}

// einops' add_axis_name: the identifier pat[p, p + n) (ell: where "..." is, or -1), in
// the group being read when paren.
static bool add_axis(Reader *r, Side *s, int p, int n, int ell, bool paren, Fail *f) {
  Sema *sema = r->sema;
  const char *x = r->pat + p;
  bool has_ell = ell >= p && ell < p + n;
  if (s->nax >= EO_MAX) return fail(f, p, n, "einops patterns of more than 64 axes on one side are not supported");
  if (has_ell && n == 3) {
    s->ax[s->nax++] = (Axis){.ellipsis = true, .at = p, .len = n};
    s->ellipsis_paren = paren;
    return paren || push_group(s, s->nax - 1, 1, p, n, false, f);
  }
  for (int k = 0; k < s->nax && !has_ell; k++) {
    const Axis *a = &s->ax[k];
    if (a->name && (int)strlen(a->name) == n && !memcmp(a->name, x, (size_t)n) && !(r->underscore && n == 1 && x[0] == '_') &&
        !r->dups)
      return fail(f, p, n, arena_printf(&sema->cx->arena, "Indexing expression contains duplicate dimension \"%s\"",
                                        a->name));
  }
  bool number = n > 0;
  int64_t value = 0;
  for (int i = 0; i < n && number; i++) {
    number = is_digit((unsigned char)x[i]);
    if (number) value = value > (INT64_MAX - 9) / 10 ? INT64_MAX : value * 10 + (x[i] - '0');
  }
  if (number && value == 1) return paren || push_group(s, s->nax, 0, p, n, false, f);  // `1`: nothing, or a dim of size 1
  if (!number) {
    const char *why = name_reason(x, n, has_ell, r->underscore);
    if (why)
      return fail(f, p, n, arena_printf(&sema->cx->arena, "Invalid axis identifier: %s %s", shown(sema, r->pat, p, n),
                                        why));
    if (py_keyword(x, n))
      warn_name(r, p, n, arena_printf(&sema->cx->arena, "It is discouraged to use axes names that are keywords: %.*s",
                                      n, x));
    if (n == 4 && !memcmp(x, "axis", 4))
      warn_name(r, p, n, "It is discouraged to use 'axis' as an axis name and will raise an error in future");
  } else if (value == 0) {
    return fail(f, p, n, "Anonymous axis should have positive length, not 0");
  }
  Axis a = {.at = p, .len = n};
  if (number) a.value = value, s->anon = true;
  else a.name = arena_strndup(&sema->cx->arena, x, (size_t)n);
  s->ax[s->nax++] = a;
  return paren || push_group(s, s->nax - 1, 1, p, n, false, f);
}

// One side, pat[at, at + len).
static bool read_side(Reader *r, int at, int len, Side *s, Fail *f) {
  const char *t = r->pat + at;
  memset(s, 0, sizeof *s);
  s->at = at, s->len = len;
  int ell = -1, ndots = 0, nell = 0;
  for (int i = 0; i < len; i++) ndots += t[i] == '.';
  for (int i = 0; i + 2 < len;) {
    if (!memcmp(t + i, "...", 3)) {
      if (ell < 0) ell = i;
      nell++;
      i += 3;
    } else {
      i++;
    }
  }
  if (ndots) {
    if (!nell) return fail(f, at, len, "Expression may contain dots only inside ellipsis (...)");
    if (nell != 1 || ndots != 3)
      return fail(f, at, len, "Expression may contain dots only inside ellipsis (...); only one ellipsis for tensor ");
    s->ellipsis = true;
  }
  int open = -1, open_ax = 0, tok = -1, ell_at = ell >= 0 ? at + ell : -1;  // open: the group's '(', its first axis
  for (int i = 0; i < len; i++) {
    int c = (unsigned char)t[i];
    if (c == '(' || c == ')' || c == ' ') {
      if (tok >= 0 && !add_axis(r, s, at + tok, i - tok, ell_at, open >= 0, f)) return false;
      tok = -1;
      if (c == '(') {
        if (open >= 0) return fail(f, at + i, 1, "Axis composition is one-level (brackets inside brackets not allowed)");
        open = i;
        open_ax = s->nax;
      } else if (c == ')') {
        if (open < 0) return fail(f, at + i, 1, "Brackets are not balanced");
        if (!push_group(s, open_ax, s->nax - open_ax, at + open, i + 1 - open, true, f)) return false;
        open = -1;
      }
    } else if (is_alpha(c) || is_digit(c) || (ell >= 0 && i >= ell && i < ell + 3)) {
      if (tok < 0) tok = i;
    } else {
      return fail(f, at + i, 1, arena_printf(&r->sema->cx->arena, "Unknown character '%c'", c));
    }
  }
  if (open >= 0)
    return fail(f, at + open, 1, arena_printf(&r->sema->cx->arena, "Imbalanced parentheses in expression: \"%s\"",
                                              shown(r->sema, r->pat, at, len)));
  return tok < 0 || add_axis(r, s, at + tok, len - tok, ell_at, false, f);
}

// ============================================================================
// Python's text of what einops' messages print
// ============================================================================
static const char *axis_str(Sema *sema, const Axis *a) {
  if (a->ellipsis) return "'\xe2\x80\xa6'";
  if (!a->name) return arena_printf(&sema->cx->arena, "%" PRId64 "-axis", a->value);
  return arena_printf(&sema->cx->arena, "'%s'", a->name);
}

// A set of identifiers, in the order they are written (Python's own order is arbitrary).
static const char *set_str(Sema *sema, const Axis *const *xs, int n) {
  const char *s = "{";
  for (int i = 0; i < n; i++) s = arena_printf(&sema->cx->arena, "%s%s%s", s, i ? ", " : "", axis_str(sema, xs[i]));
  return arena_printf(&sema->cx->arena, "%s}", s);
}

// Whether side s has identifier a (names compare by text; anonymous axes are each their own).
static bool side_has(const Side *s, const Axis *a) {
  for (int i = 0; i < s->nax; i++) {
    const Axis *b = &s->ax[i];
    if (a->ellipsis ? b->ellipsis : a->name && b->name && !strcmp(a->name, b->name)) return true;
  }
  return false;
}

// The identifiers of a that b lacks, appended to out.
static int side_minus(const Side *a, const Side *b, const Axis **out, int n) {
  for (int i = 0; i < a->nax; i++)
    if (!side_has(b, &a->ax[i])) out[n++] = &a->ax[i];
  return n;
}

// ============================================================================
// rearrange, repeat, reduce
// ============================================================================
typedef struct Kw {  // an axis length given as a keyword
  const char *name;
  int64_t v;
  bool is_bool;
  Ast *a;
} Kw;

typedef struct Call {
  Sema *sema;
  Ast *e;
  int op;                  // EO_*
  const char *reduction;   // einops' name: "rearrange", "repeat", "max" ...
  Ast *pa;                 // the pattern argument
  const char *pat;
  int ndim;                // the input's (the list's tensors stacked)
  int64_t shape[TD_MAX_DIMS];
  int64_t strides[TD_MAX_DIMS];
  Kw kw[EO_MAX];
  int nkw;
} Call;

// The place of pat[at, at + len) in the source: the literal's characters when the pattern
// is written there as it is, else the pattern argument.
static Loc pattern_loc(const void *ctx, int at, int len) {
  const Call *c = ctx;
  Loc l = c->pa->loc;
  size_t n = strlen(c->pat);
  if (len <= 0 || c->pa->kind != AST_STR || !l.file || l.end - l.begin != n + 2 || l.end > l.file->len) return l;
  const char *t = l.file->text + l.begin;
  if ((t[0] != '\'' && t[0] != '"') || memcmp(t + 1, c->pat, n)) return l;
  l.begin += 1 + (uint32_t)at;
  l.end = l.begin + (uint32_t)len;
  return l;
}

// Python's text of the keywords, as a dict: {'h': 2, 'w': 3}
static const char *kw_str(const Call *c) {
  Arena *A = &c->sema->cx->arena;
  const char *s = "{";
  for (int i = 0; i < c->nkw; i++) {
    const Kw *k = &c->kw[i];
    const char *v = k->is_bool ? (k->v ? "True" : "False") : arena_printf(A, "%" PRId64, k->v);
    s = arena_printf(A, "%s%s'%s': %s", s, i ? ", " : "", k->name, v);
  }
  return arena_printf(A, "%s}", s);
}

static TType *report(const Call *c, const Fail *f) {
  Sema *sema = c->sema;
  Loc loc = f->arg ? f->arg->loc : pattern_loc(c, f->at, f->len);
  if (f->raw) {
    diag_error(sema->cx, loc, "%s", f->msg);
  } else {
    diag_error(sema->cx, loc, "Error while processing %s-reduction pattern \"%s\". Input tensor shape: torch.Size(%s). "
               "Additional info: %s. %s", c->reduction, c->pat, shape_str(sema, c->ndim, c->shape), kw_str(c), f->msg);
  }
  return poison(sema);
}

// An elementary axis: one of the pattern's axes, or one dim the ellipsis covers.
typedef struct Elem {
  const Axis *src;   // where it is written first (the ellipsis for its dims)
  int ell;           // the ellipsis' dim j, else -1
  int64_t len;
  bool known;        // an anonymous axis, or given as a keyword
  int left, right;   // its position in each side's axes, ellipsis expanded (-1: absent)
  int rgroup;        // its dim of the result
} Elem;

enum { EO_ELEMS = 2 * EO_MAX + 2 * TD_MAX_DIMS };

// The sides with the ellipsis expanded: each side's elementary axes and dims.
typedef struct Recipe {
  Elem el[EO_ELEMS];
  int nel;
  int lax[EO_MAX + TD_MAX_DIMS], nl;  // the left's axes, in order (indices into el)
  int lg[TD_MAX_DIMS + 1], nlg;       // the left's dims: lax[lg[i] .. lg[i + 1])
  const Group *lgsrc[TD_MAX_DIMS];    // ... as written (NULL: a dim the ellipsis covers)
  int rax[EO_MAX + TD_MAX_DIMS], nr;
  int rg[EO_MAX + TD_MAX_DIMS + 1], nrg;
} Recipe;

static int find_named(const Recipe *rc, const char *name) {
  for (int i = 0; i < rc->nel; i++)
    if (rc->el[i].src->name && rc->el[i].ell < 0 && !strcmp(rc->el[i].src->name, name)) return i;
  return -1;
}

static int find_ell(const Recipe *rc, int j) {
  for (int i = 0; i < rc->nel; i++)
    if (rc->el[i].ell == j) return i;
  return -1;
}

static int new_elem(Recipe *rc, const Axis *src, int ell) {
  Elem *x = &rc->el[rc->nel];
  *x = (Elem){.src = src, .ell = ell, .len = -1, .left = -1, .right = -1, .rgroup = -1};
  if (src->name == NULL && !src->ellipsis) x->known = true, x->len = src->value;
  return rc->nel++;
}

// The checks of einops' _prepare_transformation_recipe that need no shape, in its order.
static bool check_identifiers(const Call *c, const Side *l, const Side *r, Fail *f) {
  Sema *sema = c->sema;
  Arena *A = &sema->cx->arena;
  const Axis *d[2 * EO_MAX];
  int n;
  if (!l->ellipsis && r->ellipsis) {
    const Axis *e = NULL;
    for (int i = 0; i < r->nax && !e; i++) e = r->ax[i].ellipsis ? &r->ax[i] : NULL;
    return fail(f, e ? e->at : r->at, e ? e->len : r->len,
                arena_printf(A, "Ellipsis found in right side, but not left side of a pattern %s", c->pat));
  }
  if (l->ellipsis && l->ellipsis_paren) {
    const Axis *e = NULL;
    for (int i = 0; i < l->nax && !e; i++) e = l->ax[i].ellipsis ? &l->ax[i] : NULL;
    return fail(f, e->at, e->len, arena_printf(A, "Ellipsis inside parenthesis in the left side is not allowed: %s",
                                               c->pat));
  }
  switch (c->op) {
  case EO_REARRANGE:
    if (l->anon || r->anon) {
      const Side *s = l->anon ? l : r;
      const Axis *a = NULL;
      for (int i = 0; i < s->nax && !a; i++) a = !s->ax[i].name && !s->ax[i].ellipsis ? &s->ax[i] : NULL;
      return fail(f, a->at, a->len, "Non-unitary anonymous axes are not supported in rearrange (exception is length 1)");
    }
    n = side_minus(r, l, d, side_minus(l, r, d, 0));
    if (n)
      return fail(f, d[0]->at, d[0]->len, arena_printf(A, "Identifiers only on one side of expression (should be on "
                                                          "both): %s", set_str(sema, d, n)));
    break;
  case EO_REPEAT:
    n = side_minus(l, r, d, 0);
    if (n)
      return fail(f, d[0]->at, d[0]->len, arena_printf(A, "Unexpected identifiers on the left side of repeat: %s",
                                                       set_str(sema, d, n)));
    n = 0;
    for (int i = 0; i < r->nax; i++) {
      const Axis *a = &r->ax[i];
      bool sized = !a->name || side_has(l, a);
      for (int k = 0; k < c->nkw && !sized; k++) sized = !strcmp(c->kw[k].name, a->name);
      if (!sized) d[n++] = a;
    }
    if (n)
      return fail(f, d[0]->at, d[0]->len, arena_printf(A, "Specify sizes for new axes in repeat: %s",
                                                       set_str(sema, d, n)));
    break;
  case EO_UNKNOWN:
    *f = (Fail){arena_printf(A, "Unknown reduction %s. Expect one of ('min', 'max', 'sum', 'mean', 'prod', 'any', "
                             "'all').", c->reduction), 0, 0, false, c->e->bargs[2]};
    return false;
  default:
    n = side_minus(r, l, d, 0);
    if (n)
      return fail(f, d[0]->at, d[0]->len, arena_printf(A, "Unexpected identifiers on the right side of reduce %s: %s",
                                                       c->reduction, set_str(sema, d, n)));
    break;
  }
  return true;
}

// The elementary axes of both sides, the ellipsis expanded over the input's dims; the
// keywords' axes; the lengths einops infers from the shape (its _reconstruct_from_shape).
static bool make_recipe(const Call *c, const Side *l, const Side *r, Recipe *rc, Fail *f) {
  Sema *sema = c->sema;
  Arena *A = &sema->cx->arena;
  memset(rc, 0, sizeof *rc);
  int ell = 0;
  if (l->ellipsis) {
    int other = l->ng - 1;
    if (c->ndim < other)
      return fail(f, l->at, l->len, arena_printf(A, "Wrong shape: expected >=%d dims. Received %d-dim tensor.", other,
                                                 c->ndim));
    ell = c->ndim - other;
  } else if (c->ndim != l->ng) {
    return fail(f, l->at, l->len, arena_printf(A, "Wrong shape: expected %d dims. Received %d-dim tensor.", l->ng,
                                               c->ndim));
  }
  // the left's dims (as many as the input has)
  for (int gi = 0; gi < l->ng; gi++) {
    const Group *g = &l->g[gi];
    bool bare_ell = !g->paren && g->n == 1 && l->ax[g->first].ellipsis;
    for (int j = 0; j < (bare_ell ? ell : 1); j++) {
      rc->lgsrc[rc->nlg] = bare_ell ? NULL : g;
      rc->lg[rc->nlg++] = rc->nl;
      for (int k = 0; k < (bare_ell ? 1 : g->n); k++) {
        const Axis *a = &l->ax[g->first + k];
        int id = new_elem(rc, a, bare_ell ? j : -1);
        rc->el[id].left = rc->nl;
        rc->lax[rc->nl++] = id;
      }
    }
  }
  rc->lg[rc->nlg] = rc->nl;
  // the right's dims: an axis of the left, or a new one (repeat)
  for (int gi = 0; gi < r->ng; gi++) {
    const Group *g = &r->g[gi];
    bool bare_ell = !g->paren && g->n == 1 && r->ax[g->first].ellipsis;
    for (int j = 0; j < (bare_ell ? ell : 1); j++) {
      rc->rg[rc->nrg++] = rc->nr;
      for (int k = 0; k < (bare_ell ? 1 : g->n); k++) {
        const Axis *a = &r->ax[g->first + k];
        for (int q = 0; q < (a->ellipsis && !bare_ell ? ell : 1); q++) {
          int id = a->ellipsis ? find_ell(rc, bare_ell ? j : q) : a->name ? find_named(rc, a->name) : -1;
          if (id < 0) id = new_elem(rc, a, -1);
          rc->el[id].right = rc->nr;
          rc->el[id].rgroup = rc->nrg - 1;
          rc->rax[rc->nr++] = id;
        }
      }
    }
  }
  rc->rg[rc->nrg] = rc->nr;
  // the keywords: an axis of the pattern's each
  for (int k = 0; k < c->nkw; k++) {
    const char *name = c->kw[k].name;
    if (name_reason(name, (int)strlen(name), false, false)) {
      fail(f, 0, 0, arena_printf(A, "('Invalid name for an axis', '%s')", name));
      f->arg = c->kw[k].a;
      return false;
    }
    int id = find_named(rc, name);
    if (id < 0) {
      fail(f, 0, 0, arena_printf(A, "Axis %s is not used in transform", name));
      f->arg = c->kw[k].a;
      return false;
    }
    rc->el[id].known = true;
  }
  for (int i = 0; i < rc->nlg; i++) {  // one unknown length per dim at most
    const Axis *u[EO_MAX];
    int nu = 0;
    for (int k = rc->lg[i]; k < rc->lg[i + 1]; k++)
      if (!rc->el[rc->lax[k]].known) u[nu++] = rc->el[rc->lax[k]].src;
    if (nu > 1) {
      const Group *g = rc->lgsrc[i];
      return fail(f, g ? g->at : l->at, g ? g->len : l->len, arena_printf(A, "Could not infer sizes for %s",
                                                                          set_str(sema, u, nu)));
    }
  }
  // the lengths, from the keywords and the shape
  for (int k = 0; k < c->nkw; k++) rc->el[find_named(rc, c->kw[k].name)].len = c->kw[k].v;
  for (int i = 0; i < rc->nlg; i++) {
    int64_t length = c->shape[i], known = 1;
    int unknown = -1;
    const Group *g = rc->lgsrc[i];
    int at = g ? g->at : l->at, len = g ? g->len : l->len;
    for (int k = rc->lg[i]; k < rc->lg[i + 1]; k++) {
      Elem *x = &rc->el[rc->lax[k]];
      if (x->known) known = wrap_mul(known, x->len);
      else unknown = rc->lax[k];
    }
    if (unknown < 0) {
      if (length != known)
        return fail(f, at, len, arena_printf(A, "Shape mismatch, %" PRId64 " != %" PRId64, length, known));
      continue;
    }
    if (known == 0) {  // Python's length % 0
      *f = (Fail){"integer modulo by zero", at, len, true, NULL};
      return false;
    }
    int64_t q = length / known, m = length % known;
    if (m != 0 && (m < 0) != (known < 0)) q--, m += known;  // Python's floor division
    if (m != 0)
      return fail(f, at, len, arena_printf(A, "Shape mismatch, can't divide axis of length %" PRId64 " in chunks of %"
                                              PRId64, length, known));
    rc->el[unknown].len = q;
  }
  return true;
}

// The plan: einops' steps over units, each a run of neighbouring elementary axes of the
// left (one axis each, unless the recipe needs more dims than a tensor has).
typedef struct Plan {
  int nu;
  int ustart[EO_MAX + TD_MAX_DIMS + 1];  // unit u: lax[ustart[u] .. ustart[u + 1])
  int64_t ulen[EO_MAX + TD_MAX_DIMS];
} Plan;

// Units of one axis each, or (merge) of the neighbours a view of the input merges that
// stay neighbours in the result's dim (or are both reduced).
static void make_units(const Call *c, const Recipe *rc, bool merge, Plan *p) {
  int64_t stride[EO_MAX + TD_MAX_DIMS];
  for (int i = 0; i < rc->nlg; i++) {  // a split dim's axes: a view of it
    int64_t s = c->strides[i];
    for (int k = rc->lg[i + 1] - 1; k >= rc->lg[i]; k--) {
      stride[k] = s;
      s = wrap_mul(s, rc->el[rc->lax[k]].len);
    }
  }
  p->nu = 0;
  int inner = -1;  // the unit's innermost axis of a length other than 1
  for (int k = 0; k < rc->nl; k++) {
    const Elem *x = &rc->el[rc->lax[k]];
    bool join = false;
    if (merge && k > 0) {
      const Elem *w = &rc->el[rc->lax[k - 1]];
      bool together = (w->right < 0 && x->right < 0) ||
                      (w->right >= 0 && x->right == w->right + 1 && x->rgroup == w->rgroup);
      bool view = x->len <= 1 || inner < 0 || p->ulen[p->nu - 1] == 0 || stride[inner] == wrap_mul(stride[k], x->len);
      join = together && view;
    }
    if (join) {
      p->ulen[p->nu - 1] = wrap_mul(p->ulen[p->nu - 1], x->len);
    } else {
      p->ustart[p->nu] = k;
      p->ulen[p->nu++] = x->len;
      inner = -1;
    }
    if (x->len != 1) inner = k;
  }
  p->ustart[p->nu] = rc->nl;
}

// The unit left axis k is in.
static int unit_of(const Plan *p, int k) {
  int u = 0;
  while (p->ustart[u + 1] <= k) u++;
  return u;
}

// EinopsArgs of the plan: false when a step would have more dims than a tensor has.
static bool plan_args(const Call *c, const Recipe *rc, const Plan *p, int op, EinopsArgs *a, int *need) {
  memset(a, 0, sizeof *a);
  a->op = (Op)op;
  int order[EO_MAX + TD_MAX_DIMS], nkept = 0, nred = 0, nadd = 0;
  for (int j = 0; j < rc->nr; j++) {
    const Elem *x = &rc->el[rc->rax[j]];
    if (x->left < 0) nadd++;
    else if (p->ustart[unit_of(p, x->left)] == x->left) order[nkept++] = unit_of(p, x->left);
  }
  for (int u = 0; u < p->nu; u++)
    if (rc->el[rc->lax[p->ustart[u]]].right < 0) order[nkept + nred++] = u;
  *need = p->nu > nkept + nadd ? p->nu : nkept + nadd;
  if (*need > TD_MAX_DIMS) return false;
  bool same = p->nu == c->ndim;
  for (int u = 0; u < p->nu && same; u++) same = p->ulen[u] == c->shape[u];
  if (!same) {
    a->ninit = p->nu;
    memcpy(a->init, p->ulen, sizeof(int64_t) * (size_t)p->nu);
  }
  bool ident = true;
  for (int u = 0; u < p->nu; u++) ident &= order[u] == u;
  if (!ident) {
    a->nperm = p->nu;
    for (int u = 0; u < p->nu; u++) a->perm[u] = order[u];
  }
  a->nreduce = nred;
  a->each = op == OP_PROD || op == OP_ANY || op == OP_ALL;
  int64_t cur[TD_MAX_DIMS];
  int ncur = 0, pos = 0;
  for (int j = 0; j < rc->nr; j++) {
    const Elem *x = &rc->el[rc->rax[j]];
    if (x->left < 0) {
      a->add_at[a->nadd] = pos;
      a->add_len[a->nadd++] = x->len;
      cur[ncur++] = x->len;
      pos++;
    } else if (p->ustart[unit_of(p, x->left)] == x->left) {
      cur[ncur++] = p->ulen[unit_of(p, x->left)];
      pos++;
    }
  }
  a->nfinal = rc->nrg;
  for (int g = 0; g < rc->nrg; g++) {
    a->final[g] = 1;
    for (int j = rc->rg[g]; j < rc->rg[g + 1]; j++) a->final[g] = wrap_mul(a->final[g], rc->el[rc->rax[j]].len);
  }
  if (same_shape(ncur, cur, a->nfinal, a->final)) a->nfinal = 0;
  return true;
}

static const char *const reductions[] = {"min", "max", "sum", "mean", "prod", "any", "all"};
static const Op reduction_ops[] = {OP_AMIN, OP_AMAX, OP_SUM, OP_MEAN, OP_PROD, OP_ANY, OP_ALL};

// The keywords that are no parameter of the row: the axes' lengths, known when compiling.
static bool read_keywords(Call *c) {
  Sema *sema = c->sema;
  Ast *e = c->e;
  for (int i = 0; i < e->list.len; i++) {
    Ast *a = e->list.data[i];
    if (a->kind != AST_KWARG || !strcmp(a->name, "tensor") || !strcmp(a->name, "pattern") ||
        (c->op == EO_REDUCE && !strcmp(a->name, "reduction")))
      continue;
    const TType *t = a->ty ? a->ty : a->rhs->ty;
    if (is_poison(t)) return false;
    if (!is_scalar(t) || t->dtype == DT_F64) {
      diag_error(sema->cx, a->rhs->loc, "%s(): the length of axis '%s' must be an int known when compiling, not %s",
                 e->bi->name, a->name, py_type_name(t));
      return false;
    }
    if (t->ival < 0) {
      diag_error(sema->cx, a->rhs->loc, "%s(): the length of axis '%s' is negative (%" PRId64 ")", e->bi->name,
                 a->name, t->ival);
      return false;
    }
    for (int k = 0; k < c->nkw; k++)
      if (!strcmp(c->kw[k].name, a->name)) {
        diag_error(sema->cx, a->loc, "keyword argument repeated: %s", a->name);
        return false;
      }
    if (c->nkw >= EO_MAX) {
      diag_error(sema->cx, a->loc, "%s(): more than %d axis lengths are not supported", e->bi->name, EO_MAX);
      return false;
    }
    c->kw[c->nkw++] = (Kw){a->name, t->ival, t->dtype == DT_BOOL, a};
  }
  return true;
}

// Python's name of the class of a value einops has no backend for.
static const char *py_class(const TType *t) {
  if (t->kind == TY_TENSOR && t->wrapped) return t->dtype == DT_BOOL ? "bool" : t->dtype == DT_I64 ? "int" : "float";
  return py_type_name(t);
}

// The input: a tensor, or a list of tensors stacked (torch.stack's checks); its operands.
static bool read_input(Call *c, Ast *ta, Ast ***ops, int *nops, bool *stack) {
  Sema *sema = c->sema;
  const TType *t = ta->ty;
  *stack = false;
  if (is_tensor(t) && !t->wrapped) {
    *ops = arena_alloc(&sema->cx->arena, sizeof(Ast *));
    (*ops)[0] = ta;
    *nops = 1;
    c->ndim = t->view.ndim;
    memcpy(c->shape, t->view.shape, sizeof(int64_t) * (size_t)c->ndim);
    memcpy(c->strides, t->view.strides, sizeof(int64_t) * (size_t)c->ndim);
    return true;
  }
  if (t->kind != TY_LIST) {
    diag_error(sema->cx, ta->loc, "Tensor type unknown to einops <class '%s'>", py_class(t));
    return false;
  }
  if (t->nelem == 0) {
    diag_error(sema->cx, ta->loc, "Rearrange/Reduce/Repeat can't be applied to an empty list");
    return false;
  }
  Ast **xs;
  int n;
  if (!seq_items(sema, ta, &xs, &n)) {
    diag_error(sema->cx, ta->loc, "%s() of the list a function returns is not supported: unpack it first", c->e->bi->name);
    return false;
  }
  if (!is_tensor(xs[0]->ty) || xs[0]->ty->wrapped) {
    diag_error(sema->cx, xs[0]->loc, "Tensor type unknown to einops <class '%s'>", py_class(xs[0]->ty));
    return false;
  }
  const View *v0 = &xs[0]->ty->view;
  for (int i = 1; i < n; i++) {
    if (!is_tensor(xs[i]->ty)) {
      diag_error(sema->cx, xs[i]->loc, "expected Tensor as element %d in argument 0, but got %s", i,
                 py_type_name(xs[i]->ty));
      return false;
    }
    const View *vi = &xs[i]->ty->view;
    if (!same_shape(v0->ndim, v0->shape, vi->ndim, vi->shape)) {
      diag_error(sema->cx, xs[i]->loc, "stack expects each tensor to be equal size, but got %s at entry 0 and %s at "
                 "entry %d", shape_str(sema, v0->ndim, v0->shape), shape_str(sema, vi->ndim, vi->shape), i);
      return false;
    }
  }
  if (!check_rank(sema, ta->loc, v0->ndim + 1)) return false;
  c->ndim = v0->ndim + 1;
  c->shape[0] = n;
  memcpy(c->shape + 1, v0->shape, sizeof(int64_t) * (size_t)v0->ndim);
  View st = view_contiguous(c->ndim, c->shape);  // torch.stack's result
  memcpy(c->strides, st.strides, sizeof(int64_t) * (size_t)c->ndim);
  if (!check_numel(sema, ta->loc, c->ndim, c->shape)) return false;
  *ops = xs;
  *nops = n;
  *stack = true;
  return true;
}

TType *ck_einops(Sema *sema, Ast *e, const BuiltinDef *d) {
  Call c = {.sema = sema, .e = e, .op = d->variant, .pa = e->bargs[1]};
  c.reduction = c.op == EO_REARRANGE ? "rearrange" : "repeat";
  if (!read_keywords(&c)) return poison(sema);
  Ast **ops;
  int nops;
  bool stack;
  if (!read_input(&c, e->bargs[0], &ops, &nops, &stack)) return poison(sema);
  if (c.pa->ty->kind != TY_STR) {
    diag_error(sema->cx, c.pa->loc, "%s(): the pattern must be a str known when compiling, not %s", d->b.name,
               py_type_name(c.pa->ty));
    return poison(sema);
  }
  c.pat = c.pa->ty->module;
  int op = OP_COUNT;
  Fail f;
  if (c.op == EO_REDUCE) {
    Ast *ra = e->bargs[2];
    if (ra->ty->kind != TY_STR) {
      diag_error(sema->cx, ra->loc, "reduce(): the reduction must be one of 'min', 'max', 'sum', 'mean', 'prod', "
                 "'any', 'all' (a str known when compiling), not %s", py_type_name(ra->ty));
      return poison(sema);
    }
    c.reduction = ra->ty->module;
    for (size_t i = 0; i < sizeof reductions / sizeof reductions[0]; i++)
      if (!strcmp(c.reduction, reductions[i])) op = reduction_ops[i];
  }
  if (c.op == EO_REDUCE && op == OP_COUNT)  // einops' reduce(x, p, 'rearrange') is rearrange
    c.op = !strcmp(c.reduction, "rearrange") ? EO_REARRANGE : !strcmp(c.reduction, "repeat") ? EO_REPEAT : EO_UNKNOWN;
  // left_str, rght_str = pattern.split("->")
  const char *arrow = strstr(c.pat, "->");
  int narrow = 0;
  for (const char *s = arrow; s; s = strstr(s + 2, "->")) narrow++;
  if (narrow != 1) {
    diag_error(sema->cx, pattern_loc(&c, 0, 0), narrow ? "too many values to unpack (expected 2)"
                                                       : "not enough values to unpack (expected 2, got 1)");
    diag_note(sema->cx, pattern_loc(&c, 0, 0), "an einops pattern has one '->' between the input's axes and the "
              "result's");
    return poison(sema);
  }
  int llen = (int)(arrow - c.pat), rat = llen + 2;
  Reader rd = {.sema = sema, .pat = c.pat, .loc = pattern_loc, .loc_ctx = &c};
  Side *l = arena_alloc(&sema->cx->arena, sizeof *l), *r = arena_alloc(&sema->cx->arena, sizeof *r);
  if (!read_side(&rd, 0, llen, l, &f) || !read_side(&rd, rat, (int)strlen(c.pat) - rat, r, &f)) return report(&c, &f);
  Recipe *rc = arena_alloc(&sema->cx->arena, sizeof *rc);
  if (!check_identifiers(&c, l, r, &f) || !make_recipe(&c, l, r, rc, &f)) return report(&c, &f);
  // the steps, over units of one axis (of neighbours merged when that is too many dims)
  Plan *p = arena_alloc(&sema->cx->arena, sizeof *p);
  EinopsArgs a;
  int need;
  if (!check_rank(sema, call_loc(e), rc->nrg)) return poison(sema);
  make_units(&c, rc, false, p);
  if (!plan_args(&c, rc, p, op, &a, &need)) {
    make_units(&c, rc, true, p);
    if (!plan_args(&c, rc, p, op, &a, &need)) {
      diag_error(sema->cx, call_loc(e), "tensors have at most %d dimensions, but this pattern's recipe needs %d", TD_MAX_DIMS,
                 need);
      diag_note(sema->cx, pattern_loc(&c, 0, 0), "einops splits the input into the pattern's axes, permutes and "
                "merges them; only neighbours that stay neighbours can be merged first");
      return poison(sema);
    }
  }
  a.stack = stack;
  if (a.nreduce) {
    if (op == OP_MEAN && !dtype_is_float(ops[0]->ty->dtype)) {
      diag_error(sema->cx, call_loc(e), "reduce_mean is not available for non-floating tensors");
      return poison(sema);
    }
    if (op == OP_AMAX || op == OP_AMIN) {
      int nkept = p->nu - a.nreduce;
      for (int k = 0; k < a.nreduce; k++) {
        int u = a.nperm ? a.perm[nkept + k] : nkept + k;
        if (p->ulen[u] == 0) {
          diag_error(sema->cx, call_loc(e), "%s(): Expected reduction dim %d to have non-zero size.", op_name(op),
                     nkept + k);
          return poison(sema);
        }
      }
    }
  }
  int64_t out[TD_MAX_DIMS];
  for (int g = 0; g < rc->nrg; g++) {
    out[g] = 1;
    for (int j = rc->rg[g]; j < rc->rg[g + 1]; j++) out[g] = wrap_mul(out[g], rc->el[rc->rax[j]].len);
  }
  if (!check_numel(sema, call_loc(e), rc->nrg, out)) return poison(sema);
  return built(sema, e, d->b.build, KEEP(sema, a), ops, nops);
}

// ============================================================================
// einsum(*tensors, pattern): einops' pattern (names, `...`) as torch.einsum's letters
// ============================================================================
// The axis dim g of side s names (einops' _validate_einsum_axis_name); NULL after the message.
static const Axis *einsum_axis(const Side *s, const Group *g, Fail *f) {
  const char *why = g->n == 0  ? "Singleton () axes are not yet supported in einsum."
                    : g->n > 1 ? "Shape rearrangement is not yet supported in einsum."
                    : !s->ax[g->first].name && !s->ax[g->first].ellipsis ? "Anonymous axes are not yet supported in einsum."
                                                                          : NULL;
  if (!why) return &s->ax[g->first];
  *f = (Fail){why, g->at, g->len, true, NULL};
  return NULL;
}

// The letter of axis a ((...) is an axis named "…" to einops), given a new one when add.
static int einsum_letter(const char **names, int *n, const Axis *a, bool add) {
  const char *name = a->name ? a->name : "\xe2\x80\xa6";
  for (int i = 0; i < *n; i++)
    if (!strcmp(names[i], name)) return i;
  if (!add) return -1;
  names[*n] = name;
  return (*n)++;
}

TType *ck_einops_einsum(Sema *sema, Ast *e, const BuiltinDef *d) {
  static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  Arena *A = &sema->cx->arena;
  Ast **pos = arena_alloc(A, sizeof(Ast *) * (size_t)(e->list.len + 1));
  int npos = 0;
  for (int i = 0; i < e->list.len; i++)
    if (e->list.data[i]->kind != AST_KWARG) pos[npos++] = e->list.data[i];
  if (npos <= 1) {
    diag_error(sema->cx, call_loc(e), "`einops.einsum` takes at minimum two arguments: the tensors (at least one), "
               "followed by the pattern.");
    return poison(sema);
  }
  Call c = {.sema = sema, .e = e, .pa = pos[npos - 1]};
  if (c.pa->ty->kind != TY_STR) {
    diag_error(sema->cx, c.pa->loc, "The last argument passed to `einops.einsum` must be a string, representing the "
               "einsum pattern.");
    return poison(sema);
  }
  c.pat = c.pa->ty->module;
  const char *arrow = strstr(c.pat, "->");
  if (!arrow) {
    diag_error(sema->cx, c.pa->loc, "Einsum pattern must contain '->'.");
    return poison(sema);
  }
  if (strstr(arrow + 2, "->")) {
    diag_error(sema->cx, c.pa->loc, "too many values to unpack (expected 2)");
    return poison(sema);
  }
  int llen = (int)(arrow - c.pat), n = (int)strlen(c.pat);
  Reader rd = {.sema = sema, .pat = c.pat, .loc = pattern_loc, .loc_ctx = &c, .underscore = true};
  Side *s = arena_alloc(A, sizeof *s);
  Fail f;
  const char *names[EO_MAX * 2];
  int nnames = 0;
  char *eq = arena_alloc(A, (size_t)n * 3 + 8);  // each name one letter, "..." three, "," and "->"
  int k = 0;
  // the operands' sides, split at ','; then the result's
  for (int at = 0, side = 0; at <= n; side++) {
    bool right = at > llen;
    int end = right ? n : at;
    while (!right && end < llen && c.pat[end] != ',') end++;
    rd.dups = !right;
    if (!read_side(&rd, at, end - at, s, &f)) {
      f.raw = true;
      return report(&c, &f);
    }
    for (int gi = 0; gi < s->ng; gi++) {
      const Group *g = &s->g[gi];
      if (!g->paren && g->n == 1 && s->ax[g->first].ellipsis) {
        memcpy(eq + k, "...", 3);
        k += 3;
        continue;
      }
      const Axis *a = einsum_axis(s, g, &f);
      if (!a) return report(&c, &f);
      int id = einsum_letter(names, &nnames, a, !right);
      if (id < 0) {
        f = (Fail){arena_printf(A, "Unknown axis %s on right side of einsum %s.", a->name ? a->name : "\xe2\x80\xa6",
                                c.pat), a->at, a->len, true, NULL};
        return report(&c, &f);
      }
      if (id >= (int)sizeof letters - 1) {
        f = (Fail){"Too many axes in einsum.", a->at, a->len, true, NULL};
        return report(&c, &f);
      }
      eq[k++] = letters[id];
    }
    if (right) break;
    if (end < llen) {
      eq[k++] = ',';
      at = end + 1;
    } else {
      eq[k++] = '-', eq[k++] = '>';
      at = llen + 2;
    }
  }
  eq[k] = 0;
  int nerrors = sema->cx->nerrors;
  TType *t = einsum_equation(sema, e, d->b.build, eq, c.pa->loc, pos, npos - 1);
  if (is_poison(t) && sema->cx->nerrors > nerrors)
    diag_note(sema->cx, c.pa->loc, "einops.einsum calls torch.einsum with the equation '%s'", eq);
  return t;
}

// ============================================================================
// pack(tensors, pattern), unpack(tensor, packed_shapes, pattern)
// ============================================================================
// einops' analyze_pattern: the axes before and after '*'; false after its message.
static bool pack_pattern(Sema *sema, Ast *pa, const char *op, int *before, int *after) {
  if (pa->ty->kind != TY_STR) {
    diag_error(sema->cx, pa->loc, "%s(): the pattern must be a str known when compiling, not %s", op,
               py_type_name(pa->ty));
    return false;
  }
  const char *pat = pa->ty->module, *why = NULL;
  const char *ax[EO_MAX];
  int len[EO_MAX], n = 0, star = -1;
  for (const char *s = pat; *s;) {
    while (*s == ' ') s++;
    if (!*s) break;
    const char *t = s;
    while (*t && *t != ' ') t++;
    if (n == EO_MAX) {
      diag_error(sema->cx, pa->loc, "%s(): patterns of more than %d axes are not supported", op, EO_MAX);
      return false;
    }
    ax[n] = s, len[n++] = (int)(t - s);
    s = t;
  }
  for (int i = 0; i < n && !why; i++)
    for (int j = 0; j < i && !why; j++)
      if (len[i] == len[j] && !memcmp(ax[i], ax[j], (size_t)len[i])) why = "Duplicates in axes names in";
  for (int i = 0; i < n; i++)
    if (len[i] == 1 && ax[i][0] == '*') star = i;
  if (!why && star < 0) why = "No *-axis in";
  if (why) {
    diag_error(sema->cx, pa->loc, "%s %s(..., \"%s\")", why, op, pat);
    return false;
  }
  for (int i = 0; i < n; i++)
    if (i != star && name_reason(ax[i], len[i], false, false)) {
      diag_error(sema->cx, pa->loc, "Invalid axis name %.*s in %s(..., \"%s\")", len[i], ax[i], op, pat);
      return false;
    }
  *before = star;
  *after = n - star - 1;
  return true;
}

static const char *size_str(Sema *sema, int n, const int64_t *shape) {
  return arena_printf(&sema->cx->arena, "torch.Size(%s)", shape_str(sema, n, shape));
}

// A new call node of e's op, typed as what fn builds over ops: a part of e's result.
static Ast *built_part(Sema *sema, Ast *e, BuildFn fn, const void *args, Ast **ops, int n) {
  Ast *c = ast_new(sema->cx, AST_CALL, e->loc);
  c->name = e->name;
  c->oploc = e->oploc;
  c->bi = e->bi;
  c->ty = built(sema, c, fn, args, ops, n);
  return c;
}

TType *ck_einops_pack(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *la = e->bargs[0], *pa = e->bargs[1];
  int before, after;
  if (!pack_pattern(sema, pa, "pack", &before, &after)) return poison(sema);
  Ast **xs;
  int n;
  if (is_tensor(la->ty) && !la->ty->wrapped) {  // Python iterates a tensor: its rows, each a view
    if (la->ty->view.ndim == 0) {  // einops' tensors[0]
      diag_error(sema->cx, la->loc, "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                 "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number");
      return poison(sema);
    }
    la = unbind_ast(sema, la, la);
    if (is_poison(la->ty)) return poison(sema);
  }
  if (!seq_items(sema, la, &xs, &n)) {
    diag_error(sema->cx, la->loc, "'%s' object is not subscriptable", py_class(la->ty));  // tensors[0]
    return poison(sema);
  }
  if (n == 0) {
    diag_error(sema->cx, la->loc, "list index out of range");
    return poison(sema);
  }
  EinopsPackArgs a = {.dim = before, .n = n};
  Ast *ps[EINOPS_MAX_TENSORS];
  DType dt = DT_COUNT;
  for (int i = 0; i < n; i++) {
    const TType *t = xs[i]->ty;
    if (!is_poison(t) && (!is_tensor(t) || t->wrapped)) {  // einops' get_backend(tensors[0]), then backend.shape
      if (i == 0) diag_error(sema->cx, xs[i]->loc, "Tensor type unknown to einops <class '%s'>", py_class(t));
      else diag_error(sema->cx, xs[i]->loc, "'%s' object has no attribute 'shape'", py_class(t));
      return poison(sema);
    }
    if (!get_tensor(sema, e, xs[i], "tensors")) return poison(sema);
    const View *v = &xs[i]->ty->view;
    if (v->ndim < before + after) {
      diag_error(sema->cx, xs[i]->loc, "packed tensor #%d (enumeration starts with 0) has shape %s, while pattern %s "
                 "assumes at least %d axes", i, size_str(sema, v->ndim, v->shape), pa->ty->module, before + after);
      return poison(sema);
    }
    int mid = v->ndim - before - after, k = 0;
    int64_t packed = 1, rest = 1;
    Ast *items[TD_MAX_DIMS];
    for (int j = 0; j < v->ndim; j++) {
      if (j < before || j >= before + mid) rest = wrap_mul(rest, v->shape[j]);
      else packed = wrap_mul(packed, v->shape[j]), items[j - before] = part_int(sema, e, v->shape[j]);
    }
    ps[i] = part_seq(sema, e, TY_TUPLE, items, mid);
    ps[i]->ty->size = true;  // a slice of tensor.shape: a torch.Size, as einops' torch backend gives it
    for (int j = 0; j < before; j++) a.shape[i][k++] = v->shape[j];
    a.shape[i][k++] = packed;
    for (int j = v->ndim - after; j < v->ndim; j++) a.shape[i][k++] = v->shape[j];
    a.ndim[i] = k;
    if (rest == 0) {
      const char *req = "[";
      for (int j = 0; j < k; j++)
        req = arena_printf(&sema->cx->arena, "%s%s%" PRId64, req, j ? ", " : "", j == before ? -1 : a.shape[i][j]);
      diag_error(sema->cx, xs[i]->loc, "cannot reshape tensor of 0 elements into shape %s] because the unspecified "
                 "dimension size -1 can be any value and is ambiguous", req);
      return poison(sema);
    }
    if (i > 0)
      for (int j = 0; j < k; j++)
        if (j != before && a.shape[i][j] != a.shape[0][j]) {
          diag_error(sema->cx, xs[i]->loc, "Sizes of tensors must match except in dimension %d. Expected size %" PRId64
                     " but got size %" PRId64 " for tensor number %d in the list.", before, a.shape[0][j], a.shape[i][j],
                     i);
          return poison(sema);
        }
    dt = dt == DT_COUNT ? xs[i]->ty->dtype : dt;
  }
  (void)dt;
  if (!check_rank(sema, call_loc(e), a.ndim[0])) return poison(sema);
  Ast *items[2] = {built_part(sema, e, d->b.build, KEEP(sema, a), xs, n), part_seq(sema, e, TY_LIST, ps, n)};
  if (is_poison(items[0]->ty)) return poison(sema);
  return tuple_result(sema, e, items, 2);
}

// Python's text of packed_shapes as given: [(), (7,), [7, 9]], pack's [torch.Size([]), torch.Size([7])]
static const char *seq_str(Sema *sema, const TType *t) {
  if (t->kind == TY_SCALAR) return arena_printf(&sema->cx->arena, "%" PRId64, t->ival);
  if (t->size) {  // torch.Size([7, 9])
    const char *s = "torch.Size([";
    for (int i = 0; i < t->nelem; i++) s = arena_printf(&sema->cx->arena, "%s%s%s", s, i ? ", " : "", seq_str(sema, t->elems[i]));
    return arena_printf(&sema->cx->arena, "%s])", s);
  }
  bool tuple = t->kind == TY_TUPLE;
  const char *s = tuple ? "(" : "[";
  for (int i = 0; i < t->nelem; i++) s = arena_printf(&sema->cx->arena, "%s%s%s", s, i ? ", " : "", seq_str(sema, t->elems[i]));
  return arena_printf(&sema->cx->arena, "%s%s%s", s, tuple && t->nelem == 1 ? "," : "", tuple ? ")" : "]");
}

// Where element i of sequence a is written (a's own place when it is no literal).
static Loc item_loc(Sema *sema, const Ast *a, int i) {
  Ast **items;
  int n;
  return seq_items(sema, a, &items, &n) && i < n ? items[i]->loc : a->loc;
}

// packed_shapes: a sequence of shapes, each a sequence of ints known when compiling;
// false after Python's error (iterating a number) or ours, located at the element.
static bool packed_shapes_ok(Sema *sema, const Ast *sa) {
  const TType *st = sa->ty;
  if (st->kind != TY_LIST && st->kind != TY_TUPLE) {
    diag_error(sema->cx, sa->loc, "unpack(): packed_shapes must be a list of shapes (sequences of ints), not %s",
               py_type_name(st));
    return false;
  }
  if (st->nelem > EINOPS_MAX_TENSORS) {
    diag_error(sema->cx, sa->loc, "unpack(): packed_shapes of more than %d shapes are not supported",
               EINOPS_MAX_TENSORS);
    return false;
  }
  for (int i = 0; i < st->nelem; i++) {
    const TType *p = st->elems[i];
    if (p->kind != TY_LIST && p->kind != TY_TUPLE) {  // einops' `-1 in p_shape`
      diag_error(sema->cx, item_loc(sema, sa, i), "argument of type '%s' is not iterable", py_type_name(p));
      return false;
    }
    if (p->nelem > TD_MAX_DIMS) {
      diag_error(sema->cx, item_loc(sema, sa, i), "tensors have at most %d dimensions, but this shape has %d",
                 TD_MAX_DIMS, p->nelem);
      return false;
    }
    for (int j = 0; j < p->nelem; j++)
      if (!is_scalar(p->elems[j]) || p->elems[j]->dtype == DT_F64) {
        Ast **items;
        int n;
        Loc at = seq_items(sema, sa, &items, &n) && i < n ? item_loc(sema, items[i], j) : sa->loc;
        diag_error(sema->cx, at, "unpack(): the sizes of packed_shapes must be ints known when compiling, not %s",
                   py_type_name(p->elems[j]));
        return false;
      }
  }
  return true;
}

TType *ck_einops_unpack(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *xa = e->bargs[0], *sa = e->bargs[1], *pa = e->bargs[2];
  int before, after;
  if (!pack_pattern(sema, pa, "unpack", &before, &after)) return poison(sema);
  if (!is_poison(xa->ty) && (!is_tensor(xa->ty) || xa->ty->wrapped)) {  // einops' get_backend(tensor)
    diag_error(sema->cx, xa->loc, "Tensor type unknown to einops <class '%s'>", py_class(xa->ty));
    return poison(sema);
  }
  TType *x = get_tensor(sema, e, xa, "tensor");
  if (!x) return poison(sema);
  const View *v = &x->view;
  const char *pat = pa->ty->module;
  if (v->ndim != before + 1 + after) {
    diag_error(sema->cx, xa->loc, "unpack(..., %s) received input of wrong dim with shape %s", pat,
               size_str(sema, v->ndim, v->shape));
    return poison(sema);
  }
  if (!packed_shapes_ok(sema, sa)) return poison(sema);
  const TType *st = sa->ty;
  int n = st->nelem, unknown = -1, nunknown = 0;
  int64_t len[EINOPS_MAX_TENSORS], total = v->shape[before];
  for (int i = 0; i < n; i++) {
    const TType *p = st->elems[i];
    len[i] = 1;
    bool minus = false;
    for (int j = 0; j < p->nelem; j++) {
      minus |= p->elems[j]->ival == -1;
      len[i] = wrap_mul(len[i], p->elems[j]->ival);
    }
    if (minus) len[i] = -1, unknown = i, nunknown++;
  }
  if (nunknown > 1) {
    diag_error(sema->cx, sa->loc, "unpack(..., %s) received more than one -1 in %s and can't infer dimensions", pat,
               seq_str(sema, st));
    return poison(sema);
  }
  // einops' split positions, and Python's slices of them
  int64_t pos[EINOPS_MAX_TENSORS + 1];
  pos[0] = 0;
  pos[n] = total;
  if (unknown < 0) {
    for (int i = 0; i + 1 < n; i++) pos[i + 1] = wrap_add(pos[i], len[i]);
  } else {
    for (int i = 0; i < unknown; i++) pos[i + 1] = wrap_add(pos[i], len[i]);
    for (int j = n - 1; j > unknown; j--) pos[j] = wrap_sub(pos[j + 1], len[j]);
  }
  EinopsPackArgs a = {.dim = before, .n = n};
  for (int i = 0; i < n; i++) {
    int64_t lo = pos[i], hi = pos[i + 1];
    lo = lo < 0 ? (lo + total < 0 ? 0 : lo + total) : lo > total ? total : lo;
    hi = hi < 0 ? (hi + total < 0 ? 0 : hi + total) : hi > total ? total : hi;
    a.start[i] = lo;
    a.len[i] = hi > lo ? hi - lo : 0;
    const TType *p = st->elems[i];
    int k = 0, infer = -1;
    int64_t known = 1, numel = 1;
    bool bad = false;
    for (int j = 0; j < before; j++) a.shape[i][k++] = v->shape[j];
    for (int j = 0; j < p->nelem; j++) {
      int64_t z = p->elems[j]->ival;
      if (z == -1 && infer < 0) infer = k;
      else if (z < 0) bad = true;
      else known = wrap_mul(known, z);
      a.shape[i][k++] = z;
    }
    for (int j = before + 1; j < v->ndim; j++) a.shape[i][k++] = v->shape[j];
    for (int j = 0; j < k; j++)
      if (j < before || j >= k - after) known = wrap_mul(known, a.shape[i][j]);
    for (int j = 0; j < v->ndim; j++) numel = wrap_mul(numel, j == before ? a.len[i] : v->shape[j]);
    if (infer >= 0 && (known == 0 || numel % known)) bad = true;
    else if (infer >= 0) a.shape[i][infer] = numel / known;
    else bad |= known != numel;
    if (bad || k > TD_MAX_DIMS) {
      diag_error(sema->cx, sa->loc, "Error during unpack(..., \"%s\"): could not split axis of size %" PRId64 " into "
                 "requested %s", pat, total, seq_str(sema, st));
      return poison(sema);
    }
    a.ndim[i] = k;
  }
  if (n == 0) return tuple_result(sema, e, NULL, 0);
  if (n > 1) return built(sema, e, d->b.build, KEEP(sema, a), &xa, 1);
  Ast *c = built_part(sema, e, d->b.build, KEEP(sema, a), &xa, 1);  // a list of one
  return is_poison(c->ty) ? poison(sema) : tuple_result(sema, e, &c, 1);
}

// ============================================================================
// einops.parse_shape(x, 'b c _ _'): the named dims' sizes as a dict
// ============================================================================
// The dict {name: size} of x's dims in the pattern's order, '_' skipped, '...' standing
// for any dims in its place (einops' parse_shape); einops' messages otherwise.
TType *einops_parse_shape(Sema *sema, Ast *e) {
  if (!check_args(sema, e)) return poison(sema);
  Ast *x = NULL, *pat = NULL;
  int npos = 0;
  for (int i = 0; i < e->list.len; i++) {
    Ast *a = e->list.data[i];
    Ast *v = a->kind == AST_KWARG ? a->rhs : a;
    if (a->kind == AST_KWARG ? !strcmp(a->name, "x") : npos == 0) x = v;
    else if (a->kind == AST_KWARG ? !strcmp(a->name, "pattern") : npos == 1) pat = v;
    else {
      diag_error(sema->cx, a->loc, "parse_shape() takes 2 positional arguments");
      return poison(sema);
    }
    npos += a->kind != AST_KWARG;
  }
  if (!x || !pat) {
    diag_error(sema->cx, call_loc(e), "parse_shape() missing 1 required positional argument: '%s'", x ? "pattern" : "x");
    return poison(sema);
  }
  if (!is_tensor(x->ty) || pat->ty->kind != TY_STR) {
    diag_error(sema->cx, (is_tensor(x->ty) ? pat : x)->loc, is_tensor(x->ty) ? "parse_shape()'s pattern must be a str"
                                                                            : "parse_shape() takes a tensor and a pattern");
    return poison(sema);
  }
  const char *p = pat->ty->module;
  const char *names[EO_MAX];
  int n = 0, ell = -1;
  for (const char *s = p; *s;) {
    while (*s == ' ') s++;
    if (!*s) break;
    size_t len = strcspn(s, " ");
    if (n == EO_MAX || (len == 3 && !strncmp(s, "...", 3) && ell >= 0)) {
      diag_error(sema->cx, pat->loc, "Can't parse shape with different number of dimensions: %s torch.Size(%s)", p,
                 shape_str(sema, x->ty->view.ndim, x->ty->view.shape));
      return poison(sema);
    }
    if (len == 3 && !strncmp(s, "...", 3)) {
      ell = n;
      names[n++] = NULL;
    } else {
      bool ident = (s[0] == '_' || (s[0] | 0x20) >= 'a') && !strchr("()", s[0]);
      for (size_t k = 0; k < len && ident; k++)
        ident = s[k] == '_' || (s[k] >= '0' && s[k] <= '9') || ((s[k] | 0x20) >= 'a' && (s[k] | 0x20) <= 'z');
      if (!ident) {
        diag_error(sema->cx, pat->loc, "Can't parse shape with composite axes: %s torch.Size(%s)", p,
                   shape_str(sema, x->ty->view.ndim, x->ty->view.shape));
        return poison(sema);
      }
      names[n++] = arena_strndup(&sema->cx->arena, s, len);
    }
    s += len;
  }
  int nd = x->ty->view.ndim, named = ell >= 0 ? n - 1 : n;
  if (ell >= 0 ? named > nd : named != nd) {
    diag_error(sema->cx, pat->loc, "Can't parse shape with different number of dimensions: %s torch.Size(%s)", p,
               shape_str(sema, nd, x->ty->view.shape));
    return poison(sema);
  }
  TType *keys[EO_MAX];
  Ast *vals[EO_MAX];
  int m = 0;
  for (int i = 0; i < n; i++) {
    if (!names[i] || !strcmp(names[i], "_")) continue;
    int d = ell >= 0 && i > ell ? nd - (n - i) : i;
    keys[m] = ty_new(sema, TY_STR);
    keys[m]->module = names[i];
    vals[m++] = part_int(sema, e, x->ty->view.shape[d]);
  }
  Ast *r = part_dict(sema, e, keys, vals, m);
  set_operands(sema, e, r->operands, r->noperands);
  return r->ty;
}
