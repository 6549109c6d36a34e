/*
 * The activation a fused kernel applies to its output while it is still in cache: FusedGemm
 * (cpu_fused.c), FusedConv (cpu_cnn.c), and any later kernel that offers an activation (a oneDNN
 * convolution's post-op). A small code plus its parameters, read once per launch from the
 * node's normalized attributes: activation (STRING) and activation_params (FLOATS), as the
 * core's ses__op_activation sets them.
 */
#ifndef SES_CPU_ACT_H
#define SES_CPU_ACT_H

#include <stdint.h>

#include <session/driver.h>

typedef enum cpu__act_kind {
    CPU__ACT_IDENTITY = 0,
    CPU__ACT_RELU,
    CPU__ACT_LEAKYRELU, /* alpha */
    CPU__ACT_SIGMOID,
    CPU__ACT_TANH,
    CPU__ACT_CLIP, /* lo, hi (-inf, +inf for a bound not given) */
} cpu__act_kind_t;

typedef struct cpu__act {
    cpu__act_kind_t kind;
    double alpha;  /* LeakyRelu */
    double lo, hi; /* Clip */
} cpu__act_t;

/**
 * Reads @p node's activation and activation_params into @p out. An unknown name or a wrong
 * parameter count is SES_DRV_INVALID_ARGUMENT with a message in @p why (@p why_size bytes).
 */
int32_t cpu__act_read(const ses_drv_node_t *node, cpu__act_t *out, char *why, size_t why_size);

/**
 * d[q] = act(s[q] + bias + z[q]) for q < n, in f32 (z may be NULL: no addend; s may be d).
 * One pass, while the row is in cache.
 */
void cpu__act_row_f32(float *d, const float *s, float bias, const float *z, int64_t n,
                      const cpu__act_t *act);
/** The same in f64. */
void cpu__act_row_f64(double *d, const double *s, double bias, const double *z, int64_t n,
                      const cpu__act_t *act);

#endif /* SES_CPU_ACT_H */
