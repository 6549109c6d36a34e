/*
 * Internal allocation functions: every heap allocation in libsession goes through these, so that
 * a test can make the Nth allocation fail (SQLite-style fault injection, tests/unit/
 * alloc_failure_test.c) and count the distinct allocation sites it reached.
 *
 * Each macro passes its call site (__FILE__, __LINE__) to the matching *_at function. They behave
 * like the C library functions, with one difference: ses__strdup(NULL) returns NULL. Memory they
 * return is released with free(). When no test has armed the hook, the only extra cost is one
 * relaxed atomic load and a branch that is never taken.
 * Thread-safety: all functions here may be called from any thread.
 */
#ifndef SES_ALLOC_H
#define SES_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void *ses__malloc_at(size_t size, const char *file, int line);
void *ses__calloc_at(size_t count, size_t size, const char *file, int line);
void *ses__realloc_at(void *ptr, size_t size, const char *file, int line);
char *ses__strdup_at(const char *s, const char *file, int line);
char *ses__strndup_at(const char *s, size_t n, const char *file, int line);
/** posix_memalign through the hook: returns 0 or ENOMEM (then *out_ptr is NULL). */
int ses__memalign_at(void **out_ptr, size_t alignment, size_t size, const char *file, int line);

#define ses__malloc(size) ses__malloc_at((size), __FILE__, __LINE__)
#define ses__calloc(count, size) ses__calloc_at((count), (size), __FILE__, __LINE__)
#define ses__realloc(ptr, size) ses__realloc_at((ptr), (size), __FILE__, __LINE__)
#define ses__strdup(s) ses__strdup_at((s), __FILE__, __LINE__)
#define ses__strndup(s, n) ses__strndup_at((s), (n), __FILE__, __LINE__)
#define ses__memalign(out_ptr, alignment, size) \
    ses__memalign_at((out_ptr), (alignment), (size), __FILE__, __LINE__)

/*
 * The test hook. Not for production use; nothing in the library calls these.
 *
 * ses__alloc_count_start() resets the counters and the record of sites, then counts every
 * allocation (none fails). ses__alloc_fail_after(n) resets the counter and makes the nth
 * allocation from now fail once (n >= 1); later allocations succeed again, as they would after a
 * transient shortage. ses__alloc_fail_from(n) makes the nth and every later one fail, so that
 * cleanup and error paths run out of memory too. ses__alloc_stop() disarms the hook. Sites reached and sites failed are
 * remembered across calls until ses__alloc_count_start().
 */
void ses__alloc_count_start(void);
void ses__alloc_fail_after(uint64_t n);
void ses__alloc_fail_from(uint64_t n);
void ses__alloc_stop(void);
/** Allocations made through the hook since the last start or fail_after. */
uint64_t ses__alloc_count(void);
/** Whether an allocation has been failed since the last fail_after. */
bool ses__alloc_injected(void);
/** The file and line of the allocation that was failed, or NULL (line 0) when none was. */
const char *ses__alloc_injected_site(int *out_line);
/** Distinct sites (file:line) that allocated while the hook was armed (counting or failing). */
size_t ses__alloc_sites_reached(void);
/** Distinct sites that allocated while counting (a run without failures). */
size_t ses__alloc_sites_counted(void);
/** Distinct sites at which a failure was injected. */
size_t ses__alloc_sites_failed(void);
/** Distinct sites that allocated while counting and at which a failure was injected later. */
size_t ses__alloc_sites_counted_failed(void);
/**
 * Calls @p fn for each site reached but never failed (for reports of what a test missed).
 * @p fn must not allocate through the hook.
 */
void ses__alloc_sites_unfailed(void (*fn)(const char *file, int line, void *user), void *user);

#endif /* SES_ALLOC_H */
