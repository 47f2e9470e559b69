// ir/build_complex.c: the complex ops as float ops. A complex value is the float value
// of its (real, imaginary) pairs, the last dim of size 2 and stride 1 (ir/ir.h's
// Value.cplx): its parts are the views select(-1, 0) and select(-1, 1), and a complex
// result is the stack of its two parts on a new last dim, which fusion computes in the
// one kernel that writes the pairs. view_as_real, view_as_complex, real and imag are
// views, no node. Formulas: NumPy's and PyTorch's (c10::complex) — a real or Python
// number operand is the complex number (x, 0), as both convert it before they compute;
// division scales by the larger of |c| and |d| (Smith's method, as c10::complex and
// NumPy do); abs is hypot; angle is atan2(im, re); exp is e^re (cos im, sin im); log is
// (log |z|, atan2(im, re)); sqrt is Kahan's (no cancellation, the sign of a zero
// imaginary part kept on the negative real axis: the branch cut); sin, cos and tan are
// sinh, cosh and tanh of i z (as NumPy's libm computes them), tanh Kahan's (no
// overflow); the inverse functions are logs of sqrts written so that their branch cuts
// take the side the sign of a zero says, with their odd series near 0 and log 2z beyond
// 1e8; pow is NumPy's npy_cpow (exp(w log z), integer exponents by repeated squaring,
// 0 ** w); prod multiplies halves pairwise, cumprod is log2(n) shifted products. CX_PARTS
// runs another builder (or node) of the op library on the parts: a linear op once per
// part, a product once per choice of part of each operand, summed with the powers of i
// the imaginary parts give. The values at infinities, nans and signed zeros are C99
// Annex G's as glibc (NumPy's oracle) gives them, each special case told by the parts'
// own values, so that a transcendental is read once: fusion recomputes an inlined value
// at each read.
// Invariant: a result flagged cplx has a contiguous last dim of 2; the operands were
// checked by frontend/sema_complex.c.
#include "ir/build.h"

#include <math.h>
#include <string.h>

// A complex number's parts, each a float value (or a Python number), broadcastable.
typedef struct Cx {
  Value *re, *im;
} Cx;

static Value *bin(Builder *b, Op op, Value *x, Value *y) { return build_binary(b, op, x, y); }
static Value *un(Builder *b, Op op, Value *x) { return build_unary(b, op, x); }
static Value *num(Builder *b, double v) { return build_float(b, v); }
static Value *add(Builder *b, Value *x, Value *y) { return bin(b, OP_ADD, x, y); }
static Value *sub(Builder *b, Value *x, Value *y) { return bin(b, OP_SUB, x, y); }
static Value *mul(Builder *b, Value *x, Value *y) { return bin(b, OP_MUL, x, y); }
static Value *dv(Builder *b, Value *x, Value *y) { return bin(b, OP_DIV, x, y); }
static Value *muln(Builder *b, double k, Value *x) { return mul(b, num(b, k), x); }
static Value *eq0(Builder *b, Value *x) { return bin(b, OP_EQ, x, num(b, 0)); }
static Value *or_(Builder *b, Value *x, Value *y) { return bin(b, OP_LOGICAL_OR, x, y); }
static Value *and_(Builder *b, Value *x, Value *y) { return bin(b, OP_LOGICAL_AND, x, y); }
static Value *isnan_(Builder *b, Value *x) { return bin(b, OP_NE, x, x); }
static Value *isinf_(Builder *b, Value *x) { return bin(b, OP_EQ, un(b, OP_ABS, x), num(b, INFINITY)); }
static Cx cwhere(Builder *b, Value *c, Cx x, Cx y) {
  return (Cx){build_where(b, c, x.re, y.re), build_where(b, c, x.im, y.im)};
}

// x * y, a zero factor's zero where the other is inf (of the product's sign) or nan (its own)
static Value *zmul(Builder *b, Value *x, Value *y) {
  Value *zx = bin(b, OP_COPYSIGN, num(b, 0), x), *zy = bin(b, OP_COPYSIGN, num(b, 0), y);
  Value *z = build_where(b, isnan_(b, y), zx, build_where(b, isnan_(b, x), zy, mul(b, zx, bin(b, OP_COPYSIGN, num(b, 1), y))));
  return build_where(b, or_(b, eq0(b, x), eq0(b, y)), z, mul(b, x, y));
}

static Cx cmul(Builder *b, Cx x, Cx y) {
  return (Cx){sub(b, mul(b, x.re, y.re), mul(b, x.im, y.im)), add(b, mul(b, x.re, y.im), mul(b, x.im, y.re))};
}

// x / y: |c| >= |d|: r = d / c, s = 1 / (c + d r): ((a + b r) s, (b - a r) s); else
// r = c / d, s = 1 / (d + c r): ((a r + b) s, (b r - a) s); c = d = 0: (a / |c|, b / |d|)
static Cx cdiv(Builder *b, Cx x, Cx y) {
  Value *a = x.re, *bb = x.im, *c = y.re, *d = y.im;
  Value *ac = un(b, OP_ABS, c), *ad = un(b, OP_ABS, d), *one = num(b, 1);
  Value *r1 = dv(b, d, c), *s1 = dv(b, one, add(b, c, mul(b, d, r1)));
  Value *r2 = dv(b, c, d), *s2 = dv(b, one, add(b, d, mul(b, c, r2)));
  Value *re1 = mul(b, add(b, a, mul(b, bb, r1)), s1), *im1 = mul(b, sub(b, bb, mul(b, a, r1)), s1);
  Value *re2 = mul(b, add(b, mul(b, a, r2), bb), s2), *im2 = mul(b, sub(b, mul(b, bb, r2), a), s2);
  Value *both0 = and_(b, eq0(b, ac), eq0(b, ad)), *big = bin(b, OP_GE, ac, ad);
  return (Cx){build_where(b, big, build_where(b, both0, dv(b, a, ac), re1), re2),
              build_where(b, big, build_where(b, both0, dv(b, bb, ad), im1), im2)};
}

// an inf or nan x
static Value *nonfinite(Builder *b, Value *x) {
  return un(b, OP_LOGICAL_NOT, bin(b, OP_LT, un(b, OP_ABS, x), num(b, INFINITY)));
}

// e^a (cos b, sin b), (e^a, b) for a real z; with an inf or nan b: (inf, nan) for a = +inf,
// (0, 0 with b's sign) for a = -inf, else (nan, nan). Each function of a part is read once
// (fusion recomputes an inlined value at each read).
static Cx cx_exp(Builder *b, Cx z) {
  Value *m = un(b, OP_EXP, z.re), *real = eq0(b, z.im);
  Cx r = {mul(b, m, build_where(b, real, num(b, 1), un(b, OP_COS, z.im))),
          build_where(b, real, z.im, mul(b, m, un(b, OP_SIN, z.im)))};
  Value *nf = nonfinite(b, z.im);
  r = cwhere(b, nf, (Cx){num(b, NAN), num(b, NAN)}, r);
  r = cwhere(b, and_(b, bin(b, OP_EQ, z.re, num(b, -INFINITY)), nf), (Cx){num(b, 0), bin(b, OP_COPYSIGN, num(b, 0), z.im)}, r);
  return cwhere(b, and_(b, bin(b, OP_EQ, z.re, num(b, INFINITY)), nf), (Cx){num(b, INFINITY), num(b, NAN)}, r);
}

static Cx cx_log(Builder *b, Cx z) {
  return (Cx){un(b, OP_LOG, bin(b, OP_HYPOT, z.re, z.im)), bin(b, OP_ATAN2, z.im, z.re)};
}

// Kahan's: t = sqrt((|a| + |z|) / 2), u = |b| / 2t; a >= 0: (t, u with b's sign), else
// (u, t with b's sign); |z| = 0: (0, b); b = ±inf: (inf, b)
static Cx cx_sqrt(Builder *b, Cx z) {
  Value *a = z.re, *c = z.im, *h = bin(b, OP_HYPOT, a, c);
  Value *t = un(b, OP_SQRT, add(b, muln(b, 0.5, un(b, OP_ABS, a)), muln(b, 0.5, h)));
  Value *u = dv(b, un(b, OP_ABS, c), muln(b, 2, t));
  Value *pos = bin(b, OP_GE, a, num(b, 0));
  Cx r = {build_where(b, pos, t, u), bin(b, OP_COPYSIGN, build_where(b, pos, u, t), c)};
  r = cwhere(b, eq0(b, h), (Cx){num(b, 0), c}, r);
  return cwhere(b, isinf_(b, c), (Cx){num(b, INFINITY), c}, r);
}

static Cx ctimes_i(Cx z, Builder *b) { return (Cx){un(b, OP_NEG, z.im), z.re}; }     // i z
static Cx cover_i(Cx z, Builder *b) { return (Cx){z.im, un(b, OP_NEG, z.re)}; }      // z / i

// z + c3 z^3 + c5 z^5: the odd series of asinh and atanh where |z| < 0.01 (the next
// term's share is under 5e-14 there; the log formulas' cancellation under 2e-14 above);
// a zero part stays that zero (asinh and atanh map the real and imaginary axes to themselves)
static Cx odd_series(Builder *b, Cx z, double c3, double c5) {
  Cx z2 = cmul(b, z, z), z3 = cmul(b, z2, z), z5 = cmul(b, z3, z2);
  Value *re = add(b, add(b, z.re, muln(b, c3, z3.re)), muln(b, c5, z5.re));
  Value *im = add(b, add(b, z.im, muln(b, c3, z3.im)), muln(b, c5, z5.im));
  return (Cx){build_where(b, eq0(b, z.re), z.re, re), build_where(b, eq0(b, z.im), z.im, im)};
}
static Value *cabs_lt(Builder *b, Cx z, double v) { return bin(b, OP_LT, bin(b, OP_HYPOT, z.re, z.im), num(b, v)); }
// |z| > 1e8 (inf included, nan not): where z^2 + 1 is z^2 to the last bit of a double
static Value *huge(Builder *b, Cx z) { return bin(b, OP_GT, bin(b, OP_HYPOT, z.re, z.im), num(b, 1e8)); }
// log 2z = log 2 + log z
static Cx log2z(Builder *b, Cx z) {
  Cx l = cx_log(b, z);
  return (Cx){add(b, num(b, 0.69314718055994530942), l.re), l.im};
}

// asinh z = log(w + sqrt(w^2 + 1)) of w = (|a|, b) (log 2w where |w| > 1e8), the real part
// given a's sign back
static Cx cx_asinh(Builder *b, Cx z) {
  Value *a = un(b, OP_ABS, z.re), *c = z.im;
  Cx w = {a, c};
  Cx w2 = {add(b, mul(b, sub(b, a, c), add(b, a, c)), num(b, 1)), mul(b, muln(b, 2, a), c)};
  Cx s = cx_sqrt(b, w2);
  Cx r = cwhere(b, huge(b, w), log2z(b, w), cx_log(b, (Cx){add(b, a, s.re), add(b, c, s.im)}));
  r.re = bin(b, OP_COPYSIGN, r.re, z.re);
  r.im = build_where(b, eq0(b, c), c, r.im);  // the real axis to itself (nan's too)
  return cwhere(b, cabs_lt(b, z, 0.01), odd_series(b, z, -1.0 / 6, 3.0 / 40), r);
}

// atanh z = (log(1 + w) - log(1 - w)) / 2 of w = (|a|, b) (1 / w + i pi/2 with b's sign
// where |w| > 1e8), the real part given a's sign back
static Cx cx_atanh(Builder *b, Cx z) {
  Value *a = un(b, OP_ABS, z.re), *c = z.im;
  Cx w = {a, c};
  Cx p = cx_log(b, (Cx){add(b, num(b, 1), a), c}), q = cx_log(b, (Cx){sub(b, num(b, 1), a), un(b, OP_NEG, c)});
  Cx r = {muln(b, 0.5, sub(b, p.re, q.re)), muln(b, 0.5, sub(b, p.im, q.im))};
  Value *h = bin(b, OP_HYPOT, a, c), *nc = un(b, OP_NEG, c);
  Cx inv = cwhere(b, bin(b, OP_EQ, h, num(b, INFINITY)), (Cx){num(b, 0), bin(b, OP_COPYSIGN, num(b, 0), nc)},
                  cdiv(b, (Cx){num(b, 1), num(b, 0)}, w));
  Value *far = add(b, bin(b, OP_COPYSIGN, num(b, 1.57079632679489661923), c), inv.im);
  r = cwhere(b, huge(b, w), (Cx){inv.re, build_where(b, isnan_(b, c), c, far)}, r);
  r.re = build_where(b, eq0(b, z.re), z.re, bin(b, OP_COPYSIGN, r.re, z.re));  // the imaginary axis to itself
  return cwhere(b, cabs_lt(b, z, 0.01), odd_series(b, z, 1.0 / 3, 1.0 / 5), r);
}

// acosh z = log(z + sqrt(z + 1) sqrt(z - 1)): each sqrt's cut on the real axis keeps the
// sign of a zero imaginary part, the product no cancellation for negative a; log 2z where
// |z| > 1e8
static Cx cx_acosh(Builder *b, Cx z) {
  Cx p = cx_sqrt(b, (Cx){add(b, z.re, num(b, 1)), z.im}), q = cx_sqrt(b, (Cx){sub(b, z.re, num(b, 1)), z.im});
  Cx m = cmul(b, p, q);
  Cx r = cwhere(b, huge(b, z), log2z(b, z), cx_log(b, (Cx){add(b, z.re, m.re), add(b, z.im, m.im)}));
  // on the imaginary axis: i pi/2 with b's sign (nan's too)
  r.im = build_where(b, eq0(b, z.re), bin(b, OP_COPYSIGN, num(b, 1.57079632679489661923), z.im), r.im);
  return r;
}

// Kahan's tanh: t = tan b, s = sinh a, beta = 1 + t^2, rho = sqrt(1 + s^2):
// (beta rho s, t) / (1 + beta s^2); |a| >= 22 (but a finite a with an inf or nan b: nan):
// (sign a, 4 sin b cos b e^(-2|a|)); a zero
// part of z stays (tanh maps each axis to itself)
static Cx cx_tanh(Builder *b, Cx z) {
  Value *a = z.re, *c = z.im, *one = num(b, 1);
  Value *t = un(b, OP_TAN, c), *s = un(b, OP_SINH, a), *s2 = mul(b, s, s);
  Value *beta = add(b, one, mul(b, t, t)), *rho = un(b, OP_SQRT, add(b, one, s2));
  Value *den = add(b, one, mul(b, beta, s2));
  Cx r = {dv(b, mul(b, mul(b, beta, rho), s), den), dv(b, t, den)};
  Value *aa = un(b, OP_ABS, a);
  Cx big = {bin(b, OP_COPYSIGN, one, a),
            build_where(b, nonfinite(b, c), bin(b, OP_COPYSIGN, num(b, 0), c),
                        mul(b, muln(b, 4, mul(b, un(b, OP_SIN, c), un(b, OP_COS, c))), un(b, OP_EXP, muln(b, -2, aa))))};
  Value *far = and_(b, bin(b, OP_GE, aa, num(b, 22)), or_(b, isinf_(b, a), un(b, OP_LOGICAL_NOT, nonfinite(b, c))));
  r = cwhere(b, far, big, r);
  return (Cx){build_where(b, eq0(b, a), a, r.re), build_where(b, eq0(b, c), c, r.im)};
}

// sinh z = (sinh a cos b, cosh a sin b), cosh z = (cosh a cos b, sinh a sin b); a real z
// gives (sinh a, b) and (cosh a, a b); with an inf or nan b: (inf, nan) for an infinite
// a, and for a zero a (a, nan) and (nan, +0) (glibc's choices of the signs C99 leaves
// open). The special cases are told by a and b, so each function is read once.
static Cx cx_sinh(Builder *b, Cx z, bool cosh) {
  Value *a = z.re, *c = z.im, *real = eq0(b, c);
  Value *f = un(b, cosh ? OP_COSH : OP_SINH, a), *g = un(b, cosh ? OP_SINH : OP_COSH, a);
  Cx r = {mul(b, f, build_where(b, real, num(b, 1), un(b, OP_COS, c))),
          build_where(b, real, cosh ? zmul(b, a, c) : c, mul(b, g, un(b, OP_SIN, c)))};
  Value *nf = nonfinite(b, c);
  r = cwhere(b, and_(b, eq0(b, a), nf), cosh ? (Cx){num(b, NAN), num(b, 0)} : (Cx){a, num(b, NAN)}, r);
  return cwhere(b, and_(b, isinf_(b, a), nf), (Cx){num(b, INFINITY), num(b, NAN)}, r);
}

static Cx cx_pow_int(Builder *b, Cx z, int64_t n);
static Cx stored(Builder *b, Cx z, DType pt, int n, const int64_t *shape);

// z ** w: 1 where w = 0; where z = 0: 0 for a positive real w, else nan (NumPy's
// npy_cpow); z, z z, z z z, 1 / z, 1 / (z z) where w is 1, 2, 3, -1, -2 (NumPy multiplies
// for integer w); else exp(w log z)
static Cx cx_pow(Builder *b, Cx z, Cx w, DType pt, int n, const int64_t *shape) {
  // w log z stored (its pairs a kernel's result): exp's cases read its parts several times
  Cx r = cx_exp(b, stored(b, cmul(b, w, cx_log(b, z)), pt, n, shape));
  static const int ns[] = {1, 2, 3, -1, -2};
  for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
    r = cwhere(b, and_(b, bin(b, OP_EQ, w.re, num(b, ns[i])), eq0(b, w.im)), cx_pow_int(b, z, ns[i]), r);
  Value *z0 = and_(b, eq0(b, z.re), eq0(b, z.im)), *w0 = and_(b, eq0(b, w.re), eq0(b, w.im));
  Value *wpos = and_(b, bin(b, OP_GT, w.re, num(b, 0)), eq0(b, w.im));
  Value *zero = build_where(b, wpos, num(b, 0), num(b, NAN));
  r = cwhere(b, z0, (Cx){zero, zero}, r);
  return cwhere(b, w0, (Cx){num(b, 1), num(b, 0)}, r);
}

// z ** n of an integer n, |n| < 100, as NumPy's npy_cpow: z, z z, z (z z) for 1, 2, 3; else
// 1 times z ** |n| by repeated squaring (an inf part makes that 1 z nan, as there), 1 / that
// for n < 0 (0 ** n of n < 0 is nan); 1 for 0
static Cx cx_pow_int(Builder *b, Cx z, int64_t n) {
  if (n == 1) return z;
  if (n == 2) return cmul(b, z, z);
  if (n == 3) return cmul(b, z, cmul(b, z, z));
  int64_t m = n < 0 ? -n : n;
  Cx r = {num(b, 1), num(b, 0)}, p = z;
  for (int64_t bit = 1; bit <= m; bit <<= 1) {
    if (m & bit) r = cmul(b, r, p);
    if (bit << 1 <= m) p = cmul(b, p, p);
  }
  if (n >= 0) return r;
  Value *z0 = and_(b, eq0(b, z.re), eq0(b, z.im));
  return cwhere(b, z0, (Cx){num(b, NAN), num(b, NAN)}, cdiv(b, (Cx){num(b, 1), num(b, 0)}, r));
}

static Value *part(Builder *b, Value *z, int k) {
  Value *v = build_select(b, z, z->view.ndim - 1, k);
  v->cplx = false;
  return v;
}

// The (real, imaginary) parts of an operand: a complex value's views, or (x, 0).
static Cx parts(Builder *b, Value *x) {
  if (x->cplx) return (Cx){part(b, x, 0), part(b, x, 1)};
  return (Cx){x, build_float(b, 0)};
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
    xs[k] = xs[k]->is_scalar ? build_full(b, 0, NULL, xs[k], dt) : build_cast(b, xs[k], dt);
    if (xs[k]->view.ndim != n || (n && memcmp(xs[k]->view.shape, shape, sizeof(int64_t) * (size_t)n)))
      xs[k] = build_expand(b, xs[k], n, shape);
  }
  Value *z = build_stack(b, xs, 2, n);
  z->cplx = true;
  return z;
}
static Value *cpair(Builder *b, Cx z, DType dt, int n, const int64_t *shape) {
  return pair(b, z.re, z.im, dt, n, shape);
}
// z computed once, into a buffer of its pairs, for formulas that read its parts many times
static Cx stored(Builder *b, Cx z, DType pt, int n, const int64_t *shape) { return parts(b, cpair(b, z, pt, n, shape)); }

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

// A Python number's integer value when it has one (|n| < 100: NumPy's repeated squaring).
static bool small_int(const Value *y, int64_t *n) {
  if (!y->is_scalar || y->cplx) return false;
  double v = dtype_is_float(y->dtype) ? y->sval : (double)y->ival;
  if (!(fabs(v) < 100) || v != floor(v)) return false;
  *n = (int64_t)v;
  return true;
}

// a OP b of complex values (or one complex and a real tensor or number)
static Value *arith(Builder *b, ComplexOp op, Value *x, Value *y) {
  DType dt = result_dtype(x, y), pt = dtype_complex_part(dt);
  int64_t sx[TD_MAX_DIMS], sy[TD_MAX_DIMS], shape[TD_MAX_DIMS];
  int nx = cshape(x, sx), ny = cshape(y, sy), n = nx > ny ? nx : ny;
  for (int i = 0; i < n; i++) {  // broadcast (sema checked it)
    int64_t a = i - (n - nx) >= 0 ? sx[i - (n - nx)] : 1, c = i - (n - ny) >= 0 ? sy[i - (n - ny)] : 1;
    shape[i] = a == 1 ? c : a;
  }
  Cx p = parts(b, x), q = parts(b, y);
  // a real operand's parts in the parts' dtype first: f64 x with c64 z computes in f32
  if (!p.re->is_scalar) p.re = build_cast(b, p.re, pt), p.im = build_cast(b, p.im, pt);
  if (!q.re->is_scalar) q.re = build_cast(b, q.re, pt), q.im = build_cast(b, q.im, pt);
  Value *r;
  int64_t k;
  switch (op) {
  case CX_ADD: r = pair(b, add(b, p.re, q.re), add(b, p.im, q.im), pt, n, shape); break;
  case CX_SUB: r = pair(b, sub(b, p.re, q.re), sub(b, p.im, q.im), pt, n, shape); break;
  case CX_MUL: r = cpair(b, cmul(b, p, q), pt, n, shape); break;
  case CX_DIV: r = cpair(b, cdiv(b, p, q), pt, n, shape); break;
  case CX_POW:
    if (small_int(y, &k)) {
      r = cpair(b, cx_pow_int(b, p, k), pt, n, shape);
      break;
    }
    // Python numbers as pt's 0-d tensors: log 2 of `2 ** z` in the parts' precision
    if (p.re->is_scalar) p = (Cx){build_full(b, 0, NULL, p.re, pt), build_full(b, 0, NULL, p.im, pt)};
    if (q.re->is_scalar) q = (Cx){build_full(b, 0, NULL, q.re, pt), build_full(b, 0, NULL, q.im, pt)};
    r = cpair(b, cx_pow(b, p, q, pt, n, shape), pt, n, shape);
    break;
  case CX_EQ: return and_(b, bin(b, OP_EQ, p.re, q.re), bin(b, OP_EQ, p.im, q.im));
  case CX_NE: return or_(b, bin(b, OP_NE, p.re, q.re), bin(b, OP_NE, p.im, q.im));
  default: td_unreachable();
  }
  r->wrapped = (x->is_scalar || x->wrapped) && (y->is_scalar || y->wrapped);  // 1 + 2j: a Python number
  return r;
}

// op(z) of a complex z.
static Value *unary(Builder *b, ComplexOp op, Value *x) {
  int64_t shape[TD_MAX_DIMS];
  int n = cshape(x, shape);
  DType pt = x->dtype;
  Cx z = parts(b, x), one = {num(b, 1), num(b, 0)};
  Value *a = z.re, *c = z.im;
  Cx r;
  switch (op) {
  case CX_NEG: r = (Cx){un(b, OP_NEG, a), un(b, OP_NEG, c)}; break;
  case CX_CONJ: r = (Cx){a, un(b, OP_NEG, c)}; break;
  case CX_ABS: return bin(b, OP_HYPOT, a, c);
  case CX_ANGLE: return bin(b, OP_ATAN2, c, a);
  case CX_ISREAL: return eq0(b, c);
  case CX_ISNAN: return or_(b, isnan_(b, a), isnan_(b, c));
  case CX_ISINF: return or_(b, isinf_(b, a), isinf_(b, c));
  case CX_ISFINITE: {
    Value *inf = num(b, INFINITY);
    return and_(b, bin(b, OP_LT, un(b, OP_ABS, a), inf), bin(b, OP_LT, un(b, OP_ABS, c), inf));
  }
  case CX_SGN: {  // z / |z|, and 0 where |z| is 0
    Value *m = bin(b, OP_HYPOT, a, c), *zero = num(b, 0), *is0 = eq0(b, m);
    r = (Cx){build_where(b, is0, zero, dv(b, a, m)), build_where(b, is0, zero, dv(b, c, m))};
    break;
  }
  case CX_EXP: r = cx_exp(b, z); break;
  case CX_LOG: r = cx_log(b, z); break;
  case CX_LOG2:
  case CX_LOG10: {
    double k = op == CX_LOG2 ? 1 / log(2.0) : 1 / log(10.0);
    r = cx_log(b, z);
    r = (Cx){muln(b, k, r.re), muln(b, k, r.im)};
    break;
  }
  case CX_SQRT: r = cx_sqrt(b, z); break;
  case CX_RSQRT: r = cdiv(b, one, cx_sqrt(b, z)); break;
  case CX_RECIPROCAL: r = cdiv(b, one, z); break;
  case CX_SQUARE: r = cmul(b, z, z); break;
  case CX_SIGMOID: {  // 1 / (1 + e^-z)
    Cx e = cx_exp(b, (Cx){un(b, OP_NEG, a), un(b, OP_NEG, c)});
    r = cdiv(b, one, (Cx){add(b, num(b, 1), e.re), e.im});
    break;
  }
  case CX_SILU: {  // z / (1 + e^-z)
    Cx e = cx_exp(b, (Cx){un(b, OP_NEG, a), un(b, OP_NEG, c)});
    r = cdiv(b, z, (Cx){add(b, num(b, 1), e.re), e.im});
    break;
  }
  case CX_SINC: {  // sin(pi z) / (pi z), 1 where z is 0 (PyTorch's)
    Cx p = {muln(b, 3.14159265358979323846, a), muln(b, 3.14159265358979323846, c)};
    Cx s = cover_i(cx_sinh(b, ctimes_i(p, b), false), b);
    r = cwhere(b, and_(b, eq0(b, a), eq0(b, c)), one, cdiv(b, s, p));
    break;
  }
  case CX_TANHSHRINK: {
    Cx t = cx_tanh(b, z);
    r = (Cx){sub(b, a, t.re), sub(b, c, t.im)};
    break;
  }
  case CX_SOFTSIGN: {
    Value *d = add(b, num(b, 1), bin(b, OP_HYPOT, a, c));
    r = (Cx){dv(b, a, d), dv(b, c, d)};
    break;
  }
  case CX_SIN:  // sin z = sinh(i z) / i; (nan, +inf) for an inf b and an inf or nan a (glibc's)
    r = cover_i(cx_sinh(b, ctimes_i(z, b), false), b);
    r = cwhere(b, and_(b, nonfinite(b, a), isinf_(b, c)), (Cx){num(b, NAN), num(b, INFINITY)}, r);
    break;
  case CX_COS: r = cx_sinh(b, ctimes_i(z, b), true); break;                // cos z = cosh(i z)
  case CX_SINH: r = cx_sinh(b, z, false); break;
  case CX_COSH: r = cx_sinh(b, z, true); break;
  case CX_TANH: r = cx_tanh(b, z); break;
  case CX_TAN: r = cover_i(cx_tanh(b, ctimes_i(z, b)), b); break;        // tan z = tanh(i z) / i
  case CX_ASINH: r = cx_asinh(b, z); break;
  case CX_ASIN: r = cover_i(cx_asinh(b, ctimes_i(z, b)), b); break;      // asin z = asinh(i z) / i
  case CX_ACOS: {                                                      // acos z = pi/2 - asin z
    Cx s = cover_i(cx_asinh(b, ctimes_i(z, b)), b);
    r = (Cx){sub(b, num(b, 1.57079632679489661923), s.re), un(b, OP_NEG, s.im)};
    break;
  }
  case CX_ACOSH: r = cx_acosh(b, z); break;
  case CX_ATANH: r = cx_atanh(b, z); break;
  case CX_ATAN: r = cover_i(cx_atanh(b, ctimes_i(z, b)), b); break;      // atan z = atanh(i z) / i
  default: td_unreachable();
  }
  return cpair(b, r, pt, n, shape);
}

// a @ b of complex matrices: (A C - B D, A D + B C) of the parts' real products.
static Value *matmul(Builder *b, Value *x, Value *y) {
  Cx p = parts(b, x), q = parts(b, y);
  Value *re = sub(b, build_matmul(b, p.re, q.re), build_matmul(b, p.im, q.im));
  Value *im = add(b, build_matmul(b, p.re, q.im), build_matmul(b, p.im, q.re));
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

// z's elements along dim d (of its complex shape) [start, start + len), as complex pairs
static Value *cnarrow(Builder *b, Value *z, int d, int64_t start, int64_t len) {
  Value *v = build_narrow(b, z, d, start, len);
  v->cplx = true;
  return v;
}
static Value *ccat(Builder *b, Value *x, Value *y, int d) {
  Value *xs[2] = {x, y};
  Value *v = build_cat(b, xs, 2, d);
  v->cplx = true;
  return v;
}
static Value *cmul_pairs(Builder *b, Value *x, Value *y) {
  int64_t shape[TD_MAX_DIMS];
  int n = cshape(x, shape);
  return cpair(b, cmul(b, parts(b, x), parts(b, y)), x->dtype, n, shape);
}
// complex ones of z's complex shape with dim d of size len
static Value *cones(Builder *b, const Value *z, int d, int64_t len) {
  int64_t shape[TD_MAX_DIMS];
  int n = cshape(z, shape);
  shape[d] = len;
  return pair(b, num(b, 1), num(b, 0), z->dtype, n, shape);
}

// prod over dim d (-1: every dim, z flattened first): halves multiplied pairwise until
// one is left (an odd one out joins the next round)
static Value *prod(Builder *b, Value *z, int d, bool keepdim) {
  int64_t shape[TD_MAX_DIMS];
  int n = cshape(z, shape);
  if (d < 0) {
    int64_t all[2] = {1, 2};
    for (int i = 0; i < n; i++) all[0] *= shape[i];
    z = build_reshape(b, z, 2, all);
    z->cplx = true;
  }
  int k = d < 0 ? 0 : d;
  int64_t len = z->view.shape[k];
  if (len == 0) z = cones(b, z, k, 1);
  while (len > 1) {
    int64_t h = len / 2;
    Value *p = cmul_pairs(b, cnarrow(b, z, k, 0, h), cnarrow(b, z, k, h, h));
    z = len % 2 ? ccat(b, p, cnarrow(b, z, k, len - 1, 1), k) : p;
    len = h + len % 2;
  }
  if (d < 0) {  // a 0-d result, or every dim kept as 1
    int64_t ones[TD_MAX_DIMS + 1];
    int m = keepdim ? n : 0;
    for (int i = 0; i < m; i++) ones[i] = 1;
    ones[m] = 2;
    z = build_reshape(b, z, m + 1, ones);
  } else if (!keepdim) {
    z = build_squeeze(b, z, d);
  }
  z->cplx = true;
  return z;
}

// cumprod along dim d: log2(n) rounds of z * (z shifted by s, ones shifted in), s = 1, 2, 4 ...
static Value *cumprod(Builder *b, Value *z, int d) {
  int64_t len = z->view.shape[d];
  for (int64_t s = 1; s < len; s *= 2)
    z = cmul_pairs(b, z, ccat(b, cones(b, z, d, s), cnarrow(b, z, d, 0, len - s), d));
  return z;
}

// ---- CX_PARTS: another op run on the parts ----
enum { PART_OPS = 16, PART_RESULTS = 64 };  // the operands of an op run on parts; a builder's results
typedef struct PartRun {
  Builder *outer;
  const ComplexArgs *ca;
  int pick[PART_OPS];  // per operand: 0 its real part, 1 its imaginary part
} PartRun;

// Operand i of the inner run: its part pick[i], a real operand's imaginary part zeros
static Value *part_operand(void *ctx, int i) {
  PartRun *r = ctx;
  Builder *b = r->outer;
  Value *v = build_in(b, i);
  if (!(r->ca->parts >> i & 1)) return v;
  if (v->cplx) return part(b, v, r->pick[i]);
  if (r->pick[i] == 0) return v;
  if (v->is_scalar) return build_scalar(b, v->dtype, 0, 0);
  return build_zeros(b, v->view.ndim, v->view.shape, v->dtype);
}

// the node of ca over the inner run's operands (a BK_NODE row run on the parts)
static int part_node(Builder *b, const void *args, Value **out) {
  const ComplexArgs *ca = args;
  Value *srcs[PART_OPS];
  for (int i = 0; i < b->nin; i++) srcs[i] = build_in(b, i);
  out[0] = build_node(b, ca->node, ca->dtype, ca->ndim, ca->shape, srcs, b->nin, ca->attr);
  return 1;
}

// fn run once with each operand of `parts` at its part pick[i]
static Value *part_run(Builder *b, const ComplexArgs *ca, const int *pick, bool im) {
  PartRun r = {b, ca, {0}};
  BuildIn in[PART_OPS];
  for (int i = 0; i < b->nin; i++) {
    r.pick[i] = pick[i];
    in[i] = b->in[i];
    if (dtype_is_complex(in[i].dtype)) in[i].dtype = dtype_complex_part(in[i].dtype);
    if (in[i].scalar && pick[i] == 1 && (ca->parts >> i & 1)) in[i].f = 0, in[i].i = 0;
  }
  Value *out[PART_RESULTS];
  const void *fargs = !ca->fn ? (const void *)ca : im && ca->fargs_im ? ca->fargs_im : ca->fargs;
  build_call(b->g, b->loc, b->name_loc, ca->fn ? ca->fn : part_node, fargs, b->nin, in, part_operand, &r, out);
  return build_cast(b, out[0], ca->dtype);
}

// op of complex operands as op of their parts (ComplexArgs' CX_PARTS)
static Value *parts_op(Builder *b, const ComplexArgs *ca) {
  TD_ASSERT(b->nin <= PART_OPS);
  for (int i = 0; i < b->nin; i++) build_in(b, i);  // the operands' own nodes first, outside the inner runs
  int pick[PART_OPS] = {0};
  Cx r;
  if (ca->sum_parts) {
    Value *re = part_run(b, ca, pick, false);
    for (int i = 0; i < b->nin; i++) pick[i] = 1;
    Value *s = add(b, re, part_run(b, ca, pick, true));
    return ca->root ? un(b, OP_SQRT, s) : s;
  }
  if (!ca->multilinear) {
    r.re = part_run(b, ca, pick, false);
    for (int i = 0; i < b->nin; i++) pick[i] = 1;
    r.im = part_run(b, ca, pick, true);
  } else {
    int idx[PART_OPS], n = 0;
    for (int i = 0; i < b->nin; i++)
      if ((ca->parts >> i & 1) && b->vals[i]->cplx) idx[n++] = i;  // a real operand's imaginary part adds nothing
    Value *acc[4] = {NULL};  // the terms times 1, i, -1, -i
    for (int m = 0; m < 1 << n; m++) {
      int q = 0;
      for (int j = 0; j < n; j++) {
        pick[idx[j]] = m >> j & 1;
        q += m >> j & 1;
      }
      Value *t = part_run(b, ca, pick, false);
      q %= 4;
      acc[q] = acc[q] ? add(b, acc[q], t) : t;
    }
    Value *zero = num(b, 0);
    r.re = sub(b, acc[0] ? acc[0] : zero, acc[2] ? acc[2] : zero);
    r.im = sub(b, acc[1] ? acc[1] : zero, acc[3] ? acc[3] : zero);
  }
  const Value *shape_of = r.re->is_scalar ? r.im : r.re;
  return pair(b, r.re, r.im, ca->dtype, shape_of->view.ndim, shape_of->view.shape);
}

int build_complex(Builder *b, const void *args, Value **out) {
  const ComplexArgs *ca = args;
  ComplexOp op = ca->op;
  if (op == CX_LITERAL) {  // Python's complex number: a c128 0-d tensor that promotes as a Python number
    out[0] = pair(b, num(b, ca->re), num(b, ca->im), DT_F64, 0, NULL);
    out[0]->wrapped = true;
    return 1;
  }
  if (op == CX_TENSOR) {
    Value *re, *im;
    build_literal(b, ca->fargs, &re);
    build_literal(b, ca->fargs_im, &im);
    out[0] = pair(b, re, im, dtype_complex_part(ca->dtype), re->view.ndim, re->view.shape);
    return 1;
  }
  if (op == CX_FULL) {
    out[0] = pair(b, num(b, ca->re), num(b, ca->im), dtype_complex_part(ca->dtype), ca->ndim, ca->shape);
    return 1;
  }
  Value *x = build_in(b, 0);
  if (b->failed) return 0;
  switch (op) {
  case CX_ADD:
  case CX_SUB:
  case CX_MUL:
  case CX_DIV:
  case CX_POW:
  case CX_EQ:
  case CX_NE: out[0] = arith(b, op, x, build_in(b, 1)); break;
  case CX_MATMUL: out[0] = matmul(b, x, build_in(b, 1)); break;
  case CX_WHERE: out[0] = where(b, x, build_in(b, 1), build_in(b, 2)); break;
  case CX_REAL: out[0] = part(b, x, 0); break;
  case CX_IMAG: out[0] = part(b, x, 1); break;
  case CX_AS_REAL: out[0] = same_floats(b, x, false); break;
  case CX_AS_COMPLEX: out[0] = same_floats(b, x, true); break;
  case CX_SAME: out[0] = x; break;
  case CX_TO_REAL: out[0] = build_cast(b, part(b, x, 0), ca->dtype); break;  // the real part (bool: != 0)
  case CX_FROM_REAL: {
    int64_t shape[TD_MAX_DIMS];
    int n = cshape(x, shape);
    if (x->cplx) {
      out[0] = build_cast(b, x, dtype_complex_part(ca->dtype));
      out[0]->cplx = true;
    } else {
      out[0] = pair(b, x, num(b, 0), dtype_complex_part(ca->dtype), n, shape);
    }
    break;
  }
  case CX_PROD: out[0] = prod(b, x, ca->dim, ca->keepdim); break;
  case CX_CUMSUM:
    out[0] = build_scan(b, OP_CUMSUM, x, ca->dim, x->dtype);
    out[0]->cplx = true;
    break;
  case CX_CUMPROD: out[0] = cumprod(b, x, ca->dim); break;
  case CX_GATHER: {  // the index with a last dim of 2 (both parts), gathered from the pairs
    Value *ix = build_in(b, 1);
    int n = ix->view.ndim;
    if (n == 0) {  // a 0-d z: itself (its one element)
      out[0] = x;
      break;
    }
    int64_t shape[TD_MAX_DIMS];
    memcpy(shape, ix->view.shape, sizeof(int64_t) * (size_t)n);
    shape[n] = 2;
    out[0] = build_gather(b, x, ca->dim, build_expand(b, build_unsqueeze(b, ix, n), n + 1, shape));
    out[0]->cplx = true;
    break;
  }
  case CX_PARTS: out[0] = parts_op(b, ca); break;
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
    else out[0] = pair(b, mul(b, x, un(b, OP_COS, y)), mul(b, x, un(b, OP_SIN, y)), x->dtype, n, shape);
    break;
  }
  default: out[0] = unary(b, op, x); break;
  }
  return 1;
}
