"""bench/report27.py — the tables issue 27 added to bench/RESULTS.md: the workloads against
Halide 14 (hand schedules and autoschedulers), the vector-math table, the whole models
with their fraction of the roofline, where each model's time goes (`tdslc bench
--profile`), and issue 27's targets. Each function appends Markdown lines to L from the
data bench/run.py measured; `R` is bench/run.py itself (its WORKLOADS, WHOLE and
formatting helpers). Nothing here measures anything.
"""
import halide_work
import vector_math as vecmath

KIND_ORDER = ("matmul", "attention", "row", "elementwise", "one op", "sort")


def _bars(data):
    pk, st = data.get("peak") or {}, data.get("stream") or {}
    return pk.get("f32_gflops"), st.get("copy_gbps")


def halide_table(data, L, R):
    h, res, backends = data.get("halide") or {}, data.get("results") or {}, data["backends"]
    if not h:
        return
    a = L.append
    a("")
    a("## Workloads against Halide 14")
    a("")
    a("The workloads above written in Halide 14 (`bench/halide_work.py`), each scheduled by hand in the "
      "style of Halide's own apps and by each of its three autoschedulers (Adams2019, Mullapudi2016, "
      "Li2018, loaded as plugins, given every input's and output's estimates, %d threads and this "
      "machine's last-level cache), compiled for the host, checked against NumPy in f64 and timed in this "
      "run, each variant in a process of its own (`HL_NUM_THREADS=%d`), in each of %d round(s) right after "
      "tdsl's calls of the workload, its best median kept. Both sides get the same warm-up and call count "
      "and the same memory (huge-page blocks, the same output block in every call: Halide realizes into a "
      "preallocated output, tdsl's storage cache hands its result the same block back; bench/README.md). "
      "Speedup = the best Halide variant's time / tdsl's time (> 1: tdsl is faster)."
      % (data["threads"], data["threads"], data.get("rounds", 1)))
    a("")
    a("| workload | tdsl C ms | tdsl LLVM ms | Halide hand ms | Adams2019 ms | Mullapudi2016 ms | Li2018 ms | best Halide | vs best Halide (C / LLVM) |")
    a("|---|---:|---:|---:|---:|---:|---:|---|---:|")
    notes = []
    for w in R.WORKLOADS:
        n = w["name"]
        if n not in h:
            continue
        hr, t = h[n], {b: R.med((res.get(n) or {}).get("tdsl", {}).get(b)) for b in backends}
        cells = []
        for v in ("hand",) + halide_work.AUTOSCHEDULERS:
            r = hr.get(v) or {}
            if "median_ms" in r:
                cells.append(R.fmt_ms(r))
            elif r.get("ok") is False:
                cells.append("**wrong**")
                notes.append("- Halide %s, %s: max rel. error %.2g" % (v, n, r.get("err_rel", float("nan"))))
            else:
                cells.append("error")
                notes.append("- Halide %s, %s: %s" % (v, n, r.get("error", "no result")))
        best = hr.get("best")
        bt = best["median_ms"] if best else None
        a("| %s<br><sub>%s</sub> | %s | %s | %s | %s | %s |" % (
            n, w["what"], R.fmt_ms((res.get(n) or {}).get("tdsl", {}).get("c")),
            R.fmt_ms((res.get(n) or {}).get("tdsl", {}).get("llvm")), " | ".join(cells),
            "%s (%s)" % (R.fmt_ms(best), best["variant"]) if best else "n/a",
            " / ".join(R.fmt_x(R.ratio(t[b], bt)) for b in backends)))
    if notes:
        a("")
        a("Notes:")
        L.extend(notes)


def vecmath_table(data, L, R):
    v, hv, backends = data.get("vecmath") or {}, data.get("halide_vecmath") or {}, data["backends"]
    if not v:
        return
    a = L.append
    a("")
    a("## Vector math")
    a("")
    a("Each function on the same 2^20 f32 elements (`bench/vector_math.tdsl`, `bench/vector_math.py`): GB/s = "
      "(4 MiB read + 4 MiB written) / median time, the data in the last-level cache, so the rate is the "
      "math's. tdsl: `tdslc bench` (C / LLVM backend); NumPy and PyTorch: one call each (NumPy's own "
      "loops use one thread; PyTorch %d); Halide: one vectorized parallel loop, realized into a "
      "preallocated output. Ratios: tdsl LLVM's rate / the other's (> 1: tdsl is faster). Check: `tdslc run` "
      "on the same inputs against the f64 reference of `vector_math.py` (max |error| / max |reference| at "
      "most %.0e; a function that fails it is not timed)." % (data["threads"], R.CHECK_TOL))
    if "error" in hv:
        a("Halide: %s" % hv["error"])
    a("")
    a("| function | computes | tdsl C GB/s | tdsl LLVM GB/s | NumPy GB/s | PyTorch GB/s | Halide GB/s | LLVM vs NumPy / PyTorch / Halide | check C | check LLVM |")
    a("|---|---|---:|---:|---:|---:|---:|---:|---|---|")

    def gbs(r):
        m = R.med(r)
        return vecmath.BYTES / (m / 1e3) / 1e9 if m else None

    def cell(r, why=None):
        g = gbs(r)
        return "%.1f" % g if g else (why or R.fmt_ms(r))

    checks, notes = data.get("checks") or {}, []

    for name in vecmath.NAMES:
        k = "vm_" + name
        if k not in v:
            continue
        e, hr = v[k], hv.get(name) or {}
        row = vecmath.row(name)
        hnote = " (%s)" % hr["note"] if hr.get("note") else ""
        hcell = cell(hr) + hnote if "median_ms" in hr else ("**wrong**" if hr.get("ok") is False else
                                                           "error" if hr else "n/a")
        tl = gbs(e["tdsl"].get("llvm"))
        others = [gbs(e.get("numpy")), gbs(e.get("torch")), gbs(hr) if "median_ms" in hr else None]
        ck = checks.get(k, {})
        a("| %s | `%s` | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            name, row[1], cell(e["tdsl"].get("c")), cell(e["tdsl"].get("llvm")),
            cell(e.get("numpy"), "n/a (no erf)" if row[2] is None else None), cell(e.get("torch")), hcell,
            " / ".join(R.fmt_x(tl / o) if tl and o else "n/a" for o in others),
            R.check_cell(ck.get("c")), R.check_cell(ck.get("llvm"))))
        R.check_notes(k, checks, backends, notes)
    if notes:
        a("")
        a("Notes:")
        L.extend(notes)


def whole_roofline_ms(e, peak, bw):
    """The roofline bound of a call (ms): max(FLOPs / peak, bytes / bandwidth), with
    `tdslc bench`'s counts (every operation; parameters read and results written once)."""
    tb = next((x for x in (e["tdsl"].get("llvm"), e["tdsl"].get("c")) if x and "flops" in x), None)
    if not tb or not peak or not bw:
        return None
    return max(tb["flops"] / (peak * 1e9), tb["bytes"] / (bw * 1e9)) * 1e3


def _peak_cell(r, moved):
    """A call's peak memory ÷ the bytes it moves, "1.01×"; n/a when either is unknown."""
    peak = (r or {}).get("peak_bytes")
    return "%.2f×" % (peak / moved) if peak and moved else "n/a"


def whole_table(data, L, R):
    x, checks, backends = data.get("whole") or {}, data.get("checks") or {}, data["backends"]
    if not x:
        return
    peak, bw = _bars(data)
    a = L.append
    notes = []
    a("")
    a("## Whole models")
    a("")
    a("Each model written as a .tdsl program (`bench/models/*.tdsl`) and as the same `torch.nn.Module` "
      "(`bench/models/whole.py`), timed in the same run on the same weights and inputs (the ones `tdslc "
      "bench` draws; PyTorch eager under `torch.no_grad()`, %d threads). Checked first: `tdslc run` on "
      "realistic weights against the module's f32 output (max abs error / that ÷ max |PyTorch|, tolerance "
      "%.0e). Roofline: the call's lower bound max(FLOPs ÷ peak, bytes ÷ bandwidth) from `tdslc bench`'s "
      "counts (every operation; parameters read and results written once) and this run's bars (f32 peak "
      "%s GFLOP/s, copy %s GB/s), divided by the time: the fraction of the roofline each implementation "
      "reached (GPT-2's target: within 2× of it, 50%%). Peak memory: what a call held at its peak (its "
      "inputs plus the most the resident set grew by during the timed calls: outputs, temporaries, pools) "
      "÷ the bytes it reads and writes (the target: ≤ 1.1×)."
      % (data["threads"], R.CHECK_TOL, "%.1f" % peak if peak else "?", "%.1f" % bw if bw else "?"))
    a("")
    a("| model | GFLOP | tdsl C ms | tdsl LLVM ms | PyTorch ms | vs PyTorch (C / LLVM) | roofline bound ms | of the roofline: C / LLVM / PyTorch | peak memory ÷ bytes moved: C / LLVM / PyTorch | check C | check LLVM | PyTorch f32 vs f64 |")
    a("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|")
    for md in R.WHOLE:
        n = md["name"]
        if n not in x:
            continue
        e = x[n]
        t = {k: R.med(R.impl_result(e, k)) for k in ("c", "llvm", "torch")}
        ck = checks.get(n, {})
        tb = next((v for v in (e["tdsl"].get("llvm"), e["tdsl"].get("c")) if v and "flops" in v), {})
        rb = whole_roofline_ms(e, peak, bw)
        own = ck.get("torch_vs_f64")
        moved = tb.get("bytes")
        mem = " / ".join(_peak_cell((e["tdsl"] if k != "torch" else e).get(k), moved) for k in ("c", "llvm", "torch"))
        a("| %s<br><sub>%s</sub> | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            n, md["what"], "%.3g" % (tb["flops"] / 1e9) if tb else "%.3g" % (md["flops"] / 1e9),
            R.cell_ms(e["tdsl"].get("c"), notes, "tdsl C %s" % n), R.cell_ms(e["tdsl"].get("llvm"), notes,
                                                                               "tdsl LLVM %s" % n),
            R.cell_ms(e.get("torch"), notes, "PyTorch %s" % n),
            " / ".join(R.fmt_x(R.ratio(t[b], t["torch"])) for b in backends),
            "%.3g" % rb if rb else "n/a",
            " / ".join(R.fmt_pct(rb / t[k]) if rb and t[k] else "n/a" for k in ("c", "llvm", "torch")), mem,
            R.check_cell(ck.get("c")), R.check_cell(ck.get("llvm")), "%.1e" % own if own is not None else "—"))
        R.check_notes(n, checks, backends, notes)
        R.round_notes(n, e, backends, data.get("rounds", 1), notes)
    if notes:
        a("")
        a("Notes:")
        L.extend(notes)


def profiles_section(data, L, R):
    pr = data.get("profiles") or {}
    if not pr:
        return
    a = L.append
    a("")
    a("## Where each model's time goes (`tdslc bench --profile`, LLVM backend)")
    a("")
    a("Each kernel's share of the call (means over the calls no slower than the median), grouped by "
      "kind, then the kernels that take the most, with their rates, their fraction of the roofline "
      "(max(GFLOP/s ÷ peak, GB/s ÷ bandwidth), this run's bars) and their source lines. The charts: "
      "`build/bench/profiles/NAME.svg`.")
    for md in R.WHOLE:
        p = pr.get(md["name"])
        if not p:
            continue
        a("")
        if "error" in p:
            a("**%s**: %s" % (md["name"], p["error"]))
            continue
        ks = p.get("kernels", [])
        by = {}
        for k in ks:
            g = by.setdefault(k["kind"], [0.0, 0, 0.0, 0.0])
            g[0] += k["share"]
            g[1] += 1
            g[2] += k["flops"]
            g[3] += k["time_ms"]
        parts = ["%s %.0f%% (%d kernels%s)" % (kind, 100 * g[0], g[1],
                                               ", %.0f GFLOP/s" % (g[2] / (g[3] / 1e3) / 1e9) if g[3] and g[2] else "")
                 for kind, g in sorted(by.items(), key=lambda kv: -kv[1][0])]
        parts.append("outside the kernels %.1f%%" % (100 * p["outside"]["share"]))
        a("**%s** (%s; %d kernels, %.4g ms a call, %.0f GFLOP/s overall): %s." % (
            md["name"], md["fn"], len(ks), p["mean_ms"], p["flops"] / (p["mean_ms"] / 1e3) / 1e9 if p["mean_ms"] else 0,
            "; ".join(parts)))
        a("")
        a("| kernel | share | ms | GFLOP/s | GB/s | FLOP/B | roofline | bound | lines | ops: schedule |")
        a("|---|---:|---:|---:|---:|---:|---:|---|---|---|")
        for k in sorted(ks, key=lambda k: -k["time_ms"])[:8]:
            lines = ",".join(str(x) for x in k["lines"][:6]) + ("…" if len(k["lines"]) > 6 else "")
            a("| %s | %.1f%% | %.3g | %.3g | %.3g | %s | %.0f%% | %s | %s | %s: %s |" % (
                k["name"] + ("" if k["code"] == k["name"] else " (code of %s)" % k["code"]), 100 * k["share"],
                k["time_ms"], k["gflops"], k["gbps"], "%.3g" % k["intensity"] if k["bytes"] else "—",
                100 * k["roofline"], k["bound"], lines, " ".join(k["ops"][:6]) + (" …" if len(k["ops"]) > 6 else ""),
                k["schedule"]))


def targets(data, L, R):
    """Issue 27's targets, each per backend, met or not with its margin."""
    res, h, x, backends = data.get("results") or {}, data.get("halide") or {}, data.get("whole") or {}, data["backends"]
    peak, bw = _bars(data)
    if not (h or x or res):
        return
    a = L.append
    a("")
    a("## Targets (issue 27)")
    a("")
    a("| target | required | measured | status |")
    a("|---|---|---|---|")
    for b in backends:
        lab = {"c": "C", "llvm": "LLVM"}[b]
        if h:
            sp = [(R.ratio(R.med((res.get(n) or {}).get("tdsl", {}).get(b)), (h[n].get("best") or {}).get("median_ms")), n)
                  for n in h]
            if sp and all(s for s, _ in sp):
                lo, lon = min(sp)
                a(R.target_row("%s every workload vs the best Halide (slowest of %d)" % (lab, len(sp)), "≥ 1.00×",
                               "%s (%s)" % (R.fmt_x(lo), lon), lo >= 1.0, "%s the required" % R.fmt_x(lo)))
                gm = R.geomean([s for s, _ in sp])
                a(R.target_row("%s geometric mean vs the best Halide" % lab, "≥ 1.30×", R.fmt_x(gm), gm >= 1.3,
                               "%s the required" % R.fmt_x(gm / 1.3)))
            else:
                a(R.target_row("%s every workload vs the best Halide" % lab, "≥ 1.00×", None, False, ""))
        if x:
            sp = [(R.ratio(R.med(x[n]["tdsl"].get(b)), R.med(x[n].get("torch"))), n) for n in x]
            ok = [(s, n) for s, n in sp if s]
            if ok:
                lo, lon = min(ok)
                missing = [n for s, n in sp if not s]
                a(R.target_row("%s every whole model vs PyTorch eager (slowest of %d%s)" % (
                    lab, len(ok), "; not timed: " + ", ".join(missing) if missing else ""), "≥ 1.20×",
                    "%s (%s)" % (R.fmt_x(lo), lon), lo >= 1.2 and not missing, "%s the required" % R.fmt_x(lo / 1.2)))
                gm = R.geomean([s for s, _ in ok])
                a(R.target_row("%s geometric mean over the whole models vs PyTorch eager" % lab, "≥ 2.00×",
                               R.fmt_x(gm), gm >= 2.0, "%s the required" % R.fmt_x(gm / 2.0)))
            for n in x:
                if not n.startswith("gpt2"):
                    continue
                rb, t = whole_roofline_ms(x[n], peak, bw), R.med(x[n]["tdsl"].get(b))
                f = rb / t if rb and t else None
                a(R.target_row("%s %s within 2× of its roofline bound" % (lab, n), "≥ 50% of the roofline",
                               R.fmt_pct(f), f is not None and f >= 0.5,
                               "%.1f× the bound" % (1 / f) if f else ""))
        mem = [w for w in R.WORKLOADS if w["kind"] == "memory" and w["name"] in res]
        if mem and bw:
            bar = R.mem_bar(data.get("stream") or {})
            fr = [(R.fraction(w, R.med(res[w["name"]]["tdsl"].get(b)), bar, None), w["name"]) for w in mem]
            if all(f for f, _ in fr):
                lo, lon = min(fr)
                a(R.target_row("%s memory-bound workloads: share of copy bandwidth (lowest of %d)" % (lab, len(fr)),
                               "≥ 80%", "%s (%s)" % (R.fmt_pct(lo), lon), lo >= 0.8, "%+.0f points" % (100 * (lo - 0.8))))
        mm = [w for w in R.WORKLOADS if w["name"] in ("matmul", "matmul_nt") and w["name"] in res]
        for w in mm:
            f = R.of_peak(w["flops"], R.med(res[w["name"]]["tdsl"].get(b)), peak)
            a(R.target_row("%s %s: share of the f32 peak" % (lab, w["what"].split(",")[0]), "≥ 80%", R.fmt_pct(f),
                           f is not None and f >= 0.8, "%+.0f points" % (100 * (f - 0.8)) if f else ""))
