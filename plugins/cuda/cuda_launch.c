/*
 * The launch checks every CUDA compute entry makes on the host before it enqueues anything
 * (struct sizes, counts, dtypes, dims, byte ranges, alignment, overlap), the stream a launch
 * runs on, and the device-side checks of the kernels that must wait (NO_CAPTURE).
 */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_ops.h"

/* Ops whose kernels read element i before writing it, so that an output may be exactly an
 * input's bytes (the CPU driver's rule); every other overlap is refused. */
static int cuda_inplace_ok(const char *op) {
    static const char *const ops[] = {
        "Add",         "Sub",      "Mul",      "Div",        "Pow",         "Neg",
        "Abs",         "Relu",     "Exp",      "Log",        "Sqrt",        "Reciprocal",
        "Sigmoid",     "Tanh",     "Softplus", "Erf",        "LeakyRelu",   "Equal",
        "Greater",     "Less",     "Where",    "Cast",       "ReluGrad",    "LeakyReluGrad",
        "SigmoidGrad", "TanhGrad", "Softmax",  "LogSoftmax", "SoftmaxGrad", "LogSoftmaxGrad",
        "Identity",    "Reshape",  "Flatten",  "Squeeze",    "Unsqueeze",   "ScalarLike"};
    for (size_t i = 0; op && i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(op, ops[i]) == 0)
            return 1;
    return 0;
}

int32_t cuda__node_fail(ses_drv_device_t *device, const ses_drv_node_t *node, int32_t code,
                        const char *format, ...) {
    char message[448];
    va_list ap;

    va_start(ap, format);
    vsnprintf(message, sizeof message, format, ap);
    va_end(ap);
    return CUDA_DEVICE_FAIL(device, code, "%s \"%s\": %s", node && node->op ? node->op : "?",
                            node && node->name ? node->name : "(unnamed)", message);
}

/* The node's frame: struct sizes and argument counts. */
int32_t cuda__check_node(ses_drv_device_t *device, const ses_drv_node_t *node, uint32_t n_in_min,
                         uint32_t n_in_max, uint32_t n_out) {
    const size_t desc_min = SES_DRV_SIZEOF_1_0(ses_drv_tensor_desc_t, dims);

    if (!node || node->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_node_t, attr_ctx))
        return CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "the node is NULL or older than ABI 1.0");
    if (node->n_inputs < n_in_min || node->n_inputs > n_in_max || node->n_outputs != n_out ||
        (node->n_inputs && !node->inputs) || (n_out && !node->outputs))
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "has %" PRIu32 " inputs and %" PRIu32
                               " outputs; this kernel takes %" PRIu32 " to %" PRIu32
                               " and %" PRIu32,
                               node->n_inputs, node->n_outputs, n_in_min, n_in_max, n_out);
    if ((node->n_inputs && node->inputs->struct_size < desc_min) ||
        (n_out && node->outputs->struct_size < desc_min))
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "a tensor descriptor is older than ABI 1.0");
    for (uint32_t i = 0; i < node->n_inputs + n_out; i++) {
        const ses_drv_tensor_desc_t *t = i < node->n_inputs
                                             ? ses_drv_util_tensor_at(node->inputs, i)
                                             : ses_drv_util_tensor_at(node->outputs, i - node->n_inputs);
        if (t->rank > 0 && !t->dims)
            return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                   "argument %" PRIu32 " has rank %" PRIu32 " but no dims", i,
                                   t->rank);
        if (t->rank > CUDA_MAX_RANK)
            return cuda__node_fail(device, node, SES_DRV_UNIMPLEMENTED,
                                   "argument %" PRIu32 " has rank %" PRIu32
                                   "; cuda supports up to rank %d",
                                   i, t->rank, CUDA_MAX_RANK);
        for (uint32_t d = 0; d < t->rank; d++)
            if (t->dims[d] < 0 || t->dims[d] > (INT64_C(1) << 40))
                return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                       "argument %" PRIu32 " dim %" PRIu32 " is %" PRId64, i, d,
                                       t->dims[d]);
    }
    return SES_DRV_OK;
}

/* Checks a whole launch and fills @p args: inputs first, then outputs. */
int32_t cuda__check_launch(ses_drv_device_t *device, const ses_drv_launch_t *launch,
                           uint32_t n_in_min, uint32_t n_in_max, uint32_t n_out, cuda_arg_t *args) {
    int32_t st;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!launch || launch->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_launch_t, output_offsets))
        return CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "the launch is NULL or older than ABI 1.0");
    const ses_drv_node_t *node = launch->node;
    if ((st = cuda__check_node(device, node, n_in_min, n_in_max, n_out)) != SES_DRV_OK)
        return st;
    if ((node->n_inputs && (!launch->inputs || !launch->input_offsets)) ||
        (n_out && (!launch->outputs || !launch->output_offsets)))
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "the launch lacks its buffer or offset arrays");
    for (uint32_t i = 0; i < node->n_inputs + n_out; i++) {
        const int is_in = i < node->n_inputs;
        const uint32_t k = is_in ? i : i - node->n_inputs;
        const ses_drv_tensor_desc_t *t =
            is_in ? ses_drv_util_tensor_at(node->inputs, k) : ses_drv_util_tensor_at(node->outputs, k);
        ses_drv_buffer_t *b = is_in ? launch->inputs[k] : launch->outputs[k];
        const uint64_t off = is_in ? launch->input_offsets[k] : launch->output_offsets[k];
        const uint32_t es = ses_drv_util_dtype_size(t->dtype);
        uint64_t count = 1;

        int too_large = 0;
        for (uint32_t d = 0; d < t->rank; d++) {
            /* Dims are below 2^40 (cuda__check_node); keep the byte count below 2^56. */
            if (t->dims[d] != 0 && count > (UINT64_C(1) << 56) / 8 / (uint64_t)t->dims[d])
                too_large = 1;
            else
                count *= (uint64_t)t->dims[d];
        }
        if (es == 0 || !b)
            return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "%s %" PRIu32 ": %s",
                                   is_in ? "input" : "output", k,
                                   es == 0 ? "unknown dtype" : "buffer is NULL");
        if (too_large)
            return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                   "%s %" PRIu32 " is too large", is_in ? "input" : "output", k);
        const uint64_t bytes = count * es;
        if (off > b->size || bytes > b->size - off)
            return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                   "%s %" PRIu32 ": %" PRIu64 " bytes at offset %" PRIu64
                                   " end past its buffer's %" PRIu64 " bytes",
                                   is_in ? "input" : "output", k, bytes, off, b->size);
        if (((uintptr_t)b->ptr + (uintptr_t)off) % es != 0)
            return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                   "%s %" PRIu32 " at offset %" PRIu64
                                   " is not aligned to its %" PRIu32 "-byte elements",
                                   is_in ? "input" : "output", k, off, es);
        args[i].ptr = (char *)b->ptr + off;
        args[i].dims = t->dims;
        args[i].rank = t->rank;
        args[i].dtype = t->dtype;
        args[i].count = (int64_t)count;
        args[i].bytes = bytes;
    }
    for (uint32_t o = node->n_inputs; o < node->n_inputs + n_out; o++) {
        const uintptr_t ob = (uintptr_t)args[o].ptr, oe = ob + args[o].bytes;
        for (uint32_t i = 0; i < node->n_inputs && ob != oe; i++) {
            const uintptr_t ib = (uintptr_t)args[i].ptr, ie = ib + args[i].bytes;
            if (ib == ie || ie <= ob || oe <= ib)
                continue;
            if (ib == ob && ie == oe && cuda_inplace_ok(node->op))
                continue;
            return cuda__node_fail(
                device, node, SES_DRV_INVALID_ARGUMENT,
                "output %" PRIu32 " overlaps input %" PRIu32 "; %s", o - node->n_inputs, i,
                cuda_inplace_ok(node->op) ? "it may only be exactly an input's bytes"
                                          : "this op accepts no overlap");
        }
    }
    return SES_DRV_OK;
}

/* The stream to enqueue on; with none the device's own, and cuda__finish synchronizes it. */
void *cuda__stream_of(ses_drv_device_t *device, const ses_drv_launch_t *launch) {
    return launch->stream ? (void *)launch->stream : device->stream;
}

int32_t cuda__finish(ses_drv_device_t *device, const ses_drv_launch_t *launch, int err) {
    cudaError_t e = (cudaError_t)err;
    if (e == cudaSuccess && !launch->stream)
        e = cudaStreamSynchronize((cudaStream_t)device->stream);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return cuda__node_fail(device, launch->node, SES_DRV_INTERNAL, "on cuda:%d: %s",
                               device->ordinal, cudaGetErrorString(e));
    }
    return SES_DRV_OK;
}

/* Reads one scalar attribute of @p type into @p value (8 bytes: a double or an int64_t);
 * leaves it as it is when the node has no such attribute. */
static int32_t cuda_attr_scalar(const ses_drv_node_t *node, const char *name, uint32_t type,
                                void *value) {
    uint64_t n = 1;
    int32_t st;

    if (!node->attr)
        return SES_DRV_OK;
    st = node->attr(node, name, type, &n, value);
    if (st == SES_DRV_NOT_FOUND)
        return SES_DRV_OK;
    return st != SES_DRV_OK || n != 1 ? SES_DRV_INVALID_ARGUMENT : SES_DRV_OK;
}

int32_t cuda__attr_double(const ses_drv_node_t *node, const char *name, double def, double *out) {
    double v = def;
    int32_t st = cuda_attr_scalar(node, name, SES_DRV_ATTR_FLOAT, &v);
    *out = st == SES_DRV_OK ? v : def;
    return st;
}

static int32_t cuda_attr_float(const ses_drv_node_t *node, const char *name, float def,
                               float *out) {
    double v;
    int32_t st = cuda__attr_double(node, name, def, &v);
    *out = (float)v;
    return st;
}

int32_t cuda__attr_int(const ses_drv_node_t *node, const char *name, int64_t def, int64_t *out) {
    int64_t v = def;
    int32_t st = cuda_attr_scalar(node, name, SES_DRV_ATTR_INT, &v);
    *out = st == SES_DRV_OK ? v : def;
    return st;
}

/* Reads INTS attribute @p name (required) of at most @p max entries. */
int32_t cuda__attr_ints_max(ses_drv_device_t *device, const ses_drv_node_t *node, const char *name,
                            int64_t *out, uint32_t max, uint32_t *out_count) {
    uint64_t n = 0;

    *out_count = 0;
    if (!node->attr || node->attr(node, name, SES_DRV_ATTR_INTS, &n, NULL) != SES_DRV_OK)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "attribute %s is missing or not INTS", name);
    if (n > max)
        return cuda__node_fail(device, node, SES_DRV_UNIMPLEMENTED,
                               "attribute %s has %" PRIu64 " entries; cuda handles up to %" PRIu32,
                               name, n, max);
    if (n && node->attr(node, name, SES_DRV_ATTR_INTS, &n, out) != SES_DRV_OK)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "attribute %s cannot be read", name);
    *out_count = (uint32_t)n;
    return SES_DRV_OK;
}

/* Reads INTS attribute @p name (required) of at most CUDA_MAX_RANK entries. */
int32_t cuda__attr_ints(ses_drv_device_t *device, const ses_drv_node_t *node, const char *name,
                        int64_t *out, uint32_t *out_count) {
    return cuda__attr_ints_max(device, node, name, out, CUDA_MAX_RANK, out_count);
}

/* "[2,3,4]" into @p buf. */
static const char *cuda_dims_str(const int64_t *dims, uint32_t rank, char *buf, size_t size) {
    size_t used = 1;
    uint32_t d = 0;

    buf[0] = '[';
    buf[1] = '\0';
    for (; d < rank && used + 26 <= size; d++)
        used += (size_t)snprintf(buf + used, size - used, "%s%" PRId64, d ? "," : "", dims[d]);
    snprintf(buf + used, size - used, "%s]", d < rank ? "..." : "");
    return buf;
}

/* A shape mismatch naming both sides: `what: [2,3] vs [3,2]`. */
int32_t cuda__shape_fail(ses_drv_device_t *device, const ses_drv_node_t *node, const char *what,
                         const cuda_arg_t *a, const cuda_arg_t *b) {
    char x[160], y[160];
    return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "%s: %s vs %s", what,
                           cuda_dims_str(a->dims, a->rank, x, sizeof x),
                           cuda_dims_str(b->dims, b->rank, y, sizeof y));
}

/* Dense row-major element strides of @p dims. */
void cuda__strides(const int64_t *dims, uint32_t rank, int64_t *st) {
    int64_t s = 1;
    for (uint32_t d = rank; d-- > 0;) {
        st[d] = s;
        s *= dims[d];
    }
}

int cuda__same_shape(const cuda_arg_t *a, const cuda_arg_t *b) {
    if (a->rank != b->rank)
        return 0;
    for (uint32_t d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d])
            return 0;
    return 1;
}

int32_t cuda__dtypes_agree(ses_drv_device_t *device, const ses_drv_node_t *node,
                           const cuda_arg_t *args, uint32_t n) {
    for (uint32_t i = 1; i < n; i++)
        if (args[i].dtype != args[0].dtype)
            return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                   "argument %" PRIu32 " has dtype %" PRIu32
                                   ", argument 0 dtype %" PRIu32,
                                   i, args[i].dtype, args[0].dtype);
    return SES_DRV_OK;
}

/* The default supports_node: every argument within CUDA_MAX_RANK (what the launches handle). */
int32_t cuda__rank_supports(ses_drv_device_t *device, const ses_drv_node_t *node) {
    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!node || node->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_node_t, attr_ctx))
        return CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "the node is NULL or older than ABI 1.0");
    return cuda__check_node(device, node, node->n_inputs, node->n_inputs, node->n_outputs);
}

/* ---------------------------------------------------------------------------------------------
 * Device-side checks for the NO_CAPTURE kernels: the first bad position (an index out of
 * range, a zero divisor) is min-ed into device->bad_dev, copied back and waited for.
 * ------------------------------------------------------------------------------------------- */

/* Locks the check slot and resets it on stream @p s. */
int cuda__check_begin(ses_drv_device_t *device, void *s) {
    pthread_mutex_lock(&device->check_lock);
    return (int)cudaMemsetAsync(device->bad_dev, 0xff, sizeof *device->bad_dev, (cudaStream_t)s);
}

/* After the work was enqueued (@p err its status): copies the slot back, waits for @p s and
 * unlocks. *bad is the position found, or ~0 when none (or on error). */
int cuda__check_end(ses_drv_device_t *device, void *s, int err, unsigned long long *bad) {
    cudaError_t e = (cudaError_t)err;
    if (e == cudaSuccess)
        e = cudaMemcpyAsync(device->bad_host, device->bad_dev, sizeof *device->bad_host,
                            cudaMemcpyDeviceToHost, (cudaStream_t)s);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize((cudaStream_t)s);
    *bad = e == cudaSuccess ? *device->bad_host : ~0ULL;
    pthread_mutex_unlock(&device->check_lock);
    return (int)e;
}

/* Element @p at of an i32 or i64 tensor on the device (after the stream was waited for). */
int64_t cuda__read_int(const void *ptr, uint32_t dtype, unsigned long long at) {
    if (dtype == SES_DRV_DTYPE_I64) {
        int64_t v = 0;
        if (cudaMemcpy(&v, (const int64_t *)ptr + at, sizeof v, cudaMemcpyDeviceToHost) !=
            cudaSuccess)
            (void)cudaGetLastError();
        return v;
    }
    int32_t v = 0;
    if (cudaMemcpy(&v, (const int32_t *)ptr + at, sizeof v, cudaMemcpyDeviceToHost) != cudaSuccess)
        (void)cudaGetLastError();
    return v;
}
