/* Einsum's inference (einsum.c). Internal to src/ops. */
#ifndef SES_OPS_EINSUM_H
#define SES_OPS_EINSUM_H

#include "op_schema.h"

ses_status_t ses__infer_einsum(ses__infer_ctx_t *ctx);

#endif /* SES_OPS_EINSUM_H */
