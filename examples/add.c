/*
 * c = a + b: build a graph, open a session on the CPU, evaluate c.
 *
 *   meson devenv -C build examples/add
 */
#include <stdio.h>

#include <session/session.h>

int main(void) {
    ses_graph_t *g = NULL;
    ses_session_t *s = NULL;
    ses_tensor_t *a = NULL, *b = NULL, *c_value = NULL;
    ses_edge_t inputs[2], c;
    float x = 3, y = 4, result;
    const char *devices[] = {"cpu"};
    int rc = 1;

    if (ses_graph_create(&g) != SES_OK ||
        ses_tensor_create_from(SES_F32, 0, NULL, &x, sizeof x, &a) != SES_OK ||
        ses_tensor_create_from(SES_F32, 0, NULL, &y, sizeof y, &b) != SES_OK ||
        ses_graph_constant(g, "a", a, &inputs[0]) != SES_OK ||
        ses_graph_constant(g, "b", b, &inputs[1]) != SES_OK ||
        ses_graph_op(g, "Add", "c", inputs, 2, NULL, 0, &c) != SES_OK ||
        ses_session_open(g, devices, 1, NULL, &s) != SES_OK ||
        ses_session_eval(s, &c, 1, NULL, 0, NULL, 0, &c_value) != SES_OK) {
        fprintf(stderr, "add: %s\n", ses_last_error());
        goto done;
    }
    result = *(float *)ses_tensor_data(c_value);
    printf("c = a + b = %g + %g = %g\n", x, y, result);
    rc = result == 7.0f ? 0 : 1;

done:
    ses_tensor_release(c_value);
    ses_session_destroy(s);
    ses_tensor_release(a);
    ses_tensor_release(b);
    ses_graph_release(g);
    return rc;
}
