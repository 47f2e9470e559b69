// codegen/target_names.c: the values --cpu and --gpu-arch accept, checked by the driver
// before any stage uses them.
//
// CPUs. LLVM 14's C API has no call that lists a target's processors (that is
// MCSubtargetInfo, C++), and a name it does not know is only a warning printed on
// stderr, after which x86-64 code for a CPU without 64-bit mode ends in LLVM's
// report_fatal_error. So the names are kept here: exactly the processors of
// `llc-14 -march=x86-64 -mcpu=help` that compile x86-64 code (llc-14 refuses the other
// 29 with "64-bit code requested on a subtarget that doesn't support it"), and those 29
// apart, to say why they are refused. tests/run/test_cli.py checks both lists against
// llc-14 itself, so a different LLVM cannot drift from them unseen. "host" is the host
// CPU (the default). A host other than x86-64 has no list here: its names go to LLVM as
// given, and codegen/llvm_fatal.c turns a fatal error into an internal error.
//
// GPUs. --gpu-arch names one of NVIDIA's architectures from sm_30 (the oldest that
// LLVM 14's PTX ISA 7.2 takes) to sm_121 (the newest CUDA 13 knows), with an 'a' suffix
// (architecture-specific features, sm_90 and newer) or an 'f' suffix (family-specific,
// sm_100 and newer) as NVIDIA defines them. PTX for a GPU newer than sm_86 is sm_86 PTX
// (codegen/ptx.c); NVRTC and nvcc of CUDA 13 compile for sm_75 and newer.
#include "codegen/target_names.h"

#include <stdlib.h>
#include <string.h>

// LLVM 14's x86 processors that run 64-bit code, sorted as llc-14 lists them.
static const char *const CPUS_X86_64[] = {
    "alderlake",     "amdfam10",       "athlon-fx",      "athlon64",   "athlon64-sse3", "atom",        "barcelona",
    "bdver1",        "bdver2",         "bdver3",         "bdver4",     "bonnell",       "broadwell",   "btver1",
    "btver2",        "cannonlake",     "cascadelake",    "cooperlake", "core-avx-i",    "core-avx2",   "core2",
    "corei7",        "corei7-avx",     "generic",        "goldmont",   "goldmont-plus", "haswell",     "icelake-client",
    "icelake-server", "ivybridge",     "k8",             "k8-sse3",    "knl",           "knm",         "nehalem",
    "nocona",        "opteron",        "opteron-sse3",   "penryn",     "rocketlake",    "sandybridge", "sapphirerapids",
    "silvermont",    "skx",            "skylake",        "skylake-avx512", "slm",       "tigerlake",   "tremont",
    "westmere",      "x86-64",         "x86-64-v2",      "x86-64-v3",  "x86-64-v4",     "znver1",      "znver2",
    "znver3",
};
// LLVM 14's x86 processors without 64-bit mode.
static const char *const CPUS_X86_32[] = {
    "athlon",   "athlon-4", "athlon-mp", "athlon-tbird", "athlon-xp", "c3",        "c3-2",       "geode",
    "i386",     "i486",     "i586",      "i686",         "k6",        "k6-2",      "k6-3",       "lakemont",
    "pentium",  "pentium-m", "pentium-mmx", "pentium2",  "pentium3",  "pentium3m", "pentium4",   "pentium4m",
    "pentiumpro", "prescott", "winchip-c6", "winchip2",  "yonah",
};
enum { NCPUS = sizeof CPUS_X86_64 / sizeof *CPUS_X86_64, NCPUS32 = sizeof CPUS_X86_32 / sizeof *CPUS_X86_32 };
_Static_assert(NCPUS == 57 && NCPUS32 == 29, "llc-14 -march=x86-64 -mcpu=help lists 86 processors");

#if defined(__x86_64__)
static const bool HAVE_LIST = true;
#else
static const bool HAVE_LIST = false;
#endif

static bool in(const char *name, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (strcmp(name, names[i]) == 0)
      return true;
  return false;
}

const char *target_names_cpu_arch(void) { return HAVE_LIST ? "x86-64" : NULL; }

bool target_names_cpu_known(const char *name) {
  if (!name || !*name)
    return false;
  return strcmp(name, "host") == 0 || !HAVE_LIST || in(name, CPUS_X86_64, NCPUS);
}

const char *target_names_cpu_why(const char *name) {
  if (!name || !*name)
    return "an empty CPU name";
  if (HAVE_LIST && in(name, CPUS_X86_32, NCPUS32))
    return "a 32-bit CPU: it cannot run x86-64 code";
  return "not a CPU LLVM 14 knows for x86-64";
}

// Levenshtein distance, capped at 255 (names are short).
static int distance(const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  if (na > 64 || nb > 64)
    return 255;
  int row[65];
  for (size_t j = 0; j <= nb; j++)
    row[j] = (int)j;
  for (size_t i = 1; i <= na; i++) {
    int diag = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= nb; j++) {
      int up = row[j];
      int best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best)
        best = up + 1;
      if (row[j - 1] + 1 < best)
        best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[nb];
}

const char *target_names_cpu_nearest(const char *name) {
  if (!HAVE_LIST || !name || !*name)
    return NULL;
  const char *best = NULL;
  int bd = (int)strlen(name) / 3 + 1;  // a typo or two, not another word
  if (bd > 3)
    bd = 3;
  for (int i = 0; i < NCPUS; i++) {
    int d = distance(name, CPUS_X86_64[i]);
    if (d <= bd && (!best || d < distance(name, best)))
      best = CPUS_X86_64[i];
  }
  return best;
}

// Words in lines of at most width columns, each line after indent.
static void print_words(FILE *out, const char *indent, int width, const char *const *words, int n) {
  int col = 0;
  for (int i = 0; i < n; i++) {
    int len = (int)strlen(words[i]);
    if (col && col + 1 + len > width) {
      fputc('\n', out);
      col = 0;
    }
    col += col ? fprintf(out, " %s", words[i]) : fprintf(out, "%s%s", indent, words[i]);
  }
  if (col)
    fputc('\n', out);
}

void target_names_print_cpus(FILE *out, const char *indent, int width) {
  static const char *const host[] = {"host"};
  if (!HAVE_LIST) {
    print_words(out, indent, width, host, 1);
    return;
  }
  const char *all[NCPUS + 1] = {"host"};
  for (int i = 0; i < NCPUS; i++)
    all[i + 1] = CPUS_X86_64[i];
  print_words(out, indent, width, all, NCPUS + 1);
}

// NVIDIA's architectures, oldest first; 'a' from sm_90, 'f' from sm_100.
static const int GPUS[] = {30, 32, 35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 88, 89, 90, 100, 101, 103,
                           110, 120, 121};
enum { NGPUS = sizeof GPUS / sizeof *GPUS, SUFFIX_A_FROM = 90, SUFFIX_F_FROM = 100 };

bool target_names_gpu_known(const char *arch) {
  if (!arch || strncmp(arch, "sm_", 3) != 0)
    return false;
  const char *d = arch + 3;
  int n = 0, nd = 0;
  while (d[nd] >= '0' && d[nd] <= '9' && nd < 4)
    n = n * 10 + (d[nd++] - '0');
  if (nd == 0 || d[0] == '0')
    return false;
  char suffix = d[nd];
  if (suffix && (d[nd + 1] || (suffix != 'a' && suffix != 'f')))
    return false;
  if ((suffix == 'a' && n < SUFFIX_A_FROM) || (suffix == 'f' && n < SUFFIX_F_FROM))
    return false;
  for (int i = 0; i < NGPUS; i++)
    if (GPUS[i] == n)
      return true;
  return false;
}

void target_names_print_gpus(FILE *out, const char *indent, int width) {
  const char *words[NGPUS];
  char text[NGPUS][16];
  for (int i = 0; i < NGPUS; i++) {
    snprintf(text[i], sizeof text[i], "sm_%d", GPUS[i]);
    words[i] = text[i];
  }
  print_words(out, indent, width, words, NGPUS);
}
