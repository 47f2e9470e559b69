// python/tdslpy.c: libtdslpy.so's C ABI (tdslpy.h) over the driver's pieces: a
// source text compiled by compile_fn (driver/compile.c) as `tdslc run` compiles
// it, then kept loaded by LLVM's JIT (driver/jit_load.c) until tdslpy_free; the
// emitted texts are made anew from the same text by the same calls as `tdslc
// --emit=KIND`. Diagnostics are collected from the Ctx's diag_out.
//
// A generic function (dims written as names) whose dims the caller leaves unbound is
// only declared (parsed, sema_declare): a tdslpy_fn without a program, whose
// signature is read from its declaration and whose dims tdslpy_bind binds from a
// call's shapes through compile_bind_dims, the check `tdslc run` makes of its --in
// files. The package then compiles that binding as a tdslpy_fn of its own.
//
// Invariants: a tdslpy_fn owns its Ctx (the program, its names and the JIT's
// session errors live in its arena), its bound dims' names and the JIT; p is NULL
// exactly when some dim of the function is unbound; the texts it returns are malloc'd.
#include "python/tdslpy.h"

#include "driver/driver.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct tdslpy_fn {
  Ctx cx;
  char *path, *text, *fn;  // NULL fn: the text's only function
  int opt;
  SemaDims dims;  // the dims given (names malloc'd); all of the function's when p is set
  Program prog;   // declared (generic), or the compiled program's
  const Ast *decl;  // the function's declaration in prog
  int fi;           // its index in prog
  LProgram *p;      // NULL: generic, some dim unbound
  LlvmJit *jit;
  RunFn run;
};

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

void tdslpy_free_text(char *text) { free(text); }

void tdslpy_free(tdslpy_fn *f) {
  if (!f)
    return;
  if (f->jit)
    llvm_jit_close(&f->cx, f->jit);
  ctx_free(&f->cx);
  for (int j = 0; j < f->dims.n; j++)
    free((char *)f->dims.names[j]);
  free(f->path);
  free(f->text);
  free(f->fn);
  free(f);
}

// The messages written to cx->diag_out while `msgs` is open: begin, then end.
static FILE *collect_begin(Ctx *cx, char **buf, size_t *n) {
  *buf = NULL;
  FILE *msgs = open_memstream(buf, n);
  TD_ASSERT(msgs);
  cx->diag_out = msgs;
  return msgs;
}

static void collect_end(Ctx *cx, FILE *msgs, char **buf, char **diag) {
  cx->diag_out = stderr;
  fclose(msgs);  // sets *buf
  if (diag)
    *diag = *buf;
  else
    free(*buf);
}

// compile_fn over f's text (with f's dims) into cx, its messages into *diag (when non-NULL).
static int compile_text(Ctx *cx, const tdslpy_fn *f, CompileStage upto, bool graph_sched, Compiled *c, char **diag) {
  size_t n = 0;
  char *buf;
  FILE *msgs = collect_begin(cx, &buf, &n);
  Timer tm = {false, 0};
  CompileOptions co = {.file = f->path, .source = f->text, .fn = f->fn, .one_fn = true, .target = "cpu",
                       .upto = upto, .graph_sched = graph_sched, .dims = &f->dims};
  int rc = compile_fn(cx, &co, &tm, c);
  collect_end(cx, msgs, &buf, diag);
  return rc;
}

// f's function declared in f->cx (parsed, sema_declare'd), without messages: true
// with f->prog, f->decl and f->fi set when the text declares it without errors.
static bool declare(tdslpy_fn *f) {
  Compiled c;
  if (compile_text(&f->cx, f, COMPILE_PARSE, false, &c, NULL) != 0)
    return false;
  f->prog = c.prog;
  size_t n;
  char *buf;
  FILE *msgs = collect_begin(&f->cx, &buf, &n);
  bool ok = sema_declare(&f->cx, &f->prog) && !f->cx.nerrors;
  collect_end(&f->cx, msgs, &buf, NULL);
  f->fi = !ok ? -1 : f->fn ? sema_fn_index(&f->prog, f->fn) : f->prog.fns.len == 1 ? 0 : -1;
  f->decl = f->fi >= 0 ? f->prog.fns.data[f->fi] : NULL;
  return f->decl != NULL;
}

tdslpy_fn *tdslpy_compile(const char *path, const char *text, const char *fn, int opt, const char *const *dim_names,
                          const int64_t *dim_values, int ndims, char **diag, int *status) {
  *diag = NULL;
  *status = 0;
  tdslpy_fn *f = calloc(1, sizeof *f);
  TD_ASSERT(f);
  ctx_init(&f->cx);
  f->path = strdup(path);
  f->text = strdup(text);
  f->fn = dup_or_null(fn);
  f->opt = opt;
  for (int j = 0; j < ndims && j < TD_MAX_DIMVARS; j++) {
    f->dims.names[j] = strdup(dim_names[j]);
    f->dims.values[f->dims.n++] = dim_values[j];
  }
  // A generic function with a dim left unbound stays declared, as tdslc leaves it unchecked.
  if (declare(f)) {
    const FnSig *sig = &f->prog.sigs[f->fi];
    bool unbound = false;
    for (int k = 0; k < sig->ndims; k++)
      unbound |= sema_dims_find(&f->dims, sig->dims[k]) < 0;
    if (unbound)
      return f;
  }
  // Anything else is compiled afresh, with tdslc's messages for what goes wrong.
  ctx_free(&f->cx);
  ctx_init(&f->cx);
  Compiled c;
  int rc = compile_text(&f->cx, f, COMPILE_KERNELS, false, &c, diag);
  if (!rc) {
    f->prog = c.prog;
    f->decl = c.fn;
    f->fi = sema_fn_index(&c.prog, c.fn->name);
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

const char *tdslpy_name(const tdslpy_fn *f) { return f->decl->name; }

int tdslpy_generic(const tdslpy_fn *f) { return !f->p; }

// ---- the signature: the compiled program's, or the declaration's ----
int tdslpy_nparams(const tdslpy_fn *f) { return f->decl->list.len; }

int tdslpy_noutputs(const tdslpy_fn *f) { return f->p ? f->p->outputs.len : f->decl->rets.len; }

static const char *type_dtype(const Ast *t) {
  if (t->kind == AST_SCALAR_TYPE)
    return t->name;
  return t->dtype == DT_COUNT ? t->name : dtype_name(t->dtype);
}

const char *tdslpy_param(const tdslpy_fn *f, int i, const char **dtype, int *ndim, int *mut, int *scalar) {
  const Ast *q = f->decl->list.data[i];
  *dtype = type_dtype(q->type);
  *ndim = q->type->kind == AST_TYPE ? q->type->list.len : 0;
  *mut = q->mut;
  *scalar = q->type->kind == AST_SCALAR_TYPE;
  if (f->p) {
    const LParam *lq = &f->p->params.data[i];
    *dtype = lq->scalar ? type_dtype(q->type) : dtype_name(lq->dtype);
    *ndim = lq->ndim;
  }
  if (*scalar && !*dtype) {  // none written (scale=0.5): the kind of its default, as sema takes it
    const TType *t = q->rhs ? q->rhs->ty : NULL;
    bool b = t ? t->dtype == DT_BOOL : q->rhs && q->rhs->kind == AST_BOOL;
    bool n = t ? t->dtype == DT_I64 : q->rhs && q->rhs->kind == AST_INT;
    *dtype = b ? "bool" : n ? "int" : "float";
  }
  return q->name;
}

// The default value of parameter i as its source text (`eps: float = 1e-6`: "1e-6"), or
// NULL when it has none; malloc'd, freed with tdslpy_free_text.
char *tdslpy_param_default(const tdslpy_fn *f, int i) {
  const Ast *q = f->decl->list.data[i];
  if (!q->rhs || !f->text || q->rhs->loc.end <= q->rhs->loc.begin || q->rhs->loc.end > strlen(f->text)) return NULL;
  return strndup(f->text + q->rhs->loc.begin, q->rhs->loc.end - q->rhs->loc.begin);
}

const char *tdslpy_output(const tdslpy_fn *f, int k, int *ndim) {
  if (f->p) {
    const LOutput *o = &f->p->outputs.data[k];
    *ndim = o->view.ndim - (dtype_is_complex(o->dtype) ? 1 : 0);  // a complex result's pairs
    return dtype_name(o->dtype);
  }
  const Ast *t = f->decl->rets.data[k];
  *ndim = t->kind == AST_TYPE ? t->list.len : 0;
  return type_dtype(t);
}

// Dim d of type t as written: the name, the expression's text, or the literal's value.
static const char *written_dim(Ctx *cx, const Ast *t, int d, int64_t *size) {
  const Ast *e = t->list.data[d];
  *size = e->ival;
  if (e->kind == AST_INT)
    return NULL;
  if (e->kind == AST_NAME || !e->loc.file)
    return e->name ? e->name : "?";
  return arena_strndup(&cx->arena, e->loc.file->text + e->loc.begin, (size_t)(e->loc.end - e->loc.begin));
}

const char *tdslpy_dim(tdslpy_fn *f, int i, int d, int64_t *size) {
  int np = f->decl->list.len;
  if (f->p) {
    *size = i < np ? f->p->params.data[i].shape[d] : f->p->outputs.data[i - np].view.shape[d];
    return NULL;
  }
  return written_dim(&f->cx, i < np ? f->decl->list.data[i]->type : f->decl->rets.data[i - np], d, size);
}

int tdslpy_ndimvars(const tdslpy_fn *f) { return f->prog.sigs[f->fi].ndims; }

const char *tdslpy_dimvar(const tdslpy_fn *f, int k, int64_t *value) {
  const FnSig *sig = &f->prog.sigs[f->fi];
  *value = -1;
  if (f->p)
    *value = sig->values[k];
  int j = sema_dims_find(&f->dims, sig->dims[k]);
  if (j >= 0)
    *value = f->dims.values[j];
  return sig->dims[k];
}

// ---- binding a generic function's dims from a call's shapes ----
// "f32[N, D]": parameter q's type as written.
static const char *written_type(Ctx *cx, const Ast *q) {
  const char *s = arena_printf(&cx->arena, "%s[", type_dtype(q->type));
  for (int d = 0; d < q->type->list.len; d++) {
    int64_t size;
    const char *txt = written_dim(cx, q->type, d, &size);
    s = txt ? arena_printf(&cx->arena, "%s%s%s", s, d ? ", " : "", txt)
            : arena_printf(&cx->arena, "%s%s%" PRId64, s, d ? ", " : "", size);
  }
  return arena_printf(&cx->arena, "%s]", s);
}

int tdslpy_bind(tdslpy_fn *f, const int *ndims, const int64_t *shapes, int64_t *values, char **diag) {
  *diag = NULL;
  const Ast *fn = f->decl;
  const FnSig *sig = &f->prog.sigs[f->fi];
  Ctx *cx = &f->cx;
  int np = fn->list.len;
  Input *ins = arena_alloc(&cx->arena, sizeof *ins * (size_t)(np + 1));
  int nin = 0;
  for (int j = 0; j < np; j++) {
    const Ast *q = fn->list.data[j];
    if (q->type->kind != AST_TYPE || ndims[j] < 0)
      continue;
    const int64_t *shape = shapes + (size_t)j * TDSL_MAX_DIMS;
    if (ndims[j] != q->type->list.len) {  // the rank first, as sema does for a helper's arguments
      const char *s = "";
      for (int a = 0; a < ndims[j]; a++)
        s = a < TDSL_MAX_DIMS ? arena_printf(&cx->arena, "%s%s%" PRId64, s, a ? ", " : "", shape[a]) : s;
      char *msg = NULL;
      size_t n;
      FILE *out = open_memstream(&msg, &n);
      TD_ASSERT(out);
      fprintf(out, "tdslc: error: argument '%s' of '%s' must be %s, not a tensor of %d dim%s [%s%s]", q->name, fn->name,
              written_type(cx, q), ndims[j], ndims[j] == 1 ? "" : "s", s, ndims[j] > TDSL_MAX_DIMS ? ", ..." : "");
      fclose(out);
      *diag = msg;
      return EXIT_USAGE;
    }
    ins[nin++] = (Input){.name = q->name, .ndim = ndims[j], .shape = shape};
  }
  CompileOptions co = {.file = f->path, .fn = fn->name, .dims = &f->dims, .inputs = ins, .ninputs = nin,
                       .in_memory = true};
  SemaDims dims;
  size_t n;
  char *buf;
  FILE *msgs = collect_begin(cx, &buf, &n);
  int rc = compile_bind_dims(cx, &f->prog, &co, f->fi, &dims);
  collect_end(cx, msgs, &buf, diag);
  if (rc)
    return rc;
  free(*diag);
  *diag = NULL;
  for (int k = 0; k < sig->ndims; k++) {
    int j = sema_dims_find(&dims, sig->dims[k]);
    values[k] = j >= 0 ? dims.values[j] : -1;
  }
  return 0;
}

// ---- calls and texts of a compiled function ----
int tdslpy_call(const tdslpy_fn *f, const tdsl_tensor *const *args, tdsl_tensor *outs) {
  tdsl_clear_error();
  if (!f->p) {
    tdsl_set_error("%s: its dims are unbound", f->decl->name);
    return TDSL_ERR_ARG;
  }
  return f->run(args, outs);
}

char *tdslpy_emit(const tdslpy_fn *f, const char *kind) {
  bool ir = !strcmp(kind, "ir"), kernels = !strcmp(kind, "kernels"), c_src = !strcmp(kind, "c");
  if ((!ir && !kernels && !c_src && strcmp(kind, "llvm") != 0) || !f->p)
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
