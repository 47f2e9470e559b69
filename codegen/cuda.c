// codegen/cuda.c: the CUDA C backend. Prints the GPU form of loop IR (ir/loop.h; each
// kernel as ir/sched_gpu.c rewrote it) as CUDA C: for --emit=cuda one .cu translation
// unit (device helpers, kernels, and per program a host entry with the CPU ABI of
// DESIGN.md that copies buffers to the device, launches and checks every kernel, and
// copies results back), compiling with `nvcc -arch=sm_90 -c -I$(tdslc
// --print-include-dir)`; for cuda_device_image the device code of one program alone (no
// includes: NVRTC has no libc headers) with the launch of each kernel. Every kernel
// takes (tdsl_gpu_error *err, b0, b1, ...), the convention of codegen/codegen.h, its
// LB_SHARED arguments being __shared__ arrays of its own, and is launched with the
// schedule's 1-D grid and block (LGpuSched). Kernels with the same code (LKernel.same:
// a model's layers) are printed once, and launched once each with their own buffers,
// each pointer moved its LArg.at elements in.
//
// The statements are the schedule's, printed one for one: a loop with a start and step
// as `for (v = start; v < extent; v += step)`, LS_VAR as a const declaration, LS_SYNC as
// __syncthreads() or __syncwarp(), LX_SHFL as __shfl_*_sync over the full warp, the
// thread's vars bound first from threadIdx.x and blockIdx.x. A vector load or store
// (aligned to its width, ir/loop.h) moves one tdsl_g_vec, an aligned struct of its
// lanes, so nvcc emits one 64- or 128-bit access; its lanes live in an array. So
// codegen/llvm_gpu.c builds the same statements for the PTX: the two backends differ
// in spelling, not in schedule, and what tests/shim runs of this text is what both do.
// Numerics are those of codegen/c.c (the helpers and expressions of the C dialect in
// codegen/cexpr.c, as __device__ functions). Errors: the first raise sets the record's
// flag with atomicCAS and writes k and the value.
#include "codegen/cexpr.h"

#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

// ---- the dialect: what CUDA C spells its own way ----
#define DEV "static __device__ __forceinline__ __attribute__((unused)) "

// What every device text begins with. NVRTC has no libc headers: the fixed-width
// types and limits are defined here when it compiles; nvcc gets <stdint.h>.
static const char *const base_text =
    "#ifdef __CUDACC_RTC__\n"
    "typedef signed char int8_t;\n"
    "typedef unsigned char uint8_t;\n"
    "typedef short int16_t;\n"
    "typedef unsigned short uint16_t;\n"
    "typedef int int32_t;\n"
    "typedef unsigned int uint32_t;\n"
    "typedef long long int64_t;\n"
    "typedef unsigned long long uint64_t;\n"
    "#define INT32_MIN (-2147483647 - 1)\n"
    "#define INT32_MAX 2147483647\n"
    "#define INT64_MIN (-9223372036854775807LL - 1)\n"
    "#define INT64_MAX 9223372036854775807LL\n"
    "#define INT64_C(x) x##LL\n"
    "#else\n"
    "#include <stdint.h>\n"
    "#endif\n"
    "#pragma nv_diag_suppress 39  // division by zero: IEEE's inf and nan are meant\n"
    "#define TDSL_G_INF __int_as_float(0x7f800000)\n"
    "#define TDSL_G_NAN __int_as_float(0x7fc00000)\n"
    "#define TDSL_G_DINF __longlong_as_double(0x7ff0000000000000LL)\n"
    "#define TDSL_G_DNAN __longlong_as_double(0x7ff8000000000000LL)\n"
    "// A vector of N elements, aligned to its size: one 64- or 128-bit access.\n"
    "template <typename S, int N> struct __align__(sizeof(S) * N) tdsl_g_vec {\n"
    "  S v[N];\n"
    "};\n"
    "#ifndef TDSLC_RUNTIME_TDSL_H\n"
    "// The error record of runtime/tdsl.h: flag set once by atomicCAS, then k and value.\n"
    "typedef struct tdsl_gpu_error {\n"
    "  int flag;\n"
    "  int k;\n"
    "  long long value;\n"
    "} tdsl_gpu_error;\n"
    "#endif\n";

static const char *const err_text =
    "// The first raise of error k (value v) wins the record.\n"
    "static __device__ void tdsl_g_raise(tdsl_gpu_error *e, int k, long long v) {\n"
    "  if (k < 0 || !e)\n"
    "    return;\n"
    "  if (atomicCAS(&e->flag, 0, 1) == 0) {\n"
    "    e->k = k;\n"
    "    e->value = v;\n"
    "    __threadfence();\n"
    "  }\n"
    "}\n";

static const char *const f16_text =
    DEV "float tdsl_g_h2f(uint16_t h) {\n"
    "  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;\n"
    "  if (e == 0x1f)\n"
    "    return __uint_as_float(sign | 0x7f800000u | (m << 13));\n"
    "  if (e != 0)\n"
    "    return __uint_as_float(sign | ((e + 112) << 23) | (m << 13));\n"
    "  float v = (float)m * 5.9604644775390625e-8f;  // zero or subnormal: exact\n"
    "  return sign ? -v : v;\n"
    "}\n"
    DEV "uint16_t tdsl_g_f2h(float f) {\n"
    "  uint32_t u = __float_as_uint(f);\n"
    "  uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;\n";

static const char *const bf16_text =
    DEV "float tdsl_g_bf2f(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }\n"
    DEV "uint16_t tdsl_g_f2bf(float f) {\n"
    "  uint32_t u = __float_as_uint(f);\n"
    "  if ((u & 0x7fffffffu) > 0x7f800000u)\n"
    "    return (uint16_t)((u >> 16) | 0x40u);  // nan stays a quiet nan\n"
    "  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n"
    "}\n";

// The tensor cores (H_REDUCE): each lane's registers of an mma.m16n8k16 operand (PTX
// ISA, "Matrix Fragments for mma.m16n8k16": two halves a register, the lower k first;
// lane l has g = l / 4, q = 2 (l % 4)), and the mma itself, in place on the sums; under
// tests/shim (TDSL_SHIM) the shim's emulation of the instruction.
static const char *const mma_text =
    "struct tdsl_g_fa {\n"
    "  uint32_t r[4];\n"
    "};\n"
    "struct tdsl_g_fb {\n"
    "  uint32_t r[2];\n"
    "};\n"
    DEV "uint32_t tdsl_g_pack(uint16_t lo, uint16_t hi) { return (uint32_t)lo | (uint32_t)hi << 16; }\n"
    DEV "uint32_t tdsl_g_word(const uint16_t *p) { return *(const uint32_t *)p; }\n"
    "// A: 16 x 16, (m, k) at p[m * ld + k] (mk) or p[k * ld + m] (km)\n"
    DEV "tdsl_g_fa tdsl_g_frag_a_mk(const uint16_t *p, int ld) {\n"
    "  int g = (threadIdx.x & 31) >> 2, q = (threadIdx.x & 3) * 2;\n"
    "  tdsl_g_fa f = {{tdsl_g_word(&p[g * ld + q]), tdsl_g_word(&p[(g + 8) * ld + q]), tdsl_g_word(&p[g * ld + q + 8]),\n"
    "                  tdsl_g_word(&p[(g + 8) * ld + q + 8])}};\n"
    "  return f;\n"
    "}\n"
    DEV "tdsl_g_fa tdsl_g_frag_a_km(const uint16_t *p, int ld) {\n"
    "  int g = (threadIdx.x & 31) >> 2, q = (threadIdx.x & 3) * 2;\n"
    "  tdsl_g_fa f = {{tdsl_g_pack(p[q * ld + g], p[(q + 1) * ld + g]), tdsl_g_pack(p[q * ld + g + 8], p[(q + 1) * ld + g + 8]),\n"
    "                  tdsl_g_pack(p[(q + 8) * ld + g], p[(q + 9) * ld + g]),\n"
    "                  tdsl_g_pack(p[(q + 8) * ld + g + 8], p[(q + 9) * ld + g + 8])}};\n"
    "  return f;\n"
    "}\n"
    "// B: 16 x 8, (k, n) at p[n * ld + k] (nk) or p[k * ld + n] (kn)\n"
    DEV "tdsl_g_fb tdsl_g_frag_b_nk(const uint16_t *p, int ld) {\n"
    "  int g = (threadIdx.x & 31) >> 2, q = (threadIdx.x & 3) * 2;\n"
    "  tdsl_g_fb f = {{tdsl_g_word(&p[g * ld + q]), tdsl_g_word(&p[g * ld + q + 8])}};\n"
    "  return f;\n"
    "}\n"
    DEV "tdsl_g_fb tdsl_g_frag_b_kn(const uint16_t *p, int ld) {\n"
    "  int g = (threadIdx.x & 31) >> 2, q = (threadIdx.x & 3) * 2;\n"
    "  tdsl_g_fb f = {{tdsl_g_pack(p[q * ld + g], p[(q + 1) * ld + g]), tdsl_g_pack(p[(q + 8) * ld + g], p[(q + 9) * ld + g])}};\n"
    "  return f;\n"
    "}\n"
    "#ifdef TDSL_SHIM\n"
    "#define TDSL_G_MMA(ty, bf)                                                            \\\n"
    "  " DEV "void tdsl_g_mma_##ty(float *d, tdsl_g_fa a, tdsl_g_fb b) {                   \\\n"
    "    tdsl_shim_mma_16816(d, a.r, b.r, d, bf, __LINE__);                               \\\n"
    "  }\n"
    "#else\n"
    "#define TDSL_G_MMA(ty, bf)                                                                                 \\\n"
    "  " DEV "void tdsl_g_mma_##ty(float *d, tdsl_g_fa a, tdsl_g_fb b) {                                          \\\n"
    "    asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.\" #ty \".\" #ty \".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, \"  \\\n"
    "                 \"{%8, %9}, {%0, %1, %2, %3};\"                                                          \\\n"
    "                 : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])                                      \\\n"
    "                 : \"r\"(a.r[0]), \"r\"(a.r[1]), \"r\"(a.r[2]), \"r\"(a.r[3]), \"r\"(b.r[0]), \"r\"(b.r[1]));       \\\n"
    "  }\n"
    "#endif\n"
    "TDSL_G_MMA(f16, 0)\n"
    "TDSL_G_MMA(bf16, 1)\n";

// NVRTC has no math.h: nan and inf come from bit patterns (base_text).
static const TypeText type_text[DT_COUNT] = {
    [DT_BOOL] = {"bool", "bool", "bool", "", "", "false"},
    [DT_I32] = {"int32_t", "uint32_t", "i32", "", "", "INT32_MIN"},
    [DT_I64] = {"int64_t", "uint64_t", "i64", "", "", "INT64_MIN"},
    [DT_F32] = {"float", "uint32_t", "f32", "f", "f", "(-TDSL_G_INF)", "0.0f", "TDSL_G_NAN", "TDSL_G_INF",
                "(-TDSL_G_INF)"},
    [DT_F64] = {"double", "uint64_t", "f64", "", "", "(-TDSL_G_DINF)", "0.0", "TDSL_G_DNAN", "TDSL_G_DINF",
                "(-TDSL_G_DINF)"},
};

// The kernel's error record and the error index.
static void err_args(CExprGen *g, int err) { buf_printf(g->b, "tdsl_g_err, %d", err); }

static void bitcast(CExprGen *g, DType from, DType to, const char **pre, const char **post) {
  (void)g, (void)from;
  *pre = to == DT_F32 ? "__int_as_float(" : to == DT_I32 ? "__float_as_int(" :
         to == DT_F64 ? "__longlong_as_double(" : "__double_as_longlong(";
  *post = ")";
}

// The GPU form's expressions (CDialect.gpu_expr).
static void gpu_expr(CExprGen *g, const LExpr *e) {
  switch (e->kind) {
  case LX_SHFL:
    buf_printf(g->b, "__shfl%s_sync(0xffffffffu, ", e->i == LG_SHFL_DOWN ? "_down" : e->i == LG_SHFL_XOR ? "_xor" : "");
    cexpr_expr(g, e->a);
    buf_puts(g->b, ", (int)(");
    cexpr_expr(g, e->b);
    buf_puts(g->b, "))");
    return;
  case LX_IDIV: {  // a >= 0, b > 0: unsigned
    const char *u = e->dt == DT_I32 ? "uint32_t" : "uint64_t";
    buf_printf(g->b, "(%s)((%s)(", cexpr_type(e->dt), u);
    cexpr_expr(g, e->a);
    buf_printf(g->b, ") %s (%s)(", e->op == OP_FLOOR_DIVIDE ? "/" : "%", u);
    cexpr_expr(g, e->b);
    buf_puts(g->b, "))");
    return;
  }
  default: td_unreachable();  // LX_INSERT, LX_MMA: a statement's value (vec_let, vec_store)
  }
}

static const CDialect dialect_cuda = {
    .name = "cuda",
    .decl = DEV,
    .err_params = ", tdsl_gpu_error *e, int k",
    .raise_rank = "",
    .types = type_text,
    .round = "rint",
    .no_err = "0, -1",
    .err_args = err_args,
    .bitcast = bitcast,
    .err_text = err_text,
    .f16_text = f16_text,
    .bf16_text = bf16_text,
    .reduce_text = mma_text,
    .gpu_expr = gpu_expr,
};

// The device prelude: base_text, then the helpers the kernels use.
static void emit_prelude(Buf *b, Prelude *pr) {
  buf_puts(b, base_text);
  cexpr_prelude(b, &dialect_cuda, pr);
  buf_puts(b, "\n");
}

// ---- the kernel printer ----
typedef struct CudaKernelGen {
  CExprGen g;
} CudaKernelGen;

static void stmts(CudaKernelGen *c, const LStmtList *l);

static void line(CudaKernelGen *c, const char *fmt, ...) TD_PRINTF(2, 3);
static void line(CudaKernelGen *c, const char *fmt, ...) {
  char tmp[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  buf_indent(c->g.b, c->g.depth);
  buf_puts(c->g.b, tmp);
  buf_puts(c->g.b, "\n");
}

// ---- vectors ----
static DType arg_dtype(const CudaKernelGen *c, int arg) { return cexpr_arg_dtype(&c->g, arg); }

// The text that turns element e of a bt buffer (a storage value) into its value.
static void load_conv(CudaKernelGen *c, DType bt, const char **pre, const char **post) {
  *pre = "", *post = "";
  if (bt == DT_F16 || bt == DT_BF16) {
    c->g.pr->single[bt == DT_F16 ? H_F16 : H_BF16] = true;
    *pre = bt == DT_F16 ? "tdsl_g_h2f(" : "tdsl_g_bf2f(", *post = ")";
  } else if (bt == DT_BOOL) {
    *pre = "(", *post = " != 0)";
  }
}

// ... and a value of dtype bt into the storage value.
static void store_conv(CudaKernelGen *c, DType bt, const char **pre, const char **post) {
  *pre = "", *post = "";
  if (bt == DT_F16 || bt == DT_BF16) {
    c->g.pr->single[bt == DT_F16 ? H_F16 : H_BF16] = true;
    *pre = bt == DT_F16 ? "tdsl_g_f2h(" : "tdsl_g_f2bf(", *post = ")";
  } else if (bt == DT_BOOL) {
    *pre = "(uint8_t)(", *post = ")";
  }
}

static void print_index(CudaKernelGen *c, const LIndex *ix) { cexpr_index(&c->g, ix); }

// Lane l of vector value v: a scalar expression (an insert chain's, a splat's, a local's).
static void lane_expr(CudaKernelGen *c, const LExpr *v, int l) {
  while (v->kind == LX_INSERT && v->i != l)
    v = v->a;
  if (v->kind == LX_INSERT) {
    cexpr_expr(&c->g, v->b);
  } else if (v->kind == LX_SPLAT) {
    cexpr_expr(&c->g, v->a);
  } else {
    TD_ASSERT(v->kind == LX_LOCAL);
    buf_printf(c->g.b, "%s[%d]", c->g.lname[v->local], l);
  }
}

static bool lane_value(const LExpr *v) {
  return v->kind == LX_INSERT || v->kind == LX_SPLAT || v->kind == LX_LOCAL;
}

// An mma operand: the helper reading the lane's registers.
static void frag(CudaKernelGen *c, const LExpr *f) {
  static const char *const roles[] = {"a_mk", "a_km", "b_nk", "b_kn"};
  c->g.arg_used[f->buf] = true;
  buf_printf(c->g.b, "tdsl_g_frag_%s(&b%d[", roles[f->i], f->buf);
  print_index(c, &f->idx);
  buf_printf(c->g.b, "], %" PRId64 ")", f->b->i);
}

// acc = mma(a, b, acc): the sums in place.
static void mma_set(CudaKernelGen *c, const LStmt *s) {
  CExprGen *g = &c->g;
  const LExpr *v = s->val;
  TD_ASSERT(s->kind == LS_SET && v->c->kind == LX_LOCAL && v->c->local == s->local);
  g->pr->single[H_REDUCE] = true;
  buf_indent(g->b, g->depth);
  buf_printf(g->b, "tdsl_g_mma_%s(%s, ", v->a->dt == DT_BF16 ? "bf16" : "f16", g->lname[s->local]);
  frag(c, v->a);
  buf_puts(g->b, ", ");
  frag(c, v->b);
  buf_puts(g->b, ");\n");
}

// A vector let or set whose value is a load or lanes (else cexpr's lane loop).
static bool vec_let(CudaKernelGen *c, const LStmt *s) {
  CExprGen *g = &c->g;
  const LExpr *v = s->val;
  int n = v->lanes;
  if (v->kind == LX_MMA) {
    mma_set(c, s);
    return true;
  }
  if (v->kind != LX_LOAD && !lane_value(v))
    return false;
  if (s->kind == LS_LET && g->decl_depth[s->local] < 0) {
    g->decl_depth[s->local] = g->depth;
    line(c, "%s %s[%d];", cexpr_type(v->dt), g->lname[s->local], n);
  }
  const char *name = g->lname[s->local];
  if (v->kind == LX_LOAD) {
    DType bt = arg_dtype(c, v->buf);
    const char *st = cexpr_storage_type(bt), *pre, *post;
    g->arg_used[v->buf] = true;
    load_conv(c, bt, &pre, &post);
    line(c, "{");
    g->depth++;
    buf_indent(g->b, g->depth);
    buf_printf(g->b, "const tdsl_g_vec<%s, %d> tdsl_g_r = *(const tdsl_g_vec<%s, %d> *)&b%d[", st, n, st, n, v->buf);
    print_index(c, &v->idx);
    buf_puts(g->b, "];\n");
    for (int l = 0; l < n; l++)
      line(c, "%s[%d] = %stdsl_g_r.v[%d]%s;", name, l, pre, l, post);
    g->depth--;
    line(c, "}");
    return true;
  }
  for (int l = 0; l < n; l++) {
    buf_indent(g->b, g->depth);
    buf_printf(g->b, "%s[%d] = ", name, l);
    lane_expr(c, v, l);
    buf_puts(g->b, ";\n");
  }
  return true;
}

// A vector store of lanes or of a load of the same dtype (else cexpr's lane loop).
static bool vec_store(CudaKernelGen *c, const LStmt *s) {
  CExprGen *g = &c->g;
  const LExpr *v = s->val;
  int n = v->lanes;
  DType bt = arg_dtype(c, s->buf);
  const char *st = cexpr_storage_type(bt), *pre, *post;
  if (v->kind == LX_LOAD && arg_dtype(c, v->buf) == bt) {  // a copy: the bits as they are
    g->arg_used[s->buf] = g->arg_used[v->buf] = true;
    buf_indent(g->b, g->depth);
    buf_printf(g->b, "*(tdsl_g_vec<%s, %d> *)&b%d[", st, n, s->buf);
    print_index(c, &s->idx);
    buf_printf(g->b, "] = *(const tdsl_g_vec<%s, %d> *)&b%d[", st, n, v->buf);
    print_index(c, &v->idx);
    buf_puts(g->b, "];\n");
    return true;
  }
  if (!lane_value(v))
    return false;
  g->arg_used[s->buf] = true;
  store_conv(c, bt, &pre, &post);
  line(c, "{");
  g->depth++;
  line(c, "tdsl_g_vec<%s, %d> tdsl_g_w;", st, n);
  for (int l = 0; l < n; l++) {
    buf_indent(g->b, g->depth);
    buf_printf(g->b, "tdsl_g_w.v[%d] = %s", l, pre);
    lane_expr(c, v, l);
    buf_printf(g->b, "%s;\n", post);
  }
  buf_indent(g->b, g->depth);
  buf_printf(g->b, "*(tdsl_g_vec<%s, %d> *)&b%d[", st, n, s->buf);
  print_index(c, &s->idx);
  buf_puts(g->b, "] = tdsl_g_w;\n");
  g->depth--;
  line(c, "}");
  return true;
}

// ---- statements ----
static void stmt(CudaKernelGen *c, const LStmt *s) {
  CExprGen *g = &c->g;
  switch (s->kind) {
  case LS_LOOP:
    if (!s->start && !s->step) {
      cexpr_open_loop(g, s);
    } else {
      buf_indent(g->b, g->depth);
      buf_printf(g->b, "for (int64_t v%d = ", s->var);
      if (s->start)
        cexpr_expr(g, s->start);
      else
        buf_puts(g->b, "0");
      buf_printf(g->b, "; v%d < %" PRId64 "; v%d += ", s->var, s->extent, s->var);
      if (s->step)
        cexpr_expr(g, s->step);
      else
        buf_puts(g->b, "1");
      buf_puts(g->b, ") {\n");
      g->depth++;
    }
    stmts(c, &s->body);
    cexpr_close(g);
    return;
  case LS_STORE:
    if (s->val->lanes == 1 && s->val->kind == LX_LOAD && arg_dtype(c, s->val->buf) == arg_dtype(c, s->buf)) {
      // a copy: the bits as they are (a half needs no round trip through f32)
      g->arg_used[s->buf] = g->arg_used[s->val->buf] = true;
      buf_indent(g->b, g->depth);
      buf_printf(g->b, "b%d[", s->buf);
      print_index(c, &s->idx);
      buf_printf(g->b, "] = b%d[", s->val->buf);
      print_index(c, &s->val->idx);
      buf_puts(g->b, "];\n");
      return;
    }
    if (s->val->lanes == 1 || !vec_store(c, s))
      cexpr_store(g, s);
    return;
  case LS_LET:
  case LS_SET:
    if (s->val->lanes == 1 || !vec_let(c, s))
      cexpr_let(g, s);
    return;
  case LS_IF:
    cexpr_open_if(g, s->cond);
    stmts(c, &s->body);
    cexpr_close(g);
    return;
  case LS_VAR:
    buf_indent(g->b, g->depth);
    buf_printf(g->b, "const int64_t v%d = ", s->var);
    cexpr_expr(g, s->val);
    buf_puts(g->b, ";\n");
    return;
  case LS_SYNC: line(c, s->extent ? "__syncwarp();" : "__syncthreads();"); return;
  case LS_CALL:  // (GPU programs call no functions and prefetch nothing: ir/loop.h)
  case LS_PREFETCH:
  case LS_COUNT: break;
  }
  td_unreachable();
}

static void stmts(CudaKernelGen *c, const LStmtList *l) {
  for (int i = 0; i < l->len; i++)
    stmt(c, l->data[i]);
}

// ---- kernels ----
static bool is_shared(const LProgram *p, const LArg *a) { return p->bufs.data[a->buf].kind == LB_SHARED; }

static void emit_kernel(Ctx *cx, Prelude *pr, Buf *out, const LProgram *p, int ki, GpuKernel *launch) {
  const LKernel *k = p->kernels.data[ki];
  int nargs = k->args.len;
  const LGpuSched *gs = k->gpu;  // sched_gpu's
  TD_ASSERT(gs);
  CudaKernelGen c = {0};
  cexpr_begin(&c.g, cx, &dialect_cuda, pr, p, k);
  Buf body;
  buf_init(&body, cx);
  c.g.b = &body;
  c.g.depth = 1;
  stmts(&c, &k->body);
  *launch = (GpuKernel){emit_kernel_name(cx, p, ki), gs->grid, gs->block, 0};

  // header comment: what it computes, its schedule and launch, the kernels that launch
  // it too, what each pointer is
  const char *shared = emit_shared_note(cx, p, ki);
  const char *note = arena_printf(&cx->arena, "%s: grid %" PRId64 ", block %" PRId64 "%s%s", gs->name, gs->grid,
                                  gs->block, shared ? "; " : "", shared ? shared : "");
  emit_kernel_comment(out, p, ki, note);
  buf_printf(out, "extern \"C\" __global__ void __launch_bounds__(%" PRId64 ") %s(tdsl_gpu_error *tdsl_g_err",
             gs->block > 0 ? gs->block : 1, launch->name);
  for (int i = 0; i < nargs; i++) {
    const LArg *a = &k->args.data[i];
    if (is_shared(p, a))
      continue;
    DType dt = p->bufs.data[a->buf].dtype;
    buf_printf(out, ", %s%s *__restrict__ b%d", a->written ? "" : "const ", cexpr_storage_type(dt), i);
  }
  buf_puts(out, ") {\n");
  if (!c.g.has_err)
    buf_puts(out, "  (void)tdsl_g_err;\n");
  for (int i = 0; i < nargs; i++) {
    const LArg *a = &k->args.data[i];
    const LBuf *lb = &p->bufs.data[a->buf];
    if (is_shared(p, a))
      buf_printf(out, "  __shared__ __align__(16) %s b%d[%" PRId64 "];\n", cexpr_storage_type(lb->dtype), i,
                 lb->numel > 0 ? lb->numel : 1);
    else if (!c.g.arg_used[i])
      buf_printf(out, "  (void)b%d;\n", i);
  }
  // the thread's vars
  const char *what[4] = {"threadIdx.x", "blockIdx.x", "threadIdx.x % 32", "threadIdx.x / 32"};
  int vars[4] = {gs->tid, gs->ctaid, gs->lane, gs->warp};
  for (int i = 0; i < 4; i++)
    if (vars[i] >= 0)
      buf_printf(out, "  const int64_t v%d = %s;\n  (void)v%d;\n", vars[i], what[i], vars[i]);
  buf_puts(out, body.data);
  buf_puts(out, "}\n\n");
}

// The device kernels of p, each code once: a kernel with an earlier one's code
// (LKernel.same) gets that one's launch, name included.
static void emit_kernels(Ctx *cx, Prelude *pr, Buf *out, const LProgram *p, GpuKernel *launch) {
  for (int k = 0; k < p->kernels.len; k++) {
    int j = emit_kernel_code(p, k);
    if (j == k)
      emit_kernel(cx, pr, out, p, k, &launch[k]);
    else
      launch[k] = launch[j];
  }
}

// ---- the host side (--emit=cuda) ----
static const char *const host_text =
    "// ---- host helpers ----\n"
    "static __attribute__((unused)) int tdsl_g_cuda(cudaError_t st, const char *what) {\n"
    "  if (st == cudaSuccess)\n"
    "    return 0;\n"
    "  tdsl_set_error(\"cuda: %s: %s\", what, cudaGetErrorString(st));\n"
    "  return TDSL_ERR_GPU;\n"
    "}\n"
    "// After a launch: the launch and its run, then the kernel's error record.\n"
    "static __attribute__((unused)) int tdsl_g_after(const tdsl_gpu_error *derr, const char *name,\n"
    "                                                const char *const *errors) {\n"
    "  int rc = tdsl_g_cuda(cudaGetLastError(), name);\n"
    "  if (rc == 0)\n"
    "    rc = tdsl_g_cuda(cudaDeviceSynchronize(), name);\n"
    "  tdsl_gpu_error e;\n"
    "  if (rc == 0)\n"
    "    rc = tdsl_g_cuda(cudaMemcpy(&e, derr, sizeof e, cudaMemcpyDeviceToHost), name);\n"
    "  if (rc == 0 && e.flag)\n"
    "    rc = tdsl_entry_kernel_error(errors[e.k], e.value);\n"
    "  return rc;\n"
    "}\n\n";

static void emit_entry(Ctx *cx, Buf *out, const LProgram *p, const GpuKernel *launch) {
  const char *fn = p->name;
  int nb = loop_host_bufs(p);
  emit_entry_tables(out, p);
  // the located messages of each kernel
  for (int i = 0; i < p->kernels.len; i++) {
    const LKernel *k = p->kernels.data[i];
    if (!k->errors.len || k->same)  // (a kernel with an earlier one's code has its errors)
      continue;
    buf_printf(out, "static const char *const %s_errors[] = {\n", launch[i].name);
    for (int e = 0; e < k->errors.len; e++) {
      buf_puts(out, "  ");
      buf_c_string(out, k->errors.data[e]);
      buf_puts(out, ",\n");
    }
    buf_puts(out, "};\n");
  }
  buf_puts(out, "\n");

  // the device work: d[b] receives each buffer's device copy, *derr the error record;
  // the caller frees them whatever happens
  buf_printf(out, "static int tdsl_g_%s_run(tdsl_tensor *b, void **d, tdsl_gpu_error **derr) {\n", fn);
  if (nb == 0)
    buf_puts(out, "  (void)b;\n  (void)d;\n");
  buf_puts(out, "  int rc = tdsl_g_cuda(cudaMalloc((void **)derr, sizeof **derr), \"cudaMalloc\");\n"
                "  if (rc == 0)\n"
                "    rc = tdsl_g_cuda(cudaMemset(*derr, 0, sizeof **derr), \"cudaMemset\");\n");
  if (nb) {
    buf_printf(out, "  for (int i = 0; i < %d && rc == 0; i++) {\n", nb);
    buf_printf(out, "    size_t n = (size_t)tdsl_tensor_numel(&b[i]) * tdsl_dtype_size(b[i].dtype);\n"
                    "    rc = tdsl_g_cuda(cudaMalloc(&d[i], n ? n : 1), \"cudaMalloc\");\n"
                    "    if (rc == 0 && tdsl_g_%s_bufs[i].param >= 0)\n"
                    "      rc = tdsl_g_cuda(cudaMemcpy(d[i], tdsl_tensor_data(&b[i]), n, cudaMemcpyHostToDevice), "
                    "\"cudaMemcpy\");\n"
                    "    else if (rc == 0)\n"
                    "      rc = tdsl_g_cuda(cudaMemset(d[i], 0, n), \"cudaMemset\");\n"
                    "  }\n",
               fn);
  }
  bool *written = arena_alloc(&cx->arena, sizeof(bool) * (size_t)(nb + 1));
  for (int i = 0; i < p->kernels.len; i++) {
    const LKernel *k = p->kernels.data[i];
    const GpuKernel *g = &launch[i];
    if (g->grid == 0) {
      buf_printf(out, "  // %s: nothing to do\n", g->name);
      continue;
    }
    buf_printf(out, "  if (rc == 0) {\n    %s<<<%" PRId64 ", %" PRId64 ", %d>>>(*derr", g->name, g->grid, g->block,
               g->shmem);
    for (int a = 0; a < k->args.len; a++) {
      const LArg *la = &k->args.data[a];
      if (la->buf >= nb)  // an LB_SHARED array of the kernel's own
        continue;
      DType dt = p->bufs.data[la->buf].dtype;
      buf_printf(out, ", (%s *)d[%d]", cexpr_storage_type(dt), la->buf);
      if (la->at)  // share_kernels: the kernel sees the buffer from element `at` on
        buf_printf(out, " + %" PRId64, la->at);
      if (la->written)
        written[la->buf] = true;
    }
    buf_printf(out, ");\n    rc = tdsl_g_after(*derr, \"%s\", %s%s);\n  }\n", g->name, k->errors.len ? g->name : "NULL",
               k->errors.len ? "_errors" : "");
  }
  for (int i = 0; i < nb; i++) {
    const LBuf *lb = &p->bufs.data[i];
    if (!written[i] || lb->kind == LB_TEMP)
      continue;
    buf_printf(out, "  if (rc == 0)  // b%d\n    rc = tdsl_g_cuda(cudaMemcpy(tdsl_tensor_data(&b[%d]), d[%d], "
                    "(size_t)tdsl_tensor_numel(&b[%d]) * tdsl_dtype_size(b[%d].dtype), cudaMemcpyDeviceToHost), "
                    "\"cudaMemcpy\");\n",
               i, i, i, i, i);
  }
  buf_puts(out, "  return rc;\n}\n\n");

  buf_puts(out, "extern \"C\" ");
  emit_entry_begin(cx, out, p);
  int nd = nb ? nb : 1;
  buf_printf(out, "  void *tdsl_g_d[%d] = {NULL};\n  tdsl_gpu_error *tdsl_g_derr = NULL;\n", nd);
  buf_printf(out, "  tdsl_g_rc = tdsl_g_%s_run(tdsl_g_b, tdsl_g_d, &tdsl_g_derr);\n", fn);
  buf_printf(out, "  for (int i = 0; i < %d; i++)\n    if (tdsl_g_d[i])\n      cudaFree(tdsl_g_d[i]);\n", nd);
  buf_puts(out, "  if (tdsl_g_derr)\n    cudaFree(tdsl_g_derr);\n");
  emit_entry_end(out, p);
}

static void cuda_emit(Ctx *cx, LProgram *const *progs, int nprogs, FILE *out) {
  Prelude pr = {0};
  Buf body;
  buf_init(&body, cx);
  GpuKernel **launches = arena_alloc(&cx->arena, sizeof(GpuKernel *) * (size_t)(nprogs + 1));
  for (int i = 0; i < nprogs; i++) {
    const LProgram *p = progs[i];
    launches[i] = arena_alloc(&cx->arena, sizeof(GpuKernel) * (size_t)(p->kernels.len + 1));
    buf_printf(&body, "%s// ---- %s: device ----\n\n", i ? "\n" : "", p->name);
    emit_kernels(cx, &pr, &body, p, launches[i]);
  }
  if (nprogs)
    buf_puts(&body, host_text);
  for (int i = 0; i < nprogs; i++) {
    buf_printf(&body, "%s// ---- %s: host ----\n\n", i ? "\n" : "", progs[i]->name);
    emit_entry(cx, &body, progs[i], launches[i]);
  }
  Buf head;
  buf_init(&head, cx);
  buf_printf(&head, "// Generated by tdslc from %s: CUDA C, device kernels and host entries.\n",
             emit_source_name(cx, progs, nprogs));
  buf_puts(&head, "// Build: nvcc -arch=sm_90 -c FILE.cu -I$(tdslc --print-include-dir)\n");
  buf_puts(&head, "#include <stddef.h>\n#include <stdint.h>\n\n#include <cuda_runtime.h>\n\n#include \"tdsl.h\"\n\n");
  emit_prelude(&head, &pr);
  buf_write(&head, out);
  buf_write(&body, out);
}

void cuda_device_image(Ctx *cx, const LProgram *p, GpuImage *out) {
  Prelude pr = {0};
  Buf body, head;
  buf_init(&body, cx);
  buf_init(&head, cx);
  GpuKernel *ks = arena_alloc(&cx->arena, sizeof(GpuKernel) * (size_t)(p->kernels.len + 1));
  emit_kernels(cx, &pr, &body, p, ks);
  buf_printf(&head, "// Generated by tdslc from %s: the device code of %s, for NVRTC.\n", p->file ? p->file : "no file",
             p->name);
  emit_prelude(&head, &pr);
  buf_puts(&head, body.data);
  *out = (GpuImage){head.data, ks, p->kernels.len};
}

const Target target_cuda = {"cuda", ".cu", cuda_emit};
