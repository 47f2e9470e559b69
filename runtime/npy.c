// runtime/npy.c: NumPy .npy load and save.
//
// Load accepts format versions 1.0, 2.0 and 3.0, C or Fortran order, and the
// descrs `|b1 |u1 |i1 <i2 <i4 <i8 <f2 <f4 <f8 <u2 <c8 <c16` (`<u2` carries bf16 bits,
// LANGUAGE.md §4; `<c8` and `<c16` are complex64 and complex128, (real, imaginary) pairs);
// anything else (big-endian, objects, structured dtypes, other versions) is refused
// with a message naming the file. The header dict is parsed, not evaluated: keys in
// any order, Python string quotes, spaces, trailing commas. Every length read from
// the file is checked against the bytes actually present before anything is
// allocated or read, so a hostile file gives an error, never a crash or a huge
// allocation. The tensor returned is always contiguous row-major, and bool bytes
// are normalised to 0/1.
//
// Save writes version 1.0 (2.0 when the header would not fit), C order, the header
// padded with spaces so the data starts at a multiple of 64 bytes and ending in
// '\n', as NumPy does. It writes a temp file next to the target and renames it over,
// so a failure never leaves a half-written file at the path.
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "tdsl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAX_HEADER = 1 << 20 };  // far more than any honest header; bounds the read

static const char magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

typedef struct Header {
  tdsl_dtype dtype;
  bool raw_u16;  // the descr was `<u2` (bf16 bits)
  bool fortran;
  int ndim;
  int64_t shape[TDSL_MAX_DIMS];
} Header;

static const struct {
  const char *descr;
  tdsl_dtype dtype;
} descrs[] = {
    {"|b1", TDSL_BOOL}, {"<i4", TDSL_I32}, {"<i8", TDSL_I64}, {"<f2", TDSL_F16},
    {"<u2", TDSL_BF16}, {"<f4", TDSL_F32}, {"<f8", TDSL_F64}, {"|u1", TDSL_U8},
    {"|i1", TDSL_I8},   {"<i2", TDSL_I16},  {"<c8", TDSL_C64}, {"<c16", TDSL_C128},
};

static const char *descr_of(tdsl_dtype dt) {
  for (size_t i = 0; i < sizeof descrs / sizeof descrs[0]; i++) {
    if (descrs[i].dtype == dt) return descrs[i].descr;
  }
  return "?";
}

// ---- header dict parser ----

typedef struct Parser {
  const char *p, *end;
  const char *path;
} Parser;

static void skip_ws(Parser *ps) {
  while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
    ps->p++;
}

static bool eat(Parser *ps, char c) {
  skip_ws(ps);
  if (ps->p < ps->end && *ps->p == c) {
    ps->p++;
    return true;
  }
  return false;
}

static bool eat_word(Parser *ps, const char *w) {
  size_t n = strlen(w);
  skip_ws(ps);
  if ((size_t)(ps->end - ps->p) >= n && memcmp(ps->p, w, n) == 0) {
    ps->p += n;
    return true;
  }
  return false;
}

// A Python string literal without escapes, copied into buf (NUL-terminated).
static int parse_string(Parser *ps, char *buf, size_t size, const char *what) {
  skip_ws(ps);
  if (ps->p >= ps->end || (*ps->p != '\'' && *ps->p != '"'))
    return tdsl_set_error("'%s': malformed .npy header: expected a string for %s", ps->path, what);
  char q = *ps->p++;
  const char *s = ps->p;
  while (ps->p < ps->end && *ps->p != q && *ps->p != '\\') ps->p++;
  if (ps->p >= ps->end || *ps->p != q)
    return tdsl_set_error("'%s': malformed .npy header: bad string for %s", ps->path, what);
  size_t n = (size_t)(ps->p - s);
  ps->p++;
  if (n >= size) n = size - 1;  // longer than any key or descr we know: compared below
  // Non-printable bytes become '?': none is part of a name we accept, and the text
  // may end up in an error message.
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    buf[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
  }
  buf[n] = '\0';
  return 0;
}

static int parse_descr(Parser *ps, Header *h) {
  skip_ws(ps);
  if (ps->p < ps->end && (*ps->p == '[' || *ps->p == '{'))
    return tdsl_set_error("'%s': structured dtypes are not supported", ps->path);
  char d[32];
  if (parse_string(ps, d, sizeof d, "'descr'")) return 1;
  for (size_t i = 0; i < sizeof descrs / sizeof descrs[0]; i++) {
    if (strcmp(d, descrs[i].descr) == 0) {
      h->dtype = descrs[i].dtype;
      h->raw_u16 = h->dtype == TDSL_BF16;
      return 0;
    }
  }
  if (d[0] == '>')
    return tdsl_set_error("'%s': big-endian dtype '%s' is not supported", ps->path, d);
  if (strchr(d, 'O')) return tdsl_set_error("'%s': object arrays are not supported", ps->path);
  return tdsl_set_error(
      "'%s': unsupported dtype '%s' (expected one of |b1 |u1 |i1 <i2 <i4 <i8 <f2 <u2 <f4 <f8 <c8 <c16)", ps->path, d);
}

static int parse_shape(Parser *ps, Header *h) {
  if (!eat(ps, '('))
    return tdsl_set_error("'%s': malformed .npy header: 'shape' is not a tuple", ps->path);
  h->ndim = 0;
  for (;;) {
    if (eat(ps, ')')) return 0;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '-')
      return tdsl_set_error("'%s': negative dimension in shape", ps->path);
    if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
      return tdsl_set_error("'%s': malformed .npy header: bad 'shape'", ps->path);
    int64_t v = 0;
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
      int digit = *ps->p++ - '0';
      if (v > (INT64_MAX - digit) / 10)
        return tdsl_set_error("'%s': dimension too large in shape", ps->path);
      v = v * 10 + digit;
    }
    if (ps->p < ps->end && *ps->p == 'L') ps->p++;  // Python 2 longs
    if (h->ndim == TDSL_MAX_DIMS)
      return tdsl_set_error("'%s': more than %d dimensions", ps->path, TDSL_MAX_DIMS);
    h->shape[h->ndim++] = v;
    if (eat(ps, ')')) return 0;
    if (!eat(ps, ',')) return tdsl_set_error("'%s': malformed .npy header: bad 'shape'", ps->path);
  }
}

// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
static int parse_dict(Parser *ps, Header *h) {
  bool seen[3] = {false, false, false};
  static const char *const keys[3] = {"descr", "fortran_order", "shape"};
  if (!eat(ps, '{')) return tdsl_set_error("'%s': .npy header is not a dict", ps->path);
  while (!eat(ps, '}')) {
    char key[32];
    if (parse_string(ps, key, sizeof key, "a key")) return 1;
    int k = 0;
    while (k < 3 && strcmp(key, keys[k]) != 0) k++;
    if (k == 3) return tdsl_set_error("'%s': unexpected key '%s' in .npy header", ps->path, key);
    if (seen[k]) return tdsl_set_error("'%s': duplicate key '%s' in .npy header", ps->path, key);
    seen[k] = true;
    if (!eat(ps, ':'))
      return tdsl_set_error("'%s': malformed .npy header: expected ':' after '%s'", ps->path, key);
    if (k == 0) {
      if (parse_descr(ps, h)) return 1;
    } else if (k == 1) {
      if (eat_word(ps, "True"))
        h->fortran = true;
      else if (eat_word(ps, "False"))
        h->fortran = false;
      else
        return tdsl_set_error("'%s': malformed .npy header: 'fortran_order' is not True or False",
                              ps->path);
    } else if (parse_shape(ps, h)) {
      return 1;
    }
    if (!eat(ps, ',')) {
      if (eat(ps, '}')) break;
      return tdsl_set_error("'%s': malformed .npy header: expected ',' or '}'", ps->path);
    }
  }
  for (int k = 0; k < 3; k++) {
    if (!seen[k]) return tdsl_set_error("'%s': .npy header lacks '%s'", ps->path, keys[k]);
  }
  skip_ws(ps);
  if (ps->p != ps->end)
    return tdsl_set_error("'%s': malformed .npy header: text after the dict", ps->path);
  return 0;
}

// ---- load ----

static int read_exact(FILE *f, void *buf, size_t n) { return fread(buf, 1, n, f) == n ? 0 : 1; }

static int read_header(FILE *f, const char *path, Header *h, int64_t *data_start) {
  unsigned char pre[10];
  size_t got = fread(pre, 1, sizeof pre, f);
  if (got < sizeof magic || memcmp(pre, magic, sizeof magic) != 0)
    return tdsl_set_error("'%s': not a .npy file (bad magic)", path);
  if (got < 8) return tdsl_set_error("'%s': truncated .npy header", path);
  int major = pre[6], minor = pre[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    return tdsl_set_error("'%s': unsupported .npy format version %d.%d", path, major, minor);
  uint32_t hlen;
  int64_t start = 0;
  if (major == 1) {
    if (got < 10) return tdsl_set_error("'%s': truncated .npy header", path);
    hlen = (uint32_t)pre[8] | (uint32_t)pre[9] << 8;
    start = 10;
  } else {
    unsigned char more[2];
    if (got < 10 || read_exact(f, more, 2))
      return tdsl_set_error("'%s': truncated .npy header", path);
    hlen = (uint32_t)pre[8] | (uint32_t)pre[9] << 8 | (uint32_t)more[0] << 16 |
           (uint32_t)more[1] << 24;
    start = 12;
  }
  if (hlen > MAX_HEADER)
    return tdsl_set_error("'%s': .npy header too long (%lu bytes)", path, (unsigned long)hlen);
  char *text = malloc(hlen ? hlen : 1);
  if (!text) return tdsl_set_error("out of memory reading '%s'", path);
  if (read_exact(f, text, hlen)) {
    free(text);
    return tdsl_set_error("'%s': truncated .npy header", path);
  }
  // Version 3.0 headers are UTF-8; every byte we accept is ASCII, so a non-ASCII
  // byte can only sit inside a string we then refuse.
  Parser ps = {text, text + hlen, path};
  memset(h, 0, sizeof *h);
  int rc = parse_dict(&ps, h);
  free(text);
  *data_start = start + hlen;
  return rc;
}

static const char *file_dtype_name(const Header *h) {
  return h->raw_u16 ? "u16 (bf16 bits)" : tdsl_dtype_name(h->dtype);
}

static int load(const char *path, int want, tdsl_tensor *out) {
  FILE *f = fopen(path, "rb");
  if (!f) return tdsl_set_error("cannot open '%s': %s", path, strerror(errno));
  Header h;
  int64_t start = 0;
  tdsl_tensor t = {0}, c = {0};
  if (read_header(f, path, &h, &start)) goto fail;
  if (want >= 0 && (tdsl_dtype)want != h.dtype) {
    tdsl_set_error("'%s' holds dtype %s, expected %s", path, file_dtype_name(&h),
                   tdsl_dtype_name((tdsl_dtype)want));
    goto fail;
  }
  if (fseek(f, 0, SEEK_END) != 0) {
    tdsl_set_error("cannot seek in '%s': %s", path, strerror(errno));
    goto fail;
  }
  long size = ftell(f);
  int64_t numel;
  size_t es = tdsl_dtype_size(h.dtype);
  bool fits = true;
  numel = 1;
  for (int i = 0; i < h.ndim; i++) {
    if (h.shape[i] == 0) numel = 0;
  }
  for (int i = 0; i < h.ndim && numel; i++) {
    if (__builtin_mul_overflow(numel, h.shape[i], &numel)) fits = false;
  }
  int64_t nbytes;
  if (!fits || __builtin_mul_overflow(numel, (int64_t)es, &nbytes)) {
    tdsl_set_error("'%s': shape too large", path);
    goto fail;
  }
  if (size < 0 || size - start < nbytes) {
    tdsl_set_error("'%s': truncated data: expected %lld bytes, found %lld", path, (long long)nbytes,
                   (long long)(size < start ? 0 : size - start));
    goto fail;
  }
  if (fseek(f, (long)start, SEEK_SET) != 0) {
    tdsl_set_error("cannot seek in '%s': %s", path, strerror(errno));
    goto fail;
  }
  if (tdsl_tensor_empty_uninit(&t, h.dtype, h.ndim, h.shape)) goto fail;  // every byte is read below
  if (nbytes && read_exact(f, t.storage->data, (size_t)nbytes)) {
    tdsl_set_error("'%s': read error", path);
    goto fail;
  }
  if (h.dtype == TDSL_BOOL) {
    unsigned char *b = t.storage->data;
    for (int64_t i = 0; i < nbytes; i++) b[i] = b[i] != 0;
  }
  if (h.fortran && h.ndim > 1 && numel > 0) {
    // Column-major: view the bytes with reversed strides, then copy to row-major.
    int64_t st[TDSL_MAX_DIMS], acc = 1;
    for (int i = 0; i < h.ndim; i++) {
      st[i] = acc;
      acc *= h.shape[i] > 1 ? h.shape[i] : 1;
    }
    for (int i = 0; i < h.ndim; i++) t.strides[i] = st[i];
    if (tdsl_tensor_contiguous(&c, &t)) goto fail;
    tdsl_tensor_release(&t);
    t = c;
  }
  fclose(f);
  *out = t;
  return 0;
fail:
  fclose(f);
  tdsl_tensor_release(&t);
  return 1;
}

int tdsl_load_npy(const char *path, tdsl_tensor *out) { return load(path, -1, out); }

int tdsl_load_npy_as(const char *path, tdsl_dtype want, tdsl_tensor *out) {
  if ((unsigned)want >= TDSL_DTYPE_COUNT) return tdsl_set_error("invalid dtype %d", (int)want);
  return load(path, (int)want, out);
}

// ---- save ----

// Builds the padded header ("{...}" + spaces + '\n') into buf; returns its length.
static size_t build_header(const tdsl_tensor *t, char *buf, size_t size, int *major) {
  char shape[TDSL_MAX_DIMS * 24 + 8];
  size_t n = 0;
  n += (size_t)snprintf(shape + n, sizeof shape - n, "(");
  for (int i = 0; i < t->ndim; i++)
    n += (size_t)snprintf(shape + n, sizeof shape - n, "%s%lld", i ? ", " : "",
                          (long long)t->shape[i]);
  snprintf(shape + n, sizeof shape - n, t->ndim == 1 ? ",)" : ")");
  int len = snprintf(buf, size, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                     descr_of(t->dtype), shape);
  size_t hl = (size_t)len + 1;  // + '\n'
  *major = 10 + hl > 65535 + 10 ? 2 : 1;
  size_t pre = *major == 1 ? 10 : 12;
  size_t total = (pre + hl + 63) / 64 * 64;
  size_t pad = total - pre - hl;
  memset(buf + len, ' ', pad);
  buf[len + pad] = '\n';
  return (size_t)len + pad + 1;
}

// Writes the elements in logical row-major order (bools as 0/1 bytes).
static int write_data(FILE *f, const tdsl_tensor *t) {
  int64_t numel = tdsl_tensor_numel(t);
  size_t es = tdsl_dtype_size(t->dtype);
  if (numel == 0) return 0;
  if (tdsl_tensor_is_contiguous(t) && t->dtype != TDSL_BOOL)
    return fwrite(tdsl_tensor_data(t), es, (size_t)numel, f) == (size_t)numel ? 0 : 1;
  unsigned char chunk[1 << 16];
  size_t used = 0;
  int64_t idx[TDSL_MAX_DIMS] = {0};
  const unsigned char *base = t->storage->data;
  do {
    const unsigned char *p = base + tdsl_tensor_elem(t, idx) * (int64_t)es;
    if (t->dtype == TDSL_BOOL)
      chunk[used] = *p != 0;
    else
      memcpy(chunk + used, p, es);
    used += es;
    if (used + 8 > sizeof chunk) {
      if (fwrite(chunk, 1, used, f) != used) return 1;
      used = 0;
    }
  } while (tdsl_index_next(t->ndim, t->shape, idx));
  return fwrite(chunk, 1, used, f) == used ? 0 : 1;
}

int tdsl_save_npy(const char *path, const tdsl_tensor *t) {
  static atomic_uint counter;
  if (!t->storage) return tdsl_set_error("cannot save '%s': tensor has no storage", path);
  if (t->storage->device != 0)
    return tdsl_set_error("cannot save '%s': tensor is not on the host", path);
  char header[512];
  int major;
  size_t hlen = build_header(t, header, sizeof header, &major);
  size_t plen = strlen(path);
  char *tmp = malloc(plen + 64);
  if (!tmp) return tdsl_set_error("out of memory saving '%s'", path);
  int fd = -1;
  for (int tries = 0; fd < 0 && tries < 100; tries++) {
    snprintf(tmp, plen + 64, "%s.tmp%ld.%u", path, (long)getpid(), atomic_fetch_add(&counter, 1));
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    int e = errno;
    free(tmp);
    return tdsl_set_error("cannot write '%s': %s", path, strerror(e));
  }
  errno = 0;
  FILE *f = fdopen(fd, "wb");
  if (!f) {
    close(fd);
    goto fail;
  }
  unsigned char pre[12];
  memcpy(pre, magic, sizeof magic);
  pre[6] = (unsigned char)major;
  pre[7] = 0;
  for (int i = 0; i < (major == 1 ? 2 : 4); i++) pre[8 + i] = (unsigned char)(hlen >> (8 * i));
  size_t npre = major == 1 ? 10 : 12;
  bool ok = fwrite(pre, 1, npre, f) == npre && fwrite(header, 1, hlen, f) == hlen &&
            write_data(f, t) == 0;
  if (fclose(f) != 0) ok = false;
  if (ok && rename(tmp, path) == 0) {
    free(tmp);
    return 0;
  }
fail:;
  int e = errno;
  unlink(tmp);
  free(tmp);
  return tdsl_set_error("cannot write '%s': %s", path, e ? strerror(e) : "write failed");
}
