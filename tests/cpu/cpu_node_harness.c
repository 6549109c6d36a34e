/* The node harness of cpu_matmul_test and cpu_nchwc_test (cpu_node_harness.h). */
#include "cpu_node_harness.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>

#include <cmocka.h>

void harness_set_option(harness_host_ctx_t *h, const char *key, const char *value) {
    size_t free_slot = HARNESS_MAX_OPTIONS;
    for (size_t i = 0; i < HARNESS_MAX_OPTIONS; i++) {
        if (h->keys[i] && strcmp(h->keys[i], key) == 0) {
            h->values[i] = value;
            return;
        }
        if (!h->keys[i] && free_slot == HARNESS_MAX_OPTIONS)
            free_slot = i;
    }
    assert_true(free_slot < HARNESS_MAX_OPTIONS);
    h->keys[free_slot] = key;
    h->values[free_slot] = value;
}

const char *harness_option(const harness_host_ctx_t *h, const char *key) {
    for (size_t i = 0; i < HARNESS_MAX_OPTIONS; i++)
        if (h->keys[i] && strcmp(h->keys[i], key) == 0)
            return h->values[i];
    return strcmp(key, "driver.cpu.spin_us") == 0 ? "0" : NULL;
}

static int32_t harness_get_option(ses_drv_host_ctx_t *ctx, const char *key, char *buffer,
                                  uint64_t buffer_size, uint64_t *out_size) {
    return test_host_answer(harness_option((const harness_host_ctx_t *)(const void *)ctx, key),
                            buffer, buffer_size, out_size);
}

const ses_drv_host_t harness_host = {
    .struct_size = sizeof(ses_drv_host_t),
    .log = test_host_log,
    .log_enabled = test_host_log_enabled,
    .error = test_host_error,
    .get_option = harness_get_option,
    .should_abort = test_host_should_abort,
};

int harness_cpu_open(harness_cpu_t *c, const char *path, harness_host_ctx_t *ctx) {
    return test_driver_open(c, path, &harness_host, &ctx->base);
}

void harness_cpu_close(harness_cpu_t *c) { test_driver_close(c); }

/* As the host does: count then fill, NOT_FOUND when absent, INVALID_ARGUMENT on another type. */
int32_t test_attr_read(const ses_drv_node_t *node, const char *name, uint32_t type,
                       uint64_t *inout_count, void *values) {
    for (const test_attr_t *a = node->attr_ctx; a && a->name; a++) {
        if (strcmp(a->name, name) != 0)
            continue;
        if (a->type != type)
            return SES_DRV_INVALID_ARGUMENT;
        uint64_t count = a->type == SES_DRV_ATTR_INTS || a->type == SES_DRV_ATTR_FLOATS ? a->n
                         : a->type == SES_DRV_ATTR_STRING ? strlen(a->s)
                                                          : 1;
        if (values) {
            uint64_t n = count < *inout_count ? count : *inout_count;
            if (a->type == SES_DRV_ATTR_INT && n)
                memcpy(values, &a->i, sizeof a->i);
            else if (a->type == SES_DRV_ATTR_FLOAT && n)
                memcpy(values, &a->f, sizeof a->f);
            else if (a->type == SES_DRV_ATTR_STRING)
                memcpy(values, a->s, (size_t)n);
            else if (a->type == SES_DRV_ATTR_INTS)
                memcpy(values, a->ints, (size_t)n * sizeof(int64_t));
            else if (a->type == SES_DRV_ATTR_FLOATS)
                memcpy(values, a->floats, (size_t)n * sizeof(double));
        }
        *inout_count = count;
        return SES_DRV_OK;
    }
    return SES_DRV_NOT_FOUND;
}

targ_t tensor(const float *data, uint32_t rank, ...) {
    targ_t t;
    va_list ap;

    memset(&t, 0, sizeof t);
    t.dtype = SES_DRV_DTYPE_F32;
    t.rank = rank;
    t.data = data;
    va_start(ap, rank);
    for (uint32_t d = 0; d < rank; d++)
        t.dims[d] = va_arg(ap, int);
    va_end(ap);
    return t;
}

size_t targ_count(const targ_t *t) {
    size_t n = 1;
    for (uint32_t d = 0; d < t->rank; d++)
        n *= (size_t)t->dims[d];
    return n;
}

const ses_drv_kernel_t *node_find_kernel(const ses_drv_api_t *api, ses_drv_device_t *device,
                                         const char *op, const char *sig) {
    const ses_drv_kernel_t *table = NULL;
    uint32_t count = 0, stride = 0;

    assert_int_equal(api->get_kernels(device, &table, &count, &stride), SES_DRV_OK);
    for (uint32_t i = 0; i < count; i++) {
        const ses_drv_kernel_t *k =
            (const ses_drv_kernel_t *)(const void *)((const char *)table + (size_t)i * stride);
        if (strcmp(k->op, op) == 0 && strcmp(k->signature, sig) == 0)
            return k;
    }
    fail_msg("no kernel %s %s", op, sig);
    return NULL;
}

void node_describe_kernel(noderun_t *r, const ses_drv_api_t *api, void *host_ctx,
                          size_t host_ctx_size, ses_drv_device_t *device, const ses_drv_kernel_t *k,
                          const char *op, const test_attr_t *attrs, uint32_t n_in, const targ_t *in,
                          targ_t out) {
    memset(r, 0, sizeof *r);
    r->api = api;
    r->host_ctx = host_ctx;
    r->host_ctx_size = host_ctx_size;
    r->device = device;
    r->k = k;
    assert_true(n_in <= MAX_IN);
    for (uint32_t i = 0; i < n_in; i++) {
        r->in[i] = in[i];
        r->in_desc[i].struct_size = sizeof r->in_desc[i];
        r->in_desc[i].dtype = in[i].dtype;
        r->in_desc[i].rank = in[i].rank;
        r->in_desc[i].dims = r->in[i].dims;
    }
    r->out = out;
    r->out_desc.struct_size = sizeof r->out_desc;
    r->out_desc.dtype = out.dtype;
    r->out_desc.rank = out.rank;
    r->out_desc.dims = r->out.dims;
    r->node.struct_size = sizeof r->node;
    r->node.op = op;
    r->node.name = "n1";
    r->node.n_inputs = n_in;
    r->node.n_outputs = 1;
    r->node.inputs = r->in_desc;
    r->node.outputs = &r->out_desc;
    r->node.attr = test_attr_read;
    r->node.attr_ctx = attrs;
}

/* Writes input @p i's values (f32) into its buffer. */
void node_set_input(noderun_t *r, uint32_t i, const float *data) {
    const size_t bytes = targ_count(&r->in[i]) * sizeof(float);
    float *zeros = data ? NULL : calloc(1, bytes ? bytes : 1);
    if (bytes)
        assert_int_equal(
            r->api->copy_h2d(r->device, NULL, data ? data : zeros, r->in_buf[i], 0, bytes),
            SES_DRV_OK);
    free(zeros);
}

/* Allocates the buffers, fills the inputs, and makes the kernel's state as a plan does, with
 * the node's DRV-85 bits @p constant_inputs. */
void node_open(noderun_t *r, uint64_t constant_inputs) {
    const ses_drv_api_t *api = r->api;

    for (uint32_t i = 0; i < r->node.n_inputs; i++) {
        const size_t bytes = targ_count(&r->in[i]) * sizeof(float);
        assert_int_equal(
            api->alloc(r->device, bytes ? bytes : 1, SES_DRV_MEM_DEVICE, &r->in_buf[i]),
            SES_DRV_OK);
        node_set_input(r, i, r->in[i].data);
    }
    const size_t out_bytes = targ_count(&r->out) * sizeof(float);
    assert_int_equal(
        api->alloc(r->device, out_bytes ? out_bytes : 1, SES_DRV_MEM_DEVICE, &r->out_buf),
        SES_DRV_OK);
    r->node.constant_inputs = constant_inputs;
    r->launch.struct_size = sizeof r->launch;
    r->launch.node = &r->node;
    r->launch.inputs = r->in_buf;
    r->launch.input_offsets = r->in_off;
    r->launch.outputs = &r->out_buf;
    r->launch.output_offsets = &r->out_off;
    if (r->k->create)
        assert_int_equal(r->k->create(r->device, &r->node, &r->state), SES_DRV_OK);
}

/* Computes; on success copies the output into @p out_host. */
int32_t node_compute(noderun_t *r, float *out_host) {
    memset(r->host_ctx, 0, r->host_ctx_size);
    int32_t st = r->k->compute(r->device, r->state, &r->launch);
    const size_t bytes = targ_count(&r->out) * sizeof(float);
    if (st == SES_DRV_OK && out_host && bytes)
        assert_int_equal(r->api->copy_d2h(r->device, NULL, r->out_buf, 0, out_host, bytes),
                         SES_DRV_OK);
    return st;
}

void node_close(noderun_t *r) {
    if (r->k->destroy)
        r->k->destroy(r->device, r->state);
    for (uint32_t i = 0; i < r->node.n_inputs; i++)
        r->api->free(r->device, r->in_buf[i]);
    r->api->free(r->device, r->out_buf);
}
