/*
 * The CUDA driver's kernel table: each entry checks its launch (struct sizes, counts, dtypes,
 * dims, byte ranges, alignment, shapes) on the host, then enqueues device work on the launch's
 * stream, or on the device's own stream followed by a synchronize when the launch has none.
 * The semantics are the CPU driver's (plugins/cpu/README.md); ops or attribute combinations not
 * handled here are refused in supports_node and run on the next device.
 */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_private.h"

#define CUDA_MAX_ARGS 8

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
    static const char *const ops[] = {"Add",
                                      "Sub",
                                      "Mul",
                                      "Div",
                                      "Pow",
                                      "Neg",
                                      "Abs",
                                      "Relu",
                                      "Exp",
                                      "Log",
                                      "Sqrt",
                                      "Reciprocal",
                                      "Sigmoid",
                                      "Tanh",
                                      "LeakyRelu",
                                      "ReluGrad",
                                      "LeakyReluGrad",
                                      "SigmoidGrad",
                                      "TanhGrad",
                                      "Softmax",
                                      "LogSoftmax",
                                      "SoftmaxGrad",
                                      "LogSoftmaxGrad",
                                      "Identity",
                                      "Reshape",
                                      "Flatten",
                                      "Squeeze",
                                      "Unsqueeze",
                                      "ScalarLike"};
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

static int32_t cuda_attr_float(const ses_drv_node_t *node, const char *name, float def,
                               float *out) {
    double v = def;
    uint64_t n = 1;
    *out = def;
    if (!node->attr)
        return SES_DRV_OK;
    int32_t st = node->attr(node, name, SES_DRV_ATTR_FLOAT, &n, &v);
    if (st == SES_DRV_NOT_FOUND)
        return SES_DRV_OK;
    if (st != SES_DRV_OK || n != 1)
        return SES_DRV_INVALID_ARGUMENT;
    *out = (float)v;
    return SES_DRV_OK;
}

static int32_t cuda_attr_int(const ses_drv_node_t *node, const char *name, int64_t def,
                             int64_t *out) {
    int64_t v = def;
    uint64_t n = 1;
    *out = def;
    if (!node->attr)
        return SES_DRV_OK;
    int32_t st = node->attr(node, name, SES_DRV_ATTR_INT, &n, &v);
    if (st == SES_DRV_NOT_FOUND)
        return SES_DRV_OK;
    if (st != SES_DRV_OK || n != 1)
        return SES_DRV_INVALID_ARGUMENT;
    *out = v;
    return SES_DRV_OK;
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
 * Elementwise: binary with broadcasting, the activation gradients, unary ops.
 * ------------------------------------------------------------------------------------------- */

/* Fills the broadcast walk of a, b to o; 0 when the shapes do not broadcast to o. */
static int cuda_bcast(const cuda_arg_t *a, const cuda_arg_t *b, const cuda_arg_t *o,
                      cuda_bcast_t *g) {
    const cuda_arg_t *in[2] = {a, b};
    memset(g, 0, sizeof *g);
    g->rank = o->rank;
    g->count = o->count;
    g->same = cuda_same_shape(a, o) && cuda_same_shape(b, o);
    if (a->rank > o->rank || b->rank > o->rank || o->rank > CUDA_MAX_RANK)
        return 0;
    for (uint32_t d = 0; d < o->rank; d++)
        g->dims[d] = o->dims[d] > 0 ? o->dims[d] : 1;
    for (uint32_t k = 0; k < 2; k++) {
        int64_t step = 1;
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
               {"LeakyRelu", CUDA_UN_LEAKY_RELU}};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(op, ops[i].op) == 0)
            return ops[i].code;
    return -1;
}

static int32_t cuda_binary(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[3];
    cuda_bcast_t g;
    float alpha = 0.01f;
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
    if (op == CUDA_BIN_LEAKY_RELU_GRAD &&
        cuda_attr_float(node, "alpha", 0.01f, &alpha) != SES_DRV_OK)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "attribute alpha is not a FLOAT");
    if (op >= CUDA_BIN_RELU_GRAD &&
        !(cuda_same_shape(&a[0], &a[2]) && cuda_same_shape(&a[1], &a[2])))
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "dy, the forward tensor and the output must have one shape");
    if (!cuda_bcast(&a[0], &a[1], &a[2], &g))
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "shapes do not broadcast to the output (ranks %" PRIu32 ", %" PRIu32
                              " -> %" PRIu32 ")",
                              a[0].rank, a[1].rank, a[2].rank);
    if (a[2].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    return cuda_finish(device, launch,
                       cuda__binary(a[2].dtype, &g, op, alpha, a[0].ptr, a[1].ptr, a[2].ptr,
                                    cuda_stream_of(device, launch)));
}

static int32_t cuda_unary(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    float alpha = 0.01f;
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
    if (!cuda_same_shape(&a[0], &a[1]))
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "input and output shapes differ");
    if (op == CUDA_UN_LEAKY_RELU && cuda_attr_float(node, "alpha", 0.01f, &alpha) != SES_DRV_OK)
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
 * MatMul and Gemm through cublasGemmEx (row-major: C^T = B^T A^T in cuBLAS's column-major).
 * ------------------------------------------------------------------------------------------- */

static int cuda_cuda_type(uint32_t dtype) {
    return dtype == SES_DRV_DTYPE_F16    ? (int)CUDA_R_16F
           : dtype == SES_DRV_DTYPE_BF16 ? (int)CUDA_R_16BF
                                         : (int)CUDA_R_32F;
}

/* Row-major Y[M,N] = alpha * op(A)[M,K] op(B)[K,N] + beta * Y. */
static int32_t cuda_gemm(ses_drv_device_t *device, const ses_drv_launch_t *launch, uint32_t dtype,
                         int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                         const void *A, const void *B, float beta, void *Y) {
    cublasStatus_t cs;
    const int type = cuda_cuda_type(dtype);
    const cublasComputeType_t ct = dtype == SES_DRV_DTYPE_F32 && device->allow_tf32
                                       ? CUBLAS_COMPUTE_32F_FAST_TF32
                                       : CUBLAS_COMPUTE_32F;

    if (!device->cublas)
        return cuda_node_fail(device, launch->node, SES_DRV_UNAVAILABLE,
                              "cuBLAS could not be initialised on cuda:%d", device->ordinal);
    if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX)
        return cuda_node_fail(device, launch->node, SES_DRV_UNIMPLEMENTED,
                              "dimensions beyond 2^31 are not supported");
    pthread_mutex_lock(&device->lock);
    cublasSetStream((cublasHandle_t)device->cublas, (cudaStream_t)cuda_stream_of(device, launch));
    cs = cublasGemmEx((cublasHandle_t)device->cublas, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                      ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n, (int)m, (int)k, &alpha, B,
                      (cudaDataType)type, tb ? (int)k : (int)n, A, (cudaDataType)type,
                      ta ? (int)m : (int)k, &beta, Y, (cudaDataType)type, (int)n, ct,
                      CUBLAS_GEMM_DEFAULT);
    pthread_mutex_unlock(&device->lock);
    if (cs != CUBLAS_STATUS_SUCCESS)
        return cuda_node_fail(device, launch->node, SES_DRV_INTERNAL,
                              "cublasGemmEx(%" PRId64 "x%" PRId64 "x%" PRId64 ") failed: status %d",
                              m, n, k, (int)cs);
    return cuda_finish(device, launch, (int)cudaGetLastError());
}

/* MatMul: A [..., M, K] (leading dims merged into M) times B [K, N]; other forms are refused. */
static int32_t cuda_matmul_supports(ses_drv_device_t *device, const ses_drv_node_t *node) {
    int32_t st;
    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if ((st = cuda_check_node(device, node, 2, 2, 1)) != SES_DRV_OK)
        return st;
    const ses_drv_tensor_desc_t *a = cuda_desc_at(node->inputs, 0),
                                *b = cuda_desc_at(node->inputs, 1);
    if (a->rank < 2 || b->rank != 2)
        return cuda_node_fail(device, node, SES_DRV_UNIMPLEMENTED,
                              "cuda runs MatMul of A with rank >= 2 and B with rank 2 only "
                              "(A has rank %" PRIu32 ", B rank %" PRIu32 ")",
                              a->rank, b->rank);
    return SES_DRV_OK;
}

static int32_t cuda_matmul(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[3];
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 2, 2, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = cuda_matmul_supports(device, node)) != SES_DRV_OK ||
        (st = cuda_dtypes_agree(device, node, a, 3)) != SES_DRV_OK)
        return st;
    const int64_t k = a[0].dims[a[0].rank - 1], n = a[1].dims[1];
    const int64_t m = k > 0 ? a[0].count / k : 0;
    int ok = a[1].dims[0] == k && a[2].rank == a[0].rank && a[2].dims[a[2].rank - 1] == n;
    for (uint32_t d = 0; ok && d + 1 < a[0].rank; d++)
        ok = a[2].dims[d] == a[0].dims[d];
    if (!ok)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "inner dimensions differ or the output shape is wrong: A's last "
                              "dim is %" PRId64 ", B is [%" PRId64 ",%" PRId64 "]",
                              k, a[1].dims[0], n);
    if (a[2].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    if (k == 0 || m == 0) {
        const int e =
            (int)cudaMemsetAsync(a[2].ptr, 0, (size_t)a[2].count * cuda_dtype_size(a[2].dtype),
                                 (cudaStream_t)cuda_stream_of(device, launch));
        return cuda_finish(device, launch, e);
    }
    return cuda_gemm(device, launch, a[2].dtype, 0, 0, m, n, k, 1.0f, a[0].ptr, a[1].ptr, 0.0f,
                     a[2].ptr);
}

static int32_t cuda_gemm_op(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[4];
    float alpha = 1.0f, beta = 1.0f;
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
    if (cuda_attr_float(node, "alpha", 1.0f, &alpha) != SES_DRV_OK ||
        cuda_attr_float(node, "beta", 1.0f, &beta) != SES_DRV_OK ||
        cuda_attr_int(node, "transA", 0, &ta) != SES_DRV_OK ||
        cuda_attr_int(node, "transB", 0, &tb) != SES_DRV_OK)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "an attribute has the wrong type");
    if (a[0].rank != 2 || a[1].rank != 2 || y->rank != 2)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "A, B and Y must be 2-D");
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
    float b = 0.0f;
    if (ni == 3 && beta != 0.0f) {
        cuda_bcast_t g;
        if (!cuda_bcast(&a[2], &a[2], y, &g))
            return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                  "C does not broadcast to (M, N)");
        if (a[2].ptr == y->ptr && !g.same)
            return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                  "C shares the output's bytes but is broadcast");
        int e =
            cuda__binary(y->dtype, &g, CUDA_BIN_FIRST, 1.0f, a[2].ptr, a[2].ptr, y->ptr, stream);
        if (e != 0)
            return cuda_finish(device, launch, e);
        b = beta;
    }
    if (k == 0) {
        /* Y = beta * C, or 0: scale through a GEMM-free path is not worth it here. */
        if (b == 0.0f)
            return cuda_finish(
                device, launch,
                (int)cudaMemsetAsync(y->ptr, 0, (size_t)y->count * cuda_dtype_size(y->dtype),
                                     (cudaStream_t)stream));
        return cuda_node_fail(device, node, SES_DRV_UNIMPLEMENTED, "K = 0 with C");
    }
    return cuda_gemm(device, launch, y->dtype, (int)ta, (int)tb, m, n, k, alpha, a[0].ptr, a[1].ptr,
                     b, y->ptr);
}

/* ---------------------------------------------------------------------------------------------
 * Reductions and Softmax: the reduced axes must be one contiguous run [first, last], so that the
 * input is a [outer, red, inner] view.
 * ------------------------------------------------------------------------------------------- */

/* Reads the axes of a Reduce* node into [*first, *last]; 0 when they are not one run. */
static int cuda_axes_run(const ses_drv_node_t *node, uint32_t rank, uint32_t *first,
                         uint32_t *last) {
    int64_t axes[CUDA_MAX_RANK];
    uint64_t n = CUDA_MAX_RANK;

    if (!node->attr || node->attr(node, "axes", SES_DRV_ATTR_INTS, &n, axes) != SES_DRV_OK ||
        n == 0 || n > CUDA_MAX_RANK)
        return 0;
    for (uint64_t i = 0; i < n; i++)
        if (axes[i] < 0 || axes[i] >= (int64_t)rank || (i > 0 && axes[i] != axes[i - 1] + 1))
            return 0;
    *first = (uint32_t)axes[0];
    *last = (uint32_t)axes[n - 1];
    return 1;
}

static int32_t cuda_reduce_supports(ses_drv_device_t *device, const ses_drv_node_t *node) {
    uint32_t first, last;
    int32_t st;
    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if ((st = cuda_check_node(device, node, 1, 1, 1)) != SES_DRV_OK)
        return st;
    if (!cuda_axes_run(node, cuda_desc_at(node->inputs, 0)->rank, &first, &last))
        return cuda_node_fail(device, node, SES_DRV_UNIMPLEMENTED,
                              "cuda reduces one contiguous run of axes only");
    return SES_DRV_OK;
}

static void cuda_view(const cuda_arg_t *x, uint32_t first, uint32_t last, int64_t *outer,
                      int64_t *red, int64_t *inner) {
    *outer = *red = *inner = 1;
    for (uint32_t d = 0; d < x->rank; d++)
        *(d < first ? outer : d <= last ? red : inner) *= x->dims[d];
}

static int32_t cuda_reduce(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    uint32_t first, last;
    int64_t outer, red, inner;
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = cuda_reduce_supports(device, node)) != SES_DRV_OK)
        return st;
    cuda_axes_run(node, a[0].rank, &first, &last);
    cuda_view(&a[0], first, last, &outer, &red, &inner);
    const int op = strcmp(node->op, "ReduceMax") == 0    ? CUDA_RED_MAX
                   : strcmp(node->op, "ReduceMean") == 0 ? CUDA_RED_MEAN
                                                         : CUDA_RED_SUM;
    if (a[1].count != outer * inner)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "output has %" PRId64 " elements, the reduction gives %" PRId64,
                              a[1].count, outer * inner);
    if (op == CUDA_RED_MAX && red == 0 && a[1].count > 0)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "an empty reduction has no maximum");
    if (a[1].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    return cuda_finish(
        device, launch,
        cuda__reduce(outer, red, inner, op, a[0].ptr, a[1].ptr, cuda_stream_of(device, launch)));
}

static int32_t cuda_softmax(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    int64_t axis = -1, outer, red, inner;
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if (!cuda_same_shape(&a[0], &a[1]))
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "input and output shapes differ");
    if (cuda_attr_int(node, "axis", -1, &axis) != SES_DRV_OK || axis < 0 ||
        axis >= (int64_t)a[0].rank)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "axis is missing or out of range for rank %" PRIu32, a[0].rank);
    if (a[1].count == 0)
        return SES_DRV_OK;
    cuda_view(&a[0], (uint32_t)axis, (uint32_t)axis, &outer, &red, &inner);
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    return cuda_finish(device, launch,
                       cuda__softmax(outer, red, inner, strcmp(node->op, "LogSoftmax") == 0,
                                     a[0].ptr, a[1].ptr, cuda_stream_of(device, launch)));
}

/* ---------------------------------------------------------------------------------------------
 * Gradient helpers: ExpandLike, ReduceGrad (broadcast copies), ReduceSumLike, ScalarLike,
 * SoftmaxGrad, LogSoftmaxGrad, MatMulGrad.
 * ------------------------------------------------------------------------------------------- */

/* ExpandLike: x broadcast (numpy, one way) to the output's shape. */
static int32_t cuda_expand_like(ses_drv_device_t *device, void *state,
                                const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    cuda_bcast_t g;
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK ||
        (st = cuda_dtypes_agree(device, launch->node, a, 2)) != SES_DRV_OK)
        return st;
    if (!cuda_bcast(&a[0], &a[0], &a[1], &g))
        return cuda_node_fail(device, launch->node, SES_DRV_INVALID_ARGUMENT,
                              "the input does not broadcast to the output");
    if (a[1].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, "ExpandLike")) != SES_DRV_OK)
        return st;
    return cuda_finish(device, launch,
                       cuda__binary(a[1].dtype, &g, CUDA_BIN_FIRST, 1.0f, a[0].ptr, a[0].ptr,
                                    a[1].ptr, cuda_stream_of(device, launch)));
}

/* ReduceGrad: dy broadcast back over `axes` of the output, times `scale`. */
static int32_t cuda_reduce_grad(ses_drv_device_t *device, void *state,
                                const ses_drv_launch_t *launch) {
    cuda_arg_t a[2], dy;
    cuda_bcast_t g;
    int64_t axes[CUDA_MAX_RANK], dims[CUDA_MAX_RANK];
    uint64_t n_axes = CUDA_MAX_RANK;
    float scale = 1.0f;
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK ||
        (st = cuda_dtypes_agree(device, launch->node, a, 2)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if (!node->attr || node->attr(node, "axes", SES_DRV_ATTR_INTS, &n_axes, axes) != SES_DRV_OK ||
        n_axes > a[1].rank || cuda_attr_float(node, "scale", 1.0f, &scale) != SES_DRV_OK)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "axes (INTS) or scale (FLOAT) missing or wrong");
    /* dy at the output's rank, 1 on the reduced axes. */
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
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "dy does not broadcast back to the output");
    if (a[1].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, "ReduceGrad")) != SES_DRV_OK)
        return st;
    return cuda_finish(device, launch,
                       cuda__binary(a[1].dtype, &g, CUDA_BIN_FIRST, scale, a[0].ptr, a[0].ptr,
                                    a[1].ptr, cuda_stream_of(device, launch)));
}

/* ReduceSumLike: the input summed down to the output's shape (the reverse of broadcasting). */
static int32_t cuda_reduce_sum_like(ses_drv_device_t *device, void *state,
                                    const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    cuda_rsum_t r;
    int64_t stride[CUDA_MAX_RANK];
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK ||
        (st = cuda_dtypes_agree(device, launch->node, a, 2)) != SES_DRV_OK)
        return st;
    if (a[1].rank > a[0].rank)
        return cuda_node_fail(device, launch->node, SES_DRV_INVALID_ARGUMENT,
                              "the output's rank %" PRIu32 " exceeds the input's %" PRIu32,
                              a[1].rank, a[0].rank);
    memset(&r, 0, sizeof r);
    const uint32_t lead = a[0].rank - a[1].rank;
    int64_t step = 1;
    for (uint32_t d = a[0].rank; d-- > 0;) {
        stride[d] = step;
        step *= a[0].dims[d];
    }
    r.red_count = 1;
    for (uint32_t d = 0; d < a[0].rank; d++) {
        const int64_t in = a[0].dims[d], out = d < lead ? 1 : a[1].dims[d - lead];
        if (d >= lead && out == in) {
            r.keep_dims[r.n_keep] = in;
            r.keep_stride[r.n_keep++] = stride[d];
        } else if (out == 1) {
            r.red_dims[r.n_red] = in;
            r.red_stride[r.n_red++] = stride[d];
            r.red_count *= in;
        } else {
            return cuda_node_fail(device, launch->node, SES_DRV_INVALID_ARGUMENT,
                                  "output dim %" PRIu32 " is %" PRId64 ", the input's is %" PRId64
                                  "; it must be equal or 1",
                                  d - lead, out, in);
        }
    }
    r.out_count = a[1].count;
    if (a[1].count == 0)
        return SES_DRV_OK;
    for (uint32_t d = 0; d < r.n_keep; d++)
        if (r.keep_dims[d] == 0)
            return SES_DRV_OK;
    if ((st = cuda__use(device, "ReduceSumLike")) != SES_DRV_OK)
        return st;
    return cuda_finish(device, launch,
                       cuda__rsum(&r, a[0].ptr, a[1].ptr, cuda_stream_of(device, launch)));
}

/* ScalarLike: a rank-0 output holding `value`; the input only selected the entry. */
static int32_t cuda_scalar_like(ses_drv_device_t *device, void *state,
                                const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    float value = 0.0f;
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK)
        return st;
    if (cuda_attr_float(launch->node, "value", 0.0f, &value) != SES_DRV_OK || a[1].count != 1)
        return cuda_node_fail(device, launch->node, SES_DRV_INVALID_ARGUMENT,
                              "value (FLOAT) is wrong or the output is not one element");
    if ((st = cuda__use(device, "ScalarLike")) != SES_DRV_OK)
        return st;
    return cuda_finish(device, launch,
                       cuda__unary(a[1].dtype, 1, CUDA_UN_FILL, value, a[1].ptr, a[1].ptr,
                                   cuda_stream_of(device, launch)));
}

/* SoftmaxGrad, LogSoftmaxGrad: dy, the forward output y; `axis`. */
static int32_t cuda_softmax_grad(ses_drv_device_t *device, void *state,
                                 const ses_drv_launch_t *launch) {
    cuda_arg_t a[3];
    int64_t axis = -1, outer, red, inner;
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 2, 2, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if (!cuda_same_shape(&a[0], &a[2]) || !cuda_same_shape(&a[1], &a[2]))
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "dy, y and the output must have one shape");
    if (cuda_attr_int(node, "axis", -1, &axis) != SES_DRV_OK || axis < 0 ||
        axis >= (int64_t)a[0].rank)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "axis is missing or out of range for rank %" PRIu32, a[0].rank);
    if (a[2].count == 0)
        return SES_DRV_OK;
    cuda_view(&a[0], (uint32_t)axis, (uint32_t)axis, &outer, &red, &inner);
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    return cuda_finish(
        device, launch,
        cuda__softmax_grad(outer, red, inner, strcmp(node->op, "LogSoftmaxGrad") == 0, a[0].ptr,
                           a[1].ptr, a[2].ptr, cuda_stream_of(device, launch)));
}

/* MatMulGrad for A [..., M, K] (leading dims merged) and B [K, N]: refuses other forms. */
static int32_t cuda_matmul_grad_supports(ses_drv_device_t *device, const ses_drv_node_t *node) {
    int32_t st;
    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if ((st = cuda_check_node(device, node, 3, 3, 1)) != SES_DRV_OK)
        return st;
    const ses_drv_tensor_desc_t *dy = cuda_desc_at(node->inputs, 0),
                                *a = cuda_desc_at(node->inputs, 1),
                                *b = cuda_desc_at(node->inputs, 2);
    if (a->rank < 2 || b->rank != 2 || dy->rank != a->rank)
        return cuda_node_fail(device, node, SES_DRV_UNIMPLEMENTED,
                              "cuda runs MatMulGrad of A with rank >= 2 and B with rank 2 only");
    return SES_DRV_OK;
}

static int32_t cuda_matmul_grad(ses_drv_device_t *device, void *state,
                                const ses_drv_launch_t *launch) {
    cuda_arg_t a[4];
    int64_t which = 0;
    int32_t st;

    (void)state;
    if ((st = cuda_check_launch(device, launch, 3, 3, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = cuda_matmul_grad_supports(device, node)) != SES_DRV_OK ||
        (st = cuda_dtypes_agree(device, node, a, 4)) != SES_DRV_OK)
        return st;
    if (cuda_attr_int(node, "input", 0, &which) != SES_DRV_OK || (which != 0 && which != 1))
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "input must be 0 or 1");
    const cuda_arg_t *dy = &a[0], *A = &a[1], *B = &a[2], *out = &a[3];
    const int64_t k = A->dims[A->rank - 1], n = B->dims[1];
    const int64_t m = k > 0 ? A->count / k : (n > 0 ? dy->count / n : 0);
    if (B->dims[0] != k || dy->dims[dy->rank - 1] != n || dy->count != m * n ||
        !cuda_same_shape(out, which == 0 ? A : B))
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "dy, A, B and the output's shapes disagree");
    if (out->count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    if ((which == 0 ? n : m) == 0)
        return cuda_finish(
            device, launch,
            (int)cudaMemsetAsync(out->ptr, 0, (size_t)out->count * cuda_dtype_size(out->dtype),
                                 (cudaStream_t)cuda_stream_of(device, launch)));
    /* dA = dy B^T ([M,N]·[N,K]); dB = A^T dy ([K,M]·[M,N]). */
    if (which == 0)
        return cuda_gemm(device, launch, out->dtype, 0, 1, m, k, n, 1.0f, dy->ptr, B->ptr, 0.0f,
                         out->ptr);
    return cuda_gemm(device, launch, out->dtype, 1, 0, k, n, m, 1.0f, A->ptr, dy->ptr, 0.0f,
                     out->ptr);
}

/* ---------------------------------------------------------------------------------------------
 * SoftmaxCrossEntropyLoss and its gradient: scores or log_prob [N, C, d...] f32, labels i32 or
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
    int ok = x->rank >= 2 && x->dtype == SES_DRV_DTYPE_F32 && out0->dtype == SES_DRV_DTYPE_F32 &&
             (labels->dtype == SES_DRV_DTYPE_I64 || labels->dtype == SES_DRV_DTYPE_I32) &&
             labels->rank + 1 == x->rank;
    for (uint32_t d = 0; ok && d < labels->rank; d++)
        ok = labels->dims[d] == x->dims[d == 0 ? 0 : d + 1];
    if (ok && weights)
        ok = weights->dtype == SES_DRV_DTYPE_F32 && weights->rank == 1 &&
             weights->dims[0] == x->dims[1];
    const cuda_arg_t *per_pos = grad ? dloss : out0; /* the loss's shape */
    if (ok)
        ok = per_pos->dtype == SES_DRV_DTYPE_F32 &&
             (reduction == 2 ? cuda_same_shape(per_pos, labels) : per_pos->rank == 0);
    if (ok && grad)
        ok = cuda_same_shape(out0, x);
    if (ok && log_prob)
        ok = log_prob->dtype == SES_DRV_DTYPE_F32 && cuda_same_shape(log_prob, x);
    if (!ok)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "dtypes or shapes disagree: %s must be f32 [N, C, d...], labels "
                              "i32/i64 [N, d...], weights f32 [C], the loss a scalar (or [N, "
                              "d...] for reduction none)",
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
        e = (cudaError_t)(grad ? cuda__sce_grad(positions, classes, inner, dloss->ptr, x->ptr,
                                                labels->ptr, l64, weights ? weights->ptr : NULL,
                                                (int)has_ignore, ignore_index, (int)reduction,
                                                out0->ptr, device->bad_dev, s)
                               : cuda__sce_loss(positions, classes, inner, x->ptr, labels->ptr, l64,
                                                weights ? weights->ptr : NULL, (int)has_ignore,
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
        return a[0].count == 0
                   ? SES_DRV_OK
                   : cuda_finish(device, launch,
                                 cuda__sgd(a[0].count, a[0].ptr, a[1].ptr, a[2].ptr, s));
    if (mom) {
        float momentum = 0.9f;
        int64_t nesterov = 0;
        if (cuda_attr_float(node, "momentum", 0.9f, &momentum) != SES_DRV_OK ||
            cuda_attr_int(node, "nesterov", 0, &nesterov) != SES_DRV_OK)
            return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                  "an attribute has the wrong type");
        return a[0].count == 0
                   ? SES_DRV_OK
                   : cuda_finish(device, launch,
                                 cuda__momentum(a[0].count, a[0].ptr, a[1].ptr, a[2].ptr, a[3].ptr,
                                                momentum, nesterov != 0, s));
    }
    float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
    if (cuda_attr_float(node, "beta1", 0.9f, &b1) != SES_DRV_OK ||
        cuda_attr_float(node, "beta2", 0.999f, &b2) != SES_DRV_OK ||
        cuda_attr_float(node, "epsilon", 1e-8f, &eps) != SES_DRV_OK)
        return cuda_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "an attribute has the wrong type");
    return cuda_finish(device, launch,
                       cuda__adam(a[0].count, a[0].ptr, a[1].ptr, a[2].ptr, a[3].ptr, a[4].ptr,
                                  a[5].ptr, b1, b2, eps, s));
}

/* ---------------------------------------------------------------------------------------------
 * The table.
 * ------------------------------------------------------------------------------------------- */

#define K(o, sig, fn, sup)                                                                     \
    {                                                                                          \
        .struct_size = sizeof(ses_drv_kernel_t), .op = (o), .signature = (sig), .priority = 0, \
        .supports_node = (sup), .compute = (fn)                                                \
    }
#define K3(o, n, fn, sup)                                    \
    K(o, n == 2 ? "f32,f32->f32" : "f32->f32", fn, sup),     \
        K(o, n == 2 ? "f16,f16->f16" : "f16->f16", fn, sup), \
        K(o, n == 2 ? "bf16,bf16->bf16" : "bf16->bf16", fn, sup)
#define KCOPY(o)                                              \
    K(o, "f32->f32", cuda_copy_op, cuda_rank_supports),       \
        K(o, "f16->f16", cuda_copy_op, cuda_rank_supports),   \
        K(o, "bf16->bf16", cuda_copy_op, cuda_rank_supports), \
        K(o, "i32->i32", cuda_copy_op, cuda_rank_supports),   \
        K(o, "i64->i64", cuda_copy_op, cuda_rank_supports),   \
        K(o, "u8->u8", cuda_copy_op, cuda_rank_supports),     \
        K(o, "bool->bool", cuda_copy_op, cuda_rank_supports)

static const ses_drv_kernel_t cuda_kernels[] = {
    K3("Add", 2, cuda_binary, cuda_rank_supports),
    K3("Sub", 2, cuda_binary, cuda_rank_supports),
    K3("Mul", 2, cuda_binary, cuda_rank_supports),
    K3("Div", 2, cuda_binary, cuda_rank_supports),
    K3("Pow", 2, cuda_binary, cuda_rank_supports),
    K3("Neg", 1, cuda_unary, cuda_rank_supports),
    K3("Abs", 1, cuda_unary, cuda_rank_supports),
    K3("Relu", 1, cuda_unary, cuda_rank_supports),
    K3("Exp", 1, cuda_unary, cuda_rank_supports),
    K3("Log", 1, cuda_unary, cuda_rank_supports),
    K3("Sqrt", 1, cuda_unary, cuda_rank_supports),
    K3("Reciprocal", 1, cuda_unary, cuda_rank_supports),
    K3("Sigmoid", 1, cuda_unary, cuda_rank_supports),
    K3("Tanh", 1, cuda_unary, cuda_rank_supports),
    K3("LeakyRelu", 1, cuda_unary, cuda_rank_supports),
    K("ReluGrad", "f32,f32->f32", cuda_binary, cuda_rank_supports),
    K("LeakyReluGrad", "f32,f32->f32", cuda_binary, cuda_rank_supports),
    K("SigmoidGrad", "f32,f32->f32", cuda_binary, cuda_rank_supports),
    K("TanhGrad", "f32,f32->f32", cuda_binary, cuda_rank_supports),
    KCOPY("Identity"),
    KCOPY("Reshape"),
    KCOPY("Flatten"),
    KCOPY("Squeeze"),
    KCOPY("Unsqueeze"),
    K3("MatMul", 2, cuda_matmul, cuda_matmul_supports),
    K3("Gemm", 2, cuda_gemm_op, cuda_rank_supports),
    K("Gemm", "f32,f32,f32->f32", cuda_gemm_op, cuda_rank_supports),
    K("Gemm", "f16,f16,f16->f16", cuda_gemm_op, cuda_rank_supports),
    K("Gemm", "bf16,bf16,bf16->bf16", cuda_gemm_op, cuda_rank_supports),
    K("ReduceSum", "f32->f32", cuda_reduce, cuda_reduce_supports),
    K("ReduceMean", "f32->f32", cuda_reduce, cuda_reduce_supports),
    K("ReduceMax", "f32->f32", cuda_reduce, cuda_reduce_supports),
    K("Softmax", "f32->f32", cuda_softmax, cuda_rank_supports),
    K("LogSoftmax", "f32->f32", cuda_softmax, cuda_rank_supports),
    K3("ExpandLike", 1, cuda_expand_like, cuda_rank_supports),
    K3("ReduceGrad", 1, cuda_reduce_grad, cuda_rank_supports),
    K3("ScalarLike", 1, cuda_scalar_like, cuda_rank_supports),
    K("ReduceSumLike", "f32->f32", cuda_reduce_sum_like, cuda_rank_supports),
    K("SoftmaxGrad", "f32,f32->f32", cuda_softmax_grad, cuda_rank_supports),
    K("LogSoftmaxGrad", "f32,f32->f32", cuda_softmax_grad, cuda_rank_supports),
    K("MatMulGrad", "f32,f32,f32->f32", cuda_matmul_grad, cuda_matmul_grad_supports),
    K("MatMulGrad", "f16,f16,f16->f16", cuda_matmul_grad, cuda_matmul_grad_supports),
    K("MatMulGrad", "bf16,bf16,bf16->bf16", cuda_matmul_grad, cuda_matmul_grad_supports),
    K("SoftmaxCrossEntropyLoss", "f32,i64->f32", cuda_sce, cuda_rank_supports),
    K("SoftmaxCrossEntropyLoss", "f32,i64->f32,f32", cuda_sce, cuda_rank_supports),
    K("SoftmaxCrossEntropyLoss", "f32,i64,f32->f32", cuda_sce, cuda_rank_supports),
    K("SoftmaxCrossEntropyLoss", "f32,i64,f32->f32,f32", cuda_sce, cuda_rank_supports),
    K("SoftmaxCrossEntropyLoss", "f32,i32->f32", cuda_sce, cuda_rank_supports),
    K("SoftmaxCrossEntropyLoss", "f32,i32->f32,f32", cuda_sce, cuda_rank_supports),
    K("SoftmaxCrossEntropyLoss", "f32,i32,f32->f32", cuda_sce, cuda_rank_supports),
    K("SoftmaxCrossEntropyLoss", "f32,i32,f32->f32,f32", cuda_sce, cuda_rank_supports),
    K("SoftmaxCrossEntropyLossGrad", "f32,f32,i64->f32", cuda_sce, cuda_rank_supports),
    K("SoftmaxCrossEntropyLossGrad", "f32,f32,i64,f32->f32", cuda_sce, cuda_rank_supports),
    K("SoftmaxCrossEntropyLossGrad", "f32,f32,i32->f32", cuda_sce, cuda_rank_supports),
    K("SoftmaxCrossEntropyLossGrad", "f32,f32,i32,f32->f32", cuda_sce, cuda_rank_supports),
    K("SGD", "f32,f32,f32->", cuda_optimizer, cuda_rank_supports),
    K("Momentum", "f32,f32,f32,f32->", cuda_optimizer, cuda_rank_supports),
    K("Adam", "f32,f32,f32,f32,f32,f32->", cuda_optimizer, cuda_rank_supports),
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
