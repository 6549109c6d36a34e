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
int32_t cuda__k_binary(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);
int32_t cuda__k_unary(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);
int32_t cuda__k_compare(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);
int32_t cuda__k_where(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);
int32_t cuda__k_cast(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);
int32_t cuda__k_copy_op(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);

/* cuda_copy.c */
int32_t cuda__run_strided(ses_drv_device_t *device, const ses_drv_launch_t *launch, uint32_t esize,
                          const cuda_bcast_t *g, const void *x, void *y);
int32_t cuda__k_transpose(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);
int32_t cuda__k_slice(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);
int32_t cuda__k_slice_grad(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);
int32_t cuda__k_concat(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);
int32_t cuda__k_expand_like(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);
int32_t cuda__k_gather(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);
int32_t cuda__k_gather_grad(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);

/* cuda_reduce.c */
int32_t cuda__k_reduce(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);
int32_t cuda__k_reduce_sum_like(ses_drv_device_t *device, void *state,
                                const ses_drv_launch_t *launch);
int32_t cuda__k_softmax(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);
int32_t cuda__k_argmax(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);
int32_t cuda__k_reduce_grad(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);
int32_t cuda__k_scalar_like(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);

/* cuda_gemm.c */
int32_t cuda__gemm(ses_drv_device_t *device, const ses_drv_launch_t *launch, uint32_t dtype, int ta,
                   int tb, int64_t m, int64_t n, int64_t k, double alpha, const void *A, int64_t sa,
                   const void *B, int64_t sb, double beta, void *Y, int64_t sy, int64_t batch);
int32_t cuda__k_matmul(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);
int32_t cuda__k_matmul_grad(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);
int32_t cuda__k_gemm_op(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);

/* cuda_shape.c */
int32_t cuda__k_clip(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);
int32_t cuda__k_split(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);
int32_t cuda__k_shape(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);
int32_t cuda__k_constant_of_shape(ses_drv_device_t *device, void *state,
                                  const ses_drv_launch_t *launch);
int32_t cuda__k_range(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);

/* cuda_cnn.c */
void cuda__cnn_destroy(ses_drv_device_t *device, void *state);
int32_t cuda__cnn_create(ses_drv_device_t *device, const ses_drv_node_t *node, void **out_state);
int32_t cuda__k_conv(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);
int32_t cuda__k_conv_grad(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);
int32_t cuda__k_pool(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);
int32_t cuda__k_batch_norm(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);
int32_t cuda__k_dropout(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);
int32_t cuda__k_pad(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);
int32_t cuda__k_pad_grad(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);
/* h-cuda (issue #22) */
int32_t cuda__k_conv_transpose(ses_drv_device_t *device, void *state,
                               const ses_drv_launch_t *launch);

/* cuda_loss.c */
int32_t cuda__k_sce(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);
int32_t cuda__k_optimizer(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);

/* h-cuda (issue #22). cuda_norm.c */
int32_t cuda__k_layer_norm(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);
int32_t cuda__k_layer_norm_grad(ses_drv_device_t *device, void *state,
                                const ses_drv_launch_t *launch);
/* cuda_index.c */
int32_t cuda__k_gather_elements(ses_drv_device_t *device, void *state,
                                const ses_drv_launch_t *launch);
int32_t cuda__k_topk(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);
int32_t cuda__nms_supports(ses_drv_device_t *device, const ses_drv_node_t *node);
int32_t cuda__k_nms(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);
/* cuda_resize.c */
int32_t cuda__resize_supports(ses_drv_device_t *device, const ses_drv_node_t *node);
int32_t cuda__k_resize(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);
int32_t cuda__k_resize_grad(ses_drv_device_t *device, void *state,
                            const ses_drv_launch_t *launch);

#endif
