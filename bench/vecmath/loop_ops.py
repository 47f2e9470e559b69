#!/usr/bin/python3
"""bench/vecmath/loop_ops.py: the instructions of each innermost loop in a kernel's
assembly, counted: how many vector math operations a loop iteration costs.

    bench/vecmath/loop_ops.py FILE.tdsl [--tdslc PATH] [--cpu NAME] [--fn NAME]
    bench/vecmath/loop_ops.py FILE.s

A FILE.tdsl is compiled by tdslc --emit=asm (the LLVM backend; --cpu as tdslc's). An
innermost loop is a label whose block ends in a conditional jump back to it, with no
other label in between: the vectorized body LLVM emits for an elementwise loop. For each
it prints the function, the instruction count, the vector ones (an operand in a
%xmm/%ymm/%zmm register), the counts by mnemonic, and the loop's lanes (the index step).
"""
import argparse
import collections
import re
import subprocess
import sys


def loops(asm):
    fn, label, body, out = None, None, [], []
    for line in asm.splitlines():
        s = line.split("#")[0].strip()
        if not s:
            continue
        m = re.match(r"^([A-Za-z_.$][\w.$]*):$", s)
        if m:
            if not m.group(1).startswith(".L"):
                fn = m.group(1)
            label, body = m.group(1), []
            continue
        if s.startswith("."):
            continue
        body.append(s)
        m = re.match(r"^j\w+\s+(\S+)$", s)
        if m and label and m.group(1) == label:
            out.append((fn, label, list(body)))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--tdslc", default="build/tdslc")
    ap.add_argument("--cpu", default=None)
    ap.add_argument("--fn", default=None)
    a = ap.parse_args()
    if a.file.endswith(".tdsl"):
        cmd = [a.tdslc, a.file, "--emit=asm"] + ([f"--cpu={a.cpu}"] if a.cpu else []) + (["--fn", a.fn] if a.fn else [])
        asm = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    else:
        asm = open(a.file).read()
    found = loops(asm)
    if not found:
        sys.exit("no innermost loop found")
    for fn, label, body in found:
        vec = [i for i in body if re.search(r"%[xyz]mm", i)]
        by = collections.Counter(i.split()[0] for i in vec)
        step = [i for i in body if re.match(r"^(add|sub)q\s+\$\d+,", i)]
        print(f"{fn} {label}: {len(body)} instructions, {len(vec)} vector; step {step[0] if step else '?'}")
        print("  " + ", ".join(f"{k} {v}" for k, v in sorted(by.items(), key=lambda kv: (-kv[1], kv[0]))))


if __name__ == "__main__":
    main()
