// ir/cpu.c: the CPU a program's schedules are made for (cpu_target). The host is read
// from cpuid (the compiler's __builtin_cpu_supports) and its cache sizes from sysfs and
// sysconf; a named CPU (--cpu, LLVM's names) is placed in its family by name. Only the
// numbers the schedules use are kept: the vector width, the register count, FMA, L1d, L2,
// the last-level cache (bounded per CPU: cpu_usable_llc; ir/sched.c's streaming stores,
// driver/roofline.c's copy and driver/profile.c's "past the caches" all read it), and
// TDSL_STREAM_MIN.
#define _GNU_SOURCE  // sysconf's cache-size names
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

// The start of file `name` under folder dir (at most n - 1 bytes, NUL-terminated) into
// buf; false where it cannot be read.
static bool read_line(int dir, const char *name, char *buf, size_t n) {
  int fd = openat(dir, name, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  ssize_t got = read(fd, buf, n - 1);
  close(fd);
  if (got <= 0)
    return false;
  buf[got] = '\0';
  return true;
}

// The last-level cache's bytes as Linux's sysfs describes cpu0's caches (the highest
// level listed), else sysconf's L3, else dflt. sysfs first: in a VM glibc's sysconf may
// read the host's whole L3 from cpuid (320 MiB on this 2-core VM, where sysfs and lscpu
// say 32 MiB, and where plain stores slow down past 32 MiB as a 32 MiB cache predicts).
// Each sysfs open costs a path walk (5-15 us here, most of cpu_target's time): the
// folder is opened once and its files by relative name; every leaf's level is read, then
// only the size of the highest level's (the next highest's where that size is
// unreadable); the leaves end at the first missing folder (Linux's cacheinfo lists
// index0 .. index<N-1> for cpu0's N leaves): 7 opens and a stat here where reading
// every leaf's level and size from index0 to index7 took 12 opens.
enum { MAX_LEAVES = 8 };
static int64_t llc_bytes(int64_t dflt) {
  int dir = open("/sys/devices/system/cpu/cpu0/cache", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int level[MAX_LEAVES], nleaves = 0;
  char name[32], buf[32];
  for (; dir >= 0 && nleaves < MAX_LEAVES; nleaves++) {
    snprintf(name, sizeof name, "index%d/level", nleaves);
    if (read_line(dir, name, buf, sizeof buf) && sscanf(buf, "%d", &level[nleaves]) == 1)
      continue;
    level[nleaves] = 0;  // no level (sysfs hides a level of 0): a leaf this skips
    struct stat st;
    snprintf(name, sizeof name, "index%d", nleaves);
    if (fstatat(dir, name, &st, 0) != 0)
      break;  // past the last leaf
  }
  int64_t best = 0;
  for (;;) {  // the highest level first (the first leaf of it), while its size is unreadable
    int at = -1;
    for (int i = 0; i < nleaves; i++)
      if (level[i] > 0 && (at < 0 || level[i] > level[at]))
        at = i;
    if (at < 0)
      break;
    long long size = 0;
    char unit = 0;
    snprintf(name, sizeof name, "index%d/size", at);
    if (read_line(dir, name, buf, sizeof buf) && sscanf(buf, "%lld%c", &size, &unit) >= 1 && size > 0 &&
        size < (1LL << 40)) {
      best = size * (unit == 'K' ? 1 << 10 : unit == 'M' ? 1 << 20 : unit == 'G' ? 1 << 30 : 1);
      break;
    }
    level[at] = 0;
  }
  if (dir >= 0)
    close(dir);
  return best > 0 ? best : cache_bytes(_SC_LEVEL3_CACHE_SIZE, dflt);
}

// The last-level cache a program can count on: the reported one, but at most LLC_PER_CPU
// per online CPU, and at least LLC_BOUND_MIN (a named CPU's DEFAULT_LLC, Zen 3's 32 MiB,
// is never cut). One rule for every reader of CpuTarget.llc (the streaming rule, the
// roofline's copy, the profile's test for kernels past the caches), so none sees a cache
// the others do not. Why a bound: a VM of few cores on a large server sees the whole
// chip's shared L3, most of which other tenants' cores hold. This 2-core Xeon VM reports
// a 480 MiB L3 and behaves like 43-85 MiB, `tdslc bench` with
// TDSL_STREAM_MIN/TDSL_STREAM_FORM, both backends, non-temporal against plain stores:
// buffers of 64 MiB still gain from plain stores (x * 2 + 1 of 32 MiB 1.18 ms both; an
// outer sum of 32 MiB 0.59 against 0.71 ms, of 64 MiB 1.2-1.3 against 1.46-1.50) but of
// 128 MiB lose 1.2-1.5x (relu(x * 2 + 1) * sigmoid(x) of 64 MiB 2.8 ms against 4.0-4.3,
// x * 2 + 1 2.4-2.5 against 2.9-3.1, an outer sum of 128 MiB 2.8 against 3.9-4.3). The
// largest shipping per-core L3 shares are 12-48 MiB (V-Cache parts); 32 MiB a CPU puts
// this VM's bound at 64 MiB, between the two, and leaves a real machine's L3 as it is
// (a 16-core Zen 3's 64 MiB against a bound of 512 MiB).
static const int64_t LLC_PER_CPU = (int64_t)32 << 20, LLC_BOUND_MIN = (int64_t)32 << 20;

int64_t cpu_usable_llc(int64_t reported, int64_t cpus) {
  int64_t bound = td_sat_mul(cpus > 0 ? cpus : 1, LLC_PER_CPU);
  if (bound < LLC_BOUND_MIN)
    bound = LLC_BOUND_MIN;
  return reported < bound ? reported : bound;
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
    t.llc = cpu_usable_llc(llc_bytes(t.l2 > DEFAULT_LLC ? t.l2 : DEFAULT_LLC), sysconf(_SC_NPROCESSORS_ONLN));
    return with_stream_min(t);
  }
  t.name = cpu;
  if (in_family(cpu, AVX512_CPUS, (int)(sizeof AVX512_CPUS / sizeof *AVX512_CPUS)))
    t.vec_bytes = 64, t.nregs = 32, t.fma = true, t.l2 = 1 << 20;
  else if (in_family(cpu, AVX2_CPUS, (int)(sizeof AVX2_CPUS / sizeof *AVX2_CPUS)))
    t.vec_bytes = 32, t.fma = true;
  return with_stream_min(t);
}
