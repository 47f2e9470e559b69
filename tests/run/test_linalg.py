#!/usr/bin/python3
"""tests/run/test_linalg.py TDSLC: the products and statistics built of others (frontend/sema_linalg.c):
addmv/addr, mv, vdot, tensordot, cross, kron, diag_embed, addbmm, cov, corrcoef, trace — the "linalg" cases of composed_cases.py, each run and
compared with NumPy on the backend named by TDSL_BACKEND (exits 77 when tdslc lacks it).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from composed_cases import run_families  # noqa: E402
from oracle import require_backend  # noqa: E402

if __name__ == "__main__":
    require_backend(sys.argv[1])
    sys.exit(run_families({"linalg"}))
