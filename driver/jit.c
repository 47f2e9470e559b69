// driver/jit.c: the LLVM backend of run and bench (--backend llvm, the default on the
// CPU when built with LLVM). The function is compiled into this process with LLVM's
// ORC JIT, which is given the addresses of the tdsl_* functions generated code calls
// (tdslc links the runtime), and is called while the JIT holds it.
#include "driver/driver.h"
#ifdef TDSLC_WITH_LLVM
#include "codegen/llvm.h"
#endif

#ifdef TDSLC_WITH_LLVM
// The runtime functions generated modules call (llvm_runtime_names), at their
// addresses in tdslc, which links libtdslrt: the JIT is given exactly these.
#define RT(f) {#f, (void (*)(void))f}
static const LlvmSymbol runtime_symbols[] = {
    RT(tdsl_entry_begin),  RT(tdsl_entry_end),          RT(tdsl_entry_kernel_error), RT(tdsl_tensor_data),
    RT(tdsl_parallel_for), RT(tdsl_kernel_error_raise), RT(tdsl_kernel_error_seal),
};
#undef RT

typedef struct JitCall {
  const Options *o;
  const LProgram *p;
  const tdsl_tensor *ins;
  Timer *tm;
} JitCall;

static int jit_use(void *ctx, void *const *addrs) {
  JitCall *jc = ctx;
  RunFn fn;
  *(void **)&fn = addrs[0];
  return run_call_and_report(jc->o, jc->p, jc->ins, fn, NULL, jc->tm);
}

// Compiles p with LLVM into this process (ORC LLJIT) and calls it.
int jit_run(const Options *o, Ctx *cx, LProgram *p, const tdsl_tensor *ins, Timer *tm) {
  const char *name = arena_printf(&cx->arena, "tdsl_g_run_%s", p->name);
  LlvmOptions lo = {.opt = o->opt, .lap = llvm_lap, .lap_ctx = tm};
  JitCall jc = {o, p, ins, tm};
  int rc = 0;
  const char *err = llvm_jit_run(cx, &p, 1, &lo, runtime_symbols, (int)(sizeof runtime_symbols / sizeof *runtime_symbols),
                                 &name, 1, jit_use, &jc, &rc);
  return err ? internal_error("%s", err) : rc;
}
#else
int jit_run(const Options *o, Ctx *cx, LProgram *p, const tdsl_tensor *ins, Timer *tm) {
  (void)o, (void)cx, (void)p, (void)ins, (void)tm;
  return usage_error("--backend llvm: this tdslc was built without LLVM (TDSLC_WITH_LLVM=OFF)");
}
#endif
