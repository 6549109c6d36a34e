/*
 * The ops real exported models (MLPs, small CNNs) need beyond the core set, inferred in cnn.c:
 * convolution and pooling with their gradient ops, BatchNormalization (inference), Dropout
 * (inference), LayerNormalization with its gradient op, Pad, Clip, Expand, Split, Shape,
 * ConstantOfShape, Range. Internal to src/ops.
 */
#ifndef SES_OPS_CNN_H
#define SES_OPS_CNN_H

#include "op_schema.h"

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
ses_status_t ses__infer_pad(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_pad_grad(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_clip(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_expand(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_split(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_shape(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_size(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_constant_of_shape(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_range(ses__infer_ctx_t *ctx);

/* nchwc.c: the blocked-layout ops the compiler's layout pass makes (compile/layout.c). */
ses_status_t ses__infer_nchwc_conv(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_nchwc_pool(ses__infer_ctx_t *ctx); /* NchwcMaxPool NchwcAveragePool */
ses_status_t ses__infer_nchwc_global_pool(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_nchwc_reorder_output(ses__infer_ctx_t *ctx);

#endif /* SES_OPS_CNN_H */
