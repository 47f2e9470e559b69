"""tests/tools/case_group.py: the command line that check_errors.py and check_golden.py share.

`TOOL TDSLC CASE...` checks each case with check(tdslc, case) (0: passed; what differs is
printed), one line per case ('ok CASE' or 'FAIL CASE' and what differs under it), then a
summary; exit status 1 when any case failed. `TOOL --update TDSLC CASE...` calls
update(tdslc, case) on each (True: the file was rewritten) and says how many changed.
"""
import contextlib
import io
import os


def main(argv, check, update, doc, noun):
    """Runs the tool on argv (sys.argv[1:]); returns its exit status. noun names the cases
    in the summary ('cases', 'goldens')."""
    update_mode = bool(argv) and argv[0] == "--update"
    if update_mode:
        argv = argv[1:]
    if len(argv) < 2:
        print(doc)
        return 2
    tdslc, cases = os.path.abspath(argv[0]), [os.path.abspath(c) for c in argv[1:]]
    if update_mode:
        changed = sum(update(tdslc, c) for c in cases)
        print(f"{changed} of {len(cases)} {noun} rewritten")
        return 0
    failed = []
    for case in cases:
        with contextlib.redirect_stdout(io.StringIO()) as why:  # what differs, under the case's line
            bad = check(tdslc, case)
        print(f"{'FAIL' if bad else 'ok  '} {os.path.basename(case)}" + (f"\n{why.getvalue()}" if bad else ""),
              flush=True)
        if bad:
            failed.append(os.path.basename(case))
    print(f"{len(cases) - len(failed)} of {len(cases)} {noun} passed" +
          (f"; failed: {' '.join(failed)}" if failed else ""))
    return 1 if failed else 0
