// view/view.h: a View maps a logical index to a storage element:
//   elem = offset + sum_k i_k * strides[k]   (strides in elements; 0 = broadcast)
// Strides are kept exactly as PyTorch 1.13 reports them (size-1 and zero-size dims
// included), so t.stride() and t.storage_offset() can be compared number for number.
// Every function here is pure: a View in, a View out, no allocation, no I/O, libc only.
// This file and view.c are compiled into both the compiler and libtdslrt.
//
// Arguments are expected already validated (dims in range and non-negative, indices
// normalised); the functions that can fail for reasons only known here (reshape,
// expand, as_strided) say so in their return value and the caller reports the error.
#ifndef TDSL_VIEW_VIEW_H
#define TDSL_VIEW_VIEW_H

#include <stdbool.h>
#include <stdint.h>

enum { TD_MAX_DIMS = 8 };

typedef struct View {
  int ndim;
  int64_t shape[TD_MAX_DIMS], strides[TD_MAX_DIMS];
  int64_t offset;
} View;

// Sentinels for omitted slice bounds (x[:b], x[a:]).
#define VIEW_SLICE_NONE INT64_MIN

View view_contiguous(int ndim, const int64_t *shape);     // row-major strides, PyTorch's: max(size,1)
View view_scalar(void);                                   // 0-d, offset 0
int64_t view_numel(View v);                               // product of shape (0 if any dim is 0)
bool view_numel_checked(int ndim, const int64_t *shape, int64_t *numel);  // false on int64 overflow
bool view_is_contiguous(View v);                          // PyTorch's is_contiguous (size-1 dims ignored)
// PyTorch's is_non_overlapping_and_dense: some permutation of the dims is contiguous.
bool view_is_dense(View v);
bool view_equal(View a, View b);
// a and b walk the same elements, index by index: view_equal but for the strides of size-1 dims (never
// stepped, so any value; a reshape or unsqueeze may set them either way).
bool view_same_elems(View a, View b);
// The range of storage elements the view touches: [*lo, *hi] inclusive; false when numel == 0.
bool view_extent(View v, int64_t *lo, int64_t *hi);

View view_transpose(View v, int a, int b);
View view_permute(View v, const int *perm);               // perm: a permutation of 0..ndim-1
// movedim's permutation of ndim dims: dim src[i] goes to dst[i] (n distinct dims each),
// the other dims keep their order.
void view_movedim_perm(int ndim, int n, const int *src, const int *dst, int *perm);
View view_unsqueeze(View v, int dim);                     // dim in [0, ndim]; PyTorch's new stride
View view_squeeze_all(View v);                            // drop every size-1 dim
View view_squeeze(View v, int dim);                       // drop dim if its size is 1, else unchanged
// PyTorch's expand: shape may hold -1 (keep) and may add leading dims.
// false: the sizes don't match (*bad_dim is the target dim that failed).
bool view_expand(View v, int ndim, const int64_t *shape, View *out, int *bad_dim);
// x[start:stop:step] on one dim with Python's clamping; bounds may be negative or
// VIEW_SLICE_NONE; step > 0.
View view_slice(View v, int dim, int64_t start, int64_t stop, int64_t step);
View view_narrow(View v, int dim, int64_t start, int64_t length);  // start in range, no clamping
View view_select(View v, int dim, int64_t index);                  // index in [0, size)
View view_diagonal(View v, int64_t offset, int dim1, int dim2);    // dim1 != dim2
View view_flip(View v, int ndim, const int *dims);                 // negative strides, zero-copy
// A complex tensor is a storage of float pairs: view_as_real's view of complex view v over
// the same bytes counted in floats (a last dim of 2, stride 1; other strides and the
// offset doubled; ndim < TD_MAX_DIMS). view_as_complex is its inverse, for a float view
// whose last dim has size 2 and stride 1 and whose other strides and offset are even.
View view_as_real(View v);
bool view_as_complex(View v, View *out);
// The sliding windows over dims [first, first + n) of v: each of those dims holds out[i]
// window positions, s[i] elements apart, and a new dim after v's last (n of them, in
// order) walks a window's k[i] taps, dil[i] elements apart. x.unfold, the pools and the
// convolutions read their windows so, with no copy. The windows must lie inside v (the
// caller pads first) and v.ndim + n <= TD_MAX_DIMS.
View view_windows(View v, int first, int n, const int64_t *out, const int64_t *k, const int64_t *s,
                  const int64_t *dil);
// PyTorch's view(): shape fully specified (no -1) with the same numel. false when
// the sizes cannot be expressed over the current strides (caller copies or reports).
bool view_reshape(View v, int ndim, const int64_t *shape, View *out);
// Resolve one -1 in a requested shape against numel. false: invalid (more than one -1,
// a negative size, or the product does not match); the caller reports PyTorch's error.
bool view_infer_shape(int64_t numel, int ndim, const int64_t *req, int64_t *shape);
// as_strided(size, stride, offset) over a storage of storage_numel elements. false
// when a stride is negative or the view would read past the storage.
bool view_as_strided(int ndim, const int64_t *shape, const int64_t *strides, int64_t offset,
                     int64_t storage_numel, View *out);
// Storage element of a logical index (idx has v.ndim entries).
int64_t view_index(View v, const int64_t *idx);
// idx (ndim entries) steps to the next index of shape in row-major order, the last dim
// fastest; false after the last one (idx is back to all zeros).
bool view_next_index(int ndim, int64_t *idx, const int64_t *shape);

// How a View r over a contiguous tensor of shape pshape walks that tensor's logical
// index: per reader dim d, pdim[d] is the dim it walks (-1: none — broadcast or size 1)
// with step mult[d]; start[q] is the index in dim q at reader index 0. Then the index
// in dim q is start[q] + sum over {d : pdim[d] = q} of mult[d] * i_d.
typedef struct ViewMap {
  int pdim[TD_MAX_DIMS];
  int64_t mult[TD_MAX_DIMS];
  int64_t start[TD_MAX_DIMS];
} ViewMap;
// false when r mixes dims (a diagonal, a merged view(-1)) or leaves the tensor. A view
// of no element decomposes trivially. Fusion uses this to recompute a producer at the
// reader's index without div/mod.
bool view_decompose(View r, int pndim, const int64_t *pshape, ViewMap *m);

#endif
