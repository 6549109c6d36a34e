/*
 * Data movement: Transpose, Slice, Concat, ExpandLike, SliceGrad, and Gather, GatherGrad.
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
 * Data movement: Transpose, Slice, Concat, ExpandLike, SliceGrad (one strided-copy kernel), and
 * Gather, GatherGrad.
 * ------------------------------------------------------------------------------------------- */

/* Enqueues the strided copy of walk @p g (x read at stride[0], y written at stride[1]). */
int32_t cuda__run_strided(ses_drv_device_t *device, const ses_drv_launch_t *launch, uint32_t esize,
                          const cuda_bcast_t *g, const void *x, void *y) {
    int32_t st;
    if (g->count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, launch->node->op)) != SES_DRV_OK)
        return st;
    return cuda__finish(device, launch,
                        cuda__strided(esize, g, x, y, cuda__stream_of(device, launch)));
}

int32_t cuda__k_transpose(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    int64_t perm[CUDA_MAX_RANK], ist[CUDA_MAX_RANK];
    uint32_t np = 0;
    cuda_bcast_t g;
    int32_t st;

    (void)state;
    if ((st = cuda__check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK ||
        (st = cuda__dtypes_agree(device, launch->node, a, 2)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = cuda__attr_ints(device, node, "perm", perm, &np)) != SES_DRV_OK)
        return st;
    if (np != a[0].rank || a[1].rank != a[0].rank)
        return cuda__shape_fail(device, node, "perm does not fit the ranks", &a[0], &a[1]);
    memset(&g, 0, sizeof g);
    g.rank = a[1].rank;
    g.count = a[1].count;
    cuda__strides(a[0].dims, a[0].rank, ist);
    cuda__strides(a[1].dims, a[1].rank, g.stride[1]);
    unsigned seen = 0;
    for (uint32_t d = 0; d < np; d++) {
        if (perm[d] < 0 || perm[d] >= (int64_t)np || (seen & (1u << perm[d])) ||
            a[0].dims[perm[d]] != a[1].dims[d])
            return cuda__shape_fail(device, node,
                                    "perm does not map the input's dims to the "
                                    "output's",
                                    &a[0], &a[1]);
        seen |= 1u << perm[d];
        g.dims[d] = a[1].dims[d];
        g.stride[0][d] = ist[perm[d]];
    }
    return cuda__run_strided(device, launch, ses_drv_util_dtype_size(a[1].dtype), &g, a[0].ptr, a[1].ptr);
}

/*
 * The walk of Slice (and, reversed, SliceGrad): @p big is the sliced tensor, @p small the part
 * taken, `starts` and `steps` one per axis of big. Fills @p big_base (the element offset of the
 * first element taken) and the strides in big of each step of small's dims.
 */
static int32_t cuda_slice_walk(ses_drv_device_t *device, const ses_drv_node_t *node,
                               const cuda_arg_t *big, const cuda_arg_t *small, int64_t *big_base,
                               int64_t *big_step) {
    int64_t starts[CUDA_MAX_RANK], steps[CUDA_MAX_RANK], bst[CUDA_MAX_RANK];
    uint32_t ns = 0, nt = 0;
    int32_t st;

    if ((st = cuda__attr_ints(device, node, "starts", starts, &ns)) != SES_DRV_OK ||
        (st = cuda__attr_ints(device, node, "steps", steps, &nt)) != SES_DRV_OK)
        return st;
    if (ns != big->rank || nt != big->rank || small->rank != big->rank)
        return cuda__shape_fail(device, node, "starts and steps do not fit the ranks", big, small);
    cuda__strides(big->dims, big->rank, bst);
    *big_base = 0;
    for (uint32_t d = 0; d < ns; d++) {
        if (steps[d] == 0)
            return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                   "axis %" PRIu32 ": step is 0", d);
        big_step[d] = steps[d] * bst[d];
        if (small->dims[d] == 0)
            continue;
        const int64_t last = starts[d] + (small->dims[d] - 1) * steps[d];
        if (starts[d] < 0 || starts[d] >= big->dims[d] || last < 0 || last >= big->dims[d])
            return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                                   "axis %" PRIu32 ": start %" PRId64 " step %" PRId64
                                   " for %" PRId64 " elements leaves the dim of %" PRId64,
                                   d, starts[d], steps[d], small->dims[d], big->dims[d]);
        *big_base += starts[d] * bst[d];
    }
    return SES_DRV_OK;
}

/*
 * What Slice and SliceGrad share: the launch's checks and the walk over the small tensor (Slice's
 * output a[1], or SliceGrad's dy a[0]) with its strides in big (x a[0], or dx a[1]) from
 * @p big_base and its own contiguous strides: g->stride[0] reads, g->stride[1] writes.
 */
static int32_t cuda_slice_launch(ses_drv_device_t *device, const ses_drv_launch_t *launch, int grad,
                                 cuda_arg_t *a, cuda_bcast_t *g, int64_t *big_base) {
    const cuda_arg_t *big = &a[grad ? 1 : 0], *small = &a[grad ? 0 : 1];
    int32_t st;

    if ((st = cuda__check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK ||
        (st = cuda__dtypes_agree(device, launch->node, a, 2)) != SES_DRV_OK)
        return st;
    memset(g, 0, sizeof *g);
    if ((st = cuda_slice_walk(device, launch->node, big, small, big_base,
                              g->stride[grad ? 1 : 0])) != SES_DRV_OK)
        return st;
    g->rank = small->rank;
    g->count = small->count;
    memcpy(g->dims, small->dims, small->rank * sizeof(int64_t));
    cuda__strides(small->dims, small->rank, g->stride[grad ? 0 : 1]);
    return SES_DRV_OK;
}

int32_t cuda__k_slice(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    cuda_bcast_t g;
    int64_t base = 0;
    int32_t st;

    (void)state;
    if ((st = cuda_slice_launch(device, launch, 0, a, &g, &base)) != SES_DRV_OK)
        return st;
    if (a[1].count == 0)
        return SES_DRV_OK;
    const uint32_t es = ses_drv_util_dtype_size(a[1].dtype);
    return cuda__run_strided(device, launch, es, &g, (const char *)a[0].ptr + base * (int64_t)es,
                             a[1].ptr);
}

/* SliceGrad: zeros of the output's shape, with dy written where Slice read. */
int32_t cuda__k_slice_grad(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    cuda_bcast_t g;
    int64_t base = 0;
    int32_t st;

    (void)state;
    if ((st = cuda_slice_launch(device, launch, 1, a, &g, &base)) != SES_DRV_OK)
        return st;
    if (a[1].count == 0)
        return SES_DRV_OK;
    if ((st = cuda__use(device, launch->node->op)) != SES_DRV_OK)
        return st;
    const uint32_t es = ses_drv_util_dtype_size(a[1].dtype);
    int e = (int)cudaMemsetAsync(a[1].ptr, 0, (size_t)a[1].bytes,
                                 (cudaStream_t)cuda__stream_of(device, launch));
    if (e != 0 || a[0].count == 0)
        return cuda__finish(device, launch, e);
    return cuda__run_strided(device, launch, es, &g, a[0].ptr,
                             (char *)a[1].ptr + base * (int64_t)es);
}

int32_t cuda__k_concat(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[CUDA_MAX_INPUTS + 1];
    int64_t axis = -1, yst[CUDA_MAX_RANK];
    int32_t st;

    (void)state;
    if ((st = cuda__check_launch(device, launch, 1, CUDA_MAX_INPUTS, 1, a)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const uint32_t ni = node->n_inputs;
    const cuda_arg_t *y = &a[ni];
    if ((st = cuda__dtypes_agree(device, node, a, ni + 1)) != SES_DRV_OK)
        return st;
    if (cuda__attr_int(node, "axis", -1, &axis) != SES_DRV_OK || axis < 0 ||
        axis >= (int64_t)y->rank)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "axis %" PRId64 " is missing or outside rank %" PRIu32, axis,
                               y->rank);
    int64_t at = 0;
    for (uint32_t k = 0; k < ni; k++) {
        int ok = a[k].rank == y->rank;
        for (uint32_t d = 0; ok && d < y->rank; d++)
            ok = d == (uint32_t)axis || a[k].dims[d] == y->dims[d];
        if (!ok)
            return cuda__shape_fail(device, node, "an input does not fit the output", &a[k], y);
        at += a[k].dims[axis];
    }
    if (at != y->dims[axis])
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "the inputs add up to %" PRId64 " along axis %" PRId64
                               ", the output has %" PRId64,
                               at, axis, y->dims[axis]);
    if (y->count == 0)
        return SES_DRV_OK;
    cuda__strides(y->dims, y->rank, yst);
    const uint32_t es = ses_drv_util_dtype_size(y->dtype);
    at = 0;
    for (uint32_t k = 0; k < ni; k++) {
        cuda_bcast_t g;
        memset(&g, 0, sizeof g);
        g.rank = a[k].rank;
        g.count = a[k].count;
        memcpy(g.dims, a[k].dims, a[k].rank * sizeof(int64_t));
        cuda__strides(a[k].dims, a[k].rank, g.stride[0]);
        memcpy(g.stride[1], yst, sizeof yst);
        if ((st = cuda__run_strided(device, launch, es, &g, a[k].ptr,
                                    (char *)y->ptr + at * yst[axis] * (int64_t)es)) != SES_DRV_OK)
            return st;
        at += a[k].dims[axis];
    }
    return SES_DRV_OK;
}

/* ExpandLike: x broadcast (numpy, one way) to the output's shape, any dtype. */
int32_t cuda__k_expand_like(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    cuda_arg_t a[2];
    cuda_bcast_t g;
    int32_t st;

    (void)state;
    if ((st = cuda__check_launch(device, launch, 1, 1, 1, a)) != SES_DRV_OK ||
        (st = cuda__dtypes_agree(device, launch->node, a, 2)) != SES_DRV_OK)
        return st;
    const cuda_arg_t *in[1] = {&a[0]};
    if (!cuda__bcast_n(in, 1, &a[1], &g))
        return cuda__shape_fail(device, launch->node, "the input does not broadcast to the output",
                                &a[0], &a[1]);
    cuda__strides(a[1].dims, a[1].rank, g.stride[1]);
    return cuda__run_strided(device, launch, ses_drv_util_dtype_size(a[1].dtype), &g, a[0].ptr, a[1].ptr);
}

/*
 * Gather's and GatherGrad's geometry: @p data is [outer, dim, inner] along @p axis, @p ix the
 * indices, @p g the gathered side ([outer, ix dims..., inner]). Checks the shapes.
 */
static int32_t cuda_gather_geometry(ses_drv_device_t *device, const ses_drv_node_t *node,
                                    const cuda_arg_t *data, const cuda_arg_t *ix,
                                    const cuda_arg_t *gathered, int64_t *axis, int64_t *outer,
                                    int64_t *inner) {
    if (cuda__attr_int(node, "axis", 0, axis) != SES_DRV_OK || *axis < 0 ||
        *axis >= (int64_t)data->rank)
        return cuda__node_fail(device, node, SES_DRV_INVALID_ARGUMENT,
                               "axis %" PRId64 " is outside rank %" PRIu32, *axis, data->rank);
    if (!cuda__is_int(ix->dtype) || gathered->rank != data->rank - 1 + ix->rank ||
        gathered->dtype != data->dtype)
        return cuda__shape_fail(device, node, "data, indices and the gathered tensor disagree",
                                data, gathered);
    const uint32_t ax = (uint32_t)*axis;
    *outer = *inner = 1;
    for (uint32_t d = 0; d < data->rank; d++) {
        if (d < ax)
            *outer *= data->dims[d];
        else if (d > ax)
            *inner *= data->dims[d];
    }
    for (uint32_t d = 0; d < gathered->rank; d++) {
        const int64_t want = d < ax              ? data->dims[d]
                             : d < ax + ix->rank ? ix->dims[d - ax]
                                                 : data->dims[d - ix->rank + 1];
        if (gathered->dims[d] != want)
            return cuda__shape_fail(device, node,
                                    "the gathered shape does not match data and "
                                    "indices",
                                    data, gathered);
    }
    return SES_DRV_OK;
}

/* Checks the indices on the device, then runs @p what (0 Gather, 1 GatherGrad); waits. */
static int32_t cuda_gather_run(ses_drv_device_t *device, const ses_drv_launch_t *launch, int grad,
                               const cuda_arg_t *data, const cuda_arg_t *ix, const void *src,
                               void *dst, int64_t axis, int64_t outer, int64_t inner) {
    const int64_t dim = data->dims[axis];
    const int idx64 = ix->dtype == SES_DRV_DTYPE_I64;
    void *s = cuda__stream_of(device, launch);
    unsigned long long bad;
    int32_t st;

    if ((st = cuda__use(device, launch->node->op)) != SES_DRV_OK)
        return st;
    int e = cuda__check_begin(device, s);
    if (e == 0 && ix->count > 0)
        e = cuda__check_indices(ix->count, ix->ptr, idx64, dim, device->bad_dev, s);
    if (e == 0)
        e = grad ? cuda__gather_grad(data->dtype, outer, dim, ix->count, inner, src, ix->ptr, idx64,
                                     dst, s)
                 : cuda__gather(ses_drv_util_dtype_size(data->dtype), outer, dim, ix->count, inner, src,
                                ix->ptr, idx64, dst, s);
    e = cuda__check_end(device, s, e, &bad);
    if (e != 0)
        return cuda__finish(device, launch, e);
    if (bad != ~0ULL)
        return cuda__node_fail(device, launch->node, SES_DRV_INVALID_ARGUMENT,
                               "index %" PRId64
                               " (element %llu of the indices) is outside [-%" PRId64 ", %" PRId64
                               ") of axis %" PRId64,
                               cuda__read_int(ix->ptr, ix->dtype, bad), bad, dim, dim, axis);
    return SES_DRV_OK;
}

/* Gather (data, indices -> y) and, with @p grad, GatherGrad (dy, indices -> zeros of the
 * output's shape plus dy's blocks where Gather took them: the output plays Gather's data, dy the
 * gathered tensor). Either way the kernel reads input 0 and writes the output. */
static int32_t cuda_gather_entry(ses_drv_device_t *device, const ses_drv_launch_t *launch,
                                 int grad) {
    cuda_arg_t a[3];
    int64_t axis = 0, outer = 0, inner = 0;
    int32_t st;

    if ((st = cuda__check_launch(device, launch, 2, 2, 1, a)) != SES_DRV_OK)
        return st;
    const cuda_arg_t *data = grad ? &a[2] : &a[0], *gathered = grad ? &a[0] : &a[2];
    if ((st = cuda_gather_geometry(device, launch->node, data, &a[1], gathered, &axis, &outer,
                                   &inner)) != SES_DRV_OK)
        return st;
    if (a[2].count == 0)
        return SES_DRV_OK;
    return cuda_gather_run(device, launch, grad, data, &a[1], a[0].ptr, a[2].ptr, axis, outer,
                           inner);
}

int32_t cuda__k_gather(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    (void)state;
    return cuda_gather_entry(device, launch, 0);
}

int32_t cuda__k_gather_grad(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    (void)state;
    return cuda_gather_entry(device, launch, 1);
}
