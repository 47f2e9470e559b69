// tests/shim/runner.cc: runs the host entries of --emit=cuda files under the CUDA shim,
// many functions in one process: `runner MANIFEST`, one line per call,
//   FN<TAB>OUTDIR[<TAB>INPUT.npy]...
// the inputs in parameter order (each loaded as its parameter's dtype, bf16 as its
// bits; a scalar parameter from a 0-d file). Each call prints `== FN` first, then the
// shim's reports, then `ok FN` with OUTDIR/outK.npy written, or
// `FAIL FN: exit K: message` (K as `tdslc run` would exit: 2 a bad argument, 3 a data
// error, 4 anything else); last `stats: ...`, the launches, blocks and threads run. Linked with the compiled files (shimcc.py), libtdsl_shim and
// libtdslrt.
#include "tdsl_shim_entry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" void tdsl_shim_set_report(FILE *f);
extern "C" long tdsl_shim_reports(void);
extern "C" int tdsl_shim_dev_live(void);
extern "C" void tdsl_shim_stats(long *launches, long *blocks, long *threads);

struct Program {
  const char *name;
  const tdsl_entry_info *info;
  tdsl_shim_entry_fn call;
};
static Program programs[8192];
static int nprograms;

extern "C" void tdsl_shim_register_program(const char *name, const tdsl_entry_info *info, tdsl_shim_entry_fn call) {
  if (nprograms < (int)(sizeof programs / sizeof *programs))
    programs[nprograms++] = Program{name, info, call};
}

static const Program *find(const char *name) {
  for (int i = 0; i < nprograms; i++)
    if (strcmp(programs[i].name, name) == 0)
      return &programs[i];
  return NULL;
}

static int exit_of(int rc) { return rc == TDSL_ERR_ARG ? 2 : rc == TDSL_ERR_DATA ? 3 : 4; }

// One call: false when the line is malformed.
static bool call(char *line) {
  char *fields[1 + 2 + 4096];
  int nf = 0;
  for (char *s = strtok(line, "\t\n"); s && nf < (int)(sizeof fields / sizeof *fields); s = strtok(NULL, "\t\n"))
    fields[nf++] = s;
  if (nf < 2)
    return nf == 0;
  const char *fn = fields[0], *dir = fields[1];
  printf("== %s\n", fn);
  fflush(stdout);
  const Program *p = find(fn);
  if (!p) {
    printf("FAIL %s: exit 4: no entry of that name in the compiled files\n", fn);
    return true;
  }
  const tdsl_entry_info *fi = p->info;
  if (nf - 2 != fi->nparams) {
    printf("FAIL %s: exit 2: %d inputs for %d parameters\n", fn, nf - 2, fi->nparams);
    return true;
  }
  tdsl_tensor *ins = (tdsl_tensor *)calloc((size_t)fi->nparams + 1, sizeof *ins);
  const tdsl_tensor **args = (const tdsl_tensor **)calloc((size_t)fi->nparams + 1, sizeof *args);
  tdsl_tensor *outs = (tdsl_tensor *)calloc((size_t)fi->noutputs + 1, sizeof *outs);
  int loaded = 0, rc = 0;
  for (; loaded < fi->nparams; loaded++) {
    if (tdsl_load_npy_as(fields[2 + loaded], fi->params[loaded].dtype, &ins[loaded]) != 0) {
      printf("FAIL %s: exit 2: %s: %s\n", fn, fields[2 + loaded], tdsl_last_error());
      rc = -1;
      break;
    }
    args[loaded] = &ins[loaded];
  }
  if (rc == 0) {
    long before = tdsl_shim_reports();
    rc = p->call(args, outs);
    if (rc != 0) {
      printf("FAIL %s: exit %d: %s\n", fn, exit_of(rc), tdsl_last_error());
    } else if (tdsl_shim_reports() != before) {
      printf("FAIL %s: exit 4: the shim reported the kernels (above)\n", fn);
    } else {
      bool ok = true;
      for (int k = 0; k < fi->noutputs && ok; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/out%d.npy", dir, k);
        if (tdsl_save_npy(path, &outs[k]) != 0) {
          printf("FAIL %s: exit 2: cannot write %s: %s\n", fn, path, tdsl_last_error());
          ok = false;
        }
      }
      if (ok)
        printf("ok %s\n", fn);
    }
    for (int k = 0; k < fi->noutputs; k++)
      if (outs[k].storage)
        tdsl_tensor_release(&outs[k]);
  }
  for (int i = 0; i < loaded; i++)
    tdsl_tensor_release(&ins[i]);
  free(ins);
  free(args);
  free(outs);
  fflush(stdout);
  return true;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MANIFEST\n", argv[0]);
    return 2;
  }
  FILE *f = fopen(argv[1], "r");
  if (!f) {
    fprintf(stderr, "%s: cannot open %s\n", argv[0], argv[1]);
    return 2;
  }
  tdsl_shim_set_report(stdout);
  static char line[1 << 20];
  int bad = 0;
  while (fgets(line, sizeof line, f))
    if (!call(line))
      bad++;
  fclose(f);
  long launches, blocks, threads;
  tdsl_shim_stats(&launches, &blocks, &threads);
  printf("stats: %ld launches, %ld blocks, %ld threads\n", launches, blocks, threads);
  int live = tdsl_shim_dev_live();
  if (live)
    printf("FAIL (runner): %d device allocations never freed\n", live);
  return bad || live ? 1 : 0;
}
