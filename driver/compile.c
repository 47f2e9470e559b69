// driver/compile.c: compile_fn, the one way every --emit kind, run and bench go from
// a file (and --fn) to the compiled program. A flat list of stages, each followed by
// a --time lap: read, parse, sema (the last that reports errors in the program: the
// driver stops after it if there were any), choosing the function, then for each
// function lower and fuse, and build the kernels with their CPU schedules (on
// --target cuda, the GPU schedule instead). The caller says how far to go (CompileStage).
#include "driver/driver.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

// ---- choosing the function ----
static void list_fns(const Program *p, FILE *out) {
  for (int i = 0; i < p->fns.len; i++)
    fprintf(out, "%s%s", i ? ", " : "", p->fns.data[i]->name);
}

// The function the per-function kinds and run act on; NULL (after a message) if none.
static const Ast *pick_fn(Ctx *cx, const Program *p, const CompileOptions *co) {
  FILE *out = cx->diag_out;  // stderr, unless the caller collects the messages
  if (co->fn) {
    const Ast *fn = sema_find_fn(p, co->fn);
    if (!fn) {
      fprintf(out, "tdslc: error: no function '%s' in %s (it has: ", co->fn, co->file);
      list_fns(p, out);
      fputs(")\n", out);
    }
    return fn;
  }
  if (p->fns.len == 1)
    return p->fns.data[0];
  if (p->fns.len == 0)
    fprintf(out, "tdslc: error: %s defines no function\n", co->file);
  else {
    fprintf(out, "tdslc: error: %s defines several functions; choose one with --fn (", co->file);
    list_fns(p, out);
    fputs(")\n", out);
  }
  return NULL;
}

// ---- dims of generic functions: --dim, the shapes of run's --in files or of a call's arguments ----
// "N, D": the dims of sig that dims leaves unbound (all of them when any is).
static const char *unbound_dims(Ctx *cx, const FnSig *sig, const SemaDims *dims, bool hint) {
  const char *s = "";
  for (int k = 0; k < sig->ndims; k++) {
    if (sema_dims_find(dims, sig->dims[k]) < 0)
      s = hint ? arena_printf(&cx->arena, "%s%s--dim %s=...", s, *s ? " " : "", sig->dims[k])
               : arena_printf(&cx->arena, "%s%s%s", s, *s ? ", " : "", sig->dims[k]);
  }
  return s;
}

// The function --fn names, or the file's only one: NULL, silently, when there is none.
static int chosen_fn(const Program *p, const CompileOptions *co) {
  if (co->fn)
    return sema_fn_index(p, co->fn);
  return p->fns.len == 1 ? 0 : -1;
}

// A usage error on cx->diag_out (stderr for tdslc; the Python package collects it).
TD_PRINTF(2, 3) static int dims_error(Ctx *cx, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("tdslc: error: ", cx->diag_out);
  vfprintf(cx->diag_out, fmt, ap);
  fputc('\n', cx->diag_out);
  va_end(ap);
  return EXIT_USAGE;
}

// dims: --dim's values, then those the --in files of run (or a call's arguments in
// memory) bind for function fi (each dim from the first input holding it alone,
// consistency checked). EXIT_USAGE after a message for a --dim no function has, or an
// input that disagrees.
int compile_bind_dims(Ctx *cx, const Program *p, const CompileOptions *co, int fi, SemaDims *dims) {
  *dims = co->dims ? *co->dims : (SemaDims){0};
  const char *from[TD_MAX_DIMVARS] = {0};
  for (int j = 0; j < dims->n; j++) {
    from[j] = co->in_memory ? "dims" : arena_printf(&cx->arena, "--dim %s=%" PRId64, dims->names[j], dims->values[j]);
    bool known = false;
    for (int i = 0; i < p->fns.len && !known; i++) {
      if (fi >= 0 && i != fi)
        continue;
      for (int k = 0; k < p->sigs[i].ndims; k++)
        known |= strcmp(p->sigs[i].dims[k], dims->names[j]) == 0;
    }
    if (!known) {
      if (fi >= 0)
        return dims_error(cx, "--dim %s: function '%s' has no dim '%s'", dims->names[j], p->fns.data[fi]->name,
                          dims->names[j]);
      return dims_error(cx, "--dim %s: no function of %s has a dim '%s'", dims->names[j], co->file, dims->names[j]);
    }
  }
  if (fi < 0 || !co->ninputs)
    return 0;
  const Ast *fn = p->fns.data[fi];
  const FnSig *sig = &p->sigs[fi];
  for (int j = 0; j < fn->list.len; j++) {
    const Ast *prm = fn->list.data[j];
    const Input *in = NULL;
    for (int i = 0; i < co->ninputs; i++)
      if (strcmp(co->inputs[i].name, prm->name) == 0)
        in = &co->inputs[i];
    bool any = false;
    for (int a = 0; a < TD_MAX_DIMS && prm->type->kind == AST_TYPE; a++)
      any |= a < prm->type->list.len && sig->bare[j * TD_MAX_DIMS + a] >= 0;
    if (!in || !any)
      continue;
    int ndim;
    int64_t shape[TDSL_MAX_DIMS] = {0};
    if (co->in_memory) {
      ndim = in->ndim;
      memcpy(shape, in->shape, sizeof *shape * (size_t)(ndim < TDSL_MAX_DIMS ? ndim : TDSL_MAX_DIMS));
    } else {
      tdsl_tensor t;
      if (tdsl_load_npy(in->path, &t) != 0)
        return dims_error(cx, "--in %s=%s: %s", prm->name, in->path, tdsl_last_error());
      ndim = t.ndim;
      memcpy(shape, t.shape, sizeof shape);
      tdsl_tensor_release(&t);
    }
    if (ndim != prm->type->list.len)
      continue;  // run (or the entry) reports the input's shape against the parameter's
    for (int a = 0; a < ndim; a++) {
      int k = sig->bare[j * TD_MAX_DIMS + a];
      if (k < 0)
        continue;
      int d = sema_dims_find(dims, sig->dims[k]);
      if (d >= 0 && dims->values[d] != shape[a]) {
        if (co->in_memory)  // sema's words for a helper's arguments
          return dims_error(cx, "argument '%s' of '%s' has size %" PRId64 " at dim %d but %s is %" PRId64 " from %s",
                            prm->name, fn->name, shape[a], a, sig->dims[k], dims->values[d], from[d]);
        return dims_error(cx, "--in %s=%s: '%s' has size %" PRId64 " at dim %d but %s is %" PRId64 " from %s",
                          prm->name, in->path, prm->name, shape[a], a, sig->dims[k], dims->values[d], from[d]);
      }
      if (d < 0 && dims->n < TD_MAX_DIMVARS) {
        from[dims->n] = co->in_memory ? arena_printf(&cx->arena, "'%s'", prm->name)
                                      : arena_printf(&cx->arena, "--in %s=%s", prm->name, in->path);
        dims->names[dims->n] = sig->dims[k];
        dims->values[dims->n++] = shape[a];
      }
    }
  }
  return 0;
}

// "N=4, D=8": the dims a generic function was compiled for.
static const char *bound_text(Ctx *cx, const FnSig *sig) {
  if (!sig->ndims)
    return NULL;
  const char *s = "";
  for (int k = 0; k < sig->ndims; k++)
    s = arena_printf(&cx->arena, "%s%s%s=%" PRId64, s, k ? ", " : "", sig->dims[k], sig->values[k]);
  return s;
}

int compile_fn(Ctx *cx, const CompileOptions *co, Timer *tm, Compiled *out) {
  *out = (Compiled){0};
  out->src = co->source ? srcfile_from_string(cx, co->file, co->source, strlen(co->source)) : srcfile_read(cx, co->file);
  if (!out->src)
    return EXIT_USAGE;
  lap(tm, "read");
  if (co->upto == COMPILE_READ)
    return 0;
  out->prog.ast = parse_program(cx, out->src);
  lap(tm, "parse");
  if (cx->nerrors || !out->prog.ast)
    return EXIT_PROGRAM;
  if (co->upto == COMPILE_PARSE)
    return 0;
  Program *p = &out->prog;
  p->entry = co->fn;  // checked as the entry point even when another function calls it
  bool ok = sema_declare(cx, p);
  SemaDims dims = {0};
  if (ok && co->one_fn && !co->fn && p->fns.len == 1)
    p->entry = p->fns.data[0]->name;  // the one function: the entry point (a helper there says why it is not)
  int rc = ok ? compile_bind_dims(cx, p, co, chosen_fn(p, co), &dims) : 0;
  if (rc)
    return rc;
  ok = sema_check_fns(cx, p, &dims) && ok;
  lap(tm, "sema");
  if (!ok || cx->nerrors)
    return EXIT_PROGRAM;
  if (co->one_fn || co->fn) {
    if (!(out->fn = pick_fn(cx, p, co)))
      return EXIT_USAGE;
    const FnSig *sig = &p->sigs[sema_fn_index(p, out->fn->name)];
    if (!sig->checked)
      return usage_error("function '%s' has unbound dims %s: give %s", out->fn->name,
                         unbound_dims(cx, sig, &dims, false), unbound_dims(cx, sig, &dims, true));
  }
  if (co->upto == COMPILE_CHECK)
    return 0;
  // The functions to lower: the chosen one, else each checked one (a generic function
  // nothing bound is skipped with a note; none left is an error).
  const Ast **fns = arena_alloc(&cx->arena, sizeof *fns * (size_t)(p->fns.len + 1));
  const FnSig **sigs = arena_alloc(&cx->arena, sizeof *sigs * (size_t)(p->fns.len + 1));
  int ngeneric = 0;
  for (int i = 0; i < p->fns.len; i++) {
    const Ast *f = p->fns.data[i];
    if (out->fn && f != out->fn)
      continue;
    if (p->sigs[i].helper_only) {
      if (p->sigs[i].caller)
        fprintf(cx->diag_out, "tdslc: note: skipping '%s': a helper of '%s' that compiles only where it is called "
                "(tdslc --fn %s says why it does not compile alone)\n", f->name, p->sigs[i].caller, f->name);
      else
        fprintf(cx->diag_out, "tdslc: note: skipping '%s': a helper as Python writes it (an untyped parameter, or a "
                "result without an arrow) compiles only where it is called (tdslc --fn %s says why)\n", f->name,
                f->name);
      continue;
    }
    if (!p->sigs[i].checked) {
      ngeneric++;
      fprintf(cx->diag_out, "tdslc: note: skipping generic function '%s': dims %s are unbound (give %s)\n", f->name,
              unbound_dims(cx, &p->sigs[i], &dims, false), unbound_dims(cx, &p->sigs[i], &dims, true));
      continue;
    }
    sigs[out->nfns] = &p->sigs[i];
    fns[out->nfns++] = f;
  }
  if (!out->nfns && p->fns.len && ngeneric)
    return usage_error("%s: every function is generic and unbound: give its dims with --dim NAME=SIZE", co->file);
  if (!out->nfns && p->fns.len)  // (helpers only: the notes above say why each is one)
    return usage_error("%s: no entry point: every function is a helper that compiles only where another calls it",
                       co->file);
  // A file without functions compiles, as an empty module does in Python and an empty
  // translation unit in C: the output names the file and declares nothing. Almost
  // surely not what was meant, so it is said.
  if (!p->fns.len && co->upto >= COMPILE_KERNELS)
    fprintf(cx->diag_out, "tdslc: warning: %s defines no function: the output declares none\n", co->file);

  // The CPU the schedules are for: --cpu, else the host (cuda: none).
  bool cpu_prog = strcmp(co->target, "cpu") == 0;
  CpuTarget cpu = cpu_target(co->cpu);
  cpu.c_source = co->c_source;
  out->lps = arena_alloc(&cx->arena, sizeof *out->lps * (size_t)(out->nfns ? out->nfns : 1));
  for (int i = 0; i < out->nfns; i++) {
    Graph *g = lower_fn(cx, p, fns[i], cpu_prog);
    fuse_graph(g);
    out->graph = g;
    if (co->time_kernels)
      lap(tm, "lower");
    if (co->upto == COMPILE_GRAPH) {
      // --emit=ir names the schedule each kernel gets on the CPU (a matmul's tile)
      if (co->graph_sched && cpu_prog) {
        LProgram *lp = kernel_build(cx, g, &cpu);
        g->sched = arena_alloc(&cx->arena, sizeof *g->sched * (size_t)(lp->kernels.len + 1));
        for (int k = 0; k < lp->kernels.len; k++)
          g->sched[k] = lp->kernels.data[k]->sched;
      }
      continue;
    }
    LProgram *lp = kernel_build(cx, g, cpu_prog ? &cpu : NULL);
    lp->flops = graph_flops(g);
    int64_t *kflops = arena_alloc(&cx->arena, sizeof *kflops * (size_t)(g->nkernels + 1));
    graph_kernel_flops(g, kflops);  // 1:1 with lp's kernels (kernel_build: one per graph kernel)
    for (int k = 0; k < lp->kernels.len && k < g->nkernels; k++)
      lp->kernels.data[k]->flops = kflops[k];
    lp->bound = bound_text(cx, sigs[i]);
    if (cpu_prog) {
      sched_cpu(cx, lp, &cpu);
      share_kernels(cx, lp);
    } else {  // the GPU schedule is decided once for kernels with the same code
      share_kernels(cx, lp);
      GpuTarget gt = gpu_target(co->gpu_arch);
      sched_gpu(cx, lp, &gt);
      loop_verify(lp);  // the GPU form (ir/loop.h) as every backend takes it
    }
    out->lps[i] = lp;
  }
  lap(tm, co->time_kernels ? "kernels" : "lower");
  return cx->nerrors ? EXIT_PROGRAM : 0;
}
