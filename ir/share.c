// ir/share.c: one function for kernels with the same code (share_kernels in ir/loop.h).
// A model's layers, unrolled from `for i in range(L)` over stacked weights, build one
// copy of every kernel per layer; the copies differ only in where they read and write
// (w[i] starts i*C*C elements into w's storage, each layer's temporaries are their own
// buffers). Compiling each copy again is most of an LLVM compile of such a model.
//
// First every argument's start moves up to the least base of its indices, rounded down
// to a multiple of 64 bytes: the backends assume storages 64-byte aligned (vector and
// streaming stores), and the kernel still sees an aligned pointer. Its indices then
// count from that start (LArg.at), which the entry adds to the storage's pointer. The
// element any index reaches is unchanged, so loop_verify checks the indices against
// [-at, numel - at). Then kernels with equal code — kind, loop variables, locals,
// errors (located messages), the dtypes and read/write/stream flags of their
// arguments, and their statements node for node — are found through a structural hash;
// each later one points at the first in LKernel.same. CPU programs are shared after
// sched_cpu, GPU programs before sched_gpu, which gives a later copy its first's
// schedule. Of what the kernel builder records beside the loops, LKernel.mm is read by
// sched_gpu and codegen/cuda.c (as facts about the loops): its shape is compared too;
// .softmax is read by sched_cpu alone, which has run by then.
//
// Last, temps take turns in storage (share_temps below): temps of one dtype whose lives
// (first to last kernel using them) do not overlap share one buffer, and scratch buffers
// (per thread) of one dtype are one. On a CPU, lives that meet in one kernel may share
// too, when ir/inplace.c proves that kernel writes the later temp in place over the
// earlier (each element read before, in the same iteration, the one store writing it);
// the two arguments then become one (merge_args), so no restrict or noalias pair names
// one storage, and such kernels match each other again, not their old group.
//
// Before the slots, a result may take a temp: the entry allocates results before the
// kernels run, so a temp whose life ends in the kernel that first writes a result, in
// place over it (ir/inplace.c), lives in the result's storage and takes no buffer of
// its own (temps_in_results): a block's input kept for its residual, out = x + f(x).
// Temps whose lives end before the result's first kernel live there too, apart where
// their lives meet (results_before): Mamba's x_dbl and GEMM packs, GPT-2's layers in its
// logits. Those stay only where the slots then take fewer bytes; a kernel naming two of
// them names the result's storage twice, at disjoint ranges.
//
// Nodes may be reached twice (an expression shared by two statements): a node's index
// is moved once, remembered in a pointer set.
#include "ir/loop.h"

#include <stdlib.h>
#include <string.h>

// ---- a set of node pointers (open addressing; the arena holds the table) ----
typedef struct PtrSet {
  const void **slot;
  size_t cap, n;
} PtrSet;

static size_t ptr_hash(const void *p, size_t cap) { return ((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull & (cap - 1); }

// Adds p; false if it was there.
static bool ptrset_add(Ctx *cx, PtrSet *s, const void *p) {
  if (2 * (s->n + 1) > s->cap) {
    PtrSet g = {arena_alloc(&cx->arena, sizeof *g.slot * (s->cap ? 2 * s->cap : 64)), s->cap ? 2 * s->cap : 64, 0};
    for (size_t i = 0; i < s->cap; i++)
      if (s->slot[i])
        ptrset_add(cx, &g, s->slot[i]);
    *s = g;
  }
  size_t i = ptr_hash(p, s->cap);
  for (; s->slot[i]; i = (i + 1) & (s->cap - 1))
    if (s->slot[i] == p)
      return false;
  s->slot[i] = p;
  s->n++;
  return true;
}

// ---- moving each argument's start ----
typedef struct Mover {
  Ctx *cx;
  LKernel *k;
  int64_t *least;  // per argument: the least base of its indices (INT64_MAX: none)
  PtrSet seen;
  bool shift;      // false: find the least bases; true: subtract k->args[..].at
} Mover;

static void move_index(Mover *m, int arg, LIndex *ix) {
  if (arg < 0 || arg >= m->k->args.len)
    return;
  if (m->shift)
    ix->base -= m->k->args.data[arg].at;
  else if (ix->base < m->least[arg])
    m->least[arg] = ix->base;
}

static void move_expr(Mover *m, LExpr *e) {
  if (!e || (m->shift && !ptrset_add(m->cx, &m->seen, e)))
    return;
  if (e->kind == LX_LOAD) {
    move_index(m, e->buf, &e->idx);
    move_expr(m, e->idx.dyn);
  }
  move_expr(m, e->a);
  move_expr(m, e->b);
  move_expr(m, e->c);
}

static void move_stmts(Mover *m, LStmtList *l) {
  for (int i = 0; i < l->len; i++) {
    LStmt *s = l->data[i];
    if (m->shift && !ptrset_add(m->cx, &m->seen, s))
      continue;
    if (s->kind == LS_STORE) {
      move_index(m, s->buf, &s->idx);
      move_expr(m, s->idx.dyn);
    }
    if (s->kind == LS_CALL) {
      for (int a = 0; a < s->call->nptr; a++)
        move_index(m, s->call->ptr[a], &s->call->at[a]);
      for (int a = 0; a < s->call->nval; a++)
        move_expr(m, s->call->val[a]);
    }
    move_expr(m, s->val);
    move_expr(m, s->cond);
    move_stmts(m, &s->body);
  }
}

static void move_starts(Ctx *cx, const LProgram *p, LKernel *k) {
  int n = k->args.len;
  Mover m = {cx, k, arena_alloc(&cx->arena, sizeof *m.least * (size_t)(n + 1)), {0}, false};
  for (int a = 0; a < n; a++)
    m.least[a] = INT64_MAX;
  move_stmts(&m, &k->body);
  bool any = false;
  for (int a = 0; a < n; a++) {
    LArg *arg = &k->args.data[a];
    const LBuf *b = &p->bufs.data[arg->buf];
    int64_t align = 64 / dtype_size(b->dtype);
    int64_t at = m.least[a] == INT64_MAX || m.least[a] <= 0 || b->scratch ? 0 : m.least[a] / align * align;
    arg->at = at < b->numel ? at : 0;
    any |= arg->at != 0;
  }
  if (!any)
    return;
  m.shift = true;
  move_stmts(&m, &k->body);
}

// ---- equal code ----
static uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001B3ull; }

static uint64_t hash_double(uint64_t h, double f) {
  uint64_t bits;
  memcpy(&bits, &f, sizeof bits);
  return mix(h, bits);
}

static uint64_t hash_index(uint64_t h, const LIndex *ix) {
  h = mix(mix(h, (uint64_t)ix->base), (uint64_t)ix->nterms);
  for (int t = 0; t < ix->nterms; t++)
    h = mix(mix(h, (uint64_t)ix->var[t]), (uint64_t)ix->coef[t]);
  return h;
}

static uint64_t hash_expr(uint64_t h, const LExpr *e) {
  if (!e)
    return mix(h, 0x51);
  h = mix(mix(mix(h, (uint64_t)e->kind), (uint64_t)e->dt), (uint64_t)e->op);
  h = mix(mix(mix(hash_double(h, e->f), (uint64_t)e->i), (uint64_t)e->var), (uint64_t)e->local);
  h = mix(mix(mix(mix(h, (uint64_t)e->buf), (uint64_t)e->err), (uint64_t)e->wrap), (uint64_t)e->lanes);
  if (e->kind == LX_LOAD)
    h = hash_expr(hash_index(h, &e->idx), e->idx.dyn);
  return hash_expr(hash_expr(hash_expr(h, e->a), e->b), e->c);
}

static uint64_t hash_call(uint64_t h, const LCall *c) {
  h = mix(mix(mix(h, (uint64_t)c->fn), (uint64_t)c->nptr), (uint64_t)c->nval);
  for (int i = 0; i < c->nptr; i++)
    h = hash_index(mix(mix(h, (uint64_t)c->ptr[i]), (uint64_t)c->reach[i]), &c->at[i]);
  for (int i = 0; i < c->nval; i++)
    h = hash_expr(h, c->val[i]);
  return h;
}

static uint64_t hash_stmts(uint64_t h, const LStmtList *l) {
  h = mix(h, (uint64_t)l->len);
  for (int i = 0; i < l->len; i++) {
    const LStmt *s = l->data[i];
    h = mix(mix(mix(mix(h, (uint64_t)s->kind), (uint64_t)s->var), (uint64_t)s->extent), (uint64_t)s->parallel);
    h = mix(mix(mix(h, (uint64_t)s->vector), (uint64_t)s->buf), (uint64_t)s->local);
    h = hash_expr(h, s->n);
    if (s->kind == LS_STORE)
      h = hash_expr(hash_index(h, &s->idx), s->idx.dyn);
    if (s->kind == LS_CALL)
      h = hash_call(h, s->call);
    h = hash_stmts(hash_expr(hash_expr(h, s->val), s->cond), &s->body);
  }
  return h;
}

static uint64_t hash_kernel(const LProgram *p, const LKernel *k) {
  uint64_t h = mix(mix(mix(0xCBF29CE484222325ull, (uint64_t)k->kind), (uint64_t)k->nvars), (uint64_t)k->args.len);
  for (int a = 0; a < k->args.len; a++) {
    const LArg *arg = &k->args.data[a];
    h = mix(h, (uint64_t)p->bufs.data[arg->buf].dtype << 3 | (uint64_t)arg->read << 2 | (uint64_t)arg->written << 1 |
                   (uint64_t)arg->stream);
  }
  for (int i = 0; i < k->locals.len; i++)
    h = mix(h, (uint64_t)k->locals.data[i]);
  h = mix(h, (uint64_t)k->errors.len);
  return hash_stmts(h, &k->body);
}

static bool same_call(const LCall *x, const LCall *y) {
  if (x->fn != y->fn || x->nptr != y->nptr || x->nval != y->nval)
    return false;
  for (int i = 0; i < x->nptr; i++)
    if (x->ptr[i] != y->ptr[i] || x->reach[i] != y->reach[i] || !lx_same_index(&x->at[i], &y->at[i]))
      return false;
  for (int i = 0; i < x->nval; i++)
    if (!lx_same(x->val[i], y->val[i]))
      return false;
  return true;
}

static bool same_stmts(const LStmtList *x, const LStmtList *y) {
  if (x->len != y->len)
    return false;
  for (int i = 0; i < x->len; i++) {
    const LStmt *s = x->data[i], *t = y->data[i];
    if (s->kind != t->kind || s->var != t->var || s->extent != t->extent || s->parallel != t->parallel ||
        s->vector != t->vector || s->buf != t->buf || s->local != t->local)
      return false;
    if (s->kind == LS_STORE && (!lx_same_index(&s->idx, &t->idx) || !lx_same(s->idx.dyn, t->idx.dyn)))
      return false;
    if (s->kind == LS_CALL && !same_call(s->call, t->call))
      return false;
    if (!lx_same(s->n, t->n) || !lx_same(s->val, t->val) || !lx_same(s->cond, t->cond) || !same_stmts(&s->body, &t->body))
      return false;
  }
  return true;
}

// The argument of k that is buffer b, -1 if none.
static int arg_of(const LKernel *k, int b) {
  for (int a = 0; a < k->args.len; a++)
    if (k->args.data[a].buf == b)
      return a;
  return -1;
}

// The facts of two matmuls over equal loops are the same: their shapes, the loops they
// name alike (variable, extent), and their factors and initial value node for node.
static bool same_matmul(const LKernel *kx, const LKernel *ky) {
  const LMatmul *x = kx->mm, *y = ky->mm;
  if (!x || !y)
    return x == y;
  if (x->form != y->form || x->dt != y->dt || x->rdim != y->rdim || x->jdim != y->jdim || x->batch != y->batch ||
      x->M != y->M || x->N != y->N || x->K != y->K || x->nouter != y->nouter || x->iouter != y->iouter ||
      x->jouter != y->jouter || x->acc != y->acc || x->epi != y->epi || !x->kloop != !y->kloop ||
      !x->body != !y->body || !x->init != !y->init || !x->a != !y->a || !x->b != !y->b ||
      arg_of(kx, x->acc_buf) != arg_of(ky, y->acc_buf))
    return false;
  for (int i = 0; i < x->nouter; i++)
    if (x->odim[i] != y->odim[i] || x->outer[i]->var != y->outer[i]->var || x->outer[i]->extent != y->outer[i]->extent)
      return false;
  if (x->kloop && (x->kloop->var != y->kloop->var || x->kloop->extent != y->kloop->extent))
    return false;
  if (x->body && x->body->len != y->body->len)
    return false;
  return (!x->a || lx_same(x->a, y->a)) && (!x->b || lx_same(x->b, y->b)) &&
         (!x->init || lx_same(x->init, y->init));
}

static bool same_kernel(const LProgram *p, const LKernel *x, const LKernel *y) {
  if (x->kind != y->kind || x->nvars != y->nvars || x->args.len != y->args.len || x->locals.len != y->locals.len ||
      x->errors.len != y->errors.len || !same_matmul(x, y))
    return false;
  for (int a = 0; a < x->args.len; a++) {
    const LArg *u = &x->args.data[a], *v = &y->args.data[a];
    if (p->bufs.data[u->buf].dtype != p->bufs.data[v->buf].dtype || u->read != v->read || u->written != v->written ||
        u->stream != v->stream || p->bufs.data[u->buf].scratch != p->bufs.data[v->buf].scratch ||
        (p->bufs.data[u->buf].scratch && p->bufs.data[u->buf].numel != p->bufs.data[v->buf].numel))
      return false;
  }
  for (int i = 0; i < x->locals.len; i++)
    if (x->locals.data[i] != y->locals.data[i])
      return false;
  for (int i = 0; i < x->errors.len; i++)
    if (strcmp(x->errors.data[i], y->errors.data[i]))
      return false;
  return same_stmts(&x->body, &y->body);
}

// ---- two arguments of a kernel over one buffer become one ----
typedef struct Merge {
  Ctx *cx;
  int from, to;    // the arg that goes, the one its reads then name (numbered after)
  int64_t shift;   // added to the index of each load through `from`
  PtrSet seen;
} Merge;

static int merged_arg(const Merge *m, int a) { return a == m->from ? m->to : a > m->from ? a - 1 : a; }

static void merge_expr(Merge *m, LExpr *e) {
  if (!e || !ptrset_add(m->cx, &m->seen, e))
    return;
  if (e->kind == LX_LOAD || e->kind == LX_FRAG) {
    if (e->buf == m->from)
      e->idx.base += m->shift;
    e->buf = merged_arg(m, e->buf);
  }
  merge_expr(m, e->idx.dyn);
  merge_expr(m, e->a);
  merge_expr(m, e->b);
  merge_expr(m, e->c);
}

static void merge_stmts(Merge *m, LStmtList *l) {
  for (int i = 0; i < l->len; i++) {
    LStmt *s = l->data[i];
    if (!ptrset_add(m->cx, &m->seen, s))
      continue;
    if (s->kind == LS_STORE)
      s->buf = merged_arg(m, s->buf);
    if (s->kind == LS_CALL) {
      for (int a = 0; a < s->call->nptr; a++)
        s->call->ptr[a] = merged_arg(m, s->call->ptr[a]);
      for (int a = 0; a < s->call->nval; a++)
        merge_expr(m, s->call->val[a]);
    }
    merge_expr(m, s->val);
    merge_expr(m, s->cond);
    merge_expr(m, s->n);
    merge_expr(m, s->idx.dyn);
    merge_stmts(m, &s->body);
  }
}

// Arg y of k (read only, over x's buffer: ir/inplace.c proved it) goes; its loads read
// arg x at the same storage elements. One pointer, so no restrict or noalias pair names
// one storage.
static void merge_args(Ctx *cx, LKernel *k, int x, int y) {
  Merge m = {cx, y, x > y ? x - 1 : x, k->args.data[y].at - k->args.data[x].at, {0}};
  merge_stmts(&m, &k->body);
  if (k->mm) {  // its facts point into the body, or copy from it
    merge_expr(&m, k->mm->a);
    merge_expr(&m, k->mm->b);
    merge_expr(&m, k->mm->init);
  }
  k->args.data[x].read = true;
  k->args.data[x].stream = false;  // (read where it is written: plain stores)
  memmove(&k->args.data[y], &k->args.data[y + 1], sizeof(LArg) * (size_t)(k->args.len - y - 1));
  k->args.len--;
}

// ============================================================================
// Temps sharing storage
// ============================================================================
// A temp is live from the first kernel that uses it to the last (kernels run in
// order); temps of one dtype whose lives do not overlap take turns in one buffer, the
// largest of them (greedy by size: the largest temps take slots first). Scratch buffers
// (per thread, used within one kernel) of one dtype become one. Unused buffers are
// dropped and the rest renumbered. A program's peak memory is then what its live temps need at once,
// not all of them: GPT-2 small's 12 layers reuse one layer's.

// Renumbers buffer b to map[b] everywhere it is named.
static void rename_bufs(LProgram *p, const int *map) {
  for (int i = 0; i < p->params.len; i++)
    p->params.data[i].buf = map[p->params.data[i].buf];
  for (int i = 0; i < p->outputs.len; i++)
    p->outputs.data[i].buf = map[p->outputs.data[i].buf];
  for (int k = 0; k < p->kernels.len; k++) {
    LKernel *kr = p->kernels.data[k];
    for (int a = 0; a < kr->args.len; a++)
      kr->args.data[a].buf = map[kr->args.data[a].buf];
  }
}

// Temps in the order they are given slots: the largest first (then by first use, then
// by number, so the plan is deterministic); scratch buffers, which all become one, by
// first use (the first names the one).
typedef struct TempOrder {
  int64_t numel;
  int first, buf;
} TempOrder;

static int cmp_temp_order(const void *a, const void *b) {
  const TempOrder *x = a, *y = b;
  if (x->numel != y->numel)
    return x->numel > y->numel ? -1 : 1;
  if (x->first != y->first)
    return x->first < y->first ? -1 : 1;
  return (x->buf > y->buf) - (x->buf < y->buf);
}

// Greedy by size: each temp, largest first, joins the smallest slot of its dtype that
// holds it and none of whose temps is live while it is, or opens a slot (as large as
// its first, largest temp). Among equal slots it takes the one freed last before its
// life begins (then the first opened). Taking slots in order of first use instead (the
// first free one, grown to fit) let a small temp that lives long (a scan step's output
// kept for a stack at the end) pin a large slot while the large temps after it took
// new ones.
//
// Run once, a model's first layers see fewer slots than the later ones (the slots open
// as the layers need them), so they take other slots than the later layers do, and the
// entry cannot roll them into its loop of repeated calls (emit_find_run). So the plan
// is made twice: the second time every slot of the first plan is there, empty, from
// the start, and the first layers choose as the later ones do. The second plan is kept
// unless it takes more bytes. Both are made again preferring a slot a temp can take in
// place (freed in its first kernel) to a smaller one: so Mamba's GEMM writes its result
// over the scan's output, leaving the slot the scan's input held to the GEMM's packing.
// The plan of fewest bytes is kept.
typedef struct Slot {
  int64_t numel;  // what it holds: its first temp's (scratch: the largest's)
  int64_t need;   // the largest temp it holds (a slot of the first plan may end with smaller ones)
  DType dtype;
  bool scratch;
  int head;  // its first temp (the buffer the others become), -1: none yet
} Slot;

typedef struct Plan {
  Slot *slot;
  int n;
  int *next;  // a slot's temps: a list from its head
} Plan;

// Temps written in place over temps their first kernel reads last (ir/inplace.c): each
// pair asked once, the answer kept.
typedef struct InPlace {
  int x, y;  // x's life starts where y's ends, in x's first kernel
  bool ok;
} InPlace;

typedef struct Lives {
  Ctx *cx;
  const LProgram *p;
  const int *first, *last;
  VEC(InPlace) asked;
  InplaceMarks marks;
} Lives;

// Whether x may take y's storage in the kernel where x's life starts and y's ends.
static bool in_place(Lives *lv, int x, int y) {
  if (lv->first[x] != lv->last[y] || lv->first[y] == lv->last[y])
    return false;
  for (int i = 0; i < lv->asked.len; i++)
    if (lv->asked.data[i].x == x && lv->asked.data[i].y == y)
      return lv->asked.data[i].ok;
  bool ok = inplace_ok(lv->cx, lv->p, lv->first[x], x, y, &lv->marks);
  vec_push(&lv->cx->arena, &lv->asked, ((InPlace){x, y, ok}));
  return ok;
}

// Whether temps a and b can be in one buffer: their lives do not overlap, or meet in
// one kernel that writes one over the other in place.
static bool apart(Lives *lv, int a, int b) {
  const int *first = lv->first, *last = lv->last;
  return last[a] < first[b] || last[b] < first[a] || in_place(lv, a, b) || in_place(lv, b, a);
}

static Plan plan_slots(Lives *lv, const TempOrder *order, int nt, const Plan *pre, bool over_first) {
  Ctx *cx = lv->cx;
  const LProgram *p = lv->p;
  const int *first = lv->first, *last = lv->last;
  int nb = p->bufs.len;
  int cap = nt + (pre ? pre->n : 0) + 1;
  Plan pl = {arena_alloc(&cx->arena, sizeof(Slot) * (size_t)cap), 0, arena_alloc(&cx->arena, sizeof(int) * (size_t)(nb + 1))};
  for (int s = 0; pre && s < pre->n; s++)
    pl.slot[pl.n++] = (Slot){pre->slot[s].numel, 0, pre->slot[s].dtype, pre->slot[s].scratch, -1};
  for (int t = 0; t < nt; t++) {
    int b = order[t].buf, best = -1, best_freed = -1;
    const LBuf *lb = &p->bufs.data[b];
    for (int s = 0; s < pl.n; s++) {
      const Slot *sl = &pl.slot[s];
      if (sl->dtype != lb->dtype || sl->scratch != lb->scratch || (!lb->scratch && sl->numel < lb->numel))
        continue;
      bool free = true;  // scratch (per thread, within one kernel) shares with any scratch
      int freed = -1;    // the last kernel before b's life that uses the slot (b's first: in place)
      for (int o = sl->head; free && !lb->scratch && o >= 0; o = pl.next[o]) {
        free = apart(lv, o, b);
        if (last[o] <= first[b] && last[o] > freed)
          freed = last[o];
      }
      bool over = over_first && freed == first[b], best_over = over_first && best_freed == first[b];
      if (free && (best < 0 || (over && !best_over) ||
                   (over == best_over && (sl->numel < pl.slot[best].numel ||
                                          (sl->numel == pl.slot[best].numel && freed > best_freed)))))
        best = s, best_freed = freed;
    }
    if (best < 0) {
      best = pl.n++;
      pl.slot[best] = (Slot){lb->numel, 0, lb->dtype, lb->scratch, -1};
    }
    Slot *sl = &pl.slot[best];
    if (sl->head < 0) {
      sl->head = b;
      pl.next[b] = -1;
    } else {
      pl.next[b] = pl.next[sl->head];
      pl.next[sl->head] = b;
    }
    if (lb->numel > sl->numel)  // (scratch only: a larger temp came first)
      sl->numel = lb->numel;
    if (lb->numel > sl->need)
      sl->need = lb->numel;
  }
  return pl;
}

// The bytes a plan's slots take.
static int64_t plan_bytes(const Plan *pl) {
  int64_t n = 0;
  for (int s = 0; s < pl->n; s++)
    n = td_sat_add(n, td_sat_mul(pl->slot[s].need, dtype_size(pl->slot[s].dtype)));
  return n;
}

// Kernels whose args merged (merged[k]) no longer have the code the others they matched
// have: they leave their groups (a group whose first merged takes its next kernel as
// first) and match among themselves again (the layers of a model write in place alike).
static void relink_merged(Ctx *cx, LProgram *p, const bool *merged) {
  int nk = p->kernels.len;
  for (int k = 0; k < nk; k++) {
    LKernel *kr = p->kernels.data[k];
    if (!merged[k] || kr->same)
      continue;
    LKernel *head = NULL;  // kr was a first: the others it named take their first one
    for (int j = k + 1; j < nk; j++) {
      LKernel *o = p->kernels.data[j];
      if (o->same != kr || merged[j])
        continue;
      o->same = head;
      if (!head)
        head = o;
    }
  }
  for (int k = 0; k < nk; k++)
    if (merged[k])
      p->kernels.data[k]->same = NULL;
  uint64_t *h = arena_alloc(&cx->arena, sizeof *h * (size_t)(nk + 1));
  for (int k = 0; k < nk; k++) {
    LKernel *kr = p->kernels.data[k];
    if (!merged[k])
      continue;
    h[k] = hash_kernel(p, kr);
    for (int j = 0; j < k && !kr->same; j++)
      if (merged[j] && !p->kernels.data[j]->same && h[j] == h[k] && same_kernel(p, p->kernels.data[j], kr))
        kr->same = p->kernels.data[j];
  }
}

// Each result whose first kernel reads a temp for the last time and writes the result in
// place over it (the largest such temp of its dtype that it holds) takes that temp:
// map[temp] = the result, taken[temp] set. A temp living in the result's storage from
// its first kernel on is safe there: the result's storage is the entry's from before
// the first kernel, and no kernel touches it before the result's first.
static void temps_in_results(Lives *lv, int *map, bool *taken) {
  const LProgram *p = lv->p;
  int nb = p->bufs.len;
  for (int r = 0; r < nb; r++) {
    const LBuf *rb = &p->bufs.data[r];
    if (rb->kind != LB_RESULT || lv->first[r] < 0)
      continue;
    int best = -1;
    for (int y = 0; y < nb; y++) {
      const LBuf *yb = &p->bufs.data[y];
      if (yb->kind != LB_TEMP || yb->scratch || taken[y] || lv->last[y] != lv->first[r] || yb->dtype != rb->dtype ||
          yb->numel > rb->numel || (best >= 0 && yb->numel <= p->bufs.data[best].numel))
        continue;
      if (in_place(lv, r, y))
        best = y;
    }
    if (best >= 0)
      map[best] = r, taken[best] = true;
  }
}

// Temps whose lives end before a result's first kernel (results_before): until then the
// result's storage (the entry's from before the first kernel, uninitialised) holds
// nothing, so such temps can live in it, at offsets apart where their lives overlap
// (and apart from a temp temps_in_results put at its start), each offset a multiple of
// 64 bytes. Largest first, each at the lowest offset that fits: off[temp] its offset,
// res[temp] the result (-1: none).
static bool lives_meet(const Lives *lv, int a, int b) {
  return lv->first[a] <= lv->last[b] && lv->first[b] <= lv->last[a];
}

static void results_before(Lives *lv, const int *map, const bool *taken, int *res, int64_t *off) {
  const LProgram *p = lv->p;
  int nb = p->bufs.len;
  TempOrder *order = arena_alloc(&lv->cx->arena, sizeof *order * (size_t)(nb + 1));
  int *in = arena_alloc(&lv->cx->arena, sizeof(int) * (size_t)(nb + 1));  // temps placed in r so far
  for (int r = 0; r < nb; r++) {
    const LBuf *rb = &p->bufs.data[r];
    if (rb->kind != LB_RESULT || lv->first[r] < 0)
      continue;
    int nt = 0, nin = 0;
    for (int y = 0; y < nb; y++) {
      const LBuf *yb = &p->bufs.data[y];
      if (taken[y] && map[y] == r)
        in[nin++] = y;  // (temps_in_results': at offset 0)
      else if (yb->kind == LB_TEMP && !yb->scratch && !taken[y] && res[y] < 0 && lv->first[y] >= 0 &&
               lv->last[y] < lv->first[r] && yb->dtype == rb->dtype && yb->numel <= rb->numel)
        order[nt++] = (TempOrder){yb->numel, lv->first[y], y};
    }
    qsort(order, (size_t)nt, sizeof *order, cmp_temp_order);
    int64_t align = 64 / dtype_size(rb->dtype);
    for (int t = 0; t < nt; t++) {
      int y = order[t].buf;
      int64_t at = 0, n = order[t].numel;
      for (bool moved = true; moved && at + n <= rb->numel;) {
        moved = false;
        for (int i = 0; i < nin; i++) {
          int q = in[i];
          int64_t qa = res[q] == r ? off[q] : 0, qn = p->bufs.data[q].numel;
          if (lives_meet(lv, q, y) && at < qa + qn && qa < at + n)
            at = (qa + qn + align - 1) / align * align, moved = true;
        }
      }
      if (at + n > rb->numel)
        continue;
      res[y] = r, off[y] = at;
      in[nin++] = y;
    }
  }
}

// The slots of the temps in `order`: the plan of fewest bytes of plan_slots' four.
static const Plan *best_plan(Lives *lv, const TempOrder *order, int nt) {
  const Plan *use = NULL;
  for (int over = 0; over < 2; over++) {
    Plan *a = arena_alloc(&lv->cx->arena, sizeof *a), *b = arena_alloc(&lv->cx->arena, sizeof *b);
    *a = plan_slots(lv, order, nt, NULL, over);
    *b = plan_slots(lv, order, nt, a, over);
    if (!use || plan_bytes(b) < plan_bytes(use))
      use = b;
    if (plan_bytes(a) < plan_bytes(use))
      use = a;
  }
  return use;
}

static void share_temps(Ctx *cx, LProgram *p) {
  int nb = p->bufs.len, nk = p->kernels.len;
  int *first = arena_alloc(&cx->arena, sizeof(int) * (size_t)(nb + 1));
  int *last = arena_alloc(&cx->arena, sizeof(int) * (size_t)(nb + 1));
  int *map = arena_alloc(&cx->arena, sizeof(int) * (size_t)(nb + 1));
  for (int b = 0; b < nb; b++)
    first[b] = -1, last[b] = -1, map[b] = b;
  for (int k = 0; k < nk; k++) {
    const LKernel *kr = p->kernels.data[k];
    for (int a = 0; a < kr->args.len; a++) {
      int b = kr->args.data[a].buf;
      if (first[b] < 0)
        first[b] = k;
      last[b] = k;
    }
  }
  Lives lv = {.cx = cx, .p = p, .first = first, .last = last};
  bool *taken = arena_alloc(&cx->arena, (size_t)(nb + 1));  // (zeroed)
  temps_in_results(&lv, map, taken);
  int *res = arena_alloc(&cx->arena, sizeof(int) * (size_t)(nb + 1));
  int64_t *off = arena_alloc(&cx->arena, sizeof(int64_t) * (size_t)(nb + 1));
  for (int b = 0; b < nb; b++)
    res[b] = -1;
  results_before(&lv, map, taken, res, off);
  // the slots with and without the temps results_before placed; those stay only where
  // their slots' bytes fall (a model's first layers put in its result alone would keep
  // the entry from rolling the layers' calls into one loop, for nothing)
  TempOrder *order = arena_alloc(&cx->arena, sizeof *order * (size_t)(nb + 1));
  TempOrder *rest = arena_alloc(&cx->arena, sizeof *rest * (size_t)(nb + 1));
  int nt = 0, nr = 0;
  for (int b = 0; b < nb; b++)
    if (p->bufs.data[b].kind == LB_TEMP && first[b] >= 0 && !taken[b]) {
      order[nt++] = (TempOrder){p->bufs.data[b].scratch ? 0 : p->bufs.data[b].numel, first[b], b};
      if (res[b] < 0)
        rest[nr++] = order[nt - 1];
    }
  qsort(order, (size_t)nt, sizeof *order, cmp_temp_order);
  qsort(rest, (size_t)nr, sizeof *rest, cmp_temp_order);
  const Plan *use = best_plan(&lv, order, nt);
  if (nr < nt) {
    const Plan *pl = best_plan(&lv, rest, nr);
    if (plan_bytes(pl) < plan_bytes(use)) {
      use = pl;
      for (int k = 0; k < nk; k++) {
        LKernel *kr = p->kernels.data[k];
        for (int a = 0; a < kr->args.len; a++) {
          int b = kr->args.data[a].buf;
          if (res[b] >= 0)
            kr->args.data[a].at += off[b], kr->args.data[a].lent = true;
        }
      }
      for (int b = 0; b < nb; b++)
        if (res[b] >= 0)
          map[b] = res[b], taken[b] = true;
    }
  }
  for (int s = 0; s < use->n; s++) {
    const Slot *sl = &use->slot[s];
    if (sl->head < 0)
      continue;
    p->bufs.data[sl->head].numel = sl->need;
    for (int o = use->next[sl->head]; o >= 0; o = use->next[o])
      map[o] = sl->head;
  }
  // keep the buffers still named; renumber
  int *keep = arena_alloc(&cx->arena, sizeof(int) * (size_t)(nb + 1)), n = 0;
  bool *used = arena_alloc(&cx->arena, (size_t)(nb + 1));
  for (int b = 0; b < nb; b++)
    used[map[b]] |= first[b] >= 0 || p->bufs.data[b].kind != LB_TEMP;
  for (int b = 0; b < nb; b++)
    keep[b] = used[b] ? n++ : -1;
  for (int b = 0; b < nb; b++)
    map[b] = keep[map[b]];
  for (int b = 0; b < nb; b++)
    if (keep[b] >= 0)
      p->bufs.data[keep[b]] = p->bufs.data[b];
  p->bufs.len = n;
  rename_bufs(p, map);
  // two args of one kernel share a buffer only where one is written in place over the
  // other: they become one argument
  bool *merged = arena_alloc(&cx->arena, (size_t)(nk + 1));
  for (int k = 0; k < nk; k++) {
    LKernel *kr = p->kernels.data[k];
    for (int a = 0; a < kr->args.len; a++)
      for (int c = 0; c < a; c++) {
        // (a temp results_before put in a result's storage is apart from whatever else
        // the kernel reaches there)
        if (kr->args.data[a].buf != kr->args.data[c].buf || kr->args.data[a].lent || kr->args.data[c].lent)
          continue;
        int x = kr->args.data[a].written ? a : c, y = x == a ? c : a;
        bool asked = false;
        for (int i = 0; i < lv.asked.len && !asked; i++) {
          const InPlace *q = &lv.asked.data[i];
          asked = q->ok && first[q->x] == k && map[q->x] == kr->args.data[x].buf && map[q->y] == kr->args.data[y].buf;
        }
        if (!asked)
          td_internal_error(__FILE__, __LINE__, "kernel %d args %d %d share buffer %d", k, a, c, kr->args.data[a].buf);
        merge_args(cx, kr, x, y);
        merged[k] = true;
        a = 0;  // (the args moved: again from the start)
        break;
      }
  }
  relink_merged(cx, p, merged);
}

// ============================================================================
// The pass
// ============================================================================
void share_kernels(Ctx *cx, LProgram *p) {
  int n = p->kernels.len;
  size_t cap = 16;
  while (cap < 2 * (size_t)n)
    cap *= 2;
  int *first = arena_alloc(&cx->arena, sizeof *first * cap);  // open addressing: kernel index + 1
  uint64_t *hashes = arena_alloc(&cx->arena, sizeof *hashes * (size_t)(n + 1));
  for (int i = 0; i < n; i++) {
    LKernel *k = p->kernels.data[i];
    TD_ASSERT(!k->gpu);
    move_starts(cx, p, k);
    hashes[i] = hash_kernel(p, k);
    size_t s = hashes[i] & (cap - 1);
    for (; first[s]; s = (s + 1) & (cap - 1)) {
      int j = first[s] - 1;
      if (hashes[j] == hashes[i] && same_kernel(p, p->kernels.data[j], k)) {
        k->same = p->kernels.data[j];
        break;
      }
    }
    if (!first[s])
      first[s] = i + 1;
  }
  share_temps(cx, p);
  loop_verify(p);
}
