// codegen/llvm_internal.h: what the files of the LLVM backend share, and nothing
// else includes: the builder states (one per module, one per kernel being built),
// the small type and constant helpers every builder uses, and the prototypes of
// each file, grouped by file (QBE all.h). The backend's files and what they hold:
//   llvm_expr.c    module-wide declarations and constants, f16/bf16 bit arithmetic,
//                  casts, scalar and vector expressions, loads and stored values
//   llvm_kernel.c  statements, counted loops, outlined parallel loops, streaming
//                  stores, and the CPU kernel function
//   llvm_entry.c   the CPU entry with the C ABI (its tables, the kernels' calls), the
//                  packed run wrappers, and llvm_build_module
//   llvm_gpu.c     the GPU mode for ptx.c: the device error record, the NVVM plan
//                  of the GPU schedule (ir/sched_gpu.c) built over the threads, and
//                  llvm_build_gpu_module
//   llvm_target.c  LLVM plumbing shared with ptx.c: messages, target machines, the
//                  data layout, verification, the pass pipeline, code emission
//   llvm_emit.c    the host: its TargetMachine, optimisation, .ll/.s/.o, the ORC
//                  JIT, and target_llvm
//   llvm_fatal.c   LLVM's fatal errors turned into internal errors (exit status 4)
// Only these files and ptx.c include llvm-c/*. Shared functions are named llvm_<verb>;
// the rest of each file is static. The invariants of the generated code are stated
// in llvm_expr.c (values), llvm_kernel.c (loops, errors, parallel bodies) and
// llvm_gpu.c (threads).
#ifndef TDSLC_CODEGEN_LLVM_INTERNAL_H
#define TDSLC_CODEGEN_LLVM_INTERNAL_H

#include "codegen/llvm.h"

#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/TargetMachine.h>

typedef struct LlvmModuleGen LlvmModuleGen;
typedef struct LlvmKernelGen LlvmKernelGen;

// The module being built: its types and runtime declarations.
struct LlvmModuleGen {
  Ctx *cx;
  LLVMContextRef lc;
  LLVMModuleRef m;
  LLVMBuilderRef b;
  LLVMTypeRef i1, i8, i16, i32, i64, f32, f64, vd, i8p;
  LLVMTypeRef tensor, tensorp, err, errp;
  LLVMTypeRef range_fn;  // void (i8*, i64, i64)
  LLVMValueRef ipow[DT_COUNT];
  bool gpu;                // the GPU mode (llvm_build_gpu_module): libdevice math, device error record
  LLVMTypeRef gerr, gerrp;  // GPU: tdsl_gpu_error {flag, k, value}
};

// The kernel (or outlined parallel body) being built.
struct LlvmKernelGen {
  LlvmModuleGen *g;
  const LProgram *p;
  const LKernel *k;
  const char *kname;     // "tdsl_g_<fn>_<k>"
  LLVMValueRef fn;       // the function being built
  LLVMValueRef *args;    // per kernel arg: a typed pointer
  LLVMValueRef *scalars; // a function (LProgram.funcs): its i64 scalar parameters
  LLVMValueRef *vars;    // per loop variable: its i64 value where bound, else NULL
  int *depth;            // per loop variable: how many loops enclose its own (shared with outlined bodies)
  int level;             // the loops enclosing the statement being built
  LLVMValueRef *locals;  // per local: an alloca in fn
  int *lanes;            // per local: its lanes (loop_local_lanes)
  LLVMValueRef errp;     // the error record, NULL when nothing raises
  LLVMValueRef iter;     // the parallel loop's iteration inside an outlined body, else NULL
  bool has_err;
  int npar;              // outlined bodies so far
};

// ---- types and constants ----
// The type a value of dt is carried in.
static inline LLVMTypeRef vtype(const LlvmModuleGen *g, DType dt) {
  switch (dt) {
  case DT_BOOL: return g->i1;
  case DT_U8:
  case DT_I8: return g->i8;
  case DT_I16: return g->i16;
  case DT_I32: return g->i32;
  case DT_I64: return g->i64;
  case DT_F16:
  case DT_BF16:
  case DT_F32: return g->f32;
  case DT_F64: return g->f64;
  case DT_C64:  // complex values are float pairs in the graph: never a kernel's
  case DT_C128:
  case DT_COUNT: break;
  }
  td_unreachable();
}

// The type an element of a dt buffer is stored as.
static inline LLVMTypeRef stype(const LlvmModuleGen *g, DType dt) {
  switch (dt) {
  case DT_BOOL: return g->i8;
  case DT_F16:
  case DT_BF16: return g->i16;
  default: return vtype(g, dt);
  }
}

// A value of dt in `lanes` lanes: vtype, or <lanes x vtype>.
static inline LLVMTypeRef lanes_type(const LlvmModuleGen *g, DType dt, int lanes) {
  LLVMTypeRef t = vtype(g, dt);
  return lanes > 1 ? LLVMVectorType(t, (unsigned)lanes) : t;
}

static inline LLVMValueRef ci(LLVMTypeRef t, int64_t v) { return LLVMConstInt(t, (unsigned long long)v, v < 0); }
static inline LLVMValueRef cf(LLVMTypeRef t, double v) { return LLVMConstReal(t, v); }

// Internal, and its address is never compared: mergefunc may replace the function
// by an identical one everywhere (the kernels of repeated layers are the same code).
static inline void set_internal(LLVMValueRef fn) {
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  LLVMSetUnnamedAddress(fn, LLVMGlobalUnnamedAddr);
}

// ---- the kernel being built ----
static inline LLVMBasicBlockRef new_block(LlvmKernelGen *c, const char *name) {
  return LLVMAppendBasicBlockInContext(c->g->lc, c->fn, name);
}

// An LS_IF: its body, walked by the backend's statement walker, runs when cond holds.
static inline void build_if(LlvmKernelGen *c, const LStmt *s, LLVMValueRef cond,
                            void (*walk)(LlvmKernelGen *, const LStmtList *)) {
  LLVMBuilderRef b = c->g->b;
  LLVMBasicBlockRef then = new_block(c, "then"), cont = new_block(c, "endif");
  LLVMBuildCondBr(b, cond, then, cont);
  LLVMPositionBuilderAtEnd(b, then);
  walk(c, &s->body);
  LLVMMoveBasicBlockAfter(cont, LLVMGetInsertBlock(b));
  LLVMBuildBr(b, cont);
  LLVMPositionBuilderAtEnd(b, cont);
}

static inline DType arg_dtype(const LlvmKernelGen *c, int arg) {
  TD_ASSERT(arg >= 0 && arg < c->k->args.len);
  return c->p->bufs.data[c->k->args.data[arg].buf].dtype;
}

static inline LLVMTypeRef arg_ptr_type(const LlvmKernelGen *c, int arg) {
  return LLVMPointerType(stype(c->g, arg_dtype(c, arg)), 0);
}

// The type local l is carried in: its dtype's, in its lanes.
static inline LLVMTypeRef local_type(const LlvmKernelGen *c, int l) {
  return lanes_type(c->g, c->k->locals.data[l], c->lanes[l]);
}

// ---- llvm_expr.c ----
// g's types and an empty module named after the first program's file, with triple
// and data_layout when given; the caller creates g->b. gpu: the GPU mode.
void llvm_module_begin(LlvmModuleGen *g, Ctx *cx, LLVMContextRef lc, LProgram *const *progs, int nprogs,
                       const char *triple, const char *data_layout, bool gpu);
void llvm_add_attr(LlvmModuleGen *g, LLVMValueRef fn, LLVMAttributeIndex at, const char *name);
void llvm_no_ldexp(LlvmModuleGen *g, const LKernel *k, LLVMValueRef fn);  // see llvm_expr.c
// A call of the function `name` (declared nounwind on first use).
LLVMValueRef llvm_call(LlvmModuleGen *g, const char *name, LLVMTypeRef ret, LLVMTypeRef *pt, int np,
                       LLVMValueRef *args);
// A private constant global string; returns an i8* to its first byte.
LLVMValueRef llvm_cstring(LlvmModuleGen *g, const char *s);
LLVMValueRef llvm_private_const(LlvmModuleGen *g, const char *name, LLVMValueRef init);
// v of dtype from converted as c.c's casts do.
LLVMValueRef llvm_cast(LlvmModuleGen *g, LLVMValueRef v, DType from, DType to);
LLVMValueRef llvm_expr(LlvmKernelGen *c, const LExpr *e);
// &arg[ix]; as a pointer to `lanes` consecutive elements, with their alignment in *align.
LLVMValueRef llvm_elem_ptr(LlvmKernelGen *c, int arg, const LIndex *ix);
LLVMValueRef llvm_vec_ptr(LlvmKernelGen *c, int arg, const LIndex *ix, int lanes, unsigned *align);
// The value val (of dtype vt) as an element of a bt buffer.
LLVMValueRef llvm_store_value(LlvmKernelGen *c, DType vt, DType bt, const LExpr *val);

// ---- llvm_kernel.c ----
// c for kernel ki of p: its name and whether it raises, nothing built yet. Then, with
// the builder in the entry block of c->fn, llvm_kernel_locals: no loop variable bound
// yet, and an alloca per local.
void llvm_kernel_begin(LlvmKernelGen *c, LlvmModuleGen *g, const LProgram *p, int ki);
void llvm_kernel_locals(LlvmKernelGen *c);
// Marks the pointer parameters [first, first + nargs) of fn noalias nocapture, and
// readonly where the kernel never writes through them.
void llvm_pointer_attrs(LlvmKernelGen *c, LLVMValueRef fn, int first);
void llvm_stmt(LlvmKernelGen *c, const LStmt *s);
void llvm_stmts(LlvmKernelGen *c, const LStmtList *l);
// Marks in read the locals e (or the statements of l) read, in let those l declares.
void llvm_scan_locals_expr(const LExpr *e, bool *read);
void llvm_scan_locals(const LStmtList *l, bool *read, bool *let);
// static int tdsl_g_<fn>_<k>(noalias pointers): the loops, then the first error.
LLVMValueRef llvm_build_kernel(LlvmModuleGen *g, const LProgram *p, int ki);
// A function of LProgram.funcs: void tdsl_g_<fn>_f<N>(noalias pointers, i64 scalars).
LLVMValueRef llvm_build_func(LlvmModuleGen *g, const LProgram *fp);
// After optimisation: the tagged vector stores that may stream get !nontemporal.
void llvm_mark_streams(LLVMContextRef lc, LLVMModuleRef m);

// ---- llvm_gpu.c ----
// Error err with value (an i64) recorded in the device error record.
void llvm_gpu_raise(LlvmKernelGen *c, int err, LLVMValueRef value);
// The GPU form's expressions (ir/loop.h): LX_SHFL, LX_IDIV, LX_INSERT and vector loads.
LLVMValueRef llvm_gpu_expr(LlvmKernelGen *c, const LExpr *e);

// ---- llvm_target.c (shared with ptx.c) ----
// "context: message" in the arena; the LLVM message is disposed here.
const char *llvm_message(Ctx *cx, const char *context, char *msg);
// "context: message" of e, which is consumed.
const char *llvm_error_message(Ctx *cx, const char *context, LLVMErrorRef e);
int llvm_opt_level(int opt);  // -O clamped to 0..3
LLVMCodeGenOptLevel llvm_codegen_level(int opt);
// The target of triple in *t; NULL, else "context: <LLVM's message>".
const char *llvm_lookup_target(Ctx *cx, const char *triple, const char *context, LLVMTargetRef *t);
// The data layout of tm, in the arena.
const char *llvm_data_layout(Ctx *cx, LLVMTargetMachineRef tm);
// NULL if m verifies, else "context: <LLVM's message>".
const char *llvm_verify(Ctx *cx, LLVMModuleRef m, const char *context);
// Runs passes (NULL: default<O{opt}>) over m for tm with loop unrolling from -O2 on,
// and with set_vectorizers also loop and SLP vectorization and interleaving (else
// LLVM's defaults); NULL, else "context: <LLVM's message>".
const char *llvm_run_passes(Ctx *cx, LLVMModuleRef m, LLVMTargetMachineRef tm, const char *passes, int opt,
                            bool set_vectorizers, const char *context);
// m as assembly or an object for tm: *text (in the arena, NUL-terminated) and *len;
// NULL, else "context: <LLVM's message>".
const char *llvm_emit_code(Ctx *cx, LLVMTargetMachineRef tm, LLVMModuleRef m, LLVMCodeGenFileType kind,
                           const char *context, const char **text, size_t *len);

// ---- llvm_fatal.c ----
// From now on an LLVM fatal error is an internal error (exit status 4, LLVM's reason
// printed), never abort(). Idempotent; llvm_lookup_target calls it.
void llvm_fatal_install(void);

#endif
