// ir/ir.h: the graph IR. A Value is either a buffer (a parameter, a constant, or the
// result of a materializing Node) or a View of a buffer; building the graph folds every
// view op into the Value's View, so view chains leave no node behind. Only Nodes
// (materializing ops, ir/ops.def) can become kernels. Depends only on base/ and view/view.h.
#ifndef TDSLC_IR_IR_H
#define TDSLC_IR_IR_H

#include "base/base.h"
#include "view/view.h"

typedef struct Buffer Buffer;
typedef struct Value Value;
typedef struct Node Node;
typedef struct Graph Graph;

// ---- dtypes (same order as tdsl_dtype in runtime/tdsl.h) ----
typedef enum {
#define X(id, name, size, cls) DT_##id,
#include "view/dtypes.def"
#undef X
  DT_COUNT
} DType;
const char *dtype_name(DType t);  // "f32"
int dtype_size(DType t);          // bytes
bool dtype_is_float(DType t);
bool dtype_is_int(DType t);       // u8, i8, i16, i32, i64 (not bool)
bool dtype_is_unsigned(DType t);  // u8
bool dtype_is_small_int(DType t); // u8, i8, i16: stored narrow, computed in i32
bool dtype_is_complex(DType t);   // c64, c128: a pair of floats (real, imaginary)
DType dtype_complex_part(DType t);  // the float of a complex dtype's parts: c64 -> f32, c128 -> f64
DType dtype_complex_of(DType t);    // the complex dtype whose parts are float t (f64 -> c128, else c64)
bool dtype_from_name(const char *s, DType *out);
bool dtype_is_half(DType t);      // f16, bf16: stored narrow, computed in f32
DType dtype_compute(DType t);     // the dtype arithmetic on t is done in (f32 for halves, i32 for small ints)
// PyTorch's promote_types: bool < ints < floats; ints give the wider (u8 with i8 is i16);
// f16 with bf16 is f32.
DType dtype_promote(DType a, DType b);
// torch.result_type: operands with dims decide over 0-d tensors, which decide over
// wrapped Python scalars (a Python float counts as f32), each only when it is of a
// higher category (bool < int < float).
typedef enum { DTO_DIMMED, DTO_ZERO_DIM, DTO_WRAPPED } DTypeOperandKind;
typedef struct DTypeOperand {
  DType dtype;
  DTypeOperandKind kind;
} DTypeOperand;
DType dtype_result_type(const DTypeOperand *ops, int n);
bool dtype_can_cast(DType from, DType to);  // canCast: no float into an int, nothing but bool into bool

// ---- ops: the table of ir/ops.def, read through these (ir/op.c) ----
typedef enum {
#define X(id, ...) OP_##id,
#include "ir/ops.def"
#undef X
  OP_COUNT
} Op;
typedef enum {
  OC_COPY, OC_UNARY, OC_BINARY, OC_SELECT, OC_GATHER, OC_CREATE,  // elementwise
  OC_REDUCE, OC_ROW, OC_SCAN, OC_MATMUL, OC_JOIN, OC_STORE, OC_SORT, OC_ATTN, OC_CONV,
} OpClass;
enum {  // OpFlags: what ir/ops.def's flags column says
  OF_NUM = 1 << 0,       // the loop IR computes it in ints, f32 and f64
  OF_NUM_BOOL = 1 << 1,  // ... and in bool
  OF_FLOAT = 1 << 2,     // in f32 and f64 only
  OF_INT_BOOL = 1 << 3,  // in ints and bool only
  OF_BOOL = 1 << 4,      // in bool only
  OF_COMPARE = 1 << 5,   // operands of one dtype (any but half), a bool result
  OF_TRANS = 1 << 6,     // transcendental: costly enough that fusion keeps its value
  OF_RAISES_INT = 1 << 7,  // may raise a run-time error when computed on integers
  OF_RAISES = 1 << 8,      // may raise a run-time error (an index out of range)
  OF_COMPOSITE = 1 << 9,   // in f32/f64: its formula over other ops (ir/opmath.c)
  OF_INT_TO_FLOAT = 1 << 10,  // of an int or bool input, the default float (PyTorch's float ops)
};
typedef enum { LM_NONE, LM_CALL, LM_INTRINSIC, LM_LLVM } LibmLowering;  // ir/ops.def's lowering column
typedef enum { ID_NONE, ID_ZERO, ID_ONE, ID_LOWEST, ID_HIGHEST } OpIdentity;  // its identity column
const char *op_name(Op op);
const char *op_libm(Op op);           // the C library's function of a float op ("exp"), NULL: none
LibmLowering op_libm_lowering(Op op);
OpIdentity op_identity_kind(Op op);   // the value op_identity (ir/opmath.h) gives in a dtype
int op_arity(Op op);        // -1: variadic or none fixed
OpClass op_class(Op op);
unsigned op_flags(Op op);
bool op_is_elementwise(Op op);     // classes COPY, UNARY, BINARY, SELECT, GATHER, CREATE
bool op_is_pointwise(Op op);       // elementwise with operands broadcast to the result (not gathers, creation)
bool op_is_row(Op op);             // REDUCE, ROW and SCAN: reductions, softmax, log_softmax, scans
bool op_is_scan(Op op);            // SCAN: cumsum, cumprod, cummax, cummin (values, indices), logcumsumexp
bool op_is_gather(Op op);
bool op_is_creation(Op op);
bool op_is_store(Op op);  // STORE: writes srcs[0]'s buffer, owns none (store, index_put, scatter)
bool op_is_transcendental(Op op);
bool op_may_raise(Op op, DType dt);  // computing it in dt may raise a run-time error
// Whether the loop IR computes op (unary or binary) with operands of dtype dt (its
// flags' dtype column; compare ops: any dtype but the halves).
bool op_computes_in(Op op, DType dt);

// Attributes of a materializing node; which fields mean something depends on the op.
typedef struct NodeAttr {
  uint32_t dims;        // reductions: bit k set = reduce input dim k; softmax/scans/cat/stack/gather/index_select: bit of the dim
  int dim;              // the single dim of softmax, scans, cat, stack, gather, index_select, argmax (-1: all)
  bool keepdim;
  int64_t correction;   // var, std: the divisor is N - correction (unbiased: 1)
  bool descending;      // sort, argsort
  int64_t first;        // sort, argsort: only the first `first` of each row are read (0: all)
  bool has_lo, has_hi;  // clamp bounds
  double lo, hi;        // clamp bounds; full's value; arange start/step in lo/hi
  int64_t ilo, ihi;     // integer twins of lo/hi when the dtype is an integer
  int aug;              // OP_STORE: OP_COUNT for '=', else the op of '+=' ... ('-1' never);
                        // OP_INDEX_PUT, OP_SCATTER: OP_COUNT writes, else the op combining
                        // the target's element with the value (ADD, MUL, MAXIMUM, MINIMUM)
  // OP_MATMUL: 0, PyTorch's matmul; else a contraction whose k spans nk dims, each dim
  // of an operand (role[0]: a's, role[1]: b's) walking the output dim role (>= 0; an
  // operand dim of size 1 is broadcast) or k's dim -1 - role (a convolution: the weight
  // times a window view of the input, summed over channels and taps)
  int nk;
  int8_t role[2][TD_MAX_DIMS];
  int form;             // OP_INDEX_PUT: the PyTorch op it is (IPF_*): its out-of-range message,
                        // whether a negative index counts from the end; OP_GATHER: GATHER_TARGET
                        // reads a loss's class index (its message is PyTorch's for a target)
  double scale;         // scaled_dot_product_attention: the factor of q @ k^T
  const char *msg;      // OP_ASSERT: the message raised where its operand is false (no '%' but %%)
  bool causal;          // scaled_dot_product_attention: is_causal (query row i sees keys 0..i)
  // scaled_dot_product_attention: q (bit 0) and k (bit 1) rotated as they are read (RoPE:
  // rotate_half's x * cos + cat(-x[..., E/2:], x[..., :E/2]) * sin, or with bit 2 (q) or 3
  // (k) the complex form's view_as_complex(x) * freqs), each one's cos and sin tables
  // sources after the mask (q's, then k's): ir/attn.c
  uint8_t rope;
  // OP_DWCONV, per spatial dim: the padding before the input, the stride, the dilation
  int64_t conv_p[3], conv_s[3], conv_d[3];
} NodeAttr;

// OP_INDEX_PUT's forms: setitem and index_put_ (negative indices wrap, the message
// names the index's position), index_add_ ("index out of range in self"), index_copy_
// (its prefix, the dim), index_fill_ (negative indices wrap, the dim).
enum { IPF_SETITEM, IPF_INDEX_ADD, IPF_INDEX_COPY, IPF_INDEX_FILL };
enum { GATHER_PLAIN, GATHER_TARGET };  // OP_GATHER's forms: "Target %lld is out of bounds." for a loss's

// ---- buffers and values ----
typedef enum { BUF_INPUT, BUF_KERNEL, BUF_CONST } BufKind;
struct Buffer {
  int id;
  BufKind kind;
  DType dtype;
  int64_t numel;
  const char *name;  // parameter name, or the name of the value that owns the kernel storage
  int param;         // BUF_INPUT: the parameter index
  bool mut;          // BUF_INPUT: a 'mut' parameter
  bool scalar;       // BUF_INPUT: a scalar parameter (`eps: float`), passed by value in the C ABI
  Node *producer;    // BUF_KERNEL: the node that writes it
  Value *own;        // the value that is the buffer itself (the parameter, the node's result)
};

struct Value {
  int id;
  const char *name;  // binding name, parameter name, or NULL
  Loc loc;
  DType dtype;
  View view;         // over buf (a buffer's own value has its contiguous view)
  Buffer *buf;       // NULL for a compile-time scalar
  Node *node;        // the node that produced it (materializing), else NULL
  bool is_scalar;    // a Python scalar operand (x + 1): value in sval/ival
  bool wrapped;      // a scalar parameter's 0-d buffer, or arithmetic of them: promotes as a Python scalar does
  bool cplx;         // a complex tensor of shape view[:-1] and dtype dtype_complex_of(dtype): this float
                     // value's last dim (size 2, stride 1) holds (real, imaginary). The graph, fusion and
                     // the backends see only the floats; the entry's C ABI passes the complex tensor
  double sval;
  int64_t ival;
};

// How the fusion plan computes a node's result (ir/fuse.c decides, the kernel builder obeys):
typedef enum {
  NM_STORED,  // computed by kernel `kernel` and written to its buffer
  NM_INLINE,  // elementwise, never stored: every reader recomputes it at the index it
              // reads (through its View), in whatever kernel that reader is
  NM_LOCAL,   // computed inside kernel `kernel` and consumed only there, by that kernel's
              // epilogue, without being stored (a matmul under its bias/activation, a
              // reduction read only by the row epilogue of its own kernel)
} NodeMode;

// Why the fusion plan (ir/fuse.c) stored a node's result (Node.stored) or started a
// kernel at it (Node.split): recorded where fusion decides, worded by ir/why.c for
// --emit=ir and --emit=dot. `node` and `other` name the nodes a reason is about (ids,
// -1 if none); the numbers are the ones the rule compared.
typedef enum {
  FW_NONE,
  // a stored result
  FW_OUTPUT,         // the function returns it (or a view of it)
  FW_STORE_TARGET,   // a store writes into it
  FW_UNREAD,         // nothing reads it: kept because computing it may raise
  FW_TREE,           // its inline expression has `cost` ops, more than `limit`
  FW_MATMUL_READ,    // the matmul `node` reads it (a matmul reads its operands from memory)
  FW_GATHER_READ,    // the gather `node` reads it at data-dependent positions
  FW_ATTN_READ,      // the attention `node` reads it as query, key or value
  FW_VIEW_COPY,      // `node` reads it through a view that does not map onto its elements
  FW_RAISES_PART,    // it may raise, and `node` reads only part of it
  FW_STORE_BETWEEN,  // the store `other` runs between it and its reader `node` and writes what it reads
  FW_STORE_VALUE,    // the value of the store `node`, reading the stored-into buffer elsewhere
  FW_INDEX_WRITE,    // read by the index_put or scatter `node`, which writes the tensor it reads
  FW_RECOMPUTE,      // read `n` times (bcast: through a broadcast) and recomputing costs `cost`
                     // ops (more than `limit`) or `trans` transcendental ops (more than `tlimit`)
  FW_NESTED_REDUCED, // reduced and read again, it recomputes `node`, reduced and read again too
  FW_MATMUL_EPILOGUE,// reduced and read again, it reads the matmul `node`'s result, read by nothing else
  FW_PACK_EPILOGUE,  // packed by matmuls, it reads the matmul `node`'s result and the stored tensor `other`
  FW_READ_OUTSIDE,   // `node`, in another kernel, reads it
  FW_SCAN,           // a scan's result is always stored (its readers read it from memory)
  FW_OWN,            // its op writes its result itself (sort, cat, stack, store, attention, ...)
  FW_PIECE_READ,     // it recomputes a cat or stack piece by piece, and `node` is no pointwise op
  FW_PIECE_VIEW,     // ... and `node` reads it through a view splitting a dim the pieces change along
  FW_PIECE_STORES,   // a cat or stack whose recomputation piece by piece would store `node` (else inline)
  // a kernel's start
  FW_K_MATMUL,       // a matmul starts a kernel
  FW_K_ROW_NEW,      // no earlier kernel reduces the same rows (input shape and dims)
  FW_K_ROW_FEEDS,    // it reads `node`, a reduction of the kernel over the same rows
  FW_K_ROW_CLOSED,   // the kernel over the same rows (of `node`) already ends in an epilogue
  FW_K_SCAN_MIX,     // scans and other row ops over the same rows (of `node`) keep apart
  FW_K_READ_BETWEEN, // joining the kernel of `node` would move it past `other`, which reads it
  FW_K_STORE_BETWEEN,// ... past the store `other`, which writes a buffer that kernel reads
  FW_K_EW,           // elementwise, reading no reduction or matmul it could follow
  FW_K_AFTER_SCAN,   // it reads the scan `node` (a scan's kernel takes no epilogue)
  FW_K_GATHER,       // it gathers from (or is no pointwise op over) the kernel of `node`
  FW_K_SHAPE,        // its shape is not one the kernel of `node` iterates (row input, reduced, matmul's)
  FW_K_OFF_ROW,      // it reads the kernel of `node` off the current row (another index)
  FW_K_PIECES,       // it recomputes the cat or stack `node` piece by piece: a kernel of its own
  FW_K_RECUR,        // the first node of a recurrence (`n` steps) whose outputs the stack `node` gathers
  FW_K_ALONE,        // its op is a kernel alone (sort, attention, cat, store, ...)
  FW_COUNT
} FuseWhyCode;

typedef struct FuseWhy {
  FuseWhyCode code;
  int node, other;  // node ids, -1 if none
  int n, cost, limit, trans, tlimit;
  bool bcast;
} FuseWhy;

struct Node {
  int id;
  Op op;
  Loc loc;
  Value *out;
  Value **srcs;
  int nsrc;
  NodeAttr attr;
  NodeMode mode;
  int kernel;  // NM_STORED/NM_LOCAL: the kernel computing it; NM_INLINE: the first kernel
               // that reads it (for --emit=ir); -1 before fusion
  FuseWhy stored;  // NM_STORED: why fusion stored its result
  FuseWhy split;   // the first node of a kernel: why it did not join an earlier kernel
  const int *lines;  // the source lines of the ops it absorbed (an attention's score
  int nlines;        // matmul, scale, mask, softmax), for its kernel's lines; or none
};

// A recurrence run as one kernel (ir/recur.c finds it, ir/recur_build.c builds it): T
// steps of an elementwise state, S_t = F(S_(t-1), step t's slices of its inputs), each
// step's output Y_t = S_t (as [M, N]) @ c_t ([N, 1]) written into its slice of a stack.
// The kernel runs the steps inside each row of the state (a parallel loop over the M
// rows, the T steps serial within a row), the state in a row-sized temp.
typedef struct RecurLeaf {
  const Value *v;   // a value the template step reads that moves with the step
  int64_t coef;     // elements of its buffer per step
  bool inl;         // over an inline node's result: dstart is in that node's logical index
  int64_t dstart[TD_MAX_DIMS];  // its producer index per step (inl)
} RecurLeaf;
typedef struct Recur {
  int kernel;
  int T;
  const Node *state;  // S_1, the template step's state; S_0 is the node its `prev` reads
  const Node *out;    // Y_1, the template step's matmul
  const Node *first;  // S_0
  const Value *init;  // the state before step 0 (what S_0 reads where S_1 reads S_0)
  const Node *stack;  // the stack of the Y_t (step t's output: its index t along attr.dim)
  const Node *tail;   // NULL, or the elementwise node after the stack the kernel stores
                      // instead (the stack and the nodes between are inline there)
  VEC(RecurLeaf) leaves;
} Recur;

typedef struct NamedValue {
  const char *name;
  Value *value;
} NamedValue;

struct Graph {
  Ctx *cx;
  const char *name;
  Loc loc;
  VEC(Value *) params;   // in declaration order
  VEC(Value *) outputs;  // in return order
  VEC(Value *) values;   // every value, creation order
  VEC(NamedValue) named; // each binding in source order (a name may appear twice)
  VEC(Node *) nodes;     // topological (creation) order
  VEC(Buffer *) bufs;
  int nkernels;
  const char **sched;    // per kernel, the schedule a CPU build gave it (--emit=ir), or NULL
  bool cpu;              // built for a CPU: a matmul packs its operands into panels, so
                         // fusion may leave an operand to be computed as it packs (fuse.c)
  VEC(Recur *) recurs;   // the kernels that are recurrences (ir/recur.c; CPU programs)
};

// ---- graph.c ----
Graph *graph_new(Ctx *cx, const char *name, Loc loc);
Value *graph_param(Graph *g, const char *name, DType dt, int ndim, const int64_t *shape, bool mut, Loc loc);
Value *graph_scalar(Graph *g, DType dt, double v, int64_t iv, Loc loc);
// A view of src's buffer: no node, no kernel.
Value *graph_view(Graph *g, const Value *src, View v, Loc loc);
// A materializing op: a node and a fresh buffer holding a contiguous result.
Node *graph_node(Graph *g, Op op, DType out_dt, int ndim, const int64_t *shape, Value **srcs, int nsrc,
                 NodeAttr attr, Loc loc);
void graph_name(Graph *g, Value *v, const char *name);  // record a binding
void graph_output(Graph *g, Value *v);
// Drop the nodes no output, store or live node reads (an unpacked max(dim)'s unused
// indices, a local never used); a node that may raise stays, as PyTorch would have
// raised. Ids are renumbered.
void graph_prune(Graph *g);
bool graph_is_view_only(const Graph *g);  // no node at all: run needs no kernel
// How many operands of g's nodes and how many outputs are over buffer b, the nodes with
// skip[id] set aside (skip may be NULL).
int graph_buffer_uses(const Graph *g, const Buffer *b, const bool *skip);
// The arithmetic of one call, for `tdslc bench`: 2·M·N·K per matmul, the two products and
// the softmax of an attention (per query row, S·(2E + 2Ev + 1)), one operation per
// element computed or reduced for every other node (copies and creation ops: none).
int64_t graph_flops(const Graph *g);
// graph_flops split by kernel: per_kernel[k] (g->nkernels entries) counts the nodes of
// kernel k (an inlined node in the first kernel that computes it), so they sum to graph_flops.
void graph_kernel_flops(const Graph *g, int64_t *per_kernel);
int matmul_nk(const Node *mm);  // the dims k spans (1, or attr.nk)
// K, the product of k's dims' sizes; kn (if not NULL) gets each dim's size.
int64_t matmul_k(const Node *mm, int64_t *kn);
// The name a kernel buffer goes by in printed forms: its binding, or t<producer id>.
const char *graph_buffer_name(const Graph *g, const Buffer *b);
void graph_print(const Graph *g, FILE *out);       // --emit=ir
void graph_print_json(const Graph *g, FILE *out);  // --emit=ir --json
void graph_print_dot(const Graph *g, FILE *out);   // --emit=dot
void graph_verify(const Graph *g);                 // TD_ASSERTs

// ---- fuse.c ----
// The fusion plan: fills Node.mode, Node.kernel and Graph.nkernels. Kernels are
// numbered in execution order; a kernel's non-inline nodes are, in node order, one of:
//  - EW: one NM_STORED elementwise-class node (unary, binary, where, clamp, casts,
//    copies, creation ops, gathers) whose shape is the iteration space;
//  - ROW: row nodes (reductions, softmax, log_softmax, logsumexp) over the same input
//    shape and the same reduced dims, then epilogue nodes (elementwise) over either the
//    row input's shape or the reduced output's shape, reading the row nodes of this
//    kernel only through views that stay on the current row;
//    or scan nodes alone (cumsum ...: the same input shape and dim, always stored);
//  - MATMUL: one matmul (NM_LOCAL when only its epilogue reads it), then elementwise
//    epilogue nodes over the matmul's output shape reading it at the same index;
//  - ONE: a node alone in its kernel (cat, stack, store, and anything not fused);
//  - SORT: a sort, an argsort, or both of one input and order: one sort computes both;
//  - ATTN: one scaled_dot_product_attention alone (ir/attn.c): its scores never stored.
//  - RECUR: a recurrence (Graph.recurs): its steps' nodes, their stack.
typedef enum { KK_EW, KK_ROW, KK_MATMUL, KK_ONE, KK_SORT, KK_ATTN, KK_RECUR } KernelKind;
// fuse_graph first rewrites attention written as its parts (softmax(q @ k^T ...) @ v)
// into scaled_dot_product_attention nodes (attn_fuse.c; ids renumbered); then plans.
void fuse_graph(Graph *g);
// An MLP chain's blocks (ir/fuse.c's chain_of plans it, ir/gemm_chain.c builds it): rows a
// block (rounded up to the micro-kernel's panel) and hidden units a chunk of its scratch.
enum { GEMM_CHAIN_ROWS = 48, GEMM_CHAIN_HIDDEN = 256 };
// A convolution's zero padding (cats of zero fulls, one dim after another) that B, a
// contraction's operand, reads: the unpadded value, and pl[d] the zeros before it along
// each dim; NULL when b is no such padding. Fusion leaves such cats NM_INLINE where the
// contraction alone reads them (ir/gemm.c packs from the unpadded value).
const Value *fuse_pad_chain(const Value *b, int64_t *pl);
// (place.c) The parts of a stack or cat that are whole stored results read by nothing
// else are written by their kernels straight into the join's buffer (run by fuse_graph).
void fuse_place(Graph *g);
// (recur.c) A scan written step by step whose outputs are stacked (placed by fuse_place)
// becomes one RECUR kernel (Graph.recurs); kernels renumbered. CPU programs only.
void fuse_recur(Graph *g);
const Recur *fuse_recur_of(const Graph *g, int kernel);  // the recurrence kernel k is, or NULL
bool attn_fuse(Graph *g);  // (attn_fuse.c) whether it rewrote any
// (late_half.c) A matmul whose output's column ranges are read far apart becomes two, the
// later part inserted before its first reader (ids renumbered). CPU programs only.
void fuse_late_half(Graph *g);
KernelKind fuse_kernel_kind(const Graph *g, int kernel);
// The node whose split says why kernel k starts (its first node), or NULL.
const Node *fuse_kernel_root(const Graph *g, int kernel);

// ---- why.c: the words of FuseWhy (--emit=ir, --emit=dot) ----
// The reason w of node n as one line of words (no newline, no double quote).
void why_print(const Graph *g, const Node *n, FuseWhy w, FILE *out);
const char *why_text(const Graph *g, const Node *n, FuseWhy w);  // the same, in cx's arena
// r (a View over a contiguous result of shape pshape) decomposes (view_decompose) and
// walks every element of it: recomputing the result there computes all of it.
bool fuse_view_covers(View r, int pndim, const int64_t *pshape);

#endif
