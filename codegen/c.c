// codegen/c.c: the C backend. Prints loop IR (ir/loop.h) as one C11 translation unit
// that includes only tdsl.h and libc/libm headers and compiles with
// `cc -std=c11 -O2 -fopenmp -Wall -Werror` (and without -fopenmp: every pragma sits
// under #ifdef _OPENMP). Layout of the output:
//   1. a prelude of `static inline` helpers, only those the programs use, each the
//      exact meaning ir/loop.h gives an op (wrapping int arithmetic done in unsigned,
//      Python's floor division and modulo, PyTorch's div_floor, NaN-propagating
//      max/min, float->int casts without UB, f16/bf16 by bit arithmetic);
//   2. per function, its kernels `static int tdsl_g_<fn>_k<N>(raw restrict pointers)`
//      with loops printed in IR order, then the entry with the ABI of DESIGN.md,
//      whose argument checks, copies and outputs live in runtime/entry.c.
// Values of f16/bf16 are carried as float; arithmetic typed f16/bf16 (which the
// kernel builder never makes) would be done in float and rounded.
// Errors: a kernel records the first failure in a tdsl_g_err; inside a parallel loop
// "first" means the lowest iteration of that loop, so the message does not depend on
// thread timing. Every generated name begins with tdsl_g_ (emit.c).
#include "codegen/codegen.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

// ---- the prelude: helper groups, printed per compute type ----
typedef enum {
  G_INT,       // wrapping add sub mul neg abs square (ints)
  G_FLOAT,     // square sigmoid silu gelu (floats)
  G_MAXMIN,    // maximum, minimum
  G_SIGN,
  G_RELU,
  G_FLOORDIV,  // floor_divide
  G_REM,       // remainder
  G_POW,       // ints (floats use libm pow)
  G_SEL,       // a select whose arms may raise: both evaluated
  G_F2I,       // float -> int cast, per target int type
  G_COUNT
} Group;

typedef enum { H_ERR, H_F16, H_BF16, H_INDEX, H_COUNT } Single;

typedef struct Prelude {
  bool group[G_COUNT][DT_COUNT];
  bool single[H_COUNT];
} Prelude;

// Type substitutions: $T the C type, $U its unsigned twin, $S the suffix, $F the libm
// suffix, $L the literal suffix, $M the minimum.
typedef struct TypeText {
  const char *T, *U, *S, *F, *L, *M;
} TypeText;

static const TypeText type_text[DT_COUNT] = {
    [DT_BOOL] = {"bool", "bool", "bool", "", "", "false"},
    [DT_I32] = {"int32_t", "uint32_t", "i32", "", "", "INT32_MIN"},
    [DT_I64] = {"int64_t", "uint64_t", "i64", "", "", "INT64_MIN"},
    [DT_F32] = {"float", "uint32_t", "f32", "f", "f", "-INFINITY"},
    [DT_F64] = {"double", "uint64_t", "f64", "", "", "-INFINITY"},
};

static void templ(Buf *b, const char *text, DType dt) {
  const TypeText *t = &type_text[dt];
  for (const char *p = text; *p; p++) {
    if (*p != '$') {
      char c[2] = {*p, 0};
      buf_puts(b, c);
      continue;
    }
    p++;
    const char *s = *p == 'T' ? t->T : *p == 'U' ? t->U : *p == 'S' ? t->S : *p == 'F' ? t->F : *p == 'L' ? t->L : t->M;
    buf_puts(b, s);
  }
}

static const char *const err_text =
    "// The first failure of a kernel: error k with value v. Inside a parallel loop the\n"
    "// lowest iteration i wins (sequential code passes INT64_MAX: the first call wins);\n"
    "// failures recorded before the loop started (final) always win.\n"
    "typedef struct tdsl_g_err {\n"
    "  int k;\n"
    "  bool final;\n"
    "  long long v;\n"
    "  int64_t i;\n"
    "} tdsl_g_err;\n"
    "static inline void tdsl_g_raise(tdsl_g_err *e, int k, long long v, int64_t i) {\n"
    "  if (k < 0)\n"
    "    return;\n"
    "#ifdef _OPENMP\n"
    "#pragma omp critical(tdsl_g_err)\n"
    "#endif\n"
    "  if (e->k < 0 || (!e->final && i < e->i)) {\n"
    "    e->k = k;\n"
    "    e->v = v;\n"
    "    e->i = i;\n"
    "  }\n"
    "}\n"
    "static inline void tdsl_g_seal(tdsl_g_err *e) { e->final = e->k >= 0; }\n";

static const char *const f16_text =
    "// f16 <-> f32 by bit arithmetic, rounding to nearest even.\n"
    "static inline float tdsl_g_h2f(uint16_t h) {\n"
    "  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;\n"
    "  union { uint32_t u; float f; } c;\n"
    "  if (e == 0x1f)\n"
    "    c.u = sign | 0x7f800000u | (m << 13);\n"
    "  else if (e != 0)\n"
    "    c.u = sign | ((e + 112) << 23) | (m << 13);\n"
    "  else {\n"
    "    float v = (float)m * 0x1p-24f;  // zero or subnormal: exact\n"
    "    return sign ? -v : v;\n"
    "  }\n"
    "  return c.f;\n"
    "}\n"
    "static inline uint16_t tdsl_g_f2h(float f) {\n"
    "  union { float f; uint32_t u; } c = {f};\n"
    "  uint32_t sign = (c.u >> 16) & 0x8000u, a = c.u & 0x7fffffffu;\n"
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
    "static inline float tdsl_g_round_f16(float f) { return tdsl_g_h2f(tdsl_g_f2h(f)); }\n";

static const char *const bf16_text =
    "// bf16 <-> f32: the high half of the f32 bits, rounding to nearest even.\n"
    "static inline float tdsl_g_bf2f(uint16_t h) {\n"
    "  union { uint32_t u; float f; } c = {(uint32_t)h << 16};\n"
    "  return c.f;\n"
    "}\n"
    "static inline uint16_t tdsl_g_f2bf(float f) {\n"
    "  union { float f; uint32_t u; } c = {f};\n"
    "  if ((c.u & 0x7fffffffu) > 0x7f800000u)\n"
    "    return (uint16_t)((c.u >> 16) | 0x40u);  // nan stays a quiet nan\n"
    "  return (uint16_t)((c.u + 0x7fffu + ((c.u >> 16) & 1u)) >> 16);\n"
    "}\n"
    "static inline float tdsl_g_round_bf16(float f) { return tdsl_g_bf2f(tdsl_g_f2bf(f)); }\n";

static const char *const index_text =
    "// An index into a dim of size n, valid in [lo, n): lo = -n counts negative ones from the end.\n"
    "static inline int64_t tdsl_g_index(int64_t a, int64_t lo, int64_t n, tdsl_g_err *e, int k, int64_t i) {\n"
    "  if (a >= lo && a < n)\n"
    "    return a < 0 ? a + n : a;\n"
    "  tdsl_g_raise(e, k, a, i);\n"
    "  return 0;\n"
    "}\n";

static const char *const int_text =
    "static inline $T tdsl_g_add_$S($T a, $T b) { return ($T)(($U)a + ($U)b); }\n"
    "static inline $T tdsl_g_sub_$S($T a, $T b) { return ($T)(($U)a - ($U)b); }\n"
    "static inline $T tdsl_g_mul_$S($T a, $T b) { return ($T)(($U)a * ($U)b); }\n"
    "static inline $T tdsl_g_neg_$S($T a) { return ($T)(($U)0 - ($U)a); }\n"
    "static inline $T tdsl_g_abs_$S($T a) { return a < 0 ? tdsl_g_neg_$S(a) : a; }\n"
    "static inline $T tdsl_g_square_$S($T a) { return tdsl_g_mul_$S(a, a); }\n";

static const char *const float_text =
    "static inline $T tdsl_g_square_$S($T a) { return a * a; }\n"
    "static inline $T tdsl_g_sigmoid_$S($T a) { return 1.0$L / (1.0$L + exp$F(-a)); }\n"
    "static inline $T tdsl_g_silu_$S($T a) { return a / (1.0$L + exp$F(-a)); }\n"
    "static inline $T tdsl_g_gelu_$S($T a) { return a * 0.5$L * (1.0$L + erf$F(a * 0.70710678118654752440$L)); }\n";

static const char *const maxmin_float_text =
    "static inline $T tdsl_g_max_$S($T a, $T b) { return a != a ? a : b != b ? b : a < b ? b : a; }\n"
    "static inline $T tdsl_g_min_$S($T a, $T b) { return a != a ? a : b != b ? b : b < a ? b : a; }\n";
static const char *const maxmin_int_text =
    "static inline $T tdsl_g_max_$S($T a, $T b) { return a < b ? b : a; }\n"
    "static inline $T tdsl_g_min_$S($T a, $T b) { return b < a ? b : a; }\n";

static const char *const sign_float_text =
    "static inline $T tdsl_g_sign_$S($T a) { return a > 0 ? 1.0$L : a < 0 ? -1.0$L : 0.0$L; }\n";
static const char *const sign_int_text = "static inline $T tdsl_g_sign_$S($T a) { return ($T)((a > 0) - (a < 0)); }\n";

static const char *const relu_float_text =
    "static inline $T tdsl_g_relu_$S($T a) { return a > 0 ? a : a != a ? a : 0.0$L; }\n";
static const char *const relu_int_text = "static inline $T tdsl_g_relu_$S($T a) { return a > 0 ? a : 0; }\n";

static const char *const floordiv_int_text =
    "// Python's a // b; b == 0 raises error k; $M // -1 wraps.\n"
    "static inline $T tdsl_g_floordiv_$S($T a, $T b, tdsl_g_err *e, int k, int64_t i) {\n"
    "  if (b == 0) {\n"
    "    tdsl_g_raise(e, k, 0, i);\n"
    "    return 0;\n"
    "  }\n"
    "  if (b == -1)\n"
    "    return tdsl_g_neg_$S(a);\n"
    "  $T q = a / b;\n"
    "  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;\n"
    "}\n";
static const char *const floordiv_float_text =
    "// PyTorch's div_floor.\n"
    "static inline $T tdsl_g_floordiv_$S($T a, $T b) {\n"
    "  if (b == 0)\n"
    "    return a / b;\n"
    "  $T mod = fmod$F(a, b), div = (a - mod) / b;\n"
    "  if (mod != 0 && (b < 0) != (mod < 0))\n"
    "    div -= 1;\n"
    "  if (div == 0)\n"
    "    return copysign$F(0, a / b);\n"
    "  $T fl = floor$F(div);\n"
    "  return div - fl > 0.5$L ? fl + 1 : fl;\n"
    "}\n";

static const char *const rem_int_text =
    "// Python's a % b (the sign of b); b == 0 raises error k; $M % -1 is 0.\n"
    "static inline $T tdsl_g_rem_$S($T a, $T b, tdsl_g_err *e, int k, int64_t i) {\n"
    "  if (b == 0) {\n"
    "    tdsl_g_raise(e, k, 0, i);\n"
    "    return 0;\n"
    "  }\n"
    "  if (b == -1)\n"
    "    return 0;\n"
    "  $T r = a % b;\n"
    "  return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;\n"
    "}\n";
static const char *const rem_float_text =
    "static inline $T tdsl_g_rem_$S($T a, $T b) {\n"
    "  $T r = fmod$F(a, b);\n"
    "  return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;\n"
    "}\n";

static const char *const pow_int_text =
    "// The exact power, wrapping; b < 0 raises error k (without one: PyTorch's answer).\n"
    "static inline $T tdsl_g_pow_$S($T a, $T b, tdsl_g_err *e, int k, int64_t i) {\n"
    "  if (b < 0) {\n"
    "    if (k >= 0) {\n"
    "      tdsl_g_raise(e, k, b, i);\n"
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

static const char *const sel_text = "static inline $T tdsl_g_sel_$S(bool c, $T a, $T b) { return c ? a : b; }\n";

static const char *const f2i_text[DT_COUNT] = {
    [DT_I32] = "// Truncation toward zero; nan or out of range gives the minimum (x86's answer).\n"
               "static inline int32_t tdsl_g_f2i32(double x) {\n"
               "  return x > -2147483649.0 && x < 2147483648.0 ? (int32_t)x : INT32_MIN;\n"
               "}\n",
    [DT_I64] = "static inline int64_t tdsl_g_f2i64(double x) {\n"
               "  return x >= -9223372036854775808.0 && x < 9223372036854775808.0 ? (int64_t)x : INT64_MIN;\n"
               "}\n",
};

static void emit_prelude(Buf *b, Prelude *pr) {
  // dependencies
  for (int d = 0; d < DT_COUNT; d++) {
    if (dtype_is_int((DType)d) && (pr->group[G_FLOORDIV][d] || pr->group[G_REM][d] || pr->group[G_POW][d])) {
      pr->single[H_ERR] = true;
      pr->group[G_INT][d] = true;
    }
  }
  if (pr->single[H_INDEX])
    pr->single[H_ERR] = true;
  buf_puts(b, "#include <math.h>\n#include <stdbool.h>\n#include <stddef.h>\n#include <stdint.h>\n\n"
              "#include \"tdsl.h\"\n\n");
  if (pr->single[H_ERR])
    buf_puts(b, err_text);
  if (pr->single[H_F16])
    buf_puts(b, f16_text);
  if (pr->single[H_BF16])
    buf_puts(b, bf16_text);
  if (pr->single[H_INDEX])
    buf_puts(b, index_text);
  bool any = false;
  for (int h = 0; h < H_COUNT; h++)
    any |= pr->single[h];
  for (int g = 0; g < G_COUNT; g++) {
    for (int d = 0; d < DT_COUNT; d++) {
      if (!pr->group[g][d])
        continue;
      any = true;
      DType dt = (DType)d;
      bool fl = dt == DT_F32 || dt == DT_F64;
      const char *t = NULL;
      switch ((Group)g) {
      case G_INT: t = int_text; break;
      case G_FLOAT: t = float_text; break;
      case G_MAXMIN: t = fl ? maxmin_float_text : maxmin_int_text; break;
      case G_SIGN: t = fl ? sign_float_text : sign_int_text; break;
      case G_RELU: t = fl ? relu_float_text : relu_int_text; break;
      case G_FLOORDIV: t = fl ? floordiv_float_text : floordiv_int_text; break;
      case G_REM: t = fl ? rem_float_text : rem_int_text; break;
      case G_POW: t = pow_int_text; break;
      case G_SEL: t = sel_text; break;
      case G_F2I: t = f2i_text[d]; break;
      case G_COUNT: td_unreachable();
      }
      TD_ASSERT(t);
      templ(b, t, dt);
    }
  }
  if (any)
    buf_puts(b, "\n");
}

// ---- types ----
static const char *ctype(DType dt) {
  switch (dt) {
  case DT_BOOL: return "bool";
  case DT_I32: return "int32_t";
  case DT_I64: return "int64_t";
  case DT_F16:
  case DT_BF16:
  case DT_F32: return "float";
  case DT_F64: return "double";
  case DT_COUNT: break;
  }
  td_unreachable();
}

static const char *storage_type(DType dt) {
  switch (dt) {
  case DT_BOOL: return "uint8_t";
  case DT_F16:
  case DT_BF16: return "uint16_t";
  default: return ctype(dt);
  }
}

static bool is_half(DType dt) { return dt == DT_F16 || dt == DT_BF16; }
// The type arithmetic of dt is done in: f16/bf16 compute in f32.
static DType compute_type(DType dt) { return is_half(dt) ? DT_F32 : dt; }

// ---- the kernel printer ----
typedef struct CG {
  Ctx *cx;
  Prelude *pr;
  const LProgram *p;
  const LKernel *k;
  Buf *b;
  int par_var;       // the loop variable of the enclosing parallel loop, -1 outside
  bool has_err;      // the kernel has a tdsl_g_err
  bool *arg_used;    // per kernel arg
  bool *local_read;  // per local
  int *decl_depth;   // per local: the block depth it was declared at, -1 if not in scope
  int depth;
} CG;

static DType arg_dtype(const CG *c, int arg) {
  TD_ASSERT(arg >= 0 && arg < c->k->args.len);
  return c->p->bufs.data[c->k->args.data[arg].buf].dtype;
}

// Whether e itself can raise one of the kernel's errors.
static bool raises_here(const LExpr *e) {
  if (e->err < 0)
    return false;
  if (e->kind == LX_CHECKED_INDEX)
    return true;
  return e->kind == LX_BINARY && dtype_is_int(e->dt) &&
         (e->op == OP_FLOOR_DIVIDE || e->op == OP_REMAINDER || e->op == OP_POW);
}

// Whether evaluating e can raise: such an operand must be evaluated even where C
// would skip it (?:, &&, ||).
static bool expr_raises(const LExpr *e) {
  if (!e)
    return false;
  if (raises_here(e) || (e->kind == LX_LOAD && expr_raises(e->idx.dyn)))
    return true;
  return expr_raises(e->a) || expr_raises(e->b) || expr_raises(e->c);
}

static void expr(CG *c, const LExpr *e);

// The three trailing arguments of a raising helper: the error record, the error
// index and the rank of the current iteration.
static void err_args(CG *c, int err) {
  if (err < 0 || !c->has_err) {
    buf_puts(c->b, "NULL, -1, 0");
    return;
  }
  TD_ASSERT(err < c->k->errors.len);
  if (c->par_var >= 0)
    buf_printf(c->b, "&err, %d, v%d", err, c->par_var);
  else
    buf_printf(c->b, "&err, %d, INT64_MAX", err);
}

static void dyn_index(void *ctx, Buf *b, const LExpr *e) {
  CG *c = ctx;
  TD_ASSERT(b == c->b);
  expr(c, e);
}

// The text around a value of dtype `from` that makes it a value of dtype `to`
// (ir/loop.h's LX_CAST): pre + value + post.
static void cast_text(CG *c, DType from, DType to, const char **pre, const char **post) {
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
    c->pr->single[to == DT_F16 ? H_F16 : H_BF16] = true;
    if (from == DT_F32 || is_half(from))
      *pre = r, *post = ")";
    else
      *pre = arena_printf(&c->cx->arena, "%s(float)(", r), *post = "))";  // via f32, as PyTorch does
    return;
  }
  if (tfl) {  // to f32 or f64
    if (to == DT_F32 && is_half(from))
      return;  // carried as f32 already
    *pre = to == DT_F32 ? "(float)(" : "(double)(", *post = ")";
    return;
  }
  // to an int
  if (ffl) {
    c->pr->group[G_F2I][to] = true;
    *pre = to == DT_I32 ? "tdsl_g_f2i32(" : "tdsl_g_f2i64(", *post = ")";
    return;
  }
  if (to == DT_I32 && from == DT_I64)
    *pre = "(int32_t)(uint32_t)(", *post = ")";  // wraps (gcc: modulo 2^32)
  else
    *pre = to == DT_I32 ? "(int32_t)(" : "(int64_t)(", *post = ")";
}

static void float_const(Buf *b, DType dt, double v) {
  bool f32 = dt != DT_F64;
  if (f32)
    v = (float)v;
  if (isnan(v)) {
    buf_puts(b, f32 ? "NAN" : "(double)NAN");
    return;
  }
  if (isinf(v)) {
    buf_puts(b, v > 0 ? (f32 ? "INFINITY" : "(double)INFINITY") : (f32 ? "(-INFINITY)" : "(-(double)INFINITY)"));
    return;
  }
  char s[64];
  snprintf(s, sizeof s, f32 ? "%.9g" : "%.17g", v);
  bool neg = s[0] == '-';
  if (neg)
    buf_puts(b, "(");
  buf_puts(b, s);
  if (!strpbrk(s, ".en"))
    buf_puts(b, ".0");
  if (f32)
    buf_puts(b, "f");
  if (neg)
    buf_puts(b, ")");
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

// f(a) or f(a, b), with the libm suffix of the compute type.
static void call1(CG *c, const char *fn, const LExpr *a) {
  buf_printf(c->b, "%s(", fn);
  expr(c, a);
  buf_puts(c->b, ")");
}

static void call2(CG *c, const char *fn, const LExpr *a, const LExpr *b, int err) {
  buf_printf(c->b, "%s(", fn);
  expr(c, a);
  buf_puts(c->b, ", ");
  expr(c, b);
  if (err != -2) {
    buf_puts(c->b, ", ");
    err_args(c, err);
  }
  buf_puts(c->b, ")");
}

static void infix(CG *c, const char *op, const LExpr *a, const LExpr *b) {
  buf_puts(c->b, "(");
  expr(c, a);
  buf_printf(c->b, " %s ", op);
  expr(c, b);
  buf_puts(c->b, ")");
}

static const char *helper(CG *c, Group g, const char *name, DType dt) {
  c->pr->group[g][dt] = true;
  return arena_printf(&c->cx->arena, "tdsl_g_%s_%s", name, type_text[dt].S);
}

static const char *libm(CG *c, const char *name, DType dt) {
  return arena_printf(&c->cx->arena, "%s%s", name, dt == DT_F32 ? "f" : "");
}

static TD_NORETURN void unsupported(const LExpr *e, DType dt) {
  td_internal_error(__FILE__, __LINE__, "c backend: op '%s' on %s", op_name(e->op), dtype_name(dt));
}

static void unary(CG *c, const LExpr *e) {
  DType dt = compute_type(e->dt);
  bool fl = dtype_is_float(dt), in = dtype_is_int(dt), bo = dt == DT_BOOL;
  const LExpr *a = e->a;
  switch (e->op) {
  case OP_NEG:
    if (fl)
      buf_puts(c->b, "(-"), expr(c, a), buf_puts(c->b, ")");
    else if (in)
      call1(c, helper(c, G_INT, "neg", dt), a);
    else
      expr(c, a);  // bool: PyTorch refuses; never built
    return;
  case OP_ABS:
    if (fl)
      call1(c, libm(c, "fabs", dt), a);
    else if (in)
      call1(c, helper(c, G_INT, "abs", dt), a);
    else
      expr(c, a);
    return;
  case OP_SIGN: call1(c, helper(c, G_SIGN, "sign", dt), a); return;
  case OP_RELU: call1(c, helper(c, G_RELU, "relu", dt), a); return;
  case OP_SQUARE:
    if (bo)
      expr(c, a);
    else
      call1(c, helper(c, fl ? G_FLOAT : G_INT, "square", dt), a);
    return;
  case OP_BITWISE_NOT:
    if (bo)
      buf_puts(c->b, "(!"), expr(c, a), buf_puts(c->b, ")");
    else if (in)
      buf_printf(c->b, "(%s)(~", ctype(dt)), expr(c, a), buf_puts(c->b, ")");
    else
      unsupported(e, dt);
    return;
  case OP_LOGICAL_NOT:
    buf_puts(c->b, "(!"), expr(c, a), buf_puts(c->b, ")");
    return;
  case OP_FLOOR:
  case OP_CEIL:
  case OP_ROUND:
    if (!fl) {
      expr(c, a);  // integral already
      return;
    }
    call1(c, libm(c, e->op == OP_FLOOR ? "floor" : e->op == OP_CEIL ? "ceil" : "nearbyint", dt), a);
    return;
  default: break;
  }
  if (!fl)
    unsupported(e, dt);
  const char *one = dt == DT_F32 ? "1.0f" : "1.0";
  switch (e->op) {
  case OP_EXP: call1(c, libm(c, "exp", dt), a); return;
  case OP_LOG: call1(c, libm(c, "log", dt), a); return;
  case OP_LOG2: call1(c, libm(c, "log2", dt), a); return;
  case OP_EXP2: call1(c, libm(c, "exp2", dt), a); return;
  case OP_SQRT: call1(c, libm(c, "sqrt", dt), a); return;
  case OP_RSQRT: buf_printf(c->b, "(%s / ", one), call1(c, libm(c, "sqrt", dt), a), buf_puts(c->b, ")"); return;
  case OP_RECIPROCAL: buf_printf(c->b, "(%s / ", one), expr(c, a), buf_puts(c->b, ")"); return;
  case OP_SIN: call1(c, libm(c, "sin", dt), a); return;
  case OP_COS: call1(c, libm(c, "cos", dt), a); return;
  case OP_TAN: call1(c, libm(c, "tan", dt), a); return;
  case OP_TANH: call1(c, libm(c, "tanh", dt), a); return;
  case OP_ERF: call1(c, libm(c, "erf", dt), a); return;
  case OP_SIGMOID: call1(c, helper(c, G_FLOAT, "sigmoid", dt), a); return;
  case OP_SILU: call1(c, helper(c, G_FLOAT, "silu", dt), a); return;
  case OP_GELU: call1(c, helper(c, G_FLOAT, "gelu", dt), a); return;
  default: unsupported(e, dt);
  }
}

static void binary(CG *c, const LExpr *e) {
  const LExpr *a = e->a, *b = e->b;
  bool cmp = e->op == OP_EQ || e->op == OP_NE || e->op == OP_LT || e->op == OP_LE || e->op == OP_GT ||
             e->op == OP_GE;
  if (cmp) {
    static const char *const sym[] = {"==", "!=", "<", "<=", ">", ">="};
    infix(c, sym[e->op - OP_EQ], a, b);
    return;
  }
  DType dt = compute_type(e->dt);
  bool fl = dtype_is_float(dt), in = dtype_is_int(dt), bo = dt == DT_BOOL;
  bool safe = !expr_raises(b);  // && and || may skip b
  switch (e->op) {
  case OP_LOGICAL_AND: infix(c, safe ? "&&" : "&", a, b); return;
  case OP_LOGICAL_OR: infix(c, safe ? "||" : "|", a, b); return;
  case OP_ADD:
  case OP_SUB:
  case OP_MUL:
    if (fl)
      infix(c, e->op == OP_ADD ? "+" : e->op == OP_SUB ? "-" : "*", a, b);
    else if (in)
      call2(c, helper(c, G_INT, e->op == OP_ADD ? "add" : e->op == OP_SUB ? "sub" : "mul", dt), a, b, -2);
    else  // bool: add is or, mul is and (PyTorch); sub is refused
      infix(c, e->op == OP_ADD ? "|" : e->op == OP_SUB ? "^" : "&", a, b);
    return;
  case OP_DIV:
    if (!fl)
      unsupported(e, dt);
    infix(c, "/", a, b);
    return;
  case OP_FLOOR_DIVIDE:
    if (bo)
      unsupported(e, dt);
    call2(c, helper(c, G_FLOORDIV, "floordiv", dt), a, b, fl ? -2 : e->err);
    return;
  case OP_REMAINDER:
    if (bo)
      unsupported(e, dt);
    call2(c, helper(c, G_REM, "rem", dt), a, b, fl ? -2 : e->err);
    return;
  case OP_POW:
    if (fl)
      call2(c, libm(c, "pow", dt), a, b, -2);
    else if (in)
      call2(c, helper(c, G_POW, "pow", dt), a, b, e->err);
    else
      unsupported(e, dt);
    return;
  case OP_MAXIMUM:
  case OP_MINIMUM:
    call2(c, helper(c, G_MAXMIN, e->op == OP_MAXIMUM ? "max" : "min", dt), a, b, -2);
    return;
  case OP_ATAN2:
    if (!fl)
      unsupported(e, dt);
    call2(c, libm(c, "atan2", dt), a, b, -2);
    return;
  default: unsupported(e, dt);
  }
}

static void load(CG *c, const LExpr *e) {
  DType bt = arg_dtype(c, e->buf);
  c->arg_used[e->buf] = true;
  const char *pre, *post;
  cast_text(c, bt, e->dt, &pre, &post);
  buf_puts(c->b, pre);
  if (bt == DT_F16 || bt == DT_BF16) {
    c->pr->single[bt == DT_F16 ? H_F16 : H_BF16] = true;
    buf_puts(c->b, bt == DT_F16 ? "tdsl_g_h2f(" : "tdsl_g_bf2f(");
  } else if (bt == DT_BOOL) {
    buf_puts(c->b, "(");
  }
  buf_printf(c->b, "b%d[", e->buf);
  emit_index(c->b, &e->idx, dyn_index, c);
  buf_puts(c->b, "]");
  if (bt == DT_F16 || bt == DT_BF16)
    buf_puts(c->b, ")");
  else if (bt == DT_BOOL)
    buf_puts(c->b, " != 0)");
  buf_puts(c->b, post);
}

static void expr(CG *c, const LExpr *e) {
  switch (e->kind) {
  case LX_CONST:
    if (dtype_is_float(e->dt))
      float_const(c->b, e->dt, e->f);
    else
      int_const(c->b, e->dt, e->i);
    return;
  case LX_VAR: buf_printf(c->b, "v%d", e->var); return;
  case LX_LOCAL:
    TD_ASSERT(e->local >= 0 && e->local < c->k->locals.len);
    buf_printf(c->b, "t%d", e->local);
    return;
  case LX_LOAD: load(c, e); return;
  case LX_UNARY:
  case LX_BINARY: {
    // Arithmetic typed f16/bf16 is done in f32 and rounded (never built by kernel.c).
    bool round = is_half(e->dt);
    if (round) {
      c->pr->single[e->dt == DT_F16 ? H_F16 : H_BF16] = true;
      buf_puts(c->b, e->dt == DT_F16 ? "tdsl_g_round_f16(" : "tdsl_g_round_bf16(");
    }
    if (e->kind == LX_UNARY)
      unary(c, e);
    else
      binary(c, e);
    if (round)
      buf_puts(c->b, ")");
    return;
  }
  case LX_SELECT:
    if (expr_raises(e->b) || expr_raises(e->c)) {  // both arms are evaluated
      DType dt = compute_type(e->dt);
      buf_printf(c->b, "%s(", helper(c, G_SEL, "sel", dt));
      expr(c, e->a);
      buf_puts(c->b, ", ");
      expr(c, e->b);
      buf_puts(c->b, ", ");
      expr(c, e->c);
      buf_puts(c->b, ")");
    } else {
      buf_puts(c->b, "(");
      expr(c, e->a);
      buf_puts(c->b, " ? ");
      expr(c, e->b);
      buf_puts(c->b, " : ");
      expr(c, e->c);
      buf_puts(c->b, ")");
    }
    return;
  case LX_CAST: {
    const char *pre, *post;
    cast_text(c, e->a->dt, e->dt, &pre, &post);
    buf_puts(c->b, pre);
    expr(c, e->a);
    buf_puts(c->b, post);
    return;
  }
  case LX_BITCAST:  // a union pun: defined in C, folded to a register move
    buf_printf(c->b, "((union { %s a; %s r; }){.a = ", ctype(e->a->dt), ctype(e->dt));
    expr(c, e->a);
    buf_puts(c->b, "}).r");
    return;
  case LX_CHECKED_INDEX:
    c->pr->single[H_INDEX] = true;
    buf_puts(c->b, "tdsl_g_index(");
    expr(c, e->a);
    buf_printf(c->b, ", %" PRId64 ", %" PRId64 ", ", e->wrap ? -e->i : 0, e->i);
    if (e->err < 0 || !c->has_err)
      buf_puts(c->b, "NULL, -1, 0");
    else
      err_args(c, e->err);
    buf_puts(c->b, ")");
    return;
  case LX_COUNT: break;
  }
  td_unreachable();
}

// The value of dtype vt stored into a buffer of dtype bt.
static void store_value(CG *c, DType vt, DType bt, const LExpr *val) {
  const char *pre, *post;
  if (bt == DT_F16 || bt == DT_BF16) {
    c->pr->single[bt == DT_F16 ? H_F16 : H_BF16] = true;
    buf_puts(c->b, bt == DT_F16 ? "tdsl_g_f2h(" : "tdsl_g_f2bf(");
    if (val->kind == LX_CAST && val->dt == bt && val->a->dt == DT_F32)
      val = val->a, vt = DT_F32;  // f2h rounds as the cast would: round once
    cast_text(c, vt, is_half(vt) ? vt : DT_F32, &pre, &post);
    buf_puts(c->b, pre);
    expr(c, val);
    buf_printf(c->b, "%s)", post);
    return;
  }
  cast_text(c, vt, bt, &pre, &post);
  if (bt == DT_BOOL)
    buf_puts(c->b, "(uint8_t)");
  buf_puts(c->b, pre);
  expr(c, val);
  buf_puts(c->b, post);
}

// ---- pre-scan: which args and locals a kernel uses, whether anything raises ----
static void scan_expr(CG *c, const LExpr *e) {
  if (!e)
    return;
  if (e->kind == LX_LOCAL)
    c->local_read[e->local] = true;
  if (raises_here(e))
    c->has_err = true;
  if (e->kind == LX_LOAD)
    scan_expr(c, e->idx.dyn);
  scan_expr(c, e->a);
  scan_expr(c, e->b);
  scan_expr(c, e->c);
}

static void scan_stmts(CG *c, const LStmtList *l) {
  for (int i = 0; i < l->len; i++) {
    const LStmt *s = l->data[i];
    scan_expr(c, s->val);
    scan_expr(c, s->cond);
    if (s->kind == LS_STORE)
      scan_expr(c, s->idx.dyn);
    scan_stmts(c, &s->body);
  }
}

static void stmts(CG *c, const LStmtList *l);

static void close_block(CG *c) {
  c->depth--;
  for (int i = 0; i < c->k->locals.len; i++) {
    if (c->decl_depth[i] > c->depth)
      c->decl_depth[i] = -1;
  }
  buf_indent(c->b, c->depth);
  buf_puts(c->b, "}\n");
}

static void stmt(CG *c, const LStmt *s) {
  Buf *b = c->b;
  switch (s->kind) {
  case LS_LOOP: {
    bool par = s->parallel && c->par_var < 0;
    if (par) {
      if (c->has_err) {
        buf_indent(b, c->depth);
        buf_puts(b, "tdsl_g_seal(&err);\n");
      }
      buf_puts(b, "#ifdef _OPENMP\n#pragma omp parallel for\n#endif\n");
    }
    buf_indent(b, c->depth);
    buf_printf(b, "for (int64_t v%d = 0; v%d < %" PRId64 "; v%d++) {\n", s->var, s->var, s->extent, s->var);
    if (par)
      c->par_var = s->var;
    c->depth++;
    stmts(c, &s->body);
    close_block(c);
    if (par)
      c->par_var = -1;
    return;
  }
  case LS_STORE: {
    DType bt = arg_dtype(c, s->buf);
    c->arg_used[s->buf] = true;
    TD_ASSERT(c->k->args.data[s->buf].written);
    buf_indent(b, c->depth);
    buf_printf(b, "b%d[", s->buf);
    emit_index(b, &s->idx, dyn_index, c);
    buf_puts(b, "] = ");
    store_value(c, s->val->dt, bt, s->val);
    buf_puts(b, ";\n");
    return;
  }
  case LS_LET:
  case LS_SET: {
    TD_ASSERT(s->local >= 0 && s->local < c->k->locals.len);
    DType lt = c->k->locals.data[s->local];
    buf_indent(b, c->depth);
    bool declare = s->kind == LS_LET && c->decl_depth[s->local] < 0;
    if (declare) {
      buf_printf(b, "%s ", ctype(lt));
      c->decl_depth[s->local] = c->depth;
    }
    buf_printf(b, "t%d = ", s->local);
    const char *pre, *post;
    cast_text(c, s->val->dt, lt, &pre, &post);
    buf_puts(b, pre);
    expr(c, s->val);
    buf_printf(b, "%s;\n", post);
    if (declare && !c->local_read[s->local]) {
      buf_indent(b, c->depth);
      buf_printf(b, "(void)t%d;\n", s->local);
    }
    return;
  }
  case LS_IF:
    buf_indent(b, c->depth);
    buf_puts(b, "if (");
    expr(c, s->cond);
    buf_puts(b, ") {\n");
    c->depth++;
    stmts(c, &s->body);
    close_block(c);
    return;
  case LS_COUNT: break;
  }
  td_unreachable();
}

static void stmts(CG *c, const LStmtList *l) {
  for (int i = 0; i < l->len; i++)
    stmt(c, l->data[i]);
}

static const char *kernel_fn(Ctx *cx, const LProgram *p, int i) {
  return arena_printf(&cx->arena, "tdsl_g_%s_%s", p->name, p->kernels.data[i]->name);
}

static void comment_line(Buf *b, const char *s) {
  // a comment never holds a newline or the end of a block comment
  for (const char *q = s; *q; q++)
    buf_printf(b, "%c", *q == '\n' || *q == '\r' ? ' ' : *q);
}

static void emit_kernel(Ctx *cx, Prelude *pr, Buf *out, const LProgram *p, int ki) {
  const LKernel *k = p->kernels.data[ki];
  int nargs = k->args.len, nlocals = k->locals.len;
  CG c = {.cx = cx, .pr = pr, .p = p, .k = k, .par_var = -1, .depth = 1};
  c.arg_used = arena_alloc(&cx->arena, sizeof(bool) * (size_t)(nargs + 1));
  c.local_read = arena_alloc(&cx->arena, sizeof(bool) * (size_t)(nlocals + 1));
  c.decl_depth = arena_alloc(&cx->arena, sizeof(int) * (size_t)(nlocals + 1));
  for (int i = 0; i < nlocals; i++)
    c.decl_depth[i] = -1;
  scan_stmts(&c, &k->body);
  if (c.has_err)
    pr->single[H_ERR] = true;
  Buf body;
  buf_init(&body, cx);
  c.b = &body;
  stmts(&c, &k->body);

  // header comment: what it computes and what each pointer is
  buf_printf(out, "// %s.%s:", p->name, k->name);
  for (int i = 0; i < k->ops.len; i++)
    buf_printf(out, "%s %s", i ? "," : "", k->ops.data[i]);
  if (k->lines.len) {
    buf_printf(out, " (line%s", k->lines.len > 1 ? "s" : "");
    for (int i = 0; i < k->lines.len; i++)
      buf_printf(out, "%s %d", i ? "," : "", k->lines.data[i]);
    buf_puts(out, ")");
  }
  buf_puts(out, "\n//");
  for (int i = 0; i < nargs; i++) {
    const LBuf *lb = &p->bufs.data[k->args.data[i].buf];
    static const char *const kinds[] = {"param", "temp", "result"};
    buf_printf(out, " b%d: ", i);
    comment_line(out, lb->name ? lb->name : "?");
    buf_printf(out, " (%s %s[%" PRId64 "])%s", kinds[lb->kind], dtype_name(lb->dtype), lb->numel,
               i + 1 < nargs ? "," : "");
  }
  buf_printf(out, "\nstatic int %s(", kernel_fn(cx, p, ki));
  for (int i = 0; i < nargs; i++) {
    const LArg *a = &k->args.data[i];
    DType dt = p->bufs.data[a->buf].dtype;
    buf_printf(out, "%s%s%s *restrict b%d", i ? ", " : "", a->written ? "" : "const ", storage_type(dt), i);
  }
  buf_puts(out, nargs ? ") {\n" : "void) {\n");
  for (int i = 0; i < nargs; i++) {
    if (!c.arg_used[i])
      buf_printf(out, "  (void)b%d;\n", i);
  }
  if (c.has_err) {
    buf_puts(out, "  static const char *const errors[] = {\n");
    for (int i = 0; i < k->errors.len; i++) {
      buf_puts(out, "    ");
      buf_c_string(out, k->errors.data[i]);
      buf_puts(out, ",\n");
    }
    buf_puts(out, "  };\n  tdsl_g_err err = {-1, false, 0, INT64_MAX};\n");
  }
  buf_puts(out, body.data);
  if (c.has_err)
    buf_puts(out, "  return err.k < 0 ? 0 : tdsl_entry_kernel_error(errors[err.k], err.v);\n}\n\n");
  else
    buf_puts(out, "  return 0;\n}\n\n");
}

static const char *const dtype_enum[DT_COUNT] = {"TDSL_BOOL", "TDSL_I32", "TDSL_I64", "TDSL_F16",
                                                 "TDSL_BF16", "TDSL_F32", "TDSL_F64"};

static void int_list(Buf *b, int n, const int64_t *xs) {
  buf_puts(b, "{");
  for (int i = 0; i < n; i++)
    buf_printf(b, "%s%" PRId64, i ? ", " : "", xs[i]);
  buf_puts(b, n ? "}" : "0}");
}

static void emit_entry(Ctx *cx, Buf *out, const LProgram *p) {
  const char *fn = p->name;
  int np = p->params.len, nb = p->bufs.len, no = p->outputs.len;
  // the static tables of runtime/entry.c
  if (np) {
    buf_printf(out, "static const tdsl_entry_param tdsl_g_%s_params[%d] = {\n", fn, np);
    for (int i = 0; i < np; i++) {
      const LParam *q = &p->params.data[i];
      buf_puts(out, "  {");
      buf_c_string(out, q->name);
      buf_printf(out, ", %s, %d, ", dtype_enum[q->dtype], q->ndim);
      int_list(out, q->ndim, q->shape);
      buf_printf(out, ", %d, %d},\n", q->mut, q->buf);
    }
    buf_puts(out, "};\n");
  }
  if (nb) {
    buf_printf(out, "static const tdsl_entry_buf tdsl_g_%s_bufs[%d] = {\n", fn, nb);
    for (int i = 0; i < nb; i++) {
      const LBuf *lb = &p->bufs.data[i];
      static const char *const kinds[] = {"param", "temp", "result"};
      buf_printf(out, "  {%s, %" PRId64 ", %d},  // b%d: ", dtype_enum[lb->dtype], lb->numel,
                 lb->kind == LB_PARAM ? lb->param : -1, i);
      comment_line(out, lb->name ? lb->name : "?");
      buf_printf(out, " (%s)\n", kinds[lb->kind]);
    }
    buf_puts(out, "};\n");
  }
  if (no) {
    buf_printf(out, "static const tdsl_entry_output tdsl_g_%s_outputs[%d] = {\n", fn, no);
    for (int k = 0; k < no; k++) {
      const LOutput *o = &p->outputs.data[k];
      buf_printf(out, "  {%d, %d, ", o->buf, o->view.ndim);
      int_list(out, o->view.ndim, o->view.shape);
      buf_puts(out, ", ");
      int_list(out, o->view.ndim, o->view.strides);
      buf_printf(out, ", %" PRId64 "},\n", o->view.offset);
    }
    buf_puts(out, "};\n");
  }
  buf_printf(out, "static const tdsl_entry_info tdsl_g_%s_info = {", fn);
  buf_c_string(out, fn);
  buf_printf(out, ", %d, %s%s%s, %d, %s%s%s, %d, %s%s%s};\n\n", np, np ? "tdsl_g_" : "NULL", np ? fn : "",
             np ? "_params" : "", nb, nb ? "tdsl_g_" : "NULL", nb ? fn : "", nb ? "_bufs" : "", no,
             no ? "tdsl_g_" : "NULL", no ? fn : "", no ? "_outputs" : "");

  emit_entry_decl(cx, out, p);
  buf_puts(out, " {\n");
  if (np) {
    buf_puts(out, "  const tdsl_tensor *tdsl_g_args[] = {");
    for (int i = 0; i < np; i++)
      buf_printf(out, "%s%s", i ? ", " : "", emit_param_name(cx, p, i));
    buf_puts(out, "};\n");
  } else {
    buf_puts(out, "  const tdsl_tensor *const *tdsl_g_args = NULL;\n");
  }
  if (no) {
    buf_puts(out, "  tdsl_tensor *tdsl_g_outs[] = {");
    for (int k = 0; k < no; k++)
      buf_printf(out, "%sout%d", k ? ", " : "", k);
    buf_puts(out, "};\n");
  } else {
    buf_puts(out, "  tdsl_tensor *const *tdsl_g_outs = NULL;\n");
  }
  if (nb)
    buf_printf(out, "  tdsl_tensor tdsl_g_b[%d];\n", nb);
  else
    buf_puts(out, "  tdsl_tensor *tdsl_g_b = NULL;\n");
  buf_printf(out, "  int tdsl_g_rc = tdsl_entry_begin(&tdsl_g_%s_info, tdsl_g_args, tdsl_g_outs, tdsl_g_b);\n", fn);
  buf_puts(out, "  if (tdsl_g_rc != 0)\n    return tdsl_g_rc;\n");
  for (int i = 0; i < p->kernels.len; i++) {
    const LKernel *k = p->kernels.data[i];
    buf_printf(out, "  %stdsl_g_rc = %s(", i ? "if (tdsl_g_rc == 0)\n    " : "", kernel_fn(cx, p, i));
    for (int a = 0; a < k->args.len; a++)
      buf_printf(out, "%stdsl_tensor_data(&tdsl_g_b[%d])", a ? ", " : "", k->args.data[a].buf);
    buf_puts(out, ");\n");
  }
  buf_printf(out, "  return tdsl_entry_end(&tdsl_g_%s_info, tdsl_g_args, tdsl_g_outs, tdsl_g_b, tdsl_g_rc);\n}\n",
             fn);
}

static void c_emit(Ctx *cx, LProgram *const *progs, int nprogs, FILE *out) {
  Prelude pr = {0};
  Buf body;
  buf_init(&body, cx);
  for (int i = 0; i < nprogs; i++) {
    const LProgram *p = progs[i];
    buf_printf(&body, "%s// ---- %s ----\n\n", i ? "\n" : "", p->name);
    for (int k = 0; k < p->kernels.len; k++)
      emit_kernel(cx, &pr, &body, p, k);
    emit_entry(cx, &body, p);
  }
  Buf head;
  buf_init(&head, cx);
  buf_printf(&head, "// Generated by tdslc from %s: C11 with OpenMP pragmas.\n",
             nprogs ? progs[0]->file : "?");
  buf_puts(&head, "// Build: cc -std=c11 -O2 -march=native -fvect-cost-model=dynamic -fno-math-errno -fopenmp\n"
                  "//        -c FILE.c -I$(tdslc --print-include-dir)\n");
  buf_puts(&head, "// (ISO C keeps floating-point contraction off, as the results assume; without\n"
                  "// -fno-math-errno a loop calling sqrtf stays scalar.) On a busy machine run with\n"
                  "// OMP_WAIT_POLICY=passive: spinning OpenMP threads steal time slices.\n");
  emit_prelude(&head, &pr);
  buf_write(&head, out);
  buf_write(&body, out);
}

const Target target_c = {"c", ".c", c_emit};
