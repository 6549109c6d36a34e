/*
 * Fusion of a weight's update (libsession/src/compile/fuse.c): a MatMulGrad whose gradient only
 * its SGD reads runs with that SGD as one MatMulGradSGD step where the device's driver has the
 * kernel (the CPU's: one GEMM with alpha -lr and beta 1 on the variable), so that the gradient
 * is never written. Training steps of small MLPs give the variables of the unfused plan within
 * the GEMM's rounding (f32 and f64, the learning rate a constant or fed anew each step), and the
 * plan says which updates fused (its summary, its profile's steps). Pairs stay apart where the
 * fused step would change what is computed or cannot run: a gradient that is also fetched, a
 * GEMM reading a variable that an update writes (moved to the update's place it would read it
 * after that update), a batched weight (the CPU driver takes one GEMM only), a fed variable
 * (its own SGD names the error), a device without the kernel (OpenCL on PoCL). MatMulGradSGD
 * built by hand runs too, and what the CPU refuses is named.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <session/registry.h>
#include <session/session.h>
#include <session/train.h>

/* The CPU driver and, where the build has it, the OpenCL driver (OPENCL_MANIFEST). */
static ses_registry_t *registry;

/* ---- building ------------------------------------------------------------------------------ */

/* A tensor of @p dtype whose element i is a fixed, irregular value in (-1, 1) from @p seed. */
static ses_tensor_t *filled(ses_dtype_t dtype, size_t rank, const int64_t *dims, double seed) {
    ses_tensor_t *t = NULL;
    size_t n = 1;

    for (size_t i = 0; i < rank; i++)
        n *= (size_t)dims[i];
    assert_int_equal(ses_tensor_create(dtype, rank, dims, &t), SES_OK);
    for (size_t i = 0; i < n; i++) {
        const double v = sin(seed * 12.9898 + (double)i * 78.233) * 0.9;
        if (dtype == SES_F32)
            ((float *)ses_tensor_data(t))[i] = (float)v;
        else
            ((double *)ses_tensor_data(t))[i] = v;
    }
    return t;
}

static ses_edge_t op(ses_graph_t *g, const char *type, const char *name, const ses_edge_t *in,
                     size_t n_in, const ses_attr_t *attrs, size_t n_attrs) {
    ses_edge_t e;
    ses_status_t st = ses_graph_op(g, type, name, in, n_in, attrs, n_attrs, &e);
    if (st != SES_OK)
        fail_msg("%s %s: %s", type, name, ses_last_error());
    return e;
}

/* A variable @p name starting at filled(@p seed). */
static ses_edge_t variable(ses_graph_t *g, const char *name, ses_dtype_t dtype, size_t rank,
                           const int64_t *dims, double seed) {
    char init[128];
    ses_tensor_t *t = filled(dtype, rank, dims, seed);
    ses_edge_t c, v;

    snprintf(init, sizeof init, "%s/init", name);
    assert_int_equal(ses_graph_constant(g, init, t, &c), SES_OK);
    ses_tensor_release(t);
    assert_int_equal(ses_graph_variable(g, name, c, &v), SES_OK);
    return v;
}

#define MAX_VARS 4
#define MAX_FEEDS 3

/* A training graph: its step, the variables it updates, and what a step is fed. */
typedef struct model {
    ses_graph_t *g;
    ses_dtype_t dtype;
    ses_node_t *step;
    ses_edge_t loss;
    ses_edge_t vars[MAX_VARS];
    size_t n_vars;
    ses_edge_t fed[MAX_FEEDS];
    ses_tensor_t *feeds[MAX_FEEDS];
    size_t n_fed;
    size_t lr_feed; /* index in fed of a fed learning rate, or SIZE_MAX */
} model_t;

static void model_clear(model_t *m) {
    for (size_t i = 0; i < m->n_fed; i++)
        ses_tensor_release(m->feeds[i]);
    ses_graph_release(m->g);
}

/* Adds x's feed to @p m: placeholder @p name filled from @p seed. */
static ses_edge_t fed_input(model_t *m, const char *name, size_t rank, const int64_t *dims,
                            double seed) {
    ses_edge_t x;

    assert_int_equal(ses_graph_placeholder(m->g, name, m->dtype, rank, dims, &x), SES_OK);
    m->fed[m->n_fed] = x;
    m->feeds[m->n_fed++] = filled(m->dtype, rank, dims, seed);
    return x;
}

/* SGD on every variable of @p m, at @p lr, or at a fed scalar "lr" when @p fed_lr. */
static void minimize(model_t *m, double lr, int fed_lr) {
    ses_optimizer_t sgd;

    ses_optimizer_sgd(&sgd, lr);
    m->lr_feed = SIZE_MAX;
    if (fed_lr) {
        assert_int_equal(
            ses_graph_placeholder(m->g, "lr", m->dtype, 0, NULL, &sgd.learning_rate_edge), SES_OK);
        m->lr_feed = m->n_fed;
        m->fed[m->n_fed] = sgd.learning_rate_edge;
        assert_int_equal(ses_tensor_create(m->dtype, 0, NULL, &m->feeds[m->n_fed++]), SES_OK);
    }
    if (ses_minimize(m->g, "train", m->loss, &sgd, NULL, 0, &m->step) != SES_OK)
        fail_msg("ses_minimize: %s", ses_last_error());
}

/*
 * x [8,12] -> fc1 (MatMul, Add, Sigmoid) [8,16] -> fc2 (MatMul, Add) [8,5] -> the squared error
 * against a fed target: the seeds' network, small. W1's and W2's gradients are MatMulGrads that
 * only their SGDs read.
 */
static void mlp(model_t *m, ses_dtype_t dtype, int fed_lr) {
    const int64_t xd[2] = {8, 12}, w1d[2] = {12, 16}, b1d[1] = {16}, w2d[2] = {16, 5}, b2d[1] = {5},
                  td[2] = {8, 5};
    ses_edge_t in[2], h, target;

    memset(m, 0, sizeof *m);
    m->dtype = dtype;
    assert_int_equal(ses_graph_create(&m->g), SES_OK);
    in[0] = fed_input(m, "x", 2, xd, 1.0);
    target = fed_input(m, "target", 2, td, 2.0);
    m->vars[0] = variable(m->g, "fc1/W", dtype, 2, w1d, 3.0);
    m->vars[1] = variable(m->g, "fc1/b", dtype, 1, b1d, 4.0);
    m->vars[2] = variable(m->g, "fc2/W", dtype, 2, w2d, 5.0);
    m->vars[3] = variable(m->g, "fc2/b", dtype, 1, b2d, 6.0);
    m->n_vars = 4;
    in[1] = m->vars[0];
    in[0] = op(m->g, "MatMul", "fc1/MatMul", in, 2, NULL, 0);
    in[1] = m->vars[1];
    h = op(m->g, "Add", "fc1/Add", in, 2, NULL, 0);
    h = op(m->g, "Sigmoid", "fc1", &h, 1, NULL, 0);
    in[0] = h;
    in[1] = m->vars[2];
    in[0] = op(m->g, "MatMul", "fc2/MatMul", in, 2, NULL, 0);
    in[1] = m->vars[3];
    h = op(m->g, "Add", "fc2", in, 2, NULL, 0);
    assert_int_equal(ses_mean_squared_error(m->g, "loss", h, target, SES_REDUCTION_MEAN, &m->loss),
                     SES_OK);
    minimize(m, 0.5, fed_lr);
}

/* ---- training ------------------------------------------------------------------------------ */

#define MAX_FUSED 4

/* What a run of training steps gave. */
typedef struct trained {
    ses_tensor_t *values[MAX_VARS]; /* the variables after the steps */
    size_t steps;                   /* the plan's step count */
    char placement[2048];           /* its summary */
    size_t n_fused;                 /* its steps that ran MatMulGradSGD, and their nodes */
    char fused[MAX_FUSED][256];
    char error[1024]; /* the first error's message, when there was one */
} trained_t;

static void trained_clear(trained_t *t) {
    for (size_t i = 0; i < MAX_VARS; i++)
        ses_tensor_release(t->values[i]);
}

/* The learning rate fed to step @p k when the model feeds one: it changes from step to step. */
static double fed_lr_at(size_t k) {
    return 0.75 / (double)(k + 1);
}

/*
 * Runs @p n_steps training steps of @p m on @p device (NULL: the CPU) with fusion on or off, then
 * reads the variables. Fails the test on any error unless @p out_status is given (then the
 * first error is returned there, and nothing else is filled).
 */
static void train(model_t *m, const char *device, uint32_t fusion, size_t n_steps, trained_t *out,
                  ses_status_t *out_status) {
    ses_session_options_t so;
    ses_session_t *s = NULL;
    ses_plan_t *plan = NULL;
    ses_step_time_t times[64];
    size_t n_times = 0;
    ses_status_t st;

    memset(out, 0, sizeof *out);
    ses_session_options_init(&so);
    so.fusion = fusion;
    so.profile = 1;
    so.fallback = SES_FALLBACK_ALLOW;
    so.registry = registry;
    st = ses_session_open(m->g, device ? &device : NULL, device ? 1 : 0, &so, &s);
    /* A model without a loss (a user's update alone) fetches nothing. */
    if (st == SES_OK)
        st = ses_session_compile(s, &m->loss, m->loss.node ? 1 : 0, m->fed, m->n_fed, &m->step, 1,
                                 &plan);
    for (size_t k = 0; k < n_steps && st == SES_OK; k++) {
        ses_tensor_t *loss = NULL;
        if (m->lr_feed != SIZE_MAX) {
            void *lr = ses_tensor_data(m->feeds[m->lr_feed]);
            if (m->dtype == SES_F32)
                *(float *)lr = (float)fed_lr_at(k);
            else
                *(double *)lr = fed_lr_at(k);
        }
        st = ses_plan_run(plan, m->feeds, m->n_fed, m->loss.node ? &loss : NULL);
        ses_tensor_release(loss);
    }
    if (st == SES_OK) {
        out->steps = ses_plan_step_count(plan);
        snprintf(out->placement, sizeof out->placement, "%s", ses_plan_placement(plan));
        times[0].struct_size = sizeof times[0];
        st = ses_plan_profile(plan, times, sizeof times / sizeof times[0], &n_times);
    }
    for (size_t i = 0; st == SES_OK && i < n_times; i++)
        if (!strcmp(times[i].op, "MatMulGradSGD") && out->n_fused < MAX_FUSED)
            snprintf(out->fused[out->n_fused++], sizeof out->fused[0], "%s", times[i].node);
    if (st == SES_OK)
        st = ses_session_eval(s, m->vars, m->n_vars, NULL, 0, NULL, 0, out->values);
    if (st != SES_OK)
        snprintf(out->error, sizeof out->error, "%s", ses_last_error());
    if (st != SES_OK && !out_status)
        fail_msg("%s (fusion %u): %s", device ? device : "cpu", fusion, out->error);
    if (out_status)
        *out_status = st;
    ses_plan_destroy(plan);
    ses_session_destroy(s);
}

/* |a - b| <= tol * max(1, |b|) element by element (1e-6 for f32, 1e-12 for f64): the fused
 * update rounds differently (var + (-lr) * product against var - lr * rounded gradient). */
static void assert_close(ses_tensor_t *a, ses_tensor_t *b, const char *what) {
    const size_t n = ses_tensor_count(b);
    const int f32 = ses_tensor_dtype(b) == SES_F32;
    const double tol = f32 ? 1e-6 : 1e-12;

    assert_int_equal(ses_tensor_dtype(a), ses_tensor_dtype(b));
    assert_int_equal(ses_tensor_count(a), n);
    for (size_t i = 0; i < n; i++) {
        const double x =
            f32 ? ((const float *)ses_tensor_data(a))[i] : ((const double *)ses_tensor_data(a))[i];
        const double y =
            f32 ? ((const float *)ses_tensor_data(b))[i] : ((const double *)ses_tensor_data(b))[i];
        if (isnan(x) && isnan(y))
            continue; /* NaN where SGD makes one (0 times an infinite gradient) */
        if (!(fabs(x - y) <= tol * fmax(1.0, fabs(y))))
            fail_msg("%s: element %zu is %.17g fused, %.17g unfused", what, i, x, y);
    }
}

/* Both runs' variables agree, and each changed from its start (the steps did train). */
static void assert_same_training(const model_t *m, const trained_t *on, const trained_t *off) {
    for (size_t v = 0; v < m->n_vars; v++) {
        assert_close(on->values[v], off->values[v], ses_node_name(m->vars[v].node));
        assert_true(ses_tensor_count(on->values[v]) > 0);
    }
}

/* The summary line of @p n fused updates (compile.c). */
static const char *update_line(size_t n) {
    return n == 1 ? "  fused: 1 MatMulGrad into its SGD update (MatMulGradSGD)\n"
                  : "  fused: 2 MatMulGrads into their SGD updates (MatMulGradSGD)\n";
}

static void assert_contains(const char *text, const char *fragment) {
    if (!strstr(text, fragment))
        fail_msg("\"%s\" does not contain \"%s\"", text, fragment);
}

/* ---- the fusion ---------------------------------------------------------------------------- */

/* Five steps of the MLP, f32 and f64, with a constant learning rate and with one fed anew each
 * step (the kernel reads it at every run): each weight's update runs as one MatMulGradSGD step,
 * named after its pair, and the variables end where the unfused plan's do. */
static void an_mlp_trains_with_each_weight_update_fused_as_unfused(void **state) {
    const ses_dtype_t dtypes[2] = {SES_F32, SES_F64};

    (void)state;
    for (size_t d = 0; d < 2; d++)
        for (int fed_lr = 0; fed_lr < 2; fed_lr++) {
            model_t m;
            trained_t on, off;
            mlp(&m, dtypes[d], fed_lr);
            train(&m, NULL, 1, 5, &on, NULL);
            train(&m, NULL, 0, 5, &off, NULL);
            assert_same_training(&m, &on, &off);
            assert_contains(on.placement, update_line(2));
            assert_null(strstr(off.placement, "MatMulGradSGD"));
            assert_int_equal(on.n_fused, 2);
            assert_int_equal(off.n_fused, 0);
            assert_string_equal(on.fused[0],
                                "train/gradients/fc1/MatMul/MatMulGrad_1+train/fc1/W/SGD");
            assert_string_equal(on.fused[1],
                                "train/gradients/fc2/MatMul/MatMulGrad_1+train/fc2/W/SGD");
            /* Two steps fewer: each pair is one. */
            assert_int_equal(on.steps + 2, off.steps);
            trained_clear(&on);
            trained_clear(&off);
            model_clear(&m);
        }
}

/* x [2,4,12] times a weight W of @p w_rank dims @p wd (its output [2,4,16]), through Tanh when
 * @p tanh, a summed squared error, SGD at @p lr; trained @p steps steps with the fusion on and
 * off, the same values either way. */
static void train_batched(model_t *m, trained_t *on, trained_t *off, size_t w_rank,
                          const int64_t *wd, int tanh, double lr, int steps) {
    const int64_t xd[3] = {2, 4, 12}, td[3] = {2, 4, 16};
    ses_edge_t in[2], y, target;

    memset(m, 0, sizeof *m);
    m->dtype = SES_F32;
    assert_int_equal(ses_graph_create(&m->g), SES_OK);
    in[0] = fed_input(m, "x", 3, xd, 1.0);
    target = fed_input(m, "target", 3, td, 2.0);
    m->vars[m->n_vars++] = in[1] = variable(m->g, "W", SES_F32, w_rank, wd, 3.0);
    y = op(m->g, "MatMul", "mm", in, 2, NULL, 0);
    if (tanh)
        y = op(m->g, "Tanh", "tanh", &y, 1, NULL, 0);
    assert_int_equal(ses_mean_squared_error(m->g, "loss", y, target, SES_REDUCTION_SUM, &m->loss),
                     SES_OK);
    minimize(m, lr, 0);
    train(m, NULL, 1, steps, on, NULL);
    train(m, NULL, 0, steps, off, NULL);
    assert_same_training(m, on, off);
}

/* A batch of matrices times a shared weight ([2,4,12] x [12,16]): its gradient sums the
 * batches in one GEMM (the rows stacked), so it fuses. */
static void a_batched_input_with_a_shared_weight_fuses(void **state) {
    const int64_t wd[2] = {12, 16};
    model_t m;
    trained_t on, off;

    (void)state;
    train_batched(&m, &on, &off, 2, wd, 1, 0.25, 4);
    assert_contains(on.placement, update_line(1));
    assert_int_equal(on.n_fused, 1);
    trained_clear(&on);
    trained_clear(&off);
    model_clear(&m);
}

/* A batched weight ([2,12,16], one matrix per batch): its gradient is not one GEMM, the CPU
 * driver refuses the fused node, and the pair runs unfused with the same values. */
static void a_batched_weight_is_refused_by_the_cpu_and_runs_unfused(void **state) {
    const int64_t wd[3] = {2, 12, 16};
    model_t m;
    trained_t on, off;

    (void)state;
    train_batched(&m, &on, &off, 3, wd, 0, 0.1, 3);
    assert_null(strstr(on.placement, "MatMulGradSGD"));
    assert_int_equal(on.n_fused, 0);
    assert_int_equal(on.steps, off.steps);
    trained_clear(&on);
    trained_clear(&off);
    model_clear(&m);
}

/* ---- what stays apart ---------------------------------------------------------------------- */

/* W1's gradient fetched too has two readers: W1's pair stays apart, W2's still fuses. */
static void a_fetched_gradient_is_not_fused(void **state) {
    model_t m;
    ses_session_options_t so;
    ses_session_t *s = NULL;
    ses_plan_t *plan = NULL;
    ses_edge_t fetches[2];
    ses_tensor_t *values[2] = {NULL, NULL};

    (void)state;
    mlp(&m, SES_F32, 0);
    fetches[0] = m.loss;
    assert_int_equal(ses_graph_edge(m.g, "train/gradients/fc1/MatMul/MatMulGrad_1", &fetches[1]),
                     SES_OK);
    ses_session_options_init(&so);
    so.registry = registry;
    assert_int_equal(ses_session_open(m.g, NULL, 0, &so, &s), SES_OK);
    assert_int_equal(ses_session_compile(s, fetches, 2, m.fed, m.n_fed, &m.step, 1, &plan), SES_OK);
    assert_int_equal(ses_plan_run(plan, m.feeds, m.n_fed, values), SES_OK);
    assert_contains(ses_plan_placement(plan), update_line(1));
    assert_int_equal(ses_tensor_count(values[1]), 12 * 16);
    ses_tensor_release(values[0]);
    ses_tensor_release(values[1]);
    ses_plan_destroy(plan);
    ses_session_destroy(s);
    model_clear(&m);
}

/*
 * loss(W V) with both variables: W's gradient dy V^T reads V, which V's update writes, and V's
 * gradient W^T dy reads W. Fused at its update's place, after the other update, a GEMM would
 * read the new value; so neither pair fuses, and the steps train as unfused.
 */
static void a_gemm_reading_a_variable_an_update_writes_is_not_fused(void **state) {
    const int64_t wd[2] = {5, 4}, vd[2] = {4, 3}, td[2] = {5, 3};
    model_t m;
    trained_t on, off;
    ses_edge_t in[2], y, target;

    (void)state;
    memset(&m, 0, sizeof m);
    m.dtype = SES_F32;
    assert_int_equal(ses_graph_create(&m.g), SES_OK);
    target = fed_input(&m, "target", 2, td, 2.0);
    m.vars[m.n_vars++] = in[0] = variable(m.g, "W", SES_F32, 2, wd, 3.0);
    m.vars[m.n_vars++] = in[1] = variable(m.g, "V", SES_F32, 2, vd, 4.0);
    y = op(m.g, "MatMul", "mm", in, 2, NULL, 0);
    assert_int_equal(ses_mean_squared_error(m.g, "loss", y, target, SES_REDUCTION_SUM, &m.loss),
                     SES_OK);
    minimize(&m, 0.05, 0);
    train(&m, NULL, 1, 3, &on, NULL);
    train(&m, NULL, 0, 3, &off, NULL);
    assert_same_training(&m, &on, &off);
    assert_null(strstr(on.placement, "MatMulGradSGD"));
    assert_int_equal(on.n_fused, 0);
    trained_clear(&on);
    trained_clear(&off);
    model_clear(&m);
}

/* W1 fed in the step's eval: its update cannot write it, and the error names W1's SGD, as
 * without fusion (the pair is not fused, so its own compile reports it). */
static void a_fed_variable_is_reported_by_its_own_sgd(void **state) {
    const int64_t w1d[2] = {12, 16};
    model_t m;
    ses_session_t *s = NULL;
    ses_plan_t *plan = NULL;
    ses_edge_t fed[MAX_FEEDS + 1];
    ses_tensor_t *feeds[MAX_FEEDS + 1], *loss = NULL;
    ses_status_t st;

    (void)state;
    mlp(&m, SES_F32, 0);
    memcpy(fed, m.fed, m.n_fed * sizeof fed[0]);
    memcpy(feeds, m.feeds, m.n_fed * sizeof feeds[0]);
    fed[m.n_fed] = m.vars[0];
    feeds[m.n_fed] = filled(SES_F32, 2, w1d, 7.0);
    assert_int_equal(ses_session_open(m.g, NULL, 0, NULL, &s), SES_OK);
    /* Refused when the plan compiles: now, or at its first run. */
    st = ses_session_compile(s, &m.loss, 1, fed, m.n_fed + 1, &m.step, 1, &plan);
    if (st == SES_OK)
        st = ses_plan_run(plan, feeds, m.n_fed + 1, &loss);
    assert_int_equal(st, SES_INVALID_ARGUMENT);
    assert_contains(ses_last_error(),
                    "SGD \"train/fc1/W/SGD\": input 0, variable \"fc1/W\", is fed");
    assert_null(loss);
    ses_tensor_release(feeds[m.n_fed]);
    ses_plan_destroy(plan);
    ses_session_destroy(s);
    model_clear(&m);
}

/* On the OpenCL driver (PoCL), which has MatMulGrad and SGD but no MatMulGradSGD, the pairs stay
 * unfused there, on the device, and train as on the CPU. */
static void a_device_without_the_kernel_keeps_the_pairs(void **state) {
    model_t m;
    trained_t ocl, cpu;
    ses_status_t st;

    (void)state;
    mlp(&m, SES_F32, 0);
    train(&m, "opencl:0", 1, 3, &ocl, &st);
    if (st == SES_NOT_FOUND || st == SES_UNAVAILABLE) {
        model_clear(&m);
        skip(); /* no OpenCL driver or device here */
    }
    assert_int_equal(st, SES_OK);
    assert_null(strstr(ocl.placement, "MatMulGradSGD"));
    assert_int_equal(ocl.n_fused, 0);
    train(&m, NULL, 1, 3, &cpu, NULL);
    assert_int_equal(cpu.n_fused, 2);
    for (size_t v = 0; v < m.n_vars; v++)
        for (size_t i = 0; i < ses_tensor_count(cpu.values[v]); i++)
            assert_float_equal(((const float *)ses_tensor_data(ocl.values[v]))[i],
                               ((const float *)ses_tensor_data(cpu.values[v]))[i], 1e-4);
    trained_clear(&ocl);
    trained_clear(&cpu);
    model_clear(&m);
}

/* ---- built by hand ------------------------------------------------------------------------- */

/* MatMulGradSGD(var, dy, A, B, lr; input) as a user's node updates var as SGD(var,
 * MatMulGrad(dy, A, B; input), lr) does, for the gradient of A and of B. */
static void a_users_node_updates_var_as_sgd_of_matmul_grad(void **state) {
    const int64_t ad[2] = {6, 4}, bd[2] = {4, 3}, dyd[2] = {6, 3};

    (void)state;
    /* With lr 0 and an infinite dy, SGD's var - 0 * gradient is NaN where the gradient is
     * infinite, and so is the user's node (a GEMM with alpha 0 would skip the product). */
    for (int64_t run = 0; run < 4; run++) {
        const int64_t input = run % 2;
        const double rate = run < 2 ? 0.375 : 0.0;
        ses_attr_t attr = ses_attr_int("input", input);
        model_t by_hand, composite;
        trained_t a, b;
        for (int k = 0; k < 2; k++) {
            model_t *m = k ? &composite : &by_hand;
            ses_edge_t in[5], lr;
            ses_tensor_t *t = NULL;
            memset(m, 0, sizeof *m);
            m->dtype = SES_F64;
            assert_int_equal(ses_graph_create(&m->g), SES_OK);
            in[1] = fed_input(m, "dy", 2, dyd, 1.0);
            if (rate == 0.0)
                ((double *)ses_tensor_data(m->feeds[m->n_fed - 1]))[0] = INFINITY;
            /* var is the operand whose gradient it is, as in the graphs fusion makes. */
            if (input) {
                in[2] = fed_input(m, "A", 2, ad, 2.0);
                in[0] = in[3] = variable(m->g, "B", SES_F64, 2, bd, 3.0);
            } else {
                in[3] = fed_input(m, "B", 2, bd, 2.0);
                in[0] = in[2] = variable(m->g, "A", SES_F64, 2, ad, 3.0);
            }
            m->vars[m->n_vars++] = in[0];
            assert_int_equal(ses_tensor_create(SES_F64, 0, NULL, &t), SES_OK);
            *(double *)ses_tensor_data(t) = rate;
            assert_int_equal(ses_graph_constant(m->g, "lr", t, &lr), SES_OK);
            ses_tensor_release(t);
            in[4] = lr;
            if (k) {
                ses_edge_t sgd_in[3] = {in[0], op(m->g, "MatMulGrad", "grad", in + 1, 3, &attr, 1),
                                        lr};
                assert_int_equal(
                    ses_graph_add_node(m->g, "SGD", "update", sgd_in, 3, NULL, 0, 0, &m->step),
                    SES_OK);
            } else {
                assert_int_equal(ses_graph_add_node(m->g, "MatMulGradSGD", "update", in, 5, &attr,
                                                    1, 0, &m->step),
                                 SES_OK);
            }
            m->lr_feed = SIZE_MAX;
        }
        /* Fusion off for the composite: only the user's node is MatMulGradSGD. */
        train(&by_hand, NULL, 1, 2, &a, NULL);
        train(&composite, NULL, 0, 2, &b, NULL);
        assert_int_equal(a.n_fused, 1);
        assert_string_equal(a.fused[0], "update");
        assert_close(a.values[0], b.values[0], input ? "B" : "A");
        if (rate == 0.0) {
            const double *v = ses_tensor_data(a.values[0]);
            size_t n_nan = 0;
            for (size_t i = 0; i < ses_tensor_count(a.values[0]); i++)
                n_nan += isnan(v[i]) != 0;
            assert_true(n_nan > 0); /* the infinite dy reached var, as it does through SGD */
        }
        trained_clear(&a);
        trained_clear(&b);
        model_clear(&by_hand);
        model_clear(&composite);
    }
}

/* A user's MatMulGradSGD that the CPU cannot run fails naming the node: a batched B (refused
 * by supports_node, so no device has a kernel), and a GEMM that would read var (var is also
 * the operand read: the launch is refused rather than reading what it writes). */
static void what_the_cpu_refuses_of_a_users_node_is_named(void **state) {
    const int64_t batched[3] = {2, 4, 3}, ad[3] = {2, 6, 4}, dyd[3] = {2, 6, 3}, sq[2] = {4, 4},
                  dys[2] = {4, 4};

    (void)state;
    for (int k = 0; k < 2; k++) {
        ses_attr_t attr = ses_attr_int("input", 1);
        model_t m;
        trained_t t;
        ses_edge_t in[5];
        ses_tensor_t *lr = NULL;
        ses_status_t st;
        memset(&m, 0, sizeof m);
        m.dtype = SES_F32;
        assert_int_equal(ses_graph_create(&m.g), SES_OK);
        if (k == 0) {
            in[1] = fed_input(&m, "dy", 3, dyd, 1.0);
            in[2] = fed_input(&m, "A", 3, ad, 2.0);
            in[0] = in[3] = variable(m.g, "B", SES_F32, 3, batched, 3.0);
        } else {
            /* dB = A^T dy with A = B = var: the GEMM reads var. */
            in[1] = fed_input(&m, "dy", 2, dys, 1.0);
            in[0] = in[2] = in[3] = variable(m.g, "W", SES_F32, 2, sq, 3.0);
        }
        m.vars[m.n_vars++] = in[0];
        assert_int_equal(ses_tensor_create(SES_F32, 0, NULL, &lr), SES_OK);
        *(float *)ses_tensor_data(lr) = 0.5f;
        assert_int_equal(ses_graph_constant(m.g, "lr", lr, &in[4]), SES_OK);
        ses_tensor_release(lr);
        assert_int_equal(
            ses_graph_add_node(m.g, "MatMulGradSGD", "update", in, 5, &attr, 1, 0, &m.step),
            SES_OK);
        m.lr_feed = SIZE_MAX;
        train(&m, NULL, 1, 1, &t, &st);
        assert_int_not_equal(st, SES_OK);
        assert_contains(t.error, "MatMulGradSGD \"update\"");
        assert_contains(t.error, k == 0 ? "batched B" : "overlap");
        trained_clear(&t);
        model_clear(&m);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_mlp_trains_with_each_weight_update_fused_as_unfused),
        cmocka_unit_test(a_batched_input_with_a_shared_weight_fuses),
        cmocka_unit_test(a_batched_weight_is_refused_by_the_cpu_and_runs_unfused),
        cmocka_unit_test(a_fetched_gradient_is_not_fused),
        cmocka_unit_test(a_gemm_reading_a_variable_an_update_writes_is_not_fused),
        cmocka_unit_test(a_fed_variable_is_reported_by_its_own_sgd),
        cmocka_unit_test(a_device_without_the_kernel_keeps_the_pairs),
        cmocka_unit_test(a_users_node_updates_var_as_sgd_of_matmul_grad),
        cmocka_unit_test(what_the_cpu_refuses_of_a_users_node_is_named),
    };
    int failed;

#ifdef OPENCL_MANIFEST
    setenv("SESSION_ADD_DRIVER_FILES", OPENCL_MANIFEST, 1);
#endif
    if (ses_registry_create(&registry) != SES_OK)
        return 1;
    unsetenv("SESSION_ADD_DRIVER_FILES");
    failed = cmocka_run_group_tests(tests, NULL, NULL);
    ses_registry_destroy(registry);
    return failed;
}
