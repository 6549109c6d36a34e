/*
 * Constant folding: a node whose every input is a constant (of the graph, or folded before it)
 * is computed once, while the plan is compiled, by the CPU device's kernel for it, and its
 * outputs become constants of the plan. Shape and Size need only their input's type, so they
 * fold whatever computes that input. Chains that compute shapes (Shape -> Gather -> Div ->
 * Unsqueeze -> Concat -> Reshape's shape or Slice's ends) therefore reach the ops that read them
 * as known values, as ONNX Runtime's folding makes them. A plan is compiled again when a fed
 * shape changes, so the folded values follow. Fed values are not folded over: they change from
 * run to run, and each new one would compile the plan again; except where the value of an edge
 * computed from them is needed by inference (Range's limit, Reshape's shape, NonZero's input):
 * the nodes computing it are then folded over the fed values too, which the plan keeps a copy of,
 * so that a run fed other values compiles it again (compile.c, mark_needed).
 *
 * Not folded: ops without outputs or that the runtime runs itself, random ops, outputs above
 * SES__FOLD_MAX_ELEMENTS (weights stay shared, not copied per plan; SES__FOLD_MAX_ELEMENTS_SHARED
 * in a session with other devices than the CPU), nodes pinned to a device, and nodes the CPU
 * device has no kernel for or whose kernel refuses them (they then run as usual).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "plan.h"

/* Ops whose result must differ from run to run. */
int ses__fold_is_random(const char *op) {
    return !strncmp(op, "Random", 6) || !strcmp(op, "Dropout") || !strcmp(op, "Multinomial") ||
           !strcmp(op, "Bernoulli");
}

/* The element count of @p t, or -1 when it has an unknown (negative) dimension. */
static int64_t count_of(const ses__type_t *t) {
    int64_t n = 1;
    for (uint32_t d = 0; d < t->rank; d++) {
        if (t->dims[d] < 0)
            return -1;
        n *= t->dims[d];
    }
    return n;
}

int ses__fold_candidate(const ses_node_t *node) {
    return node->schema && !node->schema->host_op && !node->schema->inplace_inputs &&
           node->n_outputs > 0 && !ses__fold_is_random(node->op) && !ses_node_device(node);
}

ses_status_t ses__fold_shape(const ses_node_t *node, const ses__type_t *in, ses_tensor_t **out) {
    int64_t start = 0, end = (int64_t)in->rank, n = count_of(in);
    ses_status_t st;

    *out = NULL;
    if (n < 0)
        return SES_UNIMPLEMENTED;
    if (!strcmp(node->op, "Size"))
        return ses_tensor_create_from(SES_I64, 0, NULL, &n, sizeof n, out);
    /* Shape's start and end (op set 15), clamped to [0, rank] after adding the rank to a
     * negative one; an empty range gives an empty shape. */
    if (ses__attrs_get_int(&node->attrs, "start", &start) < 0 ||
        ses__attrs_get_int(&node->attrs, "end", &end) < 0)
        return SES_UNIMPLEMENTED; /* a bad attribute: inference names it */
    if (start < 0)
        start += in->rank;
    if (end < 0)
        end += in->rank;
    start = start < 0 ? 0 : start > (int64_t)in->rank ? (int64_t)in->rank : start;
    end = end < 0 ? 0 : end > (int64_t)in->rank ? (int64_t)in->rank : end;
    const int64_t len = end > start ? end - start : 0;
    st = ses_tensor_create(SES_I64, 1, &len, out);
    if (st == SES_OK && len)
        memcpy(ses_tensor_data(*out), &in->dims[start], (size_t)len * sizeof(int64_t));
    return st;
}

/* Frees what fold_run imported. */
static void free_buffers(const ses__device_ctx_t *dev, ses_drv_buffer_t **buffers, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (buffers[i])
            dev->api->free(dev->handle, buffers[i]);
}

ses_status_t ses__fold_run(ses_session_t *s, const ses_drv_node_t *drv_node, const char *signature,
                           const void *const *in_values, const ses__type_t *const *in_types,
                           const ses__type_t *out_types, int needed, ses_tensor_t **out_tensors) {
    const ses__device_ctx_t *dev = &s->devices[s->n_devices - 1];
    const size_t n_in = drv_node->n_inputs, n_out = drv_node->n_outputs;
    ses_drv_buffer_t *buffers[SES__MAX_INPUTS + SES__MAX_OUTPUTS] = {NULL};
    uint64_t offsets[SES__MAX_INPUTS + SES__MAX_OUTPUTS] = {0};
    const ses_drv_kernel_t *kernel;
    ses_drv_launch_t launch;
    void *state = NULL;
    int32_t rc;

    for (size_t o = 0; o < n_out; o++)
        out_tensors[o] = NULL;
    if (!dev->can_import || n_in + n_out > SES__MAX_INPUTS + SES__MAX_OUTPUTS)
        return SES_UNIMPLEMENTED;
    /* With other devices than the CPU, a folded value a kernel there reads would cross to it
     * at every run (folded values are the plan's, not the session's resident constants): only
     * values the size of shapes are folded there, unless inference needs the value. */
    const int64_t max =
        s->n_devices == 1 || needed ? SES__FOLD_MAX_ELEMENTS : SES__FOLD_MAX_ELEMENTS_SHARED;
    for (size_t o = 0; o < n_out; o++) {
        const int64_t n = count_of(&out_types[o]);
        if (n < 0 || n > max)
            return SES_UNIMPLEMENTED;
    }
    for (size_t i = 0; i < n_in; i++)
        if (!in_values[i] || count_of(in_types[i]) < 0)
            return SES_UNIMPLEMENTED;
    kernel = ses__find_kernel(dev, drv_node->op, signature, NULL, 0);
    if (!kernel)
        return SES_UNIMPLEMENTED;
    if (kernel->supports_node && kernel->supports_node(dev->handle, drv_node) != SES_DRV_OK) {
        ses__host_take_message(NULL, 0);
        return SES_UNIMPLEMENTED;
    }
    for (size_t o = 0; o < n_out; o++) {
        ses_status_t st = ses_tensor_create(out_types[o].dtype, out_types[o].rank,
                                            out_types[o].dims, &out_tensors[o]);
        if (st != SES_OK)
            goto fail;
    }
    /* The inputs are host bytes the kernel only reads; the host imports them as the run does.
     * An empty tensor's bytes are never read (DRV-49), but a buffer it must have, and drivers
     * refuse zero-byte imports: it gets a few bytes of its own. */
    _Alignas(64) uint64_t empty[8] = {0};
    int all_empty = 1;
    for (size_t o = 0; o < n_out; o++)
        all_empty &= ses_tensor_bytes(out_tensors[o]) == 0;
    if (all_empty)
        return SES_OK; /* nothing to compute */
    for (size_t a = 0; a < n_in + n_out; a++) {
        void *data = a < n_in ? (void *)(uintptr_t)in_values[a]
                              : ses_tensor_data(out_tensors[a - n_in]);
        uint64_t bytes = a < n_in ? (uint64_t)count_of(in_types[a]) *
                                        ses_dtype_size(in_types[a]->dtype)
                                  : ses_tensor_bytes(out_tensors[a - n_in]);
        if (!bytes) {
            data = empty;
            bytes = sizeof empty;
        }
        rc = dev->api->import_host_ptr(dev->handle, data, bytes, &buffers[a]);
        if (rc != SES_DRV_OK) {
            buffers[a] = NULL;
            ses__host_take_message(NULL, 0);
            goto fail;
        }
    }
    if (kernel->create && kernel->create(dev->handle, drv_node, &state) != SES_DRV_OK) {
        state = NULL;
        ses__host_take_message(NULL, 0);
        goto fail;
    }
    memset(&launch, 0, sizeof launch);
    launch.struct_size = sizeof launch;
    launch.node = drv_node;
    launch.inputs = buffers;
    launch.input_offsets = offsets;
    launch.outputs = buffers + n_in;
    launch.output_offsets = offsets + n_in;
    rc = kernel->compute(dev->handle, state, &launch);
    if (state && kernel->destroy)
        kernel->destroy(dev->handle, state);
    if (rc != SES_DRV_OK) {
        ses__host_take_message(NULL, 0);
        goto fail;
    }
    free_buffers(dev, buffers, n_in + n_out);
    return SES_OK;

fail:
    /* Not folded: the node runs as usual, and says what is wrong then if anything is. */
    free_buffers(dev, buffers, n_in + n_out);
    for (size_t o = 0; o < n_out; o++) {
        ses_tensor_release(out_tensors[o]);
        out_tensors[o] = NULL;
    }
    return SES_UNIMPLEMENTED;
}
