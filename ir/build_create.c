// ir/build_create.c: tensors made of Python data (ir/build.h): torch.tensor's literal —
// a full() of each number, stacked level by level (a literal of no numbers: zeros(0), f32)
// —, the i64 vector of an int-list index (x[[0, 2, 4, 1]]): one arange per maximal
// arithmetic run, a cat when there are several —, and linspace and logspace: PyTorch's
// kernel, start + step i for the first half and end - step (steps - 1 - i) for the rest.
// Invariant: the front end has checked the data (one shape, at most TD_MAX_DIMS levels);
// the values are held in its arena (CreateArgs' arrays outlive the builder).
#include "ir/build.h"

#include <math.h>

// The literal's values [at, at + size of the dims from depth) as a tensor.
static Value *level(Builder *b, const CreateArgs *a, int depth, int64_t at) {
  if (depth == a->ndim) {
    const Value *v = build_scalar(b, a->dtype[at], a->f[at], a->i[at]);
    DType dt = a->dtype[at] == DT_F64 ? DT_F32 : a->dtype[at];  // a Python float: the default dtype
    return build_full(b, 0, NULL, v, dt);
  }
  int64_t n = a->shape[depth], each = 1;
  if (n == 0) return build_zeros(b, 1, &n, DT_F32);  // torch.tensor([]): f32 of shape (0,)
  for (int d = depth + 1; d < a->ndim; d++) each *= a->shape[d];
  Value *parts[BUILD_MAX_LIST];
  for (int64_t k = 0; k < n; k++) parts[k] = level(b, a, depth + 1, at + k * each);
  return build_stack(b, parts, (int)n, 0);
}

int build_literal(Builder *b, const void *args, Value **out) {
  const CreateArgs *a = args;
  Value *t = a->copy ? build_clone(b, b_in(b, 0)) : level(b, a, 0, 0);
  out[0] = a->cast == DT_COUNT ? t : build_cast(b, t, a->cast);
  return 1;
}

int build_index_list(Builder *b, const void *args, Value **out) {
  const CreateArgs *a = args;
  Value *runs[BUILD_MAX_LIST];
  int nr = 0;
  for (int64_t i = 0; i < a->n;) {
    int64_t j = i + 1, step = j < a->n ? a->i[j] - a->i[i] : 1;
    if (step == 0) step = 1, j = i + 1;  // arange needs a step: a repeat starts a new run
    else
      while (j < a->n && a->i[j] - a->i[j - 1] == step) j++;
    runs[nr++] = build_arange(b, a->i[i], a->i[j - 1] + (step > 0 ? 1 : -1), step, DT_I64);
    i = j;
  }
  out[0] = build_cat(b, runs, nr, 0);
  return 1;
}

// linspace: in the dtype for floats (halves in f32), in f64 for ints (truncated, as the
// kernel's double step is); logspace: base to the power of the f64 linspace, then the dtype
int build_linspace(Builder *b, const void *args, Value **out) {
  const CreateArgs *a = args;
  DType dt = a->cast;
  int64_t n = a->steps;
  if (n <= 1) {  // none, or start alone (PyTorch's kernel fills it)
    Value *v = b_f(b, a->log ? pow(a->base, a->start) : a->start);
    out[0] = n ? build_full(b, 1, &n, v, dt) : build_zeros(b, 1, &n, dt);
    return 1;
  }
  bool wide = a->log || !dtype_is_float(dt) || dt == DT_F64;
  DType cd = wide ? DT_F64 : DT_F32;
  double start = a->start, end = a->end;
  if (!a->log && !dtype_is_float(dt)) start = trunc(start), end = trunc(end);  // the kernel converts them first
  double step = n > 1 ? (cd == DT_F32 ? (double)(((float)end - (float)start) / (float)(n - 1))
                                      : (end - start) / (double)(n - 1)) : 0;
  Value *i = build_arange(b, 0, n, 1, cd);
  Value *lo = b_add(b, b_f(b, cd == DT_F32 ? (float)start : start), b_mul(b, i, b_f(b, step)));
  Value *hi = b_sub(b, b_f(b, cd == DT_F32 ? (float)end : end), b_mul(b, b_sub(b, b_f(b, (double)(n - 1)), i), b_f(b, step)));
  Value *v = b_where(b, b_bin(b, OP_LT, i, b_f(b, (double)(n / 2))), lo, hi);
  if (a->log) v = b_pow(b, b_f(b, a->base), v);
  out[0] = build_cast(b, v, dt);
  return 1;
}
