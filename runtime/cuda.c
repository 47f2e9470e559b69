// runtime/cuda.c: GPU runs through the CUDA driver API, which is opened with dlopen
// ("libcuda.so.1") on first use and never linked, so libtdslrt builds and runs on a
// machine with no GPU and no CUDA headers; the few types and enums it needs are
// declared here with the driver's numbers. CUDA C images are compiled at run time by
// NVRTC (libnvrtc.so, opened the same way) to PTX, and every image is loaded with
// cuModuleLoadDataEx, whose JIT log is quoted when the PTX does not assemble.
//
// Invariants: the libraries are opened and cuInit'ed once per process (pthread_once),
// and the outcome is kept, so tdsl_gpu_available() always gives the same answer and
// message; one primary context of device 0 is retained for the process and made
// current on the calling thread by each run. A run owns its module and its device
// buffers and frees all of them on every path; the host side is runtime/entry.c's
// (begin and end), so argument checks, copies and outputs are the CPU entry's.
#include "tdsl.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// ---- the driver API, as much as is used (cuda.h's numbers) ----
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
enum {
  CUDA_SUCCESS = 0,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};

// name, return type, parameters: every entry point, resolved by its versioned name.
#define CU_FUNCS(X)                                                                                    \
  X(cuInit, (unsigned flags))                                                                         \
  X(cuDeviceGetCount, (int *n))                                                                       \
  X(cuDeviceGet, (CUdevice * d, int ordinal))                                                         \
  X(cuDeviceGetAttribute, (int *v, int attr, CUdevice d))                                             \
  X(cuDevicePrimaryCtxRetain, (CUcontext * c, CUdevice d))                                            \
  X(cuCtxSetCurrent, (CUcontext c))                                                                   \
  X(cuCtxSynchronize, (void))                                                                         \
  X(cuMemAlloc_v2, (CUdeviceptr * p, size_t n))                                                       \
  X(cuMemFree_v2, (CUdeviceptr p))                                                                    \
  X(cuMemcpyHtoD_v2, (CUdeviceptr dst, const void *src, size_t n))                                    \
  X(cuMemcpyDtoH_v2, (void *dst, CUdeviceptr src, size_t n))                                          \
  X(cuMemsetD8_v2, (CUdeviceptr p, unsigned char v, size_t n))                                        \
  X(cuModuleLoadDataEx, (CUmodule * m, const void *image, unsigned n, int *opts, void **vals))        \
  X(cuModuleGetFunction, (CUfunction * f, CUmodule m, const char *name))                              \
  X(cuModuleUnload, (CUmodule m))                                                                     \
  X(cuFuncSetAttribute, (CUfunction f, int attr, int v))                                              \
  X(cuLaunchKernel, (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,    \
                     unsigned bz, unsigned shmem, CUstream s, void **params, void **extra))           \
  X(cuGetErrorString, (CUresult r, const char **s))

// Events time tdsl_gpu_bench's calls on the device; without them (an old or partial
// driver) each call is timed on the host around its launches and a synchronize.
#define CU_EVENT_FUNCS(X)                                                                              \
  X(cuEventCreate, (CUevent * e, unsigned flags))                                                     \
  X(cuEventRecord, (CUevent e, CUstream s))                                                           \
  X(cuEventSynchronize, (CUevent e))                                                                  \
  X(cuEventElapsedTime, (float *ms, CUevent from, CUevent to))                                        \
  X(cuEventDestroy_v2, (CUevent e))

// ---- NVRTC, for CUDA C images ----
typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;
#define NVRTC_FUNCS(X)                                                                                 \
  X(nvrtcCreateProgram, (nvrtcProgram * p, const char *src, const char *name, int nheaders,            \
                         const char *const *headers, const char *const *names))                       \
  X(nvrtcCompileProgram, (nvrtcProgram p, int nopts, const char *const *opts))                        \
  X(nvrtcGetPTXSize, (nvrtcProgram p, size_t * n))                                                    \
  X(nvrtcGetPTX, (nvrtcProgram p, char *ptx))                                                         \
  X(nvrtcGetProgramLogSize, (nvrtcProgram p, size_t * n))                                             \
  X(nvrtcGetProgramLog, (nvrtcProgram p, char *log))                                                  \
  X(nvrtcDestroyProgram, (nvrtcProgram * p))

static struct {
#define FIELD(name, params) CUresult(*name) params;
  CU_FUNCS(FIELD)
  CU_EVENT_FUNCS(FIELD)
#undef FIELD
  int events;  // every CU_EVENT_FUNCS entry point resolved
} cu;

static struct {
#define FIELD(name, params) nvrtcResult(*name) params;
  NVRTC_FUNCS(FIELD)
#undef FIELD
  const char *(*nvrtcGetErrorString)(nvrtcResult r);
} nv;

// What the one-time initialisations found.
static pthread_once_t cu_once = PTHREAD_ONCE_INIT, nv_once = PTHREAD_ONCE_INIT;
static int cu_ok, nv_ok;
static char cu_why[512], nv_why[512];
static CUdevice cu_dev;
static CUcontext cu_ctx;

static const char *cu_text(CUresult r) {
  const char *s = NULL;
  if (cu.cuGetErrorString && cu.cuGetErrorString(r, &s) == CUDA_SUCCESS && s)
    return s;
  return "unknown CUDA error";
}

static void cu_init(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(cu_why, sizeof cu_why, "no GPU here (libcuda.so.1 cannot be loaded)");
    return;
  }
  // The library stays open for the process: its context and threads outlive any run.
#define RESOLVE(name, params)                                                                       \
  *(void **)&cu.name = dlsym(h, #name);                                                             \
  if (!cu.name) {                                                                                   \
    snprintf(cu_why, sizeof cu_why, "no GPU here (libcuda.so.1 has no %s: driver too old)", #name); \
    return;                                                                                         \
  }
  CU_FUNCS(RESOLVE)
#undef RESOLVE
  cu.events = 1;
#define RESOLVE_OPTIONAL(name, params)     \
  *(void **)&cu.name = dlsym(h, #name);    \
  cu.events = cu.events && cu.name != NULL;
  CU_EVENT_FUNCS(RESOLVE_OPTIONAL)
#undef RESOLVE_OPTIONAL
  CUresult r = cu.cuInit(0);
  if (r != CUDA_SUCCESS) {
    snprintf(cu_why, sizeof cu_why, "no GPU here (cuInit: %s)", cu_text(r));
    return;
  }
  int n = 0;
  if ((r = cu.cuDeviceGetCount(&n)) != CUDA_SUCCESS || n < 1) {
    snprintf(cu_why, sizeof cu_why, "no GPU here (no CUDA device%s%s)", r ? ": " : "", r ? cu_text(r) : "");
    return;
  }
  if ((r = cu.cuDeviceGet(&cu_dev, 0)) != CUDA_SUCCESS ||
      (r = cu.cuDevicePrimaryCtxRetain(&cu_ctx, cu_dev)) != CUDA_SUCCESS) {
    snprintf(cu_why, sizeof cu_why, "no GPU here (device 0: %s)", cu_text(r));
    return;
  }
  cu_ok = 1;
}

int tdsl_gpu_available(void) {
  pthread_once(&cu_once, cu_init);
  if (!cu_ok)
    tdsl_set_error("%s", cu_why);
  return cu_ok;
}

int tdsl_gpu_compute_capability(int *major, int *minor) {
  if (!tdsl_gpu_available())
    return TDSL_ERR_GPU;
  CUresult r;
  if ((r = cu.cuDeviceGetAttribute(major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, cu_dev)) != CUDA_SUCCESS ||
      (r = cu.cuDeviceGetAttribute(minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, cu_dev)) != CUDA_SUCCESS)
    return tdsl_set_error("cuda: cuDeviceGetAttribute: %s", cu_text(r)), TDSL_ERR_GPU;
  return TDSL_OK;
}

static void nv_init(void) {
  static const char *const names[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12",
                                      "/usr/local/cuda/lib64/libnvrtc.so"};
  void *h = NULL;
  for (size_t i = 0; i < sizeof names / sizeof *names && !h; i++)
    h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(nv_why, sizeof nv_why, "nvrtc: libnvrtc.so cannot be loaded (the CUDA C backend needs NVRTC)");
    return;
  }
#define RESOLVE(name, params)                                             \
  *(void **)&nv.name = dlsym(h, #name);                                   \
  if (!nv.name) {                                                         \
    snprintf(nv_why, sizeof nv_why, "nvrtc: libnvrtc.so has no %s", #name); \
    return;                                                               \
  }
  NVRTC_FUNCS(RESOLVE)
  RESOLVE(nvrtcGetErrorString, ())
#undef RESOLVE
  nv_ok = 1;
}

// ---- one run: its module and device buffers ----
typedef struct Run {
  const tdsl_gpu_program *p;
  CUmodule mod;
  CUdeviceptr err;      // the tdsl_gpu_error record
  CUdeviceptr *dbufs;   // one per program buffer; 0 for an empty one
  size_t *nbytes;
  char *ptx;            // NVRTC's output (malloc), or NULL
} Run;

static int cu_fail(const char *call, const char *what, CUresult r) {
  tdsl_set_error("cuda: %s%s%s%s: %s", call, what ? "(" : "", what ? what : "", what ? ")" : "", cu_text(r));
  return TDSL_ERR_GPU;
}

// CUDA C -> PTX with NVRTC, for compute_<arch> (the device's when arch is NULL).
static int compile_cuda_c(Run *run) {
  pthread_once(&nv_once, nv_init);
  if (!nv_ok)
    return tdsl_set_error("%s", nv_why), TDSL_ERR_GPU;
  const char *arch = run->p->arch;
  char opt_arch[64];
  if (arch && strncmp(arch, "sm_", 3) == 0) {
    snprintf(opt_arch, sizeof opt_arch, "--gpu-architecture=compute_%s", arch + 3);
  } else {
    int major, minor;
    if (tdsl_gpu_compute_capability(&major, &minor) != 0)
      return TDSL_ERR_GPU;
    snprintf(opt_arch, sizeof opt_arch, "--gpu-architecture=compute_%d%d", major, minor);
  }
  const char *opts[] = {opt_arch, "-default-device"};
  nvrtcProgram prog = NULL;
  nvrtcResult r = nv.nvrtcCreateProgram(&prog, run->p->image, "tdsl.cu", 0, NULL, NULL);
  if (r != 0)
    return tdsl_set_error("nvrtc: nvrtcCreateProgram: %s", nv.nvrtcGetErrorString(r)), TDSL_ERR_GPU;
  int rc = TDSL_OK;
  r = nv.nvrtcCompileProgram(prog, (int)(sizeof opts / sizeof *opts), opts);
  if (r != 0) {
    size_t n = 0;
    char *log = NULL;
    if (nv.nvrtcGetProgramLogSize(prog, &n) == 0 && n > 0 && (log = malloc(n + 1)) != NULL) {
      if (nv.nvrtcGetProgramLog(prog, log) != 0)
        log[0] = 0;
      log[n] = 0;
    }
    tdsl_set_error("nvrtc: the generated CUDA C does not compile (%s): %s", nv.nvrtcGetErrorString(r),
                   log ? log : "(no log)");
    free(log);
    rc = TDSL_ERR_GPU;
  } else {
    size_t n = 0;
    if ((r = nv.nvrtcGetPTXSize(prog, &n)) != 0 || !(run->ptx = malloc(n + 1)) ||
        (r = nv.nvrtcGetPTX(prog, run->ptx)) != 0) {
      tdsl_set_error("nvrtc: nvrtcGetPTX: %s", r ? nv.nvrtcGetErrorString(r) : "out of memory");
      rc = TDSL_ERR_GPU;
    } else {
      run->ptx[n] = 0;
    }
  }
  nv.nvrtcDestroyProgram(&prog);
  return rc;
}

// Loads the PTX, quoting the JIT's log when it does not assemble.
static int load_module(Run *run, const char *ptx) {
  char log[4096] = "";
  int opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *vals[] = {log, (void *)(uintptr_t)sizeof log};
  CUresult r = cu.cuModuleLoadDataEx(&run->mod, ptx, 2, opts, vals);
  if (r == CUDA_SUCCESS)
    return TDSL_OK;
  run->mod = NULL;
  log[sizeof log - 1] = 0;
  tdsl_set_error("cuda: cuModuleLoadData: %s%s%s", cu_text(r), log[0] ? ": " : "", log);
  return TDSL_ERR_GPU;
}

// Device buffers: parameters copied in from the host buffers, the rest zeroed (the
// kernels write every element before reading it, as on the CPU, where tdsl_entry_begin
// no longer zeroes; zeroing keeps a stray read on the device deterministic), and the
// error record zeroed.
static int upload(Run *run, const tdsl_tensor *bufs) {
  const tdsl_entry_info *fi = run->p->info;
  CUresult r;
  if ((r = cu.cuMemAlloc_v2(&run->err, sizeof(tdsl_gpu_error))) != CUDA_SUCCESS) {
    run->err = 0;
    return cu_fail("cuMemAlloc", "error record", r);
  }
  if ((r = cu.cuMemsetD8_v2(run->err, 0, sizeof(tdsl_gpu_error))) != CUDA_SUCCESS)
    return cu_fail("cuMemsetD8", "error record", r);
  for (int b = 0; b < fi->nbufs; b++) {
    size_t n = (size_t)fi->bufs[b].numel * tdsl_dtype_size(fi->bufs[b].dtype);
    run->nbytes[b] = n;
    if (n == 0)
      continue;
    char what[32];
    snprintf(what, sizeof what, "b%d", b);
    if ((r = cu.cuMemAlloc_v2(&run->dbufs[b], n)) != CUDA_SUCCESS) {
      run->dbufs[b] = 0;
      return cu_fail("cuMemAlloc", what, r);
    }
    if (fi->bufs[b].param >= 0)
      r = cu.cuMemcpyHtoD_v2(run->dbufs[b], tdsl_tensor_data(&bufs[b]), n);
    else
      r = cu.cuMemsetD8_v2(run->dbufs[b], 0, n);
    if (r != CUDA_SUCCESS)
      return cu_fail(fi->bufs[b].param >= 0 ? "cuMemcpyHtoD" : "cuMemsetD8", what, r);
  }
  return TDSL_OK;
}

// Launches kernel k (nothing when its grid or block is 0), without waiting for it.
static int launch_async(Run *run, int k) {
  const tdsl_gpu_kernel *kn = &run->p->kernels[k];
  const tdsl_entry_info *fi = run->p->info;
  if (kn->grid < 0 || kn->block < 0 || kn->grid > 0x7fffffff || kn->block > 1024 || kn->shmem < 0 ||
      kn->nargs < 0 || (kn->nargs > 0 && !kn->args))
    return tdsl_set_error("cuda: kernel %s: bad launch (grid %" PRId64 ", block %" PRId64 ", shmem %d)", kn->name,
                          kn->grid, kn->block, kn->shmem),
           TDSL_ERR_GPU;
  if (kn->grid == 0 || kn->block == 0)
    return TDSL_OK;
  CUfunction f;
  CUresult r = cu.cuModuleGetFunction(&f, run->mod, kn->name);
  if (r != CUDA_SUCCESS)
    return cu_fail("cuModuleGetFunction", kn->name, r);
  if (kn->shmem > 48 * 1024 &&
      (r = cu.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, kn->shmem)) != CUDA_SUCCESS)
    return cu_fail("cuFuncSetAttribute", kn->name, r);
  // params[i + 1] points at ptrs[i]: buffer args[i]'s device pointer, moved at[i] elements in
  void **params = malloc(sizeof *params * (size_t)(kn->nargs + 1));
  CUdeviceptr *ptrs = malloc(sizeof *ptrs * (size_t)(kn->nargs + 1));
  if (!params || !ptrs) {
    free(params);
    free(ptrs);
    return tdsl_set_error("cuda: out of memory"), TDSL_ERR_NOMEM;
  }
  params[0] = &run->err;
  for (int i = 0; i < kn->nargs; i++) {
    int b = kn->args[i];
    int64_t at = kn->at ? kn->at[i] : 0;
    if (b < 0 || b >= fi->nbufs || at < 0 || (at > 0 && at >= fi->bufs[b].numel)) {
      free(params);
      free(ptrs);
      if (b < 0 || b >= fi->nbufs)
        tdsl_set_error("cuda: kernel %s: argument %d is buffer %d of %d", kn->name, i, b, fi->nbufs);
      else
        tdsl_set_error("cuda: kernel %s: argument %d starts at element %" PRId64 " of buffer %d (%" PRId64
                       " elements)",
                       kn->name, i, at, b, fi->bufs[b].numel);
      return TDSL_ERR_GPU;
    }
    ptrs[i] = run->dbufs[b] + (CUdeviceptr)at * tdsl_dtype_size(fi->bufs[b].dtype);
    params[i + 1] = &ptrs[i];
  }
  r = cu.cuLaunchKernel(f, (unsigned)kn->grid, 1, 1, (unsigned)kn->block, 1, 1, (unsigned)kn->shmem, NULL, params,
                        NULL);
  free(params);
  free(ptrs);
  if (r != CUDA_SUCCESS)
    return cu_fail("cuLaunchKernel", kn->name, r);
  return TDSL_OK;
}

// Waits for the kernels launched so far; k names the last one (its located messages
// read the error record the first raise wrote).
static int wait_and_check(Run *run, int k) {
  const tdsl_gpu_kernel *kn = &run->p->kernels[k];
  CUresult r;
  if ((r = cu.cuCtxSynchronize()) != CUDA_SUCCESS)
    return cu_fail("cuCtxSynchronize", kn->name, r);
  tdsl_gpu_error rec;
  if ((r = cu.cuMemcpyDtoH_v2(&rec, run->err, sizeof rec)) != CUDA_SUCCESS)
    return cu_fail("cuMemcpyDtoH", "error record", r);
  if (!rec.flag)
    return TDSL_OK;
  if (rec.k < 0 || rec.k >= kn->nerrors || !kn->errors)
    return tdsl_set_error("cuda: kernel %s raised error %d of %d", kn->name, rec.k, kn->nerrors), TDSL_ERR_GPU;
  return tdsl_entry_kernel_error(kn->errors[rec.k], rec.value);
}

// Launches kernel k and waits for it; a raised error becomes its located message.
static int launch(Run *run, int k) {
  const tdsl_gpu_kernel *kn = &run->p->kernels[k];
  int rc = launch_async(run, k);
  if (rc || kn->grid == 0 || kn->block == 0)
    return rc;
  return wait_and_check(run, k);
}

static double host_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

// reps more calls of the kernel sequence, after the checked one: ms[r] is call r's time
// on the device, between events recorded before and after its launches (none waits
// for another), or, without events, on the host around its launches and a synchronize.
// Then one wait and one look at the error record.
static int time_calls(Run *run, int reps, double *ms) {
  int nk = run->p->nkernels, rc = TDSL_OK;
  CUresult r = CUDA_SUCCESS;
  CUevent *ev = NULL;
  int nev = 0;
  if (cu.events && (ev = calloc((size_t)reps + 1, sizeof *ev)) != NULL)
    for (; nev <= reps && (r = cu.cuEventCreate(&ev[nev], 0)) == CUDA_SUCCESS; nev++) {
    }
  if (ev && r != CUDA_SUCCESS)
    rc = cu_fail("cuEventCreate", NULL, r);
  if (ev && !rc && (r = cu.cuEventRecord(ev[0], NULL)) != CUDA_SUCCESS)
    rc = cu_fail("cuEventRecord", NULL, r);
  for (int rep = 0; rep < reps && !rc; rep++) {
    double t0 = host_ms();
    for (int k = 0; k < nk && !rc; k++)
      rc = launch_async(run, k);
    if (!rc && ev && (r = cu.cuEventRecord(ev[rep + 1], NULL)) != CUDA_SUCCESS)
      rc = cu_fail("cuEventRecord", NULL, r);
    if (!rc && !ev) {
      if ((r = cu.cuCtxSynchronize()) != CUDA_SUCCESS)
        rc = cu_fail("cuCtxSynchronize", NULL, r);
      ms[rep] = host_ms() - t0;
    }
  }
  if (!rc && nk > 0)
    rc = wait_and_check(run, nk - 1);
  for (int rep = 0; ev && rep < reps && !rc; rep++) {
    float t = 0;
    if ((r = cu.cuEventElapsedTime(&t, ev[rep], ev[rep + 1])) != CUDA_SUCCESS)
      rc = cu_fail("cuEventElapsedTime", NULL, r);
    ms[rep] = t;
  }
  for (int i = 0; i < nev; i++)
    cu.cuEventDestroy_v2(ev[i]);
  free(ev);
  return rc;
}

// Results (buffers an output views) and 'mut' parameters back into the host buffers.
static int download(Run *run, tdsl_tensor *bufs) {
  const tdsl_entry_info *fi = run->p->info;
  for (int b = 0; b < fi->nbufs; b++) {
    bool back = false;
    int param = fi->bufs[b].param;
    if (param >= 0)
      back = param < fi->nparams && fi->params[param].mut;
    for (int k = 0; k < fi->noutputs && !back; k++)
      back = fi->outputs[k].buf == b;
    if (!back || run->nbytes[b] == 0)
      continue;
    CUresult r = cu.cuMemcpyDtoH_v2(tdsl_tensor_data(&bufs[b]), run->dbufs[b], run->nbytes[b]);
    if (r != CUDA_SUCCESS) {
      char what[32];
      snprintf(what, sizeof what, "b%d", b);
      return cu_fail("cuMemcpyDtoH", what, r);
    }
  }
  return TDSL_OK;
}

// Frees what the run holds; errors here cannot change the outcome and are not reported.
static void run_free(Run *run, int nbufs) {
  for (int b = 0; run->dbufs && b < nbufs; b++)
    if (run->dbufs[b])
      cu.cuMemFree_v2(run->dbufs[b]);
  if (run->err)
    cu.cuMemFree_v2(run->err);
  if (run->mod)
    cu.cuModuleUnload(run->mod);
  free(run->dbufs);
  free(run->nbytes);
  free(run->ptx);
}

// tdsl_gpu_run, and with reps > 0 tdsl_gpu_bench's timed calls after the checked one.
static int gpu_call(const tdsl_gpu_program *p, const tdsl_tensor *const *args, tdsl_tensor *const *outs, int reps,
                    double *ms) {
  const tdsl_entry_info *fi = p->info;
  if (!tdsl_gpu_available()) {
    for (int k = 0; k < fi->noutputs; k++)
      if (outs[k])
        memset(outs[k], 0, sizeof *outs[k]);
    return TDSL_ERR_GPU;
  }
  tdsl_tensor *bufs = calloc((size_t)(fi->nbufs ? fi->nbufs : 1), sizeof *bufs);
  Run run = {.p = p};
  run.dbufs = calloc((size_t)(fi->nbufs ? fi->nbufs : 1), sizeof *run.dbufs);
  run.nbytes = calloc((size_t)(fi->nbufs ? fi->nbufs : 1), sizeof *run.nbytes);
  if (!bufs || !run.dbufs || !run.nbytes) {
    free(bufs);
    run_free(&run, 0);
    for (int k = 0; k < fi->noutputs; k++)
      if (outs[k])
        memset(outs[k], 0, sizeof *outs[k]);
    return tdsl_set_error("%s: out of memory", fi->name), TDSL_ERR_NOMEM;
  }
  int rc = tdsl_entry_begin(fi, args, outs, bufs);
  if (rc != TDSL_OK) {  // begin released what it made
    free(bufs);
    run_free(&run, 0);
    return rc;
  }
  CUresult r = cu.cuCtxSetCurrent(cu_ctx);
  if (r != CUDA_SUCCESS)
    rc = cu_fail("cuCtxSetCurrent", NULL, r);
  // A function of views only has no kernels: no image to compile or load.
  if (!rc && p->nkernels > 0 && p->kind == TDSL_GPU_CUDA_C)
    rc = compile_cuda_c(&run);
  if (!rc && p->nkernels > 0)
    rc = load_module(&run, p->kind == TDSL_GPU_CUDA_C ? run.ptx : p->image);
  if (!rc)
    rc = upload(&run, bufs);
  for (int k = 0; k < p->nkernels && !rc; k++)
    rc = launch(&run, k);
  if (!rc && reps > 0)
    rc = time_calls(&run, reps, ms);
  if (!rc)
    rc = download(&run, bufs);
  run_free(&run, fi->nbufs);
  rc = tdsl_entry_end(fi, args, outs, bufs, rc);
  free(bufs);
  return rc;
}

int tdsl_gpu_run(const tdsl_gpu_program *p, const tdsl_tensor *const *args, tdsl_tensor *const *outs) {
  return gpu_call(p, args, outs, 0, NULL);
}

int tdsl_gpu_bench(const tdsl_gpu_program *p, const tdsl_tensor *const *args, int reps, double *ms) {
  if (reps < 1 || !ms)
    return tdsl_set_error("tdsl_gpu_bench: %d calls", reps), TDSL_ERR_GPU;
  int no = p->info->noutputs;
  tdsl_tensor *outs = calloc((size_t)(no ? no : 1), sizeof *outs);
  tdsl_tensor **outp = calloc((size_t)(no ? no : 1), sizeof *outp);
  if (!outs || !outp) {
    free(outs);
    free(outp);
    return tdsl_set_error("%s: out of memory", p->info->name), TDSL_ERR_NOMEM;
  }
  for (int k = 0; k < no; k++)
    outp[k] = &outs[k];
  int rc = gpu_call(p, args, outp, reps, ms);
  for (int k = 0; k < no; k++)
    tdsl_tensor_release(&outs[k]);
  free(outs);
  free(outp);
  return rc;
}
