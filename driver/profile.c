// driver/profile.c: `tdslc bench --profile`: where the time of a call goes. The function
// is built with LProgram.profile set, so its entry calls the runtime's tdsl_prof_mark
// around every kernel (runtime/profile.c); warm-up calls (bench_warmup, cut short by
// bench_warm_cut, as `bench` makes), then o->reps timed calls, and each kernel gets its mean time per call over the
// calls no slower than the median call (one that another process slowed down does not
// skew the shares), its share of that mean call, its arithmetic
// (graph_kernel_flops) and its memory traffic, the rates they imply and its place under
// the machine's roofline (roofline.c): achieved / attainable, where attainable is
// min(peak, intensity x bandwidth), i.e. max(GFLOP/s / peak, GB/s / bandwidth); its bound
// (bound_name) is compute right of the ridge, else memory, or cache above the DRAM roof.
//
// A kernel's bytes are counted from its loop IR, not measured: for each argument, the
// elements its accesses can touch (for each access the smaller of the span between its
// lowest and highest index and the product of its loops' extents; for the argument the
// smaller of the union of those spans and their sum; never more than the buffer), read
// bytes when the kernel reads the argument before writing it and the data came from the
// caller or an earlier kernel, written bytes when a later kernel or the caller reads what
// it wrote. So a kernel's private scratch (a GEMM's packed panels) is not traffic, and
// the intermediate buffers between kernels count twice: written by one, read by the next.
// Invariants: the kernels' times and the outside time sum to the mean call; every kernel
// is listed, in program order in --json, by time in the table.
#include "driver/driver.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

// ---- traffic: what a kernel reads and writes across its boundary ----
typedef struct Span {
  int64_t lo, hi;  // the lowest and highest element touched (relative to the argument's `at`)
  int64_t count;   // the accesses' element counts summed (saturating)
  bool any, whole;  // touched at all; an index computed at run time (the whole buffer)
} Span;

typedef struct ArgUse {
  Span rd, wr;
  int first;  // 0: not touched, 1: read first, 2: written first
} ArgUse;

typedef struct Walk {
  const LProgram *p;
  const LKernel *code;  // the kernel whose body runs (LKernel.same's, or the kernel)
  int64_t *extent;      // per loop variable in scope: its extent; -1 out of scope
  ArgUse *use;          // per argument
} Walk;

static void touch(Walk *w, int arg, const LIndex *ix, int lanes, bool write) {
  ArgUse *u = &w->use[arg];
  Span *s = write ? &u->wr : &u->rd;
  if (!u->first)
    u->first = write ? 2 : 1;
  if (ix->dyn) {
    s->any = s->whole = true;
    return;
  }
  int64_t lo = ix->base, hi = ix->base, count = lanes > 1 ? lanes : 1;
  for (int t = 0; t < ix->nterms; t++) {
    int64_t c = ix->coef[t], e = ix->var[t] >= 0 && ix->var[t] < w->code->nvars ? w->extent[ix->var[t]] : -1;
    if (e == 0)
      return;  // inside a loop that runs no iteration: never touched
    if (e < 0) {  // not a loop of this nest (never expected): assume the whole buffer
      s->any = s->whole = true;
      return;
    }
    if (c == 0)
      continue;
    if (c > 0)
      hi = td_sat_add(hi, td_sat_mul(c, e - 1));
    else
      lo -= td_sat_mul(-c, e - 1);
    count = td_sat_mul(count, e);
  }
  hi = td_sat_add(hi, (lanes > 1 ? lanes : 1) - 1);
  if (!s->any || lo < s->lo)
    s->lo = lo;
  if (!s->any || hi > s->hi)
    s->hi = hi;
  s->count = td_sat_add(s->count, count);
  s->any = true;
}

static void walk_expr(Walk *w, const LExpr *e) {
  if (!e)
    return;
  walk_expr(w, e->a);
  walk_expr(w, e->b);
  walk_expr(w, e->c);
  if (e->kind == LX_LOAD) {
    walk_expr(w, e->idx.dyn);
    touch(w, e->buf, &e->idx, e->lanes, false);
  }
}

static void walk_stmts(Walk *w, const LStmtList *l) {
  for (int i = 0; i < l->len; i++) {
    const LStmt *s = l->data[i];
    switch (s->kind) {
    case LS_LOOP:
      w->extent[s->var] = s->extent;
      walk_stmts(w, &s->body);
      w->extent[s->var] = -1;
      break;
    case LS_STORE:  // the value (and a computed index) are read before the element is written
      walk_expr(w, s->idx.dyn);
      walk_expr(w, s->val);
      touch(w, s->buf, &s->idx, s->val ? s->val->lanes : 1, true);
      break;
    case LS_LET:
    case LS_SET: walk_expr(w, s->val); break;
    case LS_IF:
      walk_expr(w, s->cond);
      walk_stmts(w, &s->body);
      break;
    case LS_VAR:  // the GPU form's (a var of no extent here: what it indexes counts whole)
      walk_expr(w, s->val);
      break;
    case LS_SYNC:
    case LS_PREFETCH: break;  // (a hint: no traffic of its own)
    case LS_CALL: {  // a function of p->funcs: `reach` elements of each pointer from `at` on
      // (a GEMM micro-kernel's tile it writes, it reads back only to add to what this
      // kernel wrote there in an earlier k block: a write, never traffic in)
      const LCall *c = s->call;
      const LKernel *fk = w->p->funcs.data[c->fn]->kernels.data[0];
      for (int a = 0; a < c->nptr; a++) {
        walk_expr(w, c->at[a].dyn);
        int n = c->reach[a] > INT32_MAX ? INT32_MAX : (int)c->reach[a];
        touch(w, c->ptr[a], &c->at[a], n, fk->args.data[a].written);
      }
      for (int a = 0; a < c->nval; a++)
        walk_expr(w, c->val[a]);
      break;
    }
    case LS_COUNT: break;
    }
  }
}

// The elements of a buffer of n elements (from the argument's `at` on) that s can touch.
static int64_t span_elems(const Span *s, int64_t n) {
  if (!s->any || n <= 0)
    return 0;
  if (s->whole)
    return n;
  int64_t lo = s->lo < 0 ? 0 : s->lo, hi = s->hi >= n ? n - 1 : s->hi;
  int64_t e = hi >= lo ? hi - lo + 1 : 0;
  return s->count < e ? s->count : e;
}

// How kernel ki uses each of its arguments (uses[a], zeroed by the caller).
static void kernel_uses(const LProgram *p, int ki, ArgUse *uses) {
  const LKernel *k = p->kernels.data[ki];
  Walk w = {.p = p, .code = k->same ? k->same : k, .use = uses};
  int nv = w.code->nvars;
  w.extent = malloc(sizeof *w.extent * (size_t)(nv ? nv : 1));
  for (int v = 0; v < nv; v++)
    w.extent[v] = -1;
  walk_stmts(&w, &w.code->body);
  free(w.extent);
}

// Each kernel's bytes across its boundary (see the top of the file): into pr->ks[*].bytes.
static void count_bytes(Profile *pr) {
  const LProgram *p = pr->p;
  int nk = p->kernels.len, nb = p->bufs.len;
  ArgUse **uses = calloc((size_t)(nk ? nk : 1), sizeof *uses);
  for (int ki = 0; ki < nk; ki++) {
    int na = p->kernels.data[ki]->args.len;
    uses[ki] = calloc((size_t)(na ? na : 1), sizeof **uses);
    kernel_uses(p, ki, uses[ki]);
  }
  // written[b]: some earlier kernel wrote buffer b; read_later[b]: a later kernel reads it first
  bool *written = calloc((size_t)(nb ? nb : 1), sizeof *written);
  int *last_reader = malloc(sizeof *last_reader * (size_t)(nb ? nb : 1));
  for (int b = 0; b < nb; b++)
    last_reader[b] = -1;
  for (int ki = 0; ki < nk; ki++) {
    const LKernel *k = p->kernels.data[ki];
    for (int a = 0; a < k->args.len; a++)
      if (uses[ki][a].first == 1)
        last_reader[k->args.data[a].buf] = ki;
  }
  for (int ki = 0; ki < nk; ki++) {
    const LKernel *k = p->kernels.data[ki];
    int64_t bytes = 0;
    for (int a = 0; a < k->args.len; a++) {
      const LArg *arg = &k->args.data[a];
      const LBuf *b = &p->bufs.data[arg->buf];
      int64_t n = b->numel - arg->at, size = (int64_t)dtype_size(b->dtype);
      const ArgUse *u = &uses[ki][a];
      if (b->scratch)  // per-thread scratch (ir/loop.h): private to the kernel
        continue;
      if (u->first == 1 && (b->kind == LB_PARAM || written[arg->buf]))
        bytes = td_sat_add(bytes, td_sat_mul(span_elems(&u->rd, n), size));
      bool result = b->kind == LB_RESULT && !arg->lent;  // (lent: a temp in a result's storage, ir/share.c)
      if (u->wr.any && (result || b->kind == LB_PARAM || last_reader[arg->buf] > ki))
        bytes = td_sat_add(bytes, td_sat_mul(span_elems(&u->wr, n), size));
    }
    for (int a = 0; a < k->args.len; a++)
      if (uses[ki][a].wr.any)
        written[k->args.data[a].buf] = true;
    pr->ks[ki].bytes = bytes;
  }
  for (int ki = 0; ki < nk; ki++)
    free(uses[ki]);
  free(uses);
  free(written);
  free(last_reader);
}

// ---- what a kernel is: its kind, schedule, source lines ----
static const char *kind_name(KernelKind k) {
  switch (k) {
  case KK_EW: return "elementwise";
  case KK_ROW: return "row";
  case KK_MATMUL: return "matmul";
  case KK_ONE: return "one op";
  case KK_SORT: return "sort";
  case KK_ATTN: return "attention";
  case KK_RECUR: return "recurrence";
  }
  return "?";
}

// The outermost parallel loop's extent (0: none) and the widest vector hint of l.
static void loop_facts(const LStmtList *l, int64_t *par, int *vec) {
  for (int i = 0; i < l->len; i++) {
    const LStmt *s = l->data[i];
    if (s->kind == LS_LOOP) {
      if (s->parallel && !*par)
        *par = s->extent;
      if (s->vector > *vec)
        *vec = s->vector;
    }
    if (s->kind == LS_LOOP || s->kind == LS_IF)
      loop_facts(&s->body, par, vec);
  }
}

// The schedule in a few words: the kernel builder's (a GEMM's tile), else its kind, its
// parallel loop and its vector width, from the loop IR.
static const char *schedule_text(Ctx *cx, const LKernel *k) {
  const LKernel *code = k->same ? k->same : k;
  if (code->sched)
    return code->sched;
  int64_t par = 0;
  int vec = 0;
  loop_facts(&code->body, &par, &vec);
  char p[64] = "serial", v[32] = "";
  if (par)
    snprintf(p, sizeof p, "parallel over %" PRId64, par);
  if (vec)
    snprintf(v, sizeof v, ", vector %d", vec);
  return arena_printf(&cx->arena, "%s, %s%s", kind_name(code->kind), p, v);
}

// Whether k computes in f64 (rated against the f64 peak): it writes an f64 buffer.
static bool kernel_f64(const LProgram *p, const LKernel *k) {
  for (int a = 0; a < k->args.len; a++)
    if (k->args.data[a].written && p->bufs.data[k->args.data[a].buf].dtype == DT_F64)
      return true;
  return false;
}

// "2,5-7": sorted distinct lines as ranges.
static const char *lines_text(Ctx *cx, const LKernel *k) {
  Buf b;
  buf_init(&b, cx);
  for (int i = 0; i < k->lines.len;) {
    int j = i;
    while (j + 1 < k->lines.len && k->lines.data[j + 1] == k->lines.data[j] + 1)
      j++;
    buf_printf(&b, "%s%d", i ? "," : "", k->lines.data[i]);
    if (j > i)
      buf_printf(&b, "-%d", k->lines.data[j]);
    i = j + 1;
  }
  return b.len ? b.data : "-";
}

// What bounds pk: "compute" right of the ridge; left of it "memory", or "cache" where it
// moved its bytes faster than the machine's DRAM bandwidth (its data came from cache:
// its roofline fraction is then above 100%, the roof being DRAM's).
static const char *bound_name(const Profile *pr, const ProfKernel *pk) {
  if (pk->compute_bound)
    return "compute";
  return pk->gbps > pr->roof.bandwidth ? "cache" : "memory";
}

// ---- JSON ----
static void json_str(FILE *out, const char *s) {
  fputc('"', out);
  for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++) {
    if (*c == '"' || *c == '\\')
      fprintf(out, "\\%c", *c);
    else if (*c == '\n')
      fputs("\\n", out);
    else if (*c == '\t')
      fputs("\\t", out);
    else if (*c < 0x20)
      fprintf(out, "\\u%04x", *c);
    else
      fputc(*c, out);
  }
  fputc('"', out);
}

// A finite number, or null.
static void json_num(FILE *out, double v) {
  if (isfinite(v))
    fprintf(out, "%.6g", v);
  else
    fputs("null", out);
}

// A member after the first of an object: ", \"KEY\": " and the value, a number (json_num),
// an integer, a string, or a string that is null when empty.
static void key_num(FILE *out, const char *key, double v) {
  fprintf(out, ", \"%s\": ", key);
  json_num(out, v);
}
static void key_int(FILE *out, const char *key, int64_t v) { fprintf(out, ", \"%s\": %" PRId64, key, v); }
static void key_str(FILE *out, const char *key, const char *v) {
  fprintf(out, ", \"%s\": ", key);
  json_str(out, v);
}
static void key_str_or_null(FILE *out, const char *key, const char *v) {
  if (v[0])
    key_str(out, key, v);
  else
    fprintf(out, ", \"%s\": null", key);
}

static void print_json(const Profile *pr, FILE *out) {
  const LProgram *p = pr->p;
  fputs("{\"function\": ", out);
  json_str(out, p->name);
  key_str(out, "file", p->file);
  fprintf(out, ", \"backend\": \"%s\", \"threads\": %d, \"calls\": %d, \"averaged_calls\": %d", pr->backend,
          pr->threads, pr->calls, pr->averaged);
  key_num(out, "mean_ms", pr->mean_ms);
  key_num(out, "median_ms", pr->median_ms);
  key_num(out, "min_ms", pr->min_ms);
  key_num(out, "max_ms", pr->max_ms);
  key_int(out, "bytes", pr->bytes);
  key_int(out, "flops", pr->flops);
  key_int(out, "kernel_bytes", pr->kernel_bytes);
  key_num(out, "gbps", pr->median_ms > 0 ? (double)pr->bytes / (pr->median_ms * 1e6) : 0);
  key_num(out, "gflops", pr->median_ms > 0 ? (double)pr->flops / (pr->median_ms * 1e6) : 0);
  const Roofline *r = &pr->roof;
  fputs(",\n \"machine\": {\"peak_gflops\": ", out);
  json_num(out, r->peak_f32);
  key_num(out, "peak_f64_gflops", r->peak_f64);
  key_num(out, "bandwidth_gbps", r->bandwidth);
  key_str(out, "source", r->source);
  key_str_or_null(out, "cache", r->cache);
  key_str_or_null(out, "measured", r->when);
  fputs("},\n \"outside\": {\"time_ms\": ", out);
  json_num(out, pr->outside_ms);
  key_num(out, "share", pr->mean_ms > 0 ? pr->outside_ms / pr->mean_ms : 0);
  fputs("},\n \"kernels\": [", out);
  for (int i = 0; i < pr->nk; i++) {
    const ProfKernel *pk = &pr->ks[i];
    const LKernel *k = pk->k;
    fprintf(out, "%s\n  {\"name\": ", i ? "," : "");
    json_str(out, k->name);
    key_str(out, "code", (k->same ? k->same : k)->name);
    key_str(out, "kind", kind_name(k->kind));
    fputs(", \"ops\": [", out);
    for (int j = 0; j < k->ops.len; j++) {
      fputs(j ? ", " : "", out);
      json_str(out, k->ops.data[j]);
    }
    fputs("], \"lines\": [", out);
    for (int j = 0; j < k->lines.len; j++)
      fprintf(out, "%s%d", j ? ", " : "", k->lines.data[j]);
    fputs("]", out);
    key_str(out, "schedule", pk->schedule);
    key_num(out, "time_ms", pk->ms);
    key_num(out, "share", pk->share);
    key_int(out, "flops", pk->flops);
    key_int(out, "bytes", pk->bytes);
    key_num(out, "intensity", pk->intensity);
    key_num(out, "gflops", pk->gflops);
    key_num(out, "gbps", pk->gbps);
    key_num(out, "roofline", pk->roofline);
    fprintf(out, ", \"bound\": \"%s\", \"peak\": \"%s\"}", bound_name(pr, pk), pk->f64 ? "f64" : "f32");
  }
  fputs("\n ]}\n", out);
}

// ---- the table ----
static int by_time(const void *a, const void *b) {
  const ProfKernel *x = *(const ProfKernel *const *)a, *y = *(const ProfKernel *const *)b;
  if (x->ms != y->ms)
    return x->ms < y->ms ? 1 : -1;
  return x->index - y->index;
}

// The text of line n (1-based) of the file, trimmed, into buf ("" if unreadable).
static void source_line(const char *text, int n, char *buf, size_t size) {
  buf[0] = 0;
  if (!text)
    return;
  const char *s = text;
  for (int i = 1; i < n && s; i++) {
    s = strchr(s, '\n');
    if (s)
      s++;
  }
  if (!s)
    return;
  while (*s == ' ' || *s == '\t')
    s++;
  size_t len = strcspn(s, "\n");
  while (len && (s[len - 1] == ' ' || s[len - 1] == '\r'))
    len--;
  snprintf(buf, size, "%.*s", (int)(len < size - 1 ? len : size - 1), s);
}

static char *read_file(const char *path) {
  FILE *f = path ? fopen(path, "rb") : NULL;
  if (!f)
    return NULL;
  size_t cap = 1 << 16, n = 0, got;
  char *s = malloc(cap);
  while ((got = fread(s + n, 1, cap - n - 1, f)) > 0) {
    n += got;
    if (n + 1 == cap)
      s = realloc(s, cap *= 2);
  }
  s[n] = 0;
  fclose(f);
  return s;
}

// Where the roofline's numbers come from, in words.
static const char *roofline_source(Ctx *cx, const Roofline *r) {
  if (!strcmp(r->source, "TDSL_ROOFLINE"))
    return "from TDSL_ROOFLINE";
  return arena_printf(&cx->arena, "%s %s%s%s", !strcmp(r->source, "cached") ? "measured" : "measured now,", r->when,
                      r->cache[0] ? !strcmp(r->source, "cached") ? ", cached in " : ", kept in " : "", r->cache);
}

static void print_table(Ctx *cx, const Profile *pr, FILE *out) {
  const LProgram *p = pr->p;
  const Roofline *r = &pr->roof;
  char who[64];
  snprintf(who, sizeof who, "%s backend, %d thread%s", pr->backend, pr->threads, pr->threads == 1 ? "" : "s");
  fprintf(out, "%s (%s): %d calls, median %.4f ms (min %.4f, max %.4f); %" PRId64 " flops, %" PRId64
          " bytes of parameters and results, %" PRId64 " bytes in and out of its kernels\n",
          p->name, who, pr->calls, pr->median_ms, pr->min_ms, pr->max_ms, pr->flops, pr->bytes, pr->kernel_bytes);
  fprintf(out, "roofline: peak %.1f GFLOP/s f32, %.1f f64; bandwidth %.1f GB/s with %d thread%s (%s)\n",
          r->peak_f32, r->peak_f64, r->bandwidth, pr->threads, pr->threads == 1 ? "" : "s", roofline_source(cx, r));
  fprintf(out, "times: the mean over the %d calls no slower than the median (%.4f ms a call)\n", pr->averaged,
          pr->mean_ms);
  fprintf(out, "\n%-8s %10s %7s %9s %8s %8s %8s %-7s  %-14s %s\n", "kernel", "ms/call", "share", "GFLOP/s", "GB/s",
          "FLOP/B", "roofline", "bound", "lines", "ops: schedule");
  const ProfKernel **order = malloc(sizeof *order * (size_t)(pr->nk ? pr->nk : 1));
  for (int i = 0; i < pr->nk; i++)
    order[i] = &pr->ks[i];
  qsort(order, (size_t)pr->nk, sizeof *order, by_time);
  for (int i = 0; i < pr->nk; i++) {
    const ProfKernel *pk = order[i];
    const LKernel *k = pk->k;
    Buf ops;
    buf_init(&ops, cx);
    for (int j = 0; j < k->ops.len && j < 6; j++)
      buf_printf(&ops, "%s%s", j ? " " : "", k->ops.data[j]);
    if (k->ops.len > 6)
      buf_printf(&ops, " +%d", k->ops.len - 6);
    char ai[32];
    if (pk->bytes)
      snprintf(ai, sizeof ai, "%.3g", pk->intensity);
    else
      snprintf(ai, sizeof ai, "-");
    fprintf(out, "%-8s %10.4f %6.1f%% %9.2f %8.2f %8s %7.1f%% %-7s  %-14s %s: %s\n", k->name, pk->ms,
            100 * pk->share, pk->gflops, pk->gbps, ai, 100 * pk->roofline,
            bound_name(pr, pk), lines_text(cx, k), ops.len ? ops.data : "-", pk->schedule);
  }
  fprintf(out, "%-8s %10.4f %6.1f%%  (the entry's argument checks and allocation, freeing the results)\n",
          "outside", pr->outside_ms, pr->mean_ms > 0 ? 100 * pr->outside_ms / pr->mean_ms : 0.0);
  fprintf(out, "%-8s %10.4f %6.1f%% %9.2f %8.2f\n", "total", pr->mean_ms, 100.0,
          pr->mean_ms > 0 ? (double)pr->flops / (pr->mean_ms * 1e6) : 0.0,
          pr->mean_ms > 0 ? (double)pr->kernel_bytes / (pr->mean_ms * 1e6) : 0.0);
  bool cache = false;
  for (int i = 0; i < pr->nk; i++)
    cache |= !strcmp(bound_name(pr, &pr->ks[i]), "cache");
  fprintf(out, "\nbound: compute (its FLOP/B at or right of the ridge, peak / bandwidth: rated against the peak), "
          "memory (left of it: rated against the DRAM bandwidth)%s\n",
          cache ? ", cache (memory-bound but faster than the DRAM bandwidth: its data came from cache, so its "
                  "roofline is above 100%, the roof being DRAM's)" : "");
  // each source line the kernels come from, once, in line order
  char *text = read_file(p->file);
  int maxline = 0;
  for (int i = 0; i < pr->nk; i++)
    for (int j = 0; j < pr->ks[i].k->lines.len; j++)
      if (pr->ks[i].k->lines.data[j] > maxline)
        maxline = pr->ks[i].k->lines.data[j];
  bool *seen = calloc((size_t)maxline + 1, sizeof *seen);
  for (int i = 0; i < pr->nk; i++)
    for (int j = 0; j < pr->ks[i].k->lines.len; j++)
      if (pr->ks[i].k->lines.data[j] > 0)
        seen[pr->ks[i].k->lines.data[j]] = true;
  if (text) {
    fprintf(out, "\nsource (%s):\n", p->file);
    for (int n = 1; n <= maxline; n++) {
      if (!seen[n])
        continue;
      char line[160];
      source_line(text, n, line, sizeof line);
      fprintf(out, "%6d  %s\n", n, line);
    }
  }
  free(seen);
  free(text);
  free(order);
}

// ---- timing ----
static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

enum { PER_CALL_MAX = 1 << 24 };  // per-call kernel times kept (doubles); beyond: all calls averaged

static int call_error(int erc) {
  fprintf(stderr, "%s\n", tdsl_last_error());
  return erc == TDSL_ERR_DATA ? EXIT_DATA : EXIT_INTERNAL;
}

// Each kernel's rates and its place under pr's roofline. The numbers that a kernel which ran
// long enough to time well (50 us a call) outran by more than the 10% a number measured on
// a quiet machine can be off: OUTRAN_F32 | OUTRAN_F64 | OUTRAN_BW, 0 for none; the
// bandwidth only by a kernel moving more bytes than the caches hold (else its data may
// have come from cache, faster than DRAM's bandwidth: that is no sign of a low measure).
enum { OUTRAN_F32 = 1, OUTRAN_F64 = 2, OUTRAN_BW = 4 };
static int place_kernels(Profile *pr) {
  CpuTarget cpu = cpu_target(NULL);
  int64_t caches = td_sat_add(cpu.llc, td_sat_mul(pr->threads, td_sat_add(cpu.l2, cpu.l1d)));
  int outran = 0;
  for (int i = 0; i < pr->nk; i++) {
    ProfKernel *pk = &pr->ks[i];
    double s = pk->ms / 1e3, peak = pk->f64 ? pr->roof.peak_f64 : pr->roof.peak_f32;
    pk->share = pr->mean_ms > 0 ? pk->ms / pr->mean_ms : 0;
    pk->gflops = s > 0 ? (double)pk->flops / s / 1e9 : 0;
    pk->gbps = s > 0 ? (double)pk->bytes / s / 1e9 : 0;
    pk->intensity = pk->bytes ? (double)pk->flops / (double)pk->bytes : 0;
    double f = peak > 0 ? pk->gflops / peak : 0, m = pr->roof.bandwidth > 0 ? pk->gbps / pr->roof.bandwidth : 0;
    pk->roofline = f > m ? f : m;
    pk->compute_bound = pk->intensity * pr->roof.bandwidth >= peak;
    if (f > 1.1 && pk->ms >= 0.05)
      outran |= pk->f64 ? OUTRAN_F64 : OUTRAN_F32;
    if (m > 1.1 && pk->ms >= 0.05 && pk->bytes > caches)
      outran |= OUTRAN_BW;
  }
  return outran;
}

// The note that the cached numbers in `outran` (place_kernels) are measured again.
static void note_outran(const Roofline *r, int outran) {
  char what[192] = "", bw[64] = "";
  int peaks = outran & (OUTRAN_F32 | OUTRAN_F64);
  if (peaks == (OUTRAN_F32 | OUTRAN_F64))
    snprintf(what, sizeof what, "f32 and f64 peaks of %.4g and %.4g GFLOP/s", r->peak_f32, r->peak_f64);
  else if (peaks)
    snprintf(what, sizeof what, "%s peak of %.4g GFLOP/s", peaks == OUTRAN_F64 ? "f64" : "f32",
             peaks == OUTRAN_F64 ? r->peak_f64 : r->peak_f32);
  if (outran & OUTRAN_BW)
    snprintf(bw, sizeof bw, "%sbandwidth of %.4g GB/s", peaks ? " and " : "", r->bandwidth);
  size_t len = strlen(what);
  snprintf(what + len, sizeof what - len, "%s", bw);
  fprintf(stderr, "tdslc: note: a kernel ran faster than the cached %s (measured %s, on a busy machine?): "
          "measuring both peaks and the bandwidth again\n", what, r->when);
}

int profile_calls(const Options *o, const LProgram *p, const tdsl_tensor **args, RunFn fn) {
  Ctx ctx, *cx = &ctx;
  ctx_init(cx);
  Profile pr = {.p = p, .backend = o->backend, .threads = run_threads(o->backend), .calls = o->reps,
                .nk = p->kernels.len, .flops = p->flops, .bytes = run_program_bytes(p)};
  int rc = roofline_get(pr.threads, false, &pr.roof);
  int no = p->outputs.len, warm = bench_warmup(o->reps);
  double warm_ms = 0;
  double *ms = calloc((size_t)o->reps, sizeof *ms), *ns = calloc((size_t)(pr.nk ? pr.nk : 1), sizeof *ns);
  tdsl_tensor *outs = calloc((size_t)(no ? no : 1), sizeof *outs);
  pr.ks = calloc((size_t)(pr.nk ? pr.nk : 1), sizeof *pr.ks);
  // per call: its time and (while there is room) each kernel's, from the runtime's running totals
  bool per_call = (int64_t)o->reps * pr.nk <= PER_CALL_MAX;
  double *calls = per_call ? calloc((size_t)o->reps * (size_t)(pr.nk ? pr.nk : 1), sizeof *calls) : NULL;
  double *prev = calloc((size_t)(pr.nk ? pr.nk : 1), sizeof *prev);
  for (int r = -warm; r < o->reps && !rc; r++) {
    if (r == 0 && tdsl_prof_start(pr.nk) != 0)
      rc = call_error(TDSL_ERR_NOMEM);
    double t0 = now_ms();
    int erc = rc ? 0 : fn(args, outs);
    for (int k = 0; k < no; k++)
      tdsl_tensor_release(&outs[k]);
    if (r >= 0)
      ms[r] = now_ms() - t0;
    else
      r = bench_warm_cut(r, now_ms() - t0, &warm_ms);
    if (erc)
      rc = call_error(erc);
    if (r >= 0 && calls) {
      tdsl_prof_read(ns, pr.nk);
      for (int k = 0; k < pr.nk; k++)
        calls[(size_t)r * (size_t)pr.nk + (size_t)k] = ns[k] - prev[k], prev[k] = ns[k];
    }
  }
  tdsl_prof_read(ns, pr.nk);
  tdsl_prof_stop();
  if (!rc) {
    double *sorted = malloc(sizeof *sorted * (size_t)o->reps);
    memcpy(sorted, ms, sizeof *sorted * (size_t)o->reps);
    qsort(sorted, (size_t)o->reps, sizeof *sorted, cmp_double);
    pr.median_ms = o->reps % 2 ? sorted[o->reps / 2] : (sorted[o->reps / 2 - 1] + sorted[o->reps / 2]) / 2;
    pr.min_ms = sorted[0];
    pr.max_ms = sorted[o->reps - 1];
    // the calls averaged: those no slower than the median call (a call another process
    // slowed down does not skew the shares), all of them without per-call times
    double sum = 0, kernels = 0;
    int kept = 0;
    if (calls)
      for (int k = 0; k < pr.nk; k++)
        ns[k] = 0;
    for (int r = 0; r < o->reps; r++) {
      if (calls && ms[r] > pr.median_ms)
        continue;
      sum += ms[r];
      kept++;
      for (int k = 0; calls && k < pr.nk; k++)
        ns[k] += calls[(size_t)r * (size_t)pr.nk + (size_t)k];
    }
    pr.averaged = kept;
    pr.mean_ms = sum / kept;
    free(sorted);
    count_bytes(&pr);
    for (int i = 0; i < pr.nk; i++) {
      ProfKernel *pk = &pr.ks[i];
      pk->index = i;
      pk->k = p->kernels.data[i];
      pk->flops = pk->k->flops;
      pk->f64 = kernel_f64(p, pk->k);
      pk->ms = ns[i] / 1e6 / kept;
      kernels += pk->ms;
      pr.kernel_bytes = td_sat_add(pr.kernel_bytes, pk->bytes);
    }
    // the marks' clock and the call's are read apart: the kernels never exceed the call
    if (kernels > pr.mean_ms)
      pr.mean_ms = kernels;
    pr.outside_ms = pr.mean_ms - kernels;
    for (int i = 0; i < pr.nk; i++)
      pr.ks[i].schedule = schedule_text(cx, pr.ks[i].k);
    // A cached peak that a kernel outran was measured while the machine was busy: no
    // code runs faster than the FMA units, nor streams more than the caches hold faster
    // than DRAM, so the roofline is measured again (both peaks and the bandwidth, the
    // better numbers kept) rather than printed as a fraction over 100%.
    int outran = place_kernels(&pr);
    if (outran && !strcmp(pr.roof.source, "cached")) {
      note_outran(&pr.roof, outran);
      rc = roofline_get(pr.threads, true, &pr.roof);
      place_kernels(&pr);
    }
    if (o->json)
      print_json(&pr, stdout);
    else
      print_table(cx, &pr, stdout);
    if (o->plot)
      rc = roofline_svg(&pr, o->plot);
  }
  free(ms);
  free(ns);
  free(calls);
  free(prev);
  free(outs);
  free(pr.ks);
  ctx_free(cx);
  return rc;
}
