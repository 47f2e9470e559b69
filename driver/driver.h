// driver/driver.h: what the pieces of the command line share (private to driver/).
// The options as parsed (options.c); compile_fn, the one way from a file and a
// function to the compiled program (compile.c); run and bench (run.c) and the three
// backends they call the function through: the system cc (cc.c), LLVM's JIT (jit.c)
// and the GPU (gpu.c). Also the exit statuses, the "tdslc: error: ..." reports and the
// --time laps, as static inline helpers every piece uses.
#ifndef TDSLC_DRIVER_DRIVER_H
#define TDSLC_DRIVER_DRIVER_H

#include "codegen/codegen.h"
#ifdef TDSLC_WITH_LLVM
#include "codegen/llvm.h"
#endif
#include "frontend/frontend.h"
#include "tdsl.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

_Static_assert((int)TDSL_F64 == (int)DT_F64 && (int)TDSL_BF16 == (int)DT_BF16 && (int)TDSL_DTYPE_COUNT == (int)DT_COUNT,
               "runtime and compiler dtypes share one order");

// Exit status: 0 ok, 1 an error in the program, 2 a bad command line or input file,
// 3 a run-time data error or no usable GPU, 4 an internal error.
enum { EXIT_PROGRAM = 1, EXIT_USAGE = 2, EXIT_DATA = 3, EXIT_INTERNAL = 4 };

// ============================================================================
// options.c — the command line (LANGUAGE.md §10) and --help
// ============================================================================
typedef enum { EMIT_TOKENS, EMIT_AST, EMIT_IR, EMIT_KERNELS, EMIT_C, EMIT_HEADER, EMIT_LLVM, EMIT_ASM,
               EMIT_OBJ, EMIT_CUDA, EMIT_PTX, EMIT_DOT, EMIT_COUNT } EmitKind;
extern const char *const emit_kind_names[EMIT_COUNT];  // as --emit spells them

typedef enum { MODE_COMPILE, MODE_RUN, MODE_BENCH } Mode;

typedef struct Input {
  const char *name, *path;  // --in NAME=PATH; name is malloc'd (options_free)
  int ndim;                 // CompileOptions.in_memory: no path, the argument's shape
  const int64_t *shape;
} Input;

typedef struct Arg {
  const char *name, *value;  // --arg NAME=VALUE (a scalar parameter), --dim NAME=SIZE; name malloc'd
} Arg;

enum { OPT_MAX_INPUTS = 4096 };  // --in and --arg options each (a model's weights are many)

typedef struct Options {
  Mode mode;
  const char *file, *out, *fn, *target, *backend, *cpu, *gpu_arch, *out_dir;
  EmitKind emit;
  int opt;
  bool json, time;
  bool profile;      // bench --profile (also --plot): each kernel's time and rates (profile.c)
  const char *plot;  // bench --plot FILE.svg: the roofline with each kernel on it
  bool full;  // --full: --emit=kernels prints every statement (no folding)
  bool list_cpus, list_gpus;  // --cpu=help, --gpu-arch=help: print the names, do nothing else
  int error_limit;            // -ferror-limit=N (Ctx.error_limit; 0: none)
  uint64_t seed;
  int reps;
  Input *inputs;  // malloc'd: one per argument at most (a fixed array was 192 KiB of stack,
  int ninputs;    // 48 pages to fault in at each start)
  SemaDims dims;  // --dim NAME=SIZE (names malloc'd)
  Arg *args;  // --arg NAME=VALUE (malloc'd, as inputs)
  int nargs;
} Options;

// 0, or EXIT_USAGE after a message. After it, target is "cpu" or "cuda" and run and
// bench have a backend (cpu: c or llvm; cuda: ptx or cuda).
int options_parse(int argc, char **argv, Options *o);
void options_free(Options *o);
void options_print_help(void);
// --cpu=help, --gpu-arch=help: the names the flag takes, with what they mean.
void options_print_cpus(FILE *out);
void options_print_gpus(FILE *out);

// ============================================================================
// Reports on stderr: "tdslc: KIND: message"; each returns its exit status.
// ============================================================================
static inline int vreport(int status, const char *kind, const char *fmt, va_list ap) {
  fprintf(stderr, "tdslc: %s: ", kind);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  return status;
}

TD_PRINTF(1, 2) static inline int usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = vreport(EXIT_USAGE, "error", fmt, ap);
  va_end(ap);
  return rc;
}

TD_PRINTF(1, 2) static inline int internal_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = vreport(EXIT_INTERNAL, "internal error", fmt, ap);
  va_end(ap);
  return rc;
}

// ============================================================================
// Timing (--time): each lap prints the stage that just ended.
// ============================================================================
static inline double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

typedef struct Timer {
  bool on;
  double t;
} Timer;

static inline void lap(Timer *tm, const char *stage) {
  double t = now_ms();
  if (tm->on)
    fprintf(stderr, "tdslc: time %-8s %8.3f ms\n", stage, t - tm->t);
  tm->t = t;
}

#ifdef TDSLC_WITH_LLVM
// LlvmOptions.lap: LLVM's own stages on the same clock.
static inline void llvm_lap(void *tm, const char *stage) { lap(tm, stage); }
#endif

// ============================================================================
// compile.c — a file and a function to the compiled program
// ============================================================================
// How far compile_fn goes; each stage includes those before it.
typedef enum {
  COMPILE_READ,     // the source read (--emit=tokens)
  COMPILE_PARSE,    // parsed (--emit=ast)
  COMPILE_CHECK,    // checked by sema, the function chosen
  COMPILE_GRAPH,    // each function lowered to a fused Graph (--emit=ir|dot)
  COMPILE_KERNELS,  // each Graph built into loop IR, scheduled for the CPU target
  COMPILE_COUNT
} CompileStage;

typedef struct CompileOptions {
  const char *file;
  const char *source;  // the file's text (NUL-terminated), or NULL: read the file
  const char *fn;      // --fn, or NULL
  bool one_fn;         // exactly one function: --fn's, or the file's only one
  const char *target;  // "cpu" or "cuda": cuda programs get no CPU schedules
  const char *cpu;     // --cpu, NULL for the host
  const char *gpu_arch;  // --gpu-arch (cuda): the GPU the schedules are for, NULL: sm_80
  CompileStage upto;
  bool graph_sched;    // COMPILE_GRAPH: record each kernel's CPU schedule in the graph (--emit=ir)
  bool c_source;       // the CPU kernels are for the C backend (CpuTarget.c_source)
  bool time_kernels;   // --time laps "lower" and "kernels" apart (run, bench), else one "lower"
  const SemaDims *dims;  // --dim: values of dims of generic functions
  const Input *inputs;   // run's --in files: their shapes bind the chosen function's dims too
  int ninputs;
  bool in_memory;  // inputs are a call's arguments in memory (the Python package): their
                   // shapes, and messages name them as sema names a helper's arguments
} CompileOptions;

typedef struct Compiled {
  SrcFile *src;
  Program prog;
  const Ast *fn;    // the chosen function; NULL: every function of the file
  int nfns;         // the functions lowered: 1 with fn, else all of them (less unbound generic ones)
  Graph *graph;     // the last function's graph
  LProgram **lps;   // nfns programs (COMPILE_KERNELS), else NULLs
} Compiled;

// 0, or the exit status after the diagnostics (EXIT_USAGE: no such file or function,
// EXIT_PROGRAM: errors in the program).
int compile_fn(Ctx *cx, const CompileOptions *co, Timer *tm, Compiled *out);
// The dims of function fi of the declared program p (or of every function, fi < 0):
// co->dims, then those co->inputs bind, each from the first input holding it alone, the
// others checked against it. 0, or EXIT_USAGE after a message on cx->diag_out.
int compile_bind_dims(Ctx *cx, const Program *p, const CompileOptions *co, int fi, SemaDims *dims);

// ============================================================================
// run.c — run and bench: inputs, one call or timed calls, outputs
// ============================================================================
// The packed caller of a function's entry: arguments and results as arrays.
typedef int (*RunFn)(const tdsl_tensor *const *args, tdsl_tensor *outs);

// Inputs from --in or seeded, then p called through its backend (o->backend).
int run_program(const Options *o, Ctx *cx, LProgram *p, Timer *tm);
// Calls fn, or tdsl_gpu_run on gpu when given, on ins: once with the outputs printed
// (run), or o->reps times with the timings printed (bench).
int run_call_and_report(const Options *o, const LProgram *p, const tdsl_tensor *ins, RunFn fn,
                        const tdsl_gpu_program *gpu, Timer *tm);

// Bytes every call of p must move: each parameter read once, each result written once.
int64_t run_program_bytes(const LProgram *p);
// Which threads run the calls, for bench's report: the runtime's pool, which both CPU
// backends run their parallel loops on (TDSL_NUM_THREADS, else the online CPUs); none
// on the GPU (0).
int run_threads(const char *backend);
// The warm-up calls before `reps` timed calls of `bench` and `bench --profile` (driver/run.c).
int bench_warmup(int reps);
// After warm-up call r (< 0), which took ms, with *warm_ms the warm-up's time before it:
// the r to go on from, -1 (the timed calls next) once the warm-up has taken WARM_CAP_MS
// (driver/run.c). Adds ms to *warm_ms.
int bench_warm_cut(int r, double ms, double *warm_ms);

// ============================================================================
// rss.c — resident memory (Linux's /proc/self; -1 or false elsewhere)
// ============================================================================
int64_t rss_now(void);      // the resident set now, in bytes
int64_t rss_peak(void);     // its peak since the start or the last rss_reset_peak
bool rss_reset_peak(void);  // the peak becomes the resident set now

// ============================================================================
// heap.c — the malloc heap of a compile: grown once, on huge pages (advice only)
// ============================================================================
void heap_prepare(void);

// ============================================================================
// cc.c, jit.c (with jit_load.c), gpu.c — the backends of run and bench
// ============================================================================
// p as C built by the system cc into a shared object and loaded: its packed caller.
int cc_build_and_load(Ctx *cx, LProgram *p, Timer *tm, RunFn *fn);
// p compiled into this process by LLVM's ORC JIT and called (--backend llvm).
int jit_run(const Options *o, Ctx *cx, LProgram *p, const tdsl_tensor *ins, Timer *tm);
#ifdef TDSLC_WITH_LLVM
// jit_load.c: p compiled by LLVM's ORC JIT into this process: its packed caller, valid
// until llvm_jit_close(cx, *jit).
const char *jit_load(Ctx *cx, LProgram *p, const LlvmOptions *lo, LlvmJit **jit, RunFn *fn);
#endif
// p's kernels as a PTX or CUDA C image, run by the runtime's tdsl_gpu_run (--target cuda).
int gpu_run(const Options *o, Ctx *cx, LProgram *p, const tdsl_tensor *ins, Timer *tm);
// The GPU the schedules of a run are for: --gpu-arch, else the device's, else NULL.
const char *gpu_sched_arch(Ctx *cx, const Options *o);

// ============================================================================
// outfile.c — output files written whole or not at all (-o, --plot)
// ============================================================================
typedef struct OutFile {
  FILE *fp;         // where to write: the temp file, the path itself, or stdout
  char *tmp;        // PATH.tmpPID renamed over the path by out_close; NULL when in place
  const char *path; // NULL: standard output
} OutFile;
// Opens path ("-" or NULL: standard output) for writing; false after printing why.
bool out_open(OutFile *of, const char *path);
// Closes it: kept (renamed into place) when keep and every write succeeded, else removed;
// false (after printing why) unless kept.
bool out_close(OutFile *of, bool keep);

// ============================================================================
// roofline.c, profile.c, roofline_svg.c — bench --profile: where the time of a call goes
// ============================================================================
// The machine's ceilings with `threads` threads: the peak FMA rate and the memory
// bandwidth (a copy of arrays larger than the last-level cache, bytes read + written).
typedef struct Roofline {
  double peak_f32, peak_f64;  // GFLOP/s
  double bandwidth;           // GB/s
  const char *source;         // "cached", "measured" or "TDSL_ROOFLINE"
  char cache[4096];           // the cache file ("" when none could be used)
  char when[32];              // when it was measured ("" for TDSL_ROOFLINE)
} Roofline;
// 0, or EXIT_USAGE after a message (a malformed TDSL_ROOFLINE). Measures (about a second)
// unless the cache holds this CPU and thread count or TDSL_ROOFLINE gives the numbers;
// `again` measures in any case (as TDSL_ROOFLINE=measure), keeping the better numbers.
int roofline_get(int threads, bool again, Roofline *r);

// One kernel of a profile: its share of the mean call and where it sits under the roofline.
typedef struct ProfKernel {
  int index;              // in the program (k<index>)
  const LKernel *k;
  int64_t flops, bytes;   // per run: graph_kernel_flops; the bytes it reads that an earlier
                          // kernel or the caller wrote, and writes that a later one or the
                          // caller reads (its own scratch not counted)
  double ms, share;       // mean per call; ms / the mean call
  double gflops, gbps, intensity;  // flops / bytes (0 without bytes)
  double roofline;        // achieved / attainable = max(GFLOP/s / peak, GB/s / bandwidth)
  bool f64;               // rated against the f64 peak
  bool compute_bound;     // its intensity is at or right of the ridge (peak / bandwidth)
  const char *schedule;   // in words: the builder's (a GEMM's tile), else kind, parallel loop, vector width
} ProfKernel;

typedef struct Profile {
  const LProgram *p;
  const char *backend;
  int threads, calls;  // calls: timed
  int averaged;        // the calls the times are the mean of: those no slower than the median
  double mean_ms, median_ms, min_ms, max_ms;
  double outside_ms;  // the mean call less its kernels: the entry's checks, allocation, freeing
  int64_t flops, bytes, kernel_bytes;  // the program's (as bench), and its kernels' bytes summed
  Roofline roof;
  int nk;
  ProfKernel *ks;  // in program order
} Profile;

// bench --profile: warm-up calls, then o->reps timed calls of a profiling build (p->profile)
// through fn, each kernel timed by the runtime's marks; prints the table (or --json) and
// writes --plot. 0, or an exit status after a message.
int profile_calls(const Options *o, const LProgram *p, const tdsl_tensor **args, RunFn fn);
// The roofline chart of pr as SVG at path, written whole or not at all. 0, or EXIT_USAGE
// after a message.
int roofline_svg(const Profile *pr, const char *path);

// ============================================================================
// paths.c — where tdsl.h and libtdslrt are: under an installed tdslc's prefix, else
// in the source and build trees this tdslc was built from
// ============================================================================
const char *paths_include_dir(void);
const char *paths_lib_dir(void);

#endif
