/* idx files (the format of MNIST and Fashion-MNIST), plain or gzip-compressed, read strictly. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <zlib.h>

#include <session/dataset.h>

#include "../error.h"

/* Bytes read from the file at a time. */
#define IDX_CHUNK (64 * 1024)

/* Deflate expands at most about 1032:1, so a gzip file of n bytes cannot hold more than this
 * many times n bytes of data. Dims that ask for more are refused before allocating. */
#define IDX_MAX_INFLATE_RATIO 1032u

/* Long enough for "[" + SES_MAX_RANK dimensions of up to 10 digits, commas and "]". */
#define IDX_DIMS_TEXT_CAPACITY (2 + SES_MAX_RANK * 11)

/* A source of bytes: the file itself, or the data its gzip members decompress to. */
typedef struct idx_reader {
    const char *path;
    FILE *file;
    uint64_t file_bytes; /* the file's size */
    int gzip;            /* the file is gzip-compressed */
    int inflating;       /* zs has been initialised */
    int gzip_done;       /* every member has ended and the file has no more bytes */
    z_stream zs;
    unsigned char in[IDX_CHUNK];
} idx_reader_t;

static const struct {
    unsigned type;
    ses_dtype_t dtype;
} idx_types[] = {
    {0x08, SES_U8},  {0x09, SES_I8},  {0x0B, SES_I16},
    {0x0C, SES_I32}, {0x0D, SES_F32}, {0x0E, SES_F64},
};

static const char *format_dims(char *buffer, size_t rank, const uint32_t *dims) {
    size_t used = 0;

    buffer[used++] = '[';
    for (size_t i = 0; i < rank; i++)
        used += (size_t)snprintf(buffer + used, IDX_DIMS_TEXT_CAPACITY - used, "%s%" PRIu32,
                                 i ? "," : "", dims[i]);
    snprintf(buffer + used, IDX_DIMS_TEXT_CAPACITY - used, "]");
    return buffer;
}

static ses_status_t read_error(const idx_reader_t *r) {
    return ses__fail(SES_INVALID_ARGUMENT, "idx file %s: cannot read: %s", r->path,
                     strerror(errno ? errno : EIO));
}

/* Moves the unread input to the front of the buffer and reads more until at least @p want
 * bytes are buffered or the file ends. *@p out_have is what is buffered afterwards. */
static ses_status_t fill_input(idx_reader_t *r, size_t want, size_t *out_have) {
    size_t have = r->zs.avail_in;

    if (have && r->zs.next_in != r->in)
        memmove(r->in, r->zs.next_in, have);
    r->zs.next_in = r->in;
    while (have < want) {
        size_t got = fread(r->in + have, 1, sizeof r->in - have, r->file);
        if (got == 0) {
            if (ferror(r->file))
                return read_error(r);
            break;
        }
        have += got;
    }
    r->zs.avail_in = (uInt)have;
    *out_have = have;
    return SES_OK;
}

/* Reads up to @p n bytes of data into @p buffer; fewer only where the data ends. Corrupt or
 * truncated gzip streams, and bytes after the last gzip member, are errors. */
static ses_status_t reader_read(idx_reader_t *r, void *buffer, size_t n, size_t *out_got) {
    unsigned char *out = buffer;
    size_t have = 0;
    ses_status_t st;

    *out_got = 0;
    if (!r->gzip) {
        *out_got = fread(buffer, 1, n, r->file);
        if (*out_got < n && ferror(r->file))
            return read_error(r);
        return SES_OK;
    }

    while (n > 0 && !r->gzip_done) {
        /* inflate takes at most UINT_MAX bytes of output per call. */
        uInt chunk = n > UINT32_MAX ? UINT32_MAX : (uInt)n;
        int z;

        if (r->zs.avail_in == 0) {
            st = fill_input(r, 1, &have);
            if (st != SES_OK)
                return st;
            if (have == 0)
                return ses__fail(SES_INVALID_ARGUMENT,
                                 "idx file %s: truncated gzip stream: the file ends before the "
                                 "compressed data does",
                                 r->path);
        }
        r->zs.next_out = out;
        r->zs.avail_out = chunk;
        z = inflate(&r->zs, Z_NO_FLUSH);
        out += chunk - r->zs.avail_out;
        *out_got += chunk - r->zs.avail_out;
        n -= chunk - r->zs.avail_out;
        if (z == Z_STREAM_END) {
            /* A gzip file may hold several members one after the other; anything else after
             * a member is garbage. */
            st = fill_input(r, 2, &have);
            if (st != SES_OK)
                return st;
            if (have == 0) {
                r->gzip_done = 1;
            } else if (have >= 2 && r->zs.next_in[0] == 0x1f && r->zs.next_in[1] == 0x8b) {
                if (inflateReset(&r->zs) != Z_OK)
                    return ses__fail(SES_INTERNAL, "idx file %s: inflateReset failed", r->path);
            } else {
                return ses__fail(SES_INVALID_ARGUMENT,
                                 "idx file %s: trailing bytes after the gzip stream", r->path);
            }
        } else if (z == Z_MEM_ERROR) {
            return ses__fail(SES_OUT_OF_MEMORY, "idx file %s: out of memory while inflating",
                             r->path);
        } else if (z != Z_OK && z != Z_BUF_ERROR) {
            return ses__fail(SES_INVALID_ARGUMENT, "idx file %s: corrupt gzip data: %s", r->path,
                             r->zs.msg ? r->zs.msg : zError(z));
        }
    }
    return SES_OK;
}

/* Reads exactly @p n bytes of the header; a shorter file is truncated. */
static ses_status_t read_header(idx_reader_t *r, void *buffer, size_t n, const char *what) {
    size_t got;
    ses_status_t st = reader_read(r, buffer, n, &got);

    if (st != SES_OK)
        return st;
    if (got < n)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "idx file %s: truncated: the file ends inside the %s (%zu of %zu bytes)",
                         r->path, what, got, n);
    return SES_OK;
}

/* Counts the data left after the elements, to say how much there is too much. */
static ses_status_t count_rest(idx_reader_t *r, uint64_t *out_extra) {
    unsigned char scratch[4096];
    size_t got;
    ses_status_t st;

    *out_extra = 0;
    do {
        st = reader_read(r, scratch, sizeof scratch, &got);
        if (st != SES_OK)
            return st;
        *out_extra += got;
    } while (got == sizeof scratch);
    return SES_OK;
}

/* Converts @p count big-endian elements of @p size bytes to host order, in place. */
static void from_big_endian(unsigned char *data, size_t count, size_t size) {
    for (size_t i = 0; i < count; i++, data += size) {
        uint64_t v = 0;
        for (size_t b = 0; b < size; b++)
            v = v << 8 | data[b];
        if (size == 2) {
            uint16_t x = (uint16_t)v;
            memcpy(data, &x, 2);
        } else if (size == 4) {
            uint32_t x = (uint32_t)v;
            memcpy(data, &x, 4);
        } else {
            memcpy(data, &v, 8);
        }
    }
}

static ses_status_t open_reader(idx_reader_t *r, const char *path) {
    struct stat info;
    unsigned char magic[2];
    size_t got;

    r->path = path;
    r->file = fopen(path, "rb");
    if (!r->file)
        return ses__fail(errno == ENOENT || errno == ENOTDIR ? SES_NOT_FOUND : SES_INVALID_ARGUMENT,
                         "idx file %s: cannot open: %s", path, strerror(errno));
    if (fstat(fileno(r->file), &info) != 0)
        return read_error(r);
    if (!S_ISREG(info.st_mode))
        return ses__fail(SES_INVALID_ARGUMENT, "idx file %s: not a regular file", path);
    r->file_bytes = (uint64_t)info.st_size;

    /* Peek at the first two bytes: 1f 8b starts a gzip member, an idx file starts 00 00. */
    got = fread(magic, 1, sizeof magic, r->file);
    if (got < sizeof magic && ferror(r->file))
        return read_error(r);
    r->gzip = got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    rewind(r->file);
    if (r->gzip) {
        /* 16 + MAX_WBITS: a gzip wrapper, not zlib's. */
        if (inflateInit2(&r->zs, 16 + MAX_WBITS) != Z_OK)
            return ses__fail(SES_OUT_OF_MEMORY, "idx file %s: cannot start inflating", path);
        r->inflating = 1;
    }
    return SES_OK;
}

ses_status_t ses_idx_read(const char *path, ses_tensor_t **out) {
    ses_status_t st;
    idx_reader_t *r = NULL;
    ses_tensor_t *t = NULL;
    unsigned char magic[4], raw_dims[4 * SES_MAX_RANK];
    uint32_t dims[SES_MAX_RANK];
    int64_t tensor_dims[SES_MAX_RANK];
    char dims_text[IDX_DIMS_TEXT_CAPACITY];
    ses_dtype_t dtype = SES_DTYPE_INVALID;
    size_t rank, elem, count = 1, got, header_bytes;
    uint64_t data_bytes, extra;
    int has_zero = 0;

    if (!out)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: out is NULL", __func__);
    *out = NULL;
    if (!path)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: path is NULL", __func__);

    r = ses__calloc(1, sizeof *r);
    if (!r)
        return ses__fail(SES_OUT_OF_MEMORY, "idx file %s: out of memory", path);
    st = open_reader(r, path);
    if (st != SES_OK)
        goto fail;

    st = read_header(r, magic, sizeof magic, "4-byte magic");
    if (st != SES_OK)
        goto fail;
    if (magic[0] != 0 || magic[1] != 0) {
        st = ses__fail(SES_INVALID_ARGUMENT,
                       "idx file %s: not an idx file: it starts with 0x%02x 0x%02x, an idx file "
                       "with 0x00 0x00 (and a gzip file with 0x1f 0x8b)",
                       path, magic[0], magic[1]);
        goto fail;
    }
    for (size_t i = 0; i < sizeof idx_types / sizeof idx_types[0]; i++)
        if (idx_types[i].type == magic[2])
            dtype = idx_types[i].dtype;
    if (dtype == SES_DTYPE_INVALID) {
        st = ses__fail(SES_INVALID_ARGUMENT,
                       "idx file %s: unknown element type 0x%02x (known: 0x08 u8, 0x09 i8, "
                       "0x0B i16, 0x0C i32, 0x0D f32, 0x0E f64)",
                       path, magic[2]);
        goto fail;
    }
    rank = magic[3];
    if (rank > SES_MAX_RANK) {
        st = ses__fail(SES_INVALID_ARGUMENT,
                       "idx file %s: %zu dimensions, more than the %d a tensor may have", path,
                       rank, SES_MAX_RANK);
        goto fail;
    }
    st = read_header(r, raw_dims, 4 * rank, "dimensions");
    if (st != SES_OK)
        goto fail;
    for (size_t i = 0; i < rank; i++) {
        dims[i] = (uint32_t)raw_dims[4 * i] << 24 | (uint32_t)raw_dims[4 * i + 1] << 16 |
                  (uint32_t)raw_dims[4 * i + 2] << 8 | raw_dims[4 * i + 3];
        tensor_dims[i] = dims[i];
        has_zero |= dims[i] == 0;
    }
    format_dims(dims_text, rank, dims);

    /* The product of the dims, in elements and bytes, must fit a tensor (int64 and size_t).
     * As for any tensor, that holds for the non-zero dims even when a zero dim makes the
     * tensor empty: strides are products of exactly those. */
    elem = ses_dtype_size(dtype);
    {
        uint64_t limit =
            (uint64_t)INT64_MAX < (uint64_t)SIZE_MAX ? (uint64_t)INT64_MAX : (uint64_t)SIZE_MAX;
        limit /= elem;
        for (size_t i = 0; i < rank; i++) {
            if (dims[i] == 0)
                continue;
            if (count > limit / dims[i]) {
                st = ses__fail(SES_INVALID_ARGUMENT,
                               "idx file %s: dims %s overflow: their product does not fit a "
                               "%s tensor",
                               path, dims_text, ses_dtype_name(dtype));
                goto fail;
            }
            count *= dims[i];
        }
        if (has_zero)
            count = 0;
    }
    data_bytes = (uint64_t)count * elem;
    header_bytes = 4 + 4 * rank;

    /* Refuse dims the file cannot hold before allocating for them. */
    if (!r->gzip && data_bytes > r->file_bytes - header_bytes) {
        st = ses__fail(SES_INVALID_ARGUMENT,
                       "idx file %s: truncated: dims %s of %s need %" PRIu64
                       " data bytes, the file has %" PRIu64,
                       path, dims_text, ses_dtype_name(dtype), data_bytes,
                       r->file_bytes - header_bytes);
        goto fail;
    }
    if (r->gzip && data_bytes / IDX_MAX_INFLATE_RATIO > r->file_bytes) {
        st = ses__fail(SES_INVALID_ARGUMENT,
                       "idx file %s: truncated: dims %s of %s need %" PRIu64
                       " data bytes, more than a %" PRIu64 "-byte gzip file can hold",
                       path, dims_text, ses_dtype_name(dtype), data_bytes, r->file_bytes);
        goto fail;
    }

    st = ses_tensor_create(dtype, rank, tensor_dims, &t);
    if (st != SES_OK) {
        /* ses__fail writes the buffer ses_last_error() points to: copy the cause first. */
        char cause[512];
        snprintf(cause, sizeof cause, "%s", ses_last_error());
        st = ses__fail(st, "idx file %s: dims %s of %s: %s", path, dims_text, ses_dtype_name(dtype),
                       cause);
        goto fail;
    }
    st = reader_read(r, ses_tensor_data(t), (size_t)data_bytes, &got);
    if (st != SES_OK)
        goto fail;
    if (got < data_bytes) {
        st = ses__fail(SES_INVALID_ARGUMENT,
                       "idx file %s: truncated: dims %s of %s need %" PRIu64
                       " data bytes, the file has %zu",
                       path, dims_text, ses_dtype_name(dtype), data_bytes, got);
        goto fail;
    }
    st = count_rest(r, &extra);
    if (st != SES_OK)
        goto fail;
    if (extra) {
        st = ses__fail(SES_INVALID_ARGUMENT,
                       "idx file %s: %" PRIu64 " trailing bytes after the %" PRIu64
                       " data bytes that dims %s of %s give",
                       path, extra, data_bytes, dims_text, ses_dtype_name(dtype));
        goto fail;
    }
    if (elem > 1)
        from_big_endian(ses_tensor_data(t), count, elem);

    if (r->inflating)
        inflateEnd(&r->zs);
    fclose(r->file);
    free(r);
    *out = t;
    return SES_OK;

fail:
    ses_tensor_release(t);
    if (r->inflating)
        inflateEnd(&r->zs);
    if (r->file)
        fclose(r->file);
    free(r);
    return st;
}
