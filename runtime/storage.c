// runtime/storage.c: storages (reference-counted data blocks) and the storage cache,
// which keeps freed large blocks for reuse.
//
// Why a cache: a generated entry makes its temps and results anew on every call. A
// large block from malloc is a fresh mmap each time, so every call faulted in every
// page of its results (16k faults for a 64 MB f32[4096, 4096]), and that cost several
// times the kernel itself.
//
// Blocks: data under CACHE_MIN bytes (128 KiB) comes from posix_memalign and goes back to free.
// Larger data is mmap'ed here: page aligned and zeroed by the kernel; from HUGE_MIN on
// its start is 2 MiB aligned and the range is marked MADV_HUGEPAGE (THP in "madvise"
// mode then backs it with huge pages: fewer first-touch faults and TLB misses; with
// the cache warm it still made transpose and broadcast_add 1.5x faster). A released
// large block goes to the cache rather than to munmap.
//
// The cache holds at most CACHE_BLOCKS blocks and `limit` bytes: min(1 GiB, physical
// memory / 8) by default, enough for a few calls' worth of the largest results without
// pinning a real share of the machine. A release that would pass either bound evicts
// the oldest blocks first (a block larger than `limit` is unmapped at once). A new
// storage takes the smallest cached block whose capacity is at least nbytes and at
// most twice that, so a small storage never pins a much larger block. A reused block
// is dirty: tdsl_storage_new zeroes its nbytes, tdsl_storage_new_uninit does not
// (under TDSL_STORAGE_POISON it fills them with the poison byte, fresh or reused).
//
// tdsl_storage_wrap makes a storage over the caller's memory (a NumPy array's, for the
// Python package): its release frees the record and leaves the data alone.
//
// Invariants: the cache (`blocks`, `nblocks`, `bytes`) changes only under `mu`, and no
// munmap or memset runs under it; a large block belongs either to one live storage or
// to the cache; cached blocks stay mapped at exit (LeakSanitizer does not track mmap).
// Under AddressSanitizer or MemorySanitizer there is no cache and no mmap: every block
// is malloc'ed and freed at once, so use-after-free and uninitialised reads stay
// visible to the sanitizer.
#define _DEFAULT_SOURCE  // MAP_ANONYMOUS, MADV_HUGEPAGE
#include "tdsl.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sanitized.h"

enum { CACHE_BLOCKS = 16, ALIGN = 64 };
#define CACHE_MIN ((size_t)128 << 10)  // glibc malloc's first mmap threshold: what it would mmap and unmap per call
#define HUGE_MIN ((size_t)2 << 20)  // also the huge page size
#define DEFAULT_LIMIT ((size_t)1 << 30)

// What tdsl_storage_new returns points at the `s` of one of these.
typedef struct Storage {
  tdsl_storage s;
  size_t cap;     // bytes mapped at s.data; 0: s.data came from posix_memalign
  bool borrowed;  // s.data belongs to the caller of tdsl_storage_wrap
} Storage;

typedef struct Block {
  void *data;
  size_t cap;
} Block;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static size_t limit;   // the byte cap; 0: no cache
static int poison = -1;  // TDSL_STORAGE_POISON's byte, or -1

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
// Guarded by mu: oldest first.
static Block blocks[CACHE_BLOCKS];
static int nblocks;
static size_t bytes;

static void lock(void) { pthread_mutex_lock(&mu); }
static void unlock(void) { pthread_mutex_unlock(&mu); }

// ---- settings, read once ----
static void init(void) {
  pthread_atfork(lock, unlock, unlock);  // a fork child never finds mu held
  const char *s = getenv("TDSL_STORAGE_POISON");
  if (s && *s) poison = (int)(strtol(s, NULL, 0) & 0xff);
  s = getenv("TDSL_STORAGE_CACHE");
  if (SANITIZED || (s && strcmp(s, "0") == 0)) return;
  long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
  size_t phys = pages > 0 && psize > 0 ? (size_t)pages * (size_t)psize : 0;
  limit = phys && phys / 8 < DEFAULT_LIMIT ? phys / 8 : DEFAULT_LIMIT;
}

// ---- large blocks: mmap'ed, reused through the cache ----
static size_t page_round(size_t n) {
  size_t p = (size_t)sysconf(_SC_PAGESIZE);
  return (n + p - 1) / p * p;
}

// A zeroed block of at least nbytes (its size in *cap), or NULL.
static void *map_block(size_t nbytes, size_t *cap) {
  if (nbytes > SIZE_MAX - 2 * HUGE_MIN) return NULL;
  size_t n = page_round(nbytes), extra = n >= HUGE_MIN ? HUGE_MIN : 0;
  char *p = mmap(NULL, n + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
  if (extra) {  // trim to a 2 MiB aligned start
    size_t head = (HUGE_MIN - (uintptr_t)p % HUGE_MIN) % HUGE_MIN;
    if (head) munmap(p, head);
    if (extra - head) munmap(p + head + n, extra - head);
    p += head;
#ifdef MADV_HUGEPAGE
    madvise(p, n, MADV_HUGEPAGE);  // a hint: failure changes nothing
#endif
  }
  *cap = n;
  return p;
}

// The best cached block for nbytes, taken out of the cache, or NULL.
static void *cache_take(size_t nbytes, size_t *cap) {
  void *p = NULL;
  lock();
  int best = -1;
  for (int i = nblocks - 1; i >= 0; i--) {  // newest first: ties go to the warmest
    size_t c = blocks[i].cap;
    if (c >= nbytes && c / 2 <= nbytes && (best < 0 || c < blocks[best].cap)) best = i;
  }
  if (best >= 0) {
    p = blocks[best].data;
    *cap = blocks[best].cap;
    bytes -= *cap;
    memmove(&blocks[best], &blocks[best + 1], sizeof *blocks * (size_t)(nblocks - best - 1));
    nblocks--;
  }
  unlock();
  return p;
}

// Caches the block, evicting the oldest ones to stay within bounds.
static void cache_put(void *data, size_t cap) {
  Block out[CACHE_BLOCKS + 1];
  int nout = 0;
  lock();
  if (cap > limit) {
    out[nout++] = (Block){data, cap};
  } else {
    while (nblocks == CACHE_BLOCKS || bytes + cap > limit) {
      out[nout++] = blocks[0];
      bytes -= blocks[0].cap;
      memmove(&blocks[0], &blocks[1], sizeof *blocks * (size_t)--nblocks);
    }
    blocks[nblocks++] = (Block){data, cap};
    bytes += cap;
  }
  unlock();
  for (int i = 0; i < nout; i++) munmap(out[i].data, out[i].cap);
}

// ---- storages ----
static tdsl_storage *out_of_memory(size_t nbytes) {
  tdsl_set_error("out of memory allocating %zu bytes", nbytes);
  return NULL;
}

static tdsl_storage *storage_new(size_t nbytes, bool zero) {
  pthread_once(&once, init);
  Storage *st = calloc(1, sizeof *st);
  if (!st) return out_of_memory(nbytes);
  void *data = NULL;
  bool fresh = false;  // a new mapping: the kernel zeroed it
  if (SANITIZED || nbytes < CACHE_MIN) {
    if (posix_memalign(&data, ALIGN, nbytes ? nbytes : 1)) data = NULL;  // never NULL when live
  } else if (!(data = cache_take(nbytes, &st->cap))) {
    fresh = (data = map_block(nbytes, &st->cap)) != NULL;
  }
  if (!data) {
    free(st);
    return out_of_memory(nbytes);
  }
  if (zero && !fresh) memset(data, 0, nbytes);
  if (!zero && poison >= 0) memset(data, poison, nbytes);
  st->s.refcount = 1;
  st->s.data = data;
  st->s.nbytes = nbytes;
  return &st->s;
}

tdsl_storage *tdsl_storage_new(size_t nbytes) { return storage_new(nbytes, true); }

tdsl_storage *tdsl_storage_new_uninit(size_t nbytes) { return storage_new(nbytes, false); }

tdsl_storage *tdsl_storage_wrap(void *data, size_t nbytes) {
  Storage *st = calloc(1, sizeof *st);
  if (!st) return out_of_memory(sizeof *st);
  st->borrowed = true;
  st->s.refcount = 1;
  st->s.data = data;
  st->s.nbytes = nbytes;
  return &st->s;
}

void tdsl_storage_retain(tdsl_storage *s) {
  if (s) s->refcount++;
}

void tdsl_storage_release(tdsl_storage *s) {
  if (!s || --s->refcount > 0) return;
  Storage *st = (Storage *)s;
  if (st->cap) cache_put(s->data, st->cap);
  else if (!st->borrowed) free(s->data);
  free(st);
}

// ---- looking at the cache ----
size_t tdsl_storage_cache_limit(void) {
  pthread_once(&once, init);
  return limit;
}

size_t tdsl_storage_cache_bytes(int *nblocks_out) {
  lock();
  size_t b = bytes;
  if (nblocks_out) *nblocks_out = nblocks;
  unlock();
  return b;
}

void tdsl_storage_cache_trim(void) {
  Block out[CACHE_BLOCKS];
  lock();
  int n = nblocks;
  memcpy(out, blocks, sizeof *blocks * (size_t)n);
  nblocks = 0;
  bytes = 0;
  unlock();
  for (int i = 0; i < n; i++) munmap(out[i].data, out[i].cap);
}
