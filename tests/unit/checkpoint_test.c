/*
 * Checkpoints of sessions: save and restore round-trip every variable; a restore that does not
 * fit the graph lists every mismatch by name and changes nothing; checkpoint folders keep the
 * last N, point "latest" at the newest and fall back when it is damaged.
 */
#include <dirent.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <session/session.h>

#include "test_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

/* ---- fixture: a graph with three variables ---------------------------------------------- */

typedef struct fixture {
    char dir[64];
    char path[128];
    ses_graph_t *graph;
    ses_edge_t w, b, count, y; /* w f32[2,3] (a constant), b f32[3] (an Add), count i64[] */
    ses_session_t *s;
} fixture_t;

static const float W0[6] = {1, 2, 3, 4, 5, 6};

static ses_tensor_t *f32(size_t rank, const int64_t *dims, const float *values) {
    ses_tensor_t *t = NULL;
    size_t n = 1;

    for (size_t i = 0; i < rank; i++)
        n *= (size_t)dims[i];
    if (ses_tensor_create_from(SES_F32, rank, dims, values, n * sizeof *values, &t) != SES_OK)
        fail_msg("tensor: %s", ses_last_error());
    return t;
}

static ses_edge_t constant(ses_graph_t *g, const char *name, ses_tensor_t *t) {
    ses_edge_t e;

    if (ses_graph_constant(g, name, t, &e) != SES_OK)
        fail_msg("constant: %s", ses_last_error());
    ses_tensor_release(t);
    return e;
}

static ses_session_t *open_cpu(ses_graph_t *g) {
    ses_session_t *s = NULL;
    const char *devices[] = {"cpu"};

    if (ses_session_open(g, devices, 1, NULL, &s) != SES_OK)
        fail_msg("open: %s", ses_last_error());
    return s;
}

static int setup(void **state) {
    fixture_t *f = calloc(1, sizeof *f);
    const int64_t w_dims[2] = {2, 3}, b_dims[1] = {3};
    const float half[3] = {0.5f, 0.5f, 0.5f};
    int64_t zero = 0;
    ses_tensor_t *count0 = NULL;
    ses_edge_t in[2], b_init;

    if (!f)
        return -1;
    test_mkdtemp(f->dir, sizeof f->dir);
    snprintf(f->path, sizeof f->path, "%s/vars.safetensors", f->dir);
    assert_int_equal(ses_graph_create(&f->graph), SES_OK);
    assert_int_equal(ses_graph_variable(f->graph, "w", constant(f->graph, "w0", f32(2, w_dims, W0)),
                                        &f->w),
                     SES_OK);
    in[0] = constant(f->graph, "b0", f32(1, b_dims, half));
    in[1] = constant(f->graph, "b1", f32(1, b_dims, half));
    if (ses_graph_op(f->graph, "Add", "b_init", in, 2, NULL, 0, &b_init) != SES_OK)
        fail_msg("b_init: %s", ses_last_error());
    assert_int_equal(ses_graph_variable(f->graph, "b", b_init, &f->b), SES_OK);
    assert_int_equal(ses_tensor_create_from(SES_I64, 0, NULL, &zero, sizeof zero, &count0), SES_OK);
    assert_int_equal(ses_graph_variable(f->graph, "count", constant(f->graph, "count0", count0),
                                        &f->count),
                     SES_OK);
    in[0] = f->w;
    in[1] = f->b;
    if (ses_graph_op(f->graph, "Add", "y", in, 2, NULL, 0, &f->y) != SES_OK)
        fail_msg("y: %s", ses_last_error());
    f->s = open_cpu(f->graph);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture_t *f = *state;

    ses_session_destroy(f->s);
    ses_graph_release(f->graph);
    test_rmtree(f->dir);
    free(f);
    return 0;
}

/* Evaluates every variable once, so that all are set in the scope. */
static void initialize(ses_session_t *s, fixture_t *f) {
    ses_edge_t fetches[3] = {f->w, f->b, f->count};
    ses_tensor_t *out[3] = {NULL, NULL, NULL};

    if (ses_session_eval(s, fetches, 3, NULL, 0, NULL, 0, out) != SES_OK)
        fail_msg("eval: %s", ses_last_error());
    for (int i = 0; i < 3; i++)
        ses_tensor_release(out[i]);
}

/* The scope's value of @p name (a new reference). */
static ses_tensor_t *value_of(ses_session_t *s, const char *name) {
    ses_tensor_t *t = NULL;

    if (ses_scope_find(ses_session_scope(s), name, &t) != SES_OK)
        fail_msg("find %s: %s", name, ses_last_error());
    return t;
}

/* Sets w to @p base + i for element i. */
static void set_w(ses_session_t *s, float base) {
    const int64_t dims[2] = {2, 3};
    float v[6];
    ses_tensor_t *t;

    for (int i = 0; i < 6; i++)
        v[i] = base + (float)i;
    t = f32(2, dims, v);
    assert_int_equal(ses_scope_set(ses_session_scope(s), "w", t), SES_OK);
    ses_tensor_release(t);
}

static float w_at(ses_session_t *s, int i) {
    ses_tensor_t *t = value_of(s, "w");
    float v = ((float *)ses_tensor_data(t))[i];

    ses_tensor_release(t);
    return v;
}

static void folder_listing(const char *dir, char *out, size_t size) {
    struct dirent **entries = NULL;
    int n = scandir(dir, &entries, NULL, alphasort);
    size_t used = 0;

    assert_true(n >= 0);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (entries[i]->d_name[0] != '.')
            used += (size_t)snprintf(out + used, size - used, "%s%s", used ? " " : "",
                                     entries[i]->d_name);
        free(entries[i]);
    }
    free(entries);
}

static void read_text(const char *path, char *out, size_t size) {
    FILE *file = fopen(path, "rb");
    size_t n;

    assert_non_null(file);
    n = fread(out, 1, size - 1, file);
    out[n] = '\0';
    fclose(file);
}

/* ---- save and restore ------------------------------------------------------------------- */

static void save_then_restore_round_trips_every_variable_through_a_new_session(void **state) {
    fixture_t *f = *state;
    ses_session_t *fresh = open_cpu(f->graph);
    ses_safetensors_t file;
    ses_tensor_t *out = NULL, *b = NULL;
    uint64_t step = 99;

    initialize(f->s, f);
    set_w(f->s, 10);
    if (ses_session_save(f->s, f->path, 42) != SES_OK)
        fail_msg("save: %s", ses_last_error());

    /* The file holds the three variables, the step and the format. */
    assert_int_equal(ses_safetensors_read(f->path, &file), SES_OK);
    assert_int_equal(file.n, 3);
    assert_string_equal(file.names[0], "w");
    assert_string_equal(file.names[1], "b");
    assert_string_equal(file.names[2], "count");
    assert_int_equal(file.n_metadata, 2);
    assert_string_equal(file.metadata_keys[0], "step");
    assert_string_equal(file.metadata_values[0], "42");
    assert_string_equal(file.metadata_keys[1], "format");
    assert_string_equal(file.metadata_values[1], "libsession-checkpoint-1");
    ses_safetensors_free(&file);

    /* A session whose variables were never initialized takes the file's values. */
    if (ses_session_restore(fresh, f->path, 0, &step) != SES_OK)
        fail_msg("restore: %s", ses_last_error());
    assert_int_equal(step, 42);
    assert_true(w_at(fresh, 0) == 10.0f && w_at(fresh, 5) == 15.0f);
    b = value_of(fresh, "b");
    assert_true(((float *)ses_tensor_data(b))[2] == 1.0f);
    ses_tensor_release(b);
    /* And evals read them instead of running the initializers. */
    assert_int_equal(ses_session_eval(fresh, &f->y, 1, NULL, 0, NULL, 0, &out), SES_OK);
    assert_true(((float *)ses_tensor_data(out))[4] == 15.0f);
    ses_tensor_release(out);
    /* Restoring into an initialized session replaces the values. */
    set_w(fresh, -1);
    assert_int_equal(ses_session_restore(fresh, f->path, 0, NULL), SES_OK);
    assert_true(w_at(fresh, 1) == 11.0f);
    ses_session_destroy(fresh);
}

static void only_initialized_variables_are_saved(void **state) {
    fixture_t *f = *state;
    ses_tensor_t *out = NULL;
    ses_safetensors_t file;

    assert_int_equal(ses_session_eval(f->s, &f->w, 1, NULL, 0, NULL, 0, &out), SES_OK);
    ses_tensor_release(out);
    assert_int_equal(ses_session_save(f->s, f->path, 1), SES_OK);
    assert_int_equal(ses_safetensors_read(f->path, &file), SES_OK);
    assert_int_equal(file.n, 1);
    assert_string_equal(file.names[0], "w");
    ses_safetensors_free(&file);
}

/* The message lists each mismatch with both sides; the scope keeps the very same tensors. */
static void a_restore_that_does_not_fit_lists_every_mismatch_and_changes_nothing(void **state) {
    fixture_t *f = *state;
    const int64_t wrong[2] = {3, 2}, three = 3;
    const float zeros[6] = {0};
    ses_tensor_t *tensors[3], *before_w, *before_b, *after;
    const char *names[3] = {"w", "zzz", "y"};
    const char *message;
    uint64_t step = 5;

    initialize(f->s, f);
    before_w = value_of(f->s, "w");
    before_b = value_of(f->s, "b");
    tensors[0] = f32(2, wrong, zeros);
    tensors[1] = f32(1, &three, zeros);
    tensors[2] = f32(1, &three, zeros);
    assert_int_equal(ses_safetensors_write(f->path, names, tensors, 3, NULL, NULL, 0), SES_OK);

    assert_int_equal(ses_session_restore(f->s, f->path, 0, &step), SES_INVALID_ARGUMENT);
    message = ses_last_error();
    assert_int_equal(step, 0);
    if (!strstr(message, "\"w\": the file has f32[3,2], the variable is f32[2,3]") ||
        !strstr(message, "\"zzz\" (f32[3] in the file) is not a variable of the graph") ||
        !strstr(message, "\"y\" (f32[3] in the file) is a Add node of the graph") ||
        !strstr(message, "variable \"b\" is not in the file") ||
        !strstr(message, "variable \"count\" is not in the file") ||
        !strstr(message, "5 mismatches") || !strstr(message, f->path))
        fail_msg("message: %s", message);
    /* With missing variables allowed, the other three mismatches remain. */
    assert_int_equal(ses_session_restore(f->s, f->path, 1, NULL), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "3 mismatches"));
    assert_null(strstr(ses_last_error(), "\"count\""));

    after = value_of(f->s, "w");
    assert_ptr_equal(after, before_w);
    ses_tensor_release(after);
    after = value_of(f->s, "b");
    assert_ptr_equal(after, before_b);
    ses_tensor_release(after);
    assert_true(w_at(f->s, 5) == 6.0f);
    for (int i = 0; i < 3; i++)
        ses_tensor_release(tensors[i]);
    ses_tensor_release(before_w);
    ses_tensor_release(before_b);
}

/* Too many mismatches for one message: it says how many were left out, and all are logged. */
static void a_long_mismatch_list_says_how_many_it_leaves_out(void **state) {
    fixture_t *f = *state;
    ses_graph_t *g = NULL;
    ses_session_t *s;
    char name[32];
    const char *message;

    assert_int_equal(ses_graph_create(&g), SES_OK);
    for (int i = 0; i < 120; i++) {
        const float zero = 0;
        ses_edge_t init, v;
        snprintf(name, sizeof name, "v%03d_init", i);
        init = constant(g, name, f32(0, NULL, &zero));
        snprintf(name, sizeof name, "variable_number_%03d", i);
        assert_int_equal(ses_graph_variable(g, name, init, &v), SES_OK);
    }
    s = open_cpu(g);
    assert_int_equal(ses_safetensors_write(f->path, NULL, NULL, 0, NULL, NULL, 0), SES_OK);
    assert_int_equal(ses_session_restore(s, f->path, 0, NULL), SES_INVALID_ARGUMENT);
    message = ses_last_error();
    if (!strstr(message, "120 mismatches") || !strstr(message, "variable_number_000") ||
        !strstr(message, "more (all are in the log)"))
        fail_msg("message: %s", message);
    ses_session_destroy(s);
    ses_graph_release(g);
}

/* A variable not yet set is checked against what its initializer would give, here an Add. */
static void an_unset_variable_is_checked_against_its_initializer(void **state) {
    fixture_t *f = *state;
    const int64_t four = 4;
    const float zeros[4] = {0};
    ses_tensor_t *t = f32(1, &four, zeros);
    const char *name = "b";

    assert_int_equal(ses_safetensors_write(f->path, &name, &t, 1, NULL, NULL, 0), SES_OK);
    assert_int_equal(ses_session_restore(f->s, f->path, 1, NULL), SES_INVALID_ARGUMENT);
    if (!strstr(ses_last_error(),
                "\"b\": the file has f32[4], the variable's initializer gives f32[3]"))
        fail_msg("message: %s", ses_last_error());
    assert_int_equal(ses_scope_count(ses_session_scope(f->s)), 0);
    ses_tensor_release(t);
}

static void allow_missing_restores_only_what_the_file_has(void **state) {
    fixture_t *f = *state;
    const int64_t dims[2] = {2, 3};
    const float sevens[6] = {7, 7, 7, 7, 7, 7};
    ses_tensor_t *t = f32(2, dims, sevens);
    const char *name = "w", *keys[] = {"step"}, *values[] = {"123"};
    uint64_t step = 0;

    assert_int_equal(ses_safetensors_write(f->path, &name, &t, 1, keys, values, 1), SES_OK);
    assert_int_equal(ses_session_restore(f->s, f->path, 0, &step), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_scope_count(ses_session_scope(f->s)), 0);
    assert_int_equal(ses_session_restore(f->s, f->path, 1, &step), SES_OK);
    assert_int_equal(step, 123);
    assert_int_equal(ses_scope_count(ses_session_scope(f->s)), 1);
    assert_true(w_at(f->s, 3) == 7.0f);
    ses_tensor_release(t);
}

static void a_corrupt_or_missing_file_restores_nothing(void **state) {
    fixture_t *f = *state;

    initialize(f->s, f);
    set_w(f->s, 100);
    assert_int_equal(ses_session_save(f->s, f->path, 1), SES_OK);
    set_w(f->s, 200);
    assert_int_equal(truncate(f->path, 40), 0);
    assert_int_equal(ses_session_restore(f->s, f->path, 0, NULL), SES_INVALID_ARGUMENT);
    assert_true(w_at(f->s, 0) == 200.0f);
    assert_int_equal(unlink(f->path), 0);
    assert_int_equal(ses_session_restore(f->s, f->path, 0, NULL), SES_NOT_FOUND);
    /* A malformed step is refused before anything changes. */
    {
        const char *keys[] = {"step"}, *values[] = {"12x"};
        assert_int_equal(ses_safetensors_write(f->path, NULL, NULL, 0, keys, values, 1), SES_OK);
    }
    assert_int_equal(ses_session_restore(f->s, f->path, 1, NULL), SES_INVALID_ARGUMENT);
    assert_non_null(strstr(ses_last_error(), "\"12x\""));
    assert_true(w_at(f->s, 0) == 200.0f);
}

static void a_closed_session_neither_saves_nor_restores(void **state) {
    fixture_t *f = *state;

    assert_int_equal(ses_session_close(f->s), SES_OK);
    assert_int_equal(ses_session_save(f->s, f->path, 1), SES_FAILED_PRECONDITION);
    assert_int_equal(ses_session_restore(f->s, f->path, 1, NULL), SES_FAILED_PRECONDITION);
    assert_int_equal(ses_session_save(NULL, f->path, 1), SES_INVALID_ARGUMENT);
    assert_int_equal(ses_session_restore(f->s, NULL, 1, NULL), SES_INVALID_ARGUMENT);
}

/* Evals running while checkpoints are saved and restored see whole values and nothing leaks. */
typedef struct worker {
    fixture_t *f;
    int failures;
} worker_t;

static void *evaluate_many(void *arg) {
    worker_t *w = arg;

    for (int i = 0; i < 200; i++) {
        ses_tensor_t *out = NULL;
        float v;
        if (ses_session_eval(w->f->s, &w->f->y, 1, NULL, 0, NULL, 0, &out) != SES_OK) {
            w->failures++;
            continue;
        }
        /* y[0] = w[0] + b[0], and w[0] is 1 or 50 whole, b[0] is 1. */
        v = ((float *)ses_tensor_data(out))[0];
        if (v != 2.0f && v != 51.0f)
            w->failures++;
        ses_tensor_release(out);
    }
    return NULL;
}

static void saves_and_restores_run_beside_evals(void **state) {
    fixture_t *f = *state;
    char other[160];
    pthread_t threads[2];
    worker_t workers[2] = {{f, 0}, {f, 0}};

    snprintf(other, sizeof other, "%s/other.safetensors", f->dir);
    initialize(f->s, f);
    assert_int_equal(ses_session_save(f->s, f->path, 1), SES_OK);
    set_w(f->s, 50);
    assert_int_equal(ses_session_save(f->s, other, 2), SES_OK);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, evaluate_many, &workers[i]), 0);
    for (int i = 0; i < 50; i++) {
        if (ses_session_restore(f->s, i % 2 ? f->path : other, 0, NULL) != SES_OK ||
            ses_session_save(f->s, i % 2 ? other : f->path, (uint64_t)i) != SES_OK)
            fail_msg("checkpoint %d: %s", i, ses_last_error());
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(threads[i], NULL);
        assert_int_equal(workers[i].failures, 0);
    }
}

/* ---- checkpoint folders ----------------------------------------------------------------- */

static void a_folder_keeps_the_last_n_and_points_latest_at_the_newest(void **state) {
    fixture_t *f = *state;
    char dir[128], listing[512], text[64], *path = NULL;
    uint64_t step = 0;

    snprintf(dir, sizeof dir, "%s/run/ckpts", f->dir); /* two levels that do not exist yet */
    initialize(f->s, f);
    for (uint64_t i = 1; i <= 5; i++)
        if (ses_checkpoint_save(f->s, dir, i, 2) != SES_OK)
            fail_msg("save %" PRIu64 ": %s", i, ses_last_error());
    folder_listing(dir, listing, sizeof listing);
    assert_string_equal(listing, "ckpt-4.safetensors ckpt-5.safetensors latest");
    snprintf(listing, sizeof listing, "%s/latest", dir);
    read_text(listing, text, sizeof text);
    assert_string_equal(text, "ckpt-5.safetensors\n");
    assert_int_equal(ses_checkpoint_latest(dir, &path, &step), SES_OK);
    assert_int_equal(step, 5);
    snprintf(listing, sizeof listing, "%s/ckpt-5.safetensors", dir);
    assert_string_equal(path, listing);
    free(path);

    /* keep_last 0 keeps all. */
    assert_int_equal(ses_checkpoint_save(f->s, dir, 6, 0), SES_OK);
    folder_listing(dir, listing, sizeof listing);
    assert_string_equal(listing,
                        "ckpt-4.safetensors ckpt-5.safetensors ckpt-6.safetensors latest");
}

/* After a restart from an older checkpoint, the new one is kept even though higher steps are
 * in the folder, and latest names it. */
static void the_checkpoint_just_written_is_always_kept(void **state) {
    fixture_t *f = *state;
    char listing[512], *path = NULL;
    uint64_t step = 0;

    initialize(f->s, f);
    assert_int_equal(ses_checkpoint_save(f->s, f->dir, 10, 2), SES_OK);
    assert_int_equal(ses_checkpoint_save(f->s, f->dir, 11, 2), SES_OK);
    assert_int_equal(ses_checkpoint_save(f->s, f->dir, 3, 2), SES_OK);
    folder_listing(f->dir, listing, sizeof listing);
    assert_string_equal(listing, "ckpt-11.safetensors ckpt-3.safetensors latest");
    assert_int_equal(ses_checkpoint_latest(f->dir, &path, &step), SES_OK);
    assert_int_equal(step, 3);
    free(path);
}

static void latest_falls_back_to_the_newest_good_checkpoint(void **state) {
    fixture_t *f = *state;
    char file[160], *path = NULL;
    uint64_t step = 0;

    initialize(f->s, f);
    for (uint64_t i = 1; i <= 3; i++)
        assert_int_equal(ses_checkpoint_save(f->s, f->dir, i, 0), SES_OK);

    /* latest names a corrupt file. */
    snprintf(file, sizeof file, "%s/ckpt-3.safetensors", f->dir);
    assert_int_equal(truncate(file, 30), 0);
    assert_int_equal(ses_checkpoint_latest(f->dir, &path, &step), SES_OK);
    assert_int_equal(step, 2);
    assert_non_null(strstr(path, "/ckpt-2.safetensors"));
    free(path);

    /* latest names a missing file. */
    test_write_file(f->dir, "latest", "ckpt-99.safetensors\n", file, sizeof file);
    assert_int_equal(ses_checkpoint_latest(f->dir, &path, &step), SES_OK);
    assert_int_equal(step, 2);
    free(path);

    /* latest holds something that is not a file name of this folder: never followed. */
    test_write_file(f->dir, "latest", "../../etc/passwd", file, sizeof file);
    assert_int_equal(ses_checkpoint_latest(f->dir, &path, &step), SES_OK);
    assert_int_equal(step, 2);
    free(path);

    /* No latest at all. */
    assert_int_equal(unlink(file), 0);
    assert_int_equal(ses_checkpoint_latest(f->dir, &path, &step), SES_OK);
    assert_int_equal(step, 2);
    free(path);

    /* Every checkpoint corrupt: an error naming them, not "none". */
    snprintf(file, sizeof file, "%s/ckpt-2.safetensors", f->dir);
    assert_int_equal(truncate(file, 3), 0);
    snprintf(file, sizeof file, "%s/ckpt-1.safetensors", f->dir);
    assert_int_equal(truncate(file, 12), 0);
    assert_int_equal(ses_checkpoint_latest(f->dir, &path, &step), SES_INVALID_ARGUMENT);
    assert_null(path);
    assert_int_equal(step, 0);
    assert_non_null(strstr(ses_last_error(), "ckpt-1.safetensors"));
    assert_non_null(strstr(ses_last_error(), "ckpt-2.safetensors"));
}

static void an_empty_or_missing_folder_has_no_latest(void **state) {
    fixture_t *f = *state;
    char missing[160], *path = (char *)1;
    uint64_t step = 7;

    assert_int_equal(ses_checkpoint_latest(f->dir, &path, &step), SES_NOT_FOUND);
    assert_null(path);
    assert_int_equal(step, 0);
    snprintf(missing, sizeof missing, "%s/nope", f->dir);
    assert_int_equal(ses_checkpoint_latest(missing, &path, &step), SES_NOT_FOUND);
    assert_int_equal(ses_checkpoint_restore_latest(f->s, missing, &step), SES_NOT_FOUND);
}

static void restore_latest_gives_the_step_and_the_values(void **state) {
    fixture_t *f = *state;
    ses_session_t *fresh = open_cpu(f->graph);
    uint64_t step = 0;

    initialize(f->s, f);
    set_w(f->s, 20);
    assert_int_equal(ses_checkpoint_save(f->s, f->dir, 7, 3), SES_OK);
    set_w(f->s, 30);
    assert_int_equal(ses_checkpoint_save(f->s, f->dir, 8, 3), SES_OK);
    set_w(f->s, 40);
    if (ses_checkpoint_restore_latest(f->s, f->dir, &step) != SES_OK)
        fail_msg("restore_latest: %s", ses_last_error());
    assert_int_equal(step, 8);
    assert_true(w_at(f->s, 0) == 30.0f);
    assert_int_equal(ses_checkpoint_restore_latest(fresh, f->dir, &step), SES_OK);
    assert_int_equal(step, 8);
    assert_true(w_at(fresh, 2) == 32.0f);
    ses_session_destroy(fresh);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            save_then_restore_round_trips_every_variable_through_a_new_session, setup, teardown),
        cmocka_unit_test_setup_teardown(only_initialized_variables_are_saved, setup, teardown),
        cmocka_unit_test_setup_teardown(
            a_restore_that_does_not_fit_lists_every_mismatch_and_changes_nothing, setup,
            teardown),
        cmocka_unit_test_setup_teardown(a_long_mismatch_list_says_how_many_it_leaves_out, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(an_unset_variable_is_checked_against_its_initializer,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(allow_missing_restores_only_what_the_file_has, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_corrupt_or_missing_file_restores_nothing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_closed_session_neither_saves_nor_restores, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(saves_and_restores_run_beside_evals, setup, teardown),
        cmocka_unit_test_setup_teardown(a_folder_keeps_the_last_n_and_points_latest_at_the_newest,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(the_checkpoint_just_written_is_always_kept, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(latest_falls_back_to_the_newest_good_checkpoint, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(an_empty_or_missing_folder_has_no_latest, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(restore_latest_gives_the_step_and_the_values, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
