// tests/unit/test_target_names.c: the values --cpu and --gpu-arch take
// (codegen/target_names.c). test_cli.py checks the CPU list against llc-14 itself.
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "codegen/target_names.h"

static void x86_64_cpus_and_host_are_known(void **state) {
  (void)state;
  static const char *const ok[] = {"host", "haswell", "skylake-avx512", "znver3", "x86-64", "x86-64-v4", "generic",
                                   "skx", "alderlake"};
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
    assert_true(target_names_cpu_known(ok[i]));
  assert_string_equal(target_names_cpu_arch(), "x86-64");
}

static void other_names_are_refused_with_a_reason(void **state) {
  (void)state;
  static const char *const bad[] = {"", "bogus", "i386", "pentium4", "cortex-a53", "HASWELL", "haswell ", "native"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    assert_false(target_names_cpu_known(bad[i]));
  assert_false(target_names_cpu_known(NULL));
  assert_string_equal(target_names_cpu_why("i386"), "a 32-bit CPU: it cannot run x86-64 code");
  assert_string_equal(target_names_cpu_why("bogus"), "not a CPU LLVM 14 knows for x86-64");
  assert_string_equal(target_names_cpu_why(""), "an empty CPU name");
}

static void a_typo_gets_the_nearest_name_and_a_word_gets_none(void **state) {
  (void)state;
  assert_string_equal(target_names_cpu_nearest("haswel"), "haswell");
  assert_string_equal(target_names_cpu_nearest("znver"), "znver1");
  assert_string_equal(target_names_cpu_nearest("skylake-avx51"), "skylake-avx512");
  assert_null(target_names_cpu_nearest("bogus"));
  assert_null(target_names_cpu_nearest(""));
}

static void gpu_architectures_from_sm_30_to_sm_121(void **state) {
  (void)state;
  static const char *const ok[] = {"sm_30", "sm_35", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a",
                                   "sm_100", "sm_100a", "sm_100f", "sm_120f", "sm_121"};
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
    assert_true(target_names_gpu_known(ok[i]));
  static const char *const bad[] = {"sm_20", "sm_21", "sm_1", "sm_999", "sm_100000000000", "sm_80f", "sm_86a",
                                    "sm_90b", "sm_90aa", "sm_", "", "80", "SM_80", "sm_080", "compute_80",
                                    "sm_-80", "sm_8 0"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    assert_false(target_names_gpu_known(bad[i]));
  assert_false(target_names_gpu_known(NULL));
}

// What a print function writes, in a malloc'd string.
static char *printed(void (*print)(FILE *, const char *, int)) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  print(f, "  ", 60);
  fclose(f);
  return text;
}

static void the_lists_fit_their_width_and_start_where_they_should(void **state) {
  (void)state;
  char *cpus = printed(target_names_print_cpus), *gpus = printed(target_names_print_gpus);
  assert_memory_equal(cpus, "  host alderlake ", 17);
  assert_memory_equal(gpus, "  sm_30 sm_32 ", 14);
  assert_non_null(strstr(gpus, " sm_121\n"));
  for (char *s = cpus; *s; s = strchr(s, '\n') + 1)
    assert_true(strchr(s, '\n') - s <= 60);
  free(cpus);
  free(gpus);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(x86_64_cpus_and_host_are_known),
      cmocka_unit_test(other_names_are_refused_with_a_reason),
      cmocka_unit_test(a_typo_gets_the_nearest_name_and_a_word_gets_none),
      cmocka_unit_test(gpu_architectures_from_sm_30_to_sm_121),
      cmocka_unit_test(the_lists_fit_their_width_and_start_where_they_should),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
