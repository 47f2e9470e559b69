// ir/scan_gpu.c: long scans on the GPU (gpu_scan, ir/gpu.h). A scan kernel (ir/row.c's
// build_scan, its facts in LKernel.scan) runs a row's scan dim in order; with a thread
// per row, a few long rows would be left to a few threads. A row of at least SCAN_LONG
// steps runs on a block instead (the rows grid-stride over the blocks), in three phases:
//   1. thread t runs the step over its chunk, j in [t C, (t + 1) C) (C = ceil(n / B)),
//      from the identities, storing nothing: its chunk's state;
//   2. the states go to shared memory; thread 0 turns them into exclusive prefixes in
//      chunk order (state = combine(state, chunk's)), the empty chunks past n skipped;
//   3. thread t runs its chunk again from its prefix, storing every step.
// The combine is the scan's step with x and j taken from the later run's state (LScan):
// for cummax/cummin values and indices exactly the sequential result (a tie or a nan
// in the later run moves the index, as in PyTorch); sums, products and logcumsumexp are
// reassociated (chunk sums, then their prefix sums), within the ops' tolerance.
//
// Invariants: barriers only at block level, reached by every thread (the rows loop is
// the same for all); thread t alone writes shared slot t in phase 1 and reads it in
// phase 3, thread 0 alone touches the slots between the two barriers; the association
// depends on the block size alone, which depends on n alone (the same at every grid).
#include "ir/gpu.h"

#include <inttypes.h>

enum { SCAN_LONG = 1024, SCAN_MAX_BLOCK = 256 };

static LExpr *var(GpuBuild *g, int v) { return lx_var(g->cx, v); }

// The j loop's body, run over the thread's chunk: j = t C + jj for jj < C while below n.
static void run_chunk(GpuBuild *g, LStmtList *l, const LStmt *jloop, int64_t chunk, bool stores) {
  Ctx *cx = g->cx;
  int64_t n = jloop->extent;
  int jj = gpu_new_var(g);
  LStmtList *in = gpu_loop(g, l, jj, chunk, NULL, NULL);
  LExpr *j = gpu_add(g, gpu_mul(g, gpu_tid(g), chunk), var(g, jj));
  LStmt *below = ls_if(cx, lx_binary(cx, OP_LT, DT_BOOL, j, gpu_i64(g, n)));
  gpu_push(g, in, below);
  gpu_setvar(g, &below->body, jloop->var, lx_binary(cx, OP_MINIMUM, DT_I64, j, gpu_i64(g, n - 1)));
  for (int i = 0; i < jloop->body.len; i++)
    if (stores || jloop->body.data[i]->kind != LS_STORE)
      gpu_push(g, &below->body, jloop->body.data[i]);
}

static LIndex at_var(int v) { return (LIndex){.nterms = 1, .var = {v}, .coef = {1}}; }

bool gpu_scan(GpuBuild *g, const LStmt *const *rows, int nrows, const LStmtList *row) {
  const LScan *sc = g->k->scan;
  if (!sc || row->len < 1 || row->data[row->len - 1] != sc->jloop || sc->jloop->extent < SCAN_LONG)
    return false;
  for (int i = 0; i + 1 < row->len; i++) {  // the accumulators' lets
    bool acc = false;
    for (int a = 0; a < sc->nacc; a++)
      acc |= row->data[i]->kind == LS_LET && row->data[i]->local == sc->acc[a];
    if (!acc)
      return false;
  }
  for (int i = 0; i < sc->jloop->body.len; i++) {
    LStmtKind kd = sc->jloop->body.data[i]->kind;
    if (kd != LS_LET && kd != LS_SET && kd != LS_STORE)
      return false;
  }
  Ctx *cx = g->cx;
  LGpuSched *gs = g->gs;
  int64_t n = sc->jloop->extent, total = 1;
  for (int i = 0; i < nrows; i++)
    total *= rows[i]->extent;
  int64_t block = 32;
  while (block < SCAN_MAX_BLOCK && block * 8 <= n)
    block *= 2;
  int64_t chunk = (n + block - 1) / block, nchunks = (n + chunk - 1) / chunk;
  gs->block = block;
  gs->grid = total < g->t->max_grid ? total : g->t->max_grid;
  gs->name = arena_printf(&cx->arena, "scan, block of %" PRId64 " per row, chunks of %" PRId64, block, chunk);
  if (total == 0) {
    gs->grid = 0;
    return true;
  }
  int sh[LSCAN_MAX_ACC];
  for (int a = 0; a < sc->nacc; a++)
    sh[a] = gpu_shared(g, g->k->locals.data[sc->acc[a]], block, "scan states");
  gpu_tid(g);
  int r = gpu_new_var(g), tid = gs->tid;
  LStmtList *l = gpu_loop(g, &g->out, r, total, gpu_ctaid(g), gpu_i64(g, gs->grid));
  gpu_decompose(g, l, rows, nrows, var(g, r), row);
  for (int i = 0; i + 1 < row->len; i++)
    gpu_push(g, l, row->data[i]);
  // 1. the chunk's state, to shared memory
  run_chunk(g, l, sc->jloop, chunk, false);
  for (int a = 0; a < sc->nacc; a++) {
    DType dt = g->k->locals.data[sc->acc[a]];
    gpu_push(g, l, ls_store(cx, sh[a], at_var(tid), lx_local(cx, dt, sc->acc[a])));
  }
  gpu_sync(g, l, false);
  // 2. thread 0: the exclusive prefixes, in chunk order
  LStmt *first = ls_if(cx, lx_binary(cx, OP_EQ, DT_BOOL, gpu_tid(g), gpu_i64(g, 0)));
  gpu_push(g, l, first);
  for (int i = 0; i + 1 < row->len; i++)  // the identities again
    gpu_push(g, &first->body, ls_set(cx, row->data[i]->local, row->data[i]->val));
  int c = gpu_new_var(g);
  LStmtList *each = gpu_loop(g, &first->body, c, nchunks, NULL, NULL);
  for (int a = 0; a < sc->nacc; a++) {
    DType dt = g->k->locals.data[sc->acc[a]];
    gpu_push(g, each, ls_let(cx, sc->other[a], lx_load(cx, dt, sh[a], at_var(c))));
    gpu_push(g, each, ls_store(cx, sh[a], at_var(c), lx_local(cx, dt, sc->acc[a])));
  }
  for (int i = 0; i < sc->combine.len; i++)
    gpu_push(g, each, sc->combine.data[i]);
  gpu_sync(g, l, false);
  // 3. from the prefix, the chunk's steps with their stores
  for (int a = 0; a < sc->nacc; a++) {
    DType dt = g->k->locals.data[sc->acc[a]];
    gpu_push(g, l, ls_set(cx, sc->acc[a], lx_load(cx, dt, sh[a], at_var(tid))));
  }
  run_chunk(g, l, sc->jloop, chunk, true);
  return true;
}
