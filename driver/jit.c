// driver/jit.c: the LLVM backend of run and bench (--backend llvm, the default on the
// CPU when built with LLVM). The function is compiled into this process with LLVM's
// ORC JIT (jit_load.c) and called while the JIT holds it.
#include "driver/driver.h"

#ifdef TDSLC_WITH_LLVM
// Compiles p with LLVM into this process (ORC LLJIT) and calls it.
int jit_run(const Options *o, Ctx *cx, LProgram *p, const tdsl_tensor *ins, Timer *tm) {
  // --cpu tunes the optimisation (the schedules already follow it); the JIT's machine
  // code is the host's, so a named CPU never yields instructions this machine lacks.
  LlvmOptions lo = {.opt = o->opt, .cpu = o->cpu, .lap = llvm_lap, .lap_ctx = tm};
  LlvmJit *jit;
  RunFn fn;
  const char *err = jit_load(cx, p, &lo, &jit, &fn);
  if (err)
    return internal_error("%s", err);
  int rc = run_call_and_report(o, p, ins, fn, NULL, tm);
  err = llvm_jit_close(cx, jit);
  return err ? internal_error("%s", err) : rc;
}
#else
int jit_run(const Options *o, Ctx *cx, LProgram *p, const tdsl_tensor *ins, Timer *tm) {
  (void)o, (void)cx, (void)p, (void)ins, (void)tm;
  return usage_error("--backend llvm: this tdslc was built without LLVM (TDSLC_WITH_LLVM=OFF)");
}
#endif
