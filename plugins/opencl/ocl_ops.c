/*
 * The OpenCL driver's kernel table and launches. Each compute entry checks its launch (counts,
 * dtypes, byte ranges, offsets aligned to the element size, no partial overlap of an output
 * with an input) before it enqueues anything, then runs one of the program's kernels
 * (ocl_kernels.cl) or CLBlast on the device's queue and waits for it: with no streams, work is
 * complete when compute returns.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clblast_c.h>

#include "ocl_internal.h"

/* ---------------------------------------------------------------------------------------------
 * Launch checks
 * ------------------------------------------------------------------------------------------- */

/* One checked argument: its buffer, element offset, element count and shape. */
typedef struct ocl_arg {
    ses_drv_buffer_t *buf;
    uint64_t byte_off;
    uint64_t off;   /* in elements */
    uint64_t count; /* elements */
    uint64_t bytes;
    uint32_t dtype;
    uint32_t esize;
    uint32_t rank;
    const int64_t *dims;
} ocl_arg_t;

/* Mirrors bc_t in ocl_kernels.cl. */
typedef struct ocl_bcast {
    cl_long dims[OCL_MAX_RANK];
    cl_long st[3][OCL_MAX_RANK];
    cl_int rank;
    cl_int contig;
} ocl_bcast_t;

/* Mirrors rd_t in ocl_kernels.cl. */
typedef struct ocl_reduce {
    cl_long odims[OCL_MAX_RANK];
    cl_long ost[OCL_MAX_RANK];
    cl_long rdims[OCL_MAX_RANK];
    cl_long rst[OCL_MAX_RANK];
    cl_int orank;
    cl_int rrank;
} ocl_reduce_t;

#define OCL_MAX_ARGS 72 /* Concat takes up to 64 inputs */

static uint32_t ocl_esize(uint32_t dtype) {
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

static const ses_drv_tensor_desc_t *ocl_desc_at(const ses_drv_tensor_desc_t *base, uint32_t i) {
    return (const ses_drv_tensor_desc_t *)(const void *)((const unsigned char *)base +
                                                         (size_t)i * base->struct_size);
}

static const char *ocl_dims_str(const int64_t *dims, uint32_t rank, char *buf, size_t size) {
    size_t used = 1;
    uint32_t d = 0;

    buf[0] = '[';
    for (; d < rank && used + 26 <= size; d++)
        used += (size_t)snprintf(buf + used, size - used, "%s%" PRId64, d ? "," : "", dims[d]);
    snprintf(buf + used, size - used, "%s]", d < rank ? "..." : "");
    return buf;
}

static int32_t ocl_node_fail(ses_drv_device_t *device, const ses_drv_node_t *node, int32_t code,
                             const char *format, ...) OCL_PRINTF(4, 5);

static int32_t ocl_node_fail(ses_drv_device_t *device, const ses_drv_node_t *node, int32_t code,
                             const char *format, ...) {
    char message[768];
    va_list ap;

    va_start(ap, format);
    vsnprintf(message, sizeof message, format, ap);
    va_end(ap);
    return OCL_DEVICE_FAIL(device, code, "%s \"%s\": %s", node && node->op ? node->op : "?",
                           node && node->name ? node->name : "(unnamed)", message);
}

static int32_t ocl_check_tensor(ses_drv_device_t *device, const ses_drv_node_t *node,
                                const char *role, uint32_t index, const ses_drv_tensor_desc_t *t,
                                ses_drv_buffer_t *buffer, uint64_t offset, ocl_arg_t *out) {
    uint64_t count = 1;
    uint32_t esize = ocl_esize(t->dtype);

    if (!esize)
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                             "%s %" PRIu32 " has unknown dtype %" PRIu32, role, index, t->dtype);
    if (t->rank > OCL_MAX_RANK)
        return ocl_node_fail(device, node, SES_DRV_UNIMPLEMENTED,
                             "%s %" PRIu32 " has rank %" PRIu32 "; " OCL_NAME
                             " supports up to rank %d",
                             role, index, t->rank, OCL_MAX_RANK);
    if (t->rank > 0 && !t->dims)
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                             "%s %" PRIu32 " has rank %" PRIu32 " but no dims", role, index,
                             t->rank);
    for (uint32_t d = 0; d < t->rank; d++) {
        if (t->dims[d] < 0)
            return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                 "%s %" PRIu32 " dim %" PRIu32 " is %" PRId64, role, index, d,
                                 t->dims[d]);
        if (t->dims[d] != 0 && count > (UINT64_MAX / 8) / (uint64_t)t->dims[d])
            return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                 "%s %" PRIu32 " has too many elements", role, index);
        count *= (uint64_t)t->dims[d];
    }
    uint64_t bytes = count * esize;
    if (!buffer)
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                             "%s %" PRIu32 " buffer is NULL", role, index);
    if (offset > buffer->size || bytes > buffer->size - offset)
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                             "%s %" PRIu32 ": %" PRIu64 " bytes at offset %" PRIu64
                             " end past its buffer's %" PRIu64 " bytes",
                             role, index, bytes, offset, buffer->size);
    if (offset % esize != 0)
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                             "%s %" PRIu32 " at offset %" PRIu64
                             " is not aligned to its %" PRIu32 "-byte elements",
                             role, index, offset, esize);
    out->buf = buffer;
    out->byte_off = offset;
    out->off = offset / esize;
    out->count = count;
    out->bytes = bytes;
    out->dtype = t->dtype;
    out->esize = esize;
    out->rank = t->rank;
    out->dims = t->dims;
    return SES_DRV_OK;
}

/*
 * Checks a launch and fills @p in and @p out. @p exact_ok: an output may be exactly an input's
 * bytes (elementwise kernels read element i before writing it); otherwise no overlap at all.
 */
static int32_t ocl_prepare(ses_drv_device_t *device, const ses_drv_launch_t *launch,
                           int exact_ok, ocl_arg_t *in, ocl_arg_t *out) {
    const size_t desc_min = SES_DRV_SIZEOF_1_0(ses_drv_tensor_desc_t, dims);
    int32_t st;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!launch || launch->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_launch_t, output_offsets))
        return OCL_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                               "compute: the launch is NULL or older than ABI 1.0");
    const ses_drv_node_t *node = launch->node;
    if (!node || node->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_node_t, attr_ctx) || !node->op)
        return OCL_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                               "compute: the node is NULL or older than ABI 1.0");
    if (launch->stream)
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                             "got a stream, but " OCL_NAME " has no streams; pass NULL");
    if (node->n_inputs > OCL_MAX_ARGS - 2 || node->n_outputs > 2)
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                             "has %" PRIu32 " inputs and %" PRIu32 " outputs, more than " OCL_NAME
                             " takes",
                             node->n_inputs, node->n_outputs);
    if ((node->n_inputs && (!node->inputs || !launch->inputs || !launch->input_offsets)) ||
        (node->n_outputs && (!node->outputs || !launch->outputs || !launch->output_offsets)))
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                             "the launch lacks its descriptor, buffer or offset arrays");
    if ((node->n_inputs && node->inputs->struct_size < desc_min) ||
        (node->n_outputs && node->outputs->struct_size < desc_min))
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                             "a tensor descriptor is older than ABI 1.0");
    for (uint32_t i = 0; i < node->n_inputs; i++)
        if ((st = ocl_check_tensor(device, node, "input", i, ocl_desc_at(node->inputs, i),
                                   launch->inputs[i], launch->input_offsets[i], &in[i])) !=
            SES_DRV_OK)
            return st;
    for (uint32_t o = 0; o < node->n_outputs; o++) {
        if ((st = ocl_check_tensor(device, node, "output", o, ocl_desc_at(node->outputs, o),
                                   launch->outputs[o], launch->output_offsets[o], &out[o])) !=
            SES_DRV_OK)
            return st;
        const ocl_arg_t *y = &out[o];
        for (uint32_t i = 0; i < node->n_inputs && y->bytes; i++) {
            const ocl_arg_t *x = &in[i];
            if (x->buf != y->buf || !x->bytes)
                continue;
            int overlap = x->byte_off < y->byte_off + y->bytes && y->byte_off < x->byte_off + x->bytes;
            int exact = x->byte_off == y->byte_off && x->bytes == y->bytes;
            if (overlap && !(exact_ok && exact))
                return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                     "output %" PRIu32 " overlaps input %" PRIu32
                                     "%s",
                                     o, i, exact_ok ? "; it may only be exactly an input's bytes" : "");
        }
    }
    return SES_DRV_OK;
}

static int32_t ocl_attr_int(const ses_drv_node_t *node, const char *name, int64_t *out) {
    uint64_t n = 1;
    return node->attr ? node->attr(node, name, SES_DRV_ATTR_INT, &n, out) : SES_DRV_NOT_FOUND;
}

static int32_t ocl_attr_float(const ses_drv_node_t *node, const char *name, double *out) {
    uint64_t n = 1;
    return node->attr ? node->attr(node, name, SES_DRV_ATTR_FLOAT, &n, out) : SES_DRV_NOT_FOUND;
}

/* Reads an INTS attribute of at most OCL_MAX_RANK entries. */
static int32_t ocl_attr_ints(ses_drv_device_t *device, const ses_drv_node_t *node,
                             const char *name, int64_t *out, uint32_t *out_count) {
    uint64_t n = 0;
    int32_t st;

    if (!node->attr)
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "has no attribute reader");
    if ((st = node->attr(node, name, SES_DRV_ATTR_INTS, &n, NULL)) != SES_DRV_OK)
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                             "attribute %s is missing or not INTS", name);
    if (n > OCL_MAX_RANK)
        return ocl_node_fail(device, node, SES_DRV_UNIMPLEMENTED,
                             "attribute %s has %" PRIu64 " entries, more than %d", name, n,
                             OCL_MAX_RANK);
    if (n && (st = node->attr(node, name, SES_DRV_ATTR_INTS, &n, out)) != SES_DRV_OK)
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                             "attribute %s cannot be read", name);
    *out_count = (uint32_t)n;
    return SES_DRV_OK;
}

static int32_t ocl_need_attr(ses_drv_device_t *device, const ses_drv_node_t *node,
                             const char *name, int32_t st) {
    if (st == SES_DRV_OK)
        return SES_DRV_OK;
    return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                         "attribute %s is missing or has another type", name);
}

static int ocl_same_shape(const ocl_arg_t *a, const ocl_arg_t *b) {
    if (a->rank != b->rank)
        return 0;
    for (uint32_t d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d])
            return 0;
    return 1;
}

static int32_t ocl_shape_fail(ses_drv_device_t *device, const ses_drv_node_t *node,
                              const char *what, const ocl_arg_t *a, const ocl_arg_t *b) {
    char x[128], y[128];
    return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "%s: %s vs %s", what,
                         ocl_dims_str(a->dims, a->rank, x, sizeof x),
                         ocl_dims_str(b->dims, b->rank, y, sizeof y));
}

/* Contiguous element strides of @p dims into @p st. */
static void ocl_strides(const int64_t *dims, uint32_t rank, cl_long *st) {
    cl_long s = 1;
    for (uint32_t d = rank; d-- > 0;) {
        st[d] = s;
        s *= dims[d];
    }
}

/* Broadcast strides of operand @p x towards @p out in bc->st[k]; 0 when it does not broadcast. */
static int ocl_bcast_operand(ocl_bcast_t *bc, int k, const ocl_arg_t *x, const ocl_arg_t *out) {
    cl_long step = 1;

    if (x->rank > out->rank)
        return 0;
    for (uint32_t d = out->rank; d-- > 0;) {
        uint32_t lead = out->rank - x->rank;
        int64_t dim = d < lead ? 1 : x->dims[d - lead];
        if (dim != 1 && dim != out->dims[d])
            return 0;
        bc->st[k][d] = dim == 1 ? 0 : step;
        step *= dim;
    }
    return 1;
}

static void ocl_bcast_init(ocl_bcast_t *bc, const ocl_arg_t *out) {
    memset(bc, 0, sizeof *bc);
    bc->rank = (cl_int)out->rank;
    for (uint32_t d = 0; d < out->rank; d++)
        bc->dims[d] = out->dims[d];
}

/* ---------------------------------------------------------------------------------------------
 * Running a kernel
 * ------------------------------------------------------------------------------------------- */

typedef struct ocl_args {
    cl_uint n;
    size_t size[24];
    const void *ptr[24];
} ocl_args_t;

#define OCL_ARG(a, v) ((a)->size[(a)->n] = sizeof(v), (a)->ptr[(a)->n++] = &(v))

/* Sets the arguments of kernel @p k, runs it over @p n elements and waits. */
static int32_t ocl_run(ses_drv_device_t *device, const ses_drv_node_t *node, int k, uint64_t n,
                       const ocl_args_t *args) {
    cl_kernel kernel = device->kernels[k];
    cl_int err = CL_SUCCESS;
    cl_uint i;

    if (n == 0)
        return SES_DRV_OK;
    size_t global = n < (UINT64_C(1) << 20) ? (size_t)n : (size_t)1 << 20;
    pthread_mutex_lock(&device->lock);
    for (i = 0; i < args->n && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kernel, i, args->size[i], args->ptr[i]);
    if (err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(device->queue, kernel, 1, NULL, &global, NULL, 0, NULL,
                                     NULL);
    if (err == CL_SUCCESS)
        err = clFinish(device->queue);
    pthread_mutex_unlock(&device->lock);
    if (err != CL_SUCCESS)
        return ocl_node_fail(device, node, SES_DRV_INTERNAL, "running its kernel failed: %s",
                             ocl__error_name(err));
    return SES_DRV_OK;
}

static int32_t ocl_fill_zero(ses_drv_device_t *device, const ses_drv_node_t *node,
                             const ocl_arg_t *y) {
    cl_uchar zero = 0;
    cl_int err;

    if (!y->bytes)
        return SES_DRV_OK;
    pthread_mutex_lock(&device->lock);
    err = clEnqueueFillBuffer(device->queue, y->buf->mem, &zero, 1, (size_t)y->byte_off,
                              (size_t)y->bytes, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clFinish(device->queue);
    pthread_mutex_unlock(&device->lock);
    if (err != CL_SUCCESS)
        return ocl_node_fail(device, node, SES_DRV_INTERNAL, "clEnqueueFillBuffer failed: %s",
                             ocl__error_name(err));
    return SES_DRV_OK;
}

/* Strided copy of elements of @p esize bytes: input x at element offset xo with strides st[0],
 * output y at yo with strides st[1], over bc's dims. */
static int32_t ocl_strided(ses_drv_device_t *device, const ses_drv_node_t *node, uint32_t esize,
                           cl_mem x, cl_long xo, cl_mem y, cl_long yo, uint64_t n,
                           const ocl_bcast_t *bc) {
    ocl_args_t a = {0};
    cl_ulong nn = n;
    int k = esize == 1 ? OCL_K_STRIDED1
            : esize == 2 ? OCL_K_STRIDED2
            : esize == 4 ? OCL_K_STRIDED4
                         : OCL_K_STRIDED8;
    OCL_ARG(&a, x);
    OCL_ARG(&a, xo);
    OCL_ARG(&a, y);
    OCL_ARG(&a, yo);
    OCL_ARG(&a, nn);
    OCL_ARG(&a, *bc);
    return ocl_run(device, node, k, n, &a);
}

/* ---------------------------------------------------------------------------------------------
 * Elementwise
 * ------------------------------------------------------------------------------------------- */

static int ocl_unary_code(const char *op) {
    static const char *const ops[] = {"Neg",     "Abs",  "Relu",     "Exp", "Log",
                                      "Sqrt",    "Reciprocal", "Sigmoid", "Tanh", "Softplus",
                                      "Erf",     "LeakyRelu"};
    for (int i = 0; i < (int)(sizeof ops / sizeof ops[0]); i++)
        if (!strcmp(op, ops[i]))
            return i;
    return -1;
}

static int32_t ocl_unary_f32(ses_drv_device_t *device, const ses_drv_node_t *node,
                             const ocl_arg_t *x, const ocl_arg_t *y, int op, float alpha) {
    ocl_bcast_t bc;
    ocl_args_t a = {0};
    cl_ulong xo = x->off, yo = y->off, n = y->count;
    cl_int cop = op;

    ocl_bcast_init(&bc, y);
    if (!ocl_bcast_operand(&bc, 0, x, y))
        return ocl_shape_fail(device, node, "input 0 does not broadcast to the output", x, y);
    bc.contig = x->count == y->count;
    OCL_ARG(&a, x->buf->mem);
    OCL_ARG(&a, xo);
    OCL_ARG(&a, y->buf->mem);
    OCL_ARG(&a, yo);
    OCL_ARG(&a, n);
    OCL_ARG(&a, bc);
    OCL_ARG(&a, cop);
    OCL_ARG(&a, alpha);
    return ocl_run(device, node, OCL_K_UNARY, n, &a);
}

static int32_t ocl_k_unary(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[1], out[1];
    double alpha = 0.0;
    int32_t st;

    (void)state;
    if ((st = ocl_prepare(device, launch, 1, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    int op = ocl_unary_code(node->op);
    if (op < 0 || node->n_inputs != 1 || node->n_outputs != 1)
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "is not a unary f32 op");
    if (!ocl_same_shape(&in[0], &out[0]))
        return ocl_shape_fail(device, node, "shapes differ", &in[0], &out[0]);
    if (op == 11 && (st = ocl_need_attr(device, node, "alpha",
                                        ocl_attr_float(node, "alpha", &alpha))) != SES_DRV_OK)
        return st;
    return ocl_unary_f32(device, node, &in[0], &out[0], op, (float)alpha);
}

static int ocl_binary_code(const char *op) {
    static const char *const ops[] = {"Add",      "Sub",         "Mul",      "Div",
                                      "Pow",      "ReluGrad",    "SigmoidGrad", "TanhGrad",
                                      "LeakyReluGrad"};
    for (int i = 0; i < (int)(sizeof ops / sizeof ops[0]); i++)
        if (!strcmp(op, ops[i]))
            return i;
    return -1;
}

/* Fills bc for a broadcasting op of @p n inputs; fails naming the shapes. */
static int32_t ocl_bcast_all(ses_drv_device_t *device, const ses_drv_node_t *node,
                             const ocl_arg_t *in, uint32_t n, const ocl_arg_t *y,
                             ocl_bcast_t *bc) {
    ocl_bcast_init(bc, y);
    bc->contig = 1;
    for (uint32_t k = 0; k < n; k++) {
        if (!ocl_bcast_operand(bc, (int)k, &in[k], y))
            return ocl_shape_fail(device, node, "an input does not broadcast to the output",
                                  &in[k], y);
        bc->contig = bc->contig && ocl_same_shape(&in[k], y);
    }
    return SES_DRV_OK;
}

static int32_t ocl_k_binary(ses_drv_device_t *device, void *state,
                            const ses_drv_launch_t *launch) {
    ocl_arg_t in[2], out[1];
    ocl_bcast_t bc;
    ocl_args_t a = {0};
    double alpha = 0.0;
    int32_t st;

    (void)state;
    if ((st = ocl_prepare(device, launch, 1, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    int op = ocl_binary_code(node->op);
    if (op < 0 || node->n_inputs != 2 || node->n_outputs != 1)
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "is not a binary f32 op");
    if ((st = ocl_bcast_all(device, node, in, 2, &out[0], &bc)) != SES_DRV_OK)
        return st;
    if (op == 8 && (st = ocl_need_attr(device, node, "alpha",
                                       ocl_attr_float(node, "alpha", &alpha))) != SES_DRV_OK)
        return st;
    cl_ulong ao = in[0].off, bo = in[1].off, yo = out[0].off, n = out[0].count;
    cl_int cop = op;
    float fa = (float)alpha;
    OCL_ARG(&a, in[0].buf->mem);
    OCL_ARG(&a, ao);
    OCL_ARG(&a, in[1].buf->mem);
    OCL_ARG(&a, bo);
    OCL_ARG(&a, out[0].buf->mem);
    OCL_ARG(&a, yo);
    OCL_ARG(&a, n);
    OCL_ARG(&a, bc);
    OCL_ARG(&a, cop);
    OCL_ARG(&a, fa);
    return ocl_run(device, node, OCL_K_BINARY, n, &a);
}

static int32_t ocl_k_compare(ses_drv_device_t *device, void *state,
                             const ses_drv_launch_t *launch) {
    ocl_arg_t in[2], out[1];
    ocl_bcast_t bc;
    ocl_args_t a = {0};
    int32_t st;

    (void)state;
    if ((st = ocl_prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    cl_int cop = !strcmp(node->op, "Equal") ? 0 : !strcmp(node->op, "Greater") ? 1 : 2;
    if (node->n_inputs != 2 || node->n_outputs != 1)
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "is not a comparison");
    if ((st = ocl_bcast_all(device, node, in, 2, &out[0], &bc)) != SES_DRV_OK)
        return st;
    cl_ulong ao = in[0].off, bo = in[1].off, yo = out[0].off, n = out[0].count;
    OCL_ARG(&a, in[0].buf->mem);
    OCL_ARG(&a, ao);
    OCL_ARG(&a, in[1].buf->mem);
    OCL_ARG(&a, bo);
    OCL_ARG(&a, out[0].buf->mem);
    OCL_ARG(&a, yo);
    OCL_ARG(&a, n);
    OCL_ARG(&a, bc);
    OCL_ARG(&a, cop);
    return ocl_run(device, node, OCL_K_COMPARE, n, &a);
}

static int32_t ocl_k_where(ses_drv_device_t *device, void *state,
                           const ses_drv_launch_t *launch) {
    ocl_arg_t in[3], out[1];
    ocl_bcast_t bc;
    ocl_args_t a = {0};
    int32_t st;

    (void)state;
    if ((st = ocl_prepare(device, launch, 1, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if (node->n_inputs != 3 || node->n_outputs != 1 || in[0].esize != 1 ||
        in[1].esize != out[0].esize || in[2].esize != out[0].esize)
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "is not bool,T,T->T");
    if ((st = ocl_bcast_all(device, node, in, 3, &out[0], &bc)) != SES_DRV_OK)
        return st;
    uint32_t es = out[0].esize;
    int k = es == 1 ? OCL_K_WHERE1 : es == 4 ? OCL_K_WHERE4 : es == 8 ? OCL_K_WHERE8 : -1;
    if (k < 0)
        return ocl_node_fail(device, node, SES_DRV_UNIMPLEMENTED,
                             "Where of %" PRIu32 "-byte elements is not implemented", es);
    cl_ulong co = in[0].off, ao = in[1].off, bo = in[2].off, yo = out[0].off, n = out[0].count;
    OCL_ARG(&a, in[0].buf->mem);
    OCL_ARG(&a, co);
    OCL_ARG(&a, in[1].buf->mem);
    OCL_ARG(&a, ao);
    OCL_ARG(&a, in[2].buf->mem);
    OCL_ARG(&a, bo);
    OCL_ARG(&a, out[0].buf->mem);
    OCL_ARG(&a, yo);
    OCL_ARG(&a, n);
    OCL_ARG(&a, bc);
    return ocl_run(device, node, k, n, &a);
}

/* ---------------------------------------------------------------------------------------------
 * Copies and strided moves
 * ------------------------------------------------------------------------------------------- */

static int32_t ocl_k_copy(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[1], out[1];
    int32_t st;
    cl_int err;

    (void)state;
    if ((st = ocl_prepare(device, launch, 1, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if (node->n_inputs != 1 || node->n_outputs != 1 || in[0].bytes != out[0].bytes)
        return ocl_shape_fail(device, node, "element counts differ", &in[0], &out[0]);
    if (!out[0].bytes || (in[0].buf == out[0].buf && in[0].byte_off == out[0].byte_off))
        return SES_DRV_OK;
    pthread_mutex_lock(&device->lock);
    err = clEnqueueCopyBuffer(device->queue, in[0].buf->mem, out[0].buf->mem,
                              (size_t)in[0].byte_off, (size_t)out[0].byte_off,
                              (size_t)out[0].bytes, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clFinish(device->queue);
    pthread_mutex_unlock(&device->lock);
    if (err != CL_SUCCESS)
        return ocl_node_fail(device, node, SES_DRV_INTERNAL, "clEnqueueCopyBuffer failed: %s",
                             ocl__error_name(err));
    return SES_DRV_OK;
}

static int32_t ocl_k_transpose(ses_drv_device_t *device, void *state,
                               const ses_drv_launch_t *launch) {
    ocl_arg_t in[1], out[1];
    int64_t perm[OCL_MAX_RANK];
    cl_long ist[OCL_MAX_RANK];
    uint32_t np = 0;
    ocl_bcast_t bc;
    int32_t st;

    (void)state;
    if ((st = ocl_prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = ocl_attr_ints(device, node, "perm", perm, &np)) != SES_DRV_OK)
        return st;
    if (np != in[0].rank || out[0].rank != in[0].rank)
        return ocl_shape_fail(device, node, "perm does not fit the ranks", &in[0], &out[0]);
    ocl_strides(in[0].dims, in[0].rank, ist);
    ocl_bcast_init(&bc, &out[0]);
    ocl_strides(out[0].dims, out[0].rank, bc.st[1]);
    for (uint32_t d = 0; d < np; d++) {
        if (perm[d] < 0 || perm[d] >= (int64_t)np || in[0].dims[perm[d]] != out[0].dims[d])
            return ocl_shape_fail(device, node, "perm does not map input to output dims",
                                  &in[0], &out[0]);
        bc.st[0][d] = ist[perm[d]];
    }
    return ocl_strided(device, node, out[0].esize, in[0].buf->mem, (cl_long)in[0].off,
                       out[0].buf->mem, (cl_long)out[0].off, out[0].count, &bc);
}

static int32_t ocl_k_slice(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[1], out[1];
    int64_t starts[OCL_MAX_RANK], steps[OCL_MAX_RANK];
    cl_long ist[OCL_MAX_RANK];
    uint32_t ns = 0, nt = 0;
    ocl_bcast_t bc;
    int32_t st;

    (void)state;
    if ((st = ocl_prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = ocl_attr_ints(device, node, "starts", starts, &ns)) != SES_DRV_OK ||
        (st = ocl_attr_ints(device, node, "steps", steps, &nt)) != SES_DRV_OK)
        return st;
    if (ns != in[0].rank || nt != in[0].rank || out[0].rank != in[0].rank)
        return ocl_shape_fail(device, node, "starts/steps do not fit the ranks", &in[0], &out[0]);
    if (!out[0].count)
        return SES_DRV_OK;
    ocl_strides(in[0].dims, in[0].rank, ist);
    ocl_bcast_init(&bc, &out[0]);
    ocl_strides(out[0].dims, out[0].rank, bc.st[1]);
    cl_long base = (cl_long)in[0].off;
    for (uint32_t d = 0; d < ns; d++) {
        int64_t last = starts[d] + (out[0].dims[d] - 1) * steps[d];
        if (steps[d] == 0 || starts[d] < 0 || starts[d] >= in[0].dims[d] || last < 0 ||
            last >= in[0].dims[d])
            return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                 "axis %" PRIu32 ": start %" PRId64 " step %" PRId64
                                 " for %" PRId64 " elements leaves the input's %" PRId64,
                                 d, starts[d], steps[d], out[0].dims[d], in[0].dims[d]);
        base += starts[d] * ist[d];
        bc.st[0][d] = steps[d] * ist[d];
    }
    return ocl_strided(device, node, out[0].esize, in[0].buf->mem, base, out[0].buf->mem,
                       (cl_long)out[0].off, out[0].count, &bc);
}

static int32_t ocl_k_concat(ses_drv_device_t *device, void *state,
                            const ses_drv_launch_t *launch) {
    ocl_arg_t in[OCL_MAX_ARGS], out[1];
    int64_t axis = 0;
    int32_t st;

    (void)state;
    if ((st = ocl_prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = ocl_need_attr(device, node, "axis", ocl_attr_int(node, "axis", &axis))) !=
        SES_DRV_OK)
        return st;
    const ocl_arg_t *y = &out[0];
    if (axis < 0 || axis >= (int64_t)y->rank)
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                             "axis %" PRId64 " is outside rank %" PRIu32, axis, y->rank);
    int64_t at = 0;
    for (uint32_t k = 0; k < node->n_inputs; k++) {
        const ocl_arg_t *x = &in[k];
        int ok = x->rank == y->rank && x->esize == y->esize;
        for (uint32_t d = 0; ok && d < y->rank; d++)
            ok = d == (uint32_t)axis || x->dims[d] == y->dims[d];
        if (!ok || at + x->dims[axis] > y->dims[axis])
            return ocl_shape_fail(device, node, "an input does not fit the output", x, y);
        at += x->dims[axis];
    }
    if (at != y->dims[axis])
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                             "inputs add up to %" PRId64 " along axis %" PRId64
                             ", the output has %" PRId64,
                             at, axis, y->dims[axis]);
    cl_long yst[OCL_MAX_RANK];
    ocl_strides(y->dims, y->rank, yst);
    at = 0;
    for (uint32_t k = 0; k < node->n_inputs; k++) {
        const ocl_arg_t *x = &in[k];
        ocl_bcast_t bc;
        ocl_bcast_init(&bc, x);
        ocl_strides(x->dims, x->rank, bc.st[0]);
        memcpy(bc.st[1], yst, sizeof yst);
        if ((st = ocl_strided(device, node, y->esize, x->buf->mem, (cl_long)x->off, y->buf->mem,
                              (cl_long)y->off + at * yst[axis], x->count, &bc)) != SES_DRV_OK)
            return st;
        at += x->dims[axis];
    }
    return SES_DRV_OK;
}

static int32_t ocl_k_expand(ses_drv_device_t *device, void *state,
                            const ses_drv_launch_t *launch) {
    ocl_arg_t in[1], out[1];
    ocl_bcast_t bc;
    int32_t st;

    (void)state;
    if ((st = ocl_prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    ocl_bcast_init(&bc, &out[0]);
    if (!ocl_bcast_operand(&bc, 0, &in[0], &out[0]))
        return ocl_shape_fail(device, node, "input does not broadcast to the output", &in[0],
                              &out[0]);
    ocl_strides(out[0].dims, out[0].rank, bc.st[1]);
    return ocl_strided(device, node, out[0].esize, in[0].buf->mem, (cl_long)in[0].off,
                       out[0].buf->mem, (cl_long)out[0].off, out[0].count, &bc);
}

/* Cast between f32 and i32, i64, u8, bool. */
static int32_t ocl_k_cast(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    static const struct {
        uint32_t from, to;
        int kernel;
    } pairs[] = {
        {SES_DRV_DTYPE_F32, SES_DRV_DTYPE_I32, OCL_K_CAST_F32_I32},
        {SES_DRV_DTYPE_F32, SES_DRV_DTYPE_I64, OCL_K_CAST_F32_I64},
        {SES_DRV_DTYPE_F32, SES_DRV_DTYPE_U8, OCL_K_CAST_F32_U8},
        {SES_DRV_DTYPE_F32, SES_DRV_DTYPE_BOOL, OCL_K_CAST_F32_BOOL},
        {SES_DRV_DTYPE_I32, SES_DRV_DTYPE_F32, OCL_K_CAST_I32_F32},
        {SES_DRV_DTYPE_I64, SES_DRV_DTYPE_F32, OCL_K_CAST_I64_F32},
        {SES_DRV_DTYPE_U8, SES_DRV_DTYPE_F32, OCL_K_CAST_U8_F32},
        {SES_DRV_DTYPE_BOOL, SES_DRV_DTYPE_F32, OCL_K_CAST_BOOL_F32},
    };
    ocl_arg_t in[1], out[1];
    ocl_args_t a = {0};
    int32_t st;

    (void)state;
    if ((st = ocl_prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if (!ocl_same_shape(&in[0], &out[0]))
        return ocl_shape_fail(device, node, "shapes differ", &in[0], &out[0]);
    int k = -1;
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        if (pairs[i].from == in[0].dtype && pairs[i].to == out[0].dtype)
            k = pairs[i].kernel;
    if (k < 0)
        return ocl_node_fail(device, node, SES_DRV_UNIMPLEMENTED,
                             "Cast from dtype %" PRIu32 " to %" PRIu32 " is not implemented",
                             in[0].dtype, out[0].dtype);
    cl_ulong xo = in[0].off, yo = out[0].off, n = out[0].count;
    OCL_ARG(&a, in[0].buf->mem);
    OCL_ARG(&a, xo);
    OCL_ARG(&a, out[0].buf->mem);
    OCL_ARG(&a, yo);
    OCL_ARG(&a, n);
    return ocl_run(device, node, k, n, &a);
}

/* Gather: indices are read back and checked on the host (the host does not check them). */
static int32_t ocl_k_gather(ses_drv_device_t *device, void *state,
                            const ses_drv_launch_t *launch) {
    ocl_arg_t in[2], out[1];
    ocl_args_t a = {0};
    int64_t axis = 0;
    int32_t st;

    (void)state;
    if ((st = ocl_prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = ocl_need_attr(device, node, "axis", ocl_attr_int(node, "axis", &axis))) !=
        SES_DRV_OK)
        return st;
    const ocl_arg_t *x = &in[0], *ix = &in[1], *y = &out[0];
    if (axis < 0 || axis >= (int64_t)x->rank ||
        (ix->dtype != SES_DRV_DTYPE_I32 && ix->dtype != SES_DRV_DTYPE_I64) ||
        y->rank != x->rank - 1 + ix->rank || y->esize != x->esize)
        return ocl_shape_fail(device, node, "data, indices and output do not agree", x, y);
    cl_ulong outer = 1, inner = 1, A = (cl_ulong)x->dims[axis], nidx = ix->count;
    for (uint32_t d = 0; d < x->rank; d++) {
        if ((int64_t)d < axis)
            outer *= (cl_ulong)x->dims[d];
        else if ((int64_t)d > axis)
            inner *= (cl_ulong)x->dims[d];
    }
    for (uint32_t d = 0; d < y->rank; d++) {
        int64_t want = (int64_t)d < axis ? x->dims[d]
                       : d < (uint32_t)axis + ix->rank ? ix->dims[d - (uint32_t)axis]
                                                       : x->dims[d - ix->rank + 1];
        if (y->dims[d] != want)
            return ocl_shape_fail(device, node, "the output does not match Gather(data, indices)",
                                  x, y);
    }
    if (!y->count)
        return SES_DRV_OK;
    unsigned char *host = malloc((size_t)ix->bytes);
    if (!host)
        return ocl_node_fail(device, node, SES_DRV_OUT_OF_MEMORY, "out of host memory");
    pthread_mutex_lock(&device->lock);
    cl_int err = clEnqueueReadBuffer(device->queue, ix->buf->mem, CL_TRUE, (size_t)ix->byte_off,
                                     (size_t)ix->bytes, host, 0, NULL, NULL);
    pthread_mutex_unlock(&device->lock);
    if (err != CL_SUCCESS) {
        free(host);
        return ocl_node_fail(device, node, SES_DRV_INTERNAL, "reading the indices failed: %s",
                             ocl__error_name(err));
    }
    cl_int idx64 = ix->dtype == SES_DRV_DTYPE_I64;
    for (uint64_t j = 0; j < ix->count; j++) {
        int64_t k;
        if (idx64) {
            memcpy(&k, host + j * 8, 8);
        } else {
            int32_t k32;
            memcpy(&k32, host + j * 4, 4);
            k = k32;
        }
        if (k < -(int64_t)A || k >= (int64_t)A) {
            free(host);
            return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                 "index %" PRId64 " at position %" PRIu64
                                 " is outside [-%" PRIu64 ", %" PRIu64 ") of axis %" PRId64,
                                 k, j, (uint64_t)A, (uint64_t)A, axis);
        }
    }
    free(host);
    int k = x->esize == 1 ? OCL_K_GATHER1
            : x->esize == 2 ? OCL_K_GATHER2
            : x->esize == 4 ? OCL_K_GATHER4
                            : OCL_K_GATHER8;
    cl_ulong xo = x->off, io = ix->off, yo = y->off;
    OCL_ARG(&a, x->buf->mem);
    OCL_ARG(&a, xo);
    OCL_ARG(&a, ix->buf->mem);
    OCL_ARG(&a, io);
    OCL_ARG(&a, idx64);
    OCL_ARG(&a, y->buf->mem);
    OCL_ARG(&a, yo);
    OCL_ARG(&a, outer);
    OCL_ARG(&a, A);
    OCL_ARG(&a, nidx);
    OCL_ARG(&a, inner);
    return ocl_run(device, node, k, y->count, &a);
}

/* ---------------------------------------------------------------------------------------------
 * Reductions and softmax
 * ------------------------------------------------------------------------------------------- */

static int32_t ocl_reduce_run(ses_drv_device_t *device, const ses_drv_node_t *node,
                              const ocl_arg_t *x, const ocl_arg_t *y, const ocl_reduce_t *r,
                              uint64_t nred, int op, float scale) {
    ocl_args_t a = {0};
    cl_ulong xo = x->off, yo = y->off, nout = y->count, nr = nred;
    cl_int cop = op;

    OCL_ARG(&a, x->buf->mem);
    OCL_ARG(&a, xo);
    OCL_ARG(&a, y->buf->mem);
    OCL_ARG(&a, yo);
    OCL_ARG(&a, nout);
    OCL_ARG(&a, nr);
    OCL_ARG(&a, *r);
    OCL_ARG(&a, cop);
    OCL_ARG(&a, scale);
    return ocl_run(device, node, OCL_K_REDUCE, nout, &a);
}

static int32_t ocl_k_reduce(ses_drv_device_t *device, void *state,
                            const ses_drv_launch_t *launch) {
    ocl_arg_t in[1], out[1];
    int64_t axes[OCL_MAX_RANK];
    uint32_t na = 0;
    cl_long ist[OCL_MAX_RANK];
    ocl_reduce_t r;
    int32_t st;

    (void)state;
    if ((st = ocl_prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    int op = !strcmp(node->op, "ReduceSum") ? 0 : !strcmp(node->op, "ReduceMean") ? 1 : 2;
    if ((st = ocl_attr_ints(device, node, "axes", axes, &na)) != SES_DRV_OK)
        return st;
    const ocl_arg_t *x = &in[0];
    memset(&r, 0, sizeof r);
    ocl_strides(x->dims, x->rank, ist);
    uint64_t nred = 1, nout = 1;
    uint32_t ai = 0;
    for (uint32_t d = 0; d < x->rank; d++) {
        if (ai < na && axes[ai] == (int64_t)d) {
            r.rdims[r.rrank] = x->dims[d];
            r.rst[r.rrank++] = ist[d];
            nred *= (uint64_t)x->dims[d];
            ai++;
        } else {
            r.odims[r.orank] = x->dims[d];
            r.ost[r.orank++] = ist[d];
            nout *= (uint64_t)x->dims[d];
        }
    }
    if (ai != na)
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                             "axes are not sorted axes below rank %" PRIu32, x->rank);
    if (nout != out[0].count)
        return ocl_shape_fail(device, node, "the output does not match the reduction", x,
                              &out[0]);
    if (op == 2 && nred == 0 && nout > 0)
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                             "ReduceMax over an empty axis has no value");
    return ocl_reduce_run(device, node, x, &out[0], &r, nred, op,
                          op == 1 ? (float)(1.0 / (double)nred) : 1.0f);
}

static int32_t ocl_k_reduce_sum_like(ses_drv_device_t *device, void *state,
                                     const ses_drv_launch_t *launch) {
    ocl_arg_t in[1], out[1];
    cl_long ist[OCL_MAX_RANK];
    ocl_reduce_t r;
    int32_t st;

    (void)state;
    if ((st = ocl_prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const ocl_arg_t *x = &in[0], *y = &out[0];
    if (y->rank > x->rank)
        return ocl_shape_fail(device, node, "the output does not broadcast to the input", y, x);
    memset(&r, 0, sizeof r);
    ocl_strides(x->dims, x->rank, ist);
    uint64_t nred = 1;
    uint32_t lead = x->rank - y->rank;
    for (uint32_t d = 0; d < x->rank; d++) {
        int64_t od = d < lead ? -1 : y->dims[d - lead];
        if (od == x->dims[d]) {
            r.odims[r.orank] = x->dims[d];
            r.ost[r.orank++] = ist[d];
        } else if (od == -1 || od == 1) {
            r.rdims[r.rrank] = x->dims[d];
            r.rst[r.rrank++] = ist[d];
            nred *= (uint64_t)x->dims[d];
        } else {
            return ocl_shape_fail(device, node, "the output does not broadcast to the input", y,
                                  x);
        }
    }
    return ocl_reduce_run(device, node, x, y, &r, nred, 0, 1.0f);
}

static int32_t ocl_k_reduce_grad(ses_drv_device_t *device, void *state,
                                 const ses_drv_launch_t *launch) {
    ocl_arg_t in[1], out[1];
    int64_t axes[OCL_MAX_RANK], dims[OCL_MAX_RANK];
    uint32_t na = 0;
    double scale = 1.0;
    int32_t st;

    (void)state;
    if ((st = ocl_prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = ocl_attr_ints(device, node, "axes", axes, &na)) != SES_DRV_OK ||
        (st = ocl_need_attr(device, node, "scale", ocl_attr_float(node, "scale", &scale))) !=
            SES_DRV_OK)
        return st;
    ocl_arg_t dy = in[0];
    const ocl_arg_t *y = &out[0];
    if (dy.rank != y->rank) {
        /* keepdims = 0: put the reduced axes back as 1s. */
        if (dy.rank + na != y->rank)
            return ocl_shape_fail(device, node, "dy does not fit the output and axes", &dy, y);
        uint32_t ai = 0, k = 0;
        for (uint32_t d = 0; d < y->rank; d++) {
            if (ai < na && axes[ai] == (int64_t)d) {
                dims[d] = 1;
                ai++;
            } else {
                dims[d] = dy.dims[k++];
            }
        }
        dy.rank = y->rank;
        dy.dims = dims;
    }
    return ocl_unary_f32(device, node, &dy, y, 12, (float)scale);
}

static int32_t ocl_k_softmax(ses_drv_device_t *device, void *state,
                             const ses_drv_launch_t *launch) {
    ocl_arg_t in[2], out[1];
    ocl_args_t a = {0};
    int64_t axis = 0;
    int32_t st;

    (void)state;
    if ((st = ocl_prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    cl_int mode = !strcmp(node->op, "Softmax")         ? 0
                  : !strcmp(node->op, "LogSoftmax")    ? 1
                  : !strcmp(node->op, "SoftmaxGrad")   ? 2
                                                       : 3;
    if ((st = ocl_need_attr(device, node, "axis", ocl_attr_int(node, "axis", &axis))) !=
        SES_DRV_OK)
        return st;
    const ocl_arg_t *y = &out[0];
    const ocl_arg_t *b = mode >= 2 ? &in[1] : &in[0];
    if ((mode >= 2) != (node->n_inputs == 2) || !ocl_same_shape(&in[0], y) ||
        !ocl_same_shape(b, y))
        return ocl_shape_fail(device, node, "shapes differ", &in[0], y);
    if (y->rank == 0 ? axis != 0 : (axis < 0 || axis >= (int64_t)y->rank))
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                             "axis %" PRId64 " is outside rank %" PRIu32, axis, y->rank);
    cl_ulong outer = 1, inner = 1, n = y->rank ? (cl_ulong)y->dims[axis] : 1;
    for (uint32_t d = 0; d < y->rank; d++) {
        if ((int64_t)d < axis)
            outer *= (cl_ulong)y->dims[d];
        else if ((int64_t)d > axis)
            inner *= (cl_ulong)y->dims[d];
    }
    if (!y->count)
        return SES_DRV_OK;
    cl_ulong ao = in[0].off, bo = b->off, yo = y->off;
    OCL_ARG(&a, in[0].buf->mem);
    OCL_ARG(&a, ao);
    OCL_ARG(&a, b->buf->mem);
    OCL_ARG(&a, bo);
    OCL_ARG(&a, y->buf->mem);
    OCL_ARG(&a, yo);
    OCL_ARG(&a, outer);
    OCL_ARG(&a, n);
    OCL_ARG(&a, inner);
    OCL_ARG(&a, mode);
    return ocl_run(device, node, OCL_K_SOFTMAX, outer * inner, &a);
}

static int32_t ocl_k_argmax(ses_drv_device_t *device, void *state,
                            const ses_drv_launch_t *launch) {
    ocl_arg_t in[1], out[1];
    ocl_args_t a = {0};
    int64_t axis = 0, keepdims = 1, last = 0;
    int32_t st;

    (void)state;
    if ((st = ocl_prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = ocl_need_attr(device, node, "axis", ocl_attr_int(node, "axis", &axis))) ||
        (st = ocl_need_attr(device, node, "keepdims", ocl_attr_int(node, "keepdims", &keepdims))) ||
        (st = ocl_need_attr(device, node, "select_last_index",
                            ocl_attr_int(node, "select_last_index", &last))))
        return st;
    const ocl_arg_t *x = &in[0], *y = &out[0];
    if (x->rank == 0 ? axis != 0 : (axis < 0 || axis >= (int64_t)x->rank))
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                             "axis %" PRId64 " is outside rank %" PRIu32, axis, x->rank);
    cl_ulong outer = 1, inner = 1, n = x->rank ? (cl_ulong)x->dims[axis] : 1;
    for (uint32_t d = 0; d < x->rank; d++) {
        if ((int64_t)d < axis)
            outer *= (cl_ulong)x->dims[d];
        else if ((int64_t)d > axis)
            inner *= (cl_ulong)x->dims[d];
    }
    if (y->count != outer * inner || (n == 0 && y->count))
        return ocl_shape_fail(device, node, "the output does not match the input and axis", x, y);
    if (!y->count)
        return SES_DRV_OK;
    cl_ulong xo = x->off, yo = y->off;
    cl_int sl = last != 0;
    OCL_ARG(&a, x->buf->mem);
    OCL_ARG(&a, xo);
    OCL_ARG(&a, y->buf->mem);
    OCL_ARG(&a, yo);
    OCL_ARG(&a, outer);
    OCL_ARG(&a, n);
    OCL_ARG(&a, inner);
    OCL_ARG(&a, sl);
    return ocl_run(device, node, OCL_K_ARGMAX, outer * inner, &a);
}

/* ---------------------------------------------------------------------------------------------
 * GEMM through CLBlast
 * ------------------------------------------------------------------------------------------- */

static int32_t ocl_blast_fail(ses_drv_device_t *device, const ses_drv_node_t *node,
                              CLBlastStatusCode s) {
    return ocl_node_fail(device, node, SES_DRV_INTERNAL, "CLBlastSgemm failed: status %d (%s)",
                         (int)s, (int)s > -1000 ? ocl__error_name((cl_int)s) : "a CLBlast error");
}

/* y[m,n] = alpha * op(a)[m,k] * op(b)[k,n] + beta * y, on the device's queue; not waited for. */
static CLBlastStatusCode ocl_sgemm(ses_drv_device_t *device, int ta, int tb, size_t m, size_t n,
                                   size_t k, float alpha, cl_mem a, size_t ao, cl_mem b,
                                   size_t bo, float beta, cl_mem y, size_t yo) {
    return CLBlastSgemm(CLBlastLayoutRowMajor, ta ? CLBlastTransposeYes : CLBlastTransposeNo,
                        tb ? CLBlastTransposeYes : CLBlastTransposeNo, m, n, k, alpha, a, ao,
                        ta ? m : k, b, bo, tb ? k : n, beta, y, yo, n, &device->queue, NULL);
}

static int32_t ocl_k_matmul(ses_drv_device_t *device, void *state,
                            const ses_drv_launch_t *launch) {
    ocl_arg_t in[2], out[1];
    int32_t st;

    (void)state;
    if ((st = ocl_prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const ocl_arg_t *A = &in[0], *B = &in[1], *Y = &out[0];
    if (A->rank < 1 || B->rank < 1)
        return ocl_shape_fail(device, node, "MatMul needs operands of rank >= 1", A, B);
    int64_t M = A->rank == 1 ? 1 : A->dims[A->rank - 2], K = A->dims[A->rank - 1];
    int64_t KB = B->rank == 1 ? B->dims[0] : B->dims[B->rank - 2];
    int64_t N = B->rank == 1 ? 1 : B->dims[B->rank - 1];
    if (K != KB)
        return ocl_shape_fail(device, node, "inner dimensions differ", A, B);
    /* Batch dims: the output's leading dims, each operand's broadcast to them. */
    uint32_t ab = A->rank > 2 ? A->rank - 2 : 0, bb = B->rank > 2 ? B->rank - 2 : 0;
    uint32_t yb = ab > bb ? ab : bb;
    uint32_t want_rank = yb + (A->rank > 1) + (B->rank > 1);
    if (Y->rank != want_rank ||
        (A->rank > 1 && Y->dims[yb] != M) || (B->rank > 1 && Y->dims[Y->rank - 1] != N))
        return ocl_shape_fail(device, node, "the output does not match MatMul(A, B)", A, Y);
    int64_t bdims[OCL_MAX_RANK], ast[OCL_MAX_RANK], bst[OCL_MAX_RANK];
    int64_t sa = M * K, sb = K * N;
    uint64_t batches = 1;
    for (uint32_t d = yb; d-- > 0;) {
        int64_t da = d + ab >= yb ? A->dims[d + ab - yb] : 1;
        int64_t db = d + bb >= yb ? B->dims[d + bb - yb] : 1;
        if (Y->dims[d] != (da == 1 ? db : da) || (da != 1 && db != 1 && da != db))
            return ocl_shape_fail(device, node, "batch dims do not broadcast", A, B);
        bdims[d] = Y->dims[d];
        ast[d] = da == 1 ? 0 : sa;
        bst[d] = db == 1 ? 0 : sb;
        sa *= da;
        sb *= db;
        batches *= (uint64_t)Y->dims[d];
    }
    if (!Y->count)
        return SES_DRV_OK;
    if (K == 0)
        return ocl_fill_zero(device, node, Y);
    CLBlastStatusCode s = CLBlastSuccess;
    cl_int err = CL_SUCCESS;
    pthread_mutex_lock(&device->lock);
    for (uint64_t b = 0; b < batches && s == CLBlastSuccess; b++) {
        uint64_t rest = b;
        int64_t ao = 0, bo = 0;
        for (uint32_t d = yb; d-- > 0;) {
            int64_t i = (int64_t)(rest % (uint64_t)bdims[d]);
            rest /= (uint64_t)bdims[d];
            ao += i * ast[d];
            bo += i * bst[d];
        }
        s = ocl_sgemm(device, 0, 0, (size_t)M, (size_t)N, (size_t)K, 1.0f, A->buf->mem,
                      (size_t)(A->off + (uint64_t)ao), B->buf->mem,
                      (size_t)(B->off + (uint64_t)bo), 0.0f, Y->buf->mem,
                      (size_t)(Y->off + b * (uint64_t)(M * N)));
    }
    err = clFinish(device->queue);
    pthread_mutex_unlock(&device->lock);
    if (s != CLBlastSuccess)
        return ocl_blast_fail(device, node, s);
    if (err != CL_SUCCESS)
        return ocl_node_fail(device, node, SES_DRV_INTERNAL, "clFinish failed: %s",
                             ocl__error_name(err));
    return SES_DRV_OK;
}

/*
 * MatMulGrad: for y = MatMul(A, B) with dy of y's shape, the gradient of A (dy * B^T) or of B
 * (A^T * dy), summed over the batch dims that operand was broadcast along: the output is zeroed
 * and every batch's product is added into its operand's slot.
 */
static int32_t ocl_k_matmul_grad(ses_drv_device_t *device, void *state,
                                 const ses_drv_launch_t *launch) {
    ocl_arg_t in[3], out[1];
    int64_t which = 0;
    int32_t st;

    (void)state;
    if ((st = ocl_prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = ocl_need_attr(device, node, "input", ocl_attr_int(node, "input", &which))) !=
        SES_DRV_OK)
        return st;
    const ocl_arg_t *DY = &in[0], *A = &in[1], *B = &in[2], *G = &out[0];
    const ocl_arg_t *T = which ? B : A;
    if (A->rank < 1 || B->rank < 1 || (which != 0 && which != 1))
        return ocl_shape_fail(device, node, "MatMulGrad needs operands of rank >= 1", A, B);
    if (!ocl_same_shape(G, T))
        return ocl_shape_fail(device, node, "the output differs from the operand's shape", G, T);
    int64_t M = A->rank == 1 ? 1 : A->dims[A->rank - 2], K = A->dims[A->rank - 1];
    int64_t KB = B->rank == 1 ? B->dims[0] : B->dims[B->rank - 2];
    int64_t N = B->rank == 1 ? 1 : B->dims[B->rank - 1];
    if (K != KB)
        return ocl_shape_fail(device, node, "inner dimensions differ", A, B);
    uint32_t ab = A->rank > 2 ? A->rank - 2 : 0, bb = B->rank > 2 ? B->rank - 2 : 0;
    uint32_t yb = ab > bb ? ab : bb;
    if (DY->rank != yb + (A->rank > 1) + (B->rank > 1) ||
        (A->rank > 1 && DY->dims[yb] != M) || (B->rank > 1 && DY->dims[DY->rank - 1] != N))
        return ocl_shape_fail(device, node, "dy does not match MatMul(A, B)", DY, A);
    int64_t bdims[OCL_MAX_RANK], ast[OCL_MAX_RANK], bst[OCL_MAX_RANK];
    int64_t sa = M * K, sb = K * N;
    uint64_t batches = 1;
    for (uint32_t d = yb; d-- > 0;) {
        int64_t da = d + ab >= yb ? A->dims[d + ab - yb] : 1;
        int64_t db = d + bb >= yb ? B->dims[d + bb - yb] : 1;
        if (DY->dims[d] != (da == 1 ? db : da) || (da != 1 && db != 1 && da != db))
            return ocl_shape_fail(device, node, "batch dims do not broadcast", A, B);
        bdims[d] = DY->dims[d];
        ast[d] = da == 1 ? 0 : sa;
        bst[d] = db == 1 ? 0 : sb;
        sa *= da;
        sb *= db;
        batches *= (uint64_t)DY->dims[d];
    }
    if ((st = ocl_fill_zero(device, node, G)) != SES_DRV_OK)
        return st;
    if (!G->count || !DY->count)
        return SES_DRV_OK;
    CLBlastStatusCode s = CLBlastSuccess;
    pthread_mutex_lock(&device->lock);
    for (uint64_t b = 0; b < batches && s == CLBlastSuccess; b++) {
        uint64_t rest = b;
        int64_t ao = 0, bo = 0;
        for (uint32_t d = yb; d-- > 0;) {
            int64_t i = (int64_t)(rest % (uint64_t)bdims[d]);
            rest /= (uint64_t)bdims[d];
            ao += i * ast[d];
            bo += i * bst[d];
        }
        size_t dyo = (size_t)(DY->off + b * (uint64_t)(M * N));
        if (which == 0) /* dA[M,K] += dy[M,N] * B[K,N]^T */
            s = ocl_sgemm(device, 0, 1, (size_t)M, (size_t)K, (size_t)N, 1.0f, DY->buf->mem, dyo,
                          B->buf->mem, (size_t)(B->off + (uint64_t)bo), 1.0f, G->buf->mem,
                          (size_t)(G->off + (uint64_t)ao));
        else /* dB[K,N] += A[M,K]^T * dy[M,N] */
            s = ocl_sgemm(device, 1, 0, (size_t)K, (size_t)N, (size_t)M, 1.0f, A->buf->mem,
                          (size_t)(A->off + (uint64_t)ao), DY->buf->mem, dyo, 1.0f, G->buf->mem,
                          (size_t)(G->off + (uint64_t)bo));
    }
    cl_int err = clFinish(device->queue);
    pthread_mutex_unlock(&device->lock);
    if (s != CLBlastSuccess)
        return ocl_blast_fail(device, node, s);
    if (err != CL_SUCCESS)
        return ocl_node_fail(device, node, SES_DRV_INTERNAL, "clFinish failed: %s",
                             ocl__error_name(err));
    return SES_DRV_OK;
}

static int32_t ocl_k_gemm(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[3], out[1];
    double alpha = 1.0, beta = 1.0;
    int64_t ta = 0, tb = 0;
    int32_t st;

    (void)state;
    if ((st = ocl_prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = ocl_need_attr(device, node, "alpha", ocl_attr_float(node, "alpha", &alpha))) ||
        (st = ocl_need_attr(device, node, "beta", ocl_attr_float(node, "beta", &beta))) ||
        (st = ocl_need_attr(device, node, "transA", ocl_attr_int(node, "transA", &ta))) ||
        (st = ocl_need_attr(device, node, "transB", ocl_attr_int(node, "transB", &tb))))
        return st;
    const ocl_arg_t *A = &in[0], *B = &in[1], *Y = &out[0];
    if (A->rank != 2 || B->rank != 2 || Y->rank != 2)
        return ocl_shape_fail(device, node, "Gemm takes matrices", A, B);
    int64_t M = ta ? A->dims[1] : A->dims[0], K = ta ? A->dims[0] : A->dims[1];
    int64_t KB = tb ? B->dims[1] : B->dims[0], N = tb ? B->dims[0] : B->dims[1];
    if (K != KB || Y->dims[0] != M || Y->dims[1] != N)
        return ocl_shape_fail(device, node, "shapes do not agree", A, B);
    if (!Y->count)
        return SES_DRV_OK;
    float gb = 0.0f;
    if (node->n_inputs == 3 && beta != 0.0) {
        /* y = beta * C broadcast, then the product is added on top. */
        if ((st = ocl_unary_f32(device, node, &in[2], Y, 12, (float)beta)) != SES_DRV_OK)
            return st;
        gb = 1.0f;
    } else if ((st = ocl_fill_zero(device, node, Y)) != SES_DRV_OK) {
        return st;
    }
    if (K == 0)
        return SES_DRV_OK;
    pthread_mutex_lock(&device->lock);
    CLBlastStatusCode s = ocl_sgemm(device, (int)ta, (int)tb, (size_t)M, (size_t)N, (size_t)K,
                                    (float)alpha, A->buf->mem, (size_t)A->off, B->buf->mem,
                                    (size_t)B->off, gb, Y->buf->mem, (size_t)Y->off);
    cl_int err = clFinish(device->queue);
    pthread_mutex_unlock(&device->lock);
    if (s != CLBlastSuccess)
        return ocl_blast_fail(device, node, s);
    if (err != CL_SUCCESS)
        return ocl_node_fail(device, node, SES_DRV_INTERNAL, "clFinish failed: %s",
                             ocl__error_name(err));
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * SoftmaxCrossEntropyLoss and its gradient
 * ------------------------------------------------------------------------------------------- */

/* What both ops share: geometry, attributes, and the labels checked on the host (the host does
 * not check them) with the summed weights of the counted ones. */
typedef struct ocl_sce {
    cl_ulong n, c, inner;
    cl_long ignore;
    cl_int has_ignore, reduction, lab64, has_w;
    float total_w;
} ocl_sce_t;

static int32_t ocl_sce_setup(ses_drv_device_t *device, const ses_drv_node_t *node,
                             const ocl_arg_t *scores, const ocl_arg_t *labels,
                             const ocl_arg_t *weights, ocl_sce_t *g) {
    int64_t reduction = 0, ignore = 0, has_ignore = 0;
    int32_t st;

    if ((st = ocl_need_attr(device, node, "reduction",
                            ocl_attr_int(node, "reduction", &reduction))) ||
        (st = ocl_need_attr(device, node, "ignore_index",
                            ocl_attr_int(node, "ignore_index", &ignore))) ||
        (st = ocl_need_attr(device, node, "has_ignore_index",
                            ocl_attr_int(node, "has_ignore_index", &has_ignore))))
        return st;
    if (reduction < 0 || reduction > 2)
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                             "reduction %" PRId64 " is not 0 (mean), 1 (sum) or 2 (none)",
                             reduction);
    if (scores->rank < 2 || labels->rank + 1 != scores->rank ||
        labels->dims[0] != scores->dims[0] ||
        (labels->dtype != SES_DRV_DTYPE_I32 && labels->dtype != SES_DRV_DTYPE_I64))
        return ocl_shape_fail(device, node, "labels do not match scores [N, C, d...]", labels,
                              scores);
    for (uint32_t d = 1; d < labels->rank; d++)
        if (labels->dims[d] != scores->dims[d + 1])
            return ocl_shape_fail(device, node, "labels do not match scores [N, C, d...]",
                                  labels, scores);
    if (weights && (weights->rank != 1 || weights->dims[0] != scores->dims[1]))
        return ocl_shape_fail(device, node, "weights are not [C]", weights, scores);
    g->n = (cl_ulong)scores->dims[0];
    g->c = (cl_ulong)scores->dims[1];
    g->inner = g->n ? labels->count / g->n : 1;
    g->ignore = ignore;
    g->has_ignore = has_ignore != 0;
    g->reduction = (cl_int)reduction;
    g->lab64 = labels->dtype == SES_DRV_DTYPE_I64;
    g->has_w = weights != NULL;
    g->total_w = 0.0f;

    /* Read the labels (and weights) back to check them and sum the counted weights. */
    unsigned char *host = labels->bytes ? malloc((size_t)labels->bytes) : NULL;
    float *w = weights && weights->bytes ? malloc((size_t)weights->bytes) : NULL;
    cl_int err = CL_SUCCESS;
    if ((labels->bytes && !host) || (weights && weights->bytes && !w)) {
        free(host);
        free(w);
        return ocl_node_fail(device, node, SES_DRV_OUT_OF_MEMORY, "out of host memory");
    }
    pthread_mutex_lock(&device->lock);
    if (host)
        err = clEnqueueReadBuffer(device->queue, labels->buf->mem, CL_TRUE,
                                  (size_t)labels->byte_off, (size_t)labels->bytes, host, 0, NULL,
                                  NULL);
    if (w && err == CL_SUCCESS)
        err = clEnqueueReadBuffer(device->queue, weights->buf->mem, CL_TRUE,
                                  (size_t)weights->byte_off, (size_t)weights->bytes, w, 0, NULL,
                                  NULL);
    pthread_mutex_unlock(&device->lock);
    st = SES_DRV_OK;
    if (err != CL_SUCCESS)
        st = ocl_node_fail(device, node, SES_DRV_INTERNAL, "reading the labels failed: %s",
                           ocl__error_name(err));
    double total = 0.0;
    for (uint64_t p = 0; st == SES_DRV_OK && p < labels->count; p++) {
        int64_t l;
        if (g->lab64)
            memcpy(&l, host + p * 8, 8);
        else {
            int32_t l32;
            memcpy(&l32, host + p * 4, 4);
            l = l32;
        }
        if (g->has_ignore && l == ignore)
            continue;
        if (l < 0 || (uint64_t)l >= g->c)
            st = ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "label %" PRId64 " at position %" PRIu64
                               " is outside [0, %" PRIu64 ")",
                               l, p, (uint64_t)g->c);
        else
            total += w ? (double)w[l] : 1.0;
    }
    free(host);
    free(w);
    g->total_w = (float)total;
    return st;
}

static int32_t ocl_k_sce(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[3], out[2];
    ocl_sce_t g;
    ocl_args_t a = {0};
    int32_t st;

    (void)state;
    if ((st = ocl_prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const ocl_arg_t *x = &in[0], *w = node->n_inputs == 3 ? &in[2] : NULL;
    if ((st = ocl_sce_setup(device, node, x, &in[1], w, &g)) != SES_DRV_OK)
        return st;
    cl_int has_lp = node->n_outputs == 2;
    if ((g.reduction == 2 ? out[0].count != g.n * g.inner : out[0].count != 1) ||
        (has_lp && !ocl_same_shape(&out[1], x)))
        return ocl_shape_fail(device, node, "the outputs do not match the scores", &out[0], x);
    if (!out[0].count)
        return SES_DRV_OK;
    const ocl_arg_t *lp = has_lp ? &out[1] : &out[0];
    cl_ulong xo = x->off, lo = in[1].off, wo = w ? w->off : 0, losso = out[0].off,
             lpo = lp->off;
    cl_mem wm = w ? w->buf->mem : x->buf->mem;
    OCL_ARG(&a, x->buf->mem);
    OCL_ARG(&a, xo);
    OCL_ARG(&a, in[1].buf->mem);
    OCL_ARG(&a, lo);
    OCL_ARG(&a, g.lab64);
    OCL_ARG(&a, wm);
    OCL_ARG(&a, wo);
    OCL_ARG(&a, g.has_w);
    OCL_ARG(&a, out[0].buf->mem);
    OCL_ARG(&a, losso);
    OCL_ARG(&a, lp->buf->mem);
    OCL_ARG(&a, lpo);
    OCL_ARG(&a, has_lp);
    OCL_ARG(&a, g.n);
    OCL_ARG(&a, g.c);
    OCL_ARG(&a, g.inner);
    OCL_ARG(&a, g.reduction);
    OCL_ARG(&a, g.ignore);
    OCL_ARG(&a, g.has_ignore);
    OCL_ARG(&a, g.total_w);
    /* Sum and mean add up every position in one work item: no scratch memory, exact order. */
    uint64_t n = g.reduction == 2 ? g.n * g.inner : 1;
    if (g.n * g.inner == 0) {
        float zero = g.reduction == 0 ? NAN : 0.0f;
        cl_int err;
        pthread_mutex_lock(&device->lock);
        err = clEnqueueWriteBuffer(device->queue, out[0].buf->mem, CL_TRUE,
                                   (size_t)out[0].byte_off, sizeof zero, &zero, 0, NULL, NULL);
        pthread_mutex_unlock(&device->lock);
        return err == CL_SUCCESS ? SES_DRV_OK
                                 : ocl_node_fail(device, node, SES_DRV_INTERNAL,
                                                 "clEnqueueWriteBuffer failed: %s",
                                                 ocl__error_name(err));
    }
    return ocl_run(device, node, OCL_K_SCE, n, &a);
}

static int32_t ocl_k_sce_grad(ses_drv_device_t *device, void *state,
                              const ses_drv_launch_t *launch) {
    ocl_arg_t in[4], out[1];
    ocl_sce_t g;
    ocl_args_t a = {0};
    int32_t st;

    (void)state;
    if ((st = ocl_prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const ocl_arg_t *dl = &in[0], *lp = &in[1], *w = node->n_inputs == 4 ? &in[3] : NULL;
    if ((st = ocl_sce_setup(device, node, lp, &in[2], w, &g)) != SES_DRV_OK)
        return st;
    if (!ocl_same_shape(&out[0], lp) ||
        (g.reduction == 2 ? dl->count != g.n * g.inner : dl->count != 1))
        return ocl_shape_fail(device, node, "dloss or dscores do not match log_prob", dl, lp);
    cl_int dl_scalar = g.reduction != 2;
    float scale = g.reduction == 0 ? 1.0f / g.total_w : 1.0f;
    cl_ulong dlo = dl->off, lpo = lp->off, lo = in[2].off, wo = w ? w->off : 0,
             dxo = out[0].off;
    cl_mem wm = w ? w->buf->mem : lp->buf->mem;
    OCL_ARG(&a, dl->buf->mem);
    OCL_ARG(&a, dlo);
    OCL_ARG(&a, dl_scalar);
    OCL_ARG(&a, lp->buf->mem);
    OCL_ARG(&a, lpo);
    OCL_ARG(&a, in[2].buf->mem);
    OCL_ARG(&a, lo);
    OCL_ARG(&a, g.lab64);
    OCL_ARG(&a, wm);
    OCL_ARG(&a, wo);
    OCL_ARG(&a, g.has_w);
    OCL_ARG(&a, out[0].buf->mem);
    OCL_ARG(&a, dxo);
    OCL_ARG(&a, g.n);
    OCL_ARG(&a, g.c);
    OCL_ARG(&a, g.inner);
    OCL_ARG(&a, g.ignore);
    OCL_ARG(&a, g.has_ignore);
    OCL_ARG(&a, scale);
    return ocl_run(device, node, OCL_K_SCE_GRAD, out[0].count, &a);
}

/* ---------------------------------------------------------------------------------------------
 * Training: ScalarLike and the optimizers
 * ------------------------------------------------------------------------------------------- */

static int32_t ocl_k_scalar_like(ses_drv_device_t *device, void *state,
                                 const ses_drv_launch_t *launch) {
    ocl_arg_t in[1], out[1];
    double value = 0.0;
    int32_t st;
    cl_int err;

    (void)state;
    if ((st = ocl_prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = ocl_need_attr(device, node, "value", ocl_attr_float(node, "value", &value))) !=
        SES_DRV_OK)
        return st;
    if (out[0].count != 1)
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                             "the output has %" PRIu64 " elements, not 1", out[0].count);
    float v = (float)value;
    pthread_mutex_lock(&device->lock);
    err = clEnqueueWriteBuffer(device->queue, out[0].buf->mem, CL_TRUE, (size_t)out[0].byte_off,
                               sizeof v, &v, 0, NULL, NULL);
    pthread_mutex_unlock(&device->lock);
    if (err != CL_SUCCESS)
        return ocl_node_fail(device, node, SES_DRV_INTERNAL, "clEnqueueWriteBuffer failed: %s",
                             ocl__error_name(err));
    return SES_DRV_OK;
}

static int32_t ocl_k_optim(ses_drv_device_t *device, void *state,
                           const ses_drv_launch_t *launch) {
    ocl_arg_t in[6], out[1];
    double a = 0.0, b = 0.0, eps = 0.0, c1 = 1.0, c2 = 1.0;
    int64_t nesterov = 0;
    int32_t st;

    (void)state;
    if ((st = ocl_prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    int op = !strcmp(node->op, "SGD") ? 0 : !strcmp(node->op, "Momentum") ? 1 : 3;
    uint32_t want = op == 0 ? 3 : op == 1 ? 4 : 6;
    if (node->n_inputs != want || node->n_outputs != 0)
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                             "takes %" PRIu32 " inputs and no outputs", want);
    if (in[1].count != in[0].count || in[2].count != 1 ||
        (op >= 1 && in[3].count != in[0].count) ||
        (op == 3 && (in[4].count != in[0].count || in[5].count != 1)))
        return ocl_shape_fail(device, node, "the update's shapes do not agree", &in[0], &in[1]);
    /* The updated inputs must not share bytes with any other argument. */
    for (uint32_t i = 0; i < want; i++)
        for (uint32_t j = 0; j < want; j++) {
            int upd = i == 0 || i == 3 || i == 4 || i == 5;
            if (i == j || !upd || in[i].buf != in[j].buf || !in[i].bytes || !in[j].bytes)
                continue;
            if (in[i].byte_off < in[j].byte_off + in[j].bytes &&
                in[j].byte_off < in[i].byte_off + in[i].bytes)
                return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                     "input %" PRIu32 " is updated in place but overlaps input %" PRIu32,
                                     i, j);
        }
    if (op == 1) {
        if ((st = ocl_need_attr(device, node, "momentum",
                                ocl_attr_float(node, "momentum", &a))) != SES_DRV_OK ||
            (st = ocl_need_attr(device, node, "nesterov",
                                ocl_attr_int(node, "nesterov", &nesterov))) != SES_DRV_OK)
            return st;
        if (nesterov)
            op = 2;
    } else if (op == 3) {
        float t = 0.0f;
        cl_int err;
        if ((st = ocl_need_attr(device, node, "beta1", ocl_attr_float(node, "beta1", &a))) ||
            (st = ocl_need_attr(device, node, "beta2", ocl_attr_float(node, "beta2", &b))) ||
            (st = ocl_need_attr(device, node, "epsilon",
                                ocl_attr_float(node, "epsilon", &eps))))
            return st;
        /* t += 1 happens once, here, not per element. */
        pthread_mutex_lock(&device->lock);
        err = clEnqueueReadBuffer(device->queue, in[5].buf->mem, CL_TRUE,
                                  (size_t)in[5].byte_off, sizeof t, &t, 0, NULL, NULL);
        t += 1.0f;
        if (err == CL_SUCCESS)
            err = clEnqueueWriteBuffer(device->queue, in[5].buf->mem, CL_TRUE,
                                       (size_t)in[5].byte_off, sizeof t, &t, 0, NULL, NULL);
        pthread_mutex_unlock(&device->lock);
        if (err != CL_SUCCESS)
            return ocl_node_fail(device, node, SES_DRV_INTERNAL, "updating t failed: %s",
                                 ocl__error_name(err));
        c1 = 1.0 - pow(a, (double)t);
        c2 = 1.0 - pow(b, (double)t);
    }
    ocl_args_t args = {0};
    cl_mem m = op >= 1 ? in[3].buf->mem : in[0].buf->mem;
    cl_mem v = op == 3 ? in[4].buf->mem : in[0].buf->mem;
    cl_ulong vo = in[0].off, go = in[1].off, lo = in[2].off, mo = op >= 1 ? in[3].off : 0,
             wo = op == 3 ? in[4].off : 0, n = in[0].count;
    cl_int cop = op;
    float fa = (float)a, fb = (float)b, fe = (float)eps, f1 = (float)c1, f2 = (float)c2;
    OCL_ARG(&args, in[0].buf->mem);
    OCL_ARG(&args, vo);
    OCL_ARG(&args, in[1].buf->mem);
    OCL_ARG(&args, go);
    OCL_ARG(&args, in[2].buf->mem);
    OCL_ARG(&args, lo);
    OCL_ARG(&args, m);
    OCL_ARG(&args, mo);
    OCL_ARG(&args, v);
    OCL_ARG(&args, wo);
    OCL_ARG(&args, n);
    OCL_ARG(&args, cop);
    OCL_ARG(&args, fa);
    OCL_ARG(&args, fb);
    OCL_ARG(&args, fe);
    OCL_ARG(&args, f1);
    OCL_ARG(&args, f2);
    return ocl_run(device, node, OCL_K_OPTIM, n, &args);
}

/* ---------------------------------------------------------------------------------------------
 * The table
 * ------------------------------------------------------------------------------------------- */

#define E(OP, SIG, FN) \
    {.struct_size = sizeof(ses_drv_kernel_t), .op = OP, .signature = SIG, .compute = FN},
#define ANY(OP, FN)                                                                             \
    E(OP, "f32->f32", FN) E(OP, "f64->f64", FN) E(OP, "f16->f16", FN) E(OP, "bf16->bf16", FN) \
    E(OP, "i8->i8", FN) E(OP, "i16->i16", FN) E(OP, "i32->i32", FN) E(OP, "i64->i64", FN)     \
    E(OP, "u8->u8", FN) E(OP, "u16->u16", FN) E(OP, "u32->u32", FN) E(OP, "u64->u64", FN)     \
    E(OP, "bool->bool", FN)
#define ANYV(OP, FN)                                                                  \
    E(OP, "f32...->f32", FN) E(OP, "f64...->f64", FN) E(OP, "f16...->f16", FN)        \
    E(OP, "bf16...->bf16", FN) E(OP, "i8...->i8", FN) E(OP, "i16...->i16", FN)        \
    E(OP, "i32...->i32", FN) E(OP, "i64...->i64", FN) E(OP, "u8...->u8", FN)          \
    E(OP, "u16...->u16", FN) E(OP, "u32...->u32", FN) E(OP, "u64...->u64", FN)        \
    E(OP, "bool...->bool", FN)
#define GIDX(T, I) E("Gather", T "," I "->" T, ocl_k_gather)
#define GANY(I)                                                                               \
    GIDX("f32", I) GIDX("f64", I) GIDX("f16", I) GIDX("bf16", I) GIDX("i8", I) GIDX("i16", I) \
    GIDX("i32", I) GIDX("i64", I) GIDX("u8", I) GIDX("u16", I) GIDX("u32", I) GIDX("u64", I)  \
    GIDX("bool", I)
#define U(OP) E(OP, "f32->f32", ocl_k_unary)
#define B(OP) E(OP, "f32,f32->f32", ocl_k_binary)

static const ses_drv_kernel_t ocl_kernels[] = {
    U("Neg") U("Abs") U("Relu") U("Exp") U("Log") U("Sqrt") U("Reciprocal") U("Sigmoid")
    U("Tanh") U("Softplus") U("Erf") U("LeakyRelu")
    B("Add") B("Sub") B("Mul") B("Div") B("Pow")
    B("ReluGrad") B("SigmoidGrad") B("TanhGrad") B("LeakyReluGrad")
    E("Equal", "f32,f32->bool", ocl_k_compare)
    E("Greater", "f32,f32->bool", ocl_k_compare)
    E("Less", "f32,f32->bool", ocl_k_compare)
    E("Where", "bool,f32,f32->f32", ocl_k_where)
    E("Where", "bool,i32,i32->i32", ocl_k_where)
    E("Where", "bool,i64,i64->i64", ocl_k_where)
    E("Where", "bool,f64,f64->f64", ocl_k_where)
    E("Where", "bool,u8,u8->u8", ocl_k_where)
    E("Where", "bool,bool,bool->bool", ocl_k_where)
    ANY("Identity", ocl_k_copy) ANY("Reshape", ocl_k_copy) ANY("Flatten", ocl_k_copy)
    ANY("Squeeze", ocl_k_copy) ANY("Unsqueeze", ocl_k_copy)
    ANY("Transpose", ocl_k_transpose) ANY("Slice", ocl_k_slice) ANY("ExpandLike", ocl_k_expand)
    ANYV("Concat", ocl_k_concat)
    GANY("i32") GANY("i64")
    E("Cast", "f32->i32", ocl_k_cast) E("Cast", "f32->i64", ocl_k_cast)
    E("Cast", "f32->u8", ocl_k_cast) E("Cast", "f32->bool", ocl_k_cast)
    E("Cast", "i32->f32", ocl_k_cast) E("Cast", "i64->f32", ocl_k_cast)
    E("Cast", "u8->f32", ocl_k_cast) E("Cast", "bool->f32", ocl_k_cast)
    E("MatMul", "f32,f32->f32", ocl_k_matmul)
    E("Gemm", "f32,f32->f32", ocl_k_gemm)
    E("Gemm", "f32,f32,f32->f32", ocl_k_gemm)
    E("ReduceSum", "f32->f32", ocl_k_reduce)
    E("ReduceMean", "f32->f32", ocl_k_reduce)
    E("ReduceMax", "f32->f32", ocl_k_reduce)
    E("ReduceSumLike", "f32->f32", ocl_k_reduce_sum_like)
    E("ReduceGrad", "f32->f32", ocl_k_reduce_grad)
    E("Softmax", "f32->f32", ocl_k_softmax)
    E("LogSoftmax", "f32->f32", ocl_k_softmax)
    E("SoftmaxGrad", "f32,f32->f32", ocl_k_softmax)
    E("LogSoftmaxGrad", "f32,f32->f32", ocl_k_softmax)
    E("ArgMax", "f32->i64", ocl_k_argmax)
    E("MatMulGrad", "f32,f32,f32->f32", ocl_k_matmul_grad)
    E("SoftmaxCrossEntropyLoss", "f32,i64->f32", ocl_k_sce)
    E("SoftmaxCrossEntropyLoss", "f32,i32->f32", ocl_k_sce)
    E("SoftmaxCrossEntropyLoss", "f32,i64,f32->f32", ocl_k_sce)
    E("SoftmaxCrossEntropyLoss", "f32,i32,f32->f32", ocl_k_sce)
    E("SoftmaxCrossEntropyLoss", "f32,i64->f32,f32", ocl_k_sce)
    E("SoftmaxCrossEntropyLoss", "f32,i32->f32,f32", ocl_k_sce)
    E("SoftmaxCrossEntropyLoss", "f32,i64,f32->f32,f32", ocl_k_sce)
    E("SoftmaxCrossEntropyLoss", "f32,i32,f32->f32,f32", ocl_k_sce)
    E("SoftmaxCrossEntropyLossGrad", "f32,f32,i64->f32", ocl_k_sce_grad)
    E("SoftmaxCrossEntropyLossGrad", "f32,f32,i32->f32", ocl_k_sce_grad)
    E("SoftmaxCrossEntropyLossGrad", "f32,f32,i64,f32->f32", ocl_k_sce_grad)
    E("SoftmaxCrossEntropyLossGrad", "f32,f32,i32,f32->f32", ocl_k_sce_grad)
    E("ScalarLike", "f32->f32", ocl_k_scalar_like)
    E("SGD", "f32,f32,f32->", ocl_k_optim)
    E("Momentum", "f32,f32,f32,f32->", ocl_k_optim)
    E("Adam", "f32,f32,f32,f32,f32,f32->", ocl_k_optim)
};

int32_t ocl__make_table(ses_drv_device_t *device) {
    device->table = ocl_kernels;
    device->n_table = (uint32_t)(sizeof ocl_kernels / sizeof ocl_kernels[0]);
    return SES_DRV_OK;
}

void ocl__free_table(ses_drv_device_t *device) {
    device->table = NULL;
    device->n_table = 0;
}
