/*
 * Outputs written over an input (DRV-86, compile/memory.c) on the CPU driver, whose FusedConv
 * and NchwcConv allow Y over Z: a residual block's fused convolution takes its Z's bytes when
 * nothing after it reads Z, and gives the very values it gives with bytes of its own, in NCHW
 * and NCHWc16, through oneDNN and through im2col, forward and in gradients. It does not when Z
 * is fetched, read by a later node, or also the convolution's X, nor with the option or
 * SESSION_IN_PLACE off; a bad option value is refused.
 *
 * The CPU's elementwise ops (Exp, Neg) write over their dying input too.
 *
 * Copies made views (memory.c): a reshape (Flatten, Reshape, Squeeze, Unsqueeze) or a
 * ReduceSumLike or ExpandLike with nothing to sum or expand runs nothing, its output on its
 * input's bytes (a view of a view on the first value's), with the same values; not when the
 * input or the output is fetched, and no output is written over bytes a view still reads.
 *
 * Concats laid out in place (memory.c): a Concat whose output is its inputs one after the other
 * (every dimension before the axis 1) runs nothing, its inputs written back to back where its
 * output is, with the same values; not for a batch above 1 on axis 1, inputs in another order
 * than they were made, an input fetched, or inputs whose sizes would leave gaps.
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

#include <session/session.h>
#include <session/train.h>

/* ---- helpers ------------------------------------------------------------------------------ */

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static ses_tensor_t *random_tensor(size_t rank, const int64_t *dims, double scale) {
    ses_tensor_t *t = NULL;
    size_t n = 1;

    for (size_t i = 0; i < rank; i++)
        n *= (size_t)dims[i];
    assert_int_equal(ses_tensor_create(SES_F32, rank, dims, &t), SES_OK);
    for (size_t i = 0; i < n; i++) {
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 7;
        rng_state ^= rng_state << 17;
        const double u = (double)(rng_state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
        ((float *)ses_tensor_data(t))[i] = (float)(u * scale);
    }
    return t;
}

static ses_edge_t op(ses_graph_t *g, const char *type, const char *name, const ses_edge_t *in,
                     size_t n_in, const ses_attr_t *attrs, size_t n_attrs) {
    ses_edge_t e;
    if (ses_graph_op(g, type, name, in, n_in, attrs, n_attrs, &e) != SES_OK)
        fail_msg("%s %s: %s", type, name, ses_last_error());
    return e;
}

static ses_edge_t relu(ses_graph_t *g, const char *name, ses_edge_t x) {
    return op(g, "Relu", name, &x, 1, NULL, 0);
}

static ses_edge_t add(ses_graph_t *g, const char *name, ses_edge_t a, ses_edge_t b) {
    const ses_edge_t in[2] = {a, b};
    return op(g, "Add", name, in, 2, NULL, 0);
}

static ses_edge_t weights[3]; /* of the last block's convolutions, in order */
static size_t n_weights;

/* A 3x3 convolution of @p x (16 channels, pads 1) to 16 channels, with a bias; its weights are a
 * variable when @p trainable, a constant otherwise, and go to weights[]. */
static ses_edge_t conv(ses_graph_t *g, const char *name, ses_edge_t x, int trainable) {
    const int64_t wd[4] = {16, 16, 3, 3}, bd[1] = {16}, pads[4] = {1, 1, 1, 1};
    const ses_attr_t attr = ses_attr_ints("pads", pads, 4);
    ses_edge_t in[3] = {x, {NULL, 0}, {NULL, 0}};
    char wname[64];
    ses_tensor_t *w = random_tensor(4, wd, 1.0 / 12.0), *b = random_tensor(1, bd, 0.5);

    snprintf(wname, sizeof wname, "%s/w", name);
    if (trainable) {
        ses_edge_t init;
        assert_int_equal(ses_graph_constant(g, NULL, w, &init), SES_OK);
        assert_int_equal(ses_graph_variable(g, wname, init, &in[1]), SES_OK);
    } else {
        assert_int_equal(ses_graph_constant(g, wname, w, &in[1]), SES_OK);
    }
    assert_int_equal(ses_graph_constant(g, NULL, b, &in[2]), SES_OK);
    if (n_weights < 3)
        weights[n_weights++] = in[1];
    ses_tensor_release(w);
    ses_tensor_release(b);
    return op(g, "Conv", name, in, 3, &attr, 1);
}

typedef struct block {
    ses_graph_t *g;
    /* out = transpose(y), y = relu(conv3(a) + z), a = relu(conv1(x)), z = conv2(x): out is
     * fetched, so that y (written straight into the caller's tensor were it fetched) lives in
     * the plan's memory; a Transpose never writes over its input, so the fused convolution is
     * the one node that may. */
    ses_edge_t x, a, z, y, out;
} block_t;

static int64_t batch = 2; /* of x, for the next make_block and run */

/* The residual block above; @p z_is_a makes z = a (so Z is also the fused convolution's X). */
static void make_block(block_t *b, int z_is_a, int trainable) {
    const int64_t xd[4] = {batch, 16, 9, 9};
    n_weights = 0;
    assert_int_equal(ses_graph_create(&b->g), SES_OK);
    assert_int_equal(ses_graph_placeholder(b->g, "x", SES_F32, 4, xd, &b->x), SES_OK);
    b->a = relu(b->g, "relu1", conv(b->g, "conv1", b->x, trainable));
    b->z = z_is_a ? b->a : conv(b->g, "conv2", b->x, trainable);
    b->y = relu(b->g, "relu3", add(b->g, "add", conv(b->g, "conv3", b->a, trainable), b->z));
    b->out = op(b->g, "Transpose", "out", &b->y, 1, NULL, 0);
}

/* A Concat of @p a and @p b on @p axis. */
static ses_edge_t concat(ses_graph_t *g, const char *name, ses_edge_t a, ses_edge_t b,
                         int64_t axis) {
    const ses_edge_t in[2] = {a, b};
    const ses_attr_t attr = ses_attr_int("axis", axis);
    return op(g, "Concat", name, in, 2, &attr, 1);
}

typedef struct run_opts {
    uint32_t in_place, layout;
    const char *conv; /* driver.cpu.conv, or NULL */
} run_opts_t;

/* The placement's "in place:" counts besides the outputs written over an input. */
typedef struct others {
    size_t concats; /* Concats laid out as their inputs */
    size_t views;   /* copies made views of their input */
} others_t;

/* Runs @p fetches with x fed; stores the values and the counts of the placement's "in place:"
 * line (0 without one): outputs written over an input, and the others in *others (when not
 * NULL). */
static ses_status_t run_counting(const block_t *b, run_opts_t o, const ses_edge_t *fetches,
                                 size_t n_fetches, ses_tensor_t **values, size_t *in_place,
                                 others_t *others) {
    const int64_t xd[4] = {batch, 16, 9, 9};
    ses_session_options_t so;
    ses_session_t *s = NULL;
    ses_plan_t *plan = NULL;
    char option[64];
    const char *opts[1] = {option};
    ses_tensor_t *feed = random_tensor(4, xd, 1.0);
    ses_status_t st;

    ses_session_options_init(&so);
    so.in_place = o.in_place;
    so.layout = o.layout;
    so.fallback = SES_FALLBACK_DENY;
    if (o.conv) {
        snprintf(option, sizeof option, "driver.cpu.conv=%s", o.conv);
        so.driver_options = opts;
        so.n_driver_options = 1;
    }
    *in_place = 0;
    if (others)
        *others = (others_t){0, 0};
    rng_state = 0x2545f4914f6cdd1dull; /* the same feed for every run */
    ses_tensor_release(feed);
    feed = random_tensor(4, xd, 1.0);
    st = ses_session_open(b->g, NULL, 0, &so, &s);
    if (st == SES_OK)
        st = ses_session_compile(s, fetches, n_fetches, &b->x, 1, NULL, 0, &plan);
    if (st == SES_OK)
        st = ses_plan_run(plan, &feed, 1, values);
    if (st == SES_OK) {
        const char *line = strstr(ses_plan_placement(plan), "in place: ");
        others_t n = {0, 0};
        if (line)
            assert_int_equal(sscanf(line, "in place: %zu output%*[^,], %zu Concat%*[^,], %zu cop",
                                    in_place, &n.concats, &n.views),
                             3);
        if (others)
            *others = n;
    } else {
        printf("# %s\n", ses_last_error());
    }
    ses_plan_destroy(plan);
    ses_session_destroy(s);
    ses_tensor_release(feed);
    return st;
}

static ses_status_t run(const block_t *b, run_opts_t o, const ses_edge_t *fetches,
                        size_t n_fetches, ses_tensor_t **values, size_t *in_place) {
    return run_counting(b, o, fetches, n_fetches, values, in_place, NULL);
}

static void assert_same_bits(ses_tensor_t *a, ses_tensor_t *b, const char *what) {
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(ses_tensor_count(a), ses_tensor_count(b));
    if (memcmp(ses_tensor_data(a), ses_tensor_data(b), ses_tensor_count(a) * sizeof(float)) != 0)
        fail_msg("%s: the values differ with the output written over its input", what);
}

/* Fetches @p fetches with in_place on and off (the other options as @p o) and checks the values
 * agree bit for bit; returns the "in place" count of the run with it on (the others in
 * *others when not NULL). */
static size_t check_same_counting(const block_t *b, run_opts_t o, const ses_edge_t *fetches,
                                  size_t n, const char *what, others_t *others) {
    ses_tensor_t *on[4] = {NULL}, *off[4] = {NULL};
    size_t count_on, count_off;
    others_t others_off;

    o.in_place = 1;
    assert_int_equal(run_counting(b, o, fetches, n, on, &count_on, others), SES_OK);
    o.in_place = 0;
    assert_int_equal(run_counting(b, o, fetches, n, off, &count_off, &others_off), SES_OK);
    assert_int_equal(count_off, 0);
    assert_int_equal(others_off.concats, 0);
    assert_int_equal(others_off.views, 0);
    for (size_t i = 0; i < n; i++) {
        assert_same_bits(on[i], off[i], what);
        ses_tensor_release(on[i]);
        ses_tensor_release(off[i]);
    }
    return count_on;
}

static size_t check_same(const block_t *b, run_opts_t o, const ses_edge_t *fetches, size_t n,
                         const char *what) {
    return check_same_counting(b, o, fetches, n, what, NULL);
}

/* The Concats laid out in place when @p fetches of @p b run (values checked against off). */
static size_t concats_in_place(const block_t *b, uint32_t layout, const ses_edge_t *fetches,
                               size_t n, const char *what) {
    others_t others;
    check_same_counting(b, (run_opts_t){1, layout, NULL}, fetches, n, what, &others);
    return others.concats;
}

/* The copies made views when @p fetches of @p b run (values checked against off); the outputs
 * written over an input in *in_place. */
static size_t views(const block_t *b, const ses_edge_t *fetches, size_t n, const char *what,
                    size_t *in_place) {
    others_t others;
    *in_place = check_same_counting(b, (run_opts_t){1, 0, NULL}, fetches, n, what, &others);
    return others.views;
}

/* ---- tests -------------------------------------------------------------------------------- */

static void the_fused_convolution_writes_y_over_a_dying_z(void **state) {
    (void)state;
    block_t b;
    make_block(&b, 0, 0);
    /* NCHW (FusedConv) and NCHWc16 (NchwcConv where the CPU has it): the same values. */
    assert_int_equal(check_same(&b, (run_opts_t){1, 0, NULL}, &b.out, 1, "NCHW"), 1);
    assert_int_equal(check_same(&b, (run_opts_t){1, 1, NULL}, &b.out, 1, "NCHWc16"), 1);
    ses_graph_release(b.g);
}

static void the_im2col_path_reads_a_copy_of_z(void **state) {
    (void)state;
    block_t b;
    make_block(&b, 0, 0);
    /* Without oneDNN the convolution writes Y before it adds Z: it must have set Z aside. */
    assert_int_equal(check_same(&b, (run_opts_t){1, 0, "im2col"}, &b.out, 1, "im2col"), 1);
    ses_graph_release(b.g);
}

static void a_z_read_later_fetched_or_also_x_keeps_its_bytes(void **state) {
    (void)state;
    block_t b;
    make_block(&b, 0, 0);
    /* Z fetched beside Y: it lives to the end of the run. */
    const ses_edge_t both[2] = {b.out, b.z};
    assert_int_equal(check_same(&b, (run_opts_t){1, 0, NULL}, both, 2, "z fetched"), 0);
    /* Z read by a node after the convolution (twice, so that the Add takes neither's bytes). */
    const ses_edge_t later[2] = {b.out, add(b.g, "later", b.z, b.z)};
    assert_int_equal(check_same(&b, (run_opts_t){1, 0, NULL}, later, 2, "z read later"), 0);
    ses_graph_release(b.g);

    /* Z is the convolution's X too: oneDNN reads X throughout while it writes Y. */
    make_block(&b, 1, 0);
    assert_int_equal(check_same(&b, (run_opts_t){1, 0, NULL}, &b.out, 1, "z is x"), 0);
    assert_int_equal(check_same(&b, (run_opts_t){1, 1, NULL}, &b.out, 1, "z is x, NCHWc16"), 0);
    ses_graph_release(b.g);
}

static void elementwise_ops_write_over_their_input(void **state) {
    (void)state;
    block_t b;
    make_block(&b, 0, 0);
    /* Exp writes over z (which dies there), Neg over Exp's output: nothing is copied. */
    ses_edge_t e = op(b.g, "Exp", "exp", &b.z, 1, NULL, 0);
    e = op(b.g, "Neg", "neg", &e, 1, NULL, 0);
    e = op(b.g, "Transpose", "t", &e, 1, NULL, 0);
    assert_int_equal(check_same(&b, (run_opts_t){1, 0, NULL}, &e, 1, "exp, neg"), 2);
    ses_graph_release(b.g);
}

static void reshapes_and_copies_are_views_of_their_input(void **state) {
    (void)state;
    block_t b;
    size_t in_place;
    make_block(&b, 0, 0);
    /* Exp's output read by a Flatten, that by another (a view of a view), and by a Transpose
     * that runs: two steps fewer, the same values; Exp writes over z. */
    ses_edge_t e = op(b.g, "Exp", "exp", &b.z, 1, NULL, 0);
    ses_edge_t f = op(b.g, "Flatten", "flatten", &e, 1, NULL, 0);
    ses_edge_t i = op(b.g, "Flatten", "flatten2", &f, 1, NULL, 0);
    ses_edge_t t = op(b.g, "Transpose", "t", &i, 1, NULL, 0);
    ses_edge_t both[2] = {t, op(b.g, "Exp", "exp2", &e, 1, NULL, 0)};
    assert_int_equal(views(&b, &t, 1, "flatten, flatten", &in_place), 2);
    assert_int_equal(in_place, 1); /* Exp over z */
    /* Exp's output is read after the Transpose: the views keep it alive, nothing writes over
     * it (Exp2 gets bytes of its own, and so does the Transpose). */
    assert_int_equal(views(&b, both, 2, "input read later", &in_place), 2);
    assert_int_equal(in_place, 1);
    /* A fetched value is the caller's tensor: the Flatten writes it, the second copies it. */
    ses_edge_t fetched[2] = {f, t};
    assert_int_equal(views(&b, fetched, 2, "view fetched", &in_place), 0);
    ses_graph_release(b.g);
}

static void a_like_op_with_nothing_to_sum_is_a_view(void **state) {
    (void)state;
    block_t b;
    size_t in_place;
    make_block(&b, 0, 0);
    /* ReduceSumLike to the same shape (the gradient of an Add of equal shapes) is a view, and
     * ExpandLike alike; to a smaller shape it sums. */
    const int64_t cd[3] = {16, 1, 1};
    ses_tensor_t *small = random_tensor(3, cd, 1.0);
    ses_edge_t like;
    assert_int_equal(ses_graph_constant(b.g, "small", small, &like), SES_OK);
    ses_tensor_release(small);
    ses_edge_t e = op(b.g, "Exp", "exp", &b.z, 1, NULL, 0);
    ses_edge_t same[2] = {e, b.a}, fewer[2] = {e, like};
    ses_edge_t r = op(b.g, "ReduceSumLike", "same", same, 2, NULL, 0);
    ses_edge_t x = op(b.g, "ExpandLike", "expand", (ses_edge_t[]){r, b.a}, 2, NULL, 0);
    ses_edge_t t = op(b.g, "Transpose", "t", &x, 1, NULL, 0);
    assert_int_equal(views(&b, &t, 1, "ReduceSumLike, ExpandLike", &in_place), 2);
    ses_edge_t summed = op(b.g, "ReduceSumLike", "fewer", fewer, 2, NULL, 0);
    assert_int_equal(views(&b, &summed, 1, "summed", &in_place), 0);
    ses_graph_release(b.g);
}

static void a_concat_of_values_back_to_back_runs_nothing(void **state) {
    (void)state;
    block_t b;
    batch = 1;
    make_block(&b, 0, 0);
    /* Batch 1 on the channels, in NCHW and NCHWc16; and on axis 0 (written -4) at any batch. */
    ses_edge_t c = relu(b.g, "after", concat(b.g, "concat", b.a, b.z, 1));
    assert_int_equal(concats_in_place(&b, 0, &c, 1, "axis 1, NCHW"), 1);
    assert_int_equal(concats_in_place(&b, 1, &c, 1, "axis 1, NCHWc16"), 1);
    /* An input read again after the Concat keeps its values (its bytes live on). */
    ses_edge_t again = add(b.g, "again", c, concat(b.g, "concat2", b.a, b.a, 1));
    const ses_edge_t both[2] = {again, b.out};
    assert_int_equal(concats_in_place(&b, 0, both, 2, "inputs read later"), 1);
    ses_graph_release(b.g);

    batch = 2;
    make_block(&b, 0, 0);
    c = relu(b.g, "after", concat(b.g, "concat", b.a, b.z, -4));
    assert_int_equal(concats_in_place(&b, 0, &c, 1, "axis 0"), 1);
    ses_graph_release(b.g);
}

static void other_concats_still_copy(void **state) {
    (void)state;
    block_t b;
    batch = 2;
    make_block(&b, 0, 0);
    /* Axis 1 at batch 2: image 0 of both inputs comes before image 1. */
    ses_edge_t c = relu(b.g, "after", concat(b.g, "concat", b.a, b.z, 1));
    assert_int_equal(concats_in_place(&b, 0, &c, 1, "batch 2"), 0);
    ses_graph_release(b.g);

    batch = 1;
    make_block(&b, 0, 0);
    /* Inputs in another order than they were made: sigmoid(a) comes after a. */
    const ses_edge_t later = op(b.g, "Sigmoid", "later", &b.a, 1, NULL, 0);
    c = relu(b.g, "after", concat(b.g, "concat", later, b.a, 1));
    assert_int_equal(concats_in_place(&b, 0, &c, 1, "reversed"), 0);
    /* An input fetched as well: written straight into the caller's tensor. */
    ses_edge_t d = relu(b.g, "after2", concat(b.g, "concat2", b.a, b.z, 1));
    const ses_edge_t both[2] = {d, b.z};
    assert_int_equal(concats_in_place(&b, 0, both, 2, "input fetched"), 0);
    /* 9 x 9 floats (324 bytes) would leave a gap before the second input. */
    const int64_t axes[1] = {1};
    const ses_attr_t mean_attrs[2] = {ses_attr_ints("axes", axes, 1), ses_attr_int("keepdims", 1)};
    const ses_edge_t small = op(b.g, "ReduceMean", "mean", &b.a, 1, mean_attrs, 2);
    const ses_edge_t small2 = op(b.g, "ReduceMax", "max", &b.z, 1, mean_attrs, 2);
    ses_edge_t e = relu(b.g, "after3", concat(b.g, "concat3", small, small2, 1));
    assert_int_equal(concats_in_place(&b, 0, &e, 1, "gaps"), 0);
    ses_graph_release(b.g);
    batch = 2;
}

static void gradients_are_the_same_in_place(void **state) {
    (void)state;
    block_t b;
    ses_edge_t fetches[4], grads[3];
    ses_edge_t loss;

    make_block(&b, 0, 1);
    loss = op(b.g, "ReduceSum", "loss", &b.out, 1, NULL, 0);
    assert_int_equal(n_weights, 3);
    assert_int_equal(ses_gradients(b.g, NULL, &loss, 1, weights, 3, NULL, grads), SES_OK);
    fetches[0] = loss;
    memcpy(&fetches[1], grads, sizeof grads);
    /* The gradients read Z's values through the Add's backward only as a shape: the forward's
     * Z still dies at the convolution, and every value agrees bit for bit. */
    check_same(&b, (run_opts_t){1, 0, NULL}, fetches, 4, "gradients");
    ses_graph_release(b.g);
}

static void the_option_and_the_environment_turn_it_off(void **state) {
    (void)state;
    block_t b;
    ses_tensor_t *v = NULL;
    size_t count = 99;
    ses_session_options_t so;
    ses_session_t *s = NULL;

    make_block(&b, 0, 0);
    setenv("SESSION_IN_PLACE", "off", 1);
    assert_int_equal(run(&b, (run_opts_t){1, 0, NULL}, &b.out, 1, &v, &count), SES_OK);
    assert_int_equal(count, 0);
    ses_tensor_release(v);
    unsetenv("SESSION_IN_PLACE");
    assert_int_equal(run(&b, (run_opts_t){1, 0, NULL}, &b.out, 1, &v, &count), SES_OK);
    assert_int_equal(count, 1);
    ses_tensor_release(v);

    ses_session_options_init(&so);
    assert_int_equal(so.in_place, 1);
    so.in_place = 2;
    assert_int_equal(ses_session_open(b.g, NULL, 0, &so, &s), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "in_place is 2"));
    assert_null(s);
    ses_graph_release(b.g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_fused_convolution_writes_y_over_a_dying_z),
        cmocka_unit_test(the_im2col_path_reads_a_copy_of_z),
        cmocka_unit_test(a_z_read_later_fetched_or_also_x_keeps_its_bytes),
        cmocka_unit_test(elementwise_ops_write_over_their_input),
        cmocka_unit_test(reshapes_and_copies_are_views_of_their_input),
        cmocka_unit_test(a_like_op_with_nothing_to_sum_is_a_view),
        cmocka_unit_test(a_concat_of_values_back_to_back_runs_nothing),
        cmocka_unit_test(other_concats_still_copy),
        cmocka_unit_test(gradients_are_the_same_in_place),
        cmocka_unit_test(the_option_and_the_environment_turn_it_off),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
