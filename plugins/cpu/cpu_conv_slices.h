/*
 * NchwcConv by slices of images on the pool's threads, and the max pool fused after it
 * (cpu_conv_slices.c).
 */
#ifndef SES_CPU_CONV_SLICES_H
#define SES_CPU_CONV_SLICES_H

#include "cpu_dnnl.h"
#include "cpu_internal.h"

/**
 * The max pool an NchwcConv node carries (attributes pool_kernel_shape, pool_strides,
 * pool_dilations, pool_pads, the host's normalized 2-D window, and pool_input, the
 * convolution's output rows and columns): *@p out_has 0 when it has none, and then
 * @p conv_out is Y's own [OH, OW]. Otherwise @p g is the pool's geometry from @p conv_out to
 * Y's dims, checked (each window attribute in range, Y's rows and columns those of the window
 * with or without ceil_mode). Errors name the node.
 */
int32_t cpu__conv_slices_window(const cpu__call_t *call, const cpu__tensor_t *y,
                                int64_t conv_out[2], cpu__pool2d_t *g, int *out_has);

/**
 * Y = [pool](act(conv(X, W) + B + Z)) for NchwcConv (@p flags: CPU__DNNL_X_BLOCKED,
 * CPU__DNNL_YZ_BLOCKED, CPU__DNNL_W_CONSTANT): by slices of images on the pool's threads where
 * the batch allows it (see the file), else, with @p pool, the whole convolution on oneDNN's
 * team into a scratch and the pool after it. @p buf / @p buf_size: the node's scratch, grown
 * as needed, freed by its owner. Returns SES_DRV_OK; SES_DRV_UNIMPLEMENTED without a message
 * when there is no pool and slices do not apply (the caller runs cpu__dnnl_conv), or when
 * oneDNN has no convolution for it; another code with the call's message.
 */
int32_t cpu__conv_slices_run(const cpu__call_t *call, cpu__dnnl_conv_cache_t *cache,
                             const cpu__dnnl_conv_params_t *p, int activation, float alpha,
                             float beta, const float *x, const float *w, const float *b,
                             const float *z, float *y, const cpu__pool2d_t *pool, uint32_t flags,
                             unsigned char **buf, size_t *buf_size);

#endif
