/*
 * What the OpenCL driver's op families share: the checked arguments of a launch, the structs
 * that mirror those of ocl_kernels.cl, running a program kernel, and every compute entry the
 * table (ocl_table.c) lists. Each family is one file: ocl_elementwise.c, ocl_copy.c,
 * ocl_reduce.c, ocl_gemm.c, ocl_loss.c, ocl_train.c, ocl_cnn.c.
 */
#ifndef SES_OCL_OPS_H
#define SES_OCL_OPS_H

#include <clblast_c.h>

#include "ocl_internal.h"

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

typedef struct ocl_args {
    cl_uint n;
    size_t size[24];
    const void *ptr[24];
} ocl_args_t;

#define OCL_ARG(a, v) ((a)->size[(a)->n] = sizeof(v), (a)->ptr[(a)->n++] = &(v))
/* Appends checked argument @p t's buffer and element offset: a kernel's (global T *p, ulong po). */
#define OCL_ARG_AT(a, t) (OCL_ARG((a), (t)->buf->mem), OCL_ARG((a), (t)->off))

/* ocl_launch.c: checks, attributes, broadcasting, kernel runs */
int32_t ocl__node_fail(ses_drv_device_t *device, const ses_drv_node_t *node, int32_t code,
                       const char *format, ...) OCL_PRINTF(4, 5);
int32_t ocl__prepare_n(ses_drv_device_t *device, const ses_drv_launch_t *launch, int exact_ok,
                       ocl_arg_t *in, ocl_arg_t *out, uint32_t max_out);
int32_t ocl__prepare(ses_drv_device_t *device, const ses_drv_launch_t *launch, int exact_ok,
                     ocl_arg_t *in, ocl_arg_t *out);
int32_t ocl__attr_int(const ses_drv_node_t *node, const char *name, int64_t *out);
int32_t ocl__attr_float(const ses_drv_node_t *node, const char *name, double *out);
int32_t ocl__attr_ints_max(ses_drv_device_t *device, const ses_drv_node_t *node, const char *name,
                           int64_t *out, uint32_t max, uint32_t *out_count);
int32_t ocl__attr_ints(ses_drv_device_t *device, const ses_drv_node_t *node, const char *name,
                       int64_t *out, uint32_t *out_count);
int32_t ocl__need_attr(ses_drv_device_t *device, const ses_drv_node_t *node, const char *name,
                       int32_t st);
/* ocl__attr_int and ocl__attr_float of a required attribute, failing as ocl__need_attr does. */
int32_t ocl__need_int(ses_drv_device_t *device, const ses_drv_node_t *node, const char *name,
                      int64_t *out);
int32_t ocl__need_float(ses_drv_device_t *device, const ses_drv_node_t *node, const char *name,
                        double *out);
/* ocl__need_int of two attributes, failing on the first one missing. */
int32_t ocl__need_int2(ses_drv_device_t *device, const ses_drv_node_t *node, const char *name0,
                       int64_t *out0, const char *name1, int64_t *out1);
int ocl__same_shape(const ocl_arg_t *a, const ocl_arg_t *b);
int32_t ocl__shape_fail(ses_drv_device_t *device, const ses_drv_node_t *node, const char *what,
                        const ocl_arg_t *a, const ocl_arg_t *b);
void ocl__strides(const int64_t *dims, uint32_t rank, cl_long *st);
int ocl__bcast_operand(ocl_bcast_t *bc, int k, const ocl_arg_t *x, const ocl_arg_t *out);
void ocl__bcast_init(ocl_bcast_t *bc, const ocl_arg_t *out);
int32_t ocl__run_kernel(ses_drv_device_t *device, const ses_drv_node_t *node, cl_kernel kernel,
                        uint64_t n, const ocl_args_t *args);
int32_t ocl__run(ses_drv_device_t *device, const ses_drv_node_t *node, int k, uint64_t n,
                 const ocl_args_t *args);
int32_t ocl__run_x(ses_drv_device_t *device, const ses_drv_node_t *node, int k, uint64_t n,
                   const ocl_args_t *args);
int32_t ocl__fill_zero(ses_drv_device_t *device, const ses_drv_node_t *node, const ocl_arg_t *y);
int32_t ocl__strided(ses_drv_device_t *device, const ses_drv_node_t *node, uint32_t esize, cl_mem x,
                     cl_long xo, cl_mem y, cl_long yo, uint64_t n, const ocl_bcast_t *bc);

/* A kernel's compute entry (ses_drv_kernel_t.compute): every ocl__k_ function below is one. */
typedef int32_t ocl__kernel_fn(ses_drv_device_t *device, void *state,
                               const ses_drv_launch_t *launch);

/* ocl_elementwise.c */
int32_t ocl__unary_f32(ses_drv_device_t *device, const ses_drv_node_t *node, const ocl_arg_t *x,
                       const ocl_arg_t *y, int op, float alpha);
ocl__kernel_fn ocl__k_unary, ocl__k_binary, ocl__k_compare, ocl__k_where;

/* ocl_copy.c */
ocl__kernel_fn ocl__k_copy, ocl__k_transpose, ocl__k_slice, ocl__k_concat, ocl__k_expand,
    ocl__k_cast, ocl__k_gather;

/* ocl_reduce.c */
ocl__kernel_fn ocl__k_reduce, ocl__k_reduce_sum_like, ocl__k_reduce_grad, ocl__k_softmax,
    ocl__k_argmax;

/* ocl_gemm.c */
int32_t ocl__blast_fail(ses_drv_device_t *device, const ses_drv_node_t *node, CLBlastStatusCode s);
CLBlastStatusCode ocl__gemm(ses_drv_device_t *device, int f64, int ta, int tb, size_t m, size_t n,
                            size_t k, double alpha, cl_mem a, size_t ao, cl_mem b, size_t bo,
                            double beta, cl_mem y, size_t yo);
ocl__kernel_fn ocl__k_matmul, ocl__k_matmul_grad, ocl__k_gemm;

/* ocl_loss.c */
ocl__kernel_fn ocl__k_sce, ocl__k_nll, ocl__k_sce_grad, ocl__k_nll_grad;

/* ocl_train.c */
ocl__kernel_fn ocl__k_scalar_like, ocl__k_optim;

/* ocl_cnn.c */
ocl__kernel_fn ocl__k_conv, ocl__k_conv_grad, ocl__k_pool, ocl__k_batch_norm, ocl__k_dropout,
    ocl__k_pad, ocl__k_pad_grad, ocl__k_clip, ocl__k_split, ocl__k_shape, ocl__k_constant_of_shape,
    ocl__k_range;

#endif
