/*
 * Device tensors and DLPack (issue #19). Host DLPack exchange and every refusal run everywhere;
 * the device checks run on the device DEVICE_TENSOR_DEVICE names (the meson tests: cuda:0 on the
 * CUDA emulator, opencl:0 on PoCL, fake_graphs:0 of tests/fakes) and skip without it: a value
 * fetched as a device tensor feeds a second plan on that device with no byte crossing between
 * host and device, a device tensor read on the host is copied and counted, device tensors of
 * another or a closed session are refused, and CUDA device tensors round-trip through kDLCUDA
 * (other devices' are refused).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <session/session.h>

#include "../../libsession/src/session/dlpack_abi.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

enum { ROWS = 4, COLS = 8, N = ROWS * COLS };

static const char *device; /* NULL: only the host checks run */

/* ---- DLPack producers of the tests' own ---------------------------------------------------- */

typedef struct owned {
    DLManagedTensor m;
    int64_t shape[2];
    int64_t strides[2];
    float storage[N + 4];
    int *deleted; /* counts deleter calls */
} owned_t;

static void owned_deleter(DLManagedTensor *m) {
    owned_t *o = m->manager_ctx;
    (*o->deleted)++;
    free(o);
}

/* A kDLCPU f32 [ROWS, COLS] tensor holding 0, 1, 2, ... starting @p offset floats in. */
static owned_t *owned_new(int *deleted, size_t offset) {
    owned_t *o = calloc(1, sizeof *o);

    assert_non_null(o);
    for (size_t i = 0; i < N; i++)
        o->storage[offset + i] = (float)i;
    o->shape[0] = ROWS;
    o->shape[1] = COLS;
    o->m.dl_tensor.data = o->storage;
    o->m.dl_tensor.byte_offset = offset * sizeof(float);
    o->m.dl_tensor.device.device_type = kDLCPU;
    o->m.dl_tensor.ndim = 2;
    o->m.dl_tensor.dtype.code = kDLFloat;
    o->m.dl_tensor.dtype.bits = 32;
    o->m.dl_tensor.dtype.lanes = 1;
    o->m.dl_tensor.shape = o->shape;
    o->m.manager_ctx = o;
    o->m.deleter = owned_deleter;
    o->deleted = deleted;
    return o;
}

static ses_tensor_t *host_values(float scale) {
    const int64_t dims[] = {ROWS, COLS};
    ses_tensor_t *t = NULL;
    float *v;

    assert_int_equal(ses_tensor_create(SES_F32, 2, dims, &t), SES_OK);
    v = ses_tensor_data(t);
    for (int i = 0; i < N; i++)
        v[i] = scale * (float)i;
    return t;
}

/* ---- host DLPack -------------------------------------------------------------------------- */

static void a_host_tensor_round_trips_through_dlpack_without_a_copy(void **state) {
    ses_tensor_t *t = host_values(1.0f), *back = NULL;
    DLManagedTensor *m = NULL;

    (void)state;
    assert_int_equal(ses_tensor_to_dlpack(t, &m), SES_OK);
    assert_int_equal(m->dl_tensor.device.device_type, kDLCPU);
    assert_ptr_equal(m->dl_tensor.data, ses_tensor_data(t));
    assert_int_equal(m->dl_tensor.ndim, 2);
    assert_int_equal(m->dl_tensor.shape[1], COLS);
    assert_null(m->dl_tensor.strides);
    assert_int_equal(m->dl_tensor.dtype.code, kDLFloat);
    assert_int_equal(m->dl_tensor.dtype.bits, 32);
    /* The export holds its own reference: the caller's may go first. */
    ses_tensor_release(t);
    assert_int_equal(ses_tensor_from_dlpack(m, &back), SES_OK);
    assert_ptr_equal(ses_tensor_data(back), m->dl_tensor.data);
    assert_string_equal(ses_tensor_device(back), "cpu:0");
    assert_int_equal(ses_tensor_is_device(back), 0);
    assert_float_equal(((float *)ses_tensor_data(back))[N - 1], (float)(N - 1), 0);
    ses_tensor_release(back); /* calls the export's deleter, which drops the last reference */
}

static void a_dlpack_import_honours_byte_offset_and_calls_the_deleter_once(void **state) {
    int deleted = 0;
    owned_t *o = owned_new(&deleted, 4);
    ses_tensor_t *t = NULL, *copy = NULL;

    (void)state;
    /* Compact strides, given explicitly, are accepted like NULL ones. */
    o->strides[0] = COLS;
    o->strides[1] = 1;
    o->m.dl_tensor.strides = o->strides;
    assert_int_equal(ses_tensor_from_dlpack(&o->m, &t), SES_OK);
    assert_ptr_equal(ses_tensor_data(t), &o->storage[4]);
    assert_int_equal(ses_tensor_copy_to_host(t, &copy), SES_OK);
    assert_true(ses_tensor_data(copy) != ses_tensor_data(t));
    assert_float_equal(((float *)ses_tensor_data(copy))[5], 5.0f, 0);
    ses_tensor_retain(t);
    ses_tensor_release(t);
    assert_int_equal(deleted, 0);
    ses_tensor_release(t);
    assert_int_equal(deleted, 1);
    ses_tensor_release(copy);
}

static void a_dlpack_import_refuses_strides_that_are_not_row_major(void **state) {
    int deleted = 0;
    owned_t *o = owned_new(&deleted, 0);
    ses_tensor_t *t = (ses_tensor_t *)0x1;

    (void)state;
    o->strides[0] = 1; /* a transposed view */
    o->strides[1] = ROWS;
    o->m.dl_tensor.strides = o->strides;
    assert_int_equal(ses_tensor_from_dlpack(&o->m, &t), SES_INVALID_ARGUMENT);
    assert_null(t);
    assert_non_null(strstr(ses_last_error(), "not compact row-major"));
    assert_non_null(strstr(ses_last_error(), "[1,4]"));
    assert_non_null(strstr(ses_last_error(), "[8,1]"));
    /* Refused: the caller still owns it, nothing was called. */
    assert_int_equal(deleted, 0);
    o->m.deleter(&o->m);
    assert_int_equal(deleted, 1);
}

static void dlpack_refuses_unsupported_dtypes_both_ways(void **state) {
    const int64_t dims[] = {2};
    int deleted = 0;
    owned_t *o = owned_new(&deleted, 0);
    ses_tensor_t *b = NULL, *t = NULL;
    DLManagedTensor *m = (DLManagedTensor *)0x1;

    (void)state;
    assert_int_equal(ses_tensor_create(SES_BOOL, 1, dims, &b), SES_OK);
    assert_int_equal(ses_tensor_to_dlpack(b, &m), SES_UNIMPLEMENTED);
    assert_null(m);
    assert_non_null(strstr(ses_last_error(), "bool"));
    ses_tensor_release(b);

    o->m.dl_tensor.dtype.code = kDLComplex;
    o->m.dl_tensor.dtype.bits = 64;
    assert_int_equal(ses_tensor_from_dlpack(&o->m, &t), SES_UNIMPLEMENTED);
    assert_non_null(strstr(ses_last_error(), "code 5, 64 bits"));
    o->m.dl_tensor.dtype.code = kDLFloat;
    o->m.dl_tensor.dtype.bits = 32;
    o->m.dl_tensor.dtype.lanes = 4;
    assert_int_equal(ses_tensor_from_dlpack(&o->m, &t), SES_UNIMPLEMENTED);
    assert_non_null(strstr(ses_last_error(), "4 lanes"));
    assert_null(t);
    o->m.deleter(&o->m);
}

static void dlpack_refuses_null_arguments_bad_shapes_and_other_devices(void **state) {
    int deleted = 0;
    owned_t *o = owned_new(&deleted, 0);
    ses_tensor_t *t = NULL;
    DLManagedTensor *m = NULL;

    (void)state;
    assert_int_equal(ses_tensor_from_dlpack(NULL, &t), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_tensor_from_dlpack(&o->m, NULL), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_tensor_to_dlpack(NULL, &m), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_session_tensor_from_dlpack(NULL, &o->m, &t), SES_INVALID_ARGUMENT);
    o->m.dl_tensor.device.device_type = kDLOpenCL;
    assert_int_equal(ses_tensor_from_dlpack(&o->m, &t), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "kDLOpenCL"));
    o->m.dl_tensor.device.device_type = kDLCUDA;
    assert_int_equal(ses_tensor_from_dlpack(&o->m, &t), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "ses_session_tensor_from_dlpack"));
    o->m.dl_tensor.device.device_type = kDLCPU;
    o->m.dl_tensor.ndim = 9;
    assert_int_equal(ses_tensor_from_dlpack(&o->m, &t), SES_INVALID_ARGUMENT);
    o->m.dl_tensor.ndim = 2;
    o->shape[0] = -1;
    assert_int_equal(ses_tensor_from_dlpack(&o->m, &t), SES_INVALID_ARGUMENT);
    o->shape[0] = ROWS;
    o->m.dl_tensor.byte_offset = 2; /* not a multiple of 4 */
    assert_int_equal(ses_tensor_from_dlpack(&o->m, &t), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "aligned"));
    o->m.dl_tensor.byte_offset = 0;
    o->m.dl_tensor.data = NULL;
    assert_int_equal(ses_tensor_from_dlpack(&o->m, &t), SES_INVALID_ARGUMENT);
    assert_null(t);
    assert_int_equal(deleted, 0);
    o->m.deleter(&o->m);
}

/* ---- device tensors ----------------------------------------------------------------------- */

typedef struct net {
    ses_graph_t *g;
    ses_edge_t x, y, z;
    ses_node_t *z_node;
} net_t;

/* y = x + x on the device; z = y * y (a second plan's work). */
static void build(net_t *n) {
    const int64_t dims[] = {ROWS, COLS};
    ses_edge_t in[2];

    memset(n, 0, sizeof *n);
    assert_int_equal(ses_graph_create(&n->g), SES_OK);
    assert_int_equal(ses_graph_placeholder(n->g, "x", SES_F32, 2, dims, &n->x), SES_OK);
    in[0] = in[1] = n->x;
    assert_int_equal(ses_graph_op(n->g, "Add", "y", in, 2, NULL, 0, &n->y), SES_OK);
    in[0] = in[1] = n->y;
    assert_int_equal(ses_graph_add_node(n->g, "Mul", "z", in, 2, NULL, 0, 1, &n->z_node),
                     SES_OK);
    n->z = ses_node_output(n->z_node, 0);
}

static ses_session_t *open_on_device(ses_graph_t *g) {
    ses_session_options_t options;
    ses_session_t *s = NULL;

    ses_session_options_init(&options);
    options.log_level = 0;
    if (ses_session_open(g, &device, 1, &options, &s) != SES_OK)
        fail_msg("open %s: %s", device, ses_last_error());
    return s;
}

static ses_tensor_t *fetch_y_on_device(ses_session_t *s, net_t *n, ses_plan_t **out_plan) {
    ses_eval_options_t options = {.struct_size = sizeof options, .device_fetches = 1};
    ses_tensor_t *x = host_values(1.0f), *y = NULL;
    ses_plan_t *plan = NULL;

    assert_int_equal(ses_session_compile(s, &n->y, 1, &n->x, 1, NULL, 0, &plan), SES_OK);
    assert_int_equal(ses_plan_run_ex(plan, &x, 1, &options, &y), SES_OK);
    ses_tensor_release(x);
    if (out_plan)
        *out_plan = plan;
    else
        ses_plan_destroy(plan);
    return y;
}

static void check_values(ses_tensor_t *t, float (*f)(int)) {
    ses_tensor_t *host = NULL;
    const float *v;

    assert_int_equal(ses_tensor_copy_to_host(t, &host), SES_OK);
    v = ses_tensor_data(host);
    for (int i = 0; i < N; i++)
        assert_float_equal(v[i], f(i), 1e-4);
    ses_tensor_release(host);
}

static float twice(int i) {
    return 2.0f * (float)i;
}

static float twice_squared(int i) {
    return 4.0f * (float)i * (float)i;
}

#define NEED_DEVICE()                                                    \
    do {                                                                 \
        if (!device)                                                     \
            skip(); /* DEVICE_TENSOR_DEVICE is not set or not here */    \
    } while (0)

static void a_fetched_device_tensor_feeds_a_second_plan_without_touching_the_host(void **state) {
    ses_eval_options_t options = {.struct_size = sizeof options, .device_fetches = 1};
    ses_transfer_stats_t first = {.struct_size = sizeof first};
    ses_transfer_stats_t second = {.struct_size = sizeof second};
    ses_plan_t *plan1 = NULL, *plan2 = NULL;
    ses_tensor_t *y, *z = NULL, *z2 = NULL;
    ses_session_t *s;
    net_t n;

    (void)state;
    NEED_DEVICE();
    build(&n);
    s = open_on_device(n.g);
    y = fetch_y_on_device(s, &n, &plan1);
    assert_int_equal(ses_tensor_is_device(y), 1);
    assert_string_equal(ses_tensor_device(y), device);
    assert_null(ses_tensor_data(y));
    assert_int_equal(ses_tensor_dtype(y), SES_F32);
    assert_int_equal(ses_tensor_rank(y), 2);
    assert_int_equal(ses_tensor_dims(y)[1], COLS);
    assert_int_equal(ses_tensor_bytes(y), N * sizeof(float));
    /* The first plan moved x in and copied y on the device, nothing out. */
    assert_int_equal(ses_plan_transfers(plan1, &first), SES_OK);
    assert_int_equal(first.h2d_copies, 1);
    assert_int_equal(first.d2h_copies, 0);
    assert_int_equal(first.d2d_copies, 1);

    /* The second plan reads y where it is and leaves z there: no byte crosses. */
    assert_int_equal(ses_session_compile(s, &n.z, 1, &n.y, 1, NULL, 0, &plan2), SES_OK);
    assert_int_equal(ses_plan_run_ex(plan2, &y, 1, &options, &z), SES_OK);
    assert_int_equal(ses_plan_run_ex(plan2, &y, 1, &options, &z2), SES_OK);
    assert_int_equal(ses_plan_transfers(plan2, &second), SES_OK);
    assert_int_equal(second.runs, 2);
    assert_int_equal(second.h2d_copies, 0);
    assert_int_equal(second.d2h_copies, 0);
    assert_int_equal(second.h2d_bytes + second.d2h_bytes, 0);
    assert_string_equal(ses_plan_node_device(plan2, n.z_node), device);
    assert_int_equal(ses_tensor_is_device(z), 1);
    check_values(y, twice);
    check_values(z, twice_squared);
    check_values(z2, twice_squared);
    ses_tensor_release(z);
    ses_tensor_release(z2);

    /* Without the option the same plan hands a host tensor back (one copy out). */
    assert_int_equal(ses_plan_run(plan2, &y, 1, &z), SES_OK);
    assert_int_equal(ses_tensor_is_device(z), 0);
    assert_float_equal(((float *)ses_tensor_data(z))[3], 36.0f, 1e-4);
    ses_tensor_release(z);
    ses_tensor_release(y);
    ses_session_destroy(s);
    ses_graph_release(n.g);
}

static void a_device_tensor_read_on_the_host_is_copied_and_counted(void **state) {
    ses_transfer_stats_t stats = {.struct_size = sizeof stats};
    ses_plan_t *plan = NULL;
    ses_tensor_t *y, *z = NULL;
    ses_session_t *s;
    net_t n;

    (void)state;
    NEED_DEVICE();
    build(&n);
    assert_int_equal(ses_node_set_device(n.z_node, "cpu:0"), SES_OK);
    s = open_on_device(n.g);
    y = fetch_y_on_device(s, &n, NULL);
    assert_int_equal(ses_session_compile(s, &n.z, 1, &n.y, 1, NULL, 0, &plan), SES_OK);
    assert_int_equal(ses_plan_run(plan, &y, 1, &z), SES_OK);
    assert_string_equal(ses_plan_node_device(plan, n.z_node), "cpu:0");
    assert_int_equal(ses_plan_transfers(plan, &stats), SES_OK);
    assert_int_equal(stats.d2h_copies, 1);
    assert_int_equal(stats.d2h_bytes, N * sizeof(float));
    assert_int_equal(stats.h2d_copies, 0);
    assert_float_equal(((float *)ses_tensor_data(z))[3], 36.0f, 1e-4);
    ses_tensor_release(z);
    ses_tensor_release(y);
    ses_session_destroy(s);
    ses_graph_release(n.g);
}

static void eval_with_device_fetches_gives_device_tensors_and_older_options_give_host_ones(
    void **state) {
    ses_eval_options_t options = {.struct_size = sizeof options, .device_fetches = 1};
    ses_eval_options_t old = {.struct_size = 2 * sizeof(uint32_t), .device_fetches = 1};
    ses_tensor_t *x, *y = NULL, *fed = NULL;
    ses_feed_t feed;
    ses_session_t *s;
    net_t n;

    (void)state;
    NEED_DEVICE();
    x = host_values(1.0f);
    build(&n);
    s = open_on_device(n.g);
    feed.edge = n.x;
    feed.value = x;
    assert_int_equal(ses_session_eval_ex(s, &n.y, 1, &feed, 1, NULL, 0, &options, &y), SES_OK);
    assert_int_equal(ses_tensor_is_device(y), 1);
    check_values(y, twice);
    /* A fed device tensor fetched is the value itself. */
    feed.edge = n.y;
    feed.value = y;
    assert_int_equal(ses_session_eval_ex(s, &n.y, 1, &feed, 1, NULL, 0, &options, &fed), SES_OK);
    assert_ptr_equal(fed, y);
    ses_tensor_release(fed);
    ses_tensor_release(y);
    feed.edge = n.x;
    feed.value = x;
    assert_int_equal(ses_session_eval_ex(s, &n.y, 1, &feed, 1, NULL, 0, &old, &y), SES_OK);
    assert_int_equal(ses_tensor_is_device(y), 0);
    ses_tensor_release(y);
    ses_tensor_release(x);
    ses_session_destroy(s);
    ses_graph_release(n.g);
}

static void device_tensors_of_another_or_a_closed_session_are_refused(void **state) {
    ses_eval_options_t private_run = {.struct_size = sizeof private_run, .private_scope = 1};
    ses_tensor_t *y, *z = NULL, *host = NULL;
    ses_session_t *s1, *s2;
    ses_plan_t *plan = NULL;
    DLManagedTensor *m = NULL;
    ses_feed_t feed;
    net_t n;

    (void)state;
    NEED_DEVICE();
    build(&n);
    s1 = open_on_device(n.g);
    s2 = open_on_device(n.g);
    y = fetch_y_on_device(s1, &n, NULL);
    feed.edge = n.y;
    feed.value = y;
    assert_int_equal(ses_session_eval(s2, &n.z, 1, &feed, 1, NULL, 0, &z), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "another session"));
    assert_non_null(strstr(ses_last_error(), device));
    assert_null(z);
    /* Neither a variable nor a constant may be a device tensor. */
    assert_int_equal(ses_scope_set(ses_session_scope(s1), "v", y), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "ses_tensor_copy_to_host"));
    assert_int_equal(ses_session_compile(s1, &n.z, 1, &n.y, 1, NULL, 0, &plan), SES_OK);
    assert_int_equal(ses_plan_run_ex(plan, &y, 1, &private_run, &z), SES_UNIMPLEMENTED);
    /* A plan of s2 that ran with s2's own device tensor refuses s1's at its next run: the
     * check is made at every run, not only when the plan compiles. */
    {
        ses_tensor_t *own = fetch_y_on_device(s2, &n, NULL), *out = NULL;
        ses_plan_t *p2 = NULL;
        assert_int_equal(ses_session_compile(s2, &n.z, 1, &n.y, 1, NULL, 0, &p2), SES_OK);
        assert_int_equal(ses_plan_run(p2, &own, 1, &out), SES_OK);
        ses_tensor_release(out);
        out = NULL;
        assert_int_equal(ses_plan_run(p2, &y, 1, &out), SES_INVALID_ARGUMENT);
        assert_non_null(strstr(ses_last_error(), "another session"));
        assert_null(out);
        ses_plan_destroy(p2);
        ses_tensor_release(own);
    }

    /* Closed: the memory is gone, every use says so, releasing still works. */
    ses_session_close(s1);
    assert_int_equal(ses_tensor_copy_to_host(y, &host), SES_FAILED_PRECONDITION);
    assert_non_null(strstr(ses_last_error(), "closed"));
    assert_null(host);
    assert_int_equal(ses_tensor_to_dlpack(y, &m), SES_FAILED_PRECONDITION);
    assert_null(m);
    assert_int_equal(ses_session_eval(s2, &n.z, 1, &feed, 1, NULL, 0, &z), SES_FAILED_PRECONDITION);
    assert_non_null(strstr(ses_last_error(), "closed"));
    assert_string_equal(ses_tensor_device(y), device);
    ses_session_destroy(s1); /* the tensor outlives its session object too */
    assert_int_equal(ses_tensor_copy_to_host(y, &host), SES_FAILED_PRECONDITION);
    ses_tensor_release(y);
    ses_session_destroy(s2);
    ses_graph_release(n.g);
}

static int import_deleted;

static void count_import_deleter(DLManagedTensor *m) {
    import_deleted++;
    m->deleter = NULL;
}

static void a_cuda_device_tensor_round_trips_through_dlpack_and_others_are_refused(void **state) {
    ses_eval_options_t options = {.struct_size = sizeof options, .device_fetches = 1};
    ses_transfer_stats_t stats = {.struct_size = sizeof stats};
    ses_tensor_t *y, *back = NULL, *z = NULL;
    DLManagedTensor *m = NULL, wrapper;
    ses_plan_t *plan = NULL;
    ses_session_t *s;
    net_t n;

    (void)state;
    NEED_DEVICE();
    build(&n);
    s = open_on_device(n.g);
    y = fetch_y_on_device(s, &n, NULL);
    if (strncmp(device, "cuda:", 5) != 0) {
        /* Only CUDA devices have a DLPack type: others refuse, naming the device. */
        assert_int_equal(ses_tensor_to_dlpack(y, &m), SES_UNIMPLEMENTED);
        assert_non_null(strstr(ses_last_error(), device));
        assert_null(m);
        ses_tensor_release(y);
        ses_session_destroy(s);
        ses_graph_release(n.g);
        return;
    }
    assert_int_equal(ses_tensor_to_dlpack(y, &m), SES_OK);
    assert_int_equal(m->dl_tensor.device.device_type, kDLCUDA);
    assert_int_equal(m->dl_tensor.device.device_id, atoi(device + 5));
    assert_non_null(m->dl_tensor.data);
    ses_tensor_release(y); /* the export keeps it */

    /* Another library's kDLCUDA tensor: the same memory, wrapped, fed in place. */
    wrapper = *m;
    wrapper.manager_ctx = NULL;
    wrapper.deleter = count_import_deleter;
    import_deleted = 0;
    assert_int_equal(ses_session_tensor_from_dlpack(s, &wrapper, &back), SES_OK);
    assert_int_equal(ses_tensor_is_device(back), 1);
    assert_string_equal(ses_tensor_device(back), device);
    assert_int_equal(ses_session_compile(s, &n.z, 1, &n.y, 1, NULL, 0, &plan), SES_OK);
    assert_int_equal(ses_plan_run_ex(plan, &back, 1, &options, &z), SES_OK);
    assert_int_equal(ses_plan_transfers(plan, &stats), SES_OK);
    assert_int_equal(stats.h2d_copies + stats.d2h_copies, 0);
    check_values(z, twice_squared);
    ses_tensor_release(z);
    ses_tensor_release(back);
    assert_int_equal(import_deleted, 1);

    /* A device the session was not opened with. */
    wrapper.deleter = count_import_deleter;
    wrapper.dl_tensor.device.device_id = 7;
    assert_int_equal(ses_session_tensor_from_dlpack(s, &wrapper, &back), SES_NOT_FOUND);
    assert_non_null(strstr(ses_last_error(), "cuda:7"));
    assert_null(back);
    assert_int_equal(import_deleted, 1);
    m->deleter(m);
    ses_session_destroy(s);
    ses_graph_release(n.g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_host_tensor_round_trips_through_dlpack_without_a_copy),
        cmocka_unit_test(a_dlpack_import_honours_byte_offset_and_calls_the_deleter_once),
        cmocka_unit_test(a_dlpack_import_refuses_strides_that_are_not_row_major),
        cmocka_unit_test(dlpack_refuses_unsupported_dtypes_both_ways),
        cmocka_unit_test(dlpack_refuses_null_arguments_bad_shapes_and_other_devices),
        cmocka_unit_test(a_fetched_device_tensor_feeds_a_second_plan_without_touching_the_host),
        cmocka_unit_test(a_device_tensor_read_on_the_host_is_copied_and_counted),
        cmocka_unit_test(
            eval_with_device_fetches_gives_device_tensors_and_older_options_give_host_ones),
        cmocka_unit_test(device_tensors_of_another_or_a_closed_session_are_refused),
        cmocka_unit_test(a_cuda_device_tensor_round_trips_through_dlpack_and_others_are_refused),
    };
    ses_registry_t *reg = NULL;
    const ses_device_t *d = NULL;

    device = getenv("DEVICE_TENSOR_DEVICE");
    if (device && (ses_registry_default(&reg) != SES_OK ||
                   ses_registry_find_device(reg, device, &d) != SES_OK)) {
        printf("device %s is not here (%s): only the host checks run\n", device, ses_last_error());
        device = NULL;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
