// runtime/tensor.c: tensor constructors, views, strided copies and element access
// (storages themselves are runtime/storage.c's).
//
// Invariants: a tdsl_tensor with a storage holds one reference to it; every
// element its (shape, strides, offset) can reach lies inside the storage, checked
// with overflow-safe arithmetic when the tensor is built (so later strided loops
// need no checks); a zeroed tdsl_tensor owns nothing and is safe to release.
// Layout questions (contiguity, element index) are answered by view/view.c, the same
// code the compiler uses.
#include "tdsl.h"

#include <math.h>
#include <string.h>

#include "view.h"

_Static_assert(TDSL_MAX_DIMS == TD_MAX_DIMS, "runtime and compiler disagree on max dims");

static View view_of(const tdsl_tensor *t) {
  View v = {.ndim = t->ndim, .offset = t->offset};
  for (int i = 0; i < t->ndim; i++) {
    v.shape[i] = t->shape[i];
    v.strides[i] = t->strides[i];
  }
  return v;
}

void tdsl_tensor_release(tdsl_tensor *t) {
  if (!t) return;
  tdsl_storage_release(t->storage);
  memset(t, 0, sizeof *t);
}

// Checks ndim, shape and dtype; *numel gets the element count (no overflow).
static int check_shape(tdsl_dtype dt, int ndim, const int64_t *shape, int64_t *numel) {
  if ((unsigned)dt >= TDSL_DTYPE_COUNT) return tdsl_set_error("invalid dtype %d", (int)dt);
  if (ndim < 0 || ndim > TDSL_MAX_DIMS)
    return tdsl_set_error("a tensor has 0 to %d dims, not %d", TDSL_MAX_DIMS, ndim);
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 0) return tdsl_set_error("negative size %lld in dim %d", (long long)shape[i], i);
  }
  // The product of max(size, 1) bounds the numel, every contiguous stride and every
  // partial product view.c forms, so nothing downstream can overflow.
  int64_t span = 1, n;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] > 1 && __builtin_mul_overflow(span, shape[i], &span))
      return tdsl_set_error("tensor too large");
  }
  if (!view_numel_checked(ndim, shape, &n) || (uint64_t)span > SIZE_MAX / tdsl_dtype_size(dt))
    return tdsl_set_error("tensor too large");
  *numel = n;
  return 0;
}

// The view must stay inside a storage of storage_numel elements: returns 0 if the
// lowest and highest elements it reaches (computed without overflow) are inside.
static int check_extent(const View *v, int64_t storage_numel) {
  for (int i = 0; i < v->ndim; i++) {
    if (v->shape[i] == 0) return 0;  // reaches nothing
  }
  int64_t lo = v->offset, hi = v->offset;
  if (v->offset < 0 || v->offset >= storage_numel) goto out;
  for (int i = 0; i < v->ndim; i++) {
    int64_t span, st = v->strides[i], n = v->shape[i] - 1;
    if (st == INT64_MIN || __builtin_mul_overflow(st < 0 ? -st : st, n, &span)) goto out;
    if (st >= 0 ? __builtin_add_overflow(hi, span, &hi) : __builtin_sub_overflow(lo, span, &lo))
      goto out;
  }
  if (lo >= 0 && hi < storage_numel) return 0;
out:
  return tdsl_set_error("view reaches outside its storage of %lld elements",
                        (long long)storage_numel);
}

static void set_view(tdsl_tensor *t, tdsl_storage *s, tdsl_dtype dt, const View *v) {
  memset(t, 0, sizeof *t);
  t->storage = s;
  t->dtype = dt;
  t->ndim = v->ndim;
  for (int i = 0; i < v->ndim; i++) {
    t->shape[i] = v->shape[i];
    t->strides[i] = v->strides[i];
  }
  t->offset = v->offset;
}

static int tensor_new(tdsl_tensor *out, tdsl_dtype dt, int ndim, const int64_t *shape, bool zero) {
  int64_t numel;
  if (check_shape(dt, ndim, shape, &numel)) return 1;
  size_t nbytes = (size_t)numel * tdsl_dtype_size(dt);
  tdsl_storage *s = zero ? tdsl_storage_new(nbytes) : tdsl_storage_new_uninit(nbytes);
  if (!s) return 1;
  View v = view_contiguous(ndim, shape);
  set_view(out, s, dt, &v);
  return 0;
}

int tdsl_tensor_empty(tdsl_tensor *out, tdsl_dtype dt, int ndim, const int64_t *shape) {
  return tensor_new(out, dt, ndim, shape, true);
}

int tdsl_tensor_empty_uninit(tdsl_tensor *out, tdsl_dtype dt, int ndim, const int64_t *shape) {
  return tensor_new(out, dt, ndim, shape, false);
}

// Builds the View for (shape, strides or contiguous, offset) after checking it.
static int make_view(tdsl_dtype dt, int ndim, const int64_t *shape, const int64_t *strides,
                     int64_t offset, int64_t storage_numel, View *v) {
  int64_t numel;
  if (check_shape(dt, ndim, shape, &numel)) return 1;
  *v = view_contiguous(ndim, shape);
  if (strides) {
    for (int i = 0; i < ndim; i++) v->strides[i] = strides[i];
  }
  v->offset = offset;
  return check_extent(v, storage_numel);
}

int tdsl_tensor_from_data(tdsl_tensor *out, tdsl_dtype dt, int ndim, const int64_t *shape,
                          const int64_t *strides, int64_t offset, const void *data, size_t nbytes) {
  View v;
  size_t esize = tdsl_dtype_size(dt);
  if (make_view(dt, ndim, shape, strides, offset, esize ? (int64_t)(nbytes / esize) : 0, &v))
    return 1;
  if (nbytes && !data) return tdsl_set_error("no data given for %zu bytes", nbytes);
  tdsl_storage *s = tdsl_storage_new_uninit(nbytes);
  if (!s) return 1;
  if (nbytes) memcpy(s->data, data, nbytes);
  set_view(out, s, dt, &v);
  return 0;
}

int tdsl_tensor_view(tdsl_tensor *out, const tdsl_tensor *base, int ndim, const int64_t *shape,
                     const int64_t *strides, int64_t offset) {
  if (!base || !base->storage) return tdsl_set_error("view of a tensor without storage");
  View v;
  size_t esize = tdsl_dtype_size(base->dtype);
  int64_t storage_numel = esize ? (int64_t)(base->storage->nbytes / esize) : 0;
  if (make_view(base->dtype, ndim, shape, strides, offset, storage_numel, &v)) return 1;
  // out is overwritten, like every constructor's; when it is base, base's reference
  // passes to the view instead of taking a new one.
  if (out != base) tdsl_storage_retain(base->storage);
  set_view(out, base->storage, base->dtype, &v);
  return 0;
}

int64_t tdsl_tensor_numel(const tdsl_tensor *t) { return view_numel(view_of(t)); }

bool tdsl_tensor_is_contiguous(const tdsl_tensor *t) { return view_is_contiguous(view_of(t)); }

void *tdsl_tensor_data(const tdsl_tensor *t) {
  if (!t->storage) return NULL;
  return (char *)t->storage->data + t->offset * (int64_t)tdsl_dtype_size(t->dtype);
}

int64_t tdsl_tensor_elem(const tdsl_tensor *t, const int64_t *idx) {
  if (t->ndim == 0) return t->offset;
  return view_index(view_of(t), idx);
}

bool tdsl_index_next(int ndim, const int64_t *shape, int64_t *idx) {
  for (int d = ndim - 1; d >= 0; d--) {
    if (++idx[d] < shape[d]) return true;
    idx[d] = 0;
  }
  return false;
}

// Copies every element of src into dst (same dtype and shape), walking the
// innermost dim with a pointer stride and the others with an index counter.
static void strided_copy(const tdsl_tensor *dst, const tdsl_tensor *src) {
  int64_t numel = tdsl_tensor_numel(src);
  if (numel == 0) return;
  size_t es = tdsl_dtype_size(src->dtype);
  char *db = dst->storage->data, *sb = src->storage->data;
  if (tdsl_tensor_is_contiguous(dst) && tdsl_tensor_is_contiguous(src)) {
    memmove(db + dst->offset * (int64_t)es, sb + src->offset * (int64_t)es, (size_t)numel * es);
    return;
  }
  int nd = src->ndim;
  int64_t idx[TDSL_MAX_DIMS] = {0};
  int64_t inner = nd ? src->shape[nd - 1] : 1;
  int64_t sst = nd ? src->strides[nd - 1] : 0, dst_st = nd ? dst->strides[nd - 1] : 0;
  do {
    int64_t s = tdsl_tensor_elem(src, idx), d = tdsl_tensor_elem(dst, idx);
    for (int64_t i = 0; i < inner; i++, s += sst, d += dst_st)
      memcpy(db + d * (int64_t)es, sb + s * (int64_t)es, es);
  } while (nd > 1 && tdsl_index_next(nd - 1, src->shape, idx));
}

int tdsl_tensor_contiguous(tdsl_tensor *out, const tdsl_tensor *src) {
  if (!src->storage) return tdsl_set_error("contiguous copy of a tensor without storage");
  tdsl_tensor r;
  if (tdsl_tensor_empty_uninit(&r, src->dtype, src->ndim, src->shape)) return 1;
  strided_copy(&r, src);  // writes every element
  *out = r;  // after the copy: out may be src
  return 0;
}

int tdsl_tensor_copy(tdsl_tensor *dst, const tdsl_tensor *src) {
  if (!dst->storage || !src->storage) return tdsl_set_error("copy with a tensor without storage");
  if (dst->dtype != src->dtype)
    return tdsl_set_error("copy from %s to %s", tdsl_dtype_name(src->dtype),
                          tdsl_dtype_name(dst->dtype));
  bool same = dst->ndim == src->ndim;
  for (int i = 0; same && i < src->ndim; i++) same = dst->shape[i] == src->shape[i];
  if (!same) return tdsl_set_error("copy between tensors of different shapes");
  strided_copy(dst, src);
  return 0;
}

static void *elem_ptr(const tdsl_tensor *t, const int64_t *idx) {
  return (char *)t->storage->data + tdsl_tensor_elem(t, idx) * (int64_t)tdsl_dtype_size(t->dtype);
}

// One element's bytes, whatever its dtype (read and written with memcpy: storage
// offsets carry no alignment promise).
typedef union Elem {
  uint8_t b;
  int8_t i8;
  int16_t i16;
  int32_t i32;
  int64_t i64;
  uint16_t h;
  float f;
  double d;
  float cf[2];  // c64: (real, imaginary)
  double cd[2]; // c128
} Elem;

double tdsl_tensor_get_f64(const tdsl_tensor *t, const int64_t *idx) {
  Elem e;
  memcpy(&e, elem_ptr(t, idx), tdsl_dtype_size(t->dtype));
  switch (t->dtype) {
  case TDSL_BOOL: return e.b != 0;
  case TDSL_U8: return e.b;
  case TDSL_I8: return e.i8;
  case TDSL_I16: return e.i16;
  case TDSL_I32: return e.i32;
  case TDSL_I64: return (double)e.i64;
  case TDSL_F16: return tdsl_f16_to_f32(e.h);
  case TDSL_BF16: return tdsl_bf16_to_f32(e.h);
  case TDSL_F32: return e.f;
  case TDSL_F64: return e.d;
  case TDSL_C64: return e.cf[0];  // the real part, as a complex number converts to float
  case TDSL_C128: return e.cd[0];
  default: return NAN;
  }
}

int64_t tdsl_tensor_get_i64(const tdsl_tensor *t, const int64_t *idx) {
  Elem e;
  memcpy(&e, elem_ptr(t, idx), tdsl_dtype_size(t->dtype));
  if (t->dtype == TDSL_U8) return e.b;
  if (t->dtype == TDSL_I8) return e.i8;
  if (t->dtype == TDSL_I16) return e.i16;
  if (t->dtype == TDSL_I32) return e.i32;
  if (t->dtype == TDSL_I64) return e.i64;
  double d = tdsl_tensor_get_f64(t, idx);
  if (isnan(d)) return 0;
  if (d >= 0x1p63) return INT64_MAX;
  if (d < -0x1p63) return INT64_MIN;
  return (int64_t)d;
}

void tdsl_tensor_set_f64(tdsl_tensor *t, const int64_t *idx, double v) {
  Elem e;
  switch (t->dtype) {
  case TDSL_BOOL: e.b = v != 0; break;
  case TDSL_U8: e.b = isnan(v) ? 0 : v >= 255 ? 255 : v <= 0 ? 0 : (uint8_t)v; break;
  case TDSL_I8: e.i8 = isnan(v) ? 0 : v >= 127 ? 127 : v <= -128 ? -128 : (int8_t)v; break;
  case TDSL_I16: e.i16 = isnan(v) ? 0 : v >= 32767 ? 32767 : v <= -32768 ? -32768 : (int16_t)v; break;
  case TDSL_I32:
    e.i32 = isnan(v) ? 0 : v >= 0x1p31 ? INT32_MAX : v < -0x1p31 ? INT32_MIN : (int32_t)v;
    break;
  case TDSL_I64:
    e.i64 = isnan(v) ? 0 : v >= 0x1p63 ? INT64_MAX : v < -0x1p63 ? INT64_MIN : (int64_t)v;
    break;
  case TDSL_F16: e.h = tdsl_f64_to_f16(v); break;
  case TDSL_BF16: e.h = tdsl_f64_to_bf16(v); break;
  case TDSL_F32: e.f = (float)v; break;
  case TDSL_F64: e.d = v; break;
  case TDSL_C64: e.cf[0] = (float)v, e.cf[1] = 0; break;
  case TDSL_C128: e.cd[0] = v, e.cd[1] = 0; break;
  default: return;
  }
  memcpy(elem_ptr(t, idx), &e, tdsl_dtype_size(t->dtype));
}

int tdsl_tensor_as_real(tdsl_tensor *out, const tdsl_tensor *z) {
  if (!z->storage || (z->dtype != TDSL_C64 && z->dtype != TDSL_C128) || z->ndim >= TDSL_MAX_DIMS)
    return tdsl_set_error("view_as_real of a %s tensor of %d dims", tdsl_dtype_name(z->dtype), z->ndim);
  View v = view_as_real(view_of(z));
  tdsl_storage *s = z->storage;
  tdsl_dtype dt = z->dtype == TDSL_C64 ? TDSL_F32 : TDSL_F64;
  if (out != z) tdsl_storage_retain(s);  // out == z: z's reference passes to the view
  set_view(out, s, dt, &v);
  return 0;
}

int tdsl_tensor_as_complex(tdsl_tensor *out, const tdsl_tensor *x) {
  View v;
  if (!x->storage || (x->dtype != TDSL_F32 && x->dtype != TDSL_F64) || !view_as_complex(view_of(x), &v))
    return tdsl_set_error("view_as_complex of a %s tensor that is not (real, imaginary) pairs: a last dim of "
                          "size 2 and stride 1, even strides and offset", tdsl_dtype_name(x->dtype));
  tdsl_storage *s = x->storage;
  tdsl_dtype dt = x->dtype == TDSL_F32 ? TDSL_C64 : TDSL_C128;
  if (out != x) tdsl_storage_retain(s);
  set_view(out, s, dt, &v);
  return 0;
}
