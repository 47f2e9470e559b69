// tests/unit/test_view.c: the view algebra of view/view.c. Hand-written tests pin one
// behaviour each; pytorch_table_is_reproduced_exactly replays every chain of
// view_cases.inc (generated from PyTorch 1.13 by tests/tools/gen_view_cases.py) and
// compares shape, strides, offset and contiguity number for number.
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "view/view.h"

#define I64(...) ((const int64_t[]){__VA_ARGS__})

static void assert_view(View v, int ndim, const int64_t *shape, const int64_t *strides, int64_t offset) {
  assert_int_equal(v.ndim, ndim);
  for (int i = 0; i < ndim; i++) {
    assert_int_equal(v.shape[i], shape[i]);
    assert_int_equal(v.strides[i], strides[i]);
  }
  assert_int_equal(v.offset, offset);
}

static View contig(int ndim, const int64_t *shape) { return view_contiguous(ndim, shape); }

// --- constructors and queries ---------------------------------------------------------

static void contiguous_strides_are_row_major(void **state) {
  (void)state;
  assert_view(contig(3, I64(2, 3, 4)), 3, I64(2, 3, 4), I64(12, 4, 1), 0);
}

static void contiguous_strides_treat_zero_size_dims_as_one(void **state) {
  (void)state;
  assert_view(contig(3, I64(2, 0, 3)), 3, I64(2, 0, 3), I64(3, 3, 1), 0);
}

static void scalar_has_no_dims_and_one_element(void **state) {
  (void)state;
  View s = view_scalar();
  assert_int_equal(s.ndim, 0);
  assert_int_equal(s.offset, 0);
  assert_int_equal(view_numel(s), 1);
  assert_true(view_is_contiguous(s));
}

static void numel_is_zero_when_any_dim_is_zero(void **state) {
  (void)state;
  assert_int_equal(view_numel(contig(3, I64(2, 3, 4))), 24);
  assert_int_equal(view_numel(contig(3, I64(2, 0, 4))), 0);
}

static void numel_checked_detects_overflow(void **state) {
  (void)state;
  int64_t n = -1;
  assert_true(view_numel_checked(2, I64(INT64_MAX / 2, 2), &n));
  assert_int_equal(n, INT64_MAX - 1);
  assert_false(view_numel_checked(3, I64(1 << 30, 1 << 30, 1 << 30), &n));
  assert_true(view_numel_checked(4, I64(1 << 30, 1 << 30, 1 << 30, 0), &n));
  assert_int_equal(n, 0);
  assert_true(view_numel_checked(0, NULL, &n));
  assert_int_equal(n, 1);
}

static void is_contiguous_ignores_size_one_dims(void **state) {
  (void)state;
  View v = {.ndim = 3, .shape = {2, 1, 3}, .strides = {3, 99, 1}};
  assert_true(view_is_contiguous(v));
  v.strides[2] = 2;
  assert_false(view_is_contiguous(v));
}

static void is_contiguous_holds_for_every_empty_view(void **state) {
  (void)state;
  View v = {.ndim = 2, .shape = {0, 3}, .strides = {7, 5}};
  assert_true(view_is_contiguous(v));
}

static void equal_compares_only_the_used_dims(void **state) {
  (void)state;
  View a = contig(2, I64(2, 3)), b = a;
  b.shape[5] = 42;  // beyond ndim: ignored
  assert_true(view_equal(a, b));
  b.offset = 1;
  assert_false(view_equal(a, b));
  assert_false(view_equal(a, contig(2, I64(3, 2))));
}

static void same_elems_ignores_the_strides_of_size_1_dims(void **state) {
  (void)state;
  View a = contig(3, I64(2, 1, 3)), b = a;
  b.strides[1] = 99;  // never stepped
  assert_false(view_equal(a, b));
  assert_true(view_same_elems(a, b));
  b.strides[2] = 2;
  assert_false(view_same_elems(a, b));
  b = a, b.offset = 1;
  assert_false(view_same_elems(a, b));
  assert_false(view_same_elems(a, contig(3, I64(2, 3, 1))));
}

static void extent_spans_negative_and_positive_strides(void **state) {
  (void)state;
  int64_t lo, hi;
  View v = {.ndim = 2, .shape = {3, 4}, .strides = {-4, 1}, .offset = 8};
  assert_true(view_extent(v, &lo, &hi));
  assert_int_equal(lo, 0);
  assert_int_equal(hi, 11);
  assert_true(view_extent(view_scalar(), &lo, &hi));
  assert_int_equal(lo, 0);
  assert_int_equal(hi, 0);
  assert_false(view_extent(contig(2, I64(0, 4)), &lo, &hi));
}

static void index_is_offset_plus_strided_sum(void **state) {
  (void)state;
  View v = {.ndim = 2, .shape = {3, 4}, .strides = {1, 3}, .offset = 5};
  assert_int_equal(view_index(v, I64(2, 3)), 5 + 2 + 9);
  assert_int_equal(view_index(view_scalar(), NULL), 0);
}

static void next_index_walks_row_major_then_wraps(void **state) {
  (void)state;
  const int64_t shape[2] = {2, 3};
  int64_t idx[2] = {0, 0}, seen = 1;
  while (seen < 7 && view_next_index(2, idx, shape)) {  // (a bound: a walk that never ends fails)
    assert_int_equal(idx[0] * 3 + idx[1], seen);  // the last dim fastest, one step at a time
    seen++;
  }
  assert_int_equal(seen, 6);
  assert_int_equal(idx[0], 0);  // back to zeros after the last index
  assert_int_equal(idx[1], 0);
  assert_false(view_next_index(0, NULL, NULL));  // a 0-d shape has one index
}

// --- reordering ------------------------------------------------------------------------

static void transpose_swaps_shape_and_strides(void **state) {
  (void)state;
  View t = view_transpose(contig(2, I64(3, 4)), 0, 1);
  assert_view(t, 2, I64(4, 3), I64(1, 4), 0);
  assert_false(view_is_contiguous(t));
}

static void permute_reorders_dims_and_keeps_offset(void **state) {
  (void)state;
  View v = contig(3, I64(2, 3, 4));
  v.offset = 7;
  assert_view(view_permute(v, (const int[]){2, 0, 1}), 3, I64(4, 2, 3), I64(1, 12, 4), 7);
}

static void unsqueeze_gives_the_new_dim_the_span_of_the_next(void **state) {
  (void)state;
  View t = view_transpose(contig(2, I64(2, 3)), 0, 1);  // (3, 2) strides (1, 3)
  assert_view(view_unsqueeze(t, 0), 3, I64(1, 3, 2), I64(3, 1, 3), 0);
  assert_view(view_unsqueeze(t, 1), 3, I64(3, 1, 2), I64(1, 6, 3), 0);
  assert_view(view_unsqueeze(t, 2), 3, I64(3, 2, 1), I64(1, 3, 1), 0);
  assert_view(view_unsqueeze(view_scalar(), 0), 1, I64(1), I64(1), 0);
}

static void squeeze_all_drops_every_size_one_dim(void **state) {
  (void)state;
  assert_view(view_squeeze_all(contig(4, I64(1, 3, 1, 2))), 2, I64(3, 2), I64(2, 1), 0);
  assert_view(view_squeeze_all(contig(2, I64(1, 1))), 0, NULL, NULL, 0);
}

static void squeeze_of_a_dim_larger_than_one_changes_nothing(void **state) {
  (void)state;
  View v = contig(3, I64(1, 3, 1));
  assert_true(view_equal(view_squeeze(v, 1), v));
  assert_view(view_squeeze(v, 2), 2, I64(1, 3), I64(3, 1), 0);
  assert_true(view_equal(view_squeeze(view_scalar(), 0), view_scalar()));
}

// --- expand ------------------------------------------------------------------------------

static void expand_gives_stride_zero_to_expanded_dims(void **state) {
  (void)state;
  View out;
  int bad;
  assert_true(view_expand(contig(2, I64(3, 1)), 3, I64(2, -1, 4), &out, &bad));
  assert_view(out, 3, I64(2, 3, 4), I64(0, 1, 0), 0);
}

static void expand_gives_new_size_one_leading_dims_the_next_span(void **state) {
  (void)state;
  View out;
  int bad;
  assert_true(view_expand(contig(1, I64(3)), 3, I64(1, 1, 3), &out, &bad));
  assert_view(out, 3, I64(1, 1, 3), I64(3, 3, 1), 0);
  assert_true(view_expand(view_scalar(), 2, I64(1, 1), &out, &bad));
  assert_view(out, 2, I64(1, 1), I64(0, 0), 0);
}

static void expand_reports_the_dim_that_does_not_match(void **state) {
  (void)state;
  View out;
  int bad;
  assert_false(view_expand(contig(2, I64(3, 1)), 3, I64(2, 4, 4), &out, &bad));
  assert_int_equal(bad, 1);
  assert_false(view_expand(contig(2, I64(3, 1)), 3, I64(-1, 3, 4), &out, &bad));
  assert_int_equal(bad, 0);
  assert_false(view_expand(contig(2, I64(3, 1)), 1, I64(3), &out, &bad));
  assert_int_equal(bad, -1);
}

// --- indexing ----------------------------------------------------------------------------

static void slice_clamps_bounds_like_python(void **state) {
  (void)state;
  View v = contig(1, I64(10));
  assert_view(view_slice(v, 0, 2, 8, 3), 1, I64(2), I64(3), 2);
  assert_view(view_slice(v, 0, -3, VIEW_SLICE_NONE, 1), 1, I64(3), I64(1), 7);
  assert_view(view_slice(v, 0, -100, 100, 4), 1, I64(3), I64(4), 0);
  assert_view(view_slice(v, 0, 20, VIEW_SLICE_NONE, 1), 1, I64(0), I64(1), 10);
  assert_view(view_slice(v, 0, 7, 3, 1), 1, I64(0), I64(1), 7);
}

// x[::INT64_MAX] on a dim of stride 4: one element; the stride product wraps as
// PyTorch's int64 does instead of overflowing (UB, caught by the sanitizer build).
static void slice_with_a_huge_step_keeps_one_element(void **state) {
  (void)state;
  View v = contig(2, I64(3, 4));
  View r = view_slice(v, 0, VIEW_SLICE_NONE, VIEW_SLICE_NONE, INT64_MAX);
  assert_int_equal(r.shape[0], 1);
  assert_int_equal(r.strides[0], (int64_t)((uint64_t)4 * (uint64_t)INT64_MAX));
  assert_int_equal(r.offset, 0);
}

static void narrow_is_a_unit_step_slice(void **state) {
  (void)state;
  assert_view(view_narrow(contig(2, I64(3, 4)), 1, 1, 2), 2, I64(3, 2), I64(4, 1), 1);
}

static void select_moves_the_offset_and_drops_the_dim(void **state) {
  (void)state;
  assert_view(view_select(contig(3, I64(2, 3, 4)), 1, 2), 2, I64(2, 4), I64(12, 1), 8);
}

static void diagonal_appends_a_dim_with_summed_strides(void **state) {
  (void)state;
  View v = contig(3, I64(2, 3, 4));
  assert_view(view_diagonal(v, 1, 2, 0), 2, I64(3, 1), I64(4, 13), 12);
  assert_view(view_diagonal(v, -1, 1, 2), 2, I64(2, 2), I64(12, 5), 4);
}

static void empty_diagonal_keeps_the_offset(void **state) {
  (void)state;
  View v = contig(2, I64(3, 4));
  v.offset = 2;
  assert_view(view_diagonal(v, 9, 0, 1), 1, I64(0), I64(5), 2);
  assert_view(view_diagonal(v, -3, 0, 1), 1, I64(0), I64(5), 2);
}

static void flip_negates_strides_and_starts_at_the_last_element(void **state) {
  (void)state;
  View f = view_flip(contig(2, I64(3, 4)), 2, (const int[]){0, 1});
  assert_view(f, 2, I64(3, 4), I64(-4, -1), 11);
  assert_false(view_is_contiguous(f));
  assert_int_equal(view_index(f, I64(2, 3)), 0);
  assert_view(view_flip(contig(2, I64(0, 4)), 1, (const int[]){0}), 2, I64(0, 4), I64(-4, 1), 0);
}

// --- reshape -----------------------------------------------------------------------------

static void reshape_of_a_contiguous_view_is_contiguous(void **state) {
  (void)state;
  View v = contig(3, I64(2, 3, 4)), out;
  v.offset = 5;
  assert_true(view_reshape(v, 4, I64(1, 6, 2, 2), &out));
  assert_view(out, 4, I64(1, 6, 2, 2), I64(24, 4, 2, 1), 5);
}

static void reshape_merges_only_dims_contiguous_with_each_other(void **state) {
  (void)state;
  View t = view_transpose(contig(3, I64(2, 3, 4)), 1, 2), out;  // (2, 4, 3) strides (12, 1, 4)
  assert_true(view_reshape(t, 2, I64(2, 12), &out) == false);
  assert_true(view_reshape(t, 4, I64(2, 2, 2, 3), &out));
  assert_view(out, 4, I64(2, 2, 2, 3), I64(12, 2, 1, 4), 0);
}

static void reshape_of_an_empty_view_uses_fresh_strides(void **state) {
  (void)state;
  View t = view_transpose(contig(2, I64(0, 3)), 0, 1), out;
  assert_true(view_reshape(t, 2, I64(0, 3), &out));
  assert_view(out, 2, I64(0, 3), I64(3, 1), 0);
  assert_true(view_reshape(t, 2, I64(3, 0), &out));
  assert_view(out, 2, I64(3, 0), I64(1, 3), 0);
}

static void infer_shape_resolves_one_minus_one(void **state) {
  (void)state;
  int64_t s[3];
  assert_true(view_infer_shape(24, 3, I64(2, -1, 4), s));
  assert_int_equal(s[1], 3);
  assert_true(view_infer_shape(0, 2, I64(-1, 3), s));
  assert_int_equal(s[0], 0);
  assert_false(view_infer_shape(24, 2, I64(-1, -1), s));
  assert_false(view_infer_shape(24, 2, I64(5, -1), s));
  assert_false(view_infer_shape(24, 2, I64(-2, -12), s));
  assert_false(view_infer_shape(0, 2, I64(0, -1), s));  // ambiguous
  assert_false(view_infer_shape(24, 2, I64(4, 5), s));
}

static void as_strided_rejects_negative_strides_and_reads_past_storage(void **state) {
  (void)state;
  View out;
  assert_true(view_as_strided(2, I64(3, 3), I64(0, 1), 9, 12, &out));
  assert_view(out, 2, I64(3, 3), I64(0, 1), 9);
  assert_false(view_as_strided(2, I64(3, 3), I64(0, 1), 10, 12, &out));
  assert_false(view_as_strided(1, I64(2), I64(-1), 4, 12, &out));
  assert_false(view_as_strided(1, I64(2), I64(1), -1, 12, &out));
  assert_true(view_as_strided(2, I64(0, 5), I64(100, 100), 50, 12, &out));
  assert_false(view_as_strided(1, I64(3), I64(INT64_MAX), 0, 12, &out));
}

// --- the PyTorch table ---------------------------------------------------------------------

enum {
  VS_VIEW, VS_RESHAPE, VS_TRANSPOSE, VS_T, VS_T_ALL, VS_PERMUTE, VS_UNSQUEEZE, VS_SQUEEZE_ALL,
  VS_SQUEEZE, VS_EXPAND, VS_SLICE, VS_SELECT, VS_NARROW, VS_DIAGONAL, VS_AS_STRIDED, VS_FLIP,
};
#define VC_NONE INT64_MIN

typedef struct Step {
  int op, n;
  int64_t a[2 * TD_MAX_DIMS + 1];
} Step;

typedef struct Case {
  const char *expr;
  int ndim;
  int64_t shape[TD_MAX_DIMS];
  int nsteps;
  Step steps[4];
  int fail_step;
  View want;
  bool contiguous;
} Case;

static const Case cases[] = {
#include "view_cases.inc"
};

// Dims wrap as PyTorch's maybe_wrap_dim (a 0-d tensor accepts -1 and 0).
static int wrap(int64_t d, int ndim) {
  int n = ndim > 0 ? ndim : 1;
  return (int)(d < 0 ? d + n : d);
}

// Applies one step the way sema + lowering would; false where the view algebra says no.
static bool apply_step(View v, const Step *s, int64_t storage, View *out) {
  int dims[TD_MAX_DIMS];
  int64_t shape[TD_MAX_DIMS];
  const int64_t *a = s->a;
  int bad;
  switch (s->op) {
  case VS_VIEW:
  case VS_RESHAPE:
    return view_infer_shape(view_numel(v), s->n, a, shape) && view_reshape(v, s->n, shape, out);
  case VS_TRANSPOSE:
    *out = view_transpose(v, wrap(a[0], v.ndim), wrap(a[1], v.ndim));
    return true;
  case VS_T:
    *out = v.ndim == 2 ? view_transpose(v, 0, 1) : v;
    return true;
  case VS_T_ALL:
  case VS_PERMUTE:
  case VS_FLIP:
    for (int i = 0; i < (s->op == VS_T_ALL ? v.ndim : s->n); i++)
      dims[i] = s->op == VS_T_ALL ? v.ndim - 1 - i : wrap(a[i], v.ndim);
    *out = s->op == VS_FLIP ? view_flip(v, s->n, dims) : view_permute(v, dims);
    return true;
  case VS_UNSQUEEZE:
    *out = view_unsqueeze(v, wrap(a[0], v.ndim + 1));
    return true;
  case VS_SQUEEZE_ALL:
    *out = view_squeeze_all(v);
    return true;
  case VS_SQUEEZE:
    *out = view_squeeze(v, wrap(a[0], v.ndim));
    return true;
  case VS_EXPAND:
    return view_expand(v, s->n, a, out, &bad);
  case VS_SLICE:
    *out = view_slice(v, (int)a[0], a[1] == VC_NONE ? VIEW_SLICE_NONE : a[1],
                      a[2] == VC_NONE ? VIEW_SLICE_NONE : a[2], a[3]);
    return true;
  case VS_SELECT: {
    int d = wrap(a[0], v.ndim);
    *out = view_select(v, d, a[1] < 0 ? a[1] + v.shape[d] : a[1]);
    return true;
  }
  case VS_NARROW: {
    int d = wrap(a[0], v.ndim);
    *out = view_narrow(v, d, a[1] < 0 ? a[1] + v.shape[d] : a[1], a[2]);
    return true;
  }
  case VS_DIAGONAL:
    *out = view_diagonal(v, a[0], wrap(a[1], v.ndim), wrap(a[2], v.ndim));
    return true;
  case VS_AS_STRIDED: {
    int64_t off = a[2 * s->n];
    return view_as_strided(s->n, a, a + s->n, off == VC_NONE ? v.offset : off, storage, out);
  }
  }
  fail_msg("unknown step op %d", s->op);
  return false;
}

static void pytorch_table_is_reproduced_exactly(void **state) {
  (void)state;
  int ncases = (int)(sizeof cases / sizeof cases[0]), bad = 0;
  for (int c = 0; c < ncases; c++) {
    const Case *k = &cases[c];
    View v = view_contiguous(k->ndim, k->shape);
    int64_t storage = view_numel(v);
    int failed_at = -1;
    for (int s = 0; s < k->nsteps && failed_at < 0; s++) {
      View next;
      if (apply_step(v, &k->steps[s], storage, &next))
        v = next;
      else
        failed_at = s;
    }
    bool ok = failed_at == k->fail_step;
    if (ok && failed_at < 0)
      ok = view_equal(v, k->want) && view_is_contiguous(v) == k->contiguous;
    if (!ok) {
      bad++;
      print_error("case %d: %s: want fail_step %d, got %d;", c, k->expr, k->fail_step, failed_at);
      print_error(" got ndim %d offset %lld contiguous %d, shape/strides:", v.ndim, (long long)v.offset,
                  view_is_contiguous(v));
      for (int i = 0; i < v.ndim; i++)
        print_error(" %lld/%lld", (long long)v.shape[i], (long long)v.strides[i]);
      print_error("\n");
    }
  }
  print_message("%d PyTorch cases checked\n", ncases);
  assert_int_equal(bad, 0);
}

static void decompose_maps_a_transpose_to_the_producer_dims(void **state) {
  (void)state;
  int64_t p3[3] = {2, 3, 4};
  ViewMap m;
  assert_true(view_decompose(view_transpose(view_contiguous(3, p3), 0, 2), 3, p3, &m));
  assert_int_equal(m.pdim[0], 2);
  assert_int_equal(m.pdim[1], 1);
  assert_int_equal(m.pdim[2], 0);
  assert_int_equal(m.mult[0], 1);
}

static void decompose_unravels_the_offset_of_a_select_and_a_stepped_slice(void **state) {
  (void)state;
  int64_t p3[3] = {2, 3, 4};
  View s = view_slice(view_select(view_contiguous(3, p3), 1, 2), 1, 1, 4, 2);  // x[:, 2, 1::2]
  ViewMap m;
  assert_true(view_decompose(s, 3, p3, &m));
  assert_int_equal(m.start[1], 2);
  assert_int_equal(m.start[2], 1);
  assert_int_equal(m.pdim[1], 2);
  assert_int_equal(m.mult[1], 2);
}

static void decompose_walks_a_flip_backwards_from_the_last_element(void **state) {
  (void)state;
  int64_t p3[3] = {2, 3, 4};
  int d0 = 0;
  ViewMap m;
  assert_true(view_decompose(view_flip(view_contiguous(3, p3), 1, &d0), 3, p3, &m));
  assert_int_equal(m.start[0], 1);
  assert_int_equal(m.pdim[0], 0);
  assert_int_equal(m.mult[0], -1);
}

static void decompose_refuses_merged_dims_and_diagonals(void **state) {
  (void)state;
  int64_t p3[3] = {2, 3, 4};
  View merged;
  ViewMap m;
  assert_true(view_reshape(view_contiguous(3, p3), 2, (int64_t[]){6, 4}, &merged));
  assert_false(view_decompose(merged, 3, p3, &m));
  assert_false(view_decompose(view_diagonal(view_contiguous(2, (int64_t[]){4, 4}), 0, 0, 1), 2,
                              (int64_t[]){4, 4}, &m));
}

static void decompose_maps_broadcast_dims_to_no_producer_dim(void **state) {
  (void)state;
  View e;
  int bad;
  ViewMap m;
  assert_true(view_expand(view_contiguous(1, (int64_t[]){4}), 2, (int64_t[]){5, 4}, &e, &bad));
  assert_true(view_decompose(e, 1, (int64_t[]){4}, &m));
  assert_int_equal(m.pdim[0], -1);
  assert_int_equal(m.pdim[1], 0);
  assert_int_equal(m.mult[1], 1);
}

static void dense_means_some_permutation_of_the_dims_is_contiguous(void **state) {
  (void)state;
  View c = view_contiguous(3, (int64_t[]){2, 3, 4});
  assert_true(view_is_dense(c));
  assert_true(view_is_dense(view_transpose(c, 0, 2)));
  assert_true(view_is_dense(view_permute(c, (int[]){1, 2, 0})));
  assert_true(view_is_dense(view_unsqueeze(view_transpose(c, 1, 2), 1)));
  assert_false(view_is_dense(view_slice(c, 2, 0, 4, 2)));  // every other element
  assert_false(view_is_dense(view_select(c, 2, 1)));       // a column
  int d = 0, bad;
  assert_false(view_is_dense(view_flip(c, 1, &d)));        // negative strides never qualify
  View e;
  assert_true(view_expand(view_contiguous(1, (int64_t[]){4}), 2, (int64_t[]){3, 4}, &e, &bad));
  assert_false(view_is_dense(e));                          // stride 0 overlaps
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(dense_means_some_permutation_of_the_dims_is_contiguous),
      cmocka_unit_test(decompose_maps_a_transpose_to_the_producer_dims),
      cmocka_unit_test(decompose_unravels_the_offset_of_a_select_and_a_stepped_slice),
      cmocka_unit_test(decompose_walks_a_flip_backwards_from_the_last_element),
      cmocka_unit_test(decompose_refuses_merged_dims_and_diagonals),
      cmocka_unit_test(decompose_maps_broadcast_dims_to_no_producer_dim),
    cmocka_unit_test(contiguous_strides_are_row_major),
    cmocka_unit_test(contiguous_strides_treat_zero_size_dims_as_one),
    cmocka_unit_test(scalar_has_no_dims_and_one_element),
    cmocka_unit_test(numel_is_zero_when_any_dim_is_zero),
    cmocka_unit_test(numel_checked_detects_overflow),
    cmocka_unit_test(is_contiguous_ignores_size_one_dims),
    cmocka_unit_test(is_contiguous_holds_for_every_empty_view),
    cmocka_unit_test(equal_compares_only_the_used_dims),
      cmocka_unit_test(same_elems_ignores_the_strides_of_size_1_dims),
    cmocka_unit_test(extent_spans_negative_and_positive_strides),
    cmocka_unit_test(index_is_offset_plus_strided_sum),
    cmocka_unit_test(next_index_walks_row_major_then_wraps),
    cmocka_unit_test(transpose_swaps_shape_and_strides),
    cmocka_unit_test(permute_reorders_dims_and_keeps_offset),
    cmocka_unit_test(unsqueeze_gives_the_new_dim_the_span_of_the_next),
    cmocka_unit_test(squeeze_all_drops_every_size_one_dim),
    cmocka_unit_test(squeeze_of_a_dim_larger_than_one_changes_nothing),
    cmocka_unit_test(expand_gives_stride_zero_to_expanded_dims),
    cmocka_unit_test(expand_gives_new_size_one_leading_dims_the_next_span),
    cmocka_unit_test(expand_reports_the_dim_that_does_not_match),
    cmocka_unit_test(slice_clamps_bounds_like_python),
    cmocka_unit_test(slice_with_a_huge_step_keeps_one_element),
    cmocka_unit_test(narrow_is_a_unit_step_slice),
    cmocka_unit_test(select_moves_the_offset_and_drops_the_dim),
    cmocka_unit_test(diagonal_appends_a_dim_with_summed_strides),
    cmocka_unit_test(empty_diagonal_keeps_the_offset),
    cmocka_unit_test(flip_negates_strides_and_starts_at_the_last_element),
    cmocka_unit_test(reshape_of_a_contiguous_view_is_contiguous),
    cmocka_unit_test(reshape_merges_only_dims_contiguous_with_each_other),
    cmocka_unit_test(reshape_of_an_empty_view_uses_fresh_strides),
    cmocka_unit_test(infer_shape_resolves_one_minus_one),
    cmocka_unit_test(as_strided_rejects_negative_strides_and_reads_past_storage),
    cmocka_unit_test(pytorch_table_is_reproduced_exactly),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
