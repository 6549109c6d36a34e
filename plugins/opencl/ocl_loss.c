/*
 * SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss and their gradients.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clblast_c.h>

#include "ocl_ops.h"


/* ---------------------------------------------------------------------------------------------
 * SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss, and their gradients (one pair of
 * kernels, told apart by an nll flag)
 * ------------------------------------------------------------------------------------------- */

/* What both ops share: geometry, attributes, and the labels checked on the host (the host does
 * not check them) with the summed weights of the counted ones. */
typedef struct ocl_sce {
    cl_ulong n, c, inner;
    cl_long ignore;
    cl_int has_ignore, reduction, lab64, has_w;
    float total_w;
} ocl_sce_t;

static int32_t ocl_sce_setup(ses_drv_device_t *device, const ses_drv_node_t *node,
                             const ocl_arg_t *scores, const ocl_arg_t *labels,
                             const ocl_arg_t *weights, ocl_sce_t *g) {
    int64_t reduction = 0, ignore = 0, has_ignore = 0;
    int32_t st;

    if ((st = ocl__need_int(device, node, "reduction", &reduction)) ||
        (st = ocl__need_int(device, node, "ignore_index", &ignore)) ||
        (st = ocl__need_int(device, node, "has_ignore_index", &has_ignore)))
        return st;
    if (reduction < 0 || reduction > 2)
        return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "reduction %" PRId64 " is not 0 (mean), 1 (sum) or 2 (none)",
                              reduction);
    if (scores->rank < 2 || labels->rank + 1 != scores->rank ||
        labels->dims[0] != scores->dims[0] ||
        (labels->dtype != SES_DRV_DTYPE_I32 && labels->dtype != SES_DRV_DTYPE_I64))
        return ocl__shape_fail(device, node, "labels do not match scores [N, C, d...]", labels,
                               scores);
    for (uint32_t d = 1; d < labels->rank; d++)
        if (labels->dims[d] != scores->dims[d + 1])
            return ocl__shape_fail(device, node, "labels do not match scores [N, C, d...]", labels,
                                   scores);
    if (weights && (weights->rank != 1 || weights->dims[0] != scores->dims[1]))
        return ocl__shape_fail(device, node, "weights are not [C]", weights, scores);
    g->n = (cl_ulong)scores->dims[0];
    g->c = (cl_ulong)scores->dims[1];
    g->inner = g->n ? labels->count / g->n : 1;
    g->ignore = ignore;
    g->has_ignore = has_ignore != 0;
    g->reduction = (cl_int)reduction;
    g->lab64 = labels->dtype == SES_DRV_DTYPE_I64;
    g->has_w = weights != NULL;
    g->total_w = 0.0f;

    /* Read the labels (and weights) back to check them and sum the counted weights. */
    unsigned char *host = labels->bytes ? malloc((size_t)labels->bytes) : NULL;
    float *w = weights && weights->bytes ? malloc((size_t)weights->bytes) : NULL;
    cl_int err = CL_SUCCESS;
    if ((labels->bytes && !host) || (weights && weights->bytes && !w)) {
        free(host);
        free(w);
        return ocl__node_fail(device, node, SES_DRV_OUT_OF_MEMORY, "out of host memory");
    }
    pthread_mutex_lock(&device->lock);
    if (host)
        err = clEnqueueReadBuffer(device->queue, labels->buf->mem, CL_TRUE,
                                  (size_t)labels->byte_off, (size_t)labels->bytes, host, 0, NULL,
                                  NULL);
    if (w && err == CL_SUCCESS)
        err = clEnqueueReadBuffer(device->queue, weights->buf->mem, CL_TRUE,
                                  (size_t)weights->byte_off, (size_t)weights->bytes, w, 0, NULL,
                                  NULL);
    pthread_mutex_unlock(&device->lock);
    st = SES_DRV_OK;
    if (err != CL_SUCCESS)
        st = ocl__node_fail(device, node, SES_DRV_INTERNAL, "reading the labels failed: %s",
                            ocl__error_name(err));
    double total = 0.0;
    for (uint64_t p = 0; st == SES_DRV_OK && p < labels->count; p++) {
        int64_t l;
        if (g->lab64)
            memcpy(&l, host + p * 8, 8);
        else {
            int32_t l32;
            memcpy(&l32, host + p * 4, 4);
            l = l32;
        }
        if (g->has_ignore && l == ignore)
            continue;
        if (l < 0 || (uint64_t)l >= g->c)
            st = ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                "label %" PRId64 " at position %" PRIu64 " is outside [0, %" PRIu64
                                ")",
                                l, p, (uint64_t)g->c);
        else
            total += w ? (double)w[l] : 1.0;
    }
    free(host);
    free(w);
    g->total_w = (float)total;
    return st;
}

static int32_t ocl_sce_loss(ses_drv_device_t *device, const ses_drv_launch_t *launch, cl_int nll) {
    ocl_arg_t in[3], out[2];
    ocl_sce_t g;
    ocl_args_t a = {0};
    int32_t st;

    if ((st = ocl__prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const ocl_arg_t *x = &in[0], *w = node->n_inputs == 3 ? &in[2] : NULL;
    if ((st = ocl_sce_setup(device, node, x, &in[1], w, &g)) != SES_DRV_OK)
        return st;
    cl_int has_lp = node->n_outputs == 2;
    if ((g.reduction == 2 ? out[0].count != g.n * g.inner : out[0].count != 1) ||
        (has_lp && !ocl__same_shape(&out[1], x)))
        return ocl__shape_fail(device, node, "the outputs do not match the scores", &out[0], x);
    if (!out[0].count)
        return SES_DRV_OK;
    const ocl_arg_t *lp = has_lp ? &out[1] : &out[0];
    cl_ulong wo = w ? w->off : 0;
    cl_mem wm = w ? w->buf->mem : x->buf->mem;
    OCL_ARG_AT(&a, x);
    OCL_ARG_AT(&a, &in[1]);
    OCL_ARG(&a, g.lab64);
    OCL_ARG(&a, wm);
    OCL_ARG(&a, wo);
    OCL_ARG(&a, g.has_w);
    OCL_ARG_AT(&a, &out[0]);
    OCL_ARG_AT(&a, lp);
    OCL_ARG(&a, has_lp);
    OCL_ARG(&a, g.n);
    OCL_ARG(&a, g.c);
    OCL_ARG(&a, g.inner);
    OCL_ARG(&a, g.reduction);
    OCL_ARG(&a, g.ignore);
    OCL_ARG(&a, g.has_ignore);
    OCL_ARG(&a, g.total_w);
    OCL_ARG(&a, nll);
    /* Sum and mean add up every position in one work item: no scratch memory, exact order. */
    uint64_t n = g.reduction == 2 ? g.n * g.inner : 1;
    if (g.n * g.inner == 0) {
        float zero = g.reduction == 0 ? NAN : 0.0f;
        cl_int err;
        pthread_mutex_lock(&device->lock);
        err = clEnqueueWriteBuffer(device->queue, out[0].buf->mem, CL_TRUE,
                                   (size_t)out[0].byte_off, sizeof zero, &zero, 0, NULL, NULL);
        pthread_mutex_unlock(&device->lock);
        return err == CL_SUCCESS
                   ? SES_DRV_OK
                   : ocl__node_fail(device, node, SES_DRV_INTERNAL,
                                    "clEnqueueWriteBuffer failed: %s", ocl__error_name(err));
    }
    return ocl__run(device, node, OCL_K_SCE, n, &a);
}

int32_t ocl__k_sce(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    (void)state;
    return ocl_sce_loss(device, launch, 0);
}

int32_t ocl__k_nll(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    (void)state;
    return ocl_sce_loss(device, launch, 1);
}

static int32_t ocl_sce_grad(ses_drv_device_t *device, const ses_drv_launch_t *launch, cl_int nll) {
    ocl_arg_t in[4], out[1];
    ocl_sce_t g;
    ocl_args_t a = {0};
    int32_t st;

    if ((st = ocl__prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const ocl_arg_t *dl = &in[0], *lp = &in[1], *w = node->n_inputs == 4 ? &in[3] : NULL;
    if ((st = ocl_sce_setup(device, node, lp, &in[2], w, &g)) != SES_DRV_OK)
        return st;
    if (!ocl__same_shape(&out[0], lp) ||
        (g.reduction == 2 ? dl->count != g.n * g.inner : dl->count != 1))
        return ocl__shape_fail(device, node, "dloss or dscores do not match log_prob", dl, lp);
    cl_int dl_scalar = g.reduction != 2;
    float scale = g.reduction == 0 ? 1.0f / g.total_w : 1.0f;
    cl_ulong wo = w ? w->off : 0;
    cl_mem wm = w ? w->buf->mem : lp->buf->mem;
    OCL_ARG_AT(&a, dl);
    OCL_ARG(&a, dl_scalar);
    OCL_ARG_AT(&a, lp);
    OCL_ARG_AT(&a, &in[2]);
    OCL_ARG(&a, g.lab64);
    OCL_ARG(&a, wm);
    OCL_ARG(&a, wo);
    OCL_ARG(&a, g.has_w);
    OCL_ARG_AT(&a, &out[0]);
    OCL_ARG(&a, g.n);
    OCL_ARG(&a, g.c);
    OCL_ARG(&a, g.inner);
    OCL_ARG(&a, g.ignore);
    OCL_ARG(&a, g.has_ignore);
    OCL_ARG(&a, scale);
    OCL_ARG(&a, nll);
    return ocl__run(device, node, OCL_K_SCE_GRAD, out[0].count, &a);
}

int32_t ocl__k_sce_grad(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    (void)state;
    return ocl_sce_grad(device, launch, 0);
}

int32_t ocl__k_nll_grad(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    (void)state;
    return ocl_sce_grad(device, launch, 1);
}
