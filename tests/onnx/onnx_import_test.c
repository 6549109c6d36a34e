/*
 * The ONNX importer and the .npy reader against good and hostile input: the committed MLP runs
 * and matches NumPy; truncated files, non-protobuf bytes, absurd dimensions, cycles, undefined
 * values, deep nesting, unknown ops and broken tensors are errors naming the problem, never
 * crashes (the sanitizer build checks leaks too). Models are built here with protobuf-c from the
 * generated onnx.pb-c.h, so each one differs from a good model in exactly one way.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <session/npy.h>
#include <session/onnx.h>
#include <session/session.h>

#include "onnx.pb-c.h"

#define MODELS SOURCE_ROOT "/tests/onnx/models"

/* ---- building models ---------------------------------------------------------------------- */

typedef struct built {
    Onnx__ModelProto model;
    Onnx__GraphProto graph;
    Onnx__OperatorSetIdProto opset, *opsets[1];
    Onnx__NodeProto nodes[8], *node_ptrs[8];
    char *node_in[8][2], *node_out[8][1];
    Onnx__ValueInfoProto vin, vout, *vin_ptr[1], *vout_ptr[1];
    Onnx__TypeProto tin;
    Onnx__TypeProto__Tensor tt;
    Onnx__TensorShapeProto shape;
    Onnx__TensorShapeProto__Dimension dim, *dim_ptr[1];
    Onnx__TensorProto init, *init_ptr[1];
    int64_t init_dims[2];
    float init_data[4];
} built_t;

/* A model y = op_i(...(x)) with x f32[4], ops given as "Op:in0,in1:out". */
static void build(built_t *b, const char *const *nodes, size_t n_nodes, const char *output) {
    memset(b, 0, sizeof *b);
    onnx__model_proto__init(&b->model);
    onnx__graph_proto__init(&b->graph);
    onnx__operator_set_id_proto__init(&b->opset);
    b->opset.domain = "";
    b->opset.has_version = 1;
    b->opset.version = 13;
    b->opsets[0] = &b->opset;
    b->model.n_opset_import = 1;
    b->model.opset_import = b->opsets;
    b->model.has_ir_version = 1;
    b->model.ir_version = 8;
    b->model.graph = &b->graph;
    b->graph.name = "g";
    for (size_t i = 0; i < n_nodes; i++) {
        char spec[128], *op, *ins, *out, *save = NULL;
        Onnx__NodeProto *n = &b->nodes[i];
        onnx__node_proto__init(n);
        snprintf(spec, sizeof spec, "%s", nodes[i]);
        op = strtok_r(spec, ":", &save);
        ins = strtok_r(NULL, ":", &save);
        out = strtok_r(NULL, ":", &save);
        n->op_type = strdup(op);
        for (char *in = strtok_r(ins, ",", &save); in; in = strtok_r(NULL, ",", &save))
            b->node_in[i][n->n_input++] = strdup(in);
        n->input = b->node_in[i];
        b->node_out[i][0] = strdup(out);
        n->n_output = 1;
        n->output = b->node_out[i];
        b->node_ptrs[i] = n;
    }
    b->graph.n_node = n_nodes;
    b->graph.node = b->node_ptrs;
    onnx__value_info_proto__init(&b->vin);
    onnx__type_proto__init(&b->tin);
    onnx__type_proto__tensor__init(&b->tt);
    onnx__tensor_shape_proto__init(&b->shape);
    onnx__tensor_shape_proto__dimension__init(&b->dim);
    b->dim.value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    b->dim.dim_value = 4;
    b->dim_ptr[0] = &b->dim;
    b->shape.n_dim = 1;
    b->shape.dim = b->dim_ptr;
    b->tt.has_elem_type = 1;
    b->tt.elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    b->tt.shape = &b->shape;
    b->tin.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    b->tin.tensor_type = &b->tt;
    b->vin.name = "x";
    b->vin.type = &b->tin;
    b->vin_ptr[0] = &b->vin;
    b->graph.n_input = 1;
    b->graph.input = b->vin_ptr;
    onnx__value_info_proto__init(&b->vout);
    b->vout.name = (char *)output;
    b->vout_ptr[0] = &b->vout;
    b->graph.n_output = 1;
    b->graph.output = b->vout_ptr;
}

/* Adds initializer "w" f32 with @p dims (no data when @p with_data is 0). */
static void add_initializer(built_t *b, int64_t d0, int64_t d1, int with_data) {
    onnx__tensor_proto__init(&b->init);
    b->init.name = "w";
    b->init.has_data_type = 1;
    b->init.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    b->init_dims[0] = d0;
    b->init_dims[1] = d1;
    b->init.n_dims = d1 ? 2 : 1;
    b->init.dims = b->init_dims;
    if (with_data) {
        for (int i = 0; i < 4; i++)
            b->init_data[i] = (float)(i + 1);
        b->init.n_float_data = 4;
        b->init.float_data = b->init_data;
    }
    b->init_ptr[0] = &b->init;
    b->graph.n_initializer = 1;
    b->graph.initializer = b->init_ptr;
}

static void unbuild(built_t *b) {
    for (size_t i = 0; i < b->graph.n_node; i++) {
        free(b->nodes[i].op_type);
        for (size_t k = 0; k < b->nodes[i].n_input; k++)
            free(b->node_in[i][k]);
        free(b->node_out[i][0]);
    }
}

/* Packs and imports; returns the status and keeps the model in *out (or NULL). */
static ses_status_t import_built(built_t *b, const ses_onnx_options_t *o, ses_onnx_model_t **out) {
    size_t size = onnx__model_proto__get_packed_size(&b->model);
    uint8_t *bytes = malloc(size + 1);
    ses_status_t st;

    assert_non_null(bytes);
    onnx__model_proto__pack(&b->model, bytes);
    st = ses_onnx_import(bytes, size, o, out);
    free(bytes);
    return st;
}

static void expect_error(built_t *b, ses_status_t code, const char *part) {
    ses_onnx_model_t *m = (ses_onnx_model_t *)0x1;
    ses_status_t st = import_built(b, NULL, &m);

    if (st != code || !strstr(ses_last_error(), part))
        fail_msg("got %d \"%s\", want %d containing \"%s\"", st, ses_last_error(), code, part);
    assert_null(m);
}

static uint8_t *read_all(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    uint8_t *data;
    long n;

    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    data = malloc((size_t)n + 1);
    assert_non_null(data);
    assert_int_equal(fread(data, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return data;
}

/* ---- good models -------------------------------------------------------------------------- */

static void run_mlp(const ses_onnx_options_t *o) {
    ses_onnx_model_t *m = NULL;
    ses_session_t *s = NULL;
    ses_tensor_t *x = NULL, *want = NULL, *y = NULL;
    ses_feed_t feed;
    ses_edge_t out;

    assert_int_equal(ses_onnx_import_file(MODELS "/mlp/model.onnx", o, &m), SES_OK);
    assert_int_equal(ses_onnx_model_opset(m), 13);
    assert_int_equal(ses_onnx_model_input_count(m), 1);
    assert_string_equal(ses_onnx_model_input_name(m, 0), "x");
    assert_int_equal(ses_onnx_model_output_count(m), 1);
    assert_string_equal(ses_onnx_model_output_name(m, 0), "y");
    assert_int_equal(ses_npy_read_file(MODELS "/mlp/input_0.npy", &x), SES_OK);
    assert_int_equal(ses_npy_read_file(MODELS "/mlp/expected_0.npy", &want), SES_OK);
    assert_int_equal(ses_session_open(ses_onnx_model_graph(m), NULL, 0, NULL, &s), SES_OK);
    feed.edge = ses_onnx_model_input(m, 0);
    feed.value = x;
    out = ses_onnx_model_output(m, 0);
    assert_int_equal(ses_session_eval(s, &out, 1, &feed, 1, NULL, 0, &y), SES_OK);
    assert_int_equal(ses_tensor_count(y), 40);
    for (size_t i = 0; i < 40; i++)
        assert_float_equal(((float *)ses_tensor_data(y))[i], ((float *)ses_tensor_data(want))[i],
                           1e-5);
    ses_tensor_release(x);
    ses_tensor_release(want);
    ses_tensor_release(y);
    ses_session_destroy(s);
    ses_onnx_model_destroy(m);
}

static void the_mlp_matches_numpy(void **state) {
    ses_onnx_options_t o;

    (void)state;
    run_mlp(NULL);
    /* The same with trainable initializers. */
    ses_onnx_options_init(&o);
    o.initializers_as_variables = 1;
    run_mlp(&o);
}

static void an_old_softmax_flattens_at_its_axis(void **state) {
    /* Softmax of op set 11 on x f32[4] with axis 0: the whole vector, as one row. */
    static const char *const nodes[] = {"Softmax:x:y"};
    built_t b;
    ses_onnx_model_t *m = NULL;
    ses_session_t *s = NULL;
    static const float xs[4] = {1, 2, 3, 4};
    const int64_t four = 4;
    ses_tensor_t *x, *y = NULL;
    ses_feed_t feed;
    ses_edge_t out;
    double sum = 0;
    Onnx__AttributeProto axis, *axis_ptr[1] = {&axis};

    (void)state;
    build(&b, nodes, 1, "y");
    b.opset.version = 11;
    /* axis 0: coerced to [1, 4], one row of four (the default, 1, would make four rows of one) */
    onnx__attribute_proto__init(&axis);
    axis.name = "axis";
    axis.has_type = 1;
    axis.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    axis.has_i = 1;
    axis.i = 0;
    b.nodes[0].n_attribute = 1;
    b.nodes[0].attribute = axis_ptr;
    assert_int_equal(import_built(&b, NULL, &m), SES_OK);
    assert_int_equal(ses_tensor_create_from(SES_F32, 1, &four, xs, sizeof xs, &x), SES_OK);
    assert_int_equal(ses_session_open(ses_onnx_model_graph(m), NULL, 0, NULL, &s), SES_OK);
    feed.edge = ses_onnx_model_input(m, 0);
    feed.value = x;
    out = ses_onnx_model_output(m, 0);
    if (ses_session_eval(s, &out, 1, &feed, 1, NULL, 0, &y) != SES_OK)
        fail_msg("%s", ses_last_error());
    assert_int_equal(ses_tensor_rank(y), 1);
    for (int i = 0; i < 4; i++)
        sum += ((float *)ses_tensor_data(y))[i];
    assert_float_equal(sum, 1.0, 1e-6);
    assert_float_equal(((float *)ses_tensor_data(y))[3], exp(4.0) / (exp(1) + exp(2) + exp(3) + exp(4)),
                       1e-6);
    ses_tensor_release(x);
    ses_tensor_release(y);
    ses_session_destroy(s);
    ses_onnx_model_destroy(m);
    unbuild(&b);
}

/* At op set 18 the Reduce ops take axes as an input; a constant one becomes the attribute their
 * schemas read. x = [1, 2, 3, 4] reduced over axis 0, keepdims 1. */
static void reduce_axes_inputs_of_op_set_18_become_the_attribute(void **state) {
    static const char *const ops[] = {"ReduceMin", "ReduceL2", "ReduceLogSumExp",
                                      "ReduceSumSquare"};
    const double want[] = {1, sqrt(30.0), log(exp(1) + exp(2) + exp(3) + exp(4)), 30};
    static const float xs[4] = {1, 2, 3, 4};
    const int64_t four = 4;

    (void)state;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        char node[64];
        const char *nodes[2] = {"Constant:x:axes", node};
        built_t b;
        ses_onnx_model_t *m = NULL;
        ses_session_t *s = NULL;
        ses_tensor_t *x, *y = NULL;
        ses_feed_t feed;
        ses_edge_t out;
        Onnx__AttributeProto value, *value_ptr[1] = {&value};
        int64_t axes[1] = {0};

        snprintf(node, sizeof node, "%s:x,axes:y", ops[i]);
        build(&b, nodes, 2, "y");
        b.opset.version = 18;
        /* The Constant has no inputs: drop the one the spec string needed. */
        free(b.node_in[0][0]);
        b.nodes[0].n_input = 0;
        onnx__attribute_proto__init(&value);
        value.name = "value_ints";
        value.has_type = 1;
        value.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
        value.n_ints = 1;
        value.ints = axes;
        b.nodes[0].n_attribute = 1;
        b.nodes[0].attribute = value_ptr;
        if (import_built(&b, NULL, &m) != SES_OK)
            fail_msg("%s: %s", ops[i], ses_last_error());
        assert_int_equal(ses_tensor_create_from(SES_F32, 1, &four, xs, sizeof xs, &x), SES_OK);
        assert_int_equal(ses_session_open(ses_onnx_model_graph(m), NULL, 0, NULL, &s), SES_OK);
        feed.edge = ses_onnx_model_input(m, 0);
        feed.value = x;
        out = ses_onnx_model_output(m, 0);
        if (ses_session_eval(s, &out, 1, &feed, 1, NULL, 0, &y) != SES_OK)
            fail_msg("%s: %s", ops[i], ses_last_error());
        assert_int_equal(ses_tensor_rank(y), 1);
        assert_int_equal(ses_tensor_count(y), 1);
        assert_float_equal(((float *)ses_tensor_data(y))[0], want[i], 1e-5 * want[i]);
        ses_tensor_release(x);
        ses_tensor_release(y);
        ses_session_destroy(s);
        ses_onnx_model_destroy(m);
        unbuild(&b);
    }
}

/* DFT of op set 20 takes its axis as input 2, after a left-out dft_length (an empty constant
 * stands for it), and -2 when that is left out too (op set 17's attribute defaults to 1). Both
 * models are onesided transforms along axis 1 of [2,8,1], checked against numpy.fft.rfft. */
static void dft_of_op_set_20_takes_its_axis_as_an_input(void **state) {
    static const char *const models[] = {MODELS "/dft20", MODELS "/dft20_default_axis"};

    (void)state;
    for (size_t i = 0; i < 2; i++) {
        char path[512];
        ses_onnx_model_t *m = NULL;
        ses_session_t *s = NULL;
        ses_tensor_t *x = NULL, *want = NULL, *y = NULL;
        ses_feed_t feed;
        ses_edge_t out;

        snprintf(path, sizeof path, "%s/model.onnx", models[i]);
        if (ses_onnx_import_file(path, NULL, &m) != SES_OK)
            fail_msg("%s: %s", path, ses_last_error());
        assert_int_equal(ses_onnx_model_opset(m), 20);
        snprintf(path, sizeof path, "%s/input_0.npy", models[i]);
        assert_int_equal(ses_npy_read_file(path, &x), SES_OK);
        snprintf(path, sizeof path, "%s/expected_0.npy", models[i]);
        assert_int_equal(ses_npy_read_file(path, &want), SES_OK);
        assert_int_equal(ses_session_open(ses_onnx_model_graph(m), NULL, 0, NULL, &s), SES_OK);
        feed.edge = ses_onnx_model_input(m, 0);
        feed.value = x;
        out = ses_onnx_model_output(m, 0);
        if (ses_session_eval(s, &out, 1, &feed, 1, NULL, 0, &y) != SES_OK)
            fail_msg("%s: %s", models[i], ses_last_error());
        assert_int_equal(ses_tensor_count(y), ses_tensor_count(want));
        assert_int_equal(ses_tensor_count(y), 20);
        for (size_t k = 0; k < ses_tensor_count(want); k++)
            assert_float_equal(((float *)ses_tensor_data(y))[k],
                               ((float *)ses_tensor_data(want))[k], 1e-5);
        ses_tensor_release(x);
        ses_tensor_release(want);
        ses_tensor_release(y);
        ses_session_destroy(s);
        ses_onnx_model_destroy(m);
    }
}

/* ---- hostile models ----------------------------------------------------------------------- */

static void bytes_that_are_not_protobuf_are_refused(void **state) {
    static const char text[] = "this is not an ONNX model, just some text";
    ses_onnx_model_t *m = (ses_onnx_model_t *)0x1;

    (void)state;
    assert_int_equal(ses_onnx_import(text, sizeof text - 1, NULL, &m), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "not an ONNX protobuf file"));
    assert_null(m);
    assert_int_equal(ses_onnx_import(text, 0, NULL, &m), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "empty"));
    assert_int_equal(ses_onnx_import_file("/nonexistent/model.onnx", NULL, &m), SES_NOT_FOUND);
    assert_int_equal(ses_onnx_import_file(SOURCE_ROOT "/tests", NULL, &m), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "not a regular file"));
}

static void null_arguments_are_named(void **state) {
    ses_onnx_model_t *m = (ses_onnx_model_t *)0x1;
    ses_tensor_t *t = (ses_tensor_t *)0x1;
    ses_onnx_options_t o;

    (void)state;
    assert_int_equal(ses_onnx_import(NULL, 5, NULL, &m), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "data is NULL"));
    assert_null(m);
    assert_int_equal(ses_onnx_import("x", 1, NULL, NULL), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_onnx_import_file(NULL, NULL, &m), SES_INVALID_ARGUMENT);
    memset(&o, 0, sizeof o);
    assert_int_equal(ses_onnx_import("x", 1, &o, &m), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "ses_onnx_options_init"));
    assert_int_equal(ses_onnx_read_tensor(NULL, 3, &t), SES_INVALID_ARGUMENT);
    assert_null(t);
    assert_int_equal(ses_onnx_read_tensor_file(NULL, &t), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_npy_read(NULL, 3, &t), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_npy_read_file("/nonexistent.npy", &t), SES_NOT_FOUND);
    assert_int_equal(ses_npy_write_file(NULL, NULL), SES_INVALID_ARGUMENT);
    /* Accessors of a NULL model answer emptily. */
    assert_null(ses_onnx_model_graph(NULL));
    assert_int_equal(ses_onnx_model_input_count(NULL), 0);
    assert_null(ses_onnx_model_input_name(NULL, 0));
    assert_null(ses_onnx_model_input(NULL, 0).node);
    assert_int_equal(ses_onnx_model_input_dtype(NULL, 0), SES_DTYPE_INVALID);
    ses_onnx_model_destroy(NULL);
}

static void every_truncation_of_a_model_is_an_error(void **state) {
    size_t size, tried = 0;
    uint8_t *data = read_all(MODELS "/mlp/model.onnx", &size);

    (void)state;
    for (size_t n = 1; n < size; n += n < 400 ? 1 : 97) {
        ses_onnx_model_t *m = NULL;
        ses_status_t st = ses_onnx_import(data, n, NULL, &m);
        if (st == SES_OK)
            fail_msg("a model cut to %zu of %zu bytes was accepted", n, size);
        assert_null(m);
        tried++;
    }
    assert_true(tried > 1000);
    free(data);
}

static void absurd_dimensions_are_refused_before_allocating(void **state) {
    static const char *const nodes[] = {"Add:x,w:y"};
    built_t b;

    (void)state;
    build(&b, nodes, 1, "y");
    add_initializer(&b, INT64_C(1) << 40, INT64_C(1) << 40, 0);
    expect_error(&b, SES_INVALID_ARGUMENT, "initializer \"w\": more than 2147483648 elements");
    add_initializer(&b, -3, 0, 0);
    expect_error(&b, SES_INVALID_ARGUMENT, "initializer \"w\": dimension 0 is -3");
    /* Data that does not fill the shape. */
    add_initializer(&b, 8, 0, 1);
    expect_error(&b, SES_INVALID_ARGUMENT, "shape says 8 elements (32 bytes), the data holds 4");
    unbuild(&b);
}

static void a_cycle_and_an_undefined_value_are_named(void **state) {
    static const char *const cycle[] = {"Relu:b:a", "Relu:a:b"};
    static const char *const undefined[] = {"Add:x,nowhere:y"};
    built_t b;

    (void)state;
    build(&b, cycle, 2, "b");
    expect_error(&b, SES_INVALID_ARGUMENT, "input 0, \"b\", is not defined before it");
    unbuild(&b);
    build(&b, undefined, 1, "y");
    expect_error(&b, SES_INVALID_ARGUMENT, "\"nowhere\", is not defined before it");
    unbuild(&b);
    /* An output nothing produces. */
    build(&b, (const char *const[]){"Relu:x:r"}, 1, "missing");
    expect_error(&b, SES_INVALID_ARGUMENT, "graph output 0, \"missing\", is not produced");
    unbuild(&b);
}

static void unknown_ops_are_listed_together_with_their_op_set(void **state) {
    static const char *const nodes[] = {"Foo:x:a", "Relu:a:b", "Bar:b:c", "Foo:c:y"};
    built_t b;

    (void)state;
    build(&b, nodes, 4, "y");
    expect_error(&b, SES_UNIMPLEMENTED,
                 "the model uses 2 ops libsession does not have: Foo (opset 13), Bar (opset 13)");
    b.opset.version = 5;
    expect_error(&b, SES_UNIMPLEMENTED, "Foo (opset 5), Bar (opset 5)");
    unbuild(&b);
}

static void deep_nesting_is_refused_without_recursing(void **state) {
    const size_t levels = 200000;
    uint8_t *buf = malloc(levels * 6 + 16), *p;
    size_t len = 0, start = levels * 6 + 16;
    ses_onnx_model_t *m = NULL;
    ses_tensor_t *t = NULL;

    (void)state;
    assert_non_null(buf);
    /* From the inside out: each level is field 1, length-delimited, holding the level inside. */
    p = buf + start;
    for (size_t i = 0; i < levels; i++) {
        uint8_t varint[10];
        size_t n = 0, v = len;
        do {
            varint[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
            v >>= 7;
        } while (v);
        p -= n;
        memcpy(p, varint, n);
        *--p = 0x0a;
        len += n + 1;
    }
    assert_int_equal(ses_onnx_import(p, len, NULL, &m), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "nest deeper than 64 levels"));
    assert_int_equal(ses_onnx_read_tensor(p, len, &t), SES_INVALID_ARGUMENT);
    assert_null(t);
    free(buf);
}

static void limits_in_the_options_apply(void **state) {
    static const char *const nodes[] = {"Relu:x:a", "Relu:a:b", "Relu:b:y"};
    built_t b;
    ses_onnx_options_t o;
    ses_onnx_model_t *m = NULL;

    (void)state;
    build(&b, nodes, 3, "y");
    ses_onnx_options_init(&o);
    o.max_nodes = 2;
    assert_int_equal(import_built(&b, &o, &m), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "3 nodes; the limit is 2"));
    o.max_nodes = 0;
    assert_int_equal(import_built(&b, &o, &m), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "a limit in the options is 0"));
    ses_onnx_options_init(&o);
    o.max_bytes = 10;
    assert_int_equal(ses_onnx_import_file(MODELS "/mlp/model.onnx", &o, &m), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "more than the limit of 10"));
    unbuild(&b);
}

static void tensor_files_are_checked(void **state) {
    Onnx__TensorProto t;
    int64_t dims[1] = {3};
    uint8_t raw[12] = {0}, bytes[256];
    ses_tensor_t *out = NULL;
    size_t n;

    (void)state;
    onnx__tensor_proto__init(&t);
    t.has_data_type = 1;
    t.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    t.n_dims = 1;
    t.dims = dims;
    t.has_raw_data = 1;
    t.raw_data.data = raw;
    t.raw_data.len = 12;
    n = onnx__tensor_proto__pack(&t, bytes);
    assert_int_equal(ses_onnx_read_tensor(bytes, n, &out), SES_OK);
    assert_int_equal(ses_tensor_count(out), 3);
    ses_tensor_release(out);
    t.raw_data.len = 11;
    n = onnx__tensor_proto__pack(&t, bytes);
    assert_int_equal(ses_onnx_read_tensor(bytes, n, &out), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "the data holds 11 bytes"));
    t.raw_data.len = 12;
    /* STRING: the strings are in string_data, each UTF-8 without NUL bytes (issue #22). */
    t.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__STRING;
    n = onnx__tensor_proto__pack(&t, bytes);
    assert_int_equal(ses_onnx_read_tensor(bytes, n, &out), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "a STRING tensor with raw_data"));
    {
        ProtobufCBinaryData sd[3] = {{2, (uint8_t *)"ab"}, {0, NULL}, {2, (uint8_t *)"\xC3\xA9"}};
        const char *v = NULL;
        t.has_raw_data = 0;
        t.string_data = sd;
        t.n_string_data = 3;
        n = onnx__tensor_proto__pack(&t, bytes);
        assert_int_equal(ses_onnx_read_tensor(bytes, n, &out), SES_OK);
        assert_int_equal(ses_tensor_dtype(out), SES_STRING);
        assert_int_equal(ses_tensor_string(out, 2, &v), SES_OK);
        assert_string_equal(v, "\xC3\xA9");
        assert_int_equal(ses_tensor_string(out, 1, &v), SES_OK);
        assert_string_equal(v, "");
        ses_tensor_release(out);
        sd[2].data = (uint8_t *)"\xC3(";
        n = onnx__tensor_proto__pack(&t, bytes);
        assert_int_equal(ses_onnx_read_tensor(bytes, n, &out), SES_INVALID_ARGUMENT);
        assert_non_null(strstr(ses_last_error(), "string 2 is not valid UTF-8"));
        sd[2].data = (uint8_t *)"a\0";
        n = onnx__tensor_proto__pack(&t, bytes);
        assert_int_equal(ses_onnx_read_tensor(bytes, n, &out), SES_UNIMPLEMENTED);
        assert_non_null(strstr(ses_last_error(), "string 2 holds a NUL byte"));
        t.n_string_data = 2;
        n = onnx__tensor_proto__pack(&t, bytes);
        assert_int_equal(ses_onnx_read_tensor(bytes, n, &out), SES_INVALID_ARGUMENT);
        assert_non_null(strstr(ses_last_error(), "the data holds 2 strings"));
        t.string_data = NULL;
        t.n_string_data = 0;
        t.has_raw_data = 1;
    }
    t.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    t.has_data_location = 1;
    t.data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    n = onnx__tensor_proto__pack(&t, bytes);
    assert_int_equal(ses_onnx_read_tensor(bytes, n, &out), SES_UNIMPLEMENTED);
    assert_non_null(strstr(ses_last_error(), "external"));
    assert_null(out);
}

/* ---- .npy --------------------------------------------------------------------------------- */

static void npy_round_trips_and_refuses_broken_headers(void **state) {
    static const ses_dtype_t dtypes[] = {SES_F32, SES_F64, SES_I8,  SES_I16, SES_I32, SES_I64,
                                         SES_U8,  SES_U16, SES_U32, SES_U64, SES_BOOL, SES_F16};
    const int64_t dims[3] = {2, 1, 3};
    char path[] = "/tmp/ses-npy-XXXXXX";
    int fd = mkstemp(path);
    ses_tensor_t *t, *back = NULL;
    static const char bad_magic[] = "\x93NUMPX\x01\x00\x10\x00{'descr': '<f4'}";
    static const char big_endian[] = "\x93NUMPY\x01\x00\x3c\x00{'descr': '>f4', "
                                     "'fortran_order': False, 'shape': (1,), }  \n\x00\x00\x80\x3f";

    (void)state;
    assert_true(fd >= 0);
    close(fd);
    for (size_t k = 0; k < sizeof dtypes / sizeof dtypes[0]; k++) {
        assert_int_equal(ses_tensor_create(dtypes[k], 3, dims, &t), SES_OK);
        for (size_t i = 0; i < ses_tensor_bytes(t); i++)
            ((uint8_t *)ses_tensor_data(t))[i] = dtypes[k] == SES_BOOL ? (uint8_t)(i & 1) : (uint8_t)(i * 7);
        assert_int_equal(ses_npy_write_file(path, t), SES_OK);
        assert_int_equal(ses_npy_read_file(path, &back), SES_OK);
        assert_int_equal(ses_tensor_dtype(back), dtypes[k]);
        assert_int_equal(ses_tensor_rank(back), 3);
        assert_memory_equal(ses_tensor_dims(back), dims, sizeof dims);
        assert_memory_equal(ses_tensor_data(back), ses_tensor_data(t), ses_tensor_bytes(t));
        ses_tensor_release(t);
        ses_tensor_release(back);
        back = NULL;
    }
    unlink(path);
    assert_int_equal(ses_npy_read(bad_magic, sizeof bad_magic - 1, &back), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "magic"));
    assert_int_equal(ses_npy_read(big_endian, sizeof big_endian - 1, &back), SES_UNIMPLEMENTED);
    assert_non_null(strstr(ses_last_error(), "'>f4' is not supported"));
    assert_null(back);
    /* The committed input, cut short, is an error. */
    {
        size_t size;
        uint8_t *data = read_all(MODELS "/mlp/input_0.npy", &size);
        assert_int_equal(ses_npy_read(data, size - 1, &back), SES_INVALID_ARGUMENT);
        assert_non_null(strstr(ses_last_error(), "the shape needs 12544 bytes of data"));
        for (size_t n = 0; n < 140; n++)
            assert_int_not_equal(ses_npy_read(data, n, &back), SES_OK);
        free(data);
    }
}

/*
 * A model file with initializers of megabytes is mapped and its pages given back while
 * protobuf-c copies the weights out (onnx_import.c's dropper): every initializer still holds its
 * own bytes: the graph's output is b's Identity, with a and c before and after it in the file.
 */
static void large_initializers_read_from_a_file_keep_their_values(void **state) {
    enum { N = 400000 }; /* 1.6 MB each, above the 1 MB from which pages are given back */
    static const char *const nodes[] = {"Identity:b:y"};
    const char *names[3] = {"a", "b", "c"};
    Onnx__TensorProto inits[3], *init_ptrs[3];
    int64_t dims[3][1] = {{N}, {N}, {N}};
    float *data[3];
    char path[] = "/tmp/ses_onnx_large_XXXXXX";
    ses_onnx_model_t *m = NULL;
    ses_session_t *s = NULL;
    built_t b;

    (void)state;
    build(&b, nodes, 1, "y");
    for (int k = 0; k < 3; k++) {
        data[k] = malloc(N * sizeof(float));
        assert_non_null(data[k]);
        for (int i = 0; i < N; i++)
            data[k][i] = (float)(k * 1000003 + i) * 0.25f;
        onnx__tensor_proto__init(&inits[k]);
        inits[k].name = (char *)names[k];
        inits[k].has_data_type = 1;
        inits[k].data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
        inits[k].n_dims = 1;
        inits[k].dims = dims[k];
        inits[k].has_raw_data = 1;
        inits[k].raw_data.len = N * sizeof(float);
        inits[k].raw_data.data = (uint8_t *)data[k];
        init_ptrs[k] = &inits[k];
    }
    b.graph.n_initializer = 3;
    b.graph.initializer = init_ptrs;
    const size_t size = onnx__model_proto__get_packed_size(&b.model);
    uint8_t *bytes = malloc(size);
    assert_non_null(bytes);
    onnx__model_proto__pack(&b.model, bytes);
    const int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, bytes, size), (ssize_t)size);
    close(fd);
    free(bytes);

    assert_int_equal(ses_onnx_import_file(path, NULL, &m), SES_OK);
    unlink(path);
    assert_int_equal(ses_session_open(ses_onnx_model_graph(m), NULL, 0, NULL, &s), SES_OK);
    ses_edge_t out = ses_onnx_model_output(m, 0);
    ses_tensor_t *y = NULL;
    assert_int_equal(ses_session_eval(s, &out, 1, NULL, 0, NULL, 0, &y), SES_OK);
    assert_int_equal(ses_tensor_count(y), N);
    assert_memory_equal(ses_tensor_data(y), data[1], N * sizeof(float));
    ses_tensor_release(y);
    ses_session_destroy(s);
    ses_onnx_model_destroy(m);
    for (int k = 0; k < 3; k++)
        free(data[k]);
    unbuild(&b);
}

/* Pad of op sets 1 and 2 carries pads (op set 1: paddings) and value as attributes, which the
 * importer makes the op-set-11 inputs: x [4] padded by 1 before and 2 after with 7. */
static void an_old_pad_takes_its_attributes_as_inputs(void **state) {
    static const char *const nodes[] = {"Pad:x:y"};
    int64_t pads[2] = {1, 2};
    Onnx__AttributeProto attr_pads, attr_value, *attrs[2] = {&attr_pads, &attr_value};
    const float x[4] = {1, 2, 3, 4}, want[7] = {7, 1, 2, 3, 4, 7, 7};
    const int64_t xd[1] = {4};
    ses_onnx_model_t *m = NULL;
    ses_session_t *s = NULL;
    ses_tensor_t *xt = NULL, *y = NULL;
    built_t b;

    (void)state;
    for (int version = 1; version <= 2; version++) {
        build(&b, nodes, 1, "y");
        b.opset.version = version;
        onnx__attribute_proto__init(&attr_pads);
        attr_pads.name = version == 1 ? "paddings" : "pads";
        attr_pads.has_type = 1;
        attr_pads.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
        attr_pads.n_ints = 2;
        attr_pads.ints = pads;
        onnx__attribute_proto__init(&attr_value);
        attr_value.name = "value";
        attr_value.has_type = 1;
        attr_value.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
        attr_value.has_f = 1;
        attr_value.f = 7.0f;
        b.nodes[0].n_attribute = 2;
        b.nodes[0].attribute = attrs;
        assert_int_equal(import_built(&b, NULL, &m), SES_OK);
        assert_int_equal(ses_session_open(ses_onnx_model_graph(m), NULL, 0, NULL, &s), SES_OK);
        assert_int_equal(ses_tensor_create_from(SES_F32, 1, xd, x, sizeof x, &xt), SES_OK);
        const ses_feed_t feed = {ses_onnx_model_input(m, 0), xt};
        const ses_edge_t out = ses_onnx_model_output(m, 0);
        assert_int_equal(ses_session_eval(s, &out, 1, &feed, 1, NULL, 0, &y), SES_OK);
        assert_int_equal(ses_tensor_count(y), 7);
        assert_memory_equal(ses_tensor_data(y), want, sizeof want);
        ses_tensor_release(y);
        ses_tensor_release(xt);
        ses_session_destroy(s);
        ses_onnx_model_destroy(m);
        unbuild(&b);
    }
}

/* g-dtypes: Clip's min left out ("") before a given max imports (an empty constant stands in for
 * it, which Clip takes for absent), as ONNX's test_clip_default_*_max do; other ops still refuse
 * a middle input left out, naming it. */
static void a_middle_optional_input_left_out_imports_for_clip(void **state) {
    static const char *const nodes[] = {"Clip:x,w:y"};
    char *clip_in[3] = {"x", "", "w"};
    const float x[4] = {1, 2, 3, 4}, want[4] = {1, 2, 2.5f, 2.5f};
    const int64_t xd[1] = {4};
    ses_onnx_model_t *m = NULL;
    ses_session_t *s = NULL;
    ses_tensor_t *xt = NULL, *y = NULL;
    built_t b;

    (void)state;
    build(&b, nodes, 1, "y");
    add_initializer(&b, 1, 0, 0);
    b.init.n_dims = 0; /* a scalar max of 2.5 */
    b.init_data[0] = 2.5f;
    b.init.n_float_data = 1;
    b.init.float_data = b.init_data;
    b.nodes[0].input = clip_in;
    b.nodes[0].n_input = 3;
    if (import_built(&b, NULL, &m) != SES_OK)
        fail_msg("import: %s", ses_last_error());
    assert_int_equal(ses_session_open(ses_onnx_model_graph(m), NULL, 0, NULL, &s), SES_OK);
    assert_int_equal(ses_tensor_create_from(SES_F32, 1, xd, x, sizeof x, &xt), SES_OK);
    const ses_feed_t feed = {ses_onnx_model_input(m, 0), xt};
    const ses_edge_t out = ses_onnx_model_output(m, 0);
    if (ses_session_eval(s, &out, 1, &feed, 1, NULL, 0, &y) != SES_OK)
        fail_msg("eval: %s", ses_last_error());
    assert_memory_equal(ses_tensor_data(y), want, sizeof want);
    ses_tensor_release(y);
    ses_tensor_release(xt);
    ses_session_destroy(s);
    ses_onnx_model_destroy(m);

    /* Gemm's C is its last input; an op whose middle input is left out is still refused. */
    free(b.nodes[0].op_type);
    b.nodes[0].op_type = strdup("Gemm");
    expect_error(&b, SES_UNIMPLEMENTED, "input 1 is left out but a later one is given");
    b.nodes[0].input = b.node_in[0];
    b.nodes[0].n_input = 2;
    unbuild(&b);
}

/* The mapped file path refuses an empty file and a truncated one as the in-memory path does, and
 * a tensor file likewise. */
static void empty_and_truncated_files_are_refused(void **state) {
    static const char *const nodes[] = {"Relu:x:y"};
    char path[] = "/tmp/ses_onnx_cut_XXXXXX";
    ses_onnx_model_t *m = (ses_onnx_model_t *)0x1;
    ses_tensor_t *t = (ses_tensor_t *)0x1;
    built_t b;

    (void)state;
    const int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(ses_onnx_import_file(path, NULL, &m), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "empty"));
    assert_null(m);
    assert_int_equal(ses_onnx_read_tensor_file(path, &t), SES_INVALID_ARGUMENT);
    assert_null(t);

    build(&b, nodes, 1, "y");
    const size_t size = onnx__model_proto__get_packed_size(&b.model);
    uint8_t *bytes = malloc(size);
    assert_non_null(bytes);
    onnx__model_proto__pack(&b.model, bytes);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, size / 2, f), size / 2);
    fclose(f);
    m = (ses_onnx_model_t *)0x1;
    assert_int_equal(ses_onnx_import_file(path, NULL, &m), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), path));
    assert_null(m);
    unlink(path);
    free(bytes);
    unbuild(&b);
}

static size_t x_bytes(size_t rank, const int64_t *dims) {
    size_t n = sizeof(float);
    for (size_t d = 0; d < rank; d++)
        n *= (size_t)dims[d];
    return n;
}

/* g-convfam: the broadcasting of op sets before 7. Evaluates the imported model with x fed
 * (@p xd, @p x) and compares y with @p want (@p n values). */
static void run_old_model(built_t *b, size_t rank, const int64_t *xd, const float *x,
                          const float *want, size_t n) {
    ses_onnx_model_t *m = NULL;
    ses_session_t *s = NULL;
    ses_tensor_t *xt = NULL, *y = NULL;

    if (import_built(b, NULL, &m) != SES_OK)
        fail_msg("import: %s", ses_last_error());
    assert_int_equal(ses_session_open(ses_onnx_model_graph(m), NULL, 0, NULL, &s), SES_OK);
    assert_int_equal(ses_tensor_create_from(SES_F32, rank, xd, x, x_bytes(rank, xd), &xt), SES_OK);
    const ses_feed_t feed = {ses_onnx_model_input(m, 0), xt};
    const ses_edge_t out = ses_onnx_model_output(m, 0);
    if (ses_session_eval(s, &out, 1, &feed, 1, NULL, 0, &y) != SES_OK)
        fail_msg("eval: %s", ses_last_error());
    assert_int_equal(ses_tensor_count(y), n);
    assert_memory_equal(ses_tensor_data(y), want, n * sizeof *want);
    ses_tensor_release(y);
    ses_tensor_release(xt);
    ses_session_destroy(s);
    ses_onnx_model_destroy(m);
}

/* Add with broadcast=1 and axis=0 (op set 6): B [2] matches A [2,2] along axis 0, where numpy
 * would match it along axis 1; without axis B matches the trailing dims (numpy's rule). An
 * A of unknown rank cannot be aligned and is named. */
static void old_broadcast_aligns_b_at_axis(void **state) {
    static const char *const nodes[] = {"Add:w,x:y"};
    static const char *const relu_nodes[] = {"Relu:w:r", "Add:r,x:y"};
    Onnx__AttributeProto bc, axis, *attrs[2] = {&bc, &axis};
    const float x[2] = {10, 20}, at_axis0[4] = {11, 12, 23, 24}, trailing[4] = {11, 22, 13, 24};
    const int64_t xd[1] = {2};
    built_t b;

    (void)state;
    onnx__attribute_proto__init(&bc);
    bc.name = "broadcast";
    bc.has_type = 1;
    bc.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    bc.has_i = 1;
    bc.i = 1;
    onnx__attribute_proto__init(&axis);
    axis.name = "axis";
    axis.has_type = 1;
    axis.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    axis.has_i = 1;
    axis.i = 0;
    for (size_t n_attrs = 1; n_attrs <= 2; n_attrs++) {
        build(&b, nodes, 1, "y");
        b.opset.version = 6;
        b.dim.dim_value = 2;
        add_initializer(&b, 2, 2, 1);
        b.nodes[0].n_attribute = n_attrs;
        b.nodes[0].attribute = attrs;
        run_old_model(&b, 1, xd, x, n_attrs == 2 ? at_axis0 : trailing, 4);
        unbuild(&b);
    }
    build(&b, relu_nodes, 2, "y");
    b.opset.version = 6;
    b.dim.dim_value = 2;
    add_initializer(&b, 2, 2, 1);
    b.nodes[1].n_attribute = 2;
    b.nodes[1].attribute = attrs;
    expect_error(&b, SES_UNIMPLEMENTED, "does not give the rank of r");
    unbuild(&b);
}

/* PRelu of op set 6 with a slope per channel: slope [2] against x [1,2,2] broadcasts along axis
 * 1 (numpy's rule would take it along the last axis). */
static void old_prelu_takes_its_slope_per_channel(void **state) {
    static const char *const nodes[] = {"PRelu:x,w:y"};
    Onnx__TensorShapeProto__Dimension dims[3], *dim_ptrs[3];
    const float x[4] = {-1, -1, -1, -1}, want[4] = {-1, -1, -2, -2};
    const int64_t xd[3] = {1, 2, 2};
    built_t b;

    (void)state;
    build(&b, nodes, 1, "y");
    b.opset.version = 6;
    for (int d = 0; d < 3; d++) {
        onnx__tensor_shape_proto__dimension__init(&dims[d]);
        dims[d].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        dims[d].dim_value = xd[d];
        dim_ptrs[d] = &dims[d];
    }
    b.shape.n_dim = 3;
    b.shape.dim = dim_ptrs;
    add_initializer(&b, 2, 0, 1);
    b.init.n_float_data = 2;
    run_old_model(&b, 3, xd, x, want, 4);
    unbuild(&b);
}

/* group g-resize: Upsample of op set 7 carries its scales as an attribute; the importer makes it
 * Resize with asymmetric coordinates, nearest taking the floor: x [4] scaled by 2 (mode
 * "bilinear", op set 1's name, is linear). */
static void an_upsample_of_op_set_7_is_resize_with_asymmetric_coordinates(void **state) {
    static const char *const nodes[] = {"Upsample:x:y"};
    const float scales[1] = {2.0f};
    Onnx__AttributeProto attr_scales, attr_mode, *attrs[2] = {&attr_scales, &attr_mode};
    const float x[4] = {1, 2, 3, 4};
    const float want_nearest[8] = {1, 1, 2, 2, 3, 3, 4, 4};
    const float want_linear[8] = {1, 1.5f, 2, 2.5f, 3, 3.5f, 4, 4};
    const int64_t xd[1] = {4};
    ses_onnx_model_t *m = NULL;
    ses_session_t *s = NULL;
    ses_tensor_t *xt = NULL, *y = NULL;
    built_t b;

    (void)state;
    /* nearest, linear, and linear as op set 1 named it */
    for (int linear = 0; linear <= 2; linear++) {
        build(&b, nodes, 1, "y");
        b.opset.version = 7;
        onnx__attribute_proto__init(&attr_scales);
        attr_scales.name = "scales";
        attr_scales.has_type = 1;
        attr_scales.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
        attr_scales.n_floats = 1;
        attr_scales.floats = (float *)scales;
        onnx__attribute_proto__init(&attr_mode);
        attr_mode.name = "mode";
        attr_mode.has_type = 1;
        attr_mode.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
        attr_mode.has_s = 1;
        attr_mode.s.data = (uint8_t *)(linear == 2 ? "bilinear" : linear ? "linear" : "nearest");
        attr_mode.s.len = strlen((const char *)attr_mode.s.data);
        b.nodes[0].n_attribute = 2;
        b.nodes[0].attribute = attrs;
        assert_int_equal(import_built(&b, NULL, &m), SES_OK);
        assert_int_equal(ses_session_open(ses_onnx_model_graph(m), NULL, 0, NULL, &s), SES_OK);
        assert_int_equal(ses_tensor_create_from(SES_F32, 1, xd, x, sizeof x, &xt), SES_OK);
        const ses_feed_t feed = {ses_onnx_model_input(m, 0), xt};
        const ses_edge_t out = ses_onnx_model_output(m, 0);
        if (ses_session_eval(s, &out, 1, &feed, 1, NULL, 0, &y) != SES_OK)
            fail_msg("eval: %s", ses_last_error());
        assert_int_equal(ses_tensor_count(y), 8);
        assert_memory_equal(ses_tensor_data(y), linear ? want_linear : want_nearest,
                            sizeof want_nearest);
        ses_tensor_release(y);
        ses_tensor_release(xt);
        ses_session_destroy(s);
        ses_onnx_model_destroy(m);
        unbuild(&b);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_mlp_matches_numpy),
        cmocka_unit_test(an_old_softmax_flattens_at_its_axis),
        cmocka_unit_test(reduce_axes_inputs_of_op_set_18_become_the_attribute),
        cmocka_unit_test(dft_of_op_set_20_takes_its_axis_as_an_input),
        cmocka_unit_test(bytes_that_are_not_protobuf_are_refused),
        cmocka_unit_test(null_arguments_are_named),
        cmocka_unit_test(every_truncation_of_a_model_is_an_error),
        cmocka_unit_test(absurd_dimensions_are_refused_before_allocating),
        cmocka_unit_test(a_cycle_and_an_undefined_value_are_named),
        cmocka_unit_test(unknown_ops_are_listed_together_with_their_op_set),
        cmocka_unit_test(deep_nesting_is_refused_without_recursing),
        cmocka_unit_test(limits_in_the_options_apply),
        cmocka_unit_test(tensor_files_are_checked),
        cmocka_unit_test(npy_round_trips_and_refuses_broken_headers),
        cmocka_unit_test(large_initializers_read_from_a_file_keep_their_values),
        cmocka_unit_test(an_old_pad_takes_its_attributes_as_inputs),
        cmocka_unit_test(an_upsample_of_op_set_7_is_resize_with_asymmetric_coordinates),
        cmocka_unit_test(a_middle_optional_input_left_out_imports_for_clip),
        cmocka_unit_test(empty_and_truncated_files_are_refused),
        cmocka_unit_test(old_broadcast_aligns_b_at_axis),
        cmocka_unit_test(old_prelu_takes_its_slope_per_channel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
