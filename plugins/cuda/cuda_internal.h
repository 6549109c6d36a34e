/*
 * What the op families (C, cuda_ops.h) and the kernel files cuda_kernels_*.cu (CUDA C++) share:
 * the launchers of the device kernels and their parameters. Plain C, no CUDA types, so that the C
 * side needs only <cuda_runtime_api.h> and the .cu files stay the only ones nvcc compiles.
 */
#ifndef SES_CUDA_INTERNAL_H
#define SES_CUDA_INTERNAL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Walks (broadcasting, strided copies, reductions) support ranks up to this; larger ones are
 * refused in supports_node. */
#define CUDA_MAX_RANK 8

/* Storage types the launchers take (values of SES_DRV_DTYPE_*). */
#define CUDA_DT_F32 1
#define CUDA_DT_F64 2
#define CUDA_DT_F16 3
#define CUDA_DT_BF16 4
#define CUDA_DT_I8 5
#define CUDA_DT_I16 6
#define CUDA_DT_I32 7
#define CUDA_DT_I64 8
#define CUDA_DT_U8 9
#define CUDA_DT_U16 10
#define CUDA_DT_U32 11
#define CUDA_DT_U64 12
#define CUDA_DT_BOOL 13

/* Binary ops (two inputs, numpy broadcasting). ADD to DIV also at i32 and i64 (wrapping; Div
 * truncates, x / 0 gives 0 and the caller reports it, MIN / -1 gives MIN). */
#define CUDA_BIN_ADD 0
#define CUDA_BIN_SUB 1
#define CUDA_BIN_MUL 2
#define CUDA_BIN_DIV 3
#define CUDA_BIN_POW 4
#define CUDA_BIN_RELU_GRAD 5
#define CUDA_BIN_LEAKY_RELU_GRAD 6
#define CUDA_BIN_SIGMOID_GRAD 7
#define CUDA_BIN_TANH_GRAD 8
#define CUDA_BIN_FIRST 9 /* alpha * a, broadcast: Gemm's C into Y, ReduceGrad */
/* h-cuda: GeluGrad (dy, x), exact and with the tanh approximation. */
#define CUDA_BIN_GELU_GRAD 10
#define CUDA_BIN_GELU_TANH_GRAD 11

/* Unary ops. NEG, ABS, RELU also at i32 and i64 (wrapping). */
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
#define CUDA_UN_SOFTPLUS 10
#define CUDA_UN_ERF 11
/* h-cuda: Gelu, exact (x Phi(x)) and with the tanh approximation. */
#define CUDA_UN_GELU 12
#define CUDA_UN_GELU_TANH 13

/* Comparisons (to bool). */
#define CUDA_CMP_EQUAL 0
#define CUDA_CMP_GREATER 1
#define CUDA_CMP_LESS 2

/* Reductions. */
#define CUDA_RED_SUM 0
#define CUDA_RED_MEAN 1
#define CUDA_RED_MAX 2

/* Softmax family along one axis. */
#define CUDA_SM_SOFTMAX 0
#define CUDA_SM_LOG_SOFTMAX 1
#define CUDA_SM_SOFTMAX_GRAD 2     /* a = dy, b = y */
#define CUDA_SM_LOG_SOFTMAX_GRAD 3 /* a = dy, b = y */

/*
 * A walk over the output's dims with up to three operands' element strides per dim (0 where an
 * operand is broadcast; negative for a Slice that walks backwards). Broadcasting ops read
 * operand k at stride[k]; strided copies read at stride[0] and write at stride[1]. `same` set:
 * every operand is dense in output order, so its offset is the index itself.
 */
typedef struct cuda_bcast {
    int64_t dims[CUDA_MAX_RANK];
    int64_t stride[3][CUDA_MAX_RANK];
    int64_t count;
    uint32_t rank;
    uint32_t same;
} cuda_bcast_t;

/* A reduction (ReduceSum/Mean/Max over any axes, ReduceSumLike): the input's dims split into
 * kept ones (in the output's order) and reduced ones, each with its element stride in the
 * input. Output element i sums (or maxes) the red_count elements of its kept position. */
typedef struct cuda_rsum {
    int64_t keep_dims[CUDA_MAX_RANK], keep_stride[CUDA_MAX_RANK];
    int64_t red_dims[CUDA_MAX_RANK], red_stride[CUDA_MAX_RANK];
    int64_t out_count, red_count;
    uint32_t n_keep, n_red;
} cuda_rsum_t;

/*
 * A sum of matrix products over broadcast batches: the gradient of a MatMul operand that was
 * broadcast along some batch dims, for f16 and bf16, where summing the batches' GEMMs into the
 * output would round every partial sum. Output element (kept batch, i, j) of [m, n] matrices
 * is the sum over the summed batches and p < k of op(X)[i, p] * op(Z)[p, j], in f32, rounded
 * once. op(X)[i, p] lies at i * x_i + p * x_p from its batch's matrix, op(Z)[p, j] at
 * p * z_p + j * z_j, Y[i, j] at i * n + j. The batch dims are split into kept ones (Y walks
 * them; strides of X, Z, Y) and summed ones (Y repeats; strides of X, Z), outermost first.
 */
typedef struct cuda_gsum {
    int64_t m, n, k;
    int64_t x_i, x_p, z_p, z_j;
    int64_t keep_dims[CUDA_MAX_RANK], keep_stride[3][CUDA_MAX_RANK];
    int64_t sum_dims[CUDA_MAX_RANK], sum_stride[2][CUDA_MAX_RANK];
    int64_t out_count, sum_count; /* kept batches * m * n; summed batches */
    uint32_t n_keep, n_sum;
} cuda_gsum_t;

/* The window of a pool or convolution over [N, C, spatial...]: kernel, strides, dilations, pads
 * (begin, end) and the input's and output's spatial dims, one entry per spatial dim. */
#define CUDA_SPATIAL_MAX (CUDA_MAX_RANK - 2)
typedef struct cuda_win {
    int64_t k[CUDA_SPATIAL_MAX], s[CUDA_SPATIAL_MAX], d[CUDA_SPATIAL_MAX];
    int64_t pb[CUDA_SPATIAL_MAX], pe[CUDA_SPATIAL_MAX];
    int64_t in[CUDA_SPATIAL_MAX], out[CUDA_SPATIAL_MAX];
    int64_t k_count, in_count, out_count; /* products over the spatial dims */
    int64_t batch, c, m, group; /* convolutions: X [batch, c, in...], W [m, c/group, k...] */
    uint32_t n;                 /* spatial dims */
} cuda_win_t;

/* h-cuda: Resize's parameters, with the codes of libsession/src/ops/resize.c (mode 0 nearest,
 * 1 linear, 2 cubic; coord 0 half_pixel .. 6 tf_crop_and_resize; nearest 0 round_prefer_floor,
 * 1 round_prefer_ceil, 2 floor, 3 ceil), X's and Y's dims, and per axis scales, lengths and roi
 * (starts, then ends). No antialias (refused). */
typedef struct cuda_resize {
    int64_t in[CUDA_MAX_RANK], out[CUDA_MAX_RANK];
    double scales[CUDA_MAX_RANK], lengths[CUDA_MAX_RANK], roi[2 * CUDA_MAX_RANK];
    double cubic_a, extrapolation;
    int64_t count; /* Y's (Resize) or dY's (ResizeGrad) elements */
    uint64_t fill; /* extrapolation_value's bits in an integer Y's dtype (nearest copies) */
    int32_t mode, coord, nearest, exclude;
    uint32_t rank;
} cuda_resize_t;

/* Pools (CUDA_POOL_*). */
#define CUDA_POOL_MAX 0
#define CUDA_POOL_AVG 1

/* Pad's modes. */
#define CUDA_PAD_CONSTANT 0
#define CUDA_PAD_REFLECT 1
#define CUDA_PAD_EDGE 2

/* nvcc does not pass -fvisibility=hidden to the host compiler: mark the launchers, so that the
 * module exports only ses_drv_negotiate. */
#if defined(__GNUC__)
#define CUDA_HIDDEN __attribute__((visibility("hidden")))
#else
#define CUDA_HIDDEN
#endif

/*
 * Launchers: enqueue on @p stream (a cudaStream_t) and return a cudaError_t (0 = success); an
 * unsupported dtype gives cudaErrorInvalidValue. None synchronizes, allocates or copies to the
 * host, so each may be captured into a CUDA Graph.
 */

/* Binary op @p op over walk @p g (strides 0 and 1): f32, f64, f16, bf16 (computed in f32, f64
 * in f64), or i32, i64 for ADD to DIV. */
CUDA_HIDDEN int cuda__binary(uint32_t dtype, const cuda_bcast_t *g, int op, double alpha,
                             const void *a, const void *b, void *o, void *stream);
/* Unary op over @p n elements: f32, f64, f16, bf16; i32, i64 for NEG, ABS, RELU. */
CUDA_HIDDEN int cuda__unary(uint32_t dtype, int64_t n, int op, double alpha, const void *x, void *y,
                            void *stream);
/* Comparison of a and b (strides 0 and 1) into bool: f32, f64, i32, i64, u8, bool. */
CUDA_HIDDEN int cuda__compare(uint32_t dtype, const cuda_bcast_t *g, int op, const void *a,
                              const void *b, uint8_t *o, void *stream);
/* Where(c, a, b) (strides 0, 1, 2) by element size 1, 2, 4 or 8 bytes. */
CUDA_HIDDEN int cuda__where(uint32_t esize, const cuda_bcast_t *g, const uint8_t *c, const void *a,
                            const void *b, void *o, void *stream);
/* Cast of @p n elements between f32, f64, i32, i64, u8, bool, and f32 <-> f16, bf16. */
CUDA_HIDDEN int cuda__cast(uint32_t from, uint32_t to, int64_t n, const void *x, void *y,
                           void *stream);
/* @p n elements of @p dtype (any of the 13) set to @p value (ScalarLike): integers toward zero,
 * saturating, NaN giving 0; bool value != 0; f16 and bf16 rounded through f32, as the CPU. */
CUDA_HIDDEN int cuda__fill(uint32_t dtype, int64_t n, double value, void *y, void *stream);
/* y[offset(stride[1], i)] = x[offset(stride[0], i)] over g's dims, by element size 1, 2, 4 or
 * 8 bytes: Transpose, Slice, Concat, ExpandLike, SliceGrad. x and y point at element 0 of the
 * walk; offsets may be negative. */
CUDA_HIDDEN int cuda__strided(uint32_t esize, const cuda_bcast_t *g, const void *x, void *y,
                              void *stream);
/* ReduceSum, ReduceMean (f32, f64), ReduceMax over r: f32, f64, i32, i64 (sums wrap). */
CUDA_HIDDEN int cuda__reduce(uint32_t dtype, const cuda_rsum_t *r, int op, const void *x, void *y,
                             void *stream);
/* The sum of matrix products @p g describes, Y = sum op(X) op(Z) (every output element written
 * once): f16, bf16. */
CUDA_HIDDEN int cuda__gemm_sum(uint32_t dtype, const cuda_gsum_t *g, const void *x, const void *z,
                               void *y, void *stream);
/* The softmax family (CUDA_SM_*) along the middle dim of [outer, red, inner]: f32, f64. */
CUDA_HIDDEN int cuda__softmax(uint32_t dtype, int64_t outer, int64_t red, int64_t inner, int mode,
                              const void *a, const void *b, void *y, void *stream);
/* ArgMax along the middle dim of [outer, red > 0, inner] into i64: f32, f64, i32, i64. NaN
 * counts as largest; ties take the first index, or the last with @p last. */
CUDA_HIDDEN int cuda__argmax(uint32_t dtype, int64_t outer, int64_t red, int64_t inner, int last,
                             const void *x, int64_t *y, void *stream);
/* Min-s into *bad the position of the first of @p n indices (i32, or i64 with idx64) outside
 * [-dim, dim). The caller set *bad to UINT64_MAX. */
CUDA_HIDDEN int cuda__check_indices(int64_t n, const void *idx, int idx64, int64_t dim,
                                    unsigned long long *bad, void *stream);
/* Min-s into *bad the position of the first zero among @p n i32 or i64 values. */
CUDA_HIDDEN int cuda__find_zero(uint32_t dtype, int64_t n, const void *x, unsigned long long *bad,
                                void *stream);
/* Gather of data [outer, dim, inner] with nidx checked indices into [outer, nidx, inner], by
 * element size 1, 2, 4 or 8 bytes. */
CUDA_HIDDEN int cuda__gather(uint32_t esize, int64_t outer, int64_t dim, int64_t nidx,
                             int64_t inner, const void *x, const void *idx, int idx64, void *y,
                             void *stream);
/* GatherGrad: out [outer, dim, inner] = the blocks of dy [outer, nidx, inner] summed where
 * Gather took them, in the order of the indices (checked first): f32, f64. */
CUDA_HIDDEN int cuda__gather_grad(uint32_t dtype, int64_t outer, int64_t dim, int64_t nidx,
                                  int64_t inner, const void *dy, const void *idx, int idx64,
                                  void *out, void *stream);
/* Clip of @p n elements to the bounds at @p lo and @p hi (device scalars, NULL when absent): f32,
 * f64, i32, i64. */
CUDA_HIDDEN int cuda__clip(uint32_t dtype, int64_t n, const void *x, const void *lo, const void *hi,
                           void *y, void *stream);
/* Range: y[i] = *start + i * *delta for @p n elements (device scalars): f32, f64, i32, i64. */
CUDA_HIDDEN int cuda__range(uint32_t dtype, int64_t n, const void *start, const void *delta,
                            void *y, void *stream);
/* @p n elements of @p esize bytes (1, 2, 4, 8) set to the low bytes of @p bits. */
CUDA_HIDDEN int cuda__fill_bits(uint32_t esize, int64_t n, uint64_t bits, void *y, void *stream);
/* y[0 .. n) = values[0 .. n), n <= CUDA_MAX_RANK, passed by value (capturable). */
CUDA_HIDDEN int cuda__store_i64(int64_t n, const int64_t *values, int64_t *y, void *stream);
/* MaxPool or AveragePool (@p include_pad: count_include_pad) over @p planes = N * C planes of
 * window @p w: f32, f64. */
CUDA_HIDDEN int cuda__pool(uint32_t dtype, const cuda_win_t *w, int64_t planes, int op,
                           int include_pad, const void *x, void *y, void *stream);
/* Their gradients into dx (zeroed here first): dy, and for MaxPoolGrad the forward input x. */
CUDA_HIDDEN int cuda__pool_grad(uint32_t dtype, const cuda_win_t *w, int64_t planes, int op,
                                int include_pad, const void *dy, const void *x, void *dx,
                                void *stream);
/* BatchNormalization (inference) of x [N, C, inner...] with per-channel scale, bias, mean, var. */
CUDA_HIDDEN int cuda__batch_norm(uint32_t dtype, int64_t n, int64_t channels, int64_t inner,
                                 const void *x, const void *scale, const void *bias,
                                 const void *mean, const void *var, double eps, void *y,
                                 void *stream);
/* Pad of x (rank @p rank, dims @p xd) into y (dims @p yd) with @p begin pads per dim, by element
 * size; constant mode fills from @p fill (one device element) or zeros when NULL. */
CUDA_HIDDEN int cuda__pad(uint32_t esize, uint32_t rank, const int64_t *xd, const int64_t *yd,
                          const int64_t *begin, int mode, const void *x, const void *fill, void *y,
                          int64_t count, void *stream);
/* PadGrad: dx (dims xd, zeroed here first) gets each dy element (dims yd) added where Pad read
 * it: f32, f64. */
CUDA_HIDDEN int cuda__pad_grad(uint32_t dtype, uint32_t rank, const int64_t *xd, const int64_t *yd,
                               const int64_t *begin, int mode, const void *dy, void *dx,
                               int64_t dx_count, int64_t dy_count, void *stream);
/* Conv: y [batch, m, out...] = W * x (+ b when not NULL), direct: f32, f64. */
CUDA_HIDDEN int cuda__conv(uint32_t dtype, const cuda_win_t *w, const void *x, const void *wt,
                           const void *b, void *y, void *stream);
/* ConvGrad: dx (@p input 0) or dW (1) from dy, x, W. */
CUDA_HIDDEN int cuda__conv_grad(uint32_t dtype, const cuda_win_t *w, int input, const void *dy,
                                const void *x, const void *wt, void *out, void *stream);
/* The implicit-GEMM fallback of Conv and ConvGrad (no cuDNN): f32, f64. */
/* im2col of @p nb images from image @p n0 of x into col: [nb][C * k_count][out_count], or with
 * @p dw [C * k_count][nb * out_count] (the images side by side, for dW's one GEMM). */
CUDA_HIDDEN int cuda__im2col(uint32_t dtype, const cuda_win_t *w, int64_t n0, int64_t nb, int dw,
                             const void *x, void *col, void *stream);
/* dx of @p nb images from col [nb][C * k_count][out_count] (a gather: every dx element written). */
CUDA_HIDDEN int cuda__col2im(uint32_t dtype, const cuda_win_t *w, int64_t nb, const void *col,
                             void *dx, void *stream);
/* dst [m][nb * p] = src [nb][m][p]. */
CUDA_HIDDEN int cuda__nmp_to_mnp(uint32_t dtype, int64_t nb, int64_t m, int64_t p, const void *src,
                                 void *dst, void *stream);
/* y [nb, m, p] += b[m]. */
CUDA_HIDDEN int cuda__channel_bias(uint32_t dtype, int64_t nb, int64_t m, int64_t p, const void *b,
                                   void *y, void *stream);
/* SoftmaxCrossEntropyLoss over [N, C, inner...] scores (f32 or f64, as are weights, loss and
 * log_prob): `positions` = N * inner, one block. labels are i64 (labels64) or i32; weights,
 * log_prob may be NULL; reduction 0 mean, 1 sum, 2 none. The first position whose label is out
 * of range and not ignored is atomically min-ed into *bad (which the caller set to UINT64_MAX). */
CUDA_HIDDEN int cuda__sce_loss(uint32_t dtype, int64_t positions, int64_t classes, int64_t inner,
                               const void *x, const void *labels, int labels64, const void *weights,
                               int has_ignore, int64_t ignore_index, int reduction, void *loss,
                               void *log_prob, unsigned long long *bad, void *stream);
/* Its gradient: dloss (scalar, or per position for none), log_prob, labels, weights. */
CUDA_HIDDEN int cuda__sce_grad(uint32_t dtype, int64_t positions, int64_t classes, int64_t inner,
                               const void *dloss, const void *log_prob, const void *labels,
                               int labels64, const void *weights, int has_ignore,
                               int64_t ignore_index, int reduction, void *dx,
                               unsigned long long *bad, void *stream);
/* The optimizers, in place, f32 or f64; lr (and Adam's t) are device scalars. Adam also adds 1
 * to t, after the update. */
CUDA_HIDDEN int cuda__sgd(uint32_t dtype, int64_t n, void *var, const void *grad, const void *lr,
                          void *stream);
CUDA_HIDDEN int cuda__momentum(uint32_t dtype, int64_t n, void *var, const void *grad,
                               const void *lr, void *vel, double momentum, int nesterov,
                               void *stream);
CUDA_HIDDEN int cuda__adam(uint32_t dtype, int64_t n, void *var, const void *grad, const void *lr,
                           void *m, void *v, void *t, double beta1, double beta2, double eps,
                           void *stream);

/* h-cuda (issue #22). LayerNormalization over @p rows rows of @p n elements (f32, f64): bias,
 * mean and inv_std may be NULL. Its gradient: dX (@p input 0) or dScale (1) from dy, x, scale. */
CUDA_HIDDEN int cuda__layer_norm(uint32_t dtype, int64_t rows, int64_t n, double eps,
                                 const void *x, const void *scale, const void *bias, void *y,
                                 void *mean, void *inv_std, void *stream);
CUDA_HIDDEN int cuda__layer_norm_grad(uint32_t dtype, int input, int64_t rows, int64_t n,
                                      double eps, const void *dy, const void *x, const void *scale,
                                      void *out, void *stream);
/* Resize (f32, f64, every mode; @p esize 1, 2, 4 or 8 with nearest: a copy of each element)
 * and ResizeGrad (f32, f64; dx must be zeroed first: dy's elements are added onto it). */
CUDA_HIDDEN int cuda__resize(uint32_t dtype, const cuda_resize_t *r, const void *x, void *y,
                             void *stream);
CUDA_HIDDEN int cuda__resize_grad(uint32_t dtype, const cuda_resize_t *r, const void *dy, void *dx,
                                  void *stream);
/* GatherElements by element size (1, 2, 4, 8): g walks the indices' dims (g->dims, g->count)
 * with data's strides in g->stride[0]; indices out of range are skipped (checked before). */
CUDA_HIDDEN int cuda__gather_elements(uint32_t esize, const cuda_bcast_t *g, int axis, int64_t dim,
                                      const void *x, const void *idx, int idx64, void *y,
                                      void *stream);
/* NonMaxSuppression (boxes [batch, n, 4], scores [batch, classes, n], f32) into out [rows, 3]
 * (i64), one block; a total of selected boxes other than @p rows is min-ed into *bad. At most
 * CUDA_NMS_MAX_BOXES boxes (more: cudaErrorInvalidValue). */
#define CUDA_NMS_MAX_BOXES 8192
CUDA_HIDDEN int cuda__nms(int64_t batch, int64_t n, int64_t classes, const float *boxes,
                          const float *scores, int center, int64_t max_out, int has_st,
                          double iou_th, double score_th, int64_t rows, int64_t *out,
                          unsigned long long *bad, void *stream);
/* TopK of x [outer, n, inner] along n (f32, f64, i32, i64): values and indices [outer, k, inner]. */
CUDA_HIDDEN int cuda__topk(uint32_t dtype, int64_t outer, int64_t n, int64_t inner, int64_t k,
                           int largest, const void *x, void *values, int64_t *indices,
                           void *stream);

#ifdef __cplusplus
}
#endif

#endif /* SES_CUDA_INTERNAL_H */
