/*
 * Einsum (ops/einsum.c, plugins/cpu/cpu_einsum.c) on the CPU driver, each equation against a
 * reference written as its own loops in double: batch matmul, a diagonal under "...",
 * broadcast "..." dimensions, implicit outputs (alphabetical; a trace), three inputs, an int64
 * sum to a scalar; and the refusals, each naming the node: term counts, ranks, label sizes,
 * characters, output labels, "..." that do not broadcast, a missing equation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <session/session.h>

/* An f64 constant of @p dims, element i = (i * 7 % 11) - 5 + 0.25 * i. */
static ses_edge_t data(ses_graph_t *g, size_t rank, const int64_t *dims, double **out_values) {
    ses_tensor_t *t = NULL;
    ses_edge_t e;
    assert_int_equal(ses_tensor_create(SES_F64, rank, dims, &t), SES_OK);
    double *v = ses_tensor_data(t);
    for (size_t i = 0; i < ses_tensor_count(t); i++)
        v[i] = (double)((int64_t)(i * 7 % 11) - 5) + 0.25 * (double)i;
    *out_values = malloc(ses_tensor_bytes(t) + 8);
    memcpy(*out_values, v, ses_tensor_bytes(t));
    assert_int_equal(ses_graph_constant(g, NULL, t, &e), SES_OK);
    ses_tensor_release(t);
    return e;
}

/* Einsum "e" of @p in with @p equation (NULL: none): its value or the status. */
static ses_status_t einsum(ses_graph_t *g, const char *equation, const ses_edge_t *in, size_t n,
                           ses_tensor_t **out) {
    const ses_attr_t eq = ses_attr_string("equation", equation);
    ses_session_options_t so;
    ses_session_t *s = NULL;
    ses_edge_t y;
    ses_status_t st;

    *out = NULL;
    st = ses_graph_op(g, "Einsum", NULL, in, n, &eq, equation ? 1 : 0, &y);
    if (st != SES_OK)
        return st;
    ses_session_options_init(&so);
    so.fallback = SES_FALLBACK_DENY;
    assert_int_equal(ses_session_open(g, NULL, 0, &so, &s), SES_OK);
    st = ses_session_eval(s, &y, 1, NULL, 0, NULL, 0, out);
    ses_session_destroy(s);
    return st;
}

static void assert_close(ses_tensor_t *y, size_t rank, const int64_t *dims, const double *want) {
    assert_non_null(y);
    assert_int_equal(ses_tensor_rank(y), rank);
    for (size_t d = 0; d < rank; d++)
        assert_int_equal(ses_tensor_dims(y)[d], dims[d]);
    for (size_t i = 0; i < ses_tensor_count(y); i++)
        assert_float_equal(((const double *)ses_tensor_data(y))[i], want[i], 1e-9);
}

static void batch_matmul_and_a_diagonal_under_an_ellipsis(void **state) {
    (void)state;
    ses_graph_t *g;
    const int64_t ad[3] = {2, 3, 4}, bd[3] = {2, 4, 5}, cd[3] = {3, 4, 4};
    double *a, *b, *c, want[30], diag[12];
    ses_tensor_t *y = NULL;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    const ses_edge_t in[2] = {data(g, 3, ad, &a), data(g, 3, bd, &b)};
    assert_int_equal(einsum(g, "bij, bjk -> bik", in, 2, &y), SES_OK);
    for (int bb = 0; bb < 2; bb++)
        for (int i = 0; i < 3; i++)
            for (int k = 0; k < 5; k++) {
                double s = 0;
                for (int j = 0; j < 4; j++)
                    s += a[(bb * 3 + i) * 4 + j] * b[(bb * 4 + j) * 5 + k];
                want[(bb * 3 + i) * 5 + k] = s;
            }
    const int64_t yd[3] = {2, 3, 5};
    assert_close(y, 3, yd, want);
    ses_tensor_release(y);
    ses_edge_t x = data(g, 3, cd, &c);
    assert_int_equal(einsum(g, "...ii ->...i", &x, 1, &y), SES_OK);
    for (int n = 0; n < 3; n++)
        for (int i = 0; i < 4; i++)
            diag[n * 4 + i] = c[(n * 4 + i) * 4 + i];
    const int64_t dd[2] = {3, 4};
    assert_close(y, 2, dd, diag);
    ses_tensor_release(y);
    free(a);
    free(b);
    free(c);
    ses_graph_release(g);
}

/* "...ij,...jk->...ik" with [2,1,2,3] and [3,3,2]: the "..." dims [2,1] and [3] broadcast to
 * [2,3]. */
static void ellipsis_dimensions_broadcast(void **state) {
    (void)state;
    ses_graph_t *g;
    const int64_t ad[4] = {2, 1, 2, 3}, bd[3] = {3, 3, 2};
    double *a, *b, want[24];
    ses_tensor_t *y = NULL;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    const ses_edge_t in[2] = {data(g, 4, ad, &a), data(g, 3, bd, &b)};
    assert_int_equal(einsum(g, "...ij,...jk->...ik", in, 2, &y), SES_OK);
    for (int p = 0; p < 2; p++)
        for (int q = 0; q < 3; q++)
            for (int i = 0; i < 2; i++)
                for (int k = 0; k < 2; k++) {
                    double s = 0;
                    for (int j = 0; j < 3; j++)
                        s += a[(p * 2 + i) * 3 + j] * b[(q * 3 + j) * 2 + k];
                    want[((p * 3 + q) * 2 + i) * 2 + k] = s;
                }
    const int64_t yd[4] = {2, 3, 2, 2};
    assert_close(y, 4, yd, want);
    ses_tensor_release(y);
    free(a);
    free(b);
    ses_graph_release(g);
}

/* Implicit outputs: "ba" is [a, b] (a transpose), "ii" a trace, "ij,jk" a matmul; three
 * inputs "ij,jk,kl->il". */
static void implicit_outputs_and_three_inputs(void **state) {
    (void)state;
    ses_graph_t *g;
    const int64_t md[2] = {3, 4}, sd[2] = {4, 4}, nd[2] = {4, 2}, pd[2] = {2, 5};
    double *m, *sq, *n, *p, want[40];
    ses_tensor_t *y = NULL;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    ses_edge_t me = data(g, 2, md, &m), se = data(g, 2, sd, &sq);
    assert_int_equal(einsum(g, "ba", &me, 1, &y), SES_OK);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++)
            want[i * 3 + j] = m[j * 4 + i];
    const int64_t td[2] = {4, 3};
    assert_close(y, 2, td, want);
    ses_tensor_release(y);
    assert_int_equal(einsum(g, "ii", &se, 1, &y), SES_OK);
    want[0] = sq[0] + sq[5] + sq[10] + sq[15];
    assert_close(y, 0, NULL, want);
    ses_tensor_release(y);
    const ses_edge_t three[3] = {me, data(g, 2, nd, &n), data(g, 2, pd, &p)};
    assert_int_equal(einsum(g, "ij,jk", three, 2, &y), SES_OK);
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 2; k++) {
            double s = 0;
            for (int j = 0; j < 4; j++)
                s += m[i * 4 + j] * n[j * 2 + k];
            want[i * 2 + k] = s;
        }
    const int64_t mm[2] = {3, 2};
    assert_close(y, 2, mm, want);
    ses_tensor_release(y);
    assert_int_equal(einsum(g, "ij,jk,kl->il", three, 3, &y), SES_OK);
    for (int i = 0; i < 3; i++)
        for (int l = 0; l < 5; l++) {
            double s = 0;
            for (int j = 0; j < 4; j++)
                for (int k = 0; k < 2; k++)
                    s += m[i * 4 + j] * n[j * 2 + k] * p[k * 5 + l];
            want[i * 5 + l] = s;
        }
    const int64_t ld[2] = {3, 5};
    assert_close(y, 2, ld, want);
    ses_tensor_release(y);
    free(m);
    free(sq);
    free(n);
    free(p);
    ses_graph_release(g);
}

static void an_int64_sum_to_a_scalar(void **state) {
    (void)state;
    ses_graph_t *g;
    ses_tensor_t *t = NULL, *y = NULL;
    const int64_t d[2] = {2, 3}, v[6] = {1, -2, 3, 40, 5, 600000000000};
    ses_edge_t x;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_tensor_create_from(SES_I64, 2, d, v, sizeof v, &t), SES_OK);
    assert_int_equal(ses_graph_constant(g, NULL, t, &x), SES_OK);
    assert_int_equal(einsum(g, "ij->", &x, 1, &y), SES_OK);
    assert_int_equal(ses_tensor_rank(y), 0);
    assert_int_equal(((const int64_t *)ses_tensor_data(y))[0], 600000000047);
    ses_tensor_release(y);
    ses_tensor_release(t);
    ses_graph_release(g);
}

static void expect(ses_graph_t *g, const char *equation, const ses_edge_t *in, size_t n,
                   const char *part) {
    ses_tensor_t *y = (ses_tensor_t *)0x1;
    ses_status_t st = einsum(g, equation, in, n, &y);
    assert_true(st == SES_INVALID_ARGUMENT || st == SES_UNIMPLEMENTED);
    assert_null(y);
    if (!strstr(ses_last_error(), part) || !strstr(ses_last_error(), "Einsum \""))
        fail_msg("message: %s\nwanted: %s", ses_last_error(), part);
}

static void bad_equations_are_refused_naming_the_node(void **state) {
    (void)state;
    ses_graph_t *g;
    const int64_t ad[2] = {3, 4}, bd[2] = {5, 6}, cd[3] = {2, 3, 4}, ed[3] = {3, 3, 4};
    double *a, *b, *c, *e;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    const ses_edge_t in[2] = {data(g, 2, ad, &a), data(g, 2, bd, &b)};
    expect(g, "ij", in, 2, "equation \"ij\" has 1 input terms, but the node has 2 inputs");
    expect(g, "ijk", in, 1, "term 0 names 3 dimensions, but input 0 is f64[3,4]");
    expect(g, "ij,jk", in, 2, "label 'j' is 4 in one place and 5 in input 1 f64[5,6]");
    expect(g, "i1", in, 1, "term 0 has '1'; labels are letters");
    expect(g, "ij->k", in, 1, "output label 'k' is in no input");
    expect(g, "ij->ii", in, 1, "output label 'i' appears twice");
    expect(g, "i.j", in, 1, "term 0 has a '.' outside one \"...\"");
    expect(g, "ij-i", in, 1, "'-' without '>'");
    const ses_edge_t ell[2] = {data(g, 3, cd, &c), data(g, 3, ed, &e)};
    expect(g, "...j,...j", ell, 2, "the \"...\" dimensions of input 1 f64[3,3,4] do not broadcast");
    expect(g, NULL, in, 1, "attribute equation (STRING) is required");
    free(a);
    free(b);
    free(c);
    free(e);
    ses_graph_release(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(batch_matmul_and_a_diagonal_under_an_ellipsis),
        cmocka_unit_test(ellipsis_dimensions_broadcast),
        cmocka_unit_test(implicit_outputs_and_three_inputs),
        cmocka_unit_test(an_int64_sum_to_a_scalar),
        cmocka_unit_test(bad_equations_are_refused_naming_the_node),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
