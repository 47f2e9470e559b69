// runtime/random.c: the seeded input generator of `tdslc run` (LANGUAGE.md §10).
// One splitmix64 stream; one draw per element in logical row-major order (through
// the tensor's strides, so a view is filled in the order its elements are read).
// A float is ((u >> 11) * 2^-53) * 2 - 1, exact in f64, then rounded once to nearest
// even in its dtype; an int is u >> 62 (0..3); a bool is u >> 63; a complex number is
// two floats, the real part first.
#include "tdsl.h"

#include <string.h>

uint64_t tdsl_splitmix64_next(uint64_t *state) {
  uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

// A draw's floating value: uniform in [-1, 1) from its top 53 bits.
static double uniform_pm1(uint64_t u) { return (double)(u >> 11) * 0x1p-53 * 2.0 - 1.0; }

void tdsl_fill_random(tdsl_tensor *t, uint64_t *state) {
  if (!t->storage || tdsl_tensor_numel(t) == 0) return;
  tdsl_tensor pairs = {0};
  if (tdsl_dtype_is_complex(t->dtype) && tdsl_tensor_as_real(&pairs, t) == 0) {
    tdsl_fill_random(&pairs, state);
    tdsl_tensor_release(&pairs);
    return;
  }
  // A contiguous f32 or f64 tensor (a benchmark's large inputs) is written straight
  // through its data pointer, in the same order with the same values: the generic path
  // below costs ~20x as much per element (its index arithmetic per element).
  if ((t->dtype == TDSL_F32 || t->dtype == TDSL_F64) && tdsl_tensor_is_contiguous(t)) {
    char *p = tdsl_tensor_data(t);
    int64_t n = tdsl_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
      double v = uniform_pm1(tdsl_splitmix64_next(state));
      if (t->dtype == TDSL_F64) {
        memcpy(p + 8 * i, &v, 8);
      } else {
        float f = (float)v;
        memcpy(p + 4 * i, &f, 4);
      }
    }
    return;
  }
  int64_t idx[TDSL_MAX_DIMS] = {0};
  do {
    uint64_t u = tdsl_splitmix64_next(state);
    double v;
    switch (t->dtype) {
    case TDSL_BOOL: v = (double)(u >> 63); break;
    case TDSL_U8:
    case TDSL_I8:
    case TDSL_I16:
    case TDSL_I32:
    case TDSL_I64: v = (double)(u >> 62); break;
    default: v = uniform_pm1(u); break;
    }
    tdsl_tensor_set_f64(t, idx, v);
  } while (tdsl_index_next(t->ndim, t->shape, idx));
}
