"""tests/run/op_cases.py: the case machinery and per-op tables of test_ops.py.

A Case is one tdsl function `f` with parameters (each a dtype, a value array and a
layout: how the program turns the declared parameter into the operand it uses), a few
body lines, and outputs, each a tdsl expression with the NumPy value PyTorch would give.
The layouts make operands non-contiguous the way real programs do:
  c  the parameter itself (contiguous)
  t  declared with its dims reversed, used as x.permute(n-1, ..., 0) (x.t() in 2-D)
  s  declared twice as large, used as x[1::2, ::2, ...] (steps and an offset)
  e  declared with a leading 1, used as x.expand(...) (stride 0)
Expected values always come from NumPy at test time, on the very arrays passed in.
"""
import concurrent.futures
import math
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle import (FLOAT_DTYPES, INT_DTYPES, INTS, VALUE_NP, check_outputs, opm, rand_values,  # noqa: E402
                    rnd, run_cleanup, run_function, type_str)

LAYOUTS = ("c", "t", "s", "e")


def _vec(fn, a):
    """fn (a math function of one float) elementwise, computed in f64, in a's float type."""
    a = np.asarray(a)
    return np.vectorize(fn, otypes=[np.float64])(a.astype(np.float64)).astype(a.dtype)


def _lgamma(v):
    """math.lgamma, with C's +inf at its poles (0, -1, -2, ...) where Python raises."""
    try:
        return math.lgamma(v)
    except ValueError:
        return math.inf


def erf(a):
    """erf elementwise, computed in f64 and returned in a's float type."""
    a = np.asarray(a)
    return np.vectorize(math.erf, otypes=[np.float64])(a.astype(np.float64)).astype(a.dtype)


class Case:
    def __init__(self, name):
        self.name = name
        self.params = []   # (name, dtype, value, mut)
        self.body = []
        self.outs = []     # (expr, dtype, want, kind, n, view)

    def param(self, dt, shape, layout="c", rng=None, val=None, mut=False, gen=None, name=None):
        """Declares a parameter so that the operand the program uses has `shape`; returns
        (tdsl expression, NumPy value of that operand)."""
        shape = list(shape)
        nd = len(shape)
        pname = name or f"p{len(self.params)}"
        if layout == "c" or nd == 0:
            ps, ex, f = shape, pname, (lambda v: v)
        elif layout == "t":
            ps = shape[::-1]
            ex = f"{pname}.t()" if nd == 2 else f"{pname}.permute({', '.join(str(i) for i in reversed(range(nd)))})"
            f = lambda v: v.transpose()  # noqa: E731
        elif layout == "s":
            ps = [2 * shape[0] + 1] + [2 * d for d in shape[1:]]
            ex = f"{pname}[{', '.join(['1::2'] + ['::2'] * (nd - 1))}]"
            f = lambda v: v[(slice(1, None, 2),) + (slice(None, None, 2),) * (nd - 1)]  # noqa: E731
        elif layout == "e":
            ps = [1] + shape[1:]
            ex = f"{pname}.expand({', '.join(str(d) for d in shape)})"
            f = lambda v: np.broadcast_to(v, shape)  # noqa: E731
        else:
            raise ValueError(layout)
        if val is None:
            val = gen(rng, dt, ps) if gen else rand_values(rng, dt, ps)
        assert list(val.shape) == list(ps), (pname, val.shape, ps)
        self.params.append((pname, dt, val, mut))
        return ex, f(val)

    def let(self, line):
        self.body.append(line)

    def out(self, expr, dt, want, kind="elem", n=1, view=False):
        want = np.asarray(want)
        self.outs.append((expr, dt, rnd(want, dt), kind, n, view))

    def source(self, only=None):
        outs = self.outs if only is None else [self.outs[only]]
        ps = ", ".join(f"{'mut ' if m else ''}{n}: {type_str(dt, v.shape)}" for n, dt, v, m in self.params)
        rets = [type_str(dt, np.shape(w)) for _, dt, w, _, _, _ in outs]
        ret = rets[0] if len(rets) == 1 else f"({', '.join(rets)})"
        lines = [f"# {self.name}", f"fn f({ps}) -> {ret} {{"]
        lines += [f"    {b}" for b in self.body]
        lines.append(f"    return {', '.join(o[0] for o in outs)}")
        lines.append("}")
        return "\n".join(lines)

    def inputs(self):
        return {n: (dt, v) for n, dt, v, _ in self.params}


def run_case(tdslc, case, backend="env"):
    """Runs the case on backend (see oracle.tdslc_run); on a failed run each output is
    retried alone so the report names the op at fault. Returns a list of failure lines
    (empty: passed)."""
    src = case.source()
    p, doc, out_dir = run_function(tdslc, src, "f", case.inputs(), name=case.name, backend=backend)
    if p.returncode == 0:
        errs = check_outputs(doc, out_dir, [o[1:] for o in case.outs])
        run_cleanup(out_dir)
        return [f"{case.outs[k][0] if k >= 0 else ''}: {r}" for k, r in errs]
    run_cleanup(out_dir)
    first = f"exit {p.returncode}: {p.stderr.decode(errors='replace').strip()[:600]}"
    if len(case.outs) == 1:
        return [first, "program:\n" + src]
    fails = []
    for k, o in enumerate(case.outs):
        p1, doc1, od1 = run_function(tdslc, case.source(k), "f", case.inputs(), name=case.name, backend=backend)
        if p1.returncode != 0:
            fails.append(f"{o[0]}: exit {p1.returncode}: {p1.stderr.decode(errors='replace').strip()[:400]}")
        else:
            fails += [f"{o[0]}: {r}" for _, r in check_outputs(doc1, od1, [o[1:]])]
        run_cleanup(od1)
    if not fails:
        fails = [first + " (every output passes alone)"]
    return fails + ["program:\n" + src]


# Bundles: consecutive cases, at most BUNDLE_CASES of them and BUNDLE_OUTPUTS outputs, run
# as one function (each case's names prefixed k<j>_), so the fixed cost of a compile (on
# the C backend about 55 ms of CPU: cc's start, headers, the link) is paid once per
# bundle. A bundle that does not run is run again case by case (run_case), so a failure
# still names its case and then its op.
BUNDLE_CASES, BUNDLE_OUTPUTS = 8, 160
_TARGETS = re.compile(r"\s*([A-Za-z_][\w, ]*?)\s*=(?!=)")


def _names(case):
    """The names a case declares: its parameters and the targets of its lines."""
    names = {n for n, _, _, _ in case.params}
    for line in case.body:
        m = _TARGETS.match(line)
        if m:
            names.update(t.strip() for t in m.group(1).split(","))
    return names


def bundle_cases(cases):
    groups, cur, n = [], [], 0
    for c in cases:
        if cur and (len(cur) == BUNDLE_CASES or n + len(c.outs) > BUNDLE_OUTPUTS):
            groups.append(cur)
            cur, n = [], 0
        cur.append(c)
        n += len(c.outs)
    return groups + ([cur] if cur else [])


def bundle_source(group):
    """(source of one function computing every case of group, its inputs)."""
    params, inputs, lines, rets, exprs = [], {}, [], [], []
    for j, c in enumerate(group):
        pat = re.compile(r"(?<![.\w])(" + "|".join(map(re.escape, sorted(_names(c), key=len, reverse=True))) + r")\b")
        ren = lambda text, j=j, pat=pat: pat.sub(lambda m: f"k{j}_{m.group(1)}", text)  # noqa: E731
        for n, dt, v, mut in c.params:
            params.append(f"{'mut ' if mut else ''}k{j}_{n}: {type_str(dt, v.shape)}")
            inputs[f"k{j}_{n}"] = (dt, v)
        lines += [ren(b) for b in c.body]
        exprs += [ren(o[0]) for o in c.outs]
        rets += [type_str(dt, np.shape(w)) for _, dt, w, _, _, _ in c.outs]
    src = "\n".join([f"# {', '.join(c.name for c in group)}", f"fn f({', '.join(params)}) -> ({', '.join(rets)}) {{"] +
                     [f"    {b}" for b in lines] + [f"    return {', '.join(exprs)}", "}"])
    return src, inputs


def run_bundle(tdslc, group, backend="env"):
    """The failure lines of each case of group, run as one bundle."""
    if len(group) == 1:
        return [run_case(tdslc, group[0], backend)]
    src, inputs = bundle_source(group)
    p, doc, out_dir = run_function(tdslc, src, "f", inputs, name=group[0].name, backend=backend)
    if p.returncode != 0 or len(doc["outputs"]) != sum(len(c.outs) for c in group):
        run_cleanup(out_dir)
        return [run_case(tdslc, c, backend) for c in group]
    res, at = [], 0
    for c in group:
        errs = check_outputs(doc, out_dir, [o[1:] for o in c.outs], first=at)
        res.append([f"{c.outs[k][0] if k >= 0 else ''}: {r}" for k, r in errs])
        at += len(c.outs)
    run_cleanup(out_dir)
    return res


def run_cases(tdslc, cases, tally, backend="env", tag=""):
    """Runs the cases in bundles, two bundles at a time, and reports each case to tally,
    its name prefixed with tag."""
    groups = bundle_cases(cases)
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as ex:
        for group, res in zip(groups, ex.map(lambda g: run_bundle(tdslc, g, backend), groups)):
            for c, errs in zip(group, res):
                tally.report(f"{tag}{c.name} ({len(c.outs)} outputs)", errs)


# ---------------------------------------------------------------------------
# Unary ops: name -> (result dtype for an input dtype or None when PyTorch's CUDA
# build rejects it, NumPy function on opmath values, tdsl spelling)
# ---------------------------------------------------------------------------
def _float_out(dt):
    return dt if dt in FLOAT_DTYPES else "f32"


def _as_float(a):
    a = opm(a)
    return a if a.dtype.kind == "f" else a.astype(np.float32)


def _sigmoid(a):
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-a))


UNARY = {
    "neg": (lambda d: None if d == "bool" else d, lambda a: -a, "-{x}"),
    "bitwise_not": (lambda d: None if d in FLOAT_DTYPES else d, lambda a: ~a, "~{x}"),
    "logical_not": (lambda d: "bool", lambda a: a == 0, "logical_not({x})"),
    "abs": (lambda d: None if d == "bool" else d, np.abs, "{x}.abs()"),
    "exp": (_float_out, lambda a: np.exp(_as_float(a)), "exp({x})"),
    "log": (_float_out, lambda a: np.log(_as_float(a)), "{x}.log()"),
    "log2": (_float_out, lambda a: np.log2(_as_float(a)), "log2({x})"),
    "exp2": (_float_out, lambda a: np.exp2(_as_float(a)), "{x}.exp2()"),
    "sqrt": (_float_out, lambda a: np.sqrt(_as_float(a)), "sqrt({x})"),
    "rsqrt": (_float_out, lambda a: 1 / np.sqrt(_as_float(a)), "{x}.rsqrt()"),
    "sin": (_float_out, lambda a: np.sin(_as_float(a)), "sin({x})"),
    "cos": (_float_out, lambda a: np.cos(_as_float(a)), "{x}.cos()"),
    "tan": (_float_out, lambda a: np.tan(_as_float(a)), "tan({x})"),
    "tanh": (_float_out, lambda a: np.tanh(_as_float(a)), "{x}.tanh()"),
    "sigmoid": (_float_out, lambda a: _sigmoid(_as_float(a)), "sigmoid({x})"),
    "erf": (_float_out, lambda a: erf(_as_float(a)), "{x}.erf()"),
    "reciprocal": (_float_out, lambda a: 1 / _as_float(a), "reciprocal({x})"),
    # PyTorch's relu (clamp_min(0)): nan and -0.0 stay (np.maximum(-0.0, 0) is 0.0)
    "relu": (lambda d: None if d == "bool" else d, lambda a: np.where(a < 0, np.zeros_like(a), a), "relu({x})"),
    "gelu": (lambda d: d if d in FLOAT_DTYPES else None,
             lambda a: (0.5 * a * (1 + erf(a / np.sqrt(a.dtype.type(2)))).astype(a.dtype)), "gelu({x})"),
    "silu": (lambda d: d if d in FLOAT_DTYPES else None, lambda a: a * _sigmoid(a), "{x}.silu()"),
    "floor": (lambda d: None if d == "bool" else d, np.floor, "floor({x})"),
    "ceil": (lambda d: None if d == "bool" else d, np.ceil, "{x}.ceil()"),
    "round": (lambda d: None if d == "bool" else d, np.round, "round({x})"),
    "sign": (lambda d: d, lambda a: a if a.dtype == np.bool_ else np.where(np.isnan(a), 0, np.sign(a)).astype(a.dtype)
             if a.dtype.kind == "f" else np.sign(a), "{x}.sign()"),
    "square": (lambda d: "i64" if d == "bool" else d, lambda a: a.astype(np.int64) ** 2 if a.dtype == np.bool_ else a * a,
               "square({x})"),
    "expm1": (_float_out, lambda a: np.expm1(_as_float(a)), "expm1({x})"),
    "erfc": (_float_out, lambda a: _vec(math.erfc, _as_float(a)), "{x}.erfc()"),
    "lgamma": (_float_out, lambda a: _vec(_lgamma, _as_float(a)), "torch.lgamma({x})"),
    "log1p": (_float_out, lambda a: np.log1p(_as_float(a)), "{x}.log1p()"),
    "log10": (_float_out, lambda a: np.log10(_as_float(a)), "torch.log10({x})"),
    "sinh": (_float_out, lambda a: np.sinh(_as_float(a)), "sinh({x})"),
    "cosh": (_float_out, lambda a: np.cosh(_as_float(a)), "{x}.cosh()"),
    "asin": (_float_out, lambda a: np.arcsin(_as_float(a)), "asin({x})"),
    "acos": (_float_out, lambda a: np.arccos(_as_float(a)), "{x}.arccos()"),
    "atan": (_float_out, lambda a: np.arctan(_as_float(a)), "torch.atan({x})"),
    "asinh": (_float_out, lambda a: np.arcsinh(_as_float(a)), "{x}.asinh()"),
    "acosh": (_float_out, lambda a: np.arccosh(_as_float(a)), "torch.arccosh({x})"),
    "atanh": (_float_out, lambda a: np.arctanh(_as_float(a)), "atanh({x})"),
    "trunc": (lambda d: None if d == "bool" else d, np.trunc, "trunc({x})"),
    "fix": (lambda d: None if d == "bool" else d, np.trunc, "{x}.fix()"),
    "frac": (lambda d: d if d in FLOAT_DTYPES else None, lambda a: a - np.trunc(a), "{x}.frac()"),
    "isnan": (lambda d: "bool", lambda a: np.isnan(a) if a.dtype.kind == "f" else np.zeros(a.shape, bool),
              "isnan({x})"),
    "isinf": (lambda d: "bool", lambda a: np.isinf(a) if a.dtype.kind == "f" else np.zeros(a.shape, bool),
              "{x}.isinf()"),
    "isfinite": (lambda d: "bool", lambda a: np.isfinite(a) if a.dtype.kind == "f" else np.ones(a.shape, bool),
                 "torch.isfinite({x})"),
    "isposinf": (lambda d: "bool", lambda a: np.isposinf(a) if a.dtype.kind == "f" else np.zeros(a.shape, bool),
                 "isposinf({x})"),
    "isneginf": (lambda d: "bool", lambda a: np.isneginf(a) if a.dtype.kind == "f" else np.zeros(a.shape, bool),
                 "{x}.isneginf()"),
}
# ops whose results on nan/inf/±0 inputs are plain IEEE (checked on a special-values input)
UNARY_SPECIAL = ["neg", "abs", "exp", "log", "log2", "exp2", "sqrt", "sin", "cos", "tanh", "sigmoid", "erf",
                 "reciprocal", "relu", "floor", "ceil", "round", "sign", "square", "logical_not", "expm1", "log1p",
                 "log10", "sinh", "cosh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "trunc", "frac", "isnan",
                 "isinf", "isfinite", "isposinf", "isneginf", "erfc", "lgamma"]
SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -2.5, 1e-3, 100.0]


# ---------------------------------------------------------------------------
# Binary ops: name -> (result dtype for same-dtype operands or None, NumPy function
# on opmath values, tdsl spelling, which right operand it uses: 'y' any, 'd' a
# non-zero divisor, 'e' a non-negative exponent)
# ---------------------------------------------------------------------------
def _div_out(dt):
    return dt if dt in FLOAT_DTYPES else "f32"


def _no_bool(dt):
    return None if dt == "bool" else dt


def _npdiv(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return _as_float(a) / _as_float(b)


def _float_only(dt):
    return dt if dt in FLOAT_DTYPES else None


def _int_bool(dt):
    return None if dt in FLOAT_DTYPES else dt


def _int_only(dt):
    return dt if dt in INTS else None


def _trunc_div(a, b):
    """div(rounding_mode='trunc'): C's truncating division of ints, trunc(a / b) of floats."""
    if a.dtype.kind == "f":
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.trunc(a / b)
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q).astype(a.dtype)


def _bool_or(f_bool, f):
    return lambda a, b: f_bool(a, b) if a.dtype == np.bool_ else f(a, b)


BINARY = {
    "add": (lambda d: d, _bool_or(np.logical_or, np.add), "{a} + {b}", "y"),
    "sub": (_no_bool, np.subtract, "{a} - {b}", "y"),
    "mul": (lambda d: d, _bool_or(np.logical_and, np.multiply), "{a} * {b}", "y"),
    "div": (_div_out, _npdiv, "{a} / {b}", "y"),
    "floor_divide": (_no_bool, np.floor_divide, "{a} // {b}", "d"),
    "remainder": (_no_bool, np.remainder, "{a} % {b}", "d"),
    "pow": (_no_bool, np.power, "{a} ** {b}", "e"),
    "pow_fn": (_no_bool, np.power, "pow({a}, {b})", "e"),
    "maximum": (lambda d: d, np.maximum, "maximum({a}, {b})", "y"),
    "minimum": (lambda d: d, np.minimum, "{a}.minimum({b})", "y"),
    "atan2": (_div_out, lambda a, b: np.arctan2(_as_float(a), _as_float(b)), "atan2({a}, {b})", "y"),
    "eq": (lambda d: "bool", np.equal, "{a} == {b}", "y"),
    "ne": (lambda d: "bool", np.not_equal, "{a} != {b}", "y"),
    "lt": (lambda d: "bool", np.less, "{a} < {b}", "y"),
    "le": (lambda d: "bool", np.less_equal, "{a} <= {b}", "y"),
    "gt": (lambda d: "bool", np.greater, "{a} > {b}", "y"),
    "ge": (lambda d: "bool", np.greater_equal, "{a} >= {b}", "y"),
    "logical_and": (lambda d: "bool", lambda a, b: (a != 0) & (b != 0), "logical_and({a}, {b})", "y"),
    "logical_or": (lambda d: "bool", lambda a, b: (a != 0) | (b != 0), "{a}.logical_or({b})", "y"),
    "true_divide": (_div_out, _npdiv, "torch.true_divide({a}, {b})", "y"),
    "div_trunc": (_no_bool, _trunc_div, "div({a}, {b}, rounding_mode='trunc')", "d"),
    "div_floor": (_no_bool, np.floor_divide, "{a}.divide({b}, rounding_mode='floor')", "d"),
    "fmod": (_no_bool, np.fmod, "fmod({a}, {b})", "d"),
    "hypot": (_float_only, np.hypot, "hypot({a}, {b})", "y"),
    "copysign": (_div_out, lambda a, b: np.copysign(_as_float(a), _as_float(b)), "{a}.copysign({b})", "y"),
    "logaddexp": (_float_only, np.logaddexp, "logaddexp({a}, {b})", "y"),
    "logaddexp2": (lambda d: None if d == "f16" else _float_only(d), np.logaddexp2, "{a}.logaddexp2({b})", "y"),
    "bitwise_and": (_int_bool, np.bitwise_and, "bitwise_and({a}, {b})", "y"),
    "bitwise_or": (_int_bool, np.bitwise_or, "{a}.bitwise_or({b})", "y"),
    "bitwise_xor": (_int_bool, np.bitwise_xor, "torch.bitwise_xor({a}, {b})", "y"),
    "bitwise_left_shift": (_int_only, np.left_shift, "bitwise_left_shift({a}, {b})", "e"),
    "bitwise_right_shift": (_int_only, np.right_shift, "{a}.bitwise_right_shift({b})", "e"),
}


def gen_general(rng, dt, shape):
    """Operands for + - * / and friends: ints -9..9 (negatives included)."""
    if dt in INTS:
        return rand_values(rng, dt, shape, ilo=-9, ihi=9)
    return rand_values(rng, dt, shape)


def gen_numerator(rng, dt, shape):
    """Floats that are multiples of 1/4 in [-8, 8]: quotients and remainders are exact,
    so // and % are compared without rounding ambiguity."""
    if dt in INTS:
        return rand_values(rng, dt, shape, ilo=-20, ihi=20)
    return rnd(rng.integers(-32, 33, size=tuple(shape)) / 4.0, dt)


def gen_divisor(rng, dt, shape):
    """Non-zero divisors of both signs."""
    v = rng.integers(1, 5, size=tuple(shape)) * rng.choice([-1, 1], size=tuple(shape))
    if dt in INTS:
        return v.astype(VALUE_NP[dt])
    return rnd(v / 2.0, dt)


def gen_exponent(rng, dt, shape):
    if dt in INTS:
        return rand_values(rng, dt, shape, ilo=0, ihi=3)
    return rnd(rng.uniform(-2, 3, size=tuple(shape)), dt)


def gen_base(rng, dt, shape):
    """pow bases: ints -3..3, floats positive mostly (a few negative ones give nan)."""
    if dt in INTS:
        return rand_values(rng, dt, shape, ilo=-3, ihi=3)
    return rnd(rng.uniform(-0.25, 2, size=tuple(shape)), dt)


def gen_coarse(rng, dt, shape):
    """Values with many exact ties (for argmax/argmin and amax)."""
    if dt in INT_DTYPES:
        return rand_values(rng, dt, shape)
    return rnd(rng.integers(-4, 5, size=tuple(shape)) / 4.0, dt)


def gen_positive(rng, dt, shape):
    if dt in INTS:
        return rand_values(rng, dt, shape, ilo=1, ihi=4)
    return rnd(rng.uniform(0.05, 2.0, size=tuple(shape)), dt)
