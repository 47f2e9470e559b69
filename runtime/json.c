// runtime/json.c: a tensor's elements as a flat JSON array (LANGUAGE.md §10); a complex
// element is the pair [real, imaginary], each part a float of the complex dtype's parts.
//
// Floats are printed as the shortest decimal that reads back, as a double rounded
// to the element's dtype, to the same value (so f16 0.0999755859375 prints "0.1"),
// laid out the way Python's repr(float) lays out its digits: fixed notation when the
// decimal exponent is in [-4, 16), else "d.ddde+XX" with at least two exponent
// digits; always a '.' or an exponent; "-0.0" kept; non-finite values as the JSON
// strings "nan", "inf", "-inf". Output never depends on the locale's decimal point:
// the digits are produced by "%.*e", whose only non-digit characters we re-lay out.
#include "tdsl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// The value of the decimal text `text` once stored in dt.
static double read_back(const char *text, tdsl_dtype dt) {
  double d = strtod(text, NULL);
  switch (dt) {
  case TDSL_F16: return tdsl_f16_to_f32(tdsl_f64_to_f16(d));
  case TDSL_BF16: return tdsl_bf16_to_f32(tdsl_f64_to_bf16(d));
  case TDSL_F32: return (float)d;
  default: return d;
  }
}

static bool same_value(double a, double b) { return a == b && signbit(a) == signbit(b); }

// Splits "%.*e" output ("-1.2345e-05") into its digits ("12345") and decimal
// exponent (-5). C locale or not, the digits are the only [0-9] before 'e'.
static void split_e(const char *text, char *digits, int *exp10) {
  int n = 0;
  const char *p = text;
  for (; *p && *p != 'e' && *p != 'E'; p++) {
    if (*p >= '0' && *p <= '9') digits[n++] = *p;
  }
  digits[n] = '\0';
  *exp10 = *p ? atoi(p + 1) : 0;
}

// Candidate text "DIGITSeEXP" (digits as an integer) for reading back.
static void candidate(char *buf, size_t size, bool neg, uint64_t mant, int exp10) {
  snprintf(buf, size, "%s%llue%d", neg ? "-" : "", (unsigned long long)mant, exp10);
}

// Shortest digits for |v| (finite, non-zero) that read back to v in dt: tries 1..17
// significant digits; at each length the correctly rounded decimal first, then its
// neighbours one unit in the last place away (at a power of two the round-trip
// interval is lopsided and the nearest decimal may fall just outside it).
static void shortest_digits(double v, tdsl_dtype dt, char *digits, int *exp10) {
  char text[64];
  bool neg = signbit(v);
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(text, sizeof text, "%.*e", prec - 1, v);
    split_e(text, digits, exp10);
    if (same_value(read_back(text, dt), v)) return;
    uint64_t mant = strtoull(digits, NULL, 10);
    int e = *exp10 - (prec - 1);  // value = mant * 10^e
    for (int step = -1; step <= 1; step += 2) {
      uint64_t m = mant + (uint64_t)(int64_t)step;
      if (m == 0) continue;
      candidate(text, sizeof text, neg, m, e);
      if (same_value(read_back(text, dt), v)) {
        // Re-normalise the neighbour (9.99 + 1 ulp = 10.00: one more digit before the
        // point); trailing zeros are stripped by the caller.
        snprintf(digits, 32, "%llu", (unsigned long long)m);
        *exp10 = e + (int)strlen(digits) - 1;
        return;
      }
    }
  }
  // Unreachable for a double: 17 digits always read back.
  snprintf(text, sizeof text, "%.16e", v);
  split_e(text, digits, exp10);
}

char *tdsl_format_float(char *buf, size_t size, double v, tdsl_dtype dt) {
  if (isnan(v)) {
    snprintf(buf, size, "nan");
    return buf;
  }
  if (isinf(v)) {
    snprintf(buf, size, v < 0 ? "-inf" : "inf");
    return buf;
  }
  if (v == 0) {
    snprintf(buf, size, signbit(v) ? "-0.0" : "0.0");
    return buf;
  }
  char digits[32], out[64];
  int x;
  shortest_digits(v, dt, digits, &x);
  size_t nd = strlen(digits);
  while (nd > 1 && digits[nd - 1] == '0') digits[--nd] = '\0';
  char *o = out;
  if (signbit(v)) *o++ = '-';
  if (x < -4 || x >= 16) {
    // d.ddde+XX
    *o++ = digits[0];
    if (nd > 1) {
      *o++ = '.';
      memcpy(o, digits + 1, nd - 1);
      o += nd - 1;
    }
    sprintf(o, "e%c%02d", x < 0 ? '-' : '+', abs(x));
  } else if (x < 0) {
    // 0.000ddd
    *o++ = '0';
    *o++ = '.';
    for (int i = 0; i < -x - 1; i++) *o++ = '0';
    memcpy(o, digits, nd);
    o[nd] = '\0';
  } else {
    // ddd.ddd or ddd00.0
    for (int i = 0; i <= x; i++) *o++ = (size_t)i < nd ? digits[i] : '0';
    *o++ = '.';
    if ((size_t)x + 1 < nd) {
      memcpy(o, digits + x + 1, nd - (size_t)x - 1);
      o += nd - (size_t)x - 1;
    } else {
      *o++ = '0';
    }
    *o = '\0';
  }
  snprintf(buf, size, "%s", out);
  return buf;
}

static void write_elem(FILE *out, const tdsl_tensor *t, const int64_t *idx) {
  char buf[64];
  switch (t->dtype) {
  case TDSL_BOOL: fputs(tdsl_tensor_get_f64(t, idx) != 0 ? "true" : "false", out); break;
  case TDSL_U8:
  case TDSL_I8:
  case TDSL_I16:
  case TDSL_I32:
  case TDSL_I64: fprintf(out, "%lld", (long long)tdsl_tensor_get_i64(t, idx)); break;
  default: {
    double v = tdsl_tensor_get_f64(t, idx);
    tdsl_format_float(buf, sizeof buf, v, t->dtype);
    if (isfinite(v))
      fputs(buf, out);
    else
      fprintf(out, "\"%s\"", buf);
  }
  }
}

void tdsl_write_json_data(FILE *out, const tdsl_tensor *t) {
  fputc('[', out);
  tdsl_tensor pairs = {0};
  bool cplx = t->storage && tdsl_dtype_is_complex(t->dtype) && tdsl_tensor_as_real(&pairs, t) == 0;
  if (t->storage && tdsl_tensor_numel(t) > 0) {
    int64_t idx[TDSL_MAX_DIMS] = {0};
    bool first = true;
    do {
      if (!first) fputs(", ", out);
      first = false;
      if (cplx) {
        for (int k = 0; k < 2; k++) {
          idx[t->ndim] = k;
          fputs(k ? ", " : "[", out);
          write_elem(out, &pairs, idx);
        }
        idx[t->ndim] = 0;
        fputc(']', out);
      } else {
        write_elem(out, t, idx);
      }
    } while (tdsl_index_next(t->ndim, t->shape, idx));
  }
  tdsl_tensor_release(&pairs);
  fputc(']', out);
}
