/*
 * What cuda_driver.c (C) and cuda_kernels.cu (CUDA C++) share: the launchers of the device
 * kernels and their parameters. Plain C, no CUDA types, so that the C side needs only
 * <cuda_runtime_api.h> and the .cu file stays the only one nvcc compiles.
 */
#ifndef SES_CUDA_INTERNAL_H
#define SES_CUDA_INTERNAL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Broadcasting supports ranks up to this; supports_node refuses larger ones. */
#define CUDA_MAX_RANK 8

/* Storage types of the elementwise kernels (values of SES_DRV_DTYPE_*). */
#define CUDA_DT_F32 1
#define CUDA_DT_F16 3
#define CUDA_DT_BF16 4

/* Binary ops (two inputs, numpy broadcasting). */
#define CUDA_BIN_ADD 0
#define CUDA_BIN_SUB 1
#define CUDA_BIN_MUL 2
#define CUDA_BIN_DIV 3
#define CUDA_BIN_POW 4
#define CUDA_BIN_RELU_GRAD 5
#define CUDA_BIN_LEAKY_RELU_GRAD 6
#define CUDA_BIN_SIGMOID_GRAD 7
#define CUDA_BIN_TANH_GRAD 8
#define CUDA_BIN_FIRST 9 /* alpha * a, broadcast: Gemm's C into Y, ExpandLike, ReduceGrad */

/* Unary ops. */
#define CUDA_UN_NEG 0
#define CUDA_UN_ABS 1
#define CUDA_UN_RELU 2
#define CUDA_UN_EXP 3
#define CUDA_UN_LOG 4
#define CUDA_UN_SQRT 5
#define CUDA_UN_RECIPROCAL 6
#define CUDA_UN_SIGMOID 7
#define CUDA_UN_TANH 8
#define CUDA_UN_LEAKY_RELU 9
#define CUDA_UN_FILL 10 /* alpha; x is not read (ScalarLike) */

/* Reductions. */
#define CUDA_RED_SUM 0
#define CUDA_RED_MEAN 1
#define CUDA_RED_MAX 2

/* A broadcast walk: the output's dims and each input's element stride per output dim (0 where
 * that input is broadcast). `same` set: both inputs have the output's shape (plain index). */
typedef struct cuda_bcast {
    int64_t dims[CUDA_MAX_RANK];
    int64_t stride[2][CUDA_MAX_RANK];
    int64_t count;
    uint32_t rank;
    uint32_t same;
} cuda_bcast_t;

/* A sum down to a broadcast shape (ReduceSumLike): the input's dims split into kept ones (in
 * the output's order) and summed ones, each with its element stride in the input. */
typedef struct cuda_rsum {
    int64_t keep_dims[CUDA_MAX_RANK], keep_stride[CUDA_MAX_RANK];
    int64_t red_dims[CUDA_MAX_RANK], red_stride[CUDA_MAX_RANK];
    int64_t out_count, red_count;
    uint32_t n_keep, n_red;
} cuda_rsum_t;

/* nvcc does not pass -fvisibility=hidden to the host compiler: mark the launchers, so that the
 * module exports only ses_drv_negotiate. */
#if defined(__GNUC__)
#define CUDA_HIDDEN __attribute__((visibility("hidden")))
#else
#define CUDA_HIDDEN
#endif

/* Launchers: enqueue on @p stream (a cudaStream_t) and return a cudaError_t (0 = success). */
CUDA_HIDDEN int cuda__binary(uint32_t dtype, const cuda_bcast_t *g, int op, float alpha,
                             const void *a, const void *b, void *o, void *stream);
CUDA_HIDDEN int cuda__unary(uint32_t dtype, int64_t n, int op, float alpha, const void *x, void *y,
                            void *stream);
CUDA_HIDDEN int cuda__reduce(int64_t outer, int64_t red, int64_t inner, int op, const float *x,
                             float *y, void *stream);
CUDA_HIDDEN int cuda__softmax(int64_t outer, int64_t red, int64_t inner, int log_softmax,
                              const float *x, float *y, void *stream);
CUDA_HIDDEN int cuda__rsum(const cuda_rsum_t *r, const float *x, float *y, void *stream);
/* SoftmaxGrad (log_softmax 0) or LogSoftmaxGrad (1) along the middle dim of [outer, red, inner]. */
CUDA_HIDDEN int cuda__softmax_grad(int64_t outer, int64_t red, int64_t inner, int log_softmax,
                                   const float *dy, const float *y, float *dx, void *stream);
/* SoftmaxCrossEntropyLoss over [N, C, inner...] scores: `positions` = N * inner, one block.
 * labels are i64 (labels64) or i32; weights, log_prob may be NULL; reduction 0 mean, 1 sum,
 * 2 none. The first position whose label is out of range and not ignored is atomically
 * min-ed into *bad (which the caller set to UINT64_MAX). */
CUDA_HIDDEN int cuda__sce_loss(int64_t positions, int64_t classes, int64_t inner, const float *x,
                               const void *labels, int labels64, const float *weights,
                               int has_ignore, int64_t ignore_index, int reduction, float *loss,
                               float *log_prob, unsigned long long *bad, void *stream);
/* Its gradient: dloss (scalar, or per position for none), log_prob, labels, weights. */
CUDA_HIDDEN int cuda__sce_grad(int64_t positions, int64_t classes, int64_t inner,
                               const float *dloss, const float *log_prob, const void *labels,
                               int labels64, const float *weights, int has_ignore,
                               int64_t ignore_index, int reduction, float *dx,
                               unsigned long long *bad, void *stream);
CUDA_HIDDEN int cuda__sgd(int64_t n, float *var, const float *grad, const float *lr, void *stream);
CUDA_HIDDEN int cuda__momentum(int64_t n, float *var, const float *grad, const float *lr,
                               float *vel, float momentum, int nesterov, void *stream);
CUDA_HIDDEN int cuda__adam(int64_t n, float *var, const float *grad, const float *lr, float *m,
                           float *v, float *t, float beta1, float beta2, float eps, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* SES_CUDA_INTERNAL_H */
