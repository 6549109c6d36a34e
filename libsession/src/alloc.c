/* Allocation functions with a fault-injection hook for tests (see alloc.h). */
#include "alloc.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

enum { MODE_OFF, MODE_COUNT, MODE_FAIL };

/* Comfortably more than the ~200 allocation sites of the library; extra sites are not recorded. */
#define SITE_SLOTS 2048u

/* REACHED: allocated while armed; COUNTED: allocated while counting; FAILED: failure injected. */
enum { SITE_REACHED = 1u, SITE_FAILED = 2u, SITE_COUNTED = 4u };

typedef struct site {
    _Atomic uint64_t key;       /* (hash of file << 32) | line; 0 = free slot */
    _Atomic(const char *) file; /* set by the thread that claimed the slot, for reports */
    atomic_uint flags;
} site_t;

static atomic_int g_mode = MODE_OFF;
static _Atomic uint64_t g_count;
static _Atomic uint64_t g_fail_at;
static atomic_bool g_persistent; /* fail every allocation from g_fail_at on, not only that one */
static atomic_bool g_injected;
static _Atomic(const char *) g_injected_file;
static atomic_int g_injected_line;
static site_t g_sites[SITE_SLOTS];

static uint64_t site_key(const char *file, int line) {
    uint32_t h = 2166136261u; /* FNV-1a over the file name, not its address: stable across TUs */

    for (const char *p = file; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    return ((uint64_t)h << 32) | (uint32_t)line | 1u << 31; /* never 0 */
}

static void site_mark(const char *file, int line, unsigned flag) {
    uint64_t key = site_key(file, line);

    for (uint32_t i = 0; i < SITE_SLOTS; i++) {
        site_t *s = &g_sites[(key * 0x9E3779B97F4A7C15u >> 40 ^ i) % SITE_SLOTS];
        uint64_t expected = 0;

        if (atomic_load(&s->key) == key ||
            atomic_compare_exchange_strong(&s->key, &expected, key) || expected == key) {
            if (!atomic_load(&s->file))
                atomic_store(&s->file, file);
            atomic_fetch_or(&s->flags, flag);
            return;
        }
    }
}

/* The slow path, taken only while a test has armed the hook. */
static __attribute__((noinline)) bool armed_should_fail(const char *file, int line) {
    int mode = atomic_load(&g_mode);
    uint64_t n;

    if (mode == MODE_OFF)
        return false;
    n = atomic_fetch_add(&g_count, 1) + 1;
    site_mark(file, line, mode == MODE_COUNT ? SITE_REACHED | SITE_COUNTED : SITE_REACHED);
    if (mode == MODE_FAIL && (n == atomic_load(&g_fail_at) ||
                              (atomic_load(&g_persistent) && n > atomic_load(&g_fail_at)))) {
        /* The report names the first failure, where the run began to go wrong. */
        if (!atomic_load(&g_injected_file)) {
            atomic_store(&g_injected_line, line);
            atomic_store(&g_injected_file, file);
        }
        atomic_store(&g_injected, true);
        site_mark(file, line, SITE_FAILED);
        return true;
    }
    return false;
}

/* An injected failure sets errno to ENOMEM, as malloc does when memory runs out. */
static inline bool should_fail(const char *file, int line) {
    if (__builtin_expect(atomic_load_explicit(&g_mode, memory_order_relaxed) == MODE_OFF, 1))
        return false;
    if (!armed_should_fail(file, line))
        return false;
    errno = ENOMEM;
    return true;
}

void *ses__malloc_at(size_t size, const char *file, int line) {
    return should_fail(file, line) ? NULL : malloc(size);
}

void *ses__calloc_at(size_t count, size_t size, const char *file, int line) {
    return should_fail(file, line) ? NULL : calloc(count, size);
}

void *ses__realloc_at(void *ptr, size_t size, const char *file, int line) {
    return should_fail(file, line) ? NULL : realloc(ptr, size);
}

char *ses__strdup_at(const char *s, const char *file, int line) {
    if (!s)
        return NULL;
    return should_fail(file, line) ? NULL : strdup(s);
}

char *ses__strndup_at(const char *s, size_t n, const char *file, int line) {
    if (!s)
        return NULL;
    return should_fail(file, line) ? NULL : strndup(s, n);
}

int ses__memalign_at(void **out_ptr, size_t alignment, size_t size, const char *file, int line) {
    int rc;

    *out_ptr = NULL;
    if (should_fail(file, line))
        return ENOMEM;
    rc = posix_memalign(out_ptr, alignment, size);
    if (rc != 0)
        *out_ptr = NULL;
    return rc;
}

void ses__alloc_count_start(void) {
    atomic_store(&g_mode, MODE_OFF);
    for (uint32_t i = 0; i < SITE_SLOTS; i++) {
        atomic_store(&g_sites[i].key, 0);
        atomic_store(&g_sites[i].file, NULL);
        atomic_store(&g_sites[i].flags, 0);
    }
    atomic_store(&g_count, 0);
    atomic_store(&g_injected, false);
    atomic_store(&g_mode, MODE_COUNT);
}

static void arm(uint64_t n, bool persistent) {
    atomic_store(&g_mode, MODE_OFF);
    atomic_store(&g_count, 0);
    atomic_store(&g_fail_at, n);
    atomic_store(&g_persistent, persistent);
    atomic_store(&g_injected_file, NULL);
    atomic_store(&g_injected, false);
    atomic_store(&g_mode, MODE_FAIL);
}

void ses__alloc_fail_after(uint64_t n) {
    arm(n, false);
}

void ses__alloc_fail_from(uint64_t n) {
    arm(n, true);
}

void ses__alloc_stop(void) {
    atomic_store(&g_mode, MODE_OFF);
}

uint64_t ses__alloc_count(void) {
    return atomic_load(&g_count);
}

bool ses__alloc_injected(void) {
    return atomic_load(&g_injected);
}

const char *ses__alloc_injected_site(int *out_line) {
    if (!atomic_load(&g_injected)) {
        *out_line = 0;
        return NULL;
    }
    *out_line = atomic_load(&g_injected_line);
    return atomic_load(&g_injected_file);
}

static size_t sites_with(unsigned flag) {
    size_t n = 0;

    for (uint32_t i = 0; i < SITE_SLOTS; i++)
        n += (atomic_load(&g_sites[i].flags) & flag) != 0;
    return n;
}

size_t ses__alloc_sites_reached(void) {
    return sites_with(SITE_REACHED);
}

size_t ses__alloc_sites_counted(void) {
    return sites_with(SITE_COUNTED);
}

size_t ses__alloc_sites_failed(void) {
    return sites_with(SITE_FAILED);
}

size_t ses__alloc_sites_counted_failed(void) {
    size_t n = 0;

    for (uint32_t i = 0; i < SITE_SLOTS; i++)
        n += (atomic_load(&g_sites[i].flags) & (SITE_COUNTED | SITE_FAILED)) ==
             (SITE_COUNTED | SITE_FAILED);
    return n;
}

void ses__alloc_sites_unfailed(void (*fn)(const char *file, int line, void *user), void *user) {
    for (uint32_t i = 0; i < SITE_SLOTS; i++) {
        unsigned flags = atomic_load(&g_sites[i].flags);
        const char *file = atomic_load(&g_sites[i].file);

        if ((flags & SITE_REACHED) && !(flags & SITE_FAILED) && file)
            fn(file, (int)(uint32_t)(atomic_load(&g_sites[i].key) & 0x7fffffffu), user);
    }
}
