/*
 * The launch checks every OpenCL compute entry makes before it enqueues anything (counts,
 * dtypes, byte ranges, aligned offsets, no partial overlap of an output with an input), the
 * attribute readers, broadcasting, and running one of the program's kernels and waiting for it.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clblast_c.h>

#include "ocl_ops.h"


/* ---------------------------------------------------------------------------------------------
 * Launch checks
 * ------------------------------------------------------------------------------------------- */

static const char *ocl_dims_str(const int64_t *dims, uint32_t rank, char *buf, size_t size) {
    size_t used = 1;
    uint32_t d = 0;

    buf[0] = '[';
    for (; d < rank && used + 26 <= size; d++)
        used += (size_t)snprintf(buf + used, size - used, "%s%" PRId64, d ? "," : "", dims[d]);
    snprintf(buf + used, size - used, "%s]", d < rank ? "..." : "");
    return buf;
}

int32_t ocl__node_fail(ses_drv_device_t *device, const ses_drv_node_t *node, int32_t code,
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
    uint32_t esize = ses_drv_util_dtype_size(t->dtype);

    if (!esize)
        return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "%s %" PRIu32 " has unknown dtype %" PRIu32, role, index, t->dtype);
    if (t->rank > OCL_MAX_RANK)
        return ocl__node_fail(device, node, SES_DRV_UNIMPLEMENTED,
                              "%s %" PRIu32 " has rank %" PRIu32 "; " OCL_NAME
                              " supports up to rank %d",
                              role, index, t->rank, OCL_MAX_RANK);
    if (t->rank > 0 && !t->dims)
        return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "%s %" PRIu32 " has rank %" PRIu32 " but no dims", role, index,
                              t->rank);
    for (uint32_t d = 0; d < t->rank; d++) {
        if (t->dims[d] < 0)
            return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                  "%s %" PRIu32 " dim %" PRIu32 " is %" PRId64, role, index, d,
                                  t->dims[d]);
        if (t->dims[d] != 0 && count > (UINT64_MAX / 8) / (uint64_t)t->dims[d])
            return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                  "%s %" PRIu32 " has too many elements", role, index);
        count *= (uint64_t)t->dims[d];
    }
    uint64_t bytes = count * esize;
    if (!buffer)
        return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "%s %" PRIu32 " buffer is NULL", role, index);
    if (offset > buffer->size || bytes > buffer->size - offset)
        return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "%s %" PRIu32 ": %" PRIu64 " bytes at offset %" PRIu64
                              " end past its buffer's %" PRIu64 " bytes",
                              role, index, bytes, offset, buffer->size);
    if (offset % esize != 0)
        return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "%s %" PRIu32 " at offset %" PRIu64 " is not aligned to its %" PRIu32
                              "-byte elements",
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
int32_t ocl__prepare_n(ses_drv_device_t *device, const ses_drv_launch_t *launch, int exact_ok,
                       ocl_arg_t *in, ocl_arg_t *out, uint32_t max_out) {
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
        return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "got a stream, but " OCL_NAME " has no streams; pass NULL");
    if (node->n_inputs > OCL_MAX_ARGS - 2 || node->n_outputs > max_out)
        return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "has %" PRIu32 " inputs and %" PRIu32 " outputs, more than " OCL_NAME
                              " takes",
                              node->n_inputs, node->n_outputs);
    if ((node->n_inputs && (!node->inputs || !launch->inputs || !launch->input_offsets)) ||
        (node->n_outputs && (!node->outputs || !launch->outputs || !launch->output_offsets)))
        return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "the launch lacks its descriptor, buffer or offset arrays");
    if ((node->n_inputs && node->inputs->struct_size < desc_min) ||
        (node->n_outputs && node->outputs->struct_size < desc_min))
        return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "a tensor descriptor is older than ABI 1.0");
    for (uint32_t i = 0; i < node->n_inputs; i++)
        if ((st = ocl_check_tensor(device, node, "input", i, ses_drv_util_tensor_at(node->inputs, i),
                                   launch->inputs[i], launch->input_offsets[i], &in[i])) !=
            SES_DRV_OK)
            return st;
    for (uint32_t o = 0; o < node->n_outputs; o++) {
        if ((st = ocl_check_tensor(device, node, "output", o, ses_drv_util_tensor_at(node->outputs, o),
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
                return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                      "output %" PRIu32 " overlaps input %" PRIu32 "%s", o, i,
                                      exact_ok ? "; it may only be exactly an input's bytes" : "");
        }
    }
    return SES_DRV_OK;
}

/* ocl__prepare_n for the ops of at most two outputs. */
int32_t ocl__prepare(ses_drv_device_t *device, const ses_drv_launch_t *launch, int exact_ok,
                     ocl_arg_t *in, ocl_arg_t *out) {
    return ocl__prepare_n(device, launch, exact_ok, in, out, 2);
}

int32_t ocl__attr_int(const ses_drv_node_t *node, const char *name, int64_t *out) {
    uint64_t n = 1;
    return node->attr ? node->attr(node, name, SES_DRV_ATTR_INT, &n, out) : SES_DRV_NOT_FOUND;
}

int32_t ocl__attr_float(const ses_drv_node_t *node, const char *name, double *out) {
    uint64_t n = 1;
    return node->attr ? node->attr(node, name, SES_DRV_ATTR_FLOAT, &n, out) : SES_DRV_NOT_FOUND;
}

/* Reads an INTS attribute of at most @p max entries. */
int32_t ocl__attr_ints_max(ses_drv_device_t *device, const ses_drv_node_t *node, const char *name,
                           int64_t *out, uint32_t max, uint32_t *out_count) {
    uint64_t n = 0;
    int32_t st;

    if (!node->attr)
        return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "has no attribute reader");
    if ((st = node->attr(node, name, SES_DRV_ATTR_INTS, &n, NULL)) != SES_DRV_OK)
        return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "attribute %s is missing or not INTS", name);
    if (n > max)
        return ocl__node_fail(device, node, SES_DRV_UNIMPLEMENTED,
                              "attribute %s has %" PRIu64 " entries, more than %" PRIu32, name, n,
                              max);
    if (n && (st = node->attr(node, name, SES_DRV_ATTR_INTS, &n, out)) != SES_DRV_OK)
        return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "attribute %s cannot be read",
                              name);
    *out_count = (uint32_t)n;
    return SES_DRV_OK;
}

/* Reads an INTS attribute of at most OCL_MAX_RANK entries. */
int32_t ocl__attr_ints(ses_drv_device_t *device, const ses_drv_node_t *node, const char *name,
                       int64_t *out, uint32_t *out_count) {
    return ocl__attr_ints_max(device, node, name, out, OCL_MAX_RANK, out_count);
}

int32_t ocl__need_attr(ses_drv_device_t *device, const ses_drv_node_t *node, const char *name,
                       int32_t st) {
    if (st == SES_DRV_OK)
        return SES_DRV_OK;
    return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                          "attribute %s is missing or has another type", name);
}

int32_t ocl__need_int(ses_drv_device_t *device, const ses_drv_node_t *node, const char *name,
                      int64_t *out) {
    return ocl__need_attr(device, node, name, ocl__attr_int(node, name, out));
}

int32_t ocl__need_int2(ses_drv_device_t *device, const ses_drv_node_t *node, const char *name0,
                       int64_t *out0, const char *name1, int64_t *out1) {
    int32_t st = ocl__need_int(device, node, name0, out0);
    return st != SES_DRV_OK ? st : ocl__need_int(device, node, name1, out1);
}

int32_t ocl__need_float(ses_drv_device_t *device, const ses_drv_node_t *node, const char *name,
                        double *out) {
    return ocl__need_attr(device, node, name, ocl__attr_float(node, name, out));
}

int ocl__same_shape(const ocl_arg_t *a, const ocl_arg_t *b) {
    if (a->rank != b->rank)
        return 0;
    for (uint32_t d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d])
            return 0;
    return 1;
}

int32_t ocl__shape_fail(ses_drv_device_t *device, const ses_drv_node_t *node, const char *what,
                        const ocl_arg_t *a, const ocl_arg_t *b) {
    char x[128], y[128];
    return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "%s: %s vs %s", what,
                          ocl_dims_str(a->dims, a->rank, x, sizeof x),
                          ocl_dims_str(b->dims, b->rank, y, sizeof y));
}

/* Contiguous element strides of @p dims into @p st. */
void ocl__strides(const int64_t *dims, uint32_t rank, cl_long *st) {
    cl_long s = 1;
    for (uint32_t d = rank; d-- > 0;) {
        st[d] = s;
        s *= dims[d];
    }
}

/* Broadcast strides of operand @p x towards @p out in bc->st[k]; 0 when it does not broadcast. */
int ocl__bcast_operand(ocl_bcast_t *bc, int k, const ocl_arg_t *x, const ocl_arg_t *out) {
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

void ocl__bcast_init(ocl_bcast_t *bc, const ocl_arg_t *out) {
    memset(bc, 0, sizeof *bc);
    bc->rank = (cl_int)out->rank;
    for (uint32_t d = 0; d < out->rank; d++)
        bc->dims[d] = out->dims[d];
}

/* ---------------------------------------------------------------------------------------------
 * Running a kernel
 * ------------------------------------------------------------------------------------------- */

/* Sets the arguments of @p kernel, runs it over @p n elements and waits. */
int32_t ocl__run_kernel(ses_drv_device_t *device, const ses_drv_node_t *node, cl_kernel kernel,
                        uint64_t n, const ocl_args_t *args) {
    cl_int err = CL_SUCCESS;
    cl_uint i;

    if (n == 0)
        return SES_DRV_OK;
    if (!kernel)
        return ocl__node_fail(device, node, SES_DRV_UNIMPLEMENTED,
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
        return ocl__node_fail(device, node, SES_DRV_INTERNAL, "running its kernel failed: %s",
                              ocl__error_name(err));
    return SES_DRV_OK;
}

/* ocl__run_kernel with one of ocl_driver.c's kernels (OCL_K_*). */
int32_t ocl__run(ses_drv_device_t *device, const ses_drv_node_t *node, int k, uint64_t n,
                 const ocl_args_t *args) {
    return ocl__run_kernel(device, node, device->kernels[k], n, args);
}

/* ocl__run_kernel with one of this file's kernels (OCL_X_*). */
int32_t ocl__run_x(ses_drv_device_t *device, const ses_drv_node_t *node, int k, uint64_t n,
                   const ocl_args_t *args) {
    return ocl__run_kernel(device, node, device->xkernels[k], n, args);
}

int32_t ocl__fill_zero(ses_drv_device_t *device, const ses_drv_node_t *node, const ocl_arg_t *y) {
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
        return ocl__node_fail(device, node, SES_DRV_INTERNAL, "clEnqueueFillBuffer failed: %s",
                              ocl__error_name(err));
    return SES_DRV_OK;
}

/* Strided copy of elements of @p esize bytes: input x at element offset xo with strides st[0],
 * output y at yo with strides st[1], over bc's dims. */
int32_t ocl__strided(ses_drv_device_t *device, const ses_drv_node_t *node, uint32_t esize, cl_mem x,
                     cl_long xo, cl_mem y, cl_long yo, uint64_t n, const ocl_bcast_t *bc) {
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
    return ocl__run(device, node, k, n, &a);
}
