/* TfIdfVectorizer's inference (tfidf.c). Internal to src/ops. */
#ifndef SES_OPS_TFIDF_H
#define SES_OPS_TFIDF_H

#include "op_schema.h"

ses_status_t ses__infer_tfidf(ses__infer_ctx_t *ctx);

#endif /* SES_OPS_TFIDF_H */
