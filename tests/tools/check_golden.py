#!/usr/bin/env python3
"""tests/tools/check_golden.py TDSLC CASE.KIND.golden

Runs `tdslc CASE.tdsl --emit=KIND` (plus any '# golden-args: ...' of the case) from the
case's folder and compares stdout byte for byte with the golden file. CPU code kinds
get `--cpu=haswell` unless the case names a CPU: the schedules follow the CPU (the
matmul tile its vector width), and a golden must not depend on the machine. With
TDSLC_UPDATE_GOLDEN=1 the golden file is rewritten instead. Goldens hold text, never
numbers computed at run time.
"""
import os
import subprocess
import sys


def main():
    tdslc, golden = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    folder, gname = os.path.split(golden)
    stem = gname[: -len(".golden")]
    case, kind = stem.rsplit(".", 1)
    src = case + ".tdsl"
    args = []
    with open(os.path.join(folder, src), encoding="utf-8") as f:
        for line in f:
            if line.startswith("# golden-args:"):
                args = line[len("# golden-args:"):].split()
    emit = {"json": ["--emit=ir", "--json"]}.get(kind, [f"--emit={kind}"])
    if kind in ("c", "llvm", "asm", "kernels", "ir", "json") and not any(a.startswith("--cpu") for a in args):
        args.append("--cpu=haswell")
    p = subprocess.run([tdslc, src] + emit + args, cwd=folder, capture_output=True, timeout=60)
    if p.returncode != 0:
        print(f"tdslc exited {p.returncode}\n" + p.stderr.decode("utf-8", "replace"))
        return 1
    if os.environ.get("TDSLC_UPDATE_GOLDEN") == "1":
        with open(golden, "wb") as f:
            f.write(p.stdout)
        print(f"updated {gname}")
        return 0
    with open(golden, "rb") as f:
        want = f.read()
    if p.stdout != want:
        import difflib
        diff = difflib.unified_diff(want.decode().splitlines(), p.stdout.decode().splitlines(),
                                    "expected", "got", lineterm="")
        print("\n".join(diff))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
