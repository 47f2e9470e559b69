// driver/tdslc.c: the command line (LANGUAGE.md §10). A flat list of stages —
// read, parse, sema, lower, fuse, kernels — then either an --emit dump or `run`,
// which compiles the function in-process with LLVM's ORC JIT (--backend llvm, the
// default when built with LLVM), or prints it as C, builds it with the system cc
// into a shared object in a private temp folder and loads it (--backend c), and
// calls its entry on .npy or seeded inputs. Either way the code calls this
// process's runtime (the JIT is given the tdsl_* addresses; the shared object
// leaves tdsl_* undefined and tdslc exports them), so errors and storages are shared.
// On --target cuda, run makes the function's image (PTX through LLVM's NVPTX target,
// --backend ptx, the default; or CUDA C for NVRTC, --backend cuda) and hands it with
// the entry tables to the runtime's tdsl_gpu_run, which loads libcuda.so.1 itself.
// Exit status: 0 ok, 1 an error in the program, 2 a bad command line or input
// file, 3 a run-time data error, or no usable GPU (no driver, no device, a failed
// CUDA or NVRTC call: TDSL_ERR_GPU), 4 an internal error (td_internal_error).
#include "codegen/codegen.h"
#include "frontend/frontend.h"
#include "tdsl.h"
#ifdef TDSLC_WITH_LLVM
#include "codegen/llvm.h"
#endif

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

_Static_assert((int)TDSL_F64 == (int)DT_F64 && (int)TDSL_BF16 == (int)DT_BF16 && (int)TDSL_DTYPE_COUNT == (int)DT_COUNT,
               "runtime and compiler dtypes share one order");

#define TDSLC_VERSION "0.1.0"

enum { EXIT_PROGRAM = 1, EXIT_USAGE = 2, EXIT_DATA = 3, EXIT_INTERNAL = 4 };

typedef enum { EMIT_TOKENS, EMIT_AST, EMIT_IR, EMIT_KERNELS, EMIT_C, EMIT_HEADER, EMIT_LLVM, EMIT_ASM,
               EMIT_OBJ, EMIT_CUDA, EMIT_PTX, EMIT_DOT, EMIT_COUNT } EmitKind;
static const char *const emit_names[EMIT_COUNT] = {"tokens", "ast", "ir", "kernels", "c", "header", "llvm",
                                                   "asm", "obj", "cuda", "ptx", "dot"};

typedef enum { MODE_COMPILE, MODE_RUN, MODE_BENCH } Mode;

typedef struct Input {
  const char *name, *path;
} Input;

typedef struct Options {
  Mode mode;
  const char *file, *out, *fn, *target, *backend, *cpu, *gpu_arch, *out_dir;
  EmitKind emit;
  int opt;
  bool json, time;
  uint64_t seed;
  int reps;
  Input inputs[64];
  int ninputs;
} Options;

// "tdslc: KIND: message" on stderr; returns status.
static int vreport(int status, const char *kind, const char *fmt, va_list ap) {
  fprintf(stderr, "tdslc: %s: ", kind);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  return status;
}

TD_PRINTF(1, 2) static int usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = vreport(EXIT_USAGE, "error", fmt, ap);
  va_end(ap);
  return rc;
}

static void print_help(void) {
  puts("usage: tdslc FILE.tdsl [--emit=KIND] [-o OUT] [-O0|-O1|-O2|-O3] [--fn NAME] [--target cpu|cuda]\n"
       "                       [--cpu=NAME] [--gpu-arch=sm_NN] [--json] [--time]\n"
       "           KIND: tokens ast ir kernels c header llvm asm obj cuda ptx dot   (default: c)\n"
       "       tdslc run   FILE.tdsl [--fn NAME] [--in NAME=FILE.npy]... [--seed N] [--out-dir DIR] [--json]\n"
       "                             [--target cpu|cuda] [--backend c|llvm|cuda|ptx]\n"
       "       tdslc bench FILE.tdsl [--fn NAME] [--backend ...] [--reps N] [--json]\n"
       "       tdslc --print-include-dir | --print-lib-dir | --version | --help");
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

static int parse_args(int argc, char **argv, Options *o) {
  *o = (Options){.emit = EMIT_C, .opt = 2, .reps = 20, .target = NULL};
  int i = 1;
  if (argc > 1 && strcmp(argv[1], "run") == 0)
    o->mode = MODE_RUN, i = 2;
  else if (argc > 1 && strcmp(argv[1], "bench") == 0)
    o->mode = MODE_BENCH, i = 2;
  bool emit_given = false;
  for (; i < argc; i++) {
    const char *a = argv[i], *v;
    bool missing = false;
#define VALUE(name) ((v = opt_value(argc, argv, &i, name, &missing)) != NULL || missing)
    if (VALUE("--emit") && o->mode == MODE_COMPILE) {
      if (missing)
        return usage_error("missing value after '--emit'");
      int k = 0;
      while (k < EMIT_COUNT && strcmp(emit_names[k], v) != 0)
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
    } else if (VALUE("--cpu") && o->mode == MODE_COMPILE) {
      if (missing)
        return usage_error("missing CPU name after '--cpu'");
      o->cpu = v;
    } else if (VALUE("--gpu-arch")) {
      if (missing || strncmp(v, "sm_", 3) != 0)
        return usage_error("--gpu-arch takes sm_NN (for example sm_80)");
      o->gpu_arch = v;
    } else if (VALUE("--backend") && o->mode != MODE_COMPILE) {
      if (missing || (strcmp(v, "c") && strcmp(v, "llvm") && strcmp(v, "cuda") && strcmp(v, "ptx")))
        return usage_error("--backend takes c, llvm, cuda or ptx");
      o->backend = v;
    } else if (VALUE("--in") && o->mode == MODE_RUN) {
      const char *eq = missing ? NULL : strchr(v, '=');
      if (!eq || eq == v || !eq[1])
        return usage_error("--in takes NAME=FILE.npy");
      if (o->ninputs == 64)
        return usage_error("too many --in options");
      for (int k = 0; k < o->ninputs; k++)
        if (strlen(o->inputs[k].name) == (size_t)(eq - v) && strncmp(o->inputs[k].name, v, (size_t)(eq - v)) == 0)
          return usage_error("--in %.*s is given twice", (int)(eq - v), v);
      o->inputs[o->ninputs++] = (Input){strndup(v, (size_t)(eq - v)), eq + 1};
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
    } else if (strcmp(a, "--json") == 0) {
      o->json = true;
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
  if (!o->file)
    return usage_error("no input file (see tdslc --help)");
  if (o->json && o->mode == MODE_COMPILE && emit_given && o->emit != EMIT_IR)
    return usage_error("--json goes with --emit=ir, run or bench");
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
  return 0;
}

// ---- timing (--time) ----
static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

typedef struct Timer {
  bool on;
  double t;
} Timer;

static void lap(Timer *tm, const char *stage) {
  double t = now_ms();
  if (tm->on)
    fprintf(stderr, "tdslc: time %-8s %8.3f ms\n", stage, t - tm->t);
  tm->t = t;
}

#ifdef TDSLC_WITH_LLVM
static void llvm_lap(void *tm, const char *stage) { lap(tm, stage); }
#endif

// ---- choosing the function ----
static void list_fns(const Program *p, FILE *out) {
  for (int i = 0; i < p->fns.len; i++)
    fprintf(out, "%s%s", i ? ", " : "", p->fns.data[i]->name);
}

// The function the per-function kinds and run act on; NULL (after a message) if none.
static const Ast *pick_fn(const Program *p, const Options *o) {
  if (o->fn) {
    const Ast *fn = sema_find_fn(p, o->fn);
    if (!fn) {
      fprintf(stderr, "tdslc: error: no function '%s' in %s (it has: ", o->fn, o->file);
      list_fns(p, stderr);
      fputs(")\n", stderr);
    }
    return fn;
  }
  if (p->fns.len == 1)
    return p->fns.data[0];
  if (p->fns.len == 0)
    fprintf(stderr, "tdslc: error: %s defines no function\n", o->file);
  else {
    fprintf(stderr, "tdslc: error: %s defines several functions; choose one with --fn (", o->file);
    list_fns(p, stderr);
    fputs(")\n", stderr);
  }
  return NULL;
}

// ---- output files: written whole or not at all ----
typedef struct OutFile {
  FILE *fp;
  char *tmp;
  const char *path;
} OutFile;

static bool out_open(OutFile *of, const char *path) {
  if (path && strcmp(path, "-") == 0)
    path = NULL;  // `-o -`: standard output, as most compilers take it
  *of = (OutFile){.fp = stdout, .path = path};
  if (!path)
    return true;
  size_t n = strlen(path) + 32;
  of->tmp = malloc(n);
  snprintf(of->tmp, n, "%s.tmp%ld", path, (long)getpid());
  of->fp = fopen(of->tmp, "wb");
  if (!of->fp) {
    fprintf(stderr, "tdslc: error: cannot write '%s': %s\n", path, strerror(errno));
    free(of->tmp);
    return false;
  }
  return true;
}

static bool out_close(OutFile *of, bool keep) {
  if (!of->path) {
    fflush(stdout);
    return true;
  }
  bool ok = fclose(of->fp) == 0 && keep;
  if (ok && rename(of->tmp, of->path) != 0) {
    fprintf(stderr, "tdslc: error: cannot write '%s': %s\n", of->path, strerror(errno));
    ok = false;
  }
  if (!ok)
    remove(of->tmp);
  free(of->tmp);
  return ok;
}

// ---- run: inputs, execution of a view-only graph, outputs ----
static void shape_text(char *buf, size_t n, int ndim, const int64_t *shape) {
  size_t k = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < ndim && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%" PRId64, i ? ", " : "", shape[i]);
  if (k < n)
    snprintf(buf + k, n - k, "]");
}

static int load_input(const LParam *param, const char *path, tdsl_tensor *t) {
  const char *name = param->name;
  if (tdsl_load_npy_as(path, (tdsl_dtype)param->dtype, t) != 0) {
    fprintf(stderr, "tdslc: error: --in %s=%s: %s\n", name, path, tdsl_last_error());
    return EXIT_USAGE;
  }
  bool same = t->ndim == param->ndim;
  for (int i = 0; same && i < param->ndim; i++)
    same = t->shape[i] == param->shape[i];
  if (!same) {
    char a[256], b[256];
    shape_text(a, sizeof a, param->ndim, param->shape);
    shape_text(b, sizeof b, t->ndim, t->shape);
    fprintf(stderr, "tdslc: error: --in %s=%s: parameter '%s' is %s%s but the file holds %s%s\n", name, path, name,
            dtype_name(param->dtype), a, tdsl_dtype_name(t->dtype), b);
    tdsl_tensor_release(t);
    return EXIT_USAGE;
  }
  return 0;
}

// mkdir -p: the folder and any missing parents.
static int make_dir(const char *dir) {
  char *path = strdup(dir);
  int rc = 0;
  for (char *s = path + 1; !rc; s++) {
    bool end = *s == 0;
    if (*s != '/' && !end)
      continue;
    *s = 0;
    if (mkdir(path, 0777) != 0 && errno != EEXIST) {
      fprintf(stderr, "tdslc: error: cannot create '%s': %s\n", path, strerror(errno));
      rc = EXIT_USAGE;
    }
    if (end)
      break;
    *s = '/';
  }
  free(path);
  return rc;
}

static int save_npy(const char *dir, const char *name, const tdsl_tensor *t) {
  size_t n = strlen(dir) + strlen(name) + 8;
  char *path = malloc(n);
  snprintf(path, n, "%s/%s.npy", dir, name);
  int rc = tdsl_save_npy(path, t);
  if (rc != 0)
    fprintf(stderr, "tdslc: error: cannot write '%s': %s\n", path, tdsl_last_error());
  free(path);
  return rc ? EXIT_USAGE : 0;
}

static void print_ints_json(FILE *out, const int64_t *xs, int n) {
  fputc('[', out);
  for (int i = 0; i < n; i++)
    fprintf(out, "%s%" PRId64, i ? ", " : "", xs[i]);
  fputc(']', out);
}

// storage: the parameter whose storage t shares, or NULL for a new one.
static void print_output(FILE *out, const Options *o, int idx, const char *storage, const tdsl_tensor *t) {
  if (o->json) {
    fprintf(out, "%s\n  {\"index\": %d, \"dtype\": \"%s\", \"shape\": ", idx ? "," : "", idx, tdsl_dtype_name(t->dtype));
    print_ints_json(out, t->shape, t->ndim);
    fputs(", \"strides\": ", out);
    print_ints_json(out, t->strides, t->ndim);
    fprintf(out, ", \"offset\": %" PRId64 ", \"contiguous\": %s, \"storage\": ", t->offset,
            tdsl_tensor_is_contiguous(t) ? "true" : "false");
    if (storage)
      fprintf(out, "\"input:%s\"", storage);
    else
      fputs("\"new\"", out);
    fputs(", \"data\": ", out);
    tdsl_write_json_data(out, t);
    fputc('}', out);
    return;
  }
  fprintf(out, "out%d = ", idx);
  tdsl_print(out, t);
  char sh[256], st[256];
  shape_text(sh, sizeof sh, t->ndim, t->shape);
  shape_text(st, sizeof st, t->ndim, t->strides);
  fprintf(out, "  shape %s  strides %s  offset %" PRId64 "  %s  storage %s%s\n", sh, st, t->offset,
          tdsl_tensor_is_contiguous(t) ? "contiguous" : "non-contiguous", storage ? "input:" : "new",
          storage ? storage : "");
}

// ---- run: the function as C, built by cc into a shared object, or through LLVM's JIT ----
typedef int (*RunFn)(const tdsl_tensor *const *args, tdsl_tensor *outs);

typedef struct Build {
  char dir[4096];  // the private temp folder, "" once removed
  void *so;
  RunFn fn;
} Build;

static char *join(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  snprintf(p, n, "%s/%s", dir, name);
  return p;
}

static void remove_build_dir(Build *b) {
  if (!b->dir[0])
    return;
  static const char *const files[] = {"fn.c", "fn.so", "cc.log"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    char *p = join(b->dir, files[i]);
    unlink(p);
    free(p);
  }
  rmdir(b->dir);
  b->dir[0] = 0;
}

TD_PRINTF(1, 2) static int internal_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = vreport(EXIT_INTERNAL, "internal error", fmt, ap);
  va_end(ap);
  return rc;
}

// Copies what cc printed to stderr.
static void show_log(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0)
    fwrite(buf, 1, n, stderr);
  fclose(f);
}

// Writes p as C plus a packed caller (tdsl_g_run: arguments and results as arrays),
// builds it with cc and loads it. The folder is removed before returning, whatever
// happens; the loaded object stays open (libgomp's threads must outlive it).
static int build_and_load(Ctx *cx, LProgram *p, Build *b, Timer *tm) {
  const char *tmp = getenv("TMPDIR");
  snprintf(b->dir, sizeof b->dir, "%s/tdslc-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(b->dir)) {
    b->dir[0] = 0;
    return internal_error("cannot create a temp folder: %s", strerror(errno));
  }
  char *src = join(b->dir, "fn.c"), *so = join(b->dir, "fn.so"), *log = join(b->dir, "cc.log");
  int rc = 0;
  FILE *f = fopen(src, "wb");
  if (!f) {
    rc = internal_error("cannot write '%s': %s", src, strerror(errno));
    goto out;
  }
  target_c.emit(cx, &p, 1, f);
  fprintf(f, "\nint tdsl_g_run(const tdsl_tensor *const *args, tdsl_tensor *outs) {\n  return %s(", p->name);
  int n = 0;
  for (int i = 0; i < p->params.len; i++, n++)
    fprintf(f, "%s%sargs[%d]", n ? ", " : "", p->params.data[i].mut ? "(tdsl_tensor *)" : "", i);
  for (int k = 0; k < p->outputs.len; k++, n++)
    fprintf(f, "%s&outs[%d]", n ? ", " : "", k);
  fputs(");\n}\n", f);
  if (fclose(f) != 0) {
    rc = internal_error("cannot write '%s': %s", src, strerror(errno));
    goto out;
  }
  lap(tm, "emit");

  // cc -std=c11 -O2 -march=native -fvect-cost-model=dynamic -fno-math-errno -fopenmp
  // -shared -fPIC ...: the host's vector units, as the LLVM backend uses them, and loops
  // vectorized even when they need a remainder (-O2's own model leaves an exp
  // polynomial's loop scalar). -fno-math-errno: nothing reads errno, and a libm call that
  // may set it (sqrtf of a negative) is neither vectorized nor hoisted out of a loop.
  // ISO C mode keeps -ffp-contract=off: no fused multiply-add unless the loop IR says
  // so. Not -O3: gcc 12's -O3 -march=native miscompiles an if-converted column sum here
  // (test_backends_agree.py, seed 100079). -Bsymbolic: the entry's own calls never bind
  // to a symbol of tdslc that happens to share the function's name.
  char *argv[] = {"cc", "-std=c11", "-O2", "-march=native", "-fvect-cost-model=dynamic", "-fno-math-errno",
                  "-fopenmp", "-shared", "-fPIC", "-Wl,-Bsymbolic",
                  "-I" TDSL_INCLUDE_DIR, "-o", so, src, "-lm", NULL};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid;
  int err = posix_spawnp(&pid, "cc", &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (err != 0) {
    rc = internal_error("cannot run the C compiler 'cc': %s", strerror(err));
    goto out;
  }
  int status;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      rc = internal_error("waiting for cc: %s", strerror(errno));
      goto out;
    }
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
      rc = internal_error("cannot run the C compiler 'cc' (exit status 127):");
    else
      rc = internal_error("the C compiler failed on the generated code:");
    show_log(log);
    goto out;
  }
  lap(tm, "cc");
  // libgomp reads its environment when it is loaded. By default an idle thread spins
  // ~3 ms before it sleeps, which costs whole time slices on a busy machine (the MLP
  // took 30 ms instead of 0.1 ms under load); sleeping at once (OMP_WAIT_POLICY=passive)
  // makes every parallel loop wait for a wake-up, slow in a VM (attention 1.7 ms instead
  // of 0.6). Unless the user chose: spin 20000 rounds (~0.2 ms, libgomp's estimate is
  // 100000 a ms), so the loops of one call find the threads awake, then sleep.
  if (!getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT"))
    setenv("GOMP_SPINCOUNT", "20000", 1);
  b->so = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  if (!b->so) {
    rc = internal_error("cannot load the compiled function: %s", dlerror());
    goto out;
  }
  *(void **)&b->fn = dlsym(b->so, "tdsl_g_run");
  if (!b->fn)
    rc = internal_error("the compiled object has no entry: %s", dlerror());
out:
  remove_build_dir(b);
  free(src);
  free(so);
  free(log);
  return rc;
}

static int call_and_report(const Options *o, const LProgram *p, const tdsl_tensor *ins, RunFn fn,
                           const tdsl_gpu_program *gpu, Timer *tm);
static int run_llvm(const Options *o, Ctx *cx, LProgram *p, const tdsl_tensor *ins, Timer *tm);
static int run_gpu(const Options *o, Ctx *cx, LProgram *p, const tdsl_tensor *ins, Timer *tm);

static int run_program(const Options *o, Ctx *cx, LProgram *p, Timer *tm) {
  bool gpu = strcmp(o->target, "cuda") == 0;
  if (gpu && !tdsl_gpu_available()) {
    fprintf(stderr, "tdslc: error: --target cuda: %s\n", tdsl_last_error());
    return EXIT_DATA;
  }
  for (int i = 0; i < o->ninputs; i++) {
    bool found = false;
    for (int j = 0; j < p->params.len; j++)
      found |= strcmp(p->params.data[j].name, o->inputs[i].name) == 0;
    if (!found)
      return usage_error("--in %s: '%s' has no parameter '%s'", o->inputs[i].name, p->name, o->inputs[i].name);
  }
  int rc = 0;
  if (o->out_dir && (rc = make_dir(o->out_dir)))
    return rc;
  int np = p->params.len;
  tdsl_tensor *ins = calloc((size_t)(np ? np : 1), sizeof *ins);
  uint64_t state = o->seed;
  for (int j = 0; j < np && !rc; j++) {
    const LParam *q = &p->params.data[j];
    const char *path = NULL;
    for (int i = 0; i < o->ninputs; i++)
      if (strcmp(o->inputs[i].name, q->name) == 0)
        path = o->inputs[i].path;
    if (path) {
      rc = load_input(q, path, &ins[j]);
      continue;
    }
    if (tdsl_tensor_empty(&ins[j], (tdsl_dtype)q->dtype, q->ndim, q->shape) != 0) {
      fprintf(stderr, "tdslc: error: parameter '%s': %s\n", q->name, tdsl_last_error());
      rc = EXIT_USAGE;
      break;
    }
    tdsl_fill_random(&ins[j], &state);
    if (o->out_dir) {
      char name[256];
      snprintf(name, sizeof name, "in_%s", q->name);
      rc = save_npy(o->out_dir, name, &ins[j]);
    }
  }
  if (!rc && gpu) {
    rc = run_gpu(o, cx, p, ins, tm);
  } else if (!rc && strcmp(o->backend, "llvm") == 0) {
    rc = run_llvm(o, cx, p, ins, tm);
  } else if (!rc) {
    Build b = {0};
    rc = build_and_load(cx, p, &b, tm);
    if (!rc)
      rc = call_and_report(o, p, ins, b.fn, NULL, tm);
  }
  for (int j = 0; j < np; j++)
    tdsl_tensor_release(&ins[j]);
  free(ins);
  return rc;
}

// ---- run: calling the compiled entry, printing and saving its outputs ----
// One path for every backend: fn is the packed caller of the function's entry, or,
// when gpu is given, tdsl_gpu_run runs that program.
// One call of the compiled function: outputs into outs (the caller releases them).
static int call_once(const LProgram *p, const tdsl_tensor **args, tdsl_tensor *outs, RunFn fn,
                     const tdsl_gpu_program *gpu) {
  if (!gpu)
    return fn(args, outs);
  int no = p->outputs.len;
  tdsl_tensor **outp = calloc((size_t)(no ? no : 1), sizeof *outp);
  for (int k = 0; k < no; k++)
    outp[k] = &outs[k];
  int erc = tdsl_gpu_run(gpu, args, outp);
  free(outp);
  return erc;
}

// ---- bench: time repeated calls of the compiled function ----
static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

// Bytes every call must move: each parameter read once, each result written once.
static int64_t program_bytes(const LProgram *p) {
  int64_t bytes = 0;
  for (int i = 0; i < p->bufs.len; i++) {
    const LBuf *b = &p->bufs.data[i];
    if (b->kind != LB_TEMP)
      bytes += b->numel * dtype_size(b->dtype);
  }
  return bytes;
}

// Warm-up calls, then o->reps timed calls, each allocating (and here releasing) its
// outputs as a PyTorch call does; prints median/min/max and the rates they imply.
static int bench_calls(const Options *o, const LProgram *p, const tdsl_tensor **args, RunFn fn,
                       const tdsl_gpu_program *gpu) {
  int no = p->outputs.len, warm = o->reps < 10 ? 1 : o->reps / 10;
  double *ms = calloc((size_t)o->reps, sizeof *ms);
  tdsl_tensor *outs = calloc((size_t)(no ? no : 1), sizeof *outs);
  int erc = 0;
  for (int r = -warm; r < o->reps && !erc; r++) {
    double t0 = now_ms();
    erc = call_once(p, args, outs, fn, gpu);
    for (int k = 0; k < no; k++)
      tdsl_tensor_release(&outs[k]);
    if (r >= 0)
      ms[r] = now_ms() - t0;
  }
  free(outs);
  if (erc) {
    free(ms);
    fprintf(stderr, "%s\n", tdsl_last_error());
    return erc == TDSL_ERR_DATA || erc == TDSL_ERR_GPU ? EXIT_DATA : EXIT_INTERNAL;
  }
  qsort(ms, (size_t)o->reps, sizeof *ms, cmp_double);
  double med = o->reps % 2 ? ms[o->reps / 2] : (ms[o->reps / 2 - 1] + ms[o->reps / 2]) / 2;
  int64_t bytes = program_bytes(p);
  double gbps = med > 0 ? (double)bytes / (med * 1e6) : 0, gflops = med > 0 ? (double)p->flops / (med * 1e6) : 0;
  if (o->json)
    printf("{\"median_ms\": %.6g, \"min_ms\": %.6g, \"max_ms\": %.6g, \"bytes\": %" PRId64 ", \"flops\": %" PRId64
           ", \"gbps\": %.6g, \"gflops\": %.6g}\n", med, ms[0], ms[o->reps - 1], bytes, p->flops, gbps, gflops);
  else
    printf("%s: %d calls, median %.4f ms (min %.4f, max %.4f); %" PRId64 " bytes, %" PRId64
           " flops: %.2f GB/s, %.2f GFLOP/s\n", p->name, o->reps, med, ms[0], ms[o->reps - 1], bytes, p->flops, gbps,
           gflops);
  free(ms);
  return 0;
}

static int call_and_report(const Options *o, const LProgram *p, const tdsl_tensor *ins, RunFn fn,
                           const tdsl_gpu_program *gpu, Timer *tm) {
  int rc = 0, np = p->params.len, no = p->outputs.len;
  if (o->mode == MODE_BENCH) {
    const tdsl_tensor **args = calloc((size_t)(np ? np : 1), sizeof *args);
    for (int j = 0; j < np; j++)
      args[j] = &ins[j];
    rc = bench_calls(o, p, args, fn, gpu);
    free(args);
    return rc;
  }
  tdsl_tensor *outs = calloc((size_t)(no ? no : 1), sizeof *outs);
  {
    const tdsl_tensor **args = calloc((size_t)(np ? np : 1), sizeof *args);
    for (int j = 0; j < np; j++)
      args[j] = &ins[j];
    tdsl_clear_error();
    int erc = call_once(p, args, outs, fn, gpu);
    free(args);
    lap(tm, "run");
    if (erc == TDSL_ERR_DATA) {
      fprintf(stderr, "%s\n", tdsl_last_error());
      rc = EXIT_DATA;
    } else if (erc == TDSL_ERR_GPU) {
      fprintf(stderr, "tdslc: error: --target cuda: %s\n", tdsl_last_error());
      rc = EXIT_DATA;
    } else if (erc != 0) {
      rc = internal_error("%s returned %d: %s", p->name, erc, tdsl_last_error());
    }
  }
  if (!rc) {
    if (o->json)
      fprintf(stdout, "{\"function\": \"%s\", \"outputs\": [", p->name);
    for (int k = 0; k < no; k++) {
      const char *storage = NULL;
      for (int j = 0; j < np && !storage; j++)
        if (outs[k].storage && outs[k].storage == ins[j].storage)
          storage = p->params.data[j].name;
      print_output(stdout, o, k, storage, &outs[k]);
    }
    if (o->json)
      fputs("]}\n", stdout);
    for (int k = 0; k < no && o->out_dir && !rc; k++) {
      char name[32];
      snprintf(name, sizeof name, "out%d", k);
      rc = save_npy(o->out_dir, name, &outs[k]);
    }
  }
  for (int k = 0; k < no; k++)
    tdsl_tensor_release(&outs[k]);
  free(outs);
  return rc;
}

#ifdef TDSLC_WITH_LLVM
// The runtime functions generated modules call (llvm_runtime_names), at their
// addresses in tdslc, which links libtdslrt: the JIT is given exactly these.
#define RT(f) {#f, (void (*)(void))f}
static const LlvmSymbol runtime_symbols[] = {
    RT(tdsl_entry_begin),  RT(tdsl_entry_end),          RT(tdsl_entry_kernel_error), RT(tdsl_tensor_data),
    RT(tdsl_parallel_for), RT(tdsl_kernel_error_raise), RT(tdsl_kernel_error_seal),
};
#undef RT

typedef struct JitCall {
  const Options *o;
  const LProgram *p;
  const tdsl_tensor *ins;
  Timer *tm;
} JitCall;

static int jit_use(void *ctx, void *const *addrs) {
  JitCall *jc = ctx;
  RunFn fn;
  *(void **)&fn = addrs[0];
  return call_and_report(jc->o, jc->p, jc->ins, fn, NULL, jc->tm);
}

// Compiles p with LLVM into this process (ORC LLJIT) and calls it.
static int run_llvm(const Options *o, Ctx *cx, LProgram *p, const tdsl_tensor *ins, Timer *tm) {
  const char *name = arena_printf(&cx->arena, "tdsl_g_run_%s", p->name);
  LlvmOptions lo = {.opt = o->opt, .lap = llvm_lap, .lap_ctx = tm};
  JitCall jc = {o, p, ins, tm};
  int rc = 0;
  const char *err = llvm_jit_run(cx, &p, 1, &lo, runtime_symbols, (int)(sizeof runtime_symbols / sizeof *runtime_symbols),
                                 &name, 1, jit_use, &jc, &rc);
  return err ? internal_error("%s", err) : rc;
}
#else
static int run_llvm(const Options *o, Ctx *cx, LProgram *p, const tdsl_tensor *ins, Timer *tm) {
  (void)o, (void)cx, (void)p, (void)ins, (void)tm;
  return usage_error("--backend llvm: this tdslc was built without LLVM (TDSLC_WITH_LLVM=OFF)");
}
#endif

// ---- run on the GPU: the entry's tables, the kernels' image, tdsl_gpu_run ----
_Static_assert(TD_MAX_DIMS == TDSL_MAX_DIMS, "compiler and runtime share the dims limit");

// The runtime tables of p, as codegen/c.c prints them and codegen/llvm.c builds them.
static const tdsl_entry_info *entry_info(Ctx *cx, const LProgram *p) {
  Arena *ar = &cx->arena;
  int np = p->params.len, nb = p->bufs.len, no = p->outputs.len;
  tdsl_entry_param *ps = arena_alloc(ar, sizeof *ps * (size_t)(np + 1));
  for (int i = 0; i < np; i++) {
    const LParam *q = &p->params.data[i];
    ps[i] = (tdsl_entry_param){.name = q->name, .dtype = (tdsl_dtype)q->dtype, .ndim = q->ndim, .mut = q->mut,
                               .buf = q->buf};
    memcpy(ps[i].shape, q->shape, sizeof ps[i].shape);
  }
  tdsl_entry_buf *bs = arena_alloc(ar, sizeof *bs * (size_t)(nb + 1));
  for (int b = 0; b < nb; b++) {
    const LBuf *lb = &p->bufs.data[b];
    bs[b] = (tdsl_entry_buf){(tdsl_dtype)lb->dtype, lb->numel, lb->kind == LB_PARAM ? lb->param : -1};
  }
  tdsl_entry_output *os = arena_alloc(ar, sizeof *os * (size_t)(no + 1));
  for (int k = 0; k < no; k++) {
    const LOutput *lo = &p->outputs.data[k];
    os[k] = (tdsl_entry_output){.buf = lo->buf, .ndim = lo->view.ndim, .offset = lo->view.offset};
    memcpy(os[k].shape, lo->view.shape, sizeof os[k].shape);
    memcpy(os[k].strides, lo->view.strides, sizeof os[k].strides);
  }
  tdsl_entry_info *fi = arena_alloc(ar, sizeof *fi);
  *fi = (tdsl_entry_info){p->name, np, np ? ps : NULL, nb, nb ? bs : NULL, no, no ? os : NULL};
  return fi;
}

#ifdef TDSLC_WITH_LLVM
// The PTX target of a run: --gpu-arch, else the device's own, at most sm_86 (the newest
// LLVM 14 knows; its PTX runs on newer GPUs through the driver's JIT).
static const char *run_ptx_arch(Ctx *cx, const Options *o) {
  if (o->gpu_arch)
    return o->gpu_arch;
  int major, minor;
  if (tdsl_gpu_compute_capability(&major, &minor) != 0)
    return "sm_80";
  int cc = major * 10 + minor;
  return arena_printf(&cx->arena, "sm_%d", cc > 86 ? 86 : cc);
}
#endif

static int run_gpu(const Options *o, Ctx *cx, LProgram *p, const tdsl_tensor *ins, Timer *tm) {
  GpuImage img = {0};
  tdsl_gpu_program gp = {.info = entry_info(cx, p)};
  if (strcmp(o->backend, "cuda") == 0) {
    cuda_device_image(cx, p, &img);
    gp.kind = TDSL_GPU_CUDA_C;
    gp.arch = o->gpu_arch;  // NULL: NVRTC compiles for the device's own
  } else {
#ifdef TDSLC_WITH_LLVM
    const char *err = ptx_image(cx, p, run_ptx_arch(cx, o), o->opt, &img);
    if (err)
      return internal_error("%s", err);
    gp.kind = TDSL_GPU_PTX;
#else
    return usage_error("--backend ptx: this tdslc was built without LLVM (TDSLC_WITH_LLVM=OFF)");
#endif
  }
  lap(tm, "emit");
  int nk = p->kernels.len;
  if (img.nkernels != nk || (nk && !img.text))
    return internal_error("the %s image of '%s' has %d kernels, not %d", o->backend, p->name, img.nkernels, nk);
  tdsl_gpu_kernel *ks = arena_alloc(&cx->arena, sizeof *ks * (size_t)(nk + 1));
  for (int k = 0; k < nk; k++) {
    const LKernel *lk = p->kernels.data[k];
    const GpuKernel *g = &img.kernels[k];
    int *args = arena_alloc(&cx->arena, sizeof *args * (size_t)(lk->args.len + 1));
    for (int i = 0; i < lk->args.len; i++)
      args[i] = lk->args.data[i].buf;
    ks[k] = (tdsl_gpu_kernel){g->name, g->grid, g->block, g->shmem, lk->args.len, args, lk->errors.len,
                              (const char *const *)lk->errors.data};
  }
  gp.image = img.text;
  gp.nkernels = nk;
  gp.kernels = ks;
  return call_and_report(o, p, ins, NULL, &gp, tm);
}

// ---- the pipeline ----
static int compile_and_act(Ctx *cx, const Options *o) {
  Timer tm = {o->time, now_ms()};
  SrcFile *src = srcfile_read(cx, o->file);
  if (!src)
    return EXIT_USAGE;
  lap(&tm, "read");
  if (o->mode == MODE_COMPILE && o->emit == EMIT_TOKENS) {
    parse_dump_tokens(cx, src, stdout);
    return cx->nerrors ? EXIT_PROGRAM : 0;
  }
  Program prog = {0};
  prog.ast = parse_program(cx, src);
  lap(&tm, "parse");
  if (cx->nerrors || !prog.ast)
    return EXIT_PROGRAM;
  if (o->mode == MODE_COMPILE && o->emit == EMIT_AST) {
    OutFile of;
    if (!out_open(&of, o->out))
      return EXIT_USAGE;
    ast_dump(prog.ast, of.fp);
    return out_close(&of, true) ? 0 : EXIT_USAGE;
  }
  bool ok = sema_check(cx, &prog);
  lap(&tm, "sema");
  if (!ok || cx->nerrors)
    return EXIT_PROGRAM;

  bool per_fn = o->mode != MODE_COMPILE || o->emit == EMIT_IR || o->emit == EMIT_KERNELS || o->emit == EMIT_DOT;
  const Ast *only = NULL;
  if (per_fn || o->fn) {
    if (!(only = pick_fn(&prog, o)))
      return EXIT_USAGE;
  }
  // The CPU the schedules are for: --cpu, else the host (cuda: none).
  bool cpu_prog = strcmp(o->target, "cpu") == 0;
  CpuTarget cpu = cpu_target(o->cpu);
  if (o->mode == MODE_RUN || o->mode == MODE_BENCH) {
    Graph *g = lower_fn(cx, &prog, only);
    fuse_graph(g);
    lap(&tm, "lower");
    LProgram *lp = kernel_build(cx, g, cpu_prog ? &cpu : NULL);
    lp->flops = graph_flops(g);
    if (cpu_prog)
      sched_cpu(cx, lp);
    lap(&tm, "kernels");
    if (cx->nerrors)
      return EXIT_PROGRAM;
    return run_program(o, cx, lp, &tm);
  }
  bool llvm_kind = o->emit == EMIT_LLVM || o->emit == EMIT_ASM || o->emit == EMIT_OBJ;
#ifndef TDSLC_WITH_LLVM
  if (llvm_kind || o->emit == EMIT_PTX)
    return usage_error("--emit=%s: this tdslc was built without LLVM (TDSLC_WITH_LLVM=OFF)", emit_names[o->emit]);
#endif
  // The per-function kinds act on one function; C and the header on every function
  // of the file unless --fn names one.
  int nfns = only ? 1 : prog.fns.len;
  LProgram **lps = arena_alloc(&cx->arena, sizeof *lps * (size_t)(nfns ? nfns : 1));
  Graph *g = NULL;
  for (int i = 0; i < nfns; i++) {
    g = lower_fn(cx, &prog, only ? only : prog.fns.data[i]);
    fuse_graph(g);
    if (o->emit == EMIT_IR || o->emit == EMIT_DOT) {
      // --emit=ir names the schedule each kernel gets on the CPU (a matmul's tile)
      if (o->emit == EMIT_IR && cpu_prog) {
        LProgram *lp = kernel_build(cx, g, &cpu);
        g->sched = arena_alloc(&cx->arena, sizeof *g->sched * (size_t)(lp->kernels.len + 1));
        for (int k = 0; k < lp->kernels.len; k++)
          g->sched[k] = lp->kernels.data[k]->sched;
      }
      continue;
    }
    lps[i] = kernel_build(cx, g, cpu_prog ? &cpu : NULL);
    if (cpu_prog)
      sched_cpu(cx, lps[i]);
  }
  lap(&tm, "lower");
  if (cx->nerrors)
    return EXIT_PROGRAM;
  OutFile of;
  if (!out_open(&of, o->out))
    return EXIT_USAGE;
  if (o->emit == EMIT_IR && o->json)
    graph_print_json(g, of.fp);
  else if (o->emit == EMIT_IR)
    graph_print(g, of.fp);
  else if (o->emit == EMIT_DOT)
    graph_print_dot(g, of.fp);
  else if (o->emit == EMIT_KERNELS)
    loop_print(lps[0], of.fp);
  else if (o->emit == EMIT_C)
    target_c.emit(cx, lps, nfns, of.fp);
  else if (o->emit == EMIT_HEADER)
    emit_header(cx, lps, nfns, of.fp);
  else if (o->emit == EMIT_CUDA)
    target_cuda.emit(cx, lps, nfns, of.fp);
#ifdef TDSLC_WITH_LLVM
  else if (o->emit == EMIT_PTX) {
    const char *err = ptx_emit(cx, lps, nfns, o->gpu_arch ? o->gpu_arch : "sm_80", o->opt, of.fp);
    if (err) {
      out_close(&of, false);
      return internal_error("%s", err);
    }
    lap(&tm, "emit");
    return out_close(&of, true) ? 0 : EXIT_USAGE;
  } else if (llvm_kind) {
    LlvmOptions lo = {.opt = o->opt, .cpu = o->cpu, .lap = llvm_lap, .lap_ctx = &tm};
    LlvmOut k = o->emit == EMIT_LLVM ? LLVM_OUT_IR : o->emit == EMIT_ASM ? LLVM_OUT_ASM : LLVM_OUT_OBJ;
    const char *err = llvm_emit(cx, lps, nfns, &lo, k, of.fp);
    if (err) {
      out_close(&of, false);
      return internal_error("%s", err);
    }
    return out_close(&of, true) ? 0 : EXIT_USAGE;
  }
#endif
  lap(&tm, "emit");
  return out_close(&of, true) ? 0 : EXIT_USAGE;
}

int main(int argc, char **argv) {
  if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
    print_help();
    return 0;
  }
  if (argc == 2 && !strcmp(argv[1], "--version")) {
    puts("tdslc " TDSLC_VERSION);
    return 0;
  }
  if (argc == 2 && !strcmp(argv[1], "--print-include-dir")) {
    puts(TDSL_INCLUDE_DIR);
    return 0;
  }
  if (argc == 2 && !strcmp(argv[1], "--print-lib-dir")) {
    puts(TDSL_LIB_DIR);
    return 0;
  }
  Options o;
  int rc = parse_args(argc, argv, &o);
  if (rc == 0) {
    Ctx cx;
    ctx_init(&cx);
    rc = compile_and_act(&cx, &o);
    ctx_free(&cx);
  }
  for (int i = 0; i < o.ninputs; i++)
    free((char *)o.inputs[i].name);
  return rc;
}
