// driver/run.c: `tdslc run` and `tdslc bench` once the function is compiled. The
// inputs: each parameter from its --in NAME=FILE.npy (dtype and shape checked), else
// seeded random data (saved to --out-dir as in_NAME.npy). Then the backend gives a
// callable function (cc.c, jit.c, gpu.c), and one path for every backend calls it:
// run calls it once and prints each output (text or --json; out<k>.npy in --out-dir),
// naming the input whose storage an output shares; bench times o->reps calls after a
// warm-up (bench_warmup: long enough for the stream sites' choice) and prints the
// median, min, max and the rates they imply (with --profile, profile.c times each
// kernel of a profiling build instead).
#include "driver/driver.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

// ---- run: inputs, execution of a view-only graph, outputs ----
static void shape_text(char *buf, size_t n, int ndim, const int64_t *shape) {
  size_t k = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < ndim && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%" PRId64, i ? ", " : "", shape[i]);
  if (k < n)
    snprintf(buf + k, n - k, "]");
}

static int load_input(const LParam *param, const char *path, tdsl_tensor *t) {
  const char *name = param->name;
  if (tdsl_load_npy_as(path, (tdsl_dtype)param->dtype, t) != 0) {
    fprintf(stderr, "tdslc: error: --in %s=%s: %s\n", name, path, tdsl_last_error());
    return EXIT_USAGE;
  }
  bool same = t->ndim == param->ndim;
  for (int i = 0; same && i < param->ndim; i++)
    same = t->shape[i] == param->shape[i];
  if (!same) {
    char a[256], b[256];
    shape_text(a, sizeof a, param->ndim, param->shape);
    shape_text(b, sizeof b, t->ndim, t->shape);
    fprintf(stderr, "tdslc: error: --in %s=%s: parameter '%s' is %s%s but the file holds %s%s\n", name, path, name,
            dtype_name(param->dtype), a, tdsl_dtype_name(t->dtype), b);
    tdsl_tensor_release(t);
    return EXIT_USAGE;
  }
  return 0;
}

// A scalar parameter's value from --arg NAME=VALUE, as a 0-d tensor of its dtype (f64,
// i64 or bool): what the packed callers pass by value.
static int scalar_input(const LProgram *p, const LParam *q, const char *text, tdsl_tensor *t) {
  const char *kind = q->dtype == DT_F64 ? "float" : q->dtype == DT_I64 ? "int" : "bool";
  if (!text)
    return usage_error("'%s' has a scalar parameter '%s' (%s): give it with --arg %s=VALUE", p->name, q->name, kind,
                       q->name);
  char *end = NULL;
  errno = 0;
  double f = 0;
  long long i = 0;
  bool ok;
  if (q->dtype == DT_F64) {
    f = strtod(text, &end);
    ok = end != text && !*end;
  } else if (q->dtype == DT_I64) {
    i = strtoll(text, &end, 10);
    ok = end != text && !*end && errno == 0;
  } else {
    ok = !strcmp(text, "true") || !strcmp(text, "True") || !strcmp(text, "1") || !strcmp(text, "false") ||
         !strcmp(text, "False") || !strcmp(text, "0");
    i = text[0] == 't' || text[0] == 'T' || text[0] == '1';
  }
  if (!ok)
    return usage_error("--arg %s=%s: '%s' is not %s %s", q->name, text, text, q->dtype == DT_I64 ? "an" : "a", kind);
  if (tdsl_tensor_empty(t, (tdsl_dtype)q->dtype, 0, NULL) != 0) {
    fprintf(stderr, "tdslc: error: parameter '%s': %s\n", q->name, tdsl_last_error());
    return EXIT_USAGE;
  }
  void *d = tdsl_tensor_data(t);
  if (q->dtype == DT_F64)
    memcpy(d, &f, sizeof f);
  else if (q->dtype == DT_I64)
    memcpy(d, &(int64_t){i}, sizeof(int64_t));
  else
    *(bool *)d = i != 0;
  return 0;
}

// mkdir -p: the folder and any missing parents.
static int make_dir(const char *dir) {
  char *path = strdup(dir);
  int rc = 0;
  for (char *s = path + 1; !rc; s++) {
    bool end = *s == 0;
    if (*s != '/' && !end)
      continue;
    *s = 0;
    if (mkdir(path, 0777) != 0 && errno != EEXIST) {
      fprintf(stderr, "tdslc: error: cannot create '%s': %s\n", path, strerror(errno));
      rc = EXIT_USAGE;
    }
    if (end)
      break;
    *s = '/';
  }
  free(path);
  return rc;
}

static int save_npy(const char *dir, const char *name, const tdsl_tensor *t) {
  size_t n = strlen(dir) + strlen(name) + 8;
  char *path = malloc(n);
  snprintf(path, n, "%s/%s.npy", dir, name);
  int rc = tdsl_save_npy(path, t);
  if (rc != 0)
    fprintf(stderr, "tdslc: error: cannot write '%s': %s\n", path, tdsl_last_error());
  free(path);
  return rc ? EXIT_USAGE : 0;
}

static void print_ints_json(FILE *out, const int64_t *xs, int n) {
  fputc('[', out);
  for (int i = 0; i < n; i++)
    fprintf(out, "%s%" PRId64, i ? ", " : "", xs[i]);
  fputc(']', out);
}

// storage: the parameter whose storage t shares, or NULL for a new one.
static void print_output(FILE *out, const Options *o, int idx, const char *storage, const tdsl_tensor *t) {
  if (o->json) {
    fprintf(out, "%s\n  {\"index\": %d, \"dtype\": \"%s\", \"shape\": ", idx ? "," : "", idx, tdsl_dtype_name(t->dtype));
    print_ints_json(out, t->shape, t->ndim);
    fputs(", \"strides\": ", out);
    print_ints_json(out, t->strides, t->ndim);
    fprintf(out, ", \"offset\": %" PRId64 ", \"contiguous\": %s, \"storage\": ", t->offset,
            tdsl_tensor_is_contiguous(t) ? "true" : "false");
    if (storage)
      fprintf(out, "\"input:%s\"", storage);
    else
      fputs("\"new\"", out);
    fputs(", \"data\": ", out);
    tdsl_write_json_data(out, t);
    fputc('}', out);
    return;
  }
  fprintf(out, "out%d = ", idx);
  tdsl_print(out, t);
  char sh[256], st[256];
  shape_text(sh, sizeof sh, t->ndim, t->shape);
  shape_text(st, sizeof st, t->ndim, t->strides);
  fprintf(out, "  shape %s  strides %s  offset %" PRId64 "  %s  storage %s%s\n", sh, st, t->offset,
          tdsl_tensor_is_contiguous(t) ? "contiguous" : "non-contiguous", storage ? "input:" : "new",
          storage ? storage : "");
}

// Bytes of every buffer a call of p holds at once (parameters, results, temporaries).
// INT64_MAX: at least that many (the sum saturates).
static int64_t tensor_bytes(const LProgram *p) {
  int64_t bytes = 0;
  for (int i = 0; i < loop_host_bufs(p); i++)  // (a GPU kernel's shared memory is no buffer of a call)
    bytes = td_sat_add(bytes, td_sat_mul(p->bufs.data[i].numel, dtype_size(p->bufs.data[i].dtype)));
  return bytes;
}

// Physical memory, or 0 when unknown.
static int64_t memory_bytes(void) {
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
  return pages > 0 && size > 0 ? td_sat_mul(pages, size) : 0;
}

int run_program(const Options *o, Ctx *cx, LProgram *p, Timer *tm) {
  bool gpu = strcmp(o->target, "cuda") == 0;
  if (o->profile && gpu)
    return usage_error("--profile times the kernels of the CPU backends (c, llvm), not --target cuda");
  p->profile = o->profile;  // the entry calls the runtime's tdsl_prof_mark around each kernel
  if (gpu && !tdsl_gpu_available()) {
    fprintf(stderr, "tdslc: error: --target cuda: %s\n", tdsl_last_error());
    return EXIT_DATA;
  }
  for (int i = 0; i < o->ninputs; i++) {
    const LParam *found = NULL;
    for (int j = 0; j < p->params.len; j++)
      if (strcmp(p->params.data[j].name, o->inputs[i].name) == 0)
        found = &p->params.data[j];
    if (!found)
      return usage_error("--in %s: '%s' has no parameter '%s'", o->inputs[i].name, p->name, o->inputs[i].name);
    if (found->scalar)
      return usage_error("--in %s: '%s' is a scalar parameter: give it with --arg %s=VALUE", found->name,
                         found->name, found->name);
  }
  for (int i = 0; i < o->nargs; i++) {
    const LParam *found = NULL;
    for (int j = 0; j < p->params.len; j++)
      if (strcmp(p->params.data[j].name, o->args[i].name) == 0)
        found = &p->params.data[j];
    if (!found)
      return usage_error("--arg %s: '%s' has no parameter '%s'", o->args[i].name, p->name, o->args[i].name);
    if (!found->scalar)
      return usage_error("--arg %s: '%s' is a tensor parameter: give it with --in %s=FILE.npy%s", found->name,
                         found->name, found->name, o->mode == MODE_RUN ? "" : " (run)");
  }
  int64_t need = tensor_bytes(p), have = memory_bytes();
  if (have > 0 && need > have) {  // refused here rather than by the OOM killer halfway through
    fprintf(stderr, "tdslc: error: running '%s' needs %s%" PRId64 " bytes of tensors; this machine has %" PRId64
            " bytes of memory\n", p->name, need == INT64_MAX ? "more than " : "", need, have);
    return EXIT_DATA;
  }
  int rc = 0;
  if (o->out_dir && (rc = make_dir(o->out_dir)))
    return rc;
  int np = p->params.len;
  tdsl_tensor *ins = calloc((size_t)(np ? np : 1), sizeof *ins);
  uint64_t state = o->seed;
  for (int j = 0; j < np && !rc; j++) {
    const LParam *q = &p->params.data[j];
    if (q->scalar) {
      const char *text = NULL;
      for (int i = 0; i < o->nargs; i++)
        if (strcmp(o->args[i].name, q->name) == 0)
          text = o->args[i].value;
      rc = scalar_input(p, q, text, &ins[j]);
      continue;
    }
    const char *path = NULL;
    for (int i = 0; i < o->ninputs; i++)
      if (strcmp(o->inputs[i].name, q->name) == 0)
        path = o->inputs[i].path;
    if (path) {
      rc = load_input(q, path, &ins[j]);
      continue;
    }
    if (tdsl_tensor_empty(&ins[j], (tdsl_dtype)q->dtype, q->ndim, q->shape) != 0) {
      fprintf(stderr, "tdslc: error: parameter '%s': %s\n", q->name, tdsl_last_error());
      rc = EXIT_USAGE;
      break;
    }
    tdsl_fill_random(&ins[j], &state);
    if (o->out_dir) {
      char name[256];
      snprintf(name, sizeof name, "in_%s", q->name);
      rc = save_npy(o->out_dir, name, &ins[j]);
    }
  }
  if (!rc && gpu) {
    rc = gpu_run(o, cx, p, ins, tm);
  } else if (!rc && strcmp(o->backend, "llvm") == 0) {
    rc = jit_run(o, cx, p, ins, tm);
  } else if (!rc) {
    RunFn fn;
    rc = cc_build_and_load(cx, p, tm, &fn);
    if (!rc)
      rc = run_call_and_report(o, p, ins, fn, NULL, tm);
  }
  for (int j = 0; j < np; j++)
    tdsl_tensor_release(&ins[j]);
  free(ins);
  return rc;
}

// ---- run: calling the compiled entry, printing and saving its outputs ----
// One path for every backend: fn is the packed caller of the function's entry, or,
// when gpu is given, tdsl_gpu_run runs that program.
// One call of the compiled function: outputs into outs (the caller releases them).
static int call_once(const LProgram *p, const tdsl_tensor **args, tdsl_tensor *outs, RunFn fn,
                     const tdsl_gpu_program *gpu) {
  if (!gpu)
    return fn(args, outs);
  int no = p->outputs.len;
  tdsl_tensor **outp = calloc((size_t)(no ? no : 1), sizeof *outp);
  for (int k = 0; k < no; k++)
    outp[k] = &outs[k];
  int erc = tdsl_gpu_run(gpu, args, outp);
  free(outp);
  return erc;
}

// ---- bench: time repeated calls of the compiled function ----
static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int64_t run_program_bytes(const LProgram *p) {
  int64_t bytes = 0;
  for (int i = 0; i < loop_host_bufs(p); i++) {
    const LBuf *b = &p->bufs.data[i];
    if (b->kind != LB_TEMP)
      bytes = td_sat_add(bytes, td_sat_mul(b->numel, dtype_size(b->dtype)));
  }
  return bytes;
}

// Bytes of the parameters: what a call reads.
static int64_t param_bytes(const LProgram *p) {
  int64_t bytes = 0;
  for (int i = 0; i < loop_host_bufs(p); i++) {
    const LBuf *b = &p->bufs.data[i];
    if (b->kind == LB_PARAM)
      bytes = td_sat_add(bytes, td_sat_mul(b->numel, dtype_size(b->dtype)));
  }
  return bytes;
}

int run_threads(const char *backend) {
  return !strcmp(backend, "llvm") || !strcmp(backend, "c") ? tdsl_num_threads() : 0;
}

// The warm-up before `reps` timed calls: a tenth of them (at least one), and at least
// the calls a stream site makes before it chooses its store form (runtime/stream.c), so
// that the timed calls run the chosen form, as a program's calls do after its first
// few. Calls past the first stop once the warm-up has taken WARM_CAP_MS: calls that
// long (whole models) keep no kernel's store form above their noise. bench/run.py gives
// NumPy, PyTorch and Halide the same count (bench/halide_work.py's warmup_for).
enum { WARM_CAP_MS = 1000 };
int bench_warmup(int reps) {
  int tenth = reps < 10 ? 1 : reps / 10;
  return tenth > TDSL_STREAM_SETTLE ? tenth : TDSL_STREAM_SETTLE;
}

int bench_warm_cut(int r, double ms, double *warm_ms) {
  return (*warm_ms += ms) >= WARM_CAP_MS && r < -1 ? -1 : r;
}

// Warm-up calls, then o->reps timed calls, each allocating (and here releasing) its
// outputs as a PyTorch call does; prints median/min/max and the rates they imply.
static int bench_calls(const Options *o, const LProgram *p, const tdsl_tensor **args, RunFn fn,
                       const tdsl_gpu_program *gpu) {
  int no = p->outputs.len, warm = bench_warmup(o->reps), warmed = 0;
  double warm_ms = 0;
  double *ms = calloc((size_t)o->reps, sizeof *ms);
  tdsl_tensor *outs = calloc((size_t)(no ? no : 1), sizeof *outs);
  int erc = 0;
  // What the calls hold at their peak: the inputs (resident before, as they were filled)
  // plus the most the resident set grew by during the calls (outputs, temporaries, the
  // runtime's pools and thread stacks). -1 where /proc cannot say.
  int64_t before = rss_now(), peak = gpu || before < 0 || !rss_reset_peak() ? -1 : 0;
  if (gpu) {  // the kernels' own time on the device, the inputs there already (runtime/cuda.c)
    erc = tdsl_gpu_bench(gpu, args, o->reps, ms);
    warmed = 1;  // its checked call, before the timed ones
  }
  for (int r = -warm; r < o->reps && !erc && !gpu; r++) {
    double t0 = now_ms();
    erc = call_once(p, args, outs, fn, gpu);
    for (int k = 0; k < no; k++)
      tdsl_tensor_release(&outs[k]);
    if (r >= 0) {
      ms[r] = now_ms() - t0;
      continue;
    }
    warmed++;
    r = bench_warm_cut(r, now_ms() - t0, &warm_ms);
  }
  free(outs);
  if (peak == 0) {
    int64_t hwm = rss_peak();
    peak = hwm < before ? -1 : td_sat_add(param_bytes(p), hwm - before);
  }
  if (erc) {
    free(ms);
    fprintf(stderr, "%s\n", tdsl_last_error());
    return erc == TDSL_ERR_DATA || erc == TDSL_ERR_GPU ? EXIT_DATA : EXIT_INTERNAL;
  }
  qsort(ms, (size_t)o->reps, sizeof *ms, cmp_double);
  double med = o->reps % 2 ? ms[o->reps / 2] : (ms[o->reps / 2 - 1] + ms[o->reps / 2]) / 2;
  int64_t bytes = run_program_bytes(p);
  double gbps = med > 0 ? (double)bytes / (med * 1e6) : 0, gflops = med > 0 ? (double)p->flops / (med * 1e6) : 0;
  int threads = run_threads(o->backend);
  if (o->json)
    printf("{\"backend\": \"%s\", \"threads\": %d, \"median_ms\": %.6g, \"min_ms\": %.6g, \"max_ms\": %.6g, "
           "\"bytes\": %" PRId64 ", \"flops\": %" PRId64 ", \"gbps\": %.6g, \"gflops\": %.6g, "
           "\"peak_bytes\": %" PRId64 ", \"warmup_calls\": %d}\n",
           o->backend, threads, med, ms[0], ms[o->reps - 1], bytes, p->flops, gbps, gflops, peak, warmed);
  else {
    char who[64];
    if (threads)
      snprintf(who, sizeof who, "%s backend, %d thread%s", o->backend, threads, threads == 1 ? "" : "s");
    else
      snprintf(who, sizeof who, "%s backend, on the GPU", o->backend);
    printf("%s (%s): %d calls, median %.4f ms (min %.4f, max %.4f); %" PRId64 " bytes, %" PRId64
           " flops: %.2f GB/s, %.2f GFLOP/s\n", p->name, who, o->reps, med, ms[0], ms[o->reps - 1], bytes, p->flops,
           gbps, gflops);
    if (peak >= 0)
      printf("  peak memory of a call: %.1f MB resident (inputs, outputs, temporaries, pools) for %.1f MB read "
             "and written: %.2fx\n", (double)peak / 1e6, (double)bytes / 1e6, bytes ? (double)peak / (double)bytes : 0);
  }
  free(ms);
  return 0;
}

// One call with its outputs printed (and saved to --out-dir).
static int run_once(const Options *o, const LProgram *p, const tdsl_tensor *ins, const tdsl_tensor **args, RunFn fn,
                    const tdsl_gpu_program *gpu, Timer *tm) {
  int rc = 0, np = p->params.len, no = p->outputs.len;
  tdsl_tensor *outs = calloc((size_t)(no ? no : 1), sizeof *outs);
  tdsl_clear_error();
  int erc = call_once(p, args, outs, fn, gpu);
  lap(tm, "run");
  if (erc == TDSL_ERR_DATA) {
    fprintf(stderr, "%s\n", tdsl_last_error());
    rc = EXIT_DATA;
  } else if (erc == TDSL_ERR_GPU) {
    fprintf(stderr, "tdslc: error: --target cuda: %s\n", tdsl_last_error());
    rc = EXIT_DATA;
  } else if (erc == TDSL_ERR_NOMEM) {
    fprintf(stderr, "tdslc: error: running '%s': out of memory: %s\n", p->name, tdsl_last_error());
    rc = EXIT_DATA;
  } else if (erc != 0) {
    rc = internal_error("%s returned %d: %s", p->name, erc, tdsl_last_error());
  }
  if (!rc) {
    if (o->json)
      fprintf(stdout, "{\"function\": \"%s\", \"outputs\": [", p->name);
    for (int k = 0; k < no; k++) {
      const char *storage = NULL;
      for (int j = 0; j < np && !storage; j++)
        if (outs[k].storage && outs[k].storage == ins[j].storage)
          storage = p->params.data[j].name;
      print_output(stdout, o, k, storage, &outs[k]);
    }
    if (o->json)
      fputs("]}\n", stdout);
    for (int k = 0; k < no && o->out_dir && !rc; k++) {
      char name[32];
      snprintf(name, sizeof name, "out%d", k);
      rc = save_npy(o->out_dir, name, &outs[k]);
    }
  }
  for (int k = 0; k < no; k++)
    tdsl_tensor_release(&outs[k]);
  free(outs);
  return rc;
}

int run_call_and_report(const Options *o, const LProgram *p, const tdsl_tensor *ins, RunFn fn,
                        const tdsl_gpu_program *gpu, Timer *tm) {
  int np = p->params.len;
  const tdsl_tensor **args = calloc((size_t)(np ? np : 1), sizeof *args);
  for (int j = 0; j < np; j++)
    args[j] = &ins[j];
  int rc = o->mode != MODE_BENCH ? run_once(o, p, ins, args, fn, gpu, tm)
           : o->profile        ? profile_calls(o, p, args, fn)
                               : bench_calls(o, p, args, fn, gpu);
  free(args);
  return rc;
}
