#!/usr/bin/python3
"""tests/tools/spelling_audit.py TDSLC [--markdown]: which of PyTorch 1.13's spellings
tdslc knows.

The names come from the installed torch itself: every public function of
torch.nn.functional, and every op PyTorch has both as torch.NAME and as a Tensor method
(in-place `_` forms, dunders and non-tensor utilities left out). For each spelling
(F.NAME, torch.NAME, x.NAME) a one-line program reads the name without calling it;
tdslc's answer tells whether it knows it: "is a function: call it" / "is a method" means
known, "has no attribute" means refused; a known one is then called with a tensor, and
"is not supported: ..." (an op whose result depends on the values) counts as refused. Prints the refused spellings, grouped, and the
counts. A report, not a test: it asserts nothing.
"""
import os
import re
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F

SKIP = re.compile(r"^(_|is_|has_|set_|get_|to_|as_|new_tensor|storage|data_ptr|element_size|type$|cpu$|cuda$|"
                  r"numpy$|tolist$|item$|backward$|register_|retain|requires_grad|share_memory|pin_memory|record|"
                  r"dim_order|untyped|stride$|size$|apply_|map_|detach|grad|align|rename|refine|unflatten$|"
                  r"q_|int_repr|dequantize|quantize|sparse|coalesce|indices$|values$|crow|col_|ccol|row_|"
                  r"to_dense|to_mkldnn|resize|storage_offset|sum_to_size|bfloat16$|half$|float$|double$|"
                  r"long$|int$|bool$|short$|byte$|char$|cfloat|cdouble|chalf|conj|resolve|positive$|"
                  r"is_|nbytes|itemsize|device|layout|dtype|shape|ndim|names|output_nr|_version)")


def candidates():
    tensor_methods = {n for n in dir(torch.Tensor) if not n.startswith("_") and not n.endswith("_")}
    ops = sorted(n for n in dir(torch) if n in tensor_methods and callable(getattr(torch, n)) and not SKIP.match(n))
    fns = sorted(n for n in dir(F) if not n.startswith("_") and callable(getattr(F, n))
                 and getattr(getattr(F, n), "__module__", "") in ("torch.nn.functional", "torch._C._nn", None)
                 and n not in ("Tensor", "Callable", "Optional", "List", "Tuple", "Union", "BroadcastingList1",
                               "BroadcastingList2", "BroadcastingList3", "boolean_dispatch", "handle_torch_function",
                               "has_torch_function", "has_torch_function_unary", "has_torch_function_variadic",
                               "assert_int_or_pair", "DType", "reproducibility_notes", "sparse_support_notes",
                               "tf32_notes", "math", "warnings", "importlib", "torch", "grad"))
    return ops, fns


def errors(tdslc, stmts):
    """(i, message) for each error tdslc reports in a file of one function per statement."""
    src = "".join(f"fn f{i}(x: f32[3]) -> f32[3] {{\n    t = {st}\n    return x\n}}\n" for i, st in enumerate(stmts))
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "audit.tdsl")
        with open(path, "w") as f:
            f.write(src)
        p = subprocess.run([tdslc, path, "--emit=ir"], capture_output=True, text=True, timeout=120)
    return [((int(m.group(1)) - 2) // 4, m.group(2))
            for m in re.finditer(r"audit\.tdsl:(\d+):\d+: error: (.*)", p.stderr)]


def knows(tdslc, exprs, probe_calls=True):
    """The subset of exprs (each 'torch.NAME', 'F.NAME' or 'x.NAME') tdslc knows, asked
    ten at a time (tdslc stops reporting after a number of errors)."""
    if len(exprs) > 10:
        return [e for k in range(0, len(exprs), 10) for e in knows(tdslc, exprs[k:k + 10], probe_calls)]
    refused = {exprs[i] for i, msg in errors(tdslc, exprs) if "has no attribute" in msg or "undeclared" in msg}
    known = [e for e in exprs if e not in refused]
    if probe_calls:  # called with one tensor, an op whose result depends on the values says so
        refused |= {known[i] for i, msg in errors(tdslc, [f"{e}(x)" for e in known]) if "is not supported:" in msg}
    return [e for e in exprs if e not in refused]


def main():
    tdslc = sys.argv[1]
    md = "--markdown" in sys.argv
    ops, fns = candidates()
    groups = [("F.NAME", [f"F.{n}" for n in fns]), ("torch.NAME", [f"torch.{n}" for n in ops]),
              ("x.NAME", [f"x.{n}" for n in ops])]
    total_known = total = 0
    for title, exprs in groups:
        known = set(knows(tdslc, exprs))
        refused = [e for e in exprs if e not in known]
        total += len(exprs)
        total_known += len(known)
        print(f"{'### ' if md else ''}{title}: {len(known)} of {len(exprs)} known; refused ({len(refused)}):")
        print(("" if md else "  ") + ", ".join(f"`{e}`" if md else e for e in refused))
        print()
    print(f"{total_known} of {total} spellings known")
    return 0


if __name__ == "__main__":
    sys.exit(main())
