/*
 * The GEMM library: OpenBLAS, loaded at run time with its kernels chosen by the CPU's ISA.
 *
 * OpenBLAS built with DYNAMIC_ARCH (Debian's) picks its kernels once, in its load-time
 * initializer, from a table of CPU models: an AVX-512 CPU it does not know (an AMD EPYC, some
 * Xeon VMs) gets Haswell or even Prescott (SSE3) kernels, 2-5x slower. It honours
 * OPENBLAS_CORETYPE, but reads it only in that initializer, so the module does not link it: at
 * the driver's first open in the process it reads cpuid (and XGETBV, that the OS saves the
 * vector state), decides the core type, sets OPENBLAS_CORETYPE, dlopens libopenblas.so.0, puts
 * the variable back as it was, and checks with openblas_get_corename() that it got what it asked
 * for. The choice, in order:
 *
 *   1. option driver.cpu.gemm_kernels (env SESSION_DRIVER_CPU_GEMM_KERNELS): that core, which
 *      must be one this file knows for OpenBLAS 0.3.21 and one the CPU can run;
 *   2. OPENBLAS_CORETYPE set by the user: left as it is, OpenBLAS reads it;
 *   3. AVX-512 F+BW+VL+DQ: SkylakeX, or Cooperlake with AVX512_BF16; AVX2+FMA: Haswell;
 *   4. otherwise OpenBLAS's own choice.
 *
 * If libopenblas is already in the process (loaded by the application, numpy, ...), it has
 * chosen and its choice stands; the description says so.
 *
 * f32 GEMMs go to oneDNN's sgemm instead when libdnnl loads (option driver.cpu.gemm, env
 * SESSION_DRIVER_CPU_GEMM: auto, onednn or openblas). oneDNN dispatches its JIT kernels on the
 * ISA at run time, and measured here (Xeon with AVX-512, one thread) it is 1.1-1.3x OpenBLAS
 * 0.3.21's SkylakeX kernels on the bench models' shapes (64x256x784: 0.149 against 0.199 ms;
 * 128x4096x4096: 28.8 against 32.4 ms); BLIS 0.9 (Debian's libblis4) was 0.5x. It also shares
 * the pool: a large GEMM is cut into blocks of C rows or columns, each block one single-threaded
 * sgemm on a pool thread (the thread's OpenMP team size set to 1 first), so no second set of
 * threads spins beside the pool's. f64 stays on OpenBLAS (oneDNN has no dgemm).
 *
 * This is the driver's one piece of process-wide mutable state, since OpenBLAS itself is
 * process-wide: the function table is written once under a mutex, before the first open
 * returns, and only read after. The library is never closed: OpenBLAS's threads cannot be
 * stopped safely, and unloading it would leave the table dangling.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr, RTLD_NOLOAD, strdup, strncasecmp under -std=c11 */
#endif

#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

/* Only for its types (enums, blasint); the functions come through dlsym. */
#include <cblas.h>

#include "cpu_dnnl.h"
#include "cpu_internal.h"

/* The soname Debian's alternatives point at the selected variant (pthread, openmp, serial). */
#define CPU__OPENBLAS_SONAME "libopenblas.so.0"

/* ---------------------------------------------------------------------------------------------
 * What the CPU can do
 * ------------------------------------------------------------------------------------------- */

enum {
    CPU__ISA_SSE3 = 1u << 0,
    CPU__ISA_SSSE3 = 1u << 1,
    CPU__ISA_SSE41 = 1u << 2,
    CPU__ISA_SSE42 = 1u << 3,
    CPU__ISA_AVX = 1u << 4,
    CPU__ISA_AVX2 = 1u << 5,
    CPU__ISA_FMA = 1u << 6,
    CPU__ISA_AVX512F = 1u << 7,
    CPU__ISA_AVX512BW = 1u << 8,
    CPU__ISA_AVX512VL = 1u << 9,
    CPU__ISA_AVX512DQ = 1u << 10,
    CPU__ISA_AVX512CD = 1u << 11,
    CPU__ISA_AVX512_BF16 = 1u << 12,
    CPU__ISA_AMX = 1u << 13,
};

/* The names printed in the description, in the order of the bits above. */
static const char *const cpu_isa_names[] = {
    "sse3",     "ssse3",    "sse4_1",   "sse4_2",   "avx",         "avx2", "fma",
    "avx512f",  "avx512bw", "avx512vl", "avx512dq", "avx512cd",    "avx512_bf16",
    "amx",
};

#define CPU__ISA_AVX512 \
    (CPU__ISA_AVX512F | CPU__ISA_AVX512BW | CPU__ISA_AVX512VL | CPU__ISA_AVX512DQ)

#if defined(__x86_64__) || defined(__i386__)
/* XCR0, the state components the OS saves on a context switch. */
static uint64_t cpu__xgetbv0(void) {
    uint32_t lo, hi;

    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}
#endif

/*
 * The ISA extensions the CPU reports and the OS enables: cpuid leaf 1 and leaf 7 subleaves 0
 * and 1, with XGETBV for the AVX (XMM|YMM), AVX-512 (opmask|ZMM) and AMX (tile) state. A CPU
 * that has AVX-512 under an OS (or hypervisor) that does not save ZMM registers cannot use it.
 */
static uint32_t cpu__detect_isa(void) {
    uint32_t isa = 0;
#if defined(__x86_64__) || defined(__i386__)
    unsigned int a, b, c, d;
    unsigned int max_leaf = __get_cpuid_max(0, NULL);
    uint64_t xcr0 = 0;

    if (max_leaf < 1 || !__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    if (c & bit_SSE3)
        isa |= CPU__ISA_SSE3;
    if (c & bit_SSSE3)
        isa |= CPU__ISA_SSSE3;
    if (c & bit_SSE4_1)
        isa |= CPU__ISA_SSE41;
    if (c & bit_SSE4_2)
        isa |= CPU__ISA_SSE42;
    if (c & bit_OSXSAVE)
        xcr0 = cpu__xgetbv0();
    const int os_avx = (xcr0 & 0x6) == 0x6;
    const int os_avx512 = os_avx && (xcr0 & 0xe0) == 0xe0;
    const int os_amx = (xcr0 & 0x60000) == 0x60000;
    if (!os_avx)
        return isa;
    if (c & bit_AVX)
        isa |= CPU__ISA_AVX;
    if (c & bit_FMA)
        isa |= CPU__ISA_FMA;
    if (max_leaf < 7 || !__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return isa;
    const unsigned int max_sub = a;
    if (b & bit_AVX2)
        isa |= CPU__ISA_AVX2;
    if (os_avx512) {
        if (b & bit_AVX512F)
            isa |= CPU__ISA_AVX512F;
        if (b & bit_AVX512BW)
            isa |= CPU__ISA_AVX512BW;
        if (b & bit_AVX512VL)
            isa |= CPU__ISA_AVX512VL;
        if (b & bit_AVX512DQ)
            isa |= CPU__ISA_AVX512DQ;
        if (b & bit_AVX512CD)
            isa |= CPU__ISA_AVX512CD;
    }
    /* AMX-TILE is leaf 7 EDX bit 24. */
    if (os_amx && (d & (1u << 24)))
        isa |= CPU__ISA_AMX;
    /* AVX512_BF16 is leaf 7 subleaf 1 EAX bit 5. */
    if (os_avx512 && max_sub >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5)))
        isa |= CPU__ISA_AVX512_BF16;
#endif
    return isa;
}

/* The names of the extensions in @p isa from bit @p from on, space-separated. */
static size_t cpu__format_isa_from(uint32_t isa, uint32_t from, char *out, size_t size) {
    size_t used = 0;

    out[0] = '\0';
    for (size_t i = 0; i < sizeof cpu_isa_names / sizeof cpu_isa_names[0]; i++) {
        uint32_t bit = 1u << i;
        if (bit < from || !(isa & bit))
            continue;
        int n = snprintf(out + used, size - used, "%s%s", used ? " " : "", cpu_isa_names[i]);
        if (n < 0 || (size_t)n >= size - used)
            break;
        used += (size_t)n;
    }
    return used;
}

/* Every extension in @p isa: "sse4_2 avx avx2". */
static void cpu__format_isa_all(uint32_t isa, char *out, size_t size) {
    cpu__format_isa_from(isa, CPU__ISA_SSE3, out, size);
}

/* "avx2 fma avx512f ...": the extensions from AVX2 on, or the SSE ones when there is no AVX. */
static void cpu__format_isa(uint32_t isa, char *out, size_t size) {
    const uint32_t from = (isa & CPU__ISA_AVX) ? CPU__ISA_AVX2 : CPU__ISA_SSE3;

    if (cpu__format_isa_from(isa, from, out, size) == 0)
        snprintf(out, size, "no SIMD extension beyond SSE2");
}

/* ---------------------------------------------------------------------------------------------
 * The core types of OpenBLAS 0.3.21 this driver can force
 * ------------------------------------------------------------------------------------------- */

typedef struct cpu__core {
    const char *name;  /* as OPENBLAS_CORETYPE takes it and openblas_get_corename() says it */
    const char *label; /* the vector ISA its kernels use */
    uint32_t needs;    /* what the CPU must have to run them */
} cpu__core_t;

/*
 * The x86-64 cores of OpenBLAS 0.3.21's DYNAMIC_ARCH that take the name they were forced with
 * (older names such as Katmai map to Prescott, SapphireRapids is unknown to 0.3.21) and whose
 * needs cpuid can tell. The AMD cores with FMA4 (Bulldozer and its successors) are left out.
 */
static const cpu__core_t cpu_cores[] = {
    {"Prescott", "SSE3", CPU__ISA_SSE3},
    {"Core2", "SSSE3", CPU__ISA_SSE3 | CPU__ISA_SSSE3},
    {"Penryn", "SSE4.1", CPU__ISA_SSE3 | CPU__ISA_SSSE3 | CPU__ISA_SSE41},
    {"Nehalem", "SSE4.2", CPU__ISA_SSE3 | CPU__ISA_SSSE3 | CPU__ISA_SSE41 | CPU__ISA_SSE42},
    {"Sandybridge", "AVX", CPU__ISA_AVX},
    {"Haswell", "AVX2", CPU__ISA_AVX | CPU__ISA_AVX2 | CPU__ISA_FMA},
    {"Zen", "AVX2", CPU__ISA_AVX | CPU__ISA_AVX2 | CPU__ISA_FMA},
    {"SkylakeX", "AVX-512", CPU__ISA_AVX2 | CPU__ISA_FMA | CPU__ISA_AVX512 | CPU__ISA_AVX512CD},
    {"Cooperlake", "AVX-512",
     CPU__ISA_AVX2 | CPU__ISA_FMA | CPU__ISA_AVX512 | CPU__ISA_AVX512CD | CPU__ISA_AVX512_BF16},
};

#define CPU__N_CORES (sizeof cpu_cores / sizeof cpu_cores[0])

/* The entry named @p name (any case), or NULL. */
static const cpu__core_t *cpu__find_core(const char *name) {
    for (size_t i = 0; i < CPU__N_CORES; i++)
        if (strcasecmp(cpu_cores[i].name, name) == 0)
            return &cpu_cores[i];
    return NULL;
}

/* The core the ISA calls for, or NULL to leave the choice to OpenBLAS. */
static const cpu__core_t *cpu__core_for_isa(uint32_t isa) {
    if ((isa & CPU__ISA_AVX512) == CPU__ISA_AVX512)
        return cpu__find_core((isa & CPU__ISA_AVX512_BF16) ? "Cooperlake" : "SkylakeX");
    if ((isa & (CPU__ISA_AVX2 | CPU__ISA_FMA)) == (CPU__ISA_AVX2 | CPU__ISA_FMA))
        return cpu__find_core("Haswell");
    return NULL;
}

/* "Prescott, Core2, ...", the names the option takes. */
static void cpu__format_core_names(char *out, size_t size) {
    size_t used = 0;

    out[0] = '\0';
    for (size_t i = 0; i < CPU__N_CORES; i++) {
        int n = snprintf(out + used, size - used, "%s%s", i ? ", " : "", cpu_cores[i].name);
        if (n < 0 || (size_t)n >= size - used)
            break;
        used += (size_t)n;
    }
}

/* ---------------------------------------------------------------------------------------------
 * The library, once per process
 * ------------------------------------------------------------------------------------------- */

typedef void (*cpu__sgemm_fn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, blasint,
                              blasint, blasint, float, const float *, blasint, const float *,
                              blasint, float, float *, blasint);
typedef void (*cpu__dgemm_fn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, blasint,
                              blasint, blasint, double, const double *, blasint, const double *,
                              blasint, double, double *, blasint);
typedef char *(*cpu__string_fn)(void);
typedef void (*cpu__set_threads_fn)(int);

typedef struct cpu__openblas {
    int loaded; /* the fields below are set and never change again */
    cpu__sgemm_fn sgemm;
    cpu__dgemm_fn dgemm;
    cpu__string_fn get_corename;
    cpu__string_fn get_config;
    cpu__set_threads_fn set_num_threads;
    uint32_t isa;                 /* what cpu__detect_isa found */
    char path[256];               /* the file dlopen found */
    char version[32];             /* "0.3.21", from openblas_get_config() */
    char corename[32];            /* what openblas_get_corename() said after loading */
    char how[160];                /* how the kernels were chosen, for the description */
    uint32_t threads;             /* the pool's count, cpu__gemm_set_threads's; 0: none yet */
    uint32_t single;              /* cpu__gemm_single_threaded(1) calls not yet undone */
} cpu__openblas_t;

static pthread_mutex_t cpu_openblas_lock = PTHREAD_MUTEX_INITIALIZER;
static cpu__openblas_t cpu_openblas;

/* dlsym into a function pointer: POSIX allows the conversion, ISO C does not, hence memcpy. */
static int cpu__sym(void *lib, const char *name, void *out_fn, size_t fn_size,
                    const char **out_missing) {
    void *sym = dlsym(lib, name);

    if (!sym) {
        *out_missing = name;
        return 0;
    }
    memcpy(out_fn, &sym, fn_size);
    return 1;
}

#define CPU__SYM(lib, name, field, missing) \
    cpu__sym((lib), (name), &(field), sizeof(field), (missing))

/*
 * Loads libopenblas with OPENBLAS_CORETYPE set to @p core (NULL: the environment as it is) and
 * fills cpu_openblas. Called with cpu_openblas_lock held. setenv is not thread-safe against a
 * getenv on another thread; the variable is changed only for the duration of the dlopen.
 */
static int32_t cpu__openblas_load(const ses_drv_host_t *host, ses_drv_host_ctx_t *ctx,
                                  const cpu__core_t *core, int already_loaded) {
    cpu__openblas_t *o = &cpu_openblas;
    char *saved = NULL;
    int had = 0;
    void *lib;
    const char *missing = NULL;

    if (core && !already_loaded) {
        const char *old = getenv("OPENBLAS_CORETYPE");
        had = old != NULL;
        if (had && !(saved = strdup(old)))
            return cpu__fail(host, ctx, SES_DRV_OUT_OF_MEMORY,
                             "open: cannot copy OPENBLAS_CORETYPE to load the GEMM library");
        setenv("OPENBLAS_CORETYPE", core->name, 1);
    }
    lib = dlopen(CPU__OPENBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (core && !already_loaded) {
        if (had)
            setenv("OPENBLAS_CORETYPE", saved, 1);
        else
            unsetenv("OPENBLAS_CORETYPE");
        free(saved);
    }
    if (!lib)
        return cpu__fail(host, ctx, SES_DRV_UNAVAILABLE,
                         "open: cannot load the GEMM library %s (OpenBLAS): %s; install "
                         "libopenblas0-pthread (Debian, Ubuntu) or put the directory holding %s "
                         "in LD_LIBRARY_PATH",
                         CPU__OPENBLAS_SONAME, dlerror(), CPU__OPENBLAS_SONAME);

    cpu__openblas_t t;
    memset(&t, 0, sizeof t);
    if (!CPU__SYM(lib, "cblas_sgemm", t.sgemm, &missing) ||
        !CPU__SYM(lib, "cblas_dgemm", t.dgemm, &missing) ||
        !CPU__SYM(lib, "openblas_get_corename", t.get_corename, &missing) ||
        !CPU__SYM(lib, "openblas_get_config", t.get_config, &missing) ||
        !CPU__SYM(lib, "openblas_set_num_threads", t.set_num_threads, &missing)) {
        Dl_info info;
        const char *where = CPU__OPENBLAS_SONAME;
        void *probe = dlsym(lib, "cblas_sgemm");

        /* Name the file dlopen found: it may be a reference BLAS behind the same soname. Never
         * closed: another user in the process may share it. */
        if (probe && dladdr(probe, &info) && info.dli_fname)
            where = info.dli_fname;
        return cpu__fail(host, ctx, SES_DRV_UNAVAILABLE,
                         "open: the GEMM library %s has no %s, so it is not OpenBLAS; install "
                         "libopenblas0-pthread and select it with update-alternatives --config "
                         "libopenblas.so.0-<arch>",
                         where, missing);
    }

    Dl_info info;
    void *sgemm_addr;
    memcpy(&sgemm_addr, &t.sgemm, sizeof sgemm_addr);
    snprintf(t.path, sizeof t.path, "%s", CPU__OPENBLAS_SONAME);
    if (dladdr(sgemm_addr, &info) && info.dli_fname)
        snprintf(t.path, sizeof t.path, "%s", info.dli_fname);
    /* "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ...": the second word is the version. */
    const char *config = t.get_config();
    const char *corename = t.get_corename();
    snprintf(t.version, sizeof t.version, "%s", "?");
    if (config && strncmp(config, "OpenBLAS ", 9) == 0)
        snprintf(t.version, sizeof t.version, "%.*s", (int)strcspn(config + 9, " "), config + 9);
    snprintf(t.corename, sizeof t.corename, "%s", corename ? corename : "unknown");
    t.isa = o->isa;
    t.loaded = 1;
    *o = t;
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * oneDNN's sgemm, when the library is there
 * ------------------------------------------------------------------------------------------- */

/* oneDNN 2.x and 3.x: row-major, dims as int64_t, a dnnl_status_t (an int enum) returned. */
typedef int (*cpu__dnnl_sgemm_fn)(char, char, int64_t, int64_t, int64_t, float, const float *,
                                  int64_t, const float *, int64_t, float, float *, int64_t);
typedef struct cpu__dnnl_version {
    int major, minor, patch; /* the head of dnnl_version_t */
} cpu__dnnl_version_t;
typedef const cpu__dnnl_version_t *(*cpu__dnnl_version_fn)(void);

typedef struct cpu__onednn {
    int tried;          /* a load was attempted; the fields below are final */
    int loaded;
    cpu__dnnl_sgemm_fn sgemm;
    cpu__set_threads_fn omp_set_num_threads; /* from the OpenMP runtime libdnnl links */
    int (*omp_get_max_threads)(void);
    char version[32];   /* "2.6.3" */
    char why[256];      /* why it did not load */
} cpu__onednn_t;

static cpu__onednn_t cpu_onednn; /* under cpu_openblas_lock until tried; read-only after */

/* Takes oneDNN's sgemm from the library cpu_dnnl.c loads (once per process, with the OpenMP
 * settings it chose), with cpu_openblas_lock held. */
static void cpu__onednn_load(void) {
    cpu__onednn_t t;
    void *lib;
    const char *missing = NULL;
    cpu__dnnl_version_fn version = NULL;

    if (cpu_onednn.tried)
        return;
    memset(&t, 0, sizeof t);
    t.tried = 1;
    if (cpu__dnnl_load(t.why, sizeof t.why) != SES_DRV_OK || !(lib = cpu__dnnl_handle())) {
        if (!t.why[0])
            snprintf(t.why, sizeof t.why, "oneDNN is not loaded");
    } else if (!CPU__SYM(lib, "dnnl_sgemm", t.sgemm, &missing) ||
               !CPU__SYM(lib, "dnnl_version", version, &missing) ||
               !CPU__SYM(lib, "omp_set_num_threads", t.omp_set_num_threads, &missing) ||
               !CPU__SYM(lib, "omp_get_max_threads", t.omp_get_max_threads, &missing)) {
        /* A oneDNN built for TBB or its own threadpool has no OpenMP to size: not used. */
        snprintf(t.why, sizeof t.why, "oneDNN has no %s (not an OpenMP build of 2.x or 3.x)",
                 missing);
        t.sgemm = NULL;
    } else {
        const cpu__dnnl_version_t *v = version();
        snprintf(t.version, sizeof t.version, "%d.%d.%d", v ? v->major : 0, v ? v->minor : 0,
                 v ? v->patch : 0);
        t.loaded = 1;
    }
    cpu_onednn = t;
}

int32_t cpu__gemm_open(const ses_drv_host_t *host, ses_drv_host_ctx_t *ctx, char *out_desc,
                       size_t desc_size, int *out_onednn) {
    char library[32];
    char forced_name[64];
    char names[256];
    char detected[160];
    const cpu__core_t *forced = NULL;
    int32_t st;

    out_desc[0] = '\0';
    *out_onednn = 0;
    if ((st = cpu__read_option(host, ctx, NULL, CPU__GEMM_KERNELS_OPTION,
                               "an OpenBLAS core name such as SkylakeX or Haswell", forced_name,
                               sizeof forced_name)) != SES_DRV_OK ||
        (st = cpu__read_option(host, ctx, NULL, CPU__GEMM_OPTION, "auto, onednn or openblas",
                               library, sizeof library)) != SES_DRV_OK)
        return st;
    if (library[0] != '\0' && strcmp(library, "auto") != 0 && strcmp(library, "onednn") != 0 &&
        strcmp(library, "openblas") != 0)
        return cpu__fail(host, ctx, SES_DRV_INVALID_ARGUMENT,
                         "open: option %s is \"%s\"; expected auto (oneDNN for f32 where it "
                         "loads, else OpenBLAS), onednn or openblas",
                         CPU__GEMM_OPTION, library);

    pthread_mutex_lock(&cpu_openblas_lock);
    cpu__openblas_t *o = &cpu_openblas;
    if (!o->loaded)
        o->isa = cpu__detect_isa();
    cpu__format_isa(o->isa, detected, sizeof detected);

    if (forced_name[0] != '\0') {
        forced = cpu__find_core(forced_name);
        if (!forced) {
            cpu__format_core_names(names, sizeof names);
            st = cpu__fail(host, ctx, SES_DRV_INVALID_ARGUMENT,
                           "open: option %s is \"%s\", which is not an OpenBLAS 0.3.21 core this "
                           "driver can check; known are %s (this CPU: %s)",
                           CPU__GEMM_KERNELS_OPTION, forced_name, names, detected);
            goto done;
        }
        uint32_t lacking = forced->needs & ~o->isa;
        if (lacking) {
            char lack[160];
            cpu__format_isa_all(lacking, lack, sizeof lack);
            st = cpu__fail(host, ctx, SES_DRV_INCOMPATIBLE,
                           "open: option %s is %s, whose %s kernels need %s, which this CPU "
                           "(or its OS) lacks; this CPU has: %s",
                           CPU__GEMM_KERNELS_OPTION, forced->name, forced->label, lack, detected);
            goto done;
        }
    }

    if (!o->loaded) {
        const char *user = getenv("OPENBLAS_CORETYPE");
        const cpu__core_t *want = forced ? forced : (user ? NULL : cpu__core_for_isa(o->isa));
        const int already = dlopen(CPU__OPENBLAS_SONAME, RTLD_NOW | RTLD_NOLOAD) != NULL;

        /* RTLD_NOLOAD took a reference; the library stays loaded for good anyway. */
        if ((st = cpu__openblas_load(host, ctx, want, already)) != SES_DRV_OK)
            goto done;
        if (already)
            snprintf(o->how, sizeof o->how,
                     "OpenBLAS was loaded before the driver and chose for itself; its choice "
                     "stands");
        else if (forced)
            snprintf(o->how, sizeof o->how, "forced by %s", CPU__GEMM_KERNELS_OPTION);
        else if (user)
            snprintf(o->how, sizeof o->how, "OPENBLAS_CORETYPE=%.64s, set by the user", user);
        else if (!want)
            snprintf(o->how, sizeof o->how, "OpenBLAS's own choice");
        else if (strcasecmp(o->corename, want->name) != 0)
            snprintf(o->how, sizeof o->how, "asked for %s, OpenBLAS chose for itself",
                     want->name);
        else
            o->how[0] = '\0';
    }

    /* The kernels in use must be the ones forced, whenever the option is set. */
    if (forced && strcasecmp(o->corename, forced->name) != 0) {
        st = cpu__fail(host, ctx, SES_DRV_FAILED_PRECONDITION,
                       "open: option %s is %s, but OpenBLAS %s (%s) runs %s kernels (%s); "
                       "OpenBLAS chooses once per process, when it is loaded: set the option "
                       "before anything in the process loads it",
                       CPU__GEMM_KERNELS_OPTION, forced->name, o->version, o->path, o->corename,
                       o->how[0] ? o->how : "chosen at load");
        goto done;
    }

    if (strcmp(library, "openblas") != 0) {
        cpu__onednn_load();
        if (!cpu_onednn.loaded && strcmp(library, "onednn") == 0) {
            st = cpu__fail(host, ctx, SES_DRV_UNAVAILABLE,
                           "open: option %s is onednn, but %s; install libdnnl2 (Debian 12) or "
                           "set the option to auto or openblas",
                           CPU__GEMM_OPTION, cpu_onednn.why);
            goto done;
        }
        *out_onednn = cpu_onednn.loaded;
    }

    const cpu__core_t *in_use = cpu__find_core(o->corename);
    int used = 0;
    if (*out_onednn)
        used = snprintf(
            out_desc, desc_size,
            "gemm: onednn %s (f32: sgemm on the pool's threads, matmul for constant weights), ",
            cpu_onednn.version);
    else
        used = snprintf(out_desc, desc_size, "gemm: ");
    if (used < 0 || (size_t)used >= desc_size)
        used = 0;
    snprintf(out_desc + used, desc_size - (size_t)used,
             "openblas %s, %s kernels (%s%s%s%sdetected %s)", o->version, o->corename,
             in_use ? in_use->label : "", in_use ? "; " : "", o->how, o->how[0] ? "; " : "",
             detected);
    st = SES_DRV_OK;

done:
    pthread_mutex_unlock(&cpu_openblas_lock);
    return st;
}

void cpu__gemm_set_threads(uint32_t threads) {
    /* Loaded by every successful open, and a device is only opened from an open driver. The
     * count is set only when it changes: OpenBLAS does not expect it to change under a GEMM
     * running on another thread, and devices of one size (the usual case) never change it. */
    pthread_mutex_lock(&cpu_openblas_lock);
    if (cpu_openblas.loaded && cpu_openblas.threads != threads) {
        /* Inside a single-threaded stretch the count is only recorded, for its end. */
        if (!cpu_openblas.single)
            cpu_openblas.set_num_threads((int)threads);
        cpu_openblas.threads = threads;
    }
    pthread_mutex_unlock(&cpu_openblas_lock);
}

void cpu__gemm_single_threaded(int on) {
    /* OpenBLAS only stores a lower count (its threads stay, idle), and a count up to the one it
     * had wakes the threads it already has, so a switch costs a lock and a store each way. A GEMM
     * already running on another thread keeps the split it chose when it started. */
    pthread_mutex_lock(&cpu_openblas_lock);
    cpu__openblas_t *o = &cpu_openblas;
    if (o->loaded) {
        if (on) {
            if (o->single++ == 0 && o->threads != 1)
                o->set_num_threads(1);
        } else if (o->single > 0 && --o->single == 0 && o->threads != 1) {
            /* 0 (no device has set a count) gives OpenBLAS back its own default. */
            o->set_num_threads((int)o->threads);
        }
    }
    pthread_mutex_unlock(&cpu_openblas_lock);
}

/* A block of C rows (or columns) of one f32 GEMM, for the pool. */
typedef struct cpu__sgemm_split {
    char ta, tb;
    int by_rows;
    int64_t m, n, k, block;
    float alpha, beta;
    const float *a, *b;
    float *c;
    int64_t lda, ldb, ldc;
} cpu__sgemm_split_t;

/* One sgemm on the calling thread alone: the thread's OpenMP team size (a per-thread setting)
 * is 1 for the call and is given back after, since the thread may be the application's. */
static void cpu__onednn_sgemm(char ta, char tb, int64_t m, int64_t n, int64_t k, float alpha,
                              const float *a, int64_t lda, const float *b, int64_t ldb,
                              float beta, float *c, int64_t ldc) {
    const int team = cpu_onednn.omp_get_max_threads();

    if (team != 1)
        cpu_onednn.omp_set_num_threads(1);
    cpu_onednn.sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    if (team != 1)
        cpu_onednn.omp_set_num_threads(team);
}

static void cpu__sgemm_block_task(void *ctx, uint64_t begin, uint64_t end) {
    const cpu__sgemm_split_t *g = ctx;

    for (uint64_t i = begin; i < end; i++) {
        const int64_t first = (int64_t)i * g->block;
        const int64_t dim = g->by_rows ? g->m : g->n;
        const int64_t count = dim - first < g->block ? dim - first : g->block;
        if (g->by_rows)
            /* Rows of op(A): row r starts at r * lda untransposed, at column r transposed. */
            cpu__onednn_sgemm(g->ta, g->tb, count, g->n, g->k, g->alpha,
                              g->a + (g->ta == 'N' ? first * g->lda : first), g->lda, g->b,
                              g->ldb, g->beta, g->c + first * g->ldc, g->ldc);
        else
            cpu__onednn_sgemm(g->ta, g->tb, g->m, count, g->k, g->alpha, g->a, g->lda,
                              g->b + (g->tb == 'N' ? first : first * g->ldb), g->ldb, g->beta,
                              g->c + first, g->ldc);
    }
}

/* Below this many multiply-adds a GEMM is one call on the calling thread: splitting it costs
 * more than it saves (64x256x784 at two threads gains; 64x10x256 loses). */
#define CPU__SGEMM_SPLIT_MIN (1u << 20)

/* Below this many multiply-adds an f32 GEMM stays on OpenBLAS, which runs it on the calling
 * thread (OpenBLAS 0.3.21 threads a GEMM from 4 x 65536 multiply-adds): oneDNN's sgemm costs
 * about 0.5 us more per call there (the MLP 784-256-10 at batch 1: 7-8 against 6 us a run), and
 * both take the same time for the GEMM itself (1x256x784: 0.010 ms). */
#define CPU__ONEDNN_MIN (1u << 18)

/* Whole blocks of at least this many rows (columns), multiples of the kernels' widths. */
#define CPU__SGEMM_MIN_ROWS 16
#define CPU__SGEMM_MIN_COLS 64

void cpu__gemm_call(const ses_drv_device_t *device, int split, uint32_t dtype, int trans_a,
                    int trans_b, int64_t m, int64_t n, int64_t k, double alpha, const void *a,
                    int64_t lda, const void *b, int64_t ldb, double beta, void *c, int64_t ldc) {
    const enum CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans;
    const enum CBLAS_TRANSPOSE tb = trans_b ? CblasTrans : CblasNoTrans;

    if (dtype == SES_DRV_DTYPE_F32 && device && device->driver->gemm_onednn &&
        (double)m * (double)n * (double)k >= (double)CPU__ONEDNN_MIN) {
        const uint32_t threads = split ? cpu__pool_threads(device->pool) : 1;
        cpu__sgemm_split_t g = {
            .ta = trans_a ? 'T' : 'N', .tb = trans_b ? 'T' : 'N', .by_rows = m >= n,
            .m = m, .n = n, .k = k, .alpha = (float)alpha, .beta = (float)beta,
            .a = a, .b = b, .c = c, .lda = lda, .ldb = ldb, .ldc = ldc};
        const int64_t dim = g.by_rows ? m : n;
        const int64_t unit = g.by_rows ? CPU__SGEMM_MIN_ROWS : CPU__SGEMM_MIN_COLS;
        int64_t blocks = (int64_t)threads;

        if ((double)m * (double)n * (double)k < (double)CPU__SGEMM_SPLIT_MIN)
            blocks = 1;
        if (blocks > dim / unit)
            blocks = dim / unit;
        if (blocks <= 1) {
            cpu__onednn_sgemm(g.ta, g.tb, m, n, k, g.alpha, a, lda, b, ldb, g.beta, c, ldc);
            return;
        }
        /* Equal blocks rounded up to the unit, so every block but the last is whole. */
        g.block = (dim + blocks - 1) / blocks;
        g.block = (g.block + unit - 1) / unit * unit;
        blocks = (dim + g.block - 1) / g.block;
        cpu__parallel_for(device->pool, (uint64_t)blocks, CPU__PARALLEL_MIN, cpu__sgemm_block_task,
                          &g);
        return;
    }
    if (dtype == SES_DRV_DTYPE_F32)
        cpu_openblas.sgemm(CblasRowMajor, ta, tb, (blasint)m, (blasint)n, (blasint)k, (float)alpha,
                           a, (blasint)lda, b, (blasint)ldb, (float)beta, c, (blasint)ldc);
    else
        cpu_openblas.dgemm(CblasRowMajor, ta, tb, (blasint)m, (blasint)n, (blasint)k, alpha, a,
                           (blasint)lda, b, (blasint)ldb, beta, c, (blasint)ldc);
}
