/*
 * Elementwise entries: the unary and binary arithmetic, comparisons and Where.
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

int32_t ocl__unary_f32(ses_drv_device_t *device, const ses_drv_node_t *node, const ocl_arg_t *x,
                       const ocl_arg_t *y, int op, float alpha) {
    ocl_bcast_t bc;
    ocl_args_t a = {0};
    cl_ulong n = y->count;
    cl_int cop = op;

    ocl__bcast_init(&bc, y);
    if (!ocl__bcast_operand(&bc, 0, x, y))
        return ocl__shape_fail(device, node, "input 0 does not broadcast to the output", x, y);
    bc.contig = x->count == y->count;
    OCL_ARG_AT(&a, x);
    OCL_ARG_AT(&a, y);
    OCL_ARG(&a, n);
    OCL_ARG(&a, bc);
    OCL_ARG(&a, cop);
    OCL_ARG(&a, alpha);
    return ocl__run(device, node, OCL_K_UNARY, n, &a);
}

int32_t ocl__k_unary(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[1], out[1];
    double alpha = 0.0;
    int32_t st;

    (void)state;
    if ((st = ocl__prepare(device, launch, 1, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    int op = ocl_unary_code(node->op);
    if (op < 0 || node->n_inputs != 1 || node->n_outputs != 1)
        return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "is not a unary f32 op");
    if (!ocl__same_shape(&in[0], &out[0]))
        return ocl__shape_fail(device, node, "shapes differ", &in[0], &out[0]);
    if (op == 11 && (st = ocl__need_float(device, node, "alpha", &alpha)) != SES_DRV_OK)
        return st;
    return ocl__unary_f32(device, node, &in[0], &out[0], op, (float)alpha);
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
    ocl__bcast_init(bc, y);
    bc->contig = 1;
    for (uint32_t k = 0; k < n; k++) {
        if (!ocl__bcast_operand(bc, (int)k, &in[k], y))
            return ocl__shape_fail(device, node, "an input does not broadcast to the output",
                                   &in[k], y);
        bc->contig = bc->contig && ocl__same_shape(&in[k], y);
    }
    return SES_DRV_OK;
}

/* Broadcasts the @p n_in inputs to the output @p y and runs @p kernel(inputs..., y, n, bc,
 * then @p extra's arguments) over y's n elements: the form of every broadcasting kernel here. */
static int32_t ocl_run_broadcast(ses_drv_device_t *device, const ses_drv_node_t *node,
                                 cl_kernel kernel, const ocl_arg_t *in, uint32_t n_in,
                                 const ocl_arg_t *y, const ocl_args_t *extra) {
    ocl_bcast_t bc;
    ocl_args_t a = {0};
    cl_ulong n = y->count;
    int32_t st;

    if ((st = ocl_bcast_all(device, node, in, n_in, y, &bc)) != SES_DRV_OK)
        return st;
    for (uint32_t k = 0; k < n_in; k++)
        OCL_ARG_AT(&a, &in[k]);
    OCL_ARG_AT(&a, y);
    OCL_ARG(&a, n);
    OCL_ARG(&a, bc);
    for (cl_uint i = 0; extra && i < extra->n; i++, a.n++) {
        a.size[a.n] = extra->size[i];
        a.ptr[a.n] = extra->ptr[i];
    }
    return ocl__run_kernel(device, node, kernel, n, &a);
}

int32_t ocl__k_binary(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[2], out[1];
    ocl_args_t extra = {0};
    double alpha = 0.0;
    int32_t st;

    (void)state;
    if ((st = ocl__prepare(device, launch, 1, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    int op = ocl_binary_code(node->op);
    if (op < 0 || node->n_inputs != 2 || node->n_outputs != 1)
        return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "is not a binary f32 op");
    if (op == 8 && (st = ocl__need_float(device, node, "alpha", &alpha)) != SES_DRV_OK)
        return st;
    cl_int cop = op;
    float fa = (float)alpha;
    OCL_ARG(&extra, cop);
    OCL_ARG(&extra, fa);
    return ocl_run_broadcast(device, node, device->kernels[OCL_K_BINARY], in, 2, &out[0], &extra);
}

int32_t ocl__k_compare(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[2], out[1];
    ocl_args_t extra = {0};
    int32_t st;

    (void)state;
    if ((st = ocl__prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    static const char *const ops[] = {"Equal", "Greater", "Less", "And", "Or", "Xor", "Not"};
    cl_int cop = -1;
    for (int i = 0; i < (int)(sizeof ops / sizeof ops[0]); i++)
        if (!strcmp(node->op, ops[i]))
            cop = i;
    uint32_t n_in = cop == 6 ? 1 : 2;
    if (cop < 0 || node->n_inputs != n_in || node->n_outputs != 1)
        return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "is not a comparison");
    if (cop == 6)
        in[1] = in[0]; /* Not reads its input twice */
    if (in[0].dtype != in[1].dtype || (cop >= 3 && in[0].dtype != SES_DRV_DTYPE_BOOL))
        return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "inputs are not of one dtype (bool for And, Or, Xor, Not)");
    cl_kernel kernel = NULL;
    switch (in[0].dtype) {
        case SES_DRV_DTYPE_F32:
            kernel = device->kernels[OCL_K_COMPARE];
            break;
        case SES_DRV_DTYPE_F64:
            kernel = device->xkernels[OCL_X_COMPARE_F64];
            break;
        case SES_DRV_DTYPE_I32:
            kernel = device->xkernels[OCL_X_COMPARE_I32];
            break;
        case SES_DRV_DTYPE_I64:
            kernel = device->xkernels[OCL_X_COMPARE_I64];
            break;
        case SES_DRV_DTYPE_U8:
            kernel = device->xkernels[OCL_X_COMPARE_U8];
            break;
        case SES_DRV_DTYPE_BOOL: /* bool is not ordered: Equal and the logic ops only */
            kernel = cop == 0 || cop >= 3 ? device->xkernels[OCL_X_COMPARE_U8] : NULL;
            break;
        default:
            break;
    }
    if (!kernel)
        return ocl__node_fail(device, node, SES_DRV_UNIMPLEMENTED,
                              "%s of dtype %" PRIu32 " is not implemented", node->op, in[0].dtype);
    OCL_ARG(&extra, cop);
    return ocl_run_broadcast(device, node, kernel, in, 2, &out[0], &extra);
}

int32_t ocl__k_where(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[3], out[1];
    int32_t st;

    (void)state;
    if ((st = ocl__prepare(device, launch, 1, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if (node->n_inputs != 3 || node->n_outputs != 1 || in[0].esize != 1 ||
        in[1].esize != out[0].esize || in[2].esize != out[0].esize)
        return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "is not bool,T,T->T");
    uint32_t es = out[0].esize;
    int k = es == 1 ? OCL_K_WHERE1 : es == 4 ? OCL_K_WHERE4 : es == 8 ? OCL_K_WHERE8 : -1;
    if (k < 0)
        return ocl__node_fail(device, node, SES_DRV_UNIMPLEMENTED,
                              "Where of %" PRIu32 "-byte elements is not implemented", es);
    return ocl_run_broadcast(device, node, device->kernels[k], in, 3, &out[0], NULL);
}
