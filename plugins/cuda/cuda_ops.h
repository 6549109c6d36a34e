/*
 * What the CUDA driver's op families share: the checked arguments of a launch, the host-side
 * checks and helpers (cuda_launch.c), and every compute entry the table (cuda_table.c) lists.
 * Each family is one file: cuda_elementwise.c, cuda_copy.c, cuda_reduce.c, cuda_gemm.c,
 * cuda_shape.c, cuda_cnn.c, cuda_loss.c. C only, like cuda_private.h.
 */
#ifndef SES_CUDA_OPS_H
#define SES_CUDA_OPS_H

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

/* A kernel's compute entry (ses_drv_kernel_t.compute): every cuda__k_ function below is one. */
typedef int32_t cuda__kernel_fn(ses_drv_device_t *device, void *state,
                                const ses_drv_launch_t *launch);

/* cuda_launch.c */
int32_t cuda__node_fail(ses_drv_device_t *device, const ses_drv_node_t *node, int32_t code,
                        const char *format, ...) CUDA_PRINTF(4, 5);
int32_t cuda__check_node(ses_drv_device_t *device, const ses_drv_node_t *node, uint32_t n_in_min,
                         uint32_t n_in_max, uint32_t n_out);
int32_t cuda__check_launch(ses_drv_device_t *device, const ses_drv_launch_t *launch,
                           uint32_t n_in_min, uint32_t n_in_max, uint32_t n_out, cuda_arg_t *args);
void *cuda__stream_of(ses_drv_device_t *device, const ses_drv_launch_t *launch);
int32_t cuda__finish(ses_drv_device_t *device, const ses_drv_launch_t *launch, int err);
int32_t cuda__attr_double(const ses_drv_node_t *node, const char *name, double def, double *out);
int32_t cuda__attr_int(const ses_drv_node_t *node, const char *name, int64_t def, int64_t *out);
int32_t cuda__attr_ints_max(ses_drv_device_t *device, const ses_drv_node_t *node, const char *name,
                            int64_t *out, uint32_t max, uint32_t *out_count);
int32_t cuda__attr_ints(ses_drv_device_t *device, const ses_drv_node_t *node, const char *name,
                        int64_t *out, uint32_t *out_count);
int32_t cuda__shape_fail(ses_drv_device_t *device, const ses_drv_node_t *node, const char *what,
                         const cuda_arg_t *a, const cuda_arg_t *b);
void cuda__strides(const int64_t *dims, uint32_t rank, int64_t *st);
int cuda__same_shape(const cuda_arg_t *a, const cuda_arg_t *b);
int32_t cuda__dtypes_agree(ses_drv_device_t *device, const ses_drv_node_t *node,
                           const cuda_arg_t *args, uint32_t n);
int32_t cuda__rank_supports(ses_drv_device_t *device, const ses_drv_node_t *node);
int cuda__check_begin(ses_drv_device_t *device, void *s);
int cuda__check_end(ses_drv_device_t *device, void *s, int err, unsigned long long *bad);
int64_t cuda__read_int(const void *ptr, uint32_t dtype, unsigned long long at);

/* cuda_elementwise.c */
int cuda__bcast_n(const cuda_arg_t *const *in, uint32_t n, const cuda_arg_t *o, cuda_bcast_t *g);
int cuda__bcast(const cuda_arg_t *a, const cuda_arg_t *b, const cuda_arg_t *o, cuda_bcast_t *g);
int cuda__is_int(uint32_t dtype);
cuda__kernel_fn cuda__k_binary, cuda__k_unary, cuda__k_compare, cuda__k_where, cuda__k_cast,
    cuda__k_copy_op;

/* cuda_copy.c */
int32_t cuda__run_strided(ses_drv_device_t *device, const ses_drv_launch_t *launch, uint32_t esize,
                          const cuda_bcast_t *g, const void *x, void *y);
cuda__kernel_fn cuda__k_transpose, cuda__k_slice, cuda__k_slice_grad, cuda__k_concat,
    cuda__k_expand_like, cuda__k_gather, cuda__k_gather_grad;

/* cuda_reduce.c */
cuda__kernel_fn cuda__k_reduce, cuda__k_reduce_sum_like, cuda__k_softmax, cuda__k_argmax,
    cuda__k_reduce_grad, cuda__k_scalar_like;

/* cuda_gemm.c */
int32_t cuda__gemm(ses_drv_device_t *device, const ses_drv_launch_t *launch, uint32_t dtype, int ta,
                   int tb, int64_t m, int64_t n, int64_t k, double alpha, const void *A, int64_t sa,
                   const void *B, int64_t sb, double beta, void *Y, int64_t sy, int64_t batch);
cuda__kernel_fn cuda__k_matmul, cuda__k_matmul_grad, cuda__k_gemm_op;

/* cuda_shape.c */
cuda__kernel_fn cuda__k_clip, cuda__k_split, cuda__k_shape, cuda__k_constant_of_shape,
    cuda__k_range;

/* cuda_cnn.c */
void cuda__cnn_destroy(ses_drv_device_t *device, void *state);
int32_t cuda__cnn_create(ses_drv_device_t *device, const ses_drv_node_t *node, void **out_state);
cuda__kernel_fn cuda__k_conv, cuda__k_conv_grad, cuda__k_pool, cuda__k_batch_norm, cuda__k_dropout,
    cuda__k_pad, cuda__k_pad_grad;
/* h-cuda (issue #22) */
cuda__kernel_fn cuda__k_conv_transpose;

/* cuda_loss.c */
cuda__kernel_fn cuda__k_sce, cuda__k_optimizer;

/* h-cuda (issue #22). cuda_norm.c */
cuda__kernel_fn cuda__k_layer_norm, cuda__k_layer_norm_grad;
/* cuda_index.c */
cuda__kernel_fn cuda__k_gather_elements, cuda__k_topk;
int32_t cuda__nms_supports(ses_drv_device_t *device, const ses_drv_node_t *node);
cuda__kernel_fn cuda__k_nms;
/* cuda_resize.c */
int32_t cuda__resize_supports(ses_drv_device_t *device, const ses_drv_node_t *node);
cuda__kernel_fn cuda__k_resize, cuda__k_resize_grad;

#endif
