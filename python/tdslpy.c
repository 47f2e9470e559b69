// python/tdslpy.c: libtdslpy.so's C ABI (tdslpy.h) over the driver's pieces: a
// source text compiled by compile_fn (driver/compile.c) as `tdslc run` compiles
// it, then kept loaded by LLVM's JIT (driver/jit_load.c) until tdslpy_free; the
// emitted texts are made anew from the same text by the same calls as `tdslc
// --emit=KIND`. Diagnostics are collected from the Ctx's diag_out.
//
// Invariants: a tdslpy_fn owns its Ctx (the program, its names and the JIT's
// session errors live in its arena) and the JIT; the texts it returns are malloc'd.
#include "python/tdslpy.h"

#include "driver/driver.h"

#include <stdlib.h>
#include <string.h>

struct tdslpy_fn {
  Ctx cx;
  char *path, *text, *fn;  // NULL fn: the text's only function
  int opt;
  LProgram *p;
  LlvmJit *jit;
  RunFn run;
};

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

void tdslpy_free_text(char *text) { free(text); }

void tdslpy_free(tdslpy_fn *f) {
  if (!f)
    return;
  llvm_jit_close(&f->cx, f->jit);
  ctx_free(&f->cx);
  free(f->path);
  free(f->text);
  free(f->fn);
  free(f);
}

// compile_fn over f's text into cx, its messages into *diag (when non-NULL).
static int compile_text(Ctx *cx, const tdslpy_fn *f, CompileStage upto, bool graph_sched, Compiled *c, char **diag) {
  size_t n = 0;
  char *buf = NULL;
  FILE *msgs = open_memstream(&buf, &n);
  TD_ASSERT(msgs);
  cx->diag_out = msgs;
  Timer tm = {false, 0};
  CompileOptions co = {.file = f->path, .source = f->text, .fn = f->fn, .one_fn = true, .target = "cpu",
                       .upto = upto, .graph_sched = graph_sched};
  int rc = compile_fn(cx, &co, &tm, c);
  cx->diag_out = stderr;
  fclose(msgs);
  if (diag)
    *diag = buf;
  else
    free(buf);
  return rc;
}

tdslpy_fn *tdslpy_compile(const char *path, const char *text, const char *fn, int opt, char **diag, int *status) {
  *diag = NULL;
  *status = 0;
  tdslpy_fn *f = calloc(1, sizeof *f);
  TD_ASSERT(f);
  ctx_init(&f->cx);
  f->path = strdup(path);
  f->text = strdup(text);
  f->fn = dup_or_null(fn);
  f->opt = opt;
  Compiled c;
  int rc = compile_text(&f->cx, f, COMPILE_KERNELS, false, &c, diag);
  if (!rc) {
    f->p = c.lps[0];
    LlvmOptions lo = {.opt = opt};
    const char *err = jit_load(&f->cx, f->p, &lo, &f->jit, &f->run);
    if (err) {
      free(*diag);
      size_t n = strlen(err) + 32;
      *diag = malloc(n);
      snprintf(*diag, n, "tdslc: internal error: %s\n", err);
      rc = EXIT_INTERNAL;
    }
  }
  if (rc) {
    *status = rc;
    tdslpy_free(f);
    return NULL;
  }
  free(*diag);  // warnings only
  *diag = NULL;
  return f;
}

const char *tdslpy_name(const tdslpy_fn *f) { return f->p->name; }

int tdslpy_nparams(const tdslpy_fn *f) { return f->p->params.len; }

const char *tdslpy_param(const tdslpy_fn *f, int i, int *dtype, int *ndim, int64_t *shape, int *mut) {
  const LParam *q = &f->p->params.data[i];
  *dtype = (int)q->dtype;
  *ndim = q->ndim;
  memcpy(shape, q->shape, sizeof *shape * (size_t)q->ndim);
  *mut = q->mut;
  return q->name;
}

int tdslpy_noutputs(const tdslpy_fn *f) { return f->p->outputs.len; }

void tdslpy_output(const tdslpy_fn *f, int k, int *dtype, int *ndim, int64_t *shape) {
  const LOutput *o = &f->p->outputs.data[k];
  *dtype = (int)o->dtype;
  *ndim = o->view.ndim;
  memcpy(shape, o->view.shape, sizeof *shape * (size_t)o->view.ndim);
}

int tdslpy_call(const tdslpy_fn *f, const tdsl_tensor *const *args, tdsl_tensor *outs) {
  tdsl_clear_error();
  return f->run(args, outs);
}

char *tdslpy_emit(const tdslpy_fn *f, const char *kind) {
  bool ir = !strcmp(kind, "ir"), kernels = !strcmp(kind, "kernels"), c_src = !strcmp(kind, "c");
  if (!ir && !kernels && !c_src && strcmp(kind, "llvm") != 0)
    return NULL;
  Ctx cx;
  ctx_init(&cx);
  Compiled c;
  char *text = NULL;
  size_t n = 0;
  if (compile_text(&cx, f, ir ? COMPILE_GRAPH : COMPILE_KERNELS, ir, &c, NULL) == 0) {
    FILE *out = open_memstream(&text, &n);
    TD_ASSERT(out);
    const char *err = NULL;
    if (ir)
      graph_print(c.graph, out);
    else if (kernels)
      loop_print(c.lps[0], false, out);
    else if (c_src)
      target_c.emit(&cx, c.lps, c.nfns, out);
    else {
      LlvmOptions lo = {.opt = f->opt};
      err = llvm_emit(&cx, c.lps, c.nfns, &lo, LLVM_OUT_IR, out);
    }
    if (err)
      fprintf(out, "tdslc: internal error: %s\n", err);
    fclose(out);
  }
  ctx_free(&cx);
  return text;
}
