// base/arena.c: zeroed bump allocation in chunks, released all at once, and the
// arena-backed growable arrays behind VEC(T). Nothing here is freed one by one.
#include "base/base.h"

#include <stdlib.h>
#include <string.h>

struct ArenaChunk {
  ArenaChunk *next;
  size_t used, cap;
  _Alignas(16) unsigned char data[];
};

enum { CHUNK_MIN = 64 * 1024 };

static void out_of_memory(size_t size) {
  fprintf(stderr, "tdslc: out of memory (allocating %zu bytes)\n", size);
  exit(4);
}

void *arena_alloc(Arena *a, size_t size) {
  size = (size + 15) & ~(size_t)15;
  ArenaChunk *c = a->head;
  if (!c || c->cap - c->used < size) {
    size_t cap = size > CHUNK_MIN ? size : CHUNK_MIN;
    c = malloc(sizeof(ArenaChunk) + cap);  // (each allocation is zeroed, not the chunk:
    if (!c)                                 // a short-lived arena of one small formula,
      out_of_memory(size);                  // ir/opmath.c's, cleared 64 KB a call)
    c->used = 0;
    c->cap = cap;
    c->next = a->head;
    a->head = c;
  }
  void *p = c->data + c->used;
  c->used += size;
  a->total += size;
  return memset(p, 0, size);
}

char *arena_strndup(Arena *a, const char *s, size_t n) {
  char *p = arena_alloc(a, n + 1);
  memcpy(p, s, n);
  return p;
}

char *arena_strdup(Arena *a, const char *s) { return arena_strndup(a, s, strlen(s)); }

char *arena_printf(Arena *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *p = arena_alloc(a, (size_t)n + 1);
  va_start(ap, fmt);
  vsnprintf(p, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return p;
}

void arena_reset(Arena *a) {
  for (ArenaChunk *c = a->head, *next; c; c = next) {
    next = c->next;
    free(c);
  }
  a->head = NULL;
  a->total = 0;
}

// Doubles the capacity; the old block stays in the arena (it is freed with it).
void *vec_grow(Arena *a, void *data, int *cap, size_t elem) {
  int ncap = *cap ? *cap * 2 : 8;
  void *p = arena_alloc(a, (size_t)ncap * elem);
  if (data)
    memcpy(p, data, (size_t)*cap * elem);
  *cap = ncap;
  return p;
}

void ctx_init(Ctx *cx) {
  memset(cx, 0, sizeof *cx);
  cx->diag_out = stderr;
  cx->error_limit = DIAG_ERROR_LIMIT;
}

void ctx_free(Ctx *cx) {
  arena_reset(&cx->arena);
  free(cx->reported);
  cx->reported = NULL;
}
