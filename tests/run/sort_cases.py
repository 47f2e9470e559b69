"""tests/run/sort_cases.py: the sorting ops as op cases (op_cases.Case) of test_ops.py's
all_cases(), so that test_ops runs them on both CPU backends, test_gpu_run on a GPU,
and test_cuda_compile and test_ptx_compile compile their SORT kernels: sort and argsort
(stable, with ties and NaN) in every dtype and layout, topk, kthvalue and median on
distinct values (exact indices), median(), rows of one element and long odd rows.
test_sorts.py checks the semantics more closely."""
import zlib

import numpy as np

from op_cases import Case
from oracle import ALL_DTYPES, rnd
from test_sorts import model_median, model_sort, values


def distinct(rng, dt, shape):
    """Distinct values exact in dt (ints: a permutation; bf16 holds integers to 256)."""
    n = int(np.prod(shape))
    return rnd(rng.permutation(n).reshape(shape) - n // 2, dt)


def sort_cases():
    cases = []
    for dt in ALL_DTYPES:
        c = Case(f"sort_{dt}")
        rng = np.random.default_rng(zlib.crc32(c.name.encode()))
        for lay in ("c", "t", "s"):
            e, v = c.param(dt, [6, 37], lay, rng, val=None, gen=lambda r, d, s: values(r, d, s))
            vals, idx = model_sort(v, -1)
            c.out(f"{e}.sort(stable=True)[0]", dt, vals, "exact")
            c.out(f"{e}.sort(-1, stable=True)[1]", "i64", idx, "exact")
            c.out(f"{e}.argsort(0, True, stable=True)", "i64", model_sort(v, 0, True)[1], "exact")
        e, v = c.param(dt, [5, 1], "c", rng, gen=lambda r, d, s: values(r, d, s))
        c.out(f"torch.msort({e})", dt, model_sort(v, 0)[0], "exact")
        c.out(f"{e}.sort()[1]", "i64", np.zeros((5, 1), np.int64), "exact")
        if dt != "bool":
            e, v = c.param(dt, [7, 9], "t", rng, val=distinct(rng, dt, [9, 7]))
            # distinct values: descending is ascending reversed (-v would wrap for u8)
            c.out(f"{e}.topk(4)[0]", dt, np.sort(v, -1)[:, ::-1][:, :4], "exact")
            c.out(f"{e}.topk(4)[1]", "i64", np.argsort(v, -1)[:, ::-1][:, :4], "exact")
            c.out(f"{e}.topk(3, 0, False)[1]", "i64", np.argsort(v, 0)[:3], "exact")
            c.out(f"{e}.kthvalue(5)[0]", dt, np.sort(v, -1)[:, 4], "exact")
            c.out(f"{e}.kthvalue(5, 0, True)[1]", "i64", np.argsort(v, 0)[4:5], "exact")
            mv, mi = model_median(v, 1)
            c.out(f"{e}.median(1)[0]", dt, mv, "exact")
            c.out(f"{e}.median(-1).indices", "i64", mi, "exact")
        e, v = c.param(dt, [3, 4], "c", rng, gen=lambda r, d, s: values(r, d, s))
        f = v.reshape(-1)
        want = np.nan if f.dtype.kind == "f" and np.isnan(f).any() else model_sort(f, 0)[0][(f.size - 1) // 2]
        c.out(f"{e}.median()", dt, want, "exact")
        cases.append(c)
    c = Case("sort_long_rows")
    rng = np.random.default_rng(21)
    e, v = c.param("f32", [3, 1001], "c", rng)
    c.out(f"{e}.sort(descending=True)[0]", "f32", -np.sort(-v, -1), "exact")
    c.out(f"{e}.argsort()", "i64", np.argsort(v, -1, kind="stable"), "exact")
    c.out(f"{e}.topk(10)[1]", "i64", np.argsort(-v, -1, kind="stable")[:, :10], "exact")
    cases.append(c)
    return cases
