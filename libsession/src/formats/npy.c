/*
 * NumPy .npy files. The header is a Python dict literal; this reads the three keys NumPy writes
 * ('descr', 'fortran_order', 'shape') with a small tokenizer, not a Python parser, and refuses
 * anything else.
 */
#include <session/npy.h>

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../error.h"

#define MAGIC "\x93NUMPY"
#define MAX_HEADER 65536
#define MAX_FILE (UINT64_C(16) << 30)

static const struct {
    const char *descr;
    ses_dtype_t dtype;
} descrs[] = {
    {"<f4", SES_F32}, {"<f8", SES_F64}, {"<f2", SES_F16}, {"|i1", SES_I8},  {"<i1", SES_I8},
    {"<i2", SES_I16}, {"<i4", SES_I32}, {"<i8", SES_I64}, {"|u1", SES_U8},  {"<u1", SES_U8},
    {"<u2", SES_U16}, {"<u4", SES_U32}, {"<u8", SES_U64}, {"|b1", SES_BOOL},
};

static const char *skip_space(const char *p, const char *end) {
    while (p < end && isspace((unsigned char)*p))
        p++;
    return p;
}

/* Finds 'key': in the header and returns a pointer to the value after the colon (before
 * @p end), or NULL. */
static const char *find_key(const char *h, const char *end, const char *key) {
    size_t n = strlen(key);
    for (const char *p = h; p + n + 2 < end; p++)
        if ((*p == '\'' || *p == '"') && !strncmp(p + 1, key, n) && p[n + 1] == *p) {
            p = skip_space(p + n + 2, end);
            if (p >= end || *p != ':')
                return NULL;
            p = skip_space(p + 1, end);
            return p < end ? p : NULL;
        }
    return NULL;
}

static ses_status_t parse_header(const char *h, size_t len, ses_dtype_t *dtype, size_t *rank,
                                 int64_t *dims) {
    const char *end = h + len, *p;
    size_t i;

    if (!(p = find_key(h, end, "descr")) || (*p != '\'' && *p != '"'))
        return ses__fail(SES_INVALID_ARGUMENT, "npy: the header has no 'descr'");
    *dtype = SES_DTYPE_INVALID;
    for (i = 0; i < sizeof descrs / sizeof descrs[0]; i++) {
        size_t n = strlen(descrs[i].descr);
        if (p + n + 2 <= end && !strncmp(p + 1, descrs[i].descr, n) && p[n + 1] == *p) {
            *dtype = descrs[i].dtype;
            break;
        }
    }
    if (*dtype == SES_DTYPE_INVALID) {
        const char *q = memchr(p + 1, *p, (size_t)(end - p - 1));
        /* Quote the descriptor, never past the header's end. */
        int shown = q ? (int)(q - p + 1) : (end - p < 8 ? (int)(end - p) : 8);
        return ses__fail(SES_UNIMPLEMENTED,
                         "npy: dtype %.*s is not supported (little-endian f2/f4/f8, i1-i8, u1-u8 "
                         "and b1 are)",
                         shown, p);
    }
    if (!(p = find_key(h, end, "fortran_order")))
        return ses__fail(SES_INVALID_ARGUMENT, "npy: the header has no 'fortran_order'");
    if ((size_t)(end - p) >= 4 && !strncmp(p, "True", 4))
        return ses__fail(SES_UNIMPLEMENTED, "npy: Fortran-order arrays are not supported");
    if ((size_t)(end - p) < 5 || strncmp(p, "False", 5))
        return ses__fail(SES_INVALID_ARGUMENT, "npy: 'fortran_order' is not True or False");
    if (!(p = find_key(h, end, "shape")) || *p != '(')
        return ses__fail(SES_INVALID_ARGUMENT, "npy: the header has no 'shape' tuple");
    p++;
    *rank = 0;
    for (;;) {
        int64_t v = 0;
        p = skip_space(p, end);
        if (p < end && *p == ')')
            break;
        if (p >= end || !isdigit((unsigned char)*p))
            return ses__fail(SES_INVALID_ARGUMENT, "npy: bad 'shape' in the header");
        if (*rank == SES_MAX_RANK)
            return ses__fail(SES_UNIMPLEMENTED, "npy: more than %d dimensions", SES_MAX_RANK);
        /* Digits up to the header's end only: it is not NUL-terminated. */
        for (; p < end && isdigit((unsigned char)*p); p++) {
            if (v > (INT64_MAX - 9) / 10)
                return ses__fail(SES_INVALID_ARGUMENT, "npy: a dimension in 'shape' is too large");
            v = v * 10 + (*p - '0');
        }
        dims[(*rank)++] = v;
        p = skip_space(p, end);
        if (p < end && *p == ',')
            p++;
    }
    return SES_OK;
}

ses_status_t ses_npy_read(const void *data, size_t size, ses_tensor_t **out_tensor) {
    const unsigned char *b = data;
    size_t header_len, offset, rank = 0, bytes;
    int64_t dims[SES_MAX_RANK];
    uint64_t count = 1;
    ses_dtype_t dtype = SES_DTYPE_INVALID;
    ses_status_t st;

    if (!out_tensor)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_npy_read: out_tensor is NULL");
    *out_tensor = NULL;
    if (!data && size)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_npy_read: data is NULL");
    if (size < 10 || memcmp(b, MAGIC, 6) != 0)
        return ses__fail(SES_INVALID_ARGUMENT, "npy: not a .npy file (no \\x93NUMPY magic)");
    if (b[6] == 1) {
        header_len = (size_t)b[8] | (size_t)b[9] << 8;
        offset = 10;
    } else if (b[6] == 2 || b[6] == 3) {
        if (size < 12)
            return ses__fail(SES_INVALID_ARGUMENT, "npy: truncated header");
        header_len = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        offset = 12;
    } else {
        return ses__fail(SES_UNIMPLEMENTED, "npy: format version %d.%d is not supported", b[6],
                         b[7]);
    }
    if (header_len > MAX_HEADER || header_len > size - offset)
        return ses__fail(SES_INVALID_ARGUMENT, "npy: header of %zu bytes in a %zu-byte file",
                         header_len, size);
    st = parse_header((const char *)b + offset, header_len, &dtype, &rank, dims);
    if (st != SES_OK)
        return st;
    for (size_t i = 0; i < rank; i++) {
        if (dims[i] && count > (SIZE_MAX / 16) / (uint64_t)dims[i])
            return ses__fail(SES_INVALID_ARGUMENT, "npy: the shape is too large");
        count *= (uint64_t)dims[i];
    }
    bytes = (size_t)count * ses_dtype_size(dtype);
    offset += header_len;
    if (size - offset != bytes)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "npy: the shape needs %zu bytes of data, the file has %zu", bytes,
                         size - offset);
    st = ses_tensor_create_from(dtype, rank, dims, b + offset, bytes, out_tensor);
    if (st == SES_OK && dtype == SES_BOOL) /* NumPy bools are 0/1; keep them so */
        for (size_t i = 0; i < count; i++)
            ((uint8_t *)ses_tensor_data(*out_tensor))[i] = b[offset + i] != 0;
    return st;
}

ses_status_t ses_npy_read_file(const char *path, ses_tensor_t **out_tensor) {
    struct stat sb;
    unsigned char *data;
    FILE *f;
    size_t got;
    ses_status_t st;

    if (!path || !out_tensor)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_npy_read_file: NULL %s",
                         !path ? "path" : "out_tensor");
    *out_tensor = NULL;
    if (!(f = fopen(path, "rb")))
        return ses__fail(errno == ENOENT ? SES_NOT_FOUND : SES_INVALID_ARGUMENT, "%s: %s", path,
                         strerror(errno));
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode) || (uint64_t)sb.st_size > MAX_FILE) {
        fclose(f);
        return ses__fail(SES_INVALID_ARGUMENT, "%s: not a regular file of at most 16 GiB", path);
    }
    if (!(data = ses__malloc((size_t)sb.st_size + 1))) {
        fclose(f);
        return ses__fail(SES_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    got = fread(data, 1, (size_t)sb.st_size, f);
    fclose(f);
    st = got == (size_t)sb.st_size ? ses_npy_read(data, got, out_tensor)
                                   : ses__fail(SES_INVALID_ARGUMENT, "%s: short read", path);
    free(data);
    if (st != SES_OK && got == (size_t)sb.st_size) {
        char message[1024];
        snprintf(message, sizeof message, "%s", ses_last_error());
        return ses__fail(st, "%s: %s", path, message);
    }
    return st;
}

ses_status_t ses_npy_write_file(const char *path, const ses_tensor_t *t) {
    const char *descr = NULL;
    char header[512], shape[300] = "", tmp[4200];
    size_t used = 0, len, total;
    FILE *f;
    int ok;

    if (!path || !t)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_npy_write_file: NULL %s",
                         !path ? "path" : "tensor");
    if (ses_tensor_is_device(t))
        return ses__fail(SES_INVALID_ARGUMENT,
                         "ses_npy_write_file: the tensor lives on %s, not in host memory; bring it "
                         "home first (ses_tensor_copy_to_host)",
                         ses_tensor_device(t));
    for (size_t i = 0; i < sizeof descrs / sizeof descrs[0] && !descr; i++)
        if (descrs[i].dtype == ses_tensor_dtype(t))
            descr = descrs[i].descr;
    if (!descr)
        return ses__fail(SES_UNIMPLEMENTED, "npy: %s has no NumPy dtype",
                         ses_dtype_name(ses_tensor_dtype(t)));
    for (size_t i = 0; i < ses_tensor_rank(t); i++)
        used += (size_t)snprintf(shape + used, sizeof shape - used, "%lld%s",
                                 (long long)ses_tensor_dims(t)[i],
                                 ses_tensor_rank(t) == 1 || i + 1 < ses_tensor_rank(t) ? ", " : "");
    len = (size_t)snprintf(header, sizeof header,
                           "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr,
                           shape);
    /* Pad with spaces and a newline so that the data starts at a multiple of 64. */
    total = (10 + len + 1 + 63) / 64 * 64;
    memset(header + len, ' ', total - 10 - len - 1);
    header[total - 10 - 1] = '\n';
    if (snprintf(tmp, sizeof tmp, "%s.tmp-%d", path, (int)getpid()) >= (int)sizeof tmp)
        return ses__fail(SES_INVALID_ARGUMENT, "npy: path too long");
    if (!(f = fopen(tmp, "wb")))
        return ses__fail(SES_INVALID_ARGUMENT, "%s: %s", tmp, strerror(errno));
    {
        unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
        pre[8] = (unsigned char)((total - 10) & 0xff);
        pre[9] = (unsigned char)((total - 10) >> 8);
        ok = fwrite(pre, 1, 10, f) == 10 && fwrite(header, 1, total - 10, f) == total - 10 &&
             fwrite(ses_tensor_data((ses_tensor_t *)t), 1, ses_tensor_bytes(t), f) ==
                 ses_tensor_bytes(t);
    }
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        return ses__fail(SES_INVALID_ARGUMENT, "%s: cannot write: %s", path, strerror(e));
    }
    return SES_OK;
}
