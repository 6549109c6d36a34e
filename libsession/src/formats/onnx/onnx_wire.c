/*
 * Guards that run before protobuf-c: the file is read whole within a size limit, and its wire
 * format is walked once to bound how deeply messages nest.
 *
 * The walk does not know the schema: a length-delimited field may be a nested message or just
 * bytes. It tries to read each one as a message; when that fails the field is bytes. Nesting is
 * counted only along fields that read as messages, so the count can only overstate the real
 * depth (bytes that happen to be valid wire format), never understate it. Each level rescans its
 * bytes once, so the cost is at most max_depth passes over the file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../error.h"
#include "onnx_internal.h"

typedef enum wire_result {
    WIRE_MESSAGE,   /* well-formed, within the depth limit */
    WIRE_NOT,       /* not a message (it is bytes, or broken) */
    WIRE_TOO_DEEP,  /* a message nesting deeper than the limit */
} wire_result_t;

static int read_varint(const uint8_t *p, size_t size, size_t *pos, uint64_t *out) {
    uint64_t v = 0;

    for (unsigned shift = 0; shift < 64; shift += 7) {
        uint8_t b;
        if (*pos >= size)
            return 0;
        b = p[(*pos)++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 1;
        }
    }
    return 0;
}

/* With @p recurse 0, only whether the bytes read as one flat message. */
static wire_result_t walk(const uint8_t *p, size_t size, uint32_t depth, uint32_t max_depth,
                          int recurse) {
    size_t pos = 0;

    while (pos < size) {
        uint64_t key, v;
        if (!read_varint(p, size, &pos, &key) || (key >> 3) == 0)
            return WIRE_NOT;
        switch (key & 7) {
        case 0: /* varint */
            if (!read_varint(p, size, &pos, &v))
                return WIRE_NOT;
            break;
        case 1: /* 64-bit */
            if (size - pos < 8)
                return WIRE_NOT;
            pos += 8;
            break;
        case 5: /* 32-bit */
            if (size - pos < 4)
                return WIRE_NOT;
            pos += 4;
            break;
        case 2: /* length-delimited: bytes, a string, packed numbers or a message */
            if (!read_varint(p, size, &pos, &v) || v > size - pos)
                return WIRE_NOT;
            if (v > 0 && recurse) {
                /* One level past the limit, any field that reads as a message is too deep. */
                int last = depth + 1 >= max_depth;
                wire_result_t inner = walk(p + pos, (size_t)v, depth + 1, max_depth, !last);
                if (inner == WIRE_TOO_DEEP || (last && inner == WIRE_MESSAGE))
                    return WIRE_TOO_DEEP;
            }
            pos += (size_t)v;
            break;
        default: /* groups (3, 4) are not used by onnx.proto; 6 and 7 do not exist */
            return WIRE_NOT;
        }
    }
    return WIRE_MESSAGE;
}

ses_status_t ses__onnx_check_wire(const uint8_t *data, size_t size, uint32_t max_depth,
                                  const char *what) {
    switch (walk(data, size, 0, max_depth, 1)) {
    case WIRE_MESSAGE:
        return SES_OK;
    case WIRE_TOO_DEEP:
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s: messages nest deeper than %u levels (a hostile or broken file?)",
                         what, max_depth);
    default:
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s: not an ONNX protobuf file (bad wire format, or truncated)", what);
    }
}

ses_status_t ses__onnx_read_file(const char *path, uint64_t max_bytes, uint8_t **out_data,
                                 size_t *out_size) {
    struct stat st;
    uint8_t *data;
    FILE *f;
    size_t got;

    *out_data = NULL;
    *out_size = 0;
    f = fopen(path, "rb");
    if (!f)
        return ses__fail(errno == ENOENT ? SES_NOT_FOUND : SES_INVALID_ARGUMENT, "%s: %s", path,
                         strerror(errno));
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return ses__fail(SES_INVALID_ARGUMENT, "%s: not a regular file", path);
    }
    if ((uint64_t)st.st_size > max_bytes) {
        fclose(f);
        return ses__fail(SES_INVALID_ARGUMENT, "%s: %lld bytes, more than the limit of %llu",
                         path, (long long)st.st_size, (unsigned long long)max_bytes);
    }
    data = ses__malloc((size_t)st.st_size + 1);
    if (!data) {
        fclose(f);
        return ses__fail(SES_OUT_OF_MEMORY, "%s: out of memory for %lld bytes", path,
                         (long long)st.st_size);
    }
    got = fread(data, 1, (size_t)st.st_size, f);
    fclose(f);
    if (got != (size_t)st.st_size) {
        free(data);
        return ses__fail(SES_INVALID_ARGUMENT, "%s: read %zu of %lld bytes", path, got,
                         (long long)st.st_size);
    }
    *out_data = data;
    *out_size = got;
    return SES_OK;
}
