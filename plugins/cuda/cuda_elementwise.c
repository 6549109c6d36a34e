/*
 * Elementwise: arithmetic with broadcasting, the activation gradients, comparisons, Where,
 * the unary ops and Cast.
 */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_ops.h"

/* ---------------------------------------------------------------------------------------------
 * Elementwise: arithmetic with broadcasting, the activation gradients, comparisons, Where, the
 * unary ops, Cast.
 * ------------------------------------------------------------------------------------------- */

/* Fills walk @p g of @p n operands broadcast (numpy, one way) to @p o; 0 when one does not. */
int cuda__bcast_n(const cuda_arg_t *const *in, uint32_t n, const cuda_arg_t *o, cuda_bcast_t *g) {
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
        g->same = g->same && cuda__same_shape(in[k], o);
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

int cuda__bcast(const cuda_arg_t *a, const cuda_arg_t *b, const cuda_arg_t *o, cuda_bcast_t *g) {
    const cuda_arg_t *in[2] = {a, b};
    return cuda__bcast_n(in, 2, o, g);
}

/* The op names of the elementwise entries, X(name, kernel code). */
#define CUDA_BINARY_OPS(X)                                                                       \
    X("Add", CUDA_BIN_ADD) X("Sub", CUDA_BIN_SUB) X("Mul", CUDA_BIN_MUL) X("Div", CUDA_BIN_DIV) \
    X("Pow", CUDA_BIN_POW) X("ReluGrad", CUDA_BIN_RELU_GRAD)                                     \
    X("LeakyReluGrad", CUDA_BIN_LEAKY_RELU_GRAD) X("SigmoidGrad", CUDA_BIN_SIGMOID_GRAD)         \
    X("TanhGrad", CUDA_BIN_TANH_GRAD) X("GeluGrad", CUDA_BIN_GELU_GRAD)
#define CUDA_UNARY_OPS(X)                                                                        \
    X("Neg", CUDA_UN_NEG) X("Abs", CUDA_UN_ABS) X("Relu", CUDA_UN_RELU) X("Exp", CUDA_UN_EXP)    \
    X("Log", CUDA_UN_LOG) X("Sqrt", CUDA_UN_SQRT) X("Reciprocal", CUDA_UN_RECIPROCAL)            \
    X("Sigmoid", CUDA_UN_SIGMOID) X("Tanh", CUDA_UN_TANH) X("LeakyRelu", CUDA_UN_LEAKY_RELU)     \
    X("Softplus", CUDA_UN_SOFTPLUS) X("Erf", CUDA_UN_ERF) X("Gelu", CUDA_UN_GELU)
#define CUDA_COMPARE_OPS(X) \
    X("Equal", CUDA_CMP_EQUAL) X("Greater", CUDA_CMP_GREATER) X("Less", CUDA_CMP_LESS)

typedef struct cuda_op_code {
    const char *op;
    int code;
} cuda_op_code_t;

#define CUDA_OP_CODE_(NAME, CODE) {NAME, CODE},
static const cuda_op_code_t cuda_binary_ops[] = {CUDA_BINARY_OPS(CUDA_OP_CODE_)};
static const cuda_op_code_t cuda_unary_ops[] = {CUDA_UNARY_OPS(CUDA_OP_CODE_)};
static const cuda_op_code_t cuda_compare_ops[] = {CUDA_COMPARE_OPS(CUDA_OP_CODE_)};
#define CUDA_N_OPS(OPS) (sizeof(OPS) / sizeof(OPS)[0])

/* A family of arithmetic ops: their names, the codes of their Gelu and LeakyRelu forms (whose
 * attributes are read) and the last code that takes integers. */
typedef struct cuda_arith {
    const char *what;
    const cuda_op_code_t *ops;
    size_t n_ops;
    int gelu, gelu_tanh, leaky_relu, last_int;
} cuda_arith_t;

static const cuda_arith_t cuda_binary = {
    "binary",           cuda_binary_ops,         CUDA_N_OPS(cuda_binary_ops),
    CUDA_BIN_GELU_GRAD, CUDA_BIN_GELU_TANH_GRAD, CUDA_BIN_LEAKY_RELU_GRAD,
    CUDA_BIN_DIV};
static const cuda_arith_t cuda_unary = {"unary",      cuda_unary_ops,    CUDA_N_OPS(cuda_unary_ops),
                                        CUDA_UN_GELU, CUDA_UN_GELU_TANH, CUDA_UN_LEAKY_RELU,
                                        CUDA_UN_RELU};

/* The kernel code of @p op (may be NULL) in the @p n entries of @p ops, or -1. */
static int cuda_op_code(const char *op, const cuda_op_code_t *ops, size_t n) {
    for (size_t i = 0; op && i < n; i++)
        if (strcmp(op, ops[i].op) == 0)
            return ops[i].code;
    return -1;
}

/* Gelu's and GeluGrad's form: the attribute approximate (the host's INT: 0 none, 1 tanh) picks
 * @p tanh_code over @p exact_code. */
static int32_t cuda_gelu_form(ses_drv_device_t *device, const ses_drv_node_t *node,
                              int exact_code, int tanh_code, int *code) {
    int64_t approximate = 0;
    if (cuda__attr_int(node, "approximate", 0, &approximate) != SES_DRV_OK ||
        (approximate != 0 && approximate != 1))
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "attribute approximate is %" PRId64
                               " or not an INT; expected 0 (none) or 1 (tanh)",
                               approximate);
    *code = approximate ? tanh_code : exact_code;
    return SES_DRV_OK;
}

int cuda__is_int(uint32_t dtype) {
    return dtype == SES_DRV_DTYPE_I32 || dtype == SES_DRV_DTYPE_I64;
}

/* What the unary and binary entries check first: a launch of @p n_in inputs and one output
 * (into @p a) of one dtype, the op's kernel code in @p op (Gelu's form picked), integers only
 * where the family takes them, and LeakyRelu's alpha in @p alpha (0.01 when not given). */
static int32_t cuda_arith_start(ses_drv_device_t *device, const ses_drv_launch_t *launch,
                                const cuda_arith_t *f, uint32_t n_in, cuda_arg_t *a, int *op,
                                double *alpha) {
    int32_t st;

    *alpha = 0.01;
    if ((st = cuda__check_launch(device, launch, n_in, n_in, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    *op = cuda_op_code(node->op, f->ops, f->n_ops);
    if (*op < 0)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "not a %s op", f->what);
    if (*op == f->gelu && (st = cuda_gelu_form(device, node, *op, f->gelu_tanh, op)) != SES_DRV_OK)
        return st;
    if ((st = cuda__dtypes_agree(device, node, a, n_in + 1)) != SES_DRV_OK)
        return st;
    if (cuda__is_int(a[n_in].dtype) && *op > f->last_int)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "%s takes floats only on cuda", node->op);
    if (*op == f->leaky_relu && cuda__attr_double(node, "alpha", 0.01, alpha) != SES_DRV_OK)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "attribute alpha is not a FLOAT");
    return SES_DRV_OK;
}

int32_t cuda__k_binary(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[3];
    cuda_bcast_t g;
    double alpha;
    int op;
    int32_t st;

    (void)state;
    if ((st = cuda_arith_start(device, launch, &cuda_binary, 2, a, &op, &alpha)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const uint32_t dt = a[2].dtype;
    if (op >= CUDA_BIN_RELU_GRAD &&
        !(cuda__same_shape(&a[0], &a[2]) && cuda__same_shape(&a[1], &a[2])))
        return cuda__shape_fail(device, node,
                                "dy, the forward tensor and the output must have one shape", &a[0],
                                &a[1]);
    if (!cuda__bcast(&a[0], &a[1], &a[2], &g))
        return cuda__shape_fail(device, node, "the inputs do not broadcast to the output", &a[0],
                                &a[1]);
    if (a[2].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    void *s = cuda__stream_of(device, launch);
    if (!(cuda__is_int(dt) && op == CUDA_BIN_DIV))
        return cuda__finish(device, launch,
                            cuda__binary(dt, &g, op, alpha, a[0].ptr, a[1].ptr, a[2].ptr, s));
    /* Integer Div: every divisor element is used (the output is not empty), so one zero
     * anywhere is an error; the kernel itself gives 0 there and reads nothing out of range. */
    unsigned long long bad;
    int e = cuda__check_begin(device, s);
    if (e == 0)
        e = cuda__find_zero(dt, a[1].count, a[1].ptr, device->bad_dev, s);
    if (e == 0)
        e = cuda__binary(dt, &g, op, alpha, a[0].ptr, a[1].ptr, a[2].ptr, s);
    e = cuda__check_end(device, s, e, &bad);
    if (e != 0)
        return cuda__finish(device, launch, e);
    if (bad != ~0ULL)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "integer division by zero: input 1 (the divisor) holds 0 at "
                               "element %llu",
                               bad);
    return SES_DRV_OK;
}

int32_t cuda__k_unary(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    double alpha;
    int op;
    int32_t st;

    (void)state;
    if ((st = cuda_arith_start(device, launch, &cuda_unary, 1, a, &op, &alpha)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if (!cuda__same_shape(&a[0], &a[1]))
        return cuda__shape_fail(device, node, "input and output shapes differ", &a[0], &a[1]);
    if (a[1].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    return cuda__finish(device, launch,
                        cuda__unary(a[1].dtype, a[1].count, op, alpha, a[0].ptr, a[1].ptr,
                                    cuda__stream_of(device, launch)));
}

/* Equal, Greater, Less: T,T->bool with broadcasting. */
int32_t cuda__k_compare(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[3];
    cuda_bcast_t g;
    int32_t st;

    (void)state;
    if ((st = cuda__check_launch(device, launch, 2, 2, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const int op = cuda_op_code(node->op, cuda_compare_ops, CUDA_N_OPS(cuda_compare_ops));
    if (op < 0)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT, "is not a comparison");
    if ((st = cuda__dtypes_agree(device, node, a, 2)) != SES_DRV_OK)
        return st;
    if (a[2].dtype != SES_DRV_DTYPE_BOOL)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "the output has dtype %" PRIu32 ", not bool", a[2].dtype);
    if (!cuda__bcast(&a[0], &a[1], &a[2], &g))
        return cuda__shape_fail(device, node, "the inputs do not broadcast to the output", &a[0],
                                &a[1]);
    if (a[2].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    return cuda__finish(device, launch,
                        cuda__compare(a[0].dtype, &g, op, a[0].ptr, a[1].ptr, a[2].ptr,
                                      cuda__stream_of(device, launch)));
}

/* Where(condition, X, Y): bool,T,T->T with three-way broadcasting. */
int32_t cuda__k_where(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[4];
    cuda_bcast_t g;
    int32_t st;

    (void)state;
    if ((st = cuda__check_launch(device, launch, 3, 3, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if (a[0].dtype != SES_DRV_DTYPE_BOOL || a[1].dtype != a[3].dtype || a[2].dtype != a[3].dtype)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "dtypes are %" PRIu32 ", %" PRIu32 ", %" PRIu32 " -> %" PRIu32
                               "; Where takes bool,T,T->T",
                               a[0].dtype, a[1].dtype, a[2].dtype, a[3].dtype);
    const cuda_arg_t *in[3] = {&a[0], &a[1], &a[2]};
    if (!cuda__bcast_n(in, 3, &a[3], &g))
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "the inputs do not broadcast to the output");
    if (a[3].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    return cuda__finish(device, launch,
                        cuda__where(ses_drv_util_dtype_size(a[3].dtype), &g, a[0].ptr, a[1].ptr, a[2].ptr,
                                    a[3].ptr, cuda__stream_of(device, launch)));
}

/* Cast A->B; `to`, when present, must name the output's dtype. */
int32_t cuda__k_cast(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    int64_t to = 0;
    int32_t st;

    (void)state;
    if ((st = cuda__check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if (cuda__attr_int(node, "to", (int64_t)a[1].dtype, &to) != SES_DRV_OK ||
        to != (int64_t)a[1].dtype)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "attribute to is %" PRId64 ", but the output's dtype is %" PRIu32,
                               to, a[1].dtype);
    if (!cuda__same_shape(&a[0], &a[1]))
        return cuda__shape_fail(device, node, "input and output shapes differ", &a[0], &a[1]);
    if (a[1].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    return cuda__finish(device, launch,
                        cuda__cast(a[0].dtype, a[1].dtype, a[1].count, a[0].ptr, a[1].ptr,
                                   cuda__stream_of(device, launch)));
}

/* Identity, Reshape, Flatten, Squeeze, Unsqueeze: a device copy of the same element count. */
int32_t cuda__k_copy_op(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    int32_t st;

    (void)state;
    if ((st = cuda__check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK)
        return st;
    if ((st = cuda__dtypes_agree(device, launch->node, a, 2)) != SES_DRV_OK)
        return st;
    if (a[0].count != a[1].count)
        return cuda__node_fail(device, launch->node, SES_DRV_INVALID_ARGUMENT,
                               "input has %" PRId64 " elements, output %" PRId64, a[0].count,
                               a[1].count);
    if (a[1].count == 0 || a[0].ptr == a[1].ptr)
        return SES_DRV_OK;
    if ((st = cuda__use(device, launch->node->op)) != SES_DRV_OK)
        return st;
    /* Both ranges are within their buffers; they are either the same bytes or disjoint (the
     * host never hands a partly overlapping copy to a kernel of one node, DRV-50). */
    return cuda__finish(
        device, launch,
        (int)cudaMemcpyAsync(a[1].ptr, a[0].ptr, (size_t)a[1].count * ses_drv_util_dtype_size(a[1].dtype),
                             cudaMemcpyDeviceToDevice,
                             (cudaStream_t)cuda__stream_of(device, launch)));
}
