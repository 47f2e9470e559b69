// ir/kernel.c: the fused graph -> loop IR (kernel_build), the driver of the kernel
// builder (ir/kernel.h lists its files). It obeys the fusion plan of ir/fuse.c: each
// kernel becomes one LKernel, in kernel order, of the KernelKind fusion gave it
// (LKernel.kind, decided once, by fuse_kernel_kind), whose loop nests compute its
// NM_STORED nodes into their buffers; NM_INLINE producers are recomputed inside their
// readers, NM_LOCAL matmul/reduction results live in locals of their kernel. Each kind
// has its file: EW and ONE ir/ew.c, RECUR ir/recur_build.c, MATMUL ir/matmul.c (and ir/gemm.c on a CPU), ROW
// ir/row.c, SORT ir/sort.c, ATTN ir/attn.c; this file holds the program's buffers and
// the loop helpers they share.
//
// Scheduling is decided where the loops are built, not by a later pass over the loop
// IR: the builder knows what each loop computes, so it can reorder a nest and move
// accumulators into buffers without recovering that from the IR, and it records what a
// backend or ir/sched.c would otherwise have to rediscover (LKernel.mm: a matmul's
// roles; LKernel.softmax: a softmax row's passes). Three kernel shapes get a loop order
// other than the output's row-major one: elementwise kernels that read a transposed
// operand run in tiles (ir/ew.c); matmuls whose k loop would stride through b
// accumulate blocks of output rows in place (the row schedule, ir/matmul.c); and
// reductions that keep the input's unit-stride dim accumulate whole rows of partial
// results (COL, ir/row.c). Each computes every element, and adds every term of an
// output, in the same order as the row-major nest, so results are bit-identical to
// kernel_build_naive, which builds without them (the tests' reference). That row
// schedule serves GPU programs only: on a CPU (kernel_build with a CpuTarget) every
// matmul goes through ir/gemm.c, whose FMA tiles sum in another order.
//
// Invariants kept:
//   - buffers: one LB_PARAM per parameter (in order), then one per NM_STORED node that
//     owns storage (not OP_STORE, which writes its target's buffer), LB_RESULT when an
//     output views it; outputs that view a parameter point at that parameter's buffer;
//     then the LB_TEMP accumulators the schedules add, kernel by kernel;
//   - every store writes a value of the buffer's own dtype (casts are explicit);
//   - loops iterate the written tensor's dims in row-major order (innermost unit stride
//     on the output), except in the three schedules above; size-1 dims get no loop;
//     the outermost loop is `parallel` when its iterations are independent and the
//     kernel's work is >= PARALLEL_WORK (the reduction and matmul schedules pick the
//     first loop that gives PARALLEL_MIN_ITERS iterations, or split a dim into
//     parallel blocks);
//   - locals are declared (LS_LET) inside the loop they serve, so they are private to
//     an iteration of a parallel loop; a temp accumulator is indexed by the output
//     element, so parallel iterations never share one.
#include "ir/kernel.h"

#include <stdlib.h>
#include <string.h>

enum {
  BLOCK_TARGET = 16,  // blocks a split dim aims for (kb_block_size)
};

// ============================================================================
// Loop helpers shared by the schedules
// ============================================================================
void kb_push(KernelBuilder *kb, LStmtList *list, LStmt *s) { vec_push(&kb->cx->arena, list, s); }

LStmtList *kb_nest(KernelBuilder *kb, LStmtList *into, int nd, const int64_t *shape, LIndex *idx, bool parallel,
                   LStmt **loops) {
  for (int d = 0; d < nd; d++) {
    if (shape[d] == 1) {
      idx[d] = kb_ix_const(0);
      continue;
    }
    int v = kb_new_var(kb);
    LStmt *s = kb_loop(kb, v, shape[d]);
    s->parallel = parallel;
    parallel = false;
    kb_push(kb, into, s);
    into = &s->body;
    idx[d] = kb_ix_var(v);
    if (loops)
      *loops++ = s;
  }
  return into;
}

LStmtList *kb_outer_loops(KernelBuilder *kb, LStmtList *into, int n, const int *dims, const int64_t *shape,
                          LIndex *idx, bool par) {
  int pp = par && n > 0 ? 0 : -1;
  int64_t iters = 1;
  for (int p = 0; p < n && pp >= 0; p++)
    if ((iters *= shape[dims[p]]) >= PARALLEL_MIN_ITERS) {
      pp = p;
      break;
    }
  for (int p = 0; p < n; p++) {
    int v = kb_new_var(kb);
    LStmt *s = kb_loop(kb, v, shape[dims[p]]);
    s->parallel = p == pp;
    kb_push(kb, into, s);
    into = &s->body;
    idx[dims[p]] = kb_ix_var(v);
  }
  return into;
}

LStmtList *kb_step_loop(KernelBuilder *kb, LStmtList *into, int64_t n, LIndex base, int64_t step, bool par,
                        LIndex *at) {
  *at = base;
  if (n == 1)
    return into;
  int v = kb_new_var(kb);
  LStmt *s = kb_loop(kb, v, n);
  s->parallel = par;
  kb_push(kb, into, s);
  LIndex vi = kb_ix_var(v);
  kb_ix_addmul(kb, at, &vi, step);
  return &s->body;
}

int64_t kb_block_size(int64_t S, int64_t w) {
  int64_t b = (S + BLOCK_TARGET - 1) / BLOCK_TARGET;
  if (w == 1)
    b = (b + 63) / 64 * 64;
  return b > 0 && S / b >= 2 ? b : 0;
}

int kb_let_local(KernelBuilder *kb, LStmtList *into, LExpr *val) {
  int l = kb_new_local(kb, val->dt);
  kb_push(kb, into, kb_let(kb, l, val));
  return l;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

bool kb_cuts_sorted(KbCuts *c, const View *v) {
  if (c->bad) {
    memset(c->n, 0, sizeof c->n);
    return false;
  }
  bool split = false;
  for (int d = 0; d < v->ndim; d++) {
    qsort(c->at[d], (size_t)c->n[d], sizeof(int64_t), cmp_i64);
    int m = 0;
    for (int j = 0; j < c->n[d]; j++) {
      int64_t x = c->at[d][j];
      if (x > 0 && x < v->shape[d] && (!m || c->at[d][m - 1] != x))
        c->at[d][m++] = x;
    }
    c->n[d] = m;
    split |= m > 0;
  }
  return split;
}

bool kb_same_shape(const View *a, const View *b) {
  if (a->ndim != b->ndim)
    return false;
  for (int i = 0; i < a->ndim; i++)
    if (a->shape[i] != b->shape[i])
      return false;
  return true;
}

int64_t kb_ix_coef(const LIndex *x, int var) {
  for (int t = 0; t < x->nterms; t++)
    if (x->var[t] == var)
      return x->coef[t];
  return 0;
}

// ============================================================================
// Buffers: program buffers, temps, loads and stores of accumulator rows
// ============================================================================
static int add_buf(KernelBuilder *kb, LBuf b) {
  vec_push(&kb->cx->arena, &kb->p->bufs, b);
  return kb->p->bufs.len - 1;
}

int kb_new_temp(KernelBuilder *kb, DType dt, int64_t numel, const char *what) {
  const char *name = arena_printf(&kb->cx->arena, "%s.%s", kb->k->name, what);
  return add_buf(kb, (LBuf){LB_TEMP, dt, numel, name, -1, false, false});
}

LExpr *kb_buf_load(KernelBuilder *kb, int buf, LIndex idx) {
  LExpr *e = kb_expr(kb, LX_LOAD, kb->p->bufs.data[buf].dtype);
  e->buf = kb_arg(kb, buf, true, false);
  e->idx = idx;
  return e;
}

void kb_buf_store(KernelBuilder *kb, LStmtList *into, int buf, LIndex idx, LExpr *val) {
  int arg = kb_arg(kb, buf, false, true);
  kb_push(kb, into, kb_store_stmt(kb, arg, idx, kb_cast(kb, val, kb->p->bufs.data[buf].dtype)));
}

void kb_store_node(KernelBuilder *kb, LStmtList *into, const Node *n, const LIndex *idx, LExpr *val) {
  int buf = kb->buf_of[n->out->buf->id];
  TD_ASSERT(buf >= 0);
  int arg = kb_arg(kb, buf, false, true);
  kb_push(kb, into, kb_store_stmt(kb, arg, kb_view_index(kb, &n->out->view, idx), kb_cast(kb, val, n->out->dtype)));
}

void kb_local_at(KernelBuilder *kb, const Node *n, int local, const LIndex *at) {
  LocalVal *lv = &kb->lv[n->id];
  lv->kind = LV_LOCAL;
  lv->local = local;
  lv->nat = n->out->view.ndim;
  for (int d = 0; d < lv->nat; d++)
    lv->at[d] = at[d], lv->fixed[d] = true;
}

// ============================================================================
// The pass
// ============================================================================
// Line `line` into k's lines (sorted, distinct).
static void add_line(KernelBuilder *kb, LKernel *k, int line) {
  int j = 0;
  while (j < k->lines.len && k->lines.data[j] < line)
    j++;
  if (j == k->lines.len || k->lines.data[j] != line) {
    vec_push(&kb->cx->arena, &k->lines, 0);
    memmove(&k->lines.data[j + 1], &k->lines.data[j], sizeof(int) * (size_t)(k->lines.len - 1 - j));
    k->lines.data[j] = line;
  }
}

// members: the nodes of kernel kid in graph order (build's buckets, so that building
// every kernel costs the graph's size once, not once a kernel).
static void build_kernel(KernelBuilder *kb, int kid, const NodeList *members) {
  const Graph *g = kb->g;
  LKernel *k = arena_alloc(&kb->cx->arena, sizeof *k);
  k->name = arena_printf(&kb->cx->arena, "k%d", kid);
  kb->k = k;
  kb->kid = kid;
  kb->var_ext.len = 0;
  NodeList ns = {0};
  for (int i = 0; i < members->len; i++) {
    const Node *n = members->data[i];
    vec_push(&kb->cx->arena, &k->ops, op_name(n->op));
    for (int l = -1; l < n->nlines; l++)  // its own line, then those of the ops it absorbed
      add_line(kb, k, l < 0 ? loc_line(n->loc) : n->lines[l]);
    if (n->mode != NM_INLINE)
      vec_push(&kb->cx->arena, &ns, n);
  }
  TD_ASSERT(ns.len > 0);
  k->kind = fuse_kernel_kind(g, kid);
  switch (k->kind) {
  case KK_MATMUL: matmul_build(kb, &ns); break;
  case KK_ROW: row_build(kb, &ns); break;
  case KK_SORT: sort_build(kb, &ns); break;
  case KK_ATTN: attn_build(kb, &ns); break;
  case KK_EW: ew_build(kb, &ns); break;
  case KK_RECUR: recur_build(kb, fuse_recur_of(g, kid)); break;
  case KK_ONE:
    TD_ASSERT(ns.len == 1);
    ew_build_one(kb, ns.data[0]);
    break;
  }
  vec_push(&kb->cx->arena, &kb->p->kernels, k);
  for (int i = 0; i < members->len; i++)  // the locals a kernel keeps are its own nodes'
    kb->lv[members->data[i]->id] = (LocalVal){0};
}

static LProgram *build(Ctx *cx, const Graph *g, const CpuTarget *cpu, bool naive) {
  LProgram *p = arena_alloc(&cx->arena, sizeof *p);
  p->name = g->name;
  p->file = g->loc.file ? g->loc.file->path : NULL;
  KernelBuilder kb = {.cx = cx, .g = g, .p = p, .naive = naive, .cpu = cpu};
  kb.buf_of = arena_alloc(&cx->arena, sizeof(int) * (size_t)(g->bufs.len + 1));
  for (int i = 0; i < g->bufs.len; i++)
    kb.buf_of[i] = -1;
  kb.lv = arena_alloc(&cx->arena, sizeof(LocalVal) * (size_t)(g->nodes.len + 1));
  for (int i = 0; i < g->params.len; i++) {
    const Value *v = g->params.data[i];
    const Buffer *b = v->buf;
    int bi = add_buf(&kb, (LBuf){LB_PARAM, b->dtype, b->numel, b->name, i, b->mut, false});
    kb.buf_of[b->id] = bi;
    LParam prm = {.name = v->name, .dtype = v->dtype, .ndim = v->view.ndim, .mut = b->mut, .buf = bi,
                  .scalar = b->scalar};
    if (v->cplx) {  // the C ABI's complex tensor; the kernels see its float pairs
      prm.dtype = dtype_complex_of(v->dtype);
      prm.ndim--;
    }
    memcpy(prm.shape, v->view.shape, sizeof(int64_t) * (size_t)v->view.ndim);
    vec_push(&cx->arena, &p->params, prm);
  }
  for (int i = 0; i < g->nodes.len; i++) {
    const Node *n = g->nodes.data[i];
    if (n->mode != NM_STORED || op_is_store(n->op))
      continue;
    const Buffer *b = n->out->buf;
    if (b->producer != n)  // a part placed in a stack's buffer (ir/place.c): the stack's node owns it
      continue;
    kb.buf_of[b->id] = add_buf(&kb, (LBuf){LB_TEMP, b->dtype, b->numel, graph_buffer_name(g, b), -1, false, false});
  }
  for (int i = 0; i < g->outputs.len; i++) {
    const Value *v = g->outputs.data[i];
    TD_ASSERT(!v->is_scalar && v->buf);
    int bi = kb.buf_of[v->buf->id];
    TD_ASSERT(bi >= 0);
    if (p->bufs.data[bi].kind == LB_TEMP)
      p->bufs.data[bi].kind = LB_RESULT;
    vec_push(&cx->arena, &p->outputs, ((LOutput){bi, v->cplx ? dtype_complex_of(v->dtype) : v->dtype, v->view}));
  }
  NodeList *members = arena_alloc(&cx->arena, sizeof *members * (size_t)(g->nkernels + 1));
  for (int i = 0; i < g->nodes.len; i++) {
    const Node *n = g->nodes.data[i];
    if (n->kernel >= 0 && n->kernel < g->nkernels)
      vec_push(&cx->arena, &members[n->kernel], n);
  }
  for (int k = 0; k < g->nkernels; k++)
    build_kernel(&kb, k, &members[k]);
  return p;
}

LProgram *kernel_build(Ctx *cx, const Graph *g, const CpuTarget *cpu) { return build(cx, g, cpu, false); }

LProgram *kernel_build_naive(Ctx *cx, const Graph *g) { return build(cx, g, NULL, true); }
