#!/usr/bin/python3
"""tests/fuzz/smoke.py REPLAY: the fuzz smoke of `make test` (under a minute).

REPLAY is tests/fuzz/replay.c's binary: the fuzz target (fuzz_pipeline.c) run on files
without libFuzzer. It replays the seed corpus (seeds(): examples/, tests/golden/,
tests/errors/), the findings kept in tests/fuzz/regressions/, and MUTANTS mutations of
the seeds drawn with a fixed seed (byte flips, deletions, duplications, splices and
dictionary tokens, as libFuzzer mutates), in batches of one process each. A batch that
aborts, crashes or exits 4 fails the test and names the file (kept under the build's
fuzz-smoke/ folder to reproduce).
"""
import glob
import os
import random
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BATCH = 50
MUTANTS = 600 // int(os.environ.get("TDSL_TEST_SUBSET", "1"))  # the sanitizer pass runs a quarter


def seeds():
    pats = ["examples/*.tdsl", "tests/golden/*.tdsl", "tests/errors/*.tdsl", "tests/fuzz/regressions/*.tdsl"]
    return sorted(f for p in pats for f in glob.glob(os.path.join(ROOT, p)))


def tokens():
    out = []
    with open(os.path.join(HERE, "tdsl.dict"), encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line.startswith('"'):
                out.append(line[1:-1].encode().decode("unicode_escape").encode())
    return out


def mutate(rng, data, other, toks):
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        k = rng.randrange(6)
        i = rng.randrange(len(data) + 1)
        if k == 0 and data:
            data[min(i, len(data) - 1)] ^= 1 << rng.randrange(8)
        elif k == 1:
            del data[i:i + rng.randint(1, 16)]
        elif k == 2:
            j = rng.randrange(len(data) + 1)
            data[i:i] = data[j:j + rng.randint(1, 32)]
        elif k == 3:
            data[i:i] = rng.choice(toks)
        elif k == 4:
            j = rng.randrange(len(other) + 1)
            data[i:] = other[j:]
        else:
            data[i:i] = data[i:i + rng.randint(1, 8)] * rng.randint(2, 64)
    return bytes(data)


def run(replay, files):
    p = subprocess.run([replay] + files, capture_output=True, timeout=600)
    if p.returncode == 0:
        return True
    err = p.stderr.decode("utf-8", "replace")
    last = [l for l in err.splitlines() if l.startswith("replay: ")]
    print(f"FAIL exit {p.returncode} on {last[-1][8:] if last else '?'}\n{err[-3000:]}")
    return False


def main():
    replay = os.path.abspath(sys.argv[1])
    work = os.path.join(os.path.dirname(replay), "fuzz-smoke")
    os.makedirs(work, exist_ok=True)
    files = seeds()
    ok = all(run(replay, files[i:i + BATCH]) for i in range(0, len(files), BATCH))
    rng, toks = random.Random(16), tokens()
    texts = [open(f, "rb").read() for f in files]
    mutants = []
    for n in range(MUTANTS):
        path = os.path.join(work, f"mutant-{n}.tdsl")
        with open(path, "wb") as f:
            f.write(mutate(rng, rng.choice(texts), rng.choice(texts), toks))
        mutants.append(path)
    ok = all([run(replay, mutants[i:i + BATCH]) for i in range(0, len(mutants), BATCH)]) and ok
    print(f"{len(files)} seeds and {len(mutants)} mutants: {'ok' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
