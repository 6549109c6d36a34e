/*
 * Save and Restore: checkpoints as ops (the runtime runs them itself, exec/host_ops.c).
 *
 *   Save(x0, x1, ...; path STRING)      writes its inputs to a safetensors file, each named
 *                                       after its edge ("name", or "name:index")
 *   Restore(v0, v1, ...; path STRING)   reads that file into variables, in place, all or nothing
 */
#include "infer.h"

static ses_status_t check_path(ses__infer_ctx_t *ctx) {
    const char *path = NULL;
    int rc = ses__attrs_get_string(ctx->attrs, "path", &path);

    if (rc != 1 || !path || !*path)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "%s",
                            rc < 0 ? "attribute path must be a STRING"
                                   : "needs a non-empty STRING attribute path");
    return SES_OK;
}

ses_status_t ses__infer_save(ses__infer_ctx_t *ctx) {
    return check_path(ctx);
}

ses_status_t ses__infer_restore(ses__infer_ctx_t *ctx) {
    return check_path(ctx);
}
