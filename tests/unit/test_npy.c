// tests/unit/test_npy.c: .npy load and save. Files for the loader are written here
// byte by byte (magic, version, header length, header text, data), so each test
// shows exactly what the loader sees; every refusal is checked with its message.
// All files live in a fresh temp folder that the group teardown removes.
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tdsl.h"

static char dir[64];

static int make_dir(void **state) {
  (void)state;
  strcpy(dir, "/tmp/tdsl_npy_XXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state) {
  (void)state;
  DIR *d = opendir(dir);
  if (!d) return -1;
  struct dirent *e;
  char p[512];
  while ((e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    if (unlink(p) != 0) rmdir(p);
  }
  closedir(d);
  return rmdir(dir);
}

static int count_files(void) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

static const char *path_of(const char *name) {
  static char p[512];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return p;
}

static void write_bytes(const char *path, const void *bytes, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(bytes, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

// magic "\x93NUMPY", major, minor 0, header length (u16 LE for 1.0, u32 LE
// otherwise), the header text as given, then the data bytes.
static const char *write_npy(const char *name, int major, const char *header, const void *data,
                             size_t ndata) {
  unsigned char buf[4096];
  size_t hl = strlen(header), n = 0;
  memcpy(buf, "\x93NUMPY", 6);
  n = 6;
  buf[n++] = (unsigned char)major;
  buf[n++] = 0;
  buf[n++] = (unsigned char)(hl & 0xff);
  buf[n++] = (unsigned char)(hl >> 8);
  if (major != 1) {
    buf[n++] = 0;
    buf[n++] = 0;
  }
  memcpy(buf + n, header, hl);
  n += hl;
  memcpy(buf + n, data, ndata);
  n += ndata;
  const char *p = path_of(name);
  write_bytes(p, buf, n);
  return p;
}

static unsigned char *read_all(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  static unsigned char buf[1 << 16];
  *n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  return buf;
}

// Expects loading `name` to fail with exactly "'<dir>/<name>': <msg>".
static void assert_refused(const char *path, const char *msg) {
  tdsl_tensor t = {0};
  char want[1024];
  assert_int_not_equal(tdsl_load_npy(path, &t), 0);
  assert_null(t.storage);
  snprintf(want, sizeof want, "'%s': %s", path, msg);
  assert_string_equal(tdsl_last_error(), want);
}

// ---- save, then load ----

static void every_dtype_survives_a_round_trip(void **state) {
  (void)state;
  for (int dt = 0; dt < TDSL_DTYPE_COUNT; dt++) {
    tdsl_tensor t = {0}, back = {0};
    uint64_t seed = (uint64_t)dt;
    assert_int_equal(tdsl_tensor_empty(&t, (tdsl_dtype)dt, 2, (int64_t[]){2, 3}), 0);
    tdsl_fill_random(&t, &seed);
    const char *p = path_of("rt.npy");
    assert_int_equal(tdsl_save_npy(p, &t), 0);
    assert_int_equal(tdsl_load_npy(p, &back), 0);
    assert_int_equal(back.dtype, dt);
    assert_int_equal(back.ndim, 2);
    assert_int_equal(back.shape[0], 2);
    assert_int_equal(back.shape[1], 3);
    assert_true(tdsl_tensor_is_contiguous(&back));
    assert_memory_equal(tdsl_tensor_data(&back), tdsl_tensor_data(&t),
                        6 * tdsl_dtype_size((tdsl_dtype)dt));
    tdsl_tensor_release(&back);
    assert_int_equal(tdsl_load_npy_as(p, (tdsl_dtype)dt, &back), 0);
    tdsl_tensor_release(&back);
    tdsl_tensor_release(&t);
  }
  assert_int_equal(count_files(), 1);  // no temp file left behind
}

static void saved_header_is_version_one_padded_to_64_bytes(void **state) {
  (void)state;
  static const struct {
    tdsl_dtype dt;
    int ndim;
    int64_t shape[2];
    const char *header;
  } cases[] = {
      {TDSL_F32, 2, {2, 3}, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"},
      {TDSL_BF16, 1, {5}, "{'descr': '<u2', 'fortran_order': False, 'shape': (5,), }"},
      {TDSL_F16, 0, {0}, "{'descr': '<f2', 'fortran_order': False, 'shape': (), }"},
      {TDSL_BOOL, 1, {0}, "{'descr': '|b1', 'fortran_order': False, 'shape': (0,), }"},
      {TDSL_I32, 1, {1}, "{'descr': '<i4', 'fortran_order': False, 'shape': (1,), }"},
      {TDSL_I64, 1, {1}, "{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }"},
      {TDSL_F64, 1, {1}, "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }"},
      {TDSL_U8, 1, {3}, "{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }"},
      {TDSL_I8, 2, {1, 2}, "{'descr': '|i1', 'fortran_order': False, 'shape': (1, 2), }"},
      {TDSL_I16, 1, {1}, "{'descr': '<i2', 'fortran_order': False, 'shape': (1,), }"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tdsl_tensor t = {0};
    assert_int_equal(tdsl_tensor_empty(&t, cases[i].dt, cases[i].ndim, cases[i].shape), 0);
    const char *p = path_of("hdr.npy");
    assert_int_equal(tdsl_save_npy(p, &t), 0);
    size_t n;
    unsigned char *b = read_all(p, &n);
    assert_memory_equal(b, "\x93NUMPY\x01\x00", 8);
    size_t hl = b[8] | (size_t)b[9] << 8;
    assert_int_equal((10 + hl) % 64, 0);
    assert_int_equal(b[10 + hl - 1], '\n');
    assert_int_equal(n, 10 + hl + (size_t)tdsl_tensor_numel(&t) * tdsl_dtype_size(cases[i].dt));
    size_t want = strlen(cases[i].header);
    assert_memory_equal(b + 10, cases[i].header, want);
    for (size_t k = 10 + want; k < 10 + hl - 1; k++) assert_int_equal(b[k], ' ');
    tdsl_tensor_release(&t);
  }
}

static void save_writes_the_logical_order_of_a_view(void **state) {
  (void)state;
  float v[6] = {1, 2, 3, 4, 5, 6};
  tdsl_tensor base = {0}, tr = {0}, back = {0};
  assert_int_equal(
      tdsl_tensor_from_data(&base, TDSL_F32, 2, (int64_t[]){2, 3}, NULL, 0, v, sizeof v), 0);
  assert_int_equal(tdsl_tensor_view(&tr, &base, 2, (int64_t[]){3, 2}, (int64_t[]){1, 3}, 0), 0);
  const char *p = path_of("view.npy");
  assert_int_equal(tdsl_save_npy(p, &tr), 0);
  assert_int_equal(tdsl_load_npy(p, &back), 0);
  assert_int_equal(back.shape[0], 3);
  assert_int_equal(back.strides[0], 2);
  const float want[6] = {1, 4, 2, 5, 3, 6};
  assert_memory_equal(tdsl_tensor_data(&back), want, sizeof want);
  tdsl_tensor_release(&back);
  tdsl_tensor_release(&tr);
  tdsl_tensor_release(&base);
}

static void zero_dim_and_zero_size_tensors_round_trip(void **state) {
  (void)state;
  tdsl_tensor t = {0}, back = {0};
  double d = -3.25;
  assert_int_equal(tdsl_tensor_from_data(&t, TDSL_F64, 0, NULL, NULL, 0, &d, sizeof d), 0);
  assert_int_equal(tdsl_save_npy(path_of("s.npy"), &t), 0);
  assert_int_equal(tdsl_load_npy(path_of("s.npy"), &back), 0);
  assert_int_equal(back.ndim, 0);
  assert_true(tdsl_tensor_get_f64(&back, NULL) == -3.25);
  tdsl_tensor_release(&back);
  tdsl_tensor_release(&t);
  assert_int_equal(tdsl_tensor_empty(&t, TDSL_I32, 3, (int64_t[]){2, 0, 4}), 0);
  assert_int_equal(tdsl_save_npy(path_of("z.npy"), &t), 0);
  assert_int_equal(tdsl_load_npy(path_of("z.npy"), &back), 0);
  assert_int_equal(back.ndim, 3);
  assert_int_equal(back.shape[1], 0);
  assert_int_equal(back.strides[0], 4);  // PyTorch's max(size, 1) rule
  assert_int_equal(tdsl_tensor_numel(&back), 0);
  tdsl_tensor_release(&back);
  tdsl_tensor_release(&t);
}

static void save_replaces_an_existing_file(void **state) {
  (void)state;
  const char *p = path_of("over.npy");
  write_bytes(p, "old contents", 12);
  int32_t v = 7;
  tdsl_tensor t = {0}, back = {0};
  assert_int_equal(tdsl_tensor_from_data(&t, TDSL_I32, 1, (int64_t[]){1}, NULL, 0, &v, sizeof v),
                   0);
  assert_int_equal(tdsl_save_npy(p, &t), 0);
  assert_int_equal(tdsl_load_npy(p, &back), 0);
  assert_int_equal(tdsl_tensor_get_i64(&back, (int64_t[]){0}), 7);
  tdsl_tensor_release(&back);
  tdsl_tensor_release(&t);
}

static void failed_save_leaves_nothing_behind(void **state) {
  (void)state;
  tdsl_tensor t = {0};
  assert_int_equal(tdsl_tensor_empty(&t, TDSL_F32, 1, (int64_t[]){3}), 0);
  int before = count_files();
  // The target is a directory: the write succeeds, the rename over it fails.
  const char *sub = path_of("adir");
  assert_int_equal(mkdir(sub, 0700), 0);
  assert_int_not_equal(tdsl_save_npy(sub, &t), 0);
  char want[1024];
  snprintf(want, sizeof want, "cannot write '%s': Is a directory", sub);
  assert_string_equal(tdsl_last_error(), want);
  assert_int_equal(count_files(), before + 1);  // only the directory itself
  assert_int_equal(rmdir(sub), 0);
  char missing[256];
  snprintf(missing, sizeof missing, "%s/no/such/dir/x.npy", dir);
  assert_int_not_equal(tdsl_save_npy(missing, &t), 0);
  snprintf(want, sizeof want, "cannot write '%s': No such file or directory", missing);
  assert_string_equal(tdsl_last_error(), want);
  tdsl_tensor_release(&t);
}

// ---- hand-written files ----

static void version_2_and_3_headers_load(void **state) {
  (void)state;
  const float v[2] = {1.5f, -2};
  const char *hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }    \n";
  for (int major = 2; major <= 3; major++) {
    tdsl_tensor t = {0};
    const char *p = write_npy("v23.npy", major, hdr, v, sizeof v);
    assert_int_equal(tdsl_load_npy(p, &t), 0);
    assert_int_equal(t.dtype, TDSL_F32);
    assert_memory_equal(tdsl_tensor_data(&t), v, sizeof v);
    tdsl_tensor_release(&t);
  }
}

static void fortran_order_file_loads_as_c_order(void **state) {
  (void)state;
  // np.asfortranarray([[1, 2, 3], [4, 5, 6]], '<i4'): column-major bytes 1 4 2 5 3 6.
  const unsigned char file[] = {
      0x93, 'N',  'U',  'M', 'P',  'Y', 1,   0,   57,   0,    '{', '\'', 'd', 'e', 's', 'c',
      'r',  '\'', ':',  ' ', '\'', '<', 'i', '4', '\'', ',',  ' ', '\'', 'f', 'o', 'r', 't',
      'r',  'a',  'n',  '_', 'o',  'r', 'd', 'e', 'r',  '\'', ':', ' ',  'T', 'r', 'u', 'e',
      ',',  ' ',  '\'', 's', 'h',  'a', 'p', 'e', '\'', ':',  ' ', '(',  '2', ',', ' ', '3',
      ')',  '}',  '\n', 1,   0,    0,   0,   4,   0,    0,    0,   2,    0,   0,   0,   5,
      0,    0,    0,    3,   0,    0,   0,   6,   0,    0,    0};
  const char *p = path_of("fortran.npy");
  write_bytes(p, file, sizeof file);
  tdsl_tensor t = {0};
  assert_int_equal(tdsl_load_npy(p, &t), 0);
  assert_int_equal(t.ndim, 2);
  assert_int_equal(t.strides[0], 3);
  assert_int_equal(t.strides[1], 1);
  assert_int_equal(t.offset, 0);
  const int32_t want[6] = {1, 2, 3, 4, 5, 6};
  assert_memory_equal(tdsl_tensor_data(&t), want, sizeof want);
  tdsl_tensor_release(&t);

  // 3-D, shape (2, 1, 3): element [i][0][k] = 10 i + k stored with i fastest.
  const int64_t f3[6] = {0, 10, 1, 11, 2, 12};
  p = write_npy("f3.npy", 1, "{'descr': '<i8', 'fortran_order': True, 'shape': (2, 1, 3), }\n", f3,
                sizeof f3);
  assert_int_equal(tdsl_load_npy(p, &t), 0);
  const int64_t want3[6] = {0, 1, 2, 10, 11, 12};
  assert_memory_equal(tdsl_tensor_data(&t), want3, sizeof want3);
  tdsl_tensor_release(&t);
}

static void header_dict_may_be_written_loosely(void **state) {
  (void)state;
  const int64_t v[3] = {5, 6, 7};
  const char *headers[] = {
      "{'shape': (3,), 'fortran_order': False, 'descr': '<i8'}\n",
      "{\"descr\": \"<i8\", \"fortran_order\": False, \"shape\": (3,)}",
      "  {  'descr' :'<i8' ,'fortran_order':False,'shape':( 3 , ) , }   \n",
      "{'descr': '<i8', 'fortran_order': False, 'shape': (3L,), }\n",
      "{'descr': '<i8', 'fortran_order': False, 'shape': (3), }\n",
  };
  for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++) {
    tdsl_tensor t = {0};
    const char *p = write_npy("loose.npy", 1, headers[i], v, sizeof v);
    assert_int_equal(tdsl_load_npy(p, &t), 0);
    assert_int_equal(t.ndim, 1);
    assert_int_equal(t.shape[0], 3);
    assert_memory_equal(tdsl_tensor_data(&t), v, sizeof v);
    tdsl_tensor_release(&t);
  }
}

static void bool_bytes_load_as_zero_or_one(void **state) {
  (void)state;
  const unsigned char v[3] = {0, 2, 255};
  tdsl_tensor t = {0};
  const char *p =
      write_npy("b.npy", 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }\n", v, 3);
  assert_int_equal(tdsl_load_npy(p, &t), 0);
  const unsigned char want[3] = {0, 1, 1};
  assert_memory_equal(tdsl_tensor_data(&t), want, 3);
  tdsl_tensor_release(&t);
}

static void u2_loads_as_bf16_and_load_as_names_both_dtypes(void **state) {
  (void)state;
  const uint16_t bits[2] = {0x3f80, 0xc000};  // bf16 1.0, -2.0
  tdsl_tensor t = {0};
  const char *p =
      write_npy("u2.npy", 1, "{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }\n", bits,
                sizeof bits);
  assert_int_equal(tdsl_load_npy(p, &t), 0);
  assert_int_equal(t.dtype, TDSL_BF16);
  tdsl_tensor_release(&t);
  assert_int_equal(tdsl_load_npy_as(p, TDSL_BF16, &t), 0);
  assert_true(tdsl_tensor_get_f64(&t, (int64_t[]){1}) == -2.0);
  tdsl_tensor_release(&t);

  char want[1024];
  assert_int_not_equal(tdsl_load_npy_as(p, TDSL_F16, &t), 0);
  snprintf(want, sizeof want, "'%s' holds dtype u16 (bf16 bits), expected f16", p);
  assert_string_equal(tdsl_last_error(), want);
  assert_null(t.storage);

  p = write_npy("f2.npy", 1, "{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }\n", bits,
                sizeof bits);
  assert_int_not_equal(tdsl_load_npy_as(p, TDSL_BF16, &t), 0);
  snprintf(want, sizeof want, "'%s' holds dtype f16, expected bf16", p);
  assert_string_equal(tdsl_last_error(), want);
  assert_int_not_equal(tdsl_load_npy_as(p, TDSL_F32, &t), 0);
  snprintf(want, sizeof want, "'%s' holds dtype f16, expected f32", p);
  assert_string_equal(tdsl_last_error(), want);
}

// NumPy's uint8, int8 and int16 files (descr '|u1', '|i1', '<i2') load as u8, i8, i16
// with every value kept, and a file of one of them is refused for another.
static void small_int_files_load_with_their_values(void **state) {
  (void)state;
  const uint8_t u[3] = {0, 200, 255};
  const int8_t s[3] = {-128, -1, 127};
  const int16_t h[3] = {-32768, -300, 32767};
  tdsl_tensor t = {0};
  char pu[512], ps[512], ph[512];  // path_of's buffer is reused
  strcpy(pu, write_npy("u1.npy", 1, "{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }\n", u, 3));
  strcpy(ps, write_npy("i1.npy", 1, "{'descr': '|i1', 'fortran_order': False, 'shape': (3,), }\n", s, 3));
  strcpy(ph, write_npy("i2.npy", 1, "{'descr': '<i2', 'fortran_order': False, 'shape': (3,), }\n", h, 6));
  assert_int_equal(tdsl_load_npy_as(pu, TDSL_U8, &t), 0);
  assert_int_equal(tdsl_tensor_get_i64(&t, (int64_t[]){1}), 200);
  assert_true(tdsl_tensor_get_f64(&t, (int64_t[]){2}) == 255.0);
  tdsl_tensor_release(&t);
  assert_int_equal(tdsl_load_npy(ps, &t), 0);
  assert_int_equal(t.dtype, TDSL_I8);
  assert_int_equal(tdsl_tensor_get_i64(&t, (int64_t[]){0}), -128);
  assert_int_equal(tdsl_tensor_get_i64(&t, (int64_t[]){1}), -1);
  tdsl_tensor_release(&t);
  assert_int_equal(tdsl_load_npy(ph, &t), 0);
  assert_int_equal(t.dtype, TDSL_I16);
  assert_int_equal(tdsl_tensor_get_i64(&t, (int64_t[]){0}), -32768);
  assert_int_equal(tdsl_tensor_get_i64(&t, (int64_t[]){2}), 32767);
  tdsl_tensor_set_f64(&t, (int64_t[]){1}, 1e9);  // saturates, as for i32
  assert_int_equal(tdsl_tensor_get_i64(&t, (int64_t[]){1}), 32767);
  tdsl_tensor_release(&t);

  char want[1024];
  assert_int_not_equal(tdsl_load_npy_as(pu, TDSL_I8, &t), 0);
  snprintf(want, sizeof want, "'%s' holds dtype u8, expected i8", pu);
  assert_string_equal(tdsl_last_error(), want);
  assert_int_not_equal(tdsl_load_npy_as(ph, TDSL_I32, &t), 0);
  snprintf(want, sizeof want, "'%s' holds dtype i16, expected i32", ph);
  assert_string_equal(tdsl_last_error(), want);
  assert_null(t.storage);
}

// ---- refusals ----

static void files_that_are_not_npy_are_refused(void **state) {
  (void)state;
  const char *p = path_of("empty.npy");
  write_bytes(p, "", 0);
  assert_refused(p, "not a .npy file (bad magic)");
  p = path_of("text.npy");
  write_bytes(p, "hello, world\n", 13);
  assert_refused(p, "not a .npy file (bad magic)");
  p = path_of("short.npy");
  write_bytes(p, "\x93NUMPY\x01", 7);
  assert_refused(p, "truncated .npy header");
  p = path_of("short2.npy");
  write_bytes(p, "\x93NUMPY\x02\x00\x10\x00\x00", 11);
  assert_refused(p, "truncated .npy header");
  tdsl_tensor t = {0};
  char want[1024];
  p = path_of("missing.npy");
  assert_int_not_equal(tdsl_load_npy(p, &t), 0);
  snprintf(want, sizeof want, "cannot open '%s': No such file or directory", p);
  assert_string_equal(tdsl_last_error(), want);
}

static void unknown_versions_are_refused(void **state) {
  (void)state;
  const char *h = "{'descr': '<f4', 'fortran_order': False, 'shape': (), }\n";
  const float v = 1;
  assert_refused(write_npy("v4.npy", 4, h, &v, 4), "unsupported .npy format version 4.0");
  assert_refused(write_npy("v0.npy", 0, h, &v, 4), "unsupported .npy format version 0.0");
  const char *p = path_of("v11.npy");
  write_bytes(p, "\x93NUMPY\x01\x01\x04\x00{}  ", 14);
  assert_refused(p, "unsupported .npy format version 1.1");
}

static void truncated_headers_and_data_are_refused(void **state) {
  (void)state;
  // Header length says 100; only 20 header bytes follow.
  const char *p = path_of("th.npy");
  write_bytes(p, "\x93NUMPY\x01\x00\x64\x00{'descr': '<f4', 'f", 30);
  assert_refused(p, "truncated .npy header");
  // A v2 header length of 2 GiB is refused before anything is allocated.
  p = path_of("huge.npy");
  write_bytes(p, "\x93NUMPY\x02\x00\x00\x00\x00\x80{}", 14);
  assert_refused(p, ".npy header too long (2147483648 bytes)");
  const float v[5] = {0};
  p = write_npy("td.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", v,
                sizeof v);
  assert_refused(p, "truncated data: expected 24 bytes, found 20");
  // A shape that fits int64 but not the file is refused before allocating.
  p = write_npy("big.npy", 1,
                "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000,), }\n", v, 8);
  assert_refused(p, "truncated data: expected 8000000000000 bytes, found 8");
}

static void unsupported_dtypes_are_refused(void **state) {
  (void)state;
  const char data[16] = {0};
  assert_refused(write_npy("be.npy", 1,
                           "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }\n", data, 4),
                 "big-endian dtype '>f4' is not supported");
  assert_refused(write_npy("obj.npy", 1,
                           "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }\n", data, 8),
                 "object arrays are not supported");
  assert_refused(
      write_npy(
          "st.npy", 1,
          "{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': False, 'shape': (1,), }\n",
          data, 8),
      "structured dtypes are not supported");
  assert_refused(write_npy("c32.npy", 1,
                           "{'descr': '<c32', 'fortran_order': False, 'shape': (1,), }\n", data, 16),
                 "unsupported dtype '<c32' (expected one of |b1 |u1 |i1 <i2 <i4 <i8 <f2 <u2 <f4 <f8 <c8 <c16)");
  assert_refused(write_npy("u4.npy", 1,
                           "{'descr': '<u4', 'fortran_order': False, 'shape': (1,), }\n", data, 4),
                 "unsupported dtype '<u4' (expected one of |b1 |u1 |i1 <i2 <i4 <i8 <f2 <u2 <f4 <f8 <c8 <c16)");
  assert_refused(write_npy("be2.npy", 1,
                           "{'descr': '>i2', 'fortran_order': False, 'shape': (1,), }\n", data, 2),
                 "big-endian dtype '>i2' is not supported");
}

static void bad_shapes_are_refused(void **state) {
  (void)state;
  const char data[8] = {0};
  assert_refused(
      write_npy("neg.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 3), }\n",
                data, 8),
      "negative dimension in shape");
  assert_refused(
      write_npy("ovf.npy", 1,
                "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }\n",
                data, 8),
      "shape too large");
  assert_refused(
      write_npy("digits.npy", 1,
                "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }\n",
                data, 8),
      "dimension too large in shape");
  assert_refused(
      write_npy(
          "nine.npy", 1,
          "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1), }\n",
          data, 4),
      "more than 8 dimensions");
  assert_refused(write_npy("list.npy", 1,
                           "{'descr': '<f4', 'fortran_order': False, 'shape': [2], }\n", data, 8),
                 "malformed .npy header: 'shape' is not a tuple");
  assert_refused(
      write_npy("float.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2.5,), }\n",
                data, 8),
      "malformed .npy header: bad 'shape'");
}

static void malformed_header_dicts_are_refused(void **state) {
  (void)state;
  const char data[4] = {0};
  assert_refused(write_npy("nd.npy", 1, "['descr', '<f4']\n", data, 4),
                 ".npy header is not a dict");
  assert_refused(write_npy("nd2.npy", 1, "\n", data, 4), ".npy header is not a dict");
  assert_refused(write_npy("mk.npy", 1, "{'descr': '<f4', 'shape': (1,), }\n", data, 4),
                 ".npy header lacks 'fortran_order'");
  assert_refused(
      write_npy("uk.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}\n",
                data, 4),
      "unexpected key 'x' in .npy header");
  assert_refused(
      write_npy("dk.npy", 1,
                "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}\n", data,
                4),
      "duplicate key 'descr' in .npy header");
  assert_refused(
      write_npy("fo.npy", 1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}\n", data, 4),
      "malformed .npy header: 'fortran_order' is not True or False");
  assert_refused(
      write_npy("open.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)", data, 4),
      "malformed .npy header: expected ',' or '}'");
  assert_refused(write_npy("after.npy", 1,
                           "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x\n", data, 4),
                 "malformed .npy header: text after the dict");
  assert_refused(write_npy("quote.npy", 1, "{'descr: '<f4'}\n", data, 4),
                 "unexpected key 'descr: ' in .npy header");
  assert_refused(write_npy("colon.npy", 1, "{'descr' '<f4'}\n", data, 4),
                 "malformed .npy header: expected ':' after 'descr'");
  assert_refused(write_npy("unterminated.npy", 1, "{'descr", data, 0),
                 "malformed .npy header: bad string for a key");
  assert_refused(write_npy("key.npy", 1, "{descr: '<f4'}", data, 0),
                 "malformed .npy header: expected a string for a key");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_dtype_survives_a_round_trip),
      cmocka_unit_test(saved_header_is_version_one_padded_to_64_bytes),
      cmocka_unit_test(save_writes_the_logical_order_of_a_view),
      cmocka_unit_test(zero_dim_and_zero_size_tensors_round_trip),
      cmocka_unit_test(save_replaces_an_existing_file),
      cmocka_unit_test(failed_save_leaves_nothing_behind),
      cmocka_unit_test(version_2_and_3_headers_load),
      cmocka_unit_test(fortran_order_file_loads_as_c_order),
      cmocka_unit_test(header_dict_may_be_written_loosely),
      cmocka_unit_test(bool_bytes_load_as_zero_or_one),
      cmocka_unit_test(u2_loads_as_bf16_and_load_as_names_both_dtypes),
      cmocka_unit_test(small_int_files_load_with_their_values),
      cmocka_unit_test(files_that_are_not_npy_are_refused),
      cmocka_unit_test(unknown_versions_are_refused),
      cmocka_unit_test(truncated_headers_and_data_are_refused),
      cmocka_unit_test(unsupported_dtypes_are_refused),
      cmocka_unit_test(bad_shapes_are_refused),
      cmocka_unit_test(malformed_header_dicts_are_refused),
  };
  return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
