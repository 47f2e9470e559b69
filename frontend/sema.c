// frontend/sema.c: semantic analysis — the last stage allowed to report user errors.
// It evaluates `const` declarations, checks every function as an entry point (its
// parameters contiguous storages of their own), resolves names, inlines calls to user
// functions by checking a clone of the callee, binds builtin arguments by PyTorch 1.13's
// parameter names, promotes dtypes as torch.result_type does and infers every static
// shape and every view (shape, strides, offset over a storage) exactly as PyTorch.
// This file holds the entry points, declarations and declared types, and inlining;
// frontend/sema_internal.h lists the other pieces.
//
// Invariants kept for lower.c:
//   - every expression gets e->ty; a mistake gives TY_POISON, and poison operands
//     silently give poison, so one mistake is reported once;
//   - a builtin expression gets e->bi; BK_VIEW: e->operands[0] is the source tensor and
//     e->ty->view is over its storage (over a fresh copy when e->needs_copy); BK_NODE:
//     e->operands are the node inputs in op order and e->attr is normalised;
//   - fully constant expressions fold to TY_SCALAR and carry no bi.
#include "frontend/sema_internal.h"

#include <inttypes.h>
#include <string.h>

// ============================================================================
// Declared types, inlining of calls, entry points
// ============================================================================
// dtype[d0, d1, ...] with constant dims: a contiguous tensor type (cached on the node).
TType *param_type(Sema *sema, Ast *ty) {
  if (ty->ty) return ty->ty;
  if (ty->kind == AST_SCALAR_TYPE) {
    diag_error(sema->cx, ty->loc, "scalar parameters are not supported yet");
    return ty->ty = poison(sema);
  }
  if (ty->dtype == DT_COUNT) {
    diag_error(sema->cx, ty->oploc, "unknown dtype '%s'", ty->name);
    return ty->ty = poison(sema);
  }
  Sym *saved = sema->scope;
  sema->scope = NULL;  // dims see constants only
  int64_t shape[MAX_LIST] = {0};
  bool ok = true;
  int n = ty->list.len;
  for (int i = 0; i < n && i < MAX_LIST; i++) {
    Ast *d = ty->list.data[i];
    TType *t = check_expr(sema, d);
    if (is_poison(t)) {
      ok = false;
    } else if (!is_scalar(t) || t->dtype != DT_I64) {
      diag_error(sema->cx, d->loc, "dimension sizes must be integer constants, not %s", py_type_name(t));
      ok = false;
    } else if (t->ival < 0) {
      diag_error(sema->cx, d->loc, "Trying to create tensor with negative dimension %" PRId64 ": %s", t->ival,
                 shape_str(sema, 1, &t->ival));
      ok = false;
    } else {
      shape[i] = t->ival;
    }
  }
  sema->scope = saved;
  if (ok && !check_rank(sema, ty->loc, n)) ok = false;
  if (ok && !check_numel(sema, ty->loc, n, shape)) ok = false;
  TType *r;
  if (!ok) {
    r = poison(sema);
  } else {
    r = ty_new(sema, TY_TENSOR);
    r->dtype = ty->dtype;
    r->view = view_contiguous(n, shape);
    r->storage_numel = view_numel(r->view);
    r->storage = -1;
  }
  ty->ty = r;
  return r;
}

static bool on_stack(Sema *sema, const Ast *fn) {
  for (int i = 0; i < sema->stack.len; i++)
    if (sema->stack.data[i] == fn) return true;
  return false;
}

// A call written in an entry point's own body (sema_budget.c's numbers cover the calls
// it inlines in turn): its inlined body nests within TD_MAX_NESTING, and the ops every
// inlining in the program clones stay within TD_MAX_INLINE_OPS (each entry point
// inlines its calls anew, so the limit bounds the whole program's sema and memory).
// A limit is reported once; a later call over one is refused silently.
// A call outside every body (a const, a dimension) nests as deep as its callee.
static bool inline_fits(Sema *sema, const Ast *e, const Ast *fn) {
  int64_t total = sema->inlined + fn->inline_size;
  if ((sema->stack.len ? e->inline_height : fn->inline_height) > TD_MAX_NESTING) {
    if (!sema->over_budget)
      diag_error(sema->cx, call_loc(e),
                 "program too deeply nested: inlining '%s' here nests the program more than %d levels deep", fn->name,
                 TD_MAX_NESTING);
    sema->over_budget = true;
    return false;
  }
  if (total > TD_MAX_INLINE_OPS) {
    if (!sema->over_budget)
      diag_error(sema->cx, call_loc(e), "inlining this call would create %" PRId64 " ops; the limit is %d", total,
                 TD_MAX_INLINE_OPS);
    sema->over_budget = true;
    return false;
  }
  sema->inlined = total;
  return true;
}

TType *inline_call(Sema *sema, Ast *e, Ast *fn) {
  bool bad = !check_args(sema, e);
  if (on_stack(sema, fn)) {
    diag_error(sema->cx, call_loc(e), "recursive call to '%s'", fn->name);
    return poison(sema);
  }
  // bind arguments to parameters, positionally then by name
  int np = fn->list.len;
  Ast **args = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(np + 1));
  int k = 0;
  for (int i = 0; i < e->list.len; i++) {
    Ast *a = e->list.data[i];
    if (a->kind == AST_KWARG) continue;
    if (k >= np) {
      int given = 0;
      for (int j = 0; j < e->list.len; j++) given += e->list.data[j]->kind != AST_KWARG;
      diag_error(sema->cx, a->loc, "%s() takes %d positional argument%s but %d were given", fn->name, np,
                 np == 1 ? "" : "s", given);
      return poison(sema);
    }
    args[k++] = a;
  }
  for (int i = 0; i < e->list.len; i++) {
    Ast *a = e->list.data[i];
    if (a->kind != AST_KWARG) continue;
    int j = 0;
    while (j < np && strcmp(fn->list.data[j]->name, a->name)) j++;
    if (j == np) {
      diag_error(sema->cx, a->loc, "%s() got an unexpected keyword argument '%s'", fn->name, a->name);
      return poison(sema);
    }
    if (args[j]) {
      diag_error(sema->cx, a->loc, "%s() got multiple values for argument '%s'", fn->name, a->name);
      return poison(sema);
    }
    args[j] = a->rhs;
  }
  for (int j = 0; j < np; j++)
    if (!args[j]) {
      diag_error(sema->cx, call_loc(e), "%s() missing 1 required positional argument: '%s'", fn->name,
                 fn->list.data[j]->name);
      return poison(sema);
    }
  if (bad) return poison(sema);
  TType **pts = arena_alloc(&sema->cx->arena, sizeof(TType *) * (size_t)(np + 1));
  for (int j = 0; j < np; j++) {
    Ast *p = fn->list.data[j];
    TType *want = param_type(sema, p->type), *got = args[j]->ty;
    if (is_poison(want)) return poison(sema);
    if (!is_tensor(got) || got->dtype != want->dtype ||
        !same_shape(got->view.ndim, got->view.shape, want->view.ndim, want->view.shape)) {
      diag_error(sema->cx, args[j]->loc, "argument '%s' of '%s' must be %s, not %s", p->name, fn->name,
                 type_str(sema, want), type_str(sema, got));
      diag_note(sema->cx, name_loc(p), "'%s' declared here", p->name);
      bad = true;
      continue;
    }
    if (p->mut && !got->writable) {
      diag_error(sema->cx, args[j]->loc, "cannot write to '%s': parameters are read-only unless declared 'mut'",
                 target_name(args[j]));
      diag_note(sema->cx, name_loc(p), "'%s' of '%s' is declared 'mut'", p->name, fn->name);
      bad = true;
      continue;
    }
    pts[j] = ty_view_of(sema, got, got->view);
    pts[j]->writable = got->writable && p->mut;
  }
  if (bad) return poison(sema);
  if (sema->stack.len <= 1 && !inline_fits(sema, e, fn)) return poison(sema);
  Ast *clone = ast_clone(sema->cx, fn);
  e->inlined = clone;
  set_operands(sema, e, args, np);
  vec_push(&sema->cx->arena, &sema->stack, fn);
  int before = sema->cx->nerrors;
  TType *r = check_body(sema, clone, pts);
  sema->stack.len--;
  if (sema->cx->nerrors > before) diag_note(sema->cx, call_loc(e), "in the call to '%s' inlined here", fn->name);
  return r;
}

// Every function is checked as an entry point: contiguous parameters, storage = index.
static void check_entry(Sema *sema, Ast *fn) {
  int np = fn->list.len;
  TType **pts = arena_alloc(&sema->cx->arena, sizeof(TType *) * (size_t)(np + 1));
  for (int i = 0; i < np; i++) {
    Ast *p = fn->list.data[i];
    for (int j = 0; j < i; j++)
      if (!strcmp(fn->list.data[j]->name, p->name))
        diag_error(sema->cx, name_loc(p), "duplicate parameter '%s' in function '%s'", p->name, fn->name);
    TType *t = param_type(sema, p->type);
    if (!is_poison(t)) {
      t = ty_view_of(sema, t, t->view);
      t->storage = i;
      t->writable = p->mut;
    }
    pts[i] = t;
    p->ty = t;
  }
  for (int i = 0; i < fn->rets.len; i++) param_type(sema, fn->rets.data[i]);
  sema->nstorage = np;
  sema->entry = fn;
  vec_push(&sema->cx->arena, &sema->stack, fn);
  fn->ty = check_body(sema, fn, pts);
  sema->stack.len--;
}

// ============================================================================
// Declarations: constants and function names
// ============================================================================
static const char *const c_keywords[] = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern",
    "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short", "signed",
    "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "bool",
    "true", "false", "alignas", "alignof", "nullptr", "static_assert", "thread_local", "typeof", "_Alignas",
    "_Alignof", "_Atomic", "_Bool", "_Complex", "_Generic", "_Imaginary", "_Noreturn", "_Static_assert",
    "_Thread_local", "asm", "NULL", NULL};
static const char *const libc_names[] = {
    // stdlib, string, stdio, misc
    "malloc", "calloc", "realloc", "free", "aligned_alloc", "abort", "exit", "_Exit", "atexit", "quick_exit",
    "getenv", "system", "atoi", "atol", "atoll", "atof", "strtol", "strtoll", "strtoul", "strtoull", "strtod",
    "strtof", "strtold", "qsort", "bsearch", "rand", "srand", "abs", "labs", "llabs", "div", "ldiv", "memcpy",
    "memmove", "memset", "memcmp", "memchr", "strlen", "strcpy", "strncpy", "strcat", "strncat", "strcmp",
    "strncmp", "strchr", "strrchr", "strstr", "strdup", "strndup", "strtok", "strerror", "strspn", "strcspn",
    "printf", "fprintf", "sprintf", "snprintf", "vprintf", "vfprintf", "vsprintf", "vsnprintf", "scanf", "fscanf",
    "sscanf", "puts", "fputs", "putchar", "fputc", "putc", "getchar", "fgetc", "getc", "fgets", "fopen", "fclose",
    "fread", "fwrite", "fseek", "ftell", "rewind", "fflush", "feof", "ferror", "perror", "remove", "rename",
    "tmpfile", "time", "clock", "difftime", "mktime", "signal", "raise", "setjmp", "longjmp", "assert", "errno",
    "stdin", "stdout", "stderr", "open", "close", "read", "write", "fork", "dlopen", "dlsym", "mmap", "munmap",
    "pthread_create", "pthread_join", "omp_get_num_threads", "omp_get_thread_num",
    // math (also with f/l suffixes, checked below)
    "acos", "asin", "atan", "atan2", "cos", "sin", "tan", "acosh", "asinh", "atanh", "cosh", "sinh", "tanh",
    "exp", "exp2", "expm1", "frexp", "ldexp", "log", "log10", "log1p", "log2", "logb", "ilogb", "modf", "scalbn",
    "scalbln", "cbrt", "fabs", "hypot", "pow", "sqrt", "erf", "erfc", "lgamma", "tgamma", "ceil", "floor",
    "nearbyint", "rint", "lrint", "llrint", "round", "lround", "llround", "trunc", "fmod", "remainder", "remquo",
    "copysign", "nan", "nextafter", "nexttoward", "fdim", "fmax", "fmin", "fma", "isnan", "isinf", "isfinite",
    "signbit", "fpclassify", "isnormal", "sincos", "exp10", "pow10", NULL};

static bool in_list(const char *const *list, const char *name) {
  for (int i = 0; list[i]; i++)
    if (!strcmp(list[i], name)) return true;
  return false;
}
static bool is_libc_name(const char *name) {
  if (in_list(libc_names, name)) return true;
  size_t n = strlen(name);
  if (n > 1 && (name[n - 1] == 'f' || name[n - 1] == 'l')) {  // sinf, expl ...
    char buf[64];
    if (n >= sizeof buf) return false;
    memcpy(buf, name, n - 1);
    buf[n - 1] = 0;
    return in_list(libc_names, buf);
  }
  return false;
}

static void check_fn_name(Sema *sema, Ast *fn) {
  const char *n = fn->name, *why = NULL;
  if (!strcmp(n, "main")) why = "it is the C program's entry point";
  else if (!strncmp(n, "tdsl_", 5)) why = "names beginning with 'tdsl_' belong to the runtime";
  else if (in_list(c_keywords, n)) why = "it is a C keyword";
  else if (is_libc_name(n)) why = "it is a C library function";
  if (why) diag_error(sema->cx, name_loc(fn), "invalid function name '%s': %s", n, why);
}

static void check_const(Sema *sema, Ast *c) {
  Loc nl = name_loc(c);
  if (find_const(sema, c->name) || sema_find_fn(sema->p, c->name)) {
    diag_error(sema->cx, nl, "redefinition of '%s'", c->name);
    return;
  }
  Sym *saved = sema->scope;
  sema->scope = NULL;
  TType *t = check_expr(sema, c->rhs);
  sema->scope = saved;
  if (!is_poison(t) && (!is_scalar(t) || t->dtype == DT_BOOL)) {
    diag_error(sema->cx, c->rhs->loc, "const '%s' must be a compile-time int or float, not %s", c->name,
               t->kind == TY_TENSOR ? "a tensor" : py_type_name(t));
    t = poison(sema);
  }
  c->ty = t;
  Const k = {c->name, t, nl};
  vec_push(&sema->cx->arena, &sema->consts, k);
}

static uint64_t name_hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

int sema_fn_index(const Program *p, const char *name) {
  if (!p->cap) return -1;
  for (size_t i = name_hash(name) & (size_t)(p->cap - 1);; i = (i + 1) & (size_t)(p->cap - 1)) {
    int k = p->slots[i];
    if (!k) return -1;
    if (!strcmp(p->fns.data[k - 1]->name, name)) return k - 1;
  }
}

Ast *sema_find_fn(const Program *p, const char *name) {
  int i = sema_fn_index(p, name);
  return i < 0 ? NULL : p->fns.data[i];
}

// Appends fn (its name not yet taken) to p->fns and its name index.
static void add_fn(Ctx *cx, Program *p, Ast *fn) {
  vec_push(&cx->arena, &p->fns, fn);
  if (2 * p->fns.len > p->cap) {  // grow and reinsert
    p->cap = p->cap ? 2 * p->cap : 16;
    p->slots = arena_alloc(&cx->arena, sizeof(int) * (size_t)p->cap);
    for (int k = 0; k < p->fns.len; k++) {
      size_t i = name_hash(p->fns.data[k]->name) & (size_t)(p->cap - 1);
      while (p->slots[i]) i = (i + 1) & (size_t)(p->cap - 1);
      p->slots[i] = k + 1;
    }
    return;
  }
  size_t i = name_hash(fn->name) & (size_t)(p->cap - 1);
  while (p->slots[i]) i = (i + 1) & (size_t)(p->cap - 1);
  p->slots[i] = p->fns.len;
}

bool sema_check(Ctx *cx, Program *p) {
  Sema sema = {0};
  sema.cx = cx;
  sema.p = p;
  int before = cx->nerrors;
  p->fns = (AstList){0};
  p->slots = NULL;
  p->cap = 0;
  if (!p->ast) return false;
  // functions first (a const may not share a function's name), then constants in order
  for (int i = 0; i < p->ast->list.len; i++) {
    Ast *d = p->ast->list.data[i];
    if (d->kind != AST_FN) continue;
    Ast *prev = sema_find_fn(p, d->name);
    if (prev) {
      diag_error(cx, name_loc(d), "redefinition of '%s'", d->name);
      diag_note(cx, name_loc(prev), "previous definition of '%s' is here", d->name);
      continue;
    }
    check_fn_name(&sema, d);
    add_fn(cx, p, d);
  }
  for (int i = 0; i < p->ast->list.len; i++) {
    Ast *d = p->ast->list.data[i];
    if (d->kind == AST_CONST) check_const(&sema, d);
  }
  sema_budget(&sema);
  for (int i = 0; i < p->fns.len; i++) check_entry(&sema, p->fns.data[i]);
  return cx->nerrors == before;
}
