/*
 * The spatial and normalization ops exported models use beyond cnn.c's: ConvTranspose with its
 * gradient op (conv_transpose.c), DepthToSpace, SpaceToDepth, Tile (spatial.c) and the
 * normalizations InstanceNormalization, LRN, MeanVarianceNormalization (norm.c). Internal to
 * src/ops.
 */
#ifndef SES_OPS_SPATIAL_H
#define SES_OPS_SPATIAL_H

#include "op_schema.h"

/* conv_transpose.c */
ses_status_t ses__infer_conv_transpose(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_conv_transpose_grad(ses__infer_ctx_t *ctx);

/* spatial.c */
ses_status_t ses__infer_depth_space(ses__infer_ctx_t *ctx); /* DepthToSpace SpaceToDepth */
ses_status_t ses__infer_tile(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_max_unpool(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_roi_align(ses__infer_ctx_t *ctx);

/* norm.c */
ses_status_t ses__infer_instance_norm(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_lrn(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_mvn(ses__infer_ctx_t *ctx);

#endif /* SES_OPS_SPATIAL_H */
