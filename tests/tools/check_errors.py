#!/usr/bin/env python3
"""tests/tools/check_errors.py TDSLC CASE.tdsl

Compiles CASE.tdsl from its own folder (so paths print as 'CASE.tdsl') and checks that
tdslc exits with the expected status (1 unless the case says '# exit: N') and that the
'error:' lines it prints are exactly the lines between '# >>> stderr' and '# <<<'
(each written after '# '). Extra arguments: '# args: --emit=ir --fn f'.
"""
import os
import subprocess
import sys


def expectations(text):
    want, args, status, inside = [], ["--emit=ir"], 1, False
    for line in text.splitlines():
        s = line.strip()
        if s == "# >>> stderr":
            inside = True
        elif s == "# <<<":
            inside = False
        elif inside:
            want.append(s[2:] if s.startswith("# ") else s.lstrip("#"))
        elif s.startswith("# args:"):
            args = s[len("# args:"):].split()
        elif s.startswith("# exit:"):
            status = int(s[len("# exit:"):])
    return want, args, status


def main():
    tdslc, case = os.path.abspath(sys.argv[1]), sys.argv[2]
    with open(case, "rb") as f:
        want, args, status = expectations(f.read().decode("utf-8", "replace"))
    if not want:
        print(f"{case}: no '# >>> stderr' block: the case asserts nothing")
        return 1
    folder, name = os.path.split(os.path.abspath(case))
    p = subprocess.run([tdslc, name] + args, cwd=folder, capture_output=True, timeout=60)
    err = p.stderr.decode("utf-8", "replace")
    got = [l for l in err.splitlines() if ": error: " in l or l.startswith("tdslc: ")]
    ok = True
    if p.returncode != status:
        print(f"exit status {p.returncode}, expected {status}")
        ok = False
    if got != want:
        print("error lines differ\n--- expected\n" + "\n".join(want) + "\n--- got\n" + "\n".join(got))
        ok = False
    if not ok:
        print("--- full stderr\n" + err)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
