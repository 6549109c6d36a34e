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
static int32_t ocl_prepare_n(ses_drv_device_t *device, const ses_drv_launch_t *launch,
                             int exact_ok, ocl_arg_t *in, ocl_arg_t *out, uint32_t max_out) {
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
    if (node->n_inputs > OCL_MAX_ARGS - 2 || node->n_outputs > max_out)
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

/* ocl_prepare_n for the ops of at most two outputs. */
static int32_t ocl_prepare(ses_drv_device_t *device, const ses_drv_launch_t *launch,
                           int exact_ok, ocl_arg_t *in, ocl_arg_t *out) {
    return ocl_prepare_n(device, launch, exact_ok, in, out, 2);
}

static int32_t ocl_attr_int(const ses_drv_node_t *node, const char *name, int64_t *out) {
    uint64_t n = 1;
    return node->attr ? node->attr(node, name, SES_DRV_ATTR_INT, &n, out) : SES_DRV_NOT_FOUND;
}

static int32_t ocl_attr_float(const ses_drv_node_t *node, const char *name, double *out) {
    uint64_t n = 1;
    return node->attr ? node->attr(node, name, SES_DRV_ATTR_FLOAT, &n, out) : SES_DRV_NOT_FOUND;
}

/* Reads an INTS attribute of at most @p max entries. */
static int32_t ocl_attr_ints_max(ses_drv_device_t *device, const ses_drv_node_t *node,
                                 const char *name, int64_t *out, uint32_t max,
                                 uint32_t *out_count) {
    uint64_t n = 0;
    int32_t st;

    if (!node->attr)
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "has no attribute reader");
    if ((st = node->attr(node, name, SES_DRV_ATTR_INTS, &n, NULL)) != SES_DRV_OK)
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                             "attribute %s is missing or not INTS", name);
    if (n > max)
        return ocl_node_fail(device, node, SES_DRV_UNIMPLEMENTED,
                             "attribute %s has %" PRIu64 " entries, more than %" PRIu32, name,
                             n, max);
    if (n && (st = node->attr(node, name, SES_DRV_ATTR_INTS, &n, out)) != SES_DRV_OK)
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                             "attribute %s cannot be read", name);
    *out_count = (uint32_t)n;
    return SES_DRV_OK;
}

/* Reads an INTS attribute of at most OCL_MAX_RANK entries. */
static int32_t ocl_attr_ints(ses_drv_device_t *device, const ses_drv_node_t *node,
                             const char *name, int64_t *out, uint32_t *out_count) {
    return ocl_attr_ints_max(device, node, name, out, OCL_MAX_RANK, out_count);
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

/* Sets the arguments of @p kernel, runs it over @p n elements and waits. */
static int32_t ocl_run_kernel(ses_drv_device_t *device, const ses_drv_node_t *node,
                              cl_kernel kernel, uint64_t n, const ocl_args_t *args) {
    cl_int err = CL_SUCCESS;
    cl_uint i;

    if (n == 0)
        return SES_DRV_OK;
    if (!kernel)
        return ocl_node_fail(device, node, SES_DRV_UNIMPLEMENTED,
                             "the device's program lacks this kernel");
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

/* ocl_run_kernel with one of ocl_driver.c's kernels (OCL_K_*). */
static int32_t ocl_run(ses_drv_device_t *device, const ses_drv_node_t *node, int k, uint64_t n,
                       const ocl_args_t *args) {
    return ocl_run_kernel(device, node, device->kernels[k], n, args);
}

/* ocl_run_kernel with one of this file's kernels (OCL_X_*). */
static int32_t ocl_run_x(ses_drv_device_t *device, const ses_drv_node_t *node, int k,
                         uint64_t n, const ocl_args_t *args) {
    return ocl_run_kernel(device, node, device->xkernels[k], n, args);
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
    /* The index is the kernel's op code; 12 is the kernel's internal scale, no op's. */
    static const char *const ops[] = {
        "Neg",      "Abs",  "Relu",      "Exp",   "Log",   "Sqrt",  "Reciprocal", "Sigmoid", "Tanh",
        "Softplus", "Erf",  "LeakyRelu", NULL,    "Cos",   "Sin",   "Tan",        "Acos",    "Asin",
        "Atan",     "Cosh", "Sinh",      "Asinh", "Acosh", "Atanh", "Round",      "Sign"};
    for (int i = 0; i < (int)(sizeof ops / sizeof ops[0]); i++)
        if (ops[i] && !strcmp(op, ops[i]))
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
                                      "LeakyReluGrad", "Min", "Max", "PRelu"};
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
    if (node->n_inputs != 2 || node->n_outputs != 1 || in[0].dtype != in[1].dtype)
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "is not a comparison");
    cl_kernel kernel = NULL;
    switch (in[0].dtype) {
    case SES_DRV_DTYPE_F32: kernel = device->kernels[OCL_K_COMPARE]; break;
    case SES_DRV_DTYPE_F64: kernel = device->xkernels[OCL_X_COMPARE_F64]; break;
    case SES_DRV_DTYPE_I32: kernel = device->xkernels[OCL_X_COMPARE_I32]; break;
    case SES_DRV_DTYPE_I64: kernel = device->xkernels[OCL_X_COMPARE_I64]; break;
    case SES_DRV_DTYPE_U8: kernel = device->xkernels[OCL_X_COMPARE_U8]; break;
    case SES_DRV_DTYPE_BOOL: /* bool is not ordered: Equal only */
        kernel = cop == 0 ? device->xkernels[OCL_X_COMPARE_U8] : NULL;
        break;
    default: break;
    }
    if (!kernel)
        return ocl_node_fail(device, node, SES_DRV_UNIMPLEMENTED,
                             "%s of dtype %" PRIu32 " is not implemented", node->op,
                             in[0].dtype);
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
    return ocl_run_kernel(device, node, kernel, n, &a);
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

/* Cast between f32 and i32, i64, u8, bool, f64 (the last only with cl_khr_fp64). */
static int32_t ocl_k_cast(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    static const struct {
        uint32_t from, to;
        int kernel; /* OCL_K_*, or OCL_X_* + OCL_K_COUNT */
    } pairs[] = {
        {SES_DRV_DTYPE_F32, SES_DRV_DTYPE_F64, OCL_K_COUNT + OCL_X_CAST_F32_F64},
        {SES_DRV_DTYPE_F64, SES_DRV_DTYPE_F32, OCL_K_COUNT + OCL_X_CAST_F64_F32},
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
    if (k >= OCL_K_COUNT)
        return ocl_run_x(device, node, k - OCL_K_COUNT, n, &a);
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
    /* The kernel's op codes, in the order of its comment. */
    static const char *const ops[] = {
        "ReduceSum",    "ReduceMean",      "ReduceMax",      "",
        "ReduceMin",    "ReduceProd",      "ReduceL1",       "ReduceL2",
        "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};
    int op = 0;
    while (op < (int)(sizeof ops / sizeof ops[0]) - 1 && strcmp(node->op, ops[op]))
        op++;
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
    if ((op == 2 || op == 4) && nred == 0 && nout > 0)
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                             "%s over an empty axis has no value", node->op);
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
                  : !strcmp(node->op, "Hardmax")       ? 4
                                                       : 3;
    if ((st = ocl_need_attr(device, node, "axis", ocl_attr_int(node, "axis", &axis))) !=
        SES_DRV_OK)
        return st;
    const ocl_arg_t *y = &out[0];
    const int grad = mode == 2 || mode == 3;
    const ocl_arg_t *b = grad ? &in[1] : &in[0];
    if (grad != (node->n_inputs == 2) || !ocl_same_shape(&in[0], y) || !ocl_same_shape(b, y))
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
    cl_int sl = last != 0, is_min = !strcmp(node->op, "ArgMin");
    OCL_ARG(&a, x->buf->mem);
    OCL_ARG(&a, xo);
    OCL_ARG(&a, y->buf->mem);
    OCL_ARG(&a, yo);
    OCL_ARG(&a, outer);
    OCL_ARG(&a, n);
    OCL_ARG(&a, inner);
    OCL_ARG(&a, sl);
    OCL_ARG(&a, is_min);
    return ocl_run(device, node, OCL_K_ARGMAX, outer * inner, &a);
}

/* ---------------------------------------------------------------------------------------------
 * GEMM through CLBlast
 * ------------------------------------------------------------------------------------------- */

static int32_t ocl_blast_fail(ses_drv_device_t *device, const ses_drv_node_t *node,
                              CLBlastStatusCode s) {
    return ocl_node_fail(device, node, SES_DRV_INTERNAL, "the CLBlast GEMM failed: status %d (%s)",
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

/* ocl_sgemm in f32 or, with @p f64, CLBlastDgemm. */
static CLBlastStatusCode ocl_gemm(ses_drv_device_t *device, int f64, int ta, int tb, size_t m,
                                  size_t n, size_t k, double alpha, cl_mem a, size_t ao, cl_mem b,
                                  size_t bo, double beta, cl_mem y, size_t yo) {
    if (!f64)
        return ocl_sgemm(device, ta, tb, m, n, k, (float)alpha, a, ao, b, bo, (float)beta, y, yo);
    return CLBlastDgemm(CLBlastLayoutRowMajor, ta ? CLBlastTransposeYes : CLBlastTransposeNo,
                        tb ? CLBlastTransposeYes : CLBlastTransposeNo, m, n, k, alpha, a, ao,
                        ta ? m : k, b, bo, tb ? k : n, beta, y, yo, n, &device->queue, NULL);
}

static int32_t ocl_k_matmul(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
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
 * SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss, and their gradients (one pair of
 * kernels, told apart by an nll flag)
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

static int32_t ocl_sce_loss(ses_drv_device_t *device, const ses_drv_launch_t *launch, cl_int nll) {
    ocl_arg_t in[3], out[2];
    ocl_sce_t g;
    ocl_args_t a = {0};
    int32_t st;

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
    OCL_ARG(&a, nll);
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

static int32_t ocl_k_sce(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    (void)state;
    return ocl_sce_loss(device, launch, 0);
}

static int32_t ocl_k_nll(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    (void)state;
    return ocl_sce_loss(device, launch, 1);
}

static int32_t ocl_sce_grad(ses_drv_device_t *device, const ses_drv_launch_t *launch, cl_int nll) {
    ocl_arg_t in[4], out[1];
    ocl_sce_t g;
    ocl_args_t a = {0};
    int32_t st;

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
    OCL_ARG(&a, nll);
    return ocl_run(device, node, OCL_K_SCE_GRAD, out[0].count, &a);
}

static int32_t ocl_k_sce_grad(ses_drv_device_t *device, void *state,
                              const ses_drv_launch_t *launch) {
    (void)state;
    return ocl_sce_grad(device, launch, 0);
}

static int32_t ocl_k_nll_grad(ses_drv_device_t *device, void *state,
                              const ses_drv_launch_t *launch) {
    (void)state;
    return ocl_sce_grad(device, launch, 1);
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
 * The CNN ops: Conv (im2col and CLBlast), ConvGrad (col2im), the pools and their gradients,
 * BatchNormalization (inference), Dropout's mask, Pad, Clip, Split, Shape, ConstantOfShape and
 * Range. Window attributes come normalized from the host (DRV-54); every coordinate a kernel
 * reaches is checked against the input's dims on the device, so nothing is read outside it.
 * ------------------------------------------------------------------------------------------- */

#define OCL_SPATIAL_MAX (OCL_MAX_RANK - 2)
#define OCL_SCRATCH_BYTES (UINT64_C(64) << 20) /* im2col columns per chunk of images */

/* Mirrors win_t in ocl_kernels.cl. */
typedef struct ocl_win {
    cl_long k[OCL_SPATIAL_MAX], s[OCL_SPATIAL_MAX], d[OCL_SPATIAL_MAX];
    cl_long pb[OCL_SPATIAL_MAX], pe[OCL_SPATIAL_MAX];
    cl_long in[OCL_SPATIAL_MAX], out[OCL_SPATIAL_MAX];
    cl_long k_count, in_count, out_count;
    cl_int n;
} ocl_win_t;

/* Mirrors pad_t in ocl_kernels.cl. */
typedef struct ocl_pad {
    cl_long odims[OCL_MAX_RANK];
    cl_long idims[OCL_MAX_RANK];
    cl_long begin[OCL_MAX_RANK];
    cl_int rank;
    cl_int mode;
} ocl_pad_t;

/*
 * Reads the window of a pool or convolution from @p x ([N, C, in...]) to @p y ([N, M, out...]):
 * ranks agree and are at least 3, N agrees, the four attributes have one entry per spatial dim
 * (pads two), kernel, strides and dilations >= 1 and pads >= 0.
 */
static int32_t ocl_read_window(ses_drv_device_t *device, const ses_drv_node_t *node,
                               const ocl_arg_t *x, const ocl_arg_t *y, ocl_win_t *w) {
    int64_t k[OCL_SPATIAL_MAX], s[OCL_SPATIAL_MAX], d[OCL_SPATIAL_MAX];
    int64_t pads[2 * OCL_SPATIAL_MAX];
    uint32_t nk = 0, ns = 0, nd = 0, np = 0;
    int32_t st;

    if (x->rank < 3 || y->rank != x->rank || y->dims[0] != x->dims[0])
        return ocl_shape_fail(device, node, "expected [N, C, spatial...] in and out", x, y);
    memset(w, 0, sizeof *w);
    w->n = (cl_int)(x->rank - 2);
    if ((st = ocl_attr_ints_max(device, node, "kernel_shape", k, OCL_SPATIAL_MAX, &nk)) ||
        (st = ocl_attr_ints_max(device, node, "strides", s, OCL_SPATIAL_MAX, &ns)) ||
        (st = ocl_attr_ints_max(device, node, "dilations", d, OCL_SPATIAL_MAX, &nd)) ||
        (st = ocl_attr_ints_max(device, node, "pads", pads, 2 * OCL_SPATIAL_MAX, &np)))
        return st;
    if (nk != (uint32_t)w->n || ns != (uint32_t)w->n || nd != (uint32_t)w->n ||
        np != 2 * (uint32_t)w->n)
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                             "kernel_shape, strides, dilations and pads have %" PRIu32 ", %" PRIu32
                             ", %" PRIu32 " and %" PRIu32 " entries; the input has %d spatial dims",
                             nk, ns, nd, np, (int)w->n);
    w->k_count = w->in_count = w->out_count = 1;
    for (cl_int i = 0; i < w->n; i++) {
        w->k[i] = k[i];
        w->s[i] = s[i];
        w->d[i] = d[i];
        w->pb[i] = pads[i];
        w->pe[i] = pads[w->n + i];
        w->in[i] = x->dims[2 + i];
        w->out[i] = y->dims[2 + i];
        if (k[i] < 1 || s[i] < 1 || d[i] < 1 || w->pb[i] < 0 || w->pe[i] < 0 || k[i] > INT32_MAX ||
            s[i] > INT32_MAX || d[i] > INT32_MAX || w->pb[i] > INT32_MAX || w->pe[i] > INT32_MAX)
            return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                 "window attributes out of range along spatial dim %d: kernel "
                                 "%" PRId64 ", stride %" PRId64 ", dilation %" PRId64
                                 ", pads %" PRId64 " and %" PRId64,
                                 (int)i, k[i], s[i], d[i], (int64_t)w->pb[i], (int64_t)w->pe[i]);
        w->k_count *= w->k[i];
        w->in_count *= w->in[i];
        w->out_count *= w->out[i];
    }
    return SES_DRV_OK;
}

/* Whether the column matrix is the image itself: 1x1 kernel, stride 1, no padding. */
static int ocl_col_is_image(const ocl_win_t *w) {
    for (cl_int i = 0; i < w->n; i++)
        if (w->k[i] != 1 || w->s[i] != 1 || w->pb[i] || w->pe[i] || w->in[i] != w->out[i])
            return 0;
    return 1;
}

typedef struct ocl_conv {
    ocl_win_t w;
    int64_t batch, c, m, group, cg, mg, kdim; /* kdim = cg * k_count */
    uint64_t chunk;                           /* images per im2col chunk */
    int f64;                                  /* f64 rather than f32 */
    uint32_t esize;
} ocl_conv_t;

/* Checks X, W and Y (the convolution's output, or dy) against each other and the attributes. */
static int32_t ocl_conv_check(ses_drv_device_t *device, const ses_drv_node_t *node,
                              const ocl_arg_t *x, const ocl_arg_t *wt, const ocl_arg_t *y,
                              ocl_conv_t *sh) {
    int32_t st;

    if ((st = ocl_read_window(device, node, x, y, &sh->w)) != SES_DRV_OK)
        return st;
    if ((st = ocl_need_attr(device, node, "group", ocl_attr_int(node, "group", &sh->group))) !=
        SES_DRV_OK)
        return st;
    sh->batch = x->dims[0];
    sh->c = x->dims[1];
    sh->m = y->dims[1];
    int ok = wt->rank == x->rank && sh->group >= 1 && wt->dims[0] == sh->m &&
             sh->c % sh->group == 0 && sh->m % sh->group == 0 && wt->dims[1] == sh->c / sh->group;
    for (cl_int i = 0; ok && i < sh->w.n; i++)
        ok = wt->dims[2 + i] == sh->w.k[i];
    if (!ok)
        return ocl_shape_fail(device, node, "X and W do not fit a convolution with this group", x,
                              wt);
    sh->cg = sh->c / sh->group;
    sh->mg = sh->m / sh->group;
    sh->kdim = sh->cg * sh->w.k_count;
    sh->f64 = x->dtype == SES_DRV_DTYPE_F64;
    sh->esize = x->esize;
    uint64_t per_image =
        (uint64_t)sh->c * (uint64_t)sh->w.k_count * (uint64_t)sh->w.out_count * sh->esize;
    uint64_t limit =
        OCL_SCRATCH_BYTES < device->info->max_alloc ? OCL_SCRATCH_BYTES : device->info->max_alloc;
    if (per_image > device->info->max_alloc)
        return ocl_node_fail(device, node, SES_DRV_OUT_OF_MEMORY,
                             "one image's column matrix takes %" PRIu64
                             " bytes, more than the device's largest allocation (%" PRIu64 ")",
                             per_image, device->info->max_alloc);
    sh->chunk = per_image ? limit / per_image : (uint64_t)sh->batch;
    if (sh->chunk < 1)
        sh->chunk = 1;
    if (sh->chunk > (uint64_t)sh->batch)
        sh->chunk = (uint64_t)sh->batch;
    return SES_DRV_OK;
}

/* A scratch buffer of @p bytes (at least 1) for one launch. */
static int32_t ocl_scratch(ses_drv_device_t *device, const ses_drv_node_t *node, uint64_t bytes,
                           cl_mem *out) {
    cl_int err = CL_SUCCESS;
    *out =
        clCreateBuffer(device->context, CL_MEM_READ_WRITE, (size_t)(bytes ? bytes : 1), NULL, &err);
    if (!*out || err != CL_SUCCESS) {
        *out = NULL;
        return ocl_node_fail(device, node, SES_DRV_OUT_OF_MEMORY,
                             "cannot allocate %" PRIu64 " bytes of scratch memory: %s", bytes,
                             ocl__error_name(err));
    }
    return SES_DRV_OK;
}

/* im2col of @p planes whole (image, channel) planes of x, from element offset @p xo, into the
 * column buffer. */
static int32_t ocl_im2col(ses_drv_device_t *device, const ses_drv_node_t *node, int f64, cl_mem x,
                          cl_ulong xo, uint64_t planes, const ocl_win_t *w, cl_mem col) {
    ocl_args_t a = {0};
    cl_ulong co = 0, total = planes * (uint64_t)w->k_count * (uint64_t)w->out_count;
    OCL_ARG(&a, x);
    OCL_ARG(&a, xo);
    OCL_ARG(&a, col);
    OCL_ARG(&a, co);
    OCL_ARG(&a, total);
    OCL_ARG(&a, *w);
    return ocl_run_x(device, node, f64 ? OCL_X_IM2COL_F64 : OCL_X_IM2COL, total, &a);
}

/* Waits for the GEMMs queued under the device lock, unlocks it and reports the first failure. */
static int32_t ocl_blast_finish(ses_drv_device_t *device, const ses_drv_node_t *node,
                                CLBlastStatusCode s) {
    cl_int err = clFinish(device->queue);
    pthread_mutex_unlock(&device->lock);
    if (s != CLBlastSuccess)
        return ocl_blast_fail(device, node, s);
    if (err != CL_SUCCESS)
        return ocl_node_fail(device, node, SES_DRV_INTERNAL, "clFinish failed: %s",
                             ocl__error_name(err));
    return SES_DRV_OK;
}

static int32_t ocl_k_conv(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[3], out[1];
    ocl_conv_t sh;
    cl_mem col = NULL;
    int32_t st;

    (void)state;
    if ((st = ocl_prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const ocl_arg_t *x = &in[0], *wt = &in[1], *y = &out[0];
    const ocl_arg_t *b = node->n_inputs == 3 ? &in[2] : NULL;
    if ((st = ocl_conv_check(device, node, x, wt, y, &sh)) != SES_DRV_OK)
        return st;
    if (b && (b->rank != 1 || b->dims[0] != sh.m))
        return ocl_shape_fail(device, node, "B must have one entry per filter", b, wt);
    if (!y->count)
        return SES_DRV_OK;
    const uint64_t P = (uint64_t)sh.w.out_count;
    double beta = 0.0;
    if (b) {
        /* y starts as the bias; the GEMMs add the products onto it. */
        ocl_args_t a = {0};
        cl_ulong bo = b->off, yo = y->off, n = y->count, inner = P, C = (cl_ulong)sh.m;
        OCL_ARG(&a, b->buf->mem);
        OCL_ARG(&a, bo);
        OCL_ARG(&a, y->buf->mem);
        OCL_ARG(&a, yo);
        OCL_ARG(&a, n);
        OCL_ARG(&a, inner);
        OCL_ARG(&a, C);
        if ((st = ocl_run_x(device, node, sh.f64 ? OCL_X_CHANNEL_FILL_F64 : OCL_X_CHANNEL_FILL, n,
                            &a)) != SES_DRV_OK)
            return st;
        beta = 1.0;
    }
    if (sh.kdim == 0)
        return b ? SES_DRV_OK : ocl_fill_zero(device, node, y);
    const int direct = ocl_col_is_image(&sh.w);
    const uint64_t plane_cols = (uint64_t)sh.w.k_count * P; /* one channel's column rows */
    if (!direct &&
        (st = ocl_scratch(device, node, sh.chunk * (uint64_t)sh.c * plane_cols * sh.esize, &col)) !=
            SES_DRV_OK)
        return st;
    for (uint64_t n0 = 0; n0 < (uint64_t)sh.batch && st == SES_DRV_OK; n0 += sh.chunk) {
        uint64_t nb = (uint64_t)sh.batch - n0 < sh.chunk ? (uint64_t)sh.batch - n0 : sh.chunk;
        if (!direct && (st = ocl_im2col(device, node, sh.f64, x->buf->mem,
                                        x->off + n0 * (uint64_t)sh.c * (uint64_t)sh.w.in_count,
                                        nb * (uint64_t)sh.c, &sh.w, col)) != SES_DRV_OK)
            break;
        CLBlastStatusCode s = CLBlastSuccess;
        pthread_mutex_lock(&device->lock);
        for (uint64_t n = 0; n < nb && s == CLBlastSuccess; n++)
            for (int64_t g = 0; g < sh.group && s == CLBlastSuccess; g++) {
                uint64_t plane = n * (uint64_t)sh.c + (uint64_t)(g * sh.cg);
                cl_mem bm = direct ? x->buf->mem : col;
                size_t bo =
                    direct
                        ? (size_t)(x->off + (n0 * (uint64_t)sh.c + plane) * (uint64_t)sh.w.in_count)
                        : (size_t)(plane * plane_cols);
                size_t yo =
                    (size_t)(y->off + ((n0 + n) * (uint64_t)sh.m + (uint64_t)(g * sh.mg)) * P);
                s = ocl_gemm(device, sh.f64, 0, 0, (size_t)sh.mg, (size_t)P, (size_t)sh.kdim, 1.0,
                             wt->buf->mem, (size_t)(wt->off + (uint64_t)(g * sh.mg * sh.kdim)), bm,
                             bo, beta, y->buf->mem, yo);
            }
        st = ocl_blast_finish(device, node, s);
    }
    if (col)
        clReleaseMemObject(col);
    return st;
}

/* ConvGrad: inputs dy, X, W; input 0 gives dX (col2im of W^T dy), 1 gives dW (dy col^T). */
static int32_t ocl_k_conv_grad(ses_drv_device_t *device, void *state,
                               const ses_drv_launch_t *launch) {
    ocl_arg_t in[3], out[1];
    ocl_conv_t sh;
    cl_mem col = NULL;
    int64_t input = 0;
    int32_t st;

    (void)state;
    if ((st = ocl_prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const ocl_arg_t *dy = &in[0], *x = &in[1], *wt = &in[2], *g_out = &out[0];
    if ((st = ocl_conv_check(device, node, x, wt, dy, &sh)) != SES_DRV_OK ||
        (st = ocl_need_attr(device, node, "input", ocl_attr_int(node, "input", &input))) !=
            SES_DRV_OK)
        return st;
    if ((input != 0 && input != 1) || !ocl_same_shape(g_out, input ? wt : x))
        return ocl_shape_fail(device, node,
                              "the output must be shaped as X (input 0) or W (input 1)", g_out,
                              input ? wt : x);
    if (!g_out->count)
        return SES_DRV_OK;
    if (input == 1 || !dy->count || !sh.kdim)
        if ((st = ocl_fill_zero(device, node, g_out)) != SES_DRV_OK)
            return st;
    if (!dy->count || !sh.kdim)
        return SES_DRV_OK;
    const uint64_t P = (uint64_t)sh.w.out_count, C = (uint64_t)sh.c;
    const uint64_t plane_cols = (uint64_t)sh.w.k_count * P;
    const int direct = ocl_col_is_image(&sh.w);
    if (!direct &&
        (st = ocl_scratch(device, node, sh.chunk * C * plane_cols * sh.esize, &col)) != SES_DRV_OK)
        return st;
    for (uint64_t n0 = 0; n0 < (uint64_t)sh.batch && st == SES_DRV_OK; n0 += sh.chunk) {
        uint64_t nb = (uint64_t)sh.batch - n0 < sh.chunk ? (uint64_t)sh.batch - n0 : sh.chunk;
        uint64_t x0 = n0 * C * (uint64_t)sh.w.in_count; /* the chunk's first element of X */
        if (input == 1 && !direct &&
            (st = ocl_im2col(device, node, sh.f64, x->buf->mem, x->off + x0, nb * C, &sh.w, col)) !=
                SES_DRV_OK)
            break;
        CLBlastStatusCode s = CLBlastSuccess;
        pthread_mutex_lock(&device->lock);
        for (uint64_t n = 0; n < nb && s == CLBlastSuccess; n++)
            for (int64_t g = 0; g < sh.group && s == CLBlastSuccess; g++) {
                uint64_t plane = n * C + (uint64_t)(g * sh.cg);
                size_t dyo =
                    (size_t)(dy->off + ((n0 + n) * (uint64_t)sh.m + (uint64_t)(g * sh.mg)) * P);
                size_t wo = (size_t)(wt->off + (uint64_t)(g * sh.mg * sh.kdim));
                cl_mem cm = direct ? (input ? x->buf->mem : g_out->buf->mem) : col;
                size_t co = direct ? (size_t)((input ? x->off : g_out->off) + x0 +
                                              plane * (uint64_t)sh.w.in_count)
                                   : (size_t)(plane * plane_cols);
                if (input == 1) /* dW_g[mg, kdim] += dy_g[mg, P] * col[kdim, P]^T */
                    s = ocl_gemm(device, sh.f64, 0, 1, (size_t)sh.mg, (size_t)sh.kdim, (size_t)P,
                                 1.0, dy->buf->mem, dyo, cm, co, 1.0, g_out->buf->mem,
                                 (size_t)(g_out->off + (uint64_t)(g * sh.mg * sh.kdim)));
                else /* col[kdim, P] = W_g[mg, kdim]^T * dy_g[mg, P] */
                    s = ocl_gemm(device, sh.f64, 1, 0, (size_t)sh.kdim, (size_t)P, (size_t)sh.mg,
                                 1.0, wt->buf->mem, wo, dy->buf->mem, dyo, 0.0, cm, co);
            }
        st = ocl_blast_finish(device, node, s);
        if (st == SES_DRV_OK && input == 0 && !direct) {
            ocl_args_t a = {0};
            cl_ulong co = 0, xo = g_out->off + x0, total = nb * C * (uint64_t)sh.w.in_count;
            OCL_ARG(&a, col);
            OCL_ARG(&a, co);
            OCL_ARG(&a, g_out->buf->mem);
            OCL_ARG(&a, xo);
            OCL_ARG(&a, total);
            OCL_ARG(&a, sh.w);
            st = ocl_run_x(device, node, sh.f64 ? OCL_X_COL2IM_F64 : OCL_X_COL2IM, total, &a);
        }
    }
    if (col)
        clReleaseMemObject(col);
    return st;
}

/* MaxPool, AveragePool (input X) and MaxPoolGrad (dy, X), AveragePoolGrad (dy). */
static int32_t ocl_k_pool(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[2], out[1];
    ocl_win_t w;
    int64_t include_pad = 0;
    int32_t st;

    (void)state;
    if ((st = ocl_prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const int avg = !strncmp(node->op, "AveragePool", 11);
    const int grad = strstr(node->op, "Grad") != NULL;
    /* The forward pool's input and output. */
    const ocl_arg_t *fx = grad ? &out[0] : &in[0], *fy = grad ? &in[0] : &out[0];
    if ((st = ocl_read_window(device, node, fx, fy, &w)) != SES_DRV_OK)
        return st;
    if (fx->dims[1] != fy->dims[1] || (grad && !avg && !ocl_same_shape(&in[1], &out[0])))
        return ocl_shape_fail(device, node, "the pool's input and output do not agree", fx, fy);
    if (avg &&
        (st = ocl_need_attr(device, node, "count_include_pad",
                            ocl_attr_int(node, "count_include_pad", &include_pad))) != SES_DRV_OK)
        return st;
    cl_int op = avg, inc = include_pad != 0;
    const int f64 = fx->dtype == SES_DRV_DTYPE_F64;
    ocl_args_t a = {0};
    if (!grad) {
        cl_ulong xo = fx->off, yo = fy->off, total = fy->count;
        OCL_ARG(&a, fx->buf->mem);
        OCL_ARG(&a, xo);
        OCL_ARG(&a, fy->buf->mem);
        OCL_ARG(&a, yo);
        OCL_ARG(&a, total);
        OCL_ARG(&a, w);
        OCL_ARG(&a, op);
        OCL_ARG(&a, inc);
        return ocl_run_x(device, node, f64 ? OCL_X_POOL_F64 : OCL_X_POOL, total, &a);
    }
    if (!fy->count)
        return ocl_fill_zero(device, node, fx);
    const ocl_arg_t *x = avg ? &in[0] : &in[1]; /* AveragePoolGrad reads no X */
    cl_ulong dyo = fy->off, xo = x->off, dxo = fx->off;
    cl_ulong planes = (cl_ulong)fx->dims[0] * (cl_ulong)fx->dims[1];
    OCL_ARG(&a, fy->buf->mem);
    OCL_ARG(&a, dyo);
    OCL_ARG(&a, x->buf->mem);
    OCL_ARG(&a, xo);
    OCL_ARG(&a, fx->buf->mem);
    OCL_ARG(&a, dxo);
    OCL_ARG(&a, planes);
    OCL_ARG(&a, w);
    OCL_ARG(&a, op);
    OCL_ARG(&a, inc);
    return ocl_run_x(device, node, f64 ? OCL_X_POOL_GRAD_F64 : OCL_X_POOL_GRAD, planes, &a);
}

static int32_t ocl_k_batch_norm(ses_drv_device_t *device, void *state,
                                const ses_drv_launch_t *launch) {
    ocl_arg_t in[5], out[1];
    double eps = 0.0;
    int32_t st;

    (void)state;
    if ((st = ocl_prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = ocl_need_attr(device, node, "epsilon", ocl_attr_float(node, "epsilon", &eps))) !=
        SES_DRV_OK)
        return st;
    const ocl_arg_t *x = &in[0], *y = &out[0];
    int ok = node->n_inputs == 5 && x->rank >= 2 && ocl_same_shape(x, y);
    for (uint32_t i = 1; ok && i < 5; i++)
        ok = in[i].rank == 1 && in[i].dims[0] == x->dims[1];
    if (!ok)
        return ocl_shape_fail(
            device, node, "X must be [N, C, ...] with Y its shape and each parameter [C]", x, y);
    if (!y->count)
        return SES_DRV_OK;
    ocl_args_t a = {0};
    cl_ulong C = (cl_ulong)x->dims[1], n = y->count, inner = n / ((cl_ulong)x->dims[0] * C);
    cl_ulong off[6] = {in[0].off, in[1].off, in[2].off, in[3].off, in[4].off, y->off};
    float feps = (float)eps;
    for (uint32_t i = 0; i < 5; i++) {
        OCL_ARG(&a, in[i].buf->mem);
        OCL_ARG(&a, off[i]);
    }
    OCL_ARG(&a, y->buf->mem);
    OCL_ARG(&a, off[5]);
    OCL_ARG(&a, n);
    OCL_ARG(&a, inner);
    OCL_ARG(&a, C);
    if (x->dtype == SES_DRV_DTYPE_F64) {
        OCL_ARG(&a, eps);
        return ocl_run_x(device, node, OCL_X_BATCH_NORM_F64, n, &a);
    }
    OCL_ARG(&a, feps);
    return ocl_run_x(device, node, OCL_X_BATCH_NORM, n, &a);
}

/* Dropout in inference: the data unchanged, and a mask of all true. */
static int32_t ocl_k_dropout(ses_drv_device_t *device, void *state,
                             const ses_drv_launch_t *launch) {
    ocl_arg_t in[1], out[2];
    const cl_uchar one = 1;
    int32_t st;
    cl_int err = CL_SUCCESS;

    (void)state;
    if ((st = ocl_prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if (node->n_outputs != 2 || !ocl_same_shape(&in[0], &out[0]) ||
        !ocl_same_shape(&in[0], &out[1]) || out[1].esize != 1 || in[0].bytes != out[0].bytes)
        return ocl_shape_fail(device, node, "the output and mask must have the data's shape",
                              &in[0], &out[1]);
    if (!in[0].count)
        return SES_DRV_OK;
    pthread_mutex_lock(&device->lock);
    err =
        clEnqueueCopyBuffer(device->queue, in[0].buf->mem, out[0].buf->mem, (size_t)in[0].byte_off,
                            (size_t)out[0].byte_off, (size_t)out[0].bytes, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clEnqueueFillBuffer(device->queue, out[1].buf->mem, &one, 1, (size_t)out[1].byte_off,
                                  (size_t)out[1].bytes, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clFinish(device->queue);
    pthread_mutex_unlock(&device->lock);
    if (err != CL_SUCCESS)
        return ocl_node_fail(device, node, SES_DRV_INTERNAL, "copying the data failed: %s",
                             ocl__error_name(err));
    return SES_DRV_OK;
}

/* Reads pads and mode for data @p x padded into @p y (Pad, and PadGrad backwards) into @p pd. */
static int32_t ocl_pad_setup(ses_drv_device_t *device, const ses_drv_node_t *node,
                             const ocl_arg_t *x, const ocl_arg_t *y, ocl_pad_t *pd) {
    int64_t pads[2 * OCL_MAX_RANK], mode = 0;
    uint32_t np = 0;
    int32_t st;

    if ((st = ocl_attr_ints_max(device, node, "pads", pads, 2 * OCL_MAX_RANK, &np)) ||
        (st = ocl_need_attr(device, node, "mode", ocl_attr_int(node, "mode", &mode))))
        return st;
    int ok =
        np == 2 * x->rank && y->rank == x->rank && mode >= 0 && mode <= 2 && y->esize == x->esize;
    memset(pd, 0, sizeof *pd);
    for (uint32_t d = 0; ok && d < x->rank; d++) {
        pd->odims[d] = y->dims[d];
        pd->idims[d] = x->dims[d];
        pd->begin[d] = pads[d];
        ok = x->dims[d] + pads[d] + pads[x->rank + d] == y->dims[d] &&
             (mode != 1 || x->dims[d] > 0 || y->dims[d] == 0);
    }
    if (!ok)
        return ocl_shape_fail(device, node, "pads and mode do not take the data to the output", x,
                              y);
    pd->rank = (cl_int)x->rank;
    pd->mode = (cl_int)mode;
    return SES_DRV_OK;
}

static int32_t ocl_k_pad(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[2], out[1];
    ocl_pad_t pd;
    int32_t st;

    (void)state;
    if ((st = ocl_prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const ocl_arg_t *x = &in[0], *y = &out[0];
    const ocl_arg_t *c = node->n_inputs == 2 ? &in[1] : NULL;
    if ((st = ocl_pad_setup(device, node, x, y, &pd)) != SES_DRV_OK)
        return st;
    if (c && (c->count != 1 || c->esize != x->esize))
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                             "constant_value must hold one element of the data's dtype");
    if (!y->count)
        return SES_DRV_OK;
    int k = x->esize == 4 ? OCL_X_PAD4 : x->esize == 8 ? OCL_X_PAD8 : -1;
    if (k < 0)
        return ocl_node_fail(device, node, SES_DRV_UNIMPLEMENTED,
                             "Pad of %" PRIu32 "-byte elements is not implemented", x->esize);
    ocl_args_t a = {0};
    cl_ulong xo = x->off, co = c ? c->off : 0, yo = y->off, n = y->count;
    cl_int has_c = c != NULL;
    cl_mem cm = c ? c->buf->mem : x->buf->mem;
    OCL_ARG(&a, x->buf->mem);
    OCL_ARG(&a, xo);
    OCL_ARG(&a, cm);
    OCL_ARG(&a, co);
    OCL_ARG(&a, has_c);
    OCL_ARG(&a, y->buf->mem);
    OCL_ARG(&a, yo);
    OCL_ARG(&a, n);
    OCL_ARG(&a, pd);
    return ocl_run_x(device, node, k, n, &a);
}

/* PadGrad: one work item per element of dx, gathering the elements of dy Pad read from it. */
static int32_t ocl_k_pad_grad(ses_drv_device_t *device, void *state,
                              const ses_drv_launch_t *launch) {
    ocl_arg_t in[1], out[1];
    ocl_pad_t pd;
    ocl_args_t a = {0};
    int32_t st;

    (void)state;
    if ((st = ocl_prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const ocl_arg_t *dy = &in[0], *dx = &out[0];
    if ((st = ocl_pad_setup(device, node, dx, dy, &pd)) != SES_DRV_OK)
        return st;
    cl_ulong dyo = dy->off, dxo = dx->off, n = dx->count;
    OCL_ARG(&a, dy->buf->mem);
    OCL_ARG(&a, dyo);
    OCL_ARG(&a, dx->buf->mem);
    OCL_ARG(&a, dxo);
    OCL_ARG(&a, n);
    OCL_ARG(&a, pd);
    return ocl_run_x(device, node,
                     dx->dtype == SES_DRV_DTYPE_F64 ? OCL_X_PAD_GRAD_F64 : OCL_X_PAD_GRAD, n, &a);
}

static int32_t ocl_k_clip(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[3], out[1];
    int64_t has_min = 0, has_max = 0;
    int32_t st;

    (void)state;
    if ((st = ocl_prepare(device, launch, 1, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = ocl_need_attr(device, node, "has_min", ocl_attr_int(node, "has_min", &has_min))) ||
        (st = ocl_need_attr(device, node, "has_max", ocl_attr_int(node, "has_max", &has_max))))
        return st;
    has_min = has_min != 0;
    has_max = has_max != 0;
    int ok = (int64_t)node->n_inputs == 1 + has_min + has_max && ocl_same_shape(&in[0], &out[0]);
    for (uint32_t i = 1; ok && i < node->n_inputs; i++)
        ok = in[i].count == 1 && in[i].dtype == in[0].dtype;
    if (!ok)
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                             "expected the input, one element per bound given (has_min %" PRId64
                             ", has_max %" PRId64
                             ") and an output of the input's shape; got %" PRIu32 " inputs",
                             has_min, has_max, node->n_inputs);
    int k = in[0].dtype == SES_DRV_DTYPE_F32   ? OCL_X_CLIP_F32
            : in[0].dtype == SES_DRV_DTYPE_I32 ? OCL_X_CLIP_I32
            : in[0].dtype == SES_DRV_DTYPE_I64 ? OCL_X_CLIP_I64
            : in[0].dtype == SES_DRV_DTYPE_F64 ? OCL_X_CLIP_F64
                                               : -1;
    if (k < 0)
        return ocl_node_fail(device, node, SES_DRV_UNIMPLEMENTED,
                             "Clip of dtype %" PRIu32 " is not implemented", in[0].dtype);
    const ocl_arg_t *lo = has_min ? &in[1] : &in[0], *hi = has_max ? &in[1 + has_min] : &in[0];
    ocl_args_t a = {0};
    cl_ulong xo = in[0].off, loo = lo->off, hio = hi->off, yo = out[0].off, n = out[0].count;
    cl_int hmin = (cl_int)has_min, hmax = (cl_int)has_max;
    OCL_ARG(&a, in[0].buf->mem);
    OCL_ARG(&a, xo);
    OCL_ARG(&a, lo->buf->mem);
    OCL_ARG(&a, loo);
    OCL_ARG(&a, hmin);
    OCL_ARG(&a, hi->buf->mem);
    OCL_ARG(&a, hio);
    OCL_ARG(&a, hmax);
    OCL_ARG(&a, out[0].buf->mem);
    OCL_ARG(&a, yo);
    OCL_ARG(&a, n);
    return ocl_run_x(device, node, k, n, &a);
}

/* Split: one strided copy per output, from its slab of the input along the axis. */
static int32_t ocl_k_split(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[1], out[8];
    int64_t axis = 0, total = 0;
    cl_long xst[OCL_MAX_RANK];
    int32_t st;

    (void)state;
    if ((st = ocl_prepare_n(device, launch, 0, in, out, 8)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = ocl_need_attr(device, node, "axis", ocl_attr_int(node, "axis", &axis))) != SES_DRV_OK)
        return st;
    const ocl_arg_t *x = &in[0];
    int ok = node->n_outputs >= 1 && axis >= 0 && axis < (int64_t)x->rank;
    for (uint32_t k = 0; ok && k < node->n_outputs; k++) {
        const ocl_arg_t *o = &out[k];
        ok = o->rank == x->rank && o->esize == x->esize;
        for (uint32_t d = 0; ok && d < x->rank; d++)
            ok = (int64_t)d == axis || o->dims[d] == x->dims[d];
        total += ok ? o->dims[axis] : 0;
    }
    if (!ok || total != x->dims[axis])
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                             "the outputs do not split the input along axis %" PRId64, axis);
    ocl_strides(x->dims, x->rank, xst);
    int64_t at = 0;
    for (uint32_t k = 0; k < node->n_outputs; k++) {
        const ocl_arg_t *o = &out[k];
        ocl_bcast_t bc;
        ocl_bcast_init(&bc, o);
        memcpy(bc.st[0], xst, sizeof xst);
        ocl_strides(o->dims, o->rank, bc.st[1]);
        if ((st = ocl_strided(device, node, o->esize, x->buf->mem, (cl_long)x->off + at * xst[axis],
                              o->buf->mem, (cl_long)o->off, o->count, &bc)) != SES_DRV_OK)
            return st;
        at += o->dims[axis];
    }
    return SES_DRV_OK;
}

/* Writes @p bytes from @p host at the output; blocking. */
static int32_t ocl_write_out(ses_drv_device_t *device, const ses_drv_node_t *node,
                             const ocl_arg_t *y, const void *host, size_t bytes) {
    cl_int err;
    if (!bytes)
        return SES_DRV_OK;
    pthread_mutex_lock(&device->lock);
    err = clEnqueueWriteBuffer(device->queue, y->buf->mem, CL_TRUE, (size_t)y->byte_off, bytes,
                               host, 0, NULL, NULL);
    pthread_mutex_unlock(&device->lock);
    if (err != CL_SUCCESS)
        return ocl_node_fail(device, node, SES_DRV_INTERNAL, "clEnqueueWriteBuffer failed: %s",
                             ocl__error_name(err));
    return SES_DRV_OK;
}

/* Shape: the dims are in the descriptor, so the output is one buffer write. */
static int32_t ocl_k_shape(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[1], out[1];
    int64_t start = 0, end = 0;
    int32_t st;

    (void)state;
    if ((st = ocl_prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = ocl_need_attr(device, node, "start", ocl_attr_int(node, "start", &start))) ||
        (st = ocl_need_attr(device, node, "end", ocl_attr_int(node, "end", &end))))
        return st;
    const ocl_arg_t *x = &in[0], *y = &out[0];
    if (start < 0 || end < start || end > (int64_t)x->rank || y->rank != 1 ||
        y->dims[0] != end - start || y->dtype != SES_DRV_DTYPE_I64)
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                             "start %" PRId64 " and end %" PRId64 " do not fit rank %" PRIu32
                             " and the output",
                             start, end, x->rank);
    if (end == start)
        return SES_DRV_OK;
    return ocl_write_out(device, node, y, x->dims + start, (size_t)(end - start) * 8);
}

/* ConstantOfShape: a fill with the value's bytes. */
static int32_t ocl_k_constant_of_shape(ses_drv_device_t *device, void *state,
                                       const ses_drv_launch_t *launch) {
    ocl_arg_t in[1], out[1];
    unsigned char pattern[8];
    double f = 0.0;
    int64_t i = 0;
    int32_t st;
    cl_int err;

    (void)state;
    if ((st = ocl_prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const ocl_arg_t *y = &out[0];
    const int is_float = y->dtype == SES_DRV_DTYPE_F32 || y->dtype == SES_DRV_DTYPE_F64;
    if ((st = ocl_need_attr(device, node, "value",
                            is_float ? ocl_attr_float(node, "value", &f)
                                     : ocl_attr_int(node, "value", &i))) != SES_DRV_OK)
        return st;
    switch (y->dtype) {
        case SES_DRV_DTYPE_F32: {
            float v = (float)f;
            memcpy(pattern, &v, 4);
            break;
        }
        case SES_DRV_DTYPE_F64: memcpy(pattern, &f, 8); break;
        case SES_DRV_DTYPE_I32: {
            int32_t v = (int32_t)i;
            memcpy(pattern, &v, 4);
            break;
        }
        case SES_DRV_DTYPE_I64: memcpy(pattern, &i, 8); break;
        case SES_DRV_DTYPE_BOOL: pattern[0] = i != 0; break;
        default:
            return ocl_node_fail(device, node, SES_DRV_UNIMPLEMENTED,
                                 "ConstantOfShape of dtype %" PRIu32 " is not implemented",
                                 y->dtype);
    }
    if (!y->bytes)
        return SES_DRV_OK;
    pthread_mutex_lock(&device->lock);
    err = clEnqueueFillBuffer(device->queue, y->buf->mem, pattern, y->esize, (size_t)y->byte_off,
                              (size_t)y->bytes, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clFinish(device->queue);
    pthread_mutex_unlock(&device->lock);
    if (err != CL_SUCCESS)
        return ocl_node_fail(device, node, SES_DRV_INTERNAL, "clEnqueueFillBuffer failed: %s",
                             ocl__error_name(err));
    return SES_DRV_OK;
}

/* Range: the three scalars are read back, the count checked against the output's (the host
 * sized it at compile time) and the values computed on the host as the CPU driver does, in T,
 * then written: one small transfer each way, and bit-identical results. */
static int32_t ocl_k_range(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[3], out[1];
    unsigned char raw[3][8];
    double f[3];
    int64_t v[3] = {0, 0, 0};
    int32_t st;
    cl_int err = CL_SUCCESS;

    (void)state;
    if ((st = ocl_prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const ocl_arg_t *y = &out[0];
    const uint32_t dt = y->dtype;
    for (uint32_t k = 0; k < 3; k++)
        if (in[k].count != 1 || in[k].dtype != dt)
            return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                 "start, limit and delta must be scalars of the output's dtype");
    pthread_mutex_lock(&device->lock);
    for (uint32_t k = 0; k < 3 && err == CL_SUCCESS; k++)
        err = clEnqueueReadBuffer(device->queue, in[k].buf->mem, CL_TRUE, (size_t)in[k].byte_off,
                                  in[k].esize, raw[k], 0, NULL, NULL);
    pthread_mutex_unlock(&device->lock);
    if (err != CL_SUCCESS)
        return ocl_node_fail(device, node, SES_DRV_INTERNAL, "reading the scalars failed: %s",
                             ocl__error_name(err));
    for (uint32_t k = 0; k < 3; k++) {
        switch (dt) {
            case SES_DRV_DTYPE_F32: {
                float x;
                memcpy(&x, raw[k], 4);
                f[k] = x;
                break;
            }
            case SES_DRV_DTYPE_F64: memcpy(&f[k], raw[k], 8); break;
            case SES_DRV_DTYPE_I32: {
                int32_t x;
                memcpy(&x, raw[k], 4);
                v[k] = x;
                f[k] = (double)x;
                break;
            }
            case SES_DRV_DTYPE_I64:
                memcpy(&v[k], raw[k], 8);
                f[k] = (double)v[k];
                break;
            default:
                return ocl_node_fail(device, node, SES_DRV_UNIMPLEMENTED,
                                     "Range of dtype %" PRIu32 " is not implemented", dt);
        }
    }
    double c = f[2] != 0.0 ? ceil((f[1] - f[0]) / f[2]) : -1.0;
    int64_t count = c > 0 && c < 9.0e15 ? (int64_t)c : 0;
    if (f[2] == 0.0 || y->rank != 1 || y->dims[0] != count)
        return ocl_node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                             "start %g, limit %g, delta %g give %" PRId64
                             " elements, but the output holds %" PRIu64
                             " (did the values change since the plan was compiled?)",
                             f[0], f[1], f[2], count, y->count);
    if (!count)
        return SES_DRV_OK;
    unsigned char *host = malloc((size_t)y->bytes);
    if (!host)
        return ocl_node_fail(device, node, SES_DRV_OUT_OF_MEMORY, "out of host memory");
    for (int64_t q = 0; q < count; q++) {
        switch (dt) {
            case SES_DRV_DTYPE_F32:
                ((float *)(void *)host)[q] = (float)((float)f[0] + (float)q * (float)f[2]);
                break;
            case SES_DRV_DTYPE_F64: ((double *)(void *)host)[q] = f[0] + (double)q * f[2]; break;
            case SES_DRV_DTYPE_I32:
                ((int32_t *)(void *)host)[q] = (int32_t)(v[0] + q * v[2]);
                break;
            default: ((int64_t *)(void *)host)[q] = v[0] + q * v[2]; break;
        }
    }
    st = ocl_write_out(device, node, y, host, (size_t)y->bytes);
    free(host);
    return st;
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
#define PAD(T) E("Pad", T "->" T, ocl_k_pad) E("Pad", T "," T "->" T, ocl_k_pad)
#define CLIP(T)                                                                            \
    E("Clip", T "->" T, ocl_k_clip) E("Clip", T "," T "->" T, ocl_k_clip)                 \
    E("Clip", T "," T "," T "->" T, ocl_k_clip)
#define SPLIT(T)                                                                           \
    E("Split", T "->" T, ocl_k_split) E("Split", T "->" T "," T, ocl_k_split)             \
    E("Split", T "->" T "," T "," T, ocl_k_split)                                         \
    E("Split", T "->" T "," T "," T "," T, ocl_k_split)                                   \
    E("Split", T "->" T "," T "," T "," T "," T, ocl_k_split)                             \
    E("Split", T "->" T "," T "," T "," T "," T "," T, ocl_k_split)                       \
    E("Split", T "->" T "," T "," T "," T "," T "," T "," T, ocl_k_split)                 \
    E("Split", T "->" T "," T "," T "," T "," T "," T "," T "," T, ocl_k_split)
/* The entries that need cl_khr_fp64 (f64 arithmetic), X(op, signature, compute). */
#define OCL_FP64_KERNELS(X)                                                                 \
    X("Cast", "f32->f64", ocl_k_cast) X("Cast", "f64->f32", ocl_k_cast)                     \
    X("Clip", "f64->f64", ocl_k_clip) X("Clip", "f64,f64->f64", ocl_k_clip)                 \
    X("Clip", "f64,f64,f64->f64", ocl_k_clip)                                               \
    X("BatchNormalization", "f64,f64,f64,f64,f64->f64", ocl_k_batch_norm)                   \
    X("Conv", "f64,f64->f64", ocl_k_conv) X("Conv", "f64,f64,f64->f64", ocl_k_conv)         \
    X("ConvGrad", "f64,f64,f64->f64", ocl_k_conv_grad)                                      \
    X("MaxPool", "f64->f64", ocl_k_pool) X("AveragePool", "f64->f64", ocl_k_pool)           \
    X("MaxPoolGrad", "f64,f64->f64", ocl_k_pool) X("AveragePoolGrad", "f64->f64", ocl_k_pool) \
    X("PadGrad", "f64->f64", ocl_k_pad_grad)                                                \
    X("Equal", "f64,f64->bool", ocl_k_compare) X("Greater", "f64,f64->bool", ocl_k_compare) \
    X("Less", "f64,f64->bool", ocl_k_compare)
#define U(OP) E(OP, "f32->f32", ocl_k_unary)
#define B(OP) E(OP, "f32,f32->f32", ocl_k_binary)

static const ses_drv_kernel_t ocl_kernels[] = {
    U("Neg") U("Abs") U("Relu") U("Exp") U("Log") U("Sqrt") U("Reciprocal") U("Sigmoid")
    U("Tanh") U("Softplus") U("Erf") U("LeakyRelu")
    U("Cos") U("Sin") U("Tan") U("Acos") U("Asin") U("Atan") U("Cosh") U("Sinh") U("Asinh")
    U("Acosh") U("Atanh") U("Round") U("Sign")
    B("Add") B("Sub") B("Mul") B("Div") B("Pow") B("Min") B("Max")
    B("ReluGrad") B("SigmoidGrad") B("TanhGrad") B("LeakyReluGrad") B("PRelu")
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
    E("ReduceMin", "f32->f32", ocl_k_reduce)
    E("ReduceProd", "f32->f32", ocl_k_reduce)
    E("ReduceL1", "f32->f32", ocl_k_reduce)
    E("ReduceL2", "f32->f32", ocl_k_reduce)
    E("ReduceLogSum", "f32->f32", ocl_k_reduce)
    E("ReduceLogSumExp", "f32->f32", ocl_k_reduce)
    E("ReduceSumSquare", "f32->f32", ocl_k_reduce)
    E("ReduceSumLike", "f32->f32", ocl_k_reduce_sum_like)
    E("ReduceGrad", "f32->f32", ocl_k_reduce_grad)
    E("Softmax", "f32->f32", ocl_k_softmax)
    E("LogSoftmax", "f32->f32", ocl_k_softmax)
    E("Hardmax", "f32->f32", ocl_k_softmax)
    E("SoftmaxGrad", "f32,f32->f32", ocl_k_softmax)
    E("LogSoftmaxGrad", "f32,f32->f32", ocl_k_softmax)
    E("ArgMax", "f32->i64", ocl_k_argmax)
    E("ArgMin", "f32->i64", ocl_k_argmax)
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
    E("NegativeLogLikelihoodLoss", "f32,i64->f32", ocl_k_nll)
    E("NegativeLogLikelihoodLoss", "f32,i32->f32", ocl_k_nll)
    E("NegativeLogLikelihoodLoss", "f32,i64,f32->f32", ocl_k_nll)
    E("NegativeLogLikelihoodLoss", "f32,i32,f32->f32", ocl_k_nll)
    E("NegativeLogLikelihoodLossGrad", "f32,f32,i64->f32", ocl_k_nll_grad)
    E("NegativeLogLikelihoodLossGrad", "f32,f32,i32->f32", ocl_k_nll_grad)
    E("NegativeLogLikelihoodLossGrad", "f32,f32,i64,f32->f32", ocl_k_nll_grad)
    E("NegativeLogLikelihoodLossGrad", "f32,f32,i32,f32->f32", ocl_k_nll_grad)
    E("ScalarLike", "f32->f32", ocl_k_scalar_like)
    E("SGD", "f32,f32,f32->", ocl_k_optim)
    E("Momentum", "f32,f32,f32,f32->", ocl_k_optim)
    E("Adam", "f32,f32,f32,f32,f32,f32->", ocl_k_optim)
    E("Equal", "i32,i32->bool", ocl_k_compare)
    E("Equal", "i64,i64->bool", ocl_k_compare)
    E("Equal", "u8,u8->bool", ocl_k_compare)
    E("Equal", "bool,bool->bool", ocl_k_compare)
    E("Greater", "i32,i32->bool", ocl_k_compare)
    E("Greater", "i64,i64->bool", ocl_k_compare)
    E("Greater", "u8,u8->bool", ocl_k_compare)
    E("Less", "i32,i32->bool", ocl_k_compare)
    E("Less", "i64,i64->bool", ocl_k_compare)
    E("Less", "u8,u8->bool", ocl_k_compare)
    E("Conv", "f32,f32->f32", ocl_k_conv)
    E("Conv", "f32,f32,f32->f32", ocl_k_conv)
    E("ConvGrad", "f32,f32,f32->f32", ocl_k_conv_grad)
    E("MaxPool", "f32->f32", ocl_k_pool)
    E("AveragePool", "f32->f32", ocl_k_pool)
    E("MaxPoolGrad", "f32,f32->f32", ocl_k_pool)
    E("AveragePoolGrad", "f32->f32", ocl_k_pool)
    E("BatchNormalization", "f32,f32,f32,f32,f32->f32", ocl_k_batch_norm)
    E("Dropout", "f32->f32,bool", ocl_k_dropout)
    E("Dropout", "f64->f64,bool", ocl_k_dropout)
    E("PadGrad", "f32->f32", ocl_k_pad_grad)
    PAD("f32") PAD("f64") PAD("i32") PAD("i64")
    CLIP("f32") CLIP("i32") CLIP("i64")
    SPLIT("f32") SPLIT("f64") SPLIT("i32") SPLIT("i64")
    E("Shape", "f32->i64", ocl_k_shape) E("Shape", "f64->i64", ocl_k_shape)
    E("Shape", "f16->i64", ocl_k_shape) E("Shape", "bf16->i64", ocl_k_shape)
    E("Shape", "i8->i64", ocl_k_shape) E("Shape", "i16->i64", ocl_k_shape)
    E("Shape", "i32->i64", ocl_k_shape) E("Shape", "i64->i64", ocl_k_shape)
    E("Shape", "u8->i64", ocl_k_shape) E("Shape", "u16->i64", ocl_k_shape)
    E("Shape", "u32->i64", ocl_k_shape) E("Shape", "u64->i64", ocl_k_shape)
    E("Shape", "bool->i64", ocl_k_shape)
    E("ConstantOfShape", "i64->f32", ocl_k_constant_of_shape)
    E("ConstantOfShape", "i64->f64", ocl_k_constant_of_shape)
    E("ConstantOfShape", "i64->i32", ocl_k_constant_of_shape)
    E("ConstantOfShape", "i64->i64", ocl_k_constant_of_shape)
    E("ConstantOfShape", "i64->bool", ocl_k_constant_of_shape)
    E("Range", "f32,f32,f32->f32", ocl_k_range)
    E("Range", "f64,f64,f64->f64", ocl_k_range)
    E("Range", "i32,i32,i32->i32", ocl_k_range)
    E("Range", "i64,i64,i64->i64", ocl_k_range)
    /* Last: the entries that need cl_khr_fp64, left out of the table on devices without it. */
    OCL_FP64_KERNELS(E)
};

/* One mark per entry at the end of ocl_kernels that needs cl_khr_fp64. */
#define OCL_MARK(OP, SIG, FN) 1,
static const char ocl_fp64_marks[] = {OCL_FP64_KERNELS(OCL_MARK)};

/* The kernels of ocl_kernels.cl that ocl_driver.c does not create, by OCL_X_*. */
static const char *const ocl_xkernel_names[OCL_X_COUNT] = {
    [OCL_X_COMPARE_I32] = "compare_i32",     [OCL_X_COMPARE_I64] = "compare_i64",
    [OCL_X_COMPARE_U8] = "compare_u8",       [OCL_X_IM2COL] = "im2col_f32",
    [OCL_X_COL2IM] = "col2im_f32",           [OCL_X_CHANNEL_FILL] = "channel_fill_f32",
    [OCL_X_POOL] = "pool_f32",               [OCL_X_POOL_GRAD] = "pool_grad_f32",
    [OCL_X_BATCH_NORM] = "batch_norm_f32",   [OCL_X_PAD4] = "pad4",
    [OCL_X_PAD8] = "pad8",                   [OCL_X_CLIP_F32] = "clip_f32",
    [OCL_X_CLIP_I32] = "clip_i32",           [OCL_X_CLIP_I64] = "clip_i64",
    [OCL_X_PAD_GRAD] = "pad_grad_f32",
    [OCL_X_CAST_F32_F64] = "cast_f32_f64",   [OCL_X_CAST_F64_F32] = "cast_f64_f32",
    [OCL_X_CLIP_F64] = "clip_f64",           [OCL_X_BATCH_NORM_F64] = "batch_norm_f64",
    [OCL_X_IM2COL_F64] = "im2col_f64",       [OCL_X_COL2IM_F64] = "col2im_f64",
    [OCL_X_CHANNEL_FILL_F64] = "channel_fill_f64", [OCL_X_POOL_F64] = "pool_f64",
    [OCL_X_POOL_GRAD_F64] = "pool_grad_f64", [OCL_X_PAD_GRAD_F64] = "pad_grad_f64",
    [OCL_X_COMPARE_F64] = "compare_f64",
};

/* Whether the device lists cl_khr_fp64 among its extensions. */
static int ocl_has_fp64(cl_device_id id) {
    size_t size = 0;
    int has = 0;
    if (clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, 0, NULL, &size) != CL_SUCCESS || !size)
        return 0;
    char *ext = malloc(size + 1);
    if (!ext)
        return 0;
    if (clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, size, ext, NULL) == CL_SUCCESS) {
        ext[size] = '\0';
        const char *p = ext;
        while (!has && (p = strstr(p, "cl_khr_fp64")) != NULL) {
            has = (p == ext || p[-1] == ' ') && (p[11] == '\0' || p[11] == ' ');
            p++;
        }
    }
    free(ext);
    return has;
}

/* Creates this file's kernels from the built program (the f64 ones only where the device has
 * cl_khr_fp64; without it they are not compiled and their Cast entries are left out). */
int32_t ocl__make_table(ses_drv_device_t *device) {
    cl_int err = CL_SUCCESS;

    device->fp64 = ocl_has_fp64(device->info->id);
    for (int k = 0; k < OCL_X_COUNT; k++) {
        if (k >= OCL_X_FP64_FIRST && !device->fp64)
            break;
        device->xkernels[k] = clCreateKernel(device->program, ocl_xkernel_names[k], &err);
        if (device->xkernels[k] && err == CL_SUCCESS)
            continue;
        device->xkernels[k] = NULL;
        if (k < OCL_X_FP64_FIRST)
            return OCL_DEVICE_FAIL(device, SES_DRV_INTERNAL,
                                   "open_device: clCreateKernel(%s) failed: %s",
                                   ocl_xkernel_names[k], ocl__error_name(err));
        /* The extension is listed but its kernels did not compile: go without f64. */
        for (int j = OCL_X_FP64_FIRST; j < k; j++) {
            clReleaseKernel(device->xkernels[j]);
            device->xkernels[j] = NULL;
        }
        device->fp64 = 0;
        break;
    }
    device->table = ocl_kernels;
    device->n_table = (uint32_t)(sizeof ocl_kernels / sizeof ocl_kernels[0]);
    if (!device->fp64)
        device->n_table -= (uint32_t)sizeof ocl_fp64_marks;
    return SES_DRV_OK;
}

void ocl__free_table(ses_drv_device_t *device) {
    for (int k = 0; k < OCL_X_COUNT; k++) {
        if (device->xkernels[k])
            clReleaseKernel(device->xkernels[k]);
        device->xkernels[k] = NULL;
    }
    device->table = NULL;
    device->n_table = 0;
}
