// codegen/llvm_gpu.c: the GPU mode of the LLVM backend (llvm_build_gpu_module, for
// codegen/ptx.c). It builds the kernels of llvm_kernel.c with the same statements and
// formulas, but as NVPTX kernels `void tdsl_g_<fn>_<k>(tdsl_gpu_error *err, T0 *b0,
// ...)` listed in !nvvm.annotations: math from libdevice (llvm_expr.c), errors in the
// device error record (llvm_gpu_raise), no outlining, no entries, no runtime calls.
// What is its own: building the NVVM plan of the GPU schedule (LKernel.gpu, decided by
// ir/sched_gpu.c; LGpuSched in ir/loop.h) over the threads of a 1-D grid.
//
// Invariants: iterations run on different threads only where the schedule spreads
// them, the rest on thread 0; a kernel's iters is the schedule's (launch that many
// threads or fewer; 0: a serial kernel, one thread). Kernels with the same code
// (LKernel.same) are built once: a later one gets the first's iters (its schedule is
// the first's) and launches its kernel.
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
// kernel in !nvvm.annotations. Each top-level statement runs in turn: the loops its
// schedule spreads (LGpuSched.spread) flattened row-major, so the innermost
// (unit-stride) dim goes to consecutive threads, and run grid-stride from the global
// thread id ctaid.x * ntid.x + tid.x; a statement with none spread, or a serial
// kernel's whole body, runs on thread 0.

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

// for (f = gtid; f < total; f += nthreads): the loops of the spread nest x get their
// indices from f, row-major (in i32 when total fits), then the body of the innermost
// runs.
static void grid_stride(LlvmKernelGen *c, const LGpuNest *x, LLVMValueRef gtid, LLVMValueRef nthreads) {
  LlvmModuleGen *g = c->g;
  LLVMBuilderRef b = g->b;
  const LStmt *const *chain = x->loops;
  int m = x->n;
  int64_t total = x->total;
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
  llvm_stmts(c, x->body);
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
// iterations spread over threads (LGpuSched.iters; 0: serial, thread 0 alone).
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
  const LGpuSched *gs = k->gpu;  // sched_gpu's
  TD_ASSERT(gs);
  *iters = gs->iters;
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
      if (gs->spread[i].n == 0)
        stmt_if(&c, first, s, NULL);
      else
        grid_stride(&c, &gs->spread[i], gtid, nthreads);
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
    for (int k = 0; k < progs[i]->kernels.len; k++, n++) {
      int j = emit_kernel_code(progs[i], k);  // a kernel with an earlier one's code launches that one
      if (j == k)
        build_gpu_kernel(&g, progs[i], k, &iters[n]);
      else
        iters[n] = iters[n - (k - j)];
    }
  LLVMDisposeBuilder(g.b);
  return g.m;
}
