#!/usr/bin/env python3
"""tests/tools/check_golden.py TDSLC CASE.KIND.golden...
   tests/tools/check_golden.py --update TDSLC CASE.KIND.golden...

Runs `tdslc CASE.tdsl --emit=KIND` (plus any '# golden-args: ...' of the case) from the
case's folder and compares stdout byte for byte with the golden file. CPU code kinds
get `--cpu=haswell` unless the case names a CPU: the schedules follow the CPU (the
matmul tile its vector width), and a golden must not depend on the machine. Goldens
hold text, never numbers computed at run time.

--update is the only way to rewrite goldens (`make update-goldens`): it writes what
tdslc prints now and shows each change as a diff, to be read before it is committed. A
test run never rewrites its own expectation, whatever the environment says.
"""
import difflib
import os
import subprocess
import sys

import case_group


def emit(tdslc, golden):
    """(process, golden file name) of tdslc's output for the golden."""
    folder, gname = os.path.split(golden)
    stem = gname[: -len(".golden")]
    case, kind = stem.rsplit(".", 1)
    src = case + ".tdsl"
    args = []
    with open(os.path.join(folder, src), encoding="utf-8") as f:
        for line in f:
            if line.startswith("# golden-args:"):
                args = line[len("# golden-args:"):].split()
    cmd = {"json": ["--emit=ir", "--json"]}.get(kind, [f"--emit={kind}"])
    if kind in ("c", "llvm", "asm", "kernels", "ir", "json") and not any(a.startswith("--cpu") for a in args):
        args.append("--cpu=haswell")
    return subprocess.run([tdslc, src] + cmd + args, cwd=folder, capture_output=True, timeout=60), gname


def diff(want, got):
    return "\n".join(difflib.unified_diff(want.decode(errors="replace").splitlines(),
                                          got.decode(errors="replace").splitlines(), "expected", "got", lineterm=""))


def check(tdslc, golden):
    p, _ = emit(tdslc, golden)
    if p.returncode != 0:
        print(f"tdslc exited {p.returncode}\n" + p.stderr.decode("utf-8", "replace"))
        return 1
    with open(golden, "rb") as f:
        want = f.read()
    if p.stdout != want:
        print(diff(want, p.stdout))
        if os.environ.get("TDSLC_UPDATE_GOLDEN"):
            print("(TDSLC_UPDATE_GOLDEN is not read by the tests: `make update-goldens` rewrites the goldens)")
        return 1
    return 0


def update(tdslc, golden):
    p, gname = emit(tdslc, golden)
    if p.returncode != 0:
        print(f"{gname}: tdslc exited {p.returncode}, not rewritten\n" + p.stderr.decode("utf-8", "replace"))
        return False
    with open(golden, "rb") as f:
        want = f.read()
    if p.stdout == want:
        return False
    with open(golden, "wb") as f:
        f.write(p.stdout)
    print(f"updated {gname}\n{diff(want, p.stdout)}")
    return True


if __name__ == "__main__":
    sys.exit(case_group.main(sys.argv[1:], check, update, __doc__, "goldens"))
