// python/tdslpy.h: the C ABI of libtdslpy.so, the shared library the Python package
// tdsl loads with ctypes (python/tdsl/_native.py). It holds the compiler, LLVM's JIT
// and the runtime (libtdslrt, whose tdsl_* functions it exports too: the package
// wraps NumPy buffers in storages and releases results with them).
//
// A tdslpy_fn is one function of a source text, compiled for the host CPU and kept
// in this process until tdslpy_free. Texts it returns are malloc'd: tdslpy_free_text.
#ifndef TDSLC_PYTHON_TDSLPY_H
#define TDSLC_PYTHON_TDSLPY_H

#include "tdsl.h"

typedef struct tdslpy_fn tdslpy_fn;

// Compiles fn (NULL: the text's only function) of text, read as the file `path`
// (which messages name; it is not opened), at -O`opt`. On failure returns NULL with
// *diag the messages tdslc would print (file:line:col: error: ..., the source
// line, the caret) and *status tdslc's exit status (1: an error in the program,
// 2: no such function, 4: an internal error).
tdslpy_fn *tdslpy_compile(const char *path, const char *text, const char *fn, int opt, char **diag, int *status);
void tdslpy_free(tdslpy_fn *f);
void tdslpy_free_text(char *text);

// The signature: the function's name, its parameters (name returned; dtype, dims,
// shape and 'mut' through the pointers) and its results (dtype, dims, shape).
const char *tdslpy_name(const tdslpy_fn *f);
int tdslpy_nparams(const tdslpy_fn *f);
const char *tdslpy_param(const tdslpy_fn *f, int i, int *dtype, int *ndim, int64_t *shape, int *mut);
int tdslpy_noutputs(const tdslpy_fn *f);
void tdslpy_output(const tdslpy_fn *f, int k, int *dtype, int *ndim, int64_t *shape);

// One call of the compiled entry (DESIGN.md, "The generated C ABI"): args[i] for
// parameter i, the results into outs[0..noutputs) (the caller releases them).
// Returns TDSL_OK or the entry's error code, with tdsl_last_error() saying why.
int tdslpy_call(const tdslpy_fn *f, const tdsl_tensor *const *args, tdsl_tensor *outs);

// What `tdslc FILE --fn NAME --emit=KIND` prints for KIND "ir", "kernels", "c" or
// "llvm", or NULL for another kind.
char *tdslpy_emit(const tdslpy_fn *f, const char *kind);

#endif
