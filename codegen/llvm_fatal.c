// codegen/llvm_fatal.c: LLVM's fatal errors as tdslc's internal errors. LLVM ends the
// process on some errors it cannot return (report_fatal_error: "64-bit code requested
// on a subtarget that doesn't support it!", a selection failure), by default with
// abort() and a SIGABRT. The handler installed here prints LLVM's reason as an
// internal error and exits with status 4, as td_internal_error does, never a signal.
// Installed once per process, before the first target machine (llvm_lookup_target).
#include "codegen/llvm_internal.h"

#include <llvm-c/ErrorHandling.h>

static void on_fatal(const char *reason) {
  td_internal_error(__FILE__, __LINE__, "LLVM: %s", reason && *reason ? reason : "(no message)");
}

void llvm_fatal_install(void) {
  static bool done;
  if (done)
    return;
  LLVMInstallFatalErrorHandler(on_fatal);
  done = true;
}
