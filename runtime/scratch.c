// runtime/scratch.c: per-thread scratch memory for generated kernels (tdsl_scratch).
// A CPU matmul packs the panels it is about to multiply into a region of its own thread
// (ir/gemm.c), so that what it holds beside its operands and result is a few cache-sized
// blocks per thread, not a copy of a whole operand. Each thread keeps one region, the
// largest any kernel asked it for, from one call to the next: asking costs a
// thread-local read and a compare.
//
// Invariants: never NULL (without memory for the region it reports and aborts: the
// kernel asking has no way to go on); a region is 64-byte aligned and at least as large as the last request
// (its contents survive only while the requests do not grow); it belongs to one thread
// and is freed by that thread's exit (a pthread key's destructor), or at process exit
// for the main thread, which LeakSanitizer then sees as reachable.
#include "tdsl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct Region {
  void *data;
  int64_t size;
} Region;

static _Thread_local Region region;
static pthread_key_t key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void free_region(void *p) { free(p); }

static void make_key(void) { (void)pthread_key_create(&key, free_region); }

void *tdsl_scratch(int64_t bytes) {
  if (bytes <= region.size)
    return region.data;
  int64_t size = (bytes + 63) / 64 * 64;
  void *p = aligned_alloc(64, (size_t)size);
  if (!p) {  // a few cache-sized blocks: a kernel has no way to go on without them
    fprintf(stderr, "tdsl: out of memory (%lld bytes of scratch for a kernel)\n", (long long)size);
    abort();
  }
  free(region.data);
  region.data = p;
  region.size = size;
  pthread_once(&key_once, make_key);
  (void)pthread_setspecific(key, p);  // freed at the thread's exit
  return p;
}
