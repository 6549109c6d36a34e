/* Cast: convert between the dtypes kernels implement. The "to" attribute is an ONNX
 * TensorProto.DataType number; kernels get the ses_dtype_t it maps to. */
#include "infer.h"

/* Where "to" points: the ONNX name, and our dtype (INVALID when we do not support it). */
typedef struct onnx_dtype {
    const char *name;
    ses_dtype_t dtype;
} onnx_dtype_t;

/* Indexed by TensorProto.DataType, through FLOAT4E2M1 (23). */
static const onnx_dtype_t onnx_dtypes[] = {
    [1] = {"FLOAT", SES_F32},
    [2] = {"UINT8", SES_U8},
    [3] = {"INT8", SES_DTYPE_INVALID},
    [4] = {"UINT16", SES_DTYPE_INVALID},
    [5] = {"INT16", SES_DTYPE_INVALID},
    [6] = {"INT32", SES_I32},
    [7] = {"INT64", SES_I64},
    [8] = {"STRING", SES_DTYPE_INVALID},
    [9] = {"BOOL", SES_BOOL},
    [10] = {"FLOAT16", SES_F16},
    [11] = {"DOUBLE", SES_F64},
    [12] = {"UINT32", SES_DTYPE_INVALID},
    [13] = {"UINT64", SES_DTYPE_INVALID},
    [14] = {"COMPLEX64", SES_DTYPE_INVALID},
    [15] = {"COMPLEX128", SES_DTYPE_INVALID},
    [16] = {"BFLOAT16", SES_BF16},
    [17] = {"FLOAT8E4M3FN", SES_DTYPE_INVALID},
    [18] = {"FLOAT8E4M3FNUZ", SES_DTYPE_INVALID},
    [19] = {"FLOAT8E5M2", SES_DTYPE_INVALID},
    [20] = {"FLOAT8E5M2FNUZ", SES_DTYPE_INVALID},
    [21] = {"UINT4", SES_DTYPE_INVALID},
    [22] = {"INT4", SES_DTYPE_INVALID},
    [23] = {"FLOAT4E2M1", SES_DTYPE_INVALID},
};

#define SUPPORTED                                                                                  \
    "1 (FLOAT), 2 (UINT8), 6 (INT32), 7 (INT64), 9 (BOOL), 10 (FLOAT16), 11 (DOUBLE), 16 (BFLOAT16)"

static ses_status_t target_dtype(ses__infer_ctx_t *ctx, ses_dtype_t *out) {
    int64_t to;
    ses_status_t st = ses__op_attr_required_int(ctx, "to", &to);
    size_t n = sizeof onnx_dtypes / sizeof onnx_dtypes[0];

    if (st != SES_OK)
        return st;
    if (to < 1 || (uint64_t)to >= n)
        return ses__op_fail(
            ctx, SES_INVALID_ARGUMENT,
            "attribute to is %lld, not an ONNX TensorProto dtype; supported: " SUPPORTED,
            (long long)to);
    if (onnx_dtypes[to].dtype == SES_DTYPE_INVALID)
        return ses__op_fail(
            ctx, SES_UNIMPLEMENTED,
            "attribute to is %lld (%s), which is not supported; supported: " SUPPORTED,
            (long long)to, onnx_dtypes[to].name);
    *out = onnx_dtypes[to].dtype;
    return SES_OK;
}

ses_status_t ses__infer_cast(ses__infer_ctx_t *ctx) {
    ses_dtype_t to = SES_DTYPE_INVALID;
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "input", SES__DT_BASIC);
    if (st == SES_OK)
        st = target_dtype(ctx, &to);
    if (st != SES_OK)
        return st;
    ctx->outputs[0] = ctx->inputs[0];
    ctx->outputs[0].dtype = to;
    return ses__attrs_set_int(&ctx->kernel_attrs, "to", (int64_t)to);
}
