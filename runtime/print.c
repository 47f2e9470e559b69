// runtime/print.c: PyTorch 1.13's tensor repr (torch/_tensor_str.py), rebuilt in C.
//
// One formatter is chosen for the whole tensor from the elements that will be shown
// (all of them, or with more than 1000 elements only the 3 first and 3 last of each
// dim): floats print with 4 decimals, as integers with a trailing '.' when every
// finite non-zero value is whole, or in scientific notation when the magnitudes
// span more than 1000x, exceed 1e8, or (non-whole) go below 1e-4; every element is
// right-aligned to the widest. Rows wrap at 80 columns, nested dims are separated by
// blank lines as in torch, summarised dims show "...". dtypes other than torch's
// defaults (float32, int64, bool) get a ", dtype=torch.X" suffix; empty tensors
// show their size and any non-float32 dtype. The text is built in memory first so
// the suffix can be placed after measuring the last line, then written at once.
#include "tdsl.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum { LINEWIDTH = 80, THRESHOLD = 1000, EDGEITEMS = 3, INDENT = 7 /* "tensor(" */ };

typedef struct Str {
  char *s;
  size_t len, cap;
  bool oom;
} Str;

static void str_add(Str *b, const char *text, size_t n) {
  if (b->oom) return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *p = realloc(b->s, cap);
    if (!p) {
      b->oom = true;
      return;
    }
    b->s = p;
    b->cap = cap;
  }
  memcpy(b->s + b->len, text, n);
  b->len += n;
  b->s[b->len] = '\0';
}

static void str_puts(Str *b, const char *text) { str_add(b, text, strlen(text)); }

static void str_pad(Str *b, char c, int n) {
  for (int i = 0; i < n; i++) str_add(b, &c, 1);
}

typedef struct Formatter Formatter;
struct Formatter {
  tdsl_dtype dtype;
  bool floating, int_mode, sci_mode;
  int max_width;
  // a complex tensor (torch's two formatters): this one formats the real parts (re), imag
  // the imaginary parts (im), each element "re+imj" with only the real part padded
  const Formatter *imag;
  const tdsl_tensor *re, *im;
};

// Python's '{:.Nf}' / '{:.Ne}' for a double: like printf but "nan" never signed.
static int fmt_float(char *buf, size_t size, const char *spec, double v) {
  if (isnan(v)) return snprintf(buf, size, "nan");
  if (isinf(v)) return snprintf(buf, size, v < 0 ? "-inf" : "inf");
  return snprintf(buf, size, spec, v);
}

// The unpadded text of one element.
static int raw_text(const Formatter *f, char *buf, size_t size, const tdsl_tensor *t,
                    const int64_t *idx) {
  switch (t->dtype) {
  case TDSL_BOOL:
    return snprintf(buf, size, "%s", tdsl_tensor_get_f64(t, idx) != 0 ? "True" : "False");
  case TDSL_U8:
  case TDSL_I8:
  case TDSL_I16:
  case TDSL_I32:
  case TDSL_I64: return snprintf(buf, size, "%lld", (long long)tdsl_tensor_get_i64(t, idx));
  default: break;
  }
  double v = tdsl_tensor_get_f64(t, idx);
  if (f->sci_mode) return fmt_float(buf, size, "%.4e", v);
  if (f->int_mode) {
    int n = fmt_float(buf, size, "%.0f", v);
    if (isfinite(v) && (size_t)n + 1 < size) {
      buf[n++] = '.';
      buf[n] = '\0';
    }
    return n;
  }
  return fmt_float(buf, size, "%.4f", v);
}

// Calls visit on every shown index: with summarize, dims longer than 2 * EDGEITEMS
// contribute only their first and last EDGEITEMS positions.
static void for_shown(const tdsl_tensor *t, bool summarize,
                      void (*visit)(void *, const tdsl_tensor *, const int64_t *), void *arg) {
  int nd = t->ndim;
  int64_t pos[TDSL_MAX_DIMS] = {0}, count[TDSL_MAX_DIMS], idx[TDSL_MAX_DIMS];
  for (int d = 0; d < nd; d++)
    count[d] = summarize && t->shape[d] > 2 * EDGEITEMS ? 2 * EDGEITEMS : t->shape[d];
  do {
    for (int d = 0; d < nd; d++)
      idx[d] = count[d] < t->shape[d] && pos[d] >= EDGEITEMS ? t->shape[d] - 2 * EDGEITEMS + pos[d]
                                                             : pos[d];
    visit(arg, t, idx);
  } while (tdsl_index_next(nd, count, pos));
}

typedef struct Scan {
  Formatter *f;
  bool any;
  double amin, amax;
} Scan;

static void scan_value(void *arg, const tdsl_tensor *t, const int64_t *idx) {
  Scan *s = arg;
  if (!s->f->floating) {
    char buf[64];
    int n = raw_text(s->f, buf, sizeof buf, t, idx);
    if (n > s->f->max_width) s->f->max_width = n;
    return;
  }
  double v = tdsl_tensor_get_f64(t, idx);
  if (!isfinite(v) || v == 0) return;
  double a = fabs(v);
  if (!s->any || a < s->amin) s->amin = a;
  if (!s->any || a > s->amax) s->amax = a;
  s->any = true;
  if (v != ceil(v)) s->f->int_mode = false;
}

static void width_value(void *arg, const tdsl_tensor *t, const int64_t *idx) {
  Formatter *f = arg;
  double v = tdsl_tensor_get_f64(t, idx);
  if (!isfinite(v) || v == 0) return;  // torch measures finite non-zero values only
  char buf[64];
  int n = raw_text(f, buf, sizeof buf, t, idx);
  if (n > f->max_width) f->max_width = n;
}

static Formatter make_formatter(const tdsl_tensor *t, bool summarize) {
  Formatter f = {.dtype = t->dtype,
                 .floating = tdsl_dtype_is_float(t->dtype),
                 .int_mode = true,
                 .max_width = 1};
  Scan s = {.f = &f};
  for_shown(t, summarize, scan_value, &s);
  if (!f.floating || !s.any) return f;
  if (f.int_mode)
    f.sci_mode = s.amax / s.amin > 1000. || s.amax > 1.e8;
  else
    f.sci_mode = s.amax / s.amin > 1000. || s.amax > 1.e8 || s.amin < 1.e-4;
  for_shown(t, summarize, width_value, &f);  // int mode's "%.0f." already counts the '.'
  return f;
}

static void add_elem(Str *b, const Formatter *f, const tdsl_tensor *t, const int64_t *idx) {
  char buf[64];
  int n = raw_text(f, buf, sizeof buf, f->imag ? f->re : t, idx);
  str_pad(b, ' ', f->max_width - n);
  str_puts(b, buf);
  if (f->imag) {
    raw_text(f->imag, buf, sizeof buf, f->im, idx);
    if (buf[0] != '-' && buf[0] != '+') str_puts(b, "+");
    str_puts(b, buf);
    str_puts(b, "j");
  }
}

// _tensor_str_with_formatter for dims [d, ndim) at the fixed leading index idx[0..d).
static void add_dims(Str *b, const Formatter *f, const tdsl_tensor *t, int64_t *idx, int d,
                     int indent, bool summarize) {
  int64_t n = t->shape[d];
  bool cut = summarize && n > 2 * EDGEITEMS;
  int64_t shown = cut ? 2 * EDGEITEMS : n;
  str_puts(b, "[");
  if (d == t->ndim - 1) {
    int per_line = (LINEWIDTH - indent) / (f->max_width + 2 + (f->imag ? f->imag->max_width + 1 : 0));
    if (per_line < 1) per_line = 1;
    int64_t items = shown + (cut ? 1 : 0);  // " ..." is an item of its own
    for (int64_t k = 0, i = 0; k < items; k++) {
      if (k > 0) {
        if (k % per_line == 0) {
          str_puts(b, ",\n");
          str_pad(b, ' ', indent + 1);
        } else {
          str_puts(b, ", ");
        }
      }
      if (cut && k == EDGEITEMS) {
        str_puts(b, " ...");
        continue;
      }
      idx[d] = cut && i >= EDGEITEMS ? n - 2 * EDGEITEMS + i : i;
      i++;
      add_elem(b, f, t, idx);
    }
  } else {
    int rest = t->ndim - d;  // the dim count of this sub-tensor
    for (int64_t k = 0, i = 0; k < shown + (cut ? 1 : 0); k++) {
      if (k > 0) {
        str_puts(b, ",");
        str_pad(b, '\n', rest - 1);
        str_pad(b, ' ', indent + 1);
      }
      if (cut && k == EDGEITEMS) {
        str_puts(b, "...");
        continue;
      }
      idx[d] = cut && i >= EDGEITEMS ? n - 2 * EDGEITEMS + i : i;
      i++;
      add_dims(b, f, t, idx, d + 1, indent + 1, summarize);
    }
  }
  str_puts(b, "]");
}

static const char *torch_dtype(tdsl_dtype dt) {
  static const char *const names[TDSL_DTYPE_COUNT] = {
      "torch.bool",     "torch.int32",   "torch.int64",  "torch.float16",
      "torch.bfloat16", "torch.float32", "torch.float64", "torch.uint8",
      "torch.int8",     "torch.int16",   "torch.complex64", "torch.complex128"};
  return (unsigned)dt < TDSL_DTYPE_COUNT ? names[dt] : "?";
}

void tdsl_print(FILE *out, const tdsl_tensor *t) {
  Str b = {0};
  char suffixes[2][128];
  int nsuf = 0;
  str_puts(&b, "tensor(");
  if (!t->storage || tdsl_tensor_numel(t) == 0) {
    if (t->ndim != 1) {
      int n = snprintf(suffixes[nsuf], sizeof suffixes[0], "size=(");
      for (int i = 0; i < t->ndim; i++)
        n += snprintf(suffixes[nsuf] + n, sizeof suffixes[0] - (size_t)n, "%s%lld", i ? ", " : "",
                      (long long)t->shape[i]);
      snprintf(suffixes[nsuf] + n, sizeof suffixes[0] - (size_t)n, ")");
      nsuf++;
    }
    if (t->dtype != TDSL_F32)
      snprintf(suffixes[nsuf++], sizeof suffixes[0], "dtype=%s", torch_dtype(t->dtype));
    str_puts(&b, "[]");
  } else {
    if (t->dtype != TDSL_F32 && t->dtype != TDSL_I64 && t->dtype != TDSL_BOOL && t->dtype != TDSL_C64)
      snprintf(suffixes[nsuf++], sizeof suffixes[0], "dtype=%s", torch_dtype(t->dtype));
    bool summarize = tdsl_tensor_numel(t) > THRESHOLD;
    tdsl_tensor pairs = {0}, parts[2] = {{0}};
    Formatter f, imag;
    if (tdsl_dtype_is_complex(t->dtype) && tdsl_tensor_as_real(&pairs, t) == 0) {
      for (int k = 0; k < 2; k++)  // pairs[..., k]: the real and the imaginary parts
        tdsl_tensor_view(&parts[k], &pairs, t->ndim, t->shape, pairs.strides, pairs.offset + k);
      f = make_formatter(&parts[0], summarize);
      imag = make_formatter(&parts[1], summarize);
      f.imag = &imag;
      f.re = &parts[0];
      f.im = &parts[1];
    } else {
      f = make_formatter(t, summarize);
    }
    int64_t idx[TDSL_MAX_DIMS] = {0};
    if (t->ndim == 0)
      add_elem(&b, &f, t, idx);
    else
      add_dims(&b, &f, t, idx, 0, INDENT, summarize);
    tdsl_tensor_release(&pairs);
    for (int k = 0; k < 2; k++) tdsl_tensor_release(&parts[k]);
  }
  // _add_suffixes: torch measures the last line as len - rfind('\n') + 1.
  if (b.oom) {
    fputs("tensor(<out of memory>)\n", out);
    free(b.s);
    return;
  }
  const char *nl = strrchr(b.s, '\n');
  size_t last = nl ? b.len - (size_t)(nl - b.s) + 1 : b.len + 2;
  for (int i = 0; i < nsuf; i++) {
    size_t n = strlen(suffixes[i]);
    if (last + n + 2 > LINEWIDTH) {
      str_puts(&b, ",\n");
      str_pad(&b, ' ', INDENT);
      last = INDENT + n;
    } else {
      str_puts(&b, ", ");
      last += n + 2;
    }
    str_puts(&b, suffixes[i]);
  }
  str_puts(&b, ")\n");
  if (b.oom)
    fputs("tensor(<out of memory>)\n", out);
  else
    fputs(b.s, out);
  free(b.s);
}
