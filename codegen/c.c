// codegen/c.c: the C backend. Prints loop IR (ir/loop.h) as one C11 translation unit
// that includes only tdsl.h and libc/libm headers and compiles with
// `cc -std=c11 -O2 -fopenmp -Wall -Werror` (and without -fopenmp: every pragma sits
// under #ifdef _OPENMP). Layout of the output:
//   1. a prelude of `static inline` helpers, only those the programs use (the C
//      dialect of codegen/cexpr.c, which cuda.c prints too);
//   2. per function, its kernels `static int tdsl_g_<fn>_k<N>(raw restrict pointers)`
//      with loops printed in IR order (vector lanes as loops over lane arrays, see
//      cexpr.c), then the entry with the ABI of DESIGN.md, whose argument checks,
//      copies and outputs live in runtime/entry.c.
// Errors: a kernel records the first failure in a tdsl_g_err; inside a parallel loop
// "first" means the lowest iteration of that loop, so the message does not depend on
// thread timing. Every generated name begins with tdsl_g_ (emit.c).
#include "codegen/cexpr.h"

#include <inttypes.h>

// ---- the dialect: what C spells its own way ----
static const char *const err_text =
    "// The first failure of a kernel: error k with value v. Inside a parallel loop the\n"
    "// lowest iteration i wins (sequential code passes INT64_MAX: the first call wins);\n"
    "// failures recorded before the loop started (final) always win.\n"
    "typedef struct tdsl_g_err {\n"
    "  int k;\n"
    "  bool final;\n"
    "  long long v;\n"
    "  int64_t i;\n"
    "} tdsl_g_err;\n"
    "static inline void tdsl_g_raise(tdsl_g_err *e, int k, long long v, int64_t i) {\n"
    "  if (k < 0)\n"
    "    return;\n"
    "#ifdef _OPENMP\n"
    "#pragma omp critical(tdsl_g_err)\n"
    "#endif\n"
    "  if (e->k < 0 || (!e->final && i < e->i)) {\n"
    "    e->k = k;\n"
    "    e->v = v;\n"
    "    e->i = i;\n"
    "  }\n"
    "}\n"
    "static inline void tdsl_g_seal(tdsl_g_err *e) { e->final = e->k >= 0; }\n";

static const char *const f16_text =
    "static inline float tdsl_g_h2f(uint16_t h) {\n"
    "  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;\n"
    "  union { uint32_t u; float f; } c;\n"
    "  if (e == 0x1f)\n"
    "    c.u = sign | 0x7f800000u | (m << 13);\n"
    "  else if (e != 0)\n"
    "    c.u = sign | ((e + 112) << 23) | (m << 13);\n"
    "  else {\n"
    "    float v = (float)m * 0x1p-24f;  // zero or subnormal: exact\n"
    "    return sign ? -v : v;\n"
    "  }\n"
    "  return c.f;\n"
    "}\n"
    "static inline uint16_t tdsl_g_f2h(float f) {\n"
    "  union { float f; uint32_t u; } c = {f};\n"
    "  uint32_t sign = (c.u >> 16) & 0x8000u, a = c.u & 0x7fffffffu;\n";

static const char *const bf16_text =
    "static inline float tdsl_g_bf2f(uint16_t h) {\n"
    "  union { uint32_t u; float f; } c = {(uint32_t)h << 16};\n"
    "  return c.f;\n"
    "}\n"
    "static inline uint16_t tdsl_g_f2bf(float f) {\n"
    "  union { float f; uint32_t u; } c = {f};\n"
    "  if ((c.u & 0x7fffffffu) > 0x7f800000u)\n"
    "    return (uint16_t)((c.u >> 16) | 0x40u);  // nan stays a quiet nan\n"
    "  return (uint16_t)((c.u + 0x7fffu + ((c.u >> 16) & 1u)) >> 16);\n"
    "}\n";

static const TypeText type_text[DT_COUNT] = {
    [DT_BOOL] = {"bool", "bool", "bool", "", "", "false"},
    [DT_I32] = {"int32_t", "uint32_t", "i32", "", "", "INT32_MIN"},
    [DT_I64] = {"int64_t", "uint64_t", "i64", "", "", "INT64_MIN"},
    [DT_F32] = {"float", "uint32_t", "f32", "f", "f", "-INFINITY", "0", "NAN", "INFINITY", "(-INFINITY)"},
    [DT_F64] = {"double", "uint64_t", "f64", "", "", "-INFINITY", "0", "(double)NAN", "(double)INFINITY",
                "(-(double)INFINITY)"},
};

typedef struct CKernelGen {
  CExprGen g;   // first: the dialect's hooks get &c->g
  int par_var;  // the loop variable of the enclosing parallel loop, -1 outside
} CKernelGen;

// The error record, the error index and the rank of the current iteration.
static void err_args(CExprGen *g, int err) {
  const CKernelGen *c = (const CKernelGen *)g;
  if (c->par_var >= 0)
    buf_printf(g->b, "&err, %d, v%d", err, c->par_var);
  else
    buf_printf(g->b, "&err, %d, INT64_MAX", err);
}

// A union pun: defined in C, folded to a register move.
static void bitcast(CExprGen *g, DType from, DType to, const char **pre, const char **post) {
  *pre = arena_printf(&g->cx->arena, "((union { %s a; %s r; }){.a = ", cexpr_type(from), cexpr_type(to));
  *post = "}).r";
}

static const CDialect dialect_c = {
    .name = "c",
    .decl = "static inline ",
    .err_params = ", tdsl_g_err *e, int k, int64_t i",
    .raise_rank = ", i",
    .types = type_text,
    .round = "nearbyint",
    .no_err = "NULL, -1, 0",
    .err_args = err_args,
    .bitcast = bitcast,
    .err_text = err_text,
    .f16_text = f16_text,
    .bf16_text = bf16_text,
};

// gcc's loop distribution makes a lane loop that only copies or fills (an accumulator
// to the result, a row of b to a vector local) a memcpy or memset, which keeps the
// local array in memory; the register allocator then spills accumulators to it in the
// loop that updates them (a 6x16 f32 FMA tile with 16 ymm registers: all 12 in memory,
// 2.7x slower). A kernel with vector lanes is compiled without those patterns.
static const char *const lanes_begin = "#if defined(__GNUC__) && !defined(__clang__)\n"
                                       "#pragma GCC push_options\n"
                                       "#pragma GCC optimize(\"no-tree-loop-distribute-patterns\")\n"
                                       "#endif\n";
static const char *const lanes_end = "#if defined(__GNUC__) && !defined(__clang__)\n"
                                     "#pragma GCC pop_options\n"
                                     "#endif\n";

// gcc 12's loop vectorizer miscompiles an integer reduction whose result the kernel
// uses after the loop (GCC bug 107212: an SLP reduction whose lanes are live both as the
// unsigned sum and as its conversion back, which is how the wrapping helpers write
// integer arithmetic). `sum(x, 0).neg()` of an i32[4, 2] computed each output from one
// element of x instead of the column's sum, at -O2 with or without -march. A kernel that
// accumulates integers is compiled without loop vectorization by gcc 12 (clang and other
// gcc releases vectorize it as before).
static const char *const int_acc_begin = "#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12\n"
                                         "#pragma GCC push_options\n"
                                         "#pragma GCC optimize(\"no-tree-loop-vectorize\")\n"
                                         "#endif\n";
static const char *const int_acc_end = "#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12\n"
                                       "#pragma GCC pop_options\n"
                                       "#endif\n";

// Whether e reads the kernel argument buf (a load of it, or an index computed from one).
static bool reads_arg(const LExpr *e, int buf) {
  if (!e)
    return false;
  if (e->kind == LX_LOAD && (e->buf == buf || reads_arg(e->idx.dyn, buf)))
    return true;
  return reads_arg(e->a, buf) || reads_arg(e->b, buf) || reads_arg(e->c, buf);
}

// Whether idx misses one of the loop variables vars[0..n): the same element is stored
// again in each iteration of that loop.
static bool index_misses_var(const LIndex *idx, const int *vars, int n) {
  for (int i = 0; i < n; i++) {
    bool found = false;
    for (int t = 0; t < idx->nterms && !found; t++)
      found = idx->var[t] == vars[i] && idx->coef[t] != 0;
    if (!found)
      return true;
  }
  return false;
}

// Whether the statements accumulate integers across a loop's iterations: an integer
// local set in a loop, or an integer buffer's element read and stored again in each
// iteration of a loop (an accumulator kept in memory, which gcc keeps in a register).
// vars: the variables of the n loops around l (room for ACC_MAX_NEST).
enum { ACC_MAX_NEST = 64 };
static bool int_accumulates(const LProgram *p, const LKernel *k, const LStmtList *l, int *vars, int n) {
  for (int i = 0; i < l->len; i++) {
    const LStmt *s = l->data[i];
    switch (s->kind) {
    case LS_LOOP:
      if (n == ACC_MAX_NEST)
        return true;  // deeper than any schedule nests: assume the worst
      vars[n] = s->var;
      if (int_accumulates(p, k, &s->body, vars, n + 1))
        return true;
      break;
    case LS_IF:
      if (int_accumulates(p, k, &s->body, vars, n))
        return true;
      break;
    case LS_STORE:
      if (n && dtype_is_int(p->bufs.data[k->args.data[s->buf].buf].dtype) && reads_arg(s->val, s->buf) &&
          (s->idx.dyn || index_misses_var(&s->idx, vars, n)))
        return true;
      break;
    case LS_SET:
      if (n && dtype_is_int(k->locals.data[s->local]))
        return true;
      break;
    case LS_LET:
    case LS_VAR:   // (the GPU form's: never in a C kernel)
    case LS_SYNC:
    case LS_COUNT: break;
    }
  }
  return false;
}

// ---- the kernel printer ----
static void stmts(CKernelGen *c, const LStmtList *l);

static void stmt(CKernelGen *c, const LStmt *s) {
  CExprGen *g = &c->g;
  switch (s->kind) {
  case LS_LOOP: {
    bool par = s->parallel && c->par_var < 0;
    if (par) {
      if (g->has_err) {
        buf_indent(g->b, g->depth);
        buf_puts(g->b, "tdsl_g_seal(&err);\n");
      }
      buf_puts(g->b, "#ifdef _OPENMP\n#pragma omp parallel for\n#endif\n");
    }
    cexpr_open_loop(g, s);
    if (par)
      c->par_var = s->var;
    stmts(c, &s->body);
    cexpr_close(g);
    if (par)
      c->par_var = -1;
    return;
  }
  case LS_STORE: cexpr_store(g, s); return;
  case LS_LET:
  case LS_SET: cexpr_let(g, s); return;
  case LS_IF:
    cexpr_open_if(g, s->cond);
    stmts(c, &s->body);
    cexpr_close(g);
    return;
  case LS_VAR:   // the GPU form's (codegen/cuda.c)
  case LS_SYNC:
  case LS_COUNT: break;
  }
  td_unreachable();
}

static void stmts(CKernelGen *c, const LStmtList *l) {
  for (int i = 0; i < l->len; i++)
    stmt(c, l->data[i]);
}

static void emit_kernel(Ctx *cx, Prelude *pr, Buf *out, const LProgram *p, int ki) {
  const LKernel *k = p->kernels.data[ki];
  int nargs = k->args.len;
  CKernelGen c = {.par_var = -1};
  cexpr_begin(&c.g, cx, &dialect_c, pr, p, k);
  Buf body;
  buf_init(&body, cx);
  c.g.b = &body;
  stmts(&c, &k->body);

  // header comment: what it computes and what each pointer is
  emit_kernel_comment(out, p, ki, emit_shared_note(cx, p, ki));
  int vars[ACC_MAX_NEST];
  bool int_acc = int_accumulates(p, k, &k->body, vars, 0);
  if (int_acc)
    buf_puts(out, int_acc_begin);
  if (c.g.has_lanes)
    buf_puts(out, lanes_begin);
  buf_printf(out, "static int %s(", emit_kernel_name(cx, p, ki));
  for (int i = 0; i < nargs; i++) {
    const LArg *a = &k->args.data[i];
    DType dt = p->bufs.data[a->buf].dtype;
    buf_printf(out, "%s%s%s *restrict b%d", i ? ", " : "", a->written ? "" : "const ", cexpr_storage_type(dt), i);
  }
  buf_puts(out, nargs ? ") {\n" : "void) {\n");
  for (int i = 0; i < nargs; i++) {
    if (!c.g.arg_used[i])
      buf_printf(out, "  (void)b%d;\n", i);
  }
  if (c.g.has_err) {
    buf_puts(out, "  static const char *const errors[] = {\n");
    for (int i = 0; i < k->errors.len; i++) {
      buf_puts(out, "    ");
      buf_c_string(out, k->errors.data[i]);
      buf_puts(out, ",\n");
    }
    buf_puts(out, "  };\n  tdsl_g_err err = {-1, false, 0, INT64_MAX};\n");
  }
  buf_puts(out, body.data);
  if (c.g.has_err)
    buf_puts(out, "  return err.k < 0 ? 0 : tdsl_entry_kernel_error(errors[err.k], err.v);\n}\n");
  else
    buf_puts(out, "  return 0;\n}\n");
  if (c.g.has_lanes)
    buf_puts(out, lanes_end);
  buf_puts(out, int_acc ? int_acc_end : "");
  buf_puts(out, "\n");
}

static void emit_entry(Ctx *cx, Buf *out, const LProgram *p) {
  emit_entry_tables(out, p);
  buf_puts(out, "\n");
  emit_entry_begin(cx, out, p);
  for (int i = 0; i < p->kernels.len; i++) {
    const LKernel *k = p->kernels.data[i];
    buf_printf(out, "  %stdsl_g_rc = %s(", i ? "if (tdsl_g_rc == 0)\n    " : "", emit_kernel_name(cx, p, i));
    for (int a = 0; a < k->args.len; a++) {
      const LArg *arg = &k->args.data[a];
      if (arg->at)  // share_kernels: the kernel sees the buffer from element `at` on
        buf_printf(out, "%s(%s *)tdsl_tensor_data(&tdsl_g_b[%d]) + %" PRId64, a ? ", " : "",
                   cexpr_storage_type(p->bufs.data[arg->buf].dtype), arg->buf, arg->at);
      else
        buf_printf(out, "%stdsl_tensor_data(&tdsl_g_b[%d])", a ? ", " : "", arg->buf);
    }
    buf_puts(out, ");\n");
  }
  emit_entry_end(out, p);
}

static void c_emit(Ctx *cx, LProgram *const *progs, int nprogs, FILE *out) {
  Prelude pr = {0};
  Buf body;
  buf_init(&body, cx);
  for (int i = 0; i < nprogs; i++) {
    const LProgram *p = progs[i];
    buf_printf(&body, "%s// ---- %s ----\n\n", i ? "\n" : "", p->name);
    for (int k = 0; k < p->kernels.len; k++)
      if (!p->kernels.data[k]->same)  // else it calls an earlier one (share_kernels)
        emit_kernel(cx, &pr, &body, p, k);
    emit_entry(cx, &body, p);
  }
  Buf head;
  buf_init(&head, cx);
  buf_printf(&head, "// Generated by tdslc from %s: C11 with OpenMP pragmas.\n",
             emit_source_name(cx, progs, nprogs));
  buf_puts(&head, "// Build: cc -std=c11 -O2 -march=native -fvect-cost-model=dynamic -fno-math-errno -fopenmp\n"
                  "//        -c FILE.c -I$(tdslc --print-include-dir)\n");
  buf_puts(&head, "// (ISO C keeps floating-point contraction off, as the results assume; without\n"
                  "// -fno-math-errno a loop calling sqrtf stays scalar.) With libgomp, GOMP_SPINCOUNT=20000\n"
                  "// lets idle threads spin ~0.2 ms, not 3, before they sleep (as `tdslc run` does).\n");
  buf_puts(&head, "#include <math.h>\n#include <stdbool.h>\n#include <stddef.h>\n#include <stdint.h>\n\n"
                  "#include \"tdsl.h\"\n\n");
  if (cexpr_prelude(&head, &dialect_c, &pr))
    buf_puts(&head, "\n");
  buf_write(&head, out);
  buf_write(&body, out);
}

const Target target_c = {"c", ".c", c_emit};
