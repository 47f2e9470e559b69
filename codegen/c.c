// codegen/c.c: the C backend. Prints loop IR (ir/loop.h) as one C11 translation unit
// that includes only tdsl.h and libc/libm headers and compiles with
// `cc -std=c11 -O2 -Wall -Werror` (and runs on libtdslrt, which the entry needs anyway).
// Layout of the output:
//   1. a prelude of `static inline` helpers, only those the programs use (the C
//      dialect of codegen/cexpr.c, which cuda.c prints too);
//   2. per function, its kernels `static int tdsl_g_<fn>_k<N>(raw restrict pointers)`
//      with loops printed in IR order (vector lanes as values of vector types, see
//      cexpr.c), then the entry with the ABI of DESIGN.md, whose argument checks,
//      copies and outputs live in runtime/entry.c.
// Parallel loops run on libtdslrt's thread pool (tdsl_parallel_for, runtime/pool.c),
// as the LLVM backend's do: the outermost loop marked parallel is outlined into
// `tdsl_g_<fn>_k<N>_p<M>_body(restrict pointers, captured values, begin, end)`, called
// by a range function that unpacks a context: an array of the addresses of what the
// body uses (the pointers themselves, the error record's, the enclosing loop
// variables' and locals' it reads; the kernel builder never writes a local declared
// outside a parallel loop, so every thread sees the same values). The pool
// hands out chunks dynamically and its workers neither wait for each other nor spin
// long against a busy core, where an OpenMP team's static schedule waited for its
// slowest thread at every loop (the MLP took 3.3 ms instead of 0.12 with one core busy).
// Errors: a kernel records the first failure in a tdsl_g_err (the runtime's
// tdsl_kernel_error); inside a parallel loop "first" means the lowest iteration of that
// loop, so the message does not depend on thread timing. Every generated name begins
// with tdsl_g_ (emit.c).
#include "codegen/cexpr.h"

#include <inttypes.h>
#include <string.h>

// ---- the dialect: what C spells its own way ----
static const char *const err_text =
    "// The first failure of a kernel: error k with value v (runtime/pool.c). Inside a\n"
    "// parallel loop the lowest iteration i wins (sequential code passes INT64_MAX: the\n"
    "// first call wins); failures recorded before the loop started (sealed) always win.\n"
    "typedef tdsl_kernel_error tdsl_g_err;\n"
    "static inline void tdsl_g_raise(tdsl_g_err *e, int k, long long v, int64_t i) {\n"
    "  tdsl_kernel_error_raise(e, k, v, i);\n"
    "}\n"
    "static inline void tdsl_g_seal(tdsl_g_err *e) { tdsl_kernel_error_seal(e); }\n";

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
  CExprGen g;          // first: the dialect's hooks get &c->g
  int par_var;         // the loop variable of the enclosing parallel loop, -1 outside
  const char *kname;   // the kernel's function name
  int npar;            // parallel loops outlined so far
  Buf *outl;           // the outlined functions, printed before the kernel
  int *open, nopen;    // the variables of the loops enclosing the statement printed
} CKernelGen;

// Whether kernel arg a is a per-thread scratch buffer (ir/loop.h's Scratch): not a
// parameter; the kernel asks the runtime for its thread's region.
static bool scratch_arg(const LProgram *p, const LKernel *k, int a) { return p->bufs.data[k->args.data[a].buf].scratch; }

// `T *restrict bA = tdsl_scratch(bytes);` into b, at depth 1, for each scratch arg the
// statements printed used (g->arg_used): the region of the thread that runs them.
static void declare_scratch(const CExprGen *g, Buf *b) {
  for (int a = 0; a < g->k->args.len; a++) {
    if (!scratch_arg(g->p, g->k, a) || !g->arg_used[a])
      continue;
    const LBuf *lb = &g->p->bufs.data[g->k->args.data[a].buf];
    const char *t = cexpr_storage_type(lb->dtype);
    buf_printf(b, "  %s *restrict b%d = (%s *)tdsl_scratch(%" PRId64 ");\n", t, a, t, lb->numel * dtype_size(lb->dtype));
  }
}

// A call of a function of p->funcs: the pointers (the caller's args, advanced), then
// the scalars.
static void call_stmt(CKernelGen *c, const LCall *call) {
  CExprGen *g = &c->g;
  buf_indent(g->b, g->depth);
  buf_printf(g->b, "%s(", emit_kernel_name(g->cx, g->p->funcs.data[call->fn], 0));
  for (int i = 0; i < call->nptr; i++) {
    g->arg_used[call->ptr[i]] = true;
    buf_printf(g->b, "%sb%d", i ? ", " : "", call->ptr[i]);
    const LIndex *at = &call->at[i];
    bool zero = at->base == 0 && !at->dyn;
    for (int t = 0; t < at->nterms && zero; t++)
      zero = at->coef[t] == 0;
    if (!zero) {  // (the pointer itself when it starts at element 0)
      buf_puts(g->b, " + ");
      cexpr_index(g, at);
    }
  }
  for (int i = 0; i < call->nval; i++) {
    buf_puts(g->b, call->nptr + i ? ", " : "");
    cexpr_expr(g, call->val[i]);
  }
  buf_puts(g->b, ");\n");
}

// A prefetch hint, where the compiler has one. The address may lie past the buffer (the
// next panel after the last), so it is computed as an integer: a pointer moved outside
// its array would be undefined behaviour, and a prefetch never faults.
static void prefetch_stmt(CKernelGen *c, const LStmt *s) {
  CExprGen *g = &c->g;
  g->arg_used[s->buf] = true;
  buf_puts(g->b, "#if defined(__GNUC__) || defined(__clang__)\n");
  buf_indent(g->b, g->depth);
  buf_printf(g->b, "__builtin_prefetch((const void *)((uintptr_t)b%d + sizeof *b%d * (uintptr_t)(", s->buf, s->buf);
  cexpr_index(g, &s->idx);
  buf_puts(g->b, ")));\n#endif\n");
}

// The error record, the error index and the rank of the current iteration (inside an
// outlined loop the record is the body's parameter tdsl_g_e).
static void err_args(CExprGen *g, int err) {
  const CKernelGen *c = (const CKernelGen *)g;
  if (c->par_var >= 0)
    buf_printf(g->b, "tdsl_g_e, %d, v%d", err, c->par_var);
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
    .vectors = true,
};

// gcc's loop distribution makes a lane loop that only copies or fills (an accumulator
// to the result, a row of b to a vector local) a memcpy or memset, which keeps the
// local array in memory; the register allocator then spills accumulators to it in the
// loop that updates them (a 6x16 f32 FMA tile with 16 ymm registers: all 12 in memory,
// 2.7x slower). A kernel printed with lane loops (vectors whose lanes are arrays:
// cexpr.c) is compiled without those patterns; vector types need nothing of the kind.
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
      if (n && dtype_is_int(p->bufs.data[k->args.data[s->buf].buf].dtype) && lx_loads(s->val, s->buf) &&
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
    case LS_CALL:
    case LS_PREFETCH:
    case LS_COUNT: break;
    }
  }
  return false;
}

// ---- what an outlined parallel loop captures ----
static bool expr_uses_var(const LExpr *e, int var);

static bool index_uses_var(const LIndex *ix, int var) {
  for (int t = 0; t < ix->nterms; t++)
    if (ix->var[t] == var && ix->coef[t] != 0)
      return true;
  return expr_uses_var(ix->dyn, var);
}

static bool expr_uses_var(const LExpr *e, int var) {
  if (!e)
    return false;
  if ((e->kind == LX_VAR && e->var == var) || (e->kind == LX_LOAD && index_uses_var(&e->idx, var)))
    return true;
  return expr_uses_var(e->a, var) || expr_uses_var(e->b, var) || expr_uses_var(e->c, var);
}

// Whether the statements read loop variable var.
static bool stmts_use_var(const LStmtList *l, int var) {
  for (int i = 0; i < l->len; i++) {
    const LStmt *s = l->data[i];
    if (expr_uses_var(s->val, var) || expr_uses_var(s->cond, var) || expr_uses_var(s->n, var) ||
        (s->kind == LS_STORE && index_uses_var(&s->idx, var)) || stmts_use_var(&s->body, var))
      return true;
    for (int a = 0; s->kind == LS_CALL && a < s->call->nptr; a++)
      if (index_uses_var(&s->call->at[a], var))
        return true;
    for (int a = 0; s->kind == LS_CALL && a < s->call->nval; a++)
      if (expr_uses_var(s->call->val[a], var))
        return true;
  }
  return false;
}

static void scan_locals_expr(const LExpr *e, bool *read) {
  if (!e)
    return;
  if (e->kind == LX_LOCAL)
    read[e->local] = true;
  if (e->kind == LX_LOAD)
    scan_locals_expr(e->idx.dyn, read);
  scan_locals_expr(e->a, read);
  scan_locals_expr(e->b, read);
  scan_locals_expr(e->c, read);
}

// read[l]: some statement reads local l; let[l]: some statement declares it.
static void scan_locals(const LStmtList *l, bool *read, bool *let) {
  for (int i = 0; i < l->len; i++) {
    const LStmt *s = l->data[i];
    scan_locals_expr(s->val, read);
    scan_locals_expr(s->cond, read);
    scan_locals_expr(s->n, read);
    if (s->kind == LS_STORE)
      scan_locals_expr(s->idx.dyn, read);
    for (int a = 0; s->kind == LS_CALL && a < s->call->nptr; a++)
      scan_locals_expr(s->call->at[a].dyn, read);
    for (int a = 0; s->kind == LS_CALL && a < s->call->nval; a++)
      scan_locals_expr(s->call->val[a], read);
    if (s->kind == LS_LET)
      let[s->local] = true;
    scan_locals(&s->body, read, let);
  }
}

// ---- the kernel printer ----
static void stmts(CKernelGen *c, const LStmtList *l);

// The outermost parallel loop s: its body printed as NAME_body (into c->outl), a range
// function NAME unpacking the context, and here the context and the pool's call:
//   static void NAME_body(T0 *restrict b0, ..., tdsl_g_err *tdsl_g_e, int64_t v2, float t3,
//                         int64_t tdsl_g_begin, int64_t tdsl_g_end) {
//     for (int64_t vN = tdsl_g_begin; vN < tdsl_g_end; vN++) { ... }
//   }
static void parallel_loop(CKernelGen *c, const LStmt *s) {
  CExprGen *g = &c->g;
  const LKernel *k = g->k;
  Arena *ar = &g->cx->arena;
  int nargs = k->args.len, nl = k->locals.len;
  const char *name = arena_printf(ar, "%s_p%d", c->kname, c->npar++);
  if (g->has_err) {
    buf_indent(g->b, g->depth);
    buf_puts(g->b, "tdsl_g_seal(&err);\n");
  }
  // the body, printed first: which args it uses is known after
  Buf *saved_b = g->b, body;
  buf_init(&body, g->cx);
  bool *saved_used = g->arg_used, *used = arena_alloc(ar, sizeof(bool) * (size_t)(nargs + 1));
  int *saved_decl = arena_alloc(ar, sizeof(int) * (size_t)(nl + 1));
  memcpy(saved_decl, g->decl_depth, sizeof(int) * (size_t)nl);
  bool *read = arena_alloc(ar, (size_t)nl + 1), *let = arena_alloc(ar, (size_t)nl + 1);
  scan_locals(&s->body, read, let);
  for (int l = 0; l < nl; l++)  // captured locals are the body's parameters
    g->decl_depth[l] = read[l] && !let[l] ? 0 : -1;
  int saved_depth = g->depth;
  bool saved_streamed = g->streamed;
  g->b = &body;
  g->arg_used = used;
  g->depth = 1;
  g->streamed = false;
  c->par_var = s->var;
  buf_printf(&body, "  for (int64_t v%d = tdsl_g_begin; v%d < tdsl_g_end; v%d++) {\n", s->var, s->var, s->var);
  g->depth = 2;
  stmts(c, &s->body);
  cexpr_close(g);
  if (g->streamed)  // the thread's streamed stores are visible when its chunk is done
    cexpr_fence_streams(g);
  g->streamed = saved_streamed;
  c->par_var = -1;
  g->b = saved_b;
  g->depth = saved_depth;
  memcpy(g->decl_depth, saved_decl, sizeof(int) * (size_t)nl);

  // the parameters: used args, the error record, enclosing vars read, captured locals;
  // the context holds their addresses (a pointer itself), in order: unpack reads c[n]
  Buf params, unpack, init;
  buf_init(&params, g->cx);
  buf_init(&unpack, g->cx);
  buf_init(&init, g->cx);
  int n = 0;
  for (int i = 0; i < nargs; i++) {
    if (!used[i] || scratch_arg(g->p, k, i))
      continue;
    saved_used[i] = true;
    const LArg *a = &k->args.data[i];
    const char *t = cexpr_storage_type(cexpr_arg_dtype(g, i));
    buf_printf(&params, "%s%s *restrict b%d, ", a->written ? "" : "const ", t, i);
    if (a->written)
      buf_printf(&unpack, "(%s *)c[%d], ", t, n++);
    else
      buf_printf(&unpack, "c[%d], ", n++);
    buf_printf(&init, "b%d, ", i);
  }
  if (g->has_err) {
    buf_puts(&params, "tdsl_g_err *tdsl_g_e, ");
    buf_printf(&unpack, "(tdsl_g_err *)c[%d], ", n++);
    buf_puts(&init, "&err, ");
  }
  for (int i = 0; i < c->nopen; i++) {
    int v = c->open[i];
    if (!stmts_use_var(&s->body, v))
      continue;
    buf_printf(&params, "int64_t v%d, ", v);
    buf_printf(&unpack, "*(const int64_t *)c[%d], ", n++);
    buf_printf(&init, "&v%d, ", v);
  }
  Buf copies;  // the body's own copies of the vectors captured
  buf_init(&copies, g->cx);
  for (int l = 0; l < nl; l++) {
    if (!read[l] || let[l])
      continue;
    const char *ln = g->lname[l];
    if (cexpr_vec(g, g->lanes[l])) {  // a vector: passed by its address (a vector
                                      // parameter's ABI depends on the instructions)
      const char *t = cexpr_vec_type(g, k->locals.data[l], g->lanes[l]);
      buf_printf(&params, "const %s *tdsl_g_%s, ", t, ln);
      buf_printf(&unpack, "c[%d], ", n++);
      buf_printf(&init, "&%s, ", ln);
      buf_printf(&copies, "  const %s %s = *tdsl_g_%s;\n", t, ln, ln);
      continue;
    }
    const char *t = cexpr_type(k->locals.data[l]);
    bool arr = g->lanes[l] > 1;  // an array: passed by its address
    buf_printf(&params, "%s%s %s%s, ", arr ? "const " : "", t, arr ? "*" : "", ln);
    if (arr)
      buf_printf(&unpack, "c[%d], ", n++);
    else
      buf_printf(&unpack, "*(const %s *)c[%d], ", t, n++);
    buf_printf(&init, "%s%s, ", arr ? "" : "&", ln);
  }
  Buf *o = c->outl;
  buf_printf(o, "static void %s_body(%sint64_t tdsl_g_begin, int64_t tdsl_g_end) {\n", name, params.data);
  if (g->has_err)  // (read or not: this loop of the kernel may raise nothing)
    buf_puts(o, "  (void)tdsl_g_e;\n");
  buf_puts(o, copies.data ? copies.data : "");
  declare_scratch(g, o);  // the thread's own region, not the caller's
  g->arg_used = saved_used;
  buf_printf(o, "%s}\n", body.data);
  buf_printf(o, "static void %s(void *ctx, int64_t tdsl_g_begin, int64_t tdsl_g_end) {\n", name);
  buf_puts(o, n ? "  const void *const *c = ctx;\n" : "  (void)ctx;\n");
  buf_printf(o, "  %s_body(%stdsl_g_begin, tdsl_g_end);\n}\n", name, unpack.data ? unpack.data : "");
  if (!n) {
    buf_indent(g->b, g->depth);
    buf_printf(g->b, "tdsl_parallel_for(%" PRId64 ", 1, %s, NULL);\n", s->extent, name);
    return;
  }
  init.data[init.len - 2] = '\0';  // (the last ", ")
  buf_indent(g->b, g->depth);
  buf_printf(g->b, "{\n");
  buf_indent(g->b, g->depth + 1);
  buf_printf(g->b, "const void *tdsl_g_c[] = {%s};\n", init.data);
  buf_indent(g->b, g->depth + 1);
  buf_printf(g->b, "tdsl_parallel_for(%" PRId64 ", 1, %s, tdsl_g_c);\n", s->extent, name);
  buf_indent(g->b, g->depth);
  buf_puts(g->b, "}\n");
}

static void stmt(CKernelGen *c, const LStmt *s) {
  CExprGen *g = &c->g;
  switch (s->kind) {
  case LS_LOOP:
    if (s->extent <= 0)
      return;
    if (s->parallel && c->par_var < 0) {
      parallel_loop(c, s);
      return;
    }
    if (cexpr_stream_loop(g, s))
      return;
    cexpr_open_loop(g, s);
    c->open[c->nopen++] = s->var;
    stmts(c, &s->body);
    c->nopen--;
    cexpr_close(g);
    return;
  case LS_STORE: cexpr_store(g, s); return;
  case LS_LET:
  case LS_SET: cexpr_let(g, s); return;
  case LS_IF:
    cexpr_open_if(g, s->cond);
    stmts(c, &s->body);
    cexpr_close(g);
    return;
  case LS_CALL: call_stmt(c, s->call); return;
  case LS_PREFETCH: prefetch_stmt(c, s); return;
  case LS_VAR:   // the GPU form's (codegen/cuda.c)
  case LS_SYNC:
  case LS_COUNT: break;
  }
  td_unreachable();
}

// Whether s declares a vector-typed local, read later, as the splat of a constant (an
// accumulator's start), the same value and type as first's when first is given.
static bool splat_decl(const CExprGen *g, const LStmt *s, const LStmt *first) {
  if (s->kind != LS_LET || g->decl_depth[s->local] >= 0 || !g->local_read[s->local] || !cexpr_vec(g, s->val->lanes) ||
      s->val->kind != LX_SPLAT || s->val->a->kind != LX_CONST)
    return false;
  if (!first)
    return true;
  const LExpr *x = s->val, *y = first->val;
  return x->lanes == y->lanes && x->dt == y->dt && x->a->dt == y->a->dt && x->a->i == y->a->i &&
         memcmp(&x->a->f, &y->a->f, sizeof x->a->f) == 0;
}

// A run of accumulators starting at one constant, declared in one statement:
//   tdsl_g_f32x16 t0 = tdsl_g_splat_f32x16(0.0f), t1 = t0, t2 = t0;
// Returns the statements printed (0: s is no such run).
static int splat_run(CKernelGen *c, const LStmtList *l, int i) {
  CExprGen *g = &c->g;
  const LStmt *s = l->data[i];
  int n = 1;
  if (!splat_decl(g, s, NULL))
    return 0;
  while (i + n < l->len && splat_decl(g, l->data[i + n], s))
    n++;
  if (n < 2)
    return 0;
  cexpr_let(g, s);  // "T tA = value;\n", its ";\n" replaced by the others
  g->b->len -= 2;
  for (int j = 1; j < n; j++) {
    const LStmt *t = l->data[i + j];
    g->decl_depth[t->local] = g->depth;
    buf_printf(g->b, ", %s = %s", g->lname[t->local], g->lname[s->local]);
  }
  buf_puts(g->b, ";\n");
  return n;
}

static void stmts(CKernelGen *c, const LStmtList *l) {
  for (int i = 0; i < l->len; i++) {
    int n = splat_run(c, l, i);
    if (n)
      i += n - 1;
    else
      stmt(c, l->data[i]);
  }
}

// Kernel k of p (or its plain-store copy) as `static int kname(pointers)`.
static void emit_kernel_form(Ctx *cx, Prelude *pr, Buf *out, const LProgram *p, const LKernel *k, const char *kname) {
  int nargs = k->args.len;
  Buf body, outl;
  buf_init(&body, cx);
  buf_init(&outl, cx);
  CKernelGen c = {.par_var = -1, .kname = kname, .outl = &outl};
  c.open = arena_alloc(&cx->arena, sizeof(int) * (size_t)(k->nvars + 1));
  cexpr_begin(&c.g, cx, &dialect_c, pr, p, k);
  c.g.b = &body;
  stmts(&c, &k->body);
  if (c.g.streamed)
    cexpr_fence_streams(&c.g);

  int vars[ACC_MAX_NEST];
  bool int_acc = int_accumulates(p, k, &k->body, vars, 0);
  if (int_acc)
    buf_puts(out, int_acc_begin);
  if (c.g.lane_loops)
    buf_puts(out, lanes_begin);
  buf_puts(out, outl.data);
  buf_printf(out, "static int %s(", c.kname);
  int nparams = 0;
  for (int i = 0; i < nargs; i++) {
    const LArg *a = &k->args.data[i];
    DType dt = p->bufs.data[a->buf].dtype;
    if (!scratch_arg(p, k, i))
      buf_printf(out, "%s%s%s *restrict b%d", nparams++ ? ", " : "", a->written ? "" : "const ", cexpr_storage_type(dt),
                 i);
  }
  buf_puts(out, nparams ? ") {\n" : "void) {\n");
  declare_scratch(&c.g, out);  // (used outside parallel loops)
  for (int i = 0; i < nargs; i++) {
    if (!c.g.arg_used[i] && !scratch_arg(p, k, i))
      buf_printf(out, "  (void)b%d;\n", i);
  }
  if (c.g.has_err) {
    buf_puts(out, "  static const char *const errors[] = {\n");
    for (int i = 0; i < k->errors.len; i++) {
      buf_puts(out, "    ");
      buf_c_string(out, k->errors.data[i]);
      buf_puts(out, ",\n");
    }
    buf_puts(out, "  };\n  tdsl_g_err err = TDSL_KERNEL_ERROR_INIT;\n");
  }
  buf_puts(out, body.data);
  if (c.g.has_err)
    buf_puts(out, "  return err.k < 0 ? 0 : tdsl_entry_kernel_error(errors[err.k], err.value);\n}\n");
  else
    buf_puts(out, "  return 0;\n}\n");
  if (c.g.lane_loops)
    buf_puts(out, lanes_end);
  buf_puts(out, int_acc ? int_acc_end : "");
  buf_puts(out, "\n");
}

// A kernel with a result that may stream (LArg.stream) is printed twice, as kname_nt
// (non-temporal stores) and kname_plain (the same kernel with every arg's stream mark
// cleared: plain stores, the same values), and kname runs the form the runtime picks
// for this call (runtime/stream.c: the faster one measured, tried again now and then).
static void emit_kernel(Ctx *cx, Prelude *pr, Buf *out, const LProgram *p, int ki) {
  const LKernel *k = p->kernels.data[ki];
  const char *kname = emit_kernel_name(cx, p, ki);
  // header comment: what it computes and what each pointer is
  emit_kernel_comment(out, p, ki, emit_shared_note(cx, p, ki));
  const LKernel *plain = emit_plain_stores(cx, k);
  if (!plain) {
    emit_kernel_form(cx, pr, out, p, k, kname);
    return;
  }
  emit_kernel_form(cx, pr, out, p, k, arena_printf(&cx->arena, "%s_nt", kname));
  emit_kernel_form(cx, pr, out, p, plain, arena_printf(&cx->arena, "%s_plain", kname));
  Buf params, pass;
  buf_init(&params, cx);
  buf_init(&pass, cx);
  for (int i = 0; i < k->args.len; i++) {
    const LArg *a = &k->args.data[i];
    if (scratch_arg(p, k, i))
      continue;
    buf_printf(&params, "%s%s%s *restrict b%d", params.len ? ", " : "", a->written ? "" : "const ",
               cexpr_storage_type(p->bufs.data[a->buf].dtype), i);
    buf_printf(&pass, "%sb%d", pass.len ? ", " : "", i);
  }
  buf_printf(out, "static int %s(%s) {\n", kname, params.len ? params.data : "void");
  buf_puts(out, "  static tdsl_stream_site tdsl_g_site;\n"
                "  int64_t tdsl_g_t = tdsl_stream_begin(&tdsl_g_site);\n");
  buf_printf(out, "  int tdsl_g_r = tdsl_g_t & 1 ? %s_nt(%s) : %s_plain(%s);\n", kname, pass.len ? pass.data : "",
             kname, pass.len ? pass.data : "");
  buf_puts(out, "  tdsl_stream_end(&tdsl_g_site, tdsl_g_t);\n  return tdsl_g_r;\n}\n\n");
}

// Whether e reads scalar argument i of a function (LX_ARG).
static bool expr_uses_arg(const LExpr *e, int64_t i) {
  if (!e)
    return false;
  if ((e->kind == LX_ARG && e->i == i) || (e->kind == LX_LOAD && expr_uses_arg(e->idx.dyn, i)))
    return true;
  return expr_uses_arg(e->a, i) || expr_uses_arg(e->b, i) || expr_uses_arg(e->c, i);
}

static bool stmts_use_arg(const LStmtList *l, int64_t i) {
  for (int j = 0; j < l->len; j++) {
    const LStmt *s = l->data[j];
    if (expr_uses_arg(s->val, i) || expr_uses_arg(s->cond, i) || expr_uses_arg(s->n, i) ||
        (s->kind == LS_STORE && expr_uses_arg(s->idx.dyn, i)) || stmts_use_arg(&s->body, i))
      return true;
  }
  return false;
}

// A function of p->funcs (ir/loop.h's Functions): `TDSL_G_FUNC void NAME(pointers,
// int64_t a0, ...)` (static, and never inlined by GCC or clang), its statements; no
// errors, no parallel loops. Parameters it does not read are voided (-Wextra).
static void emit_func(Ctx *cx, Prelude *pr, Buf *out, const LProgram *fp) {
  const LKernel *k = fp->kernels.data[0];
  CKernelGen c = {.par_var = -1, .kname = emit_kernel_name(cx, fp, 0)};
  c.open = arena_alloc(&cx->arena, sizeof(int) * (size_t)(k->nvars + 1));
  cexpr_begin(&c.g, cx, &dialect_c, pr, fp, k);
  TD_ASSERT(!c.g.has_err);
  Buf body;
  buf_init(&body, cx);
  c.g.b = &body;
  stmts(&c, &k->body);
  if (c.g.streamed)
    cexpr_fence_streams(&c.g);
  if (c.g.lane_loops)
    buf_puts(out, lanes_begin);
  buf_printf(out, "TDSL_G_FUNC void %s(", c.kname);
  for (int i = 0; i < k->args.len; i++) {
    const LArg *a = &k->args.data[i];
    buf_printf(out, "%s%s%s *restrict b%d", i ? ", " : "", a->written ? "" : "const ",
               cexpr_storage_type(fp->bufs.data[a->buf].dtype), i);
  }
  for (int i = 0; i < k->nscalars; i++)
    buf_printf(out, "%sint64_t a%d", k->args.len + i ? ", " : "", i);
  buf_puts(out, k->args.len + k->nscalars ? ") {\n" : "void) {\n");
  for (int i = 0; i < k->args.len; i++) {
    if (!c.g.arg_used[i])
      buf_printf(out, "  (void)b%d;\n", i);
  }
  for (int i = 0; i < k->nscalars; i++) {
    if (!stmts_use_arg(&k->body, i))
      buf_printf(out, "  (void)a%d;\n", i);
  }
  buf_puts(out, body.data ? body.data : "");
  buf_puts(out, "}\n");
  if (c.g.lane_loops)
    buf_puts(out, lanes_end);
  buf_puts(out, "\n");
}

// ---- the entry's calls, repeated runs rolled into loops (emit_find_run) ----
static void emit_prof_mark(Buf *out, const LProgram *p, int k);

// One call of kernel i, its starts advanced by `step` times the loop index when in a loop
// (outside a loop under bench --profile: the runtime's timestamp first).
static void emit_call(Ctx *cx, Buf *out, const LProgram *p, int i, int next, bool first, int depth) {
  const LKernel *k = p->kernels.data[i];
  if (next < 0)
    emit_prof_mark(out, p, i);
  buf_indent(out, depth);
  buf_printf(out, "%s%s(", first ? "tdsl_g_rc = " : "TDSL_G_RUN(", emit_kernel_name(cx, p, i));
  for (int a = 0, n = 0; a < k->args.len; a++) {
    const LArg *arg = &k->args.data[a];
    if (scratch_arg(p, k, a))
      continue;
    int64_t step = next >= 0 ? p->kernels.data[next]->args.data[a].at - arg->at : 0;
    if (arg->at || step) {  // share_kernels: the kernel sees the buffer from element `at` on
      buf_printf(out, "%s(%s *)tdsl_g_p[%d] + %" PRId64, n++ ? ", " : "",
                 cexpr_storage_type(p->bufs.data[arg->buf].dtype), arg->buf, arg->at);
      if (step)
        buf_printf(out, " + %" PRId64 " * tdsl_g_l", step);
    } else {
      buf_printf(out, "%stdsl_g_p[%d]", n++ ? ", " : "", arg->buf);
    }
  }
  buf_puts(out, first ? ");\n" : "));\n");
}

static void emit_calls(Ctx *cx, Buf *out, const LProgram *p, int lo, int hi) {
  if (lo >= hi)
    return;
  int s, per, r;
  emit_find_run(p, lo, hi, &s, &per, &r);
  if (r < 2 || p->profile) {  // (a profile times each call: none rolled)
    for (int i = lo; i < hi; i++)
      emit_call(cx, out, p, i, -1, i == 0, 1);
    return;
  }
  emit_calls(cx, out, p, lo, s);
  buf_printf(out, "  for (int64_t tdsl_g_l = 0; tdsl_g_l < %d && TDSL_G_OK(tdsl_g_rc); tdsl_g_l++) {\n", r);
  for (int q = 0; q < per; q++)
    emit_call(cx, out, p, s + q, s + per + q, s + q == 0, 2);
  buf_puts(out, "  }\n");
  emit_calls(cx, out, p, s + r * per, hi);
}

// bench --profile (LProgram.profile): the runtime's timestamp before kernel k and after
// the last one (k == the kernel count); nothing in an ordinary build.
static void emit_prof_mark(Buf *out, const LProgram *p, int k) {
  if (p->profile)
    buf_printf(out, "  %stdsl_prof_mark(%d);\n", k ? "if (TDSL_G_OK(tdsl_g_rc))\n    " : "", k);
}

static void emit_entry(Ctx *cx, Buf *out, const LProgram *p) {
  emit_entry_tables(out, p);
  buf_puts(out, "\n");
  emit_entry_begin(cx, out, p);
  int nb = p->bufs.len;
  if (nb && p->kernels.len) {  // each buffer's data, once
    buf_printf(out, "  void *tdsl_g_p[%d];\n  for (int tdsl_g_i = 0; tdsl_g_i < %d; tdsl_g_i++)\n"
                    "    tdsl_g_p[tdsl_g_i] = tdsl_tensor_data(&tdsl_g_b[tdsl_g_i]);\n", nb, nb);
  }
  emit_calls(cx, out, p, 0, p->kernels.len);
  emit_prof_mark(out, p, p->kernels.len);
  emit_entry_end(out, p);
}

static void c_emit(Ctx *cx, LProgram *const *progs, int nprogs, FILE *out) {
  Prelude pr = {0};
  Buf body;
  buf_init(&body, cx);
  for (int i = 0; i < nprogs; i++) {
    const LProgram *p = progs[i];
    buf_printf(&body, "%s// ---- %s ----\n\n", i ? "\n" : "", p->name);
    for (int f = 0; f < p->funcs.len; f++)
      emit_func(cx, &pr, &body, p->funcs.data[f]);
    for (int k = 0; k < p->kernels.len; k++)
      if (!p->kernels.data[k]->same)  // else it calls an earlier one (share_kernels)
        emit_kernel(cx, &pr, &body, p, k);
    emit_entry(cx, &body, p);
  }
  Buf head;
  buf_init(&head, cx);
  buf_printf(&head, "// Generated by tdslc from %s: C11; parallel loops run on libtdslrt's thread pool.\n",
             emit_source_name(cx, progs, nprogs));
  buf_puts(&head, "// Build: cc -std=c11 -O2 -march=native -fvect-cost-model=dynamic -fno-math-errno\n"
                  "//        -fno-trapping-math -mprefer-vector-width=512 -c FILE.c -I$(tdslc --print-include-dir)\n"
                  "//        (link with -ltdslrt; -mprefer-vector-width=512 on x86-64 only)\n");
  buf_puts(&head, "// (ISO C keeps floating-point contraction off, as the results assume; without\n"
                  "// -fno-math-errno a loop calling sqrtf stays scalar, without -fno-trapping-math the vector\n"
                  "// math's selects, such as pow's, do; without -mprefer-vector-width=512 gcc may split an\n"
                  "// AVX-512 host's 16-lane vectors and spill a matmul's accumulators.) TDSL_NUM_THREADS sets\n"
                  "// the threads.\n");
  buf_puts(&head, "#include <math.h>\n#include <stdbool.h>\n#include <stddef.h>\n#include <stdint.h>\n\n"
                  "#include \"tdsl.h\"\n\n"
                  "// Helpers come in groups a kernel may use only part of (clang -Wall warns of each).\n"
                  "#if defined(__GNUC__) || defined(__clang__)\n"
                  "#pragma GCC diagnostic ignored \"-Wunused-function\"\n#endif\n\n");
  bool funcs = false;
  for (int i = 0; i < nprogs; i++)
    funcs |= progs[i]->funcs.len > 0;
  if (funcs)  // GCC inlined the attention kernel's micro-kernels into its nest of loops and
              // spilled their pointers (the C kernel 1.15x slower than LLVM's, which calls them)
    buf_puts(&head, "#if defined(__GNUC__) || defined(__clang__)\n"
                    "#define TDSL_G_FUNC __attribute__((noinline)) static\n"
                    "#else\n#define TDSL_G_FUNC static\n#endif\n\n");
  if (cexpr_prelude(&head, &dialect_c, &pr))
    buf_puts(&head, "\n");
  for (int i = 0; i < nprogs; i++) {
    if (progs[i]->kernels.len > 1) {  // (an entry of one kernel calls it unguarded)
      buf_puts(&head, "// An entry runs each kernel while those before it succeeded.\n"
                      "#define TDSL_G_RUN(call) if (TDSL_G_OK(tdsl_g_rc)) tdsl_g_rc = (call)\n\n");
      break;
    }
  }
  buf_write(&head, out);
  buf_write(&body, out);
}

const Target target_c = {"c", ".c", c_emit};
