/* Tensors: constructors, accessors, dtypes, bad inputs, wrapped memory and refcounting. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <session/session.h>

#include "tensor/tensor_internal.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

/* A sentinel that is not a valid tensor, to check that failures overwrite out-params. */
#define NOT_NULL_TENSOR ((ses_tensor_t *)(uintptr_t)0x1)

/* Counts deleter calls and remembers the arguments of the last one. */
typedef struct deleter_log {
    _Atomic int calls;
    void *last_data;
    void *last_user;
} deleter_log_t;

static void counting_deleter(void *data, void *user) {
    deleter_log_t *log = user;

    log->last_data = data;
    log->last_user = user;
    atomic_fetch_add(&log->calls, 1);
}

/* A deleter that frees the heap memory it is given and counts the call. */
static void freeing_deleter(void *data, void *user) {
    free(data);
    atomic_fetch_add(&((deleter_log_t *)user)->calls, 1);
}

static void assert_error_mentions(const char *needle) {
    if (!strstr(ses_last_error(), needle))
        fail_msg("expected \"%s\" in the message \"%s\"", needle, ses_last_error());
}

/* ---- dtypes ---- */

static void every_dtype_has_its_size_and_name(void **state) {
    static const struct {
        ses_dtype_t dtype;
        size_t size;
        const char *name;
    } expected[] = {
        {SES_F32, 4, "f32"},  {SES_F64, 8, "f64"}, {SES_F16, 2, "f16"}, {SES_BF16, 2, "bf16"},
        {SES_I8, 1, "i8"},    {SES_I16, 2, "i16"}, {SES_I32, 4, "i32"}, {SES_I64, 8, "i64"},
        {SES_U8, 1, "u8"},    {SES_U16, 2, "u16"}, {SES_U32, 4, "u32"}, {SES_U64, 8, "u64"},
        {SES_BOOL, 1, "bool"},
    };

    (void)state;
    assert_int_equal(sizeof expected / sizeof expected[0], 13);
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        assert_int_equal(ses_dtype_size(expected[i].dtype), expected[i].size);
        assert_string_equal(ses_dtype_name(expected[i].dtype), expected[i].name);
    }
}

static void invalid_and_unknown_dtypes_have_size_zero_and_name_invalid(void **state) {
    (void)state;
    assert_int_equal(ses_dtype_size(SES_DTYPE_INVALID), 0);
    assert_string_equal(ses_dtype_name(SES_DTYPE_INVALID), "invalid");
    assert_int_equal(ses_dtype_size((ses_dtype_t)14), 0);
    assert_string_equal(ses_dtype_name((ses_dtype_t)14), "invalid");
    assert_int_equal(ses_dtype_size((ses_dtype_t)-1), 0);
    assert_string_equal(ses_dtype_name((ses_dtype_t)-1), "invalid");
    assert_int_equal(ses_dtype_size((ses_dtype_t)1000000), 0);
}

/* ---- ses_tensor_create ---- */

static void create_makes_a_zero_filled_aligned_host_tensor(void **state) {
    const int64_t dims[] = {2, 3};
    ses_tensor_t *t = NOT_NULL_TENSOR;
    const unsigned char *bytes;

    (void)state;
    assert_int_equal(ses_tensor_create(SES_F32, 2, dims, &t), SES_OK);
    assert_non_null(t);
    assert_int_equal(ses_tensor_dtype(t), SES_F32);
    assert_int_equal(ses_tensor_rank(t), 2);
    assert_int_equal(ses_tensor_dims(t)[0], 2);
    assert_int_equal(ses_tensor_dims(t)[1], 3);
    assert_int_equal(ses_tensor_count(t), 6);
    assert_int_equal(ses_tensor_bytes(t), 24);
    assert_string_equal(ses_tensor_device(t), "cpu:0");
    assert_non_null(ses_tensor_data(t));
    assert_int_equal((uintptr_t)ses_tensor_data(t) % 64, 0);
    bytes = ses_tensor_data(t);
    for (size_t i = 0; i < 24; i++)
        assert_int_equal(bytes[i], 0);
    ses_tensor_release(t);
}

/* The tensor keeps its own copy of the dims: the caller's array may be reused right away. */
static void create_copies_the_dims(void **state) {
    int64_t dims[] = {4, 5, 6};
    ses_tensor_t *t = NULL;

    (void)state;
    assert_int_equal(ses_tensor_create(SES_I64, 3, dims, &t), SES_OK);
    dims[0] = 99;
    assert_int_equal(ses_tensor_dims(t)[0], 4);
    assert_int_equal(ses_tensor_count(t), 120);
    assert_int_equal(ses_tensor_bytes(t), 960);
    ses_tensor_release(t);
}

static void create_accepts_a_scalar_with_null_dims(void **state) {
    ses_tensor_t *t = NULL;

    (void)state;
    assert_int_equal(ses_tensor_create(SES_F64, 0, NULL, &t), SES_OK);
    assert_int_equal(ses_tensor_rank(t), 0);
    assert_non_null(ses_tensor_dims(t));
    assert_int_equal(ses_tensor_count(t), 1);
    assert_int_equal(ses_tensor_bytes(t), 8);
    assert_non_null(ses_tensor_data(t));
    assert_true(*(double *)ses_tensor_data(t) == 0.0);
    ses_tensor_release(t);
}

static void create_accepts_a_dimension_of_zero(void **state) {
    const int64_t dims[] = {3, 0, 7};
    ses_tensor_t *t = NULL;

    (void)state;
    assert_int_equal(ses_tensor_create(SES_F32, 3, dims, &t), SES_OK);
    assert_int_equal(ses_tensor_rank(t), 3);
    assert_int_equal(ses_tensor_dims(t)[1], 0);
    assert_int_equal(ses_tensor_count(t), 0);
    assert_int_equal(ses_tensor_bytes(t), 0);
    assert_string_equal(ses_tensor_device(t), "cpu:0");
    ses_tensor_release(t);
}

static void create_handles_the_largest_rank(void **state) {
    const int64_t dims[SES_MAX_RANK] = {1, 2, 1, 2, 1, 2, 1, 2};
    ses_tensor_t *t = NULL;

    (void)state;
    assert_int_equal(ses_tensor_create(SES_BOOL, SES_MAX_RANK, dims, &t), SES_OK);
    assert_int_equal(ses_tensor_rank(t), SES_MAX_RANK);
    assert_int_equal(ses_tensor_count(t), 16);
    assert_int_equal(ses_tensor_bytes(t), 16);
    ses_tensor_release(t);
}

static void create_rejects_a_null_out_pointer(void **state) {
    const int64_t dims[] = {2};

    (void)state;
    assert_int_equal(ses_tensor_create(SES_F32, 1, dims, NULL), SES_INVALID_ARGUMENT);
    assert_error_mentions("ses_tensor_create");
    assert_error_mentions("out_tensor");
}

static void create_rejects_the_invalid_dtype_and_names_it(void **state) {
    const int64_t dims[] = {2};
    ses_tensor_t *t = NOT_NULL_TENSOR;

    (void)state;
    assert_int_equal(ses_tensor_create(SES_DTYPE_INVALID, 1, dims, &t), SES_INVALID_ARGUMENT);
    assert_null(t);
    assert_error_mentions("ses_tensor_create");
    assert_error_mentions("dtype 0");
}

static void create_rejects_a_dtype_out_of_range_and_names_it(void **state) {
    const int64_t dims[] = {2};
    ses_tensor_t *t = NOT_NULL_TENSOR;

    (void)state;
    assert_int_equal(ses_tensor_create((ses_dtype_t)14, 1, dims, &t), SES_INVALID_ARGUMENT);
    assert_null(t);
    assert_error_mentions("ses_tensor_create");
    assert_error_mentions("dtype 14");

    t = NOT_NULL_TENSOR;
    assert_int_equal(ses_tensor_create((ses_dtype_t)-3, 1, dims, &t), SES_INVALID_ARGUMENT);
    assert_null(t);
    assert_error_mentions("dtype -3");
}

static void create_rejects_a_rank_above_the_maximum_and_names_it(void **state) {
    const int64_t dims[SES_MAX_RANK + 1] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    ses_tensor_t *t = NOT_NULL_TENSOR;

    (void)state;
    assert_int_equal(ses_tensor_create(SES_F32, SES_MAX_RANK + 1, dims, &t),
                     SES_INVALID_ARGUMENT);
    assert_null(t);
    assert_error_mentions("ses_tensor_create");
    assert_error_mentions("rank 9");
    assert_error_mentions("SES_MAX_RANK (8)");
}

static void create_rejects_a_negative_dimension_and_names_it(void **state) {
    const int64_t dims[] = {2, -5, 3};
    ses_tensor_t *t = NOT_NULL_TENSOR;

    (void)state;
    assert_int_equal(ses_tensor_create(SES_F32, 3, dims, &t), SES_INVALID_ARGUMENT);
    assert_null(t);
    assert_error_mentions("ses_tensor_create");
    assert_error_mentions("dimension 1");
    assert_error_mentions("[2,-5,3]");
    assert_error_mentions("(-5)");
}

static void create_rejects_null_dims_with_a_nonzero_rank(void **state) {
    ses_tensor_t *t = NOT_NULL_TENSOR;

    (void)state;
    assert_int_equal(ses_tensor_create(SES_F32, 2, NULL, &t), SES_INVALID_ARGUMENT);
    assert_null(t);
    assert_error_mentions("ses_tensor_create");
    assert_error_mentions("dims is NULL");
    assert_error_mentions("rank is 2");
}

/* 2^33 * 2^33 elements do not fit in 64 bits. */
static void create_rejects_dims_whose_product_overflows_and_names_them(void **state) {
    const int64_t dims[] = {INT64_C(1) << 33, INT64_C(1) << 33};
    ses_tensor_t *t = NOT_NULL_TENSOR;

    (void)state;
    assert_int_equal(ses_tensor_create(SES_U8, 2, dims, &t), SES_INVALID_ARGUMENT);
    assert_null(t);
    assert_error_mentions("ses_tensor_create");
    assert_error_mentions("u8[8589934592,8589934592]");
    assert_error_mentions("overflows");
}

/* 2^62 elements fit in 64 bits, but 2^62 * 8 bytes do not. */
static void create_rejects_a_byte_size_that_overflows_and_names_the_dims(void **state) {
    const int64_t dims[] = {INT64_C(1) << 62};
    ses_tensor_t *t = NOT_NULL_TENSOR;

    (void)state;
    assert_int_equal(ses_tensor_create(SES_F64, 1, dims, &t), SES_INVALID_ARGUMENT);
    assert_null(t);
    assert_error_mentions("f64[4611686018427387904]");
    assert_error_mentions("overflows");
}

/* Strides of an empty tensor still multiply the other dimensions, so they must fit too. */
static void create_rejects_an_empty_tensor_whose_other_dims_overflow(void **state) {
    const int64_t dims[] = {0, INT64_MAX, INT64_MAX};
    ses_tensor_t *t = NOT_NULL_TENSOR;

    (void)state;
    assert_int_equal(ses_tensor_create(SES_F32, 3, dims, &t), SES_INVALID_ARGUMENT);
    assert_null(t);
    assert_error_mentions("overflows");
}

/* ---- ses_tensor_create_from ---- */

static void create_from_copies_the_data(void **state) {
    const int64_t dims[] = {2, 2};
    int32_t values[] = {1, 2, 3, 4};
    ses_tensor_t *t = NOT_NULL_TENSOR;
    int32_t *data;

    (void)state;
    assert_int_equal(ses_tensor_create_from(SES_I32, 2, dims, values, sizeof values, &t), SES_OK);
    assert_int_equal(ses_tensor_dtype(t), SES_I32);
    assert_int_equal(ses_tensor_count(t), 4);
    assert_int_equal(ses_tensor_bytes(t), sizeof values);
    data = ses_tensor_data(t);
    assert_ptr_not_equal(data, values);
    assert_int_equal((uintptr_t)data % 64, 0);
    values[0] = 100;
    assert_int_equal(data[0], 1);
    assert_int_equal(data[3], 4);
    ses_tensor_release(t);
}

static void create_from_accepts_a_scalar(void **state) {
    const uint16_t value = 0x3c00; /* 1.0 in f16 */
    ses_tensor_t *t = NULL;

    (void)state;
    assert_int_equal(ses_tensor_create_from(SES_F16, 0, NULL, &value, 2, &t), SES_OK);
    assert_int_equal(ses_tensor_count(t), 1);
    assert_int_equal(*(uint16_t *)ses_tensor_data(t), 0x3c00);
    ses_tensor_release(t);
}

static void create_from_accepts_an_empty_tensor_with_null_data(void **state) {
    const int64_t dims[] = {0};
    ses_tensor_t *t = NULL;

    (void)state;
    assert_int_equal(ses_tensor_create_from(SES_F32, 1, dims, NULL, 0, &t), SES_OK);
    assert_int_equal(ses_tensor_count(t), 0);
    assert_int_equal(ses_tensor_bytes(t), 0);
    ses_tensor_release(t);
}

/* Both sizes must be in the message so the caller sees which side is wrong. */
static void create_from_rejects_a_byte_count_that_differs_and_names_both(void **state) {
    const int64_t dims[] = {2, 3};
    float values[5] = {0};
    ses_tensor_t *t = NOT_NULL_TENSOR;

    (void)state;
    assert_int_equal(ses_tensor_create_from(SES_F32, 2, dims, values, sizeof values, &t),
                     SES_INVALID_ARGUMENT);
    assert_null(t);
    assert_error_mentions("ses_tensor_create_from");
    assert_error_mentions("20 bytes");
    assert_error_mentions("f32[2,3] is 24 bytes");
}

static void create_from_rejects_null_data_with_a_nonzero_size(void **state) {
    const int64_t dims[] = {2};
    ses_tensor_t *t = NOT_NULL_TENSOR;

    (void)state;
    assert_int_equal(ses_tensor_create_from(SES_F32, 1, dims, NULL, 8, &t),
                     SES_INVALID_ARGUMENT);
    assert_null(t);
    assert_error_mentions("ses_tensor_create_from");
    assert_error_mentions("data is NULL");
}

static void create_from_rejects_bad_shapes_and_null_out_pointers(void **state) {
    const int64_t dims[] = {-1};
    float value = 0;
    ses_tensor_t *t = NOT_NULL_TENSOR;

    (void)state;
    assert_int_equal(ses_tensor_create_from(SES_F32, 1, dims, &value, 4, &t),
                     SES_INVALID_ARGUMENT);
    assert_null(t);
    assert_error_mentions("ses_tensor_create_from");
    assert_error_mentions("negative");

    t = NOT_NULL_TENSOR;
    assert_int_equal(ses_tensor_create_from(SES_BOOL, 9, dims, &value, 4, &t),
                     SES_INVALID_ARGUMENT);
    assert_null(t);
    assert_error_mentions("rank 9");

    t = NOT_NULL_TENSOR;
    assert_int_equal(ses_tensor_create_from(SES_DTYPE_INVALID, 0, NULL, &value, 4, &t),
                     SES_INVALID_ARGUMENT);
    assert_null(t);
    assert_error_mentions("dtype 0");

    assert_int_equal(ses_tensor_create_from(SES_F32, 0, NULL, &value, 4, NULL),
                     SES_INVALID_ARGUMENT);
    assert_error_mentions("out_tensor");
}

/* ---- ses_tensor_wrap ---- */

static void wrap_uses_the_callers_memory_without_copying(void **state) {
    const int64_t dims[] = {3};
    float values[3] = {1, 2, 3};
    ses_tensor_t *t = NOT_NULL_TENSOR;

    (void)state;
    assert_int_equal(ses_tensor_wrap(SES_F32, 1, dims, values, NULL, NULL, &t), SES_OK);
    assert_ptr_equal(ses_tensor_data(t), values);
    assert_int_equal(ses_tensor_count(t), 3);
    assert_int_equal(ses_tensor_bytes(t), 12);
    assert_string_equal(ses_tensor_device(t), "cpu:0");
    values[1] = 20;
    assert_true(((float *)ses_tensor_data(t))[1] == 20.0f);
    ses_tensor_release(t);
}

static void wrap_calls_the_deleter_once_when_the_last_reference_goes(void **state) {
    const int64_t dims[] = {2, 2};
    deleter_log_t log = {0};
    double *values = calloc(4, sizeof *values);
    ses_tensor_t *t = NULL;

    (void)state;
    assert_non_null(values);
    assert_int_equal(ses_tensor_wrap(SES_F64, 2, dims, values, counting_deleter, &log, &t),
                     SES_OK);
    assert_ptr_equal(ses_tensor_retain(t), t);
    ses_tensor_release(t);
    assert_int_equal(atomic_load(&log.calls), 0);
    ses_tensor_release(t);
    assert_int_equal(atomic_load(&log.calls), 1);
    assert_ptr_equal(log.last_data, values);
    assert_ptr_equal(log.last_user, &log);
    free(values);
}

static void wrap_calls_the_deleter_right_away_when_it_fails(void **state) {
    const int64_t negative[] = {-2};
    const int64_t dims[] = {2};
    deleter_log_t log = {0};
    float values[2];
    ses_tensor_t *t = NOT_NULL_TENSOR;

    (void)state;
    assert_int_equal(ses_tensor_wrap(SES_F32, 1, negative, values, counting_deleter, &log, &t),
                     SES_INVALID_ARGUMENT);
    assert_null(t);
    assert_int_equal(atomic_load(&log.calls), 1);
    assert_ptr_equal(log.last_data, values);
    assert_ptr_equal(log.last_user, &log);
    assert_error_mentions("ses_tensor_wrap");
    assert_error_mentions("negative");

    t = NOT_NULL_TENSOR;
    assert_int_equal(ses_tensor_wrap((ses_dtype_t)77, 1, dims, values, counting_deleter, &log,
                                     &t),
                     SES_INVALID_ARGUMENT);
    assert_null(t);
    assert_int_equal(atomic_load(&log.calls), 2);
    assert_error_mentions("dtype 77");

    assert_int_equal(ses_tensor_wrap(SES_F32, 1, dims, values, counting_deleter, &log, NULL),
                     SES_INVALID_ARGUMENT);
    assert_int_equal(atomic_load(&log.calls), 3);
    assert_error_mentions("out_tensor");

    t = NOT_NULL_TENSOR;
    assert_int_equal(ses_tensor_wrap(SES_F32, 1, dims, NULL, counting_deleter, &log, &t),
                     SES_INVALID_ARGUMENT);
    assert_null(t);
    assert_int_equal(atomic_load(&log.calls), 4);
    assert_error_mentions("data is NULL");
}

/* Under ASan a missed or doubled free of the heap block shows up as a leak or a double free. */
static void wrap_hands_heap_memory_to_the_deleter_exactly_once(void **state) {
    const int64_t dims[] = {16};
    deleter_log_t log = {0};
    ses_tensor_t *t = NULL;

    (void)state;
    assert_int_equal(ses_tensor_wrap(SES_U8, 1, dims, malloc(16), freeing_deleter, &log, &t),
                     SES_OK);
    ses_tensor_release(t);
    assert_int_equal(atomic_load(&log.calls), 1);

    assert_int_equal(ses_tensor_wrap(SES_U8, 9, dims, malloc(16), freeing_deleter, &log, &t),
                     SES_INVALID_ARGUMENT);
    assert_int_equal(atomic_load(&log.calls), 2);
}

static void wrap_accepts_a_scalar_and_an_empty_tensor(void **state) {
    const int64_t dims[] = {0, 4};
    int8_t value = -7;
    deleter_log_t log = {0};
    ses_tensor_t *t = NULL;

    (void)state;
    assert_int_equal(ses_tensor_wrap(SES_I8, 0, NULL, &value, counting_deleter, &log, &t),
                     SES_OK);
    assert_int_equal(ses_tensor_count(t), 1);
    assert_int_equal(*(int8_t *)ses_tensor_data(t), -7);
    ses_tensor_release(t);
    assert_int_equal(atomic_load(&log.calls), 1);

    assert_int_equal(ses_tensor_wrap(SES_I8, 2, dims, NULL, counting_deleter, &log, &t), SES_OK);
    assert_int_equal(ses_tensor_count(t), 0);
    assert_null(ses_tensor_data(t));
    ses_tensor_release(t);
    assert_int_equal(atomic_load(&log.calls), 2);
}

/* ---- refcounting ---- */

static void retain_and_release_accept_null(void **state) {
    (void)state;
    assert_null(ses_tensor_retain(NULL));
    ses_tensor_release(NULL);
}

#define REF_THREADS 8
#define REF_ROUNDS 20000

static void *retain_release_many_times(void *arg) {
    ses_tensor_t *t = arg;

    for (int i = 0; i < REF_ROUNDS; i++) {
        ses_tensor_retain(t);
        ses_tensor_retain(t);
        ses_tensor_release(t);
        ses_tensor_release(t);
    }
    /* Each thread was handed one reference and gives it back last; whichever thread is last
     * frees the tensor. */
    ses_tensor_release(t);
    return NULL;
}

static void references_from_many_threads_free_the_tensor_once(void **state) {
    const int64_t dims[] = {32};
    pthread_t threads[REF_THREADS];
    deleter_log_t log = {0};
    ses_tensor_t *t = NULL;

    (void)state;
    assert_int_equal(ses_tensor_wrap(SES_F32, 1, dims, malloc(128), freeing_deleter, &log, &t),
                     SES_OK);
    for (int i = 0; i < REF_THREADS; i++)
        ses_tensor_retain(t);
    for (int i = 0; i < REF_THREADS; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, retain_release_many_times, t), 0);
    ses_tensor_release(t);
    for (int i = 0; i < REF_THREADS; i++)
        pthread_join(threads[i], NULL);
    assert_int_equal(atomic_load(&log.calls), 1);
}

/* ---- accessors ---- */

static void accessors_tolerate_null(void **state) {
    (void)state;
    assert_int_equal(ses_tensor_dtype(NULL), SES_DTYPE_INVALID);
    assert_int_equal(ses_tensor_rank(NULL), 0);
    assert_null(ses_tensor_dims(NULL));
    assert_int_equal(ses_tensor_count(NULL), 0);
    assert_int_equal(ses_tensor_bytes(NULL), 0);
    assert_string_equal(ses_tensor_device(NULL), "");
    assert_null(ses_tensor_data(NULL));
}

/* ---- ses__tensor_check_shape ---- */

static void check_shape_computes_count_and_bytes(void **state) {
    const int64_t dims[] = {3, 4};
    size_t count = 0, bytes = 0;

    (void)state;
    assert_int_equal(ses__tensor_check_shape("here", SES_BF16, 2, dims, &count, &bytes), SES_OK);
    assert_int_equal(count, 12);
    assert_int_equal(bytes, 24);
    assert_int_equal(ses__tensor_check_shape("here", SES_U64, 0, NULL, &count, &bytes), SES_OK);
    assert_int_equal(count, 1);
    assert_int_equal(bytes, 8);
}

/* The graph's placeholders use the same checks; their messages must start with its name. */
static void check_shape_messages_start_with_the_callers_name(void **state) {
    const int64_t dims[] = {1, -1};
    size_t count = 7, bytes = 7;

    (void)state;
    assert_int_equal(ses__tensor_check_shape("Placeholder \"x\"", SES_F32, 2, dims, &count,
                                             &bytes),
                     SES_INVALID_ARGUMENT);
    assert_int_equal(count, 0);
    assert_int_equal(bytes, 0);
    assert_int_equal(strncmp(ses_last_error(), "Placeholder \"x\": ", 17), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_dtype_has_its_size_and_name),
        cmocka_unit_test(invalid_and_unknown_dtypes_have_size_zero_and_name_invalid),
        cmocka_unit_test(create_makes_a_zero_filled_aligned_host_tensor),
        cmocka_unit_test(create_copies_the_dims),
        cmocka_unit_test(create_accepts_a_scalar_with_null_dims),
        cmocka_unit_test(create_accepts_a_dimension_of_zero),
        cmocka_unit_test(create_handles_the_largest_rank),
        cmocka_unit_test(create_rejects_a_null_out_pointer),
        cmocka_unit_test(create_rejects_the_invalid_dtype_and_names_it),
        cmocka_unit_test(create_rejects_a_dtype_out_of_range_and_names_it),
        cmocka_unit_test(create_rejects_a_rank_above_the_maximum_and_names_it),
        cmocka_unit_test(create_rejects_a_negative_dimension_and_names_it),
        cmocka_unit_test(create_rejects_null_dims_with_a_nonzero_rank),
        cmocka_unit_test(create_rejects_dims_whose_product_overflows_and_names_them),
        cmocka_unit_test(create_rejects_a_byte_size_that_overflows_and_names_the_dims),
        cmocka_unit_test(create_rejects_an_empty_tensor_whose_other_dims_overflow),
        cmocka_unit_test(create_from_copies_the_data),
        cmocka_unit_test(create_from_accepts_a_scalar),
        cmocka_unit_test(create_from_accepts_an_empty_tensor_with_null_data),
        cmocka_unit_test(create_from_rejects_a_byte_count_that_differs_and_names_both),
        cmocka_unit_test(create_from_rejects_null_data_with_a_nonzero_size),
        cmocka_unit_test(create_from_rejects_bad_shapes_and_null_out_pointers),
        cmocka_unit_test(wrap_uses_the_callers_memory_without_copying),
        cmocka_unit_test(wrap_calls_the_deleter_once_when_the_last_reference_goes),
        cmocka_unit_test(wrap_calls_the_deleter_right_away_when_it_fails),
        cmocka_unit_test(wrap_hands_heap_memory_to_the_deleter_exactly_once),
        cmocka_unit_test(wrap_accepts_a_scalar_and_an_empty_tensor),
        cmocka_unit_test(retain_and_release_accept_null),
        cmocka_unit_test(references_from_many_threads_free_the_tensor_once),
        cmocka_unit_test(accessors_tolerate_null),
        cmocka_unit_test(check_shape_computes_count_and_bytes),
        cmocka_unit_test(check_shape_messages_start_with_the_callers_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
