// runtime/dtype.c: dtype names and sizes, and the f16/bf16 conversions.
// Narrowing is done by integer arithmetic on the bits of a double, so every
// conversion rounds exactly once, to nearest even, whatever the host's FPU: f32
// widens to f64 exactly first. NaN stays a quiet NaN with its sign; values past
// the largest finite number become inf; results too small become (signed) zero or
// a subnormal, both rounded correctly.
#include "tdsl.h"

#include <math.h>
#include <string.h>

// view/dtypes.def is the table; tdsl.h's enum must list it in its order.
enum {
#define X(id, name, size, cls) ROW_##id,
#include "dtypes.def"
#undef X
  ROWS
};
#define X(id, name, size, cls) _Static_assert((int)TDSL_##id == ROW_##id, "tdsl.h's dtype order");
#include "dtypes.def"
#undef X
_Static_assert((int)ROWS == (int)TDSL_DTYPE_COUNT, "tdsl.h's dtype count");
static const char *const dtype_names[TDSL_DTYPE_COUNT] = {
#define X(id, name, size, cls) name,
#include "dtypes.def"
#undef X
};
static const size_t dtype_sizes[TDSL_DTYPE_COUNT] = {
#define X(id, name, size, cls) size,
#include "dtypes.def"
#undef X
};
static const char dtype_classes[TDSL_DTYPE_COUNT] = {
#define X(id, name, size, cls) cls,
#include "dtypes.def"
#undef X
};

const char *tdsl_dtype_name(tdsl_dtype dt) {
  return (unsigned)dt < TDSL_DTYPE_COUNT ? dtype_names[dt] : "?";
}

size_t tdsl_dtype_size(tdsl_dtype dt) {
  return (unsigned)dt < TDSL_DTYPE_COUNT ? dtype_sizes[dt] : 0;
}

int tdsl_dtype_from_name(const char *name, tdsl_dtype *out) {
  for (int i = 0; i < TDSL_DTYPE_COUNT; i++) {
    if (name && strcmp(name, dtype_names[i]) == 0) {
      *out = (tdsl_dtype)i;
      return 0;
    }
  }
  return tdsl_set_error("unknown dtype '%s'", name ? name : "(null)");
}

bool tdsl_dtype_is_complex(tdsl_dtype dt) {
  return (unsigned)dt < TDSL_DTYPE_COUNT && dtype_classes[dt] == 'c';
}

bool tdsl_dtype_is_float(tdsl_dtype dt) {
  return (unsigned)dt < TDSL_DTYPE_COUNT && dtype_classes[dt] == 'f';
}

static uint64_t f64_bits(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}

static double bits_f64(uint64_t u) {
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}

// Rounds d to a binary format with `ebits` exponent bits and `mbits` stored
// mantissa bits (f16: 5/10, bf16: 8/7) and returns its bits.
static uint32_t narrow_f64(double d, int ebits, int mbits) {
  uint64_t u = f64_bits(d);
  uint32_t sign = (uint32_t)(u >> 63) << (ebits + mbits);
  int e64 = (int)((u >> 52) & 0x7ff);
  uint64_t m64 = u & ((UINT64_C(1) << 52) - 1);
  uint32_t inf = ((UINT32_C(1) << ebits) - 1) << mbits;
  if (e64 == 0x7ff) {
    if (m64 == 0) return sign | inf;
    // Quiet NaN; keep the top payload bits.
    return sign | inf | (UINT32_C(1) << (mbits - 1)) | (uint32_t)(m64 >> (52 - mbits));
  }
  if (e64 == 0) return sign;  // zero or f64 subnormal: far below half the narrow minimum
  int bias = (1 << (ebits - 1)) - 1;
  int e = e64 - 1023, emin = 1 - bias;
  uint64_t m = m64 | (UINT64_C(1) << 52);  // value = m * 2^(e - 52)
  int shift = 52 - mbits + (e < emin ? emin - e : 0);
  if (shift > 60) return sign;  // below a quarter of the smallest subnormal
  uint64_t q = m >> shift, rem = m & ((UINT64_C(1) << shift) - 1);
  uint64_t half = UINT64_C(1) << (shift - 1);
  if (rem > half || (rem == half && (q & 1))) q++;
  // Normal: q in [2^mbits, 2^(mbits+1)]; the encoding is (biased e - 1) << mbits plus
  // q, and a carry out of the mantissa bumps the exponent by itself. Subnormal: the
  // exponent field is 0 and q may round up into the smallest normal, again by itself.
  uint64_t bits = e < emin ? q : ((uint64_t)(e + bias - 1) << mbits) + q;
  if (bits >= inf) return sign | inf;
  return sign | (uint32_t)bits;
}

// Widens the bits of a narrow format to double (exact).
static double widen(uint32_t h, int ebits, int mbits) {
  uint64_t sign = (uint64_t)((h >> (ebits + mbits)) & 1) << 63;
  int e = (int)((h >> mbits) & ((1u << ebits) - 1));
  uint64_t m = h & ((1u << mbits) - 1);
  int bias = (1 << (ebits - 1)) - 1;
  if (e == (1 << ebits) - 1) {
    if (m == 0) return bits_f64(sign | (UINT64_C(0x7ff) << 52));
    return bits_f64(sign | (UINT64_C(0x7ff) << 52) | (UINT64_C(1) << 51) | (m << (52 - mbits)));
  }
  double mag = e == 0 ? ldexp((double)m, 1 - bias - mbits)
                      : ldexp((double)(m | (UINT64_C(1) << mbits)), e - bias - mbits);
  return sign ? -mag : mag;
}

float tdsl_f16_to_f32(uint16_t h) { return (float)widen(h, 5, 10); }
float tdsl_bf16_to_f32(uint16_t h) { return (float)widen(h, 8, 7); }
uint16_t tdsl_f64_to_f16(double d) { return (uint16_t)narrow_f64(d, 5, 10); }
uint16_t tdsl_f64_to_bf16(double d) { return (uint16_t)narrow_f64(d, 8, 7); }
uint16_t tdsl_f32_to_f16(float f) { return tdsl_f64_to_f16((double)f); }
uint16_t tdsl_f32_to_bf16(float f) { return tdsl_f64_to_bf16((double)f); }
