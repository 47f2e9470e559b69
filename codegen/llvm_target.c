// codegen/llvm_target.c: the LLVM plumbing that the host pipeline (llvm_emit.c) and
// the PTX one (ptx.c) share: error messages, target lookup, optimisation levels, the
// data layout of a TargetMachine, verification, the pass pipeline, and code emission.
// Each caller names its context ("llvm: ...", "ptx: ..."), which begins the message.
//
// Invariants: every LLVM object is disposed in the function that created it (what
// outlives a call is copied into cx->arena first), and every LLVM failure comes back
// as "<context>: <LLVM's message>".
#include "codegen/llvm_internal.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Transforms/PassBuilder.h>

const char *llvm_message(Ctx *cx, const char *context, char *msg) {
  const char *r = arena_printf(&cx->arena, "%s: %s", context, msg && *msg ? msg : "(no message)");
  if (msg)
    LLVMDisposeMessage(msg);
  return r;
}

const char *llvm_error_message(Ctx *cx, const char *context, LLVMErrorRef e) {
  char *msg = LLVMGetErrorMessage(e);  // consumes e
  const char *r = arena_printf(&cx->arena, "%s: %s", context, msg);
  LLVMDisposeErrorMessage(msg);
  return r;
}

int llvm_opt_level(int opt) { return opt < 0 ? 0 : opt > 3 ? 3 : opt; }

LLVMCodeGenOptLevel llvm_codegen_level(int opt) {
  static const LLVMCodeGenOptLevel levels[] = {LLVMCodeGenLevelNone, LLVMCodeGenLevelLess, LLVMCodeGenLevelDefault,
                                               LLVMCodeGenLevelAggressive};
  return levels[llvm_opt_level(opt)];
}

const char *llvm_lookup_target(Ctx *cx, const char *triple, const char *context, LLVMTargetRef *t) {
  llvm_fatal_install();  // before any target machine: LLVM's fatal errors become internal errors
  char *msg = NULL;
  if (LLVMGetTargetFromTriple(triple, t, &msg))
    return llvm_message(cx, context, msg);
  if (msg)
    LLVMDisposeMessage(msg);
  return NULL;
}

const char *llvm_data_layout(Ctx *cx, LLVMTargetMachineRef tm) {
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
  char *layout = LLVMCopyStringRepOfTargetData(td);
  const char *r = arena_strdup(&cx->arena, layout);
  LLVMDisposeMessage(layout);
  LLVMDisposeTargetData(td);
  return r;
}

const char *llvm_verify(Ctx *cx, LLVMModuleRef m, const char *context) {
  char *msg = NULL;
  const char *err = NULL;
  if (LLVMVerifyModule(m, LLVMReturnStatusAction, &msg))
    err = llvm_message(cx, context, msg), msg = NULL;
  if (msg)
    LLVMDisposeMessage(msg);
  return err;
}

const char *llvm_run_passes(Ctx *cx, LLVMModuleRef m, LLVMTargetMachineRef tm, const char *passes, int opt,
                            bool set_vectorizers, const char *context) {
  char dflt[32];
  opt = llvm_opt_level(opt);
  snprintf(dflt, sizeof dflt, "default<O%d>", opt);
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  if (set_vectorizers) {
    LLVMPassBuilderOptionsSetLoopVectorization(po, opt >= 2);
    LLVMPassBuilderOptionsSetSLPVectorization(po, opt >= 2);
    LLVMPassBuilderOptionsSetLoopInterleaving(po, opt >= 2);
  }
  LLVMPassBuilderOptionsSetLoopUnrolling(po, opt >= 2);
  LLVMErrorRef e = LLVMRunPasses(m, passes ? passes : dflt, tm, po);
  LLVMDisposePassBuilderOptions(po);
  return e ? llvm_error_message(cx, context, e) : NULL;
}

const char *llvm_emit_code(Ctx *cx, LLVMTargetMachineRef tm, LLVMModuleRef m, LLVMCodeGenFileType kind,
                           const char *context, const char **text, size_t *len) {
  LLVMMemoryBufferRef mb = NULL;
  char *msg = NULL;
  if (LLVMTargetMachineEmitToMemoryBuffer(tm, m, kind, &msg, &mb))
    return llvm_message(cx, context, msg);
  if (msg)
    LLVMDisposeMessage(msg);
  *len = LLVMGetBufferSize(mb);
  *text = arena_strndup(&cx->arena, LLVMGetBufferStart(mb), *len);
  LLVMDisposeMemoryBuffer(mb);
  return NULL;
}
