#!/usr/bin/python3
"""tests/run/test_gpu_check.py TDSLC: scripts/gpu-check --dry-run with this tdslc.

It stages what a GPU machine needs into a temporary folder (this tdslc, stripped, in
place of a Release build; libdevice; the test scripts, examples and bench/gpu; the
manifest) and checks it is all there and small enough to travel; then runs the staged
copy's --on-device path here, where it must find no GPU, say so in gpu-report.md and
exit 0; and again over tests/shim's fake driver and NVRTC (--shim: the data-error part
of the GPU suite and the benchmark at small sizes run for real, on the CUDA C backend
under the shim's checker, and the report must show them). Exits 77 without g++ (the
shim) and without objdump or strip (binutils, which staging uses).
"""
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from oracle import SKIP  # noqa: E402


def main():
    tdslc = os.path.abspath(sys.argv[1])
    for tool in ("g++", "objdump", "strip"):
        if shutil.which(tool) is None:
            print(f"SKIP: no {tool}")
            return SKIP
    p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gpu-check"), "--dry-run", "--shim", "--tdslc",
                        tdslc], capture_output=True, text=True, timeout=1500)
    print(p.stdout, end="")
    print(p.stderr[-4000:], end="", file=sys.stderr)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith(("ok  ", "FAIL"))]
    nfail = sum(ln.startswith("FAIL") for ln in lines)
    if p.returncode != 0 and nfail == 0:
        nfail = 1
        print(f"FAIL scripts/gpu-check --dry-run exited {p.returncode}")
    print(f"{len(lines) - nfail} passed, {nfail} failed")
    return 1 if nfail or p.returncode else 0


if __name__ == "__main__":
    sys.exit(main())
