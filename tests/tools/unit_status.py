#!/usr/bin/env python3
"""tests/tools/unit_status.py BINARY [ARGS...]: runs a cmocka unit test and turns its
result into ctest's: its own exit status when any test failed or it died (a signal is
exit 1 with the signal named), 77 (SKIP_RETURN_CODE, a skip) when it passed but skipped
some tests (cmocka's `[  SKIPPED ]`: a GPU or NVRTC that is not here), 0 when every test
ran and passed. ctest's SKIP_REGULAR_EXPRESSION would mark a test skipped whatever its
exit status, so a failed test next to a skipped one would pass as "Skipped"."""
import subprocess
import sys


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = p.stdout.decode(errors="replace")
    sys.stdout.write(out)
    if p.returncode < 0:
        print(f"unit_status: {sys.argv[1]} was killed by signal {-p.returncode}")
        return 1
    if p.returncode != 0:
        return p.returncode
    skipped = {ln for ln in out.splitlines() if ln.startswith("[  SKIPPED ]") and "test(s)" not in ln}
    if skipped:
        print(f"unit_status: every test that ran passed; {len(skipped)} skipped (shown as a skip)")
        return 77
    return 0


if __name__ == "__main__":
    sys.exit(main())
