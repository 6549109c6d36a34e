/* Inference for string tensors (issue #22): StringNormalizer, and the checks Cast and CastLike
 * make when a string is on either side. Internal to src/ops; the ops run on the host
 * (exec/host_strings.c). */
#ifndef SES_OPS_STRING_OPS_H
#define SES_OPS_STRING_OPS_H

#include "op_schema.h"

ses_status_t ses__infer_string_normalizer(ses__infer_ctx_t *ctx);

/** SES_UNIMPLEMENTED naming the node when a cast between @p from and @p to involves a string
 *  and a type the host cast does not convert (f16, bf16). */
ses_status_t ses__op_check_string_cast(const ses__infer_ctx_t *ctx, ses_dtype_t from,
                                       ses_dtype_t to);

/**
 * StringNormalizer's attributes, checked: case_change_action ("NONE", "LOWER", "UPPER" into
 * @p out_action 0, 1, 2), is_case_sensitive (0 or 1), locale (refused when its case rules are not
 * the ones the host op implements: Turkish, Azeri, Lithuanian). Messages name the node.
 */
ses_status_t ses__string_normalizer_attrs(const ses__infer_ctx_t *ctx, int *out_action,
                                          int *out_case_sensitive);

#endif /* SES_OPS_STRING_OPS_H */
