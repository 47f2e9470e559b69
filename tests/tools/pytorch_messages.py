#!/usr/bin/python3
"""tests/tools/pytorch_messages.py [--strict] [CASE.tdsl...]

A developer's tool (not part of `make test`; it needs PyTorch, which scripts/deps.sh
--bench installs): runs each error case of tests/errors (default: all of them) as the
Python program it is written as, with PyTorch itself, and sets what PyTorch 1.13 says
beside the first error tdslc is expected to print. STYLE.md wants PyTorch's words
verbatim wherever PyTorch raises an error for the same mistake; this is where they come
from, instead of being typed by hand.

Translation: `fn NAME(params) -> T {` becomes `def NAME(params):`, a block's `{ ... }`
becomes indentation, `const` a global, true/false Python's; each parameter gets a tensor
of its declared dtype and shape (floats from randn, ints in 0..2, bools at random; a
dim named by a letter is 4) or a Python scalar; the function called is the one named
by the case's `--fn`, else the last one. Names tdsl knows without `torch.` (relu, exp,
cat ...) come from torch and torch.nn.functional.

Each case is reported as one of:
  same      PyTorch raises, with tdslc's message (or Python does, tdslc adding the
            "Did you mean" Python prints after a NameError or AttributeError)
  same-cuda the same up to the kernel's name: tdsl follows PyTorch's CUDA build, whose
            kernels are "..._cuda" where the CPU build this runs says "..._cpu"
  differs   PyTorch raises something else: its message is printed under tdslc's
  accepts   PyTorch runs the program: tdslc's message is its own (a compile-time limit,
            a rule of tdsl), which STYLE.md wants lowercase and without a final period
  skipped   not translated (tdsl syntax without a Python spelling) or not run
With --strict the exit status is 1 when a case differs.
"""
import glob
import math
import os
import re
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ERRORS = os.path.join(os.path.dirname(HERE), "errors")

DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64", "bool": "bool", "u8": "uint8",
          "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64"}


def expected(text):
    """(first error message tdslc prints, --fn or None)."""
    msg, fn = None, None
    for line in text.splitlines():
        m = re.match(r"#\s*\S+:\d+:\d+: error: (.*)$", line)
        if m and msg is None:
            msg = m.group(1)
        m = re.match(r"#\s*args:.*--fn[ =](\w+)", line)
        if m:
            fn = m.group(1)
    return msg, fn


def split_params(text):
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += ch in "[(" and 1 or ch in "])" and -1 or 0
        cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def translate(src):
    """(Python source, {function: [(name, type text)]}), or raises ValueError."""
    lines, sigs, indent = [], {}, 0
    code = [ln.split("#", 1)[0].rstrip() if not re.search(r"['\"]", ln) else ln.rstrip() for ln in src.splitlines()]
    for raw in code:
        s = raw.strip()
        if not s or s.startswith("#"):
            continue
        s = re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", s))
        closes = s.startswith("}")
        if closes:
            indent -= 1
            s = s[1:].strip()
        m = re.match(r"fn\s+(\w+)\s*\((.*)\)\s*->\s*(.*?)\s*\{\s*(.*?)\s*(\})?$", s)
        if m:
            params = [p for p in split_params(m.group(2))]
            sig = []
            for p in params:
                p = re.sub(r"^mut\s+", "", p)
                name, _, ty = p.partition(":")
                sig.append((name.strip(), ty.strip()))
            sigs[m.group(1)] = sig
            lines.append("    " * indent + f"def {m.group(1)}({', '.join(n for n, _ in sig)}):")
            if m.group(4):  # a one-line body
                lines.append("    " * (indent + 1) + m.group(4))
            elif not m.group(5):
                indent += 1
            continue
        if s.startswith("const "):
            s = s[len("const "):]
        if s.endswith("{"):
            lines.append("    " * indent + s[:-1].rstrip() + ":")
            indent += 1
        elif s:
            lines.append("    " * indent + s)
        if indent < 0:
            raise ValueError("unbalanced braces")
    return "\n".join(lines) + "\n", sigs


def argument(torch, ty, gen):
    m = re.fullmatch(r"(\w+)\[(.*)\]", ty)
    if ty in ("int", "float", "bool"):
        return {"int": 1, "float": 0.5, "bool": True}[ty]
    if not m or m.group(1) not in DTYPES:
        raise ValueError(f"type {ty!r}")
    shape = [int(d) if re.fullmatch(r"\d+", d.strip()) else 4 for d in m.group(2).split(",") if d.strip()]
    dt = getattr(torch, DTYPES[m.group(1)])
    if dt.is_floating_point:
        return torch.randn(shape, generator=gen).to(dt)
    if dt == torch.bool:
        return torch.randint(0, 2, shape, generator=gen).bool()
    return torch.randint(0, 3, shape, generator=gen).to(dt)


def namespace(torch):
    import builtins
    import torch.nn.functional as F
    ns = {k: getattr(F, k) for k in dir(F) if not k.startswith("_")}
    ns.update({k: getattr(torch, k) for k in dir(torch) if not k.startswith("_")})
    # a name that is both Python's and torch's (range, max, abs, sum ...) is Python's on
    # Python values and torch's on tensors, as in tdsl
    for k in dir(builtins):  # Python's own (float, range, len ...) stay Python's
        if k in ns and k not in ("abs", "all", "any", "max", "min", "pow", "round", "sum"):
            del ns[k]
    for k in ("abs", "all", "any", "max", "min", "pow", "round", "sum"):
        if k in ns:
            ns[k] = (lambda py, pt: lambda *a, **kw: pt(*a, **kw) if any(isinstance(x, torch.Tensor) for x in
                     list(a) + list(kw.values())) else py(*a, **kw))(getattr(builtins, k), ns[k])
    ns.update({"torch": torch, "F": F, "math": math, "Tensor": torch.Tensor})
    ns.update({k: getattr(torch, v) for k, v in DTYPES.items()})
    return ns


class Timeout(Exception):
    pass


def on_alarm(signum, frame):
    raise Timeout()


def run(torch, path):
    with open(path, encoding="utf-8-sig", errors="replace") as f:
        text = f.read()
    want, fn = expected(text)
    try:
        py, sigs = translate(text.split("# >>> stderr")[0])
        if not sigs:
            return "skipped", want, "no function"
        fn = fn or list(sigs)[-1]
        gen = torch.Generator().manual_seed(0)
        args = [argument(torch, ty, gen) for _, ty in sigs[fn]]
    except (ValueError, KeyError) as e:
        return "skipped", want, f"not translated: {e}"
    ns = namespace(torch)
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(10)  # (tdsl unrolls its loops at compile time; Python would run 10**9 iterations)
    try:
        exec(compile(py, path, "exec"), ns)  # noqa: S102 (the repository's own test cases)
        ns[fn](*args)
    except SyntaxError as e:  # Python's own compile errors ('break' outside loop)
        got = e.msg
        return ("same" if got == want else "differs"), want, f"SyntaxError: {got}"
    except Timeout:
        return "skipped", want, "still running after 10 s"
    except Exception as e:  # noqa: BLE001 (any error PyTorch or Python raises is the answer)
        got = str(e).split("\n")[0].strip()
        # (Python prints "Did you mean" after a NameError's or AttributeError's text)
        if got == want or got == re.sub(r"\. Did you mean: '[^']*'\?$", "", want):
            return "same", want, got
        if re.sub(r'"(\w+)_cpu"', r'"\1_cuda"', got) == want:
            return "same-cuda", want, got
        return "differs", want, f"{type(e).__name__}: {got}"
    finally:
        signal.alarm(0)
    return "accepts", want, ""


def main():
    argv = sys.argv[1:]
    strict = "--strict" in argv
    cases = [a for a in argv if a != "--strict"] or sorted(glob.glob(os.path.join(ERRORS, "*.tdsl")))
    try:
        import torch
    except ImportError:
        print("pytorch_messages.py needs PyTorch (scripts/deps.sh --bench installs python3-torch)")
        return 2
    torch.manual_seed(0)
    counts = {}
    for path in cases:
        status, want, got = run(torch, path)
        counts[status] = counts.get(status, 0) + 1
        print(f"{status:9} {os.path.basename(path)}")
        if status in ("differs", "skipped"):
            print(f"          tdslc:   {want}\n          PyTorch: {got}")
    print(f"PyTorch {torch.__version__}: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    return 1 if strict and counts.get("differs") else 0


if __name__ == "__main__":
    sys.exit(main())
