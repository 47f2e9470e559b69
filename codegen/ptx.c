// codegen/ptx.c: PTX through LLVM's NVPTX target. The module comes from the GPU mode
// of the LLVM backend's builder (llvm_build_gpu_module in llvm_gpu.c: one kernel per
// LKernel, the convention of codegen.h, kernels with the same code built once); here
// it is verified, linked with libdevice when its math needs it, every function but
// the kernels made internal (so the optimiser keeps only the libdevice code used),
// optimised with default<On> for the NVPTX TargetMachine, and printed as PTX. The LLVM
// plumbing (target lookup, levels, data layout, verification, passes, emission) is
// llvm_target.c's, shared with the host.
//
// Invariants:
//   - the triple is nvptx64-nvidia-cuda; the processor is --gpu-arch when LLVM 14
//     knows it, else the newest one it knows below it: LLVM 14 stops at sm_86, so
//     sm_89 and sm_90 get `.target sm_86` PTX, which the CUDA driver and
//     `ptxas -arch=sm_90` compile for the newer GPU; below sm_30 is refused;
//   - PTX ISA 7.2 (+ptx72: enough for every processor LLVM 14 knows);
//   - libdevice (TDSLC_LIBDEVICE, else /usr/local/cuda/nvvm/libdevice/libdevice.10.bc)
//     is linked with flush-to-zero off (module flag nvvm-reflect-ftz = 0), so math
//     keeps IEEE subnormals as on the CPU;
//   - the launch of a kernel is its GPU schedule's (LKernel.gpu, ir/sched_gpu.c), as
//     codegen/cuda.c launches it;
//   - every LLVM object is disposed in the function that created it, every LLVM
//     failure comes back as "ptx: <context>: <LLVM's message>", and LLVM's
//     diagnostics never reach stderr.
#include "codegen/codegen.h"

#include <stdlib.h>
#include <string.h>

#ifndef TDSLC_WITH_LLVM

static const char *no_llvm(Ctx *cx) {
  return arena_printf(&cx->arena, "ptx: this tdslc was built without LLVM (TDSLC_WITH_LLVM=OFF)");
}

const char *ptx_emit(Ctx *cx, LProgram *const *progs, int nprogs, const char *arch, int opt, FILE *out) {
  (void)progs, (void)nprogs, (void)arch, (void)opt, (void)out;
  return no_llvm(cx);
}

const char *ptx_image(Ctx *cx, const LProgram *p, const char *arch, int opt, GpuImage *out) {
  (void)p, (void)arch, (void)opt, (void)out;
  return no_llvm(cx);
}

#else

#include "codegen/llvm_internal.h"

#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Target.h>

static const char *const TRIPLE = "nvptx64-nvidia-cuda";
static const char *const LIBDEVICE = "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc";

// The processors LLVM 14's NVPTX target knows, oldest first.
static const int known_sm[] = {30, 32, 35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, PTX_NEWEST_SM};

// "sm_NN" (a suffix such as the 'a' of sm_90a is ignored) -> the processor to emit
// for, in the arena; NULL with *err set when arch is no such name or too old.
static const char *processor(Ctx *cx, const char *arch, const char **err) {
  if (!arch)
    arch = "sm_80";
  const char *d = arch + 3;
  int n = 0, nd = 0;
  if (strncmp(arch, "sm_", 3) == 0)
    for (; d[nd] >= '0' && d[nd] <= '9' && nd < 4; nd++)
      n = n * 10 + (d[nd] - '0');
  if (nd == 0 || (d[nd] && d[nd + 1]) || (d[nd] && (d[nd] < 'a' || d[nd] > 'z'))) {
    *err = arena_printf(&cx->arena, "ptx: unknown GPU architecture '%s' (expected sm_NN, for example sm_80)", arch);
    return NULL;
  }
  int best = 0;
  for (size_t i = 0; i < sizeof known_sm / sizeof *known_sm; i++)
    if (known_sm[i] <= n)
      best = known_sm[i];
  if (!best) {
    *err = arena_printf(&cx->arena, "ptx: GPU architecture '%s' is too old (sm_30 or newer)", arch);
    return NULL;
  }
  return arena_printf(&cx->arena, "sm_%d", best);
}

// LLVM's diagnostics (the linker's among them): the first error is kept, the rest
// (warnings, remarks) are dropped rather than printed.
typedef struct Diags {
  Ctx *cx;
  const char *first;
} Diags;

static void on_diagnostic(LLVMDiagnosticInfoRef di, void *ctx) {
  Diags *d = ctx;
  if (LLVMGetDiagInfoSeverity(di) != LLVMDSError || d->first)
    return;
  char *msg = LLVMGetDiagInfoDescription(di);
  d->first = arena_strdup(&d->cx->arena, msg);
  LLVMDisposeMessage(msg);
}

static void init_nvptx(void) {
  static bool done;
  if (done)
    return;
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
  done = true;
}

static const char *make_target_machine(Ctx *cx, const char *arch, int opt, LLVMTargetMachineRef *tm) {
  const char *err = NULL;
  const char *cpu = processor(cx, arch, &err);
  if (!cpu)
    return err;
  init_nvptx();
  LLVMTargetRef t;
  if ((err = llvm_lookup_target(cx, TRIPLE, "ptx: target nvptx64-nvidia-cuda", &t)))
    return err;
  *tm = LLVMCreateTargetMachine(t, TRIPLE, cpu, "+ptx72", llvm_codegen_level(opt), LLVMRelocDefault,
                                LLVMCodeModelDefault);
  if (!*tm)
    return arena_printf(&cx->arena, "ptx: cannot create a target machine for %s (%s)", TRIPLE, cpu);
  return NULL;
}

// Whether m calls a libdevice function (declared, not yet defined).
static bool needs_libdevice(LLVMModuleRef m) {
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
    size_t len;
    const char *name = LLVMGetValueName2(f, &len);
    if (LLVMIsDeclaration(f) && len > 5 && strncmp(name, "__nv_", 5) == 0)
      return true;
  }
  return false;
}

// Links libdevice into m (which keeps its triple and data layout).
static const char *link_libdevice(Ctx *cx, LLVMContextRef lc, LLVMModuleRef m, const Diags *d) {
  const char *path = getenv("TDSLC_LIBDEVICE");
  if (!path || !*path)
    path = LIBDEVICE;
  LLVMMemoryBufferRef mb = NULL;
  char *msg = NULL;
  if (LLVMCreateMemoryBufferWithContentsOfFile(path, &mb, &msg))
    return llvm_message(cx, arena_printf(&cx->arena, "ptx: cannot read libdevice '%s'", path), msg);
  LLVMModuleRef lib = NULL;
  bool bad = LLVMParseBitcodeInContext2(lc, mb, &lib);
  LLVMDisposeMemoryBuffer(mb);
  if (bad)
    return arena_printf(&cx->arena, "ptx: cannot parse libdevice '%s': %s", path, d->first ? d->first : "invalid bitcode");
  LLVMSetTarget(lib, LLVMGetTarget(m));
  LLVMSetDataLayout(lib, LLVMGetDataLayoutStr(m));
  if (LLVMLinkModules2(m, lib))  // consumes lib
    return arena_printf(&cx->arena, "ptx: linking libdevice '%s': %s", path, d->first ? d->first : "failed");
  return NULL;
}

static bool is_kernel(Ctx *cx, LProgram *const *progs, int nprogs, const char *name) {
  for (int i = 0; i < nprogs; i++)
    for (int k = 0; k < progs[i]->kernels.len; k++)
      if (strcmp(name, emit_kernel_name(cx, progs[i], k)) == 0)
        return true;
  return false;
}

// Every function and global variable m defines becomes internal, but the kernels.
static void internalize(Ctx *cx, LLVMModuleRef m, LProgram *const *progs, int nprogs) {
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
    size_t len;
    if (!LLVMIsDeclaration(f) && LLVMGetLinkage(f) != LLVMInternalLinkage &&
        !is_kernel(cx, progs, nprogs, LLVMGetValueName2(f, &len)))
      LLVMSetLinkage(f, LLVMInternalLinkage);
  }
  for (LLVMValueRef v = LLVMGetFirstGlobal(m); v; v = LLVMGetNextGlobal(v))
    if (!LLVMIsDeclaration(v) && LLVMGetLinkage(v) != LLVMPrivateLinkage)
      LLVMSetLinkage(v, LLVMInternalLinkage);
}

// The PTX of progs (in the arena, NUL-terminated) in *text.
static const char *build_ptx(Ctx *cx, LProgram *const *progs, int nprogs, const char *arch, int opt,
                             const char **text) {
  opt = llvm_opt_level(opt);
  LLVMTargetMachineRef tm = NULL;
  const char *err = make_target_machine(cx, arch, opt, &tm);
  if (err)
    return err;
  LLVMContextRef lc = LLVMContextCreate();
  Diags d = {cx, NULL};
  LLVMContextSetDiagnosticHandler(lc, on_diagnostic, &d);
  LLVMModuleRef m = llvm_build_gpu_module(cx, lc, progs, nprogs, TRIPLE, llvm_data_layout(cx, tm));
  // libdevice's __nvvm_reflect("__CUDA_FTZ") reads this: 0 keeps subnormals
  LLVMAddModuleFlag(m, LLVMModuleFlagBehaviorOverride, "nvvm-reflect-ftz", 16,
                    LLVMValueAsMetadata(LLVMConstInt(LLVMInt32TypeInContext(lc), 0, 0)));
  err = llvm_verify(cx, m, "ptx: the generated module does not verify");
  if (!err && needs_libdevice(m))
    err = link_libdevice(cx, lc, m, &d);
  if (!err) {
    internalize(cx, m, progs, nprogs);
    err = llvm_run_passes(cx, m, tm, NULL, opt, false, "ptx: optimizing");
  }
  const char *code = NULL;
  size_t len;
  if (!err)
    err = llvm_emit_code(cx, tm, m, LLVMAssemblyFile, "ptx: emitting PTX", &code, &len);
  if (!err && d.first)
    err = arena_printf(&cx->arena, "ptx: %s", d.first);
  *text = err ? NULL : code;
  LLVMDisposeModule(m);
  LLVMContextDispose(lc);
  LLVMDisposeTargetMachine(tm);
  return err;
}

const char *ptx_emit(Ctx *cx, LProgram *const *progs, int nprogs, const char *arch, int opt, FILE *out) {
  const char *text = NULL;
  const char *err = build_ptx(cx, progs, nprogs, arch, opt, &text);
  if (err)
    return err;
  fputs(text, out);
  return NULL;
}

const char *ptx_image(Ctx *cx, const LProgram *p, const char *arch, int opt, GpuImage *out) {
  int nk = p->kernels.len;
  LProgram *const progs[1] = {(LProgram *)p};
  const char *text = NULL;
  const char *err = build_ptx(cx, progs, 1, arch, opt, &text);
  if (err)
    return err;
  out->text = text;
  out->nkernels = nk;
  out->kernels = arena_alloc(&cx->arena, sizeof *out->kernels * (size_t)(nk + 1));
  for (int k = 0; k < nk; k++) {
    const LGpuSched *gs = p->kernels.data[k]->gpu;  // (a kernel with an earlier one's code: that one's)
    TD_ASSERT(gs);
    out->kernels[k] = (GpuKernel){emit_kernel_name(cx, p, k), gs->grid, gs->block, 0};
  }
  return NULL;
}

#endif
