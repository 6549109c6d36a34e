/*
 * The fused kernels the compiler's fusion pass (libsession/src/compile/fuse.c) binds, as ONNX
 * Runtime's com.microsoft contrib ops: FusedGemm (activation(Gemm)) and the activation shared
 * with FusedConv (whose body is Conv's, in cpu_cnn.c: Z and the activation are applied in the
 * pass that adds the bias). Also their supports_node, which refuses a node whose activation this
 * driver does not know, so the compiler keeps such nodes unfused.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cpu_act.h"
#include "cpu_internal.h"
#include "cpu_math.h"

static const struct {
    const char *name;
    cpu__act_kind_t kind;
    uint64_t n_params;
} cpu__acts[] = {
    {"Identity", CPU__ACT_IDENTITY, 0}, {"Relu", CPU__ACT_RELU, 0},
    {"LeakyRelu", CPU__ACT_LEAKYRELU, 1}, {"Sigmoid", CPU__ACT_SIGMOID, 0},
    {"Tanh", CPU__ACT_TANH, 0},         {"Clip", CPU__ACT_CLIP, 2},
};

int32_t cpu__act_read(const ses_drv_node_t *node, cpu__act_t *out, char *why, size_t why_size) {
    char name[32] = "Identity";
    double params[2] = {0.0, 0.0};
    uint64_t count = sizeof name - 1;
    int32_t rc;
    size_t a;

    memset(out, 0, sizeof *out);
    rc = node->attr(node, "activation", SES_DRV_ATTR_STRING, &count, name);
    if (rc == SES_DRV_OK) {
        if (count >= sizeof name) {
            snprintf(why, why_size, "attribute activation is too long (%" PRIu64 " bytes)", count);
            return SES_DRV_INVALID_ARGUMENT;
        }
        name[count] = '\0';
    } else if (rc != SES_DRV_NOT_FOUND) {
        snprintf(why, why_size, "attribute activation must be a STRING");
        return SES_DRV_INVALID_ARGUMENT;
    }
    for (a = 0; a < sizeof cpu__acts / sizeof cpu__acts[0]; a++)
        if (strcmp(cpu__acts[a].name, name) == 0)
            break;
    if (a == sizeof cpu__acts / sizeof cpu__acts[0]) {
        snprintf(why, why_size, "activation \"%s\" is not one this driver applies", name);
        return SES_DRV_INVALID_ARGUMENT;
    }
    count = 2;
    rc = node->attr(node, "activation_params", SES_DRV_ATTR_FLOATS, &count, params);
    if (rc == SES_DRV_NOT_FOUND)
        count = 0;
    else if (rc != SES_DRV_OK) {
        snprintf(why, why_size, "attribute activation_params must be FLOATS");
        return SES_DRV_INVALID_ARGUMENT;
    }
    if (count != cpu__acts[a].n_params) {
        snprintf(why, why_size,
                 "activation %s takes %" PRIu64 " activation_params, got %" PRIu64, name,
                 cpu__acts[a].n_params, count);
        return SES_DRV_INVALID_ARGUMENT;
    }
    out->kind = cpu__acts[a].kind;
    out->alpha = params[0];
    out->lo = params[0];
    out->hi = params[1];
    return SES_DRV_OK;
}

/* x = s + bias (+ z), then d = EXPR of x: one loop with z and one without, so that neither has
 * a branch inside and both vectorise (a `z ? z[q] : 0` in the loop kept GCC from it, and the
 * FusedGemm of the MLP ran slower than Gemm then Sigmoid). */
#define CPU__ACT_LOOP(T, EXPR)                                                                    \
    do {                                                                                          \
        if (z)                                                                                    \
            for (int64_t q = 0; q < n; q++) {                                                     \
                const T x = s[q] + bias + z[q];                                                   \
                d[q] = EXPR;                                                                      \
            }                                                                                     \
        else                                                                                      \
            for (int64_t q = 0; q < n; q++) {                                                     \
                const T x = s[q] + bias;                                                          \
                d[q] = EXPR;                                                                      \
            }                                                                                     \
    } while (0)

/* One loop per activation (no switch inside). LeakyRelu's product is computed unconditionally
 * and then selected, a form the compiler vectorises. */
#define CPU__ACT_ROW_DEFINE(T, SUFFIX, SIGMOID, TANH)                                             \
    CPU__ISA_CLONES void cpu__act_row_##SUFFIX(T *d, const T *s, T bias, const T *z, int64_t n,                  \
                               const cpu__act_t *act) {                                           \
        const T alpha = (T)act->alpha, lo = (T)act->lo, hi = (T)act->hi;                          \
        switch (act->kind) {                                                                      \
        case CPU__ACT_IDENTITY: CPU__ACT_LOOP(T, x); break;                                       \
        case CPU__ACT_RELU: CPU__ACT_LOOP(T, x < 0 ? (T)0 : x); break;                            \
        case CPU__ACT_LEAKYRELU: CPU__ACT_LOOP(T, x < 0 ? alpha * x : x); break;                  \
        case CPU__ACT_SIGMOID: CPU__ACT_LOOP(T, SIGMOID(x)); break;                               \
        case CPU__ACT_TANH: CPU__ACT_LOOP(T, TANH(x)); break;                                     \
        case CPU__ACT_CLIP: CPU__ACT_LOOP(T, x < lo ? lo : x > hi ? hi : x); break;               \
        }                                                                                         \
    }
CPU__ACT_ROW_DEFINE(float, f32, cpu__sigmoidf, tanhf)
CPU__ACT_ROW_DEFINE(double, f64, cpu__sigmoid, tanh)

/* FusedGemm's activation pass: item i is row i of the [M, N] output. */
typedef struct cpu__gemm_act_job {
    unsigned char *y;
    int64_t n;
    uint32_t dtype;
    const cpu__act_t *act;
} cpu__gemm_act_job_t;

static void cpu__gemm_act_task(void *ctx, uint64_t begin, uint64_t end) {
    const cpu__gemm_act_job_t *j = ctx;
    if (j->dtype == SES_DRV_DTYPE_F32) {
        float *y = (float *)(void *)j->y + begin * (uint64_t)j->n;
        cpu__act_row_f32(y, y, 0.0f, NULL, (int64_t)(end - begin) * j->n, j->act);
    } else {
        double *y = (double *)(void *)j->y + begin * (uint64_t)j->n;
        cpu__act_row_f64(y, y, 0.0, NULL, (int64_t)(end - begin) * j->n, j->act);
    }
}

/*
 * FusedGemm: Gemm's body (cpu_matmul.c: C broadcast into Y, then one BLAS call), then the
 * activation over row blocks on the pool, right after, while the output (for the layer sizes
 * that are bound by memory passes) is still in cache.
 */
int32_t cpu__fused_gemm(const cpu__call_t *call) {
    const cpu__tensor_t *y = &call->out;
    cpu__act_t act;
    char why[160];
    int32_t st;

    if (cpu__act_read(call->node, &act, why, sizeof why) != SES_DRV_OK)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT, "%s", why);
    int act_done = 0;
    if ((st = cpu__gemm_act(call, &act, &act_done)) != SES_DRV_OK)
        return st;
    if (act_done || act.kind == CPU__ACT_IDENTITY || y->count == 0)
        return SES_DRV_OK;
    const int64_t n = y->dims[1];
    cpu__gemm_act_job_t j = {y->data, n, y->dtype, &act};
    cpu__parallel(call, (uint64_t)y->dims[0], (uint64_t)n, cpu__gemm_act_task, &j);
    return SES_DRV_OK;
}

int32_t cpu__fused_gemm_create(ses_drv_device_t *device, const ses_drv_node_t *node,
                               void **out_state) {
    int oom = 0;

    if (!out_state)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "FusedGemm: create: out_state is NULL");
    *out_state = cpu__gemm_state_new(node, &oom);
    if (oom)
        return cpu__device_fail(device, SES_DRV_OUT_OF_MEMORY,
                                "FusedGemm: cannot allocate the kernel's state");
    return SES_DRV_OK;
}

void cpu__fused_gemm_destroy(ses_drv_device_t *device, void *state) {
    (void)device;
    cpu__gemm_state_free(state);
}

int32_t cpu__fused_supports(ses_drv_device_t *device, const ses_drv_node_t *node) {
    cpu__act_t act;
    char why[160];

    if (!node || !node->attr)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT, "supports_node: node is NULL");
    if (cpu__act_read(node, &act, why, sizeof why) != SES_DRV_OK)
        return cpu__device_fail(device, SES_DRV_UNIMPLEMENTED, "%s \"%s\": %s", node->op,
                                node->name ? node->name : "", why);
    if (strcmp(node->op, "FusedConv") == 0 || strcmp(node->op, "NchwcConv") == 0) {
        uint64_t count = 1;
        int64_t has_bias = 0, has_z = 0;
        if (node->attr(node, "has_bias", SES_DRV_ATTR_INT, &count, &has_bias) != SES_DRV_OK)
            has_bias = 0;
        count = 1;
        if (node->attr(node, "has_z", SES_DRV_ATTR_INT, &count, &has_z) != SES_DRV_OK)
            has_z = 0;
        if ((int64_t)node->n_inputs != 2 + (has_bias != 0) + (has_z != 0))
            return cpu__device_fail(device, SES_DRV_UNIMPLEMENTED,
                                    "%s \"%s\": %" PRIu32 " inputs, has_bias %" PRId64
                                    " and has_z %" PRId64 " do not agree",
                                    node->op, node->name ? node->name : "", node->n_inputs,
                                    has_bias, has_z);
    }
    return SES_DRV_OK;
}

/* FusedConv and NchwcConv write Y over Z, their last input when has_z (DRV-86): oneDNN adds Z
 * by the sum of its last pass, reading each element before it writes it, and the other paths
 * read a copy of Z (cpu__conv_forward). */
uint64_t cpu__fused_conv_reuse(ses_drv_device_t *device, const ses_drv_node_t *node,
                               uint32_t output) {
    uint64_t count = 1;
    int64_t has_z = 0;

    (void)device;
    if (!node || !node->attr || output != 0 || node->n_inputs < 3 || node->n_inputs > 64 ||
        node->attr(node, "has_z", SES_DRV_ATTR_INT, &count, &has_z) != SES_DRV_OK || !has_z)
        return 0;
    return UINT64_C(1) << (node->n_inputs - 1);
}
