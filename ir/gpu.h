// ir/gpu.h: what the files of the GPU schedule share (sched_gpu in ir/loop.h is their
// one entry point), and nothing else includes. The files:
//   sched_gpu.c    the entry, the GPU target, the analysis of a kernel's loops (which
//                  iterations are independent), the choice of schedule and the
//                  helpers below; elementwise kernels (one grid-stride loop over the
//                  elements, 128-bit accesses where they line up) and the rest (a
//                  thread per row)
//   gpu_row.c      rows: a warp or a block per row, split loops, reductions combined by
//                  warp shuffles (and shared memory across a block's warps), barriers
//   matmul_gpu.c   matmuls: shared-memory tiles, register blocking, tensor cores
//   attn_gpu.c     scaled_dot_product_attention as a flash kernel
//   scan_gpu.c     long scans (cumsum and kin): a block per row, chunks, their prefixes
// Each builds the GPU form of ir/loop.h: statements every thread of the launch runs,
// the thread's indices in loop vars bound on entry (LGpuSched).
#ifndef TDSLC_IR_GPU_H
#define TDSLC_IR_GPU_H

#include "ir/loop.h"

enum { GPU_MAX_NEST = 32, GPU_MAX_ACC = 8, GPU_WARP = 32 };

typedef struct GpuBuild {
  Ctx *cx;
  LProgram *p;
  LKernel *k;
  const GpuTarget *t;
  LGpuSched *gs;
  int64_t *extent;  // per loop var of the kernel as kernel_build left it: its loop's extent
  LStmtList out;    // the GPU form being built (k->body stays as kernel_build left it until
                    // the schedule is chosen: the analyses read it)
} GpuBuild;

// ---- building the GPU form (sched_gpu.c) ----
int gpu_new_var(GpuBuild *g);
int gpu_new_local(GpuBuild *g, DType dt);
// A new LB_SHARED buffer of n elements of dt and an argument of the kernel for it
// (read and written); returns the argument.
int gpu_shared(GpuBuild *g, DType dt, int64_t n, const char *name);
LExpr *gpu_i64(GpuBuild *g, int64_t v);
LExpr *gpu_add(GpuBuild *g, LExpr *a, LExpr *b);  // i64 sums and products, constants folded
LExpr *gpu_mul(GpuBuild *g, LExpr *a, int64_t c);
LExpr *gpu_div(GpuBuild *g, LExpr *a, int64_t b);  // LX_IDIV of a >= 0 by b > 0
LExpr *gpu_mod(GpuBuild *g, LExpr *a, int64_t b);
LExpr *gpu_tid(GpuBuild *g);  // the thread's vars (LGpuSched), made on first use
LExpr *gpu_ctaid(GpuBuild *g);
LExpr *gpu_lane(GpuBuild *g);
LExpr *gpu_warp(GpuBuild *g);
void gpu_push(GpuBuild *g, LStmtList *l, LStmt *s);
// for var in start, start + step, ... < extent (start NULL: 0; step NULL: 1), appended
// to l; returns its body.
LStmtList *gpu_loop(GpuBuild *g, LStmtList *l, int var, int64_t extent, LExpr *start, LExpr *step);
void gpu_sync(GpuBuild *g, LStmtList *l, bool warp);
void gpu_setvar(GpuBuild *g, LStmtList *l, int var, LExpr *val);
// The vars of loops[0..n) (a perfect nest, outermost first) from the flat iteration f
// (row-major, the innermost fastest), those read by body (all when body is NULL).
void gpu_decompose(GpuBuild *g, LStmtList *l, const LStmt *const *loops, int n, LExpr *f, const LStmtList *body);

// ---- the loops as kernel_build left them (sched_gpu.c) ----
// Sets of kernel arguments: the buffers statements read and write.
enum { GPU_ARG_WORDS = 64 };  // kernels of up to 4096 arguments
typedef struct GpuArgSet {
  uint64_t w[GPU_ARG_WORDS];
} GpuArgSet;
static inline void gpu_set_add(GpuArgSet *s, int i) {
  TD_ASSERT(i >= 0 && i < 64 * GPU_ARG_WORDS);
  s->w[i / 64] |= (uint64_t)1 << (i % 64);
}
static inline bool gpu_set_has(const GpuArgSet *s, int i) { return (s->w[i / 64] >> (i % 64)) & 1; }
static inline bool gpu_set_meets(const GpuArgSet *a, const GpuArgSet *b) {
  for (int i = 0; i < GPU_ARG_WORDS; i++)
    if (a->w[i] & b->w[i])
      return true;
  return false;
}
static inline void gpu_set_union(GpuArgSet *a, const GpuArgSet *b) {
  for (int i = 0; i < GPU_ARG_WORDS; i++)
    a->w[i] |= b->w[i];
}
static inline bool gpu_set_empty(const GpuArgSet *a) {
  for (int i = 0; i < GPU_ARG_WORDS; i++)
    if (a->w[i])
      return false;
  return true;
}
void gpu_stmt_access(const LStmt *s, GpuArgSet *r, GpuArgSet *w);
void gpu_stmts_access(const LStmtList *l, GpuArgSet *r, GpuArgSet *w);

// The loops of the perfect nest at s (each body exactly one loop), at most max, and
// the innermost body.
int gpu_perfect_nest(const LStmt *s, const LStmt **loops, int max, const LStmtList **body);
// Whether loop's iterations touch disjoint elements and carry no local (ir/sched_gpu.c
// says how this is proved).
bool gpu_independent(GpuBuild *g, const LStmt *loop);
bool gpu_stmts_have_loop(const LStmtList *l);
// A map nest at s: a perfect nest of independent loops whose body has no loop (*n loops
// in loops, at most GPU_MAX_NEST, and the body).
bool gpu_map_nest(GpuBuild *g, const LStmt *s, const LStmt **loops, int *n, const LStmtList **body);
bool gpu_reads_var(const LStmtList *l, int var);
// Which locals the kernel mentions outside skip (and the statements it holds).
bool *gpu_locals_outside(GpuBuild *g, const LStmt *skip);
bool gpu_expr_reads_local(const LExpr *e, int local);
bool gpu_expr_reads_any_local(const LExpr *e);
bool gpu_expr_has_dyn(const LExpr *e);  // a load through a dynamic index
// Whether e reads no loop var outside allowed[0..nallowed).
bool gpu_reads_only_vars(const LExpr *e, const int *allowed, int nallowed, int nvars);

// ---- copying statements with substitutions (sched_gpu.c) ----
typedef struct GpuSubst {
  const int *local;       // per local: the local that replaces it, or -1
  LExpr *const *var;      // per var: the expression that replaces it, or NULL
  // a load replaced (not NULL), e.g. by a lane of a vector local
  LExpr *(*load)(struct GpuSubst *s, const LExpr *e);
  void *ctx;
} GpuSubst;
LExpr *gpu_subst_expr(GpuBuild *g, const LExpr *e, GpuSubst *s);
LStmt *gpu_subst_stmt(GpuBuild *g, const LStmt *st, GpuSubst *s);

// ---- the schedules ----
// gpu_row.c: the kernel's outer independent loops (rows[0..nrows)) as rows of a warp
// or of a block, the row's statements `row` split and reduced across its threads;
// false (nothing built) when no statement of the row has work to split.
bool gpu_rows(GpuBuild *g, const LStmt *const *rows, int nrows, const LStmtList *row);
// matmul_gpu.c: the kernel's LM_DOT matmul as tiles; false when it does not apply.
bool gpu_matmul(GpuBuild *g);
// attn_gpu.c: the kernel's attention as a flash kernel; false when it does not apply.
bool gpu_attn(GpuBuild *g);
// scan_gpu.c: a scan kernel's long rows (LKernel.scan) each on a block; false when it
// does not apply.
bool gpu_scan(GpuBuild *g, const LStmt *const *rows, int nrows, const LStmtList *row);

#endif
