/*
 * The gradient ops (src/ops/grad_ops.c and the CPU driver's cpu_grad.c): for every op, graphs
 * built through the public API and evaluated on the CPU, whose inferred shapes and values are
 * checked against hand-computed ones (broadcasting, rank 0, zero size, negative axes, 1-D and
 * batched MatMulGrad, repeated Gather indices); how each op is lowered for kernels (which
 * inputs reach the kernel, the kernel op, the normalized attributes); and the errors, whose
 * messages name the node and both sides.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <session/session.h>

#include "ops/op_schema.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

/* ---- building graphs ------------------------------------------------------------------------- */

/* A tensor of @p rank dims @p dims holding @p values (count * element size bytes). */
static ses_tensor_t *tensor(ses_dtype_t dtype, size_t rank, const int64_t *dims,
                            const void *values) {
    ses_tensor_t *t = NULL;
    size_t count = 1;

    for (size_t d = 0; d < rank; d++)
        count *= (size_t)dims[d];
    if (ses_tensor_create_from(dtype, rank, dims, values, count * ses_dtype_size(dtype), &t) !=
        SES_OK)
        fail_msg("tensor: %s", ses_last_error());
    return t;
}

static ses_edge_t constant(ses_graph_t *g, ses_dtype_t dtype, size_t rank, const int64_t *dims,
                           const void *values) {
    ses_tensor_t *t = tensor(dtype, rank, dims, values);
    ses_edge_t e;

    if (ses_graph_constant(g, NULL, t, &e) != SES_OK)
        fail_msg("constant: %s", ses_last_error());
    ses_tensor_release(t);
    return e;
}

/* A constant of zeros: "like" inputs only give a shape and a dtype. */
static ses_edge_t zeros(ses_graph_t *g, ses_dtype_t dtype, size_t rank, const int64_t *dims) {
    size_t count = 1;

    for (size_t d = 0; d < rank; d++)
        count *= (size_t)dims[d];
    void *bytes = calloc(count ? count : 1, ses_dtype_size(dtype));
    assert_non_null(bytes);
    ses_edge_t e = constant(g, dtype, rank, dims, bytes);
    free(bytes);
    return e;
}

static ses_edge_t f32s(ses_graph_t *g, size_t rank, const int64_t *dims, const float *values) {
    return constant(g, SES_F32, rank, dims, values);
}

static ses_edge_t i64s(ses_graph_t *g, size_t n, const int64_t *values) {
    int64_t dims[1] = {(int64_t)n};
    return constant(g, SES_I64, 1, dims, values);
}

static ses_edge_t op(ses_graph_t *g, const char *type, const char *name, const ses_edge_t *in,
                     size_t n_in, const ses_attr_t *attrs, size_t n_attrs) {
    ses_edge_t out;

    if (ses_graph_op(g, type, name, in, n_in, attrs, n_attrs, &out) != SES_OK)
        fail_msg("%s \"%s\": %s", type, name, ses_last_error());
    return out;
}

/* Evaluates @p fetch on the CPU; the status, with *out the value (NULL on failure). */
static ses_status_t try_eval(ses_graph_t *g, ses_edge_t fetch, ses_tensor_t **out) {
    const char *devices[] = {"cpu"};
    ses_session_t *s = NULL;
    ses_status_t st;

    *out = NULL;
    st = ses_session_open(g, devices, 1, NULL, &s);
    if (st == SES_OK)
        st = ses_session_eval(s, &fetch, 1, NULL, 0, NULL, 0, out);
    ses_session_destroy(s);
    return st;
}

static ses_tensor_t *eval(ses_graph_t *g, ses_edge_t fetch) {
    ses_tensor_t *out = NULL;
    if (try_eval(g, fetch, &out) != SES_OK)
        fail_msg("eval: %s", ses_last_error());
    return out;
}

/* Evaluation fails with @p code and a message containing each of the NULL-terminated parts. */
static void expect_eval_error(ses_graph_t *g, ses_edge_t fetch, ses_status_t code, ...) {
    ses_tensor_t *out = (ses_tensor_t *)0x1;
    const char *part;
    va_list ap;

    assert_int_equal(try_eval(g, fetch, &out), code);
    assert_null(out);
    va_start(ap, code);
    while ((part = va_arg(ap, const char *)) != NULL)
        if (!strstr(ses_last_error(), part))
            fail_msg("the message lacks \"%s\": %s", part, ses_last_error());
    va_end(ap);
}

/* The value has @p dtype and shape @p dims[0..rank). */
static void expect_shape(ses_tensor_t *t, ses_dtype_t dtype, size_t rank, const int64_t *dims) {
    assert_non_null(t);
    assert_int_equal(ses_tensor_dtype(t), dtype);
    assert_int_equal(ses_tensor_rank(t), rank);
    for (size_t d = 0; d < rank; d++)
        if (ses_tensor_dims(t)[d] != dims[d])
            fail_msg("dim %zu is %lld, want %lld", d, (long long)ses_tensor_dims(t)[d],
                     (long long)dims[d]);
}

/* An f32 value of that shape with those elements (within @p tol), released afterwards. */
static void expect_f32(ses_tensor_t *t, size_t rank, const int64_t *dims, const float *want,
                       double tol) {
    expect_shape(t, SES_F32, rank, dims);
    const float *got = ses_tensor_data(t);
    for (size_t i = 0; i < ses_tensor_count(t); i++)
        if (!(fabs((double)got[i] - (double)want[i]) <= tol))
            fail_msg("element %zu is %.9g, want %.9g", i, (double)got[i], (double)want[i]);
    ses_tensor_release(t);
}

static void expect_f64(ses_tensor_t *t, size_t rank, const int64_t *dims, const double *want,
                       double tol) {
    expect_shape(t, SES_F64, rank, dims);
    const double *got = ses_tensor_data(t);
    for (size_t i = 0; i < ses_tensor_count(t); i++)
        if (!(fabs(got[i] - want[i]) <= tol))
            fail_msg("element %zu is %.17g, want %.17g", i, got[i], want[i]);
    ses_tensor_release(t);
}

/* Exact bytes: integer, bool and data movement results. */
static void expect_bytes(ses_tensor_t *t, ses_dtype_t dtype, size_t rank, const int64_t *dims,
                         const void *want) {
    expect_shape(t, dtype, rank, dims);
    assert_memory_equal(ses_tensor_data(t), want, ses_tensor_bytes(t));
    ses_tensor_release(t);
}

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define F32S(...) ((const float[]){__VA_ARGS__})

/* ---- lowering, through inference directly -------------------------------------------------- */

typedef struct lowered {
    ses__type_t in[SES__MAX_INPUTS];
    const void *values[SES__MAX_INPUTS];
    ses__attrs_t attrs;
    ses__infer_ctx_t ctx;
    char text[256];
} lowered_t;

static ses__type_t ty(ses_dtype_t dtype, int rank, ...) {
    ses__type_t t = {dtype, (uint32_t)rank, {0}};
    va_list ap;

    va_start(ap, rank);
    for (int d = 0; d < rank; d++)
        t.dims[d] = va_arg(ap, int);
    va_end(ap);
    return t;
}

static ses_status_t lower(lowered_t *r, const char *type, size_t n_inputs) {
    ses__attrs_clear(&r->ctx.kernel_attrs);
    r->ctx.node = "n";
    r->ctx.op = type;
    r->ctx.n_inputs = n_inputs;
    r->ctx.inputs = r->in;
    r->ctx.values = r->values;
    r->ctx.attrs = &r->attrs;
    r->ctx.n_outputs = 1;
    return ses__op_infer(ses__op_schema_find(type), &r->ctx);
}

static const char *out_type(lowered_t *r) {
    return ses__type_format(&r->ctx.outputs[0], r->text, sizeof r->text);
}

static const char *kernel_op(lowered_t *r) {
    return r->ctx.kernel_op ? r->ctx.kernel_op : r->ctx.op;
}

static const char *kernel_ints(lowered_t *r, const char *name) {
    const int64_t *v = NULL;
    size_t n = 0, used = 0;

    assert_int_equal(ses__attrs_get_ints(&r->ctx.kernel_attrs, name, &v, &n), 1);
    used += (size_t)snprintf(r->text, sizeof r->text, "[");
    for (size_t i = 0; i < n; i++)
        used += (size_t)snprintf(r->text + used, sizeof r->text - used, "%s%lld", i ? "," : "",
                                 (long long)v[i]);
    snprintf(r->text + used, sizeof r->text - used, "]");
    return r->text;
}

static int64_t kernel_int(lowered_t *r, const char *name) {
    int64_t v = -12345;
    assert_int_equal(ses__attrs_get_int(&r->ctx.kernel_attrs, name, &v), 1);
    return v;
}

static double kernel_float(lowered_t *r, const char *name) {
    double v = -12345;
    assert_int_equal(ses__attrs_get_float(&r->ctx.kernel_attrs, name, &v), 1);
    return v;
}

static void lowered_done(lowered_t *r) {
    ses__attrs_clear(&r->attrs);
    ses__attrs_clear(&r->ctx.kernel_attrs);
}

/* Like inputs never reach a kernel; the ...Like ops that reuse a kernel say which. */
static void like_inputs_are_left_out_and_reused_kernels_are_named(void **state) {
    lowered_t r;

    (void)state;
    memset(&r, 0, sizeof r);
    r.in[0] = ty(SES_F32, 1, 3);
    r.in[1] = ty(SES_I64, 2, 2, 3);
    assert_int_equal(lower(&r, "ExpandLike", 2), SES_OK);
    assert_string_equal(out_type(&r), "f32[2,3]");
    assert_string_equal(kernel_op(&r), "ExpandLike");
    assert_int_equal(r.ctx.kernel_inputs, 0x1);
    assert_int_equal(r.ctx.kernel_attrs.count, 0);

    r.in[0] = ty(SES_I32, 3, 4, 2, 3);
    assert_int_equal(lower(&r, "ReduceSumLike", 2), SES_OK);
    assert_string_equal(out_type(&r), "i32[2,3]");
    assert_int_equal(r.ctx.kernel_inputs, 0x1);

    r.in[0] = ty(SES_F32, 2, 2, 3);
    r.in[1] = ty(SES_BOOL, 3, 3, 1, 2);
    assert_int_equal(lower(&r, "ReshapeLike", 2), SES_OK);
    assert_string_equal(out_type(&r), "f32[3,1,2]");
    assert_string_equal(kernel_op(&r), "Reshape");
    assert_int_equal(r.ctx.kernel_inputs, 0x1);

    /* CastLike: Cast, whose "to" is the output's driver dtype code. */
    r.in[1] = ty(SES_I64, 0);
    assert_int_equal(lower(&r, "CastLike", 2), SES_OK);
    assert_string_equal(out_type(&r), "i64[2,3]");
    assert_string_equal(kernel_op(&r), "Cast");
    assert_int_equal(r.ctx.kernel_inputs, 0x1);
    assert_int_equal(kernel_int(&r, "to"), SES_I64);

    /* ScalarLike's kernel does get like, to be found by its dtype. */
    assert_int_equal(ses__attrs_set_float(&r.attrs, "value", 2.5), SES_OK);
    r.in[0] = ty(SES_U16, 2, 7, 7);
    assert_int_equal(lower(&r, "ScalarLike", 1), SES_OK);
    assert_string_equal(out_type(&r), "u16[]");
    assert_int_equal(r.ctx.kernel_inputs, 0x1);
    assert_true(kernel_float(&r, "value") == 2.5);
    lowered_done(&r);

    /* GatherGrad: dy and the indices, not like. */
    memset(&r, 0, sizeof r);
    r.in[0] = ty(SES_F32, 2, 3, 4);
    r.in[1] = ty(SES_I32, 1, 3);
    r.in[2] = ty(SES_F32, 2, 5, 4);
    assert_int_equal(ses__attrs_set_int(&r.attrs, "axis", -2), SES_OK);
    assert_int_equal(lower(&r, "GatherGrad", 3), SES_OK);
    assert_string_equal(out_type(&r), "f32[5,4]");
    assert_int_equal(r.ctx.kernel_inputs, 0x3);
    assert_int_equal(kernel_int(&r, "axis"), 0);
    lowered_done(&r);
}

/* Axes come out non-negative and sorted, with the scale of a mean; Slice's normalization gives
 * one start and step per dimension; ConcatGrad becomes a Slice of dy. */
static void gradient_ops_lower_to_normalized_attributes(void **state) {
    static const int64_t axes[] = {2, -3};
    static const int64_t starts[] = {-1}, ends[] = {-100}, slice_axes[] = {-1}, steps[] = {-2};
    lowered_t r;

    (void)state;
    memset(&r, 0, sizeof r);
    r.in[0] = ty(SES_F64, 1, 4);
    r.in[1] = ty(SES_F64, 3, 2, 4, 5);
    assert_int_equal(ses__attrs_set_ints(&r.attrs, "axes", axes, 2), SES_OK);
    assert_int_equal(ses__attrs_set_int(&r.attrs, "keepdims", 0), SES_OK);
    assert_int_equal(ses__attrs_set_int(&r.attrs, "mean", 1), SES_OK);
    assert_int_equal(lower(&r, "ReduceGrad", 2), SES_OK);
    assert_string_equal(out_type(&r), "f64[2,4,5]");
    assert_int_equal(r.ctx.kernel_inputs, 0x1);
    assert_string_equal(kernel_ints(&r, "axes"), "[0,2]");
    assert_true(fabs(kernel_float(&r, "scale") - 0.1) < 1e-15);
    lowered_done(&r);

    /* A no-op reduction (noop_with_empty_axes) leaves no axes and a scale of 1. */
    memset(&r, 0, sizeof r);
    r.in[0] = ty(SES_F32, 2, 2, 3);
    r.in[1] = ty(SES_F32, 2, 2, 3);
    assert_int_equal(ses__attrs_set_int(&r.attrs, "noop_with_empty_axes", 1), SES_OK);
    assert_int_equal(lower(&r, "ReduceGrad", 2), SES_OK);
    assert_string_equal(kernel_ints(&r, "axes"), "[]");
    assert_true(kernel_float(&r, "scale") == 1.0);
    lowered_done(&r);

    memset(&r, 0, sizeof r);
    r.in[0] = ty(SES_F32, 2, 2, 3);
    r.in[1] = ty(SES_F32, 2, 2, 6);
    r.in[2] = ty(SES_I64, 1, 1);
    r.values[2] = starts;
    r.in[3] = ty(SES_I64, 1, 1);
    r.values[3] = ends;
    r.in[4] = ty(SES_I64, 1, 1);
    r.values[4] = slice_axes;
    r.in[5] = ty(SES_I64, 1, 1);
    r.values[5] = steps;
    assert_int_equal(lower(&r, "SliceGrad", 6), SES_OK);
    assert_string_equal(out_type(&r), "f32[2,6]");
    assert_int_equal(r.ctx.kernel_inputs, 0x1);
    assert_string_equal(kernel_op(&r), "SliceGrad");
    assert_string_equal(kernel_ints(&r, "starts"), "[0,5]");
    assert_string_equal(kernel_ints(&r, "steps"), "[1,-2]");
    lowered_done(&r);

    memset(&r, 0, sizeof r);
    r.in[0] = ty(SES_F32, 2, 2, 6);
    r.in[1] = ty(SES_F32, 2, 2, 1);
    r.in[2] = ty(SES_F32, 2, 2, 3);
    r.in[3] = ty(SES_F32, 2, 2, 2);
    assert_int_equal(ses__attrs_set_int(&r.attrs, "axis", -1), SES_OK);
    assert_int_equal(ses__attrs_set_int(&r.attrs, "index", 2), SES_OK);
    assert_int_equal(lower(&r, "ConcatGrad", 4), SES_OK);
    assert_string_equal(out_type(&r), "f32[2,2]");
    assert_string_equal(kernel_op(&r), "Slice");
    assert_int_equal(r.ctx.kernel_inputs, 0x1);
    assert_string_equal(kernel_ints(&r, "starts"), "[0,4]");
    assert_string_equal(kernel_ints(&r, "steps"), "[1,1]");
    lowered_done(&r);

    /* Softmax's axis rule; MatMulGrad passes all three; LeakyReluGrad always gets alpha. */
    memset(&r, 0, sizeof r);
    r.in[0] = ty(SES_F32, 3, 2, 3, 4);
    r.in[1] = ty(SES_F32, 3, 2, 3, 4);
    assert_int_equal(lower(&r, "LogSoftmaxGrad", 2), SES_OK);
    assert_int_equal(kernel_int(&r, "axis"), 2);
    assert_int_equal(lower(&r, "LeakyReluGrad", 2), SES_OK);
    assert_true(kernel_float(&r, "alpha") == 0.01);
    r.in[0] = ty(SES_F32, 1, 4);
    r.in[1] = ty(SES_F32, 1, 3);
    r.in[2] = ty(SES_F32, 2, 3, 4);
    assert_int_equal(ses__attrs_set_int(&r.attrs, "input", 1), SES_OK);
    assert_int_equal(lower(&r, "MatMulGrad", 3), SES_OK);
    assert_string_equal(out_type(&r), "f32[3,4]");
    assert_true(r.ctx.kernel_inputs == 0 || r.ctx.kernel_inputs == 0x7);
    assert_int_equal(kernel_int(&r, "input"), 1);
    lowered_done(&r);
}

/* ---- the ...Like ops ------------------------------------------------------------------------ */

static void expand_like_broadcasts_x_to_the_shape_of_like(void **state) {
    ses_graph_t *g = NULL;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    ses_edge_t row = f32s(g, 1, DIMS(3), F32S(1, 2, 3));
    ses_edge_t col = f32s(g, 2, DIMS(2, 1), F32S(10, 20));
    ses_edge_t one = f32s(g, 0, NULL, F32S(7));
    ses_edge_t like23 = zeros(g, SES_I64, 2, DIMS(2, 3));
    ses_edge_t a = op(g, "ExpandLike", "a", (ses_edge_t[]){row, like23}, 2, NULL, 0);
    ses_edge_t b = op(g, "ExpandLike", "b", (ses_edge_t[]){col, like23}, 2, NULL, 0);
    ses_edge_t c =
        op(g, "ExpandLike", "c", (ses_edge_t[]){one, zeros(g, SES_F32, 2, DIMS(2, 2))}, 2, NULL, 0);
    ses_edge_t d =
        op(g, "ExpandLike", "d", (ses_edge_t[]){row, zeros(g, SES_F32, 2, DIMS(0, 3))}, 2, NULL, 0);
    ses_edge_t e =
        op(g, "ExpandLike", "e", (ses_edge_t[]){one, zeros(g, SES_F32, 0, NULL)}, 2, NULL, 0);

    expect_f32(eval(g, a), 2, DIMS(2, 3), F32S(1, 2, 3, 1, 2, 3), 0);
    expect_f32(eval(g, b), 2, DIMS(2, 3), F32S(10, 10, 10, 20, 20, 20), 0);
    expect_f32(eval(g, c), 2, DIMS(2, 2), F32S(7, 7, 7, 7), 0);
    expect_f32(eval(g, d), 2, DIMS(0, 3), NULL, 0);
    expect_f32(eval(g, e), 0, NULL, F32S(7), 0);

    /* Any dtype: a copy. */
    const int16_t halves[] = {-1, 5};
    ses_edge_t h = op(g, "ExpandLike", "h",
                      (ses_edge_t[]){constant(g, SES_I16, 2, DIMS(1, 2), halves),
                                     zeros(g, SES_F32, 3, DIMS(2, 2, 2))},
                      2, NULL, 0);
    const int16_t want[] = {-1, 5, -1, 5, -1, 5, -1, 5};
    expect_bytes(eval(g, h), SES_I16, 3, DIMS(2, 2, 2), want);

    /* One way only: like cannot be what stretches. */
    ses_edge_t bad =
        op(g, "ExpandLike", "bad", (ses_edge_t[]){col, zeros(g, SES_F32, 1, DIMS(3))}, 2, NULL, 0);
    expect_eval_error(g, bad, SES_INVALID_ARGUMENT,
                      "ExpandLike \"bad\": x cannot broadcast to like's shape: x is f32[2,1], "
                      "like is f32[3]",
                      NULL);
    ses_graph_release(g);
}

static void reduce_sum_like_sums_over_the_broadcast_dimensions(void **state) {
    ses_graph_t *g = NULL;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    ses_edge_t x = f32s(g, 2, DIMS(2, 3), F32S(1, 2, 3, 4, 5, 6));
    ses_edge_t cols = op(g, "ReduceSumLike", "cols",
                         (ses_edge_t[]){x, zeros(g, SES_F32, 1, DIMS(3))}, 2, NULL, 0);
    ses_edge_t rows = op(g, "ReduceSumLike", "rows",
                         (ses_edge_t[]){x, zeros(g, SES_F64, 2, DIMS(2, 1))}, 2, NULL, 0);
    ses_edge_t all =
        op(g, "ReduceSumLike", "all", (ses_edge_t[]){x, zeros(g, SES_F32, 0, NULL)}, 2, NULL, 0);
    ses_edge_t same = op(g, "ReduceSumLike", "same",
                         (ses_edge_t[]){x, zeros(g, SES_F32, 2, DIMS(2, 3))}, 2, NULL, 0);
    ses_edge_t lead = op(g, "ReduceSumLike", "lead",
                         (ses_edge_t[]){x, zeros(g, SES_F32, 2, DIMS(1, 1))}, 2, NULL, 0);
    expect_f32(eval(g, cols), 1, DIMS(3), F32S(5, 7, 9), 0);
    expect_f32(eval(g, rows), 2, DIMS(2, 1), F32S(6, 15), 0);
    expect_f32(eval(g, all), 0, NULL, F32S(21), 0);
    expect_f32(eval(g, same), 2, DIMS(2, 3), F32S(1, 2, 3, 4, 5, 6), 0);
    expect_f32(eval(g, lead), 2, DIMS(1, 1), F32S(21), 0);

    /* A 3-D bias gradient in i32, and sums over an empty dimension. */
    const int32_t ints[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    ses_edge_t i = op(g, "ReduceSumLike", "i",
                      (ses_edge_t[]){constant(g, SES_I32, 3, DIMS(2, 3, 2), ints),
                                     zeros(g, SES_I32, 2, DIMS(3, 1))},
                      2, NULL, 0);
    const int32_t isum[] = {1 + 2 + 7 + 8, 3 + 4 + 9 + 10, 5 + 6 + 11 + 12};
    expect_bytes(eval(g, i), SES_I32, 2, DIMS(3, 1), isum);
    ses_edge_t empty =
        op(g, "ReduceSumLike", "empty",
           (ses_edge_t[]){zeros(g, SES_F32, 2, DIMS(0, 3)), zeros(g, SES_F32, 1, DIMS(3))}, 2, NULL,
           0);
    expect_f32(eval(g, empty), 1, DIMS(3), F32S(0, 0, 0), 0);

    ses_edge_t bad =
        op(g, "ReduceSumLike", "bad", (ses_edge_t[]){x, zeros(g, SES_F32, 1, DIMS(2))}, 2, NULL, 0);
    expect_eval_error(g, bad, SES_INVALID_ARGUMENT,
                      "ReduceSumLike \"bad\": like's shape does not broadcast to x's",
                      "x is f32[2,3]", "like is f32[2]", NULL);
    ses_edge_t text =
        op(g, "ReduceSumLike", "text",
           (ses_edge_t[]){zeros(g, SES_U8, 1, DIMS(2)), zeros(g, SES_U8, 0, NULL)}, 2, NULL, 0);
    expect_eval_error(g, text, SES_INVALID_ARGUMENT, "ReduceSumLike \"text\": input 0 (x) is u8[2]",
                      NULL);
    ses_graph_release(g);
}

static void scalar_like_gives_a_scalar_of_the_dtype_of_like(void **state) {
    ses_graph_t *g = NULL;
    ses_attr_t half = ses_attr_float("value", 2.5), zero = ses_attr_float("value", 0.0);

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    ses_edge_t f =
        op(g, "ScalarLike", "f", (ses_edge_t[]){zeros(g, SES_F32, 2, DIMS(2, 3))}, 1, &half, 1);
    ses_edge_t d =
        op(g, "ScalarLike", "d", (ses_edge_t[]){zeros(g, SES_F64, 1, DIMS(0))}, 1, &half, 1);
    ses_edge_t i =
        op(g, "ScalarLike", "i", (ses_edge_t[]){zeros(g, SES_I64, 0, NULL)}, 1, &half, 1);
    ses_edge_t b =
        op(g, "ScalarLike", "b", (ses_edge_t[]){zeros(g, SES_BOOL, 1, DIMS(4))}, 1, &half, 1);
    ses_edge_t bz =
        op(g, "ScalarLike", "bz", (ses_edge_t[]){zeros(g, SES_BOOL, 1, DIMS(4))}, 1, &zero, 1);
    ses_edge_t h =
        op(g, "ScalarLike", "h", (ses_edge_t[]){zeros(g, SES_F16, 1, DIMS(2))}, 1, &half, 1);
    expect_f32(eval(g, f), 0, NULL, F32S(2.5f), 0);
    expect_f64(eval(g, d), 0, NULL, (const double[]){2.5}, 0);
    expect_bytes(eval(g, i), SES_I64, 0, NULL, (const int64_t[]){2});
    expect_bytes(eval(g, b), SES_BOOL, 0, NULL, (const uint8_t[]){1});
    expect_bytes(eval(g, bz), SES_BOOL, 0, NULL, (const uint8_t[]){0});
    expect_bytes(eval(g, h), SES_F16, 0, NULL, (const uint16_t[]){0x4100}); /* 2.5 in f16 */

    ses_edge_t none =
        op(g, "ScalarLike", "none", (ses_edge_t[]){zeros(g, SES_F32, 0, NULL)}, 1, NULL, 0);
    expect_eval_error(g, none, SES_INVALID_ARGUMENT,
                      "ScalarLike \"none\": attribute value is required", NULL);
    ses_attr_t as_int = ses_attr_int("value", 1);
    ses_edge_t typed =
        op(g, "ScalarLike", "typed", (ses_edge_t[]){zeros(g, SES_F32, 0, NULL)}, 1, &as_int, 1);
    expect_eval_error(g, typed, SES_INVALID_ARGUMENT,
                      "ScalarLike \"typed\": attribute value must be of type float", NULL);
    ses_graph_release(g);
}

static void reshape_like_and_cast_like_take_the_shape_or_dtype_of_like(void **state) {
    ses_graph_t *g = NULL;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    ses_edge_t x = f32s(g, 2, DIMS(2, 3), F32S(1.5f, -2.75f, 0, 3, 255.5f, -0.5f));
    ses_edge_t r = op(g, "ReshapeLike", "r",
                      (ses_edge_t[]){x, zeros(g, SES_BOOL, 3, DIMS(3, 1, 2))}, 2, NULL, 0);
    expect_f32(eval(g, r), 3, DIMS(3, 1, 2), F32S(1.5f, -2.75f, 0, 3, 255.5f, -0.5f), 0);
    ses_edge_t scalar =
        op(g, "ReshapeLike", "scalar",
           (ses_edge_t[]){f32s(g, 1, DIMS(1), F32S(4)), zeros(g, SES_F32, 0, NULL)}, 2, NULL, 0);
    expect_f32(eval(g, scalar), 0, NULL, F32S(4), 0);

    /* Cast semantics: toward zero, and bools 0 or 1; the shape stays x's. */
    ses_edge_t i =
        op(g, "CastLike", "i", (ses_edge_t[]){x, zeros(g, SES_I32, 1, DIMS(9))}, 2, NULL, 0);
    expect_bytes(eval(g, i), SES_I32, 2, DIMS(2, 3), (const int32_t[]){1, -2, 0, 3, 255, 0});
    ses_edge_t b =
        op(g, "CastLike", "b", (ses_edge_t[]){x, zeros(g, SES_BOOL, 0, NULL)}, 2, NULL, 0);
    expect_bytes(eval(g, b), SES_BOOL, 2, DIMS(2, 3), (const uint8_t[]){1, 1, 0, 1, 1, 1});
    ses_edge_t empty =
        op(g, "CastLike", "empty",
           (ses_edge_t[]){zeros(g, SES_I64, 1, DIMS(0)), zeros(g, SES_F64, 0, NULL)}, 2, NULL, 0);
    ses_tensor_t *cast_empty = eval(g, empty);
    expect_shape(cast_empty, SES_F64, 1, DIMS(0));
    ses_tensor_release(cast_empty);

    ses_edge_t bad = op(g, "ReshapeLike", "bad",
                        (ses_edge_t[]){x, zeros(g, SES_F32, 2, DIMS(4, 2))}, 2, NULL, 0);
    expect_eval_error(g, bad, SES_INVALID_ARGUMENT,
                      "ReshapeLike \"bad\": element counts differ: x is f32[2,3] (6 elements), "
                      "like is f32[4,2] (8 elements)",
                      NULL);
    ses_edge_t half =
        op(g, "CastLike", "half", (ses_edge_t[]){x, zeros(g, SES_F16, 0, NULL)}, 2, NULL, 0);
    /* Every dtype: f16 bits of the exact values, and i8 saturating (255.5 gives 127). */
    expect_bytes(eval(g, half), SES_F16, 2, DIMS(2, 3),
                 (const uint16_t[]){0x3E00, 0xC180, 0x0000, 0x4200, 0x5BFC, 0xB800});
    ses_edge_t byte =
        op(g, "CastLike", "byte", (ses_edge_t[]){x, zeros(g, SES_I8, 0, NULL)}, 2, NULL, 0);
    expect_bytes(eval(g, byte), SES_I8, 2, DIMS(2, 3), (const int8_t[]){1, -2, 0, 3, 127, 0});
    ses_graph_release(g);
}

/* ---- activations ---------------------------------------------------------------------------- */

static void activation_gradients_follow_their_formulas(void **state) {
    ses_graph_t *g = NULL;
    ses_attr_t alpha = ses_attr_float("alpha", 0.5);

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    ses_edge_t dy = f32s(g, 2, DIMS(2, 2), F32S(1, 2, 3, 4));
    ses_edge_t x = f32s(g, 2, DIMS(2, 2), F32S(-1, 0, 0.5f, 3));
    ses_edge_t y = f32s(g, 2, DIMS(2, 2), F32S(0.5f, 0.25f, -0.5f, 1));
    ses_edge_t relu = op(g, "ReluGrad", "relu", (ses_edge_t[]){dy, x}, 2, NULL, 0);
    ses_edge_t leaky = op(g, "LeakyReluGrad", "leaky", (ses_edge_t[]){dy, x}, 2, NULL, 0);
    ses_edge_t leaky5 = op(g, "LeakyReluGrad", "leaky5", (ses_edge_t[]){dy, x}, 2, &alpha, 1);
    ses_edge_t sig = op(g, "SigmoidGrad", "sig", (ses_edge_t[]){dy, y}, 2, NULL, 0);
    ses_edge_t tanh_g = op(g, "TanhGrad", "tanh", (ses_edge_t[]){dy, y}, 2, NULL, 0);

    expect_f32(eval(g, relu), 2, DIMS(2, 2), F32S(0, 0, 3, 4), 0);
    expect_f32(eval(g, leaky), 2, DIMS(2, 2), F32S(0.01f, 0.02f, 3, 4), 1e-7);
    expect_f32(eval(g, leaky5), 2, DIMS(2, 2), F32S(0.5f, 1, 3, 4), 0);
    /* dy * y * (1 - y) and dy * (1 - y^2). */
    expect_f32(eval(g, sig), 2, DIMS(2, 2), F32S(0.25f, 0.375f, -2.25f, 0), 1e-7);
    expect_f32(eval(g, tanh_g), 2, DIMS(2, 2), F32S(0.75f, 1.875f, 2.25f, 0), 1e-7);

    /* f64, rank 0 and zero size. */
    const double d1 = 3, x1 = 2;
    ses_edge_t r0 =
        op(g, "ReluGrad", "r0",
           (ses_edge_t[]){constant(g, SES_F64, 0, NULL, &d1), constant(g, SES_F64, 0, NULL, &x1)},
           2, NULL, 0);
    expect_f64(eval(g, r0), 0, NULL, (const double[]){3}, 0);
    ses_edge_t t0 =
        op(g, "TanhGrad", "t0",
           (ses_edge_t[]){zeros(g, SES_F32, 2, DIMS(3, 0)), zeros(g, SES_F32, 2, DIMS(3, 0))}, 2,
           NULL, 0);
    expect_f32(eval(g, t0), 2, DIMS(3, 0), NULL, 0);

    ses_edge_t shapes = op(g, "ReluGrad", "shapes",
                           (ses_edge_t[]){dy, f32s(g, 1, DIMS(4), F32S(1, 2, 3, 4))}, 2, NULL, 0);
    expect_eval_error(g, shapes, SES_INVALID_ARGUMENT,
                      "ReluGrad \"shapes\": shapes differ: dy is f32[2,2], x is f32[4]", NULL);
    ses_edge_t dtypes = op(g, "SigmoidGrad", "dtypes",
                           (ses_edge_t[]){dy, zeros(g, SES_F64, 2, DIMS(2, 2))}, 2, NULL, 0);
    expect_eval_error(g, dtypes, SES_INVALID_ARGUMENT,
                      "SigmoidGrad \"dtypes\": dtypes differ: dy is f32[2,2], y is f64[2,2]", NULL);
    ses_graph_release(g);
}

static void softmax_gradients_sum_along_the_axis(void **state) {
    ses_graph_t *g = NULL;
    ses_attr_t axis0 = ses_attr_int("axis", 0), axis_m2 = ses_attr_int("axis", -2);

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    /* Rows: y = [0.2, 0.3, 0.5] with dy = [1, 0, 0]: sum(dy * y) = 0.2, so
     * y * (dy - 0.2) = [0.16, -0.06, -0.1]; and y = [0.5, 0.25, 0.25], dy = [0, 2, 2]:
     * sum = 1, giving [-0.5, 0.25, 0.25]. */
    ses_edge_t y = f32s(g, 2, DIMS(2, 3), F32S(0.2f, 0.3f, 0.5f, 0.5f, 0.25f, 0.25f));
    ses_edge_t dy = f32s(g, 2, DIMS(2, 3), F32S(1, 0, 0, 0, 2, 2));
    ses_edge_t rows = op(g, "SoftmaxGrad", "rows", (ses_edge_t[]){dy, y}, 2, NULL, 0);
    expect_f32(eval(g, rows), 2, DIMS(2, 3), F32S(0.16f, -0.06f, -0.1f, -0.5f, 0.25f, 0.25f), 1e-6);

    /* Along axis 0 (and -2, the same): columns [0.2, 0.5] with dy [1, 0]: sum 0.2 →
     * [0.16, -0.1]; [0.3, 0.25] with [0, 2]: sum 0.5 → [-0.15, 0.375]; [0.5, 0.25] with
     * [0, 2]: sum 0.5 → [-0.25, 0.375]. */
    const float want_cols[] = {0.16f, -0.15f, -0.25f, -0.1f, 0.375f, 0.375f};
    ses_edge_t cols = op(g, "SoftmaxGrad", "cols", (ses_edge_t[]){dy, y}, 2, &axis0, 1);
    ses_edge_t cols2 = op(g, "SoftmaxGrad", "cols2", (ses_edge_t[]){dy, y}, 2, &axis_m2, 1);
    expect_f32(eval(g, cols), 2, DIMS(2, 3), want_cols, 1e-6);
    expect_f32(eval(g, cols2), 2, DIMS(2, 3), want_cols, 1e-6);

    /* LogSoftmaxGrad: y = log p, dy - p * sum(dy). p = [0.2, 0.3, 0.5], dy = [1, 2, 3]:
     * sum 6 → [-0.2, 0.2, 0]. */
    const double logp[] = {log(0.2), log(0.3), log(0.5)}, dlog[] = {1, 2, 3};
    ses_edge_t ls = op(g, "LogSoftmaxGrad", "ls",
                       (ses_edge_t[]){constant(g, SES_F64, 1, DIMS(3), dlog),
                                      constant(g, SES_F64, 1, DIMS(3), logp)},
                       2, NULL, 0);
    expect_f64(eval(g, ls), 1, DIMS(3), (const double[]){-0.2, 0.2, 0}, 1e-12);

    /* An empty tensor is fine; a scalar has no axis. */
    ses_edge_t empty =
        op(g, "SoftmaxGrad", "empty",
           (ses_edge_t[]){zeros(g, SES_F32, 2, DIMS(0, 4)), zeros(g, SES_F32, 2, DIMS(0, 4))}, 2,
           NULL, 0);
    expect_f32(eval(g, empty), 2, DIMS(0, 4), NULL, 0);
    ses_edge_t scalar =
        op(g, "SoftmaxGrad", "scalar",
           (ses_edge_t[]){zeros(g, SES_F32, 0, NULL), zeros(g, SES_F32, 0, NULL)}, 2, NULL, 0);
    expect_eval_error(g, scalar, SES_INVALID_ARGUMENT,
                      "SoftmaxGrad \"scalar\": axis -1 is out of range for rank 0", NULL);
    ses_attr_t axis2 = ses_attr_int("axis", 2);
    ses_edge_t far = op(g, "LogSoftmaxGrad", "far", (ses_edge_t[]){dy, y}, 2, &axis2, 1);
    expect_eval_error(g, far, SES_INVALID_ARGUMENT,
                      "LogSoftmaxGrad \"far\": axis 2 is out of range for rank 2", NULL);
    ses_graph_release(g);
}

/* ---- MatMulGrad ----------------------------------------------------------------------------- */

/*
 * The reference: numpy matmul's gradients by loops. Shapes are given promoted (a [.., M, K],
 * b [.., K, N], dy [batch.., M, N]) with the batch dims right-aligned and broadcast; the
 * gradient of each operand is summed over the batch dims it was broadcast along.
 */
typedef struct mm {
    int ra, rb, rbatch;           /* how many batch dims a, b and the product have */
    int64_t a[3], b[3], batch[3]; /* those batch dims */
    int64_t m, k, n;
} mm_t;

/* The matrix of an operand with batch dims @p dims[0..rank) at the product's batch index
 * @p idx[0..rbatch): right-aligned, a dim of 1 broadcast. */
static int64_t batch_index(const int64_t *dims, int rank, int rbatch, const int64_t *idx) {
    int64_t at = 0;
    for (int d = 0; d < rank; d++)
        at = at * dims[d] + (dims[d] == 1 ? 0 : idx[rbatch - rank + d]);
    return at;
}

static void naive_matmul_grads(const mm_t *s, const float *a, const float *b, const float *dy,
                               float *da, float *db, size_t na, size_t nb) {
    int64_t idx[3] = {0, 0, 0}, n_batch = 1;

    memset(da, 0, na * sizeof *da);
    memset(db, 0, nb * sizeof *db);
    for (int d = 0; d < s->rbatch; d++)
        n_batch *= s->batch[d];
    for (int64_t i = 0; i < n_batch; i++) {
        int64_t rest = i;
        for (int d = s->rbatch; d-- > 0;) {
            idx[d] = rest % s->batch[d];
            rest /= s->batch[d];
        }
        int64_t ai = batch_index(s->a, s->ra, s->rbatch, idx);
        int64_t bi = batch_index(s->b, s->rb, s->rbatch, idx);
        const float *am = a + ai * s->m * s->k, *bm = b + bi * s->k * s->n;
        const float *g = dy + i * s->m * s->n;
        for (int64_t r = 0; r < s->m; r++)
            for (int64_t c = 0; c < s->k; c++)
                for (int64_t j = 0; j < s->n; j++) {
                    da[ai * s->m * s->k + r * s->k + c] += g[r * s->n + j] * bm[c * s->n + j];
                    db[bi * s->k * s->n + c * s->n + j] += am[r * s->k + c] * g[r * s->n + j];
                }
    }
}

/* Builds MatMulGrad of both inputs for operands of the given (unpromoted) shapes and compares
 * with the reference. @p s describes the promoted problem. */
static void check_matmul_grad(const mm_t *s, size_t ra, const int64_t *adims, size_t rb,
                              const int64_t *bdims, size_t rdy, const int64_t *dydims) {
    float a[64], b[64], dy[64], da[64], db[64];
    size_t na = 1, nb = 1, ndy = 1;
    ses_graph_t *g = NULL;
    ses_attr_t in0 = ses_attr_int("input", 0), in1 = ses_attr_int("input", 1);

    for (size_t d = 0; d < ra; d++)
        na *= (size_t)adims[d];
    for (size_t d = 0; d < rb; d++)
        nb *= (size_t)bdims[d];
    for (size_t d = 0; d < rdy; d++)
        ndy *= (size_t)dydims[d];
    assert_true(na <= 64 && nb <= 64 && ndy <= 64);
    for (size_t i = 0; i < na; i++)
        a[i] = (float)((int)(i * 7 % 11) - 5) / 4;
    for (size_t i = 0; i < nb; i++)
        b[i] = (float)((int)(i * 5 % 9) - 4) / 2;
    for (size_t i = 0; i < ndy; i++)
        dy[i] = (float)((int)(i * 3 % 7) - 3);
    naive_matmul_grads(s, a, b, dy, da, db, na, nb);

    assert_int_equal(ses_graph_create(&g), SES_OK);
    ses_edge_t ea = f32s(g, ra, adims, a), eb = f32s(g, rb, bdims, b),
               edy = f32s(g, rdy, dydims, dy);
    /* The forward product has dy's shape. */
    ses_tensor_t *y = eval(g, op(g, "MatMul", "y", (ses_edge_t[]){ea, eb}, 2, NULL, 0));
    expect_shape(y, SES_F32, rdy, dydims);
    ses_tensor_release(y);
    ses_edge_t ga = op(g, "MatMulGrad", "ga", (ses_edge_t[]){edy, ea, eb}, 3, &in0, 1);
    ses_edge_t gb = op(g, "MatMulGrad", "gb", (ses_edge_t[]){edy, ea, eb}, 3, &in1, 1);
    expect_f32(eval(g, ga), ra, adims, da, 1e-4);
    expect_f32(eval(g, gb), rb, bdims, db, 1e-4);
    ses_graph_release(g);
}

static void matmul_grad_gives_both_gradients_of_plain_and_one_dimensional_products(void **state) {
    (void)state;
    /* A literal one first: a = [[1,2,3],[4,5,6]], b = [[1,0],[0,1],[1,1]], dy = [[1,2],[3,4]].
     * dA = dy b^T = [[1,2,3],[3,4,7]]; dB = a^T dy = [[13,18],[17,24],[21,30]]. */
    ses_graph_t *g = NULL;
    ses_attr_t in0 = ses_attr_int("input", 0), in1 = ses_attr_int("input", 1);
    assert_int_equal(ses_graph_create(&g), SES_OK);
    ses_edge_t a = f32s(g, 2, DIMS(2, 3), F32S(1, 2, 3, 4, 5, 6));
    ses_edge_t b = f32s(g, 2, DIMS(3, 2), F32S(1, 0, 0, 1, 1, 1));
    ses_edge_t dy = f32s(g, 2, DIMS(2, 2), F32S(1, 2, 3, 4));
    expect_f32(eval(g, op(g, "MatMulGrad", "da", (ses_edge_t[]){dy, a, b}, 3, &in0, 1)), 2,
               DIMS(2, 3), F32S(1, 2, 3, 3, 4, 7), 0);
    expect_f32(eval(g, op(g, "MatMulGrad", "db", (ses_edge_t[]){dy, a, b}, 3, &in1, 1)), 2,
               DIMS(3, 2), F32S(13, 18, 17, 24, 21, 30), 0);
    ses_graph_release(g);

    /* [2,3] x [3,4]; [3] x [3,4] (A a row); [2,3] x [3] (B a column); [3] x [3] (a scalar). */
    check_matmul_grad(&(mm_t){0, 0, 0, {0}, {0}, {0}, 2, 3, 4}, 2, DIMS(2, 3), 2, DIMS(3, 4), 2,
                      DIMS(2, 4));
    check_matmul_grad(&(mm_t){0, 0, 0, {0}, {0}, {0}, 1, 3, 4}, 1, DIMS(3), 2, DIMS(3, 4), 1,
                      DIMS(4));
    check_matmul_grad(&(mm_t){0, 0, 0, {0}, {0}, {0}, 2, 3, 1}, 2, DIMS(2, 3), 1, DIMS(3), 1,
                      DIMS(2));
    check_matmul_grad(&(mm_t){0, 0, 0, {0}, {0}, {0}, 1, 3, 1}, 1, DIMS(3), 1, DIMS(3), 0, NULL);
}

static void matmul_grad_sums_over_the_batch_dimensions_an_operand_was_broadcast_along(
    void **state) {
    (void)state;
    /* A batched, B shared: dB sums over the batch (one stacked GEMM). */
    check_matmul_grad(&(mm_t){1, 0, 1, {2}, {0}, {2}, 3, 2, 4}, 3, DIMS(2, 3, 2), 2, DIMS(2, 4), 3,
                      DIMS(2, 3, 4));
    /* A shared, B batched: dA sums over B's batch. */
    check_matmul_grad(&(mm_t){0, 1, 1, {0}, {3}, {3}, 2, 3, 2}, 2, DIMS(2, 3), 3, DIMS(3, 3, 2), 3,
                      DIMS(3, 2, 2));
    /* Both broadcast: A [2,1,..] and B [3,..] give batch [2,3]. */
    check_matmul_grad(&(mm_t){2, 1, 2, {2, 1}, {3}, {2, 3}, 2, 2, 2}, 4, DIMS(2, 1, 2, 2), 3,
                      DIMS(3, 2, 2), 4, DIMS(2, 3, 2, 2));
    /* A 1-D B against batched A: the column's dim is dropped from dy. */
    check_matmul_grad(&(mm_t){1, 0, 1, {2}, {0}, {2}, 2, 3, 1}, 3, DIMS(2, 2, 3), 1, DIMS(3), 2,
                      DIMS(2, 2));
    /* B with a batch of 1 is still one matrix. */
    check_matmul_grad(&(mm_t){1, 1, 1, {3}, {1}, {3}, 2, 2, 2}, 3, DIMS(3, 2, 2), 3, DIMS(1, 2, 2),
                      3, DIMS(3, 2, 2));
}

static void matmul_grad_handles_empty_dimensions_and_refuses_a_dy_of_another_shape(void **state) {
    ses_graph_t *g = NULL;
    ses_attr_t in0 = ses_attr_int("input", 0), in1 = ses_attr_int("input", 1),
               in2 = ses_attr_int("input", 2);

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    /* M = 0: dA is empty, dB sums nothing and is zeros. */
    ses_edge_t a0 = zeros(g, SES_F32, 2, DIMS(0, 3)),
               b = f32s(g, 2, DIMS(3, 2), F32S(1, 2, 3, 4, 5, 6));
    ses_edge_t dy0 = zeros(g, SES_F32, 2, DIMS(0, 2));
    expect_f32(eval(g, op(g, "MatMulGrad", "da0", (ses_edge_t[]){dy0, a0, b}, 3, &in0, 1)), 2,
               DIMS(0, 3), NULL, 0);
    expect_f32(eval(g, op(g, "MatMulGrad", "db0", (ses_edge_t[]){dy0, a0, b}, 3, &in1, 1)), 2,
               DIMS(3, 2), F32S(0, 0, 0, 0, 0, 0), 0);
    /* K = 0: both gradients are empty; N = 0: dA is zeros. */
    ses_edge_t ak = zeros(g, SES_F32, 2, DIMS(2, 0)), bk = zeros(g, SES_F32, 2, DIMS(0, 3));
    ses_edge_t dyk = f32s(g, 2, DIMS(2, 3), F32S(1, 2, 3, 4, 5, 6));
    expect_f32(eval(g, op(g, "MatMulGrad", "dak", (ses_edge_t[]){dyk, ak, bk}, 3, &in0, 1)), 2,
               DIMS(2, 0), NULL, 0);
    ses_edge_t an = f32s(g, 2, DIMS(1, 2), F32S(1, 2));
    ses_edge_t bn = zeros(g, SES_F32, 2, DIMS(2, 0)), dyn = zeros(g, SES_F32, 2, DIMS(1, 0));
    expect_f32(eval(g, op(g, "MatMulGrad", "dan", (ses_edge_t[]){dyn, an, bn}, 3, &in0, 1)), 2,
               DIMS(1, 2), F32S(0, 0), 0);

    ses_edge_t a = f32s(g, 2, DIMS(2, 3), F32S(1, 2, 3, 4, 5, 6));
    ses_edge_t wrong = op(g, "MatMulGrad", "wrong", (ses_edge_t[]){a, a, b}, 3, &in0, 1);
    expect_eval_error(g, wrong, SES_INVALID_ARGUMENT,
                      "MatMulGrad \"wrong\": dy does not match A * B: dy is f32[2,3], A is "
                      "f32[2,3], B is f32[3,2], A * B is f32[2,2]",
                      NULL);
    ses_edge_t inner = op(g, "MatMulGrad", "inner", (ses_edge_t[]){a, a, a}, 3, &in1, 1);
    expect_eval_error(g, inner, SES_INVALID_ARGUMENT,
                      "MatMulGrad \"inner\": inner dimensions differ: A is f32[2,3], B is f32[2,3]",
                      NULL);
    ses_edge_t which = op(g, "MatMulGrad", "which", (ses_edge_t[]){dyk, a, b}, 3, &in2, 1);
    expect_eval_error(g, which, SES_INVALID_ARGUMENT,
                      "MatMulGrad \"which\": attribute input must be 0 (the gradient of A) or 1 "
                      "(of B), got 2",
                      NULL);
    ses_edge_t missing = op(g, "MatMulGrad", "missing", (ses_edge_t[]){dyk, a, b}, 3, NULL, 0);
    expect_eval_error(g, missing, SES_INVALID_ARGUMENT,
                      "MatMulGrad \"missing\": attribute input is required", NULL);
    ses_graph_release(g);
}

/* ---- ReduceGrad ----------------------------------------------------------------------------- */

static void reduce_grad_broadcasts_dy_back_over_the_reduced_axes(void **state) {
    ses_graph_t *g = NULL;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    ses_edge_t x = zeros(g, SES_F32, 2, DIMS(2, 3));
    /* ReduceSum over axis 1 kept: dy [2,1] goes along each row. */
    ses_edge_t dy21 = f32s(g, 2, DIMS(2, 1), F32S(1, 2));
    ses_edge_t sum1 =
        op(g, "ReduceGrad", "sum1", (ses_edge_t[]){dy21, x, i64s(g, 1, DIMS(-1))}, 3, NULL, 0);
    expect_f32(eval(g, sum1), 2, DIMS(2, 3), F32S(1, 1, 1, 2, 2, 2), 0);

    /* ReduceMean over axis 0 as the attribute, not kept: dy [3] / 2 down each column. */
    ses_attr_t mean0[] = {ses_attr_ints("axes", DIMS(0), 1), ses_attr_int("keepdims", 0),
                          ses_attr_int("mean", 1)};
    ses_edge_t dy3 = f32s(g, 1, DIMS(3), F32S(2, 4, 6));
    ses_edge_t m0 = op(g, "ReduceGrad", "m0", (ses_edge_t[]){dy3, x}, 2, mean0, 3);
    expect_f32(eval(g, m0), 2, DIMS(2, 3), F32S(1, 2, 3, 1, 2, 3), 0);

    /* No axes: every axis; a mean divides by the whole count. */
    ses_attr_t all_mean[] = {ses_attr_int("keepdims", 0), ses_attr_int("mean", 1)};
    ses_edge_t all =
        op(g, "ReduceGrad", "all", (ses_edge_t[]){f32s(g, 0, NULL, F32S(12)), x}, 2, all_mean, 2);
    expect_f32(eval(g, all), 2, DIMS(2, 3), F32S(2, 2, 2, 2, 2, 2), 0);
    ses_edge_t all_kept = op(g, "ReduceGrad", "all_kept",
                             (ses_edge_t[]){f32s(g, 2, DIMS(1, 1), F32S(5)), x}, 2, NULL, 0);
    expect_f32(eval(g, all_kept), 2, DIMS(2, 3), F32S(5, 5, 5, 5, 5, 5), 0);

    /* noop_with_empty_axes: the reduction was Identity, and so is its gradient. */
    ses_attr_t noop = ses_attr_int("noop_with_empty_axes", 1);
    ses_edge_t dy23 = f32s(g, 2, DIMS(2, 3), F32S(1, 2, 3, 4, 5, 6));
    ses_edge_t id =
        op(g, "ReduceGrad", "id", (ses_edge_t[]){dy23, x, constant(g, SES_I64, 1, DIMS(0), NULL)},
           3, &noop, 1);
    expect_f32(eval(g, id), 2, DIMS(2, 3), F32S(1, 2, 3, 4, 5, 6), 0);

    /* Rank 0 (no axis to reduce) and a zero-size x, in f64. */
    const double seven = 7;
    ses_edge_t s0 =
        op(g, "ReduceGrad", "s0",
           (ses_edge_t[]){constant(g, SES_F64, 0, NULL, &seven), zeros(g, SES_F64, 0, NULL)}, 2,
           NULL, 0);
    expect_f64(eval(g, s0), 0, NULL, (const double[]){7}, 0);
    ses_attr_t mean = ses_attr_int("mean", 1);
    ses_edge_t e0 = op(g, "ReduceGrad", "e0",
                       (ses_edge_t[]){zeros(g, SES_F64, 2, DIMS(1, 3)),
                                      zeros(g, SES_F64, 2, DIMS(0, 3)), i64s(g, 1, DIMS(0))},
                       3, &mean, 1);
    ses_tensor_t *empty_x = eval(g, e0);
    expect_shape(empty_x, SES_F64, 2, DIMS(0, 3));
    ses_tensor_release(empty_x);

    /* A 3-D case: x [2,2,2] reduced over axes 0 and 2, kept. */
    ses_edge_t dy3d = f32s(g, 3, DIMS(1, 2, 1), F32S(10, 20));
    ses_edge_t r3 =
        op(g, "ReduceGrad", "r3",
           (ses_edge_t[]){dy3d, zeros(g, SES_F32, 3, DIMS(2, 2, 2)), i64s(g, 2, DIMS(2, -3))}, 3,
           NULL, 0);
    expect_f32(eval(g, r3), 3, DIMS(2, 2, 2), F32S(10, 10, 20, 20, 10, 10, 20, 20), 0);
    ses_graph_release(g);
}

static void reduce_grad_refuses_a_dy_that_is_not_the_reduction_and_axes_given_twice(void **state) {
    ses_graph_t *g = NULL;
    ses_attr_t axes1 = ses_attr_ints("axes", DIMS(1), 1);

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    ses_edge_t x = zeros(g, SES_F32, 2, DIMS(2, 3));
    ses_edge_t dy = f32s(g, 1, DIMS(2), F32S(1, 2));
    ses_edge_t kept =
        op(g, "ReduceGrad", "kept", (ses_edge_t[]){dy, x, i64s(g, 1, DIMS(1))}, 3, NULL, 0);
    expect_eval_error(g, kept, SES_INVALID_ARGUMENT,
                      "ReduceGrad \"kept\": dy does not match x reduced over axes [1] with "
                      "keepdims=1: dy is f32[2], x is f32[2,3], the reduction is f32[2,1]",
                      NULL);
    ses_edge_t twice =
        op(g, "ReduceGrad", "twice", (ses_edge_t[]){dy, x, i64s(g, 1, DIMS(1))}, 3, &axes1, 1);
    expect_eval_error(g, twice, SES_INVALID_ARGUMENT,
                      "ReduceGrad \"twice\": axes are given both as input 2 and as an attribute",
                      NULL);
    ses_edge_t range =
        op(g, "ReduceGrad", "range", (ses_edge_t[]){dy, x, i64s(g, 1, DIMS(2))}, 3, NULL, 0);
    expect_eval_error(g, range, SES_INVALID_ARGUMENT,
                      "ReduceGrad \"range\": axes value 2 is out of range for rank 2", NULL);
    ses_edge_t ints =
        op(g, "ReduceGrad", "ints",
           (ses_edge_t[]){zeros(g, SES_I32, 1, DIMS(2)), zeros(g, SES_I32, 2, DIMS(2, 3))}, 2, NULL,
           0);
    expect_eval_error(g, ints, SES_INVALID_ARGUMENT, "ReduceGrad \"ints\": input 0 (dy) is i32[2]",
                      NULL);
    ses_graph_release(g);
}

/* ---- GatherGrad, SliceGrad, ConcatGrad ------------------------------------------------------ */

static void gather_grad_adds_repeated_indices_and_counts_negative_ones_from_the_end(void **state) {
    ses_graph_t *g = NULL;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    /* like [5,2]; indices [3, 1, 3, -1]: row 3 gets dy[0] + dy[2], row 1 dy[1], row 4 dy[3]. */
    ses_edge_t like = zeros(g, SES_F32, 2, DIMS(5, 2));
    ses_edge_t idx = i64s(g, 4, DIMS(3, 1, 3, -1));
    ses_edge_t dy = f32s(g, 2, DIMS(4, 2), F32S(1, 2, 3, 4, 5, 6, 7, 8));
    ses_edge_t rows = op(g, "GatherGrad", "rows", (ses_edge_t[]){dy, idx, like}, 3, NULL, 0);
    expect_f32(eval(g, rows), 2, DIMS(5, 2), F32S(0, 0, 3, 4, 0, 0, 6, 8, 7, 8), 0);

    /* Along axis -1 (1) with i32 indices [[0, 0], [2, 0]] of a [2,3] like: dy [2,2,2]. */
    const int32_t idx32[] = {0, 0, 2, 0};
    ses_attr_t axis = ses_attr_int("axis", -1);
    ses_edge_t cols = op(g, "GatherGrad", "cols",
                         (ses_edge_t[]){f32s(g, 3, DIMS(2, 2, 2), F32S(1, 2, 3, 4, 5, 6, 7, 8)),
                                        constant(g, SES_I32, 2, DIMS(2, 2), idx32),
                                        zeros(g, SES_F32, 2, DIMS(2, 3))},
                         3, &axis, 1);
    /* Row 0: col 0 gets 1 + 2 + 4, col 2 gets 3; row 1: col 0 gets 5 + 6 + 8, col 2 gets 7. */
    expect_f32(eval(g, cols), 2, DIMS(2, 3), F32S(7, 0, 3, 19, 0, 7), 0);

    /* A scalar index gives a dy without the axis; no indices give zeros. */
    const int64_t two = 2;
    const double dyv[] = {1.5, -1};
    ses_edge_t scalar =
        op(g, "GatherGrad", "scalar",
           (ses_edge_t[]){constant(g, SES_F64, 1, DIMS(2), dyv),
                          constant(g, SES_I64, 0, NULL, &two), zeros(g, SES_F64, 2, DIMS(3, 2))},
           3, NULL, 0);
    expect_f64(eval(g, scalar), 2, DIMS(3, 2), (const double[]){0, 0, 0, 0, 1.5, -1}, 0);
    ses_edge_t none = op(g, "GatherGrad", "none",
                         (ses_edge_t[]){zeros(g, SES_F32, 2, DIMS(0, 2)),
                                        constant(g, SES_I64, 1, DIMS(0), NULL), like},
                         3, NULL, 0);
    expect_f32(eval(g, none), 2, DIMS(5, 2), F32S(0, 0, 0, 0, 0, 0, 0, 0, 0, 0), 0);
    ses_graph_release(g);
}

static void gather_grad_refuses_an_index_out_of_range_and_a_dy_of_another_shape(void **state) {
    ses_graph_t *g = NULL;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    ses_edge_t like = zeros(g, SES_F32, 2, DIMS(5, 2));
    ses_edge_t dy = f32s(g, 2, DIMS(2, 2), F32S(1, 2, 3, 4));
    ses_edge_t far =
        op(g, "GatherGrad", "far", (ses_edge_t[]){dy, i64s(g, 2, DIMS(0, 5)), like}, 3, NULL, 0);
    expect_eval_error(g, far, SES_INVALID_ARGUMENT, "GatherGrad \"far\"",
                      "index 5 (element 1 of the indices) is out of range for axis 0 of size 5",
                      NULL);
    ses_edge_t low =
        op(g, "GatherGrad", "low", (ses_edge_t[]){dy, i64s(g, 2, DIMS(-6, 0)), like}, 3, NULL, 0);
    expect_eval_error(g, low, SES_INVALID_ARGUMENT, "GatherGrad \"low\"", "index -6", NULL);
    ses_edge_t shape = op(g, "GatherGrad", "shape",
                          (ses_edge_t[]){dy, i64s(g, 3, DIMS(0, 1, 2)), like}, 3, NULL, 0);
    expect_eval_error(g, shape, SES_INVALID_ARGUMENT,
                      "GatherGrad \"shape\": dy does not match Gather(like, indices, axis=0): dy "
                      "is f32[2,2], like is f32[5,2], indices is i64[3], the gather is f32[3,2]",
                      NULL);
    ses_edge_t dtype = op(
        g, "GatherGrad", "dtype",
        (ses_edge_t[]){dy, i64s(g, 2, DIMS(0, 1)), zeros(g, SES_F64, 2, DIMS(5, 2))}, 3, NULL, 0);
    expect_eval_error(g, dtype, SES_INVALID_ARGUMENT,
                      "GatherGrad \"dtype\": dtypes differ: dy is f32[2,2], like is f64[5,2]",
                      NULL);
    ses_graph_release(g);
}

static void slice_grad_writes_dy_where_the_slice_read_and_zeros_elsewhere(void **state) {
    ses_graph_t *g = NULL;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    /* x [2,4], columns 1 and 3 (start 1, step 2). */
    ses_edge_t x = zeros(g, SES_F32, 2, DIMS(2, 4));
    ses_edge_t dy = f32s(g, 2, DIMS(2, 2), F32S(1, 2, 3, 4));
    ses_edge_t cols = op(g, "SliceGrad", "cols",
                         (ses_edge_t[]){dy, x, i64s(g, 1, DIMS(1)), i64s(g, 1, DIMS(4)),
                                        i64s(g, 1, DIMS(-1)), i64s(g, 1, DIMS(2))},
                         6, NULL, 0);
    expect_f32(eval(g, cols), 2, DIMS(2, 4), F32S(0, 1, 0, 2, 0, 3, 0, 4), 0);

    /* Backwards: Slice([0..5), -1, -6, step -2) reads x[4], x[2], x[0]; in i64. */
    const int64_t back[] = {7, 8, 9};
    ses_edge_t rev =
        op(g, "SliceGrad", "rev",
           (ses_edge_t[]){constant(g, SES_I64, 1, DIMS(3), back), zeros(g, SES_I64, 1, DIMS(5)),
                          i64s(g, 1, DIMS(-1)), i64s(g, 1, DIMS(-6)), i64s(g, 1, DIMS(0)),
                          i64s(g, 1, DIMS(-2))},
           6, NULL, 0);
    expect_bytes(eval(g, rev), SES_I64, 1, DIMS(5), (const int64_t[]){9, 0, 8, 0, 7});

    /* Bools, with starts/ends alone; an empty slice gives zeros; a scalar is copied. */
    const uint8_t t[] = {1, 1};
    ses_edge_t bools = op(
        g, "SliceGrad", "bools",
        (ses_edge_t[]){constant(g, SES_BOOL, 2, DIMS(1, 2), t), zeros(g, SES_BOOL, 2, DIMS(3, 2)),
                       i64s(g, 1, DIMS(2)), i64s(g, 1, DIMS(100))},
        4, NULL, 0);
    expect_bytes(eval(g, bools), SES_BOOL, 2, DIMS(3, 2), (const uint8_t[]){0, 0, 0, 0, 1, 1});
    ses_edge_t empty = op(g, "SliceGrad", "empty",
                          (ses_edge_t[]){zeros(g, SES_F32, 2, DIMS(0, 4)), x, i64s(g, 1, DIMS(1)),
                                         i64s(g, 1, DIMS(1))},
                          4, NULL, 0);
    expect_f32(eval(g, empty), 2, DIMS(2, 4), F32S(0, 0, 0, 0, 0, 0, 0, 0), 0);
    ses_edge_t none = constant(g, SES_I64, 1, DIMS(0), NULL);
    ses_edge_t s0 =
        op(g, "SliceGrad", "s0",
           (ses_edge_t[]){f32s(g, 0, NULL, F32S(3)), zeros(g, SES_F32, 0, NULL), none, none}, 4,
           NULL, 0);
    expect_f32(eval(g, s0), 0, NULL, F32S(3), 0);

    ses_edge_t bad =
        op(g, "SliceGrad", "bad", (ses_edge_t[]){dy, x, i64s(g, 1, DIMS(1)), i64s(g, 1, DIMS(4))},
           4, NULL, 0);
    expect_eval_error(g, bad, SES_INVALID_ARGUMENT,
                      "SliceGrad \"bad\": dy does not match the slice of x: dy is f32[2,2], x is "
                      "f32[2,4], the slice is f32[1,4]",
                      NULL);
    ses_edge_t twice = op(g, "SliceGrad", "twice",
                          (ses_edge_t[]){dy, x, i64s(g, 2, DIMS(0, 0)), i64s(g, 2, DIMS(2, 2)),
                                         i64s(g, 2, DIMS(1, -1))},
                          5, NULL, 0);
    expect_eval_error(g, twice, SES_INVALID_ARGUMENT,
                      "SliceGrad \"twice\": axes [1,-1] name axis 1 twice", NULL);
    ses_graph_release(g);
}

static void concat_grad_takes_the_block_of_dy_that_came_from_its_input(void **state) {
    ses_graph_t *g = NULL;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    /* Concat of [2,1], [2,3], [2,2] along axis 1 (-1): dy [2,6]. */
    ses_edge_t x0 = zeros(g, SES_F32, 2, DIMS(2, 1)), x1 = zeros(g, SES_F32, 2, DIMS(2, 3)),
               x2 = zeros(g, SES_F32, 2, DIMS(2, 2));
    ses_edge_t dy = f32s(g, 2, DIMS(2, 6), F32S(0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15));
    ses_attr_t at1[] = {ses_attr_int("axis", -1), ses_attr_int("index", 1)};
    ses_attr_t at2[] = {ses_attr_int("axis", 1), ses_attr_int("index", 2)};
    ses_attr_t at0[] = {ses_attr_int("axis", 1), ses_attr_int("index", 0)};
    ses_edge_t d1 = op(g, "ConcatGrad", "d1", (ses_edge_t[]){dy, x0, x1, x2}, 4, at1, 2);
    ses_edge_t d2 = op(g, "ConcatGrad", "d2", (ses_edge_t[]){dy, x0, x1, x2}, 4, at2, 2);
    ses_edge_t d0 = op(g, "ConcatGrad", "d0", (ses_edge_t[]){dy, x0, x1, x2}, 4, at0, 2);
    expect_f32(eval(g, d1), 2, DIMS(2, 3), F32S(1, 2, 3, 11, 12, 13), 0);
    expect_f32(eval(g, d2), 2, DIMS(2, 2), F32S(4, 5, 14, 15), 0);
    expect_f32(eval(g, d0), 2, DIMS(2, 1), F32S(0, 10), 0);

    /* Along axis 0, with an empty input in the middle. */
    ses_attr_t rows[] = {ses_attr_int("axis", 0), ses_attr_int("index", 2)};
    ses_attr_t mid[] = {ses_attr_int("axis", 0), ses_attr_int("index", 1)};
    ses_edge_t r0 = zeros(g, SES_F32, 2, DIMS(1, 2)), r1 = zeros(g, SES_F32, 2, DIMS(0, 2)),
               r2 = zeros(g, SES_F32, 2, DIMS(2, 2));
    ses_edge_t dyr = f32s(g, 2, DIMS(3, 2), F32S(1, 2, 3, 4, 5, 6));
    expect_f32(eval(g, op(g, "ConcatGrad", "r", (ses_edge_t[]){dyr, r0, r1, r2}, 4, rows, 2)), 2,
               DIMS(2, 2), F32S(3, 4, 5, 6), 0);
    expect_f32(eval(g, op(g, "ConcatGrad", "m", (ses_edge_t[]){dyr, r0, r1, r2}, 4, mid, 2)), 2,
               DIMS(0, 2), NULL, 0);

    ses_attr_t bad_index[] = {ses_attr_int("axis", 1), ses_attr_int("index", 3)};
    ses_edge_t bi = op(g, "ConcatGrad", "bi", (ses_edge_t[]){dy, x0, x1, x2}, 4, bad_index, 2);
    expect_eval_error(g, bi, SES_INVALID_ARGUMENT,
                      "ConcatGrad \"bi\": attribute index is 3, but there are 3 concatenated "
                      "inputs (valid: 0 to 2)",
                      NULL);
    ses_edge_t sum = op(g, "ConcatGrad", "sum", (ses_edge_t[]){dy, x0, x1}, 3, at0, 2);
    expect_eval_error(g, sum, SES_INVALID_ARGUMENT,
                      "ConcatGrad \"sum\": the inputs' dims along axis 1 add up to 4, but dy is "
                      "f32[2,6]",
                      NULL);
    ses_edge_t other = op(g, "ConcatGrad", "other",
                          (ses_edge_t[]){dy, zeros(g, SES_F32, 2, DIMS(3, 6))}, 2, at0, 2);
    expect_eval_error(g, other, SES_INVALID_ARGUMENT,
                      "ConcatGrad \"other\": input 1 does not fit dy concatenated along axis 1: "
                      "dy is f32[2,6], input 1 is f32[3,6]",
                      NULL);
    ses_graph_release(g);
}

/* ---- large tensors ----------------------------------------------------------------------------
 */

/* Inputs large enough for the work to be split over the CPU pool give what plain loops give. */
static void large_gradients_split_over_the_pool_match_plain_loops(void **state) {
    ses_graph_t *g = NULL;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);

    /* GatherGrad: 3000 indices into 1000 rows of 64, each row hit a few times, some from the
     * end. The additions into a row come in the order of the indices, so the sums are exact. */
    enum { ROWS = 1000, COLS = 64, N_IDX = 3000 };
    int64_t *idx = malloc(N_IDX * sizeof *idx);
    float *dy = malloc((size_t)N_IDX * COLS * sizeof *dy);
    float *want = calloc((size_t)ROWS * COLS, sizeof *want);
    assert_true(idx && dy && want);
    for (int q = 0; q < N_IDX; q++) {
        idx[q] = (int64_t)((q * 7919) % (2 * ROWS)) - ROWS;
        for (int j = 0; j < COLS; j++)
            dy[q * COLS + j] = (float)((q * 31 + j * 17) % 101) / 8 - 6;
    }
    for (int q = 0; q < N_IDX; q++) {
        int64_t row = idx[q] < 0 ? idx[q] + ROWS : idx[q];
        for (int j = 0; j < COLS; j++)
            want[row * COLS + j] += dy[q * COLS + j];
    }
    ses_edge_t gg = op(g, "GatherGrad", "gg",
                       (ses_edge_t[]){f32s(g, 2, DIMS(N_IDX, COLS), dy), i64s(g, N_IDX, idx),
                                      zeros(g, SES_F32, 2, DIMS(ROWS, COLS))},
                       3, NULL, 0);
    expect_f32(eval(g, gg), 2, DIMS(ROWS, COLS), want, 0);
    free(idx);
    free(dy);
    free(want);

    /* SoftmaxGrad along the middle axis of [8,300,40] (lanes 40 apart), against double loops. */
    enum { O = 8, D = 300, I = 40 };
    float *sy = malloc((size_t)O * D * I * sizeof *sy),
          *sdy = malloc((size_t)O * D * I * sizeof *sdy);
    float *swant = malloc((size_t)O * D * I * sizeof *swant);
    assert_true(sy && sdy && swant);
    for (int e = 0; e < O * D * I; e++) {
        sy[e] = (float)((e * 13) % 97 + 1) / 5000;
        sdy[e] = (float)((e * 29) % 89) / 11 - 4;
    }
    for (int o = 0; o < O; o++)
        for (int i = 0; i < I; i++) {
            double sum = 0;
            for (int d = 0; d < D; d++)
                sum += (double)sdy[(o * D + d) * I + i] * sy[(o * D + d) * I + i];
            for (int d = 0; d < D; d++) {
                int e = (o * D + d) * I + i;
                swant[e] = (float)(sy[e] * (sdy[e] - sum));
            }
        }
    ses_attr_t axis1 = ses_attr_int("axis", 1);
    ses_edge_t sg =
        op(g, "SoftmaxGrad", "sg",
           (ses_edge_t[]){f32s(g, 3, DIMS(O, D, I), sdy), f32s(g, 3, DIMS(O, D, I), sy)}, 2, &axis1,
           1);
    expect_f32(eval(g, sg), 3, DIMS(O, D, I), swant, 1e-4);
    free(sy);
    free(sdy);
    free(swant);

    /* SliceGrad of x [600,400] sliced backwards by 3 from row 598 and forwards by 2 from
     * column 1: dy [200,200]. */
    enum { XR = 600, XC = 400, DR = 200, DC = 200 };
    float *gdy = malloc((size_t)DR * DC * sizeof *gdy),
          *gwant = calloc((size_t)XR * XC, sizeof *gwant);
    assert_true(gdy && gwant);
    for (int r = 0; r < DR; r++)
        for (int c = 0; c < DC; c++) {
            gdy[r * DC + c] = (float)(r * DC + c + 1);
            gwant[(598 - 3 * r) * XC + 1 + 2 * c] = (float)(r * DC + c + 1);
        }
    ses_edge_t slg =
        op(g, "SliceGrad", "slg",
           (ses_edge_t[]){f32s(g, 2, DIMS(DR, DC), gdy), zeros(g, SES_F32, 2, DIMS(XR, XC)),
                          i64s(g, 2, DIMS(-2, 1)), i64s(g, 2, DIMS(-XR, XC)),
                          i64s(g, 2, DIMS(0, 1)), i64s(g, 2, DIMS(-3, 2))},
           6, NULL, 0);
    expect_f32(eval(g, slg), 2, DIMS(XR, XC), gwant, 0);
    free(gdy);
    free(gwant);

    /* ExpandLike of a row to [500,100], and ReduceSumLike back: 500 times the row. */
    float row[100], five_hundred[100];
    for (int j = 0; j < 100; j++) {
        row[j] = (float)j / 4;
        five_hundred[j] = 500 * row[j];
    }
    ses_edge_t ex =
        op(g, "ExpandLike", "ex",
           (ses_edge_t[]){f32s(g, 1, DIMS(100), row), zeros(g, SES_F32, 2, DIMS(500, 100))}, 2,
           NULL, 0);
    ses_edge_t back = op(g, "ReduceSumLike", "back",
                         (ses_edge_t[]){ex, zeros(g, SES_F32, 1, DIMS(100))}, 2, NULL, 0);
    expect_f32(eval(g, back), 1, DIMS(100), five_hundred, 1e-3);
    ses_graph_release(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(like_inputs_are_left_out_and_reused_kernels_are_named),
        cmocka_unit_test(gradient_ops_lower_to_normalized_attributes),
        cmocka_unit_test(expand_like_broadcasts_x_to_the_shape_of_like),
        cmocka_unit_test(reduce_sum_like_sums_over_the_broadcast_dimensions),
        cmocka_unit_test(scalar_like_gives_a_scalar_of_the_dtype_of_like),
        cmocka_unit_test(reshape_like_and_cast_like_take_the_shape_or_dtype_of_like),
        cmocka_unit_test(activation_gradients_follow_their_formulas),
        cmocka_unit_test(softmax_gradients_sum_along_the_axis),
        cmocka_unit_test(matmul_grad_gives_both_gradients_of_plain_and_one_dimensional_products),
        cmocka_unit_test(matmul_grad_sums_over_the_batch_dimensions_an_operand_was_broadcast_along),
        cmocka_unit_test(matmul_grad_handles_empty_dimensions_and_refuses_a_dy_of_another_shape),
        cmocka_unit_test(reduce_grad_broadcasts_dy_back_over_the_reduced_axes),
        cmocka_unit_test(reduce_grad_refuses_a_dy_that_is_not_the_reduction_and_axes_given_twice),
        cmocka_unit_test(gather_grad_adds_repeated_indices_and_counts_negative_ones_from_the_end),
        cmocka_unit_test(gather_grad_refuses_an_index_out_of_range_and_a_dy_of_another_shape),
        cmocka_unit_test(slice_grad_writes_dy_where_the_slice_read_and_zeros_elsewhere),
        cmocka_unit_test(concat_grad_takes_the_block_of_dy_that_came_from_its_input),
        cmocka_unit_test(large_gradients_split_over_the_pool_match_plain_loops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
