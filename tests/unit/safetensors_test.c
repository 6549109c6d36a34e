/*
 * safetensors files: every dtype, scalars, empty tensors and metadata round-trip; every kind of
 * corruption is refused with a message naming the file and the fault, returning nothing; writes
 * are atomic and leave no temporary file behind when they fail.
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <session/session.h>

#include "test_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

/* ---- helpers ---------------------------------------------------------------------------- */

typedef struct fixture {
    char dir[64];
    char path[128];
} fixture_t;

static int setup(void **state) {
    fixture_t *f = calloc(1, sizeof *f);

    if (!f)
        return -1;
    test_mkdtemp(f->dir, sizeof f->dir);
    snprintf(f->path, sizeof f->path, "%s/t.safetensors", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture_t *f = *state;

    test_rmtree(f->dir);
    free(f);
    return 0;
}

/* A tensor whose bytes are 1, 2, 3, ... so that any misplaced byte shows. */
static ses_tensor_t *patterned(ses_dtype_t dtype, size_t rank, const int64_t *dims, int seed) {
    ses_tensor_t *t = NULL;
    unsigned char *p;

    if (ses_tensor_create(dtype, rank, dims, &t) != SES_OK)
        fail_msg("create: %s", ses_last_error());
    p = ses_tensor_data(t);
    for (size_t i = 0; i < ses_tensor_bytes(t); i++)
        p[i] = (unsigned char)(seed + 7 * (int)i + 1);
    if (dtype == SES_BOOL)
        for (size_t i = 0; i < ses_tensor_bytes(t); i++)
            p[i] &= 1;
    return t;
}

/* Writes 8-byte length + @p json (unpadded) + @p data_size bytes of data. */
static void write_raw(const char *path, uint64_t header_len, const char *json, size_t data_size) {
    FILE *f = fopen(path, "wb");
    unsigned char length[8];

    assert_non_null(f);
    for (int b = 0; b < 8; b++)
        length[b] = (unsigned char)(header_len >> (8 * b));
    assert_int_equal(fwrite(length, 1, 8, f), 8);
    if (json)
        assert_int_equal(fwrite(json, 1, strlen(json), f), strlen(json));
    for (size_t i = 0; i < data_size; i++)
        fputc((int)(i & 0xff), f);
    fclose(f);
}

static void write_json(const char *path, const char *json, size_t data_size) {
    write_raw(path, strlen(json), json, data_size);
}

/* Reading @p path must fail with @p status, name the file and contain @p phrase, and return
 * nothing. */
static void expect_read_error(const char *path, ses_status_t status, const char *phrase) {
    ses_safetensors_t st;
    ses_status_t rc;

    memset(&st, 0xab, sizeof st);
    rc = ses_safetensors_read(path, &st);
    if (rc != status)
        fail_msg("expected %s, got %s: %s", ses_status_name(status), ses_status_name(rc),
                 ses_last_error());
    if (!strstr(ses_last_error(), path) || !strstr(ses_last_error(), phrase))
        fail_msg("the message should name %s and say \"%s\": %s", path, phrase, ses_last_error());
    assert_int_equal(st.n, 0);
    assert_null(st.names);
    assert_null(st.tensors);
    assert_int_equal(st.n_metadata, 0);
    assert_null(st.metadata_keys);
    assert_null(st.metadata_values);
}

/* The names in @p dir other than . and .., joined by spaces. */
static void folder_listing(const char *dir, char *out, size_t size) {
    DIR *d = opendir(dir);
    struct dirent *e;
    size_t used = 0;

    assert_non_null(d);
    out[0] = '\0';
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        used += (size_t)snprintf(out + used, size - used, "%s%s", used ? " " : "", e->d_name);
    }
    closedir(d);
}

/* ---- round trips ------------------------------------------------------------------------ */

static void every_dtype_scalars_empty_tensors_and_metadata_round_trip(void **state) {
    fixture_t *f = *state;
    static const ses_dtype_t dtypes[] = {SES_F32, SES_F64, SES_F16, SES_BF16, SES_I8,
                                         SES_I16, SES_I32, SES_I64, SES_U8,   SES_U16,
                                         SES_U32, SES_U64, SES_BOOL};
    enum { N_DTYPES = sizeof dtypes / sizeof dtypes[0], N = N_DTYPES + 3 };
    const int64_t dims[3] = {2, 3, 1}, empty_dims[2] = {0, 5};
    char names_storage[N][32];
    const char *names[N];
    ses_tensor_t *tensors[N];
    const char *keys[] = {"step", "note"}, *values[] = {"12", "héllo \"quoted\"\n"};
    ses_safetensors_t st;

    for (size_t i = 0; i < N_DTYPES; i++) {
        snprintf(names_storage[i], sizeof names_storage[i], "layer.%s", ses_dtype_name(dtypes[i]));
        tensors[i] = patterned(dtypes[i], 1 + i % 3, dims, (int)i);
    }
    snprintf(names_storage[N_DTYPES], 32, "scalar");
    tensors[N_DTYPES] = patterned(SES_F64, 0, NULL, 3);
    snprintf(names_storage[N_DTYPES + 1], 32, "empty");
    tensors[N_DTYPES + 1] = patterned(SES_F32, 2, empty_dims, 0);
    snprintf(names_storage[N_DTYPES + 2], 32, "after.empty");
    tensors[N_DTYPES + 2] = patterned(SES_I8, 1, dims, 9);
    for (size_t i = 0; i < N; i++)
        names[i] = names_storage[i];

    if (ses_safetensors_write(f->path, names, tensors, N, keys, values, 2) != SES_OK)
        fail_msg("write: %s", ses_last_error());
    if (ses_safetensors_read(f->path, &st) != SES_OK)
        fail_msg("read: %s", ses_last_error());
    assert_int_equal(st.n, N);
    for (size_t i = 0; i < N; i++) {
        /* Read back in file order, which is the order written. */
        assert_string_equal(st.names[i], names[i]);
        assert_int_equal(ses_tensor_dtype(st.tensors[i]), ses_tensor_dtype(tensors[i]));
        assert_int_equal(ses_tensor_rank(st.tensors[i]), ses_tensor_rank(tensors[i]));
        for (size_t d = 0; d < ses_tensor_rank(tensors[i]); d++)
            assert_int_equal(ses_tensor_dims(st.tensors[i])[d], ses_tensor_dims(tensors[i])[d]);
        assert_int_equal(ses_tensor_bytes(st.tensors[i]), ses_tensor_bytes(tensors[i]));
        assert_memory_equal(ses_tensor_data(st.tensors[i]), ses_tensor_data(tensors[i]),
                            ses_tensor_bytes(tensors[i]));
    }
    assert_int_equal(ses_tensor_rank(st.tensors[N_DTYPES]), 0);
    assert_int_equal(ses_tensor_count(st.tensors[N_DTYPES + 1]), 0);
    assert_int_equal(st.n_metadata, 2);
    assert_string_equal(st.metadata_keys[0], "step");
    assert_string_equal(st.metadata_values[0], "12");
    assert_string_equal(st.metadata_keys[1], "note");
    assert_string_equal(st.metadata_values[1], values[1]);
    ses_safetensors_free(&st);
    assert_int_equal(st.n, 0);
    assert_null(st.names);
    ses_safetensors_free(&st); /* twice is harmless */
    ses_safetensors_free(NULL);
    for (size_t i = 0; i < N; i++)
        ses_tensor_release(tensors[i]);
}

/* The header is padded with spaces to a multiple of 8, offsets are exact integers, and the data
 * follows it directly. */
static void the_file_layout_is_the_safetensors_layout(void **state) {
    fixture_t *f = *state;
    int64_t two = 2;
    ses_tensor_t *a = patterned(SES_F32, 1, &two, 0), *b = patterned(SES_U8, 1, &two, 5);
    ses_tensor_t *tensors[] = {a, b};
    const char *names[] = {"a", "b"};
    unsigned char buffer[512];
    char header[512];
    uint64_t header_len = 0;
    size_t size;
    FILE *file;

    assert_int_equal(ses_safetensors_write(f->path, names, tensors, 2, NULL, NULL, 0), SES_OK);
    file = fopen(f->path, "rb");
    assert_non_null(file);
    size = fread(buffer, 1, sizeof buffer - 1, file);
    fclose(file);
    for (int i = 7; i >= 0; i--)
        header_len = (header_len << 8) | buffer[i];
    assert_int_equal(header_len % 8, 0);
    assert_int_equal(size, 8 + header_len + 8 + 2);
    assert_true(header_len < sizeof header);
    memcpy(header, buffer + 8, header_len);
    header[header_len] = '\0';
    assert_int_equal(header[0], '{');
    assert_int_equal(header[header_len - 1], ' '); /* 107 bytes of JSON, padded to 112 */
    assert_non_null(
        strstr(header, "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}"));
    assert_non_null(
        strstr(header, "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[8,10]}"));
    assert_null(strstr(header, "__metadata__"));
    assert_memory_equal(buffer + 8 + header_len, ses_tensor_data(a), 8);
    assert_memory_equal(buffer + 8 + header_len + 8, ses_tensor_data(b), 2);
    ses_tensor_release(a);
    ses_tensor_release(b);
}

static void a_file_without_tensors_round_trips(void **state) {
    fixture_t *f = *state;
    ses_safetensors_t st;

    assert_int_equal(ses_safetensors_write(f->path, NULL, NULL, 0, NULL, NULL, 0), SES_OK);
    assert_int_equal(ses_safetensors_read(f->path, &st), SES_OK);
    assert_int_equal(st.n, 0);
    assert_int_equal(st.n_metadata, 0);
    ses_safetensors_free(&st);
}

/* Files from other writers list entries in any order, with __metadata__ first and spaces. */
static void a_file_from_another_writer_reads_in_data_order(void **state) {
    fixture_t *f = *state;
    ses_safetensors_t st;

    write_json(f->path,
               "{\"__metadata__\": {\"format\": \"pt\"}, "
               "\"z\": {\"dtype\": \"I16\", \"shape\": [2], \"data_offsets\": [4, 8]}, "
               "\"a\": {\"dtype\": \"F32\", \"shape\": [], \"data_offsets\": [0, 4]}}   ",
               8);
    if (ses_safetensors_read(f->path, &st) != SES_OK)
        fail_msg("read: %s", ses_last_error());
    assert_int_equal(st.n, 2);
    assert_string_equal(st.names[0], "a");
    assert_string_equal(st.names[1], "z");
    assert_int_equal(((unsigned char *)ses_tensor_data(st.tensors[1]))[0], 4);
    assert_string_equal(st.metadata_values[0], "pt");
    ses_safetensors_free(&st);
}

static void writing_again_replaces_the_file_whole(void **state) {
    fixture_t *f = *state;
    int64_t n = 3;
    ses_tensor_t *a = patterned(SES_I32, 1, &n, 1), *b = patterned(SES_I32, 0, NULL, 2);
    const char *name = "x";
    ses_safetensors_t st;
    char listing[256];

    assert_int_equal(ses_safetensors_write(f->path, &name, &a, 1, NULL, NULL, 0), SES_OK);
    assert_int_equal(ses_safetensors_write(f->path, &name, &b, 1, NULL, NULL, 0), SES_OK);
    assert_int_equal(ses_safetensors_read(f->path, &st), SES_OK);
    assert_int_equal(st.n, 1);
    assert_int_equal(ses_tensor_rank(st.tensors[0]), 0);
    assert_memory_equal(ses_tensor_data(st.tensors[0]), ses_tensor_data(b), 4);
    ses_safetensors_free(&st);
    folder_listing(f->dir, listing, sizeof listing);
    assert_string_equal(listing, "t.safetensors");
    ses_tensor_release(a);
    ses_tensor_release(b);
}

/* ---- writer errors ---------------------------------------------------------------------- */

static void a_write_into_a_missing_folder_fails_cleanly(void **state) {
    fixture_t *f = *state;
    char path[256], listing[256];
    ses_tensor_t *t = patterned(SES_F32, 0, NULL, 0);
    const char *name = "t";

    snprintf(path, sizeof path, "%s/missing/t.safetensors", f->dir);
    assert_int_equal(ses_safetensors_write(path, &name, &t, 1, NULL, NULL, 0), SES_NOT_FOUND);
    assert_non_null(strstr(ses_last_error(), path));
    folder_listing(f->dir, listing, sizeof listing);
    assert_string_equal(listing, "");
    ses_tensor_release(t);
}

/* The temporary file exists by the time rename fails; it must be removed. */
static void a_failed_rename_leaves_no_temporary_file(void **state) {
    fixture_t *f = *state;
    char listing[256];
    ses_tensor_t *t = patterned(SES_F32, 0, NULL, 0);
    const char *name = "t";

    assert_int_equal(mkdir(f->path, 0755), 0);
    assert_int_not_equal(ses_safetensors_write(f->path, &name, &t, 1, NULL, NULL, 0), SES_OK);
    assert_non_null(strstr(ses_last_error(), "rename"));
    folder_listing(f->dir, listing, sizeof listing);
    assert_string_equal(listing, "t.safetensors");
    ses_tensor_release(t);
}

static void bad_names_and_metadata_are_refused_before_anything_is_written(void **state) {
    fixture_t *f = *state;
    ses_tensor_t *t = patterned(SES_F32, 0, NULL, 0);
    ses_tensor_t *two[] = {t, t};
    const char *dup[] = {"w", "w"}, *empty = "", *reserved = "__metadata__", *ok = "w";
    const char *keys[] = {"k", "k"}, *values[] = {"1", "2"};
    char listing[256];

    assert_int_equal(ses_safetensors_write(f->path, dup, two, 2, NULL, NULL, 0),
                     SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "\"w\""));
    assert_int_equal(ses_safetensors_write(f->path, &empty, &t, 1, NULL, NULL, 0),
                     SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "empty"));
    assert_int_equal(ses_safetensors_write(f->path, &reserved, &t, 1, NULL, NULL, 0),
                     SES_INVALID_ARGUMENT);
    assert_int_equal(ses_safetensors_write(f->path, &ok, &t, 1, keys, values, 2),
                     SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "\"k\""));
    assert_int_equal(ses_safetensors_write(f->path, &ok, NULL, 1, NULL, NULL, 0),
                     SES_INVALID_ARGUMENT);
    assert_int_equal(ses_safetensors_write(NULL, &ok, &t, 1, NULL, NULL, 0),
                     SES_INVALID_ARGUMENT);
    folder_listing(f->dir, listing, sizeof listing);
    assert_string_equal(listing, "");
    ses_tensor_release(t);
}

/* ---- reader errors ---------------------------------------------------------------------- */

#define ENTRY(name, dtype, shape, begin, end)                                                  \
    "\"" name "\":{\"dtype\":\"" dtype "\",\"shape\":" shape ",\"data_offsets\":[" #begin "," #end \
    "]}"

static void a_missing_file_is_not_found(void **state) {
    fixture_t *f = *state;

    expect_read_error(f->path, SES_NOT_FOUND, "cannot open");
}

static void a_truncated_header_length_is_refused(void **state) {
    fixture_t *f = *state;
    FILE *file = fopen(f->path, "wb");

    assert_non_null(file);
    fwrite("\x10\0\0\0\0", 1, 5, file);
    fclose(file);
    expect_read_error(f->path, SES_INVALID_ARGUMENT, "truncated header length");
}

static void a_truncated_header_is_refused(void **state) {
    fixture_t *f = *state;

    write_raw(f->path, 100, "{\"a\":{\"dtype\":", 0);
    expect_read_error(f->path, SES_INVALID_ARGUMENT, "truncated header");
}

static void truncated_data_is_refused(void **state) {
    fixture_t *f = *state;

    write_json(f->path, "{" ENTRY("a", "F32", "[4]", 0, 16) "}", 8);
    expect_read_error(f->path, SES_INVALID_ARGUMENT, "exceed the file");
}

static void bad_json_is_refused(void **state) {
    fixture_t *f = *state;

    write_json(f->path, "{\"a\":{\"dtype\":\"F32\",,}}", 0);
    expect_read_error(f->path, SES_INVALID_ARGUMENT, "bad JSON");
    write_json(f->path, "[1,2]", 0);
    expect_read_error(f->path, SES_INVALID_ARGUMENT, "bad JSON");
    write_json(f->path, "{} x", 0);
    expect_read_error(f->path, SES_INVALID_ARGUMENT, "bad JSON");
    write_json(f->path, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4);
    expect_read_error(f->path, SES_INVALID_ARGUMENT, "shape entry 0");
    write_json(f->path, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4);
    expect_read_error(f->path, SES_INVALID_ARGUMENT, "data_offsets");
    write_json(f->path, "{\"a\":7}", 0);
    expect_read_error(f->path, SES_INVALID_ARGUMENT, "not a JSON object");
    write_json(f->path, "{\"__metadata__\":{\"step\":3}}", 0);
    expect_read_error(f->path, SES_INVALID_ARGUMENT, "metadata \"step\" is not a string");
}

static void overlapping_offsets_are_refused(void **state) {
    fixture_t *f = *state;

    write_json(f->path, "{" ENTRY("a", "F32", "[2]", 0, 8) "," ENTRY("b", "F32", "[2]", 4, 12) "}",
               12);
    expect_read_error(f->path, SES_INVALID_ARGUMENT, "overlap");
}

static void a_gap_between_tensors_is_refused(void **state) {
    fixture_t *f = *state;

    write_json(f->path,
               "{" ENTRY("a", "F32", "[2]", 0, 8) "," ENTRY("b", "F32", "[2]", 12, 20) "}", 20);
    expect_read_error(f->path, SES_INVALID_ARGUMENT, "belong to no tensor");
    /* Bytes after the last tensor are a gap too. */
    write_json(f->path, "{" ENTRY("a", "F32", "[2]", 0, 8) "}", 12);
    expect_read_error(f->path, SES_INVALID_ARGUMENT, "after the last tensor");
}

static void offsets_out_of_range_are_refused(void **state) {
    fixture_t *f = *state;

    write_json(f->path, "{" ENTRY("a", "U8", "[2]", 1000000, 1000002) "}", 2);
    expect_read_error(f->path, SES_INVALID_ARGUMENT, "exceed the file");
    write_json(f->path, "{" ENTRY("a", "U8", "[2]", 8, 6) "}", 2);
    expect_read_error(f->path, SES_INVALID_ARGUMENT, "end before they begin");
}

static void a_size_that_disagrees_with_the_shape_is_refused(void **state) {
    fixture_t *f = *state;

    write_json(f->path, "{" ENTRY("a", "F32", "[3]", 0, 8) "}", 8);
    expect_read_error(f->path, SES_INVALID_ARGUMENT, "hold 8 bytes, but F32[3] needs 12");
}

static void a_duplicate_name_is_refused(void **state) {
    fixture_t *f = *state;

    write_json(f->path, "{" ENTRY("a", "F32", "[1]", 0, 4) "," ENTRY("a", "F32", "[1]", 4, 8) "}",
               8);
    expect_read_error(f->path, SES_INVALID_ARGUMENT, "two tensors are named \"a\"");
}

static void an_unknown_dtype_is_refused(void **state) {
    fixture_t *f = *state;

    write_json(f->path, "{" ENTRY("a", "F8_E4M3", "[4]", 0, 4) "}", 4);
    expect_read_error(f->path, SES_INVALID_ARGUMENT, "unknown dtype \"F8_E4M3\"");
}

static void a_huge_header_length_is_refused_without_allocating_it(void **state) {
    fixture_t *f = *state;

    write_raw(f->path, UINT64_C(1) << 40, "{}", 0);
    expect_read_error(f->path, SES_INVALID_ARGUMENT, "100 MB");
    write_raw(f->path, UINT64_MAX, "{}", 0);
    expect_read_error(f->path, SES_INVALID_ARGUMENT, "100 MB");
}

static void a_rank_over_the_limit_is_refused(void **state) {
    fixture_t *f = *state;

    write_json(f->path, "{" ENTRY("a", "U8", "[1,1,1,1,1,1,1,1,1]", 0, 1) "}", 1);
    expect_read_error(f->path, SES_INVALID_ARGUMENT, "rank 9");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(every_dtype_scalars_empty_tensors_and_metadata_round_trip,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(the_file_layout_is_the_safetensors_layout, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_file_without_tensors_round_trips, setup, teardown),
        cmocka_unit_test_setup_teardown(a_file_from_another_writer_reads_in_data_order, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(writing_again_replaces_the_file_whole, setup, teardown),
        cmocka_unit_test_setup_teardown(a_write_into_a_missing_folder_fails_cleanly, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_failed_rename_leaves_no_temporary_file, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            bad_names_and_metadata_are_refused_before_anything_is_written, setup, teardown),
        cmocka_unit_test_setup_teardown(a_missing_file_is_not_found, setup, teardown),
        cmocka_unit_test_setup_teardown(a_truncated_header_length_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(a_truncated_header_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(truncated_data_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_json_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(overlapping_offsets_are_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(a_gap_between_tensors_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(offsets_out_of_range_are_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(a_size_that_disagrees_with_the_shape_is_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_duplicate_name_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(an_unknown_dtype_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(a_huge_header_length_is_refused_without_allocating_it,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(a_rank_over_the_limit_is_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
