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

#endif /* SES_OPS_SPATIAL_H */
