/*
 * Ops whose output shape depends on an input's value, inferred in value_shape.c from the value
 * read at compile time: NonZero, Compress, TopK, Unique, NonMaxSuppression. Internal to src/ops.
 */
#ifndef SES_OPS_VALUE_SHAPE_H
#define SES_OPS_VALUE_SHAPE_H

#include "op_schema.h"

ses_status_t ses__infer_nonzero(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_compress(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_topk(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_unique(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_nms(ses__infer_ctx_t *ctx); /* NonMaxSuppression */

#endif /* SES_OPS_VALUE_SHAPE_H */
