// ir/loop_print.c: the loop IR's printed form (--emit=kernels), compact or full.
// The format, one item a line:
//   program NAME
//   buffer bN KIND DTYPE[NUMEL] NAME            KIND: param (with "mut"), temp (with
//                                               "scratch": per thread), result
//   param NAME: DTYPE[SHAPE] -> bN
//   output K: DTYPE[SHAPE] strides (..) offset O of bN
//   function fN                              a function kernels call (LS_CALL):
//     args: bN DTYPE[NUMEL] (read|write), ...  its pointer parameters, what it reaches
//     scalars: a0..aN i64                      its scalar parameters; then its locals
//                                               and statements, as a kernel's
//   kernel kN [(the code of kM)]            kM: an earlier kernel with the same code
//     ops: OP OP ...      lines: L, L           (share_kernels): its statements are
//                                               not printed again
//     args: bN[+AT] (read|write|read write|write stream), ...   stream: non-temporal
//                                               stores; +AT: the kernel's indices count
//                                               from element AT of bN (LArg.at)
//     locals: lN DTYPE, ...                      a vector local: DTYPExLANES
//     error eN: "MESSAGE"
//     STATEMENTS, two spaces per nesting level:
//       for iN in 0..EXTENT [parallel] [vector W] {  ...  }
//       for iN in 0..EXPR (at most EXTENT) { ... }   (a function's loop of EXPR iterations)
//       call fN(bA[INDEX], ..., EXPR, ...)     (the pointers bA + INDEX, then the scalars)
//       bN[INDEX] = EXPR            (store; INDEX is `COEF*iN + ... + BASE`; a vector
//                                    store or load of L lanes: `bN[INDEX +0..L]`)
//       let lN: DTYPE = EXPR / lN = EXPR / if EXPR { ... }
//     GPU programs (sched_gpu) add `gpu: SCHEDULE, grid G, block B; iN tid, iM ctaid, ...`
//     (the vars bound to the thread's indices) and these statements:
//       for iN in START..EXTENT step STEP { ... }   (the threads share the iterations)
//       iN = EXPR                                    (LS_VAR)
//       sync block / sync warp                       (LS_SYNC)
// Expressions print as pseudo-C: infix operators parenthesised, other ops as calls
// named as in --emit=ir, casts as `DTYPE(x)`, selects as `(c ? a : b)`, checked
// indices as `checked(x, SIZE, eN)`, and raising ops carry `!eN` after their call.
// Vectors: `splatL(x)`, `fma(a, b, c)`, lane k of a local `lN.k`, `insert(v, k, x)`.
// GPU: `shfl_down(x, n)`, `shfl_xor(x, n)`, `shfl_idx(x, n)`, `(a / b)` and `(a % b)` of
// LX_IDIV; `mma(frag_a_mk(bN[INDEX], ld L), frag_b_kn(...), lN)` of the tensor cores;
// shared memory is a buffer of kind `shared`.
//
// The compact form (the default) folds a run of consecutive stores, lets and sets that
// print alike but for their local numbers, index offsets and lane numbers (an unrolled
// accumulator block) into one line, each number that differs written as the list of
// its values, `{0, 2..5}` or `{0, 784, ..., 3136}` for a step other than 1: the run is
// that line once per position in the lists, all lists walked together. Consecutive
// locals of one type share a `locals:` entry (`l0..l13 f32x8`). The full form prints
// every statement. Printing is deterministic: the same program prints the same bytes.
#include "ir/loop.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

// A number a folded line may list: its place in a statement's text is a marker byte.
enum {
  SLOT_LOCAL = 1,  // "lN"
  SLOT_BASE = 2,   // an index offset after other terms: " + N", " - N", nothing for 0
  SLOT_NUM = 3,    // a plain number (a lane, an index with no terms)
  MAX_SLOTS = 256,
};

typedef struct Pr {
  const LKernel *k;
  FILE *out;
  bool skel;  // print the markers and collect the numbers in slots
  int nslots;
  int64_t slots[MAX_SLOTS];
} Pr;

static void slot_value(FILE *out, int kind, int64_t v) {
  if (kind == SLOT_LOCAL)
    fprintf(out, "l%" PRId64, v);
  else if (kind == SLOT_BASE && v != 0)
    fprintf(out, " %c %" PRId64, v < 0 ? '-' : '+', v < 0 ? -v : v);
  else if (kind != SLOT_BASE)
    fprintf(out, "%" PRId64, v);
}

static void slot(Pr *P, int kind, int64_t v) {
  if (!P->skel || P->nslots == MAX_SLOTS) {
    if (P->skel)
      P->nslots++;  // too many: this statement folds with none
    slot_value(P->out, kind, v);
    return;
  }
  fputc(kind, P->out);
  P->slots[P->nslots++] = v;
}

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

static void print_expr(Pr *P, const LExpr *e);

static void print_index(Pr *P, const LIndex *ix) {
  FILE *out = P->out;
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
    print_expr(P, ix->dyn);
    any = true;
  }
  slot(P, any ? SLOT_BASE : SLOT_NUM, ix->base);
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

static void print_expr(Pr *P, const LExpr *e) {
  FILE *out = P->out;
  switch (e->kind) {
  case LX_CONST: print_const(e, out); return;
  case LX_VAR: fprintf(out, "i%d", e->var); return;
  case LX_LOCAL: slot(P, SLOT_LOCAL, e->local); return;
  case LX_LOAD:
    fprintf(out, "b%d[", arg_buf(P->k, e->buf));
    print_index(P, &e->idx);
    if (e->lanes > 1)
      fprintf(out, " +0..%d", e->lanes);
    fputc(']', out);
    return;
  case LX_FMA:
  case LX_MMA:
    fputs(e->kind == LX_FMA ? "fma(" : "mma(", out);
    print_expr(P, e->a);
    fputs(", ", out);
    print_expr(P, e->b);
    fputs(", ", out);
    print_expr(P, e->c);
    fputc(')', out);
    return;
  case LX_SPLAT:
    fprintf(out, "splat%d(", e->lanes);
    print_expr(P, e->a);
    fputc(')', out);
    return;
  case LX_LANE:
    print_expr(P, e->a);
    fputc('.', out);
    slot(P, SLOT_NUM, e->i);
    return;
  case LX_SHUFFLE:
    fputs("shuffle(", out);
    print_expr(P, e->a);
    fputs(", ", out);
    print_expr(P, e->b);
    fputs(", [", out);
    for (int l = 0; l < e->lanes; l++)
      fprintf(out, "%s%d", l ? " " : "", e->sel[l]);
    fputs("])", out);
    return;
  case LX_UNARY:
    if (e->op == OP_NEG) {
      fputs("(-", out);
      print_expr(P, e->a);
      fputc(')', out);
      return;
    }
    fprintf(out, "%s(", op_name(e->op));
    print_expr(P, e->a);
    fputc(')', out);
    print_err(e, out);
    return;
  case LX_BINARY: {
    const char *s = infix(e->op);
    if (s) {
      fputc('(', out);
      print_expr(P, e->a);
      fprintf(out, " %s ", s);
      print_expr(P, e->b);
      fputc(')', out);
    } else {
      fprintf(out, "%s(", op_name(e->op));
      print_expr(P, e->a);
      fputs(", ", out);
      print_expr(P, e->b);
      fputc(')', out);
    }
    print_err(e, out);
    return;
  }
  case LX_SELECT:
    fputc('(', out);
    print_expr(P, e->a);
    fputs(" ? ", out);
    print_expr(P, e->b);
    fputs(" : ", out);
    print_expr(P, e->c);
    fputc(')', out);
    return;
  case LX_CAST:
  case LX_BITCAST:
    fprintf(out, "%s%s(", e->kind == LX_BITCAST ? "bits_" : "", dtype_name(e->dt));
    print_expr(P, e->a);
    fputc(')', out);
    return;
  case LX_CHECKED_INDEX:
    fputs("checked(", out);
    print_expr(P, e->a);
    fprintf(out, ", %s%" PRId64 ", e%d)", e->wrap ? "+-" : "", e->i, e->err);
    return;
  case LX_SHFL:
    fprintf(out, "shfl_%s(", e->i == LG_SHFL_DOWN ? "down" : e->i == LG_SHFL_XOR ? "xor" : "idx");
    print_expr(P, e->a);
    fputs(", ", out);
    print_expr(P, e->b);
    fputc(')', out);
    return;
  case LX_IDIV:
    fputc('(', out);
    print_expr(P, e->a);
    fputs(e->op == OP_FLOOR_DIVIDE ? " / " : " % ", out);
    print_expr(P, e->b);
    fputc(')', out);
    return;
  case LX_INSERT:
    fputs("insert(", out);
    print_expr(P, e->a);
    fputs(", ", out);
    slot(P, SLOT_NUM, e->i);
    fputs(", ", out);
    print_expr(P, e->b);
    fputc(')', out);
    return;
  case LX_FRAG: {
    static const char *const roles[] = {"a_mk", "a_km", "b_nk", "b_kn"};
    fprintf(out, "frag_%s(b%d[", roles[e->i], arg_buf(P->k, e->buf));
    print_index(P, &e->idx);
    fprintf(out, "], ld %" PRId64 ")", e->b->i);
    return;
  }
  case LX_ARG: fprintf(out, "a%" PRId64, e->i); return;
  case LX_COUNT: break;
  }
  td_unreachable();
}

static void print_stmts(Pr *P, const LStmtList *body, int depth, bool full);

// A store, let or set, without indentation or newline.
static void print_simple(Pr *P, const LStmt *s) {
  FILE *out = P->out;
  switch (s->kind) {
  case LS_STORE:
    fprintf(out, "b%d[", arg_buf(P->k, s->buf));
    print_index(P, &s->idx);
    if (s->val->lanes > 1)
      fprintf(out, " +0..%d", s->val->lanes);
    fputs("] = ", out);
    print_expr(P, s->val);
    return;
  case LS_LET:
    fputs("let ", out);
    slot(P, SLOT_LOCAL, s->local);
    fprintf(out, ": %s", s->val ? dtype_name(s->val->dt) : "?");
    if (s->val && s->val->lanes > 1)
      fprintf(out, "x%d", s->val->lanes);
    fputs(" = ", out);
    print_expr(P, s->val);
    return;
  case LS_SET:
    slot(P, SLOT_LOCAL, s->local);
    fputs(" = ", out);
    print_expr(P, s->val);
    return;
  case LS_CALL:
    fprintf(out, "call f%d(", s->call->fn);
    for (int i = 0; i < s->call->nptr; i++) {
      fprintf(out, "%sb%d[", i ? ", " : "", arg_buf(P->k, s->call->ptr[i]));
      print_index(P, &s->call->at[i]);
      fputc(']', out);
    }
    for (int i = 0; i < s->call->nval; i++) {
      fputs(", ", out);
      print_expr(P, s->call->val[i]);
    }
    fputc(')', out);
    return;
  case LS_PREFETCH:
    fprintf(out, "prefetch b%d[", arg_buf(P->k, s->buf));
    print_index(P, &s->idx);
    fputc(']', out);
    return;
  default: td_unreachable();
  }
}

static void print_stmt(Pr *P, const LStmt *s, int depth, bool full) {
  FILE *out = P->out;
  fprintf(out, "%*s", 2 * depth, "");
  switch (s->kind) {
  case LS_LOOP:
    fprintf(out, "for i%d in ", s->var);
    if (s->start)
      print_expr(P, s->start);
    else
      fputc('0', out);
    fputs("..", out);
    if (s->n) {
      print_expr(P, s->n);
      fprintf(out, " (at most %" PRId64 ")", s->extent);
    } else {
      fprintf(out, "%" PRId64, s->extent);
    }
    if (s->step) {
      fputs(" step ", out);
      print_expr(P, s->step);
    }
    if (s->parallel)
      fputs(" parallel", out);
    if (s->vector > 0)
      fprintf(out, " vector %d", s->vector);
    fputs(" {\n", out);
    print_stmts(P, &s->body, depth + 1, full);
    fprintf(out, "%*s}\n", 2 * depth, "");
    return;
  case LS_STORE:
  case LS_LET:
  case LS_SET:
  case LS_CALL:
  case LS_PREFETCH:
    print_simple(P, s);
    fputc('\n', out);
    return;
  case LS_IF:
    fputs("if ", out);
    print_expr(P, s->cond);
    fputs(" {\n", out);
    print_stmts(P, &s->body, depth + 1, full);
    fprintf(out, "%*s}\n", 2 * depth, "");
    return;
  case LS_VAR:
    fprintf(out, "i%d = ", s->var);
    print_expr(P, s->val);
    fputc('\n', out);
    return;
  case LS_SYNC: fputs(s->extent ? "sync warp\n" : "sync block\n", out); return;
  case LS_COUNT: break;
  }
  td_unreachable();
}

// ---- folding a run of statements alike ----

typedef struct Skel {
  char *text;  // the statement with a marker byte where each slot's number goes
  int nslots;
  int64_t slots[MAX_SLOTS];
} Skel;

static void skeleton(const LKernel *k, const LStmt *s, Skel *sk) {
  size_t len = 0;
  Pr P = {.k = k, .skel = true};
  P.out = open_memstream(&sk->text, &len);
  TD_ASSERT(P.out);
  print_simple(&P, s);
  fclose(P.out);
  sk->nslots = P.nslots;
  memcpy(sk->slots, P.slots, sizeof(int64_t) * (size_t)(P.nslots < MAX_SLOTS ? P.nslots : MAX_SLOTS));
}

static bool foldable(const LStmt *s) {
  return s->kind == LS_STORE || s->kind == LS_LET || s->kind == LS_SET || s->kind == LS_CALL;
}

// The values v[0..n) as a list: `{a..b}` for steps of 1, `{a, a+s, ..., b}` for another
// step (at least 3 values), else items separated by commas, runs of steps of 1 as a..b.
static void print_list(FILE *out, const int64_t *v, int n) {
  fputc('{', out);
  int64_t step = v[1] - v[0];
  bool arith = true;
  for (int i = 2; i < n && arith; i++)
    arith = v[i] - v[i - 1] == step;
  if (arith && step != 1 && step != 0 && n >= 3) {
    fprintf(out, "%" PRId64 ", %" PRId64 ", ..., %" PRId64 "}", v[0], v[1], v[n - 1]);
    return;
  }
  for (int i = 0; i < n;) {
    int j = i;
    while (j + 1 < n && v[j + 1] == v[j] + 1)
      j++;
    fprintf(out, "%s%" PRId64, i ? ", " : "", v[i]);
    if (j > i)
      fprintf(out, "..%" PRId64, v[j]);
    i = j + 1;
  }
  fputc('}', out);
}

// Statements sk[0..n) (alike) as one line.
static void print_folded(FILE *out, const Skel *sk, int n, int depth) {
  fprintf(out, "%*s", 2 * depth, "");
  int64_t vals[n];
  int j = 0;
  for (const char *c = sk[0].text; *c; c++) {
    if (*c != SLOT_LOCAL && *c != SLOT_BASE && *c != SLOT_NUM) {
      fputc(*c, out);
      continue;
    }
    bool same = true;
    for (int r = 0; r < n; r++) {
      vals[r] = sk[r].slots[j];
      same &= vals[r] == vals[0];
    }
    j++;
    if (same)
      slot_value(out, *c, vals[0]);
    else {
      fputs(*c == SLOT_LOCAL ? "l" : *c == SLOT_BASE ? " + " : "", out);
      print_list(out, vals, n);
    }
  }
  fputc('\n', out);
}

static void print_stmts(Pr *P, const LStmtList *body, int depth, bool full) {
  for (int i = 0; i < body->len;) {
    const LStmt *s = body->data[i];
    if (full || !foldable(s)) {
      print_stmt(P, s, depth, full);
      i++;
      continue;
    }
    // the longest run from i whose statements print alike but for their slots
    int cap = body->len - i, n = 1;
    Skel *sk = malloc(sizeof(Skel) * (size_t)cap);
    TD_ASSERT(sk);
    skeleton(P->k, s, &sk[0]);
    while (sk[0].nslots <= MAX_SLOTS && n < cap && foldable(body->data[i + n])) {
      skeleton(P->k, body->data[i + n], &sk[n]);
      if (sk[n].nslots != sk[0].nslots || strcmp(sk[n].text, sk[0].text) != 0) {
        free(sk[n].text);
        break;
      }
      n++;
    }
    bool varies = false;  // identical statements stay apart: a folded line shows its lists
    for (int r = 1; r < n && !varies; r++)
      varies = memcmp(sk[r].slots, sk[0].slots, sizeof(int64_t) * (size_t)sk[0].nslots) != 0;
    if (varies)
      print_folded(P->out, sk, n, depth);
    else if (n > 1)
      for (int r = 0; r < n; r++)
        print_stmt(P, body->data[i + r], depth, full);
    else
      print_stmt(P, s, depth, full);
    for (int r = 0; r < n; r++)
      free(sk[r].text);
    free(sk);
    i += n;
  }
}

static const char *const buf_kinds[] = {"param", "temp", "result", "shared"};

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

// "locals: l0 f32, l1 f32x8, ..."; compact: consecutive locals of one type as lA..lB.
static void print_locals(const LKernel *k, bool full, FILE *out) {
  fputs("  locals:", out);
  int lanes[k->locals.len];
  loop_local_lanes(k, lanes);
  for (int i = 0; i < k->locals.len;) {
    int j = i;
    while (!full && j + 1 < k->locals.len && k->locals.data[j + 1] == k->locals.data[i] && lanes[j + 1] == lanes[i])
      j++;
    fprintf(out, "%s l%d", i ? "," : "", i);
    if (j > i)
      fprintf(out, "..l%d", j);
    fprintf(out, " %s", dtype_name(k->locals.data[i]));
    if (lanes[i] > 1)
      fprintf(out, "x%d", lanes[i]);
    i = j + 1;
  }
  fputc('\n', out);
}

void loop_print(const LProgram *p, bool full, FILE *out) {
  fprintf(out, "program %s\n", p->name ? p->name : "?");
  for (int i = 0; i < p->bufs.len; i++) {
    const LBuf *b = &p->bufs.data[i];
    fprintf(out, "buffer b%d %s%s %s[%" PRId64 "] %s\n", i, b->kind <= LB_SHARED ? buf_kinds[b->kind] : "?",
            b->kind == LB_PARAM && b->mut ? " mut" : b->scratch ? " scratch" : "", dtype_name(b->dtype), b->numel,
            b->name ? b->name : "-");
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
  for (int fi = 0; fi < p->funcs.len; fi++) {
    const LProgram *fp = p->funcs.data[fi];
    const LKernel *k = fp->kernels.data[0];
    fprintf(out, "function f%d\n  args:", fi);
    for (int i = 0; i < k->args.len; i++) {
      const LArg *a = &k->args.data[i];
      const LBuf *b = &fp->bufs.data[a->buf];
      fprintf(out, "%s b%d %s[%" PRId64 "] (%s%s%s)", i ? "," : "", a->buf, dtype_name(b->dtype), b->numel,
              a->read ? "read" : "", a->read && a->written ? " " : "", a->written ? "write" : "");
    }
    if (k->nscalars)
      fprintf(out, "\n  scalars: a0..a%d i64", k->nscalars - 1);
    fputc('\n', out);
    if (k->locals.len)
      print_locals(k, full, out);
    Pr P = {.k = k, .out = out};
    print_stmts(&P, &k->body, 1, full);
  }
  for (int ki = 0; ki < p->kernels.len; ki++) {
    const LKernel *k = p->kernels.data[ki];
    fprintf(out, "kernel %s", k->name ? k->name : "?");
    if (k->same)
      fprintf(out, " (the code of %s)", k->same->name);
    fputs("\n  ops:", out);
    for (int i = 0; i < k->ops.len; i++)
      fprintf(out, " %s", k->ops.data[i]);
    fputs("  lines:", out);
    for (int i = 0; i < k->lines.len; i++)
      fprintf(out, "%s %d", i ? "," : "", k->lines.data[i]);
    if (k->sched && !k->gpu)
      fprintf(out, "\n  schedule: %s", k->sched);
    if (k->gpu) {
      const LGpuSched *gs = k->gpu;
      fprintf(out, "\n  gpu: %s, grid %" PRId64 ", block %" PRId64, gs->name ? gs->name : "?", gs->grid, gs->block);
      const char *names[4] = {"tid", "ctaid", "lane", "warp"};
      int vars[4] = {gs->tid, gs->ctaid, gs->lane, gs->warp};
      for (int i = 0, n = 0; i < 4; i++)
        if (vars[i] >= 0 && !k->same)
          fprintf(out, "%s i%d %s", n++ ? "," : ";", vars[i], names[i]);
    }
    fputs("\n  args:", out);
    for (int i = 0; i < k->args.len; i++) {
      const LArg *a = &k->args.data[i];
      fprintf(out, "%s b%d", i ? "," : "", a->buf);
      if (a->at)
        fprintf(out, "+%" PRId64, a->at);
      fprintf(out, " (%s%s%s%s)", a->read ? "read" : "", a->read && a->written ? " " : "", a->written ? "write" : "",
              a->stream ? " stream" : "");
    }
    fputc('\n', out);
    if (k->same)
      continue;
    if (k->locals.len)
      print_locals(k, full, out);
    for (int i = 0; i < k->errors.len; i++) {
      fprintf(out, "  error e%d: ", i);
      print_string(out, k->errors.data[i]);
      fputc('\n', out);
    }
    Pr P = {.k = k, .out = out};
    print_stmts(&P, &k->body, 1, full);
  }
}
