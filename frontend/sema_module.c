// frontend/sema_module.c: the Python around PyTorch's modules as forward passes spell it.
//   - import lines: `import torch.nn as nn`, `from torch import nn`, `from einops import
//     rearrange`: the names they bind resolve as PyTorch's, math's and einops' do; a module
//     tdsl has no use for (numpy) is refused where it is imported;
//   - nn modules without parameters constructed and called inline: `nn.ReLU(inplace=True)(x)`,
//     `nn.CrossEntropyLoss(label_smoothing=0.1)(logits, t)`, or bound first (`act =
//     nn.GELU(approximate='tanh'); act(x)`): the module's functional op, its constructor's
//     arguments passed on by name (one table, nn_classes below);
//   - `inplace=True` of the functional activations and dropouts: the result written into
//     the input, which the call then is, as PyTorch's in-place op returns it;
//   - torch._assert(cond, msg), as the assert statement;
//   - what pasted model code imports besides: transformers' ACT2FN table and get_activation
//     (consts of the file, parsed from their source here), functools.partial (a function
//     value binding arguments), inspect.signature(f).parameters of a function value.
// A module object is a TY_MODULE value ("torch.nn.ReLU") holding the call that made it.
#include "frontend/sema_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

// ============================================================================
// Modules by path, and the names import lines bind
// ============================================================================
static const char *const known_modules[] = {"torch", "torch.nn", "torch.nn.functional", "torch.nn.init", "math",
                                            "typing", "__future__", "einops", "einops.layers", "einops.layers.torch",
                                            NULL};

static bool known_module(const char *path) {
  for (int i = 0; known_modules[i]; i++)
    if (!strcmp(path, known_modules[i])) return true;
  return false;
}

// Modules a pasted file imports for what tdsl does not compile (Python's standard library
// around a model, torch's submodules for training): accepted, their names bound; a use of
// one is an error there.
static bool inert_module(const char *path) {
  static const char *const inert[] = {"os", "sys", "warnings", "dataclasses", "functools", "collections", "inspect",
                                      "copy", "enum", "logging", "abc", "itertools", "numbers", "re", "json", NULL};
  size_t n = strcspn(path, ".");
  for (int i = 0; inert[i]; i++)
    if (strlen(inert[i]) == n && !strncmp(path, inert[i], n)) return true;
  return !strncmp(path, "torch.", 6) && !known_module(path);  // torch.utils.checkpoint, torch.cuda.amp ...
}

// The module an unbound name stands for without an import (forward passes use them so):
// torch, nn, F, math, einops.
static const char *default_module(const char *name) {
  return !strcmp(name, "torch")    ? "torch"
         : !strcmp(name, "nn")     ? "torch.nn"
         : !strcmp(name, "F")      ? "torch.nn.functional"
         : !strcmp(name, "math")   ? "math"
         : !strcmp(name, "einops") ? "einops"
                                   : NULL;
}

const Import *find_import(Sema *sema, const char *name) {
  for (int i = sema->imports.len - 1; i >= 0; i--)
    if (!strcmp(sema->imports.data[i].name, name)) return sema->imports.data[i].inert ? NULL : &sema->imports.data[i];
  return NULL;
}

// name used where it is bound only by an import of a module tdsl does not compile: that
// error, at at, with where it was imported; false for any other name.
bool inert_use(Sema *sema, Loc at, const char *name) {
  for (int i = sema->imports.len - 1; i >= 0; i--) {
    const Import *im = &sema->imports.data[i];
    if (strcmp(im->name, name)) continue;
    if (!im->inert) return false;
    if (im->attr)
      diag_error(sema->cx, at, "'%s' is imported from '%s', which tdsl does not compile: write what it computes "
                 "with torch's ops, or compute it outside and pass it as a parameter", name, im->module);
    else
      diag_error(sema->cx, at, "'%s' is the module '%s', which tdsl does not compile: write what it computes with "
                 "torch's ops, or compute it outside and pass it as a parameter", name, im->module);
    diag_note(sema->cx, im->loc, "imported here");
    return true;
  }
  return false;
}

const char *module_named(Sema *sema, const char *name) {
  const Import *im = find_import(sema, name);
  if (im) return im->attr ? NULL : im->module;
  if (default_module(name)) return default_module(name);
  return known_module(name) && strcmp(name, "typing") ? name : NULL;  // a path sema wrote (from-imports)
}

// The path of the module expression e (nn, torch.nn, an imported alias) when it is one and
// no local or const hides its name; NULL otherwise. Syntactic: nothing is checked.
static const char *module_path(Sema *sema, const Ast *e) {
  if (e->kind == AST_NAME) {
    if (find_local(sema, e->name) || find_dim(sema, e->name) || find_const(sema, e->name)) return NULL;
    return module_named(sema, e->name);
  }
  if (e->kind != AST_ATTR) return NULL;
  const char *m = module_path(sema, e->lhs);
  if (!m) return NULL;
  const char *sub = arena_printf(&sema->cx->arena, "%s.%s", m, e->name);
  return known_module(sub) ? sub : NULL;
}

// Whether module m has attribute a as far as an import needs to know (a function, a
// dtype, a submodule, a constant); einops' and typing's names are taken on trust.
static bool module_has(const char *m, const char *a) {
  if (!strcmp(m, "torch") || !strcmp(m, "torch.nn.functional")) {
    static const char *const other[] = {"Tensor", "Size", "dtype", "device", "float32", "float", "float64", "double",
                                        "float16", "half", "bfloat16", "int32", "int", "int64", "long", "bool",
                                        "uint8", "int8", "int16", "short", "complex64", "cfloat",
                                        "complex128", "cdouble", "finfo", "iinfo", "_assert", NULL};
    for (int i = 0; other[i]; i++)
      if (!strcmp(a, other[i])) return true;
    if (!strcmp(m, "torch.nn.functional") && !strcmp(a, "multi_head_attention_forward")) return true;  // sema_mha.c
    if (!strcmp(a, "channel_shuffle")) return true;                                                      // sema_mha.c
    return builtin_find_form(a, !strcmp(m, "torch") ? F_TORCH : F_NNF) != NULL;
  }
  if (!strcmp(m, "math")) {
    static const char *const names[] = {"pi", "e", "tau", "inf", "nan", "sqrt", "exp", "log", "log2", "sin", "cos",
                                        "tan", "tanh", "erf", "floor", "ceil", NULL};
    for (int i = 0; names[i]; i++)
      if (!strcmp(a, names[i])) return true;
    return false;
  }
  return true;
}

// One import declaration: each name it binds in sema->imports, in order (a later import
// of a name replaces an earlier one, as in Python).
// The names an import of a module tdsl does not compile binds (import numpy as np, from
// timm.layers import DropPath): recorded, so that a use of one says where it comes from.
static void declare_inert(Sema *sema, const Ast *d) {
  for (int i = 0; i < d->list.len; i++) {
    const Ast *a = d->list.data[i];
    Import im = {.loc = a->oploc, .inert = true, .module = d->name ? d->name : a->name, .attr = d->name ? a->name : NULL};
    if (a->lhs) im.name = a->lhs->name;
    else if (d->name) im.name = a->name;
    else im.name = arena_strndup(&sema->cx->arena, a->name, strcspn(a->name, "."));  // import os.path binds os
    vec_push(&sema->cx->arena, &sema->imports, im);
  }
}

// transformers' table of activations by name (transformers/activations.py, ACT2CLS: each
// entry's forward as its class computes it), and get_activation(name), its lookup.
static const char act2fn_source[] =
    "const T = {\"gelu\": lambda t: F.gelu(t),\n"
    "  \"gelu_10\": lambda t: torch.clip(F.gelu(t), -10.0, 10.0),\n"
    "  \"gelu_fast\": lambda t: 0.5 * t * (1.0 + torch.tanh(t * 0.7978845608 * (1.0 + 0.044715 * t * t))),\n"
    "  \"gelu_new\": lambda t: 0.5 * t * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (t + 0.044715 * torch.pow(t, 3.0)))),\n"
    "  \"gelu_python\": lambda t: t * 0.5 * (1.0 + torch.erf(t / math.sqrt(2.0))),\n"
    "  \"gelu_pytorch_tanh\": lambda t: F.gelu(t, approximate=\"tanh\"),\n"
    "  \"gelu_accurate\": lambda t: 0.5 * t * (1 + torch.tanh(math.sqrt(2 / math.pi) * (t + 0.044715 * torch.pow(t, 3)))),\n"
    "  \"laplace\": lambda t: 0.5 * (1.0 + torch.erf((t - 0.707107) / (0.282095 * math.sqrt(2.0)))),\n"
    "  \"leaky_relu\": lambda t: F.leaky_relu(t),\n"
    "  \"linear\": lambda t: t,\n"
    "  \"mish\": lambda t: F.mish(t),\n"
    "  \"quick_gelu\": lambda t: t * torch.sigmoid(1.702 * t),\n"
    "  \"relu\": lambda t: F.relu(t),\n"
    "  \"relu2\": lambda t: torch.square(F.relu(t)),\n"
    "  \"relu6\": lambda t: F.relu6(t),\n"
    "  \"sigmoid\": lambda t: torch.sigmoid(t),\n"
    "  \"silu\": lambda t: F.silu(t),\n"
    "  \"swish\": lambda t: F.silu(t),\n"
    "  \"tanh\": lambda t: torch.tanh(t)}\n"
    "const G = lambda activation_string: T[activation_string]\n";

// from transformers.activations import ACT2FN, get_activation: each a const of the file
// (under the name it is imported as) holding transformers' table or its lookup; the
// module's other names are bound to nothing tdsl compiles, as any other module's.
static void declare_transformers(Sema *sema, const Ast *d) {
  const SrcFile *f = srcfile_from_string(sema->cx, "<transformers.activations>", act2fn_source, sizeof act2fn_source - 1);
  Ast *prog = parse_program(sema->cx, f);
  TD_ASSERT(prog && prog->list.len == 2);
  static const char *const table = "(transformers.activations) ACT2FN";
  Ast *defs[2] = {prog->list.data[0]->rhs, prog->list.data[1]->rhs};
  const char *from[] = {"T"}, *to[] = {table};
  rename_names(defs[1], from, to, 1);
  Sym *saved = sema->scope;
  sema->scope = NULL;
  for (int k = 0; k < 2; k++) {
    TType *t = check_expr(sema, defs[k]);
    TD_ASSERT(!is_poison(t));
    Const c = {k == 0 ? table : "(transformers.activations) get_activation", t, d->loc, defs[k]};
    if (!find_const(sema, c.name)) vec_push(&sema->cx->arena, &sema->consts, c);
  }
  sema->scope = saved;
  for (int i = 0; i < d->list.len; i++) {
    const Ast *a = d->list.data[i];
    int k = !strcmp(a->name, "ACT2FN") ? 0 : !strcmp(a->name, "get_activation") ? 1 : -1;
    if (k < 0) {
      Ast one = *d;
      one.list = (AstList){0};
      vec_push(&sema->cx->arena, &one.list, (Ast *)a);
      declare_inert(sema, &one);
      continue;
    }
    Const c = *find_const(sema, k == 0 ? table : "(transformers.activations) get_activation");
    c.name = a->lhs ? a->lhs->name : a->name;
    c.loc = a->oploc;
    vec_push(&sema->cx->arena, &sema->consts, c);
  }
}

void declare_import(Sema *sema, const Ast *d) {
  const char *from = d->name;
  if (from && !strcmp(from, "transformers.activations")) {
    declare_transformers(sema, d);
    return;
  }
  if (from && (inert_module(from) || !known_module(from))) {  // a use of its names is the error (inert_use)
    declare_inert(sema, d);
    return;
  }
  if (from && d->list.len == 0) {
    diag_error(sema->cx, d->loc, "'from %s import *' is not supported: import the names it uses", from);
    return;
  }
  for (int i = 0; i < d->list.len; i++) {
    const Ast *a = d->list.data[i];
    Import im = {.loc = a->oploc};
    if (from) {
      const char *sub = arena_printf(&sema->cx->arena, "%s.%s", from, a->name);
      if (known_module(sub)) {  // from torch import nn: a module
        im.module = sub;
      } else if (module_has(from, a->name)) {
        im.module = from;
        im.attr = a->name;
      } else {
        diag_error(sema->cx, a->oploc, "cannot import name '%s' from '%s'", a->name, from);
        continue;
      }
      im.name = a->lhs ? a->lhs->name : a->name;
    } else {
      if (inert_module(a->name) || !known_module(a->name)) {
        Ast one = *d;
        one.list = (AstList){0};
        vec_push(&sema->cx->arena, &one.list, (Ast *)a);
        declare_inert(sema, &one);
        continue;
      }
      if (a->lhs) {  // import torch.nn.functional as F
        im.name = a->lhs->name;
        im.module = a->name;
      } else {  // import torch.nn binds torch
        const char *dot = strchr(a->name, '.');
        im.name = dot ? arena_strndup(&sema->cx->arena, a->name, (size_t)(dot - a->name)) : a->name;
        im.module = im.name;
      }
    }
    vec_push(&sema->cx->arena, &sema->imports, im);
  }
}

// A name imported from a module (from math import sqrt): the attribute of that module, as
// an expression sema checks in the name's place; NULL for any other name.
Ast *imported_attr(Sema *sema, const Ast *e) {
  if (find_local(sema, e->name) || find_dim(sema, e->name) || find_const(sema, e->name)) return NULL;
  const Import *im = find_import(sema, e->name);
  if (!im || !im->attr) return NULL;
  return ast_attr(sema->cx, ast_name(sema->cx, im->module, e->loc), im->attr, e->loc, e->loc);
}

// ============================================================================
// nn modules without parameters: constructed, then called as their functional op
// ============================================================================
typedef struct NnClass {
  const char *cls;     // the class: ReLU
  const char *fn;      // the op its forward is: relu
  int form;            // where PyTorch has it (F_NNF, F_TORCH); 0: the input itself (Identity)
  const char *params;  // the constructor's parameters, PyTorch 1.13's order: "negative_slope=0.01, inplace=False"
  const char *fixed;   // keywords the module always passes ("training=False": an eval-mode module), or NULL
  const char *affine;  // a norm's parameter that gives it parameters (elementwise_affine), not passed on;
                       // NULL for none
  const char *state;   // its parameters, "weight, bias" (set by the program: sema_object.c); NULL for none
                       // (a norm has them when `affine` is true)
  const char *pass;    // with parameters: the constructor's arguments its call passes on to `fn`
} NnClass;

#define CONV_TRANSPOSE_PARAMS \
  "in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True, dilation=1, " \
  "padding_mode='zeros', device=None, dtype=None"

static const NnClass nn_classes[] = {
    {"ReLU", "relu", F_NNF, "inplace=False", NULL, NULL, NULL, NULL},
    {"ReLU6", "relu6", F_NNF, "inplace=False", NULL, NULL, NULL, NULL},
    {"GELU", "gelu", F_NNF, "approximate='none'", NULL, NULL, NULL, NULL},
    {"SiLU", "silu", F_NNF, "inplace=False", NULL, NULL, NULL, NULL},
    {"Sigmoid", "sigmoid", F_TORCH, "", NULL, NULL, NULL, NULL},
    {"Tanh", "tanh", F_TORCH, "", NULL, NULL, NULL, NULL},
    {"Mish", "mish", F_NNF, "inplace=False", NULL, NULL, NULL, NULL},
    {"Hardswish", "hardswish", F_NNF, "inplace=False", NULL, NULL, NULL, NULL},
    {"Hardsigmoid", "hardsigmoid", F_NNF, "inplace=False", NULL, NULL, NULL, NULL},
    {"Hardtanh", "hardtanh", F_NNF, "min_val=-1.0, max_val=1.0, inplace=False", NULL, NULL, NULL, NULL},
    {"LeakyReLU", "leaky_relu", F_NNF, "negative_slope=0.01, inplace=False", NULL, NULL, NULL, NULL},
    {"ELU", "elu", F_NNF, "alpha=1.0, inplace=False", NULL, NULL, NULL, NULL},
    {"CELU", "celu", F_NNF, "alpha=1.0, inplace=False", NULL, NULL, NULL, NULL},
    {"SELU", "selu", F_NNF, "inplace=False", NULL, NULL, NULL, NULL},
    {"Softplus", "softplus", F_NNF, "beta=1, threshold=20", NULL, NULL, NULL, NULL},
    {"Softsign", "softsign", F_NNF, "", NULL, NULL, NULL, NULL},
    {"LogSigmoid", "logsigmoid", F_NNF, "", NULL, NULL, NULL, NULL},
    {"Tanhshrink", "tanhshrink", F_NNF, "", NULL, NULL, NULL, NULL},
    {"Softshrink", "softshrink", F_NNF, "lambd=0.5", NULL, NULL, NULL, NULL},
    {"Hardshrink", "hardshrink", F_NNF, "lambd=0.5", NULL, NULL, NULL, NULL},
    {"Threshold", "threshold", F_NNF, "threshold, value, inplace=False", NULL, NULL, NULL, NULL},
    {"GLU", "glu", F_NNF, "dim=-1", NULL, NULL, NULL, NULL},
    {"Softmax", "softmax", F_NNF, "dim=None", NULL, NULL, NULL, NULL},
    {"LogSoftmax", "log_softmax", F_NNF, "dim=None", NULL, NULL, NULL, NULL},
    {"Softmin", "softmin", F_NNF, "dim=None", NULL, NULL, NULL, NULL},
    {"Identity", NULL, 0, "*", NULL, NULL, NULL, NULL},
    {"Dropout", "dropout", F_NNF, "p=0.5, inplace=False", "training=False", NULL, NULL, NULL},
    {"Dropout1d", "dropout1d", F_NNF, "p=0.5, inplace=False", "training=False", NULL, NULL, NULL},
    {"Dropout2d", "dropout2d", F_NNF, "p=0.5, inplace=False", "training=False", NULL, NULL, NULL},
    {"Dropout3d", "dropout3d", F_NNF, "p=0.5, inplace=False", "training=False", NULL, NULL, NULL},
    {"AlphaDropout", "alpha_dropout", F_NNF, "p=0.5, inplace=False", "training=False", NULL, NULL, NULL},
    {"Flatten", "flatten", F_TORCH, "start_dim=1, end_dim=-1", "start_dim=1", NULL, NULL, NULL},
    {"Unflatten", "unflatten", F_TORCH, "dim, unflattened_size", NULL, NULL, NULL, NULL},
    {"Upsample", "interpolate", F_NNF, "size=None, scale_factor=None, mode='nearest', align_corners=None", NULL, NULL,
     NULL, NULL},
    {"MaxPool1d", "max_pool1d", F_NNF, "kernel_size, stride=None, padding=0, dilation=1, return_indices=False, "
                                       "ceil_mode=False", NULL, NULL, NULL, NULL},
    {"MaxPool2d", "max_pool2d", F_NNF, "kernel_size, stride=None, padding=0, dilation=1, return_indices=False, "
                                       "ceil_mode=False", NULL, NULL, NULL, NULL},
    {"AvgPool1d", "avg_pool1d", F_NNF, "kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True",
     NULL, NULL, NULL, NULL},
    {"AvgPool2d", "avg_pool2d", F_NNF, "kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, "
                                       "divisor_override=None", NULL, NULL, NULL, NULL},
    {"MaxPool3d", "max_pool3d", F_NNF, "kernel_size, stride=None, padding=0, dilation=1, return_indices=False, "
                                       "ceil_mode=False", NULL, NULL, NULL, NULL},
    {"AvgPool3d", "avg_pool3d", F_NNF, "kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, "
                                       "divisor_override=None", NULL, NULL, NULL, NULL},
    {"AdaptiveAvgPool1d", "adaptive_avg_pool1d", F_NNF, "output_size", NULL, NULL, NULL, NULL},
    {"AdaptiveAvgPool2d", "adaptive_avg_pool2d", F_NNF, "output_size", NULL, NULL, NULL, NULL},
    {"AdaptiveMaxPool1d", "adaptive_max_pool1d", F_NNF, "output_size, return_indices=False", NULL, NULL, NULL, NULL},
    {"AdaptiveMaxPool2d", "adaptive_max_pool2d", F_NNF, "output_size, return_indices=False", NULL, NULL, NULL, NULL},
    {"AdaptiveAvgPool3d", "adaptive_avg_pool3d", F_NNF, "output_size", NULL, NULL, NULL, NULL},
    {"AdaptiveMaxPool3d", "adaptive_max_pool3d", F_NNF, "output_size, return_indices=False", NULL, NULL, NULL, NULL},
    {"PixelShuffle", "pixel_shuffle", F_NNF, "upscale_factor", NULL, NULL, NULL, NULL},
    {"PixelUnshuffle", "pixel_unshuffle", F_NNF, "downscale_factor", NULL, NULL, NULL, NULL},
    {"LocalResponseNorm", "local_response_norm", F_NNF, "size, alpha=0.0001, beta=0.75, k=1.0", NULL, NULL, NULL, NULL},
    {"UpsamplingNearest2d", "interpolate", F_NNF, "size=None, scale_factor=None", "mode='nearest'", NULL, NULL, NULL},
    {"UpsamplingBilinear2d", "interpolate", F_NNF, "size=None, scale_factor=None", "mode='bilinear', align_corners=True",
     NULL, NULL, NULL},
    // the padding layers: F.pad, their padding its `pad` (an int on each side of the last N dims)
    {"ZeroPad2d", "pad", F_NNF, "padding", NULL, NULL, NULL, NULL},
    {"ConstantPad1d", "pad", F_NNF, "padding, value", NULL, NULL, NULL, NULL},
    {"ConstantPad2d", "pad", F_NNF, "padding, value", NULL, NULL, NULL, NULL},
    {"ConstantPad3d", "pad", F_NNF, "padding, value", NULL, NULL, NULL, NULL},
    {"ReflectionPad1d", "pad", F_NNF, "padding", "mode='reflect'", NULL, NULL, NULL},
    {"ReflectionPad2d", "pad", F_NNF, "padding", "mode='reflect'", NULL, NULL, NULL},
    {"ReflectionPad3d", "pad", F_NNF, "padding", "mode='reflect'", NULL, NULL, NULL},
    {"ReplicationPad1d", "pad", F_NNF, "padding", "mode='replicate'", NULL, NULL, NULL},
    {"ReplicationPad2d", "pad", F_NNF, "padding", "mode='replicate'", NULL, NULL, NULL},
    {"ReplicationPad3d", "pad", F_NNF, "padding", "mode='replicate'", NULL, NULL, NULL},
    {"CosineSimilarity", "cosine_similarity", F_NNF, "dim=1, eps=1e-08", NULL, NULL, NULL, NULL},
    {"PairwiseDistance", "pairwise_distance", F_NNF, "p=2.0, eps=1e-06, keepdim=False", NULL, NULL, NULL, NULL},
    {"CrossEntropyLoss", "cross_entropy", F_NNF, "weight=None, size_average=None, ignore_index=-100, reduce=None, "
                                                 "reduction='mean', label_smoothing=0.0", NULL, NULL, NULL, NULL},
    {"NLLLoss", "nll_loss", F_NNF, "weight=None, size_average=None, ignore_index=-100, reduce=None, reduction='mean'",
     NULL, NULL, NULL, NULL},
    {"MSELoss", "mse_loss", F_NNF, "size_average=None, reduce=None, reduction='mean'", NULL, NULL, NULL, NULL},
    {"L1Loss", "l1_loss", F_NNF, "size_average=None, reduce=None, reduction='mean'", NULL, NULL, NULL, NULL},
    {"SmoothL1Loss", "smooth_l1_loss", F_NNF, "size_average=None, reduce=None, reduction='mean', beta=1.0", NULL, NULL,
     NULL, NULL},
    {"HuberLoss", "huber_loss", F_NNF, "reduction='mean', delta=1.0", NULL, NULL, NULL, NULL},
    {"BCELoss", "binary_cross_entropy", F_NNF, "weight=None, size_average=None, reduce=None, reduction='mean'", NULL,
     NULL, NULL, NULL},
    {"BCEWithLogitsLoss", "binary_cross_entropy_with_logits", F_NNF, "weight=None, size_average=None, reduce=None, "
                                                                     "reduction='mean', pos_weight=None", NULL, NULL,
     NULL, NULL},
    {"KLDivLoss", "kl_div", F_NNF, "size_average=None, reduce=None, reduction='mean', log_target=False", NULL, NULL,
     NULL, NULL},
    {"SoftMarginLoss", "soft_margin_loss", F_NNF, "size_average=None, reduce=None, reduction='mean'", NULL, NULL, NULL,
     NULL},
    {"LayerNorm", "layer_norm", F_NNF, "normalized_shape, eps=1e-05, elementwise_affine=True, device=None, dtype=None",
     NULL, "elementwise_affine", "weight, bias", "normalized_shape, eps"},
    {"GroupNorm", "group_norm", F_NNF, "num_groups, num_channels, eps=1e-05, affine=True, device=None, dtype=None",
     NULL, "affine", "weight, bias", "num_groups, eps"},
    {"Linear", "linear", F_NNF, "in_features, out_features, bias=True, device=None, dtype=None", NULL, NULL,
     "weight, bias", ""},
    {"Conv1d", "conv1d", F_NNF, "in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, "
                                "bias=True, padding_mode='zeros', device=None, dtype=None", NULL, NULL, "weight, bias",
     "stride, padding, dilation, groups"},
    {"Conv2d", "conv2d", F_NNF, "in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, "
                                "bias=True, padding_mode='zeros', device=None, dtype=None", NULL, NULL, "weight, bias",
     "stride, padding, dilation, groups"},
    {"Conv3d", "conv3d", F_NNF, "in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, "
                                "bias=True, padding_mode='zeros', device=None, dtype=None", NULL, NULL, "weight, bias",
     "stride, padding, dilation, groups"},
    {"ConvTranspose1d", "conv_transpose1d", F_NNF, CONV_TRANSPOSE_PARAMS, NULL, NULL, "weight, bias",
     "stride, padding, output_padding, groups, dilation"},
    {"ConvTranspose2d", "conv_transpose2d", F_NNF, CONV_TRANSPOSE_PARAMS, NULL, NULL, "weight, bias",
     "stride, padding, output_padding, groups, dilation"},
    {"ConvTranspose3d", "conv_transpose3d", F_NNF, CONV_TRANSPOSE_PARAMS, NULL, NULL, "weight, bias",
     "stride, padding, output_padding, groups, dilation"},
    {"PReLU", "prelu", F_NNF, "num_parameters=1, init=0.25, device=None, dtype=None", NULL, NULL, "weight", ""},
    {"Bilinear", "bilinear", F_NNF, "in1_features, in2_features, out_features, bias=True, device=None, dtype=None",
     NULL, NULL, "weight, bias", ""},
    {"Embedding", "embedding", F_NNF, "num_embeddings, embedding_dim, padding_idx=None, max_norm=None, norm_type=2.0, "
                                      "scale_grad_by_freq=False, sparse=False, _weight=None, device=None, dtype=None",
     NULL, NULL, "weight", "padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse"},
    {"BatchNorm1d", "batch_norm", F_NNF, "num_features, eps=1e-05, momentum=0.1, affine=True, "
                                         "track_running_stats=True, device=None, dtype=None", "training=False", NULL,
     "running_mean, running_var, weight, bias", "momentum, eps"},
    {"BatchNorm2d", "batch_norm", F_NNF, "num_features, eps=1e-05, momentum=0.1, affine=True, "
                                         "track_running_stats=True, device=None, dtype=None", "training=False", NULL,
     "running_mean, running_var, weight, bias", "momentum, eps"},
    {"BatchNorm3d", "batch_norm", F_NNF, "num_features, eps=1e-05, momentum=0.1, affine=True, "
                                         "track_running_stats=True, device=None, dtype=None", "training=False", NULL,
     "running_mean, running_var, weight, bias", "momentum, eps"},
    {"InstanceNorm1d", "instance_norm", F_NNF, "num_features, eps=1e-05, momentum=0.1, affine=False, "
                                               "track_running_stats=False", NULL, "affine", NULL, NULL},
    {"InstanceNorm2d", "instance_norm", F_NNF, "num_features, eps=1e-05, momentum=0.1, affine=False, "
                                               "track_running_stats=False", NULL, "affine", NULL, NULL},
    {"InstanceNorm3d", "instance_norm", F_NNF, "num_features, eps=1e-05, momentum=0.1, affine=False, "
                                               "track_running_stats=False", NULL, "affine", NULL, NULL},
};

// Modules with parameters: what a forward pass calls instead.
static const struct {
  const char *cls, *fn;
} nn_with_params[] = {
    {"RMSNorm", "F.rms_norm(x, shape, weight, eps)"},
};

static const NnClass *nn_class(const char *cls) {
  for (size_t i = 0; i < sizeof nn_classes / sizeof nn_classes[0]; i++)
    if (!strcmp(nn_classes[i].cls, cls)) return &nn_classes[i];
  return NULL;
}

// Whether nn.NAME is a container class (sema_container.c).
static bool nn_container_class(const char *name) {
  static const char *const names[] = {"Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
                                      NULL};
  for (int i = 0; names[i]; i++)
    if (!strcmp(names[i], name)) return true;
  return false;
}

bool nn_names_class(const char *name) {
  return !strcmp(name, "Parameter") || nn_container_class(name) || nn_class(name) || composite_names(name);
}

// Parameter k of a "name=default, ..." list: its name into buf, the default's text (NULL:
// required); false past the end.
static bool nth_param(const char *params, int k, char *buf, size_t n, const char **dflt) {
  const char *p = params;
  for (int i = 0; i < k && p; i++) {
    p = strchr(p, ',');
    if (p) p += 2;
  }
  if (!p || !*p) return false;
  size_t len = strcspn(p, "=,");
  snprintf(buf, n, "%.*s", (int)(len < n ? len : n - 1), p);
  *dflt = p[len] == '=' ? p + len + 1 : NULL;
  return true;
}

// A literal default ("1", "-1", "0.5", "'none'", "False", "None") as a checked expression.
static Ast *literal(Sema *sema, const Ast *at, const char *text) {
  size_t len = strcspn(text, ",");
  Ast *a;
  if (text[0] == '\'') {
    a = ast_str(sema->cx, arena_strndup(&sema->cx->arena, text + 1, len - 2), at->loc);
  } else if (!strncmp(text, "True", 4) || !strncmp(text, "False", 5)) {
    a = ast_bool(sema->cx, text[0] == 'T', at->loc);
  } else if (!strncmp(text, "None", 4)) {
    a = ast_new(sema->cx, AST_NONE, at->loc);
  } else if (strcspn(text, ".e") < len) {
    a = ast_float(sema->cx, strtod(text, NULL), at->loc);
  } else {
    a = ast_int(sema->cx, strtoll(text, NULL, 10), at->loc);
  }
  check_expr(sema, a);
  return a;
}


// Whether module object m of class c holds parameters (nn.Linear; nn.LayerNorm unless
// elementwise_affine=False).
static bool has_state(const NnClass *c, const TType *m) { return c->state && obj_find(m->attrs, "weight") >= 0; }

// Whether name is one of the list "a, b, c".
static bool in_params(const char *list, const char *name) {
  char buf[64];
  const char *dflt;
  for (int k = 0; nth_param(list, k, buf, sizeof buf, &dflt); k++)
    if (!strcmp(buf, name)) return true;
  return false;
}

static const BuiltinDef def_identity = {{"identity", BK_VIEW, OP_COPY, "", NULL}, NULL, 0, OP_COUNT, 0,
                                        {DTR_ANY, NULL}};

// e (a call) becomes its tensor argument a itself.
static TType *identity_of(Sema *sema, Ast *e, Ast *a) {
  e->bi = &def_identity.b;
  set_operand1(sema, e, a);
  return a->ty;
}

// nn.Parameter(data, requires_grad=True): the tensor itself (a parameter of the function is
// one already; there is no autograd).
static TType *nn_parameter(Sema *sema, Ast *e) {
  if (!check_args(sema, e)) return poison(sema);
  Ast *data = NULL;
  for (int i = 0; i < e->list.len; i++) {
    Ast *a = e->list.data[i];
    if (a->kind == AST_KWARG && strcmp(a->name, "data") && strcmp(a->name, "requires_grad")) {
      diag_error(sema->cx, a->oploc, "__new__() got an unexpected keyword argument '%s'", a->name);
      return poison(sema);
    }
    if (a->kind != AST_KWARG ? i == 0 : !strcmp(a->name, "data")) data = a->kind == AST_KWARG ? a->rhs : a;
  }
  if (!data || !is_tensor(data->ty)) {
    diag_error(sema->cx, data ? data->loc : call_loc(e), "nn.Parameter() takes a tensor (its data), not %s",
               data ? py_type_name(data->ty) : "nothing");
    return poison(sema);
  }
  return identity_of(sema, e, data);
}

// The shape PyTorch gives parameter `name` of module object m (class c) into shape; false
// when its constructor's arguments do not say (then any shape is taken).
static bool state_shape(Sema *sema, const TType *m, const NnClass *c, const char *name, int *nd, int64_t *shape) {
  const char *cls = c->cls;
  const TType *a0 = nn_arg(sema, m, cls[0] == 'L' && cls[1] == 'a' ? "normalized_shape" : "num_channels");
  *nd = 0;
  if (!strncmp(cls, "BatchNorm", 9)) {  // each of its parameters and running statistics: [num_features]
    const TType *nf = nn_arg(sema, m, "num_features");
    if (!is_scalar(nf)) return false;
    shape[(*nd)++] = nf->ival;
    return true;
  }
  if (!strcmp(cls, "LayerNorm") || !strcmp(cls, "GroupNorm")) {
    if (a0 && is_scalar(a0)) shape[(*nd)++] = a0->ival;
    for (int i = 0; a0 && (a0->kind == TY_TUPLE || a0->kind == TY_LIST) && i < a0->nelem && i < TD_MAX_DIMS; i++) {
      if (!is_scalar(a0->elems[i])) return false;
      shape[(*nd)++] = a0->elems[i]->ival;
    }
    return *nd > 0;
  }
  if (!strcmp(cls, "PReLU")) {  // [num_parameters]
    const TType *np = nn_arg(sema, m, "num_parameters");
    if (!is_scalar(np)) return false;
    shape[(*nd)++] = np->ival;
    return true;
  }
  bool lin = !strcmp(cls, "Linear"), emb = !strcmp(cls, "Embedding"), bil = !strcmp(cls, "Bilinear");
  bool tr = !strncmp(cls, "ConvTranspose", 13);  // [in_channels, out_channels / groups, *kernel_size]
  const char *rows = lin || bil ? "out_features" : emb ? "num_embeddings" : "out_channels";
  const char *cols = lin ? "in_features" : emb ? "embedding_dim" : bil ? "in1_features" : "in_channels";
  const TType *r = nn_arg(sema, m, rows), *k = nn_arg(sema, m, cols);
  if (!is_scalar(r) || !is_scalar(k)) return false;
  if (!strcmp(name, "bias")) {
    shape[(*nd)++] = r->ival;
    return true;
  }
  shape[(*nd)++] = tr ? k->ival : r->ival;
  int64_t cols_n = tr ? r->ival : k->ival;
  if (bil) {  // [out_features, in1_features, in2_features]
    const TType *k2 = nn_arg(sema, m, "in2_features");
    if (!is_scalar(k2)) return false;
    shape[(*nd)++] = k->ival;
    shape[(*nd)++] = k2->ival;
    return true;
  }
  if (!strncmp(cls, "Conv", 4)) {
    const TType *g = nn_arg(sema, m, "groups"), *ks = nn_arg(sema, m, "kernel_size");
    if (!is_scalar(g) || g->ival <= 0) return false;
    cols_n /= g->ival;
    shape[(*nd)++] = cols_n;
    int spatial = cls[strlen(cls) - 2] - '0';
    for (int i = 0; i < spatial; i++) {
      const TType *ki = is_scalar(ks) ? ks : ks && (ks->kind == TY_TUPLE || ks->kind == TY_LIST) && ks->nelem == spatial
                                                 ? ks->elems[i] : NULL;
      if (!is_scalar(ki)) return false;
      shape[(*nd)++] = ki->ival;
    }
    return true;
  }
  shape[(*nd)++] = cols_n;
  return true;
}

// nn.PReLU(num_parameters=1, init=0.25, device=None, dtype=None) made by call e: its weight, as its
// __init__ sets it, torch.full((num_parameters,), init, dtype=dtype) (float32 unless dtype says).
static bool prelu_init(Sema *sema, Ast *e, TType *m) {
  const TType *np = nn_arg(sema, m, "num_parameters"), *init = nn_arg(sema, m, "init"), *dt = nn_arg(sema, m, "dtype");
  if (!is_scalar(np) || np->dtype == DT_F32 || np->dtype == DT_F64 || !is_scalar(init)) {
    diag_error(sema->cx, call_loc(e), "nn.PReLU takes an int num_parameters and a number init");
    return false;
  }
  Ast *full = ast_new(sema->cx, AST_CALL, e->loc), *size = ast_new(sema->cx, AST_TUPLE, e->loc);
  full->lhs = ast_name(sema->cx, "torch", e->loc);
  full->name = "full";
  full->oploc = call_loc(e);
  vec_push(&sema->cx->arena, &size->list, ast_int(sema->cx, np->ival, e->loc));
  vec_push(&sema->cx->arena, &full->list, size);
  vec_push(&sema->cx->arena, &full->list, ast_float(sema->cx, init->fval, e->loc));
  Ast *dtype = dt && dt->kind == TY_DTYPE ? ast_dtype(sema->cx, dt->dtype, e->loc)
                                          : ast_attr(sema->cx, ast_name(sema->cx, "torch", e->loc), "float32", e->loc,
                                                     e->loc);
  vec_push(&sema->cx->arena, &full->list, ast_kwarg(sema->cx, "dtype", dtype, e->loc, e->loc));
  return !is_poison(check_expr(sema, full)) && obj_set(sema, e, m, "weight", full);
}

bool nn_state_shape(Sema *sema, const TType *m, const char *name, int *nd, int64_t *shape) {
  const NnClass *c = m->kind == TY_MODULE && m->module && !strncmp(m->module, "torch.nn.", 9) ? nn_class(m->module + 9)
                                                                                             : NULL;
  return c && c->state && in_params(c->state, name) && state_shape(sema, m, c, name, nd, shape);
}

// nn.Linear(d, o), nn.Conv2d(...), nn.LayerNorm(C) ...: the module object m with its
// parameters unset (sema_object.c; bias=False leaves bias None), to be set by the program
// (`m.weight = w`) before its call.
static TType *nn_with_state(Sema *sema, Ast *e, const NnClass *c, TType *m) {
  const char *names[4];
  int n = 0;
  char buf[64];
  const char *dflt;
  for (int k = 0; n < 4 && nth_param(c->state, k, buf, sizeof buf, &dflt); k++)
    names[n++] = arena_strdup(&sema->cx->arena, buf);
  const TType *pm = nn_arg(sema, m, "padding_mode");
  if (pm && pm->kind == TY_STR && strcmp(pm->module, "zeros") && !strncmp(c->cls, "ConvTranspose", 13)) {
    diag_error(sema->cx, call_loc(e), "ValueError: Only \"zeros\" padding mode is supported for %s", c->cls);
    return poison(sema);
  }
  if (pm && pm->kind == TY_STR && strcmp(pm->module, "zeros")) {
    diag_error(sema->cx, call_loc(e), "nn.%s with padding_mode='%s' is not supported yet: pad with F.pad(x, ..., "
               "mode='%s') and use padding=0", c->cls, pm->module, pm->module);
    return poison(sema);
  }
  const TType *g = !strncmp(c->cls, "Conv", 4) ? nn_arg(sema, m, "groups") : NULL;
  if (g && is_scalar(g) && dtype_is_int(g->dtype)) {  // _ConvNd.__init__'s checks
    const TType *ci = nn_arg(sema, m, "in_channels"), *co = nn_arg(sema, m, "out_channels");
    bool cin = is_scalar(ci) && dtype_is_int(ci->dtype) && g->ival > 0 && ci->ival % g->ival;
    bool cout = is_scalar(co) && dtype_is_int(co->dtype) && g->ival > 0 && co->ival % g->ival;
    if (g->ival <= 0 || cin || cout) {
      diag_error(sema->cx, call_loc(e), "ValueError: %s", g->ival <= 0 ? "groups must be a positive integer"
                 : cin ? "in_channels must be divisible by groups" : "out_channels must be divisible by groups");
      return poison(sema);
    }
  }
  const TType *trs = nn_arg(sema, m, "track_running_stats");
  if (trs && is_scalar(trs) && !trs->ival) {
    diag_error(sema->cx, call_loc(e), "nn.%s with track_running_stats=False is not supported yet: it normalizes by "
               "each batch's statistics; call F.batch_norm(x, None, None, weight, bias, training=True)", c->cls);
    return poison(sema);
  }
  obj_init(sema, m, names, n);
  const TType *b = nn_arg(sema, m, "bias"), *af = nn_arg(sema, m, "affine");
  if (b && is_scalar(b) && b->ival == 0) m->attrs->ty[obj_find(m->attrs, "bias")] = ty_new(sema, TY_NONE);
  if (af && is_scalar(af) && af->ival == 0 && c->state && in_params(c->state, "running_mean"))  // BatchNorm
    for (int i = 0; i < 2; i++) m->attrs->ty[obj_find(m->attrs, i ? "bias" : "weight")] = ty_new(sema, TY_NONE);
  if (!strcmp(c->cls, "PReLU") && !prelu_init(sema, e, m)) return poison(sema);
  for (int i = 0; i < e->list.len; i++) {  // Embedding(n, d, _weight=w)
    Ast *a = e->list.data[i];
    if (a->kind == AST_KWARG && !strcmp(a->name, "_weight") && a->rhs->ty->kind != TY_NONE &&
        !obj_set(sema, e, m, "weight", a->rhs))
      return poison(sema);
  }
  return m;
}

// The parameters of module object m (class c) passed on by name to its op's call f: each
// set, else the located error at e.
static bool state_args(Sema *sema, Ast *e, const TType *m, const NnClass *c, Ast *f) {
  char buf[64];
  const char *dflt;
  for (int k = 0; nth_param(c->state, k, buf, sizeof buf, &dflt); k++) {
    int i = obj_find(m->attrs, buf);
    Ast *v = ast_new(sema->cx, AST_ATTR, e->loc);
    v->name = m->attrs->names[i];
    v->oploc = e->kind == AST_CALL ? call_loc(e) : e->loc;
    if (is_poison(v->ty = obj_read(sema, v, m, i))) return false;
    Ast *kw = ast_kwarg(sema->cx, m->attrs->names[i], v, e->loc, e->loc);
    kw->ty = v->ty;
    vec_push(&sema->cx->arena, &f->list, kw);
  }
  return true;
}

// m.name = v (parse.c's setattr(m, 'name', v), reached) of an object: NULL when the target
// is no object (the caller's error); a parameter of an nn module checked as PyTorch's
// load_state_dict checks it (a tensor or None; its shape).
TType *module_setattr(Sema *sema, Ast *e) {
  Ast *obj = e->list.data[0], *v = e->list.data[2];
  TType *m = check_expr(sema, obj);
  if (is_poison(m)) return m;
  if (m->kind != TY_MODULE || !m->attrs) return NULL;
  const char *name = e->list.data[1]->name;
  if (is_property(sema, m, name)) {  // its @x.setter's call, else Python's AttributeError
    if (is_poison(check_expr(sema, v))) return poison(sema);
    TType *r = property_store(sema, e, m, name, v);
    if (r) return r;
    diag_error(sema->cx, e->list.data[1]->loc, "AttributeError: property '%s' of '%s' object has no setter", name,
               m->ctor->name);
    return poison(sema);
  }
  if (obj_tie(sema, m, name, v)) return ty_new(sema, TY_NONE);  // tied to a parameter not set yet (sema_object.c)
  if (is_poison(check_expr(sema, v))) return poison(sema);
  const NnClass *c = !strncmp(m->module, "torch.nn.", 9) ? nn_class(m->module + 9) : NULL;
  if (c && c->state && in_params(c->state, name)) {
    if (!is_tensor(v->ty) && v->ty->kind != TY_NONE) {
      diag_error(sema->cx, v->loc, "cannot assign '%s' as parameter '%s' (torch.nn.Parameter or None expected)",
                 py_type_name(v->ty), name);
      return poison(sema);
    }
    int nd;
    int64_t shape[TD_MAX_DIMS];
    if (is_tensor(v->ty) && state_shape(sema, m, c, name, &nd, shape) &&
        !same_shape(nd, shape, v->ty->view.ndim, v->ty->view.shape)) {
      diag_error(sema->cx, v->loc, "size mismatch for %s: copying a param with shape torch.Size(%s), the shape in "
                 "current model is torch.Size(%s)", name, shape_str(sema, v->ty->view.ndim, v->ty->view.shape),
                 shape_str(sema, nd, shape));
      return poison(sema);
    }
  }
  if (!composite_setattr_ok(sema, m, name, v) || !obj_set(sema, e, m, name, v)) return poison(sema);
  return ty_new(sema, TY_NONE);
}

// nn.NAME(args): the module object, its arguments checked against the constructor's
// parameters (Python's messages); NULL when NAME is no class of the table (poison after
// an error).
static TType *nn_construct(Sema *sema, Ast *e) {
  if (!strcmp(e->name, "Parameter")) return nn_parameter(sema, e);
  const NnClass *c = nn_class(e->name);
  if (!c) {
    TType *composite = composite_construct(sema, e);  // nn.MultiheadAttention ... (sema_mha.c)
    if (composite) return composite;
    if (nn_container_class(e->name)) return container_construct(sema, e);  // sema_container.c
    for (size_t i = 0; i < sizeof nn_with_params / sizeof nn_with_params[0]; i++)
      if (!strcmp(nn_with_params[i].cls, e->name)) {
        diag_error(sema->cx, call_loc(e), "nn.%s has parameters: pass them to the function as its parameters and "
                   "call %s", e->name, nn_with_params[i].fn);
        return poison(sema);
      }
    return NULL;
  }
  if (!check_args(sema, e)) return poison(sema);
  if (strcmp(c->params, "*")) {
    int npos = 0, nparams = 0, nrequired = 0;
    char name[64];
    const char *dflt;
    while (nth_param(c->params, nparams, name, sizeof name, &dflt)) nparams++, nrequired += !dflt;
    for (int i = 0; i < e->list.len; i++) {
      const Ast *a = e->list.data[i];
      if (a->kind != AST_KWARG) {
        if (++npos > nparams) {  // Python counts self
          if (nrequired == nparams)
            diag_error(sema->cx, a->loc, "%s.__init__() takes %d positional argument%s but %d were given", c->cls,
                       nparams + 1, nparams ? "s" : "", npos + 1);
          else
            diag_error(sema->cx, a->loc, "%s.__init__() takes from %d to %d positional arguments but %d were given",
                       c->cls, nrequired + 1, nparams + 1, npos + 1);
          return poison(sema);
        }
        continue;
      }
      bool known = false;
      for (int k = 0; k < nparams && !known; k++) {
        nth_param(c->params, k, name, sizeof name, &dflt);
        known = !strcmp(name, a->name);
      }
      if (!known) {
        diag_error(sema->cx, a->oploc, "%s.__init__() got an unexpected keyword argument '%s'", c->cls, a->name);
        return poison(sema);
      }
    }
    for (int k = npos; k < nparams; k++) {  // required ones not given by position must come by name
      nth_param(c->params, k, name, sizeof name, &dflt);
      bool given = false;
      for (int i = 0; i < e->list.len && !given; i++)
        given = e->list.data[i]->kind == AST_KWARG && !strcmp(e->list.data[i]->name, name);
      if (!dflt && !given) {
        diag_error(sema->cx, call_loc(e), "%s.__init__() missing 1 required positional argument: '%s'", c->cls, name);
        return poison(sema);
      }
    }
  }
  TType *m = ty_module(sema, arena_printf(&sema->cx->arena, "torch.nn.%s", c->cls));
  m->ctor = e;
  if (c->affine) {  // a norm has parameters only with elementwise_affine=True (affine=True)
    const TType *a = nn_arg(sema, m, c->affine);
    bool off = a && is_scalar(a) && a->ival == 0;
    if (!off && !c->state) {
      diag_error(sema->cx, call_loc(e), "nn.%s has parameters unless %s=False: pass them to the function as its "
                 "parameters and call F.instance_norm(x, weight=weight, bias=bias)", c->cls, c->affine);
      return poison(sema);
    }
    if (off) {
      obj_init(sema, m, NULL, 0);
      return m;
    }
  }
  if (c->state) return nn_with_state(sema, e, c, m);
  obj_init(sema, m, NULL, 0);  // attributes a program may set (`ls1.gamma = None` of an nn.Identity)
  return m;
}

// The value of the constructor's parameter `name` of module object m: the argument given,
// else the default; NULL when the class has no such parameter.
const TType *nn_arg(Sema *sema, const TType *m, const char *name) {
  const NnClass *c = nn_class(strrchr(m->module, '.') + 1);
  if (!c || !m->ctor || m->ctor->kind != AST_CALL) return NULL;  // no nn module: an instance of a class of the file
  char pn[64];
  const char *dflt;
  int pos = 0;
  for (int k = 0; nth_param(c->params, k, pn, sizeof pn, &dflt); k++) {
    if (strcmp(pn, name)) continue;
    for (int i = 0; i < m->ctor->list.len; i++) {
      const Ast *a = m->ctor->list.data[i];
      if (a->kind == AST_KWARG && !strcmp(a->name, name)) return a->rhs->ty;
      if (a->kind != AST_KWARG && pos++ == k) return a->ty;
    }
    return dflt ? literal(sema, m->ctor, dflt)->ty : NULL;
  }
  return NULL;
}

static TType *einops_apply(Sema *sema, Ast *e, const TType *m, AstList *args);
static bool is_einops_layer(const TType *m);

TType *nn_attr(Sema *sema, Ast *e, const TType *m) {
  TType *pv = is_instance(m) ? property_value(sema, e, (TType *)m) : NULL;  // a @property over the instance's own
  if (pv) return pv;
  int k = obj_find(m->attrs, e->name);
  if (k >= 0) return obj_read(sema, e, m, k);
  TType *ca = is_instance(m) || is_class(m) ? class_attr(sema, m, e->name) : NULL;
  if (ca) return ca;  // an instance's attribute over its class's (Python's lookup)
  TType *sm = is_class(m) ? static_method(sema, e, (TType *)m, false) : NULL;  // Cls.m of a @staticmethod
  if (sm) return sm;
  if (is_class(m)) {
    diag_error(sema->cx, e->oploc, "type object '%s' has no attribute '%s'", m->ctor->name, e->name);
    return poison(sema);
  }
  if (is_instance(m)) {  // a method as a value, else Python's error
    TType *b = bound_method(sema, e, (TType *)m);
    if (b) return b;
    if (!strcmp(e->name, "training")) return ty_bool(sema, false);  // eval mode
    diag_error(sema->cx, e->oploc, "'%s' object has no attribute '%s'", py_type_name(m), e->name);
    return poison(sema);
  }
  if (!strcmp(m->module, "inspect.Signature") && !strcmp(e->name, "parameters")) {  // its dict of parameters
    set_operand1(sema, e, (Ast *)m->ctor);
    return m->ctor->ty;
  }
  if (is_einops_layer(m) || is_lambda(m) || !strncmp(m->module, "inspect.", 8) || !strncmp(m->module, "functools.", 10)) {
    diag_error(sema->cx, e->oploc, "'%s' object has no attribute '%s'", strrchr(m->module, '.') + 1, e->name);
    return poison(sema);
  }
  const TType *t = nn_arg(sema, m, e->name);
  if (t) return (TType *)t;
  if (!strcmp(e->name, "training")) return ty_bool(sema, false);  // eval mode
  diag_error(sema->cx, e->oploc, "'%s' object has no attribute '%s'", strrchr(m->module, '.') + 1, e->name);
  return poison(sema);
}

// The module object m called on the checked arguments args of call e: its functional op
// with the inputs first, then the constructor's arguments by name. e becomes that call.
static TType *nn_apply(Sema *sema, Ast *e, const TType *m, AstList *args);

// A call of partial object m on the checked arguments args of call e: its function's call
// on the bound positional arguments, then args, and the bound keywords (a keyword of the
// call replacing one of the same name), as functools.partial calls.
static TType *partial_apply(Sema *sema, Ast *e, const TType *m, AstList *args) {
  const Ast *ctor = m->ctor;
  const TType *f = ctor->list.data[0]->ty;
  AstList all = {0};
  for (int pass = 0; pass < 2; pass++)  // positional: the bound ones, then the call's
    for (int i = pass ? 0 : 1; i < (pass ? args->len : ctor->list.len); i++) {
      Ast *a = pass ? args->data[i] : ctor->list.data[i];
      if (a->kind != AST_KWARG) vec_push(&sema->cx->arena, &all, a);
    }
  for (int i = 1; i < ctor->list.len; i++) {
    Ast *a = ctor->list.data[i];
    bool replaced = false;
    for (int j = 0; j < args->len && !replaced; j++)
      replaced = args->data[j]->kind == AST_KWARG && !strcmp(args->data[j]->name, a->name);
    if (a->kind == AST_KWARG && !replaced) vec_push(&sema->cx->arena, &all, a);
  }
  for (int j = 0; j < args->len; j++)
    if (args->data[j]->kind == AST_KWARG) vec_push(&sema->cx->arena, &all, args->data[j]);
  if (is_lambda(f)) return lambda_call(sema, e, f, &all);
  return nn_apply(sema, e, f, &all);
}

// An int or a sequence of n ints a (a constructor's argument) as n ints; false otherwise.
static bool ints_of(const TType *a, int n, int64_t *out) {
  for (int i = 0; i < n; i++) {
    bool seq = a && (a->kind == TY_TUPLE || a->kind == TY_LIST) && a->nelem == n;
    const TType *v = a && is_scalar(a) ? a : seq ? a->elems[i] : NULL;
    if (!v || !is_scalar(v) || v->dtype == DT_F32 || v->dtype == DT_F64) return false;
    out[i] = v->ival;
  }
  return true;
}

// ConvTransposeNd's forward(input, output_size) at call e (args: the input and output_size, by
// position or name): the arguments without output_size, the module's output_padding replaced by the
// one that makes the output that size, as PyTorch's forward computes it (output_size may name the
// batch and channel dims too); NULL after PyTorch's ValueError.
static AstList *with_output_padding(Sema *sema, Ast *e, const TType *m, const NnClass *c, AstList *args,
                                    Ast **opad) {
  Ast *x = NULL, *os = NULL;
  for (int i = 0; i < args->len; i++) {
    Ast *a = args->data[i];
    if (a->kind == AST_KWARG && !strcmp(a->name, "output_size") && !os) os = a->rhs;
    else if (a->kind != AST_KWARG && !x) x = a;
    else if (a->kind != AST_KWARG && !os) os = a;
    else {
      diag_error(sema->cx, a->loc, "%s.forward() got an unexpected argument", c->cls);
      return NULL;
    }
  }
  if (!x || !is_tensor(x->ty)) {
    diag_error(sema->cx, x ? x->loc : e->loc, "%s.forward() takes a tensor input", c->cls);
    return NULL;
  }
  AstList *rest = arena_alloc(&sema->cx->arena, sizeof *rest);
  *rest = (AstList){0};
  vec_push(&sema->cx->arena, rest, x);
  if (!os || os->ty->kind == TY_NONE) return rest;
  int nsp = c->cls[strlen(c->cls) - 2] - '0', nd = x->ty->view.ndim, skip = nd == nsp + 2 ? 2 : 1;
  const TType *st = nn_arg(sema, m, "stride"), *pa = nn_arg(sema, m, "padding"), *ks = nn_arg(sema, m, "kernel_size"),
              *di = nn_arg(sema, m, "dilation");
  int64_t s[3], p[3], k[3], d[3], want[5], lo[3], hi[3];
  int n = os->ty->kind == TY_TUPLE || os->ty->kind == TY_LIST ? os->ty->nelem : -1;
  if (n < 0 || !ints_of(os->ty, n, want)) {
    diag_error(sema->cx, os->loc, "%s.forward(): output_size must be a list or tuple of ints, not %s", c->cls,
               py_type_name(os->ty));
    return NULL;
  }
  if (n == nsp + skip) memmove(want, want + skip, sizeof(int64_t) * (size_t)nsp);
  else if (n != nsp) {
    diag_error(sema->cx, os->loc, "ValueError: ConvTranspose%dD: for %dD input, output_size must have %d or %d "
               "elements (got %d)", nsp, nd, nsp, nsp + skip, n);
    return NULL;
  }
  if (!ints_of(st, nsp, s) || !ints_of(pa, nsp, p) || !ints_of(ks, nsp, k) || !ints_of(di, nsp, d) || nd < nsp + 1) {
    diag_error(sema->cx, os->loc, "%s.forward(): output_size needs int stride, padding, kernel_size and dilation",
               c->cls);
    return NULL;
  }
  bool ok = true;
  for (int i = 0; i < nsp; i++) {
    lo[i] = (x->ty->view.shape[nd - nsp + i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + 1;
    hi[i] = lo[i] + s[i] - 1;
    ok &= want[i] >= lo[i] && want[i] <= hi[i];
  }
  if (!ok) {
    const char *req = "";
    for (int i = 0; i < nsp; i++) req = arena_printf(&sema->cx->arena, "%s%s%" PRId64, req, i ? ", " : "", want[i]);
    bool list = os->ty->kind == TY_LIST;
    diag_error(sema->cx, os->loc, "ValueError: requested an output size of %s%s%s, but valid sizes range from %s to %s "
               "(for an input of torch.Size(%s))", list ? "[" : "(", req, list ? "]" : nsp == 1 ? ",)" : ")",
               shape_str(sema, nsp, lo), shape_str(sema, nsp, hi), shape_str(sema, nsp, x->ty->view.shape + nd - nsp));
    return NULL;
  }
  for (int i = 0; i < nsp; i++) want[i] -= lo[i];
  *opad = part_ints(sema, os, nsp, want);
  return rest;
}

static TType *nn_apply(Sema *sema, Ast *e, const TType *m, AstList *args) {
  if (!strcmp(m->module, "functools.partial")) return partial_apply(sema, e, m, args);
  if (is_composite(m)) return composite_apply(sema, e, m, args);
  if (is_einops_layer(m)) return einops_apply(sema, e, m, args);
  const Ast *ctor = m->ctor;
  const NnClass *c = nn_class(strrchr(m->module, '.') + 1);
  TD_ASSERT(c);
  int ninputs = 0;
  for (int i = 0; i < args->len; i++) ninputs += args->data[i]->kind != AST_KWARG;
  if (!c->fn) {  // Identity: its one input
    if (ninputs != 1 || args->len != 1) {
      diag_error(sema->cx, e->loc, "Identity.forward() takes 1 positional argument but %d were given", ninputs);
      return poison(sema);
    }
    if (!is_tensor(args->data[0]->ty)) return args->data[0]->ty;
    return identity_of(sema, e, args->data[0]);
  }
  bool bil = !strcmp(c->cls, "Bilinear");
  Ast *opad = NULL;  // ConvTransposeNd's output_padding for its output_size
  if (has_state(c, m) && !strncmp(c->cls, "ConvTranspose", 13) && (ninputs == 2 || args->len == 2) &&
      !(args = with_output_padding(sema, e, m, c, args, &opad)))
    return poison(sema);
  if (bil && ninputs < 2 && args->len == ninputs) {
    diag_error(sema->cx, e->loc, "Bilinear.forward() missing %d required positional argument%s: %s",
               2 - ninputs, ninputs ? "" : "s", ninputs ? "'input2'" : "'input1' and 'input2'");
    return poison(sema);
  }
  if (has_state(c, m) && (ninputs != 1 + bil || args->len != 1 + bil)) {  // forward(self, input)
    diag_error(sema->cx, e->loc, "%s.forward() takes %d positional arguments but %d were given", c->cls, 2 + bil,
               ninputs + 1);
    return poison(sema);
  }
  Ast *f = ast_new(sema->cx, AST_CALL, e->loc);
  f->name = c->fn;
  f->oploc = e->kind == AST_CALL ? call_loc(e) : e->lhs->loc;
  for (int i = 0; i < args->len; i++) vec_push(&sema->cx->arena, &f->list, args->data[i]);
  char name[64];
  const char *dflt;
  int pos = 0;
  for (int i = 0; i < ctor->list.len; i++) {  // the constructor's arguments, by name
    Ast *a = ctor->list.data[i], *v = a->kind == AST_KWARG ? a->rhs : a;
    const char *pname = a->name;
    if (a->kind != AST_KWARG) {
      nth_param(c->params, pos++, name, sizeof name, &dflt);
      pname = arena_strdup(&sema->cx->arena, name);
    }
    if (has_state(c, m) && !in_params(c->pass, pname)) continue;  // nn.Linear(d, o): no argument of F.linear
    if (opad && !strcmp(pname, "output_padding")) continue;
    if (!strcmp(pname, "unflattened_size")) pname = "sizes";
    if (!strcmp(c->fn, "pad") && !strcmp(pname, "padding")) {  // nn.ZeroPad2d(1): (1, 1, 1, 1)
      pname = "pad";
      if (is_scalar(v->ty)) {
        Ast *sides[6];
        int n = 2 * (c->cls[strlen(c->cls) - 2] - '0');
        for (int k = 0; k < n; k++) sides[k] = v;
        v = part_seq(sema, v, TY_TUPLE, sides, n);
      }
    }
    if (!strcmp(pname, "normalized_shape") && is_scalar(v->ty)) v = part_seq(sema, v, TY_TUPLE, &v, 1);  // nn.LayerNorm(C)
    if ((c->affine && !strcmp(pname, c->affine)) || !strcmp(pname, "num_channels") || !strcmp(pname, "num_features") ||
        !strcmp(pname, "track_running_stats"))
      continue;  // the constructor's alone: no argument of the op
    Ast *kw = ast_kwarg(sema->cx, pname, v, a->loc, a->loc);
    kw->ty = v->ty;
    vec_push(&sema->cx->arena, &f->list, kw);
  }
  if (opad) vec_push(&sema->cx->arena, &f->list, ast_kwarg(sema->cx, "output_padding", opad, e->loc, e->loc));
  if (opad) f->list.data[f->list.len - 1]->ty = opad->ty;
  if (has_state(c, m) && !state_args(sema, e, m, c, f)) return poison(sema);
  for (int k = 0; c->fixed && nth_param(c->fixed, k, name, sizeof name, &dflt); k++) {  // unless given
    bool given = false;
    for (int i = 0; i < f->list.len && !given; i++)
      given = f->list.data[i]->kind == AST_KWARG && !strcmp(f->list.data[i]->name, name);
    if (given) continue;
    Ast *v = literal(sema, e, dflt);
    Ast *kw = ast_kwarg(sema->cx, arena_strdup(&sema->cx->arena, name), v, e->loc, e->loc);
    kw->ty = v->ty;
    vec_push(&sema->cx->arena, &f->list, kw);
  }
  const BuiltinDef *d = builtin_find_form(c->fn, c->form);
  TD_ASSERT(d);
  TType *r = f->ty = check_builtin(sema, f, d);
  if (is_poison(r)) return r;
  if (!f->bi) return r;  // a Python value
  return become(sema, e, f);
}

// Whether nn.NAME is a module class tdsl has (Linear, Sequential, MultiheadAttention ...):
// isinstance's second argument (nn.Parameter is no module class).
bool is_nn_class(const char *name) { return strcmp(name, "Parameter") && nn_names_class(name); }

// nn.Embedding.from_pretrained(embeddings, freeze=True, padding_idx=None, ...) at call e: the
// module nn.Embedding(rows, cols, ..., _weight=embeddings) its classmethod makes, which e becomes
// (freeze changes nothing without autograd).
static TType *from_pretrained(Sema *sema, Ast *e) {
  Ast *w = e->list.len && e->list.data[0]->kind != AST_KWARG ? e->list.data[0] : NULL;
  for (int i = 0; i < e->list.len && !w; i++)
    if (!strcmp(e->list.data[i]->name, "embeddings")) w = e->list.data[i]->rhs;
  TType *wt = w ? check_expr(sema, ast_clone(sema->cx, w)) : NULL;
  if (wt && is_poison(wt)) return wt;
  if (!wt || !is_tensor(wt) || wt->view.ndim != 2) {
    diag_error(sema->cx, w ? w->loc : call_loc(e), "Embeddings parameter is expected to be 2-dimensional");
    return poison(sema);
  }
  Ast *call = ast_new(sema->cx, AST_CALL, e->loc);
  call->lhs = ast_name(sema->cx, "nn", e->loc);
  call->name = "Embedding";
  call->oploc = e->oploc;
  vec_push(&sema->cx->arena, &call->list, ast_int(sema->cx, wt->view.shape[0], e->loc));
  vec_push(&sema->cx->arena, &call->list, ast_int(sema->cx, wt->view.shape[1], e->loc));
  for (int i = 0; i < e->list.len; i++) {
    Ast *a = e->list.data[i];
    if (a->kind != AST_KWARG && i > 0) {
      diag_error(sema->cx, a->loc, "from_pretrained() takes the embeddings by position, the rest by name");
      return poison(sema);
    }
    if (a->kind == AST_KWARG && strcmp(a->name, "embeddings") && strcmp(a->name, "freeze"))
      vec_push(&sema->cx->arena, &call->list, a);
  }
  vec_push(&sema->cx->arena, &call->list, ast_kwarg(sema->cx, "_weight", w, e->loc, e->loc));
  *e = *call;
  return nn_construct(sema, e);
}

// nn.init.NAME(tensor, ...), as a module's __init__ initialises its parameters: zeros_, ones_ and
// constant_ fill the tensor in place (its zero_() and fill_()); a random one (normal_, xavier_uniform_
// ...) of an object's attribute leaves the attribute unset, as tdsl has no random numbers (a read of
// it is the error "not set", a set of it from the entry's parameters, as load_state_dict sets it, is
// what a compiled model does); of anything else, the located error.
static TType *fill_unset(Sema *sema, Ast *e, Ast *t, double v);

static TType *nn_init(Sema *sema, Ast *e) {
  static const char *const random[] = {"normal_", "uniform_", "trunc_normal_", "xavier_uniform_", "xavier_normal_",
                                       "kaiming_uniform_", "kaiming_normal_", "orthogonal_", "sparse_", NULL};
  bool fill = !strcmp(e->name, "zeros_") || !strcmp(e->name, "ones_") || !strcmp(e->name, "constant_"), rnd = false;
  for (int i = 0; random[i] && !fill; i++) rnd |= !strcmp(e->name, random[i]);
  if (!fill && !rnd) {
    diag_error(sema->cx, e->oploc, "module 'torch.nn.init' has no attribute '%s' tdsl compiles: it takes zeros_, "
               "ones_, constant_ and the random initialisers of a module's parameters", e->name);
    return poison(sema);
  }
  Ast *t = e->list.len ? e->list.data[0] : NULL;
  if (!t || t->kind == AST_KWARG) {
    diag_error(sema->cx, call_loc(e), "%s() missing 1 required positional argument: 'tensor'", e->name);
    return poison(sema);
  }
  if (fill) {  // t.zero_(), t.fill_(1.0), t.fill_(val)
    bool zeros = e->name[0] == 'z', ones = e->name[0] == 'o';
    TType *r = fill_unset(sema, e, t, zeros ? 0.0 : ones ? 1.0 : NAN);
    if (r) return r;
    AstList rest = {0};
    for (int i = 1; i < e->list.len; i++) vec_push(&sema->cx->arena, &rest, e->list.data[i]);
    if (ones) vec_push(&sema->cx->arena, &rest, ast_float(sema->cx, 1.0, e->loc));
    if (!zeros && !ones && rest.len == 1 && rest.data[0]->kind == AST_KWARG && !strcmp(rest.data[0]->name, "val"))
      rest.data[0] = rest.data[0]->rhs;
    e->lhs = t;
    e->name = zeros ? "zero_" : "fill_";
    e->list = rest;
    return check_expr(sema, e);
  }
  TType *obj = t->kind == AST_ATTR ? check_expr(sema, t->lhs) : NULL;
  if (obj && is_poison(obj)) return obj;
  int k = obj && obj->kind == TY_MODULE && obj->attrs ? obj_find(obj->attrs, t->name) : -1;
  if (k < 0) {
    diag_error(sema->cx, t->loc, "nn.init.%s fills a tensor with random numbers, which tdsl does not have: call it on "
               "a module's parameter (self.weight), which the program then sets (m.weight = w)", e->name);
    return poison(sema);
  }
  for (int i = 1; i < e->list.len; i++) {
    Ast *a = e->list.data[i];
    if (is_poison(check_expr(sema, a->kind == AST_KWARG ? a->rhs : a))) return poison(sema);
  }
  obj->attrs->ty[k] = NULL;  // unset: the entry sets it, as load_state_dict does
  obj->attrs->hidden[k] = NULL;
  return ty_new(sema, TY_NONE);
}

// nn.init.constant_(m.weight, 1) (zeros_, ones_) of a parameter of an nn module object not set yet
// (a torchvision model's `for m in self.modules()` loop in its __init__): the parameter set to
// torch.full of the shape its constructor gives it (f32), as PyTorch's fills the one __init__ made;
// v NAN: constant_'s value argument. NULL when t is no such parameter (the fill of a tensor).
static TType *fill_unset(Sema *sema, Ast *e, Ast *t, double v) {
  if (t->kind != AST_ATTR) return NULL;
  TType *obj = check_expr(sema, t->lhs);
  if (is_poison(obj)) return obj;
  const NnClass *c = obj->kind == TY_MODULE && obj->attrs && !strncmp(obj->module, "torch.nn.", 9)
                         ? nn_class(obj->module + 9) : NULL;
  int k = c ? obj_find(obj->attrs, t->name) : -1, nd;
  int64_t shape[TD_MAX_DIMS];
  if (k < 0 || obj->attrs->ty[k] || !state_shape(sema, obj, c, t->name, &nd, shape)) return NULL;
  Ast *val = NULL;
  for (int i = 1; i < e->list.len; i++) {
    Ast *a = e->list.data[i];
    if (a->kind != AST_KWARG || !strcmp(a->name, "val")) val = a->kind == AST_KWARG ? a->rhs : a;
  }
  if (isnan(v) && !val) return NULL;  // constant_'s own error
  Ast *full = ast_new(sema->cx, AST_CALL, e->loc), *size = ast_new(sema->cx, AST_TUPLE, e->loc);
  full->lhs = ast_name(sema->cx, "torch", e->loc);
  full->name = "full";
  full->oploc = e->oploc;
  for (int i = 0; i < nd; i++) vec_push(&sema->cx->arena, &size->list, ast_int(sema->cx, shape[i], e->loc));
  vec_push(&sema->cx->arena, &full->list, size);
  vec_push(&sema->cx->arena, &full->list, isnan(v) ? val : ast_float(sema->cx, v, e->loc));
  Ast *dt = ast_attr(sema->cx, ast_name(sema->cx, "torch", e->loc), "float32", e->loc, e->loc);
  vec_push(&sema->cx->arena, &full->list, ast_kwarg(sema->cx, "dtype", dt, e->loc, e->loc));
  if (is_poison(check_expr(sema, full)) || !obj_set(sema, e, obj, obj->attrs->names[k], full)) return poison(sema);
  return ty_new(sema, TY_NONE);
}

// ============================================================================
// einops' layers: Rearrange(pattern, **axes) and Reduce(pattern, reduction, **axes)
// ============================================================================
// A layer of module m (einops.layers.torch ...) constructed by call e: the module object
// "einops.Rearrange" holding its call (its pattern checked where it is applied, einops'
// own messages); EinMix has weights: refused, with what to write instead.
static TType *einops_layer(Sema *sema, Ast *e, const char *m) {
  bool rearrange = !strcmp(e->name, "Rearrange"), reduce = !strcmp(e->name, "Reduce");
  if (!rearrange && !reduce) {
    if (!strcmp(e->name, "EinMix"))
      diag_error(sema->cx, call_loc(e), "einops' EinMix has weights: pass its weight (and bias) to the function as "
                 "parameters and call einops.einsum(x, weight, pattern) where the forward pass calls the layer");
    else
      diag_error(sema->cx, call_loc(e), "module '%s' has no attribute '%s'", m, e->name);
    return poison(sema);
  }
  if (!check_args(sema, e)) return poison(sema);
  int npos = 0;
  for (int i = 0; i < e->list.len; i++) {
    const Ast *a = e->list.data[i];
    npos += a->kind != AST_KWARG || (reduce && !strcmp(a->name, "reduction"));  // Reduce(p, reduction='max')
  }
  if (npos != (rearrange ? 1 : 2)) {
    diag_error(sema->cx, call_loc(e), "%s.__init__() takes %d positional argument%s but %d were given", e->name,
               rearrange ? 2 : 3, rearrange ? "" : "s", npos + 1);
    return poison(sema);
  }
  TType *t = ty_module(sema, rearrange ? "einops.Rearrange" : "einops.Reduce");
  t->ctor = e;
  return t;
}

static bool is_einops_layer(const TType *m) { return !strncmp(m->module, "einops.", 7); }

// einops layer m applied to args at call e: einops.rearrange(x, pattern, **axes) (reduce:
// pattern, reduction), which e becomes.
static TType *einops_apply(Sema *sema, Ast *e, const TType *m, AstList *args) {
  int ninputs = 0;
  for (int i = 0; i < args->len; i++) ninputs += args->data[i]->kind != AST_KWARG;
  if (ninputs != 1 || args->len != 1) {
    diag_error(sema->cx, e->loc, "%s.forward() takes 2 positional arguments but %d were given", m->module + 7,
               ninputs + 1);
    return poison(sema);
  }
  Ast *f = ast_new(sema->cx, AST_CALL, e->loc);
  f->name = !strcmp(m->module, "einops.Rearrange") ? "rearrange" : "reduce";
  f->oploc = e->kind == AST_CALL ? call_loc(e) : e->lhs->loc;
  vec_push(&sema->cx->arena, &f->list, args->data[0]);
  for (int i = 0; i < m->ctor->list.len; i++) vec_push(&sema->cx->arena, &f->list, m->ctor->list.data[i]);
  const BuiltinDef *d = builtin_find_form(f->name, F_EINOPS);
  TD_ASSERT(d);
  TType *r = f->ty = check_builtin(sema, f, d);
  if (is_poison(r)) return r;
  return become(sema, e, f);
}

// Whether name is bound by `import inspect` (a module tdsl otherwise does not compile).
static bool is_inspect(Sema *sema, const Ast *e) {
  if (e->kind != AST_NAME || find_local(sema, e->name) || find_const(sema, e->name)) return false;
  for (int i = sema->imports.len - 1; i >= 0; i--) {
    const Import *im = &sema->imports.data[i];
    if (!strcmp(im->name, e->name)) return im->inert && !im->attr && !strcmp(im->module, "inspect");
  }
  return false;
}

// Whether call e is functools.NAME(...) (partial, reduce): `from functools import NAME` or `import
// functools` (a module tdsl otherwise does not compile) bound the name it calls.
static bool is_functools(Sema *sema, const Ast *e, const char *name) {
  const Ast *n = e->lhs ? e->lhs : e;
  if (n->kind != AST_NAME && n->kind != AST_CALL) return false;
  if ((e->lhs ? strcmp(e->name, name) : false) || find_local(sema, n->name) || find_const(sema, n->name)) return false;
  for (int i = sema->imports.len - 1; i >= 0; i--) {
    const Import *im = &sema->imports.data[i];
    if (strcmp(im->name, n->name)) continue;
    return im->inert && !strcmp(im->module, "functools") && (e->lhs ? !im->attr : im->attr && !strcmp(im->attr, name));
  }
  return false;
}

// functools.reduce(function, iterable[, initial]) at call e: function applied cumulatively, left to right,
// f(f(f(initial, xs[0]), xs[1]), ...), to a list or tuple (its items read from a hidden name bound
// to it), as Python's; e becomes that call's value. Python's messages for the wrong arguments.
static TType *functools_reduce(Sema *sema, Ast *e) {
  Ctx *cx = sema->cx;
  Loc at = call_loc(e);
  for (int i = 0; i < e->list.len; i++)
    if (e->list.data[i]->kind == AST_KWARG) {
      diag_error(cx, e->list.data[i]->loc, "TypeError: reduce() takes no keyword arguments");
      return poison(sema);
    }
  if (e->list.len < 2 || e->list.len > 3) {
    diag_error(cx, at, "TypeError: reduce expected at %s arguments, got %d", e->list.len < 2 ? "least 2" : "most 3",
               e->list.len);
    return poison(sema);
  }
  Ast *f = e->list.data[0], *xs = e->list.data[1], *init = e->list.len == 3 ? e->list.data[2] : NULL;
  TType *t = check_expr(sema, xs);
  if (is_poison(t)) return t;
  if (t->kind != TY_LIST && t->kind != TY_TUPLE) {
    diag_error(cx, xs->loc, "TypeError: '%s' object is not iterable by tdsl's reduce(): it takes a list or a tuple",
               py_type_name(t));
    return poison(sema);
  }
  if (!init && t->nelem == 0) {
    diag_error(cx, at, "TypeError: reduce() of empty iterable with no initial value");
    return poison(sema);
  }
  const char *items = arena_printf(&cx->arena, "(reduce %d) items", ++sema->lambdas);
  bind_hidden(sema, e, items, xs, xs->loc);
  Ast *acc = init;
  for (int i = 0; i < t->nelem; i++) {
    Ast *ix = ast_index(cx, ast_name(cx, items, xs->loc), ast_list_of(cx, ast_int(cx, i, xs->loc), xs->loc), xs->loc,
                        xs->loc);
    if (!acc) {
      acc = ix;
      continue;
    }
    Ast *args = ast_list_of(cx, acc, f->loc);
    ast_append(cx, args, ix);
    acc = ast_call_of(cx, ast_clone(cx, f), args, f->loc);
  }
  TType *r = check_expr(sema, acc);
  if (is_poison(r)) return r;
  if (is_tensor(r)) return identity_of(sema, e, acc);
  set_operand1(sema, e, acc);
  return r;
}

// functools.partial(f, *args, **kw): a partial object (TY_MODULE "functools.partial"
// holding the checked call), called as partial_apply says.
static TType *functools_partial(Sema *sema, Ast *e) {
  if (!check_args(sema, e)) return poison(sema);
  const Ast *f = e->list.len ? e->list.data[0] : NULL;
  if (!f || f->kind == AST_KWARG || f->ty->kind != TY_MODULE || !f->ty->ctor) {
    diag_error(sema->cx, f ? f->loc : call_loc(e), f && f->kind != AST_KWARG ? "the first argument must be callable"
                                                                             : "type 'partial' takes at least one argument");
    return poison(sema);
  }
  partial_bind_now(sema, e);
  TType *m = ty_module(sema, "functools.partial");
  m->ctor = e;
  return m;
}

// inspect.signature(f) of a function value f: a Signature object whose `parameters` is a
// dict of its parameters' names (each None), as transformers' apply_chunking_to_forward
// counts them; a function whose parameters tdsl does not know is the located error.
static TType *inspect_signature(Sema *sema, Ast *e) {
  if (!check_args(sema, e)) return poison(sema);
  if (e->list.len != 1 || e->list.data[0]->kind == AST_KWARG) {
    diag_error(sema->cx, call_loc(e), "signature() takes 1 positional argument but %d were given", e->list.len);
    return poison(sema);
  }
  const Ast *a = e->list.data[0];
  const TType *f = a->ty;
  const Ast *fn = f->kind == TY_MODULE && f->ctor && f->ctor->kind == AST_FN ? f->ctor : NULL;
  if (fn && fn->rhs && fn->rhs->kind == AST_NAME && sema_find_fn(sema->p, fn->rhs->name))
    fn = sema_find_fn(sema->p, fn->rhs->name);  // a user fn named
  else if (fn && fn->rhs)
    fn = NULL;  // torch's, F's: their parameters are PyTorch's
  const char *one = "input";
  int n = fn ? fn->list.len : f->kind == TY_MODULE && f->ctor ? 1 : -1;  // an nn module object: forward(input)
  if (n < 0 || (!fn && !(f->kind == TY_MODULE && f->ctor && f->ctor->kind != AST_FN))) {
    diag_error(sema->cx, a->loc, "inspect.signature() of %s is not known to tdsl: it takes a fn of the file, a fn "
               "inside one, a lambda or an nn module object", py_type_name(f));
    return poison(sema);
  }
  TType **keys = arena_alloc(&sema->cx->arena, sizeof(TType *) * (size_t)(n + 1));
  Ast **vals = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(n + 1));
  for (int i = 0; i < n; i++) {
    keys[i] = ty_new(sema, TY_STR);
    keys[i]->module = fn ? fn->list.data[i]->name : one;
    vals[i] = ast_new(sema->cx, AST_NONE, e->loc);
    vals[i]->ty = ty_new(sema, TY_NONE);
  }
  TType *m = ty_module(sema, "inspect.Signature");
  m->ctor = part_dict(sema, e, keys, vals, n);
  return m;
}

// A call NAME(args) of a local holding a module object, nn.NAME(args) constructing one,
// and torch._assert: the module's meaning; a name imported from a module (torch's, einops')
// becomes that module's attribute (e is rewritten, and NULL returned so that the call is
// checked as one); NULL for every other call.
TType *module_apply(Sema *sema, Ast *e, const TType *m, AstList *args) {
  if (is_lambda(m)) return lambda_call(sema, e, m, args);
  if (is_container(m)) return container_call(sema, e, m, args);
  return nn_apply(sema, e, m, args);
}

// Whether call e is collections.OrderedDict(...): `from collections import OrderedDict` or
// `import collections` bound the name it calls.
static bool is_ordered_dict(Sema *sema, const Ast *e) {
  const Ast *n = e->lhs ? e->lhs : e;
  if ((n->kind != AST_NAME && n->kind != AST_CALL) || (e->lhs && strcmp(e->name, "OrderedDict")) ||
      find_local(sema, n->name) || find_const(sema, n->name))
    return false;
  for (int i = sema->imports.len - 1; i >= 0; i--) {
    const Import *im = &sema->imports.data[i];
    if (strcmp(im->name, n->name)) continue;
    return im->inert && !strcmp(im->module, "collections") &&
           (e->lhs ? !im->attr : im->attr && !strcmp(im->attr, "OrderedDict"));
  }
  return false;
}

// torch.manual_seed(seed): nothing to seed (tdsl has no random ops: a model's dropout is eval
// mode's identity), so a statement that does nothing; the seed an int, as PyTorch checks it.
static TType *manual_seed(Sema *sema, Ast *e) {
  if (!check_args(sema, e)) return poison(sema);
  const Ast *a = e->list.len == 1 ? e->list.data[0] : NULL;
  if (a && a->kind == AST_KWARG && !strcmp(a->name, "seed")) a = a->rhs;
  if (!a || a->kind == AST_KWARG || !is_scalar(a->ty) || a->ty->dtype == DT_F64 || a->ty->dtype == DT_F32) {
    diag_error(sema->cx, a ? a->loc : call_loc(e), "manual_seed() takes one int, the seed");
    return poison(sema);
  }
  return ty_new(sema, TY_NONE);
}

// Whether call e is copy.deepcopy(...): `import copy` (or `from copy import deepcopy`) bound the name it
// calls, or `copy` is bound to nothing (torch.nn's own sources call it so).
static bool is_deepcopy(Sema *sema, const Ast *e) {
  const Ast *n = e->lhs ? e->lhs : e;
  if (n->kind != AST_NAME || (e->lhs && strcmp(e->name, "deepcopy")) || find_local(sema, n->name) ||
      find_const(sema, n->name) || sema_find_fn(sema->p, n->name))
    return false;
  for (int i = sema->imports.len - 1; i >= 0; i--) {
    const Import *im = &sema->imports.data[i];
    if (strcmp(im->name, n->name)) continue;
    return im->inert && !strcmp(im->module, "copy") && (e->lhs ? !im->attr : im->attr && !strcmp(im->attr, "deepcopy"));
  }
  return e->lhs && !strcmp(n->name, "copy");
}

// A deep copy of module object m, as copy.deepcopy makes it: its own attributes, each module it holds
// copied in turn (a module held twice copied once, as deepcopy's memo does), the other values shared
// (a tensor is a value in tdsl: the copy's attribute is set to it, as a copied parameter holds the same
// numbers). NULL (after the error at at) for what tdsl cannot copy.
typedef struct CopyMemo {
  const TType **from;  // the modules copied so far and their copies (n of cap)
  TType **to;
  int n, cap;
  int depth;  // modules being copied, nested (COPY_MAX_DEPTH: a bound on the recursion)
  struct {  // the copies' parameter identities: each original tensor's (tied ones stay tied in the copy)
    const void **from, **to;
    int n, cap;
  } ids;
} CopyMemo;

// The identity the copy's parameter takes for the original's ident: a new one (copy.deepcopy's parameters
// are tensors of their own), the same for every attribute holding that tensor (NULL: none).
static const void *copy_ident(Sema *sema, CopyMemo *memo, const void *ident) {
  if (!ident) return NULL;
  for (int i = 0; i < memo->ids.n; i++)
    if (memo->ids.from[i] == ident) return memo->ids.to[i];
  if (memo->ids.n == memo->ids.cap) {
    int cap = memo->ids.cap ? 2 * memo->ids.cap : 16;
    const void **f = arena_alloc(&sema->cx->arena, sizeof(void *) * (size_t)cap);
    const void **t = arena_alloc(&sema->cx->arena, sizeof(void *) * (size_t)cap);
    for (int i = 0; i < memo->ids.n; i++) f[i] = memo->ids.from[i], t[i] = memo->ids.to[i];
    memo->ids.from = f, memo->ids.to = t, memo->ids.cap = cap;
  }
  memo->ids.from[memo->ids.n] = ident;
  return memo->ids.to[memo->ids.n++] = arena_alloc(&sema->cx->arena, 1);
}

static bool copyable(const TType *t) {
  return t && ((t->kind == TY_MODULE && t->attrs && !is_class(t) && (is_instance(t) || !is_lambda(t))) ||
              is_container(t));
}

static Ast *container_node(Sema *sema, TType *c, Loc loc);

enum { COPY_MAX_DEPTH = 64 };

static TType *module_copy(Sema *sema, Ast *e, Loc at, const TType *m, CopyMemo *memo);

static TType *module_copy_at(Sema *sema, Ast *e, Loc at, const TType *m, CopyMemo *memo) {
  for (int i = 0; i < memo->n; i++)
    if (memo->from[i] == m) return memo->to[i];
  bool params = is_container(m) && !strncmp(m->container, "Parameter", 9);
  if (params || memo->depth > COPY_MAX_DEPTH) {
    diag_error(sema->cx, at, "copy.deepcopy() of %s is not supported yet: tdsl copies nn modules, their containers "
               "and instances of the file's classes", params ? m->container : "a module this deep");
    return NULL;
  }
  TType *c = ty_new(sema, m->kind);
  *c = *m;
  if (memo->n == memo->cap) {
    int cap = memo->cap ? 2 * memo->cap : 64;
    const TType **f = arena_alloc(&sema->cx->arena, sizeof *f * (size_t)cap);
    TType **t = arena_alloc(&sema->cx->arena, sizeof *t * (size_t)cap);
    for (int i = 0; i < memo->n; i++) f[i] = memo->from[i], t[i] = memo->to[i];
    memo->from = f, memo->to = t, memo->cap = cap;
  }
  memo->from[memo->n] = m, memo->to[memo->n++] = c;
  if (is_container(m)) {  // a Sequential, ModuleList or ModuleDict: its modules copied
    c->elems = arena_alloc(&sema->cx->arena, sizeof(TType *) * (size_t)(m->nelem ? m->nelem : 1));
    for (int i = 0; i < m->nelem; i++)
      if (!(c->elems[i] = copyable(m->elems[i]) ? module_copy(sema, e, at, m->elems[i], memo) : m->elems[i])) return NULL;
    if (!m->attrs) return c;
  }
  obj_init(sema, c, (const char *const *)m->attrs->names, m->attrs->n);
  for (int i = 0; i < m->attrs->n; i++) {
    TType *t = m->attrs->ty[i];
    bool sub = copyable(t);
    c->attrs->role[i] = m->attrs->role[i];  // (obj_init's roles are an nn module's state names')
    c->attrs->want[i] = m->attrs->want[i];
    c->attrs->ident[i] = sub ? NULL : copy_ident(sema, memo, m->attrs->ident[i]);
    c->attrs->ty[i] = sub ? module_copy(sema, e, at, t, memo) : t;
    c->attrs->hidden[i] = sub ? NULL : m->attrs->hidden[i];
    if (sub && !c->attrs->ty[i]) return NULL;
    if (sub && is_container(t) && !obj_set(sema, e, c, c->attrs->names[i], container_node(sema, c->attrs->ty[i], at)))
      return NULL;  // a list or dict value: bound where the copy is made, as obj_set binds one
  }
  return c;
}

// module_copy_at, nested at most COPY_MAX_DEPTH deep (a module holding itself is in the memo by then).
static TType *module_copy(Sema *sema, Ast *e, Loc at, const TType *m, CopyMemo *memo) {
  memo->depth++;
  TType *c = module_copy_at(sema, e, at, m, memo);
  memo->depth--;
  return c;
}

// A node standing for container c (a list or dict of modules): one operand a node for each module, as
// lowering reads a sequence's items (a module is nothing to compute), a container's its own container_node
// (a Sequential of Sequentials: lowering reads their items too).
static Ast *container_node(Sema *sema, TType *c, Loc loc) {
  Ast *n = value_node(sema, c, loc);
  Ast **elems = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(c->nelem ? c->nelem : 1));
  for (int i = 0; i < c->nelem; i++)
    elems[i] = is_container(c->elems[i]) ? container_node(sema, c->elems[i], loc) : value_node(sema, c->elems[i], loc);
  set_operands(sema, n, elems, c->nelem);
  return n;
}

// copy.deepcopy(x) at call e: a module object's copy (module_copy); a compile-time value itself.
static TType *deepcopy_call(Sema *sema, Ast *e) {
  if (!check_args(sema, e)) return poison(sema);
  Ast *x = e->list.len ? e->list.data[0] : NULL;
  if (!x || x->kind == AST_KWARG || e->list.len > 2) {
    diag_error(sema->cx, call_loc(e), "deepcopy() takes the object to copy and an optional memo");
    return poison(sema);
  }
  if (!copyable(x->ty)) {
    if (x->ty->kind != TY_SCALAR && x->ty->kind != TY_STR && x->ty->kind != TY_NONE && x->ty->kind != TY_DTYPE) {
      diag_error(sema->cx, x->loc, "copy.deepcopy() of %s is not supported yet: tdsl copies module objects (x.clone() "
                 "copies a tensor)", py_type_name(x->ty));
      return poison(sema);
    }
    return x->ty;  // a number, a string, None, a dtype: immutable
  }
  CopyMemo memo = {.n = 0};
  TType *c = module_copy(sema, e, x->loc, x->ty, &memo);
  if (c && is_container(c)) set_operands(sema, e, container_node(sema, c, e->loc)->operands, c->nelem);
  return c ? c : poison(sema);
}

TType *module_call(Sema *sema, Ast *e) {
  if (is_functools(sema, e, "partial")) return functools_partial(sema, e);
  if (is_functools(sema, e, "reduce")) return functools_reduce(sema, e);
  if (is_deepcopy(sema, e)) return deepcopy_call(sema, e);
  if (is_ordered_dict(sema, e)) {  // a dict (ordered as Python's are), marked: nn.Sequential names its modules
    e->lhs = NULL;
    e->name = "dict";
    e->op = 1;
    if (!check_args(sema, e)) return poison(sema);
    TType *d = dict_builtin(sema, e);
    if (!is_poison(d)) d->module = "OrderedDict";
    return d;
  }
  if (!e->lhs && !strcmp(e->name, "super") && !find_local(sema, e->name) && !find_const(sema, e->name))
    return super_value(sema, e);
  if (!e->lhs) {
    Sym *s = find_local(sema, e->name);
    if (s && is_container(s->ty)) return check_args(sema, e) ? container_call(sema, e, s->ty, &e->list) : poison(sema);
    if (s && s->ty->kind == TY_MODULE && s->ty->ctor) {
      if (!check_args(sema, e)) return poison(sema);
      if (is_lambda(s->ty)) return lambda_call(sema, e, s->ty, &e->list);
      return nn_apply(sema, e, s->ty, &e->list);
    }
    Const *c = s ? NULL : find_const(sema, e->name);
    if (c && is_lambda(c->ty)) {  // a const function value: get_activation(name), const act = F.relu
      if (!check_args(sema, e)) return poison(sema);
      return lambda_call(sema, e, c->ty, &e->list);
    }
    if (s || c || sema_find_fn(sema->p, e->name)) return NULL;
    const Import *im = find_import(sema, e->name);
    if (!im || !im->attr) return NULL;
    e->lhs = ast_name(sema->cx, im->module, e->oploc);  // from torch import cat: torch.cat
    e->name = im->attr;
  }
  if (!strcmp(e->name, "signature") && is_inspect(sema, e->lhs)) return inspect_signature(sema, e);
  const char *m = module_path(sema, e->lhs);
  if (!m && e->lhs->kind == AST_ATTR && !strcmp(e->lhs->name, "Embedding") && !strcmp(e->name, "from_pretrained")) {
    const char *nn = module_path(sema, e->lhs->lhs);
    if (nn && !strcmp(nn, "torch.nn")) return from_pretrained(sema, e);
  }
  if (!m && e->lhs->kind == AST_ATTR && module_path(sema, e->lhs->lhs) &&
      !strcmp(module_path(sema, e->lhs->lhs), "torch.nn")) {  // nn.Transformer.generate_square_subsequent_mask(sz)
    TType *r = composite_static_call(sema, e, e->lhs->name);
    if (r) return r;
  }
  if (!m) return NULL;
  if (!strcmp(m, "torch.nn")) return nn_construct(sema, e);
  if (!strcmp(m, "torch.nn.init")) return nn_init(sema, e);
  if (!strcmp(m, "torch.nn.functional") && !strcmp(e->name, "multi_head_attention_forward"))
    return mha_functional(sema, e);  // sema_mha.c
  if ((!strcmp(m, "torch.nn.functional") || !strcmp(m, "torch")) && !strcmp(e->name, "channel_shuffle"))
    return channel_shuffle_functional(sema, e);
  if (!strcmp(m, "torch") && !strcmp(e->name, "_assert")) return torch_assert(sema, e);
  if (!strcmp(m, "torch") && !strcmp(e->name, "manual_seed")) return manual_seed(sema, e);
  if (!strncmp(m, "einops.layers", 13)) return einops_layer(sema, e, m);
  if (!strcmp(m, "einops") && !strcmp(e->name, "parse_shape")) return einops_parse_shape(sema, e);
  return NULL;
}

// callee(args) of any other callee: a module object's call, else Python's error.
TType *check_apply(Sema *sema, Ast *e) {
  TType *c = check_expr(sema, e->lhs);
  bool ok = check_items(sema, &e->list);
  if (is_poison(c) || !ok) return poison(sema);
  if (is_lambda(c)) return lambda_call(sema, e, c, &e->list);
  if (c->kind == TY_MODULE && c->ctor) return nn_apply(sema, e, c, &e->list);
  if (is_container(c)) return container_call(sema, e, c, &e->list);
  diag_error(sema->cx, e->lhs->loc, "'%s' object is not callable", py_type_name(c));
  return poison(sema);
}

// ============================================================================
// inplace=True
// ============================================================================
static const char *const inplace_fns[] = {
    "relu", "relu6", "elu", "selu", "celu", "leaky_relu", "rrelu", "hardtanh", "hardsigmoid", "hardswish", "silu",
    "mish", "threshold", "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
    NULL};

bool inplace_kwarg(Sema *sema, Ast *e, const BuiltinDef *d, bool *inplace) {
  *inplace = false;
  if (e->lhs) return true;  // a method: x.relu_() is its in-place form
  bool takes = false;
  for (int i = 0; inplace_fns[i] && !takes; i++) takes = !strcmp(inplace_fns[i], d->b.name);
  if (!takes) return true;
  for (int i = 0; i < e->list.len; i++) {
    Ast *a = e->list.data[i];
    if (a->kind != AST_KWARG || strcmp(a->name, "inplace")) continue;
    const TType *t = a->ty ? a->ty : a->rhs->ty;
    if (!is_scalar(t) || t->dtype != DT_BOOL) {
      diag_error(sema->cx, a->rhs->loc, "%s(): argument 'inplace' must be bool, not %s", d->b.name, py_type_name(t));
      return false;
    }
    *inplace = t->ival != 0;
    for (int j = i; j + 1 < e->list.len; j++) e->list.data[j] = e->list.data[j + 1];
    e->list.len--;
    return true;
  }
  return true;
}

TType *inplace_result(Sema *sema, Ast *e, TType *r) {
  Ast *x = e->bargs ? e->bargs[0] : NULL;
  if (is_poison(r) || !x || !is_tensor(r)) return r;
  if (x->bi && x->bi->kind == BK_NODE && !op_is_store(x->bi->op)) return r;  // a temporary nothing else reads
  const TType *xt = x->ty;
  if (r->storage == xt->storage && view_equal(r->view, xt->view) && r->dtype == xt->dtype) return r;  // the input itself
  Ast *oop = ast_new(sema->cx, AST_CALL, e->loc);
  *oop = *e;
  oop->ty = r;
  if (!dtype_can_cast(r->dtype, xt->dtype)) {
    diag_error(sema->cx, call_loc(e), "result type %s can't be cast to the desired output type %s",
               torch_name(r->dtype), torch_name(xt->dtype));
    return poison(sema);
  }
  if (!store_writable(sema, e, x, xt)) return poison(sema);
  e->ty = NULL;
  e->attr = (NodeAttr){0};
  check_store_common(sema, e, x, oop, -1);
  return e->ty ? e->ty : poison(sema);
}

// ============================================================================
// torch._assert(condition, message)
// ============================================================================
TType *torch_assert(Sema *sema, Ast *e) {
  if (!check_args(sema, e)) return poison(sema);
  Ast *cond = NULL, *msg = NULL;
  int npos = 0;
  for (int i = 0; i < e->list.len; i++) {
    Ast *a = e->list.data[i];
    const char *n = a->kind == AST_KWARG ? a->name : npos++ == 0 ? "condition" : "message";
    if (!strcmp(n, "condition") && !cond) cond = a->kind == AST_KWARG ? a->rhs : a;
    else if (!strcmp(n, "message") && !msg) msg = a->kind == AST_KWARG ? a->rhs : a;
    else {
      diag_error(sema->cx, a->loc, "_assert() takes 2 arguments: condition and message");
      return poison(sema);
    }
  }
  if (!cond || !msg) {
    diag_error(sema->cx, call_loc(e), "_assert() missing 1 required positional argument: '%s'",
               cond ? "message" : "condition");
    return poison(sema);
  }
  Ast *node = NULL;
  if (!check_assertion(sema, cond, msg, &node)) return poison(sema);
  if (node) set_operand1(sema, e, node);
  return ty_new(sema, TY_NONE);
}
