#!/usr/bin/python3
"""tests/run/test_random.py TDSLC: seeded random programs (randprog.py) checked against a
NumPy interpreter of the same expression trees, on the backend named by TDSL_BACKEND
(see oracle.require_backend; exit 77 when tdslc lacks it), in bundles of 8 programs per
run (randprog.run_bundle).

TDSL_RANDOM_COUNT sets the number of programs, TDSL_RANDOM_SEED the first seed
(default 0). The default count depends on the backend to keep `make test` within its
time budget: 300 programs on LLVM (and on tdslc's default, which is LLVM), 150 (seeds
0..149) on C, whose runs cost a cc each (about three times an LLVM JIT run);
test_backends_agree.py runs 100 more (other seeds) through both backends and compares
them. A failure prints the whole program.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import Tally, require_backend, test_subset  # noqa: E402
from randprog import Program, run_programs  # noqa: E402

DEFAULT_COUNT = {"c": 150, "llvm": 300, None: 300}


def main():
    tdslc = os.path.abspath(sys.argv[1])
    backend = require_backend(tdslc)
    count = int(os.environ.get("TDSL_RANDOM_COUNT", DEFAULT_COUNT.get(backend, 300)))
    first = int(os.environ.get("TDSL_RANDOM_SEED", "0"))
    # the sanitizer pass runs every Nth seed (oracle.test_subset): the plain pass ran them all
    progs = [Program(s).build() for s in range(first, first + count, test_subset())]
    tally = Tally()
    run_programs(tdslc, progs, tally, backend)
    return tally.summary()


if __name__ == "__main__":
    sys.exit(main())
