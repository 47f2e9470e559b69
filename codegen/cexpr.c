// codegen/cexpr.c: the C dialect shared by the C and CUDA C backends. Prints the
// prelude of `tdsl_g_*` helpers (each the exact meaning ir/loop.h gives an op:
// wrapping int arithmetic done in unsigned, Python's floor division and modulo,
// PyTorch's div_floor, NaN-propagating max/min, float->int casts without UB, f16/bf16
// by bit arithmetic; a composite op's helper is its formula from ir/opmath.c, printed),
// the scalar expressions of a kernel, and its stores, lets, ifs and
// plain loops. The dialect (codegen/cexpr.h) says how a helper is declared, how a
// raising helper learns where to record its error, and how constants and bit casts
// are spelled; everything else is one text for both, so the numerics are too.
// Vectors (ir/loop.h's Lanes), in C (CDialect.vectors), of a power-of-two lanes: values
// of the prelude's vector types (`tdsl_g_f32x16`: GNU C vectors, else a struct of an
// array), each operation one helper (`tdsl_g_fma_f32x16(a, b, c)`), each statement one
// assignment of a whole vector. Otherwise (CUDA, other lane counts) plain C: a vector
// local is an array `float t3[16]` and a statement of a vector value is a loop over its
// lanes, in which each vector operand prints the element of lane tdsl_g_l (a splat: its
// scalar); gcc vectorizes the loop, and keeps an accumulator array in registers across
// an enclosing loop (c.c turns off gcc's memcpy/memset patterns in such kernels for
// that). Where a lane could read what an earlier lane of the same statement wrote, the
// vector goes through a temporary array, so it is assigned whole as the IR says.
// Values of f16/bf16 are carried as float; arithmetic typed f16/bf16 (which the
// kernel builder never makes) would be done in float and rounded.
#include "codegen/cexpr.h"
#include "ir/opmath.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

// ---- the prelude ----
// Vectors (ir/loop.h's Lanes) in a dialect with vector types (CDialect.vectors): GNU C
// vectors where the compiler has them, else structs of an array, behind the same names,
// so that the kernels' text is one for both. The vector helpers of GNU C are macros, not
// functions: a function taking or returning a 64-byte vector makes gcc note an ABI change
// wherever the file is compiled without AVX-512. FMA is a lane loop over fmaf (gcc
// vectorizes it to one instruction), as ISO C keeps a * b + c unfused.
static const char *const vec_common_text =
    "// Vectors of the schedules' lanes, each assigned whole: GNU C vector types where the\n"
    "// compiler has them (gcc, clang), else structs of an array (and so with\n"
    "// TDSL_NO_VECTOR_EXTENSIONS defined). tdsl_g_lane(x, i) is lane i of x;\n"
    "// tdsl_g_shuffle, where defined, picks lanes of two vectors (__builtin_shufflevector).\n"
    "#include <string.h>\n"
    "#if (defined(__GNUC__) || defined(__clang__)) && !defined(TDSL_NO_VECTOR_EXTENSIONS)\n"
    "#define TDSL_G_VECTORS 1\n"
    "#define tdsl_g_lane(x, i) (x)[i]\n"
    "#if defined(__clang__) || __GNUC__ >= 12\n"
    "#define tdsl_g_shuffle __builtin_shufflevector\n"
    "#endif\n"
    "#else\n"
    "#define tdsl_g_lane(x, i) (x).v[i]\n"
    "#endif\n";

// One vector type $V of $N lanes of $T ($B bytes), its load and store (at any alignment),
// splat; for floats its arithmetic.
static const char *const vec_gnu_text =
    "typedef $T $V __attribute__((vector_size($B)));\n"
    "typedef $T $V_u __attribute__((vector_size($B), aligned($A)));\n"
    "#define tdsl_g_ld_$Q(p) (*(const $V_u *)(const void *)(p))\n"
    "#define tdsl_g_st_$Q(p, a) (*($V_u *)(void *)(p) = (a))\n"
    "#define tdsl_g_splat_$Q(x) (($T)(x) - ($V){0})\n";
static const char *const vec_gnu_float_text =
    "#define tdsl_g_add_$Q(a, b) ((a) + (b))\n"
    "#define tdsl_g_sub_$Q(a, b) ((a) - (b))\n"
    "#define tdsl_g_mul_$Q(a, b) ((a) * (b))\n"
    "#define tdsl_g_fma_$Q(a, b, c) __extension__({ \\\n"
    "  $V tdsl_g_x = (a), tdsl_g_y = (b), tdsl_g_z = (c); \\\n"
    "  for (int tdsl_g_i = 0; tdsl_g_i < $N; tdsl_g_i++) \\\n"
    "    tdsl_g_z[tdsl_g_i] = fma$F(tdsl_g_x[tdsl_g_i], tdsl_g_y[tdsl_g_i], tdsl_g_z[tdsl_g_i]); \\\n"
    "  tdsl_g_z; })\n"
    "#define tdsl_g_fmas_$Q(x, b, c) tdsl_g_fma_$Q(tdsl_g_splat_$Q(x), b, c)  // x a scalar\n";
// (p > q) ? a : b lane by lane (a vector select max: gcc makes it one max instruction)
static const char *const vec_gnu_selgt_text =
    "#define tdsl_g_selgt_$Q(p, q, a, b) __extension__({ \\\n"
    "  $V tdsl_g_p = (p), tdsl_g_q = (q), tdsl_g_a = (a), tdsl_g_b = (b); \\\n"
    "  for (int tdsl_g_i = 0; tdsl_g_i < $N; tdsl_g_i++) \\\n"
    "    tdsl_g_a[tdsl_g_i] = tdsl_g_p[tdsl_g_i] > tdsl_g_q[tdsl_g_i] ? tdsl_g_a[tdsl_g_i] : tdsl_g_b[tdsl_g_i]; \\\n"
    "  tdsl_g_a; })\n";
// PyTorch's NaN-propagating maximum and minimum lane by lane, each lane what the scalar
// tdsl_g_max / tdsl_g_min give (a NaN a, else a NaN b, else the larger or smaller, a on a
// tie): a is kept where a >= b (a <= b) or a is NaN. As masks, a compare, a NaN test, an
// or and a blend, which gcc 12 keeps in vectors (the lane-loop form it left scalar).
static const char *const vec_gnu_maxmin_text =
    "#define tdsl_g_maxmin_$Q(a, b, CMP) __extension__({ \\\n"
    "  $V tdsl_g_a = (a), tdsl_g_b = (b); \\\n"
    "  __typeof__(tdsl_g_a != tdsl_g_a) tdsl_g_m = (tdsl_g_a CMP tdsl_g_b) | (tdsl_g_a != tdsl_g_a); \\\n"
    "  ($V)((tdsl_g_m & (__typeof__(tdsl_g_m))tdsl_g_a) | (~tdsl_g_m & (__typeof__(tdsl_g_m))tdsl_g_b)); })\n"
    "#define tdsl_g_max_$Q(a, b) tdsl_g_maxmin_$Q(a, b, >=)\n"
    "#define tdsl_g_min_$Q(a, b) tdsl_g_maxmin_$Q(a, b, <=)\n";
static const char *const vec_struct_maxmin_text =
    "$D$V tdsl_g_max_$Q($V a, $V b) {\n"
    "  for (int l = 0; l < $N; l++)\n"
    "    a.v[l] = a.v[l] != a.v[l] ? a.v[l] : b.v[l] != b.v[l] ? b.v[l] : a.v[l] < b.v[l] ? b.v[l] : a.v[l];\n"
    "  return a;\n"
    "}\n"
    "$D$V tdsl_g_min_$Q($V a, $V b) {\n"
    "  for (int l = 0; l < $N; l++)\n"
    "    a.v[l] = a.v[l] != a.v[l] ? a.v[l] : b.v[l] != b.v[l] ? b.v[l] : b.v[l] < a.v[l] ? b.v[l] : a.v[l];\n"
    "  return a;\n"
    "}\n";
static const char *const vec_struct_selgt_text =
    "$D$V tdsl_g_selgt_$Q($V p, $V q, $V a, $V b) {\n"
    "  for (int l = 0; l < $N; l++)\n"
    "    a.v[l] = p.v[l] > q.v[l] ? a.v[l] : b.v[l];\n"
    "  return a;\n"
    "}\n";
// ((p > q) | (s != s & t == t)) ? a : b lane by lane: argmax's (argmin's) step in lanes
// (ir/sched.c), the first NaN winning. As masks: compares, and/or, a blend, all in vectors.
static const char *const vec_gnu_selgtn_text =
    "#define tdsl_g_selgtn_$Q(p, q, s, t, a, b) __extension__({ \\\n"
    "  $V tdsl_g_p = (p), tdsl_g_q = (q), tdsl_g_s = (s), tdsl_g_t = (t), tdsl_g_a = (a), tdsl_g_b = (b); \\\n"
    "  __typeof__(tdsl_g_p != tdsl_g_p) tdsl_g_m = \\\n"
    "      (tdsl_g_p > tdsl_g_q) | ((tdsl_g_s != tdsl_g_s) & (tdsl_g_t == tdsl_g_t)); \\\n"
    "  ($V)((tdsl_g_m & (__typeof__(tdsl_g_m))tdsl_g_a) | (~tdsl_g_m & (__typeof__(tdsl_g_m))tdsl_g_b)); })\n";
static const char *const vec_struct_selgtn_text =
    "$D$V tdsl_g_selgtn_$Q($V p, $V q, $V s, $V t, $V a, $V b) {\n"
    "  for (int l = 0; l < $N; l++)\n"
    "    a.v[l] = p.v[l] > q.v[l] || (s.v[l] != s.v[l] && t.v[l] == t.v[l]) ? a.v[l] : b.v[l];\n"
    "  return a;\n"
    "}\n";
static const char *const vec_struct_text =
    "typedef struct { $T v[$N]; } $V;\n"
    "$D$V tdsl_g_ld_$Q(const void *p) { $V r; memcpy(&r, p, sizeof r); return r; }\n"
    "$Dvoid tdsl_g_st_$Q(void *p, $V a) { memcpy(p, &a, sizeof a); }\n"
    "$D$V tdsl_g_splat_$Q($T x) { $V r; for (int l = 0; l < $N; l++) r.v[l] = x; return r; }\n";
static const char *const vec_struct_float_text =
    "$D$V tdsl_g_add_$Q($V a, $V b) { for (int l = 0; l < $N; l++) a.v[l] += b.v[l]; return a; }\n"
    "$D$V tdsl_g_sub_$Q($V a, $V b) { for (int l = 0; l < $N; l++) a.v[l] -= b.v[l]; return a; }\n"
    "$D$V tdsl_g_mul_$Q($V a, $V b) { for (int l = 0; l < $N; l++) a.v[l] *= b.v[l]; return a; }\n"
    "$D$V tdsl_g_fma_$Q($V a, $V b, $V c) {\n"
    "  for (int l = 0; l < $N; l++)\n"
    "    c.v[l] = fma$F(a.v[l], b.v[l], c.v[l]);\n"
    "  return c;\n"
    "}\n"
    "#define tdsl_g_fmas_$Q(x, b, c) tdsl_g_fma_$Q(tdsl_g_splat_$Q(x), b, c)  // x a scalar\n";

static const char *const stream_text =
    "// Stores past the caches (a large result no kernel reads again) where the target\n"
    "// has them, each followed in its function by a fence; plain stores elsewhere.\n"
    "#if defined(__SSE2__)\n"
    "#include <immintrin.h>\n"
    "#endif\n";

// Substitutes $D $E $R (the dialect) and the TypeText letters of dt in text.
static void templ(Buf *b, const CDialect *d, const char *text, DType dt) {
  const TypeText *t = &d->types[dt];
  for (const char *p = text; *p; p++) {
    if (*p != '$') {
      char c[2] = {*p, 0};
      buf_puts(b, c);
      continue;
    }
    p++;
    const char *s = *p == 'D'   ? d->decl
                    : *p == 'E' ? d->err_params
                    : *p == 'R' ? d->raise_rank
                    : *p == 'T' ? t->T
                    : *p == 'U' ? t->U
                    : *p == 'S' ? t->S
                    : *p == 'F' ? t->F
                    : *p == 'L' ? t->L
                    : *p == 'Z' ? t->Z
                                : t->M;
    buf_puts(b, s);
  }
}

// The rest of tdsl_g_f2h once the dialect has the sign and the magnitude's bits.
static const char *const f2h_tail_text =
    "  if (a > 0x7f800000u)\n"
    "    return (uint16_t)(sign | 0x7e00u);  // nan stays a quiet nan\n"
    "  if (a >= 0x477ff000u)\n"
    "    return (uint16_t)(sign | 0x7c00u);  // inf, or rounds past 65504\n"
    "  if (a >= 0x38800000u) {              // a normal f16\n"
    "    uint32_t r = a - 0x38000000u;\n"
    "    r += 0xfffu + ((r >> 13) & 1u);\n"
    "    return (uint16_t)(sign | (r >> 13));\n"
    "  }\n"
    "  uint32_t e = a >> 23;\n"
    "  if (e < 102)\n"
    "    return (uint16_t)sign;  // below half the smallest subnormal\n"
    "  uint32_t m = (a & 0x7fffffu) | 0x800000u, s = 126 - e;\n"
    "  uint32_t q = m >> s, rem = m & ((1u << s) - 1), half = 1u << (s - 1);\n"
    "  if (rem > half || (rem == half && (q & 1u)))\n"
    "    q++;\n"
    "  return (uint16_t)(sign | q);\n"
    "}\n"
    "$Dfloat tdsl_g_round_f16(float f) { return tdsl_g_h2f(tdsl_g_f2h(f)); }\n";

static const char *const index_text =
    "// An index into a dim of size n, valid in [lo, n): lo = -n counts negative ones from the end.\n"
    "$Dint64_t tdsl_g_index(int64_t a, int64_t lo, int64_t n$E) {\n"
    "  if (a >= lo && a < n)\n"
    "    return a < 0 ? a + n : a;\n"
    "  tdsl_g_raise(e, k, a$R);\n"
    "  return 0;\n"
    "}\n";

static const char *const int_text =
    "$D$T tdsl_g_add_$S($T a, $T b) { return ($T)(($U)a + ($U)b); }\n"
    "$D$T tdsl_g_sub_$S($T a, $T b) { return ($T)(($U)a - ($U)b); }\n"
    "$D$T tdsl_g_mul_$S($T a, $T b) { return ($T)(($U)a * ($U)b); }\n"
    "$D$T tdsl_g_neg_$S($T a) { return ($T)(($U)0 - ($U)a); }\n"
    "$D$T tdsl_g_abs_$S($T a) { return a < 0 ? tdsl_g_neg_$S(a) : a; }\n"
    "$D$T tdsl_g_square_$S($T a) { return tdsl_g_mul_$S(a, a); }\n";

// ---- composite ops (ir/opmath.c): a formula is printed inline where it is cheap and
// reads its operand once (rsqrt: 1 / sqrt(a)), else as a helper of group G_FLOAT whose
// body is the formula, printed with as few parentheses as C needs ----

static int uses_of(const LExpr *f, const LExpr *x) {
  return !f ? 0 : f == x ? 1 : uses_of(f->a, x) + uses_of(f->b, x);
}

static bool any_transcendental(const LExpr *f) {
  return f && ((f->kind == LX_UNARY && op_is_transcendental(f->op)) || any_transcendental(f->a) ||
               any_transcendental(f->b));
}

static bool formula_inline(const LExpr *f, const LExpr *x) { return uses_of(f, x) == 1 && !any_transcendental(f); }

// Constants whose decimal spelling is kept to more digits than a double's 17: the
// helper texts are shared by f32 and f64 ($L) and always spelled them so.
static const struct {
  double v;
  const char *text;
} spelled[] = {{0.70710678118654752440, "0.70710678118654752440"}};

static void helper_const(Buf *b, double v) {
  for (size_t i = 0; i < sizeof spelled / sizeof spelled[0]; i++) {
    if (spelled[i].v == v) {
      buf_printf(b, "%s$L", spelled[i].text);
      return;
    }
  }
  char t[32];
  snprintf(t, sizeof t, "%.17g", v);
  buf_printf(b, "%s%s$L", t, strpbrk(t, ".en") ? "" : ".0");
}

static int precedence(const LExpr *f) {
  if (f->kind == LX_BINARY)
    return f->op == OP_ADD || f->op == OP_SUB ? 1 : 2;
  return f->kind == LX_UNARY && f->op == OP_NEG ? 3 : 4;
}

// Formula f over the parameter x (printed "a") as template text, in parentheses when
// its precedence is below min.
static void helper_body(Buf *b, const LExpr *f, const LExpr *x, int min) {
  int p = precedence(f);
  if (p < min)
    buf_puts(b, "(");
  if (f == x) {
    buf_puts(b, "a");
  } else if (f->kind == LX_CONST) {
    helper_const(b, f->f);
  } else if (f->kind == LX_BINARY) {
    static const char *const sym[] = {[OP_ADD] = " + ", [OP_SUB] = " - ", [OP_MUL] = " * ", [OP_DIV] = " / "};
    TD_ASSERT(f->op <= OP_DIV && sym[f->op]);
    helper_body(b, f->a, x, p);
    buf_puts(b, sym[f->op]);
    helper_body(b, f->b, x, p + 1);  // a - (b - c), a / (b * c)
  } else if (f->op == OP_NEG) {
    buf_puts(b, "-");
    helper_body(b, f->a, x, p);
  } else {
    TD_ASSERT(f->kind == LX_UNARY && op_libm(f->op));
    buf_printf(b, "%s$F(", op_libm(f->op));
    helper_body(b, f->a, x, 0);
    buf_puts(b, ")");
  }
  if (p < min)
    buf_puts(b, ")");
}

// The helper of composite op op for dt: its formula as the body.
static void float_helper(Buf *b, const CDialect *d, Op op, DType dt) {
  Ctx cx;
  ctx_init(&cx);
  LExpr *x = lx_local(&cx, DT_F64, 0);
  LExpr *f = op_formula(&cx, op, DT_F64, x);
  Buf t;
  buf_init(&t, &cx);
  buf_printf(&t, "$D$T tdsl_g_%s_$S($T a) { return ", op_name(op));
  helper_body(&t, f, x, 0);
  buf_puts(&t, "; }\n");
  templ(b, d, t.data, dt);
  ctx_free(&cx);
}

// The G_FLOAT group: the helpers of the composite ops the prelude has always printed
// together; any other composite op's helper is printed alone, where a kernel uses it
// (Prelude.composite).
static const Op float_group[] = {OP_SQUARE, OP_SIGMOID, OP_SILU, OP_GELU};

static bool in_float_group(Op op) {
  for (size_t i = 0; i < sizeof float_group / sizeof float_group[0]; i++)
    if (float_group[i] == op)
      return true;
  return false;
}

static const char *const maxmin_float_text =
    "$D$T tdsl_g_max_$S($T a, $T b) { return a != a ? a : b != b ? b : a < b ? b : a; }\n"
    "$D$T tdsl_g_min_$S($T a, $T b) { return a != a ? a : b != b ? b : b < a ? b : a; }\n";
static const char *const maxmin_int_text =
    "$D$T tdsl_g_max_$S($T a, $T b) { return a < b ? b : a; }\n"
    "$D$T tdsl_g_min_$S($T a, $T b) { return b < a ? b : a; }\n";

static const char *const sign_float_text =
    "$D$T tdsl_g_sign_$S($T a) { return a > 0 ? 1.0$L : a < 0 ? -1.0$L : 0.0$L; }\n";
static const char *const sign_int_text = "$D$T tdsl_g_sign_$S($T a) { return ($T)((a > 0) - (a < 0)); }\n";

static const char *const relu_float_text = "$D$T tdsl_g_relu_$S($T a) { return a < 0 ? 0.0$L : a; }\n";
static const char *const relu_int_text = "$D$T tdsl_g_relu_$S($T a) { return a > 0 ? a : 0; }\n";

static const char *const floordiv_int_text =
    "// Python's a // b; b == 0 raises error k; $M // -1 wraps.\n"
    "$D$T tdsl_g_floordiv_$S($T a, $T b$E) {\n"
    "  if (b == 0) {\n"
    "    tdsl_g_raise(e, k, 0$R);\n"
    "    return 0;\n"
    "  }\n"
    "  if (b == -1)\n"
    "    return tdsl_g_neg_$S(a);\n"
    "  $T q = a / b;\n"
    "  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;\n"
    "}\n";
static const char *const floordiv_float_text =
    "// PyTorch's div_floor.\n"
    "$D$T tdsl_g_floordiv_$S($T a, $T b) {\n"
    "  if (b == 0)\n"
    "    return a / b;\n"
    "  $T mod = fmod$F(a, b), div = (a - mod) / b;\n"
    "  if (mod != 0 && (b < 0) != (mod < 0))\n"
    "    div -= 1;\n"
    "  if (div == 0)\n"
    "    return copysign$F($Z, a / b);\n"
    "  $T fl = floor$F(div);\n"
    "  return div - fl > 0.5$L ? fl + 1 : fl;\n"
    "}\n";

static const char *const rem_int_text =
    "// Python's a % b (the sign of b); b == 0 raises error k; $M % -1 is 0.\n"
    "$D$T tdsl_g_rem_$S($T a, $T b$E) {\n"
    "  if (b == 0) {\n"
    "    tdsl_g_raise(e, k, 0$R);\n"
    "    return 0;\n"
    "  }\n"
    "  if (b == -1)\n"
    "    return 0;\n"
    "  $T r = a % b;\n"
    "  return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;\n"
    "}\n";
static const char *const rem_float_text =
    "$D$T tdsl_g_rem_$S($T a, $T b) {\n"
    "  $T r = fmod$F(a, b);\n"
    "  return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;\n"
    "}\n";

static const char *const pow_int_text =
    "// The exact power, wrapping; b < 0 raises error k (without one: PyTorch's answer).\n"
    "$D$T tdsl_g_pow_$S($T a, $T b$E) {\n"
    "  if (b < 0) {\n"
    "    if (k >= 0) {\n"
    "      tdsl_g_raise(e, k, b$R);\n"
    "      return 0;\n"
    "    }\n"
    "    return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;\n"
    "  }\n"
    "  $U r = 1, x = ($U)a;\n"
    "  for ($U n = ($U)b; n; n >>= 1) {\n"
    "    if (n & 1)\n"
    "      r *= x;\n"
    "    x *= x;\n"
    "  }\n"
    "  return ($T)r;\n"
    "}\n";

static const char *const sel_text = "$D$T tdsl_g_sel_$S(bool c, $T a, $T b) { return c ? a : b; }\n";

static const char *const f2i_text[DT_COUNT] = {
    [DT_I32] = "// Truncation toward zero; nan or out of range gives the minimum (x86's answer).\n"
               "$Dint32_t tdsl_g_f2i32(double x) {\n"
               "  return x > -2147483649.0 && x < 2147483648.0 ? (int32_t)x : INT32_MIN;\n"
               "}\n",
    [DT_I64] = "$Dint64_t tdsl_g_f2i64(double x) {\n"
               "  return x >= -9223372036854775808.0 && x < 9223372036854775808.0 ? (int64_t)x : INT64_MIN;\n"
               "}\n",
};

static const char *group_text(HelperGroup g, DType dt) {
  bool fl = dt == DT_F32 || dt == DT_F64;
  switch (g) {
  case G_INT: return int_text;
  case G_MAXMIN: return fl ? maxmin_float_text : maxmin_int_text;
  case G_SIGN: return fl ? sign_float_text : sign_int_text;
  case G_RELU: return fl ? relu_float_text : relu_int_text;
  case G_FLOORDIV: return fl ? floordiv_float_text : floordiv_int_text;
  case G_REM: return fl ? rem_float_text : rem_int_text;
  case G_POW: return pow_int_text;
  case G_SEL: return sel_text;
  case G_FLOAT: break;  // float_helper, for each of float_group
  case G_F2I: return f2i_text[dt];
  case G_COUNT: break;
  }
  td_unreachable();
}

// The name of dt in a vector type's: f32 f64 i8 u8 i16 i32 i64.
static const char *vec_suffix(DType dt) {
  switch (dt) {
  case DT_F32: return "f32";
  case DT_F64: return "f64";
  case DT_I8: return "i8";
  case DT_U8: return "u8";
  case DT_I16: return "i16";
  case DT_I32: return "i32";
  case DT_I64: return "i64";
  default: td_unreachable();  // f16, bf16 and bool vectors move the bits of an int type
  }
}

// text with $V (the vector type), $Q (its name after tdsl_g_: f32x16), $N (lanes), $B
// (bytes), $A (the element's alignment), $T (the element's C type), $F (its math
// suffix) and $D (the dialect's helper declaration) of dt x n.
static void vec_templ(Buf *b, const CDialect *d, const char *text, DType dt, int n) {
  int es = dtype_size(dt);
  for (const char *p = text; *p; p++) {
    char c = p[0] == '$' ? p[1] : 0;
    if (c == 'V' || c == 'Q')
      buf_printf(b, "%s%sx%d", c == 'V' ? "tdsl_g_" : "", vec_suffix(dt), n);
    else if (c == 'N' || c == 'B' || c == 'A')
      buf_printf(b, "%d", c == 'N' ? n : c == 'B' ? n * es : es);
    else if (c == 'T' || c == 'F' || c == 'D')
      buf_puts(b, c == 'T' ? cexpr_type(dt) : c == 'D' ? d->decl : dt == DT_F32 ? "f" : "");
    else {
      TD_ASSERT(!c);
      buf_printf(b, "%c", *p);
      continue;
    }
    p++;
  }
}

// The vector types pr->vec names and their helpers: GNU C's, else structs'. Whether any.
static bool vec_prelude(Buf *b, const CDialect *d, const Prelude *pr) {
  bool any = false;
  for (int dt = 0; dt < DT_COUNT; dt++)
    for (int n = 0; n <= CEXPR_MAX_LANES; n++)
      any |= pr->vec[dt][n];
  if (!any)
    return false;
  buf_puts(b, vec_common_text);
  int most = 0;  // the most lanes of a float vector: its lanes' trees (pr->tree)
  for (int n = 2; n <= CEXPR_MAX_LANES; n *= 2)
    if (pr->tree[n])
      most = n;
  if (most)
    buf_puts(b, "// tdsl_g_treeN(op, x, 0): lanes 0..N of x combined by op, pairwise: ((x0 op x1) op (x2 op x3)) op ...\n");
  for (int n = 2; n <= most; n *= 2) {
    if (n == 2)
      buf_puts(b, "#define tdsl_g_tree2(o, x, i) (tdsl_g_lane(x, i) o tdsl_g_lane(x, (i) + 1))\n");
    else
      buf_printf(b, "#define tdsl_g_tree%d(o, x, i) (tdsl_g_tree%d(o, x, i) o tdsl_g_tree%d(o, x, (i) + %d))\n", n,
                 n / 2, n / 2, n / 2);
  }
  for (int gnu = 1; gnu >= 0; gnu--) {
    buf_puts(b, gnu ? "#ifdef TDSL_G_VECTORS\n" : "#else\n");
    for (int dt = 0; dt < DT_COUNT; dt++) {
      for (int n = 0; n <= CEXPR_MAX_LANES; n++) {
        if (!pr->vec[dt][n])
          continue;
        vec_templ(b, d, gnu ? vec_gnu_text : vec_struct_text, (DType)dt, n);
        if (dt == DT_F32 || dt == DT_F64)
          vec_templ(b, d, gnu ? vec_gnu_float_text : vec_struct_float_text, (DType)dt, n);
        if (pr->selgt[dt][n])
          vec_templ(b, d, gnu ? vec_gnu_selgt_text : vec_struct_selgt_text, (DType)dt, n);
        if (pr->selgtn[dt][n])
          vec_templ(b, d, gnu ? vec_gnu_selgtn_text : vec_struct_selgtn_text, (DType)dt, n);
        if (pr->maxmin[dt][n])
          vec_templ(b, d, gnu ? vec_gnu_maxmin_text : vec_struct_maxmin_text, (DType)dt, n);
      }
    }
  }
  buf_puts(b, "#endif\n");
  return true;
}

bool cexpr_prelude(Buf *b, const CDialect *d, Prelude *pr) {
  // dependencies
  for (int dt = 0; dt < DT_COUNT; dt++) {
    if (dtype_is_int((DType)dt) && (pr->group[G_FLOORDIV][dt] || pr->group[G_REM][dt] || pr->group[G_POW][dt])) {
      pr->single[H_ERR] = true;
      pr->group[G_INT][dt] = true;
    }
  }
  if (pr->single[H_INDEX])
    pr->single[H_ERR] = true;
  if (pr->single[H_ERR])
    buf_puts(b, d->err_text);
  if (pr->single[H_F16]) {
    buf_puts(b, "// f16 <-> f32 by bit arithmetic, rounding to nearest even.\n");
    buf_puts(b, d->f16_text);
    templ(b, d, f2h_tail_text, DT_F32);
  }
  if (pr->single[H_BF16]) {
    buf_puts(b, "// bf16 <-> f32: the high half of the f32 bits, rounding to nearest even.\n");
    buf_puts(b, d->bf16_text);
    templ(b, d, "$Dfloat tdsl_g_round_bf16(float f) { return tdsl_g_bf2f(tdsl_g_f2bf(f)); }\n", DT_F32);
  }
  if (pr->single[H_INDEX])
    templ(b, d, index_text, DT_I64);
  if (pr->single[H_REDUCE]) {
    TD_ASSERT(d->reduce_text);
    buf_puts(b, d->reduce_text);
  }
  bool vec = vec_prelude(b, d, pr);
  if (pr->single[H_STREAM] && !vec)
    buf_puts(b, "#include <string.h>\n");
  if (pr->single[H_STREAM])
    buf_puts(b, stream_text);
  bool any = vec;
  for (int h = 0; h < H_COUNT; h++)
    any |= pr->single[h];
  for (int g = 0; g < G_COUNT; g++) {
    for (int dt = 0; dt < DT_COUNT; dt++) {
      if (!pr->group[g][dt])
        continue;
      any = true;
      if (g == G_FLOAT) {
        for (size_t i = 0; i < sizeof float_group / sizeof float_group[0]; i++)
          float_helper(b, d, float_group[i], (DType)dt);
        continue;
      }
      const char *t = group_text((HelperGroup)g, (DType)dt);
      TD_ASSERT(t);
      templ(b, d, t, (DType)dt);
    }
  }
  for (int op = 0; op < OP_COUNT; op++) {
    for (int dt = 0; dt < DT_COUNT; dt++) {
      if (pr->composite[op][dt]) {
        any = true;
        float_helper(b, d, (Op)op, (DType)dt);
      }
    }
  }
  return any;
}

// ---- types ----
const char *cexpr_type(DType dt) {
  switch (dt) {
  case DT_BOOL: return "bool";
  case DT_U8: return "uint8_t";
  case DT_I8: return "int8_t";
  case DT_I16: return "int16_t";
  case DT_I32: return "int32_t";
  case DT_I64: return "int64_t";
  case DT_F16:
  case DT_BF16:
  case DT_F32: return "float";
  case DT_F64: return "double";
  case DT_C64:  // complex values are float pairs in the graph (frontend/lower.c): never a kernel's
  case DT_C128:
  case DT_COUNT: break;
  }
  td_unreachable();
}

const char *cexpr_storage_type(DType dt) {
  switch (dt) {
  case DT_BOOL: return "uint8_t";
  case DT_F16:
  case DT_BF16: return "uint16_t";
  default: return cexpr_type(dt);
  }
}

// ---- the kernel printer ----
static void scan_expr(CExprGen *g, const LExpr *e) {
  if (!e)
    return;
  if (e->kind == LX_LOCAL)
    g->local_read[e->local] = true;
  if (lx_raises_here(e))
    g->has_err = true;
  if (e->kind == LX_LOAD)
    scan_expr(g, e->idx.dyn);
  scan_expr(g, e->a);
  scan_expr(g, e->b);
  scan_expr(g, e->c);
}

static void scan_stmts(CExprGen *g, const LStmtList *l) {
  for (int i = 0; i < l->len; i++) {
    const LStmt *s = l->data[i];
    scan_expr(g, s->val);
    scan_expr(g, s->cond);
    if (s->kind == LS_STORE)
      scan_expr(g, s->idx.dyn);
    scan_stmts(g, &s->body);
  }
}

void cexpr_begin(CExprGen *g, Ctx *cx, const CDialect *d, Prelude *pr, const LProgram *p, const LKernel *k) {
  int nargs = k->args.len, nlocals = k->locals.len;
  *g = (CExprGen){.cx = cx, .d = d, .pr = pr, .p = p, .k = k, .depth = 1};
  g->arg_used = arena_alloc(&cx->arena, sizeof(bool) * (size_t)(nargs + 1));
  g->local_read = arena_alloc(&cx->arena, sizeof(bool) * (size_t)(nlocals + 1));
  g->decl_depth = arena_alloc(&cx->arena, sizeof(int) * (size_t)(nlocals + 1));
  g->lname = arena_alloc(&cx->arena, sizeof(char *) * (size_t)(nlocals + 1));
  g->lanes = arena_alloc(&cx->arena, sizeof(int) * (size_t)(nlocals + 1));
  loop_local_lanes(k, g->lanes);
  for (int i = 0; i < nlocals; i++) {
    g->decl_depth[i] = -1;
    g->lname[i] = arena_printf(&cx->arena, "t%d", i);
  }
  scan_stmts(g, &k->body);
  if (g->has_err)
    pr->single[H_ERR] = true;
}

DType cexpr_arg_dtype(const CExprGen *g, int arg) {
  TD_ASSERT(arg >= 0 && arg < g->k->args.len);
  return g->p->bufs.data[g->k->args.data[arg].buf].dtype;
}

// The trailing arguments of a raising helper: where and which error it records.
static void err_args(CExprGen *g, int err) {
  if (err < 0 || !g->has_err) {
    buf_puts(g->b, g->d->no_err);
    return;
  }
  TD_ASSERT(err < g->k->errors.len);
  g->d->err_args(g, err);
}

// The dynamic part of an index. A function's scalar argument (a stride) times a constant
// is printed as C's product: the index it is part of stays within the elements the call
// reaches (ir/loop.h's Functions), so it cannot overflow; times 1, as the argument.
static void dyn_index(void *ctx, Buf *b, const LExpr *e) {
  CExprGen *g = ctx;
  TD_ASSERT(b == g->b);
  if (e->kind == LX_BINARY && e->op == OP_MUL && e->dt == DT_I64 && e->a->kind == LX_ARG && e->b->kind == LX_CONST) {
    if (e->b->i != 1)
      buf_printf(b, "%" PRId64 " * ", e->b->i);
    cexpr_expr(g, e->a);
    return;
  }
  cexpr_expr(g, e);
}

void cexpr_index(CExprGen *g, const LIndex *ix) { emit_index(g->b, ix, dyn_index, g); }

// The index of lane tdsl_g_l of a vector load or store at ix.
static void lane_index(CExprGen *g, const LIndex *ix) {
  TD_ASSERT(g->lane);
  bool zero = ix->base == 0 && !ix->dyn;
  for (int t = 0; t < ix->nterms; t++)
    zero &= ix->coef[t] == 0;
  if (!zero) {
    cexpr_index(g, ix);
    buf_puts(g->b, " + ");
  }
  buf_puts(g->b, "tdsl_g_l");
}

// The text around a value of dtype `from` that makes it a value of dtype `to`
// (ir/loop.h's LX_CAST): pre + value + post.
static void cast_text(CExprGen *g, DType from, DType to, const char **pre, const char **post) {
  *pre = *post = "";
  if (from == to)
    return;
  if (to == DT_BOOL) {
    *pre = "(", *post = " != 0)";
    return;
  }
  bool ffl = dtype_is_float(from), tfl = dtype_is_float(to);
  if (to == DT_F16 || to == DT_BF16) {
    const char *r = to == DT_F16 ? "tdsl_g_round_f16(" : "tdsl_g_round_bf16(";
    g->pr->single[to == DT_F16 ? H_F16 : H_BF16] = true;
    if (from == DT_F32 || dtype_is_half(from))
      *pre = r, *post = ")";
    else
      *pre = arena_printf(&g->cx->arena, "%s(float)(", r), *post = "))";  // via f32, as PyTorch does
    return;
  }
  if (tfl) {  // to f32 or f64
    if (to == DT_F32 && dtype_is_half(from))
      return;  // carried as f32 already
    *pre = to == DT_F32 ? "(float)(" : "(double)(", *post = ")";
    return;
  }
  // to an int
  if (dtype_is_small_int(to)) {  // wraps (gcc and nvcc: modulo 2^bits); a float goes through f2i
    DType via = from == DT_F64 && to == DT_U8 ? DT_I64 : DT_I32;  // PyTorch's CPU answer (kb_cast)
    const char *wrap = to == DT_U8 ? "(uint8_t)" : to == DT_I8 ? "(int8_t)(uint8_t)" : "(int16_t)(uint16_t)";
    if (ffl)
      g->pr->group[G_F2I][via] = true;
    *pre = arena_printf(&g->cx->arena, "%s%s(", wrap, !ffl ? "" : via == DT_I32 ? "tdsl_g_f2i32" : "tdsl_g_f2i64");
    *post = ")";
    return;
  }
  if (ffl) {
    g->pr->group[G_F2I][to] = true;
    *pre = to == DT_I32 ? "tdsl_g_f2i32(" : "tdsl_g_f2i64(", *post = ")";
    return;
  }
  if (to == DT_I32 && from == DT_I64)
    *pre = "(int32_t)(uint32_t)(", *post = ")";  // wraps (gcc: modulo 2^32)
  else
    *pre = to == DT_I32 ? "(int32_t)(" : "(int64_t)(", *post = ")";
}

static void float_const(CExprGen *g, DType dt, double v) {
  bool f32 = dt != DT_F64;
  const TypeText *t = &g->d->types[f32 ? DT_F32 : DT_F64];
  if (f32)
    v = (float)v;
  if (isnan(v)) {
    buf_puts(g->b, t->nan);
    return;
  }
  if (isinf(v)) {
    buf_puts(g->b, v > 0 ? t->inf : t->ninf);
    return;
  }
  char s[64];
  snprintf(s, sizeof s, f32 ? "%.9g" : "%.17g", v);
  bool neg = s[0] == '-';
  if (neg)
    buf_puts(g->b, "(");
  buf_puts(g->b, s);
  if (!strpbrk(s, ".en"))
    buf_puts(g->b, ".0");
  if (f32)
    buf_puts(g->b, "f");
  if (neg)
    buf_puts(g->b, ")");
}

static void int_const(Buf *b, DType dt, int64_t v) {
  if (dt == DT_BOOL) {
    buf_puts(b, v ? "true" : "false");
  } else if (dt == DT_I32) {
    int32_t x = (int32_t)v;
    if (x == INT32_MIN)
      buf_puts(b, "INT32_MIN");
    else
      buf_printf(b, x < 0 ? "(%" PRId32 ")" : "%" PRId32, x);
  } else if (v == INT64_MIN) {
    buf_puts(b, "INT64_MIN");
  } else if (v >= INT32_MIN && v <= INT32_MAX) {
    buf_printf(b, v < 0 ? "(%" PRId64 ")" : "%" PRId64, v);
  } else {
    buf_printf(b, "INT64_C(%" PRId64 ")", v);
  }
}

// a[0], ..., a[n - 1]) after a call's opening: a vector helper's arguments.
static void args_close(CExprGen *g, const LExpr *const *a, int n) {
  for (int i = 0; i < n; i++) {
    if (i)
      buf_puts(g->b, ", ");
    cexpr_expr(g, a[i]);
  }
  buf_puts(g->b, ")");
}

static void call1(CExprGen *g, const char *fn, const LExpr *a) {
  buf_printf(g->b, "%s(", fn);
  cexpr_expr(g, a);
  buf_puts(g->b, ")");
}

// fn(a, b), and the error arguments unless err is -2 (a helper that never raises).
static void call2(CExprGen *g, const char *fn, const LExpr *a, const LExpr *b, int err) {
  buf_printf(g->b, "%s(", fn);
  cexpr_expr(g, a);
  buf_puts(g->b, ", ");
  cexpr_expr(g, b);
  if (err != -2) {
    buf_puts(g->b, ", ");
    err_args(g, err);
  }
  buf_puts(g->b, ")");
}

static void infix(CExprGen *g, const char *op, const LExpr *a, const LExpr *b) {
  buf_puts(g->b, "(");
  cexpr_expr(g, a);
  buf_printf(g->b, " %s ", op);
  cexpr_expr(g, b);
  buf_puts(g->b, ")");
}

const char *cexpr_helper(CExprGen *g, HelperGroup grp, const char *name, DType dt) {
  g->pr->group[grp][dt] = true;
  return arena_printf(&g->cx->arena, "tdsl_g_%s_%s", name, g->d->types[dt].S);
}

// "tdsl_g_<op>_<suffix>", the helper of a composite op outside G_FLOAT's four.
static const char *composite_helper(CExprGen *g, Op op, DType dt) {
  g->pr->composite[op][dt] = true;
  return arena_printf(&g->cx->arena, "tdsl_g_%s_%s", op_name(op), g->d->types[dt].S);
}

// The math library's function for dt (the f suffix for f32).
static const char *libm(CExprGen *g, const char *name, DType dt) {
  return arena_printf(&g->cx->arena, "%s%s", name, dt == DT_F32 ? "f" : "");
}

static TD_NORETURN void unsupported(const CExprGen *g, const LExpr *e, DType dt) {
  td_internal_error(__FILE__, __LINE__, "%s backend: op '%s' on %s", g->d->name, op_name(e->op), dtype_name(dt));
}

static void unary(CExprGen *g, const LExpr *e) {
  DType dt = dtype_compute(e->dt);
  bool fl = dtype_is_float(dt), in = dtype_is_int(dt), bo = dt == DT_BOOL;
  const LExpr *a = e->a;
  switch (e->op) {
  case OP_NEG:
    if (fl)
      buf_puts(g->b, "(-"), cexpr_expr(g, a), buf_puts(g->b, ")");
    else if (in)
      call1(g, cexpr_helper(g, G_INT, "neg", dt), a);
    else
      cexpr_expr(g, a);  // bool: PyTorch refuses; never built
    return;
  case OP_ABS:
    if (fl)
      call1(g, libm(g, "fabs", dt), a);
    else if (in)
      call1(g, cexpr_helper(g, G_INT, "abs", dt), a);
    else
      cexpr_expr(g, a);
    return;
  case OP_SIGN: call1(g, cexpr_helper(g, G_SIGN, "sign", dt), a); return;
  case OP_RELU: call1(g, cexpr_helper(g, G_RELU, "relu", dt), a); return;
  case OP_SQUARE:  // of a float: its formula, below
    if (fl)
      break;
    if (bo)
      cexpr_expr(g, a);
    else
      call1(g, cexpr_helper(g, G_INT, "square", dt), a);
    return;
  case OP_BITWISE_NOT:
    if (bo)
      buf_puts(g->b, "(!"), cexpr_expr(g, a), buf_puts(g->b, ")");
    else if (in)
      buf_printf(g->b, "(%s)(~", cexpr_type(dt)), cexpr_expr(g, a), buf_puts(g->b, ")");
    else
      unsupported(g, e, dt);
    return;
  case OP_LOGICAL_NOT:
    buf_puts(g->b, "(!"), cexpr_expr(g, a), buf_puts(g->b, ")");
    return;
  case OP_FLOOR:
  case OP_CEIL:
  case OP_ROUND:
    if (!fl) {
      cexpr_expr(g, a);  // integral already
      return;
    }
    call1(g, libm(g, e->op == OP_FLOOR ? "floor" : e->op == OP_CEIL ? "ceil" : g->d->round, dt), a);
    return;
  default: break;
  }
  if (!fl)
    unsupported(g, e, dt);
  if (op_is_composite(e->op, dt)) {
    const LExpr *f = op_formula(g->cx, e->op, dt, a);
    if (formula_inline(f, a))
      cexpr_expr(g, f);
    else if (in_float_group(e->op))
      call1(g, cexpr_helper(g, G_FLOAT, op_name(e->op), dt), a);
    else
      call1(g, composite_helper(g, e->op, dt), a);
    return;
  }
  if (!op_libm(e->op))
    unsupported(g, e, dt);
  call1(g, libm(g, op_libm(e->op), dt), a);
}

static void binary(CExprGen *g, const LExpr *e) {
  const LExpr *a = e->a, *b = e->b;
  bool cmp = e->op == OP_EQ || e->op == OP_NE || e->op == OP_LT || e->op == OP_LE || e->op == OP_GT ||
             e->op == OP_GE;
  if (cmp) {
    static const char *const sym[] = {"==", "!=", "<", "<=", ">", ">="};
    infix(g, sym[e->op - OP_EQ], a, b);
    return;
  }
  DType dt = dtype_compute(e->dt);
  bool fl = dtype_is_float(dt), in = dtype_is_int(dt), bo = dt == DT_BOOL;
  bool safe = !lx_raises(b);  // && and || may skip b
  switch (e->op) {
  case OP_LOGICAL_AND: infix(g, safe ? "&&" : "&", a, b); return;
  case OP_LOGICAL_OR: infix(g, safe ? "||" : "|", a, b); return;
  case OP_ADD:
  case OP_SUB:
  case OP_MUL:
    if (fl)
      infix(g, e->op == OP_ADD ? "+" : e->op == OP_SUB ? "-" : "*", a, b);
    else if (in)
      call2(g, cexpr_helper(g, G_INT, e->op == OP_ADD ? "add" : e->op == OP_SUB ? "sub" : "mul", dt), a, b, -2);
    else  // bool: add is or, mul is and (PyTorch); sub is refused
      infix(g, e->op == OP_ADD ? "|" : e->op == OP_SUB ? "^" : "&", a, b);
    return;
  case OP_DIV:
    if (!fl)
      unsupported(g, e, dt);
    infix(g, "/", a, b);
    return;
  case OP_FLOOR_DIVIDE:
    if (bo)
      unsupported(g, e, dt);
    call2(g, cexpr_helper(g, G_FLOORDIV, "floordiv", dt), a, b, fl ? -2 : e->err);
    return;
  case OP_REMAINDER:
    if (bo)
      unsupported(g, e, dt);
    call2(g, cexpr_helper(g, G_REM, "rem", dt), a, b, fl ? -2 : e->err);
    return;
  case OP_POW:
    if (fl)
      break;  // libm's, below
    if (in)
      call2(g, cexpr_helper(g, G_POW, "pow", dt), a, b, e->err);
    else
      unsupported(g, e, dt);
    return;
  case OP_MAXIMUM:
  case OP_MINIMUM:
    call2(g, cexpr_helper(g, G_MAXMIN, e->op == OP_MAXIMUM ? "max" : "min", dt), a, b, -2);
    return;
  case OP_BITWISE_AND:
  case OP_BITWISE_OR:
  case OP_BITWISE_XOR: {
    const char *sym = e->op == OP_BITWISE_AND ? "&" : e->op == OP_BITWISE_OR ? "|" : "^";
    if (bo) {
      infix(g, sym, a, b);  // bool & bool is an int 0 or 1: a bool again
    } else if (in) {
      buf_printf(g->b, "(%s)", cexpr_type(dt));
      infix(g, sym, a, b);
    } else {
      unsupported(g, e, dt);
    }
    return;
  }
  case OP_LSHIFT:  // the count is in [0, bits) (ir/scalar.c masks it); << on the unsigned bits
    if (!in)
      unsupported(g, e, dt);
    buf_printf(g->b, "(%s)((%s)(", cexpr_type(dt), dt == DT_I32 ? "uint32_t" : "uint64_t");
    cexpr_expr(g, a);
    buf_puts(g->b, ") << (");
    cexpr_expr(g, b);
    buf_puts(g->b, "))");
    return;
  case OP_RSHIFT:  // arithmetic (gcc and nvcc shift a negative int so)
    if (!in)
      unsupported(g, e, dt);
    infix(g, ">>", a, b);
    return;
  default: break;
  }
  // the float ops of a libm function of two arguments (ir/ops.def's libm column)
  if (!fl || !op_libm(e->op))
    unsupported(g, e, dt);
  call2(g, libm(g, op_libm(e->op), dt), a, b, -2);
}

// LX_BITCAST from or to a half (an f32 in registers, i16 its bits): its bits are what
// storing it writes, a half of bits what loading them reads.
static void half_bits(CExprGen *g, const LExpr *e) {
  DType from = e->a->dt, to = e->dt;
  if (dtype_is_half(to)) {
    g->pr->single[to == DT_F16 ? H_F16 : H_BF16] = true;
    buf_puts(g->b, to == DT_F16 ? "tdsl_g_h2f((uint16_t)(" : "tdsl_g_bf2f((uint16_t)(");
  } else {
    buf_printf(g->b, "(%s)(", cexpr_type(to));
  }
  if (dtype_is_half(from)) {
    g->pr->single[from == DT_F16 ? H_F16 : H_BF16] = true;
    buf_puts(g->b, from == DT_F16 ? "tdsl_g_f2h(" : "tdsl_g_f2bf(");
  }
  cexpr_expr(g, e->a);
  buf_puts(g->b, dtype_is_half(from) ? "))" : ")");
  if (dtype_is_half(to)) buf_puts(g->b, ")");
}

static void load(CExprGen *g, const LExpr *e) {
  DType bt = cexpr_arg_dtype(g, e->buf);
  g->arg_used[e->buf] = true;
  if (e->lanes > 1 && e->dt != bt) {  // the bits of f16, bf16 or bool (the storage's own type)
    buf_printf(g->b, "((const %s *)b%d)[", cexpr_type(e->dt), e->buf);
    lane_index(g, &e->idx);
    buf_puts(g->b, "]");
    return;
  }
  const char *pre, *post;
  cast_text(g, bt, e->dt, &pre, &post);
  buf_puts(g->b, pre);
  if (dtype_is_half(bt)) {
    g->pr->single[bt == DT_F16 ? H_F16 : H_BF16] = true;
    buf_puts(g->b, bt == DT_F16 ? "tdsl_g_h2f(" : "tdsl_g_bf2f(");
  } else if (bt == DT_BOOL) {
    buf_puts(g->b, "(");
  }
  buf_printf(g->b, "b%d[", e->buf);
  if (e->lanes > 1)
    lane_index(g, &e->idx);
  else
    cexpr_index(g, &e->idx);
  buf_puts(g->b, "]");
  if (dtype_is_half(bt))
    buf_puts(g->b, ")");
  else if (bt == DT_BOOL)
    buf_puts(g->b, " != 0)");
  buf_puts(g->b, post);
}

// The lane number sel[tdsl_g_l] of a shuffle, as a compound literal indexed.
static void print_sel(CExprGen *g, const LExpr *e) {
  buf_puts(g->b, "((const int[]){");
  for (int l = 0; l < e->lanes; l++)
    buf_printf(g->b, "%s%d", l ? ", " : "", e->sel[l]);
  buf_puts(g->b, "})[tdsl_g_l]");
}

// c ? a : b, or, when an arm may raise, a helper call that evaluates both.
// Whether e reads memory.
static bool reads_memory(const LExpr *e) {
  return e && (e->kind == LX_LOAD || reads_memory(e->a) || reads_memory(e->b) || reads_memory(e->c));
}

// c ? a : b, or through the sel helper, which evaluates both arms: when an arm may raise
// (the error is reported whichever the condition picks, as PyTorch computes both), and
// when an arm reads memory. Every load of the loop IR is in bounds, so reading it
// unconditionally is safe, and it keeps gcc from if-converting the conditional load into
// a masked vector load: gcc 12 (-O2 -march=native, AVX-512) addresses such a load
// wrongly in an unrolled softmax row (a causal mask's where), reading past the buffer.
static void ternary(CExprGen *g, const LExpr *e) {
  bool both = lx_raises(e->b) || lx_raises(e->c) || reads_memory(e->b) || reads_memory(e->c);
  if (both)
    buf_printf(g->b, "%s(", cexpr_helper(g, G_SEL, "sel", dtype_compute(e->dt)));
  else
    buf_puts(g->b, "(");
  cexpr_expr(g, e->a);
  buf_puts(g->b, both ? ", " : " ? ");
  cexpr_expr(g, e->b);
  buf_puts(g->b, both ? ", " : " : ");
  cexpr_expr(g, e->c);
  buf_puts(g->b, ")");
}

// pre + a + post
static void around(CExprGen *g, const char *pre, const LExpr *a, const char *post) {
  buf_puts(g->b, pre);
  cexpr_expr(g, a);
  buf_puts(g->b, post);
}

bool cexpr_vec(const CExprGen *g, int lanes) {
  return g->d->vectors && lanes > 1 && lanes <= CEXPR_MAX_LANES && !(lanes & (lanes - 1));
}

const char *cexpr_vec_type(CExprGen *g, DType dt, int lanes) {
  TD_ASSERT(cexpr_vec(g, lanes));
  g->pr->vec[dt][lanes] = true;
  return arena_printf(&g->cx->arena, "tdsl_g_%sx%d", vec_suffix(dt), lanes);
}

// &b<buf>[ix], or b<buf> where ix is 0.
static void elem_addr(CExprGen *g, int buf, const LIndex *ix) {
  bool zero = ix->base == 0 && !ix->dyn;
  for (int t = 0; t < ix->nterms; t++)
    zero &= ix->coef[t] == 0;
  if (zero) {
    buf_printf(g->b, "b%d", buf);
    return;
  }
  buf_printf(g->b, "&b%d[", buf);
  cexpr_index(g, ix);
  buf_puts(g->b, "]");
}

// Whether e combines lanes *next.. of vector local `local` by op in a balanced tree of
// `depth` levels, leaves in order.
static bool tree_ok(const LExpr *e, Op op, int depth, int local, int *next) {
  if (depth == 0)
    return e->kind == LX_LANE && e->a->local == local && e->i == (*next)++;
  return e->kind == LX_BINARY && e->op == op && e->lanes == 1 && tree_ok(e->a, op, depth - 1, local, next) &&
         tree_ok(e->b, op, depth - 1, local, next);
}

// A float sum or product of every lane of a vector local, in the pairwise tree sched.c
// combines a reduction's lanes with: tdsl_g_treeN(op, local, 0). Whether e was one.
static bool lane_tree(CExprGen *g, const LExpr *e) {
  if (e->kind != LX_BINARY || (e->op != OP_ADD && e->op != OP_MUL) || (e->dt != DT_F32 && e->dt != DT_F64) ||
      e->lanes != 1)
    return false;
  const LExpr *f = e;
  int depth = 0;
  while (f->kind == LX_BINARY && f->op == e->op && f->lanes == 1)
    f = f->a, depth++;
  if (f->kind != LX_LANE || f->i != 0 || depth > 6)
    return false;
  int local = f->a->local, n = g->lanes[local], next = 0;
  if (n != 1 << depth || !cexpr_vec(g, n) || !tree_ok(e, e->op, depth, local, &next))
    return false;
  g->pr->tree[n] = true;
  buf_printf(g->b, "tdsl_g_tree%d(%s, %s, 0)", n, e->op == OP_ADD ? "+" : "*", g->lname[local]);
  return true;
}

// A vector value in a dialect with vector types: a helper of its type (the prelude's).
static void vec_expr(CExprGen *g, const LExpr *e) {
  const char *t = cexpr_vec_type(g, e->dt, e->lanes) + strlen("tdsl_g_");
  switch (e->kind) {
  case LX_LOCAL: buf_puts(g->b, g->lname[e->local]); return;
  case LX_LOAD:  // of the value's dtype, or the bits of f16, bf16 or bool (the storage's)
    g->arg_used[e->buf] = true;
    buf_printf(g->b, "tdsl_g_ld_%s(", t);
    elem_addr(g, e->buf, &e->idx);
    buf_puts(g->b, ")");
    return;
  case LX_SPLAT:
    TD_ASSERT(e->a->lanes == 1);
    buf_printf(g->b, "tdsl_g_splat_%s(", t);
    cexpr_expr(g, e->a);
    buf_puts(g->b, ")");
    return;
  case LX_BINARY: {
    static const char *const names[OP_COUNT] = {[OP_ADD] = "add", [OP_SUB] = "sub", [OP_MUL] = "mul",
                                                [OP_MAXIMUM] = "max", [OP_MINIMUM] = "min"};
    TD_ASSERT(names[e->op]);
    if (e->op == OP_MAXIMUM || e->op == OP_MINIMUM)
      g->pr->maxmin[e->dt][e->lanes] = true;
    buf_printf(g->b, "tdsl_g_%s_%s(", names[e->op], t);
    args_close(g, (const LExpr *[]){e->a, e->b}, 2);
    return;
  }
  case LX_FMA:  // fmas: the first factor a splat (a matmul's element of a row)
    TD_ASSERT(e->dt == DT_F32 || e->dt == DT_F64);
    buf_printf(g->b, "tdsl_g_fma%s_%s(", e->a->kind == LX_SPLAT ? "s" : "", t);
    args_close(g, (const LExpr *[]){e->a->kind == LX_SPLAT ? e->a->a : e->a, e->b, e->c}, 3);
    return;
  case LX_SELECT: {  // (p > q) ? a : b, or ((p > q) || (s != s && t == t)) ? a : b
    bool nan = e->a->op == OP_LOGICAL_OR;
    const LExpr *c = nan ? e->a->a : e->a;
    (nan ? g->pr->selgtn : g->pr->selgt)[e->dt][e->lanes] = true;
    buf_printf(g->b, "tdsl_g_selgt%s_%s(", nan ? "n" : "", t);
    if (nan)
      args_close(g, (const LExpr *[]){c->a, c->b, e->a->b->a->a, e->a->b->b->a, e->b, e->c}, 6);
    else
      args_close(g, (const LExpr *[]){c->a, c->b, e->b, e->c}, 4);
    return;
  }
  default: break;  // a shuffle is a let's value (shuffle_let); nothing else has lanes
  }
  td_internal_error(__FILE__, __LINE__, "%s backend: a vector expression of kind %d", g->d->name, (int)e->kind);
}

void cexpr_expr(CExprGen *g, const LExpr *e) {
  const char *pre, *post;
  if (cexpr_vec(g, e->lanes)) {
    vec_expr(g, e);
    return;
  }
  switch (e->kind) {
  case LX_CONST:
    if (dtype_is_float(e->dt))
      float_const(g, e->dt, e->f);
    else
      int_const(g->b, e->dt, e->i);
    return;
  case LX_VAR: buf_printf(g->b, "v%d", e->var); return;
  case LX_LOCAL:
    TD_ASSERT(e->local >= 0 && e->local < g->k->locals.len);
    buf_puts(g->b, g->lname[e->local]);
    if (e->lanes > 1) {
      TD_ASSERT(g->lane);
      buf_puts(g->b, "[tdsl_g_l]");
    }
    return;
  case LX_LOAD: load(g, e); return;
  case LX_UNARY:
  case LX_BINARY: {
    if (lane_tree(g, e))
      return;
    // Arithmetic typed f16/bf16 is done in f32 and rounded (never built by kernel.c).
    bool round = dtype_is_half(e->dt);
    if (round) {
      g->pr->single[e->dt == DT_F16 ? H_F16 : H_BF16] = true;
      buf_puts(g->b, e->dt == DT_F16 ? "tdsl_g_round_f16(" : "tdsl_g_round_bf16(");
    }
    if (e->kind == LX_UNARY)
      unary(g, e);
    else
      binary(g, e);
    if (round)
      buf_puts(g->b, ")");
    return;
  }
  case LX_SELECT: ternary(g, e); return;
  case LX_CAST:
    cast_text(g, e->a->dt, e->dt, &pre, &post);
    around(g, pre, e->a, post);
    return;
  case LX_BITCAST:
    if (dtype_is_half(e->a->dt) || dtype_is_half(e->dt)) {
      half_bits(g, e);
      return;
    }
    g->d->bitcast(g, e->a->dt, e->dt, &pre, &post);
    around(g, pre, e->a, post);
    return;
  case LX_CHECKED_INDEX:
    g->pr->single[H_INDEX] = true;
    buf_puts(g->b, "tdsl_g_index(");
    cexpr_expr(g, e->a);
    buf_printf(g->b, ", %" PRId64 ", %" PRId64 ", ", e->wrap ? -e->i : 0, e->i);
    err_args(g, e->err);
    buf_puts(g->b, ")");
    return;
  case LX_FMA:  // fused: ISO C keeps -ffp-contract=off, so a * b + c would not be
    TD_ASSERT(e->dt == DT_F32 || e->dt == DT_F64);
    buf_printf(g->b, "%s(", libm(g, "fma", e->dt));
    cexpr_expr(g, e->a);
    buf_puts(g->b, ", ");
    cexpr_expr(g, e->b);
    buf_puts(g->b, ", ");
    cexpr_expr(g, e->c);
    buf_puts(g->b, ")");
    return;
  case LX_SPLAT:  // the same scalar in every lane
    TD_ASSERT(g->lane && e->a->lanes == 1);
    cexpr_expr(g, e->a);
    return;
  case LX_LANE:
    TD_ASSERT(e->a->kind == LX_LOCAL && e->a->local >= 0 && e->a->local < g->k->locals.len);
    buf_printf(g->b, cexpr_vec(g, e->a->lanes) ? "tdsl_g_lane(%s, %" PRId64 ")" : "%s[%" PRId64 "]", g->lname[e->a->local], e->i);
    return;
  case LX_ARG: buf_printf(g->b, "a%" PRId64, e->i); return;  // a function's scalar parameter
  case LX_SHUFFLE:  // lane l: the sel[l]-th lane of a ++ b (cexpr_let prints the fast form)
    TD_ASSERT(g->lane && e->a->kind == LX_LOCAL && e->b->kind == LX_LOCAL);
    buf_puts(g->b, "(");
    print_sel(g, e);
    buf_printf(g->b, " < %d ? %s[", e->a->lanes, g->lname[e->a->local]);
    print_sel(g, e);
    buf_printf(g->b, "] : %s[", g->lname[e->b->local]);
    print_sel(g, e);
    buf_printf(g->b, " - %d])", e->a->lanes);
    return;
  case LX_SHFL:
  case LX_IDIV:
  case LX_INSERT:
  case LX_FRAG:
  case LX_MMA:  // the GPU form's (ir/loop.h): the CUDA dialect's
    TD_ASSERT(g->d->gpu_expr);
    g->d->gpu_expr(g, e);
    return;
  case LX_COUNT: break;
  }
  td_unreachable();
}

// ---- statements ----
// The value of dtype vt stored into a buffer of dtype bt.
static void store_value(CExprGen *g, DType vt, DType bt, const LExpr *val) {
  const char *pre, *post;
  if (dtype_is_half(bt)) {
    g->pr->single[bt == DT_F16 ? H_F16 : H_BF16] = true;
    buf_puts(g->b, bt == DT_F16 ? "tdsl_g_f2h(" : "tdsl_g_f2bf(");
    if (val->kind == LX_CAST && val->dt == bt && val->a->dt == DT_F32)
      val = val->a, vt = DT_F32;  // f2h rounds as the cast would: round once
    cast_text(g, vt, dtype_is_half(vt) ? vt : DT_F32, &pre, &post);
    around(g, pre, val, post);
    buf_puts(g->b, ")");
    return;
  }
  cast_text(g, vt, bt, &pre, &post);
  if (bt == DT_BOOL)
    buf_puts(g->b, "(uint8_t)");
  around(g, pre, val, post);
}

// ---- statements of vector values ----
// Whether e reads a single lane of local `local` (an LX_LANE of it).
static bool reads_lane_of(const LExpr *e, int local) {
  if (!e)
    return false;
  if ((e->kind == LX_LANE && e->a->local == local) ||
      (e->kind == LX_SHUFFLE && (e->a->local == local || e->b->local == local)))
    return true;
  if (e->kind == LX_LOAD && reads_lane_of(e->idx.dyn, local))
    return true;
  return reads_lane_of(e->a, local) || reads_lane_of(e->b, local) || reads_lane_of(e->c, local);
}

static bool same_index(const LIndex *x, const LIndex *y) {
  if (x->dyn || y->dyn || x->base != y->base || x->nterms != y->nterms)
    return false;
  for (int t = 0; t < x->nterms; t++) {
    if (x->var[t] != y->var[t] || x->coef[t] != y->coef[t])
      return false;
  }
  return true;
}

// Whether e reads an element of arg buf other than the one each lane of a vector
// store at ix writes (any load of buf but a vector load at ix itself). Conservative.
static bool reads_other_elem(const LExpr *e, int buf, const LIndex *ix) {
  if (!e)
    return false;
  if (e->kind == LX_LOAD) {
    if (e->buf == buf && !(e->lanes > 1 && same_index(&e->idx, ix)))
      return true;
    if (reads_other_elem(e->idx.dyn, buf, ix))
      return true;
  }
  return reads_other_elem(e->a, buf, ix) || reads_other_elem(e->b, buf, ix) || reads_other_elem(e->c, buf, ix);
}

// The element of lane tdsl_g_l that s writes.
static void lane_target(CExprGen *g, const LStmt *s) {
  if (s->kind == LS_STORE) {
    buf_printf(g->b, "b%d[", s->buf);
    lane_index(g, &s->idx);
    buf_puts(g->b, "]");
  } else {
    buf_printf(g->b, "%s[tdsl_g_l]", g->lname[s->local]);
  }
}

static void open_lanes(CExprGen *g, int lanes) {
  g->lane_loops = true;
  buf_indent(g->b, g->depth);
  buf_printf(g->b, "for (int tdsl_g_l = 0; tdsl_g_l < %d; tdsl_g_l++) ", lanes);
}

// A store, let or set of a vector value: one loop over the lanes. The IR assigns the
// whole vector at once, so when a lane could read what an earlier lane wrote (a lane
// of the local set, another element of the buffer stored) the value goes through a
// temporary array first.
static void lane_stmt(CExprGen *g, const LStmt *s) {
  const LExpr *val = s->val;
  int n = val->lanes;
  TD_ASSERT(n > 1 && !g->lane);
  bool temp = s->kind == LS_STORE
                  ? reads_other_elem(val, s->buf, &s->idx) || reads_other_elem(s->idx.dyn, s->buf, &s->idx)
                  : reads_lane_of(val, s->local);
  if (temp) {
    buf_indent(g->b, g->depth);
    buf_puts(g->b, "{\n");
    g->depth++;
    buf_indent(g->b, g->depth);
    buf_printf(g->b, "%s tdsl_g_v[%d];\n", cexpr_type(val->dt), n);
  }
  open_lanes(g, n);
  g->lane = true;
  if (temp)
    buf_puts(g->b, "tdsl_g_v[tdsl_g_l]");
  else
    lane_target(g, s);
  buf_puts(g->b, " = ");
  cexpr_expr(g, val);  // a vector store's buffer has the value's dtype: no conversion
  buf_puts(g->b, ";\n");
  if (temp) {
    open_lanes(g, n);
    lane_target(g, s);
    buf_puts(g->b, " = tdsl_g_v[tdsl_g_l];\n");
    g->depth--;
    buf_indent(g->b, g->depth);
    buf_puts(g->b, "}\n");
  }
  g->lane = false;
}

// Whether every element index ix can give is a multiple of nbytes in bytes (storages and
// LArg.at are 64-byte aligned).
// In uint64_t: a huge coefficient wraps, and nbytes (a power of two) divides the wrapped
// product exactly when it divides the true one.
static bool aligned(const LIndex *ix, int64_t es, int64_t nbytes) {
  uint64_t n = (uint64_t)nbytes;
  if (ix->dyn || (uint64_t)ix->base * (uint64_t)es % n)
    return false;
  for (int t = 0; t < ix->nterms; t++)
    if ((uint64_t)ix->coef[t] * (uint64_t)es % n)
      return false;
  return true;
}

// A vector store of a 64-byte line past the caches: the value in a lane array, moved
// into registers of the target's width and stored with MOVNTDQ (one 64-byte store, two
// of 32 or four of 16 bytes back to back, which fill the line in one write-combining
// buffer); a plain lane loop where the target has no such store.
static const char *const stream_insn[][4] = {
    {"#if defined(__AVX512F__)\n", "__m512i", "_mm512_stream_si512", "1"},
    {"#elif defined(__AVX__)\n", "__m256i", "_mm256_stream_si256", "2"},
    {"#elif defined(__SSE2__)\n", "__m128i", "_mm_stream_si128", "4"},
};

// A vector store: one helper call in a dialect with vector types, else a lane loop.
static void vec_store(CExprGen *g, const LStmt *s) {
  if (!cexpr_vec(g, s->val->lanes)) {
    lane_stmt(g, s);
    return;
  }
  const LExpr *val = s->val;
  buf_indent(g->b, g->depth);
  buf_printf(g->b, "tdsl_g_st_%s(", cexpr_vec_type(g, val->dt, val->lanes) + strlen("tdsl_g_"));
  elem_addr(g, s->buf, &s->idx);
  buf_puts(g->b, ", ");
  cexpr_expr(g, val);  // a vector store's buffer has the value's dtype (or bits): no conversion
  buf_puts(g->b, ");\n");
}

static void stream_store(CExprGen *g, const LStmt *s, int nbytes) {
  TD_ASSERT(nbytes == 64);
  const LExpr *val = s->val;
  g->pr->single[H_STREAM] = true;
  g->streamed = true;
  for (size_t k = 0; k < sizeof stream_insn / sizeof *stream_insn; k++) {
    const char *const *in = stream_insn[k];
    int parts = in[3][0] - '0', part_bytes = nbytes / parts;
    buf_puts(g->b, in[0]);
    buf_indent(g->b, g->depth);
    buf_puts(g->b, "{\n");
    g->depth++;
    const char *src;
    if (val->kind == LX_LOCAL) {
      src = g->lname[val->local];
      if (cexpr_vec(g, val->lanes))
        src = arena_printf(&g->cx->arena, "&%s", src);
    } else if (cexpr_vec(g, val->lanes)) {
      buf_indent(g->b, g->depth);
      buf_printf(g->b, "%s tdsl_g_v = ", cexpr_vec_type(g, val->dt, val->lanes));
      cexpr_expr(g, val);
      buf_puts(g->b, ";\n");
      src = "&tdsl_g_v";
    } else {
      buf_indent(g->b, g->depth);
      buf_printf(g->b, "%s tdsl_g_v[%d];\n", cexpr_type(val->dt), val->lanes);
      open_lanes(g, val->lanes);
      g->lane = true;
      buf_puts(g->b, "tdsl_g_v[tdsl_g_l] = ");
      cexpr_expr(g, val);
      buf_puts(g->b, ";\n");
      g->lane = false;
      src = "tdsl_g_v";
    }
    buf_indent(g->b, g->depth);
    buf_printf(g->b, "%s tdsl_g_s[%d];\n", in[1], parts);
    buf_indent(g->b, g->depth);
    buf_printf(g->b, "memcpy(tdsl_g_s, %s, %d);\n", src, nbytes);
    for (int p = 0; p < parts; p++) {
      buf_indent(g->b, g->depth);
      buf_printf(g->b, "%s((%s *)((char *)&b%d[", in[2], in[1], s->buf);
      cexpr_index(g, &s->idx);
      buf_printf(g->b, "] + %d), tdsl_g_s[%d]);\n", p * part_bytes, p);
    }
    g->depth--;
    buf_indent(g->b, g->depth);
    buf_puts(g->b, "}\n");
  }
  buf_puts(g->b, "#else\n");
  vec_store(g, s);
  buf_puts(g->b, "#endif\n");
}

// A scalar loop that writes consecutive elements of a streamed result (its store's
// index has the loop's variable with coefficient 1, and starts a 64-byte line wherever
// that variable is a multiple of a line's elements; the rest of its body lets): in
// strips of one line, each computed into a lane array that gcc keeps in a register and
// stored past the caches as stream_store does, then the elements left one by one. gcc
// 12 has no non-temporal store of its own for the loops it vectorizes (nor for
// OpenMP's nontemporal clause), and a 64 MiB result written through the caches first
// reads every line: relu(x*2+1)*sigmoid(x) and an outer sum of 4096^2 f32 took 1.1-1.3x
// as long (bench/GAPS.md). False: not such a loop (the caller prints it).
bool cexpr_stream_loop(CExprGen *g, const LStmt *s) {
  const LStmt *st = NULL;
  if (s->n || s->parallel)
    return false;
  for (int i = 0; i < s->body.len; i++) {
    const LStmt *b = s->body.data[i];
    if (b->kind == LS_LET && b->val->lanes == 1)
      continue;
    if (b->kind != LS_STORE || st || b->val->lanes != 1 || !g->k->args.data[b->buf].stream)
      return false;
    st = b;
  }
  if (!st)
    return false;
  DType bt = cexpr_arg_dtype(g, st->buf);
  int64_t es = (int64_t)dtype_size(bt), L = 64 / es;
  LIndex at = st->idx;  // the index at the strip's start: the variable a multiple of L
  int term = -1;
  for (int t = 0; t < at.nterms; t++)
    if (at.var[t] == s->var)
      term = t;
  if (term < 0 || at.coef[term] != 1 || s->extent < L)
    return false;
  at.coef[term] = L;
  if (!aligned(&at, es, 64))
    return false;
  int v = s->var, sv = g->k->nvars + s->var;  // the strip's variable: a name no loop has
  at.var[term] = sv;
  at.coef[term] = 1;
  int64_t full = s->extent / L * L;
  g->pr->single[H_STREAM] = true;
  g->streamed = true;
  buf_indent(g->b, g->depth);
  buf_printf(g->b, "for (int64_t v%d = 0; v%d < %" PRId64 "; v%d += %" PRId64 ") {\n", sv, sv, full, sv, L);
  g->depth++;
  buf_indent(g->b, g->depth);
  buf_printf(g->b, "%s tdsl_g_w[%" PRId64 "];\n", cexpr_storage_type(bt), L);
  buf_indent(g->b, g->depth);
  buf_printf(g->b, "for (int64_t v%d = v%d; v%d < v%d + %" PRId64 "; v%d++) {\n", v, sv, v, sv, L, v);
  g->depth++;
  for (int i = 0; i < s->body.len; i++) {
    const LStmt *b = s->body.data[i];
    if (b != st) {
      cexpr_let(g, b);
      continue;
    }
    buf_indent(g->b, g->depth);
    buf_printf(g->b, "tdsl_g_w[v%d - v%d] = ", v, sv);
    store_value(g, st->val->dt, bt, st->val);
    buf_puts(g->b, ";\n");
  }
  g->arg_used[st->buf] = true;
  cexpr_close(g);
  for (size_t k = 0; k < sizeof stream_insn / sizeof *stream_insn; k++) {
    const char *const *in = stream_insn[k];
    int parts = in[3][0] - '0';
    buf_puts(g->b, in[0]);
    buf_indent(g->b, g->depth);
    buf_printf(g->b, "{\n");
    buf_indent(g->b, g->depth + 1);
    buf_printf(g->b, "%s tdsl_g_s[%d];\n", in[1], parts);
    buf_indent(g->b, g->depth + 1);
    buf_puts(g->b, "memcpy(tdsl_g_s, tdsl_g_w, 64);\n");
    for (int q = 0; q < parts; q++) {
      buf_indent(g->b, g->depth + 1);
      buf_printf(g->b, "%s((%s *)((char *)&b%d[", in[2], in[1], st->buf);
      cexpr_index(g, &at);
      buf_printf(g->b, "] + %d), tdsl_g_s[%d]);\n", q * (64 / parts), q);
    }
    buf_indent(g->b, g->depth);
    buf_puts(g->b, "}\n");
  }
  buf_puts(g->b, "#else\n");
  buf_indent(g->b, g->depth);
  buf_printf(g->b, "memcpy(&b%d[", st->buf);
  cexpr_index(g, &at);
  buf_puts(g->b, "], tdsl_g_w, 64);\n#endif\n");
  cexpr_close(g);
  if (full == s->extent)
    return true;
  buf_indent(g->b, g->depth);  // the elements after the last strip, one by one
  buf_printf(g->b, "for (int64_t v%d = %" PRId64 "; v%d < %" PRId64 "; v%d++) {\n", v, full, v, s->extent, v);
  g->depth++;
  for (int i = 0; i < s->body.len; i++) {
    const LStmt *b = s->body.data[i];
    if (b == st)
      cexpr_store(g, b);
    else
      cexpr_let(g, b);
  }
  cexpr_close(g);
  return true;
}

void cexpr_fence_streams(CExprGen *g) {
  buf_puts(g->b, "#if defined(__SSE2__)\n");
  buf_indent(g->b, g->depth);
  buf_puts(g->b, "_mm_sfence();\n#endif\n");
}

void cexpr_store(CExprGen *g, const LStmt *s) {
  DType bt = cexpr_arg_dtype(g, s->buf);
  g->arg_used[s->buf] = true;
  TD_ASSERT(g->k->args.data[s->buf].written);
  if (s->val->lanes > 1) {
    TD_ASSERT(bt == s->val->dt || lx_bits_dtype(bt) == s->val->dt);
    int nbytes = s->val->lanes * dtype_size(s->val->dt);
    if (g->k->args.data[s->buf].stream && nbytes == 64 &&
        aligned(&s->idx, dtype_size(bt), nbytes))
      stream_store(g, s, nbytes);
    else
      vec_store(g, s);
    return;
  }
  buf_indent(g->b, g->depth);
  buf_printf(g->b, "b%d[", s->buf);
  cexpr_index(g, &s->idx);
  buf_puts(g->b, "] = ");
  store_value(g, s->val->dt, bt, s->val);
  buf_puts(g->b, ";\n");
}

// local = shuffle(a, b, sel) in a dialect with vector types: tdsl_g_shuffle where the
// compiler has it, else a loop over the lanes through a temporary (the local may be a or b).
static void vec_shuffle_let(CExprGen *g, const LStmt *s) {
  const LExpr *v = s->val;
  int n = v->a->lanes;
  const char *t = g->lname[s->local], *a = g->lname[v->a->local], *b = g->lname[v->b->local];
  const char *vt = cexpr_vec_type(g, v->dt, v->lanes);
  buf_puts(g->b, "#ifdef tdsl_g_shuffle\n");
  buf_indent(g->b, g->depth);
  buf_printf(g->b, "%s = tdsl_g_shuffle(%s, %s", t, a, b);
  for (int l = 0; l < v->lanes; l++)
    buf_printf(g->b, ", %d", v->sel[l]);
  buf_puts(g->b, ");\n#else\n");
  buf_indent(g->b, g->depth);
  buf_puts(g->b, "{\n");
  buf_indent(g->b, g->depth + 1);
  buf_printf(g->b, "static const int tdsl_g_s[%d] = {", v->lanes);
  for (int l = 0; l < v->lanes; l++)
    buf_printf(g->b, "%s%d", l ? ", " : "", v->sel[l]);
  buf_puts(g->b, "};\n");
  buf_indent(g->b, g->depth + 1);
  buf_printf(g->b, "%s tdsl_g_v;\n", vt);
  buf_indent(g->b, g->depth + 1);
  buf_printf(g->b, "for (int tdsl_g_l = 0; tdsl_g_l < %d; tdsl_g_l++)\n", v->lanes);
  buf_indent(g->b, g->depth + 2);
  buf_printf(g->b, "tdsl_g_lane(tdsl_g_v, tdsl_g_l) = tdsl_g_s[tdsl_g_l] < %d ? tdsl_g_lane(%s, tdsl_g_s[tdsl_g_l]) "
             ": tdsl_g_lane(%s, tdsl_g_s[tdsl_g_l] - %d);\n", n, a, b, n);
  buf_indent(g->b, g->depth + 1);
  buf_printf(g->b, "%s = tdsl_g_v;\n", t);
  buf_indent(g->b, g->depth);
  buf_puts(g->b, "}\n#endif\n");
}

// local = shuffle(a, b, sel) of two vector locals: through GNU C vectors where the
// compiler has them (tdsl_g_shuffle: one or two shuffle instructions, the arrays kept
// in registers), else the lane loop.
static void shuffle_let(CExprGen *g, const LStmt *s) {
  const LExpr *v = s->val;
  TD_ASSERT(v->a->kind == LX_LOCAL && v->b->kind == LX_LOCAL);
  if (cexpr_vec(g, v->lanes)) {
    vec_shuffle_let(g, s);
    return;
  }
  g->pr->single[H_SHUFFLE] = true;
  int n = v->lanes, nbytes = n * dtype_size(v->dt), ibytes = v->a->lanes * dtype_size(v->dt);
  const char *t = g->lname[s->local], *a = g->lname[v->a->local], *b = g->lname[v->b->local];
  buf_puts(g->b, "#ifdef tdsl_g_shuffle\n");
  buf_indent(g->b, g->depth);
  buf_puts(g->b, "{\n");
  buf_indent(g->b, g->depth + 1);
  buf_printf(g->b, "typedef %s tdsl_g_vec __attribute__((vector_size(%d)));\n", cexpr_type(v->dt), ibytes);
  buf_indent(g->b, g->depth + 1);
  buf_printf(g->b, "typedef %s tdsl_g_res __attribute__((vector_size(%d)));\n", cexpr_type(v->dt), nbytes);
  buf_indent(g->b, g->depth + 1);
  buf_printf(g->b, "tdsl_g_vec tdsl_g_a, tdsl_g_b;\n");
  buf_indent(g->b, g->depth + 1);
  buf_printf(g->b, "memcpy(&tdsl_g_a, %s, %d);\n", a, ibytes);
  buf_indent(g->b, g->depth + 1);
  buf_printf(g->b, "memcpy(&tdsl_g_b, %s, %d);\n", b, ibytes);
  buf_indent(g->b, g->depth + 1);
  buf_puts(g->b, "tdsl_g_res tdsl_g_r = tdsl_g_shuffle(tdsl_g_a, tdsl_g_b");
  for (int l = 0; l < n; l++)
    buf_printf(g->b, ", %d", v->sel[l]);
  buf_puts(g->b, ");\n");
  buf_indent(g->b, g->depth + 1);
  buf_printf(g->b, "memcpy(%s, &tdsl_g_r, %d);\n", t, nbytes);
  buf_indent(g->b, g->depth);
  buf_puts(g->b, "}\n#else\n");
  lane_stmt(g, s);
  buf_puts(g->b, "#endif\n");
}

// A let declares its local where it is not in scope yet (a loop body lets it again
// each iteration); a local never read is voided so -Wall stays quiet.
void cexpr_let(CExprGen *g, const LStmt *s) {
  TD_ASSERT(s->local >= 0 && s->local < g->k->locals.len);
  DType lt = g->k->locals.data[s->local];
  int lanes = s->val->lanes;
  TD_ASSERT(lanes == g->lanes[s->local]);
  bool declare = s->kind == LS_LET && g->decl_depth[s->local] < 0;
  if (declare)
    g->decl_depth[s->local] = g->depth;
  if (cexpr_vec(g, lanes)) {  // a value of a vector type
    TD_ASSERT(lt == s->val->dt);
    const char *vt = cexpr_vec_type(g, lt, lanes);
    if (s->val->kind == LX_SHUFFLE) {
      if (declare) {
        buf_indent(g->b, g->depth);
        buf_printf(g->b, "%s %s;\n", vt, g->lname[s->local]);
      }
      shuffle_let(g, s);
    } else {
      buf_indent(g->b, g->depth);
      buf_printf(g->b, "%s%s%s = ", declare ? vt : "", declare ? " " : "", g->lname[s->local]);
      cexpr_expr(g, s->val);
      buf_puts(g->b, ";\n");
    }
  } else if (lanes > 1) {  // a vector local is an array, its value a lane loop
    TD_ASSERT(lt == s->val->dt);
    if (declare) {
      buf_indent(g->b, g->depth);
      buf_printf(g->b, "%s %s[%d];\n", cexpr_type(lt), g->lname[s->local], lanes);
    }
    if (s->val->kind == LX_SHUFFLE)
      shuffle_let(g, s);
    else
      lane_stmt(g, s);
  } else {
    buf_indent(g->b, g->depth);
    if (declare)
      buf_printf(g->b, "%s ", cexpr_type(lt));
    buf_printf(g->b, "%s = ", g->lname[s->local]);
    const char *pre, *post;
    cast_text(g, s->val->dt, lt, &pre, &post);
    around(g, pre, s->val, post);
    buf_puts(g->b, ";\n");
  }
  if (declare && !g->local_read[s->local]) {
    buf_indent(g->b, g->depth);
    buf_printf(g->b, "(void)%s;\n", g->lname[s->local]);
  }
}

void cexpr_open_loop(CExprGen *g, const LStmt *s) {
  buf_indent(g->b, g->depth);
  if (s->n) {  // a function's loop of n iterations
    buf_printf(g->b, "for (int64_t v%d = 0; v%d < ", s->var, s->var);
    cexpr_expr(g, s->n);
    buf_printf(g->b, "; v%d++) {\n", s->var);
  } else {
    buf_printf(g->b, "for (int64_t v%d = 0; v%d < %" PRId64 "; v%d++) {\n", s->var, s->var, s->extent, s->var);
  }
  g->depth++;
}

// The text from b->data[at] on without its outer parentheses, when one pair encloses
// all of it: "(a != 0)" -> "a != 0", "(a) + (b)" kept.
static void unwrap_parens(Buf *b, size_t at) {
  size_t n = b->len - at;
  if (n < 2 || b->data[at] != '(' || b->data[b->len - 1] != ')')
    return;
  int depth = 0;
  for (size_t i = at; i < b->len - 1; i++) {
    depth += b->data[i] == '(' ? 1 : b->data[i] == ')' ? -1 : 0;
    if (depth == 0)
      return;  // the first '(' closes before the end
  }
  memmove(b->data + at, b->data + at + 1, n - 2);
  b->len -= 2;
  b->data[b->len] = '\0';
}

void cexpr_open_if(CExprGen *g, const LExpr *cond) {
  buf_indent(g->b, g->depth);
  buf_puts(g->b, "if (");
  size_t at = g->b->len;
  cexpr_expr(g, cond);
  unwrap_parens(g->b, at);
  buf_puts(g->b, ") {\n");
  g->depth++;
}

void cexpr_close(CExprGen *g) {
  g->depth--;
  for (int i = 0; i < g->k->locals.len; i++) {
    if (g->decl_depth[i] > g->depth)
      g->decl_depth[i] = -1;
  }
  buf_indent(g->b, g->depth);
  buf_puts(g->b, "}\n");
}
