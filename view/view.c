// view/view.c: the pure stride/offset algebra on View values, matching PyTorch 1.13
// number for number (shape, stride(), storage_offset(), is_contiguous()).
// Invariants: every function takes and returns Views by value, allocates nothing,
// does no I/O and includes only libc, because this file is compiled into both the
// compiler and libtdslrt. Preconditions (dims in range, indices normalised) are the
// caller's job and are asserted; the operations that can fail for reasons only known
// here (reshape, expand, as_strided, infer_shape) return false instead.
#include "view.h"

#include <assert.h>

#ifndef NDEBUG  // helpers used only inside assert
static bool dim_ok(View v, int d) { return d >= 0 && d < v.ndim; }

// n distinct dims in [0, ndim); a permutation when n == ndim.
static bool distinct_dims(const int *dims, int n, int ndim) {
  bool seen[TD_MAX_DIMS] = {false};
  for (int i = 0; i < n; i++) {
    if (dims[i] < 0 || dims[i] >= ndim || seen[dims[i]])
      return false;
    seen[dims[i]] = true;
  }
  return true;
}
#endif

// Remove dim d, shifting the later dims down.
static View drop_dim(View v, int d) {
  assert(dim_ok(v, d));
  View r = v;
  for (int i = d; i + 1 < v.ndim; i++) {
    r.shape[i] = v.shape[i + 1];
    r.strides[i] = v.strides[i + 1];
  }
  r.ndim--;
  r.shape[r.ndim] = r.strides[r.ndim] = 0;
  return r;
}

// *out = a * b for a, b >= 0; true (and *out untouched) when that overflows int64.
static bool mul_overflows(int64_t a, int64_t b, int64_t *out) {
  if (b != 0 && a > INT64_MAX / b)
    return true;
  *out = a * b;
  return false;
}

View view_contiguous(int ndim, const int64_t *shape) {
  assert(ndim >= 0 && ndim <= TD_MAX_DIMS);
  View v = {.ndim = ndim};
  int64_t stride = 1;
  for (int i = ndim - 1; i >= 0; i--) {
    assert(shape[i] >= 0);
    v.shape[i] = shape[i];
    v.strides[i] = stride;
    // a zero-size dim does not zero the strides; the product wraps as PyTorch's int64
    // does (only a zero-size view can have strides that overflow)
    stride = (int64_t)((uint64_t)stride * (uint64_t)(shape[i] > 1 ? shape[i] : 1));
  }
  return v;
}

View view_scalar(void) { return (View){.ndim = 0}; }

int64_t view_numel(View v) {
  int64_t n = 1;
  for (int i = 0; i < v.ndim; i++)
    n *= v.shape[i];
  return n;
}

// A zero dim anywhere makes the product 0 even when the other dims would overflow.
bool view_numel_checked(int ndim, const int64_t *shape, int64_t *numel) {
  int64_t n = 1;
  bool overflow = false;
  for (int i = 0; i < ndim; i++) {
    assert(shape[i] >= 0);
    if (shape[i] == 0) {
      *numel = 0;
      return true;
    }
    overflow |= mul_overflows(n, shape[i], &n);
  }
  if (!overflow)
    *numel = n;
  return !overflow;
}

// PyTorch's rule: empty tensors are contiguous; size-1 dims may have any stride.
bool view_is_contiguous(View v) {
  if (view_numel(v) == 0)
    return true;
  int64_t expect = 1;
  for (int i = v.ndim - 1; i >= 0; i--) {
    if (v.shape[i] == 1)
      continue;
    if (v.strides[i] != expect)
      return false;
    expect *= v.shape[i];
  }
  return true;
}

bool view_equal(View a, View b) {
  if (a.ndim != b.ndim || a.offset != b.offset)
    return false;
  for (int i = 0; i < a.ndim; i++)
    if (a.shape[i] != b.shape[i] || a.strides[i] != b.strides[i])
      return false;
  return true;
}

bool view_same_elems(View a, View b) {
  if (a.ndim != b.ndim || a.offset != b.offset)
    return false;
  for (int i = 0; i < a.ndim; i++)
    if (a.shape[i] != b.shape[i] || (a.shape[i] > 1 && a.strides[i] != b.strides[i]))
      return false;
  return true;
}

bool view_extent(View v, int64_t *lo, int64_t *hi) {
  if (view_numel(v) == 0)
    return false;
  *lo = *hi = v.offset;
  for (int i = 0; i < v.ndim; i++) {
    int64_t span = (v.shape[i] - 1) * v.strides[i];
    if (span < 0)
      *lo += span;
    else
      *hi += span;
  }
  return true;
}

View view_transpose(View v, int a, int b) {
  assert(dim_ok(v, a) && dim_ok(v, b));
  View r = v;
  r.shape[a] = v.shape[b], r.strides[a] = v.strides[b];
  r.shape[b] = v.shape[a], r.strides[b] = v.strides[a];
  return r;
}

View view_permute(View v, const int *perm) {
  assert(distinct_dims(perm, v.ndim, v.ndim));
  View r = v;
  for (int i = 0; i < v.ndim; i++) {
    r.shape[i] = v.shape[perm[i]];
    r.strides[i] = v.strides[perm[i]];
  }
  return r;
}

void view_movedim_perm(int ndim, int n, const int *src, const int *dst, int *perm) {
  assert(distinct_dims(src, n, ndim) && distinct_dims(dst, n, ndim));
  bool src_used[TD_MAX_DIMS] = {0}, dst_used[TD_MAX_DIMS] = {0};
  for (int i = 0; i < n; i++) {
    perm[dst[i]] = src[i];
    src_used[src[i]] = dst_used[dst[i]] = true;
  }
  for (int i = 0, s = 0; i < ndim; i++) {  // the other dims keep their order
    if (dst_used[i]) continue;
    while (src_used[s]) s++;
    perm[i] = s++;
  }
}

// The new dim's stride is PyTorch's: 1 at the end, else the span of the dim it precedes.
View view_unsqueeze(View v, int dim) {
  assert(dim >= 0 && dim <= v.ndim && v.ndim < TD_MAX_DIMS);
  View r = v;
  for (int i = v.ndim; i > dim; i--) {
    r.shape[i] = v.shape[i - 1];
    r.strides[i] = v.strides[i - 1];
  }
  r.shape[dim] = 1;
  r.strides[dim] = dim == v.ndim ? 1 : v.shape[dim] * v.strides[dim];
  r.ndim++;
  return r;
}

View view_squeeze_all(View v) {
  for (int i = v.ndim - 1; i >= 0; i--)
    if (v.shape[i] == 1)
      v = drop_dim(v, i);
  return v;
}

// squeeze(0) of a 0-d tensor is allowed by PyTorch and changes nothing.
View view_squeeze(View v, int dim) {
  if (v.ndim == 0) {
    assert(dim == 0);
    return v;
  }
  assert(dim_ok(v, dim));
  return v.shape[dim] == 1 ? drop_dim(v, dim) : v;
}

// Walks the target dims from the right. An existing dim keeps its stride unless a
// size-1 dim is expanded (stride 0); a new leading dim of size 1 gets the span of the
// dim after it (PyTorch's choice; 0 when there is none, as for a 0-d source), and a
// new leading dim of any other size gets stride 0.
bool view_expand(View v, int ndim, const int64_t *shape, View *out, int *bad_dim) {
  assert(ndim <= TD_MAX_DIMS);
  *bad_dim = -1;
  if (ndim < v.ndim)
    return false;
  View r = {.ndim = ndim, .offset = v.offset};
  int64_t next_span = 0;
  for (int i = ndim - 1; i >= 0; i--) {
    int d = i - (ndim - v.ndim);
    int64_t size = d >= 0 ? v.shape[d] : 1;
    int64_t stride = d >= 0 ? v.strides[d] : next_span;
    int64_t want = shape[i];
    if (want == -1 && d >= 0)
      want = size;
    if (want < 0 || (want != size && size != 1)) {
      *bad_dim = i;
      return false;
    }
    if (want != size)
      stride = 0;
    r.shape[i] = want;
    r.strides[i] = stride;
    next_span = want * stride;
  }
  *out = r;
  return true;
}

View view_slice(View v, int dim, int64_t start, int64_t stop, int64_t step) {
  assert(dim_ok(v, dim) && step > 0);
  int64_t n = v.shape[dim];
  if (start == VIEW_SLICE_NONE)
    start = 0;
  if (stop == VIEW_SLICE_NONE)
    stop = n;
  if (start < 0)
    start += n;
  if (stop < 0)
    stop += n;
  start = start < 0 ? 0 : start > n ? n : start;
  stop = stop < start ? start : stop > n ? n : stop;
  View r = v;
  r.offset += start * v.strides[dim];
  r.shape[dim] = stop == start ? 0 : (stop - start - 1) / step + 1;
  // wraps like PyTorch's int64 product when a huge step overflows it (the dim then has
  // size 1, where the stride is never used to address an element)
  r.strides[dim] = (int64_t)((uint64_t)v.strides[dim] * (uint64_t)step);
  return r;
}

View view_narrow(View v, int dim, int64_t start, int64_t length) {
  assert(dim_ok(v, dim) && start >= 0 && length >= 0 && start + length <= v.shape[dim]);
  return view_slice(v, dim, start, start + length, 1);
}

View view_select(View v, int dim, int64_t index) {
  assert(dim_ok(v, dim) && index >= 0 && index < v.shape[dim]);
  int64_t offset = v.offset + index * v.strides[dim];
  View r = drop_dim(v, dim);
  r.offset = offset;
  return r;
}

// The diagonal becomes the last dim with stride s1 + s2. An empty diagonal (offset
// off the end) keeps the input's offset, as PyTorch does.
View view_diagonal(View v, int64_t offset, int dim1, int dim2) {
  assert(dim_ok(v, dim1) && dim_ok(v, dim2) && dim1 != dim2);
  int64_t n1 = v.shape[dim1], n2 = v.shape[dim2];
  int64_t s1 = v.strides[dim1], s2 = v.strides[dim2];
  int64_t len = offset >= 0 ? (n1 < n2 - offset ? n1 : n2 - offset)
                            : (n1 + offset < n2 ? n1 + offset : n2);
  if (len < 0)
    len = 0;
  int64_t base = v.offset;
  if (len > 0)
    base += offset >= 0 ? offset * s2 : -offset * s1;
  View r = drop_dim(v, dim1 > dim2 ? dim1 : dim2);
  r = drop_dim(r, dim1 < dim2 ? dim1 : dim2);
  r.shape[r.ndim] = len;
  r.strides[r.ndim] = s1 + s2;
  r.ndim++;
  r.offset = base;
  return r;
}

View view_flip(View v, int ndim, const int *dims) {
  assert(distinct_dims(dims, ndim, v.ndim));
  for (int k = 0; k < ndim; k++) {
    int d = dims[k];
    if (v.shape[d] > 0)
      v.offset += (v.shape[d] - 1) * v.strides[d];
    v.strides[d] = -v.strides[d];
  }
  return v;
}

// PyTorch's view stride computation. The old dims are split into chunks that are
// contiguous with each other (size-1 dims join any chunk); each chunk must be covered
// exactly by a run of new dims, which take strides inside the chunk.
View view_windows(View v, int first, int n, const int64_t *out, const int64_t *k, const int64_t *s,
                  const int64_t *dil) {
  assert(first >= 0 && first + n <= v.ndim && v.ndim + n <= TD_MAX_DIMS);
  View r = v;
  for (int i = 0; i < n; i++) {
    int d = first + i;
    int64_t st = v.strides[d];
    r.shape[d] = out[i];
    r.strides[d] = st * s[i];
    r.shape[v.ndim + i] = k[i];
    r.strides[v.ndim + i] = st * dil[i];
  }
  r.ndim = v.ndim + n;
  return r;
}

bool view_reshape(View v, int ndim, const int64_t *shape, View *out) {
  assert(ndim >= 0 && ndim <= TD_MAX_DIMS);
  int64_t numel = view_numel(v), new_numel;
  assert(view_numel_checked(ndim, shape, &new_numel) && new_numel == numel);
  (void)new_numel;
  View r = {.ndim = ndim, .offset = v.offset};
  bool same_shape = ndim == v.ndim;
  for (int i = 0; i < ndim; i++) {
    r.shape[i] = shape[i];
    same_shape &= shape[i] == v.shape[i];
  }
  if (v.ndim == 0) {  // a 0-d tensor views as all stride 1
    for (int i = 0; i < ndim; i++)
      r.strides[i] = 1;
  } else if (numel == 0) {  // same shape keeps its strides, else contiguous ones
    r = same_shape ? v : view_contiguous(ndim, shape);
    r.offset = v.offset;
  } else {
    int nd = ndim - 1;
    int64_t base = v.strides[v.ndim - 1], chunk = 1;
    for (int od = v.ndim - 1; od >= 0; od--) {
      chunk *= v.shape[od];
      bool chunk_ends = od == 0 || (v.shape[od - 1] != 1 && v.strides[od - 1] != chunk * base);
      if (!chunk_ends)
        continue;
      int64_t covered = 1;
      while (nd >= 0 && (covered < chunk || shape[nd] == 1)) {
        r.strides[nd] = covered * base;
        covered *= shape[nd--];
      }
      if (covered != chunk)
        return false;
      if (od > 0) {
        base = v.strides[od - 1];
        chunk = 1;
      }
    }
    if (nd != -1)
      return false;
  }
  *out = r;
  return true;
}

// PyTorch's infer_size: a -1 takes numel / (product of the others), which must divide
// exactly and must not be 0 (ambiguous).
bool view_infer_shape(int64_t numel, int ndim, const int64_t *req, int64_t *shape) {
  int infer = -1;
  int64_t known = 1;
  bool overflow = false, has_zero = false;
  for (int i = 0; i < ndim; i++) {
    shape[i] = req[i];
    if (req[i] == -1) {
      if (infer >= 0)
        return false;
      infer = i;
    } else if (req[i] < 0) {
      return false;
    } else {
      has_zero |= req[i] == 0;
      overflow |= mul_overflows(known, req[i], &known);
    }
  }
  if (has_zero)
    known = 0;  // a zero dim makes any overflow among the others moot
  else if (overflow)
    return false;
  if (infer < 0)
    return known == numel;
  if (known == 0 || numel % known != 0)
    return false;
  shape[infer] = numel / known;
  return true;
}

// Negative sizes, strides or offset are errors; an empty view passes the bounds check
// whatever its offset (PyTorch checks storage size only for a non-empty result).
bool view_as_strided(int ndim, const int64_t *shape, const int64_t *strides, int64_t offset,
                     int64_t storage_numel, View *out) {
  assert(ndim >= 0 && ndim <= TD_MAX_DIMS);
  if (offset < 0)
    return false;
  View r = {.ndim = ndim, .offset = offset};
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 0 || strides[i] < 0)
      return false;
    r.shape[i] = shape[i];
    r.strides[i] = strides[i];
  }
  if (view_numel(r) != 0) {
    int64_t last = offset, span;  // the highest element read
    for (int i = 0; i < ndim; i++) {
      if (mul_overflows(shape[i] - 1, strides[i], &span) || last > INT64_MAX - span)
        return false;
      last += span;
    }
    if (last >= storage_numel)
      return false;
  }
  *out = r;
  return true;
}

int64_t view_index(View v, const int64_t *idx) {
  int64_t e = v.offset;
  for (int i = 0; i < v.ndim; i++) {
    assert(idx[i] >= 0 && idx[i] < v.shape[i]);
    e += idx[i] * v.strides[i];
  }
  return e;
}

bool view_next_index(int ndim, int64_t *idx, const int64_t *shape) {
  int d = ndim - 1;
  for (; d >= 0 && ++idx[d] == shape[d]; d--)
    idx[d] = 0;
  return d >= 0;
}

// Unravels r's offset into per-dim starts, then gives each reader dim the outermost
// dim whose contiguous stride divides its own; the bounds check makes the unravel unique.
bool view_decompose(View r, int pndim, const int64_t *pshape, ViewMap *m) {
  *m = (ViewMap){0};
  for (int d = 0; d < r.ndim; d++)
    m->pdim[d] = -1;
  if (view_numel(r) == 0)
    return true;  // reads nothing
  int64_t cs[TD_MAX_DIMS], numel = 1;
  for (int q = pndim - 1; q >= 0; q--) {
    cs[q] = numel;
    numel *= pshape[q] > 1 ? pshape[q] : 1;
  }
  if (r.offset < 0 || r.offset >= numel)
    return false;
  int64_t rem = r.offset;
  for (int q = 0; q < pndim; q++) {
    m->start[q] = rem / cs[q];
    rem -= m->start[q] * cs[q];
  }
  for (int d = 0; d < r.ndim; d++) {
    if (r.shape[d] == 1 || r.strides[d] == 0)
      continue;
    int best = -1;  // the outermost producer dim whose stride divides this one
    for (int q = 0; q < pndim && best < 0; q++)
      if (pshape[q] > 1 && r.strides[d] % cs[q] == 0)
        best = q;
    if (best < 0)
      return false;
    m->pdim[d] = best;
    m->mult[d] = r.strides[d] / cs[best];
  }
  for (int q = 0; q < pndim; q++) {
    int64_t lo = m->start[q], hi = m->start[q];
    for (int d = 0; d < r.ndim; d++)
      if (m->pdim[d] == q) {
        int64_t span = m->mult[d] * (r.shape[d] - 1);
        lo += span < 0 ? span : 0;
        hi += span > 0 ? span : 0;
      }
    if (lo < 0 || hi >= (pshape[q] > 1 ? pshape[q] : 1))
      return false;
  }
  return true;
}

// Walk the dims from the smallest stride up (size-1 dims last): each stride must be the
// product of the sizes below it. Negative strides never qualify.
bool view_is_dense(View v) {
  if (view_is_contiguous(v))
    return true;
  int perm[TD_MAX_DIMS];
  for (int i = 0; i < v.ndim; i++)
    perm[i] = i;
  for (int i = 1; i < v.ndim; i++)  // insertion sort: at most 8 dims
    for (int j = i; j > 0; j--) {
      int a = perm[j - 1], b = perm[j];
      bool a_last = v.shape[a] < 2, b_last = v.shape[b] < 2;
      if (a_last == b_last ? v.strides[a] <= v.strides[b] : !a_last)
        break;
      perm[j - 1] = b;
      perm[j] = a;
    }
  int64_t need = 1;
  for (int i = 0; i < v.ndim; i++) {
    int d = perm[i];
    if (v.shape[d] < 2)
      return true;
    if (v.strides[d] != need)
      return false;
    need *= v.shape[d];
  }
  return true;
}

View view_as_real(View v) {
  assert(v.ndim < TD_MAX_DIMS);
  View r = v;
  for (int i = 0; i < v.ndim; i++)
    r.strides[i] = 2 * v.strides[i];
  r.shape[v.ndim] = 2;
  r.strides[v.ndim] = 1;
  r.ndim = v.ndim + 1;
  r.offset = 2 * v.offset;
  return r;
}

bool view_as_complex(View v, View *out) {
  if (v.ndim < 1 || v.shape[v.ndim - 1] != 2 || v.strides[v.ndim - 1] != 1 || v.offset % 2)
    return false;
  View r = v;
  r.ndim = v.ndim - 1;
  for (int i = 0; i < r.ndim; i++) {
    if (v.strides[i] % 2)
      return false;
    r.strides[i] = v.strides[i] / 2;
  }
  r.offset = v.offset / 2;
  *out = r;
  return true;
}
