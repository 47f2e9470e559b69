// ir/cpu.c: the CPU a program's schedules are made for (cpu_target). The host is read
// from cpuid (the compiler's __builtin_cpu_supports) and its cache sizes from sysconf;
// a named CPU (--cpu, LLVM's names) is placed in its family by name. Only the numbers
// the schedules use are kept: the vector width, the register count, FMA, L1d and L2.
#define _GNU_SOURCE  // sysconf's cache-size names
#include <string.h>
#include <unistd.h>

#include "ir/loop.h"

static const int64_t DEFAULT_L1D = 32 << 10, DEFAULT_L2 = 512 << 10;

// LLVM's x86 CPU names by family (a prefix match: "icelake" covers -client and -server).
static const char *const AVX512_CPUS[] = {"skylake-avx512", "cascadelake", "cooperlake", "cannonlake", "icelake",
                                          "tigerlake",      "rocketlake",  "sapphirerapids", "znver4", "x86-64-v4",
                                          "knl",            "knm"};
static const char *const AVX2_CPUS[] = {"haswell", "broadwell", "skylake", "alderlake", "raptorlake", "meteorlake",
                                        "znver1",  "znver2",    "znver3",  "x86-64-v3", "core-avx2",  "bdver4"};

static bool in_family(const char *cpu, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (strncmp(cpu, names[i], strlen(names[i])) == 0)
      return true;
  return false;
}

static int64_t cache_bytes(int name, int64_t dflt) {
  long v = sysconf(name);
  return v > 0 ? (int64_t)v : dflt;
}

CpuTarget cpu_target(const char *cpu) {
  CpuTarget t = {.name = "host", .vec_bytes = 16, .nregs = 16, .fma = false, .l1d = DEFAULT_L1D, .l2 = DEFAULT_L2};
  if (!cpu || strcmp(cpu, "host") == 0) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
      t.vec_bytes = 64, t.nregs = 32;
    else if (__builtin_cpu_supports("avx2"))
      t.vec_bytes = 32;
    t.fma = __builtin_cpu_supports("fma");
#endif
    t.l1d = cache_bytes(_SC_LEVEL1_DCACHE_SIZE, DEFAULT_L1D);
    t.l2 = cache_bytes(_SC_LEVEL2_CACHE_SIZE, DEFAULT_L2);
    return t;
  }
  t.name = cpu;
  if (in_family(cpu, AVX512_CPUS, (int)(sizeof AVX512_CPUS / sizeof *AVX512_CPUS)))
    t.vec_bytes = 64, t.nregs = 32, t.fma = true, t.l2 = 1 << 20;
  else if (in_family(cpu, AVX2_CPUS, (int)(sizeof AVX2_CPUS / sizeof *AVX2_CPUS)))
    t.vec_bytes = 32, t.fma = true;
  return t;
}
