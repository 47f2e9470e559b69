// codegen/codegen.h: the backends. Each one prints or builds the loop IR of
// ir/loop.h — it decides nothing the schedule did not — and exports only its
// Target. emit.c holds what the text backends share: the Buf text writer, the
// affine index renderer, names that cannot clash with user names, kernel comments,
// the entry's tables and glue, and the C declarations of the entries
// (--emit=header), which are the same for every backend (DESIGN.md, "The generated
// C ABI"). cexpr.c (codegen/cexpr.h) is the C dialect that c.c and cuda.c print.
#ifndef TDSLC_CODEGEN_CODEGEN_H
#define TDSLC_CODEGEN_CODEGEN_H

#include "ir/loop.h"

typedef struct Buf Buf;
typedef struct Target Target;

// A backend: `emit` writes one translation unit (or module) holding every program
// given, in order, to out.
struct Target {
  const char *name;  // "c"
  const char *ext;   // ".c"
  void (*emit)(Ctx *cx, LProgram *const *progs, int nprogs, FILE *out);
};

extern const Target target_c;
extern const Target target_llvm;  // codegen/llvm_emit.c (built with TDSLC_WITH_LLVM): optimised .ll

// ---- GPU backends (cuda.c: CUDA C; ptx.c: PTX through LLVM's NVPTX target) ----
// Both turn each LKernel of a program into one __global__ kernel with the same
// parameters and a 1-D launch, so the runtime runs either image the same way:
//   kernel(tdsl_gpu_error *err, T0 *b0, T1 *b1, ...)
// b0.. are device pointers to the program buffers of LKernel.args, in that order
// (f16/bf16 buffers as uint16_t), each buffer contiguous as on the CPU, each pointer
// moved `LArg.at` elements in. A kernel with an earlier one's code (LKernel.same,
// share_kernels) has no __global__ of its own: it launches that one's, with that one's
// grid and block (its schedule is that one's), on its own buffers. err is a
// device record { int flag; int k; long long value; } (tdsl_gpu_error) where the kernel records a run-time
// error (error index k of that kernel's LKernel.errors, with its value): the first
// raise wins (atomicCAS on a flag), so on the GPU which of several failing
// elements is reported is not fixed. Launches happen in kernel order on one stream;
// the runtime checks err after each one.
typedef struct GpuKernel {
  const char *name;  // the kernel's symbol in the image ("tdsl_g_<fn>_k<N>"), extern "C"
  int64_t grid;      // blocks
  int64_t block;     // threads per block
  int shmem;         // bytes of dynamic shared memory
} GpuKernel;
typedef struct GpuImage {
  const char *text;     // CUDA C (device code only, for NVRTC) or PTX
  GpuKernel *kernels;   // the launch of each LKernel of the program, same order (a
                        // kernel sharing an earlier one's code: that one's name and launch)
  int nkernels;
} GpuImage;
// cuda.c. --emit=cuda: for every program, the device kernels and a host entry with
// the CPU entry's ABI (CUDA runtime API: device buffers, launches, errors checked
// after every call), compiling with `nvcc -c` on its own with the runtime header.
extern const Target target_cuda;
// The device code alone of one program, for NVRTC at run time, and its launches.
void cuda_device_image(Ctx *cx, const LProgram *p, GpuImage *out);
// The newest GPU LLVM 14's NVPTX target knows, sm_86: a newer arch gets its PTX
// (`.target sm_86`), which the CUDA driver and ptxas compile for the newer GPU.
enum { PTX_NEWEST_SM = 86 };
// ptx.c. --emit=ptx for arch ("sm_80"), optimisation level opt; and one program's
// image for the runtime. NULL on success, else "<context>: <LLVM's message>".
const char *ptx_emit(Ctx *cx, LProgram *const *progs, int nprogs, const char *arch, int opt, FILE *out);
const char *ptx_image(Ctx *cx, const LProgram *p, const char *arch, int opt, GpuImage *out);

// ---- emit.c: a growable text buffer in cx->arena ----
struct Buf {
  Ctx *cx;
  char *data;  // NUL-terminated
  size_t len, cap;
};
void buf_init(Buf *b, Ctx *cx);
void buf_printf(Buf *b, const char *fmt, ...) TD_PRINTF(2, 3);
void buf_puts(Buf *b, const char *s);
void buf_indent(Buf *b, int level);  // two spaces per level
void buf_c_string(Buf *b, const char *s);  // a C string literal, quotes included
void buf_write(const Buf *b, FILE *out);

// base + sum coef * var (+ (dyn)), the loop variable k named "v<k>"; the dynamic
// part, if any, is printed by dyn(ctx, b, e).
void emit_index(Buf *b, const LIndex *ix, void (*dyn)(void *ctx, Buf *b, const LExpr *e), void *ctx);

// The C name of parameter i of p: its source name when that is a safe C
// identifier (no C keyword, no libc macro, no name the entry uses itself), else
// "tdsl_g_p<i>". Generated static names all begin with "tdsl_g_".
const char *emit_param_name(Ctx *cx, const LProgram *p, int i);
// "int NAME(const tdsl_tensor *x, ..., tdsl_tensor *out0, ...)", no ';'.
void emit_entry_decl(Ctx *cx, Buf *b, const LProgram *p);
// The symbol of the function kernel i of p runs: "tdsl_g_<fn>_<its name>" ("tdsl_g_mlp_k0"),
// or the earlier kernel's whose code it shares (LKernel.same).
const char *emit_kernel_name(Ctx *cx, const LProgram *p, int i);
// The index of the kernel whose code kernel i of p runs: i, or LKernel.same's.
int emit_kernel_code(const LProgram *p, int i);
// NULL when no arg of k may stream (LArg.stream) or k is a matmul; else a copy of k
// with every stream mark cleared, the plain-store form that the CPU backends print
// beside k's and runtime/stream.c picks between at run time (the same values: only
// the stores differ).
const LKernel *emit_plain_stores(Ctx *cx, const LKernel *k);
// "also runs k5, k9: the same code on other buffers or offsets" for the kernels that
// run kernel i's code (LKernel.same; four or more at one step: "k5, k9, ..., k21 (5)"),
// NULL if none do.
const char *emit_shared_note(Ctx *cx, const LProgram *p, int i);
// The longest run of repeated calls among kernels [lo, hi) of p: kernels start ..
// start + period * count - 1, each period calling the same functions on the same
// buffers, every argument's start (LArg.at) moved by one step per period; count 1: none.
void emit_find_run(const LProgram *p, int lo, int hi, int *start, int *period, int *count);
// "// fn.k0: ops (lines ...)", the note's line if any, then "// b0: name, ...".
void emit_kernel_comment(Buf *b, const LProgram *p, int i, const char *note);
// The static tables of runtime/entry.c for p: tdsl_g_<fn>_params, _bufs, _outputs, _info.
void emit_entry_tables(Buf *b, const LProgram *p);
// The entry's definition up to the kernels: its arguments, results and buffers
// gathered, tdsl_entry_begin called (tdsl_g_rc), returning on failure.
void emit_entry_begin(Ctx *cx, Buf *b, const LProgram *p);
// "return tdsl_entry_end(...);" and the entry's closing brace.
void emit_entry_end(Buf *b, const LProgram *p);
// --emit=header: the declarations of every program's entry, with an include guard.
void emit_header(Ctx *cx, LProgram *const *progs, int nprogs, FILE *out);
// The source file a translation unit comes from, for its first line: the first
// program's, else (a file without functions) the one cx last read.
const char *emit_source_name(Ctx *cx, LProgram *const *progs, int nprogs);

#endif
