/*
 * Allocation-failure injection (SQLite-style). Each sequence runs once counting its allocations
 * (T) and the distinct allocation sites it reaches (M), then 2T more times: with allocation N
 * failing once (N = 1 .. T), and with N and every later one failing, so that cleanup and error
 * paths run out of memory too. Every run must either succeed or fail with SES_OUT_OF_MEMORY and
 * a message, free everything it made (the sanitizer build checks leaks) and never crash; every
 * one of the M sites must have been failed once. Sequences:
 *  - training: build a model (fc + Relu, fc, softmax cross-entropy, ses_minimize), open a
 *    session, compile a plan, train, eval, save a checkpoint folder, restore it, resume in a
 *    monitored session with the built-in hooks (load, stop, save, log), close;
 *  - registry: a registry of its own reads the manifests and loads the CPU driver, a session
 *    on it evaluates one op;
 *  - onnx: import the committed CNN, run it, write and read .npy, save and restore variables;
 *  - remote: two workers in this process, a graph across them, variables initialized there,
 *    one eval, close (the goodbyes at close are best-effort, so failures there are recovered).
 *
 * What the loop covers: every allocation libsession makes through src/alloc.h while a sequence
 * runs. The default registry (ses_registry_default) and the CPU driver are process-global and
 * loaded once; a warm-up run loads them before counting, so the training and onnx sequences do
 * not reach their one-time allocations (the registry sequence covers loading on a registry of
 * its own). Drivers are separate libraries whose own allocations are not hooked, nor are
 * protobuf-c's. cJSON (manifests, checkpoint headers) allocates through hooks that this test
 * points at the same counter (one site, "cJSON:0"), so its failures are injected too.
 * SES_ALLOC_VERBOSE=1 lists the runs that recovered and the sites never failed.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <session/checkpoint.h>
#include <session/hooks.h>
#include <session/npy.h>
#include <session/onnx.h>
#include <session/remote.h>
#include <session/session.h>
#include <session/train.h>

#include "alloc.h"
#include "error.h"
#include "test_util.h" /* test_mkdtemp */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#define ROWS 4
#define STEPS 2

/* Where the step logger writes (/dev/null), opened once outside the loop. */
static FILE *g_log;

/* Empties @p dir (one level, as the sequence leaves it) so that each run starts alike. */
static void empty_folder(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *ent;
    char path[512];

    if (!d)
        abort();
    while ((ent = readdir(d)) != NULL) {
        if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
        unlink(path);
    }
    closedir(d);
}

/* cJSON's allocations go through the hook; "cJSON" counts as one site. */
static void *cjson_malloc(size_t size) {
    return ses__malloc_at(size, "cJSON", 0);
}

typedef struct outcome {
    ses_status_t status;
    const char *step; /* the call that failed, or NULL */
    char message[256];
} outcome_t;

static ses_tensor_t *make_inputs(ses_tensor_t **out_labels, ses_status_t *st) {
    int64_t xd[2] = {ROWS, 3}, ld[1] = {ROWS};
    ses_tensor_t *x = NULL;

    *out_labels = NULL;
    *st = ses_tensor_create(SES_F32, 2, xd, &x);
    if (*st != SES_OK)
        return NULL;
    *st = ses_tensor_create(SES_I64, 1, ld, out_labels);
    if (*st != SES_OK) {
        ses_tensor_release(x);
        return NULL;
    }
    for (int i = 0; i < ROWS; i++) {
        ((int64_t *)ses_tensor_data(*out_labels))[i] = i % 2;
        for (int k = 0; k < 3; k++)
            ((float *)ses_tensor_data(x))[i * 3 + k] = (float)((i + 1) * (k % 2 ? 1 : -1)) * 0.25f;
    }
    return x;
}

#define STEP(name, call)                                                                            \
    do {                                                                                           \
        o->step = name;                                                                            \
        o->status = (call);                                                                        \
        if (o->status != SES_OK)                                                                   \
            goto done;                                                                             \
    } while (0)

/* Built-in hooks of a monitored session: resume from dir's checkpoint, stop a step later,
 * save every step, log every step. On failure the hooks made so far are destroyed. */
static ses_status_t make_hooks(const char *dir, ses_edge_t loss, ses_hook_t *out[4]) {
    ses_status_t st;

    memset(out, 0, 4 * sizeof *out);
    if ((st = ses_hook_load_checkpoint(dir, &out[0])) != SES_OK ||
        (st = ses_hook_stop_at_step(8, &out[1])) != SES_OK ||
        (st = ses_hook_checkpoint_saver(dir, 1, 0, 1, &out[2])) != SES_OK ||
        (st = ses_hook_step_logger(1, loss, g_log, &out[3])) != SES_OK) {
        for (int i = 0; i < 4; i++) {
            ses_hook_destroy(out[i]);
            out[i] = NULL;
        }
    }
    return st;
}

/* The whole sequence; on a failure the later steps are skipped and everything is destroyed. */
static void run_sequence(const char *dir, outcome_t *o) {
    int64_t xd[2] = {-1, 3}, ld[1] = {-1};
    const char *cpu = "cpu";
    ses_graph_t *g = NULL;
    ses_session_t *s = NULL;
    ses_plan_t *plan = NULL;
    ses_node_t *train = NULL;
    ses_tensor_t *xv = NULL, *lv = NULL, *out = NULL;
    ses_edge_t x, labels, h, logits, loss, fed[2];
    ses_optimizer_t opt;
    ses_hook_t *hooks[4];
    ses_monitored_t *m = NULL;
    uint64_t step = 0;

    empty_folder(dir);
    memset(o, 0, sizeof *o);
    ses__clear_error();
    STEP("ses_graph_create", ses_graph_create(&g));
    STEP("placeholder x", ses_graph_placeholder(g, "x", SES_F32, 2, xd, &x));
    STEP("placeholder labels", ses_graph_placeholder(g, "labels", SES_I64, 1, ld, &labels));
    STEP("ses_fc fc1", ses_fc(g, "fc1", x, 4, SES_ACTIVATION_RELU, 1, &h));
    STEP("ses_fc fc2", ses_fc(g, "fc2", h, 2, SES_ACTIVATION_NONE, 2, &logits));
    STEP("loss", ses_softmax_cross_entropy(g, "loss", logits, labels, SES_REDUCTION_MEAN, &loss));
    ses_optimizer_momentum(&opt, 0.1, 0.9, 0);
    STEP("ses_minimize", ses_minimize(g, "train", loss, &opt, NULL, 0, &train));
    xv = make_inputs(&lv, &o->status);
    o->step = "inputs";
    if (o->status != SES_OK)
        goto done;

    STEP("ses_session_open", ses_session_open(g, &cpu, 1, NULL, &s));
    fed[0] = x;
    fed[1] = labels;
    STEP("ses_session_compile", ses_session_compile(s, &loss, 1, fed, 2, &train, 1, &plan));
    for (int i = 0; i < STEPS; i++) {
        ses_tensor_t *values[2] = {xv, lv};

        STEP("ses_plan_run", ses_plan_run(plan, values, 2, &out));
        ses_tensor_release(out);
        out = NULL;
    }
    {
        ses_feed_t feeds[2] = {{x, xv}, {labels, lv}};
        STEP("ses_session_eval", ses_session_eval(s, &loss, 1, feeds, 2, NULL, 0, &out));
        ses_tensor_release(out);
        out = NULL;
    }
    STEP("ses_checkpoint_save", ses_checkpoint_save(s, dir, 7, 1));
    STEP("ses_checkpoint_restore_latest", ses_checkpoint_restore_latest(s, dir, &step));
    if (step != 7) {
        o->status = SES_INTERNAL;
        snprintf(o->message, sizeof o->message, "restored step %llu, saved 7",
                 (unsigned long long)step);
        o->step = "restored step";
        goto done;
    }
    ses_plan_destroy(plan);
    plan = NULL;

    /* A monitored loop resumes from the checkpoint (step 7), runs and saves step 8, stops. */
    STEP("hooks", make_hooks(dir, loss, hooks));
    STEP("ses_monitored_create", ses_monitored_create(s, hooks, 4, &m)); /* owns the hooks */
    while (!ses_monitored_should_stop(m)) {
        ses_feed_t feeds[2] = {{x, xv}, {labels, lv}};

        STEP("ses_monitored_run", ses_monitored_run(m, NULL, 0, feeds, 2, &train, 1, NULL));
    }
    STEP("ses_monitored_close", ses_monitored_close(m));
    if (ses_monitored_step(m) != 8) {
        o->status = SES_INTERNAL;
        snprintf(o->message, sizeof o->message, "monitored loop stopped at step %llu, want 8",
                 (unsigned long long)ses_monitored_step(m));
        o->step = "monitored step";
        goto done;
    }
    STEP("ses_session_close", ses_session_close(s));
    o->step = NULL;

done:
    if (o->status != SES_OK && !o->message[0])
        snprintf(o->message, sizeof o->message, "%s", ses_last_error());
    ses_tensor_release(out);
    ses_monitored_destroy(m);
    ses_plan_destroy(plan);
    ses_session_destroy(s);
    ses_graph_release(g);
    ses_tensor_release(xv);
    ses_tensor_release(lv);
}

/* A registry of its own (the manifests of SESSION_DRIVER_FILES), its CPU device found and a
 * session opened on it, one eval, then everything destroyed: driver loading under the hook. */
static void run_registry_sequence(outcome_t *o) {
    const char *cpu = "cpu";
    ses_registry_t *reg = NULL;
    const ses_device_t *device = NULL;
    ses_graph_t *g = NULL;
    ses_session_t *s = NULL;
    ses_tensor_t *t = NULL, *out = NULL;
    ses_session_options_t options;
    ses_edge_t c, y, in[2];
    float two = 2.0f;

    memset(o, 0, sizeof *o);
    ses__clear_error();
    STEP("ses_registry_create", ses_registry_create(&reg));
    STEP("ses_registry_find_device", ses_registry_find_device(reg, "cpu", &device));
    STEP("ses_tensor_create_from", ses_tensor_create_from(SES_F32, 0, NULL, &two, sizeof two, &t));
    STEP("ses_graph_create", ses_graph_create(&g));
    STEP("ses_graph_constant", ses_graph_constant(g, "c", t, &c));
    in[0] = in[1] = c;
    STEP("ses_graph_op", ses_graph_op(g, "Mul", "y", in, 2, NULL, 0, &y));
    ses_session_options_init(&options);
    options.registry = reg;
    STEP("ses_session_open", ses_session_open(g, &cpu, 1, &options, &s));
    STEP("ses_session_eval", ses_session_eval(s, &y, 1, NULL, 0, NULL, 0, &out));
    if (*(float *)ses_tensor_data(out) != 4.0f) {
        o->status = SES_INTERNAL;
        o->step = "value";
        snprintf(o->message, sizeof o->message, "2 * 2 gave %g", *(float *)ses_tensor_data(out));
        goto done;
    }
    STEP("ses_session_close", ses_session_close(s));
    o->step = NULL;

done:
    if (o->status != SES_OK && !o->message[0])
        snprintf(o->message, sizeof o->message, "%s", ses_last_error());
    ses_tensor_release(out);
    ses_session_destroy(s);
    ses_graph_release(g);
    ses_tensor_release(t);
    ses_registry_destroy(reg);
}

static void print_missed(const char *file, int line, void *user) {
    (void)user;
    if (getenv("SES_ALLOC_VERBOSE"))
        fprintf(stderr, "  never failed: %s:%d\n", file, line);
}

/* The committed CNN of tests/onnx imported (initializers as variables), run on its input, the
 * output written to and read back from a .npy file, the variables saved to a safetensors file. */
static void run_onnx_sequence(const char *dir, outcome_t *o) {
    const char *cpu = "cpu";
    char path[512];
    ses_onnx_options_t options;
    ses_onnx_model_t *model = NULL;
    ses_session_t *s = NULL;
    ses_tensor_t *input = NULL, *out = NULL, *back = NULL;
    ses_feed_t feed;
    ses_edge_t output;

    empty_folder(dir);
    memset(o, 0, sizeof *o);
    ses__clear_error();
    ses_onnx_options_init(&options);
    options.initializers_as_variables = 1;
    STEP("ses_onnx_import_file",
         ses_onnx_import_file(SOURCE_ROOT "/tests/onnx/models/cnn/model.onnx", &options, &model));
    STEP("ses_npy_read_file",
         ses_npy_read_file(SOURCE_ROOT "/tests/onnx/models/cnn/input_0.npy", &input));
    STEP("ses_session_open", ses_session_open(ses_onnx_model_graph(model), &cpu, 1, NULL, &s));
    feed.edge = ses_onnx_model_input(model, 0);
    feed.value = input;
    output = ses_onnx_model_output(model, 0);
    STEP("ses_session_eval", ses_session_eval(s, &output, 1, &feed, 1, NULL, 0, &out));
    snprintf(path, sizeof path, "%s/out.npy", dir);
    STEP("ses_npy_write_file", ses_npy_write_file(path, out));
    STEP("ses_npy_read_file (written)", ses_npy_read_file(path, &back));
    if (ses_tensor_bytes(back) != ses_tensor_bytes(out) ||
        memcmp(ses_tensor_data(back), ses_tensor_data(out), ses_tensor_bytes(out)) != 0) {
        o->status = SES_INTERNAL;
        o->step = "npy round trip";
        snprintf(o->message, sizeof o->message, "the .npy file read back differs");
        goto done;
    }
    snprintf(path, sizeof path, "%s/vars.safetensors", dir);
    STEP("ses_session_save", ses_session_save(s, path, 3));
    STEP("ses_session_restore", ses_session_restore(s, path, 0, NULL));
    STEP("ses_session_close", ses_session_close(s));
    o->step = NULL;

done:
    if (o->status != SES_OK && !o->message[0])
        snprintf(o->message, sizeof o->message, "%s", ses_last_error());
    ses_tensor_release(back);
    ses_tensor_release(out);
    ses_tensor_release(input);
    ses_session_destroy(s);
    ses_onnx_model_destroy(model);
}

/* Two workers in this process, reached through a transport that hands each request over. */
static ses_status_t worker_call(void *user, uint32_t task, const void *request, size_t bytes,
                                void **out_reply, size_t *out_bytes) {
    ses_remote_worker_t **workers = user;
    int exit_now = 0;

    return ses_remote_worker_handle(workers[task], request, bytes, out_reply, out_bytes,
                                    &exit_now);
}

/* Relu(x · W) with W a variable on worker 1, the MatMul on worker 0 and the Relu here: workers
 * created, the graph shipped, variables initialized there, one eval, the session closed. */
static void run_remote_sequence(const char *dir, outcome_t *o) {
    const char *cpu = "cpu";
    int64_t xd[2] = {2, 3}, wd[2] = {3, 2};
    float xv[6] = {1, -2, 3, -4, 5, -6}, wv[6] = {0.5f, -1, 1, 0.25f, -0.5f, 2};
    ses_remote_worker_t *workers[2] = {NULL, NULL};
    ses_remote_transport_t t = {sizeof t, 2, workers, worker_call, NULL};
    ses_graph_t *g = NULL;
    ses_session_t *s = NULL;
    ses_tensor_t *xt = NULL, *wt = NULL, *out = NULL;
    ses_edge_t x, w0, w, in[2], mm, y;

    (void)dir;
    memset(o, 0, sizeof *o);
    ses__clear_error();
    STEP("ses_remote_worker_create 0", ses_remote_worker_create(&workers[0]));
    STEP("ses_remote_worker_create 1", ses_remote_worker_create(&workers[1]));
    STEP("x", ses_tensor_create_from(SES_F32, 2, xd, xv, sizeof xv, &xt));
    STEP("w", ses_tensor_create_from(SES_F32, 2, wd, wv, sizeof wv, &wt));
    STEP("ses_graph_create", ses_graph_create(&g));
    STEP("constant x", ses_graph_constant(g, "x", xt, &x));
    STEP("constant w0", ses_graph_constant(g, "w0", wt, &w0));
    STEP("variable w", ses_graph_variable(g, "w", w0, &w));
    STEP("device w", ses_node_set_device(w.node, "/task:1/cpu"));
    in[0] = x;
    in[1] = w;
    STEP("MatMul", ses_graph_op(g, "MatMul", "mm", in, 2, NULL, 0, &mm));
    STEP("device mm", ses_node_set_device(mm.node, "/task:0/cpu:0"));
    STEP("Relu", ses_graph_op(g, "Relu", "y", &mm, 1, NULL, 0, &y));
    STEP("ses_remote_session_open", ses_remote_session_open(g, &t, &cpu, 1, NULL, &s));
    STEP("ses_session_initialize_variables", ses_session_initialize_variables(s));
    STEP("ses_session_eval", ses_session_eval(s, &y, 1, NULL, 0, NULL, 0, &out));
    /* Row 0 of x · W: 0.5 - 2 - 1.5 = -3 → 0 and -1 - 0.5 + 6 = 4.5. */
    if (((float *)ses_tensor_data(out))[0] != 0.0f || ((float *)ses_tensor_data(out))[1] != 4.5f) {
        o->status = SES_INTERNAL;
        o->step = "value";
        snprintf(o->message, sizeof o->message, "y[0] = [%g, %g], want [0, 4.5]",
                 ((float *)ses_tensor_data(out))[0], ((float *)ses_tensor_data(out))[1]);
        goto done;
    }
    STEP("ses_session_close", ses_session_close(s));
    o->step = NULL;

done:
    if (o->status != SES_OK && !o->message[0])
        snprintf(o->message, sizeof o->message, "%s", ses_last_error());
    ses_tensor_release(out);
    ses_session_destroy(s);
    ses_graph_release(g);
    ses_tensor_release(xt);
    ses_tensor_release(wt);
    ses_remote_worker_destroy(workers[0]);
    ses_remote_worker_destroy(workers[1]);
}

typedef void (*sequence_fn)(const char *dir, outcome_t *o);

static void registry_sequence(const char *dir, outcome_t *o) {
    (void)dir;
    run_registry_sequence(o);
}

/*
 * Runs @p seq once counting (T allocations, M sites), then with allocation N = 1 .. T failing.
 * Returns through cmocka failures; prints the report line under @p label.
 */
static void inject_every_allocation(const char *label, sequence_fn seq) {
    char dir[64];
    outcome_t o;
    uint64_t total;
    size_t reached;
    unsigned runs = 0, absorbed = 0, bad = 0;
    const char *file;
    int line;
    cJSON_Hooks hooks = {cjson_malloc, free};

    /* Checkpoint saves fsync; on tmpfs that is cheap, and thousands of runs save. */
    snprintf(dir, sizeof dir, "/dev/shm/ses-alloc-XXXXXX");
    if (!mkdtemp(dir))
        test_mkdtemp(dir, sizeof dir);
    /* Warm-up: loads the default registry and the CPU driver, which stay loaded. */
    seq(dir, &o);
    if (o.status != SES_OK)
        fail_msg("warm-up: %s: %s", o.step, o.message);
    cJSON_InitHooks(&hooks);

    ses__alloc_count_start();
    seq(dir, &o);
    ses__alloc_stop();
    if (o.status != SES_OK)
        fail_msg("counting run: %s: %s", o.step, o.message);
    total = ses__alloc_count();
    reached = ses__alloc_sites_counted();
    assert_true(total > 0);

    /* Pass 0 fails allocation N only; pass 1 fails N and every later one, so that cleanup and
     * error paths (which allocate messages, say) run out of memory as well. */
    for (uint64_t i = 0; i < 2 * total; i++) {
        uint64_t pass = i / total, n = i % total + 1;

        if (pass == 0)
            ses__alloc_fail_after(n);
        else
            ses__alloc_fail_from(n);
        seq(dir, &o);
        ses__alloc_stop();
        runs++;
        if (!ses__alloc_injected()) {
            /* Fewer allocations than counted (a cache hit, say): the run must just succeed. */
            if (o.status != SES_OK && bad++ < 20)
                print_error("N=%llu%s (no failure injected): %s: %s: %s\n",
                        (unsigned long long)n, pass ? "+" : "", o.step,
                        ses_status_name(o.status), o.message);
            continue;
        }
        if (o.status == SES_OK) {
            absorbed++; /* the code recovered (a fallback), which is allowed */
            if (getenv("SES_ALLOC_VERBOSE")) {
                file = ses__alloc_injected_site(&line);
                fprintf(stderr, "  recovered from: %s:%d (N=%llu%s of %llu)\n", file, line,
                        (unsigned long long)n, pass ? "+" : "", (unsigned long long)total);
            }
            continue;
        }
        /* Every bad run is reported (the first 20), then the test fails. */
        file = ses__alloc_injected_site(&line);
        if (o.status != SES_OUT_OF_MEMORY && bad++ < 20)
            print_error("N=%llu%s (%s:%d): %s returned %s, want SES_OUT_OF_MEMORY: %s\n",
                        (unsigned long long)n, pass ? "+" : "", file, line, o.step,
                        ses_status_name(o.status), o.message);
        else if (o.status == SES_OUT_OF_MEMORY && !o.message[0] && bad++ < 20)
            print_error("N=%llu%s (%s:%d): %s returned SES_OUT_OF_MEMORY with no message\n",
                        (unsigned long long)n, pass ? "+" : "", file, line, o.step);
    }
    assert_int_equal(bad, 0);
    cJSON_InitHooks(NULL);
    ses__alloc_sites_unfailed(print_missed, NULL);
    /* M: sites the run reaches without failures; sites that only error paths reach (a failure
     * message copied, say) are reported on their own. */
    printf("allocation failure (%s): %u runs, %zu of %zu allocation sites covered "
           "(+%zu of %zu sites reached only on error paths; %u runs recovered)\n",
           label, runs, ses__alloc_sites_counted_failed(), reached,
           ses__alloc_sites_failed() - ses__alloc_sites_counted_failed(),
           ses__alloc_sites_reached() - reached, absorbed);
    /* Every site the counting run reached was failed once by the loop. */
    assert_int_equal(ses__alloc_sites_counted_failed(), reached);
    empty_folder(dir);
    rmdir(dir);
}

static void every_allocation_failure_in_training_is_out_of_memory_or_success(void **state) {
    (void)state;
    g_log = fopen("/dev/null", "w");
    assert_non_null(g_log);
    inject_every_allocation("train, save, restore", run_sequence);
    fclose(g_log);
    g_log = NULL;
}

static void every_allocation_failure_loading_drivers_is_out_of_memory_or_success(void **state) {
    (void)state;
    inject_every_allocation("registry", registry_sequence);
}

static void every_allocation_failure_importing_onnx_is_out_of_memory_or_success(void **state) {
    ses_onnx_model_t *model = NULL;

    (void)state;
    if (ses_onnx_import(NULL, 0, NULL, &model) == SES_UNIMPLEMENTED)
        skip(); /* built without ONNX import */
    inject_every_allocation("onnx import, npy", run_onnx_sequence);
}

static void every_allocation_failure_in_a_remote_session_is_out_of_memory_or_success(void **state) {
    (void)state;
    inject_every_allocation("remote session", run_remote_sequence);
}

/* Message formatting never crashes when memory runs out: ses__strdup_printf gives NULL, the
 * thread's error message (a fixed buffer) is still set and readable. */
static void message_formatting_survives_allocation_failure(void **state) {
    char *s;
    char long_text[6000];

    (void)state;
    memset(long_text, 'x', sizeof long_text - 1);
    long_text[sizeof long_text - 1] = '\0';

    ses__alloc_fail_after(1);
    s = ses__strdup_printf("node %s: %d", "fc1", 3);
    ses__alloc_stop();
    assert_null(s);
    assert_true(ses__alloc_injected());

    ses__alloc_fail_after(1);
    assert_int_equal(ses__fail(SES_OUT_OF_MEMORY, "long: %s", long_text), SES_OUT_OF_MEMORY);
    assert_int_equal(ses_set_error(SES_OUT_OF_MEMORY, "%s", long_text), SES_OUT_OF_MEMORY);
    assert_non_null(ses_last_error());
    assert_true(strlen(ses_last_error()) > 0 && strlen(ses_last_error()) < sizeof long_text);
    assert_string_equal(ses_status_name(SES_OUT_OF_MEMORY), "SES_OUT_OF_MEMORY");
    ses__alloc_stop();

    /* With the hook off, the same calls allocate normally. */
    s = ses__strdup_printf("node %s: %d", "fc1", 3);
    assert_string_equal(s, "node fc1: 3");
    free(s);
    assert_null(ses__strdup(NULL));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(message_formatting_survives_allocation_failure),
        cmocka_unit_test(every_allocation_failure_in_training_is_out_of_memory_or_success),
        cmocka_unit_test(every_allocation_failure_loading_drivers_is_out_of_memory_or_success),
        cmocka_unit_test(every_allocation_failure_importing_onnx_is_out_of_memory_or_success),
        cmocka_unit_test(every_allocation_failure_in_a_remote_session_is_out_of_memory_or_success),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
