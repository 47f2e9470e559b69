// driver/jit_load.c: one program compiled by LLVM's ORC JIT into this process and
// kept there: `tdslc run` (jit.c) calls it once, the Python package's library
// (python/tdslpy.c) for as long as its function object lives. The JIT is given
// the addresses of the tdsl_* functions generated code calls, so the program and
// its caller share one runtime (its errors, its storages).
#include "driver/driver.h"

#ifdef TDSLC_WITH_LLVM
// The runtime functions generated modules call (llvm_runtime_names), at their
// addresses in this process, which links libtdslrt: the JIT is given exactly these.
#define RT(f) {#f, (void (*)(void))f}
static const LlvmSymbol runtime_symbols[] = {
    RT(tdsl_entry_begin),  RT(tdsl_entry_end),          RT(tdsl_entry_kernel_error), RT(tdsl_tensor_data),
    RT(tdsl_parallel_for), RT(tdsl_kernel_error_raise), RT(tdsl_kernel_error_seal),   RT(tdsl_scratch),
    RT(tdsl_prof_mark),    RT(tdsl_stream_begin),       RT(tdsl_stream_end),
};
#undef RT

const char *jit_load(Ctx *cx, LProgram *p, const LlvmOptions *lo, LlvmJit **jit, RunFn *fn) {
  const char *name = arena_printf(&cx->arena, "tdsl_g_run_%s", p->name);
  void *addr = NULL;
  const char *err = llvm_jit_open(cx, &p, 1, lo, runtime_symbols, (int)(sizeof runtime_symbols / sizeof *runtime_symbols),
                                  &name, 1, jit, &addr);
  if (!err)
    *(void **)fn = addr;
  return err;
}
#endif
