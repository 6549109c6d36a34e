/*
 * cuDNN 9, loaded at run time (dlopen), never a link-time dependency of the CUDA driver.
 *
 * Only the legacy ("v7"-style) API's handful of functions for Conv, ConvGrad and the pools are
 * used. The types are declared here, not taken from <cudnn.h>, so that the driver builds without
 * cuDNN's headers: handles and descriptors are opaque pointers, enums are ints with the values
 * of cuDNN 9's headers (cuda_cudnn.c checks them against <cudnn.h> when that header is there).
 *
 * Plain C, no CUDA types (a stream is a void *), so that the loader can be unit-tested without
 * the toolkit.
 */
#ifndef SES_CUDA_CUDNN_H
#define SES_CUDA_CUDNN_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int cudnn_status_t; /* cudnnStatus_t: 0 = CUDNN_STATUS_SUCCESS */
typedef void *cudnn_handle_t;
typedef void *cudnn_tensor_desc_t;
typedef void *cudnn_filter_desc_t;
typedef void *cudnn_conv_desc_t;
typedef void *cudnn_pool_desc_t;

/* Enum values (cudnn_graph_v9.h, cudnn_ops_v9.h). */
#define CUDNN__STATUS_SUCCESS 0
#define CUDNN__DATA_FLOAT 0
#define CUDNN__DATA_DOUBLE 1
#define CUDNN__TENSOR_NCHW 0
#define CUDNN__CROSS_CORRELATION 1
#define CUDNN__DEFAULT_MATH 0
#define CUDNN__FMA_MATH 3
#define CUDNN__NOT_PROPAGATE_NAN 0
#define CUDNN__PROPAGATE_NAN 1
#define CUDNN__POOLING_AVERAGE_COUNT_INCLUDE_PADDING 1
#define CUDNN__POOLING_AVERAGE_COUNT_EXCLUDE_PADDING 2
#define CUDNN__POOLING_MAX_DETERMINISTIC 3

/* cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t share this layout. */
typedef struct cudnn_perf {
    int algo;
    cudnn_status_t status;
    float time;
    size_t memory;
    int determinism;
    int math_type;
    int reserved[3];
} cudnn_perf_t;

/* The functions, resolved from the library; every one is set once cuda__cudnn_load succeeds. */
typedef struct cuda_cudnn {
    void *lib;      /* dlopen handle; NULL: not loaded */
    size_t version; /* cudnnGetVersion(): 91900 for 9.19.0 */
    char path[512]; /* what was opened: a path or a file name for the loader's search */

    size_t (*GetVersion)(void);
    const char *(*GetErrorString)(cudnn_status_t);
    cudnn_status_t (*Create)(cudnn_handle_t *);
    cudnn_status_t (*Destroy)(cudnn_handle_t);
    cudnn_status_t (*SetStream)(cudnn_handle_t, void *stream);
    cudnn_status_t (*CreateTensorDescriptor)(cudnn_tensor_desc_t *);
    cudnn_status_t (*DestroyTensorDescriptor)(cudnn_tensor_desc_t);
    cudnn_status_t (*SetTensorNdDescriptor)(cudnn_tensor_desc_t, int dtype, int n, const int *dims,
                                            const int *strides);
    cudnn_status_t (*CreateFilterDescriptor)(cudnn_filter_desc_t *);
    cudnn_status_t (*DestroyFilterDescriptor)(cudnn_filter_desc_t);
    cudnn_status_t (*SetFilterNdDescriptor)(cudnn_filter_desc_t, int dtype, int format, int n,
                                            const int *dims);
    cudnn_status_t (*CreateConvolutionDescriptor)(cudnn_conv_desc_t *);
    cudnn_status_t (*DestroyConvolutionDescriptor)(cudnn_conv_desc_t);
    cudnn_status_t (*SetConvolutionNdDescriptor)(cudnn_conv_desc_t, int n, const int *pads,
                                                 const int *strides, const int *dilations,
                                                 int mode, int compute_type);
    cudnn_status_t (*SetConvolutionGroupCount)(cudnn_conv_desc_t, int groups);
    cudnn_status_t (*SetConvolutionMathType)(cudnn_conv_desc_t, int math_type);
    cudnn_status_t (*GetConvolutionNdForwardOutputDim)(cudnn_conv_desc_t, cudnn_tensor_desc_t,
                                                       cudnn_filter_desc_t, int n, int *dims);
    cudnn_status_t (*GetConvolutionForwardAlgorithm_v7)(cudnn_handle_t, cudnn_tensor_desc_t x,
                                                        cudnn_filter_desc_t w,
                                                        cudnn_conv_desc_t conv,
                                                        cudnn_tensor_desc_t y, int requested,
                                                        int *returned, cudnn_perf_t *perf);
    cudnn_status_t (*GetConvolutionForwardWorkspaceSize)(cudnn_handle_t, cudnn_tensor_desc_t x,
                                                         cudnn_filter_desc_t w,
                                                         cudnn_conv_desc_t conv,
                                                         cudnn_tensor_desc_t y, int algo,
                                                         size_t *bytes);
    cudnn_status_t (*ConvolutionForward)(cudnn_handle_t, const void *alpha, cudnn_tensor_desc_t,
                                         const void *x, cudnn_filter_desc_t, const void *w,
                                         cudnn_conv_desc_t, int algo, void *ws, size_t ws_bytes,
                                         const void *beta, cudnn_tensor_desc_t, void *y);
    cudnn_status_t (*GetConvolutionBackwardDataAlgorithm_v7)(
        cudnn_handle_t, cudnn_filter_desc_t w, cudnn_tensor_desc_t dy, cudnn_conv_desc_t conv,
        cudnn_tensor_desc_t dx, int requested, int *returned, cudnn_perf_t *perf);
    cudnn_status_t (*GetConvolutionBackwardDataWorkspaceSize)(cudnn_handle_t,
                                                              cudnn_filter_desc_t w,
                                                              cudnn_tensor_desc_t dy,
                                                              cudnn_conv_desc_t conv,
                                                              cudnn_tensor_desc_t dx, int algo,
                                                              size_t *bytes);
    cudnn_status_t (*ConvolutionBackwardData)(cudnn_handle_t, const void *alpha,
                                              cudnn_filter_desc_t, const void *w,
                                              cudnn_tensor_desc_t, const void *dy,
                                              cudnn_conv_desc_t, int algo, void *ws,
                                              size_t ws_bytes, const void *beta,
                                              cudnn_tensor_desc_t, void *dx);
    cudnn_status_t (*GetConvolutionBackwardFilterAlgorithm_v7)(
        cudnn_handle_t, cudnn_tensor_desc_t x, cudnn_tensor_desc_t dy, cudnn_conv_desc_t conv,
        cudnn_filter_desc_t dw, int requested, int *returned, cudnn_perf_t *perf);
    cudnn_status_t (*GetConvolutionBackwardFilterWorkspaceSize)(cudnn_handle_t,
                                                                cudnn_tensor_desc_t x,
                                                                cudnn_tensor_desc_t dy,
                                                                cudnn_conv_desc_t conv,
                                                                cudnn_filter_desc_t dw, int algo,
                                                                size_t *bytes);
    cudnn_status_t (*ConvolutionBackwardFilter)(cudnn_handle_t, const void *alpha,
                                                cudnn_tensor_desc_t, const void *x,
                                                cudnn_tensor_desc_t, const void *dy,
                                                cudnn_conv_desc_t, int algo, void *ws,
                                                size_t ws_bytes, const void *beta,
                                                cudnn_filter_desc_t, void *dw);
    cudnn_status_t (*AddTensor)(cudnn_handle_t, const void *alpha, cudnn_tensor_desc_t,
                                const void *a, const void *beta, cudnn_tensor_desc_t, void *c);
    cudnn_status_t (*CreatePoolingDescriptor)(cudnn_pool_desc_t *);
    cudnn_status_t (*DestroyPoolingDescriptor)(cudnn_pool_desc_t);
    cudnn_status_t (*SetPoolingNdDescriptor)(cudnn_pool_desc_t, int mode, int nan_opt, int n,
                                             const int *window, const int *pads,
                                             const int *strides);
    cudnn_status_t (*PoolingForward)(cudnn_handle_t, cudnn_pool_desc_t, const void *alpha,
                                     cudnn_tensor_desc_t, const void *x, const void *beta,
                                     cudnn_tensor_desc_t, void *y);
} cuda_cudnn_t;

/* What SESSION_DRIVER_CUDA_CUDNN (driver.cuda.cudnn) is when unset: the loader's search. */
#define CUDA_CUDNN_DEFAULT_NAME "libcudnn.so.9"

/*
 * Loads cuDNN into @p out as @p spec says: NULL or "" searches @p default_name (normally
 * CUDA_CUDNN_DEFAULT_NAME) on the loader's path; "0", "off" or "none" turns cuDNN off; a folder
 * (PyTorch's nvidia/cudnn/lib) means <folder>/libcudnn.so.9; anything else is the library's
 * path. Returns 0 with every function set, or -1 with @p out cleared and @p why saying what
 * failed (the dlerror text, the missing symbol, a version below 9, or "turned off"), in one line.
 * Not thread-safe; call once per driver.
 */
int cuda__cudnn_load(const char *spec, const char *default_name, cuda_cudnn_t *out, char *why,
                     size_t why_size);

/* Closes the library (NULL or not loaded: nothing). */
void cuda__cudnn_unload(cuda_cudnn_t *c);

/* "9.19.0" from cudnnGetVersion()'s @p version (cuDNN 9 encodes major * 10000). */
void cuda__cudnn_version_str(size_t version, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* SES_CUDA_CUDNN_H */
