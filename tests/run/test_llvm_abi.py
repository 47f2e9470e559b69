#!/usr/bin/python3
"""tests/run/test_llvm_abi.py TDSLC: the LLVM backend's object files as a user meets them.

The same user program and checks as test_c_abi.py (its write_user_program and run_main), but the
functions come from `--emit=obj` (a relocatable ELF object built by LLVM) instead of C:
cc main.c gen.o -I$(tdslc --print-include-dir) -L$(tdslc --print-lib-dir) -ltdslrt -lm.
Also: the object defines exactly the entries as global symbols (everything else it
makes up is local, so objects of several files link together), every example and
golden program's --emit=obj, --emit=asm and --emit=llvm succeed (the .ll is accepted
by llvm-as-14 when it is installed), -O0..-O3 and --cpu are honoured, and --time names
the LLVM stages. Fails without cc (declared); exit 77 (skip) for a tdslc built without LLVM.
"""
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import EXAMPLES, Tally, program_files, run_cmd as run  # noqa: E402
from test_c_abi import run_main, sanitizer_flags, write_user_program  # noqa: E402

TDSLC = os.path.abspath(sys.argv[1])
T = Tally()
check = T.check


def main():
    if not shutil.which("cc"):  # a declared dependency (scripts/deps.sh installs gcc): its absence fails
        print("FAIL no cc on PATH (gcc, which scripts/deps.sh installs)")
        return 1
    d = tempfile.mkdtemp(prefix="tdsl-llvm-abi-")
    try:
        with open(os.path.join(d, "probe.tdsl"), "w") as f:
            f.write("fn f(x: f32[2]) -> f32[2] { return x + 1 }\n")
        p = run([TDSLC, "probe.tdsl", "--emit=obj", "-o", "probe.o"], d)
        if p.returncode == 2 and b"without LLVM" in p.stderr:
            print("tdslc built without LLVM: skipped")
            return 77
        return body(d)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def body(d):
    dirs = write_user_program(d, "obj", "gen.o", check)
    if not dirs:
        return 1
    inc, lib = dirs
    with open(os.path.join(d, "gen.o"), "rb") as f:
        head = f.read(18)
    check("--emit=obj is a relocatable ELF object", head[:4] == b"\x7fELF" and head[16:18] == b"\x01\x00", head)
    p = run(["nm", "-g", "--defined-only", "gen.o"], d)
    defined = sorted(line.split()[-1] for line in p.stdout.decode().splitlines() if line.strip())
    check("the object defines exactly the entries as global symbols",
          defined == ["affine", "bump", "pick", "tr"], defined)

    p = run(["cc", "-std=c11", "-O2", "-Wall", "-Werror", "main.c", "gen.o", f"-I{inc}", f"-L{lib}", "-ltdslrt",
             "-lm", "-lpthread", "-o", "main"] + sanitizer_flags(lib), d)
    check("the user program links with the object, the header and libtdslrt", p.returncode == 0, p.stderr.decode())
    if p.returncode != 0:
        return 1

    run_main(d, lib, check)

    # every example and golden program through every LLVM output kind
    llvm_as = shutil.which("llvm-as-14")
    for f in program_files():
        stem = os.path.splitext(os.path.basename(f))[0]
        errs = []
        for kind in ("obj", "asm", "llvm"):
            out_path = os.path.join(d, f"{stem}.{kind}")
            p = run([TDSLC, f, f"--emit={kind}", "-o", out_path], d)
            if p.returncode != 0:
                errs.append(f"--emit={kind}: exit {p.returncode}: {p.stderr.decode()}")
            elif kind == "llvm" and llvm_as:
                q = run([llvm_as, "-o", "/dev/null", out_path], d)
                if q.returncode != 0:
                    errs.append(f"llvm-as-14: {q.stderr.decode()}")
        check(f"{stem}: --emit=obj, asm and llvm", not errs, "\n".join(errs))

    ex = os.path.join(EXAMPLES, "mlp.tdsl")
    for opt in ("-O0", "-O1", "-O2", "-O3"):
        p = run([TDSLC, ex, "--emit=obj", opt, "-o", os.path.join(d, "o.o")], d)
        check(f"{opt} is accepted", p.returncode == 0, p.stderr.decode())
    p = run([TDSLC, ex, "--emit=asm", "--cpu=haswell"], d)
    check("--cpu=haswell uses AVX2 registers", p.returncode == 0 and b"ymm" in p.stdout, p.stderr.decode())
    p = run([TDSLC, ex, "--emit=asm", "--cpu=x86-64"], d)
    check("--cpu=x86-64 uses SSE only", p.returncode == 0 and b"xmm" in p.stdout and b"ymm" not in p.stdout,
          p.stderr.decode())
    p = run([TDSLC, ex, "--emit=llvm", "--cpu=x86-64"], d)
    q = run([TDSLC, ex, "--emit=llvm", "--cpu=x86-64"], d)
    check("--emit=llvm with --cpu is deterministic", p.returncode == 0 and p.stdout == q.stdout)
    p = run([TDSLC, os.path.join(EXAMPLES, "attention.tdsl"), "--emit=obj", "-o", "a.o", "--time"], d)
    err = p.stderr.decode()
    check("--time names the LLVM stages",
          p.returncode == 0 and all(f"tdslc: time {s}" in err for s in ("llvm-ir", "verify", "optimize", "emit")),
          err)
    return T.summary()


if __name__ == "__main__":
    sys.exit(main())
