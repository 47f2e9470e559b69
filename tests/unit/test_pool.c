// tests/unit/test_pool.c: runtime/pool.c. tdsl_parallel_for must cover every index of
// [0, n) exactly once in chunks of at least `grain`, fall back to one serial call where
// it says so, never nest, and stay correct when two user threads call it at once; the
// kernel error record must keep the lowest iteration whatever thread raised it.
// main() sets TDSL_NUM_THREADS=4 before the pool starts, so the parallel paths run
// even on a one- or two-core machine; the variable's parsing is checked in child
// processes of this executable (`test_pool --child`), each with its own environment.
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tdsl.h"

enum { TEST_THREADS = 4, MAX_SEEN = 64 };

// ---- what a loop did: how often each index ran, its chunks, its threads ----
typedef struct Record {
  int64_t n;
  _Atomic int *hits;  // n counters
  atomic_int calls;
  _Atomic int64_t smallest;  // the smallest chunk
  pthread_mutex_t mu;
  pthread_t seen[MAX_SEEN];  // distinct threads that ran chunks
  int nseen;
  bool wait_for_company;  // each chunk waits (up to 2 s) until two threads have run chunks
} Record;

static void record_init(Record *r, int64_t n) {
  memset(r, 0, sizeof *r);
  r->n = n;
  r->hits = calloc((size_t)(n > 0 ? n : 1), sizeof *r->hits);
  assert_non_null(r->hits);
  atomic_init(&r->smallest, INT64_MAX);
  pthread_mutex_init(&r->mu, NULL);
}

static void record_free(Record *r) {
  free((void *)r->hits);
  pthread_mutex_destroy(&r->mu);
}

static int seen_count(Record *r) {
  pthread_mutex_lock(&r->mu);
  int k = r->nseen;
  pthread_mutex_unlock(&r->mu);
  return k;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static void count_range(void *ctx, int64_t begin, int64_t end) {
  Record *r = ctx;
  atomic_fetch_add(&r->calls, 1);
  int64_t len = end - begin, cur = atomic_load(&r->smallest);
  while (len < cur && !atomic_compare_exchange_weak(&r->smallest, &cur, len)) {
  }
  for (int64_t i = begin; i < end; i++)
    if (i >= 0 && i < r->n)
      atomic_fetch_add(&r->hits[i], 1);
  pthread_t self = pthread_self();
  pthread_mutex_lock(&r->mu);
  bool known = false;
  for (int i = 0; i < r->nseen; i++)
    known |= pthread_equal(r->seen[i], self) != 0;
  if (!known && r->nseen < MAX_SEEN)
    r->seen[r->nseen++] = self;
  pthread_mutex_unlock(&r->mu);
  for (int t = 0; r->wait_for_company && t < 2000 && seen_count(r) < 2; t++)
    sleep_ms(1);
}

static void assert_each_index_once(const Record *r) {
  for (int64_t i = 0; i < r->n; i++)
    if (atomic_load(&r->hits[i]) != 1)
      fail_msg("index %lld of %lld ran %d times", (long long)i, (long long)r->n, atomic_load(&r->hits[i]));
}

// ---- coverage and chunking ----
static void every_index_runs_exactly_once_for_many_sizes_and_grains(void **state) {
  (void)state;
  static const int64_t sizes[] = {1, 2, 3, 7, 8, 16, 63, 64, 1000, 1001, 4099, 100003};
  static const int64_t grains[] = {-5, 0, 1, 2, 3, 7, 64, 1000, 100003, 1000000};
  for (size_t a = 0; a < sizeof sizes / sizeof sizes[0]; a++)
    for (size_t b = 0; b < sizeof grains / sizeof grains[0]; b++) {
      int64_t n = sizes[a], grain = grains[b], g = grain < 1 ? 1 : grain;
      Record r;
      record_init(&r, n);
      tdsl_parallel_for(n, grain, count_range, &r);
      assert_each_index_once(&r);
      int calls = atomic_load(&r.calls);
      assert_true(calls >= 1);
      assert_true(calls <= 4 * tdsl_num_threads());
      if (n < 2 * g)
        assert_int_equal(calls, 1);  // too small to split
      if (calls > 1)
        assert_true(atomic_load(&r.smallest) >= g);
      record_free(&r);
    }
}

static void an_empty_loop_calls_nothing(void **state) {
  (void)state;
  Record r;
  record_init(&r, 0);
  tdsl_parallel_for(0, 1, count_range, &r);
  tdsl_parallel_for(-3, 1, count_range, &r);
  assert_int_equal(atomic_load(&r.calls), 0);
  record_free(&r);
}

static void a_loop_smaller_than_two_grains_runs_once_on_the_caller(void **state) {
  (void)state;
  Record r;
  record_init(&r, 19);
  tdsl_parallel_for(19, 10, count_range, &r);
  assert_int_equal(atomic_load(&r.calls), 1);
  assert_int_equal(atomic_load(&r.smallest), 19);
  assert_int_equal(r.nseen, 1);
  assert_true(pthread_equal(r.seen[0], pthread_self()));
  record_free(&r);
}

static void a_large_loop_runs_on_several_threads(void **state) {
  (void)state;
  assert_int_equal(tdsl_num_threads(), TEST_THREADS);
  Record r;
  record_init(&r, 4096);
  r.wait_for_company = true;
  tdsl_parallel_for(4096, 1, count_range, &r);
  assert_each_index_once(&r);
  assert_int_equal(atomic_load(&r.calls), 4 * TEST_THREADS);
  assert_true(r.nseen >= 2);
  assert_true(r.nseen <= TEST_THREADS);
  record_free(&r);
}

static void many_loops_in_a_row_each_cover_their_range(void **state) {
  (void)state;
  for (int k = 0; k < 2000; k++) {
    int64_t n = 1 + (k * 37) % 301;
    Record r;
    record_init(&r, n);
    tdsl_parallel_for(n, 1 + k % 5, count_range, &r);
    assert_each_index_once(&r);
    record_free(&r);
  }
}

// Workers watch for the next loop a short while (0.2 ms), then sleep: over 300 ms of
// idleness the process burns next to no CPU time. (Workers that kept spinning would
// take 300 ms each, three of them here.)
static double cpu_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void idle_workers_sleep_instead_of_spinning(void **state) {
  (void)state;
  Record r;
  record_init(&r, 4096);
  r.wait_for_company = true;  // the workers surely ran, so they are spinning or asleep now
  tdsl_parallel_for(4096, 1, count_range, &r);
  assert_true(r.nseen >= 2);
  double c0 = cpu_seconds();
  sleep_ms(300);
  double used = cpu_seconds() - c0;
  assert_true(used < 0.1);
  record_free(&r);
}

// ---- nesting ----
typedef struct Nest {
  Record outer;
  atomic_int inner_calls, inner_bad;
  _Atomic int64_t inner_sum;
} Nest;

static void inner_body(void *ctx, int64_t begin, int64_t end) {
  Nest *x = ctx;
  atomic_fetch_add(&x->inner_calls, 1);
  if (begin != 0 || end != 100)
    atomic_fetch_add(&x->inner_bad, 1);
  for (int64_t i = begin; i < end; i++)
    atomic_fetch_add(&x->inner_sum, i);
}

static void outer_body(void *ctx, int64_t begin, int64_t end) {
  Nest *x = ctx;
  count_range(&x->outer, begin, end);
  for (int64_t i = begin; i < end; i++)
    tdsl_parallel_for(100, 1, inner_body, x);
}

static void a_loop_inside_a_task_runs_serially_and_completes(void **state) {
  (void)state;
  Nest x;
  memset(&x, 0, sizeof x);
  record_init(&x.outer, 64);
  tdsl_parallel_for(64, 1, outer_body, &x);
  assert_each_index_once(&x.outer);
  assert_true(atomic_load(&x.outer.calls) > 1);
  assert_int_equal(atomic_load(&x.inner_calls), 64);  // one serial call per outer index
  assert_int_equal(atomic_load(&x.inner_bad), 0);
  assert_int_equal(atomic_load(&x.inner_sum), 64 * 4950);
  record_free(&x.outer);
}

// ---- two user threads ----
typedef struct User {
  int id;
  int failures;
} User;

static void *user_main(void *arg) {
  User *u = arg;
  for (int k = 0; k < 300; k++) {
    int64_t n = 997 + 13 * k + u->id;
    Record r;
    record_init(&r, n);
    tdsl_parallel_for(n, k % 3, count_range, &r);
    for (int64_t i = 0; i < n; i++)
      u->failures += atomic_load(&r.hits[i]) != 1;
    record_free(&r);
  }
  return NULL;
}

static void two_user_threads_may_run_loops_at_the_same_time(void **state) {
  (void)state;
  User u[2] = {{0, 0}, {1, 0}};
  pthread_t t[2];
  for (int i = 0; i < 2; i++)
    assert_int_equal(pthread_create(&t[i], NULL, user_main, &u[i]), 0);
  for (int i = 0; i < 2; i++)
    assert_int_equal(pthread_join(t[i], NULL), 0);
  assert_int_equal(u[0].failures, 0);
  assert_int_equal(u[1].failures, 0);
}

// ---- fork ----
static void a_forked_child_runs_loops_serially(void **state) {
  (void)state;
  Record warm;
  record_init(&warm, 100);
  tdsl_parallel_for(100, 1, count_range, &warm);  // the pool is running before fork
  record_free(&warm);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    Record r;
    record_init(&r, 1000);
    tdsl_parallel_for(1000, 1, count_range, &r);
    bool ok = atomic_load(&r.calls) == 1;
    for (int64_t i = 0; i < r.n; i++)
      ok &= atomic_load(&r.hits[i]) == 1;
    record_free(&r);
    _exit(ok ? 0 : 1);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

// ---- TDSL_NUM_THREADS, through child processes ----
// `test_pool --child`: prints "num_threads calls distinct_threads" for a loop of 1000.
// `test_pool --count`: prints num_threads only (no pool is started).
static int child_main(const char *mode) {
  if (strcmp(mode, "--count") == 0) {
    printf("%d 0 0\n", tdsl_num_threads());
    return 0;
  }
  Record r;
  record_init(&r, 1000);
  r.wait_for_company = tdsl_num_threads() > 1;
  tdsl_parallel_for(1000, 1, count_range, &r);
  printf("%d %d %d\n", tdsl_num_threads(), atomic_load(&r.calls), r.nseen);
  bool ok = true;
  for (int64_t i = 0; i < r.n; i++)
    ok &= atomic_load(&r.hits[i]) == 1;
  record_free(&r);
  return ok ? 0 : 1;
}

// Runs this executable with mode and TDSL_NUM_THREADS set to value (NULL: unset).
static void run_child(const char *mode, const char *value, int *nthreads, int *calls, int *nseen) {
  char self[4096], cmd[4200 + 64];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  assert_true(len > 0);
  self[len] = '\0';
  if (value)
    snprintf(cmd, sizeof cmd, "env TDSL_NUM_THREADS='%s' '%s' %s", value, self, mode);
  else
    snprintf(cmd, sizeof cmd, "env -u TDSL_NUM_THREADS '%s' %s", self, mode);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  assert_int_equal(fscanf(p, "%d %d %d", nthreads, calls, nseen), 3);
  assert_int_equal(pclose(p), 0);
}

static void one_thread_from_the_environment_runs_every_loop_serially(void **state) {
  (void)state;
  int nt, calls, nseen;
  run_child("--child", "1", &nt, &calls, &nseen);
  assert_int_equal(nt, 1);
  assert_int_equal(calls, 1);
  assert_int_equal(nseen, 1);
}

static void three_threads_from_the_environment_give_twelve_chunks_on_at_most_three_threads(void **state) {
  (void)state;
  int nt, calls, nseen;
  run_child("--child", "3", &nt, &calls, &nseen);
  assert_int_equal(nt, 3);
  assert_int_equal(calls, 12);
  assert_true(nseen >= 2 && nseen <= 3);
}

static void a_missing_or_bad_thread_count_means_the_online_cpus(void **state) {
  (void)state;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  static const char *const bad[] = {"0", "-2", "abc", "4x", ""};
  int nt, calls, nseen;
  run_child("--count", NULL, &nt, &calls, &nseen);
  assert_int_equal(nt, cpus);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    run_child("--count", bad[i], &nt, &calls, &nseen);
    assert_int_equal(nt, cpus);
  }
}

static void a_huge_thread_count_is_clamped(void **state) {
  (void)state;
  int nt, calls, nseen;
  run_child("--count", "99999999999999999999", &nt, &calls, &nseen);
  assert_int_equal(nt, 1024);
}

// ---- the kernel error record ----
typedef struct Faulty {
  tdsl_kernel_error *err;
  int64_t first_bad;  // iterations i >= first_bad with i % 7 == 3 fail
} Faulty;

static void faulty_body(void *ctx, int64_t begin, int64_t end) {
  Faulty *f = ctx;
  // Highest iteration first, so a naive "first raise wins" would keep the wrong one.
  for (int64_t i = end - 1; i >= begin; i--) {
    tdsl_kernel_error_raise(f->err, -1, 0, i);  // not an error: ignored
    if (i >= f->first_bad && i % 7 == 3)
      tdsl_kernel_error_raise(f->err, (int)(i % 3), (long long)i * 10, i);
  }
}

static void a_kernel_error_keeps_the_lowest_iteration_across_threads(void **state) {
  (void)state;
  for (int rep = 0; rep < 50; rep++) {
    tdsl_kernel_error err = TDSL_KERNEL_ERROR_INIT;
    Faulty f = {&err, 500};
    tdsl_parallel_for(10000, 1, faulty_body, &f);
    assert_int_equal(err.iter, 500);  // 500 % 7 == 3
    assert_int_equal(err.k, 500 % 3);
    assert_int_equal(err.value, 5000);
    assert_int_equal(err.sealed, 0);
  }
}

static void a_negative_error_number_is_ignored(void **state) {
  (void)state;
  tdsl_kernel_error err = TDSL_KERNEL_ERROR_INIT;
  tdsl_kernel_error_raise(&err, -1, 7, 0);
  assert_int_equal(err.k, -1);
  assert_int_equal(err.iter, INT64_MAX);
}

static void sequential_code_keeps_its_first_error(void **state) {
  (void)state;
  tdsl_kernel_error err = TDSL_KERNEL_ERROR_INIT;
  tdsl_kernel_error_raise(&err, 2, 20, INT64_MAX);
  tdsl_kernel_error_raise(&err, 1, 10, INT64_MAX);
  assert_int_equal(err.k, 2);
  assert_int_equal(err.value, 20);
}

static void a_sealed_error_survives_a_later_loop(void **state) {
  (void)state;
  tdsl_kernel_error err = TDSL_KERNEL_ERROR_INIT;
  Faulty f = {&err, 900};
  tdsl_parallel_for(1000, 1, faulty_body, &f);  // fails first at 906
  assert_int_equal(err.iter, 906);
  tdsl_kernel_error_seal(&err);
  assert_int_equal(err.sealed, 1);
  f.first_bad = 0;
  tdsl_parallel_for(1000, 1, faulty_body, &f);  // fails at 3, 10, ...: too late
  assert_int_equal(err.iter, 906);
  assert_int_equal(err.k, 906 % 3);
  assert_int_equal(err.value, 9060);
}

static void sealing_without_an_error_leaves_the_next_loop_free_to_fail(void **state) {
  (void)state;
  tdsl_kernel_error err = TDSL_KERNEL_ERROR_INIT;
  tdsl_kernel_error_seal(&err);
  assert_int_equal(err.sealed, 0);
  Faulty f = {&err, 0};
  tdsl_parallel_for(1000, 1, faulty_body, &f);
  assert_int_equal(err.iter, 3);
  assert_int_equal(err.value, 30);
}

int main(int argc, char **argv) {
  if (argc == 2 && strncmp(argv[1], "--", 2) == 0)
    return child_main(argv[1]);
  setenv("TDSL_NUM_THREADS", "4", 1);  // before the pool's first use
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_index_runs_exactly_once_for_many_sizes_and_grains),
      cmocka_unit_test(an_empty_loop_calls_nothing),
      cmocka_unit_test(a_loop_smaller_than_two_grains_runs_once_on_the_caller),
      cmocka_unit_test(a_large_loop_runs_on_several_threads),
      cmocka_unit_test(many_loops_in_a_row_each_cover_their_range),
      cmocka_unit_test(idle_workers_sleep_instead_of_spinning),
      cmocka_unit_test(a_loop_inside_a_task_runs_serially_and_completes),
      cmocka_unit_test(two_user_threads_may_run_loops_at_the_same_time),
      cmocka_unit_test(a_forked_child_runs_loops_serially),
      cmocka_unit_test(one_thread_from_the_environment_runs_every_loop_serially),
      cmocka_unit_test(three_threads_from_the_environment_give_twelve_chunks_on_at_most_three_threads),
      cmocka_unit_test(a_missing_or_bad_thread_count_means_the_online_cpus),
      cmocka_unit_test(a_huge_thread_count_is_clamped),
      cmocka_unit_test(a_negative_error_number_is_ignored),
      cmocka_unit_test(sequential_code_keeps_its_first_error),
      cmocka_unit_test(a_kernel_error_keeps_the_lowest_iteration_across_threads),
      cmocka_unit_test(a_sealed_error_survives_a_later_loop),
      cmocka_unit_test(sealing_without_an_error_leaves_the_next_loop_free_to_fail),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
