// ir/vecmath.c: the CPU math library, as loop IR (ir/vecmath.h). Each function of f32
// or f64 becomes arithmetic the backends print and vectorize: range reduction, a
// polynomial, the result rebuilt from integer ops on its bits, special values by
// compares and selects (both arms are computed, lane by lane; a select picks). No
// libm call is left in a loop for these ops, with one stated exception: f64 sin and
// cos of arguments beyond SIN_LIMIT_F64 (a cold path, below).
//
// The polynomials are weighted minimax fits computed by bench/vecmath/fit.py (table
// names match), coefficients lowest degree first; the error of each function, in ULPs
// over its whole range, is measured by bench/vecmath/sweep.c and written in
// docs/vecmath.md. Where the target fuses multiply-add (CpuTarget.fma) the polynomial
// steps and the reductions are LX_FMA; elsewhere a multiply and an add (a little less
// accurate, still within the documented bounds), and the exact products that erfc
// needs come from Dekker's splitting instead.
//
// The methods (textbook ones):
//   exp      x clamped; n = round(x log2 e) by adding and subtracting 1.5 * 2^p + 2 bias (one
//            multiply-add: the sum's low bits hold n + 2 bias); r = x - n ln2 with ln2 in two
//            parts (n * LN2_HI exact); e^r = 1 + r + r^2 P(r) on |r| <= ln2/2; times 2^a 2^b,
//            a + b = n, the two exponent fields half of n + 2 bias and the rest (an integer
//            shift and subtract of the sum's bits), each factor normal, so results that
//            overflow give inf and subnormal ones round once: those from a normal sum's bits,
//            no float operation forming a subnormal (scale2_t; exp_nonpos, one factor).
//   expm1    the same n and r, r's rounding error kept; q = e^r - 1 in two parts; then
//            2 (2^(n-1) q + (2^(n-1) - 1/2)), rounded once (the 2 exact, or the overflow);
//            x itself for |x| < 2^-25 (2^-54).
//   exp2     n = round(x), r = (x - n) ln2, then as exp.
//   log      x = 2^e m, m in [sqrt(1/2), sqrt(2)) from the bits (a subnormal's bits, as
//            an integer, first: no multiply reads it); f = m - 1 (exact); s = f / (2 + f);
//            log(1 + f) = f + s (T(s^2) - f) (2 atanh s = 2s + s T(s^2)); plus e ln2 in
//            two parts.
//   log1p    u = 1 + x and its rounding error c (Fast2Sum); 1 + x = 2^e (1 + f + c 2^-e),
//            then as log. softplus's f32 log1p(v), v = e^-|a| in [0, 1]: 2 atanh(w/2), w =
//            v / (1 + v/2) and its roundings undone, no reduction (vm_log1p_exp).
//   log2, log10: log's parts times 1/ln2 (1/ln10), e exact.
//   tanh     |x| < 0.625: x + x (z P(z)), z = x^2 + 2^-90 (f64 2^-600); else 1 - 2 / (e^(2|x|)
//            + 1), sign restored.
//   tanh(log1p(exp(a))) (mish's factor) as one ratio of u = e^-|a|: (1 + 2u) / (1 + 2u +
//            2u^2) for a > 0, h / (1 + h), h = u (u + 2) / 2, else; no log, one division.
//   erf      |x| < 0.875: x P(x^2); else 1 - exp(Q(|x| - 0.875)), Q fitted to log erfc
//            with erfc's weight (the absolute error of erf); 1 from where erf rounds to 1.
//   erfc     (f32 in f64) |x| < 0.875: (1 - c0 x) - x (c0lo + x^2 P1(x^2)); else
//            e^(-h) (1 - l) R(w) / |x| with x^2 = h + l exactly, w = 1/h and R(w) P/Q
//            rational (f64: three intervals, the coefficients picked by selects);
//            2 - that for x < 0.
//   sin, cos n = round(x 2/pi); r + rlo = x - n pi/2, then sin r = r + r^3 S(r^2), cos r =
//            1 - r^2/2 + r^4 C(r^2) with rlo's first-order terms, and the quadrant n mod 4
//            picks one and its sign. f32 (FMA targets) in f32 lanes for |x| < 2^17: pi/2 in
//            four floats, x - n P1 exact, n P2 exact (FMA) and subtracted by TwoSum, the
//            rest into rlo. f64: pi/2 in 30-bit pieces, each n * piece exact (|x| < 2^23).
//            f32 without FMA: in f64, exact for |x| < 2^25. Beyond, f32 takes a Payne-Hanek
//            reduction in f64 (2/pi in 29-bit pieces, x times each exact, each mod 4, the
//            sum in two parts), selected lane by lane: in the cold path's second pass and
//            in the loops that cannot take one (a GEMM epilogue). f64 beyond 2^23 is the
//            one libm call left: the cold path reruns its loop with libm's sin and cos.
//   pow      f32: in f32 lanes, log x as a double-float (as f64's below), y log x as one,
//            e^(ph + pl) with pl and the reduction's rounding folded in as c e^r. f64: log x
//            as a double-double (s = f / (2 + f) with its remainder, the s^3 term in two
//            parts), y log x as a double-double, exp of that (the low part added to r).
//            IEEE 754's special cases by selects; PyTorch's constant exponents (2, 3, 0.5,
//            -0.5, -1, -2) by its own arithmetic, and x ** 1 is x.
//   sigmoid, silu, gelu_tanh: their formulas (ir/opmath.c) with these inside; the
//            exp of sigmoid's and silu's 1 + exp(-x) only as accurate as the sum can tell:
//            x clamped and reduced as -x (the sign in the constants, no negation), 2 e^r as
//            one Horner chain, times 2^(n-1) from the reduction's own bits. gelu is x Phi,
//            Phi = (1 + erf(x / sqrt 2)) / 2 built from erf's two pieces with the halves in
//            their constants (vm_gelu).
#include "ir/vecmath.h"

#include <math.h>
#include <string.h>

#include "ir/opmath.h"

// ---- the polynomials (bench/vecmath/fit.py; lowest degree first) ----
// e^r = 1 + r + r^2 P(r), |r| <= ln2/2 (relative error of expm1 as the weight)
static const double EXP_F32[] = {0x1.fffffep-2, 0x1.5554aap-3, 0x1.55579ep-5, 0x1.122c58p-7, 0x1.6aae7ep-10};
static const double EXP_F64[] = {0x1.0000000000005p-1, 0x1.5555555555539p-3, 0x1.55555555522adp-5,
                                 0x1.1111111118fc2p-7, 0x1.6c16c17ede896p-10, 0x1.a01a01750f0afp-13,
                                 0x1.a019a76610a93p-16, 0x1.71de880cc7797p-19, 0x1.28a1e9a1fa99dp-22,
                                 0x1.ae6bab8ee1541p-26};
// T(z) = (2 atanh(s) - 2s) / s = z (c0 + c1 z + ...), z = s^2 <= 0.0297
static const double LOG_F32[] = {0x1.55557cp-1, 0x1.995cc2p-2, 0x1.321c12p-2};
static const double LOG_F64[] = {0x1.5555555555597p-1, 0x1.999999997e2eap-2, 0x1.2492494387ecap-2,
                                 0x1.c71c50aa11500p-3, 0x1.74668af914d42p-3, 0x1.3999aed234c79p-3,
                                 0x1.2f5a17e9082abp-3};
// tanh x = x + x^3 P(x^2), |x| < 0.625
static const double TANH_F32[] = {-0x1.555532p-2, 0x1.1106f6p-3, -0x1.b835a4p-5, 0x1.51f8cep-6, -0x1.750ce4p-8};
static const double TANH_F64[] = {-0x1.55555555554ffp-2, 0x1.111111110accdp-3, -0x1.ba1ba1b5064adp-5,
                                  0x1.664f477adac14p-6, -0x1.226e162bf7172p-7, 0x1.d6cf280eba49p-9,
                                  -0x1.7d68a32f19a1fp-10, 0x1.336612df07455p-11, -0x1.df5579804aadep-13,
                                  0x1.439120e6ab977p-14, -0x1.0da726f058898p-16};
// erf x = x P(x^2), |x| < 0.875
// (erf: [0] is 2/sqrt(pi), which the code adds in two parts, TWO_OVER_SQRTPI_HI + _LO)
static const double ERF_F32[] = {0x1.20dd76p+0, -0x1.81271cp-2, 0x1.ce22f2p-4, -0x1.b7085p-6, 0x1.4a3146p-8,
                                 -0x1.46b124p-11};
static const double ERF_F64[] = {0x1.20dd750429b6dp+0, -0x1.812746b03798ap-2, 0x1.ce2f21a03d0e2p-4,
                                 -0x1.b82ce31098a71p-6, 0x1.565bccba80eaap-8, -0x1.c02da3a4ce294p-11,
                                 0x1.f9a12c7721f4bp-14, -0x1.f4ab05e712deap-17, 0x1.b7ee584f71dd2p-20,
                                 -0x1.4f963acdda822p-23, 0x1.67f37551e0a54p-27};
// log erfc(0.875 + t), t in [0, 3.05] (f32: erf is 1 beyond), erfc's weight; f32 of degree 7
// (fit.py: 2^-33.6 before rounding, 2^-26.8 after, as degree 8, the constant's rounding
// the whole of it)
static const double ERFQ_F32[] = {-0x1.88672ep+0, -0x1.371172p+1, -0x1.a73054p-1, -0x1.803f7ap-5, 0x1.743ce2p-7,
                                  -0x1.2367a4p-9, 0x1.3d04e6p-12, -0x1.58d78ep-16};
static const double ERFQ_F64[] = {-0x1.88672ea9b34dcp+0, -0x1.3711709c17b04p+1, -0x1.a730790b50c2p-1,
                                  -0x1.802c278ebf60fp-5, 0x1.730b0dbe72fcdp-7, -0x1.1904838fc155p-9,
                                  0x1.a50d57235f00fp-13, 0x1.f1a01b300fb84p-15, -0x1.4ae685926e2a4p-15,
                                  0x1.9bc942dd46941p-17, -0x1.21ee7f682a60fp-19, -0x1.39005cd95c015p-25,
                                  0x1.778db5c8d0fe7p-23, -0x1.206a22323e77cp-24, 0x1.04608e2642aaep-26,
                                  -0x1.2d5e24bd42bc2p-29, 0x1.9fa298a850e1ep-33, -0x1.04c083716f743p-37};
// erfc a = e^(-a^2) / a P(w) / Q(w), w = 1/a^2: f32 (in f64) for a in [0.875, 10.1];
// f64 on [0.875, 1.75), [1.75, 4), [4, 27.3] (tables a, b, c)
static const double ERFC_F32_P[] = {0x1.20dd72db130b0p-1, 0x1.fd17c2eb12834p+1, 0x1.b88cb997b9e7ep+2,
                                    0x1.69563c8ea7146p+1, 0x1.ff64351ff20abp-4};
static const double ERFC_F32_Q[] = {0x1.0000000000000p+0, 0x1.e32bb67accc08p+2, 0x1.e73e0b97f700ap+3,
                                    0x1.1a0ab8013cf30p+3, 0x1.06447af390d37p+0};
static const double ERFC_F64_P[3][8] = {
    {0x1.20dd6df9a8602p-1, 0x1.acf2ba60f72d6p+2, 0x1.a7b7323303219p+4, 0x1.5b16c56319798p+5, 0x1.e244e8a6f6a72p+4,
        0x1.0474745a6f10dp+3, 0x1.542263ff623e6p-1, 0x1.ccebf121a2796p-8},
    {0x1.20dd75040d36cp-1, 0x1.a170394b092fep+3, 0x1.ac35e44c57496p+6, 0x1.86487abd21afcp+8, 0x1.43d025f866b0dp+9,
        0x1.bfeda5bb8c558p+8, 0x1.9047367b60881p+6, 0x1.8a71b1079562ep+1},
    {0x1.20dd750429b6dp-1, 0x1.656532d28e3f1p+4, 0x1.43fea310481c3p+8, 0x1.0ea32eb854ab4p+11, 0x1.ad81942a653d3p+12,
        0x1.2ae142c5ca5f1p+13, 0x1.1d7bee94b75e5p+12, 0x1.430a8445f6d44p+8}};
static const double ERFC_F64_Q[3][8] = {
    {0x1.0000000000000p+0, 0x1.8c25179f7d499p+3, 0x1.a307772c6cc12p+5, 0x1.7eb21bab19fc8p+6, 0x1.3acbcc4dbcbb0p+6,
        0x1.bb4b8ab24bcc5p+4, 0x1.c695879856df2p+1, 0x1.b86cf46f1e6bap-4},
    {0x1.0000000000000p+0, 0x1.79f1f3d6267b6p+4, 0x1.919cfe88d3a22p+7, 0x1.842914e4e9005p+9, 0x1.63caf656e208bp+10,
        0x1.2592df3bba4f7p+10, 0x1.724e68f95f680p+8, 0x1.ce108bd7d565dp+4},
    {0x1.0000000000000p+0, 0x1.40bbbc6c64750p+5, 0x1.28c7dd6a0a0adp+9, 0x1.00a2036b1c0f8p+12, 0x1.b107d4ed76f84p+13,
        0x1.52c11f33d468ep+14, 0x1.a1c663c50a17bp+13, 0x1.07179d03d136cp+11}};
// sin r = r + r^3 S(r^2), cos r = 1 - r^2/2 + r^4 C(r^2), |r| <= pi/4; f32's computed in f64
static const double SIN_F32D[] = {-0x1.5555554c6e281p-3, 0x1.11110867b691bp-7, -0x1.a00f7d00e677fp-13,
                                  0x1.6cd16e8b91b36p-19};
static const double COS_F32D[] = {0x1.5555554ed6d2ap-5, -0x1.6c16b82734766p-10, 0x1.a010dced38e13p-16,
                                  -0x1.241e38b40f09bp-22};
static const double SIN_F64[] = {-0x1.5555555555555p-3, 0x1.1111111111069p-7, -0x1.a01a019ffe523p-13,
                                 0x1.71de3a33a57fep-19, -0x1.ae642c51b3cb2p-26, 0x1.6109bd7d78a7dp-33,
                                 -0x1.9ffd809225412p-41};
static const double COS_F64[] = {0x1.5555555555555p-5,  -0x1.6c16c16c16b30p-10, 0x1.a01a019ffcb74p-16,
                                 -0x1.27e4fb5a1ec3fp-22, 0x1.1eed6f7dcfefcp-29, -0x1.93744f21515bdp-37,
                                 0x1.9dac3cc26b8cfp-45};
// log1p(v) = 2 atanh(s) for v in [0, 1] (softplus's f32 log1p(e^-|a|)): s = v / (2 + v),
// T(z) = z (c0 + c1 z + ...), z = s^2 <= 1/9 (fit.py log1pe4_f32: 2^-26.7)
static const double LOG1PE_F32[] = {0x1.5555p-1, 0x1.99d2a2p-2, 0x1.1eb334p-2, 0x1.1f083ep-2};
// pow's log (f64): T(z) = (2/3) z + z^2 (c1 + c2 z + ...), c0 held at 2/3 (added as a
// double-double: TWO_THIRDS_HI + TWO_THIRDS_LO)
static const double LOGDD_F64[] = {0x1.5555555555555p-1, 0x1.9999999999b4ep-2, 0x1.249249245426bp-2,
                                   0x1.c71c7232c2ed1p-3, 0x1.745ce7fc75292p-3, 0x1.3b1f468ea7c18p-3,
                                   0x1.0f77706513630p-3, 0x1.0e935afb89394p-3};
static const double TWO_THIRDS_HI[2] = {0x1.555556p-1, 0x1.5555555555555p-1};
static const double TWO_THIRDS_LO[2] = {-0x1.555556p-26, 0x1.5555555555555p-55};
#define LEN(a) ((int)(sizeof(a) / sizeof *(a)))

// ---- constants ----
static const double LOG2E = 0x1.71547652b82fep+0;
// constants in two parts, hi + lo, for each format: f32's hi is a float
static const double LOG2E_HI[2] = {0x1.715476p+0, 0x1.71547652b82fep+0}, LOG2E_LO[2] = {0x1.4ae0cp-26,
                                   0x1.777d0ffda0d24p-56};
static const double INV_LN10_HI[2] = {0x1.bcb7b2p-2, 0x1.bcb7b1526e50ep-2};
static const double INV_LN10_LO[2] = {-0x1.5b235ep-27, 0x1.95355baaafad3p-57};
static const double TWO_OVER_SQRTPI_HI[2] = {0x1.20dd76p+0, 0x1.20dd750429b6dp+0};
static const double TWO_OVER_SQRTPI_LO[2] = {-0x1.f7ac92p-25, 0x1.1ae3a914fed80p-56};
static const double LN2 = 0x1.62e42fefa39efp-1;
static const double TWO_OVER_PI = 0x1.45f306dc9c883p-1;
// ln2 = LN2_HI + LN2_LO: LN2_HI short enough that n * LN2_HI is exact (f32: |n| < 2^15;
// f64: |n| < 2^21)
static const double LN2_HI_F32 = 0x1.62p-1, LN2_LO_F32 = 0x1.c85fe0p-10;
static const double LN2_HI_F64 = 0x1.62e42fee00000p-1, LN2_LO_F64 = 0x1.a39ef35793c76p-33;
// pow's log in f32 lanes: LN2P_HI * e exact for |e| < 2^9, LN2P_LO to 2^-44
static const double LN2P_HI_F32 = 0x1.62e4p-1, LN2P_LO_F32 = 0x1.7f7d1cp-20;
// log10(2) = LG2_HI + LG2_LO, LG2_HI * e exact
static const double LG2_HI_F32 = 0x1.344p-2, LG2_LO_F32 = 0x1.3509f8p-18;
static const double LG2_HI_F64 = 0x1.3441350800000p-2, LG2_LO_F64 = 0x1.f79fef311f12bp-34;
// pi/2 in parts of at most 30 bits (f64: n < 2^23 makes each n * part exact), then the rest
static const double PIO2_F64[] = {0x1.921fb54p+0, 0x1.10b46118p-30, 0x1.313198ap-61, 0x1.701b839a25205p-92};
// f32 arguments reduced in f64: two parts of at most 28 bits (n < 2^25), then the rest
static const double PIO2_F32[] = {0x1.921fb54p+0, 0x1.10b461p-30, 0x1.a62633145c06ep-58};
// f32 arguments reduced in f32 lanes: pi/2 as four floats, each the rest rounded
static const double PIO2_F32L[] = {0x1.921fb6p+0, -0x1.777a5cp-25, -0x1.ee59dap-50, 0x1.98a2ep-77};
// pi/2 = PIO2_HI + PIO2_LO (f64)
static const double PIO2_HI = 0x1.921fb54442d18p+0, PIO2_LO = 0x1.1a62633145c07p-54;
// 2/pi in pieces of 29 bits (truncated; the rest < 2^-208): an f32 x times each is exact
// in f64
static const double TWO_OVER_PI_29[] = {0x1.45f306dp-1, 0x1.9391054p-30, 0x1.4fe13abp-59, 0x1.d1f534dp-88,
                                        0x1.b81b6c5p-117, 0x1.5993c43p-148, 0x1.2083fcap-177};
// |x| below which each reduction holds: f32 in f32 lanes (FMA targets), f32 in f64 (the
// others), f64; beyond, f32 takes the Payne-Hanek path and f64 the cold path
static const double SIN_FAST_F32 = 0x1p17, SIN_LIMIT_F32 = 0x1p25, SIN_LIMIT_F64 = 0x1p23;

// The numbers of a format.
typedef struct Fmt {
  int mant;            // explicit mantissa bits: 23, 52
  int bias;            // 127, 1023
  double shift;        // 1.5 * 2^mant: x + shift - shift rounds x to an integer
  double min_normal;   // 2^-126, 2^-1022
  double sqrt_half;    // sqrt(1/2) rounded, the lower end of log's mantissa range
  double split;        // 2^ceil(p/2) + 1: Dekker's splitting
} Fmt;

static const Fmt FMT32 = {23, 127, 0x1.8p23, 0x1p-126, 0x1.6a09e6p-1, 4097};
static const Fmt FMT64 = {52, 1023, 0x1.8p52, 0x1p-1022, 0x1.6a09e667f3bcdp-1, 134217729};

// A builder: the kernel, where lets go, the dtype being computed.
typedef VEC(LExpr *) LExprList;
typedef struct VM {
  Ctx *cx;
  LKernel *k;
  LStmtList *pre;
  bool fma;
  bool c_source;  // CpuTarget.c_source: clamps in the form gcc vectorizes best
  DType dt, it;  // f32 and i32, or f64 and i64
  const Fmt *f;
  LExprList *trig;  // where sin and cos record their arguments; NULL: they stay libm calls
} VM;

static VM vm_for(VM m, DType dt) {
  m.dt = dt;
  m.it = dt == DT_F32 ? DT_I32 : DT_I64;
  m.f = dt == DT_F32 ? &FMT32 : &FMT64;
  return m;
}

static bool f32(const VM *m) { return m->dt == DT_F32; }
static double pick(const VM *m, double a32, double a64) { return f32(m) ? a32 : a64; }
static double pick2(const VM *m, const double *v) { return v[!f32(m)]; }

// ---- expression helpers ----
static LExpr *K(VM *m, double v) { return lx_const_f(m->cx, m->dt, f32(m) ? (double)(float)v : v); }
static LExpr *I(VM *m, int64_t v) { return lx_const_i(m->cx, m->it, v); }

// v as a local (constants and locals are read as they are).
static LExpr *let(VM *m, LExpr *v) {
  if (v->kind == LX_LOCAL || v->kind == LX_CONST)
    return v;
  vec_push(&m->cx->arena, &m->k->locals, v->dt);
  int l = m->k->locals.len - 1;
  vec_push(&m->cx->arena, m->pre, ls_let(m->cx, l, v));
  return lx_local(m->cx, v->dt, l);
}

static LExpr *bin(VM *m, Op op, LExpr *a, LExpr *b) { return lx_binary(m->cx, op, a->dt, a, b); }
static LExpr *add(VM *m, LExpr *a, LExpr *b) { return bin(m, OP_ADD, a, b); }
static LExpr *sub(VM *m, LExpr *a, LExpr *b) { return bin(m, OP_SUB, a, b); }
static LExpr *mul(VM *m, LExpr *a, LExpr *b) { return bin(m, OP_MUL, a, b); }
static LExpr *dvd(VM *m, LExpr *a, LExpr *b) { return bin(m, OP_DIV, a, b); }
static LExpr *addk(VM *m, LExpr *a, double k) { return add(m, a, K(m, k)); }
static LExpr *mulk(VM *m, LExpr *a, double k) { return mul(m, a, K(m, k)); }
static LExpr *neg(VM *m, LExpr *a) { return lx_unary(m->cx, OP_NEG, a->dt, a); }
static LExpr *fabs_(VM *m, LExpr *a) { return lx_unary(m->cx, OP_ABS, a->dt, a); }
static LExpr *copysign_(VM *m, LExpr *a, LExpr *b) { return bin(m, OP_COPYSIGN, a, b); }
static LExpr *cmp(VM *m, Op op, LExpr *a, LExpr *b) { return lx_binary(m->cx, op, DT_BOOL, a, b); }
static LExpr *lt(VM *m, LExpr *a, double k) { return cmp(m, OP_LT, a, K(m, k)); }
static LExpr *gt(VM *m, LExpr *a, double k) { return cmp(m, OP_GT, a, K(m, k)); }
static LExpr *eq(VM *m, LExpr *a, double k) { return cmp(m, OP_EQ, a, K(m, k)); }
// c ? a : b, the arms as lets: gcc if-converts (and so vectorizes) a ?: whose arms are
// values, not one whose arms hold calls (fma, fabs).
static LExpr *let(VM *m, LExpr *v);
static LExpr *sel(VM *m, LExpr *c, LExpr *a, LExpr *b) { return lx_select(m->cx, c, let(m, a), let(m, b)); }
// a & b, a | b of bools: both evaluated (C's && would be a branch on a float compare,
// which gcc does not speculate, so the loop would not vectorize)
static LExpr *and_(VM *m, LExpr *a, LExpr *b) { return lx_binary(m->cx, OP_BITWISE_AND, DT_BOOL, a, b); }
static LExpr *or_(VM *m, LExpr *a, LExpr *b) { return lx_binary(m->cx, OP_BITWISE_OR, DT_BOOL, a, b); }
static LExpr *cast(VM *m, DType dt, LExpr *a) { return lx_cast(m->cx, dt, a); }

// a * b + c: fused where the target has FMA (the IR's LX_FMA), else rounded twice.
static LExpr *fmadd(VM *m, LExpr *a, LExpr *b, LExpr *c) {
  return m->fma ? lx_fma(m->cx, a, b, c) : add(m, mul(m, a, b), c);
}

// x clamped to [lo, hi] by compares, so NaN passes through. c = x > hi ? hi : x, then
// c < lo ? lo : c, which LLVM makes a min and a max. gcc keeps each compare and blend
// and, given the second compare on c, adds a compare and a mask operation more (the
// vectorized `relu(x * 2 + 1) * sigmoid(x)` of the C backend: 5 vector operations for
// the clamp); x < lo ? lo : c is the same value for every x (x > hi gives c = hi > lo,
// and NaN fails both compares) in 4, so the C backend's clamps compare x at both ends.
static LExpr *clamp(VM *m, LExpr *x, double lo, double hi) {
  LExpr *c = let(m, sel(m, gt(m, x, hi), K(m, hi), x));
  return let(m, sel(m, lt(m, m->c_source ? x : c, lo), K(m, lo), c));
}

// ---- bits ----
static LExpr *bits(VM *m, LExpr *x) { return lx_bitcast(m->cx, m->it, x); }
static LExpr *fbits(VM *m, LExpr *i) { return lx_bitcast(m->cx, m->dt, i); }
static LExpr *ibin(VM *m, Op op, LExpr *a, LExpr *b) { return lx_binary(m->cx, op, m->it, a, b); }
static LExpr *iaddk(VM *m, LExpr *a, int64_t k) { return ibin(m, OP_ADD, a, I(m, k)); }
static LExpr *ishl(VM *m, LExpr *a, int n) { return ibin(m, OP_LSHIFT, a, I(m, n)); }
static LExpr *isra(VM *m, LExpr *a, int n) { return ibin(m, OP_RSHIFT, a, I(m, n)); }
static int64_t bits_of(const VM *m, double v) {
  if (f32(m)) {
    float f = (float)v;
    int32_t i;
    memcpy(&i, &f, sizeof i);
    return i;
  }
  int64_t i;
  memcpy(&i, &v, sizeof i);
  return i;
}

// round(x) for |x| < 2^(p-2), ties to even: x + 1.5 * 2^mant - 1.5 * 2^mant.
static LExpr *rint_(VM *m, LExpr *x) { return sub(m, addk(m, x, m->f->shift), K(m, m->f->shift)); }

// 2^(n + bias) for an integral n with n + bias in the normal exponents: n + shift + 127
// (1023) has the biased exponent in its low bits; shifted into the exponent field, the
// shift constant's own bits fall out of the word.
static LExpr *pow2(VM *m, LExpr *n, int bias) {
  LExpr *t = bits(m, addk(m, n, m->f->shift + m->f->bias + bias));
  return fbits(m, ishl(m, t, m->f->mant));
}

// An int of m->it (|k| < 2^22) as a float, through the bits of 1.5 * 2^mant + k: AVX2
// has no vector i64 -> f64 conversion, and gcc 12 does not if-convert (so vectorize) a
// loop where it duplicated an int -> float conversion into branches (it may trap).
static LExpr *int_float(VM *m, LExpr *k) {
  return sub(m, fbits(m, ibin(m, OP_ADD, k, I(m, bits_of(m, m->f->shift)))), K(m, m->f->shift));
}

// Horner: c[0] + x (c[1] + x (c[2] + ...)), from n coefficients.
static LExpr *horner(VM *m, LExpr *x, const double *c, int n) {
  LExpr *p = K(m, c[n - 1]);
  for (int j = n - 2; j >= 0; j--)
    p = fmadd(m, p, x, K(m, c[j]));
  return p;
}

// a * b = hi + lo exactly (FMA; else Dekker's product of Veltkamp's halves).
static void two_prod(VM *m, LExpr *a, LExpr *b, LExpr **hi, LExpr **lo) {
  *hi = let(m, mul(m, a, b));
  if (m->fma) {
    *lo = let(m, lx_fma(m->cx, a, b, neg(m, *hi)));
    return;
  }
  LExpr *half[2][2];
  LExpr *v[2] = {a, b};
  for (int i = 0; i < 2; i++) {
    LExpr *c = let(m, mulk(m, v[i], m->f->split));
    half[i][0] = let(m, sub(m, c, sub(m, c, v[i])));
    half[i][1] = let(m, sub(m, v[i], half[i][0]));
  }
  LExpr *t = sub(m, mul(m, half[0][0], half[1][0]), *hi);
  t = add(m, t, mul(m, half[0][0], half[1][1]));
  t = add(m, t, mul(m, half[0][1], half[1][0]));
  *lo = let(m, add(m, t, mul(m, half[0][1], half[1][1])));
}

// a + b = s + t exactly, for |a| >= |b| or a = 0.
static void fast_two_sum(VM *m, LExpr *a, LExpr *b, LExpr **s, LExpr **t) {
  *s = let(m, add(m, a, b));
  *t = let(m, sub(m, b, sub(m, *s, a)));
}

// ---- exp and kin ----
static const double *exp_poly(const VM *m, int *n) {
  *n = f32(m) ? LEN(EXP_F32) : LEN(EXP_F64);
  return f32(m) ? EXP_F32 : EXP_F64;
}

// The reduction of e^(s c), s = +1 or -1, for a clamped c: n = round(s c log2 e) and
// r = s c - n ln2 (|r| <= ln2/2), ln2 in two parts (n LN2_HI exact; c - -n LN2_HI too).
//   t:   n + shift + off, from one multiply-add whose constant holds off: its bits hold
//        n + off in their low ones (shift's own bits leave the word when shifted into
//        the exponent field: pow2_t), so 2^n's exponent needs no add of its own;
//   n:   t - (shift + off), exact;
//   rs:  s r: a reduction of -c keeps its sign in the polynomial's coefficients (exp_horner)
//        rather than in a negation;
//   rlo: (s = 1, if asked) r's rounding error: c - n ln2 = r + rlo to far below r's last bit.
typedef struct ExpRed {
  LExpr *t, *n, *rs, *rlo;
  int s;
} ExpRed;

static ExpRed exp_reduce(VM *m, LExpr *c, int s, int off, bool want_rlo) {
  ExpRed e = {.s = s};
  double k = m->f->shift + off, hi = pick(m, LN2_HI_F32, LN2_HI_F64), lo = pick(m, LN2_LO_F32, LN2_LO_F64);
  e.t = let(m, fmadd(m, c, K(m, s * LOG2E), K(m, k)));
  e.n = let(m, sub(m, e.t, K(m, k)));
  LExpr *x = let(m, fmadd(m, e.n, K(m, -s * hi), c));  // exact
  e.rs = let(m, fmadd(m, e.n, K(m, -s * lo), x));
  if (want_rlo)
    e.rlo = let(m, fmadd(m, e.n, K(m, -lo), sub(m, x, e.rs)));
  return e;
}

// 2^(n + off - bias) from a reduction's t (ExpRed), for n + off in the normal exponents.
static LExpr *pow2_t(VM *m, LExpr *t) { return fbits(m, ishl(m, bits(m, t), m->f->mant)); }

// e^r - 1 = r + r^2 P(r).
static LExpr *expm1_r(VM *m, LExpr *r) {
  int np;
  const double *p = exp_poly(m, &np);
  return fmadd(m, mul(m, r, r), horner(m, r, p, np), r);
}

// a e^r at r = s rs (a a power of 2) as one Horner chain of multiply-adds: the
// coefficients a, a, a P (r's odd powers times s) are exact. One rounding more than
// 1 + (r + r^2 P(r)) can show (the last step's product carries the previous rounding,
// times |r| <= 0.35), for two operations fewer: where the sum with 1 that follows
// (sigmoid's, silu's) rounds it away, or a tail whose error the caller's bound holds.
static LExpr *exp_horner(VM *m, const ExpRed *e, double a) {
  int np;
  const double *p = exp_poly(m, &np);
  double c[16];
  TD_ASSERT(np + 2 <= LEN(c));
  c[0] = c[1] = a;
  for (int j = 0; j < np; j++)
    c[j + 2] = a * p[j];
  for (int j = 1; j < np + 2; j += 2)
    c[j] *= e->s;
  return horner(m, e->rs, c, np + 2);
}

// (1 + s) g 2^n over exp's whole range (g NULL: 1; else a factor in [2^-4, 1]), from a
// reduction with off = 2 bias (n in [-151, 129], f64 [-1076, 1025]): t's bits less shift's
// hold F = n + 2 bias; 2^a 2^b with a + bias = floor(F/2) (an integer shift of the bits:
// shift's are even) and b + bias = F less that, both normal. q = p 2^a is p rounded, scaled
// exactly (g NULL: fma(2^a, s, 2^a), the sum with 1 and the scale in one operation), and
// q 2^b rounds once (a subnormal result) or overflows to inf.
//
// No float operation forms a subnormal (an x86 core takes a microcode assist, ~100+
// cycles, for each vector that does: exp of (-104, -87) was 11x slower than of normal
// results): in the lanes of sub (the caller's: exp's and pow's x below (1/2 - bias) ln2 by
// a margin, exp2's x below 1/2 - bias; NULL (erfc): n <= -bias, from t; a NaN is in none) the result r =
// q 2^b is below 2^-126 (f64 2^-1022) and comes from y = fma(q, 2^b, 2^-126), the exact
// product plus the smallest normal rounded once on y's grid, which is the subnormals'
// (2^-149, f64 2^-1074): y's bits less 2^-126's are r's, the value the product rounds to.
// Elsewhere the addend is 0 and y the product (a lane with n = -bias and p < 1, or one just
// inside the caller's margin, still rounds a subnormal product: the same value). Without
// FMA the product rounds before the sum (the same values, the assist kept). Two vector
// operations more than the plain product (the compare and the addend's select, the bits'
// subtract; the sum with 1 gone into q's FMA): exp and exp2 0-3% slower on normal results.
// gcc gets the addend's bits from an integer select, and x's compare, not t's: it threads
// a condition on a value derived from the clamp through the clamp's own compare.
static LExpr *scale2_t(VM *m, LExpr *s, LExpr *g, LExpr *t, LExpr *sub) {
  LExpr *ti = let(m, bits(m, t)), *ha = let(m, isra(m, ti, 1));
  LExpr *hb = ibin(m, OP_SUB, ti, ha);
  LExpr *pa = let(m, fbits(m, ishl(m, ha, m->f->mant)));
  // n <= -bias: t (an integer) at most shift + bias (a NaN t: false)
  if (!sub)
    sub = let(m, lt(m, t, m->f->shift + m->f->bias + 1));
  LExpr *c, *cb;
  if (m->c_source) {
    cb = let(m, sel(m, sub, I(m, bits_of(m, m->f->min_normal)), I(m, 0)));
    c = fbits(m, cb);
  } else {
    c = let(m, sel(m, sub, K(m, m->f->min_normal), K(m, 0)));
    cb = bits(m, c);
  }
  LExpr *q = g ? mul(m, mul(m, addk(m, s, 1), g), pa) : fmadd(m, pa, s, pa);
  LExpr *y = fmadd(m, q, fbits(m, ishl(m, hb, m->f->mant)), c);
  return fbits(m, ibin(m, OP_SUB, bits(m, y), cb));
}

// scale2_t's lanes for e^x (x before its clamp): x below (1/2 - bias) ln2 by a margin
// (f32 2^-12, f64 2^-40), where n <= -bias.
static LExpr *sub_below(VM *m, LExpr *x) {
  return let(m, lt(m, x, f32(m) ? (double)(float)(-126.5 * LN2 - 0x1p-12) : -1022.5 * LN2 - 0x1p-40));
}

// g e^x over the whole range (g NULL: 1; else a factor in [2^-4, 1]).
static LExpr *exp_full(VM *m, LExpr *x, LExpr *g) {
  LExpr *c = clamp(m, x, pick(m, -104, -746), pick(m, 88.8, 709.8));
  ExpRed e = exp_reduce(m, c, 1, 2 * m->f->bias, false);
  return scale2_t(m, expm1_r(m, e.rs), g, e.t, g ? NULL : sub_below(m, x));
}

// e^x for x <= 0 or NaN: only the lower clamp, and one factor where exp_full needs two.
// Below X0 (-126 ln2 less 2^-12, f64 2^-40: n <= -127, or n = -126 with p < 1), the result
// r = p 2^n is below 2^-126; there the factor is 2^(n + D), D = 64 (f64 512), so q = p
// 2^(n + D) is normal (p rounded, scaled exactly), y = q + 2^(D - 126) rounds it once on the
// subnormal grid scaled by 2^D (scale2_t's sum, scaled), and y's bits less the addend's are
// r's. Elsewhere the factor is 2^n, the addend 0 and r = q. No float operation forms or
// reads a subnormal but in [X0, -126 ln2), where q is r itself, rounded once. The values are
// those of p 2^n rounded (exp_full's). LLVM: three selects on one mask (a masked add, a
// masked sum, a masked subtract on AVX-512: 6 vector operations from t to r where the two
// factors took 7); gcc, which turns selects that share a condition into a tangle of masked
// compares, gets one select, the addend's bits cb = (D + 1) << mant with D + 1 odd, and the
// factor's offset D << mant as cb without its lowest bit (8 operations; softmax's and mish's
// loops 2-4% slower than the two factors'). The mask is x's compare, not c's or t's: gcc
// threads a condition on the clamped value through the clamp's own (c = lo there).
static LExpr *exp_nonpos(VM *m, LExpr *x) {
  double lo = pick(m, -104, -746);
  LExpr *c = let(m, sel(m, lt(m, x, lo), K(m, lo), x));
  ExpRed e = exp_reduce(m, c, 1, m->f->bias, false);
  int d = f32(m) ? 64 : 512;
  int64_t step = (int64_t)1 << m->f->mant, cb = (int64_t)(d + 1) << m->f->mant;
  // x below X0 = -126 ln2 - 2^-12 (f64 -1022 ln2 - 2^-40): n <= -127, or n = -126 with r <
  // -2^-12, p < 1 (a NaN x: false). On x, not on c or t: gcc threads a condition on the
  // clamped value through the clamp's own (c = lo there) into a tangle of masked compares.
  double x0 = f32(m) ? (double)(float)(-126 * LN2 - 0x1p-12) : -1022 * LN2 - 0x1p-40;
  LExpr *sub = let(m, lt(m, x, x0));
  if (m->c_source) {
    LExpr *cbv = let(m, sel(m, sub, I(m, cb), I(m, 0)));
    LExpr *off = ibin(m, OP_BITWISE_AND, cbv, I(m, ~step));
    LExpr *a = let(m, fbits(m, ibin(m, OP_ADD, ishl(m, bits(m, e.t), m->f->mant), off)));
    LExpr *y = add(m, fmadd(m, a, expm1_r(m, e.rs), a), fbits(m, cbv));
    return fbits(m, ibin(m, OP_SUB, bits(m, y), cbv));
  }
  LExpr *ab = let(m, ishl(m, bits(m, e.t), m->f->mant));
  LExpr *a = let(m, fbits(m, sel(m, sub, iaddk(m, ab, cb - step), ab)));
  LExpr *q = let(m, fmadd(m, a, expm1_r(m, e.rs), a));
  LExpr *y = let(m, sel(m, sub, addk(m, q, ldexp(1, d - m->f->bias + 1)), q));
  return fbits(m, sel(m, sub, iaddk(m, bits(m, y), -cb), bits(m, y)));
}

// e^(s x) where the caller adds it to 1 (sigmoid's, silu's e^-x: s = -1, x itself
// clamped, no negation): values below 2^-p count as 0. s x is clamped to [-87, 89]
// (f64 [-707, 710]) and 2 e^r 2^(n-1) is e^r 2^n with one normal factor (2^(n-1) at the
// lower end is 0, e^89 overflows to inf), the 2 in the polynomial's coefficients.
static LExpr *exp_plus1(VM *m, LExpr *x, int s) {
  double lo = pick(m, -87, -707), hi = pick(m, 89, 710);
  LExpr *c = s > 0 ? clamp(m, x, lo, hi) : clamp(m, x, -hi, -lo);
  ExpRed e = exp_reduce(m, c, s, m->f->bias - 1, false);
  return mul(m, exp_horner(m, &e, 2), pow2_t(m, e.t));
}

// e^x for x in a range where 2^n is normal (n in [-125, 127]): erf's tail, tanh's.
static LExpr *exp_normal(VM *m, LExpr *x) {
  ExpRed e = exp_reduce(m, x, 1, m->f->bias, false);
  return mul(m, addk(m, expm1_r(m, e.rs), 1), pow2_t(m, e.t));
}

static LExpr *vm_exp2(VM *m, LExpr *x) {
  LExpr *c = clamp(m, x, pick(m, -151, -1076), pick(m, 129, 1025));
  double k = m->f->shift + 2 * m->f->bias;
  LExpr *t = let(m, addk(m, c, k));  // n + k: c rounded to an integer n
  LExpr *r = let(m, mulk(m, sub(m, c, sub(m, t, K(m, k))), LN2));
  return scale2_t(m, expm1_r(m, r), NULL, t, let(m, lt(m, x, 0.5 - m->f->bias)));
}

static LExpr *vm_expm1(VM *m, LExpr *x) {
  LExpr *c = clamp(m, x, pick(m, -18, -38), pick(m, 89, 710));
  ExpRed e = exp_reduce(m, c, 1, m->f->bias - 1, true);
  LExpr *r = e.rs;
  // q = e^(r + rlo) - 1 = qh + ql: r + (r^2 P(r) + rlo), the sum kept in two parts
  int np;
  const double *p = exp_poly(m, &np);
  LExpr *corr = let(m, fmadd(m, mul(m, r, r), horner(m, r, p, np), e.rlo)), *qh, *ql;
  fast_two_sum(m, r, corr, &qh, &ql);
  // 2 (2^(n-1) q + (2^(n-1) - 1/2)), rounded once but for ql (the factor 2 exact, or the
  // overflow to inf at the top exponent, where 2^n itself would overflow; n = 0 gives
  // qh + ql). Halving a value below 2^-125 would round it: |x| < 2^-25 (2^-54) gives x,
  // expm1's value rounded there, -0 included.
  LExpr *t = let(m, pow2_t(m, e.t));
  LExpr *big = mulk(m, fmadd(m, t, ql, fmadd(m, t, qh, addk(m, t, -0.5))), 2);
  return sel(m, lt(m, fabs_(m, x), pick(m, 0x1p-25, 0x1p-54)), x, big);
}

// ---- log and kin ----

// x = 2^k m with m in [sqrt(1/2), sqrt(2)) for a positive normal x: k (an int) and
// f = m - 1 (exact), or (twice: FMA targets only) 2f = 2m - 2.
static void decompose_by(VM *m, LExpr *x, LExpr **k, LExpr **f, bool twice) {
  LExpr *i = let(m, bits(m, x));
  *k = let(m, isra(m, iaddk(m, i, -bits_of(m, m->f->sqrt_half)), m->f->mant));
  LExpr *mm = fbits(m, ibin(m, OP_SUB, i, ishl(m, *k, m->f->mant)));
  *f = let(m, twice ? lx_fma(m->cx, mm, K(m, 2), K(m, -2)) : addk(m, mm, -1));
}

static void decompose(VM *m, LExpr *x, LExpr **k, LExpr **f) { decompose_by(m, x, k, f, false); }

// log(1 + f) - f = s (T(s^2) - f), s = f / (2 + f): the part after the leading f.
static LExpr *log1p_tail(VM *m, LExpr *f) {
  LExpr *s = let(m, dvd(m, f, addk(m, f, 2)));
  LExpr *z = let(m, mul(m, s, s));
  LExpr *t = f32(m) ? mul(m, z, horner(m, z, LOG_F32, LEN(LOG_F32))) : mul(m, z, horner(m, z, LOG_F64, LEN(LOG_F64)));
  return mul(m, s, sub(m, t, f));
}

// e ln2 + log(1 + f) for an integral e and f in [sqrt(1/2) - 1, sqrt(2) - 1].
static LExpr *log_parts(VM *m, LExpr *e, LExpr *f) {
  LExpr *tail = fmadd(m, e, K(m, pick(m, LN2_LO_F32, LN2_LO_F64)), log1p_tail(m, f));
  return fmadd(m, e, K(m, pick(m, LN2_HI_F32, LN2_HI_F64)), add(m, f, tail));
}

// log_parts of f = f2 / 2, given f2 (FMA targets): s = f2 / (4 + f2), and f itself only
// inside multiply-adds (f2 * 0.5 exact there, a subnormal f included).
static LExpr *log_parts_f2(VM *m, LExpr *e, LExpr *f2) {
  LExpr *s = let(m, dvd(m, f2, addk(m, f2, 4)));
  LExpr *z = let(m, mul(m, s, s));
  LExpr *t = f32(m) ? mul(m, z, horner(m, z, LOG_F32, LEN(LOG_F32))) : mul(m, z, horner(m, z, LOG_F64, LEN(LOG_F64)));
  LExpr *tail = mul(m, s, lx_fma(m->cx, f2, K(m, -0.5), t));
  tail = fmadd(m, e, K(m, pick(m, LN2_LO_F32, LN2_LO_F64)), tail);
  return fmadd(m, e, K(m, pick(m, LN2_HI_F32, LN2_HI_F64)), lx_fma(m->cx, f2, K(m, 0.5), tail));
}

// log's special values around r, the value for positive finite normal x: +inf, NaN
// (x < 0 or NaN) and -inf at 0.
static LExpr *log_special(VM *m, LExpr *x, LExpr *r, double zero_at) {
  r = sel(m, lt(m, x, INFINITY), r, x);
  LExpr *bad = sel(m, eq(m, x, zero_at), K(m, -INFINITY), K(m, NAN));
  return sel(m, gt(m, x, zero_at), r, bad);
}

typedef enum { LOG_E, LOG_2, LOG_10 } LogBase;

// x for log: a positive subnormal x as xs = x 2^(bias + mant - 1) (f32 2^149, f64 2^1074),
// a normal one as itself, and *e, xs's exponent as a float less that scale's. No multiply
// reads the subnormal (an x86 core takes a microcode assist, ~100 cycles, for each vector
// whose multiply, FMA or division reads one; adds and compares take them at full speed;
// x times 2^24 here made log of subnormals 10x slower than of normal x): with s = 2^mant
// for a subnormal x (else 0), x's bits or s's are 2^mant + i, i x's bits, and less s
// (exact) that is i = xs, normal. *e's offset, s (bias + mant - 1) 2^-mant, is exact and
// enters the multiply-add that int_float's subtraction becomes. The C backend's form
// selects xs by s's compare (not x's again: gcc 12's jump threading turns a condition two
// selects share into branches, and the loop then does not vectorize), which gcc makes an
// unmasked OR and a masked subtract: its log of normal x 7% slower than with the multiply
// (AVX-512; Zen 3's code: the same), where the OR of s's bits was 15%.
static LExpr *unsubnormal(VM *m, LExpr *x, LExpr **e) {
  double two_p = ldexp(1, m->f->mant);
  LExpr *s = let(m, sel(m, lt(m, x, m->f->min_normal), K(m, two_p), K(m, 0))), *xs, *k, *f;
  if (m->c_source)
    xs = let(m, sel(m, gt(m, s, 0), sub(m, fbits(m, ibin(m, OP_BITWISE_OR, bits(m, x), I(m, bits_of(m, two_p)))),
                                        K(m, two_p)), x));
  else
    xs = let(m, sub(m, fbits(m, ibin(m, OP_BITWISE_OR, bits(m, x), bits(m, s))), s));
  decompose(m, xs, &k, &f);
  LExpr *ks = fbits(m, ibin(m, OP_ADD, k, I(m, bits_of(m, m->f->shift))));  // shift + k
  double off = ldexp(m->f->bias + m->f->mant - 1, -m->f->mant);
  *e = let(m, sub(m, fmadd(m, s, K(m, -off), ks), K(m, m->f->shift)));
  return f;
}

static LExpr *vm_log(VM *m, LExpr *x, LogBase base) {
  LExpr *e, *f = unsubnormal(m, x, &e);
  LExpr *r;
  if (base == LOG_E) {
    r = log_parts(m, e, f);
  } else {  // e + log(1 + f) / ln2, e log10(2) + log(1 + f) / ln10: f times c in two parts
    const double *hi = base == LOG_2 ? LOG2E_HI : INV_LN10_HI, *lo = base == LOG_2 ? LOG2E_LO : INV_LN10_LO;
    LExpr *t = let(m, log1p_tail(m, f));
    LExpr *rest = base == LOG_2 ? mul(m, f, K(m, pick2(m, lo)))
                                : fmadd(m, f, K(m, pick2(m, lo)), mulk(m, e, pick(m, LG2_LO_F32, LG2_LO_F64)));
    r = fmadd(m, f, K(m, pick2(m, hi)), fmadd(m, t, K(m, pick2(m, hi)), rest));
    r = base == LOG_2 ? add(m, r, e) : fmadd(m, e, K(m, pick(m, LG2_HI_F32, LG2_HI_F64)), r);
  }
  return log_special(m, x, r, 0);
}

static LExpr *vm_log1p(VM *m, LExpr *x) {
  LExpr *u = let(m, addk(m, x, 1)), *k, *f;
  decompose_by(m, u, &k, &f, m->fma);
  LExpr *e = let(m, int_float(m, k));
  // u's rounding error, x - (u - 1): u - 1 is exact while u < 2^p (a multiple of u's
  // ULP, and 1 one too) and then within a factor 2 of x, so the difference is exact too
  // (x <= 1: Fast2Sum). Beyond, c is off by up to u's ULP, 2^-p of u, which moves the
  // result (above p ln 2) by ~2^-p, a small part of its ULP; inf gives NaN, replaced.
  LExpr *c = sub(m, x, addk(m, u, -1));
  if (!m->fma) {
    LExpr *down = pow2(m, neg(m, sel(m, gt(m, e, 100), K(m, 100), e)), 0);  // 2^-e
    LExpr *g = let(m, fmadd(m, c, down, f));
    LExpr *r = log_special(m, x, log_parts(m, e, g), -1);
    return sel(m, eq(m, x, 0), x, r);
  }
  // FMA: 2g = c 2^(1-k) + 2f with 2^(1-k) from k's bits: its exponent field bias + 1 - k
  // is in [0, bias + p + 1] for every u in [2^-p, inf) (x > -1 makes u >= 2^-p; k = 128,
  // f64 1024, gives +0, where c is 0), so no clamp; 2f = 2m - 2 exact (decompose_by).
  // log1p has x's sign: -0's (the sum makes it +0) comes back by copysign, not a compare.
  LExpr *down = fbits(m, ishl(m, ibin(m, OP_SUB, I(m, m->f->bias + 1), k), m->f->mant));
  LExpr *g2 = let(m, lx_fma(m->cx, c, down, f));  // f: 2f here
  return copysign_(m, log_special(m, x, log_parts_f2(m, e, g2), -1), x);
}

// log(1 + e^a) (softplus's, logsigmoid's) as max(a, 0) + log1p(e^-|a|): e^-|a| is in
// [0, 1] (or NaN), so 1 + v is in [1, 2] and needs none of log1p's special values, its
// subnormal scale or the clamp of its 2^-e (e is 0 or 1: 2^-e = 1 - e/2); a NaN a gives
// a NaN v, and the rounding error of 1 + v (NaN) carries it into the result. For a > 0 the
// sum a + log1p(e^-a) rounds once more, a term below ln 2 against a result above it.
static LExpr *vm_log1p_exp(VM *m, LExpr *a) {
  LExpr *v = let(m, exp_nonpos(m, let(m, neg(m, fabs_(m, a))))), *l;
  if (f32(m)) {
    // log1p(v) = 2 atanh(s), s = v / (2 + v) <= 1/3, with no reduction: w = 2s = v / (1 +
    // v/2), 2 atanh(w/2) = w + w z Q(z), z = w^2, Q = LOG1PE_F32 scaled (c_j / (8 4^j):
    // exact). v below 2^-30 takes 2^-30 here (the select below returns v there), so no
    // lane forms a subnormal (w^2 would below 2^-63).
    LExpr *vl = let(m, sel(m, lt(m, v, 0x1p-30), K(m, 0x1p-30), v));
    LExpr *d = let(m, fmadd(m, vl, K(m, 0.5), K(m, 1)));
    LExpr *w = let(m, dvd(m, vl, d)), *z = let(m, mul(m, w, w));
    double q[LEN(LOG1PE_F32)];
    for (int j = 0; j < LEN(q); j++)
      q[j] = ldexp(LOG1PE_F32[j], -3 - 2 * j);
    // w's two roundings (d's and the quotient's), undone to first order: with d + ed = 1 + v/2
    // exactly and v - w d = rem exactly (FMAs), v / (1 + v/2) = w + (rem - w ed) / d, and
    // 1/d (d in [1, 1.5]) as 2.9 / 2 - d/2... (a linear fit: 6% off, of a term below w's ULP)
    LExpr *ed = fmadd(m, vl, K(m, 0.5), sub(m, K(m, 1), d));
    LExpr *num = fmadd(m, neg(m, w), ed, fmadd(m, neg(m, w), d, vl));
    LExpr *dl = mul(m, num, fmadd(m, d, K(m, -0.5), K(m, 1.45)));
    l = add(m, w, fmadd(m, mul(m, w, z), horner(m, z, q, LEN(q)), dl));  // one rounding at l's scale
  } else {
    LExpr *u = let(m, addk(m, v, 1)), *k, *f;
    decompose(m, u, &k, &f);
    LExpr *e = let(m, int_float(m, k));
    LExpr *c = sub(m, v, addk(m, u, -1));  // Fast2Sum: v <= 1
    LExpr *g = let(m, fmadd(m, c, fmadd(m, e, K(m, -0.5), K(m, 1)), f));
    l = log_parts(m, e, g);
  }
  LExpr *r = add(m, sel(m, gt(m, a, 0), a, K(m, 0)), l);
  // far below 0, log1p(v) rounds to v (v < 2^-24, f64 2^-53), and v, e^a rounded once, is
  // the result: the polynomial on a subnormal v would round again (softplus(-100) 4 units off)
  r = sel(m, lt(m, a, pick(m, -17, -38)), v, r);
  // where e^a itself overflows, log1p(exp(a)) is inf, as PyTorch computes it (softplus
  // above its threshold never gets here; a larger threshold, or the ops written out, do):
  // above the largest a whose e^a is finite (f32 88.7228317, f64 709.782712893384)
  return sel(m, gt(m, a, pick(m, 88.72283172607421875, 709.782712893384)), K(m, INFINITY), r);
}

// tanh(log(1 + e^a)) (mish's x tanh(softplus(x))): with y = 1 + e^a, (y^2 - 1) / (y^2 + 1),
// in u = e^-|a| in (0, 1] (or NaN): a > 0 gives (1 + 2u) / (1 + 2u + 2u^2), else
// h / (h + 1) with h = u (u + 2) / 2. As t = N / D, N = q^2 + 2u and D = N + 2z^2 with
// (q, z) = (1, u) or (u, 1): N and D round once each (FMA), and D's change from N's
// rounding nearly cancels in N / D. For a < -0.3 (h < 1) the result is h (1 - t), one FMA:
// t's error shrinks by h / (1 + h) there, which leaves u's and N's (f32: max 2.91 ULP for
// mish on a dense sweep, main's log1p and tanh 3.15; f64 3.01, main 3.22). No log, its
// division and polynomial, and no second exp: the kernel's dependency chain is exp, two
// FMAs, the division (LLVM AVX-512 loop 95 -> 43 instructions). a = inf: 1; -inf: 0; NaN:
// NaN; -0: 3/5.
static LExpr *vm_tanh_log1p_exp(VM *m, LExpr *a) {
  LExpr *u = let(m, exp_nonpos(m, let(m, neg(m, fabs_(m, a))))), *pos = let(m, gt(m, a, 0));
  LExpr *q = let(m, sel(m, pos, K(m, 1), u)), *z = let(m, sel(m, pos, u, K(m, 1)));
  LExpr *n = let(m, fmadd(m, q, q, add(m, u, u)));
  LExpr *t = let(m, dvd(m, n, fmadd(m, add(m, z, z), z, n)));
  LExpr *h = let(m, mulk(m, n, 0.5));
  return sel(m, gt(m, a, -0.3), t, fmadd(m, neg(m, h), t, h));
}

// ---- tanh, erf, erfc ----

// The small path is x + x (z P(z)) with z = x^2 + 2^-90 (f64 2^-600): z P(z) stays normal
// for every x, and the product with x is exact inside the FMA, so no lane forms a subnormal
// (x x^2 is one below |x| < 2^-42, and an FMA with a subnormal operand is slow on x86:
// mish's tanh of a tiny softplus once). The 2^-90 moves z P(z) by at most 2^-90 / 3,
// relative 2^-66 of the result (where |x| < 2^-33; above, it is below z's rounding). (Without
// FMA, x x is still formed: subnormal for |x| < 2^-63, f64 2^-511.)
static LExpr *vm_tanh(VM *m, LExpr *x) {
  LExpr *a = let(m, fabs_(m, x)), *z = let(m, fmadd(m, x, x, K(m, pick(m, 0x1p-90, 0x1p-600))));
  LExpr *small = f32(m) ? horner(m, z, TANH_F32, LEN(TANH_F32)) : horner(m, z, TANH_F64, LEN(TANH_F64));
  small = fmadd(m, x, mul(m, z, small), x);
  LExpr *amax = K(m, pick(m, 9.5, 19.5));
  LExpr *e = exp_normal(m, let(m, mulk(m, sel(m, gt(m, a, pick(m, 9.5, 19.5)), amax, a), 2)));
  LExpr *big = sub(m, K(m, 1), dvd(m, K(m, 2), addk(m, e, 1)));
  return copysign_(m, sel(m, lt(m, a, 0.625), small, big), x);  // x's sign (-0 included)
}

// x P(z), P = ERF_F32/64 with its constant in two parts: x c0 exact in the fused form.
static LExpr *erf_small(VM *m, LExpr *x, LExpr *z) {
  LExpr *p1 = f32(m) ? horner(m, z, ERF_F32 + 1, LEN(ERF_F32) - 1) : horner(m, z, ERF_F64 + 1, LEN(ERF_F64) - 1);
  LExpr *rest = mul(m, x, fmadd(m, z, p1, K(m, pick2(m, TWO_OVER_SQRTPI_LO))));
  return fmadd(m, x, K(m, pick2(m, TWO_OVER_SQRTPI_HI)), rest);
}

// (1 - e^q) / h for erf's tail, h = 1 or 2 (gelu's half), q = log erfc(a) by ERFQ: a in
// [0.875, inf] or NaN.
static LExpr *erf_tail(VM *m, LExpr *a, int h) {
  double one = pick(m, 3.92, 5.93);  // erf rounds to 1 from 3.9193 (f32), 5.9215 (f64)
  LExpr *ta = let(m, addk(m, sel(m, gt(m, a, one), K(m, one), a), -0.875));
  LExpr *q = let(m, f32(m) ? horner(m, ta, ERFQ_F32, LEN(ERFQ_F32)) : horner(m, ta, ERFQ_F64, LEN(ERFQ_F64)));
  // 1 - e^q = (1 - 2^n) - 2^n (e^r - 1), rounded once (1 - 2^n is exact for n >= -p;
  // below, erfc < 2^-p and 1 - erfc is 1 or its neighbour, within 0.7 ULP). At the clamp
  // erfc is below half an ULP of 1 (f32 2.96e-8 < 2^-25), so every |x| beyond gives 1.
  // With FMA the reduction r = q - n ln2 takes ln2 in one part (as the format rounds it):
  // n ln2's error, |n| 2^-p ln2 (|n| <= 25, f64 54), reaches erf times erfc(a) = e^q <=
  // 0.22, 0.03 of its ULP at most (n = -2 at a = 0.875; erfc shrinks faster than n grows).
  // The 1/h is in 2^n's exponent (h = 2: 2^(n-1), normal for n >= -125).
  int off = m->f->bias - (h == 2);
  ExpRed e = {0};
  if (m->fma) {
    double k = m->f->shift + off;
    e.t = let(m, fmadd(m, q, K(m, LOG2E), K(m, k)));
    e.rs = let(m, fmadd(m, sub(m, e.t, K(m, k)), K(m, -LN2), q));
  } else {
    e = exp_reduce(m, q, 1, off, false);
  }
  LExpr *p2 = let(m, pow2_t(m, e.t));
  return fmadd(m, neg(m, p2), expm1_r(m, e.rs), sub(m, K(m, 1.0 / h), p2));
}

static LExpr *vm_erf(VM *m, LExpr *x) {
  LExpr *a = let(m, fabs_(m, x)), *z = let(m, mul(m, x, x));
  LExpr *small = erf_small(m, x, z);
  LExpr *big = erf_tail(m, a, 1);
  return copysign_(m, sel(m, lt(m, a, 0.875), small, big), x);  // x's sign (-0 included)
}

// gelu(x) = x Phi, Phi = (1 + erf(t)) / 2, t = x / sqrt(2) (PyTorch's x * 0.5 * (1 + erf(t)),
// the 0.5 moved into Phi: exact). |t| < 0.875: Phi = (1/2 + t C/2) + t (z P1(z) + CL) / 2
// (erf_small's polynomial, C = CH + CL): 1/2 + t CH/2 is near exact (the product inside
// the FMA, the sum's rounding far below Phi's ULP where they cancel), and the rest rounds
// once at Phi's scale, where the formula rounds erf at erf's (up to 4x coarser near t =
// -0.875; f32 gelu for x in (-1.236, 8): max 3.10 ULP before, 2.64 now, against the
// formula in f64; f64 5.31 -> 5.10). Else 1/2 + copysign((1 - e^q) / 2, t) by erf's tail,
// 2^(n-1) its scale: the formula's values. No 1 + erf, no x * 0.5.
static LExpr *vm_gelu(VM *m, LExpr *x) {
  LExpr *t = let(m, mulk(m, x, 0.70710678118654752440)), *a = let(m, fabs_(m, t)), *z = let(m, mul(m, t, t));
  double c[16];
  int n = (f32(m) ? LEN(ERF_F32) : LEN(ERF_F64)) - 1;
  TD_ASSERT(n <= LEN(c));
  for (int j = 0; j < n; j++)
    c[j] = (f32(m) ? ERF_F32 : ERF_F64)[j + 1] / 2;
  LExpr *v = fmadd(m, z, horner(m, z, c, n), K(m, pick2(m, TWO_OVER_SQRTPI_LO) / 2));
  LExpr *small = fmadd(m, t, v, fmadd(m, t, K(m, pick2(m, TWO_OVER_SQRTPI_HI) / 2), K(m, 0.5)));
  LExpr *big = addk(m, copysign_(m, erf_tail(m, a, 2), t), 0.5);
  return mul(m, x, sel(m, lt(m, a, 0.875), small, big));
}

// c[j] of one of three tables by a's interval: a < 1.75, a < 4, else.
static LExpr *pick3(VM *m, LExpr *in_a, LExpr *in_b, const double (*c)[8], int j) {
  return sel(m, in_a, K(m, c[0][j]), sel(m, in_b, K(m, c[1][j]), K(m, c[2][j])));
}

// erfc(a) for a in [0.875, 27.3] (f64; f32 arguments in f64, where a^2 is exact):
// e^(-h) (1 - l) P(w) / (a Q(w)) with a^2 = h + l, w = 1/h.
static LExpr *erfc_tail(VM *d, LExpr *a, bool from_f32) {
  LExpr *h, *l = NULL;
  if (from_f32)
    h = let(d, mul(d, a, a));
  else
    two_prod(d, a, a, &h, &l);
  LExpr *w = let(d, dvd(d, K(d, 1), h)), *p, *q;
  if (from_f32) {
    p = horner(d, w, ERFC_F32_P, LEN(ERFC_F32_P));
    q = horner(d, w, ERFC_F32_Q, LEN(ERFC_F32_Q));
  } else {
    LExpr *in_a = let(d, lt(d, a, 1.75)), *in_b = let(d, lt(d, a, 4));
    p = pick3(d, in_a, in_b, ERFC_F64_P, 7);
    q = pick3(d, in_a, in_b, ERFC_F64_Q, 7);
    for (int j = 6; j >= 0; j--) {
      p = fmadd(d, p, w, pick3(d, in_a, in_b, ERFC_F64_P, j));
      q = fmadd(d, q, w, pick3(d, in_a, in_b, ERFC_F64_Q, j));
    }
  }
  LExpr *g = let(d, dvd(d, p, mul(d, q, a)));
  if (l)
    g = fmadd(d, neg(d, g), l, g);  // e^(-l) = 1 - l to within l^2
  return exp_full(d, neg(d, h), g);
}

static LExpr *vm_erfc(VM *m, LExpr *x) {
  VM d = vm_for(*m, DT_F64);
  bool from_f32 = f32(m);
  LExpr *xd = from_f32 ? let(&d, cast(&d, DT_F64, x)) : x;
  LExpr *a = let(&d, fabs_(&d, xd)), *z = let(&d, mul(&d, xd, xd));
  // 1 - x P(z) = (1 - c0 x) - x (c0lo + z P1(z))
  LExpr *p1 = fmadd(&d, z, horner(&d, z, ERF_F64 + 1, LEN(ERF_F64) - 1), K(&d, TWO_OVER_SQRTPI_LO[1]));
  LExpr *small = sub(&d, fmadd(&d, neg(&d, xd), K(&d, TWO_OVER_SQRTPI_HI[1]), K(&d, 1)), mul(&d, xd, p1));
  LExpr *t = sel(&d, lt(&d, a, 0.875), K(&d, 0.875), sel(&d, gt(&d, a, 27.3), K(&d, 27.3), a));
  LExpr *tail = let(&d, erfc_tail(&d, let(&d, t), from_f32));
  LExpr *big = sel(&d, lt(&d, xd, 0), sub(&d, K(&d, 2), tail), tail);
  LExpr *r = sel(&d, lt(&d, a, 0.875), small, big);
  return from_f32 ? cast(m, DT_F32, r) : r;
}

// ---- sin, cos ----
// Each reduction gives n (an integer, as a float) and r + rlo = x - n pi/2, |r| <= pi/4
// (to a little beyond), rlo below r's last bit; sincos_eval takes it from there.
typedef struct Reduced {
  LExpr *n, *r, *rlo;
} Reduced;

// a + b = s + t exactly, any a and b (Knuth's TwoSum).
static void two_sum(VM *m, LExpr *a, LExpr *b, LExpr **s, LExpr **t) {
  *s = let(m, add(m, a, b));
  LExpr *bb = let(m, sub(m, *s, a));
  *t = let(m, add(m, sub(m, a, sub(m, *s, bb)), sub(m, b, bb)));
}

// n = round(x 2/pi) for |x 2/pi| < 2^(p-2).
static LExpr *quadrant_n(VM *m, LExpr *x) {
  LExpr *t = let(m, fmadd(m, x, K(m, TWO_OVER_PI), K(m, m->f->shift)));
  return let(m, sub(m, t, K(m, m->f->shift)));
}

// f32 x, |x| < SIN_FAST_F32, in f32 lanes (FMA only): x - n P1 is exact (n P1 and x are
// multiples of 2^-23, or of x's ulp below 1, and the difference is below 1); n P2 exactly
// (FMA) and its difference from that by TwoSum; n P3 and n P4 into the low part. The
// closest an f32 below 2^17 comes to a multiple of pi/2 leaves r ~ 2^-30 (a float's
// spacing over the 2^23 floats of the top binade): the low part's error, ~2^-56, is
// then 2^-26 of r.
static Reduced reduce_f32_lanes(VM *m, LExpr *x) {
  Reduced red;
  red.n = quadrant_n(m, x);
  LExpr *r0 = let(m, fmadd(m, red.n, K(m, -PIO2_F32L[0]), x));
  LExpr *qh, *ql, *s, *e;
  two_prod(m, red.n, K(m, PIO2_F32L[1]), &qh, &ql);
  two_sum(m, r0, neg(m, qh), &s, &e);
  LExpr *lo = fmadd(m, red.n, K(m, -PIO2_F32L[3]), fmadd(m, red.n, K(m, -PIO2_F32L[2]), sub(m, e, ql)));
  fast_two_sum(m, s, let(m, lo), &red.r, &red.rlo);
  return red;
}

// f64 x (|x| < 2^23), or f32 x in f64 (|x| < 2^25): n pi/2's pieces each multiply exactly.
static Reduced reduce_f64(VM *d, LExpr *xd, bool from_f32) {
  Reduced red = {quadrant_n(d, xd), NULL, NULL};
  if (from_f32) {  // x - n pi/2 to ~2^-80 absolute: f32's result rounds once, from it
    LExpr *r = xd;
    for (int i = 0; i < LEN(PIO2_F32); i++)
      r = let(d, fmadd(d, red.n, K(d, -PIO2_F32[i]), r));
    red.r = r;
    return red;
  }
  // r + rlo: x - n P1 exact; r1 = a - n P2 with its rounding e1 (a - r1 is exact where
  // r is small: a, n P2 or a, r1 are within a factor 2); n P3, an exact product,
  // subtracted by TwoSum (x near a multiple of pi/2 leaves r ~ 2^-60, far below n P3, so
  // a rounded step there is 5 ULP off); n P4 rounds once
  LExpr *a = let(d, fmadd(d, red.n, K(d, -PIO2_F64[0]), xd)), *s2, *e2;
  LExpr *r1 = let(d, fmadd(d, red.n, K(d, -PIO2_F64[1]), a));
  LExpr *e1 = fmadd(d, red.n, K(d, -PIO2_F64[1]), sub(d, a, r1));
  two_sum(d, r1, neg(d, mulk(d, red.n, PIO2_F64[2])), &s2, &e2);
  LExpr *lo = let(d, fmadd(d, red.n, K(d, -PIO2_F64[3]), add(d, e1, e2)));
  fast_two_sum(d, s2, lo, &red.r, &red.rlo);
  return red;
}

// Any finite f32 x, in f64 (Payne-Hanek without a table): x 2/pi mod 4 as the sum of
// x c_i mod 4 over 2/pi's 29-bit pieces c_i, each product exact (24 + 29 bits) and each
// remainder exact (p - 4 trunc(p/4)); the sum kept in two parts (TwoSum), then n its
// nearest integer and r = (sum - n) pi/2 as a double-double. A piece whose product is a
// multiple of 4 adds 0; the pieces reach 2^-204, so x c (x < 2^128) is known to 2^-76.
static Reduced reduce_payne_hanek(VM *d, LExpr *xd) {
  LExpr *s = NULL, *e = NULL;
  for (int i = 0; i < LEN(TWO_OVER_PI_29); i++) {
    LExpr *p = let(d, mulk(d, xd, TWO_OVER_PI_29[i]));
    LExpr *f = let(d, sub(d, p, mulk(d, lx_unary(d->cx, OP_TRUNC, DT_F64, mulk(d, p, 0.25)), 4)));
    if (!s) {
      s = f;
      continue;
    }
    LExpr *t;
    two_sum(d, s, f, &s, &t);
    e = e ? let(d, add(d, e, t)) : t;
  }
  Reduced red;
  red.n = let(d, rint_(d, s));
  LExpr *h, *l, *rh, *rl;
  two_sum(d, let(d, sub(d, s, red.n)), e, &h, &l);  // s - n exact
  two_prod(d, h, K(d, PIO2_HI), &rh, &rl);
  rl = fmadd(d, l, K(d, PIO2_HI), fmadd(d, h, K(d, PIO2_LO), rl));
  fast_two_sum(d, rh, let(d, rl), &red.r, &red.rlo);
  return red;
}

// sin (cos: the next quadrant) of the reduced argument, in m's dtype: the polynomials
// s and c (SIN_F32D and COS_F32D for f32 either way; rounded to f32 in f32 lanes).
static LExpr *sincos_eval(VM *d, Reduced red, bool cosine, const double *sp_c, int nsp, const double *cp_c,
                          int ncp) {
  LExpr *r = red.r, *rlo = red.rlo;
  LExpr *z = let(d, mul(d, r, r));
  LExpr *sp = horner(d, z, sp_c, nsp), *cp = horner(d, z, cp_c, ncp);
  // sin(r + rlo) = r + (r^3 S + rlo (1 - r^2/2))
  LExpr *sin_r = rlo ? add(d, r, let(d, fmadd(d, mul(d, r, z), sp, fmadd(d, mulk(d, rlo, -0.5), z, rlo))))
                     : fmadd(d, mul(d, r, z), sp, r);
  LExpr *cos_r;
  if (rlo && d->fma) {  // cos(r + rlo) = w + (dw + (z^2 C - r rlo)): w = 1 - (r/2) r
                        // fused, its rounding dw = (1 - w) - (r/2) r fused too (1 - w exact)
    LExpr *hr = let(d, mulk(d, r, -0.5)), *w = let(d, fmadd(d, hr, r, K(d, 1)));
    LExpr *dw = fmadd(d, hr, r, sub(d, K(d, 1), w));
    cos_r = add(d, w, add(d, dw, fmadd(d, mul(d, z, z), cp, neg(d, mul(d, r, rlo)))));
  } else if (rlo) {  // the same, w = 1 - h with h = z/2 and z + zlo = r^2 exact (Dekker)
    LExpr *zh, *zl;
    two_prod(d, r, r, &zh, &zl);
    LExpr *h = let(d, mulk(d, zh, 0.5)), *w = let(d, sub(d, K(d, 1), h));
    LExpr *tail = fmadd(d, mul(d, z, z), cp, neg(d, fmadd(d, zl, K(d, 0.5), mul(d, r, rlo))));
    cos_r = add(d, w, add(d, sub(d, sub(d, K(d, 1), w), h), tail));
  } else {
    cos_r = fmadd(d, z, fmadd(d, z, cp, K(d, -0.5)), K(d, 1));
  }
  // the quadrant q = (n + cosine) mod 4 in floats (integer ops and int compares here keep
  // LLVM's SLP vectorizer off a loop that sums the results): n/4 - 3/8 rounds to floor(n/4)
  LExpr *nc = cosine ? let(d, addk(d, red.n, 1)) : red.n;
  LExpr *q = let(d, sub(d, nc, mulk(d, rint_(d, addk(d, mulk(d, nc, 0.25), -0.375)), 4)));
  LExpr *v = let(d, sel(d, or_(d, eq(d, q, 1), eq(d, q, 3)), cos_r, sin_r));
  return sel(d, gt(d, q, 1.5), neg(d, v), v);
}

// sin or cos of an f32 x in f64 from a reduction there, rounded once to f32.
static LExpr *sincos_f32_in_f64(VM *m, LExpr *xd, bool cosine, bool huge) {
  VM d = vm_for(*m, DT_F64);
  Reduced red = huge ? reduce_payne_hanek(&d, xd) : reduce_f64(&d, xd, true);
  return cast(m, DT_F32, sincos_eval(&d, red, cosine, SIN_F32D, LEN(SIN_F32D), COS_F32D, LEN(COS_F32D)));
}

// Whether f32 sin and cos reduce in f32 lanes here (FMA makes x - n P1 exact).
static bool f32_lanes(const VM *m) { return m->fma; }

// |x| below which vm_sincos holds (and from which a loop takes the cold path).
static double sin_limit(const VM *m, DType dt) {
  if (dt == DT_F64)
    return SIN_LIMIT_F64;
  return f32_lanes(m) ? SIN_FAST_F32 : SIN_LIMIT_F32;
}

// sin x (cos x) for |x| < sin_limit: f64 in f64; f32 in f32 lanes (FMA), else in f64,
// where the reduction is exact and the result rounds once. sin keeps the sign of a zero.
static LExpr *vm_sincos(VM *m, LExpr *x, bool cosine) {
  LExpr *v;
  if (!f32(m))
    v = sincos_eval(m, reduce_f64(m, x, false), cosine, SIN_F64, LEN(SIN_F64), COS_F64, LEN(COS_F64));
  else if (f32_lanes(m))
    v = sincos_eval(m, reduce_f32_lanes(m, x), cosine, SIN_F32D, LEN(SIN_F32D), COS_F32D, LEN(COS_F32D));
  else
    v = sincos_f32_in_f64(m, let(m, cast(m, DT_F64, x)), cosine, false);
  return cosine ? v : sel(m, eq(m, x, 0), x, v);
}

// f32 sin x (cos x) for every x, without a branch: vm_sincos below the limit, the
// Payne-Hanek reduction (in f64) above, both computed, a select picks. The cold path's
// second pass, and the loops that cannot take one (a GEMM tile's epilogue).
static LExpr *vm_sincos_full(VM *m, LExpr *x, bool cosine) {
  TD_ASSERT(f32(m));
  LExpr *fast = let(m, vm_sincos(m, x, cosine));
  LExpr *huge = let(m, sincos_f32_in_f64(m, let(m, cast(m, DT_F64, x)), cosine, true));
  return sel(m, lt(m, fabs_(m, x), sin_limit(m, DT_F32)), fast, huge);
}

// ---- pow ----


// log(ax) = hi + lo to about 2^-68 relative (f32: 2^-40), for a positive finite ax (0
// and inf give garbage the caller replaces).
static void log_dd(VM *m, LExpr *ax, LExpr **hi, LExpr **lo) {
  LExpr *e, *f = unsubnormal(m, ax, &e);
  // s + sl = f / (2 + f)
  LExpr *dh = let(m, addk(m, f, 2)), *dl = let(m, add(m, sub(m, K(m, 2), dh), f));
  LExpr *s = let(m, dvd(m, f, dh)), *rem;
  if (m->fma) {
    rem = lx_fma(m->cx, neg(m, s), dh, f);
  } else {
    LExpr *ph, *pl;
    two_prod(m, s, dh, &ph, &pl);
    rem = sub(m, sub(m, f, ph), pl);
  }
  // 1 / (2 + f) = (1 - s) / 2 (s's rounding is far below what sl needs): one division
  LExpr *sl = let(m, mul(m, sub(m, rem, mul(m, s, dl)), mulk(m, sub(m, K(m, 1), s), 0.5)));
  // log(1 + f) = 2s + 2sl + (2/3) s^3 + s z^2 R(z): the s^3 term as a double-double
  LExpr *zh, *zl, *ch, *cl, *th, *tl;
  two_prod(m, s, s, &zh, &zl);
  zl = let(m, fmadd(m, mulk(m, s, 2), sl, zl));
  two_prod(m, s, zh, &ch, &cl);
  cl = let(m, fmadd(m, sl, zh, fmadd(m, s, zl, cl)));
  two_prod(m, K(m, pick2(m, TWO_THIRDS_HI)), ch, &th, &tl);
  tl = fmadd(m, K(m, pick2(m, TWO_THIRDS_LO)), ch, fmadd(m, K(m, pick2(m, TWO_THIRDS_HI)), cl, tl));
  LExpr *rest = mul(m, mul(m, s, mul(m, zh, zh)), horner(m, zh, LOGDD_F64 + 1, LEN(LOGDD_F64) - 1));
  LExpr *lh, *ll;
  fast_two_sum(m, mulk(m, s, 2), th, &lh, &ll);
  ll = add(m, ll, add(m, tl, fmadd(m, sl, K(m, 2), rest)));
  LExpr *hh, *hl;
  fast_two_sum(m, mulk(m, e, pick(m, LN2P_HI_F32, LN2_HI_F64)), lh, &hh, &hl);
  *hi = hh;
  *lo = let(m, add(m, hl, fmadd(m, e, K(m, pick(m, LN2P_LO_F32, LN2_LO_F64)), ll)));
}

// IEEE 754's pow around core, |x|^y for finite nonzero |x| (C99 Annex F, as NumPy and
// PyTorch give).
static LExpr *pow_special(VM *m, LExpr *x, LExpr *y, LExpr *ax, LExpr *core) {
  // each condition used once (see unsubnormal): y is an odd integer iff y - 2 trunc(y/2)
  // is +-1 (exact below 2^53; above, every float is even)
  LExpr *trunc_y = lx_unary(m->cx, OP_TRUNC, m->dt, y);
  LExpr *two_half = mulk(m, lx_unary(m->cx, OP_TRUNC, m->dt, mulk(m, y, 0.5)), 2);
  LExpr *odd = eq(m, fabs_(m, sub(m, y, two_half)), 1);
  // |x| 0 or inf: inf where (|x| < 1) == (y < 0), else 0
  LExpr *edge = or_(m, eq(m, ax, 0), eq(m, ax, INFINITY));
  LExpr *inf_side = lx_binary(m->cx, OP_EQ, DT_BOOL, lt(m, ax, 1), lt(m, y, 0));
  LExpr *r = let(m, sel(m, edge, sel(m, inf_side, K(m, INFINITY), K(m, 0)), core));
  r = let(m, sel(m, and_(m, cmp(m, OP_LT, bits(m, x), I(m, 0)), odd), neg(m, r), r));
  LExpr *neg_fin = and_(m, lt(m, x, 0), gt(m, x, -INFINITY));
  r = sel(m, and_(m, neg_fin, cmp(m, OP_NE, trunc_y, y)), K(m, NAN), r);
  r = sel(m, or_(m, cmp(m, OP_NE, x, x), cmp(m, OP_NE, y, y)), add(m, x, y), r);
  r = sel(m, and_(m, eq(m, ax, 1), eq(m, fabs_(m, y), INFINITY)), K(m, 1), r);
  return sel(m, or_(m, eq(m, x, 1), eq(m, y, 0)), K(m, 1), r);
}

// f32 pow in f32 lanes: log x as a double-float (log_dd, to 2^-40), y log x as one (FMA's
// exact product), e^(ph + pl) with pl and r's own rounding (times e^r) added to the
// polynomial's small part before the sum with 1: |y log x| <= 104 where the result is
// finite and nonzero, so the exponent is known to ~2^-30 and the result to about 1 ULP.
static LExpr *pow_f32(VM *m, LExpr *x, LExpr *y) {
  LExpr *ax = let(m, fabs_(m, x)), *lh, *ll, *ph, *pl;
  log_dd(m, ax, &lh, &ll);
  two_prod(m, y, lh, &ph, &pl);
  pl = let(m, fmadd(m, y, ll, pl));
  // pl only where e^ph is finite and nonzero (Dekker's split of a huge y overflows)
  pl = let(m, sel(m, and_(m, lt(m, fabs_(m, ph), 200), cmp(m, OP_EQ, pl, pl)), pl, K(m, 0)));
  // log's low part is not below ph's last bit; an infinite ph keeps a low part of 0 (the
  // sum's error term is inf - inf there)
  LExpr *ph2, *pl2;
  fast_two_sum(m, ph, pl, &ph2, &pl2);
  pl = let(m, sel(m, lt(m, fabs_(m, ph), 200), pl2, K(m, 0)));
  ph = ph2;
  LExpr *c = clamp(m, ph, -104, 88.8);
  ExpRed e = exp_reduce(m, c, 1, 2 * m->f->bias, true);
  LExpr *r = e.rs, *rlo = e.rlo;
  int np;
  const double *p = exp_poly(m, &np);
  // e^(r + c0) = e^r + c0 e^r (c0 = pl + rlo < 2^-17): q = e^r - 1, u = e^r - 1 - r + c0 e^r
  LExpr *c0 = let(m, add(m, rlo, pl)), *rr = let(m, mul(m, r, r)), *pp = let(m, horner(m, r, p, np));
  LExpr *q = fmadd(m, rr, pp, r);
  LExpr *u = let(m, fmadd(m, rr, pp, fmadd(m, c0, q, c0)));
  LExpr *core = let(m, scale2_t(m, add(m, r, u), NULL, e.t, sub_below(m, ph)));
  return pow_special(m, x, y, ax, core);
}

// x^1.5 as x sqrt(x) with both roundings undone to first order: s = sqrt(x), d = s^2 - x
// exactly (an FMA; else two products), x s = p + pe exactly, and sqrt(x) = s - d / (2s) (1 + O(2^-24)),
// so x^1.5 = p + (pe - d s / 2) (x / s for s: a relative 2^-24 of a term below p's last
// bit), rounded once: within 0.5 ULP and ~2^-20 of one while pe and d are exact (results
// above 2^-101, f64 2^-968). Below, pe and d round to the subnormal spacing and the
// correction loses bits: measured (2*10^5 log-uniform x each) up to 0.99 ULP for normal
// results there (f64 0.99) and 0.70 units of the smallest subnormal for subnormal ones
// (f64 0.82). Where p is not finite (x huge, inf, NaN or negative) p itself, but
// pow(-inf, 1.5) = inf.
static LExpr *pow_three_halves(VM *m, LExpr *x) {
  LExpr *s = let(m, lx_unary(m->cx, OP_SQRT, m->dt, x)), *p, *pe, *d;
  two_prod(m, x, s, &p, &pe);
  if (m->fma) {  // the remainder of a correctly rounded sqrt is a float: one FMA
    d = let(m, lx_fma(m->cx, s, s, neg(m, x)));
  } else {
    LExpr *q, *qe;
    two_prod(m, s, s, &q, &qe);
    d = let(m, add(m, sub(m, q, x), qe));  // q - x exact (q within an ULP of x)
  }
  LExpr *r = let(m, add(m, p, fmadd(m, mulk(m, d, -0.5), s, pe)));
  r = let(m, sel(m, lt(m, p, INFINITY), r, p));
  return sel(m, eq(m, x, -INFINITY), K(m, INFINITY), r);
}

static LExpr *vm_pow(VM *m, LExpr *x, LExpr *y) {
  if (y->kind == LX_CONST) {  // PyTorch's own special exponents (pow_tensor_scalar)
    double b = y->f;
    if (b == 2)
      return mul(m, x, x);
    if (b == 3)
      return mul(m, mul(m, x, x), x);
    if (b == 0.5)
      return lx_unary(m->cx, OP_SQRT, m->dt, x);
    if (b == -0.5)
      return dvd(m, K(m, 1), lx_unary(m->cx, OP_SQRT, m->dt, x));
    if (b == -1)
      return dvd(m, K(m, 1), x);
    if (b == -2)
      return dvd(m, K(m, 1), mul(m, x, x));
    if (b == 1)  // std::pow(x, 1) is x
      return x;
    if (b == 1.5)  // not PyTorch's: std::pow's value, to its accuracy, for less
      return pow_three_halves(m, x);
  }
  if (f32(m))
    return pow_f32(m, x, y);
  VM d = vm_for(*m, DT_F64);
  LExpr *ax = let(&d, fabs_(&d, x)), *lh, *ll, *ph, *pl;
  log_dd(&d, ax, &lh, &ll);
  two_prod(&d, y, lh, &ph, &pl);
  // pl matters only where e^ph is finite and nonzero; without FMA, Dekker's split of a
  // huge y overflows (to NaN) where ph itself is harmless (x = 1)
  pl = let(&d, fmadd(&d, y, ll, pl));
  pl = let(&d, sel(&d, and_(&d, lt(&d, fabs_(&d, ph), 800), cmp(&d, OP_EQ, pl, pl)), pl, K(&d, 0)));
  // e^(ph + pl): pl joins the reduced argument
  LExpr *c = clamp(&d, ph, -746, 709.8);
  ExpRed e = exp_reduce(&d, c, 1, 2 * d.f->bias, false);
  LExpr *r = let(&d, add(&d, e.rs, pl));
  LExpr *core = scale2_t(&d, expm1_r(&d, r), NULL, e.t, sub_below(&d, ph));
  return pow_special(&d, x, y, ax, core);
}

// ---- hypot ----

// hypot(x, y): f32 as sqrt(x^2 + y^2) in f64 (both squares exact, the sum rounded once,
// sqrt correctly rounded, then to f32: within 0.5 ULP and a hair); f64 as
// hi sqrt(1 + (lo/hi)^2), hi = max(|x|, |y|) (no overflow or underflow on the way; about
// 1 ULP). inf if either is inf, NaN included (C99 Annex F); else NaN if either is.
static LExpr *vm_hypot(VM *m, LExpr *x, LExpr *y) {
  LExpr *ax = let(m, fabs_(m, x)), *ay = let(m, fabs_(m, y)), *r;
  if (f32(m)) {
    VM d = vm_for(*m, DT_F64);
    LExpr *xd = let(&d, cast(&d, DT_F64, ax)), *yd = let(&d, cast(&d, DT_F64, ay));
    LExpr *sum = fmadd(&d, xd, xd, mul(&d, yd, yd));
    r = let(m, cast(m, DT_F32, lx_unary(m->cx, OP_SQRT, DT_F64, sum)));
  } else {
    // each condition used once (see unsubnormal): the compare is written twice
    LExpr *hi = let(m, sel(m, cmp(m, OP_GT, ay, ax), ay, ax)), *lo = let(m, sel(m, cmp(m, OP_GT, ay, ax), ax, ay));
    LExpr *q = let(m, dvd(m, lo, hi));
    LExpr *v = mul(m, hi, lx_unary(m->cx, OP_SQRT, m->dt, fmadd(m, q, q, K(m, 1))));
    r = let(m, sel(m, eq(m, add(m, hi, lo), 0), K(m, 0), v));  // 0/0 where both are 0 (NaN: not 0)
  }
  return sel(m, or_(m, eq(m, ax, INFINITY), eq(m, ay, INFINITY)), K(m, INFINITY), r);
}

// ---- the expansion ----

static bool is_trig(Op op) { return op == OP_SIN || op == OP_COS; }

// The value of unary op on x (a local or constant of dt), built.
static LExpr *build_unary(VM *m, Op op, LExpr *x) {
  switch (op) {
  case OP_EXP: return exp_full(m, x, NULL);
  case OP_EXP2: return vm_exp2(m, x);
  case OP_EXPM1: return vm_expm1(m, x);
  case OP_LOG: return vm_log(m, x, LOG_E);
  case OP_LOG2: return vm_log(m, x, LOG_2);
  case OP_LOG10: return vm_log(m, x, LOG_10);
  case OP_LOG1P: return vm_log1p(m, x);
  case OP_TANH: return vm_tanh(m, x);
  case OP_ERF: return vm_erf(m, x);
  case OP_ERFC: return vm_erfc(m, x);
  case OP_SIN:
  case OP_COS:
    if (!m->trig)  // f32 only (is_vm): no cold path here
      return vm_sincos_full(m, x, op == OP_COS);
    vec_push(&m->cx->arena, m->trig, x);  // its loop's cold path tests it
    return vm_sincos(m, x, op == OP_COS);
  default: td_unreachable();
  }
}

// The value of binary op (pow, hypot) on x and y (locals or constants of dt), built.
static LExpr *build_binary(VM *m, Op op, LExpr *x, LExpr *y) {
  return op == OP_POW ? vm_pow(m, x, y) : vm_hypot(m, x, y);
}

static bool prim_has(Op op, DType dt) {
  if (dt != DT_F32 && dt != DT_F64)
    return false;
  switch (op) {
  case OP_EXP: case OP_EXP2: case OP_EXPM1: case OP_LOG: case OP_LOG2: case OP_LOG10: case OP_LOG1P:
  case OP_TANH: case OP_ERF: case OP_ERFC: case OP_SIN: case OP_COS: case OP_POW: case OP_HYPOT:
    return true;
  default: return false;
  }
}

static bool composite_has(Op op, DType dt) {
  for (Op p = 0; p < OP_COUNT; p++)
    if (prim_has(p, dt) && op_formula_uses(op, dt, p))
      return true;
  return false;
}

bool vecmath_has(Op op, DType dt) {
  if (prim_has(op, dt))
    return true;
  if (!op_is_composite(op, dt))
    return false;
  // a composite's answer builds its formula for every primitive: kept (a fact of the
  // op table, the same for every program)
  static signed char known[OP_COUNT][2];
  signed char *k = &known[op][dt == DT_F64];
  if (!*k)
    *k = composite_has(op, dt) ? 1 : -1;
  return *k > 0;
}

// Whether e is built here (f64 sin and cos only where m collects their arguments for a
// cold path; f32's have a branch-free form for every argument).
static bool is_vm(const VM *m, const LExpr *e) {
  if ((e->kind != LX_UNARY && e->kind != LX_BINARY) || e->lanes != 1 || !vecmath_has(e->op, e->dt))
    return false;
  return !is_trig(e->op) || m->trig || e->dt == DT_F32;
}

static bool any_vm(const VM *m, const LExpr *e) {
  return e && (is_vm(m, e) || any_vm(m, e->a) || any_vm(m, e->b) || any_vm(m, e->c) || any_vm(m, e->idx.dyn));
}

// Formula f (ir/opmath.c) with each op in it built, operands left to right; an exp
// added to 1 is exp_plus1 (the sum rounds away what it flushes).
static LExpr *expand_formula(VM *m, LExpr *f, bool plus1) {
  if (f->kind == LX_UNARY && f->op == OP_EXP && plus1) {
    if (f->a->kind == LX_UNARY && f->a->op == OP_NEG)  // e^-a: the sign in the reduction
      return exp_plus1(m, let(m, expand_formula(m, f->a->a, false)), -1);
    return exp_plus1(m, let(m, expand_formula(m, f->a, false)), 1);
  }
  if (f->kind == LX_UNARY) {
    LExpr *a = expand_formula(m, f->a, false);
    return is_vm(m, f) ? build_unary(m, f->op, let(m, a)) : lx_unary(m->cx, f->op, f->dt, a);
  }
  if (f->kind != LX_BINARY)
    return f;
  bool one_plus = f->op == OP_ADD && f->a->kind == LX_CONST && f->a->f == 1;
  LExpr *a = expand_formula(m, f->a, false), *b = expand_formula(m, f->b, one_plus);
  if ((f->op == OP_POW || f->op == OP_HYPOT) && is_vm(m, f))
    return build_binary(m, f->op, let(m, a), let(m, b));
  return lx_binary(m->cx, f->op, f->dt, a, b);
}

// Whether e is log(1 + e^a), both ops built here, of one dtype (vm_log1p_exp's).
static bool is_log1p_exp(const VM *m, const LExpr *e) {
  return e->kind == LX_UNARY && e->op == OP_LOG1P && e->a->kind == LX_UNARY && e->a->op == OP_EXP &&
         e->a->dt == e->dt && is_vm(m, e) && is_vm(m, e->a);
}

// e with every op built here replaced, lets into m->pre. Expressions may be shared
// between statements, so the path to a replaced node is copied, not edited.
static LExpr *expand(VM *m, LExpr *e) {
  if (!any_vm(m, e))
    return e;
  LExpr *n = arena_alloc(&m->cx->arena, sizeof *n);
  *n = *e;
  e = n;
  if (e->kind == LX_UNARY && e->op == OP_TANH && is_log1p_exp(m, e->a) && e->a->dt == e->dt && is_vm(m, e)) {
    VM mm = vm_for(*m, e->dt);  // tanh(log(1 + e^a)): vm_tanh_log1p_exp
    return vm_tanh_log1p_exp(&mm, let(&mm, expand(m, e->a->a->a)));
  }
  if (is_log1p_exp(m, e)) {  // log(1 + e^a): vm_log1p_exp
    VM mm = vm_for(*m, e->dt);
    return vm_log1p_exp(&mm, let(&mm, expand(m, e->a->a)));
  }
  e->a = expand(m, e->a);
  e->b = expand(m, e->b);
  e->c = expand(m, e->c);
  e->idx.dyn = expand(m, e->idx.dyn);
  if (!is_vm(m, e))
    return e;
  VM mm = vm_for(*m, e->dt);
  if (e->kind == LX_BINARY)
    return build_binary(&mm, e->op, let(&mm, e->a), let(&mm, e->b));
  if (e->op == OP_GELU)  // its formula's x * 0.5 * (1 + erf(...)) in one piece
    return vm_gelu(&mm, let(&mm, e->a));
  if (prim_has(e->op, e->dt))
    return build_unary(&mm, e->op, let(&mm, e->a));
  return expand_formula(&mm, op_formula(m->cx, e->op, e->dt, let(&mm, e->a)), false);
}

// st's own expressions expanded, their lets appended to pre.
static void expand_stmt(VM *m, LStmtList *pre, LStmt *st) {
  if (!any_vm(m, st->val) && !any_vm(m, st->cond) && !any_vm(m, st->idx.dyn))
    return;
  VM in = *m;
  in.pre = pre;
  st->val = expand(&in, st->val);
  st->cond = expand(&in, st->cond);
  st->idx.dyn = expand(&in, st->idx.dyn);
}

// ---- sin and cos: the cold path ----
// A loop whose body is statements alone, some computing sin or cos, and which reads no
// buffer it stores to (so running it twice computes the same values), becomes
//   let big = 0; (let saved = acc, for each outer local the body sets)
//   for j { body, sin and cos built; big = big + (limit < |arg| < inf ? 1 : 0) }
//   if (big > 0) { acc = saved ...; for j' { the body again, sin and cos for every
//   argument: f32's branch-free full form, f64's from libm } }
// A parallel loop is first cut into a parallel loop over CHUNK iterations and the rest,
// each serial inside. Any other f32 sin or cos takes the full form directly; any other
// f64 one stays a libm call: one outside every loop, or in a loop with loops or ifs
// inside, or one that reads what it writes (in place: a GEMM tile's epilogue).
enum { CHUNK = 4096 };

typedef struct Subst {
  int from;         // the loop var replaced by to[0] * mul[0] (+ to[1] * mul[1]) + add
  int to[2];        // to[1] -1: none
  int64_t mul[2], add;
  int *lmap;        // locals declared by the copied statements -> their copies
} Subst;

static LExpr *subst_var(VM *m, const Subst *s, DType dt) {
  LExpr *v = lx_var(m->cx, s->to[0]);
  if (s->mul[0] != 1)
    v = lx_binary(m->cx, OP_MUL, DT_I64, v, lx_const_i(m->cx, DT_I64, s->mul[0]));
  if (s->to[1] >= 0) {
    LExpr *w = lx_var(m->cx, s->to[1]);
    if (s->mul[1] != 1)
      w = lx_binary(m->cx, OP_MUL, DT_I64, w, lx_const_i(m->cx, DT_I64, s->mul[1]));
    v = lx_binary(m->cx, OP_ADD, DT_I64, v, w);
  }
  if (s->add)
    v = lx_binary(m->cx, OP_ADD, DT_I64, v, lx_const_i(m->cx, DT_I64, s->add));
  return dt == DT_I64 ? v : lx_cast(m->cx, dt, v);
}

static LExpr *clone_expr(VM *m, const Subst *s, const LExpr *e);

static LIndex subst_index(VM *m, const Subst *s, const LIndex *x) {
  LIndex r = *x;
  r.nterms = 0;
  int64_t coef = 0;
  for (int t = 0; t < x->nterms; t++) {
    if (x->var[t] == s->from) {
      coef += x->coef[t];
      continue;
    }
    r.var[r.nterms] = x->var[t];
    r.coef[r.nterms++] = x->coef[t];
  }
  for (int k = 0; k < 2 && coef; k++) {
    if (s->to[k] < 0)
      continue;
    TD_ASSERT(r.nterms < LI_MAX_TERMS);
    r.var[r.nterms] = s->to[k];
    r.coef[r.nterms++] = coef * s->mul[k];
  }
  r.base += coef * s->add;
  r.dyn = clone_expr(m, s, x->dyn);
  return r;
}

static LExpr *clone_expr(VM *m, const Subst *s, const LExpr *e) {
  if (!e)
    return NULL;
  if (e->kind == LX_VAR && e->var == s->from)
    return subst_var(m, s, e->dt);
  LExpr *n = arena_alloc(&m->cx->arena, sizeof *n);
  *n = *e;
  if (e->kind == LX_LOCAL)
    n->local = s->lmap[e->local];
  n->a = clone_expr(m, s, e->a);
  n->b = clone_expr(m, s, e->b);
  n->c = clone_expr(m, s, e->c);
  if (e->kind == LX_LOAD)
    n->idx = subst_index(m, s, &e->idx);
  return n;
}

static int new_local(VM *m, DType dt) {
  vec_push(&m->cx->arena, &m->k->locals, dt);
  return m->k->locals.len - 1;
}

// Loop l's body copied into `into`, through s (locals it declares get copies).
static void clone_body(VM *m, Subst *s, const LStmt *l, LStmtList *into) {
  int nloc = m->k->locals.len;
  s->lmap = arena_alloc(&m->cx->arena, sizeof(int) * (size_t)(nloc + 1));
  for (int i = 0; i < nloc; i++)
    s->lmap[i] = i;
  for (int i = 0; i < l->body.len; i++) {
    const LStmt *st = l->body.data[i];
    TD_ASSERT(st->kind != LS_LOOP && st->kind != LS_IF);
    LStmt *n = arena_alloc(&m->cx->arena, sizeof *n);
    *n = *st;
    n->val = clone_expr(m, s, st->val);
    n->cond = clone_expr(m, s, st->cond);
    if (st->kind == LS_STORE)
      n->idx = subst_index(m, s, &st->idx);
    if (st->kind == LS_LET)
      s->lmap[st->local] = new_local(m, m->k->locals.data[st->local]);
    if (st->kind == LS_LET || st->kind == LS_SET)
      n->local = s->lmap[st->local];
    vec_push(&m->cx->arena, into, n);
  }
}

static bool is_trig_expr(const LExpr *e) {
  return e->kind == LX_UNARY && e->lanes == 1 && is_trig(e->op) && (e->dt == DT_F32 || e->dt == DT_F64);
}

static bool any_trig(const LExpr *e) {
  return e && (is_trig_expr(e) || any_trig(e->a) || any_trig(e->b) || any_trig(e->c) || any_trig(e->idx.dyn));
}

// The dtype of the first sin or cos in e (DT_COUNT: none).
static DType trig_dtype(const LExpr *e) {
  if (!e)
    return DT_COUNT;
  if (is_trig_expr(e))
    return e->dt;
  DType d = trig_dtype(e->a);
  if (d == DT_COUNT)
    d = trig_dtype(e->b);
  if (d == DT_COUNT)
    d = trig_dtype(e->c);
  return d;
}

// Whether loop l computes sin or cos in its own statements and can take the cold path.
static bool has_trig(const LStmt *l) {
  bool any = false;
  for (int i = 0; i < l->body.len; i++) {
    const LStmt *st = l->body.data[i];
    any |= any_trig(st->val) || any_trig(st->cond) || any_trig(st->idx.dyn);
  }
  return l->kind == LS_LOOP && any;
}

static bool rerunnable(const LStmt *l) {
  for (int i = 0; i < l->body.len; i++) {
    const LStmt *st = l->body.data[i];
    if (st->kind == LS_LOOP || st->kind == LS_IF)
      return false;
    if (st->kind != LS_STORE)
      continue;
    for (int j = 0; j < l->body.len; j++) {
      const LStmt *o = l->body.data[j];
      if (lx_loads(o->val, st->buf) || lx_loads(o->cond, st->buf) || lx_loads(o->idx.dyn, st->buf) ||
          (o->kind == LS_STORE && lx_loads(o->idx.dyn, st->buf)))
        return false;
    }
  }
  return true;
}

static bool declared_in(const LStmt *l, int local) {
  for (int i = 0; i < l->body.len; i++)
    if (l->body.data[i]->kind == LS_LET && l->body.data[i]->local == local)
      return true;
  return false;
}

// The cold path of a serial loop l (see above), appended to out.
static void cold_loop(VM *m, LStmtList *out, LStmt *l) {
  Ctx *cx = m->cx;
  LStmt *again = ls_loop(cx, m->k->nvars++, l->extent);
  again->vector = l->vector;
  Subst s = {l->var, {again->var, -1}, {1, 0}, 0, NULL};
  clone_body(m, &s, l, &again->body);
  VM libm = *m;
  libm.trig = NULL;
  LStmtList redo = {0};  // the rest of its math as in the first pass
  for (int i = 0; i < again->body.len; i++) {
    expand_stmt(&libm, &redo, again->body.data[i]);
    vec_push(&cx->arena, &redo, again->body.data[i]);
  }
  again->body = redo;

  // the flag counts the huge arguments: a float sum, which ir/sched.c splits into lanes
  // (with the body's own float folds, of whose dtype it is) and both backends then
  // vectorize; gcc 12 vectorizes no loop that sets an int local (see codegen/c.c), and
  // LLVM 14 no select-compare reduction
  DType fdt = DT_COUNT;
  for (int i = 0; i < l->body.len && fdt == DT_COUNT; i++) {
    const LStmt *st = l->body.data[i];
    if (st->kind == LS_SET && dtype_is_float(st->val->dt))
      fdt = st->val->dt;
  }
  for (int i = 0; i < l->body.len && fdt == DT_COUNT; i++) {  // else the dtype sin computes
    const LStmt *st = l->body.data[i];
    fdt = trig_dtype(st->val);
    if (fdt == DT_COUNT)
      fdt = trig_dtype(st->cond);
  }
  if (fdt == DT_COUNT)
    fdt = DT_F32;
  int flag = new_local(m, fdt);
  LExpr *fl = lx_local(cx, fdt, flag), *zero = lx_const_f(cx, fdt, 0), *one = lx_const_f(cx, fdt, 1);
  vec_push(&cx->arena, out, ls_let(cx, flag, zero));
  LStmt *iff = ls_if(cx, lx_binary(cx, OP_GT, DT_BOOL, fl, zero));
  for (int i = 0; i < l->body.len; i++) {  // outer locals the body sets: saved, restored
    const LStmt *st = l->body.data[i];
    if (st->kind != LS_SET || declared_in(l, st->local))
      continue;
    DType dt = m->k->locals.data[st->local];
    int save = new_local(m, dt);
    vec_push(&cx->arena, out, ls_let(cx, save, lx_local(cx, dt, st->local)));
    vec_push(&cx->arena, &iff->body, ls_set(cx, st->local, lx_local(cx, dt, save)));
  }
  vec_push(&cx->arena, &iff->body, again);

  LStmtList nb = {0};
  for (int i = 0; i < l->body.len; i++) {
    LStmt *st = l->body.data[i];
    LExprList args = {0};
    VM in = *m;
    in.trig = &args;
    expand_stmt(&in, &nb, st);
    vec_push(&cx->arena, &nb, st);
    for (int j = 0; j < args.len; j++) {
      VM a = vm_for(in, args.data[j]->dt);
      a.pre = &nb;
      // inf counts too (rare; the second pass gives its NaN as the first does)
      LExpr *big = gt(&a, let(&a, fabs_(&a, args.data[j])), sin_limit(&a, a.dt));
      int y = new_local(m, fdt);
      vec_push(&cx->arena, &nb, ls_let(cx, y, lx_select(cx, big, one, zero)));
      vec_push(&cx->arena, &nb, ls_set(cx, flag, lx_binary(cx, OP_ADD, fdt, fl, lx_local(cx, fdt, y))));
    }
  }
  l->body = nb;
  vec_push(&cx->arena, out, l);
  vec_push(&cx->arena, out, iff);
}

// The cold path of loop l, cutting a parallel one into chunks first.
static void cold_path(VM *m, LStmtList *out, LStmt *l) {
  if (!l->parallel || l->extent <= CHUNK) {
    l->parallel = false;
    cold_loop(m, out, l);
    return;
  }
  Ctx *cx = m->cx;
  int64_t nchunks = l->extent / CHUNK, rest = l->extent % CHUNK;
  LStmt *outer = ls_loop(cx, m->k->nvars++, nchunks);
  outer->parallel = true;
  LStmt *inner = ls_loop(cx, l->var, CHUNK);
  inner->vector = l->vector;
  Subst s = {l->var, {outer->var, l->var}, {CHUNK, 1}, 0, NULL};
  clone_body(m, &s, l, &inner->body);
  cold_loop(m, &outer->body, inner);
  vec_push(&cx->arena, out, outer);
  if (rest) {
    LStmt *tail = ls_loop(cx, m->k->nvars++, rest);
    tail->vector = l->vector;
    Subst t = {l->var, {tail->var, -1}, {1, 0}, nchunks * CHUNK, NULL};
    clone_body(m, &t, l, &tail->body);
    cold_loop(m, out, tail);
  }
}

static void expand_list(VM *m, LStmtList *body) {
  LStmtList out = {0};
  for (int i = 0; i < body->len; i++) {
    LStmt *st = body->data[i];
    if (st->kind == LS_LOOP && has_trig(st) && rerunnable(st)) {
      cold_path(m, &out, st);
      continue;
    }
    if (st->kind == LS_LOOP || st->kind == LS_IF)
      expand_list(m, &st->body);
    expand_stmt(m, &out, st);  // a statement belongs to one list: edited in place
    vec_push(&m->cx->arena, &out, st);
  }
  *body = out;
}

static VM vm_new(Ctx *cx, LKernel *k, const CpuTarget *cpu, LStmtList *pre) {
  VM m = {cx, k, pre, cpu && cpu->fma, cpu && cpu->c_source, DT_F32, DT_I32, &FMT32, NULL};
  return m;
}

void vecmath_kernel(Ctx *cx, LKernel *k, const CpuTarget *cpu) {
  VM m = vm_new(cx, k, cpu, NULL);
  expand_list(&m, &k->body);
}

LExpr *vecmath_exp_nonpos(Ctx *cx, LKernel *k, const CpuTarget *cpu, LStmtList *pre, LExpr *x) {
  TD_ASSERT(x->dt == DT_F32 || x->dt == DT_F64);
  VM m = vm_for(vm_new(cx, k, cpu, pre), x->dt);
  return exp_nonpos(&m, let(&m, x));
}
