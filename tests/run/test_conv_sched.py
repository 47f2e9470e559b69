#!/usr/bin/python3
"""tests/run/test_conv_sched.py TDSLC: convolutions in the shapes that take the CPU GEMM's
convolution schedules (ir/gemm.c), each compared with NumPy (test_conv_nd.np_conv: loops
over the taps of the zero-padded input, in f64):
  TAPS    depthwise conv1d and conv2d of more than 9 taps: no GEMM, the taps' chain in one
          elementwise kernel (kernels longer than the input, padding past half the kernel,
          strides, dilation, odd widths); a padded conv2d is ir/depthwise.c's kernel
          instead (PLANE: each channel padded in a per-thread scratch plane, no padded copy);
  DIRECT  few output rows per group (depthwise conv2d 3x3 and 3d, a channel multiplier, up to
          16 output channels) of a stride-1 or stride-2 window view: B read in place
          (stride 2: two loads, their even and odd lanes), blocks of 4 rows and a
          remainder, column blocks, a last vector that overlaps the one before (tails of
          every length), dilation, padding, a causal crop, epilogues;
  FOLDED  the output rows folded into the GEMM's columns (small spatial sizes, strides,
          dilation, groups, 1 x 1 convolutions whose windows are flat, 3-D: two dims
          folded), B packed through its table of column offsets (f32 and f64: a full
          panel by runs along the output rows, a function of the program, where no
          batch loop is left; NARROW's 3x3 cases are checked to have one), the weight's rows read
          in place where they are flat in k (else packed), with bias, residual and
          activation epilogues.
  K BLOCKS  k over channels and taps longer than a block of B's panel in L2 (K 5760):
          blocks of whole channels (the weight read in place from a block's first
          channel; halves: packed by blocks), the sums waiting in the result between
          them, grouped and strided too;
  NARROW  a last panel of fewer columns than the tile's (196 = 4 x 48 + 4) packed and
          multiplied as narrow as its whole vectors, by a second micro-kernel; a few
          columns left (49 = 48 + 1 at 7 x 7, 99 = 96 + 3) packed by columns and
          multiplied with the lanes along k (whole vectors, then the terms left); rows
          left over from the row blocks (52 = 8 x 6 + 4) multiplied in parallel by
          column panels.
Each case runs in f32, f64, f16 and bf16 (halves: B is a conversion, packed), contiguous,
and its f32 program is checked to take the schedule it is there for (--emit=kernels:
"gemm direct", a column block wider than the output's rows, " kc N" of whole channels,
or two micro-kernels), so a change of the heuristics that leaves a schedule untested
fails here. K BLOCKS and NARROW cases are compiled for --cpu=skylake-avx512 (run and
emitted alike: its tiles and L2 set their schedule, whatever the host), the others for
this host; each group (and the pools) runs as one function per dtype (one tdslc run
each), each case's schedule checked on its own program.
Pools (ir/build_conv.c): windows of at most 27 taps are a chain of maximum / add over
the taps' strided views, larger ones a reduction over the window view; both are run
(1-D to 3-D, strides, dilation, padding, ceil_mode, count_include_pad=False, NaN and
-inf in the input) against test_conv_nd.np_pool, and checked to take their form (a
padded max chain: clipped to the input dim by dim, no -inf padding made).

The sanitizer pass (oracle.test_subset) runs every Nth case and pool.

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and exits
77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import (Tally, compare_kinds, emit_text, load_outputs, require_backend, rnd, run_cleanup,  # noqa: E402
                    tdslc_run, test_subset, to_npy)
from test_conv_nd import np_conv, np_pool  # noqa: E402  (rank-generic: 1-3 spatial dims, f64)

RNG = np.random.default_rng(271)
DTYPES = ("f32", "f64", "f16", "bf16")


def relu(a):
    return np.maximum(a, 0)


def channels_first_norm(x, g, h, eps=1e-6):
    """ConvNeXt's LayerNorm(data_format="channels_first") over dim 1."""
    u = x.mean(1, keepdims=True)
    s = ((x - u) ** 2).mean(1, keepdims=True)
    return g[:, None, None] * ((x - u) / np.sqrt(s + eps)) + h[:, None, None]


# (name, {param: shape}, tdsl expression, NumPy model of the params (f64), schedule (and
# optionally the dtypes it runs in, else DTYPES):
# "direct", "folded WIDTH" (a column block wider than WIDTH, the output rows' length),
# "kc TAPS" (k blocks of whole channels of TAPS taps), "narrow" (a second, narrower
# micro-kernel for the last panel, of whole vectors), "by columns" (that micro-kernel's
# lanes run along k: a last panel of a few columns), "runs 2" (a full panel packed by
# stride-2 runs, by vectors), "clipped" (the zero padding packed by runs clipped to the
# input: no kernel but the GEMM's, no padded copy), "one kernel" (the padding copied into
# the GEMM kernel's own temp), "residual" (the in-place adds and what follows them in the
# GEMM's epilogue: no kernel but the GEMM's), "cat stored" (one padded dim outside a 2-D
# conv: the pad's cat a kernel of its own, as one copy in the GEMM kernel would be, but not
# live beside the GEMM's input and output), "plane" (ir/depthwise.c's depthwise_conv kernel:
# no zeros, no padded copy) or None)
CASES = [
    ("depthwise conv1d, causal (Mamba), relu", {"x": (1, 40, 131), "w": (40, 1, 4), "b": (40,)},
     "F.relu(F.conv1d(x, w, b, padding=3, groups=40)[:, :, :131])",
     lambda x, w, b: relu(np_conv(x, w, b, padding=3, groups=40)[:, :, :131]), "taps"),
    ("depthwise conv1d, dilation 2", {"x": (2, 12, 50), "w": (12, 1, 3)},
     "F.conv1d(x, w, None, 1, 4, 2, 12)", lambda x, w: np_conv(x, w, None, 1, 4, 2, 12), "taps"),
    ("depthwise conv1d, kernel 4 longer than the input (3), bias", {"x": (1, 6, 3), "w": (6, 1, 4), "b": (6,)},
     "F.conv1d(x, w, b, padding=3, groups=6)", lambda x, w, b: np_conv(x, w, b, padding=3, groups=6), "taps"),
    ("depthwise conv1d, padding 5 > kernel 3, stride 2, 23 columns", {"x": (2, 4, 23), "w": (4, 1, 3)},
     "F.conv1d(x, w, stride=2, padding=5, groups=4)",
     lambda x, w: np_conv(x, w, stride=2, padding=5, groups=4), "taps"),
    ("depthwise conv2d 7x7 (ConvNeXt), kernel larger than the input, bias", {"x": (2, 6, 5, 4), "w": (6, 1, 7, 7),
                                                                             "b": (6,)},
     "F.conv2d(x, w, b, padding=3, groups=6)", lambda x, w, b: np_conv(x, w, b, padding=3, groups=6), "plane"),
    ("depthwise conv2d 7x7 padding 3 (ConvNeXt's) at odd 13 x 11, bias", {"x": (2, 5, 13, 11), "w": (5, 1, 7, 7),
                                                                           "b": (5,)},
     "F.conv2d(x, w, b, padding=3, groups=5)", lambda x, w, b: np_conv(x, w, b, padding=3, groups=5), "plane"),
    ("depthwise conv2d 5x5, padding 4, stride 2, dilation (1, 2), 19 columns", {"x": (1, 5, 9, 19), "w": (5, 1, 5, 5)},
     "F.conv2d(x, w, stride=2, padding=4, dilation=(1, 2), groups=5)",
     lambda x, w: np_conv(x, w, stride=2, padding=4, dilation=(1, 2), groups=5), "plane"),
    # the taps' borders (ir/build_conv.c's depthwise): every output of these reads the padding
    ("depthwise conv2d 7x7 pad 3 stride 2 at 13x11, bias", {"x": (1, 4, 13, 11), "w": (4, 1, 7, 7), "b": (4,)},
     "F.conv2d(x, w, b, stride=2, padding=3, groups=4)",
     lambda x, w, b: np_conv(x, w, b, stride=2, padding=3, groups=4), "plane"),
    ("depthwise conv2d 7x7 dilation 2 pad 6 at 15x9, 3 channels, relu", {"x": (1, 3, 15, 9), "w": (3, 1, 7, 7)},
     "F.relu(F.conv2d(x, w, padding=6, dilation=2, groups=3))",
     lambda x, w: relu(np_conv(x, w, padding=6, dilation=2, groups=3)), "plane"),
    ("depthwise conv1d k 7 pad 3 stride 2 dilation 2 at 29, 3 channels, bias", {"x": (2, 3, 29), "w": (3, 1, 7),
                                                                               "b": (3,)},
     "F.conv1d(x, w, b, stride=2, padding=3, dilation=2, groups=3)",
     lambda x, w, b: np_conv(x, w, b, stride=2, padding=3, dilation=2, groups=3), "taps"),
    ("depthwise conv2d 4x4 'same' (one more zero bottom and right), unbatched", {"x": (5, 11, 13), "w": (5, 1, 4, 4)},
     "F.conv2d(x, w, padding='same', groups=5)",
     lambda x, w: np_conv(np.pad(x[None], ((0, 0), (0, 0), (1, 2), (1, 2))), w, groups=5)[0], "plane"),
    ("conv2d 7x7 pad 3 of one channel (groups 1) at 9x13", {"x": (2, 1, 9, 13), "w": (1, 1, 7, 7)},
     "F.conv2d(x, w, padding=3)", lambda x, w: np_conv(x, w, padding=3), None),
    ("conv1d, channel multiplier 3 (3 rows)", {"x": (2, 4, 37), "w": (12, 1, 5), "b": (12,)},
     "F.conv1d(x, w, b, groups=4)", lambda x, w, b: np_conv(x, w, b, groups=4), "direct"),
    ("conv1d, 7 output channels (4 + 3 rows)", {"x": (2, 5, 70), "w": (7, 5, 3)},
     "F.conv1d(x, w, padding=1)", lambda x, w: np_conv(x, w, padding=1), "direct"),
    ("conv1d, 16 output channels, exact vectors", {"x": (1, 3, 66), "w": (16, 3, 3)},
     "F.conv1d(x, w)", lambda x, w: np_conv(x, w), "direct"),
    ("conv2d, 3 -> 16 channels, dilation, relu", {"x": (2, 3, 20, 37), "w": (16, 3, 3, 3), "b": (16,)},
     "F.relu(F.conv2d(x, w, b, padding=(1, 2), dilation=(1, 2)))",
     lambda x, w, b: relu(np_conv(x, w, b, padding=(1, 2), dilation=(1, 2))), "direct"),
    ("depthwise conv2d 3x3", {"x": (1, 8, 17, 40), "w": (8, 1, 3, 3)},
     "F.conv2d(x, w, padding=1, groups=8)", lambda x, w: np_conv(x, w, padding=1, groups=8), "direct"),
    ("depthwise conv2d 3x3 stride 2, relu", {"x": (1, 8, 17, 40), "w": (8, 1, 3, 3), "b": (8,)},
     "F.relu(F.conv2d(x, w, b, stride=2, padding=1, groups=8))",
     lambda x, w, b: relu(np_conv(x, w, b, stride=2, padding=1, groups=8)), "direct"),
    ("conv2d stride 2, channel multiplier 3, dilation 2 (19 columns)", {"x": (2, 4, 15, 37), "w": (12, 1, 3, 3)},
     "F.conv2d(x, w, stride=2, padding=2, dilation=2, groups=4)",
     lambda x, w: np_conv(x, w, stride=2, padding=2, dilation=2, groups=4), "direct"),
    ("conv1d k 4 stride 2, 5 -> 7 channels (4 + 3 rows)", {"x": (1, 5, 83), "w": (7, 5, 4)},
     "F.conv1d(x, w, stride=2, padding=1)", lambda x, w: np_conv(x, w, stride=2, padding=1), "direct"),
    ("depthwise conv2d stride 3 (packed, not direct)", {"x": (1, 6, 20, 50), "w": (6, 1, 3, 3)},
     "F.conv2d(x, w, stride=3, padding=1, groups=6)", lambda x, w: np_conv(x, w, stride=3, padding=1, groups=6), None),
    ("depthwise conv3d 3x3x3", {"x": (1, 4, 5, 6, 33), "w": (4, 1, 3, 3, 3), "b": (4,)},
     "F.conv3d(x, w, b, padding=1, groups=4)", lambda x, w, b: np_conv(x, w, b, padding=1, groups=4), "direct"),
    ("conv2d 7x7, 24 -> 20 channels, residual, relu", {"x": (1, 24, 7, 7), "w": (20, 24, 3, 3), "b": (20,),
                                                      "r": (1, 20, 7, 7)},
     "F.relu(F.conv2d(x, w, b, padding=1) * 0.5 + r)",
     lambda x, w, b, r: relu(np_conv(x, w, b, padding=1) * 0.5 + r), "folded 7 in place"),
    ("conv2d stride 2, dilation 2, groups 2", {"x": (2, 8, 15, 13), "w": (20, 4, 3, 3)},
     "F.conv2d(x, w, stride=2, padding=2, dilation=2, groups=2)",
     lambda x, w: np_conv(x, w, stride=2, padding=2, dilation=2, groups=2), "folded 6"),
    ("conv2d 1x1 (flat windows)", {"x": (1, 32, 9, 9), "w": (24, 32, 1, 1), "b": (24,)},
     "F.conv2d(x, w, b)", lambda x, w, b: np_conv(x, w, b), "folded 9 in place"),
    ("conv2d of a transposed weight (packed)", {"x": (1, 16, 7, 9), "w": (12, 16, 3, 3)},
     "F.conv2d(x, w.transpose(2, 3).contiguous().transpose(2, 3), padding=(0, 1))",
     lambda x, w: np_conv(x, w, padding=(0, 1)), "folded 9"),
    # kernel = stride, no padding (patchify: ConvNeXt's downsample, ViT's patch embedding) of a
    # channels-first layer norm (ConvNeXt's LayerNorm), odd sizes: the last row and column dropped
    ("conv2d 2x2 stride 2 (patchify) of a channels-first layer norm, 11 x 15, bias",
     {"x": (2, 7, 11, 15), "g": (7,), "h": (7,), "w": (12, 7, 2, 2), "b": (12,)},
     "F.conv2d(g[:, None, None] * ((x - x.mean(1, keepdim=True)) / torch.sqrt((x - x.mean(1, keepdim=True))"
     ".pow(2).mean(1, keepdim=True) + 1e-6)) + h[:, None, None], w, b, stride=2)",
     lambda x, g, h, w, b: np_conv(channels_first_norm(x, g, h), w, b, stride=2), "folded 7",
     ("f32", "f64")),  # (halves: each op of the norm rounded, as PyTorch's; the model's is f64)
    ("conv2d 1x1 stride 2 (downsample)", {"x": (1, 32, 14, 14), "w": (40, 32, 1, 1)},
     "F.conv2d(x, w, stride=2)", lambda x, w: np_conv(x, w, stride=2), "folded 7"),
    ("conv2d 7x7 stride 2 stem, 3 -> 20 channels", {"x": (1, 3, 23, 21), "w": (20, 3, 7, 7)},
     "F.conv2d(x, w, stride=2, padding=3)", lambda x, w: np_conv(x, w, stride=2, padding=3), "folded 11"),
    ("conv2d 3x3 stride 2 to 19x21 (rows of whole vectors and 5 more: stride-2 runs)",
     {"x": (1, 6, 39, 43), "w": (24, 6, 3, 3), "b": (24,)},
     "F.conv2d(x, w, b, stride=2)", lambda x, w, b: np_conv(x, w, b, stride=2), "runs 2"),
    # the zero padding packed with the windows (runs clipped to the input: every edge)
    ("conv2d 3x3 pad 1 at 9x37 (padding clipped)", {"x": (1, 5, 9, 37), "w": (24, 5, 3, 3)},
     "F.conv2d(x, w, padding=1)", lambda x, w: np_conv(x, w, padding=1), "clipped"),
    ("conv2d 3x3 stride 2 to 19x21, pad 1 (padding clipped)", {"x": (1, 6, 38, 42), "w": (24, 6, 3, 3), "b": (24,)},
     "F.conv2d(x, w, b, stride=2, padding=1)", lambda x, w, b: np_conv(x, w, b, stride=2, padding=1), "clipped"),
    ("conv2d 5x3 stride 2, odd sizes, padding (2, 1) (padding clipped)", {"x": (1, 3, 17, 23), "w": (8, 3, 5, 3)},
     "F.conv2d(x, w, stride=2, padding=(2, 1))", lambda x, w: np_conv(x, w, stride=2, padding=(2, 1)), "clipped"),
    ("conv2d 4x4 'same': one more zero bottom and right (padding clipped)", {"x": (1, 4, 11, 13), "w": (12, 4, 4, 4)},
     "F.conv2d(x, w, padding='same')", lambda x, w: np_conv(np.pad(x, ((0, 0), (0, 0), (1, 2), (1, 2))), w), "clipped"),
    ("conv2d 3x3 dilation 2, pad 3 (padding clipped)", {"x": (1, 4, 12, 19), "w": (24, 4, 3, 3)},
     "F.conv2d(x, w, padding=3, dilation=2)", lambda x, w: np_conv(x, w, padding=3, dilation=2), "clipped"),
    ("conv2d 3x3 pad 4 (whole windows of zeros) (padding clipped)", {"x": (1, 2, 6, 9), "w": (8, 2, 3, 3)},
     "F.conv2d(x, w, padding=4)", lambda x, w: np_conv(x, w, padding=4), "clipped"),
    ("conv2d 3x3 pad 1, groups 2 (padding copied once)", {"x": (1, 8, 9, 13), "w": (12, 4, 3, 3)},
     "F.conv2d(x, w, padding=1, groups=2)", lambda x, w: np_conv(x, w, padding=1, groups=2), "one kernel"),
    ("conv2d 3x3 pad 1, 2 images (padding copied once)", {"x": (2, 4, 9, 13), "w": (12, 4, 3, 3)},
     "F.conv2d(x, w, padding=1)", lambda x, w: np_conv(x, w, padding=1), "one kernel"),
    ("conv1d k 5, padding 2 (the padding's one cat stored)", {"x": (2, 4, 30), "w": (6, 4, 5)},
     "F.conv1d(x, w, padding=2)", lambda x, w: np_conv(x, w, padding=2), "cat stored"),
    # in-place adds into the result (ResNet's out += identity) and what reads it after: the epilogue
    ("conv2d 3x3 pad 1, bias, .mul_(0.5).add_(r), relu (residual epilogue)",
     {"x": (1, 16, 9, 11), "w": (24, 16, 3, 3), "b": (24,), "r": (1, 24, 9, 11)},
     "F.relu(F.conv2d(x, w, b, padding=1).mul_(0.5).add_(r))",
     lambda x, w, b, r: relu(np_conv(x, w, b, padding=1) * 0.5 + r), "residual"),
    ("conv2d 1x1 stride 2, .add_(r), relu, 2 images (residual epilogue)",
     {"x": (2, 32, 14, 14), "w": (40, 32, 1, 1), "r": (2, 40, 7, 7)},
     "F.relu(F.conv2d(x, w, stride=2).add_(r))", lambda x, w, r: relu(np_conv(x, w, stride=2) + r), "residual"),
    ("conv3d, two dims folded", {"x": (1, 6, 4, 5, 6), "w": (18, 6, 3, 3, 3)},
     "F.conv3d(x, w, padding=1)", lambda x, w: np_conv(x, w, padding=1), "folded 6"),
    ("conv2d 3x3, 640 channels (K 5760 in blocks), bias, relu", {"x": (1, 640, 7, 7), "w": (20, 640, 3, 3),
                                                                  "b": (20,)},
     "F.relu(F.conv2d(x, w, b, padding=1))", lambda x, w, b: relu(np_conv(x, w, b, padding=1)), "kc 9"),
    ("conv2d 3x3 stride 2, dilation 2, groups 2 (K 4608 in blocks)", {"x": (1, 1024, 9, 8), "w": (40, 512, 3, 3)},
     "F.conv2d(x, w, stride=2, padding=2, dilation=2, groups=2)",
     lambda x, w: np_conv(x, w, stride=2, padding=2, dilation=2, groups=2), "kc 9"),
    ("conv1d k 5, 1200 channels (K 6000 in blocks), dilation 3", {"x": (1, 1200, 40), "w": (24, 1200, 5)},
     "F.conv1d(x, w, padding=4, dilation=3)", lambda x, w: np_conv(x, w, padding=4, dilation=3), "kc 5"),
    ("conv2d 3x3 at 14x14 (196 columns: a narrow last panel), residual", {"x": (1, 24, 14, 14),
                                                                        "w": (32, 24, 3, 3), "r": (1, 32, 14, 14)},
     "F.conv2d(x, w, padding=1) + r", lambda x, w, r: np_conv(x, w, padding=1) + r, "narrow"),
    # 52 rows in blocks of 6 leave 4: their tiles a parallel loop over the column panels
    ("conv2d 3x3 at 14x14, 52 channels (rows left over, by column panels), bias, relu",
     {"x": (1, 64, 14, 14), "w": (52, 64, 3, 3), "b": (52,)},
     "F.relu(F.conv2d(x, w, b, padding=1))", lambda x, w, b: relu(np_conv(x, w, b, padding=1)), "by columns"),
    ("conv2d 1x1 of 2 images, 99 columns (a last panel of 3 columns), K 19", {"x": (2, 19, 9, 11), "w": (24, 19, 1, 1)},
     "F.conv2d(x, w)", lambda x, w: np_conv(x, w), "by columns"),
    ("conv2d 3x3 stride 2 to 7x7 (49 columns: one left), K 90, bias", {"x": (1, 10, 13, 13), "w": (24, 10, 3, 3),
                                                                      "b": (24,)},
     "F.conv2d(x, w, b, stride=2, padding=1)", lambda x, w, b: np_conv(x, w, b, stride=2, padding=1), "by columns"),
    ("conv2d 1x1 at 7x7, 2 images, groups 2 (one column left)", {"x": (2, 40, 7, 7), "w": (36, 20, 1, 1)},
     "F.conv2d(x, w, groups=2)", lambda x, w: np_conv(x, w, groups=2), "by columns"),
    ("conv2d 5x5 stride 2, pad 2, groups 3, 144 columns (narrow)", {"x": (1, 12, 24, 23), "w": (30, 4, 5, 5),
                                                                   "b": (30,)},
     "F.conv2d(x, w, b, stride=2, padding=2, groups=3)",
     lambda x, w, b: np_conv(x, w, b, stride=2, padding=2, groups=3), "narrow"),
]

# the cases whose schedule depends on the tile and the L2: compiled for this CPU
FIXED_CPU = ["--cpu=skylake-avx512"]


def cpu_args(sched):
    return FIXED_CPU if sched and sched.split()[0] in ("kc", "narrow", "by") else []


# (name, x's shape, tdsl expression, NumPy model, the op its kernel computes with:
# "maximum"/"add" (a chain over the taps) or "amax"/"sum" (a reduction))
POOLS = [
    ("max_pool2d 3x3 stride 2 pad 1 (chain)", (2, 3, 15, 17), "F.max_pool2d(x, 3, 2, 1)",
     lambda x: np_pool(x, 2, 3, 2, 1)[0], "maximum clipped"),
    ("max_pool2d 5x5 stride 1 pad 2 (two clipped outputs at each edge)", (2, 3, 9, 11), "F.max_pool2d(x, 5, 1, 2)",
     lambda x: np_pool(x, 2, 5, 1, 2)[0], "maximum clipped"),
    ("max_pool2d 3x2 stride (2, 3) pad 1 dilation (2, 1) ceil_mode", (1, 2, 12, 13),
     "torch.max_pool2d(x, (3, 2), (2, 3), 1, (2, 1), True)",
     lambda x: np_pool(x, 2, (3, 2), (2, 3), 1, (2, 1), True)[0], "maximum clipped"),
    ("max_pool1d k 4 stride 1 pad 2 (the right edge's window shorter)", (2, 3, 10), "F.max_pool1d(x, 4, 1, 2)",
     lambda x: np_pool(x, 1, 4, 1, 2)[0], "maximum clipped"),
    ("max_pool3d 3x3x3 stride 2 pad 1", (2, 2, 7, 6, 5), "F.max_pool3d(x, 3, 2, 1)",
     lambda x: np_pool(x, 3, 3, 2, 1)[0], "maximum clipped"),
    ("max_pool2d 7x7 pad 3 (reduction)", (1, 2, 9, 10), "F.max_pool2d(x, 7, 1, 3)",
     lambda x: np_pool(x, 2, 7, 1, 3)[0], "amax"),
    ("max_pool1d k 5 dilation 2 ceil_mode", (2, 3, 23), "F.max_pool1d(x, 5, 3, 2, 2, True)",
     lambda x: np_pool(x, 1, 5, 3, 2, 2, True)[0], "maximum clipped"),
    ("max_pool3d 2x2x2", (1, 2, 5, 6, 7), "F.max_pool3d(x, 2)", lambda x: np_pool(x, 3, 2)[0], "maximum"),
    ("avg_pool2d 3x3 stride 2 pad 1, no pad counted, ceil", (2, 3, 14, 17),
     "F.avg_pool2d(x, 3, 2, 1, True, False)", lambda x: np_pool(x, 2, 3, 2, 1, 1, True, "avg", False), "add"),
    ("avg_pool2d 6x5 (reduction)", (1, 2, 12, 11), "F.avg_pool2d(x, (6, 5), 2)",
     lambda x: np_pool(x, 2, (6, 5), 2, kind="avg"), "sum"),
    ("avg_pool3d 3x3x3 pad 1 (27 taps)", (1, 2, 5, 4, 6), "F.avg_pool3d(x, 3, 1, 1)",
     lambda x: np_pool(x, 3, 3, 1, 1, kind="avg"), "add"),
]


def check_pool_form(t, tdslc, name, src, form):
    """form: the op the pool computes with; "maximum clipped": a padded max pool of few
    taps, max over the taps inside the input, one dim after another, no -inf padding made."""
    p = emit_text(tdslc, src, "kernels")
    ops = " ".join(re.findall(r"^  ops: (.*?)  lines", p.stdout, re.M)).split()
    errs = [] if p.returncode == 0 else [f"exit {p.returncode}: {p.stderr[:400]}"]
    op = form.split()[0]
    other = {"maximum": "amax", "add": "sum", "amax": "maximum", "sum": "add"}[op]
    if not errs and (op not in ops or other in ops):
        errs.append(f"kernel ops {ops}: want {op}, not {other}")
    elif not errs and form.endswith("clipped") and "full" in ops:
        errs.append(f"kernel ops {ops}: the input padded with -inf, want the windows clipped to it")
    t.report(f"{name}: computes with {form}", errs, src)


def shape_of(s):
    return ", ".join(str(d) for d in s)


def source(params, expr, dt, ret):
    decl = ", ".join(f"{p}: {dt}[{shape_of(s)}]" for p, s in params.items())
    return f"fn f({decl}) -> {dt}[{shape_of(ret)}] {{\n    return {expr}\n}}\n"


def check_schedule(t, tdslc, name, src, want):
    """The f32 program's matmul kernel takes the schedule `want` ("direct", "folded W",
    "kc TAPS", "narrow"), or none ("taps": ir/build_conv.c's depthwise chain)."""
    p = emit_text(tdslc, src, "kernels", cpu_args(want))
    scheds = re.findall(r"^  schedule: (gemm .*)$", p.stdout, re.M)
    errs = [] if p.returncode == 0 else [f"exit {p.returncode}: {p.stderr[:400]}"]
    if not errs and want == "taps":  # (depthwise: the taps' chain in an elementwise kernel, no GEMM)
        if scheds or not re.search(r"^  ops: .*mul add", p.stdout, re.M):
            errs.append(f"GEMM kernels {scheds}, want the taps' elementwise chain")
    elif not errs and want == "plane":  # (ir/depthwise.c: no padded copy, no zeros, no store kernel)
        ops = re.findall(r"^  ops: (.*?)  lines", p.stdout, re.M)
        if scheds or "depthwise_conv" not in ops or any(o.split()[0] in ("full", "store") for o in ops):
            errs.append(f"kernels {ops}, want depthwise_conv reading its input in place")
    elif not errs and len(scheds) != 1:
        errs.append(f"{len(scheds)} GEMM kernels: {scheds}")
    elif not errs and want == "direct" and not scheds[0].startswith("gemm direct"):
        errs.append(f"schedule {scheds[0]!r}, want gemm direct")
    elif not errs and want.startswith("folded"):
        nc = re.search(r" nc (\d+)", scheds[0])
        if not nc or int(nc.group(1)) <= int(want.split()[1]):
            errs.append(f"schedule {scheds[0]!r}, want a column block wider than the rows ({want})")
        elif want.endswith("in place") and "rows in place" not in scheds[0]:
            errs.append(f"schedule {scheds[0]!r}, want the weight's rows read in place")
    elif not errs and want.startswith("kc"):
        kc = re.search(r" kc (\d+)", scheds[0])
        if not kc or int(kc.group(1)) % int(want.split()[1]):
            errs.append(f"schedule {scheds[0]!r}, want k blocks of whole channels ({want})")
    elif not errs and want in ("clipped", "one kernel", "residual"):  # (the padding, the stores: no kernels of their own)
        nk = len(re.findall(r"^kernel k\d+", p.stdout, re.M))
        if nk != 1:
            errs.append(f"{nk} kernels, want the GEMM's alone (the zero padding packed with the windows)")
        elif want == "clipped" and re.search(r"\.padded\b", p.stdout):
            errs.append("the padded input copied, want its runs clipped")
        elif want == "one kernel" and not re.search(r"\.padded\b", p.stdout):
            errs.append("no padded copy, want one")
    elif not errs and want == "cat stored":
        nk = len(re.findall(r"^kernel k\d+", p.stdout, re.M))
        if nk != 2 or re.search(r"\.padded\b", p.stdout):
            errs.append(f"{nk} kernels, want the padding's cat and the GEMM, no padded copy in the GEMM")
    elif not errs and want == "runs 2":  # (a full panel's runs copied by vectors: two loads, one shuffle)
        if not re.search(r"^function f\d+\n  args: .*i64\[(.*\n)*?.*shuffle\(", p.stdout, re.M):
            errs.append("no function packing B's stride-2 runs by vectors")
    elif not errs and want in ("narrow", "by columns"):
        # (the micro-kernels: not the functions packing B's runs, whose third pointer
        # is the i64 table of k offsets)
        fns = re.findall(r"^function f\d+\n  args: (?!.*i64\[)", p.stdout, re.M)
        dot = re.search(r"^  let l\S+: f\d+ = \(.*\.0 \+ ", p.stdout, re.M)  # (its lanes summed after the k loop)
        runs = re.search(r"^function f\d+\n  args: .*i64\[", p.stdout, re.M)
        if len(fns) != 2:
            errs.append(f"{len(fns)} micro-kernels, want 2 (the last panel's narrower)")
        elif not runs and name.startswith("conv2d 3x3"):  # (one image, no groups: no batch loop)
            errs.append("no function packing B's runs (the full panels)")
        elif (want == "by columns") != bool(dot):
            errs.append("the last panel's micro-kernel " + ("does not run" if not dot else "runs") + " its lanes along k")
    t.report(f"{name}: takes {want}", errs, src)


def run_case_outputs(tdslc, src, inputs, args):
    p, _, out_dir = tdslc_run(tdslc, src, ["--fn", "f"] + args, inputs=inputs, json_out=False)
    try:
        return p, load_outputs(out_dir) if p.returncode == 0 else []
    finally:
        run_cleanup(out_dir)


def bundle_source(cases, dt, rets):
    """One function of every case (parameters c<i>_<name>, one result each): a single
    tdslc run per dtype."""
    decl, body = [], []
    for i, (shapes, expr) in enumerate(cases):
        decl += [f"c{i}_{p}: {dt}[{shape_of(s)}]" for p, s in shapes.items()]
        e = re.sub(r"\b(" + "|".join(shapes) + r")\b", lambda m: f"c{i}_{m.group(1)}", expr)
        body.append(f"    r{i} = {e}")
    ret = ", ".join(f"{dt}[{shape_of(r)}]" for r in rets)
    return (f"fn f({', '.join(decl)}) -> ({ret}) {{\n" + "\n".join(body) +
            f"\n    return {', '.join(f'r{i}' for i in range(len(cases)))}\n}}\n")


def run_bundle(t, tdslc, cases, bases, args, check):
    """cases (name, shapes, expr, model, then what check takes) in one tdslc run per dtype,
    from the inputs bases; check(name, f32 source, case) for each f32 case."""
    all_cases, all_bases = cases, bases
    for dt in DTYPES:
        keep = [i for i, c in enumerate(all_cases) if dt in (c[5] if len(c) > 5 else DTYPES)]
        cases, bases = [all_cases[i] for i in keep], [all_bases[i] for i in keep]
        vals = [{p: rnd(a, dt).astype(np.float64) for p, a in b.items()} for b in bases]
        wants = [c[3](*v.values()) for c, v in zip(cases, vals)]
        wants = [rnd(w, dt).astype(np.float64) if dt != "f64" else w for w in wants]
        src = bundle_source([(c[1], c[2]) for c in cases], dt, [w.shape for w in wants])
        inputs = {f"c{i}_{n}": to_npy(a, dt) for i, v in enumerate(vals) for n, a in v.items()}
        p, outs = run_case_outputs(tdslc, src, inputs, args)
        if p.returncode != 0 or len(outs) != len(wants):
            t.report(f"the bundled cases {dt}", compare_kinds(p, outs, wants, [dt] * len(wants)), src)
            continue
        for c, got, want in zip(cases, outs, wants):
            single = source(c[1], c[2], dt, want.shape)
            t.report(f"{c[0]} {dt}", compare_kinds(p, [got], [want], [dt]), single)
            if dt == "f32":
                check(c[0], single, c)


def main():
    tdslc = sys.argv[1]
    require_backend(tdslc)
    t = Tally()
    # every group in one run per dtype: the cases whose schedule depends on the CPU on a
    # fixed one (their long sums of small terms, so that f32's rounding stays within its
    # tolerance), the others on this host's, then the pools
    # (the sanitizer pass, TDSL_TEST_SUBSET=k: every kth case and pool, the rest having run in the plain pass)
    k = test_subset()
    fixed = [c for c in CASES[::k] if cpu_args(c[4])]
    host = [c for c in CASES[::k] if not cpu_args(c[4])]
    bases = [{p: RNG.uniform(-1, 1, s) for p, s in c[1].items()} for c in host]
    run_bundle(t, tdslc, host, bases, [],
               lambda name, src, c: c[4] and check_schedule(t, tdslc, name, src, c[4]))
    bases = [{p: RNG.uniform(-0.25, 0.25, s) for p, s in c[1].items()} for c in fixed]
    run_bundle(t, tdslc, fixed, bases, FIXED_CPU, lambda name, src, c: check_schedule(t, tdslc, name, src, c[4]))
    pools = [(name, {"x": shape}, expr, model, op) for name, shape, expr, model, op in POOLS[::k]]
    bases = []
    for _, shape, _, _, op in POOLS[::k]:
        base = RNG.uniform(-1, 1, shape)
        if op.split()[0] in ("maximum", "amax"):  # NaN propagates; -inf is a value like any other
            base.flat[5] = np.nan
            base.flat[-3] = -np.inf
        bases.append({"x": base})
    run_bundle(t, tdslc, pools, bases, [], lambda name, src, c: check_pool_form(t, tdslc, name, src, c[4]))
    return t.summary()


if __name__ == "__main__":
    sys.exit(main())
