#!/usr/bin/env python3
"""tests/tools/ctest_cpu.py BUILD_DIR [-j N] [-R REGEX] [-E REGEX] [--out FILE]

Runs the tests of BUILD_DIR as ctest would (the commands, working folders and
environments of `ctest --show-only=json-v1`), N at a time (default 2), and prints each
test's CPU time (user + system, its children included) and wall time, slowest first,
then the totals. CPU time does not depend on what else the machine is doing, so it is
the measure to keep `make test`'s budget with (tests/CMakeLists.txt's SLOW_TESTS, the
COST order): on an idle machine with N cores a pass takes about its total CPU / N.
The environment of this script (TDSL_TEST_SUBSET, ASAN_OPTIONS ...) is passed on, as
`make test-asan` passes its own to ctest.
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import threading
import time

LOCK = threading.Lock()


def tests(build):
    p = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build, capture_output=True, text=True, check=True)
    out = []
    for t in json.loads(p.stdout)["tests"]:
        props = {q["name"]: q["value"] for q in t.get("properties", [])}
        env = dict(os.environ)
        for kv in props.get("ENVIRONMENT", []):
            k, _, v = kv.partition("=")
            env[k] = v
        out.append((t["name"], t["command"], props.get("WORKING_DIRECTORY", build), env,
                    int(props.get("PROCESSORS", 1)), props.get("SKIP_RETURN_CODE")))
    return out


def run_one(t):
    name, cmd, cwd, env, _, skip = t
    # a child's rusage alone: the test runs under a small wrapper process that reports it
    wrapper = ("import resource, subprocess, sys\n"
               "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
               "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
               "print(p.returncode, r.ru_utime + r.ru_stime)\n")
    t0 = time.time()
    p = subprocess.run([sys.executable, "-c", wrapper] + cmd, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.time() - t0
    rc, cpu = p.stdout.split()
    status = "passed" if rc == "0" else "skipped" if skip is not None and rc == str(skip) else f"FAILED ({rc})"
    return name, float(cpu), wall, status


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("-R")
    ap.add_argument("-E")
    ap.add_argument("--out")
    a = ap.parse_args()
    ts = [t for t in tests(os.path.abspath(a.build)) if (not a.R or re.search(a.R, t[0])) and
          (not a.E or not re.search(a.E, t[0]))]
    results = []
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.j) as ex:
        for r in ex.map(run_one, ts):
            results.append(r)
            with LOCK:
                print(f"{len(results)}/{len(ts)} {r[0]:40} cpu {r[1]:7.1f} s  wall {r[2]:7.1f} s  {r[3]}", flush=True)
    lines = [f"{cpu:8.1f} s cpu {wall:8.1f} s wall  {name}  {status}" for name, cpu, wall, status in
             sorted(results, key=lambda r: -r[1])]
    total = sum(r[1] for r in results)
    lines.append(f"{len(results)} tests: {total:.0f} s of CPU ({total / a.j:.0f} s on {a.j} idle cores), "
                 f"{time.time() - t0:.0f} s of wall here; {sum(r[3].startswith('FAILED') for r in results)} failed")
    print("\n".join(lines))
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
