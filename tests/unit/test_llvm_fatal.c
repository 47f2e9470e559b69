// tests/unit/test_llvm_fatal.c: an LLVM fatal error (report_fatal_error) is tdslc's
// internal error, exit status 4 with LLVM's reason, never abort() and a SIGABRT
// (codegen/llvm_fatal.c). The driver refuses the CPU names that reach one, so this test
// goes around it: x86-64 code for i386, a CPU without 64-bit mode, emitted in a child.
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codegen/llvm.h"
#include "codegen_fixture.h"

// Runs llvm_emit for cpu in a child whose stderr is captured; returns its wait status
// and the text it wrote (malloc'd) in *err.
static int emit_in_child(const char *cpu, LlvmOut kind, char **err) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    Ctx cx;
    ctx_init(&cx);
    LProgram *p[1];
    fx_compile(&cx, FX_ELEMENTWISE_SRC, p, 1);
    LlvmOptions o = {.opt = 2, .cpu = cpu};
    FILE *sink = fopen("/dev/null", "w");
    const char *msg = llvm_emit(&cx, p, 1, &o, kind, sink);
    fprintf(stderr, "llvm_emit returned: %s\n", msg ? msg : "ok");
    _exit(0);
  }
  close(fds[1]);
  size_t cap = 1 << 16, len = 0;
  char *text = malloc(cap);
  ssize_t n;
  while ((n = read(fds[0], text + len, cap - 1 - len)) > 0)
    len += (size_t)n;
  text[len] = 0;
  close(fds[0]);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  *err = text;
  return status;
}

static void a_fatal_error_in_llvm_is_an_internal_error_with_status_4(void **state) {
  (void)state;
  static const LlvmOut kinds[] = {LLVM_OUT_ASM, LLVM_OUT_OBJ};
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
    char *err;
    int status = emit_in_child("i386", kinds[i], &err);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 4)
      fprintf(stderr, "child: %s %d; stderr:\n%s\n", WIFSIGNALED(status) ? "signal" : "exit",
              WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), err);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 4);
    assert_non_null(strstr(err, "tdslc: internal error at "));
    assert_non_null(strstr(err, "LLVM: 64-bit code requested on a subtarget that doesn't support it"));
    assert_null(strstr(err, "LLVM ERROR"));  // LLVM's own report is replaced, not added to
    free(err);
  }
}

static void a_known_cpu_emits_normally_in_the_same_harness(void **state) {
  (void)state;
  char *err;
  int status = emit_in_child("haswell", LLVM_OUT_OBJ, &err);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_string_equal(err, "llvm_emit returned: ok\n");
  free(err);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_fatal_error_in_llvm_is_an_internal_error_with_status_4),
      cmocka_unit_test(a_known_cpu_emits_normally_in_the_same_harness),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
