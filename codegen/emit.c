// codegen/emit.c: what the text backends (C, CUDA) share — a growable text buffer
// living in cx->arena, the renderer of affine element indices, the naming rule that
// keeps generated names apart from user names, the names and header comments of
// kernels, the entry's static tables and its opening and closing lines (runtime/entry.c
// does the work between), and the C declarations of the entries (--emit=header),
// which every backend shares because the ABI is one.
//
// Invariant: every name the generated code makes up begins with "tdsl_g_" (a
// function name may not begin with "tdsl_", LANGUAGE.md §3) or is a parameter
// name checked by safe_name().
#include "codegen/codegen.h"

#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

void buf_init(Buf *b, Ctx *cx) {
  *b = (Buf){.cx = cx, .cap = 256};
  b->data = arena_alloc(&cx->arena, b->cap);
}

static void buf_reserve(Buf *b, size_t extra) {
  if (b->len + extra + 1 <= b->cap)
    return;
  size_t cap = b->cap * 2;
  while (cap < b->len + extra + 1)
    cap *= 2;
  char *d = arena_alloc(&b->cx->arena, cap);
  memcpy(d, b->data, b->len + 1);
  b->data = d;
  b->cap = cap;
}

void buf_printf(Buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
  va_end(ap);
  TD_ASSERT(n >= 0);
  if ((size_t)n >= b->cap - b->len) {
    buf_reserve(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
  }
  b->len += (size_t)n;
}

void buf_puts(Buf *b, const char *s) {
  size_t n = strlen(s);
  buf_reserve(b, n);
  memcpy(b->data + b->len, s, n + 1);
  b->len += n;
}

void buf_indent(Buf *b, int level) {
  for (int i = 0; i < level; i++)
    buf_puts(b, "  ");
}

// Printable ASCII stays as is (with \" \\ escaped, and '?' escaped so no trigraph
// can form); anything else becomes an octal escape, so the literal is plain ASCII.
void buf_c_string(Buf *b, const char *s) {
  buf_puts(b, "\"");
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      buf_printf(b, "\\%c", *p);
    else if (*p == '?')
      buf_puts(b, "\\?");
    else if (*p >= 0x20 && *p < 0x7f)
      buf_printf(b, "%c", *p);
    else
      buf_printf(b, "\\%03o", *p);
  }
  buf_puts(b, "\"");
}

void buf_write(const Buf *b, FILE *out) { fwrite(b->data, 1, b->len, out); }

// Whether s is "a", "12" or "2 * a1": names and numbers joined by " * ", which bind
// tighter than the sum an index is.
static bool product_text(const char *s) {
  for (; *s; s++)
    if (!(*s == '_' || *s == ' ' || *s == '*' || (*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') ||
          (*s >= 'A' && *s <= 'Z')))
      return false;
  return true;
}

void emit_index(Buf *b, const LIndex *ix, void (*dyn)(void *ctx, Buf *b, const LExpr *e), void *ctx) {
  bool any = false;
  if (ix->base != 0 || (ix->nterms == 0 && !ix->dyn)) {
    buf_printf(b, "%" PRId64, ix->base);
    any = true;
  }
  for (int k = 0; k < ix->nterms; k++) {
    int64_t c = ix->coef[k];
    if (c == 0)
      continue;
    const char *sign = c < 0 ? "-" : "+";
    uint64_t mag = c < 0 ? 0u - (uint64_t)c : (uint64_t)c;
    if (any)
      buf_printf(b, " %s ", sign);
    else if (c < 0)
      buf_puts(b, "-");
    if (mag == 1)
      buf_printf(b, "v%d", ix->var[k]);
    else
      buf_printf(b, "%" PRIu64 " * v%d", mag, ix->var[k]);
    any = true;
  }
  if (ix->dyn) {
    if (any)
      buf_puts(b, " + ");
    size_t at = b->len;
    dyn(ctx, b, ix->dyn);
    if (!product_text(b->data + at)) {  // parenthesised unless a product of names and numbers
      Buf t;
      buf_init(&t, b->cx);
      buf_printf(&t, "(%s)", b->data + at);
      b->len = at;
      buf_puts(b, t.data);
    }
    any = true;
  }
  if (!any)
    buf_puts(b, "0");
}

// ---- names ----
static const char *const unsafe_names[] = {
    // C11 keywords
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern",
    "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short", "signed",
    "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while",
    // macros and types of the headers the generated code includes
    "bool", "true", "false", "NULL", "errno", "assert", "stdin", "stdout", "stderr", "EOF", "NAN", "INFINITY",
    "HUGE_VAL", "HUGE_VALF", "FILE", "size_t", "offsetof", "static_assert", "alignas", "alignof", "noreturn",
    "complex", "imaginary", "I", "math_errhandling", "MATH_ERRNO", "MATH_ERREXCEPT", "FP_NAN", "FP_INFINITE",
    "FP_ZERO", "FP_NORMAL", "FP_SUBNORMAL", "signbit", "isnan", "isinf", "isfinite", "fpclassify", "isnormal",
    "isgreater", "isless", "isgreaterequal", "islessequal", "islessgreater", "isunordered", "ptrdiff_t",
    "va_list", "va_start", "va_end", "va_arg", "va_copy", "wchar_t",
    // the names the entry itself uses
    "rc", "args", "outs", "b",
};

static bool safe_name(const char *s) {
  if (!*s || s[0] == '_' || strncmp(s, "tdsl", 4) == 0)
    return false;
  for (size_t i = 0; i < sizeof unsafe_names / sizeof *unsafe_names; i++) {
    if (strcmp(s, unsafe_names[i]) == 0)
      return false;
  }
  // out0, out1, ... name the results; int8_t, INT64_MAX, ... come from stdint.h
  if (strncmp(s, "out", 3) == 0 && s[3] >= '0' && s[3] <= '9')
    return false;
  size_t n = strlen(s);
  if (n > 2 && strcmp(s + n - 2, "_t") == 0)
    return false;
  if (strncmp(s, "INT", 3) == 0 || strncmp(s, "UINT", 4) == 0 || strncmp(s, "SIZE_", 5) == 0 ||
      strncmp(s, "PTRDIFF_", 8) == 0 || strncmp(s, "FLT_", 4) == 0 || strncmp(s, "DBL_", 4) == 0)
    return false;
  for (const char *p = s; *p; p++) {
    char c = *p;
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (p != s && c >= '0' && c <= '9')))
      return false;
  }
  return true;
}

const char *emit_param_name(Ctx *cx, const LProgram *p, int i) {
  const char *n = p->params.data[i].name;
  if (safe_name(n))
    return n;
  return arena_printf(&cx->arena, "tdsl_g_p%d", i);
}

// The C type of a scalar parameter: double, int64_t or bool.
static const char *scalar_c_type(DType dt) { return dt == DT_F64 ? "double" : dt == DT_I64 ? "int64_t" : "bool"; }

void emit_entry_decl(Ctx *cx, Buf *b, const LProgram *p) {
  buf_printf(b, "int %s(", p->name);
  int n = 0;
  for (int i = 0; i < p->params.len; i++, n++) {
    const LParam *q = &p->params.data[i];
    if (q->scalar)
      buf_printf(b, "%s%s %s", n ? ", " : "", scalar_c_type(q->dtype), emit_param_name(cx, p, i));
    else
      buf_printf(b, "%s%stdsl_tensor *%s", n ? ", " : "", q->mut ? "" : "const ", emit_param_name(cx, p, i));
  }
  for (int k = 0; k < p->outputs.len; k++, n++)
    buf_printf(b, "%stdsl_tensor *out%d", n ? ", " : "", k);
  if (n == 0)
    buf_puts(b, "void");
  buf_puts(b, ")");
}

// ---- kernels and entries: the text both C backends print around their own ----
// A matmul kernel keeps the scheduler's choice: its streamed result is written from
// the GEMM's scratch tile a panel at a time, and a second copy of its tiling code (the
// vocabulary projection of GPT-2: 2 KB of C) costs more than the choice wins there.
const LKernel *emit_plain_stores(Ctx *cx, const LKernel *k) {
  if (k->mm)
    return NULL;
  int i = 0;
  while (i < k->args.len && !k->args.data[i].stream)
    i++;
  if (i == k->args.len)
    return NULL;
  LKernel *plain = arena_alloc(&cx->arena, sizeof *plain);
  *plain = *k;
  plain->args.data = arena_alloc(&cx->arena, sizeof(LArg) * (size_t)k->args.len);
  plain->args.cap = k->args.len;
  for (int a = 0; a < k->args.len; a++) {
    plain->args.data[a] = k->args.data[a];
    plain->args.data[a].stream = false;
  }
  return plain;
}

const char *emit_kernel_name(Ctx *cx, const LProgram *p, int i) {
  const LKernel *k = p->kernels.data[i];
  return arena_printf(&cx->arena, "tdsl_g_%s_%s", p->name, (k->same ? k->same : k)->name);
}

int emit_kernel_code(const LProgram *p, int i) {
  const LKernel *same = p->kernels.data[i]->same;
  int j = i;
  while (same && j > 0 && p->kernels.data[j] != same)
    j--;
  TD_ASSERT(!same || p->kernels.data[j] == same);
  return j;
}

// "also runs k14, k24, k34" or, for four or more at one step (a model's layers),
// "also runs k14, k24, ..., k114 (11)".
const char *emit_shared_note(Ctx *cx, const LProgram *p, int i) {
  int *js = arena_alloc(&cx->arena, sizeof(int) * (size_t)p->kernels.len), n = 0;
  for (int j = i + 1; j < p->kernels.len; j++)
    if (p->kernels.data[j]->same == p->kernels.data[i])
      js[n++] = j;
  if (!n)
    return NULL;
  bool even = n >= 4;
  for (int x = 2; x < n && even; x++)
    even = js[x] - js[x - 1] == js[1] - js[0];
  Buf b;
  buf_init(&b, cx);
  for (int x = 0; x < n; x++) {
    if (even && x == 2)
      buf_puts(&b, ", ...");
    if (!even || x < 2 || x == n - 1)
      buf_printf(&b, "%s%s", x ? ", " : "also runs ", p->kernels.data[js[x]]->name);
  }
  if (even)
    buf_printf(&b, " (%d)", n);
  buf_puts(&b, ": the same code on other buffers or offsets");
  return b.data;
}

// ---- the entry's calls: repeated runs, which c.c and llvm_entry.c roll into loops ----
// A model's layers, unrolled from `for i in range(L)` over stacked weights, call the
// same kernels on the same buffers (share_temps) L times, each time further into the
// weights: such a run of calls is emitted once, in a loop whose index advances each
// argument's start (LArg.at) by its step.

// Whether call j repeats call i r times later: the same function (LKernel.same), the
// same buffers, each start moved by r times its step from i to `next` (the call one
// period after i).
static bool repeats(const LProgram *p, int i, int next, int j, int64_t r) {
  const LKernel *a = p->kernels.data[i], *b = p->kernels.data[j], *c = p->kernels.data[next];
  const LKernel *code = a->same ? a->same : a;  // (emit_kernel_code's kernel, without its search)
  if ((b->same ? b->same : b) != code || (c->same ? c->same : c) != code || a->args.len != b->args.len ||
      a->args.len != c->args.len)
    return false;
  for (int x = 0; x < a->args.len; x++) {
    const LArg *u = &a->args.data[x], *v = &b->args.data[x], *w = &c->args.data[x];
    if (u->buf != v->buf || u->buf != w->buf || v->at - u->at != r * (w->at - u->at))
      return false;
  }
  return true;
}

// The longest run of repeated calls in [lo, hi): its start, period and count (count
// 1: none). A run from s with period per covers at most hi - s - per repeated calls, so
// the search stops where that cannot beat the best found: without that bound, the calls
// of a long periodic chain (a flat sum of 40,000 terms: 625 calls alternating between
// two buffers) took time cubic in their number (0.25 s of building the LLVM module).
void emit_find_run(const LProgram *p, int lo, int hi, int *start, int *period, int *count) {
  *start = lo, *period = 1, *count = 1;
  int best = 0;
  for (int s = lo; s < hi && hi - s - 1 > best; s++)
    for (int per = 1; s + 2 * per <= hi && hi - s - per > best; per++) {
      int r = 1;
      for (bool ok = true; ok && s + (r + 1) * per <= hi; r += ok) {
        for (int q = 0; q < per && ok; q++)
          ok = repeats(p, s + q, s + per + q, s + r * per + q, r);
      }
      if ((r - 1) * per > best)
        best = (r - 1) * per, *start = s, *period = per, *count = r;
    }
}

// s inside a // comment: a comment never holds a newline or the end of a block comment
static void comment_text(Buf *b, const char *s) {
  for (const char *q = s; *q; q++)
    buf_printf(b, "%c", *q == '\n' || *q == '\r' ? ' ' : *q);
}

static const char *const buf_kinds[] = {"param", "temp", "result", "shared"};

// "// fn.kN: ops (lines)", the note, and "// b0: name, b1: name, ..." (the dtypes are
// the parameters', the sizes and kinds in the entry's buffer table).
void emit_kernel_comment(Buf *b, const LProgram *p, int i, const char *note) {
  const LKernel *k = p->kernels.data[i];
  buf_printf(b, "// %s.%s:", p->name, k->name);
  for (int j = 0; j < k->ops.len; j++)
    buf_printf(b, "%s %s", j ? "," : "", k->ops.data[j]);
  if (k->lines.len) {
    buf_printf(b, " (line%s", k->lines.len > 1 ? "s" : "");
    for (int j = 0; j < k->lines.len; j++)
      buf_printf(b, "%s %d", j ? "," : "", k->lines.data[j]);
    buf_puts(b, ")");
  }
  if (note)
    buf_printf(b, "\n// %s", note);
  buf_puts(b, "\n//");
  int nargs = k->args.len;
  for (int j = 0; j < nargs; j++) {
    const LBuf *lb = &p->bufs.data[k->args.data[j].buf];
    buf_printf(b, " b%d: ", j);
    comment_text(b, lb->name ? lb->name : "?");
    buf_puts(b, j + 1 < nargs ? "," : "");
  }
  buf_puts(b, "\n");
}

static const char *const dtype_enum[DT_COUNT] = {"TDSL_BOOL", "TDSL_I32", "TDSL_I64", "TDSL_F16", "TDSL_BF16",
                                                 "TDSL_F32",  "TDSL_F64", "TDSL_U8",  "TDSL_I8",  "TDSL_I16",
                                                 "TDSL_C64",  "TDSL_C128"};

static void int_list(Buf *b, int n, const int64_t *xs) {
  buf_puts(b, "{");
  for (int i = 0; i < n; i++)
    buf_printf(b, "%s%" PRId64, i ? ", " : "", xs[i]);
  buf_puts(b, n ? "}" : "0}");
}

void emit_entry_tables(Buf *b, const LProgram *p) {
  const char *fn = p->name;
  int np = p->params.len, nb = loop_host_bufs(p), no = p->outputs.len;
  if (np) {
    buf_printf(b, "static const tdsl_entry_param tdsl_g_%s_params[%d] = {\n", fn, np);
    for (int i = 0; i < np; i++) {
      const LParam *q = &p->params.data[i];
      buf_puts(b, "  {");
      buf_c_string(b, q->name);
      buf_printf(b, ", %s, %d, ", dtype_enum[q->dtype], q->ndim);
      int_list(b, q->ndim, q->shape);
      buf_printf(b, ", %d, %d},\n", q->mut, q->buf);
    }
    buf_puts(b, "};\n");
  }
  if (nb) {
    buf_printf(b, "static const tdsl_entry_buf tdsl_g_%s_bufs[%d] = {\n", fn, nb);
    for (int i = 0; i < nb; i++) {
      const LBuf *lb = &p->bufs.data[i];
      buf_printf(b, "  {%s, %" PRId64 ", %d},  // b%d: ", dtype_enum[lb->dtype], lb->scratch ? 0 : lb->numel,
                 lb->kind == LB_PARAM ? lb->param : -1, i);  // (scratch: per thread, from tdsl_scratch)
      comment_text(b, lb->name ? lb->name : "?");
      buf_printf(b, " (%s)\n", buf_kinds[lb->kind]);
    }
    buf_puts(b, "};\n");
  }
  if (no) {
    buf_printf(b, "static const tdsl_entry_output tdsl_g_%s_outputs[%d] = {\n", fn, no);
    for (int k = 0; k < no; k++) {
      const LOutput *o = &p->outputs.data[k];
      buf_printf(b, "  {%d, %d, ", o->buf, o->view.ndim);
      int_list(b, o->view.ndim, o->view.shape);
      buf_puts(b, ", ");
      int_list(b, o->view.ndim, o->view.strides);
      buf_printf(b, ", %" PRId64 ", %d},\n", o->view.offset, dtype_is_complex(o->dtype));
    }
    buf_puts(b, "};\n");
  }
  buf_printf(b, "static const tdsl_entry_info tdsl_g_%s_info = {", fn);
  buf_c_string(b, fn);
  buf_printf(b, ", %d, %s%s%s, %d, %s%s%s, %d, %s%s%s};\n", np, np ? "tdsl_g_" : "NULL", np ? fn : "",
             np ? "_params" : "", nb, nb ? "tdsl_g_" : "NULL", nb ? fn : "", nb ? "_bufs" : "", no,
             no ? "tdsl_g_" : "NULL", no ? fn : "", no ? "_outputs" : "");
}

void emit_entry_begin(Ctx *cx, Buf *b, const LProgram *p) {
  int np = p->params.len, nb = loop_host_bufs(p), no = p->outputs.len;
  emit_entry_decl(cx, b, p);
  buf_puts(b, " {\n");
  // a scalar argument: a 0-d tensor over the by-value parameter (runtime/entry.c views it)
  for (int i = 0; i < np; i++) {
    const LParam *q = &p->params.data[i];
    if (!q->scalar)
      continue;
    const char *n = emit_param_name(cx, p, i);
    buf_printf(b, "  tdsl_storage tdsl_g_s%d = {1, &%s, sizeof %s, 0};\n", i, n, n);
    buf_printf(b, "  const tdsl_tensor tdsl_g_t%d = {&tdsl_g_s%d, %s, 0, {0}, {0}, 0};\n", i, i, dtype_enum[q->dtype]);
  }
  if (np) {
    buf_puts(b, "  const tdsl_tensor *tdsl_g_args[] = {");
    for (int i = 0; i < np; i++) {
      if (p->params.data[i].scalar)
        buf_printf(b, "%s&tdsl_g_t%d", i ? ", " : "", i);
      else
        buf_printf(b, "%s%s", i ? ", " : "", emit_param_name(cx, p, i));
    }
    buf_puts(b, "};\n");
  } else {
    buf_puts(b, "  const tdsl_tensor *const *tdsl_g_args = NULL;\n");
  }
  if (no) {
    buf_puts(b, "  tdsl_tensor *tdsl_g_outs[] = {");
    for (int k = 0; k < no; k++)
      buf_printf(b, "%sout%d", k ? ", " : "", k);
    buf_puts(b, "};\n");
  } else {
    buf_puts(b, "  tdsl_tensor *const *tdsl_g_outs = NULL;\n");
  }
  if (nb)
    buf_printf(b, "  tdsl_tensor tdsl_g_b[%d];\n", nb);
  else
    buf_puts(b, "  tdsl_tensor *tdsl_g_b = NULL;\n");
  buf_printf(b, "  int tdsl_g_rc = tdsl_entry_begin(&tdsl_g_%s_info, tdsl_g_args, tdsl_g_outs, tdsl_g_b);\n", p->name);
  buf_puts(b, "  if (tdsl_g_rc != 0)\n    return tdsl_g_rc;\n");
}

void emit_entry_end(Buf *b, const LProgram *p) {
  buf_printf(b, "  return tdsl_entry_end(&tdsl_g_%s_info, tdsl_g_args, tdsl_g_outs, tdsl_g_b, tdsl_g_rc);\n}\n",
             p->name);
}

static void shape_text(Buf *b, DType dt, int ndim, const int64_t *shape) {
  buf_printf(b, "%s[", dtype_name(dt));
  for (int i = 0; i < ndim; i++)
    buf_printf(b, "%s%" PRId64, i ? ", " : "", shape[i]);
  buf_puts(b, "]");
}

// "// f(x: f32[2, 3], mut y: i64[4], eps: float) -> (f32[3, 2])", then for a generic
// function "// with N=2, D=3" (the dims this entry was compiled for).
static void emit_signature_comment(Buf *b, const LProgram *p) {
  buf_printf(b, "// %s(", p->name);
  for (int i = 0; i < p->params.len; i++) {
    const LParam *q = &p->params.data[i];
    buf_printf(b, "%s%s%s: ", i ? ", " : "", q->mut ? "mut " : "", q->name);
    if (q->scalar)
      buf_puts(b, q->dtype == DT_F64 ? "float" : q->dtype == DT_I64 ? "int" : "bool");
    else
      shape_text(b, q->dtype, q->ndim, q->shape);
  }
  buf_puts(b, ") -> (");
  for (int k = 0; k < p->outputs.len; k++) {
    const LOutput *o = &p->outputs.data[k];
    buf_puts(b, k ? ", " : "");
    shape_text(b, o->dtype, o->view.ndim, o->view.shape);
  }
  buf_puts(b, ")\n");
  if (p->bound)
    buf_printf(b, "// with %s\n", p->bound);
}

// The include guard: TDSL_GEN_<FILE STEM>_H, the stem reduced to [A-Z0-9_].
static void guard_name(Buf *b, const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char *dot = strrchr(base, '.');
  size_t n = dot && dot != base ? (size_t)(dot - base) : strlen(base);
  buf_puts(b, "TDSL_GEN_");
  for (size_t i = 0; i < n; i++) {
    char c = base[i];
    if (c >= 'a' && c <= 'z')
      c = (char)(c - 'a' + 'A');
    else if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
      c = '_';
    buf_printf(b, "%c", c);
  }
  buf_puts(b, "_H");
}

const char *emit_source_name(Ctx *cx, LProgram *const *progs, int nprogs) {
  if (nprogs && progs[0]->file)
    return progs[0]->file;
  return cx->src_path ? cx->src_path : "no file";
}

void emit_header(Ctx *cx, LProgram *const *progs, int nprogs, FILE *out) {
  Buf b, g;
  buf_init(&b, cx);
  buf_init(&g, cx);
  guard_name(&g, emit_source_name(cx, progs, nprogs));
  buf_printf(&b, "// Generated by tdslc from %s: the C entry of each compiled function.\n",
             emit_source_name(cx, progs, nprogs));
  buf_puts(&b, "// Each returns 0 on success, else an error code (TDSL_ERR_*) with tdsl_last_error()\n"
               "// saying why. It fills every *outN; the caller releases them with tdsl_tensor_release.\n");
  buf_printf(&b, "#ifndef %s\n#define %s\n\n#include \"tdsl.h\"\n\n", g.data, g.data);
  buf_puts(&b, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
  for (int i = 0; i < nprogs; i++) {
    emit_signature_comment(&b, progs[i]);
    emit_entry_decl(cx, &b, progs[i]);
    buf_puts(&b, ";\n");
  }
  buf_puts(&b, "\n#ifdef __cplusplus\n}\n#endif\n\n");
  buf_printf(&b, "#endif\n");
  buf_write(&b, out);
}
