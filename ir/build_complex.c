// ir/build_complex.c: the complex ops as float ops. A complex value is the float value
// of its (real, imaginary) pairs, the last dim of size 2 and stride 1 (ir/ir.h's
// Value.cplx): its parts are the views select(-1, 0) and select(-1, 1), and a complex
// result is the stack of its two parts on a new last dim, which fusion computes in the
// one kernel that writes the pairs. view_as_real, view_as_complex, real and imag are
// views, no node. Formulas: NumPy's and PyTorch's (c10::complex) — a real or Python
// number operand is the complex number (x, 0), as both convert it before they compute;
// division scales by the larger of |c| and |d| (Smith's method, as c10::complex and
// NumPy do); abs is hypot; angle is atan2(im, re); exp is e^re (cos im, sin im).
// Invariant: a result flagged cplx has a contiguous last dim of 2; the operands were
// checked by frontend/sema_complex.c.
#include "ir/build.h"

#include <string.h>

static Value *part(Builder *b, Value *z, int k) {
  Value *v = build_select(b, z, z->view.ndim - 1, k);
  v->cplx = false;
  return v;
}

// The (real, imaginary) parts of an operand: a complex value's views, or (x, 0).
static void parts(Builder *b, Value *x, Value **re, Value **im) {
  if (x->cplx) {
    *re = part(b, x, 0);
    *im = part(b, x, 1);
  } else {
    *re = x;
    *im = build_float(b, 0);
  }
}

// The complex shape of an operand (a complex value's without its pair dim).
static int cshape(const Value *x, int64_t *shape) {
  if (x->is_scalar) return 0;
  int n = x->view.ndim - (x->cplx ? 1 : 0);
  memcpy(shape, x->view.shape, sizeof(int64_t) * (size_t)n);
  return n;
}

// The complex value of parts re and im (dtype dt's), broadcast to shape.
static Value *pair(Builder *b, Value *re, Value *im, DType dt, int n, const int64_t *shape) {
  Value *xs[2] = {re, im};
  for (int k = 0; k < 2; k++) {
    xs[k] = build_cast(b, xs[k], dt);
    if (xs[k]->is_scalar || xs[k]->view.ndim != n || memcmp(xs[k]->view.shape, shape, sizeof(int64_t) * (size_t)n))
      xs[k] = build_expand(b, xs[k]->is_scalar ? build_full(b, 0, NULL, xs[k], dt) : xs[k], n, shape);
  }
  Value *z = build_stack(b, xs, 2, n);
  z->cplx = true;
  return z;
}

// The complex dtype of a result of operands x and y (NULL: one operand): PyTorch's
// promotion, complex by construction.
static DType result_dtype(const Value *x, const Value *y) {
  DTypeOperand ops[2];
  int n = 0;
  const Value *vs[2] = {x, y};
  for (int i = 0; i < 2; i++) {
    const Value *v = vs[i];
    if (!v) continue;
    DType dt = v->cplx ? dtype_complex_of(v->dtype) : v->dtype;
    DTypeOperandKind kind = v->is_scalar || v->wrapped ? DTO_WRAPPED : v->view.ndim - (v->cplx ? 1 : 0) == 0
                                                                           ? DTO_ZERO_DIM : DTO_DIMMED;
    ops[n++] = (DTypeOperand){dt, kind};
  }
  DType r = dtype_result_type(ops, n);
  return dtype_is_complex(r) ? r : dtype_complex_of(r);
}

static Value *bin(Builder *b, Op op, Value *x, Value *y) { return build_binary(b, op, x, y); }

// a OP b of complex values (or one complex and a real tensor or number)
static Value *arith(Builder *b, ComplexOp op, Value *x, Value *y) {
  DType dt = result_dtype(x, y), pt = dtype_complex_part(dt);
  int64_t sx[TD_MAX_DIMS], sy[TD_MAX_DIMS], shape[TD_MAX_DIMS];
  int nx = cshape(x, sx), ny = cshape(y, sy), n = nx > ny ? nx : ny;
  for (int i = 0; i < n; i++) {  // broadcast (sema checked it)
    int64_t a = i - (n - nx) >= 0 ? sx[i - (n - nx)] : 1, c = i - (n - ny) >= 0 ? sy[i - (n - ny)] : 1;
    shape[i] = a == 1 ? c : a;
  }
  Value *a, *bb, *c, *d;
  parts(b, x, &a, &bb);
  parts(b, y, &c, &d);
  // a real operand's parts in the parts' dtype first: f64 x with c64 z computes in f32
  a = build_cast(b, a, a->is_scalar ? a->dtype : pt);
  c = build_cast(b, c, c->is_scalar ? c->dtype : pt);
  switch (op) {
  case CX_ADD: return pair(b, bin(b, OP_ADD, a, c), bin(b, OP_ADD, bb, d), pt, n, shape);
  case CX_SUB: return pair(b, bin(b, OP_SUB, a, c), bin(b, OP_SUB, bb, d), pt, n, shape);
  case CX_MUL:
    return pair(b, bin(b, OP_SUB, bin(b, OP_MUL, a, c), bin(b, OP_MUL, bb, d)),
                bin(b, OP_ADD, bin(b, OP_MUL, a, d), bin(b, OP_MUL, bb, c)), pt, n, shape);
  case CX_DIV: {
    // |c| >= |d|: r = d / c, s = 1 / (c + d r): ((a + b r) s, (b - a r) s); else r = c / d,
    // s = 1 / (d + c r): ((a r + b) s, (b r - a) s); c = d = 0: (a / |c|, b / |d|)
    Value *ac = build_unary(b, OP_ABS, c), *ad = build_unary(b, OP_ABS, d);
    Value *one = build_float(b, 1);
    Value *r1 = bin(b, OP_DIV, d, c), *s1 = bin(b, OP_DIV, one, bin(b, OP_ADD, c, bin(b, OP_MUL, d, r1)));
    Value *r2 = bin(b, OP_DIV, c, d), *s2 = bin(b, OP_DIV, one, bin(b, OP_ADD, d, bin(b, OP_MUL, c, r2)));
    Value *re1 = bin(b, OP_MUL, bin(b, OP_ADD, a, bin(b, OP_MUL, bb, r1)), s1);
    Value *im1 = bin(b, OP_MUL, bin(b, OP_SUB, bb, bin(b, OP_MUL, a, r1)), s1);
    Value *re2 = bin(b, OP_MUL, bin(b, OP_ADD, bin(b, OP_MUL, a, r2), bb), s2);
    Value *im2 = bin(b, OP_MUL, bin(b, OP_SUB, bin(b, OP_MUL, bb, r2), a), s2);
    Value *zero = build_float(b, 0);
    Value *both0 = bin(b, OP_LOGICAL_AND, bin(b, OP_EQ, ac, zero), bin(b, OP_EQ, ad, zero));
    Value *big = bin(b, OP_GE, ac, ad);
    Value *re = build_where(b, big, build_where(b, both0, bin(b, OP_DIV, a, ac), re1), re2);
    Value *im = build_where(b, big, build_where(b, both0, bin(b, OP_DIV, bb, ad), im1), im2);
    return pair(b, re, im, pt, n, shape);
  }
  default: break;
  }
  td_unreachable();
}

// The complex x's own shape (its pairs' dims but the last).
static Value *unary(Builder *b, ComplexOp op, Value *z) {
  int64_t shape[TD_MAX_DIMS];
  int n = cshape(z, shape);
  DType pt = z->dtype;
  Value *a = part(b, z, 0), *c = part(b, z, 1);
  switch (op) {
  case CX_NEG: return pair(b, build_unary(b, OP_NEG, a), build_unary(b, OP_NEG, c), pt, n, shape);
  case CX_CONJ: return pair(b, a, build_unary(b, OP_NEG, c), pt, n, shape);
  case CX_ABS: return bin(b, OP_HYPOT, a, c);
  case CX_ANGLE: return bin(b, OP_ATAN2, c, a);
  case CX_ISREAL: return bin(b, OP_EQ, c, build_float(b, 0));
  case CX_SGN: {  // z / |z|, and 0 where |z| is 0
    Value *m = bin(b, OP_HYPOT, a, c), *zero = build_float(b, 0), *is0 = bin(b, OP_EQ, m, zero);
    return pair(b, build_where(b, is0, zero, bin(b, OP_DIV, a, m)), build_where(b, is0, zero, bin(b, OP_DIV, c, m)),
                pt, n, shape);
  }
  case CX_EXP: {
    Value *m = build_unary(b, OP_EXP, a);
    return pair(b, bin(b, OP_MUL, m, build_unary(b, OP_COS, c)), bin(b, OP_MUL, m, build_unary(b, OP_SIN, c)), pt,
                n, shape);
  }
  default: break;
  }
  td_unreachable();
}

// a @ b of complex matrices: (A C - B D, A D + B C) of the parts' real products.
static Value *matmul(Builder *b, Value *x, Value *y) {
  Value *a = part(b, x, 0), *bb = part(b, x, 1), *c = part(b, y, 0), *d = part(b, y, 1);
  Value *re = bin(b, OP_SUB, build_matmul(b, a, c), build_matmul(b, bb, d));
  Value *im = bin(b, OP_ADD, build_matmul(b, a, d), build_matmul(b, bb, c));
  int64_t shape[TD_MAX_DIMS];
  int n = re->view.ndim;
  memcpy(shape, re->view.shape, sizeof(int64_t) * (size_t)n);
  return pair(b, re, im, x->dtype, n, shape);
}

// where(c, x, y): the pairs of x and y (a real one's (v, 0)) chosen by c on a new last dim.
static Value *where(Builder *b, Value *c, Value *x, Value *y) {
  DType pt = dtype_complex_part(result_dtype(x, y));
  Value *xy[2] = {x, y};
  for (int k = 0; k < 2; k++) {
    Value *v = xy[k];
    if (v->cplx) {
      xy[k] = build_cast(b, v, pt);
      xy[k]->cplx = true;
    } else {
      int64_t shape[TD_MAX_DIMS];
      int n = cshape(v, shape);
      xy[k] = pair(b, v, build_float(b, 0), pt, n, shape);
    }
  }
  Value *r = build_where(b, build_unsqueeze(b, c, c->view.ndim), xy[0], xy[1]);
  r->cplx = true;
  return r;
}

// Views of the same floats: the pairs as a float tensor, or float pairs as complex.
static Value *same_floats(Builder *b, Value *x, bool cplx) {
  Value *v = graph_view(b->g, x, x->view, b->loc);
  v->cplx = cplx;
  return v;
}

int build_complex(Builder *b, const void *args, Value **out) {
  ComplexOp op = ((const ComplexArgs *)args)->op;
  Value *x = build_in(b, 0);
  if (b->failed) return 0;
  switch (op) {
  case CX_ADD:
  case CX_SUB:
  case CX_MUL:
  case CX_DIV: out[0] = arith(b, op, x, build_in(b, 1)); break;
  case CX_MATMUL: out[0] = matmul(b, x, build_in(b, 1)); break;
  case CX_WHERE: out[0] = where(b, x, build_in(b, 1), build_in(b, 2)); break;
  case CX_REAL: out[0] = part(b, x, 0); break;
  case CX_IMAG: out[0] = part(b, x, 1); break;
  case CX_AS_REAL: out[0] = same_floats(b, x, false); break;
  case CX_AS_COMPLEX: out[0] = same_floats(b, x, true); break;
  case CX_SAME: out[0] = x; break;
  case CX_POLAR:
  case CX_MAKE: {
    Value *y = build_in(b, 1);
    int64_t shape[TD_MAX_DIMS];
    int n = x->view.ndim > y->view.ndim ? x->view.ndim : y->view.ndim;
    for (int i = 0; i < n; i++) {
      int ix = i - (n - x->view.ndim), iy = i - (n - y->view.ndim);
      int64_t s = ix >= 0 ? x->view.shape[ix] : 1, t = iy >= 0 ? y->view.shape[iy] : 1;
      shape[i] = s == 1 ? t : s;
    }
    if (op == CX_MAKE) out[0] = pair(b, x, y, x->dtype, n, shape);
    else out[0] = pair(b, bin(b, OP_MUL, x, build_unary(b, OP_COS, y)), bin(b, OP_MUL, x, build_unary(b, OP_SIN, y)),
                       x->dtype, n, shape);
    break;
  }
  default: out[0] = unary(b, op, x); break;
  }
  return 1;
}
