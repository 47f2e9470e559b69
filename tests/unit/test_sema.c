// tests/unit/test_sema.c: frontend/sema*.c. Programs are parsed from strings and
// checked; each test states the dtype, shape, strides, offset and storage PyTorch 1.13
// gives (numbers taken from t.stride() / t.storage_offset()), the builtin and operands
// lowering relies on, or the exact diagnostic with its line:col.
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"

typedef struct {
  Ctx cx;
  Program prog;
  bool ok;
  char *diags;  // malloc'd
} Checked;

static Checked *check(const char *src) {
  Checked *c = calloc(1, sizeof *c);
  ctx_init(&c->cx);
  size_t dlen = 0;
  FILE *diag = open_memstream(&c->diags, &dlen);
  c->cx.diag_out = diag;
  SrcFile *f = srcfile_from_string(&c->cx, "t.tdsl", src, strlen(src));
  c->prog.ast = parse_program(&c->cx, f);
  c->ok = c->prog.ast && c->cx.nerrors == 0 && sema_check(&c->cx, &c->prog);
  fclose(diag);
  c->cx.diag_out = NULL;
  return c;
}

static void done(Checked *c) {
  ctx_free(&c->cx);
  free(c->diags);
  free(c);
}

// The checked expression of statement i of the first function: an assignment's or
// return's value.
static Ast *stmt_expr(Checked *c, int i) {
  Ast *fn = c->prog.fns.data[0];
  assert_true(i < fn->body.len);
  Ast *st = fn->body.data[i];
  if (st->kind == AST_RETURN) return st->list.data[0];
  if (st->kind == AST_ASSIGN) return st->rhs;
  return st;
}
static TType *stmt_type(Checked *c, int i) { return stmt_expr(c, i)->ty; }

static void assert_shape(const TType *t, int n, const int64_t *shape) {
  assert_int_equal(t->kind, TY_TENSOR);
  assert_int_equal(t->view.ndim, n);
  for (int i = 0; i < n; i++) assert_int_equal(t->view.shape[i], shape[i]);
}
static void assert_strides(const TType *t, int n, const int64_t *strides, int64_t offset) {
  assert_int_equal(t->view.ndim, n);
  for (int i = 0; i < n; i++) assert_int_equal(t->view.strides[i], strides[i]);
  assert_int_equal(t->view.offset, offset);
}
#define SHAPE(t, ...) assert_shape((t), sizeof((int64_t[]){__VA_ARGS__}) / 8, (int64_t[]){__VA_ARGS__})
#define STRIDES(t, off, ...) \
  assert_strides((t), sizeof((int64_t[]){__VA_ARGS__}) / 8, (int64_t[]){__VA_ARGS__}, (off))

static const char *attention =
    "const E = 512\n"
    "const H = 8\n"
    "const D = E // H\n"
    "fn attention(x: f32[2, 10, E], wq: f32[E, E], wk: f32[E, E],\n"
    "             wv: f32[E, E], wo: f32[E, E]) -> f32[2, 10, E] {\n"
    "    q = (x @ wq).view(2, 10, H, D).transpose(1, 2)\n"
    "    k = (x @ wk).view(2, 10, H, D).transpose(1, 2)\n"
    "    v = (x @ wv).view(2, 10, H, D).transpose(1, 2)\n"
    "    s = q @ k.transpose(-2, -1) / sqrt(D)\n"
    "    a = softmax(s, dim=-1)\n"
    "    o = (a @ v).transpose(1, 2).contiguous().view(2, 10, E)\n"
    "    return o @ wo\n"
    "}\n";

// ---- views ----
static void attention_heads_are_views_with_pytorch_strides(void **state) {
  (void)state;
  Checked *c = check(attention);
  assert_true(c->ok);
  TType *q = stmt_type(c, 0);
  SHAPE(q, 2, 8, 10, 64);
  STRIDES(q, 0, 5120, 64, 512, 1);
  Ast *qe = stmt_expr(c, 0);
  assert_int_equal(qe->bi->kind, BK_VIEW);
  assert_int_equal(qe->operands[0]->ty->storage, q->storage);  // a view of the matmul's storage
  assert_true(q->storage >= 5);                                // not a parameter's
  TType *s = stmt_type(c, 3);
  SHAPE(s, 2, 8, 10, 10);
  assert_int_equal(s->dtype, DT_F32);
  Ast *se = stmt_expr(c, 3);
  assert_int_equal(se->bi->op, OP_DIV);
  assert_int_equal(se->operands[1]->ty->kind, TY_SCALAR);  // sqrt(D) folded
  assert_true(se->operands[1]->ty->fval == 8.0);
  assert_null(se->operands[1]->bi);
  TType *o = stmt_type(c, 5);
  SHAPE(o, 2, 10, 512);
  STRIDES(o, 0, 5120, 512, 1);
  done(c);
}

static void transpose_views_the_parameter_storage(void **state) {
  (void)state;
  Checked *c = check("fn tr(x: f32[2, 3]) -> f32[3, 2] {\n  return x.t()\n}\n");
  assert_true(c->ok);
  TType *t = stmt_type(c, 0);
  STRIDES(t, 0, 1, 3);
  assert_int_equal(t->storage, 0);
  assert_false(t->writable);
  assert_int_equal(t->storage_numel, 6);
  assert_int_equal(stmt_expr(c, 0)->bi->kind, BK_VIEW);
  assert_int_equal(stmt_expr(c, 0)->operands[0]->kind, AST_NAME);
  done(c);
}

static void basic_index_chain_is_one_view(void **state) {
  (void)state;
  Checked *c = check("fn f(x: f32[4, 6, 5]) -> f32[3, 1, 5] {\n  return x[1, ::2, None, ...]\n}\n");
  assert_true(c->ok);
  TType *t = stmt_type(c, 0);
  SHAPE(t, 3, 1, 5);
  STRIDES(t, 30, 10, 5, 1);
  Ast *e = stmt_expr(c, 0);
  assert_int_equal(e->bi->kind, BK_VIEW);
  assert_int_equal(e->operands[0]->kind, AST_NAME);
  done(c);
}

static void slices_clamp_and_negative_indices_count_from_the_end(void **state) {
  (void)state;
  Checked *c = check("fn f(x: f32[3, 4]) -> f32[0, 4] {\n  y = x[-1, 1:-1]\n  return x[5:10]\n}\n");
  assert_true(c->ok);
  SHAPE(stmt_type(c, 0), 2);
  STRIDES(stmt_type(c, 0), 9, 1);
  SHAPE(stmt_type(c, 1), 0, 4);
  done(c);
}

static void unsqueeze_uses_pytorch_stride_for_the_new_dim(void **state) {
  (void)state;
  Checked *c = check("fn f(x: f32[3, 4]) -> f32[3, 2, 1] {\n  a = x.unsqueeze(1)\n  return x[:, ::2].unsqueeze(2)\n}\n");
  assert_true(c->ok);
  STRIDES(stmt_type(c, 0), 0, 4, 4, 1);
  STRIDES(stmt_type(c, 1), 0, 4, 2, 1);
  done(c);
}

static void diagonal_T_and_flip_follow_the_view_algebra(void **state) {
  (void)state;
  Checked *c = check("fn f(x: f32[3, 4, 5]) -> f32[3, 4, 5] {\n"
                     "  a = x.diagonal(1, 0, 2)\n"
                     "  b = x.T\n"
                     "  c = x.flip(0)\n"
                     "  return x\n}\n");
  assert_true(c->ok);
  SHAPE(stmt_type(c, 0), 4, 3);
  STRIDES(stmt_type(c, 0), 1, 5, 21);
  STRIDES(stmt_type(c, 1), 0, 1, 5, 20);
  STRIDES(stmt_type(c, 2), 40, -20, 5, 1);
  done(c);
}

static void contiguous_of_a_contiguous_tensor_is_the_same_tensor(void **state) {
  (void)state;
  Checked *c = check("fn f(x: f32[2, 3]) -> f32[3, 2] {\n  a = x.contiguous()\n  return x.t().contiguous()\n}\n");
  assert_true(c->ok);
  Ast *a = stmt_expr(c, 0), *b = stmt_expr(c, 1);
  assert_false(a->needs_copy);
  assert_int_equal(a->ty->storage, 0);
  assert_int_equal(a->bi->kind, BK_VIEW);
  assert_true(b->needs_copy);
  assert_int_equal(b->bi->kind, BK_VIEW);
  assert_int_not_equal(b->ty->storage, 0);
  STRIDES(b->ty, 0, 2, 1);
  done(c);
}

static void reshape_is_a_view_when_possible_else_a_copy(void **state) {
  (void)state;
  Checked *c = check("fn f(x: f32[3, 4]) -> f32[12] {\n  a = x.reshape(2, -1)\n  return x.t().flatten()\n}\n");
  assert_true(c->ok);
  Ast *a = stmt_expr(c, 0), *b = stmt_expr(c, 1);
  assert_false(a->needs_copy);
  SHAPE(a->ty, 2, 6);
  assert_int_equal(a->ty->storage, 0);
  assert_true(b->needs_copy);
  assert_int_equal(b->bi->op, OP_COPY);
  SHAPE(b->ty, 12);
  assert_int_not_equal(b->ty->storage, 0);
  done(c);
}

static void casts_to_the_same_dtype_are_views(void **state) {
  (void)state;
  Checked *c = check("fn f(x: f32[2]) -> f64[2] {\n  a = x.float()\n  return x.to(f64)\n}\n");
  assert_true(c->ok);
  assert_int_equal(stmt_expr(c, 0)->bi->kind, BK_VIEW);
  assert_int_equal(stmt_type(c, 0)->storage, 0);
  assert_int_equal(stmt_expr(c, 1)->bi->kind, BK_NODE);
  assert_int_equal(stmt_expr(c, 1)->bi->op, OP_TO);
  assert_int_equal(stmt_type(c, 1)->dtype, DT_F64);
  done(c);
}

static void expand_gives_stride_zero_and_size_lists_may_be_one_list(void **state) {
  (void)state;
  Checked *c = check("fn f(x: f32[3, 1]) -> f32[2, 3, 4] {\n  a = x.view([1, 3])\n  return x.expand(2, -1, 4)\n}\n");
  assert_true(c->ok);
  SHAPE(stmt_type(c, 0), 1, 3);
  STRIDES(stmt_type(c, 1), 0, 0, 1, 0);
  done(c);
}

// ---- dtypes ----
static const char *dtype_of(const char *params, const char *expr) {
  char src[512];
  snprintf(src, sizeof src, "fn f(%s) -> f32[] {\n  y = %s\n  return zeros([])\n}\n", params, expr);
  Checked *c = check(src);
  const char *r = c->ok ? dtype_name(stmt_type(c, 0)->dtype) : "error";
  if (!c->ok) fprintf(stderr, "%s", c->diags);
  done(c);
  return r;
}

static void promotion_follows_torch_result_type(void **state) {
  (void)state;
  assert_string_equal(dtype_of("a: i32[3], b: i64[]", "a + b"), "i32");
  assert_string_equal(dtype_of("a: i32[3], b: i64[3]", "a + b"), "i64");
  assert_string_equal(dtype_of("a: f32[3], b: f64[3]", "a * b"), "f64");
  assert_string_equal(dtype_of("a: i32[3]", "a + 2.5"), "f32");
  assert_string_equal(dtype_of("a: f16[3]", "a + 2.5"), "f16");
  assert_string_equal(dtype_of("a: f16[3], b: bf16[3]", "a + b"), "f32");
  assert_string_equal(dtype_of("a: bool[3]", "a + 1"), "i64");
  assert_string_equal(dtype_of("a: i32[3], b: i32[3]", "a / b"), "f32");
  assert_string_equal(dtype_of("a: i32[3], b: f32[3]", "a < b"), "bool");
  assert_string_equal(dtype_of("c: bool[], a: i32[3], b: f64[]", "where(c, a, b)"), "f64");
  assert_string_equal(dtype_of("a: i64[3]", "a.clamp(min=0.5)"), "f32");
  assert_string_equal(dtype_of("a: bool[3]", "a.clamp(min=1)"), "i64");
  assert_string_equal(dtype_of("a: i64[3]", "exp(a)"), "f32");
  assert_string_equal(dtype_of("a: bool[3]", "a.square()"), "i64");
  assert_string_equal(dtype_of("a: i32[3]", "a.abs()"), "i32");
  assert_string_equal(dtype_of("a: i32[3]", "a // 2.5"), "f32");
  assert_string_equal(dtype_of("a: bool[3]", "~a"), "bool");
}

static void reductions_follow_pytorch_dtypes_and_shapes(void **state) {
  (void)state;
  assert_string_equal(dtype_of("a: i32[3, 4]", "a.sum(0)"), "i64");
  assert_string_equal(dtype_of("a: bool[3, 4]", "a.prod()"), "i64");
  assert_string_equal(dtype_of("a: f32[3, 4]", "a.argmax(1)"), "i64");
  assert_string_equal(dtype_of("a: f32[3, 4]", "a.any()"), "bool");
  assert_string_equal(dtype_of("a: i64[3, 4]", "a.logsumexp(0)"), "f32");
  assert_string_equal(dtype_of("a: i32[3, 4]", "a.sum(dtype=f64)"), "f64");
  Checked *c = check("fn f(x: f32[2, 3, 4]) -> f32[2, 1, 1] {\n"
                     "  a = x.sum([-1, 0])\n"
                     "  b = x.argmax(keepdim=true)\n"
                     "  c = x.var(1, unbiased=false)\n"
                     "  return x.mean([1, 2], keepdim=true)\n}\n");
  assert_true(c->ok);
  Ast *a = stmt_expr(c, 0);
  SHAPE(a->ty, 3);
  assert_int_equal(a->attr.dims, 5);
  assert_int_equal(a->bi->op, OP_SUM);
  Ast *b = stmt_expr(c, 1);
  SHAPE(b->ty, 1, 1, 1);
  assert_int_equal(b->attr.dim, -1);
  assert_int_equal(b->attr.dims, 7);
  assert_int_equal(stmt_expr(c, 2)->attr.correction, 0);
  assert_int_equal(stmt_expr(c, 2)->attr.dim, 1);
  SHAPE(stmt_type(c, 3), 2, 1, 1);
  assert_true(stmt_expr(c, 3)->attr.keepdim);
  done(c);
}

// ---- matmul, joins, gathers, creation ----
static void matmul_broadcasts_batches_and_drops_vector_dims(void **state) {
  (void)state;
  Checked *c = check("fn f(a: f32[2, 1, 3, 4], b: f32[5, 4, 6], v: f32[4], m: f32[3, 4]) -> f32[3] {\n"
                     "  x = a @ b\n"
                     "  y = v @ b\n"
                     "  z = matmul(v, v)\n"
                     "  return m @ v\n}\n");
  assert_true(c->ok);
  SHAPE(stmt_type(c, 0), 2, 5, 3, 6);
  SHAPE(stmt_type(c, 1), 5, 6);
  assert_int_equal(stmt_type(c, 2)->view.ndim, 0);
  SHAPE(stmt_type(c, 3), 3);
  assert_int_equal(stmt_expr(c, 0)->bi->op, OP_MATMUL);
  assert_int_equal(stmt_expr(c, 0)->noperands, 2);
  done(c);
}

static void cat_and_stack_set_the_dim_and_operands(void **state) {
  (void)state;
  Checked *c = check("fn f(a: f32[2, 4], b: i64[2, 3]) -> f32[2, 2, 4] {\n"
                     "  x = cat([a, b], dim=-1)\n"
                     "  return stack([a, a], 1)\n}\n");
  assert_true(c->ok);
  Ast *x = stmt_expr(c, 0);
  SHAPE(x->ty, 2, 7);
  assert_int_equal(x->ty->dtype, DT_F32);
  assert_int_equal(x->attr.dim, 1);
  assert_int_equal(x->noperands, 2);
  SHAPE(stmt_type(c, 1), 2, 2, 4);
  done(c);
}

static void advanced_indices_place_their_dims_as_pytorch(void **state) {
  (void)state;
  Checked *c = check("fn f(x: f32[5, 6, 7], i: i64[2]) -> f32[2, 7, 1] {\n"
                     "  a = x[:, i, i]\n"
                     "  b = x[i, :, i]\n"
                     "  c = x[i, 0, i]\n"
                     "  return x[0, i, :, None]\n}\n");
  assert_true(c->ok);
  SHAPE(stmt_type(c, 0), 5, 2);
  SHAPE(stmt_type(c, 1), 2, 6);
  SHAPE(stmt_type(c, 2), 2);
  SHAPE(stmt_type(c, 3), 2, 7, 1);
  Ast *a = stmt_expr(c, 0);
  assert_int_equal(a->bi->op, OP_INDEX);
  assert_int_equal(a->noperands, 3);
  assert_int_equal(a->attr.dims, 6);
  Ast *d = stmt_expr(c, 3);  // the basic part is its own view: x[0, :, :, None]
  assert_int_equal(d->operands[0]->bi->kind, BK_VIEW);
  SHAPE(d->operands[0]->ty, 6, 7, 1);
  assert_int_equal(d->attr.dims, 1);
  done(c);
}

static void creation_ops_use_pytorch_default_dtypes(void **state) {
  (void)state;
  assert_string_equal(dtype_of("a: f32[1]", "arange(5)"), "i64");
  assert_string_equal(dtype_of("a: f32[1]", "arange(0, 1, 0.1)"), "f32");
  assert_string_equal(dtype_of("a: f32[1]", "full([2], true)"), "bool");
  assert_string_equal(dtype_of("a: f32[1]", "full([2], 3)"), "i64");
  assert_string_equal(dtype_of("a: f32[1]", "ones(2, dtype=i32)"), "i32");
  Checked *c = check("fn f(x: f32[1]) -> f32[1] {\n  a = arange(0, 1, 0.1)\n  b = eye(3, 2)\n  return x\n}\n");
  assert_true(c->ok);
  SHAPE(stmt_type(c, 0), 10);
  assert_true(stmt_expr(c, 0)->attr.hi == 0.1);
  SHAPE(stmt_type(c, 1), 3, 2);
  done(c);
}

// ---- constants, names, inlining, stores ----
static void constants_fold_with_python_semantics(void **state) {
  (void)state;
  Checked *c = check("const A = -7 // 2\nconst B = -7 % 2\nconst C = 2 ** -1\nconst N = A * B\n"
                     "fn f(x: f32[N + 5]) -> f32[1] {\n  return x\n}\n");
  assert_true(c->ok);
  TType *x = c->prog.fns.data[0]->list.data[0]->ty;
  SHAPE(x, 1);  // (-4) * 1 + 5
  done(c);
}

static void calls_are_inlined_on_the_argument_storage(void **state) {
  (void)state;
  Checked *c = check("fn tr(x: f32[2, 3]) -> f32[3, 2] {\n  return x.t()\n}\n"
                     "fn f(a: f32[3, 2], b: f32[2, 3]) -> f32[3, 2] {\n  return tr(b)\n}\n");
  assert_true(c->ok);
  Ast *fn = c->prog.fns.data[1];
  Ast *call = fn->body.data[0]->list.data[0];
  assert_non_null(call->inlined);
  assert_int_equal(call->ty->storage, 1);
  STRIDES(call->ty, 0, 1, 3);
  done(c);
}

static void stores_carry_the_target_view_and_the_aug_op(void **state) {
  (void)state;
  Checked *c = check("fn f(mut x: f32[3, 4]) -> f32[3, 4] {\n"
                     "  x[:, 1] = 2.0\n"
                     "  x += 1\n"
                     "  y = zeros(2)\n"
                     "  y[0] *= 3\n"
                     "  return x\n}\n");
  assert_true(c->ok);
  Ast *s0 = stmt_expr(c, 0);
  assert_int_equal(s0->bi->op, OP_STORE);
  assert_int_equal(s0->attr.aug, OP_COUNT);
  assert_int_equal(s0->operands[0]->bi->kind, BK_VIEW);
  STRIDES(s0->operands[0]->ty, 1, 4);
  Ast *s1 = stmt_expr(c, 1);
  assert_int_equal(s1->attr.aug, OP_ADD);
  assert_int_equal(s1->operands[0]->kind, AST_NAME);
  assert_int_equal(stmt_expr(c, 3)->attr.aug, OP_MUL);
  done(c);
}

// ---- diagnostics ----
static void errors_use_pytorch_text_at_the_operator(void **state) {
  (void)state;
  Checked *c = check("fn f(a: f32[3, 4], b: f32[3]) -> f32[3, 4] {\n  c = a + b\n  return c\n}\n");
  assert_false(c->ok);
  assert_non_null(strstr(c->diags, "t.tdsl:2:9: error: The size of tensor a (4) must match the size of tensor b "
                                   "(3) at non-singleton dimension 1\n"));
  assert_int_equal(c->cx.nerrors, 1);  // c is poison: the return does not cascade
  done(c);
}

static void several_mistakes_are_all_reported(void **state) {
  (void)state;
  Checked *c = check("fn f(x: f32[3, 4]) -> f32[3, 4] {\n"
                     "  a = x.view(5)\n"
                     "  b = y\n"
                     "  x[0] = 1.0\n"
                     "  return x\n}\n");
  assert_false(c->ok);
  assert_non_null(strstr(c->diags, "t.tdsl:2:9: error: shape '[5]' is invalid for input of size 12"));
  assert_non_null(strstr(c->diags, "t.tdsl:3:7: error: use of undeclared name 'y'"));
  assert_non_null(strstr(c->diags, "t.tdsl:4:3: error: cannot write to 'x': parameters are read-only unless "
                                   "declared 'mut'"));
  assert_int_equal(c->cx.nerrors, 3);
  done(c);
}

static void recursion_is_an_error(void **state) {
  (void)state;
  Checked *c = check("fn f(x: f32[3]) -> f32[3] {\n  return g(x)\n}\nfn g(x: f32[3]) -> f32[3] {\n  return f(x)\n}\n");
  assert_false(c->ok);
  assert_non_null(strstr(c->diags, "error: recursive call to 'f'"));
  assert_non_null(strstr(c->diags, "error: recursive call to 'g'"));
  done(c);
}

static void arguments_bind_in_python_style(void **state) {
  (void)state;
  Checked *c = check("fn f(x: f32[3, 4]) -> f32[4, 3] {\n  return x.transpose(dim1=0, dim0=1)\n}\n");
  assert_true(c->ok);
  STRIDES(stmt_type(c, 0), 0, 1, 4);
  done(c);
  c = check("fn f(x: f32[3, 4]) -> f32[4, 3] {\n  return transpose(x, 0)\n}\n");
  assert_non_null(strstr(c->diags, "t.tdsl:2:10: error: transpose() missing 1 required positional arguments: \"dim1\""));
  done(c);
  c = check("fn f(x: f32[3, 4], c: bool[3, 4]) -> f32[3, 4] {\n  return x.where(c, 0.0)\n}\n");
  assert_true(c->ok);
  assert_int_equal(stmt_expr(c, 0)->operands[0]->kind, AST_NAME);
  assert_string_equal(stmt_expr(c, 0)->operands[0]->name, "c");
  done(c);
}

// Dims written as names: declared (FnSig), bound per call from the arguments, unbound
// ones leave the function unchecked; sema_check_fns binds an entry's from SemaDims.
static void generic_dims_bind_per_call(void **state) {
  (void)state;
  const char *src = "fn h(x: f32[N, 4 * D], w: f32[D]) -> f32[N, 4, D] {\n  return x.view(N, 4, D) * w\n}\n"
                    "fn g(a: f32[3, 8], b: f32[2]) -> f32[3, 4, 2] {\n  return h(a, b)\n}\n";
  Checked *c = check(src);
  assert_true(c->ok);
  const FnSig *sig = &c->prog.sigs[0];
  assert_int_equal(sig->ndims, 2);
  assert_string_equal(sig->dims[0], "N");
  assert_string_equal(sig->dims[1], "D");
  assert_int_equal(sig->bare[0 * TD_MAX_DIMS + 0], 0);  // x's dim 0 is N
  assert_int_equal(sig->bare[0 * TD_MAX_DIMS + 1], -1); // 4 * D is an expression
  assert_int_equal(sig->bare[1 * TD_MAX_DIMS + 0], 1);  // w's dim 0 is D
  assert_false(sig->checked);                           // h: nothing binds it as an entry
  assert_true(c->prog.sigs[1].checked);
  Ast *call = c->prog.fns.data[1]->body.data[0]->list.data[0];
  assert_non_null(call->inlined);
  SHAPE(call->ty, 3, 4, 2);
  done(c);
  c = check("fn rms(x: f32[N, D], w: f32[D]) -> f32[N, D] {\n  return x * w\n}\n"
            "fn g(a: f32[4, 8], b: f32[16]) -> f32[4, 8] {\n  return rms(a, b)\n}\n");
  assert_false(c->ok);
  assert_non_null(strstr(c->diags, "t.tdsl:5:17: error: argument 'w' of 'rms' has size 16 at dim 0 but D is 8 "
                                   "from 'x'"));
  done(c);
}

static void generic_entry_binds_from_sema_dims(void **state) {
  (void)state;
  Checked *c = calloc(1, sizeof *c);
  ctx_init(&c->cx);
  size_t dlen = 0;
  FILE *diag = open_memstream(&c->diags, &dlen);
  c->cx.diag_out = diag;
  const char *src = "fn f(x: f32[N, D], eps: float) -> f32[N, D] {\n  return x * eps\n}\n";
  c->prog.ast = parse_program(&c->cx, srcfile_from_string(&c->cx, "t.tdsl", src, strlen(src)));
  assert_true(sema_declare(&c->cx, &c->prog));
  SemaDims d = {2, {"N", "D"}, {5, 7}};
  assert_true(sema_check_fns(&c->cx, &c->prog, &d));
  fclose(diag);
  c->cx.diag_out = NULL;
  assert_true(c->prog.sigs[0].checked);
  Ast *fn = c->prog.fns.data[0];
  SHAPE(fn->list.data[0]->ty, 5, 7);
  const TType *eps = fn->list.data[1]->ty;  // a run-time Python float: 0-d f64, wrapped
  assert_true(eps->kind == TY_TENSOR && eps->wrapped && eps->dtype == DT_F64 && eps->view.ndim == 0);
  assert_int_equal(stmt_type(c, 0)->dtype, DT_F32);
  done(c);
}

static void scalar_parameters_of_helpers_are_compile_time(void **state) {
  (void)state;
  Checked *c = check("fn s(x: i64[2], a: float, n: int, w: f32[]) -> f32[2] {\n  return x * a * n + w\n}\n"
                     "fn g(x: i64[2]) -> f32[2] {\n  return s(x, 1, True, 2)\n}\n");
  assert_true(c->ok);
  done(c);
  c = check("fn s(x: i64[2], n: int) -> i64[2] {\n  return x * n\n}\n"
            "fn g(x: i64[2]) -> i64[2] {\n  return s(x, 0.5)\n}\n");
  assert_non_null(strstr(c->diags, "t.tdsl:5:15: error: argument 'n' of 's' must be int, not float"));
  done(c);
  c = check("fn s(x: i64[2], n: int) -> i64[2] {\n  return x.view(n, 1)\n}\n");
  assert_non_null(strstr(c->diags, "found element of type run-time int"));
  done(c);
}

// ---- static control flow (sema_ctl.c) ----
static void for_loops_unroll_with_the_variable_a_compile_time_int(void **state) {
  (void)state;
  Checked *c = check("fn f(x: f32[3, 4], w: f32[2, 4, 4]) -> f32[3, 4] {\n"
                     "  for i in range(2) {\n"
                     "    x = x @ w[i]\n"
                     "  }\n"
                     "  return x\n}\n");
  assert_true(c->ok);
  Ast *loop = c->prog.fns.data[0]->body.data[0];
  assert_int_equal(loop->kind, AST_FOR);
  assert_int_equal(loop->unrolled.len, 4);  // per iteration: i's binding, the body's clone
  for (int k = 0; k < 2; k++) {
    Ast *bind = loop->unrolled.data[2 * k], *st = loop->unrolled.data[2 * k + 1];
    assert_int_equal(bind->kind, AST_ASSIGN);
    assert_int_equal(bind->rhs->ty->kind, TY_SCALAR);
    assert_int_equal(bind->rhs->ty->ival, k);
    assert_ptr_not_equal(st, loop->body.data[0]);  // a clone, checked on its own
    Ast *wi = st->rhs->rhs;                         // w[i]: a view of w's storage at offset 16 k
    assert_int_equal(wi->bi->kind, BK_VIEW);
    assert_int_equal(wi->ty->storage, 1);
    STRIDES(wi->ty, 16 * k, 4, 1);
  }
  done(c);
}

static void loop_names_stay_bound_and_the_variable_keeps_its_last_value(void **state) {
  (void)state;
  Checked *c = check("fn f(x: f32[3]) -> f32[3] {\n"
                     "  for i in range(7, 0, -3) {\n"
                     "    y = x.sum(0, keepdim=True)\n"
                     "  }\n"
                     "  return x + y * i\n}\n");
  assert_true(c->ok);
  Ast *loop = c->prog.fns.data[0]->body.data[0];
  assert_int_equal(loop->unrolled.len, 6);  // 7, 4, 1
  Ast *ret = stmt_expr(c, 1);
  assert_int_equal(ret->rhs->rhs->ty->ival, 1);
  done(c);
  c = check("fn f(x: f32[3]) -> f32[3] {\n  for i in range(0) {\n    x = x.view(5)\n  }\n  return x\n}\n");
  assert_true(c->ok);  // an empty range checks no iteration
  done(c);
}

static void if_checks_only_the_branch_taken(void **state) {
  (void)state;
  Checked *c = check("fn f(x: f32[3]) -> f32[3] {\n"
                     "  if x.ndim == 2 {\n"
                     "    y = x.view(5)\n"
                     "  } elif x.numel() == 3 {\n"
                     "    y = x * 2\n"
                     "  } else {\n"
                     "    y = x.bogus()\n"
                     "  }\n"
                     "  return y\n}\n");
  assert_true(c->ok);
  Ast *st = c->prog.fns.data[0]->body.data[0];
  assert_int_equal(st->unrolled.len, 1);  // the else list: the elif
  Ast *elif = st->unrolled.data[0];
  assert_int_equal(elif->kind, AST_IF);
  assert_ptr_equal(elif->unrolled.data[0], elif->body.data[0]);
  assert_null(st->body.data[0]->rhs->ty);  // never checked
  done(c);
}

static void a_return_in_a_loop_ends_the_function(void **state) {
  (void)state;
  Checked *c = check("fn f(x: f32[3]) -> f32[3] {\n"
                     "  for i in range(5) {\n"
                     "    if i == 2 {\n"
                     "      return x * i\n"
                     "    }\n"
                     "  }\n"
                     "  return x.view(7)\n}\n");
  assert_true(c->ok);  // the last return is never reached
  Ast *loop = c->prog.fns.data[0]->body.data[0];
  assert_int_equal(loop->unrolled.len, 6);  // iterations 0, 1, 2
  done(c);
}

static void loops_count_against_the_inlining_budget(void **state) {
  (void)state;
  // the budget multiplies a plain trip count: g's size is its loop body's 50 times
  Checked *c = check("const N = 50\nfn g(x: f32[3]) -> f32[3] {\n  for i in range(N) {\n    x = x + 1\n  }\n"
                     "  return x\n}\nfn f(x: f32[3]) -> f32[3] {\n  return g(x)\n}\n");
  assert_true(c->ok);
  assert_true(c->prog.fns.data[0]->inline_size >= 50 * 5);
  assert_true(c->prog.fns.data[0]->inline_size < 60 * 5);
  done(c);
  c = check("fn f(x: f32[3]) -> f32[3] {\n  for i in range(2**40) {\n    x = x + i\n  }\n  return x\n}\n");
  assert_false(c->ok);
  assert_non_null(strstr(c->diags, "t.tdsl:2:12: error: unrolling this loop would create 1099511627776 iterations of "));
  assert_non_null(strstr(c->diags, "      for i in range(2**40) {\n               ^~~~~~~~~~~~\n"));
  assert_int_equal(c->cx.nerrors, 1);  // x is poison after the loop: the return does not cascade
  done(c);
}

static void misspelt_names_get_a_suggestion_after_pytorch_text(void **state) {
  (void)state;
  Checked *c = check("fn f(x: f32[3], hidden: f32[3]) -> f32[3] {\n  return x.sofmax(-1) + hiden + sigmoud(x)\n}\n");
  assert_false(c->ok);
  assert_non_null(strstr(c->diags, "t.tdsl:2:12: error: 'Tensor' object has no attribute 'sofmax'. Did you mean: "
                                   "'softmax'?\n      return x.sofmax(-1) + hiden + sigmoud(x)\n               ^~~~~~\n"));
  assert_non_null(strstr(c->diags, "t.tdsl:2:25: error: use of undeclared name 'hiden'. Did you mean: 'hidden'?"));
  assert_non_null(strstr(c->diags, "t.tdsl:2:33: error: use of undeclared name 'sigmoud'. Did you mean: 'sigmoid'?"));
  done(c);
  c = check("fn f(x: f32[3], y: f32[3]) -> f32[3] {\n  return x + z\n}\n");  // too short to guess
  assert_non_null(strstr(c->diags, "error: use of undeclared name 'z'\n"));
  done(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(attention_heads_are_views_with_pytorch_strides),
      cmocka_unit_test(for_loops_unroll_with_the_variable_a_compile_time_int),
      cmocka_unit_test(loop_names_stay_bound_and_the_variable_keeps_its_last_value),
      cmocka_unit_test(if_checks_only_the_branch_taken),
      cmocka_unit_test(a_return_in_a_loop_ends_the_function),
      cmocka_unit_test(loops_count_against_the_inlining_budget),
      cmocka_unit_test(misspelt_names_get_a_suggestion_after_pytorch_text),
      cmocka_unit_test(transpose_views_the_parameter_storage),
      cmocka_unit_test(basic_index_chain_is_one_view),
      cmocka_unit_test(slices_clamp_and_negative_indices_count_from_the_end),
      cmocka_unit_test(unsqueeze_uses_pytorch_stride_for_the_new_dim),
      cmocka_unit_test(diagonal_T_and_flip_follow_the_view_algebra),
      cmocka_unit_test(contiguous_of_a_contiguous_tensor_is_the_same_tensor),
      cmocka_unit_test(reshape_is_a_view_when_possible_else_a_copy),
      cmocka_unit_test(casts_to_the_same_dtype_are_views),
      cmocka_unit_test(expand_gives_stride_zero_and_size_lists_may_be_one_list),
      cmocka_unit_test(promotion_follows_torch_result_type),
      cmocka_unit_test(reductions_follow_pytorch_dtypes_and_shapes),
      cmocka_unit_test(matmul_broadcasts_batches_and_drops_vector_dims),
      cmocka_unit_test(cat_and_stack_set_the_dim_and_operands),
      cmocka_unit_test(advanced_indices_place_their_dims_as_pytorch),
      cmocka_unit_test(creation_ops_use_pytorch_default_dtypes),
      cmocka_unit_test(constants_fold_with_python_semantics),
      cmocka_unit_test(calls_are_inlined_on_the_argument_storage),
      cmocka_unit_test(stores_carry_the_target_view_and_the_aug_op),
      cmocka_unit_test(errors_use_pytorch_text_at_the_operator),
      cmocka_unit_test(several_mistakes_are_all_reported),
      cmocka_unit_test(recursion_is_an_error),
      cmocka_unit_test(arguments_bind_in_python_style),
      cmocka_unit_test(generic_dims_bind_per_call),
      cmocka_unit_test(generic_entry_binds_from_sema_dims),
      cmocka_unit_test(scalar_parameters_of_helpers_are_compile_time),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
