// tests/unit/test_runtime.c: libtdslrt's tensors, storage refcounting and the
// storage cache, views,
// contiguous copies, f16/bf16 conversions, JSON number text, the seeded generator
// and PyTorch-style printing. Expected numbers were computed independently (NumPy,
// exact arithmetic) and pasted in as literals, each with a note saying how.
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tdsl.h"

// ---- helpers ----

static tdsl_tensor f32_tensor(int ndim, const int64_t *shape, const float *vals, size_t n) {
  tdsl_tensor t = {0};
  assert_int_equal(
      tdsl_tensor_from_data(&t, TDSL_F32, ndim, shape, NULL, 0, vals, n * sizeof(float)), 0);
  return t;
}

// Captures what fn writes to a FILE * into a malloc'ed string.
static char *capture_json(const tdsl_tensor *t) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  tdsl_write_json_data(f, t);
  fclose(f);
  return buf;
}

static char *capture_print(const tdsl_tensor *t) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  tdsl_print(f, t);
  fclose(f);
  return buf;
}

static void assert_json(const tdsl_tensor *t, const char *want) {
  char *got = capture_json(t);
  assert_string_equal(got, want);
  free(got);
}

static void assert_print(const tdsl_tensor *t, const char *want) {
  char *got = capture_print(t);
  assert_string_equal(got, want);
  free(got);
}

static const char *fmt(double v, tdsl_dtype dt) {
  static char buf[64];
  return tdsl_format_float(buf, sizeof buf, v, dt);
}

// ---- errors ----

static void set_error_returns_nonzero_and_keeps_the_message(void **state) {
  (void)state;
  assert_int_not_equal(tdsl_set_error("bad %s %d", "thing", 3), 0);
  assert_string_equal(tdsl_last_error(), "bad thing 3");
  assert_int_not_equal(tdsl_set_error("again: %s", tdsl_last_error()), 0);
  assert_string_equal(tdsl_last_error(), "again: bad thing 3");
  tdsl_clear_error();
  assert_string_equal(tdsl_last_error(), "");
}

static void dtype_names_round_trip(void **state) {
  (void)state;
  for (int i = 0; i < TDSL_DTYPE_COUNT; i++) {
    tdsl_dtype dt;
    assert_int_equal(tdsl_dtype_from_name(tdsl_dtype_name((tdsl_dtype)i), &dt), 0);
    assert_int_equal(dt, i);
  }
  assert_int_equal(tdsl_dtype_size(TDSL_BF16), 2);
  assert_int_equal(tdsl_dtype_size(TDSL_BOOL), 1);
  tdsl_dtype dt;
  assert_int_not_equal(tdsl_dtype_from_name("f128", &dt), 0);
  assert_string_equal(tdsl_last_error(), "unknown dtype 'f128'");
}

// ---- complex tensors ----

static void complex_tensor(tdsl_tensor *t, tdsl_dtype dt, int ndim, const int64_t *shape, const double *pairs) {
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) n *= shape[i];
  if (dt == TDSL_C64) {
    float f[64];
    for (int64_t i = 0; i < 2 * n; i++) f[i] = (float)pairs[i];
    assert_int_equal(tdsl_tensor_from_data(t, dt, ndim, shape, NULL, 0, f, (size_t)(2 * n) * sizeof(float)), 0);
  } else {
    assert_int_equal(tdsl_tensor_from_data(t, dt, ndim, shape, NULL, 0, pairs, (size_t)(2 * n) * sizeof(double)), 0);
  }
}

static void a_complex_tensor_views_its_float_pairs(void **state) {
  (void)state;
  double v[12] = {0};
  tdsl_tensor z = {0}, t = {0}, r = {0}, back = {0};
  complex_tensor(&z, TDSL_C64, 2, (int64_t[]){2, 3}, v);
  // z.transpose(0, 1)[1:]: strides (1, 3), offset 1 in complex elements
  assert_int_equal(tdsl_tensor_view(&t, &z, 2, (int64_t[]){2, 2}, (int64_t[]){1, 3}, 1), 0);
  assert_int_equal(tdsl_tensor_as_real(&r, &t), 0);
  assert_int_equal(r.dtype, TDSL_F32);
  assert_int_equal(r.ndim, 3);
  assert_int_equal(r.shape[2], 2);
  assert_int_equal(r.strides[0], 2);
  assert_int_equal(r.strides[1], 6);
  assert_int_equal(r.strides[2], 1);
  assert_int_equal(r.offset, 2);
  assert_ptr_equal(r.storage, z.storage);
  assert_int_equal(tdsl_tensor_as_complex(&back, &r), 0);
  assert_int_equal(back.dtype, TDSL_C64);
  assert_int_equal(back.ndim, 2);
  assert_int_equal(back.strides[1], 3);
  assert_int_equal(back.offset, 1);
  tdsl_tensor_release(&back);
  // PyTorch's conditions: a last dim of 2 with stride 1, even strides and offset
  assert_int_equal(tdsl_tensor_view(&back, &r, 2, (int64_t[]){2, 2}, (int64_t[]){2, 1}, 3), 0);
  tdsl_tensor odd = {0};
  assert_int_not_equal(tdsl_tensor_as_complex(&odd, &back), 0);
  tdsl_tensor_release(&back);
  assert_int_not_equal(tdsl_tensor_as_real(&odd, &r), 0);  // a float tensor has no pairs
  tdsl_tensor_release(&r);
  tdsl_tensor_release(&t);
  tdsl_tensor_release(&z);
}

static void complex_tensors_print_and_write_json_as_pytorch_and_numpy_do(void **state) {
  (void)state;
  tdsl_tensor z = {0};
  complex_tensor(&z, TDSL_C64, 1, (int64_t[]){3}, (const double[]){1, 2, -0.5, -3.25, 0, 3});
  assert_print(&z, "tensor([ 1.0000+2.0000j, -0.5000-3.2500j,  0.0000+3.0000j])\n");
  assert_json(&z, "[[1.0, 2.0], [-0.5, -3.25], [0.0, 3.0]]");
  tdsl_tensor_release(&z);
  complex_tensor(&z, TDSL_C128, 1, (int64_t[]){3}, (const double[]){1, 2, -0.5, -3.25, 0, 3});
  assert_print(&z, "tensor([ 1.0000+2.0000j, -0.5000-3.2500j,  0.0000+3.0000j],\n       dtype=torch.complex128)\n");
  tdsl_tensor_release(&z);
  // each part has its own format (torch's two formatters); only the real part is padded
  complex_tensor(&z, TDSL_C64, 2, (int64_t[]){2, 2}, (const double[]){1, 1, 2e-5, 1, 1e9, 0, 0, 0});
  assert_print(&z, "tensor([[1.0000e+00+1.j, 2.0000e-05+1.j],\n        [1.0000e+09+0.j, 0.0000e+00+0.j]])\n");
  tdsl_tensor_release(&z);
  complex_tensor(&z, TDSL_C64, 1, (int64_t[]){3}, (const double[]){1, 2, 2.5, -1, NAN, INFINITY});
  assert_print(&z, "tensor([1.0000+2.j, 2.5000-1.j,    nan+infj])\n");
  tdsl_tensor_release(&z);
  complex_tensor(&z, TDSL_C64, 0, NULL, (const double[]){1, 2});
  assert_print(&z, "tensor(1.+2.j)\n");
  tdsl_tensor_release(&z);
}

// ---- storage and tensors ----

static void new_storage_is_zeroed_with_one_reference(void **state) {
  (void)state;
  tdsl_storage *s = tdsl_storage_new(16);
  assert_non_null(s);
  assert_int_equal(s->refcount, 1);
  assert_int_equal(s->nbytes, 16);
  assert_int_equal(s->device, 0);
  for (int i = 0; i < 16; i++) assert_int_equal(((unsigned char *)s->data)[i], 0);
  tdsl_storage_retain(s);
  assert_int_equal(s->refcount, 2);
  tdsl_storage_release(s);
  assert_int_equal(s->refcount, 1);
  tdsl_storage_release(s);  // freed: the sanitizer would report a leak otherwise
  tdsl_storage_release(NULL);
}

static void wrapped_storage_views_the_callers_memory_and_never_frees_it(void **state) {
  (void)state;
  float data[6] = {0, 1, 2, 3, 4, 5};  // on the stack: freeing it would be caught
  tdsl_storage *s = tdsl_storage_wrap(data, sizeof data);
  assert_non_null(s);
  assert_ptr_equal(s->data, data);
  tdsl_tensor base = {.storage = s, .dtype = TDSL_F32, .ndim = 1, .shape = {6}, .strides = {1}}, t;
  assert_int_equal(tdsl_tensor_view(&t, &base, 2, (int64_t[]){2, 2}, (int64_t[]){3, 1}, 1), 0);
  tdsl_tensor_set_f64(&t, (int64_t[]){1, 1}, 9);
  assert_true(data[5] == 9);
  tdsl_tensor_release(&t);
  assert_int_equal(s->refcount, 1);
  tdsl_tensor_release(&base);  // frees the record only
  assert_true(data[0] == 0);
}

// ---- the storage cache ----
#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

// The cache's tests are compiled out of sanitizer builds, whose storage.c has no cache (so
// that ASan sees each block freed); main says so. Elsewhere the cache is on unless
// TDSL_STORAGE_CACHE=0 turns it off (a skip: the setting was asked for). Starts from an
// empty cache.
#include "sanitized.h"  // (runtime/)
#if !SANITIZED
static void need_cache(void) {
  if (tdsl_storage_cache_limit() == 0) {
    const char *env = getenv("TDSL_STORAGE_CACHE");
    if (env && strcmp(env, "0") == 0) skip();
    fail_msg("the storage cache is off in a build without sanitizers");
  }
  tdsl_storage_cache_trim();
}
#endif  // !SANITIZED

static void storage_data_is_64_byte_aligned(void **state) {
  (void)state;
  size_t sizes[] = {0, 1, 100, 300 * KIB, 5 * MIB};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    tdsl_storage *s = tdsl_storage_new_uninit(sizes[i]), *z = tdsl_storage_new(sizes[i]);
    assert_int_equal((uintptr_t)s->data % 64, 0);
    assert_int_equal((uintptr_t)z->data % 64, 0);
    tdsl_storage_release(s);
    tdsl_storage_release(z);
  }
}

#if !SANITIZED
static void a_released_large_block_is_reused_for_the_same_size(void **state) {
  (void)state;
  need_cache();
  tdsl_storage *s = tdsl_storage_new_uninit(MIB);
  void *data = s->data;
  tdsl_storage_release(s);
  int n;
  assert_true(tdsl_storage_cache_bytes(&n) >= MIB);
  assert_int_equal(n, 1);
  s = tdsl_storage_new_uninit(MIB);
  assert_ptr_equal(s->data, data);
  assert_int_equal(tdsl_storage_cache_bytes(&n), 0);
  tdsl_storage_release(s);
}

static void small_blocks_are_not_cached(void **state) {
  (void)state;
  need_cache();
  tdsl_storage_release(tdsl_storage_new(100 * KIB));
  assert_int_equal(tdsl_storage_cache_bytes(NULL), 0);
}

static void a_reused_dirty_block_comes_back_zeroed(void **state) {
  (void)state;
  need_cache();
  tdsl_storage *s = tdsl_storage_new(MIB);
  void *data = s->data;
  memset(data, 0xa5, MIB);
  tdsl_storage_release(s);
  s = tdsl_storage_new(MIB - 100);
  assert_ptr_equal(s->data, data);
  const unsigned char *b = s->data;
  for (size_t i = 0; i < MIB - 100; i++) {
    if (b[i] != 0) fail_msg("byte %zu is %d", i, b[i]);
  }
  tdsl_storage_release(s);
}

static void a_block_is_reused_only_when_at_most_twice_the_size(void **state) {
  (void)state;
  need_cache();
  tdsl_storage *big = tdsl_storage_new_uninit(4 * MIB);
  void *data = big->data;
  tdsl_storage_release(big);
  tdsl_storage *small = tdsl_storage_new_uninit(MIB);  // 4 MiB would waste 3
  assert_ptr_not_equal(small->data, data);
  tdsl_storage *fits = tdsl_storage_new_uninit(3 * MIB);
  assert_ptr_equal(fits->data, data);
  tdsl_storage_release(small);
  tdsl_storage_release(fits);
}

static void the_smallest_fitting_block_is_taken(void **state) {
  (void)state;
  need_cache();
  tdsl_storage *a = tdsl_storage_new_uninit(3 * MIB), *b = tdsl_storage_new_uninit(2 * MIB);
  void *da = a->data, *db = b->data;
  tdsl_storage_release(a);
  tdsl_storage_release(b);
  size_t want = 1536 * KIB + 4 * KIB;  // both blocks fit; 2 MiB is the better one
  tdsl_storage *s = tdsl_storage_new_uninit(want), *t = tdsl_storage_new_uninit(want);
  assert_ptr_equal(s->data, db);
  assert_ptr_equal(t->data, da);
  tdsl_storage_release(s);
  tdsl_storage_release(t);
}

static void the_cache_keeps_at_most_sixteen_blocks(void **state) {
  (void)state;
  need_cache();
  tdsl_storage *s[20];
  for (int i = 0; i < 20; i++) s[i] = tdsl_storage_new(256 * KIB);
  for (int i = 0; i < 20; i++) tdsl_storage_release(s[i]);
  int n;
  assert_int_equal(tdsl_storage_cache_bytes(&n), 16 * 256 * KIB);
  assert_int_equal(n, 16);
  tdsl_storage_cache_trim();
  assert_int_equal(tdsl_storage_cache_bytes(&n), 0);
  assert_int_equal(n, 0);
}

static void the_cache_keeps_within_its_byte_limit(void **state) {
  (void)state;
  need_cache();
  // Zeroed storages of fresh blocks are never written: these cost address space only.
  size_t limit = tdsl_storage_cache_limit(), part = limit / 5 * 3;
  tdsl_storage *a = tdsl_storage_new(part), *b = tdsl_storage_new(part);
  void *db = b->data;
  tdsl_storage_release(a);
  tdsl_storage_release(b);  // evicts a
  int n;
  assert_true(tdsl_storage_cache_bytes(&n) <= limit);
  assert_int_equal(n, 1);
  tdsl_storage *c = tdsl_storage_new(part);
  assert_ptr_equal(c->data, db);
  tdsl_storage_release(c);
  tdsl_storage_cache_trim();
  tdsl_storage_release(tdsl_storage_new(limit + 1));  // larger than the whole cache
  assert_int_equal(tdsl_storage_cache_bytes(&n), 0);
  assert_int_equal(n, 0);
}
#endif  // !SANITIZED

// Each thread takes and releases blocks of a few sizes, checking that no other
// thread wrote into a block while it held it.
static void *churn(void *arg) {
  unsigned char mark = (unsigned char)(uintptr_t)arg;
  for (int i = 0; i < 200; i++) {
    size_t n = (256 + 64 * (size_t)(i % 8)) * KIB;
    tdsl_storage *s = tdsl_storage_new_uninit(n);
    if (!s) return "allocation failed";
    unsigned char *b = s->data;
    memset(b, mark, 4 * KIB);
    memset(b + n - 4 * KIB, mark, 4 * KIB);
    sched_yield();
    for (size_t k = 0; k < 4 * KIB; k++) {
      if (b[k] != mark || b[n - 1 - k] != mark) return "a block was shared";
    }
    tdsl_storage_release(s);
  }
  return NULL;
}

static void threads_sharing_the_cache_never_share_a_block(void **state) {
  (void)state;
  pthread_t t[4];
  for (int i = 0; i < 4; i++)
    assert_int_equal(pthread_create(&t[i], NULL, churn, (void *)(uintptr_t)(i + 1)), 0);
  for (int i = 0; i < 4; i++) {
    void *r;
    assert_int_equal(pthread_join(t[i], &r), 0);
    if (r) fail_msg("%s", (const char *)r);
  }
  int n;
  assert_true(tdsl_storage_cache_bytes(&n) <= tdsl_storage_cache_limit());
  assert_true(n <= 16);
}

// `test_runtime --storage-child` prints "limit cached zeroed uninit": the cache's
// limit, the bytes it holds after a 1 MiB block is released, and the first byte of a
// zeroed and of an uninitialised 1 MiB storage made after that.
static int storage_child(void) {
  tdsl_storage_release(tdsl_storage_new(MIB));
  size_t cached = tdsl_storage_cache_bytes(NULL);
  tdsl_storage *z = tdsl_storage_new(MIB), *u = tdsl_storage_new_uninit(MIB);
  printf("%zu %zu %d %d\n", tdsl_storage_cache_limit(), cached, ((unsigned char *)z->data)[0],
         ((unsigned char *)u->data)[0]);
  tdsl_storage_release(z);
  tdsl_storage_release(u);
  return 0;
}

// Runs `test_runtime --storage-child` with the environment setting env.
static void run_storage_child(const char *env, size_t *limit, size_t *cached, int *zeroed, int *uninit) {
  char self[4096], cmd[4200 + 64];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  assert_true(len > 0);
  self[len] = '\0';
  snprintf(cmd, sizeof cmd, "env -u TDSL_STORAGE_CACHE -u TDSL_STORAGE_POISON %s '%s' --storage-child", env,
           self);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  assert_int_equal(fscanf(p, "%zu %zu %d %d", limit, cached, zeroed, uninit), 4);
  assert_int_equal(pclose(p), 0);
}

static void storage_cache_zero_turns_the_cache_off(void **state) {
  (void)state;
  size_t limit, cached;
  int zeroed, uninit;
  run_storage_child("TDSL_STORAGE_CACHE=0", &limit, &cached, &zeroed, &uninit);
  assert_int_equal(limit, 0);
  assert_int_equal(cached, 0);
  assert_int_equal(zeroed, 0);
}

static void storage_poison_fills_only_uninitialised_storages(void **state) {
  (void)state;
  size_t limit, cached;
  int zeroed, uninit;
  run_storage_child("TDSL_STORAGE_POISON=0xa5", &limit, &cached, &zeroed, &uninit);
  assert_int_equal(cached, limit ? MIB : 0);
  assert_int_equal(zeroed, 0);
  assert_int_equal(uninit, 0xa5);
}

static void empty_tensor_has_pytorch_contiguous_strides(void **state) {
  (void)state;
  tdsl_tensor t = {0};
  assert_int_equal(tdsl_tensor_empty(&t, TDSL_F64, 3, (int64_t[]){2, 0, 3}), 0);
  // torch.empty(2, 0, 3).stride() == (3, 3, 1): max(size, 1)
  assert_int_equal(t.strides[0], 3);
  assert_int_equal(t.strides[1], 3);
  assert_int_equal(t.strides[2], 1);
  assert_int_equal(tdsl_tensor_numel(&t), 0);
  assert_true(tdsl_tensor_is_contiguous(&t));
  tdsl_tensor_release(&t);
  assert_int_equal(tdsl_tensor_empty(&t, TDSL_I32, 3, (int64_t[]){4, 1, 5}), 0);
  assert_int_equal(t.strides[0], 5);
  assert_int_equal(t.strides[1], 5);
  assert_int_equal(t.strides[2], 1);
  assert_int_equal(t.storage->nbytes, 4 * 5 * 4);
  assert_int_equal(tdsl_tensor_get_f64(&t, (int64_t[]){3, 0, 4}), 0);
  tdsl_tensor_release(&t);
  assert_null(t.storage);
  tdsl_tensor_release(&t);  // safe on a zeroed tensor
}

static void zero_dim_tensor_has_one_element(void **state) {
  (void)state;
  tdsl_tensor t = {0};
  assert_int_equal(tdsl_tensor_empty(&t, TDSL_F32, 0, NULL), 0);
  assert_int_equal(tdsl_tensor_numel(&t), 1);
  tdsl_tensor_set_f64(&t, NULL, 2.5);
  assert_true(tdsl_tensor_get_f64(&t, NULL) == 2.5);
  tdsl_tensor_release(&t);
}

static void views_share_storage_and_keep_it_alive(void **state) {
  (void)state;
  float v[6] = {1, 2, 3, 4, 5, 6};
  tdsl_tensor base = f32_tensor(2, (int64_t[]){2, 3}, v, 6), col = {0};
  // base[:, 1]: shape (2,), stride (3,), offset 1
  assert_int_equal(tdsl_tensor_view(&col, &base, 1, (int64_t[]){2}, (int64_t[]){3}, 1), 0);
  assert_ptr_equal(col.storage, base.storage);
  assert_int_equal(base.storage->refcount, 2);
  tdsl_tensor_set_f64(&col, (int64_t[]){0}, 999);
  assert_true(tdsl_tensor_get_f64(&base, (int64_t[]){0, 1}) == 999);
  tdsl_tensor_release(&base);
  assert_int_equal(col.storage->refcount, 1);
  assert_true(tdsl_tensor_get_f64(&col, (int64_t[]){1}) == 5);
  tdsl_tensor_release(&col);
}

static void view_of_itself_keeps_one_reference(void **state) {
  (void)state;
  float v[4] = {1, 2, 3, 4};
  tdsl_tensor t = f32_tensor(1, (int64_t[]){4}, v, 4);
  assert_int_equal(tdsl_tensor_view(&t, &t, 1, (int64_t[]){2}, (int64_t[]){2}, 1), 0);
  assert_int_equal(t.storage->refcount, 1);
  assert_true(tdsl_tensor_get_f64(&t, (int64_t[]){1}) == 4);
  tdsl_tensor_release(&t);
}

static void view_outside_storage_is_refused(void **state) {
  (void)state;
  float v[6] = {0};
  tdsl_tensor base = f32_tensor(1, (int64_t[]){6}, v, 6), out = {0};
  assert_int_not_equal(tdsl_tensor_view(&out, &base, 2, (int64_t[]){2, 3}, (int64_t[]){3, 1}, 1),
                       0);
  assert_string_equal(tdsl_last_error(), "view reaches outside its storage of 6 elements");
  assert_int_not_equal(tdsl_tensor_view(&out, &base, 1, (int64_t[]){2}, (int64_t[]){-1}, 0), 0);
  assert_int_not_equal(tdsl_tensor_view(&out, &base, 1, (int64_t[]){2}, (int64_t[]){INT64_MAX}, 0),
                       0);
  assert_int_not_equal(tdsl_tensor_view(&out, &base, 1, (int64_t[]){1}, (int64_t[]){1}, -1), 0);
  assert_int_not_equal(tdsl_tensor_view(&out, &base, 1, (int64_t[]){-2}, (int64_t[]){1}, 0), 0);
  assert_string_equal(tdsl_last_error(), "negative size -2 in dim 0");
  assert_int_not_equal(tdsl_tensor_view(&out, &base, 9, (int64_t[9]){0}, NULL, 0), 0);
  assert_string_equal(tdsl_last_error(), "a tensor has 0 to 8 dims, not 9");
  assert_int_equal(base.storage->refcount, 1);  // failures take no reference
  // A zero-size view reaches nothing, so any offset and strides are fine.
  assert_int_equal(tdsl_tensor_view(&out, &base, 2, (int64_t[]){0, 5}, (int64_t[]){100, 7}, 50), 0);
  tdsl_tensor_release(&out);
  tdsl_tensor_release(&base);
}

static void absurd_shapes_are_refused(void **state) {
  (void)state;
  tdsl_tensor t = {0};
  assert_int_not_equal(tdsl_tensor_empty(&t, TDSL_F32, 2, (int64_t[]){INT64_MAX, 4}), 0);
  assert_string_equal(tdsl_last_error(), "tensor too large");
  assert_int_not_equal(tdsl_tensor_empty(&t, TDSL_F32, 3, (int64_t[]){0, INT64_MAX, 4}), 0);
  assert_int_not_equal(tdsl_tensor_empty(&t, TDSL_F64, 1, (int64_t[]){INT64_MAX / 4 + 1}),
                       0);  // 2^64 bytes
  assert_null(t.storage);
}

static void view_with_negative_stride_inside_storage_is_accepted(void **state) {
  (void)state;
  float v[4] = {1, 2, 3, 4};
  tdsl_tensor base = f32_tensor(1, (int64_t[]){4}, v, 4), flip = {0};
  assert_int_equal(tdsl_tensor_view(&flip, &base, 1, (int64_t[]){4}, (int64_t[]){-1}, 3), 0);
  assert_false(tdsl_tensor_is_contiguous(&flip));
  assert_true(tdsl_tensor_get_f64(&flip, (int64_t[]){0}) == 4);
  assert_json(&flip, "[4.0, 3.0, 2.0, 1.0]");
  tdsl_tensor_release(&flip);
  tdsl_tensor_release(&base);
}

static void from_data_copies_the_bytes(void **state) {
  (void)state;
  int32_t v[3] = {7, 8, 9};
  tdsl_tensor t = {0};
  assert_int_equal(tdsl_tensor_from_data(&t, TDSL_I32, 1, (int64_t[]){3}, NULL, 0, v, sizeof v), 0);
  v[0] = 0;
  assert_int_equal(tdsl_tensor_get_i64(&t, (int64_t[]){0}), 7);
  assert_ptr_not_equal(t.storage->data, v);
  tdsl_tensor_release(&t);
  // A view that needs more bytes than were given is refused.
  assert_int_not_equal(tdsl_tensor_from_data(&t, TDSL_I32, 1, (int64_t[]){4}, NULL, 0, v, sizeof v),
                       0);
  assert_null(t.storage);
}

static void contiguous_copy_of_transposed_view_is_row_major(void **state) {
  (void)state;
  float v[6] = {1, 2, 3, 4, 5, 6};
  tdsl_tensor base = f32_tensor(2, (int64_t[]){2, 3}, v, 6), tr = {0}, c = {0};
  assert_int_equal(tdsl_tensor_view(&tr, &base, 2, (int64_t[]){3, 2}, (int64_t[]){1, 3}, 0), 0);
  assert_false(tdsl_tensor_is_contiguous(&tr));
  assert_int_equal(tdsl_tensor_contiguous(&c, &tr), 0);
  assert_true(tdsl_tensor_is_contiguous(&c));
  assert_ptr_not_equal(c.storage, base.storage);
  assert_int_equal(c.strides[0], 2);
  assert_int_equal(c.strides[1], 1);
  const float want[6] = {1, 4, 2, 5, 3, 6};
  assert_memory_equal(tdsl_tensor_data(&c), want, sizeof want);
  tdsl_tensor_release(&c);
  tdsl_tensor_release(&tr);
  tdsl_tensor_release(&base);
}

static void contiguous_copy_of_flipped_strided_view_reverses_it(void **state) {
  (void)state;
  int64_t v[12];
  for (int i = 0; i < 12; i++) v[i] = i;
  tdsl_tensor base = {0}, view = {0}, c = {0};
  assert_int_equal(
      tdsl_tensor_from_data(&base, TDSL_I64, 2, (int64_t[]){3, 4}, NULL, 0, v, sizeof v), 0);
  // base.flip(0)[:, ::2]: shape (3, 2), strides (-4, 2), offset 8
  assert_int_equal(tdsl_tensor_view(&view, &base, 2, (int64_t[]){3, 2}, (int64_t[]){-4, 2}, 8), 0);
  assert_int_equal(tdsl_tensor_contiguous(&c, &view), 0);
  const int64_t want[6] = {8, 10, 4, 6, 0, 2};
  assert_memory_equal(tdsl_tensor_data(&c), want, sizeof want);
  tdsl_tensor_release(&c);
  tdsl_tensor_release(&view);
  tdsl_tensor_release(&base);
}

static void copy_writes_through_the_destination_strides(void **state) {
  (void)state;
  float z[6] = {0}, s[3] = {1, 2, 3};
  tdsl_tensor dst = f32_tensor(2, (int64_t[]){2, 3}, z, 6),
              src = f32_tensor(1, (int64_t[]){3}, s, 3);
  tdsl_tensor row = {0}, col = {0};
  assert_int_equal(tdsl_tensor_view(&row, &dst, 1, (int64_t[]){3}, (int64_t[]){1}, 3), 0);
  assert_int_equal(tdsl_tensor_copy(&row, &src), 0);
  assert_json(&dst, "[0.0, 0.0, 0.0, 1.0, 2.0, 3.0]");
  assert_int_equal(tdsl_tensor_view(&col, &dst, 1, (int64_t[]){2}, (int64_t[]){3}, 0), 0);
  assert_int_not_equal(tdsl_tensor_copy(&col, &src), 0);
  assert_string_equal(tdsl_last_error(), "copy between tensors of different shapes");
  tdsl_tensor_release(&col);
  tdsl_tensor_release(&row);
  tdsl_tensor_release(&src);
  tdsl_tensor_release(&dst);
}

static void set_f64_saturates_ints_and_rounds_floats(void **state) {
  (void)state;
  tdsl_tensor t = {0};
  assert_int_equal(tdsl_tensor_empty(&t, TDSL_I32, 1, (int64_t[]){3}), 0);
  tdsl_tensor_set_f64(&t, (int64_t[]){0}, 1e20);
  tdsl_tensor_set_f64(&t, (int64_t[]){1}, NAN);
  tdsl_tensor_set_f64(&t, (int64_t[]){2}, -2.7);
  assert_json(&t, "[2147483647, 0, -2]");
  tdsl_tensor_release(&t);
}

// ---- f16 / bf16 ----

static void f16_conversion_rounds_to_nearest_even(void **state) {
  (void)state;
  assert_int_equal(tdsl_f32_to_f16(1.0f), 0x3c00);
  assert_int_equal(tdsl_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);             // tie, even stays
  assert_int_equal(tdsl_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);         // tie, odd goes up
  assert_int_equal(tdsl_f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);  // above the tie
  assert_int_equal(tdsl_f32_to_f16(0.1f), 0x2e66);                        // np.float16(0.1)
  assert_int_equal(tdsl_f32_to_f16(-2.0f), 0xc000);
  assert_int_equal(tdsl_f32_to_f16(65504.0f), 0x7bff);  // largest finite
  assert_int_equal(tdsl_f32_to_f16(65519.0f), 0x7bff);
  assert_int_equal(tdsl_f32_to_f16(65520.0f), 0x7c00);  // rounds to inf
  assert_int_equal(tdsl_f32_to_f16(INFINITY), 0x7c00);
  assert_int_equal(tdsl_f32_to_f16(-INFINITY), 0xfc00);
  assert_int_equal(tdsl_f32_to_f16(-0.0f), 0x8000);
}

static void f16_conversion_handles_subnormals_and_nan(void **state) {
  (void)state;
  assert_int_equal(tdsl_f32_to_f16(0x1p-24f), 0x0001);             // smallest subnormal
  assert_int_equal(tdsl_f32_to_f16(0x1p-25f), 0x0000);             // tie with 0: even
  assert_int_equal(tdsl_f32_to_f16(0x1.8p-25f), 0x0001);           // 0.75 ulp rounds up
  assert_int_equal(tdsl_f32_to_f16(3 * 0x1p-25f), 0x0002);         // 1.5 ulp: tie to even
  assert_int_equal(tdsl_f32_to_f16(0x1p-14f), 0x0400);             // smallest normal
  assert_int_equal(tdsl_f32_to_f16(0x1p-14f - 0x1p-25f), 0x0400);  // subnormal rounds up into it
  assert_int_equal(tdsl_f32_to_f16(-1e-10f), 0x8000);
  assert_true(tdsl_f16_to_f32(0x0001) == 0x1p-24f);
  assert_true(tdsl_f16_to_f32(0x03ff) == 0x3ffp-24f);
  assert_true(tdsl_f16_to_f32(0x7bff) == 65504.0f);
  assert_true(isinf(tdsl_f16_to_f32(0xfc00)) && tdsl_f16_to_f32(0xfc00) < 0);
  assert_true(isnan(tdsl_f16_to_f32(0x7e00)));
  assert_true(isnan(tdsl_f16_to_f32(0x7c01)));  // signalling NaN is still NaN
  uint16_t h = tdsl_f32_to_f16(NAN);
  assert_int_equal(h & 0x7c00, 0x7c00);
  assert_int_not_equal(h & 0x03ff, 0);
  assert_true(signbit(tdsl_f16_to_f32(0x8000)));
  for (uint32_t b = 0; b < 0x10000; b++) {  // every non-NaN f16 survives a round trip
    if ((b & 0x7c00) == 0x7c00 && (b & 0x3ff)) continue;
    assert_int_equal(tdsl_f32_to_f16(tdsl_f16_to_f32((uint16_t)b)), b);
  }
}

static void bf16_conversion_rounds_to_nearest_even(void **state) {
  (void)state;
  assert_int_equal(tdsl_f32_to_bf16(1.0f), 0x3f80);
  assert_int_equal(tdsl_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);      // tie, even stays
  assert_int_equal(tdsl_f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);  // tie, odd goes up
  assert_int_equal(tdsl_f32_to_bf16(0.1f), 0x3dcd);
  assert_int_equal(tdsl_f32_to_bf16(3.4028235e38f), 0x7f80);  // f32 max rounds to inf
  assert_int_equal(tdsl_f32_to_bf16(-INFINITY), 0xff80);
  assert_int_equal(tdsl_f32_to_bf16(0x1p-133f), 0x0001);  // smallest bf16 subnormal
  assert_int_equal(tdsl_f32_to_bf16(0x1p-134f), 0x0000);  // tie with 0: even
  assert_true(isnan(tdsl_bf16_to_f32(tdsl_f32_to_bf16(NAN))));
  assert_true(isnan(tdsl_bf16_to_f32(0x7f81)));
  assert_true(tdsl_bf16_to_f32(0x3dcd) == 0.10009765625f);
  assert_true(tdsl_bf16_to_f32(0x0001) == 0x1p-133f);
}

static void f64_narrowing_rounds_once(void **state) {
  (void)state;
  // 1 + 2^-11 + 2^-40 is just above an f16 tie; through f32 it would land on the
  // tie and round down to 1.0.
  double d = 1.0 + 0x1p-11 + 0x1p-40;
  assert_int_equal(tdsl_f64_to_f16(d), 0x3c01);
  assert_int_equal(tdsl_f32_to_f16((float)d), 0x3c00);
  d = 1.0 + 0x1p-8 + 0x1p-40;
  assert_int_equal(tdsl_f64_to_bf16(d), 0x3f81);
  assert_int_equal(tdsl_f64_to_f16(1e300), 0x7c00);
  assert_int_equal(tdsl_f64_to_f16(5e-324), 0x0000);
}

// ---- JSON ----

static void json_floats_are_the_shortest_text_in_python_style(void **state) {
  (void)state;
  assert_string_equal(fmt(1.0, TDSL_F64), "1.0");
  assert_string_equal(fmt(1e-05, TDSL_F64), "1e-05");
  assert_string_equal(fmt(0.1, TDSL_F64), "0.1");
  assert_string_equal(fmt(100.0, TDSL_F64), "100.0");
  assert_string_equal(fmt(1e16, TDSL_F64), "1e+16");
  assert_string_equal(fmt(1234567890123456.0, TDSL_F64), "1234567890123456.0");
  assert_string_equal(fmt(0.0001, TDSL_F64), "0.0001");
  assert_string_equal(fmt(0.00012, TDSL_F64), "0.00012");
  assert_string_equal(fmt(1.5e-7, TDSL_F64), "1.5e-07");
  assert_string_equal(fmt(-2.5e300, TDSL_F64), "-2.5e+300");
  assert_string_equal(fmt(0.3, TDSL_F64), "0.3");
  assert_string_equal(fmt(0.1 + 0.2, TDSL_F64), "0.30000000000000004");  // repr(0.1 + 0.2)
  assert_string_equal(fmt(5e-324, TDSL_F64), "5e-324");
  assert_string_equal(fmt(1.7976931348623157e308, TDSL_F64), "1.7976931348623157e+308");
  assert_string_equal(fmt(-0.0, TDSL_F64), "-0.0");
  assert_string_equal(fmt(0.0, TDSL_F64), "0.0");
  assert_string_equal(fmt(NAN, TDSL_F64), "nan");
  assert_string_equal(fmt(-INFINITY, TDSL_F64), "-inf");
}

static void json_floats_are_shortest_for_their_own_dtype(void **state) {
  (void)state;
  // repr(np.float32(0.1)), repr(np.float32(1/3)), repr(np.float32(16777217)),
  // repr(np.float32(1e-5)):
  assert_string_equal(fmt(0.1f, TDSL_F32), "0.1");
  assert_string_equal(fmt(1.0f / 3.0f, TDSL_F32), "0.33333334");
  assert_string_equal(fmt(16777216.0f, TDSL_F32), "16777216.0");
  assert_string_equal(fmt(1e-5f, TDSL_F32), "1e-05");
  // f16 0.1 is 0.0999755859375 (0x2e66); "0.1" rounds back to it:
  // repr(np.float16(0.1)) == '0.1', repr(np.float16(65504)) == '65500.0',
  // repr(np.float16(1/3)) == '0.3333', repr(np.float16(2**-24)) == '6e-08'.
  assert_string_equal(fmt(tdsl_f16_to_f32(0x2e66), TDSL_F16), "0.1");
  assert_string_equal(fmt(65504.0, TDSL_F16), "65500.0");
  assert_string_equal(fmt(tdsl_f16_to_f32(0x3555), TDSL_F16), "0.3333");
  assert_string_equal(fmt(0x1p-24, TDSL_F16), "6e-08");
  // bf16 0x3dcd is 0.10009765625; "0.1" rounds back to it. 0x4018 is 2.375, whose
  // 3-digit neighbours 2.37 and 2.38 are equally close: the even digit wins, as
  // correctly rounded printf does (checked against an exact-fraction search).
  assert_string_equal(fmt(tdsl_bf16_to_f32(0x3dcd), TDSL_BF16), "0.1");
  assert_string_equal(fmt(2.375, TDSL_BF16), "2.38");
  assert_string_equal(fmt(tdsl_bf16_to_f32(0x7f7f), TDSL_BF16), "3.39e+38");
}

static void json_data_is_flat_and_row_major(void **state) {
  (void)state;
  float v[6] = {1, 2, 3, 4, 5, 6};
  tdsl_tensor base = f32_tensor(2, (int64_t[]){2, 3}, v, 6), tr = {0};
  assert_int_equal(tdsl_tensor_view(&tr, &base, 2, (int64_t[]){3, 2}, (int64_t[]){1, 3}, 0), 0);
  assert_json(&tr, "[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]");  // LANGUAGE.md §10's example
  tdsl_tensor_release(&tr);
  tdsl_tensor_release(&base);
}

static void json_data_writes_each_dtype_its_own_way(void **state) {
  (void)state;
  tdsl_tensor t = {0};
  uint8_t b[3] = {1, 0, 1};
  assert_int_equal(tdsl_tensor_from_data(&t, TDSL_BOOL, 1, (int64_t[]){3}, NULL, 0, b, 3), 0);
  assert_json(&t, "[true, false, true]");
  tdsl_tensor_release(&t);
  int64_t i[2] = {INT64_MIN, 42};
  assert_int_equal(tdsl_tensor_from_data(&t, TDSL_I64, 1, (int64_t[]){2}, NULL, 0, i, sizeof i), 0);
  assert_json(&t, "[-9223372036854775808, 42]");
  tdsl_tensor_release(&t);
  double d[4] = {NAN, INFINITY, -INFINITY, -0.0};
  assert_int_equal(tdsl_tensor_from_data(&t, TDSL_F64, 1, (int64_t[]){4}, NULL, 0, d, sizeof d), 0);
  assert_json(&t, "[\"nan\", \"inf\", \"-inf\", -0.0]");
  tdsl_tensor_release(&t);
  uint16_t h[2] = {0x2e66, 0x3c00};
  assert_int_equal(tdsl_tensor_from_data(&t, TDSL_F16, 1, (int64_t[]){2}, NULL, 0, h, sizeof h), 0);
  assert_json(&t, "[0.1, 1.0]");
  tdsl_tensor_release(&t);
}

static void json_data_of_zero_dim_and_empty_tensors(void **state) {
  (void)state;
  tdsl_tensor t = {0};
  float x = 1.5f;
  assert_int_equal(tdsl_tensor_from_data(&t, TDSL_F32, 0, NULL, NULL, 0, &x, sizeof x), 0);
  assert_json(&t, "[1.5]");
  tdsl_tensor_release(&t);
  assert_int_equal(tdsl_tensor_empty(&t, TDSL_F32, 2, (int64_t[]){3, 0}), 0);
  assert_json(&t, "[]");
  tdsl_tensor_release(&t);
}

// ---- the seeded generator ----

// Expected values from /usr/bin/python3 with NumPy 1.24, independently of this code:
//   s = 0; each draw: s = (s + 0x9E3779B97F4A7C15) % 2**64; z = s;
//   z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) % 2**64;
//   z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) % 2**64; u = z ^ (z >> 31)
//   f = ((u >> 11) * 2.0**-53) * 2 - 1;  repr(np.float32(f)), repr(np.float16(f)),
//   u >> 62, u >> 63
static void splitmix_seed_zero_gives_the_reference_stream(void **state) {
  (void)state;
  uint64_t s = 0;
  const uint64_t want[6] = {0xe220a8397b1dcdafu, 0x6e789e6aa1b965f4u, 0x06c45d188009454fu,
                            0xf88bb8a8724c81ecu, 0x1b39896a51a8749bu, 0x53cb9f0c747ea2eau};
  for (int i = 0; i < 6; i++) assert_true(tdsl_splitmix64_next(&s) == want[i]);
  s = 42;
  assert_true(tdsl_splitmix64_next(&s) == 0xbdd732262feb6e95u);
}

static void fill_random_draws_one_value_per_element_in_row_major_order(void **state) {
  (void)state;
  tdsl_tensor t = {0};
  uint64_t s = 0;
  assert_int_equal(tdsl_tensor_empty(&t, TDSL_F32, 2, (int64_t[]){2, 3}), 0);
  tdsl_fill_random(&t, &s);
  assert_json(&t, "[0.7666216, -0.13694401, -0.94713247, 0.94176394, -0.7873066, -0.34534848]");
  tdsl_tensor_release(&t);

  s = 0;
  assert_int_equal(tdsl_tensor_empty(&t, TDSL_F64, 1, (int64_t[]){2}), 0);
  tdsl_fill_random(&t, &s);
  assert_json(&t, "[0.7666216164272852, -0.13694400590298006]");
  tdsl_tensor_release(&t);

  s = 0;
  assert_int_equal(tdsl_tensor_empty(&t, TDSL_F16, 1, (int64_t[]){6}), 0);
  tdsl_fill_random(&t, &s);
  assert_json(&t, "[0.7666, -0.137, -0.9473, 0.942, -0.787, -0.3455]");
  tdsl_tensor_release(&t);

  s = 0;
  assert_int_equal(tdsl_tensor_empty(&t, TDSL_I32, 1, (int64_t[]){6}), 0);
  tdsl_fill_random(&t, &s);
  assert_json(&t, "[3, 1, 0, 3, 0, 1]");
  tdsl_tensor_release(&t);

  s = 0;
  assert_int_equal(tdsl_tensor_empty(&t, TDSL_BOOL, 1, (int64_t[]){6}), 0);
  tdsl_fill_random(&t, &s);
  assert_json(&t, "[true, false, false, true, false, false]");
  tdsl_tensor_release(&t);
  assert_true(s == 6 * 0x9E3779B97F4A7C15u);  // six draws, no more
}

static void fill_random_follows_the_logical_order_of_a_view(void **state) {
  (void)state;
  tdsl_tensor base = {0}, tr = {0};
  uint64_t s = 0;
  assert_int_equal(tdsl_tensor_empty(&base, TDSL_I64, 2, (int64_t[]){2, 3}), 0);
  assert_int_equal(tdsl_tensor_view(&tr, &base, 2, (int64_t[]){3, 2}, (int64_t[]){1, 3}, 0), 0);
  tdsl_fill_random(&tr, &s);
  assert_json(&tr, "[3, 1, 0, 3, 0, 1]");
  assert_json(&base, "[3, 0, 0, 1, 3, 1]");
  tdsl_tensor_release(&tr);
  tdsl_tensor_release(&base);
}

// ---- printing (expected text follows torch/_tensor_str.py of PyTorch 1.13) ----

static void print_uses_four_decimals_aligned_like_torch(void **state) {
  (void)state;
  float v[4] = {0.1f, -2, 3, 4};
  tdsl_tensor t = f32_tensor(2, (int64_t[]){2, 2}, v, 4);
  assert_print(&t, "tensor([[ 0.1000, -2.0000],\n        [ 3.0000,  4.0000]])\n");
  tdsl_tensor_release(&t);
}

static void print_shows_whole_floats_with_a_trailing_point(void **state) {
  (void)state;
  float v[4] = {1, 2, -30, NAN};
  tdsl_tensor t = f32_tensor(1, (int64_t[]){4}, v, 4);
  assert_print(&t, "tensor([  1.,   2., -30.,  nan])\n");
  tdsl_tensor_release(&t);
  float w[3] = {NAN, 1, INFINITY};
  t = f32_tensor(1, (int64_t[]){3}, w, 3);
  assert_print(&t, "tensor([nan, 1., inf])\n");  // width counts finite non-zero values only
  tdsl_tensor_release(&t);
}

static void print_switches_to_scientific_for_wide_ranges(void **state) {
  (void)state;
  float v[2] = {1e-5f, 1};
  tdsl_tensor t = f32_tensor(1, (int64_t[]){2}, v, 2);
  assert_print(&t, "tensor([1.0000e-05, 1.0000e+00])\n");
  tdsl_tensor_release(&t);
  float w[2] = {1, 1e9f};
  t = f32_tensor(1, (int64_t[]){2}, w, 2);
  assert_print(&t, "tensor([1.0000e+00, 1.0000e+09])\n");
  tdsl_tensor_release(&t);
}

static void print_adds_the_dtype_for_non_default_dtypes(void **state) {
  (void)state;
  tdsl_tensor t = {0};
  int32_t i[3] = {1, 2, 3};
  assert_int_equal(tdsl_tensor_from_data(&t, TDSL_I32, 1, (int64_t[]){3}, NULL, 0, i, sizeof i), 0);
  assert_print(&t, "tensor([1, 2, 3], dtype=torch.int32)\n");
  tdsl_tensor_release(&t);
  int64_t l[2] = {1, -10};
  assert_int_equal(tdsl_tensor_from_data(&t, TDSL_I64, 1, (int64_t[]){2}, NULL, 0, l, sizeof l), 0);
  assert_print(&t, "tensor([  1, -10])\n");
  tdsl_tensor_release(&t);
  uint8_t b[2] = {1, 0};
  assert_int_equal(tdsl_tensor_from_data(&t, TDSL_BOOL, 1, (int64_t[]){2}, NULL, 0, b, 2), 0);
  assert_print(&t, "tensor([ True, False])\n");
  tdsl_tensor_release(&t);
  double d = 2.5;
  assert_int_equal(tdsl_tensor_from_data(&t, TDSL_F64, 0, NULL, NULL, 0, &d, sizeof d), 0);
  assert_print(&t, "tensor(2.5000, dtype=torch.float64)\n");
  tdsl_tensor_release(&t);
  uint16_t h[2] = {0x3c00, 0x3800};
  assert_int_equal(tdsl_tensor_from_data(&t, TDSL_BF16, 1, (int64_t[]){1}, NULL, 0, h, sizeof h),
                   0);
  assert_print(&t, "tensor([0.0078], dtype=torch.bfloat16)\n");  // bf16 0x3c00 = 2^-7
  tdsl_tensor_release(&t);
}

static void print_shows_size_and_dtype_of_empty_tensors(void **state) {
  (void)state;
  tdsl_tensor t = {0};
  assert_int_equal(tdsl_tensor_empty(&t, TDSL_F32, 1, (int64_t[]){0}), 0);
  assert_print(&t, "tensor([])\n");
  tdsl_tensor_release(&t);
  assert_int_equal(tdsl_tensor_empty(&t, TDSL_I32, 2, (int64_t[]){0, 3}), 0);
  assert_print(&t, "tensor([], size=(0, 3), dtype=torch.int32)\n");
  tdsl_tensor_release(&t);
  assert_int_equal(tdsl_tensor_empty(&t, TDSL_I64, 1, (int64_t[]){0}), 0);
  assert_print(&t, "tensor([], dtype=torch.int64)\n");
  tdsl_tensor_release(&t);
}

static void print_separates_nested_dims_with_blank_lines(void **state) {
  (void)state;
  tdsl_tensor t = {0};
  int64_t v[4] = {1, 2, 3, 4};
  assert_int_equal(
      tdsl_tensor_from_data(&t, TDSL_I64, 3, (int64_t[]){2, 1, 2}, NULL, 0, v, sizeof v), 0);
  assert_print(&t, "tensor([[[1, 2]],\n\n        [[3, 4]]])\n");
  tdsl_tensor_release(&t);
}

static void print_wraps_long_rows_at_eighty_columns(void **state) {
  (void)state;
  float v[20];
  for (int i = 0; i < 20; i++) v[i] = (float)i;
  tdsl_tensor t = f32_tensor(1, (int64_t[]){20}, v, 20);
  // width 3 ("19."), so (80 - 7) / 5 = 14 elements per line
  assert_print(&t,
               "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
               "        14., 15., 16., 17., 18., 19.])\n");
  tdsl_tensor_release(&t);
}

static void print_summarises_more_than_a_thousand_elements(void **state) {
  (void)state;
  tdsl_tensor t = {0};
  assert_int_equal(tdsl_tensor_empty(&t, TDSL_F32, 1, (int64_t[]){1001}), 0);
  for (int64_t i = 0; i < 1001; i++) tdsl_tensor_set_f64(&t, &i, (double)i);
  assert_print(
      &t, "tensor([   0.,    1.,    2.,  ...,  998.,  999., 1000.])\n");  // torch.arange(1001.)
  tdsl_tensor_release(&t);
  assert_int_equal(tdsl_tensor_empty(&t, TDSL_I64, 2, (int64_t[]){100, 20}), 0);
  for (int64_t i = 0; i < 100; i++) {
    for (int64_t j = 0; j < 20; j++)
      tdsl_tensor_set_f64(&t, (int64_t[]){i, j}, (double)(i * 20 + j));
  }
  // torch.arange(2000).view(100, 20)
  assert_print(&t,
               "tensor([[   0,    1,    2,  ...,   17,   18,   19],\n"
               "        [  20,   21,   22,  ...,   37,   38,   39],\n"
               "        [  40,   41,   42,  ...,   57,   58,   59],\n"
               "        ...,\n"
               "        [1940, 1941, 1942,  ..., 1957, 1958, 1959],\n"
               "        [1960, 1961, 1962,  ..., 1977, 1978, 1979],\n"
               "        [1980, 1981, 1982,  ..., 1997, 1998, 1999]])\n");
  tdsl_tensor_release(&t);
}

// ---- the store form of streamed results (runtime/stream.c) ----
// One call through a site whose non-temporal form takes nt_us and plain form plain_us:
// the token's start (bits 2 and up, tdsl.h) is moved back by that much, so the site
// sees those times (plus the few ns between begin and end) without sleeping. Returns
// the form run (1: non-temporal).
static int stream_call(tdsl_stream_site *s, int nt_us, int plain_us) {
  int64_t t = tdsl_stream_begin(s);
  assert_true(t & 2);  // timed (TDSL_STREAM_FORM unset)
  int64_t us = t & 1 ? nt_us : plain_us;
  tdsl_stream_end(s, t - (us * 1000 << 2));
  return (int)(t & 1);
}

// The forms a fresh site runs on `calls` calls of kernels taking nt_us and plain_us,
// as a string of 'n' and 'p'.
static void stream_forms(char *out, int calls, int nt_us, int plain_us) {
  tdsl_stream_site s = {0};
  for (int i = 0; i < calls; i++)
    out[i] = stream_call(&s, nt_us, plain_us) ? 'n' : 'p';
  out[calls] = 0;
}

static void a_stream_site_chooses_the_faster_store_form_on_its_first_calls(void **state) {
  (void)state;
  unsetenv("TDSL_STREAM_FORM");  // measured (read at the first call of a site in this process)
  char got[64];
  // non-temporal for calls 1-3 (the first uncounted: page faults, cold caches), plain
  // for 4-6 (the first uncounted: the caches as streaming left them); plain is faster
  // by far more than 1/16, so non-temporal stores are sampled again (7-9: the load did
  // not change) and plain is kept from call 10 on (TDSL_STREAM_SETTLE calls)
  stream_forms(got, 31, 1000, 300);
  assert_string_equal(got, "nnnppp" "nnn" "pppppppppppppppp" "pp" "nnn" "p");
  assert_int_equal(TDSL_STREAM_SETTLE, 9);
  // non-temporal faster: the first choice keeps it; FIRST_RUN (16) calls and a sample
  // (2) later, plain stores are tried again
  stream_forms(got, 31, 300, 1000);
  assert_string_equal(got, "nnnppp" "nnnnnnnnnnnnnnnn" "nn" "ppp" "nnnn");
  // within 1/32, or 1/16 (MARGIN): no swap
  stream_forms(got, 8, 1000, 980);
  assert_string_equal(got, "nnnppp" "nn");
  stream_forms(got, 8, 1000, 950);
  assert_string_equal(got, "nnnppp" "nn");
}

// The forms of `calls` more calls through s, as a string of 'n' and 'p'.
static void stream_more(tdsl_stream_site *s, char *out, int calls, int nt_us, int plain_us) {
  for (int i = 0; i < calls; i++)
    out[i] = stream_call(s, nt_us, plain_us) ? 'n' : 'p';
  out[calls] = 0;
}

static void a_stream_site_finds_a_change_of_the_faster_form_within_a_run(void **state) {
  (void)state;
  tdsl_stream_site s = {0};
  char got[64];
  stream_more(&s, got, 9, 1000, 300);
  assert_string_equal(got, "nnnppp" "nnn");  // plain kept, its sample's fastest call 0.3 ms
  // the memory changed: plain takes 1 ms now. DRIFT (3) calls off the sample by more
  // than half, agreeing, end the run of 16: a sample of plain (2), the try of
  // non-temporal stores (3), which wins, plain's second sample (3: as its first); then
  // non-temporal stores run their 16 calls and a sample, held to the try's time (not to
  // plain's old 0.3 ms: no new try)
  stream_more(&s, got, 3 + 2 + 3 + 3 + 18, 300, 1000);
  assert_string_equal(got, "ppp" "pp" "nnn" "ppp" "nnnnnnnnnnnnnnnnnn");
  // the try of plain stores due after that sample loses, so the next run is 64 calls;
  // non-temporal stores faster by 1/8 or more, agreeing, are a change too: the run
  // ends after DRIFT calls, and plain stores are tried again at once
  stream_more(&s, got, 3 + 3 + 2 + 3 + 1, 200, 1000);
  assert_string_equal(got, "ppp" "nnn" "nn" "ppp" "n");
}

static void a_stream_sites_run_goes_on_through_calls_off_its_time_that_disagree(void **state) {
  (void)state;
  tdsl_stream_site s = {0};
  char got[64];
  stream_more(&s, got, 9, 1000, 300);  // plain kept at 0.3 ms
  // a run of 16 plain calls (a loaded host): off by 2-3x but never DRIFT in a row that
  // agree within 1/8 (600 after 1000), or in a row at all (300 within the sample's time)
  int plain_us[16] = {1000, 600, 1000, 600, 900, 1000, 300, 1000, 1000, 300, 700, 1000, 600, 900, 600, 1000};
  for (int i = 0; i < 16; i++)
    got[i] = stream_call(&s, 1000, plain_us[i]) ? 'n' : 'p';
  got[16] = 0;
  assert_string_equal(got, "pppppppppppppppp");
  stream_more(&s, got, 2 + 3, 1000, 300);  // then its sample and the try, as ever
  assert_string_equal(got, "pp" "nnn");
}

static void a_stream_sites_sample_goes_on_until_its_fastest_call_is_confirmed(void **state) {
  (void)state;
  tdsl_stream_site s = {0};
  // non-temporal calls of 1, 2, 2 and 1.04 ms after the uncounted first: the fastest
  // (1 ms) is confirmed by another within 1/16 at the 4th counted call; then plain
  // stores (0.3 ms, confirmed at once) win
  int nt[] = {5000, 1000, 2000, 2000, 1040};
  for (int i = 0; i < 5; i++)
    assert_int_equal(stream_call(&s, nt[i], 300), 1);
  for (int i = 0; i < 3 + 3 + 16; i++)  // plain's try, non-temporal's second sample, plain
    assert_int_equal(stream_call(&s, 1000, 300), i >= 3 && i < 6);
  // plain calls from 1.1 ms that never agree (each 1.5 times the last): a sample of
  // MAX_SAMPLE (8) calls
  tdsl_stream_site u = {0};
  int forms[1 + 2 + 1 + 8 + 1], plain_us = 1100;
  for (int i = 0; i < 13; i++) {
    forms[i] = stream_call(&u, 1000, plain_us);
    if (!forms[i])
      plain_us = plain_us * 3 / 2;
  }
  for (int i = 0; i < 13; i++)
    assert_int_equal(forms[i], i < 3 || i == 12);  // plain: 1 uncounted + 8, then non-temporal (1 ms) kept
}

// Where timing cannot decide, the kept form stays (runtime/stream.c: on a loaded host).
static void a_stream_site_swaps_only_on_confirmed_samples_taken_under_the_same_load(void **state) {
  (void)state;
  // non-temporal calls that never agree (each 1.5 times the last): its sample ends at
  // MAX_SAMPLE (8) unconfirmed, and no try is made (plain stores at 0.3 ms would win
  // it); the next sample comes after a run of FIRST_RUN (16)
  tdsl_stream_site s = {0};
  int nt_us = 1000;
  for (int i = 0; i < 1 + 8 + 16; i++) {
    assert_int_equal(stream_call(&s, nt_us, 300), 1);
    nt_us = nt_us * 3 / 2 > 100000 ? 1000 : nt_us * 3 / 2;
  }
  // plain stores win their try against non-temporal stores at 1 ms, but non-temporal
  // stores' second sample takes 2 ms (the load changed under the comparison): no swap,
  // the kept form's time is the second sample's, and the next run is 16 calls
  tdsl_stream_site u = {0};
  int at[] = {1000, 1000, 1000, 300, 300, 300, 2000, 2000, 2000};
  for (int i = 0; i < 9; i++)
    assert_int_equal(stream_call(&u, at[i], at[i]), i < 3 || i >= 6);
  for (int i = 0; i < 16 + 2; i++)
    assert_int_equal(stream_call(&u, 2000, 300), 1);
  for (int i = 0; i < 3 + 3; i++)  // the next check: the same load throughout, so plain is kept
    assert_int_equal(stream_call(&u, 2000, 300), i >= 3);
  assert_int_equal(stream_call(&u, 2000, 300), 0);
}

static void a_short_kernels_sample_is_longer_and_losing_tries_lengthen_the_run(void **state) {
  (void)state;
  tdsl_stream_site s = {0};
  int plain_at[16], n = 0;
  // non-temporal 1 us a call: its samples are MAX_SAMPLE (8) calls, under SAMPLE_NS
  // (50 us) in all; plain 1 ms: 2 calls
  for (int i = 0; i < 1 + 8 + 3 + 16 + 8 + 3 + 64 + 8 + 3 + 10; i++)
    if (!stream_call(&s, 1, 1000) && n < 16)
      plain_at[n++] = i;
  // tries after the first call and a sample, then runs of 16 and 64 calls (each 4 times
  // the last) and samples of 8
  int want[] = {9, 10, 11, 36, 37, 38, 111, 112, 113};
  assert_int_equal(n, 9);
  for (int i = 0; i < 9; i++)
    assert_int_equal(plain_at[i], want[i]);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--storage-child") == 0) return storage_child();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(set_error_returns_nonzero_and_keeps_the_message),
      cmocka_unit_test(dtype_names_round_trip),
      cmocka_unit_test(a_complex_tensor_views_its_float_pairs),
      cmocka_unit_test(complex_tensors_print_and_write_json_as_pytorch_and_numpy_do),
      cmocka_unit_test(new_storage_is_zeroed_with_one_reference),
      cmocka_unit_test(storage_data_is_64_byte_aligned),
      cmocka_unit_test(wrapped_storage_views_the_callers_memory_and_never_frees_it),
      cmocka_unit_test(threads_sharing_the_cache_never_share_a_block),
      cmocka_unit_test(storage_cache_zero_turns_the_cache_off),
      cmocka_unit_test(storage_poison_fills_only_uninitialised_storages),
      cmocka_unit_test(empty_tensor_has_pytorch_contiguous_strides),
      cmocka_unit_test(zero_dim_tensor_has_one_element),
      cmocka_unit_test(views_share_storage_and_keep_it_alive),
      cmocka_unit_test(view_of_itself_keeps_one_reference),
      cmocka_unit_test(view_outside_storage_is_refused),
      cmocka_unit_test(absurd_shapes_are_refused),
      cmocka_unit_test(view_with_negative_stride_inside_storage_is_accepted),
      cmocka_unit_test(from_data_copies_the_bytes),
      cmocka_unit_test(contiguous_copy_of_transposed_view_is_row_major),
      cmocka_unit_test(contiguous_copy_of_flipped_strided_view_reverses_it),
      cmocka_unit_test(copy_writes_through_the_destination_strides),
      cmocka_unit_test(set_f64_saturates_ints_and_rounds_floats),
      cmocka_unit_test(a_stream_site_chooses_the_faster_store_form_on_its_first_calls),
      cmocka_unit_test(a_stream_site_finds_a_change_of_the_faster_form_within_a_run),
      cmocka_unit_test(a_stream_sites_run_goes_on_through_calls_off_its_time_that_disagree),
      cmocka_unit_test(a_stream_sites_sample_goes_on_until_its_fastest_call_is_confirmed),
      cmocka_unit_test(a_stream_site_swaps_only_on_confirmed_samples_taken_under_the_same_load),
      cmocka_unit_test(a_short_kernels_sample_is_longer_and_losing_tries_lengthen_the_run),
      cmocka_unit_test(f16_conversion_rounds_to_nearest_even),
      cmocka_unit_test(f16_conversion_handles_subnormals_and_nan),
      cmocka_unit_test(bf16_conversion_rounds_to_nearest_even),
      cmocka_unit_test(f64_narrowing_rounds_once),
      cmocka_unit_test(json_floats_are_the_shortest_text_in_python_style),
      cmocka_unit_test(json_floats_are_shortest_for_their_own_dtype),
      cmocka_unit_test(json_data_is_flat_and_row_major),
      cmocka_unit_test(json_data_writes_each_dtype_its_own_way),
      cmocka_unit_test(json_data_of_zero_dim_and_empty_tensors),
      cmocka_unit_test(splitmix_seed_zero_gives_the_reference_stream),
      cmocka_unit_test(fill_random_draws_one_value_per_element_in_row_major_order),
      cmocka_unit_test(fill_random_follows_the_logical_order_of_a_view),
      cmocka_unit_test(print_uses_four_decimals_aligned_like_torch),
      cmocka_unit_test(print_shows_whole_floats_with_a_trailing_point),
      cmocka_unit_test(print_switches_to_scientific_for_wide_ranges),
      cmocka_unit_test(print_adds_the_dtype_for_non_default_dtypes),
      cmocka_unit_test(print_shows_size_and_dtype_of_empty_tensors),
      cmocka_unit_test(print_separates_nested_dims_with_blank_lines),
      cmocka_unit_test(print_wraps_long_rows_at_eighty_columns),
      cmocka_unit_test(print_summarises_more_than_a_thousand_elements),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
#if SANITIZED
  printf("the storage cache is compiled out of sanitizer builds: its 7 tests run in the release build\n");
#else
  const struct CMUnitTest cache_tests[] = {
      cmocka_unit_test(a_released_large_block_is_reused_for_the_same_size),
      cmocka_unit_test(small_blocks_are_not_cached),
      cmocka_unit_test(a_reused_dirty_block_comes_back_zeroed),
      cmocka_unit_test(a_block_is_reused_only_when_at_most_twice_the_size),
      cmocka_unit_test(the_smallest_fitting_block_is_taken),
      cmocka_unit_test(the_cache_keeps_at_most_sixteen_blocks),
      cmocka_unit_test(the_cache_keeps_within_its_byte_limit),
  };
  failed += cmocka_run_group_tests(cache_tests, NULL, NULL);
#endif
  return failed;
}
