"""tests/run/randprog.py: the seeded random program generator shared by test_random.py
and test_backends_agree.py, and the check of one run's outputs against its NumPy values.

A generator (Python's random.Random, one seed per program) grows, for each output, a
tree whose shape and dtype are fixed top-down. Each node is asked for a shape and a
dtype (bool, i32, i64, f32, f64) and is at once tdsl text and a NumPy value computed
in f64 (exact int64 for ints, bool for bools), so the oracle never depends on tdslc.
The nodes:
  - views: transpose, permute, steps, select, narrow, unsqueeze + expand, reshape,
    flip; flatten, squeeze, `[None]`, contiguous().view, repeat, movedim, .T, .mT;
  - elementwise ops with broadcasting and PyTorch's promotion of mixed dtypes (one
    operand of a lower category or width, 0-d operands, literals), pow, int floor
    division and remainder (negative divisors too), trunc division, fmod, bitwise ops,
    add/sub with alpha=;
  - casts (.to(dtype), .float(), .double(), .int(), .long(), .bool()), comparisons
    giving bool, logical ops, where(cond, a, b), masked_fill, tril/triu;
  - reductions (sum, mean, amax, amin, logsumexp, var, std, prod, norm, max/min along a
    dim, any, all, argmax, argmin), scans (cumsum, cumprod, cummax, logcumsumexp);
  - softmax, log_softmax, layer_norm, rms_norm and their hand-written forms;
  - matmul, mm, bmm, x @ w.t(), F.linear, torch.einsum, with transposed operands; now and then a
    large one (M, N, K up to about 70) so the packed GEMM schedule runs;
  - cat, stack, split/chunk (a piece, or all pieces unpacked into names),
    index_select and gather with in-range index parameters;
  - statements: `for` loops accumulating into a name (rebound or in place), fresh
    tensors updated in place (x.add_(y), x += y, x[a:b] = y, x[..., -1] = y, x[1::2] = y,
    masked_fill_, clamp_),
    and named lines reused by later expressions;
  - functions and Python values: calls of helper functions written generically (dims
    as names), with scalar parameters and defaults (given, left out, or a run-time
    scalar of the entry passed on), an optional tensor (`| None = None`, `if w is not
    None`), `a if c else b`, compile-time and run-time asserts, a loop over a scalar
    parameter (for, while, continue, break), lists, tuple results (indexed or unpacked),
    helpers without a result writing a `mut` parameter; run-time `float`, `int` and
    `bool` parameters of the entry (given by --arg); lists built with append and +=,
    then stacked or summed, tuples unpacked and star-unpacked, displays indexed,
    comprehensions and generators, and conditional expressions whose other branch
    would not compile.
Cases that are ill-conditioned in f32 are avoided: comparisons, where conditions,
argmax/argmin and normalisations whose inputs come near a tie or a zero scale fall back
to another node; exp, pow and prod only run on bounded magnitudes (`mag`, an upper
bound on the tree's values). Float results are checked at the tolerance of the lowest
precision that fed them (`prec`), ints and bools exactly.

The absolute tolerance is per element, as test_gemm.py's |a| @ |b| is: each node carries
`em`, an array of its shape bounding, to first order, the rounding error of each element
in units of the precision: the sum over the float operations that made that element of
|d element / d (that operation's result)| * |that operation's result|. Inputs are exact
(em 0); an elementwise formula is followed operation by operation (Err: each NumPy ufunc
adds its own rounding, |result|, and carries its inputs' em by its slopes there); sums,
products, matmuls, softmax, the norms and the scans have their rule (the partial sums
they round are in it); views, copies, gathers and joins move em as they move values. An
element is accepted when |got - want| <= atol * em + rtol * |want|, so a large value
elsewhere in the tree no longer widens the tolerance of a small element.
`Program(seed).build()` is deterministic in the seed.
"""
import concurrent.futures
import math
import os
import random
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle import json_values, rnd, run_cleanup, run_function, type_str  # noqa: E402

TOL = {"f32": (1e-4, 3e-5), "f64": (1e-10, 1e-12)}  # rtol, and atol per unit of em (about 500 and 9000 ulps)
FLOATS = ("f32", "f64")
INTS = ("i32", "i64")
NUMERIC = INTS + FLOATS
CAT = {"bool": 0, "i32": 1, "i64": 1, "f32": 2, "f64": 2}  # PyTorch's categories
WIDTH = {"bool": 0, "i32": 1, "i64": 2, "f32": 1, "f64": 2}
# the dtypes whose operand, beside one of the key's dtype, still gives the key's dtype
LOWER = {"f32": ["i32", "i64", "bool"], "f64": ["f32", "i32", "i64", "bool"], "i64": ["i32", "bool"],
         "i32": ["bool"]}
CASTS = {"f32": ["float()", "to(torch.float32)", "to(f32)", "to(dtype=torch.float)", "type(torch.float32)"],
         "f64": ["double()", "to(torch.float64)", "to(f64)", "to(torch.double)"],
         "i32": ["int()", "to(torch.int32)", "to(i32)"],
         "i64": ["long()", "to(torch.int64)", "to(i64)", "to(dtype=torch.long)"],
         "bool": ["bool()", "to(torch.bool)"]}
I32_MAX = 2 ** 31 - 1


def _promote(a, b):
    """PyTorch's promote_types for the dtypes here."""
    if a is None or b is None:
        return a or b
    if CAT[a] != CAT[b]:
        return a if CAT[a] > CAT[b] else b
    return a if WIDTH[a] >= WIDTH[b] else b


def _combine(higher, lower):
    """c10's combine_categories: a lower tier changes the result only from a higher category."""
    if higher is None or lower is None:
        return higher or lower
    if CAT[higher] == 2:
        return higher
    if higher == "bool" or CAT[lower] == 2:
        return _promote(higher, lower)
    return higher


def result_type(*nodes):
    """torch.result_type of tensor operands: those with dims, then 0-d ones."""
    tiers = [None, None]
    for n in nodes:
        z = int(np.ndim(n.val) == 0)
        tiers[z] = _promote(tiers[z], n.dtype)
    return _combine(tiers[0], tiers[1])


class Err:
    """A float64 value `v` with `e`, a first-order bound of its rounding error per
    element (see the module's docstring). NumPy ufuncs, the arithmetic operators,
    np.where and np.clip act on it: each ufunc's result adds its own rounding, |result|,
    and each input's e times the ufunc's slope in that input, the larger of the two
    one-sided differences (so a kink such as abs at 0 counts as slope 1). Comparisons
    give plain bool arrays of the values. Plain arrays and numbers are exact."""
    __array_priority__ = 100

    def __init__(self, v, e):
        self.v = np.asarray(v, dtype=np.float64)
        self.e = np.array(np.broadcast_to(np.asarray(e, dtype=np.float64), self.v.shape))

    @staticmethod
    def _slope(ufunc, vals, k):
        v = np.asarray(vals[k], dtype=np.float64)
        h = 1e-6 * (1 + np.abs(v))
        up, dn = list(vals), list(vals)
        up[k], dn[k] = v + h, v - h
        with np.errstate(all="ignore"):
            f0 = ufunc(*vals)
            s = np.maximum(np.abs(ufunc(*up) - f0), np.abs(f0 - ufunc(*dn))) / h
        return np.nan_to_num(s, nan=0.0, posinf=1e300)

    def __array_ufunc__(self, ufunc, method, *inputs, **kw):
        if method != "__call__" or kw:
            return NotImplemented
        vals = [x.v if isinstance(x, Err) else np.asarray(x) for x in inputs]
        with np.errstate(all="ignore"):
            out = ufunc(*vals)
        if np.asarray(out).dtype == bool:
            return out
        e = np.abs(out)
        for k, x in enumerate(inputs):
            if isinstance(x, Err):
                e = e + Err._slope(ufunc, vals, k) * x.e
        return Err(out, e)

    def __array_function__(self, func, types, args, kwargs):
        if func is np.where:
            c, x, y = args
            vx, ex = (x.v, x.e) if isinstance(x, Err) else (np.asarray(x, dtype=np.float64), 0.0)
            vy, ey = (y.v, y.e) if isinstance(y, Err) else (np.asarray(y, dtype=np.float64), 0.0)
            return Err(np.where(c, vx, vy), np.where(c, ex, ey))
        if func is np.clip:
            x, lo, hi = (list(args) + [kwargs.get("a_min"), kwargs.get("a_max")])[:3]
            return np.minimum(np.maximum(x, lo), hi)
        return NotImplemented

    def __add__(self, o): return np.add(self, o)
    def __radd__(self, o): return np.add(o, self)
    def __sub__(self, o): return np.subtract(self, o)
    def __rsub__(self, o): return np.subtract(o, self)
    def __mul__(self, o): return np.multiply(self, o)
    def __rmul__(self, o): return np.multiply(o, self)
    def __truediv__(self, o): return np.true_divide(self, o)
    def __rtruediv__(self, o): return np.true_divide(o, self)
    def __pow__(self, o): return np.power(self, o)
    def __rpow__(self, o): return np.power(o, self)
    def __neg__(self): return np.negative(self)
    def __abs__(self): return np.absolute(self)
    def __gt__(self, o): return np.greater(self.v, o.v if isinstance(o, Err) else o)
    def __ge__(self, o): return np.greater_equal(self.v, o.v if isinstance(o, Err) else o)
    def __lt__(self, o): return np.less(self.v, o.v if isinstance(o, Err) else o)
    def __le__(self, o): return np.less_equal(self.v, o.v if isinstance(o, Err) else o)


def em_of(f, *nodes):
    """em of f's result on nodes' values (Node or number), followed through f with Err:
    a float node brings its em, an int or bool node and a number are exact."""
    args = [Err(n.val, n.em) if isinstance(n, Node) and n.dtype in FLOATS else
            (np.asarray(n.val) if isinstance(n, Node) else n) for n in nodes]
    r = f(*args)
    return r.e if isinstance(r, Err) else np.zeros(np.shape(r))


class Node:
    def __init__(self, expr, val, dtype, mag, atom=False, prec=None, em=None):
        self.expr, self.val, self.dtype, self.mag, self.atom = expr, val, dtype, mag, atom
        # the lowest float precision that fed the value (ints and bools are exact: f64)
        self.prec = "f32" if dtype == "f32" else prec or "f64"
        # em: the per-element error bound; ints and bools are exact. A node made without
        # one gets the whole tree's magnitude, the loose bound of old.
        shape = np.shape(val)
        if dtype not in FLOATS:
            em = np.zeros(shape)
        elif em is None:
            em = np.full(shape, float(mag))
        self.em = np.array(np.broadcast_to(np.asarray(em, dtype=np.float64), shape))

    def paren(self):
        return self.expr if self.atom else f"({self.expr})"

    def like(self, expr, val, mag=None, em=None):
        """A node of the same dtype and precision (a copy of what em describes)."""
        return Node(expr, val, self.dtype, self.mag if mag is None else mag, prec=self.prec,
                    em=self.em if em is None else em)

    def view(self, expr, f):
        """The node f makes of this one's elements (a view, a gather, a copy): f moves
        the values and their em alike."""
        return Node(expr, f(self.val), self.dtype, self.mag, prec=self.prec, em=f(self.em))


def _prec(*nodes):
    return "f32" if any(n.prec == "f32" for n in nodes) else "f64"


def _erf(a):
    if isinstance(a, Err):  # slope 2 / sqrt(pi) * exp(-a^2)
        v = _erf(a.v)
        return Err(v, np.abs(v) + 2 / math.sqrt(math.pi) * np.exp(-a.v * a.v) * a.e)
    return np.vectorize(math.erf, otypes=[np.float64])(a)


def _mag(*vals):
    m = 1.0
    for v in vals:
        v = np.asarray(v, dtype=np.float64)
        if v.size:
            m = max(m, float(np.max(np.abs(v))))
    return m


def _near(x, y, mag):
    """Whether x and y (broadcast) come within 1e-3 of the magnitude anywhere: a
    comparison there could go either way in f32."""
    return bool(np.any(np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64)) < 1e-3 * mag))


def _softmax(v, axis):
    e = np.exp(v - np.max(v, axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _without(a, axis, j):
    """Along axis, the product of |a| over every position but j."""
    return np.prod(np.abs(np.delete(a, j, axis=axis)), axis=axis, keepdims=True)


def reduce_em(name, v, ea, axis, keep, out, ddof=0, p=2):
    """em of a reduction of v (em ea) over axis (an int, a tuple, or None: all): the
    inputs' errors carried by the reduction's slopes, plus the roundings of its partial
    results (a sum's partial sums are at most the sum of |terms|)."""
    v, ea = np.asarray(v, dtype=np.float64), np.asarray(ea, dtype=np.float64)
    red = dict(axis=axis, keepdims=True)
    m = v.size if axis is None else int(np.prod([v.shape[a] for a in np.atleast_1d(axis)]))
    av = np.abs(v)
    with np.errstate(all="ignore"):
        if name == "sum":
            e = np.sum(ea + av, **red)
        elif name == "mean":
            e = np.sum(ea + av, **red) / max(m, 1)
        elif name in ("amax", "amin", "max", "min"):  # the value picked is copied
            e = np.max(ea, **red)
        elif name == "prod":  # d prod = sum_j d v_j * prod_{i != j} v_i; each partial product rounded
            flat = v.reshape(-1) if axis is None else np.moveaxis(v, axis, -1)
            fe = ea.reshape(-1) if axis is None else np.moveaxis(ea, axis, -1)
            e = sum(_without(flat, -1, j) * (fe[..., j:j + 1] + np.abs(flat[..., j:j + 1]))
                    for j in range(flat.shape[-1]))
            e = e.reshape(()) if axis is None else np.moveaxis(e, -1, axis)
            e = e.reshape(np.shape(np.sum(v, **red)))
        elif name in ("var", "std"):
            mu = np.mean(v, **red)
            w = ea + av + np.abs(mu)  # the centred values' errors
            var = np.sum((v - mu) ** 2, **red) / max(m - ddof, 1)
            # (and the centred values' errors squared: equal values have variance 0 exactly,
            # computed from a rounded mean as about 1e-15; f32's atol per unit of em)
            e = (2 * np.sum(np.abs(v - mu) * w, **red) + np.sum((v - mu) ** 2, **red) +
                 TOL["f32"][1] * np.sum(w * w, **red)) / max(m - ddof, 1)
            if name == "std":
                e = e / (2 * np.sqrt(var)) + np.sqrt(var)
        elif name == "logsumexp":  # slopes softmax(v); the sum of exp(v - max) rounds relative to 1
            mx = np.max(v, **red)
            e = np.sum(_softmax(v, axis) * (ea + av + np.abs(mx)), **red) + np.abs(mx) + 1 + \
                np.log(np.sum(np.exp(v - mx), **red))
        elif p == 2:  # norm: slopes v / |v|
            n = np.sqrt(np.sum(v * v, **red))
            e = np.where(n > 0, np.sum(av * (ea + av), **red) / np.where(n > 0, n, 1), np.sum(ea, **red)) + n
        else:  # the 1-norm, a sum of |v|
            e = np.sum(ea + av, **red)
    e = np.nan_to_num(np.asarray(e, dtype=np.float64), nan=0.0, posinf=1e300)
    if not keep:
        e = np.squeeze(e, axis=tuple(range(v.ndim)) if axis is None else axis)
    return np.broadcast_to(e, np.shape(out))


def scan_em(name, v, ea, axis):
    """em of a scan of v (em ea) along axis, prefix by prefix as reduce_em."""
    v, ea = np.asarray(v, dtype=np.float64), np.asarray(ea, dtype=np.float64)
    if v.ndim == 0:
        return ea
    if name == "cumsum":
        return np.cumsum(ea + np.abs(v), axis=axis)
    if name in ("cummax", "cummin"):
        return np.maximum.accumulate(ea, axis=axis)
    vv, ee = np.moveaxis(v, axis, -1), np.moveaxis(ea, axis, -1)
    out = np.zeros_like(vv)
    with np.errstate(all="ignore"):
        if name == "cumprod":  # E_k = E_{k-1} |v_k| + |P_{k-1}| (e_k + |v_k|)
            run, prod = np.zeros(vv.shape[:-1]), np.ones(vv.shape[:-1])
            for k in range(vv.shape[-1]):
                run = run * np.abs(vv[..., k]) + np.abs(prod) * (ee[..., k] + np.abs(vv[..., k]))
                prod = prod * vv[..., k]
                out[..., k] = run
        else:  # logcumsumexp: each prefix a logsumexp
            for k in range(vv.shape[-1]):
                out[..., k] = reduce_em("logsumexp", vv[..., :k + 1], ee[..., :k + 1], -1, False, vv[..., k])
    return np.moveaxis(np.nan_to_num(out, nan=0.0, posinf=1e300), -1, axis)


def mm_em(a, b):
    """em of a @ b (Nodes): each operand's errors carried by |the other|, and the dot
    products' partial sums, at most |a| @ |b|."""
    aa, ab = np.abs(a.val.astype(np.float64)), np.abs(b.val.astype(np.float64))
    return np.matmul(aa, b.em) + np.matmul(a.em, ab) + np.matmul(aa, ab)


def _dims(d, nd, r):
    """dim d spelled as is or counted from the end."""
    return d - nd if nd and r.random() < 0.4 else d


class Program:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.seed = seed
        self.nprng = np.random.default_rng(seed)
        kind = self.r.random()
        self.dt = "f32" if kind < 0.62 else "f64" if kind < 0.77 else "i32" if kind < 0.9 else "i64"
        self.isint = self.dt in INTS
        self.params = []  # (name, dtype, value)
        self.lets = []  # statements, each a list of lines
        self.named = []  # the nodes bound to names, which later expressions may reuse
        self.defs = {}  # name: the text of the statements that bind it
        self.helpers = []  # the helper functions' source lines (hK, called by f)
        self.nodes = 0

    # --- leaves -----------------------------------------------------------
    def leaf(self, shape, dt):
        r = self.r
        shape = list(shape)
        nd = len(shape)
        # reuse a named line, or share an existing parameter, of the right dtype and shape now and then
        for n in self.named:
            if n.dtype == dt and list(np.shape(n.val)) == shape and r.random() < 0.3:
                return n
        for name, pdt, val in self.params:
            if pdt == dt and list(val.shape) == shape and r.random() < 0.3:
                return Node(name, self._f(val, dt), dt, _mag(val), True, em=0)
        lay = r.choice("ccts e") if nd else "c"
        if lay == " ":
            lay = "c"
        name = f"p{len(self.params)}"
        if lay == "t" and nd >= 2:
            perm = list(range(nd))
            r.shuffle(perm)
            decl = [0] * nd
            for i, p in enumerate(perm):
                decl[p] = shape[i]
            val = self._rand(decl, dt)
            expr = f"{name}.t()" if perm == [1, 0] and r.random() < 0.5 else f"{name}.permute({', '.join(map(str, perm))})"
            return self._param(name, dt, val, expr, np.transpose(val, perm))
        if lay == "s" and nd >= 1:
            steps = [r.choice([1, 2, 3]) for _ in shape]
            starts = [r.randrange(0, 2) for _ in shape]
            decl = [st + (n - 1) * sp + 1 + r.randrange(0, 2) for n, sp, st in zip(shape, steps, starts)]
            val = self._rand(decl, dt)
            idx = ", ".join(f"{st}:{st + (n - 1) * sp + 1}:{sp}" for n, sp, st in zip(shape, steps, starts))
            sl = tuple(slice(st, st + (n - 1) * sp + 1, sp) for n, sp, st in zip(shape, steps, starts))
            return self._param(name, dt, val, f"{name}[{idx}]", val[sl])
        if lay == "e" and nd >= 1 and any(s > 1 for s in shape):
            decl = [s if r.random() < 0.5 else 1 for s in shape]
            val = self._rand(decl, dt)
            return self._param(name, dt, val, f"{name}.expand({', '.join(map(str, shape))})",
                               np.broadcast_to(val, shape))
        val = self._rand(shape, dt)
        return self._param(name, dt, val, name, val, atom=True)

    def _rand(self, shape, dt):
        if dt == "bool":
            return self.nprng.random(tuple(shape)) < 0.5
        if dt in INTS:
            return self.nprng.integers(-3, 4, size=tuple(shape)).astype(np.int32 if dt == "i32" else np.int64)
        return rnd(self.nprng.uniform(-1, 1, size=tuple(shape)), dt)

    @staticmethod
    def _f(v, dt):
        return np.asarray(v).astype(bool if dt == "bool" else np.int64 if dt in INTS else np.float64)

    def _param(self, name, dt, val, expr, view, atom=False):
        self.params.append((name, dt, val))
        return Node(expr, self._f(view, dt), dt, _mag(val), atom, em=0)  # inputs are exact

    def index_param(self, shape, hi, dt="i64"):
        """A parameter of indices in [0, hi): made here, never by leaf(), so it stays in range."""
        name = f"p{len(self.params)}"
        val = self.nprng.integers(0, hi, size=tuple(shape)).astype(np.int64 if dt == "i64" else np.int32)
        self.params.append((name, dt, val))
        return name, val.astype(np.int64)

    def bind(self, n, lines=None):
        """Binds n to a new name (`tK = expr`, or the given statement lines, which assign
        the name); returns the named node, which later expressions may reuse."""
        name = f"t{len(self.lets)}"
        self.lets.append([f"{name} = {n.expr}"] if lines is None else [ln.format(t=name) for ln in lines])
        self.defs[name] = "\n".join(self.lets[-1])
        n = Node(name, n.val, n.dtype, n.mag, True, n.prec, em=n.em)
        self.named.append(n)
        return n

    def other(self, dt):
        """A dtype for an operand that feeds a node of dt through a cast or a comparison."""
        r = self.r
        if dt == "bool":
            return self.dt if self.dt != "bool" and r.random() < 0.7 else r.choice(NUMERIC)
        if dt in FLOATS:
            return r.choice([d for d in ("f32", "f64", "i32", "i64", "bool") if d != dt])
        return r.choice([d for d in ("i32", "i64", "bool") if d != dt])

    # --- inner nodes --------------------------------------------------------
    def gen(self, shape, depth, dt=None):
        dt = dt or self.dt
        self.nodes += 1
        r = self.r
        nd = len(shape)
        if depth <= 0 or self.nodes > 32 or r.random() < 0.08 or nd >= 7:  # (tdsl allows at most 8 dims)
            return self.leaf(shape, dt)
        if dt == "bool":
            choices = ["compare"] * 5 + ["logic"] * 2 + ["view"] * 2 + ["anyall", "cast", "join", "shape"]
        else:
            choices = ["unary"] * 3 + ["binary"] * 4 + ["view"] * 3 + ["shape", "reduce", "reduce", "cast", "where",
                                                                      "masked", "scan", "join", "gather", "loop",
                                                                      "inplace"]
            if nd >= 2:
                choices += ["tri"]
            if dt in FLOATS:
                choices += ["softmax", "norm"] + (["matmul"] * 2 if nd >= 1 else [])
            if dt == "i64":
                choices += ["arg"] * 2
            choices += ["helper", "helper", "seq", "scalar"]
        n = getattr(self, "g_" + r.choice(choices))(list(shape), depth, dt)
        assert n.dtype == dt and list(np.shape(n.val)) == list(shape), (n.expr, n.dtype, dt, np.shape(n.val), shape)
        assert n.em.shape == np.shape(n.val) and not np.any(n.em < 0) and not np.any(np.isnan(n.em)), n.expr
        v = np.asarray(n.val)
        if dt in FLOATS and (not np.all(np.isfinite(v)) or (v.size and np.max(np.abs(v)) > 1e12)) or \
                dt == "i32" and v.size and np.max(np.abs(v)) > I32_MAX or \
                dt == "i64" and v.size and np.max(np.abs(v)) > 2 ** 60:  # out of range: a leaf instead
            if n in self.named:  # (a name bound by a statement stays, unread)
                self.named.remove(n)
            return self.leaf(shape, dt)
        if r.random() < 0.15 and len(n.expr) > 8 and not n.atom:  # bind it to a name
            n = self.bind(n)
        return n

    def g_unary(self, shape, depth, dt):
        r = self.r
        a = self.gen(shape, depth - 1, dt)
        v, m = a.val, a.mag
        if dt in INTS:
            ops = [("-{p}", lambda v: -v), ("{p}.abs()", np.abs), ("{p} + 2", lambda v: v + 2),
                   ("{p} * 3", lambda v: v * 3), ("relu({a})", lambda v: np.maximum(v, 0)),
                   ("{p}.clamp(min=-2, max=5)", lambda v: np.clip(v, -2, 5)), ("~{p}", lambda v: -v - 1),
                   ("{p}.sign()", np.sign), ("{p} >> 1", lambda v: v >> 1), ("{p} & 6", lambda v: v & 6)]
            if m <= 1000:
                ops += [("square({a})", lambda v: v * v), ("{p} ** 2", lambda v: v * v)]
            if m <= 100:
                ops += [("{p}.pow(3)", lambda v: v ** 3), ("{p} << 2", lambda v: v << 2)]
        else:
            ops = [("-{p}", lambda v: -v), ("{p}.abs()", np.abs), ("tanh({a})", np.tanh),
                   ("{p}.sigmoid()", lambda v: 1 / (1 + np.exp(-v))), ("sin({a})", np.sin), ("{p}.cos()", np.cos),
                   ("relu({a})", lambda v: np.maximum(v, 0)), ("{p} * 0.5", lambda v: v * 0.5),
                   ("{p} + 1.25", lambda v: v + 1.25), ("{p} / 3", lambda v: v / 3),
                   ("sqrt({p}.abs() + 1)", lambda v: np.sqrt(np.abs(v) + 1)),
                   ("{p}.clamp(min=-0.5, max=0.75)", lambda v: np.clip(v, -0.5, 0.75)),
                   ("gelu({a})", lambda v: 0.5 * v * (1 + _erf(v / np.sqrt(2)))),
                   ("{p}.silu()", lambda v: v / (1 + np.exp(-v))),
                   ("torch.rsqrt({p}.abs() + 1)", lambda v: 1 / np.sqrt(np.abs(v) + 1)),
                   ("log({p}.abs() + 1)", lambda v: np.log(np.abs(v) + 1)),
                   ("({p}.abs() + 1).reciprocal()", lambda v: 1 / (np.abs(v) + 1)),
                   ("({p}.abs() + 0.5) ** 1.5", lambda v: (np.abs(v) + 0.5) ** 1.5),
                   ("({p}.abs() + 1) ** -1", lambda v: 1 / (np.abs(v) + 1))]
            if m <= 4:
                ops += [("exp({a})", np.exp), ("{p}.pow(3)", lambda v: v ** 3)]
            if m <= 10:
                ops += [("{p}.square()", lambda v: v * v), ("{p} ** 2", lambda v: v * v)]
        spell, f = r.choice(ops)
        out = f(v)
        return Node(spell.format(a=a.expr, p=a.paren()), out, dt, _mag(out, m), prec=a.prec, em=em_of(f, a))

    def _bshape(self, shape):
        """A shape that broadcasts to `shape`."""
        r = self.r
        s = [d if r.random() < 0.7 else 1 for d in shape]
        while s and r.random() < 0.25:
            s = s[1:]
        return s

    def _shapes2(self, shape):
        return (shape, self._bshape(shape)) if self.r.random() < 0.5 else (self._bshape(shape), shape)

    def g_binary(self, shape, depth, dt):
        r = self.r
        sa, sb = self._shapes2(shape)
        da = db = dt
        if r.random() < 0.3:  # mixed dtypes: one operand of a dtype that promotes to dt (a wider 0-d one may)
            o = r.choice(LOWER[dt] + [d for d in NUMERIC if CAT[d] == CAT[dt] and d != dt])
            da, db = (o, dt) if r.random() < 0.5 else (dt, o)
            zd = Node("", np.zeros(sa), da, 1), Node("", np.zeros(sb), db, 1)
            if result_type(*zd) != dt:
                da = db = dt
        intdiv = dt == "f32" and r.random() < 0.08  # true division of ints gives f32
        if intdiv:
            da, db = r.choice(INTS), r.choice(INTS)
        a, b = self.gen(sa, depth - 1, da), self.gen(sb, depth - 1, db)
        if intdiv:
            ops = [("{a} / ({b}.abs() + 1)", lambda x, y: x / (np.abs(y) + 1)),
                   ("torch.true_divide({a}, {b}.abs() + 1)", lambda x, y: x / (np.abs(y) + 1))]
        elif "bool" in (da, db):
            ops = [("{a} + {b}", np.add), ("{a} * {b}", np.multiply), ("torch.add({a}, {b})", np.add)]
        else:
            ops = [("{a} + {b}", np.add), ("{a} - {b}", np.subtract), ("{a} * {b}", np.multiply),
                   ("maximum({a}, {b})", np.maximum), ("{a}.minimum({b})", np.minimum),
                   ("torch.add({a}, {b})", np.add), ("{a}.sub({b})", np.subtract),
                   ("torch.mul({a}, {b})", np.multiply)]
            if b.mag < 1e6:  # alpha scales other: input + alpha * other, in the result dtype
                ops += [("torch.add({a}, {b}, alpha=2)", lambda x, y: x + 2 * y),
                        ("{a}.sub({b}, alpha=-3)", lambda x, y: x + 3 * y)]
                if dt in FLOATS:
                    ops += [("torch.sub({a}, {b}, alpha=0.5)", lambda x, y: x - 0.5 * y)]
            if dt in INTS:
                ops += [("{a} // ({b}.abs() + 1)", lambda x, y: np.floor_divide(x, np.abs(y) + 1)),
                        ("{a} % ({b}.abs() + 1)", lambda x, y: np.remainder(x, np.abs(y) + 1)),
                        ("{a} // -({b}.abs() + 1)", lambda x, y: np.floor_divide(x, -(np.abs(y) + 1))),
                        ("{a} % -({b}.abs() + 1)", lambda x, y: np.remainder(x, -(np.abs(y) + 1))),
                        ("torch.div({a}, -{b}.abs() - 1, rounding_mode='trunc')",
                         lambda x, y: np.trunc(x / (-np.abs(y) - 1)).astype(np.int64)),
                        ("torch.div({a}, {b}.abs() + 1, rounding_mode='floor')",
                         lambda x, y: np.floor_divide(x, np.abs(y) + 1)),
                        ("torch.fmod({a}, {b}.abs() + 1)", lambda x, y: np.fmod(x, np.abs(y) + 1)),
                        ("torch.remainder({a}, -{b}.abs() - 2)", lambda x, y: np.remainder(x, -np.abs(y) - 2)),
                        ("{a} & {b}", np.bitwise_and), ("{a} | {b}", np.bitwise_or), ("{a} ^ {b}", np.bitwise_xor),
                        ("where({a} > {b}, {a}, {b} * 2)", lambda x, y: np.where(x > y, x, y * 2))]
                if a.mag * b.mag > 1e6:
                    ops = [o for o in ops if "*" not in o[0]]
            else:
                ops += [("{a} / ({b}.abs() + 1)", lambda x, y: x / (np.abs(y) + 1))]
                if da in FLOATS:
                    ops += [("where({a} > 0, {a}, {b})", lambda x, y: np.where(x > 0, x, y) + 0 * y)]
                    if a.mag <= 10 and b.mag <= 3:
                        ops += [("({a}.abs() + 0.5) ** {b}", lambda x, y: (np.abs(x) + 0.5) ** y),
                                ("torch.pow({a}.abs() + 0.5, {b})", lambda x, y: (np.abs(x) + 0.5) ** y)]
        spell, f = r.choice(ops)
        if "where" in spell and dt in FLOATS and _near(a.val, 0, a.mag):  # the condition is discontinuous
            spell, f = "{a} + {b}", np.add
        out = np.broadcast_to(f(a.val, b.val), shape)
        out = np.array(out, dtype=np.int64 if dt in INTS else np.float64)
        em = em_of(f, a, b) if dt in FLOATS else 0
        return Node(spell.format(a=a.paren(), b=b.paren()), out, dt, _mag(out, a.mag, b.mag), prec=_prec(a, b), em=em)

    def g_view(self, shape, depth, dt):
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
            a = self.gen(src, depth - 1, dt)
            ni, nj = (i - nd if r.random() < 0.3 else i), j
            return a.view(f"{a.paren()}.transpose({ni}, {nj})", lambda v: np.swapaxes(v, i, j))
        if what == "permute":
            perm = list(range(nd))
            r.shuffle(perm)
            src = [0] * nd
            for k, p in enumerate(perm):
                src[p] = shape[k]
            a = self.gen(src, depth - 1, dt)
            return a.view(f"{a.paren()}.permute({', '.join(map(str, perm))})", lambda v: np.transpose(v, perm))
        if what == "slice":
            d = r.randrange(nd)
            step = r.choice([1, 2, 3])
            start = r.randrange(0, 3)
            n = shape[d]
            src = shape[:]
            src[d] = start + (n - 1) * step + 1 + r.randrange(0, 3)
            a = self.gen(src, depth - 1, dt)
            stop = start + (n - 1) * step + 1
            stop_s = str(stop) if r.random() < 0.6 else str(stop - src[d]) if stop < src[d] else ""
            idx = [":"] * d + [f"{start}:{stop_s}:{step}"]
            sl = tuple([slice(None)] * d + [slice(start, stop, step)])
            return a.view(f"{a.paren()}[{', '.join(idx)}]", lambda v: v[sl])
        if what == "narrow":
            d = r.randrange(nd)
            start = r.randrange(0, 3)
            src = shape[:]
            src[d] = shape[d] + start + r.randrange(0, 2)
            a = self.gen(src, depth - 1, dt)
            sl = tuple([slice(None)] * d + [slice(start, start + shape[d])])
            return a.view(f"{a.paren()}.narrow({d}, {start}, {shape[d]})", lambda v: v[sl])
        if what == "flip":
            d = r.randrange(nd)
            a = self.gen(shape, depth - 1, dt)
            return a.view(f"{a.paren()}.flip({d})", lambda v: np.flip(v, d))
        if what == "select":
            d = r.randrange(nd + 1)
            m = r.randrange(1, 4)
            i = r.randrange(-m, m)
            src = shape[:d] + [m] + shape[d:]
            a = self.gen(src, depth - 1, dt)
            if d == 0:
                return a.view(f"{a.paren()}[{i}]", lambda v: v[i])
            return a.view(f"{a.paren()}.select({d}, {i})", lambda v: np.take(v, i, axis=d))
        if what == "unsqueeze":
            ones = [k for k, s in enumerate(shape) if s == 1]
            if not ones:
                return self.g_view(shape, depth, dt) if nd else self.g_shape(shape, depth, dt)
            d = r.choice(ones)
            a = self.gen(shape[:d] + shape[d + 1:], depth - 1, dt)
            if r.random() < 0.3:
                return a.view(f"{a.paren()}[{':, ' * d}None]", lambda v: np.expand_dims(v, d))
            return a.view(f"{a.paren()}.unsqueeze({d})", lambda v: np.expand_dims(v, d))
        if what == "expand":
            big = [k for k, s in enumerate(shape) if s > 1]
            d = r.choice(big)
            src = shape[:d] + shape[d + 1:]
            a = self.gen(src, depth - 1, dt)
            spell = f"{a.paren()}.unsqueeze({d}).expand({', '.join(map(str, shape))})"
            if r.random() < 0.3:
                spell = f"{a.paren()}.unsqueeze({d}).expand({', '.join('-1' if k != d else str(s) for k, s in enumerate(shape))})"
            return a.view(spell, lambda v: np.broadcast_to(np.expand_dims(v, d), shape))
        # reshape from another shape with the same number of elements
        numel = int(np.prod(shape)) if shape else 1
        divs = [k for k in range(1, numel + 1) if numel % k == 0]
        k = r.choice(divs)
        src = [k, numel // k] if r.random() < 0.6 else [numel]
        a = self.gen(src, depth - 1, dt)
        tgt = ", ".join(map(str, shape)) if shape else ""
        if shape and r.random() < 0.3:
            j = r.randrange(len(shape))
            tgt = ", ".join("-1" if q == j else str(s) for q, s in enumerate(shape))
        spell = f"{a.paren()}.reshape({tgt})" if shape else f"{a.paren()}.reshape([])"
        return a.view(spell, lambda v: np.reshape(v, shape))

    def g_shape(self, shape, depth, dt):
        """The other shape ops: flatten, squeeze, contiguous().view, repeat, movedim,
        .T, .mT, clone, contiguous."""
        r = self.r
        nd = len(shape)
        opts = ["squeeze", "squeeze", "view", "copy"]
        if nd >= 1:
            opts += ["flatten", "flatten"]
        if 1 <= nd <= 4:  # tdsl builds a repeat with twice the dims, at most 8
            opts += ["repeat", "repeat"]
        if nd >= 2:
            opts += ["T", "movedim"]
        what = r.choice(opts)
        if what == "flatten":
            d = r.randrange(nd)
            p = r.choice([k for k in range(1, shape[d] + 1) if shape[d] % k == 0])
            src = shape[:d] + [p, shape[d] // p] + shape[d + 1:]
            a = self.gen(src, depth - 1, dt)
            if nd == 1 and r.random() < 0.5:
                spell = f"{a.paren()}.flatten()"
            elif r.random() < 0.5:
                spell = f"{a.paren()}.flatten({d}, {d + 1 - len(src) if r.random() < 0.5 else d + 1})"
            else:
                spell = f"torch.flatten({a.expr}, start_dim={d}, end_dim={d + 1})"
            return a.view(spell, lambda v: np.reshape(v, shape))
        if what == "squeeze":
            d = r.randrange(nd + 1)
            src = shape[:d] + [1] + shape[d:]
            a = self.gen(src, depth - 1, dt)
            if 1 not in shape and r.random() < 0.4:
                spell = f"{a.paren()}.squeeze()"
            else:
                spell = f"{a.paren()}.squeeze({_dims(d, len(src), r)})"
            return a.view(spell, lambda v: np.reshape(v, shape))
        if what == "view":
            numel = int(np.prod(shape)) if shape else 1
            k = r.choice([k for k in range(1, numel + 1) if numel % k == 0])
            src = r.choice([[k, numel // k], [numel], [numel // k, 1, k]])
            a = self.gen(src, depth - 1, dt)
            tgt = ", ".join(map(str, shape))
            if nd == 1 and r.random() < 0.5:
                tgt = "-1"
            spell = f"{a.paren()}.contiguous().view({tgt})" if nd else f"{a.paren()}.contiguous().view([])"
            return a.view(spell, lambda v: np.reshape(v, shape))
        if what == "repeat":
            reps = [r.choice([k for k in range(1, s + 1) if s % k == 0]) for s in shape]
            lead = 0
            while lead < nd and r.random() < 0.2:
                lead += 1
            src = [s // k for s, k in zip(shape, reps)][lead:]
            reps = shape[:lead] + reps[lead:]
            a = self.gen(src, depth - 1, dt)
            if r.random() < 0.3:
                return a.view(f"torch.tile({a.expr}, ({', '.join(map(str, reps))},))", lambda v: np.tile(v, reps))
            return a.view(f"{a.paren()}.repeat({', '.join(map(str, reps))})", lambda v: np.tile(v, reps))
        if what == "T":
            if r.random() < 0.5:
                a = self.gen(shape[::-1], depth - 1, dt)
                return a.view(f"{a.paren()}.T", np.transpose)
            a = self.gen(shape[:-2] + [shape[-1], shape[-2]], depth - 1, dt)
            return a.view(f"{a.paren()}.mT", lambda v: np.swapaxes(v, -1, -2))
        if what == "movedim":
            i, j = r.randrange(nd), r.randrange(nd)
            src = list(np.moveaxis(np.empty(shape), j, i).shape)
            a = self.gen(src, depth - 1, dt)
            return a.view(f"{a.paren()}.movedim({i}, {j})", lambda v: np.moveaxis(v, i, j))
        a = self.gen(shape, depth - 1, dt)
        return a.view(f"{a.paren()}.{r.choice(['clone()', 'contiguous()'])}", lambda v: v)

    def g_cast(self, shape, depth, dt):
        r = self.r
        sdt = self.other(dt)
        if CAT[sdt] > CAT[dt]:  # floats are never cast to ints or bools (the result is discontinuous)
            sdt = "i32" if dt == "bool" else "bool"
        a = self.gen(shape, depth - 1, sdt)
        v = a.val
        if dt == "i32" and a.mag > I32_MAX:
            return self.g_unary(shape, depth, dt) if dt != "bool" else self.leaf(shape, dt)
        if dt == "bool":
            out = v != 0
            spell = r.choice([f"{a.paren()}.{r.choice(CASTS['bool'])}", f"{a.paren()} != 0"])
        elif dt == "f32" and sdt in ("i32", "i64", "bool") and r.random() < 0.4:  # a Python float lifts ints to f32
            spell, f = r.choice([("{p} * 0.5", lambda v: v * 0.5), ("{p} + 1.5", lambda v: v + 1.5),
                                 ("{p} / 4", lambda v: v / 4)])
            out = f(v.astype(np.float64))
            spell = spell.format(p=a.paren())
        elif dt == "i64" and sdt == "bool" and r.random() < 0.4:  # a Python int lifts bools to i64
            out = v.astype(np.int64) + 2
            spell = f"{a.paren()} + 2"
        else:
            out = self._f(v, dt)
            if dt == "f32" and sdt == "f64":
                out = out.astype(np.float32).astype(np.float64)
            spell = f"{a.paren()}.{r.choice(CASTS[dt])}"
        # a conversion may round (f64 to f32, a large int to a float), as a lifting op does
        em = (a.em if sdt in FLOATS else 0) + np.abs(np.asarray(out, dtype=np.float64))
        return Node(spell, out, dt, _mag(out, a.mag), prec=a.prec, em=em)

    def g_compare(self, shape, depth, dt):
        r = self.r
        da = self.other("bool")
        db = da if r.random() < 0.7 else r.choice(NUMERIC)
        sa, sb = self._shapes2(shape)
        lit = r.random() < 0.25  # compared with a number
        if lit:
            a = self.gen(shape, depth - 1, da)
            c = r.choice(["0", "1", "-1"]) if da in INTS else r.choice(["0", "0.25", "-0.5"])
            b = Node(c, np.float64(c) if "." in c else np.int64(c), "f64" if "." in c else "i64", 1, True)
        else:
            a, b = self.gen(sa, depth - 1, da), self.gen(sb, depth - 1, db)
        exact = a.dtype in INTS and b.dtype in INTS
        ops = [("{a} < {b}", np.less), ("{a} <= {b}", np.less_equal), ("{a} > {b}", np.greater),
               ("{a} >= {b}", np.greater_equal), ("{a}.lt({b})", np.less), ("torch.gt({a}, {b})", np.greater),
               ("{a}.ge({b})", np.greater_equal), ("torch.le({a}, {b})", np.less_equal)]
        if exact:
            ops += [("{a} == {b}", np.equal), ("{a} != {b}", np.not_equal), ("{a}.eq({b})", np.equal),
                    ("torch.ne({a}, {b})", np.not_equal)]
        elif _near(a.val, b.val, max(a.mag, b.mag)):  # near a tie: the answer could go either way in f32
            return self.leaf(shape, "bool")
        spell, f = r.choice(ops)
        out = np.array(np.broadcast_to(f(a.val, b.val), shape))
        return Node(spell.format(a=a.paren(), b=b.paren()), out, "bool", 1)

    def g_logic(self, shape, depth, dt):
        r = self.r
        sa, sb = self._shapes2(shape)
        if r.random() < 0.25:
            a = self.gen(shape, depth - 1, "bool")
            spell = r.choice(["~{p}", "logical_not({a})", "{p}.logical_not()"])
            return Node(spell.format(a=a.expr, p=a.paren()), ~a.val, "bool", 1)
        a, b = self.gen(sa, depth - 1, "bool"), self.gen(sb, depth - 1, "bool")
        ops = [("{a} & {b}", np.logical_and), ("{a} | {b}", np.logical_or), ("{a} ^ {b}", np.logical_xor),
               ("torch.logical_and({a}, {b})", np.logical_and), ("{a}.logical_or({b})", np.logical_or),
               ("logical_xor({a}, {b})", np.logical_xor)]
        spell, f = r.choice(ops)
        out = np.array(np.broadcast_to(f(a.val, b.val), shape))
        return Node(spell.format(a=a.paren(), b=b.paren()), out, "bool", 1)

    def _rdim(self, shape):
        """(d, keep, m, src): a reduced dim d of size m at which src, reduced, gives shape."""
        r = self.r
        nd = len(shape)
        d = r.randrange(nd + 1)
        keep = False
        if nd and shape[min(d, nd - 1)] == 1 and r.random() < 0.5:
            d, keep = min(d, nd - 1), True
        m = r.randrange(1, 6) if r.random() < 0.95 else r.randrange(6, 40)  # now and then a long one
        src = shape[:d] + [m] + (shape[d + 1:] if keep else shape[d:])
        return d, keep, m, src

    def g_anyall(self, shape, depth, dt):
        r = self.r
        if not shape and r.random() < 0.5:
            a = self.gen([r.randrange(1, 5) for _ in range(r.randrange(1, 4))], depth - 1, "bool")
            name = r.choice(["any", "all"])
            out = np.any(a.val) if name == "any" else np.all(a.val)
            return Node(f"{a.paren()}.{name}()" if r.random() < 0.5 else f"torch.{name}({a.expr})", out, "bool", 1)
        d, keep, m, src = self._rdim(shape)
        a = self.gen(src, depth - 1, "bool")
        name = r.choice(["any", "all"])
        out = (np.any if name == "any" else np.all)(a.val, axis=d, keepdims=keep)
        dd = _dims(d, len(src), r)
        kw = ", keepdim=True" if keep else ""
        spell = f"{a.paren()}.{name}({dd}{kw})" if r.random() < 0.6 else f"torch.{name}({a.expr}, dim={dd}{kw})"
        return Node(spell, np.array(out), "bool", 1)

    def g_where(self, shape, depth, dt):
        r = self.r
        c = self.gen(self._bshape(shape), depth - 1, "bool")
        sa, sb = self._shapes2(shape)
        if r.random() < 0.25:  # a number for b
            lit = r.choice(["0", "2", "-1"]) if dt in INTS else r.choice(["0.0", "1.5", "-0.25"])
            a = self.gen(shape, depth - 1, dt)
            out = np.where(c.val, a.val, float(lit) if dt in FLOATS else int(lit))
            spell = f"torch.where({c.expr}, {a.expr}, {lit})"
            return Node(spell, np.array(out, dtype=a.val.dtype), dt, _mag(out, a.mag), prec=a.prec,
                        em=np.where(c.val, a.em, 0))
        a = self.gen(sa, depth - 1, dt)
        if r.random() < 0.2 and result_type(a, Node("", np.zeros(sb), LOWER[dt][0], 1)) == dt:
            b = self.gen(sb, depth - 1, LOWER[dt][0])  # where promotes its two values as + does
        else:
            b = self.gen(sb, depth - 1, dt)
        out = np.where(c.val, a.val, b.val)
        spell = r.choice(["where({c}, {a}, {b})", "torch.where({c}, {a}, {b})", "{pa}.where({c}, {b})"])
        spell = spell.format(c=c.expr, a=a.expr, b=b.expr, pa=a.paren())
        # (an int b converted to dt may round)
        eb = b.em if b.dtype in FLOATS else np.abs(b.val.astype(np.float64)) * (dt in FLOATS)
        return Node(spell, np.array(np.broadcast_to(out, shape)), dt, _mag(out, a.mag, b.mag), prec=_prec(a, b),
                    em=np.where(c.val, a.em, eb))

    def g_masked(self, shape, depth, dt):
        r = self.r
        a = self.gen(shape, depth - 1, dt)
        mk = self.gen(self._bshape(shape), depth - 1, "bool")
        lit = r.choice(["0", "5", "-1"]) if dt in INTS else r.choice(["0.0", "-1.5", "2.0", "-0.25"])
        v = int(lit) if dt in INTS else float(lit)
        out = np.where(mk.val, v, a.val).astype(a.val.dtype)
        spell = r.choice(["{p}.masked_fill({m}, {v})", "torch.masked_fill({a}, {m}, {v})",
                          "{p}.masked_fill({m}, value={v})"])
        return a.like(spell.format(p=a.paren(), a=a.expr, m=mk.expr, v=lit), out, _mag(out, a.mag),
                      em=np.where(mk.val, 0.0, a.em))

    def g_reduce(self, shape, depth, dt):
        r = self.r
        nd = len(shape)
        if dt in FLOATS:
            names = ["sum", "sum", "amax", "amin", "mean", "mean", "logsumexp", "var", "std", "prod", "norm", "max",
                     "min"]
        elif dt == "i64":
            names = ["sum", "sum", "sum", "prod", "amax", "amin", "max", "min"]
        else:
            names = ["amax", "amin", "max", "min"]
        name = r.choice(names)
        sdt = dt
        if dt == "i64" and name in ("sum", "prod"):  # sum and prod of ints (and sum of bools) give i64
            sdt = r.choice(["i32", "i64", "bool"] if name == "sum" else ["i32", "i64"])
        full = nd == 0 and r.random() < 0.5
        multi = not full and nd <= 4 and name in ("sum", "mean", "amax", "amin", "var", "std", "logsumexp") and \
            r.random() < 0.15
        if full:  # reduce everything
            src = [r.randrange(1, 5) for _ in range(r.randrange(1, 4))]
            d, keep, m = None, False, int(np.prod(src))
        elif multi:  # two dims, as a list or a tuple
            d = tuple(sorted(r.sample(range(nd + 2), 2)))
            src, keep = shape[:], False
            for q in d:
                src.insert(q, r.randrange(1, 5))
            m = src[d[0]] * src[d[1]]
        else:
            d, keep, m, src = self._rdim(shape)
        a = self.gen(src, depth - 1, sdt)
        v = a.val.astype(np.int64) if sdt == "bool" else a.val
        # keep away from what f32 cannot answer well (or at all): fall back to sum
        if name == "prod" and a.mag ** m > (1e4 if dt in FLOATS else 1e12):
            name = "sum"
        if name == "logsumexp" and (a.mag > 30 or full):
            name = "sum"
        if name in ("var", "std") and m == 1:
            name = "mean"
        if name == "std" and np.min(np.var(v, axis=d, ddof=1)) < 1e-4 * a.mag ** 2:
            name = "var"
        unb = name in ("var", "std") and r.random() < 0.3  # unbiased=False, or correction=0
        if name in ("sum", "mean", "prod", "amax", "amin", "max", "min"):
            f = {"sum": np.sum, "mean": np.mean, "prod": np.prod, "amax": np.amax, "amin": np.amin, "max": np.amax,
                 "min": np.amin}[name]
            out = f(v, axis=d, keepdims=keep)
        elif name in ("var", "std"):
            out = (np.var if name == "var" else np.std)(v, axis=d, keepdims=keep, ddof=0 if unb else 1)
        elif name == "logsumexp":
            out = np.log(np.sum(np.exp(v), axis=d, keepdims=keep))
        else:
            p = r.choice([2, 2, 1])
            out = np.sqrt(np.sum(v * v, axis=d, keepdims=keep)) if p == 2 else np.sum(np.abs(v), axis=d, keepdims=keep)
        out = np.array(out, dtype=np.float64 if dt in FLOATS else np.int64)
        mag = _mag(out, a.mag) * (m if name in ("sum", "var", "norm") else 1)
        if name == "prod":
            mag = max(mag, a.mag ** m)
        em = reduce_em(name, v, a.em, d, keep, out, ddof=0 if unb else 1, p=p if name == "norm" else 2) \
            if dt in FLOATS else 0
        if full:
            if name == "norm":
                spell = f"{a.paren()}.norm()" if p == 2 else f"torch.norm({a.expr}, 1)"
            elif name in ("var", "std") and unb:
                spell = f"{a.paren()}.{name}(unbiased=False)"
            else:
                spell = f"{a.paren()}.{name}()" if r.random() < 0.5 else f"torch.{name}({a.expr})"
            return Node(spell, out, dt, mag, prec=a.prec, em=em)
        if multi:
            q = [_dims(k, len(src), r) for k in d]
            dd = f"[{q[0]}, {q[1]}]" if r.random() < 0.5 else f"({q[0]}, {q[1]})"
        else:
            dd = _dims(d, len(src), r)
        kw = ", keepdim=true" if keep else ""
        if name in ("max", "min"):  # the values of the (values, indices) pair
            spell = r.choice([f"{a.paren()}.{name}({dd}{kw}).values", f"torch.{name}({a.expr}, {dd}{kw})[0]",
                              f"{a.paren()}.{name}(dim={dd}{kw})[0]"])
        elif name == "prod":
            spell = r.choice([f"{a.paren()}.prod({dd}{kw})", f"torch.prod({a.expr}, {dd}{kw})"])
        elif name == "norm":
            spell = r.choice([f"{a.paren()}.norm(dim={dd}{kw})", f"torch.norm({a.expr}, 2, {dd}{kw})"]) if p == 2 \
                else r.choice([f"{a.paren()}.norm(p=1, dim={dd}{kw})", f"torch.norm({a.expr}, 1, {dd}{kw})"])
        else:
            if unb:
                kw += r.choice([", unbiased=False", ", correction=0"])
            spell = f"{a.paren()}.{name}({dd}{kw})" if r.random() < 0.5 else f"{name}({a.expr}, {dd}{kw})"
            if r.random() < 0.3 and name not in ("var", "std") and not multi:
                spell = f"{name}({a.expr}, [{dd}]{kw})"
        return Node(spell, out, dt, mag, prec=a.prec, em=em)

    def g_scan(self, shape, depth, dt):
        r = self.r
        nd = len(shape)
        d = r.randrange(nd) if nd else 0
        m = shape[d] if nd else 1
        names = ["cumsum", "cumsum", "cumprod", "cummax", "cummin"] + (["logcumsumexp"] if dt in FLOATS else [])
        name = r.choice(names)
        sdt = dt
        if dt == "i64" and name in ("cumsum", "cumprod"):  # scans of ints and bools give i64
            sdt = r.choice(["i32", "i64", "bool"])
        a = self.gen(shape, depth - 1, sdt)
        v = a.val.astype(np.int64) if sdt == "bool" else a.val
        if name == "cumprod" and a.mag ** m > (1e4 if dt in FLOATS else 1e12):
            name = "cumsum"
        if name == "logcumsumexp" and a.mag > 30:
            name = "cumsum"
        dd = _dims(d, nd, r) if nd else r.choice([0, -1])
        if not nd:
            out = v
        elif name == "cumsum":
            out = np.cumsum(v, axis=d)
        elif name == "cumprod":
            out = np.cumprod(v, axis=d)
        elif name == "cummax":
            out = np.maximum.accumulate(v, axis=d)
        elif name == "cummin":
            out = np.minimum.accumulate(v, axis=d)
        else:
            out = np.logaddexp.accumulate(v, axis=d)
        out = np.array(out, dtype=np.float64 if dt in FLOATS else np.int64)
        if name in ("cummax", "cummin"):
            spell = r.choice([f"{a.paren()}.{name}({dd}).values", f"torch.{name}({a.expr}, dim={dd})[0]"])
        elif name == "logcumsumexp":
            spell = f"torch.logcumsumexp({a.expr}, {dd})"
        elif dt == "i32":  # the int scans give i64: dtype= keeps i32
            spell = f"{a.paren()}.{name}({dd}, dtype=torch.int32)"
        else:
            spell = r.choice([f"{a.paren()}.{name}({dd})", f"torch.{name}({a.expr}, dim={dd})",
                              f"{name}({a.expr}, {dd})"])
        mag = _mag(out, a.mag) * (m if name == "cumsum" else 1)
        if name == "cumprod":
            mag = max(mag, a.mag ** m)
        return Node(spell, out, dt, mag, prec=a.prec, em=scan_em(name, v, a.em, d) if dt in FLOATS else 0)

    def g_arg(self, shape, depth, dt):
        """argmax/argmin (i64) of floats without near ties, or of ints (the first of equal values)."""
        r = self.r
        sdt = self.dt if self.dt in NUMERIC and r.random() < 0.7 else r.choice(NUMERIC)
        name = r.choice(["argmax", "argmin"])
        if not shape and r.random() < 0.5:
            a = self.gen([r.randrange(1, 5) for _ in range(r.randrange(1, 4))], depth - 1, sdt)
            d, keep, src = None, False, list(np.shape(a.val))
        else:
            d, keep, _, src = self._rdim(shape)
            a = self.gen(src, depth - 1, sdt)
        v = a.val if name == "argmax" else -a.val
        if sdt in FLOATS:
            vv = np.reshape(v, -1) if d is None else np.moveaxis(v, d, -1)
            if vv.shape[-1] > 1:
                s = np.sort(vv, axis=-1)
                if np.any(s[..., -1] - s[..., -2] < 1e-3 * a.mag):  # a near tie: either index could come out
                    return self.leaf(shape, dt)
        out = np.argmax(v, axis=d)
        if keep:
            out = np.expand_dims(out, d)
        if d is None:
            spell = f"{a.paren()}.{name}()" if r.random() < 0.5 else f"torch.{name}({a.expr})"
            return Node(spell, np.array(out, dtype=np.int64), dt, _mag(out))
        dd = _dims(d, len(src), r)
        kw = ", keepdim=True" if keep else ""
        mm = "max" if name == "argmax" else "min"
        spell = r.choice([f"{a.paren()}.{name}({dd}{kw})", f"torch.{name}({a.expr}, dim={dd}{kw})",
                          f"{a.paren()}.{mm}({dd}{kw}).indices", f"torch.{mm}({a.expr}, {dd}{kw})[1]"])
        return Node(spell, np.array(out, dtype=np.int64), dt, _mag(out))

    def g_softmax(self, shape, depth, dt):
        if not shape:
            return self.g_unary(shape, depth, dt)
        r = self.r
        a = self.gen(shape, depth - 1, dt)
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
        spell = r.choice([f"{name}({a.expr}, {dd})", f"{a.paren()}.{name}(dim={dd})", f"F.{name}({a.expr}, dim={dd})",
                          f"torch.{name}({a.expr}, {dd})"])
        # slopes: softmax p_i (delta_ij - p_j), log_softmax delta_ij - p_j, on the centred values'
        # errors w; the sum of the exps rounds relative to its length
        pr = e / e.sum(axis=d, keepdims=True)
        w = a.em + np.abs(v) + np.abs(mx)
        pw = np.sum(pr * w, axis=d, keepdims=True)
        em = pr * (w + pw + shape[d]) if name == "softmax" else w + pw + shape[d] + np.abs(out)
        return Node(spell, out, dt, _mag(out, a.mag), prec=a.prec, em=em)

    def g_norm(self, shape, depth, dt):
        """layer_norm, rms_norm, normalize and the hand-written forms, over the last dim
        (or two), where the rows' scale is not near zero."""
        r = self.r
        nd = len(shape)
        if not nd:
            return self.g_unary(shape, depth, dt)
        kind = r.choice(["ln", "ln", "lnhand", "rms", "rmshand", "normalize"])
        nn = 2 if nd >= 2 and kind in ("ln", "rms") and r.random() < 0.3 else 1
        ax = tuple(range(nd - nn, nd))
        nsh = shape[nd - nn:]
        a = self.gen(shape, depth - 1, dt)
        v = a.val
        mu = v.mean(axis=ax, keepdims=True)
        var = ((v - mu) ** 2).mean(axis=ax, keepdims=True)
        ms = (v * v).mean(axis=ax, keepdims=True)
        if kind in ("ln", "lnhand") and int(np.prod(nsh)) > 1 and np.min(var) < 1e-2 * a.mag ** 2 or \
                kind not in ("ln", "lnhand") and np.min(ms) < 1e-2 * a.mag ** 2:
            return self.g_unary(shape, depth, dt)
        w = self.leaf(nsh, dt) if r.random() < 0.6 else None
        b = self.leaf(nsh, dt) if kind == "ln" and r.random() < 0.6 else None
        dims = f"({', '.join(map(str, nsh))},)"
        if kind in ("lnhand", "rmshand") and not a.atom:  # read three times
            a = self.bind(a)
        p = a.paren()
        n_el = int(np.prod(nsh))
        # den: the normalizer; cen: what it divides (centred for ln); wv: cen's errors
        den, cen, wv = np.sqrt(var + 1e-5), v - mu, a.em + np.abs(v) + np.abs(mu)
        if kind in ("rms", "rmshand", "normalize"):
            cen, wv = v, a.em + np.abs(v)
        if kind == "ln":
            out = (v - mu) / np.sqrt(var + 1e-5)
            args = [a.expr, dims] + ([f"weight={w.expr}"] if w else []) + ([f"bias={b.expr}"] if b else [])
            if r.random() < 0.5:
                args.append("eps=1e-05")
            spell = f"F.layer_norm({', '.join(args)})"
        elif kind == "lnhand":
            out = (v - mu) / np.sqrt(var + 1e-5)
            spell = f"({p} - {p}.mean(-1, keepdim=True)) / torch.sqrt({p}.var(-1, keepdim=True, unbiased=False) + 1e-5)"
        elif kind == "rms":
            eps = 1e-5 if r.random() < 0.6 else None
            den = np.sqrt(ms + (eps if eps else float(np.finfo(np.float32 if dt == "f32" else np.float64).eps)))
            out = v / den
            spell = f"F.rms_norm({a.expr}, {dims}" + (f", {w.expr}" if w else "") + (", eps=1e-05)" if eps else ")")
        elif kind == "rmshand":
            den = np.sqrt(ms + 1e-6)
            out = v / den
            spell = f"{p} * torch.rsqrt({p}.pow(2).mean(-1, keepdim=True) + 1e-6)"
        else:
            w = None
            den = np.maximum(np.sqrt(ms * nsh[-1]), 1e-12)
            out = v / den
            spell = f"F.normalize({a.expr}, dim=-1)"
        if w and kind != "ln":
            spell = f"{spell} * {w.paren()}" if kind != "rms" else spell
        # d out_i = d cen_i / den - out_i (cen . d cen) / (k den^2), k = n (mean) or 1 (normalize: a
        # sum); a centred form's d cen_i also holds the mean's error; the statistics round per element
        mw = wv.mean(axis=ax, keepdims=True) if kind in ("ln", "lnhand") else 0
        if kind in ("ln", "lnhand") and n_el == 1:  # one element is its own mean: x - mean is exactly 0
            wv = mw = 0
        k = 1 if kind == "normalize" else n_el
        em = (wv + mw) / den + np.abs(out) * np.sum(np.abs(cen) * (wv + mw), axis=ax, keepdims=True) / (k * den * den) \
            + np.abs(out) * (n_el + 1)
        if w:
            em = em * np.abs(w.val) + np.abs(out) * w.em + np.abs(out * w.val)
            out = out * w.val
        if b:
            out = out + b.val
            em = em + b.em + np.abs(out)
        return Node(spell, out, dt, _mag(out, a.mag) * (w.mag if w else 1), prec=_prec(*[n for n in (a, w, b) if n]),
                    em=em)

    def g_matmul(self, shape, depth, dt, k=None):
        r = self.r
        nd = len(shape)
        if k is None:  # the inner dim: mostly short, now and then long
            k = r.randrange(1, 9) if r.random() < 0.9 else r.randrange(9, 49)
        if nd == 1:
            form = r.random()
            if form < 0.35:
                a, b = self.gen([k], depth - 1, dt), self.gen([k, shape[0]], depth - 1, dt)
            elif form < 0.7:
                a, b = self.gen([shape[0], k], depth - 1, dt), self.gen([k], depth - 1, dt)
            else:
                return self._linear(shape, depth, dt, k)
        elif nd == 0:
            a, b = self.gen([k], depth - 1, dt), self.gen([k], depth - 1, dt)
        else:
            batch = shape[:-2]
            form = r.choice(["plain", "plain", "wt", "linear"] + (["bmm"] if nd == 3 else ["mm"] if nd == 2 else []))
            if form == "linear":
                return self._linear(shape, depth, dt, k)
            if form == "wt":  # nn.Linear's layout: x @ w.t()
                a, w = self.gen(batch + [shape[-2], k], depth - 1, dt), self.gen([shape[-1], k], depth - 1, dt)
                b = w.view(r.choice(["{p}.t()", "{p}.transpose(0, 1)", "{p}.T"]).format(p=w.paren()), np.transpose)
            elif form == "bmm":
                a = self._maybe_t(shape[:1] + [shape[1], k], depth, dt)
                b = self._maybe_t(shape[:1] + [k, shape[2]], depth, dt)
                out = np.matmul(a.val, b.val)
                spell = f"torch.bmm({a.expr}, {b.expr})" if r.random() < 0.6 else f"{a.paren()}.bmm({b.expr})"
                return Node(spell, out, dt, _mag(out, a.mag * b.mag * k), prec=_prec(a, b), em=mm_em(a, b))
            elif form == "mm":
                a, b = self._maybe_t([shape[0], k], depth, dt), self._maybe_t([k, shape[1]], depth, dt)
                out = np.matmul(a.val, b.val)
                spell = f"torch.mm({a.expr}, {b.expr})" if r.random() < 0.6 else f"{a.paren()}.mm({b.expr})"
                return Node(spell, out, dt, _mag(out, a.mag * b.mag * k), prec=_prec(a, b), em=mm_em(a, b))
            else:
                ba = bb = batch
                if batch and r.random() < 0.4:  # broadcast batch dims
                    ba, bb = r.choice([(batch, []), ([], batch), (batch, [1] + batch[1:]), ([1] + batch[1:], batch),
                                       (batch[1:], batch)])
                a = self.gen(ba + [shape[-2], k], depth - 1, dt)
                b = self.gen(bb + [k, shape[-1]], depth - 1, dt)
        out = np.matmul(a.val, b.val)
        spell = f"{a.paren()} @ {b.paren()}" if r.random() < 0.7 else f"matmul({a.expr}, {b.expr})"
        na, nb = np.ndim(a.val), np.ndim(b.val)
        if na >= 1 and nb >= 1 and np.shape(a.val)[:-2] == np.shape(b.val)[:-2] and r.random() < 0.25:
            # the same product as torch.einsum writes it (labels of batch dims, then i, j, k)
            la = "bcd"[:max(na - 2, 0)] + ("i" if na >= 2 else "") + "j"
            lb = "bcd"[:max(nb - 2, 0)] + "j" + ("k" if nb >= 2 else "")
            lo = "bcd"[:max(na - 2, 0)] + ("i" if na >= 2 else "") + ("k" if nb >= 2 else "")
            spell = f"torch.einsum('{la},{lb}->{lo}', {a.expr}, {b.expr})"
        return Node(spell, out, dt, _mag(out, a.mag * b.mag * k), prec=_prec(a, b), em=mm_em(a, b))

    def _maybe_t(self, shape, depth, dt):
        """An operand of shape, half the time the transpose of its last two dims."""
        r = self.r
        if r.random() < 0.5:
            return self.gen(shape, depth - 1, dt)
        a = self.gen(shape[:-2] + [shape[-1], shape[-2]], depth - 1, dt)
        spell = r.choice(["{p}.transpose(-1, -2)", "{p}.mT"] +
                         (["{p}.transpose(1, 2)"] if len(shape) == 3 else ["{p}.t()"]))
        return a.view(spell.format(p=a.paren()), lambda v: np.swapaxes(v, -1, -2))

    def _linear(self, shape, depth, dt, k):
        """F.linear(x, w, bias): x @ w.t() + bias."""
        r = self.r
        x, w = self.gen(shape[:-1] + [k], depth - 1, dt), self.gen([shape[-1], k], depth - 1, dt)
        out = np.matmul(x.val, w.val.T)
        em = mm_em(x, w.view("", np.transpose))
        mag = x.mag * w.mag * k
        args = [x.expr, w.expr]
        kids = [x, w]
        if r.random() < 0.6:
            b = self.gen(shape[-1:], depth - 1, dt)
            out = out + b.val
            em = em + b.em + np.abs(out)
            mag += b.mag
            args.append(r.choice(["{e}", "bias={e}"]).format(e=b.expr))
            kids.append(b)
        return Node(f"F.linear({', '.join(args)})", out, dt, _mag(out, mag), prec=_prec(*kids), em=em)

    def g_join(self, shape, depth, dt):
        r = self.r
        nd = len(shape)
        opts = (["cat", "cat"] if any(s >= 2 for s in shape) else []) + \
            (["stack", "split", "chunk", "unpack"] if nd else [])
        if not opts:
            return self.gen(shape, depth - 1, dt)
        what = r.choice(opts)
        if what == "cat":
            d = r.choice([k for k, s in enumerate(shape) if s >= 2])
            cuts = sorted(r.sample(range(1, shape[d]), min(r.choice([1, 2]), shape[d] - 1)))
            sizes = [b - a for a, b in zip([0] + cuts, cuts + [shape[d]])]
            # cat promotes its pieces: now and then one of a lower dtype
            pdts = [dt] * len(sizes)
            if dt != "bool" and r.random() < 0.2:
                pdts[r.randrange(len(sizes))] = r.choice(LOWER[dt])
            parts = [self.gen(shape[:d] + [s] + shape[d + 1:], depth - 1, pt) for s, pt in zip(sizes, pdts)]
            out = self._f(np.concatenate([p.val for p in parts], axis=d), dt)
            # (a lower dtype's piece may round when converted)
            em = np.concatenate([p.em if p.dtype in FLOATS else np.abs(p.val.astype(np.float64)) * (dt in FLOATS)
                                 for p in parts], axis=d)
            lst = ", ".join(p.expr for p in parts)
            dd = _dims(d, nd, r)
            spell = r.choice([f"torch.cat([{lst}], dim={dd})", f"cat(({lst}), {dd})", f"torch.cat([{lst}], {dd})"])
            return Node(spell, out, dt, _mag(out, *[p.mag for p in parts]), prec=_prec(*parts), em=em)
        d = r.randrange(nd)
        if what == "stack" and shape[d] > 8:
            # one generated piece per element of d: few, to keep programs small (test_limits.py stacks hundreds)
            what = "split"
        dd = _dims(d, nd, r)
        if what == "stack":
            parts = [self.gen(shape[:d] + shape[d + 1:], depth - 1, dt) for _ in range(shape[d])]
            out = np.stack([p.val for p in parts], axis=d)
            lst = ", ".join(p.expr for p in parts)
            tup = f"({lst},)" if len(parts) == 1 else f"({lst})"
            spell = r.choice([f"torch.stack([{lst}], dim={dd})", f"stack({tup}, {dd})"])
            return Node(spell, out, dt, _mag(out, *[p.mag for p in parts]), prec=_prec(*parts),
                        em=np.stack([p.em for p in parts], axis=d))
        # a piece of a split or a chunk: the source is longer along d
        s = shape[d]
        n = r.randrange(1, 4) if what != "unpack" else r.randrange(2, 4)
        k = r.randrange(n)
        if what == "split" and r.random() < 0.4:  # a list of sizes
            sizes = [r.randrange(1, 4) for _ in range(n)]
            sizes[k] = s
            call = f"split([{', '.join(map(str, sizes))}], {dd})"
        elif what == "split":
            sizes = [s] * n + ([r.randrange(1, s)] if s > 1 and r.random() < 0.5 else [])
            call = r.choice([f"split({s}, {dd})", f"split({s}, dim={dd})"])
        else:
            sizes = [s] * n
            call = f"chunk({n}, {dd})"
        src = shape[:d] + [sum(sizes)] + shape[d + 1:]
        a = self.gen(src, depth - 1, dt)
        offs = np.cumsum([0] + sizes)
        pieces = [(lambda i: lambda v: np.take(v, range(offs[i], offs[i + 1]), axis=d))(i) for i in range(len(sizes))]
        if what == "unpack":  # every piece named, the others left for later lines to reuse
            base = f"t{len(self.lets)}"
            names = [f"{base}{'abcd'[i]}" for i in range(len(sizes))]
            self.lets.append([f"{', '.join(names)} = {a.paren()}.{call}"])
            self.defs.update((nm, self.lets[-1][0]) for nm in names)
            nodes = [a.view(nm, pv) for nm, pv in zip(names, pieces)]
            for q in nodes:
                q.atom = True
                self.named.append(q)
            return nodes[k]
        kk = k - len(sizes) if r.random() < 0.3 else k
        if r.random() < 0.6:
            spell = f"{a.paren()}.{call}[{kk}]"
        else:  # torch.split(x, ...)
            spell = f"torch.{call.replace('(', f'({a.expr}, ', 1)}[{kk}]"
        return a.view(spell, pieces[k])

    def g_gather(self, shape, depth, dt):
        """index_select, advanced indexing and gather with index parameters in range."""
        r = self.r
        nd = len(shape)
        if not nd:
            return self.g_view(shape, depth, dt)
        d = r.randrange(nd)
        m = r.randrange(1, 6)
        src = shape[:]
        src[d] = m
        a = self.gen(src, depth - 1, dt)
        dd = _dims(d, nd, r)
        if r.random() < 0.5:
            idt = "i32" if r.random() < 0.2 else "i64"
            iname, idx = self.index_param([shape[d]], m, idt)
            opts = [f"{a.paren()}.index_select({dd}, {iname})", f"torch.index_select({a.expr}, {dd}, {iname})"]
            if idt == "i64" and d <= 1:
                opts.append(f"{a.paren()}[{':, ' * d}{iname}]")
            return a.view(r.choice(opts), lambda v: np.take(v, idx, axis=d))
        iname, idx = self.index_param(shape, m)
        spell = r.choice([f"{a.paren()}.gather({dd}, {iname})", f"torch.gather({a.expr}, {dd}, {iname})",
                          f"torch.take_along_dim({a.expr}, {iname}, dim={dd})"])
        return a.view(spell, lambda v: np.take_along_axis(v, idx, axis=d))

    def g_tri(self, shape, depth, dt):
        r = self.r
        a = self.gen(shape, depth - 1, dt)
        k = r.randrange(-2, 3)
        name = r.choice(["tril", "triu"])
        spell = r.choice([f"torch.{name}({a.expr}, {k})", f"{a.paren()}.{name}(diagonal={k})"])
        if k == 0 and r.random() < 0.5:
            spell = f"{a.paren()}.{name}()"
        return a.view(spell, lambda v: (np.tril if name == "tril" else np.triu)(v, k))

    def g_loop(self, shape, depth, dt):
        """`for` over a stacked operand, accumulating into a name: rebound (t = f(t, w))
        or updated in place on a fresh clone (t += w, t.add_(w))."""
        r = self.r
        n = r.randrange(1, 5)
        init = self.gen(shape, depth - 1, dt)
        w = self.gen([n] + shape, depth - 1, dt)
        if not w.atom:
            w = self.bind(w)
        form = r.choice(["index", "row", "enum"])
        head, wi = {"index": (f"i in range({n})", f"{w.expr}[i]"), "row": (f"row in {w.expr}", "row"),
                    "enum": (f"i, row in enumerate({w.expr})", "row")}[form]
        if dt in FLOATS:
            bodies = [("{t} = {t} * 0.5 + {w}", lambda t, x, i: t * 0.5 + x, False),
                      ("{t} = tanh({t}) + {w}", lambda t, x, i: np.tanh(t) + x, False),
                      ("{t} = maximum({t}, {w}) - 0.25", lambda t, x, i: np.maximum(t, x) - 0.25, False),
                      ("{t} += {w}", lambda t, x, i: t + x, True),
                      ("{t}.add_({w})", lambda t, x, i: t + x, True),
                      ("{t}.mul_(0.5).add_({w})", lambda t, x, i: t * 0.5 + x, True),
                      ("{t} -= {w} * 0.5", lambda t, x, i: t - 0.5 * x, True)]
        else:
            bodies = [("{t} = {t} + {w}", lambda t, x, i: t + x, False),
                      ("{t} = maximum({t}, {w}) - 1", lambda t, x, i: np.maximum(t, x) - 1, False),
                      ("{t} += {w}", lambda t, x, i: t + x, True), ("{t}.sub_({w})", lambda t, x, i: t - x, True),
                      ("{t} = {t} * 2 - {w}", lambda t, x, i: t * 2 - x, False)]
        if form != "row":
            bodies += [("{t} = {t} + {w} * i", lambda t, x, i: t + x * i, False)]
        body, f, inplace = r.choice(bodies)
        t = np.array(init.val)
        te = Err(init.val, init.em)  # (its em, followed through the body as values are)
        mag = max(init.mag, w.mag)
        for i in range(n):
            t = np.array(f(t, w.val[i], i))
            if dt in FLOATS:
                te = f(te, Err(w.val[i], w.em[i]), i)
            mag = max(mag, _mag(t))
        if dt == "i32" and mag > I32_MAX:
            return init
        first = f"{{t}} = {init.paren()}.clone()" if inplace else f"{{t}} = {init.expr}"
        lines = [first, f"for {head} {{{{", "    " + body.format(t="{t}", w=wi), "}}"]  # (bind formats them)
        return self.bind(Node("", t, dt, mag, prec=_prec(init, w), em=te.e if dt in FLOATS else 0), lines)

    def g_inplace(self, shape, depth, dt):
        """A fresh tensor (a clone, or zeros_like plus +=) updated in place once or twice:
        add_, +=, -=, *=, mul_, clamp_, relu_, masked_fill_, a slice stored or updated."""
        r = self.r
        nd = len(shape)
        a = self.gen(shape, depth - 1, dt)
        t = np.array(a.val)
        te = np.array(a.em)  # t's em, updated with it (ints: zeros, unused)
        fl = dt in FLOATS

        def conv(b):  # b's em in dt: a lower dtype's values may round when converted
            return b.em if b.dtype in FLOATS else np.abs(b.val.astype(np.float64)) * fl
        kids = [a]
        if r.random() < 0.7:
            lines = [f"{{t}} = {a.paren()}.clone()"]
        else:
            lines = [f"{{t}} = torch.zeros_like({a.expr})", f"{{t}} += {a.paren()}"]
        mag = a.mag
        for _ in range(r.choice([1, 1, 2])):
            ops = ["add_", "+=", "-=", "*=", "mul_", "clamp_", "relu_", "masked_fill_"]
            if nd:  # writes through views and indices: a slice, a slice's in-place method, a mask, an index
                ops += ["[]=", "[]+=", "[].op_", "[mask]=", "[idx]=", "[int]=", "[step]="]
            op = r.choice(ops)
            bdt = r.choice([dt, dt] + LOWER[dt])
            if op == "[].op_":
                d = r.randrange(nd)
                st = r.randrange(shape[d])
                sp = r.randrange(st + 1, shape[d] + 1)
                sl = tuple([slice(None)] * d + [slice(st, sp)])
                view = f"{{t}}[{':, ' * d}{st}:{sp}]" if r.random() < 0.6 else f"{{t}}.narrow({d}, {st}, {sp - st})"
                what = r.choice(["mul_(2)", "zero_()", "fill_(3)", "add_"])
                if what == "add_":
                    b = self.gen(self._bshape(shape[:d] + [sp - st] + shape[d + 1:]), depth - 1, bdt)
                    t[sl] = t[sl] + b.val
                    te[sl] = te[sl] + conv(b) + np.abs(t[sl])
                    lines.append(f"{view}.add_({b.expr})")
                    kids.append(b)
                else:
                    t[sl] = t[sl] * 2 if what == "mul_(2)" else 0 if what == "zero_()" else 3
                    te[sl] = te[sl] * 2 if what == "mul_(2)" else 0
                    lines.append(f"{view}.{what}")
                mag = max(mag, _mag(t))
                continue
            if op == "[mask]=":  # a bool mask over the leading dims, a number stored where it is true
                j = r.randrange(1, nd + 1)
                mk = self.gen(shape[:j], depth - 1, "bool")
                v = r.choice([-2, 1]) if dt in INTS else r.choice([-0.75, 1.5])
                t[mk.val] = v
                te[mk.val] = 0
                lines.append(f"{{t}}[{mk.expr}] = {v}")
                mag = max(mag, _mag(t))
                continue
            if op == "[idx]=":  # distinct indices (PyTorch leaves the order of repeated ones undefined)
                n = r.randrange(1, shape[0] + 1)
                name = f"p{len(self.params)}"
                idx = self.nprng.permutation(shape[0])[:n].astype(np.int64)
                self.params.append((name, "i64", idx))
                b = self.gen(self._bshape([n] + shape[1:]), depth - 1, bdt)
                acc = r.random() < 0.4
                t[idx] = t[idx] + b.val if acc else b.val
                te[idx] = te[idx] + conv(b) + np.abs(t[idx]) if acc else conv(b)
                lines.append(f"{{t}}[{name}] {'+=' if acc else '='} {b.expr}")
                kids.append(b)
                mag = max(mag, b.mag, _mag(t))
                continue
            if op == "[int]=":  # an int index (negative now and then) removes its dim; `...` before the last
                d = r.randrange(nd)
                k = r.randrange(shape[d])
                ks = k - shape[d] if r.random() < 0.4 else k
                sl = tuple([slice(None)] * d + [k])
                b = self.gen(self._bshape(shape[:d] + shape[d + 1:]), depth - 1, bdt)
                acc = r.random() < 0.4
                t[sl] = t[sl] + b.val if acc else b.val
                te[sl] = te[sl] + conv(b) + np.abs(t[sl]) if acc else conv(b)
                lead = "..., " if d == nd - 1 and nd > 1 and r.random() < 0.5 else ":, " * d
                lines.append(f"{{t}}[{lead}{ks}] {'+=' if acc else '='} {b.expr}")
                kids.append(b)
                mag = max(mag, b.mag, _mag(t))
                continue
            if op == "[step]=":  # a strided slice (a negative start now and then), or one element
                d = r.randrange(nd)
                st, sp = r.randrange(shape[d]), r.choice([1, 2, 3])
                n = len(range(st, shape[d], sp))
                sl = tuple([slice(None)] * d + [slice(st, None, sp)])
                b = self.gen(self._bshape(shape[:d] + [n] + shape[d + 1:]), depth - 1, bdt)
                t[sl] = b.val
                te[sl] = conv(b)
                sts = st - shape[d] if r.random() < 0.4 else st
                lines.append(f"{{t}}[{':, ' * d}{sts}::{sp}] = {b.expr}")
                kids.append(b)
                mag = max(mag, b.mag, _mag(t))
                continue
            if op in ("[]=", "[]+="):  # a slice of one dim
                d = r.randrange(nd)
                st = r.randrange(shape[d])
                sp = r.randrange(st + 1, shape[d] + 1)
                sl = tuple([slice(None)] * d + [slice(st, sp)])
                b = self.gen(self._bshape(shape[:d] + [sp - st] + shape[d + 1:]), depth - 1, bdt)
                if op == "[]=":
                    t[sl] = b.val
                    te[sl] = conv(b)
                else:
                    t[sl] = t[sl] + b.val
                    te[sl] = te[sl] + conv(b) + np.abs(t[sl])
                lines.append(f"{{t}}[{':, ' * d}{st}:{sp}] {op[2:]} {b.expr}")
            elif op == "clamp_":
                lo, hi = (-0.5, 0.5) if dt in FLOATS else (-2, 3)
                if fl:
                    te = np.clip(Err(t, te), lo, hi).e
                t = np.clip(t, lo, hi)
                lines.append(f"{{t}}.clamp_(min={lo}, max={hi})")
                continue
            elif op == "relu_":
                if fl:
                    te = np.maximum(Err(t, te), 0).e
                t = np.maximum(t, 0)
                lines.append("{t}.relu_()")
                continue
            elif op == "masked_fill_":
                b = self.gen(self._bshape(shape), depth - 1, "bool")
                v = -1 if dt in INTS else 0.5
                t = np.where(b.val, v, t)
                te = np.where(b.val, 0.0, te)
                lines.append(f"{{t}}.masked_fill_({b.expr}, {v})")
            else:
                b = self.gen(self._bshape(shape), depth - 1, bdt)
                if op in ("*=", "mul_") and (dt in INTS and mag * b.mag > 1e6):
                    op = "+="
                f = {"add_": np.add, "+=": np.add, "-=": np.subtract, "*=": np.multiply, "mul_": np.multiply}[op]
                if op == "-=" and bdt == "bool":
                    op, f = "+=", np.add
                if fl:
                    te = f(Err(t, te), Err(b.val, conv(b))).e
                t = f(t, b.val)
                lines.append(f"{{t}}.{op}({b.expr})" if op.endswith("_") else f"{{t}} {op} {b.expr}")
            kids.append(b)
            mag = max(mag, b.mag, _mag(t))
        t = np.array(np.broadcast_to(t, shape), dtype=np.int64 if dt in INTS else np.float64)
        return self.bind(Node("", t, dt, mag, prec=_prec(*kids), em=np.broadcast_to(te, shape) if fl else 0), lines)

    # --- functions, Python values and run-time scalars ----------------------
    def scalar_param(self, kind, val):
        """A run-time scalar parameter of f (`pK: float`, `int` or `bool`), given by --arg."""
        name = f"p{len(self.params)}"
        self.params.append((name, kind, val))
        return name

    def g_scalar(self, shape, depth, dt):
        """A tensor and a run-time scalar parameter of the entry (Python-scalar promotion:
        the tensor's dtype stays), or a 0-d tensor made of two of them."""
        r = self.r
        a = self.gen(shape, depth - 1, dt)
        kind = r.choice(["float", "float", "pybool"] if dt in FLOATS else ["int", "int", "pybool"])
        # values exact in f32, so the f32 rounding of a run-time float changes nothing
        val = r.choice([True, False]) if kind == "pybool" else \
            r.choice([0.5, -1.25, 2.0, 0.375]) if kind == "float" else r.choice([2, -3, 1, 0])
        s = self.scalar_param(kind, val)
        if kind == "pybool":
            ops = [("{p} * {s}", lambda y: y * val), ("{p} + {s}", lambda y: y + val)]
        else:
            ops = [("{p} * {s}", lambda y: y * val), ("{p} + {s}", lambda y: y + val),
                   ("{s} - {p}", lambda y: val - y), ("{p} * ({s} * 2)", lambda y: y * (val * 2))]
        spell, f = r.choice(ops)
        out = np.array(f(a.val), dtype=np.int64 if dt in INTS else np.float64)
        return Node(spell.format(p=a.paren(), s=s), out, dt, _mag(out, a.mag) * 3, prec=a.prec,
                    em=em_of(f, a) if dt in FLOATS else 0)

    def g_helper(self, shape, depth, dt):
        """A call of a helper function written generically (its dims are names bound at
        the call), with scalar parameters and their defaults (given by the call, left out,
        or a run-time scalar of f), an optional tensor (`w: T | None = None`), `a if c
        else b` on compile-time values, asserts (compile-time and of a tensor), a loop over
        a scalar parameter, a list built and summed, and now and then a tuple result."""
        r = self.r
        nd = len(shape)
        fl = dt in FLOATS
        a = self.gen(shape, depth - 1, dt)
        # (the seed in the name keeps helpers apart where files join several programs:
        # test_cuda_compile, test_ptx_compile)
        k, name = len(self.helpers), f"h{len(self.helpers)}s{self.seed}"
        self.helpers.append([])  # (the slot is taken now: helpers made inside come after)
        dims = [f"D{i}" for i in range(nd)]
        ty = f"{dt}[{', '.join(dims)}]"
        params, args, body = [f"x: {ty}"], [a.expr], ["y = x"]
        steps = []  # functions (y, x, w) -> y, in order
        wnode = None
        kinds = ["scale", "cond", "flag", "loop", "assert", "list"] + (["opt"] if nd else [])
        for kind in r.sample(kinds, r.randrange(1, 4)):
            if kind == "scale":
                dk = 0.5 if fl else 2
                ck = dk
                how = r.random()
                if how < 0.4:  # a compile-time value
                    ck = r.choice([1.5, -0.25, 2.0]) if fl else r.choice([3, -2, 1])
                    args.append(f"k={ck}")
                elif how < 0.7:  # a run-time scalar of f, passed on
                    ck = r.choice([0.5, -1.25, 2.0, 0.375]) if fl else r.choice([2, -3, 1, 0])
                    args.append(f"k={self.scalar_param('float' if fl else 'int', ck)}")
                params.append(f"k: {'float' if fl else 'int'} = {dk}")
                body.append("y = y * k")
                steps.append(lambda y, x, w, ck=ck: y * ck)
            elif kind == "cond":
                if nd:
                    thr = r.randrange(0, 5)
                    body.append(f"y = y + 1 if D0 > {thr} else y - 1")
                    steps.append(lambda y, x, w, up=shape[0] > thr: y + 1 if up else y - 1)
                else:  # the branch not taken is not checked
                    body.append("y = y + 1 if x.dim() == 0 else y.no_such_method(D9)")
                    steps.append(lambda y, x, w: y + 1)
            elif kind == "flag":
                neg = r.random() < 0.5
                params.append("neg: bool = False")
                if neg or r.random() < 0.3:
                    args.append(f"neg={neg}")
                body.append("y = -y if neg else y")
                steps.append(lambda y, x, w, neg=neg: -y if neg else y)
            elif kind == "loop":
                n = r.choice([0, 1, 2, 3])
                params.append("n: int = 2")
                if n != 2 or r.random() < 0.3:
                    args.append(f"n={n}")
                upd = "y = y * 0.5 + x" if fl else "y = y - x"
                form = r.choice(["for", "while", "skip", "break"])
                if form == "for":
                    body += ["for _ in range(n) {", f"    {upd}", "}"]
                elif form == "while":  # n rebound, as a Python int
                    body += ["m = n", "while m > 0 {", f"    {upd}", "    m -= 1", "}"]
                elif form == "skip":  # the second iteration skipped; n + 1 run
                    body += ["for i in range(n + 1) {", "    if i == 1 {", "        continue", "    }", f"    {upd}",
                             "}"]
                else:  # a loop that would run ten times, stopped after n
                    body += ["for i in range(10) {", "    if i >= n {", "        break", "    }", f"    {upd}", "}"]
                runs = n if form != "skip" else n + 1 - (1 if n >= 1 else 0)

                def loop(y, x, w, runs=runs):
                    for _ in range(runs):
                        y = y * 0.5 + x if fl else y - x
                    return y
                steps.append(loop)
            elif kind == "assert":
                body.append(f'assert x.dim() == {nd} and x.shape == ({"".join(d + ", " for d in dims)}), '
                            f'f"x is {{x.shape}}"')
                body.append('assert (x == x).all(), "x has a NaN"')  # checked when the program runs
            elif kind == "list":
                if r.random() < 0.5:
                    body += ["ys = [y]", "ys.append(x * 2)", "y = sum(ys)"]
                    steps.append(lambda y, x, w: 0 + y + x * 2)
                else:
                    # (a sum of ints is i64, as in PyTorch: cast back)
                    body.append("y = torch.stack([y * i for i in range(1, 3)]).sum(0)" + ("" if fl else ".to(x.dtype)"))
                    steps.append(lambda y, x, w: y * 1 + y * 2)
            else:  # opt
                params.append(f"w: {dt}[{dims[-1]}] | None = None")
                if r.random() < 0.6:
                    wnode = self.gen(shape[-1:], depth - 1, dt)
                    args.append(f"w={wnode.expr}")
                body += ["if w is not None {", "    y = y + w", "}"]
                steps.append(lambda y, x, w: y if w is None else y + w)
        tup = r.random() < 0.25
        rt = f"({ty}, {ty})" if tup else ty
        src = [f"fn {name}({', '.join(params)}) -> {rt} {{"] + [f"    {ln}" for ln in body]
        src += ["    return y, x" if tup else "    return y", "}"]
        self.helpers[k] = src

        def f(x, w=None):
            y = x
            for st in steps:
                y = st(y, x, w)
            return y
        nodes = [a] + ([wnode] if wnode else [])
        out = np.array(np.broadcast_to(f(*[n.val for n in nodes]), shape), dtype=np.int64 if dt in INTS else np.float64)
        em = em_of(f, *nodes) if fl else 0
        mag = _mag(out, *[n.mag for n in nodes]) * 4
        n = Node("", out, dt, mag, prec=_prec(*nodes), em=np.broadcast_to(em, shape) if fl else 0)
        call = f"{name}({', '.join(args)})"
        if not tup:
            n.expr = call
            return n
        if r.random() < 0.5:
            n.expr = f"{call}[{r.choice([0, -2])}]"
            return n
        return self.bind(n, [f"{{t}}, {{t}}b = {call}"])

    def g_seq(self, shape, depth, dt):
        """Tuples and lists of tensors: a list built (append, +=) then stacked or summed,
        a tuple unpacked (and star-unpacked), a display indexed, a comprehension, and
        `a if c else b` on compile-time values (the branch not taken is not checked)."""
        r = self.r
        nd = len(shape)
        a, b = self.gen(shape, depth - 1, dt), self.gen(shape, depth - 1, dt)
        what = r.choice(["list", "tuple", "star", "index", "comp", "cond", "mut"])
        if what == "list":
            c = self.gen(shape, depth - 1, dt)
            lines = [f"{{t}}a = [{a.expr}]", f"{{t}}a.append({b.expr})", f"{{t}}a += [{c.expr}]"]
            spell, f = r.choice([("{t} = torch.stack({t}a).sum(0).to({t}a[0].dtype)", lambda x, y, z: x + y + z),
                                 ("{t} = sum({t}a)", lambda x, y, z: 0 + x + y + z),
                                 ("{t} = torch.stack({t}a, dim=-1).amax(-1)", lambda x, y, z: np.maximum(np.maximum(x, y), z)),
                                 ("{t} = {t}a[1] - {t}a[-1] * len({t}a)", lambda x, y, z: y - z * 3)])
            nodes, lines = [a, b, c], lines + [spell]
        elif what == "mut":  # a helper without a result (no arrow, or -> None) writes its mut parameter
            name = f"h{len(self.helpers)}s{self.seed}"
            dims = ", ".join(f"D{i}" for i in range(nd))
            k = r.choice([1, 2, 3])
            ret = r.choice(["", " -> None"])
            tail = r.choice([[], ["    return"], ["    if k > 5 {", "        raise ValueError(f'k is {k}')", "    }"]])
            self.helpers.append([f"fn {name}(mut o: {dt}[{dims}], x: {dt}[{dims}], k: int = 1){ret} {{",
                                 "    o += x * k"] + tail + ["}"])
            lines = ["{t} = " + a.paren() + ".clone()", f"{name}({{t}}, {b.expr}" + (f", k={k})" if k != 1 else ")")]
            nodes, f = [a, b], lambda x, y, k=k: x + y * k
        elif what == "tuple":
            lines = [f"{{t}}a, {{t}}b = {b.expr}, {a.expr}", "{t} = {t}b * 2 - {t}a"]
            nodes, f = [a, b], lambda x, y: x * 2 - y
        elif what == "star":
            c = self.gen(shape, depth - 1, dt)
            lines = [f"{{t}}a, *{{t}}b = ({a.expr}, {b.expr}, {c.expr})", "{t} = {t}a - sum({t}b)"]
            nodes, f = [a, b, c], lambda x, y, z: x - (0 + y + z)
        else:
            lines = None
            nodes = [a, b]
            if what == "index":
                k = r.choice([0, 1, -1, -2])
                spell = r.choice([f"({a.expr}, {b.expr})[{k}]", f"[{a.expr}, {b.expr}][{k}]"])
                f = (lambda x, y: x) if k in (0, -2) else (lambda x, y: y)
            elif what == "comp":
                spell = r.choice([f"sum({a.paren()} * i for i in range(3)) + {b.paren()}",
                                  f"torch.stack([{a.paren()} * i for i in range(1, 3)], 0).sum(0, dtype={b.paren()}.dtype)"
                                  f" - {b.paren()}"])
                f = (lambda x, y: 0 + x * 0 + x * 1 + x * 2 + y) if spell.startswith("sum") else \
                    (lambda x, y: x * 1 + x * 2 - y)
            else:
                pick = r.random() < 0.5
                cond = f"len({a.paren()}.shape) == {nd}" if pick else f"{a.paren()}.dim() != {nd}"
                other = r.choice([f"{b.paren()}.no_such_method()", "undefined_name_q", f"{b.paren()}.view(-1, 999)"])
                spell = f"({a.expr} if {cond} else {other})" if pick else f"({other} if {cond} else {b.expr})"
                f = (lambda x, y: x) if pick else (lambda x, y: y)
        fl = dt in FLOATS
        out = np.array(np.broadcast_to(f(*[n.val for n in nodes]), shape), dtype=np.int64 if dt in INTS else np.float64)
        em = np.broadcast_to(em_of(f, *nodes), shape) if fl else 0
        n = Node(spell if lines is None else "", out, dt, _mag(out, *[n.mag for n in nodes]) * 4, prec=_prec(*nodes),
                 em=em)
        return n if lines is None else self.bind(n, lines)

    # --- the program --------------------------------------------------------
    def build(self):
        r = self.r
        self.outs = []
        for k in range(r.choice([1, 1, 2, 3])):
            dt = self.dt
            x = r.random()
            if x < 0.12:
                dt = "bool"
            elif x < 0.22:
                dt = r.choice([d for d in NUMERIC if d != self.dt])
            elif self.dt == "i32" and x < 0.4:
                dt = "i64"
            self.nodes = 0
            if k == 0 and dt in FLOATS and r.random() < 0.08:
                # a large matmul: [M, N] or [B, M, N] with a long k, so the packed GEMM schedule runs
                if r.random() < 0.7:
                    shape = [r.randrange(9, 65), r.randrange(2, 65)]
                else:
                    shape = [r.randrange(2, 4), r.randrange(9, 33), r.randrange(2, 33)]
                n = self.g_matmul(shape, r.randrange(1, 3), dt, k=r.randrange(8, 71))
                if r.random() < 0.4:  # an elementwise epilogue
                    spell, f = r.choice([("relu({a})", lambda v: np.maximum(v, 0)),
                                         ("{p} * 0.5 + 1", lambda v: v * 0.5 + 1), ("tanh({a})", np.tanh)])
                    n = Node(spell.format(a=n.expr, p=n.paren()), f(n.val), dt, n.mag, prec=n.prec, em=em_of(f, n))
                self.outs.append(n)
                continue
            nd = r.choice([0, 1, 2, 2, 3, 3])
            shape = [r.randrange(1, 6) for _ in range(nd)]
            if nd and r.random() < 0.06:  # a long last dim: vector loops with a remainder
                shape[-1] = r.randrange(16, 70)
            self.outs.append(self.gen(shape, r.randrange(3, 6), dt))
        # a helper whose call was dropped (its node out of range) is left out: one without
        # dims would be compiled as an entry, where its scalar parameters are run-time values
        used = "\n".join([ln for let in self.lets for ln in let] + [o.expr for o in self.outs])
        self.helpers = [h for h in self.helpers if re.search(rf"\b{h[0].split()[1].split('(')[0]}\(", used)]
        ps = ", ".join(f"{n}: {param_type(dt, v)}" for n, dt, v in self.params)
        rets = [type_str(o.dtype, np.shape(o.val)) for o in self.outs]
        ret = rets[0] if len(rets) == 1 else f"({', '.join(rets)})"
        lines = [f"# random program, seed {self.seed} ({self.dt})"] + [ln for h in self.helpers for ln in h]
        lines += [f"fn f({ps}) -> {ret} {{"]
        lines += [f"    {ln}" for let in self.lets for ln in let]
        lines += [f"    return {', '.join(o.expr for o in self.outs)}", "}"]
        self.src = "\n".join(lines)
        return self


SCALARS = {"float": "float", "int": "int", "pybool": "bool"}  # run-time scalar parameters: kind, type


def param_type(dt, v):
    """A parameter's type: a tensor's, or a scalar's kind."""
    return SCALARS[dt] if dt in SCALARS else type_str(dt, v.shape)


def scalar_args(params, prefix=""):
    """`--arg NAME=VALUE` for the scalar parameters."""
    out = []
    for n, dt, v in params:
        if dt in SCALARS:
            out += ["--arg", f"{prefix}{n}={str(v).lower() if dt == 'pybool' else v}"]
    return out


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
        if n.dtype not in FLOATS:  # ints and bools: exact
            if not np.array_equal(got.astype(np.int64), want.astype(np.int64)):
                i = tuple(np.argwhere(got.astype(np.int64) != want.astype(np.int64))[0])
                errs.append(f"out{k}{list(i)}: got {got[i]}, want {want[i]}")
            continue
        rtol, atol = TOL[n.prec]
        g, w = got.astype(np.float64), want.astype(np.float64)
        bad = ~(np.abs(g - w) <= atol * n.em + rtol * np.abs(w))
        if bad.any():
            i = tuple(np.argwhere(bad)[0])
            errs.append(f"out{k}{list(i)}: got {g[i]!r}, want {w[i]!r} (error bound {n.em[i]:.3g} x {atol:g})")
    return errs


def run(tdslc, prog, backend="env"):
    """Runs the program on backend (see oracle.tdslc_run) with its parameters as .npy
    files. Returns (failure lines against NumPy, JSON document or None)."""
    inputs = {n: (dt, v) for n, dt, v in prog.params if dt not in SCALARS}
    p, doc, out_dir = run_function(tdslc, prog.src, "f", inputs, name=f"random{prog.seed}", backend=backend,
                                   extra=scalar_args(prog.params))
    if p.returncode != 0:
        errs = [f"exit {p.returncode}: {p.stderr.decode(errors='replace').strip()[:800]}"]
    else:
        errs = check_doc(prog, doc)
    run_cleanup(out_dir)
    return errs, doc


# ---------------------------------------------------------------------------
# Bundles: several programs as one function, so one compile (one cc on the C backend,
# where its fixed cost is about half of a small program's) runs all of them. Each
# program's names get a prefix (p3 -> s2p3, t0a -> s2t0a); its outputs are a slice of
# the bundle's and are checked as its own. A bundle that fails to run is run again
# program by program, so a failure still names its program.
# ---------------------------------------------------------------------------
BUNDLE = 8
_NAME = re.compile(r"\b([pt]\d+[a-d]?)\b")  # (helpers' names hold their seed)


def _renamed(text, k):
    return _NAME.sub(lambda m: f"s{k}{m.group(1)}", text)


def bundle_source(progs):
    """(source of `fn f(every program's parameters) -> (every output) { ... }` after
    every program's helpers, inputs, the --arg flags of its scalar parameters)."""
    params, inputs, helpers, lets, outs, rets, args = [], {}, [], [], [], [], []
    for k, q in enumerate(progs):
        for n, dt, v in q.params:
            params.append(f"s{k}{n}: {param_type(dt, v)}")
            if dt not in SCALARS:
                inputs[f"s{k}{n}"] = (dt, v)
        args += scalar_args(q.params, f"s{k}")
        helpers += [_renamed(ln, k) for h in q.helpers for ln in h]
        lets += [_renamed(ln, k) for let in q.lets for ln in let]
        outs += [_renamed(o.expr, k) for o in q.outs]
        rets += [type_str(o.dtype, np.shape(o.val)) for o in q.outs]
    ret = rets[0] if len(rets) == 1 else f"({', '.join(rets)})"
    lines = [f"# random programs, seeds {', '.join(str(q.seed) for q in progs)}"] + helpers
    lines += [f"fn f({', '.join(params)}) -> {ret} {{"]
    lines += [f"    {ln}" for ln in lets] + [f"    return {', '.join(outs)}", "}"]
    return "\n".join(lines), inputs, args


def run_bundle(tdslc, progs, backend="env"):
    """[(failure lines, JSON document of the program's outputs or None)] per program of
    progs, run as one bundle (or one by one, when the bundle does not run)."""
    if len(progs) == 1:
        return [run(tdslc, progs[0], backend)]
    src, inputs, args = bundle_source(progs)
    p, doc, out_dir = run_function(tdslc, src, "f", inputs, name=f"random{progs[0].seed}", backend=backend,
                                   extra=args)
    run_cleanup(out_dir)
    if p.returncode != 0 or len(doc["outputs"]) != sum(len(q.outs) for q in progs):
        return [run(tdslc, q, backend) for q in progs]
    res, at = [], 0
    for q in progs:
        part = dict(doc, outputs=doc["outputs"][at:at + len(q.outs)])
        at += len(q.outs)
        res.append((check_doc(q, part), part))
    return res


def bundles(progs, size=BUNDLE):
    return [progs[i:i + size] for i in range(0, len(progs), size)]


def report(tally, prog, errs, label=""):
    """Reports one program to tally (an oracle.Tally): its line, its failures and, on
    failure, the whole program."""
    return tally.report(f"seed {prog.seed} ({prog.dt}, {len(prog.params)} params, {len(prog.outs)} outputs){label}",
                        errs, program=prog.src)


def run_programs(tdslc, progs, tally, backend="env", label=""):
    """Runs the programs in bundles, two bundles at a time, on backend and reports each
    program to tally (report)."""
    groups = bundles(progs)
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as ex:
        for group, res in zip(groups, ex.map(lambda g: run_bundle(tdslc, g, backend), groups)):
            for prog, (errs, _) in zip(group, res):
                report(tally, prog, errs, label)
