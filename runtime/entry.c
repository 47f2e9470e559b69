// runtime/entry.c: the glue every generated entry calls around its kernels, so the
// generated code stays small (DESIGN.md, "The generated C ABI"). begin checks the
// arguments and makes the buffers the kernels see (temps and results uninitialised,
// from the storage cache when large); end writes copied 'mut' arguments back, makes
// the outputs and releases the buffers.
//
// Invariants: kernels see every parameter as a row-major contiguous run of
// elements that no other buffer of the same call overlaps when either is written;
// an output that views a parameter's buffer views the caller's storage when the
// argument was contiguous (and the copy otherwise), exactly as LANGUAGE.md §8
// says; on every path each buffer is released once and the outputs are either all
// filled or all zeroed.
#include "tdsl.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

// "f32[2, 3]"
static void type_text(char *buf, size_t n, tdsl_dtype dt, int ndim, const int64_t *shape) {
  size_t k = (size_t)snprintf(buf, n, "%s[", tdsl_dtype_name(dt));
  for (int i = 0; i < ndim && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%" PRId64, i ? ", " : "", shape[i]);
  if (k < n)
    snprintf(buf + k, n - k, "]");
}

static int check_arg(const tdsl_entry_info *fi, const tdsl_entry_param *p, const tdsl_tensor *t) {
  if (!t)
    return tdsl_set_error("%s: argument '%s' is NULL", fi->name, p->name), TDSL_ERR_ARG;
  if (!t->storage)
    return tdsl_set_error("%s: argument '%s' has no storage", fi->name, p->name), TDSL_ERR_ARG;
  bool same = t->dtype == p->dtype && t->ndim == p->ndim;
  for (int i = 0; same && i < p->ndim; i++)
    same = t->shape[i] == p->shape[i];
  if (same)
    return TDSL_OK;
  char want[256], got[256];
  type_text(want, sizeof want, p->dtype, p->ndim, p->shape);
  if (t->ndim < 0 || t->ndim > TDSL_MAX_DIMS)
    snprintf(got, sizeof got, "a tensor of %d dims", t->ndim);
  else
    type_text(got, sizeof got, t->dtype, t->ndim, t->shape);
  tdsl_set_error("%s: argument '%s' must be %s but is %s", fi->name, p->name, want, got);
  return TDSL_ERR_ARG;
}

// Whether the storage byte ranges two buffers cover meet (empty for numel 0; a complex
// argument is compared before it becomes its float pairs, the others after).
static bool overlaps(const tdsl_tensor *a, int64_t na, const tdsl_tensor *b, int64_t nb) {
  if (a->storage != b->storage || na == 0 || nb == 0)
    return false;
  int64_t sa = (int64_t)tdsl_dtype_size(a->dtype), sb = (int64_t)tdsl_dtype_size(b->dtype);
  return a->offset * sa < (b->offset + nb) * sb && b->offset * sb < (a->offset + na) * sa;
}

static int release_all(const tdsl_entry_info *fi, tdsl_tensor *bufs, int rc) {
  for (int b = 0; b < fi->nbufs; b++)
    tdsl_tensor_release(&bufs[b]);
  return rc;
}

int tdsl_entry_begin(const tdsl_entry_info *fi, const tdsl_tensor *const *args, tdsl_tensor *const *outs,
                     tdsl_tensor *bufs) {
  for (int k = 0; k < fi->noutputs; k++) {
    if (outs[k])
      memset(outs[k], 0, sizeof *outs[k]);
  }
  for (int b = 0; b < fi->nbufs; b++)
    memset(&bufs[b], 0, sizeof bufs[b]);
  for (int k = 0; k < fi->noutputs; k++) {
    if (!outs[k])
      return tdsl_set_error("%s: result out%d is NULL", fi->name, k), TDSL_ERR_ARG;
  }
  for (int i = 0; i < fi->nparams; i++) {
    int rc = check_arg(fi, &fi->params[i], args[i]);
    if (rc)
      return rc;
  }
  for (int i = 0; i < fi->nparams; i++) {
    const tdsl_entry_param *p = &fi->params[i];
    const tdsl_tensor *t = args[i];
    tdsl_tensor *dst = &bufs[p->buf];
    // A view of the caller's tensor: checks that it lies inside its storage.
    if (tdsl_tensor_view(dst, t, t->ndim, t->shape, t->strides, t->offset) != 0) {
      tdsl_set_error("%s: argument '%s': %s", fi->name, p->name, tdsl_last_error());
      return release_all(fi, bufs, TDSL_ERR_ARG);
    }
    int64_t n = tdsl_tensor_numel(dst);
    bool copy = !tdsl_tensor_is_contiguous(dst);
    // Kernels take restrict pointers: a buffer overlapping a written one gets its own copy.
    for (int j = 0; j < i && !copy; j++) {
      const tdsl_entry_param *q = &fi->params[j];
      if ((p->mut || q->mut) && overlaps(dst, n, &bufs[q->buf], tdsl_tensor_numel(&bufs[q->buf])))
        copy = true;
    }
    if (copy) {
      tdsl_tensor c;
      if (tdsl_tensor_contiguous(&c, dst) != 0) {
        tdsl_set_error("%s: argument '%s': %s", fi->name, p->name, tdsl_last_error());
        return release_all(fi, bufs, TDSL_ERR_NOMEM);
      }
      tdsl_tensor_release(dst);
      *dst = c;
    }
    if (tdsl_dtype_is_complex(dst->dtype) && tdsl_tensor_as_real(dst, dst) != 0)  // the kernels see its float pairs
      return release_all(fi, bufs, TDSL_ERR_ARG);
  }
  for (int b = 0; b < fi->nbufs; b++) {
    const tdsl_entry_buf *eb = &fi->bufs[b];
    if (eb->param >= 0)
      continue;
    // Uninitialised: the kernels write every element of a temp or result before
    // reading it (checked by running the tests with TDSL_STORAGE_POISON set).
    int64_t shape[1] = {eb->numel};
    if (tdsl_tensor_empty_uninit(&bufs[b], eb->dtype, 1, shape) != 0)
      return release_all(fi, bufs, TDSL_ERR_NOMEM);
  }
  return TDSL_OK;
}

int tdsl_entry_end(const tdsl_entry_info *fi, const tdsl_tensor *const *args, tdsl_tensor *const *outs,
                   tdsl_tensor *bufs, int rc) {
  for (int i = 0; i < fi->nparams && rc == TDSL_OK; i++) {
    const tdsl_entry_param *p = &fi->params[i];
    const tdsl_tensor *local = &bufs[p->buf];
    // The caller passed a 'mut' argument as a non-const tdsl_tensor *.
    tdsl_tensor *caller = (tdsl_tensor *)args[i];
    if (p->mut && local->storage != caller->storage) {
      tdsl_tensor pairs = {0};  // a complex argument: the caller's tensor as the float pairs the kernels wrote
      int err = tdsl_dtype_is_complex(caller->dtype) ? tdsl_tensor_as_real(&pairs, caller) : 0;
      if (err || tdsl_tensor_copy(pairs.storage ? &pairs : caller, local) != 0) {
        tdsl_set_error("%s: writing back '%s': %s", fi->name, p->name, tdsl_last_error());
        rc = TDSL_ERR_ARG;
      }
      tdsl_tensor_release(&pairs);
    }
  }
  for (int k = 0; k < fi->noutputs && rc == TDSL_OK; k++) {
    const tdsl_entry_output *o = &fi->outputs[k];
    const tdsl_tensor *base = &bufs[o->buf];
    if (tdsl_tensor_view(outs[k], base, o->ndim, o->shape, o->strides, base->offset + o->offset) != 0 ||
        (o->complex && tdsl_tensor_as_complex(outs[k], outs[k]) != 0)) {
      tdsl_set_error("%s: result out%d: %s", fi->name, k, tdsl_last_error());
      rc = TDSL_ERR_ARG;
    }
  }
  if (rc != TDSL_OK) {
    for (int k = 0; k < fi->noutputs; k++) {
      if (outs[k])
        tdsl_tensor_release(outs[k]);
    }
  }
  return release_all(fi, bufs, rc);
}

int tdsl_entry_kernel_error(const char *msg, long long value) {
  char out[1024], num[32];
  size_t n = 0;
  bool used = false;
  snprintf(num, sizeof num, "%lld", value);
  for (const char *p = msg; *p && n + 1 < sizeof out; p++) {
    if (p[0] == '%' && p[1] == '%') {
      out[n++] = '%';
      p++;
    } else if (!used && strncmp(p, "%lld", 4) == 0) {
      for (const char *q = num; *q && n + 1 < sizeof out; q++)
        out[n++] = *q;
      used = true;
      p += 3;
    } else {
      out[n++] = *p;
    }
  }
  out[n] = 0;
  tdsl_set_error("%s", out);
  return TDSL_ERR_DATA;
}
