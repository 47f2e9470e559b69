// codegen/llvm_kernel.c: the loop builder of the LLVM backend. The statements of
// ir/loop.h (loops, stores, locals, ifs) and the CPU kernel around them:
// `static int tdsl_g_<fn>_<k>(T0 *noalias b0, ...)`, which returns 0 or the error
// of tdsl_entry_kernel_error. Expressions come from llvm_expr.c; the GPU kernels of
// llvm_gpu.c use the same statements.
//
// Invariants:
//   - loops are counted i64 loops in rotated form (preheader, one header phi, one
//     latch) so the loop vectorizer sees them; per-iteration calls are only libm
//     calls and the cold calls that raise errors;
//   - a parallel loop (the outermost one marked parallel) is outlined: its body
//     becomes `void tdsl_g_<fn>_<k>_p<N>(void *ctx, i64 begin, i64 end)` run by
//     the runtime's tdsl_parallel_for; ctx carries the kernel's buffer pointers,
//     its error record and the enclosing loop variables and locals the body reads
//     (by value: a local the body declares is private to an iteration, as in c.c;
//     the kernel builder never writes a local declared outside a parallel loop).
//     The body proper is an internal function with noalias pointer parameters, so
//     the vectorizer knows they don't alias, called or inlined;
//   - errors: a kernel records its first failure in a tdsl_kernel_error on its
//     stack through the runtime (raise/seal exactly where c.c calls
//     tdsl_g_raise/tdsl_g_seal: lowest iteration of a parallel loop wins) and
//     returns tdsl_entry_kernel_error(message, value) after its loops;
//   - every name a kernel defines begins with tdsl_g_.
#include "codegen/llvm_internal.h"

#include <string.h>

#include <llvm-c/DebugInfo.h>

// ============================================================================
// Streaming stores (LArg.stream)
// ============================================================================
// The loop vectorizer refuses a scalar store marked !nontemporal unless it is aligned
// to two elements, so the mark is made after optimisation, on the vector stores: a
// store of a streamed arg carries a !tbaa tag of its own through the vectorizers
// (which keep !tbaa; no load has a tag, so it changes no alias answer), each streamed
// pointer is assumed 64-byte aligned (every storage is, runtime/storage.c), and
// instcombine raises a vector store's alignment where it follows from that. Then
// llvm_mark_streams (run by llvm_emit.c after optimisation) makes every tagged vector
// store of 16, 32 or 64 bytes whose alignment covers its size non-temporal (MOVNTPS
// and kin need it; any other store stays as is), and one of a wider power of two
// aligned to 64 (the vectors of ir/gemm.c's schedule: the target splits it into
// stores of at most 64 bytes that each stay aligned). The explicit vector stores of
// LExpr lanes carry the tag as the scalar ones do.
static const char STREAM_TBAA[] = "tdsl stream";

// The tag (uniqued: the same node each time in one context).
static LLVMValueRef stream_tag(LLVMContextRef lc) {
  LLVMMetadataRef root_name = LLVMMDStringInContext2(lc, "tdsl", 4);
  LLVMMetadataRef root = LLVMMDNodeInContext2(lc, &root_name, 1);
  LLVMMetadataRef zero = LLVMValueAsMetadata(LLVMConstInt(LLVMInt64TypeInContext(lc), 0, 0));
  LLVMMetadataRef type_ops[] = {LLVMMDStringInContext2(lc, STREAM_TBAA, sizeof STREAM_TBAA - 1), root, zero};
  LLVMMetadataRef type = LLVMMDNodeInContext2(lc, type_ops, 3);
  LLVMMetadataRef tag_ops[] = {type, type, zero};
  return LLVMMetadataAsValue(lc, LLVMMDNodeInContext2(lc, tag_ops, 3));
}

// llvm.assume(ptr % 64 == 0) for each streamed arg of the kernel being built.
static void assume_stream_aligned(LlvmKernelGen *c) {
  LlvmModuleGen *g = c->g;
  unsigned id = LLVMLookupIntrinsicID("llvm.assume", 11);
  for (int i = 0; i < c->k->args.len; i++) {
    if (!c->k->args.data[i].stream || g->gpu)
      continue;
    LLVMValueRef low = LLVMBuildAnd(g->b, LLVMBuildPtrToInt(g->b, c->args[i], g->i64, ""), ci(g->i64, 63), "");
    LLVMValueRef ok = LLVMBuildICmp(g->b, LLVMIntEQ, low, ci(g->i64, 0), "");
    LLVMBuildCall2(g->b, LLVMIntrinsicGetType(g->lc, id, NULL, 0), LLVMGetIntrinsicDeclaration(g->m, id, NULL, 0),
                   &ok, 1, "");
  }
}

// Non-temporal stores are weakly ordered: whoever reads the result next (the caller,
// or the thread that waits for this chunk) must see them, so a body or kernel that may
// stream ends with a fence (MFENCE: a store of a flag alone would not order them).
static void fence_streams(LlvmKernelGen *c) {
  for (int i = 0; i < c->k->args.len; i++)
    if (c->k->args.data[i].stream && !c->g->gpu) {
      LLVMBuildFence(c->g->b, LLVMAtomicOrderingSequentiallyConsistent, 0, "");
      return;
    }
}

// After optimisation: the tagged vector stores that may stream get !nontemporal.
void llvm_mark_streams(LLVMContextRef lc, LLVMModuleRef m) {
  unsigned tbaa = LLVMGetMDKindIDInContext(lc, "tbaa", 4), nt = LLVMGetMDKindIDInContext(lc, "nontemporal", 11);
  LLVMMetadataRef one = LLVMValueAsMetadata(LLVMConstInt(LLVMInt32TypeInContext(lc), 1, 0));
  LLVMValueRef nt_node = LLVMMetadataAsValue(lc, LLVMMDNodeInContext2(lc, &one, 1));
  LLVMValueRef want = stream_tag(lc);
  LLVMTargetDataRef td = LLVMGetModuleDataLayout(m);
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
      for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in)) {
        if (LLVMGetInstructionOpcode(in) != LLVMStore || !LLVMHasMetadata(in))
          continue;
        LLVMValueRef tag = LLVMGetMetadata(in, tbaa);
        LLVMTypeRef vt = LLVMTypeOf(LLVMGetOperand(in, 0));
        unsigned long long size = LLVMStoreSizeOfType(td, vt);
        if (tag != want || LLVMGetTypeKind(vt) != LLVMVectorTypeKind || size < 16 || (size & (size - 1)) != 0 ||
            LLVMGetAlignment(in) < (size < 64 ? size : 64))
          continue;
        LLVMSetMetadata(in, nt, nt_node);
      }
}

// ============================================================================
// Scratch (ir/loop.h): a per-thread region from the runtime
// ============================================================================
static bool scratch_arg(const LlvmKernelGen *c, int a) { return c->p->bufs.data[c->k->args.data[a].buf].scratch; }

// tdsl_scratch(bytes) as arg a's pointer type.
static LLVMValueRef scratch_ptr(LlvmKernelGen *c, int a) {
  LlvmModuleGen *g = c->g;
  const LBuf *lb = &c->p->bufs.data[c->k->args.data[a].buf];
  LLVMTypeRef pt[] = {g->i64};
  LLVMValueRef n = ci(g->i64, lb->numel * dtype_size(lb->dtype));
  LLVMValueRef r = llvm_call(g, "tdsl_scratch", g->i8p, pt, 1, &n);
  return LLVMBuildBitCast(g->b, r, arg_ptr_type(c, a), "");
}

// ============================================================================
// Statements, loops, outlined parallel loops
// ============================================================================
// An alloca at the top of the current function's entry block.
static LLVMValueRef entry_alloca(LlvmKernelGen *c, LLVMTypeRef t) {
  LLVMBuilderRef b = LLVMCreateBuilderInContext(c->g->lc);
  LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(c->fn);
  LLVMValueRef first = LLVMGetFirstInstruction(entry);
  if (first)
    LLVMPositionBuilderBefore(b, first);
  else
    LLVMPositionBuilderAtEnd(b, entry);
  LLVMValueRef a = LLVMBuildAlloca(b, t, "");
  LLVMDisposeBuilder(b);
  return a;
}

// Marks the latch branch br of a loop that stays scalar (LStmt.vector == 1): its loop
// ID (a node whose first operand is itself) says llvm.loop.vectorize.width 1
// and llvm.loop.interleave.count 1, which loop-vectorize reads as "leave it" (ir/
// attn_tile.c's transposing copies, which it would make gathers and scatters).
static void scalar_loop_mark(LlvmModuleGen *g, LLVMValueRef br) {
  LLVMContextRef lc = g->lc;
  LLVMMetadataRef one = LLVMValueAsMetadata(LLVMConstInt(LLVMInt32TypeInContext(lc), 1, false));
  static const char *const keys[] = {"llvm.loop.vectorize.width", "llvm.loop.interleave.count"};
  LLVMMetadataRef ops[3];
  ops[0] = LLVMTemporaryMDNode(lc, NULL, 0);
  for (int i = 0; i < 2; i++) {
    LLVMMetadataRef kv[2] = {LLVMMDStringInContext2(lc, keys[i], strlen(keys[i])), one};
    ops[i + 1] = LLVMMDNodeInContext2(lc, kv, 2);
  }
  LLVMMetadataRef id = LLVMMDNodeInContext2(lc, ops, 3);
  LLVMMetadataReplaceAllUsesWith(ops[0], id);
  unsigned kind = LLVMGetMDKindIDInContext(lc, "llvm.loop", 9);
  LLVMSetMetadata(br, kind, LLVMMetadataAsValue(lc, id));
}

// for (var = lo; var < hi; var++) body, rotated (the test at the bottom); with
// maybe_empty the preheader tests lo < hi first. iter: also bind c->iter to it.
// scalar: the loop stays scalar (scalar_loop_mark).
static void counted_loop(LlvmKernelGen *c, int var, LLVMValueRef lo, LLVMValueRef hi, bool maybe_empty, bool iter,
                         const LStmtList *body, bool scalar) {
  LlvmModuleGen *g = c->g;
  LLVMBuilderRef b = g->b;
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(b);
  LLVMBasicBlockRef head = new_block(c, "loop"), exit = new_block(c, "endloop");
  if (maybe_empty)
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, lo, hi, ""), head, exit);
  else
    LLVMBuildBr(b, head);
  LLVMPositionBuilderAtEnd(b, head);
  LLVMValueRef phi = LLVMBuildPhi(b, g->i64, "");
  TD_ASSERT(var >= 0 && var < c->k->nvars);
  LLVMValueRef saved = c->vars[var], saved_iter = c->iter;
  c->vars[var] = phi;
  c->depth[var] = c->level++;
  if (iter)
    c->iter = phi;
  llvm_stmts(c, body);
  c->level--;
  LLVMValueRef next = LLVMBuildNSWAdd(b, phi, ci(g->i64, 1), "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
  LLVMValueRef br = LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, next, hi, ""), head, exit);
  if (scalar)
    scalar_loop_mark(g, br);
  LLVMValueRef in[2] = {lo, next};
  LLVMBasicBlockRef from[2] = {pre, latch};
  LLVMAddIncoming(phi, in, from, 2);
  LLVMMoveBasicBlockAfter(exit, latch);
  LLVMPositionBuilderAtEnd(b, exit);
  c->vars[var] = saved;
  c->iter = saved_iter;
}

void llvm_scan_locals_expr(const LExpr *e, bool *read) {
  if (!e)
    return;
  if (e->kind == LX_LOCAL)
    read[e->local] = true;
  if (e->kind == LX_LOAD)
    llvm_scan_locals_expr(e->idx.dyn, read);
  llvm_scan_locals_expr(e->a, read);
  llvm_scan_locals_expr(e->b, read);
  llvm_scan_locals_expr(e->c, read);
}

void llvm_scan_locals(const LStmtList *l, bool *read, bool *let) {
  for (int i = 0; i < l->len; i++) {
    const LStmt *s = l->data[i];
    llvm_scan_locals_expr(s->val, read);
    llvm_scan_locals_expr(s->cond, read);
    if (s->kind == LS_STORE)
      llvm_scan_locals_expr(s->idx.dyn, read);
    for (int a = 0; s->kind == LS_CALL && a < s->call->nval; a++)
      llvm_scan_locals_expr(s->call->val[a], read);
    if (s->kind == LS_LET)
      let[s->local] = true;
    llvm_scan_locals(&s->body, read, let);
  }
}

// Marks the pointer parameters [first, first + nargs) of fn noalias nocapture, and
// readonly where the kernel never writes through them.
void llvm_pointer_attrs(LlvmKernelGen *c, LLVMValueRef fn, int first) {
  for (int i = 0; i < c->k->args.len; i++) {
    LLVMAttributeIndex at = (LLVMAttributeIndex)(first + i + 1);
    llvm_add_attr(c->g, fn, at, "noalias");
    llvm_add_attr(c->g, fn, at, "nocapture");
    if (!c->k->args.data[i].written)
      llvm_add_attr(c->g, fn, at, "readonly");
  }
}

// The outermost parallel loop of a kernel: its body becomes an internal function
// over [begin, end) that tdsl_parallel_for runs, its captured state in a ctx struct.
static void parallel_loop(LlvmKernelGen *c, const LStmt *s) {
  LlvmModuleGen *g = c->g;
  LLVMBuilderRef b = g->b;
  const LKernel *k = c->k;
  int nargs = k->args.len, nl = k->locals.len, nv = k->nvars;
  bool *read = arena_alloc(&g->cx->arena, (size_t)nl + 1), *let = arena_alloc(&g->cx->arena, (size_t)nl + 1);
  llvm_scan_locals(&s->body, read, let);
  // ctx: the arg pointers, the error record, the bound loop variables, the locals read
  int nf = 0, *cvar = arena_alloc(&g->cx->arena, sizeof(int) * (size_t)(nv + 1)), ncv = 0;
  int *cloc = arena_alloc(&g->cx->arena, sizeof(int) * (size_t)(nl + 1)), ncl = 0;
  for (int v = 0; v < nv; v++)
    if (c->vars[v])
      cvar[ncv++] = v;
  for (int l = 0; l < nl; l++)
    if (read[l] && !let[l])
      cloc[ncl++] = l;
  int nfields = nargs + (c->has_err ? 1 : 0) + ncv + ncl;
  LLVMTypeRef *ft = arena_alloc(&g->cx->arena, sizeof *ft * (size_t)(nfields + 2));
  LLVMValueRef *fv = arena_alloc(&g->cx->arena, sizeof *fv * (size_t)(nfields + 2));
  for (int i = 0; i < nargs; i++)
    ft[nf] = arg_ptr_type(c, i), fv[nf++] = c->args[i];
  if (c->has_err)
    ft[nf] = g->errp, fv[nf++] = c->errp;
  for (int i = 0; i < ncv; i++)
    ft[nf] = g->i64, fv[nf++] = c->vars[cvar[i]];
  for (int i = 0; i < ncl; i++) {
    ft[nf] = local_type(c, cloc[i]);
    fv[nf] = LLVMBuildLoad2(b, ft[nf], c->locals[cloc[i]], "");
    nf++;
  }
  LLVMTypeRef ctxty = LLVMStructTypeInContext(g->lc, ft, (unsigned)nf, 0);
  if (c->has_err) {
    LLVMTypeRef pt[] = {g->errp};
    llvm_call(g, "tdsl_kernel_error_seal", g->vd, pt, 1, &c->errp);
  }
  LLVMValueRef ctx = entry_alloca(c, ctxty);
  for (int i = 0; i < nf; i++)
    LLVMBuildStore(b, fv[i], LLVMBuildStructGEP2(b, ctxty, ctx, (unsigned)i, ""));

  // the body proper: internal, called by the range function (default<On> inlines it)
  const char *name = arena_printf(&g->cx->arena, "%s_p%d", c->kname, c->npar++);
  ft[nf] = g->i64, ft[nf + 1] = g->i64;  // begin, end
  LLVMValueRef inner = LLVMAddFunction(g->m, arena_printf(&g->cx->arena, "%s_body", name),
                                       LLVMFunctionType(g->vd, ft, (unsigned)nf + 2, 0));
  set_internal(inner);
  llvm_add_attr(g, inner, LLVMAttributeFunctionIndex, "nounwind");
  llvm_no_ldexp(g, c->k, inner);
  LLVMBasicBlockRef saved = LLVMGetInsertBlock(b);
  LlvmKernelGen sub = *c;
  sub.fn = inner;
  llvm_pointer_attrs(&sub, inner, 0);
  sub.args = arena_alloc(&g->cx->arena, sizeof(LLVMValueRef) * (size_t)(nargs + 1));
  sub.vars = arena_alloc(&g->cx->arena, sizeof(LLVMValueRef) * (size_t)(nv + 1));
  sub.locals = arena_alloc(&g->cx->arena, sizeof(LLVMValueRef) * (size_t)(nl + 1));
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(g->lc, inner, "entry"));
  int pi = 0;
  for (int i = 0; i < nargs; i++)
    sub.args[i] = LLVMGetParam(inner, (unsigned)pi++);
  assume_stream_aligned(&sub);
  if (c->has_err)
    sub.errp = LLVMGetParam(inner, (unsigned)pi++);
  for (int i = 0; i < ncv; i++)
    sub.vars[cvar[i]] = LLVMGetParam(inner, (unsigned)pi++);
  for (int l = 0; l < nl; l++)
    sub.locals[l] = LLVMBuildAlloca(b, local_type(&sub, l), "");
  for (int i = 0; i < ncl; i++)
    LLVMBuildStore(b, LLVMGetParam(inner, (unsigned)pi++), sub.locals[cloc[i]]);
  LLVMValueRef begin = LLVMGetParam(inner, (unsigned)pi), end = LLVMGetParam(inner, (unsigned)pi + 1);
  counted_loop(&sub, s->var, begin, end, true, true, &s->body, false);
  fence_streams(&sub);
  LLVMBuildRetVoid(b);
  c->npar = sub.npar;

  // void NAME(void *ctx, i64 begin, i64 end): unpacks ctx and runs the body
  LLVMValueRef range = LLVMAddFunction(g->m, name, g->range_fn);
  set_internal(range);
  llvm_add_attr(g, range, LLVMAttributeFunctionIndex, "nounwind");
  llvm_no_ldexp(g, c->k, range);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(g->lc, range, "entry"));
  LLVMValueRef cp = LLVMBuildBitCast(b, LLVMGetParam(range, 0), LLVMPointerType(ctxty, 0), "");
  for (int i = 0; i < nf; i++)  // (a scratch arg: this thread's region, once per chunk)
    fv[i] = i < nargs && scratch_arg(c, i) ? scratch_ptr(c, i)
                                           : LLVMBuildLoad2(b, ft[i], LLVMBuildStructGEP2(b, ctxty, cp, (unsigned)i, ""), "");
  fv[nf] = LLVMGetParam(range, 1), fv[nf + 1] = LLVMGetParam(range, 2);
  LLVMBuildCall2(b, LLVMFunctionType(g->vd, ft, (unsigned)nf + 2, 0), inner, fv, (unsigned)nf + 2, "");
  LLVMBuildRetVoid(b);

  // tdsl_parallel_for(extent, 1, NAME, &ctx)
  LLVMPositionBuilderAtEnd(b, saved);
  LLVMTypeRef pt[] = {g->i64, g->i64, LLVMPointerType(g->range_fn, 0), g->i8p};
  LLVMValueRef args[] = {ci(g->i64, s->extent), ci(g->i64, 1), range, LLVMBuildBitCast(b, ctx, g->i8p, "")};
  llvm_call(g, "tdsl_parallel_for", g->vd, pt, 4, args);
}

void llvm_stmt(LlvmKernelGen *c, const LStmt *s) {
  LlvmModuleGen *g = c->g;
  LLVMBuilderRef b = g->b;
  switch (s->kind) {
  case LS_LOOP:
    if (s->extent <= 0)
      return;
    if (s->n)  // a function's loop of n iterations (n may be 0)
      counted_loop(c, s->var, ci(g->i64, 0), llvm_expr(c, s->n), true, false, &s->body, s->vector == 1);
    else if (s->parallel && !c->iter && !g->gpu)  // on the GPU llvm_gpu.c decides the mapping
      parallel_loop(c, s);
    else
      counted_loop(c, s->var, ci(g->i64, 0), ci(g->i64, s->extent), false, false, &s->body, s->vector == 1);
    return;
  case LS_CALL: {  // a function of p->funcs (llvm_build_func built it first)
    const LCall *call = s->call;
    const LProgram *fp = c->p->funcs.data[call->fn];
    LLVMValueRef fn = LLVMGetNamedFunction(g->m, emit_kernel_name(g->cx, fp, 0));
    TD_ASSERT(fn);
    int n = call->nptr + call->nval;
    LLVMValueRef *av = arena_alloc(&g->cx->arena, sizeof *av * (size_t)(n + 1));
    for (int i = 0; i < call->nptr; i++)
      av[i] = llvm_elem_ptr(c, call->ptr[i], &call->at[i]);
    for (int i = 0; i < call->nval; i++)
      av[call->nptr + i] = llvm_expr(c, call->val[i]);
    LLVMBuildCall2(b, LLVMGlobalGetValueType(fn), fn, av, (unsigned)n, "");
    return;
  }
  case LS_STORE: {
    TD_ASSERT(c->k->args.data[s->buf].written);
    LLVMValueRef st;
    if (s->val->lanes > 1) {  // buf[idx + 0..lanes): the buffer has the value's dtype, or its bits
      TD_ASSERT(lx_bits_dtype(arg_dtype(c, s->buf)) == s->val->dt);
      unsigned align;
      LLVMValueRef p = llvm_vec_ptr(c, s->buf, &s->idx, s->val->lanes, &align);
      st = LLVMBuildStore(b, llvm_expr(c, s->val), p);
      LLVMSetAlignment(st, align);
    } else {
      LLVMValueRef p = llvm_elem_ptr(c, s->buf, &s->idx);
      st = LLVMBuildStore(b, llvm_store_value(c, s->val->dt, arg_dtype(c, s->buf), s->val), p);
    }
    // (an explicit vector narrower than a line would leave lines half written in the
    // write-combining buffers: ir/ew.c's blocks of 2- and 1-byte elements)
    bool narrow = s->val->lanes > 1 && s->val->lanes * dtype_size(s->val->dt) < 64;
    if (c->k->args.data[s->buf].stream && !g->gpu && !narrow)
      LLVMSetMetadata(st, LLVMGetMDKindIDInContext(g->lc, "tbaa", 4), stream_tag(g->lc));
    return;
  }
  case LS_LET:
  case LS_SET: {
    TD_ASSERT(s->local >= 0 && s->local < c->k->locals.len);
    DType lt = c->k->locals.data[s->local];
    LLVMBuildStore(b, llvm_cast(g, llvm_expr(c, s->val), s->val->dt, lt), c->locals[s->local]);
    return;
  }
  case LS_IF: build_if(c, s, llvm_expr(c, s->cond), llvm_stmts); return;
  case LS_PREFETCH: {  // llvm.prefetch(p, read, keep in every level, data)
    LLVMValueRef p = llvm_elem_ptr(c, s->buf, &s->idx);
    LLVMTypeRef pt = LLVMTypeOf(p);
    unsigned id = LLVMLookupIntrinsicID("llvm.prefetch", 13);
    LLVMValueRef av[] = {p, ci(g->i32, 0), ci(g->i32, 3), ci(g->i32, 1)};
    LLVMBuildCall2(b, LLVMIntrinsicGetType(g->lc, id, &pt, 1), LLVMGetIntrinsicDeclaration(g->m, id, &pt, 1), av, 4,
                   "");
    return;
  }
  case LS_VAR:   // the GPU form's (llvm_gpu.c builds its kernels)
  case LS_SYNC:
  case LS_COUNT: break;
  }
  td_unreachable();
}

void llvm_stmts(LlvmKernelGen *c, const LStmtList *l) {
  for (int i = 0; i < l->len; i++)
    llvm_stmt(c, l->data[i]);
}

static bool stmts_raise(const LStmtList *l) {
  for (int i = 0; i < l->len; i++) {
    const LStmt *s = l->data[i];
    if (lx_raises(s->val) || lx_raises(s->cond) || (s->kind == LS_STORE && lx_raises(s->idx.dyn)) ||
        stmts_raise(&s->body))
      return true;
  }
  return false;
}

// ============================================================================
// The CPU kernel
// ============================================================================
void llvm_kernel_begin(LlvmKernelGen *c, LlvmModuleGen *g, const LProgram *p, int ki) {
  const LKernel *k = p->kernels.data[ki];
  *c = (LlvmKernelGen){.g = g, .p = p, .k = k};
  c->kname = emit_kernel_name(g->cx, p, ki);
  c->has_err = stmts_raise(&k->body);
}

void llvm_kernel_locals(LlvmKernelGen *c) {
  Arena *ar = &c->g->cx->arena;
  const LKernel *k = c->k;
  c->vars = arena_alloc(ar, sizeof(LLVMValueRef) * (size_t)(k->nvars + 1));
  c->depth = arena_alloc(ar, sizeof(int) * (size_t)(k->nvars + 1));
  c->locals = arena_alloc(ar, sizeof(LLVMValueRef) * (size_t)(k->locals.len + 1));
  c->lanes = arena_alloc(ar, sizeof(int) * (size_t)(k->locals.len + 1));
  loop_local_lanes(k, c->lanes);
  for (int l = 0; l < k->locals.len; l++)
    c->locals[l] = LLVMBuildAlloca(c->g->b, local_type(c, l), "");
}

// static int NAME(noalias pointers): the loops of k (kernel ki of p, or its plain-store
// copy), then the first error.
static LLVMValueRef build_kernel_form(LlvmModuleGen *g, const LProgram *p, int ki, const LKernel *k, const char *name) {
  LlvmKernelGen c;
  llvm_kernel_begin(&c, g, p, ki);
  c.k = k;
  c.kname = name;
  int nargs = k->args.len, np = 0;
  LLVMTypeRef *pt = arena_alloc(&g->cx->arena, sizeof *pt * (size_t)(nargs + 1));
  for (int i = 0; i < nargs; i++)
    if (!scratch_arg(&c, i))  // (a scratch arg is no parameter: the kernel asks for it)
      pt[np++] = arg_ptr_type(&c, i);
  c.fn = LLVMAddFunction(g->m, c.kname, LLVMFunctionType(g->i32, pt, (unsigned)np, 0));
  set_internal(c.fn);
  llvm_add_attr(g, c.fn, LLVMAttributeFunctionIndex, "nounwind");
  llvm_no_ldexp(g, k, c.fn);
  for (int i = 0, j = 0; i < nargs; i++) {
    if (scratch_arg(&c, i))
      continue;
    LLVMAttributeIndex at = (LLVMAttributeIndex)(++j);
    llvm_add_attr(g, c.fn, at, "noalias");
    llvm_add_attr(g, c.fn, at, "nocapture");
    if (!k->args.data[i].written)
      llvm_add_attr(g, c.fn, at, "readonly");
  }
  LLVMBuilderRef b = g->b;
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(g->lc, c.fn, "entry"));
  c.args = arena_alloc(&g->cx->arena, sizeof(LLVMValueRef) * (size_t)(nargs + 1));
  for (int i = 0, j = 0; i < nargs; i++)
    c.args[i] = scratch_arg(&c, i) ? scratch_ptr(&c, i) : LLVMGetParam(c.fn, (unsigned)j++);
  assume_stream_aligned(&c);
  llvm_kernel_locals(&c);
  if (c.has_err) {  // {-1, 0, 0, INT64_MAX}
    c.errp = LLVMBuildAlloca(b, g->err, "err");
    LLVMValueRef init[] = {ci(g->i32, -1), ci(g->i32, 0), ci(g->i64, 0), ci(g->i64, INT64_MAX)};
    LLVMBuildStore(b, LLVMConstNamedStruct(g->err, init, 4), c.errp);
  }
  llvm_stmts(&c, &k->body);
  fence_streams(&c);
  if (!c.has_err) {
    LLVMBuildRet(b, ci(g->i32, 0));
    return c.fn;
  }
  // return err.k < 0 ? 0 : tdsl_entry_kernel_error(errors[err.k], err.value)
  int ne = k->errors.len;
  LLVMValueRef *msgs = arena_alloc(&g->cx->arena, sizeof *msgs * (size_t)(ne + 1));
  for (int i = 0; i < ne; i++)
    msgs[i] = llvm_cstring(g, k->errors.data[i]);
  LLVMValueRef table = llvm_private_const(g, arena_printf(&g->cx->arena, "%s_errors", c.kname),
                                          LLVMConstArray(g->i8p, msgs, (unsigned)ne));
  LLVMValueRef ek = LLVMBuildLoad2(b, g->i32, LLVMBuildStructGEP2(b, g->err, c.errp, 0, ""), "");
  LLVMValueRef ev = LLVMBuildLoad2(b, g->i64, LLVMBuildStructGEP2(b, g->err, c.errp, 2, ""), "");
  LLVMBasicBlockRef ok = new_block(&c, "ok"), fail = new_block(&c, "fail");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, ek, ci(g->i32, 0), ""), ok, fail);
  LLVMPositionBuilderAtEnd(b, ok);
  LLVMBuildRet(b, ci(g->i32, 0));
  LLVMPositionBuilderAtEnd(b, fail);
  LLVMValueRef at[2] = {ci(g->i64, 0), LLVMBuildSExt(b, ek, g->i64, "")};
  LLVMValueRef slot = LLVMBuildInBoundsGEP2(b, LLVMArrayType(g->i8p, (unsigned)ne), table, at, 2, "");
  LLVMValueRef msg = LLVMBuildLoad2(b, g->i8p, slot, "");
  LLVMTypeRef kt[] = {g->i8p, g->i64};
  LLVMValueRef kargs[] = {msg, ev};
  LLVMBuildRet(b, llvm_call(g, "tdsl_entry_kernel_error", g->i32, kt, 2, kargs));
  return c.fn;
}

// static int tdsl_g_<fn>_<k>(pointers). A kernel with a result that may stream
// (LArg.stream) is built twice, as <name>_nt (non-temporal stores) and <name>_plain (the
// copy with every stream mark cleared: plain stores, the same values), and <name> runs
// the form the runtime picks for this call (runtime/stream.c), as c.c's emit_kernel:
//   t = tdsl_stream_begin(&site); r = t & 1 ? nt(...) : plain(...);
//   tdsl_stream_end(&site, t); return r;
// with the site a zeroed internal global of 16 i64 (tdsl_stream_site).
LLVMValueRef llvm_build_kernel(LlvmModuleGen *g, const LProgram *p, int ki) {
  const LKernel *k = p->kernels.data[ki], *plain = emit_plain_stores(g->cx, k);
  const char *name = emit_kernel_name(g->cx, p, ki);
  if (!plain)
    return build_kernel_form(g, p, ki, k, name);
  Arena *ar = &g->cx->arena;
  LLVMValueRef forms[2] = {build_kernel_form(g, p, ki, plain, arena_printf(ar, "%s_plain", name)),
                           build_kernel_form(g, p, ki, k, arena_printf(ar, "%s_nt", name))};
  LLVMTypeRef ft = LLVMGlobalGetValueType(forms[1]);
  LLVMValueRef fn = LLVMAddFunction(g->m, name, ft);
  set_internal(fn);
  llvm_add_attr(g, fn, LLVMAttributeFunctionIndex, "nounwind");
  LLVMTypeRef st = LLVMArrayType(g->i64, 16);
  LLVMValueRef site = LLVMAddGlobal(g->m, st, arena_printf(ar, "%s_site", name));
  LLVMSetInitializer(site, LLVMConstNull(st));
  LLVMSetLinkage(site, LLVMInternalLinkage);
  LLVMSetAlignment(site, 8);
  unsigned np = LLVMCountParams(fn);
  LLVMValueRef *args = arena_alloc(ar, sizeof *args * (np + 1));
  for (unsigned i = 0; i < np; i++)
    args[i] = LLVMGetParam(fn, i);
  LLVMBuilderRef b = g->b;
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(g->lc, fn, "entry"));
  LLVMValueRef sp = LLVMConstBitCast(site, g->i8p);
  LLVMTypeRef bt[] = {g->i8p}, et[] = {g->i8p, g->i64};
  LLVMValueRef t = llvm_call(g, "tdsl_stream_begin", g->i64, bt, 1, &sp);
  LLVMValueRef nt = LLVMBuildTrunc(b, t, g->i1, "");
  LLVMBasicBlockRef bb[2] = {LLVMAppendBasicBlockInContext(g->lc, fn, "plain"),
                             LLVMAppendBasicBlockInContext(g->lc, fn, "nt")},
                    done = LLVMAppendBasicBlockInContext(g->lc, fn, "done");
  LLVMBuildCondBr(b, nt, bb[1], bb[0]);
  LLVMValueRef r[2];
  for (int i = 0; i < 2; i++) {
    LLVMPositionBuilderAtEnd(b, bb[i]);
    r[i] = LLVMBuildCall2(b, ft, forms[i], args, np, "");
    LLVMBuildBr(b, done);
  }
  LLVMPositionBuilderAtEnd(b, done);
  LLVMValueRef rc = LLVMBuildPhi(b, g->i32, "");
  LLVMAddIncoming(rc, r, bb, 2);
  LLVMValueRef eargs[] = {sp, t};
  llvm_call(g, "tdsl_stream_end", g->vd, et, 2, eargs);
  LLVMBuildRet(b, rc);
  return fn;
}

// A function of LProgram.funcs (ir/loop.h's Functions): void tdsl_g_<fn>_f<N>(noalias
// pointers, i64 scalars), internal and never inlined, so that one copy serves every call.
LLVMValueRef llvm_build_func(LlvmModuleGen *g, const LProgram *fp) {
  const LKernel *k = fp->kernels.data[0];
  LlvmKernelGen c;
  llvm_kernel_begin(&c, g, fp, 0);
  TD_ASSERT(!c.has_err);
  int nargs = k->args.len, n = nargs + k->nscalars;
  LLVMTypeRef *pt = arena_alloc(&g->cx->arena, sizeof *pt * (size_t)(n + 1));
  for (int i = 0; i < n; i++)
    pt[i] = i < nargs ? arg_ptr_type(&c, i) : g->i64;
  c.fn = LLVMAddFunction(g->m, c.kname, LLVMFunctionType(g->vd, pt, (unsigned)n, 0));
  set_internal(c.fn);
  llvm_add_attr(g, c.fn, LLVMAttributeFunctionIndex, "nounwind");
  llvm_add_attr(g, c.fn, LLVMAttributeFunctionIndex, "noinline");
  llvm_no_ldexp(g, k, c.fn);
  llvm_pointer_attrs(&c, c.fn, 0);
  LLVMBuilderRef b = g->b;
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(g->lc, c.fn, "entry"));
  c.args = arena_alloc(&g->cx->arena, sizeof(LLVMValueRef) * (size_t)(nargs + 1));
  c.scalars = arena_alloc(&g->cx->arena, sizeof(LLVMValueRef) * (size_t)(k->nscalars + 1));
  for (int i = 0; i < n; i++)
    if (i < nargs)
      c.args[i] = LLVMGetParam(c.fn, (unsigned)i);
    else
      c.scalars[i - nargs] = LLVMGetParam(c.fn, (unsigned)i);
  llvm_kernel_locals(&c);
  llvm_stmts(&c, &k->body);
  LLVMBuildRetVoid(b);
  return c.fn;
}
