// ir/loop.c: the loop IR's constructors, its printed form (--emit=kernels) and its
// verifier. Constructors allocate in cx->arena and return zeroed nodes whose `err` is
// -1 (no error) until the caller sets one. loop_verify checks what every backend relies
// on: loop variables are used only inside their loops, locals are declared (LS_LET)
// before they are read or set, every load and store stays inside its buffer for every
// iteration (the affine index's min and max over the loop extents), arguments are
// flagged read/written as they are used, and expression types follow the op
// semantics of ir/loop.h. Printing is deterministic: the same program prints the same
// bytes.
#include "ir/loop.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

// ---- construction ----

LExpr *lx_new(Ctx *cx, LExprKind kind, DType dt) {
  LExpr *e = arena_alloc(&cx->arena, sizeof *e);
  e->kind = kind;
  e->dt = dt;
  e->op = OP_COUNT;
  e->err = -1;
  e->var = -1;
  e->local = -1;
  e->buf = -1;
  e->lanes = 1;
  return e;
}

LExpr *lx_const_f(Ctx *cx, DType dt, double v) {
  LExpr *e = lx_new(cx, LX_CONST, dt);
  e->f = v;
  return e;
}

LExpr *lx_const_i(Ctx *cx, DType dt, int64_t v) {
  LExpr *e = lx_new(cx, LX_CONST, dt);
  e->i = v;
  e->f = (double)v;
  return e;
}

LExpr *lx_var(Ctx *cx, int var) {
  LExpr *e = lx_new(cx, LX_VAR, DT_I64);
  e->var = var;
  return e;
}

LExpr *lx_local(Ctx *cx, DType dt, int local) {
  LExpr *e = lx_new(cx, LX_LOCAL, dt);
  e->local = local;
  return e;
}

LExpr *lx_load(Ctx *cx, DType dt, int buf, LIndex idx) {
  LExpr *e = lx_new(cx, LX_LOAD, dt);
  e->buf = buf;
  e->idx = idx;
  return e;
}

LExpr *lx_unary(Ctx *cx, Op op, DType dt, LExpr *a) {
  LExpr *e = lx_new(cx, LX_UNARY, dt);
  e->op = op;
  e->a = a;
  return e;
}

LExpr *lx_binary(Ctx *cx, Op op, DType dt, LExpr *a, LExpr *b) {
  LExpr *e = lx_new(cx, LX_BINARY, dt);
  e->op = op;
  e->a = a;
  e->b = b;
  return e;
}

LExpr *lx_select(Ctx *cx, LExpr *c, LExpr *a, LExpr *b) {
  LExpr *e = lx_new(cx, LX_SELECT, a->dt);
  e->a = c;
  e->b = a;
  e->c = b;
  return e;
}

LExpr *lx_cast(Ctx *cx, DType dt, LExpr *a) {
  LExpr *e = lx_new(cx, LX_CAST, dt);
  e->a = a;
  return e;
}

LExpr *lx_bitcast(Ctx *cx, DType dt, LExpr *a) {
  LExpr *e = lx_new(cx, LX_BITCAST, dt);
  e->a = a;
  return e;
}

LExpr *lx_fma(Ctx *cx, LExpr *a, LExpr *b, LExpr *c) {
  LExpr *e = lx_new(cx, LX_FMA, a->dt);
  e->a = a;
  e->b = b;
  e->c = c;
  e->lanes = a->lanes;
  return e;
}

LExpr *lx_splat(Ctx *cx, int lanes, LExpr *a) {
  LExpr *e = lx_new(cx, LX_SPLAT, a->dt);
  e->a = a;
  e->lanes = lanes;
  return e;
}

LExpr *lx_vload(Ctx *cx, DType dt, int lanes, int buf, LIndex idx) {
  LExpr *e = lx_load(cx, dt, buf, idx);
  e->lanes = lanes;
  return e;
}

LExpr *lx_local_v(Ctx *cx, DType dt, int lanes, int local) {
  LExpr *e = lx_local(cx, dt, local);
  e->lanes = lanes;
  return e;
}

LExpr *lx_lane(Ctx *cx, LExpr *v, int lane) {
  LExpr *e = lx_new(cx, LX_LANE, v->dt);
  e->a = v;
  e->i = lane;
  return e;
}

static void lanes_of(const LStmtList *body, int *lanes) {
  for (int i = 0; i < body->len; i++) {
    const LStmt *s = body->data[i];
    if (s->kind == LS_LET)
      lanes[s->local] = s->val->lanes;
    else if (s->kind == LS_LOOP || s->kind == LS_IF)
      lanes_of(&s->body, lanes);
  }
}

void loop_local_lanes(const LKernel *k, int *lanes) {
  for (int i = 0; i < k->locals.len; i++)
    lanes[i] = 1;
  lanes_of(&k->body, lanes);
}

static LStmt *new_stmt(Ctx *cx, LStmtKind kind) {
  LStmt *s = arena_alloc(&cx->arena, sizeof *s);
  s->kind = kind;
  s->var = -1;
  s->buf = -1;
  s->local = -1;
  return s;
}

LStmt *ls_loop(Ctx *cx, int var, int64_t extent) {
  LStmt *s = new_stmt(cx, LS_LOOP);
  s->var = var;
  s->extent = extent;
  return s;
}

LStmt *ls_store(Ctx *cx, int buf, LIndex idx, LExpr *val) {
  LStmt *s = new_stmt(cx, LS_STORE);
  s->buf = buf;
  s->idx = idx;
  s->val = val;
  return s;
}

LStmt *ls_let(Ctx *cx, int local, LExpr *val) {
  LStmt *s = new_stmt(cx, LS_LET);
  s->local = local;
  s->val = val;
  return s;
}

LStmt *ls_set(Ctx *cx, int local, LExpr *val) {
  LStmt *s = new_stmt(cx, LS_SET);
  s->local = local;
  s->val = val;
  return s;
}

LStmt *ls_if(Ctx *cx, LExpr *cond) {
  LStmt *s = new_stmt(cx, LS_IF);
  s->cond = cond;
  return s;
}

// The element index of view v when dim k is walked by loop variable vars[k]: the
// view's offset plus one term per dim that moves (stride != 0) and has a variable
// (vars[k] >= 0; -1 pins the dim at index 0).
LIndex li_affine(const View *v, const int *vars) {
  LIndex ix = {0};
  ix.base = v->offset;
  for (int k = 0; k < v->ndim; k++) {
    if (v->strides[k] == 0 || vars[k] < 0)
      continue;
    TD_ASSERT(ix.nterms < LI_MAX_TERMS);
    ix.var[ix.nterms] = vars[k];
    ix.coef[ix.nterms] = v->strides[k];
    ix.nterms++;
  }
  return ix;
}

// A checked index, or an integer floor_divide, remainder or pow (division by zero, a
// negative exponent) that carries an error.
bool lx_raises_here(const LExpr *e) {
  if (e->err < 0)
    return false;
  if (e->kind == LX_CHECKED_INDEX)
    return true;
  return e->kind == LX_BINARY && dtype_is_int(e->dt) &&
         (e->op == OP_FLOOR_DIVIDE || e->op == OP_REMAINDER || e->op == OP_POW);
}

bool lx_raises(const LExpr *e) {
  if (!e)
    return false;
  if (lx_raises_here(e) || (e->kind == LX_LOAD && lx_raises(e->idx.dyn)))
    return true;
  return lx_raises(e->a) || lx_raises(e->b) || lx_raises(e->c);
}

// ---- printing (--emit=kernels) ----
// The format, one item a line:
//   program NAME
//   buffer bN KIND DTYPE[NUMEL] NAME            KIND: param (with "mut"), temp, result
//   param NAME: DTYPE[SHAPE] -> bN
//   output K: DTYPE[SHAPE] strides (..) offset O of bN
//   kernel kN
//     ops: OP OP ...      lines: L, L
//     args: bN (read|write|read write|write stream), ...   stream: non-temporal stores
//     locals: lN DTYPE, ...                      a vector local: DTYPExLANES
//     error eN: "MESSAGE"
//     STATEMENTS, two spaces per nesting level:
//       for iN in 0..EXTENT [parallel] [vector W] {  ...  }
//       bN[INDEX] = EXPR            (store; INDEX is `COEF*iN + ... + BASE`; a vector
//                                    store or load of L lanes: `bN[INDEX +0..L]`)
//       let lN: DTYPE = EXPR / lN = EXPR / if EXPR { ... }
// Expressions print as pseudo-C: infix operators parenthesised, other ops as calls
// named as in --emit=ir, casts as `DTYPE(x)`, selects as `(c ? a : b)`, checked
// indices as `checked(x, SIZE, eN)`, and raising ops carry `!eN` after their call.
// Vectors: `splatL(x)`, `fma(a, b, c)`, lane k of a local `lN.k`.

static const char *infix(Op op) {
  switch (op) {
  case OP_ADD: return "+";
  case OP_SUB: return "-";
  case OP_MUL: return "*";
  case OP_DIV: return "/";
  case OP_EQ: return "==";
  case OP_NE: return "!=";
  case OP_LT: return "<";
  case OP_LE: return "<=";
  case OP_GT: return ">";
  case OP_GE: return ">=";
  case OP_LOGICAL_AND: return "&&";
  case OP_LOGICAL_OR: return "||";
  default: return NULL;
  }
}

static int arg_buf(const LKernel *k, int arg) {
  return arg >= 0 && arg < k->args.len ? k->args.data[arg].buf : -1;
}

static void print_expr(const LKernel *k, const LExpr *e, FILE *out);

static void print_index(const LKernel *k, const LIndex *ix, FILE *out) {
  bool any = false;
  for (int t = 0; t < ix->nterms; t++) {
    int64_t c = ix->coef[t];
    if (any)
      fputs(c < 0 ? " - " : " + ", out);
    else if (c < 0)
      fputc('-', out);
    int64_t m = c < 0 ? -c : c;
    if (m != 1)
      fprintf(out, "%" PRId64 "*", m);
    fprintf(out, "i%d", ix->var[t]);
    any = true;
  }
  if (ix->dyn) {
    fputs(any ? " + " : "", out);
    print_expr(k, ix->dyn, out);
    any = true;
  }
  if (ix->base != 0 || !any) {
    if (any)
      fprintf(out, " %c %" PRId64, ix->base < 0 ? '-' : '+', ix->base < 0 ? -ix->base : ix->base);
    else
      fprintf(out, "%" PRId64, ix->base);
  }
}

// The shortest %g text that reads back as v (for constants carried as f32, f16 or
// bf16: as the same float).
static const char *shortest(char *buf, double v, bool single) {
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, 32, "%.*g", prec, v);
    double r = strtod(buf, NULL);
    if (single ? (float)r == (float)v : r == v)
      break;
  }
  return buf;
}

static void print_const(const LExpr *e, FILE *out) {
  char buf[32];
  if (e->dt == DT_BOOL)
    fputs(e->i ? "true" : "false", out);
  else if (dtype_is_float(e->dt))
    fputs(shortest(buf, e->f, e->dt != DT_F64), out);
  else
    fprintf(out, "%" PRId64, e->i);
}

static void print_err(const LExpr *e, FILE *out) {
  if (e->err >= 0)
    fprintf(out, "!e%d", e->err);
}

static void print_expr(const LKernel *k, const LExpr *e, FILE *out) {
  switch (e->kind) {
  case LX_CONST: print_const(e, out); return;
  case LX_VAR: fprintf(out, "i%d", e->var); return;
  case LX_LOCAL: fprintf(out, "l%d", e->local); return;
  case LX_LOAD:
    fprintf(out, "b%d[", arg_buf(k, e->buf));
    print_index(k, &e->idx, out);
    if (e->lanes > 1)
      fprintf(out, " +0..%d", e->lanes);
    fputc(']', out);
    return;
  case LX_FMA:
    fputs("fma(", out);
    print_expr(k, e->a, out);
    fputs(", ", out);
    print_expr(k, e->b, out);
    fputs(", ", out);
    print_expr(k, e->c, out);
    fputc(')', out);
    return;
  case LX_SPLAT:
    fprintf(out, "splat%d(", e->lanes);
    print_expr(k, e->a, out);
    fputc(')', out);
    return;
  case LX_LANE:
    print_expr(k, e->a, out);
    fprintf(out, ".%" PRId64, e->i);
    return;
  case LX_UNARY:
    if (e->op == OP_NEG) {
      fputs("(-", out);
      print_expr(k, e->a, out);
      fputc(')', out);
      return;
    }
    fprintf(out, "%s(", op_name(e->op));
    print_expr(k, e->a, out);
    fputc(')', out);
    print_err(e, out);
    return;
  case LX_BINARY: {
    const char *s = infix(e->op);
    if (s) {
      fputc('(', out);
      print_expr(k, e->a, out);
      fprintf(out, " %s ", s);
      print_expr(k, e->b, out);
      fputc(')', out);
    } else {
      fprintf(out, "%s(", op_name(e->op));
      print_expr(k, e->a, out);
      fputs(", ", out);
      print_expr(k, e->b, out);
      fputc(')', out);
    }
    print_err(e, out);
    return;
  }
  case LX_SELECT:
    fputc('(', out);
    print_expr(k, e->a, out);
    fputs(" ? ", out);
    print_expr(k, e->b, out);
    fputs(" : ", out);
    print_expr(k, e->c, out);
    fputc(')', out);
    return;
  case LX_CAST:
  case LX_BITCAST:
    fprintf(out, "%s%s(", e->kind == LX_BITCAST ? "bits_" : "", dtype_name(e->dt));
    print_expr(k, e->a, out);
    fputc(')', out);
    return;
  case LX_CHECKED_INDEX:
    fputs("checked(", out);
    print_expr(k, e->a, out);
    fprintf(out, ", %s%" PRId64 ", e%d)", e->wrap ? "+-" : "", e->i, e->err);
    return;
  case LX_COUNT: break;
  }
  td_unreachable();
}

static void print_stmts(const LKernel *k, const LStmtList *body, int depth, FILE *out);

static void print_stmt(const LKernel *k, const LStmt *s, int depth, FILE *out) {
  fprintf(out, "%*s", 2 * depth, "");
  switch (s->kind) {
  case LS_LOOP:
    fprintf(out, "for i%d in 0..%" PRId64, s->var, s->extent);
    if (s->parallel)
      fputs(" parallel", out);
    if (s->vector > 0)
      fprintf(out, " vector %d", s->vector);
    fputs(" {\n", out);
    print_stmts(k, &s->body, depth + 1, out);
    fprintf(out, "%*s}\n", 2 * depth, "");
    return;
  case LS_STORE:
    fprintf(out, "b%d[", arg_buf(k, s->buf));
    print_index(k, &s->idx, out);
    if (s->val->lanes > 1)
      fprintf(out, " +0..%d", s->val->lanes);
    fputs("] = ", out);
    print_expr(k, s->val, out);
    fputc('\n', out);
    return;
  case LS_LET:
    fprintf(out, "let l%d: %s", s->local, s->val ? dtype_name(s->val->dt) : "?");
    if (s->val && s->val->lanes > 1)
      fprintf(out, "x%d", s->val->lanes);
    fputs(" = ", out);
    print_expr(k, s->val, out);
    fputc('\n', out);
    return;
  case LS_SET:
    fprintf(out, "l%d = ", s->local);
    print_expr(k, s->val, out);
    fputc('\n', out);
    return;
  case LS_IF:
    fputs("if ", out);
    print_expr(k, s->cond, out);
    fputs(" {\n", out);
    print_stmts(k, &s->body, depth + 1, out);
    fprintf(out, "%*s}\n", 2 * depth, "");
    return;
  case LS_COUNT: break;
  }
  td_unreachable();
}

static void print_stmts(const LKernel *k, const LStmtList *body, int depth, FILE *out) {
  for (int i = 0; i < body->len; i++)
    print_stmt(k, body->data[i], depth, out);
}

static const char *const buf_kinds[] = {"param", "temp", "result"};

static void print_shape(FILE *out, const int64_t *xs, int n) {
  fputc('[', out);
  for (int i = 0; i < n; i++)
    fprintf(out, "%s%" PRId64, i ? ", " : "", xs[i]);
  fputc(']', out);
}

static void print_string(FILE *out, const char *s) {
  fputc('"', out);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      fputc('\\', out);
    if (*s == '\n')
      fputs("\\n", out);
    else
      fputc(*s, out);
  }
  fputc('"', out);
}

void loop_print(const LProgram *p, FILE *out) {
  fprintf(out, "program %s\n", p->name ? p->name : "?");
  for (int i = 0; i < p->bufs.len; i++) {
    const LBuf *b = &p->bufs.data[i];
    fprintf(out, "buffer b%d %s%s %s[%" PRId64 "] %s\n", i, b->kind <= LB_RESULT ? buf_kinds[b->kind] : "?",
            b->kind == LB_PARAM && b->mut ? " mut" : "", dtype_name(b->dtype), b->numel, b->name ? b->name : "-");
  }
  for (int i = 0; i < p->params.len; i++) {
    const LParam *pr = &p->params.data[i];
    fprintf(out, "param %s%s: %s", pr->mut ? "mut " : "", pr->name, dtype_name(pr->dtype));
    print_shape(out, pr->shape, pr->ndim);
    fprintf(out, " -> b%d\n", pr->buf);
  }
  for (int i = 0; i < p->outputs.len; i++) {
    const LOutput *o = &p->outputs.data[i];
    fprintf(out, "output %d: %s", i, dtype_name(o->dtype));
    print_shape(out, o->view.shape, o->view.ndim);
    fputs(" strides ", out);
    print_shape(out, o->view.strides, o->view.ndim);
    fprintf(out, " offset %" PRId64 " of b%d\n", o->view.offset, o->buf);
  }
  for (int ki = 0; ki < p->kernels.len; ki++) {
    const LKernel *k = p->kernels.data[ki];
    fprintf(out, "kernel %s\n  ops:", k->name ? k->name : "?");
    for (int i = 0; i < k->ops.len; i++)
      fprintf(out, " %s", k->ops.data[i]);
    fputs("  lines:", out);
    for (int i = 0; i < k->lines.len; i++)
      fprintf(out, "%s %d", i ? "," : "", k->lines.data[i]);
    if (k->sched)
      fprintf(out, "\n  schedule: %s", k->sched);
    fputs("\n  args:", out);
    for (int i = 0; i < k->args.len; i++) {
      const LArg *a = &k->args.data[i];
      fprintf(out, "%s b%d (%s%s%s%s)", i ? "," : "", a->buf, a->read ? "read" : "", a->read && a->written ? " " : "",
              a->written ? "write" : "", a->stream ? " stream" : "");
    }
    fputc('\n', out);
    if (k->locals.len) {
      fputs("  locals:", out);
      int lanes[k->locals.len];
      loop_local_lanes(k, lanes);
      for (int i = 0; i < k->locals.len; i++) {
        fprintf(out, "%s l%d %s", i ? "," : "", i, dtype_name(k->locals.data[i]));
        if (lanes[i] > 1)
          fprintf(out, "x%d", lanes[i]);
      }
      fputc('\n', out);
    }
    for (int i = 0; i < k->errors.len; i++) {
      fprintf(out, "  error e%d: ", i);
      print_string(out, k->errors.data[i]);
      fputc('\n', out);
    }
    print_stmts(k, &k->body, 1, out);
  }
}

// ---- verification ----

typedef struct Verify {
  const LProgram *p;
  const LKernel *k;
  int64_t *extent;  // per var: the extent of its enclosing loop, -1 when not inside it
  bool *declared;   // per local: an LS_LET of it is in scope
  const int *lanes; // per local: its lanes (loop_local_lanes)
  bool dead;        // inside a loop of extent 0: nothing here ever runs
} Verify;

// The range [*lo, *hi] of an integer expression over the active loops, when one can
// be bounded (constants, loop vars, checked indices and + - * of those).
static bool expr_range(const Verify *V, const LExpr *e, int64_t *lo, int64_t *hi) {
  int64_t alo, ahi, blo, bhi;
  switch (e->kind) {
  case LX_CONST: *lo = *hi = e->i; return true;
  case LX_VAR:
    if (e->var < 0 || e->var >= V->k->nvars || V->extent[e->var] < 1)
      return false;
    *lo = 0;
    *hi = V->extent[e->var] - 1;
    return true;
  case LX_CHECKED_INDEX:  // into a dim of size 0 it always raises: what it feeds never runs
    *lo = 0;
    *hi = e->i - 1;
    return e->i > 0;
  case LX_CAST: return dtype_is_int(e->dt) && dtype_is_int(e->a->dt) && expr_range(V, e->a, lo, hi);
  case LX_BINARY:
    if (!expr_range(V, e->a, &alo, &ahi) || !expr_range(V, e->b, &blo, &bhi))
      return false;
    if (e->op == OP_ADD) {
      *lo = alo + blo;
      *hi = ahi + bhi;
      return true;
    }
    if (e->op == OP_SUB) {
      *lo = alo - bhi;
      *hi = ahi - blo;
      return true;
    }
    if (e->op == OP_MUL) {
      int64_t c[4] = {alo * blo, alo * bhi, ahi * blo, ahi * bhi};
      *lo = *hi = c[0];
      for (int i = 1; i < 4; i++) {
        *lo = c[i] < *lo ? c[i] : *lo;
        *hi = c[i] > *hi ? c[i] : *hi;
      }
      return true;
    }
    return false;
  default: return false;
  }
}

static void verify_expr(Verify *V, const LExpr *e);

// Every variable of the index is live, and (when the index can be bounded) every
// element it reaches over the loops' iterations lies inside the argument's buffer.
// Elements ix + 0..lanes must stay in the buffer.
static void verify_index_lanes(Verify *V, int arg, const LIndex *ix, int lanes) {
  TD_ASSERT(arg >= 0 && arg < V->k->args.len);
  int b = V->k->args.data[arg].buf;
  TD_ASSERT(b >= 0 && b < V->p->bufs.len);
  TD_ASSERT(ix->nterms >= 0 && ix->nterms <= LI_MAX_TERMS);
  int64_t lo = ix->base, hi = ix->base;
  for (int t = 0; t < ix->nterms; t++) {
    int v = ix->var[t];
    TD_ASSERT(v >= 0 && v < V->k->nvars);
    TD_ASSERT(V->extent[v] >= 0);  // used inside its loop
    int64_t last = V->extent[v] > 0 ? V->extent[v] - 1 : 0, c = ix->coef[t];
    lo += c < 0 ? c * last : 0;
    hi += c > 0 ? c * last : 0;
  }
  bool bounded = true;
  if (ix->dyn) {
    TD_ASSERT(dtype_is_int(ix->dyn->dt));
    verify_expr(V, ix->dyn);
    int64_t dlo, dhi;
    bounded = expr_range(V, ix->dyn, &dlo, &dhi);
    lo += dlo;
    hi += dhi;
  }
  if (bounded && !V->dead) {
    TD_ASSERT(lo >= 0);
    TD_ASSERT(hi + lanes - 1 < V->p->bufs.data[b].numel);
  }
}

static void verify_unary(const LExpr *e) {
  if (op_class(e->op) != OC_UNARY || !op_flags(e->op))
    td_internal_error(__FILE__, __LINE__, "'%s' is not a unary op of the loop IR", op_name(e->op));
  TD_ASSERT(e->a->dt == e->dt && op_computes_in(e->op, e->dt));
}

static void verify_binary(const LExpr *e) {
  if (op_class(e->op) != OC_BINARY)
    td_internal_error(__FILE__, __LINE__, "'%s' is not a binary op of the loop IR", op_name(e->op));
  DType a = e->a->dt, b = e->b->dt, t = e->dt;
  if (op_flags(e->op) & OF_COMPARE)
    TD_ASSERT(a == b && t == DT_BOOL && op_computes_in(e->op, a));
  else
    TD_ASSERT(a == t && b == t && op_computes_in(e->op, t));
}

static void verify_expr(Verify *V, const LExpr *e) {
  TD_ASSERT(e && e->kind < LX_COUNT && e->dt < DT_COUNT);
  TD_ASSERT(e->err >= -1 && e->err < V->k->errors.len);
  TD_ASSERT(e->lanes >= 1);
  if (e->lanes > 1) {  // the vector forms of ir/loop.h's Lanes
    TD_ASSERT(e->kind == LX_LOAD || e->kind == LX_LOCAL || e->kind == LX_SPLAT || e->kind == LX_FMA ||
              (e->kind == LX_BINARY && (e->op == OP_ADD || e->op == OP_SUB || e->op == OP_MUL)));
    TD_ASSERT(e->kind == LX_SPLAT || e->kind == LX_LOAD || e->kind == LX_LOCAL || e->a->lanes == e->lanes);
    TD_ASSERT(e->kind != LX_BINARY || e->b->lanes == e->lanes);
    TD_ASSERT(e->kind != LX_FMA || (e->b->lanes == e->lanes && e->c->lanes == e->lanes));
  } else if (e->kind != LX_LANE && e->kind != LX_CONST && e->kind != LX_VAR && e->kind != LX_LOCAL &&
             e->kind != LX_LOAD) {
    TD_ASSERT(e->a->lanes == 1 && (!e->b || e->b->lanes == 1) && (!e->c || e->c->lanes == 1));
  }
  switch (e->kind) {
  case LX_CONST: return;
  case LX_VAR:
    TD_ASSERT(e->dt == DT_I64 && e->var >= 0 && e->var < V->k->nvars);
    TD_ASSERT(V->extent[e->var] >= 0);  // used inside its loop
    return;
  case LX_LOCAL:
    TD_ASSERT(e->local >= 0 && e->local < V->k->locals.len);
    TD_ASSERT(V->declared[e->local]);
    TD_ASSERT(V->k->locals.data[e->local] == e->dt);
    TD_ASSERT(V->lanes[e->local] == e->lanes);
    return;
  case LX_LOAD:
    verify_index_lanes(V, e->buf, &e->idx, e->lanes);
    TD_ASSERT(V->k->args.data[e->buf].read);
    TD_ASSERT(V->p->bufs.data[V->k->args.data[e->buf].buf].dtype == e->dt);
    return;
  case LX_UNARY:
    verify_expr(V, e->a);
    verify_unary(e);
    return;
  case LX_BINARY:
    verify_expr(V, e->a);
    verify_expr(V, e->b);
    verify_binary(e);
    return;
  case LX_SELECT:
    verify_expr(V, e->a);
    verify_expr(V, e->b);
    verify_expr(V, e->c);
    TD_ASSERT(e->a->dt == DT_BOOL && e->b->dt == e->dt && e->c->dt == e->dt);
    return;
  case LX_CAST: verify_expr(V, e->a); return;
  case LX_BITCAST:
    verify_expr(V, e->a);
    TD_ASSERT((e->dt == DT_I32 && e->a->dt == DT_F32) || (e->dt == DT_F32 && e->a->dt == DT_I32) ||
              (e->dt == DT_I64 && e->a->dt == DT_F64) || (e->dt == DT_F64 && e->a->dt == DT_I64));
    return;
  case LX_CHECKED_INDEX:
    verify_expr(V, e->a);
    TD_ASSERT(dtype_is_int(e->a->dt) && e->dt == DT_I64 && e->i >= 0);
    TD_ASSERT(e->err >= 0);
    return;
  case LX_FMA:
    verify_expr(V, e->a);
    verify_expr(V, e->b);
    verify_expr(V, e->c);
    TD_ASSERT((e->dt == DT_F32 || e->dt == DT_F64) && e->a->dt == e->dt && e->b->dt == e->dt && e->c->dt == e->dt);
    return;
  case LX_SPLAT:
    verify_expr(V, e->a);
    TD_ASSERT(e->a->lanes == 1 && e->a->dt == e->dt && e->lanes > 1);
    return;
  case LX_LANE:
    verify_expr(V, e->a);
    TD_ASSERT(e->a->kind == LX_LOCAL && e->a->lanes > 1 && e->i >= 0 && e->i < e->a->lanes && e->a->dt == e->dt);
    return;
  case LX_COUNT: break;
  }
  td_unreachable();
}

static void verify_stmts(Verify *V, const LStmtList *body);

static void verify_stmt(Verify *V, const LStmt *s) {
  const LKernel *k = V->k;
  switch (s->kind) {
  case LS_LOOP: {
    TD_ASSERT(s->var >= 0 && s->var < k->nvars);
    TD_ASSERT(V->extent[s->var] < 0);  // a variable is not reused by a nested loop
    TD_ASSERT(s->extent >= 0 && s->vector >= 0);
    bool dead = V->dead;
    V->extent[s->var] = s->extent;
    V->dead = dead || s->extent == 0;
    verify_stmts(V, &s->body);
    V->extent[s->var] = -1;
    V->dead = dead;
    return;
  }
  case LS_STORE:
    verify_expr(V, s->val);
    verify_index_lanes(V, s->buf, &s->idx, s->val->lanes);
    TD_ASSERT(s->val->lanes == 1 || V->p->bufs.data[k->args.data[s->buf].buf].dtype == s->val->dt);
    TD_ASSERT(k->args.data[s->buf].written);
    return;
  case LS_LET:
    TD_ASSERT(s->local >= 0 && s->local < k->locals.len);
    verify_expr(V, s->val);
    TD_ASSERT(s->val->dt == k->locals.data[s->local] && s->val->lanes == V->lanes[s->local]);
    V->declared[s->local] = true;
    return;
  case LS_SET:
    TD_ASSERT(s->local >= 0 && s->local < k->locals.len);
    TD_ASSERT(V->declared[s->local]);
    verify_expr(V, s->val);
    TD_ASSERT(s->val->dt == k->locals.data[s->local] && s->val->lanes == V->lanes[s->local]);
    return;
  case LS_IF:
    verify_expr(V, s->cond);
    TD_ASSERT(s->cond->dt == DT_BOOL);
    verify_stmts(V, &s->body);
    return;
  case LS_COUNT: break;
  }
  td_unreachable();
}

// A block's lets go out of scope at its end.
static void verify_stmts(Verify *V, const LStmtList *body) {
  int n = V->k->locals.len;
  bool saved[n > 0 ? n : 1];
  memcpy(saved, V->declared, sizeof(bool) * (size_t)n);
  for (int i = 0; i < body->len; i++) {
    TD_ASSERT(body->data[i] && body->data[i]->kind < LS_COUNT);
    verify_stmt(V, body->data[i]);
  }
  memcpy(V->declared, saved, sizeof(bool) * (size_t)n);
}

void loop_verify(const LProgram *p) {
  for (int i = 0; i < p->params.len; i++) {
    const LParam *pr = &p->params.data[i];
    TD_ASSERT(pr->buf >= 0 && pr->buf < p->bufs.len);
    TD_ASSERT(p->bufs.data[pr->buf].kind == LB_PARAM && p->bufs.data[pr->buf].dtype == pr->dtype);
  }
  for (int i = 0; i < p->outputs.len; i++) {
    const LOutput *o = &p->outputs.data[i];
    TD_ASSERT(o->buf >= 0 && o->buf < p->bufs.len);
    int64_t lo, hi;
    if (view_extent(o->view, &lo, &hi))
      TD_ASSERT(lo >= 0 && hi < p->bufs.data[o->buf].numel);
  }
  for (int ki = 0; ki < p->kernels.len; ki++) {
    const LKernel *k = p->kernels.data[ki];
    TD_ASSERT(k && k->nvars >= 0);
    for (int i = 0; i < k->args.len; i++)
      TD_ASSERT(k->args.data[i].buf >= 0 && k->args.data[i].buf < p->bufs.len);
    int64_t extent[k->nvars > 0 ? k->nvars : 1];
    bool declared[k->locals.len > 0 ? k->locals.len : 1];
    for (int i = 0; i < k->nvars; i++)
      extent[i] = -1;
    memset(declared, 0, sizeof declared);
    int lanes[k->locals.len > 0 ? k->locals.len : 1];
    loop_local_lanes(k, lanes);
    Verify V = {p, k, extent, declared, lanes, false};
    verify_stmts(&V, &k->body);
  }
}
