// driver/tdslc.c: main, and the compile mode. The command line (LANGUAGE.md §10) is
// parsed (options.c); the informational flags answer at once. Otherwise the file is
// compiled by compile_fn (compile.c) as far as the mode needs, then either the
// --emit kind is written (here: to -o, whole or not at all, or to standard output)
// or the function is run or benchmarked (run.c, with cc.c, jit.c or gpu.c).
// Exit status: 0 ok, 1 an error in the program, 2 a bad command line or input
// file, 3 a run-time data error, or no usable GPU (no driver, no device, a failed
// CUDA or NVRTC call: TDSL_ERR_GPU), 4 an internal error (td_internal_error).
#include "driver/driver.h"
#ifdef TDSLC_WITH_LLVM
#include "codegen/llvm.h"
#endif

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// ---- compile mode: the --emit kind ----
static int write_emit(Ctx *cx, const Options *o, Timer *tm) {
  bool llvm_kind = o->emit == EMIT_LLVM || o->emit == EMIT_ASM || o->emit == EMIT_OBJ;
  // The per-function kinds act on one function; C and the header on every function
  // of the file unless --fn names one.
  EmitKind k = o->emit;
  CompileOptions co = {.file = o->file, .fn = o->fn, .target = o->target, .cpu = o->cpu,
                       .gpu_arch = o->gpu_arch,
                       .one_fn = k == EMIT_IR || k == EMIT_KERNELS || k == EMIT_DOT,
                       .upto = k == EMIT_TOKENS                ? COMPILE_READ
                               : k == EMIT_AST                 ? COMPILE_PARSE
                               : k == EMIT_IR || k == EMIT_DOT ? COMPILE_GRAPH
                                                               : COMPILE_KERNELS,
                       .graph_sched = k == EMIT_IR, .c_source = k == EMIT_C, .dims = &o->dims};
#ifndef TDSLC_WITH_LLVM
  // Refused once the function is chosen (errors in the program come first).
  bool no_llvm = llvm_kind || k == EMIT_PTX;
  if (no_llvm)
    co.upto = COMPILE_CHECK;
#endif
  Compiled c;
  int rc = compile_fn(cx, &co, tm, &c);
  if (rc)
    return rc;
  if (k == EMIT_TOKENS) {
    parse_dump_tokens(cx, c.src, stdout);
    return cx->nerrors ? EXIT_PROGRAM : 0;
  }
#ifndef TDSLC_WITH_LLVM
  if (no_llvm)
    return usage_error("--emit=%s: this tdslc was built without LLVM (TDSLC_WITH_LLVM=OFF)", emit_kind_names[k]);
#endif
  OutFile of;
  if (!out_open(&of, o->out))
    return EXIT_USAGE;
  const char *err = NULL;  // an LLVM failure
  if (k == EMIT_AST)
    ast_dump(c.prog.ast, of.fp);
  else if (k == EMIT_IR && o->json)
    graph_print_json(c.graph, of.fp);
  else if (k == EMIT_IR)
    graph_print(c.graph, of.fp);
  else if (k == EMIT_DOT)
    graph_print_dot(c.graph, of.fp);
  else if (k == EMIT_KERNELS)
    loop_print(c.lps[0], o->full, of.fp);
  else if (k == EMIT_C)
    target_c.emit(cx, c.lps, c.nfns, of.fp);
  else if (k == EMIT_HEADER)
    emit_header(cx, c.lps, c.nfns, of.fp);
  else if (k == EMIT_CUDA)
    target_cuda.emit(cx, c.lps, c.nfns, of.fp);
#ifdef TDSLC_WITH_LLVM
  else if (k == EMIT_PTX)
    err = ptx_emit(cx, c.lps, c.nfns, o->gpu_arch ? o->gpu_arch : "sm_80", o->opt, of.fp);
  else if (llvm_kind) {
    LlvmOptions lo = {.opt = o->opt, .cpu = o->cpu, .lap = llvm_lap, .lap_ctx = tm};
    LlvmOut out = k == EMIT_LLVM ? LLVM_OUT_IR : k == EMIT_ASM ? LLVM_OUT_ASM : LLVM_OUT_OBJ;
    err = llvm_emit(cx, c.lps, c.nfns, &lo, out, of.fp);
  }
#endif
  if (err) {
    out_close(&of, false);
    return internal_error("%s", err);
  }
  if (k != EMIT_AST && !llvm_kind)  // llvm_emit lapped its own stages
    lap(tm, "emit");
  return out_close(&of, true) ? 0 : EXIT_USAGE;
}

// ---- TDSL_ALSO_EMIT_C: a run on LLVM also emits its file as C ----
// make test's sanitizer pass runs no program through cc (cc's work finds no bug in
// tdslc), so each program its LLVM runs compile is also emitted as C there, as
// `tdslc FILE --emit=c -o /dev/null` with the run's other flags would: in this process,
// which spares a second sanitized process start (about half of a small program's CPU
// there). What the emission prints is kept aside: a failure (not 0, nor 2: the
// command line's, such as a generic function's dims that run took from its --in files)
// shows it after "(the same program with --emit=c)" and is the exit status; a
// sanitizer's report during it is shown before the process dies.
static int stderr_saved = -1;
static FILE *stderr_log;

static void stderr_restore(bool show) {
  if (stderr_saved < 0)
    return;
  fflush(stderr);
  dup2(stderr_saved, STDERR_FILENO);
  close(stderr_saved);
  stderr_saved = -1;
  if (show) {
    fputs("(the same program with --emit=c) ", stderr);
    rewind(stderr_log);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, stderr_log)) > 0)
      fwrite(buf, 1, n, stderr);
  }
  fclose(stderr_log);
}

#if defined(__has_include)
#if __has_include(<sanitizer/common_interface_defs.h>) && defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define TDSL_DEATH_CALLBACK 1
static void on_sanitizer_death(void) { stderr_restore(true); }
#endif
#endif

static int also_emit_c(const Options *run) {
  Options o = *run;
  o.mode = MODE_COMPILE;
  o.emit = EMIT_C;
  o.out = "/dev/null";
  o.json = false;
  fflush(stdout);  // the run's results, whatever happens next
  fflush(stderr);
  stderr_log = tmpfile();
  stderr_saved = stderr_log ? dup(STDERR_FILENO) : -1;
  if (stderr_saved < 0 || dup2(fileno(stderr_log), STDERR_FILENO) < 0)
    return internal_error("TDSL_ALSO_EMIT_C: cannot keep --emit=c's messages aside: %s", strerror(errno));
#ifdef TDSL_DEATH_CALLBACK
  __sanitizer_set_death_callback(on_sanitizer_death);
#endif
  Ctx cx;
  ctx_init(&cx);
  cx.error_limit = o.error_limit;
  Timer tm = {o.time, now_ms()};
  int rc = write_emit(&cx, &o, &tm);
  ctx_free(&cx);
  bool failed = rc != 0 && rc != EXIT_USAGE;
  stderr_restore(failed);
  return failed ? rc : 0;
}

// ---- run and bench: one function, compiled to scheduled kernels ----
static int run_or_bench(Ctx *cx, const Options *o, Timer *tm) {
  CompileOptions co = {.file = o->file, .fn = o->fn, .one_fn = true, .target = o->target, .cpu = o->cpu,
                       .gpu_arch = strcmp(o->target, "cuda") == 0 ? gpu_sched_arch(cx, o) : o->gpu_arch,
                       .upto = COMPILE_KERNELS, .time_kernels = true, .dims = &o->dims,
                       .c_source = strcmp(o->backend, "c") == 0,
                       .inputs = o->inputs, .ninputs = o->mode == MODE_RUN ? o->ninputs : 0};
  Compiled c;
  int rc = compile_fn(cx, &co, tm, &c);
  return rc ? rc : run_program(o, cx, c.lps[0], tm);
}

int main(int argc, char **argv) {
  if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
    options_print_help();
    return 0;
  }
  if (argc == 2 && !strcmp(argv[1], "--version")) {
    puts("tdslc " TDSLC_VERSION);
    return 0;
  }
  if (argc == 2 && !strcmp(argv[1], "--print-include-dir")) {
    puts(paths_include_dir());
    return 0;
  }
  if (argc == 2 && !strcmp(argv[1], "--print-lib-dir")) {
    puts(paths_lib_dir());
    return 0;
  }
  Options o;
  int rc = options_parse(argc, argv, &o);
  if (rc == 0 && (o.list_cpus || o.list_gpus)) {
    if (o.list_cpus)
      options_print_cpus(stdout);
    if (o.list_gpus)
      options_print_gpus(stdout);
  } else if (rc == 0) {
    if (o.mode == MODE_COMPILE)  // (run and bench: the program's own heap stays glibc's default)
      heap_prepare();
    Ctx cx;
    ctx_init(&cx);
    cx.error_limit = o.error_limit;
    Timer tm = {o.time, now_ms()};
    rc = o.mode == MODE_COMPILE ? write_emit(&cx, &o, &tm) : run_or_bench(&cx, &o, &tm);
    ctx_free(&cx);
    const char *also = getenv("TDSL_ALSO_EMIT_C");
    if (rc == 0 && o.mode == MODE_RUN && also && *also && !strcmp(o.target, "cpu") && !strcmp(o.backend, "llvm"))
      rc = also_emit_c(&o);
  }
  options_free(&o);
  return rc;
}
