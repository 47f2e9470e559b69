#!/usr/bin/python3
"""tests/run/test_emit_c.py TDSLC: every example and golden program's --emit=c compiles
with `cc -std=c11 -O2 -fopenmp -Wall -Wextra -Werror` (issue 3's flags, and -Wextra: a user's
project may build with it), and with clang's -Wall -Wextra -Werror where clang is installed
(an optional tool: without it that half is skipped, and said so); its --emit=header
compiles on its own and next to the C.

With TDSL_EMIT_ONLY=1 (the sanitizer pass) only tdslc's part runs: the texts are the
release build's, which cc has compiled, and cc cannot find a bug in tdslc."""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import ROOT, Tally, program_files  # noqa: E402


def main():
    tdslc = os.path.abspath(sys.argv[1])
    inc = subprocess.run([tdslc, "--print-include-dir"], capture_output=True, text=True).stdout.strip()
    tally = Tally()
    clang = shutil.which("clang")
    if not clang and not os.environ.get("TDSL_EMIT_ONLY"):
        print("skipped: the clang half (clang is not installed; scripts/deps.sh --fuzz installs it)")
    tmp = tempfile.mkdtemp(prefix="tdsl-emitc-")
    try:
        for f in program_files():
            stem = os.path.splitext(os.path.basename(f))[0]
            c, h = os.path.join(tmp, stem + ".c"), os.path.join(tmp, stem + ".h")
            errs = []
            for kind, out in (("c", c), ("header", h)):
                p = subprocess.run([tdslc, f, f"--emit={kind}", "-o", out], capture_output=True, text=True)
                if p.returncode != 0:
                    errs.append(f"--emit={kind} exit {p.returncode}: {p.stderr.strip()}")
            if not errs and not os.environ.get("TDSL_EMIT_ONLY"):
                user = os.path.join(tmp, stem + "_user.c")
                with open(user, "w") as u:
                    u.write(f'#include "{stem}.h"\n#include "{stem}.h"\nint tdsl_user_unused;\n')
                for cc, src in [("cc", c), ("cc", user)] + ([("clang", c)] if clang else []):
                    p = subprocess.run([cc, "-std=c11", "-O2" if cc == "cc" else "-O0", "-Wall", "-Wextra", "-Werror",
                                        "-I", inc, "-I", tmp, "-c", src, "-o", src + ".o"]
                                       + (["-fopenmp"] if cc == "cc" else []), capture_output=True, text=True)
                    if p.returncode != 0:
                        errs.append(f"{cc} {os.path.basename(src)}:\n{p.stderr.strip()[:2000]}")
            tally.report(os.path.relpath(f, ROOT), errs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return tally.summary()


if __name__ == "__main__":
    sys.exit(main())
