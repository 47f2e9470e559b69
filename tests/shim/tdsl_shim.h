// tests/shim/tdsl_shim.h: the CUDA C that tdslc generates, compiled by the host's C++
// compiler and run on the CPU (a test tool, not part of tdsl). This header stands in
// for <cuda_runtime.h> (tests/shim/cuda_runtime.h includes it; an NVRTC image, which
// includes nothing, gets it with -include): the CUDA keywords become C++ (a kernel is
// a plain function, __shared__ a static in the section tdsl_shared), the built-in
// variables read the running thread's indices, and the device functions, warp
// intrinsics, atomics and the runtime API call tests/shim/shim.cc, which runs each
// block's threads as fibers. C++ has no `k<<<g, b, s>>>(a...)`: tests/shim/shimcc.py
// rewrites a launch into TDSL_SHIM_LAUNCH(k, g, b, s)(a...) before compiling.
//
// What the shim checks that a GPU would not tell (shim.cc; the generated code is
// compiled with -fsanitize=thread for its instrumentation alone, whose __tsan_* hooks
// shim.cc defines): two threads of a block touching one byte between two barriers,
// one of them writing (a race; __syncwarp orders the lanes of a warp), two blocks of a
// launch touching one byte, one writing; an access outside every device allocation
// (each one lies between large unmapped guards); a read of shared memory no thread of
// the block wrote; a __syncthreads that some thread of the block never reaches (or
// threads waiting at different ones); a warp operation whose mask names lanes that do
// not reach it. A report is a line `tdsl-shim: ...` on the report stream, and the
// launch fails (cudaErrorLaunchFailure, CUDA_ERROR_LAUNCH_FAILED).
#ifndef TDSL_SHIM_H
#define TDSL_SHIM_H

#define TDSL_SHIM 1

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <type_traits>
#include <utility>

// ---- what the CUDA keywords become ----
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
// One copy per kernel (blocks run one at a time), in a section whose bounds the shim
// knows: its reads and writes are checked as a block's shared memory.
#define __shared__ __attribute__((section("tdsl_shared"), aligned(16))) static
#define TDSL_SHIM_NOCHECK __attribute__((no_sanitize_thread, always_inline)) inline

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct uint3 {
  unsigned x, y, z;
};

extern "C" {
// The running thread's indices (the scheduler sets them at each switch) and the launch's shape.
extern uint3 tdsl_shim_tid, tdsl_shim_ctaid;
extern dim3 tdsl_shim_ntid, tdsl_shim_nctaid;
}
#define threadIdx tdsl_shim_tid
#define blockIdx tdsl_shim_ctaid
#define blockDim tdsl_shim_ntid
#define gridDim tdsl_shim_nctaid
#define warpSize 32

// ---- barriers, warp intrinsics, atomics (shim.cc) ----
extern "C" {
void tdsl_shim_syncthreads(int site);
void tdsl_shim_syncwarp(unsigned mask, int site);
uint64_t tdsl_shim_shfl(unsigned mask, uint64_t v, int mode, int arg, int width, int site);
unsigned tdsl_shim_vote(unsigned mask, int pred, int mode, int site);
int tdsl_shim_atomic_cas_i32(int *p, int cmp, int val);
unsigned long long tdsl_shim_atomic_cas_u64(unsigned long long *p, unsigned long long cmp, unsigned long long val);
int tdsl_shim_atomic_add_i32(int *p, int v);
unsigned long long tdsl_shim_atomic_add_u64(unsigned long long *p, unsigned long long v);
float tdsl_shim_atomic_add_f32(float *p, float v);
double tdsl_shim_atomic_add_f64(double *p, double v);
int tdsl_shim_atomic_max_i32(int *p, int v);
int tdsl_shim_atomic_min_i32(int *p, int v);
int tdsl_shim_atomic_exch_i32(int *p, int v);
// mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}: the warp's fragments (PTX ISA,
// "Matrix Fragments for mma.m16n8k16"), emulated across its 32 lanes.
void tdsl_shim_mma_16816(float *d, const uint32_t *a, const uint32_t *b, const float *c, int bf16, int site);
}

enum { TDSL_SHIM_SHFL_IDX, TDSL_SHIM_SHFL_UP, TDSL_SHIM_SHFL_DOWN, TDSL_SHIM_SHFL_XOR };
enum { TDSL_SHIM_VOTE_ALL, TDSL_SHIM_VOTE_ANY, TDSL_SHIM_VOTE_BALLOT };

#define __syncthreads() tdsl_shim_syncthreads(__LINE__)
#define __syncwarp(...) tdsl_shim_syncwarp_at(__LINE__, ##__VA_ARGS__)
TDSL_SHIM_NOCHECK void tdsl_shim_syncwarp_at(int site, unsigned mask = 0xffffffffu) { tdsl_shim_syncwarp(mask, site); }

template <class T> TDSL_SHIM_NOCHECK T tdsl_shim_shfl_t(unsigned mask, T v, int mode, int arg, int width, int site) {
  static_assert(sizeof(T) <= 8, "a shuffled value is at most 8 bytes");
  uint64_t b = 0;
  memcpy(&b, &v, sizeof v);
  b = tdsl_shim_shfl(mask, b, mode, arg, width, site);
  T r;
  memcpy(&r, &b, sizeof r);
  return r;
}
#define __shfl_sync(m, v, l, ...) tdsl_shim_shfl_t(m, v, TDSL_SHIM_SHFL_IDX, (int)(l), tdsl_shim_width(__VA_ARGS__), __LINE__)
#define __shfl_up_sync(m, v, d, ...) tdsl_shim_shfl_t(m, v, TDSL_SHIM_SHFL_UP, (int)(d), tdsl_shim_width(__VA_ARGS__), __LINE__)
#define __shfl_down_sync(m, v, d, ...) \
  tdsl_shim_shfl_t(m, v, TDSL_SHIM_SHFL_DOWN, (int)(d), tdsl_shim_width(__VA_ARGS__), __LINE__)
#define __shfl_xor_sync(m, v, d, ...) tdsl_shim_shfl_t(m, v, TDSL_SHIM_SHFL_XOR, (int)(d), tdsl_shim_width(__VA_ARGS__), __LINE__)
TDSL_SHIM_NOCHECK int tdsl_shim_width(int w = 32) { return w; }
#define __all_sync(m, p) ((int)tdsl_shim_vote(m, (p) != 0, TDSL_SHIM_VOTE_ALL, __LINE__))
#define __any_sync(m, p) ((int)tdsl_shim_vote(m, (p) != 0, TDSL_SHIM_VOTE_ANY, __LINE__))
#define __ballot_sync(m, p) tdsl_shim_vote(m, (p) != 0, TDSL_SHIM_VOTE_BALLOT, __LINE__)

TDSL_SHIM_NOCHECK int atomicCAS(int *p, int c, int v) { return tdsl_shim_atomic_cas_i32(p, c, v); }
TDSL_SHIM_NOCHECK unsigned atomicCAS(unsigned *p, unsigned c, unsigned v) {
  return (unsigned)tdsl_shim_atomic_cas_i32((int *)p, (int)c, (int)v);
}
TDSL_SHIM_NOCHECK unsigned long long atomicCAS(unsigned long long *p, unsigned long long c, unsigned long long v) {
  return tdsl_shim_atomic_cas_u64(p, c, v);
}
TDSL_SHIM_NOCHECK int atomicAdd(int *p, int v) { return tdsl_shim_atomic_add_i32(p, v); }
TDSL_SHIM_NOCHECK unsigned atomicAdd(unsigned *p, unsigned v) { return (unsigned)tdsl_shim_atomic_add_i32((int *)p, (int)v); }
TDSL_SHIM_NOCHECK unsigned long long atomicAdd(unsigned long long *p, unsigned long long v) {
  return tdsl_shim_atomic_add_u64(p, v);
}
TDSL_SHIM_NOCHECK float atomicAdd(float *p, float v) { return tdsl_shim_atomic_add_f32(p, v); }
TDSL_SHIM_NOCHECK double atomicAdd(double *p, double v) { return tdsl_shim_atomic_add_f64(p, v); }
TDSL_SHIM_NOCHECK int atomicMax(int *p, int v) { return tdsl_shim_atomic_max_i32(p, v); }
TDSL_SHIM_NOCHECK int atomicMin(int *p, int v) { return tdsl_shim_atomic_min_i32(p, v); }
TDSL_SHIM_NOCHECK int atomicExch(int *p, int v) { return tdsl_shim_atomic_exch_i32(p, v); }
TDSL_SHIM_NOCHECK void __threadfence(void) {}
TDSL_SHIM_NOCHECK void __threadfence_block(void) {}
template <class T> TDSL_SHIM_NOCHECK T __ldg(const T *p) { return *p; }

// ---- device functions: bits, and the math the host's libm has ----
TDSL_SHIM_NOCHECK float __int_as_float(int x) {
  float f;
  memcpy(&f, &x, 4);
  return f;
}
TDSL_SHIM_NOCHECK int __float_as_int(float x) {
  int i;
  memcpy(&i, &x, 4);
  return i;
}
TDSL_SHIM_NOCHECK float __uint_as_float(unsigned x) {
  float f;
  memcpy(&f, &x, 4);
  return f;
}
TDSL_SHIM_NOCHECK unsigned __float_as_uint(float x) {
  unsigned u;
  memcpy(&u, &x, 4);
  return u;
}
TDSL_SHIM_NOCHECK double __longlong_as_double(long long x) {
  double d;
  memcpy(&d, &x, 8);
  return d;
}
TDSL_SHIM_NOCHECK long long __double_as_longlong(double x) {
  long long i;
  memcpy(&i, &x, 8);
  return i;
}
TDSL_SHIM_NOCHECK float __fdividef(float a, float b) { return a / b; }
TDSL_SHIM_NOCHECK float __expf(float a) { return expf(a); }
TDSL_SHIM_NOCHECK int __popc(unsigned x) { return __builtin_popcount(x); }
TDSL_SHIM_NOCHECK int __ffs(int x) { return __builtin_ffs(x); }

// ---- the runtime API of --emit=cuda's host code ----
typedef int cudaError_t;
typedef void *cudaStream_t;
enum { cudaSuccess = 0, cudaErrorMemoryAllocation = 2, cudaErrorInvalidValue = 1, cudaErrorLaunchFailure = 719 };
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4
};
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
extern "C" {
cudaError_t cudaMalloc(void **p, size_t n);
cudaError_t cudaFree(void *p);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, cudaMemcpyKind kind);
cudaError_t cudaMemset(void *p, int v, size_t n);
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
cudaError_t cudaDeviceSynchronize(void);
const char *cudaGetErrorString(cudaError_t e);
cudaError_t tdsl_shim_func_set_attribute(const void *k, int attr, int value);
}
template <class K> cudaError_t cudaFuncSetAttribute(K k, cudaFuncAttribute attr, int value) {
  return tdsl_shim_func_set_attribute((const void *)k, (int)attr, value);
}

// ---- launches ----
extern "C" {
// Runs fn(ctx) in every thread of a grid x block launch; a checker report or a launch
// the shim cannot run makes cudaGetLastError (and the driver's launch) fail.
int tdsl_shim_run(const char *name, dim3 grid, dim3 block, size_t shmem, void (*fn)(void *), void *ctx);
// A kernel of a module, for the driver API's cuModuleGetFunction and cuLaunchKernel:
// invoke(k, params) calls k with *params[i] as its parameter i.
void tdsl_shim_register(const char *name, void *k, void (*invoke)(void *k, void **params), int nparams);
}

template <class... P, size_t... I> void tdsl_shim_invoke_i(void *k, void **params, std::index_sequence<I...>) {
  ((void (*)(P...))k)(*(std::remove_reference_t<P> *)params[I]...);
}
template <class... P> void tdsl_shim_invoke(void *k, void **params) {
  tdsl_shim_invoke_i<P...>(k, params, std::index_sequence_for<P...>{});
}

// TDSL_SHIM_LAUNCH(k, g, b, s)(a...): what `k<<<g, b, s>>>(a...)` is rewritten to.
template <class... P> struct tdsl_shim_launcher {
  void (*k)(P...);
  const char *name;
  dim3 g, b;
  size_t s;
  template <class... A> void operator()(A... a) const {
    static_assert(sizeof...(A) == sizeof...(P), "a launch passes every parameter of its kernel");
    auto k_ = k;
    auto call = [=]() { k_(((P)a)...); };
    tdsl_shim_run(name, g, b, s, [](void *c) { (*(decltype(call) *)c)(); }, (void *)&call);
  }
};
template <class... P> tdsl_shim_launcher<P...> tdsl_shim_launch(void (*k)(P...), const char *name, dim3 g, dim3 b,
                                                                size_t s = 0) {
  return tdsl_shim_launcher<P...>{k, name, g, b, s};
}
#define TDSL_SHIM_LAUNCH(k, ...) tdsl_shim_launch(k, #k, __VA_ARGS__)

// TDSL_SHIM_KERNEL(k): registers kernel k for the driver API (tests/shim/shimcc.py
// appends one per __global__ of an image).
template <class... P> void tdsl_shim_register_t(const char *name, void (*k)(P...)) {
  tdsl_shim_register(name, (void *)k, &tdsl_shim_invoke<P...>, (int)sizeof...(P));
}
#define TDSL_SHIM_KERNEL(k)                                                    \
  __attribute__((constructor)) static void tdsl_shim_reg_##k(void) { tdsl_shim_register_t(#k, k); }

// TDSL_SHIM_SECTION(): the tdsl_shared section of the module (the shared memory its
// kernels declare), given to the checker; shimcc.py appends it to every file.
extern "C" char __start_tdsl_shared[] __attribute__((weak)), __stop_tdsl_shared[] __attribute__((weak));
extern "C" void tdsl_shim_register_shared(char *lo, char *hi);
#define TDSL_SHIM_SECTION()                                               \
  __attribute__((constructor)) static void tdsl_shim_section(void) {     \
    tdsl_shim_register_shared(__start_tdsl_shared, __stop_tdsl_shared);   \
  }

#endif
