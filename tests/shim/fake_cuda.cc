// tests/shim/fake_cuda.cc: libcuda.so.1 over the CUDA shim, so that `tdslc run --target
// cuda --backend cuda` runs on the CPU (LD_LIBRARY_PATH names the folder holding it and
// fake_nvrtc.cc's libnvrtc.so). The driver API that runtime/cuda.c resolves: one
// device of compute capability 9.0, memory from the shim's device allocations, and
// modules that are shared objects: an image `// tdsl-shim module PATH` (what the fake
// NVRTC hands back for CUDA C) is dlopen'ed, its kernels registered by their
// constructors; any other image (PTX) is refused with a log saying why.
// Launches run through tdsl_shim_launch_kernel; a checker report fails the launch with
// CUDA_ERROR_LAUNCH_FAILED.
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tdsl_shim.h"

#define EXPORT extern "C" __attribute__((visibility("default")))

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_LAUNCH_FAILED = 719,
  CUDA_ERROR_NOT_SUPPORTED = 801,
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};

extern "C" {
void *tdsl_shim_dev_alloc(size_t n);
int tdsl_shim_dev_free(void *p);
int tdsl_shim_dev_valid(const void *p, size_t n);
void tdsl_shim_begin_module(int m);
const void *tdsl_shim_find_kernel(int module, const char *name);
int tdsl_shim_launch_kernel(const void *kernel, dim3 grid, dim3 block, size_t shmem, void **params);
}

static const char MAGIC[] = "// tdsl-shim module ";

struct Module {
  int id;
  void *so;
};
static int nmodules;

EXPORT CUresult cuInit(unsigned flags) { return flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }
EXPORT CUresult cuDeviceGetCount(int *n) {
  *n = 1;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGet(int *d, int ordinal) {
  *d = 0;
  return ordinal == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
EXPORT CUresult cuDeviceGetAttribute(int *v, int attr, int d) {
  (void)d;
  *v = attr == 75 ? 9 : attr == 76 ? 0 : 0;  // compute capability 9.0
  return CUDA_SUCCESS;
}
EXPORT CUresult cuDevicePrimaryCtxRetain(void **c, int d) {
  static int ctx;
  (void)d;
  *c = &ctx;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxSetCurrent(void *c) { return c ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }
EXPORT CUresult cuCtxSynchronize(void) { return CUDA_SUCCESS; }
EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *d, size_t n) {
  void *p = tdsl_shim_dev_alloc(n);
  *d = (CUdeviceptr)(uintptr_t)p;
  return p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
EXPORT CUresult cuMemFree_v2(CUdeviceptr d) {
  return tdsl_shim_dev_free((void *)(uintptr_t)d) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
  if (n && !tdsl_shim_dev_valid((void *)(uintptr_t)dst, n))
    return CUDA_ERROR_INVALID_VALUE;
  if (n)
    memcpy((void *)(uintptr_t)dst, src, n);
  return CUDA_SUCCESS;
}
EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
  if (n && !tdsl_shim_dev_valid((void *)(uintptr_t)src, n))
    return CUDA_ERROR_INVALID_VALUE;
  if (n)
    memcpy(dst, (void *)(uintptr_t)src, n);
  return CUDA_SUCCESS;
}
EXPORT CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) {
  if (n && !tdsl_shim_dev_valid((void *)(uintptr_t)d, n))
    return CUDA_ERROR_INVALID_VALUE;
  if (n)
    memset((void *)(uintptr_t)d, v, n);
  return CUDA_SUCCESS;
}

static void put_log(int n, int *opts, void **vals, const char *msg) {
  char *buf = NULL;
  size_t size = 0;
  for (int i = 0; i < n; i++) {
    if (opts[i] == CU_JIT_ERROR_LOG_BUFFER)
      buf = (char *)vals[i];
    else if (opts[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
      size = (size_t)(uintptr_t)vals[i];
  }
  if (buf && size)
    snprintf(buf, size, "%s", msg);
}

EXPORT CUresult cuModuleLoadDataEx(Module **m, const void *image, unsigned n, int *opts, void **vals) {
  const char *text = (const char *)image;
  if (strncmp(text, MAGIC, sizeof MAGIC - 1) != 0) {
    put_log((int)n, opts, vals,
            "the CUDA shim runs CUDA C images only (--backend cuda); PTX cannot run on the CPU");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s", text + sizeof MAGIC - 1);
  path[strcspn(path, "\n")] = 0;
  Module *mod = (Module *)calloc(1, sizeof *mod);
  mod->id = ++nmodules;
  tdsl_shim_begin_module(mod->id);
  mod->so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  tdsl_shim_begin_module(0);
  if (!mod->so) {
    char msg[4200];
    snprintf(msg, sizeof msg, "dlopen: %s", dlerror());
    put_log((int)n, opts, vals, msg);
    free(mod);
    return CUDA_ERROR_INVALID_IMAGE;
  }
  *m = mod;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleUnload(Module *m) {
  if (!m)
    return CUDA_ERROR_INVALID_HANDLE;
  // the object stays loaded (its kernels stay registered under the module's id)
  free(m);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetFunction(const void **f, Module *m, const char *name) {
  if (!m)
    return CUDA_ERROR_INVALID_HANDLE;
  *f = tdsl_shim_find_kernel(m->id, name);
  return *f ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuFuncSetAttribute(const void *f, int attr, int v) {
  (void)f, (void)attr;
  return v >= 0 && v <= 227 * 1024 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuLaunchKernel(const void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shmem, void *stream, void **params, void **extra) {
  (void)stream;
  if (!f || extra)
    return CUDA_ERROR_INVALID_VALUE;
  int rc = tdsl_shim_launch_kernel(f, dim3(gx, gy, gz), dim3(bx, by, bz), shmem, params);
  return rc == 0 ? CUDA_SUCCESS : rc == cudaErrorInvalidValue ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_LAUNCH_FAILED;
}

// Events: launches run to completion inside cuLaunchKernel, so an event is the host's
// clock when it was recorded (tdsl_gpu_bench times calls with them).
struct Event {
  double ms;  // -1 before a record
};
EXPORT CUresult cuEventCreate(Event **e, unsigned flags) {
  (void)flags;
  *e = (Event *)malloc(sizeof **e);
  if (!*e)
    return CUDA_ERROR_OUT_OF_MEMORY;
  (*e)->ms = -1;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuEventRecord(Event *e, void *stream) {
  (void)stream;
  if (!e)
    return CUDA_ERROR_INVALID_HANDLE;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  e->ms = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuEventSynchronize(Event *e) { return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE; }
EXPORT CUresult cuEventElapsedTime(float *ms, Event *from, Event *to) {
  if (!from || !to || from->ms < 0 || to->ms < 0)
    return CUDA_ERROR_INVALID_HANDLE;
  *ms = (float)(to->ms - from->ms);
  return CUDA_SUCCESS;
}
EXPORT CUresult cuEventDestroy_v2(Event *e) {
  free(e);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuGetErrorString(CUresult r, const char **s) {
  switch (r) {
  case CUDA_SUCCESS: *s = "no error"; break;
  case CUDA_ERROR_INVALID_VALUE: *s = "invalid argument"; break;
  case CUDA_ERROR_OUT_OF_MEMORY: *s = "out of memory"; break;
  case CUDA_ERROR_INVALID_IMAGE: *s = "device kernel image is invalid"; break;
  case CUDA_ERROR_NOT_FOUND: *s = "named symbol not found"; break;
  case CUDA_ERROR_LAUNCH_FAILED: *s = "unspecified launch failure (the CUDA shim reported it)"; break;
  case CUDA_ERROR_NOT_SUPPORTED: *s = "operation not supported (the CUDA shim runs CUDA C images only)"; break;
  default: *s = "unknown error"; return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}
