/* idx files: every element type, plain and gzipped, and each way a file can be broken. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include <session/session.h>

#include "test_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#define NOT_NULL_TENSOR ((ses_tensor_t *)(uintptr_t)0x1)

typedef struct fixture {
    char dir[64];
    char path[256];
} fixture_t;

static int setup(void **state) {
    fixture_t *f = calloc(1, sizeof *f);

    if (!f)
        return -1;
    test_mkdtemp(f->dir, sizeof f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture_t *f = *state;

    test_rmtree(f->dir);
    free(f);
    return 0;
}

static void assert_error_mentions(const char *needle) {
    if (!strstr(ses_last_error(), needle))
        fail_msg("expected \"%s\" in the message \"%s\"", needle, ses_last_error());
}

/* A growable byte buffer to assemble files in. */
typedef struct bytes {
    unsigned char data[4096];
    size_t size;
} bytes_t;

static void put(bytes_t *b, const void *data, size_t n) {
    assert_true(b->size + n <= sizeof b->data);
    memcpy(b->data + b->size, data, n);
    b->size += n;
}

static void put_u32_be(bytes_t *b, uint32_t v) {
    unsigned char x[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 8), (unsigned char)v};
    put(b, x, 4);
}

/* The magic and dims of an idx file. */
static void put_header(bytes_t *b, unsigned type, size_t rank, const uint32_t *dims) {
    unsigned char magic[4] = {0, 0, (unsigned char)type, (unsigned char)rank};
    put(b, magic, 4);
    for (size_t i = 0; i < rank; i++)
        put_u32_be(b, dims[i]);
}

static const char *write_plain(fixture_t *f, const char *name, const bytes_t *b) {
    FILE *file;

    snprintf(f->path, sizeof f->path, "%s/%s", f->dir, name);
    file = fopen(f->path, "wb");
    assert_non_null(file);
    assert_int_equal(fwrite(b->data, 1, b->size, file), b->size);
    fclose(file);
    return f->path;
}

/* Writes @p b gzip-compressed through zlib's own gz writer. */
static const char *write_gzip(fixture_t *f, const char *name, const bytes_t *b) {
    gzFile gz;

    snprintf(f->path, sizeof f->path, "%s/%s", f->dir, name);
    gz = gzopen(f->path, "wb9");
    assert_non_null(gz);
    assert_int_equal(gzwrite(gz, b->data, (unsigned)b->size), (int)b->size);
    assert_int_equal(gzclose(gz), Z_OK);
    return f->path;
}

/* Appends raw bytes to the file at f->path. */
static void append_raw(fixture_t *f, const void *data, size_t n) {
    FILE *file = fopen(f->path, "ab");

    assert_non_null(file);
    assert_int_equal(fwrite(data, 1, n, file), n);
    fclose(file);
}

static long file_size(const char *path) {
    struct stat info;

    assert_int_equal(stat(path, &info), 0);
    return (long)info.st_size;
}

/* The 2x3 u8 file the happy-path tests read. */
static bytes_t small_u8_file(void) {
    static const uint32_t dims[] = {2, 3};
    static const unsigned char data[] = {0, 1, 2, 253, 254, 255};
    bytes_t b = {{0}, 0};

    put_header(&b, 0x08, 2, dims);
    put(&b, data, sizeof data);
    return b;
}

static void assert_small_u8(ses_tensor_t *t) {
    static const unsigned char want[] = {0, 1, 2, 253, 254, 255};

    assert_non_null(t);
    assert_int_equal(ses_tensor_dtype(t), SES_U8);
    assert_int_equal(ses_tensor_rank(t), 2);
    assert_int_equal(ses_tensor_dims(t)[0], 2);
    assert_int_equal(ses_tensor_dims(t)[1], 3);
    assert_memory_equal(ses_tensor_data(t), want, sizeof want);
}

/* ---- reading ---- */

static void reads_a_plain_u8_file(void **state) {
    bytes_t b = small_u8_file();
    ses_tensor_t *t = NULL;

    assert_int_equal(ses_idx_read(write_plain(*state, "x-idx2-ubyte", &b), &t), SES_OK);
    assert_small_u8(t);
    ses_tensor_release(t);
}

/* Compression is recognised by the gzip magic, not by the name. */
static void reads_a_gzipped_file_whatever_its_name(void **state) {
    bytes_t b = small_u8_file();
    ses_tensor_t *t = NULL;

    assert_int_equal(ses_idx_read(write_gzip(*state, "x-idx2-ubyte.gz", &b), &t), SES_OK);
    assert_small_u8(t);
    ses_tensor_release(t);
    assert_int_equal(ses_idx_read(write_gzip(*state, "no-suffix", &b), &t), SES_OK);
    assert_small_u8(t);
    ses_tensor_release(t);
}

/* gzip allows members one after the other; they read as one stream. */
static void reads_concatenated_gzip_members(void **state) {
    fixture_t *f = *state;
    bytes_t b = small_u8_file(), first = {{0}, 0}, second = {{0}, 0};
    ses_tensor_t *t = NULL;
    char first_path[256];

    put(&first, b.data, 7);
    put(&second, b.data + 7, b.size - 7);
    write_gzip(f, "second.gz", &second);
    {
        FILE *in = fopen(f->path, "rb");
        unsigned char raw[512];
        size_t n;

        assert_non_null(in);
        n = fread(raw, 1, sizeof raw, in);
        fclose(in);
        write_gzip(f, "both.gz", &first);
        snprintf(first_path, sizeof first_path, "%s", f->path);
        append_raw(f, raw, n);
    }
    assert_int_equal(ses_idx_read(first_path, &t), SES_OK);
    assert_small_u8(t);
    ses_tensor_release(t);
}

/* Every type byte maps to its dtype, and multi-byte elements are converted from big-endian. */
static void reads_every_element_type_from_big_endian(void **state) {
    static const uint32_t dims[] = {2};
    ses_tensor_t *t = NULL;

    {
        bytes_t b = {{0}, 0};
        const unsigned char data[] = {0x80, 0x7f};
        put_header(&b, 0x09, 1, dims);
        put(&b, data, 2);
        assert_int_equal(ses_idx_read(write_gzip(*state, "i8.gz", &b), &t), SES_OK);
        assert_int_equal(ses_tensor_dtype(t), SES_I8);
        assert_int_equal(((int8_t *)ses_tensor_data(t))[0], -128);
        assert_int_equal(((int8_t *)ses_tensor_data(t))[1], 127);
        ses_tensor_release(t);
    }
    {
        bytes_t b = {{0}, 0};
        const unsigned char data[] = {0x12, 0x34, 0xff, 0xfe};
        put_header(&b, 0x0B, 1, dims);
        put(&b, data, 4);
        assert_int_equal(ses_idx_read(write_plain(*state, "i16", &b), &t), SES_OK);
        assert_int_equal(ses_tensor_dtype(t), SES_I16);
        assert_int_equal(((int16_t *)ses_tensor_data(t))[0], 0x1234);
        assert_int_equal(((int16_t *)ses_tensor_data(t))[1], -2);
        ses_tensor_release(t);
    }
    {
        bytes_t b = {{0}, 0};
        put_header(&b, 0x0C, 1, dims);
        put_u32_be(&b, 0x01020304u);
        put_u32_be(&b, 0xfffffffdu);
        assert_int_equal(ses_idx_read(write_plain(*state, "i32", &b), &t), SES_OK);
        assert_int_equal(ses_tensor_dtype(t), SES_I32);
        assert_int_equal(((int32_t *)ses_tensor_data(t))[0], 0x01020304);
        assert_int_equal(((int32_t *)ses_tensor_data(t))[1], -3);
        ses_tensor_release(t);
    }
    {
        bytes_t b = {{0}, 0};
        float want[2] = {1.5f, -0.25f};
        uint32_t bits[2];
        memcpy(bits, want, sizeof bits);
        put_header(&b, 0x0D, 1, dims);
        put_u32_be(&b, bits[0]);
        put_u32_be(&b, bits[1]);
        assert_int_equal(ses_idx_read(write_gzip(*state, "f32.gz", &b), &t), SES_OK);
        assert_int_equal(ses_tensor_dtype(t), SES_F32);
        assert_memory_equal(ses_tensor_data(t), want, sizeof want);
        ses_tensor_release(t);
    }
    {
        bytes_t b = {{0}, 0};
        double want[2] = {3.25, -1e300};
        uint64_t bits[2];
        memcpy(bits, want, sizeof bits);
        put_header(&b, 0x0E, 1, dims);
        for (int i = 0; i < 2; i++) {
            put_u32_be(&b, (uint32_t)(bits[i] >> 32));
            put_u32_be(&b, (uint32_t)bits[i]);
        }
        assert_int_equal(ses_idx_read(write_plain(*state, "f64", &b), &t), SES_OK);
        assert_int_equal(ses_tensor_dtype(t), SES_F64);
        assert_memory_equal(ses_tensor_data(t), want, sizeof want);
        ses_tensor_release(t);
    }
}

/* Rank 0 is one element; a zero dim is an empty tensor. */
static void reads_a_scalar_and_an_empty_tensor(void **state) {
    static const uint32_t empty_dims[] = {70000, 0, 3};
    ses_tensor_t *t = NULL;
    bytes_t b = {{0}, 0};
    unsigned char v = 42;

    put_header(&b, 0x08, 0, NULL);
    put(&b, &v, 1);
    assert_int_equal(ses_idx_read(write_plain(*state, "scalar", &b), &t), SES_OK);
    assert_int_equal(ses_tensor_rank(t), 0);
    assert_int_equal(*(unsigned char *)ses_tensor_data(t), 42);
    ses_tensor_release(t);

    b.size = 0;
    put_header(&b, 0x0D, 3, empty_dims);
    assert_int_equal(ses_idx_read(write_gzip(*state, "empty.gz", &b), &t), SES_OK);
    assert_int_equal(ses_tensor_count(t), 0);
    assert_int_equal(ses_tensor_dims(t)[0], 70000);
    ses_tensor_release(t);
}

/* ---- refusing ---- */

static void null_arguments_are_refused(void **state) {
    ses_tensor_t *t = NOT_NULL_TENSOR;

    (void)state;
    assert_int_equal(ses_idx_read(NULL, &t), SES_INVALID_ARGUMENT);
    assert_null(t);
    assert_int_equal(ses_idx_read("/x", NULL), SES_INVALID_ARGUMENT);
}

static void a_missing_file_is_not_found_and_named(void **state) {
    fixture_t *f = *state;
    ses_tensor_t *t = NOT_NULL_TENSOR;

    snprintf(f->path, sizeof f->path, "%s/absent.gz", f->dir);
    assert_int_equal(ses_idx_read(f->path, &t), SES_NOT_FOUND);
    assert_null(t);
    assert_error_mentions(f->path);
}

static void a_directory_is_refused(void **state) {
    fixture_t *f = *state;
    ses_tensor_t *t = NOT_NULL_TENSOR;

    assert_int_equal(ses_idx_read(f->dir, &t), SES_INVALID_ARGUMENT);
    assert_null(t);
    assert_error_mentions("not a regular file");
}

/* Calls ses_idx_read on f->path and checks the code, NULL output, the path and @p problem. */
static void assert_refused(fixture_t *f, const char *problem) {
    ses_tensor_t *t = NOT_NULL_TENSOR;

    assert_int_equal(ses_idx_read(f->path, &t), SES_INVALID_ARGUMENT);
    assert_null(t);
    assert_error_mentions(f->path);
    assert_error_mentions(problem);
}

static void a_bad_magic_is_refused(void **state) {
    bytes_t b = small_u8_file();

    b.data[1] = 0x08;
    write_plain(*state, "bad-magic", &b);
    assert_refused(*state, "not an idx file");
    b.size = 0;
    write_plain(*state, "empty-file", &b);
    assert_refused(*state, "truncated");
}

static void an_unknown_element_type_is_refused(void **state) {
    bytes_t b = small_u8_file();

    b.data[2] = 0x0A;
    write_gzip(*state, "type.gz", &b);
    assert_refused(*state, "unknown element type 0x0a");
}

static void more_than_eight_dims_are_refused(void **state) {
    static const uint32_t dims[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    bytes_t b = {{0}, 0};
    unsigned char v = 1;

    put_header(&b, 0x08, 9, dims);
    put(&b, &v, 1);
    write_plain(*state, "rank9", &b);
    assert_refused(*state, "9 dimensions");
}

static void dims_whose_product_overflows_are_refused(void **state) {
    static const uint32_t dims[8] = {0xffffffffu, 0xffffffffu, 0xffffffffu, 2, 2, 2, 2, 2};
    bytes_t b = {{0}, 0};

    put_header(&b, 0x0E, 8, dims);
    write_gzip(*state, "overflow.gz", &b);
    assert_refused(*state, "overflow");
}

/* An empty tensor's other dims must still multiply without overflow, as for any tensor. */
static void an_empty_tensor_with_overflowing_dims_is_refused(void **state) {
    static const uint32_t dims[4] = {0, 0xffffffffu, 0xffffffffu, 0xffffffffu};
    bytes_t b = {{0}, 0};

    put_header(&b, 0x08, 4, dims);
    write_plain(*state, "empty-overflow", &b);
    assert_refused(*state, "overflow");
}

/* Dims that ask for more than the file holds are refused before any allocation: a 40-byte file
 * claiming 2^48 elements must not make the reader try to allocate 256 TiB. */
static void dims_larger_than_the_file_are_refused_before_allocating(void **state) {
    static const uint32_t dims[] = {65536, 65536, 65536};
    bytes_t b = {{0}, 0};
    unsigned char v[8] = {0};

    put_header(&b, 0x08, 3, dims);
    put(&b, v, sizeof v);
    write_plain(*state, "huge", &b);
    assert_refused(*state, "truncated");
    write_gzip(*state, "huge.gz", &b);
    assert_refused(*state, "truncated");
}

static void a_truncated_header_is_refused(void **state) {
    bytes_t b = small_u8_file();

    b.size = 6; /* the magic and half of the first dim */
    write_plain(*state, "short-header", &b);
    assert_refused(*state, "truncated");
    write_gzip(*state, "short-header.gz", &b);
    assert_refused(*state, "truncated");
}

static void truncated_data_is_refused(void **state) {
    bytes_t b = small_u8_file();

    b.size -= 1;
    write_plain(*state, "short-data", &b);
    assert_refused(*state, "need 6 data bytes, the file has 5");
    write_gzip(*state, "short-data.gz", &b);
    assert_refused(*state, "need 6 data bytes, the file has 5");
}

/* A gzip file cut short: the compressed stream itself ends early. */
static void a_truncated_gzip_stream_is_refused(void **state) {
    fixture_t *f = *state;
    bytes_t b = small_u8_file();

    write_gzip(f, "cut.gz", &b);
    assert_int_equal(truncate(f->path, file_size(f->path) - 5), 0);
    assert_refused(f, "truncated gzip stream");
}

static void trailing_data_is_refused(void **state) {
    bytes_t b = small_u8_file();
    unsigned char extra[3] = {7, 7, 7};

    put(&b, extra, sizeof extra);
    write_plain(*state, "long", &b);
    assert_refused(*state, "3 trailing bytes");
    write_gzip(*state, "long.gz", &b);
    assert_refused(*state, "3 trailing bytes");
}

/* Bytes after the gzip member that are not another member are garbage, not ignored. */
static void garbage_after_the_gzip_stream_is_refused(void **state) {
    fixture_t *f = *state;
    bytes_t b = small_u8_file();
    const unsigned char garbage[] = {0x00, 0x01, 0x02};

    write_gzip(f, "garbage.gz", &b);
    append_raw(f, garbage, sizeof garbage);
    assert_refused(f, "trailing bytes after the gzip stream");
    write_gzip(f, "one-byte.gz", &b);
    append_raw(f, garbage, 1);
    assert_refused(f, "trailing bytes after the gzip stream");
}

/* A flipped bit in the compressed data or the trailer is caught (by inflate or the CRC). */
static void corrupt_gzip_data_is_refused(void **state) {
    fixture_t *f = *state;
    bytes_t b = {{0}, 0};
    static const uint32_t dims[] = {1000};
    unsigned char data[1000];
    long size;

    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (unsigned char)(i * 7919u >> 3);
    put_header(&b, 0x08, 1, dims);
    put(&b, data, sizeof data);
    write_gzip(f, "corrupt.gz", &b);
    size = file_size(f->path);
    {
        FILE *file = fopen(f->path, "r+b");
        unsigned char c;
        assert_non_null(file);
        /* The CRC32 is the trailer's first 4 bytes: 8 from the end. */
        fseek(file, size - 8, SEEK_SET);
        assert_int_equal(fread(&c, 1, 1, file), 1);
        c ^= 0x01;
        fseek(file, size - 8, SEEK_SET);
        assert_int_equal(fwrite(&c, 1, 1, file), 1);
        fclose(file);
    }
    assert_refused(f, "corrupt gzip data");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(reads_a_plain_u8_file, setup, teardown),
        cmocka_unit_test_setup_teardown(reads_a_gzipped_file_whatever_its_name, setup, teardown),
        cmocka_unit_test_setup_teardown(reads_concatenated_gzip_members, setup, teardown),
        cmocka_unit_test_setup_teardown(reads_every_element_type_from_big_endian, setup, teardown),
        cmocka_unit_test_setup_teardown(reads_a_scalar_and_an_empty_tensor, setup, teardown),
        cmocka_unit_test(null_arguments_are_refused),
        cmocka_unit_test_setup_teardown(a_missing_file_is_not_found_and_named, setup, teardown),
        cmocka_unit_test_setup_teardown(a_directory_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(a_bad_magic_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(an_unknown_element_type_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(more_than_eight_dims_are_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(dims_whose_product_overflows_are_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(an_empty_tensor_with_overflowing_dims_is_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(dims_larger_than_the_file_are_refused_before_allocating,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(a_truncated_header_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(truncated_data_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(a_truncated_gzip_stream_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(trailing_data_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(garbage_after_the_gzip_stream_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(corrupt_gzip_data_is_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
