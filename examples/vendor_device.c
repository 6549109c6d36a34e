/*
 * y = MatMul(Add(x, b), w) on a vendor's device, with what it cannot run falling back to the CPU.
 *
 *   meson devenv -C build examples/vendor_device            runs on "cpu"
 *   SESSION_ADD_DRIVER_FILES=$PWD/acme-build/acme.json \
 *       meson devenv -C build examples/vendor_device acme:0
 *
 * With the SDK's template driver (sdk/template, "acme"), Add runs on acme:0, which has no MatMul
 * kernel, so MatMul falls back to cpu:0 and the session copies the sum across. The program
 * prints where each node ran and the plan's placement summary, and checks y against values it
 * computes itself.
 */
#include <stdio.h>

#include <session/session.h>

/* x is [2,3]; b is [3] and broadcasts over x's rows; w is [3,2]. Small dyadic values, so any
 * order of summation gives these sums exactly. */
static const float x_data[2][3] = {{1.0f, 2.0f, 3.0f}, {4.0f, 5.0f, 6.0f}};
static const float b_data[3] = {0.5f, -1.0f, 2.0f};
static const float w_data[3][2] = {{1.0f, 0.0f}, {-1.0f, 2.0f}, {0.5f, 1.0f}};

int main(int argc, char **argv) {
    const char *device = argc > 1 ? argv[1] : "cpu";
    const int64_t x_dims[] = {2, 3}, b_dims[] = {3}, w_dims[] = {3, 2};
    ses_graph_t *g = NULL;
    ses_session_t *s = NULL;
    ses_plan_t *plan = NULL;
    ses_tensor_t *x = NULL, *b = NULL, *w = NULL, *y_value = NULL;
    ses_edge_t x_edge, consts[2], sum, y;
    ses_session_options_t options;
    int rc = 1;

    /* x is fed at each run; b and w are constants of the graph. */
    if (ses_graph_create(&g) != SES_OK ||
        ses_graph_placeholder(g, "x", SES_F32, 2, x_dims, &x_edge) != SES_OK ||
        ses_tensor_create_from(SES_F32, 1, b_dims, b_data, sizeof b_data, &b) != SES_OK ||
        ses_tensor_create_from(SES_F32, 2, w_dims, w_data, sizeof w_data, &w) != SES_OK ||
        ses_graph_constant(g, "b", b, &consts[0]) != SES_OK ||
        ses_graph_constant(g, "w", w, &consts[1]) != SES_OK ||
        ses_graph_op(g, "Add", "x_plus_b", (ses_edge_t[]){x_edge, consts[0]}, 2, NULL, 0, &sum) !=
            SES_OK ||
        ses_graph_op(g, "MatMul", "y", (ses_edge_t[]){sum, consts[1]}, 2, NULL, 0, &y) != SES_OK) {
        fprintf(stderr, "vendor_device: building the graph: %s\n", ses_last_error());
        goto done;
    }

    /* The device first; the CPU is always added last. WARN runs a node the device cannot run on
     * the next device that can, and says so on stderr. */
    ses_session_options_init(&options);
    options.fallback = SES_FALLBACK_WARN;
    if (ses_session_open(g, &device, 1, &options, &s) != SES_OK ||
        ses_tensor_create_from(SES_F32, 2, x_dims, x_data, sizeof x_data, &x) != SES_OK ||
        ses_session_compile(s, &y, 1, &x_edge, 1, NULL, 0, &plan) != SES_OK ||
        ses_plan_run(plan, &x, 1, &y_value) != SES_OK) {
        fprintf(stderr, "vendor_device: on %s: %s\n", device, ses_last_error());
        goto done;
    }

    printf("placed: Add \"x_plus_b\" on %s\n", ses_plan_node_device(plan, sum.node));
    printf("placed: MatMul \"y\" on %s\n", ses_plan_node_device(plan, y.node));
    printf("%s", ses_plan_placement(plan));

    /* The same computation by hand. */
    const float *got = ses_tensor_data(y_value);
    rc = 0;
    for (int i = 0; i < 2; i++) {
        for (int j = 0; j < 2; j++) {
            float want = 0.0f;
            for (int k = 0; k < 3; k++)
                want += (x_data[i][k] + b_data[k]) * w_data[k][j];
            float diff = got[i * 2 + j] > want ? got[i * 2 + j] - want : want - got[i * 2 + j];
            printf("y[%d][%d] = %g\n", i, j, got[i * 2 + j]);
            if (!(diff <= 1e-6f * (1.0f + (want > 0 ? want : -want)))) {
                fprintf(stderr, "vendor_device: y[%d][%d] is %g on %s, expected %g\n", i, j,
                        got[i * 2 + j], device, want);
                rc = 1;
            }
        }
    }

done:
    ses_tensor_release(y_value);
    ses_plan_destroy(plan);
    ses_session_destroy(s);
    ses_tensor_release(x);
    ses_tensor_release(b);
    ses_tensor_release(w);
    ses_graph_release(g);
    return rc;
}
