/*
 * Training: ScalarLike and the optimizers.
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
 * Training: ScalarLike and the optimizers
 * ------------------------------------------------------------------------------------------- */

int32_t ocl__k_scalar_like(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[1], out[1];
    double value = 0.0;
    int32_t st;
    cl_int err;

    (void)state;
    if ((st = ocl__prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = ocl__need_float(device, node, "value", &value)) != SES_DRV_OK)
        return st;
    if (out[0].count != 1)
        return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "the output has %" PRIu64 " elements, not 1", out[0].count);
    float v = (float)value;
    pthread_mutex_lock(&device->lock);
    err = clEnqueueWriteBuffer(device->queue, out[0].buf->mem, CL_TRUE, (size_t)out[0].byte_off,
                               sizeof v, &v, 0, NULL, NULL);
    pthread_mutex_unlock(&device->lock);
    if (err != CL_SUCCESS)
        return ocl__node_fail(device, node, SES_DRV_INTERNAL, "clEnqueueWriteBuffer failed: %s",
                              ocl__error_name(err));
    return SES_DRV_OK;
}

int32_t ocl__k_optim(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[6], out[1];
    double a = 0.0, b = 0.0, eps = 0.0, c1 = 1.0, c2 = 1.0;
    int64_t nesterov = 0;
    int32_t st;

    (void)state;
    if ((st = ocl__prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    int op = !strcmp(node->op, "SGD") ? 0 : !strcmp(node->op, "Momentum") ? 1 : 3;
    uint32_t want = op == 0 ? 3 : op == 1 ? 4 : 6;
    if (node->n_inputs != want || node->n_outputs != 0)
        return ocl__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                              "takes %" PRIu32 " inputs and no outputs", want);
    if (in[1].count != in[0].count || in[2].count != 1 || (op >= 1 && in[3].count != in[0].count) ||
        (op == 3 && (in[4].count != in[0].count || in[5].count != 1)))
        return ocl__shape_fail(device, node, "the update's shapes do not agree", &in[0], &in[1]);
    /* The updated inputs must not share bytes with any other argument. */
    for (uint32_t i = 0; i < want; i++)
        for (uint32_t j = 0; j < want; j++) {
            int upd = i == 0 || i == 3 || i == 4 || i == 5;
            if (i == j || !upd || in[i].buf != in[j].buf || !in[i].bytes || !in[j].bytes)
                continue;
            if (in[i].byte_off < in[j].byte_off + in[j].bytes &&
                in[j].byte_off < in[i].byte_off + in[i].bytes)
                return ocl__node_fail(
                    device, node, SES_DRV_INVALID_ARGUMENT,
                    "input %" PRIu32 " is updated in place but overlaps input %" PRIu32, i, j);
        }
    if (op == 1) {
        if ((st = ocl__need_float(device, node, "momentum", &a)) != SES_DRV_OK ||
            (st = ocl__need_int(device, node, "nesterov", &nesterov)) != SES_DRV_OK)
            return st;
        if (nesterov)
            op = 2;
    } else if (op == 3) {
        float t = 0.0f;
        cl_int err;
        if ((st = ocl__need_float(device, node, "beta1", &a)) ||
            (st = ocl__need_float(device, node, "beta2", &b)) ||
            (st = ocl__need_float(device, node, "epsilon", &eps)))
            return st;
        /* t += 1 happens once, here, not per element. */
        pthread_mutex_lock(&device->lock);
        err = clEnqueueReadBuffer(device->queue, in[5].buf->mem, CL_TRUE,
                                  (size_t)in[5].byte_off, sizeof t, &t, 0, NULL, NULL);
        t += 1.0f;
        if (err == CL_SUCCESS)
            err = clEnqueueWriteBuffer(device->queue, in[5].buf->mem, CL_TRUE,
                                       (size_t)in[5].byte_off, sizeof t, &t, 0, NULL, NULL);
        pthread_mutex_unlock(&device->lock);
        if (err != CL_SUCCESS)
            return ocl__node_fail(device, node, SES_DRV_INTERNAL, "updating t failed: %s",
                                  ocl__error_name(err));
        c1 = 1.0 - pow(a, (double)t);
        c2 = 1.0 - pow(b, (double)t);
    }
    ocl_args_t args = {0};
    cl_mem m = op >= 1 ? in[3].buf->mem : in[0].buf->mem;
    cl_mem v = op == 3 ? in[4].buf->mem : in[0].buf->mem;
    cl_ulong vo = in[0].off, go = in[1].off, lo = in[2].off, mo = op >= 1 ? in[3].off : 0,
             wo = op == 3 ? in[4].off : 0, n = in[0].count;
    cl_int cop = op;
    float fa = (float)a, fb = (float)b, fe = (float)eps, f1 = (float)c1, f2 = (float)c2;
    OCL_ARG(&args, in[0].buf->mem);
    OCL_ARG(&args, vo);
    OCL_ARG(&args, in[1].buf->mem);
    OCL_ARG(&args, go);
    OCL_ARG(&args, in[2].buf->mem);
    OCL_ARG(&args, lo);
    OCL_ARG(&args, m);
    OCL_ARG(&args, mo);
    OCL_ARG(&args, v);
    OCL_ARG(&args, wo);
    OCL_ARG(&args, n);
    OCL_ARG(&args, cop);
    OCL_ARG(&args, fa);
    OCL_ARG(&args, fb);
    OCL_ARG(&args, fe);
    OCL_ARG(&args, f1);
    OCL_ARG(&args, f2);
    return ocl__run(device, node, OCL_K_OPTIM, n, &args);
}
