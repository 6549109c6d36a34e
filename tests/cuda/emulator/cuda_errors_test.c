/*
 * h-cuda (issue #22): the CUDA driver's new kernels on the emulated GPU refuse bad inputs with
 * an error naming the node and the input: a GatherElements index out of range (checked on the
 * device), and Resize's antialias, which cuda refuses so that the node runs elsewhere (here:
 * nowhere, fallback denied, so the compile fails naming why).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <session/graph.h>
#include <session/session.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

/* A session on cuda:0 alone: nodes it cannot run fail the compile. */
static ses_session_t *open_cuda(ses_graph_t *g) {
    const char *name = "cuda:0";
    ses_session_options_t options;
    ses_session_t *s = NULL;

    ses_session_options_init(&options);
    options.fallback = SES_FALLBACK_DENY;
    options.log_level = 0;
    if (ses_session_open(g, &name, 1, &options, &s) != SES_OK)
        fail_msg("open cuda:0: %s", ses_last_error());
    return s;
}

static void assert_error_contains(const char *needle) {
    const char *e = ses_last_error();
    if (!e || !strstr(e, needle))
        fail_msg("the error does not contain \"%s\": %s", needle, e ? e : "(none)");
}

/* Element 5 of the indices is 7, outside [-5, 5) of data's axis 0. */
static void gather_elements_names_an_index_out_of_range(void **state) {
    const int64_t dd[] = {5, 4}, id[] = {3, 2};
    ses_graph_t *g = NULL;
    ses_edge_t in[2], y;
    ses_tensor_t *data = NULL, *idx = NULL, *out = NULL;
    const ses_attr_t axis = ses_attr_int("axis", 0);
    (void)state;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "data", SES_F32, 2, dd, &in[0]), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "indices", SES_I64, 2, id, &in[1]), SES_OK);
    assert_int_equal(ses_graph_op(g, "GatherElements", "ge", in, 2, &axis, 1, &y), SES_OK);
    ses_session_t *s = open_cuda(g);
    assert_int_equal(ses_tensor_create(SES_F32, 2, dd, &data), SES_OK);
    assert_int_equal(ses_tensor_create(SES_I64, 2, id, &idx), SES_OK);
    memset(ses_tensor_data(data), 0, 20 * sizeof(float));
    int64_t *iv = ses_tensor_data(idx);
    const int64_t values[] = {0, 1, -5, 4, 2, 7};
    memcpy(iv, values, sizeof values);
    const ses_feed_t feeds[] = {{in[0], data}, {in[1], idx}};
    assert_int_not_equal(ses_session_eval(s, &y, 1, feeds, 2, NULL, 0, &out), SES_OK);
    assert_null(out);
    assert_error_contains(
        "GatherElements \"ge\": index 7 (element 5 of the indices) is outside "
        "[-5, 5) of axis 0");
    /* The same with every index inside runs. */
    iv[5] = -1;
    assert_int_equal(ses_session_eval(s, &y, 1, feeds, 2, NULL, 0, &out), SES_OK);
    ses_tensor_release(out);
    ses_tensor_release(data);
    ses_tensor_release(idx);
    ses_session_destroy(s);
    ses_graph_release(g);
}

/* Resize with antialias: refused by cuda's supports_node, named in the compile's failure. */
static void resize_refuses_antialias(void **state) {
    const int64_t xd[] = {1, 1, 8, 8}, rd[] = {0}, sd[] = {4};
    ses_graph_t *g = NULL;
    ses_edge_t in[3], y;
    ses_tensor_t *roi = NULL, *scales = NULL;
    const ses_attr_t attrs[] = {ses_attr_string("mode", "linear"), ses_attr_int("antialias", 1)};
    const char *name = "cuda:0";
    ses_session_options_t options;
    ses_session_t *s = NULL;
    (void)state;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    assert_int_equal(ses_graph_placeholder(g, "x", SES_F32, 4, xd, &in[0]), SES_OK);
    assert_int_equal(ses_tensor_create(SES_F32, 1, rd, &roi), SES_OK);
    assert_int_equal(ses_tensor_create(SES_F32, 1, sd, &scales), SES_OK);
    const float sv[] = {1.0f, 1.0f, 0.5f, 0.5f};
    memcpy(ses_tensor_data(scales), sv, sizeof sv);
    assert_int_equal(ses_graph_constant(g, "roi", roi, &in[1]), SES_OK);
    assert_int_equal(ses_graph_constant(g, "scales", scales, &in[2]), SES_OK);
    assert_int_equal(ses_graph_op(g, "Resize", "rz", in, 3, attrs, 2, &y), SES_OK);
    ses_session_options_init(&options);
    options.fallback = SES_FALLBACK_DENY;
    options.log_level = 0;
    assert_int_equal(ses_session_open(g, &name, 1, &options, &s), SES_OK);
    ses_tensor_t *x = NULL, *out = NULL;
    assert_int_equal(ses_tensor_create(SES_F32, 4, xd, &x), SES_OK);
    memset(ses_tensor_data(x), 0, 64 * sizeof(float));
    const ses_feed_t feed = {in[0], x};
    assert_int_not_equal(ses_session_eval(s, &y, 1, &feed, 1, NULL, 0, &out), SES_OK);
    assert_error_contains("Resize \"rz\": antialias is not implemented on cuda");
    ses_tensor_release(x);
    ses_tensor_release(roi);
    ses_tensor_release(scales);
    ses_session_destroy(s);
    ses_graph_release(g);
}

int main(void) {
#ifdef EMU_SKIP
    printf("cuda_errors: skipped: %s\n", EMU_SKIP);
    return 77;
#else
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gather_elements_names_an_index_out_of_range),
        cmocka_unit_test(resize_refuses_antialias),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
#endif
}
