// bench/vecmath/sweep.c: the accuracy of tdsl's CPU math (ir/vecmath.c), measured on the
// code tdslc generates. bench/vecmath/sweep.py writes one tdsl function per op and
// dtype (vm_OP_f32, vm_OP_f64: out = OP(x), pow of two inputs), compiles them with
// either backend, and links them with this file, which calls them over
//   f32: every float (2^32 inputs; --stride S takes every S-th bit pattern), or
//   f64: random bit patterns (the whole range), uniform values where the function
//        varies, and the edges (0, subnormals, thresholds, inf, nan),
// and compares each result with the long double libm value: the error in ULPs of the
// result's format (subnormal results: in steps of the smallest subnormal), the worst
// input, and every result that should be exactly 0, inf or NaN (or of a sign) and is
// not. sigmoid and silu are PyTorch's formulas 1 / (1 + exp(-x)) and x / (1 + exp(-x))
// in the format, whose exp overflows (to a result of 0) where that format's exp does.
//   sweep [--stride S] [--f64-count N] [--only NAME]
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "sweep_fns.h"  // written by sweep.py (tdslc --emit=header)
#include "tdsl.h"

typedef int (*Fn1)(const tdsl_tensor *, tdsl_tensor *);
typedef int (*Fn2)(const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *);

enum { CHUNK = 1 << 22 };

static long double sig32(long double x) {
  long double t = expl(-x);
  return isinf((float)t) ? 0 : 1 / (1 + t);
}
static long double sig64(long double x) {
  long double t = expl(-x);
  return isinf((double)t) ? 0 : 1 / (1 + t);
}
static long double silu32(long double x) { return x * sig32(x); }
static long double silu64(long double x) { return x * sig64(x); }

typedef struct Case {
  const char *name;
  bool f64;
  Fn1 fn;
  Fn2 fn2;
  long double (*ref)(long double);
  long double (*ref2)(long double, long double);
  double (*refd)(double);  // f32's reference: libm's double function (within an f32 ulp's 2^-28)
  double lo, hi;  // f64: where uniform values go
} Case;

#define C1(op, lo, hi, r) \
  {#op "_f32", false, vm_##op##_f32, NULL, r##l, NULL, r, lo, hi}, \
  {#op "_f64", true, vm_##op##_f64, NULL, r##l, NULL, NULL, lo, hi}
static const Case CASES[] = {
    C1(exp, -750, 720, exp),      C1(exp2, -1080, 1030, exp2), C1(expm1, -50, 720, expm1),
    C1(log, 0, 10, log),          C1(log2, 0, 10, log2),       C1(log10, 0, 10, log10),
    C1(log1p, -1, 10, log1p),     C1(tanh, -25, 25, tanh),     C1(erf, -7, 7, erf),
    C1(erfc, -7, 30, erfc),       C1(sin, -100, 100, sin),     C1(cos, -100, 100, cos),
    {"sigmoid_f32", false, vm_sigmoid_f32, NULL, sig32, NULL, NULL, -100, 100},
    {"sigmoid_f64", true, vm_sigmoid_f64, NULL, sig64, NULL, NULL, -750, 750},
    {"silu_f32", false, vm_silu_f32, NULL, silu32, NULL, NULL, -100, 100},
    {"silu_f64", true, vm_silu_f64, NULL, silu64, NULL, NULL, -750, 750},
    {"pow_f32", false, NULL, vm_pow_f32, NULL, powl, NULL, -4, 4},
    {"pow_f64", true, NULL, vm_pow_f64, NULL, powl, NULL, -4, 4},
};

// The spacing of the format at |r| (r finite, rounded to the format).
static long double ulp_at(long double r, bool f64) {
  int e;
  frexpl(r, &e);  // |r| in [2^(e-1), 2^e)
  int p = f64 ? 53 : 24, emin = f64 ? -1021 : -125;
  if (e < emin)
    e = emin;
  return ldexpl(1, e - p);
}

typedef struct Tally {
  double worst;
  double worst_x, worst_y;
  long double worst_ref;
  double worst_got;
  uint64_t n, bad_special;
  double bad_x, bad_y, bad_got;
  long double bad_ref;
} Tally;

// The error of got against ref in ULPs; HUGE_VAL where a special value is wrong.
static double err_of(double got, long double ref, bool f64) {
  long double r = f64 ? (long double)(double)ref : (long double)(float)ref;
  if (isnan(r))
    return isnan(got) ? 0 : HUGE_VAL;
  if (isnan(got))
    return HUGE_VAL;
  if (isinf(r) || r == 0 || isinf(got))
    return (got == r && !signbit(got) == !signbit(r)) ? 0 : HUGE_VAL;
  return (double)(fabsl((long double)got - ref) / ulp_at(r, f64));
}

static void tally(Tally *t, double x, double y, double got, long double ref, bool f64) {
  double e = err_of(got, ref, f64);
  t->n++;
  if (e == HUGE_VAL) {
    if (!t->bad_special++) {
      t->bad_x = x, t->bad_y = y, t->bad_got = got;
      t->bad_ref = ref;
    }
    return;
  }
  if (e > t->worst) {
    t->worst = e;
    t->worst_x = x, t->worst_y = y, t->worst_got = got;
    t->worst_ref = ref;
  }
}

static void run_chunk(const Case *c, const void *xs, const void *ys, int64_t n, Tally *t) {
  size_t es = c->f64 ? 8 : 4;
  tdsl_dtype dt = c->f64 ? TDSL_F64 : TDSL_F32;
  int64_t shape[1] = {CHUNK};
  tdsl_tensor x, y, out;
  memset(&out, 0, sizeof out);
  if (tdsl_tensor_from_data(&x, dt, 1, shape, NULL, 0, xs, es * CHUNK) != 0) {
    fprintf(stderr, "tdsl_tensor_from_data failed\n");
    exit(1);
  }
  int rc;
  if (c->fn2) {
    tdsl_tensor_from_data(&y, dt, 1, shape, NULL, 0, ys, es * CHUNK);
    rc = c->fn2(&x, &y, &out);
    tdsl_tensor_release(&y);
  } else {
    rc = c->fn(&x, &out);
  }
  if (rc != 0) {
    fprintf(stderr, "%s failed: %d\n", c->name, rc);
    exit(1);
  }
  const void *o = tdsl_tensor_data(&out);
  int nth = 1;
#ifdef _OPENMP
#pragma omp parallel
#pragma omp single
  nth = omp_get_num_threads();
#endif
  Tally *part = calloc((size_t)nth, sizeof *part);
#ifdef _OPENMP
#pragma omp parallel
#endif
  {
    int me = 0;
#ifdef _OPENMP
    me = omp_get_thread_num();
#endif
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
    for (int64_t i = 0; i < n; i++) {
      double xv = c->f64 ? ((const double *)xs)[i] : ((const float *)xs)[i];
      double yv = ys ? (c->f64 ? ((const double *)ys)[i] : ((const float *)ys)[i]) : 0;
      double got = c->f64 ? ((const double *)o)[i] : ((const float *)o)[i];
      long double ref = c->ref2 ? c->ref2(xv, yv) : c->refd ? (long double)c->refd(xv) : c->ref(xv);
      tally(&part[me], xv, yv, got, ref, c->f64);
    }
  }
  for (int k = 0; k < nth; k++) {
    Tally *p = &part[k];
    t->n += p->n;
    if (p->bad_special && !t->bad_special) {
      t->bad_x = p->bad_x, t->bad_y = p->bad_y, t->bad_got = p->bad_got;
      t->bad_ref = p->bad_ref;
    }
    t->bad_special += p->bad_special;
    if (p->worst > t->worst) {
      t->worst = p->worst;
      t->worst_x = p->worst_x, t->worst_y = p->worst_y, t->worst_got = p->worst_got;
      t->worst_ref = p->worst_ref;
    }
  }
  free(part);
  tdsl_tensor_release(&x);
  tdsl_tensor_release(&out);
}

static uint64_t rng = 0x9E3779B97F4A7C15u;
static uint64_t next(void) {  // xorshift64*
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * 2685821657736338717u;
}
static double uniform(double lo, double hi) { return lo + (hi - lo) * (double)(next() >> 11) * 0x1p-53; }

// Edge inputs of a format: zeros, subnormals, min normal, the largest values, inf, nan,
// each with its neighbours, both signs.
static int edges(bool f64, double *v) {
  int n = 0;
  double base[] = {0,    f64 ? 0x1p-1074 : 0x1p-149, f64 ? DBL_MIN : FLT_MIN, f64 ? DBL_MAX : FLT_MAX, 1, 0.5, 2,
                   1e-8, 1e-20, 0.1, 88.72283935546875, 88.7228, 709.782712893384, 745.1332191019411,
                   103.97208, 87.336544, 17.5, 37.5, 3.9192, 5.9215, 9.19, 10.05, 26.5, 27.22, 0.84375,
                   0.875, 0.625, 0.7853981633974483, 1.5707963267948966, 3.141592653589793, 1e5, 1e7, 0x1p23,
                   0x1p25, 1e22, INFINITY, NAN};
  for (size_t i = 0; i < sizeof base / sizeof *base; i++)
    for (int s = 0; s < 2; s++) {
      double b = s ? -base[i] : base[i];
      if (!f64)
        b = (float)b;
      v[n++] = b;
      if (isfinite(b)) {
        v[n++] = f64 ? nextafter(b, INFINITY) : nextafterf((float)b, INFINITY);
        v[n++] = f64 ? nextafter(b, -INFINITY) : nextafterf((float)b, -INFINITY);
      }
    }
  return n;
}

static void sweep(const Case *c, uint64_t stride, int64_t f64_count) {
  Tally t = {0};
  size_t es = c->f64 ? 8 : 4;
  void *xs = calloc(CHUNK, es), *ys = c->fn2 ? calloc(CHUNK, es) : NULL;
  double ev[256];
  int ne = edges(c->f64, ev);
  if (!c->f64 && !c->fn2) {  // every float (or every stride-th)
    uint64_t total = ((uint64_t)1 << 32) / stride;
    for (uint64_t at = 0; at < total; at += CHUNK) {
      int64_t n = (int64_t)(total - at < CHUNK ? total - at : CHUNK);
      for (int64_t i = 0; i < n; i++) {
        uint32_t b = (uint32_t)((at + (uint64_t)i) * stride);
        memcpy((float *)xs + i, &b, 4);
      }
      run_chunk(c, xs, NULL, n, &t);
    }
  }
  // random, uniform and edge values (f64; pow in both)
  int64_t count = c->f64 || c->fn2 ? f64_count : 0;
  for (int64_t at = 0; at < count + ne * (c->fn2 ? ne : 1); at += CHUNK) {
    for (int64_t i = 0; i < CHUNK; i++) {
      int64_t k = at + i;
      double x, y = 0;
      if (k >= count) {  // the edges (pow: every pair)
        int64_t e = k - count;
        x = ev[(e / (c->fn2 ? ne : 1)) % ne];
        y = c->fn2 ? ev[e % ne] : 0;
      } else if (c->fn2) {
        x = (k & 1) ? uniform(0, 4) : uniform(-4, 4);
        y = (k & 2) ? uniform(-40, 40) : floor(uniform(-40, 40));
        if (k % 8 == 7) {
          uint64_t b = next();
          memcpy(&x, &b, 8);
        }
        if (!c->f64)
          x = (float)x, y = (float)y;
      } else if (k >= count / 2) {  // random bits after the uniform values: a huge argument
        uint64_t b = next();       // sends its whole block of sin or cos to the cold path,
        memcpy(&x, &b, 8);         // so the uniform values come first, in blocks of their own
      } else {
        x = uniform(c->lo, c->hi);
      }
      if (c->f64) {
        ((double *)xs)[i] = x;
        if (ys)
          ((double *)ys)[i] = y;
      } else {
        ((float *)xs)[i] = (float)x;
        if (ys)
          ((float *)ys)[i] = (float)y;
      }
    }
    int64_t lim = count + ne * (c->fn2 ? ne : 1);
    run_chunk(c, xs, ys, lim - at < CHUNK ? lim - at : CHUNK, &t);
  }
  printf("%-12s %12" PRIu64 " values  max %8.3f ulp at x=%-24.17g", c->name, t.n, t.worst, t.worst_x);
  if (c->fn2)
    printf(" y=%-12.9g", t.worst_y);
  printf(" (got %.17g, want %.20Lg)\n", t.worst_got, t.worst_ref);
  if (t.bad_special)
    printf("%-12s %" PRIu64 " special values wrong, e.g. x=%.17g y=%.9g: got %.17g, want %.20Lg\n", c->name,
           t.bad_special, t.bad_x, t.bad_y, t.bad_got, t.bad_ref);
  fflush(stdout);
  free(xs);
  free(ys);
}

int main(int argc, char **argv) {
  uint64_t stride = 1;
  int64_t f64_count = (int64_t)1 << 24;
  const char *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--stride") && i + 1 < argc)
      stride = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--f64-count") && i + 1 < argc)
      f64_count = strtoll(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--only") && i + 1 < argc)
      only = argv[++i];
    else {
      fprintf(stderr, "usage: sweep [--stride S] [--f64-count N] [--only NAME]\n");
      return 2;
    }
  }
  for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++)
    if (!only || strstr(CASES[i].name, only))
      sweep(&CASES[i], stride ? stride : 1, f64_count);
  return 0;
}
