/* The cpu_kernels test's harness (cpu_kernels_harness.h says what each piece does). */
#include "cpu_kernels_harness.h"

static int32_t option_host_get_option(ses_drv_host_ctx_t *ctx, const char *key, char *buffer,
                                      uint64_t buffer_size, uint64_t *out_size) {
    const kernel_host_ctx_t *k = (const kernel_host_ctx_t *)(const void *)ctx;
    const char *value = strcmp(key, "driver.cpu.threads") == 0   ? k->threads
                        : strcmp(key, "driver.cpu.gemm") == 0    ? k->gemm
                        : strcmp(key, "driver.cpu.spin_us") == 0 ? k->spin_us
                                                                 : NULL;

    return test_host_answer(value, buffer, buffer_size, out_size);
}

static int32_t option_host_should_abort(ses_drv_host_ctx_t *ctx) {
    return ((const kernel_host_ctx_t *)(const void *)ctx)->abort;
}

const ses_drv_host_t option_host = {
    .struct_size = sizeof(ses_drv_host_t),
    .log = test_host_log,
    .log_enabled = test_host_log_enabled,
    .error = test_host_error,
    .get_option = option_host_get_option,
    .should_abort = option_host_should_abort,
};

int teardown(void **state) {
    fixture_t *f = *state;

    if (!f)
        return 0;
    test_driver_close(&(test_driver_t){f->lib, NULL, f->api, f->driver, f->device});
    free(f);
    *state = NULL;
    return 0;
}

int setup(void **state) {
    fixture_t *f = calloc(1, sizeof *f);
    test_driver_t d;

    if (!f)
        return -1;
    *state = f;
    f->name = "node";
    /* cmocka does not call teardown after a failed setup. */
    if (test_driver_open(&d, SES_CPU_DRIVER_PATH, &option_host, &f->ctx.base) != 0) {
        teardown(state);
        return -1;
    }
    f->lib = d.lib;
    f->api = d.api;
    f->driver = d.driver;
    f->device = d.device;
    return 0;
}

int setup_prepared(void **state) {
    int rc = setup(state);

    if (rc == 0)
        ((fixture_t *)*state)->prepare = 1;
    return rc;
}

const ses_drv_kernel_t *kernel_at(const ses_drv_kernel_t *table, uint32_t stride, uint32_t i) {
    return (const ses_drv_kernel_t *)(const void *)((const char *)table + (size_t)i * stride);
}

const ses_drv_kernel_t *find_kernel_on(const ses_drv_api_t *api, ses_drv_device_t *device,
                                       const char *op, const char *signature) {
    const ses_drv_kernel_t *table = NULL;
    uint32_t count = 0, stride = 0;

    assert_int_equal(api->get_kernels(device, &table, &count, &stride), SES_DRV_OK);
    for (uint32_t i = 0; i < count; i++) {
        const ses_drv_kernel_t *k = kernel_at(table, stride, i);
        if (strcmp(k->op, op) == 0 && strcmp(k->signature, signature) == 0)
            return k;
    }
    return NULL;
}

void **kept_state;

int32_t compute_as_host(const ses_drv_kernel_t *k, ses_drv_device_t *dev, int prepare,
                        const ses_drv_launch_t *launch) {
    void *state = NULL;
    int32_t st;

    if (kept_state) {
        if (!*kept_state && k->create &&
            (st = k->create(dev, launch->node, kept_state)) != SES_DRV_OK)
            return st;
        return k->compute(dev, *kept_state, launch);
    }
    if (prepare && k->create && (st = k->create(dev, launch->node, &state)) != SES_DRV_OK)
        return st;
    st = k->compute(dev, state, launch);
    if (k->destroy)
        k->destroy(dev, state);
    return st;
}

int32_t test_attr_read(const ses_drv_node_t *node, const char *name, uint32_t type,
                       uint64_t *inout_count, void *values) {
    const test_attr_t *a = node->attr_ctx;

    for (; a && a->name; a++) {
        if (strcmp(a->name, name) != 0)
            continue;
        if (a->type != type)
            return SES_DRV_INVALID_ARGUMENT;
        uint64_t count = a->type == SES_DRV_ATTR_INTS ? a->n_ints : 1;
        if (values) {
            uint64_t n = count < *inout_count ? count : *inout_count;
            if (a->type == SES_DRV_ATTR_INT && n)
                memcpy(values, &a->i, sizeof a->i);
            else if (a->type == SES_DRV_ATTR_FLOAT && n)
                memcpy(values, &a->f, sizeof a->f);
            else if (a->type == SES_DRV_ATTR_INTS && n)
                memcpy(values, a->ints, (size_t)n * sizeof(int64_t));
        }
        *inout_count = count;
        return SES_DRV_OK;
    }
    return SES_DRV_NOT_FOUND;
}

targ_t tensor(uint32_t dtype, const void *data, uint32_t rank, ...) {
    targ_t t;
    va_list ap;

    memset(&t, 0, sizeof t);
    t.dtype = dtype;
    t.rank = rank;
    t.data = data;
    va_start(ap, rank);
    for (uint32_t d = 0; d < rank; d++)
        t.dims[d] = va_arg(ap, int);
    va_end(ap);
    return t;
}

size_t dtype_size(uint32_t dtype) {
    switch (dtype) {
        case SES_DRV_DTYPE_F64:
        case SES_DRV_DTYPE_I64:
        case SES_DRV_DTYPE_U64:
            return 8;
        case SES_DRV_DTYPE_F32:
        case SES_DRV_DTYPE_I32:
        case SES_DRV_DTYPE_U32:
            return 4;
        case SES_DRV_DTYPE_F16:
        case SES_DRV_DTYPE_BF16:
        case SES_DRV_DTYPE_I16:
        case SES_DRV_DTYPE_U16:
            return 2;
        default:
            return 1;
    }
}

size_t targ_bytes(const targ_t *t) {
    size_t n = dtype_size(t->dtype);
    for (uint32_t d = 0; d < t->rank; d++)
        n *= (size_t)t->dims[d];
    return n;
}

int32_t run_on(const ses_drv_api_t *api, ses_drv_device_t *dev, int prepare, const char *name,
               const char *op, const char *sig, const test_attr_t *attrs, uint32_t n_in,
               const targ_t *in, targ_t out, void *out_host) {
    const ses_drv_kernel_t *k = find_kernel_on(api, dev, op, sig);
    ses_drv_tensor_desc_t in_desc[MAX_IN], out_desc;
    ses_drv_buffer_t *in_buf[MAX_IN] = {0}, *out_buf = NULL;
    uint64_t in_off[MAX_IN] = {0}, out_off = 0;
    ses_drv_node_t node;
    ses_drv_launch_t launch;

    if (!k)
        fail_msg("no kernel %s %s", op, sig);
    assert_true(n_in <= MAX_IN);
    memset(in_desc, 0, sizeof in_desc);
    for (uint32_t i = 0; i < n_in; i++) {
        size_t bytes = targ_bytes(&in[i]);
        assert_int_equal(api->alloc(dev, bytes ? bytes : 1, SES_DRV_MEM_DEVICE, &in_buf[i]),
                         SES_DRV_OK);
        void *zeros = in[i].data || !bytes ? NULL : calloc(1, bytes);
        if (bytes)
            assert_int_equal(
                api->copy_h2d(dev, NULL, in[i].data ? in[i].data : zeros, in_buf[i], 0, bytes),
                SES_DRV_OK);
        free(zeros);
        in_desc[i].struct_size = sizeof in_desc[i];
        in_desc[i].dtype = in[i].dtype;
        in_desc[i].rank = in[i].rank;
        in_desc[i].dims = in[i].dims;
    }
    size_t out_bytes = targ_bytes(&out);
    size_t alloc_bytes = out_bytes ? out_bytes : 1;
    unsigned char *fill = malloc(alloc_bytes);
    assert_non_null(fill);
    memset(fill, 0xab, alloc_bytes);
    assert_int_equal(api->alloc(dev, alloc_bytes, SES_DRV_MEM_DEVICE, &out_buf), SES_DRV_OK);
    assert_int_equal(api->copy_h2d(dev, NULL, fill, out_buf, 0, alloc_bytes), SES_DRV_OK);
    memset(&out_desc, 0, sizeof out_desc);
    out_desc.struct_size = sizeof out_desc;
    out_desc.dtype = out.dtype;
    out_desc.rank = out.rank;
    out_desc.dims = out.dims;

    memset(&node, 0, sizeof node);
    node.struct_size = sizeof node;
    node.op = op;
    node.name = name;
    node.n_inputs = n_in;
    node.n_outputs = 1;
    node.inputs = in_desc;
    node.outputs = &out_desc;
    node.attr = test_attr_read;
    node.attr_ctx = attrs;
    memset(&launch, 0, sizeof launch);
    launch.struct_size = sizeof launch;
    launch.node = &node;
    launch.inputs = in_buf;
    launch.input_offsets = in_off;
    launch.outputs = &out_buf;
    launch.output_offsets = &out_off;

    int32_t st = compute_as_host(k, dev, prepare, &launch);

    if (st == SES_DRV_OK && out_host && out_bytes)
        assert_int_equal(api->copy_d2h(dev, NULL, out_buf, 0, out_host, out_bytes), SES_DRV_OK);
    if (st == SES_DRV_OK && out_bytes == 0) {
        /* A zero-size output is a no-op: its buffer still holds the fill. */
        unsigned char b = 0;
        assert_int_equal(api->copy_d2h(dev, NULL, out_buf, 0, &b, 1), SES_DRV_OK);
        assert_int_equal(b, 0xab);
    }
    for (uint32_t i = 0; i < n_in; i++)
        api->free(dev, in_buf[i]);
    api->free(dev, out_buf);
    free(fill);
    return st;
}

int32_t run(fixture_t *f, const char *op, const char *sig, const test_attr_t *attrs, uint32_t n_in,
            const targ_t *in, targ_t out, void *out_host) {
    memset(&f->ctx.base, 0, sizeof f->ctx.base);
    return run_on(f->api, f->device, f->prepare, f->name, op, sig, attrs, n_in, in, out, out_host);
}

void expect_f32(const float *want, const float *got, size_t n, double tol) {
    for (size_t i = 0; i < n; i++) {
        if (isnan(want[i]) && isnan(got[i]))
            continue;
        if (isinf(want[i]) && want[i] == got[i])
            continue;
        double err = fabs((double)want[i] - (double)got[i]);
        if (!(err <= tol * (1.0 + fabs((double)want[i]))))
            fail_msg("element %zu: want %.9g, got %.9g", i, (double)want[i], (double)got[i]);
    }
}

void expect_f64(const double *want, const double *got, size_t n, double tol) {
    for (size_t i = 0; i < n; i++) {
        if (isnan(want[i]) && isnan(got[i]))
            continue;
        if (isinf(want[i]) && want[i] == got[i])
            continue;
        double err = fabs(want[i] - got[i]);
        if (!(err <= tol * (1.0 + fabs(want[i]))))
            fail_msg("element %zu: want %.17g, got %.17g", i, want[i], got[i]);
    }
}

void expect_i32(const int32_t *want, const int32_t *got, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (want[i] != got[i])
            fail_msg("element %zu: want %d, got %d", i, (int)want[i], (int)got[i]);
}

void expect_i64(const int64_t *want, const int64_t *got, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (want[i] != got[i])
            fail_msg("element %zu: want %lld, got %lld", i, (long long)want[i], (long long)got[i]);
}

void expect_u8(const uint8_t *want, const uint8_t *got, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (want[i] != got[i])
            fail_msg("element %zu: want %u, got %u", i, (unsigned)want[i], (unsigned)got[i]);
}

int32_t run_in_arena(fixture_t *f, ses_drv_buffer_t *arena, const char *op, const char *sig,
                     const test_attr_t *attrs, uint32_t n_in, const targ_t *in,
                     const uint64_t *in_off, targ_t out, uint64_t out_off) {
    const ses_drv_kernel_t *k = find_kernel_on(f->api, f->device, op, sig);
    ses_drv_tensor_desc_t descs[MAX_IN + 1];
    ses_drv_buffer_t *bufs[MAX_IN + 1];
    ses_drv_node_t node;
    ses_drv_launch_t launch;

    assert_non_null(k);
    memset(descs, 0, sizeof descs);
    for (uint32_t i = 0; i <= n_in; i++) {
        const targ_t *t = i < n_in ? &in[i] : &out;
        descs[i].struct_size = sizeof descs[i];
        descs[i].dtype = t->dtype;
        descs[i].rank = t->rank;
        descs[i].dims = t->dims;
        bufs[i] = arena;
    }
    memset(&node, 0, sizeof node);
    node.struct_size = sizeof node;
    node.op = op;
    node.name = f->name;
    node.n_inputs = n_in;
    node.n_outputs = 1;
    node.inputs = descs;
    node.outputs = &descs[n_in];
    node.attr = test_attr_read;
    node.attr_ctx = attrs;
    memset(&launch, 0, sizeof launch);
    launch.struct_size = sizeof launch;
    launch.node = &node;
    launch.inputs = bufs;
    launch.input_offsets = in_off;
    launch.outputs = &bufs[n_in];
    launch.output_offsets = &out_off;
    memset(&f->ctx.base, 0, sizeof f->ctx.base);
    return compute_as_host(k, f->device, f->prepare, &launch);
}
