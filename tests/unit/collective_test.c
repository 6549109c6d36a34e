/*
 * AllReduce and ses_minimize_distributed without MPI: a fake communicator plays the other ranks
 * of a job. Without a communicator the distributed graph trains exactly like ses_minimize's.
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

/* Two other ranks whose values are 10 and 20 everywhere: the sum adds 30 to each element. */
static int calls;
static size_t counts[8]; /* the counts fake_allreduce was given, in order */
static ses_status_t fake_allreduce(void *user, void *data, size_t count, ses_dtype_t dtype) {
    (void)user;
    if (calls < 8)
        counts[calls] = count;
    calls++;
    for (size_t i = 0; i < count; i++) {
        if (dtype == SES_F32)
            ((float *)data)[i] += 30.0f;
        else
            ((double *)data)[i] += 30.0;
    }
    return SES_OK;
}

static ses_status_t broken_allreduce(void *user, void *data, size_t count, ses_dtype_t dtype) {
    (void)user;
    (void)data;
    (void)count;
    (void)dtype;
    return ses_set_error(SES_UNAVAILABLE, "the network is down");
}

static ses_tensor_t *vec(ses_dtype_t dt, int64_t n, double v0) {
    ses_tensor_t *t;
    assert_int_equal(ses_tensor_create(dt, 1, &n, &t), SES_OK);
    for (int64_t i = 0; i < n; i++) {
        if (dt == SES_F32)
            ((float *)ses_tensor_data(t))[i] = (float)(v0 + (double)i);
        else
            ((double *)ses_tensor_data(t))[i] = v0 + (double)i;
    }
    return t;
}

static void allreduce_averages_each_input_over_the_job(void **state) {
    ses_graph_t *g;
    ses_session_t *s;
    ses_edge_t in[2], out[2];
    ses_node_t *node;
    ses_tensor_t *a = vec(SES_F32, 3, 1), *b = vec(SES_F64, 2, 5), *res[2] = {NULL, NULL};
    ses_communicator_t comm = {sizeof comm, 0, 3, fake_allreduce, NULL, NULL};
    ses_attr_t sum = ses_attr_string("reduction", "sum");

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_constant(g, "a", a, &in[0]), SES_OK);
    assert_int_equal(ses_graph_constant(g, "b", b, &in[1]), SES_OK);
    assert_int_equal(ses_graph_add_node(g, "AllReduce", "ar", in, 2, NULL, 0, 2, &node), SES_OK);
    out[0] = ses_node_output(node, 0);
    out[1] = ses_node_output(node, 1);
    assert_int_equal(ses_session_open(g, NULL, 0, NULL, &s), SES_OK);
    /* Alone: a copy. */
    assert_int_equal(ses_session_eval(s, out, 2, NULL, 0, NULL, 0, res), SES_OK);
    assert_float_equal(((float *)ses_tensor_data(res[0]))[2], 3.0, 0);
    assert_float_equal(((double *)ses_tensor_data(res[1]))[1], 6.0, 0);
    ses_tensor_release(res[0]);
    ses_tensor_release(res[1]);
    /* In a job of 3: (x + 10 + 20) / 3, one collective per dtype. */
    calls = 0;
    assert_int_equal(ses_session_set_communicator(s, &comm), SES_OK);
    assert_int_equal(ses_session_eval(s, out, 2, NULL, 0, NULL, 0, res), SES_OK);
    assert_int_equal(calls, 2);
    assert_float_equal(((float *)ses_tensor_data(res[0]))[0], (1.0 + 30.0) / 3.0, 1e-6);
    assert_float_equal(((float *)ses_tensor_data(res[0]))[2], (3.0 + 30.0) / 3.0, 1e-6);
    assert_float_equal(((double *)ses_tensor_data(res[1]))[1], (6.0 + 30.0) / 3.0, 1e-12);
    ses_tensor_release(res[0]);
    ses_tensor_release(res[1]);
    ses_session_destroy(s);
    /* reduction "sum" skips the division. */
    assert_int_equal(ses_graph_add_node(g, "AllReduce", "ars", in, 1, &sum, 1, 1, &node), SES_OK);
    out[0] = ses_node_output(node, 0);
    assert_int_equal(ses_session_open(g, NULL, 0, NULL, &s), SES_OK);
    assert_int_equal(ses_session_set_communicator(s, &comm), SES_OK);
    assert_int_equal(ses_session_eval(s, out, 1, NULL, 0, NULL, 0, res), SES_OK);
    assert_float_equal(((float *)ses_tensor_data(res[0]))[1], 32.0, 0);
    ses_tensor_release(res[0]);
    ses_session_destroy(s);
    ses_tensor_release(a);
    ses_tensor_release(b);
    ses_graph_release(g);
}

static void a_failing_collective_names_the_node_and_bad_communicators_are_refused(void **state) {
    ses_graph_t *g;
    ses_session_t *s;
    ses_edge_t in, out;
    ses_node_t *node;
    ses_tensor_t *a = vec(SES_F32, 3, 1), *res = NULL;
    ses_communicator_t comm = {sizeof comm, 1, 2, broken_allreduce, NULL, NULL};
    ses_attr_t bad = ses_attr_string("reduction", "max");

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_constant(g, "a", a, &in), SES_OK);
    assert_int_equal(ses_graph_add_node(g, "AllReduce", "grads", &in, 1, NULL, 0, 1, &node), SES_OK);
    out = ses_node_output(node, 0);
    assert_int_equal(ses_session_open(g, NULL, 0, NULL, &s), SES_OK);
    assert_int_equal(ses_session_set_communicator(s, &comm), SES_OK);
    assert_int_not_equal(ses_session_eval(s, &out, 1, NULL, 0, NULL, 0, &res), SES_OK);
    assert_non_null(strstr(ses_last_error(), "AllReduce \"grads\": the network is down"));
    assert_null(res);
    comm.rank = 2;
    assert_int_equal(ses_session_set_communicator(s, &comm), SES_INVALID_ARGUMENT);
    comm.rank = 0;
    comm.allreduce_sum = NULL;
    assert_int_equal(ses_session_set_communicator(s, &comm), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_session_set_communicator(s, NULL), SES_OK);
    ses_session_destroy(s);
    assert_int_equal(ses_graph_add_node(g, "AllReduce", "max", &in, 1, &bad, 1, 1, &node), SES_OK);
    out = ses_node_output(node, 0);
    assert_int_equal(ses_session_open(g, NULL, 0, NULL, &s), SES_OK);
    assert_int_equal(ses_session_eval(s, &out, 1, NULL, 0, NULL, 0, &res), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "\"mean\" or \"sum\""));
    ses_session_destroy(s);
    ses_tensor_release(a);
    ses_graph_release(g);
}

/* Out of place, as MPI does it: recv = send + 30 (two other ranks holding 10 and 20). */
static int into_calls;
static size_t into_largest;
static ses_status_t fake_allreduce_into(void *user, const void *send, void *recv, size_t count,
                                        ses_dtype_t dtype) {
    (void)user;
    into_calls++;
    into_largest = count > into_largest ? count : into_largest;
    assert_ptr_not_equal(send, recv);
    for (size_t i = 0; i < count; i++) {
        if (dtype == SES_F32)
            ((float *)recv)[i] = ((const float *)send)[i] + 30.0f;
        else
            ((double *)recv)[i] = ((const double *)send)[i] + 30.0;
    }
    return SES_OK;
}

static ses_status_t must_not_be_called(void *user, const void *send, void *recv, size_t count,
                                       ses_dtype_t dtype) {
    (void)user, (void)send, (void)recv, (void)count, (void)dtype;
    fail_msg("allreduce_sum_into was called though struct_size leaves it out");
    return SES_INTERNAL;
}

/*
 * Large tensors (64 KiB and more, in host memory) are summed without copies: a computed one that
 * only the AllReduce reads in place, in its own slot; a constant or fed one straight from input
 * to output through allreduce_sum_into. The small ones are still fused into one in-place
 * collective per dtype. The results are the same either way, and a communicator of the first
 * version (struct_size ending at user) is used in place only.
 */
static void large_tensors_are_reduced_from_input_to_output_without_copies(void **state) {
    enum { BIG = 20000 }; /* 80,000 bytes of f32 */
    ses_graph_t *g;
    ses_session_t *s;
    ses_edge_t in[5], out[5], fed, doubled, small_fed, tripled;
    ses_node_t *node;
    ses_tensor_t *big = vec(SES_F32, BIG, 1), *small = vec(SES_F32, 5, 2),
                 *bigd = vec(SES_F64, BIG, 3), *feed = vec(SES_F32, BIG, 4),
                 *feed5 = vec(SES_F32, 5, 7), *res[5] = {0};
    ses_communicator_t comm = {sizeof comm, 1, 3, fake_allreduce, NULL, fake_allreduce_into};
    const int64_t bigdim = BIG, five = 5;
    ses_feed_t feeds[2];

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_constant(g, "big", big, &in[0]), SES_OK);
    assert_int_equal(ses_graph_constant(g, "small", small, &in[1]), SES_OK);
    assert_int_equal(ses_graph_constant(g, "bigd", bigd, &in[2]), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "fed", SES_F32, 1, &bigdim, &fed), SES_OK);
    /* Computed in the plan's arena: fed + fed. */
    assert_int_equal(ses_graph_op(g, "Add", "doubled", (ses_edge_t[]){fed, fed}, 2, NULL, 0,
                                  &doubled), SES_OK);
    in[3] = doubled;
    /* And a small one computed there: it joins doubled in the f32 bucket, one collective. */
    assert_int_equal(ses_graph_placeholder(g, "small_fed", SES_F32, 1, &five, &small_fed), SES_OK);
    assert_int_equal(ses_graph_op(g, "Add", "tripled", (ses_edge_t[]){small_fed, small_fed}, 2,
                                  NULL, 0, &tripled), SES_OK);
    in[4] = tripled;
    assert_int_equal(ses_graph_add_node(g, "AllReduce", "ar", in, 5, NULL, 0, 5, &node), SES_OK);
    /* Fetch all but doubled's and tripled's sums: a fetched value is the caller's tensor, not a
     * bucket member. Their sums are read through Identity nodes instead. */
    for (int i = 0; i < 3; i++)
        out[i] = ses_node_output(node, (uint32_t)i);
    assert_int_equal(ses_graph_op(g, "Identity", NULL, (ses_edge_t[]){ses_node_output(node, 3)}, 1,
                                  NULL, 0, &out[3]), SES_OK);
    assert_int_equal(ses_graph_op(g, "Identity", NULL, (ses_edge_t[]){ses_node_output(node, 4)}, 1,
                                  NULL, 0, &out[4]), SES_OK);
    feeds[0] = (ses_feed_t){fed, feed};
    feeds[1] = (ses_feed_t){small_fed, feed5};
    assert_int_equal(ses_session_open(g, NULL, 0, NULL, &s), SES_OK);
    for (int version = 2; version >= 1; version--) {
        calls = into_calls = 0;
        into_largest = 0;
        if (version == 1) {
            comm.struct_size = (uint32_t)(offsetof(ses_communicator_t, user) + sizeof(void *));
            comm.allreduce_sum_into = must_not_be_called;
        }
        assert_int_equal(ses_session_set_communicator(s, &comm), SES_OK);
        assert_int_equal(ses_session_eval(s, out, 5, feeds, 2, NULL, 0, res), SES_OK);
        /* "doubled" and "tripled" are computed in the arena and read by the AllReduce alone:
         * their outputs take the inputs' slots, placed back to back (80,000 bytes is a multiple
         * of the arena's 64-byte alignment) and summed there, in place, by one collective, with
         * either version. */
        assert_int_equal(counts[0], BIG + 5);
        if (version == 2) {
            assert_int_equal(into_calls, 2); /* big and bigd, from the constants' tensors */
            assert_int_equal(into_largest, BIG);
            assert_int_equal(calls, 2); /* doubled in place; small, alone in the f32 bucket */
            assert_int_equal(counts[1], 5);
        } else {
            assert_int_equal(into_calls, 0);
            assert_int_equal(calls, 3); /* doubled in place; big and small fused; bigd */
            assert_int_equal(counts[1], BIG + 5);
            assert_int_equal(counts[2], BIG);
        }
        for (int64_t i = 0; i < BIG; i += 997) {
            assert_float_equal(((float *)ses_tensor_data(res[0]))[i], (1.0 + i + 30.0) / 3.0,
                               1e-3);
            assert_float_equal(((double *)ses_tensor_data(res[2]))[i], (3.0 + i + 30.0) / 3.0,
                               1e-12);
            assert_float_equal(((float *)ses_tensor_data(res[3]))[i],
                               (2.0 * (4.0 + i) + 30.0) / 3.0, 1e-3);
        }
        assert_float_equal(((float *)ses_tensor_data(res[1]))[4], (6.0 + 30.0) / 3.0, 1e-6);
        for (int64_t i = 0; i < 5; i++)
            assert_float_equal(((float *)ses_tensor_data(res[4]))[i],
                               (2.0 * (7.0 + i) + 30.0) / 3.0, 1e-5);
        /* The inputs are untouched. */
        assert_float_equal(((float *)ses_tensor_data(big))[7], 8.0, 0);
        assert_float_equal(((float *)ses_tensor_data(feed))[7], 11.0, 0);
        for (int i = 0; i < 5; i++) {
            ses_tensor_release(res[i]);
            res[i] = NULL;
        }
    }
    /* A struct_size that does not reach user is refused. */
    comm.struct_size = (uint32_t)offsetof(ses_communicator_t, user);
    assert_int_equal(ses_session_set_communicator(s, &comm), SES_INVALID_ARGUMENT);
    ses_session_destroy(s);
    ses_tensor_release(big);
    ses_tensor_release(small);
    ses_tensor_release(bigd);
    ses_tensor_release(feed);
    ses_tensor_release(feed5);
    ses_graph_release(g);
}

/* RankWeight: 1/N in like's shape and dtype; 1 without a communicator; other dtypes refused. */
static void rank_weight_is_one_over_the_ranks(void **state) {
    ses_graph_t *g;
    ses_session_t *s;
    ses_edge_t like, liked, w[2], bad;
    ses_tensor_t *a = vec(SES_F32, 3, 1), *b = vec(SES_F64, 2, 1), *res[2] = {NULL, NULL};
    ses_tensor_t *ints = NULL;
    const int64_t two = 2;
    ses_communicator_t comm = {sizeof comm, 0, 4, fake_allreduce, NULL, NULL};

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_constant(g, "a", a, &like), SES_OK);
    assert_int_equal(ses_graph_constant(g, "b", b, &liked), SES_OK);
    assert_int_equal(ses_graph_op(g, "RankWeight", "wa", &like, 1, NULL, 0, &w[0]), SES_OK);
    assert_int_equal(ses_graph_op(g, "RankWeight", "wb", &liked, 1, NULL, 0, &w[1]), SES_OK);
    assert_int_equal(ses_session_open(g, NULL, 0, NULL, &s), SES_OK);
    for (int job = 0; job < 2; job++) {
        double want = job ? 0.25 : 1.0;
        if (job)
            assert_int_equal(ses_session_set_communicator(s, &comm), SES_OK);
        assert_int_equal(ses_session_eval(s, w, 2, NULL, 0, NULL, 0, res), SES_OK);
        assert_int_equal(ses_tensor_dtype(res[0]), SES_F32);
        assert_int_equal(ses_tensor_count(res[0]), 3);
        assert_int_equal(ses_tensor_dtype(res[1]), SES_F64);
        for (int i = 0; i < 3; i++)
            assert_float_equal(((float *)ses_tensor_data(res[0]))[i], want, 0);
        for (int i = 0; i < 2; i++)
            assert_float_equal(((double *)ses_tensor_data(res[1]))[i], want, 0);
        ses_tensor_release(res[0]);
        ses_tensor_release(res[1]);
    }
    ses_session_destroy(s);
    assert_int_equal(ses_tensor_create(SES_I64, 1, &two, &ints), SES_OK);
    memset(ses_tensor_data(ints), 0, ses_tensor_bytes(ints));
    assert_int_equal(ses_graph_constant(g, "ints", ints, &like), SES_OK);
    assert_int_equal(ses_graph_op(g, "RankWeight", "wi", &like, 1, NULL, 0, &bad), SES_OK);
    assert_int_equal(ses_session_open(g, NULL, 0, NULL, &s), SES_OK);
    assert_int_equal(ses_session_eval(s, &bad, 1, NULL, 0, NULL, 0, res), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "RankWeight \"wi\""));
    assert_null(res[0]);
    ses_session_destroy(s);
    ses_tensor_release(ints);
    ses_tensor_release(a);
    ses_tensor_release(b);
    ses_graph_release(g);
}

/* A linear model w·x with an MSE loss, trained 3 steps; returns w. */
static void train(int distributed, const ses_communicator_t *comm, float w_out[4]) {
    static const float xs[8] = {1, 2, 3, 4, -1, 0.5f, 2, 1}, ts[2] = {3, -1};
    const int64_t xd[2] = {2, 4}, wd[2] = {4, 1}, td[2] = {2, 1};
    ses_graph_t *g;
    ses_session_t *s;
    ses_edge_t x, t, w, init, y, loss;
    ses_tensor_t *tx, *tt, *tw, *after = NULL;
    ses_node_t *step, *vars[1];
    ses_optimizer_t opt;
    float w0[4] = {0.1f, -0.2f, 0.3f, 0.05f};

    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_tensor_create_from(SES_F32, 2, xd, xs, sizeof xs, &tx), SES_OK);
    assert_int_equal(ses_tensor_create_from(SES_F32, 2, td, ts, sizeof ts, &tt), SES_OK);
    assert_int_equal(ses_tensor_create_from(SES_F32, 2, wd, w0, sizeof w0, &tw), SES_OK);
    assert_int_equal(ses_graph_constant(g, "x", tx, &x), SES_OK);
    assert_int_equal(ses_graph_constant(g, "t", tt, &t), SES_OK);
    assert_int_equal(ses_graph_constant(g, "w0", tw, &init), SES_OK);
    assert_int_equal(ses_graph_variable(g, "w", init, &w), SES_OK);
    assert_int_equal(ses_graph_op(g, "MatMul", "y", (ses_edge_t[]){x, w}, 2, NULL, 0, &y), SES_OK);
    assert_int_equal(ses_mean_squared_error(g, "loss", y, t, SES_REDUCTION_MEAN, &loss), SES_OK);
    ses_optimizer_sgd(&opt, 0.05);
    vars[0] = w.node;
    assert_int_equal((distributed ? ses_minimize_distributed : ses_minimize)(g, "train", loss, &opt,
                                                                            vars, 1, &step),
                     SES_OK);
    assert_int_equal(ses_session_open(g, NULL, 0, NULL, &s), SES_OK);
    if (comm)
        assert_int_equal(ses_session_set_communicator(s, comm), SES_OK);
    for (int i = 0; i < 3; i++)
        assert_int_equal(ses_session_eval(s, NULL, 0, NULL, 0, &step, 1, NULL), SES_OK);
    assert_int_equal(ses_scope_find(ses_session_scope(s), "w", &after), SES_OK);
    memcpy(w_out, ses_tensor_data(after), 4 * sizeof(float));
    ses_tensor_release(after);
    ses_tensor_release(tx);
    ses_tensor_release(tt);
    ses_tensor_release(tw);
    ses_session_destroy(s);
    ses_graph_release(g);
}

static ses_status_t identity_allreduce(void *user, void *data, size_t count, ses_dtype_t dtype) {
    /* Two ranks holding the same gradient: the sum is twice it, the mean the gradient itself. */
    (void)user;
    for (size_t i = 0; i < count; i++) {
        if (dtype == SES_F32)
            ((float *)data)[i] *= 2.0f;
        else
            ((double *)data)[i] *= 2.0;
    }
    calls++;
    return SES_OK;
}

static void distributed_minimize_trains_as_minimize(void **state) {
    float plain[4], alone[4], pair[4];
    ses_communicator_t comm = {sizeof comm, 0, 2, identity_allreduce, NULL, NULL};

    (void)state;
    train(0, NULL, plain);
    train(1, NULL, alone);
    calls = 0;
    train(1, &comm, pair);
    assert_int_equal(calls, 3); /* one fused collective per step */
    for (int i = 0; i < 4; i++) {
        assert_float_equal(alone[i], plain[i], 1e-7);
        assert_float_equal(pair[i], plain[i], 1e-6);
        assert_true(fabs(plain[i] - (float[]){0.1f, -0.2f, 0.3f, 0.05f}[i]) > 1e-4); /* it moved */
    }
}

static void many_gradients_are_bucketed_eight_per_collective(void **state) {
    ses_graph_t *g;
    ses_edge_t sum, loss, v[10];
    ses_node_t *step, *found = NULL;
    ses_optimizer_t opt;

    (void)state;
    assert_int_equal(ses_graph_create(&g), SES_OK);
    for (int i = 0; i < 10; i++) {
        char name[16];
        ses_tensor_t *t = vec(SES_F32, 2, i);
        ses_edge_t init;
        snprintf(name, sizeof name, "v%d", i);
        assert_int_equal(ses_graph_constant(g, NULL, t, &init), SES_OK);
        assert_int_equal(ses_graph_variable(g, name, init, &v[i]), SES_OK);
        ses_tensor_release(t);
        if (i == 0)
            sum = v[0];
        else
            assert_int_equal(ses_graph_op(g, "Add", NULL, (ses_edge_t[]){sum, v[i]}, 2, NULL, 0,
                                          &sum), SES_OK);
    }
    assert_int_equal(ses_graph_op(g, "ReduceSum", "loss", &sum, 1, NULL, 0, &loss), SES_OK);
    ses_optimizer_sgd(&opt, 0.1);
    assert_int_equal(ses_minimize_distributed(g, "train", loss, &opt, NULL, 0, &step), SES_OK);
    assert_int_equal(ses_graph_find_node(g, "train/allreduce_0", &found), SES_OK);
    assert_int_equal(ses_node_output_count(found), 8);
    assert_int_equal(ses_graph_find_node(g, "train/allreduce_1", &found), SES_OK);
    assert_int_equal(ses_node_output_count(found), 2);
    assert_int_equal(ses_graph_find_node(g, "train/allreduce_2", &found), SES_NOT_FOUND);
    ses_graph_release(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(allreduce_averages_each_input_over_the_job),
        cmocka_unit_test(a_failing_collective_names_the_node_and_bad_communicators_are_refused),
        cmocka_unit_test(large_tensors_are_reduced_from_input_to_output_without_copies),
        cmocka_unit_test(rank_weight_is_one_over_the_ranks),
        cmocka_unit_test(distributed_minimize_trains_as_minimize),
        cmocka_unit_test(many_gradients_are_bucketed_eight_per_collective),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
