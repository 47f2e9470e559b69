// codegen/llvm_gpu.c: the GPU mode of the LLVM backend (llvm_build_gpu_module, for
// codegen/ptx.c). It builds the kernels of llvm_kernel.c with the same statements and
// formulas, but as NVPTX kernels `void tdsl_g_<fn>_<k>(tdsl_gpu_error *err, T0 *b0,
// ...)` listed in !nvvm.annotations: math from libdevice (llvm_expr.c), errors in the
// device error record (llvm_gpu_raise), no outlining, no entries, no runtime calls.
// What is its own: the spreading of loops over the threads of a 1-D grid.
//
// Invariants: iterations run on different threads only where they provably touch
// disjoint elements (distributable and independent below), the rest on thread 0; a
// kernel's iters is the most iterations it spreads (launch that many threads or
// fewer; 0: a serial kernel, one thread).
#include "codegen/llvm_internal.h"

#include <string.h>

// ============================================================================
// The device error record
// ============================================================================
// On the GPU: the first raise sets err->flag from 0 to 1 (cmpxchg, atomicCAS) and
// then writes k and the value; later raises change nothing.
void llvm_gpu_raise(LlvmKernelGen *c, int err, LLVMValueRef value) {
  LlvmModuleGen *g = c->g;
  LLVMBuilderRef b = g->b;
  LLVMValueRef flag = LLVMBuildStructGEP2(b, g->gerr, c->errp, 0, "");
  LLVMValueRef r = LLVMBuildAtomicCmpXchg(b, flag, ci(g->i32, 0), ci(g->i32, 1), LLVMAtomicOrderingMonotonic,
                                          LLVMAtomicOrderingMonotonic, 0);
  LLVMBasicBlockRef first = new_block(c, "first"), cont = new_block(c, "recorded");
  LLVMBuildCondBr(b, LLVMBuildExtractValue(b, r, 1, ""), first, cont);
  LLVMPositionBuilderAtEnd(b, first);
  LLVMBuildStore(b, ci(g->i32, err), LLVMBuildStructGEP2(b, g->gerr, c->errp, 1, ""));
  LLVMBuildStore(b, value, LLVMBuildStructGEP2(b, g->gerr, c->errp, 2, ""));
  LLVMBuildBr(b, cont);
  LLVMPositionBuilderAtEnd(b, cont);
}

// ============================================================================
// Spreading loops over threads
// ============================================================================
// Each LKernel becomes `void tdsl_g_<fn>_<k>(tdsl_gpu_error *err, T0 *b0, ...)`, a
// kernel in !nvvm.annotations. A kernel spreads work over the threads of a 1-D
// grid: each top-level statement (all must be loops) contributes its
// perfect nest (loops whose body is one loop), flattened row-major so the innermost
// (unit-stride) dim goes to consecutive threads, and run grid-stride from the global
// thread id ctaid.x * ntid.x + tid.x. Only the outermost m loops of a nest whose
// iterations provably touch disjoint elements are spread (distributable below); a
// nest with none spread runs on thread 0. The loops' parallel marks are not used.
// Several top-level statements run one after another in each thread, so they must
// not touch what another writes (independent below); else the kernel is serial.
typedef struct GpuAccess {
  int arg;
  const LIndex *idx;
  bool store;
} GpuAccess;
typedef VEC(GpuAccess) GpuAccessList;

typedef struct AccessScan {
  Arena *ar;
  GpuAccessList acc;
  int64_t *ext;  // per loop variable bound in the scanned code: its extent
} AccessScan;

static void gscan_expr(AccessScan *s, const LExpr *e) {
  if (!e)
    return;
  if (e->kind == LX_LOAD) {
    GpuAccess a = {e->buf, &e->idx, false};
    vec_push(s->ar, &s->acc, a);
    gscan_expr(s, e->idx.dyn);
  }
  gscan_expr(s, e->a);
  gscan_expr(s, e->b);
  gscan_expr(s, e->c);
}

static void gscan(AccessScan *s, const LStmt *st) {
  switch (st->kind) {
  case LS_LOOP:
    if (st->extent <= 0)
      return;  // never runs
    s->ext[st->var] = st->extent;
    for (int i = 0; i < st->body.len; i++)
      gscan(s, st->body.data[i]);
    return;
  case LS_STORE: {
    GpuAccess a = {st->buf, &st->idx, true};
    vec_push(s->ar, &s->acc, a);
    gscan_expr(s, st->idx.dyn);
    gscan_expr(s, st->val);
    return;
  }
  case LS_LET:
  case LS_SET: gscan_expr(s, st->val); return;
  case LS_IF:
    gscan_expr(s, st->cond);
    for (int i = 0; i < st->body.len; i++)
      gscan(s, st->body.data[i]);
    return;
  case LS_COUNT: break;
  }
  td_unreachable();
}

// Marks in used the locals st reads, declares or sets.
static void locals_used(const LStmt *st, bool *used) {
  llvm_scan_locals_expr(st->val, used);
  llvm_scan_locals_expr(st->cond, used);
  if (st->kind == LS_STORE)
    llvm_scan_locals_expr(st->idx.dyn, used);
  if (st->kind == LS_LET || st->kind == LS_SET)
    used[st->local] = true;
  llvm_scan_locals(&st->body, used, used);
}

static const int64_t GLIMIT = (int64_t)1 << 60;  // larger magnitudes: "unknown"

static int64_t gcoef(const LIndex *ix, int v) {
  int64_t c = 0;
  for (int t = 0; t < ix->nterms; t++)
    if (ix->var[t] == v)
      c += ix->coef[t];
  return c;
}

// [*lo, *hi]: what the terms of ix over variables not in skip add to its base, the
// variables ranging over [0, ext); false when unknown (no extent, or too large).
static bool term_range(const LIndex *ix, const bool *skip, const int64_t *ext, int nvars, int64_t *lo, int64_t *hi) {
  *lo = *hi = 0;
  for (int v = 0; v < nvars; v++) {
    if (skip && skip[v])
      continue;
    int64_t c = gcoef(ix, v);
    if (c == 0)
      continue;
    if (ext[v] <= 0 || c > GLIMIT || c < -GLIMIT || ext[v] - 1 > GLIMIT / (c < 0 ? -c : c))
      return false;
    int64_t x = c * (ext[v] - 1);
    *(x > 0 ? hi : lo) += x;
    if (*hi > GLIMIT || *lo < -GLIMIT)
      return false;
  }
  return true;
}

// The loops chain[0..m), the first m of a perfect nest, may run their iterations in
// any order on any threads when, for every buffer written in their body, all
// accesses to it share the base and the coefficients of the chain's variables, and
// these coefficients, by magnitude, each exceed what the smaller ones and the rest of
// the index can reach: then the element determines the iteration, and no iteration
// touches an element another one writes.
static bool distributable(Arena *ar, const LKernel *k, const LStmt *const *chain, int m) {
  int nv = k->nvars;
  bool *isd = arena_alloc(ar, (size_t)nv + 1);
  int64_t *ext = arena_alloc(ar, sizeof *ext * (size_t)(nv + 1));
  AccessScan s = {ar, {0}, ext};
  for (int i = 0; i < m; i++)
    isd[chain[i]->var] = true, ext[chain[i]->var] = chain[i]->extent;
  for (int i = 0; i < chain[m - 1]->body.len; i++)
    gscan(&s, chain[m - 1]->body.data[i]);
  int64_t *c = arena_alloc(ar, sizeof *c * (size_t)(m + 1)), *e = arena_alloc(ar, sizeof *e * (size_t)(m + 1));
  for (int w = 0; w < k->args.len; w++) {
    bool written = false;
    for (int i = 0; i < s.acc.len; i++)
      written |= s.acc.data[i].arg == w && s.acc.data[i].store;
    if (!written)
      continue;
    const LIndex *first = NULL;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (int i = 0; i < s.acc.len; i++) {
      const GpuAccess *a = &s.acc.data[i];
      if (a->arg != w)
        continue;
      if (a->idx->dyn)
        return false;
      if (!first)
        first = a->idx;
      if (a->idx->base != first->base)
        return false;
      for (int j = 0; j < m; j++)
        if (gcoef(a->idx, chain[j]->var) != gcoef(first, chain[j]->var))
          return false;
      int64_t l, h;
      if (!term_range(a->idx, isd, ext, nv, &l, &h))
        return false;
      lo = l < lo ? l : lo;
      hi = h > hi ? h : hi;
    }
    for (int j = 0; j < m; j++) {  // |coefficients|, sorted ascending with their extents
      int64_t cj = gcoef(first, chain[j]->var), ej = chain[j]->extent;
      if (cj == 0 || cj > GLIMIT || cj < -GLIMIT)
        return false;
      cj = cj < 0 ? -cj : cj;
      int p = j;
      for (; p > 0 && c[p - 1] > cj; p--)
        c[p] = c[p - 1], e[p] = e[p - 1];
      c[p] = cj, e[p] = ej;
    }
    int64_t reach = hi - lo;
    for (int j = 0; j < m; j++) {
      if (c[j] <= reach || e[j] - 1 > GLIMIT / c[j])
        return false;
      if ((reach += c[j] * (e[j] - 1)) > GLIMIT)
        return false;
    }
  }
  return true;
}

// Whether top-level statements a and b touch no element the other one writes
// (comparing the ranges of their indices).
static bool independent(Arena *ar, const LKernel *k, const LStmt *a, const LStmt *b) {
  int nv = k->nvars;
  AccessScan sa = {ar, {0}, arena_alloc(ar, sizeof(int64_t) * (size_t)(nv + 1))};
  AccessScan sb = {ar, {0}, arena_alloc(ar, sizeof(int64_t) * (size_t)(nv + 1))};
  gscan(&sa, a);
  gscan(&sb, b);
  for (int i = 0; i < sa.acc.len; i++)
    for (int j = 0; j < sb.acc.len; j++) {
      const GpuAccess *x = &sa.acc.data[i], *y = &sb.acc.data[j];
      if (x->arg != y->arg || (!x->store && !y->store))
        continue;
      int64_t xl, xh, yl, yh;
      if (x->idx->dyn || y->idx->dyn || !term_range(x->idx, NULL, sa.ext, nv, &xl, &xh) ||
          !term_range(y->idx, NULL, sb.ext, nv, &yl, &yh))
        return false;
      if (x->idx->base + xl <= y->idx->base + yh && y->idx->base + yl <= x->idx->base + xh)
        return false;
    }
  return true;
}

// The perfect nest of s (s, then while a body is one loop, that loop): its length.
static int perfect_nest(const LStmt *s, const LStmt **chain, int max) {
  int n = 0;
  while (n < max && s->kind == LS_LOOP && s->extent > 0) {
    chain[n++] = s;
    if (s->body.len != 1)
      break;
    s = s->body.data[0];
  }
  return n;
}

// The plan of kernel k: m[i] loops of top-level statement i spread over threads
// (0: it runs on thread 0); returns the most iterations spread, 0 for a serial kernel.
// The loops' parallel marks are not needed: they say which loop is worth the CPU's
// threads, while GPU threads are cheap, and distributable proves independence.
static int64_t gpu_plan(Arena *ar, const LKernel *k, int *m) {
  const LStmtList *body = &k->body;
  int nl = k->locals.len;
  int *owner = arena_alloc(ar, sizeof *owner * (size_t)(nl + 1));
  for (int l = 0; l < nl; l++)
    owner[l] = -1;
  for (int i = 0; i < body->len; i++) {
    if (body->data[i]->kind != LS_LOOP)
      return 0;  // a top-level statement every thread would run
    bool *used = arena_alloc(ar, (size_t)nl + 1);
    locals_used(body->data[i], used);
    for (int l = 0; l < nl; l++) {  // a local lives in one top-level statement
      if (used[l] && owner[l] >= 0)
        return 0;
      if (used[l])
        owner[l] = i;
    }
  }
  for (int i = 0; i < body->len; i++)
    for (int j = i + 1; j < body->len; j++)
      if (!independent(ar, k, body->data[i], body->data[j]))
        return 0;
  const LStmt **chain = arena_alloc(ar, sizeof *chain * (size_t)(k->nvars + 1));
  int64_t most = 0;
  for (int i = 0; i < body->len; i++) {
    int n = perfect_nest(body->data[i], chain, k->nvars);
    m[i] = n;
    while (m[i] > 0 && !distributable(ar, k, chain, m[i]))
      m[i]--;
    int64_t iters = 1;
    for (int j = 0; j < m[i]; j++)
      iters = iters > INT64_MAX / chain[j]->extent ? INT64_MAX : iters * chain[j]->extent;
    if (m[i] > 0 && iters > most)
      most = iters;
  }
  return most;
}

// llvm.nvvm.read.ptx.sreg.NAME as an i64.
static LLVMValueRef sreg(LlvmModuleGen *g, const char *name) {
  const char *full = arena_printf(&g->cx->arena, "llvm.nvvm.read.ptx.sreg.%s", name);
  unsigned id = LLVMLookupIntrinsicID(full, strlen(full));
  TD_ASSERT(id != 0);
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(g->m, id, NULL, 0);
  LLVMValueRef v = LLVMBuildCall2(g->b, LLVMIntrinsicGetType(g->lc, id, NULL, 0), f, NULL, 0, "");
  return LLVMBuildZExt(g->b, v, g->i64, "");
}

// a * b of two special registers, widened to i64, as PTX's mul.wide.u32 in inline
// asm: opaque to LLVM 14, whose loop strength reduction would otherwise rebuild it
// narrowed to an i1 multiply that the NVPTX back end cannot select.
static LLVMValueRef mul_wide(LlvmModuleGen *g, const char *a, const char *b) {
  LLVMValueRef args[2] = {LLVMBuildTrunc(g->b, sreg(g, a), g->i32, ""), LLVMBuildTrunc(g->b, sreg(g, b), g->i32, "")};
  LLVMTypeRef pt[2] = {g->i32, g->i32};
  LLVMTypeRef ft = LLVMFunctionType(g->i64, pt, 2, 0);
  static char text[] = "mul.wide.u32 $0, $1, $2;", cons[] = "=l,r,r";
  LLVMValueRef f = LLVMGetInlineAsm(ft, text, strlen(text), cons, strlen(cons), 0, 0, LLVMInlineAsmDialectATT, 0);
  return LLVMBuildCall2(g->b, ft, f, args, 2, "");
}

// if (cond) { s } on the current thread.
static void stmt_if(LlvmKernelGen *c, LLVMValueRef cond, const LStmt *s, const LStmtList *l) {
  LlvmModuleGen *g = c->g;
  LLVMBasicBlockRef then = new_block(c, "then"), cont = new_block(c, "endif");
  LLVMBuildCondBr(g->b, cond, then, cont);
  LLVMPositionBuilderAtEnd(g->b, then);
  if (s)
    llvm_stmt(c, s);
  else
    llvm_stmts(c, l);
  LLVMMoveBasicBlockAfter(cont, LLVMGetInsertBlock(g->b));
  LLVMBuildBr(g->b, cont);
  LLVMPositionBuilderAtEnd(g->b, cont);
}

// for (f = gtid; f < total; f += nthreads): the loops chain[0..m) of the nest of s
// get their indices from f, row-major (in i32 when total fits), then the body of
// the innermost runs.
static void grid_stride(LlvmKernelGen *c, const LStmt *s, int m, LLVMValueRef gtid, LLVMValueRef nthreads) {
  LlvmModuleGen *g = c->g;
  LLVMBuilderRef b = g->b;
  const LStmt **chain = arena_alloc(&g->cx->arena, sizeof *chain * (size_t)(m + 1));
  TD_ASSERT(perfect_nest(s, chain, m) == m);
  int64_t total = 1;
  for (int j = 0; j < m; j++)
    total *= chain[j]->extent;  // no overflow: gpu_plan counted it
  bool narrow = total <= INT32_MAX;
  LLVMTypeRef it = narrow ? g->i32 : g->i64;
  LLVMValueRef tot = ci(g->i64, total);
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(b), head = new_block(c, "grid"), exit = new_block(c, "endgrid");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, gtid, tot, ""), head, exit);
  LLVMPositionBuilderAtEnd(b, head);
  LLVMValueRef f = LLVMBuildPhi(b, g->i64, "");
  LLVMValueRef rem = narrow ? LLVMBuildTrunc(b, f, g->i32, "") : f;
  for (int j = m - 1; j >= 0; j--) {
    LLVMValueRef v = rem;
    if (j > 0) {
      v = LLVMBuildURem(b, rem, ci(it, chain[j]->extent), "");
      rem = LLVMBuildUDiv(b, rem, ci(it, chain[j]->extent), "");
    }
    c->vars[chain[j]->var] = narrow ? LLVMBuildZExt(b, v, g->i64, "") : v;
  }
  llvm_stmts(c, &chain[m - 1]->body);
  LLVMValueRef next = LLVMBuildAdd(b, f, nthreads, "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, next, tot, ""), head, exit);
  LLVMValueRef in[2] = {gtid, next};
  LLVMBasicBlockRef from[2] = {pre, latch};
  LLVMAddIncoming(f, in, from, 2);
  LLVMMoveBasicBlockAfter(exit, latch);
  LLVMPositionBuilderAtEnd(b, exit);
  for (int j = 0; j < m; j++)
    c->vars[chain[j]->var] = NULL;
}

// void tdsl_g_<fn>_<k>(tdsl_gpu_error *err, T0 *b0, ...): *iters gets the
// iterations spread over threads (0: serial, thread 0 alone).
static LLVMValueRef build_gpu_kernel(LlvmModuleGen *g, const LProgram *p, int ki, int64_t *iters) {
  const LKernel *k = p->kernels.data[ki];
  Arena *ar = &g->cx->arena;
  LlvmKernelGen c;
  llvm_kernel_begin(&c, g, p, ki);
  int nargs = k->args.len;
  LLVMTypeRef *pt = arena_alloc(ar, sizeof *pt * (size_t)(nargs + 1));
  pt[0] = g->gerrp;
  for (int i = 0; i < nargs; i++)
    pt[i + 1] = arg_ptr_type(&c, i);
  c.fn = LLVMAddFunction(g->m, c.kname, LLVMFunctionType(g->vd, pt, (unsigned)nargs + 1, 0));
  llvm_add_attr(g, c.fn, LLVMAttributeFunctionIndex, "nounwind");
  llvm_pointer_attrs(&c, c.fn, 1);
  LLVMBuilderRef b = g->b;
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(g->lc, c.fn, "entry"));
  c.errp = LLVMGetParam(c.fn, 0);
  c.args = arena_alloc(ar, sizeof(LLVMValueRef) * (size_t)(nargs + 1));
  for (int i = 0; i < nargs; i++)
    c.args[i] = LLVMGetParam(c.fn, (unsigned)i + 1);
  llvm_kernel_locals(&c);
  int *m = arena_alloc(ar, sizeof *m * (size_t)(k->body.len + 1));
  *iters = gpu_plan(ar, k, m);
  LLVMValueRef gtid = LLVMBuildAdd(b, mul_wide(g, "ctaid.x", "ntid.x"), sreg(g, "tid.x"), "");
  LLVMValueRef first = LLVMBuildICmp(b, LLVMIntEQ, gtid, ci(g->i64, 0), "");
  if (*iters == 0) {
    stmt_if(&c, first, NULL, &k->body);
  } else {
    LLVMValueRef nthreads = mul_wide(g, "nctaid.x", "ntid.x");
    for (int i = 0; i < k->body.len; i++) {
      const LStmt *s = k->body.data[i];
      if (s->extent <= 0)
        continue;
      if (m[i] == 0)
        stmt_if(&c, first, s, NULL);
      else
        grid_stride(&c, s, m[i], gtid, nthreads);
    }
  }
  LLVMBuildRetVoid(b);
  // !nvvm.annotations: {fn, !"kernel", i32 1}
  LLVMMetadataRef md[3] = {LLVMValueAsMetadata(c.fn), LLVMMDStringInContext2(g->lc, "kernel", 6),
                           LLVMValueAsMetadata(ci(g->i32, 1))};
  LLVMAddNamedMetadataOperand(g->m, "nvvm.annotations", LLVMMetadataAsValue(g->lc, LLVMMDNodeInContext2(g->lc, md, 3)));
  return c.fn;
}

struct LLVMOpaqueModule *llvm_build_gpu_module(Ctx *cx, struct LLVMOpaqueContext *lc, LProgram *const *progs,
                                               int nprogs, const char *triple, const char *data_layout,
                                               int64_t *iters) {
  LlvmModuleGen g;
  llvm_module_begin(&g, cx, lc, progs, nprogs, triple, data_layout, true);
  g.b = LLVMCreateBuilderInContext(lc);
  int n = 0;
  for (int i = 0; i < nprogs; i++)
    for (int k = 0; k < progs[i]->kernels.len; k++, n++)
      build_gpu_kernel(&g, progs[i], k, &iters[n]);
  LLVMDisposeBuilder(g.b);
  return g.m;
}
