#!/usr/bin/python3
"""tests/run/test_ops.py TDSLC: every materializing op of LANGUAGE.md §6 with every dtype
PyTorch's CUDA build takes for it, and the stores of §7, through `tdslc run --json`.

Each program groups many outputs (one op over contiguous, transposed, stepped and
expanded operands, see op_cases.LAYOUTS); inputs are written here with NumPy and
passed with --in, and every output is compared with NumPy computing the same thing
(in PyTorch's opmath type, rounded to the result dtype) with a tolerance for the
dtype: exact for ints, bools, copies and casts. Cases run in bundles of up to 8 (160
outputs) per compile (op_cases.run_cases); when a bundle fails, each case is run alone,
and when a case fails, each of its outputs, so the report names the op at fault.

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and
exits 77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import os
import sys
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import (ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, INTS, VALUE_NP, Tally, opm, rand_values,  # noqa: E402
                    require_backend, rnd, test_subset)
from op_cases import (BINARY, SPECIALS, UNARY, UNARY_SPECIAL, Case, gen_base, gen_coarse, gen_divisor,  # noqa: E402
                      gen_exponent, gen_general, gen_numerator, gen_positive, run_cases)
from sort_cases import sort_cases  # noqa: E402
from attn_cases import attention_cases  # noqa: E402

F64 = np.float64
METHOD = {"f32": "float", "f64": "double", "i32": "int", "i64": "long", "f16": "half", "bf16": "bfloat16",
          "bool": "bool", "u8": "byte", "i8": "char", "i16": "short"}


def rng_for(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def f64(a):
    return np.asarray(a).astype(F64)


# ---------------------------------------------------------------------------
# PyTorch's torch.result_type (c10 promoteTypes + the dims > 0-d > literal rule)
# ---------------------------------------------------------------------------
ORDER = ["bool", "u8", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"]


def promote(a, b):
    if a == b:
        return a
    fa, fb = a in FLOAT_DTYPES, b in FLOAT_DTYPES
    if {a, b} == {"f16", "bf16"}:
        return "f32"
    if {a, b} == {"u8", "i8"}:
        return "i16"
    if fa != fb:
        return a if fa else b
    return max(a, b, key=ORDER.index)


def category(d):
    return 0 if d is None else 1 if d == "bool" else 2 if d in INTS else 3


def combine(higher, lower):
    if higher in FLOAT_DTYPES:
        return higher
    if higher == "bool" or lower in FLOAT_DTYPES:
        return lower if higher is None else (higher if lower is None else promote(higher, lower))
    return higher if higher is not None else lower


def result_type(operands):
    """operands: (dtype, 'dim' | '0d' | 'lit')  — literals: bool, i64 for ints, f32 for floats."""
    res = {"dim": None, "0d": None, "lit": None}
    for dt, kind in operands:
        res[kind] = dt if res[kind] is None else promote(res[kind], dt)
    return combine(res["dim"], combine(res["0d"], res["lit"]))


# ---------------------------------------------------------------------------
# Case builders
# ---------------------------------------------------------------------------
def gen_wide(rng, dt, shape):
    if dt in INTS:
        return rand_values(rng, dt, shape, ilo=-50, ihi=50)
    return rand_values(rng, dt, shape, lo=-100, hi=100)


def cast_cases():
    cases = []
    for src in ALL_DTYPES:
        c = Case(f"cast_from_{src}")
        rng = rng_for(c.name)
        ops = {lay: c.param(src, [3, 5], lay, rng, gen=gen_wide) for lay in ("c", "t", "s", "e")}
        for k, dst in enumerate(ALL_DTYPES):
            lay_a, lay_b = "ctse"[k % 4], "tsec"[k % 4]
            ea, va = ops[lay_a]
            eb, vb = ops[lay_b]
            same = dst == src
            c.out(f"{ea}.to({dst})", dst, rnd(va, dst), "exact", view=same)
            c.out(f"{eb}.{METHOD[dst]}()", dst, rnd(vb, dst), "exact", view=same)
        # copies
        for lay in ("t", "s", "e"):
            e, v = ops[lay]
            c.out(f"{e}.contiguous()", src, v, "exact")
            c.out(f"{e}.clone()", src, v, "exact")
        e, v = ops["c"]
        c.out(f"{e}.clone()", src, v, "exact")
        e, v = ops["t"]
        c.out(f"{e}.reshape(-1)", src, v.reshape(-1), "exact")
        c.out(f"{e}.flatten()", src, v.reshape(-1), "exact")
        e, v = ops["s"]
        c.out(f"{e}.reshape(5, 3)", src, v.reshape(5, 3), "exact")
        cases.append(c)
    # non-finite values and overflow between float types; float -> bool
    c = Case("cast_specials")
    sp = np.array(SPECIALS + [1e5, -7e4, 3.0e38], dtype=np.float32)
    e32, v32 = c.param("f32", [15], val=sp)
    sp64 = np.array(SPECIALS + [1e300, -1e40, 1e-300], dtype=np.float64)
    e64, v64 = c.param("f64", [15], val=sp64)
    for dst in ("f16", "bf16", "f64", "bool"):
        c.out(f"{e32}.to({dst})", dst, rnd(v32, dst), "exact")
    for dst in ("f16", "bf16", "f32", "bool"):
        c.out(f"{e64}.to({dst})", dst, rnd(v64, dst), "exact")
    cases.append(c)
    return cases


def unary_cases():
    cases = []
    for dt in ALL_DTYPES:
        c = Case(f"unary_{dt}")
        rng = rng_for(c.name)
        gen = {lay: c.param(dt, [4, 6], lay, rng, gen=gen_general) for lay in ("c", "t", "s", "e")}
        pos = {lay: c.param(dt, [4, 6], lay, rng, gen=gen_positive) for lay in ("t", "s")} if dt != "bool" else {}
        for k, (op, (outdt, fn, spell)) in enumerate(UNARY.items()):
            od = outdt(dt)
            if od is None:
                continue
            for j, lay in enumerate(("cts", "tse", "sec", "ect")[k % 4][:2]):
                e, v = pos[lay] if (j == 1 and lay in pos) else gen[lay]
                with np.errstate(all="ignore"):
                    want = fn(opm(v))
                c.out(spell.format(x=e), od, want, "exact" if od in INT_DTYPES else "elem")
        if dt in FLOAT_DTYPES:
            es, vs = c.param(dt, [len(SPECIALS)], val=rnd(np.array(SPECIALS), dt))
            for op in UNARY_SPECIAL:
                outdt, fn, spell = UNARY[op]
                with np.errstate(all="ignore"):
                    exact = outdt(dt) in INT_DTYPES or (op == "relu" and dt in ("f32", "f64"))  # -0.0's sign too
                    c.out(spell.format(x=es), outdt(dt), fn(opm(vs)), "exact" if exact else "elem")
        cases.append(c)
    return cases


GENS = {"y": (gen_general, gen_general), "d": (gen_numerator, gen_divisor), "e": (gen_base, gen_exponent)}


def _lit(v, a):
    """An int literal as PyTorch's op on int tensor a sees it: converted to a's dtype
    (a u8 operand makes -2 254), where NumPy would widen a instead."""
    return np.array(v).astype(a.dtype) if a.dtype.kind in "iu" else v


def binary_cases():
    cases = []
    for dt in ALL_DTYPES:
        c = Case(f"binary_{dt}")
        rng = rng_for(c.name)
        ops = {}
        for kind, (gl, gr) in GENS.items():
            if dt == "bool" and kind != "y":
                continue
            ops[kind] = {
                "Lc": c.param(dt, [4, 6], "c", rng, gen=gl), "Ls": c.param(dt, [4, 6], "s", rng, gen=gl),
                "Le": c.param(dt, [4, 6], "e", rng, gen=gl), "Rt": c.param(dt, [4, 6], "t", rng, gen=gr),
                "Rrow": c.param(dt, [6], "c", rng, gen=gr), "Rcol": c.param(dt, [4, 1], "c", rng, gen=gr)}
        for op, (outdt, fn, spell, kind) in BINARY.items():
            od = outdt(dt)
            if od is None:
                continue
            o = ops[kind]
            pairs = [("Lc", "Rt"), ("Ls", "Rrow"), ("Le", "Rcol")] + ([("Rcol", "Ls")] if kind == "y" else [])
            for a, b in pairs:
                (ea, va), (eb, vb) = o[a], o[b]
                with np.errstate(all="ignore"):
                    want = fn(opm(va), opm(vb))
                c.out(spell.format(a=ea, b=eb), od, want, "exact" if od in INT_DTYPES else "elem")
        # literals (PyTorch: a literal takes part in promotion only across categories)
        e, v = ops["y"]["Lc"]
        a = opm(v)
        lits = [("{x} + 2", lambda a: a + 2 if a.dtype != np.bool_ else a.astype(np.int64) + 2, ("lit", "i64")),
                ("3 * {x}", lambda a: a * 3 if a.dtype != np.bool_ else a.astype(np.int64) * 3, ("lit", "i64")),
                ("{x} * 0.5", lambda a: a.astype(np.float32) * np.float32(0.5) if a.dtype.kind != "f" else a * 0.5,
                 ("lit", "f32")),
                ("1.5 - {x}" if dt != "bool" else "1.5 + {x}",  # PyTorch: no `-` with a bool tensor
                 lambda a: np.float32(1.5) - a.astype(np.float32) if a.dtype != np.bool_ and a.dtype.kind != "f"
                 else 1.5 - a if a.dtype.kind == "f" else np.float32(1.5) + a.astype(np.float32), ("lit", "f32")),
                ("{x} / 4", lambda a: a.astype(np.float32) / np.float32(4) if a.dtype.kind != "f" else a / 4, None),
                ("{x} > 0", lambda a: a > 0, "bool"), ("0.25 >= {x}", lambda a: 0.25 >= a, "bool"),
                ("{x} == 1", lambda a: a == 1, "bool")]
        if dt != "bool":
            en, vn = ops["d"]["Lc"]
            eb_, vb_ = ops["e"]["Lc"]
            er_, vr_ = ops["e"]["Rt"]
            lits += [("{n} // 2", lambda a: np.floor_divide(opm(vn), _lit(2, vn)), ("lit", "i64")),
                     ("{n} % 3", lambda a: np.remainder(opm(vn), _lit(3, vn)), ("lit", "i64")),
                     ("{n} // -2", lambda a: np.floor_divide(opm(vn), _lit(-2, vn)), ("lit", "i64")),
                     ("{n} % -3", lambda a: np.remainder(opm(vn), _lit(-3, vn)), ("lit", "i64")),
                     ("{b} ** 2", lambda a: opm(vb_) ** 2, ("lit", "i64")),
                     ("2 ** {r}", lambda a: 2 ** opm(vr_) if dt in FLOAT_DTYPES else
                      (np.int64(2) ** opm(vr_)).astype(opm(vr_).dtype), ("lit", "i64")),
                     ("{x} ** 0.5", lambda a: np.power(a.astype(np.float32) if a.dtype.kind != "f" else a, 0.5),
                      ("lit", "f32"))]
            if dt in FLOAT_DTYPES:
                lits += [("{n} // 0.75", lambda a: np.floor_divide(opm(vn), 0.75), ("lit", "f32")),
                         ("{n} % -1.25", lambda a: np.remainder(opm(vn), -1.25), ("lit", "f32"))]
        for spell, fn, kind in lits:
            if kind is None:
                od = dt if dt in FLOAT_DTYPES else "f32"
            elif kind == "bool":
                od = "bool"
            else:
                od = result_type([(dt, "dim"), (kind[1], "lit")])
            with np.errstate(all="ignore"):
                want = fn(a)
            src = spell.format(x=e, n=ops["d"]["Lc"][0] if dt != "bool" else "",
                               b=ops["e"]["Lc"][0] if dt != "bool" else "",
                               r=ops["e"]["Rt"][0] if dt != "bool" else "")
            c.out(src, od, want, "exact" if od in INT_DTYPES else "elem")
        cases.append(c)
    return cases


def promotion_cases():
    """Mixed dtypes: dims beat 0-d beat literals, each only within a higher category."""
    c = Case("promotion")
    rng = rng_for(c.name)
    combos = [  # (a dtype, a is 0-d, op, b dtype, b is 0-d)
        ("i32", False, "+", "i64", False), ("i32", False, "*", "f32", False), ("f16", False, "+", "f32", False),
        ("bf16", False, "+", "f16", False), ("bool", False, "+", "i32", False), ("bool", False, "*", "f16", False),
        ("i64", False, "-", "f64", False), ("i32", False, "/", "f16", False), ("i64", False, "//", "i32", False),
        ("f32", False, "-", "bf16", False), ("i32", False, "+", "i64", True), ("i32", False, "+", "f64", True),
        ("f16", False, "*", "f32", True), ("bool", False, "+", "i32", True), ("f32", False, "+", "f64", True),
        ("i64", False, "*", "f16", True), ("bool", False, "+", "f64", True), ("i32", True, "+", "i64", True),
        ("i32", True, "*", "f16", False), ("i32", False, "/", "i32", False), ("i64", False, "/", "i64", True),
        ("i32", False, "<", "f32", True), ("f16", False, ">=", "f64", False), ("bf16", False, "==", "bf16", True),
    ]
    small = [  # u8, i8, i16 (a program of their own: tdslc takes at most 64 --in)
        ("u8", False, "+", "i8", False), ("u8", False, "*", "i16", False), ("i8", False, "-", "i32", False),
        ("u8", False, "+", "i64", False), ("bool", False, "+", "u8", False), ("u8", False, "+", "f16", False),
        ("u8", False, "/", "u8", False), ("i16", False, "//", "u8", False), ("u8", False, "<", "i8", False),
        ("u8", False, "+", "i64", True), ("i8", False, "*", "u8", True), ("i16", False, "-", "i8", True),
        ("u8", False, "+", "f32", True), ("i8", True, "+", "u8", True), ("u8", False, ">=", "i64", True),
        ("u8", False, "//", "i64", True), ("i8", False, "==", "i16", True), ("u8", True, "-", "bf16", False),
    ]
    fns = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide, "//": np.floor_divide,
           "<": np.less, ">=": np.greater_equal, "==": np.equal}
    cs = Case("promotion_small_int")
    for case, cmb in ((c, combos), (cs, small)):
        r = rng if case is c else rng_for(case.name)
        for da, za, op, db, zb in cmb:
            gl = gen_numerator if op in ("//",) else gen_general
            gr = gen_divisor if op in ("//", "/") else gen_general
            ea, va = case.param(da, [] if za else [3, 4], "c", r, gen=gl)
            eb, vb = case.param(db, [] if zb else [4], "c", r, gen=gr)
            rt = result_type([(da, "0d" if za else "dim"), (db, "0d" if zb else "dim")])
            if op == "/" and rt not in FLOAT_DTYPES:
                rt = "f32"
            od = "bool" if op in ("<", ">=", "==") else rt
            with np.errstate(all="ignore"):
                want = fns[op](opm(rnd(va, rt)), opm(rnd(vb, rt)))
            case.out(f"{ea} {op} {eb}", od, want, "exact" if od in INT_DTYPES else "elem")
    # literals with 0-d tensors; where and cat promote too
    e0, v0 = c.param("i32", [], "c", rng, gen=gen_general)
    c.out(f"{e0} + 1.5", "f32", v0.astype(np.float32) + np.float32(1.5))
    e1, v1 = c.param("f16", [2, 3], "c", rng)
    c.out(f"{e1} + 2.5", "f16", opm(v1) + np.float32(2.5))
    e2, v2 = c.param("bool", [2, 3], "c", rng)
    c.out(f"{e2} + 2.5", "f32", v2.astype(np.float32) + np.float32(2.5))
    c.out(f"{e2} + true", "bool", v2 | True, "exact")
    e3, v3 = c.param("i32", [2, 3], "c", rng, gen=gen_general)
    c.out(f"where({e2}, {e3}, 0.5)", "f32", np.where(v2, v3.astype(np.float32), np.float32(0.5)))
    e4, v4 = c.param("f64", [3], "c", rng)
    c.out(f"where({e2}, {e3}, {e4})", "f64", np.where(v2, v3.astype(F64), v4))
    e5, v5 = c.param("f32", [2, 2], "c", rng)
    c.out(f"cat([{e3}, {e5}], 1)", "f32", np.concatenate([v3.astype(np.float32), v5], 1), "exact")
    c.out(f"{e3}.clamp(min=0.5)", "f32", np.maximum(v3.astype(np.float32), np.float32(0.5)))
    return [c, cs]


def select_cases():
    """where, clamp, maximum-like selection; nan handling for floats."""
    cases = []
    for dt in ALL_DTYPES:
        c = Case(f"where_clamp_{dt}")
        rng = rng_for(c.name)
        cc, vc = c.param("bool", [4, 6], "t", rng)
        cr, vcr = c.param("bool", [6], "c", rng)
        a = {lay: c.param(dt, [4, 6], lay, rng, gen=gen_general) for lay in ("c", "s", "e")}
        (ea, va), (es, vs), (ee, ve) = a["c"], a["s"], a["e"]
        c.out(f"where({cc}, {ea}, {es})", dt, np.where(vc, va, vs), "exact")
        c.out(f"where({cr}, {ee}, {ea})", dt, np.where(vcr, ve, va), "exact")
        c.out(f"{es}.where({cc}, {ee})", dt, np.where(vc, vs, ve), "exact")
        zero = "false" if dt == "bool" else "0"
        c.out(f"where({cc}, {ea}, {zero})", dt, np.where(vc, va, rnd(0, dt)), "exact")
        c.out(f"where({cr}, {ea}.abs(), {es})" if dt != "bool" else f"where({cr}, {ea}, {es})", dt,
              np.where(vcr, np.abs(va) if dt != "bool" else va, vs), "exact")
        if dt != "bool":
            if dt in FLOAT_DTYPES:
                bounds = [("min=-0.25, max=0.5", -0.25, 0.5), ("min=0", 0, None), ("max=0.1", None, 0.1),
                          ("min=0.5, max=-0.5", 0.5, -0.5)]
            else:
                bounds = [("min=-2, max=3", -2, 3), ("min=0", 0, None), ("max=1", None, 1), ("min=2, max=1", 2, 1)]
            for k, (spell, lo, hi) in enumerate(bounds):
                e, v = a["cse"[k % 3]]
                w = opm(v)
                if lo is not None:
                    w = np.maximum(w, np.array(lo).astype(w.dtype))
                if hi is not None:
                    w = np.minimum(w, np.array(hi).astype(w.dtype))
                form = f"clamp({e}, {spell})" if k % 2 else f"{e}.clamp({spell})"
                c.out(form, dt, w, "exact" if dt in INT_DTYPES else "elem")
            if dt in FLOAT_DTYPES:
                esp, vsp = c.param(dt, [len(SPECIALS)], val=rnd(np.array(SPECIALS), dt))
                c.out(f"{esp}.clamp(min=0, max=1)", dt, np.minimum(np.maximum(opm(vsp), 0), 1))
                c.out(f"maximum({esp}, {esp}.flip(0))", dt, np.maximum(opm(vsp), opm(vsp)[::-1]))
                c.out(f"minimum({esp}, {esp}.flip(0))", dt, np.minimum(opm(vsp), opm(vsp)[::-1]))
                c.out(f"where({esp} > 0, {esp}, -{esp})", dt, np.where(opm(vsp) > 0, opm(vsp), -opm(vsp)))
        cases.append(c)
    return cases


# reductions: name -> (result dtype or None, NumPy function (values, axis, keepdim), takes a dim list)
def _acc(a):
    a = np.asarray(a)
    return a.astype(np.int64) if a.dtype.kind in "biu" else a.astype(F64)


REDUCE = {
    "sum": (lambda d: "i64" if d in INT_DTYPES else d, lambda a, ax, k: np.sum(_acc(a), axis=ax, keepdims=k), True),
    "mean": (lambda d: d if d in FLOAT_DTYPES else None, lambda a, ax, k: np.mean(_acc(a), axis=ax, keepdims=k), True),
    "amax": (lambda d: d, lambda a, ax, k: np.amax(a, axis=ax, keepdims=k), True),
    "amin": (lambda d: d, lambda a, ax, k: np.amin(a, axis=ax, keepdims=k), True),
    "var": (lambda d: d if d in FLOAT_DTYPES else None, lambda a, ax, k: np.var(_acc(a), axis=ax, keepdims=k, ddof=1), True),
    "std": (lambda d: d if d in FLOAT_DTYPES else None, lambda a, ax, k: np.std(_acc(a), axis=ax, keepdims=k, ddof=1), True),
    "logsumexp": (lambda d: d if d in FLOAT_DTYPES else "f32",
                  lambda a, ax, k: np.log(np.sum(np.exp(f64(a)), axis=ax, keepdims=k)), True),
    "prod": (lambda d: "i64" if d in INT_DTYPES else d, lambda a, ax, k: np.prod(_acc(a), axis=ax, keepdims=k), False),
    "argmax": (lambda d: None if d == "bool" else "i64", None, False),
    "argmin": (lambda d: None if d == "bool" else "i64", None, False),
    # PyTorch 1.13: uint8 in, uint8 out; bool for every other dtype
    "all": (lambda d: "u8" if d == "u8" else "bool", lambda a, ax, k: np.all(a != 0, axis=ax, keepdims=k), False),
    "any": (lambda d: "u8" if d == "u8" else "bool", lambda a, ax, k: np.any(a != 0, axis=ax, keepdims=k), False),
}


def argfn(np_f):
    def f(a, ax, k):
        if ax is None:
            return np_f(a.reshape(-1))
        r = np_f(a, axis=ax)
        return np.expand_dims(r, ax) if k else r
    return f


def reduce_cases():
    cases = []
    for dt in ALL_DTYPES:
        c = Case(f"reduce_{dt}")
        rng = rng_for(c.name)
        xc = c.param(dt, [4, 5, 6], "c", rng)
        xt = c.param(dt, [4, 5, 6], "t", rng)
        xs = c.param(dt, [3, 7], "s", rng)
        ties = {lay: c.param(dt, [5, 6], lay, rng, gen=gen_coarse) for lay in ("c", "t")}
        for op, (outdt, fn, takes_list) in REDUCE.items():
            od = outdt(dt)
            if od is None:
                continue
            if op in ("argmax", "argmin"):
                fn = argfn(np.argmax if op == "argmax" else np.argmin)
            variants = [(xc, None, False, f"{op}({{x}})"), (xc, 1, False, f"{{x}}.{op}(1)"),
                        (xt, 2, True, f"{op}({{x}}, -1, keepdim=true)"), (xs, 0, False, f"{{x}}.{op}(dim=0)")]
            if takes_list:
                variants += [(xc, (0, 2), False, f"{op}({{x}}, [0, 2])"),
                             (xt, (2, 0), True, f"{{x}}.{op}([-1, 0], keepdim=true)")]
            if op in ("amax", "amin", "argmax", "argmin"):
                variants += [(ties["c"], 1, False, f"{op}({{x}}, 1)"), (ties["t"], 0, True, f"{{x}}.{op}(0, True)".replace("True", "true")),
                             (ties["t"], None, False, f"{op}({{x}})")]
            for (e, v), ax, keep, spell in variants:
                n = v.size if ax is None else int(np.prod([v.shape[i] for i in np.atleast_1d(ax)]))
                with np.errstate(all="ignore"):
                    want = fn(opm(v), ax, keep)
                c.out(spell.format(x=e), od, want, "exact" if od in INT_DTYPES else "red", n)
        # var/std unbiased both ways, positional forms, max()/min(), sum with dtype=
        e, v = xc
        if dt in FLOAT_DTYPES:
            a = f64(v)
            c.out(f"{e}.var(1, keepdim=true, unbiased=false)", dt, np.var(a, 1, keepdims=True), "red", 5)
            c.out(f"var({e}, 1, false, true)", dt, np.var(a, 1, keepdims=True), "red", 5)
            c.out(f"std({e}, unbiased=false)", dt, np.std(a), "red", 120)
            c.out(f"{e}.std(-1, unbiased=true)", dt, np.std(a, -1, ddof=1), "red", 6)
            c.out(f"var({e}, [0, 1], unbiased=false)", dt, np.var(a, (0, 1)), "red", 20)
            c.out(f"{e}.var(true)", dt, np.var(a, ddof=1), "red", 120)
            c.out(f"{e}.sum(1, dtype=f64)", "f64", np.sum(a, 1), "red", 5)
            c.out(f"{e}.mean([0, -1], keepdim=true)", dt, np.mean(a, (0, 2), keepdims=True), "red", 24)
        else:
            c.out(f"sum({e}, 0, dtype=i32)", "i32", np.sum(v.astype(np.int64), 0), "exact")
        c.out(f"{e}.max()", dt, np.amax(opm(v)), "exact" if dt in INT_DTYPES else "elem")
        c.out(f"min({xt[0]})", dt, np.amin(opm(xt[1])), "exact" if dt in INT_DTYPES else "elem")
        if dt == "f32":  # nan: amax/max propagate it, argmax points at the first nan
            sp = rnd(rng.uniform(-1, 1, (3, 5)), dt)
            sp[0, 2] = sp[0, 4] = np.nan
            sp[2, 1] = np.nan
            es, vs = c.param(dt, [3, 5], val=sp)
            c.out(f"{es}.amax(1)", dt, np.amax(vs, 1))
            c.out(f"{es}.amin(-1)", dt, np.amin(vs, 1))
            c.out(f"{es}.argmax(1)", "i64", np.argmax(vs, 1), "exact")
            c.out(f"{es}.argmin(1)", "i64", np.argmin(vs, 1), "exact")
            c.out(f"{es}.max()", dt, np.amax(vs))
            c.out(f"{es}.sum(0)", dt, np.sum(vs, 0), "red", 3)
        cases.append(c)
    return cases


def softmax_cases():
    cases = []
    for dt in FLOAT_DTYPES:
        c = Case(f"softmax_{dt}")
        rng = rng_for(c.name)
        xc = c.param(dt, [3, 4, 5], "c", rng)
        xt = c.param(dt, [3, 4, 5], "t", rng)
        xs = c.param(dt, [2, 6], "s", rng, gen=lambda r, d, s: rand_values(r, d, s, lo=-50, hi=50))
        xe = c.param(dt, [3, 5], "e", rng)

        def sm(a, ax):
            a = f64(a)
            m = np.max(a, axis=ax, keepdims=True)
            ex = np.exp(a - m)
            return ex / ex.sum(axis=ax, keepdims=True)

        def lsm(a, ax):
            a = f64(a)
            m = np.max(a, axis=ax, keepdims=True)
            return a - m - np.log(np.exp(a - m).sum(axis=ax, keepdims=True))

        for (e, v), d, spell, f in [(xc, 0, "softmax({x}, 0)", sm), (xt, 1, "softmax({x}, dim=1)", sm),
                                    (xc, 2, "{x}.softmax(2)", sm), (xt, -1, "softmax({x}, -1)", sm),
                                    (xs, 1, "softmax({x}, -1)", sm), (xe, 0, "{x}.softmax(0)", sm),
                                    (xc, 0, "log_softmax({x}, 0)", lsm), (xt, -2, "log_softmax({x}, dim=-2)", lsm),
                                    (xc, 2, "{x}.log_softmax(-1)", lsm), (xs, 1, "log_softmax({x}, 1)", lsm),
                                    (xe, 1, "{x}.log_softmax(1)", lsm)]:
            c.out(spell.format(x=e), dt, f(v, d), "red", v.shape[d])
        if dt in ("f16", "bf16"):
            e, v = xc
            c.out(f"softmax({e}, -1, dtype=f32)", "f32", sm(v, -1), "red", 5)
        if dt == "f32":  # masked rows: -inf gives exactly 0
            m = rnd(rng.uniform(-1, 1, (3, 4)), dt)
            m[0, 1] = m[1, 0] = m[1, 3] = -np.inf
            em, vm = c.param(dt, [3, 4], val=m)
            c.out(f"softmax({em}, -1)", dt, sm(vm, -1), "red", 4)
        cases.append(c)
    return cases


def matmul_cases():
    cases = []
    M, K, N, B = 3, 16, 5, 2
    for dt in FLOAT_DTYPES:
        c = Case(f"matmul_{dt}")
        rng = rng_for(c.name)
        v1 = c.param(dt, [K], "c", rng)
        w1 = c.param(dt, [K], "s", rng)
        A = c.param(dt, [M, K], "c", rng)
        At = c.param(dt, [M, K], "t", rng)
        As = c.param(dt, [M, K], "s", rng)
        Ae = c.param(dt, [M, K], "e", rng)
        Bm = c.param(dt, [K, N], "c", rng)
        Bt = c.param(dt, [K, N], "t", rng)
        A3 = c.param(dt, [B, M, K], "c", rng)
        A3t = c.param(dt, [B, M, K], "s", rng)
        B3 = c.param(dt, [B, K, N], "c", rng)
        B3e = c.param(dt, [B, K, N], "e", rng)
        A4 = c.param(dt, [2, 1, M, K], "c", rng)
        B4 = c.param(dt, [4, K, N], "c", rng)
        combos = [(v1, w1, "{a} @ {b}"), (v1, Bm, "{a} @ {b}"), (A, w1, "matmul({a}, {b})"), (A, Bm, "{a} @ {b}"),
                  (At, Bt, "{a} @ {b}"), (As, Bm, "{a}.matmul({b})"), (Ae, Bt, "{a} @ {b}"),
                  (A3, B3, "{a} @ {b}"), (A3t, B3e, "{a} @ {b}"), (A3, Bm, "{a} @ {b}"), (A, B3, "{a} @ {b}"),
                  (v1, B3, "{a} @ {b}"), (A3, w1, "{a} @ {b}"), (A4, B4, "{a} @ {b}"), (A, Bt, "mm({a}, {b})"),
                  (As, Bm, "{a}.mm({b})"), (A3, B3e, "bmm({a}, {b})"), (A3t, B3, "{a}.bmm({b})")]
        for (ea, va), (eb, vb), spell in combos:
            c.out(spell.format(a=ea, b=eb), dt, np.matmul(f64(va), f64(vb)), "mm", K)
        e, v = A
        c.out(f"{e} @ {e}.t()", dt, f64(v) @ f64(v).T, "mm", K)
        cases.append(c)
    return cases


def join_cases():
    cases = []
    for dt in ALL_DTYPES:
        c = Case(f"cat_stack_{dt}")
        rng = rng_for(c.name)
        a, b = c.param(dt, [2, 3], "c", rng), c.param(dt, [4, 3], "t", rng)
        cc, d = c.param(dt, [2, 5], "s", rng), c.param(dt, [2, 3], "e", rng)
        (ea, va), (eb, vb), (ec, vc), (ed, vd) = a, b, cc, d
        c.out(f"cat([{ea}, {eb}])", dt, np.concatenate([va, vb], 0), "exact")
        c.out(f"cat([{ea}, {eb}, {ea}], dim=0)", dt, np.concatenate([va, vb, va], 0), "exact")
        c.out(f"cat([{ea}, {ec}], 1)", dt, np.concatenate([va, vc], 1), "exact")
        c.out(f"cat([{ec}, {ed}, {ea}], dim=-1)", dt, np.concatenate([vc, vd, va], -1), "exact")
        c.out(f"cat([{ea}.t(), {ed}.t()], 0)", dt, np.concatenate([va.T, vd.T], 0), "exact")
        for k in (0, 1, 2, -1):
            c.out(f"stack([{ea}, {ed}], {k})" if k != 1 else f"stack([{ea}, {ed}, {ea}], dim=1)", dt,
                  np.stack([va, vd] if k != 1 else [va, vd, va], k), "exact")
        c.out(f"stack([{ea}[0], {eb}[1], {ec}[0, ::2]], -1)", dt, np.stack([va[0], vb[1], vc[0, ::2]], -1), "exact")
        cases.append(c)
    return cases


def index_cases():
    cases = []
    for dt in ALL_DTYPES:
        c = Case(f"gather_{dt}")
        rng = rng_for(c.name)
        ex, vx = c.param(dt, [5, 6, 4], "c", rng, gen=gen_general)
        et, vt = c.param(dt, [5, 6, 4], "t", rng, gen=gen_general)
        ei, vi = c.param("i64", [3], val=np.array([4, -1, 0]))
        ej, vj = c.param("i64", [3], val=np.array([-6, 2, 5]))
        ek, vk = c.param("i64", [3], val=np.array([3, -4, 1]))
        e2, v2 = c.param("i64", [2, 2], val=np.array([[1, -2], [0, 1]]))
        c.out(f"{ex}[{ei}]", dt, vx[vi], "exact")
        c.out(f"{et}[{ei}]", dt, vt[vi], "exact")
        c.out(f"{ex}[:, {ej}]", dt, vx[:, vj], "exact")
        c.out(f"{ex}[{ei}, {ej}]", dt, vx[vi, vj], "exact")
        c.out(f"{et}[{ei}, :, {ek}]", dt, vt[vi, :, vk], "exact")
        c.out(f"{ex}[:, {ej}, {ek}]", dt, vx[:, vj, vk], "exact")
        c.out(f"{ex}[1:, {ej}]", dt, vx[1:, vj], "exact")
        c.out(f"{ex}[{e2}]", dt, vx[v2], "exact")
        c.out(f"{ex}[{e2}, {ei}[:2]]", dt, vx[v2, vi[:2]], "exact")
        c.out(f"{ex}[{ei}][..., ::2]", dt, vx[vi][..., ::2], "exact", view=True)  # a view of the gather
        c.out(f"{ex}[..., {ek}]", dt, vx[..., vk], "exact")
        c.out(f"{ex}[2, :, {ek}]", dt, vx[2][:, vk], "exact")   # PyTorch: the int selects first
        c.out(f"{ex}[::2, {ej}, 1:3]", dt, vx[::2, vj, 1:3], "exact")
        c.out(f"{ex}[{ei}, 1]", dt, vx[vi][:, 1], "exact")
        # index_select: i32 and i64 indices, each dim
        e32, v32 = c.param("i32", [4], val=np.array([3, 0, 3, 1], dtype=np.int32))
        e64, v64 = c.param("i64", [2], val=np.array([1, 0]))
        c.out(f"index_select({ex}, 0, {e32})", dt, np.take(vx, v32, 0), "exact")
        c.out(f"{et}.index_select(1, {e64})", dt, np.take(vt, v64, 1), "exact")
        c.out(f"index_select({ex}, -1, {e32})", dt, np.take(vx, v32, 2), "exact")
        c.out(f"index_select({et}, dim=2, index={e64})", dt, np.take(vt, v64, 2), "exact")
        # gather: index no larger than the input in the other dims
        eg, vg = c.param(dt, [4, 5], "t", rng, gen=gen_general)
        g0, vg0 = c.param("i64", [3, 5], val=rng.integers(0, 4, (3, 5)))
        g1, vg1 = c.param("i64", [4, 7], val=rng.integers(0, 5, (4, 7)))
        g2, vg2 = c.param("i64", [2, 3], val=rng.integers(0, 4, (2, 3)))
        c.out(f"gather({eg}, 0, {g0})", dt, np.take_along_axis(vg, vg0, 0), "exact")
        c.out(f"{eg}.gather(1, {g1})", dt, np.take_along_axis(vg, vg1, 1), "exact")
        c.out(f"gather({eg}, -2, {g2})", dt, np.take_along_axis(vg[:, :3], vg2, 0), "exact")
        c.out(f"gather({eg}, dim=1, index={g2}.t())", dt, np.take_along_axis(vg[:3, :], vg2.T, 1), "exact")
        cases.append(c)
    return cases


SMALL_RANGE = {"u8": (0, 255), "i8": (-128, 127), "i16": (-32768, 32767)}
TORCH_NAME = {"u8": "torch.uint8", "i8": "torch.int8", "i16": "torch.int16"}


def f2int(v, src, dt):
    """PyTorch's (CPU) float -> small int: truncated to i32 (f64 to u8: to i64), nan and
    out of range giving that type's minimum (x86), then wrapped to dt."""
    v = np.asarray(v, dtype=F64)
    wide, bits = (np.int64, 63) if (src == "f64" and dt == "u8") else (np.int32, 31)
    ok = (v >= -2.0 ** bits) & (v < 2.0 ** bits)
    with np.errstate(invalid="ignore"):
        t = np.where(ok, np.trunc(np.where(ok, v, 0)), -2.0 ** bits)
    return t.astype(np.int64).astype(wide).astype(VALUE_NP[dt])


def small_int_cases():
    """u8, i8 and i16 over their whole range: wrapping arithmetic, operands converted to
    the op's dtype first (u8 < -1 compares with 255), unsigned order and division of u8,
    shifts past the width, float casts out of range, reductions to i64, creation and
    PyTorch's spellings."""
    cases = []
    for dt in ("u8", "i8", "i16"):
        c = Case(f"small_int_{dt}")
        rng = rng_for(c.name)
        lo, hi = SMALL_RANGE[dt]
        npt = VALUE_NP[dt]
        full = lambda r, d, s: r.integers(lo, hi + 1, size=tuple(s)).astype(npt)  # noqa: E731
        ex, vx = c.param(dt, [4, 6], "c", rng, gen=full)
        ey, vy = c.param(dt, [4, 6], "t", rng, gen=full)
        nz = np.where(vy == 0, npt(1), vy)
        ed, vd = c.param(dt, [4, 6], "c", rng, val=nz)
        L = lambda v: np.array(v).astype(npt)  # noqa: E731 - a literal converted to dt
        with np.errstate(all="ignore"):
            outs = [(f"{ex} + {ey}", dt, vx + vy), (f"{ex} - {ey}", dt, vx - vy), (f"{ex} * {ey}", dt, vx * vy),
                    (f"{ex} // {ed}", dt, np.floor_divide(vx, vd)), (f"{ex} % {ed}", dt, np.remainder(vx, vd)),
                    (f"-{ex}", dt, -vx), (f"{ex}.abs()", dt, np.abs(vx)), (f"~{ex}", dt, ~vx),
                    (f"{ex} < {ey}", "bool", vx < vy), (f"maximum({ex}, {ey})", dt, np.maximum(vx, vy)),
                    (f"{ex} + 300", dt, vx + L(300)), (f"{ex} * -3", dt, vx * L(-3)), (f"{ex} < -1", "bool", vx < L(-1)),
                    (f"{ex} == 266", "bool", vx == L(266)), (f"{ex} >= 200", "bool", vx >= L(200)),
                    (f"{ex} // -2", dt, np.floor_divide(vx, L(-2))), (f"{ex} % -3", dt, np.remainder(vx, L(-3))),
                    (f"{ex} << 9", dt, np.left_shift(vx, L(9))), (f"{ex} >> 9", dt, np.right_shift(vx, L(9))),
                    (f"{ex} >> 3", dt, np.right_shift(vx, L(3))), (f"{ex} ** 3", dt, vx ** L(3)),
                    (f"{ex} / 7", "f32", vx.astype(np.float32) / np.float32(7)),
                    (f"{ex}.clamp(min=-5)", dt, np.maximum(vx, L(-5))), (f"clamp({ex}, 3, 100)", dt,
                                                                         np.minimum(np.maximum(vx, L(3)), L(100))),
                    (f"where({ex} > {ey}, {ex}, -1)", dt, np.where(vx > vy, vx, L(-1))),
                    (f"{ex}.sum()", "i64", vx.astype(np.int64).sum()), (f"{ex}.sum(1)", "i64", vx.astype(np.int64).sum(1)),
                    (f"{ex}.sum(0, dtype={TORCH_NAME[dt]})", dt, vx.astype(np.int64).sum(0)),
                    (f"{ex}.prod(1)", "i64", np.prod(vx.astype(np.int64), 1)),
                    (f"{ex}.cumsum(1)", "i64", np.cumsum(vx.astype(np.int64), 1)),
                    (f"{ex}.amax(1)", dt, vx.max(1)), (f"{ex}.amin()", dt, vx.min()), (f"{ex}.max()", dt, vx.max()),
                    (f"{ex}.argmax(1)", "i64", np.argmax(vx, 1)), (f"{ex}.argmin()", "i64", np.argmin(vx)),
                    (f"{ex}.float()", "f32", vx.astype(np.float32)), (f"{ex}.half()", "f16", vx.astype(np.float16)),
                    (f"{ex}.long()", "i64", vx.astype(np.int64)), (f"{ex}.bool()", "bool", vx != 0),
                    (f"{ex}.to(torch.int32) * 1000", "i32", vx.astype(np.int32) * np.int32(1000)),
                    (f"({ex} * 1000).to(dtype={TORCH_NAME[dt]})", dt, vx * L(1000)),
                    (f"torch.full([3], -1, dtype={TORCH_NAME[dt]})", dt, np.full(3, -1).astype(npt)),
                    (f"torch.arange(5, dtype={TORCH_NAME[dt]})", dt, np.arange(5)),
                    (f"ones(2, 3, dtype={dt}) + zeros(3, dtype={dt})", dt, np.ones((2, 3))),
                    (f"eye(3, dtype={TORCH_NAME[dt]})", dt, np.eye(3)),
                    (f"cat([{ex}, {ey}], 0)", dt, np.concatenate([vx, vy], 0)),
                    (f"{ex}.masked_fill({ex} > {ey}, -1)", dt, np.where(vx > vy, L(-1), vx))]
        for e, od, want in outs:
            c.out(e, od, want, "exact" if od in INT_DTYPES else "elem")
        for m, d in (("byte", "u8"), ("char", "i8"), ("short", "i16")):  # the input itself when dt is d
            c.out(f"{ex}.{m}()", d, vx.astype(VALUE_NP[d]), "exact", view=d == dt)
        # floats out of range: through i32 (f64 to u8: i64), as PyTorch's CPU build
        sp = [-1.0, -129.5, 256.0, 300.7, 1e10, np.nan, np.inf, -np.inf, -3.7, 40000.0, -40000.0, 3e9, 2147483653.0,
              -2.5e9, 65535.9]
        for src in ("f32", "f64", "f16", "bf16"):
            es, vs = c.param(src, [len(sp)], val=rnd(np.array(sp), src))
            c.out(f"{es}.to({dt})", dt, f2int(vs, src, dt), "exact")
        for src in ("i32", "i64"):
            es, vs = c.param(src, [6], val=np.array([-1, 255, 256, -129, 40000, -2 ** 31], dtype=VALUE_NP[src]))
            c.out(f"{es}.to({dt})", dt, vs.astype(npt), "exact")
        cases.append(c)
    return cases


def creation_cases():
    c = Case("creation")
    rng = rng_for(c.name)
    ex, vx = c.param("f32", [3, 4], "t", rng)
    outs = [("zeros(2, 3)", "f32", np.zeros((2, 3))), ("zeros([2, 3], dtype=i32)", "i32", np.zeros((2, 3))),
            ("ones(3, dtype=bf16)", "bf16", np.ones(3)), ("ones(2, 2, dtype=bool)", "bool", np.ones((2, 2))),
            ("ones([4])", "f32", np.ones(4)), ("zeros(0, 3)", "f32", np.zeros((0, 3))),
            ("full([2, 3], 2.5)", "f32", np.full((2, 3), 2.5)), ("full([2], 7)", "i64", np.full(2, 7)),
            ("full([2], true)", "bool", np.full(2, True)), ("full([3], 1.5, dtype=f16)", "f16", np.full(3, 1.5)),
            ("full([2, 2], -3, dtype=f64)", "f64", np.full((2, 2), -3.0)),
            ("arange(5)", "i64", np.arange(5)), ("arange(0, 1, 0.25)", "f32", np.arange(0, 1, 0.25)),
            ("arange(1, 10, 3)", "i64", np.arange(1, 10, 3)), ("arange(5, dtype=f64)", "f64", np.arange(5.0)),
            ("arange(-1.0, 1.0, 0.5)", "f32", np.arange(-1.0, 1.0, 0.5)), ("arange(10, 0, -3)", "i64", np.arange(10, 0, -3)),
            ("arange(2, 6, dtype=i32)", "i32", np.arange(2, 6)), ("eye(3)", "f32", np.eye(3)),
            ("eye(4, dtype=i32)", "i32", np.eye(4)), ("eye(2, dtype=bool)", "bool", np.eye(2)),
            ("eye(3, dtype=f16)", "f16", np.eye(3))]
    for spell, dt, want in outs:
        c.out(spell, dt, want, "exact")
    # created tensors read by other ops (the compiler may fold them)
    c.out(f"{ex} + arange(4)", "f32", vx + np.arange(4, dtype=np.float32))
    c.out(f"{ex} * ones(3, 1) - zeros(4)", "f32", vx * 1.0)
    c.out(f"{ex}[:, :3] @ eye(3)", "f32", f64(vx[:, :3]) @ np.eye(3), "mm", 3)
    c.out(f"where(eye(3, dtype=bool), {ex}[:, :3], full([3, 3], -1.0))", "f32",
          np.where(np.eye(3, dtype=bool), vx[:, :3], -1.0))
    c.out("arange(6).view(2, 3).t() * 2", "i64", np.arange(6).reshape(2, 3).T * 2, "exact")
    c.out("arange(12).view(3, 4).sum(0)", "i64", np.arange(12).reshape(3, 4).sum(0), "exact")
    return [c]


def edge_cases():
    """0-d tensors and zero-size dims."""
    cases = []
    for dt in ("f32", "i32"):
        c = Case(f"edges_{dt}")
        rng = rng_for(c.name)
        e0, v0 = c.param(dt, [], "c", rng, gen=gen_positive)
        e1, v1 = c.param(dt, [3], "c", rng, gen=gen_positive)
        ez, vz = c.param(dt, [0, 3], "c", rng)
        a0 = opm(v0)
        c.out(f"exp({e0})", "f32", np.exp(a0.astype(np.float32)))
        c.out(f"{e0} * {e1}", dt, a0 * v1, "exact" if dt == "i32" else "elem")
        c.out(f"{e0}.sum()", "i64" if dt == "i32" else dt, np.sum(_acc(v0)), "exact" if dt == "i32" else "red")
        c.out(f"{e1}.sum(0)", "i64" if dt == "i32" else dt, np.sum(_acc(v1)), "exact" if dt == "i32" else "red", 3)
        c.out(f"{e0}.amax()", dt, v0, "exact")
        c.out(f"{e0}.unsqueeze(0).expand(4) + {e0}", dt, np.full(4, v0 + v0), "exact" if dt == "i32" else "elem")
        c.out(f"{ez} + 1", dt, vz + 1, "exact")
        c.out(f"{ez}.sum(0)", "i64" if dt == "i32" else dt, np.zeros(3), "exact")
        c.out(f"{ez}.sum(1)", "i64" if dt == "i32" else dt, np.zeros(0), "exact")
        c.out(f"{ez}.amax(1)", dt, np.zeros(0), "exact")
        c.out(f"{ez}.prod(0)", "i64" if dt == "i32" else dt, np.ones(3), "exact")
        c.out(f"{ez}.all(0)", "bool", np.ones(3, dtype=bool), "exact")
        c.out(f"{ez}.any()", "bool", np.array(False), "exact")
        c.out(f"cat([{ez}, {e1}.unsqueeze(0)], 0)", dt, v1[None], "exact")
        if dt == "f32":
            c.out(f"{ez}.mean(0)", dt, np.full(3, np.nan))
            c.out(f"{ez}.t() @ {ez}", dt, np.zeros((3, 3)), "exact")
            c.out(f"{e1} @ {e1}", dt, f64(v1) @ f64(v1), "mm", 3)
            c.out(f"softmax({e0}, 0)", dt, np.array(1.0))
        cases.append(c)
    return cases


def store_cases():
    """§7: stores through views write the base storage; later reads of any alias see them."""
    cases = []
    rng = rng_for("stores")

    def mk(name, params, body, outs):
        c = Case(name)
        for pname, dt, shape, mut in params:
            c.param(dt, shape, "c", rng, mut=mut, name=pname, gen=gen_general)
        vals = {n: v.copy() for n, _, v, _ in c.params}
        for line in body:
            c.let(line)
        for expr, dt, fn, kind, view in outs(vals):
            c.out(expr, dt, fn, kind, view=view)
        return c

    def o(expr, dt, want, kind="exact", view=False):
        return (expr, dt, want, kind, view)

    def s1(v):
        x = v["x"].copy()
        x[:, 1][0] = 999
        return [o("x", "f32", x, view=True)]
    cases.append(mk("store_select", [("x", "f32", [3, 4], True)], ["y = x[:, 1]", "y[0] = 999"], s1))

    def s2(v):
        x = v["x"].copy()
        x[1:, ::2] += np.float32(1.5)
        y = x.T
        y[0] -= 2
        x[:, 0] *= 3
        x[-1] /= 4
        return [o("x", "f32", x, "elem", view=True), o("y", "f32", x.T, "elem", view=True)]
    cases.append(mk("store_aug_views", [("x", "f32", [3, 4], True)],
                    ["x[1:, ::2] += 1.5", "y = x.t()", "y[0] -= 2", "x[:, 0] *= 3", "x[-1] /= 4"], s2))

    def s3(v):
        z = np.zeros((3, 4), np.float32)
        z[1] = v["x"][0]
        z[:, 2] = 5
        z[2:, 1::2] = v["b"]
        return [o("z", "f32", z)]
    cases.append(mk("store_local", [("x", "f32", [3, 4], False), ("b", "f32", [2], False)],
                    ["z = zeros(3, 4)", "z[1] = x[0]", "z[:, 2] = 5", "z[2:, 1::2] = b"], s3))

    def s4(v):
        x = v["x"].copy()
        x[0, 1] = 7
        return [o("r", "f32", x.T * 2, "elem"), o("x", "f32", x, view=True)]
    cases.append(mk("store_alias_read", [("x", "f32", [3, 4], True)],
                    ["y = x.t()", "x[0, 1] = 7", "r = y * 2"], s4))

    def s5(v):
        x = v["x"]
        a = x.copy()
        a[0] = 1
        return [o("a", "f32", a), o("x", "f32", x, view=True)]
    cases.append(mk("store_clone_is_a_copy", [("x", "f32", [3, 4], False)], ["a = x.clone()", "a[0] = 1"], s5))

    def s6(v):
        x = v["x"].copy()
        s = x.sum(dtype=np.float64)
        x[0, 0] = 100
        t = x.sum(dtype=np.float64)
        x += 1
        return [o("s", "f32", s, "red"), o("t", "f32", t, "red"), o("x", "f32", x, "elem", view=True)]
    cases.append(mk("store_order", [("x", "f32", [3, 4], True)],
                    ["s = x.sum()", "x[0, 0] = 100", "t = x.sum()", "x += 1"], s6))

    def s7(v):
        x = v["x"].copy()
        x[0] = v["i"]          # i32 values cast into the f32 storage
        x[2, ::2] = 2.0
        k = v["k"].copy()
        k[1] = np.int32(np.trunc(2.7))   # float stored into an int tensor truncates
        k[0] += 3
        return [o("x", "f32", x, view=True), o("k", "i32", k, view=True)]
    cases.append(mk("store_casts", [("x", "f32", [3, 4], True), ("i", "i32", [4], False), ("k", "i32", [2, 3], True)],
                    ["x[0] = i", "x[2, ::2] = 2.0", "k[1] = 2.7", "k[0] += 3"], s7))

    def s8(v):
        x = v["x"].copy()
        x += 1           # y = x aliases x, as in PyTorch
        x[1] = x[0] * 2
        return [o("x", "f32", x, "elem", view=True)]
    cases.append(mk("store_alias_name", [("x", "f32", [3, 4], True)], ["y = x", "y += 1", "x[1] = x[0] * 2"], s8))

    def s9(v):
        x = v["x"].copy()
        y = x.T
        y[1:, 0] = 0
        return [o("y", "f32", y, view=True), o("x", "f32", x, view=True)]
    cases.append(mk("store_returned_view", [("x", "f32", [3, 4], True)], ["y = x.t()", "y[1:, 0] = 0"], s9))

    def s10(v):
        b = v["b"].copy()
        b[1] = ~b[1]
        m = v["m"].copy()
        m[:, 1] *= 2
        m[..., 0] = -1
        return [o("b", "bool", b, view=True), o("m", "i64", m, view=True)]
    cases.append(mk("store_bool_i64", [("b", "bool", [2, 3], True), ("m", "i64", [3, 2], True)],
                    ["b[1] = ~b[1]", "m[:, 1] *= 2", "m[..., 0] = -1"], s10))

    def s11(v):
        z = np.zeros((2, 3), np.float32)
        w = z.reshape(-1)
        w[::2] = 1
        q = z * 3
        z[1] += v["x"]
        return [o("q", "f32", q), o("z", "f32", z, "elem"), o("w", "f32", w, "elem")]
    cases.append(mk("store_local_alias", [("x", "f32", [3], False)],
                    ["z = zeros(2, 3)", "w = z.view(-1)", "w[::2] = 1", "q = z * 3", "z[1] += x"], s11))
    return cases


from test_scans import scan_cases  # noqa: E402  (the cumulative ops' matrix)

BUILDERS = [cast_cases, unary_cases, binary_cases, promotion_cases, select_cases, reduce_cases, softmax_cases,
            matmul_cases, join_cases, index_cases, creation_cases, edge_cases, store_cases, small_int_cases]
BUILDERS.append(scan_cases)
BUILDERS.append(sort_cases)  # sorting: tests/run/sort_cases.py
BUILDERS.append(attention_cases)  # scaled_dot_product_attention: tests/run/attn_cases.py


def all_cases():
    """Every case of every builder, in order (test_gpu_run.py, test_ptx_compile.py and
    test_cuda_compile.py run or compile them too)."""
    return [c for b in BUILDERS for c in b()]


def main():
    tdslc = os.path.abspath(sys.argv[1])
    require_backend(tdslc)
    tally = Tally()
    run_cases(tdslc, all_cases()[::test_subset()], tally)  # the sanitizer pass: a subset
    return tally.summary()


if __name__ == "__main__":
    sys.exit(main())
