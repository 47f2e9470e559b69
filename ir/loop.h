// ir/loop.h: the backend-neutral loop IR. A fused kernel is a list of statements —
// loop nests with constant extents, stores through affine indices, scalar locals
// (accumulators) — over scalar expressions. Backends (codegen/) only print or build
// what is here; every numeric meaning is defined in this header, once:
//
// Scalar types. Expressions are typed by DType. DT_F16 / DT_BF16 values are carried as
// f32 numbers that are exactly representable in that format (a load from an f16 buffer
// yields one; LX_CAST to DT_F16 rounds an f32 to nearest-even f16 precision). Arithmetic
// is never done on DT_F16/DT_BF16 operands: the kernel builder casts them to DT_F32
// first, computes, and casts the result back (PyTorch's "compute in f32, round each
// materialized result"). A store converts the value to the buffer's dtype (exact for
// values already of that dtype; for f32 -> f16 it rounds to nearest even). Likewise
// DT_U8 / DT_I8 / DT_I16 values are loaded, stored, cast and held in locals, but
// arithmetic and comparisons on them are done in DT_I32 (exact: the result wraps to the
// small type when it is cast back, as PyTorch's wrapping kernels do).
//
// Op semantics (operands of LX_UNARY / LX_BINARY have the expression's own dtype,
// except comparisons, whose operands share a dtype and whose result is DT_BOOL):
//   NEG ABS SIGN SQUARE                 int and float (sign(0) = sign(-0) = 0, sign(nan) = 0 as PyTorch; int NEG wraps)
//   BITWISE_NOT                         ints: ~a; bool: !a
//   LOGICAL_NOT                         bool -> bool
//   EXP LOG LOG2 EXP2 SQRT SIN COS TAN TANH ERF FLOOR CEIL   f32/f64, libm meaning
//   EXPM1 LOG1P LOG10 SINH COSH ASIN ACOS ATAN ASINH ACOSH ATANH TRUNC   f32/f64, libm meaning
//   ERFC LGAMMA                         f32/f64, libm meaning
//   ROUND                               f32/f64: half to even (nearbyint)
//   SIGMOID SILU GELU FRAC (and RSQRT RECIPROCAL, SQUARE of floats): composite, each its
//                                       formula over the ops here (ir/opmath.c)
//   RELU                                a < 0 ? 0 : a (nan and -0 stay, as in PyTorch; ints too)
//   ADD SUB MUL                         ints wrap (two's complement), floats IEEE
//   DIV                                 floats only (the builder casts ints to f32)
//   FLOOR_DIVIDE                        ints: Python floor division; b == 0 raises `err`
//                                       (INT_MIN // -1 wraps to INT_MIN);
//                                       floats: PyTorch's div_floor (b == 0: a / b;
//                                       else mod = fmod(a, b), div = (a - mod) / b, minus 1
//                                       if mod != 0 and (b < 0) != (mod < 0); then floor,
//                                       +1 if div - floor(div) > 0.5; div == 0: copysign(0, a / b))
//   REMAINDER                           ints: Python modulo (sign of b); b == 0 raises `err`;
//                                       INT_MIN % -1 = 0. floats: r = fmod(a, b);
//                                       r != 0 and (r < 0) != (b < 0) => r += b
//   POW                                 floats: pow(a, b); ints: exact integer power with
//                                       wrapping, b < 0 raises `err` (PyTorch: "Integers to
//                                       negative integer powers are not allowed.")
//   MAXIMUM MINIMUM                     floats propagate nan
//   ATAN2 HYPOT COPYSIGN FMOD NEXTAFTER f32/f64, libm meaning (atan2, hypot, copysign, fmod,
//                                       nextafter: of an f32, the next f32)
//                                       (DIV_TRUNC, and FMOD of ints, are graph ops only:
//                                       ir/scalar.c builds them from the ops here)
//   BITWISE_AND BITWISE_OR BITWISE_XOR  ints and bool: & | ^
//   LSHIFT RSHIFT                       ints: a << (b & (bits - 1)) on a's unsigned bits
//                                       (wrapping), a >> (b & (bits - 1)) arithmetic: the
//                                       shift count masked as x86 does (PyTorch's CPU answer
//                                       for counts out of range)
//   EQ NE LT LE GT GE                   -> DT_BOOL (nan compares false, != true)
//   LOGICAL_AND LOGICAL_OR              bool x bool -> bool
// LX_CAST to an integer from a float truncates toward zero; nan or out of range gives
// the target's minimum (x86's answer, what PyTorch's CPU build returns there). To a
// small int from a float: to i32 so (f64 to u8: to i64), then wrapped, which is what
// PyTorch's CPU build gives for every value. Between ints: wraps to the target's bits
// (u8 zero-extends, the signed ones sign-extend). To bool: a != 0. From bool: 0 or 1.
// LX_BITCAST reinterprets a's bits as dt, of the same width, one of them a float: f32 <->
// i32, f64 <-> i64 (the CPU schedule's vector exp builds 2^n from an exponent field with
// it), and f16, bf16, i16 among them (a half's bits are those storing it writes).
// LX_SELECT c ? a : b evaluates both arms (they must be safe to evaluate).
//
// Lanes. An expression of `lanes` > 1 is a vector of that many values of dt (lanes 1 is
// a scalar; every constructor but lx_splat/lx_vload/lx_local_v/lx_shuffle makes
// scalars). Vector expressions are only these: LX_LOAD of `lanes` consecutive elements
// buf[idx + l]; LX_LOCAL of a vector local; LX_SPLAT (scalar a in every lane);
// LX_BINARY (ADD SUB MUL, and MAXIMUM MINIMUM: ir/sched.c's amax/amin) and LX_FMA
// lane by lane over operands of the same lanes (LX_FMA may be scalar); LX_SELECT
// (p > q) ? a : b lane by lane, whose condition is a vector LX_BINARY GT (of DT_BOOL
// lanes, a vector nowhere else) of p and q, all four of the select's dt and lanes
// (ir/sched.c's vector select max), or (p > q) || ((s != s) && (t == t)) of four
// operands of its dt (the ors, ands and compares of DT_BOOL lanes: ir/sched.c's argmax
// in lanes, whose selects, splats and compares may also be of i32 or i64); LX_SHUFFLE (lane l of the result is lane sel[l] of
// the concatenation of a and b, two vectors of its dt and of n lanes each, n its own
// lanes or half of them: 0 <= sel[l] < 2 * n); and no other kind. LX_LANE takes lane `i` of a vector LOCAL a (a scalar). Vectors
// computed with are f32 or f64; vectors only moved (loads, locals, shuffles, stores) may
// also be of the ints (i8 u8 i16 i32 i64), and such a vector load or store of a buffer
// of another dtype of the same size (i16 of f16 or bf16, u8 of bool) moves its bits
// unchanged: a copy, which is how ir/ew.c's transposing tiles move every dtype. LX_FMA is
// a * b + c of one float dtype (f32/f64): the product may be rounded or not before the
// add (fused where the target has FMA), so backends may differ in the last bit. A
// store of a vector value writes buf[idx + l] for every lane l; a local takes the
// lanes of its LS_LET's value (loop_local_lanes), and every later LS_SET and reference
// of it has the same lanes. Only the CPU schedules (ir/gemm.c) make vectors.
// LX_CHECKED_INDEX: a is an i64 index into a dim of size `i`. With `wrap` (advanced
// indexing) the valid range is [-i, i) and a negative index counts from the end;
// without it (gather, index_select) it is [0, i). Valid: yields the index; else it
// raises `err` with a's value and yields 0.
//
// The GPU form (sched_gpu, below, rewrites each kernel of a GPU program into it). Every
// thread of the launch runs the kernel's body, with the loop vars LGpuSched names bound
// first: tid (threadIdx.x), ctaid (blockIdx.x), lane (tid % 32) and warp (tid / 32).
// What only the GPU form holds:
//   - A loop with `start` (and `step`): var takes start, start + step, ... while below
//     extent; start >= 0 and step >= 1 are i64 expressions of those vars and constants,
//     evaluated once before the loop. So the threads share a loop's iterations.
//   - LS_VAR binds loop var `var` to val (an i64 >= 0) for the statements after it in
//     its list; LX_IDIV computes those indices: a / b (op FLOOR_DIVIDE) or a % b (op
//     REMAINDER) of ints with a >= 0 and b > 0.
//   - LS_SYNC: the threads of the block (extent 0: __syncthreads) or the lanes of a warp
//     (extent 32: __syncwarp) wait for each other; every one of them reaches it, and
//     what each wrote before is visible to all after.
//   - LX_SHFL: a (a scalar of 4 or 8 bytes, i32 for a bool) as lane L of the warp holds
//     it, all 32 lanes evaluating it together: i LG_SHFL_DOWN L = lane + b (the lane's
//     own a when L >= 32), LG_SHFL_XOR L = lane ^ b, LG_SHFL_IDX L = b.
//   - LB_SHARED buffers: a block's shared memory, uninitialised when the block starts,
//     one kernel's arguments (after its others); the host never sees them.
//   - Vector loads and stores of any dtype (lanes of f16/bf16/bool carried as their
//     values, as scalars are), each aligned to its whole width (sched_gpu proves it),
//     and LX_INSERT: vector a with lane i replaced by scalar b.
//   - Tensor cores: LX_MMA, a warp's mma.sync.m16n8k16 (row A, column B, f32 sums): a
//     and b are LX_FRAGs (nowhere else), c a vector of 4 f32 lanes, the value the
//     4 lanes of the warp's 16 x 8 tile of c + A B that the calling lane holds: lane l
//     holds rows r = l / 4 and r + 8, columns c = 2 (l % 4) and c + 1, as (r, c),
//     (r, c + 1), (r + 8, c), (r + 8, c + 1); every lane evaluates it together. The
//     products are exact; the order of their sum is the tensor core's. LX_FRAG names
//     the operand the lanes read from buf (of dtype dt, f16 or bf16) at idx, with row
//     stride ld = the constant b: i LG_FRAG_A_MK (the 16 x 16 A, (m, k) at idx +
//     m ld + k), LG_FRAG_A_KM ((m, k) at idx + k ld + m), LG_FRAG_B_NK (the 16 x 8 B,
//     (k, n) at idx + n ld + k), LG_FRAG_B_KN ((k, n) at idx + k ld + n).
//   - A store whose value is a load of the same dtype copies the bits (scalar or vector).
//
// Functions. A CPU program may hold functions its kernels call (LS_CALL), each written
// once and called from every kernel that needs it, with pointers and sizes as its
// arguments, as a BLAS's micro-kernel is (ir/gemm.c's tiles). A function is an
// LProgram of one kernel, in LProgram.funcs: its buffers are its pointer parameters
// (numel: the most elements any call reaches through each), its kernel's args those
// buffers in order, its nscalars i64 values read as LX_ARG i. Its loops may run a
// number of iterations given by an expression of those (LStmt.n, up to `extent`).
// It raises no error, has no parallel loop and calls nothing; it runs on the calling
// thread. GPU programs have none.
//
// Scratch. An LB_TEMP marked `scratch` is per-thread memory: the entry allocates
// nothing for it; a kernel obtains its thread's region (of the buffer's numel, 64-byte
// aligned, from the runtime's tdsl_scratch) where it starts and at the start of each
// iteration of its parallel loop, and what it writes there lasts only until the end of
// that iteration (or, outside its parallel loop, of the kernel). Every use asks for the
// same size, so a thread's region does not move while a kernel runs.
//
// Errors. A kernel has a table of messages, each already located
// ("file.tdsl:3:9: error: ZeroDivisionError"); a message may hold one "%lld" for the
// value that failed. Raising error k records the first failure (k and the value) and
// the kernel returns non-zero after its loops finish; the entry reports it (exit 3).
#ifndef TDSLC_IR_LOOP_H
#define TDSLC_IR_LOOP_H

#include "ir/ir.h"

typedef struct LExpr LExpr;
typedef struct LStmt LStmt;
typedef struct LKernel LKernel;
typedef struct LProgram LProgram;
typedef struct LGpuSched LGpuSched;

typedef enum {
  LX_CONST,          // f (floats) or i (ints and bools)
  LX_VAR,            // a loop variable: var (i64)
  LX_LOCAL,          // a scalar local: local
  LX_LOAD,           // buf[idx]
  LX_UNARY,          // op a
  LX_BINARY,         // a op b
  LX_SELECT,         // a ? b : c
  LX_CAST,           // a converted to dt
  LX_CHECKED_INDEX,  // see above: a, i (the size), err
  LX_BITCAST,        // a's bits as dt (same width, one a float)
  LX_FMA,            // a * b + c (see Lanes above)
  LX_SPLAT,          // scalar a in each of `lanes` lanes
  LX_LANE,           // lane i of the vector local a
  LX_SHFL,           // GPU: a in another lane of the warp (i: LG_SHFL_*, b the lane operand)
  LX_IDIV,           // GPU index arithmetic: a / b or a % b (op), a >= 0, b > 0
  LX_INSERT,         // vector a with lane i set to scalar b
  LX_FRAG,           // GPU: an mma operand in the lanes' registers (buf, idx, i: LG_FRAG_*, b: ld)
  LX_MMA,            // GPU: the warp's tile of a * b + c (tensor cores)
  LX_ARG,            // i64 scalar argument i of a function (LProgram.funcs; see Functions)
  LX_SHUFFLE,        // lanes of a and b picked by sel (see Lanes above)
  LX_COUNT
} LExprKind;

enum { LG_SHFL_DOWN, LG_SHFL_XOR, LG_SHFL_IDX };                    // LX_SHFL's i
enum { LG_FRAG_A_MK, LG_FRAG_A_KM, LG_FRAG_B_NK, LG_FRAG_B_KN };  // LX_FRAG's i

// An element index: base + sum_k coef[k] * var[k] (+ dyn, an i64 expression, if set).
enum { LI_MAX_TERMS = 24 };
typedef struct LIndex {
  int64_t base;
  int nterms;
  int var[LI_MAX_TERMS];
  int64_t coef[LI_MAX_TERMS];
  LExpr *dyn;
} LIndex;

struct LExpr {
  LExprKind kind;
  DType dt;       // the scalar type of the result
  Op op;          // LX_UNARY / LX_BINARY
  LExpr *a, *b, *c;
  double f;       // LX_CONST of a float dtype
  int64_t i;      // LX_CONST of int/bool; LX_CHECKED_INDEX: the dim size
  int var;        // LX_VAR
  int local;      // LX_LOCAL
  int buf;        // LX_LOAD: index into the kernel's args
  LIndex idx;     // LX_LOAD
  int err;        // raising ops: index into the kernel's errors, -1 if none
  bool wrap;      // LX_CHECKED_INDEX: negative indices count from the end
  int lanes;      // 1 for a scalar; see Lanes above
  const int *sel; // LX_SHUFFLE: `lanes` lane numbers into a ++ b
};

typedef enum {
  LS_LOOP,   // for (var = 0; var < extent; var++) body
  LS_STORE,  // buf[idx] = val (converted to the buffer's dtype)
  LS_LET,    // declare local (dt) = val
  LS_SET,    // local = val
  LS_IF,     // if (cond) body
  LS_VAR,    // GPU: loop var `var` = val from here on in the list
  LS_SYNC,   // GPU: the block's threads (extent 0) or the warp's lanes (32) wait for each other
  LS_CALL,   // call: a function of LProgram.funcs (see Functions)
  LS_PREFETCH,  // CPU: a hint that the line of buf[idx] is read soon (never faults: idx may
                // lie outside the buffer, and goes unchecked; the backends may drop it)
  LS_COUNT
} LStmtKind;

typedef VEC(LStmt *) LStmtList;

// A call of function fn (LProgram.funcs[fn]): its pointer arguments, in its args' order,
// are the caller's arg ptr[i] advanced by at[i] elements (an affine index over the
// caller's loops), through which the callee reaches at most reach[i] elements; then
// its i64 scalar arguments, the values val[0..nval).
typedef struct LCall {
  int fn;
  int nptr;
  int *ptr;
  LIndex *at;
  int64_t *reach;
  int nval;
  LExpr **val;
} LCall;

struct LStmt {
  LStmtKind kind;
  int var;          // LS_LOOP
  int64_t extent;   // LS_LOOP
  bool parallel;    // LS_LOOP: iterations are independent and the work is worth threads
  int vector;       // LS_LOOP: a vector width hint (0: none; 1: the backends leave the loop scalar)
  LExpr *n;         // LS_LOOP in a function: when set, it runs n iterations (an i64
                    // expression of the scalar arguments, 0 <= n <= extent)
  LStmtList body;   // LS_LOOP, LS_IF
  int buf;          // LS_STORE, LS_PREFETCH
  LIndex idx;       // LS_STORE, LS_PREFETCH
  LExpr *val;       // LS_STORE, LS_LET, LS_SET
  int local;        // LS_LET, LS_SET
  LExpr *cond;      // LS_IF
  LExpr *start;     // LS_LOOP, GPU form: the first value of var (NULL: 0)
  LExpr *step;      // LS_LOOP, GPU form: its increment (NULL: 1)
  LCall *call;      // LS_CALL
};

// A kernel argument: one buffer of the program, read and/or written.
typedef struct LArg {
  int buf;       // index into LProgram.bufs
  bool read, written;
  bool stream;   // stores may bypass the caches (non-temporal): a large result no kernel
                 // reads, 64-byte aligned as every storage is (set by sched_cpu; ir/ew.c's
                 // tiled kernels ask for it first)
  int64_t at;    // the kernel sees the buffer from element `at` on: its indices count from
                 // there, and the entry (on the GPU the launch) passes the storage plus
                 // `at` (a multiple of 64 bytes, so alignment holds). 0 unless
                 // share_kernels moved it or ir/share.c lent it a result (lent).
  bool lent;     // a temp that ir/share.c put in a result's storage before the result's
                 // first kernel (results_before): what the kernel does there is the temp's
                 // (driver/profile.c counts it as a temp's traffic, not the result's)
} LArg;

// ---- what the kernel builder records about a kernel it built (LKernel.mm, .softmax) ----
// Facts a backend or ir/sched.c reads instead of recovering them from the loops. They
// point into the kernel's body as kernel_build leaves it; sched_cpu (CPU programs
// only) rewrites some of those statements afterwards.
//
// A MATMUL kernel: out[batch.., i, j] = sum_k a[batch.., i, k] * b[batch.., k, j] with
// PyTorch's matmul rules (a 1-D a has no i, a 1-D b no j; batch dims broadcast), then
// elementwise epilogues at the same output index.
typedef enum {
  LM_DOT,   // the plain nest (ir/matmul.c's build_matmul): one output element per
            // iteration of the outer loops, its k terms added in a local (fields below)
  LM_GEMM,  // ir/gemm.c's CPU tiles (LKernel.sched names them): only the shape is set
  LM_COUNT
} LMatmulForm;

typedef struct LMatmul {
  LMatmulForm form;
  DType dt;                // the accumulation dtype: the output's (f16/bf16: f32)
  int rdim, jdim;          // the output dims of i and j; -1 where a 1-D operand drops it
  int64_t batch, M, N, K;  // batch: the product of the other output dims; M (N): the size
                           // of rdim (jdim), 1 without it; K: a's last dim (the product of
                           // its last attr.nk dims where k spans several)
  // LM_DOT (else 0 / NULL; iouter, jouter, acc -1). The kernel's body is exactly
  //   outer[0] { outer[1] { ... outer[nouter-1] { body } } }
  // each outer loop the only statement of the list that holds it, and body is
  //   [0] let acc = init
  //   [1] kloop: for k in 0..K { acc = acc + a * b }   (its only statement; with K == 1
  //       no loop: [1] is that statement itself, with k = 0)
  //   [epi..] per output element, reading acc: the matmul's store (when it is stored)
  //       and its epilogues' stores; no loops
  int nouter;                 // loops over the output dims of size > 1, outermost first
  LStmt *outer[TD_MAX_DIMS];  //   (independent iterations: each writes its own element)
  int odim[TD_MAX_DIMS];      // the output dim outer[p] iterates
  int iouter, jouter;         // the index in outer of rdim's (jdim's) loop; -1: none (size 1 or no dim)
  LStmtList *body;            // the innermost outer loop's body (the kernel's body when nouter == 0)
  int acc;                    // the accumulator local, of dtype dt
  LExpr *init;                // its initial value: a constant 0 of dt
  LStmt *kloop;               // NULL when K == 1 (K == 0: a loop of no iterations), and
                              // where k spans several dims: [1] is then their loops, nested
  LExpr *a, *b;               // the factors in acc + a * b, of dtype dt: a reads only the batch
                              // loops, i and k; b only the batch loops, k and j; k's var
                              // is kloop->var
  int epi;                    // the first statement of body after the k loop (2)
  int acc_buf;  // -1 (no form accumulates in a program buffer)
} LMatmul;

// A ROW kernel's softmax row (not log_softmax) whose passes are single loops, laid out
// consecutively at the end of `list` (ir/row.c):
//   let m = -inf
//   max_loop:   for j { m = maximum(m, x(j)) }
//   let s = 0
//   sum_loop:   for j { s = s + exp(x(j) - m) }
//   recip:      let r = 1 / s
//   final_loop: for j' { out[f(j')] = v(j') }
// x(j) is the softmax's input at element j of the row in its computation dtype, the
// same expression of each loop's var; each loop holds only the statement shown. The
// last pass stores one node of the row's shape: the softmax itself (v = exp(x(j') - m)
// * r, cast to its dtype) or one epilogue reading it. A row of one element (no loops),
// other row nodes or reduced results after the softmax's, or a last pass storing more
// than one node: none.
typedef struct LSoftmax {
  LStmtList *list;
  LStmt *max_loop, *sum_loop, *recip, *final_loop;
} LSoftmax;

// An ATTN kernel of a GPU program (ir/attn.c builds its row form, the kernel's body, and
// ir/attn_gpu.c these facts, from which ir/sched_gpu.c may build a flash kernel instead).
// The expressions read vars of their own, none of the body's: q(b.., i, e), k(b.., j, e)
// and v(b.., j, w) in the computation dtype cd, mask(b.., i, j) (a bool: false hides the
// key; else added to the score) or NULL; out_local (of cd) then `store` write the
// result at (b.., i, w). The scores are dot(q, k) * scale (+ mask), causal rows seeing
// keys j <= i, the softmax online as ir/attn.c says.
typedef struct LAttn {
  int nb;                     // batch dims
  int64_t bext[TD_MAX_DIMS];  // their extents
  int bvar[TD_MAX_DIMS];      // their vars
  int64_t L, S, E, Ev;        // query rows, keys, the q/k features, the v features
  int ivar, jvar, evar, wvar;
  LExpr *q, *k, *v, *mask;
  bool causal;
  double scale;
  DType cd;
  int out_local;
  LStmt *store;
} LAttn;

// A SCAN kernel of a GPU program (ir/row.c's build_scan; ir/scan_gpu.c may run its long
// rows on a block each). The kernel is its rows' nest, each row the lets of the
// accumulators `acc` (their identities), then `jloop`, the scan dim, whose body is one
// step: it reads the accumulators and x at j, sets them, then stores. `combine`, run
// with acc[i] holding the state after some prefix of a row and other[i] (locals of the
// same dtypes, read-only there) the state a following run of j reached from the
// identities, leaves in acc[i] the state after both: the step with x and j taken from
// other (for cummax/cummin, exact; for sums and products, a reassociation).
enum { LSCAN_MAX_ACC = 16 };
typedef struct LScan {
  const LStmt *jloop;
  int nacc;
  int acc[LSCAN_MAX_ACC], other[LSCAN_MAX_ACC];
  LStmtList combine;
} LScan;

struct LKernel {
  const char *name;    // "k0"
  KernelKind kind;     // fusion's decision (fuse_kernel_kind): EW, ROW, MATMUL or ONE
  LMatmul *mm;         // KK_MATMUL: how it computes the matmul; NULL for every other kind
  LSoftmax *softmax;   // KK_ROW: its softmax row of that form, NULL if none
  LAttn *attn;         // KK_ATTN of a GPU program: its facts (ir/attn_gpu.c), else NULL
  LScan *scan;         // a SCAN kernel of a GPU program: its facts (ir/row.c), else NULL
  VEC(LArg) args;
  VEC(DType) locals;   // the dtype of each local
  int nvars;           // loop variables are 0..nvars-1
  LStmtList body;
  VEC(const char *) errors;  // located messages, each may hold one %lld
  VEC(const char *) ops;     // op names fused into it, for --emit=kernels
  VEC(int) lines;            // source lines it came from
  const char *sched;         // the schedule it got, when one was chosen ("gemm packed 6x16 nc 128")
  int64_t flops;             // the arithmetic of one run: graph_kernel_flops of its nodes (bench --profile)
  LGpuSched *gpu;            // GPU programs: its mapping onto threads (sched_gpu), else NULL
  int nscalars;              // a function (LProgram.funcs): its i64 scalar arguments (LX_ARG)
  const LKernel *same;       // NULL, or an earlier kernel of the program with the same code
                             // (share_kernels): the backends emit that one and call it
                             // (launch it, on the GPU, with that one's gpu schedule)
};

typedef enum {
  LB_PARAM,   // a parameter's storage (contiguous as the kernels see it)
  LB_TEMP,    // an intermediate, freed when the entry returns
  LB_RESULT,  // a buffer some output views: allocated by the entry, handed to the caller
  LB_SHARED,  // GPU: a kernel's block-shared scratch (sched_gpu appends these after every
              // other buffer; the host and the entry tables leave them out)
} LBufKind;

typedef struct LBuf {
  LBufKind kind;
  DType dtype;
  int64_t numel;
  const char *name;  // parameter name, or a readable name of the value it holds
  int param;         // LB_PARAM: parameter index
  bool mut;          // LB_PARAM: declared 'mut'
  bool scratch;      // LB_TEMP: per-thread scratch, never allocated by the entry (see Scratch)
} LBuf;

typedef struct LParam {
  const char *name;
  DType dtype;
  int ndim;
  int64_t shape[TD_MAX_DIMS];
  bool mut;
  int buf;
  bool scalar;  // a scalar parameter (eps: float): ndim 0, dtype f64/i64/bool; by value in the C ABI
} LParam;

typedef struct LOutput {
  int buf;    // the buffer it views (a parameter's for a returned view of it)
  DType dtype;  // complex: the caller gets the complex tensor of view's float pairs
  View view;  // over that buffer
} LOutput;

struct LProgram {
  const char *name;       // the function: the C symbol of the entry
  const char *file;       // the source path, for messages
  VEC(LParam) params;
  VEC(LBuf) bufs;
  VEC(LOutput) outputs;
  VEC(LKernel *) kernels;  // run in this order
  VEC(LProgram *) funcs;   // the functions kernels call (LS_CALL), each a program of one
                           // kernel (see Functions)
  int64_t flops;           // the arithmetic of one call (graph_flops), for `tdslc bench`
  const char *bound;       // a generic function's dims as bound ("N=4, D=8"), or NULL
  bool cpu;                // sched_cpu scheduled it (share_kernels may then write a temp
                           // in place over one it reads last: ir/inplace.c)
  bool profile;            // bench --profile: the entry calls tdsl_prof_mark(k) before kernel k
                           // and tdsl_prof_mark(kernels.len) after the last (runtime/profile.c)
};

// ---- loop.c: construction helpers, verification ----
LExpr *lx_new(Ctx *cx, LExprKind kind, DType dt);  // zeroed; op OP_COUNT, err/var/local/buf -1
LExpr *lx_const_f(Ctx *cx, DType dt, double v);
LExpr *lx_const_i(Ctx *cx, DType dt, int64_t v);
LExpr *lx_var(Ctx *cx, int var);
LExpr *lx_local(Ctx *cx, DType dt, int local);
LExpr *lx_load(Ctx *cx, DType dt, int buf, LIndex idx);
LExpr *lx_unary(Ctx *cx, Op op, DType dt, LExpr *a);
LExpr *lx_binary(Ctx *cx, Op op, DType dt, LExpr *a, LExpr *b);
LExpr *lx_select(Ctx *cx, LExpr *c, LExpr *a, LExpr *b);
LExpr *lx_cast(Ctx *cx, DType dt, LExpr *a);
LExpr *lx_bitcast(Ctx *cx, DType dt, LExpr *a);
LExpr *lx_fma(Ctx *cx, LExpr *a, LExpr *b, LExpr *c);          // a * b + c, lanes of a
LExpr *lx_splat(Ctx *cx, int lanes, LExpr *a);                  // a scalar in every lane
LExpr *lx_vload(Ctx *cx, DType dt, int lanes, int buf, LIndex idx);  // buf[idx + 0..lanes)
LExpr *lx_local_v(Ctx *cx, DType dt, int lanes, int local);     // a vector local
LExpr *lx_lane(Ctx *cx, LExpr *v, int lane);                    // lane of vector local v
// lanes lanes (a->lanes or twice that) picked from a ++ b; sel copied (lanes entries)
LExpr *lx_shuffle(Ctx *cx, LExpr *a, LExpr *b, const int *sel, int lanes);
// The dtype whose vectors move the bits of dt's elements (ir/loop.h's Lanes): dt itself,
// or i16 for f16/bf16 and u8 for bool.
DType lx_bits_dtype(DType dt);
LStmt *ls_loop(Ctx *cx, int var, int64_t extent);
LStmt *ls_store(Ctx *cx, int buf, LIndex idx, LExpr *val);
LStmt *ls_let(Ctx *cx, int local, LExpr *val);
LStmt *ls_set(Ctx *cx, int local, LExpr *val);
LStmt *ls_if(Ctx *cx, LExpr *cond);
LExpr *lx_arg(Ctx *cx, int i);                                  // scalar argument i (i64)
LStmt *ls_call(Ctx *cx, int fn, int nptr, int nval);            // args filled by the caller
LStmt *ls_prefetch(Ctx *cx, int buf, LIndex idx);
LIndex li_affine(const View *v, const int *vars);  // v's index over loop vars (vars[k] for dim k; -1: index 0)
// Structural equality: the same kind, dtype, op, constant bits, variables, locals,
// buffers and indices (terms in the same order), down to the leaves.
bool lx_same_index(const LIndex *x, const LIndex *y);
bool lx_same(const LExpr *x, const LExpr *y);
bool lx_loads(const LExpr *e, int buf);  // e reads argument buf: loads it (LX_LOAD), or an index computed from it
bool lx_raises_here(const LExpr *e);  // e itself can raise one of its kernel's errors
bool lx_raises(const LExpr *e);       // evaluating e (any operand) can raise
// lanes[l] = the lanes of local l (its LS_LET's value; 1 if it has none); lanes has
// k->locals.len entries.
void loop_local_lanes(const LKernel *k, int *lanes);
// --emit=kernels (ir/loop_print.c): compact (runs of alike statements folded into one
// line) unless full.
void loop_print(const LProgram *p, bool full, FILE *out);
void loop_verify(const LProgram *p);               // TD_ASSERTs
// The buffers the host sees: p->bufs up to the first LB_SHARED one (they come last).
int loop_host_bufs(const LProgram *p);

// ---- cpu.c: what the CPU schedules are made for ----
typedef struct CpuTarget {
  const char *name;  // the CPU ("host" for the machine tdslc runs on)
  int vec_bytes;     // the widest vector register: 16 (SSE), 32 (AVX2), 64 (AVX-512)
  int nregs;         // vector registers: 16, or 32 with AVX-512
  bool fma;          // fused multiply-add instructions
  int64_t l1d, l2;   // data cache bytes per core
  int64_t llc;       // last-level cache bytes (shared by the cores; the host's bounded by cpu_usable_llc)
  int64_t stream_min;  // TDSL_STREAM_MIN=BYTES (>= 1): results from this size on are
                       // streamed (LArg.stream); 0: ir/sched.c's rule (the footprint's)
  bool c_source;  // the kernels go through a C compiler (the C backend), not LLVM: gcc
                  // keeps `x > k ? k : x` as a compare and a blend where LLVM makes one
                  // min, so vecmath's clamps compare x itself at both ends (ir/vecmath.c)
} CpuTarget;
// cpu NULL or "host": the machine tdslc runs on (cpuid, sysconf cache sizes; sane
// defaults where they say nothing); else an LLVM CPU name (--cpu), by its family.
CpuTarget cpu_target(const char *cpu);
// The last-level cache cpu_target keeps for the host: `reported` (sysfs, sysconf), at
// most 32 MiB per CPU of `cpus` (online), at least 32 MiB (ir/cpu.c says why).
int64_t cpu_usable_llc(int64_t reported, int64_t cpus);

// ---- kernel.c: the fused graph -> loop IR (the kernel builder, ir/kernel.h's files) ----
// cpu: the schedules for that CPU (ir/gemm.c for every matmul); NULL: a GPU program.
// Sets every LKernel's kind, and its mm or softmax where it has one.
LProgram *kernel_build(Ctx *cx, const Graph *g, const CpuTarget *cpu);

// ---- sched.c: the CPU schedule over built loop IR (the C and LLVM backends) ----
// softmax terms kept for the last pass (LKernel.softmax); math functions as
// vectorizable arithmetic (ir/vecmath.c, FMA as cpu has it); float reductions of innermost loops accumulated in lanes
// (a fixed association, the same in every backend); large write-only results marked
// for streaming stores (LArg.stream); loop-invariant lets moved out of their loops
// (ir/hoist.c).
void sched_cpu(Ctx *cx, LProgram *p, const CpuTarget *cpu);

// ---- hoist.c: a loop's lets that do not change in it move before it (CPU form) ----
void hoist_invariants(Ctx *cx, LKernel *k);

// ---- share.c: one function for kernels with the same code ----
// The layers of an unrolled loop over stacked weights build the same kernels, apart
// from where they read (w[i] starts i*C*C elements in). share_kernels moves each
// argument's start to its least index (LArg.at) so the indices count from there; a
// kernel whose loops, locals, errors, argument dtypes (and matmul facts, LKernel.mm)
// then equal an earlier one's names it in LKernel.same, and the backends build that
// function once. Then temps whose lives do not overlap share a buffer (renumbered).
// CPU programs: after sched_cpu; GPU programs: before sched_gpu.
void share_kernels(Ctx *cx, LProgram *p);

// ---- inplace.c: a temp written over one its kernel reads last ----
// Whether kernel `kernel` of p (a CPU program) reads every element of buffer y only
// before, in the same iteration, the one store writing buffer x's element at the same
// storage offset, and writes each element of x once (so x may take y's storage there).
// marks: a byte per element the check may enumerate, kept by the caller between calls.
typedef struct InplaceMarks {
  unsigned char *b;
  int64_t n;
} InplaceMarks;
bool inplace_ok(Ctx *cx, const LProgram *p, int kernel, int x, int y, InplaceMarks *marks);

// ---- sched_gpu.c: the GPU schedule (the CUDA C and NVVM backends) ----
// What the GPU schedules are made for.
typedef struct GpuTarget {
  int sm;            // compute capability x 10 (80, 90): tensor-core matmuls (mma.sync) from 80
  int64_t max_grid;  // the most blocks one launch gets (loops over blocks are grid-stride)
} GpuTarget;
// arch NULL: sm_80 (tdsl's GPU baseline); "sm_NN" (a suffix letter ignored). The grid
// cap is 8 waves of an H200's 132 multiprocessors, and TDSL_GPU_GRID=N (tests) caps it
// at N: with 1, every loop over blocks goes round.
GpuTarget gpu_target(const char *arch);

// A kernel's GPU schedule: its launch and the loop vars its GPU-form body binds first.
struct LGpuSched {
  const char *name;        // the schedule, for --emit=kernels and the CUDA comment
  int64_t grid, block;     // the launch: blocks (0: nothing to do) and threads per block
  int tid, ctaid;          // loop vars bound to threadIdx.x and blockIdx.x (-1: unused)
  int lane, warp;          // ... to threadIdx.x % 32 and threadIdx.x / 32 (-1: unused)
};

// Rewrites every kernel of a GPU program into the GPU form (the header's comment) and
// sets its gpu: what codegen/cuda.c prints and codegen/llvm_gpu.c builds, the same
// statements. Iterations run on different threads only where sched_gpu proved from the
// affine indices that they touch disjoint elements (a loop's `parallel` mark only says
// where CPU threads pay). A kernel sharing an earlier one's code (LKernel.same,
// share_kernels ran before) gets that one's schedule, the same object. After it, the
// facts mm and softmax describe the body kernel_build left, not the kernel's.
void sched_gpu(Ctx *cx, LProgram *p, const GpuTarget *t);

#endif
