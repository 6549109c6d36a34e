/*
 * NchwcConv by slices of images or of output channels on the pool's threads, and the max pool
 * fused after it (cpu_conv_slices.c).
 */
#ifndef SES_CPU_CONV_SLICES_H
#define SES_CPU_CONV_SLICES_H

#include "cpu_dnnl.h"
#include "cpu_internal.h"

/**
 * Y = [pool](act(conv(X, W) + B + Z)) for NchwcConv (@p flags: CPU__DNNL_X_BLOCKED,
 * CPU__DNNL_YZ_BLOCKED, CPU__DNNL_W_CONSTANT, CPU__DNNL_WINOGRAD): by slices of images on
 * @p threads_pool's threads where the batch allows it, else by slices of output channels where
 * @p mode (enum cpu__conv_slices, driver.cpu.conv_slices) says auto (see the file; off: no
 * slices at all), else, with @p pool, the whole convolution on oneDNN's team into a scratch
 * and the pool after it. @p buf / @p buf_size:
 * the node's scratch, grown as needed, freed by its owner; @p team: the node's mark, counted when
 * the convolution runs on oneDNN's team (cpu__pool_park_for). Returns SES_DRV_OK;
 * SES_DRV_UNIMPLEMENTED when there is no pool and slices do not apply (the caller runs
 * cpu__dnnl_conv; @p why is empty then), or when oneDNN has no convolution for it; another code
 * with the reason in @p why (the caller adds the node).
 */
int32_t cpu__conv_slices_run(cpu__pool_t *threads_pool, cpu__dnnl_conv_cache_t *cache,
                             const cpu__dnnl_conv_params_t *p, int activation, float alpha,
                             float beta, const float *x, const float *w, const float *b,
                             const float *z, float *y, const cpu__pool2d_t *pool, uint32_t flags,
                             uint32_t mode, unsigned char **buf, size_t *buf_size,
                             cpu__team_user_t *team, char *why, size_t why_size);

#endif
