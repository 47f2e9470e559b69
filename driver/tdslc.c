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
  }
  options_free(&o);
  return rc;
}
