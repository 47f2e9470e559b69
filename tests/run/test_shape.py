#!/usr/bin/python3
"""tests/run/test_shape.py TDSLC: the copies and views built of views (frontend/sema_shape.c, sema_index.c):
ravel, diag, rot90, hsplit/vsplit/dsplit, split_with_sizes, take_along_dim — the "shape" cases of composed_cases.py, each run and
compared with NumPy on the backend named by TDSL_BACKEND (exits 77 when tdslc lacks it).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from composed_cases import run_families  # noqa: E402
from oracle import require_backend  # noqa: E402

if __name__ == "__main__":
    require_backend(sys.argv[1])
    sys.exit(run_families({"shape"}))
