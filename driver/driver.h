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
  bool full;  // --full: --emit=kernels prints every statement (no folding)
  bool list_cpus, list_gpus;  // --cpu=help, --gpu-arch=help: print the names, do nothing else
  int error_limit;            // -ferror-limit=N (Ctx.error_limit; 0: none)
  uint64_t seed;
  int reps;
  Input inputs[OPT_MAX_INPUTS];
  int ninputs;
  SemaDims dims;  // --dim NAME=SIZE (names malloc'd)
  Arg args[OPT_MAX_INPUTS];  // --arg NAME=VALUE
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
// paths.c — where tdsl.h and libtdslrt are: under an installed tdslc's prefix, else
// in the source and build trees this tdslc was built from
// ============================================================================
const char *paths_include_dir(void);
const char *paths_lib_dir(void);

#endif
