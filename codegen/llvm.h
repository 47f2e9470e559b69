// codegen/llvm.h: the LLVM backend (codegen/llvm_*.c) beyond its Target: emitting
// LLVM IR, assembly or an object for a CPU, and running programs in-process
// through ORC LLJIT. Only llvm_*.c (and ptx.c) include llvm-c/*; this header names
// LLVM's types only as incomplete structs, so its users never see LLVM.
//
// Every function that can fail returns NULL on success, else the message
// "<context>: <LLVM's message>" in cx->arena (the driver prints it as an internal
// error, exit status 4). Nothing LLVM made outlives a call but an open LlvmJit (llvm_jit_open).
#ifndef TDSLC_CODEGEN_LLVM_H
#define TDSLC_CODEGEN_LLVM_H

#include "codegen/codegen.h"

struct LLVMOpaqueContext;
struct LLVMOpaqueModule;

typedef enum { LLVM_OUT_IR, LLVM_OUT_ASM, LLVM_OUT_OBJ } LlvmOut;

typedef struct LlvmOptions {
  int opt;          // 0..3 (the driver's -O, default 2): 2 is llvm_emit.c's pipeline, else default<On>
  const char *cpu;  // NULL: the host CPU with its features; else this CPU, features ""
  // Per-stage timing (--time): called after each stage ("llvm-build", ...); may be NULL.
  void (*lap)(void *ctx, const char *stage);
  void *lap_ctx;
} LlvmOptions;

// A symbol the JIT-ed code may call, at its address in this process.
typedef struct LlvmSymbol {
  const char *name;
  void (*addr)(void);
} LlvmSymbol;

// Builds the module of progs in lc (no verification, no optimisation): per program
// its kernels (internal), the outlined bodies of parallel loops, the entry tables
// and the entry `int NAME(const tdsl_tensor *, ..., tdsl_tensor *out0, ...)`. With
// run_wrappers, also `int tdsl_g_run_NAME(const tdsl_tensor *const *args,
// tdsl_tensor *outs)` per program, the packed caller `tdslc run` uses.
struct LLVMOpaqueModule *llvm_build_module(Ctx *cx, struct LLVMOpaqueContext *lc, LProgram *const *progs, int nprogs,
                                           const char *triple, const char *data_layout, bool run_wrappers);

// The GPU mode, for codegen/ptx.c (triple nvptx64-nvidia-cuda): per kernel of every
// program, in order, `void tdsl_g_<fn>_<k>(tdsl_gpu_error *err, T0 *b0, ...)` (the
// convention of codegen.h; err is {int flag; int k; long long value}, flag set from
// 0 to 1 by cmpxchg by the first raise, which then writes k and value), listed in
// !nvvm.annotations as a kernel of its schedule's block size; nothing else but what
// the kernels call: libdevice's __nv_* declarations for math (the caller links
// libdevice) and internal helpers. No entries, no runtime calls. Each kernel is the GPU
// form of its loop IR (ir/sched_gpu.c), built statement for statement as codegen/cuda.c
// prints it; its launch is LKernel.gpu's. A kernel with an earlier one's code
// (LKernel.same) is not built again: it launches that one's. No verification, no
// optimisation.
struct LLVMOpaqueModule *llvm_build_gpu_module(Ctx *cx, struct LLVMOpaqueContext *lc, LProgram *const *progs,
                                               int nprogs, const char *triple, const char *data_layout);

// --emit=llvm|asm|obj: build, verify, optimise and write (a .ll text after
// optimisation, assembly, or a relocatable object) to out.
const char *llvm_emit(Ctx *cx, LProgram *const *progs, int nprogs, const LlvmOptions *o, LlvmOut kind, FILE *out);

// `tdslc run`: builds, verifies and optimises progs for the host (with the packed
// callers), adds them to a new ORC LLJIT whose main JITDylib defines exactly
// rt[0..nrt) (the runtime's functions, llvm_runtime_names) plus the libm and libc
// functions generated code may call, at their addresses in this process; looks up
// names[0..nnames) (compiling them) and calls use(ctx, their addresses), whose
// result goes to *use_rc; then disposes of the JIT. use is not called on failure.
const char *llvm_jit_run(Ctx *cx, LProgram *const *progs, int nprogs, const LlvmOptions *o, const LlvmSymbol *rt,
                         int nrt, const char *const *names, int nnames, int (*use)(void *ctx, void *const *addrs),
                         void *ctx, int *use_rc);

// The same in two steps, for a caller that keeps the compiled functions: the JIT
// (*out, NULL on failure) and the addresses of names[0..nnames) in addrs, valid
// until llvm_jit_close(cx, *out). cx must outlive the JIT (its session errors are
// kept in cx's arena).
typedef struct LlvmJit LlvmJit;
const char *llvm_jit_open(Ctx *cx, LProgram *const *progs, int nprogs, const LlvmOptions *o, const LlvmSymbol *rt,
                          int nrt, const char *const *names, int nnames, LlvmJit **out, void **addrs);
const char *llvm_jit_close(Ctx *cx, LlvmJit *jit);  // NULL is a no-op

// The names of the runtime functions generated modules may call (NULL-terminated):
// a JIT's rt table must give an address for each.
extern const char *const llvm_runtime_names[];

#endif
