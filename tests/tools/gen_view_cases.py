#!/usr/bin/python3
# tests/tools/gen_view_cases.py: builds tests/unit/view_cases.inc, the table of view-op
# chains that tests/unit/test_view.c replays with the view/view.h functions.
#
# Each case starts from torch.empty(shape) (contiguous, storage of exactly numel elements,
# which is also the storage as_strided sees), applies a short chain of view ops and
# records what PyTorch 1.13 reports: shape, stride(), storage_offset(), is_contiguous(),
# or the step at which PyTorch raised (view not expressible or invalid, reshape that
# had to copy, expand size mismatch, as_strided out of bounds / negative stride).
# flip is the one exception: PyTorch copies, so its expected value is computed here
# (stride negated, offset moved to the last element along the dim unless that dim has
# size 0, contiguity by PyTorch's rule) and a flip may only end a chain.
#
# Run with the interpreter that has torch 1.13: /usr/bin/python3 tests/tools/gen_view_cases.py
import os
import random
import sys

import torch

NONE = None
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "unit", "view_cases.inc")
MAX_DIMS = 8


# --- applying one step in PyTorch ----------------------------------------------------

def apply(root, t, step):
    """Returns the new tensor; raises on PyTorch error."""
    op, *a = step
    if op == "view":
        return t.view(*a[0]) if a[0] else t.view(())
    if op == "reshape":  # only a reshape that stays a view of the root is a success
        r = t.reshape(*a[0]) if a[0] else t.reshape(())
        if not (r is root or r._base is root):
            raise RuntimeError("reshape copied")
        v = t.view(*a[0]) if a[0] else t.view(())
        assert (v.shape, v.stride(), v.storage_offset()) == (r.shape, r.stride(), r.storage_offset())
        return r
    if op == "transpose":
        return t.transpose(a[0], a[1])
    if op == "t":
        return t.t()
    if op == "T":
        return t.permute(*reversed(range(t.dim())))  # what x.T means (no warning)
    if op == "permute":
        return t.permute(*a[0]) if a[0] else t.permute(())
    if op == "unsqueeze":
        return t.unsqueeze(a[0])
    if op == "squeeze_all":
        return t.squeeze()
    if op == "squeeze":
        return t.squeeze(a[0])
    if op == "expand":
        return t.expand(*a[0]) if a[0] else t.expand(())
    if op == "slice":
        dim, start, stop, step_ = a
        return t[(slice(None),) * dim + (slice(start, stop, step_),)]
    if op == "select":
        return t.select(a[0], a[1])
    if op == "index":  # x[i]
        return t[a[0]]
    if op == "narrow":
        return t.narrow(a[0], a[1], a[2])
    if op == "diagonal":
        return t.diagonal(a[0], a[1], a[2])
    if op == "as_strided":
        size, stride, off = a
        return t.as_strided(size, stride) if off is None else t.as_strided(size, stride, off)
    raise ValueError(op)


FAILABLE = {"view", "reshape", "expand", "as_strided"}


def contiguous_rule(shape, strides):
    if 0 in shape:
        return True
    z = 1
    for n, s in reversed(list(zip(shape, strides))):
        if n != 1:
            if s != z:
                return False
            z *= n
    return True


def flip_by_hand(shape, strides, offset, dims):
    strides = list(strides)
    for d in dims:
        d %= len(shape)
        if shape[d] > 0:
            offset += (shape[d] - 1) * strides[d]
        strides[d] = -strides[d]
    return tuple(strides), offset


def run_case(shape, steps):
    """-> (fail_step, shape, strides, offset, contiguous)"""
    root = torch.empty(shape)
    t = root
    for k, step in enumerate(steps):
        if step[0] == "flip":
            assert k == len(steps) - 1, "flip must end a chain (PyTorch copies)"
            strides, off = flip_by_hand(t.shape, t.stride(), t.storage_offset(), step[1])
            return (-1, tuple(t.shape), strides, off, contiguous_rule(tuple(t.shape), strides))
        try:
            t = apply(root, t, step)
        except (RuntimeError, IndexError) as e:
            if step[0] not in FAILABLE:
                raise AssertionError(f"{shape} {steps}: unexpected failure at {step}: {e}")
            return (k, (), (), 0, False)
    return (-1, tuple(t.shape), tuple(t.stride()), t.storage_offset(), t.is_contiguous())


# --- hand-picked cases ---------------------------------------------------------------

HAND = [
    # view: merges, splits, -1, size-1 dims, zero numel, failures after transpose
    ((2, 3, 4), [("view", [6, 4])]),
    ((2, 3, 4), [("view", [24])]),
    ((2, 3, 4), [("view", [-1])]),
    ((2, 3, 4), [("view", [2, -1])]),
    ((2, 3, 4), [("view", [-1, 3, 2, 2])]),
    ((2, 3, 4), [("view", [-1, -1])]),
    ((2, 3, 4), [("view", [5, -1])]),
    ((2, 3, 4), [("view", [1, 2, 1, 12, 1])]),
    ((2, 3, 4), [("transpose", 0, 1), ("view", [6, 4])]),
    ((2, 3, 4), [("transpose", 1, 2), ("view", [6, 4])]),
    ((2, 3, 4), [("transpose", 1, 2), ("view", [2, 12])]),
    ((2, 3, 4), [("transpose", 0, 1), ("view", [3, 2, 2, 2])]),
    ((2, 3, 4), [("transpose", 0, 1), ("view", [3, 8])]),
    ((3, 4), [("t",), ("view", [12])]),
    ((3, 4), [("t",), ("view", [4, 3, 1])]),
    ((3, 4), [("t",), ("view", [2, 2, 3])]),
    ((3, 4), [("t",), ("view", [4, 1, 3])]),
    ((3, 4), [("t",), ("view", [-1])]),
    ((3, 4), [("slice", 1, 0, NONE, 2), ("view", [6])]),
    ((3, 4), [("slice", 1, 0, NONE, 2), ("view", [3, 2, 1])]),
    ((3, 4), [("slice", 0, 1, NONE, 1), ("view", [8])]),
    ((3, 1, 4), [("transpose", 0, 1), ("view", [12])]),
    ((3, 1, 4), [("transpose", 0, 2), ("view", [4, 3])]),
    ((4, 1, 1, 3), [("view", [2, 2, 3])]),
    ((1,), [("view", [])]),
    ((), [("view", [1, 1])]),
    ((), [("view", [])]),
    ((), [("view", [-1])]),
    ((0, 3), [("view", [-1, 3])]),
    ((0, 3), [("view", [3, 0])]),
    ((0, 3), [("view", [0, -1])]),
    ((0, 3), [("view", [-1])]),
    ((0, 3), [("transpose", 0, 1), ("view", [3, 0])]),
    ((0, 3), [("transpose", 0, 1), ("view", [0, 3])]),
    ((2, 0, 3), [("view", [0, 2, 3, 1])]),
    ((2, 0, 3), [("view", [2, 0, 3])]),
    ((2, 3), [("expand", [4, 2, 3]), ("view", [8, 3])]),
    ((2, 3), [("expand", [4, 2, 3]), ("view", [4, 6])]),
    ((3, 1), [("expand", [3, 4]), ("view", [12])]),
    ((3, 1), [("expand", [3, 4]), ("view", [3, 2, 2])]),
    # reshape: view when possible, else a copy
    ((2, 3, 4), [("transpose", 0, 1), ("reshape", [6, 4])]),
    ((2, 3, 4), [("transpose", 0, 1), ("reshape", [3, 8])]),
    ((3, 4), [("t",), ("reshape", [12])]),
    ((3, 4), [("reshape", [2, 6])]),
    # transpose / t / T / permute
    ((3, 4), [("t",)]),
    ((4,), [("t",)]),
    ((), [("t",)]),
    ((2, 3, 4), [("T",)]),
    ((2, 3, 4), [("transpose", -1, 0)]),
    ((2, 3, 4), [("transpose", 1, 1)]),
    ((2, 3, 4, 5), [("permute", [2, 0, 3, 1])]),
    ((2, 3, 4, 5), [("permute", [-1, 0, 1, -2])]),
    ((), [("permute", [])]),
    # unsqueeze / squeeze
    ((2, 3), [("unsqueeze", 0)]),
    ((2, 3), [("unsqueeze", 1)]),
    ((2, 3), [("unsqueeze", 2)]),
    ((2, 3), [("unsqueeze", -1)]),
    ((2, 3), [("t",), ("unsqueeze", 1)]),
    ((2, 0, 3), [("unsqueeze", 1)]),
    ((), [("unsqueeze", 0)]),
    ((), [("unsqueeze", -1)]),
    ((1, 3, 1, 2), [("squeeze_all",)]),
    ((1, 3, 1, 2), [("squeeze", 2)]),
    ((1, 3, 1, 2), [("squeeze", 1)]),
    ((1, 3, 1, 2), [("squeeze", -4)]),
    ((1, 1), [("squeeze_all",)]),
    ((), [("squeeze_all",)]),
    ((), [("squeeze", 0)]),
    ((), [("squeeze", -1)]),
    # expand
    ((3, 1), [("expand", [3, 4])]),
    ((3, 1), [("expand", [-1, 4])]),
    ((3, 1), [("expand", [2, 3, 4])]),
    ((3, 1), [("expand", [1, 3, 1])]),
    ((3,), [("expand", [1, 3])]),
    ((3,), [("expand", [1, 1, 3])]),
    ((3,), [("expand", [2, 1, 3])]),
    ((3, 1), [("expand", [1, 2, 3, 1])]),
    ((3, 1), [("expand", [3, 0])]),
    ((3, 1), [("expand", [4, 4])]),
    ((3, 1), [("expand", [-1, 3, 4])]),
    ((3, 1), [("expand", [4])]),
    ((3, 1), [("expand", [3, -2])]),
    ((), [("expand", [3, 4])]),
    ((), [("expand", [1])]),
    ((), [("expand", [1, 1])]),
    ((), [("expand", [])]),
    ((1, 2), [("t",), ("expand", [2, 5])]),
    ((0, 1), [("expand", [0, 4])]),
    ((0, 1), [("expand", [2, 0, 4])]),
    # slicing: steps, negative bounds, clamping
    ((10,), [("slice", 0, 2, 8, 3)]),
    ((10,), [("slice", 0, -3, NONE, 1)]),
    ((10,), [("slice", 0, NONE, -3, 2)]),
    ((10,), [("slice", 0, -100, 100, 4)]),
    ((10,), [("slice", 0, 20, NONE, 1)]),
    ((10,), [("slice", 0, 7, 3, 1)]),
    ((10,), [("slice", 0, -2, -5, 1)]),
    ((10,), [("slice", 0, NONE, NONE, 20)]),
    ((3, 4), [("slice", 1, 10, NONE, 1)]),
    ((3, 4), [("slice", 1, 3, 1, 1)]),
    ((3, 4), [("slice", 0, -10, 2, 1)]),
    ((3, 4), [("slice", 1, 1, NONE, 2), ("slice", 0, NONE, NONE, 2)]),
    ((0, 4), [("slice", 0, 1, 3, 1)]),
    ((3, 0), [("slice", 1, -1, NONE, 1)]),
    ((4, 6), [("t",), ("slice", 0, 1, 5, 2)]),
    # select / x[i] / narrow
    ((3, 4), [("select", 0, 1)]),
    ((3, 4), [("select", 1, -1)]),
    ((3, 4), [("select", -1, -4)]),
    ((3, 4), [("index", -1)]),
    ((3, 4), [("t",), ("index", 2)]),
    ((2, 3, 4), [("select", 1, 2), ("select", 0, 1)]),
    ((4,), [("select", 0, 3)]),
    ((3, 4), [("narrow", 1, 1, 2)]),
    ((3, 4), [("narrow", 0, -2, 2)]),
    ((3, 4), [("narrow", 1, 4, 0)]),
    ((3, 4), [("narrow", -1, 0, 4)]),
    # diagonal
    ((3, 4), [("diagonal", 0, 0, 1)]),
    ((3, 4), [("diagonal", 1, 0, 1)]),
    ((3, 4), [("diagonal", 3, 0, 1)]),
    ((3, 4), [("diagonal", 4, 0, 1)]),
    ((3, 4), [("diagonal", 9, 0, 1)]),
    ((3, 4), [("diagonal", -1, 0, 1)]),
    ((3, 4), [("diagonal", -2, 0, 1)]),
    ((3, 4), [("diagonal", -3, 0, 1)]),
    ((3, 4), [("diagonal", -7, 0, 1)]),
    ((3, 4), [("diagonal", 1, 1, 0)]),
    ((3, 4), [("diagonal", -1, 1, 0)]),
    ((3, 4), [("diagonal", 0, -1, -2)]),
    ((2, 3, 4), [("diagonal", 0, 0, 2)]),
    ((2, 3, 4), [("diagonal", 1, 2, 0)]),
    ((2, 3, 4), [("diagonal", -1, 1, 2)]),
    ((2, 3, 4), [("transpose", 0, 2), ("diagonal", 1, 0, 1)]),
    ((2, 3, 4), [("transpose", 0, 2), ("diagonal", -1, 2, 1)]),
    ((4, 5), [("t",), ("diagonal", 2, 0, 1), ("unsqueeze", 0)]),
    ((3, 4), [("slice", 1, 1, NONE, 1), ("diagonal", 1, 0, 1)]),
    ((0, 4), [("diagonal", 1, 0, 1)]),
    ((3, 0), [("diagonal", -1, 0, 1)]),
    ((3, 3), [("expand", [2, 3, 3]), ("diagonal", 0, 1, 2)]),
    ((2, 3, 3), [("select", 0, 1), ("diagonal", 0, 0, 1)]),
    # as_strided
    ((12,), [("as_strided", [3, 4], [4, 1], NONE)]),
    ((12,), [("as_strided", [4, 3], [1, 4], NONE)]),
    ((12,), [("as_strided", [2, 2], [3, 1], 5)]),
    ((12,), [("as_strided", [3, 3], [0, 1], 9)]),
    ((12,), [("as_strided", [3, 3], [0, 1], 10)]),
    ((12,), [("as_strided", [13], [1], 0)]),
    ((12,), [("as_strided", [12], [1], 0)]),
    ((12,), [("as_strided", [2, 2], [-1, 1], 4)]),
    ((12,), [("as_strided", [0, 5], [100, 100], 50)]),
    ((12,), [("as_strided", [], [], 11)]),
    ((12,), [("as_strided", [], [], 12)]),
    ((3, 4), [("slice", 0, 1, NONE, 1), ("as_strided", [2, 2], [1, 2], NONE)]),
    ((3, 4), [("select", 0, 2), ("as_strided", [4], [1], NONE)]),
    ((3, 4), [("select", 0, 2), ("as_strided", [5], [1], NONE)]),
    ((3, 4), [("as_strided", [2, 3], [2, 3], 1), ("t",)]),
    # flip (zero-copy extension; expected computed by hand)
    ((3, 4), [("flip", [0])]),
    ((3, 4), [("flip", [1])]),
    ((3, 4), [("flip", [0, 1])]),
    ((3, 4), [("flip", [-1])]),
    ((3, 4), [("t",), ("flip", [0])]),
    ((2, 3, 4), [("slice", 2, 1, NONE, 2), ("flip", [2, 0])]),
    ((0, 4), [("flip", [0])]),
    ((0, 4), [("flip", [1])]),
    ((1, 4), [("flip", [0])]),
    ((5,), [("select", 0, 2), ("flip", [])]),
    ((3, 1), [("expand", [3, 4]), ("flip", [1])]),
    # contiguity corner cases
    ((1, 4), [("t",)]),
    ((4, 1, 1), [("permute", [1, 0, 2])]),
    ((2, 1, 3), [("transpose", 0, 1)]),
    ((2, 3), [("unsqueeze", 0), ("expand", [1, 2, 3])]),
    ((2, 3), [("expand", [1, 2, 3])]),
    ((2, 3), [("slice", 1, 0, 1, 1)]),
    ((2, 3), [("slice", 0, 0, 1, 1), ("t",)]),
    ((3, 4), [("slice", 0, 0, 0, 1), ("t",)]),
]


# --- random chains -------------------------------------------------------------------

def factorise(n, rng):
    """A random shape with product n (n >= 1), 0..4 dims."""
    dims = []
    while n > 1 and len(dims) < 4:
        divs = [d for d in range(2, n + 1) if n % d == 0]
        d = rng.choice(divs)
        dims.append(d)
        n //= d
    if n > 1:
        dims.append(n)
    for _ in range(rng.randint(0, 2)):
        dims.insert(rng.randint(0, len(dims)), 1)
    return dims[:MAX_DIMS]


def random_step(rng, t, allow_flip):
    shape, nd = list(t.shape), t.dim()
    kinds = ["view", "reshape", "permute", "unsqueeze", "squeeze_all", "squeeze", "expand",
             "slice", "select", "narrow", "diagonal", "as_strided", "transpose", "t"]
    if allow_flip:
        kinds.append("flip")
    while True:
        k = rng.choice(kinds)
        if k in ("view", "reshape"):
            n = t.numel()
            new = factorise(n, rng) if n > 0 else rng.choice([[0], [0, 3], [2, 0], [1, 0, 1]])
            if new and rng.random() < 0.4:
                new[rng.randrange(len(new))] = -1
            if rng.random() < 0.1:
                new = new + [2]  # usually a mismatch
            return (k, new)
        if k == "permute":
            p = list(range(nd))
            rng.shuffle(p)
            return (k, p)
        if k == "transpose" and nd >= 1:
            return (k, rng.randrange(-nd, nd), rng.randrange(-nd, nd))
        if k == "t" and nd <= 2:
            return (k,)
        if k == "unsqueeze" and nd < 6:
            return (k, rng.randrange(-nd - 1, nd + 1))
        if k == "squeeze_all":
            return (k,)
        if k == "squeeze" and nd >= 1:
            return (k, rng.randrange(-nd, nd))
        if k == "expand" and nd < 6:
            lead = rng.choice([0, 0, 1, 2])
            new = [rng.choice([1, 2, 3]) for _ in range(lead)]
            for n in shape:
                if n == 1:
                    new.append(rng.choice([1, 2, 4, -1]))
                else:
                    new.append(rng.choice([n, -1, n, n + 1 if rng.random() < 0.3 else n]))
            return (k, new)
        if k == "slice" and nd >= 1:
            d = rng.randrange(nd)
            n = shape[d]

            def bound():
                return None if rng.random() < 0.25 else rng.randint(-n - 3, n + 3)
            return (k, d, bound(), bound(), rng.choice([1, 1, 2, 3]))
        if k == "select" and nd >= 1:
            d = rng.randrange(-nd, nd)
            n = shape[d]
            if n > 0:
                return (k, d, rng.randrange(-n, n))
        if k == "narrow" and nd >= 1:
            d = rng.randrange(-nd, nd)
            n = shape[d]
            start = rng.randint(-n, n) if n > 0 else 0
            s = start + n if start < 0 else start
            return (k, d, start, rng.randint(0, n - s))
        if k == "diagonal" and nd >= 2:
            d1 = rng.randrange(-nd, nd)
            d2 = rng.randrange(-nd, nd)
            if d1 % nd != d2 % nd:
                return (k, rng.randint(-4, 4), d1, d2)
        if k == "as_strided" and nd <= 4:
            m = rng.randint(0, 3)
            size = [rng.randint(0, 4) for _ in range(m)]
            stride = [rng.choice([0, 1, 2, 3, 5]) for _ in range(m)]
            off = rng.choice([None, 0, 1, 3])
            return (k, size, stride, off)
        if k == "flip" and nd >= 1:
            dims = rng.sample(range(nd), rng.randint(1, nd))
            return (k, [d - nd if rng.random() < 0.3 else d for d in dims])


START_SHAPES = [(2, 3, 4), (3, 4), (6,), (4, 1, 3), (1, 5), (2, 3, 1, 2), (0, 3), (2, 0, 1),
                (), (1,), (3, 3), (2, 2, 2, 2), (5, 4, 3)]


def random_cases(count, rng):
    out = []
    while len(out) < count:
        shape = rng.choice(START_SHAPES)
        steps, t = [], torch.empty(shape)
        root = t
        for i in range(rng.randint(1, 4)):
            last = i == 3 or rng.random() < 0.3
            st = random_step(rng, t, allow_flip=True)
            if st[0] == "flip":
                steps.append(st)
                break
            steps.append(st)
            try:
                t = apply(root, t, st)
            except (RuntimeError, IndexError):
                break
            if last:
                break
        out.append((shape, steps))
    return out


# --- C output --------------------------------------------------------------------------

ENUM = {"view": "VS_VIEW", "reshape": "VS_RESHAPE", "transpose": "VS_TRANSPOSE", "t": "VS_T",
        "T": "VS_T_ALL", "permute": "VS_PERMUTE", "unsqueeze": "VS_UNSQUEEZE",
        "squeeze_all": "VS_SQUEEZE_ALL", "squeeze": "VS_SQUEEZE", "expand": "VS_EXPAND",
        "slice": "VS_SLICE", "select": "VS_SELECT", "index": "VS_SELECT", "narrow": "VS_NARROW",
        "diagonal": "VS_DIAGONAL", "as_strided": "VS_AS_STRIDED", "flip": "VS_FLIP"}


def c_int(x):
    return "VC_NONE" if x is None else str(x)


def c_list(xs):  # {0} for an empty list: C11 has no empty initializer
    return "{" + (", ".join(c_int(x) for x in xs) or "0") + "}"


def c_step(step):
    op, *a = step
    if op in ("view", "reshape", "permute", "expand", "flip"):
        n, args = len(a[0]), a[0]
    elif op == "index":
        n, args = 2, [0, a[0]]
    elif op == "as_strided":
        n, args = len(a[0]), a[0] + a[1] + [a[2]]
    else:
        n, args = len(a), a
    return "{%s, %d, %s}" % (ENUM[op], n, c_list(args))


def py_desc(shape, steps):
    s = "empty(%s)" % ", ".join(map(str, shape))
    for op, *a in steps:
        if op == "slice":
            d, b, e, st = a
            s += "[%s%s:%s:%s]" % (":, " * d, "" if b is None else b, "" if e is None else e, st)
        elif op == "index":
            s += "[%d]" % a[0]
        elif op == "T":
            s += ".T"
        elif op in ("view", "reshape", "permute", "expand", "flip"):
            s += ".%s(%s)" % (op, ", ".join(map(str, a[0])) if op != "flip" else a[0])
        elif op == "as_strided":
            s += ".as_strided(%s, %s%s)" % (a[0], a[1], "" if a[2] is None else ", %d" % a[2])
        elif op == "squeeze_all":
            s += ".squeeze()"
        else:
            s += ".%s(%s)" % (op, ", ".join(map(str, a)))
    return s.replace("'", "")


def main():
    rng = random.Random(1913)
    cases = HAND + random_cases(260, rng)
    lines = []
    nfail = 0
    for shape, steps in cases:
        fail, rshape, rstrides, roff, contig = run_case(shape, steps)
        nfail += fail >= 0
        lines.append("  {\"%s\",\n   %d, %s, %d, {%s},\n   %d, {%d, %s, %s, %d}, %s},"
                     % (py_desc(shape, steps), len(shape), c_list(shape), len(steps),
                        ", ".join(c_step(s) for s in steps), fail, len(rshape), c_list(rshape),
                        c_list(rstrides), roff, "true" if contig else "false"))
    with open(OUT, "w") as f:
        f.write("// tests/unit/view_cases.inc: GENERATED by tests/tools/gen_view_cases.py with torch %s;\n"
                "// do not edit. %d cases (%d expected to fail). Each row:\n"
                "//   {python expression, start ndim, start shape, nsteps, {steps},\n"
                "//    fail_step (-1: succeeds), {ndim, shape, strides, offset}, is_contiguous}\n"
                "// A step is {op, n, args}: VIEW/RESHAPE/EXPAND/PERMUTE/FLIP: n sizes or dims;\n"
                "// AS_STRIDED: n dims, then n sizes, n strides, offset (VC_NONE: keep the input's);\n"
                "// otherwise the PyTorch arguments in order, dims and indices not normalised,\n"
                "// VC_NONE for an omitted slice bound. flip's expectation is computed by the\n"
                "// script (PyTorch copies). The storage is the start shape's numel elements.\n"
                % (torch.__version__, len(cases), nfail))
        f.write("\n".join(lines) + "\n")
    print("wrote %d cases (%d failing) to %s" % (len(cases), nfail, os.path.normpath(OUT)), file=sys.stderr)


if __name__ == "__main__":
    main()
