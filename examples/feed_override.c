/*
 * c = a * b, then the same c with a feed that overrides a: a feed can replace any edge, and
 * nothing upstream of it runs.
 *
 *   meson devenv -C build examples/feed_override
 */
#include <stdio.h>

#include <session/session.h>

static int eval(ses_session_t *s, ses_edge_t c, const ses_feed_t *feeds, size_t n, float *out) {
    ses_tensor_t *value = NULL;

    if (ses_session_eval(s, &c, 1, feeds, n, NULL, 0, &value) != SES_OK) {
        fprintf(stderr, "feed_override: %s\n", ses_last_error());
        return -1;
    }
    *out = *(float *)ses_tensor_data(value);
    ses_tensor_release(value);
    return 0;
}

int main(void) {
    ses_graph_t *g = NULL;
    ses_session_t *s = NULL;
    ses_tensor_t *a = NULL, *b = NULL, *three = NULL;
    ses_edge_t in[2], c;
    float two = 2, five = 5, x = 3, plain = 0, fed = 0;
    const char *devices[] = {"cpu"};
    int rc = 1;

    if (ses_graph_create(&g) != SES_OK ||
        ses_tensor_create_from(SES_F32, 0, NULL, &two, sizeof two, &a) != SES_OK ||
        ses_tensor_create_from(SES_F32, 0, NULL, &five, sizeof five, &b) != SES_OK ||
        ses_tensor_create_from(SES_F32, 0, NULL, &x, sizeof x, &three) != SES_OK ||
        ses_graph_constant(g, "a", a, &in[0]) != SES_OK ||
        ses_graph_constant(g, "b", b, &in[1]) != SES_OK ||
        ses_graph_op(g, "Mul", "c", in, 2, NULL, 0, &c) != SES_OK ||
        ses_session_open(g, devices, 1, NULL, &s) != SES_OK) {
        fprintf(stderr, "feed_override: %s\n", ses_last_error());
        goto done;
    }
    if (eval(s, c, NULL, 0, &plain) != 0 ||
        eval(s, c, &(ses_feed_t){in[0], three}, 1, &fed) != 0)
        goto done;
    printf("c = a * b = %g\n", plain);
    printf("c with a fed as %g = %g\n", x, fed);
    rc = plain == 10.0f && fed == 15.0f ? 0 : 1;

done:
    ses_session_destroy(s);
    ses_tensor_release(a);
    ses_tensor_release(b);
    ses_tensor_release(three);
    ses_graph_release(g);
    return rc;
}
