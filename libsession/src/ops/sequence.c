/*
 * SelectInput: the core's one op for ONNX sequences whose positions are known only when the plan
 * is compiled (a fed position). The importer (formats/onnx/onnx_sequence.c) keeps a sequence as
 * a list of edges; an element whose place depends on a fed position becomes a SelectInput over
 * the elements it may be, and inference, which sees the fed value, lowers it to an Identity of
 * the one it is. Drivers never see the op.
 */
#include <stdio.h>

#include "infer.h"
#include "op_schema.h"

/*
 * Inputs: position (i32 or i64, one element), then the candidates. Attributes: mode (0: at,
 * 1: insert, 2: erase) and, for insert and erase, index, the place in the result computed:
 *   at:     the sequence is every candidate (length L); the result is element position.
 *   insert: the candidates are the sequence (L) then the inserted tensor; position in [-L, L].
 *   erase:  the candidates are the sequence (L); element index of the sequence without position.
 */
ses_status_t ses__infer_select_input(ses__infer_ctx_t *ctx) {
    int64_t mode, index, pos, length, lo, hi, pick;
    size_t n_pos = 0;
    ses_status_t st;

    if ((st = ses__op_attr_int(ctx, "mode", 0, &mode)) != SES_OK ||
        (st = ses__op_attr_int(ctx, "index", 0, &index)) != SES_OK)
        return st;
    if (mode < SES__SELECT_AT || mode > SES__SELECT_ERASE)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "attribute mode is %lld; 0 (at), 1 (insert) or 2 (erase)",
                            (long long)mode);
    if (ctx->n_inputs < 2)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "no candidates after the position");
    if ((st = ses__op_check_dtype(ctx, 0, "position", (1u << SES_I32) | (1u << SES_I64))) != SES_OK)
        return st;
    if (ses__type_count(&ctx->inputs[0]) != 1)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "position is %s; it must hold one element",
                            ses__tstr(&ctx->inputs[0]).s);
    if (!ctx->values || !ctx->values[0])
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "position must be a constant or fed: the element is chosen when the "
                            "plan compiles, and a position the graph computes is known only "
                            "when it runs");
    if ((st = ses__op_read_ints(ctx, 0, "position", (1u << SES_I32) | (1u << SES_I64), &pos, 1,
                                &n_pos)) != SES_OK)
        return st;
    length = (int64_t)ctx->n_inputs - 1 - (mode == SES__SELECT_INSERT);
    lo = -length;
    hi = mode == SES__SELECT_INSERT ? length : length - 1;
    if (pos < lo || pos > hi)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                            "position %lld is outside [%lld, %lld] for a sequence of %lld "
                            "tensor%s",
                            (long long)pos, (long long)lo, (long long)hi, (long long)length,
                            length == 1 ? "" : "s");
    if (pos < 0)
        pos += length;
    if (mode != SES__SELECT_AT &&
        (index < 0 || index >= length + (mode == SES__SELECT_INSERT ? 1 : -1)))
        return ses__op_fail(
            ctx, SES_INVALID_ARGUMENT, "attribute index %lld is outside the result's %lld elements",
            (long long)index, (long long)(length + (mode == SES__SELECT_INSERT ? 1 : -1)));
    if (mode == SES__SELECT_AT)
        pick = pos;
    else if (mode == SES__SELECT_INSERT)
        pick = index < pos ? index : index == pos ? length : index - 1;
    else
        pick = index < pos ? index : index + 1;
    ctx->outputs[0] = ctx->inputs[1 + pick];
    ctx->kernel_op = "Identity";
    ctx->kernel_inputs = UINT64_C(1) << (1 + pick);
    return SES_OK;
}
