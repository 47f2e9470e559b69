// codegen/llvm_gpu.c: the GPU mode of the LLVM backend (llvm_build_gpu_module, for
// codegen/ptx.c). It builds the GPU form of loop IR (ir/loop.h; each kernel as
// ir/sched_gpu.c rewrote it) as NVPTX kernels `void tdsl_g_<fn>_<k>(tdsl_gpu_error
// *err, T0 *b0, ...)` listed in !nvvm.annotations (with their block size as maxntid):
// the scalar expressions and casts of llvm_expr.c (math from libdevice, errors in the
// device error record, llvm_gpu_raise), and here the statements, with what only the GPU
// form holds: the thread's vars from the special registers, loops with a start and a
// step, LS_VAR, LS_SYNC (llvm.nvvm.barrier0, llvm.nvvm.bar.warp.sync), warp shuffles
// (llvm.nvvm.shfl.sync.*), LX_IDIV (udiv, urem), LB_SHARED arrays (addrspace(3)
// globals, used through generic pointers that InferAddressSpaces makes shared again)
// and vector loads and stores, aligned to their width (one ld/st.v2 or .v4).
//
// Invariants: the statements are codegen/cuda.c's, one for one (the same schedule in
// both backends); kernels with the same code (LKernel.same) are built once, a later one
// launching the first's function with its own buffers.
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
// Intrinsics
// ============================================================================
// A call of the (non-overloaded) intrinsic `name`.
static LLVMValueRef intrinsic(LlvmModuleGen *g, const char *name, LLVMValueRef *args, unsigned n) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  TD_ASSERT(id != 0);
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(g->m, id, NULL, 0);
  return LLVMBuildCall2(g->b, LLVMIntrinsicGetType(g->lc, id, NULL, 0), f, args, n, "");
}

// llvm.nvvm.read.ptx.sreg.NAME as an i64.
static LLVMValueRef sreg(LlvmModuleGen *g, const char *name) {
  const char *full = arena_printf(&g->cx->arena, "llvm.nvvm.read.ptx.sreg.%s", name);
  return LLVMBuildZExt(g->b, intrinsic(g, full, NULL, 0), g->i64, "");
}

// ============================================================================
// The GPU form's expressions
// ============================================================================
// A shuffle of a 32-bit value (i32 or f32).
static LLVMValueRef shfl32(LlvmModuleGen *g, int mode, LLVMValueRef v, LLVMValueRef lane) {
  bool fl = LLVMTypeOf(v) == g->f32;
  const char *m = mode == LG_SHFL_DOWN ? "down" : mode == LG_SHFL_XOR ? "bfly" : "idx";
  const char *name = arena_printf(&g->cx->arena, "llvm.nvvm.shfl.sync.%s.%s", m, fl ? "f32" : "i32");
  LLVMValueRef args[4] = {ci(g->i32, -1), v, lane, ci(g->i32, 0x1f)};  // every lane; lanes up to 31
  return intrinsic(g, name, args, 4);
}

static LLVMValueRef shfl(LlvmKernelGen *c, const LExpr *e) {
  LlvmModuleGen *g = c->g;
  LLVMBuilderRef b = g->b;
  LLVMValueRef v = llvm_expr(c, e->a);
  LLVMValueRef lane = LLVMBuildTrunc(b, llvm_cast(g, llvm_expr(c, e->b), e->b->dt, DT_I64), g->i32, "");
  if (e->dt == DT_I32 || e->dt == DT_F32)
    return shfl32(g, (int)e->i, v, lane);
  // 8 bytes: the two halves
  LLVMValueRef x = e->dt == DT_F64 ? LLVMBuildBitCast(b, v, g->i64, "") : v;
  LLVMValueRef lo = shfl32(g, (int)e->i, LLVMBuildTrunc(b, x, g->i32, ""), lane);
  LLVMValueRef hi = shfl32(g, (int)e->i, LLVMBuildTrunc(b, LLVMBuildLShr(b, x, ci(g->i64, 32), ""), g->i32, ""), lane);
  LLVMValueRef r = LLVMBuildOr(b, LLVMBuildZExt(b, lo, g->i64, ""),
                               LLVMBuildShl(b, LLVMBuildZExt(b, hi, g->i64, ""), ci(g->i64, 32), ""), "");
  return e->dt == DT_F64 ? LLVMBuildBitCast(b, r, g->f64, "") : r;
}

// &arg[ix] as a pointer to `lanes` storage elements, and its alignment: the vector's
// whole width (sched_gpu proves it).
static LLVMValueRef vec_ptr(LlvmKernelGen *c, int arg, const LIndex *ix, int lanes, unsigned *align) {
  LlvmModuleGen *g = c->g;
  DType bt = arg_dtype(c, arg);
  *align = (unsigned)(dtype_size(bt) * (size_t)lanes);
  return LLVMBuildBitCast(g->b, llvm_elem_ptr(c, arg, ix), LLVMPointerType(LLVMVectorType(stype(g, bt), (unsigned)lanes), 0),
                          "");
}

// A vector of n lanes of i32 v.
static LLVMValueRef i32s(LlvmModuleGen *g, int v, unsigned n) {
  LLVMValueRef lanes[16];
  TD_ASSERT(n <= 16);
  for (unsigned i = 0; i < n; i++)
    lanes[i] = ci(g->i32, v);
  return LLVMConstVector(lanes, n);
}

// A vector load: the storage lanes, then each as a value (halves by the GPU's own
// conversion: exact, as c.c's bit arithmetic).
static LLVMValueRef vec_load(LlvmKernelGen *c, const LExpr *e) {
  LlvmModuleGen *g = c->g;
  LLVMBuilderRef b = g->b;
  DType bt = arg_dtype(c, e->buf);
  unsigned n = (unsigned)e->lanes, align;
  LLVMValueRef p = vec_ptr(c, e->buf, &e->idx, e->lanes, &align);
  LLVMValueRef v = LLVMBuildLoad2(b, LLVMVectorType(stype(g, bt), n), p, "");
  LLVMSetAlignment(v, align);
  switch (bt) {
  case DT_F16: {  // lane by lane (LLVM 14's NVPTX cannot copy <N x half> registers)
    LLVMValueRef r = LLVMGetUndef(LLVMVectorType(g->f32, n));
    for (unsigned l = 0; l < n; l++) {
      LLVMValueRef h = LLVMBuildBitCast(b, LLVMBuildExtractElement(b, v, ci(g->i32, l), ""),
                                        LLVMHalfTypeInContext(g->lc), "");
      r = LLVMBuildInsertElement(b, r, LLVMBuildFPExt(b, h, g->f32, ""), ci(g->i32, l), "");
    }
    return r;
  }
  case DT_BF16:
    v = LLVMBuildShl(b, LLVMBuildZExt(b, v, LLVMVectorType(g->i32, n), ""),
                     i32s(g, 16, n), "");
    return LLVMBuildBitCast(b, v, LLVMVectorType(g->f32, n), "");
  case DT_BOOL: return LLVMBuildICmp(b, LLVMIntNE, v, LLVMConstNull(LLVMTypeOf(v)), "");
  default: return v;
  }
}

// ---- tensor cores ----
// The i32 of the halves at p and p + off (two i16 elements): the lower one first.
static LLVMValueRef pair(LlvmModuleGen *g, LLVMValueRef p, LLVMValueRef off) {
  LLVMBuilderRef b = g->b;
  LLVMValueRef lo = LLVMBuildLoad2(b, g->i16, p, ""), q = LLVMBuildInBoundsGEP2(b, g->i16, p, &off, 1, "");
  LLVMValueRef hi = LLVMBuildLoad2(b, g->i16, q, "");
  return LLVMBuildOr(b, LLVMBuildZExt(b, lo, g->i32, ""),
                     LLVMBuildShl(b, LLVMBuildZExt(b, hi, g->i32, ""), ci(g->i32, 16), ""), "");
}

// The i32 at p (two consecutive halves).
static LLVMValueRef word(LlvmModuleGen *g, LLVMValueRef p) {
  LLVMValueRef w = LLVMBuildLoad2(g->b, g->i32, LLVMBuildBitCast(g->b, p, LLVMPointerType(g->i32, 0), ""), "");
  LLVMSetAlignment(w, 4);
  return w;
}

// The lane's registers of mma operand f (LX_FRAG, ir/loop.h): 4 (A) or 2 (B) i32.
static int frag(LlvmKernelGen *c, const LExpr *f, LLVMValueRef *r) {
  LlvmModuleGen *g = c->g;
  LLVMBuilderRef b = g->b;
  LLVMValueRef lane = LLVMBuildAnd(b, sreg(g, "tid.x"), ci(g->i64, 31), "");
  LLVMValueRef gr = LLVMBuildLShr(b, lane, ci(g->i64, 2), ""), q = LLVMBuildShl(b, LLVMBuildAnd(b, lane, ci(g->i64, 3), ""), ci(g->i64, 1), "");
  LLVMValueRef base = llvm_elem_ptr(c, f->buf, &f->idx), ld = ci(g->i64, f->b->i);
  // &base[x * ld + y]
#define AT(x, y) LLVMBuildInBoundsGEP2(b, g->i16, base, (LLVMValueRef[]){LLVMBuildAdd(b, LLVMBuildMul(b, x, ld, ""), y, "")}, 1, "")
  LLVMValueRef g8 = LLVMBuildAdd(b, gr, ci(g->i64, 8), ""), q8 = LLVMBuildAdd(b, q, ci(g->i64, 8), "");
  switch (f->i) {
  case LG_FRAG_A_MK:
    r[0] = word(g, AT(gr, q)), r[1] = word(g, AT(g8, q)), r[2] = word(g, AT(gr, q8)), r[3] = word(g, AT(g8, q8));
    return 4;
  case LG_FRAG_A_KM:
    r[0] = pair(g, AT(q, gr), ld), r[1] = pair(g, AT(q, g8), ld), r[2] = pair(g, AT(q8, gr), ld);
    r[3] = pair(g, AT(q8, g8), ld);
    return 4;
  case LG_FRAG_B_NK: r[0] = word(g, AT(gr, q)), r[1] = word(g, AT(gr, q8)); return 2;
  case LG_FRAG_B_KN: r[0] = pair(g, AT(q, gr), ld), r[1] = pair(g, AT(q8, gr), ld); return 2;
  default: td_unreachable();
  }
#undef AT
}

// a * b + c on the tensor cores: llvm.nvvm.mma.m16n8k16.row.col.f32.f32 (f16 operands,
// f32 sums and result) or .bf16 (bf16 operands, f32 sums), its
// operands passed as its declaration types them (halves in pairs, or i32).
static LLVMValueRef mma(LlvmKernelGen *c, const LExpr *e) {
  LlvmModuleGen *g = c->g;
  LLVMBuilderRef b = g->b;
  const char *name = e->a->dt == DT_BF16 ? "llvm.nvvm.mma.m16n8k16.row.col.bf16" : "llvm.nvvm.mma.m16n8k16.row.col.f32.f32";
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  TD_ASSERT(id != 0);
  LLVMTypeRef ft = LLVMIntrinsicGetType(g->lc, id, NULL, 0);
  TD_ASSERT(LLVMCountParamTypes(ft) == 10);
  LLVMTypeRef pt[10];
  LLVMGetParamTypes(ft, pt);
  LLVMValueRef args[10], acc = llvm_expr(c, e->c);
  frag(c, e->a, args);
  frag(c, e->b, args + 4);
  for (int i = 0; i < 6; i++)
    args[i] = LLVMBuildBitCast(b, args[i], pt[i], "");
  for (int i = 0; i < 4; i++)
    args[6 + i] = LLVMBuildExtractElement(b, acc, ci(g->i32, i), "");
  LLVMValueRef r = LLVMBuildCall2(b, ft, LLVMGetIntrinsicDeclaration(g->m, id, NULL, 0), args, 10, "");
  LLVMValueRef v = LLVMGetUndef(LLVMVectorType(g->f32, 4));
  for (unsigned i = 0; i < 4; i++)
    v = LLVMBuildInsertElement(b, v, LLVMBuildExtractValue(b, r, i, ""), ci(g->i32, i), "");
  return v;
}

LLVMValueRef llvm_gpu_expr(LlvmKernelGen *c, const LExpr *e) {
  LlvmModuleGen *g = c->g;
  TD_ASSERT(g->gpu);
  switch (e->kind) {
  case LX_SHFL: return shfl(c, e);
  case LX_IDIV: {  // a >= 0, b > 0
    LLVMValueRef a = llvm_expr(c, e->a), b = llvm_expr(c, e->b);
    return e->op == OP_FLOOR_DIVIDE ? LLVMBuildUDiv(g->b, a, b, "") : LLVMBuildURem(g->b, a, b, "");
  }
  case LX_INSERT:
    return LLVMBuildInsertElement(g->b, llvm_expr(c, e->a), llvm_expr(c, e->b), ci(g->i32, e->i), "");
  case LX_LOAD: return vec_load(c, e);
  case LX_MMA: return mma(c, e);
  default: td_unreachable();  // (LX_FRAG: an operand of LX_MMA alone)
  }
}

// A vector value stored: each lane as a storage element.
static void vec_store(LlvmKernelGen *c, const LStmt *s) {
  LlvmModuleGen *g = c->g;
  LLVMBuilderRef b = g->b;
  DType bt = arg_dtype(c, s->buf);
  TD_ASSERT(s->val->dt == bt);
  unsigned n = (unsigned)s->val->lanes, align;
  LLVMValueRef v = llvm_expr(c, s->val);
  switch (bt) {
  case DT_F16: {  // the lanes are f16 values: exact (lane by lane, as vec_load)
    LLVMValueRef r = LLVMGetUndef(LLVMVectorType(g->i16, n));
    for (unsigned l = 0; l < n; l++) {
      LLVMValueRef h = LLVMBuildFPTrunc(b, LLVMBuildExtractElement(b, v, ci(g->i32, l), ""),
                                        LLVMHalfTypeInContext(g->lc), "");
      r = LLVMBuildInsertElement(b, r, LLVMBuildBitCast(b, h, g->i16, ""), ci(g->i32, l), "");
    }
    v = r;
    break;
  }
  case DT_BF16:
    v = LLVMBuildLShr(b, LLVMBuildBitCast(b, v, LLVMVectorType(g->i32, n), ""),
                      i32s(g, 16, n), "");
    v = LLVMBuildTrunc(b, v, LLVMVectorType(g->i16, n), "");
    break;
  case DT_BOOL: v = LLVMBuildZExt(b, v, LLVMVectorType(g->i8, n), ""); break;
  default: break;
  }
  LLVMValueRef st = LLVMBuildStore(b, v, vec_ptr(c, s->buf, &s->idx, (int)n, &align));
  LLVMSetAlignment(st, align);
}

// ============================================================================
// Statements
// ============================================================================
static void stmts(LlvmKernelGen *c, const LStmtList *l);

// for (var = start; var < extent; var += step) body, rotated (the test at the bottom).
static void loop(LlvmKernelGen *c, const LStmt *s) {
  LlvmModuleGen *g = c->g;
  LLVMBuilderRef b = g->b;
  LLVMValueRef start = s->start ? llvm_expr(c, s->start) : ci(g->i64, 0);
  LLVMValueRef step = s->step ? llvm_expr(c, s->step) : ci(g->i64, 1);
  LLVMValueRef end = ci(g->i64, s->extent);
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(b), head = new_block(c, "loop"), exit = new_block(c, "endloop");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, start, end, ""), head, exit);
  LLVMPositionBuilderAtEnd(b, head);
  LLVMValueRef phi = LLVMBuildPhi(b, g->i64, "");
  LLVMValueRef saved = c->vars[s->var];
  c->vars[s->var] = phi;
  stmts(c, &s->body);
  LLVMValueRef next = LLVMBuildNSWAdd(b, phi, step, "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, next, end, ""), head, exit);
  LLVMValueRef in[2] = {start, next};
  LLVMBasicBlockRef from[2] = {pre, latch};
  LLVMAddIncoming(phi, in, from, 2);
  LLVMMoveBasicBlockAfter(exit, latch);
  LLVMPositionBuilderAtEnd(b, exit);
  c->vars[s->var] = saved;
}

static void stmt(LlvmKernelGen *c, const LStmt *s) {
  LlvmModuleGen *g = c->g;
  LLVMBuilderRef b = g->b;
  switch (s->kind) {
  case LS_LOOP:
    if (s->extent > 0)
      loop(c, s);
    return;
  case LS_STORE:
    TD_ASSERT(c->k->args.data[s->buf].written);
    if (s->val->kind == LX_LOAD && arg_dtype(c, s->val->buf) == arg_dtype(c, s->buf)) {  // a copy: the bits
      LLVMTypeRef st = stype(g, arg_dtype(c, s->buf));
      unsigned n = (unsigned)s->val->lanes, align = (unsigned)dtype_size(arg_dtype(c, s->buf));
      LLVMValueRef from = llvm_elem_ptr(c, s->val->buf, &s->val->idx), to = llvm_elem_ptr(c, s->buf, &s->idx);
      if (n > 1) {
        from = vec_ptr(c, s->val->buf, &s->val->idx, (int)n, &align);
        to = vec_ptr(c, s->buf, &s->idx, (int)n, &align);
        st = LLVMVectorType(st, n);
      }
      LLVMValueRef v = LLVMBuildLoad2(b, st, from, "");
      LLVMSetAlignment(v, align);
      LLVMSetAlignment(LLVMBuildStore(b, v, to), align);
      return;
    }
    if (s->val->lanes > 1)
      vec_store(c, s);
    else
      LLVMBuildStore(b, llvm_store_value(c, s->val->dt, arg_dtype(c, s->buf), s->val), llvm_elem_ptr(c, s->buf, &s->idx));
    return;
  case LS_LET:
  case LS_SET: {
    DType lt = c->k->locals.data[s->local];
    LLVMValueRef v = llvm_expr(c, s->val);
    if (s->val->lanes == 1)
      v = llvm_cast(g, v, s->val->dt, lt);
    LLVMBuildStore(b, v, c->locals[s->local]);
    return;
  }
  case LS_IF: build_if(c, s, llvm_expr(c, s->cond), stmts); return;
  case LS_VAR: c->vars[s->var] = llvm_cast(g, llvm_expr(c, s->val), s->val->dt, DT_I64); return;
  case LS_SYNC:
    if (s->extent) {
      LLVMValueRef all = ci(g->i32, -1);
      intrinsic(g, "llvm.nvvm.bar.warp.sync", &all, 1);
    } else {
      intrinsic(g, "llvm.nvvm.barrier0", NULL, 0);
    }
    return;
  case LS_CALL:  // (GPU programs call no functions and prefetch nothing: ir/loop.h)
  case LS_PREFETCH:
  case LS_COUNT: break;
  }
  td_unreachable();
}

// The vars an LS_VAR of l binds go out of scope at its end.
static void stmts(LlvmKernelGen *c, const LStmtList *l) {
  for (int i = 0; i < l->len; i++)
    stmt(c, l->data[i]);
  for (int i = 0; i < l->len; i++)
    if (l->data[i]->kind == LS_VAR)
      c->vars[l->data[i]->var] = NULL;
}

// ============================================================================
// Kernels
// ============================================================================
static bool is_shared(const LProgram *p, const LArg *a) { return p->bufs.data[a->buf].kind == LB_SHARED; }

static void annotate(LlvmModuleGen *g, LLVMValueRef fn, const char *key, int v) {
  LLVMMetadataRef md[3] = {LLVMValueAsMetadata(fn), LLVMMDStringInContext2(g->lc, key, strlen(key)),
                           LLVMValueAsMetadata(ci(g->i32, v))};
  LLVMAddNamedMetadataOperand(g->m, "nvvm.annotations", LLVMMetadataAsValue(g->lc, LLVMMDNodeInContext2(g->lc, md, 3)));
}

// void tdsl_g_<fn>_<k>(tdsl_gpu_error *err, T0 *b0, ...) of the kernel's arguments but
// its shared arrays, which are globals of the shared address space.
static void build_gpu_kernel(LlvmModuleGen *g, const LProgram *p, int ki) {
  const LKernel *k = p->kernels.data[ki];
  const LGpuSched *gs = k->gpu;  // sched_gpu's
  TD_ASSERT(gs);
  Arena *ar = &g->cx->arena;
  LlvmKernelGen c;
  llvm_kernel_begin(&c, g, p, ki);
  int nargs = k->args.len, np = 1;
  LLVMTypeRef *pt = arena_alloc(ar, sizeof *pt * (size_t)(nargs + 1));
  pt[0] = g->gerrp;
  for (int i = 0; i < nargs; i++)
    if (!is_shared(p, &k->args.data[i]))
      pt[np++] = arg_ptr_type(&c, i);
  c.fn = LLVMAddFunction(g->m, c.kname, LLVMFunctionType(g->vd, pt, (unsigned)np, 0));
  llvm_add_attr(g, c.fn, LLVMAttributeFunctionIndex, "nounwind");
  LLVMBuilderRef b = g->b;
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(g->lc, c.fn, "entry"));
  c.errp = LLVMGetParam(c.fn, 0);
  c.args = arena_alloc(ar, sizeof(LLVMValueRef) * (size_t)(nargs + 1));
  for (int i = 0, pi = 1; i < nargs; i++) {
    const LArg *a = &k->args.data[i];
    const LBuf *lb = &p->bufs.data[a->buf];
    if (!is_shared(p, a)) {
      LLVMAttributeIndex at = (LLVMAttributeIndex)(pi + 1);
      llvm_add_attr(g, c.fn, at, "noalias");
      llvm_add_attr(g, c.fn, at, "nocapture");
      if (!a->written)
        llvm_add_attr(g, c.fn, at, "readonly");
      c.args[i] = LLVMGetParam(c.fn, (unsigned)pi++);
      continue;
    }
    LLVMTypeRef et = stype(g, lb->dtype), at = LLVMArrayType(et, (unsigned)(lb->numel > 0 ? lb->numel : 1));
    LLVMValueRef gv = LLVMAddGlobalInAddressSpace(g->m, at, arena_printf(ar, "%s_s%d", c.kname, i), 3);
    LLVMSetLinkage(gv, LLVMInternalLinkage);
    LLVMSetInitializer(gv, LLVMGetUndef(at));
    LLVMSetAlignment(gv, 16);
    c.args[i] = LLVMConstAddrSpaceCast(LLVMConstBitCast(gv, LLVMPointerType(et, 3)), LLVMPointerType(et, 0));
  }
  llvm_kernel_locals(&c);
  // the thread's vars
  LLVMValueRef tid = sreg(g, "tid.x");
  if (gs->tid >= 0)
    c.vars[gs->tid] = tid;
  if (gs->ctaid >= 0)
    c.vars[gs->ctaid] = sreg(g, "ctaid.x");
  if (gs->lane >= 0)
    c.vars[gs->lane] = LLVMBuildAnd(b, tid, ci(g->i64, 31), "");
  if (gs->warp >= 0)
    c.vars[gs->warp] = LLVMBuildLShr(b, tid, ci(g->i64, 5), "");
  stmts(&c, &k->body);
  LLVMBuildRetVoid(b);
  annotate(g, c.fn, "kernel", 1);
  annotate(g, c.fn, "maxntidx", (int)(gs->block > 0 ? gs->block : 1));
}

struct LLVMOpaqueModule *llvm_build_gpu_module(Ctx *cx, struct LLVMOpaqueContext *lc, LProgram *const *progs,
                                               int nprogs, const char *triple, const char *data_layout) {
  LlvmModuleGen g;
  llvm_module_begin(&g, cx, lc, progs, nprogs, triple, data_layout, true);
  g.b = LLVMCreateBuilderInContext(lc);
  for (int i = 0; i < nprogs; i++)
    for (int k = 0; k < progs[i]->kernels.len; k++)
      if (emit_kernel_code(progs[i], k) == k)  // a kernel with an earlier one's code launches that one
        build_gpu_kernel(&g, progs[i], k);
  LLVMDisposeBuilder(g.b);
  return g.m;
}
