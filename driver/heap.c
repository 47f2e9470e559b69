// driver/heap.c: the malloc heap of a compile, laid out for few page faults
// (heap_prepare, called once before compile mode allocates). A compile writes a few MB
// of heap, most of it LLVM's codegen in small blocks, and each 4 KiB page it touches
// first costs a fault (~1.6 us here, zeroing included); a 2 MiB transparent huge page
// costs ~0.17 ms, 4.6x less per byte. So the heap is grown once by PAD, blocks up to
// PAD stay in it rather than in mmaps of their own (glibc maps each block over 128 KiB
// apart, and faults and unmaps it again), and the part from the first 2 MiB boundary
// on asks for huge pages (MADV_HUGEPAGE: the kernel's THP mode here is "madvise").
// The stretch below that boundary is taken by one block that is never touched, so the
// blocks that follow start on a huge page. Issue 31, measured interleaved:
// examples/attention.tdsl to an object -0.6 ms (~600 of its ~1,250 page faults were the
// heap's); GPT-2 small to an object 125 -> 104 ms, 5,600 -> 600 page faults.
//
// Invariants: nothing here is needed for correctness. Each step is advice that the C
// library or the kernel may refuse, and then the heap is simply glibc's default;
// under the sanitizers (whose malloc is not glibc's) or outside glibc it does nothing.
// Untouched heap costs no memory: the resident set grows by what is written, rounded
// up to 2 MiB.
#define _GNU_SOURCE  // MADV_HUGEPAGE, sbrk
#include "driver/driver.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && defined(MADV_HUGEPAGE)
#include <malloc.h>

enum { PAD = 32 << 20, HUGE_PAGE = 2 << 20 };  // (PAD: the most M_MMAP_THRESHOLD takes)

static void *below_boundary;  // the untouched block under the first huge page (kept)

void heap_prepare(void) {
  // Grow by PAD past each request, keep blocks under PAD on the heap, never give memory
  // back to the kernel mid-compile.
  // (Not with MALLOC_PERTURB_ set: glibc would fill the block below, 30 MiB of faults.)
  if (getenv("MALLOC_PERTURB_") || !mallopt(M_TOP_PAD, PAD) || !mallopt(M_MMAP_THRESHOLD, PAD) ||
      !mallopt(M_TRIM_THRESHOLD, 2 * PAD))
    return;
  // A block larger than any free one comes from the start of the heap's top and grows
  // the heap by itself and PAD; malloc writes only the headers at its two ends. Cut
  // back to end at the first 2 MiB boundary, it gives the rest back to the top, which
  // then starts on that boundary (a block of n bytes at p spans p - 16 to p + n + 8,
  // rounded up to 16). Its own pages stay untouched. The advice must come before the
  // first write to a 2 MiB page: where a 4 KiB page is mapped, the rest stay small, so
  // the one holding the block's old end (written already) is left out.
  // Only a block that grew the brk heap (starting in its old top, at or below the old
  // sbrk(0), ending below the new) is known to lie there: one from an mmap, where brk
  // could not grow, says nothing about the pages around it.
  uintptr_t hp = HUGE_PAGE, old_end = (uintptr_t)sbrk(0);
  char *p = malloc(PAD - hp);
  if (!p)
    return;
  uintptr_t new_end = (uintptr_t)sbrk(0);
  if (new_end <= old_end || (uintptr_t)p > old_end || (uintptr_t)p + PAD - hp > new_end) {
    free(p);
    return;
  }
  uintptr_t boundary = ((uintptr_t)p + 64 + hp - 1) & ~(hp - 1), written = ((uintptr_t)p + PAD - hp - 16) & ~(hp - 1),
            end = new_end & ~(hp - 1);
  if (written > boundary)
    madvise((void *)boundary, written - boundary, MADV_HUGEPAGE);
  if (end > written + hp)
    madvise((void *)(written + hp), end - written - hp, MADV_HUGEPAGE);
  below_boundary = realloc(p, boundary - (uintptr_t)p + 8);
}
#else
void heap_prepare(void) {}
#endif
