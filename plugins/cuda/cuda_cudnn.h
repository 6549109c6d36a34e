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

/*
 * A convolution pass of cuDNN's legacy API, in X(return type, name less "cudnn", (parameters))
 * form: its algorithm search, its workspace size and the pass itself, reading descriptors IN0
 * and IN1 (with their data) and writing OUT. Forward: x, w -> y; BackwardData: w, dy -> dx;
 * BackwardFilter: x, dy -> dw.
 */
#define CUDA_CUDNN_CONV_PASS(X, PASS, IN0, IN1, OUT)                                               \
    X(cudnn_status_t, GetConvolution##PASS##Algorithm_v7,                                          \
      (cudnn_handle_t, IN0 in0, IN1 in1, cudnn_conv_desc_t conv, OUT out, int requested,           \
       int *returned, cudnn_perf_t *perf))                                                         \
    X(cudnn_status_t, GetConvolution##PASS##WorkspaceSize,                                         \
      (cudnn_handle_t, IN0 in0, IN1 in1, cudnn_conv_desc_t conv, OUT out, int algo,                \
       size_t *bytes))                                                                             \
    X(cudnn_status_t, Convolution##PASS,                                                           \
      (cudnn_handle_t, const void *alpha, IN0, const void *in0, IN1, const void *in1,              \
       cudnn_conv_desc_t, int algo, void *ws, size_t ws_bytes, const void *beta, OUT, void *out))

/*
 * The functions the driver resolves from the library, X(return type, name less "cudnn",
 * (parameters)): the members of cuda_cudnn_t and the names cuda__cudnn_load looks up, in this
 * order (GetVersion first, so that an older cuDNN is named as such).
 */
#define CUDA_CUDNN_FUNCTIONS(X)                                                                    \
    X(size_t, GetVersion, (void))                                                                  \
    X(const char *, GetErrorString, (cudnn_status_t))                                              \
    X(cudnn_status_t, Create, (cudnn_handle_t *))                                                  \
    X(cudnn_status_t, Destroy, (cudnn_handle_t))                                                   \
    X(cudnn_status_t, SetStream, (cudnn_handle_t, void *stream))                                   \
    X(cudnn_status_t, CreateTensorDescriptor, (cudnn_tensor_desc_t *))                             \
    X(cudnn_status_t, DestroyTensorDescriptor, (cudnn_tensor_desc_t))                              \
    X(cudnn_status_t, SetTensorNdDescriptor,                                                       \
      (cudnn_tensor_desc_t, int dtype, int n, const int *dims, const int *strides))                \
    X(cudnn_status_t, CreateFilterDescriptor, (cudnn_filter_desc_t *))                             \
    X(cudnn_status_t, DestroyFilterDescriptor, (cudnn_filter_desc_t))                              \
    X(cudnn_status_t, SetFilterNdDescriptor,                                                       \
      (cudnn_filter_desc_t, int dtype, int format, int n, const int *dims))                        \
    X(cudnn_status_t, CreateConvolutionDescriptor, (cudnn_conv_desc_t *))                          \
    X(cudnn_status_t, DestroyConvolutionDescriptor, (cudnn_conv_desc_t))                           \
    X(cudnn_status_t, SetConvolutionNdDescriptor,                                                  \
      (cudnn_conv_desc_t, int n, const int *pads, const int *strides, const int *dilations,        \
       int mode, int compute_type))                                                                \
    X(cudnn_status_t, SetConvolutionGroupCount, (cudnn_conv_desc_t, int groups))                   \
    X(cudnn_status_t, SetConvolutionMathType, (cudnn_conv_desc_t, int math_type))                  \
    X(cudnn_status_t, GetConvolutionNdForwardOutputDim,                                            \
      (cudnn_conv_desc_t, cudnn_tensor_desc_t, cudnn_filter_desc_t, int n, int *dims))             \
    CUDA_CUDNN_CONV_PASS(X, Forward, cudnn_tensor_desc_t, cudnn_filter_desc_t,                     \
                         cudnn_tensor_desc_t)                                                      \
    CUDA_CUDNN_CONV_PASS(X, BackwardData, cudnn_filter_desc_t, cudnn_tensor_desc_t,                \
                         cudnn_tensor_desc_t)                                                      \
    CUDA_CUDNN_CONV_PASS(X, BackwardFilter, cudnn_tensor_desc_t, cudnn_tensor_desc_t,              \
                         cudnn_filter_desc_t)                                                      \
    X(cudnn_status_t, AddTensor,                                                                   \
      (cudnn_handle_t, const void *alpha, cudnn_tensor_desc_t, const void *a, const void *beta,    \
       cudnn_tensor_desc_t, void *c))                                                              \
    X(cudnn_status_t, CreatePoolingDescriptor, (cudnn_pool_desc_t *))                              \
    X(cudnn_status_t, DestroyPoolingDescriptor, (cudnn_pool_desc_t))                               \
    X(cudnn_status_t, SetPoolingNdDescriptor,                                                      \
      (cudnn_pool_desc_t, int mode, int nan_opt, int n, const int *window, const int *pads,        \
       const int *strides))                                                                        \
    X(cudnn_status_t, PoolingForward,                                                              \
      (cudnn_handle_t, cudnn_pool_desc_t, const void *alpha, cudnn_tensor_desc_t, const void *x,   \
       const void *beta, cudnn_tensor_desc_t, void *y))

#define CUDA_CUDNN_MEMBER_(RET, NAME, PARAMS) RET(*NAME) PARAMS;

/* The functions, resolved from the library; every one is set once cuda__cudnn_load succeeds. */
typedef struct cuda_cudnn {
    void *lib;      /* dlopen handle; NULL: not loaded */
    size_t version; /* cudnnGetVersion(): 91900 for 9.19.0 */
    char path[512]; /* what was opened: a path or a file name for the loader's search */

    CUDA_CUDNN_FUNCTIONS(CUDA_CUDNN_MEMBER_)
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
