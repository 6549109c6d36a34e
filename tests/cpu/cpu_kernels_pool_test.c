/*
 * The CPU driver's kernels, part of the cpu_kernels test (runner in cpu_kernels_test.c):
 * the thread pool: options, threads started and joined, results on the pool equal
 * to the inline ones, cancellation, concurrent callers, prepared broadcasting walks.
 */
#include "cpu_kernels_harness.h"

/* ---------------------------------------------------------------------------------------------
 * The thread pool
 * ------------------------------------------------------------------------------------------- */

/* The threads of this process, from /proc/self/task; 0 where that is not readable. */
static int count_threads(void) {
    DIR *dir = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;

    if (!dir)
        return 0;
    while ((e = readdir(dir)))
        if (e->d_name[0] != '.')
            n++;
    closedir(dir);
    return n;
}

static void sleep_ms(long ms) {
    struct timespec t = {0, ms * 1000000L};
    nanosleep(&t, NULL);
}

/*
 * The thread count once it stops changing: a thread that pthread_join has returned for can
 * still be listed for a moment while the kernel tears it down.
 */
static int settled_threads(void) {
    int last = count_threads();
    for (int i = 0; i < 100; i++) {
        sleep_ms(10);
        int now = count_threads();
        if (now == last)
            return now;
        last = now;
    }
    return last;
}

/* Waits up to 2 s for the thread count to become @p want; returns the last count seen. */
static int wait_for_threads(int want) {
    int n = count_threads();
    for (int i = 0; i < 200 && n != want; i++) {
        sleep_ms(10);
        n = count_threads();
    }
    return n;
}

/* A driver instance whose device pool has @p threads threads. */
typedef struct pooled {
    kernel_host_ctx_t ctx;
    ses_drv_driver_t *driver;
    ses_drv_device_t *device;
} pooled_t;

/* Opens a driver instance with options threads and gemm (NULL: unset); returns open's status. */
static int32_t try_open_pooled(fixture_t *f, pooled_t *p, const char *threads, const char *gemm) {
    memset(p, 0, sizeof *p);
    p->ctx.threads = threads;
    p->ctx.gemm = gemm;
    int32_t st = f->api->open(&option_host, &p->ctx.base, &p->driver);
    if (st != SES_DRV_OK)
        return st;
    if (f->api->open_device(p->driver, 0, &p->device) != SES_DRV_OK)
        fail_msg("open_device with %s threads: %s", threads, p->ctx.base.message);
    return SES_DRV_OK;
}

static void open_pooled(fixture_t *f, pooled_t *p, const char *threads) {
    memset(p, 0, sizeof *p);
    p->ctx.threads = threads;
    assert_int_equal(f->api->open(&option_host, &p->ctx.base, &p->driver), SES_DRV_OK);
    if (f->api->open_device(p->driver, 0, &p->device) != SES_DRV_OK)
        fail_msg("open_device with %s threads: %s", threads, p->ctx.base.message);
}

static void close_pooled(fixture_t *f, pooled_t *p) {
    f->api->close_device(p->device);
    f->api->close(p->driver);
}

/* Fills @p n floats with values in [-1, 1) from a small LCG seeded with @p seed. */
static void fill_random(float *v, size_t n, uint32_t seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = (float)((double)(seed >> 8) / 8388608.0 - 1.0);
    }
}

/* max |got - want| / max |want| over @p n values */
static double relative_error(const float *want, const float *got, size_t n) {
    double err = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)want[i]);
        err = d > err ? d : err;
        scale = fabs((double)want[i]) > scale ? fabs((double)want[i]) : scale;
    }
    return scale > 0 ? err / scale : err;
}

/*
 * f32 GEMMs on oneDNN (option driver.cpu.gemm=onednn), cut into blocks of rows or columns over
 * a pool of 4 threads, agree with OpenBLAS on one thread: MatMul and Gemm with both transposes,
 * C, alpha and beta, at shapes that split by rows and by columns, with a last block shorter
 * than the others, and too small to split at all.
 */
void f32_gemms_on_onednn_agree_with_openblas(void **state) {
    fixture_t *f = *state;
    pooled_t ref, dnn;
    static const int shapes[][3] = {/* m, k, n */
                                    {1, 7, 3},     {64, 784, 256}, {300, 33, 5},
                                    {17, 129, 700}, {130, 64, 65},  {257, 300, 190}};

    if (try_open_pooled(f, &dnn, "4", "onednn") != SES_DRV_OK) {
        print_message("skipped: oneDNN is not usable here: %s\n", dnn.ctx.base.message);
        skip();
    }
    /* Opened last, so OpenBLAS's process-wide count is this device's 1: its own threads are
     * not instrumented for ThreadSanitizer. */
    assert_int_equal(try_open_pooled(f, &ref, "1", "openblas"), SES_DRV_OK);
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const int m = shapes[s][0], k = shapes[s][1], n = shapes[s][2];
        float *a = malloc(sizeof(float) * (size_t)m * k);
        float *b = malloc(sizeof(float) * (size_t)k * n);
        float *c = malloc(sizeof(float) * (size_t)m * n);
        float *want = malloc(sizeof(float) * (size_t)m * n);
        float *got = malloc(sizeof(float) * (size_t)m * n);
        assert_true(a && b && c && want && got);
        fill_random(a, (size_t)m * k, 1u + (uint32_t)s);
        fill_random(b, (size_t)k * n, 7u + (uint32_t)s);
        fill_random(c, (size_t)m * n, 13u + (uint32_t)s);

        targ_t mm[2] = {tensor(F32, a, 2, m, k), tensor(F32, b, 2, k, n)};
        assert_int_equal(run_on(f->api, ref.device, 0, "mm", "MatMul", "f32,f32->f32", NULL, 2, mm,
                                tensor(F32, NULL, 2, m, n), want),
                         SES_DRV_OK);
        assert_int_equal(run_on(f->api, dnn.device, 0, "mm", "MatMul", "f32,f32->f32", NULL, 2, mm,
                                tensor(F32, NULL, 2, m, n), got),
                         SES_DRV_OK);
        if (relative_error(want, got, (size_t)m * n) > 1e-5)
            fail_msg("MatMul %dx%dx%d: oneDNN differs from OpenBLAS by %g", m, k, n,
                     relative_error(want, got, (size_t)m * n));

        /* The same operands read transposed: A as [k, m], B as [n, k]. */
        for (int t = 0; t < 4; t++) {
            const int ta = t & 1, tb = (t >> 1) & 1;
            test_attr_t attrs[] = {A_INT("transA", ta), A_INT("transB", tb),
                                   A_FLOAT("alpha", 0.5), A_FLOAT("beta", -2.0), A_END};
            targ_t g[3] = {ta ? tensor(F32, a, 2, k, m) : tensor(F32, a, 2, m, k),
                           tb ? tensor(F32, b, 2, n, k) : tensor(F32, b, 2, k, n),
                           tensor(F32, c, 2, m, n)};
            assert_int_equal(run_on(f->api, ref.device, 0, "g", "Gemm", "f32,f32,f32->f32", attrs,
                                    3, g, tensor(F32, NULL, 2, m, n), want),
                             SES_DRV_OK);
            assert_int_equal(run_on(f->api, dnn.device, 0, "g", "Gemm", "f32,f32,f32->f32", attrs,
                                    3, g, tensor(F32, NULL, 2, m, n), got),
                             SES_DRV_OK);
            if (relative_error(want, got, (size_t)m * n) > 1e-5)
                fail_msg("Gemm %dx%dx%d transA %d transB %d: oneDNN differs from OpenBLAS by %g",
                         m, k, n, ta, tb, relative_error(want, got, (size_t)m * n));
        }
        free(a);
        free(b);
        free(c);
        free(want);
        free(got);
    }
    close_pooled(f, &dnn);
    close_pooled(f, &ref);
}

/* Option driver.cpu.gemm takes auto, onednn or openblas, and names them when it is anything
 * else. */
void the_gemm_option_refuses_an_unknown_library(void **state) {
    fixture_t *f = *state;
    pooled_t p;

    assert_int_equal(try_open_pooled(f, &p, "1", "mkl"), SES_DRV_INVALID_ARGUMENT);
    assert_non_null(strstr(p.ctx.base.message, "driver.cpu.gemm is \"mkl\""));
    assert_non_null(strstr(p.ctx.base.message, "auto"));
    assert_non_null(strstr(p.ctx.base.message, "onednn or openblas"));
}

/*
 * Conv's state keeps the im2col path's column matrices between launches and grows them when a
 * launch needs more: one state through images of 5x5, 11x11 (by images, on the pool), 4x4 and
 * 11x11 gives each the values of a launch without state.
 */
void conv_state_keeps_and_grows_its_scratch(void **state) {
    fixture_t *f = *state;
    static const int sizes[][2] = {{1, 5}, {2, 11}, {1, 4}, {2, 11}}; /* batch, side */
    float w[4 * 3 * 9];
    test_attr_t attrs[] = {A_INTS("kernel_shape", 3, 3), A_INTS("strides", 1, 1),
                           A_INTS("dilations", 1, 1),  A_INTS("pads", 1, 1, 1, 1),
                           A_INT("group", 1),          A_END};
    void *conv_state = NULL;
    const ses_drv_kernel_t *k = find_kernel_on(f->api, f->device, "Conv", "f32,f32->f32");

    assert_non_null(k);
    assert_non_null(k->create);
    fill_random(w, sizeof w / sizeof w[0], 3u);
    for (size_t r = 0; r < sizeof sizes / sizeof sizes[0]; r++) {
        const int n = sizes[r][0], side = sizes[r][1];
        const size_t nx = (size_t)n * 3 * side * side, ny = (size_t)n * 4 * side * side;
        float *x = malloc(nx * sizeof *x), *want = malloc(ny * sizeof *want);
        float *got = malloc(ny * sizeof *got);
        assert_true(x && want && got);
        fill_random(x, nx, 11u + (uint32_t)r);
        targ_t in[2] = {tensor(F32, x, 4, n, 3, side, side), tensor(F32, w, 4, 4, 3, 3, 3)};
        RUN_OK(f, "Conv", "f32,f32->f32", attrs, 2, in, tensor(F32, NULL, 4, n, 4, side, side),
               want);
        kept_state = &conv_state;
        int32_t st = run(f, "Conv", "f32,f32->f32", attrs, 2, in,
                         tensor(F32, NULL, 4, n, 4, side, side), got);
        kept_state = NULL;
        if (st != SES_DRV_OK)
            fail_msg("Conv with a kept state, %dx%d: %s", side, side, f->ctx.base.message);
        assert_non_null(conv_state);
        assert_memory_equal(want, got, ny * sizeof *got);
        free(x);
        free(want);
        free(got);
    }
    k->destroy(f->device, conv_state);
}

/* Option driver.cpu.spin_us: idle workers spin 0 to 100000 us before they sleep, or "auto" (the
 * default, cpu_threadpool_test checks its policy); the pool's results do not depend on it, and
 * anything else is refused naming the option. */
void the_pools_spin_time_is_an_option_that_changes_no_result(void **state) {
    fixture_t *f = *state;
    static const char *const good[] = {"0", "200", " 100000 ", "auto"};
    static const char *const bad[] = {"abc", "100001", "-1", "", "5us", "Auto", "auto1"};
    enum { N = 1 << 16 };
    float *x = malloc(N * sizeof *x), *want = malloc(N * sizeof *want),
          *got = malloc(N * sizeof *got);

    assert_true(x && want && got);
    fill_random(x, N, 5u);
    targ_t in[1] = {tensor(F32, x, 1, N)};
    RUN_OK(f, "Sigmoid", "f32->f32", NULL, 1, in, tensor(F32, NULL, 1, N), want);
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        pooled_t p;
        memset(&p, 0, sizeof p);
        p.ctx.threads = "4";
        p.ctx.spin_us = good[i];
        assert_int_equal(f->api->open(&option_host, &p.ctx.base, &p.driver), SES_DRV_OK);
        if (f->api->open_device(p.driver, 0, &p.device) != SES_DRV_OK)
            fail_msg("spin_us \"%s\": %s", good[i], p.ctx.base.message);
        for (int r = 0; r < 3; r++) {
            assert_int_equal(run_on(f->api, p.device, 0, "s", "Sigmoid", "f32->f32", NULL, 1, in,
                                    tensor(F32, NULL, 1, N), got),
                             SES_DRV_OK);
            assert_memory_equal(want, got, N * sizeof *got);
        }
        close_pooled(f, &p);
    }
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        kernel_host_ctx_t ctx;
        ses_drv_driver_t *driver = NULL;
        ses_drv_device_t *dev = NULL;
        memset(&ctx, 0, sizeof ctx);
        ctx.spin_us = bad[i];
        assert_int_equal(f->api->open(&option_host, &ctx.base, &driver), SES_DRV_OK);
        assert_int_equal(f->api->open_device(driver, 0, &dev), SES_DRV_INVALID_ARGUMENT);
        assert_null(dev);
        if (!strstr(ctx.base.message, "driver.cpu.spin_us"))
            fail_msg("spin_us \"%s\": the message does not name the option: %s", bad[i],
                     ctx.base.message);
        f->api->close(driver);
    }
    free(x);
    free(want);
    free(got);
}

void open_device_starts_its_pool_and_close_device_joins_it(void **state) {
    fixture_t *f = *state;
    pooled_t p;

    /* OpenBLAS is sized to each pool (it shares the pool's thread count) and starts its own
     * workers when asked for more, keeping them for good: size it once before counting. */
    open_pooled(f, &p, "4");
    close_pooled(f, &p);
    int before = settled_threads();
    if (before == 0)
        skip();
    open_pooled(f, &p, "4");
    /* The caller is one of the four; three workers wait for work. */
    assert_int_equal(wait_for_threads(before + 3), before + 3);
    close_pooled(f, &p);
    assert_int_equal(wait_for_threads(before), before);
    open_pooled(f, &p, "1");
    assert_int_equal(settled_threads(), before);
    close_pooled(f, &p);
}

void open_device_refuses_a_thread_count_that_is_not_a_number(void **state) {
    fixture_t *f = *state;
    pooled_t p;
    ses_drv_device_t *dev = (ses_drv_device_t *)(uintptr_t)1;

    memset(&p, 0, sizeof p);
    p.ctx.threads = "four";
    assert_int_equal(f->api->open(&option_host, &p.ctx.base, &p.driver), SES_DRV_OK);
    assert_int_equal(f->api->open_device(p.driver, 0, &dev), SES_DRV_INVALID_ARGUMENT);
    assert_null(dev);
    assert_non_null(strstr(p.ctx.base.message, "driver.cpu.threads"));
    assert_non_null(strstr(p.ctx.base.message, "\"four\""));
    p.ctx.threads = "100000";
    assert_int_equal(f->api->open_device(p.driver, 0, &dev), SES_DRV_INVALID_ARGUMENT);
    /* 0 means one thread per online CPU. */
    p.ctx.threads = " 0 ";
    assert_int_equal(f->api->open_device(p.driver, 0, &dev), SES_DRV_OK);
    f->api->close_device(dev);
    f->api->close(p.driver);
}

/* Runs one node on the pooled device and on the one-thread device; the outputs must be equal
 * bit for bit, since work is split by output element and never inside one reduction. */
static void same_on_both(fixture_t *f, pooled_t *wide, pooled_t *narrow, const char *op,
                         const char *sig, const test_attr_t *attrs, uint32_t n_in, const targ_t *in,
                         targ_t out, void *got_wide, void *got_narrow) {
    int32_t st =
        run_on(f->api, wide->device, f->prepare, "wide", op, sig, attrs, n_in, in, out, got_wide);
    if (st != SES_DRV_OK)
        fail_msg("%s on 4 threads: %s", op, wide->ctx.base.message);
    st = run_on(f->api, narrow->device, f->prepare, "narrow", op, sig, attrs, n_in, in, out,
                got_narrow);
    if (st != SES_DRV_OK)
        fail_msg("%s on 1 thread: %s", op, narrow->ctx.base.message);
    if (memcmp(got_wide, got_narrow, targ_bytes(&out)) != 0)
        fail_msg("%s %s: the pooled result differs from the inline one", op, sig);
}

void large_kernels_on_the_pool_give_the_inline_result(void **state) {
    fixture_t *f = *state;
    enum { R = 512, C = 768, N = R * C };
    float *x = malloc(N * sizeof(float));
    float *y = malloc(C * sizeof(float));
    float *w = malloc(N * sizeof(float)), *n = malloc(N * sizeof(float));
    int64_t *idx = malloc(R * sizeof(int64_t));
    pooled_t wide, narrow;

    assert_non_null(x);
    assert_non_null(y);
    assert_non_null(w);
    assert_non_null(n);
    assert_non_null(idx);
    for (int i = 0; i < N; i++)
        x[i] = (float)(((int64_t)i * 7919) % 1000) * 0.01f - 5.0f;
    for (int i = 0; i < C; i++)
        y[i] = (float)(i % 17) - 8.0f;
    for (int i = 0; i < R; i++)
        idx[i] = (i * 31) % R - (i % 2 ? R : 0);
    open_pooled(f, &wide, "4");
    open_pooled(f, &narrow, "1");

    targ_t xy[2] = {tensor(F32, x, 2, R, C), tensor(F32, y, 1, C)};
    same_on_both(f, &wide, &narrow, "Add", "f32,f32->f32", NULL, 2, xy, tensor(F32, NULL, 2, R, C),
                 w, n);
    for (int i = 0; i < N; i += 997)
        assert_true(w[i] == x[i] + y[i % C]);
    targ_t xx = tensor(F32, x, 2, R, C);
    same_on_both(f, &wide, &narrow, "Sigmoid", "f32->f32", NULL, 1, &xx, tensor(F32, NULL, 2, R, C),
                 w, n);
    const test_attr_t rows[] = {A_INTS("axes", 1), A_END};
    const test_attr_t cols[] = {A_INTS("axes", 0), A_END};
    same_on_both(f, &wide, &narrow, "ReduceSum", "f32->f32", rows, 1, &xx,
                 tensor(F32, NULL, 2, R, 1), w, n);
    same_on_both(f, &wide, &narrow, "ReduceMax", "f32->f32", cols, 1, &xx,
                 tensor(F32, NULL, 2, 1, C), w, n);
    /* The innermost dim kept, in rows of 8 and in rows longer than a thread's block. */
    const test_attr_t middle[] = {A_INTS("axes", 1), A_END};
    targ_t x3 = tensor(F32, x, 3, 8, 64, 768);
    same_on_both(f, &wide, &narrow, "ReduceMax", "f32->f32", middle, 1, &x3,
                 tensor(F32, NULL, 3, 8, 1, 768), w, n);
    targ_t x4 = tensor(F32, x, 3, 2, 64, 3072);
    same_on_both(f, &wide, &narrow, "ReduceMean", "f32->f32", middle, 1, &x4,
                 tensor(F32, NULL, 3, 2, 1, 3072), w, n);
    for (int o = 0; o < 2; o++)
        for (int c = 0; c < 3072; c += 511) {
            double sum = 0;
            for (int k = 0; k < 64; k++)
                sum += x[(o * 64 + k) * 3072 + c];
            float want_mean = (float)(sum / 64);
            expect_f32(&want_mean, &w[o * 3072 + c], 1, 1e-5);
        }
    const test_attr_t last[] = {A_INT("axis", 1), A_END};
    const test_attr_t first[] = {A_INT("axis", 0), A_END};
    same_on_both(f, &wide, &narrow, "Softmax", "f32->f32", last, 1, &xx, tensor(F32, NULL, 2, R, C),
                 w, n);
    same_on_both(f, &wide, &narrow, "LogSoftmax", "f32->f32", first, 1, &xx,
                 tensor(F32, NULL, 2, R, C), w, n);
    const test_attr_t swap[] = {A_INTS("perm", 1, 0), A_END};
    same_on_both(f, &wide, &narrow, "Transpose", "f32->f32", swap, 1, &xx,
                 tensor(F32, NULL, 2, C, R), w, n);
    for (int i = 0; i < N; i += 1009)
        assert_true(w[(i % C) * R + i / C] == x[i]);
    targ_t gi[2] = {tensor(F32, x, 2, R, C), tensor(I64, idx, 1, R)};
    same_on_both(f, &wide, &narrow, "Gather", "f32,i64->f32", first, 2, gi,
                 tensor(F32, NULL, 2, R, C), w, n);
    targ_t halves[2] = {tensor(F32, x, 2, R, C / 2), tensor(F32, x + N / 2, 2, R, C / 2)};
    same_on_both(f, &wide, &narrow, "Concat", "f32...->f32", last, 2, halves,
                 tensor(F32, NULL, 2, R, C), w, n);
    const test_attr_t am[] = {A_INT("axis", 1), A_INT("keepdims", 0), A_END};
    same_on_both(f, &wide, &narrow, "ArgMax", "f32->i64", am, 1, &xx, tensor(I64, NULL, 1, R), w,
                 n);

    close_pooled(f, &wide);
    close_pooled(f, &narrow);
    free(x);
    free(y);
    free(w);
    free(n);
    free(idx);
}

/* Conv and ConvGrad by images (each image and group a task on the pool, with a single-threaded
 * GEMM and its thread's own column matrix): Y and dX are one thread's bit for bit; dW, summed per
 * thread then across, within f32 rounding. Under ThreadSanitizer this checks the tasks' scratch
 * and the per-thread dW. */
void conv_by_images_on_the_pool_gives_the_inline_result(void **state) {
    fixture_t *f = *state;
    enum { N = 8, C = 8, H = 10, M = 16 };
    static float x[N * C * H * H], w[M * C * 9], b[M], dy[N * M * H * H];
    static float y1[N * M * H * H], y4[N * M * H * H], dx1[N * C * H * H], dx4[N * C * H * H];
    pooled_t wide, narrow;

    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
        x[i] = (float)((int64_t)(i * 7919) % 1000) * 0.002f - 1.0f;
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
        w[i] = (float)((int64_t)(i * 104729) % 1000) * 0.002f - 1.0f;
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        b[i] = (float)i * 0.1f - 0.8f;
    for (size_t i = 0; i < sizeof dy / sizeof dy[0]; i++)
        dy[i] = (float)((int64_t)(i * 31) % 97) * 0.02f - 1.0f;
    open_pooled(f, &wide, "4");
    open_pooled(f, &narrow, "1");
    for (int64_t group = 1; group <= 2; group++) {
        const test_attr_t conv[] = {A_INTS("kernel_shape", 3, 3), A_INTS("strides", 1, 1),
                                    A_INTS("dilations", 1, 1),  A_INTS("pads", 1, 1, 1, 1),
                                    A_INT("group", group),      A_END};
        const test_attr_t grad_x[] = {A_INTS("kernel_shape", 3, 3),
                                      A_INTS("strides", 1, 1),
                                      A_INTS("dilations", 1, 1),
                                      A_INTS("pads", 1, 1, 1, 1),
                                      A_INT("group", group),
                                      A_INT("input", 0),
                                      A_END};
        const test_attr_t grad_w[] = {A_INTS("kernel_shape", 3, 3),
                                      A_INTS("strides", 1, 1),
                                      A_INTS("dilations", 1, 1),
                                      A_INTS("pads", 1, 1, 1, 1),
                                      A_INT("group", group),
                                      A_INT("input", 1),
                                      A_END};
        const int64_t cg = C / group;
        targ_t in[3] = {tensor(F32, x, 4, N, C, H, H), tensor(F32, w, 4, M, cg, 3, 3),
                        tensor(F32, b, 1, M)};
        same_on_both(f, &wide, &narrow, "Conv", "f32,f32,f32->f32", conv, 3, in,
                     tensor(F32, NULL, 4, N, M, H, H), y4, y1);
        targ_t gin[3] = {tensor(F32, dy, 4, N, M, H, H), tensor(F32, x, 4, N, C, H, H),
                         tensor(F32, w, 4, M, cg, 3, 3)};
        same_on_both(f, &wide, &narrow, "ConvGrad", "f32,f32,f32->f32", grad_x, 3, gin,
                     tensor(F32, NULL, 4, N, C, H, H), dx4, dx1);
        float dw1[M * C * 9], dw4[M * C * 9];
        RUN_OK(f, "ConvGrad", "f32,f32,f32->f32", grad_w, 3, gin, tensor(F32, NULL, 4, M, cg, 3, 3),
               dw1);
        int32_t st = run_on(f->api, wide.device, f->prepare, "wide", "ConvGrad",
                            "f32,f32,f32->f32", grad_w, 3, gin, tensor(F32, NULL, 4, M, cg, 3, 3),
                            dw4);
        if (st != SES_DRV_OK)
            fail_msg("ConvGrad dW on 4 threads: %s", wide.ctx.base.message);
        expect_f32(dw1, dw4, (size_t)(M * cg * 9), 1e-4);
    }
    close_pooled(f, &wide);
    close_pooled(f, &narrow);
}

void a_batched_matmul_stops_when_the_host_cancels(void **state) {
    fixture_t *f = *state;
    pooled_t p;
    float got[4];
    const float a[4] = {1, 2, 3, 4};
    /* [4,1,1] x [1,1] would be one stacked GEMM; a batched b makes one GEMM per matrix. */
    targ_t in[2] = {tensor(F32, a, 3, 4, 1, 1), tensor(F32, a, 3, 4, 1, 1)};

    open_pooled(f, &p, "1");
    assert_int_equal(run_on(f->api, p.device, 0, "mm", "MatMul", "f32,f32->f32", NULL, 2, in,
                            tensor(F32, NULL, 3, 4, 1, 1), got),
                     SES_DRV_OK);
    expect_f32((const float[]){1, 4, 9, 16}, got, 4, 0);
    p.ctx.abort = 1;
    assert_int_equal(run_on(f->api, p.device, 0, "mm", "MatMul", "f32,f32->f32", NULL, 2, in,
                            tensor(F32, NULL, 3, 4, 1, 1), got),
                     SES_DRV_CANCELLED);
    assert_non_null(strstr(p.ctx.base.message, "MatMul \"mm\": cancelled"));
    close_pooled(f, &p);
}

/* Several host threads computing on one device at once share its pool or run inline. */
typedef struct worker_arg {
    const ses_drv_api_t *api;
    ses_drv_device_t *device;
    const float *x;
    int rounds;
    int prepare; /* each round creates a state for its node, as a plan would */
    int failures;
} worker_arg_t;

static void *concurrent_worker(void *p) {
    worker_arg_t *w = p;
    enum { N = 1 << 17 };
    float *out = malloc(N * sizeof(float));
    const float two[1] = {2.0f};

    if (!out) {
        w->failures++;
        return NULL;
    }
    for (int r = 0; r < w->rounds; r++) {
        /* The host's error slot is shared; only the codes are looked at here. */
        ses_drv_tensor_desc_t d[3];
        int64_t dims[1] = {N};
        int64_t none[1] = {0};
        ses_drv_buffer_t *a = NULL, *b = NULL, *o = NULL;
        if (w->api->alloc(w->device, N * sizeof(float), 0, &a) != SES_DRV_OK ||
            w->api->alloc(w->device, sizeof(float), 0, &b) != SES_DRV_OK ||
            w->api->alloc(w->device, N * sizeof(float), 0, &o) != SES_DRV_OK) {
            w->failures++;
            break;
        }
        w->api->copy_h2d(w->device, NULL, w->x, a, 0, N * sizeof(float));
        w->api->copy_h2d(w->device, NULL, two, b, 0, sizeof(float));
        memset(d, 0, sizeof d);
        for (int i = 0; i < 3; i++) {
            d[i].struct_size = sizeof d[i];
            d[i].dtype = F32;
            d[i].rank = i == 1 ? 0 : 1;
            d[i].dims = i == 1 ? none : dims;
        }
        ses_drv_node_t node;
        memset(&node, 0, sizeof node);
        node.struct_size = sizeof node;
        node.op = "Mul";
        node.name = "scale";
        node.n_inputs = 2;
        node.n_outputs = 1;
        node.inputs = d;
        node.outputs = &d[2];
        ses_drv_buffer_t *ins[2] = {a, b};
        uint64_t offs[2] = {0, 0};
        ses_drv_launch_t launch;
        memset(&launch, 0, sizeof launch);
        launch.struct_size = sizeof launch;
        launch.node = &node;
        launch.inputs = ins;
        launch.input_offsets = offs;
        launch.outputs = &o;
        launch.output_offsets = offs;
        const ses_drv_kernel_t *k = NULL;
        const ses_drv_kernel_t *table = NULL;
        uint32_t count = 0, stride = 0;
        w->api->get_kernels(w->device, &table, &count, &stride);
        for (uint32_t i = 0; i < count && !k; i++) {
            const ses_drv_kernel_t *e = kernel_at(table, stride, i);
            if (strcmp(e->op, "Mul") == 0 && strcmp(e->signature, "f32,f32->f32") == 0)
                k = e;
        }
        if (!k || compute_as_host(k, w->device, w->prepare, &launch) != SES_DRV_OK)
            w->failures++;
        else {
            w->api->copy_d2h(w->device, NULL, o, 0, out, N * sizeof(float));
            for (int i = 0; i < N; i++)
                if (out[i] != 2.0f * w->x[i]) {
                    w->failures++;
                    break;
                }
        }
        w->api->free(w->device, a);
        w->api->free(w->device, b);
        w->api->free(w->device, o);
    }
    free(out);
    return NULL;
}

void kernels_called_from_several_threads_at_once_all_compute_correctly(void **state) {
    fixture_t *f = *state;
    enum { THREADS = 4, N = 1 << 17 };
    pthread_t threads[THREADS];
    worker_arg_t args[THREADS];
    pooled_t p;
    float *x = malloc(N * sizeof(float));

    assert_non_null(x);
    for (int i = 0; i < N; i++)
        x[i] = (float)(i % 1000) - 500.0f;
    open_pooled(f, &p, "3");
    for (int t = 0; t < THREADS; t++) {
        args[t] = (worker_arg_t){f->api, p.device, x, 20, f->prepare, 0};
        assert_int_equal(pthread_create(&threads[t], NULL, concurrent_worker, &args[t]), 0);
    }
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        assert_int_equal(args[t].failures, 0);
    }
    close_pooled(f, &p);
    free(x);
}
