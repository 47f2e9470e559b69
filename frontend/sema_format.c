// frontend/sema_format.c: Python's str(), repr() and format() of compile-time values, for
// f-strings (the messages of assert and raise): ints, floats, bools, None, strings,
// tuples and lists of them, torch.Size, dtypes, devices and modules. The format spec is
// Python's mini-language: [[fill]align][sign][#][0][width][,|_][.precision][type].
// A tensor's values are known only at run time, so formatting one is refused.
#include "frontend/sema_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// A growing string in the arena.
typedef struct Str {
  char *s;
  size_t n, cap;
} Str;

static void put(Sema *sema, Str *b, const char *t, size_t n) {
  if (b->n + n + 1 > b->cap) {
    size_t cap = (b->cap ? 2 * b->cap : 64) + n;
    char *s = arena_alloc(&sema->cx->arena, cap);
    if (b->n) memcpy(s, b->s, b->n);
    b->s = s;
    b->cap = cap;
  }
  memcpy(b->s + b->n, t, n);
  b->n += n;
  b->s[b->n] = 0;
}

static void puts_(Sema *sema, Str *b, const char *t) { put(sema, b, t, strlen(t)); }

static const char *torch_dtype_name(DType dt) {
  static const char *const names[DT_COUNT] = {
      [DT_BOOL] = "torch.bool",    [DT_I32] = "torch.int32",       [DT_I64] = "torch.int64",
      [DT_F16] = "torch.float16",  [DT_BF16] = "torch.bfloat16",   [DT_F32] = "torch.float32",
      [DT_F64] = "torch.float64",  [DT_U8] = "torch.uint8",        [DT_I8] = "torch.int8",
      [DT_I16] = "torch.int16",    [DT_C64] = "torch.complex64", [DT_C128] = "torch.complex128"};
  return (unsigned)dt < DT_COUNT && names[dt] ? names[dt] : "torch.dtype";
}

// repr of a string: Python's choice of quotes (single, unless the text has one and no double).
static void str_repr(Sema *sema, Str *b, const char *t) {
  char q = strchr(t, '\'') && !strchr(t, '"') ? '"' : '\'';
  put(sema, b, &q, 1);
  for (const char *c = t; *c; c++) {
    if (*c == q || *c == '\\') put(sema, b, "\\", 1);
    put(sema, b, c, 1);
  }
  put(sema, b, &q, 1);
}

static bool value_text(Sema *sema, Str *b, const TType *t, bool repr, Loc loc);
static const char *extra_repr(Sema *sema, const TType *m, const char *cls, Loc loc);

// An nn container as PyTorch's Module.__repr__ prints it: "ModuleList(\n  (0): Tanh()\n)", each
// module's own lines indented two more (an empty one: "Sequential()").
// A ParameterList's or ParameterDict's: its extra_repr, "  (0): Parameter containing: [torch.float32 of
// size 2x3]" a line (the dtype as torch.typename names it in a ParameterDict), indented two more
// unless it is one line.
static void params_text(Sema *sema, Str *b, const TType *t) {
  bool dict = t->kind == TY_DICT;
  puts_(sema, b, t->container);
  puts_(sema, b, t->nelem > 1 ? "(\n  " : "(");
  for (int i = 0; i < t->nelem; i++) {
    const TType *p = t->elems[i];
    puts_(sema, b, arena_printf(&sema->cx->arena, i ? "\n    (%s): " : "  (%s): ",
                                dict ? t->keys[i]->module : arena_printf(&sema->cx->arena, "%d", i)));
    if (!is_tensor(p)) {
      puts_(sema, b, arena_printf(&sema->cx->arena, "Object of type: %s", py_type_name(p)));
      continue;
    }
    puts_(sema, b, "Parameter containing: [");
    puts_(sema, b, dict ? arena_printf(&sema->cx->arena, "torch.%s", torch_tensor_name(p->dtype))
                        : torch_dtype_name(p->dtype));
    puts_(sema, b, " of size ");
    for (int d = 0; d < p->view.ndim; d++)
      puts_(sema, b, arena_printf(&sema->cx->arena, d ? "x%" PRId64 : "%" PRId64, p->view.shape[d]));
    puts_(sema, b, "]");
  }
  puts_(sema, b, t->nelem > 1 ? "\n)" : ")");
}

static bool container_text(Sema *sema, Str *b, const TType *t, Loc loc) {
  if (!strncmp(t->container, "Parameter", 9)) {
    params_text(sema, b, t);
    return true;
  }
  puts_(sema, b, t->container);
  puts_(sema, b, t->nelem ? "(\n" : "()");
  for (int i = 0; i < t->nelem; i++) {
    Str child = {0};
    if (!value_text(sema, &child, t->elems[i], true, loc)) return false;
    char key[32];
    snprintf(key, sizeof key, "%d", i);
    puts_(sema, b, "  (");
    puts_(sema, b, t->keys ? t->keys[i]->module : key);
    puts_(sema, b, "): ");
    for (size_t k = 0; k < child.n; k++) puts_(sema, b, child.s[k] == '\n' ? "\n  " : (char[2]){child.s[k], 0});
    puts_(sema, b, "\n");
  }
  if (t->nelem) puts_(sema, b, ")");
  return true;
}

// ---- an nn module's repr: its class name and PyTorch 1.13's extra_repr of its arguments ----
// str() of m's constructor argument `name`: as __init__ keeps it ("" where the class has none).
static const char *arg_str(Sema *sema, const TType *m, const char *name, Loc loc) {
  const TType *a = nn_arg(sema, m, name);
  const char *s = a ? py_str(sema, a, false, loc) : NULL;
  return s ? s : "";
}

static bool is_seq_value(const TType *a) { return a && (a->kind == TY_TUPLE || a->kind == TY_LIST); }

// Whether argument a (an int, or a tuple or list of them) is v throughout, as a conv compares
// its padding with (0,) * n.
static bool all_are(const TType *a, int64_t v) {
  if (a && is_scalar(a)) return a->ival == v && a->dtype != DT_F64;
  for (int i = 0; is_seq_value(a) && i < a->nelem; i++)
    if (!is_scalar(a->elems[i]) || a->elems[i]->ival != v) return false;
  return is_seq_value(a);
}

// str() of m's argument `name` as an n-tuple (_ntuple: an int repeated n times, a list made a
// tuple; n 0: an int is (v,) and a sequence its own length).
static const char *tuple_str(Sema *sema, const TType *m, const char *name, int n, Loc loc) {
  const TType *a = nn_arg(sema, m, name);
  if (!a) return "";
  if (a->kind == TY_STR) return a->module;  // padding='same'
  Str b = {0};
  int len = is_seq_value(a) ? a->nelem : n ? n : 1;
  puts_(sema, &b, "(");
  for (int i = 0; i < len; i++) {
    const char *e = py_str(sema, is_seq_value(a) ? a->elems[i] : a, false, loc);
    puts_(sema, &b, i ? ", " : "");
    puts_(sema, &b, e ? e : "");
  }
  puts_(sema, &b, len == 1 ? ",)" : ")");
  return b.s;
}

// PyTorch 1.13's extra_repr() of nn module object m of class cls ("" for none).
static const char *extra_repr(Sema *sema, const TType *m, const char *cls, Loc loc) {
  Arena *ar = &sema->cx->arena;
  const TType *a;
#define ARG(n) arg_str(sema, m, n, loc)
#define ON(n) ((a = nn_arg(sema, m, n)) && is_scalar(a) && a->ival)
  if (!strcmp(cls, "Linear"))
    return arena_printf(ar, "in_features=%s, out_features=%s, bias=%s", ARG("in_features"), ARG("out_features"),
                        ON("bias") ? "True" : "False");
  if (!strncmp(cls, "Conv", 4) && (strlen(cls) == 6 || !strncmp(cls, "ConvTranspose", 13))) {
    int n = cls[strlen(cls) - 2] - '0';
    Str b = {0};
    puts_(sema, &b, arena_printf(ar, "%s, %s, kernel_size=%s, stride=%s", ARG("in_channels"), ARG("out_channels"),
                                 tuple_str(sema, m, "kernel_size", n, loc), tuple_str(sema, m, "stride", n, loc)));
    if (!all_are(nn_arg(sema, m, "padding"), 0))
      puts_(sema, &b, arena_printf(ar, ", padding=%s", tuple_str(sema, m, "padding", n, loc)));
    if (!all_are(nn_arg(sema, m, "dilation"), 1))
      puts_(sema, &b, arena_printf(ar, ", dilation=%s", tuple_str(sema, m, "dilation", n, loc)));
    if (nn_arg(sema, m, "output_padding") && !all_are(nn_arg(sema, m, "output_padding"), 0))
      puts_(sema, &b, arena_printf(ar, ", output_padding=%s", tuple_str(sema, m, "output_padding", n, loc)));
    if (!all_are(nn_arg(sema, m, "groups"), 1)) puts_(sema, &b, arena_printf(ar, ", groups=%s", ARG("groups")));
    if (!ON("bias")) puts_(sema, &b, ", bias=False");
    if (strcmp(ARG("padding_mode"), "zeros"))
      puts_(sema, &b, arena_printf(ar, ", padding_mode=%s", ARG("padding_mode")));
    return b.s;
  }
  if (!strcmp(cls, "PReLU")) return arena_printf(ar, "num_parameters=%s", ARG("num_parameters"));
  if (!strcmp(cls, "Bilinear"))
    return arena_printf(ar, "in1_features=%s, in2_features=%s, out_features=%s, bias=%s", ARG("in1_features"),
                        ARG("in2_features"), ARG("out_features"), ON("bias") ? "True" : "False");
  if (!strcmp(cls, "LayerNorm"))
    return arena_printf(ar, "%s, eps=%s, elementwise_affine=%s", tuple_str(sema, m, "normalized_shape", 0, loc),
                        ARG("eps"), ARG("elementwise_affine"));
  if (!strcmp(cls, "GroupNorm"))
    return arena_printf(ar, "%s, %s, eps=%s, affine=%s", ARG("num_groups"), ARG("num_channels"), ARG("eps"),
                        ARG("affine"));
  if (!strncmp(cls, "InstanceNorm", 12) || !strncmp(cls, "BatchNorm", 9))
    return arena_printf(ar, "%s, eps=%s, momentum=%s, affine=%s, track_running_stats=%s", ARG("num_features"),
                        ARG("eps"), ARG("momentum"), ARG("affine"), ARG("track_running_stats"));
  if (!strcmp(cls, "Embedding")) {
    Str b = {0};
    puts_(sema, &b, arena_printf(ar, "%s, %s", ARG("num_embeddings"), ARG("embedding_dim")));
    const TType *pi = nn_arg(sema, m, "padding_idx"), *ne = nn_arg(sema, m, "num_embeddings");
    if (pi && is_scalar(pi))  // a negative one counted from the end, as __init__ keeps it
      puts_(sema, &b, arena_printf(ar, ", padding_idx=%" PRId64, pi->ival + (pi->ival < 0 && ne ? ne->ival : 0)));
    if ((a = nn_arg(sema, m, "max_norm")) && a->kind != TY_NONE) puts_(sema, &b, arena_printf(ar, ", max_norm=%s",
                                                                                            ARG("max_norm")));
    if ((a = nn_arg(sema, m, "norm_type")) && is_scalar(a) && a->fval != 2)
      puts_(sema, &b, arena_printf(ar, ", norm_type=%s", ARG("norm_type")));
    if ((a = nn_arg(sema, m, "scale_grad_by_freq")) && !(is_scalar(a) && a->dtype == DT_BOOL && !a->ival))
      puts_(sema, &b, arena_printf(ar, ", scale_grad_by_freq=%s", ARG("scale_grad_by_freq")));
    if (ON("sparse")) puts_(sema, &b, ", sparse=True");
    return b.s;
  }
  if (!strncmp(cls, "Dropout", 7) || !strcmp(cls, "AlphaDropout"))
    return arena_printf(ar, "p=%s, inplace=%s", ARG("p"), ARG("inplace"));
  const char *inplace = ON("inplace") ? ", inplace=True" : "";
  if (!strcmp(cls, "ReLU") || !strcmp(cls, "ReLU6") || !strcmp(cls, "SiLU") || !strcmp(cls, "Mish") ||
      !strcmp(cls, "SELU"))
    return inplace + (*inplace ? 2 : 0);
  if (!strcmp(cls, "GELU")) return arena_printf(ar, "approximate=%s", py_str(sema, nn_arg(sema, m, "approximate"),
                                                                             true, loc));
  if (!strcmp(cls, "Hardtanh"))
    return arena_printf(ar, "min_val=%s, max_val=%s%s", ARG("min_val"), ARG("max_val"), inplace);
  if (!strcmp(cls, "LeakyReLU")) return arena_printf(ar, "negative_slope=%s%s", ARG("negative_slope"), inplace);
  if (!strcmp(cls, "ELU") || !strcmp(cls, "CELU")) return arena_printf(ar, "alpha=%s%s", ARG("alpha"), inplace);
  if (!strcmp(cls, "Threshold"))
    return arena_printf(ar, "threshold=%s, value=%s%s", ARG("threshold"), ARG("value"), inplace);
  if (!strcmp(cls, "Softplus")) return arena_printf(ar, "beta=%s, threshold=%s", ARG("beta"), ARG("threshold"));
  if (!strcmp(cls, "Softshrink") || !strcmp(cls, "Hardshrink")) return ARG("lambd");
  if (!strcmp(cls, "GLU") || !strncmp(cls, "Softm", 5) || !strcmp(cls, "LogSoftmax"))
    return arena_printf(ar, "dim=%s", ARG("dim"));
  if (!strcmp(cls, "Flatten")) return arena_printf(ar, "start_dim=%s, end_dim=%s", ARG("start_dim"), ARG("end_dim"));
  if (!strcmp(cls, "Unflatten"))
    return arena_printf(ar, "dim=%s, unflattened_size=%s", ARG("dim"), ARG("unflattened_size"));
  bool maxp = !strncmp(cls, "MaxPool", 7);
  if (maxp || !strncmp(cls, "AvgPool", 7)) {
    const char *stride = (a = nn_arg(sema, m, "stride")) && a->kind != TY_NONE ? ARG("stride") : ARG("kernel_size");
    const char *s = arena_printf(ar, "kernel_size=%s, stride=%s, padding=%s", ARG("kernel_size"), stride,
                                 ARG("padding"));
    return maxp ? arena_printf(ar, "%s, dilation=%s, ceil_mode=%s", s, ARG("dilation"), ARG("ceil_mode")) : s;
  }
  if (!strncmp(cls, "Adaptive", 8)) return arena_printf(ar, "output_size=%s", ARG("output_size"));
  if (!strcmp(cls, "PixelShuffle")) return arena_printf(ar, "upscale_factor=%s", ARG("upscale_factor"));
  if (!strcmp(cls, "PixelUnshuffle")) return arena_printf(ar, "downscale_factor=%s", ARG("downscale_factor"));
  if (!strcmp(cls, "LocalResponseNorm"))
    return arena_printf(ar, "%s, alpha=%s, beta=%s, k=%s", ARG("size"), ARG("alpha"), ARG("beta"), ARG("k"));
  size_t len = strlen(cls);
  if (len > 5 && !strcmp(cls + len - 5, "Pad1d") + !strcmp(cls + len - 5, "Pad2d") + !strcmp(cls + len - 5, "Pad3d")) {
    const char *pad = tuple_str(sema, m, "padding", 2 * (cls[len - 2] - '0'), loc);  // _ntuple(2 n)
    return strncmp(cls, "ConstantPad", 11) ? pad : arena_printf(ar, "padding=%s, value=%s", pad, ARG("value"));
  }
  if (!strcmp(cls, "Upsample") || !strncmp(cls, "Upsampling", 10)) {
    a = nn_arg(sema, m, "scale_factor");
    const char *info;
    if (a && a->kind != TY_NONE && !(is_scalar(a) && !a->fval)) {  // float(scale_factor), each of a tuple's
      Str b = {0};
      char buf[64];
      int n = is_seq_value(a) ? a->nelem : 1;
      puts_(sema, &b, is_seq_value(a) ? "(" : "");
      for (int i = 0; i < n; i++) {
        const TType *v = is_seq_value(a) ? a->elems[i] : a;
        puts_(sema, &b, i ? ", " : "");
        puts_(sema, &b, float_repr(is_scalar(v) ? v->fval : 0, buf, sizeof buf));
      }
      puts_(sema, &b, is_seq_value(a) ? (n == 1 ? ",)" : ")") : "");
      info = arena_printf(ar, "scale_factor=%s", b.s);
    } else {
      info = arena_printf(ar, "size=%s", ARG("size"));
    }
    const char *mode = !strcmp(cls, "UpsamplingNearest2d")    ? "nearest"
                       : !strcmp(cls, "UpsamplingBilinear2d") ? "bilinear"
                                                              : ARG("mode");
    return arena_printf(ar, "%s, mode=%s", info, mode);
  }
#undef ARG
#undef ON
  return "";
}

// Whether attribute value t is a module PyTorch registers as a child (an nn module, a container, an
// instance of a class of the file), not a function, a class or a partial.
static bool is_child_module(const TType *t) {
  if (is_container(t)) return true;  // a ParameterList too: an nn.Module
  if (!t || t->kind != TY_MODULE || !t->ctor) return false;
  if (is_instance(t)) return true;
  return t->ctor->kind == AST_CALL && (!strncmp(t->module, "torch.nn.", 9) || !strncmp(t->module, "einops.", 7));
}

// Module.__repr__ of module object m (an instance of a class of the file, or an nn module made of modules):
// its name, its extra_repr's lines, then each child module as "(name): " and its own repr indented two
// more; "Name()" with neither, "Name(extra)" with one line of extra_repr alone.
static bool module_text_at(Sema *sema, Str *b, const TType *m, Loc loc) {
  const char *cls = is_instance(m) ? py_type_name(m) : m->module + 9;
  const char *extra = "";
  if (!strcmp(cls, "ChannelShuffle")) {
    int k = obj_find(m->attrs, "groups");
    const char *g = k >= 0 && m->attrs->ty[k] ? py_str(sema, m->attrs->ty[k], false, loc) : NULL;
    extra = arena_printf(&sema->cx->arena, "groups=%s", g ? g : "");
  }
  if (is_instance(m)) {  // the class's own extra_repr(self), a method returning a str
    Ast *call = ast_new(sema->cx, AST_CALL, loc);
    call->name = "extra_repr";
    call->oploc = loc;
    call->lhs = value_node(sema, (TType *)m, loc);
    TType *r = instance_method_call(sema, call, (TType *)m);
    if (r && is_poison(r)) return false;
    if (r && r->kind != TY_STR) {
      diag_error(sema->cx, loc, "%s.extra_repr() returned %s, not a str", cls, py_type_name(r));
      return false;
    }
    if (r) extra = r->module;
  }
  int nchildren = 0;
  for (int i = 0; m->attrs && i < m->attrs->n; i++) nchildren += is_child_module(m->attrs->ty[i]);
  puts_(sema, b, cls);
  puts_(sema, b, "(");
  if (!nchildren && !strchr(extra, '\n')) {
    puts_(sema, b, extra);
    puts_(sema, b, ")");
    return true;
  }
  if (*extra) {  // each of its lines indented
    puts_(sema, b, "\n  ");
    for (const char *c = extra; *c; c++) puts_(sema, b, *c == '\n' ? "\n  " : (char[2]){*c, 0});
  }
  bool mha = !strcmp(m->module, "torch.nn.MultiheadAttention");
  for (int i = 0; i < m->attrs->n; i++) {
    const TType *c = m->attrs->ty[i];
    if (!is_child_module(c)) continue;
    Str child = {0};
    const char *key = m->attrs->names[i];
    if (mha && !strcmp(key, "out_proj"))  // PyTorch's class of it, a Linear by another name
      puts_(sema, &child, arena_printf(&sema->cx->arena, "NonDynamicallyQuantizableLinear(%s)",
                                       extra_repr(sema, c, "Linear", loc)));
    else if (!value_text(sema, &child, c, true, loc))
      return false;
    puts_(sema, b, arena_printf(&sema->cx->arena, "\n  (%s): ", key));
    for (size_t k = 0; k < child.n; k++) puts_(sema, b, child.s[k] == '\n' ? "\n  " : (char[2]){child.s[k], 0});
  }
  puts_(sema, b, "\n)");
  return true;
}

// module_text_at, nested at most REPR_MAX_DEPTH deep: a module holding itself (m.sub = m) is
// PyTorch's RecursionError, not a stack overflow.
enum { REPR_MAX_DEPTH = 64 };
static bool module_text(Sema *sema, Str *b, const TType *m, Loc loc) {
  if (sema->repr_depth >= REPR_MAX_DEPTH) {
    diag_error(sema->cx, loc, "RecursionError: maximum recursion depth exceeded in the repr of a module (%s holds "
               "itself)", is_instance(m) ? py_type_name(m) : m->module + 9);
    return false;
  }
  sema->repr_depth++;
  bool ok = module_text_at(sema, b, m, loc);
  sema->repr_depth--;
  return ok;
}

// str(t) (repr false) or repr(t) appended to b; false after an error at loc.
static bool value_text(Sema *sema, Str *b, const TType *t, bool repr, Loc loc) {
  char buf[64];
  if (t->container) return container_text(sema, b, t, loc);
  switch (t->kind) {
  case TY_SCALAR:
    if (t->dtype == DT_BOOL) puts_(sema, b, t->ival ? "True" : "False");
    else if (t->dtype == DT_I64) snprintf(buf, sizeof buf, "%" PRId64, t->ival), puts_(sema, b, buf);
    else puts_(sema, b, float_repr(t->fval, buf, sizeof buf));
    return true;
  case TY_NONE: puts_(sema, b, "None"); return true;
  case TY_STR:
    if (repr) str_repr(sema, b, t->module);
    else puts_(sema, b, t->module);
    return true;
  case TY_DTYPE: puts_(sema, b, torch_dtype_name(t->dtype)); return true;
  case TY_MODULE:
    if (derived_modules(sema, t)) {  // class Stack(nn.Sequential): its modules, under its class's name
      TType c = *derived_modules(sema, t);
      c.container = t->ctor->name;
      return container_text(sema, b, &c, loc);
    }
    if (!t->ctor) puts_(sema, b, arena_printf(&sema->cx->arena, "<module '%s'>", t->module));
    else if (is_instance(t) || is_composite(t)) return module_text(sema, b, t, loc);
    else if (!strncmp(t->module, "torch.nn.", 9) && t->ctor->kind == AST_CALL)
      puts_(sema, b, arena_printf(&sema->cx->arena, "%s(%s)", t->module + 9,
                                  extra_repr(sema, t, t->module + 9, loc)));
    else puts_(sema, b, arena_printf(&sema->cx->arena, "%s()", strrchr(t->module, '.') + 1));
    return true;
  case TY_TUPLE: case TY_LIST: {
    bool tuple = t->kind == TY_TUPLE;
    if (t->size) puts_(sema, b, "torch.Size([");
    else puts_(sema, b, tuple ? "(" : "[");
    for (int i = 0; i < t->nelem; i++) {
      if (i) puts_(sema, b, ", ");
      if (!value_text(sema, b, t->elems[i], true, loc)) return false;
    }
    if (t->size) puts_(sema, b, "])");
    else puts_(sema, b, tuple ? (t->nelem == 1 ? ",)" : ")") : "]");
    return true;
  }
  case TY_TENSOR:
    diag_error(sema->cx, loc, "a tensor's values are known only at run time: an f-string here formats compile-time "
               "values (x.shape, x.dtype, numbers, strings)");
    return false;
  default: return false;
  }
}

// ---- format(value, spec) ----
typedef struct Spec {
  char fill, align, sign;
  bool alt, zero, has_prec;
  int width, prec;
  char group, type;
} Spec;

static bool parse_spec(Sema *sema, const char *s, Spec *sp, Loc loc) {
  *sp = (Spec){.fill = ' '};
  const char *aligns = "<>^=";
  if (s[0] && s[1] && strchr(aligns, s[1])) {
    sp->fill = s[0];
    sp->align = s[1];
    s += 2;
  } else if (s[0] && strchr(aligns, s[0])) {
    sp->align = *s++;
  }
  if (*s == '+' || *s == '-' || *s == ' ') sp->sign = *s++;
  if (*s == '#') sp->alt = true, s++;
  if (*s == '0') {
    sp->zero = true;
    s++;
  }
  while (*s >= '0' && *s <= '9') sp->width = sp->width * 10 + (*s++ - '0');
  if (*s == ',' || *s == '_') sp->group = *s++;
  if (*s == '.') {
    s++;
    if (*s < '0' || *s > '9') {
      diag_error(sema->cx, loc, "Format specifier missing precision");
      return false;
    }
    sp->has_prec = true;
    while (*s >= '0' && *s <= '9') sp->prec = sp->prec * 10 + (*s++ - '0');
  }
  if (*s) sp->type = *s++;
  if (*s) {
    diag_error(sema->cx, loc, "Invalid format specifier");
    return false;
  }
  if (sp->zero && !sp->align) {
    sp->fill = '0';
    sp->align = '=';
  }
  return true;
}

// Digits grouped by threes with sep, from the integer part of the number text t.
static const char *grouped(Sema *sema, const char *t, char sep) {
  const char *digits = t + (*t == '-' || *t == '+' || *t == ' ');
  size_t nd = strspn(digits, "0123456789");
  Str b = {0};
  put(sema, &b, t, (size_t)(digits - t));
  for (size_t i = 0; i < nd; i++) {
    if (i && (nd - i) % 3 == 0) put(sema, &b, &sep, 1);
    put(sema, &b, digits + i, 1);
  }
  puts_(sema, &b, digits + nd);
  return b.s;
}

// The text of a number formatted by sp (no width yet): ints and floats.
static const char *number_text(Sema *sema, const TType *t, const Spec *sp, Loc loc) {
  char buf[512];
  bool is_int = t->dtype != DT_F64;
  char type = sp->type;
  if (is_int && (type == 0 || type == 'd' || type == 'n')) {
    snprintf(buf, sizeof buf, "%" PRId64, t->ival);
  } else if (is_int && strchr("bxXoc", type)) {
    if (type == 'c') {
      snprintf(buf, sizeof buf, "%c", (char)t->ival);
    } else {
      uint64_t u = t->ival < 0 ? (uint64_t)0 - (uint64_t)t->ival : (uint64_t)t->ival;
      char digits[70];
      int n = 0, base = type == 'b' ? 2 : type == 'o' ? 8 : 16;
      do {
        int d = (int)(u % (uint64_t)base);
        digits[n++] = (char)(d < 10 ? '0' + d : (type == 'X' ? 'A' : 'a') + d - 10);
        u /= (uint64_t)base;
      } while (u);
      int k = 0;
      if (t->ival < 0) buf[k++] = '-';
      if (sp->alt) buf[k++] = '0', buf[k++] = type == 'b' ? 'b' : type == 'o' ? 'o' : type;
      while (n) buf[k++] = digits[--n];
      buf[k] = 0;
    }
  } else if (strchr("eEfFgG%", type ? type : 'g')) {
    double v = is_int ? (double)t->ival : t->fval;
    int prec = sp->has_prec ? sp->prec : 6;
    if (type == '%') {
      snprintf(buf, sizeof buf, "%.*f%%", prec, v * 100);
    } else if (type) {
      snprintf(buf, sizeof buf, (char[]){'%', '.', '*', type, 0}, prec, v);
    } else if (sp->has_prec) {  // no type: 'g' that keeps a '.0' on a whole number, as Python
      snprintf(buf, sizeof buf, "%.*g", prec ? prec : 1, v);
      if (!strpbrk(buf, ".einfa")) strcat(buf, ".0");
    } else {
      float_repr(v, buf, sizeof buf);
    }
  } else {
    diag_error(sema->cx, loc, "Unknown format code '%c' for object of type '%s'", type, is_int ? "int" : "float");
    return NULL;
  }
  const char *r = buf;
  if (sp->sign == '+' && buf[0] != '-') r = arena_printf(&sema->cx->arena, "+%s", buf);
  else if (sp->sign == ' ' && buf[0] != '-') r = arena_printf(&sema->cx->arena, " %s", buf);
  else r = arena_strdup(&sema->cx->arena, buf);
  return sp->group ? grouped(sema, r, sp->group) : r;
}

// format(t, spec), Python's: a number by the mini-language, a string padded and cut, any
// other value only with an empty spec (its str()).
static const char *format_value(Sema *sema, const TType *t, const char *spec, Loc loc) {
  Str b = {0};
  if (!*spec) return value_text(sema, &b, t, false, loc) ? (b.s ? b.s : "") : NULL;
  Spec sp;
  if (!parse_spec(sema, spec, &sp, loc)) return NULL;
  const char *text;
  bool number = t->kind == TY_SCALAR && !(t->dtype == DT_BOOL && !sp.type);
  if (number) {
    text = number_text(sema, t, &sp, loc);
    if (!text) return NULL;
  } else if (t->kind == TY_STR || (t->kind == TY_SCALAR && !sp.type)) {
    if (sp.type && sp.type != 's') {
      diag_error(sema->cx, loc, "Unknown format code '%c' for object of type 'str'", sp.type);
      return NULL;
    }
    if (!value_text(sema, &b, t, false, loc)) return NULL;
    text = b.s ? b.s : "";
    if (sp.has_prec && strlen(text) > (size_t)sp.prec) text = arena_strndup(&sema->cx->arena, text, (size_t)sp.prec);
  } else {
    if (t->kind == TY_TENSOR) return value_text(sema, &b, t, false, loc) ? b.s : NULL;
    diag_error(sema->cx, loc, "unsupported format string passed to %s.__format__", py_type_name(t));
    return NULL;
  }
  size_t len = strlen(text);
  if ((size_t)sp.width <= len) return text;
  size_t pad = (size_t)sp.width - len;
  char align = sp.align ? sp.align : number ? '>' : '<';
  Str o = {0};
  size_t left = align == '<' ? 0 : align == '^' ? pad / 2 : pad;
  if (align == '=' && (*text == '-' || *text == '+' || *text == ' ')) put(sema, &o, text++, 1);
  for (size_t i = 0; i < left; i++) put(sema, &o, &sp.fill, 1);
  puts_(sema, &o, text);
  for (size_t i = left; i < pad; i++) put(sema, &o, &sp.fill, 1);
  return o.s;
}

const char *py_str(Sema *sema, const TType *t, bool repr, Loc loc) {
  Str b = {0};
  return value_text(sema, &b, t, repr, loc) ? (b.s ? b.s : "") : NULL;
}

// f"text {x!r:>8}": each field's value (a compile-time value) converted and formatted.
TType *check_fstring(Sema *sema, Ast *e) {
  Str b = {0};
  puts_(sema, &b, "");
  for (int i = 0; i < e->list.len; i++) {
    Ast *part = e->list.data[i];
    if (part->kind == AST_STR) {
      puts_(sema, &b, part->name);
      continue;
    }
    TType *v = check_expr(sema, part->lhs);
    if (is_poison(v)) return poison(sema);
    if (part->rhs) puts_(sema, &b, part->rhs->name);  // {x=}
    const char *text;
    if (part->op) {  // !r, !s, !a: the converted string, then its format
      text = py_str(sema, v, part->op != 's', part->lhs->loc);
      if (text && part->name) {
        TType *s = ty_new(sema, TY_STR);
        s->module = text;
        text = format_value(sema, s, part->name, part->loc);
      }
    } else {
      text = format_value(sema, v, part->name ? part->name : "", part->lhs->loc);
    }
    if (!text) return poison(sema);
    puts_(sema, &b, text);
  }
  TType *t = ty_new(sema, TY_STR);
  t->module = b.s;
  return t;
}
