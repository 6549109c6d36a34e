/* Element types: each dtype's name and size, the one table tensor.c and string_tensor.c read. */
#include "tensor_internal.h"

static const struct {
    const char *name;
    size_t size;
} dtype_table[] = {
    [SES_DTYPE_INVALID] = {"invalid", 0},
    [SES_F32] = {"f32", 4},
    [SES_F64] = {"f64", 8},
    [SES_F16] = {"f16", 2},
    [SES_BF16] = {"bf16", 2},
    [SES_I8] = {"i8", 1},
    [SES_I16] = {"i16", 2},
    [SES_I32] = {"i32", 4},
    [SES_I64] = {"i64", 8},
    [SES_U8] = {"u8", 1},
    [SES_U16] = {"u16", 2},
    [SES_U32] = {"u32", 4},
    [SES_U64] = {"u64", 8},
    [SES_BOOL] = {"bool", 1},
    [SES_STRING] = {"string", sizeof(char *)},
};

/* Whether @p dtype is one of the 13 numeric element types or SES_STRING. The enum may hold any
 * int, so the comparison is done on a wide signed value rather than trusting the enum's range. */
int ses__dtype_is_valid(ses_dtype_t dtype) {
    long long v = (long long)dtype;

    return (v > (long long)SES_DTYPE_INVALID && v <= (long long)SES_BOOL) ||
           v == (long long)SES_STRING;
}

size_t ses_dtype_size(ses_dtype_t dtype) {
    return ses__dtype_is_valid(dtype) ? dtype_table[dtype].size : 0;
}

const char *ses_dtype_name(ses_dtype_t dtype) {
    return ses__dtype_is_valid(dtype) ? dtype_table[dtype].name : "invalid";
}
