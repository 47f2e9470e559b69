// tests/unit/ctx_fixture.h: the compiler context a unit test file's cases share (cx), made
// and freed by cmocka's setup and teardown, per case (cmocka_unit_test_setup_teardown) or
// per group (cmocka_run_group_tests). Included once, after frontend/frontend.h.
#ifndef TDSLC_UNIT_CTX_FIXTURE_H
#define TDSLC_UNIT_CTX_FIXTURE_H

static Ctx cx;

static int setup(void **state) {
  (void)state;
  ctx_init(&cx);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  ctx_free(&cx);
  return 0;
}

#endif
