// python/tdslpy.h: the C ABI of libtdslpy.so, the shared library the Python package
// tdsl loads with ctypes (python/tdsl/_native.py). It holds the compiler, LLVM's JIT
// and the runtime (libtdslrt, whose tdsl_* functions it exports too: the package
// wraps NumPy buffers in storages and releases results with them).
//
// A tdslpy_fn is one function of a source text, compiled for the host CPU and kept
// in this process until tdslpy_free; or, for a generic function (dims written as
// names) with a dim left unbound, only declared: its signature as written, and
// tdslpy_bind to bind its dims from a call's shapes. Texts it returns are malloc'd:
// tdslpy_free_text.
#ifndef TDSLC_PYTHON_TDSLPY_H
#define TDSLC_PYTHON_TDSLPY_H

#include "tdsl.h"

typedef struct tdslpy_fn tdslpy_fn;

// Compiles fn (NULL: the text's only function) of text, read as the file `path`
// (which messages name; it is not opened), at -O`opt`, with dims dim_names[i] =
// dim_values[i] (tdslc's --dim). A generic function that these leave a dim of is
// declared, not compiled (tdslpy_generic). On failure returns NULL with *diag the
// messages tdslc would print (file:line:col: error: ..., the source line, the caret)
// and *status tdslc's exit status (1: an error in the program, 2: no such function or
// dim, 4: an internal error).
tdslpy_fn *tdslpy_compile(const char *path, const char *text, const char *fn, int opt, const char *const *dim_names,
                          const int64_t *dim_values, int ndims, char **diag, int *status);
void tdslpy_free(tdslpy_fn *f);
void tdslpy_free_text(char *text);

// The signature: the function's name, whether it is generic (not compiled: some dim
// unbound), its parameters (name returned; dtype as the language spells it, "f32", or
// "float", "int", "bool" for a scalar parameter; dims; 'mut'; scalar) and its results
// (dtype returned; dims). Dim d of parameter i (or of result i - nparams): NULL with
// *size, or (generic) the dim as written when it is no number: "N", "4 * D".
const char *tdslpy_name(const tdslpy_fn *f);
int tdslpy_generic(const tdslpy_fn *f);
int tdslpy_nparams(const tdslpy_fn *f);
const char *tdslpy_param(const tdslpy_fn *f, int i, const char **dtype, int *ndim, int *mut, int *scalar);
char *tdslpy_param_default(const tdslpy_fn *f, int i);  // its source text, or NULL; free with tdslpy_free_text
int tdslpy_noutputs(const tdslpy_fn *f);
const char *tdslpy_output(const tdslpy_fn *f, int k, int *ndim);
const char *tdslpy_dim(tdslpy_fn *f, int i, int d, int64_t *size);
// The function's dim variables, in order of first use: name returned, *value its size
// (bound up front or compiled with), or -1.
int tdslpy_ndimvars(const tdslpy_fn *f);
const char *tdslpy_dimvar(const tdslpy_fn *f, int k, int64_t *value);

// A generic function's dims bound from a call: ndims[i] and shapes[i * TDSL_MAX_DIMS
// ...] are argument i's shape (ndims[i] -1 for a scalar argument), bound and checked
// as `tdslc run` binds its --in files (driver/compile.c, compile_bind_dims), with the
// words sema uses for a helper's arguments. Returns 0 with values[k] the size of dim
// variable k (-1: unbound), or 2 with *diag the message ("tdslc: error: argument 'w'
// of 'rms' has size 16 at dim 0 but D is 8 from 'x'").
int tdslpy_bind(tdslpy_fn *f, const int *ndims, const int64_t *shapes, int64_t *values, char **diag);

// One call of the compiled entry (DESIGN.md, "The generated C ABI"): args[i] for
// parameter i, the results into outs[0..noutputs) (the caller releases them).
// Returns TDSL_OK or the entry's error code, with tdsl_last_error() saying why.
int tdslpy_call(const tdslpy_fn *f, const tdsl_tensor *const *args, tdsl_tensor *outs);

// What `tdslc FILE --fn NAME --emit=KIND` prints for KIND "ir", "kernels", "c" or
// "llvm" (with the function's dims), or NULL for another kind or a generic function.
char *tdslpy_emit(const tdslpy_fn *f, const char *kind);

#endif
