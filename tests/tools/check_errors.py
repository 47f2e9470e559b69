#!/usr/bin/env python3
"""tests/tools/check_errors.py TDSLC CASE.tdsl...
   tests/tools/check_errors.py --update TDSLC CASE.tdsl...

Compiles CASE.tdsl from its own folder (so paths print as 'CASE.tdsl') and checks that
tdslc exits with the expected status (1 unless the case says '# exit: N') and that its
whole standard error — each error, warning and note with the echoed source line and
the caret under it — is exactly the lines between '# >>> stderr' and '# <<<' (each
written after '# '; trailing blanks are not compared). Extra arguments:
'# args: --emit=ir --fn f'. The block must hold at least one error.

--update is the explicit way to rewrite the blocks from what tdslc prints now (`make
update-errors`); it prints each change as a diff, to be read before it is committed.
A test never rewrites its own expectation.

Several cases are checked in one run (ctest's errors.X holds every case whose name starts
with X: one Python start for them all), each reported on a line of its own, 'ok CASE' or
'FAIL CASE' followed by what differs; the exit status is 1 when any case failed.
"""
import difflib
import os
import subprocess
import sys

import case_group

BEGIN, END = "# >>> stderr", "# <<<"


def expectations(text):
    want, args, status, inside = [], ["--emit=ir"], 1, False
    for line in text.splitlines():
        s = line.strip()
        if s == BEGIN:
            inside = True
        elif s == END:
            inside = False
        elif inside:
            body = line.rstrip()
            want.append(body[2:] if body.startswith("# ") else body.lstrip("#"))
        elif s.startswith("# args:"):
            args = s[len("# args:"):].split()
        elif s.startswith("# exit:"):
            status = int(s[len("# exit:"):])
    return want, args, status


def run(tdslc, case, args):
    folder, name = os.path.split(os.path.abspath(case))
    p = subprocess.run([tdslc, name] + args, cwd=folder, capture_output=True, timeout=60)
    err = p.stderr.decode("utf-8", "replace")
    return p.returncode, err, [line.rstrip() for line in err.splitlines()]


def check(tdslc, case):
    with open(case, "rb") as f:
        want, args, status = expectations(f.read().decode("utf-8", "replace"))
    if not any(": error: " in line or line.startswith("tdslc: error: ") for line in want):
        print(f"{case}: no error in its '{BEGIN}' block: the case asserts nothing")
        return 1
    rc, err, got = run(tdslc, case, args)
    ok = True
    if rc != status:
        print(f"exit status {rc}, expected {status}")
        ok = False
    if got != want:
        print("standard error differs (--- expected, +++ got)")
        print("\n".join(difflib.unified_diff(want, got, "expected", "got", lineterm="", n=2)))
        ok = False
    if not ok:
        print("--- full stderr\n" + err)
    return 0 if ok else 1


def update(tdslc, case):
    """Rewrites case's block with tdslc's standard error; prints the change. Returns
    whether the file changed."""
    with open(case, encoding="utf-8", newline="") as f:  # a CRLF case keeps its line ends
        text = f.read()
    want, args, _ = expectations(text)
    _, _, got = run(tdslc, case, args)
    if got == want:
        return False
    eol = "\r\n" if "\r\n" in text else "\n"
    lines = text.split(eol)
    start = next(i for i, l in enumerate(lines) if l.strip() == BEGIN)
    stop = next(i for i in range(start, len(lines)) if lines[i].strip() == END)
    block = [("# " + g).rstrip() for g in got]
    new = eol.join(lines[:start + 1] + block + lines[stop:])
    with open(case, "w", encoding="utf-8", newline="") as f:
        f.write(new)
    print("\n".join(difflib.unified_diff(lines[start:stop + 1], new.split(eol)[start:start + len(block) + 2],
                                         case, case, lineterm="", n=1)))
    return True


if __name__ == "__main__":
    sys.exit(case_group.main(sys.argv[1:], check, update, __doc__, "cases"))
