// runtime/sanitized.h: SANITIZED is 1 in a build with AddressSanitizer or
// MemorySanitizer (gcc's __SANITIZE_ADDRESS__, clang's __has_feature), else 0. The
// storage cache is compiled out there (runtime/storage.c), so that the sanitizer sees
// each block freed; the runtime's unit test leaves the cache's tests out by the same test.
#ifndef TDSL_RUNTIME_SANITIZED_H
#define TDSL_RUNTIME_SANITIZED_H

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

#endif
