// driver/cc.c: the C backend of run and bench. The function is printed as C with a
// packed caller (tdsl_g_run), built by the system cc into a shared object in a
// private temp folder, and loaded. The object leaves tdsl_* undefined: tdslc exports
// them, so the code calls this process's runtime (its errors, its storages). The
// folder is always removed before returning; the object stays loaded.
#include "driver/driver.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

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
// happens; the loaded object stays open.
int cc_build_and_load(Ctx *cx, LProgram *p, Timer *tm, RunFn *fn) {
  Build build = {0}, *b = &build;
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
  for (int i = 0; i < p->params.len; i++, n++) {
    const LParam *q = &p->params.data[i];
    if (q->scalar)  // a scalar parameter: run.c's 0-d tensor of its dtype, passed by value
      fprintf(f, "%s*(const %s *)tdsl_tensor_data(args[%d])", n ? ", " : "",
              q->dtype == DT_F64 ? "double" : q->dtype == DT_I64 ? "int64_t" : "bool", i);
    else
      fprintf(f, "%s%sargs[%d]", n ? ", " : "", q->mut ? "(tdsl_tensor *)" : "", i);
  }
  for (int k = 0; k < p->outputs.len; k++, n++)
    fprintf(f, "%s&outs[%d]", n ? ", " : "", k);
  fputs(");\n}\n", f);
  if (fclose(f) != 0) {
    rc = internal_error("cannot write '%s': %s", src, strerror(errno));
    goto out;
  }
  lap(tm, "emit");

  // cc -std=c11 -O2 -march=native [-mprefer-vector-width=512] -fvect-cost-model=dynamic
  // -fno-math-errno -fno-trapping-math -shared -fPIC ...: the host's vector units, as the
  // LLVM backend uses them (all their width), and loops vectorized even when they need a
  // remainder (-O2's own model leaves an exp polynomial's loop scalar). -fno-math-errno:
  // nothing reads errno, and a libm call that may set it (sqrtf of a negative) is neither
  // vectorized nor hoisted out of a loop. -fno-trapping-math: nothing reads the
  // floating-point exception flags either; without it gcc 12 will not if-convert a
  // conversion (f64 to f32, int to float) that its passes moved under a select, and the
  // loop of such a kernel (ir/vecmath.c's pow) stays scalar. Neither flag changes a
  // computed value. ISO C mode keeps -ffp-contract=off: no fused multiply-add unless the
  // loop IR says so. Not -O3: gcc 12's -O3 -march=native miscompiles an if-converted
  // column sum here (test_backends_agree.py, seed 100079). -Bsymbolic: the entry's own
  // calls never bind to a symbol of tdslc that happens to share the function's name.
  // x86-64: -mprefer-vector-width=512, else gcc 12 (-march=native taken as rocketlake,
  // whose preferred width is 256) splits the 16-lane vectors of an AVX-512 host into
  // halves, and the GEMM micro-kernel's 24 accumulators spill on every k term (its 8x48
  // tile ran ~20x slower than LLVM's: a 3 x 3 conv at 56 x 56, 19 ms against 1.1).
  char *inc = arena_printf(&cx->arena, "-I%s", paths_include_dir());
#if defined(__x86_64__)
#define TD_CC_WIDTH "-mprefer-vector-width=512",
#else
#define TD_CC_WIDTH
#endif
  char *fixed[] = {"cc", "-std=c11", "-O2", "-march=native", TD_CC_WIDTH "-fvect-cost-model=dynamic",
                   "-fno-math-errno", "-fno-trapping-math", "-shared", "-fPIC", "-Wl,-Bsymbolic"};
#undef TD_CC_WIDTH
  // TDSL_CFLAGS: more flags, split at white space, after these (a later -O wins: the
  // tests build their op-by-op programs at -O0, docs/tdslc.1) and before the files.
  enum { MAX_EXTRA = 32 };
  char *argv[sizeof fixed / sizeof *fixed + MAX_EXTRA + 6];
  int argc = 0;
  for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
    argv[argc++] = fixed[i];
  const char *extra = getenv("TDSL_CFLAGS");
  for (const char *s = extra ? extra : ""; *s;) {
    size_t n = strcspn(s, " \t\n");
    if (n && argc == (int)(sizeof fixed / sizeof *fixed) + MAX_EXTRA) {
      rc = usage_error("TDSL_CFLAGS holds more than %d flags", MAX_EXTRA);
      goto out;
    }
    if (n)
      argv[argc++] = arena_printf(&cx->arena, "%.*s", (int)n, s);
    s += n + strspn(s + n, " \t\n");
  }
  char *tail[] = {inc, "-o", so, src, "-lm", NULL};
  for (size_t i = 0; i < sizeof tail / sizeof *tail; i++)
    argv[argc++] = tail[i];
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
    else if (extra && extra[strspn(extra, " \t\n")])  // the user's flags may be why
      rc = internal_error("the C compiler failed on the generated code with TDSL_CFLAGS='%s':", extra);
    else
      rc = internal_error("the C compiler failed on the generated code:");
    show_log(log);
    goto out;
  }
  lap(tm, "cc");
  b->so = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  if (!b->so) {
    rc = internal_error("cannot load the compiled function: %s", dlerror());
    goto out;
  }
  *(void **)&b->fn = dlsym(b->so, "tdsl_g_run");
  if (!b->fn)
    rc = internal_error("the compiled object has no entry: %s", dlerror());
out:
  *fn = b->fn;
  remove_build_dir(b);
  free(src);
  free(so);
  free(log);
  return rc;
}
