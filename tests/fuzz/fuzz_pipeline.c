// tests/fuzz/fuzz_pipeline.c: the libFuzzer target over tdslc's whole pipeline. Each
// input is a .tdsl file, compiled as `tdslc` would (driver/compile.c's compile_fn:
// read, parse, sema, lower, fuse, kernels with their CPU schedules) and emitted as C
// and LLVM IR, then compiled again for --target cuda and emitted as CUDA C and PTX.
// Besides the sanitizers' findings and tdslc's internal errors (which exit: libFuzzer
// reports the exit), two outcomes are bugs: a stage that fails without a diagnostic,
// and a diagnostic not located as "fuzz.tdsl:LINE:COL: error: " (but the two about the
// whole file: the error limit reached, and a file that is not UTF-8 text).
#include "driver/driver.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[64];  // the input, written where compile_fn reads it

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  snprintf(path, sizeof path, "/tmp/tdsl-fuzz-%d.tdsl", (int)getpid());
  return 0;
}

// Every line of the diagnostics that names an error is located in the input.
static void check_diagnostics(const char *text, int nerrors, int status) {
  if (status == EXIT_PROGRAM && nerrors == 0) {
    fprintf(stderr, "tdsl fuzz: a stage failed without a diagnostic\n");
    abort();
  }
  for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    const char *e = strstr(l, ": error: "), *nl = strchr(l, '\n');
    if (!e || (nl && e > nl) || *l == ' ')  // the quoted source line is indented
      continue;
    // The two reports about the whole file: the error limit reached, and a file that
    // is not UTF-8 text (refused before any stage reads it).
    const char *not_text = strstr(l, "' is not UTF-8 text: ");
    if (strncmp(l, "tdslc: error: too many errors emitted, stopping now", 51) == 0 ||
        (strncmp(l, "tdslc: error: '", 15) == 0 && not_text && (!nl || not_text < nl)))
      continue;
    int line, col, n = 0;
    if (sscanf(l, "%*[^:]:%d:%d: error: %n", &line, &col, &n) != 2 || n == 0 || line < 1 || col < 1 ||
        strncmp(l, path, strlen(path)) != 0) {
      fprintf(stderr, "tdsl fuzz: a diagnostic without file:line:col:\n%.*s\n", nl ? (int)(nl - l) : 200, l);
      abort();
    }
  }
}

// What --emit=tokens, ast, ir, dot, kernels and header print of c, as far as the
// compile got (the tokens and the AST once, with the CPU compile).
static void print_views(Ctx *cx, const Compiled *c, int status, bool cpu, FILE *sink) {
  if (cpu && c->src && cx->nerrors == 0)
    parse_dump_tokens(cx, c->src, sink);
  if (cpu && c->prog.ast)
    ast_dump(c->prog.ast, sink);
  if (status != 0)
    return;
  if (c->graph) {
    graph_print(c->graph, sink);
    graph_print_json(c->graph, sink);
    graph_print_dot(c->graph, sink);
  }
  for (int i = 0; i < c->nfns; i++) {
    loop_print(c->lps[i], false, sink);
    loop_print(c->lps[i], true, sink);
  }
  emit_header(cx, c->lps, c->nfns, sink);
}

static void compile_and_emit(const char *target) {
  Ctx cx;
  ctx_init(&cx);
  char *diag = NULL;
  size_t ndiag = 0;
  cx.diag_out = open_memstream(&diag, &ndiag);
  CompileOptions co = {.file = path, .target = target, .cpu = "x86-64-v3", .upto = COMPILE_KERNELS};
  Compiled c;
  Timer tm = {0};
  int status = compile_fn(&cx, &co, &tm, &c);
  FILE *sink = fopen("/dev/null", "w");
  bool cpu = strcmp(target, "cpu") == 0;
  print_views(&cx, &c, status, cpu, sink);
  if (status == 0 && cpu) {
    target_c.emit(&cx, c.lps, c.nfns, sink);
#ifdef TDSLC_WITH_LLVM
    target_llvm.emit(&cx, c.lps, c.nfns, sink);
#endif
  } else if (status == 0) {
    target_cuda.emit(&cx, c.lps, c.nfns, sink);
#ifdef TDSLC_WITH_LLVM
    ptx_emit(&cx, c.lps, c.nfns, "sm_80", 2, sink);
#endif
  }
  fclose(sink);
  fclose(cx.diag_out);
  check_diagnostics(diag, cx.nerrors, status);
  free(diag);
  ctx_free(&cx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FILE *f = fopen(path, "wb");
  if (!f)
    return 0;
  fwrite(data, 1, size, f);
  fclose(f);
  compile_and_emit("cpu");
  compile_and_emit("cuda");
  return 0;
}
