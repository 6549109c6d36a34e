/*
 * The CPU driver's GEMM library (plugins/cpu/cpu_gemm.c): OpenBLAS loaded at the first open with
 * kernels chosen by the CPU's ISA, a forced choice (option driver.cpu.gemm_kernels), the user's
 * OPENBLAS_CORETYPE, and a library someone else loaded first.
 *
 * OpenBLAS chooses its kernels once per process, so every case runs in a child process: it sets
 * up the environment, opens the driver through its ABI (as cpu_driver_test does) and reports
 * back what open said, the device's name and what openblas_get_corename() says.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NOLOAD, setenv under -std=c11 */
#endif

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <session/driver.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#ifndef SES_CPU_DRIVER_PATH
#error "compile with -DSES_CPU_DRIVER_PATH=\"/path/to/ses_cpu.so\""
#endif

/* ---------------------------------------------------------------------------------------------
 * A host whose options are set by the case
 * ------------------------------------------------------------------------------------------- */

struct ses_drv_host_ctx {
    char message[1024];
    int32_t code;
};

static const char *option_gemm_kernels; /* driver.cpu.gemm_kernels, NULL when unset */
static const char *option_threads;      /* driver.cpu.threads, NULL when unset */
static const char *option_gemm;         /* driver.cpu.gemm, NULL when unset */

static void host_log(ses_drv_host_ctx_t *ctx, uint32_t level, const char *message) {
    (void)ctx;
    (void)level;
    (void)message;
}

static int32_t host_log_enabled(ses_drv_host_ctx_t *ctx, uint32_t level) {
    (void)ctx;
    (void)level;
    return 0;
}

__attribute__((format(printf, 3, 4))) static int32_t host_error(ses_drv_host_ctx_t *ctx,
                                                                int32_t code, const char *format,
                                                                ...) {
    va_list ap;

    va_start(ap, format);
    vsnprintf(ctx->message, sizeof ctx->message, format, ap);
    va_end(ap);
    ctx->code = code;
    return code;
}

static int32_t host_get_option(ses_drv_host_ctx_t *ctx, const char *key, char *buffer,
                               uint64_t buffer_size, uint64_t *out_size) {
    const char *value = NULL;

    (void)ctx;
    if (strcmp(key, "driver.cpu.gemm_kernels") == 0)
        value = option_gemm_kernels;
    else if (strcmp(key, "driver.cpu.threads") == 0)
        value = option_threads;
    else if (strcmp(key, "driver.cpu.gemm") == 0)
        value = option_gemm;
    if (!value)
        return SES_DRV_NOT_FOUND;
    *out_size = strlen(value) + 1;
    if (*out_size > buffer_size)
        return SES_DRV_INVALID_ARGUMENT;
    memcpy(buffer, value, *out_size);
    return SES_DRV_OK;
}

static int32_t host_should_abort(ses_drv_host_ctx_t *ctx) {
    (void)ctx;
    return 0;
}

static const ses_drv_host_t host = {
    .struct_size = sizeof(ses_drv_host_t),
    .log = host_log,
    .log_enabled = host_log_enabled,
    .error = host_error,
    .get_option = host_get_option,
    .should_abort = host_should_abort,
};

/* ---------------------------------------------------------------------------------------------
 * One case in a child process
 * ------------------------------------------------------------------------------------------- */

typedef struct outcome {
    int32_t open_rc;      /* what open returned */
    char message[1024];   /* the error message when it failed */
    char name[512];       /* the device's name (its description) when it opened */
    char name2[512];      /* the same from a second driver instance opened after the first */
    char corename[64];    /* openblas_get_corename() after open; "" when OpenBLAS is not loaded */
    int env_set;          /* OPENBLAS_CORETYPE is set after open */
    char env[64];         /* its value */
    int blas_threads;     /* openblas_get_num_threads() after open_device; 0 if not reached */
} outcome_t;

typedef struct setup_case {
    const char *coretype;     /* OPENBLAS_CORETYPE before open, NULL: unset */
    const char *gemm_kernels; /* the option, NULL: unset */
    const char *threads;      /* driver.cpu.threads, NULL: unset */
    const char *preload;      /* load libopenblas with this OPENBLAS_CORETYPE before the driver */
    const char *gemm;         /* driver.cpu.gemm, NULL: unset */
} setup_case_t;

static void *blas_fn(void *lib, const char *name) {
    return lib ? dlsym(lib, name) : NULL;
}

static void child_run(const setup_case_t *c, outcome_t *o) {
    struct ses_drv_host_ctx ctx;
    ses_drv_negotiate_t args;
    ses_drv_negotiate_fn negotiate;
    ses_drv_driver_t *driver = NULL;
    ses_drv_device_t *device = NULL;

    memset(&ctx, 0, sizeof ctx);
    o->open_rc = -1000;
    if (c->preload) {
        setenv("OPENBLAS_CORETYPE", c->preload, 1);
        if (!dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL)) {
            snprintf(o->message, sizeof o->message, "preload failed: %s", dlerror());
            return;
        }
    }
    if (c->coretype)
        setenv("OPENBLAS_CORETYPE", c->coretype, 1);
    else
        unsetenv("OPENBLAS_CORETYPE");
    option_gemm_kernels = c->gemm_kernels;
    option_threads = c->threads;
    option_gemm = c->gemm;

    void *lib = dlopen(SES_CPU_DRIVER_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(o->message, sizeof o->message, "cannot load the driver: %s", dlerror());
        return;
    }
    void *sym = dlsym(lib, SES_DRV_NEGOTIATE_SYMBOL);
    memcpy(&negotiate, &sym, sizeof negotiate);
    memset(&args, 0, sizeof args);
    args.struct_size = sizeof args;
    args.abi_major = SES_DRV_ABI_MAJOR;
    args.host_minor_max = SES_DRV_ABI_MINOR;
    args.host = &host;
    args.host_ctx = &ctx;
    if (negotiate(&args) != SES_DRV_OK) {
        snprintf(o->message, sizeof o->message, "negotiate failed: %.900s", ctx.message);
        return;
    }
    o->open_rc = args.api->open(&host, &ctx, &driver);
    snprintf(o->message, sizeof o->message, "%s", ctx.message);

    const char *env = getenv("OPENBLAS_CORETYPE");
    o->env_set = env != NULL;
    snprintf(o->env, sizeof o->env, "%s", env ? env : "");

    void *blas = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_NOLOAD);
    void *corename_sym = blas_fn(blas, "openblas_get_corename");
    if (corename_sym) {
        char *(*corename)(void);
        memcpy(&corename, &corename_sym, sizeof corename);
        snprintf(o->corename, sizeof o->corename, "%s", corename());
    }
    if (o->open_rc != SES_DRV_OK)
        return;

    ses_drv_device_desc_t desc;
    uint32_t count = 1;
    memset(&desc, 0, sizeof desc);
    desc.struct_size = sizeof desc;
    if (args.api->enumerate_devices(driver, &count, &desc) == SES_DRV_OK && desc.name)
        snprintf(o->name, sizeof o->name, "%s", desc.name);
    ses_drv_driver_t *second = NULL;
    if (args.api->open(&host, &ctx, &second) == SES_DRV_OK) {
        memset(&desc, 0, sizeof desc);
        desc.struct_size = sizeof desc;
        if (args.api->enumerate_devices(second, &count, &desc) == SES_DRV_OK && desc.name)
            snprintf(o->name2, sizeof o->name2, "%s", desc.name);
        args.api->close(second);
    } else {
        snprintf(o->name2, sizeof o->name2, "second open failed: %.400s", ctx.message);
    }
    if (args.api->open_device(driver, 0, &device) == SES_DRV_OK) {
        void *threads_sym = blas_fn(blas, "openblas_get_num_threads");
        if (threads_sym) {
            int (*threads)(void);
            memcpy(&threads, &threads_sym, sizeof threads);
            o->blas_threads = threads();
        }
        args.api->close_device(device);
    }
    args.api->close(driver);
}

/* Runs @p c in a child and returns what it saw. */
static outcome_t run_case(setup_case_t c) {
    outcome_t o;
    int fds[2];

    memset(&o, 0, sizeof o);
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        child_run(&c, &o);
        ssize_t n = write(fds[1], &o, sizeof o);
        _exit(n == (ssize_t)sizeof o ? 0 : 1);
    }
    close(fds[1]);
    size_t got = 0;
    while (got < sizeof o) {
        ssize_t n = read(fds[0], (char *)&o + got, sizeof o - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fds[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || got != sizeof o)
        fail_msg("the child did not report (status 0x%x, %zu of %zu bytes)", status, got,
                 sizeof o);
    return o;
}

#define assert_contains(haystack, needle)                                                \
    do {                                                                                 \
        if (!strstr((haystack), (needle)))                                               \
            fail_msg("expected \"%s\" in \"%s\"", (needle), (haystack));                 \
    } while (0)

/* What the CPU can do, as GCC's runtime sees it (cpuid and XGETBV): a second opinion. */
static int cpu_has_avx512(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}

static int cpu_has_avx2_fma(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

/* ---------------------------------------------------------------------------------------------
 * Cases
 * ------------------------------------------------------------------------------------------- */

/* The issue this exists for: OpenBLAS's model table gave AVX-512 CPUs Haswell or Prescott. */
static void kernels_follow_the_isa_when_nothing_is_forced(void **state) {
    (void)state;
    outcome_t o = run_case((setup_case_t){0});

    if (o.open_rc != SES_DRV_OK)
        fail_msg("open failed (%d): %s", o.open_rc, o.message);
    assert_contains(o.name, "; gemm: ");
    assert_contains(o.name, "openblas ");
    assert_contains(o.name, "detected ");
    char kernels[96];
    snprintf(kernels, sizeof kernels, "%s kernels", o.corename);
    assert_contains(o.name, kernels);
    if (cpu_has_avx512()) {
        if (strcmp(o.corename, "SkylakeX") != 0 && strcmp(o.corename, "Cooperlake") != 0)
            fail_msg("AVX-512 F+BW+VL+DQ detected, but OpenBLAS runs %s kernels: %s", o.corename,
                     o.name);
        assert_contains(o.name, "AVX-512");
        assert_contains(o.name, "avx512f avx512bw avx512vl avx512dq");
    } else if (cpu_has_avx2_fma()) {
        assert_string_equal(o.corename, "Haswell");
    }
    /* The variable the driver set to load OpenBLAS is gone again. */
    assert_false(o.env_set);
    assert_string_equal(o.name2, o.name);
}

/* Whether oneDNN can be loaded here at all (Debian's libdnnl2). */
static int onednn_present(void) {
    void *lib = dlopen("libdnnl.so.3", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        lib = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
    return lib != NULL;
}

/* f32 GEMMs go to oneDNN where it loads, and the name says so; its kernels follow the ISA too:
 * the conv part names the ISA oneDNN dispatches to, never less than the CPU's AVX-512 or AVX2. */
static void onednn_runs_f32_gemms_where_it_loads_at_the_isa_of_the_cpu(void **state) {
    (void)state;
    if (!onednn_present()) {
        print_message("skipped: oneDNN (libdnnl.so.2 or .3) is not installed\n");
        skip();
    }
    outcome_t o = run_case((setup_case_t){0});

    if (o.open_rc != SES_DRV_OK)
        fail_msg("open failed (%d): %s", o.open_rc, o.message);
    assert_contains(o.name, "; gemm: onednn ");
    assert_contains(o.name,
                    "(f32: sgemm on the pool's threads, matmul for constant weights), openblas ");
    if (strstr(o.name, "conv: onednn")) {
        if (cpu_has_avx512())
            assert_contains(o.name, "avx512_core");
        else if (cpu_has_avx2_fma())
            assert_contains(o.name, "avx2");
    }
    outcome_t b = run_case((setup_case_t){.gemm = "openblas"});
    if (b.open_rc != SES_DRV_OK)
        fail_msg("open failed (%d): %s", b.open_rc, b.message);
    assert_contains(b.name, "; gemm: openblas ");
    outcome_t bad = run_case((setup_case_t){.gemm = "blis"});
    assert_int_equal(bad.open_rc, SES_DRV_INVALID_ARGUMENT);
    assert_contains(bad.message, "driver.cpu.gemm is \"blis\"");
}

static void a_forced_core_is_honoured(void **state) {
    (void)state;
    if (!cpu_has_avx2_fma()) {
        print_message("skipped: this CPU has no AVX2 and FMA to run Haswell kernels\n");
        skip();
    }
    outcome_t o = run_case((setup_case_t){.gemm_kernels = "Haswell"});

    if (o.open_rc != SES_DRV_OK)
        fail_msg("open failed (%d): %s", o.open_rc, o.message);
    assert_string_equal(o.corename, "Haswell");
    assert_contains(o.name, "Haswell kernels (AVX2; forced by driver.cpu.gemm_kernels");
    assert_false(o.env_set);
    /* A second instance in the process checks the option again and describes the same. */
    assert_string_equal(o.name2, o.name);
}

static void a_forced_core_is_matched_in_any_case(void **state) {
    (void)state;
    outcome_t o = run_case((setup_case_t){.gemm_kernels = "prescott"});

    if (o.open_rc != SES_DRV_OK)
        fail_msg("open failed (%d): %s", o.open_rc, o.message);
    assert_string_equal(o.corename, "Prescott");
}

/* An unknown name is refused before OpenBLAS is loaded, with the names that would work. */
static void an_unknown_forced_core_is_refused(void **state) {
    (void)state;
    outcome_t o = run_case((setup_case_t){.gemm_kernels = "bogus"});

    assert_int_equal(o.open_rc, SES_DRV_INVALID_ARGUMENT);
    assert_contains(o.message, "driver.cpu.gemm_kernels is \"bogus\"");
    assert_contains(o.message, "SkylakeX");
    assert_contains(o.message, "Haswell");
    assert_contains(o.message, "this CPU: ");
    assert_string_equal(o.corename, "");
}

/* A core the CPU cannot run: SkylakeX without AVX-512, else Cooperlake without AVX512_BF16. */
static void a_forced_core_beyond_the_cpu_is_refused(void **state) {
    (void)state;
    __builtin_cpu_init();
    const char *core = !cpu_has_avx512()                       ? "SkylakeX"
                       : !__builtin_cpu_supports("avx512bf16") ? "Cooperlake"
                                                               : NULL;
    if (!core) {
        print_message("skipped: this CPU runs every core the driver knows\n");
        skip();
    }
    outcome_t o = run_case((setup_case_t){.gemm_kernels = core});

    assert_int_equal(o.open_rc, SES_DRV_INCOMPATIBLE);
    assert_contains(o.message, core);
    assert_contains(o.message, "which this CPU (or its OS) lacks; this CPU has: ");
    assert_string_equal(o.corename, "");
}

/* The user's OPENBLAS_CORETYPE stands, and is left as it was. */
static void the_users_openblas_coretype_is_respected(void **state) {
    (void)state;
    outcome_t o = run_case((setup_case_t){.coretype = "Sandybridge"});

    if (o.open_rc != SES_DRV_OK)
        fail_msg("open failed (%d): %s", o.open_rc, o.message);
    assert_string_equal(o.corename, "Sandybridge");
    assert_contains(o.name, "OPENBLAS_CORETYPE=Sandybridge, set by the user");
    assert_true(o.env_set);
    assert_string_equal(o.env, "Sandybridge");
}

/* The option wins over OPENBLAS_CORETYPE, which is put back afterwards. */
static void the_option_wins_over_openblas_coretype_and_restores_it(void **state) {
    (void)state;
    outcome_t o = run_case((setup_case_t){.coretype = "Sandybridge", .gemm_kernels = "Prescott"});

    if (o.open_rc != SES_DRV_OK)
        fail_msg("open failed (%d): %s", o.open_rc, o.message);
    assert_string_equal(o.corename, "Prescott");
    assert_true(o.env_set);
    assert_string_equal(o.env, "Sandybridge");
}

/* Loaded before the driver: its choice stands, and the description says so. */
static void an_openblas_loaded_first_keeps_its_choice(void **state) {
    (void)state;
    outcome_t o = run_case((setup_case_t){.preload = "Prescott"});

    if (o.open_rc != SES_DRV_OK)
        fail_msg("open failed (%d): %s", o.open_rc, o.message);
    assert_string_equal(o.corename, "Prescott");
    assert_contains(o.name, "Prescott kernels (SSE3; OpenBLAS was loaded before the driver");
    assert_contains(o.name, "its choice stands");
}

/* ... and a forced core it did not choose cannot be honoured: open says so, naming both. */
static void a_forced_core_unlike_an_openblas_loaded_first_is_refused(void **state) {
    (void)state;
    outcome_t o = run_case((setup_case_t){.preload = "Prescott", .gemm_kernels = "Nehalem"});

    assert_int_equal(o.open_rc, SES_DRV_FAILED_PRECONDITION);
    assert_contains(o.message, "driver.cpu.gemm_kernels is Nehalem");
    assert_contains(o.message, "runs Prescott kernels");
}

/* The GEMM library shares the pool's threads. */
static void openblas_threads_follow_the_pool(void **state) {
    (void)state;
    outcome_t one = run_case((setup_case_t){.threads = "1"});
    outcome_t two = run_case((setup_case_t){.threads = "2"});

    if (one.open_rc != SES_DRV_OK)
        fail_msg("open failed (%d): %s", one.open_rc, one.message);
    assert_int_equal(one.blas_threads, 1);
    assert_int_equal(two.blas_threads, 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kernels_follow_the_isa_when_nothing_is_forced),
        cmocka_unit_test(onednn_runs_f32_gemms_where_it_loads_at_the_isa_of_the_cpu),
        cmocka_unit_test(a_forced_core_is_honoured),
        cmocka_unit_test(a_forced_core_is_matched_in_any_case),
        cmocka_unit_test(an_unknown_forced_core_is_refused),
        cmocka_unit_test(a_forced_core_beyond_the_cpu_is_refused),
        cmocka_unit_test(the_users_openblas_coretype_is_respected),
        cmocka_unit_test(the_option_wins_over_openblas_coretype_and_restores_it),
        cmocka_unit_test(an_openblas_loaded_first_keeps_its_choice),
        cmocka_unit_test(a_forced_core_unlike_an_openblas_loaded_first_is_refused),
        cmocka_unit_test(openblas_threads_follow_the_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
