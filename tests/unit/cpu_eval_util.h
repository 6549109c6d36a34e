/*
 * Evaluating one fetch of a graph on the CPU driver in a CMocka test, or expecting it to fail
 * with a status and message parts: shared by the op tests (cnn_ops, spatial_ops, cpu_resize).
 * Include after <cmocka.h>.
 */
#ifndef SES_CPU_EVAL_UTIL_H
#define SES_CPU_EVAL_UTIL_H

#include <string.h>

#include <session/session.h>

/* Evaluates @p fetch on the CPU; fails the test with the library's message on error. */
static inline ses_tensor_t *eval1(ses_graph_t *g, ses_edge_t fetch) {
    const char *cpu = "cpu";
    ses_session_t *s = NULL;
    ses_tensor_t *out = NULL;

    assert_int_equal(ses_session_open(g, &cpu, 1, NULL, &s), SES_OK);
    if (ses_session_eval(s, &fetch, 1, NULL, 0, NULL, 0, &out) != SES_OK)
        fail_msg("eval: %s", ses_last_error());
    ses_session_destroy(s);
    return out;
}

/* Evaluating @p fetch fails with @p status and a message holding every string in @p parts. */
static inline void expect_error(ses_graph_t *g, ses_edge_t fetch, ses_status_t status,
                         const char *const *parts, size_t n_parts) {
    const char *cpu = "cpu";
    ses_session_t *s = NULL;
    ses_tensor_t *out = NULL;
    ses_status_t st;

    assert_int_equal(ses_session_open(g, &cpu, 1, NULL, &s), SES_OK);
    st = ses_session_eval(s, &fetch, 1, NULL, 0, NULL, 0, &out);
    if (st != status)
        fail_msg("got status %d (want %d): %s", (int)st, (int)status, ses_last_error());
    for (size_t i = 0; i < n_parts; i++)
        if (!strstr(ses_last_error(), parts[i]))
            fail_msg("message lacks \"%s\": %s", parts[i], ses_last_error());
    assert_null(out);
    ses_session_destroy(s);
}

#endif /* SES_CPU_EVAL_UTIL_H */
