// driver/paths.c: where the runtime's header and library are, for --print-include-dir,
// --print-lib-dir and `run --backend c`. The answer depends on where this tdslc is:
// an installed one (PREFIX/bin/tdslc, `cmake --install` or `make install`) finds them
// under its own prefix, PREFIX/include and PREFIX/lib, wherever the prefix was moved;
// any other (build/tdslc) gives the source tree's runtime/ and the build folder, fixed
// when it was built. "Installed" means: the folder holding the executable is
// PREFIX/<bindir> and PREFIX/<includedir>/tdsl.h exists.
#include "driver/driver.h"

#include <limits.h>
#include <string.h>
#include <unistd.h>

// The install layout, relative to the prefix (GNUInstallDirs, set by CMakeLists.txt).
#ifndef TDSL_INSTALL_BINDIR
#define TDSL_INSTALL_BINDIR "bin"
#endif
#ifndef TDSL_INSTALL_INCLUDEDIR
#define TDSL_INSTALL_INCLUDEDIR "include"
#endif
#ifndef TDSL_INSTALL_LIBDIR
#define TDSL_INSTALL_LIBDIR "lib"
#endif

typedef struct Paths {
  char include[2 * PATH_MAX], lib[2 * PATH_MAX];  // a prefix and a relative folder
} Paths;

// The prefix an installed tdslc lives under, into prefix; false when this one is not
// installed (or /proc/self/exe cannot be read).
static bool installed_prefix(char *prefix, size_t n) {
  char exe[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len <= 0)
    return false;
  exe[len] = 0;
  char *slash = strrchr(exe, '/');
  if (!slash)
    return false;
  *slash = 0;  // exe is now the folder holding tdslc
  size_t nd = strlen(exe), nb = strlen(TDSL_INSTALL_BINDIR);
  if (nd <= nb || exe[nd - nb - 1] != '/' || strcmp(exe + nd - nb, TDSL_INSTALL_BINDIR) != 0)
    return false;
  exe[nd - nb - 1] = 0;
  char header[PATH_MAX];
  int w = snprintf(header, sizeof header, "%s/%s/tdsl.h", exe, TDSL_INSTALL_INCLUDEDIR);
  if (w < 0 || (size_t)w >= sizeof header || access(header, R_OK) != 0)
    return false;
  return (size_t)snprintf(prefix, n, "%s", *exe ? exe : "/") < n;
}

static const Paths *paths(void) {
  static Paths p;
  static bool done;
  if (done)
    return &p;
  char prefix[PATH_MAX];
  if (installed_prefix(prefix, sizeof prefix)) {
    const char *sep = strcmp(prefix, "/") == 0 ? "" : "/";
    snprintf(p.include, sizeof p.include, "%s%s%s", prefix, sep, TDSL_INSTALL_INCLUDEDIR);
    snprintf(p.lib, sizeof p.lib, "%s%s%s", prefix, sep, TDSL_INSTALL_LIBDIR);
  } else {
    snprintf(p.include, sizeof p.include, "%s", TDSL_INCLUDE_DIR);
    snprintf(p.lib, sizeof p.lib, "%s", TDSL_LIB_DIR);
  }
  done = true;
  return &p;
}

const char *paths_include_dir(void) { return paths()->include; }

const char *paths_lib_dir(void) { return paths()->lib; }
