/*
 * The C side of safetensors_check.py, through the public API only.
 *
 *   safetensors_sample write PATH   writes the sample tensors the script knows (every dtype,
 *                                   extreme values, a scalar, an empty tensor, odd names)
 *   safetensors_sample read PATH    prints what ses_safetensors_read finds, one line each:
 *                                   "tensor NAME DTYPE D0,D1,.. HEXBYTES" and "metadata K=V";
 *                                   on failure "error STATUS: MESSAGE" and exit status 1
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <session/session.h>

static const char *st_dtype(ses_dtype_t dtype) {
    static const char *const names[] = {
        [SES_F32] = "F32", [SES_F64] = "F64", [SES_F16] = "F16", [SES_BF16] = "BF16",
        [SES_I8] = "I8",   [SES_I16] = "I16", [SES_I32] = "I32", [SES_I64] = "I64",
        [SES_U8] = "U8",   [SES_U16] = "U16", [SES_U32] = "U32", [SES_U64] = "U64",
        [SES_BOOL] = "BOOL",
    };
    return dtype >= SES_F32 && dtype <= SES_BOOL ? names[dtype] : "?";
}

typedef struct sample {
    const char *name;
    ses_dtype_t dtype;
    size_t rank;
    int64_t dims[2];
    const void *data;
    size_t bytes;
} sample_t;

static int write_samples(const char *path) {
    static const float f32[6] = {-1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 1.5f};
    static const double f64[2] = {3.141592653589793, -2.5e300};
    static const uint16_t f16[2] = {0x3c00, 0xc000};         /* 1.0, -2.0 */
    static const uint16_t bf16[3] = {0x3f80, 0xc000, 0x4049}; /* 1.0, -2.0, 3.140625 */
    static const int8_t i8[4] = {-128, -1, 0, 127};
    static const int16_t i16[2] = {-32768, 32767};
    static const int32_t i32[4] = {INT32_MIN, INT32_MAX, 0, 7};
    static const int64_t i64[3] = {INT64_MIN, -1, INT64_C(1234567890123)};
    static const uint8_t u8[3] = {0, 128, 255};
    static const uint16_t u16[1] = {65535};
    static const uint32_t u32[1] = {UINT32_MAX};
    static const uint64_t u64[2] = {UINT64_MAX, 1};
    static const uint8_t boolean[4] = {1, 0, 0, 1};
    static const float scalar = 3.25f;
    static const uint8_t odd[1] = {42};
    const sample_t samples[] = {
        {"f32", SES_F32, 2, {2, 3}, f32, sizeof f32},
        {"f64", SES_F64, 1, {2, 0}, f64, sizeof f64},
        {"f16", SES_F16, 1, {2, 0}, f16, sizeof f16},
        {"bf16", SES_BF16, 1, {3, 0}, bf16, sizeof bf16},
        {"i8", SES_I8, 1, {4, 0}, i8, sizeof i8},
        {"i16", SES_I16, 1, {2, 0}, i16, sizeof i16},
        {"i32", SES_I32, 2, {2, 2}, i32, sizeof i32},
        {"i64", SES_I64, 1, {3, 0}, i64, sizeof i64},
        {"u8", SES_U8, 1, {3, 0}, u8, sizeof u8},
        {"u16", SES_U16, 1, {1, 0}, u16, sizeof u16},
        {"u32", SES_U32, 1, {1, 0}, u32, sizeof u32},
        {"u64", SES_U64, 1, {2, 0}, u64, sizeof u64},
        {"bool", SES_BOOL, 1, {4, 0}, boolean, sizeof boolean},
        {"scalar", SES_F32, 0, {0, 0}, &scalar, sizeof scalar},
        {"empty", SES_F32, 2, {0, 4}, NULL, 0},
        {"model.layers/0:w \"q\" na\xc3\xafve", SES_U8, 1, {1, 0}, odd, sizeof odd},
    };
    enum { N = sizeof samples / sizeof samples[0] };
    const char *names[N];
    ses_tensor_t *tensors[N] = {NULL};
    const char *keys[] = {"step", "format", "note"};
    const char *values[] = {"7", "libsession-checkpoint-1", "tab\tnewline\n\"quoted\" \\"};
    ses_status_t st = SES_OK;

    for (size_t i = 0; i < N && st == SES_OK; i++) {
        names[i] = samples[i].name;
        st = ses_tensor_create_from(samples[i].dtype, samples[i].rank, samples[i].dims,
                                    samples[i].data, samples[i].bytes, &tensors[i]);
    }
    if (st == SES_OK)
        st = ses_safetensors_write(path, names, tensors, N, keys, values, 3);
    for (size_t i = 0; i < N; i++)
        ses_tensor_release(tensors[i]);
    if (st != SES_OK) {
        printf("error %s: %s\n", ses_status_name(st), ses_last_error());
        return 1;
    }
    return 0;
}

static int read_file(const char *path) {
    ses_safetensors_t file;
    ses_status_t st = ses_safetensors_read(path, &file);

    if (st != SES_OK) {
        printf("error %s: %s\n", ses_status_name(st), ses_last_error());
        return 1;
    }
    for (size_t i = 0; i < file.n; i++) {
        ses_tensor_t *t = file.tensors[i];
        const unsigned char *p = ses_tensor_data(t);

        printf("tensor %s %s ", file.names[i], st_dtype(ses_tensor_dtype(t)));
        for (size_t d = 0; d < ses_tensor_rank(t); d++)
            printf("%s%" PRId64, d ? "," : "", ses_tensor_dims(t)[d]);
        printf(" ");
        for (size_t b = 0; b < ses_tensor_bytes(t); b++)
            printf("%02x", p[b]);
        printf("\n");
    }
    for (size_t i = 0; i < file.n_metadata; i++)
        printf("metadata %s=%s\n", file.metadata_keys[i], file.metadata_values[i]);
    ses_safetensors_free(&file);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "write") == 0)
        return write_samples(argv[2]);
    if (argc == 3 && strcmp(argv[1], "read") == 0)
        return read_file(argv[2]);
    fprintf(stderr, "usage: %s write|read PATH\n", argv[0]);
    return 2;
}
