"""tests/run/randprog.py: the seeded random program generator shared by test_random.py
and test_backends_agree.py, and the check of one run's outputs against its NumPy values.

A generator (Python's random.Random, one seed per program) grows, for each output, a
tree whose shape is fixed top-down: views (transpose, permute, steps, select, narrow,
unsqueeze + expand, reshape, flip), elementwise ops with broadcasting, reductions,
softmax and matmul, over f32 (most programs), f64 and i32. Each node is at once tdsl
text and a NumPy value computed in f64 (exact int64 for i32 programs), so the oracle
never depends on tdslc. Some nodes are bound to names, some parameters are shared
between outputs. `Program(seed).build()` is deterministic in the seed.
"""
import concurrent.futures
import math
import os
import random
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle import json_values, rnd, run_cleanup, run_function, type_str  # noqa: E402

TOL = {"f32": (1e-4, 3e-5), "f64": (1e-10, 1e-12)}  # rtol, atol relative to the tree's magnitude


class Node:
    def __init__(self, expr, val, dtype, mag, atom=False):
        self.expr, self.val, self.dtype, self.mag, self.atom = expr, val, dtype, mag, atom

    def paren(self):
        return self.expr if self.atom else f"({self.expr})"


def _erf(a):
    return np.vectorize(math.erf, otypes=[np.float64])(a)


def _mag(*vals):
    m = 1.0
    for v in vals:
        v = np.asarray(v, dtype=np.float64)
        if v.size:
            m = max(m, float(np.max(np.abs(v))))
    return m


class Program:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.seed = seed
        self.nprng = np.random.default_rng(seed)
        kind = self.r.random()
        self.dt = "f32" if kind < 0.7 else "f64" if kind < 0.85 else "i32"
        self.isint = self.dt == "i32"
        self.params = []  # (name, dtype, value)
        self.lets = []
        self.nodes = 0

    # --- leaves -----------------------------------------------------------
    def leaf(self, shape):
        r = self.r
        shape = list(shape)
        nd = len(shape)
        # share an existing parameter of the right declared shape now and then
        for name, dt, val in self.params:
            if dt == self.dt and list(val.shape) == shape and r.random() < 0.3:
                return Node(name, self._f(val), dt, _mag(val), True)
        lay = r.choice("ccts e") if nd else "c"
        if lay == " ":
            lay = "c"
        if lay == "t" and nd >= 2:
            perm = list(range(nd))
            r.shuffle(perm)
            decl = [0] * nd
            for i, p in enumerate(perm):
                decl[p] = shape[i]
            name = f"p{len(self.params)}"
            val = self._rand(decl)
            expr = f"{name}.t()" if perm == [1, 0] and r.random() < 0.5 else f"{name}.permute({', '.join(map(str, perm))})"
            return self._param(name, val, expr, np.transpose(val, perm))
        if lay == "s" and nd >= 1:
            steps = [r.choice([1, 2, 3]) for _ in shape]
            starts = [r.randrange(0, 2) for _ in shape]
            decl = [st + (n - 1) * sp + 1 + r.randrange(0, 2) for n, sp, st in zip(shape, steps, starts)]
            name = f"p{len(self.params)}"
            val = self._rand(decl)
            idx = ", ".join(f"{st}:{st + (n - 1) * sp + 1}:{sp}" for n, sp, st in zip(shape, steps, starts))
            sl = tuple(slice(st, st + (n - 1) * sp + 1, sp) for n, sp, st in zip(shape, steps, starts))
            return self._param(name, val, f"{name}[{idx}]", val[sl])
        if lay == "e" and nd >= 1 and any(s > 1 for s in shape):
            decl = [s if r.random() < 0.5 else 1 for s in shape]
            name = f"p{len(self.params)}"
            val = self._rand(decl)
            return self._param(name, val, f"{name}.expand({', '.join(map(str, shape))})", np.broadcast_to(val, shape))
        name = f"p{len(self.params)}"
        val = self._rand(shape)
        return self._param(name, val, name, val, atom=True)

    def _rand(self, shape):
        if self.isint:
            return self.nprng.integers(-3, 4, size=tuple(shape)).astype(np.int32)
        return rnd(self.nprng.uniform(-1, 1, size=tuple(shape)), self.dt)

    def _f(self, v):
        return np.asarray(v).astype(np.int64 if self.isint else np.float64)

    def _param(self, name, val, expr, view, atom=False):
        self.params.append((name, self.dt, val))
        return Node(expr, self._f(view), self.dt, _mag(val), atom)

    # --- inner nodes --------------------------------------------------------
    def gen(self, shape, depth):
        self.nodes += 1
        r = self.r
        if depth <= 0 or self.nodes > 40 or r.random() < 0.08:
            return self.leaf(shape)
        choices = ["unary"] * 3 + ["binary"] * 4 + ["view"] * 4 + ["reduce"] * 2
        if not self.isint:
            choices += ["softmax"] + (["matmul"] * 2 if len(shape) >= 1 else [])
        n = self._pick(r.choice(choices), shape, depth)
        if r.random() < 0.15 and len(n.expr) > 8:  # bind it to a name
            name = f"t{len(self.lets)}"
            self.lets.append(f"{name} = {n.expr}")
            n = Node(name, n.val, n.dtype, n.mag, True)
        return n

    def _pick(self, what, shape, depth):
        return getattr(self, "g_" + what)(list(shape), depth)

    def g_unary(self, shape, depth):
        r = self.r
        a = self.gen(shape, depth - 1)
        v, m = a.val, a.mag
        if self.isint:
            ops = [("-{p}", lambda v: -v), ("{p}.abs()", np.abs), ("{p} + 2", lambda v: v + 2),
                   ("{p} * 3", lambda v: v * 3), ("relu({a})", lambda v: np.maximum(v, 0)),
                   ("{p}.clamp(min=-2, max=5)", lambda v: np.clip(v, -2, 5))]
            if m <= 1000:
                ops.append(("square({a})", lambda v: v * v))
        else:
            ops = [("-{p}", lambda v: -v), ("{p}.abs()", np.abs), ("tanh({a})", np.tanh),
                   ("{p}.sigmoid()", lambda v: 1 / (1 + np.exp(-v))), ("sin({a})", np.sin), ("{p}.cos()", np.cos),
                   ("relu({a})", lambda v: np.maximum(v, 0)), ("{p} * 0.5", lambda v: v * 0.5),
                   ("{p} + 1.25", lambda v: v + 1.25), ("{p} / 3", lambda v: v / 3),
                   ("sqrt({p}.abs() + 1)", lambda v: np.sqrt(np.abs(v) + 1)),
                   ("{p}.clamp(min=-0.5, max=0.75)", lambda v: np.clip(v, -0.5, 0.75)),
                   ("gelu({a})", lambda v: 0.5 * v * (1 + _erf(v / np.sqrt(2)))),
                   ("{p}.silu()", lambda v: v / (1 + np.exp(-v)))]
            if m <= 4:
                ops.append(("exp({a})", np.exp))
            if m <= 10:
                ops.append(("{p}.square()", lambda v: v * v))
        spell, f = r.choice(ops)
        out = f(v)
        return Node(spell.format(a=a.expr, p=a.paren()), out, a.dtype, _mag(out, m))

    def _bshape(self, shape):
        """A shape that broadcasts to `shape`."""
        r = self.r
        s = [d if r.random() < 0.7 else 1 for d in shape]
        while s and r.random() < 0.25:
            s = s[1:]
        return s

    def g_binary(self, shape, depth):
        r = self.r
        sa, sb = (shape, self._bshape(shape)) if r.random() < 0.5 else (self._bshape(shape), shape)
        a, b = self.gen(sa, depth - 1), self.gen(sb, depth - 1)
        ops = [("{a} + {b}", np.add), ("{a} - {b}", np.subtract), ("{a} * {b}", np.multiply),
               ("maximum({a}, {b})", np.maximum), ("{a}.minimum({b})", np.minimum)]
        if self.isint:
            ops += [("{a} // ({b}.abs() + 1)", lambda x, y: np.floor_divide(x, np.abs(y) + 1)),
                    ("{a} % ({b}.abs() + 1)", lambda x, y: np.remainder(x, np.abs(y) + 1)),
                    ("where({a} > {b}, {a}, {b} * 2)", lambda x, y: np.where(x > y, x, y * 2))]
            if a.mag * b.mag > 1e6:
                ops = [o for o in ops if "*" not in o[0]]
        else:
            ops += [("{a} / ({b}.abs() + 1)", lambda x, y: x / (np.abs(y) + 1)),
                    ("where({a} > 0, {a}, {b})", lambda x, y: np.where(x > 0, x, y) + 0 * y)]
        spell, f = r.choice(ops)
        out = np.broadcast_to(f(a.val, b.val), shape)
        if "where" in spell and not self.isint:  # the condition is discontinuous: keep ties away
            mask = np.abs(np.broadcast_to(a.val, shape)) < 1e-3 * a.mag
            if mask.any():
                spell, f = "{a} + {b}", np.add
                out = np.broadcast_to(f(a.val, b.val), shape)
        # PyTorch: an operand with dims beats a 0-d one of the same category (i32[3] + i64[] is i32)
        dims = [n.dtype for n in (a, b) if np.ndim(n.val) > 0] or [a.dtype, b.dtype]
        dt = "i64" if "i64" in dims else dims[0]
        return Node(spell.format(a=a.paren(), b=b.paren()), np.array(out), dt, _mag(out, a.mag, b.mag))

    def g_view(self, shape, depth):
        r = self.r
        nd = len(shape)
        opts = ["reshape", "select", "unsqueeze"]
        if nd >= 2:
            opts += ["transpose", "transpose", "permute"]
        if nd >= 1:
            opts += ["slice", "slice", "flip", "narrow"]
        if any(d > 1 for d in shape):
            opts += ["expand"]
        what = r.choice(opts)
        if what == "transpose":
            i, j = r.sample(range(nd), 2)
            src = shape[:]
            src[i], src[j] = src[j], src[i]
            a = self.gen(src, depth - 1)
            ni, nj = (i - nd if r.random() < 0.3 else i), j
            return Node(f"{a.paren()}.transpose({ni}, {nj})", np.swapaxes(a.val, i, j), a.dtype, a.mag)
        if what == "permute":
            perm = list(range(nd))
            r.shuffle(perm)
            src = [0] * nd
            for k, p in enumerate(perm):
                src[p] = shape[k]
            a = self.gen(src, depth - 1)
            return Node(f"{a.paren()}.permute({', '.join(map(str, perm))})", np.transpose(a.val, perm), a.dtype, a.mag)
        if what == "slice":
            d = r.randrange(nd)
            step = r.choice([1, 2, 3])
            start = r.randrange(0, 3)
            n = shape[d]
            src = shape[:]
            src[d] = start + (n - 1) * step + 1 + r.randrange(0, 3)
            a = self.gen(src, depth - 1)
            stop = start + (n - 1) * step + 1
            stop_s = str(stop) if r.random() < 0.6 else str(stop - src[d]) if stop < src[d] else ""
            idx = [":"] * d + [f"{start}:{stop_s}:{step}"]
            sl = tuple([slice(None)] * d + [slice(start, stop, step)])
            return Node(f"{a.paren()}[{', '.join(idx)}]", a.val[sl], a.dtype, a.mag)
        if what == "narrow":
            d = r.randrange(nd)
            start = r.randrange(0, 3)
            src = shape[:]
            src[d] = shape[d] + start + r.randrange(0, 2)
            a = self.gen(src, depth - 1)
            sl = tuple([slice(None)] * d + [slice(start, start + shape[d])])
            return Node(f"{a.paren()}.narrow({d}, {start}, {shape[d]})", a.val[sl], a.dtype, a.mag)
        if what == "flip":
            d = r.randrange(nd)
            a = self.gen(shape, depth - 1)
            return Node(f"{a.paren()}.flip({d})", np.flip(a.val, d), a.dtype, a.mag)
        if what == "select":
            d = r.randrange(nd + 1)
            m = r.randrange(1, 4)
            i = r.randrange(-m, m)
            src = shape[:d] + [m] + shape[d:]
            a = self.gen(src, depth - 1)
            if d == 0:
                return Node(f"{a.paren()}[{i}]", a.val[i], a.dtype, a.mag)
            return Node(f"{a.paren()}.select({d}, {i})", np.take(a.val, i, axis=d), a.dtype, a.mag)
        if what == "unsqueeze":
            ones = [k for k, s in enumerate(shape) if s == 1]
            if not ones:
                return self.g_view(shape, depth) if nd else self.g_unary(shape, depth)
            d = r.choice(ones)
            a = self.gen(shape[:d] + shape[d + 1:], depth - 1)
            return Node(f"{a.paren()}.unsqueeze({d})", np.expand_dims(a.val, d), a.dtype, a.mag)
        if what == "expand":
            big = [k for k, s in enumerate(shape) if s > 1]
            d = r.choice(big)
            src = shape[:d] + shape[d + 1:]
            a = self.gen(src, depth - 1)
            spell = f"{a.paren()}.unsqueeze({d}).expand({', '.join(map(str, shape))})"
            if r.random() < 0.3:
                spell = f"{a.paren()}.unsqueeze({d}).expand({', '.join('-1' if k != d else str(s) for k, s in enumerate(shape))})"
            return Node(spell, np.broadcast_to(np.expand_dims(a.val, d), shape), a.dtype, a.mag)
        # reshape from another shape with the same number of elements
        numel = int(np.prod(shape)) if shape else 1
        divs = [k for k in range(1, numel + 1) if numel % k == 0]
        k = r.choice(divs)
        src = [k, numel // k] if r.random() < 0.6 else [numel]
        a = self.gen(src, depth - 1)
        tgt = ", ".join(map(str, shape)) if shape else ""
        if shape and r.random() < 0.3:
            j = r.randrange(len(shape))
            tgt = ", ".join("-1" if q == j else str(s) for q, s in enumerate(shape))
        spell = f"{a.paren()}.reshape({tgt})" if shape else f"{a.paren()}.reshape([])"
        return Node(spell, np.reshape(a.val, shape), a.dtype, a.mag)

    def g_reduce(self, shape, depth):
        r = self.r
        nd = len(shape)
        if nd == 0 and r.random() < 0.5:  # reduce everything
            src = [r.randrange(1, 5) for _ in range(r.randrange(1, 4))]
            a = self.gen(src, depth - 1)
            ops = [("sum", np.sum), ("amax", np.amax), ("amin", np.amin)] + \
                ([] if self.isint else [("mean", np.mean)])
            name, f = r.choice(ops)
            out = f(a.val)
            dt = "i64" if self.isint and name == "sum" else a.dtype
            return Node(f"{a.paren()}.{name}()" if r.random() < 0.5 else f"{name}({a.expr})", out, dt,
                        _mag(out, a.mag) * (a.val.size if name == "sum" else 1))
        d = r.randrange(nd + 1)
        keep = False
        if nd and shape[min(d, nd - 1)] == 1 and r.random() < 0.5:
            d, keep = min(d, nd - 1), True
        m = r.randrange(1, 6)
        src = shape[:d] + [m] + (shape[d + 1:] if keep else shape[d:])
        a = self.gen(src, depth - 1)
        ops = [("sum", lambda v: np.sum(v, axis=d, keepdims=keep)), ("amax", lambda v: np.amax(v, axis=d, keepdims=keep)),
               ("amin", lambda v: np.amin(v, axis=d, keepdims=keep))]
        if not self.isint:
            ops += [("mean", lambda v: np.mean(v, axis=d, keepdims=keep)),
                    ("logsumexp", lambda v: np.log(np.sum(np.exp(v), axis=d, keepdims=keep)))]
            if m > 1:
                ops += [("var", lambda v: np.var(v, axis=d, keepdims=keep, ddof=1))]
            if a.mag > 30:
                ops = [o for o in ops if o[0] != "logsumexp"]
        name, f = r.choice(ops)
        dd = d - len(src) if r.random() < 0.4 else d
        kw = ", keepdim=true" if keep else ""
        spell = f"{a.paren()}.{name}({dd}{kw})" if r.random() < 0.5 else f"{name}({a.expr}, {dd}{kw})"
        if r.random() < 0.3 and name != "var":
            spell = f"{name}({a.expr}, [{dd}]{kw})"
        out = f(a.val)
        dt = "i64" if self.isint and name == "sum" else a.dtype
        return Node(spell, out, dt, _mag(out, a.mag) * (m if name in ("sum", "var") else 1))

    def g_softmax(self, shape, depth):
        if not shape:
            return self.g_unary(shape, depth)
        r = self.r
        a = self.gen(shape, depth - 1)
        d = r.randrange(len(shape))
        v = a.val
        mx = np.max(v, axis=d, keepdims=True)
        e = np.exp(v - mx)
        if r.random() < 0.6:
            out = e / e.sum(axis=d, keepdims=True)
            name = "softmax"
        else:
            out = v - mx - np.log(e.sum(axis=d, keepdims=True))
            name = "log_softmax"
        dd = d - len(shape) if r.random() < 0.5 else d
        spell = f"{name}({a.expr}, {dd})" if r.random() < 0.6 else f"{a.paren()}.{name}(dim={dd})"
        return Node(spell, out, a.dtype, _mag(out, a.mag))

    def g_matmul(self, shape, depth):
        r = self.r
        nd = len(shape)
        k = r.randrange(1, 9)
        if nd == 1:
            if r.random() < 0.5:
                a, b = self.gen([k], depth - 1), self.gen([k, shape[0]], depth - 1)
            else:
                a, b = self.gen([shape[0], k], depth - 1), self.gen([k], depth - 1)
        elif nd == 0:
            a, b = self.gen([k], depth - 1), self.gen([k], depth - 1)
        else:
            batch = shape[:-2]
            ba = bb = batch
            if batch and r.random() < 0.4:  # broadcast batch dims
                ba, bb = r.choice([(batch, []), ([], batch), (batch, [1] + batch[1:]), ([1] + batch[1:], batch),
                                   (batch[1:], batch)])
            a = self.gen(ba + [shape[-2], k], depth - 1)
            b = self.gen(bb + [k, shape[-1]], depth - 1)
        out = np.matmul(a.val, b.val)
        spell = f"{a.paren()} @ {b.paren()}" if r.random() < 0.7 else f"matmul({a.expr}, {b.expr})"
        return Node(spell, out, a.dtype, _mag(out, a.mag * b.mag * k))

    # --- the program --------------------------------------------------------
    def build(self):
        r = self.r
        self.outs = []
        for _ in range(r.choice([1, 1, 2, 3])):
            nd = r.choice([0, 1, 2, 2, 3, 3])
            shape = [r.randrange(1, 6) for _ in range(nd)]
            self.nodes = 0
            self.outs.append(self.gen(shape, r.randrange(3, 7)))
        ps = ", ".join(f"{n}: {type_str(dt, v.shape)}" for n, dt, v in self.params)
        rets = [type_str(o.dtype, np.shape(o.val)) for o in self.outs]
        ret = rets[0] if len(rets) == 1 else f"({', '.join(rets)})"
        lines = [f"# random program, seed {self.seed} ({self.dt})", f"fn f({ps}) -> {ret} {{"]
        lines += [f"    {b}" for b in self.lets]
        lines += [f"    return {', '.join(o.expr for o in self.outs)}", "}"]
        self.src = "\n".join(lines)
        return self


def check_doc(prog, doc):
    """Failure lines for one run's JSON document against the program's NumPy values."""
    errs = []
    if len(doc["outputs"]) != len(prog.outs):
        return [f"{len(doc['outputs'])} outputs, expected {len(prog.outs)}"]
    for k, (o, n) in enumerate(zip(doc["outputs"], prog.outs)):
        want = np.asarray(n.val)
        if o["dtype"] != n.dtype or list(o["shape"]) != list(want.shape):
            errs.append(f"out{k}: {o['dtype']}{o['shape']}, expected {n.dtype}{list(want.shape)}")
            continue
        got = json_values(o["data"], o["dtype"]).reshape(want.shape)
        if n.dtype in ("i32", "i64"):
            if not np.array_equal(got.astype(np.int64), want.astype(np.int64)):
                i = tuple(np.argwhere(got.astype(np.int64) != want)[0])
                errs.append(f"out{k}{list(i)}: got {got[i]}, want {want[i]}")
            continue
        rtol, atol = TOL[n.dtype]
        g, w = got.astype(np.float64), want.astype(np.float64)
        bad = ~(np.abs(g - w) <= atol * n.mag + rtol * np.abs(w))
        if bad.any():
            i = tuple(np.argwhere(bad)[0])
            errs.append(f"out{k}{list(i)}: got {g[i]!r}, want {w[i]!r} (magnitude {n.mag:.3g})")
    return errs


def run(tdslc, prog, backend="env"):
    """Runs the program on backend (see oracle.tdslc_run) with its parameters as .npy
    files. Returns (failure lines against NumPy, JSON document or None)."""
    inputs = {n: (dt, v) for n, dt, v in prog.params}
    p, doc, out_dir = run_function(tdslc, prog.src, "f", inputs, name=f"random{prog.seed}", backend=backend)
    if p.returncode != 0:
        errs = [f"exit {p.returncode}: {p.stderr.decode(errors='replace').strip()[:800]}"]
    else:
        errs = check_doc(prog, doc)
    run_cleanup(out_dir)
    return errs, doc


def report(tally, prog, errs, label=""):
    """Reports one program to tally (an oracle.Tally): its line, its failures and, on
    failure, the whole program."""
    return tally.report(f"seed {prog.seed} ({prog.dt}, {len(prog.params)} params, {len(prog.outs)} outputs){label}",
                        errs, program=prog.src)


def run_programs(tdslc, progs, tally, backend="env", label=""):
    """Runs the programs two at a time on backend and reports each to tally (report)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as ex:
        for prog, (errs, _) in zip(progs, ex.map(lambda q: run(tdslc, q, backend), progs)):
            report(tally, prog, errs, label)
