/*
 * An ONNX model imported from tests/onnx/models and run in a session, shared by onnx_control_test
 * and onnx_sequence_test. Define MODELS (the models' folder) before including it; include it in
 * one .c file (it defines static functions).
 */
#ifndef SES_TESTS_ONNX_MODEL_HARNESS_H
#define SES_TESTS_ONNX_MODEL_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <session/onnx.h>
#include <session/session.h>

#ifndef MODELS
#error "define MODELS, the folder of the models, before including onnx_model_harness.h"
#endif

/* An imported model with its session, and the tensors fed to it. */
typedef struct model {
    ses_onnx_model_t *m;
    ses_session_t *s;
    ses_feed_t feeds[8];
    size_t n_feeds;
} model_t;

static void open_model(model_t *mo, const char *name) {
    char path[512];

    memset(mo, 0, sizeof *mo);
    snprintf(path, sizeof path, MODELS "/%s.onnx", name);
    if (ses_onnx_import_file(path, NULL, &mo->m) != SES_OK)
        fail_msg("%s: %s", name, ses_last_error());
    assert_int_equal(ses_session_open(ses_onnx_model_graph(mo->m), NULL, 0, NULL, &mo->s), SES_OK);
}

/* Feeds input @p name (replacing an earlier feed of it) with @p t, taken over. */
static void feed(model_t *mo, const char *name, ses_tensor_t *t) {
    size_t i = 0;

    while (i < ses_onnx_model_input_count(mo->m) &&
           strcmp(ses_onnx_model_input_name(mo->m, i), name))
        i++;
    assert_true(i < ses_onnx_model_input_count(mo->m));
    for (size_t k = 0; k < mo->n_feeds; k++)
        if (mo->feeds[k].edge.node == ses_onnx_model_input(mo->m, i).node) {
            ses_tensor_release(mo->feeds[k].value);
            mo->feeds[k].value = t;
            return;
        }
    mo->feeds[mo->n_feeds].edge = ses_onnx_model_input(mo->m, i);
    mo->feeds[mo->n_feeds++].value = t;
}

static ses_tensor_t *scalar_i64(int64_t v) {
    ses_tensor_t *t;
    assert_int_equal(ses_tensor_create_from(SES_I64, 0, NULL, &v, sizeof v, &t), SES_OK);
    return t;
}

/* Evaluates output @p index; returns the status and the value in *out. */
static ses_status_t eval(model_t *mo, size_t index, ses_tensor_t **out) {
    ses_edge_t e = ses_onnx_model_output(mo->m, index);
    *out = NULL;
    return ses_session_eval(mo->s, &e, 1, mo->feeds, mo->n_feeds, NULL, 0, out);
}

static void close_model(model_t *mo) {
    for (size_t k = 0; k < mo->n_feeds; k++)
        ses_tensor_release(mo->feeds[k].value);
    ses_session_destroy(mo->s);
    ses_onnx_model_destroy(mo->m);
}

static void expect_import_error(const char *name, ses_status_t code, const char *part) {
    char path[512];
    ses_onnx_model_t *m = (ses_onnx_model_t *)0x1;
    ses_status_t st;

    snprintf(path, sizeof path, MODELS "/%s.onnx", name);
    st = ses_onnx_import_file(path, NULL, &m);
    if (st != code || !strstr(ses_last_error(), part))
        fail_msg("%s: got %d \"%s\", want %d containing \"%s\"", name, st, ses_last_error(), code,
                 part);
    assert_null(m);
}

#endif
