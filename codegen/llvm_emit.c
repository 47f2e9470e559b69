// codegen/llvm_emit.c: the LLVM backend on the host. It builds the module of
// llvm_entry.c for a TargetMachine of the host (or of --cpu), verifies it, optimises
// it (O2_PASSES at -O2, else default<On>), marks its streaming stores, and writes
// .ll, assembly or an object (llvm_emit, and target_llvm for the driver's Target
// table), or hands it to an ORC LLJIT that resolves the runtime and libm/libc
// functions to their addresses in this process (llvm_jit_run, or llvm_jit_open and
// llvm_jit_close for a JIT kept between calls).
//
// Invariants: every LLVM object is disposed in the function that created it, and
// every LLVM failure comes back as "<context>: <LLVM's message>" ("llvm: ...",
// "llvm jit: ..."); nothing LLVM made outlives a call, but an open LlvmJit, which
// llvm_jit_close disposes.
#define _GNU_SOURCE  // dlfcn.h's RTLD_DEFAULT
#include "codegen/llvm_internal.h"

#include <dlfcn.h>

#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Support.h>
#include <llvm-c/Target.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

// ============================================================================
// The host's TargetMachine, optimisation, output
// ============================================================================
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
  // bodies, to SelectionDAG, whose code there is the same. MachineLICM hoists the
  // constants of a loop (the ~30 splatted coefficients of ir/vecmath.c's erf in a GEMM
  // tile's epilogue) out of the whole nest, where they stay live across the tile's FMA
  // loop and push its accumulators to the stack: gelu(x @ w.t() + b) ran 3x slower than
  // with libm's erf; without it the constants are folded into the FMAs as broadcast
  // memory operands where they are used.
  //
  // The rest only save compile time (issue 31: examples/attention.tdsl to an object,
  // callgrind instructions with the host's AVX-512 code, 144.4M before): the post-RA
  // list scheduler, which the Zen models turn on, reorders the already scheduled code
  // of an out-of-order core (-10.9M, the largest single pass after instruction
  // selection; kernel run times unchanged within noise, ratios in the note);
  // X86 domain reassignment moves integer mask arithmetic to the k registers, which
  // our kernels never have (-2.5M; all 30 objects of bench/ and examples/
  // byte-identical); instcombine stops after one sweep instead of repeating one to
  // confirm its fixpoint (-3.5M; 29 of the 30 objects byte-identical, llama_layer's
  // differs); FixupBW widens byte and word moves against partial-register stalls,
  // scalar bool and half code only (-2.3M); MachineCSE and machine copy propagation
  // find little after early-cse and instcombine, in the entry and outer loops (-2.4M
  // each). -enable-misched=false would save 6M more but moves the GEMM micro-kernels
  // by +-10%. Parsed once: LLVM keeps options, and a second parse of one is an error.
  const char *argv[] = {"tdslc",
                        "-disable-lsr",
                        "-fast-isel",
                        "-disable-machine-licm",
                        "-post-RA-scheduler=false",
                        "-disable-x86-domain-reassignment",
                        "-instcombine-max-iterations=1",
                        "-fixup-byte-word-insts=false",
                        "-disable-machine-cse",
                        "-disable-copyprop"};
  LLVMParseCommandLineOptions((int)(sizeof argv / sizeof *argv), argv, NULL);
  done = true;
}

// A TargetMachine for the host, or for o->cpu with no extra features.
static const char *make_target_machine(Ctx *cx, const LlvmOptions *o, LLVMTargetMachineRef *tm) {
  init_native();
  char *triple = LLVMGetDefaultTargetTriple();
  LLVMTargetRef t;
  const char *err = llvm_lookup_target(cx, triple, arena_printf(&cx->arena, "llvm: target '%s'", triple), &t);
  if (err) {
    LLVMDisposeMessage(triple);
    return err;
  }
  LLVMCodeGenOptLevel level = llvm_codegen_level(o->opt);
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
// registers; early-cse and licm leave one index sum per loop, hoisted (see index()
// in llvm_expr.c); loop-vectorize (interleaving as its cost model picks) and
// slp-vectorizer (for the lanes ir/sched.c unrolls), then instcombine and simplifycfg
// clean up after them. The kernels keep their calls: a parallel body's noalias
// parameters tell the vectorizers what inlining would.
//
// Measured (issue 31, callgrind instructions of examples/attention.tdsl to an object,
// 202M in all: 61M these passes, 128M x86 codegen; run time by `tdslc bench`
// interleaved, ratios): each pass here pays for itself on some kernel kind.
// Without loop-vectorize 131M, but sdpa 2.7x, softmax 2.0x, attention 1.07x slower
// (the scalar softmax loops of the attention kernel are its cost: 22M of the pass and
// ~28M of SelectionDAG on the vector code it makes); without slp-vectorizer 186M, but
// softmax 27x and layer_norm 2.8x slower; without instcombine 193M, but layer_norm
// 1.10x slower. On the GEMM micro-kernels, already vector code, both vectorizers
// change nothing (the same IR out) and cost ~0.3M and ~6M: running slp-vectorizer
// only on functions with scalar floating-point work saves 2% in all, not worth a
// second pipeline. Cheaper codegen does not help: LLVMCodeGenLevelLess costs the same
// as Default (+0.1%); no interleaving, no epilogue vectorization or
// -vectorizer-min-trip-count=2 gain under 3%; -regalloc=basic and
// -enable-misched=false with no instcombine (-14%) made gelu(x @ w.t() + b) 1.14x and
// a matmul 1.10x slower; -enable-misched=false alone (-4%) moved the GEMMs by +-10%
// from run to run, not shown harmless.
static const char *const O2_PASSES = "mergefunc,always-inline,function(sroa,early-cse,simplifycfg,loop-mssa(licm),"
                                     "loop-vectorize,slp-vectorizer,instcombine,simplifycfg)";

// With AVX-512 on the host, 512-bit vectors: LLVM prefers 256 bits for every CPU
// that has them (the clock may drop on some); the benchmarks run faster at 512.
static bool host_avx512(LLVMTargetMachineRef tm) {
  char *features = LLVMGetTargetMachineFeatureString(tm);
  bool avx512 = strstr(features, "+avx512f") != NULL;
  LLVMDisposeMessage(features);
  return avx512;
}

static void prefer_host_vectors(LLVMContextRef lc, LLVMModuleRef m, LLVMTargetMachineRef tm) {
  if (!host_avx512(tm))
    return;
  static const char key[] = "prefer-vector-width", val[] = "512";
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f))
      LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                              LLVMCreateStringAttribute(lc, key, sizeof key - 1, val, sizeof val - 1));
}

// Whether f stores a scalar or does floating-point arithmetic on scalars: work the
// vectorizers may turn into vector code. A function with neither (ir/gemm.c's
// micro-kernels: explicit vectors, scalars only loaded to be splatted) gives them nothing
// to do but costs slp-vectorizer its search; build_verified marks it noimplicitfloat,
// which both vectorizers skip, for the passes only (codegen never sees the mark).
// Measured (issue 31): examples/attention.tdsl to an object 150.4M -> 145.4M
// instructions (callgrind); the optimised IR of every bench/workloads and examples
// function and of GPT-2 (T = 64, 128) byte-identical with and without it.
static bool scalar_work(LLVMValueRef f) {
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in)) {
      LLVMOpcode op = LLVMGetInstructionOpcode(in);
      LLVMTypeKind k = LLVMGetTypeKind(LLVMTypeOf(op == LLVMStore ? LLVMGetOperand(in, 0) : in));
      bool fp = k == LLVMHalfTypeKind || k == LLVMBFloatTypeKind || k == LLVMFloatTypeKind || k == LLVMDoubleTypeKind;
      if ((op == LLVMStore && k != LLVMVectorTypeKind) || (fp && op != LLVMLoad))
        return true;
    }
  return false;
}

// The constants of the single-block loops (the vector bodies loop-vectorize makes of
// elementwise loops and GEMM epilogues, the scalar copies of attention tiles) are
// hoisted into their preheaders by hand, each as `freeze C` there: SelectionDAG
// selects one block at a time, so a value from another block is a register, where a
// constant in the loop is materialised again at each use (a broadcast from the constant
// pool, or a {1to16} memory operand; FastISel reloads a scalar one at each use).
// MachineLICM, which would hoist them, is off (init_native: it hoisted erf's constants
// out of the whole GEMM nest, across the micro-kernel calls, which clobber every vector
// register: gelu_linear's kernel then kept ~40 zmm spill slots); this hoists to the
// preheader of the innermost loop alone, and only out of loops that call no function.
// Per loop at most half the vector registers hold hoisted constants (the most used
// ones; the rest stay memory operands), so the body keeps the other half. Not hoisted:
// zeros (vxorps), i1 vectors (masks), shift counts and divisors (immediates), scalar
// integers (x86 takes them as immediates), and the factors of fma(C, x, C2), Horner's
// first step: with C and C2 both in registers and x used again, x86's FMA, which
// overwrites one operand, needs a copy of C first (a vmovaps on the two vector ports
// where a broadcast load went to a load port: softplus 1.5% slower until this rule).
//
// Measured (issue 27; AVX-512 Intel host, A/B in one process, chrt): the loop of 16
// lanes, instructions / constant-pool operands before -> after: log 40/17 -> 38/2, log1p
// 45/16 -> 41/1, softplus 64/30 -> 61/14, exp 30/14 -> 27/2, tanh 42/22 -> 38/6, erf
// 47/32 -> 45/16. In L1, one thread (2^14 elements): log1p 0.94x, softplus 0.94x,
// exp 0.98x, erf 1.01x the time before; at 2^20 f32 on 2 threads (bench/vector_math.tdsl)
// within +-2%, and gelu_linear, sdpa_256, matmul_1024 unchanged. The 1.3-1.4x of LLVM
// against C on log, log1p and softplus was measured on the AMD EPYC (Zen 3, AVX2: 8-lane
// loops) bench host and does not reproduce on this Intel one (there LLVM takes 0.82-0.94x
// C's time before and after, the divider apparently bounding these loops at 2^20);
// where a loop's operations bound it instead (the in-L1 case above), fewer operations
// are its time. Not verified on Zen 3.
typedef struct LoopConst {
  LLVMValueRef c, frozen;
  int uses;
} LoopConst;

static bool hoistable_const(LLVMValueRef in, unsigned op, LLVMValueRef v) {
  if (!LLVMIsConstant(v) || LLVMIsUndef(v) || LLVMIsNull(v) || LLVMIsAGlobalValue(v) || LLVMIsAConstantExpr(v))
    return false;
  LLVMTypeRef t = LLVMTypeOf(v);
  bool vec = LLVMGetTypeKind(t) == LLVMVectorTypeKind;
  LLVMTypeKind ek = LLVMGetTypeKind(vec ? LLVMGetElementType(t) : t);
  bool fp = ek == LLVMFloatTypeKind || ek == LLVMDoubleTypeKind;
  if (!fp && !(vec && ek == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(LLVMGetElementType(t)) > 1))
    return false;
  switch (LLVMGetInstructionOpcode(in)) {
  case LLVMPHI:
  case LLVMShuffleVector:
  case LLVMExtractElement:
  case LLVMInsertElement:
  case LLVMGetElementPtr:
  case LLVMSwitch: return false;
  case LLVMShl:
  case LLVMLShr:
  case LLVMAShr:
  case LLVMUDiv:
  case LLVMSDiv:
  case LLVMURem:
  case LLVMSRem: return op == 0;
  case LLVMCall: {  // an intrinsic's arguments, but the factors of fma(C, x, C2) (see above)
    LLVMValueRef callee = LLVMGetCalledValue(in);
    unsigned n = (unsigned)LLVMGetNumArgOperands(in);
    bool horner = n == 3 && op < 2 && LLVMIsConstant(LLVMGetOperand(in, 2));
    return LLVMIsAFunction(callee) && LLVMGetIntrinsicID(callee) != 0 && op < n && !horner;
  }
  default: return true;
  }
}

// Whether bb calls a function that is not an intrinsic (it clobbers the vector registers).
static bool block_calls(LLVMBasicBlockRef bb) {
  for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in)) {
    if (LLVMGetInstructionOpcode(in) != LLVMCall)
      continue;
    LLVMValueRef callee = LLVMGetCalledValue(in);
    if (!LLVMIsAFunction(callee) || LLVMGetIntrinsicID(callee) == 0)
      return true;
  }
  return false;
}

// bb's one predecessor other than itself, when that ends in an unconditional branch to bb:
// found from bb's uses (the terminators branching to it), not by scanning the function.
static LLVMBasicBlockRef preheader(LLVMBasicBlockRef bb) {
  LLVMBasicBlockRef pre = NULL;
  for (LLVMUseRef u = LLVMGetFirstUse(LLVMBasicBlockAsValue(bb)); u; u = LLVMGetNextUse(u)) {
    LLVMValueRef t = LLVMGetUser(u);
    if (!LLVMIsAInstruction(t))
      return NULL;  // a blockaddress
    LLVMBasicBlockRef p = LLVMGetInstructionParent(t);
    if (p == bb)
      continue;
    if (pre || LLVMGetNumSuccessors(t) != 1)
      return NULL;
    pre = p;
  }
  return pre;
}

static int by_uses(const void *a, const void *b) {
  const LoopConst *x = a, *y = b;
  return (y->uses > x->uses) - (y->uses < x->uses);
}

static void hoist_loop_consts(Ctx *cx, LLVMContextRef lc, LLVMModuleRef m, int cap) {
  LLVMBuilderRef b = LLVMCreateBuilderInContext(lc);
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb)) {
      LLVMValueRef t = LLVMGetBasicBlockTerminator(bb);
      bool self = false;
      for (unsigned i = 0; t && i < LLVMGetNumSuccessors(t); i++)
        self |= LLVMGetSuccessor(t, i) == bb;
      LLVMBasicBlockRef pre = self && !block_calls(bb) ? preheader(bb) : NULL;
      if (!pre)
        continue;
      int n = 0, max = 64;
      LoopConst *cs = arena_alloc(&cx->arena, sizeof *cs * (size_t)max);
      for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in))
        for (int o = 0; o < LLVMGetNumOperands(in); o++) {
          LLVMValueRef v = LLVMGetOperand(in, (unsigned)o);
          if (!hoistable_const(in, (unsigned)o, v))
            continue;
          int k = 0;
          while (k < n && cs[k].c != v)
            k++;
          if (k == n && n == max)
            continue;
          if (k == n)
            cs[n++] = (LoopConst){v, NULL, 0};
          cs[k].uses++;
        }
      qsort(cs, (size_t)n, sizeof *cs, by_uses);
      if (n > cap)
        n = cap;
      LLVMPositionBuilderBefore(b, LLVMGetBasicBlockTerminator(pre));
      for (int k = 0; k < n; k++)
        cs[k].frozen = LLVMBuildFreeze(b, cs[k].c, "");
      for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in && n; in = LLVMGetNextInstruction(in))
        for (int o = 0; o < LLVMGetNumOperands(in); o++) {
          LLVMValueRef v = LLVMGetOperand(in, (unsigned)o);
          for (int k = 0; k < n; k++)
            if (cs[k].c == v && hoistable_const(in, (unsigned)o, v))
              LLVMSetOperand(in, (unsigned)o, cs[k].frozen);
        }
    }
  LLVMDisposeBuilder(b);
}

// Builds progs into a module of lc for tm, verifies it and optimises it (O2_PASSES,
// else default<On>). On success *out owns the module; on failure it is disposed here.
static const char *build_verified(Ctx *cx, LLVMContextRef lc, LProgram *const *progs, int nprogs,
                                  const LlvmOptions *o, LLVMTargetMachineRef tm, bool run_wrappers,
                                  LLVMModuleRef *out) {
  char *triple = LLVMGetTargetMachineTriple(tm);
  LLVMModuleRef m = llvm_build_module(cx, lc, progs, nprogs, triple, llvm_data_layout(cx, tm), run_wrappers);
  LLVMDisposeMessage(triple);
  lap(o, "llvm-ir");
  const char *err = llvm_verify(cx, m, "llvm: the generated module does not verify");
  lap(o, "verify");
  if (!err) {
    int opt = llvm_opt_level(o->opt);
    prefer_host_vectors(lc, m, tm);
    unsigned nif = LLVMGetEnumAttributeKindForName("noimplicitfloat", 15);
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f && opt == 2; f = LLVMGetNextFunction(f))  // (O2_PASSES')
      if (!LLVMIsDeclaration(f) && !scalar_work(f))
        LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(lc, nif, 0));
    err = llvm_run_passes(cx, m, tm, opt == 2 ? O2_PASSES : NULL, opt, true, "llvm: optimizing");
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
      LLVMRemoveEnumAttributeAtIndex(f, LLVMAttributeFunctionIndex, nif);
    if (!err) {
      llvm_mark_streams(lc, m);
      if (opt >= 1)
        hoist_loop_consts(cx, lc, m, host_avx512(tm) ? 16 : 8);
    }
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
    const char *code;
    size_t len;
    err = llvm_emit_code(cx, tm, m, kind == LLVM_OUT_ASM ? LLVMAssemblyFile : LLVMObjectFile, "llvm: emitting code",
                         &code, &len);
    if (!err)
      fwrite(code, 1, len, out);
  }
  lap(o, "emit");
  if (m)
    LLVMDisposeModule(m);
  LLVMContextDispose(lc);
  LLVMDisposeTargetMachine(tm);
  return err;
}

// ============================================================================
// The JIT
// ============================================================================
// The libm and libc functions LLVM may call from generated code, found by name in this
// process (dlsym): the ops' own, ir/ops.def's libm column (NAME and NAMEf), so a new
// primitive needs no edit here; those LLVM turns instructions into (frem: fmod; sin and
// cos: sincos; rounding without SSE4.1; exp2 of an int: ldexp; minnum, maxnum) and its
// loop idioms (memset, memcpy, memmove).
static const char *const llvm_libm[] = {"fmod", "sincos", "rint", "nearbyint", "round", "trunc", "floor", "ceil",
                                        "fabs", "copysign", "ldexp", "fmin", "fmax"};
static const char *const llvm_libc[] = {"memset", "memcpy", "memmove"};

static void add_name(const char **names, int *n, const char *name) {
  for (int i = 0; i < *n; i++)
    if (!strcmp(names[i], name))
      return;
  names[(*n)++] = name;
}

// Every name above, each once (arena strings); returns the count.
static int libc_names(Ctx *cx, const char ***out) {
  int cap = 2 * (OP_COUNT + (int)(sizeof llvm_libm / sizeof *llvm_libm)) + (int)(sizeof llvm_libc / sizeof *llvm_libc);
  const char **names = arena_alloc(&cx->arena, sizeof *names * (size_t)cap);
  int n = 0;
  for (int i = 0; i < OP_COUNT + (int)(sizeof llvm_libm / sizeof *llvm_libm); i++) {
    const char *m = i < OP_COUNT ? op_libm((Op)i) : llvm_libm[i - OP_COUNT];
    if (!m)
      continue;
    add_name(names, &n, m);
    add_name(names, &n, arena_printf(&cx->arena, "%sf", m));
  }
  for (size_t i = 0; i < sizeof llvm_libc / sizeof *llvm_libc; i++)
    add_name(names, &n, llvm_libc[i]);
  *out = names;
  return n;
}

// Defines each of the given symbols in jd at its address here, but for a libc name
// that one of progs defines itself (an entry may be called like a libm function that
// sema does not know, e.g. sincos): the module's own definition wins.
static LLVMErrorRef define_symbols(Ctx *cx, LLVMOrcLLJITRef jit, LLVMOrcJITDylibRef jd, const LlvmSymbol *rt, int nrt,
                                   LProgram *const *progs, int nprogs) {
  const char **lib;
  int nlib = libc_names(cx, &lib), n = 0;
  LLVMJITCSymbolMapPair *pairs = calloc((size_t)(nrt + nlib), sizeof *pairs);
  TD_ASSERT(pairs);
  LLVMJITSymbolFlags flags = {LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable, 0};
  for (int i = 0; i < nrt + nlib; i++) {
    const char *name = i < nrt ? rt[i].name : lib[i - nrt];
    uintptr_t addr = i < nrt ? (uintptr_t)rt[i].addr : (uintptr_t)dlsym(RTLD_DEFAULT, name);
    bool own = !addr;  // not in this process: the lookup of a call to it says so
    for (int p = 0; p < nprogs && i >= nrt; p++)
      own |= strcmp(progs[p]->name, name) == 0;
    if (own)
      continue;
    pairs[n].Name = LLVMOrcLLJITMangleAndIntern(jit, name);
    pairs[n].Sym.Address = (LLVMOrcExecutorAddress)addr;
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

// A JIT kept open: the LLJIT and the reporter of its session errors (which points
// into it, so the two live and die together).
struct LlvmJit {
  LLVMOrcLLJITRef jit;
  SessionErrors se;
};

const char *llvm_jit_open(Ctx *cx, LProgram *const *progs, int nprogs, const LlvmOptions *o, const LlvmSymbol *rt,
                          int nrt, const char *const *names, int nnames, LlvmJit **out, void **addrs) {
  *out = NULL;
  LLVMTargetMachineRef tm = NULL;
  const char *err = make_target_machine(cx, o, &tm);
  if (err)
    return err;
  LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
  LLVMModuleRef m = NULL;
  err = build_verified(cx, LLVMOrcThreadSafeContextGetContext(tsc), progs, nprogs, o, tm, true, &m);
  LLVMDisposeTargetMachine(tm);
  LlvmJit *lj = calloc(1, sizeof *lj);
  TD_ASSERT(lj);
  lj->se = (SessionErrors){cx, NULL};
  LLVMErrorRef e = NULL;
  if (!err && (e = LLVMOrcCreateLLJIT(&lj->jit, LLVMOrcCreateLLJITBuilder())))
    err = llvm_error_message(cx, "llvm jit: creating the JIT", e), lj->jit = NULL;
  LLVMOrcLLJITRef jit = lj->jit;
  if (jit)
    LLVMOrcExecutionSessionSetErrorReporter(LLVMOrcLLJITGetExecutionSession(jit), session_error, &lj->se);
  LLVMOrcJITDylibRef jd = jit ? LLVMOrcLLJITGetMainJITDylib(jit) : NULL;
  if (!err && (e = define_symbols(cx, jit, jd, rt, nrt, progs, nprogs)))
    err = llvm_error_message(cx, "llvm jit: defining the runtime's symbols", e);
  if (!err) {
    LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(m, tsc);  // takes m
    m = NULL;
    if ((e = LLVMOrcLLJITAddLLVMIRModule(jit, jd, tsm))) {
      LLVMOrcDisposeThreadSafeModule(tsm);
      err = llvm_error_message(cx, "llvm jit: adding the module", e);
    }
  }
  if (m)
    LLVMDisposeModule(m);
  LLVMOrcDisposeThreadSafeContext(tsc);  // the module keeps it alive while it needs it
  for (int i = 0; i < nnames && !err; i++) {
    LLVMOrcExecutorAddress a = 0;
    if ((e = LLVMOrcLLJITLookup(jit, &a, names[i]))) {
      err = llvm_error_message(cx, arena_printf(&cx->arena, "llvm jit: looking up '%s'", names[i]), e);
      if (lj->se.first)
        err = arena_printf(&cx->arena, "%s (%s)", err, lj->se.first);
    }
    addrs[i] = (void *)(uintptr_t)a;
  }
  lap(o, "jit");
  if (err) {
    llvm_jit_close(cx, lj);
    return err;
  }
  *out = lj;
  return NULL;
}

const char *llvm_jit_close(Ctx *cx, LlvmJit *lj) {
  if (!lj)
    return NULL;
  const char *err = NULL;
  LLVMErrorRef e = lj->jit ? LLVMOrcDisposeLLJIT(lj->jit) : NULL;
  if (e)
    err = llvm_error_message(cx, "llvm jit: disposing the JIT", e);
  free(lj);
  return err;
}

const char *llvm_jit_run(Ctx *cx, LProgram *const *progs, int nprogs, const LlvmOptions *o, const LlvmSymbol *rt,
                         int nrt, const char *const *names, int nnames, int (*use)(void *ctx, void *const *addrs),
                         void *ctx, int *use_rc) {
  LlvmJit *lj;
  void **addrs = arena_alloc(&cx->arena, sizeof *addrs * (size_t)(nnames + 1));
  const char *err = llvm_jit_open(cx, progs, nprogs, o, rt, nrt, names, nnames, &lj, addrs);
  if (err)
    return err;
  *use_rc = use(ctx, addrs);
  return llvm_jit_close(cx, lj);
}

// The Target of codegen.h: the optimised .ll of the host; failures are internal errors.
static void llvm_emit_target(Ctx *cx, LProgram *const *progs, int nprogs, FILE *out) {
  LlvmOptions o = {.opt = 2};
  const char *err = llvm_emit(cx, progs, nprogs, &o, LLVM_OUT_IR, out);
  if (err)
    td_internal_error(__FILE__, __LINE__, "%s", err);
}

const Target target_llvm = {"llvm", ".ll", llvm_emit_target};
