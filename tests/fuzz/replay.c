// tests/fuzz/replay.c: runs the fuzz target (fuzz_pipeline.c) on the files named on the
// command line, one after the other in one process, without libFuzzer: how a compiler
// without -fsanitize=fuzzer (gcc, the test suite's builds) replays a corpus, the
// regressions and the smoke's mutations. A finding aborts (or exits 4, an internal
// error) on the file it names first on stderr.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
  LLVMFuzzerInitialize(&argc, &argv);
  for (int i = 1; i < argc; i++) {
    FILE *f = fopen(argv[i], "rb");
    if (!f) {
      fprintf(stderr, "replay: cannot open %s\n", argv[i]);
      return 2;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *data = malloc((size_t)(n > 0 ? n : 1));
    size_t got = fread(data, 1, (size_t)(n > 0 ? n : 0), f);
    fclose(f);
    fprintf(stderr, "replay: %s\n", argv[i]);
    LLVMFuzzerTestOneInput(data, got);
    free(data);
  }
  return 0;
}
