/*
 * SoftmaxCrossEntropyLoss and its gradient, and the optimizers.
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
 * SoftmaxCrossEntropyLoss and its gradient: scores or log_prob [N, C, d...] f32 or f64, labels
 * i32 or
 * i64 [N, d...], optional weights [C]. Labels are checked on the device; the call waits for
 * the check, so that an out-of-range label is an error naming its position and value.
 * ------------------------------------------------------------------------------------------- */

int32_t cuda__k_sce(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[6];
    int64_t reduction = -1, has_ignore = 0, ignore_index = 0;
    int32_t st;

    (void)state;
    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!launch || launch->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_launch_t, output_offsets) ||
        !launch->node || launch->node->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_node_t, op) ||
        !launch->node->op)
        return CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "the launch or its node is NULL or older than ABI 1.0");
    const ses_drv_node_t *node = launch->node;
    const int grad = strcmp(node->op, "SoftmaxCrossEntropyLossGrad") == 0;
    const uint32_t n_out = grad ? 1 : (node->n_outputs == 2 ? 2 : 1);
    if ((st = cuda__check_launch(device, launch, grad ? 3 : 2, grad ? 4 : 3, n_out, a)) !=
        SES_DRV_OK)
        return st;
    const uint32_t ni = node->n_inputs;
    const cuda_arg_t *x = &a[grad ? 1 : 0], *labels = &a[grad ? 2 : 1];
    const cuda_arg_t *weights = ni == (grad ? 4u : 3u) ? &a[ni - 1] : NULL;
    const cuda_arg_t *dloss = grad ? &a[0] : NULL;
    cuda_arg_t *out0 = &a[ni], *log_prob = (!grad && n_out == 2) ? &a[ni + 1] : NULL;

    if (cuda__attr_int(node, "reduction", -1, &reduction) != SES_DRV_OK || reduction < 0 ||
        reduction > 2 || cuda__attr_int(node, "has_ignore_index", 0, &has_ignore) != SES_DRV_OK ||
        cuda__attr_int(node, "ignore_index", 0, &ignore_index) != SES_DRV_OK)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "reduction (0, 1, 2), has_ignore_index or ignore_index is wrong");
    const uint32_t ft = x->dtype; /* f32 or f64 */
    int ok = x->rank >= 2 && (ft == SES_DRV_DTYPE_F32 || ft == SES_DRV_DTYPE_F64) &&
             out0->dtype == ft &&
             (labels->dtype == SES_DRV_DTYPE_I64 || labels->dtype == SES_DRV_DTYPE_I32) &&
             labels->rank + 1 == x->rank;
    for (uint32_t d = 0; ok && d < labels->rank; d++)
        ok = labels->dims[d] == x->dims[d == 0 ? 0 : d + 1];
    if (ok && weights)
        ok = weights->dtype == ft && weights->rank == 1 && weights->dims[0] == x->dims[1];
    const cuda_arg_t *per_pos = grad ? dloss : out0; /* the loss's shape */
    if (ok)
        ok = per_pos->dtype == ft &&
             (reduction == 2 ? cuda__same_shape(per_pos, labels) : per_pos->rank == 0);
    if (ok && grad)
        ok = cuda__same_shape(out0, x);
    if (ok && log_prob)
        ok = log_prob->dtype == ft && cuda__same_shape(log_prob, x);
    if (!ok)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "dtypes or shapes disagree: %s must be f32 or f64 [N, C, d...], "
                               "labels i32/i64 [N, d...], weights [C] and the loss of its dtype, "
                               "the loss a scalar (or [N, d...] for reduction none)",
                               grad ? "log_prob" : "scores");
    const int64_t classes = x->dims[1];
    const int64_t inner = classes > 0 && x->dims[0] > 0 ? x->count / x->dims[0] / classes : 1;
    const int64_t positions = labels->count;
    if (grad && out0->count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    void *s = cuda__stream_of(device, launch);
    const int l64 = labels->dtype == SES_DRV_DTYPE_I64;
    cudaError_t e;

    pthread_mutex_lock(&device->check_lock);
    e = cudaMemsetAsync(device->bad_dev, 0xff, sizeof *device->bad_dev, (cudaStream_t)s);
    if (e == cudaSuccess)
        e = (cudaError_t)(grad ? cuda__sce_grad(ft, positions, classes, inner, dloss->ptr, x->ptr,
                                                labels->ptr, l64, weights ? weights->ptr : NULL,
                                                (int)has_ignore, ignore_index, (int)reduction,
                                                out0->ptr, device->bad_dev, s)
                               : cuda__sce_loss(ft, positions, classes, inner, x->ptr, labels->ptr,
                                                l64, weights ? weights->ptr : NULL, (int)has_ignore,
                                                ignore_index, (int)reduction, out0->ptr,
                                                log_prob ? log_prob->ptr : NULL, device->bad_dev,
                                                s));
    if (e == cudaSuccess)
        e = cudaMemcpyAsync(device->bad_host, device->bad_dev, sizeof *device->bad_host,
                            cudaMemcpyDeviceToHost, (cudaStream_t)s);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize((cudaStream_t)s);
    const unsigned long long bad = *device->bad_host;
    pthread_mutex_unlock(&device->check_lock);
    if (e != cudaSuccess)
        return cuda__finish(device, launch, (int)e);
    if (bad != ~0ULL) {
        int64_t value = 0;
        int32_t v32 = 0;
        if (l64)
            cudaMemcpy(&value, (const int64_t *)labels->ptr + bad, sizeof value,
                       cudaMemcpyDeviceToHost);
        else if (cudaMemcpy(&v32, (const int32_t *)labels->ptr + bad, sizeof v32,
                            cudaMemcpyDeviceToHost) == cudaSuccess)
            value = v32;
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "label %" PRId64 " at position %llu is outside [0, %" PRId64 ")%s",
                               value, bad, classes, has_ignore ? " and is not ignore_index" : "");
    }
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Optimizers: in place, no outputs.
 * ------------------------------------------------------------------------------------------- */

int32_t cuda__k_optimizer(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[6];
    int32_t st;

    (void)state;
    if ((st = cuda__check_launch(device, launch, 3, 6, 0, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const int sgd = strcmp(node->op, "SGD") == 0, mom = strcmp(node->op, "Momentum") == 0;
    const uint32_t want = sgd ? 3 : mom ? 4 : 6;
    if (node->n_inputs != want)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "has %" PRIu32 " inputs, %s takes %" PRIu32, node->n_inputs,
                               node->op, want);
    if ((st = cuda__dtypes_agree(device, node, a, want)) != SES_DRV_OK)
        return st;
    if (!cuda__same_shape(&a[0], &a[1]) || a[2].count != 1 ||
        (mom && !cuda__same_shape(&a[0], &a[3])) ||
        (want == 6 &&
         (!cuda__same_shape(&a[0], &a[3]) || !cuda__same_shape(&a[0], &a[4]) || a[5].count != 1)))
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "var, grad and the slots must have one shape, lr and t one element");
    void *s = cuda__stream_of(device, launch);
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    if (sgd)
        return a[0].count == 0 ? SES_DRV_OK
                               : cuda__finish(device, launch,
                                              cuda__sgd(a[0].dtype, a[0].count, a[0].ptr, a[1].ptr,
                                                        a[2].ptr, s));
    if (mom) {
        double momentum = 0.9;
        int64_t nesterov = 0;
        if (cuda__attr_double(node, "momentum", 0.9, &momentum) != SES_DRV_OK ||
            cuda__attr_int(node, "nesterov", 0, &nesterov) != SES_DRV_OK)
            return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                   "an attribute has the wrong type");
        return a[0].count == 0
                   ? SES_DRV_OK
                   : cuda__finish(device, launch,
                                  cuda__momentum(a[0].dtype, a[0].count, a[0].ptr, a[1].ptr,
                                                 a[2].ptr, a[3].ptr, momentum, nesterov != 0, s));
    }
    double b1 = 0.9, b2 = 0.999, eps = 1e-8;
    if (cuda__attr_double(node, "beta1", 0.9, &b1) != SES_DRV_OK ||
        cuda__attr_double(node, "beta2", 0.999, &b2) != SES_DRV_OK ||
        cuda__attr_double(node, "epsilon", 1e-8, &eps) != SES_DRV_OK)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "an attribute has the wrong type");
    if (!(b1 >= 0.0 && b1 < 1.0) || !(b2 >= 0.0 && b2 < 1.0))
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "beta1 %g and beta2 %g must be in [0, 1)", b1, b2);
    return cuda__finish(device, launch,
                        cuda__adam(a[0].dtype, a[0].count, a[0].ptr, a[1].ptr, a[2].ptr, a[3].ptr,
                                   a[4].ptr, a[5].ptr, b1, b2, eps, s));
}
