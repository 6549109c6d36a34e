/* ReverseSequence's inference (reverse_sequence.c). Internal to src/ops. */
#ifndef SES_OPS_REVERSE_SEQUENCE_H
#define SES_OPS_REVERSE_SEQUENCE_H

#include "op_schema.h"

ses_status_t ses__infer_reverse_sequence(ses__infer_ctx_t *ctx);

#endif /* SES_OPS_REVERSE_SEQUENCE_H */
