// codegen/llvm_expr.c: the expression builder of the LLVM backend. Module-wide
// declarations (types, runtime and libm calls, intrinsics, constant globals), then
// what one LExpr of ir/loop.h becomes: f16/bf16 conversions, casts, unary and binary
// ops, loads, vector lanes; and the value a store writes.
//
// Invariants:
//   - every value computes bit for bit what c.c's C computes: the same formulas
//     (a composite op — sigmoid, gelu, ... — is built from its formula in ir/opmath.c,
//     which c.c prints too; the other helpers are mirrored below op by op), in the same order, with no
//     fast-math flag anywhere, so reductions keep the IR's order; integer arithmetic
//     wraps (no nsw/nuw on user values); division and float->int conversion never
//     reach UB or poison (divisors are made safe, fptosi only sees in-range values);
//     LX_FMA is the one exception ir/loop.h allows: llvm.fmuladd, fused where the
//     target has FMA, so it may differ from c.c in the last bit;
//   - vector lanes (ir/loop.h's Lanes) are LLVM vectors <N x T>: a vector load or
//     store is one access through the element pointer cast to <N x T>* with the
//     element's alignment, a splat is insertelement + shufflevector, a lane is an
//     extractelement, and a vector local is an alloca of <N x T> that sroa promotes;
//   - f16/bf16 values are carried as f32 and converted by integer bit arithmetic
//     (h2f/f2h/bf2f/f2bf below are c.c's tdsl_g_* helpers, made branch-free);
//   - in the GPU mode (g->gpu) the math the CPU gets from libm or from LLVM
//     intrinsics NVPTX cannot lower (and fmod, which NVPTX would expand inexactly) is
//     libdevice's __nv_*, and a raise goes to the device error record (llvm_gpu.c).
#include "codegen/llvm_internal.h"
#include "ir/opmath.h"

#include <string.h>

// ============================================================================
// Module-wide state: types, declarations, calls, constants
// ============================================================================
static void init_types(LlvmModuleGen *g) {
  LLVMContextRef c = g->lc;
  g->i1 = LLVMInt1TypeInContext(c);
  g->i8 = LLVMInt8TypeInContext(c);
  g->i16 = LLVMInt16TypeInContext(c);
  g->i32 = LLVMInt32TypeInContext(c);
  g->i64 = LLVMInt64TypeInContext(c);
  g->f32 = LLVMFloatTypeInContext(c);
  g->f64 = LLVMDoubleTypeInContext(c);
  g->vd = LLVMVoidTypeInContext(c);
  g->i8p = LLVMPointerType(g->i8, 0);
  // tdsl_tensor {storage, dtype, ndim, shape[8], strides[8], offset}
  LLVMTypeRef dims = LLVMArrayType(g->i64, TD_MAX_DIMS);
  g->tensor = LLVMStructCreateNamed(c, "tdsl_g_tensor");
  LLVMTypeRef tf[] = {g->i8p, g->i32, g->i32, dims, dims, g->i64};
  LLVMStructSetBody(g->tensor, tf, 6, 0);
  g->tensorp = LLVMPointerType(g->tensor, 0);
  // tdsl_kernel_error {k, sealed, value, iter}
  g->err = LLVMStructCreateNamed(c, "tdsl_g_kernel_error");
  LLVMTypeRef ef[] = {g->i32, g->i32, g->i64, g->i64};
  LLVMStructSetBody(g->err, ef, 4, 0);
  g->errp = LLVMPointerType(g->err, 0);
  LLVMTypeRef rf[] = {g->i8p, g->i64, g->i64};
  g->range_fn = LLVMFunctionType(g->vd, rf, 3, 0);
}

void llvm_module_begin(LlvmModuleGen *g, Ctx *cx, LLVMContextRef lc, LProgram *const *progs, int nprogs,
                       const char *triple, const char *data_layout, bool gpu) {
  *g = (LlvmModuleGen){.cx = cx, .lc = lc, .gpu = gpu};
  init_types(g);
  if (gpu) {
    g->gerr = LLVMStructCreateNamed(lc, "tdsl_g_gpu_error");  // {flag, k, value}
    LLVMTypeRef ef[] = {g->i32, g->i32, g->i64};
    LLVMStructSetBody(g->gerr, ef, 3, 0);
    g->gerrp = LLVMPointerType(g->gerr, 0);
  }
  g->m = LLVMModuleCreateWithNameInContext(nprogs ? progs[0]->file : "tdsl", lc);
  if (triple)
    LLVMSetTarget(g->m, triple);
  if (data_layout)
    LLVMSetDataLayout(g->m, data_layout);
}

void llvm_add_attr(LlvmModuleGen *g, LLVMValueRef fn, LLVMAttributeIndex at, const char *name) {
  unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
  TD_ASSERT(kind != 0);
  LLVMAddAttributeAtIndex(fn, at, LLVMCreateEnumAttribute(g->lc, kind, 0));
}

static bool small_int_expr(const LExpr *e) {
  return e && (dtype_is_small_int(e->dt) || small_int_expr(e->a) || small_int_expr(e->b) || small_int_expr(e->c) ||
               (e->kind == LX_LOAD && small_int_expr(e->idx.dyn)));
}

static bool small_int_stmts(const LStmtList *l) {
  for (int i = 0; i < l->len; i++) {
    const LStmt *s = l->data[i];
    if (small_int_expr(s->val) || small_int_expr(s->cond) || small_int_expr(s->idx.dyn) || small_int_stmts(&s->body))
      return true;
  }
  return false;
}

// Tells the optimizer that fn has no ldexp when kernel k computes with u8, i8 or i16:
// LLVM 14's instcombine rewrites exp2 (and pow(2, .)) of a vector of i8 or i16
// converted to float into a call of ldexp with a vector and a scalar, which instruction
// selection then crashes on. Without ldexp the rewrite does not happen.
void llvm_no_ldexp(LlvmModuleGen *g, const LKernel *k, LLVMValueRef fn) {
  if (!small_int_stmts(&k->body))
    return;
  static const char *const names[] = {"no-builtin-ldexp", "no-builtin-ldexpf", "no-builtin-ldexpl"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                            LLVMCreateStringAttribute(g->lc, names[i], (unsigned)strlen(names[i]), "", 0));
}

// A function declared (or found) by name.
static LLVMValueRef declare(LlvmModuleGen *g, const char *name, LLVMTypeRef ft) {
  LLVMValueRef f = LLVMGetNamedFunction(g->m, name);
  if (!f) {
    f = LLVMAddFunction(g->m, name, ft);
    llvm_add_attr(g, f, LLVMAttributeFunctionIndex, "nounwind");
  }
  return f;
}

LLVMValueRef llvm_call(LlvmModuleGen *g, const char *name, LLVMTypeRef ret, LLVMTypeRef *pt, int np,
                       LLVMValueRef *args) {
  LLVMTypeRef ft = LLVMFunctionType(ret, pt, (unsigned)np, 0);
  return LLVMBuildCall2(g->b, ft, declare(g, name, ft), args, (unsigned)np, "");
}

// llvm.NAME overloaded on t.
static LLVMValueRef intrinsic(LlvmModuleGen *g, const char *name, LLVMTypeRef t, LLVMValueRef *args, int n) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  TD_ASSERT(id != 0);
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(g->m, id, &t, 1);
  LLVMTypeRef ft = LLVMIntrinsicGetType(g->lc, id, &t, 1);
  return LLVMBuildCall2(g->b, ft, f, args, (unsigned)n, "");
}

static LLVMValueRef intrinsic1(LlvmModuleGen *g, const char *name, LLVMValueRef a) {
  return intrinsic(g, name, LLVMTypeOf(a), &a, 1);
}

// libm's NAME (float: NAMEf) of one or two arguments; on the GPU libdevice's
// __nv_NAME (__nv_NAMEf).
static LLVMValueRef libm(LlvmModuleGen *g, const char *name, DType dt, LLVMValueRef a, LLVMValueRef b) {
  LLVMTypeRef t = vtype(g, dt);
  const char *fn = dt == DT_F64 ? name : arena_printf(&g->cx->arena, "%sf", name);
  if (g->gpu)
    fn = arena_printf(&g->cx->arena, "__nv_%s", fn);
  LLVMTypeRef pt[2] = {t, t};
  LLVMValueRef args[2] = {a, b};
  return llvm_call(g, fn, t, pt, b ? 2 : 1, args);
}

// llvm.NAME of a float (the CPU lowers it to libm), or libdevice's function of the
// same meaning on the GPU, where NVPTX cannot lower these intrinsics.
static LLVMValueRef math1(LlvmModuleGen *g, const char *name, DType dt, LLVMValueRef a) {
  if (g->gpu)
    return libm(g, name, dt, a, NULL);
  return intrinsic1(g, arena_printf(&g->cx->arena, "llvm.%s", name), a);
}

// C's fmod: frem on the CPU; on the GPU libdevice's fmod (NVPTX expands frem to
// a - trunc(a / b) * b, which is not exact).
static LLVMValueRef fmod_(LlvmModuleGen *g, DType dt, LLVMValueRef a, LLVMValueRef b) {
  if (g->gpu)
    return libm(g, "fmod", dt, a, b);
  return LLVMBuildFRem(g->b, a, b, "");
}

// A private constant global string; returns an i8* to its first byte.
LLVMValueRef llvm_cstring(LlvmModuleGen *g, const char *s) {
  LLVMValueRef init = LLVMConstStringInContext(g->lc, s, (unsigned)strlen(s), 0);
  LLVMValueRef gv = LLVMAddGlobal(g->m, LLVMTypeOf(init), "tdsl_g_str");
  LLVMSetInitializer(gv, init);
  LLVMSetLinkage(gv, LLVMPrivateLinkage);
  LLVMSetGlobalConstant(gv, 1);
  LLVMSetUnnamedAddress(gv, LLVMGlobalUnnamedAddr);
  LLVMValueRef zero[2] = {ci(g->i32, 0), ci(g->i32, 0)};
  return LLVMConstInBoundsGEP2(LLVMTypeOf(init), gv, zero, 2);
}

LLVMValueRef llvm_private_const(LlvmModuleGen *g, const char *name, LLVMValueRef init) {
  LLVMValueRef gv = LLVMAddGlobal(g->m, LLVMTypeOf(init), name);
  LLVMSetInitializer(gv, init);
  LLVMSetLinkage(gv, LLVMPrivateLinkage);
  LLVMSetGlobalConstant(gv, 1);
  return gv;
}

// ============================================================================
// f16 / bf16 by bit arithmetic (c.c's tdsl_g_h2f, f2h, bf2f, f2bf; branch-free)
// ============================================================================
static LLVMValueRef sel(LlvmModuleGen *g, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(g->b, c, a, b, "");
}
static LLVMValueRef u32(LlvmModuleGen *g, uint32_t v) { return LLVMConstInt(g->i32, v, 0); }

static LLVMValueRef h2f(LlvmModuleGen *g, LLVMValueRef h) {
  LLVMBuilderRef b = g->b;
  LLVMValueRef x = LLVMBuildZExt(b, h, g->i32, "");
  LLVMValueRef sign = LLVMBuildShl(b, LLVMBuildAnd(b, x, u32(g, 0x8000), ""), u32(g, 16), "");
  LLVMValueRef e = LLVMBuildAnd(b, LLVMBuildLShr(b, x, u32(g, 10), ""), u32(g, 0x1f), "");
  LLVMValueRef m = LLVMBuildAnd(b, x, u32(g, 0x3ff), "");
  LLVMValueRef m13 = LLVMBuildShl(b, m, u32(g, 13), "");
  LLVMValueRef infnan = LLVMBuildOr(b, LLVMBuildOr(b, sign, u32(g, 0x7f800000), ""), m13, "");
  LLVMValueRef ebits = LLVMBuildShl(b, LLVMBuildAdd(b, e, u32(g, 112), ""), u32(g, 23), "");
  LLVMValueRef normal = LLVMBuildOr(b, LLVMBuildOr(b, sign, ebits, ""), m13, "");
  LLVMValueRef bits = sel(g, LLVMBuildICmp(b, LLVMIntEQ, e, u32(g, 0x1f), ""), infnan, normal);
  LLVMValueRef f = LLVMBuildBitCast(b, bits, g->f32, "");
  // zero or subnormal: (float)m * 0x1p-24f, negated when the sign is set (exact)
  LLVMValueRef v = LLVMBuildFMul(b, LLVMBuildUIToFP(b, m, g->f32, ""), cf(g->f32, 0x1p-24), "");
  LLVMValueRef sv = sel(g, LLVMBuildICmp(b, LLVMIntNE, sign, u32(g, 0), ""), LLVMBuildFNeg(b, v, ""), v);
  return sel(g, LLVMBuildICmp(b, LLVMIntEQ, e, u32(g, 0), ""), sv, f);
}

static LLVMValueRef f2h(LlvmModuleGen *g, LLVMValueRef f) {
  LLVMBuilderRef b = g->b;
  LLVMValueRef u = LLVMBuildBitCast(b, f, g->i32, "");
  LLVMValueRef sign = LLVMBuildAnd(b, LLVMBuildLShr(b, u, u32(g, 16), ""), u32(g, 0x8000), "");
  LLVMValueRef a = LLVMBuildAnd(b, u, u32(g, 0x7fffffff), "");
  // a normal f16: r = a - 0x38000000; r += 0xfff + ((r >> 13) & 1); sign | (r >> 13)
  LLVMValueRef r = LLVMBuildSub(b, a, u32(g, 0x38000000), "");
  LLVMValueRef odd = LLVMBuildAnd(b, LLVMBuildLShr(b, r, u32(g, 13), ""), u32(g, 1), "");
  r = LLVMBuildAdd(b, r, LLVMBuildAdd(b, u32(g, 0xfff), odd, ""), "");
  LLVMValueRef normal = LLVMBuildOr(b, sign, LLVMBuildLShr(b, r, u32(g, 13), ""), "");
  // a subnormal f16 (e in [102, 112]; clamped so no shift is out of range elsewhere)
  LLVMValueRef e = LLVMBuildLShr(b, a, u32(g, 23), "");
  LLVMValueRef ec = sel(g, LLVMBuildICmp(b, LLVMIntULT, e, u32(g, 102), ""), u32(g, 102), e);
  ec = sel(g, LLVMBuildICmp(b, LLVMIntUGT, ec, u32(g, 125), ""), u32(g, 125), ec);
  LLVMValueRef m = LLVMBuildOr(b, LLVMBuildAnd(b, a, u32(g, 0x7fffff), ""), u32(g, 0x800000), "");
  LLVMValueRef s = LLVMBuildSub(b, u32(g, 126), ec, "");
  LLVMValueRef q = LLVMBuildLShr(b, m, s, "");
  LLVMValueRef mask = LLVMBuildSub(b, LLVMBuildShl(b, u32(g, 1), s, ""), u32(g, 1), "");
  LLVMValueRef rem = LLVMBuildAnd(b, m, mask, "");
  LLVMValueRef half = LLVMBuildShl(b, u32(g, 1), LLVMBuildSub(b, s, u32(g, 1), ""), "");
  LLVMValueRef qodd = LLVMBuildICmp(b, LLVMIntNE, LLVMBuildAnd(b, q, u32(g, 1), ""), u32(g, 0), "");
  LLVMValueRef up = LLVMBuildOr(b, LLVMBuildICmp(b, LLVMIntUGT, rem, half, ""),
                                LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntEQ, rem, half, ""), qodd, ""), "");
  q = LLVMBuildAdd(b, q, LLVMBuildZExt(b, up, g->i32, ""), "");
  LLVMValueRef sub = LLVMBuildOr(b, sign, q, "");
  LLVMValueRef res = sel(g, LLVMBuildICmp(b, LLVMIntULT, e, u32(g, 102), ""), sign, sub);
  res = sel(g, LLVMBuildICmp(b, LLVMIntUGE, a, u32(g, 0x38800000), ""), normal, res);
  res = sel(g, LLVMBuildICmp(b, LLVMIntUGE, a, u32(g, 0x477ff000), ""), LLVMBuildOr(b, sign, u32(g, 0x7c00), ""), res);
  res = sel(g, LLVMBuildICmp(b, LLVMIntUGT, a, u32(g, 0x7f800000), ""), LLVMBuildOr(b, sign, u32(g, 0x7e00), ""), res);
  return LLVMBuildTrunc(b, res, g->i16, "");
}

static LLVMValueRef bf2f(LlvmModuleGen *g, LLVMValueRef h) {
  LLVMValueRef x = LLVMBuildShl(g->b, LLVMBuildZExt(g->b, h, g->i32, ""), u32(g, 16), "");
  return LLVMBuildBitCast(g->b, x, g->f32, "");
}

static LLVMValueRef f2bf(LlvmModuleGen *g, LLVMValueRef f) {
  LLVMBuilderRef b = g->b;
  LLVMValueRef u = LLVMBuildBitCast(b, f, g->i32, "");
  LLVMValueRef hi = LLVMBuildLShr(b, u, u32(g, 16), "");
  LLVMValueRef nan = LLVMBuildICmp(b, LLVMIntUGT, LLVMBuildAnd(b, u, u32(g, 0x7fffffff), ""), u32(g, 0x7f800000), "");
  LLVMValueRef quiet = LLVMBuildOr(b, hi, u32(g, 0x40), "");
  LLVMValueRef bias = LLVMBuildAdd(b, u32(g, 0x7fff), LLVMBuildAnd(b, hi, u32(g, 1), ""), "");
  LLVMValueRef rounded = LLVMBuildLShr(b, LLVMBuildAdd(b, u, bias, ""), u32(g, 16), "");
  return LLVMBuildTrunc(b, sel(g, nan, quiet, rounded), g->i16, "");
}

static LLVMValueRef round_half(LlvmModuleGen *g, LLVMValueRef f, DType to) {
  return to == DT_F16 ? h2f(g, f2h(g, f)) : bf2f(g, f2bf(g, f));
}

// ============================================================================
// Casts (c.c's cast_text)
// ============================================================================
// A float or int value of dtype `from` converted by C's (float)/(double).
static LLVMValueRef to_float(LlvmModuleGen *g, LLVMValueRef v, DType from, DType to) {
  LLVMTypeRef t = vtype(g, to);
  if (dtype_is_float(from)) {
    DType cf_ = dtype_compute(from);
    if (cf_ == to)
      return v;
    return cf_ == DT_F64 ? LLVMBuildFPTrunc(g->b, v, t, "") : LLVMBuildFPExt(g->b, v, t, "");
  }
  if (from == DT_BOOL || dtype_is_unsigned(from))
    return LLVMBuildUIToFP(g->b, v, t, "");
  return LLVMBuildSIToFP(g->b, v, t, "");
}

// Truncation toward zero; nan or out of range gives the minimum (c.c's tdsl_g_f2i*:
// the value goes through double, and fptosi only ever sees an in-range one).
static LLVMValueRef f2i(LlvmModuleGen *g, LLVMValueRef v, DType from, DType to) {
  LLVMBuilderRef b = g->b;
  LLVMValueRef x = dtype_compute(from) == DT_F64 ? v : LLVMBuildFPExt(b, v, g->f64, "");
  LLVMValueRef ok;
  if (to == DT_I32)
    ok = LLVMBuildAnd(b, LLVMBuildFCmp(b, LLVMRealOGT, x, cf(g->f64, -2147483649.0), ""),
                      LLVMBuildFCmp(b, LLVMRealOLT, x, cf(g->f64, 2147483648.0), ""), "");
  else
    ok = LLVMBuildAnd(b, LLVMBuildFCmp(b, LLVMRealOGE, x, cf(g->f64, -9223372036854775808.0), ""),
                      LLVMBuildFCmp(b, LLVMRealOLT, x, cf(g->f64, 9223372036854775808.0), ""), "");
  LLVMTypeRef t = vtype(g, to);
  LLVMValueRef safe = sel(g, ok, x, cf(g->f64, 0));
  LLVMValueRef conv = LLVMBuildFPToSI(b, safe, t, "");
  return sel(g, ok, conv, to == DT_I32 ? ci(t, INT32_MIN) : ci(t, INT64_MIN));
}

LLVMValueRef llvm_cast(LlvmModuleGen *g, LLVMValueRef v, DType from, DType to) {
  if (from == to)
    return v;
  LLVMBuilderRef b = g->b;
  if (to == DT_BOOL) {
    if (dtype_is_float(from))
      return LLVMBuildFCmp(b, LLVMRealUNE, v, cf(LLVMTypeOf(v), 0), "");
    return LLVMBuildICmp(b, LLVMIntNE, v, ci(LLVMTypeOf(v), 0), "");
  }
  if (dtype_is_half(to)) {
    if (from != DT_F32 && !dtype_is_half(from))
      v = to_float(g, v, from, DT_F32);  // via f32, as PyTorch does
    return round_half(g, v, to);
  }
  if (dtype_is_float(to)) {
    if (to == DT_F32 && dtype_is_half(from))
      return v;  // carried as f32 already
    return to_float(g, v, from, to);
  }
  if (dtype_is_float(from)) {
    if (!dtype_is_small_int(to))
      return f2i(g, v, from, to);
    DType via = from == DT_F64 && to == DT_U8 ? DT_I64 : DT_I32;  // PyTorch's CPU answer (kb_cast)
    v = f2i(g, v, from, via);
    from = via;
  }
  unsigned fw = LLVMGetIntTypeWidth(LLVMTypeOf(v)), tw = LLVMGetIntTypeWidth(vtype(g, to));
  if (fw > tw)
    return LLVMBuildTrunc(b, v, vtype(g, to), "");  // wraps
  if (fw == tw)
    return v;  // u8 <-> i8: the same bits
  if (from == DT_BOOL || dtype_is_unsigned(from))
    return LLVMBuildZExt(b, v, vtype(g, to), "");
  return LLVMBuildSExt(b, v, vtype(g, to), "");
}

// ============================================================================
// Scalar expressions
// ============================================================================
static TD_NORETURN void unsupported(const LExpr *e, DType dt) {
  td_internal_error(__FILE__, __LINE__, "llvm backend: op '%s' on %s", op_name(e->op), dtype_name(dt));
}

// if (cond) tdsl_kernel_error_raise(err, k, value, iteration): a cold block.
static void raise_if(LlvmKernelGen *c, LLVMValueRef cond, int err, LLVMValueRef value) {
  if (err < 0 || !c->has_err)
    return;
  TD_ASSERT(err < c->k->errors.len);
  LlvmModuleGen *g = c->g;
  LLVMBasicBlockRef yes = new_block(c, "raise"), cont = new_block(c, "raised");
  LLVMBuildCondBr(g->b, cond, yes, cont);
  LLVMPositionBuilderAtEnd(g->b, yes);
  if (LLVMTypeOf(value) != g->i64)
    value = LLVMBuildSExt(g->b, value, g->i64, "");
  if (g->gpu) {
    llvm_gpu_raise(c, err, value);
    LLVMBuildBr(g->b, cont);
    LLVMPositionBuilderAtEnd(g->b, cont);
    return;
  }
  LLVMTypeRef pt[] = {g->errp, g->i32, g->i64, g->i64};
  LLVMValueRef args[] = {c->errp, ci(g->i32, err), value, c->iter ? c->iter : ci(g->i64, INT64_MAX)};
  llvm_call(g, "tdsl_kernel_error_raise", g->vd, pt, 4, args);
  LLVMBuildBr(g->b, cont);
  LLVMPositionBuilderAtEnd(g->b, cont);
}

// The exact integer power a ** b, wrapping; b < 0 gives PyTorch's answer (c.c's
// tdsl_g_pow_* without an error): an internal always-inline function with a loop.
static LLVMValueRef ipow_fn(LlvmModuleGen *g, DType dt) {
  if (g->ipow[dt])
    return g->ipow[dt];
  LLVMTypeRef t = vtype(g, dt), pt[2] = {t, t};
  LLVMValueRef f =
      LLVMAddFunction(g->m, dt == DT_I32 ? "tdsl_g_pow_i32" : "tdsl_g_pow_i64", LLVMFunctionType(t, pt, 2, 0));
  set_internal(f);
  llvm_add_attr(g, f, LLVMAttributeFunctionIndex, "nounwind");
  llvm_add_attr(g, f, LLVMAttributeFunctionIndex, "alwaysinline");
  LLVMBasicBlockRef saved = LLVMGetInsertBlock(g->b);
  LLVMBuilderRef b = g->b;
  LLVMValueRef a = LLVMGetParam(f, 0), n = LLVMGetParam(f, 1);
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(g->lc, f, "entry");
  LLVMBasicBlockRef neg = LLVMAppendBasicBlockInContext(g->lc, f, "neg");
  LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(g->lc, f, "loop");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->lc, f, "done");
  LLVMPositionBuilderAtEnd(b, entry);
  LLVMValueRef isneg = LLVMBuildICmp(b, LLVMIntSLT, n, ci(t, 0), "");
  LLVMValueRef zero = LLVMBuildICmp(b, LLVMIntEQ, n, ci(t, 0), "");
  LLVMBasicBlockRef pos = LLVMAppendBasicBlockInContext(g->lc, f, "pos");
  LLVMBuildCondBr(b, isneg, neg, pos);
  LLVMPositionBuilderAtEnd(b, pos);
  LLVMBuildCondBr(b, zero, done, loop);
  // a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0
  LLVMPositionBuilderAtEnd(b, neg);
  LLVMValueRef oddb = LLVMBuildICmp(b, LLVMIntNE, LLVMBuildAnd(b, n, ci(t, 1), ""), ci(t, 0), "");
  LLVMValueRef rm1 = sel(g, oddb, ci(t, -1), ci(t, 1));
  LLVMValueRef rn = sel(g, LLVMBuildICmp(b, LLVMIntEQ, a, ci(t, -1), ""), rm1, ci(t, 0));
  rn = sel(g, LLVMBuildICmp(b, LLVMIntEQ, a, ci(t, 1), ""), ci(t, 1), rn);
  LLVMBuildRet(b, rn);
  // for (n; n; n >>= 1) { if (n & 1) r *= x; x *= x; }
  LLVMPositionBuilderAtEnd(b, loop);
  LLVMValueRef r = LLVMBuildPhi(b, t, "r"), x = LLVMBuildPhi(b, t, "x"), k = LLVMBuildPhi(b, t, "n");
  LLVMValueRef bit = LLVMBuildICmp(b, LLVMIntNE, LLVMBuildAnd(b, k, ci(t, 1), ""), ci(t, 0), "");
  LLVMValueRef r2 = sel(g, bit, LLVMBuildMul(b, r, x, ""), r);
  LLVMValueRef x2 = LLVMBuildMul(b, x, x, "");
  LLVMValueRef k2 = LLVMBuildLShr(b, k, ci(t, 1), "");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntNE, k2, ci(t, 0), ""), loop, done);
  LLVMValueRef in_r[] = {ci(t, 1), r2}, in_x[] = {a, x2}, in_k[] = {n, k2};
  LLVMBasicBlockRef from[] = {pos, loop};
  LLVMAddIncoming(r, in_r, from, 2);
  LLVMAddIncoming(x, in_x, from, 2);
  LLVMAddIncoming(k, in_k, from, 2);
  LLVMPositionBuilderAtEnd(b, done);
  LLVMValueRef res = LLVMBuildPhi(b, t, "");
  LLVMValueRef in_res[] = {ci(t, 1), r2};
  LLVMAddIncoming(res, in_res, from, 2);
  LLVMBuildRet(b, res);
  LLVMPositionBuilderAtEnd(b, saved);
  return g->ipow[dt] = f;
}

static LLVMValueRef unary(LlvmKernelGen *c, const LExpr *e, LLVMValueRef a);
static LLVMValueRef binary(LlvmKernelGen *c, const LExpr *e, LLVMValueRef a, LLVMValueRef bv);

// The value of formula f (ir/opmath.c) whose operand x has the value xv: built node by
// node, operands left to right, x never rebuilt.
static LLVMValueRef formula(LlvmKernelGen *c, const LExpr *f, const LExpr *x, LLVMValueRef xv) {
  if (f == x)
    return xv;
  if (f->kind == LX_UNARY)
    return unary(c, f, formula(c, f->a, x, xv));
  if (f->kind == LX_BINARY) {
    LLVMValueRef a = formula(c, f->a, x, xv);
    return binary(c, f, a, formula(c, f->b, x, xv));
  }
  return llvm_expr(c, f);  // a constant
}

static LLVMValueRef unary(LlvmKernelGen *c, const LExpr *e, LLVMValueRef a) {
  LlvmModuleGen *g = c->g;
  LLVMBuilderRef b = g->b;
  DType dt = dtype_compute(e->dt);
  bool fl = dtype_is_float(dt), in = dtype_is_int(dt), bo = dt == DT_BOOL;
  LLVMTypeRef t = vtype(g, dt);
  if (op_is_composite(e->op, e->dt))
    return formula(c, op_formula(g->cx, e->op, e->dt, e->a), e->a, a);
  switch (e->op) {
  case OP_NEG:
    if (fl)
      return LLVMBuildFNeg(b, a, "");
    return in ? LLVMBuildSub(b, ci(t, 0), a, "") : a;
  case OP_ABS:
    if (fl)
      return intrinsic1(g, "llvm.fabs", a);
    return in ? sel(g, LLVMBuildICmp(b, LLVMIntSLT, a, ci(t, 0), ""), LLVMBuildSub(b, ci(t, 0), a, ""), a) : a;
  case OP_SIGN:
    if (fl) {
      LLVMValueRef lt = sel(g, LLVMBuildFCmp(b, LLVMRealOLT, a, cf(t, 0), ""), cf(t, -1), cf(t, 0));
      return sel(g, LLVMBuildFCmp(b, LLVMRealOGT, a, cf(t, 0), ""), cf(t, 1), lt);
    }
    if (bo)
      return a;
    return LLVMBuildSub(b, LLVMBuildZExt(b, LLVMBuildICmp(b, LLVMIntSGT, a, ci(t, 0), ""), t, ""),
                        LLVMBuildZExt(b, LLVMBuildICmp(b, LLVMIntSLT, a, ci(t, 0), ""), t, ""), "");
  case OP_RELU:
    if (fl)  // a < 0 ? 0 : a: x86's one max (nan and -0 stay, as in PyTorch)
      return sel(g, LLVMBuildFCmp(b, LLVMRealOLT, a, cf(t, 0), ""), cf(t, 0), a);
    if (bo)
      return a;
    return sel(g, LLVMBuildICmp(b, LLVMIntSGT, a, ci(t, 0), ""), a, ci(t, 0));
  case OP_SQUARE: return bo ? a : LLVMBuildMul(b, a, a, "");  // of a float: its formula
  case OP_BITWISE_NOT:
    if (bo || in)
      return LLVMBuildNot(b, a, "");
    unsupported(e, dt);
  case OP_LOGICAL_NOT: return LLVMBuildNot(b, a, "");
  case OP_FLOOR:
  case OP_CEIL:
  case OP_ROUND:
    if (!fl)
      return a;  // integral already
    return intrinsic1(g, e->op == OP_FLOOR ? "llvm.floor" : e->op == OP_CEIL ? "llvm.ceil" : "llvm.rint", a);
  default: break;
  }
  if (!fl)
    unsupported(e, dt);
  // the float ops of a libm function: reached as ir/ops.def's lowering column says (llvm.trunc:
  // NVPTX lowers it, cvt.rzi)
  const char *fn = op_libm(e->op);
  switch (op_libm_lowering(e->op)) {
  case LM_INTRINSIC: return math1(g, fn, dt, a);
  case LM_CALL: return libm(g, fn, dt, a, NULL);
  case LM_LLVM: return intrinsic1(g, arena_printf(&g->cx->arena, "llvm.%s", fn), a);
  default: unsupported(e, dt);
  }
}

// PyTorch's div_floor (c.c's tdsl_g_floordiv_f*), branch-free.
static LLVMValueRef floordiv_float(LlvmModuleGen *g, LLVMTypeRef t, LLVMValueRef a, LLVMValueRef bv) {
  LLVMBuilderRef b = g->b;
  LLVMValueRef q = LLVMBuildFDiv(b, a, bv, "");
  LLVMValueRef mod = fmod_(g, t == g->f32 ? DT_F32 : DT_F64, a, bv);
  LLVMValueRef div = LLVMBuildFDiv(b, LLVMBuildFSub(b, a, mod, ""), bv, "");
  LLVMValueRef adj = LLVMBuildAnd(b, LLVMBuildFCmp(b, LLVMRealUNE, mod, cf(t, 0), ""),
                                  LLVMBuildXor(b, LLVMBuildFCmp(b, LLVMRealOLT, bv, cf(t, 0), ""),
                                               LLVMBuildFCmp(b, LLVMRealOLT, mod, cf(t, 0), ""), ""), "");
  div = sel(g, adj, LLVMBuildFSub(b, div, cf(t, 1), ""), div);
  LLVMValueRef cs[2] = {cf(t, 0), q};
  LLVMValueRef z = intrinsic(g, "llvm.copysign", t, cs, 2);
  LLVMValueRef fl = intrinsic1(g, "llvm.floor", div);
  LLVMValueRef up = LLVMBuildFCmp(b, LLVMRealOGT, LLVMBuildFSub(b, div, fl, ""), cf(t, 0.5), "");
  LLVMValueRef r = sel(g, up, LLVMBuildFAdd(b, fl, cf(t, 1), ""), fl);
  r = sel(g, LLVMBuildFCmp(b, LLVMRealOEQ, div, cf(t, 0), ""), z, r);
  return sel(g, LLVMBuildFCmp(b, LLVMRealOEQ, bv, cf(t, 0), ""), q, r);
}

static LLVMValueRef binary(LlvmKernelGen *c, const LExpr *e, LLVMValueRef a, LLVMValueRef bv) {
  LlvmModuleGen *g = c->g;
  LLVMBuilderRef b = g->b;
  switch (e->op) {
  case OP_EQ:
  case OP_NE:
  case OP_LT:
  case OP_LE:
  case OP_GT:
  case OP_GE: {
    DType ot = e->a->dt;
    int i = e->op - OP_EQ;
    if (dtype_is_float(ot)) {
      static const LLVMRealPredicate fp[] = {LLVMRealOEQ, LLVMRealUNE, LLVMRealOLT,
                                             LLVMRealOLE, LLVMRealOGT, LLVMRealOGE};
      return LLVMBuildFCmp(b, fp[i], a, bv, "");
    }
    static const LLVMIntPredicate sp[] = {LLVMIntEQ, LLVMIntNE, LLVMIntSLT, LLVMIntSLE, LLVMIntSGT, LLVMIntSGE};
    static const LLVMIntPredicate up[] = {LLVMIntEQ, LLVMIntNE, LLVMIntULT, LLVMIntULE, LLVMIntUGT, LLVMIntUGE};
    return LLVMBuildICmp(b, ot == DT_BOOL ? up[i] : sp[i], a, bv, "");
  }
  default: break;
  }
  DType dt = dtype_compute(e->dt);
  bool fl = dtype_is_float(dt), in = dtype_is_int(dt), bo = dt == DT_BOOL;
  LLVMTypeRef t = vtype(g, dt);
  switch (e->op) {
  case OP_LOGICAL_AND: return LLVMBuildAnd(b, a, bv, "");
  case OP_LOGICAL_OR: return LLVMBuildOr(b, a, bv, "");
  case OP_ADD:
    return fl ? LLVMBuildFAdd(b, a, bv, "") : in ? LLVMBuildAdd(b, a, bv, "") : LLVMBuildOr(b, a, bv, "");
  case OP_SUB:
    return fl ? LLVMBuildFSub(b, a, bv, "") : in ? LLVMBuildSub(b, a, bv, "") : LLVMBuildXor(b, a, bv, "");
  case OP_MUL:
    return fl ? LLVMBuildFMul(b, a, bv, "") : in ? LLVMBuildMul(b, a, bv, "") : LLVMBuildAnd(b, a, bv, "");
  case OP_DIV:
    if (!fl)
      unsupported(e, dt);
    return LLVMBuildFDiv(b, a, bv, "");
  case OP_FLOOR_DIVIDE:
  case OP_REMAINDER: {
    if (bo)
      unsupported(e, dt);
    if (fl && e->op == OP_FLOOR_DIVIDE)
      return floordiv_float(g, t, a, bv);
    if (fl) {  // r = fmod(a, b); r != 0 and (r < 0) != (b < 0) => r += b
      LLVMValueRef r = fmod_(g, dt, a, bv);
      LLVMValueRef adj = LLVMBuildAnd(b, LLVMBuildFCmp(b, LLVMRealUNE, r, cf(t, 0), ""),
                                      LLVMBuildXor(b, LLVMBuildFCmp(b, LLVMRealOLT, r, cf(t, 0), ""),
                                                   LLVMBuildFCmp(b, LLVMRealOLT, bv, cf(t, 0), ""), ""), "");
      return sel(g, adj, LLVMBuildFAdd(b, r, bv, ""), r);
    }
    // Python's // and %: b == 0 raises (value 0) and gives 0; b == -1 is -a and 0
    LLVMValueRef zero = LLVMBuildICmp(b, LLVMIntEQ, bv, ci(t, 0), "");
    LLVMValueRef m1 = LLVMBuildICmp(b, LLVMIntEQ, bv, ci(t, -1), "");
    LLVMValueRef safe = sel(g, LLVMBuildOr(b, zero, m1, ""), ci(t, 1), bv);
    LLVMValueRef r = LLVMBuildSRem(b, a, safe, ""), res;
    LLVMValueRef bneg = LLVMBuildICmp(b, LLVMIntSLT, bv, ci(t, 0), "");
    LLVMValueRef rnz = LLVMBuildICmp(b, LLVMIntNE, r, ci(t, 0), "");
    if (e->op == OP_FLOOR_DIVIDE) {
      LLVMValueRef q = LLVMBuildSDiv(b, a, safe, "");
      LLVMValueRef adj =
          LLVMBuildAnd(b, rnz, LLVMBuildXor(b, LLVMBuildICmp(b, LLVMIntSLT, a, ci(t, 0), ""), bneg, ""), "");
      res = sel(g, adj, LLVMBuildSub(b, q, ci(t, 1), ""), q);
      res = sel(g, m1, LLVMBuildSub(b, ci(t, 0), a, ""), res);
    } else {
      LLVMValueRef adj =
          LLVMBuildAnd(b, rnz, LLVMBuildXor(b, LLVMBuildICmp(b, LLVMIntSLT, r, ci(t, 0), ""), bneg, ""), "");
      res = sel(g, adj, LLVMBuildAdd(b, r, bv, ""), r);
      res = sel(g, m1, ci(t, 0), res);
    }
    res = sel(g, zero, ci(t, 0), res);
    raise_if(c, zero, e->err, ci(g->i64, 0));
    return res;
  }
  case OP_POW: {
    if (fl)
      break;  // libm's, below
    if (!in)
      unsupported(e, dt);
    LLVMValueRef f = ipow_fn(g, dt), args[2] = {a, bv};
    LLVMTypeRef pt[2] = {t, t};
    LLVMValueRef r = LLVMBuildCall2(b, LLVMFunctionType(t, pt, 2, 0), f, args, 2, "");
    if (e->err >= 0 && c->has_err) {  // b < 0 raises with b's value and gives 0
      LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLT, bv, ci(t, 0), "");
      r = sel(g, neg, ci(t, 0), r);
      raise_if(c, neg, e->err, bv);
    }
    return r;
  }
  case OP_MAXIMUM:
  case OP_MINIMUM: {
    bool mx = e->op == OP_MAXIMUM;
    if (fl) {  // a != a ? a : b != b ? b : (max: a < b ? b : a; min: b < a ? b : a)
      LLVMValueRef lt = mx ? LLVMBuildFCmp(b, LLVMRealOLT, a, bv, "") : LLVMBuildFCmp(b, LLVMRealOLT, bv, a, "");
      LLVMValueRef r = sel(g, lt, bv, a);
      r = sel(g, LLVMBuildFCmp(b, LLVMRealUNO, bv, bv, ""), bv, r);
      return sel(g, LLVMBuildFCmp(b, LLVMRealUNO, a, a, ""), a, r);
    }
    LLVMIntPredicate p = bo ? LLVMIntULT : LLVMIntSLT;
    LLVMValueRef lt = mx ? LLVMBuildICmp(b, p, a, bv, "") : LLVMBuildICmp(b, p, bv, a, "");
    return sel(g, lt, bv, a);
  }
  case OP_FMOD:
    if (!fl)
      unsupported(e, dt);
    return fmod_(g, dt, a, bv);
  case OP_BITWISE_AND: return LLVMBuildAnd(b, a, bv, "");
  case OP_BITWISE_OR: return LLVMBuildOr(b, a, bv, "");
  case OP_BITWISE_XOR: return LLVMBuildXor(b, a, bv, "");
  case OP_LSHIFT:  // the count is in [0, bits): ir/scalar.c masks it
    if (!in)
      unsupported(e, dt);
    return LLVMBuildShl(b, a, bv, "");
  case OP_RSHIFT:
    if (!in)
      unsupported(e, dt);
    return LLVMBuildAShr(b, a, bv, "");
  default: break;
  }
  if (!fl)
    unsupported(e, dt);
  // the float ops of a libm function of two arguments, reached as ir/ops.def's lowering
  // column says
  LLVMValueRef ab[2] = {a, bv};
  switch (op_libm_lowering(e->op)) {
  case LM_CALL: return libm(g, op_libm(e->op), dt, a, bv);
  case LM_LLVM: return intrinsic(g, arena_printf(&g->cx->arena, "llvm.%s", op_libm(e->op)), t, ab, 2);
  default: unsupported(e, dt);
  }
}

// sum coef * var + base (+ dyn): an i64; with_base false leaves base out. The terms
// are added outermost loop first and the constant last, so the accesses of a nest
// share one sum per loop that LICM hoists and CSE merges (a tile's accesses then
// differ by their constants alone), and ScalarEvolution and the vectorizers see a
// few short expressions, not one long chain per access.
static LLVMValueRef index(LlvmKernelGen *c, const LIndex *ix, bool with_base) {
  LlvmModuleGen *g = c->g;
  int order[LI_MAX_TERMS], n = 0;
  for (int k = 0; k < ix->nterms; k++) {
    if (ix->coef[k] == 0)
      continue;
    TD_ASSERT(ix->var[k] >= 0 && ix->var[k] < c->k->nvars && c->vars[ix->var[k]]);
    int at = n++;
    for (; at > 0 && c->depth[ix->var[order[at - 1]]] > c->depth[ix->var[k]]; at--)
      order[at] = order[at - 1];
    order[at] = k;
  }
  LLVMValueRef v = NULL;
  for (int i = 0; i < n; i++) {
    int k = order[i];
    LLVMValueRef t = c->vars[ix->var[k]];
    if (ix->coef[k] != 1)
      t = LLVMBuildNSWMul(g->b, t, ci(g->i64, ix->coef[k]), "");
    v = v ? LLVMBuildNSWAdd(g->b, v, t, "") : t;
  }
  if (!v)
    v = ci(g->i64, with_base ? ix->base : 0);
  else if (with_base && ix->base != 0)
    v = LLVMBuildNSWAdd(g->b, v, ci(g->i64, ix->base), "");
  if (ix->dyn) {
    LLVMValueRef d = llvm_expr(c, ix->dyn);
    if (LLVMTypeOf(d) != g->i64)
      d = llvm_cast(g, d, ix->dyn->dt, DT_I64);
    v = LLVMBuildNSWAdd(g->b, v, d, "");
  }
  return v;
}

// Whether e is the same in every iteration of every loop: a function's scalar
// arguments and constants, combined.
static bool invariant(const LExpr *e) {
  switch (e->kind) {
  case LX_CONST:
  case LX_ARG: return true;
  case LX_CAST:
  case LX_UNARY: return invariant(e->a);
  case LX_BINARY: return invariant(e->a) && invariant(e->b);
  default: return false;
  }
}

// &arg[ix]. When every term is non-negative, the element at the loop terms alone
// lies in the buffer too: that is one GEP, shared by the accesses that differ by their
// constants only, and a second GEP adds the constant (an x86 displacement). The SLP
// vectorizer then has one index computation to look at where it had one per access.
//
// A loop-invariant dyn (a GEMM micro-kernel's row of A, b0[i0 + a3 * r], ir/gemm.c) is
// a GEP of its own first: LICM hoists the row's pointer, and the loop addresses
// row + i0 * 4 in one operand. As one index sum, i0 + a3 * r, it was an add (LEA) a
// row in the FMA loop (LSR, which would hoist it, is off: llvm_emit.c), 5 in the 24
// FMAs of matmul_1024's 6x64 tile, which gcc's strength reduction leaves out (issue
// 27, A/B in one process: matmul_1024 0.95-0.96x the time before, level with C;
// gelu_linear 0.96-0.98x; sdpa_256 0.99x). Plain GEPs here: the row's start need not be
// an element the function reads.
LLVMValueRef llvm_elem_ptr(LlvmKernelGen *c, int arg, const LIndex *ix) {
  LLVMBuilderRef b = c->g->b;
  LLVMTypeRef t = stype(c->g, arg_dtype(c, arg));
  LLVMValueRef p = c->args[arg];
  LIndex rest = *ix;
  bool row = ix->dyn && !c->g->gpu && invariant(ix->dyn);
  if (row) {
    LLVMValueRef d = llvm_expr(c, ix->dyn);
    if (LLVMTypeOf(d) != c->g->i64)
      d = llvm_cast(c->g, d, ix->dyn->dt, DT_I64);
    p = LLVMBuildGEP2(b, t, p, &d, 1, "");
    rest.dyn = NULL;
  }
  bool split = rest.base > 0 && !rest.dyn;
  for (int k = 0; k < rest.nterms && split; k++)
    split = rest.coef[k] >= 0;
  LLVMValueRef i = index(c, &rest, !split);
  p = row ? LLVMBuildGEP2(b, t, p, &i, 1, "") : LLVMBuildInBoundsGEP2(b, t, p, &i, 1, "");
  if (!split)
    return p;
  LLVMValueRef d = ci(c->g->i64, rest.base);
  return row ? LLVMBuildGEP2(b, t, p, &d, 1, "") : LLVMBuildInBoundsGEP2(b, t, p, &d, 1, "");
}

static LLVMValueRef load(LlvmKernelGen *c, const LExpr *e) {
  LlvmModuleGen *g = c->g;
  DType bt = arg_dtype(c, e->buf);
  LLVMValueRef v = LLVMBuildLoad2(g->b, stype(g, bt), llvm_elem_ptr(c, e->buf, &e->idx), "");
  if (bt == DT_F16)
    v = h2f(g, v);
  else if (bt == DT_BF16)
    v = bf2f(g, v);
  else if (bt == DT_BOOL)
    v = LLVMBuildICmp(g->b, LLVMIntNE, v, ci(g->i8, 0), "");
  return llvm_cast(g, v, bt, e->dt);
}

// ---- vector lanes (ir/loop.h's Lanes) ----
// &arg[ix] as a pointer to `lanes` consecutive elements. Vector buffers are stored as
// they are carried (f32, f64 and the ints), and f16, bf16 and bool as their bits (i16,
// i8: lx_bits_dtype, the only vectors of them the IR has). *align: what the index
// proves, from storages and LArg.at being 64-byte aligned (the largest power of two up
// to 64 dividing the base and every coefficient in bytes; the element's own alignment
// with a run-time index, and in a function of LProgram.funcs, whose pointers are its
// callers' advanced by any number of elements), so that stores of ir/ew.c's blocks into
// rows of a multiple of 64 bytes can stream (llvm_mark_streams); instcombine raises it
// further where it can.
LLVMValueRef llvm_vec_ptr(LlvmKernelGen *c, int arg, const LIndex *ix, int lanes, unsigned *align) {
  DType bt = arg_dtype(c, arg), vt = lx_bits_dtype(bt);
  TD_ASSERT(lanes > 1);
  int64_t es = dtype_size(bt), a = c->scalars ? es : 64;
  while (a > es && !ix->dyn) {
    // in uint64_t: a huge coefficient wraps, and a power of two divides the wrapped
    // product exactly when it divides the true one
    bool ok = (uint64_t)ix->base * (uint64_t)es % (uint64_t)a == 0;
    for (int t = 0; t < ix->nterms && ok; t++)
      ok = (uint64_t)ix->coef[t] * (uint64_t)es % (uint64_t)a == 0;
    if (ok)
      break;
    a /= 2;
  }
  *align = (unsigned)(ix->dyn || a < es ? es : a);
  return LLVMBuildBitCast(c->g->b, llvm_elem_ptr(c, arg, ix), LLVMPointerType(lanes_type(c->g, vt, lanes), 0), "");
}

static LLVMValueRef vec_load(LlvmKernelGen *c, const LExpr *e) {
  unsigned align;
  LLVMValueRef p = llvm_vec_ptr(c, e->buf, &e->idx, e->lanes, &align);
  LLVMValueRef v = LLVMBuildLoad2(c->g->b, lanes_type(c->g, e->dt, e->lanes), p, "");
  LLVMSetAlignment(v, align);
  return v;
}

// The scalar a in each of `lanes` lanes: insertelement, then a shuffle of lane 0.
static LLVMValueRef splat(LlvmModuleGen *g, LLVMValueRef a, int lanes) {
  LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(a), (unsigned)lanes);
  LLVMValueRef v = LLVMBuildInsertElement(g->b, LLVMGetPoison(vt), a, ci(g->i32, 0), "");
  return LLVMBuildShuffleVector(g->b, v, LLVMGetPoison(vt), LLVMConstNull(LLVMVectorType(g->i32, (unsigned)lanes)),
                                "");
}

LLVMValueRef llvm_expr(LlvmKernelGen *c, const LExpr *e) {
  LlvmModuleGen *g = c->g;
  switch (e->kind) {
  case LX_CONST:
    if (dtype_is_float(e->dt))
      return cf(vtype(g, e->dt), e->dt == DT_F64 ? e->f : (double)(float)e->f);
    if (e->dt == DT_BOOL)
      return ci(g->i1, e->i != 0);
    return ci(vtype(g, e->dt), e->dt == DT_I32 ? (int32_t)e->i : e->i);
  case LX_VAR: {
    TD_ASSERT(e->var >= 0 && e->var < c->k->nvars && c->vars[e->var]);
    return llvm_cast(g, c->vars[e->var], DT_I64, e->dt);
  }
  case LX_LOCAL: {
    TD_ASSERT(e->local >= 0 && e->local < c->k->locals.len);
    DType lt = c->k->locals.data[e->local];
    TD_ASSERT(c->lanes[e->local] == e->lanes);
    return llvm_cast(g, LLVMBuildLoad2(g->b, local_type(c, e->local), c->locals[e->local], ""), lt, e->dt);
  }
  case LX_LOAD: return e->lanes > 1 ? (g->gpu ? llvm_gpu_expr(c, e) : vec_load(c, e)) : load(c, e);
  case LX_UNARY:
  case LX_BINARY: {
    // Arithmetic typed f16/bf16 is done in f32 and rounded (never built by kernel.c).
    // Vectors (ADD SUB MUL of f32/f64) go through the same builders lane by lane.
    TD_ASSERT(e->lanes == 1 || !dtype_is_half(e->dt));
    LLVMValueRef a = llvm_expr(c, e->a);
    LLVMValueRef v = e->kind == LX_UNARY ? unary(c, e, a) : binary(c, e, a, llvm_expr(c, e->b));
    return dtype_is_half(e->dt) ? round_half(g, v, e->dt) : v;
  }
  case LX_SELECT: {  // both arms are evaluated: they are safe to
    LLVMValueRef cond = llvm_expr(c, e->a), a = llvm_expr(c, e->b), b = llvm_expr(c, e->c);
    return sel(g, cond, a, b);
  }
  case LX_CAST: return llvm_cast(g, llvm_expr(c, e->a), e->a->dt, e->dt);
  case LX_BITCAST: {  // a half is an f32 in registers: its bits are what storing it writes
    LLVMValueRef v = llvm_expr(c, e->a);
    if (!dtype_is_half(e->a->dt) && !dtype_is_half(e->dt)) return LLVMBuildBitCast(g->b, v, vtype(g, e->dt), "");
    if (dtype_is_half(e->a->dt)) v = e->a->dt == DT_F16 ? f2h(g, v) : f2bf(g, v);
    return e->dt == DT_F16 ? h2f(g, v) : e->dt == DT_BF16 ? bf2f(g, v) : v;
  }
  case LX_CHECKED_INDEX: {  // valid in [lo, n): the index (negative ones from the end), else raise and 0
    LLVMBuilderRef b = g->b;
    LLVMValueRef a = llvm_expr(c, e->a);
    if (LLVMTypeOf(a) != g->i64)
      a = llvm_cast(g, a, e->a->dt, DT_I64);
    LLVMValueRef n = ci(g->i64, e->i), lo = ci(g->i64, e->wrap ? -e->i : 0);
    LLVMValueRef ok =
        LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntSGE, a, lo, ""), LLVMBuildICmp(b, LLVMIntSLT, a, n, ""), "");
    LLVMValueRef wrapped = sel(g, LLVMBuildICmp(b, LLVMIntSLT, a, ci(g->i64, 0), ""), LLVMBuildAdd(b, a, n, ""), a);
    LLVMValueRef r = sel(g, ok, wrapped, ci(g->i64, 0));
    raise_if(c, LLVMBuildNot(b, ok, ""), e->err, a);
    return llvm_cast(g, r, DT_I64, e->dt);
  }
  case LX_FMA: {  // llvm.fmuladd: fused where the target has FMA (the IR allows either)
    TD_ASSERT(e->dt == DT_F32 || e->dt == DT_F64);
    LLVMValueRef args[3] = {llvm_expr(c, e->a), llvm_expr(c, e->b), llvm_expr(c, e->c)};
    return intrinsic(g, "llvm.fmuladd", lanes_type(g, e->dt, e->lanes), args, 3);
  }
  case LX_SPLAT: return splat(g, llvm_expr(c, e->a), e->lanes);
  case LX_SHUFFLE: {
    LLVMValueRef *m = arena_alloc(&g->cx->arena, sizeof *m * (size_t)e->lanes);
    for (int l = 0; l < e->lanes; l++)
      m[l] = ci(g->i32, e->sel[l]);
    return LLVMBuildShuffleVector(g->b, llvm_expr(c, e->a), llvm_expr(c, e->b), LLVMConstVector(m, (unsigned)e->lanes),
                                  "");
  }
  case LX_LANE: return LLVMBuildExtractElement(g->b, llvm_expr(c, e->a), ci(g->i32, e->i), "");
  case LX_SHFL:
  case LX_IDIV:
  case LX_INSERT:
  case LX_FRAG:
  case LX_MMA: return llvm_gpu_expr(c, e);  // the GPU form's (ir/loop.h)
  case LX_ARG: return c->scalars[e->i];  // a function's scalar parameter (llvm_build_func)
  case LX_COUNT: break;
  }
  td_unreachable();
}

// The value of dtype vt stored into a buffer of dtype bt (c.c's store_value).
LLVMValueRef llvm_store_value(LlvmKernelGen *c, DType vt, DType bt, const LExpr *val) {
  LlvmModuleGen *g = c->g;
  if (dtype_is_half(bt)) {
    if (val->kind == LX_CAST && val->dt == bt && val->a->dt == DT_F32)
      val = val->a, vt = DT_F32;  // f2h rounds as the cast would: round once
    LLVMValueRef v = llvm_cast(g, llvm_expr(c, val), vt, dtype_is_half(vt) ? vt : DT_F32);
    return bt == DT_F16 ? f2h(g, v) : f2bf(g, v);
  }
  LLVMValueRef v = llvm_cast(g, llvm_expr(c, val), vt, bt);
  return bt == DT_BOOL ? LLVMBuildZExt(g->b, v, g->i8, "") : v;
}
