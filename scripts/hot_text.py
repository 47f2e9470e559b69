#!/usr/bin/python3
"""scripts/hot_text.py: writes cmake/tdslc.order, the order in which lld lays out tdslc's
code (CMakeLists.txt: --symbol-ordering-file), from callgrind runs of a built tdslc.

Of tdslc's ~40 MB of code (LLVM linked in), a compile runs ~7 MB, scattered over the
whole; each 4 KiB page of it that the process touches first is a page fault. Laid out
first and together, that code takes fewer faults and fewer TLB entries (issue 31:
examples/attention.tdsl to an object -1.4 ms of ~25, page faults -270).

The functions each run executes, heaviest first: first those of examples/attention.tdsl
to an object (the target of issue 31) for three CPUs (valgrind's, znver3, and
skylake-avx512 for the AVX-512 code paths of this machine's host), then those that the
other runs add (GPT-2 to an object, the other --emit kinds, run through the JIT).
Symbols that a later LLVM or tdslc no longer has are ignored by the linker, so a stale
list costs speed, never correctness. Rerun after a change of LLVM version or when many
functions were added:
    scripts/hot_text.py build/tdslc   (needs valgrind; about two minutes)
"""
import collections
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ATT = "examples/attention.tdsl"
GPT2 = ["bench/models/gpt2.tdsl", "--fn", "gpt2", "--dim", "B=1", "--dim", "T=64"]
# (group, arguments): group 0 is laid out first.
RUNS = [(0, [ATT, "--emit=obj", "--cpu=skylake-avx512"]),
        (0, [ATT, "--emit=obj", "--cpu=znver3"]),
        (0, [ATT, "--emit=obj"]),
        (1, GPT2 + ["--emit=obj", "--cpu=skylake-avx512"]),
        (1, [ATT, "--emit=asm", "--cpu=skylake-avx512"]),
        (1, [ATT, "--emit=llvm", "--cpu=skylake-avx512"]),
        (1, [ATT, "--emit=ptx"]),
        (1, [ATT, "--emit=c"]),
        (1, ["examples/mlp.tdsl", "--emit=obj", "-O0"]),
        (1, ["run", "examples/layer_norm.tdsl", "--backend", "llvm"]),
        (1, ["--version"])]


def self_costs(path):
    """{function: instructions in it} for the code of the profiled executable itself."""
    names, objs, costs = {}, {}, collections.Counter()
    cur, cur_obj, in_call = None, None, False
    for line in open(path, encoding="utf-8", errors="replace"):
        m = re.match(r"^(c?ob)=\((\d+)\)(?: (.*))?$", line)
        if m:
            if m.group(3):
                objs[m.group(2)] = m.group(3)
            if m.group(1) == "ob":
                cur_obj = objs[m.group(2)]
            continue
        m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line)
        if m:
            if m.group(3):
                names[m.group(2)] = re.sub(r"'\d+$", "", m.group(3))  # recursion depth
            if m.group(1) == "fn":
                cur = names[m.group(2)] if cur_obj == EXE else None
            continue
        if line.startswith("calls="):
            in_call = True  # the next cost line is the call's inclusive cost
            continue
        m = re.match(r"^[+*-]?\d* (\d+)$", line)
        if m and cur:
            if not in_call:
                costs[cur] += int(m.group(1))
            in_call = False
    return costs


def main():
    global EXE
    if len(sys.argv) != 2:
        sys.exit("usage: scripts/hot_text.py PATH/TO/tdslc")
    EXE = os.path.realpath(sys.argv[1])
    nm = subprocess.run(["nm", "--defined-only", EXE], capture_output=True, text=True, check=True).stdout
    code = {p[2] for p in (l.split() for l in nm.splitlines()) if len(p) == 3 and p[1] in "tTwW"}
    groups = [collections.Counter(), collections.Counter()]
    with tempfile.TemporaryDirectory() as tmp:
        for i, (group, args) in enumerate(RUNS):
            out = os.path.join(tmp, "cg.%d" % i)
            cmd = ["valgrind", "--tool=callgrind", "--demangle=no", "--callgrind-out-file=" + out, EXE] + args
            if args[0] in ("run",):
                cmd += ["--seed", "1"]
            elif args[0] != "--version":
                cmd += ["-o", os.path.join(tmp, "out")]
            r = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if r.returncode != 0:
                sys.exit("failed: %s\n%s" % (" ".join(cmd), r.stderr[-2000:]))
            groups[group].update(self_costs(out))
            print("%-60s %d functions" % (" ".join(args)[:60], len(groups[group])), file=sys.stderr)
    order, seen = [], set()
    for g in groups:
        for name, _ in sorted(g.items(), key=lambda kv: (-kv[1], kv[0])):
            if name in code and name not in seen:
                seen.add(name)
                order.append(name)
    with open(os.path.join(ROOT, "cmake", "tdslc.order"), "w", encoding="utf-8") as f:
        f.write("# tdslc's code layout for lld (--symbol-ordering-file): written by scripts/hot_text.py,\n"
                "# which says how; %d functions, hottest first.\n" % len(order))
        f.writelines(n + "\n" for n in order)
    print("cmake/tdslc.order: %d functions" % len(order), file=sys.stderr)


if __name__ == "__main__":
    main()
