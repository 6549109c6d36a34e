/*
 * Two sessions on one graph: a "stale" model serving inference while a "fresh" one trains.
 * Each session has its own variables; copying them refreshes the stale model.
 *
 *   meson devenv -C build examples/stale_fresh
 */
#include <stdio.h>

#include <session/session.h>

static float eval(ses_session_t *s, ses_edge_t y) {
    ses_tensor_t *value = NULL;
    float v = -1;

    if (ses_session_eval(s, &y, 1, NULL, 0, NULL, 0, &value) == SES_OK)
        v = *(float *)ses_tensor_data(value);
    else
        fprintf(stderr, "stale_fresh: %s\n", ses_last_error());
    ses_tensor_release(value);
    return v;
}

int main(void) {
    ses_graph_t *g = NULL;
    ses_session_t *stale = NULL, *fresh = NULL;
    ses_tensor_t *w0 = NULL, *x = NULL, *trained = NULL;
    ses_edge_t init, w, in[2], y;
    float one = 1, two = 2, learned = 10, before, during, after;
    const char *devices[] = {"cpu"};
    int rc = 1;

    if (ses_graph_create(&g) != SES_OK ||
        ses_tensor_create_from(SES_F32, 0, NULL, &one, sizeof one, &w0) != SES_OK ||
        ses_tensor_create_from(SES_F32, 0, NULL, &two, sizeof two, &x) != SES_OK ||
        ses_tensor_create_from(SES_F32, 0, NULL, &learned, sizeof learned, &trained) != SES_OK ||
        ses_graph_constant(g, "w0", w0, &init) != SES_OK ||
        ses_graph_variable(g, "w", init, &w) != SES_OK ||
        ses_graph_constant(g, "x", x, &in[1]) != SES_OK ||
        (in[0] = w, ses_graph_op(g, "Mul", "y", in, 2, NULL, 0, &y)) != SES_OK ||
        ses_session_open(g, devices, 1, NULL, &stale) != SES_OK ||
        ses_session_open(g, devices, 1, NULL, &fresh) != SES_OK) {
        fprintf(stderr, "stale_fresh: %s\n", ses_last_error());
        goto done;
    }
    before = eval(stale, y);
    /* "Training" the fresh model: here, setting its variable in its own scope. */
    if (ses_scope_set(ses_session_scope(fresh), "w", trained) != SES_OK)
        goto done;
    during = eval(stale, y);
    printf("stale y = %g, fresh y = %g\n", during, eval(fresh, y));
    if (ses_session_copy_variables(stale, fresh) != SES_OK)
        goto done;
    after = eval(stale, y);
    printf("after copying the fresh variables: stale y = %g\n", after);
    rc = before == 2.0f && during == 2.0f && after == 20.0f ? 0 : 1;

done:
    ses_session_destroy(stale);
    ses_session_destroy(fresh);
    ses_tensor_release(w0);
    ses_tensor_release(x);
    ses_tensor_release(trained);
    ses_graph_release(g);
    return rc;
}
