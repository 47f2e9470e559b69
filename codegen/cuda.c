// codegen/cuda.c: the CUDA C backend. Prints loop IR (ir/loop.h) as CUDA C: for
// --emit=cuda one .cu translation unit (device helpers, kernels, and per program a
// host entry with the CPU ABI of DESIGN.md that copies buffers to the device, launches
// and checks every kernel, and copies results back), compiling with
// `nvcc -arch=sm_90 -c -I$(tdslc --print-include-dir)`; for cuda_device_image the
// device code of one program alone (no includes: NVRTC has no libc headers) with the
// launch of each kernel. Every kernel takes (tdsl_gpu_error *err, b0, b1, ...), the
// convention of codegen/codegen.h, and is launched with a 1-D grid and block.
//
// Each LKernel gets one of four shapes, chosen from the structure of its loops:
//   FLAT    elementwise: a perfect nest of independent loops whose innermost body has
//           no loop. One grid-stride loop over the flattened iteration space; the
//           innermost loop is the fastest-varying index, so consecutive threads touch
//           consecutive elements. Block 256.
//   ROWS    an outer nest of independent loops (the rows; none: one row) whose body has
//           inner loops: one block per row (grid-stride over rows). In the row, scalar
//           statements run in every thread (uniform values; stores by thread 0); an
//           inner loop nest whose iterations are independent is split across the
//           block's threads; a reduction nest (`acc = acc OP e`, OP associative, or the
//           argmax/argmin `if (better) { acc = ... }` form) is split across the threads
//           and combined with warp shuffles and shared memory, the result broadcast to
//           every thread; any other inner loop runs in every thread, its body treated
//           the same way. __syncthreads() separates statements whose accesses meet.
//   MATMUL  a matmul whose loops have the shapes ir/kernel.c builds (the i-k-j rows with
//           an accumulator buffer, or the dot form with an accumulator local): 16x16
//           output tiles per block, A and B staged through shared memory 16 deep in k,
//           one output element per thread, the epilogue applied before the store.
//   SERIAL  anything else: one thread per row (the outer independent nest, or a
//           single thread), its body run sequentially as the C backend does.
// Independence is decided here from the affine indices (the `parallel` flag of the
// loop IR marks only loops worth CPU threads): every access inside a loop to a buffer
// written inside it must move by the same stride c per iteration and stay within a
// window narrower than |c| (or all accesses share one index that is injective over the
// loop's var and the inner vars it moves with), and no local may carry a value across
// iterations.
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

// ---- sets of kernel args (which buffers a statement reads and writes) ----
enum { MAX_ARGS = 256 };
typedef struct ArgSet {
  uint64_t w[MAX_ARGS / 64];
} ArgSet;

static void set_add(ArgSet *s, int i) {
  TD_ASSERT(i >= 0 && i < MAX_ARGS);
  s->w[i / 64] |= (uint64_t)1 << (i % 64);
}
static bool set_has(const ArgSet *s, int i) { return (s->w[i / 64] >> (i % 64)) & 1; }
static bool set_meets(const ArgSet *a, const ArgSet *b) {
  for (int i = 0; i < MAX_ARGS / 64; i++)
    if (a->w[i] & b->w[i])
      return true;
  return false;
}
static void set_union(ArgSet *a, const ArgSet *b) {
  for (int i = 0; i < MAX_ARGS / 64; i++)
    a->w[i] |= b->w[i];
}
static bool set_empty(const ArgSet *a) {
  for (int i = 0; i < MAX_ARGS / 64; i++)
    if (a->w[i])
      return false;
  return true;
}

static void expr_access(const LExpr *e, ArgSet *r) {
  if (!e)
    return;
  if (e->kind == LX_LOAD) {
    set_add(r, e->buf);
    expr_access(e->idx.dyn, r);
  }
  expr_access(e->a, r);
  expr_access(e->b, r);
  expr_access(e->c, r);
}

static void stmts_access(const LStmtList *l, ArgSet *r, ArgSet *w);
static void stmt_access(const LStmt *s, ArgSet *r, ArgSet *w) {
  expr_access(s->val, r);
  expr_access(s->cond, r);
  if (s->kind == LS_STORE) {
    set_add(w, s->buf);
    expr_access(s->idx.dyn, r);
  }
  stmts_access(&s->body, r, w);
}
static void stmts_access(const LStmtList *l, ArgSet *r, ArgSet *w) {
  for (int i = 0; i < l->len; i++)
    stmt_access(l->data[i], r, w);
}

// ---- the kernel printer ----
typedef enum { K_FLAT, K_ROWS, K_MATMUL, K_SERIAL } KernelShape;

// A matmul found in a kernel's loops (the MATMUL shape).
typedef struct Matmul {
  bool dot;              // dot form: acc local; else rows form: acc buffer
  int nbatch;            // outer loops before i (batch dims)
  const LStmt *outer[TD_MAX_DIMS + 2];
  int nouter;
  int ivar, jvar, kvar;  // loop vars of i, j, k
  int64_t I, J, K;
  const LExpr *a, *bexp;  // the two factors (a reads i and k, b reads k and j)
  const LExpr *init;      // the accumulator's initial value
  DType acc_dt;
  int acc_local;          // dot form
  int acc_arg;            // rows form: the accumulator buffer arg
  LIndex acc_idx;         // rows form: its index in the accumulate loop (over ivar, jvar)
  const LStmt *kloop;     // the k loop
  const LStmtList *rest;  // dot form: statements after the k loop (per output element)
  int rest_from;          // dot form: index in the row body of the first of them
  const LStmt *epi;       // rows form: the epilogue loop over j (NULL if none)
  int a_local;            // rows form: the local holding A's element
} Matmul;

typedef struct CudaKernelGen {
  CExprGen g;         // the locals' names in g.lname change while a reduction is printed
  int64_t *extent;    // per loop var: its loop's extent
  int nsh;            // 32-element slots of shared scratch the kernel needs
  int uniq;           // fresh-name counter
  int64_t max_split;  // the largest split loop of a ROWS kernel
  const char *key_set;  // argmax form: the statement appended to the `better` branch
} CudaKernelGen;

// The extent of every loop var of l.
static void loop_extents(CudaKernelGen *c, const LStmtList *l) {
  for (int i = 0; i < l->len; i++) {
    if (l->data[i]->kind == LS_LOOP)
      c->extent[l->data[i]->var] = l->data[i]->extent;
    loop_extents(c, &l->data[i]->body);
  }
}

// ---- structure queries ----
static bool expr_reads_local(const LExpr *e, int local) {
  if (!e)
    return false;
  if (e->kind == LX_LOCAL && e->local == local)
    return true;
  if (e->kind == LX_LOAD && expr_reads_local(e->idx.dyn, local))
    return true;
  return expr_reads_local(e->a, local) || expr_reads_local(e->b, local) || expr_reads_local(e->c, local);
}

static bool index_reads_var(const LIndex *ix, int var);

static bool expr_reads_var(const LExpr *e, int var) {
  if (!e)
    return false;
  if (e->kind == LX_VAR && e->var == var)
    return true;
  if (e->kind == LX_LOAD && index_reads_var(&e->idx, var))
    return true;
  return expr_reads_var(e->a, var) || expr_reads_var(e->b, var) || expr_reads_var(e->c, var);
}

static bool index_reads_var(const LIndex *ix, int var) {
  for (int t = 0; t < ix->nterms; t++)
    if (ix->var[t] == var && ix->coef[t] != 0)
      return true;
  return expr_reads_var(ix->dyn, var);
}

static bool stmts_read_var(const LStmtList *l, int var) {
  for (int i = 0; i < l->len; i++) {
    const LStmt *s = l->data[i];
    if (expr_reads_var(s->val, var) || expr_reads_var(s->cond, var) ||
        (s->kind == LS_STORE && index_reads_var(&s->idx, var)) || stmts_read_var(&s->body, var))
      return true;
  }
  return false;
}

static bool expr_has_load(const LExpr *e) {
  if (!e)
    return false;
  return e->kind == LX_LOAD || expr_has_load(e->a) || expr_has_load(e->b) || expr_has_load(e->c);
}

// Whether any statement of l (or below) mentions local (reads it, lets or sets it).
static bool stmts_mention_local(const LStmtList *l, int local, const LStmt *skip) {
  for (int i = 0; i < l->len; i++) {
    const LStmt *s = l->data[i];
    if (s == skip)
      continue;
    if ((s->kind == LS_LET || s->kind == LS_SET) && s->local == local)
      return true;
    if (expr_reads_local(s->val, local) || expr_reads_local(s->cond, local) ||
        (s->kind == LS_STORE && expr_reads_local(s->idx.dyn, local)))
      return true;
    if (stmts_mention_local(&s->body, local, skip))
      return true;
  }
  return false;
}

// Locals that `loop` lets or sets, and that the rest of the kernel mentions: they
// carry a value across iterations (or out of the loop).
static bool carries_local(const CudaKernelGen *c, const LStmtList *l, const LStmt *loop) {
  for (int i = 0; i < l->len; i++) {
    const LStmt *s = l->data[i];
    if ((s->kind == LS_LET || s->kind == LS_SET) && stmts_mention_local(&c->g.k->body, s->local, loop))
      return true;
    if (carries_local(c, &s->body, loop))
      return true;
  }
  return false;
}

static bool stmts_has_loop(const LStmtList *l) {
  for (int i = 0; i < l->len; i++) {
    if (l->data[i]->kind == LS_LOOP || stmts_has_loop(&l->data[i]->body))
      return true;
  }
  return false;
}

// The vars of loops inside l.
static void inner_vars(const LStmtList *l, bool *inner) {
  for (int i = 0; i < l->len; i++) {
    if (l->data[i]->kind == LS_LOOP)
      inner[l->data[i]->var] = true;
    inner_vars(&l->data[i]->body, inner);
  }
}

// One access to a written buffer, for the independence test.
typedef struct Access {
  int arg;
  const LIndex *idx;
} Access;
typedef VEC(Access) AccessList;

static void expr_loads(Ctx *cx, const LExpr *e, AccessList *out) {
  if (!e)
    return;
  if (e->kind == LX_LOAD) {
    vec_push(&cx->arena, out, ((Access){e->buf, &e->idx}));
    expr_loads(cx, e->idx.dyn, out);
  }
  expr_loads(cx, e->a, out);
  expr_loads(cx, e->b, out);
  expr_loads(cx, e->c, out);
}

static void stmts_accesses(Ctx *cx, const LStmtList *l, AccessList *out) {
  for (int i = 0; i < l->len; i++) {
    const LStmt *s = l->data[i];
    expr_loads(cx, s->val, out);
    expr_loads(cx, s->cond, out);
    if (s->kind == LS_STORE) {
      vec_push(&cx->arena, out, ((Access){s->buf, &s->idx}));
      expr_loads(cx, s->idx.dyn, out);
    }
    stmts_accesses(cx, &s->body, out);
  }
}

// The coefficient of var in ix.
static int64_t coef_of(const LIndex *ix, int var) {
  int64_t s = 0;
  for (int t = 0; t < ix->nterms; t++)
    if (ix->var[t] == var)
      s += ix->coef[t];
  return s;
}

static bool same_index(const LIndex *a, const LIndex *b, int nvars);

// The second test of loop_independent, for interleaved layouts (a loop over a
// dim that is not the outermost of the buffer): every access of arg has the same
// index, and that index, over the loop's var and the inner vars it moves with, is
// injective — each |coef| (sorted) exceeds the span of all smaller ones.
static bool radix_disjoint(CudaKernelGen *c, const AccessList *acc, int arg, const LIndex *first, const bool *inner,
                           const LStmt *loop) {
  int nv = c->g.k->nvars;
  for (int i = 0; i < acc->len; i++)
    if (acc->data[i].arg == arg && !same_index(acc->data[i].idx, first, nv))
      return false;
  int64_t *mag = arena_alloc(&c->g.cx->arena, sizeof(int64_t) * (size_t)(nv + 1));
  int64_t *span = arena_alloc(&c->g.cx->arena, sizeof(int64_t) * (size_t)(nv + 1));
  int n = 0;
  for (int v = 0; v < nv; v++) {
    if (!inner[v] && v != loop->var)
      continue;
    int64_t k = coef_of(first, v);
    int64_t e = v == loop->var ? loop->extent : c->extent[v];
    if (k == 0 || e <= 1)
      continue;
    k = k < 0 ? -k : k;
    int j = n++;
    while (j > 0 && mag[j - 1] > k) {  // insertion sort by |coef|
      mag[j] = mag[j - 1], span[j] = span[j - 1];
      j--;
    }
    mag[j] = k, span[j] = k * (e - 1);
  }
  int64_t below = 0;
  for (int j = 0; j < n; j++) {
    if (mag[j] <= below)
      return false;
    below += span[j];
  }
  return true;
}

// Whether the iterations of `loop` are independent (see the file comment), with every
// var outside it fixed.
static bool loop_independent(CudaKernelGen *c, const LStmt *loop) {
  Ctx *cx = c->g.cx;
  if (carries_local(c, &loop->body, loop))
    return false;
  ArgSet r = {0}, w = {0};
  stmts_access(&loop->body, &r, &w);
  if (set_empty(&w))
    return true;
  int nv = c->g.k->nvars;
  bool *inner = arena_alloc(&cx->arena, sizeof(bool) * (size_t)(nv + 1));
  inner_vars(&loop->body, inner);
  AccessList acc = {0};
  stmts_accesses(cx, &loop->body, &acc);
  for (int a = 0; a < c->g.k->args.len; a++) {
    if (!set_has(&w, a))
      continue;
    const LIndex *first = NULL;
    int64_t cv = 0, lo = 0, hi = 0;
    for (int i = 0; i < acc.len; i++) {
      if (acc.data[i].arg != a)
        continue;
      const LIndex *ix = acc.data[i].idx;
      if (ix->dyn)
        return false;
      int64_t l = ix->base, h = ix->base;
      for (int v = 0; v < nv; v++) {
        int64_t k = coef_of(ix, v);
        if (inner[v]) {
          int64_t span = k * (c->extent[v] - 1);
          if (span < 0)
            l += span;
          else
            h += span;
        } else if (first && k != coef_of(first, v)) {
          return false;  // outer vars (and the loop's own) must move every access alike
        }
      }
      if (!first) {
        first = ix;
        cv = coef_of(ix, loop->var);
        lo = l, hi = h;
      } else {
        lo = l < lo ? l : lo;
        hi = h > hi ? h : hi;
      }
    }
    if (!first)
      continue;
    int64_t mag = cv < 0 ? -cv : cv;
    if (mag == 0)
      return false;
    if (hi - lo >= mag && !radix_disjoint(c, &acc, a, first, inner, loop))
      return false;
  }
  return true;
}

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
  case LS_COUNT: break;
  }
  td_unreachable();
}

static void stmts_seq(CudaKernelGen *c, const LStmtList *l) {
  for (int i = 0; i < l->len; i++)
    stmt_seq(c, l->data[i]);
}

// The loops of a perfect nest starting at s (each body exactly one loop, down to the
// first body that is not); returns how many, with the innermost body.
static int perfect_nest(const LStmt *s, const LStmt **loops, int max, const LStmtList **body) {
  int n = 0;
  while (s->kind == LS_LOOP && n < max) {
    loops[n++] = s;
    *body = &s->body;
    if (s->body.len != 1 || s->body.data[0]->kind != LS_LOOP)
      break;
    s = s->body.data[0];
  }
  return n;
}

static int64_t nest_size(const LStmt *const *loops, int n) {
  int64_t t = 1;
  for (int i = 0; i < n; i++)
    t *= loops[i]->extent;
  return t;
}

static bool stmts_read_var(const LStmtList *l, int var);

// Declares each loop var of the nest from the flattened index `t` (innermost fastest),
// those that `body` reads.
static void decompose(CudaKernelGen *c, const LStmt *const *loops, int n, const char *t, const LStmtList *body) {
  int64_t div = 1;
  for (int i = n - 1; i >= 0; i--) {
    const LStmt *s = loops[i];
    if (body && !stmts_read_var(body, s->var))
      ;
    else if (div == 1 && i == 0)
      line(c, "const int64_t v%d = %s;", s->var, t);
    else if (div == 1)
      line(c, "const int64_t v%d = %s %% %" PRId64 ";", s->var, t, s->extent);
    else if (i == 0)
      line(c, "const int64_t v%d = %s / %" PRId64 ";", s->var, t, div);
    else
      line(c, "const int64_t v%d = %s / %" PRId64 " %% %" PRId64 ";", s->var, t, div, s->extent);
    div *= s->extent;
  }
}

// ---- block-level analysis: map nests and reduction nests ----
enum { MAX_NEST = 32, MAX_ACC = 8 };

// A perfect nest whose iterations are independent and whose innermost body has no
// loop: split across the block's threads.
static bool is_map_nest(CudaKernelGen *c, const LStmt *s, const LStmt **loops, int *n, const LStmtList **body) {
  *n = perfect_nest(s, loops, MAX_NEST, body);
  if (*n == 0 || stmts_has_loop(*body))
    return false;
  for (int i = 0; i < *n; i++)
    if (!loop_independent(c, loops[i]))
      return false;
  return true;
}

typedef struct Reduction {
  bool argform;           // the `if (better) { acc = ... }` form
  int nacc;
  int acc[MAX_ACC];       // the accumulator locals
  Op op[MAX_ACC];         // plain form: each one's combine op
  int src[MAX_ACC];       // argform: the private local each acc takes, or -1
  const LStmt *cond_if;   // argform: the if
} Reduction;

static bool is_assoc(Op op) {
  return op == OP_ADD || op == OP_MUL || op == OP_MAXIMUM || op == OP_MINIMUM || op == OP_LOGICAL_AND ||
         op == OP_LOGICAL_OR;
}

static int acc_index(const Reduction *r, int local) {
  for (int i = 0; i < r->nacc; i++)
    if (r->acc[i] == local)
      return i;
  return -1;
}

// Whether the expression reads only locals, constants and pure arithmetic (no var, no
// load): the argform's condition, evaluated again when partial results are combined.
static bool pure_of_locals(const LExpr *e) {
  if (!e)
    return true;
  if (e->kind == LX_VAR || e->kind == LX_LOAD || e->kind == LX_CHECKED_INDEX || lx_raises_here(e))
    return false;
  return pure_of_locals(e->a) && pure_of_locals(e->b) && pure_of_locals(e->c);
}

static bool is_private(const CudaKernelGen *c, const LStmtList *body, int local, const LStmt *nest) {
  bool let_here = false;
  for (int i = 0; i < body->len; i++)
    if (body->data[i]->kind == LS_LET && body->data[i]->local == local)
      let_here = true;
  return let_here && !stmts_mention_local(&c->g.k->body, local, nest);
}

// A perfect nest whose innermost body combines values into accumulator locals.
static bool is_reduction_nest(CudaKernelGen *c, const LStmt *s, const LStmt **loops, int *n, const LStmtList **body,
                              Reduction *r) {
  *n = perfect_nest(s, loops, MAX_NEST, body);
  *r = (Reduction){0};
  if (*n == 0 || stmts_has_loop(*body))
    return false;
  const LStmtList *l = *body;
  ArgSet rd = {0}, wr = {0};
  stmts_access(l, &rd, &wr);
  if (!set_empty(&wr))
    return false;
  // plain form: lets of private locals, then `acc = acc OP e`
  bool plain = true;
  for (int i = 0; i < l->len && plain; i++) {
    const LStmt *t = l->data[i];
    if (t->kind == LS_LET && is_private(c, l, t->local, s))
      continue;
    if (t->kind != LS_SET || r->nacc == MAX_ACC || acc_index(r, t->local) >= 0) {
      plain = false;
      break;
    }
    DType lt = c->g.k->locals.data[t->local];
    const LExpr *v = t->val;
    if (dtype_is_half(lt) || v->kind != LX_BINARY || !is_assoc(v->op) || v->dt != lt) {
      plain = false;
      break;
    }
    const LExpr *other = NULL;
    if (v->a->kind == LX_LOCAL && v->a->local == t->local)
      other = v->b;
    else if (v->b->kind == LX_LOCAL && v->b->local == t->local)
      other = v->a;
    if (!other || expr_reads_local(other, t->local)) {
      plain = false;
      break;
    }
    r->acc[r->nacc] = t->local;
    r->op[r->nacc++] = v->op;
  }
  if (plain && r->nacc > 0) {
    // no accumulator read anywhere else in the body
    for (int a = 0; a < r->nacc; a++)
      for (int i = 0; i < l->len; i++) {
        const LStmt *t = l->data[i];
        if (t->kind == LS_SET && t->local == r->acc[a])
          continue;
        if (expr_reads_local(t->val, r->acc[a]))
          return false;
      }
    for (int a = 0; a < r->nacc; a++)
      for (int b2 = 0; b2 < r->nacc; b2++)
        if (a != b2) {
          for (int i = 0; i < l->len; i++)
            if (l->data[i]->kind == LS_SET && l->data[i]->local == r->acc[a] &&
                expr_reads_local(l->data[i]->val, r->acc[b2]))
              return false;
        }
    return true;
  }
  // argform: lets of private locals, then one `if (cond) { acc = x; ... }`
  *r = (Reduction){.argform = true};
  if (l->len < 1 || l->data[l->len - 1]->kind != LS_IF)
    return false;
  const LStmt *iff = l->data[l->len - 1];
  r->cond_if = iff;
  for (int i = 0; i + 1 < l->len; i++)
    if (l->data[i]->kind != LS_LET || !is_private(c, l, l->data[i]->local, s))
      return false;
  if (iff->body.len == 0 || iff->body.len > MAX_ACC)
    return false;
  for (int i = 0; i < iff->body.len; i++) {
    const LStmt *t = iff->body.data[i];
    if (t->kind != LS_SET || acc_index(r, t->local) >= 0 || is_private(c, l, t->local, s))
      return false;
    r->acc[r->nacc] = t->local;
    r->src[r->nacc++] = t->val->kind == LX_LOCAL && is_private(c, l, t->val->local, s) ? t->val->local : -1;
  }
  for (int i = 0; i < iff->body.len; i++) {
    const LStmt *t = iff->body.data[i];
    if (c->g.k->locals.data[t->local] != t->val->dt || dtype_is_half(t->val->dt))
      return false;
    for (int a = 0; a < r->nacc; a++)
      if (expr_reads_local(t->val, r->acc[a]))
        return false;
  }
  for (int i = 0; i + 1 < l->len; i++)
    for (int a = 0; a < r->nacc; a++)
      if (expr_reads_local(l->data[i]->val, r->acc[a]))
        return false;
  // the condition: accumulators and private locals that some accumulator takes
  if (!pure_of_locals(iff->cond))
    return false;
  for (int lo = 0; lo < c->g.k->locals.len; lo++) {
    if (!expr_reads_local(iff->cond, lo) || acc_index(r, lo) >= 0)
      continue;
    bool taken = false;
    for (int a = 0; a < r->nacc; a++)
      taken |= r->src[a] == lo;
    if (!taken)
      return false;
  }
  return true;
}

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

// The split loop header over n flattened iterations: each thread takes every
// blockDim.x-th one.
static void split_open(CudaKernelGen *c, const LStmt *const *loops, int n, const LStmtList *body) {
  int64_t total = nest_size(loops, n);
  if (total > c->max_split)
    c->max_split = total;
  line(c, "for (int64_t tdsl_g_t = threadIdx.x; tdsl_g_t < %" PRId64 "; tdsl_g_t += blockDim.x) {", total);
  open_scope(c);
  decompose(c, loops, n, "tdsl_g_t", body);
}

static void emit_plain_reduction(CudaKernelGen *c, const LStmt *const *loops, int n, const LStmtList *body,
                                 const Reduction *r) {
  line(c, "{");
  open_scope(c);
  const char *saved[MAX_ACC];
  for (int a = 0; a < r->nacc; a++) {
    int lo = r->acc[a];
    DType dt = c->g.k->locals.data[lo];
    saved[a] = c->g.lname[lo];
    const char *pn = arena_printf(&c->g.cx->arena, "tdsl_g_p%d", c->uniq++);
    line(c, "%s %s = threadIdx.x == 0 ? %s : %s;", cexpr_type(dt), pn, saved[a], identity(r->op[a], dt));
    c->g.lname[lo] = pn;
  }
  split_open(c, loops, n, body);
  stmts_seq(c, body);
  cexpr_close(&c->g);
  c->g.pr->single[H_REDUCE] = true;
  if (c->nsh < 1)
    c->nsh = 1;
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
static void argform_cond(CudaKernelGen *c, const Reduction *r, const char *new_pre, const char *old_pre) {
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
static void argform_step(CudaKernelGen *c, const Reduction *r, const char *bound) {
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

static void emit_arg_reduction(CudaKernelGen *c, const LStmt *const *loops, int n, const LStmtList *body,
                               const Reduction *r) {
  line(c, "{");
  open_scope(c);
  const char *saved[MAX_ACC];
  for (int a = 0; a < r->nacc; a++) {
    int lo = r->acc[a];
    saved[a] = c->g.lname[lo];
    line(c, "%s tdsl_g_a%d = %s;", cexpr_type(c->g.k->locals.data[lo]), a, saved[a]);
    c->g.lname[lo] = arena_printf(&c->g.cx->arena, "tdsl_g_a%d", a);
  }
  line(c, "long long tdsl_g_key = threadIdx.x == 0 ? -1 : INT64_MAX;  // -1: the initial values");
  split_open(c, loops, n, body);
  c->key_set = "tdsl_g_key = tdsl_g_t;";
  stmts_seq(c, body);
  TD_ASSERT(!c->key_set);
  cexpr_close(&c->g);
  for (int a = 0; a < r->nacc; a++)
    c->g.lname[r->acc[a]] = saved[a];
  // combine: within each warp, then the warps' results in warp 0 through shared memory
  if (c->nsh < r->nacc + 1)
    c->nsh = r->nacc + 1;
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

// Statements run by the whole block for one row, every thread alike: see the file
// comment. pr/pw: the buffers read and written since the last __syncthreads().
static void stmts_block(CudaKernelGen *c, const LStmtList *l, ArgSet *pr, ArgSet *pw);

static void stmt_block(CudaKernelGen *c, const LStmt *s, ArgSet *pr, ArgSet *pw) {
  ArgSet r = {0}, w = {0};
  stmt_access(s, &r, &w);
  if (set_meets(&w, pr) || set_meets(&w, pw) || set_meets(&r, pw)) {
    line(c, "__syncthreads();");
    *pr = *pw = (ArgSet){0};
  }
  switch (s->kind) {
  case LS_LET:
  case LS_SET: cexpr_let(&c->g, s); break;
  case LS_STORE:
    line(c, "if (threadIdx.x == 0)");
    c->g.depth++;
    cexpr_store(&c->g, s);
    c->g.depth--;
    break;
  case LS_IF:
    cexpr_open_if(&c->g, s->cond);
    stmts_block(c, &s->body, pr, pw);
    cexpr_close(&c->g);
    break;
  case LS_LOOP: {
    const LStmt *loops[MAX_NEST];
    const LStmtList *body;
    int n;
    Reduction red;
    if (is_map_nest(c, s, loops, &n, &body)) {
      split_open(c, loops, n, body);
      stmts_seq(c, body);
      cexpr_close(&c->g);
      break;
    }
    if (is_reduction_nest(c, s, loops, &n, &body, &red)) {
      if (red.argform)
        emit_arg_reduction(c, loops, n, body, &red);
      else
        emit_plain_reduction(c, loops, n, body, &red);
      *pr = *pw = (ArgSet){0};  // the combine synchronised the block after every read
      return;
    }
    // every thread runs the loop; its body is block-level again
    cexpr_open_loop(&c->g, s);
    ArgSet br = {0}, bw = {0};
    stmts_access(&s->body, &br, &bw);
    ArgSet er = *pr, ew = *pw;  // pending before the loop, if it runs no iteration
    stmts_block(c, &s->body, pr, pw);
    if (set_meets(&bw, pr) || set_meets(&bw, pw) || set_meets(&br, pw)) {  // the next iteration
      line(c, "__syncthreads();");
      cexpr_close(&c->g);
      *pr = s->extent > 0 ? (ArgSet){0} : er;  // the last iteration ended synchronised
      *pw = s->extent > 0 ? (ArgSet){0} : ew;
      return;
    }
    cexpr_close(&c->g);
    break;
  }
  case LS_COUNT: td_unreachable();
  }
  set_union(pr, &r);
  set_union(pw, &w);
}

static void stmts_block(CudaKernelGen *c, const LStmtList *l, ArgSet *pr, ArgSet *pw) {
  for (int i = 0; i < l->len; i++)
    stmt_block(c, l->data[i], pr, pw);
}

// Whether a block-level list has a loop worth splitting across threads.
static bool has_split(CudaKernelGen *c, const LStmtList *l) {
  for (int i = 0; i < l->len; i++) {
    const LStmt *s = l->data[i];
    const LStmt *loops[MAX_NEST];
    const LStmtList *body;
    int n;
    Reduction red;
    if (s->kind == LS_LOOP &&
        (is_map_nest(c, s, loops, &n, &body) || is_reduction_nest(c, s, loops, &n, &body, &red)))
      return true;
    if ((s->kind == LS_LOOP || s->kind == LS_IF) && has_split(c, &s->body))
      return true;
  }
  return false;
}

// ---- matmul: detection of the shapes ir/kernel.c builds ----
static bool kernel_has_op(const LKernel *k, const char *name) {
  for (int i = 0; i < k->ops.len; i++)
    if (strcmp(k->ops.data[i], name) == 0)
      return true;
  return false;
}

static bool same_index(const LIndex *a, const LIndex *b, int nvars) {
  if (a->dyn || b->dyn || a->base != b->base)
    return false;
  for (int v = 0; v < nvars; v++)
    if (coef_of(a, v) != coef_of(b, v))
      return false;
  return true;
}

// Whether e reads the loop var v, or a local let from an expression that does.
static bool reads_only_vars(const LExpr *e, const int *allowed, int nallowed, int nvars) {
  for (int v = 0; v < nvars; v++) {
    if (!expr_reads_var(e, v))
      continue;
    bool ok = false;
    for (int i = 0; i < nallowed; i++)
      ok |= allowed[i] == v;
    if (!ok)
      return false;
  }
  return true;
}

static bool expr_reads_any_local(const LExpr *e) {
  if (!e)
    return false;
  if (e->kind == LX_LOCAL)
    return true;
  if (e->kind == LX_LOAD && expr_reads_any_local(e->idx.dyn))
    return true;
  return expr_reads_any_local(e->a) || expr_reads_any_local(e->b) || expr_reads_any_local(e->c);
}

static bool expr_has_dyn(const LExpr *e) {
  if (!e)
    return false;
  if (e->kind == LX_LOAD && e->idx.dyn)
    return true;
  return expr_has_dyn(e->a) || expr_has_dyn(e->b) || expr_has_dyn(e->c);
}

// Finds the matmul: outer independent loops [batch..., i] (or [batch..., i, j] in the
// dot form) and a row body of the shapes in ir/kernel.c's build_matmul*.
static bool find_matmul(CudaKernelGen *c, const LStmt *const *outer, int nouter, const LStmtList *row, Matmul *m) {
  int nv = c->g.k->nvars;
  *m = (Matmul){0};
  if (!kernel_has_op(c->g.k, "matmul") || nouter < 1 || nouter > TD_MAX_DIMS + 1)
    return false;
  for (int i = 0; i < nouter; i++)
    m->outer[i] = outer[i];
  m->nouter = nouter;
  // dot form: let acc = init; for k { acc = acc + a * b }; rest (no loops)
  if (row->len >= 3 && row->data[0]->kind == LS_LET && row->data[1]->kind == LS_LOOP && nouter >= 2) {
    const LStmt *let = row->data[0], *kl = row->data[1];
    int acc = let->local;
    DType dt = c->g.k->locals.data[acc];
    if ((dt != DT_F32 && dt != DT_F64) || expr_has_load(let->val) || expr_reads_any_local(let->val))
      return false;
    if (kl->body.len != 1 || kl->body.data[0]->kind != LS_SET || kl->body.data[0]->local != acc)
      return false;
    const LExpr *v = kl->body.data[0]->val;
    if (v->kind != LX_BINARY || v->op != OP_ADD || v->dt != dt || v->a->kind != LX_LOCAL || v->a->local != acc)
      return false;
    const LExpr *mul = v->b;
    if (mul->kind != LX_BINARY || mul->op != OP_MUL || mul->dt != dt)
      return false;
    m->dot = true;
    m->ivar = outer[nouter - 2]->var;
    m->jvar = outer[nouter - 1]->var;
    m->kvar = kl->var;
    m->I = outer[nouter - 2]->extent, m->J = outer[nouter - 1]->extent, m->K = kl->extent;
    m->nbatch = nouter - 2;
    m->a = mul->a, m->bexp = mul->b;
    m->init = let->val;
    m->acc_dt = dt;
    m->acc_local = acc;
    m->kloop = kl;
    m->rest = row;
    m->rest_from = 2;
    for (int i = 2; i < row->len; i++)
      if (row->data[i]->kind == LS_LOOP || stmts_has_loop(&row->data[i]->body))
        return false;
    if (stmts_mention_local(&kl->body, acc, kl->body.data[0]))
      return false;
  } else if (row->len >= 2 && row->len <= 3 && row->data[0]->kind == LS_LOOP && row->data[1]->kind == LS_LOOP) {
    // rows form: for j { C = init }; for k { let l = A; for j { C = C + l * B } }; [for j { epilogue }]
    const LStmt *il = row->data[0], *kl = row->data[1];
    if (il->body.len != 1 || il->body.data[0]->kind != LS_STORE)
      return false;
    const LStmt *ist = il->body.data[0];
    if (kl->body.len != 2 || kl->body.data[0]->kind != LS_LET || kl->body.data[1]->kind != LS_LOOP)
      return false;
    const LStmt *alet = kl->body.data[0], *jl = kl->body.data[1];
    if (jl->extent != il->extent || jl->body.len != 1 || jl->body.data[0]->kind != LS_STORE)
      return false;
    const LStmt *acc = jl->body.data[0];
    DType dt = cexpr_arg_dtype(&c->g, acc->buf);
    const LExpr *v = acc->val;
    if ((dt != DT_F32 && dt != DT_F64) || acc->buf != ist->buf || acc->idx.dyn || v->kind != LX_BINARY ||
        v->op != OP_ADD || v->dt != dt || v->a->kind != LX_LOAD || v->a->buf != acc->buf ||
        !same_index(&v->a->idx, &acc->idx, nv))
      return false;
    const LExpr *mul = v->b;
    if (mul->kind != LX_BINARY || mul->op != OP_MUL || mul->dt != dt || mul->a->kind != LX_LOCAL ||
        mul->a->local != alet->local || c->g.k->locals.data[alet->local] != dt)
      return false;
    // the init store, reindexed from its j var to the accumulate loop's
    LIndex ii = ist->idx;
    for (int t = 0; t < ii.nterms; t++)
      if (ii.var[t] == il->var)
        ii.var[t] = jl->var;
    if (!same_index(&ii, &acc->idx, nv) || expr_has_load(ist->val) || expr_reads_any_local(ist->val) ||
        ist->val->dt != dt)
      return false;
    m->ivar = outer[nouter - 1]->var;
    m->jvar = jl->var;
    m->kvar = kl->var;
    m->I = outer[nouter - 1]->extent, m->J = jl->extent, m->K = kl->extent;
    m->nbatch = nouter - 1;
    m->a = alet->val, m->bexp = mul->b;
    m->a_local = alet->local;
    m->init = ist->val;
    m->acc_dt = dt;
    m->acc_arg = acc->buf;
    m->acc_idx = acc->idx;
    m->kloop = kl;
    if (row->len == 3) {
      const LStmt *el = row->data[2];
      if (el->extent != jl->extent || stmts_has_loop(&el->body))
        return false;
      // every access of the accumulator buffer at the element's own index
      AccessList al = {0};
      stmts_accesses(c->g.cx, &el->body, &al);
      for (int i = 0; i < al.len; i++) {
        if (al.data[i].arg != acc->buf)
          continue;
        LIndex x = *al.data[i].idx;
        for (int t = 0; t < x.nterms; t++)
          if (x.var[t] == el->var)
            x.var[t] = jl->var;
        if (!same_index(&x, &acc->idx, nv))
          return false;
      }
      if (!loop_independent(c, el))
        return false;
      m->epi = el;
    }
  } else {
    return false;
  }
  // A reads only batch vars, i and k; B only batch vars, k and j; no dynamic indices
  int allowed[TD_MAX_DIMS + 4], na = 0;
  for (int i = 0; i < m->nbatch; i++)
    allowed[na++] = outer[i]->var;
  allowed[na] = m->ivar, allowed[na + 1] = m->kvar;
  if (!reads_only_vars(m->a, allowed, na + 2, nv) || expr_reads_any_local(m->a) || expr_has_dyn(m->a))
    return false;
  allowed[na] = m->jvar;
  if (!reads_only_vars(m->bexp, allowed, na + 2, nv) || expr_reads_any_local(m->bexp) || expr_has_dyn(m->bexp))
    return false;
  if (lx_raises(m->a) || lx_raises(m->bexp) || m->a->dt != m->acc_dt || m->bexp->dt != m->acc_dt)
    return false;
  return true;
}

// The sum of |coef| of var over the loads of e: how far e moves in memory per step of var.
static int64_t stride_of(const LExpr *e, int var) {
  if (!e)
    return 0;
  int64_t s = 0;
  if (e->kind == LX_LOAD) {
    int64_t k = coef_of(&e->idx, var);
    s += k < 0 ? -k : k;
  }
  return s + stride_of(e->a, var) + stride_of(e->b, var) + stride_of(e->c, var);
}

enum { TILE = 16 };

// The tiled matmul: block (TILE*TILE threads) per output tile of one batch element.
static void emit_matmul(CudaKernelGen *c, const Matmul *m, int64_t *grid) {
  int64_t ti = (m->I + TILE - 1) / TILE, tj = (m->J + TILE - 1) / TILE;
  int64_t nb = nest_size(m->outer, m->nbatch);
  int64_t ntiles = nb * ti * tj;
  *grid = ntiles < 65535 ? ntiles : 65535;
  const char *T = cexpr_type(m->acc_dt);
  line(c, "__shared__ %s tdsl_g_as[%d][%d + 1], tdsl_g_bs[%d][%d + 1];", T, TILE, TILE, TILE, TILE);
  line(c, "const int tdsl_g_tx = threadIdx.x %% %d, tdsl_g_ty = threadIdx.x / %d;", TILE, TILE);
  line(c, "for (int64_t tdsl_g_tile = blockIdx.x; tdsl_g_tile < %" PRId64 "; tdsl_g_tile += gridDim.x) {", ntiles);
  open_scope(c);
  if (m->nbatch)
    decompose(c, m->outer, m->nbatch, arena_printf(&c->g.cx->arena, "(tdsl_g_tile / %" PRId64 ")", ti * tj), NULL);
  line(c, "const int64_t tdsl_g_i0 = tdsl_g_tile / %" PRId64 " %% %" PRId64 " * %d, tdsl_g_j0 = tdsl_g_tile %% %" PRId64
          " * %d;", tj, ti, TILE, tj, TILE);
  buf_indent(c->g.b, c->g.depth);
  buf_printf(c->g.b, "%s tdsl_g_acc = ", T);
  cexpr_expr(&c->g, m->init);
  buf_puts(c->g.b, ";\n");
  line(c, "for (int64_t tdsl_g_k0 = 0; tdsl_g_k0 < %" PRId64 "; tdsl_g_k0 += %d) {", m->K, TILE);
  open_scope(c);
  // the loads: consecutive threads take consecutive addresses where the operand has
  // unit stride along k (As[i][k] natural) or along i/j (transposed thread roles)
  bool a_kfast = stride_of(m->a, m->kvar) <= stride_of(m->a, m->ivar);
  bool b_jfast = stride_of(m->bexp, m->jvar) <= stride_of(m->bexp, m->kvar);
  line(c, "{");
  open_scope(c);
  line(c, "const int64_t v%d = tdsl_g_i0 + %s, v%d = tdsl_g_k0 + %s;", m->ivar, a_kfast ? "tdsl_g_ty" : "tdsl_g_tx",
       m->kvar, a_kfast ? "tdsl_g_tx" : "tdsl_g_ty");
  buf_indent(c->g.b, c->g.depth);
  buf_printf(c->g.b, "tdsl_g_as[%s][%s] = v%d < %" PRId64 " && v%d < %" PRId64 " ? ",
             a_kfast ? "tdsl_g_ty" : "tdsl_g_tx", a_kfast ? "tdsl_g_tx" : "tdsl_g_ty", m->ivar, m->I, m->kvar, m->K);
  cexpr_expr(&c->g, m->a);
  buf_printf(c->g.b, " : (%s)0;\n", T);
  cexpr_close(&c->g);
  line(c, "{");
  open_scope(c);
  line(c, "const int64_t v%d = tdsl_g_k0 + %s, v%d = tdsl_g_j0 + %s;", m->kvar, b_jfast ? "tdsl_g_ty" : "tdsl_g_tx",
       m->jvar, b_jfast ? "tdsl_g_tx" : "tdsl_g_ty");
  buf_indent(c->g.b, c->g.depth);
  buf_printf(c->g.b, "tdsl_g_bs[%s][%s] = v%d < %" PRId64 " && v%d < %" PRId64 " ? ",
             b_jfast ? "tdsl_g_ty" : "tdsl_g_tx", b_jfast ? "tdsl_g_tx" : "tdsl_g_ty", m->kvar, m->K, m->jvar, m->J);
  cexpr_expr(&c->g, m->bexp);
  buf_printf(c->g.b, " : (%s)0;\n", T);
  cexpr_close(&c->g);
  line(c, "__syncthreads();");
  line(c, "const int tdsl_g_kn = %" PRId64 " - tdsl_g_k0 < %d ? (int)(%" PRId64 " - tdsl_g_k0) : %d;", m->K, TILE, m->K,
       TILE);
  line(c, "for (int tdsl_g_kk = 0; tdsl_g_kk < tdsl_g_kn; tdsl_g_kk++)");
  line(c, "  tdsl_g_acc = tdsl_g_acc + tdsl_g_as[tdsl_g_ty][tdsl_g_kk] * tdsl_g_bs[tdsl_g_kk][tdsl_g_tx];");
  line(c, "__syncthreads();");
  cexpr_close(&c->g);
  line(c, "const int64_t v%d = tdsl_g_i0 + tdsl_g_ty, v%d = tdsl_g_j0 + tdsl_g_tx;", m->ivar, m->jvar);
  line(c, "if (v%d < %" PRId64 " && v%d < %" PRId64 ") {", m->ivar, m->I, m->jvar, m->J);
  open_scope(c);
  if (m->dot) {
    const char *saved = c->g.lname[m->acc_local];
    c->g.lname[m->acc_local] = "tdsl_g_acc";
    for (int i = m->rest_from; i < m->rest->len; i++)
      stmt_seq(c, m->rest->data[i]);
    c->g.lname[m->acc_local] = saved;
  } else {
    c->g.arg_used[m->acc_arg] = true;
    buf_indent(c->g.b, c->g.depth);
    buf_printf(c->g.b, "b%d[", m->acc_arg);
    cexpr_index(&c->g, &m->acc_idx);
    buf_puts(c->g.b, "] = tdsl_g_acc;\n");
    if (m->epi) {
      line(c, "{");
      open_scope(c);
      line(c, "const int64_t v%d = v%d;", m->epi->var, m->jvar);
      stmts_seq(c, &m->epi->body);
      cexpr_close(&c->g);
    }
  }
  cexpr_close(&c->g);
  cexpr_close(&c->g);
}

// ---- kernels ----
static int64_t pow2_at_least(int64_t n, int64_t lo, int64_t hi) {
  int64_t b = lo;
  while (b < n && b < hi)
    b *= 2;
  return b;
}

static const char *const shape_names[] = {"elementwise", "block per row", "tiled matmul", "thread per row"};

static void emit_kernel(Ctx *cx, Prelude *pr, Buf *out, const LProgram *p, int ki, GpuKernel *launch) {
  const LKernel *k = p->kernels.data[ki];
  int nargs = k->args.len;
  TD_ASSERT(nargs <= MAX_ARGS);
  CudaKernelGen c = {0};
  cexpr_begin(&c.g, cx, &dialect_cuda, pr, p, k);
  c.extent = arena_alloc(&cx->arena, sizeof(int64_t) * (size_t)(k->nvars + 1));
  loop_extents(&c, &k->body);

  // the outer nest of independent loops: the rows (or the elements)
  const LStmt *outer[MAX_NEST];
  int nouter = 0;
  const LStmtList *row = &k->body;
  while (nouter < MAX_NEST && row->len == 1 && row->data[0]->kind == LS_LOOP && loop_independent(&c, row->data[0])) {
    outer[nouter++] = row->data[0];
    row = &row->data[0]->body;
  }
  int64_t nrows = nest_size(outer, nouter);
  KernelShape shape;
  Matmul mm;
  if (nouter > 0 && !stmts_has_loop(row))
    shape = K_FLAT;
  else if (find_matmul(&c, outer, nouter, row, &mm))
    shape = K_MATMUL;
  else if (has_split(&c, row))
    shape = K_ROWS;
  else
    shape = K_SERIAL;

  Buf body;
  buf_init(&body, cx);
  c.g.b = &body;
  int64_t grid = 1, block = 1;
  switch (shape) {
  case K_FLAT:
    block = 256;
    grid = (nrows + block - 1) / block;
    grid = grid < 65535 ? grid : 65535;
    line(&c, "for (int64_t tdsl_g_i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; tdsl_g_i < %" PRId64
             "; tdsl_g_i += (int64_t)gridDim.x * blockDim.x) {", nrows);
    open_scope(&c);
    decompose(&c, outer, nouter, "tdsl_g_i", row);
    stmts_seq(&c, row);
    cexpr_close(&c.g);
    break;
  case K_ROWS: {
    grid = nrows < 65535 ? nrows : 65535;
    line(&c, "for (int64_t tdsl_g_r = blockIdx.x; tdsl_g_r < %" PRId64 "; tdsl_g_r += gridDim.x) {", nrows);
    open_scope(&c);
    decompose(&c, outer, nouter, "tdsl_g_r", row);
    ArgSet r = {0}, w = {0};
    stmts_block(&c, row, &r, &w);
    cexpr_close(&c.g);
    block = pow2_at_least(c.max_split, 32, 256);
    break;
  }
  case K_MATMUL:
    block = TILE * TILE;
    emit_matmul(&c, &mm, &grid);
    break;
  case K_SERIAL:
    block = pow2_at_least(nrows, 32, 128);
    grid = (nrows + block - 1) / block;
    grid = grid < 65535 ? grid : 65535;
    line(&c, "for (int64_t tdsl_g_r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; tdsl_g_r < %" PRId64
             "; tdsl_g_r += (int64_t)gridDim.x * blockDim.x) {", nrows);
    open_scope(&c);
    decompose(&c, outer, nouter, "tdsl_g_r", row);
    stmts_seq(&c, row);
    cexpr_close(&c.g);
    break;
  }
  if (nrows == 0)
    grid = 0;
  *launch = (GpuKernel){emit_kernel_name(cx, p, ki), grid, block, 0};

  // header comment: what it computes, its shape and launch, what each pointer is
  const char *launch_note =
      arena_printf(&cx->arena, "%s: grid %" PRId64 ", block %" PRId64, shape_names[shape], grid, block);
  emit_kernel_comment(out, p, ki, launch_note);
  buf_printf(out, "extern \"C\" __global__ void __launch_bounds__(%" PRId64 ") %s(tdsl_gpu_error *tdsl_g_err", block,
             launch->name);
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
  if (c.nsh)
    buf_printf(out, "  __shared__ unsigned long long tdsl_g_sh[%d];\n", 32 * c.nsh);
  buf_puts(out, body.data);
  buf_puts(out, "}\n\n");
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
    if (!k->errors.len)
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
    for (int k = 0; k < p->kernels.len; k++)
      emit_kernel(cx, &pr, &body, p, k, &launches[i][k]);
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
             nprogs ? progs[0]->file : "?");
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
  for (int k = 0; k < p->kernels.len; k++)
    emit_kernel(cx, &pr, &body, p, k, &ks[k]);
  buf_printf(&head, "// Generated by tdslc from %s: the device code of %s, for NVRTC.\n", p->file ? p->file : "?",
             p->name);
  emit_prelude(&head, &pr);
  buf_puts(&head, body.data);
  *out = (GpuImage){head.data, ks, p->kernels.len};
}

const Target target_cuda = {"cuda", ".cu", cuda_emit};
