/*
 * State that lives on its device (issue #19), on whatever device RESIDENCY_DEVICE names (the
 * meson tests: opencl:0 on PoCL, cuda:0 on the CUDA emulator): after the first run, a plan moves
 * only its feeds in and its fetches out, for an inference graph with constant weights and for a
 * training step of the seeds' 784-256-10 network; and every way the host reads or writes the
 * variables sees the device's current values. Skips (77) when the device is absent.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <session/npy.h>
#include <session/onnx.h>
#include <session/session.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

enum { BATCH = 8, PIXELS = 784, HIDDEN = 256, CLASSES = 10 };

static const char *device;

typedef struct net {
    ses_graph_t *g;
    ses_edge_t x, labels, loss;
    ses_node_t *train;
} net_t;

static void build(net_t *n) {
    const int64_t x_dims[] = {-1, PIXELS}, y_dims[] = {-1};
    ses_edge_t h, logits;
    ses_optimizer_t o;

    memset(n, 0, sizeof *n);
    assert_int_equal(ses_graph_create(&n->g), SES_OK);
    assert_int_equal(ses_graph_placeholder(n->g, "x", SES_F32, 2, x_dims, &n->x), SES_OK);
    assert_int_equal(ses_graph_placeholder(n->g, "labels", SES_I64, 1, y_dims, &n->labels),
                     SES_OK);
    assert_int_equal(ses_fc(n->g, "fc1", n->x, HIDDEN, SES_ACTIVATION_SIGMOID, 1, &h), SES_OK);
    assert_int_equal(ses_fc(n->g, "fc2", h, CLASSES, SES_ACTIVATION_NONE, 2, &logits), SES_OK);
    assert_int_equal(ses_softmax_cross_entropy(n->g, "loss", logits, n->labels,
                                               SES_REDUCTION_MEAN, &n->loss),
                     SES_OK);
    ses_optimizer_sgd(&o, 0.1);
    assert_int_equal(ses_minimize(n->g, "train", n->loss, &o, NULL, 0, &n->train), SES_OK);
}

static ses_session_t *open_on(ses_graph_t *g, const char *name) {
    ses_session_options_t options;
    ses_session_t *s = NULL;

    ses_session_options_init(&options);
    options.fallback = SES_FALLBACK_ALLOW;
    options.log_level = 0;
    if (ses_session_open(g, &name, 1, &options, &s) != SES_OK)
        fail_msg("open %s: %s", name, ses_last_error());
    return s;
}

static void batch(ses_tensor_t **x, ses_tensor_t **y, int seed) {
    const int64_t x_dims[] = {BATCH, PIXELS}, y_dims[] = {BATCH};
    float *xv;
    int64_t *yv;

    assert_int_equal(ses_tensor_create(SES_F32, 2, x_dims, x), SES_OK);
    assert_int_equal(ses_tensor_create(SES_I64, 1, y_dims, y), SES_OK);
    xv = ses_tensor_data(*x);
    yv = ses_tensor_data(*y);
    for (int i = 0; i < BATCH * PIXELS; i++)
        xv[i] = (float)((i * 7 + seed * 13) % 29) / 29.0f;
    for (int i = 0; i < BATCH; i++)
        yv[i] = (i + seed) % CLASSES;
}

static float read_float(ses_scope_t *scope, const char *name, size_t index) {
    ses_tensor_t *t = NULL;
    float v;

    if (ses_scope_find(scope, name, &t) != SES_OK)
        fail_msg("%s: %s", name, ses_last_error());
    v = ((float *)ses_tensor_data(t))[index];
    ses_tensor_release(t);
    return v;
}

/* Inference: constant weights stay on the device; runs 2..N move the input and the output. */
static void an_inference_plan_moves_only_its_feed_and_fetch(void **state) {
    const int64_t wd[] = {PIXELS, HIDDEN}, xd[] = {BATCH, PIXELS};
    ses_graph_t *g = NULL;
    ses_session_t *s;
    ses_plan_t *plan = NULL;
    ses_tensor_t *w = NULL, *x = NULL, *y = NULL;
    ses_edge_t wc, xp, in[2], out;
    ses_transfer_stats_t first = {sizeof first, 0, 0, 0, 0, 0, 0, 0}, last = first;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_tensor_create(SES_F32, 2, wd, &w), SES_OK);
    for (size_t i = 0; i < (size_t)PIXELS * HIDDEN; i++)
        ((float *)ses_tensor_data(w))[i] = (float)(i % 5) * 0.25f;
    assert_int_equal(ses_graph_constant(g, "w", w, &wc), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 2, xd, &xp), SES_OK);
    in[0] = xp;
    in[1] = wc;
    assert_int_equal(ses_graph_op(g, "MatMul", "y", in, 2, NULL, 0, &out), SES_OK);
    s = open_on(g, device);
    assert_int_equal(ses_session_compile(s, &out, 1, &xp, 1, NULL, 0, &plan), SES_OK);
    assert_string_equal(ses_plan_node_device(plan, out.node), device);
    assert_int_equal(ses_tensor_create(SES_F32, 2, xd, &x), SES_OK);
    for (size_t i = 0; i < (size_t)BATCH * PIXELS; i++)
        ((float *)ses_tensor_data(x))[i] = 1.0f;
    for (int r = 0; r < 4; r++) {
        assert_int_equal(ses_plan_run(plan, &x, 1, &y), SES_OK);
        /* Column 0 sums (i % 5) / 4 over the 784 rows: 156 * 2.5 + 1.5. */
        assert_true(fabsf(((float *)ses_tensor_data(y))[0] - 391.5f) < 1e-2f);
        ses_tensor_release(y);
        if (r == 0)
            assert_int_equal(ses_plan_transfers(plan, &first), SES_OK);
    }
    assert_int_equal(ses_plan_transfers(plan, &last), SES_OK);
    assert_int_equal(last.h2d_bytes - first.h2d_bytes, 3 * BATCH * PIXELS * 4);
    assert_int_equal(last.h2d_copies - first.h2d_copies, 3);
    assert_int_equal(last.d2h_bytes - first.d2h_bytes, 3 * BATCH * HIDDEN * 4);
    assert_int_equal(last.d2h_copies - first.d2h_copies, 3);
    ses_session_destroy(s);
    ses_tensor_release(w);
    ses_tensor_release(x);
    ses_graph_release(g);
}

/* The committed ONNX MLP (tests/onnx/models/mlp: 784-32-10, batch 4): its initializers stay on
 * the device; runs 2..N move the input (4x784 f32) in and the output (4x10 f32) out. */
static void the_onnx_mlp_moves_only_its_input_and_output(void **state) {
    ses_onnx_model_t *model = NULL;
    ses_session_t *s;
    ses_plan_t *plan = NULL;
    ses_tensor_t *x = NULL, *y = NULL, *expected = NULL;
    ses_edge_t in, out;
    ses_transfer_stats_t first = {sizeof first, 0, 0, 0, 0, 0, 0, 0}, last = first;
    ses_status_t st;

    (void)state;
    st = ses_onnx_import_file(SOURCE_ROOT "/tests/onnx/models/mlp/model.onnx", NULL, &model);
    if (st == SES_UNIMPLEMENTED)
        skip(); /* built without ONNX import */
    assert_int_equal(st, SES_OK);
    assert_int_equal(ses_npy_read_file(SOURCE_ROOT "/tests/onnx/models/mlp/input_0.npy", &x),
                     SES_OK);
    assert_int_equal(
        ses_npy_read_file(SOURCE_ROOT "/tests/onnx/models/mlp/expected_0.npy", &expected), SES_OK);
    in = ses_onnx_model_input(model, 0);
    out = ses_onnx_model_output(model, 0);
    s = open_on(ses_onnx_model_graph(model), device);
    assert_int_equal(ses_session_compile(s, &out, 1, &in, 1, NULL, 0, &plan), SES_OK);
    for (int r = 0; r < 4; r++) {
        assert_int_equal(ses_plan_run(plan, &x, 1, &y), SES_OK);
        for (size_t i = 0; i < ses_tensor_count(y); i++)
            assert_true(fabsf(((float *)ses_tensor_data(y))[i] -
                              ((float *)ses_tensor_data(expected))[i]) < 1e-5f);
        ses_tensor_release(y);
        if (r == 0)
            assert_int_equal(ses_plan_transfers(plan, &first), SES_OK);
    }
    assert_int_equal(ses_plan_transfers(plan, &last), SES_OK);
    assert_int_equal(last.h2d_bytes - first.h2d_bytes, 3 * 4 * 784 * 4);
    assert_int_equal(last.h2d_copies - first.h2d_copies, 3);
    assert_int_equal(last.d2h_bytes - first.d2h_bytes, 3 * 4 * 10 * 4);
    assert_int_equal(last.d2h_copies - first.d2h_copies, 3);
    ses_session_destroy(s);
    ses_onnx_model_destroy(model);
    ses_tensor_release(x);
    ses_tensor_release(expected);
}

/* Training: no variable byte crosses per step; the host still reads current values, and its
 * writes reach the device. The same steps on the CPU give the same weights. */
static void a_training_step_moves_no_variable_byte(void **state) {
    net_t n;
    ses_session_t *s, *cpu;
    ses_plan_t *plan = NULL, *cpu_plan = NULL;
    ses_edge_t fed[2];
    ses_tensor_t *x = NULL, *y = NULL, *loss = NULL, *values[2];
    ses_transfer_stats_t first = {sizeof first, 0, 0, 0, 0, 0, 0, 0}, last = first;
    char dir[] = "/tmp/residency-XXXXXX", path[64];
    float w_dev, w_cpu;

    (void)state;
    build(&n);
    s = open_on(n.g, device);
    cpu = open_on(n.g, "cpu");
    fed[0] = n.x;
    fed[1] = n.labels;
    batch(&x, &y, 1);
    values[0] = x;
    values[1] = y;
    assert_int_equal(ses_session_compile(s, &n.loss, 1, fed, 2, &n.train, 1, &plan), SES_OK);
    assert_int_equal(ses_session_compile(cpu, &n.loss, 1, fed, 2, &n.train, 1, &cpu_plan), SES_OK);
    assert_int_equal(ses_session_copy_variables(cpu, s), SES_OK);
    for (int step = 0; step < 5; step++) {
        assert_int_equal(ses_plan_run(plan, values, 2, &loss), SES_OK);
        ses_tensor_release(loss);
        assert_int_equal(ses_plan_run(cpu_plan, values, 2, &loss), SES_OK);
        ses_tensor_release(loss);
        if (step == 0)
            assert_int_equal(ses_plan_transfers(plan, &first), SES_OK);
    }
    assert_int_equal(ses_plan_transfers(plan, &last), SES_OK);
    /* Steps 2 to 5 moved x and the labels in and the loss out, nothing else. */
    assert_int_equal(last.h2d_bytes - first.h2d_bytes, 4 * (BATCH * PIXELS * 4 + BATCH * 8));
    assert_int_equal(last.d2h_bytes - first.d2h_bytes, 4 * 4);

    /* ses_scope_find reads the device's current weights: those the CPU computed. */
    w_dev = read_float(ses_session_scope(s), "fc1/W", 3);
    w_cpu = read_float(ses_session_scope(cpu), "fc1/W", 3);
    assert_true(fabsf(w_dev - w_cpu) < 1e-4f);
    w_dev = read_float(ses_session_scope(s), "fc2/b", 1);
    w_cpu = read_float(ses_session_scope(cpu), "fc2/b", 1);
    assert_true(fabsf(w_dev - w_cpu) < 1e-4f);

    /* One more step each; save on the device, restore into the CPU: the same file. */
    assert_int_equal(ses_plan_run(plan, values, 2, &loss), SES_OK);
    ses_tensor_release(loss);
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/w.safetensors", dir);
    assert_int_equal(ses_session_save(s, path, 6), SES_OK);
    assert_int_equal(ses_session_restore(cpu, path, 0, NULL), SES_OK);
    assert_true(fabsf(read_float(ses_session_scope(cpu), "fc1/W", 3) -
                      read_float(ses_session_scope(s), "fc1/W", 3)) < 1e-6f);

    /* A host write (restore of an older file, here into the device's session) is what the next
     * device step starts from: both sessions restored alike train alike. */
    assert_int_equal(ses_session_restore(s, path, 0, NULL), SES_OK);
    assert_int_equal(ses_plan_run(plan, values, 2, &loss), SES_OK);
    ses_tensor_release(loss);
    assert_int_equal(ses_plan_run(cpu_plan, values, 2, &loss), SES_OK);
    ses_tensor_release(loss);
    assert_true(fabsf(read_float(ses_session_scope(s), "fc1/W", 3) -
                      read_float(ses_session_scope(cpu), "fc1/W", 3)) < 1e-4f);

    /* A step in a private scope updates its own copies on the device, never the session's. */
    {
        ses_eval_options_t private_eval = {.struct_size = sizeof private_eval, .private_scope = 1};
        ses_feed_t feeds[2] = {{n.x, x}, {n.labels, y}};
        const float w_before = read_float(ses_session_scope(s), "fc1/W", 3);
        assert_int_equal(ses_session_eval_ex(s, &n.loss, 1, feeds, 2, &n.train, 1,
                                             &private_eval, &loss),
                         SES_OK);
        ses_tensor_release(loss);
        assert_true(read_float(ses_session_scope(s), "fc1/W", 3) == w_before);
    }

    /* copy_variables takes the device's values too. */
    assert_int_equal(ses_plan_run(plan, values, 2, &loss), SES_OK);
    ses_tensor_release(loss);
    assert_int_equal(ses_session_copy_variables(cpu, s), SES_OK);
    assert_true(read_float(ses_session_scope(cpu), "fc2/W", 7) ==
                read_float(ses_session_scope(s), "fc2/W", 7));

    unlink(path);
    rmdir(dir);
    ses_session_destroy(s);
    ses_session_destroy(cpu);
    ses_tensor_release(x);
    ses_tensor_release(y);
    ses_graph_release(n.g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_inference_plan_moves_only_its_feed_and_fetch),
        cmocka_unit_test(the_onnx_mlp_moves_only_its_input_and_output),
        cmocka_unit_test(a_training_step_moves_no_variable_byte),
    };
    ses_registry_t *reg = NULL;
    const ses_device_t *d = NULL;

    device = getenv("RESIDENCY_DEVICE");
    if (!device || ses_registry_default(&reg) != SES_OK ||
        ses_registry_find_device(reg, device, &d) != SES_OK) {
        printf("SKIP: device %s is not here: %s\n", device ? device : "(RESIDENCY_DEVICE unset)",
               ses_last_error());
        return 77;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
