// driver/outfile.c: output files written whole or not at all (--emit's -o, --plot). A
// regular file, or a path nothing is at yet, is written to PATH.tmpPID beside it and
// renamed over PATH once complete, so a failed compile leaves the old file or none. A
// path naming anything else (a device such as /dev/null or /dev/stdout, a pipe, a
// socket) is written in place: renaming over it would replace the device with a regular
// file (as root, `-o /dev/null` would take /dev/null from the whole machine). "-" is
// standard output.
#include "driver/driver.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool out_open(OutFile *of, const char *path) {
  if (path && strcmp(path, "-") == 0)
    path = NULL;  // `-o -`: standard output, as most compilers take it
  *of = (OutFile){.fp = stdout, .path = path};
  if (!path)
    return true;
  struct stat st;
  bool in_place = stat(path, &st) == 0 && !S_ISREG(st.st_mode);
  if (!in_place) {
    size_t n = strlen(path) + 32;
    of->tmp = malloc(n);
    snprintf(of->tmp, n, "%s.tmp%ld", path, (long)getpid());
  }
  of->fp = fopen(in_place ? path : of->tmp, "wb");
  if (!of->fp) {
    fprintf(stderr, "tdslc: error: cannot write '%s': %s\n", path, strerror(errno));
    free(of->tmp);
    of->tmp = NULL;
    return false;
  }
  return true;
}

bool out_close(OutFile *of, bool keep) {
  if (!of->path) {
    fflush(stdout);
    return true;
  }
  bool ok = fclose(of->fp) == 0 && keep;
  if (!of->tmp)  // written in place: nothing to rename or remove
    return ok;
  if (ok && rename(of->tmp, of->path) != 0) {
    fprintf(stderr, "tdslc: error: cannot write '%s': %s\n", of->path, strerror(errno));
    ok = false;
  }
  if (!ok)
    remove(of->tmp);
  free(of->tmp);
  of->tmp = NULL;
  return ok;
}
