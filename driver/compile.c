// driver/compile.c: compile_fn, the one way every --emit kind, run and bench go from
// a file (and --fn) to the compiled program. A flat list of stages, each followed by
// a --time lap: read, parse, sema (the last that reports errors in the program: the
// driver stops after it if there were any), choosing the function, then for each
// function lower and fuse, and build the kernels with their CPU schedules (on
// --target cuda, the GPU schedule instead). The caller says how far to go (CompileStage).
#include "driver/driver.h"

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
  bool ok = sema_check(cx, &out->prog);
  lap(tm, "sema");
  if (!ok || cx->nerrors)
    return EXIT_PROGRAM;
  if (co->one_fn || co->fn) {
    if (!(out->fn = pick_fn(cx, &out->prog, co)))
      return EXIT_USAGE;
  }
  if (co->upto == COMPILE_CHECK)
    return 0;

  // The CPU the schedules are for: --cpu, else the host (cuda: none).
  bool cpu_prog = strcmp(co->target, "cpu") == 0;
  CpuTarget cpu = cpu_target(co->cpu);
  out->nfns = out->fn ? 1 : out->prog.fns.len;
  out->lps = arena_alloc(&cx->arena, sizeof *out->lps * (size_t)(out->nfns ? out->nfns : 1));
  for (int i = 0; i < out->nfns; i++) {
    Graph *g = lower_fn(cx, &out->prog, out->fn ? out->fn : out->prog.fns.data[i]);
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
    if (cpu_prog)
      sched_cpu(cx, lp);
    else
      sched_gpu(cx, lp);
    out->lps[i] = lp;
  }
  lap(tm, co->time_kernels ? "kernels" : "lower");
  return cx->nerrors ? EXIT_PROGRAM : 0;
}
