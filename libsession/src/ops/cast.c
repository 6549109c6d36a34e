/* Cast: convert between any two of our dtypes (ONNX's complex, float8 and 4-bit types are not
 * supported; strings are cast on the host, exec/host_strings.c). The "to" attribute is an ONNX TensorProto.DataType number; kernels get
 * the ses_dtype_t it maps to. */
#include "infer.h"
#include "string_ops.h"

/* Where "to" points: the ONNX name, and our dtype (INVALID when we do not support it). */
typedef struct onnx_dtype {
    const char *name;
    ses_dtype_t dtype;
} onnx_dtype_t;

/* Indexed by TensorProto.DataType, through FLOAT4E2M1 (23). */
static const onnx_dtype_t onnx_dtypes[] = {
    [1] = {"FLOAT", SES_F32},
    [2] = {"UINT8", SES_U8},
    [3] = {"INT8", SES_I8},
    [4] = {"UINT16", SES_U16},
    [5] = {"INT16", SES_I16},
    [6] = {"INT32", SES_I32},
    [7] = {"INT64", SES_I64},
    [8] = {"STRING", SES_STRING},
    [9] = {"BOOL", SES_BOOL},
    [10] = {"FLOAT16", SES_F16},
    [11] = {"DOUBLE", SES_F64},
    [12] = {"UINT32", SES_U32},
    [13] = {"UINT64", SES_U64},
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

#define SUPPORTED                                                                            \
    "1 (FLOAT), 2 (UINT8), 3 (INT8), 4 (UINT16), 5 (INT16), 6 (INT32), 7 (INT64), 8 (STRING), " \
    "9 (BOOL), 10 (FLOAT16), 11 (DOUBLE), 12 (UINT32), 13 (UINT64), 16 (BFLOAT16)"
/* What a dtype attribute of an op that makes numbers (RandomNormal, EyeLike) may be. */
#define SUPPORTED_NUMERIC                                                                    \
    "1 (FLOAT), 2 (UINT8), 3 (INT8), 4 (UINT16), 5 (INT16), 6 (INT32), 7 (INT64), 9 (BOOL), " \
    "10 (FLOAT16), 11 (DOUBLE), 12 (UINT32), 13 (UINT64), 16 (BFLOAT16)"

/* The dtype ONNX number @p v of attribute @p name stands for, failing naming both. */
static ses_status_t onnx_dtype(ses__infer_ctx_t *ctx, const char *name, int64_t v, int strings,
                               ses_dtype_t *out) {
    size_t n = sizeof onnx_dtypes / sizeof onnx_dtypes[0];

    /* Only Cast makes strings; other ops' dtype attributes (RandomNormal's, EyeLike's) make
     * numbers. */
    const char *supported = strings ? SUPPORTED : SUPPORTED_NUMERIC;

    if (!strings && v == 8)
        return ses__op_fail(ctx, SES_UNIMPLEMENTED,
                            "attribute %s is 8 (STRING); this op makes numbers; supported: %s",
                            name, supported);

    if (v < 1 || (uint64_t)v >= n || !onnx_dtypes[v].name)
        return ses__op_fail(
            ctx, SES_INVALID_ARGUMENT,
            "attribute %s is %lld, not an ONNX TensorProto dtype; supported: %s", name,
            (long long)v, supported);
    if (onnx_dtypes[v].dtype == SES_DTYPE_INVALID)
        return ses__op_fail(
            ctx, SES_UNIMPLEMENTED,
            "attribute %s is %lld (%s), which is not supported; supported: %s", name,
            (long long)v, onnx_dtypes[v].name, supported);
    *out = onnx_dtypes[v].dtype;
    return SES_OK;
}

static ses_status_t target_dtype(ses__infer_ctx_t *ctx, ses_dtype_t *out) {
    int64_t to;
    ses_status_t st = ses__op_attr_required_int(ctx, "to", &to);
    return st != SES_OK ? st : onnx_dtype(ctx, "to", to, 1, out);
}

ses_status_t ses__op_attr_onnx_dtype(ses__infer_ctx_t *ctx, const char *name, ses_dtype_t fallback,
                                     ses_dtype_t *out) {
    int64_t v;
    ses_status_t st;

    if (!ses__attrs_find(ctx->attrs, name)) {
        *out = fallback;
        return SES_OK;
    }
    st = ses__op_attr_int(ctx, name, 0, &v);
    return st != SES_OK ? st : onnx_dtype(ctx, name, v, 0, out);
}

ses_status_t ses__infer_cast(ses__infer_ctx_t *ctx) {
    ses_dtype_t to = SES_DTYPE_INVALID;
    ses_status_t st;

    st = ses__op_check_dtype(ctx, 0, "input", SES__DT_ANY | SES__DT(SES_STRING));
    if (st == SES_OK)
        st = target_dtype(ctx, &to);
    if (st == SES_OK)
        st = ses__op_check_string_cast(ctx, ctx->inputs[0].dtype, to);
    if (st != SES_OK)
        return st;
    ctx->outputs[0] = ctx->inputs[0];
    ctx->outputs[0].dtype = to;
    return ses__attrs_set_int(&ctx->kernel_attrs, "to", (int64_t)to);
}
