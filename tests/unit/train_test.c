/*
 * Training through the public API: ses_fc, losses, ses_minimize with each optimizer. A small
 * network learns a separable problem (the loss falls far); variables change in place in the
 * session's scope; the learning rate may be fed; a variable the loss does not depend on, a
 * non-variable, and bad optimizers are refused with messages; updates run after every other
 * reader of the variable in the same eval.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <session/session.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#define N 64

typedef struct net {
    ses_graph_t *g;
    ses_edge_t x, labels, logits, loss;
    ses_session_t *s;
    ses_tensor_t *xv, *lv;
} net_t;

/* Two Gaussian-ish blobs in 4-D; the label says which. */
static void make_data(net_t *n) {
    int64_t xd[2] = {N, 4}, ld[1] = {N};
    uint64_t state = 12345;
    float *x;
    int64_t *l;

    assert_int_equal(ses_tensor_create(SES_F32, 2, xd, &n->xv), SES_OK);
    assert_int_equal(ses_tensor_create(SES_I64, 1, ld, &n->lv), SES_OK);
    x = ses_tensor_data(n->xv);
    l = ses_tensor_data(n->lv);
    for (int i = 0; i < N; i++) {
        l[i] = i % 2;
        for (int k = 0; k < 4; k++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            x[i * 4 + k] = (float)((double)(state >> 40) / 16777216.0 - 0.5) +
                           (l[i] ? 1.0f : -1.0f) * (k < 2 ? 1.0f : 0.0f);
        }
    }
}

static void build(net_t *n, ses_activation_t act) {
    int64_t xd[2] = {-1, 4}, ld[1] = {-1};
    ses_edge_t h;

    assert_int_equal(ses_graph_create(&n->g), SES_OK);
    assert_int_equal(ses_graph_placeholder(n->g, "x", SES_F32, 2, xd, &n->x), SES_OK);
    assert_int_equal(ses_graph_placeholder(n->g, "labels", SES_I64, 1, ld, &n->labels), SES_OK);
    assert_int_equal(ses_fc(n->g, "fc1", n->x, 8, act, 1, &h), SES_OK);
    assert_int_equal(ses_fc(n->g, "fc2", h, 2, SES_ACTIVATION_NONE, 2, &n->logits), SES_OK);
    assert_int_equal(
        ses_softmax_cross_entropy(n->g, "loss", n->logits, n->labels, SES_REDUCTION_MEAN, &n->loss),
        SES_OK);
    make_data(n);
}

static void open_session(net_t *n) {
    const char *cpu = "cpu";
    assert_int_equal(ses_session_open(n->g, &cpu, 1, NULL, &n->s), SES_OK);
}

static void done(net_t *n) {
    ses_session_destroy(n->s);
    ses_graph_release(n->g);
    ses_tensor_release(n->xv);
    ses_tensor_release(n->lv);
}

/* One eval: the loss, and the step as a target. */
static float step(net_t *n, ses_node_t *train, const ses_feed_t *extra) {
    ses_feed_t feeds[3] = {{n->x, n->xv}, {n->labels, n->lv}, {{NULL, 0}, NULL}};
    ses_tensor_t *value = NULL;
    float loss;

    if (extra)
        feeds[2] = *extra;
    if (ses_session_eval(n->s, &n->loss, 1, feeds, extra ? 3 : 2, &train, 1, &value) != SES_OK)
        fail_msg("eval: %s", ses_last_error());
    loss = *(float *)ses_tensor_data(value);
    ses_tensor_release(value);
    return loss;
}

static void train_with(const ses_optimizer_t *opt, int steps, float want_below) {
    net_t n;
    ses_node_t *train = NULL;
    float first, last = 0;

    memset(&n, 0, sizeof n);
    build(&n, SES_ACTIVATION_TANH);
    if (ses_minimize(n.g, "train", n.loss, opt, NULL, 0, &train) != SES_OK)
        fail_msg("minimize: %s", ses_last_error());
    open_session(&n);
    first = step(&n, train, NULL);
    for (int i = 0; i < steps; i++)
        last = step(&n, train, NULL);
    if (!(last < want_below && last < first * 0.5f))
        fail_msg("optimizer %d: loss went from %g to %g (want below %g)", (int)opt->kind, first,
                 last, want_below);
    done(&n);
}

static void sgd_momentum_nesterov_and_adam_all_learn(void **state) {
    ses_optimizer_t o;

    (void)state;
    ses_optimizer_sgd(&o, 0.5);
    train_with(&o, 100, 0.1f);
    ses_optimizer_momentum(&o, 0.1, 0.9, 0);
    train_with(&o, 100, 0.1f);
    ses_optimizer_momentum(&o, 0.1, 0.9, 1);
    train_with(&o, 100, 0.1f);
    ses_optimizer_adam(&o, 0.02);
    train_with(&o, 100, 0.1f);
}

/* The weights in the scope change in place, by exactly -lr * gradient for SGD. */
static void sgd_updates_the_scope_variable_by_the_gradient(void **state) {
    net_t n;
    ses_node_t *train = NULL, *w_node = NULL;
    ses_optimizer_t o;
    ses_edge_t w, dw;
    ses_tensor_t *before = NULL, *grad = NULL, *after = NULL;
    ses_feed_t feeds[2];

    (void)state;
    memset(&n, 0, sizeof n);
    build(&n, SES_ACTIVATION_SIGMOID);
    assert_int_equal(ses_graph_find_node(n.g, "fc2/W", &w_node), SES_OK);
    w = ses_node_output(w_node, 0);
    assert_int_equal(ses_gradients(n.g, "check", &n.loss, 1, &w, 1, NULL, &dw), SES_OK);
    ses_optimizer_sgd(&o, 0.25);
    assert_int_equal(ses_minimize(n.g, "train", n.loss, &o, &w_node, 1, &train), SES_OK);
    open_session(&n);
    feeds[0] = (ses_feed_t){n.x, n.xv};
    feeds[1] = (ses_feed_t){n.labels, n.lv};
    {
        ses_edge_t fetch[2] = {w, dw};
        ses_tensor_t *out[2];
        assert_int_equal(ses_session_eval(n.s, fetch, 2, feeds, 2, NULL, 0, out), SES_OK);
        before = out[0];
        grad = out[1];
    }
    step(&n, train, NULL);
    assert_int_equal(ses_scope_find(ses_session_scope(n.s), "fc2/W", &after), SES_OK);
    for (size_t i = 0; i < ses_tensor_count(before); i++) {
        float b = ((float *)ses_tensor_data(before))[i], g = ((float *)ses_tensor_data(grad))[i];
        float a = ((float *)ses_tensor_data(after))[i];
        assert_true(fabsf(a - (b - 0.25f * g)) <= 1e-6f + 1e-5f * fabsf(b));
    }
    ses_tensor_release(before);
    ses_tensor_release(grad);
    ses_tensor_release(after);
    done(&n);
}

static void the_learning_rate_can_be_fed(void **state) {
    net_t n;
    ses_node_t *train = NULL;
    ses_optimizer_t o;
    ses_edge_t lr;
    ses_tensor_t *lr_value = NULL, *w0 = NULL, *w1 = NULL;
    ses_feed_t feed;

    (void)state;
    memset(&n, 0, sizeof n);
    build(&n, SES_ACTIVATION_RELU);
    assert_int_equal(ses_graph_placeholder(n.g, "lr", SES_F32, 0, NULL, &lr), SES_OK);
    ses_optimizer_sgd(&o, 0.1);
    o.learning_rate_edge = lr;
    assert_int_equal(ses_minimize(n.g, "train", n.loss, &o, NULL, 0, &train), SES_OK);
    open_session(&n);
    assert_int_equal(ses_tensor_create(SES_F32, 0, NULL, &lr_value), SES_OK);
    *(float *)ses_tensor_data(lr_value) = 0.0f;
    feed = (ses_feed_t){lr, lr_value};
    /* With a learning rate of 0 nothing moves. */
    step(&n, train, &feed);
    assert_int_equal(ses_scope_find(ses_session_scope(n.s), "fc1/W", &w0), SES_OK);
    {
        float copy[32];
        memcpy(copy, ses_tensor_data(w0), sizeof copy);
        step(&n, train, &feed);
        assert_memory_equal(copy, ses_tensor_data(w0), sizeof copy);
        *(float *)ses_tensor_data(lr_value) = 0.5f;
        step(&n, train, &feed);
        assert_int_equal(ses_scope_find(ses_session_scope(n.s), "fc1/W", &w1), SES_OK);
        assert_true(memcmp(copy, ses_tensor_data(w1), sizeof copy) != 0);
    }
    ses_tensor_release(w0);
    ses_tensor_release(w1);
    ses_tensor_release(lr_value);
    done(&n);
}

static void bad_requests_are_refused_and_add_nothing(void **state) {
    net_t n;
    ses_node_t *train = NULL, *unused = NULL, *logits_node;
    ses_optimizer_t o;
    ses_edge_t init, v;
    ses_tensor_t *t = NULL;
    int64_t d[1] = {2};
    uint64_t version;

    (void)state;
    memset(&n, 0, sizeof n);
    build(&n, SES_ACTIVATION_SIGMOID);
    assert_int_equal(ses_tensor_create(SES_F32, 1, d, &t), SES_OK);
    assert_int_equal(ses_graph_constant(n.g, "unused/init", t, &init), SES_OK);
    assert_int_equal(ses_graph_variable(n.g, "unused", init, &v), SES_OK);
    ses_tensor_release(t);
    unused = v.node;
    ses_optimizer_sgd(&o, 0.1);
    version = ses_graph_version(n.g);
    assert_int_equal(ses_minimize(n.g, "train", n.loss, &o, &unused, 1, &train),
                     SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "does not depend on variable \"unused\""));
    assert_null(train);
    logits_node = n.logits.node;
    assert_int_equal(ses_minimize(n.g, "train", n.loss, &o, &logits_node, 1, &train),
                     SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "is not a variable"));
    ses_optimizer_sgd(&o, -1.0);
    assert_int_equal(ses_minimize(n.g, "train", n.loss, &o, NULL, 0, &train),
                     SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "not positive"));
    memset(&o, 0, sizeof o);
    assert_int_equal(ses_minimize(n.g, "train", n.loss, &o, NULL, 0, &train),
                     SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "not initialized"));
    {
        ses_node_t *found = NULL;
        assert_int_equal(ses_graph_find_node(n.g, "train", &found), SES_NOT_FOUND);
        assert_int_equal(ses_graph_find_node(n.g, "train/gradients/loss/ScalarLike", &found),
                         SES_NOT_FOUND);
    }
    assert_true(ses_graph_version(n.g) >= version);
    /* ses_fc needs to know the input's width. */
    {
        ses_edge_t y, p;
        int64_t dims[2] = {4, -1};
        assert_int_equal(ses_graph_placeholder(n.g, "wide", SES_F32, 2, dims, &p), SES_OK);
        assert_int_equal(ses_fc(n.g, "fcx", p, 3, SES_ACTIVATION_NONE, 0, &y), SES_INVALID_ARGUMENT);
        assert_non_null(strstr(ses_last_error(), "last dimension"));
    }
    done(&n);
}

/* Feeding a variable that an update writes in place is refused at compile time. */
static void an_update_of_a_fed_variable_is_refused(void **state) {
    net_t n;
    ses_node_t *train = NULL, *w_node = NULL;
    ses_optimizer_t o;
    ses_tensor_t *w = NULL, *value = NULL;
    int64_t dims[2] = {8, 2};

    (void)state;
    memset(&n, 0, sizeof n);
    build(&n, SES_ACTIVATION_SIGMOID);
    ses_optimizer_sgd(&o, 0.1);
    assert_int_equal(ses_minimize(n.g, "train", n.loss, &o, NULL, 0, &train), SES_OK);
    open_session(&n);
    assert_int_equal(ses_graph_find_node(n.g, "fc2/W", &w_node), SES_OK);
    assert_int_equal(ses_tensor_create(SES_F32, 2, dims, &w), SES_OK);
    {
        ses_feed_t feeds[3] = {{n.x, n.xv}, {n.labels, n.lv}, {ses_node_output(w_node, 0), w}};
        assert_int_not_equal(ses_session_eval(n.s, &n.loss, 1, feeds, 3, &train, 1, &value),
                             SES_OK);
        assert_non_null(strstr(ses_last_error(), "fc2/W"));
        assert_non_null(strstr(ses_last_error(), "in place"));
    }
    ses_tensor_release(w);
    done(&n);
}

static void mean_squared_error_fits_a_line(void **state) {
    ses_graph_t *g = NULL;
    ses_session_t *s = NULL;
    ses_edge_t x, t, y, loss;
    ses_node_t *train = NULL;
    ses_optimizer_t o;
    int64_t d[2] = {-1, 1}, nd[2] = {16, 1};
    ses_tensor_t *xv = NULL, *tv = NULL, *value = NULL;
    const char *cpu = "cpu";
    float l = 0;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 2, d, &x), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "t", SES_F32, 2, d, &t), SES_OK);
    assert_int_equal(ses_fc(g, "line", x, 1, SES_ACTIVATION_NONE, 3, &y), SES_OK);
    assert_int_equal(ses_mean_squared_error(g, "mse", y, t, SES_REDUCTION_MEAN, &loss), SES_OK);
    ses_optimizer_sgd(&o, 0.1);
    assert_int_equal(ses_minimize(g, "train", loss, &o, NULL, 0, &train), SES_OK);
    assert_int_equal(ses_tensor_create(SES_F32, 2, nd, &xv), SES_OK);
    assert_int_equal(ses_tensor_create(SES_F32, 2, nd, &tv), SES_OK);
    for (int i = 0; i < 16; i++) {
        ((float *)ses_tensor_data(xv))[i] = (float)i / 8.0f - 1.0f;
        ((float *)ses_tensor_data(tv))[i] = 3.0f * ((float)i / 8.0f - 1.0f) + 0.5f;
    }
    assert_int_equal(ses_session_open(g, &cpu, 1, NULL, &s), SES_OK);
    for (int i = 0; i < 300; i++) {
        ses_feed_t feeds[2] = {{x, xv}, {t, tv}};
        assert_int_equal(ses_session_eval(s, &loss, 1, feeds, 2, &train, 1, &value), SES_OK);
        l = *(float *)ses_tensor_data(value);
        ses_tensor_release(value);
    }
    assert_true(l < 1e-3f);
    ses_tensor_release(xv);
    ses_tensor_release(tv);
    ses_session_destroy(s);
    ses_graph_release(g);
}

/* An update placed on another device than the variable's home (the host) works on a copy there
 * and is copied back: the scope's tensor holds the result. */
static void an_update_on_another_device_stays_there_until_the_host_reads_it(void **state) {
    ses_graph_t *g = NULL;
    ses_session_t *s = NULL;
    ses_registry_t *reg = NULL;
    ses_session_options_t so;
    ses_edge_t init, w, grad, lr, in[3];
    ses_node_t *sgd = NULL;
    ses_plan_t *plan = NULL;
    ses_tensor_t *t = NULL, *after = NULL;
    static const float w0[4] = {1, 2, 3, 4}, g0[4] = {10, 20, 30, 40}, lr0 = 0.5f;
    int64_t d[1] = {4};
    const char *device = "fake_add_ulp:0";

    (void)state;
    setenv("SESSION_ADD_DRIVER_FILES", FAKE_DIR "/fake_add_ulp.json", 1);
    assert_int_equal(ses_registry_create(&reg), SES_OK);
    unsetenv("SESSION_ADD_DRIVER_FILES");
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_tensor_create_from(SES_F32, 1, d, w0, sizeof w0, &t), SES_OK);
    assert_int_equal(ses_graph_constant(g, "w0", t, &init), SES_OK);
    ses_tensor_release(t);
    assert_int_equal(ses_tensor_create_from(SES_F32, 1, d, g0, sizeof g0, &t), SES_OK);
    assert_int_equal(ses_graph_constant(g, "g", t, &grad), SES_OK);
    ses_tensor_release(t);
    assert_int_equal(ses_tensor_create_from(SES_F32, 0, NULL, &lr0, sizeof lr0, &t), SES_OK);
    assert_int_equal(ses_graph_constant(g, "lr", t, &lr), SES_OK);
    ses_tensor_release(t);
    assert_int_equal(ses_graph_variable(g, "w", init, &w), SES_OK);
    in[0] = w;
    in[1] = grad;
    in[2] = lr;
    assert_int_equal(ses_graph_add_node(g, "SGD", "update", in, 3, NULL, 0, 0, &sgd), SES_OK);
    ses_session_options_init(&so);
    so.registry = reg;
    so.fallback = SES_FALLBACK_DENY;
    assert_int_equal(ses_session_open(g, &device, 1, &so, &s), SES_OK);
    assert_int_equal(ses_session_eval(s, NULL, 0, NULL, 0, &sgd, 1, NULL), SES_OK);
    assert_int_equal(ses_session_eval(s, NULL, 0, NULL, 0, &sgd, 1, NULL), SES_OK);
    assert_int_equal(ses_scope_find(ses_session_scope(s), "w", &after), SES_OK);
    for (int i = 0; i < 4; i++)
        assert_true(((float *)ses_tensor_data(after))[i] == w0[i] - 2 * 0.5f * g0[i]);
    /* A third run through a plan: the values keep moving. */
    ses_tensor_release(after);
    assert_int_equal(ses_session_compile(s, NULL, 0, NULL, 0, &sgd, 1, &plan), SES_OK);
    assert_int_equal(ses_plan_run(plan, NULL, 0, NULL), SES_OK);
    assert_non_null(ses_plan_node_device(plan, sgd));
    assert_string_equal(ses_plan_node_device(plan, sgd), "fake_add_ulp:0");
    /* Only the update: w lives on the device (read back when the host reads it) and the
     * constants g and lr were uploaded once; no step copies anything. */
    assert_int_equal(ses_plan_step_count(plan), 1);
    {
        ses_transfer_stats_t before = {sizeof before, 0, 0, 0, 0, 0, 0, 0}, later = before;
        ses_tensor_t *set = NULL;
        static const float w9[4] = {9, 9, 9, 9};

        /* Runs in steady state move no variable byte. */
        assert_int_equal(ses_plan_transfers(plan, &before), SES_OK);
        assert_int_equal(ses_plan_run(plan, NULL, 0, NULL), SES_OK);
        assert_int_equal(ses_plan_run(plan, NULL, 0, NULL), SES_OK);
        assert_int_equal(ses_plan_transfers(plan, &later), SES_OK);
        assert_int_equal(later.h2d_bytes - before.h2d_bytes, 0);
        assert_int_equal(later.d2h_bytes - before.d2h_bytes, 0);
        /* The host reads the device's current value: five updates so far. */
        assert_int_equal(ses_scope_find(ses_session_scope(s), "w", &after), SES_OK);
        for (int i = 0; i < 4; i++)
            assert_true(((float *)ses_tensor_data(after))[i] == w0[i] - 5 * 0.5f * g0[i]);
        ses_tensor_release(after);
        /* A host write is what the next device run starts from. */
        assert_int_equal(ses_tensor_create_from(SES_F32, 1, d, w9, sizeof w9, &set), SES_OK);
        assert_int_equal(ses_scope_set(ses_session_scope(s), "w", set), SES_OK);
        ses_tensor_release(set);
        assert_int_equal(ses_plan_run(plan, NULL, 0, NULL), SES_OK);
        assert_int_equal(ses_scope_find(ses_session_scope(s), "w", &after), SES_OK);
        for (int i = 0; i < 4; i++)
            assert_true(((float *)ses_tensor_data(after))[i] == 9 - 0.5f * g0[i]);
        ses_tensor_release(after);
        /* A fetch of w sees the device's value too. */
        assert_int_equal(ses_session_eval(s, &w, 1, NULL, 0, &sgd, 1, &after), SES_OK);
        for (int i = 0; i < 4; i++)
            assert_true(((float *)ses_tensor_data(after))[i] == 9 - 2 * 0.5f * g0[i]);
        ses_tensor_release(after);
    }
    ses_plan_destroy(plan);
    ses_session_destroy(s);
    ses_graph_release(g);
    ses_registry_destroy(reg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sgd_momentum_nesterov_and_adam_all_learn),
        cmocka_unit_test(sgd_updates_the_scope_variable_by_the_gradient),
        cmocka_unit_test(the_learning_rate_can_be_fed),
        cmocka_unit_test(bad_requests_are_refused_and_add_nothing),
        cmocka_unit_test(an_update_of_a_fed_variable_is_refused),
        cmocka_unit_test(mean_squared_error_fits_a_line),
        cmocka_unit_test(an_update_on_another_device_stays_there_until_the_host_reads_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
