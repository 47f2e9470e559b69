// codegen/cuda.c: the CUDA C backend. Prints loop IR (ir/loop.h) as CUDA C: for
// --emit=cuda one .cu translation unit (device helpers, kernels, and per program a
// host entry with the CPU ABI of DESIGN.md that copies buffers to the device, launches
// and checks every kernel, and copies results back), compiling with
// `nvcc -arch=sm_90 -c -I$(tdslc --print-include-dir)`; for cuda_device_image the
// device code of one program alone (no includes: NVRTC has no libc headers) with the
// launch of each kernel. Every kernel takes (tdsl_gpu_error *err, b0, b1, ...), the
// convention of codegen/codegen.h, and is launched with a 1-D grid and block. Kernels
// with the same code (LKernel.same: a model's layers) are printed once, and launched
// once each with their own buffers, each pointer moved its LArg.at elements in.
//
// How each LKernel maps onto threads is the GPU schedule's (LKernel.gpu, decided by
// ir/sched_gpu.c; LGpuSched in ir/loop.h), and this file prints what it says:
//   FLAT    one grid-stride loop over the flattened elements, the innermost loop the
//           fastest-varying index, so consecutive threads touch consecutive elements.
//   ROWS    one block per row (grid-stride over rows). Statements every thread runs
//           are printed as they are (stores guarded by thread 0); a split nest as a
//           loop over the flattened iterations stepping by blockDim.x; a reduction as
//           per-thread partial results combined by tdsl_g_block_reduce (plain form) or
//           by warp shuffles and shared memory (argform, keeping the earliest best), the
//           result in every thread; __syncthreads() where the schedule puts a barrier.
//   MATMUL  LKernel.mm's nest (ir/matmul.c) as 16x16 output tiles per block: A and B
//           staged through shared memory 16 deep in k, one output element per thread,
//           the statements after the k loop applied with the sum before the store.
//   SERIAL  one thread per row, its body run sequentially as the C backend does.
// Numerics are those of codegen/c.c (the helpers and expressions of the C dialect in
// codegen/cexpr.c, as __device__ functions): only the association of a reduction
// across threads differs. Errors: the first raise sets the record's flag with
// atomicCAS and writes k and the value.
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

static const char *const reduce_text =
    "// Combines v of every thread of the block with op (blockDim.x a multiple of 32, every\n"
    "// thread calling); every thread gets the result. sh: 32 elements of shared memory.\n"
    "template <typename T, typename Op> static __device__ T tdsl_g_block_reduce(T v, Op op, T *sh) {\n"
    "  int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;\n"
    "  for (int o = 16; o > 0; o >>= 1) {\n"
    "    T x = __shfl_down_sync(0xffffffffu, v, o);\n"
    "    if (lane + o < 32)\n"
    "      v = op(v, x);\n"
    "  }\n"
    "  if (lane == 0)\n"
    "    sh[w] = v;\n"
    "  __syncthreads();\n"
    "  if (w == 0) {\n"
    "    v = sh[lane < nw ? lane : 0];\n"
    "    for (int o = 16; o > 0; o >>= 1) {\n"
    "      T x = __shfl_down_sync(0xffffffffu, v, o);\n"
    "      if (lane + o < nw)\n"
    "        v = op(v, x);\n"
    "    }\n"
    "    __syncwarp();\n"
    "    if (lane == 0)\n"
    "      sh[0] = v;\n"
    "  }\n"
    "  __syncthreads();\n"
    "  v = sh[0];\n"
    "  __syncthreads();  // sh is free again\n"
    "  return v;\n"
    "}\n";

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
    .reduce_text = reduce_text,
};

// The device prelude: base_text, then the helpers the kernels use.
static void emit_prelude(Buf *b, Prelude *pr) {
  buf_puts(b, base_text);
  cexpr_prelude(b, &dialect_cuda, pr);
  buf_puts(b, "\n");
}

// ---- the kernel printer ----
typedef struct CudaKernelGen {
  CExprGen g;           // the locals' names in g.lname change while a reduction is printed
  int uniq;             // fresh-name counter
  const char *key_set;  // argform: the statement appended to the `better` branch
} CudaKernelGen;

// ---- statement printing ----
static void stmts_seq(CudaKernelGen *c, const LStmtList *l);

static void open_scope(CudaKernelGen *c) { c->g.depth++; }

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

// A statement run by one thread, as the C backend runs it.
static void stmt_seq(CudaKernelGen *c, const LStmt *s) {
  switch (s->kind) {
  case LS_LOOP:
    cexpr_open_loop(&c->g, s);
    stmts_seq(c, &s->body);
    cexpr_close(&c->g);
    return;
  case LS_STORE: cexpr_store(&c->g, s); return;
  case LS_LET:
  case LS_SET: cexpr_let(&c->g, s); return;
  case LS_IF:
    cexpr_open_if(&c->g, s->cond);
    stmts_seq(c, &s->body);
    if (c->key_set) {
      line(c, "%s", c->key_set);
      c->key_set = NULL;
    }
    cexpr_close(&c->g);
    return;
  case LS_CALL:  // (GPU programs call no functions: ir/loop.h)
  case LS_COUNT: break;
  }
  td_unreachable();
}

static void stmts_seq(CudaKernelGen *c, const LStmtList *l) {
  for (int i = 0; i < l->len; i++)
    stmt_seq(c, l->data[i]);
}

// Declares each loop var of the nest from the flattened index `t` (innermost fastest),
// those its body reads (all where the nest says nothing of it).
// A nest with an empty loop runs no thread; its divisors print as 1 so the text still
// compiles (nvcc rejects a literal % 0).
static void decompose(CudaKernelGen *c, const LGpuNest *x, const char *t) {
  int64_t div = 1;
  for (int i = x->n - 1; i >= 0; i--) {
    const LStmt *s = x->loops[i];
    int64_t ext = s->extent > 0 ? s->extent : 1;
    if (x->read && !x->read[i])
      ;
    else if (div == 1 && i == 0)
      line(c, "const int64_t v%d = %s;", s->var, t);
    else if (div == 1)
      line(c, "const int64_t v%d = %s %% %" PRId64 ";", s->var, t, ext);
    else if (i == 0)
      line(c, "const int64_t v%d = %s / %" PRId64 ";", s->var, t, div);
    else
      line(c, "const int64_t v%d = %s / %" PRId64 " %% %" PRId64 ";", s->var, t, div, ext);
    div *= ext;
  }
}

// ---- the block statements of a row (GK_ROWS) ----
// The identity of op on dt (plain reductions: what threads other than 0 start from).
static const char *identity(Op op, DType dt) {
  bool f32 = dt == DT_F32, f64 = dt == DT_F64;
  switch (op) {
  case OP_ADD: return f32 ? "(-0.0f)" : f64 ? "(-0.0)" : dt == DT_BOOL ? "false" : "0";
  case OP_MUL: return f32 ? "1.0f" : f64 ? "1.0" : dt == DT_BOOL ? "true" : "1";
  case OP_MAXIMUM:
    return f32   ? "(-TDSL_G_INF)"
           : f64 ? "(-TDSL_G_DINF)"
                 : dt == DT_I32 ? "INT32_MIN" : dt == DT_I64 ? "INT64_MIN" : "false";
  case OP_MINIMUM:
    return f32 ? "TDSL_G_INF" : f64 ? "TDSL_G_DINF" : dt == DT_I32 ? "INT32_MAX" : dt == DT_I64 ? "INT64_MAX" : "true";
  case OP_LOGICAL_AND: return "true";
  case OP_LOGICAL_OR: return "false";
  default: td_unreachable();
  }
}

// `x OP y` for the block combine lambda.
static const char *combine_text(CudaKernelGen *c, Op op, DType dt) {
  CExprGen *g = &c->g;
  bool fl = dtype_is_float(dt), bo = dt == DT_BOOL;
  switch (op) {
  case OP_ADD:
    return bo ? "x | y" : fl ? "x + y" : arena_printf(&g->cx->arena, "%s(x, y)", cexpr_helper(g, G_INT, "add", dt));
  case OP_MUL:
    return bo ? "x & y" : fl ? "x * y" : arena_printf(&g->cx->arena, "%s(x, y)", cexpr_helper(g, G_INT, "mul", dt));
  case OP_MAXIMUM:
    return bo ? "x | y" : arena_printf(&g->cx->arena, "%s(x, y)", cexpr_helper(g, G_MAXMIN, "max", dt));
  case OP_MINIMUM:
    return bo ? "x & y" : arena_printf(&g->cx->arena, "%s(x, y)", cexpr_helper(g, G_MAXMIN, "min", dt));
  case OP_LOGICAL_AND: return "x & y";
  case OP_LOGICAL_OR: return "x | y";
  default: td_unreachable();
  }
}

// The split loop header over a nest's flattened iterations: each thread takes every
// blockDim.x-th one.
static void split_open(CudaKernelGen *c, const LGpuNest *x) {
  line(c, "for (int64_t tdsl_g_t = threadIdx.x; tdsl_g_t < %" PRId64 "; tdsl_g_t += blockDim.x) {", x->total);
  open_scope(c);
  decompose(c, x, "tdsl_g_t");
}

static void emit_plain_reduction(CudaKernelGen *c, const LGpuNest *x, const LGpuReduce *r) {
  line(c, "{");
  open_scope(c);
  const char *saved[LG_MAX_ACC];
  for (int a = 0; a < r->nacc; a++) {
    int lo = r->acc[a];
    DType dt = c->g.k->locals.data[lo];
    saved[a] = c->g.lname[lo];
    const char *pn = arena_printf(&c->g.cx->arena, "tdsl_g_p%d", c->uniq++);
    line(c, "%s %s = threadIdx.x == 0 ? %s : %s;", cexpr_type(dt), pn, saved[a], identity(r->op[a], dt));
    c->g.lname[lo] = pn;
  }
  split_open(c, x);
  stmts_seq(c, x->body);
  cexpr_close(&c->g);
  c->g.pr->single[H_REDUCE] = true;
  for (int a = 0; a < r->nacc; a++) {
    int lo = r->acc[a];
    DType dt = c->g.k->locals.data[lo];
    const char *t = dt == DT_BOOL ? "int" : cexpr_type(dt);
    line(c, "%s = tdsl_g_block_reduce(%s%s, [](%s x, %s y) { return %s; }, (%s *)tdsl_g_sh)%s;", saved[a],
         dt == DT_BOOL ? "(int)" : "", c->g.lname[lo], t, t, combine_text(c, r->op[a], dt), t,
         dt == DT_BOOL ? " != 0" : "");
    c->g.lname[lo] = saved[a];
  }
  cexpr_close(&c->g);
}

// cond of the argform with each private local read as `pre` + its accumulator's slot
// and each accumulator as `acc_pre` + its slot.
static void argform_cond(CudaKernelGen *c, const LGpuReduce *r, const char *new_pre, const char *old_pre) {
  const char **saved = arena_alloc(&c->g.cx->arena, sizeof(char *) * (size_t)c->g.k->locals.len);
  memcpy(saved, c->g.lname, sizeof(char *) * (size_t)c->g.k->locals.len);
  for (int a = 0; a < r->nacc; a++) {
    c->g.lname[r->acc[a]] = arena_printf(&c->g.cx->arena, "%s%d", old_pre, a);
    if (r->src[a] >= 0)
      c->g.lname[r->src[a]] = arena_printf(&c->g.cx->arena, "%s%d", new_pre, a);
  }
  cexpr_expr(&c->g, r->cond_if->cond);
  memcpy(c->g.lname, saved, sizeof(char *) * (size_t)c->g.k->locals.len);
}

// One step of the argform combine: the candidate (tdsl_g_o*, tdsl_g_okey) replaces the
// thread's (tdsl_g_a*, tdsl_g_key) when it is better, or as good and earlier.
static void argform_step(CudaKernelGen *c, const LGpuReduce *r, const char *bound) {
  Buf *b = c->g.b;
  line(c, "for (int tdsl_g_s = 16; tdsl_g_s > 0; tdsl_g_s >>= 1) {");
  open_scope(c);
  for (int a = 0; a < r->nacc; a++) {
    DType dt = c->g.k->locals.data[r->acc[a]];
    if (dt == DT_BOOL)
      line(c, "bool tdsl_g_o%d = __shfl_down_sync(0xffffffffu, (int)tdsl_g_a%d, tdsl_g_s) != 0;", a, a);
    else
      line(c, "%s tdsl_g_o%d = __shfl_down_sync(0xffffffffu, tdsl_g_a%d, tdsl_g_s);", cexpr_type(dt), a, a);
  }
  line(c, "long long tdsl_g_okey = __shfl_down_sync(0xffffffffu, tdsl_g_key, tdsl_g_s);");
  buf_indent(b, c->g.depth);
  buf_printf(b, "if (tdsl_g_lane + tdsl_g_s < %s && tdsl_g_okey != INT64_MAX && (tdsl_g_key == INT64_MAX || ", bound);
  argform_cond(c, r, "tdsl_g_o", "tdsl_g_a");
  buf_puts(b, " || (!");
  argform_cond(c, r, "tdsl_g_a", "tdsl_g_o");
  buf_puts(b, " && tdsl_g_okey < tdsl_g_key))) {\n");
  open_scope(c);
  for (int a = 0; a < r->nacc; a++)
    line(c, "tdsl_g_a%d = tdsl_g_o%d;", a, a);
  line(c, "tdsl_g_key = tdsl_g_okey;");
  cexpr_close(&c->g);
  cexpr_close(&c->g);
}

static void emit_arg_reduction(CudaKernelGen *c, const LGpuNest *x, const LGpuReduce *r) {
  line(c, "{");
  open_scope(c);
  const char *saved[LG_MAX_ACC];
  for (int a = 0; a < r->nacc; a++) {
    int lo = r->acc[a];
    saved[a] = c->g.lname[lo];
    line(c, "%s tdsl_g_a%d = %s;", cexpr_type(c->g.k->locals.data[lo]), a, saved[a]);
    c->g.lname[lo] = arena_printf(&c->g.cx->arena, "tdsl_g_a%d", a);
  }
  line(c, "long long tdsl_g_key = threadIdx.x == 0 ? -1 : INT64_MAX;  // -1: the initial values");
  split_open(c, x);
  c->key_set = "tdsl_g_key = tdsl_g_t;";
  stmts_seq(c, x->body);
  TD_ASSERT(!c->key_set);
  cexpr_close(&c->g);
  for (int a = 0; a < r->nacc; a++)
    c->g.lname[r->acc[a]] = saved[a];
  // combine: within each warp, then the warps' results in warp 0 through shared memory
  line(c, "int tdsl_g_lane = threadIdx.x & 31, tdsl_g_w = threadIdx.x >> 5, tdsl_g_nw = (blockDim.x + 31) >> 5;");
  argform_step(c, r, "32");
  line(c, "if (tdsl_g_lane == 0) {");
  open_scope(c);
  for (int a = 0; a < r->nacc; a++)
    line(c, "((%s *)(tdsl_g_sh + %d))[tdsl_g_w] = tdsl_g_a%d;", cexpr_type(c->g.k->locals.data[r->acc[a]]), 32 * a, a);
  line(c, "((long long *)(tdsl_g_sh + %d))[tdsl_g_w] = tdsl_g_key;", 32 * r->nacc);
  cexpr_close(&c->g);
  line(c, "__syncthreads();");
  line(c, "if (tdsl_g_w == 0) {");
  open_scope(c);
  line(c, "int tdsl_g_from = tdsl_g_lane < tdsl_g_nw ? tdsl_g_lane : 0;");
  for (int a = 0; a < r->nacc; a++)
    line(c, "tdsl_g_a%d = ((%s *)(tdsl_g_sh + %d))[tdsl_g_from];", a, cexpr_type(c->g.k->locals.data[r->acc[a]]),
         32 * a);
  line(c, "tdsl_g_key = ((long long *)(tdsl_g_sh + %d))[tdsl_g_from];", 32 * r->nacc);
  argform_step(c, r, "tdsl_g_nw");
  line(c, "__syncwarp();");
  line(c, "if (tdsl_g_lane == 0) {");
  open_scope(c);
  for (int a = 0; a < r->nacc; a++)
    line(c, "((%s *)(tdsl_g_sh + %d))[0] = tdsl_g_a%d;", cexpr_type(c->g.k->locals.data[r->acc[a]]), 32 * a, a);
  cexpr_close(&c->g);
  cexpr_close(&c->g);
  line(c, "__syncthreads();");
  for (int a = 0; a < r->nacc; a++)
    line(c, "%s = ((%s *)(tdsl_g_sh + %d))[0];", saved[a], cexpr_type(c->g.k->locals.data[r->acc[a]]), 32 * a);
  line(c, "__syncthreads();");
  cexpr_close(&c->g);
}

// The statements of a row as the schedule says the block runs them.
static void blocks_print(CudaKernelGen *c, const LGpuBlockList *l);

static void block_print(CudaKernelGen *c, const LGpuBlock *b) {
  const LStmt *s = b->s;
  if (b->sync)
    line(c, "__syncthreads();");
  switch (b->role) {
  case GB_SPLIT:
    split_open(c, &b->nest);
    stmts_seq(c, b->nest.body);
    cexpr_close(&c->g);
    return;
  case GB_REDUCE:
    if (b->red.argform)
      emit_arg_reduction(c, &b->nest, &b->red);
    else
      emit_plain_reduction(c, &b->nest, &b->red);
    return;
  case GB_EVERY: break;
  case GB_COUNT: td_unreachable();
  }
  switch (s->kind) {
  case LS_LET:
  case LS_SET: cexpr_let(&c->g, s); return;
  case LS_STORE:
    line(c, "if (threadIdx.x == 0)");
    c->g.depth++;
    cexpr_store(&c->g, s);
    c->g.depth--;
    return;
  case LS_IF:
    cexpr_open_if(&c->g, s->cond);
    blocks_print(c, &b->body);
    cexpr_close(&c->g);
    return;
  case LS_LOOP:  // every thread runs the loop
    cexpr_open_loop(&c->g, s);
    blocks_print(c, &b->body);
    if (b->sync_each)
      line(c, "__syncthreads();");
    cexpr_close(&c->g);
    return;
  case LS_CALL:  // (GPU programs call no functions: ir/loop.h)
  case LS_COUNT: break;
  }
  td_unreachable();
}

static void blocks_print(CudaKernelGen *c, const LGpuBlockList *l) {
  for (int i = 0; i < l->len; i++)
    block_print(c, l->data[i]);
}

// ---- the matmul tile (GK_MATMUL) ----
// A block per output tile of one batch element: LKernel.mm's factors staged through
// shared memory, its statements after the k loop applied with the sum.
static void emit_matmul(CudaKernelGen *c, const LMatmul *mm, const LGpuTile *t) {
  int E = t->edge, ivar = t->i->var, jvar = t->j->var, kvar = mm->kloop->var;
  int64_t I = t->i->extent, J = t->j->extent, K = mm->kloop->extent;
  const char *T = cexpr_type(mm->dt);
  line(c, "__shared__ %s tdsl_g_as[%d][%d + 1], tdsl_g_bs[%d][%d + 1];", T, E, E, E, E);
  line(c, "const int tdsl_g_tx = threadIdx.x %% %d, tdsl_g_ty = threadIdx.x / %d;", E, E);
  line(c, "for (int64_t tdsl_g_tile = blockIdx.x; tdsl_g_tile < %" PRId64 "; tdsl_g_tile += gridDim.x) {", t->ntiles);
  open_scope(c);
  if (t->batch.n)
    decompose(c, &t->batch, arena_printf(&c->g.cx->arena, "(tdsl_g_tile / %" PRId64 ")", t->ni * t->nj));
  line(c, "const int64_t tdsl_g_i0 = tdsl_g_tile / %" PRId64 " %% %" PRId64 " * %d, tdsl_g_j0 = tdsl_g_tile %% %" PRId64
          " * %d;", t->nj, t->ni, E, t->nj, E);
  buf_indent(c->g.b, c->g.depth);
  buf_printf(c->g.b, "%s tdsl_g_acc = ", T);
  cexpr_expr(&c->g, mm->init);
  buf_puts(c->g.b, ";\n");
  line(c, "for (int64_t tdsl_g_k0 = 0; tdsl_g_k0 < %" PRId64 "; tdsl_g_k0 += %d) {", K, E);
  open_scope(c);
  // the loads, with the thread roles the schedule chose
  const char *ar = t->a_kfast ? "tdsl_g_ty" : "tdsl_g_tx", *ac = t->a_kfast ? "tdsl_g_tx" : "tdsl_g_ty";
  const char *br = t->b_jfast ? "tdsl_g_ty" : "tdsl_g_tx", *bc = t->b_jfast ? "tdsl_g_tx" : "tdsl_g_ty";
  line(c, "{");
  open_scope(c);
  line(c, "const int64_t v%d = tdsl_g_i0 + %s, v%d = tdsl_g_k0 + %s;", ivar, ar, kvar, ac);
  buf_indent(c->g.b, c->g.depth);
  buf_printf(c->g.b, "tdsl_g_as[%s][%s] = v%d < %" PRId64 " && v%d < %" PRId64 " ? ", ar, ac, ivar, I, kvar, K);
  cexpr_expr(&c->g, mm->a);
  buf_printf(c->g.b, " : (%s)0;\n", T);
  cexpr_close(&c->g);
  line(c, "{");
  open_scope(c);
  line(c, "const int64_t v%d = tdsl_g_k0 + %s, v%d = tdsl_g_j0 + %s;", kvar, br, jvar, bc);
  buf_indent(c->g.b, c->g.depth);
  buf_printf(c->g.b, "tdsl_g_bs[%s][%s] = v%d < %" PRId64 " && v%d < %" PRId64 " ? ", br, bc, kvar, K, jvar, J);
  cexpr_expr(&c->g, mm->b);
  buf_printf(c->g.b, " : (%s)0;\n", T);
  cexpr_close(&c->g);
  line(c, "__syncthreads();");
  line(c, "const int tdsl_g_kn = %" PRId64 " - tdsl_g_k0 < %d ? (int)(%" PRId64 " - tdsl_g_k0) : %d;", K, E, K, E);
  line(c, "for (int tdsl_g_kk = 0; tdsl_g_kk < tdsl_g_kn; tdsl_g_kk++)");
  line(c, "  tdsl_g_acc = tdsl_g_acc + tdsl_g_as[tdsl_g_ty][tdsl_g_kk] * tdsl_g_bs[tdsl_g_kk][tdsl_g_tx];");
  line(c, "__syncthreads();");
  cexpr_close(&c->g);
  line(c, "const int64_t v%d = tdsl_g_i0 + tdsl_g_ty, v%d = tdsl_g_j0 + tdsl_g_tx;", ivar, jvar);
  line(c, "if (v%d < %" PRId64 " && v%d < %" PRId64 ") {", ivar, I, jvar, J);
  open_scope(c);
  const char *saved = c->g.lname[mm->acc];
  c->g.lname[mm->acc] = "tdsl_g_acc";
  for (int i = mm->epi; i < mm->body->len; i++)
    stmt_seq(c, mm->body->data[i]);
  c->g.lname[mm->acc] = saved;
  cexpr_close(&c->g);
  cexpr_close(&c->g);
}

// ---- kernels ----
static const char *const shape_names[] = {"elementwise", "block per row", "tiled matmul", "thread per row"};
_Static_assert(sizeof shape_names / sizeof *shape_names == GK_COUNT, "a name per LGpuShape");

static void emit_kernel(Ctx *cx, Prelude *pr, Buf *out, const LProgram *p, int ki, GpuKernel *launch) {
  const LKernel *k = p->kernels.data[ki];
  int nargs = k->args.len;
  const LGpuSched *gs = k->gpu;  // sched_gpu's
  TD_ASSERT(gs);
  TD_ASSERT(gs->shape != GK_COUNT);  // more arguments than LG_MAX_ARGS
  CudaKernelGen c = {0};
  cexpr_begin(&c.g, cx, &dialect_cuda, pr, p, k);

  Buf body;
  buf_init(&body, cx);
  c.g.b = &body;
  const LGpuNest *outer = &gs->outer;
  switch (gs->shape) {
  case GK_FLAT:
    line(&c, "for (int64_t tdsl_g_i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; tdsl_g_i < %" PRId64
             "; tdsl_g_i += (int64_t)gridDim.x * blockDim.x) {", outer->total);
    open_scope(&c);
    decompose(&c, outer, "tdsl_g_i");
    stmts_seq(&c, outer->body);
    cexpr_close(&c.g);
    break;
  case GK_ROWS:
    line(&c, "for (int64_t tdsl_g_r = blockIdx.x; tdsl_g_r < %" PRId64 "; tdsl_g_r += gridDim.x) {", outer->total);
    open_scope(&c);
    decompose(&c, outer, "tdsl_g_r");
    blocks_print(&c, &gs->row);
    cexpr_close(&c.g);
    break;
  case GK_MATMUL: emit_matmul(&c, k->mm, &gs->tile); break;
  case GK_SERIAL:
    line(&c, "for (int64_t tdsl_g_r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; tdsl_g_r < %" PRId64
             "; tdsl_g_r += (int64_t)gridDim.x * blockDim.x) {", outer->total);
    open_scope(&c);
    decompose(&c, outer, "tdsl_g_r");
    stmts_seq(&c, outer->body);
    cexpr_close(&c.g);
    break;
  case GK_COUNT: td_unreachable();
  }
  *launch = (GpuKernel){emit_kernel_name(cx, p, ki), gs->grid, gs->block, 0};

  // header comment: what it computes, its shape and launch, the kernels that launch it
  // too, what each pointer is
  const char *shared = emit_shared_note(cx, p, ki);
  const char *launch_note = arena_printf(&cx->arena, "%s: grid %" PRId64 ", block %" PRId64 "%s%s",
                                         shape_names[gs->shape], gs->grid, gs->block, shared ? "; " : "",
                                         shared ? shared : "");
  emit_kernel_comment(out, p, ki, launch_note);
  buf_printf(out, "extern \"C\" __global__ void __launch_bounds__(%" PRId64 ") %s(tdsl_gpu_error *tdsl_g_err",
             gs->block, launch->name);
  for (int i = 0; i < nargs; i++) {
    const LArg *a = &k->args.data[i];
    DType dt = p->bufs.data[a->buf].dtype;
    buf_printf(out, ", %s%s *__restrict__ b%d", a->written ? "" : "const ", cexpr_storage_type(dt), i);
  }
  buf_puts(out, ") {\n");
  if (!c.g.has_err)
    buf_puts(out, "  (void)tdsl_g_err;\n");
  for (int i = 0; i < nargs; i++) {
    if (!c.g.arg_used[i])
      buf_printf(out, "  (void)b%d;\n", i);
  }
  if (gs->nshared)
    buf_printf(out, "  __shared__ unsigned long long tdsl_g_sh[%d];\n", 32 * gs->nshared);
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
  int nb = p->bufs.len;
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
