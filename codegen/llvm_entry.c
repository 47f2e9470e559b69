// codegen/llvm_entry.c: the CPU module of the LLVM backend (llvm_build_module): per
// program its kernels (llvm_kernel.c), then the entry with the C ABI of DESIGN.md,
// `int NAME(const tdsl_tensor *x, ..., tdsl_tensor *out0, ...)`, what c.c prints as
// C: the static tables of runtime/entry.c (the ones c.c emits), tdsl_entry_begin
// (which checks the arguments' dtypes and shapes, makes contiguous copies and
// allocates the results), the kernels in order while each returns 0, then
// tdsl_entry_end. With run wrappers, also the packed caller `tdslc run` uses.
//
// Invariants: every name the module defines begins with tdsl_g_ except the entries;
// the only runtime functions it calls are those of llvm_runtime_names.
#include "codegen/llvm_internal.h"

#include <string.h>

// The runtime functions a module may call; the JIT must be given each of them.
const char *const llvm_runtime_names[] = {
    "tdsl_entry_begin",        "tdsl_entry_end",          "tdsl_entry_kernel_error", "tdsl_tensor_data",
    "tdsl_parallel_for",       "tdsl_kernel_error_raise", "tdsl_kernel_error_seal",  "tdsl_scratch",
    "tdsl_prof_mark",          "tdsl_stream_begin",       "tdsl_stream_end",
    NULL,
};

static LLVMValueRef dims_const(LlvmModuleGen *g, int n, const int64_t *xs) {
  LLVMValueRef v[TD_MAX_DIMS];
  for (int i = 0; i < TD_MAX_DIMS; i++)
    v[i] = ci(g->i64, i < n ? xs[i] : 0);
  return LLVMConstArray(g->i64, v, TD_MAX_DIMS);
}

// A private constant array of n structs (each already a constant), as an i8*; NULL if n is 0.
static LLVMValueRef table_const(LlvmModuleGen *g, const char *name, LLVMValueRef *elems, int n) {
  if (n == 0)
    return LLVMConstPointerNull(g->i8p);
  LLVMValueRef gv = llvm_private_const(g, name, LLVMConstArray(LLVMTypeOf(elems[0]), elems, (unsigned)n));
  return LLVMConstBitCast(gv, g->i8p);
}

// The static tables of runtime/entry.c, as c.c emits them; returns &info as an i8*.
static LLVMValueRef entry_tables(LlvmModuleGen *g, const LProgram *p) {
  Arena *ar = &g->cx->arena;
  const char *fn = p->name;
  int np = p->params.len, nb = p->bufs.len, no = p->outputs.len;
  LLVMValueRef *ps = arena_alloc(ar, sizeof *ps * (size_t)(np + 1));
  for (int i = 0; i < np; i++) {  // {name, dtype, ndim, shape, mut, buf}
    const LParam *q = &p->params.data[i];
    LLVMValueRef f[] = {llvm_cstring(g, q->name), ci(g->i32, q->dtype), ci(g->i32, q->ndim),
                        dims_const(g, q->ndim, q->shape), ci(g->i32, q->mut), ci(g->i32, q->buf)};
    ps[i] = LLVMConstStructInContext(g->lc, f, 6, 0);
  }
  LLVMValueRef *bs = arena_alloc(ar, sizeof *bs * (size_t)(nb + 1));
  for (int i = 0; i < nb; i++) {  // {dtype, numel, param}
    const LBuf *lb = &p->bufs.data[i];
    LLVMValueRef f[] = {ci(g->i32, lb->dtype), ci(g->i64, lb->scratch ? 0 : lb->numel),  // (scratch: tdsl_scratch)
                        ci(g->i32, lb->kind == LB_PARAM ? lb->param : -1)};
    bs[i] = LLVMConstStructInContext(g->lc, f, 3, 0);
  }
  LLVMValueRef *os = arena_alloc(ar, sizeof *os * (size_t)(no + 1));
  for (int k = 0; k < no; k++) {  // {buf, ndim, shape, strides, offset, complex}
    const LOutput *o = &p->outputs.data[k];
    LLVMValueRef f[] = {ci(g->i32, o->buf), ci(g->i32, o->view.ndim), dims_const(g, o->view.ndim, o->view.shape),
                        dims_const(g, o->view.ndim, o->view.strides), ci(g->i64, o->view.offset),
                        ci(g->i32, dtype_is_complex(o->dtype))};
    os[k] = LLVMConstStructInContext(g->lc, f, 6, 0);
  }
  LLVMValueRef info[] = {llvm_cstring(g, fn),
                         ci(g->i32, np),
                         table_const(g, arena_printf(ar, "tdsl_g_%s_params", fn), ps, np),
                         ci(g->i32, nb),
                         table_const(g, arena_printf(ar, "tdsl_g_%s_bufs", fn), bs, nb),
                         ci(g->i32, no),
                         table_const(g, arena_printf(ar, "tdsl_g_%s_outputs", fn), os, no)};
  LLVMValueRef gv =
      llvm_private_const(g, arena_printf(ar, "tdsl_g_%s_info", fn), LLVMConstStructInContext(g->lc, info, 7, 0));
  return LLVMConstBitCast(gv, g->i8p);
}

// A local array of n values of type t (NULL as an i8* when n is 0), filled with vals.
static LLVMValueRef local_array(LlvmModuleGen *g, LLVMTypeRef t, LLVMValueRef *vals, int n) {
  if (n == 0)
    return LLVMConstPointerNull(g->i8p);
  LLVMTypeRef at = LLVMArrayType(t, (unsigned)n);
  LLVMValueRef a = LLVMBuildAlloca(g->b, at, "");
  for (int i = 0; vals && i < n; i++) {
    LLVMValueRef idx[2] = {ci(g->i64, 0), ci(g->i64, i)};
    LLVMBuildStore(g->b, vals[i], LLVMBuildInBoundsGEP2(g->b, at, a, idx, 2, ""));
  }
  return LLVMBuildBitCast(g->b, a, g->i8p, "");
}

// The C ABI type of a scalar parameter: double, int64_t, bool (i1 zeroext, as clang passes it).
static LLVMTypeRef scalar_abi_type(LlvmModuleGen *g, DType dt) {
  return dt == DT_F64 ? g->f64 : dt == DT_I64 ? g->i64 : g->i1;
}

// A scalar argument v as c.c's entry wraps it: a 0-d tensor over a storage on the
// stack holding the value ({refcount 1, &value, size, host}); returns the tensor's address.
static LLVMValueRef scalar_tensor(LlvmModuleGen *g, DType dt, LLVMValueRef v) {
  LLVMBuilderRef b = g->b;
  LLVMTypeRef vt = dt == DT_BOOL ? g->i8 : scalar_abi_type(g, dt);
  LLVMValueRef slot = LLVMBuildAlloca(b, vt, "");
  LLVMBuildStore(b, dt == DT_BOOL ? LLVMBuildZExt(b, v, g->i8, "") : v, slot);
  LLVMTypeRef sf[] = {g->i64, g->i8p, g->i64, g->i32};
  LLVMTypeRef st = LLVMStructTypeInContext(g->lc, sf, 4, 0);
  LLVMValueRef sv = LLVMBuildAlloca(b, st, "");
  LLVMValueRef fields[] = {ci(g->i64, 1), LLVMBuildBitCast(b, slot, g->i8p, ""), ci(g->i64, dtype_size(dt)),
                           ci(g->i32, 0)};
  for (unsigned f = 0; f < 4; f++)
    LLVMBuildStore(b, fields[f], LLVMBuildStructGEP2(b, st, sv, f, ""));
  LLVMValueRef t = LLVMBuildAlloca(b, g->tensor, "");
  LLVMBuildStore(b, LLVMConstNull(g->tensor), t);
  LLVMBuildStore(b, LLVMBuildBitCast(b, sv, g->i8p, ""), LLVMBuildStructGEP2(b, g->tensor, t, 0, ""));
  LLVMBuildStore(b, ci(g->i32, dt), LLVMBuildStructGEP2(b, g->tensor, t, 1, ""));
  return t;
}

// bench --profile (LProgram.profile): tdsl_prof_mark(k) before kernel k and after the
// last one (k == the kernel count), as c.c's entry; nothing in an ordinary build.
static void prof_mark(LlvmModuleGen *g, const LProgram *p, int k) {
  if (!p->profile)
    return;
  LLVMTypeRef t[] = {g->i32};
  LLVMValueRef a[] = {ci(g->i32, k)};
  llvm_call(g, "tdsl_prof_mark", g->vd, t, 1, a);
}

// The kernel calls of an entry: each kernel's rc goes to `done` (its phi: rcs from
// blocks `from`) unless it is 0. A run of calls repeated on the same buffers, further
// into them each time (emit_find_run: a model's layers), is built once, in a loop.
typedef struct EntryCalls {
  LlvmModuleGen *g;
  const LProgram *p;
  LLVMValueRef *kernels, *data;  // each kernel's function; each buffer's data
  LLVMBasicBlockRef done;
  LLVMValueRef *rcs;
  LLVMBasicBlockRef *from;
  int nrc;
} EntryCalls;

// rc = kernel ki (its arguments' starts advanced by step * l, l the loop index, when
// `next` is the call one period later; else l is NULL); on to a new block when rc is 0.
static void entry_call(EntryCalls *ec, int ki, int next, LLVMValueRef l) {
  LlvmModuleGen *g = ec->g;
  const LProgram *p = ec->p;
  const LKernel *k = p->kernels.data[ki];
  LLVMBuilderRef b = g->b;
  Arena *ar = &g->cx->arena;
  if (!l)
    prof_mark(g, p, ki);
  LLVMValueRef *ka = arena_alloc(ar, sizeof *ka * (size_t)(k->args.len + 1));
  LLVMTypeRef *kt = arena_alloc(ar, sizeof *kt * (size_t)(k->args.len + 1));
  int na = 0;
  for (int a = 0; a < k->args.len; a++) {
    const LArg *arg = &k->args.data[a];
    if (p->bufs.data[arg->buf].scratch)
      continue;  // the kernel asks tdsl_scratch for it
    LLVMTypeRef et = stype(g, p->bufs.data[arg->buf].dtype);
    kt[na] = LLVMPointerType(et, 0);
    ka[na] = LLVMBuildBitCast(b, ec->data[arg->buf], kt[na], "");
    int64_t step = l ? p->kernels.data[next]->args.data[a].at - arg->at : 0;
    if (arg->at || step) {  // share_kernels: the kernel sees the buffer from element `at` on
      LLVMValueRef off = ci(g->i64, arg->at);
      if (step)
        off = LLVMBuildAdd(b, off, LLVMBuildMul(b, l, ci(g->i64, step), ""), "");
      ka[na] = LLVMBuildInBoundsGEP2(b, et, ka[na], &off, 1, "");
    }
    na++;
  }
  LLVMTypeRef ft = LLVMFunctionType(g->i32, kt, (unsigned)na, 0);
  LLVMValueRef rc = LLVMBuildCall2(b, ft, ec->kernels[ki], ka, (unsigned)na, "");
  LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(g->lc, LLVMGetBasicBlockParent(ec->done), "kernel");
  LLVMMoveBasicBlockBefore(ok, ec->done);
  ec->rcs[ec->nrc] = rc, ec->from[ec->nrc++] = LLVMGetInsertBlock(b);
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, rc, ci(g->i32, 0), ""), ok, ec->done);
  LLVMPositionBuilderAtEnd(b, ok);
}

// Kernels [lo, hi): c.c's emit_calls.
static void entry_calls(EntryCalls *ec, int lo, int hi) {
  if (lo >= hi)
    return;
  LlvmModuleGen *g = ec->g;
  LLVMBuilderRef b = g->b;
  int s, per, r;
  emit_find_run(ec->p, lo, hi, &s, &per, &r);
  if (r < 2 || ec->p->profile) {  // (a profile times each call: none rolled)
    for (int i = lo; i < hi; i++)
      entry_call(ec, i, -1, NULL);
    return;
  }
  entry_calls(ec, lo, s);
  LLVMValueRef fn = LLVMGetBasicBlockParent(ec->done);
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(b), head = LLVMAppendBasicBlockInContext(g->lc, fn, "layer");
  LLVMMoveBasicBlockBefore(head, ec->done);
  LLVMBuildBr(b, head);
  LLVMPositionBuilderAtEnd(b, head);
  LLVMValueRef l = LLVMBuildPhi(b, g->i64, "l");
  for (int q = 0; q < per; q++)
    entry_call(ec, s + q, s + per + q, l);
  LLVMValueRef l1 = LLVMBuildAdd(b, l, ci(g->i64, 1), "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(b), after = LLVMAppendBasicBlockInContext(g->lc, fn, "after");
  LLVMMoveBasicBlockBefore(after, ec->done);
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, l1, ci(g->i64, r), ""), head, after);
  LLVMValueRef inc[] = {ci(g->i64, 0), l1};
  LLVMBasicBlockRef inb[] = {pre, latch};
  LLVMAddIncoming(l, inc, inb, 2);
  LLVMPositionBuilderAtEnd(b, after);
  entry_calls(ec, s + r * per, hi);
}

// int NAME(const tdsl_tensor *x, ..., double eps, ..., tdsl_tensor *out0, ...): c.c's entry.
static LLVMValueRef build_entry(LlvmModuleGen *g, const LProgram *p, LLVMValueRef *kernels) {
  Arena *ar = &g->cx->arena;
  int np = p->params.len, nb = p->bufs.len, no = p->outputs.len;
  LLVMValueRef info = entry_tables(g, p);
  LLVMTypeRef *pt = arena_alloc(ar, sizeof *pt * (size_t)(np + no + 1));
  for (int i = 0; i < np + no; i++)
    pt[i] = i < np && p->params.data[i].scalar ? scalar_abi_type(g, p->params.data[i].dtype) : g->tensorp;
  LLVMValueRef fn = LLVMAddFunction(g->m, p->name, LLVMFunctionType(g->i32, pt, (unsigned)(np + no), 0));
  llvm_add_attr(g, fn, LLVMAttributeFunctionIndex, "nounwind");
  for (int i = 0; i < np; i++)
    if (p->params.data[i].scalar && p->params.data[i].dtype == DT_BOOL)
      llvm_add_attr(g, fn, (LLVMAttributeIndex)(i + 1), "zeroext");
  LLVMValueRef *pv = arena_alloc(ar, sizeof *pv * (size_t)(np + no + 1));
  for (int i = 0; i < np + no; i++) {
    pv[i] = LLVMGetParam(fn, (unsigned)i);
    const char *n = i < np ? p->params.data[i].name : arena_printf(ar, "out%d", i - np);
    LLVMSetValueName2(pv[i], n, strlen(n));
  }
  LLVMBuilderRef b = g->b;
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(g->lc, fn, "entry");
  LLVMBasicBlockRef run = LLVMAppendBasicBlockInContext(g->lc, fn, "run");
  LLVMBasicBlockRef fail = LLVMAppendBasicBlockInContext(g->lc, fn, "fail");
  LLVMPositionBuilderAtEnd(b, entry);
  LLVMValueRef *av = arena_alloc(ar, sizeof *av * (size_t)(np + 1));
  for (int i = 0; i < np; i++)
    av[i] = p->params.data[i].scalar ? scalar_tensor(g, p->params.data[i].dtype, pv[i]) : pv[i];
  LLVMValueRef args = local_array(g, g->tensorp, av, np);
  LLVMValueRef outs = local_array(g, g->tensorp, pv + np, no);
  LLVMValueRef bufs = nb ? LLVMBuildAlloca(b, LLVMArrayType(g->tensor, (unsigned)nb), "") : NULL;
  LLVMValueRef bufp = bufs ? LLVMBuildBitCast(b, bufs, g->i8p, "") : LLVMConstPointerNull(g->i8p);
  LLVMTypeRef bt[] = {g->i8p, g->i8p, g->i8p, g->i8p, g->i32};
  LLVMValueRef ba[] = {info, args, outs, bufp};
  LLVMValueRef rc = llvm_call(g, "tdsl_entry_begin", g->i32, bt, 4, ba);
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntNE, rc, ci(g->i32, 0), ""), fail, run);
  LLVMPositionBuilderAtEnd(b, fail);
  LLVMBuildRet(b, rc);
  // each buffer's data, once; then rc = k0(...); if (rc == 0) rc = k1(...); ... (entry_calls)
  LLVMPositionBuilderAtEnd(b, run);
  LLVMValueRef *data = arena_alloc(ar, sizeof *data * (size_t)(nb + 1));
  for (int i = 0; i < nb && p->kernels.len; i++) {
    LLVMValueRef at[2] = {ci(g->i64, 0), ci(g->i64, i)};
    LLVMValueRef t = LLVMBuildInBoundsGEP2(b, LLVMArrayType(g->tensor, (unsigned)nb), bufs, at, 2, "");
    LLVMTypeRef dt[] = {g->tensorp};
    data[i] = llvm_call(g, "tdsl_tensor_data", g->i8p, dt, 1, &t);
  }
  EntryCalls ec = {.g = g, .p = p, .kernels = kernels, .data = data};
  ec.done = LLVMAppendBasicBlockInContext(g->lc, fn, "done");
  ec.rcs = arena_alloc(ar, sizeof *ec.rcs * (size_t)(p->kernels.len + 1));
  ec.from = arena_alloc(ar, sizeof *ec.from * (size_t)(p->kernels.len + 1));
  entry_calls(&ec, 0, p->kernels.len);
  prof_mark(g, p, p->kernels.len);
  ec.rcs[ec.nrc] = ci(g->i32, 0), ec.from[ec.nrc++] = LLVMGetInsertBlock(b);
  LLVMBuildBr(b, ec.done);
  LLVMPositionBuilderAtEnd(b, ec.done);
  LLVMValueRef phi = LLVMBuildPhi(b, g->i32, "rc");
  LLVMAddIncoming(phi, ec.rcs, ec.from, (unsigned)ec.nrc);
  LLVMValueRef ea[] = {info, args, outs, bufp, phi};
  LLVMBuildRet(b, llvm_call(g, "tdsl_entry_end", g->i32, bt, 5, ea));
  return fn;
}

// int tdsl_g_run_NAME(const tdsl_tensor *const *args, tdsl_tensor *outs): the packed caller.
static void build_run_wrapper(LlvmModuleGen *g, const LProgram *p, LLVMValueRef entry) {
  Arena *ar = &g->cx->arena;
  int np = p->params.len, no = p->outputs.len;
  LLVMTypeRef pt[] = {LLVMPointerType(g->tensorp, 0), g->tensorp};
  LLVMValueRef fn =
      LLVMAddFunction(g->m, arena_printf(ar, "tdsl_g_run_%s", p->name), LLVMFunctionType(g->i32, pt, 2, 0));
  llvm_add_attr(g, fn, LLVMAttributeFunctionIndex, "nounwind");
  LLVMBuilderRef b = g->b;
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(g->lc, fn, "entry"));
  LLVMValueRef *a = arena_alloc(ar, sizeof *a * (size_t)(np + no + 1));
  LLVMTypeRef *at = arena_alloc(ar, sizeof *at * (size_t)(np + no + 1));
  for (int i = 0; i < np; i++) {
    LLVMValueRef ix = ci(g->i64, i);
    a[i] = LLVMBuildLoad2(b, g->tensorp, LLVMBuildInBoundsGEP2(b, g->tensorp, LLVMGetParam(fn, 0), &ix, 1, ""), "");
    at[i] = g->tensorp;
    const LParam *q = &p->params.data[i];
    if (q->scalar) {  // run.c's 0-d tensor: its value, by value
      LLVMTypeRef dt[] = {g->tensorp};
      LLVMValueRef data = llvm_call(g, "tdsl_tensor_data", g->i8p, dt, 1, &a[i]);
      LLVMTypeRef vt = q->dtype == DT_BOOL ? g->i8 : scalar_abi_type(g, q->dtype);
      a[i] = LLVMBuildLoad2(b, vt, LLVMBuildBitCast(b, data, LLVMPointerType(vt, 0), ""), "");
      if (q->dtype == DT_BOOL)
        a[i] = LLVMBuildTrunc(b, a[i], g->i1, "");
      at[i] = scalar_abi_type(g, q->dtype);
    }
  }
  for (int k = 0; k < no; k++) {
    LLVMValueRef ix = ci(g->i64, k);
    a[np + k] = LLVMBuildInBoundsGEP2(b, g->tensor, LLVMGetParam(fn, 1), &ix, 1, "");
    at[np + k] = g->tensorp;
  }
  LLVMBuildRet(b, LLVMBuildCall2(b, LLVMFunctionType(g->i32, at, (unsigned)(np + no), 0), entry, a,
                                 (unsigned)(np + no), ""));
}

struct LLVMOpaqueModule *llvm_build_module(Ctx *cx, struct LLVMOpaqueContext *lc, LProgram *const *progs, int nprogs,
                                           const char *triple, const char *data_layout, bool run_wrappers) {
  LlvmModuleGen g;
  llvm_module_begin(&g, cx, lc, progs, nprogs, triple, data_layout, false);
  g.b = LLVMCreateBuilderInContext(lc);
  for (int i = 0; i < nprogs; i++) {
    const LProgram *p = progs[i];
    LLVMValueRef *ks = arena_alloc(&cx->arena, sizeof *ks * (size_t)(p->kernels.len + 1));
    for (int f = 0; f < p->funcs.len; f++)  // the functions its kernels call, first
      llvm_build_func(&g, p->funcs.data[f]);
    for (int k = 0; k < p->kernels.len; k++) {
      int j = emit_kernel_code(p, k);  // an earlier kernel with its code (share_kernels), or k
      ks[k] = j == k ? llvm_build_kernel(&g, p, k) : ks[j];
    }
    LLVMValueRef entry = build_entry(&g, p, ks);
    if (run_wrappers)
      build_run_wrapper(&g, p, entry);
  }
  LLVMDisposeBuilder(g.b);
  return g.m;
}
