// driver/options.c: the command line (LANGUAGE.md §10) into Options, and --help.
// Each mode takes only its own options (--emit, -o, -O: compile; --in, --seed,
// --out-dir: run; --reps, --profile, --plot: bench; --arg: run and bench; --cpu, --dim,
// -ferror-limit: all); anything else is a usage error. Every value is checked here, before
// any stage uses it: --cpu and --gpu-arch against the names of codegen/target_names.c
// (`=help` lists them), a refused one named with the valid choices. After parsing,
// --target is settled ("cpu" or "cuda", implied by --emit=cuda|ptx and --backend
// cuda|ptx, conflicts reported) and run and bench have a backend.
#include "driver/driver.h"
#include "codegen/target_names.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *const emit_kind_names[EMIT_COUNT] = {"tokens", "ast", "ir", "kernels", "c", "header", "llvm",
                                                 "asm", "obj", "cuda", "ptx", "dot"};

// The usage lines of LANGUAGE.md §10, then one line per option and the exit statuses
// (docs/tdslc.1 says the same at length).
void options_print_help(void) {
  puts("usage: tdslc FILE.tdsl [--emit=KIND] [-o OUT] [-O0|-O1|-O2|-O3] [--fn NAME] [--target cpu|cuda]\n"
       "                       [--cpu=NAME] [--gpu-arch=sm_NN] [--json] [--full] [--time] [-ferror-limit=N]\n"
       "           KIND: tokens ast ir kernels c header llvm asm obj cuda ptx dot   (default: c)\n"
       "                       [--dim NAME=SIZE]...\n"
       "       tdslc run   FILE.tdsl [--fn NAME] [--in NAME=FILE.npy]... [--arg NAME=VALUE]... [--dim NAME=SIZE]...\n"
       "                             [--seed N] [--out-dir DIR] [--json] [--target cpu|cuda] [--backend c|llvm|cuda|ptx]\n"
       "                             [--cpu=NAME] [--gpu-arch=sm_NN]\n"
       "       tdslc bench FILE.tdsl [--fn NAME] [--backend ...] [--reps N] [--arg NAME=VALUE]... [--dim NAME=SIZE]...\n"
       "                             [--json] [--profile] [--plot FILE.svg] [--cpu=NAME] [--gpu-arch=sm_NN]\n"
       "       tdslc --print-include-dir | --print-lib-dir | --version | --help | --cpu=help | --gpu-arch=help\n"
       "\n"
       "options (a value may follow '=' or come as the next argument):\n"
       "  --emit=KIND           what to print: tokens ast ir kernels c header llvm asm obj cuda ptx dot\n"
       "  -o OUT                write to OUT instead of standard output, whole or not at all\n"
       "  -O0 -O1 -O2 -O3       the LLVM optimisation level of llvm, asm, obj and ptx (default -O2)\n"
       "  --fn NAME             the function (run, bench, ir, kernels, dot; code kinds: only this one)\n"
       "  --target cpu|cuda     the device (default cpu; --emit=cuda|ptx and --backend cuda|ptx imply cuda)\n"
       "  --cpu=NAME            the CPU of the schedules and of LLVM output: LLVM's name (default: host;\n"
       "                        --cpu=help lists them); run and bench tune for it, with the host's instructions\n"
       "  --gpu-arch=sm_NN      the GPU of --emit=ptx (default sm_80) and run --target cuda (default: its own);\n"
       "                        sm_30 to sm_121, --gpu-arch=help lists them\n"
       "  --json                --emit=ir, run and bench print one JSON object\n"
       "  --full                --emit=kernels prints every statement (default: unrolled runs folded)\n"
       "  --time                the time of each stage, on stderr (not bench)\n"
       "  -ferror-limit=N       stop after N errors in the program (default 20; 0: no limit)\n"
       "  --in NAME=FILE.npy    run: parameter NAME from a .npy file (others: the seeded generator)\n"
       "  --arg NAME=VALUE      run, bench: scalar parameter NAME (int, float or bool: 1e-5, 3, true)\n"
       "  --dim NAME=SIZE       the size of dim NAME of a generic function (f32[N, D]); run also binds\n"
       "                        dims from the --in files' shapes\n"
       "  --seed N              run: the seed of the generator (default 0)\n"
       "  --out-dir DIR         run: write out0.npy, ... and each generated input as in_NAME.npy\n"
       "  --backend B           run, bench: c or llvm (default) on cpu, ptx (default) or cuda on cuda\n"
       "  --reps N              bench: the timed calls (default 20)\n"
       "  --profile             bench: each kernel's time, share, GFLOP/s, GB/s and fraction of the roofline\n"
       "  --plot FILE.svg       bench: --profile, and the roofline chart with each kernel on it\n"
       "  --print-include-dir   the folder holding tdsl.h\n"
       "  --print-lib-dir       the folder holding libtdslrt\n"
       "  --version             tdslc's version\n"
       "  --help, -h            this text\n"
       "\n"
       "exit status: 0 success, 1 an error in the program, 2 a bad command line or input file,\n"
       "3 a run-time error in the data (or no GPU), 4 an internal compiler error");
}

// "--name=value" or "--name value": the value, advancing *i; NULL if this is not --name.
static const char *opt_value(int argc, char **argv, int *i, const char *name, bool *missing) {
  size_t n = strlen(name);
  const char *a = argv[*i];
  if (strncmp(a, name, n) != 0)
    return NULL;
  if (a[n] == '=')
    return a + n + 1;
  if (a[n] != 0)
    return NULL;
  if (*i + 1 >= argc) {
    *missing = true;
    return NULL;
  }
  return argv[++*i];
}

static bool parse_u64(const char *s, uint64_t *out) {
  if (!*s || *s == '-')
    return false;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end)
    return false;
  *out = v;
  return true;
}

// --cpu=NAME refused: why, the nearest known name, and every known name.
static int bad_cpu(const char *name) {
  const char *near = target_names_cpu_nearest(name);
  if (near)
    usage_error("--cpu=%s: %s (did you mean '%s'?)", name, target_names_cpu_why(name), near);
  else
    usage_error("--cpu=%s: %s", name, target_names_cpu_why(name));
  fprintf(stderr, "tdslc: note: --cpu takes one of:\n");
  target_names_print_cpus(stderr, "    ", 100);
  return EXIT_USAGE;
}

static int bad_gpu_arch(const char *arch) {
  usage_error("--gpu-arch=%s: not a GPU architecture tdslc compiles for", arch);
  fprintf(stderr, "tdslc: note: --gpu-arch takes one of these (sm_90 and newer also with 'a', sm_100 and newer "
                  "with 'f', as sm_90a):\n");
  target_names_print_gpus(stderr, "    ", 100);
  return EXIT_USAGE;
}

void options_print_cpus(FILE *out) {
  const char *arch = target_names_cpu_arch();
  if (arch)
    fprintf(out, "--cpu=NAME: host (the default) or one of LLVM 14's %s processors:\n", arch);
  else
    fprintf(out, "--cpu=NAME: host (the default) or one of the processors LLVM 14 knows for this host\n"
                 "(tdslc keeps a list for x86-64 only; llc-14 -mcpu=help lists this host's)\n");
  target_names_print_cpus(out, "  ", 100);
}

void options_print_gpus(FILE *out) {
  fprintf(out, "--gpu-arch=sm_NN: an NVIDIA architecture from sm_30 to sm_121 (sm_90 and newer also with an 'a'\n"
               "suffix, sm_100 and newer with 'f'). PTX for a GPU newer than sm_86 is sm_86 PTX (LLVM 14's\n"
               "newest), which the CUDA driver and ptxas compile for it; CUDA 13 compiles for sm_75 and newer.\n");
  target_names_print_gpus(out, "  ", 100);
}

int options_parse(int argc, char **argv, Options *o) {
  *o = (Options){.emit = EMIT_C, .opt = 2, .reps = 20, .target = NULL, .error_limit = DIAG_ERROR_LIMIT,
                 .inputs = calloc((size_t)argc, sizeof(Input)), .args = calloc((size_t)argc, sizeof(Arg))};
  TD_ASSERT(o->inputs && o->args);  // (each --in and --arg takes an argument of its own)
  int i = 1;
  if (argc > 1 && strcmp(argv[1], "run") == 0)
    o->mode = MODE_RUN, i = 2;
  else if (argc > 1 && strcmp(argv[1], "bench") == 0)
    o->mode = MODE_BENCH, i = 2;
  bool emit_given = false, cpu_given = false;
  for (; i < argc; i++) {
    const char *a = argv[i], *v;
    bool missing = false;
#define VALUE(name) ((v = opt_value(argc, argv, &i, name, &missing)) != NULL || missing)
    if (VALUE("--emit") && o->mode == MODE_COMPILE) {
      if (missing)
        return usage_error("missing value after '--emit'");
      int k = 0;
      while (k < EMIT_COUNT && strcmp(emit_kind_names[k], v) != 0)
        k++;
      if (k == EMIT_COUNT)
        return usage_error("unknown --emit kind '%s' (expected one of: tokens ast ir kernels c header llvm asm obj cuda ptx dot)", v);
      o->emit = (EmitKind)k;
      emit_given = true;
    } else if (VALUE("-o") && o->mode == MODE_COMPILE) {
      if (missing)
        return usage_error("missing file name after '-o'");
      o->out = v;
    } else if (VALUE("--fn")) {
      if (missing)
        return usage_error("missing function name after '--fn'");
      o->fn = v;
    } else if (VALUE("--target")) {
      if (missing || (strcmp(v, "cpu") != 0 && strcmp(v, "cuda") != 0))
        return usage_error("--target takes 'cpu' or 'cuda'");
      o->target = v;
    } else if (VALUE("--cpu")) {
      if (missing)
        return usage_error("missing CPU name after '--cpu' (tdslc --cpu=help lists them)");
      if (strcmp(v, "help") == 0)
        o->list_cpus = true;
      else if (!target_names_cpu_known(v))
        return bad_cpu(v);
      o->cpu = strcmp(v, "host") == 0 ? NULL : v;  // host: the default
      cpu_given = true;
    } else if (VALUE("--gpu-arch")) {
      if (missing)
        return usage_error("missing architecture after '--gpu-arch' (tdslc --gpu-arch=help lists them)");
      if (strcmp(v, "help") == 0)
        o->list_gpus = true;
      else if (!target_names_gpu_known(v))
        return bad_gpu_arch(v);
      o->gpu_arch = v;
    } else if (VALUE("-ferror-limit")) {
      uint64_t n;
      if (missing || !parse_u64(v, &n) || n > INT32_MAX)
        return usage_error("-ferror-limit takes a non-negative integer (0: no limit)");
      o->error_limit = (int)n;
    } else if (VALUE("--backend") && o->mode != MODE_COMPILE) {
      if (missing || (strcmp(v, "c") && strcmp(v, "llvm") && strcmp(v, "cuda") && strcmp(v, "ptx")))
        return usage_error("--backend takes c, llvm, cuda or ptx");
      o->backend = v;
    } else if (VALUE("--in") && o->mode == MODE_RUN) {
      const char *eq = missing ? NULL : strchr(v, '=');
      if (!eq || eq == v || !eq[1])
        return usage_error("--in takes NAME=FILE.npy");
      if (o->ninputs == OPT_MAX_INPUTS)
        return usage_error("too many --in options (at most %d)", OPT_MAX_INPUTS);
      for (int k = 0; k < o->ninputs; k++)
        if (strlen(o->inputs[k].name) == (size_t)(eq - v) && strncmp(o->inputs[k].name, v, (size_t)(eq - v)) == 0)
          return usage_error("--in %.*s is given twice", (int)(eq - v), v);
      o->inputs[o->ninputs++] = (Input){.name = strndup(v, (size_t)(eq - v)), .path = eq + 1};
    } else if (VALUE("--dim")) {
      const char *eq = missing ? NULL : strchr(v, '=');
      uint64_t size;
      if (!eq || eq == v || !parse_u64(eq + 1, &size) || size > (uint64_t)INT64_MAX)
        return usage_error("--dim takes NAME=SIZE, SIZE a non-negative integer (--dim N=128)");
      if (o->dims.n == TD_MAX_DIMVARS)
        return usage_error("too many --dim options");
      for (int k = 0; k < o->dims.n; k++)
        if (strlen(o->dims.names[k]) == (size_t)(eq - v) && strncmp(o->dims.names[k], v, (size_t)(eq - v)) == 0)
          return usage_error("--dim %.*s is given twice", (int)(eq - v), v);
      o->dims.names[o->dims.n] = strndup(v, (size_t)(eq - v));
      o->dims.values[o->dims.n++] = (int64_t)size;
    } else if (VALUE("--arg") && o->mode != MODE_COMPILE) {
      const char *eq = missing ? NULL : strchr(v, '=');
      if (!eq || eq == v || !eq[1])
        return usage_error("--arg takes NAME=VALUE (--arg eps=1e-5)");
      if (o->nargs == OPT_MAX_INPUTS)
        return usage_error("too many --arg options (at most %d)", OPT_MAX_INPUTS);
      for (int k = 0; k < o->nargs; k++)
        if (strlen(o->args[k].name) == (size_t)(eq - v) && strncmp(o->args[k].name, v, (size_t)(eq - v)) == 0)
          return usage_error("--arg %.*s is given twice", (int)(eq - v), v);
      o->args[o->nargs++] = (Arg){strndup(v, (size_t)(eq - v)), eq + 1};
    } else if (VALUE("--seed") && o->mode == MODE_RUN) {
      if (missing || !parse_u64(v, &o->seed))
        return usage_error("--seed takes a non-negative integer");
    } else if (VALUE("--out-dir") && o->mode == MODE_RUN) {
      if (missing || !*v)
        return usage_error("missing directory after '--out-dir'");
      o->out_dir = v;
    } else if (VALUE("--reps") && o->mode == MODE_BENCH) {
      uint64_t r;
      if (missing || !parse_u64(v, &r) || r == 0 || r > 1000000)
        return usage_error("--reps takes a positive integer");
      o->reps = (int)r;
    } else if (strcmp(a, "--profile") == 0 && o->mode == MODE_BENCH) {
      o->profile = true;
    } else if (VALUE("--plot") && o->mode == MODE_BENCH) {
      if (missing || !*v)
        return usage_error("missing file name after '--plot'");
      o->plot = v, o->profile = true;
    } else if (strcmp(a, "--json") == 0) {
      o->json = true;
    } else if (strcmp(a, "--full") == 0 && o->mode == MODE_COMPILE) {
      o->full = true;
    } else if (strcmp(a, "--time") == 0 && o->mode != MODE_BENCH) {
      o->time = true;
    } else if (o->mode == MODE_COMPILE && a[0] == '-' && a[1] == 'O' && a[2] >= '0' && a[2] <= '3' && !a[3]) {
      o->opt = a[2] - '0';
    } else if (a[0] == '-' && a[1]) {
      return usage_error("unknown option '%s' (see tdslc --help)", a);
    } else if (o->file) {
      return usage_error("more than one input file ('%s' and '%s')", o->file, a);
    } else {
      o->file = a;
    }
#undef VALUE
  }
  if (o->list_cpus || o->list_gpus)
    return 0;  // the lists are printed, nothing else is done
  if (!o->file)
    return usage_error("no input file (see tdslc --help)");
  if (o->json && o->mode == MODE_COMPILE && emit_given && o->emit != EMIT_IR)
    return usage_error("--json goes with --emit=ir, run or bench");
  if (o->full && o->emit != EMIT_KERNELS)
    return usage_error("--full goes with --emit=kernels");
  // --emit=cuda|ptx and --backend cuda|ptx imply --target cuda; a conflicting --target is an error.
  bool wants_cuda = (o->mode == MODE_COMPILE && (o->emit == EMIT_CUDA || o->emit == EMIT_PTX)) ||
                    (o->backend && (!strcmp(o->backend, "cuda") || !strcmp(o->backend, "ptx")));
  bool wants_cpu = o->backend && (!strcmp(o->backend, "c") || !strcmp(o->backend, "llvm"));
  if (wants_cuda && o->target && strcmp(o->target, "cuda") != 0)
    return usage_error("--target %s conflicts with %s", o->target,
                       o->backend ? "--backend cuda/ptx" : "--emit=cuda/ptx");
  if (wants_cpu && o->target && strcmp(o->target, "cpu") != 0)
    return usage_error("--target %s conflicts with --backend %s", o->target, o->backend);
  if (wants_cuda)
    o->target = "cuda";
  if (!o->target)
    o->target = "cpu";
#ifdef TDSLC_WITH_LLVM
  const char *cpu_backend = "llvm";
#else
  const char *cpu_backend = "c";
#endif
  // After the checks above, run and bench on the cpu target use c or llvm, on cuda ptx or cuda.
  if (!o->backend && o->mode != MODE_COMPILE)
    o->backend = strcmp(o->target, "cuda") == 0 ? "ptx" : cpu_backend;
  // A flag that cannot act on this target says so (its value was checked above).
  if (cpu_given && strcmp(o->target, "cuda") == 0)
    fprintf(stderr, "tdslc: warning: --cpu has no effect on --target cuda (the GPU's is --gpu-arch)\n");
  if (o->gpu_arch && strcmp(o->target, "cpu") == 0)
    fprintf(stderr, "tdslc: warning: --gpu-arch has no effect on --target cpu\n");
  // PTX comes from LLVM 14, which stops at sm_86 (codegen/ptx.c); the CUDA C backend
  // (NVRTC) compiles for the architecture as given, so only the PTX paths warn.
  bool ptx = (o->mode == MODE_COMPILE && o->emit == EMIT_PTX) || (o->backend && !strcmp(o->backend, "ptx"));
  long sm = o->gpu_arch ? strtol(o->gpu_arch + 3, NULL, 10) : 0;
  if (ptx && sm > PTX_NEWEST_SM)
    fprintf(stderr, "tdslc: warning: --gpu-arch=%s is newer than LLVM 14's PTX target (sm_%d): emitting "
            "'.target sm_%d' PTX, which the CUDA driver and ptxas compile for %s\n", o->gpu_arch, PTX_NEWEST_SM,
            PTX_NEWEST_SM, o->gpu_arch);
  return 0;
}

void options_free(Options *o) {
  for (int i = 0; i < o->ninputs; i++)
    free((char *)o->inputs[i].name);
  for (int i = 0; i < o->dims.n; i++)
    free((char *)o->dims.names[i]);
  for (int i = 0; i < o->nargs; i++)
    free((char *)o->args[i].name);
  free(o->inputs);
  free(o->args);
}
