/*
 * session-run: runs an ONNX model on a device.
 *
 *   session-run MODEL.onnx [--device NAME]... [--input NAME=FILE]... [--output NAME=FILE]...
 *               [--repeat N] [--stats] [--profile] [--fallback allow|warn|deny] [--quiet]
 *
 * Inputs are .npy files or ONNX TensorProto files (.pb); a model with one input also takes
 * `--input FILE`. Outputs named with --output are written as .npy; the others are summarized
 * (dtype, shape, first values). Prints the placement summary and, with --repeat N, the run
 * times (first run, then min / median / max of the rest); --stats adds the bytes each run of 2 to
 * N copied between host and devices. --profile opens the session with the profiler on
 * (ses_session_options_t.profile) and prints where runs 2 to N spent their time (run 1 alone when
 * N is 1): per op the steps, ms per run and share of the summed step time, the 10 slowest steps,
 * and the summed step time against the median run's wall time. Exit 0, 1 (an error), 2 (bad
 * usage).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <session/npy.h>
#include <session/onnx.h>
#include <session/session.h>

#define MAX_IO 64

typedef struct named_file {
    const char *name; /* NULL: the model's only input */
    const char *path;
} named_file_t;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: session-run MODEL.onnx [--device NAME]... [--input NAME=FILE]...\n"
            "                   [--output NAME=FILE]... [--repeat N] [--stats] [--profile]\n"
            "                   [--fallback allow|warn|deny] [--quiet]\n"
            "Runs an ONNX model: inputs from .npy or TensorProto .pb files, outputs to .npy.\n"
            "--profile: time of each op and the slowest steps over runs 2 to N.\n");
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

static ses_status_t read_input(const char *path, ses_tensor_t **out) {
    return ends_with(path, ".pb") ? ses_onnx_read_tensor_file(path, out)
                                  : ses_npy_read_file(path, out);
}

/* One op's steps in the profile. */
typedef struct op_time {
    const char *op;
    size_t steps;
    uint64_t ns;
} op_time_t;

static int slower_op(const void *a, const void *b) {
    const op_time_t *x = a, *y = b;
    return x->ns > y->ns ? -1 : x->ns < y->ns;
}

static int slower_step(const void *a, const void *b) {
    const ses_step_time_t *x = a, *y = b;
    return x->total_ns > y->total_ns ? -1 : x->total_ns < y->total_ns;
}

/*
 * Prints the plan's profile of @p runs runs (named @p window): per op type, sorted by time, its
 * steps, ms per run and share of the summed step time; the 10 slowest steps; the summed step
 * time against the runs' median and mean wall times (@p median_s, @p mean_s).
 */
static int print_profile(ses_plan_t *plan, uint64_t runs, const char *window, double median_s,
                         double mean_s) {
    double step_ms;
    ses_step_time_t *steps = NULL;
    op_time_t *ops = NULL;
    size_t n = 0, n_ops = 0;
    uint64_t total = 0;
    int status = 1;

    if (ses_plan_profile(plan, NULL, 0, &n) != SES_OK)
        goto fail;
    steps = calloc(n + 1, sizeof *steps);
    ops = calloc(n + 1, sizeof *ops);
    if (!steps || !ops)
        goto done;
    steps[0].struct_size = sizeof *steps;
    if (ses_plan_profile(plan, steps, n + 1, &n) != SES_OK)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < n_ops && strcmp(ops[k].op, steps[i].op))
            k++;
        if (k == n_ops)
            ops[n_ops++].op = steps[i].op;
        ops[k].steps++;
        ops[k].ns += steps[i].total_ns;
        total += steps[i].total_ns;
    }
    qsort(ops, n_ops, sizeof *ops, slower_op);
    printf("profile of %s (%zu steps), per run:\n", window, n);
    printf("  %-24s %6s %10s %7s\n", "op", "steps", "ms", "%");
    for (size_t k = 0; k < n_ops; k++)
        printf("  %-24s %6zu %10.3f %6.1f%%\n", ops[k].op, ops[k].steps,
               (double)ops[k].ns / (double)runs * 1e-6,
               total ? 100.0 * (double)ops[k].ns / (double)total : 0.0);
    qsort(steps, n, sizeof *steps, slower_step);
    printf("slowest steps, per run:\n");
    printf("  %-24s %-32s %-10s %10s\n", "op", "node", "device", "ms");
    for (size_t i = 0; i < n && i < 10; i++)
        printf("  %-24s %-32s %-10s %10.3f\n", steps[i].op, steps[i].node, steps[i].device,
               (double)steps[i].total_ns / (double)runs * 1e-6);
    /* The step time is a mean: what is outside the steps is taken against the mean run. */
    step_ms = (double)total / (double)runs * 1e-6;
    printf("steps: %.3f ms per run; a run: median %.3f ms, mean %.3f ms", step_ms, median_s * 1e3,
           mean_s * 1e3);
    printf(" (%.3f ms outside the steps)\n", mean_s * 1e3 - step_ms);
    status = 0;
    goto done;
fail:
    fprintf(stderr, "session-run: profile: %s\n", ses_last_error());
done:
    free(steps);
    free(ops);
    return status;
}

/* Prints dtype, shape and the first values of @p t. */
static void summarize(const char *name, const ses_tensor_t *t) {
    printf("output %s: %s[", name, ses_dtype_name(ses_tensor_dtype(t)));
    for (size_t d = 0; d < ses_tensor_rank(t); d++)
        printf("%s%lld", d ? "," : "", (long long)ses_tensor_dims(t)[d]);
    printf("]");
    for (size_t i = 0; i < ses_tensor_count(t) && i < 8; i++) {
        const void *p = ses_tensor_data((ses_tensor_t *)t);
        switch (ses_tensor_dtype(t)) {
        case SES_F32: printf(" %.6g", ((const float *)p)[i]); break;
        case SES_F64: printf(" %.6g", ((const double *)p)[i]); break;
        case SES_I64: printf(" %lld", (long long)((const int64_t *)p)[i]); break;
        case SES_I32: printf(" %d", ((const int32_t *)p)[i]); break;
        case SES_U8: case SES_BOOL: printf(" %u", ((const uint8_t *)p)[i]); break;
        case SES_STRING: printf(" \"%.40s\"", ((const char *const *)p)[i]); break;
        default: i = 8; break;
        }
    }
    printf("%s\n", ses_tensor_count(t) > 8 ? " ..." : "");
}

int main(int argc, char **argv) {
    const char *model_path = NULL, *devices[16];
    named_file_t ins[MAX_IO], outs[MAX_IO];
    size_t n_devices = 0, n_ins = 0, n_outs = 0, n_in, n_out;
    long repeat = 1;
    int quiet = 0, stats = 0, profile = 0, status = 1;
    ses_transfer_stats_t after_first, at_end;
    ses_session_options_t so;
    ses_onnx_model_t *model = NULL;
    ses_session_t *s = NULL;
    ses_plan_t *plan = NULL;
    ses_edge_t fed[MAX_IO], fetch[MAX_IO];
    ses_tensor_t *values[MAX_IO] = {NULL}, *results[MAX_IO] = {NULL};
    double *times = NULL;

    ses_session_options_init(&so);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--quiet")) {
            quiet = 1;
        } else if (!strcmp(a, "--stats")) {
            stats = 1;
        } else if (!strcmp(a, "--profile")) {
            profile = 1;
            so.profile = 1;
        } else if (i + 1 < argc && !strcmp(a, "--device") && n_devices < 16) {
            devices[n_devices++] = argv[++i];
        } else if (i + 1 < argc && (!strcmp(a, "--input") || !strcmp(a, "--output"))) {
            const char *v = argv[++i], *eq = strchr(v, '=');
            named_file_t *f = a[2] == 'i' ? &ins[n_ins] : &outs[n_outs];
            if ((a[2] == 'i' ? n_ins : n_outs) == MAX_IO) {
                fprintf(stderr, "session-run: more than %d %ss\n", MAX_IO, a + 2);
                return 2;
            }
            if (eq) {
                char *name = strndup(v, (size_t)(eq - v));
                f->name = name;
                f->path = eq + 1;
            } else if (a[2] == 'i') {
                f->name = NULL;
                f->path = v;
            } else {
                fprintf(stderr, "session-run: --output wants NAME=FILE, got \"%s\"\n", v);
                return 2;
            }
            if (a[2] == 'i')
                n_ins++;
            else
                n_outs++;
        } else if (i + 1 < argc && !strcmp(a, "--repeat")) {
            char *end;
            repeat = strtol(argv[++i], &end, 10);
            if (*end || repeat < 1 || repeat > 1000000) {
                fprintf(stderr, "session-run: --repeat wants 1 to 1000000, got \"%s\"\n",
                        argv[i]);
                return 2;
            }
        } else if (i + 1 < argc && !strcmp(a, "--fallback")) {
            const char *v = argv[++i];
            if (!strcmp(v, "allow"))
                so.fallback = SES_FALLBACK_ALLOW;
            else if (!strcmp(v, "warn"))
                so.fallback = SES_FALLBACK_WARN;
            else if (!strcmp(v, "deny"))
                so.fallback = SES_FALLBACK_DENY;
            else {
                fprintf(stderr, "session-run: --fallback wants allow, warn or deny\n");
                return 2;
            }
        } else if (a[0] != '-' && !model_path) {
            model_path = a;
        } else {
            fprintf(stderr, "session-run: unknown or incomplete argument \"%s\"\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!model_path) {
        usage(stderr);
        return 2;
    }
    if (ses_onnx_import_file(model_path, NULL, &model) != SES_OK) {
        fprintf(stderr, "session-run: %s\n", ses_last_error());
        return 1;
    }
    n_in = ses_onnx_model_input_count(model);
    n_out = ses_onnx_model_output_count(model);
    if (n_in > MAX_IO || n_out > MAX_IO) {
        fprintf(stderr, "session-run: the model has more than %d inputs or outputs\n", MAX_IO);
        goto done;
    }
    /* Each model input from its file. */
    for (size_t i = 0; i < n_in; i++) {
        const char *name = ses_onnx_model_input_name(model, i);
        const named_file_t *f = NULL;
        for (size_t k = 0; k < n_ins && !f; k++)
            if ((ins[k].name && !strcmp(ins[k].name, name)) || (!ins[k].name && n_in == 1))
                f = &ins[k];
        if (!f) {
            fprintf(stderr, "session-run: no --input for \"%s\"; the model's inputs are:", name);
            for (size_t k = 0; k < n_in; k++)
                fprintf(stderr, " %s", ses_onnx_model_input_name(model, k));
            fprintf(stderr, "\n");
            goto done;
        }
        if (read_input(f->path, &values[i]) != SES_OK) {
            fprintf(stderr, "session-run: input \"%s\": %s\n", name, ses_last_error());
            goto done;
        }
        fed[i] = ses_onnx_model_input(model, i);
    }
    for (size_t k = 0; k < n_ins; k++) {
        int known = !ins[k].name && n_in == 1;
        for (size_t i = 0; i < n_in && !known; i++)
            known = ins[k].name && !strcmp(ins[k].name, ses_onnx_model_input_name(model, i));
        if (!known) {
            fprintf(stderr, "session-run: the model has no input \"%s\"\n",
                    ins[k].name ? ins[k].name : ins[k].path);
            goto done;
        }
    }
    for (size_t k = 0; k < n_outs; k++) {
        int known = 0;
        for (size_t i = 0; i < n_out && !known; i++)
            known = !strcmp(outs[k].name, ses_onnx_model_output_name(model, i));
        if (!known) {
            fprintf(stderr, "session-run: the model has no output \"%s\"\n", outs[k].name);
            goto done;
        }
    }
    for (size_t i = 0; i < n_out; i++)
        fetch[i] = ses_onnx_model_output(model, i);
    if (ses_session_open(ses_onnx_model_graph(model), devices, n_devices, &so, &s) != SES_OK ||
        ses_session_compile(s, fetch, n_out, fed, n_in, NULL, 0, &plan) != SES_OK) {
        fprintf(stderr, "session-run: %s\n", ses_last_error());
        goto done;
    }
    times = calloc((size_t)repeat, sizeof *times);
    if (!times)
        goto done;
    for (long r = 0; r < repeat; r++) {
        double t0 = now();
        for (size_t i = 0; i < n_out; i++) {
            ses_tensor_release(results[i]);
            results[i] = NULL;
        }
        if (ses_plan_run(plan, values, n_in, results) != SES_OK) {
            fprintf(stderr, "session-run: run %ld: %s\n", r + 1, ses_last_error());
            goto done;
        }
        times[r] = now() - t0;
        if (r == 0) {
            after_first.struct_size = sizeof after_first;
            ses_plan_transfers(plan, &after_first);
            /* Run 1 does one-time work (uploads, first-touch of the arenas): not profiled. */
            if (profile && repeat > 1 && ses_plan_profile_reset(plan) != SES_OK) {
                fprintf(stderr, "session-run: profile: %s\n", ses_last_error());
                goto done;
            }
        }
    }
    at_end.struct_size = sizeof at_end;
    ses_plan_transfers(plan, &at_end);
    if (repeat > 1)
        qsort(times + 1, (size_t)repeat - 1, sizeof *times, compare_doubles);
    if (!quiet) {
        printf("%s", ses_plan_placement(plan));
        printf("first run: %.3f ms\n", times[0] * 1e3);
        if (repeat > 1) {
            printf("runs 2 to %ld: min %.3f ms, median %.3f ms, max %.3f ms\n", repeat,
                   times[1] * 1e3, times[1 + (repeat - 1) / 2] * 1e3, times[repeat - 1] * 1e3);
        }
    }
    if (stats) {
        /* Steady state: what runs 2 to N moved, per run (run 1 alone when there is no other). */
        const ses_transfer_stats_t *from = repeat > 1 ? &after_first : NULL;
        uint64_t runs = repeat > 1 ? (uint64_t)repeat - 1 : 1;
        char window[64];
        if (repeat > 1)
            snprintf(window, sizeof window, "runs 2 to %ld", repeat);
        else
            snprintf(window, sizeof window, "run 1");
        printf("transfers per run (%s): host->device %llu bytes in %llu copies, "
               "device->host %llu bytes in %llu copies\n",
               window,
               (unsigned long long)((at_end.h2d_bytes - (from ? from->h2d_bytes : 0)) / runs),
               (unsigned long long)((at_end.h2d_copies - (from ? from->h2d_copies : 0)) / runs),
               (unsigned long long)((at_end.d2h_bytes - (from ? from->d2h_bytes : 0)) / runs),
               (unsigned long long)((at_end.d2h_copies - (from ? from->d2h_copies : 0)) / runs));
    }
    if (profile) {
        double mean = 0;
        char window[64];
        for (long r = repeat > 1 ? 1 : 0; r < repeat; r++)
            mean += times[r];
        mean /= (double)(repeat > 1 ? repeat - 1 : 1);
        if (repeat > 1)
            snprintf(window, sizeof window, "runs 2 to %ld", repeat);
        else
            snprintf(window, sizeof window, "run 1");
        if (print_profile(plan, repeat > 1 ? (uint64_t)repeat - 1 : 1, window,
                          repeat > 1 ? times[1 + (repeat - 1) / 2] : times[0], mean) != 0)
            goto done;
    }
    status = 0;
    for (size_t i = 0; i < n_out; i++) {
        const char *name = ses_onnx_model_output_name(model, i);
        const named_file_t *f = NULL;
        for (size_t k = 0; k < n_outs && !f; k++)
            if (!strcmp(outs[k].name, name))
                f = &outs[k];
        if (f && ses_npy_write_file(f->path, results[i]) != SES_OK) {
            fprintf(stderr, "session-run: output \"%s\": %s\n", name, ses_last_error());
            status = 1;
        } else if (f && !quiet) {
            printf("output %s: written to %s\n", name, f->path);
        } else if (!f && !quiet) {
            summarize(name, results[i]);
        }
    }
done:
    for (size_t i = 0; i < MAX_IO; i++) {
        ses_tensor_release(values[i]);
        ses_tensor_release(results[i]);
    }
    for (size_t k = 0; k < n_ins; k++)
        free((char *)ins[k].name);
    for (size_t k = 0; k < n_outs; k++)
        free((char *)outs[k].name);
    free(times);
    ses_plan_destroy(plan);
    ses_session_destroy(s);
    ses_onnx_model_destroy(model);
    return status;
}
