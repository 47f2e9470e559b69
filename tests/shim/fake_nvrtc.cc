// tests/shim/fake_nvrtc.cc: libnvrtc.so over the CUDA shim. nvrtcCompileProgram hands
// the CUDA C to `shimcc.py module SRC OUT` (the command is TDSL_SHIM_CC, fixed when
// this library is built), which compiles it with the host's C++ compiler into a
// shared object; the "PTX" is then the line `// tdsl-shim module OUT`, which
// fake_cuda.cc's cuModuleLoadDataEx loads. A compile error is NVRTC's
// NVRTC_ERROR_COMPILATION with the compiler's messages as the log. Modules live in a
// folder of their own under $TMPDIR, removed at exit.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef TDSL_SHIM_CC
#error "build with -DTDSL_SHIM_CC='\"python3 .../shimcc.py\"'"
#endif

#define EXPORT extern "C" __attribute__((visibility("default")))

typedef int nvrtcResult;
enum { NVRTC_SUCCESS = 0, NVRTC_ERROR_OUT_OF_MEMORY = 1, NVRTC_ERROR_INVALID_INPUT = 3, NVRTC_ERROR_COMPILATION = 6 };

struct Program {
  char *src;
  char *ptx;
  char *log;
};

static char dir[4096];
static int nprog;

static void cleanup(void) {
  if (!dir[0])
    return;
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "fake nvrtc: cannot remove %s\n", dir);
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return strdup("");
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = (char *)malloc((size_t)n + 1);
  size_t got = fread(s, 1, (size_t)n, f);
  s[got] = 0;
  fclose(f);
  return s;
}

EXPORT nvrtcResult nvrtcCreateProgram(Program **p, const char *src, const char *name, int nheaders,
                                      const char *const *headers, const char *const *names) {
  (void)name, (void)headers, (void)names;
  if (!src || nheaders != 0)
    return NVRTC_ERROR_INVALID_INPUT;
  *p = (Program *)calloc(1, sizeof **p);
  (*p)->src = strdup(src);
  return NVRTC_SUCCESS;
}

EXPORT nvrtcResult nvrtcCompileProgram(Program *p, int nopts, const char *const *opts) {
  (void)nopts, (void)opts;
  if (!dir[0]) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/tdsl-shim-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
      dir[0] = 0;
      return NVRTC_ERROR_OUT_OF_MEMORY;
    }
    atexit(cleanup);
  }
  char src[4200], so[4200], log[4200], cmd[16384];
  int id = nprog++;
  snprintf(src, sizeof src, "%s/m%d.cu", dir, id);
  snprintf(so, sizeof so, "%s/m%d.so", dir, id);
  snprintf(log, sizeof log, "%s/m%d.log", dir, id);
  FILE *f = fopen(src, "wb");
  if (!f || fputs(p->src, f) < 0 || fclose(f) != 0)
    return NVRTC_ERROR_OUT_OF_MEMORY;
  snprintf(cmd, sizeof cmd, "%s module '%s' '%s' >'%s' 2>&1", TDSL_SHIM_CC, src, so, log);
  int rc = system(cmd);
  free(p->log);
  p->log = read_file(log);
  if (rc != 0)
    return NVRTC_ERROR_COMPILATION;
  size_t n = strlen(so) + 64;
  p->ptx = (char *)malloc(n);
  snprintf(p->ptx, n, "// tdsl-shim module %s\n", so);
  return NVRTC_SUCCESS;
}

EXPORT nvrtcResult nvrtcGetPTXSize(Program *p, size_t *n) {
  if (!p->ptx)
    return NVRTC_ERROR_INVALID_INPUT;
  *n = strlen(p->ptx) + 1;
  return NVRTC_SUCCESS;
}
EXPORT nvrtcResult nvrtcGetPTX(Program *p, char *out) {
  if (!p->ptx)
    return NVRTC_ERROR_INVALID_INPUT;
  strcpy(out, p->ptx);
  return NVRTC_SUCCESS;
}
EXPORT nvrtcResult nvrtcGetProgramLogSize(Program *p, size_t *n) {
  *n = (p->log ? strlen(p->log) : 0) + 1;
  return NVRTC_SUCCESS;
}
EXPORT nvrtcResult nvrtcGetProgramLog(Program *p, char *out) {
  strcpy(out, p->log ? p->log : "");
  return NVRTC_SUCCESS;
}
EXPORT nvrtcResult nvrtcDestroyProgram(Program **p) {
  if (*p) {
    free((*p)->src);
    free((*p)->ptx);
    free((*p)->log);
    free(*p);
    *p = NULL;
  }
  return NVRTC_SUCCESS;
}
EXPORT const char *nvrtcGetErrorString(nvrtcResult r) {
  switch (r) {
  case NVRTC_SUCCESS: return "NVRTC_SUCCESS";
  case NVRTC_ERROR_OUT_OF_MEMORY: return "NVRTC_ERROR_OUT_OF_MEMORY";
  case NVRTC_ERROR_INVALID_INPUT: return "NVRTC_ERROR_INVALID_INPUT";
  case NVRTC_ERROR_COMPILATION: return "NVRTC_ERROR_COMPILATION (the CUDA shim's host compile)";
  default: return "NVRTC_ERROR";
  }
}
