"""tests/install/check_readme.py CMAKE BUILD_DIR SOURCE_DIR: README.md's commands, verbatim.

Every fenced block that README.md marks with `<!-- tested: KIND … -->` on the line before
it is run as it stands, so the README and the tool cannot drift apart:
  build-tree  a sh block, run by bash -e in a temporary folder holding links to the build
              folder (as build/) and to examples/: the commands of a fresh clone after `make`;
  installed   a sh block, run after `cmake --install BUILD_DIR --prefix` a temporary prefix
              (then moved elsewhere, to check that the installed tree is relocatable), with
              PREFIX/bin on PATH and the installed tdslrt.pc on PKG_CONFIG_PATH;
  cmake       a CMakeLists.txt, configured with CMAKE_PREFIX_PATH=PREFIX, built and run.
The install itself is checked too: every file README.md lists, the soname, and the
installed tdslc's --print-include-dir and --print-lib-dir.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

MARK = re.compile(r"^<!-- tested: ([a-z-]+)")


def readme_blocks(path):
    """[(kind, text)] of the marked fenced blocks, in order."""
    lines = open(path, encoding="utf-8").read().split("\n")
    blocks = []
    for i, line in enumerate(lines):
        m = MARK.match(line)
        if not m:
            continue
        if i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
            sys.exit(f"README.md:{i + 1}: a 'tested' mark must be followed by a fenced block")
        end = lines.index("```", i + 2)
        blocks.append((m.group(1), "\n".join(lines[i + 2:end]) + "\n"))
    return blocks


class Checks:
    def __init__(self):
        self.failed = 0
        self.passed = 0

    def check(self, what, ok, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL {what}" + (f"\n{detail}" if detail else ""))

    def run(self, what, cmd, cwd, env=None, **kw):
        p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, **kw)
        out = p.stdout + p.stderr
        self.check(what, p.returncode == 0, f"exit {p.returncode}\n{out[-4000:]}")
        return p


def link_tree(folder, src, build=None):
    os.makedirs(folder)
    os.symlink(os.path.join(src, "examples"), os.path.join(folder, "examples"))
    if build:
        os.symlink(build, os.path.join(folder, "build"))


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    cmake, build, src = (os.path.abspath(a) for a in sys.argv[1:])
    blocks = readme_blocks(os.path.join(src, "README.md"))
    kinds = sorted({k for k, _ in blocks})
    c = Checks()
    c.check("README.md marks build-tree, installed and cmake blocks", kinds == ["build-tree", "cmake", "installed"],
            f"marked: {kinds}")
    env = dict(os.environ, PATH="/usr/bin:" + os.environ.get("PATH", ""))
    with tempfile.TemporaryDirectory(prefix="tdsl-readme-") as tmp:
        # The build tree: each block in a fresh folder.
        for n, (kind, text) in enumerate(blocks):
            if kind == "build-tree":
                d = os.path.join(tmp, f"tree{n}")
                link_tree(d, src, build)
                c.run(f"README build-tree block {n}:\n{text}", ["bash", "-e", "-c", text], d, env)

        # The install, into a prefix then moved: nothing may remember where it was put.
        stage, prefix = os.path.join(tmp, "stage"), os.path.join(tmp, "prefix")
        c.run("cmake --install", [cmake, "--install", build, "--prefix", stage], tmp, env)
        shutil.move(stage, prefix)
        tdslc = os.path.join(prefix, "bin", "tdslc")
        inc = subprocess.run([tdslc, "--print-include-dir"], capture_output=True, text=True).stdout.strip()
        lib = subprocess.run([tdslc, "--print-lib-dir"], capture_output=True, text=True).stdout.strip()
        c.check("installed --print-include-dir", inc == os.path.join(prefix, "include"), inc)
        c.check("installed --print-lib-dir is under the prefix", lib.startswith(prefix + "/"), lib)
        for f in [os.path.join(inc, "tdsl.h"), os.path.join(lib, "libtdslrt.a"), os.path.join(lib, "libtdslrt.so"),
                  os.path.join(lib, "libtdslrt.so.0"), os.path.join(lib, "pkgconfig", "tdslrt.pc"),
                  os.path.join(lib, "cmake", "tdsl", "tdslConfig.cmake"),
                  os.path.join(prefix, "share", "man", "man1", "tdslc.1")]:
            c.check(f"installed {os.path.relpath(f, prefix)}", os.path.isfile(f))
        dyn = subprocess.run(["readelf", "-d", os.path.join(lib, "libtdslrt.so")], capture_output=True, text=True)
        c.check("libtdslrt.so's soname is libtdslrt.so.0", "[libtdslrt.so.0]" in dyn.stdout, dyn.stdout[-2000:])

        ienv = dict(env, PATH=os.path.join(prefix, "bin") + ":" + env["PATH"],
                    PKG_CONFIG_PATH=os.path.join(lib, "pkgconfig"))
        for n, (kind, text) in enumerate(blocks):
            d = os.path.join(tmp, f"user{n}")
            if kind == "installed":
                link_tree(d, src)
                p = c.run(f"README installed block {n}:\n{text}", ["bash", "-e", "-c", text], d, ienv)
                c.check("the installed program's output", "layer_norm: out0 f32[32, 10, 512]" in p.stdout, p.stdout)
            elif kind == "cmake":
                link_tree(d, src)
                with open(os.path.join(d, "CMakeLists.txt"), "w", encoding="utf-8") as f:
                    f.write(text)
                b = os.path.join(d, "build")
                c.run("the README's CMake project: configure",
                      [cmake, "-S", d, "-B", b, "-DCMAKE_PREFIX_PATH=" + prefix], d, env)
                c.run("the README's CMake project: build", [cmake, "--build", b], d, env)
                p = c.run("the README's CMake project: run", [os.path.join(b, "layer_norm")], d, env)
                c.check("the CMake program's output", "layer_norm: out0 f32[32, 10, 512]" in p.stdout, p.stdout)
    print(f"{c.passed} checks passed, {c.failed} failed")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
