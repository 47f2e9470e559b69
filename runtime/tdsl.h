// runtime/tdsl.h: the public C ABI of libtdslrt, used by generated code, by the
// driver and by users' C programs around a compiled function.
//
// A tensor is a reference-counted 1-D storage of bytes plus a projection
// (dtype, shape, strides, offset); strides and offset count elements and are
// PyTorch's numbers (contiguous strides use max(size, 1)). Views share storage.
// Every function that can fail returns 0 on success and non-zero on failure, with
// tdsl_last_error() saying why; bad data never aborts the process.
//
// This header includes libc headers only: it never includes compiler headers.
#ifndef TDSLC_RUNTIME_TDSL_H
#define TDSLC_RUNTIME_TDSL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TDSL_MAX_DIMS 8

// Same order as the compiler's DType.
typedef enum {
  TDSL_BOOL,
  TDSL_I32,
  TDSL_I64,
  TDSL_F16,
  TDSL_BF16,
  TDSL_F32,
  TDSL_F64,
  TDSL_U8,
  TDSL_I8,
  TDSL_I16,
  TDSL_C64,   // complex64: (real, imaginary) f32 pairs
  TDSL_C128,  // complex128: f64 pairs
  TDSL_DTYPE_COUNT
} tdsl_dtype;

typedef struct tdsl_storage {
  int64_t refcount;
  void *data;
  size_t nbytes;
  int device;  // 0 = host; CUDA later
} tdsl_storage;

typedef struct tdsl_tensor {
  tdsl_storage *storage;
  tdsl_dtype dtype;
  int ndim;
  int64_t shape[TDSL_MAX_DIMS], strides[TDSL_MAX_DIMS];  // strides in elements
  int64_t offset;                                        // in elements
} tdsl_tensor;

// ---- errors (runtime/error.c) ----
const char *tdsl_last_error(void);  // thread-local message of the last failure ("" if none)
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
int tdsl_set_error(const char *fmt, ...);  // sets it, returns a non-zero code (1)
void tdsl_clear_error(void);

// ---- dtypes and half floats (runtime/dtype.c) ----
const char *tdsl_dtype_name(tdsl_dtype dt);  // "bool", "i32", ..., "f64"; "?" if out of range
size_t tdsl_dtype_size(tdsl_dtype dt);       // bytes per element; 0 if out of range
int tdsl_dtype_from_name(const char *name, tdsl_dtype *out);  // 0 ok
bool tdsl_dtype_is_float(tdsl_dtype dt);
bool tdsl_dtype_is_complex(tdsl_dtype dt);  // c64, c128
// Conversions round to nearest even; NaN stays NaN (quiet), overflow gives inf.
float tdsl_f16_to_f32(uint16_t h);
uint16_t tdsl_f32_to_f16(float f);
float tdsl_bf16_to_f32(uint16_t h);
uint16_t tdsl_f32_to_bf16(float f);
// Rounded once from f64 (no double rounding through f32).
uint16_t tdsl_f64_to_f16(double d);
uint16_t tdsl_f64_to_bf16(double d);

// ---- storages and the storage cache (runtime/storage.c) ----
// Data is 64-byte aligned (page aligned from 128 KiB on; a wrapped storage's is the
// caller's). Storages are made only by these functions: release needs what they
// record beside the tdsl_storage.
tdsl_storage *tdsl_storage_new(size_t nbytes);  // zeroed; refcount 1; NULL (+error) on failure
tdsl_storage *tdsl_storage_new_uninit(size_t nbytes);  // the same, but the bytes are unspecified
// A storage over nbytes at data, memory the caller owns and keeps alive while the
// storage lives (a NumPy array's buffer): release frees only the record, never data.
tdsl_storage *tdsl_storage_wrap(void *data, size_t nbytes);
void tdsl_storage_retain(tdsl_storage *s);
void tdsl_storage_release(tdsl_storage *s);  // frees at refcount 0; NULL is a no-op
// The storage cache: released data blocks of 128 KiB or more are kept (at most 16
// blocks and tdsl_storage_cache_limit() bytes, the oldest evicted first) and reused by
// later storages needing between half and all of a block, so repeated calls do not
// fault in fresh pages. Thread-safe. The limit is min(1 GiB, physical memory / 8);
// TDSL_STORAGE_CACHE=0 turns the cache off, and sanitizer builds (ASan, MSan) never
// have one. Both read once, at the first storage made.
// Debugging aid: TDSL_STORAGE_POISON=B (a byte: 0xff, 0x7f, ...) fills every
// uninitialised storage with B, to catch kernels that read memory before writing it.
size_t tdsl_storage_cache_limit(void);  // 0: no cache
size_t tdsl_storage_cache_bytes(int *nblocks);  // bytes (and blocks, if non-NULL) cached now
void tdsl_storage_cache_trim(void);  // gives every cached block back to the system

// ---- tensors (runtime/tensor.c) ----
// Contiguous, zeroed, PyTorch contiguous strides. 0 = ok.
int tdsl_tensor_empty(tdsl_tensor *out, tdsl_dtype dt, int ndim, const int64_t *shape);
// The same with unspecified elements, for a caller that writes them all before reading.
int tdsl_tensor_empty_uninit(tdsl_tensor *out, tdsl_dtype dt, int ndim, const int64_t *shape);
// Copies nbytes of data into a new storage and views it with (shape, strides, offset);
// strides NULL means contiguous. The view must lie inside the nbytes given.
int tdsl_tensor_from_data(tdsl_tensor *out, tdsl_dtype dt, int ndim, const int64_t *shape,
                          const int64_t *strides, int64_t offset, const void *data, size_t nbytes);
// A view of base's storage (retained); checks that it stays inside the storage.
// Negative strides are allowed (flip). out may be base itself: base's reference then
// passes to the view. Constructors overwrite *out without releasing it.
int tdsl_tensor_view(tdsl_tensor *out, const tdsl_tensor *base, int ndim, const int64_t *shape,
                     const int64_t *strides, int64_t offset);
void tdsl_tensor_release(tdsl_tensor *t);  // releases storage, zeroes t; safe on a zeroed tensor
// PyTorch's view_as_real and view_as_complex: a complex tensor's (real, imaginary) float
// pairs as a last dim of 2 (strides and offset doubled), and back (the float view's last
// dim of size 2 and stride 1, its other strides and offset even). Views, no copy; out may
// be the argument itself (its reference passes to the view).
int tdsl_tensor_as_real(tdsl_tensor *out, const tdsl_tensor *z);
int tdsl_tensor_as_complex(tdsl_tensor *out, const tdsl_tensor *x);
// A new contiguous copy in logical row-major order (always a new storage).
int tdsl_tensor_contiguous(tdsl_tensor *out, const tdsl_tensor *src);
// Copies src's elements into dst's (same dtype and shape, any strides on both).
int tdsl_tensor_copy(tdsl_tensor *dst, const tdsl_tensor *src);
bool tdsl_tensor_is_contiguous(const tdsl_tensor *t);  // PyTorch's is_contiguous
int64_t tdsl_tensor_numel(const tdsl_tensor *t);
void *tdsl_tensor_data(const tdsl_tensor *t);  // pointer to element `offset`
// Storage element (not byte) of a logical index; idx has t->ndim entries (NULL for 0-d).
int64_t tdsl_tensor_elem(const tdsl_tensor *t, const int64_t *idx);
// Advances idx (ndim entries, row-major, last dim fastest); false after the last index.
bool tdsl_index_next(int ndim, const int64_t *shape, int64_t *idx);
// Reads/writes any dtype as double (tests, printing, the seeded generator).
// Writing rounds to nearest even for floats; ints truncate toward zero and saturate
// at the dtype's range (NaN gives 0); bool is v != 0.
double tdsl_tensor_get_f64(const tdsl_tensor *t, const int64_t *idx);
void tdsl_tensor_set_f64(tdsl_tensor *t, const int64_t *idx, double v);
int64_t tdsl_tensor_get_i64(const tdsl_tensor *t, const int64_t *idx);  // exact for ints

// ---- .npy files (runtime/npy.c) ----
// Loads versions 1.0, 2.0, 3.0, C or Fortran order; the result is always contiguous
// row-major. `<u2` (how bf16 travels) loads as TDSL_BF16, the only 16-bit raw dtype.
int tdsl_load_npy(const char *path, tdsl_tensor *out);
// As tdsl_load_npy, but the file must hold `want` (for TDSL_BF16: `<u2`); otherwise
// fails with a message naming both dtypes, before reading the data.
int tdsl_load_npy_as(const char *path, tdsl_dtype want, tdsl_tensor *out);
// Writes the logical tensor in C order through a temp file + rename, so a failure
// leaves nothing half-written at path.
int tdsl_save_npy(const char *path, const tdsl_tensor *t);

// ---- text output (runtime/print.c, runtime/json.c) ----
// PyTorch 1.13's repr, followed by a newline (as Python's print).
void tdsl_print(FILE *out, const tdsl_tensor *t);
// The JSON array of the elements in logical row-major order (LANGUAGE.md §10).
void tdsl_write_json_data(FILE *out, const tdsl_tensor *t);
// Writes into buf (at least 32 bytes) the shortest decimal that reads back (as a
// double, then rounded to dt) to the same value of dt, in Python repr style
// ("1.0", "1e-05", "-0.0"); "nan", "inf", "-inf" without quotes. Returns buf.
char *tdsl_format_float(char *buf, size_t size, double v, tdsl_dtype dt);

// ---- the seeded generator (runtime/random.c, LANGUAGE.md §10) ----
uint64_t tdsl_splitmix64_next(uint64_t *state);
// One draw per element in logical row-major order: float ((u >> 11) * 2^-53) * 2 - 1
// rounded to its dtype, int u >> 62, bool u >> 63.
void tdsl_fill_random(tdsl_tensor *t, uint64_t *state);

// ==== entry glue (runtime/entry.c): used by generated entries, not by users ====
// Error codes of a generated entry (LANGUAGE.md §9's exit statuses where they meet).
// Names beginning with "tdsl_g_" are reserved for generated code.
#define TDSL_OK 0
#define TDSL_ERR_ARG 2    // an argument of the wrong dtype or shape, or an invalid tensor
#define TDSL_ERR_DATA 3   // a run-time error in the data: index out of range, division by zero
#define TDSL_ERR_NOMEM 5  // out of memory
// TDSL_G_OK(rc): rc == TDSL_OK, with the compiler told that it always is. An entry runs its
// kernels one after another while each returns TDSL_OK; without the hint gcc's static
// profile guesses each test, the guesses multiply, and a kernel late in a long entry
// (inlined there) looks cold: its loops stay scalar.
#if defined(__has_builtin)
#if __has_builtin(__builtin_expect_with_probability)
#define TDSL_G_OK(rc) __builtin_expect_with_probability((rc) == TDSL_OK, 1, 1.0)
#endif
#endif
#ifndef TDSL_G_OK
#define TDSL_G_OK(rc) ((rc) == TDSL_OK)
#endif

// What the generated entry knows of its function, as static tables.
typedef struct tdsl_entry_param {
  const char *name;
  tdsl_dtype dtype;
  int ndim;
  int64_t shape[TDSL_MAX_DIMS];
  int mut;  // declared 'mut': written back to the caller's storage if copied in
  int buf;  // the buffer the kernels see it as
} tdsl_entry_param;

typedef struct tdsl_entry_buf {
  tdsl_dtype dtype;
  int64_t numel;
  int param;  // the parameter whose storage this is, or -1: a new uninitialised storage
} tdsl_entry_buf;

typedef struct tdsl_entry_output {
  int buf;  // the buffer it views
  int ndim;
  int64_t shape[TDSL_MAX_DIMS], strides[TDSL_MAX_DIMS];
  int64_t offset;  // relative to the buffer's first element
  int complex;     // 1: the result is the complex tensor whose (real, imaginary) pairs are this
                   // view's last dim (size 2, stride 1; view_as_complex of it), c64 of f32, c128 of f64
} tdsl_entry_output;

typedef struct tdsl_entry_info {
  const char *name;
  int nparams;
  const tdsl_entry_param *params;
  int nbufs;
  const tdsl_entry_buf *bufs;
  int noutputs;
  const tdsl_entry_output *outputs;
} tdsl_entry_info;

// Zeroes every *outs[k]; checks each argument against its declaration ("NAME:
// argument 'x' must be f32[2, 3] but is f64[2, 3]"); makes bufs[b] (nbufs
// tensors): a view of the caller's storage for a contiguous argument, a contiguous
// copy for any other (or for one sharing storage with a 'mut' argument), a new
// uninitialised storage for a temp or result (the kernels write all of it first).
// On failure everything made is released and the error code is returned.
int tdsl_entry_begin(const tdsl_entry_info *fi, const tdsl_tensor *const *args, tdsl_tensor *const *outs,
                     tdsl_tensor *bufs);
// If rc is 0: writes copied 'mut' arguments back into the caller's storage and
// points each *outs[k] at its buffer's storage (offset by the buffer's own
// offset, so a view of an argument views the caller's storage). Always releases
// bufs; returns rc, or the error met.
int tdsl_entry_end(const tdsl_entry_info *fi, const tdsl_tensor *const *args, tdsl_tensor *const *outs,
                   tdsl_tensor *bufs, int rc);
// Sets the error to a kernel's located message, read as a printf format that holds
// at most one "%lld" (value) and "%%" for a '%'; returns TDSL_ERR_DATA.
int tdsl_entry_kernel_error(const char *msg, long long value);

// ==== parallel loops (runtime/pool.c): used by generated code, not by users ====
// A persistent pool of tdsl_num_threads() - 1 workers, started by the first parallel
// loop; the calling thread works too. Idle workers watch for the next loop for 0.2 ms
// (yielding to any other runnable thread of their core), then sleep; they are joined at exit.
typedef void (*tdsl_range_fn)(void *ctx, int64_t begin, int64_t end);
// Runs fn(ctx, b, e) over disjoint chunks covering [0, n), on the pool's threads and the
// caller's; returns when all chunks are done (their writes are then visible to the
// caller). Chunks are contiguous ranges of at least `grain` iterations (grain <= 0: 1),
// at most 4 per thread. Serial (one call fn(ctx, 0, n) on the caller's thread) when
// n < 2 * grain, when the pool has one thread, when called from inside a pool task (no
// nesting), and when another thread's loop holds the pool (one loop at a time; the
// second caller does not wait). n <= 0 calls nothing.
void tdsl_parallel_for(int64_t n, int64_t grain, tdsl_range_fn fn, void *ctx);
// TDSL_NUM_THREADS if set to a whole number >= 1 (at most 1024), else the online CPUs.
// Read once, at the first call of this or of tdsl_parallel_for.
int tdsl_num_threads(void);
// A kernel's first run-time error, shared by the threads of a parallel loop: raise keeps
// the failure with the lowest iteration `iter` (so the message is deterministic; equal
// iterations: the first raised), ignoring k < 0; sequential code passes INT64_MAX, so
// its first raise wins. seal is called between loops so later loops cannot replace an
// earlier loop's error. Both are thread-safe; read the record only after the loop.
typedef struct tdsl_kernel_error {
  int k;  // -1: none
  int sealed;
  long long value;
  int64_t iter;
} tdsl_kernel_error;
#define TDSL_KERNEL_ERROR_INIT {-1, 0, 0, INT64_MAX}
void tdsl_kernel_error_raise(tdsl_kernel_error *e, int k, long long value, int64_t iter);
void tdsl_kernel_error_seal(tdsl_kernel_error *e);
// Per-thread scratch (runtime/scratch.c): the calling thread's region of at least `bytes`
// bytes, 64-byte aligned, kept for the thread's next calls (a kernel packs its matmul
// panels there); grown when too small (its old contents are then lost). Without memory
// for it, a message on stderr and abort(). Freed when the thread exits.
void *tdsl_scratch(int64_t bytes);
// ==== end of parallel loops ====

// ==== streamed results' store form (runtime/stream.c): used by generated code ====
// A kernel whose large result may bypass the caches (ir/sched.c's streaming rule) is
// compiled twice, with non-temporal and with plain stores (the same values: results are
// bit-identical); its wrapper asks which form to run, and times the call:
//   int64_t t = tdsl_stream_begin(&site); rc = t & 1 ? nt(...) : plain(...);
//   tdsl_stream_end(&site, t);
// Which form is faster changes with the memory's state on a shared host and with who
// reads the result next (plain stores leave part of it in the last-level cache), so the
// site measures both on its first calls (non-temporal first, then plain), keeps the
// faster one, and tries the other one now and then.
// TDSL_STREAM_FORM=nt or =plain (read once) fixes the form; unset or empty: measured;
// anything else: measured, and one warning on stderr.
// A site is a zero-initialized static of the kernel (16 words; 0 = nothing measured,
// the non-temporal form first); thread-safe (a call that finds the site busy is not
// counted).
typedef struct tdsl_stream_site {
  int64_t lock;    // 1 while one thread counts a call
  int64_t plain;   // the kept form: 0 non-temporal, 1 plain
  int64_t phase;   // 0 the kept form's run, 1 its sample, 2 the other form's first call, 3 its sample,
                   // 4 the kept form's first call again, 5 its second sample (after a winning try)
  int64_t n;       // calls of the current phase
  int64_t run;     // calls of the kept form's run (0: the first run: one call)
  int64_t best;    // the kept form's fastest call (ns) in its last sample
  int64_t tried;   // the other form's fastest call (ns) in the current try
  int64_t sum;     // the current sample's time (ns)
  int64_t second;  // the current sample's second fastest call (ns)
  int64_t drift;   // consecutive calls of the kept form's run off its sample's time, agreeing
  int64_t level;   // the first of them (ns)
  int64_t again;   // the kept form's fastest call (ns) in its second sample
  int64_t reserved[4];
} tdsl_stream_site;
// Calls a site makes before its first choice (kernels of 25 us or more: every result
// streamed by default, whose calls of a form agree; others take more, 27 at most, or
// keep the non-temporal form where their calls never agree): a
// warm-up of this many calls is enough for a benchmark to time the chosen form.
#define TDSL_STREAM_SETTLE 9
// Returns a token: bit 0 the form to run (1: non-temporal), bit 1 set when the call is
// timed, bits 2 and up its start (CLOCK_MONOTONIC, ns); tdsl_stream_end counts it.
int64_t tdsl_stream_begin(tdsl_stream_site *s);
void tdsl_stream_end(tdsl_stream_site *s, int64_t token);
// ==== end of streamed results' store form ====

// ==== kernel timestamps (runtime/profile.c): `tdslc bench --profile`, not for users ====
// A profiling build's entry (LProgram.profile) calls tdsl_prof_mark(k) just before its
// kernel k and tdsl_prof_mark(nkernels) after the last one; an ordinary build calls
// nothing. While recording, each mark adds the time since the previous mark to the
// kernel that was running (none after the last mark of a call). Not thread-safe: one
// thread records, calling one profiling entry at a time.
int tdsl_prof_start(int nkernels);     // starts (or restarts) recording, totals 0; 0 ok, else TDSL_ERR_NOMEM
void tdsl_prof_mark(int k);            // no-op unless recording; k outside [0, nkernels): none runs now
int tdsl_prof_read(double *ns, int n); // copies min(n, nkernels) totals (nanoseconds); returns nkernels
void tdsl_prof_stop(void);             // stops recording and frees the totals
// ==== end of kernel timestamps ====

// ==== GPU runs (runtime/cuda.c): CUDA through the driver API, loaded at run time ====
// libcuda.so.1 (and, for CUDA C images, NVRTC: libnvrtc.so) are opened with dlopen
// on first use, so libtdslrt builds and runs everything else on a machine without a
// GPU; there the functions below fail with a clear message and never crash.
#define TDSL_ERR_GPU 6  // a CUDA or NVRTC call failed (no GPU, a bad image, a launch error)

// 1 when a CUDA device can be used; else 0, and tdsl_last_error() says why:
// "no GPU here (libcuda.so.1 cannot be loaded)", "no GPU here (no CUDA device)", ...
int tdsl_gpu_available(void);
// The compute capability of the device runs use (device 0), e.g. 9 and 0. 0 = ok.
int tdsl_gpu_compute_capability(int *major, int *minor);

// The device record every kernel of an image takes first (codegen/codegen.h): zeroed
// before the first launch; a kernel raising its error k sets flag to 1 with
// atomicCAS and then writes k and the value, so the first raise wins.
typedef struct tdsl_gpu_error {
  int flag;  // 0: no error raised
  int k;     // index into the raising kernel's errors
  long long value;
} tdsl_gpu_error;

// One kernel of an image, launched as
//   name<<<grid, block, shmem>>>(err, b[args[0]] + at[0], b[args[1]] + at[1], ...)
// with 1-D grid and block (b[i] + at[i]: the device pointer of buffer i moved at[i]
// elements of its dtype in); grid or block 0 launches nothing. Several entries may
// name one symbol: kernels with the same code (a model's layers) launch one function
// with their own buffers and offsets.
typedef struct tdsl_gpu_kernel {
  const char *name;  // its symbol in the image
  int64_t grid, block;
  int shmem;  // bytes of dynamic shared memory
  int nargs;
  const int *args;  // program buffer indices, in parameter order
  int nerrors;
  const char *const *errors;  // located messages, each may hold one %lld (tdsl_entry_kernel_error)
  const int64_t *at;  // per argument: the element its pointer starts at, 0 or within the
                      // buffer (else the launch fails with TDSL_ERR_GPU); NULL: all 0
} tdsl_gpu_kernel;

typedef enum { TDSL_GPU_PTX, TDSL_GPU_CUDA_C } tdsl_gpu_image_kind;

typedef struct tdsl_gpu_program {
  const tdsl_entry_info *info;  // the CPU entry's tables (argument checks, buffers, outputs)
  tdsl_gpu_image_kind kind;
  const char *image;  // PTX text, or CUDA C device code compiled by NVRTC
  const char *arch;   // CUDA C: "sm_80" compiles for compute_80; NULL: the device's own
  int nkernels;
  const tdsl_gpu_kernel *kernels;  // launched in this order
} tdsl_gpu_program;

// Runs p as a generated entry would: tdsl_entry_begin (argument checks, contiguous
// copies), a device buffer per program buffer (parameters copied in, the rest zeroed),
// each kernel launched in order and checked after it (launch and sync results, then the
// error record), results and 'mut' parameters copied back, tdsl_entry_end. Device
// memory and the module are freed on every path. Returns TDSL_OK; TDSL_ERR_DATA with
// the kernel's located message; TDSL_ERR_GPU with "cuda: cuLaunchKernel(NAME): ..."
// or "nvrtc: ..."; or the entry glue's codes. On failure every *outs[k] is zeroed.
int tdsl_gpu_run(const tdsl_gpu_program *p, const tdsl_tensor *const *args, tdsl_tensor *const *outs);
// Times p: one call as tdsl_gpu_run makes it (checked, its outputs discarded), then reps
// more calls of its kernels on the device buffers already there, ms[r] the time of call
// r on the device (CUDA events around its launches; the host's clock around them and a
// synchronize when the driver lacks events). The image is compiled and loaded, and the
// inputs copied in, once. Returns what tdsl_gpu_run would.
int tdsl_gpu_bench(const tdsl_gpu_program *p, const tdsl_tensor *const *args, int reps, double *ms);
// ==== end of GPU runs ====

#ifdef __cplusplus
}
#endif

#endif
