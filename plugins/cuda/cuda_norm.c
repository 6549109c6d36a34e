/*
 * LayerNormalization and LayerNormalizationGrad (f32, f64), as the CPU driver's (cpu_norm.c):
 * X of rank 1 or more, the axis (the host normalized it) within X, Scale (and B) of X's dims from
 * the axis on; Y of X's shape, the optional Mean and InvStdDev one element per row. The gradient
 * takes dY, X, Scale and gives dX (attribute input 0) or dScale (input 1).
 */
#include <cuda_runtime_api.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cuda_ops.h"

/* What both share: the axis within @p x, Scale of X's dims from it on; rows and row length. */
static int32_t cuda_layer_norm_rows(ses_drv_device_t *device, const ses_drv_node_t *node,
                                    const cuda_arg_t *x, const cuda_arg_t *scale, int64_t *rows,
                                    int64_t *n, double *eps) {
    int64_t axis = 0;

    if (cuda__attr_int(node, "axis", 0, &axis) != SES_DRV_OK ||
        cuda__attr_double(node, "epsilon", 1e-5, eps) != SES_DRV_OK)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "attribute axis is not an INT or epsilon not a FLOAT");
    int ok = x->rank >= 1 && axis >= 0 && axis < (int64_t)x->rank &&
             scale->rank == x->rank - (uint32_t)axis;
    for (uint32_t d = 0; ok && d < scale->rank; d++)
        ok = scale->dims[d] == x->dims[(uint32_t)axis + d];
    if (!ok) {
        char what[96];
        snprintf(what, sizeof what,
                 "axis %" PRId64 " must index X and Scale must have X's dimensions from it on",
                 axis);
        return cuda__shape_fail(device, node, what, x, scale);
    }
    *n = scale->count;
    *rows = *n ? x->count / *n : 0;
    return SES_DRV_OK;
}

int32_t cuda__k_layer_norm(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[6];
    int64_t rows = 0, n = 0;
    double eps = 1e-5;
    int32_t st;

    (void)state;
    const uint32_t no =
        launch && launch->node && launch->node->n_outputs >= 1 && launch->node->n_outputs <= 3
            ? launch->node->n_outputs
            : 1;
    if ((st = cuda__check_launch(device, launch, 2, 3, no, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const uint32_t ni = node->n_inputs;
    const cuda_arg_t *x = &a[0], *y = &a[ni];
    if ((st = cuda__dtypes_agree(device, node, a, ni + no)) != SES_DRV_OK ||
        (st = cuda_layer_norm_rows(device, node, x, &a[1], &rows, &n, &eps)) != SES_DRV_OK)
        return st;
    int ok = cuda__same_shape(x, y) && (ni < 3 || cuda__same_shape(&a[1], &a[2]));
    for (uint32_t o = 1; ok && o < no; o++)
        ok = a[ni + o].count == rows;
    if (!ok)
        return cuda__shape_fail(device, node,
                                "Y must have X's shape, B Scale's, Mean and InvStdDev one element "
                                "per row",
                                x, y);
    if (x->count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    return cuda__finish(
        device, launch,
        cuda__layer_norm(x->dtype, rows, n, eps, x->ptr, a[1].ptr, ni > 2 ? a[2].ptr : NULL, y->ptr,
                         no > 1 ? a[ni + 1].ptr : NULL, no > 2 ? a[ni + 2].ptr : NULL,
                         cuda__stream_of(device, launch)));
}

int32_t cuda__k_layer_norm_grad(ses_drv_device_t *device, void *state,
                                const ses_drv_launch_t *launch) {
    cuda_arg_t a[4];
    int64_t rows = 0, n = 0, input = 0;
    double eps = 1e-5;
    int32_t st;

    (void)state;
    if ((st = cuda__check_launch(device, launch, 3, 3, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = cuda__dtypes_agree(device, node, a, 4)) != SES_DRV_OK ||
        (st = cuda_layer_norm_rows(device, node, &a[1], &a[2], &rows, &n, &eps)) != SES_DRV_OK)
        return st;
    if (cuda__attr_int(node, "input", 0, &input) != SES_DRV_OK || input < 0 || input > 1)
        return cuda__node_fail(
            device, node, SES_DRV_INVALID_ARGUMENT,
            "attribute input is %" PRId64 " or not an INT; expected 0 (dX) or 1 (dScale)", input);
    if (!cuda__same_shape(&a[0], &a[1]) || !cuda__same_shape(&a[input == 0 ? 1 : 2], &a[3]))
        return cuda__shape_fail(device, node,
                                "dY must have X's shape and the output that of the input it is "
                                "the gradient of",
                                &a[0], &a[3]);
    if (a[3].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    return cuda__finish(
        device, launch,
        cuda__layer_norm_grad(a[1].dtype, (int)input, rows, n, eps, a[0].ptr, a[1].ptr, a[2].ptr,
                              a[3].ptr, cuda__stream_of(device, launch)));
}
