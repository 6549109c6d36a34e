/*
 * Save and Restore as ops: a Save target writes its inputs (variables or computed values) to a
 * safetensors file named after their edges; a Restore target puts a file's values back into its
 * variables in place, all or nothing, listing every mismatch by name.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <session/session.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

typedef struct world {
    ses_graph_t *g;
    ses_edge_t w, b, sum;
    ses_session_t *s;
    char dir[64];
    char path[128];
} world_t;

static ses_edge_t constant(ses_graph_t *g, const char *name, size_t rank, const int64_t *dims,
                           const float *values) {
    ses_tensor_t *t = NULL;
    ses_edge_t e;
    size_t n = 1;

    for (size_t i = 0; i < rank; i++)
        n *= (size_t)dims[i];
    assert_int_equal(ses_tensor_create_from(SES_F32, rank, dims, values, n * sizeof(float), &t),
                     SES_OK);
    assert_int_equal(ses_graph_constant(g, name, t, &e), SES_OK);
    ses_tensor_release(t);
    return e;
}

static int setup(void **state) {
    static world_t w;
    static const float w0[6] = {1, 2, 3, 4, 5, 6}, b0[3] = {10, 20, 30};
    int64_t wd[2] = {2, 3}, bd[1] = {3};
    ses_edge_t in[2];
    const char *cpu = "cpu";

    memset(&w, 0, sizeof w);
    snprintf(w.dir, sizeof w.dir, "/tmp/ses-ckptops-XXXXXX");
    if (!mkdtemp(w.dir))
        return -1;
    snprintf(w.path, sizeof w.path, "%s/model.safetensors", w.dir);
    assert_int_equal(ses_graph_create(&w.g), SES_OK);
    assert_int_equal(ses_graph_variable(w.g, "w", constant(w.g, "w0", 2, wd, w0), &w.w), SES_OK);
    assert_int_equal(ses_graph_variable(w.g, "b", constant(w.g, "b0", 1, bd, b0), &w.b), SES_OK);
    in[0] = w.w;
    in[1] = w.b;
    assert_int_equal(ses_graph_op(w.g, "Add", "sum", in, 2, NULL, 0, &w.sum), SES_OK);
    assert_int_equal(ses_session_open(w.g, &cpu, 1, NULL, &w.s), SES_OK);
    *state = &w;
    return 0;
}

static int teardown(void **state) {
    world_t *w = *state;
    char command[128];

    ses_session_destroy(w->s);
    ses_graph_release(w->g);
    snprintf(command, sizeof command, "rm -rf '%s'", w->dir);
    return system(command) == 0 ? 0 : -1;
}

static ses_node_t *node(world_t *w, const char *op, const char *name, const ses_edge_t *in,
                        size_t n, const char *path) {
    ses_attr_t a = ses_attr_string("path", path);
    ses_node_t *x = NULL;
    if (ses_graph_add_node(w->g, op, name, in, n, &a, 1, 0, &x) != SES_OK)
        fail_msg("%s: %s", op, ses_last_error());
    return x;
}

static void run(world_t *w, ses_node_t *target, ses_status_t want) {
    ses_status_t st = ses_session_eval(w->s, NULL, 0, NULL, 0, &target, 1, NULL);
    if (st != want)
        fail_msg("eval: %d, wanted %d: %s", st, want, ses_last_error());
}

static float scope_value(world_t *w, const char *name, size_t i) {
    ses_tensor_t *t = NULL;
    float v;
    assert_int_equal(ses_scope_find(ses_session_scope(w->s), name, &t), SES_OK);
    v = ((float *)ses_tensor_data(t))[i];
    ses_tensor_release(t);
    return v;
}

static void save_writes_variables_and_computed_values_by_edge_name(void **state) {
    world_t *w = *state;
    ses_edge_t in[3] = {w->w, w->b, w->sum};
    ses_safetensors_t f;
    ses_node_t *save = node(w, "Save", "save_all", in, 3, w->path);

    run(w, save, SES_OK);
    assert_int_equal(ses_safetensors_read(w->path, &f), SES_OK);
    assert_int_equal(f.n, 3);
    assert_string_equal(f.names[0], "w");
    assert_string_equal(f.names[1], "b");
    assert_string_equal(f.names[2], "sum");
    assert_int_equal(ses_tensor_rank(f.tensors[2]), 2);
    assert_true(((float *)ses_tensor_data(f.tensors[2]))[5] == 36.0f);
    ses_safetensors_free(&f);
}

static void restore_puts_the_values_back_in_place(void **state) {
    world_t *w = *state;
    ses_edge_t in[2] = {w->w, w->b};
    ses_node_t *save = node(w, "Save", "save_vars", in, 2, w->path);
    ses_node_t *restore = node(w, "Restore", "restore_vars", in, 2, w->path);
    ses_tensor_t *t = NULL;

    run(w, save, SES_OK);
    assert_int_equal(ses_scope_find(ses_session_scope(w->s), "w", &t), SES_OK);
    ((float *)ses_tensor_data(t))[4] = -99.0f;
    run(w, restore, SES_OK);
    /* The same tensor, changed in place. */
    assert_true(((float *)ses_tensor_data(t))[4] == 5.0f);
    ses_tensor_release(t);
    assert_true(scope_value(w, "b", 2) == 30.0f);
}

static void a_file_that_does_not_fit_restores_nothing_and_names_every_mismatch(void **state) {
    world_t *w = *state;
    int64_t d[1] = {4};
    static const float four[4] = {1, 2, 3, 4};
    ses_edge_t other = constant(w->g, "other", 1, d, four), in[2];
    ses_node_t *save, *restore;

    /* A file whose "w" is [4] and which lacks "b". */
    save = node(w, "Save", "save_other", &other, 1, w->path);
    run(w, save, SES_OK);
    {
        ses_safetensors_t f;
        static const char *const names[] = {"w"};
        assert_int_equal(ses_safetensors_read(w->path, &f), SES_OK);
        assert_int_equal(ses_safetensors_write(w->path, names, f.tensors, 1, NULL, NULL, 0),
                         SES_OK);
        ses_safetensors_free(&f);
    }
    in[0] = w->w;
    in[1] = w->b;
    restore = node(w, "Restore", "restore_bad", in, 2, w->path);
    run(w, restore, SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "nothing restored"));
    assert_non_null(strstr(ses_last_error(), "\"w\" is f32[4] in the file, the variable is f32[2,3]"));
    assert_non_null(strstr(ses_last_error(), "\"b\" is not in the file"));
    assert_true(scope_value(w, "w", 0) == 1.0f);
}

static void missing_files_and_bad_paths_are_errors(void **state) {
    world_t *w = *state;
    ses_node_t *restore = node(w, "Restore", "restore_missing", &w->w, 1, "/nonexistent/x.st");
    ses_node_t *save = node(w, "Save", "save_nowhere", &w->w, 1, "/nonexistent/dir/x.st");
    ses_node_t *x = NULL;
    ses_attr_t a = ses_attr_int("path", 3);

    run(w, restore, SES_NOT_FOUND);
    assert_non_null(strstr(ses_last_error(), "Restore \"restore_missing\""));
    assert_int_not_equal(ses_session_eval(w->s, NULL, 0, NULL, 0, &save, 1, NULL), SES_OK);
    assert_non_null(strstr(ses_last_error(), "Save \"save_nowhere\""));
    /* Restore writes in place, so it takes variables only. */
    {
        ses_node_t *bad = node(w, "Restore", "restore_sum", &w->sum, 1, w->path);
        run(w, bad, SES_INVALID_ARGUMENT);
        assert_non_null(strstr(ses_last_error(), "must be a variable"));
    }
    /* The path must be a string. */
    assert_int_equal(ses_graph_add_node(w->g, "Save", "save_int", &w->w, 1, &a, 1, 0, &x), SES_OK);
    run(w, x, SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "path must be a STRING"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(save_writes_variables_and_computed_values_by_edge_name,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(restore_puts_the_values_back_in_place, setup, teardown),
        cmocka_unit_test_setup_teardown(
            a_file_that_does_not_fit_restores_nothing_and_names_every_mismatch, setup, teardown),
        cmocka_unit_test_setup_teardown(missing_files_and_bad_paths_are_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
