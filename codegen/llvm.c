// codegen/llvm.c: the LLVM backend. Builds the loop IR of ir/loop.h with the LLVM 14
// C API into one module holding, per program, what the C backend (codegen/c.c)
// prints: kernels `tdsl_g_<fn>_<k>` taking raw noalias pointers, then the entry with
// the ABI of DESIGN.md, whose argument checks, copies and outputs live in
// runtime/entry.c and whose tables are the ones c.c emits. Then it verifies the
// module, optimises it for a TargetMachine of the host (or of --cpu), and
// writes .ll, assembly or an object, or hands the module to an ORC LLJIT.
//
// Invariants:
//   - every value computes bit for bit what c.c's C computes: the same formulas
//     (its prelude helpers are mirrored below op by op), in the same order, with no
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
//   - every name the module defines begins with tdsl_g_ except the entries;
//   - every LLVM object is disposed in the function that created it, and every
//     LLVM failure comes back as "<context>: <LLVM's message>".
// The GPU mode (llvm_build_gpu_module, for codegen/ptx.c) builds the same kernels
// with the same formulas but as NVPTX kernels: libdevice's __nv_* for the math the
// CPU gets from libm or LLVM intrinsics NVPTX cannot lower (and for fmod, which NVPTX
// would expand inexactly), the device error record instead of the runtime's, and
// no outlining: its own section below spreads loops over GPU threads.
#include "codegen/llvm.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Support.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

// The runtime functions a module may call; the JIT must be given each of them.
const char *const llvm_runtime_names[] = {
    "tdsl_entry_begin",        "tdsl_entry_end",          "tdsl_entry_kernel_error", "tdsl_tensor_data",
    "tdsl_parallel_for",       "tdsl_kernel_error_raise", "tdsl_kernel_error_seal",  NULL,
};

// ============================================================================
// Module-wide state: types and runtime declarations
// ============================================================================
typedef struct LG {
  Ctx *cx;
  LLVMContextRef lc;
  LLVMModuleRef m;
  LLVMBuilderRef b;
  LLVMTypeRef i1, i8, i16, i32, i64, f32, f64, vd, i8p;
  LLVMTypeRef tensor, tensorp, err, errp;
  LLVMTypeRef range_fn;  // void (i8*, i64, i64)
  LLVMValueRef ipow[DT_COUNT];
  bool gpu;                // the GPU mode (llvm_build_gpu_module): libdevice math, device error record
  LLVMTypeRef gerr, gerrp;  // GPU: tdsl_gpu_error {flag, k, value}
} LG;

typedef struct KG {
  LG *g;
  const LProgram *p;
  const LKernel *k;
  const char *kname;     // "tdsl_g_<fn>_<k>"
  LLVMValueRef fn;       // the function being built
  LLVMValueRef *args;    // per kernel arg: a typed pointer
  LLVMValueRef *vars;    // per loop variable: its i64 value where bound, else NULL
  int *depth;            // per loop variable: how many loops enclose its own (shared with outlined bodies)
  int level;             // the loops enclosing the statement being built
  LLVMValueRef *locals;  // per local: an alloca in fn
  int *lanes;            // per local: its lanes (loop_local_lanes)
  LLVMValueRef errp;     // the error record, NULL when nothing raises
  LLVMValueRef iter;     // the parallel loop's iteration inside an outlined body, else NULL
  bool has_err;
  int npar;              // outlined bodies so far
} KG;

static bool is_half(DType dt) { return dt == DT_F16 || dt == DT_BF16; }
static DType compute_type(DType dt) { return is_half(dt) ? DT_F32 : dt; }
static bool is_fl(DType dt) { return dtype_is_float(dt); }

// The type a value of dt is carried in.
static LLVMTypeRef vtype(LG *g, DType dt) {
  switch (dt) {
  case DT_BOOL: return g->i1;
  case DT_I32: return g->i32;
  case DT_I64: return g->i64;
  case DT_F16:
  case DT_BF16:
  case DT_F32: return g->f32;
  case DT_F64: return g->f64;
  case DT_COUNT: break;
  }
  td_unreachable();
}

// The type an element of a dt buffer is stored as.
static LLVMTypeRef stype(LG *g, DType dt) {
  switch (dt) {
  case DT_BOOL: return g->i8;
  case DT_F16:
  case DT_BF16: return g->i16;
  default: return vtype(g, dt);
  }
}

// A value of dt in `lanes` lanes: vtype, or <lanes x vtype>.
static LLVMTypeRef lanes_type(LG *g, DType dt, int lanes) {
  LLVMTypeRef t = vtype(g, dt);
  return lanes > 1 ? LLVMVectorType(t, (unsigned)lanes) : t;
}

static LLVMValueRef ci(LLVMTypeRef t, int64_t v) { return LLVMConstInt(t, (unsigned long long)v, v < 0); }
static LLVMValueRef cf(LLVMTypeRef t, double v) { return LLVMConstReal(t, v); }

static void add_attr(LG *g, LLVMValueRef fn, LLVMAttributeIndex at, const char *name) {
  unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
  TD_ASSERT(kind != 0);
  LLVMAddAttributeAtIndex(fn, at, LLVMCreateEnumAttribute(g->lc, kind, 0));
}

// Internal, and its address is never compared: mergefunc may replace the function
// by an identical one everywhere (the kernels of repeated layers are the same code).
static void set_internal(LLVMValueRef fn) {
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  LLVMSetUnnamedAddress(fn, LLVMGlobalUnnamedAddr);
}

// A function declared (or found) by name.
static LLVMValueRef declare(LG *g, const char *name, LLVMTypeRef ft) {
  LLVMValueRef f = LLVMGetNamedFunction(g->m, name);
  if (!f) {
    f = LLVMAddFunction(g->m, name, ft);
    add_attr(g, f, LLVMAttributeFunctionIndex, "nounwind");
  }
  return f;
}

static LLVMValueRef call(LG *g, const char *name, LLVMTypeRef ret, LLVMTypeRef *pt, int np, LLVMValueRef *args) {
  LLVMTypeRef ft = LLVMFunctionType(ret, pt, (unsigned)np, 0);
  return LLVMBuildCall2(g->b, ft, declare(g, name, ft), args, (unsigned)np, "");
}

// llvm.NAME overloaded on t.
static LLVMValueRef intrinsic(LG *g, const char *name, LLVMTypeRef t, LLVMValueRef *args, int n) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  TD_ASSERT(id != 0);
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(g->m, id, &t, 1);
  LLVMTypeRef ft = LLVMIntrinsicGetType(g->lc, id, &t, 1);
  return LLVMBuildCall2(g->b, ft, f, args, (unsigned)n, "");
}

static LLVMValueRef intrinsic1(LG *g, const char *name, LLVMValueRef a) {
  return intrinsic(g, name, LLVMTypeOf(a), &a, 1);
}

// ---- streaming stores (LArg.stream) ----
// The loop vectorizer refuses a scalar store marked !nontemporal unless it is aligned
// to two elements, so the mark is made after optimisation, on the vector stores: a
// store of a streamed arg carries a !tbaa tag of its own through the vectorizers
// (which keep !tbaa; no load has a tag, so it changes no alias answer), each streamed
// pointer is assumed 64-byte aligned (every storage is, runtime/storage.c), and
// instcombine raises a vector store's alignment where it follows from that. Then
// mark_streams makes every tagged vector store of 16, 32 or 64 bytes whose alignment
// covers its size non-temporal (MOVNTPS and kin need it; any other store stays as is),
// and one of a wider power of two aligned to 64 (the vectors of ir/gemm.c's schedule:
// the target splits it into stores of at most 64 bytes that each stay aligned). The
// explicit vector stores of LExpr lanes carry the tag as the scalar ones do.
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
static void assume_stream_aligned(KG *c) {
  LG *g = c->g;
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
static void fence_streams(KG *c) {
  for (int i = 0; i < c->k->args.len; i++)
    if (c->k->args.data[i].stream && !c->g->gpu) {
      LLVMBuildFence(c->g->b, LLVMAtomicOrderingSequentiallyConsistent, 0, "");
      return;
    }
}

// After optimisation: the tagged vector stores that may stream get !nontemporal.
static void mark_streams(LLVMContextRef lc, LLVMModuleRef m) {
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

// libm's NAME (float: NAMEf) of one or two arguments; on the GPU libdevice's
// __nv_NAME (__nv_NAMEf).
static LLVMValueRef libm(LG *g, const char *name, DType dt, LLVMValueRef a, LLVMValueRef b) {
  LLVMTypeRef t = vtype(g, dt);
  const char *fn = dt == DT_F64 ? name : arena_printf(&g->cx->arena, "%sf", name);
  if (g->gpu)
    fn = arena_printf(&g->cx->arena, "__nv_%s", fn);
  LLVMTypeRef pt[2] = {t, t};
  LLVMValueRef args[2] = {a, b};
  return call(g, fn, t, pt, b ? 2 : 1, args);
}

// llvm.NAME of a float (the CPU lowers it to libm), or libdevice's function of the
// same meaning on the GPU, where NVPTX cannot lower these intrinsics.
static LLVMValueRef math1(LG *g, const char *name, DType dt, LLVMValueRef a) {
  if (g->gpu)
    return libm(g, name, dt, a, NULL);
  return intrinsic1(g, arena_printf(&g->cx->arena, "llvm.%s", name), a);
}

// C's fmod: frem on the CPU; on the GPU libdevice's fmod (NVPTX expands frem to
// a - trunc(a / b) * b, which is not exact).
static LLVMValueRef fmod_(LG *g, DType dt, LLVMValueRef a, LLVMValueRef b) {
  if (g->gpu)
    return libm(g, "fmod", dt, a, b);
  return LLVMBuildFRem(g->b, a, b, "");
}

static void init_types(LG *g) {
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

// A private constant global string; returns an i8* to its first byte.
static LLVMValueRef cstring(LG *g, const char *s) {
  LLVMValueRef init = LLVMConstStringInContext(g->lc, s, (unsigned)strlen(s), 0);
  LLVMValueRef gv = LLVMAddGlobal(g->m, LLVMTypeOf(init), "tdsl_g_str");
  LLVMSetInitializer(gv, init);
  LLVMSetLinkage(gv, LLVMPrivateLinkage);
  LLVMSetGlobalConstant(gv, 1);
  LLVMSetUnnamedAddress(gv, LLVMGlobalUnnamedAddr);
  LLVMValueRef zero[2] = {ci(g->i32, 0), ci(g->i32, 0)};
  return LLVMConstInBoundsGEP2(LLVMTypeOf(init), gv, zero, 2);
}

static LLVMValueRef private_const(LG *g, const char *name, LLVMValueRef init) {
  LLVMValueRef gv = LLVMAddGlobal(g->m, LLVMTypeOf(init), name);
  LLVMSetInitializer(gv, init);
  LLVMSetLinkage(gv, LLVMPrivateLinkage);
  LLVMSetGlobalConstant(gv, 1);
  return gv;
}

// ============================================================================
// f16 / bf16 by bit arithmetic (c.c's tdsl_g_h2f, f2h, bf2f, f2bf; branch-free)
// ============================================================================
static LLVMValueRef sel(LG *g, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(g->b, c, a, b, "");
}
static LLVMValueRef u32(LG *g, uint32_t v) { return LLVMConstInt(g->i32, v, 0); }

static LLVMValueRef h2f(LG *g, LLVMValueRef h) {
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

static LLVMValueRef f2h(LG *g, LLVMValueRef f) {
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

static LLVMValueRef bf2f(LG *g, LLVMValueRef h) {
  LLVMValueRef x = LLVMBuildShl(g->b, LLVMBuildZExt(g->b, h, g->i32, ""), u32(g, 16), "");
  return LLVMBuildBitCast(g->b, x, g->f32, "");
}

static LLVMValueRef f2bf(LG *g, LLVMValueRef f) {
  LLVMBuilderRef b = g->b;
  LLVMValueRef u = LLVMBuildBitCast(b, f, g->i32, "");
  LLVMValueRef hi = LLVMBuildLShr(b, u, u32(g, 16), "");
  LLVMValueRef nan = LLVMBuildICmp(b, LLVMIntUGT, LLVMBuildAnd(b, u, u32(g, 0x7fffffff), ""), u32(g, 0x7f800000), "");
  LLVMValueRef quiet = LLVMBuildOr(b, hi, u32(g, 0x40), "");
  LLVMValueRef bias = LLVMBuildAdd(b, u32(g, 0x7fff), LLVMBuildAnd(b, hi, u32(g, 1), ""), "");
  LLVMValueRef rounded = LLVMBuildLShr(b, LLVMBuildAdd(b, u, bias, ""), u32(g, 16), "");
  return LLVMBuildTrunc(b, sel(g, nan, quiet, rounded), g->i16, "");
}

static LLVMValueRef round_half(LG *g, LLVMValueRef f, DType to) {
  return to == DT_F16 ? h2f(g, f2h(g, f)) : bf2f(g, f2bf(g, f));
}

// ============================================================================
// Casts (c.c's cast_text)
// ============================================================================
// A float or int value of dtype `from` converted by C's (float)/(double).
static LLVMValueRef to_float(LG *g, LLVMValueRef v, DType from, DType to) {
  LLVMTypeRef t = vtype(g, to);
  if (is_fl(from)) {
    DType cf_ = compute_type(from);
    if (cf_ == to)
      return v;
    return cf_ == DT_F64 ? LLVMBuildFPTrunc(g->b, v, t, "") : LLVMBuildFPExt(g->b, v, t, "");
  }
  if (from == DT_BOOL)
    return LLVMBuildUIToFP(g->b, v, t, "");
  return LLVMBuildSIToFP(g->b, v, t, "");
}

// Truncation toward zero; nan or out of range gives the minimum (c.c's tdsl_g_f2i*:
// the value goes through double, and fptosi only ever sees an in-range one).
static LLVMValueRef f2i(LG *g, LLVMValueRef v, DType from, DType to) {
  LLVMBuilderRef b = g->b;
  LLVMValueRef x = compute_type(from) == DT_F64 ? v : LLVMBuildFPExt(b, v, g->f64, "");
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

static LLVMValueRef cast(LG *g, LLVMValueRef v, DType from, DType to) {
  if (from == to)
    return v;
  LLVMBuilderRef b = g->b;
  if (to == DT_BOOL) {
    if (is_fl(from))
      return LLVMBuildFCmp(b, LLVMRealUNE, v, cf(LLVMTypeOf(v), 0), "");
    return LLVMBuildICmp(b, LLVMIntNE, v, ci(LLVMTypeOf(v), 0), "");
  }
  if (is_half(to)) {
    if (from != DT_F32 && !is_half(from))
      v = to_float(g, v, from, DT_F32);  // via f32, as PyTorch does
    return round_half(g, v, to);
  }
  if (is_fl(to)) {
    if (to == DT_F32 && is_half(from))
      return v;  // carried as f32 already
    return to_float(g, v, from, to);
  }
  if (is_fl(from))
    return f2i(g, v, from, to);
  if (from == DT_BOOL)
    return LLVMBuildZExt(b, v, vtype(g, to), "");
  if (to == DT_I32)
    return LLVMBuildTrunc(b, v, g->i32, "");  // wraps
  return LLVMBuildSExt(b, v, g->i64, "");
}

// ============================================================================
// Scalar expressions
// ============================================================================
static TD_NORETURN void unsupported(const LExpr *e, DType dt) {
  td_internal_error(__FILE__, __LINE__, "llvm backend: op '%s' on %s", op_name(e->op), dtype_name(dt));
}

static LLVMBasicBlockRef new_block(KG *c, const char *name) {
  return LLVMAppendBasicBlockInContext(c->g->lc, c->fn, name);
}

// On the GPU: the first raise sets err->flag from 0 to 1 (cmpxchg, atomicCAS) and
// then writes k and the value; later raises change nothing.
static void gpu_raise(KG *c, int err, LLVMValueRef value) {
  LG *g = c->g;
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

// if (cond) tdsl_kernel_error_raise(err, k, value, iteration): a cold block.
static void raise_if(KG *c, LLVMValueRef cond, int err, LLVMValueRef value) {
  if (err < 0 || !c->has_err)
    return;
  TD_ASSERT(err < c->k->errors.len);
  LG *g = c->g;
  LLVMBasicBlockRef yes = new_block(c, "raise"), cont = new_block(c, "raised");
  LLVMBuildCondBr(g->b, cond, yes, cont);
  LLVMPositionBuilderAtEnd(g->b, yes);
  if (LLVMTypeOf(value) != g->i64)
    value = LLVMBuildSExt(g->b, value, g->i64, "");
  if (g->gpu) {
    gpu_raise(c, err, value);
    LLVMBuildBr(g->b, cont);
    LLVMPositionBuilderAtEnd(g->b, cont);
    return;
  }
  LLVMTypeRef pt[] = {g->errp, g->i32, g->i64, g->i64};
  LLVMValueRef args[] = {c->errp, ci(g->i32, err), value, c->iter ? c->iter : ci(g->i64, INT64_MAX)};
  call(g, "tdsl_kernel_error_raise", g->vd, pt, 4, args);
  LLVMBuildBr(g->b, cont);
  LLVMPositionBuilderAtEnd(g->b, cont);
}

static LLVMValueRef expr(KG *c, const LExpr *e);

// The exact integer power a ** b, wrapping; b < 0 gives PyTorch's answer (c.c's
// tdsl_g_pow_* without an error): an internal always-inline function with a loop.
static LLVMValueRef ipow_fn(LG *g, DType dt) {
  if (g->ipow[dt])
    return g->ipow[dt];
  LLVMTypeRef t = vtype(g, dt), pt[2] = {t, t};
  LLVMValueRef f = LLVMAddFunction(g->m, dt == DT_I32 ? "tdsl_g_pow_i32" : "tdsl_g_pow_i64", LLVMFunctionType(t, pt, 2, 0));
  set_internal(f);
  add_attr(g, f, LLVMAttributeFunctionIndex, "nounwind");
  add_attr(g, f, LLVMAttributeFunctionIndex, "alwaysinline");
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

static LLVMValueRef unary(KG *c, const LExpr *e, LLVMValueRef a) {
  LG *g = c->g;
  LLVMBuilderRef b = g->b;
  DType dt = compute_type(e->dt);
  bool fl = is_fl(dt), in = dtype_is_int(dt), bo = dt == DT_BOOL;
  LLVMTypeRef t = vtype(g, dt);
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
    if (fl) {
      LLVMValueRef nan = sel(g, LLVMBuildFCmp(b, LLVMRealUNO, a, a, ""), a, cf(t, 0));
      return sel(g, LLVMBuildFCmp(b, LLVMRealOGT, a, cf(t, 0), ""), a, nan);
    }
    if (bo)
      return a;
    return sel(g, LLVMBuildICmp(b, LLVMIntSGT, a, ci(t, 0), ""), a, ci(t, 0));
  case OP_SQUARE:
    if (bo)
      return a;
    return fl ? LLVMBuildFMul(b, a, a, "") : LLVMBuildMul(b, a, a, "");
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
  LLVMValueRef one = cf(t, 1);
  switch (e->op) {
  case OP_EXP: return math1(g, "exp", dt, a);
  case OP_LOG: return math1(g, "log", dt, a);
  case OP_LOG2: return math1(g, "log2", dt, a);
  case OP_EXP2: return math1(g, "exp2", dt, a);
  case OP_SQRT: return intrinsic1(g, "llvm.sqrt", a);
  case OP_RSQRT: return LLVMBuildFDiv(b, one, intrinsic1(g, "llvm.sqrt", a), "");
  case OP_RECIPROCAL: return LLVMBuildFDiv(b, one, a, "");
  case OP_SIN: return math1(g, "sin", dt, a);
  case OP_COS: return math1(g, "cos", dt, a);
  case OP_TAN: return libm(g, "tan", dt, a, NULL);
  case OP_TANH: return libm(g, "tanh", dt, a, NULL);
  case OP_ERF: return libm(g, "erf", dt, a, NULL);
  case OP_SIGMOID:  // 1 / (1 + exp(-a))
    return LLVMBuildFDiv(b, one, LLVMBuildFAdd(b, one, math1(g, "exp", dt, LLVMBuildFNeg(b, a, "")), ""), "");
  case OP_SILU:  // a / (1 + exp(-a))
    return LLVMBuildFDiv(b, a, LLVMBuildFAdd(b, one, math1(g, "exp", dt, LLVMBuildFNeg(b, a, "")), ""), "");
  case OP_GELU: {  // a * 0.5 * (1 + erf(a * 0.70710678118654752440))
    LLVMValueRef h = LLVMBuildFMul(b, a, cf(t, 0.5), "");
    double r2 = dt == DT_F32 ? (double)0.70710678118654752440f : 0.70710678118654752440;
    LLVMValueRef er = libm(g, "erf", dt, LLVMBuildFMul(b, a, cf(t, r2), ""), NULL);
    return LLVMBuildFMul(b, h, LLVMBuildFAdd(b, one, er, ""), "");
  }
  default: unsupported(e, dt);
  }
}

// PyTorch's div_floor (c.c's tdsl_g_floordiv_f*), branch-free.
static LLVMValueRef floordiv_float(LG *g, LLVMTypeRef t, LLVMValueRef a, LLVMValueRef bv) {
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

static LLVMValueRef binary(KG *c, const LExpr *e, LLVMValueRef a, LLVMValueRef bv) {
  LG *g = c->g;
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
    if (is_fl(ot)) {
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
  DType dt = compute_type(e->dt);
  bool fl = is_fl(dt), in = dtype_is_int(dt), bo = dt == DT_BOOL;
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
      return libm(g, "pow", dt, a, bv);
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
  case OP_ATAN2:
    if (!fl)
      unsupported(e, dt);
    return libm(g, "atan2", dt, a, bv);
  default: unsupported(e, dt);
  }
}

// sum coef * var + base (+ dyn): an i64; with_base false leaves base out. The terms
// are added outermost loop first and the constant last, so the accesses of a nest
// share one sum per loop that LICM hoists and CSE merges (a tile's accesses then
// differ by their constants alone), and ScalarEvolution and the vectorizers see a
// few short expressions, not one long chain per access.
static LLVMValueRef index(KG *c, const LIndex *ix, bool with_base) {
  LG *g = c->g;
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
    LLVMValueRef d = expr(c, ix->dyn);
    if (LLVMTypeOf(d) != g->i64)
      d = cast(g, d, ix->dyn->dt, DT_I64);
    v = LLVMBuildNSWAdd(g->b, v, d, "");
  }
  return v;
}

static DType arg_dtype(const KG *c, int arg) {
  TD_ASSERT(arg >= 0 && arg < c->k->args.len);
  return c->p->bufs.data[c->k->args.data[arg].buf].dtype;
}

// &arg[ix]. When every term is non-negative, the element at the loop terms alone
// lies in the buffer too: that is one GEP, shared by the accesses that differ by their
// constants only, and a second GEP adds the constant (an x86 displacement). The SLP
// vectorizer then has one index computation to look at where it had one per access.
static LLVMValueRef elem_ptr(KG *c, int arg, const LIndex *ix) {
  LLVMBuilderRef b = c->g->b;
  LLVMTypeRef t = stype(c->g, arg_dtype(c, arg));
  bool split = ix->base > 0 && !ix->dyn;
  for (int k = 0; k < ix->nterms && split; k++)
    split = ix->coef[k] >= 0;
  LLVMValueRef i = index(c, ix, !split);
  LLVMValueRef p = LLVMBuildInBoundsGEP2(b, t, c->args[arg], &i, 1, "");
  if (!split)
    return p;
  LLVMValueRef d = ci(c->g->i64, ix->base);
  return LLVMBuildInBoundsGEP2(b, t, p, &d, 1, "");
}

static LLVMValueRef load(KG *c, const LExpr *e) {
  LG *g = c->g;
  DType bt = arg_dtype(c, e->buf);
  LLVMValueRef v = LLVMBuildLoad2(g->b, stype(g, bt), elem_ptr(c, e->buf, &e->idx), "");
  if (bt == DT_F16)
    v = h2f(g, v);
  else if (bt == DT_BF16)
    v = bf2f(g, v);
  else if (bt == DT_BOOL)
    v = LLVMBuildICmp(g->b, LLVMIntNE, v, ci(g->i8, 0), "");
  return cast(g, v, bt, e->dt);
}

// ---- vector lanes (ir/loop.h's Lanes) ----
// The type local l is carried in: its dtype's, in its lanes.
static LLVMTypeRef local_type(KG *c, int l) { return lanes_type(c->g, c->k->locals.data[l], c->lanes[l]); }

// &arg[ix] as a pointer to `lanes` consecutive elements. Vector buffers are stored as
// they are carried (f32, f64, i32, i64); an access keeps the element's alignment
// (*align): the IR promises no more, and instcombine raises it where it can prove it.
static LLVMValueRef vec_ptr(KG *c, int arg, const LIndex *ix, int lanes, unsigned *align) {
  DType bt = arg_dtype(c, arg);
  TD_ASSERT(lanes > 1 && !is_half(bt) && bt != DT_BOOL);
  *align = (unsigned)dtype_size(bt);
  return LLVMBuildBitCast(c->g->b, elem_ptr(c, arg, ix), LLVMPointerType(lanes_type(c->g, bt, lanes), 0), "");
}

static LLVMValueRef vec_load(KG *c, const LExpr *e) {
  unsigned align;
  LLVMValueRef p = vec_ptr(c, e->buf, &e->idx, e->lanes, &align);
  LLVMValueRef v = LLVMBuildLoad2(c->g->b, lanes_type(c->g, e->dt, e->lanes), p, "");
  LLVMSetAlignment(v, align);
  return v;
}

// The scalar a in each of `lanes` lanes: insertelement, then a shuffle of lane 0.
static LLVMValueRef splat(LG *g, LLVMValueRef a, int lanes) {
  LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(a), (unsigned)lanes);
  LLVMValueRef v = LLVMBuildInsertElement(g->b, LLVMGetPoison(vt), a, ci(g->i32, 0), "");
  return LLVMBuildShuffleVector(g->b, v, LLVMGetPoison(vt), LLVMConstNull(LLVMVectorType(g->i32, (unsigned)lanes)),
                                "");
}

static LLVMValueRef expr(KG *c, const LExpr *e) {
  LG *g = c->g;
  switch (e->kind) {
  case LX_CONST:
    if (is_fl(e->dt))
      return cf(vtype(g, e->dt), e->dt == DT_F64 ? e->f : (double)(float)e->f);
    if (e->dt == DT_BOOL)
      return ci(g->i1, e->i != 0);
    return ci(vtype(g, e->dt), e->dt == DT_I32 ? (int32_t)e->i : e->i);
  case LX_VAR: {
    TD_ASSERT(e->var >= 0 && e->var < c->k->nvars && c->vars[e->var]);
    return cast(g, c->vars[e->var], DT_I64, e->dt);
  }
  case LX_LOCAL: {
    TD_ASSERT(e->local >= 0 && e->local < c->k->locals.len);
    DType lt = c->k->locals.data[e->local];
    TD_ASSERT(c->lanes[e->local] == e->lanes);
    return cast(g, LLVMBuildLoad2(g->b, local_type(c, e->local), c->locals[e->local], ""), lt, e->dt);
  }
  case LX_LOAD: return e->lanes > 1 ? vec_load(c, e) : load(c, e);
  case LX_UNARY:
  case LX_BINARY: {
    // Arithmetic typed f16/bf16 is done in f32 and rounded (never built by kernel.c).
    // Vectors (ADD SUB MUL of f32/f64) go through the same builders lane by lane.
    TD_ASSERT(e->lanes == 1 || !is_half(e->dt));
    LLVMValueRef a = expr(c, e->a);
    LLVMValueRef v = e->kind == LX_UNARY ? unary(c, e, a) : binary(c, e, a, expr(c, e->b));
    return is_half(e->dt) ? round_half(g, v, e->dt) : v;
  }
  case LX_SELECT: {  // both arms are evaluated: they are safe to
    LLVMValueRef cond = expr(c, e->a), a = expr(c, e->b), b = expr(c, e->c);
    return sel(g, cond, a, b);
  }
  case LX_CAST: return cast(g, expr(c, e->a), e->a->dt, e->dt);
  case LX_BITCAST: return LLVMBuildBitCast(g->b, expr(c, e->a), vtype(g, e->dt), "");
  case LX_CHECKED_INDEX: {  // valid in [lo, n): the index (negative ones from the end), else raise and 0
    LLVMBuilderRef b = g->b;
    LLVMValueRef a = expr(c, e->a);
    if (LLVMTypeOf(a) != g->i64)
      a = cast(g, a, e->a->dt, DT_I64);
    LLVMValueRef n = ci(g->i64, e->i), lo = ci(g->i64, e->wrap ? -e->i : 0);
    LLVMValueRef ok = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntSGE, a, lo, ""), LLVMBuildICmp(b, LLVMIntSLT, a, n, ""), "");
    LLVMValueRef wrapped = sel(g, LLVMBuildICmp(b, LLVMIntSLT, a, ci(g->i64, 0), ""), LLVMBuildAdd(b, a, n, ""), a);
    LLVMValueRef r = sel(g, ok, wrapped, ci(g->i64, 0));
    raise_if(c, LLVMBuildNot(b, ok, ""), e->err, a);
    return cast(g, r, DT_I64, e->dt);
  }
  case LX_FMA: {  // llvm.fmuladd: fused where the target has FMA (the IR allows either)
    TD_ASSERT(e->dt == DT_F32 || e->dt == DT_F64);
    LLVMValueRef args[3] = {expr(c, e->a), expr(c, e->b), expr(c, e->c)};
    return intrinsic(g, "llvm.fmuladd", lanes_type(g, e->dt, e->lanes), args, 3);
  }
  case LX_SPLAT: return splat(g, expr(c, e->a), e->lanes);
  case LX_LANE: return LLVMBuildExtractElement(g->b, expr(c, e->a), ci(g->i32, e->i), "");
  case LX_COUNT: break;
  }
  td_unreachable();
}

// ============================================================================
// Statements, loops, outlined parallel loops
// ============================================================================
// An alloca at the top of the current function's entry block.
static LLVMValueRef entry_alloca(KG *c, LLVMTypeRef t) {
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

static void stmts(KG *c, const LStmtList *l);

// for (var = lo; var < hi; var++) body, rotated (the test at the bottom); with
// maybe_empty the preheader tests lo < hi first. iter: also bind c->iter to it.
static void counted_loop(KG *c, int var, LLVMValueRef lo, LLVMValueRef hi, bool maybe_empty, bool iter,
                         const LStmtList *body) {
  LG *g = c->g;
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
  stmts(c, body);
  c->level--;
  LLVMValueRef next = LLVMBuildNSWAdd(b, phi, ci(g->i64, 1), "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, next, hi, ""), head, exit);
  LLVMValueRef in[2] = {lo, next};
  LLVMBasicBlockRef from[2] = {pre, latch};
  LLVMAddIncoming(phi, in, from, 2);
  LLVMMoveBasicBlockAfter(exit, latch);
  LLVMPositionBuilderAtEnd(b, exit);
  c->vars[var] = saved;
  c->iter = saved_iter;
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

static void scan_locals(const LStmtList *l, bool *read, bool *let) {
  for (int i = 0; i < l->len; i++) {
    const LStmt *s = l->data[i];
    scan_locals_expr(s->val, read);
    scan_locals_expr(s->cond, read);
    if (s->kind == LS_STORE)
      scan_locals_expr(s->idx.dyn, read);
    if (s->kind == LS_LET)
      let[s->local] = true;
    scan_locals(&s->body, read, let);
  }
}

static LLVMTypeRef arg_ptr_type(KG *c, int arg) { return LLVMPointerType(stype(c->g, arg_dtype(c, arg)), 0); }

// Marks the pointer parameters [first, first + nargs) of fn noalias nocapture, and
// readonly where the kernel never writes through them.
static void pointer_attrs(KG *c, LLVMValueRef fn, int first) {
  for (int i = 0; i < c->k->args.len; i++) {
    LLVMAttributeIndex at = (LLVMAttributeIndex)(first + i + 1);
    add_attr(c->g, fn, at, "noalias");
    add_attr(c->g, fn, at, "nocapture");
    if (!c->k->args.data[i].written)
      add_attr(c->g, fn, at, "readonly");
  }
}

// The outermost parallel loop of a kernel: its body becomes an internal function
// over [begin, end) that tdsl_parallel_for runs, its captured state in a ctx struct.
static void parallel_loop(KG *c, const LStmt *s) {
  LG *g = c->g;
  LLVMBuilderRef b = g->b;
  const LKernel *k = c->k;
  int nargs = k->args.len, nl = k->locals.len, nv = k->nvars;
  bool *read = arena_alloc(&g->cx->arena, (size_t)nl + 1), *let = arena_alloc(&g->cx->arena, (size_t)nl + 1);
  scan_locals(&s->body, read, let);
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
    call(g, "tdsl_kernel_error_seal", g->vd, pt, 1, &c->errp);
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
  add_attr(g, inner, LLVMAttributeFunctionIndex, "nounwind");
  LLVMBasicBlockRef saved = LLVMGetInsertBlock(b);
  KG sub = *c;
  sub.fn = inner;
  pointer_attrs(&sub, inner, 0);
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
  counted_loop(&sub, s->var, begin, end, true, true, &s->body);
  fence_streams(&sub);
  LLVMBuildRetVoid(b);
  c->npar = sub.npar;

  // void NAME(void *ctx, i64 begin, i64 end): unpacks ctx and runs the body
  LLVMValueRef range = LLVMAddFunction(g->m, name, g->range_fn);
  set_internal(range);
  add_attr(g, range, LLVMAttributeFunctionIndex, "nounwind");
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(g->lc, range, "entry"));
  LLVMValueRef cp = LLVMBuildBitCast(b, LLVMGetParam(range, 0), LLVMPointerType(ctxty, 0), "");
  for (int i = 0; i < nf; i++)
    fv[i] = LLVMBuildLoad2(b, ft[i], LLVMBuildStructGEP2(b, ctxty, cp, (unsigned)i, ""), "");
  fv[nf] = LLVMGetParam(range, 1), fv[nf + 1] = LLVMGetParam(range, 2);
  LLVMBuildCall2(b, LLVMFunctionType(g->vd, ft, (unsigned)nf + 2, 0), inner, fv, (unsigned)nf + 2, "");
  LLVMBuildRetVoid(b);

  // tdsl_parallel_for(extent, 1, NAME, &ctx)
  LLVMPositionBuilderAtEnd(b, saved);
  LLVMTypeRef pt[] = {g->i64, g->i64, LLVMPointerType(g->range_fn, 0), g->i8p};
  LLVMValueRef args[] = {ci(g->i64, s->extent), ci(g->i64, 1), range, LLVMBuildBitCast(b, ctx, g->i8p, "")};
  call(g, "tdsl_parallel_for", g->vd, pt, 4, args);
}

// The value of dtype vt stored into a buffer of dtype bt (c.c's store_value).
static LLVMValueRef store_value(KG *c, DType vt, DType bt, const LExpr *val) {
  LG *g = c->g;
  if (is_half(bt)) {
    if (val->kind == LX_CAST && val->dt == bt && val->a->dt == DT_F32)
      val = val->a, vt = DT_F32;  // f2h rounds as the cast would: round once
    LLVMValueRef v = cast(g, expr(c, val), vt, is_half(vt) ? vt : DT_F32);
    return bt == DT_F16 ? f2h(g, v) : f2bf(g, v);
  }
  LLVMValueRef v = cast(g, expr(c, val), vt, bt);
  return bt == DT_BOOL ? LLVMBuildZExt(g->b, v, g->i8, "") : v;
}

static void stmt(KG *c, const LStmt *s) {
  LG *g = c->g;
  LLVMBuilderRef b = g->b;
  switch (s->kind) {
  case LS_LOOP:
    if (s->extent <= 0)
      return;
    if (s->parallel && !c->iter && !g->gpu)  // on the GPU the mapping is decided by gpu_kernel
      parallel_loop(c, s);
    else
      counted_loop(c, s->var, ci(g->i64, 0), ci(g->i64, s->extent), false, false, &s->body);
    return;
  case LS_STORE: {
    TD_ASSERT(c->k->args.data[s->buf].written);
    LLVMValueRef st;
    if (s->val->lanes > 1) {  // buf[idx + 0..lanes): the buffer has the value's dtype
      TD_ASSERT(arg_dtype(c, s->buf) == s->val->dt);
      unsigned align;
      LLVMValueRef p = vec_ptr(c, s->buf, &s->idx, s->val->lanes, &align);
      st = LLVMBuildStore(b, expr(c, s->val), p);
      LLVMSetAlignment(st, align);
    } else {
      LLVMValueRef p = elem_ptr(c, s->buf, &s->idx);
      st = LLVMBuildStore(b, store_value(c, s->val->dt, arg_dtype(c, s->buf), s->val), p);
    }
    if (c->k->args.data[s->buf].stream && !g->gpu)
      LLVMSetMetadata(st, LLVMGetMDKindIDInContext(g->lc, "tbaa", 4), stream_tag(g->lc));
    return;
  }
  case LS_LET:
  case LS_SET: {
    TD_ASSERT(s->local >= 0 && s->local < c->k->locals.len);
    DType lt = c->k->locals.data[s->local];
    LLVMBuildStore(b, cast(g, expr(c, s->val), s->val->dt, lt), c->locals[s->local]);
    return;
  }
  case LS_IF: {
    LLVMValueRef cond = expr(c, s->cond);
    LLVMBasicBlockRef then = new_block(c, "then"), cont = new_block(c, "endif");
    LLVMBuildCondBr(b, cond, then, cont);
    LLVMPositionBuilderAtEnd(b, then);
    stmts(c, &s->body);
    LLVMMoveBasicBlockAfter(cont, LLVMGetInsertBlock(b));
    LLVMBuildBr(b, cont);
    LLVMPositionBuilderAtEnd(b, cont);
    return;
  }
  case LS_COUNT: break;
  }
  td_unreachable();
}

static void stmts(KG *c, const LStmtList *l) {
  for (int i = 0; i < l->len; i++)
    stmt(c, l->data[i]);
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
// Kernels and entries
// ============================================================================
// static int tdsl_g_<fn>_<k>(noalias pointers): the loops, then the first error.
static LLVMValueRef build_kernel(LG *g, const LProgram *p, int ki) {
  const LKernel *k = p->kernels.data[ki];
  KG c = {.g = g, .p = p, .k = k};
  c.kname = arena_printf(&g->cx->arena, "tdsl_g_%s_%s", p->name, k->name);
  c.has_err = stmts_raise(&k->body);
  int nargs = k->args.len;
  LLVMTypeRef *pt = arena_alloc(&g->cx->arena, sizeof *pt * (size_t)(nargs + 1));
  for (int i = 0; i < nargs; i++)
    pt[i] = arg_ptr_type(&c, i);
  c.fn = LLVMAddFunction(g->m, c.kname, LLVMFunctionType(g->i32, pt, (unsigned)nargs, 0));
  set_internal(c.fn);
  add_attr(g, c.fn, LLVMAttributeFunctionIndex, "nounwind");
  pointer_attrs(&c, c.fn, 0);
  LLVMBuilderRef b = g->b;
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(g->lc, c.fn, "entry"));
  c.args = arena_alloc(&g->cx->arena, sizeof(LLVMValueRef) * (size_t)(nargs + 1));
  for (int i = 0; i < nargs; i++)
    c.args[i] = LLVMGetParam(c.fn, (unsigned)i);
  assume_stream_aligned(&c);
  c.vars = arena_alloc(&g->cx->arena, sizeof(LLVMValueRef) * (size_t)(k->nvars + 1));
  c.depth = arena_alloc(&g->cx->arena, sizeof(int) * (size_t)(k->nvars + 1));
  c.locals = arena_alloc(&g->cx->arena, sizeof(LLVMValueRef) * (size_t)(k->locals.len + 1));
  c.lanes = arena_alloc(&g->cx->arena, sizeof(int) * (size_t)(k->locals.len + 1));
  loop_local_lanes(k, c.lanes);
  for (int l = 0; l < k->locals.len; l++)
    c.locals[l] = LLVMBuildAlloca(b, local_type(&c, l), "");
  if (c.has_err) {  // {-1, 0, 0, INT64_MAX}
    c.errp = LLVMBuildAlloca(b, g->err, "err");
    LLVMValueRef init[] = {ci(g->i32, -1), ci(g->i32, 0), ci(g->i64, 0), ci(g->i64, INT64_MAX)};
    LLVMBuildStore(b, LLVMConstNamedStruct(g->err, init, 4), c.errp);
  }
  stmts(&c, &k->body);
  fence_streams(&c);
  if (!c.has_err) {
    LLVMBuildRet(b, ci(g->i32, 0));
    return c.fn;
  }
  // return err.k < 0 ? 0 : tdsl_entry_kernel_error(errors[err.k], err.value)
  int ne = k->errors.len;
  LLVMValueRef *msgs = arena_alloc(&g->cx->arena, sizeof *msgs * (size_t)(ne + 1));
  for (int i = 0; i < ne; i++)
    msgs[i] = cstring(g, k->errors.data[i]);
  LLVMValueRef table = private_const(g, arena_printf(&g->cx->arena, "%s_errors", c.kname),
                                     LLVMConstArray(g->i8p, msgs, (unsigned)ne));
  LLVMValueRef ek = LLVMBuildLoad2(b, g->i32, LLVMBuildStructGEP2(b, g->err, c.errp, 0, ""), "");
  LLVMValueRef ev = LLVMBuildLoad2(b, g->i64, LLVMBuildStructGEP2(b, g->err, c.errp, 2, ""), "");
  LLVMBasicBlockRef ok = new_block(&c, "ok"), fail = new_block(&c, "fail");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, ek, ci(g->i32, 0), ""), ok, fail);
  LLVMPositionBuilderAtEnd(b, ok);
  LLVMBuildRet(b, ci(g->i32, 0));
  LLVMPositionBuilderAtEnd(b, fail);
  LLVMValueRef at[2] = {ci(g->i64, 0), LLVMBuildSExt(b, ek, g->i64, "")};
  LLVMValueRef msg = LLVMBuildLoad2(b, g->i8p, LLVMBuildInBoundsGEP2(b, LLVMArrayType(g->i8p, (unsigned)ne), table, at, 2, ""), "");
  LLVMTypeRef kt[] = {g->i8p, g->i64};
  LLVMValueRef kargs[] = {msg, ev};
  LLVMBuildRet(b, call(g, "tdsl_entry_kernel_error", g->i32, kt, 2, kargs));
  return c.fn;
}

static LLVMValueRef dims_const(LG *g, int n, const int64_t *xs) {
  LLVMValueRef v[TD_MAX_DIMS];
  for (int i = 0; i < TD_MAX_DIMS; i++)
    v[i] = ci(g->i64, i < n ? xs[i] : 0);
  return LLVMConstArray(g->i64, v, TD_MAX_DIMS);
}

// A private constant array of n structs (each already a constant), as an i8*; NULL if n is 0.
static LLVMValueRef table_const(LG *g, const char *name, LLVMValueRef *elems, int n) {
  if (n == 0)
    return LLVMConstPointerNull(g->i8p);
  LLVMValueRef gv = private_const(g, name, LLVMConstArray(LLVMTypeOf(elems[0]), elems, (unsigned)n));
  return LLVMConstBitCast(gv, g->i8p);
}

// The static tables of runtime/entry.c, as c.c emits them; returns &info as an i8*.
static LLVMValueRef entry_tables(LG *g, const LProgram *p) {
  Arena *ar = &g->cx->arena;
  const char *fn = p->name;
  int np = p->params.len, nb = p->bufs.len, no = p->outputs.len;
  LLVMValueRef *ps = arena_alloc(ar, sizeof *ps * (size_t)(np + 1));
  for (int i = 0; i < np; i++) {  // {name, dtype, ndim, shape, mut, buf}
    const LParam *q = &p->params.data[i];
    LLVMValueRef f[] = {cstring(g, q->name), ci(g->i32, q->dtype), ci(g->i32, q->ndim),
                        dims_const(g, q->ndim, q->shape), ci(g->i32, q->mut), ci(g->i32, q->buf)};
    ps[i] = LLVMConstStructInContext(g->lc, f, 6, 0);
  }
  LLVMValueRef *bs = arena_alloc(ar, sizeof *bs * (size_t)(nb + 1));
  for (int i = 0; i < nb; i++) {  // {dtype, numel, param}
    const LBuf *lb = &p->bufs.data[i];
    LLVMValueRef f[] = {ci(g->i32, lb->dtype), ci(g->i64, lb->numel), ci(g->i32, lb->kind == LB_PARAM ? lb->param : -1)};
    bs[i] = LLVMConstStructInContext(g->lc, f, 3, 0);
  }
  LLVMValueRef *os = arena_alloc(ar, sizeof *os * (size_t)(no + 1));
  for (int k = 0; k < no; k++) {  // {buf, ndim, shape, strides, offset}
    const LOutput *o = &p->outputs.data[k];
    LLVMValueRef f[] = {ci(g->i32, o->buf), ci(g->i32, o->view.ndim), dims_const(g, o->view.ndim, o->view.shape),
                        dims_const(g, o->view.ndim, o->view.strides), ci(g->i64, o->view.offset)};
    os[k] = LLVMConstStructInContext(g->lc, f, 5, 0);
  }
  LLVMValueRef info[] = {cstring(g, fn),
                         ci(g->i32, np),
                         table_const(g, arena_printf(ar, "tdsl_g_%s_params", fn), ps, np),
                         ci(g->i32, nb),
                         table_const(g, arena_printf(ar, "tdsl_g_%s_bufs", fn), bs, nb),
                         ci(g->i32, no),
                         table_const(g, arena_printf(ar, "tdsl_g_%s_outputs", fn), os, no)};
  LLVMValueRef gv = private_const(g, arena_printf(ar, "tdsl_g_%s_info", fn), LLVMConstStructInContext(g->lc, info, 7, 0));
  return LLVMConstBitCast(gv, g->i8p);
}

// A local array of n values of type t (NULL as an i8* when n is 0), filled with vals.
static LLVMValueRef local_array(LG *g, LLVMTypeRef t, LLVMValueRef *vals, int n) {
  if (n == 0)
    return LLVMConstPointerNull(g->i8p);
  LLVMTypeRef at = LLVMArrayType(t, (unsigned)n);
  LLVMValueRef a = LLVMBuildAlloca(g->b, at, "");
  for (int i = 0; vals && i < n; i++) {
    LLVMValueRef idx[2] = {ci(g->i64, 0), ci(g->i64, i)};
    LLVMBuildStore(g->b, vals[i], LLVMBuildInBoundsGEP2(g->b, at, a, idx, 2, ""));
  }
  return LLVMBuildBitCast(g->b, a, g->i8p, "");
}

// int NAME(const tdsl_tensor *x, ..., tdsl_tensor *out0, ...): c.c's entry.
static LLVMValueRef build_entry(LG *g, const LProgram *p, LLVMValueRef *kernels) {
  Arena *ar = &g->cx->arena;
  int np = p->params.len, nb = p->bufs.len, no = p->outputs.len;
  LLVMValueRef info = entry_tables(g, p);
  LLVMTypeRef *pt = arena_alloc(ar, sizeof *pt * (size_t)(np + no + 1));
  for (int i = 0; i < np + no; i++)
    pt[i] = g->tensorp;
  LLVMValueRef fn = LLVMAddFunction(g->m, p->name, LLVMFunctionType(g->i32, pt, (unsigned)(np + no), 0));
  add_attr(g, fn, LLVMAttributeFunctionIndex, "nounwind");
  LLVMValueRef *pv = arena_alloc(ar, sizeof *pv * (size_t)(np + no + 1));
  for (int i = 0; i < np + no; i++) {
    pv[i] = LLVMGetParam(fn, (unsigned)i);
    const char *n = i < np ? p->params.data[i].name : arena_printf(ar, "out%d", i - np);
    LLVMSetValueName2(pv[i], n, strlen(n));
  }
  LLVMBuilderRef b = g->b;
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(g->lc, fn, "entry");
  LLVMBasicBlockRef run = LLVMAppendBasicBlockInContext(g->lc, fn, "run");
  LLVMBasicBlockRef fail = LLVMAppendBasicBlockInContext(g->lc, fn, "fail");
  LLVMPositionBuilderAtEnd(b, entry);
  LLVMValueRef args = local_array(g, g->tensorp, pv, np);
  LLVMValueRef outs = local_array(g, g->tensorp, pv + np, no);
  LLVMValueRef bufs = nb ? LLVMBuildAlloca(b, LLVMArrayType(g->tensor, (unsigned)nb), "") : NULL;
  LLVMValueRef bufp = bufs ? LLVMBuildBitCast(b, bufs, g->i8p, "") : LLVMConstPointerNull(g->i8p);
  LLVMTypeRef bt[] = {g->i8p, g->i8p, g->i8p, g->i8p, g->i32};
  LLVMValueRef ba[] = {info, args, outs, bufp};
  LLVMValueRef rc = call(g, "tdsl_entry_begin", g->i32, bt, 4, ba);
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntNE, rc, ci(g->i32, 0), ""), fail, run);
  LLVMPositionBuilderAtEnd(b, fail);
  LLVMBuildRet(b, rc);
  // rc = k0(...); if (rc == 0) rc = k1(...); ...
  LLVMPositionBuilderAtEnd(b, run);
  int nk = p->kernels.len, nrc = 0;
  LLVMValueRef *rcs = arena_alloc(ar, sizeof *rcs * (size_t)(nk + 1));
  LLVMBasicBlockRef *from = arena_alloc(ar, sizeof *from * (size_t)(nk + 1));
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->lc, fn, "done");
  LLVMValueRef last = ci(g->i32, 0);
  for (int ki = 0; ki < p->kernels.len; ki++) {
    const LKernel *k = p->kernels.data[ki];
    if (ki > 0) {
      LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(g->lc, fn, "kernel");
      LLVMMoveBasicBlockBefore(next, done);
      rcs[nrc] = last, from[nrc++] = LLVMGetInsertBlock(b);
      LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, last, ci(g->i32, 0), ""), next, done);
      LLVMPositionBuilderAtEnd(b, next);
    }
    LLVMValueRef *ka = arena_alloc(ar, sizeof *ka * (size_t)(k->args.len + 1));
    LLVMTypeRef *kt = arena_alloc(ar, sizeof *kt * (size_t)(k->args.len + 1));
    for (int a = 0; a < k->args.len; a++) {
      LLVMValueRef at[2] = {ci(g->i64, 0), ci(g->i64, k->args.data[a].buf)};
      LLVMValueRef t = LLVMBuildInBoundsGEP2(b, LLVMArrayType(g->tensor, (unsigned)nb), bufs, at, 2, "");
      LLVMTypeRef dt[] = {g->tensorp};
      LLVMValueRef data = call(g, "tdsl_tensor_data", g->i8p, dt, 1, &t);
      kt[a] = LLVMPointerType(stype(g, p->bufs.data[k->args.data[a].buf].dtype), 0);
      ka[a] = LLVMBuildBitCast(b, data, kt[a], "");
    }
    last = LLVMBuildCall2(b, LLVMFunctionType(g->i32, kt, (unsigned)k->args.len, 0), kernels[ki], ka,
                          (unsigned)k->args.len, "");
  }
  rcs[nrc] = last, from[nrc++] = LLVMGetInsertBlock(b);
  LLVMBuildBr(b, done);
  LLVMPositionBuilderAtEnd(b, done);
  LLVMValueRef phi = LLVMBuildPhi(b, g->i32, "rc");
  LLVMAddIncoming(phi, rcs, from, (unsigned)nrc);
  LLVMValueRef ea[] = {info, args, outs, bufp, phi};
  LLVMBuildRet(b, call(g, "tdsl_entry_end", g->i32, bt, 5, ea));
  return fn;
}

// int tdsl_g_run_NAME(const tdsl_tensor *const *args, tdsl_tensor *outs): the packed caller.
static void build_run_wrapper(LG *g, const LProgram *p, LLVMValueRef entry) {
  Arena *ar = &g->cx->arena;
  int np = p->params.len, no = p->outputs.len;
  LLVMTypeRef pt[] = {LLVMPointerType(g->tensorp, 0), g->tensorp};
  LLVMValueRef fn = LLVMAddFunction(g->m, arena_printf(ar, "tdsl_g_run_%s", p->name), LLVMFunctionType(g->i32, pt, 2, 0));
  add_attr(g, fn, LLVMAttributeFunctionIndex, "nounwind");
  LLVMBuilderRef b = g->b;
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(g->lc, fn, "entry"));
  LLVMValueRef *a = arena_alloc(ar, sizeof *a * (size_t)(np + no + 1));
  LLVMTypeRef *at = arena_alloc(ar, sizeof *at * (size_t)(np + no + 1));
  for (int i = 0; i < np; i++) {
    LLVMValueRef ix = ci(g->i64, i);
    a[i] = LLVMBuildLoad2(b, g->tensorp, LLVMBuildInBoundsGEP2(b, g->tensorp, LLVMGetParam(fn, 0), &ix, 1, ""), "");
    at[i] = g->tensorp;
  }
  for (int k = 0; k < no; k++) {
    LLVMValueRef ix = ci(g->i64, k);
    a[np + k] = LLVMBuildInBoundsGEP2(b, g->tensor, LLVMGetParam(fn, 1), &ix, 1, "");
    at[np + k] = g->tensorp;
  }
  LLVMBuildRet(b, LLVMBuildCall2(b, LLVMFunctionType(g->i32, at, (unsigned)(np + no), 0), entry, a,
                                 (unsigned)(np + no), ""));
}

struct LLVMOpaqueModule *llvm_build_module(Ctx *cx, struct LLVMOpaqueContext *lc, LProgram *const *progs, int nprogs,
                                           const char *triple, const char *data_layout, bool run_wrappers) {
  LG g = {.cx = cx, .lc = lc};
  init_types(&g);
  g.m = LLVMModuleCreateWithNameInContext(nprogs ? progs[0]->file : "tdsl", lc);
  if (triple)
    LLVMSetTarget(g.m, triple);
  if (data_layout)
    LLVMSetDataLayout(g.m, data_layout);
  g.b = LLVMCreateBuilderInContext(lc);
  for (int i = 0; i < nprogs; i++) {
    const LProgram *p = progs[i];
    LLVMValueRef *ks = arena_alloc(&cx->arena, sizeof *ks * (size_t)(p->kernels.len + 1));
    for (int k = 0; k < p->kernels.len; k++)
      ks[k] = build_kernel(&g, p, k);
    LLVMValueRef entry = build_entry(&g, p, ks);
    if (run_wrappers)
      build_run_wrapper(&g, p, entry);
  }
  LLVMDisposeBuilder(g.b);
  return g.m;
}

// ============================================================================
// The GPU mode: kernels for NVPTX (codegen/ptx.c)
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
typedef struct GAccess {
  int arg;
  const LIndex *idx;
  bool store;
} GAccess;
typedef VEC(GAccess) GAccessList;

typedef struct GScan {
  Arena *ar;
  GAccessList acc;
  int64_t *ext;  // per loop variable bound in the scanned code: its extent
} GScan;

static void gscan_expr(GScan *s, const LExpr *e) {
  if (!e)
    return;
  if (e->kind == LX_LOAD) {
    GAccess a = {e->buf, &e->idx, false};
    vec_push(s->ar, &s->acc, a);
    gscan_expr(s, e->idx.dyn);
  }
  gscan_expr(s, e->a);
  gscan_expr(s, e->b);
  gscan_expr(s, e->c);
}

static void gscan(GScan *s, const LStmt *st) {
  switch (st->kind) {
  case LS_LOOP:
    if (st->extent <= 0)
      return;  // never runs
    s->ext[st->var] = st->extent;
    for (int i = 0; i < st->body.len; i++)
      gscan(s, st->body.data[i]);
    return;
  case LS_STORE: {
    GAccess a = {st->buf, &st->idx, true};
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
  scan_locals_expr(st->val, used);
  scan_locals_expr(st->cond, used);
  if (st->kind == LS_STORE)
    scan_locals_expr(st->idx.dyn, used);
  if (st->kind == LS_LET || st->kind == LS_SET)
    used[st->local] = true;
  scan_locals(&st->body, used, used);
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
  GScan s = {ar, {0}, ext};
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
      const GAccess *a = &s.acc.data[i];
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
  GScan sa = {ar, {0}, arena_alloc(ar, sizeof(int64_t) * (size_t)(nv + 1))};
  GScan sb = {ar, {0}, arena_alloc(ar, sizeof(int64_t) * (size_t)(nv + 1))};
  gscan(&sa, a);
  gscan(&sb, b);
  for (int i = 0; i < sa.acc.len; i++)
    for (int j = 0; j < sb.acc.len; j++) {
      const GAccess *x = &sa.acc.data[i], *y = &sb.acc.data[j];
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
static LLVMValueRef sreg(LG *g, const char *name) {
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
static LLVMValueRef mul_wide(LG *g, const char *a, const char *b) {
  LLVMValueRef args[2] = {LLVMBuildTrunc(g->b, sreg(g, a), g->i32, ""), LLVMBuildTrunc(g->b, sreg(g, b), g->i32, "")};
  LLVMTypeRef pt[2] = {g->i32, g->i32};
  LLVMTypeRef ft = LLVMFunctionType(g->i64, pt, 2, 0);
  static char text[] = "mul.wide.u32 $0, $1, $2;", cons[] = "=l,r,r";
  LLVMValueRef f = LLVMGetInlineAsm(ft, text, strlen(text), cons, strlen(cons), 0, 0, LLVMInlineAsmDialectATT, 0);
  return LLVMBuildCall2(g->b, ft, f, args, 2, "");
}

// if (cond) { s } on the current thread.
static void stmt_if(KG *c, LLVMValueRef cond, const LStmt *s, const LStmtList *l) {
  LG *g = c->g;
  LLVMBasicBlockRef then = new_block(c, "then"), cont = new_block(c, "endif");
  LLVMBuildCondBr(g->b, cond, then, cont);
  LLVMPositionBuilderAtEnd(g->b, then);
  if (s)
    stmt(c, s);
  else
    stmts(c, l);
  LLVMMoveBasicBlockAfter(cont, LLVMGetInsertBlock(g->b));
  LLVMBuildBr(g->b, cont);
  LLVMPositionBuilderAtEnd(g->b, cont);
}

// for (f = gtid; f < total; f += nthreads): the loops chain[0..m) of the nest of s
// get their indices from f, row-major (in i32 when total fits), then the body of
// the innermost runs.
static void grid_stride(KG *c, const LStmt *s, int m, LLVMValueRef gtid, LLVMValueRef nthreads) {
  LG *g = c->g;
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
  stmts(c, &chain[m - 1]->body);
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
static LLVMValueRef build_gpu_kernel(LG *g, const LProgram *p, int ki, int64_t *iters) {
  const LKernel *k = p->kernels.data[ki];
  Arena *ar = &g->cx->arena;
  KG c = {.g = g, .p = p, .k = k};
  c.kname = arena_printf(ar, "tdsl_g_%s_%s", p->name, k->name);
  c.has_err = stmts_raise(&k->body);
  int nargs = k->args.len;
  LLVMTypeRef *pt = arena_alloc(ar, sizeof *pt * (size_t)(nargs + 1));
  pt[0] = g->gerrp;
  for (int i = 0; i < nargs; i++)
    pt[i + 1] = arg_ptr_type(&c, i);
  c.fn = LLVMAddFunction(g->m, c.kname, LLVMFunctionType(g->vd, pt, (unsigned)nargs + 1, 0));
  add_attr(g, c.fn, LLVMAttributeFunctionIndex, "nounwind");
  pointer_attrs(&c, c.fn, 1);
  LLVMBuilderRef b = g->b;
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(g->lc, c.fn, "entry"));
  c.errp = LLVMGetParam(c.fn, 0);
  c.args = arena_alloc(ar, sizeof(LLVMValueRef) * (size_t)(nargs + 1));
  for (int i = 0; i < nargs; i++)
    c.args[i] = LLVMGetParam(c.fn, (unsigned)i + 1);
  c.vars = arena_alloc(ar, sizeof(LLVMValueRef) * (size_t)(k->nvars + 1));
  c.depth = arena_alloc(ar, sizeof(int) * (size_t)(k->nvars + 1));
  c.locals = arena_alloc(ar, sizeof(LLVMValueRef) * (size_t)(k->locals.len + 1));
  c.lanes = arena_alloc(ar, sizeof(int) * (size_t)(k->locals.len + 1));
  loop_local_lanes(k, c.lanes);
  for (int l = 0; l < k->locals.len; l++)
    c.locals[l] = LLVMBuildAlloca(b, local_type(&c, l), "");
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
  LG g = {.cx = cx, .lc = lc, .gpu = true};
  init_types(&g);
  g.gerr = LLVMStructCreateNamed(lc, "tdsl_g_gpu_error");  // {flag, k, value}
  LLVMTypeRef ef[] = {g.i32, g.i32, g.i64};
  LLVMStructSetBody(g.gerr, ef, 3, 0);
  g.gerrp = LLVMPointerType(g.gerr, 0);
  g.m = LLVMModuleCreateWithNameInContext(nprogs ? progs[0]->file : "tdsl", lc);
  if (triple)
    LLVMSetTarget(g.m, triple);
  if (data_layout)
    LLVMSetDataLayout(g.m, data_layout);
  g.b = LLVMCreateBuilderInContext(lc);
  int n = 0;
  for (int i = 0; i < nprogs; i++)
    for (int k = 0; k < progs[i]->kernels.len; k++, n++)
      build_gpu_kernel(&g, progs[i], k, &iters[n]);
  LLVMDisposeBuilder(g.b);
  return g.m;
}

// ============================================================================
// Verification, optimisation, output, JIT
// ============================================================================
// "context: message" in the arena; the LLVM message is disposed here.
static const char *llvm_message(Ctx *cx, const char *context, char *msg) {
  const char *r = arena_printf(&cx->arena, "%s: %s", context, msg && *msg ? msg : "(no message)");
  if (msg)
    LLVMDisposeMessage(msg);
  return r;
}

static const char *error_message(Ctx *cx, const char *context, LLVMErrorRef e) {
  char *msg = LLVMGetErrorMessage(e);  // consumes e
  const char *r = arena_printf(&cx->arena, "%s: %s", context, msg);
  LLVMDisposeErrorMessage(msg);
  return r;
}

static void lap(const LlvmOptions *o, const char *stage) {
  if (o->lap)
    o->lap(o->lap_ctx, stage);
}

static void init_native(void) {
  static bool done;
  if (done)
    return;
  LLVMInitializeNativeTarget();
  LLVMInitializeNativeAsmPrinter();
  LLVMInitializeNativeAsmParser();
  // Process-wide codegen options, for every TargetMachine here and the JIT's, at every
  // -O. Loop strength reduction costs more than all the rest of a compile on tiled
  // nests (its formula search grows with the address uses of a nest), and x86
  // addressing modes already take base + index * 4 + displacement. FastISel selects
  // what it can (the scalar code) and leaves the rest of a block, the vector loop
  // bodies, to SelectionDAG, whose code there is the same. Parsed once: LLVM keeps
  // options, and a second parse of one is an error.
  const char *argv[] = {"tdslc", "-disable-lsr", "-fast-isel"};
  LLVMParseCommandLineOptions(3, argv, NULL);
  done = true;
}

// A TargetMachine for the host, or for o->cpu with no extra features.
static const char *make_target_machine(Ctx *cx, const LlvmOptions *o, LLVMTargetMachineRef *tm) {
  init_native();
  char *triple = LLVMGetDefaultTargetTriple();
  LLVMTargetRef t;
  char *msg = NULL;
  const char *err = NULL;
  if (LLVMGetTargetFromTriple(triple, &t, &msg)) {
    err = llvm_message(cx, arena_printf(&cx->arena, "llvm: target '%s'", triple), msg);
    LLVMDisposeMessage(triple);
    return err;
  }
  if (msg)
    LLVMDisposeMessage(msg);
  static const LLVMCodeGenOptLevel levels[] = {LLVMCodeGenLevelNone, LLVMCodeGenLevelLess, LLVMCodeGenLevelDefault,
                                               LLVMCodeGenLevelAggressive};
  LLVMCodeGenOptLevel level = levels[o->opt < 0 ? 0 : o->opt > 3 ? 3 : o->opt];
  if (o->cpu) {
    *tm = LLVMCreateTargetMachine(t, triple, o->cpu, "", level, LLVMRelocPIC, LLVMCodeModelDefault);
  } else {
    char *cpu = LLVMGetHostCPUName(), *features = LLVMGetHostCPUFeatures();
    *tm = LLVMCreateTargetMachine(t, triple, cpu, features, level, LLVMRelocPIC, LLVMCodeModelDefault);
    LLVMDisposeMessage(cpu);
    LLVMDisposeMessage(features);
  }
  if (!*tm)
    err = arena_printf(&cx->arena, "llvm: cannot create a target machine for '%s'", triple);
  LLVMDisposeMessage(triple);
  return err;
}

// -O2, the default: the passes the loop nests of ir/loop.h need, at a small part of
// the cost of default<O2> (which spends most of it inlining, unrolling and re-running
// scalar passes over code that has nothing for them). In order: mergefunc keeps one
// copy of identical kernels (x @ wq, x @ wk and x @ wv are one loop nest on other
// pointers); always-inline takes in the integer pow helpers; sroa puts locals in
// registers; early-cse and licm leave one index sum per loop, hoisted (see index());
// loop-vectorize (interleaving as its cost model picks) and slp-vectorizer (for the
// lanes ir/sched.c unrolls), then instcombine and simplifycfg clean up after them.
// The kernels keep their calls: a parallel body's noalias parameters tell the
// vectorizers what inlining would.
static const char *const O2_PASSES = "mergefunc,always-inline,function(sroa,early-cse,simplifycfg,loop-mssa(licm),"
                                     "loop-vectorize,slp-vectorizer,instcombine,simplifycfg)";

// With AVX-512 on the host, 512-bit vectors: LLVM prefers 256 bits for every CPU
// that has them (the clock may drop on some); the benchmarks run faster at 512.
static void prefer_host_vectors(LLVMContextRef lc, LLVMModuleRef m, LLVMTargetMachineRef tm) {
  char *features = LLVMGetTargetMachineFeatureString(tm);
  bool avx512 = strstr(features, "+avx512f") != NULL;
  LLVMDisposeMessage(features);
  if (!avx512)
    return;
  static const char key[] = "prefer-vector-width", val[] = "512";
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f))
      LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                              LLVMCreateStringAttribute(lc, key, sizeof key - 1, val, sizeof val - 1));
}

// Builds progs into a module of lc for tm, verifies it and optimises it (O2_PASSES,
// else default<On>). On success *out owns the module; on failure it is disposed here.
static const char *build_verified(Ctx *cx, LLVMContextRef lc, LProgram *const *progs, int nprogs,
                                  const LlvmOptions *o, LLVMTargetMachineRef tm, bool run_wrappers,
                                  LLVMModuleRef *out) {
  char *triple = LLVMGetTargetMachineTriple(tm);
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
  char *layout = LLVMCopyStringRepOfTargetData(td);
  LLVMModuleRef m = llvm_build_module(cx, lc, progs, nprogs, triple, layout, run_wrappers);
  LLVMDisposeMessage(layout);
  LLVMDisposeTargetData(td);
  LLVMDisposeMessage(triple);
  lap(o, "llvm-ir");
  char *msg = NULL;
  const char *err = NULL;
  if (LLVMVerifyModule(m, LLVMReturnStatusAction, &msg))
    err = llvm_message(cx, "llvm: the generated module does not verify", msg), msg = NULL;
  if (msg)
    LLVMDisposeMessage(msg);
  lap(o, "verify");
  if (!err) {
    char passes[32];
    int opt = o->opt < 0 ? 0 : o->opt > 3 ? 3 : o->opt;
    snprintf(passes, sizeof passes, "default<O%d>", opt);
    prefer_host_vectors(lc, m, tm);
    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    LLVMPassBuilderOptionsSetLoopVectorization(po, opt >= 2);
    LLVMPassBuilderOptionsSetSLPVectorization(po, opt >= 2);
    LLVMPassBuilderOptionsSetLoopInterleaving(po, opt >= 2);
    LLVMPassBuilderOptionsSetLoopUnrolling(po, opt >= 2);
    LLVMErrorRef e = LLVMRunPasses(m, opt == 2 ? O2_PASSES : passes, tm, po);
    LLVMDisposePassBuilderOptions(po);
    if (e)
      err = error_message(cx, "llvm: optimizing", e);
    else
      mark_streams(lc, m);
    lap(o, "optimize");
  }
  if (err) {
    LLVMDisposeModule(m);
    return err;
  }
  *out = m;
  return NULL;
}

const char *llvm_emit(Ctx *cx, LProgram *const *progs, int nprogs, const LlvmOptions *o, LlvmOut kind, FILE *out) {
  LLVMTargetMachineRef tm = NULL;
  const char *err = make_target_machine(cx, o, &tm);
  if (err)
    return err;
  LLVMContextRef lc = LLVMContextCreate();
  LLVMModuleRef m = NULL;
  err = build_verified(cx, lc, progs, nprogs, o, tm, false, &m);
  if (!err && kind == LLVM_OUT_IR) {
    char *text = LLVMPrintModuleToString(m);
    fputs(text, out);
    LLVMDisposeMessage(text);
  } else if (!err) {
    LLVMMemoryBufferRef mb = NULL;
    char *msg = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, m, kind == LLVM_OUT_ASM ? LLVMAssemblyFile : LLVMObjectFile, &msg,
                                            &mb)) {
      err = llvm_message(cx, "llvm: emitting code", msg);
    } else {
      if (msg)
        LLVMDisposeMessage(msg);
      fwrite(LLVMGetBufferStart(mb), 1, LLVMGetBufferSize(mb), out);
      LLVMDisposeMemoryBuffer(mb);
    }
  }
  lap(o, "emit");
  if (m)
    LLVMDisposeModule(m);
  LLVMContextDispose(lc);
  LLVMDisposeTargetMachine(tm);
  return err;
}

// The libm and libc functions LLVM may call from generated code: the ones the ops
// use, the ones it turns instructions into (frem: fmod; sin and cos: sincos;
// rounding without SSE4.1; exp2 of an int: ldexp) and loop idioms (memset, memcpy).
typedef void (*VoidFn)(void);
extern void sincosf(float, float *, float *);
extern void sincos(double, double *, double *);
#define LIBM2(x) {#x "f", (VoidFn)x##f}, {#x, (VoidFn)x}
static const struct {
  const char *name;
  VoidFn fn;
} libc_symbols[] = {
    LIBM2(exp),   LIBM2(log),   LIBM2(log2),  LIBM2(exp2),      LIBM2(sqrt),  LIBM2(sin),   LIBM2(cos),
    LIBM2(tan),   LIBM2(tanh),  LIBM2(erf),   LIBM2(atan2),     LIBM2(pow),   LIBM2(fmod),  LIBM2(floor),
    LIBM2(ceil),  LIBM2(rint),  LIBM2(nearbyint), LIBM2(trunc), LIBM2(round), LIBM2(fabs),  LIBM2(copysign),
    LIBM2(ldexp), LIBM2(sincos), LIBM2(fmin), LIBM2(fmax),      {"memset", (VoidFn)memset},
    {"memcpy", (VoidFn)memcpy},   {"memmove", (VoidFn)memmove},
};
#undef LIBM2

// Defines each of the given symbols in jd at its address here, but for a libc name
// that one of progs defines itself (an entry may be called like a libm function that
// sema does not know, e.g. sincos): the module's own definition wins.
static LLVMErrorRef define_symbols(LLVMOrcLLJITRef jit, LLVMOrcJITDylibRef jd, const LlvmSymbol *rt, int nrt,
                                   LProgram *const *progs, int nprogs) {
  int nlib = (int)(sizeof libc_symbols / sizeof *libc_symbols), n = 0;
  LLVMJITCSymbolMapPair *pairs = calloc((size_t)(nrt + nlib), sizeof *pairs);
  TD_ASSERT(pairs);
  LLVMJITSymbolFlags flags = {LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable, 0};
  for (int i = 0; i < nrt + nlib; i++) {
    const char *name = i < nrt ? rt[i].name : libc_symbols[i - nrt].name;
    VoidFn fn = i < nrt ? rt[i].addr : libc_symbols[i - nrt].fn;
    bool own = false;
    for (int p = 0; p < nprogs && i >= nrt; p++)
      own |= strcmp(progs[p]->name, name) == 0;
    if (own)
      continue;
    pairs[n].Name = LLVMOrcLLJITMangleAndIntern(jit, name);
    pairs[n].Sym.Address = (LLVMOrcExecutorAddress)(uintptr_t)fn;
    pairs[n++].Sym.Flags = flags;
  }
  LLVMOrcMaterializationUnitRef mu = LLVMOrcAbsoluteSymbols(pairs, (size_t)n);  // takes the names
  free(pairs);
  LLVMErrorRef e = LLVMOrcJITDylibDefine(jd, mu);
  if (e)
    LLVMOrcDisposeMaterializationUnit(mu);
  return e;
}

// The JIT's session errors (a symbol that cannot be resolved, ...) arrive here rather
// than on stderr; the first one explains a failed lookup.
typedef struct SessionErrors {
  Ctx *cx;
  const char *first;
} SessionErrors;

static void session_error(void *ctx, LLVMErrorRef e) {
  SessionErrors *se = ctx;
  char *msg = LLVMGetErrorMessage(e);
  if (!se->first)
    se->first = arena_strdup(&se->cx->arena, msg);
  LLVMDisposeErrorMessage(msg);
}

const char *llvm_jit_run(Ctx *cx, LProgram *const *progs, int nprogs, const LlvmOptions *o, const LlvmSymbol *rt,
                         int nrt, const char *const *names, int nnames, int (*use)(void *ctx, void *const *addrs),
                         void *ctx, int *use_rc) {
  LLVMTargetMachineRef tm = NULL;
  const char *err = make_target_machine(cx, o, &tm);
  if (err)
    return err;
  LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
  LLVMModuleRef m = NULL;
  err = build_verified(cx, LLVMOrcThreadSafeContextGetContext(tsc), progs, nprogs, o, tm, true, &m);
  LLVMDisposeTargetMachine(tm);
  LLVMOrcLLJITRef jit = NULL;
  LLVMErrorRef e = NULL;
  if (!err && (e = LLVMOrcCreateLLJIT(&jit, LLVMOrcCreateLLJITBuilder())))
    err = error_message(cx, "llvm jit: creating the JIT", e), jit = NULL;
  SessionErrors se = {cx, NULL};
  if (jit)
    LLVMOrcExecutionSessionSetErrorReporter(LLVMOrcLLJITGetExecutionSession(jit), session_error, &se);
  LLVMOrcJITDylibRef jd = jit ? LLVMOrcLLJITGetMainJITDylib(jit) : NULL;
  if (!err && (e = define_symbols(jit, jd, rt, nrt, progs, nprogs)))
    err = error_message(cx, "llvm jit: defining the runtime's symbols", e);
  if (!err) {
    LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(m, tsc);  // takes m
    m = NULL;
    if ((e = LLVMOrcLLJITAddLLVMIRModule(jit, jd, tsm))) {
      LLVMOrcDisposeThreadSafeModule(tsm);
      err = error_message(cx, "llvm jit: adding the module", e);
    }
  }
  if (m)
    LLVMDisposeModule(m);
  LLVMOrcDisposeThreadSafeContext(tsc);  // the module keeps it alive while it needs it
  void **addrs = arena_alloc(&cx->arena, sizeof *addrs * (size_t)(nnames + 1));
  for (int i = 0; i < nnames && !err; i++) {
    LLVMOrcExecutorAddress a = 0;
    if ((e = LLVMOrcLLJITLookup(jit, &a, names[i]))) {
      err = error_message(cx, arena_printf(&cx->arena, "llvm jit: looking up '%s'", names[i]), e);
      if (se.first)
        err = arena_printf(&cx->arena, "%s (%s)", err, se.first);
    }
    addrs[i] = (void *)(uintptr_t)a;
  }
  lap(o, "jit");
  if (!err)
    *use_rc = use(ctx, addrs);
  if (jit && (e = LLVMOrcDisposeLLJIT(jit)) && !err)
    err = error_message(cx, "llvm jit: disposing the JIT", e);
  else if (e)
    LLVMConsumeError(e);
  return err;
}

// The Target of codegen.h: the optimised .ll of the host; failures are internal errors.
static void llvm_emit_target(Ctx *cx, LProgram *const *progs, int nprogs, FILE *out) {
  LlvmOptions o = {.opt = 2};
  const char *err = llvm_emit(cx, progs, nprogs, &o, LLVM_OUT_IR, out);
  if (err)
    td_internal_error(__FILE__, __LINE__, "%s", err);
}

const Target target_llvm = {"llvm", ".ll", llvm_emit_target};
