/*
 * The CUDA driver's kernel table: each entry checks its launch (struct sizes, counts, dtypes,
 * dims, byte ranges, alignment, shapes) on the host, then enqueues device work on the launch's
 * stream, or on the device's own stream followed by a synchronize when the launch has none.
 * The semantics are the CPU driver's (plugins/cpu/README.md); ops or attribute combinations not
 * handled here are refused in supports_node and run on the next device.
 *
 * With a stream, a compute only enqueues (kernels, cudaMemsetAsync, d2d cudaMemcpyAsync,
 * cuBLAS on that stream), so that it can be captured into a CUDA Graph. The kernels that must
 * check device data on the host (Gather's and GatherGrad's indices, integer Div's divisor, the
 * loss's labels) wait for the device and carry SES_DRV_KERNEL_NO_CAPTURE.
 */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_private.h"

/* Concat takes up to 64 inputs; every other op fewer. */
#define CUDA_MAX_INPUTS 64

/* One checked argument of a launch: its device address and shape. */
typedef struct cuda_arg {
    void *ptr;
    const int64_t *dims;
    uint32_t rank;
    uint32_t dtype;
    int64_t count;
    uint64_t bytes;
} cuda_arg_t;

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

static const ses_drv_tensor_desc_t *cuda_desc_at(const ses_drv_tensor_desc_t *base, uint32_t i) {
    return (const ses_drv_tensor_desc_t *)(const void *)((const unsigned char *)base +
                                                         (size_t)i * base->struct_size);
}

static uint32_t cuda_dtype_size(uint32_t dtype) {
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
        case SES_DRV_DTYPE_I8:
        case SES_DRV_DTYPE_U8:
        case SES_DRV_DTYPE_BOOL:
            return 1;
        default:
            return 0;
    }
}

static int32_t cuda_node_fail(ses_drv_device_t *device, const ses_drv_node_t *node, int32_t code,
                              const char *format, ...) CUDA_PRINTF(4, 5);

static int32_t cuda_node_fail(ses_drv_device_t *device, const ses_drv_node_t *node, int32_t code,
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
static int32_t cuda_check_node(ses_drv_device_t *device, const ses_drv_node_t *node,
                               uint32_t n_in_min, uint32_t n_in_max, uint32_t n_out) {
    const size_t desc_min = SES_DRV_SIZEOF_1_0(ses_drv_tensor_desc_t, dims);

    if (!node || node->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_node_t, attr_ctx))
        return CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "the node is NULL or older than ABI 1.0");
    if (node->n_inputs < n_in_min || node->n_inputs > n_in_max || node->n_outputs != n_out ||
        (node->n_inputs && !node->inputs) || (n_out && !node->outputs))
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "has %" PRIu32 " inputs and %" PRIu32
                              " outputs; this kernel takes %" PRIu32 " to %" PRIu32 " and %" PRIu32,
                              node->n_inputs, node->n_outputs, n_in_min, n_in_max, n_out);
    if ((node->n_inputs && node->inputs->struct_size < desc_min) ||
        (n_out && node->outputs->struct_size < desc_min))
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "a tensor descriptor is older than ABI 1.0");
    for (uint32_t i = 0; i < node->n_inputs + n_out; i++) {
        const ses_drv_tensor_desc_t *t = i < node->n_inputs
                                             ? cuda_desc_at(node->inputs, i)
                                             : cuda_desc_at(node->outputs, i - node->n_inputs);
        if (t->rank > 0 && !t->dims)
            return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                  "argument %" PRIu32 " has rank %" PRIu32 " but no dims", i,
                                  t->rank);
        if (t->rank > CUDA_MAX_RANK)
            return cuda_node_fail(device, node, SES_DRV_UNIMPLEMENTED,
                                  "argument %" PRIu32 " has rank %" PRIu32
                                  "; cuda supports up to rank %d",
                                  i, t->rank, CUDA_MAX_RANK);
        for (uint32_t d = 0; d < t->rank; d++)
            if (t->dims[d] < 0 || t->dims[d] > (INT64_C(1) << 40))
                return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                      "argument %" PRIu32 " dim %" PRIu32 " is %" PRId64, i, d,
                                      t->dims[d]);
    }
    return SES_DRV_OK;
}

/* Checks a whole launch and fills @p args: inputs first, then outputs. */
static int32_t cuda_check_launch(ses_drv_device_t *device, const ses_drv_launch_t *launch,
                                 uint32_t n_in_min, uint32_t n_in_max, uint32_t n_out,
                                 cuda_arg_t *args) {
    int32_t st;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!launch || launch->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_launch_t, output_offsets))
        return CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "the launch is NULL or older than ABI 1.0");
    const ses_drv_node_t *node = launch->node;
    if ((st = cuda_check_node(device, node, n_in_min, n_in_max, n_out)) != SES_DRV_OK)
        return st;
    if ((node->n_inputs && (!launch->inputs || !launch->input_offsets)) ||
        (n_out && (!launch->outputs || !launch->output_offsets)))
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "the launch lacks its buffer or offset arrays");
    for (uint32_t i = 0; i < node->n_inputs + n_out; i++) {
        const int is_in = i < node->n_inputs;
        const uint32_t k = is_in ? i : i - node->n_inputs;
        const ses_drv_tensor_desc_t *t =
            is_in ? cuda_desc_at(node->inputs, k) : cuda_desc_at(node->outputs, k);
        ses_drv_buffer_t *b = is_in ? launch->inputs[k] : launch->outputs[k];
        const uint64_t off = is_in ? launch->input_offsets[k] : launch->output_offsets[k];
        const uint32_t es = cuda_dtype_size(t->dtype);
        uint64_t count = 1;

        int too_large = 0;
        for (uint32_t d = 0; d < t->rank; d++) {
            /* Dims are below 2^40 (cuda_check_node); keep the byte count below 2^56. */
            if (t->dims[d] != 0 && count > (UINT64_C(1) << 56) / 8 / (uint64_t)t->dims[d])
                too_large = 1;
            else
                count *= (uint64_t)t->dims[d];
        }
        if (es == 0 || !b)
            return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "%s %" PRIu32 ": %s",
                                  is_in ? "input" : "output", k,
                                  es == 0 ? "unknown dtype" : "buffer is NULL");
        if (too_large)
            return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                  "%s %" PRIu32 " is too large", is_in ? "input" : "output", k);
        const uint64_t bytes = count * es;
        if (off > b->size || bytes > b->size - off)
            return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                  "%s %" PRIu32 ": %" PRIu64 " bytes at offset %" PRIu64
                                  " end past its buffer's %" PRIu64 " bytes",
                                  is_in ? "input" : "output", k, bytes, off, b->size);
        if (((uintptr_t)b->ptr + (uintptr_t)off) % es != 0)
            return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
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
            return cuda_node_fail(
                device, node, SES_DRV_INVALID_ARGUMENT,
                "output %" PRIu32 " overlaps input %" PRIu32 "; %s", o - node->n_inputs, i,
                cuda_inplace_ok(node->op) ? "it may only be exactly an input's bytes"
                                          : "this op accepts no overlap");
        }
    }
    return SES_DRV_OK;
}

/* The stream to enqueue on; with none the device's own, and cuda_finish synchronizes it. */
static void *cuda_stream_of(ses_drv_device_t *device, const ses_drv_launch_t *launch) {
    return launch->stream ? (void *)launch->stream : device->stream;
}

static int32_t cuda_finish(ses_drv_device_t *device, const ses_drv_launch_t *launch, int err) {
    cudaError_t e = (cudaError_t)err;
    if (e == cudaSuccess && !launch->stream)
        e = cudaStreamSynchronize((cudaStream_t)device->stream);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return cuda_node_fail(device, launch->node, SES_DRV_INTERNAL, "on cuda:%d: %s",
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

static int32_t cuda_attr_double(const ses_drv_node_t *node, const char *name, double def,
                                double *out) {
    double v = def;
    int32_t st = cuda_attr_scalar(node, name, SES_DRV_ATTR_FLOAT, &v);
    *out = st == SES_DRV_OK ? v : def;
    return st;
}

static int32_t cuda_attr_float(const ses_drv_node_t *node, const char *name, float def,
                               float *out) {
    double v;
    int32_t st = cuda_attr_double(node, name, def, &v);
    *out = (float)v;
    return st;
}

static int32_t cuda_attr_int(const ses_drv_node_t *node, const char *name, int64_t def,
                             int64_t *out) {
    int64_t v = def;
    int32_t st = cuda_attr_scalar(node, name, SES_DRV_ATTR_INT, &v);
    *out = st == SES_DRV_OK ? v : def;
    return st;
}

/* Reads INTS attribute @p name (required) of at most @p max entries. */
static int32_t cuda_attr_ints_max(ses_drv_device_t *device, const ses_drv_node_t *node,
                                  const char *name, int64_t *out, uint32_t max,
                                  uint32_t *out_count) {
    uint64_t n = 0;

    *out_count = 0;
    if (!node->attr || node->attr(node, name, SES_DRV_ATTR_INTS, &n, NULL) != SES_DRV_OK)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "attribute %s is missing or not INTS", name);
    if (n > max)
        return cuda_node_fail(device, node, SES_DRV_UNIMPLEMENTED,
                              "attribute %s has %" PRIu64 " entries; cuda handles up to %" PRIu32,
                              name, n, max);
    if (n && node->attr(node, name, SES_DRV_ATTR_INTS, &n, out) != SES_DRV_OK)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "attribute %s cannot be read",
                              name);
    *out_count = (uint32_t)n;
    return SES_DRV_OK;
}

/* Reads INTS attribute @p name (required) of at most CUDA_MAX_RANK entries. */
static int32_t cuda_attr_ints(ses_drv_device_t *device, const ses_drv_node_t *node,
                              const char *name, int64_t *out, uint32_t *out_count) {
    return cuda_attr_ints_max(device, node, name, out, CUDA_MAX_RANK, out_count);
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
static int32_t cuda_shape_fail(ses_drv_device_t *device, const ses_drv_node_t *node,
                               const char *what, const cuda_arg_t *a, const cuda_arg_t *b) {
    char x[160], y[160];
    return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "%s: %s vs %s", what,
                          cuda_dims_str(a->dims, a->rank, x, sizeof x),
                          cuda_dims_str(b->dims, b->rank, y, sizeof y));
}

/* Dense row-major element strides of @p dims. */
static void cuda_strides(const int64_t *dims, uint32_t rank, int64_t *st) {
    int64_t s = 1;
    for (uint32_t d = rank; d-- > 0;) {
        st[d] = s;
        s *= dims[d];
    }
}

static int cuda_same_shape(const cuda_arg_t *a, const cuda_arg_t *b) {
    if (a->rank != b->rank)
        return 0;
    for (uint32_t d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d])
            return 0;
    return 1;
}

static int32_t cuda_dtypes_agree(ses_drv_device_t *device, const ses_drv_node_t *node,
                                 const cuda_arg_t *args, uint32_t n) {
    for (uint32_t i = 1; i < n; i++)
        if (args[i].dtype != args[0].dtype)
            return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                  "argument %" PRIu32 " has dtype %" PRIu32
                                  ", argument 0 dtype %" PRIu32,
                                  i, args[i].dtype, args[0].dtype);
    return SES_DRV_OK;
}

/* The default supports_node: every argument within CUDA_MAX_RANK (what the launches handle). */
static int32_t cuda_rank_supports(ses_drv_device_t *device, const ses_drv_node_t *node) {
    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!node || node->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_node_t, attr_ctx))
        return CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "the node is NULL or older than ABI 1.0");
    return cuda_check_node(device, node, node->n_inputs, node->n_inputs, node->n_outputs);
}

/* ---------------------------------------------------------------------------------------------
 * Device-side checks for the NO_CAPTURE kernels: the first bad position (an index out of
 * range, a zero divisor) is min-ed into device->bad_dev, copied back and waited for.
 * ------------------------------------------------------------------------------------------- */

/* Locks the check slot and resets it on stream @p s. */
static int cuda_check_begin(ses_drv_device_t *device, void *s) {
    pthread_mutex_lock(&device->check_lock);
    return (int)cudaMemsetAsync(device->bad_dev, 0xff, sizeof *device->bad_dev, (cudaStream_t)s);
}

/* After the work was enqueued (@p err its status): copies the slot back, waits for @p s and
 * unlocks. *bad is the position found, or ~0 when none (or on error). */
static int cuda_check_end(ses_drv_device_t *device, void *s, int err, unsigned long long *bad) {
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
static int64_t cuda_read_int(const void *ptr, uint32_t dtype, unsigned long long at) {
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

/* ---------------------------------------------------------------------------------------------
 * Elementwise: arithmetic with broadcasting, the activation gradients, comparisons, Where, the
 * unary ops, Cast.
 * ------------------------------------------------------------------------------------------- */

/* Fills walk @p g of @p n operands broadcast (numpy, one way) to @p o; 0 when one does not. */
static int cuda_bcast_n(const cuda_arg_t *const *in, uint32_t n, const cuda_arg_t *o,
                        cuda_bcast_t *g) {
    memset(g, 0, sizeof *g);
    g->rank = o->rank;
    g->count = o->count;
    g->same = 1;
    if (o->rank > CUDA_MAX_RANK)
        return 0;
    for (uint32_t d = 0; d < o->rank; d++)
        g->dims[d] = o->dims[d] > 0 ? o->dims[d] : 1;
    for (uint32_t k = 0; k < n; k++) {
        int64_t step = 1;
        if (in[k]->rank > o->rank)
            return 0;
        g->same = g->same && cuda_same_shape(in[k], o);
        const uint32_t lead = o->rank - in[k]->rank;
        for (uint32_t d = o->rank; d-- > 0;) {
            const int64_t dim = d < lead ? 1 : in[k]->dims[d - lead];
            if (dim != 1 && dim != o->dims[d])
                return 0;
            g->stride[k][d] = dim == 1 ? 0 : step;
            step *= dim;
        }
    }
    return 1;
}

static int cuda_bcast(const cuda_arg_t *a, const cuda_arg_t *b, const cuda_arg_t *o,
                      cuda_bcast_t *g) {
    const cuda_arg_t *in[2] = {a, b};
    return cuda_bcast_n(in, 2, o, g);
}

static int cuda_binary_code(const char *op) {
    static const struct {
        const char *op;
        int code;
    } ops[] = {{"Add", CUDA_BIN_ADD},
               {"Sub", CUDA_BIN_SUB},
               {"Mul", CUDA_BIN_MUL},
               {"Div", CUDA_BIN_DIV},
               {"Pow", CUDA_BIN_POW},
               {"ReluGrad", CUDA_BIN_RELU_GRAD},
               {"LeakyReluGrad", CUDA_BIN_LEAKY_RELU_GRAD},
               {"SigmoidGrad", CUDA_BIN_SIGMOID_GRAD},
               {"TanhGrad", CUDA_BIN_TANH_GRAD}};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(op, ops[i].op) == 0)
            return ops[i].code;
    return -1;
}

static int cuda_unary_code(const char *op) {
    static const struct {
        const char *op;
        int code;
    } ops[] = {{"Neg", CUDA_UN_NEG},
               {"Abs", CUDA_UN_ABS},
               {"Relu", CUDA_UN_RELU},
               {"Exp", CUDA_UN_EXP},
               {"Log", CUDA_UN_LOG},
               {"Sqrt", CUDA_UN_SQRT},
               {"Reciprocal", CUDA_UN_RECIPROCAL},
               {"Sigmoid", CUDA_UN_SIGMOID},
               {"Tanh", CUDA_UN_TANH},
               {"LeakyRelu", CUDA_UN_LEAKY_RELU},
               {"Softplus", CUDA_UN_SOFTPLUS},
               {"Erf", CUDA_UN_ERF}};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(op, ops[i].op) == 0)
            return ops[i].code;
    return -1;
}

static int cuda_is_int(uint32_t dtype) {
    return dtype == SES_DRV_DTYPE_I32 || dtype == SES_DRV_DTYPE_I64;
}

static int32_t cuda_binary(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[3];
    cuda_bcast_t g;
    double alpha = 0.01;
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 2, 2, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const int op = node->op ? cuda_binary_code(node->op) : -1;
    if (op < 0)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "not a binary op");
    if ((st = cuda_dtypes_agree(device, node, a, 3)) != SES_DRV_OK)
        return st;
    const uint32_t dt = a[2].dtype;
    if (cuda_is_int(dt) && op > CUDA_BIN_DIV)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "%s takes floats only on cuda", node->op);
    if (op == CUDA_BIN_LEAKY_RELU_GRAD &&
        cuda_attr_double(node, "alpha", 0.01, &alpha) != SES_DRV_OK)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "attribute alpha is not a FLOAT");
    if (op >= CUDA_BIN_RELU_GRAD &&
        !(cuda_same_shape(&a[0], &a[2]) && cuda_same_shape(&a[1], &a[2])))
        return cuda_shape_fail(device, node,
                               "dy, the forward tensor and the output must have one shape", &a[0],
                               &a[1]);
    if (!cuda_bcast(&a[0], &a[1], &a[2], &g))
        return cuda_shape_fail(device, node, "the inputs do not broadcast to the output", &a[0],
                               &a[1]);
    if (a[2].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    void *s = cuda_stream_of(device, launch);
    if (!(cuda_is_int(dt) && op == CUDA_BIN_DIV))
        return cuda_finish(device, launch,
                           cuda__binary(dt, &g, op, alpha, a[0].ptr, a[1].ptr, a[2].ptr, s));
    /* Integer Div: every divisor element is used (the output is not empty), so one zero
     * anywhere is an error; the kernel itself gives 0 there and reads nothing out of range. */
    unsigned long long bad;
    int e = cuda_check_begin(device, s);
    if (e == 0)
        e = cuda__find_zero(dt, a[1].count, a[1].ptr, device->bad_dev, s);
    if (e == 0)
        e = cuda__binary(dt, &g, op, alpha, a[0].ptr, a[1].ptr, a[2].ptr, s);
    e = cuda_check_end(device, s, e, &bad);
    if (e != 0)
        return cuda_finish(device, launch, e);
    if (bad != ~0ULL)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "integer division by zero: input 1 (the divisor) holds 0 at "
                              "element %llu",
                              bad);
    return SES_DRV_OK;
}

static int32_t cuda_unary(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    double alpha = 0.01;
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const int op = node->op ? cuda_unary_code(node->op) : -1;
    if (op < 0)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "not a unary op");
    if ((st = cuda_dtypes_agree(device, node, a, 2)) != SES_DRV_OK)
        return st;
    if (cuda_is_int(a[1].dtype) && op > CUDA_UN_RELU)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "%s takes floats only",
                              node->op);
    if (!cuda_same_shape(&a[0], &a[1]))
        return cuda_shape_fail(device, node, "input and output shapes differ", &a[0], &a[1]);
    if (op == CUDA_UN_LEAKY_RELU && cuda_attr_double(node, "alpha", 0.01, &alpha) != SES_DRV_OK)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "attribute alpha is not a FLOAT");
    if (a[1].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    return cuda_finish(device, launch,
                       cuda__unary(a[1].dtype, a[1].count, op, alpha, a[0].ptr, a[1].ptr,
                                   cuda_stream_of(device, launch)));
}

/* Equal, Greater, Less: T,T->bool with broadcasting. */
static int32_t cuda_compare(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[3];
    cuda_bcast_t g;
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 2, 2, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const int op = strcmp(node->op, "Equal") == 0     ? CUDA_CMP_EQUAL
                   : strcmp(node->op, "Greater") == 0 ? CUDA_CMP_GREATER
                                                      : CUDA_CMP_LESS;
    if ((st = cuda_dtypes_agree(device, node, a, 2)) != SES_DRV_OK)
        return st;
    if (a[2].dtype != SES_DRV_DTYPE_BOOL)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "the output has dtype %" PRIu32 ", not bool", a[2].dtype);
    if (!cuda_bcast(&a[0], &a[1], &a[2], &g))
        return cuda_shape_fail(device, node, "the inputs do not broadcast to the output", &a[0],
                               &a[1]);
    if (a[2].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    return cuda_finish(device, launch,
                       cuda__compare(a[0].dtype, &g, op, a[0].ptr, a[1].ptr, a[2].ptr,
                                     cuda_stream_of(device, launch)));
}

/* Where(condition, X, Y): bool,T,T->T with three-way broadcasting. */
static int32_t cuda_where(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[4];
    cuda_bcast_t g;
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 3, 3, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if (a[0].dtype != SES_DRV_DTYPE_BOOL || a[1].dtype != a[3].dtype || a[2].dtype != a[3].dtype)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "dtypes are %" PRIu32 ", %" PRIu32 ", %" PRIu32 " -> %" PRIu32
                              "; Where takes bool,T,T->T",
                              a[0].dtype, a[1].dtype, a[2].dtype, a[3].dtype);
    const cuda_arg_t *in[3] = {&a[0], &a[1], &a[2]};
    if (!cuda_bcast_n(in, 3, &a[3], &g))
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "the inputs do not broadcast to the output");
    if (a[3].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    return cuda_finish(device, launch,
                       cuda__where(cuda_dtype_size(a[3].dtype), &g, a[0].ptr, a[1].ptr, a[2].ptr,
                                   a[3].ptr, cuda_stream_of(device, launch)));
}

/* Cast A->B; `to`, when present, must name the output's dtype. */
static int32_t cuda_cast(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    int64_t to = 0;
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if (cuda_attr_int(node, "to", (int64_t)a[1].dtype, &to) != SES_DRV_OK ||
        to != (int64_t)a[1].dtype)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "attribute to is %" PRId64 ", but the output's dtype is %" PRIu32, to,
                              a[1].dtype);
    if (!cuda_same_shape(&a[0], &a[1]))
        return cuda_shape_fail(device, node, "input and output shapes differ", &a[0], &a[1]);
    if (a[1].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    return cuda_finish(device, launch,
                       cuda__cast(a[0].dtype, a[1].dtype, a[1].count, a[0].ptr, a[1].ptr,
                                  cuda_stream_of(device, launch)));
}

/* Identity, Reshape, Flatten, Squeeze, Unsqueeze: a device copy of the same element count. */
static int32_t cuda_copy_op(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK)
        return st;
    if ((st = cuda_dtypes_agree(device, launch->node, a, 2)) != SES_DRV_OK)
        return st;
    if (a[0].count != a[1].count)
        return cuda_node_fail(device, launch->node, SES_DRV_INVALID_ARGUMENT,
                              "input has %" PRId64 " elements, output %" PRId64, a[0].count,
                              a[1].count);
    if (a[1].count == 0 || a[0].ptr == a[1].ptr)
        return SES_DRV_OK;
    if ((st = cuda__use(device, launch->node->op)) != SES_DRV_OK)
        return st;
    /* Both ranges are within their buffers; they are either the same bytes or disjoint (the
     * host never hands a partly overlapping copy to a kernel of one node, DRV-50). */
    return cuda_finish(device, launch,
                       (int)cudaMemcpyAsync(
                           a[1].ptr, a[0].ptr, (size_t)a[1].count * cuda_dtype_size(a[1].dtype),
                           cudaMemcpyDeviceToDevice, (cudaStream_t)cuda_stream_of(device, launch)));
}

/* ---------------------------------------------------------------------------------------------
 * Data movement: Transpose, Slice, Concat, ExpandLike, SliceGrad (one strided-copy kernel), and
 * Gather, GatherGrad.
 * ------------------------------------------------------------------------------------------- */

/* Enqueues the strided copy of walk @p g (x read at stride[0], y written at stride[1]). */
static int32_t cuda_run_strided(ses_drv_device_t *device, const ses_drv_launch_t *launch,
                                uint32_t esize, const cuda_bcast_t *g, const void *x, void *y) {
    int32_t st;
    if (g->count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, launch->node->op)) != SES_DRV_OK)
        return st;
    return cuda_finish(device, launch,
                       cuda__strided(esize, g, x, y, cuda_stream_of(device, launch)));
}

static int32_t cuda_transpose(ses_drv_device_t *device, void *state,
                              const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    int64_t perm[CUDA_MAX_RANK], ist[CUDA_MAX_RANK];
    uint32_t np = 0;
    cuda_bcast_t g;
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK ||
        (st = cuda_dtypes_agree(device, launch->node, a, 2)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = cuda_attr_ints(device, node, "perm", perm, &np)) != SES_DRV_OK)
        return st;
    if (np != a[0].rank || a[1].rank != a[0].rank)
        return cuda_shape_fail(device, node, "perm does not fit the ranks", &a[0], &a[1]);
    memset(&g, 0, sizeof g);
    g.rank = a[1].rank;
    g.count = a[1].count;
    cuda_strides(a[0].dims, a[0].rank, ist);
    cuda_strides(a[1].dims, a[1].rank, g.stride[1]);
    unsigned seen = 0;
    for (uint32_t d = 0; d < np; d++) {
        if (perm[d] < 0 || perm[d] >= (int64_t)np || (seen & (1u << perm[d])) ||
            a[0].dims[perm[d]] != a[1].dims[d])
            return cuda_shape_fail(device, node,
                                   "perm does not map the input's dims to the "
                                   "output's",
                                   &a[0], &a[1]);
        seen |= 1u << perm[d];
        g.dims[d] = a[1].dims[d];
        g.stride[0][d] = ist[perm[d]];
    }
    return cuda_run_strided(device, launch, cuda_dtype_size(a[1].dtype), &g, a[0].ptr, a[1].ptr);
}

/*
 * The walk of Slice (and, reversed, SliceGrad): @p big is the sliced tensor, @p small the part
 * taken, `starts` and `steps` one per axis of big. Fills @p big_base (the element offset of the
 * first element taken) and the strides in big of each step of small's dims.
 */
static int32_t cuda_slice_walk(ses_drv_device_t *device, const ses_drv_node_t *node,
                               const cuda_arg_t *big, const cuda_arg_t *small, int64_t *big_base,
                               int64_t *big_step) {
    int64_t starts[CUDA_MAX_RANK], steps[CUDA_MAX_RANK], bst[CUDA_MAX_RANK];
    uint32_t ns = 0, nt = 0;
    int32_t st;

    if ((st = cuda_attr_ints(device, node, "starts", starts, &ns)) != SES_DRV_OK ||
        (st = cuda_attr_ints(device, node, "steps", steps, &nt)) != SES_DRV_OK)
        return st;
    if (ns != big->rank || nt != big->rank || small->rank != big->rank)
        return cuda_shape_fail(device, node, "starts and steps do not fit the ranks", big, small);
    cuda_strides(big->dims, big->rank, bst);
    *big_base = 0;
    for (uint32_t d = 0; d < ns; d++) {
        if (steps[d] == 0)
            return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                  "axis %" PRIu32 ": step is 0", d);
        big_step[d] = steps[d] * bst[d];
        if (small->dims[d] == 0)
            continue;
        const int64_t last = starts[d] + (small->dims[d] - 1) * steps[d];
        if (starts[d] < 0 || starts[d] >= big->dims[d] || last < 0 || last >= big->dims[d])
            return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                  "axis %" PRIu32 ": start %" PRId64 " step %" PRId64
                                  " for %" PRId64 " elements leaves the dim of %" PRId64,
                                  d, starts[d], steps[d], small->dims[d], big->dims[d]);
        *big_base += starts[d] * bst[d];
    }
    return SES_DRV_OK;
}

static int32_t cuda_slice(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    cuda_bcast_t g;
    int64_t base = 0;
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK ||
        (st = cuda_dtypes_agree(device, launch->node, a, 2)) != SES_DRV_OK)
        return st;
    memset(&g, 0, sizeof g);
    if ((st = cuda_slice_walk(device, launch->node, &a[0], &a[1], &base, g.stride[0])) !=
        SES_DRV_OK)
        return st;
    if (a[1].count == 0)
        return SES_DRV_OK;
    const uint32_t es = cuda_dtype_size(a[1].dtype);
    g.rank = a[1].rank;
    g.count = a[1].count;
    memcpy(g.dims, a[1].dims, a[1].rank * sizeof(int64_t));
    cuda_strides(a[1].dims, a[1].rank, g.stride[1]);
    return cuda_run_strided(device, launch, es, &g, (const char *)a[0].ptr + base * (int64_t)es,
                            a[1].ptr);
}

/* SliceGrad: zeros of the output's shape, with dy written where Slice read. */
static int32_t cuda_slice_grad(ses_drv_device_t *device, void *state,
                               const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    cuda_bcast_t g;
    int64_t base = 0;
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK ||
        (st = cuda_dtypes_agree(device, launch->node, a, 2)) != SES_DRV_OK)
        return st;
    memset(&g, 0, sizeof g);
    if ((st = cuda_slice_walk(device, launch->node, &a[1], &a[0], &base, g.stride[1])) !=
        SES_DRV_OK)
        return st;
    if (a[1].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, launch->node->op)) != SES_DRV_OK)
        return st;
    const uint32_t es = cuda_dtype_size(a[1].dtype);
    int e = (int)cudaMemsetAsync(a[1].ptr, 0, (size_t)a[1].bytes,
                                 (cudaStream_t)cuda_stream_of(device, launch));
    if (e != 0 || a[0].count == 0)
        return cuda_finish(device, launch, e);
    g.rank = a[0].rank;
    g.count = a[0].count;
    memcpy(g.dims, a[0].dims, a[0].rank * sizeof(int64_t));
    cuda_strides(a[0].dims, a[0].rank, g.stride[0]);
    return cuda_run_strided(device, launch, es, &g, a[0].ptr,
                            (char *)a[1].ptr + base * (int64_t)es);
}

static int32_t cuda_concat(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[CUDA_MAX_INPUTS + 1];
    int64_t axis = -1, yst[CUDA_MAX_RANK];
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 1, CUDA_MAX_INPUTS, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const uint32_t ni = node->n_inputs;
    const cuda_arg_t *y = &a[ni];
    if ((st = cuda_dtypes_agree(device, node, a, ni + 1)) != SES_DRV_OK)
        return st;
    if (cuda_attr_int(node, "axis", -1, &axis) != SES_DRV_OK || axis < 0 ||
        axis >= (int64_t)y->rank)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "axis %" PRId64 " is missing or outside rank %" PRIu32, axis,
                              y->rank);
    int64_t at = 0;
    for (uint32_t k = 0; k < ni; k++) {
        int ok = a[k].rank == y->rank;
        for (uint32_t d = 0; ok && d < y->rank; d++)
            ok = d == (uint32_t)axis || a[k].dims[d] == y->dims[d];
        if (!ok)
            return cuda_shape_fail(device, node, "an input does not fit the output", &a[k], y);
        at += a[k].dims[axis];
    }
    if (at != y->dims[axis])
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "the inputs add up to %" PRId64 " along axis %" PRId64
                              ", the output has %" PRId64,
                              at, axis, y->dims[axis]);
    if (y->count == 0)
        return SES_DRV_OK;
    cuda_strides(y->dims, y->rank, yst);
    const uint32_t es = cuda_dtype_size(y->dtype);
    at = 0;
    for (uint32_t k = 0; k < ni; k++) {
        cuda_bcast_t g;
        memset(&g, 0, sizeof g);
        g.rank = a[k].rank;
        g.count = a[k].count;
        memcpy(g.dims, a[k].dims, a[k].rank * sizeof(int64_t));
        cuda_strides(a[k].dims, a[k].rank, g.stride[0]);
        memcpy(g.stride[1], yst, sizeof yst);
        if ((st = cuda_run_strided(device, launch, es, &g, a[k].ptr,
                                   (char *)y->ptr + at * yst[axis] * (int64_t)es)) != SES_DRV_OK)
            return st;
        at += a[k].dims[axis];
    }
    return SES_DRV_OK;
}

/* ExpandLike: x broadcast (numpy, one way) to the output's shape, any dtype. */
static int32_t cuda_expand_like(ses_drv_device_t *device, void *state,
                                const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    cuda_bcast_t g;
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK ||
        (st = cuda_dtypes_agree(device, launch->node, a, 2)) != SES_DRV_OK)
        return st;
    const cuda_arg_t *in[1] = {&a[0]};
    if (!cuda_bcast_n(in, 1, &a[1], &g))
        return cuda_shape_fail(device, launch->node, "the input does not broadcast to the output",
                               &a[0], &a[1]);
    cuda_strides(a[1].dims, a[1].rank, g.stride[1]);
    return cuda_run_strided(device, launch, cuda_dtype_size(a[1].dtype), &g, a[0].ptr, a[1].ptr);
}

/*
 * Gather's and GatherGrad's geometry: @p data is [outer, dim, inner] along @p axis, @p ix the
 * indices, @p g the gathered side ([outer, ix dims..., inner]). Checks the shapes.
 */
static int32_t cuda_gather_geometry(ses_drv_device_t *device, const ses_drv_node_t *node,
                                    const cuda_arg_t *data, const cuda_arg_t *ix,
                                    const cuda_arg_t *gathered, int64_t *axis, int64_t *outer,
                                    int64_t *inner) {
    if (cuda_attr_int(node, "axis", 0, axis) != SES_DRV_OK || *axis < 0 ||
        *axis >= (int64_t)data->rank)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "axis %" PRId64 " is outside rank %" PRIu32, *axis, data->rank);
    if (!cuda_is_int(ix->dtype) || gathered->rank != data->rank - 1 + ix->rank ||
        gathered->dtype != data->dtype)
        return cuda_shape_fail(device, node, "data, indices and the gathered tensor disagree", data,
                               gathered);
    const uint32_t ax = (uint32_t)*axis;
    *outer = *inner = 1;
    for (uint32_t d = 0; d < data->rank; d++) {
        if (d < ax)
            *outer *= data->dims[d];
        else if (d > ax)
            *inner *= data->dims[d];
    }
    for (uint32_t d = 0; d < gathered->rank; d++) {
        const int64_t want = d < ax              ? data->dims[d]
                             : d < ax + ix->rank ? ix->dims[d - ax]
                                                 : data->dims[d - ix->rank + 1];
        if (gathered->dims[d] != want)
            return cuda_shape_fail(device, node,
                                   "the gathered shape does not match data and "
                                   "indices",
                                   data, gathered);
    }
    return SES_DRV_OK;
}

/* Checks the indices on the device, then runs @p what (0 Gather, 1 GatherGrad); waits. */
static int32_t cuda_gather_run(ses_drv_device_t *device, const ses_drv_launch_t *launch, int grad,
                               const cuda_arg_t *data, const cuda_arg_t *ix, const void *src,
                               void *dst, int64_t axis, int64_t outer, int64_t inner) {
    const int64_t dim = data->dims[axis];
    const int idx64 = ix->dtype == SES_DRV_DTYPE_I64;
    void *s = cuda_stream_of(device, launch);
    unsigned long long bad;
    int32_t st;

    if ((st = cuda__use(device, launch->node->op)) != SES_DRV_OK)
        return st;
    int e = cuda_check_begin(device, s);
    if (e == 0 && ix->count > 0)
        e = cuda__check_indices(ix->count, ix->ptr, idx64, dim, device->bad_dev, s);
    if (e == 0)
        e = grad ? cuda__gather_grad(data->dtype, outer, dim, ix->count, inner, src, ix->ptr, idx64,
                                     dst, s)
                 : cuda__gather(cuda_dtype_size(data->dtype), outer, dim, ix->count, inner, src,
                                ix->ptr, idx64, dst, s);
    e = cuda_check_end(device, s, e, &bad);
    if (e != 0)
        return cuda_finish(device, launch, e);
    if (bad != ~0ULL)
        return cuda_node_fail(device, launch->node, SES_DRV_INVALID_ARGUMENT,
                              "index %" PRId64
                              " (element %llu of the indices) is outside [-%" PRId64 ", %" PRId64
                              ") of axis %" PRId64,
                              cuda_read_int(ix->ptr, ix->dtype, bad), bad, dim, dim, axis);
    return SES_DRV_OK;
}

static int32_t cuda_gather(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[3];
    int64_t axis = 0, outer = 0, inner = 0;
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 2, 2, 1, a)) != SES_DRV_OK)
        return st;
    if ((st = cuda_gather_geometry(device, launch->node, &a[0], &a[1], &a[2], &axis, &outer,
                                   &inner)) != SES_DRV_OK)
        return st;
    if (a[2].count == 0)
        return SES_DRV_OK;
    return cuda_gather_run(device, launch, 0, &a[0], &a[1], a[0].ptr, a[2].ptr, axis, outer, inner);
}

/* GatherGrad: dy, indices -> zeros of the output's shape plus dy's blocks where Gather took
 * them. The output plays Gather's data, dy the gathered tensor. */
static int32_t cuda_gather_grad(ses_drv_device_t *device, void *state,
                                const ses_drv_launch_t *launch) {
    cuda_arg_t a[3];
    int64_t axis = 0, outer = 0, inner = 0;
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 2, 2, 1, a)) != SES_DRV_OK)
        return st;
    if ((st = cuda_gather_geometry(device, launch->node, &a[2], &a[1], &a[0], &axis, &outer,
                                   &inner)) != SES_DRV_OK)
        return st;
    if (a[2].count == 0)
        return SES_DRV_OK;
    return cuda_gather_run(device, launch, 1, &a[2], &a[1], a[0].ptr, a[2].ptr, axis, outer, inner);
}

/* ---------------------------------------------------------------------------------------------
 * Reductions over any axes, ReduceSumLike, the softmax family, ArgMax.
 * ------------------------------------------------------------------------------------------- */

/* Splits x's dims into kept and reduced (reduced[d] set) for the reduction kernels. */
static void cuda_rsum_of(const cuda_arg_t *x, const int *reduced, cuda_rsum_t *r) {
    int64_t st[CUDA_MAX_RANK];

    memset(r, 0, sizeof *r);
    cuda_strides(x->dims, x->rank, st);
    r->out_count = r->red_count = 1;
    for (uint32_t d = 0; d < x->rank; d++) {
        if (reduced[d]) {
            r->red_dims[r->n_red] = x->dims[d];
            r->red_stride[r->n_red++] = st[d];
            r->red_count *= x->dims[d];
        } else {
            r->keep_dims[r->n_keep] = x->dims[d];
            r->keep_stride[r->n_keep++] = st[d];
            r->out_count *= x->dims[d];
        }
    }
}

/* ReduceSum, ReduceMean, ReduceMax over the sorted `axes` (any set), keepdims or not. */
static int32_t cuda_reduce(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    int64_t axes[CUDA_MAX_RANK], keepdims = 1, want[CUDA_MAX_RANK];
    int reduced[CUDA_MAX_RANK] = {0};
    uint32_t na = 0, nw = 0;
    cuda_rsum_t r;
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK ||
        (st = cuda_dtypes_agree(device, launch->node, a, 2)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = cuda_attr_ints(device, node, "axes", axes, &na)) != SES_DRV_OK)
        return st;
    if (cuda_attr_int(node, "keepdims", 1, &keepdims) != SES_DRV_OK)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "keepdims is not an INT");
    for (uint32_t i = 0; i < na; i++) {
        if (axes[i] < 0 || axes[i] >= (int64_t)a[0].rank || (i > 0 && axes[i] <= axes[i - 1]))
            return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                  "axes are not sorted distinct axes below rank %" PRIu32,
                                  a[0].rank);
        reduced[axes[i]] = 1;
    }
    for (uint32_t d = 0; d < a[0].rank; d++)
        if (!reduced[d] || keepdims)
            want[nw++] = reduced[d] ? 1 : a[0].dims[d];
    int ok = a[1].rank == nw;
    for (uint32_t d = 0; ok && d < nw; d++)
        ok = a[1].dims[d] == want[d];
    if (!ok)
        return cuda_shape_fail(device, node, "the output does not match the reduction", &a[0],
                               &a[1]);
    const int op = strcmp(node->op, "ReduceMax") == 0    ? CUDA_RED_MAX
                   : strcmp(node->op, "ReduceMean") == 0 ? CUDA_RED_MEAN
                                                         : CUDA_RED_SUM;
    cuda_rsum_of(&a[0], reduced, &r);
    if (a[1].count == 0)
        return SES_DRV_OK;
    if (op == CUDA_RED_MAX && r.red_count == 0)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "reduces over an empty axis; the max of no elements is undefined");
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    return cuda_finish(
        device, launch,
        cuda__reduce(a[1].dtype, &r, op, a[0].ptr, a[1].ptr, cuda_stream_of(device, launch)));
}

/* ReduceSumLike: the input summed down to the output's shape (the reverse of broadcasting). */
static int32_t cuda_reduce_sum_like(ses_drv_device_t *device, void *state,
                                    const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    int reduced[CUDA_MAX_RANK] = {0};
    cuda_rsum_t r;
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK ||
        (st = cuda_dtypes_agree(device, launch->node, a, 2)) != SES_DRV_OK)
        return st;
    if (a[1].rank > a[0].rank)
        return cuda_shape_fail(device, launch->node, "the output does not broadcast to the input",
                               &a[1], &a[0]);
    const uint32_t lead = a[0].rank - a[1].rank;
    for (uint32_t d = 0; d < a[0].rank; d++) {
        const int64_t in = a[0].dims[d], out = d < lead ? -1 : a[1].dims[d - lead];
        if (out == in)
            continue;
        if (out != -1 && out != 1)
            return cuda_shape_fail(device, launch->node,
                                   "the output does not broadcast to the input", &a[1], &a[0]);
        reduced[d] = 1;
    }
    cuda_rsum_of(&a[0], reduced, &r);
    if (a[1].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, launch->node->op)) != SES_DRV_OK)
        return st;
    return cuda_finish(device, launch,
                       cuda__reduce(a[1].dtype, &r, CUDA_RED_SUM, a[0].ptr, a[1].ptr,
                                    cuda_stream_of(device, launch)));
}

/* [outer, red, inner] around one axis of @p x (rank 0: one element). */
static void cuda_view(const cuda_arg_t *x, uint32_t axis, int64_t *outer, int64_t *red,
                      int64_t *inner) {
    *outer = *inner = 1;
    *red = x->rank ? x->dims[axis] : 1;
    for (uint32_t d = 0; d < x->rank; d++) {
        if (d < axis)
            *outer *= x->dims[d];
        else if (d > axis)
            *inner *= x->dims[d];
    }
}

/* The normalized `axis` of Softmax, LogSoftmax, their gradients and ArgMax. */
static int32_t cuda_axis(ses_drv_device_t *device, const ses_drv_node_t *node, uint32_t rank,
                         int64_t *axis) {
    if (cuda_attr_int(node, "axis", -1, axis) != SES_DRV_OK ||
        (rank == 0 ? *axis != 0 && *axis != -1 : *axis < 0 || *axis >= (int64_t)rank))
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "axis %" PRId64 " is missing or out of range for rank %" PRIu32,
                              *axis, rank);
    if (rank == 0)
        *axis = 0;
    return SES_DRV_OK;
}

/* Softmax, LogSoftmax (x), SoftmaxGrad, LogSoftmaxGrad (dy, y), all of one shape. */
static int32_t cuda_softmax(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[3];
    int64_t axis = -1, outer, red, inner;
    int32_t st;

    (void)state;
    if (!launch || launch->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_launch_t, output_offsets) ||
        !launch->node || !launch->node->op)
        return device ? CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                         "the launch or its node is NULL")
                      : SES_DRV_INVALID_ARGUMENT;
    const ses_drv_node_t *node = launch->node;
    const int mode = strcmp(node->op, "Softmax") == 0       ? CUDA_SM_SOFTMAX
                     : strcmp(node->op, "LogSoftmax") == 0  ? CUDA_SM_LOG_SOFTMAX
                     : strcmp(node->op, "SoftmaxGrad") == 0 ? CUDA_SM_SOFTMAX_GRAD
                                                            : CUDA_SM_LOG_SOFTMAX_GRAD;
    const uint32_t ni = mode >= CUDA_SM_SOFTMAX_GRAD ? 2 : 1;
    if ((st = cuda_check_launch(device, launch, ni, ni, 1, a)) != SES_DRV_OK ||
        (st = cuda_dtypes_agree(device, node, a, ni + 1)) != SES_DRV_OK)
        return st;
    const cuda_arg_t *y = &a[ni];
    if (!cuda_same_shape(&a[0], y) || !cuda_same_shape(&a[ni - 1], y))
        return cuda_shape_fail(device, node, "the inputs and the output must have one shape", &a[0],
                               y);
    if ((st = cuda_axis(device, node, y->rank, &axis)) != SES_DRV_OK)
        return st;
    if (y->count == 0)
        return SES_DRV_OK;
    cuda_view(y, (uint32_t)axis, &outer, &red, &inner);
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    return cuda_finish(device, launch,
                       cuda__softmax(y->dtype, outer, red, inner, mode, a[0].ptr, a[ni - 1].ptr,
                                     y->ptr, cuda_stream_of(device, launch)));
}

static int32_t cuda_argmax(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    int64_t axis = 0, keepdims = 1, last = 0, want[CUDA_MAX_RANK], outer, red, inner;
    uint32_t nw = 0;
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = cuda_axis(device, node, a[0].rank, &axis)) != SES_DRV_OK)
        return st;
    if (cuda_attr_int(node, "keepdims", 1, &keepdims) != SES_DRV_OK ||
        cuda_attr_int(node, "select_last_index", 0, &last) != SES_DRV_OK)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "keepdims or select_last_index is not an INT");
    for (uint32_t d = 0; d < a[0].rank; d++)
        if (d != (uint32_t)axis || keepdims)
            want[nw++] = d == (uint32_t)axis ? 1 : a[0].dims[d];
    int ok = a[1].dtype == SES_DRV_DTYPE_I64 && a[1].rank == nw;
    for (uint32_t d = 0; ok && d < nw; d++)
        ok = a[1].dims[d] == want[d];
    if (!ok)
        return cuda_shape_fail(device, node, "the output (i64) does not match the input and axis",
                               &a[0], &a[1]);
    if (a[1].count == 0)
        return SES_DRV_OK;
    cuda_view(&a[0], (uint32_t)axis, &outer, &red, &inner);
    if (red == 0)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "axis %" PRId64 " is empty; there is no largest element", axis);
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    return cuda_finish(device, launch,
                       cuda__argmax(a[0].dtype, outer, red, inner, last != 0, a[0].ptr, a[1].ptr,
                                    cuda_stream_of(device, launch)));
}

/* ---------------------------------------------------------------------------------------------
 * Gradient helpers: ReduceGrad, ScalarLike.
 * ------------------------------------------------------------------------------------------- */

/* ReduceGrad: dy broadcast back over `axes` of the output, times `scale`. */
static int32_t cuda_reduce_grad(ses_drv_device_t *device, void *state,
                                const ses_drv_launch_t *launch) {
    cuda_arg_t a[2], dy;
    cuda_bcast_t g;
    int64_t axes[CUDA_MAX_RANK], dims[CUDA_MAX_RANK];
    uint32_t n_axes = 0;
    double scale = 1.0;
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK ||
        (st = cuda_dtypes_agree(device, launch->node, a, 2)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = cuda_attr_ints(device, node, "axes", axes, &n_axes)) != SES_DRV_OK)
        return st;
    if (n_axes > a[1].rank || cuda_attr_double(node, "scale", 1.0, &scale) != SES_DRV_OK)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "axes (INTS) or scale (FLOAT) is wrong");
    /* dy at the output's rank, 1 on the reduced axes (it dropped them without keepdims). */
    dy = a[0];
    if (a[0].rank + n_axes == a[1].rank && n_axes > 0) {
        uint32_t k = 0, j = 0;
        for (uint32_t d = 0; d < a[1].rank; d++) {
            if (j < n_axes && axes[j] == (int64_t)d) {
                dims[d] = 1;
                j++;
            } else {
                dims[d] = a[0].dims[k++];
            }
        }
        dy.dims = dims;
        dy.rank = a[1].rank;
    }
    if (!cuda_bcast(&dy, &dy, &a[1], &g))
        return cuda_shape_fail(device, node, "dy does not broadcast back to the output", &a[0],
                               &a[1]);
    if (a[1].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    return cuda_finish(device, launch,
                       cuda__binary(a[1].dtype, &g, CUDA_BIN_FIRST, scale, a[0].ptr, a[0].ptr,
                                    a[1].ptr, cuda_stream_of(device, launch)));
}

/* ScalarLike: a rank-0 output holding `value` (Cast's rules from f64); the input only selected
 * the entry and is never read. */
static int32_t cuda_scalar_like(ses_drv_device_t *device, void *state,
                                const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    double value = 0.0;
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK)
        return st;
    if (cuda_attr_double(launch->node, "value", 0.0, &value) != SES_DRV_OK || a[1].count != 1)
        return cuda_node_fail(device, launch->node, SES_DRV_INVALID_ARGUMENT,
                              "value (FLOAT) is wrong or the output is not one element");
    if ((st = cuda__use(device, launch->node->op)) != SES_DRV_OK)
        return st;
    return cuda_finish(device, launch,
                       cuda__fill(a[1].dtype, 1, value, a[1].ptr, cuda_stream_of(device, launch)));
}

/* ---------------------------------------------------------------------------------------------
 * MatMul, Gemm, MatMulGrad through cuBLAS (row-major: C^T = B^T A^T in cuBLAS's column-major).
 * ------------------------------------------------------------------------------------------- */

static cudaDataType cuda_blas_type(uint32_t dtype) {
    return dtype == SES_DRV_DTYPE_F16    ? CUDA_R_16F
           : dtype == SES_DRV_DTYPE_BF16 ? CUDA_R_16BF
           : dtype == SES_DRV_DTYPE_F64  ? CUDA_R_64F
                                         : CUDA_R_32F;
}

/*
 * Row-major Y[M,N] = alpha * op(A)[M,K] op(B)[K,N] + beta * Y, @p batch times, the batches
 * @p sa, @p sb, @p sy elements apart (0: the same matrix; sy is never 0 with batch > 1).
 * Enqueued on the launch's stream; f64 computes in f64, the others in f32 (TF32 when allowed).
 */
static int32_t cuda_gemm(ses_drv_device_t *device, const ses_drv_launch_t *launch, uint32_t dtype,
                         int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                         const void *A, int64_t sa, const void *B, int64_t sb, double beta, void *Y,
                         int64_t sy, int64_t batch) {
    cublasStatus_t cs = CUBLAS_STATUS_SUCCESS;
    const cudaDataType type = cuda_blas_type(dtype);
    const int f64 = dtype == SES_DRV_DTYPE_F64;
    const cublasComputeType_t ct = f64 ? CUBLAS_COMPUTE_64F
                                   : dtype == SES_DRV_DTYPE_F32 && device->allow_tf32
                                       ? CUBLAS_COMPUTE_32F_FAST_TF32
                                       : CUBLAS_COMPUTE_32F;
    const float alpha_f = (float)alpha, beta_f = (float)beta;
    const void *al = f64 ? (const void *)&alpha : (const void *)&alpha_f;
    const void *be = f64 ? (const void *)&beta : (const void *)&beta_f;
    const int64_t es = cuda_dtype_size(dtype);

    if (!device->cublas)
        return cuda_node_fail(device, launch->node, SES_DRV_UNAVAILABLE,
                              "cuBLAS could not be initialised on cuda:%d", device->ordinal);
    if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX)
        return cuda_node_fail(device, launch->node, SES_DRV_UNIMPLEMENTED,
                              "dimensions beyond 2^31 are not supported");
    const int lda = ta ? (int)m : (int)k, ldb = tb ? (int)k : (int)n;
    const cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                            opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    pthread_mutex_lock(&device->lock);
    cublasSetStream((cublasHandle_t)device->cublas, (cudaStream_t)cuda_stream_of(device, launch));
    {
        /* cublasSetStream reset the workspace: the stream's own, so capture never allocates. */
        void *ws;
        uint64_t ws_bytes;
        if (cuda__stream_workspace(device, cuda_stream_of(device, launch), &ws, &ws_bytes))
            cublasSetWorkspace((cublasHandle_t)device->cublas, ws, (size_t)ws_bytes);
    }
    for (int64_t done = 0; done < batch && cs == CUBLAS_STATUS_SUCCESS;) {
        const int64_t part = batch - done < INT32_MAX ? batch - done : INT32_MAX;
        const char *a = (const char *)A + done * sa * es, *b = (const char *)B + done * sb * es;
        char *y = (char *)Y + done * sy * es;
        if (part == 1)
            cs = cublasGemmEx((cublasHandle_t)device->cublas, opb, opa, (int)n, (int)m, (int)k, al,
                              b, type, ldb, a, type, lda, be, y, type, (int)n, ct,
                              CUBLAS_GEMM_DEFAULT);
        else
            cs = cublasGemmStridedBatchedEx((cublasHandle_t)device->cublas, opb, opa, (int)n,
                                            (int)m, (int)k, al, b, type, ldb, (long long)sb, a,
                                            type, lda, (long long)sa, be, y, type, (int)n,
                                            (long long)sy, (int)part, ct, CUBLAS_GEMM_DEFAULT);
        done += part;
    }
    pthread_mutex_unlock(&device->lock);
    if (cs != CUBLAS_STATUS_SUCCESS)
        return cuda_node_fail(device, launch->node, SES_DRV_INTERNAL,
                              "cuBLAS GEMM (%" PRId64 "x%" PRId64 "x%" PRId64 ", %" PRId64
                              " batches) failed: status %d",
                              m, n, k, batch, (int)cs);
    return cuda_finish(device, launch, (int)cudaGetLastError());
}

/* The batch walk of a batched product: dims and the element strides of its three matrices. */
typedef struct cuda_batches {
    uint32_t n;
    int64_t dims[CUDA_MAX_RANK];
    int64_t st[3][CUDA_MAX_RANK]; /* X (op(X) is [m,k]), Z ([k,n]), Y ([m,n]) */
} cuda_batches_t;

/* Drops batch dims of 1 and merges neighbours that every matrix walks contiguously. */
static void cuda_batches_merge(cuda_batches_t *b) {
    uint32_t w = 0;
    for (uint32_t d = 0; d < b->n; d++) {
        if (b->dims[d] == 1)
            continue;
        int merge = w > 0;
        for (int k = 0; merge && k < 3; k++)
            merge = b->st[k][w - 1] == b->st[k][d] * b->dims[d];
        if (merge) {
            b->dims[w - 1] *= b->dims[d];
            for (int k = 0; k < 3; k++)
                b->st[k][w - 1] = b->st[k][d];
        } else {
            b->dims[w] = b->dims[d];
            for (int k = 0; k < 3; k++)
                b->st[k][w] = b->st[k][d];
            w++;
        }
    }
    b->n = w;
}

/*
 * Whether the merged batches @p b of Y = op(X) op(Z) ([m,k] by [k,n]) fold into the inner
 * dimension: Y shared by every batch (summed over them), X and Z stacked along k (ta, !tb, so
 * that X^T and Z are each one [k * count, ...] matrix). Then one GEMM of k * count inner
 * elements is that sum, accumulated by cuBLAS in f32 (or f64) and rounded once.
 */
static int cuda_batches_fold(const cuda_batches_t *b, int ta, int tb, int64_t m, int64_t n,
                             int64_t k) {
    return b->n == 1 && ta && !tb && b->st[2][0] == 0 && b->st[0][0] == k * m &&
           b->st[1][0] == k * n;
}

/*
 * Y = sum over the batches of @p b (merged) of op(X_b) op(Z_b), where Y repeats along some
 * batch dims (stride 0): f16 and bf16, each output element summed in f32 by cuda__gemm_sum and
 * rounded once, where beta-1 GEMMs (cuda_gemm_batches) would round every partial sum. Writes
 * every element of Y.
 */
static int32_t cuda_gemm_sum(ses_drv_device_t *device, const ses_drv_launch_t *launch,
                             uint32_t dtype, int ta, int tb, int64_t m, int64_t n, int64_t k,
                             const void *X, const void *Z, void *Y, const cuda_batches_t *b) {
    cuda_gsum_t g;

    memset(&g, 0, sizeof g);
    g.m = m;
    g.n = n;
    g.k = k;
    /* X is stored [k,m] when transposed, else [m,k]; Z [n,k] when transposed, else [k,n]. */
    g.x_i = ta ? 1 : k;
    g.x_p = ta ? m : 1;
    g.z_p = tb ? 1 : n;
    g.z_j = tb ? k : 1;
    g.out_count = m * n;
    g.sum_count = 1;
    for (uint32_t d = 0; d < b->n; d++) {
        if (b->st[2][d] == 0) {
            g.sum_dims[g.n_sum] = b->dims[d];
            g.sum_stride[0][g.n_sum] = b->st[0][d];
            g.sum_stride[1][g.n_sum] = b->st[1][d];
            g.sum_count *= b->dims[d];
            g.n_sum++;
        } else {
            g.keep_dims[g.n_keep] = b->dims[d];
            for (int q = 0; q < 3; q++)
                g.keep_stride[q][g.n_keep] = b->st[q][d];
            g.out_count *= b->dims[d];
            g.n_keep++;
        }
    }
    return cuda_finish(device, launch,
                       cuda__gemm_sum(dtype, &g, X, Z, Y, cuda_stream_of(device, launch)));
}

/*
 * Y_b = alpha op(X_b) op(Z_b) + beta Y_b over the batches of @p b: the innermost merged batch
 * dim is one strided-batched GEMM, the outer ones a loop on the stream. When Y repeats along
 * a batch dim (a gradient summed over broadcast batches), every batch is its own GEMM with
 * beta 1, in order, so that the sums accumulate (the caller zeroed Y).
 */
static int32_t cuda_gemm_batches(ses_drv_device_t *device, const ses_drv_launch_t *launch,
                                 uint32_t dtype, int ta, int tb, int64_t m, int64_t n, int64_t k,
                                 const void *X, const void *Z, void *Y, cuda_batches_t *b) {
    int32_t st = SES_DRV_OK;
    const int64_t es = cuda_dtype_size(dtype);

    cuda_batches_merge(b);
    if (b->n == 0)
        return cuda_gemm(device, launch, dtype, ta, tb, m, n, k, 1.0, X, 0, Z, 0, 0.0, Y, 0, 1);
    /* One batch dim, Z shared, X's and Y's rows stacked: one GEMM of m * count rows. */
    if (b->n == 1 && !ta && b->st[1][0] == 0 && b->st[0][0] == m * k && b->st[2][0] == m * n)
        return cuda_gemm(device, launch, dtype, 0, tb, m * b->dims[0], n, k, 1.0, X, 0, Z, 0, 0.0,
                         Y, 0, 1);
    /* Y shared (summed over the batch), X and Z stacked along k: one GEMM (cuda_batches_fold). */
    if (cuda_batches_fold(b, ta, tb, m, n, k))
        return cuda_gemm(device, launch, dtype, 1, 0, m, n, k * b->dims[0], 1.0, X, 0, Z, 0, 0.0, Y,
                         0, 1);
    int accumulate = 0;
    for (uint32_t d = 0; d < b->n; d++)
        accumulate |= b->st[2][d] == 0;
    int64_t total = 1;
    for (uint32_t d = 0; d < b->n; d++)
        total *= b->dims[d];
    const uint32_t outer_n = accumulate ? b->n : b->n - 1;
    const int64_t inner = accumulate ? 1 : b->dims[b->n - 1];
    for (int64_t i = 0; i < total / inner && st == SES_DRV_OK; i++) {
        int64_t off[3] = {0, 0, 0}, rest = i;
        for (uint32_t d = outer_n; d-- > 0;) {
            const int64_t idx = rest % b->dims[d];
            rest /= b->dims[d];
            for (int q = 0; q < 3; q++)
                off[q] += idx * b->st[q][d];
        }
        const int64_t last = b->n - 1;
        st = cuda_gemm(device, launch, dtype, ta, tb, m, n, k, 1.0, (const char *)X + off[0] * es,
                       accumulate ? 0 : b->st[0][last], (const char *)Z + off[1] * es,
                       accumulate ? 0 : b->st[1][last], accumulate ? 1.0 : 0.0,
                       (char *)Y + off[2] * es, accumulate ? 0 : b->st[2][last], inner);
    }
    return st;
}

/*
 * numpy matmul shapes: A [..., M, K] (1-D: [K], M = 1), B [..., K, N] (1-D: [K], N = 1), Y
 * [batch..., M, N] without the dims of 1-D operands; batch dims broadcast. Fills @p b with A's,
 * B's and Y's matrix strides per batch dim of Y (in slots 0, 1, 2).
 */
static int32_t cuda_matmul_shapes(ses_drv_device_t *device, const ses_drv_node_t *node,
                                  const cuda_arg_t *A, const cuda_arg_t *B, const cuda_arg_t *Y,
                                  int64_t *m, int64_t *n, int64_t *k, cuda_batches_t *b) {
    if (A->rank < 1 || B->rank < 1)
        return cuda_shape_fail(device, node, "MatMul needs operands of rank >= 1", A, B);
    *m = A->rank == 1 ? 1 : A->dims[A->rank - 2];
    *k = A->dims[A->rank - 1];
    const int64_t kb = B->rank == 1 ? B->dims[0] : B->dims[B->rank - 2];
    *n = B->rank == 1 ? 1 : B->dims[B->rank - 1];
    if (*k != kb)
        return cuda_shape_fail(device, node, "inner dimensions differ", A, B);
    const uint32_t ab = A->rank > 2 ? A->rank - 2 : 0, bb = B->rank > 2 ? B->rank - 2 : 0;
    const uint32_t yb = ab > bb ? ab : bb;
    if (Y->rank != yb + (A->rank > 1) + (B->rank > 1) || (A->rank > 1 && Y->dims[yb] != *m) ||
        (B->rank > 1 && Y->dims[Y->rank - 1] != *n))
        return cuda_shape_fail(device, node, "the output (or dy) does not match MatMul(A, B)", A,
                               Y);
    int64_t sa = *m * *k, sb = *k * *n, sy = *m * *n;
    memset(b, 0, sizeof *b);
    b->n = yb;
    for (uint32_t d = yb; d-- > 0;) {
        const int64_t da = d + ab >= yb ? A->dims[d + ab - yb] : 1;
        const int64_t db = d + bb >= yb ? B->dims[d + bb - yb] : 1;
        if ((da != 1 && db != 1 && da != db) || Y->dims[d] != (da == 1 ? db : da))
            return cuda_shape_fail(device, node, "batch dims do not broadcast", A, B);
        b->dims[d] = Y->dims[d];
        b->st[0][d] = da == 1 ? 0 : sa;
        b->st[1][d] = db == 1 ? 0 : sb;
        b->st[2][d] = sy;
        sa *= da;
        sb *= db;
        sy *= Y->dims[d];
    }
    return SES_DRV_OK;
}

static int32_t cuda_matmul(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[3];
    cuda_batches_t b;
    int64_t m, n, k;
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 2, 2, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = cuda_dtypes_agree(device, node, a, 3)) != SES_DRV_OK ||
        (st = cuda_matmul_shapes(device, node, &a[0], &a[1], &a[2], &m, &n, &k, &b)) != SES_DRV_OK)
        return st;
    if (a[2].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    if (k == 0)
        return cuda_finish(device, launch,
                           (int)cudaMemsetAsync(a[2].ptr, 0, (size_t)a[2].bytes,
                                                (cudaStream_t)cuda_stream_of(device, launch)));
    return cuda_gemm_batches(device, launch, a[2].dtype, 0, 0, m, n, k, a[0].ptr, a[1].ptr,
                             a[2].ptr, &b);
}

/*
 * MatMulGrad (dy, A, B; `input` 0 or 1): the gradient of A (dy B^T) or of B (A^T dy), summed
 * over the batch dims that operand was broadcast along.
 */
static int32_t cuda_matmul_grad(ses_drv_device_t *device, void *state,
                                const ses_drv_launch_t *launch) {
    cuda_arg_t a[4];
    cuda_batches_t b, g;
    int64_t which = 0, m, n, k;
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 3, 3, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = cuda_dtypes_agree(device, node, a, 4)) != SES_DRV_OK)
        return st;
    if (cuda_attr_int(node, "input", 0, &which) != SES_DRV_OK || (which != 0 && which != 1))
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "input must be 0 or 1");
    const cuda_arg_t *dy = &a[0], *A = &a[1], *B = &a[2], *out = &a[3];
    if ((st = cuda_matmul_shapes(device, node, A, B, dy, &m, &n, &k, &b)) != SES_DRV_OK)
        return st;
    if (!cuda_same_shape(out, which == 0 ? A : B))
        return cuda_shape_fail(device, node, "the output differs from the operand's shape", out,
                               which == 0 ? A : B);
    if (out->count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    void *s = cuda_stream_of(device, launch);
    /* Nothing is summed into the output when dy is empty: zeros. */
    if (dy->count == 0)
        return cuda_finish(device, launch,
                           (int)cudaMemsetAsync(out->ptr, 0, (size_t)out->bytes, (cudaStream_t)s));
    /* The product as Y = op(X) op(Z) ([gm,gk] by [gk,gn]) per batch of g:
     * dA_b[M,K] = dy_b[M,N] B_b[K,N]^T, or dB_b[K,N] = A_b[M,K]^T dy_b[M,N]. */
    const int ta = which == 1, tb = which == 0;
    const int64_t gm = which == 0 ? m : k, gn = which == 0 ? k : n, gk = which == 0 ? n : m;
    const void *X = which == 0 ? dy->ptr : A->ptr, *Z = which == 0 ? B->ptr : dy->ptr;
    memset(&g, 0, sizeof g);
    g.n = b.n;
    memcpy(g.dims, b.dims, sizeof g.dims);
    memcpy(g.st[0], b.st[which == 0 ? 2 : 0], sizeof g.st[0]);
    memcpy(g.st[1], b.st[which == 0 ? 1 : 2], sizeof g.st[1]);
    memcpy(g.st[2], b.st[which == 0 ? 0 : 1], sizeof g.st[2]);
    cuda_batches_merge(&g);
    /* The output repeats along the batch dims its operand was broadcast over (now merged, dims
     * of 1 dropped): those batches accumulate into it. */
    int accumulate = 0;
    for (uint32_t d = 0; d < g.n; d++)
        accumulate |= g.st[2][d] == 0;
    if (accumulate && !cuda_batches_fold(&g, ta, tb, gm, gn, gk)) {
        /* An operand broadcast over every batch dim while the other two are dense (a weight's
         * gradient) folds into one GEMM in cuda_gemm_batches, exact in every dtype. Otherwise
         * f16 and bf16 sum each element in f32 and round once, since adding each batch's GEMM
         * into the output would round every partial sum to 8 or 11 bits; f32 and f64 keep
         * those beta-1 GEMMs into the zeroed output, rounding at their own precision. */
        if (out->dtype == SES_DRV_DTYPE_F16 || out->dtype == SES_DRV_DTYPE_BF16)
            return cuda_gemm_sum(device, launch, out->dtype, ta, tb, gm, gn, gk, X, Z, out->ptr,
                                 &g);
        int e = (int)cudaMemsetAsync(out->ptr, 0, (size_t)out->bytes, (cudaStream_t)s);
        if (e != 0)
            return cuda_finish(device, launch, e);
    }
    return cuda_gemm_batches(device, launch, out->dtype, ta, tb, gm, gn, gk, X, Z, out->ptr, &g);
}

static int32_t cuda_gemm_op(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[4];
    double alpha = 1.0, beta = 1.0;
    int64_t ta = 0, tb = 0;
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 2, 3, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const uint32_t ni = node->n_inputs;
    cuda_arg_t *y = &a[ni];
    if ((st = cuda_dtypes_agree(device, node, a, ni + 1)) != SES_DRV_OK)
        return st;
    if (cuda_attr_double(node, "alpha", 1.0, &alpha) != SES_DRV_OK ||
        cuda_attr_double(node, "beta", 1.0, &beta) != SES_DRV_OK ||
        cuda_attr_int(node, "transA", 0, &ta) != SES_DRV_OK ||
        cuda_attr_int(node, "transB", 0, &tb) != SES_DRV_OK)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "an attribute has the wrong type");
    if (a[0].rank != 2 || a[1].rank != 2 || y->rank != 2)
        return cuda_shape_fail(device, node, "A, B and Y must be 2-D", &a[0], &a[1]);
    const int64_t m = ta ? a[0].dims[1] : a[0].dims[0], k = ta ? a[0].dims[0] : a[0].dims[1];
    const int64_t kb = tb ? a[1].dims[1] : a[1].dims[0], n = tb ? a[1].dims[0] : a[1].dims[1];
    if (k != kb || y->dims[0] != m || y->dims[1] != n)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "shapes disagree: op(A) is [%" PRId64 ",%" PRId64 "], op(B) [%" PRId64
                              ",%" PRId64 "], Y [%" PRId64 ",%" PRId64 "]",
                              m, k, kb, n, y->dims[0], y->dims[1]);
    if (y->count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    void *stream = cuda_stream_of(device, launch);
    double b = 0.0;
    if (ni == 3 && beta != 0.0) {
        /* Y = C broadcast, then the GEMM adds alpha op(A) op(B) to beta Y. */
        cuda_bcast_t g;
        if (!cuda_bcast(&a[2], &a[2], y, &g))
            return cuda_shape_fail(device, node, "C does not broadcast to (M, N)", &a[2], y);
        if (a[2].ptr == y->ptr && !g.same)
            return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                  "C shares the output's bytes but is broadcast");
        int e = cuda__binary(y->dtype, &g, CUDA_BIN_FIRST, k == 0 ? beta : 1.0, a[2].ptr, a[2].ptr,
                             y->ptr, stream);
        if (e != 0 || k == 0)
            return cuda_finish(device, launch, e);
        b = beta;
    } else if (k == 0) {
        return cuda_finish(device, launch,
                           (int)cudaMemsetAsync(y->ptr, 0, (size_t)y->bytes, (cudaStream_t)stream));
    }
    return cuda_gemm(device, launch, y->dtype, (int)ta, (int)tb, m, n, k, alpha, a[0].ptr, 0,
                     a[1].ptr, 0, b, y->ptr, 0, 1);
}

/* ---------------------------------------------------------------------------------------------
 * Clip, Split, Shape, ConstantOfShape, Range.
 * ------------------------------------------------------------------------------------------- */

/* Clip(x[, min][, max]): the bounds given are one-element tensors, read on the device. */
static int32_t cuda_clip(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[4];
    int64_t has_min = 0, has_max = 0;
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 1, 3, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const uint32_t ni = node->n_inputs;
    if ((st = cuda_dtypes_agree(device, node, a, ni + 1)) != SES_DRV_OK)
        return st;
    if (cuda_attr_int(node, "has_min", 0, &has_min) != SES_DRV_OK ||
        cuda_attr_int(node, "has_max", 0, &has_max) != SES_DRV_OK)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "has_min or has_max is not an INT");
    has_min = has_min != 0;
    has_max = has_max != 0;
    int ok = (int64_t)ni == 1 + has_min + has_max && cuda_same_shape(&a[0], &a[ni]);
    for (uint32_t i = 1; ok && i < ni; i++)
        ok = a[i].count == 1;
    if (!ok)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "expected the input, one element per bound given (has_min %" PRId64
                              ", has_max %" PRId64
                              ") and an output of the input's shape; got %" PRIu32 " inputs",
                              has_min, has_max, ni);
    if (a[ni].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    return cuda_finish(
        device, launch,
        cuda__clip(a[0].dtype, a[0].count, a[0].ptr, has_min ? a[1].ptr : NULL,
                   has_max ? a[1 + has_min].ptr : NULL, a[ni].ptr, cuda_stream_of(device, launch)));
}

/* Split: each output a slab of the input along `axis`, one strided copy each. */
static int32_t cuda_split(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[1 + CUDA_MAX_RANK];
    int64_t axis = 0, total = 0, xst[CUDA_MAX_RANK];
    int32_t st;

    (void)state;
    if (!launch || launch->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_launch_t, output_offsets) ||
        !launch->node || launch->node->n_outputs < 1 || launch->node->n_outputs > CUDA_MAX_RANK)
        return device ? CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                         "Split: the launch is NULL or has no 1 to 8 outputs")
                      : SES_DRV_INVALID_ARGUMENT;
    const ses_drv_node_t *node = launch->node;
    const uint32_t no = node->n_outputs;
    if ((st = cuda_check_launch(device, launch, 1, 1, no, a)) != SES_DRV_OK ||
        (st = cuda_dtypes_agree(device, node, a, 1 + no)) != SES_DRV_OK)
        return st;
    const cuda_arg_t *x = &a[0];
    if (cuda_attr_int(node, "axis", 0, &axis) != SES_DRV_OK || axis < 0 || axis >= (int64_t)x->rank)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "axis %" PRId64 " is outside rank %" PRIu32, axis, x->rank);
    for (uint32_t k = 1; k <= no; k++) {
        int ok = a[k].rank == x->rank;
        for (uint32_t d = 0; ok && d < x->rank; d++)
            ok = (int64_t)d == axis || a[k].dims[d] == x->dims[d];
        if (!ok)
            return cuda_shape_fail(device, node, "an output does not fit the input", &a[k], x);
        total += a[k].dims[axis];
    }
    if (total != x->dims[axis])
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "the outputs add up to %" PRId64 " along axis %" PRId64
                              ", the input has %" PRId64,
                              total, axis, x->dims[axis]);
    cuda_strides(x->dims, x->rank, xst);
    const uint32_t es = cuda_dtype_size(x->dtype);
    int64_t at = 0;
    for (uint32_t k = 1; k <= no; k++) {
        cuda_bcast_t g;
        memset(&g, 0, sizeof g);
        g.rank = a[k].rank;
        g.count = a[k].count;
        memcpy(g.dims, a[k].dims, a[k].rank * sizeof(int64_t));
        memcpy(g.stride[0], xst, sizeof xst);
        cuda_strides(a[k].dims, a[k].rank, g.stride[1]);
        if ((st = cuda_run_strided(device, launch, es, &g,
                                   (const char *)x->ptr + at * xst[axis] * (int64_t)es,
                                   a[k].ptr)) != SES_DRV_OK)
            return st;
        at += a[k].dims[axis];
    }
    return SES_DRV_OK;
}

/* Shape: dims start to end of the input, known on the host, stored by one small kernel. */
static int32_t cuda_shape(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    int64_t start = 0, end = -1;
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if (cuda_attr_int(node, "start", 0, &start) != SES_DRV_OK ||
        cuda_attr_int(node, "end", (int64_t)a[0].rank, &end) != SES_DRV_OK || start < 0 ||
        end < start || end > (int64_t)a[0].rank || a[1].dtype != SES_DRV_DTYPE_I64 ||
        a[1].rank != 1 || a[1].dims[0] != end - start)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "start %" PRId64 " and end %" PRId64 " do not fit rank %" PRIu32
                              " and the i64 output",
                              start, end, a[0].rank);
    if (a[1].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    return cuda_finish(
        device, launch,
        cuda__store_i64(end - start, a[0].dims + start, a[1].ptr, cuda_stream_of(device, launch)));
}

/* ConstantOfShape: the output (its shape came from the input, never read) filled with `value`
 * (FLOAT for f32 and f64, INT for i32, i64 and bool). */
static int32_t cuda_constant_of_shape(ses_drv_device_t *device, void *state,
                                      const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    double f = 0.0;
    int64_t i = 0;
    uint64_t bits = 0;
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const uint32_t dt = a[1].dtype;
    const int is_float = dt == SES_DRV_DTYPE_F32 || dt == SES_DRV_DTYPE_F64;
    if ((is_float ? cuda_attr_double(node, "value", 0.0, &f)
                  : cuda_attr_int(node, "value", 0, &i)) != SES_DRV_OK)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "value is not a %s",
                              is_float ? "FLOAT" : "INT");
    if (dt == SES_DRV_DTYPE_F32) {
        const float v = (float)f;
        uint32_t u;
        memcpy(&u, &v, sizeof u);
        bits = u;
    } else if (dt == SES_DRV_DTYPE_F64) {
        memcpy(&bits, &f, sizeof bits);
    } else if (dt == SES_DRV_DTYPE_BOOL) {
        bits = i != 0;
    } else {
        bits = (uint64_t)i; /* i32 keeps the low 32 bits: the CPU's (int32_t) conversion */
    }
    if (a[1].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    return cuda_finish(device, launch,
                       cuda__fill_bits(cuda_dtype_size(dt), a[1].count, bits, a[1].ptr,
                                       cuda_stream_of(device, launch)));
}

/* Range(start, limit, delta): the output's length was fixed by the host from the values it saw
 * at compile time; start and delta are read on the device. */
static int32_t cuda_range(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[4];
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 3, 3, 1, a)) != SES_DRV_OK ||
        (st = cuda_dtypes_agree(device, launch->node, a, 4)) != SES_DRV_OK)
        return st;
    if (a[0].count != 1 || a[1].count != 1 || a[2].count != 1 || a[3].rank != 1)
        return cuda_node_fail(device, launch->node, SES_DRV_INVALID_ARGUMENT,
                              "start, limit and delta must be scalars and the output 1-D");
    if (a[3].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, launch->node->op)) != SES_DRV_OK)
        return st;
    return cuda_finish(device, launch,
                       cuda__range(a[3].dtype, a[3].count, a[0].ptr, a[2].ptr, a[3].ptr,
                                   cuda_stream_of(device, launch)));
}

/* ---------------------------------------------------------------------------------------------
 * The CNN ops: Conv, ConvGrad, the pools and their gradients, BatchNormalization (inference),
 * Dropout (inference), Pad, PadGrad. Direct kernels, f32 and f64 (Pad: number types).
 * ------------------------------------------------------------------------------------------- */

/* The window from x ([N, C, in...]) to y ([N, M, out...]) and the attributes, checked. */
static int32_t cuda_window(ses_drv_device_t *device, const ses_drv_node_t *node,
                           const cuda_arg_t *x, const cuda_arg_t *y, cuda_win_t *w) {
    int64_t pads[2 * CUDA_SPATIAL_MAX];
    uint32_t nk = 0, ns = 0, nd = 0, np = 0;
    int32_t st;

    memset(w, 0, sizeof *w);
    if (x->rank < 3 || y->rank != x->rank || y->dims[0] != x->dims[0])
        return cuda_shape_fail(device, node, "expected [N, C, spatial...] in and out", x, y);
    w->n = x->rank - 2;
    if ((st = cuda_attr_ints_max(device, node, "kernel_shape", w->k, CUDA_SPATIAL_MAX, &nk)) !=
            SES_DRV_OK ||
        (st = cuda_attr_ints_max(device, node, "strides", w->s, CUDA_SPATIAL_MAX, &ns)) !=
            SES_DRV_OK ||
        (st = cuda_attr_ints_max(device, node, "dilations", w->d, CUDA_SPATIAL_MAX, &nd)) !=
            SES_DRV_OK ||
        (st = cuda_attr_ints_max(device, node, "pads", pads, 2 * CUDA_SPATIAL_MAX, &np)) !=
            SES_DRV_OK)
        return st;
    if (nk != w->n || ns != w->n || nd != w->n || np != 2 * w->n)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "kernel_shape, strides, dilations and pads have %" PRIu32 ", %" PRIu32
                              ", %" PRIu32 " and %" PRIu32 " entries; the input has %" PRIu32
                              " spatial dims",
                              nk, ns, nd, np, w->n);
    w->k_count = w->in_count = w->out_count = 1;
    for (uint32_t i = 0; i < w->n; i++) {
        w->pb[i] = pads[i];
        w->pe[i] = pads[w->n + i];
        w->in[i] = x->dims[2 + i];
        w->out[i] = y->dims[2 + i];
        if (w->k[i] < 1 || w->s[i] < 1 || w->d[i] < 1 || w->pb[i] < 0 || w->pe[i] < 0 ||
            w->k[i] > INT32_MAX || w->s[i] > INT32_MAX || w->d[i] > INT32_MAX ||
            w->pb[i] > INT32_MAX || w->pe[i] > INT32_MAX)
            return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                  "window attributes out of range along spatial dim %" PRIu32
                                  ": kernel %" PRId64 ", stride %" PRId64 ", dilation %" PRId64
                                  ", pads %" PRId64 " and %" PRId64,
                                  i, w->k[i], w->s[i], w->d[i], w->pb[i], w->pe[i]);
        w->k_count *= w->k[i];
        w->in_count *= w->in[i];
        w->out_count *= w->out[i];
    }
    w->batch = x->dims[0];
    w->c = x->dims[1];
    w->m = y->dims[1];
    return SES_DRV_OK;
}

/* Conv's shapes: W [M, C / group, k...] and the group. */
static int32_t cuda_conv_shapes(ses_drv_device_t *device, const ses_drv_node_t *node,
                                const cuda_arg_t *x, const cuda_arg_t *wt, const cuda_arg_t *y,
                                cuda_win_t *w) {
    int32_t st;
    if ((st = cuda_window(device, node, x, y, w)) != SES_DRV_OK)
        return st;
    if (cuda_attr_int(node, "group", 1, &w->group) != SES_DRV_OK)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "group is not an INT");
    int ok = wt->rank == x->rank && w->group >= 1 && wt->dims[0] == w->m && w->c % w->group == 0 &&
             w->m % w->group == 0 && wt->dims[1] == w->c / w->group;
    for (uint32_t i = 0; ok && i < w->n; i++)
        ok = wt->dims[2 + i] == w->k[i];
    if (!ok)
        return cuda_shape_fail(device, node, "X and W do not fit a convolution", x, wt);
    return SES_DRV_OK;
}

/*
 * Per-node state of Conv, ConvGrad, MaxPool and AveragePool, made by create at compile time: the
 * path the node takes, chosen once, and what it needs, allocated once.
 * - cuDNN (when loaded, cuda_cudnn.h): descriptors, the algorithm (cuDNN's heuristics, the
 *   fastest whose workspace is at most CUDA_CUDNN_WS_MAX; f32 without TF32 unless
 *   driver.cuda.allow_tf32=1) and its workspace. create runs the node once on scratch buffers,
 *   so that cuDNN loads its kernels and builds its plans before any capture, and so that a
 *   configuration cuDNN turns down at run time takes the fallback instead of failing.
 * - GEMM (Conv and ConvGrad without cuDNN, or with forms cuDNN lacks: asymmetric pads, more than
 *   3 spatial dims): im2col over as many images as fit in CUDA_IM2COL_BYTES, then one
 *   strided-batched cuBLAS GEMM per group over those images (dX: the transposed GEMM, then a
 *   col2im gather; dW: one GEMM over the images side by side, accumulated over the passes).
 * - direct: the kernels of cuda_kernels.cu (the pools without cuDNN or in forms it lacks,
 *   ceil_mode or dilations; empty tensors; or when the GEMM path cannot get its memory).
 * Every path only enqueues on the launch's stream, so each is captured into CUDA Graphs.
 */
#define CUDA_CNN_DIRECT 0
#define CUDA_CNN_GEMM 1
#define CUDA_CNN_CUDNN 2
#define CUDA_IM2COL_BYTES (UINT64_C(256) << 20)
#define CUDA_CUDNN_WS_MAX (UINT64_C(1) << 30)

/* What a node computes: CONV (Conv), DATA and FILTER (ConvGrad input 0 and 1), POOL. */
#define CUDA_CNN_CONV 0
#define CUDA_CNN_DATA 1
#define CUDA_CNN_FILTER 2
#define CUDA_CNN_POOL 3

typedef struct cuda_cnn_state {
    int path, what;
    cudnn_tensor_desc_t xd, yd, bd; /* X, Y (dy for ConvGrad), Conv's B as [1, M, 1...] */
    cudnn_filter_desc_t wd;
    cudnn_conv_desc_t cd;
    cudnn_pool_desc_t pd;
    int algo;
    void *ws; /* cuDNN's workspace, or the GEMM path's columns (then dy transposed, for dW) */
    uint64_t ws_bytes;
    int64_t chunk; /* GEMM path: images per im2col pass */
    int identity;  /* GEMM path: a 1x1 window, stride 1, no pads: the columns are X itself */
} cuda_cnn_state_t;

static const char *const cuda_cnn_path_names[] = {"direct kernels", "im2col + cuBLAS", "cuDNN"};

static void cuda_arg_of_desc(const ses_drv_tensor_desc_t *t, cuda_arg_t *a) {
    memset(a, 0, sizeof *a);
    a->dims = t->dims;
    a->rank = t->rank;
    a->dtype = t->dtype;
    a->count = 1;
    for (uint32_t d = 0; d < t->rank; d++)
        a->count *= t->dims[d];
}

static void cuda_cnn_release(ses_drv_device_t *device, cuda_cnn_state_t *st) {
    const cuda_cudnn_t *c = &device->driver->cudnn;
    if (st->xd)
        c->DestroyTensorDescriptor(st->xd);
    if (st->yd)
        c->DestroyTensorDescriptor(st->yd);
    if (st->bd)
        c->DestroyTensorDescriptor(st->bd);
    if (st->wd)
        c->DestroyFilterDescriptor(st->wd);
    if (st->cd)
        c->DestroyConvolutionDescriptor(st->cd);
    if (st->pd)
        c->DestroyPoolingDescriptor(st->pd);
    if (st->ws) {
        cudaSetDevice(device->ordinal);
        cudaFree(st->ws);
    }
    memset(st, 0, sizeof *st);
}

static void cuda_cnn_destroy(ses_drv_device_t *device, void *state) {
    if (!device || !state)
        return;
    cuda_cnn_release(device, (cuda_cnn_state_t *)state);
    free(state);
}

/* A tensor descriptor of [n, c, spatial...] (a 1-D window as [n, c, 1, len]), dense. */
static int cuda_cudnn_tensor(const cuda_cudnn_t *c, cudnn_tensor_desc_t *out, int type, int64_t n,
                             int64_t ch, const int64_t *sp, uint32_t ns) {
    int dims[5], strides[5], nd = 0;
    dims[nd++] = (int)n;
    dims[nd++] = (int)ch;
    if (ns == 1)
        dims[nd++] = 1;
    for (uint32_t i = 0; i < ns; i++)
        dims[nd++] = (int)sp[i];
    strides[nd - 1] = 1;
    for (int i = nd - 1; i-- > 0;)
        strides[i] = strides[i + 1] * dims[i + 1];
    if (c->CreateTensorDescriptor(out) != CUDNN__STATUS_SUCCESS) {
        *out = NULL;
        return -1;
    }
    return c->SetTensorNdDescriptor(*out, type, nd, dims, strides) == CUDNN__STATUS_SUCCESS ? 0
                                                                                           : -1;
}

/* Runs the node's cuDNN call on @p s with state @p st, under the handle's lock. */
static cudnn_status_t cuda_cudnn_run(ses_drv_device_t *device, const cuda_cnn_state_t *st,
                                     uint32_t dtype, void *s, const void *in0, const void *in1,
                                     const void *bias, void *out) {
    const cuda_cudnn_t *c = &device->driver->cudnn;
    const float one_f = 1.0f, zero_f = 0.0f;
    const double one_d = 1.0, zero_d = 0.0;
    const void *one = dtype == SES_DRV_DTYPE_F64 ? (const void *)&one_d : (const void *)&one_f;
    const void *zero = dtype == SES_DRV_DTYPE_F64 ? (const void *)&zero_d : (const void *)&zero_f;
    cudnn_status_t cs;

    pthread_mutex_lock(&device->cudnn_lock);
    cs = c->SetStream(device->cudnn, s);
    if (cs == CUDNN__STATUS_SUCCESS) {
        switch (st->what) {
            case CUDA_CNN_CONV: /* in0 X, in1 W */
                cs = c->ConvolutionForward(device->cudnn, one, st->xd, in0, st->wd, in1, st->cd,
                                           st->algo, st->ws, (size_t)st->ws_bytes, zero, st->yd,
                                           out);
                if (cs == CUDNN__STATUS_SUCCESS && bias)
                    cs = c->AddTensor(device->cudnn, one, st->bd, bias, one, st->yd, out);
                break;
            case CUDA_CNN_DATA: /* in0 dy, in1 W */
                cs = c->ConvolutionBackwardData(device->cudnn, one, st->wd, in1, st->yd, in0,
                                                st->cd, st->algo, st->ws, (size_t)st->ws_bytes,
                                                zero, st->xd, out);
                break;
            case CUDA_CNN_FILTER: /* in0 dy, in1 X */
                cs = c->ConvolutionBackwardFilter(device->cudnn, one, st->xd, in1, st->yd, in0,
                                                  st->cd, st->algo, st->ws, (size_t)st->ws_bytes,
                                                  zero, st->wd, out);
                break;
            default: /* in0 X */
                cs = c->PoolingForward(device->cudnn, st->pd, one, st->xd, in0, zero, st->yd, out);
                break;
        }
    }
    pthread_mutex_unlock(&device->cudnn_lock);
    return cs;
}

/* Picks the first algorithm of @p perf (fastest first) that succeeded, fits the workspace limit
 * and, with @p fma, computes in plain f32 (no tensor-op math). -1 when none. */
static int cuda_cudnn_pick(const cudnn_perf_t *perf, int n, int fma) {
    for (int i = 0; i < n; i++)
        if (perf[i].status == CUDNN__STATUS_SUCCESS && perf[i].memory <= CUDA_CUDNN_WS_MAX &&
            (!fma || (perf[i].math_type != 1 && perf[i].math_type != 2)))
            return i;
    return -1;
}

/*
 * Sets @p st up for cuDNN: descriptors, algorithm, workspace, then one run on scratch buffers.
 * 0 on success; -1 with @p why (for the debug log) when cuDNN cannot take this node, with
 * everything made here released.
 */
static int cuda_cudnn_setup(ses_drv_device_t *device, cuda_cnn_state_t *st, const cuda_win_t *w,
                            uint32_t dtype, int64_t include_pad, int max, int has_bias,
                            char *why, size_t why_size) {
    const cuda_cudnn_t *c = &device->driver->cudnn;
    const int type = dtype == SES_DRV_DTYPE_F64 ? CUDNN__DATA_DOUBLE : CUDNN__DATA_FLOAT;
    const uint64_t es = cuda_dtype_size(dtype);
    const int conv = st->what != CUDA_CNN_POOL;
    const int64_t out_c = conv ? w->m : w->c;
    int pads[3], strides[3], dil[3], kern[3], wdims[5];
    uint32_t ns = w->n == 1 ? 2 : w->n;
    void *tmp[3] = {NULL, NULL, NULL};
    cudnn_status_t cs = CUDNN__STATUS_SUCCESS;

    if (!cuda__cudnn_handle(device)) {
        snprintf(why, why_size, "no cuDNN handle");
        return -1;
    }
    if (w->n > 3) {
        snprintf(why, why_size, "%" PRIu32 " spatial dims; cuDNN takes 1 to 3", w->n);
        return -1;
    }
    int64_t biggest = w->batch * (w->c > out_c ? w->c : out_c) *
                      (w->in_count > w->out_count ? w->in_count : w->out_count);
    if (biggest > INT32_MAX || (conv && w->m * (w->c / w->group) * w->k_count > INT32_MAX)) {
        snprintf(why, why_size, "a tensor of 2^31 elements or more");
        return -1;
    }
    for (uint32_t i = 0; i < w->n; i++) {
        if (w->pb[i] != w->pe[i]) {
            snprintf(why, why_size, "asymmetric pads");
            return -1;
        }
        if (!conv && (w->d[i] != 1 || w->pb[i] >= w->k[i] ||
                      w->out[i] != (w->in[i] + 2 * w->pb[i] - w->k[i]) / w->s[i] + 1)) {
            snprintf(why, why_size, "dilations, pads as large as the window, or ceil_mode");
            return -1;
        }
    }
    /* A 1-D window is a 2-D one of height 1. */
    for (uint32_t i = 0, j = ns - w->n; i < ns; i++) {
        const int pad1 = i < j;
        pads[i] = pad1 ? 0 : (int)w->pb[i - j];
        strides[i] = pad1 ? 1 : (int)w->s[i - j];
        dil[i] = pad1 ? 1 : (int)w->d[i - j];
        kern[i] = pad1 ? 1 : (int)w->k[i - j];
    }
    if (cuda_cudnn_tensor(c, &st->xd, type, w->batch, w->c, w->in, w->n) != 0 ||
        cuda_cudnn_tensor(c, &st->yd, type, w->batch, out_c, w->out, w->n) != 0) {
        snprintf(why, why_size, "cudnnSetTensorNdDescriptor refused the shapes");
        goto fail;
    }
    if (!conv) {
        const int mode = max ? CUDNN__POOLING_MAX_DETERMINISTIC
                         : include_pad ? CUDNN__POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                       : CUDNN__POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
        if (c->CreatePoolingDescriptor(&st->pd) != CUDNN__STATUS_SUCCESS ||
            (cs = c->SetPoolingNdDescriptor(st->pd, mode, CUDNN__PROPAGATE_NAN, (int)ns, kern,
                                            pads, strides)) != CUDNN__STATUS_SUCCESS) {
            snprintf(why, why_size, "cudnnSetPoolingNdDescriptor: %s", c->GetErrorString(cs));
            goto fail;
        }
    } else {
        const int fma = dtype == SES_DRV_DTYPE_F32 && !device->allow_tf32;
        cudnn_perf_t perf[8];
        int returned = 0, pick, odims[5];
        int64_t ones[3] = {1, 1, 1};
        size_t bytes = 0;

        wdims[0] = (int)w->m;
        wdims[1] = (int)(w->c / w->group);
        for (uint32_t i = 0; i < ns; i++)
            wdims[2 + i] = kern[i];
        if (c->CreateFilterDescriptor(&st->wd) != CUDNN__STATUS_SUCCESS ||
            (cs = c->SetFilterNdDescriptor(st->wd, type, CUDNN__TENSOR_NCHW, (int)ns + 2, wdims)) !=
                CUDNN__STATUS_SUCCESS ||
            c->CreateConvolutionDescriptor(&st->cd) != CUDNN__STATUS_SUCCESS ||
            (cs = c->SetConvolutionNdDescriptor(st->cd, (int)ns, pads, strides, dil,
                                                CUDNN__CROSS_CORRELATION, type)) !=
                CUDNN__STATUS_SUCCESS ||
            (cs = c->SetConvolutionGroupCount(st->cd, (int)w->group)) != CUDNN__STATUS_SUCCESS ||
            (cs = c->SetConvolutionMathType(st->cd, fma ? CUDNN__FMA_MATH
                                                        : CUDNN__DEFAULT_MATH)) !=
                CUDNN__STATUS_SUCCESS ||
            (cs = c->GetConvolutionNdForwardOutputDim(st->cd, st->xd, st->wd, (int)ns + 2,
                                                      odims)) != CUDNN__STATUS_SUCCESS) {
            snprintf(why, why_size, "a convolution descriptor: %s",
                     cs != CUDNN__STATUS_SUCCESS ? c->GetErrorString(cs) : "cannot be made");
            goto fail;
        }
        for (uint32_t i = 0; i < ns; i++)
            if (odims[2 + i] != (i < ns - w->n ? 1 : (int)w->out[i - (ns - w->n)])) {
                snprintf(why, why_size, "cuDNN's output shape differs from the node's");
                goto fail;
            }
        if (st->what == CUDA_CNN_CONV)
            cs = c->GetConvolutionForwardAlgorithm_v7(device->cudnn, st->xd, st->wd, st->cd,
                                                      st->yd, 8, &returned, perf);
        else if (st->what == CUDA_CNN_DATA)
            cs = c->GetConvolutionBackwardDataAlgorithm_v7(device->cudnn, st->wd, st->yd, st->cd,
                                                           st->xd, 8, &returned, perf);
        else
            cs = c->GetConvolutionBackwardFilterAlgorithm_v7(device->cudnn, st->xd, st->yd,
                                                             st->cd, st->wd, 8, &returned, perf);
        if (cs != CUDNN__STATUS_SUCCESS || (pick = cuda_cudnn_pick(perf, returned, fma)) < 0) {
            snprintf(why, why_size, "no algorithm: %s",
                     cs != CUDNN__STATUS_SUCCESS ? c->GetErrorString(cs)
                                                 : "none fits (workspace, precision)");
            goto fail;
        }
        st->algo = perf[pick].algo;
        if (!fma && (cs = c->SetConvolutionMathType(st->cd, perf[pick].math_type)) !=
                        CUDNN__STATUS_SUCCESS) {
            snprintf(why, why_size, "cudnnSetConvolutionMathType: %s", c->GetErrorString(cs));
            goto fail;
        }
        if (st->what == CUDA_CNN_CONV)
            cs = c->GetConvolutionForwardWorkspaceSize(device->cudnn, st->xd, st->wd, st->cd,
                                                       st->yd, st->algo, &bytes);
        else if (st->what == CUDA_CNN_DATA)
            cs = c->GetConvolutionBackwardDataWorkspaceSize(device->cudnn, st->wd, st->yd, st->cd,
                                                            st->xd, st->algo, &bytes);
        else
            cs = c->GetConvolutionBackwardFilterWorkspaceSize(device->cudnn, st->xd, st->yd,
                                                              st->cd, st->wd, st->algo, &bytes);
        if (cs != CUDNN__STATUS_SUCCESS) {
            snprintf(why, why_size, "workspace size: %s", c->GetErrorString(cs));
            goto fail;
        }
        if (bytes && cudaMalloc(&st->ws, bytes) != cudaSuccess) {
            (void)cudaGetLastError();
            st->ws = NULL;
            snprintf(why, why_size, "no memory for cuDNN's %zu-byte workspace", bytes);
            goto fail;
        }
        st->ws_bytes = bytes;
        if (st->what == CUDA_CNN_CONV && has_bias &&
            cuda_cudnn_tensor(c, &st->bd, type, 1, w->m, ones, w->n) != 0) {
            snprintf(why, why_size, "the bias descriptor");
            goto fail;
        }
    }

    /* The trial run, on zeros: X, W (or dy), Y. */
    {
        const uint64_t xb = (uint64_t)(w->batch * w->c * w->in_count) * es;
        const uint64_t yb = (uint64_t)(w->batch * out_c * w->out_count) * es;
        const uint64_t wb = conv ? (uint64_t)(w->m * (w->c / w->group) * w->k_count) * es : es;
        const uint64_t sizes[3] = {xb, wb, yb};
        cudaError_t e = cudaSuccess;
        for (int i = 0; i < 3 && e == cudaSuccess; i++)
            if ((e = cudaMalloc(&tmp[i], sizes[i])) == cudaSuccess)
                e = cudaMemsetAsync(tmp[i], 0, sizes[i], (cudaStream_t)device->stream);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            snprintf(why, why_size, "no memory for a trial run: %s", cudaGetErrorString(e));
            goto fail;
        }
        switch (st->what) {
            case CUDA_CNN_CONV:
                cs = cuda_cudnn_run(device, st, dtype, device->stream, tmp[0], tmp[1],
                                    has_bias ? tmp[1] : NULL, tmp[2]);
                break;
            case CUDA_CNN_DATA:
                cs = cuda_cudnn_run(device, st, dtype, device->stream, tmp[2], tmp[1], NULL,
                                    tmp[0]);
                break;
            case CUDA_CNN_FILTER:
                cs = cuda_cudnn_run(device, st, dtype, device->stream, tmp[2], tmp[0], NULL,
                                    tmp[1]);
                break;
            default:
                cs = cuda_cudnn_run(device, st, dtype, device->stream, tmp[0], NULL, NULL, tmp[2]);
                break;
        }
        e = cudaStreamSynchronize((cudaStream_t)device->stream);
        if (cs != CUDNN__STATUS_SUCCESS || e != cudaSuccess) {
            (void)cudaGetLastError();
            snprintf(why, why_size, "the trial run failed: %s",
                     cs != CUDNN__STATUS_SUCCESS ? c->GetErrorString(cs) : cudaGetErrorString(e));
            goto fail;
        }
        for (int i = 0; i < 3; i++)
            cudaFree(tmp[i]);
    }
    st->path = CUDA_CNN_CUDNN;
    return 0;

fail:
    for (int i = 0; i < 3; i++)
        if (tmp[i])
            cudaFree(tmp[i]);
    {
        const int what = st->what;
        cuda_cnn_release(device, st);
        st->what = what;
    }
    return -1;
}

/* Sets @p st up for im2col + cuBLAS; -1 with @p why when its memory cannot be had. */
static int cuda_gemm_setup(ses_drv_device_t *device, cuda_cnn_state_t *st, const cuda_win_t *w,
                           uint32_t dtype, char *why, size_t why_size) {
    const uint64_t es = cuda_dtype_size(dtype);
    const uint64_t rows = (uint64_t)(w->c * w->k_count);
    uint64_t per_image = rows * (uint64_t)w->out_count * es;
    int identity = st->what != CUDA_CNN_FILTER;

    if (!device->cublas) {
        snprintf(why, why_size, "cuBLAS could not start");
        return -1;
    }
    for (uint32_t i = 0; i < w->n; i++)
        identity = identity && w->k[i] == 1 && w->s[i] == 1 && w->pb[i] == 0 && w->pe[i] == 0;
    if (st->what == CUDA_CNN_FILTER)
        per_image += (uint64_t)(w->m * w->out_count) * es;
    st->identity = identity;
    st->chunk = (int64_t)(CUDA_IM2COL_BYTES / (per_image ? per_image : 1));
    if (st->chunk < 1)
        st->chunk = 1;
    if (st->chunk > w->batch)
        st->chunk = w->batch;
    /* cuBLAS takes int dimensions: dW's GEMM runs over chunk * out_count columns. */
    while (st->chunk > 1 && st->chunk * w->out_count > INT32_MAX)
        st->chunk /= 2;
    st->ws_bytes = identity ? 0 : (uint64_t)st->chunk * per_image;
    if (st->ws_bytes && cudaMalloc(&st->ws, (size_t)st->ws_bytes) != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(why, why_size, "no memory for %" PRIu64 " bytes of im2col columns", st->ws_bytes);
        st->ws = NULL;
        st->ws_bytes = 0;
        return -1;
    }
    st->path = CUDA_CNN_GEMM;
    return 0;
}

/* The window and dtype of node @p node (Conv, ConvGrad, MaxPool, AveragePool), from its
 * descriptors; what it computes into st->what. */
static int32_t cuda_cnn_geometry(ses_drv_device_t *device, const ses_drv_node_t *node,
                                 cuda_cnn_state_t *st, cuda_win_t *w, uint32_t *dtype,
                                 int64_t *include_pad, int *max, int *has_bias) {
    cuda_arg_t a[4];
    int32_t rc;
    const int conv = strcmp(node->op, "Conv") == 0, grad = strcmp(node->op, "ConvGrad") == 0;
    const uint32_t lo = conv ? 2 : grad ? 3 : 1, hi = conv ? 3 : grad ? 3 : 1;

    if ((rc = cuda_check_node(device, node, lo, hi, 1)) != SES_DRV_OK)
        return rc;
    for (uint32_t i = 0; i < node->n_inputs; i++)
        cuda_arg_of_desc(cuda_desc_at(node->inputs, i), &a[i]);
    cuda_arg_of_desc(node->outputs, &a[node->n_inputs]);
    *dtype = a[0].dtype;
    *max = strcmp(node->op, "MaxPool") == 0;
    *has_bias = conv && node->n_inputs == 3;
    *include_pad = 0;
    if (conv) {
        st->what = CUDA_CNN_CONV;
        return cuda_conv_shapes(device, node, &a[0], &a[1], &a[node->n_inputs], w);
    }
    if (grad) {
        int64_t input = 0;
        if (cuda_attr_int(node, "input", 0, &input) != SES_DRV_OK || (input != 0 && input != 1))
            return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                  "attribute input must be 0 or 1");
        st->what = input ? CUDA_CNN_FILTER : CUDA_CNN_DATA;
        return cuda_conv_shapes(device, node, &a[1], &a[2], &a[0], w);
    }
    st->what = CUDA_CNN_POOL;
    if (!*max && cuda_attr_int(node, "count_include_pad", 0, include_pad) != SES_DRV_OK)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "count_include_pad is not an INT");
    return cuda_window(device, node, &a[0], &a[1], w);
}

/* create of Conv, ConvGrad, MaxPool and AveragePool: picks the node's path (above). */
static int32_t cuda_cnn_create(ses_drv_device_t *device, const ses_drv_node_t *node,
                               void **out_state) {
    cuda_cnn_state_t *st;
    cuda_win_t w;
    uint32_t dtype = 0;
    int64_t include_pad = 0;
    int max = 0, has_bias = 0;
    char why_cudnn[256] = "", why_gemm[256] = "";
    int32_t rc;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_state)
        return CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT, "create: out_state is NULL");
    *out_state = NULL;
    if (!node || node->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_node_t, attr_ctx) || !node->op)
        return CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "the node is NULL or older than ABI 1.0");
    st = calloc(1, sizeof *st);
    if (!st)
        return CUDA_DEVICE_FAIL(device, SES_DRV_OUT_OF_MEMORY, "create: out of host memory");
    rc = cuda_cnn_geometry(device, node, st, &w, &dtype, &include_pad, &max, &has_bias);
    if (rc != SES_DRV_OK) {
        free(st);
        return rc;
    }
    st->path = CUDA_CNN_DIRECT;
    if (w.batch * w.c * w.in_count == 0 || w.out_count == 0 ||
        (dtype != SES_DRV_DTYPE_F32 && dtype != SES_DRV_DTYPE_F64)) {
        *out_state = st; /* nothing to compute, or a dtype the compute refuses */
        return SES_DRV_OK;
    }
    if ((rc = cuda__use(device, node->op)) != SES_DRV_OK) {
        free(st);
        return rc;
    }
    if (!device->driver->cudnn.lib)
        snprintf(why_cudnn, sizeof why_cudnn, "cuDNN is not loaded");
    else
        cuda_cudnn_setup(device, st, &w, dtype, include_pad, max, has_bias, why_cudnn,
                         sizeof why_cudnn);
    if (st->path == CUDA_CNN_DIRECT && st->what != CUDA_CNN_POOL)
        cuda_gemm_setup(device, st, &w, dtype, why_gemm, sizeof why_gemm);
    cuda__log(device->driver, SES_DRV_LOG_DEBUG,
              "cuda:%d: %s \"%s\": %s%s%s%s%s%s", device->ordinal, node->op,
              node->name ? node->name : "(unnamed)", cuda_cnn_path_names[st->path],
              st->path == CUDA_CNN_CUDNN ? "" : " (cuDNN: ",
              st->path == CUDA_CNN_CUDNN ? "" : why_cudnn,
              st->path == CUDA_CNN_CUDNN ? "" : ")", why_gemm[0] ? "; im2col: " : "", why_gemm);
    *out_state = st;
    return SES_DRV_OK;
}

/* Conv or ConvGrad by im2col + cuBLAS; @p in the launch's inputs (dy/X/W as the node has them),
 * @p out its output. */
static int32_t cuda_conv_gemm(ses_drv_device_t *device, const ses_drv_launch_t *launch,
                              const cuda_cnn_state_t *st, const cuda_win_t *w, uint32_t dtype,
                              const cuda_arg_t *a, const cuda_arg_t *out) {
    const int64_t es = cuda_dtype_size(dtype);
    const int64_t G = w->group, cg = w->c / G, mg = w->m / G, K = w->k_count;
    const int64_t P = w->out_count, rows = w->c * K, ckg = cg * K;
    void *s = cuda_stream_of(device, launch);
    char *col = (char *)st->ws;
    int32_t rc = SES_DRV_OK;
    int e = 0;

    for (int64_t n0 = 0; n0 < w->batch && rc == SES_DRV_OK && e == 0; n0 += st->chunk) {
        const int64_t nb = w->batch - n0 < st->chunk ? w->batch - n0 : st->chunk;
        if (st->what == CUDA_CNN_CONV) {
            const char *x = (const char *)a[0].ptr + n0 * w->c * w->in_count * es;
            const char *src = st->identity ? x : col;
            char *y = (char *)out->ptr + n0 * w->m * P * es;
            if (!st->identity && (e = cuda__im2col(dtype, w, n0, nb, 0, a[0].ptr, col, s)) != 0)
                break;
            for (int64_t g = 0; g < G && rc == SES_DRV_OK; g++)
                rc = cuda_gemm(device, launch, dtype, 0, 0, mg, P, ckg, 1.0,
                               (const char *)a[1].ptr + g * mg * ckg * es, 0, src + g * ckg * P * es,
                               rows * P, 0.0, y + g * mg * P * es, w->m * P, nb);
            if (rc == SES_DRV_OK && launch->node->n_inputs == 3)
                e = cuda__channel_bias(dtype, nb, w->m, P, a[2].ptr, y, s);
        } else if (st->what == CUDA_CNN_DATA) {
            const char *dy = (const char *)a[0].ptr + n0 * w->m * P * es;
            char *dx = (char *)out->ptr + n0 * w->c * w->in_count * es;
            char *dst = st->identity ? dx : col;
            for (int64_t g = 0; g < G && rc == SES_DRV_OK; g++)
                rc = cuda_gemm(device, launch, dtype, 1, 0, ckg, P, mg, 1.0,
                               (const char *)a[2].ptr + g * mg * ckg * es, 0, dy + g * mg * P * es,
                               w->m * P, 0.0, dst + g * ckg * P * es, rows * P, nb);
            if (rc == SES_DRV_OK && !st->identity)
                e = cuda__col2im(dtype, w, nb, col, dx, s);
        } else {
            char *dyt = col + nb * rows * P * es;
            if ((e = cuda__im2col(dtype, w, n0, nb, 1, a[1].ptr, col, s)) != 0 ||
                (e = cuda__nmp_to_mnp(dtype, nb, w->m, P,
                                      (const char *)a[0].ptr + n0 * w->m * P * es, dyt, s)) != 0)
                break;
            for (int64_t g = 0; g < G && rc == SES_DRV_OK; g++)
                rc = cuda_gemm(device, launch, dtype, 0, 1, mg, ckg, nb * P, 1.0,
                               dyt + g * mg * nb * P * es, 0, col + g * ckg * nb * P * es, 0,
                               n0 ? 1.0 : 0.0, (char *)out->ptr + g * mg * ckg * es, 0, 1);
        }
    }
    if (rc != SES_DRV_OK)
        return rc;
    return cuda_finish(device, launch, e);
}

/* Runs Conv, ConvGrad or a pool through cuDNN. */
static int32_t cuda_cnn_cudnn(ses_drv_device_t *device, const ses_drv_launch_t *launch,
                              const cuda_cnn_state_t *st, uint32_t dtype, const cuda_arg_t *a,
                              const cuda_arg_t *out) {
    const void *in1 = st->what == CUDA_CNN_CONV   ? a[1].ptr
                      : st->what == CUDA_CNN_DATA ? a[2].ptr
                      : st->what == CUDA_CNN_FILTER ? a[1].ptr
                                                    : NULL;
    const void *bias =
        st->what == CUDA_CNN_CONV && launch->node->n_inputs == 3 ? a[2].ptr : NULL;
    cudnn_status_t cs =
        cuda_cudnn_run(device, st, dtype, cuda_stream_of(device, launch), a[0].ptr, in1, bias,
                       out->ptr);
    if (cs != CUDNN__STATUS_SUCCESS)
        return cuda_node_fail(device, launch->node, SES_DRV_INTERNAL, "cuDNN on cuda:%d: %s",
                              device->ordinal, device->driver->cudnn.GetErrorString(cs));
    return cuda_finish(device, launch, (int)cudaGetLastError());
}

/* Whether @p state (made by create for this node) has a path other than the direct kernels. */
static const cuda_cnn_state_t *cuda_cnn_fast(void *state) {
    const cuda_cnn_state_t *st = (const cuda_cnn_state_t *)state;
    return st && st->path != CUDA_CNN_DIRECT ? st : NULL;
}

static int32_t cuda_conv(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[4];
    cuda_win_t w;
    int32_t st;
    const cuda_cnn_state_t *fast = cuda_cnn_fast(state);

    if ((st = cuda_check_launch(device, launch, 2, 3, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const uint32_t ni = node->n_inputs;
    if ((st = cuda_dtypes_agree(device, node, a, ni + 1)) != SES_DRV_OK ||
        (st = cuda_conv_shapes(device, node, &a[0], &a[1], &a[ni], &w)) != SES_DRV_OK)
        return st;
    if (ni == 3 && (a[2].rank != 1 || a[2].dims[0] != w.m))
        return cuda_shape_fail(device, node, "B must have one entry per filter", &a[2], &a[1]);
    if (a[ni].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    if (fast && fast->path == CUDA_CNN_CUDNN)
        return cuda_cnn_cudnn(device, launch, fast, a[0].dtype, a, &a[ni]);
    if (fast && fast->path == CUDA_CNN_GEMM)
        return cuda_conv_gemm(device, launch, fast, &w, a[0].dtype, a, &a[ni]);
    return cuda_finish(device, launch,
                       cuda__conv(a[0].dtype, &w, a[0].ptr, a[1].ptr, ni == 3 ? a[2].ptr : NULL,
                                  a[ni].ptr, cuda_stream_of(device, launch)));
}

/* ConvGrad(dy, X, W; input): dX (input 0) or dW (input 1). */
static int32_t cuda_conv_grad(ses_drv_device_t *device, void *state,
                              const ses_drv_launch_t *launch) {
    cuda_arg_t a[4];
    cuda_win_t w;
    int64_t input = 0;
    int32_t st;
    const cuda_cnn_state_t *fast = cuda_cnn_fast(state);

    if ((st = cuda_check_launch(device, launch, 3, 3, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = cuda_dtypes_agree(device, node, a, 4)) != SES_DRV_OK ||
        (st = cuda_conv_shapes(device, node, &a[1], &a[2], &a[0], &w)) != SES_DRV_OK)
        return st;
    if (cuda_attr_int(node, "input", 0, &input) != SES_DRV_OK || (input != 0 && input != 1) ||
        !cuda_same_shape(&a[3], input ? &a[2] : &a[1]))
        return cuda_node_fail(
            device, node, SES_DRV_INVALID_ARGUMENT,
            "attribute input is %" PRId64 "; it must be 0 (output shaped as X) or 1 (as W)", input);
    if (a[3].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    if (fast && fast->what != (input ? CUDA_CNN_FILTER : CUDA_CNN_DATA))
        fast = NULL;
    if (fast && fast->path == CUDA_CNN_CUDNN)
        return cuda_cnn_cudnn(device, launch, fast, a[0].dtype, a, &a[3]);
    if (fast && fast->path == CUDA_CNN_GEMM)
        return cuda_conv_gemm(device, launch, fast, &w, a[0].dtype, a, &a[3]);
    return cuda_finish(device, launch,
                       cuda__conv_grad(a[3].dtype, &w, (int)input, a[0].ptr, a[1].ptr, a[2].ptr,
                                       a[3].ptr, cuda_stream_of(device, launch)));
}

/* MaxPool, AveragePool (X), MaxPoolGrad (dy, X), AveragePoolGrad (dy). */
static int32_t cuda_pool(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[3];
    cuda_win_t w;
    int64_t include_pad = 0;
    int32_t st;

    if ((st = cuda_check_launch(device, launch, 1, 2, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const uint32_t ni = node->n_inputs;
    const int max = strncmp(node->op, "MaxPool", 7) == 0;
    const int grad = strstr(node->op, "Grad") != NULL;
    if ((ni == 2) != (max && grad))
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "has %" PRIu32 " inputs; %s takes %d", ni, node->op,
                              max && grad ? 2 : 1);
    if ((st = cuda_dtypes_agree(device, node, a, ni + 1)) != SES_DRV_OK)
        return st;
    /* The forward pool's input and output. */
    const cuda_arg_t *fx = grad ? &a[ni] : &a[0], *fy = grad ? &a[0] : &a[ni];
    if ((st = cuda_window(device, node, fx, fy, &w)) != SES_DRV_OK)
        return st;
    if (fx->dims[1] != fy->dims[1] || (max && grad && !cuda_same_shape(&a[1], &a[2])))
        return cuda_shape_fail(device, node, "channels differ between the pool's input and output",
                               fx, fy);
    if (!max && cuda_attr_int(node, "count_include_pad", 0, &include_pad) != SES_DRV_OK)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "count_include_pad is not an INT");
    if (a[ni].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    const cuda_cnn_state_t *fast = grad ? NULL : cuda_cnn_fast(state);
    if (fast && fast->path == CUDA_CNN_CUDNN)
        return cuda_cnn_cudnn(device, launch, fast, a[0].dtype, a, &a[ni]);
    const int op = max ? CUDA_POOL_MAX : CUDA_POOL_AVG;
    const int64_t planes = fx->dims[0] * fx->dims[1];
    void *s = cuda_stream_of(device, launch);
    return cuda_finish(
        device, launch,
        grad ? cuda__pool_grad(a[ni].dtype, &w, planes, op, include_pad != 0, a[0].ptr,
                               max ? a[1].ptr : NULL, a[ni].ptr, s)
             : cuda__pool(a[ni].dtype, &w, planes, op, include_pad != 0, a[0].ptr, a[ni].ptr, s));
}

/* BatchNormalization in inference: X [N, C, ...], scale, B, mean, var [C]. */
static int32_t cuda_batch_norm(ses_drv_device_t *device, void *state,
                               const ses_drv_launch_t *launch) {
    cuda_arg_t a[6];
    double eps = 1e-5;
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 5, 5, 1, a)) != SES_DRV_OK ||
        (st = cuda_dtypes_agree(device, launch->node, a, 6)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if (cuda_attr_double(node, "epsilon", 1e-5, &eps) != SES_DRV_OK)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "epsilon is not a FLOAT");
    int ok = a[0].rank >= 2 && cuda_same_shape(&a[0], &a[5]);
    for (uint32_t i = 1; ok && i < 5; i++)
        ok = a[i].rank == 1 && a[i].dims[0] == a[0].dims[1];
    if (!ok)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "X must be [N, C, ...] with Y its shape and each parameter [C]");
    if (a[5].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    const int64_t c = a[0].dims[1], inner = a[0].count / (a[0].dims[0] * c);
    return cuda_finish(
        device, launch,
        cuda__batch_norm(a[0].dtype, a[0].count, c, inner, a[0].ptr, a[1].ptr, a[2].ptr, a[3].ptr,
                         a[4].ptr, eps, a[5].ptr, cuda_stream_of(device, launch)));
}

/* Dropout in inference: the data unchanged and a mask of all true. */
static int32_t cuda_dropout(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[3];
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 1, 1, 2, a)) != SES_DRV_OK)
        return st;
    if (a[0].dtype != a[1].dtype || a[2].dtype != SES_DRV_DTYPE_BOOL ||
        !cuda_same_shape(&a[0], &a[1]) || !cuda_same_shape(&a[0], &a[2]))
        return cuda_shape_fail(device, launch->node,
                               "output and mask (bool) must have the data's shape", &a[0], &a[1]);
    if (a[0].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, launch->node->op)) != SES_DRV_OK)
        return st;
    cudaStream_t s = (cudaStream_t)cuda_stream_of(device, launch);
    cudaError_t e = cudaSuccess;
    if (a[0].ptr != a[1].ptr)
        e = cudaMemcpyAsync(a[1].ptr, a[0].ptr, (size_t)a[0].bytes, cudaMemcpyDeviceToDevice, s);
    if (e == cudaSuccess)
        e = cudaMemsetAsync(a[2].ptr, 1, (size_t)a[2].bytes, s);
    return cuda_finish(device, launch, (int)e);
}

/* Pad's and PadGrad's geometry: @p x the unpadded tensor, @p y the padded one. */
static int32_t cuda_pad_shapes(ses_drv_device_t *device, const ses_drv_node_t *node,
                               const cuda_arg_t *x, const cuda_arg_t *y, int64_t *begin,
                               int64_t *mode) {
    int64_t pads[2 * CUDA_MAX_RANK];
    uint32_t np = 0;
    int32_t st;

    if ((st = cuda_attr_ints_max(device, node, "pads", pads, 2 * CUDA_MAX_RANK, &np)) != SES_DRV_OK)
        return st;
    if (cuda_attr_int(node, "mode", 0, mode) != SES_DRV_OK)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "mode is not an INT");
    int ok = np == 2 * x->rank && y->rank == x->rank && *mode >= 0 && *mode <= 2;
    for (uint32_t d = 0; ok && d < x->rank; d++) {
        begin[d] = pads[d];
        ok = x->dims[d] + pads[d] + pads[x->rank + d] == y->dims[d] &&
             (*mode != CUDA_PAD_REFLECT || x->dims[d] > 0 || y->dims[d] == 0);
    }
    if (!ok)
        return cuda_shape_fail(device, node, "pads and mode do not take the input to the output", x,
                               y);
    return SES_DRV_OK;
}

static int32_t cuda_pad(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[3];
    int64_t begin[CUDA_MAX_RANK], mode = 0;
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 1, 2, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const uint32_t ni = node->n_inputs;
    if ((st = cuda_dtypes_agree(device, node, a, ni + 1)) != SES_DRV_OK ||
        (st = cuda_pad_shapes(device, node, &a[0], &a[ni], begin, &mode)) != SES_DRV_OK)
        return st;
    if (ni == 2 && a[1].count != 1)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "constant_value must hold one element");
    if (a[ni].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    return cuda_finish(device, launch,
                       cuda__pad(cuda_dtype_size(a[0].dtype), a[0].rank, a[0].dims, a[ni].dims,
                                 begin, (int)mode, a[0].ptr, ni == 2 ? a[1].ptr : NULL, a[ni].ptr,
                                 a[ni].count, cuda_stream_of(device, launch)));
}

/* PadGrad(dy): dx of Pad's input shape, each dy element added where Pad read it. */
static int32_t cuda_pad_grad(ses_drv_device_t *device, void *state,
                             const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    int64_t begin[CUDA_MAX_RANK], mode = 0;
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK ||
        (st = cuda_dtypes_agree(device, launch->node, a, 2)) != SES_DRV_OK ||
        (st = cuda_pad_shapes(device, launch->node, &a[1], &a[0], begin, &mode)) != SES_DRV_OK)
        return st;
    if (a[1].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, launch->node->op)) != SES_DRV_OK)
        return st;
    return cuda_finish(
        device, launch,
        cuda__pad_grad(a[1].dtype, a[1].rank, a[1].dims, a[0].dims, begin, (int)mode, a[0].ptr,
                       a[1].ptr, a[1].count, a[0].count, cuda_stream_of(device, launch)));
}

/* ---------------------------------------------------------------------------------------------
 * SoftmaxCrossEntropyLoss and its gradient: scores or log_prob [N, C, d...] f32 or f64, labels
 * i32 or
 * i64 [N, d...], optional weights [C]. Labels are checked on the device; the call waits for
 * the check, so that an out-of-range label is an error naming its position and value.
 * ------------------------------------------------------------------------------------------- */

static int32_t cuda_sce(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[6];
    int64_t reduction = -1, has_ignore = 0, ignore_index = 0;
    int32_t st;

    (void)state;
    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!launch || launch->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_launch_t, output_offsets) ||
        !launch->node || launch->node->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_node_t, op) ||
        !launch->node->op)
        return CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "the launch or its node is NULL or older than ABI 1.0");
    const ses_drv_node_t *node = launch->node;
    const int grad = strcmp(node->op, "SoftmaxCrossEntropyLossGrad") == 0;
    const uint32_t n_out = grad ? 1 : (node->n_outputs == 2 ? 2 : 1);
    if ((st = cuda_check_launch(device, launch, grad ? 3 : 2, grad ? 4 : 3, n_out, a)) !=
        SES_DRV_OK)
        return st;
    const uint32_t ni = node->n_inputs;
    const cuda_arg_t *x = &a[grad ? 1 : 0], *labels = &a[grad ? 2 : 1];
    const cuda_arg_t *weights = ni == (grad ? 4u : 3u) ? &a[ni - 1] : NULL;
    const cuda_arg_t *dloss = grad ? &a[0] : NULL;
    cuda_arg_t *out0 = &a[ni], *log_prob = (!grad && n_out == 2) ? &a[ni + 1] : NULL;

    if (cuda_attr_int(node, "reduction", -1, &reduction) != SES_DRV_OK || reduction < 0 ||
        reduction > 2 || cuda_attr_int(node, "has_ignore_index", 0, &has_ignore) != SES_DRV_OK ||
        cuda_attr_int(node, "ignore_index", 0, &ignore_index) != SES_DRV_OK)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "reduction (0, 1, 2), has_ignore_index or ignore_index is wrong");
    const uint32_t ft = x->dtype; /* f32 or f64 */
    int ok = x->rank >= 2 && (ft == SES_DRV_DTYPE_F32 || ft == SES_DRV_DTYPE_F64) &&
             out0->dtype == ft &&
             (labels->dtype == SES_DRV_DTYPE_I64 || labels->dtype == SES_DRV_DTYPE_I32) &&
             labels->rank + 1 == x->rank;
    for (uint32_t d = 0; ok && d < labels->rank; d++)
        ok = labels->dims[d] == x->dims[d == 0 ? 0 : d + 1];
    if (ok && weights)
        ok = weights->dtype == ft && weights->rank == 1 && weights->dims[0] == x->dims[1];
    const cuda_arg_t *per_pos = grad ? dloss : out0; /* the loss's shape */
    if (ok)
        ok = per_pos->dtype == ft &&
             (reduction == 2 ? cuda_same_shape(per_pos, labels) : per_pos->rank == 0);
    if (ok && grad)
        ok = cuda_same_shape(out0, x);
    if (ok && log_prob)
        ok = log_prob->dtype == ft && cuda_same_shape(log_prob, x);
    if (!ok)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "dtypes or shapes disagree: %s must be f32 or f64 [N, C, d...], "
                              "labels i32/i64 [N, d...], weights [C] and the loss of its dtype, "
                              "the loss a scalar (or [N, d...] for reduction none)",
                              grad ? "log_prob" : "scores");
    const int64_t classes = x->dims[1];
    const int64_t inner = classes > 0 && x->dims[0] > 0 ? x->count / x->dims[0] / classes : 1;
    const int64_t positions = labels->count;
    if (grad && out0->count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    void *s = cuda_stream_of(device, launch);
    const int l64 = labels->dtype == SES_DRV_DTYPE_I64;
    cudaError_t e;

    pthread_mutex_lock(&device->check_lock);
    e = cudaMemsetAsync(device->bad_dev, 0xff, sizeof *device->bad_dev, (cudaStream_t)s);
    if (e == cudaSuccess)
        e = (cudaError_t)(grad ? cuda__sce_grad(ft, positions, classes, inner, dloss->ptr, x->ptr,
                                                labels->ptr, l64, weights ? weights->ptr : NULL,
                                                (int)has_ignore, ignore_index, (int)reduction,
                                                out0->ptr, device->bad_dev, s)
                               : cuda__sce_loss(ft, positions, classes, inner, x->ptr, labels->ptr,
                                                l64, weights ? weights->ptr : NULL, (int)has_ignore,
                                                ignore_index, (int)reduction, out0->ptr,
                                                log_prob ? log_prob->ptr : NULL, device->bad_dev,
                                                s));
    if (e == cudaSuccess)
        e = cudaMemcpyAsync(device->bad_host, device->bad_dev, sizeof *device->bad_host,
                            cudaMemcpyDeviceToHost, (cudaStream_t)s);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize((cudaStream_t)s);
    const unsigned long long bad = *device->bad_host;
    pthread_mutex_unlock(&device->check_lock);
    if (e != cudaSuccess)
        return cuda_finish(device, launch, (int)e);
    if (bad != ~0ULL) {
        int64_t value = 0;
        int32_t v32 = 0;
        if (l64)
            cudaMemcpy(&value, (const int64_t *)labels->ptr + bad, sizeof value,
                       cudaMemcpyDeviceToHost);
        else if (cudaMemcpy(&v32, (const int32_t *)labels->ptr + bad, sizeof v32,
                            cudaMemcpyDeviceToHost) == cudaSuccess)
            value = v32;
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "label %" PRId64 " at position %llu is outside [0, %" PRId64 ")%s",
                              value, bad, classes, has_ignore ? " and is not ignore_index" : "");
    }
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Optimizers: in place, no outputs.
 * ------------------------------------------------------------------------------------------- */

static int32_t cuda_optimizer(ses_drv_device_t *device, void *state,
                              const ses_drv_launch_t *launch) {
    cuda_arg_t a[6];
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 3, 6, 0, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const int sgd = strcmp(node->op, "SGD") == 0, mom = strcmp(node->op, "Momentum") == 0;
    const uint32_t want = sgd ? 3 : mom ? 4 : 6;
    if (node->n_inputs != want)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "has %" PRIu32 " inputs, %s takes %" PRIu32, node->n_inputs, node->op,
                              want);
    if ((st = cuda_dtypes_agree(device, node, a, want)) != SES_DRV_OK)
        return st;
    if (!cuda_same_shape(&a[0], &a[1]) || a[2].count != 1 ||
        (mom && !cuda_same_shape(&a[0], &a[3])) ||
        (want == 6 &&
         (!cuda_same_shape(&a[0], &a[3]) || !cuda_same_shape(&a[0], &a[4]) || a[5].count != 1)))
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "var, grad and the slots must have one shape, lr and t one element");
    void *s = cuda_stream_of(device, launch);
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    if (sgd)
        return a[0].count == 0 ? SES_DRV_OK
                               : cuda_finish(device, launch,
                                             cuda__sgd(a[0].dtype, a[0].count, a[0].ptr, a[1].ptr,
                                                       a[2].ptr, s));
    if (mom) {
        double momentum = 0.9;
        int64_t nesterov = 0;
        if (cuda_attr_double(node, "momentum", 0.9, &momentum) != SES_DRV_OK ||
            cuda_attr_int(node, "nesterov", 0, &nesterov) != SES_DRV_OK)
            return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                  "an attribute has the wrong type");
        return a[0].count == 0
                   ? SES_DRV_OK
                   : cuda_finish(device, launch,
                                 cuda__momentum(a[0].dtype, a[0].count, a[0].ptr, a[1].ptr,
                                                a[2].ptr, a[3].ptr, momentum, nesterov != 0, s));
    }
    double b1 = 0.9, b2 = 0.999, eps = 1e-8;
    if (cuda_attr_double(node, "beta1", 0.9, &b1) != SES_DRV_OK ||
        cuda_attr_double(node, "beta2", 0.999, &b2) != SES_DRV_OK ||
        cuda_attr_double(node, "epsilon", 1e-8, &eps) != SES_DRV_OK)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "an attribute has the wrong type");
    if (!(b1 >= 0.0 && b1 < 1.0) || !(b2 >= 0.0 && b2 < 1.0))
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "beta1 %g and beta2 %g must be in [0, 1)", b1, b2);
    return cuda_finish(device, launch,
                       cuda__adam(a[0].dtype, a[0].count, a[0].ptr, a[1].ptr, a[2].ptr, a[3].ptr,
                                  a[4].ptr, a[5].ptr, b1, b2, eps, s));
}

/* ---------------------------------------------------------------------------------------------
 * The table.
 * ------------------------------------------------------------------------------------------- */

/* One entry; F is its flags (SES_DRV_KERNEL_NO_CAPTURE for the kernels that wait). */
#define KF(o, sig, fn, sup, f)                \
    {.struct_size = sizeof(ses_drv_kernel_t), \
     .op = (o),                               \
     .signature = (sig),                      \
     .priority = 0,                           \
     .flags = (f),                            \
     .supports_node = (sup),                  \
     .compute = (fn)},
#define K(o, sig, fn) KF(o, sig, fn, cuda_rank_supports, 0)
/* An entry with per-node state (create, destroy). */
#define KS(o, sig, fn, cr, de)                \
    {.struct_size = sizeof(ses_drv_kernel_t), \
     .op = (o),                               \
     .signature = (sig),                      \
     .priority = 0,                           \
     .flags = 0,                              \
     .supports_node = cuda_rank_supports,     \
     .compute = (fn),                         \
     .create = (cr),                          \
     .destroy = (de)},
#define NC SES_DRV_KERNEL_NO_CAPTURE

/* Dtype lists: M(args..., T) for each T. */
/* clang-format off */
#define FP(M, ...) M(__VA_ARGS__, "f32") M(__VA_ARGS__, "f64") M(__VA_ARGS__, "f16") \
    M(__VA_ARGS__, "bf16")
#define FLOATS(M, ...) M(__VA_ARGS__, "f32") M(__VA_ARGS__, "f64")
#define NUMBERS(M, ...) FLOATS(M, __VA_ARGS__) M(__VA_ARGS__, "i32") M(__VA_ARGS__, "i64")
#define ORDERED(M, ...) NUMBERS(M, __VA_ARGS__) M(__VA_ARGS__, "u8")
#define BASIC(M, ...) ORDERED(M, __VA_ARGS__) M(__VA_ARGS__, "bool")
#define ANY(M, ...) BASIC(M, __VA_ARGS__) M(__VA_ARGS__, "f16") M(__VA_ARGS__, "bf16") \
    M(__VA_ARGS__, "i8") M(__VA_ARGS__, "i16") M(__VA_ARGS__, "u16") M(__VA_ARGS__, "u32") \
    M(__VA_ARGS__, "u64")
/* clang-format on */

/* Entry shapes by signature. */
#define UN(o, fn, T) K(o, T "->" T, fn)
#define BIN(o, fn, T) K(o, T "," T "->" T, fn)
#define BIN_NC(o, fn, T) KF(o, T "," T "->" T, fn, cuda_rank_supports, NC)
#define TER(o, fn, T) K(o, T "," T "," T "->" T, fn)
#define CMP(o, fn, T) K(o, T "," T "->bool", fn)
#define WHERE(o, fn, T) K(o, "bool," T "," T "->" T, fn)
#define VAR(o, fn, T) K(o, T "...->" T, fn)
#define TO_I64(o, fn, T) K(o, T "->i64", fn)
#define FROM_I64(o, fn, T) K(o, "i64->" T, fn)
#define SCE_L(o, fn, T, L)                                  \
    KF(o, T "," L "->" T, fn, cuda_rank_supports, NC)       \
    KF(o, T "," L "->" T "," T, fn, cuda_rank_supports, NC) \
    KF(o, T "," L "," T "->" T, fn, cuda_rank_supports, NC) \
    KF(o, T "," L "," T "->" T "," T, fn, cuda_rank_supports, NC)
#define SCE(o, fn, T) SCE_L(o, fn, T, "i64") SCE_L(o, fn, T, "i32")
#define SCE_GRAD_L(o, fn, T, L)                             \
    KF(o, T "," T "," L "->" T, fn, cuda_rank_supports, NC) \
    KF(o, T "," T "," L "," T "->" T, fn, cuda_rank_supports, NC)
#define SCE_GRAD(o, fn, T) SCE_GRAD_L(o, fn, T, "i64") SCE_GRAD_L(o, fn, T, "i32")
/* SGD, Momentum, Adam: no outputs, the signature ends in the arrow. */
#define OPTIMIZERS(unused, fn, T)               \
    K("SGD", T "," T "," T "->", fn)            \
    K("Momentum", T "," T "," T "," T "->", fn) \
    K("Adam", T "," T "," T "," T "," T "," T "->", fn)
/* Conv, ConvGrad and the forward pools keep per-node state (cuDNN or im2col, see above). */
#define CNN_UN(o, fn, T) KS(o, T "->" T, fn, cuda_cnn_create, cuda_cnn_destroy)
#define CNN_BIN(o, fn, T) KS(o, T "," T "->" T, fn, cuda_cnn_create, cuda_cnn_destroy)
#define CNN_TER(o, fn, T) KS(o, T "," T "," T "->" T, fn, cuda_cnn_create, cuda_cnn_destroy)
#define BN(o, fn, T) K(o, T "," T "," T "," T "," T "->" T, fn)
#define DROPOUT(o, fn, T) K(o, T "->" T ",bool", fn)
#define SPLIT(o, fn, T)                                                 \
    K(o, T "->" T, fn)                                                  \
    K(o, T "->" T "," T, fn)                                            \
    K(o, T "->" T "," T "," T, fn) K(o, T "->" T "," T "," T "," T, fn) \
        K(o, T "->" T "," T "," T "," T "," T, fn)                      \
            K(o, T "->" T "," T "," T "," T "," T "," T, fn)            \
                K(o, T "->" T "," T "," T "," T "," T "," T "," T, fn)  \
                    K(o, T "->" T "," T "," T "," T "," T "," T "," T "," T, fn)
#define IDX(o, fn, T) \
    KF(o, T ",i32->" T, fn, cuda_rank_supports, NC) KF(o, T ",i64->" T, fn, cuda_rank_supports, NC)
#define CAST_TO(o, fn, A, B) K(o, A "->" B, fn)
/* BASIC spelled again: a macro is not expanded inside its own expansion. */
#define CAST_FROM(o, fn, A)                                                   \
    CAST_TO(o, fn, A, "f32")                                                  \
    CAST_TO(o, fn, A, "f64")                                                  \
    CAST_TO(o, fn, A, "i32") CAST_TO(o, fn, A, "i64") CAST_TO(o, fn, A, "u8") \
        CAST_TO(o, fn, A, "bool")

static const ses_drv_kernel_t cuda_kernels[] = {
    /* clang-format off */
    ANY(UN, "Identity", cuda_copy_op)
    ANY(UN, "Reshape", cuda_copy_op)
    ANY(UN, "Flatten", cuda_copy_op)
    ANY(UN, "Squeeze", cuda_copy_op)
    ANY(UN, "Unsqueeze", cuda_copy_op)
    FP(BIN, "Add", cuda_binary) BIN("Add", cuda_binary, "i32") BIN("Add", cuda_binary, "i64")
    FP(BIN, "Sub", cuda_binary) BIN("Sub", cuda_binary, "i32") BIN("Sub", cuda_binary, "i64")
    FP(BIN, "Mul", cuda_binary) BIN("Mul", cuda_binary, "i32") BIN("Mul", cuda_binary, "i64")
    FP(BIN, "Div", cuda_binary)
    BIN_NC("Div", cuda_binary, "i32") BIN_NC("Div", cuda_binary, "i64")
    FP(BIN, "Pow", cuda_binary)
    BASIC(CMP, "Equal", cuda_compare)
    ORDERED(CMP, "Greater", cuda_compare)
    ORDERED(CMP, "Less", cuda_compare)
    BASIC(WHERE, "Where", cuda_where) WHERE("Where", cuda_where, "f16")
    WHERE("Where", cuda_where, "bf16")
    FP(UN, "Neg", cuda_unary) UN("Neg", cuda_unary, "i32") UN("Neg", cuda_unary, "i64")
    FP(UN, "Abs", cuda_unary) UN("Abs", cuda_unary, "i32") UN("Abs", cuda_unary, "i64")
    FP(UN, "Relu", cuda_unary) UN("Relu", cuda_unary, "i32") UN("Relu", cuda_unary, "i64")
    FP(UN, "Exp", cuda_unary)
    FP(UN, "Log", cuda_unary)
    FP(UN, "Sqrt", cuda_unary)
    FP(UN, "Reciprocal", cuda_unary)
    FP(UN, "Sigmoid", cuda_unary)
    FP(UN, "Tanh", cuda_unary)
    FP(UN, "Softplus", cuda_unary)
    FP(UN, "Erf", cuda_unary)
    FP(UN, "LeakyRelu", cuda_unary)
    BASIC(CAST_FROM, "Cast", cuda_cast)
    CAST_TO("Cast", cuda_cast, "f32", "f16") CAST_TO("Cast", cuda_cast, "f32", "bf16")
    CAST_TO("Cast", cuda_cast, "f16", "f32") CAST_TO("Cast", cuda_cast, "bf16", "f32")
    FP(BIN, "MatMul", cuda_matmul)
    FP(BIN, "Gemm", cuda_gemm_op)
    FP(TER, "Gemm", cuda_gemm_op)
    NUMBERS(UN, "ReduceSum", cuda_reduce)
    NUMBERS(UN, "ReduceMax", cuda_reduce)
    FLOATS(UN, "ReduceMean", cuda_reduce)
    FLOATS(UN, "Softmax", cuda_softmax)
    FLOATS(UN, "LogSoftmax", cuda_softmax)
    NUMBERS(TO_I64, "ArgMax", cuda_argmax)
    ANY(UN, "Transpose", cuda_transpose)
    ANY(VAR, "Concat", cuda_concat)
    ANY(UN, "Slice", cuda_slice)
    ANY(IDX, "Gather", cuda_gather)
    ANY(UN, "ExpandLike", cuda_expand_like)
    NUMBERS(UN, "ReduceSumLike", cuda_reduce_sum_like)
    ANY(UN, "ScalarLike", cuda_scalar_like)
    FP(BIN, "ReluGrad", cuda_binary)
    FP(BIN, "LeakyReluGrad", cuda_binary)
    FP(BIN, "SigmoidGrad", cuda_binary)
    FP(BIN, "TanhGrad", cuda_binary)
    FLOATS(BIN, "SoftmaxGrad", cuda_softmax)
    FLOATS(BIN, "LogSoftmaxGrad", cuda_softmax)
    FP(TER, "MatMulGrad", cuda_matmul_grad)
    FP(UN, "ReduceGrad", cuda_reduce_grad)
    FLOATS(IDX, "GatherGrad", cuda_gather_grad)
    ANY(UN, "SliceGrad", cuda_slice_grad)
    NUMBERS(UN, "Clip", cuda_clip)
    NUMBERS(BIN, "Clip", cuda_clip)
    NUMBERS(TER, "Clip", cuda_clip)
    NUMBERS(TER, "Range", cuda_range)
    NUMBERS(FROM_I64, "ConstantOfShape", cuda_constant_of_shape)
    FROM_I64("ConstantOfShape", cuda_constant_of_shape, "bool")
    ANY(TO_I64, "Shape", cuda_shape)
    NUMBERS(SPLIT, "Split", cuda_split)
    FLOATS(CNN_BIN, "Conv", cuda_conv)
    FLOATS(CNN_TER, "Conv", cuda_conv)
    FLOATS(CNN_TER, "ConvGrad", cuda_conv_grad)
    FLOATS(CNN_UN, "MaxPool", cuda_pool)
    FLOATS(CNN_UN, "AveragePool", cuda_pool)
    FLOATS(BIN, "MaxPoolGrad", cuda_pool)
    FLOATS(UN, "AveragePoolGrad", cuda_pool)
    FLOATS(BN, "BatchNormalization", cuda_batch_norm)
    FLOATS(DROPOUT, "Dropout", cuda_dropout)
    NUMBERS(UN, "Pad", cuda_pad)
    NUMBERS(BIN, "Pad", cuda_pad)
    FLOATS(UN, "PadGrad", cuda_pad_grad)
    /* The loss ops check their labels on the device and wait for the check. */
    FLOATS(SCE, "SoftmaxCrossEntropyLoss", cuda_sce)
    FLOATS(SCE_GRAD, "SoftmaxCrossEntropyLossGrad", cuda_sce)
    FLOATS(OPTIMIZERS, "", cuda_optimizer)
    /* clang-format on */
};

int32_t cuda__get_kernels(ses_drv_device_t *device, const ses_drv_kernel_t **out_kernels,
                          uint32_t *out_count, uint32_t *out_stride) {
    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_kernels || !out_count || !out_stride)
        return CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "get_kernels: an out parameter is NULL");
    *out_kernels = cuda_kernels;
    *out_count = (uint32_t)(sizeof cuda_kernels / sizeof cuda_kernels[0]);
    *out_stride = (uint32_t)sizeof(ses_drv_kernel_t);
    return SES_DRV_OK;
}
