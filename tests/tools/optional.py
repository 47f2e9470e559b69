#!/usr/bin/env python3
"""tests/tools/optional.py MODULE -- COMMAND...

Runs COMMAND when the Python module MODULE can be imported, else prints why and exits
77, which ctest (SKIP_RETURN_CODE 77) shows as a skip: the test of an optional
dependency never passes without having run."""
import importlib
import os
import sys


def main():
    argv = sys.argv[1:]
    if len(argv) < 3 or argv[1] != "--":
        print(__doc__)
        return 2
    module, cmd = argv[0], argv[2:]
    try:
        importlib.import_module(module)
    except ImportError as e:
        print(f"SKIP: the optional module {module} is not installed ({e}); scripts/deps.sh --bench installs it")
        return 77
    os.execvp(cmd[0], cmd)


if __name__ == "__main__":
    sys.exit(main())
