// tests/unit/test_fuse.c: ir/fuse.c, the fusion plan. Programs are parsed from strings,
// checked, lowered and fused; each test states the kernel count and the modes the
// plan must give (DESIGN.md: elementwise chains are one kernel, softmax one, layer norm
// one row kernel, linear + relu one matmul kernel), and every plan is checked for the
// invariants kernel.c relies on (plan_is_sound). The view-decomposition function that
// decides whether a reader can recompute a producer is tested on its own.
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"


#define I64(...) ((const int64_t[]){__VA_ARGS__})

#include "ctx_fixture.h"

// The plan of the first function of src.
static Graph *plan(const char *src) {
  SrcFile *f = srcfile_from_string(&cx, "t.tdsl", src, strlen(src));
  Program prog = {0};
  prog.ast = parse_program(&cx, f);
  assert_non_null(prog.ast);
  assert_true(sema_check(&cx, &prog));
  assert_int_equal(cx.nerrors, 0);
  Graph *g = lower_fn(&cx, &prog, prog.fns.data[0], false);
  fuse_graph(g);
  return g;
}

// The nth node (0-based) with this op.
static Node *op_node(const Graph *g, Op op, int nth) {
  for (int i = 0; i < g->nodes.len; i++)
    if (g->nodes.data[i]->op == op && nth-- == 0)
      return g->nodes.data[i];
  fail_msg("no node %s", op_name(op));
  return NULL;
}

static int count_mode(const Graph *g, NodeMode m) {
  int n = 0;
  for (int i = 0; i < g->nodes.len; i++)
    n += g->nodes.data[i]->mode == m;
  return n;
}

static const Node *producer(const Value *v) {
  return v && v->buf && v->buf->kind == BUF_KERNEL ? v->buf->producer : NULL;
}

// Every value a kernel `k` reads (through inline nodes) is computed before it: a stored
// node by an earlier or the same kernel, a local one by that very kernel.
static void assert_reads_ready(const Node *n, int k) {
  for (int s = 0; s < n->nsrc; s++) {
    const Node *p = producer(n->srcs[s]);
    if (!p)
      continue;
    if (p->mode == NM_INLINE) {
      assert_true(op_is_elementwise(p->op));
      assert_true(p->kernel <= k);
      assert_reads_ready(p, k);
    } else if (p->mode == NM_LOCAL) {
      assert_int_equal(p->kernel, k);
    } else {
      assert_true(p->kernel <= k);
    }
  }
}

static void plan_is_sound(const Graph *g) {
  bool *seen = calloc((size_t)g->nkernels + 1, 1);
  for (int i = 0; i < g->nodes.len; i++) {
    const Node *n = g->nodes.data[i];
    assert_true(n->kernel >= 0 && n->kernel < g->nkernels);
    if (n->mode != NM_INLINE) {
      seen[n->kernel] = true;
      assert_reads_ready(n, n->kernel);
    }
  }
  for (int k = 0; k < g->nkernels; k++)
    assert_true(seen[k]);  // every kernel computes something
  for (int i = 0; i < g->outputs.len; i++) {
    const Node *p = producer(g->outputs.data[i]);
    if (p)
      assert_int_equal(p->mode, NM_STORED);
  }
  free(seen);
}

static Graph *sound_plan(const char *src) {
  Graph *g = plan(src);
  plan_is_sound(g);
  return g;
}

// ---- the required outcomes ----------------------------------------------------------

static void an_elementwise_chain_of_any_length_is_one_kernel(void **state) {
  (void)state;
  Graph *g = sound_plan("fn f(x: f32[8, 16], y: f32[16]) -> f32[16, 8] {\n"
                        "  a = exp(x) + y\n  b = (a * 2 - 1).t()\n  c = relu(b) / 3 + 1\n"
                        "  d = sqrt(abs(c) + 1).flip(0)\n  e = tanh(d - 2) * sigmoid(y[0:8])\n"
                        "  f = where(y[0:8] > 0, log(abs(e) + 1), -y[8:]).clamp(min=-1, max=1)\n"
                        "  return sin(cos(exp(f))) ** 2\n}\n");
  assert_int_equal(g->nkernels, 1);
  assert_int_equal(count_mode(g, NM_STORED), 1);
  assert_int_equal(count_mode(g, NM_INLINE), g->nodes.len - 1);
  assert_int_equal(fuse_kernel_kind(g, 0), KK_EW);
}

static void a_large_expression_read_twice_is_stored_once(void **state) {
  (void)state;
  Graph *g = sound_plan("fn f(x: f32[8, 16], y: f32[16]) -> f32[8, 16] {\n"
                        "  a = exp(x) + y\n  b = a * 2 - 1\n  c = relu(b) / (abs(a) + 1)\n"
                        "  return c * c + 1\n}\n");
  assert_int_equal(g->nkernels, 2);
  assert_int_equal(op_node(g, OP_DIV, 0)->mode, NM_STORED);  // 10 ops, read twice
  assert_int_equal(op_node(g, OP_EXP, 0)->mode, NM_INLINE);
}

static void a_view_between_elementwise_ops_does_not_split_a_kernel(void **state) {
  (void)state;
  Graph *g = sound_plan("fn f(x: f32[4, 6]) -> f32[3, 4] {\n"
                        "  y = exp(x).t()\n  z = (y[::2] + 1).flip(0)\n  return z * y[1::2]\n}\n");
  assert_int_equal(g->nkernels, 1);
  assert_int_equal(op_node(g, OP_EXP, 0)->mode, NM_INLINE);
  assert_int_equal(op_node(g, OP_ADD, 0)->mode, NM_INLINE);
}

static void a_non_contiguous_copy_is_read_through_its_strides(void **state) {
  (void)state;
  Graph *g = sound_plan("fn f(x: f32[4, 6]) -> f32[6, 4] {\n  return x.t().contiguous() * 2\n}\n");
  assert_int_equal(g->nkernels, 1);
  assert_int_equal(op_node(g, OP_COPY, 0)->mode, NM_INLINE);
}

static void softmax_is_one_kernel(void **state) {
  (void)state;
  Graph *g = sound_plan("fn f(x: f32[8, 100]) -> f32[8, 100] {\n  return softmax(x, dim=-1)\n}\n");
  assert_int_equal(g->nkernels, 1);
  assert_int_equal(fuse_kernel_kind(g, 0), KK_ROW);
}

static void log_softmax_absorbs_its_producer_into_one_kernel(void **state) {
  (void)state;
  Graph *g = sound_plan("fn f(x: f32[8, 100]) -> f32[8, 100] {\n  return log_softmax(x * 2, dim=1)\n}\n");
  assert_int_equal(g->nkernels, 1);
  assert_int_equal(op_node(g, OP_MUL, 0)->mode, NM_INLINE);
  assert_int_equal(op_node(g, OP_MUL, 0)->kernel, 0);
}

static void layer_norm_is_one_row_kernel_with_local_mean_and_var(void **state) {
  (void)state;
  Graph *g = sound_plan("fn layer_norm(x: f32[32, 10, 512]) -> f32[32, 10, 512] {\n"
                        "  m = x.mean(-1, keepdim=true)\n  v = x.var(-1, keepdim=true, unbiased=false)\n"
                        "  return (x - m) / sqrt(v + 1e-5)\n}\n");
  assert_int_equal(g->nkernels, 1);
  assert_int_equal(fuse_kernel_kind(g, 0), KK_ROW);
  assert_int_equal(op_node(g, OP_MEAN, 0)->mode, NM_LOCAL);
  assert_int_equal(op_node(g, OP_VAR, 0)->mode, NM_LOCAL);
  assert_int_equal(op_node(g, OP_DIV, 0)->mode, NM_STORED);
  assert_int_equal(count_mode(g, NM_INLINE), 3);  // sub, add, sqrt
}

static void layer_norm_without_keepdim_is_one_kernel_too(void **state) {
  (void)state;
  Graph *g = sound_plan("fn f(x: f32[6, 8]) -> f32[6, 8] {\n"
                        "  m = x.mean(1)\n  s = x.std(1)\n  return (x - m.unsqueeze(1)) / s[:, None]\n}\n");
  assert_int_equal(g->nkernels, 1);
  assert_int_equal(op_node(g, OP_MEAN, 0)->mode, NM_LOCAL);
}

static void a_two_pass_layer_norm_is_two_kernels(void **state) {
  (void)state;
  Graph *g = sound_plan("fn f(x: f32[6, 8]) -> f32[6, 8] {\n"
                        "  m = x.mean(-1, keepdim=true)\n  d = x - m\n"
                        "  v = (d * d).mean(-1, keepdim=true)\n  return d / sqrt(v + 1e-5)\n}\n");
  assert_int_equal(g->nkernels, 2);
  assert_int_equal(op_node(g, OP_MEAN, 0)->mode, NM_STORED);  // read again by the second kernel
  assert_int_equal(op_node(g, OP_MEAN, 1)->mode, NM_LOCAL);
}

static void a_returned_reduction_is_stored_inside_its_row_kernel(void **state) {
  (void)state;
  Graph *g = sound_plan("fn f(x: f32[6, 8]) -> (f32[6, 1], f32[6, 8]) {\n"
                        "  m = x.amax(-1, keepdim=true)\n  return m, exp(x - m)\n}\n");
  assert_int_equal(g->nkernels, 1);
  assert_int_equal(op_node(g, OP_AMAX, 0)->mode, NM_STORED);
}

static void a_reader_off_the_current_row_does_not_join_the_row_kernel(void **state) {
  (void)state;
  // m.flip(0) reads another row's mean
  Graph *g = sound_plan("fn f(x: f32[6, 8]) -> f32[6, 8] {\n"
                        "  m = x.sum(-1, keepdim=true)\n  return x - m.flip(0)\n}\n");
  assert_int_equal(g->nkernels, 2);
  assert_int_equal(op_node(g, OP_SUM, 0)->mode, NM_STORED);
}

static void row_nodes_over_other_dims_do_not_share_a_kernel(void **state) {
  (void)state;
  Graph *g = sound_plan("fn f(x: f32[6, 8]) -> (f32[6], f32[8]) {\n  return x.sum(1), x.sum(0)\n}\n");
  assert_int_equal(g->nkernels, 2);
}

static void linear_relu_is_one_matmul_kernel(void **state) {
  (void)state;
  Graph *g = sound_plan("fn f(x: f32[32, 784], w: f32[784, 128], b: f32[128]) -> f32[32, 128] {\n"
                        "  return relu(x @ w + b)\n}\n");
  assert_int_equal(g->nkernels, 1);
  assert_int_equal(fuse_kernel_kind(g, 0), KK_MATMUL);
  assert_int_equal(op_node(g, OP_MATMUL, 0)->mode, NM_LOCAL);
  assert_int_equal(op_node(g, OP_ADD, 0)->mode, NM_INLINE);
  assert_int_equal(op_node(g, OP_RELU, 0)->mode, NM_STORED);
}

static void mlp_is_two_kernels(void **state) {
  (void)state;
  Graph *g = sound_plan("fn mlp(x: f32[32, 784], w1: f32[784, 128], b1: f32[128], w2: f32[128, 10], "
                        "b2: f32[10]) -> f32[32, 10] {\n  return relu(x @ w1 + b1) @ w2 + b2\n}\n");
  assert_int_equal(g->nkernels, 2);
  assert_int_equal(op_node(g, OP_RELU, 0)->mode, NM_STORED);  // a matmul operand
  assert_int_equal(op_node(g, OP_MATMUL, 0)->mode, NM_LOCAL);
  assert_int_equal(op_node(g, OP_MATMUL, 1)->mode, NM_LOCAL);
}

static void a_matmul_read_elsewhere_is_stored_and_keeps_its_epilogue(void **state) {
  (void)state;
  Graph *g = sound_plan("fn f(x: f32[4, 5], w: f32[5, 3]) -> (f32[4, 3], f32[4, 3]) {\n"
                        "  y = x @ w\n  return y, relu(y)\n}\n");
  assert_int_equal(g->nkernels, 1);
  assert_int_equal(op_node(g, OP_MATMUL, 0)->mode, NM_STORED);
}

static void a_transposed_matmul_operand_is_a_stride_not_a_copy(void **state) {
  (void)state;
  Graph *g = sound_plan("fn f(x: f32[4, 5], w: f32[3, 5]) -> f32[4, 3] {\n  return x @ w.t()\n}\n");
  assert_int_equal(g->nodes.len, 1);
  assert_int_equal(g->nkernels, 1);
}

static void an_elementwise_matmul_operand_is_stored(void **state) {
  (void)state;
  Graph *g = sound_plan("fn f(x: f32[4, 5], w: f32[5, 3]) -> f32[4, 3] {\n  return (x * 2) @ w\n}\n");
  assert_int_equal(g->nkernels, 2);
  assert_int_equal(op_node(g, OP_MUL, 0)->mode, NM_STORED);
}

// q @ k^T / sqrt(D), softmax, @ v (the attention example) is one
// scaled_dot_product_attention node (ir/attn_fuse.c), the scale 1/8 its own: five kernels
// (three projections, the attention, the output one); the attention writes its heads
// merged, so no copy before view(2, 10, E).
static void attention_written_out_is_one_attention_kernel(void **state) {
  (void)state;
  Graph *g = sound_plan("const E = 512\nconst H = 8\nconst D = E // H\n"
                        "fn attention(x: f32[2, 10, E], wq: f32[E, E], wk: f32[E, E], wv: f32[E, E], "
                        "wo: f32[E, E]) -> f32[2, 10, E] {\n"
                        "  q = (x @ wq).view(2, 10, H, D).transpose(1, 2)\n"
                        "  k = (x @ wk).view(2, 10, H, D).transpose(1, 2)\n"
                        "  v = (x @ wv).view(2, 10, H, D).transpose(1, 2)\n"
                        "  s = q @ k.transpose(-2, -1) / sqrt(D)\n  a = softmax(s, dim=-1)\n"
                        "  o = (a @ v).transpose(1, 2).contiguous().view(2, 10, E)\n  return o @ wo\n}\n");
  assert_int_equal(g->nkernels, 5);
  const Node *att = op_node(g, OP_SDPA, 0);
  assert_int_equal(att->nsrc, 3);
  assert_true(att->attr.scale == 0.125 && !att->attr.causal);
  for (int i = 0; i < g->nodes.len; i++)
    assert_true(g->nodes.data[i]->op != OP_SOFTMAX && g->nodes.data[i]->op != OP_DIV);
}

// The parts stay when one of them is read elsewhere: here the probabilities are returned.
static void attention_whose_probabilities_are_returned_stays_written_out(void **state) {
  (void)state;
  Graph *g = sound_plan("fn f(q: f32[2, 5, 8], k: f32[2, 6, 8], v: f32[2, 6, 4]) -> (f32[2, 5, 4], f32[2, 5, 6]) {\n"
                        "  a = softmax(q @ k.transpose(-2, -1) * 0.5, dim=-1)\n  return a @ v, a\n}\n");
  assert_non_null(op_node(g, OP_SOFTMAX, 0));
  for (int i = 0; i < g->nodes.len; i++)
    assert_true(g->nodes.data[i]->op != OP_SDPA);
}

static void view_ops_make_no_kernel(void **state) {
  (void)state;
  Graph *g = sound_plan("fn f(x: f32[3, 4]) -> (f32[4, 3], f32[12], f32[3, 4], f32[2, 3, 4]) {\n"
                        "  return x.t(), x.view(-1), x.contiguous(), x.expand(2, 3, 4)\n}\n");
  assert_int_equal(g->nodes.len, 0);
  assert_int_equal(g->nkernels, 0);
}

// ---- when a producer must be stored -----------------------------------------------

static void an_output_is_stored_even_when_another_kernel_reads_it(void **state) {
  (void)state;
  Graph *g = sound_plan("fn f(x: f32[8]) -> (f32[8], f32[8]) {\n  a = x + 1\n  return a, a * 2\n}\n");
  assert_int_equal(g->nkernels, 2);
  assert_int_equal(op_node(g, OP_ADD, 0)->mode, NM_STORED);
}

static void a_cheap_value_read_by_two_kernels_is_recomputed_in_each(void **state) {
  (void)state;
  Graph *g = sound_plan("fn f(x: f32[8]) -> (f32[8], f32[8]) {\n  a = x * 2 + 1\n  return a + 1, a * 3\n}\n");
  assert_int_equal(g->nkernels, 2);
  assert_int_equal(op_node(g, OP_ADD, 0)->mode, NM_INLINE);
  assert_int_equal(op_node(g, OP_ADD, 0)->kernel, 0);  // its first reader's kernel
}

static void an_expensive_value_read_twice_is_stored_once(void **state) {
  (void)state;
  Graph *g = sound_plan("fn f(x: f32[8]) -> (f32[8], f32[8]) {\n  a = exp(sin(x))\n  return a + 1, a * 3\n}\n");
  assert_int_equal(g->nkernels, 3);
  assert_int_equal(op_node(g, OP_EXP, 0)->mode, NM_STORED);
  assert_int_equal(op_node(g, OP_SIN, 0)->mode, NM_INLINE);
}

static void an_expensive_value_read_through_a_broadcast_is_stored(void **state) {
  (void)state;
  Graph *g = sound_plan("fn f(x: f32[64, 8], y: f32[8]) -> f32[64, 8] {\n  return x + exp(tanh(y))\n}\n");
  assert_int_equal(g->nkernels, 2);
  assert_int_equal(op_node(g, OP_EXP, 0)->mode, NM_STORED);
}

static void a_diagonal_reader_forces_storing(void **state) {
  (void)state;
  Graph *g = sound_plan("fn f(x: f32[4, 4]) -> f32[4] {\n  return exp(x).diagonal() + 1\n}\n");
  assert_int_equal(g->nkernels, 2);
  assert_int_equal(op_node(g, OP_EXP, 0)->mode, NM_STORED);
}

static void a_merged_view_reader_forces_storing(void **state) {
  (void)state;
  Graph *g = sound_plan("fn f(x: f32[4, 3]) -> f32[12] {\n  return exp(x).view(-1) + 1\n}\n");
  assert_int_equal(g->nkernels, 2);
  assert_int_equal(op_node(g, OP_EXP, 0)->mode, NM_STORED);
}

static void a_store_between_producer_and_reader_forces_storing(void **state) {
  (void)state;
  Graph *g = sound_plan("fn f(mut x: f32[4]) -> f32[4] {\n  y = x * 2\n  x[0] = 5\n  return y + 1\n}\n");
  assert_int_equal(op_node(g, OP_MUL, 0)->mode, NM_STORED);
  const Node *mul = op_node(g, OP_MUL, 0), *st = op_node(g, OP_STORE, 0), *add = op_node(g, OP_ADD, 0);
  assert_true(mul->kernel < st->kernel && st->kernel < add->kernel);
  assert_int_equal(g->nkernels, 3);
}

static void without_the_store_the_producer_is_inlined(void **state) {
  (void)state;
  Graph *g = sound_plan("fn f(mut x: f32[4]) -> f32[4] {\n  y = x * 2\n  return y + 1\n}\n");
  assert_int_equal(op_node(g, OP_MUL, 0)->mode, NM_INLINE);
  assert_int_equal(g->nkernels, 1);
}

static void a_store_keeps_a_row_kernel_from_moving_past_it(void **state) {
  (void)state;
  Graph *g = sound_plan("fn f(mut x: f32[4, 8]) -> f32[4, 8] {\n"
                        "  m = x.sum(-1, keepdim=true)\n  x[0, 0] = 5\n  return x - m\n}\n");
  assert_int_equal(g->nkernels, 3);
  const Node *sum = op_node(g, OP_SUM, 0), *st = op_node(g, OP_STORE, 0), *sub = op_node(g, OP_SUB, 0);
  assert_int_equal(sum->mode, NM_STORED);
  assert_true(sum->kernel < st->kernel && st->kernel < sub->kernel);
}

static void a_store_value_reading_its_target_elsewhere_is_computed_first(void **state) {
  (void)state;
  Graph *g = sound_plan("fn f(mut x: f32[8]) -> f32[8] {\n  x[1:] = x[:-1] + 1\n  return x\n}\n");
  assert_int_equal(op_node(g, OP_ADD, 0)->mode, NM_STORED);
  assert_int_equal(g->nkernels, 2);
}

static void a_store_value_reading_the_same_elements_is_inlined(void **state) {
  (void)state;
  Graph *g = sound_plan("fn f(mut x: f32[8]) -> f32[8] {\n  x[1:] = x[1:] * 2\n  x += exp(x)\n  return x\n}\n");
  assert_int_equal(op_node(g, OP_MUL, 0)->mode, NM_INLINE);
  assert_int_equal(op_node(g, OP_EXP, 0)->mode, NM_INLINE);
  assert_int_equal(g->nkernels, 2);
  assert_int_equal(fuse_kernel_kind(g, 0), KK_ONE);
}

static void a_store_target_is_stored(void **state) {
  (void)state;
  Graph *g = sound_plan("fn f(x: f32[4]) -> f32[4] {\n  y = x * 2\n  y[0] = 1\n  return y + 1\n}\n");
  assert_int_equal(op_node(g, OP_MUL, 0)->mode, NM_STORED);
  assert_int_equal(g->nkernels, 3);
}

static void a_gather_read_whole_is_inlined_but_read_in_part_is_stored(void **state) {
  (void)state;
  Graph *g = sound_plan("fn f(x: f32[5, 3], i: i64[4]) -> f32[4, 3] {\n  return x[i] * 2\n}\n");
  assert_int_equal(g->nkernels, 1);
  assert_int_equal(op_node(g, OP_INDEX, 0)->mode, NM_INLINE);
  g = sound_plan("fn f(x: f32[5, 3], i: i64[4]) -> f32[3] {\n  return x[i][0] * 2\n}\n");
  assert_int_equal(op_node(g, OP_INDEX, 0)->mode, NM_STORED);  // idx[1..3] must still be checked
}

static void cat_and_stack_are_kernels_of_their_own(void **state) {
  (void)state;
  Graph *g = sound_plan("fn f(x: f32[2, 3], y: f32[2, 3]) -> f32[4, 3] {\n  return cat([x + 1, y], dim=0)\n}\n");
  assert_int_equal(g->nkernels, 1);
  assert_int_equal(fuse_kernel_kind(g, 0), KK_ONE);
}

static void kernels_are_numbered_in_execution_order(void **state) {
  (void)state;
  Graph *g = sound_plan("fn f(x: f32[4, 8], w: f32[8, 8]) -> f32[4, 8] {\n"
                        "  a = x.sum(-1, keepdim=true)\n  b = x @ w\n  c = softmax(b, dim=-1)\n"
                        "  return c - a\n}\n");
  for (int i = 0; i < g->nodes.len; i++)
    assert_true(g->nodes.data[i]->kernel < g->nkernels);
  assert_true(op_node(g, OP_MATMUL, 0)->kernel < op_node(g, OP_SOFTMAX, 0)->kernel);
}

// ---- view_decompose -------------------------------------------------------------

static View contig(int n, const int64_t *shape) { return view_contiguous(n, shape); }

static void a_contiguous_reader_maps_each_dim_onto_itself(void **state) {
  (void)state;
  ViewMap m;
  assert_true(view_decompose(contig(2, I64(3, 4)), 2, I64(3, 4), &m));
  assert_int_equal(m.pdim[0], 0);
  assert_int_equal(m.pdim[1], 1);
  assert_int_equal(m.mult[0], 1);
  assert_int_equal(m.mult[1], 1);
  assert_true(fuse_view_covers(contig(2, I64(3, 4)), 2, I64(3, 4)));
}

static void a_transpose_swaps_the_producer_dims(void **state) {
  (void)state;
  ViewMap m;
  View t = view_transpose(contig(2, I64(3, 4)), 0, 1);
  assert_true(view_decompose(t, 2, I64(3, 4), &m));
  assert_int_equal(m.pdim[0], 1);
  assert_int_equal(m.pdim[1], 0);
  assert_true(fuse_view_covers(t, 2, I64(3, 4)));
}

static void a_strided_slice_has_a_start_and_a_multiplier(void **state) {
  (void)state;
  ViewMap m;
  View s = view_slice(view_slice(contig(2, I64(6, 8)), 1, 1, 8, 3), 0, 2, 5, 1);  // x[2:5, 1::3]
  assert_true(view_decompose(s, 2, I64(6, 8), &m));
  assert_int_equal(m.start[0], 2);
  assert_int_equal(m.start[1], 1);
  assert_int_equal(m.pdim[1], 1);
  assert_int_equal(m.mult[1], 3);
  assert_false(fuse_view_covers(s, 2, I64(6, 8)));
}

static void a_flip_walks_backwards_from_the_last_index(void **state) {
  (void)state;
  ViewMap m;
  View f = view_flip(contig(2, I64(3, 4)), 1, (const int[]){1});
  assert_true(view_decompose(f, 2, I64(3, 4), &m));
  assert_int_equal(m.start[1], 3);
  assert_int_equal(m.mult[1], -1);
  assert_true(fuse_view_covers(f, 2, I64(3, 4)));
}

static void a_broadcast_dim_maps_to_no_producer_dim(void **state) {
  (void)state;
  ViewMap m;
  View e;
  int bad;
  assert_true(view_expand(contig(2, I64(3, 1)), 3, I64(5, 3, 4), &e, &bad));
  assert_true(view_decompose(e, 2, I64(3, 1), &m));
  assert_int_equal(m.pdim[0], -1);
  assert_int_equal(m.pdim[1], 0);
  assert_int_equal(m.pdim[2], -1);
}

static void a_diagonal_does_not_decompose(void **state) {
  (void)state;
  ViewMap m;
  assert_false(view_decompose(view_diagonal(contig(2, I64(4, 4)), 0, 0, 1), 2, I64(4, 4), &m));
}

static void a_merged_view_does_not_decompose(void **state) {
  (void)state;
  ViewMap m;
  View v;
  assert_true(view_reshape(contig(2, I64(4, 3)), 1, I64(12), &v));
  assert_false(view_decompose(v, 2, I64(4, 3), &m));
  // but merging over a size-1 dim is just the other dim
  assert_true(view_reshape(contig(2, I64(4, 1)), 1, I64(4), &v));
  assert_true(view_decompose(v, 2, I64(4, 1), &m));
}

static void a_split_view_does_not_decompose_onto_one_dim(void **state) {
  (void)state;
  ViewMap m;
  View v;
  assert_true(view_reshape(contig(1, I64(12)), 2, I64(3, 4), &v));
  assert_true(view_decompose(v, 1, I64(12), &m));  // two reader dims walk one producer dim
  assert_int_equal(m.pdim[0], 0);
  assert_int_equal(m.mult[0], 4);
  assert_int_equal(m.pdim[1], 0);
  assert_int_equal(m.mult[1], 1);
}

static void an_as_strided_window_past_a_dim_does_not_decompose(void **state) {
  (void)state;
  ViewMap m;
  View v;
  // rows of 3 starting at element 2 of a [4, 4]: crosses into the next row
  assert_true(view_as_strided(2, I64(2, 3), I64(4, 1), 2, 16, &v));
  assert_false(view_decompose(v, 2, I64(4, 4), &m));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(an_elementwise_chain_of_any_length_is_one_kernel, setup, teardown),
      cmocka_unit_test_setup_teardown(a_large_expression_read_twice_is_stored_once, setup, teardown),
      cmocka_unit_test_setup_teardown(a_view_between_elementwise_ops_does_not_split_a_kernel, setup, teardown),
      cmocka_unit_test_setup_teardown(a_non_contiguous_copy_is_read_through_its_strides, setup, teardown),
      cmocka_unit_test_setup_teardown(softmax_is_one_kernel, setup, teardown),
      cmocka_unit_test_setup_teardown(log_softmax_absorbs_its_producer_into_one_kernel, setup, teardown),
      cmocka_unit_test_setup_teardown(layer_norm_is_one_row_kernel_with_local_mean_and_var, setup, teardown),
      cmocka_unit_test_setup_teardown(layer_norm_without_keepdim_is_one_kernel_too, setup, teardown),
      cmocka_unit_test_setup_teardown(a_two_pass_layer_norm_is_two_kernels, setup, teardown),
      cmocka_unit_test_setup_teardown(a_returned_reduction_is_stored_inside_its_row_kernel, setup, teardown),
      cmocka_unit_test_setup_teardown(a_reader_off_the_current_row_does_not_join_the_row_kernel, setup, teardown),
      cmocka_unit_test_setup_teardown(row_nodes_over_other_dims_do_not_share_a_kernel, setup, teardown),
      cmocka_unit_test_setup_teardown(linear_relu_is_one_matmul_kernel, setup, teardown),
      cmocka_unit_test_setup_teardown(mlp_is_two_kernels, setup, teardown),
      cmocka_unit_test_setup_teardown(a_matmul_read_elsewhere_is_stored_and_keeps_its_epilogue, setup, teardown),
      cmocka_unit_test_setup_teardown(a_transposed_matmul_operand_is_a_stride_not_a_copy, setup, teardown),
      cmocka_unit_test_setup_teardown(an_elementwise_matmul_operand_is_stored, setup, teardown),
      cmocka_unit_test_setup_teardown(attention_written_out_is_one_attention_kernel, setup, teardown),
      cmocka_unit_test_setup_teardown(attention_whose_probabilities_are_returned_stays_written_out, setup, teardown),
      cmocka_unit_test_setup_teardown(view_ops_make_no_kernel, setup, teardown),
      cmocka_unit_test_setup_teardown(an_output_is_stored_even_when_another_kernel_reads_it, setup, teardown),
      cmocka_unit_test_setup_teardown(a_cheap_value_read_by_two_kernels_is_recomputed_in_each, setup, teardown),
      cmocka_unit_test_setup_teardown(an_expensive_value_read_twice_is_stored_once, setup, teardown),
      cmocka_unit_test_setup_teardown(an_expensive_value_read_through_a_broadcast_is_stored, setup, teardown),
      cmocka_unit_test_setup_teardown(a_diagonal_reader_forces_storing, setup, teardown),
      cmocka_unit_test_setup_teardown(a_merged_view_reader_forces_storing, setup, teardown),
      cmocka_unit_test_setup_teardown(a_store_between_producer_and_reader_forces_storing, setup, teardown),
      cmocka_unit_test_setup_teardown(without_the_store_the_producer_is_inlined, setup, teardown),
      cmocka_unit_test_setup_teardown(a_store_keeps_a_row_kernel_from_moving_past_it, setup, teardown),
      cmocka_unit_test_setup_teardown(a_store_value_reading_its_target_elsewhere_is_computed_first, setup, teardown),
      cmocka_unit_test_setup_teardown(a_store_value_reading_the_same_elements_is_inlined, setup, teardown),
      cmocka_unit_test_setup_teardown(a_store_target_is_stored, setup, teardown),
      cmocka_unit_test_setup_teardown(a_gather_read_whole_is_inlined_but_read_in_part_is_stored, setup, teardown),
      cmocka_unit_test_setup_teardown(cat_and_stack_are_kernels_of_their_own, setup, teardown),
      cmocka_unit_test_setup_teardown(kernels_are_numbered_in_execution_order, setup, teardown),
      cmocka_unit_test(a_contiguous_reader_maps_each_dim_onto_itself),
      cmocka_unit_test(a_transpose_swaps_the_producer_dims),
      cmocka_unit_test(a_strided_slice_has_a_start_and_a_multiplier),
      cmocka_unit_test(a_flip_walks_backwards_from_the_last_index),
      cmocka_unit_test(a_broadcast_dim_maps_to_no_producer_dim),
      cmocka_unit_test(a_diagonal_does_not_decompose),
      cmocka_unit_test(a_merged_view_does_not_decompose),
      cmocka_unit_test(a_split_view_does_not_decompose_onto_one_dim),
      cmocka_unit_test(an_as_strided_window_past_a_dim_does_not_decompose),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
