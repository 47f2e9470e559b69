// ir/build.h: the op library's builders. A builder makes the graph values of an op that is
// no single node (softplus, layer_norm, conv2d, the losses ...) from the values of its
// operands, with the nodes and views of ir/graph.c; the front end checks the call and
// hands the builder its arguments parsed into a typed struct (declared here, one per op
// family) — no builder ever checks or reports anything.
//
// One dialect for every decomposition: the primitives below (build_unary, build_binary,
// views, reductions ...) give each node PyTorch's result dtype and shape, so a builder
// writes the formula (`b_mul(b, x, b_un(b, OP_TANH, ...))`) and nothing else. The
// composite elementwise ops of ir/ops.def (sigmoid, silu, gelu ...) are no builders: each
// is one node (build_unary), whose loop-IR formula is ir/opmath.c's op_formula.
//
// Order: the nodes one builder call makes are put in the order of a depth-first walk from
// its results (operands left to right, each node after what it reads), and an operand is
// computed where that walk first reaches it (Builder.operand is called lazily): how a
// builder's C statements are ordered never shows in the graph.
//
// The families: ir/build_act.c (activations), build_norm.c (normalizations), build_loss.c
// (losses), build_conv.c (padding, convolution, pooling, interpolation, fold and unfold),
// build_linalg.c (products, statistics), build_einsum.c, build_reduce.c (reductions built of
// others), build_scan.c, build_sort.c (sort and its views), build_index.c (gathers, scatters, masks),
// build_math.c (elementwise ops built of others), build_shape.c (copies built of views),
// build_einops.c (einops' rearrange, repeat and reduce).
#ifndef TDSLC_IR_BUILD_H
#define TDSLC_IR_BUILD_H

#include "ir/ir.h"

typedef struct Builder Builder;

// What a builder knows of operand i before it is computed: its dtype, its view (shape),
// whether it is a Python number (value in f/i) or a run-time scalar parameter.
typedef struct BuildIn {
  DType dtype;
  View view;
  bool scalar, wrapped;
  double f;
  int64_t i;
} BuildIn;

// Operand i of the call as a graph value, computed on first use (lowering: its
// expression; the front end's dry run: a placeholder of its type).
typedef Value *(*BuildOperand)(void *ctx, int i);

// The front end's checks of the primitives a builder applies, when it dry-runs the builder
// to type a call (NULL when lowering one it has checked): each reports PyTorch's message
// for what PyTorch refuses, as the op it composes would raise it, and returns false. The
// builder then makes nothing more (Builder.failed: every primitive gives a placeholder)
// and the call has no result.
typedef struct BuildCheck {
  bool (*unary)(void *ctx, Op op, const Value *x);
  bool (*binary)(void *ctx, Op op, const Value *x, const Value *y);
  bool (*where)(void *ctx, const Value *c, const Value *x, const Value *y);
  bool (*clamp)(void *ctx, const Value *x, const Value *lo, const Value *hi);
  bool (*reduce)(void *ctx, Op op, const Value *x, DType dt);  // dt: the result's
  bool (*softmax)(void *ctx, const Value *x, DType dt);
  bool (*matmul)(void *ctx, const Value *x, const Value *y);
  bool (*narrow)(void *ctx, const Value *x, int dim, int64_t start, int64_t len);
  bool (*contract)(void *ctx, const Value *x, const Value *y);  // build_contract, build_matmul_k
  bool (*bmm)(void *ctx, const Value *x, const Value *y);       // einsum's contractions (bmm's checks)
  // a view or a result of ndim dims, ndim > TD_MAX_DIMS: refused before it is made
  bool (*rank)(void *ctx, int ndim);
} BuildCheck;

struct Builder {
  Graph *g;
  Loc loc;               // what every node and view the builder makes carries (the call's)
  Loc name_loc;          // the call's name (x.NAME(...), F.NAME(...)): a few nodes carry it
  int nin;
  const BuildIn *in;     // the operands' types, nin of them
  BuildOperand operand;
  void *ctx;
  Value **vals;          // operands computed so far (NULL: not yet)
  int *block;            // per operand: the first node its computation made, -1 when none
  int *block_end;
  const BuildCheck *check;  // the dry run's checks (NULL: none), with their context
  void *check_ctx;
  bool failed;              // a check failed: the primitives give `dummy` and make nothing
  Value *dummy;
};

// A builder: out[0..n) its results; returns n. args: the family's struct.
typedef int (*BuildFn)(Builder *b, const void *args, Value **out);

// Runs fn over the operands (nin, their types in, computed by operand(ctx, i)) into g at
// loc and puts the nodes it made in the builder order (above); returns the result count.
int build_call(Graph *g, Loc loc, Loc name_loc, BuildFn fn, const void *args, int nin, const BuildIn *in,
               BuildOperand operand, void *ctx, Value **out);
// The same, a dry run with the front end's checks: 0 (no result) when one fails.
int build_check(Graph *g, Loc loc, Loc name_loc, BuildFn fn, const void *args, int nin, const BuildIn *in,
                BuildOperand operand, void *ctx, const BuildCheck *check, void *check_ctx, Value **out);

Value *build_in(Builder *b, int i);  // operand i, computed on first use
// Whether a value of ndim dims may be made: false (the builder has failed) when the dry
// run's rank check refuses it; the primitives that add dims ask it themselves.
bool build_rank(Builder *b, int ndim);

// ---- numbers: Python scalars (promote as wrapped numbers do) ----
Value *build_float(Builder *b, double v);
Value *build_int(Builder *b, int64_t v);
Value *build_bool(Builder *b, bool v);
// v as the scalar a tensor of dtype dt takes it: a float for float dtypes; else an int,
// truncated toward zero (PyTorch's Scalar.to<int>()), a bool for bool
Value *build_number(Builder *b, double v, DType dt);
Value *build_scalar(Builder *b, DType dt, double f, int64_t i);  // a Python number of dtype dt (bool, i64, f64)

// ---- elementwise nodes, with PyTorch's result dtype and the broadcast shape ----
Value *build_unary(Builder *b, Op op, Value *x);
Value *build_binary(Builder *b, Op op, Value *x, Value *y);
Value *build_where(Builder *b, Value *c, Value *x, Value *y);
// clamp(x, lo, hi) with number bounds (NULL: none), of result_type(x, lo, hi)
Value *build_clamp(Builder *b, Value *x, const Value *lo, const Value *hi);
Value *build_cast(Builder *b, Value *x, DType dt);  // x itself when it has dt
Value *build_clone(Builder *b, Value *x);
// x as the dtype PyTorch's kernels compute it in (halves in f32: dtype_opmath), and a
// result y back to dt: the compute-dtype policy, applied by every builder through these
Value *build_up(Builder *b, Value *x);
Value *build_down(Builder *b, Value *y, DType dt);

// ---- views: no node; x itself when the view is x's ----
Value *build_view(Builder *b, Value *x, View v);
// a view when x's strides allow it, else a contiguous copy viewed
Value *build_reshape(Builder *b, Value *x, int n, const int64_t *shape);
Value *build_contiguous(Builder *b, Value *x);
Value *build_narrow(Builder *b, Value *x, int dim, int64_t start, int64_t len);
Value *build_select(Builder *b, Value *x, int dim, int64_t index);
Value *build_unsqueeze(Builder *b, Value *x, int dim);  // dim in [0, ndim]
Value *build_squeeze(Builder *b, Value *x, int dim);    // dim in range; unchanged unless size 1
Value *build_transpose(Builder *b, Value *x, int d0, int d1);
Value *build_permute(Builder *b, Value *x, const int *perm);
Value *build_expand(Builder *b, Value *x, int n, const int64_t *shape);
Value *build_flip(Builder *b, Value *x, int n, const int *dims);
Value *build_diagonal(Builder *b, Value *x, int64_t offset, int d1, int d2);
// dims src[0..n) moved to dst[0..n), the others in order (torch.movedim)
Value *build_movedim(Builder *b, Value *x, int n, const int *src, const int *dst);
Value *build_flatten(Builder *b, Value *x);  // x.flatten(): one dim (a 0-d x: [1])
// x.repeat(r[0..k)): each dim viewed as [1, n], expanded to [r, n], the whole reshaped (a
// copy); k >= x's ndim, k <= TD_MAX_DIMS (more than 4 counts: one dim at a time)
Value *build_repeat(Builder *b, Value *x, int k, const int64_t *r);

// ---- reductions, rows, scans, sorts ----
// op over the dims of mask (dim: the one dim written, else -1) into dtype dt
Value *build_reduce_to(Builder *b, Op op, Value *x, uint32_t mask, bool keepdim, int dim, DType dt);
Value *build_reduce(Builder *b, Op op, Value *x, uint32_t mask, bool keepdim);  // sum (ints: i64), mean, amax ...
// op(x) and op(x, dim, keepdim) as the reductions called by their PyTorch names make them:
// of PyTorch's dtype for op (build_reduce_dtype), the one dim written recorded
Value *build_reduce_all(Builder *b, Op op, Value *x);
Value *build_reduce_dim(Builder *b, Op op, Value *x, int dim, bool keepdim);
// op over the dims of mask (dim: the one written, else -1), dtype dt (DT_COUNT: PyTorch's)
Value *build_reduce_mask(Builder *b, Op op, Value *x, uint32_t mask, int dim, bool keepdim, DType dt);
DType build_reduce_dtype(Op op, DType in);  // sum, prod: ints i64; argmax: i64; all, any: bool ...
Value *build_softmax(Builder *b, Op op, Value *x, int dim, DType dt);  // softmax, log_softmax
Value *build_scan(Builder *b, Op op, Value *x, int dim, DType dt);
// sort (OP_SORT: values) or argsort (indices) of x along its last dim; first: only the
// first `first` of each row are needed (0: all)
Value *build_sort(Builder *b, Op op, Value *x, bool descending, int64_t first);

// ---- creation, joins, gathers, products ----
Value *build_full(Builder *b, int n, const int64_t *shape, const Value *fill, DType dt);
Value *build_zeros(Builder *b, int n, const int64_t *shape, DType dt);
Value *build_arange(Builder *b, int64_t start, int64_t end, int64_t step, DType dt);
Value *build_eye(Builder *b, int64_t n, int64_t m, DType dt);
Value *build_cat(Builder *b, Value *const *xs, int n, int dim);
Value *build_stack(Builder *b, Value *const *xs, int n, int dim);
Value *build_index_select(Builder *b, Value *x, int dim, Value *index);
Value *build_gather(Builder *b, Value *x, int dim, Value *index);
Value *build_matmul(Builder *b, Value *x, Value *y);  // PyTorch's matmul of shapes sema checked
// matmul's output shape (PyTorch's 1-D, 2-D, folded and batched rules); false when the shapes
// do not multiply (the front end says why)
bool build_matmul_shape(const View *a, const View *b, int *on, int64_t *out);
// a [batch..., M, K1..Knk] times c [batch..., K1..Knk, N], summed over k's nk dims
Value *build_matmul_k(Builder *b, Value *a, Value *c, int nk);
// the contraction whose operand dims have the roles role[0] (a's) and role[1] (c's)
// (NodeAttr.role): output dims, or -1 - q for k's dim q
Value *build_contract(Builder *b, Value *a, Value *c, const int8_t *role_a, const int8_t *role_b);
// a node of op over srcs, of dtype dt and shape (n, shape), with attr: what the
// primitives above make, for an op they do not cover
Value *build_node(Builder *b, Op op, DType dt, int n, const int64_t *shape, Value **srcs, int nsrc, NodeAttr attr);
// bool[rows, cols]: column - row <= diagonal (lower) or >= diagonal (upper)
Value *build_triangle(Builder *b, int64_t rows, int64_t cols, int64_t diagonal, bool lower);

// The dtypes of the elementwise primitives (PyTorch's rules of the ops sema lets through;
// the front end's checks report the dtypes PyTorch refuses).
DType build_unary_dtype(Op op, DType in);
DType build_binary_dtype(Op op, DType common);  // common: torch.result_type of the operands
DType build_result_type(Value *const *vs, int n);  // of values (NULL entries take no part)

// ============================================================================
// The families: each its arguments' struct and its builders (args points at the struct)
// ============================================================================
// ---- ir/build_act.c: activations (torch.nn.functional), PyTorch's CUDA kernels' formulas ----
typedef struct ActArgs {
  double beta, threshold;            // softplus; threshold: its bound
  double slope;                      // leaky_relu
  double alpha, scale, input_scale;  // elu, selu, celu
  double lo, hi;                     // hardtanh, relu6: the bounds, as the input's dtype takes them
  double value;                      // threshold: what replaces x <= threshold
  bool swish;                        // hardswish (else hardsigmoid)
  int dim;                           // glu: the halved dim; softmin: the dim
  int64_t half;                      // glu: half of that dim's size
  DType dtype;                       // softmin: the result dtype
} ActArgs;
int build_softplus(Builder *b, const void *args, Value **out);
int build_leaky_relu(Builder *b, const void *args, Value **out);
int build_elu(Builder *b, const void *args, Value **out);       // elu, selu, celu
int build_hardtanh(Builder *b, const void *args, Value **out);  // hardtanh, relu6
int build_hardsigmoid(Builder *b, const void *args, Value **out);  // hardsigmoid, hardswish
int build_mish(Builder *b, const void *args, Value **out);
int build_softsign(Builder *b, const void *args, Value **out);
int build_logsigmoid(Builder *b, const void *args, Value **out);
int build_tanhshrink(Builder *b, const void *args, Value **out);
int build_threshold(Builder *b, const void *args, Value **out);
int build_glu(Builder *b, const void *args, Value **out);
int build_softmin(Builder *b, const void *args, Value **out);
Value *build_logsigmoid_of(Builder *b, Value *x);  // the formula of logsigmoid
Value *build_logsigmoid_value(Builder *b, Value *x);  // F.logsigmoid(x): the formula in f32 for halves

// ---- ir/build_norm.c: normalizations ----
// The operands: the input, then those of the optional ones that are given (has[i]), in
// the order of PyTorch's parameters.
typedef struct NormArgs {
  uint32_t mask;     // the dims normalized over (layer_norm, rms_norm, instance_norm)
  double eps;
  bool has[4];       // layer_norm, rms_norm, group_norm: weight, bias in has[0], has[1];
                     // batch_norm and instance_norm: running_mean, running_var, weight, bias
  bool stats;        // instance_norm: its own statistics (else the running ones, as batch_norm)
  int64_t groups;    // group_norm
  double p;          // normalize, pairwise_distance: the norm's p
  bool keepdim;      // pairwise_distance
  int dim;           // normalize, cosine_similarity
  int ndim;          // cosine_similarity: the shape both operands broadcast to
  int64_t shape[TD_MAX_DIMS];
  DType dtype;       // cosine_similarity, pairwise_distance: their common dtype
} NormArgs;
int build_layer_norm(Builder *b, const void *args, Value **out);
int build_rms_norm(Builder *b, const void *args, Value **out);
int build_group_norm(Builder *b, const void *args, Value **out);
int build_batch_norm(Builder *b, const void *args, Value **out);     // batch_norm, instance_norm
int build_normalize(Builder *b, const void *args, Value **out);
int build_cosine_similarity(Builder *b, const void *args, Value **out);
int build_pairwise_distance(Builder *b, const void *args, Value **out);
// The p-norm of float x over the dims of mask (linalg.vector_norm's): 2: sqrt(sum(x * x)),
// 1: sum(abs(x)), inf / -inf: amax / amin(abs(x)), 0: the count of nonzeros, else
// sum(abs(x) ** p) ** (1 / p).
Value *build_vector_norm(Builder *b, Value *x, double p, uint32_t mask, bool keepdim);
// F.pairwise_distance(x, y, p, eps, keepdim) of operands whose common dtype is dt
Value *build_pairwise(Builder *b, Value *x, Value *y, double p, double eps, bool keepdim, DType dt);

// ---- ir/build_loss.c: the losses of torch.nn.functional ----
typedef enum { LOSS_NONE, LOSS_MEAN, LOSS_SUM, LOSS_BATCHMEAN } LossReduction;
typedef enum { LOSS_MSE, LOSS_SMOOTH_L1, LOSS_HUBER } PointwiseLoss;
// The operands: the ones PyTorch's signature names, in its order, the optional ones
// (weight, pos_weight) only when given.
typedef struct LossArgs {
  LossReduction reduction;
  PointwiseLoss kind;      // mse_loss, smooth_l1_loss, huber_loss (the row's variant)
  DType dtype;             // the dtype the loss is computed in (halves: f32)
  DType out;               // the dtype of the loss before it is reduced
  double p;                // smooth_l1's beta, huber's delta, triplet's norm, multi_margin's p
  double margin, eps, label_smoothing;
  int64_t ignore_index;
  bool weight, pos_weight; // given
  bool log_target, log_input, full, swap, margin_first, probs;
  bool var_unsqueeze;      // gaussian_nll_loss: var is one dim short of the input
  int64_t nframe, classes; // multi_margin_loss, multilabel_margin_loss: the input as [nframe, classes]
  int ndim;                // ... their unreduced result's shape
  int64_t shape[TD_MAX_DIMS];
} LossArgs;
int build_pointwise_loss(Builder *b, const void *args, Value **out);  // mse, smooth_l1, huber
int build_l1_loss(Builder *b, const void *args, Value **out);
int build_soft_margin_loss(Builder *b, const void *args, Value **out);
int build_binary_cross_entropy(Builder *b, const void *args, Value **out);
int build_binary_cross_entropy_with_logits(Builder *b, const void *args, Value **out);
int build_kl_div(Builder *b, const void *args, Value **out);
int build_nll_loss(Builder *b, const void *args, Value **out);
int build_cross_entropy(Builder *b, const void *args, Value **out);
int build_margin_ranking_loss(Builder *b, const void *args, Value **out);
int build_hinge_embedding_loss(Builder *b, const void *args, Value **out);
int build_cosine_embedding_loss(Builder *b, const void *args, Value **out);
int build_multilabel_soft_margin_loss(Builder *b, const void *args, Value **out);
int build_multi_margin_loss(Builder *b, const void *args, Value **out);
int build_multilabel_margin_loss(Builder *b, const void *args, Value **out);
int build_triplet_margin_loss(Builder *b, const void *args, Value **out);  // and triplet_margin_with_distance_loss
int build_poisson_nll_loss(Builder *b, const void *args, Value **out);
int build_gaussian_nll_loss(Builder *b, const void *args, Value **out);

// ---- ir/build_conv.c: padding, convolution, pooling, interpolation, fold and unfold ----
// The spatial dims are the last nsp of the input (1 to 3); per-dim numbers are in [0, nsp).
enum { BUILD_MAX_SPATIAL = 3 };
typedef enum { PAD_CONSTANT, PAD_REFLECT, PAD_REPLICATE, PAD_CIRCULAR } PadMode;
typedef struct PadArgs {
  PadMode mode;
  int npad;                        // pads: (left, right) pairs, the last dim's first
  int64_t pads[2 * TD_MAX_DIMS];
  DType fill_dtype;                // constant: the fill value (a Python number)
  double fill;
  int64_t ifill;
} PadArgs;
typedef enum { POOL_MAX, POOL_AVG, POOL_LP, POOL_ADAPTIVE_MAX, POOL_ADAPTIVE_AVG, POOL_MAX_UNPOOL } PoolKind;
typedef struct PoolArgs {
  PoolKind kind;
  int nsp;
  int64_t k[BUILD_MAX_SPATIAL], s[BUILD_MAX_SPATIAL], p[BUILD_MAX_SPATIAL], dil[BUILD_MAX_SPATIAL];
  int64_t out[BUILD_MAX_SPATIAL];  // the output's spatial size (adaptive: output_size)
  bool count_include_pad;          // avg
  int64_t divisor;                 // avg: divisor_override (0: none)
  double norm_type;                // lp
  bool indices;                    // max, adaptive max: return_indices (a second result, i64: each
                                   // max's flat position in its input plane)
} PoolArgs;                        // max_unpool: operands input, indices; out the output's size
typedef struct ConvArgs {
  int nsp;
  bool transposed, bias, batched;  // operands: input, weight, (bias)
  int64_t s[BUILD_MAX_SPATIAL], dil[BUILD_MAX_SPATIAL];
  int64_t pl[BUILD_MAX_SPATIAL], pr[BUILD_MAX_SPATIAL];  // padding on the left and the right
  int64_t op[BUILD_MAX_SPATIAL];   // transposed: output_padding
  int64_t groups;
} ConvArgs;
typedef struct UnfoldArgs {        // F.unfold (im2col) and F.fold (col2im) of 2 spatial dims
  int64_t k[2], dil[2], p[2], s[2];
  int64_t out[2];                  // unfold: the blocks per dim; fold: output_size
  int64_t blocks[2];               // fold: the blocks per dim
} UnfoldArgs;
typedef enum { INTERP_NEAREST, INTERP_LINEAR, INTERP_NEAREST_EXACT, INTERP_CUBIC, INTERP_AREA } InterpMode;
typedef struct InterpArgs {
  InterpMode mode;                 // linear: linear, bilinear, trilinear; cubic: bicubic
  int nsp;
  int64_t out[BUILD_MAX_SPATIAL];
  double scale[BUILD_MAX_SPATIAL]; // the scale_factor given, used as in / out (0: none)
  bool align_corners;
} InterpArgs;
typedef struct LrnArgs {           // local_response_norm; operands: input, alpha, beta, k
  int64_t size;
} LrnArgs;
int build_pad(Builder *b, const void *args, Value **out);
int build_pool(Builder *b, const void *args, Value **out);  // max, avg, lp and adaptive pools
int build_conv(Builder *b, const void *args, Value **out);  // conv and conv_transpose
int build_unfold(Builder *b, const void *args, Value **out);  // F.unfold
int build_fold(Builder *b, const void *args, Value **out);
int build_interpolate(Builder *b, const void *args, Value **out);
int build_local_response_norm(Builder *b, const void *args, Value **out);
// x padded by pads[0..2*npad) (PyTorch's order: the last dim first); fill: the constant's
// value (NULL: 0)
Value *build_pad_value(Builder *b, Value *x, int npad, const int64_t *pads, PadMode mode, const Value *fill);

// ---- ir/build_linalg.c: products and statistics ----
typedef enum { PROD_MM, PROD_BMM, PROD_MV, PROD_OUTER, PROD_BMM_SUM } ProductKind;
typedef struct LinalgArgs {
  bool bias;                       // linear, bilinear: a bias operand (last)
  ProductKind product;             // addmm (mm), baddbmm (bmm), addmv (mv), addr (outer), addbmm (bmm_sum)
  bool scale_alpha, scale_beta;    // addmm and kin: alpha != 1, beta != 1 (then operands alpha, beta follow)
  bool drop_input;                 // addmm and kin: beta == 0 (the input is not read)
  int dim;                         // cross: the dim of size 3
  int64_t offset;                  // diag_embed, diag, diagflat
  bool flat;                       // diagflat: diag of the input flattened
  int dim1, dim2;                  // diag_embed: the new dims
  int n;                           // kron: the dims of the result; tensordot: the contracted dims
  int perm_a[TD_MAX_DIMS], perm_b[TD_MAX_DIMS];  // tensordot: a, b permuted to [free.., k..], [k.., free..]
  int ndim;                        // tensordot: the result's dims, and their sizes
  int64_t shape[TD_MAX_DIMS];
  int64_t correction;              // cov
  bool fweights, aweights;         // cov: the weight operands given
} LinalgArgs;
int build_linear(Builder *b, const void *args, Value **out);
int build_bilinear(Builder *b, const void *args, Value **out);
int build_outer(Builder *b, const void *args, Value **out);
int build_inner(Builder *b, const void *args, Value **out);
int build_tensordot(Builder *b, const void *args, Value **out);
int build_addmm(Builder *b, const void *args, Value **out);  // addmm, baddbmm, addmv, addr, addbmm
int build_cross(Builder *b, const void *args, Value **out);
int build_kron(Builder *b, const void *args, Value **out);
int build_diag_embed(Builder *b, const void *args, Value **out);
int build_diag(Builder *b, const void *args, Value **out);  // diag, diagflat
int build_cov(Builder *b, const void *args, Value **out);
int build_corrcoef(Builder *b, const void *args, Value **out);
int build_trace(Builder *b, const void *args, Value **out);

// ---- ir/build_einsum.c: torch.einsum ----
// A label: 'A'..'Z' are 0..25 and 'a'..'z' 26..51, the ellipsis' dims 52 + j.
enum { EINSUM_LETTERS = 52, EINSUM_LABELS = EINSUM_LETTERS + TD_MAX_DIMS, EINSUM_MAX_OPERANDS = 64 };
typedef struct EinsumArgs {
  int nops;                                        // the operands, each with
  int n[EINSUM_MAX_OPERANDS];                      // its dims' labels as written (repeats: diagonals)
  int8_t lab[EINSUM_MAX_OPERANDS][TD_MAX_DIMS];
  int nout;                                        // the output's labels, in its order
  int8_t out[TD_MAX_DIMS];
} EinsumArgs;
int build_einsum(Builder *b, const void *args, Value **out);

// ---- ir/build_math.c: elementwise ops built of others ----
typedef enum {
  TEST_NAN, TEST_INF, TEST_FINITE, TEST_POSINF, TEST_NEGINF,  // isnan ... isneginf
} FloatTest;
// ---- build_complex.c: complex tensors as float pairs (Value.cplx) ----
typedef enum {
  CX_ADD, CX_SUB, CX_MUL, CX_DIV,      // a OP b: complex, real tensors and Python numbers
  CX_POW, CX_EQ, CX_NE,                // a ** b, a == b, a != b
  CX_NEG, CX_ABS, CX_EXP, CX_ANGLE, CX_CONJ, CX_ISREAL,
  CX_LOG, CX_LOG2, CX_LOG10, CX_SQRT, CX_RSQRT, CX_RECIPROCAL, CX_SQUARE, CX_SIGMOID,
  CX_SIN, CX_COS, CX_TAN, CX_SINH, CX_COSH, CX_TANH,
  CX_ASIN, CX_ACOS, CX_ATAN, CX_ASINH, CX_ACOSH, CX_ATANH,
  CX_SILU, CX_SINC,                    // z sigmoid(z); sin(pi z) / (pi z), 1 at 0
  CX_TANHSHRINK, CX_SOFTSIGN,          // z - tanh z; z / (1 + |z|)
  CX_ISNAN, CX_ISINF, CX_ISFINITE,     // bool results
  CX_REAL, CX_IMAG, CX_AS_REAL, CX_AS_COMPLEX,  // views
  CX_POLAR, CX_MAKE,                   // torch.polar(abs, angle), torch.complex(real, imag)
  CX_MATMUL,
  CX_WHERE,                            // torch.where(cond, a, b) of complex a or b
  CX_SAME,                             // the operand itself (conj and .real of a float tensor)
  CX_SGN,                              // z / |z| (0 at 0); sign of a real tensor
  CX_IS_COMPLEX,                       // x.is_complex(): a compile-time bool, no builder
  CX_TO_REAL,                          // z.to(a real dtype): the real part (bool: its != 0, as PyTorch 1.13)
  CX_FROM_REAL,                        // x as complex dtype `dtype`: (x, 0)
  CX_LITERAL,                          // Python's complex number (re, im): a wrapped c128 0-d tensor
  CX_PROD, CX_CUMSUM, CX_CUMPROD,      // over dim `dim` (-1: prod over all), keepdim
  CX_GATHER,                           // gather(z, dim, index): the pairs at index
  CX_PARTS,                            // another builder (or node) run on the parts: `parts` below
  CX_FULL,                             // a tensor of shape `shape` filled with (re, im), of dtype `dtype`
  CX_TENSOR,                           // torch.tensor of complex numbers: the literals fargs (real parts), fargs_im
  CX_COUNT
} ComplexOp;
typedef struct ComplexArgs {
  ComplexOp op;
  DType dtype;      // CX_TO_REAL, CX_FROM_REAL: the result's
  double re, im;    // CX_LITERAL, CX_FULL
  int dim;          // CX_PROD (-1: all dims), CX_CUMSUM, CX_CUMPROD, CX_GATHER: wrapped, of the complex shape
  bool keepdim;     // CX_PROD
  // CX_PARTS: builder `fn` (NULL: the node `node` of shape `shape`, attr `attr`) with
  // `fargs`, run on the parts of the operands in `parts` (a real one's imaginary part is
  // 0), the others as they are. Linear (multilinear false): the result's real part is fn
  // of the real parts, its imaginary part fn of the imaginary parts. Multilinear: fn is
  // linear in each operand of `parts` alone (a product): the sum over every choice of
  // part per operand, times i per imaginary part chosen.
  // The node's dtype is `dtype`, the result's part dtype.
  BuildFn fn;
  const void *fargs, *fargs_im;  // fargs_im: the imaginary run's (NULL: fargs; pad's fill is 0 there);
                                 // CX_TENSOR: the CreateArgs of each part
  Op node;
  NodeAttr attr;
  int ndim;
  int64_t shape[TD_MAX_DIMS];
  uint32_t parts;
  bool multilinear;
  bool sum_parts, root;  // a real result: fn(real parts) + fn(imaginary parts) (var), its sqrt (std)
} ComplexArgs;
int build_complex(Builder *b, const void *args, Value **out);

typedef struct MathArgs {
  Op op;                 // add/sub with alpha: ADD or SUB; fmax/fmin: MAXIMUM or MINIMUM; addcmul/addcdiv: MUL or DIV
  DType dtype, compute;  // add, lerp, logaddexp: the result's dtype and the one computed in
  bool known;            // add: alpha is a number (else the 0-d tensor operand 2)
  double alpha;          // add: alpha as the result dtype holds it (bool: 0 or 1)
  int64_t ialpha;        // add: alpha as an int
  FloatTest test;        // isnan and kin
  double v[3];           // nan_to_num: nan, posinf, neginf; isclose: rtol, atol; lerp: the weight, 1 - it
  bool flag;             // isclose: equal_nan; logaddexp: base 2; lerp: a number weight; shrink: hard;
                         // logit: eps given; addcmul: value != 1 (operand 3); xlogy: other a tensor
  double k;              // deg2rad's factor, logit's eps, shrink's lambda
  int dim;               // diff: the dim; tril, triu: the rows' dim (the other is next)
  int64_t n;             // diff: its order; tril, triu: the diagonal
  bool lower;            // tril
  int ndim;              // prelu: the weight as [C, 1...] (0: as it is)
  int64_t shape[TD_MAX_DIMS];
} MathArgs;
int build_add(Builder *b, const void *args, Value **out);  // add, sub, subtract, rsub with alpha
int build_float_test(Builder *b, const void *args, Value **out);
int build_nan_to_num(Builder *b, const void *args, Value **out);
int build_isclose(Builder *b, const void *args, Value **out);
int build_lerp(Builder *b, const void *args, Value **out);
int build_logaddexp(Builder *b, const void *args, Value **out);  // logaddexp, logaddexp2
int build_logical_xor(Builder *b, const void *args, Value **out);
int build_scale(Builder *b, const void *args, Value **out);      // deg2rad, rad2deg
int build_xlogy(Builder *b, const void *args, Value **out);
int build_heaviside(Builder *b, const void *args, Value **out);
int build_logit(Builder *b, const void *args, Value **out);
int build_sinc(Builder *b, const void *args, Value **out);
int build_fmax(Builder *b, const void *args, Value **out);       // fmax, fmin
int build_float_power(Builder *b, const void *args, Value **out);
int build_signbit(Builder *b, const void *args, Value **out);
int build_shrink(Builder *b, const void *args, Value **out);     // hardshrink, softshrink
int build_prelu(Builder *b, const void *args, Value **out);
int build_addcmul(Builder *b, const void *args, Value **out);    // addcmul, addcdiv
int build_ldexp(Builder *b, const void *args, Value **out);
int build_isreal(Builder *b, const void *args, Value **out);
int build_angle(Builder *b, const void *args, Value **out);
int build_diff(Builder *b, const void *args, Value **out);
int build_masked_fill(Builder *b, const void *args, Value **out);
int build_tril(Builder *b, const void *args, Value **out);       // tril, triu

// ---- ir/build_reduce.c: reductions built of others, and those of several results ----
typedef struct ReduceArgs {
  Op op;             // var_mean: VAR or STD; max/min with a dim, aminmax: AMAX or AMIN
  uint32_t mask;     // the dims reduced (dim: the one written, else -1)
  int dim;
  bool keepdim;
  int64_t correction;
  DType dtype;       // the result's dtype (nansum: sum's; norm: the input cast to it, DT_COUNT: none)
  bool mean;         // nanmean (else nansum)
  double p;          // norm, dist
} ReduceArgs;
int build_var_mean(Builder *b, const void *args, Value **out);     // (var or std, mean)
int build_max_dim(Builder *b, const void *args, Value **out);      // max/min(x, dim): (values, indices)
int build_aminmax(Builder *b, const void *args, Value **out);      // (min, max)
int build_count_nonzero(Builder *b, const void *args, Value **out);
int build_nansum(Builder *b, const void *args, Value **out);       // nansum, nanmean
int build_norm(Builder *b, const void *args, Value **out);         // torch.norm's vector norms
int build_dist(Builder *b, const void *args, Value **out);

// ---- ir/build_shape.c: copies made of views ----
typedef struct ShapeArgs {
  int n;                           // repeat: the counts' length; roll: the dims rolled
  int64_t r[TD_MAX_DIMS];          // repeat: the counts; roll: each dim's shift (in [0, size))
  int dims[TD_MAX_DIMS];           // roll: the dims (flat: the input flattened, dim 0)
  bool flat;                       // roll, repeat_interleave: of the input flattened
  int dim;                         // repeat_interleave, narrow_copy
  int64_t count;                   // repeat_interleave: the repeats
  int64_t start, length;           // narrow_copy
  DType dtype;                     // view_dtype: the dtype viewed as
} ShapeArgs;
int build_repeat_op(Builder *b, const void *args, Value **out);  // repeat, tile
int build_repeat_interleave(Builder *b, const void *args, Value **out);
int build_roll(Builder *b, const void *args, Value **out);
int build_narrow_copy(Builder *b, const void *args, Value **out);
// x.view(dtype) of a dtype of another width: the last dim's elements' bytes, regrouped
int build_view_dtype(Builder *b, const void *args, Value **out);
// pixel_shuffle (count: the factor r) and pixel_unshuffle (flat), of [*, C, H, W]
int build_pixel_shuffle(Builder *b, const void *args, Value **out);
// narrow(input, dim, start, length) of a 0-d integer tensor start, known at run time only:
// the elements at start (negative: from the end) .. + length gathered (index_select)
int build_narrow_at(Builder *b, const void *args, Value **out);

// ---- ir/build_scan.c: scans of several results ----
typedef struct ScanArgs {
  Op op;    // CUMMAX or CUMMIN
  int dim;  // wrapped
} ScanArgs;
int build_cummax(Builder *b, const void *args, Value **out);  // cummax, cummin: (values, indices)

// ---- ir/build_sort.c: sort and the ops made of its views ----
typedef enum { SORT_SORT, SORT_ARGSORT, SORT_MSORT, SORT_TOPK, SORT_KTHVALUE, SORT_MEDIAN } SortKind;
typedef struct SortArgs {
  SortKind kind;
  int dim;           // the dim sorted (wrapped; msort: 0)
  bool descending;   // sort, argsort; topk: largest
  int64_t k;         // topk: the count; kthvalue, median: the element (0-based)
  bool keepdim;      // kthvalue, median
} SortArgs;
int build_sort_dim(Builder *b, const void *args, Value **out);    // sort (values, indices), argsort, msort
int build_topk(Builder *b, const void *args, Value **out);        // (values, indices)
int build_kth(Builder *b, const void *args, Value **out);         // kthvalue, median(dim): (values, indices)
int build_median_all(Builder *b, const void *args, Value **out);  // median(input)

// ---- ir/build_create.c: tensors of Python data ----
enum { BUILD_MAX_LIST = 64 };  // the most entries of one level of a literal, of an index list
typedef struct CreateArgs {
  int ndim;                  // literal: the levels, and each one's length
  int64_t shape[TD_MAX_DIMS];
  int64_t n;                 // the values, in row-major order:
  const DType *dtype;        // literal: each one's Python type (bool, i64, f64)
  const double *f;
  const int64_t *i;          // index list: the (wrapped) indices
  bool copy;                 // literal: a copy of the tensor operand 0 instead
  DType cast;                // literal: the dtype= asked for (DT_COUNT: none); linspace: the result's
  double start, end, base;   // linspace, logspace (base: logspace's)
  int64_t steps;
  bool log;                  // logspace
} CreateArgs;
int build_literal(Builder *b, const void *args, Value **out);     // torch.tensor
int build_linspace(Builder *b, const void *args, Value **out);    // linspace, logspace
int build_index_list(Builder *b, const void *args, Value **out);  // an int list index as an i64 vector

// ---- ir/build_index.c: gathers and writes at positions built of index nodes ----
typedef enum { SCATTER_SLICE, SCATTER_SELECT, SCATTER_DIAGONAL } ViewScatter;
typedef struct IndexArgs {
  int dim;                         // take_along_dim (-1: of the input flattened); select and
                                   // slice_scatter: the dim
  int ndim;                        // take_along_dim: the shapes the input and the indices expand to;
  int64_t shape[TD_MAX_DIMS], ishape[TD_MAX_DIMS];  // masked_scatter: the broadcast shape
  ViewScatter view;                // slice_scatter, select_scatter, diagonal_scatter
  int64_t start, end, step;        // slice_scatter (end, clamped); select_scatter: start the index
  int64_t offset;                  // diagonal_scatter
  int dim1, dim2;                  // diagonal_scatter
  int64_t classes;                 // one_hot
} IndexArgs;
int build_take(Builder *b, const void *args, Value **out);
int build_take_along_dim(Builder *b, const void *args, Value **out);
int build_view_scatter(Builder *b, const void *args, Value **out);
int build_masked_scatter(Builder *b, const void *args, Value **out);
int build_embedding(Builder *b, const void *args, Value **out);
int build_one_hot(Builder *b, const void *args, Value **out);
// A store node (OP_STORE, OP_INDEX_PUT, OP_SCATTER: op_is_store) writing srcs[0]'s buffer
// through its view, over srcs[0..n), at loc: an operand that reads the target's storage is
// read from a copy made first (at src_locs[i]), so the store never reads what it has
// written (x += x.flip(0); index_put reading its target). Returns the target, whose later
// reads see the write.
Value *build_store_node(Graph *g, Op op, Value **srcs, int n, NodeAttr attr, Loc loc, const Loc *src_locs);
Value *build_store(Builder *b, Op op, Value **srcs, int n, NodeAttr attr);  // at the builder's place

// ---- ir/build_einops.c: einops' rearrange, repeat and reduce ----
// einops' recipe (its _apply_recipe) over shapes known when compiling: the input (the
// operands stacked on a new first dim when it was a list) reshaped to the pattern's
// elementary axes, permuted, reduced over its last dims, new axes inserted and expanded,
// reshaped to the result's dims. Each step is a view where PyTorch's would be one.
typedef struct EinopsArgs {
  bool stack;                      // the operands are a list's tensors, stacked on dim 0
  int ninit;                       // the elementary axes' lengths (0: no reshape)
  int64_t init[TD_MAX_DIMS];
  int nperm;                       // the permutation (0: none)
  int perm[TD_MAX_DIMS];
  int nreduce;                     // the last nreduce dims reduced by op
  Op op;                           // OP_SUM, OP_MEAN, OP_AMAX, OP_AMIN, OP_PROD, OP_ANY, OP_ALL
  bool each;                       // one dim at a time, the last first (prod, any, all: PyTorch's take one)
  int nadd;                        // new axes: at add_at[i] (ascending, in the result of the
  int add_at[TD_MAX_DIMS];         // insertions), of length add_len[i]
  int64_t add_len[TD_MAX_DIMS];
  int nfinal;                      // the result's dims (0: no reshape)
  int64_t final[TD_MAX_DIMS];
} EinopsArgs;
int build_einops(Builder *b, const void *args, Value **out);
// einops.pack: each operand reshaped to shape[i] (the axes '*' stands for merged into
// dim), all concatenated along dim; einops.unpack: the input's dim cut into n parts (part
// i from start[i], len[i] long), each reshaped to shape[i].
enum { EINOPS_MAX_TENSORS = 64 };
typedef struct EinopsPackArgs {
  int dim;
  int n;
  int ndim[EINOPS_MAX_TENSORS];
  int64_t shape[EINOPS_MAX_TENSORS][TD_MAX_DIMS];
  int64_t start[EINOPS_MAX_TENSORS], len[EINOPS_MAX_TENSORS];  // unpack
} EinopsPackArgs;
int build_einops_pack(Builder *b, const void *args, Value **out);
int build_einops_unpack(Builder *b, const void *args, Value **out);  // n results

// ---- the one dialect: short forms every family file writes its formulas in ----
static inline Value *b_add(Builder *b, Value *x, Value *y) { return build_binary(b, OP_ADD, x, y); }
static inline Value *b_sub(Builder *b, Value *x, Value *y) { return build_binary(b, OP_SUB, x, y); }
static inline Value *b_mul(Builder *b, Value *x, Value *y) { return build_binary(b, OP_MUL, x, y); }
static inline Value *b_div(Builder *b, Value *x, Value *y) { return build_binary(b, OP_DIV, x, y); }
static inline Value *b_pow(Builder *b, Value *x, Value *y) { return build_binary(b, OP_POW, x, y); }
static inline Value *b_bin(Builder *b, Op op, Value *x, Value *y) { return build_binary(b, op, x, y); }
static inline Value *b_un(Builder *b, Op op, Value *x) { return build_unary(b, op, x); }
static inline Value *b_neg(Builder *b, Value *x) { return build_unary(b, OP_NEG, x); }
static inline Value *b_abs(Builder *b, Value *x) { return build_unary(b, OP_ABS, x); }
static inline Value *b_exp(Builder *b, Value *x) { return build_unary(b, OP_EXP, x); }
static inline Value *b_log(Builder *b, Value *x) { return build_unary(b, OP_LOG, x); }
static inline Value *b_f(Builder *b, double v) { return build_float(b, v); }
static inline Value *b_i(Builder *b, int64_t v) { return build_int(b, v); }
static inline Value *b_where(Builder *b, Value *c, Value *x, Value *y) { return build_where(b, c, x, y); }
static inline Value *b_clamp_min(Builder *b, Value *x, double lo) { return build_clamp(b, x, build_float(b, lo), NULL); }
static inline Value *b_in(Builder *b, int i) { return build_in(b, i); }
static inline uint32_t b_dims_from(int from, int to) {  // the dims from..to-1 as a reduction's mask
  return to > from ? (uint32_t)(((1ull << (to - from)) - 1) << from) : 0;
}

#endif
