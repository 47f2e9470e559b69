// tests/shim/shim.cc: the runtime of the CUDA shim (tests/shim/tdsl_shim.h says what
// it is for). It is built without instrumentation into libtdsl_shim.so, which the
// batch runner, the fake driver (libcuda.so.1) and every kernel module link.
//
//   - Device memory: one reserved range of address space, PROT_NONE, cut into 1 GiB
//     slots; an allocation is mapped in the middle of its slot, between 256 MiB
//     guards, so an index that goes astray lands in no allocation and is reported
//     before the access (the generated code's accesses call the __tsan_* hooks below).
//   - Launches: blocks one after another; a block's threads are fibers on stacks of
//     their own (a context switch in assembly on x86-64, ucontext elsewhere), run in
//     turn until each waits at a barrier or a warp operation or ends. When none can
//     run, the scheduler completes what every participant reached: a warp operation
//     whose mask's lanes all wait at it (shuffles, votes, __syncwarp, mma: lockstep, the
//     values of every lane at that one operation), else a __syncthreads all the
//     block's live threads wait at; anything else is a deadlock, and reported so.
//   - Serial kernels: each thread's bytes of device memory are counted; a launch that
//     moves SERIAL_BYTES or more, most of them (half or more) by its two busiest
//     threads, is a kernel left to one or two threads, and a `tdsl-shim-serial: ` line
//     says so on the report stream (not a report: the launch stands; test_shim.py
//     decides).
//   - The checker keeps, per byte of device and shared memory, who last wrote and read
//     it: the epoch (a counter bumped at every block start and every __syncthreads, so
//     accesses of two epochs are ordered), the writer and reader threads with their
//     warp's __syncwarp count (orders the lanes of a warp), and the block of a launch
//     that last wrote and read it (blocks are unordered). Reports are lines starting
//     `tdsl-shim: ` on the report stream (stderr, or tdsl_shim_set_report's); a launch
//     with a report fails. Atomics are exempt; an out-of-bounds access stops the
//     launch (the access would fault).
//
// One OS thread runs a launch; launches do not nest.
#include "tdsl_shim.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#define EXPORT extern "C" __attribute__((visibility("default")))

uint3 tdsl_shim_tid, tdsl_shim_ctaid;
dim3 tdsl_shim_ntid, tdsl_shim_nctaid;

// ============================================================================
// Reports
// ============================================================================
static FILE *rep_out;
static int rep_count;        // reports of the current launch
static long rep_total;       // reports since the process began
static const char *cur_kernel = "?";
enum { MAX_REPORTS = 6 };

EXPORT void tdsl_shim_set_report(FILE *f) { rep_out = f; }
static long stat_launches, stat_blocks, stat_threads;
// The launches, blocks and threads run so far.
EXPORT void tdsl_shim_stats(long *launches, long *blocks, long *threads) {
  *launches = stat_launches, *blocks = stat_blocks, *threads = stat_threads;
}
EXPORT long tdsl_shim_reports(void) { return rep_total; }

static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void report(const char *fmt, ...) {
  rep_count++;
  rep_total++;
  FILE *f = rep_out ? rep_out : stderr;
  if (rep_count > MAX_REPORTS)
    return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(f, "tdsl-shim: %s: ", cur_kernel);
  vfprintf(f, fmt, ap);
  fputc('\n', f);
  va_end(ap);
  fflush(f);
}

// The function of the kernel at code address pc, for reports.
static const char *where(const void *pc) {
  static char buf[256];
  Dl_info di;
  if (pc && dladdr(pc, &di) && di.dli_sname)
    snprintf(buf, sizeof buf, " (in %s+0x%lx)", di.dli_sname, (unsigned long)((const char *)pc - (const char *)di.dli_saddr));
  else
    buf[0] = 0;
  return buf;
}

static void die(const char *what) {
  fprintf(stderr, "tdsl-shim: fatal: %s: %s\n", what, strerror(errno));
  abort();
}

// ============================================================================
// Shadow cells: who touched a byte
// ============================================================================
enum : uint16_t { NONE = 0, MANY = 0xffff };
struct Cell {
  uint32_t epoch;         // the epoch of w and r
  uint32_t wb, rb;        // the block (its generation) that last wrote / read it; 0 none
  uint16_t w, r;          // the thread + 1 that wrote / read it in `epoch`; MANY: several readers
  uint16_t wws, rws;      // the warp's __syncwarp count at that write / at the latest read
  uint16_t rwarp;         // the readers' warp + 1, MANY: several warps
  uint16_t rb_many;       // several blocks read it since rb's launch began
};

static Cell *shadow_new(size_t n) {
  void *p = mmap(NULL, (n ? n : 1) * sizeof(Cell), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED)
    die("mmap (shadow)");
  return (Cell *)p;
}
static void shadow_free(Cell *c, size_t n) { munmap(c, (n ? n : 1) * sizeof(Cell)); }

// ============================================================================
// Device memory
// ============================================================================
static const size_t SLOT = (size_t)1 << 30, GUARD = (size_t)256 << 20, MAX_ALLOC = SLOT - 2 * GUARD;
enum { NSLOTS = 1024 };
static char *region;
struct Alloc {
  char *p;
  size_t n;
  Cell *shadow;
  bool live;
  int id;  // the how-manyth allocation, for reports
};
static Alloc slots[NSLOTS];
static int free_list[NSLOTS], nfree, nused, nallocs;
static size_t page;

static void region_init(void) {
  if (region)
    return;
  page = (size_t)sysconf(_SC_PAGESIZE);
  void *p = mmap(NULL, SLOT * NSLOTS, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    die("mmap (device address space)");
  region = (char *)p;
}

static size_t round_page(size_t n) { return (n + page - 1) / page * page; }

EXPORT void *tdsl_shim_dev_alloc(size_t n) {
  region_init();
  if (n > MAX_ALLOC)
    return NULL;
  int s;
  if (nfree)
    s = free_list[--nfree];
  else if (nused < NSLOTS)
    s = nused++;
  else
    return NULL;
  Alloc *a = &slots[s];
  a->p = region + (size_t)s * SLOT + GUARD;
  a->n = n;
  if (n && mprotect(a->p, round_page(n), PROT_READ | PROT_WRITE) != 0)
    die("mprotect");
  a->shadow = shadow_new(n);
  a->live = true;
  a->id = nallocs++;
  return a->p;
}

static Alloc *alloc_of(const void *p) {
  if (!region)
    return NULL;
  uintptr_t off = (uintptr_t)p - (uintptr_t)region;
  if (off >= SLOT * NSLOTS)
    return NULL;
  Alloc *a = &slots[off / SLOT];
  return a->live ? a : NULL;
}

EXPORT int tdsl_shim_dev_free(void *p) {
  Alloc *a = alloc_of(p);
  if (!a || (char *)p != a->p)
    return -1;
  if (a->n) {
    madvise(a->p, round_page(a->n), MADV_DONTNEED);  // zero, and give the pages back
    mprotect(a->p, round_page(a->n), PROT_NONE);
  }
  shadow_free(a->shadow, a->n);
  a->live = false;
  free_list[nfree++] = (int)(a - slots);
  return 0;
}

// Whether [p, p + n) lies in one live allocation.
EXPORT int tdsl_shim_dev_valid(const void *p, size_t n) {
  Alloc *a = alloc_of(p);
  return a && (const char *)p >= a->p && (size_t)((const char *)p - a->p) + n <= a->n;
}

EXPORT int tdsl_shim_dev_live(void) { return nused - nfree; }

// ============================================================================
// Shared memory: the tdsl_shared sections of the loaded code
// ============================================================================
struct Section {
  char *lo, *hi;
  Cell *shadow;
};
enum { MAX_SECTIONS = 256 };
static Section sections[MAX_SECTIONS];
static int nsections;

EXPORT void tdsl_shim_register_shared(char *lo, char *hi) {
  if (!lo || hi <= lo || nsections == MAX_SECTIONS)
    return;
  for (int i = 0; i < nsections; i++)
    if (sections[i].lo == lo)
      return;
  sections[nsections++] = Section{lo, hi, shadow_new((size_t)(hi - lo))};
}

// ============================================================================
// Fibers
// ============================================================================
enum FiberState { F_READY, F_BAR, F_WARP, F_DONE };
enum WarpOp { W_SHFL, W_VOTE, W_SYNC, W_MMA };

struct Fiber {
  void *sp;           // its stack pointer while another runs
  char *stack;        // the lowest usable byte of its stack
  int state, site;    // F_BAR, F_WARP: the source line it waits at
  int op;             // F_WARP: WarpOp
  unsigned mask;
  int mode, arg, width;
  uint64_t val, result;
  const uint32_t *ma, *mb;  // W_MMA: this lane's fragments
  const float *mc;
  float *md;
  int bf16;
  uint64_t bytes;  // of device memory it read and wrote in this block
#if !defined(__x86_64__)
  ucontext_t uc;
#endif
};

enum { MAX_THREADS = 1024, STACK = 256 << 10 };
static const uint64_t SERIAL_BYTES = 256 << 10;  // (a launch moving less is too small to matter)
static Fiber fibers[MAX_THREADS];
static char *stacks;
static void *sched_sp;
#if !defined(__x86_64__)
static ucontext_t sched_uc;
#endif

// The launch being run.
static struct {
  bool active;        // a kernel's code is running (the hooks check only then)
  bool abort;         // stop: the block's fibers are abandoned, the launch fails
  bool failed;
  int n;              // threads per block
  int cur;            // the running thread
  void (*fn)(void *);
  void *ctx;
  uint32_t bgen, first_bgen;  // the block's generation; the launch's first block's
  uint32_t epoch;
  uint16_t wsync[MAX_THREADS / 32];
  int ndone;
  uint64_t bytes, top[2];  // device memory moved by the launch, and by its two busiest threads
} L;
static uint32_t gen_counter;  // block generations and epochs, never reused in a process
static int last_error;         // cudaGetLastError's

#if defined(__x86_64__)
// void tdsl_shim_switch(void **save, void *to): saves the callee-saved registers on
// this stack and its pointer in *save, then resumes the stack `to` as saved.
extern "C" void tdsl_shim_switch(void **save, void *to);
__asm__(".text\n"
        ".globl tdsl_shim_switch\n"
        ".hidden tdsl_shim_switch\n"
        ".type tdsl_shim_switch,@function\n"
        "tdsl_shim_switch:\n"
        "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
        "  ret\n"
        ".size tdsl_shim_switch, .-tdsl_shim_switch\n");
#endif

static void to_scheduler(void) {
  Fiber *f = &fibers[L.cur];
#if defined(__x86_64__)
  tdsl_shim_switch(&f->sp, sched_sp);
#else
  swapcontext(&f->uc, &sched_uc);
#endif
}

static void fiber_main(void) {
  L.fn(L.ctx);
  fibers[L.cur].state = F_DONE;
  L.ndone++;
  to_scheduler();
  abort();  // a finished fiber is never resumed
}

static void stacks_init(void) {
  if (stacks)
    return;
  size_t per = STACK + page;
  void *p = mmap(NULL, per * MAX_THREADS, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    die("mmap (stacks)");
  stacks = (char *)p;
  for (int t = 0; t < MAX_THREADS; t++) {
    mprotect(stacks + per * t, page, PROT_NONE);  // a guard below each stack
    fibers[t].stack = stacks + per * t + page;
  }
}

static void fiber_start(int t) {
  Fiber *f = &fibers[t];
  f->state = F_READY;
  f->bytes = 0;
#if defined(__x86_64__)
  // as tdsl_shim_switch left it: six registers, then the return address; at fiber_main's
  // first instruction the stack is aligned as after a call
  char *top = f->stack + STACK;
  void **sp = (void **)(top - 64);
  for (int i = 0; i < 6; i++)
    sp[i] = 0;
  sp[6] = (void *)fiber_main;
  sp[7] = 0;
  f->sp = sp;
#else
  getcontext(&f->uc);
  f->uc.uc_stack.ss_sp = f->stack;
  f->uc.uc_stack.ss_size = STACK;
  f->uc.uc_link = NULL;
  makecontext(&f->uc, fiber_main, 0);
#endif
}

static void resume(int t) {
  L.cur = t;
  tdsl_shim_tid = uint3{(unsigned)t, 0, 0};
  Fiber *f = &fibers[t];
#if defined(__x86_64__)
  tdsl_shim_switch(&sched_sp, f->sp);
#else
  swapcontext(&sched_uc, &f->uc);
#endif
}

// Stops the launch from inside a kernel: the block is abandoned.
static void stop_launch(void) {
  L.abort = true;
  L.failed = true;
  to_scheduler();
  abort();
}

// ============================================================================
// The checker
// ============================================================================
static inline bool ordered(uint16_t who, uint16_t ws, int t, int warp, uint16_t g) {
  // an access by thread who - 1 at warp-sync count ws happened before this one of t
  return who == t + 1 || ((who - 1) / 32 == warp && ws != g);
}

static const char *kind_rw(bool w) { return w ? "writes" : "reads"; }

// What a report calls the memory of a cell: al, or the block's shared memory.
static const char *mem_name(const Alloc *al) {
  static char buf[80];
  if (!al)
    return "shared memory";
  snprintf(buf, sizeof buf, "allocation %d (%zu bytes)", al->id, al->n);
  return buf;
}

static void check_byte(Cell *c, bool write, const Alloc *al, size_t off, const void *pc) {
  bool shared = !al;
  int t = L.cur, warp = t / 32;
  uint16_t g = L.wsync[warp];
  uint32_t B = L.bgen;
  bool inlaunch_w = c->wb >= L.first_bgen && c->wb != 0, inlaunch_r = c->rb >= L.first_bgen && c->rb != 0;
  if (shared) {
    if (!write && c->wb != B)
      report("block %u thread %d reads %s byte %zu, which no thread of the block wrote%s", tdsl_shim_ctaid.x, t, mem_name(al),
             off, where(pc)), L.failed = true;
  } else if (write) {
    if (inlaunch_w && c->wb != B)
      report("block %u thread %d writes %s byte %zu, which another block of the launch wrote%s", tdsl_shim_ctaid.x, t,
             mem_name(al), off, where(pc)), L.failed = true;
    else if (inlaunch_r && (c->rb != B || c->rb_many))
      report("block %u thread %d writes %s byte %zu, which another block of the launch read%s", tdsl_shim_ctaid.x, t,
             mem_name(al), off, where(pc)), L.failed = true;
  } else if (inlaunch_w && c->wb != B) {
    report("block %u thread %d reads %s byte %zu, which another block of the launch wrote%s", tdsl_shim_ctaid.x, t,
           mem_name(al), off, where(pc)), L.failed = true;
  }
  if (write) {
    c->wb = B;
    c->rb = 0, c->rb_many = 0;
  } else if (!inlaunch_r) {
    c->rb = B, c->rb_many = 0;
  } else if (c->rb != B) {
    c->rb_many = 1;
  }
  // within the block: since the last barrier
  if (c->epoch != L.epoch) {
    c->epoch = L.epoch;
    c->w = c->r = NONE;
  }
  if (c->w && !ordered(c->w, c->wws, t, warp, g)) {
    report("block %u: thread %d %s %s byte %zu, which thread %d wrote, with no barrier between%s", tdsl_shim_ctaid.x,
           t, kind_rw(write), mem_name(al), off, c->w - 1, where(pc));
    L.failed = true;
  } else if (write && c->r && c->r != t + 1 && !(c->rwarp == warp + 1 && c->rws != g)) {
    // (readers all of this warp, and a __syncwarp since the last of them: ordered)
    if (c->r == MANY)
      report("block %u: thread %d writes %s byte %zu, which other threads read, with no barrier between%s",
             tdsl_shim_ctaid.x, t, mem_name(al), off, where(pc));
    else
      report("block %u: thread %d writes %s byte %zu, which thread %d read, with no barrier between%s",
             tdsl_shim_ctaid.x, t, mem_name(al), off, c->r - 1, where(pc));
    L.failed = true;
  }
  if (write) {
    c->w = (uint16_t)(t + 1), c->wws = g;
    c->r = NONE;
  } else if (c->r == NONE || c->r == t + 1) {
    c->r = (uint16_t)(t + 1), c->rws = g, c->rwarp = (uint16_t)(warp + 1);
  } else {
    if (c->rwarp != warp + 1)
      c->rwarp = MANY;
    c->r = MANY, c->rws = g;
  }
}

static void access(const void *addr, size_t n, bool write, const void *pc) {
  if (!L.active)
    return;
  uintptr_t a = (uintptr_t)addr;
  if (region && a - (uintptr_t)region < SLOT * NSLOTS) {
    Alloc *al = &slots[(a - (uintptr_t)region) / SLOT];
    if (!al->live) {
      report("block %u thread %d %s %zu bytes of device memory that is not allocated%s", tdsl_shim_ctaid.x, L.cur,
             kind_rw(write), n, where(pc));
      stop_launch();
    }
    ptrdiff_t off = (const char *)addr - al->p;
    if (off < 0 || (size_t)off + n > al->n) {
      report("block %u thread %d %s %zu bytes at byte %td of %s: out of bounds%s", tdsl_shim_ctaid.x, L.cur,
             kind_rw(write), n, off, mem_name(al), where(pc));
      stop_launch();
    }
    for (size_t i = 0; i < n; i++)
      check_byte(&al->shadow[off + i], write, al, (size_t)off + i, pc);
    fibers[L.cur].bytes += n;
    return;
  }
  for (int s = 0; s < nsections; s++) {
    Section *sec = &sections[s];
    if ((const char *)addr >= sec->lo && (const char *)addr < sec->hi) {
      if ((const char *)addr + n > sec->hi) {
        report("block %u thread %d %s past the end of shared memory%s", tdsl_shim_ctaid.x, L.cur, kind_rw(write),
               where(pc));
        stop_launch();
      }
      size_t off = (size_t)((const char *)addr - sec->lo);
      for (size_t i = 0; i < n; i++)
        check_byte(&sec->shadow[off + i], write, NULL, off + i, pc);
      return;
    }
  }
}

// The hooks of -fsanitize=thread's instrumentation (the generated code's accesses).
#define RA __builtin_return_address(0)
#define HOOKS(n)                                                                              \
  EXPORT void __tsan_read##n(void *a) { access(a, n, false, RA); }                            \
  EXPORT void __tsan_write##n(void *a) { access(a, n, true, RA); }                            \
  EXPORT void __tsan_unaligned_read##n(void *a) { access(a, n, false, RA); }                  \
  EXPORT void __tsan_unaligned_write##n(void *a) { access(a, n, true, RA); }                  \
  EXPORT void __tsan_volatile_read##n(void *a) { access(a, n, false, RA); }                   \
  EXPORT void __tsan_volatile_write##n(void *a) { access(a, n, true, RA); }
HOOKS(1)
HOOKS(2)
HOOKS(4)
HOOKS(8)
HOOKS(16)
EXPORT void __tsan_read_range(void *a, size_t n) { access(a, n, false, RA); }
EXPORT void __tsan_write_range(void *a, size_t n) { access(a, n, true, RA); }
EXPORT void __tsan_init(void) {}
EXPORT void __tsan_func_entry(void *pc) { (void)pc; }
EXPORT void __tsan_func_exit(void) {}
EXPORT void __tsan_vptr_update(void **p, void *v) { (void)p, (void)v; }
EXPORT void __tsan_vptr_read(void **p) { (void)p; }

// ============================================================================
// Barriers and warp operations (called by the kernels)
// ============================================================================
EXPORT void tdsl_shim_syncthreads(int site) {
  if (!L.active)
    return;
  Fiber *f = &fibers[L.cur];
  f->state = F_BAR;
  f->site = site;
  to_scheduler();
}

static void warp_wait(Fiber *f, int op, unsigned mask, int site) {
  int t = L.cur, lane = t % 32, base = t - lane, nlanes = L.n - base < 32 ? L.n - base : 32;
  unsigned exist = nlanes == 32 ? 0xffffffffu : (1u << nlanes) - 1;
  if (!(mask >> lane & 1)) {
    report("block %u thread %d: a warp operation (line %d) whose mask 0x%08x leaves out the calling lane",
           tdsl_shim_ctaid.x, t, site, mask);
    stop_launch();
  }
  if (mask & ~exist) {
    report("block %u thread %d: a warp operation (line %d) whose mask 0x%08x names lanes this block of %d threads "
           "does not have",
           tdsl_shim_ctaid.x, t, site, mask, L.n);
    stop_launch();
  }
  f->state = F_WARP;
  f->op = op;
  f->mask = mask;
  f->site = site;
  to_scheduler();
}

EXPORT void tdsl_shim_syncwarp(unsigned mask, int site) {
  if (!L.active)
    return;
  warp_wait(&fibers[L.cur], W_SYNC, mask, site);
}

EXPORT uint64_t tdsl_shim_shfl(unsigned mask, uint64_t v, int mode, int arg, int width, int site) {
  if (!L.active)
    return v;
  Fiber *f = &fibers[L.cur];
  f->val = v, f->mode = mode, f->arg = arg, f->width = width;
  warp_wait(f, W_SHFL, mask, site);
  return f->result;
}

EXPORT unsigned tdsl_shim_vote(unsigned mask, int pred, int mode, int site) {
  if (!L.active)
    return 0;
  Fiber *f = &fibers[L.cur];
  f->val = (uint64_t)(pred != 0), f->mode = mode;
  warp_wait(f, W_VOTE, mask, site);
  return (unsigned)f->result;
}

EXPORT void tdsl_shim_mma_16816(float *d, const uint32_t *a, const uint32_t *b, const float *c, int bf16, int site) {
  if (!L.active)
    return;
  Fiber *f = &fibers[L.cur];
  f->ma = a, f->mb = b, f->mc = c, f->md = d, f->bf16 = bf16;
  warp_wait(f, W_MMA, 0xffffffffu, site);
}

// ---- atomics: exempt from the race checks, still bounds-checked ----
static void atomic_check(const void *p, size_t n) {
  if (!L.active)
    return;
  uintptr_t a = (uintptr_t)p;
  if (region && a - (uintptr_t)region < SLOT * NSLOTS && !tdsl_shim_dev_valid(p, n)) {
    report("block %u thread %d: an atomic on %zu bytes outside every allocation", tdsl_shim_ctaid.x, L.cur, n);
    stop_launch();
  }
}
EXPORT int tdsl_shim_atomic_cas_i32(int *p, int cmp, int val) {
  atomic_check(p, 4);
  int old = *p;
  if (old == cmp)
    *p = val;
  return old;
}
EXPORT unsigned long long tdsl_shim_atomic_cas_u64(unsigned long long *p, unsigned long long cmp,
                                                   unsigned long long val) {
  atomic_check(p, 8);
  unsigned long long old = *p;
  if (old == cmp)
    *p = val;
  return old;
}
#define ATOMIC_RMW(name, T, expr)    \
  EXPORT T name(T *p, T v) {         \
    atomic_check(p, sizeof(T));      \
    T old = *p;                      \
    *p = expr;                       \
    return old;                      \
  }
ATOMIC_RMW(tdsl_shim_atomic_add_i32, int, (int)((unsigned)old + (unsigned)v))
ATOMIC_RMW(tdsl_shim_atomic_add_u64, unsigned long long, old + v)
ATOMIC_RMW(tdsl_shim_atomic_add_f32, float, old + v)
ATOMIC_RMW(tdsl_shim_atomic_add_f64, double, old + v)
ATOMIC_RMW(tdsl_shim_atomic_max_i32, int, old > v ? old : v)
ATOMIC_RMW(tdsl_shim_atomic_min_i32, int, old < v ? old : v)
ATOMIC_RMW(tdsl_shim_atomic_exch_i32, int, v)

// ============================================================================
// The scheduler
// ============================================================================
static float half_to_float(uint16_t h, int bf16) {
  if (bf16) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, u;
  if (e == 0x1f)
    u = sign | 0x7f800000u | (m << 13);
  else if (e != 0)
    u = sign | ((e + 112) << 23) | (m << 13);
  else {
    float v = (float)m * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  float f;
  memcpy(&f, &u, 4);
  return f;
}

// mma.m16n8k16 (row A, col B, f32 C/D) over the 32 lanes w0..w0+31. Lane l, with
// g = l / 4 and q = l % 4, holds A rows g and g + 8 at columns 2q, 2q + 1 (a0, a1: row g;
// a2, a3: row g + 8) and at 2q + 8, 2q + 9 (a4..a7), two halves a register, low half
// first; B column g at rows 2q, 2q + 1 (b0, b1) and 2q + 8, 2q + 9 (b2, b3); C and D
// rows g and g + 8 at columns 2q, 2q + 1.
static void mma_complete(int w0) {
  float A[16][16], B[16][8], C[16][8];
  for (int l = 0; l < 32; l++) {
    Fiber *f = &fibers[w0 + l];
    int g = l / 4, q = l % 4;
    uint16_t h[8];
    for (int r = 0; r < 4; r++)
      h[2 * r] = (uint16_t)(f->ma[r] & 0xffff), h[2 * r + 1] = (uint16_t)(f->ma[r] >> 16);
    A[g][2 * q] = half_to_float(h[0], f->bf16), A[g][2 * q + 1] = half_to_float(h[1], f->bf16);
    A[g + 8][2 * q] = half_to_float(h[2], f->bf16), A[g + 8][2 * q + 1] = half_to_float(h[3], f->bf16);
    A[g][2 * q + 8] = half_to_float(h[4], f->bf16), A[g][2 * q + 9] = half_to_float(h[5], f->bf16);
    A[g + 8][2 * q + 8] = half_to_float(h[6], f->bf16), A[g + 8][2 * q + 9] = half_to_float(h[7], f->bf16);
    uint16_t k[4] = {(uint16_t)(f->mb[0] & 0xffff), (uint16_t)(f->mb[0] >> 16), (uint16_t)(f->mb[1] & 0xffff),
                     (uint16_t)(f->mb[1] >> 16)};
    B[2 * q][g] = half_to_float(k[0], f->bf16), B[2 * q + 1][g] = half_to_float(k[1], f->bf16);
    B[2 * q + 8][g] = half_to_float(k[2], f->bf16), B[2 * q + 9][g] = half_to_float(k[3], f->bf16);
    C[g][2 * q] = f->mc[0], C[g][2 * q + 1] = f->mc[1], C[g + 8][2 * q] = f->mc[2], C[g + 8][2 * q + 1] = f->mc[3];
  }
  for (int l = 0; l < 32; l++) {
    Fiber *f = &fibers[w0 + l];
    int g = l / 4, q = l % 4;
    int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * q, 2 * q + 1, 2 * q, 2 * q + 1};
    for (int r = 0; r < 4; r++) {
      float s = C[rows[r]][cols[r]];
      for (int k = 0; k < 16; k++)  // in f32; the tensor cores' order of additions is unspecified
        s += A[rows[r]][k] * B[k][cols[r]];
      f->md[r] = s;
    }
  }
}

// Completes the warp operations every lane of whose mask waits at it.
static bool resolve_warps(void) {
  bool any = false;
  for (int base = 0; base < L.n; base += 32) {
    int nl = L.n - base < 32 ? L.n - base : 32;
    for (int l = 0; l < nl; l++) {
      Fiber *f = &fibers[base + l];
      if (f->state != F_WARP)
        continue;
      bool all = true;
      for (int m = 0; m < nl && all; m++) {
        Fiber *o = &fibers[base + m];
        if (f->mask >> m & 1)
          all = o->state == F_WARP && o->op == f->op && o->site == f->site && o->mask == f->mask;
      }
      if (!all)
        continue;
      unsigned mask = f->mask;
      any = true;
      if (f->op == W_MMA) {
        mma_complete(base);
      } else if (f->op == W_VOTE) {
        unsigned ballot = 0;
        for (int m = 0; m < nl; m++)
          if ((mask >> m & 1) && fibers[base + m].val)
            ballot |= 1u << m;
        for (int m = 0; m < nl; m++) {
          Fiber *o = &fibers[base + m];
          if (!(mask >> m & 1))
            continue;
          o->result = o->mode == TDSL_SHIM_VOTE_BALLOT ? ballot
                      : o->mode == TDSL_SHIM_VOTE_ALL  ? (ballot == mask)
                                                       : (ballot != 0);
        }
      } else if (f->op == W_SHFL) {
        for (int m = 0; m < nl; m++) {
          Fiber *o = &fibers[base + m];
          if (!(mask >> m & 1))
            continue;
          int w = o->width, seg = m / w * w, src = m;
          switch (o->mode) {
          case TDSL_SHIM_SHFL_IDX: src = seg + ((o->arg % w) + w) % w; break;
          case TDSL_SHIM_SHFL_UP: src = m - o->arg >= seg ? m - o->arg : m; break;
          case TDSL_SHIM_SHFL_DOWN: src = m + o->arg < seg + w ? m + o->arg : m; break;
          case TDSL_SHIM_SHFL_XOR: src = (m ^ o->arg) < seg + w && (m ^ o->arg) >= seg ? m ^ o->arg : m; break;
          }
          if (src >= nl || !(mask >> src & 1)) {
            report("block %u thread %d: a shuffle (line %d) reads lane %d, which is not in its mask 0x%08x",
                   tdsl_shim_ctaid.x, base + m, o->site, src, mask);
            L.failed = true;
            src = m;
          }
          o->result = fibers[base + src].val;
        }
      } else if (mask == (nl == 32 ? 0xffffffffu : (1u << nl) - 1)) {  // __syncwarp of every lane
        L.wsync[base / 32]++;
      }
      for (int m = 0; m < nl; m++)
        if (mask >> m & 1)
          fibers[base + m].state = F_READY;
    }
  }
  return any;
}

// Runs one block; false when it failed (the launch stops).
static bool run_block(void) {
  L.bgen = ++gen_counter;
  L.epoch = ++gen_counter;
  memset(L.wsync, 0, sizeof L.wsync);
  L.ndone = 0;
  for (int t = 0; t < L.n; t++)
    fiber_start(t);
  for (;;) {
    for (int t = 0; t < L.n; t++) {
      if (fibers[t].state != F_READY)
        continue;
      resume(t);
      if (L.abort)
        return false;
    }
    if (L.ndone == L.n)
      return true;
    if (resolve_warps())
      continue;
    // every live thread waits: a __syncthreads they all reach, or a deadlock
    int nbar = 0, site = -1, other = -1;
    for (int t = 0; t < L.n; t++) {
      Fiber *f = &fibers[t];
      if (f->state == F_BAR) {
        nbar++;
        if (site < 0)
          site = f->site;
        else if (f->site != site)
          other = f->site;
      }
    }
    if (nbar == L.n - L.ndone && other < 0 && L.ndone == 0) {
      L.epoch = ++gen_counter;
      for (int t = 0; t < L.n; t++)
        fibers[t].state = F_READY;
      continue;
    }
    if (nbar == L.n - L.ndone && other < 0)
      report("block %u: %d of its %d threads wait at __syncthreads (line %d), the others have returned",
             tdsl_shim_ctaid.x, nbar, L.n, site);
    else if (nbar == L.n - L.ndone)
      report("block %u: its threads wait at different __syncthreads (lines %d and %d)", tdsl_shim_ctaid.x, site, other);
    else {
      int t = 0;
      while (fibers[t].state != F_WARP)
        t++;
      report("block %u: thread %d waits at a warp operation (line %d, mask 0x%08x) that lanes of its mask never "
             "reach (%d threads wait at __syncthreads, %d have returned)",
             tdsl_shim_ctaid.x, t, fibers[t].site, fibers[t].mask, nbar, L.ndone);
    }
    L.failed = true;
    return false;
  }
}

static const char *launch_env(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

EXPORT int tdsl_shim_run(const char *name, dim3 grid, dim3 block, size_t shmem, void (*fn)(void *), void *ctx) {
  (void)shmem;
  cur_kernel = name ? name : "?";
  rep_count = 0;
  uint64_t nb = (uint64_t)grid.x * grid.y * grid.z, nt = (uint64_t)block.x * block.y * block.z;
  if (grid.y != 1 || grid.z != 1 || block.y != 1 || block.z != 1 || nt > MAX_THREADS || nt == 0 || nb == 0 ||
      grid.x > 0x7fffffffu) {
    report("the shim runs 1-D launches of 1 to %d threads (grid %ux%ux%u, block %ux%ux%u)", MAX_THREADS, grid.x, grid.y,
           grid.z, block.x, block.y, block.z);
    last_error = cudaErrorInvalidValue;
    return last_error;
  }
  region_init();
  stacks_init();
  tdsl_shim_nctaid = grid;
  tdsl_shim_ntid = block;
  L.n = (int)nt;
  L.fn = fn;
  L.ctx = ctx;
  L.abort = L.failed = false;
  L.bytes = L.top[0] = L.top[1] = 0;
  L.first_bgen = gen_counter + 1;
  L.active = true;
  // TDSL_SHIM_BLOCKS=N: run only the first N blocks (a quick look at a big launch)
  const char *lim = launch_env("TDSL_SHIM_BLOCKS");
  uint64_t run = lim ? (uint64_t)atoll(lim) : nb;
  stat_launches++;
  for (uint64_t b = 0; b < nb && b < run && !L.failed; b++) {
    tdsl_shim_ctaid = uint3{(unsigned)b, 0, 0};
    stat_blocks++;
    stat_threads += L.n;
    if (!run_block())
      break;
    for (int t = 0; t < L.n; t++) {
      uint64_t m = fibers[t].bytes;
      L.bytes += m;
      if (m > L.top[0])
        L.top[1] = L.top[0], L.top[0] = m;
      else if (m > L.top[1])
        L.top[1] = m;
    }
  }
  L.active = false;
  tdsl_shim_tid = uint3{0, 0, 0};
  if (!L.failed && L.bytes >= SERIAL_BYTES && 2 * (L.top[0] + L.top[1]) >= L.bytes) {
    FILE *f = rep_out ? rep_out : stderr;
    fprintf(f, "tdsl-shim-serial: %s: its two busiest threads of %llu move %.0f%% of its %llu bytes of device memory\n",
            cur_kernel, (unsigned long long)(nb * nt), 100.0 * (double)(L.top[0] + L.top[1]) / (double)L.bytes,
            (unsigned long long)L.bytes);
  }
  if (rep_count > MAX_REPORTS) {
    FILE *f = rep_out ? rep_out : stderr;
    fprintf(f, "tdsl-shim: %s: ... %d reports in all\n", cur_kernel, rep_count);
  }
  if (L.failed) {
    last_error = cudaErrorLaunchFailure;
    return last_error;
  }
  return 0;
}

// ============================================================================
// The runtime API (--emit=cuda's host code)
// ============================================================================
EXPORT cudaError_t cudaMalloc(void **p, size_t n) {
  *p = tdsl_shim_dev_alloc(n);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
EXPORT cudaError_t cudaFree(void *p) {
  if (!p)
    return cudaSuccess;
  return tdsl_shim_dev_free(p) == 0 ? cudaSuccess : cudaErrorInvalidValue;
}
EXPORT cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, cudaMemcpyKind kind) {
  bool dd = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  bool sd = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if (n && ((dd && !tdsl_shim_dev_valid(dst, n)) || (sd && !tdsl_shim_dev_valid(src, n))))
    return cudaErrorInvalidValue;
  if (n)
    memmove(dst, src, n);
  return cudaSuccess;
}
EXPORT cudaError_t cudaMemset(void *p, int v, size_t n) {
  if (n && !tdsl_shim_dev_valid(p, n))
    return cudaErrorInvalidValue;
  if (n)
    memset(p, v, n);
  return cudaSuccess;
}
EXPORT cudaError_t cudaGetLastError(void) {
  int e = last_error;
  last_error = 0;
  return e;
}
EXPORT cudaError_t cudaPeekAtLastError(void) { return last_error; }
EXPORT cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
EXPORT const char *cudaGetErrorString(cudaError_t e) {
  switch (e) {
  case cudaSuccess: return "no error";
  case cudaErrorInvalidValue: return "invalid argument";
  case cudaErrorMemoryAllocation: return "out of memory";
  case cudaErrorLaunchFailure: return "unspecified launch failure (the CUDA shim reported it)";
  default: return "unknown error";
  }
}
EXPORT cudaError_t tdsl_shim_func_set_attribute(const void *k, int attr, int value) {
  (void)k, (void)attr;
  return value >= 0 && value <= 227 * 1024 ? cudaSuccess : cudaErrorInvalidValue;
}

// ============================================================================
// Kernels registered for the driver API (fake_cuda.cc)
// ============================================================================
struct Kernel {
  const char *name;
  void *k;
  void (*invoke)(void *, void **);
  int nparams;
  int module;
};
static Kernel *kernels;
static int nkernels, capkernels, cur_module;

EXPORT void tdsl_shim_register(const char *name, void *k, void (*invoke)(void *, void **), int nparams) {
  if (nkernels == capkernels) {
    capkernels = capkernels ? 2 * capkernels : 64;
    kernels = (Kernel *)realloc(kernels, sizeof *kernels * (size_t)capkernels);
    if (!kernels)
      die("realloc");
  }
  kernels[nkernels++] = Kernel{name, k, invoke, nparams, cur_module};
}

// Registrations made from now on belong to module m (the one being loaded).
EXPORT void tdsl_shim_begin_module(int m) { cur_module = m; }

EXPORT const void *tdsl_shim_find_kernel(int module, const char *name) {
  for (int i = nkernels - 1; i >= 0; i--)
    if (kernels[i].module == module && strcmp(kernels[i].name, name) == 0)
      return &kernels[i];
  return NULL;
}

struct Call {
  const Kernel *k;
  void **params;
};

EXPORT int tdsl_shim_launch_kernel(const void *kernel, dim3 grid, dim3 block, size_t shmem, void **params) {
  Call c = {(const Kernel *)kernel, params};
  return tdsl_shim_run(c.k->name, grid, block, shmem, [](void *p) {
    Call *c = (Call *)p;
    c->k->invoke(c->k->k, c->params);
  }, &c);
}
