// tests/unit/test_ptx.c: codegen/ptx.c and the GPU mode of the LLVM builder
// (codegen/llvm_gpu.c). Programs go through the whole pipeline; the PTX is checked as
// text (its entries, its target, the instructions each schedule implies: shuffles,
// barriers, shared memory, 128-bit accesses) and the launches of ptx_image against
// each kernel's schedule. Assembling the PTX is
// tests/run/test_ptx_compile.py's job. GPU programs are built by codegen_fixture.c's
// fx_compile_gpu.
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#ifndef TDSLC_WITH_LLVM
int main(void) { return 0; }  // built without LLVM: nothing to test
#else

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "codegen_fixture.h"

static GpuImage image(Ctx *cx, const char *src, const char *arch) {
  LProgram *p[1];
  fx_compile_gpu(cx, src, p, 1);
  GpuImage im = {0};
  const char *err = ptx_image(cx, p[0], arch, 2, &im);
  if (err)
    fprintf(stderr, "ptx_image: %s\n", err);
  assert_null(err);
  assert_int_equal(im.nkernels, p[0]->kernels.len);
  return im;
}

// Rows of 512 get a warp each, 8 to a block, their reductions butterflies of shuffles.
static void a_layer_norm_gets_a_warp_per_row(void **state) {
  (void)state;
  Ctx cx;
  ctx_init(&cx);
  GpuImage im = image(&cx,
                      "fn ln(x: f32[32, 10, 512]) -> f32[32, 10, 512] {\n"
                      "    m = x.mean(-1, keepdim=true)\n"
                      "    return (x - m) / (x.var(-1, keepdim=true, unbiased=false) + 1e-5).sqrt()\n"
                      "}\n",
                      "sm_80");
  assert_int_equal(im.nkernels, 1);
  assert_string_equal(im.kernels[0].name, "tdsl_g_ln_k0");
  assert_int_equal(im.kernels[0].block, 256);
  assert_int_equal(im.kernels[0].grid, 40);  // 320 rows, 8 a block
  assert_int_equal(im.kernels[0].shmem, 0);
  assert_non_null(strstr(im.text, ".target sm_80"));
  assert_non_null(strstr(im.text, ".entry tdsl_g_ln_k0("));
  assert_non_null(strstr(im.text, "shfl.sync.bfly.b32"));
  assert_non_null(strstr(im.text, ".maxntid 256, 1, 1"));
  assert_null(strstr(im.text, "bar.sync"));  // a warp's rows need no block barrier
  ctx_free(&cx);
}

// Long rows get a block each: the warps' results meet in shared memory.
static void a_long_softmax_row_gets_a_block(void **state) {
  (void)state;
  Ctx cx;
  ctx_init(&cx);
  GpuImage im = image(&cx, "fn s(x: f32[3, 8000]) -> f32[3, 8000] {\n    return x.softmax(-1)\n}\n", "sm_80");
  assert_int_equal(im.kernels[0].grid, 3);
  assert_int_equal(im.kernels[0].block, 512);
  assert_non_null(strstr(im.text, ".shared"));
  assert_non_null(strstr(im.text, "bar.sync"));
  assert_non_null(strstr(im.text, "shfl.sync.bfly.b32"));
  ctx_free(&cx);
}

// Elementwise: one grid-stride loop, 128-bit accesses where they line up.
static void an_elementwise_kernel_moves_128_bits_per_access(void **state) {
  (void)state;
  Ctx cx;
  ctx_init(&cx);
  GpuImage im = image(&cx, "fn e(x: f32[64, 256]) -> f32[64, 256] {\n    return x.exp() * 2.0\n}\n", NULL);
  assert_int_equal(im.kernels[0].grid, 16);  // 64 * 256 / 4 lanes / 256 threads
  assert_int_equal(im.kernels[0].block, 256);
  assert_non_null(strstr(im.text, ".target sm_80"));  // the default
  assert_null(strstr(im.text, "__nv_expf"));          // libdevice linked and inlined
  assert_non_null(strstr(im.text, "ld.global.nc.v4.f32"));
  assert_non_null(strstr(im.text, "st.global.v4.f32"));
  im = image(&cx, "fn h(x: f16[64, 256]) -> f16[64, 256] {\n    return x * 2.0\n}\n", NULL);
  assert_non_null(strstr(im.text, "ld.global.nc.v4.b32"));  // 8 halves
  im = image(&cx, "fn big(x: f32[8192, 4096]) -> f32[8192, 4096] {\n    return x + 1.0\n}\n", "sm_80");
  assert_int_equal(im.kernels[0].grid, 8 * 132);  // at most 8 waves of an H200
  ctx_free(&cx);
}

// Two nests writing disjoint elements (interleaved, along dim 1, or apart, along dim 0)
// run one after the other on every thread of the grid.
static void nests_writing_apart_share_the_grid(void **state) {
  (void)state;
  Ctx cx;
  ctx_init(&cx);
  GpuImage im = image(&cx, "fn c(a: f32[64, 300], b: f32[64, 500]) -> f32[64, 800] {\n    return cat([a, b], 1)\n}\n",
                      "sm_80");
  assert_int_equal(im.kernels[0].block, 256);
  assert_int_equal(im.kernels[0].grid, (500 * 64 / 4 + 255) / 256);
  im = image(&cx, "fn d(a: f32[300, 64], b: f32[500, 64]) -> f32[800, 64] {\n    return cat([a, b], 0)\n}\n", "sm_80");
  assert_int_equal(im.kernels[0].block, 256);
  assert_int_equal(im.kernels[0].grid, (500 * 64 / 4 + 255) / 256);
  ctx_free(&cx);
}

// The layers of a loop over stacked weights: kernels with the same code are one .entry,
// which each later kernel launches with the first's grid and block (and its own
// buffers, moved: driver/gpu.c's launch table).
static void kernels_with_the_same_code_are_one_entry(void **state) {
  (void)state;
  Ctx cx;
  ctx_init(&cx);
  LProgram *p[1];
  fx_compile_gpu(&cx,
                 "fn f(x: f32[3, 64], w: f32[4, 64, 64]) -> f32[3, 64] {\n"
                 "    h = x\n"
                 "    for i in range(4) {\n"
                 "        h = (h @ w[i]).tanh()\n"
                 "    }\n"
                 "    return h\n"
                 "}\n",
                 p, 1);
  int nk = p[0]->kernels.len;
  assert_true(nk >= 4);
  GpuImage im = {0};
  assert_null(ptx_image(&cx, p[0], "sm_80", 2, &im));
  assert_int_equal(im.nkernels, nk);
  int entries = 0, shared = 0;
  for (const char *q = im.text; (q = strstr(q, ".entry ")); q++)
    entries++;
  for (int k = 0; k < nk; k++) {
    const LKernel *lk = p[0]->kernels.data[k];
    const char *name = arena_printf(&cx.arena, "tdsl_g_f_%s", lk->name);
    const char *own = arena_printf(&cx.arena, ".entry %s(", name);
    if (!lk->same) {
      assert_string_equal(im.kernels[k].name, name);
      assert_non_null(strstr(im.text, own));
      continue;
    }
    shared++;
    assert_null(strstr(im.text, own));  // no function of its own
    int j = emit_kernel_code(p[0], k);
    assert_true(j < k);
    assert_ptr_equal(lk->same, p[0]->kernels.data[j]);
    assert_ptr_equal(lk->gpu, lk->same->gpu);  // its schedule is the first's
    assert_string_equal(im.kernels[k].name, im.kernels[j].name);
    assert_int_equal(im.kernels[k].grid, im.kernels[j].grid);
    assert_int_equal(im.kernels[k].block, im.kernels[j].block);
    bool moved = false;  // w[i] for i > 0: the weights read from the layer's own start
    for (int a = 0; a < lk->args.len; a++)
      moved |= lk->args.data[a].at > 0;
    assert_true(moved);
  }
  assert_true(shared >= 3);  // layers 1..3 at least
  assert_int_equal(entries, nk - shared);
  ctx_free(&cx);
}

static void a_newer_architecture_than_llvm_knows_gets_sm_86(void **state) {
  (void)state;
  Ctx cx;
  ctx_init(&cx);
  GpuImage im = image(&cx, "fn e(x: f32[4]) -> f32[4] {\n    return x + 1.0\n}\n", "sm_90");
  assert_non_null(strstr(im.text, ".target sm_86"));
  ctx_free(&cx);
}

static void a_bad_architecture_is_an_error(void **state) {
  (void)state;
  Ctx cx;
  ctx_init(&cx);
  LProgram *p[1];
  fx_compile_gpu(&cx, "fn e(x: f32[4]) -> f32[4] {\n    return x + 1.0\n}\n", p, 1);
  GpuImage im = {0};
  const char *err = ptx_image(&cx, p[0], "sm_20", 2, &im);
  assert_non_null(err);
  assert_non_null(strstr(err, "too old"));
  err = ptx_image(&cx, p[0], "compute_80", 2, &im);
  assert_non_null(err);
  assert_non_null(strstr(err, "unknown GPU architecture 'compute_80'"));
  ctx_free(&cx);
}

static void ptx_emit_writes_every_program(void **state) {
  (void)state;
  Ctx cx;
  ctx_init(&cx);
  LProgram *p[2];
  int n = fx_compile_gpu(&cx,
                         "fn f(x: f32[4]) -> f32[4] {\n    return x.tanh()\n}\n"
                         "fn g(a: i32[8], b: i32[8]) -> i32[8] {\n    return a % b\n}\n",
                         p, 2);
  FxText t;
  const char *err = ptx_emit(&cx, p, n, "sm_80", 2, fx_text_open(&t));
  char *text = fx_text_close(&t);
  assert_null(err);
  assert_non_null(strstr(text, ".entry tdsl_g_f_k0("));
  assert_non_null(strstr(text, ".entry tdsl_g_g_k0("));
  assert_non_null(strstr(text, "atom.global.cas.b32"));  // b == 0 raises
  assert_null(strstr(text, ".extern"));                  // nothing left to link
  free(text);
  ctx_free(&cx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_layer_norm_gets_a_warp_per_row),
      cmocka_unit_test(a_long_softmax_row_gets_a_block),
      cmocka_unit_test(an_elementwise_kernel_moves_128_bits_per_access),
      cmocka_unit_test(nests_writing_apart_share_the_grid),
      cmocka_unit_test(kernels_with_the_same_code_are_one_entry),
      cmocka_unit_test(a_newer_architecture_than_llvm_knows_gets_sm_86),
      cmocka_unit_test(a_bad_architecture_is_an_error),
      cmocka_unit_test(ptx_emit_writes_every_program),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
