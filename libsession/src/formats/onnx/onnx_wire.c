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
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* The length-delimited fields numbered @p field of the message at [pos, end), each handed to
 * @p fn with its bytes' offset and length. Stops at the first fault. */
static void each_field(const uint8_t *p, size_t pos, size_t end, uint64_t field,
                       void (*fn)(void *, size_t, size_t), void *ctx) {
    while (pos < end) {
        uint64_t key, v;
        if (!read_varint(p, end, &pos, &key))
            return;
        switch (key & 7) {
        case 0:
            if (!read_varint(p, end, &pos, &v))
                return;
            break;
        case 1:
            if (end - pos < 8)
                return;
            pos += 8;
            break;
        case 5:
            if (end - pos < 4)
                return;
            pos += 4;
            break;
        case 2:
            if (!read_varint(p, end, &pos, &v) || v > end - pos)
                return;
            if ((key >> 3) == field)
                fn(ctx, pos, (size_t)v);
            pos += (size_t)v;
            break;
        default:
            return;
        }
    }
}

typedef struct spans_ctx {
    const uint8_t *p;
    size_t min_len, cap, n;
    ses__onnx_span_t *spans;
} spans_ctx_t;

static void on_raw_data(void *ctx, size_t offset, size_t len) {
    spans_ctx_t *c = ctx;
    if (len >= c->min_len && c->n < c->cap)
        c->spans[c->n++] = (ses__onnx_span_t){offset, len};
}

static void on_initializer(void *ctx, size_t offset, size_t len) {
    spans_ctx_t *c = ctx;
    each_field(c->p, offset, offset + len, 9, on_raw_data, ctx);
}

static void on_graph(void *ctx, size_t offset, size_t len) {
    spans_ctx_t *c = ctx;
    each_field(c->p, offset, offset + len, 5, on_initializer, ctx);
}

size_t ses__onnx_raw_spans(const uint8_t *data, size_t size, size_t min_len,
                           ses__onnx_span_t *spans, size_t cap) {
    spans_ctx_t c = {data, min_len, cap, 0, spans};
    each_field(data, 0, size, 7, on_graph, &c);
    return c.n;
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

/* An empty file maps to this (mmap refuses a length of 0). */
static uint8_t empty_file[1];

ses_status_t ses__onnx_read_file(const char *path, uint64_t max_bytes, uint8_t **out_data,
                                 size_t *out_size) {
    struct stat st;
    void *data;
    int fd;

    *out_data = NULL;
    *out_size = 0;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ses__fail(errno == ENOENT ? SES_NOT_FOUND : SES_INVALID_ARGUMENT, "%s: %s", path,
                         strerror(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return ses__fail(SES_INVALID_ARGUMENT, "%s: not a regular file", path);
    }
    if ((uint64_t)st.st_size > max_bytes) {
        close(fd);
        return ses__fail(SES_INVALID_ARGUMENT, "%s: %lld bytes, more than the limit of %llu",
                         path, (long long)st.st_size, (unsigned long long)max_bytes);
    }
    if (st.st_size == 0) {
        close(fd);
        *out_data = empty_file;
        return SES_OK;
    }
    /* Mapped, not read into a buffer: the bytes are read once, by protobuf-c, from the page
     * cache, and the pages it has passed can be given back while it goes on. */
    data = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (data == MAP_FAILED)
        return ses__fail(errno == ENOMEM ? SES_OUT_OF_MEMORY : SES_INVALID_ARGUMENT,
                         "%s: cannot map its %lld bytes: %s", path, (long long)st.st_size,
                         strerror(errno));
    *out_data = data;
    *out_size = (size_t)st.st_size;
    return SES_OK;
}

void ses__onnx_free_file(uint8_t *data, size_t size) {
    if (data && data != empty_file && size)
        munmap(data, size);
}

void ses__onnx_drop_file(uint8_t *data, size_t size, size_t upto) {
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    upto = (upto < size ? upto : size) / page * page;
    if (data && data != empty_file && upto)
        madvise(data, upto, MADV_DONTNEED);
}
