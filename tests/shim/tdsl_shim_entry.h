// tests/shim/tdsl_shim_entry.h: the host entries of an --emit=cuda file, registered for
// tests/shim/runner.cc. shimcc.py appends `#include "tdsl_shim_entry.h"` and one
// TDSL_SHIM_PROGRAM(f, name) per entry `extern "C" int f(...)` of the file (after tdsl.h and
// the entry's tables, tdsl_g_f_info). The runner then calls any entry by name with
// arrays of arguments and results, as tdslc run calls a compiled function: parameter i
// is args[i] (a scalar parameter's value read from its 0-d tensor), then the results.
#ifndef TDSL_SHIM_ENTRY_H
#define TDSL_SHIM_ENTRY_H

#include <type_traits>
#include <utility>

#include "tdsl.h"

typedef int (*tdsl_shim_entry_fn)(const tdsl_tensor *const *args, tdsl_tensor *outs);

extern "C" void tdsl_shim_register_program(const char *name, const tdsl_entry_info *info, tdsl_shim_entry_fn call);

template <class T> T tdsl_shim_entry_arg(size_t i, int nparams, const tdsl_tensor *const *args, tdsl_tensor *outs) {
  if ((int)i >= nparams) {
    if constexpr (std::is_same_v<T, tdsl_tensor *>)
      return &outs[i - (size_t)nparams];
    else
      __builtin_trap();  // the entry's results are tdsl_tensor pointers
  } else if constexpr (std::is_pointer_v<T>) {
    return (T)args[i];
  } else {
    return *(const T *)tdsl_tensor_data(args[i]);  // a scalar parameter
  }
}

template <class... P, size_t... I>
int tdsl_shim_entry_call_i(int (*f)(P...), int nparams, const tdsl_tensor *const *args, tdsl_tensor *outs,
                           std::index_sequence<I...>) {
  return f(tdsl_shim_entry_arg<P>(I, nparams, args, outs)...);
}
template <class... P>
int tdsl_shim_entry_call(int (*f)(P...), int nparams, const tdsl_tensor *const *args, tdsl_tensor *outs) {
  return tdsl_shim_entry_call_i(f, nparams, args, outs, std::index_sequence_for<P...>{});
}

#define TDSL_SHIM_PROGRAM(f, name)                                                               \
  __attribute__((constructor)) static void tdsl_shim_prog_##f(void) {                           \
    tdsl_shim_register_program(name, &tdsl_g_##f##_info, [](const tdsl_tensor *const *a, tdsl_tensor *o) { \
      return tdsl_shim_entry_call(f, tdsl_g_##f##_info.nparams, a, o);                            \
    });                                                                                          \
  }

#endif
