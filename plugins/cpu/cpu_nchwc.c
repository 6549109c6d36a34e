/*
 * The NCHWc16 layout's pools and reorder (issue #20; ONNX Runtime's com.microsoft.nchwc ops),
 * and the supports_node of all six NCHWc16 ops. A 4-D f32 activation [N, C, H, W] with
 * C % 16 == 0 is held as [N, C/16, H, W, 16]: channel c of pixel (n, h, w) at
 * [n, c/16, h, w, c%16], which is oneDNN's nChw16c. NchwcConv's body is Conv's oneDNN path
 * (cpu_cnn.c), which reads and writes that layout in place.
 *
 * Every loop here runs over the 16 channels of a block innermost: 16 contiguous floats, one
 * AVX-512 vector in the x86-64-v4 clone (CPU__ISA_CLONES), so a window's tap is one vector max
 * or add and nothing is read with a stride, where the plain pools walk a plane's rows (the
 * pools' rows are in cpu_pool2d.c, which the max pool fused into NchwcConv shares). Work is
 * split over output rows of the (image, channel block) planes, so an image of few blocks still
 * spreads over the pool. Each output is computed by one thread, in MaxPool's and AveragePool's
 * tap order (kernel rows, then columns, cpu_cnn.c) and with the same arithmetic, so the pools
 * give their numbers bit for bit, NaN included (CPU__MAXNAN), whatever the thread count.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#if defined(__SSE__)
#include <xmmintrin.h>
#endif
#include "cpu_dnnl.h"
#include "cpu_internal.h"

/* Channels per block, the layout's last dim. */
#define CPU__NB 16

/* ---------------------------------------------------------------------------------------------
 * NchwcMaxPool, NchwcAveragePool (their rows: cpu_pool2d.c)
 * ------------------------------------------------------------------------------------------- */

typedef struct cpu__nchwc_pool_job {
    cpu__pool2d_t g;
    int64_t include_pad; /* AveragePool's count_include_pad */
    int max;             /* NchwcMaxPool; else NchwcAveragePool */
    const float *x;      /* [planes, h, w, 16] */
    float *y;            /* [planes, oh, ow, 16] */
} cpu__nchwc_pool_job_t;

static void cpu__nchwc_pool_task(void *ctx, uint64_t begin, uint64_t end) {
    const cpu__nchwc_pool_job_t *j = ctx;
    cpu__nchwc_pool_rows(&j->g, j->max, j->include_pad, j->x, j->y, begin, end);
}

/* Non-zero when @p t is [N, C/16, H, W, 16]. */
static int cpu__nchwc_is_blocked(const cpu__tensor_t *t) {
    return t->rank == 5 && t->dims[4] == CPU__NB;
}

/* The [N, C/16, H, W] view of a blocked tensor, for the window's checks (cpu__read_window). */
static cpu__tensor_t cpu__nchwc_planes(const cpu__tensor_t *t) {
    cpu__tensor_t v = *t;
    v.rank = 4;
    return v;
}

int32_t cpu__nchwc_pool(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0], *y = &call->outs[0];
    cpu__nchwc_pool_job_t j;
    cpu__win_t w;
    char a[96], b[96];
    int32_t st;

    if (!cpu__nchwc_is_blocked(x) || !cpu__nchwc_is_blocked(y) || x->dims[1] != y->dims[1])
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "expected X [N, Cb, H, W, 16] and Y [N, Cb, OH, OW, 16]: X is %s, Y "
                              "is %s",
                              cpu__format_dims(x->dims, x->rank, a, sizeof a),
                              cpu__format_dims(y->dims, y->rank, b, sizeof b));
    const cpu__tensor_t xv = cpu__nchwc_planes(x), yv = cpu__nchwc_planes(y);
    if ((st = cpu__read_window(call, &xv, &yv, &w)) != SES_DRV_OK)
        return st;
    memset(&j, 0, sizeof j);
    j.max = call->spec->code == CPU__OP_NCHWC_MAXPOOL;
    if (!j.max &&
        (st = cpu__attr_int(call, "count_include_pad", 1, 0, &j.include_pad)) != SES_DRV_OK)
        return st;
    if (y->count == 0)
        return SES_DRV_OK;
    cpu__pool2d_init(&w, &j.g);
    j.x = (const float *)(const void *)x->data;
    j.y = (float *)(void *)y->data;
    cpu__parallel(call, (uint64_t)(y->dims[0] * y->dims[1] * j.g.oh),
                  (uint64_t)(j.g.ow * w.k_count * CPU__NB), cpu__nchwc_pool_task, &j);
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * NchwcGlobalAveragePool, NchwcGlobalMaxPool
 * ------------------------------------------------------------------------------------------- */

typedef struct cpu__nchwc_global_job {
    int max;
    int64_t pixels; /* H * W */
    const float *x; /* [planes, pixels, 16] */
    float *y;       /* [planes, 16] */
} cpu__nchwc_global_job_t;

/*
 * One plane. The mean sums in double, one running sum per channel over the pixels: as exact as
 * the plain GlobalAveragePool's (a ReduceMean of 8-way f32 sums) or better, at no cost that
 * shows in a loop bound by reading the plane. The max is MaxPool's, NaN kept.
 */
CPU__ISA_CLONES static void cpu__nchwc_global_plane(const cpu__nchwc_global_job_t *j,
                                                    const float *restrict x, float *restrict y) {
    if (j->max) {
        float acc[CPU__NB];
        for (int l = 0; l < CPU__NB; l++)
            acc[l] = -INFINITY;
        for (int64_t p = 0; p < j->pixels; p++)
            for (int l = 0; l < CPU__NB; l++)
                acc[l] = CPU__MAXNAN(acc[l], x[p * CPU__NB + l]);
        for (int l = 0; l < CPU__NB; l++)
            y[l] = acc[l];
        return;
    }
    double acc[CPU__NB];
    for (int l = 0; l < CPU__NB; l++)
        acc[l] = 0.0;
    for (int64_t p = 0; p < j->pixels; p++)
        for (int l = 0; l < CPU__NB; l++)
            acc[l] += (double)x[p * CPU__NB + l];
    for (int l = 0; l < CPU__NB; l++)
        y[l] = (float)(acc[l] / (double)j->pixels);
}

static void cpu__nchwc_global_task(void *ctx, uint64_t begin, uint64_t end) {
    const cpu__nchwc_global_job_t *j = ctx;

    for (uint64_t plane = begin; plane < end; plane++)
        cpu__nchwc_global_plane(j, j->x + (int64_t)plane * j->pixels * CPU__NB,
                                j->y + (int64_t)plane * CPU__NB);
}

int32_t cpu__nchwc_global_pool(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0], *y = &call->outs[0];
    cpu__nchwc_global_job_t j;
    char a[96], b[96];

    if (!cpu__nchwc_is_blocked(x) || !cpu__nchwc_is_blocked(y) || y->dims[0] != x->dims[0] ||
        y->dims[1] != x->dims[1] || y->dims[2] != 1 || y->dims[3] != 1)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "expected X [N, Cb, H, W, 16] and Y [N, Cb, 1, 1, 16]: X is %s, Y "
                              "is %s",
                              cpu__format_dims(x->dims, x->rank, a, sizeof a),
                              cpu__format_dims(y->dims, y->rank, b, sizeof b));
    j.max = call->spec->code == CPU__OP_NCHWC_GLOBALMAXPOOL;
    j.pixels = x->dims[2] * x->dims[3];
    j.x = (const float *)(const void *)x->data;
    j.y = (float *)(void *)y->data;
    if (y->count == 0)
        return SES_DRV_OK;
    /* As ReduceMax: an empty plane has no max. (Its mean is NaN, as ReduceMean's.) */
    if (j.max && j.pixels == 0)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "X is %s: the max of no pixels is undefined",
                              cpu__format_dims(x->dims, x->rank, a, sizeof a));
    cpu__parallel(call, (uint64_t)(x->dims[0] * x->dims[1]), (uint64_t)(j.pixels * CPU__NB),
                  cpu__nchwc_global_task, &j);
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * NchwcReorderOutput: [N, Cb, H, W, 16] -> [N, Cb * 16, H, W]
 * ------------------------------------------------------------------------------------------- */

typedef struct cpu__nchwc_reorder_job {
    int64_t h, w;
    const float *x;
    float *y;
} cpu__nchwc_reorder_job_t;

/*
 * Items are input rows: plane item / h, row item % h; each is a [w, 16] -> [16, w] transpose.
 * With SSE (every x86-64), 4 pixels x 4 channels at a time: four loads, a 4x4 transpose in
 * registers, four stores of 4 pixels into four channel rows. Written as plain loops the compiler
 * gathers with stride 16 (or not vectorize at all): 1x96x109x109 took 0.63 ms against 0.3 ms this
 * way on 1 thread of the 2-core Xeon.
 */
static void cpu__nchwc_reorder_task(void *ctx, uint64_t begin, uint64_t end) {
    const cpu__nchwc_reorder_job_t *j = ctx;
    const int64_t hw = j->h * j->w;

    for (uint64_t item = begin; item < end; item++) {
        const int64_t plane = (int64_t)item / j->h, r = (int64_t)item % j->h;
        const float *restrict x = j->x + (plane * hw + r * j->w) * CPU__NB;
        float *restrict y = j->y + plane * CPU__NB * hw + r * j->w;
        int64_t c = 0;
#if defined(__SSE__)
        for (; c + 4 <= j->w; c += 4)
            for (int l = 0; l < CPU__NB; l += 4) {
                __m128 a0 = _mm_loadu_ps(x + (c + 0) * CPU__NB + l);
                __m128 a1 = _mm_loadu_ps(x + (c + 1) * CPU__NB + l);
                __m128 a2 = _mm_loadu_ps(x + (c + 2) * CPU__NB + l);
                __m128 a3 = _mm_loadu_ps(x + (c + 3) * CPU__NB + l);
                _MM_TRANSPOSE4_PS(a0, a1, a2, a3);
                _mm_storeu_ps(y + (l + 0) * hw + c, a0);
                _mm_storeu_ps(y + (l + 1) * hw + c, a1);
                _mm_storeu_ps(y + (l + 2) * hw + c, a2);
                _mm_storeu_ps(y + (l + 3) * hw + c, a3);
            }
#endif
        for (; c < j->w; c++)
            for (int l = 0; l < CPU__NB; l++)
                y[l * hw + c] = x[c * CPU__NB + l];
    }
}

int32_t cpu__nchwc_reorder_output(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0], *y = &call->outs[0];
    cpu__nchwc_reorder_job_t j;
    char a[96], b[96];

    if (!cpu__nchwc_is_blocked(x) || y->rank != 4 || y->dims[0] != x->dims[0] ||
        y->dims[1] != x->dims[1] * CPU__NB || y->dims[2] != x->dims[2] || y->dims[3] != x->dims[3])
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "expected X [N, Cb, H, W, 16] and Y [N, Cb * 16, H, W]: X is %s, Y "
                              "is %s",
                              cpu__format_dims(x->dims, x->rank, a, sizeof a),
                              cpu__format_dims(y->dims, y->rank, b, sizeof b));
    if (y->count == 0)
        return SES_DRV_OK;
    j.h = x->dims[2];
    j.w = x->dims[3];
    j.x = (const float *)(const void *)x->data;
    j.y = (float *)(void *)y->data;
    cpu__parallel(call, (uint64_t)(x->dims[0] * x->dims[1] * j.h), (uint64_t)(j.w * CPU__NB),
                  cpu__nchwc_reorder_task, &j);
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * supports_node
 * ------------------------------------------------------------------------------------------- */

/* Descriptor @p i of a node's array, whose stride is its first entry's struct_size. */
static const ses_drv_tensor_desc_t *cpu__nchwc_desc(const ses_drv_tensor_desc_t *base, uint32_t i) {
    return (const ses_drv_tensor_desc_t *)(const void *)((const unsigned char *)base +
                                                         (size_t)i * base->struct_size);
}

static int cpu__nchwc_desc_blocked(const ses_drv_tensor_desc_t *t) {
    return t->rank == 5 && t->dims && t->dims[4] == CPU__NB;
}

/* "[1,2,3]" of a descriptor. */
static const char *cpu__nchwc_dims(const ses_drv_tensor_desc_t *t, char *buf, size_t size) {
    return t->dims ? cpu__format_dims(t->dims, t->rank, buf, size) : "[?]";
}

/* Refuses the node: `<op> "<name>": <message>`, SES_DRV_UNIMPLEMENTED. */
CPU__PRINTF(3, 4)
static int32_t cpu__nchwc_refuse(ses_drv_device_t *device, const ses_drv_node_t *node,
                                 const char *format, ...) {
    char message[320];
    va_list ap;

    va_start(ap, format);
    vsnprintf(message, sizeof message, format, ap);
    va_end(ap);
    return cpu__device_fail(device, SES_DRV_UNIMPLEMENTED, "%s \"%s\": %s", node->op,
                            node->name ? node->name : "", message);
}

/* NchwcConv: oneDNN on AVX-512, a 2-D convolution of blocked Y and M % 16 == 0. */
static int32_t cpu__nchwc_conv_supports(ses_drv_device_t *device, const ses_drv_node_t *node) {
    const ses_drv_tensor_desc_t *x = cpu__nchwc_desc(node->inputs, 0);
    const ses_drv_tensor_desc_t *w = cpu__nchwc_desc(node->inputs, 1);
    const ses_drv_tensor_desc_t *y = cpu__nchwc_desc(node->outputs, 0);
    char a[96], b[96];
    uint64_t count = 0;
    int32_t st;

    /* A trailing MaxPool the host fused (pool_ attributes, cpu_conv_slices.c): its normalized
     * 2-D window and the convolution's output size. */
    if (node->attr(node, "pool_kernel_shape", SES_DRV_ATTR_INTS, &count, NULL) == SES_DRV_OK) {
        static const struct {
            const char *name;
            uint64_t count;
        } pool[] = {{"pool_kernel_shape", 2},
                    {"pool_strides", 2},
                    {"pool_dilations", 2},
                    {"pool_pads", 4},
                    {"pool_input", 2}};
        for (size_t i = 0; i < sizeof pool / sizeof pool[0]; i++) {
            count = 0;
            if (node->attr(node, pool[i].name, SES_DRV_ATTR_INTS, &count, NULL) != SES_DRV_OK ||
                count != pool[i].count)
                return cpu__nchwc_refuse(device, node,
                                         "the fused max pool needs attribute %s (INTS) of %" PRIu64
                                         " entries: a 2-D window normalized by the host",
                                         pool[i].name, pool[i].count);
        }
    }
    if ((st = cpu__fused_supports(device, node)) != SES_DRV_OK)
        return st;
    if (w->rank != 4)
        return cpu__nchwc_refuse(device, node,
                                 "W is %s: only 2-D convolutions (W of rank 4) run blocked",
                                 cpu__nchwc_dims(w, a, sizeof a));
    if (x->rank != 4 && !cpu__nchwc_desc_blocked(x))
        return cpu__nchwc_refuse(device, node,
                                 "X is %s: expected [N, C, H, W] or [N, C/16, H, W, 16]",
                                 cpu__nchwc_dims(x, a, sizeof a));
    if (!cpu__nchwc_desc_blocked(y))
        return cpu__nchwc_refuse(device, node, "Y is %s: expected [N, M/16, OH, OW, 16]",
                                 cpu__nchwc_dims(y, a, sizeof a));
    if (w->dims[0] % CPU__NB != 0 || y->dims[1] * CPU__NB != w->dims[0])
        return cpu__nchwc_refuse(device, node,
                                 "W is %s: its %" PRId64
                                 " filters must be a multiple of 16, Y's blocks (Y is %s) times 16",
                                 cpu__nchwc_dims(w, a, sizeof a), w->dims[0],
                                 cpu__nchwc_dims(y, b, sizeof b));
    if (!device->conv_dnnl) {
        char why[256] = "";
        if (device->conv_mode == CPU__CONV_IM2COL)
            return cpu__nchwc_refuse(device, node,
                                     "runs only through oneDNN, and option %s is im2col",
                                     CPU__CONV_OPTION);
        cpu__dnnl_load(why, sizeof why);
        return cpu__nchwc_refuse(device, node, "runs only through oneDNN, which is not loaded: %s",
                                 why);
    }
    if (!cpu__dnnl_native_16c())
        return cpu__nchwc_refuse(device, node,
                                 "%s: blocks of 16 channels are native to oneDNN on avx512_core "
                                 "and above only; keep the plain layout",
                                 cpu__dnnl_describe());
    return SES_DRV_OK;
}

/* The window attributes a 2-D pool needs, normalized by the host as MaxPool's (cpu_cnn.c). */
static int32_t cpu__nchwc_pool_supports(ses_drv_device_t *device, const ses_drv_node_t *node) {
    const ses_drv_tensor_desc_t *x = cpu__nchwc_desc(node->inputs, 0);
    const ses_drv_tensor_desc_t *y = cpu__nchwc_desc(node->outputs, 0);
    static const struct {
        const char *name;
        uint64_t count;
    } window[] = {{"kernel_shape", 2}, {"strides", 2}, {"dilations", 2}, {"pads", 4}};
    char a[96], b[96];
    uint64_t count;
    int64_t order = 0;

    if (!cpu__nchwc_desc_blocked(x) || !cpu__nchwc_desc_blocked(y) || x->dims[1] != y->dims[1])
        return cpu__nchwc_refuse(device, node,
                                 "expected X [N, Cb, H, W, 16] and Y [N, Cb, OH, OW, 16]: X is "
                                 "%s, Y is %s",
                                 cpu__nchwc_dims(x, a, sizeof a), cpu__nchwc_dims(y, b, sizeof b));
    count = 1;
    if (node->attr(node, "storage_order", SES_DRV_ATTR_INT, &count, &order) == SES_DRV_OK &&
        order != 0)
        return cpu__nchwc_refuse(device, node,
                                 "storage_order is %" PRId64
                                 "; only 0 (row-major indices) is "
                                 "supported",
                                 order);
    for (size_t i = 0; i < sizeof window / sizeof window[0]; i++) {
        count = 0;
        if (node->attr(node, window[i].name, SES_DRV_ATTR_INTS, &count, NULL) != SES_DRV_OK)
            return cpu__nchwc_refuse(device, node,
                                     "attribute %s (INTS) is missing: the host passes the window "
                                     "normalized, as for MaxPool",
                                     window[i].name);
        if (count != window[i].count)
            return cpu__nchwc_refuse(device, node,
                                     "attribute %s has %" PRIu64 " entries, not %" PRIu64
                                     ": 2-D pools only",
                                     window[i].name, count, window[i].count);
    }
    return SES_DRV_OK;
}

int32_t cpu__nchwc_supports(ses_drv_device_t *device, const ses_drv_node_t *node) {
    char a[96], b[96];

    if (!node || !node->attr || !node->op || (node->n_inputs && !node->inputs) ||
        (node->n_outputs && !node->outputs))
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "supports_node: node, its attr, op, inputs or outputs is NULL");
    const char *op = node->op;
    const int conv = strcmp(op, "NchwcConv") == 0;
    const int pool = strcmp(op, "NchwcMaxPool") == 0 || strcmp(op, "NchwcAveragePool") == 0;
    const int global =
        strcmp(op, "NchwcGlobalAveragePool") == 0 || strcmp(op, "NchwcGlobalMaxPool") == 0;
    const int reorder = strcmp(op, "NchwcReorderOutput") == 0;
    if (!conv && !pool && !global && !reorder)
        return cpu__nchwc_refuse(device, node, "not an NCHWc16 op");
    if (node->n_outputs != 1)
        return cpu__nchwc_refuse(device, node, "%" PRIu32 " outputs; only one, Y, is supported%s",
                                 node->n_outputs,
                                 strcmp(op, "NchwcMaxPool") == 0 ? " (no Indices)" : "");
    if (node->n_inputs < (conv ? 2u : 1u) || node->n_inputs > (conv ? 4u : 1u))
        return cpu__nchwc_refuse(device, node, "%" PRIu32 " inputs", node->n_inputs);
    for (uint32_t i = 0; i < node->n_inputs + 1; i++) {
        const ses_drv_tensor_desc_t *t = i < node->n_inputs ? cpu__nchwc_desc(node->inputs, i)
                                                            : cpu__nchwc_desc(node->outputs, 0);
        if (t->dtype != SES_DRV_DTYPE_F32)
            return cpu__nchwc_refuse(device, node,
                                     "%s %" PRIu32
                                     " is %s; the NCHWc16 ops are "
                                     "f32 only",
                                     i < node->n_inputs ? "input" : "output",
                                     i < node->n_inputs ? i : 0, cpu__dtype_label(t->dtype));
        if (t->rank && !t->dims)
            return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                    "supports_node: %s \"%s\": dims are NULL", op,
                                    node->name ? node->name : "");
    }
    if (conv)
        return cpu__nchwc_conv_supports(device, node);
    if (pool)
        return cpu__nchwc_pool_supports(device, node);
    const ses_drv_tensor_desc_t *x = cpu__nchwc_desc(node->inputs, 0);
    const ses_drv_tensor_desc_t *y = cpu__nchwc_desc(node->outputs, 0);
    if (!cpu__nchwc_desc_blocked(x))
        return cpu__nchwc_refuse(device, node, "X is %s: expected [N, Cb, H, W, 16]",
                                 cpu__nchwc_dims(x, a, sizeof a));
    if (global && (!cpu__nchwc_desc_blocked(y) || y->dims[2] != 1 || y->dims[3] != 1))
        return cpu__nchwc_refuse(device, node, "Y is %s: expected [N, Cb, 1, 1, 16]",
                                 cpu__nchwc_dims(y, b, sizeof b));
    if (reorder && (y->rank != 4 || y->dims[1] != x->dims[1] * CPU__NB))
        return cpu__nchwc_refuse(device, node, "Y is %s: expected [N, Cb * 16, H, W] of X %s",
                                 cpu__nchwc_dims(y, b, sizeof b), cpu__nchwc_dims(x, a, sizeof a));
    return SES_DRV_OK;
}
