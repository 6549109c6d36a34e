/*
 * GatherElements (any dtype, by element size; i32 or i64 indices), TopK (f32, f64, i32, i64) and
 * NonMaxSuppression (f32), as the CPU driver's (cpu_index.c, cpu_value_shape.c). GatherElements
 * checks its indices on the device and waits for the check, so that an index out of range is an
 * error naming it; NonMaxSuppression checks the selection's size likewise.
 */
#include <cuda_runtime_api.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cuda_ops.h"

/* data, indices -> output of the indices' shape: data's rank, no dim of the indices larger than
 * data's but along the axis (the host normalized it), every index in [-dim, dim). */
int32_t cuda__k_gather_elements(ses_drv_device_t *device, void *state,
                                const ses_drv_launch_t *launch) {
    cuda_arg_t a[3];
    cuda_bcast_t g;
    int64_t axis = 0;
    unsigned long long bad;
    int32_t st;

    (void)state;
    if ((st = cuda__check_launch(device, launch, 2, 2, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const cuda_arg_t *data = &a[0], *ix = &a[1], *out = &a[2];
    if (cuda__attr_int(node, "axis", 0, &axis) != SES_DRV_OK)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "attribute axis is not an INT");
    int ok = axis >= 0 && axis < (int64_t)data->rank && ix->rank == data->rank &&
             cuda__is_int(ix->dtype) && out->dtype == data->dtype && cuda__same_shape(ix, out);
    for (uint32_t d = 0; ok && d < data->rank; d++)
        ok = (int64_t)d == axis || ix->dims[d] <= data->dims[d];
    if (!ok) {
        char what[160];
        snprintf(what, sizeof what,
                 "axis %" PRId64
                 ": indices (i32 or i64) must have data's rank, no dimension larger than "
                 "data's but along the axis, and the output's shape and data's dtype",
                 axis);
        return cuda__shape_fail(device, node, what, data, ix);
    }
    if (out->count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    memset(&g, 0, sizeof g);
    g.rank = ix->rank;
    g.count = ix->count;
    memcpy(g.dims, ix->dims, ix->rank * sizeof(int64_t));
    cuda__strides(data->dims, data->rank, g.stride[0]);
    const int64_t dim = data->dims[axis];
    const int idx64 = ix->dtype == SES_DRV_DTYPE_I64;
    void *s = cuda__stream_of(device, launch);
    int e = cuda__check_begin(device, s);
    if (e == 0)
        e = cuda__check_indices(ix->count, ix->ptr, idx64, dim, device->bad_dev, s);
    if (e == 0)
        e = cuda__gather_elements(ses_drv_util_dtype_size(data->dtype), &g, (int)axis, dim,
                                  data->ptr, ix->ptr, idx64, out->ptr, s);
    e = cuda__check_end(device, s, e, &bad);
    if (e != 0)
        return cuda__finish(device, launch, e);
    if (bad != ~0ULL)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "index %" PRId64
                               " (element %llu of the indices) is outside [-%" PRId64 ", %" PRId64
                               ") of axis %" PRId64,
                               cuda__read_int(ix->ptr, ix->dtype, bad), bad, dim, dim, axis);
    return SES_DRV_OK;
}

/* X -> Values, Indices (i64): K is the outputs' size along the axis (attribute axis, default
 * -1; largest, default 1; always sorted, ties in index order, NaN above every number). */
int32_t cuda__k_topk(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[3];
    int64_t axis = -1, largest = 1, outer = 1, inner = 1;
    int32_t st;

    (void)state;
    if ((st = cuda__check_launch(device, launch, 1, 1, 2, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const cuda_arg_t *x = &a[0], *v = &a[1], *ix = &a[2];
    if (cuda__attr_int(node, "axis", -1, &axis) != SES_DRV_OK ||
        cuda__attr_int(node, "largest", 1, &largest) != SES_DRV_OK)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "attribute axis or largest is not an INT");
    if (axis < 0)
        axis += x->rank;
    if (axis < 0 || axis >= (int64_t)x->rank || v->rank != x->rank || v->dtype != x->dtype ||
        ix->dtype != SES_DRV_DTYPE_I64 || !cuda__same_shape(v, ix))
        return cuda__shape_fail(device, node,
                                "the axis must index X, Values have X's rank and dtype, Indices "
                                "(i64) Values' shape",
                                x, v);
    for (uint32_t d = 0; d < x->rank; d++) {
        if (d != (uint32_t)axis && v->dims[d] != x->dims[d])
            return cuda__shape_fail(
                device, node, "Values differ from X in a dimension which is not the axis", x, v);
        if (d < (uint32_t)axis)
            outer *= x->dims[d];
        else if (d > (uint32_t)axis)
            inner *= x->dims[d];
    }
    const int64_t n = x->dims[axis], k = v->dims[axis];
    if (k > n)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "K %" PRId64 " is more than the %" PRId64 " entries along the axis",
                               k, n);
    if (k == 0 || outer * inner == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    return cuda__finish(device, launch,
                        cuda__topk(x->dtype, outer, n, inner, k, largest != 0, x->ptr, v->ptr,
                                   (int64_t *)ix->ptr, cuda__stream_of(device, launch)));
}

/* NonMaxSuppression's supports_node: at most CUDA_NMS_MAX_BOXES boxes (kept in shared memory). */
int32_t cuda__nms_supports(ses_drv_device_t *device, const ses_drv_node_t *node) {
    int32_t st;

    if ((st = cuda__rank_supports(device, node)) != SES_DRV_OK)
        return st;
    const ses_drv_tensor_desc_t *b =
        node->n_inputs ? ses_drv_util_tensor_at(node->inputs, 0) : NULL;
    if (b && b->rank == 3 && b->dims && b->dims[1] > CUDA_NMS_MAX_BOXES)
        return cuda__node_fail(device, node, SES_DRV_UNIMPLEMENTED,
                               "%" PRId64 " boxes; cuda takes up to %d", b->dims[1],
                               CUDA_NMS_MAX_BOXES);
    return SES_DRV_OK;
}

/* boxes [batch, n, 4], scores [batch, classes, n] (f32) -> [selected, 3] (i64): the host inferred
 * the selection's size from the values; the kernel checks it and the call waits for that. */
int32_t cuda__k_nms(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[3];
    int64_t center = 0, max_out = 0, has_st = 0;
    double iou_th = 0.0, score_th = 0.0;
    unsigned long long bad;
    int32_t st;

    (void)state;
    if ((st = cuda__check_launch(device, launch, 2, 2, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const cuda_arg_t *b = &a[0], *s = &a[1], *y = &a[2];
    if (cuda__attr_int(node, "center_point_box", 0, &center) != SES_DRV_OK ||
        cuda__attr_int(node, "max_output_boxes_per_class", 0, &max_out) != SES_DRV_OK ||
        cuda__attr_int(node, "has_score_threshold", 0, &has_st) != SES_DRV_OK ||
        cuda__attr_double(node, "iou_threshold", 0.0, &iou_th) != SES_DRV_OK ||
        cuda__attr_double(node, "score_threshold", 0.0, &score_th) != SES_DRV_OK)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "an attribute has the wrong type (center_point_box, "
                               "max_output_boxes_per_class and has_score_threshold are INTs, "
                               "the thresholds FLOATs)");
    if (b->rank != 3 || b->dims[2] != 4 || s->rank != 3 || s->dims[0] != b->dims[0] ||
        s->dims[2] != b->dims[1] || y->rank != 2 || y->dims[1] != 3 ||
        b->dtype != SES_DRV_DTYPE_F32 || s->dtype != SES_DRV_DTYPE_F32 ||
        y->dtype != SES_DRV_DTYPE_I64)
        return cuda__shape_fail(device, node,
                                "boxes [batch, boxes, 4], scores [batch, classes, boxes] (f32) "
                                "and an output [selected, 3] (i64)",
                                b, s);
    if (b->dims[1] > CUDA_NMS_MAX_BOXES)
        return cuda__node_fail(device, node, SES_DRV_UNIMPLEMENTED,
                               "%" PRId64 " boxes; cuda takes up to %d", b->dims[1],
                               CUDA_NMS_MAX_BOXES);
    if ((st = cuda__use(device, node->op)) != SES_DRV_OK)
        return st;
    void *stream = cuda__stream_of(device, launch);
    int e = cuda__check_begin(device, stream);
    if (e == 0 && b->dims[0] > 0 && b->dims[1] > 0 && s->dims[1] > 0)
        e = cuda__nms(b->dims[0], b->dims[1], s->dims[1], (const float *)b->ptr,
                      (const float *)s->ptr, center != 0, max_out, has_st != 0, iou_th, score_th,
                      y->dims[0], (int64_t *)y->ptr, device->bad_dev, stream);
    e = cuda__check_end(device, stream, e, &bad);
    if (e != 0)
        return cuda__finish(device, launch, e);
    if (bad == ~0ULL && y->dims[0] != 0 && !(b->dims[0] > 0 && b->dims[1] > 0 && s->dims[1] > 0))
        bad = 0; /* nothing to select from */
    if (bad != ~0ULL)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "%llu boxes are selected, but the output holds %" PRId64, bad,
                               y->dims[0]);
    return SES_DRV_OK;
}
