// ir/cpu.c: the CPU a program's schedules are made for (cpu_target). The host is read
// from cpuid (the compiler's __builtin_cpu_supports) and its cache sizes from sysconf;
// a named CPU (--cpu, LLVM's names) is placed in its family by name. Only the numbers
// the schedules use are kept: the vector width, the register count, FMA, L1d, L2, the
// last-level cache (ir/sched.c's streaming stores follow it), and TDSL_STREAM_MIN.
#define _GNU_SOURCE  // sysconf's cache-size names
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/loop.h"

static const int64_t DEFAULT_L1D = 32 << 10, DEFAULT_L2 = 512 << 10, DEFAULT_LLC = 32 << 20;

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

// The last-level cache's bytes as Linux's sysfs describes cpu0's caches (the highest
// level listed), else sysconf's L3, else dflt. sysfs first: in a VM glibc's sysconf may
// read the host's whole L3 from cpuid (320 MiB on this 2-core VM, where sysfs and lscpu
// say 32 MiB, and where plain stores slow down past 32 MiB as a 32 MiB cache predicts).
static int64_t llc_bytes(int64_t dflt) {
  int best_level = 0;
  int64_t best = 0;
  for (int i = 0; i < 8; i++) {
    char path[96], buf[32];
    int level = 0;
    long long size = 0;
    char unit = 0;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
    FILE *f = fopen(path, "r");
    if (!f)
      continue;
    bool ok = fgets(buf, sizeof buf, f) && sscanf(buf, "%d", &level) == 1;
    fclose(f);
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
    if (!ok || !(f = fopen(path, "r")))
      continue;
    ok = fgets(buf, sizeof buf, f) && sscanf(buf, "%lld%c", &size, &unit) >= 1;
    fclose(f);
    int64_t bytes = size * (unit == 'K' ? 1 << 10 : unit == 'M' ? 1 << 20 : unit == 'G' ? 1 << 30 : 1);
    if (ok && size > 0 && size < (1LL << 40) && level > best_level)
      best_level = level, best = bytes;
  }
  return best > 0 ? best : cache_bytes(_SC_LEVEL3_CACHE_SIZE, dflt);
}

// TDSL_STREAM_MIN=BYTES (a whole number >= 1): results from that size on are streamed,
// whatever the caches (the tests' small streamed results); else 0.
static CpuTarget with_stream_min(CpuTarget t) {
  t.stream_min = 0;
  const char *env = getenv("TDSL_STREAM_MIN");
  if (env && *env) {
    char *end;
    long long v = strtoll(env, &end, 10);
    if (*end == '\0' && v >= 1)
      t.stream_min = v;
  }
  return t;
}

CpuTarget cpu_target(const char *cpu) {
  CpuTarget t = {.name = "host", .vec_bytes = 16, .nregs = 16, .fma = false, .l1d = DEFAULT_L1D, .l2 = DEFAULT_L2,
                 .llc = DEFAULT_LLC};
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
    t.llc = llc_bytes(t.l2 > DEFAULT_LLC ? t.l2 : DEFAULT_LLC);
    return with_stream_min(t);
  }
  t.name = cpu;
  if (in_family(cpu, AVX512_CPUS, (int)(sizeof AVX512_CPUS / sizeof *AVX512_CPUS)))
    t.vec_bytes = 64, t.nregs = 32, t.fma = true, t.l2 = 1 << 20;
  else if (in_family(cpu, AVX2_CPUS, (int)(sizeof AVX2_CPUS / sizeof *AVX2_CPUS)))
    t.vec_bytes = 32, t.fma = true;
  return with_stream_min(t);
}
