/*
 * The ops real exported models (MLPs, small CNNs) need beyond the core set, inferred in cnn.c:
 * convolution and pooling with their gradient ops, BatchNormalization, Dropout,
 * LayerNormalization with its gradient op. Internal to src/ops.
 */
#ifndef SES_OPS_CNN_H
#define SES_OPS_CNN_H

#include "op_schema.h"

/*
 * The sliding window of Conv, the pools and ConvTranspose (conv_transpose.c), one entry per
 * spatial dimension, normalized here in cnn.c.
 */
#define SES__SPATIAL_MAX (SES_MAX_RANK - 2) /* a tensor has N and C besides */
typedef struct ses__window {
    uint32_t n; /* spatial dimensions */
    int64_t kernel[SES__SPATIAL_MAX], strides[SES__SPATIAL_MAX], dilations[SES__SPATIAL_MAX];
    int64_t pads[2 * SES__SPATIAL_MAX]; /* begins, then ends */
    int64_t out[SES__SPATIAL_MAX];
} ses__window_t;

/* Ints attribute @p name with @p n entries, each at least @p min; all @p fallback when absent.
 * @p out_present (may be NULL) says whether it was given. */
ses_status_t ses__window_ints(ses__infer_ctx_t *ctx, const char *name, size_t n, int64_t fallback,
                              int64_t min, int64_t *out, int *out_present);
/* Reads attributes strides, dilations and pads into @p w (w->n set by the caller) and auto_pad
 * into @p out_auto_pad (NOTSET, VALID, SAME_UPPER or SAME_LOWER; NOTSET when absent), failing on
 * a wrong count, a value out of range, another auto_pad, or pads given with an auto_pad. */
ses_status_t ses__window_read(ses__infer_ctx_t *ctx, ses__window_t *w, const char **out_auto_pad);
/* Sets the kernel attributes kernel_shape, strides, dilations, pads of @p w, and group. */
ses_status_t ses__conv_attrs(ses__infer_ctx_t *ctx, const ses__window_t *w, int64_t group);

ses_status_t ses__infer_conv(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_conv_grad(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_fused_conv(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_max_pool(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_average_pool(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_pool_grad(ses__infer_ctx_t *ctx);   /* MaxPoolGrad AveragePoolGrad */
ses_status_t ses__infer_global_pool(ses__infer_ctx_t *ctx); /* GlobalAveragePool GlobalMaxPool */
ses_status_t ses__infer_global_average_pool_grad(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_batch_norm(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_dropout(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_layer_norm(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_layer_norm_grad(ses__infer_ctx_t *ctx);

/* nchwc.c: the blocked-layout ops the compiler's layout pass makes (compile/layout.c). */
ses_status_t ses__infer_nchwc_conv(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_nchwc_pool(ses__infer_ctx_t *ctx); /* NchwcMaxPool NchwcAveragePool */
ses_status_t ses__infer_nchwc_global_pool(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_nchwc_reorder_output(ses__infer_ctx_t *ctx);

#endif /* SES_OPS_CNN_H */
