// tests/unit/test_place.c: ir/place.c, results computed in place inside a stack or cat.
// Programs are parsed from strings, checked, lowered and fused (fuse_graph runs
// fuse_place); each test names the join part it looks at and states where that part's
// node now writes: the join's buffer at the part's slice, or its own buffer.
//
// The parts placed here are a chain of PART_OPS additions: a tree longer than fusion
// inlines (ir/fuse.c's INLINE_MAX_TREE), so the chain's last node is stored by a kernel
// of its own, before the join's; each test first asserts that it is, so a change to
// the fusion plan fails here rather than leaving the placement untested.
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"

#include "ctx_fixture.h"

enum { PART_OPS = 65 };

// The plan of src, its `CHAIN(v)` replaced by PART_OPS additions to v.
static Graph *plan(const char *src) {
  const char *at = strstr(src, "CHAIN(");
  assert_non_null(at);
  const char *arg = at + strlen("CHAIN("), *close = strchr(arg, ')');
  char *text = arena_alloc(&cx.arena, strlen(src) + PART_OPS * 16 + 1), *w = text;
  w += sprintf(w, "%.*s", (int)(at - src), src);
  for (int i = 0; i < PART_OPS; i++)
    *w++ = '(';
  w += sprintf(w, "%.*s", (int)(close - arg), arg);
  for (int i = 0; i < PART_OPS; i++)
    w += sprintf(w, " + %d.5)", i % 7);
  sprintf(w, "%s", close + 1);
  SrcFile *f = srcfile_from_string(&cx, "t.tdsl", text, strlen(text));
  Program prog = {0};
  prog.ast = parse_program(&cx, f);
  assert_non_null(prog.ast);
  assert_true(sema_check(&cx, &prog));
  assert_int_equal(cx.nerrors, 0);
  Graph *g = lower_fn(&cx, &prog, prog.fns.data[0], false);
  fuse_graph(g);
  return g;
}

// The graph's only node of op (a join).
static Node *only(const Graph *g, Op op) {
  Node *found = NULL;
  for (int i = 0; i < g->nodes.len; i++)
    if (g->nodes.data[i]->op == op) {
      assert_null(found);
      found = g->nodes.data[i];
    }
  assert_non_null(found);
  return found;
}

// The node that computes the chain (a join's part): its last addition, stored by a
// kernel before join j's.
static const Node *chain_node(const Graph *g, const Node *j) {
  const Node *n = NULL;
  for (int i = 0; i < g->nodes.len; i++)
    if (g->nodes.data[i]->op == OP_ADD)
      n = g->nodes.data[i];
  assert_non_null(n);
  assert_int_equal(n->mode, NM_STORED);
  assert_true(n->kernel >= 0 && n->kernel < j->kernel);
  return n;
}

static void a_part_that_is_its_nodes_result_moves_into_the_join_once(void **state) {
  (void)state;  // the stack reads the chain's result itself: its offset is added once
  Graph *g = plan("fn f(x: f32[6], y: f32[6], e: f32[6]) -> f32[3, 6] {\n"
                  "    return torch.stack((x * 2.0, CHAIN(y), e * 3.0))\n"
                  "}\n");
  const Node *j = only(g, OP_STACK), *n = chain_node(g, j);
  const Value *v = j->srcs[1];
  assert_ptr_equal(v, n->out);
  assert_ptr_equal(n->out->buf, j->out->buf);
  assert_int_equal(n->out->view.offset, 6);  // row 1 of the [3, 6] result
}

static void a_part_read_through_a_view_moves_with_its_node(void **state) {
  (void)state;  // cat reads a [2, 3] view of the chain's [6]: both move to the slice at 4
  Graph *g = plan("fn f(x: f32[4, 3], y: f32[6]) -> f32[6, 3] {\n"
                  "    return torch.cat((x * 2.0, CHAIN(y).view(2, 3)))\n"
                  "}\n");
  const Node *j = only(g, OP_CAT), *n = chain_node(g, j);
  const Value *v = j->srcs[1];
  assert_ptr_not_equal(v, n->out);
  assert_ptr_equal(v->buf, j->out->buf);
  assert_ptr_equal(n->out->buf, j->out->buf);
  assert_int_equal(n->out->view.offset, 12);  // rows 4 and 5 of the [6, 3] result
  assert_int_equal(v->view.offset, 12);
}

static void a_part_read_by_another_node_keeps_its_buffer(void **state) {
  (void)state;  // the chain is also returned: it is no slice of the stack
  Graph *g = plan("fn f(x: f32[6], y: f32[6]) -> (f32[2, 6], f32[6]) {\n"
                  "    z = CHAIN(y)\n"
                  "    return torch.stack((x * 2.0, z)), z\n"
                  "}\n");
  const Node *j = only(g, OP_STACK), *n = chain_node(g, j);
  assert_ptr_not_equal(n->out->buf, j->out->buf);
  assert_int_equal(n->out->view.offset, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_part_that_is_its_nodes_result_moves_into_the_join_once),
      cmocka_unit_test(a_part_read_through_a_view_moves_with_its_node),
      cmocka_unit_test(a_part_read_by_another_node_keeps_its_buffer),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
