#!/usr/bin/python3
"""tests/run/test_backends_agree.py TDSLC: the C and LLVM backends give the same results.

For each of TDSL_AGREE_COUNT random programs (randprog.py, default 100, seeds from
TDSL_AGREE_SEED, default 100000: other programs than test_random's; run in bundles of
8, see randprog.run_bundle) it runs `tdslc run --backend c` and `--backend llvm` on the
same .npy inputs and checks
  - each backend against the program's NumPy values (randprog.run);
  - the two against each other: the same output count, dtype, shape, strides, offset,
    contiguity and storage; ints and bools equal; outputs that share an input's
    storage (views) bitwise equal; floats with the same nan/inf positions and finite
    values within rtol 1e-5 (f32; f64 1e-12) of the larger and, per element, twice
    randprog's absolute tolerance of each (6e-5 for f32, 2e-12 for f64) times the
    element's error bound em (randprog.py), which scales with the terms of its sums and
    matmuls (an f64 result computed partly in f32, after a cast, gets f32's tolerances).
Then every function of examples/*.tdsl runs on both backends with the seeded
generator's inputs (`--seed`, 0 and 1 by turns), which must be bitwise equal, and its outputs must agree
within rtol 1e-5 of the larger value and 1e-5 of the output's largest magnitude
(test_examples.py checks each backend against NumPy).

Exits 77 (skip) when tdslc lacks either backend (oracle.backend_available). It is
registered once; it ignores TDSL_BACKEND. (TDSL_AGREE_BACKENDS=c,c runs the harness with
one backend twice, to test the test.)
"""
import concurrent.futures
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import (SKIP, Tally, backend_available, dim_args, example_dims, example_functions,  # noqa: E402
                    json_values, run_cleanup, tdslc_run, test_subset)
from randprog import TOL, Program, bundles, report, run_bundle  # noqa: E402

AGREE_TOL = {"f16": (2e-3, 2e-3), "bf16": (1.6e-2, 1.6e-2), "f32": (1e-5, 1e-5), "f64": (1e-12, 1e-12)}
# TDSL_AGREE_BACKENDS=c,c checks the harness itself against one backend
PAIR = tuple(os.environ.get("TDSL_AGREE_BACKENDS", "c,llvm").split(","))
META = ("dtype", "shape", "strides", "offset", "contiguous", "storage")
# the random programs: each backend is within randprog's atol x em of the exact value
RANDOM_ATOL = {k: 2 * v[1] for k, v in TOL.items()}
stats = {"outputs": 0, "bitwise": 0, "max_rel": 0.0}


def agree(doc_c, doc_l, mags, precs=None, atols=None):
    """Failure lines comparing the two backends' documents; mags[k]: the magnitude that
    scales output k's absolute tolerance (a number, or an array of its shape); precs[k]
    (optional): the float dtype whose tolerance applies to output k (f32 for an f64
    result computed partly in f32); atols (optional): the absolute tolerance per unit of
    mags by dtype, instead of AGREE_TOL's."""
    oc, ol = doc_c["outputs"], doc_l["outputs"]
    if len(oc) != len(ol):
        return [f"C gives {len(oc)} outputs, LLVM {len(ol)}"]
    errs = []
    for k, (c, ll) in enumerate(zip(oc, ol)):
        diff = [f"{key} C {c.get(key)} LLVM {ll.get(key)}" for key in META if c.get(key) != ll.get(key)]
        if diff:
            errs.append(f"out{k}: " + "; ".join(diff))
            continue
        dt = c["dtype"]
        gc = json_values(c["data"], dt)
        gl = json_values(ll["data"], dt)
        shape = tuple(c["shape"])
        if gc.size != int(np.prod(shape)) or gl.size != gc.size:
            errs.append(f"out{k}: {gc.size} (C) and {gl.size} (LLVM) elements for shape {list(shape)}")
            continue
        gc, gl = gc.reshape(shape), gl.reshape(shape)
        stats["outputs"] += 1
        if dt not in AGREE_TOL or c["storage"] != "new":
            if np.array_equal(gc, gl, equal_nan=dt in AGREE_TOL) and \
                    (dt not in AGREE_TOL or np.array_equal(np.signbit(gc), np.signbit(gl))):
                stats["bitwise"] += 1
                continue
            if dt in AGREE_TOL:
                bad = ~((gc == gl) & (np.signbit(gc) == np.signbit(gl)) | (np.isnan(gc) & np.isnan(gl)))
            else:
                bad = gc != gl
            i = tuple(np.argwhere(bad)[0]) if bad.any() else ()
            errs.append(f"out{k}{list(i)} ({dt}{', view of ' + c['storage'] if c['storage'] != 'new' else ''}, "
                        f"must be exact): C {gc[i]!r}, LLVM {gl[i]!r}")
            continue
        a, b = gc.astype(np.float64), gl.astype(np.float64)
        if np.array_equal(a, b, equal_nan=True):
            stats["bitwise"] += 1
            continue
        an, bn = np.isnan(a), np.isnan(b)
        ai, bi = np.isinf(a), np.isinf(b)
        if not np.array_equal(an, bn) or not np.array_equal(ai, bi) or not np.array_equal(a[ai], b[bi]):
            i = tuple(np.argwhere((an != bn) | (ai != bi) | (ai & (a != b)))[0])
            errs.append(f"out{k}{list(i)} ({dt}): non-finite mismatch: C {a[i]!r}, LLVM {b[i]!r}")
            continue
        fin = ~(an | ai)
        tdt = precs[k] if precs and dt in ("f32", "f64") else dt
        rtol, atol = AGREE_TOL[tdt]
        atol = atols.get(tdt, atol) if atols else atol
        d = np.where(fin, np.abs(a - b), 0.0)
        mag = np.broadcast_to(mags[k], a.shape)
        lim = rtol * np.maximum(np.abs(a), np.abs(b)) + atol * mag
        scale = np.where(fin, np.maximum(np.maximum(np.abs(a), np.abs(b)), np.maximum(mag, 1e-300)), 1.0)
        stats["max_rel"] = max(stats["max_rel"], float(np.max(d / scale)) if d.size else 0.0)
        if np.any(d > lim):
            i = tuple(np.argwhere(d > lim)[0])
            errs.append(f"out{k}{list(i)} ({dt}): C {a[i]!r}, LLVM {b[i]!r} (|diff| {d[i]:.3g} > "
                        f"{lim[i]:.3g}: rtol {rtol:g}, atol {atol:g} x magnitude {mag[i]:.3g})")
    return errs


def check_random(tdslc, group):
    """Failure lines of each program of group (a bundle, see randprog.run_bundle)."""
    res = []
    for prog, (errs_c, doc_c), (errs_l, doc_l) in zip(group, run_bundle(tdslc, group, PAIR[0]),
                                                       run_bundle(tdslc, group, PAIR[1])):
        errs = [f"C: {e}" for e in errs_c] + [f"LLVM: {e}" for e in errs_l]
        if doc_c is not None and doc_l is not None:
            errs += [f"C vs LLVM: {e}" for e in agree(doc_c, doc_l, [n.em for n in prog.outs],
                                                        [n.prec for n in prog.outs], RANDOM_ATOL)]
        res.append(errs)
    return res


def check_example(tdslc, fname, src, fn, seed):
    runs = []
    errs = []
    for b in PAIR:
        args = ["--fn", fn, "--seed", str(seed)] + dim_args(example_dims(fname, src, fn))
        p, doc, out_dir = tdslc_run(tdslc, src, args=args, name=fname[:-5], backend=b)
        if p.returncode != 0:
            errs.append(f"{b}: exit {p.returncode}: {p.stderr.decode(errors='replace').strip()[:800]}")
        else:
            ins = {f: np.load(os.path.join(out_dir, f)) for f in sorted(os.listdir(out_dir)) if f.startswith("in_")}
            runs.append((doc, ins))
        run_cleanup(out_dir)
    if len(runs) == 2:
        (dc, ic), (dl, il) = runs
        if sorted(ic) != sorted(il) or any(not np.array_equal(ic[f], il[f]) or ic[f].dtype != il[f].dtype for f in ic):
            errs.append(f"generated inputs differ: C {sorted(ic)}, LLVM {sorted(il)}")
        mags = []
        for o in dc["outputs"]:
            v = json_values(o["data"], o["dtype"]) if o["dtype"] in AGREE_TOL else np.zeros(0)
            v = v[np.isfinite(v)] if v.size else v
            mags.append(float(np.max(np.abs(v))) if v.size else 1.0)
        errs += [f"C vs LLVM: {e}" for e in agree(dc, dl, mags)]
    return errs


def main():
    tdslc = os.path.abspath(sys.argv[1])
    for b in sorted(set(PAIR)):
        ok, why = backend_available(tdslc, b)
        if not ok:
            print(f"SKIP: backend {b}: {why}")
            return SKIP
    count = int(os.environ.get("TDSL_AGREE_COUNT", "100"))
    first = int(os.environ.get("TDSL_AGREE_SEED", "100000"))
    # the sanitizer pass runs every Nth seed (oracle.test_subset): the plain pass ran them all
    progs = [Program(s).build() for s in range(first, first + count, test_subset())]
    tally = Tally()
    groups = bundles(progs)
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as ex:
        for group, res in zip(groups, ex.map(lambda g: check_random(tdslc, g), groups)):
            for prog, errs in zip(group, res):
                report(tally, prog, errs)
        # each function once, seeds 0 and 1 in turn (a run builds the C at -O2: both seeds of
        # every function took half this test's CPU for the same code)
        exs = [(e, i % 2) for i, e in enumerate(example_functions())]
        res = ex.map(lambda es: check_example(tdslc, *es[0], es[1]), exs)
        for ((fname, _, fn), seed), errs in zip(exs, res):
            tally.report(f"{fname} {fn} --seed {seed}", errs)
    print(f"{stats['outputs']} outputs compared, {stats['bitwise']} bitwise equal, "
          f"largest relative C-LLVM difference {stats['max_rel']:.3g}")
    return tally.summary()


if __name__ == "__main__":
    sys.exit(main())
