/*
 * The conformance report: results in the order they were checked, one printed line each, a
 * summary, and a JSON form for machines.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "conformance.h"

static const char *verdict_name(ses_conf_verdict_t v) {
    return v == SES_CONF_PASS ? "pass" : v == SES_CONF_FAIL ? "fail" : "skip";
}

static char *copy_string(const char *s) {
    size_t n = strlen(s ? s : "") + 1;
    char *copy = malloc(n);

    if (copy)
        memcpy(copy, s ? s : "", n);
    return copy;
}

static void print_line(const ses_conf_report_t *r, const ses_conf_result_t *x) {
    static const char *const tags[] = {"PASS", "FAIL", "SKIP"};

    if (!r->out)
        return;
    fprintf(r->out, "%s  %-7s %s", tags[x->verdict], x->group, x->name);
    if (x->has_error)
        fprintf(r->out, "  cases %u  max abs %.3g  max rel %.3g", x->cases, x->max_abs,
                x->max_rel);
    if (x->has_error && x->refused)
        fprintf(r->out, "  refused %u", x->refused);
    if (x->detail && *x->detail)
        fprintf(r->out, "%s%s", x->has_error ? "  " : ": ", x->detail);
    fputc('\n', r->out);
    fflush(r->out);
}

static ses_conf_result_t *append(ses_conf_report_t *r, const char *group, const char *name,
                                 ses_conf_verdict_t verdict, const char *detail) {
    ses_conf_result_t *x;

    if (r->n_results == r->capacity) {
        size_t capacity = r->capacity ? 2 * r->capacity : 64;
        ses_conf_result_t *grown = realloc(r->results, capacity * sizeof *grown);
        if (!grown) {
            r->out_of_memory = 1;
            return NULL;
        }
        r->results = grown;
        r->capacity = capacity;
    }
    x = &r->results[r->n_results];
    memset(x, 0, sizeof *x);
    x->group = copy_string(group);
    x->name = copy_string(name);
    x->detail = copy_string(detail);
    x->verdict = verdict;
    if (!x->group || !x->name || !x->detail) {
        free(x->group);
        free(x->name);
        free(x->detail);
        r->out_of_memory = 1;
        return NULL;
    }
    r->n_results++;
    return x;
}

void ses_conf_add(ses_conf_report_t *r, const char *group, const char *name,
                  ses_conf_verdict_t verdict, const char *detail_format, ...) {
    char detail[2048];
    ses_conf_result_t *x;
    va_list ap;

    va_start(ap, detail_format);
    vsnprintf(detail, sizeof detail, detail_format, ap);
    va_end(ap);
    x = append(r, group, name, verdict, detail);
    if (x)
        print_line(r, x);
}

void ses_conf_add_kernel(ses_conf_report_t *r, const char *name, ses_conf_verdict_t verdict,
                         double max_abs, double max_rel, uint32_t cases, uint32_t refused,
                         const char *detail) {
    ses_conf_result_t *x = append(r, "kernel", name, verdict, detail);

    if (!x)
        return;
    x->has_error = 1;
    x->max_abs = max_abs;
    x->max_rel = max_rel;
    x->cases = cases;
    x->refused = refused;
    print_line(r, x);
}

size_t ses_conf_count(const ses_conf_report_t *r, const char *group, ses_conf_verdict_t verdict) {
    size_t n = 0;

    for (size_t i = 0; i < r->n_results; i++)
        if (r->results[i].verdict == verdict && (!group || !strcmp(group, r->results[i].group)))
            n++;
    return n;
}

int ses_conf_failed(const ses_conf_report_t *r) {
    return r->out_of_memory || ses_conf_count(r, NULL, SES_CONF_FAIL) > 0;
}

void ses_conf_print_summary(const ses_conf_report_t *r, FILE *out) {
    size_t total = r->n_results, kernels = 0;

    for (size_t i = 0; i < r->n_results; i++)
        kernels += !strcmp(r->results[i].group, "kernel");
    fprintf(out, "summary: driver %s (%s), device %s, reference %s\n", r->driver,
            r->driver_description, r->device[0] ? r->device : "-",
            r->reference[0] ? r->reference : "-");
    fprintf(out, "  checks:  %zu passed, %zu failed, %zu skipped\n",
            ses_conf_count(r, NULL, SES_CONF_PASS) - ses_conf_count(r, "kernel", SES_CONF_PASS),
            ses_conf_count(r, NULL, SES_CONF_FAIL) - ses_conf_count(r, "kernel", SES_CONF_FAIL),
            ses_conf_count(r, NULL, SES_CONF_SKIP) - ses_conf_count(r, "kernel", SES_CONF_SKIP));
    fprintf(out, "  kernels: %zu passed, %zu failed, %zu skipped (of %zu)\n",
            ses_conf_count(r, "kernel", SES_CONF_PASS), ses_conf_count(r, "kernel", SES_CONF_FAIL),
            ses_conf_count(r, "kernel", SES_CONF_SKIP), kernels);
    if (r->out_of_memory)
        fprintf(out, "  some results were lost: out of memory\n");
    fprintf(out, "%s: %zu of %zu results failed\n", ses_conf_failed(r) ? "FAILED" : "PASSED",
            ses_conf_count(r, NULL, SES_CONF_FAIL), total);
}

int ses_conf_print_json(const ses_conf_report_t *r, FILE *out) {
    cJSON *root = cJSON_CreateObject();
    cJSON *results = NULL, *summary = NULL;
    char *text = NULL;
    int ok = root != NULL;

    ok = ok && cJSON_AddStringToObject(root, "driver", r->driver);
    ok = ok && cJSON_AddStringToObject(root, "description", r->driver_description);
    ok = ok && cJSON_AddStringToObject(root, "device", r->device);
    ok = ok && cJSON_AddStringToObject(root, "reference", r->reference);
    ok = ok && cJSON_AddBoolToObject(root, "passed", !ses_conf_failed(r));
    ok = ok && (summary = cJSON_AddObjectToObject(root, "summary")) != NULL;
    ok = ok && cJSON_AddNumberToObject(summary, "passed",
                                       (double)ses_conf_count(r, NULL, SES_CONF_PASS));
    ok = ok && cJSON_AddNumberToObject(summary, "failed",
                                       (double)ses_conf_count(r, NULL, SES_CONF_FAIL));
    ok = ok && cJSON_AddNumberToObject(summary, "skipped",
                                       (double)ses_conf_count(r, NULL, SES_CONF_SKIP));
    ok = ok && (results = cJSON_AddArrayToObject(root, "results")) != NULL;
    for (size_t i = 0; ok && i < r->n_results; i++) {
        const ses_conf_result_t *x = &r->results[i];
        cJSON *item = cJSON_CreateObject();

        ok = item && cJSON_AddItemToArray(results, item);
        if (!ok) {
            cJSON_Delete(item);
            break;
        }
        ok = cJSON_AddStringToObject(item, "group", x->group) &&
             cJSON_AddStringToObject(item, "name", x->name) &&
             cJSON_AddStringToObject(item, "result", verdict_name(x->verdict)) &&
             cJSON_AddStringToObject(item, "detail", x->detail);
        if (ok && x->has_error)
            ok = cJSON_AddNumberToObject(item, "max_abs", x->max_abs) &&
                 cJSON_AddNumberToObject(item, "max_rel", x->max_rel) &&
                 cJSON_AddNumberToObject(item, "cases", x->cases) &&
                 cJSON_AddNumberToObject(item, "refused", x->refused);
    }
    if (ok)
        text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text)
        return -1;
    fprintf(out, "%s\n", text);
    cJSON_free(text);
    return 0;
}

void ses_conf_report_clear(ses_conf_report_t *r) {
    for (size_t i = 0; i < r->n_results; i++) {
        free(r->results[i].group);
        free(r->results[i].name);
        free(r->results[i].detail);
    }
    free(r->results);
    r->results = NULL;
    r->n_results = r->capacity = 0;
}
