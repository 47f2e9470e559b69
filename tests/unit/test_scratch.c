// tests/unit/test_scratch.c: the per-thread scratch of runtime/scratch.c (tdsl_scratch),
// where CPU matmuls pack their panels: aligned, kept from one request to the next while
// they do not grow, grown when they do, and each thread's its own.
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <string.h>

#include "tdsl.h"

static void a_region_is_64_byte_aligned_and_kept_while_requests_do_not_grow(void **state) {
  (void)state;
  char *p = tdsl_scratch(1000);
  assert_non_null(p);
  assert_int_equal((uintptr_t)p % 64, 0);
  memset(p, 7, 1000);
  assert_ptr_equal(tdsl_scratch(1000), p);
  assert_ptr_equal(tdsl_scratch(10), p);  // a smaller one: the same region
  assert_int_equal(p[999], 7);             // (its contents kept)
}

static void a_larger_request_grows_the_region(void **state) {
  (void)state;
  (void)tdsl_scratch(64);
  char *p = tdsl_scratch(3 << 20);
  assert_non_null(p);
  assert_int_equal((uintptr_t)p % 64, 0);
  memset(p, 1, 3 << 20);  // all of it is there (ASan checks)
  assert_ptr_equal(tdsl_scratch(3 << 20), p);
}

static void *other_thread(void *arg) {
  char *p = tdsl_scratch(4096);
  memset(p, 2, 4096);
  *(char **)arg = p;
  return NULL;
}

static void each_thread_has_its_own_region(void **state) {
  (void)state;
  char *mine = tdsl_scratch(4096), *theirs = NULL;
  memset(mine, 3, 4096);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, other_thread, &theirs), 0);
  assert_int_equal(pthread_join(t, NULL), 0);
  assert_non_null(theirs);
  assert_true(theirs != mine);
  assert_int_equal(mine[4095], 3);  // the other thread did not write here
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_region_is_64_byte_aligned_and_kept_while_requests_do_not_grow),
      cmocka_unit_test(a_larger_request_grows_the_region),
      cmocka_unit_test(each_thread_has_its_own_region),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
