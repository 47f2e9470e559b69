// tests/unit/fake_libcuda.c: a stand-in for the CUDA driver (libcuda.so.1) on the
// host, so test_cuda_rt.c can check runtime/cuda.c's runner on a machine with no GPU.
// test_cuda_rt builds it with cc into a temp folder as libcuda.so.1 and runs itself
// again with LD_LIBRARY_PATH pointing there. "Device" memory is malloc'ed and every
// pointer is checked against the live allocations; a module is its image text, and a
// kernel exists when the image holds ".entry NAME" and this file emulates NAME on the
// host, one call per thread. fake_cuda_fail() makes the nth next call of a function
// fail; fake_cuda_live() counts allocations and modules not yet freed, and
// fake_cuda_last_image() gives the text of the image last loaded. Events record how
// many kernels were launched before them, so a timed call lasts 1 ms per launch.
// By hand, with `tdslc run --target cuda` (LD_LIBRARY_PATH=DIR), two variables check
// generated images without a GPU: FAKE_CUDA_PTXAS=/usr/local/cuda/bin/ptxas assembles
// each image for sm_90 (a failure is CUDA_ERROR_INVALID_PTX with ptxas's log), and
// FAKE_CUDA_NOOP=1 makes every kernel the fake does not know a no-op (the results are
// then wrong, but names, launches and the rest of the run are exercised).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

// ---- failure injection and bookkeeping ----
static char fail_fn[64];
static int fail_nth, fail_code;

void fake_cuda_fail(const char *fn, int nth, int code) {
  snprintf(fail_fn, sizeof fail_fn, "%s", fn ? fn : "");
  fail_nth = nth;
  fail_code = code;
}

static int injected(const char *fn) {
  if (fail_nth <= 0 || strcmp(fn, fail_fn) != 0)
    return 0;
  if (--fail_nth > 0)
    return 0;
  return fail_code;
}
#define INJECT(fn)                 \
  do {                             \
    int code_ = injected(#fn);     \
    if (code_)                     \
      return code_;                \
  } while (0)

enum { MAX_LIVE = 4096 };
static struct {
  char *p;
  size_t n;
} live[MAX_LIVE];
static int nmodules, nevents, bad_calls;
static long launches;  // kernels launched so far: the fake's clock, 1 ms each

int fake_cuda_live(void) {
  int n = nmodules + nevents;
  for (int i = 0; i < MAX_LIVE; i++)
    n += live[i].p != NULL;
  return n;
}
int fake_cuda_bad_calls(void) { return bad_calls; }  // frees or copies of unknown memory

// [p, p + n) inside one live allocation?
static int valid(CUdeviceptr d, size_t n) {
  char *p = (char *)(uintptr_t)d;
  for (int i = 0; i < MAX_LIVE; i++)
    if (live[i].p && p >= live[i].p && p + n <= live[i].p + live[i].n)
      return 1;
  bad_calls++;
  return 0;
}

// ---- the driver API ----
CUresult cuInit(unsigned flags) {
  (void)flags;
  return 0;
}
CUresult cuDeviceGetCount(int *n) {
  *n = 1;
  return 0;
}
CUresult cuDeviceGet(int *d, int ordinal) {
  *d = ordinal;
  return 0;
}
CUresult cuDeviceGetAttribute(int *v, int attr, int d) {
  (void)d;
  *v = attr == 75 ? 9 : 0;  // compute capability 9.0
  return 0;
}
static int the_ctx;
CUresult cuDevicePrimaryCtxRetain(void **c, int d) {
  (void)d;
  *c = &the_ctx;
  return 0;
}
CUresult cuCtxSetCurrent(void *c) {
  INJECT(cuCtxSetCurrent);
  return c == &the_ctx ? 0 : 201;
}
CUresult cuCtxSynchronize(void) {
  INJECT(cuCtxSynchronize);
  return 0;
}
CUresult cuMemAlloc_v2(CUdeviceptr *d, size_t n) {
  INJECT(cuMemAlloc_v2);
  if (n == 0)
    return 1;  // CUDA_ERROR_INVALID_VALUE, as the real driver
  for (int i = 0; i < MAX_LIVE; i++) {
    if (!live[i].p) {
      live[i].p = malloc(n);
      memset(live[i].p, 0xA5, n);  // device memory is not zeroed
      live[i].n = n;
      *d = (CUdeviceptr)(uintptr_t)live[i].p;
      return 0;
    }
  }
  return 2;
}
CUresult cuMemFree_v2(CUdeviceptr d) {
  for (int i = 0; i < MAX_LIVE; i++) {
    if (live[i].p && (CUdeviceptr)(uintptr_t)live[i].p == d) {
      free(live[i].p);
      live[i].p = NULL;
      return 0;
    }
  }
  bad_calls++;
  return 1;
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
  INJECT(cuMemcpyHtoD_v2);
  if (!valid(dst, n))
    return 1;
  memcpy((void *)(uintptr_t)dst, src, n);
  return 0;
}
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
  INJECT(cuMemcpyDtoH_v2);
  if (!valid(src, n))
    return 1;
  memcpy(dst, (void *)(uintptr_t)src, n);
  return 0;
}
CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) {
  INJECT(cuMemsetD8_v2);
  if (!valid(d, n))
    return 1;
  memset((void *)(uintptr_t)d, v, n);
  return 0;
}

typedef struct Module {
  char *text;
} Module;
static char last_image[1 << 16];
const char *fake_cuda_last_image(void) { return last_image; }  // the image last loaded

// The JIT's error log, as cuModuleLoadDataEx hands it back.
static void set_log(unsigned n, int *opts, void **vals, const char *text) {
  size_t size = 0;
  for (unsigned i = 0; i < n; i++)
    if (opts[i] == 6)
      size = (size_t)(uintptr_t)vals[i];
  for (unsigned i = 0; i < n && size; i++)
    if (opts[i] == 5)
      snprintf(vals[i], size, "%s", text);
}

// FAKE_CUDA_PTXAS: 0 when ptxas assembles image for sm_90, else 218 with its log.
static CUresult assemble(const char *ptxas, const char *image, unsigned n, int *opts, void **vals) {
  char path[] = "/tmp/fake-cuda-XXXXXX", cmd[4096], log[4096] = "";
  int fd = mkstemp(path);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f)
    return 2;
  fputs(image, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "%s -arch=sm_90 -o /dev/null %s 2>&1", ptxas, path);
  FILE *pp = popen(cmd, "r");
  size_t got = pp ? fread(log, 1, sizeof log - 1, pp) : 0;
  log[got] = 0;
  int st = pp ? pclose(pp) : -1;
  unlink(path);
  if (st == 0)
    return 0;
  set_log(n, opts, vals, log);
  return 218;
}

CUresult cuModuleLoadDataEx(Module **m, const void *image, unsigned n, int *opts, void **vals) {
  INJECT(cuModuleLoadDataEx);
  if (strstr(image, "BAD")) {  // what the JIT says of PTX that does not assemble
    set_log(n, opts, vals, "ptxas fatal   : Unexpected instruction 'BAD'");
    return 218;  // CUDA_ERROR_INVALID_PTX
  }
  const char *ptxas = getenv("FAKE_CUDA_PTXAS");
  if (ptxas && *ptxas) {
    CUresult r = assemble(ptxas, image, n, opts, vals);
    if (r)
      return r;
  }
  snprintf(last_image, sizeof last_image, "%s", (const char *)image);
  *m = malloc(sizeof **m);
  (*m)->text = strdup(image);
  nmodules++;
  return 0;
}
CUresult cuModuleUnload(Module *m) {
  free(m->text);
  free(m);
  nmodules--;
  return 0;
}

// ---- kernels, emulated: (thread index, kernel parameters as cuLaunchKernel got them) ----
typedef struct ErrRec {
  int flag, k;
  long long value;
} ErrRec;
#define PARAM(T, i) (*(T *)params[i])

static void add1(long i, void **params) {  // (err, const float *x, float *y): y = x + 1
  PARAM(float *, 2)[i] = PARAM(float *, 1)[i] + 1.0f;
}
static void twice(long i, void **params) {  // (err, float *x): x *= 2
  PARAM(float *, 1)[i] *= 2.0f;
}
static void check_neg(long i, void **params) {  // (err, const float *x): raise 0 at x < 0
  ErrRec *e = PARAM(ErrRec *, 0);
  if (PARAM(float *, 1)[i] < 0 && !e->flag) {
    e->flag = 1;
    e->k = 0;
    e->value = i;
  }
}
static void raise_k7(long i, void **params) {  // an error index the program does not have
  ErrRec *e = PARAM(ErrRec *, 0);
  if (i == 0)
    *e = (ErrRec){1, 7, 0};
}

static const struct {
  const char *name;
  void (*fn)(long i, void **params);
} kernels[] = {{"add1", add1}, {"twice", twice}, {"check_neg", check_neg}, {"raise_k7", raise_k7}};

typedef struct Func {
  void (*fn)(long i, void **params);
} Func;
static Func funcs[sizeof kernels / sizeof *kernels];

CUresult cuModuleGetFunction(Func **f, Module *m, const char *name) {
  INJECT(cuModuleGetFunction);
  char entry[256];
  snprintf(entry, sizeof entry, ".entry %s(", name);
  for (size_t k = 0; k < sizeof kernels / sizeof *kernels; k++) {
    if (strcmp(kernels[k].name, name) == 0 && strstr(m->text, entry)) {
      funcs[k].fn = kernels[k].fn;
      *f = &funcs[k];
      return 0;
    }
  }
  static Func noop = {NULL};
  const char *any = getenv("FAKE_CUDA_NOOP");
  if (any && *any == '1' && strstr(m->text, entry)) {
    *f = &noop;
    return 0;
  }
  return 500;  // CUDA_ERROR_NOT_FOUND
}
CUresult cuFuncSetAttribute(Func *f, int attr, int v) {
  (void)f, (void)attr, (void)v;
  return 0;
}
CUresult cuLaunchKernel(Func *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shmem, void *stream, void **params, void **extra) {
  INJECT(cuLaunchKernel);
  (void)shmem, (void)stream, (void)extra;
  if (gx == 0 || bx == 0 || gy != 1 || gz != 1 || by != 1 || bz != 1 || bx > 1024)
    return 1;
  if (!valid((CUdeviceptr)(uintptr_t)PARAM(void *, 0), sizeof(ErrRec)))
    return 700;  // CUDA_ERROR_ILLEGAL_ADDRESS
  for (long i = 0; f->fn && i < (long)gx * (long)bx; i++)
    f->fn(i, params);
  launches++;
  return 0;
}

// ---- events: an event records the clock above, so a call's time is its launches ----
typedef struct Event {
  long at;  // launches at the record; -1 before one
} Event;
CUresult cuEventCreate(Event **e, unsigned flags) {
  INJECT(cuEventCreate);
  (void)flags;
  *e = malloc(sizeof **e);
  (*e)->at = -1;
  nevents++;
  return 0;
}
CUresult cuEventRecord(Event *e, void *stream) {
  INJECT(cuEventRecord);
  (void)stream;
  e->at = launches;
  return 0;
}
CUresult cuEventSynchronize(Event *e) {
  (void)e;
  return 0;
}
CUresult cuEventElapsedTime(float *ms, Event *from, Event *to) {
  INJECT(cuEventElapsedTime);
  if (from->at < 0 || to->at < 0)
    return 600;  // CUDA_ERROR_NOT_READY: an event never recorded
  *ms = (float)(to->at - from->at);
  return 0;
}
CUresult cuEventDestroy_v2(Event *e) {
  free(e);
  nevents--;
  return 0;
}

// NVRTC opens libcuda.so.1 too and asks it for this (an undocumented table): no.
CUresult cuGetExportTable(const void **table, const void *id) {
  (void)id;
  *table = NULL;
  return 500;
}

CUresult cuGetErrorString(CUresult r, const char **s) {
  switch (r) {
  case 1: *s = "invalid argument"; return 0;
  case 2: *s = "out of memory"; return 0;
  case 218: *s = "a PTX JIT compilation failed"; return 0;
  case 500: *s = "named symbol not found"; return 0;
  case 700: *s = "an illegal memory access was encountered"; return 0;
  case 719: *s = "unspecified launch failure"; return 0;
  default: *s = NULL; return 1;
  }
}
