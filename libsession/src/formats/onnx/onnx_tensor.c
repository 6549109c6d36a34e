/*
 * ONNX TensorProto to tensors: initializers, Constant values, and the .pb files of the ONNX
 * backend tests. Data may come as raw_data (little-endian bytes) or in the typed repeated fields;
 * either way its amount must match the shape exactly.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../alloc.h"
#include "../../error.h"
#include "../../tensor/tensor_internal.h"
#include "onnx_internal.h"

/* Indexed by TensorProto.DataType. */
static const struct {
    const char *name;
    ses_dtype_t dtype;
} onnx_types[] = {
    [0] = {"UNDEFINED", SES_DTYPE_INVALID}, [1] = {"FLOAT", SES_F32},
    [2] = {"UINT8", SES_U8},                [3] = {"INT8", SES_I8},
    [4] = {"UINT16", SES_U16},              [5] = {"INT16", SES_I16},
    [6] = {"INT32", SES_I32},               [7] = {"INT64", SES_I64},
    [8] = {"STRING", SES_STRING},           [9] = {"BOOL", SES_BOOL},
    [10] = {"FLOAT16", SES_F16},            [11] = {"DOUBLE", SES_F64},
    [12] = {"UINT32", SES_U32},             [13] = {"UINT64", SES_U64},
    [14] = {"COMPLEX64", SES_DTYPE_INVALID}, [15] = {"COMPLEX128", SES_DTYPE_INVALID},
    [16] = {"BFLOAT16", SES_BF16},
};

#define N_ONNX_TYPES (sizeof onnx_types / sizeof onnx_types[0])

ses_dtype_t ses__onnx_dtype(int32_t onnx_type) {
    return onnx_type >= 0 && (size_t)onnx_type < N_ONNX_TYPES ? onnx_types[onnx_type].dtype
                                                               : SES_DTYPE_INVALID;
}

const char *ses__onnx_dtype_name(int32_t onnx_type) {
    return onnx_type >= 0 && (size_t)onnx_type < N_ONNX_TYPES ? onnx_types[onnx_type].name
                                                               : "an unknown type";
}

/* Copies @p n typed values into @p out as @p dtype; @p what names the tensor. */
static ses_status_t from_int32(const int32_t *v, size_t n, ses_dtype_t dtype, void *out) {
    for (size_t i = 0; i < n; i++) {
        switch (dtype) {
        case SES_I32:
            ((int32_t *)out)[i] = v[i];
            break;
        case SES_I16:
            ((int16_t *)out)[i] = (int16_t)v[i];
            break;
        case SES_I8:
            ((int8_t *)out)[i] = (int8_t)v[i];
            break;
        case SES_U16:
        case SES_F16: /* the bits, in the low half */
        case SES_BF16:
            ((uint16_t *)out)[i] = (uint16_t)v[i];
            break;
        case SES_U8:
            ((uint8_t *)out)[i] = (uint8_t)v[i];
            break;
        case SES_BOOL:
            ((uint8_t *)out)[i] = v[i] != 0;
            break;
        default:
            return SES_INTERNAL;
        }
    }
    return SES_OK;
}

/* A STRING TensorProto: its string_data, each element UTF-8 without NUL bytes. */
static ses_status_t string_tensor(const Onnx__TensorProto *t, const char *what,
                                  const int64_t *dims, uint64_t count, ses_tensor_t **out_tensor) {
    ses_tensor_t *tensor = NULL;
    ses_status_t st;

    if (t->has_raw_data)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: a STRING tensor with raw_data (strings are "
                         "in string_data)", what);
    if (t->n_string_data != count)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s: shape says %llu elements, the data holds %llu strings", what,
                         (unsigned long long)count, (unsigned long long)t->n_string_data);
    st = ses_tensor_create(SES_STRING, t->n_dims, dims, &tensor);
    for (size_t i = 0; i < count && st == SES_OK; i++) {
        const ProtobufCBinaryData *d = &t->string_data[i];
        size_t bad;
        char *copy;
        if (d->len && memchr(d->data, 0, d->len)) {
            st = ses__fail(SES_UNIMPLEMENTED, "%s: string %zu holds a NUL byte (not supported)",
                           what, i);
            break;
        }
        if ((bad = ses__utf8_check((const char *)d->data, d->len)) != 0) {
            st = ses__fail(SES_INVALID_ARGUMENT, "%s: string %zu is not valid UTF-8 (byte %zu)",
                           what, i, bad - 1);
            break;
        }
        if (!(copy = ses__malloc(d->len + 1))) {
            st = ses__fail(SES_OUT_OF_MEMORY, "%s: out of memory", what);
            break;
        }
        if (d->len)
            memcpy(copy, d->data, d->len);
        copy[d->len] = '\0';
        ses__string_tensor_take(tensor, i, copy);
    }
    if (st != SES_OK) {
        ses_tensor_release(tensor);
        return st;
    }
    *out_tensor = tensor;
    return SES_OK;
}

ses_status_t ses__onnx_tensor(const Onnx__TensorProto *t, uint64_t max_elements,
                              const char *what, ses_tensor_t **out_tensor) {
    int32_t type = t && t->has_data_type ? t->data_type : 0;
    ses_dtype_t dtype = ses__onnx_dtype(type);
    int64_t dims[SES_MAX_RANK];
    uint64_t count = 1, bytes;
    size_t typed = 0, esize;
    const void *typed_data = NULL;
    ses_tensor_t *tensor = NULL;
    ses_status_t st;

    *out_tensor = NULL;
    if (!t) /* an attribute of type TENSOR without one */
        return ses__fail(SES_INVALID_ARGUMENT, "%s: the tensor is missing", what);
    if (dtype == SES_DTYPE_INVALID)
        return ses__fail(type == 0 ? SES_INVALID_ARGUMENT : SES_UNIMPLEMENTED,
                         "%s: data type %d (%s) is not supported", what, (int)type,
                         ses__onnx_dtype_name(type));
    if (t->has_data_location &&
        t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return ses__fail(SES_UNIMPLEMENTED, "%s: its data is in an external file (not supported)",
                         what);
    if (t->segment)
        return ses__fail(SES_UNIMPLEMENTED, "%s: segmented tensors are not supported", what);
    if (t->n_dims > SES_MAX_RANK)
        return ses__fail(SES_UNIMPLEMENTED, "%s: rank %zu; the most is %d", what, t->n_dims,
                         SES_MAX_RANK);
    for (size_t i = 0; i < t->n_dims; i++) {
        if (t->dims[i] < 0)
            return ses__fail(SES_INVALID_ARGUMENT, "%s: dimension %zu is %lld", what, i,
                             (long long)t->dims[i]);
        if (t->dims[i] && count > max_elements / (uint64_t)t->dims[i])
            return ses__fail(SES_INVALID_ARGUMENT,
                             "%s: more than %llu elements (dimension %zu is %lld)", what,
                             (unsigned long long)max_elements, i, (long long)t->dims[i]);
        count *= (uint64_t)t->dims[i];
        dims[i] = t->dims[i];
    }
    if (dtype == SES_STRING)
        return string_tensor(t, what, dims, count, out_tensor);
    esize = ses_dtype_size(dtype);
    bytes = count * esize;
    if (bytes > SIZE_MAX / 2)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: too large", what);

    /* Where the values are: raw bytes, or one typed field. */
    switch (dtype) {
    case SES_F32:
        typed = t->n_float_data, typed_data = t->float_data;
        break;
    case SES_I64:
        typed = t->n_int64_data, typed_data = t->int64_data;
        break;
    case SES_F64:
        typed = t->n_double_data, typed_data = t->double_data;
        break;
    case SES_U32:
    case SES_U64:
        typed = t->n_uint64_data, typed_data = t->uint64_data;
        break;
    default:
        typed = t->n_int32_data, typed_data = t->int32_data;
        break;
    }
    if (t->has_raw_data && typed)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: has both raw_data and typed values", what);
    if (t->has_raw_data ? t->raw_data.len != bytes : (count && typed != count))
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s: shape says %llu elements (%llu bytes), the data holds %llu %s",
                         what, (unsigned long long)count, (unsigned long long)bytes,
                         (unsigned long long)(t->has_raw_data ? t->raw_data.len : typed),
                         t->has_raw_data ? "bytes" : "values");
    st = ses_tensor_create(dtype, t->n_dims, dims, &tensor);
    if (st != SES_OK)
        return st;
    if (!count) {
        *out_tensor = tensor;
        return SES_OK;
    }
    if (t->has_raw_data) {
        memcpy(ses_tensor_data(tensor), t->raw_data.data, (size_t)bytes);
    } else if (dtype == SES_F32 || dtype == SES_I64 || dtype == SES_F64 || dtype == SES_U64) {
        memcpy(ses_tensor_data(tensor), typed_data, (size_t)bytes);
    } else if (dtype == SES_U32) {
        for (size_t i = 0; i < count; i++)
            ((uint32_t *)ses_tensor_data(tensor))[i] = (uint32_t)t->uint64_data[i];
    } else if ((st = from_int32(t->int32_data, (size_t)count, dtype, ses_tensor_data(tensor))) !=
               SES_OK) {
        ses_tensor_release(tensor);
        return ses__fail(st, "%s: cannot convert %s values", what, ses__onnx_dtype_name(type));
    }
    *out_tensor = tensor;
    return SES_OK;
}

ses_status_t ses_onnx_read_tensor(const void *data, size_t size, ses_tensor_t **out_tensor) {
    Onnx__TensorProto *t;
    ses_status_t st;

    if (!out_tensor)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_onnx_read_tensor: out_tensor is NULL");
    *out_tensor = NULL;
    if (!data && size)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_onnx_read_tensor: data is NULL");
    st = ses__onnx_check_wire(data, size, SES__ONNX_MAX_DEPTH, "TensorProto");
    if (st != SES_OK)
        return st;
    t = onnx__tensor_proto__unpack(NULL, size, data);
    if (!t)
        return ses__fail(SES_INVALID_ARGUMENT, "TensorProto: not a valid serialized TensorProto");
    st = ses__onnx_tensor(t, SES__ONNX_MAX_ELEMENTS, t->name && *t->name ? t->name : "TensorProto",
                          out_tensor);
    onnx__tensor_proto__free_unpacked(t, NULL);
    return st;
}

ses_status_t ses_onnx_read_tensor_file(const char *path, ses_tensor_t **out_tensor) {
    uint8_t *data;
    size_t size;
    ses_status_t st;

    if (!out_tensor || !path)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_onnx_read_tensor_file: NULL %s",
                         !path ? "path" : "out_tensor");
    *out_tensor = NULL;
    st = ses__onnx_read_file(path, SES__ONNX_MAX_BYTES, &data, &size);
    if (st != SES_OK)
        return st;
    st = ses_onnx_read_tensor(data, size, out_tensor);
    ses__onnx_free_file(data, size);
    if (st != SES_OK) {
        char message[1024];
        snprintf(message, sizeof message, "%s", ses_last_error());
        return ses__fail(st, "%s: %s", path, message);
    }
    return SES_OK;
}
