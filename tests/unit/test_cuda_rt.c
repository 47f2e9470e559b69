// tests/unit/test_cuda_rt.c: runtime/cuda.c, the GPU runner, in three settings.
//   - Here, as the machine is: with no libcuda.so.1 tdsl_gpu_available() says why and
//     a run fails cleanly (outputs zeroed, arguments untouched, nothing leaked).
//   - With a fake driver (fake_libcuda.c, built by cc at test time into a temp folder
//     as libcuda.so.1): this executable runs itself again as `test_cuda_rt --fake`
//     with LD_LIBRARY_PATH there, so the runner's buffers, copies, launches, error
//     record and clean-up on every failing call are checked on the host. CUDA C images
//     go through the real NVRTC when it is installed (skipped otherwise).
//   - On a machine with a GPU: the no-GPU tests skip and a hand-written PTX kernel
//     and CUDA C kernels (NVRTC) run on the device, error record included.
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tdsl.h"

extern char **environ;

// ---- the test programs: entry tables as the driver makes them from an LProgram ----
// add: y = x + 1 (x f32[2, 3]; b0 = x, b1 = y)
static const tdsl_entry_param add_params[] = {{"x", TDSL_F32, 2, {2, 3}, 0, 0}};
static const tdsl_entry_buf add_bufs[] = {{TDSL_F32, 6, 0}, {TDSL_F32, 6, -1}};
static const tdsl_entry_output add_outs[] = {{1, 2, {2, 3}, {3, 1}, 0, 0}};
static const tdsl_entry_info add_info = {"add", 1, add_params, 2, add_bufs, 1, add_outs};
static const int args01[] = {0, 1}, args0[] = {0}, args12[] = {1, 2};
static const tdsl_gpu_kernel add_k[] = {{"add1", 2, 3, 0, 2, args01, 0, NULL, NULL}};

// twice: mut x f32[2, 3] doubled in place, no outputs
static const tdsl_entry_param twice_params[] = {{"x", TDSL_F32, 2, {2, 3}, 1, 0}};
static const tdsl_entry_buf twice_bufs[] = {{TDSL_F32, 6, 0}};
static const tdsl_entry_info twice_info = {"twice", 1, twice_params, 1, twice_bufs, 0, NULL};
static const tdsl_gpu_kernel twice_k[] = {{"twice", 1, 6, 0, 1, args0, 0, NULL, NULL}};

// check: a kernel that raises at x < 0, then y = x + 1 (x f32[6])
static const tdsl_entry_param check_params[] = {{"x", TDSL_F32, 1, {6}, 0, 0}};
static const tdsl_entry_buf check_bufs[] = {{TDSL_F32, 6, 0}, {TDSL_F32, 6, -1}};
static const tdsl_entry_output check_outs[] = {{1, 1, {6}, {1}, 0, 0}};
static const tdsl_entry_info check_info = {"check", 1, check_params, 2, check_bufs, 1, check_outs};
static const char *const check_errors[] = {"f.tdsl:2:5: error: negative value at %lld (100%%)"};
static const tdsl_gpu_kernel check_k[] = {{"check_neg", 2, 3, 0, 1, args0, 1, check_errors, NULL},
                                          {"add1", 2, 3, 0, 2, args01, 0, NULL, NULL}};
static const tdsl_gpu_kernel k7_k[] = {{"raise_k7", 1, 1, 0, 1, args0, 1, check_errors, NULL}};

// two: y = (x + 1) + 1 through a temp (b1), x f32[6]
static const tdsl_entry_param two_params[] = {{"x", TDSL_F32, 1, {6}, 0, 0}};
static const tdsl_entry_buf two_bufs[] = {{TDSL_F32, 6, 0}, {TDSL_F32, 6, -1}, {TDSL_F32, 6, -1}};
static const tdsl_entry_output two_outs[] = {{2, 1, {6}, {1}, 0, 0}};
static const tdsl_entry_info two_info = {"two", 1, two_params, 3, two_bufs, 1, two_outs};
static const tdsl_gpu_kernel two_k[] = {{"add1", 1, 6, 0, 2, args01, 0, NULL, NULL},
                                        {"add1", 2, 3, 0, 2, args12, 0, NULL, NULL}};

// layers: y = x + 1 (x f32[32]) as kernels with the same code run it (share_kernels):
// one function launched twice, on elements [0, 16) of x and y, then from element 16 on
// (tdsl_gpu_kernel.at); and launches whose start is outside a buffer
static const tdsl_entry_param layers_params[] = {{"x", TDSL_F32, 1, {32}, 0, 0}};
static const tdsl_entry_buf layers_bufs[] = {{TDSL_F32, 32, 0}, {TDSL_F32, 32, -1}};
static const tdsl_entry_output layers_outs[] = {{1, 1, {32}, {1}, 0, 0}};
static const tdsl_entry_info layers_info = {"layers", 1, layers_params, 2, layers_bufs, 1, layers_outs};
static const int64_t at_0[] = {0, 0}, at_16[] = {16, 16}, at_32[] = {0, 32}, at_neg[] = {-16, 0};
static const tdsl_gpu_kernel layers_k[] = {{"add1", 1, 16, 0, 2, args01, 0, NULL, at_0},
                                           {"add1", 2, 8, 0, 2, args01, 0, NULL, at_16}};
static const tdsl_gpu_kernel past_k[] = {{"add1", 1, 16, 0, 2, args01, 0, NULL, at_32}};
static const tdsl_gpu_kernel neg_k[] = {{"add1", 1, 16, 0, 2, args01, 0, NULL, at_neg}};

// empty: x f32[0] -> f32[0]; the kernel has no work (grid 0)
static const tdsl_entry_param empty_params[] = {{"x", TDSL_F32, 1, {0}, 0, 0}};
static const tdsl_entry_buf empty_bufs[] = {{TDSL_F32, 0, 0}, {TDSL_F32, 0, -1}};
static const tdsl_entry_output empty_outs[] = {{1, 1, {0}, {1}, 0, 0}};
static const tdsl_entry_info empty_info = {"empty", 1, empty_params, 2, empty_bufs, 1, empty_outs};
static const tdsl_gpu_kernel empty_k[] = {{"add1", 0, 256, 0, 2, args01, 0, NULL, NULL}};

// view: x f32[6] returned as a [2, 3] view; no kernels, so no image
static const tdsl_entry_param view_params[] = {{"x", TDSL_F32, 1, {6}, 0, 0}};
static const tdsl_entry_buf view_bufs[] = {{TDSL_F32, 6, 0}};
static const tdsl_entry_output view_outs[] = {{0, 2, {2, 3}, {3, 1}, 0, 0}};
static const tdsl_entry_info view_info = {"view", 1, view_params, 1, view_bufs, 1, view_outs};

// What the fake driver reads of an image: the kernels' ".entry NAME(" lines.
static const char fake_ptx[] = "// fake image\n.entry add1(\n.entry twice(\n.entry check_neg(\n.entry raise_k7(\n";

// Real PTX (checked with ptxas -arch=sm_80 and sm_90): add1(err, x, y), y[i] = x[i] + 1.
static const char add1_ptx[] =
    ".version 7.0\n.target sm_70\n.address_size 64\n\n"
    ".visible .entry add1(.param .u64 err, .param .u64 x, .param .u64 y)\n{\n"
    "  .reg .b32 %r<5>;\n  .reg .b64 %rd<8>;\n  .reg .f32 %f<3>;\n"
    "  ld.param.u64 %rd1, [x];\n  ld.param.u64 %rd2, [y];\n"
    "  cvta.to.global.u64 %rd3, %rd1;\n  cvta.to.global.u64 %rd4, %rd2;\n"
    "  mov.u32 %r1, %ctaid.x;\n  mov.u32 %r2, %ntid.x;\n  mov.u32 %r3, %tid.x;\n"
    "  mad.lo.s32 %r4, %r1, %r2, %r3;\n  mul.wide.s32 %rd5, %r4, 4;\n"
    "  add.s64 %rd6, %rd3, %rd5;\n  add.s64 %rd7, %rd4, %rd5;\n"
    "  ld.global.f32 %f1, [%rd6];\n  add.f32 %f2, %f1, 0f3F800000;\n  st.global.f32 [%rd7], %f2;\n"
    "  ret;\n}\n";

// The same kernels in CUDA C, for NVRTC, with the error record of codegen/codegen.h.
static const char kernels_cu[] =
    "struct tdsl_gpu_error { int flag; int k; long long value; };\n"
    "#define I ((long long)blockIdx.x * blockDim.x + threadIdx.x)\n"
    "extern \"C\" __global__ void add1(tdsl_gpu_error *err, const float *x, float *y) { y[I] = x[I] + 1.0f; }\n"
    "extern \"C\" __global__ void twice(tdsl_gpu_error *err, float *x) { x[I] *= 2.0f; }\n"
    "extern \"C\" __global__ void check_neg(tdsl_gpu_error *err, const float *x) {\n"
    "  if (x[I] < 0.0f && atomicCAS(&err->flag, 0, 1) == 0) { err->k = 0; err->value = I; }\n"
    "}\n"
    "extern \"C\" __global__ void raise_k7(tdsl_gpu_error *err, const float *x) {\n"
    "  if (atomicCAS(&err->flag, 0, 1) == 0) { err->k = 7; err->value = 0; }\n"
    "}\n";

#define NK(ks) ((int)(sizeof ks / sizeof *ks))
static tdsl_gpu_program program(const tdsl_entry_info *fi, tdsl_gpu_image_kind kind, const char *image,
                                const tdsl_gpu_kernel *ks, int nk) {
  return (tdsl_gpu_program){fi, kind, image, NULL, nk, ks};
}

static tdsl_tensor f32_tensor(int ndim, const int64_t *shape, const float *vals, size_t n) {
  tdsl_tensor t = {0};
  assert_int_equal(tdsl_tensor_from_data(&t, TDSL_F32, ndim, shape, NULL, 0, vals, n * sizeof(float)), 0);
  return t;
}

static float at(const tdsl_tensor *t, int64_t i, int64_t j) {
  int64_t idx[2] = {i, j};
  return (float)tdsl_tensor_get_f64(t, idx);
}

// ---- the fake driver's own controls (fake_libcuda.c) ----
static void (*fake_fail)(const char *fn, int nth, int code);
static int (*fake_live)(void), (*fake_bad)(void);
static const char *(*fake_last_image)(void);

static bool have_nvrtc(const char *msg) { return !strstr(msg, "cannot be loaded"); }

// ====================================================================
// Here: no driver (skipped where there is one).
// ====================================================================
static void gpu_is_unavailable_and_says_why(void **state) {
  (void)state;
  if (tdsl_gpu_available())
    skip();
  assert_int_equal(tdsl_gpu_available(), 0);
  assert_non_null(strstr(tdsl_last_error(), "no GPU here"));
  int major = -1, minor = -1;
  assert_int_equal(tdsl_gpu_compute_capability(&major, &minor), TDSL_ERR_GPU);
  assert_non_null(strstr(tdsl_last_error(), "no GPU here"));
}

static void run_without_a_gpu_fails_cleanly(void **state) {
  (void)state;
  if (tdsl_gpu_available())
    skip();
  float v[6] = {1, 2, 3, 4, 5, 6};
  tdsl_tensor x = f32_tensor(2, (int64_t[]){2, 3}, v, 6);
  tdsl_tensor out;
  memset(&out, 0x5A, sizeof out);  // garbage the runner must zero
  const tdsl_tensor *args[] = {&x};
  tdsl_tensor *outs[] = {&out};
  for (int kind = 0; kind < 2; kind++) {
    tdsl_gpu_program p = program(&add_info, kind ? TDSL_GPU_CUDA_C : TDSL_GPU_PTX, kind ? kernels_cu : add1_ptx,
                                 add_k, NK(add_k));
    tdsl_clear_error();
    assert_int_equal(tdsl_gpu_run(&p, args, outs), TDSL_ERR_GPU);
    assert_string_equal(tdsl_last_error(), "no GPU here (libcuda.so.1 cannot be loaded)");
    assert_null(out.storage);
    assert_int_equal(out.ndim, 0);
  }
  assert_int_equal(x.storage->refcount, 1);
  assert_float_equal(at(&x, 1, 2), 6.0f, 0);
  tdsl_tensor_release(&x);
}

// ====================================================================
// On a GPU (skipped here).
// ====================================================================
static void real_gpu_runs_ptx_and_cuda_c(void **state) {
  (void)state;
  if (!tdsl_gpu_available())
    skip();
  float v[6] = {1, 2, 3, 4, 5, 6};
  tdsl_tensor x = f32_tensor(2, (int64_t[]){2, 3}, v, 6);
  const tdsl_tensor *args[] = {&x};
  for (int kind = 0; kind < 2; kind++) {
    tdsl_tensor out = {0};
    tdsl_tensor *outs[] = {&out};
    tdsl_gpu_program p = program(&add_info, kind ? TDSL_GPU_CUDA_C : TDSL_GPU_PTX, kind ? kernels_cu : add1_ptx,
                                 add_k, NK(add_k));
    int rc = tdsl_gpu_run(&p, args, outs);
    if (kind == 1 && rc == TDSL_ERR_GPU && !have_nvrtc(tdsl_last_error()))
      continue;
    assert_int_equal(rc, TDSL_OK);
    for (int i = 0; i < 6; i++)
      assert_float_equal(at(&out, i / 3, i % 3), v[i] + 1, 0);
    tdsl_tensor_release(&out);
  }
  tdsl_tensor_release(&x);
}

static void real_gpu_reports_a_raised_error(void **state) {
  (void)state;
  if (!tdsl_gpu_available())
    skip();
  float v[6] = {1, 2, 3, 4, -5, 6};
  tdsl_tensor x = f32_tensor(1, (int64_t[]){6}, v, 6), out = {0};
  const tdsl_tensor *args[] = {&x};
  tdsl_tensor *outs[] = {&out};
  tdsl_gpu_program p = program(&check_info, TDSL_GPU_CUDA_C, kernels_cu, check_k, NK(check_k));
  int rc = tdsl_gpu_run(&p, args, outs);
  if (rc == TDSL_ERR_GPU && !have_nvrtc(tdsl_last_error()))
    skip();
  assert_int_equal(rc, TDSL_ERR_DATA);
  assert_string_equal(tdsl_last_error(), "f.tdsl:2:5: error: negative value at 4 (100%)");
  assert_null(out.storage);
  tdsl_tensor_release(&x);
}

// ====================================================================
// With the fake driver (test_cuda_rt --fake).
// ====================================================================
static int fake_setup(void **state) {
  (void)state;
  fake_fail("", 0, 0);
  return 0;
}

static int fake_teardown(void **state) {
  (void)state;
  fake_fail("", 0, 0);
  assert_int_equal(fake_live(), 0);  // every buffer and module freed, whatever happened
  assert_int_equal(fake_bad(), 0);   // and no copy or free of memory the runner did not own
  return 0;
}

static void fake_driver_is_available_as_compute_9_0(void **state) {
  (void)state;
  assert_int_equal(tdsl_gpu_available(), 1);
  int major, minor;
  assert_int_equal(tdsl_gpu_compute_capability(&major, &minor), 0);
  assert_int_equal(major, 9);
  assert_int_equal(minor, 0);
}

static void run_copies_a_transposed_argument_in_and_the_result_out(void **state) {
  (void)state;
  // x is f32[2, 3] as the transpose of a [3, 2] storage: begin makes a contiguous copy
  float v[6] = {1, 2, 3, 4, 5, 6};
  tdsl_tensor base = f32_tensor(2, (int64_t[]){3, 2}, v, 6), x = {0}, out = {0};
  assert_int_equal(tdsl_tensor_view(&x, &base, 2, (int64_t[]){2, 3}, (int64_t[]){1, 2}, 0), 0);
  const tdsl_tensor *args[] = {&x};
  tdsl_tensor *outs[] = {&out};
  tdsl_gpu_program p = program(&add_info, TDSL_GPU_PTX, fake_ptx, add_k, NK(add_k));
  assert_int_equal(tdsl_gpu_run(&p, args, outs), TDSL_OK);
  assert_int_equal(out.ndim, 2);
  assert_int_equal(out.shape[0], 2);
  assert_int_equal(out.shape[1], 3);
  assert_true(tdsl_tensor_is_contiguous(&out));
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      assert_float_equal(at(&out, i, j), at(&x, i, j) + 1, 0);
  assert_float_equal(at(&base, 2, 1), 6.0f, 0);  // the argument is untouched
  tdsl_tensor_release(&out);
  tdsl_tensor_release(&x);
  tdsl_tensor_release(&base);
}

static void mut_arguments_are_written_back_contiguous_or_not(void **state) {
  (void)state;
  float v[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  float orig[12];
  memcpy(orig, v, sizeof v);
  tdsl_tensor plain = f32_tensor(2, (int64_t[]){2, 3}, v, 6);
  tdsl_tensor base = f32_tensor(2, (int64_t[]){2, 6}, v, 12), stepped = {0};
  assert_int_equal(tdsl_tensor_view(&stepped, &base, 2, (int64_t[]){2, 3}, (int64_t[]){6, 2}, 1), 0);
  tdsl_gpu_program p = program(&twice_info, TDSL_GPU_PTX, fake_ptx, twice_k, NK(twice_k));
  const tdsl_tensor *a1[] = {&plain}, *a2[] = {&stepped};
  assert_int_equal(tdsl_gpu_run(&p, a1, NULL), TDSL_OK);
  assert_int_equal(tdsl_gpu_run(&p, a2, NULL), TDSL_OK);
  for (int i = 0; i < 6; i++)
    assert_float_equal(at(&plain, i / 3, i % 3), 2 * orig[i], 0);
  for (int j = 0; j < 12; j++)  // odd columns doubled, even ones untouched
    assert_float_equal(at(&base, j / 6, j % 6), (j % 2 ? 2 * orig[j] : orig[j]), 0);
  tdsl_tensor_release(&plain);
  tdsl_tensor_release(&stepped);
  tdsl_tensor_release(&base);
}

static void kernels_run_in_order_through_a_zeroed_temp(void **state) {
  (void)state;
  float v[6] = {0, 1, 2, 3, 4, 5};
  tdsl_tensor x = f32_tensor(1, (int64_t[]){6}, v, 6), out = {0};
  const tdsl_tensor *args[] = {&x};
  tdsl_tensor *outs[] = {&out};
  tdsl_gpu_program p = program(&two_info, TDSL_GPU_PTX, fake_ptx, two_k, NK(two_k));
  assert_int_equal(tdsl_gpu_run(&p, args, outs), TDSL_OK);
  for (int i = 0; i < 6; i++)
    assert_float_equal(at(&out, i, 0), v[i] + 2, 0);
  tdsl_tensor_release(&out);
  tdsl_tensor_release(&x);
}

static void zero_size_buffers_launch_nothing(void **state) {
  (void)state;
  tdsl_tensor x = {0}, out = {0};
  assert_int_equal(tdsl_tensor_empty(&x, TDSL_F32, 1, (int64_t[]){0}), 0);
  const tdsl_tensor *args[] = {&x};
  tdsl_tensor *outs[] = {&out};
  tdsl_gpu_program p = program(&empty_info, TDSL_GPU_PTX, fake_ptx, empty_k, NK(empty_k));
  assert_int_equal(tdsl_gpu_run(&p, args, outs), TDSL_OK);
  assert_int_equal(out.ndim, 1);
  assert_int_equal(out.shape[0], 0);
  assert_non_null(out.storage);
  tdsl_tensor_release(&out);
  tdsl_tensor_release(&x);
}

static void shared_kernels_launch_one_function_with_moved_pointers(void **state) {
  (void)state;
  float v[32];
  for (int i = 0; i < 32; i++)
    v[i] = (float)i;
  tdsl_tensor x = f32_tensor(1, (int64_t[]){32}, v, 32), out = {0};
  const tdsl_tensor *args[] = {&x};
  tdsl_tensor *outs[] = {&out};
  tdsl_gpu_program p = program(&layers_info, TDSL_GPU_PTX, fake_ptx, layers_k, NK(layers_k));
  assert_int_equal(tdsl_gpu_run(&p, args, outs), TDSL_OK);
  for (int i = 0; i < 32; i++)  // (unmoved, the second launch would leave y[16..] zero)
    assert_float_equal(at(&out, i, 0), v[i] + 1, 0);
  tdsl_tensor_release(&out);
  static const struct {
    const tdsl_gpu_kernel *k;
    const char *msg;
  } bad[] = {{past_k, "cuda: kernel add1: argument 1 starts at element 32 of buffer 1 (32 elements)"},
             {neg_k, "cuda: kernel add1: argument 0 starts at element -16 of buffer 0 (32 elements)"}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    memset(&out, 0x5A, sizeof out);
    p = program(&layers_info, TDSL_GPU_PTX, fake_ptx, bad[i].k, 1);
    assert_int_equal(tdsl_gpu_run(&p, args, outs), TDSL_ERR_GPU);
    assert_string_equal(tdsl_last_error(), bad[i].msg);
    assert_null(out.storage);
  }
  tdsl_tensor_release(&x);
}

static void a_function_of_views_needs_no_image(void **state) {
  (void)state;
  float v[6] = {1, 2, 3, 4, 5, 6};
  tdsl_tensor x = f32_tensor(1, (int64_t[]){6}, v, 6), out = {0};
  const tdsl_tensor *args[] = {&x};
  tdsl_tensor *outs[] = {&out};
  for (int kind = 0; kind < 2; kind++) {
    tdsl_gpu_program p = program(&view_info, kind ? TDSL_GPU_CUDA_C : TDSL_GPU_PTX, NULL, NULL, 0);
    assert_int_equal(tdsl_gpu_run(&p, args, outs), TDSL_OK);
    assert_ptr_equal(out.storage, x.storage);  // the caller's storage, as on the CPU
    assert_float_equal(at(&out, 1, 2), 6.0f, 0);
    tdsl_tensor_release(&out);
  }
  tdsl_tensor_release(&x);
}

static void a_raised_error_is_the_kernels_located_message(void **state) {
  (void)state;
  float v[6] = {1, 2, 3, 4, -5, 6};
  tdsl_tensor x = f32_tensor(1, (int64_t[]){6}, v, 6), out;
  memset(&out, 0x5A, sizeof out);
  const tdsl_tensor *args[] = {&x};
  tdsl_tensor *outs[] = {&out};
  tdsl_gpu_program p = program(&check_info, TDSL_GPU_PTX, fake_ptx, check_k, NK(check_k));
  assert_int_equal(tdsl_gpu_run(&p, args, outs), TDSL_ERR_DATA);
  assert_string_equal(tdsl_last_error(), "f.tdsl:2:5: error: negative value at 4 (100%)");
  assert_null(out.storage);
  // without a negative value the same program runs both kernels
  v[4] = 5;
  tdsl_tensor y = f32_tensor(1, (int64_t[]){6}, v, 6);
  args[0] = &y;
  assert_int_equal(tdsl_gpu_run(&p, args, outs), TDSL_OK);
  assert_float_equal(at(&out, 4, 0), 6.0f, 0);
  tdsl_tensor_release(&out);
  tdsl_tensor_release(&y);
  tdsl_tensor_release(&x);
}

static void an_error_index_out_of_the_table_is_a_gpu_error(void **state) {
  (void)state;
  float v[6] = {0};
  tdsl_tensor x = f32_tensor(1, (int64_t[]){6}, v, 6), out = {0};
  const tdsl_tensor *args[] = {&x};
  tdsl_tensor *outs[] = {&out};
  tdsl_gpu_program p = program(&check_info, TDSL_GPU_PTX, fake_ptx, k7_k, NK(k7_k));
  assert_int_equal(tdsl_gpu_run(&p, args, outs), TDSL_ERR_GPU);
  assert_string_equal(tdsl_last_error(), "cuda: kernel raise_k7 raised error 7 of 1");
  tdsl_tensor_release(&x);
}

static void argument_checks_come_before_the_device(void **state) {
  (void)state;
  tdsl_tensor x = {0}, out = {0};
  assert_int_equal(tdsl_tensor_empty(&x, TDSL_F64, 2, (int64_t[]){2, 3}), 0);
  const tdsl_tensor *args[] = {&x};
  tdsl_tensor *outs[] = {&out};
  tdsl_gpu_program p = program(&add_info, TDSL_GPU_PTX, fake_ptx, add_k, NK(add_k));
  assert_int_equal(tdsl_gpu_run(&p, args, outs), TDSL_ERR_ARG);
  assert_string_equal(tdsl_last_error(), "add: argument 'x' must be f32[2, 3] but is f64[2, 3]");
  tdsl_tensor_release(&x);
}

static void each_failing_driver_call_is_named_and_frees_everything(void **state) {
  (void)state;
  static const struct {
    const char *fn;
    int nth, code;
    const char *msg;
  } cases[] = {
      {"cuCtxSetCurrent", 1, 2, "cuda: cuCtxSetCurrent: out of memory"},
      {"cuModuleLoadDataEx", 1, 2, "cuda: cuModuleLoadData: out of memory"},
      {"cuMemAlloc_v2", 1, 2, "cuda: cuMemAlloc(error record): out of memory"},
      {"cuMemsetD8_v2", 1, 1, "cuda: cuMemsetD8(error record): invalid argument"},
      {"cuMemAlloc_v2", 2, 2, "cuda: cuMemAlloc(b0): out of memory"},
      {"cuMemcpyHtoD_v2", 1, 1, "cuda: cuMemcpyHtoD(b0): invalid argument"},
      {"cuMemAlloc_v2", 3, 2, "cuda: cuMemAlloc(b1): out of memory"},
      {"cuMemsetD8_v2", 2, 1, "cuda: cuMemsetD8(b1): invalid argument"},
      {"cuModuleGetFunction", 2, 500, "cuda: cuModuleGetFunction(add1): named symbol not found"},
      {"cuLaunchKernel", 1, 719, "cuda: cuLaunchKernel(check_neg): unspecified launch failure"},
      {"cuCtxSynchronize", 2, 700, "cuda: cuCtxSynchronize(add1): an illegal memory access was encountered"},
      {"cuMemcpyDtoH_v2", 1, 1, "cuda: cuMemcpyDtoH(error record): invalid argument"},
      {"cuMemcpyDtoH_v2", 3, 1, "cuda: cuMemcpyDtoH(b1): invalid argument"},
      {"cuLaunchKernel", 2, 9999, "cuda: cuLaunchKernel(add1): unknown CUDA error"},
  };
  float v[6] = {1, 2, 3, 4, 5, 6};
  tdsl_tensor x = f32_tensor(1, (int64_t[]){6}, v, 6);
  const tdsl_tensor *args[] = {&x};
  tdsl_gpu_program p = program(&check_info, TDSL_GPU_PTX, fake_ptx, check_k, NK(check_k));
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    tdsl_tensor out;
    memset(&out, 0x5A, sizeof out);
    tdsl_tensor *outs[] = {&out};
    fake_fail(cases[i].fn, cases[i].nth, cases[i].code);
    int rc = tdsl_gpu_run(&p, args, outs);
    if (rc != TDSL_ERR_GPU || strcmp(tdsl_last_error(), cases[i].msg) != 0)
      fail_msg("%s #%d: rc %d, '%s'; expected '%s'", cases[i].fn, cases[i].nth, rc, tdsl_last_error(), cases[i].msg);
    assert_null(out.storage);
    assert_int_equal(fake_live(), 0);
    assert_int_equal(x.storage->refcount, 1);
  }
  fake_fail("", 0, 0);
  tdsl_tensor_release(&x);
}

// tdsl_gpu_bench: one checked call, then reps calls timed by events around each call's
// launches (the fake's clock: 1 ms a launch), everything freed, the outputs discarded.
static void bench_times_each_call_by_its_launches(void **state) {
  (void)state;
  float v[6] = {0, 1, 2, 3, 4, 5};
  tdsl_tensor x = f32_tensor(1, (int64_t[]){6}, v, 6);
  const tdsl_tensor *args[] = {&x};
  double ms[5] = {-1, -1, -1, -1, -1};
  tdsl_gpu_program p = program(&two_info, TDSL_GPU_PTX, fake_ptx, two_k, NK(two_k));
  assert_int_equal(tdsl_gpu_bench(&p, args, 5, ms), TDSL_OK);
  for (int r = 0; r < 5; r++)
    assert_float_equal(ms[r], 2.0, 0);  // two kernels a call
  assert_int_equal(fake_live(), 0);
  assert_int_equal(x.storage->refcount, 1);
  assert_int_equal(tdsl_gpu_bench(&p, args, 0, ms), TDSL_ERR_GPU);
  tdsl_tensor_release(&x);
}

static void bench_reports_a_raise_and_failing_event_calls(void **state) {
  (void)state;
  float v[6] = {1, 2, -3, 4, 5, 6};
  tdsl_tensor x = f32_tensor(1, (int64_t[]){6}, v, 6);
  const tdsl_tensor *args[] = {&x};
  double ms[3];
  tdsl_gpu_program p = program(&check_info, TDSL_GPU_PTX, fake_ptx, check_k, NK(check_k));
  assert_int_equal(tdsl_gpu_bench(&p, args, 3, ms), TDSL_ERR_DATA);  // the checked call raises
  assert_int_equal(fake_live(), 0);
  v[2] = 3;
  tdsl_tensor_release(&x);
  x = f32_tensor(1, (int64_t[]){6}, v, 6);
  static const struct {
    const char *fn;
    int nth;
    const char *msg;
  } cases[] = {
      {"cuEventCreate", 2, "cuda: cuEventCreate: out of memory"},
      {"cuEventRecord", 1, "cuda: cuEventRecord: out of memory"},
      {"cuEventRecord", 3, "cuda: cuEventRecord: out of memory"},
      {"cuEventElapsedTime", 2, "cuda: cuEventElapsedTime: out of memory"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    fake_fail(cases[i].fn, cases[i].nth, 2);
    int rc = tdsl_gpu_bench(&p, args, 3, ms);
    if (rc != TDSL_ERR_GPU || strcmp(tdsl_last_error(), cases[i].msg) != 0)
      fail_msg("%s #%d: rc %d, '%s'; expected '%s'", cases[i].fn, cases[i].nth, rc, tdsl_last_error(), cases[i].msg);
    assert_int_equal(fake_live(), 0);
  }
  fake_fail("", 0, 0);
  tdsl_tensor_release(&x);
}

static void a_bad_image_quotes_the_jit_log(void **state) {
  (void)state;
  float v[6] = {0};
  tdsl_tensor x = f32_tensor(2, (int64_t[]){2, 3}, v, 6), out = {0};
  const tdsl_tensor *args[] = {&x};
  tdsl_tensor *outs[] = {&out};
  tdsl_gpu_program p = program(&add_info, TDSL_GPU_PTX, ".entry add1( BAD", add_k, NK(add_k));
  assert_int_equal(tdsl_gpu_run(&p, args, outs), TDSL_ERR_GPU);
  assert_string_equal(tdsl_last_error(),
                      "cuda: cuModuleLoadData: a PTX JIT compilation failed: ptxas fatal   : Unexpected instruction 'BAD'");
  tdsl_tensor_release(&x);
}

static void cuda_c_images_are_compiled_by_nvrtc_for_the_device(void **state) {
  (void)state;
  float v[6] = {1, 2, 3, 4, 5, 6};
  tdsl_tensor x = f32_tensor(1, (int64_t[]){6}, v, 6), out = {0};
  const tdsl_tensor *args[] = {&x};
  tdsl_tensor *outs[] = {&out};
  tdsl_gpu_program p = program(&two_info, TDSL_GPU_CUDA_C, kernels_cu, two_k, NK(two_k));
  int rc = tdsl_gpu_run(&p, args, outs);
  if (rc == TDSL_ERR_GPU && !have_nvrtc(tdsl_last_error()))
    skip();
  if (rc != TDSL_OK)
    fail_msg("rc %d: %s", rc, tdsl_last_error());
  assert_non_null(strstr(fake_last_image(), ".target sm_90"));  // the (fake) device's arch
  for (int i = 0; i < 6; i++)
    assert_float_equal(at(&out, i, 0), v[i] + 2, 0);
  tdsl_tensor_release(&out);
  p.arch = "sm_80";
  assert_int_equal(tdsl_gpu_run(&p, args, outs), TDSL_OK);
  assert_non_null(strstr(fake_last_image(), ".target sm_80"));
  tdsl_tensor_release(&out);
  tdsl_tensor_release(&x);
}

static void cuda_c_that_does_not_compile_quotes_nvrtcs_log(void **state) {
  (void)state;
  float v[6] = {0};
  tdsl_tensor x = f32_tensor(2, (int64_t[]){2, 3}, v, 6), out = {0};
  const tdsl_tensor *args[] = {&x};
  tdsl_tensor *outs[] = {&out};
  tdsl_gpu_program p = program(&add_info, TDSL_GPU_CUDA_C, "extern \"C\" __global__ void add1( {", add_k, NK(add_k));
  int rc = tdsl_gpu_run(&p, args, outs);
  if (rc == TDSL_ERR_GPU && !have_nvrtc(tdsl_last_error()))
    skip();
  assert_int_equal(rc, TDSL_ERR_GPU);
  const char *msg = tdsl_last_error();
  assert_non_null(strstr(msg, "nvrtc: the generated CUDA C does not compile"));
  assert_non_null(strstr(msg, "tdsl.cu(1): error"));
  assert_null(out.storage);
  tdsl_tensor_release(&x);
}

static int run_fake_tests(void) {
  if (!tdsl_gpu_available()) {
    fprintf(stderr, "the fake driver did not load: %s\n", tdsl_last_error());
    return 1;
  }
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!h) {
    fprintf(stderr, "libcuda.so.1 is not loaded: %s\n", dlerror());
    return 1;
  }
  *(void **)&fake_fail = dlsym(h, "fake_cuda_fail");
  *(void **)&fake_live = dlsym(h, "fake_cuda_live");
  *(void **)&fake_bad = dlsym(h, "fake_cuda_bad_calls");
  *(void **)&fake_last_image = dlsym(h, "fake_cuda_last_image");
  if (!fake_fail || !fake_live || !fake_bad || !fake_last_image) {
    fprintf(stderr, "libcuda.so.1 is not the fake driver\n");
    return 1;
  }
#define T(f) cmocka_unit_test_setup_teardown(f, fake_setup, fake_teardown)
  const struct CMUnitTest tests[] = {
      T(fake_driver_is_available_as_compute_9_0),
      T(run_copies_a_transposed_argument_in_and_the_result_out),
      T(mut_arguments_are_written_back_contiguous_or_not),
      T(kernels_run_in_order_through_a_zeroed_temp),
      T(zero_size_buffers_launch_nothing),
      T(shared_kernels_launch_one_function_with_moved_pointers),
      T(a_function_of_views_needs_no_image),
      T(a_raised_error_is_the_kernels_located_message),
      T(an_error_index_out_of_the_table_is_a_gpu_error),
      T(argument_checks_come_before_the_device),
      T(each_failing_driver_call_is_named_and_frees_everything),
      T(a_bad_image_quotes_the_jit_log),
      T(bench_times_each_call_by_its_launches),
      T(bench_reports_a_raise_and_failing_event_calls),
      T(cuda_c_images_are_compiled_by_nvrtc_for_the_device),
      T(cuda_c_that_does_not_compile_quotes_nvrtcs_log),
  };
#undef T
  int rc = cmocka_run_group_tests_name("fake driver", tests, NULL, NULL);
  dlclose(h);
  return rc;
}

// ---- building the fake driver and running this executable again over it ----
static int run(char *const argv[], char *const envp[]) {
  pid_t pid;
  if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, envp) != 0)
    return -1;
  int status;
  if (waitpid(pid, &status, 0) < 0)
    return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void fake_driver_tests_pass(void **state) {
  (void)state;
  char dir[] = "/tmp/tdsl-fakecuda-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char src[4096], so[4200], self[4096], env_ld[4300];
  const char *file = __FILE__;
  const char *slash = strrchr(file, '/');
  snprintf(src, sizeof src, "%.*sfake_libcuda.c", slash ? (int)(slash - file + 1) : 0, file);
  snprintf(so, sizeof so, "%s/libcuda.so.1", dir);
  char *cc[] = {"cc", "-std=c11", "-D_POSIX_C_SOURCE=200809L", "-O1", "-shared", "-fPIC", "-o", so, src, NULL};
  int rc = run(cc, environ);
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  self[n > 0 ? n : 0] = 0;
  int child = -1;
  if (rc == 0 && n > 0) {
    // this environment, with LD_LIBRARY_PATH=dir first
    size_t ne = 0;
    while (environ[ne])
      ne++;
    char **envp = calloc(ne + 2, sizeof *envp);
    size_t k = 0;
    const char *old = getenv("LD_LIBRARY_PATH");
    snprintf(env_ld, sizeof env_ld, "LD_LIBRARY_PATH=%s%s%s", dir, old && *old ? ":" : "", old ? old : "");
    envp[k++] = env_ld;
    for (size_t i = 0; i < ne; i++)
      if (strncmp(environ[i], "LD_LIBRARY_PATH=", 16) != 0)
        envp[k++] = environ[i];
    char *argv[] = {self, "--fake", NULL};
    child = run(argv, envp);
    free(envp);
  }
  unlink(so);
  rmdir(dir);
  if (rc != 0)
    fail_msg("cc could not build %s (exit %d)", src, rc);
  assert_int_equal(child, 0);
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--fake") == 0)
    return run_fake_tests();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(gpu_is_unavailable_and_says_why),
      cmocka_unit_test(run_without_a_gpu_fails_cleanly),
      cmocka_unit_test(real_gpu_runs_ptx_and_cuda_c),
      cmocka_unit_test(real_gpu_reports_a_raised_error),
      cmocka_unit_test(fake_driver_tests_pass),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
