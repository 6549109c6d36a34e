/*
 * session-onnx-test: the ONNX backend node tests (Debian's libonnx-testdata) on every device.
 *
 *   session-onnx-test [--device NAME]... [--data DIR] [--filter TEXT] [--expect FILE]
 *                     [--write-expect FILE] [--verbose]
 *
 * Each test folder holds model.onnx (one node) and test_data_set_N/input_K.pb, output_K.pb. A test
 * is imported, compiled on one device with fallback denied (so the device's own kernels are
 * judged), run on every data set, and compared with the expected outputs: same dtype and shape,
 * floats within |got - want| <= 1e-7 + 1e-3 |want| (NaN matches NaN), other types (strings
 * too) exactly.
 *
 * Outcomes: pass; unsupported (the importer, the schemas or the device do not implement an op,
 * attribute or dtype: SES_UNIMPLEMENTED or SES_NOT_FOUND, or shape inference refusing a dtype
 * ONNX allows: "allowed dtypes", "dtypes differ"); fail (anything else: wrong values, errors). Prints one line per device with the counts and the failing tests. With --expect, a
 * file of "<driver> <test>" lines: exit 1 when one of them does not pass on that driver's device.
 * --write-expect writes the passing tests in that form. Exit 0 / 1 / 2 (could not run).
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <session/onnx.h>
#include <session/registry.h>
#include <session/session.h>

#define DEFAULT_DATA "/usr/include/onnx/backend/test/data/node"
#define MAX_IO 16

typedef enum outcome { PASS, UNSUPPORTED, FAIL } outcome_t;

typedef struct options {
    const char *devices[16];
    size_t n_devices;
    const char *data;
    const char *filter;
    const char *expect;
    const char *write_expect;
    int verbose;
} options_t;

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The test folders under @p dir, sorted; NULL-terminated, malloc'd. */
static char **list_tests(const char *dir, const char *filter, size_t *out_n) {
    DIR *d = opendir(dir);
    struct dirent *e;
    char **names = NULL;
    size_t n = 0, cap = 0;

    *out_n = 0;
    if (!d)
        return NULL;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "test_", 5) != 0 || (filter && !strstr(e->d_name, filter)))
            continue;
        if (n + 1 >= cap) {
            char **grown;
            cap = cap ? cap * 2 : 256;
            grown = realloc(names, cap * sizeof *grown);
            if (!grown)
                break;
            names = grown;
        }
        names[n] = strdup(e->d_name);
        if (names[n])
            n++;
    }
    closedir(d);
    if (names)
        qsort(names, n, sizeof *names, compare_names);
    *out_n = n;
    return names;
}

static int exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static int is_unsupported(ses_status_t st) {
    return st == SES_UNIMPLEMENTED || st == SES_NOT_FOUND;
}

/* IEEE binary16 bits, widened exactly. */
static double half_bits(uint16_t h) {
    const int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
    const double sign = h & 0x8000 ? -1.0 : 1.0;

    if (exponent == 0x1f)
        return mantissa ? NAN : sign * INFINITY;
    if (exponent == 0)
        return sign * ldexp(mantissa, -24);
    return sign * ldexp(mantissa | 0x400, exponent - 25);
}

/* bfloat16 bits: the top half of an f32's. */
static double bfloat_bits(uint16_t b) {
    uint32_t bits = (uint32_t)b << 16;
    float f;

    memcpy(&f, &bits, sizeof f);
    return f;
}

static double element(const ses_tensor_t *t, size_t i) {
    const void *p = ses_tensor_data((ses_tensor_t *)t);
    switch (ses_tensor_dtype(t)) {
    case SES_F32: return ((const float *)p)[i];
    case SES_F16: return half_bits(((const uint16_t *)p)[i]);
    case SES_BF16: return bfloat_bits(((const uint16_t *)p)[i]);
    case SES_F64: return ((const double *)p)[i];
    case SES_I8: return ((const int8_t *)p)[i];
    case SES_I16: return ((const int16_t *)p)[i];
    case SES_I32: return ((const int32_t *)p)[i];
    case SES_I64: return (double)((const int64_t *)p)[i];
    case SES_U8: case SES_BOOL: return ((const uint8_t *)p)[i];
    case SES_U16: return ((const uint16_t *)p)[i];
    case SES_U32: return ((const uint32_t *)p)[i];
    case SES_U64: return (double)((const uint64_t *)p)[i];
    default: return NAN;
    }
}

/* Compares one output; on a mismatch writes why into @p why. */
static int same(const ses_tensor_t *got, const ses_tensor_t *want, char *why, size_t size) {
    ses_dtype_t dt = ses_tensor_dtype(want);
    int exact = dt != SES_F32 && dt != SES_F64 && dt != SES_F16 && dt != SES_BF16;
    /* One narrow ulp, relative: the outputs of a cast are the rounded values themselves. */
    double rel = dt == SES_F16 ? 1.0 / 1024 : dt == SES_BF16 ? 1.0 / 128 : 1e-3;
    int bf16_as_u16 = 0;

    /* The ONNX test data stores bfloat16 results as uint16 bit patterns. */
    if (dt == SES_U16 && ses_tensor_dtype(got) == SES_BF16) {
        bf16_as_u16 = 1;
        dt = SES_BF16;
        exact = 0;
        rel = 1.0 / 128;
    }
    if (ses_tensor_dtype(got) != dt) {
        snprintf(why, size, "dtype %s, want %s", ses_dtype_name(ses_tensor_dtype(got)),
                 ses_dtype_name(dt));
        return 0;
    }
    if (ses_tensor_rank(got) != ses_tensor_rank(want) ||
        memcmp(ses_tensor_dims(got), ses_tensor_dims(want),
               ses_tensor_rank(want) * sizeof(int64_t)) != 0) {
        snprintf(why, size, "shape differs (rank %zu, want %zu)", ses_tensor_rank(got),
                 ses_tensor_rank(want));
        return 0;
    }
    /* Strings: byte for byte. */
    for (size_t i = 0; dt == SES_STRING && i < ses_tensor_count(want); i++) {
        const char *g = "", *w = "";
        ses_tensor_string(got, i, &g);
        ses_tensor_string(want, i, &w);
        if (strcmp(g, w) != 0) {
            snprintf(why, size, "element %zu is \"%.60s\", want \"%.60s\"", i, g, w);
            return 0;
        }
    }
    if (dt == SES_STRING)
        return 1;
    for (size_t i = 0; i < ses_tensor_count(want); i++) {
        double g = element(got, i),
               w = bf16_as_u16 ? bfloat_bits(((const uint16_t *)ses_tensor_data(
                                     (ses_tensor_t *)want))[i])
                               : element(want, i);
        int ok = exact ? g == w
                       : (isnan(w) ? isnan(g) : (isinf(w) ? g == w : fabs(g - w) <= 1e-7 + rel * fabs(w)));
        if (!ok) {
            snprintf(why, size, "element %zu is %.9g, want %.9g", i, g, w);
            return 0;
        }
    }
    return 1;
}

/* Runs one test folder on @p device; *why says what went wrong. */
static outcome_t run_test(const char *dir, const char *device, char *why, size_t why_size) {
    char path[4200]; /* dir (under 4096) and a file name */
    ses_onnx_model_t *model = NULL;
    ses_session_t *s = NULL;
    ses_session_options_t so;
    ses_plan_t *plan = NULL;
    outcome_t result = PASS;
    size_t n_in, n_out;
    ses_edge_t fed[MAX_IO], fetch[MAX_IO];
    ses_status_t st;
    int sets = 0;

    why[0] = '\0';
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    st = ses_onnx_import_file(path, NULL, &model);
    if (st != SES_OK) {
        snprintf(why, why_size, "import: %s", ses_last_error());
        return is_unsupported(st) ? UNSUPPORTED : FAIL;
    }
    n_in = ses_onnx_model_input_count(model);
    n_out = ses_onnx_model_output_count(model);
    if (n_in > MAX_IO || n_out > MAX_IO) {
        snprintf(why, why_size, "more than %d inputs or outputs", MAX_IO);
        ses_onnx_model_destroy(model);
        return UNSUPPORTED;
    }
    for (size_t i = 0; i < n_in; i++)
        fed[i] = ses_onnx_model_input(model, i);
    for (size_t i = 0; i < n_out; i++)
        fetch[i] = ses_onnx_model_output(model, i);
    ses_session_options_init(&so);
    so.fallback = SES_FALLBACK_DENY;
    so.log_level = 0;
    st = ses_session_open(ses_onnx_model_graph(model), &device, 1, &so, &s);
    if (st == SES_OK)
        st = ses_session_compile(s, fetch, n_out, fed, n_in, NULL, 0, &plan);
    if (st != SES_OK) {
        /* No kernel for a node on this device, or a form the schemas refuse as unimplemented. */
        snprintf(why, why_size, "%s", ses_last_error());
        result = is_unsupported(st) ? UNSUPPORTED : FAIL;
    }
    for (int set = 0; result == PASS; set++) {
        ses_tensor_t *in[MAX_IO] = {NULL}, *out[MAX_IO] = {NULL};
        snprintf(path, sizeof path, "%s/test_data_set_%d", dir, set);
        if (!exists(path))
            break;
        sets++;
        for (size_t i = 0; i < n_in && result == PASS; i++) {
            snprintf(path, sizeof path, "%s/test_data_set_%d/input_%zu.pb", dir, set, i);
            if ((st = ses_onnx_read_tensor_file(path, &in[i])) != SES_OK) {
                snprintf(why, why_size, "input %zu: %s", i, ses_last_error());
                result = is_unsupported(st) ? UNSUPPORTED : FAIL;
            } else if (ses_tensor_dtype(in[i]) == SES_U16 &&
                       ses_onnx_model_input_dtype(model, i) == SES_BF16) {
                /* The test data keeps bfloat16 values as UINT16 bits (NumPy has no bfloat16). */
                ses_tensor_t *bits = in[i];
                if ((st = ses_tensor_create_from(SES_BF16, ses_tensor_rank(bits),
                                                 ses_tensor_dims(bits), ses_tensor_data(bits),
                                                 ses_tensor_bytes(bits), &in[i])) != SES_OK)
                    in[i] = NULL;
                ses_tensor_release(bits);
            }
        }
        if (result == PASS && (st = ses_plan_run(plan, in, n_in, out)) != SES_OK) {
            snprintf(why, why_size, "run: %s", ses_last_error());
            result = FAIL;
        }
        for (size_t i = 0; i < n_out && result == PASS; i++) {
            ses_tensor_t *want = NULL;
            char diff[512];
            snprintf(path, sizeof path, "%s/test_data_set_%d/output_%zu.pb", dir, set, i);
            if ((st = ses_onnx_read_tensor_file(path, &want)) != SES_OK) {
                snprintf(why, why_size, "expected output %zu: %s", i, ses_last_error());
                result = is_unsupported(st) ? UNSUPPORTED : FAIL;
            } else if (!same(out[i], want, diff, sizeof diff)) {
                snprintf(why, why_size, "data set %d, output %zu: %s", set, i, diff);
                result = FAIL;
            }
            ses_tensor_release(want);
        }
        for (size_t i = 0; i < MAX_IO; i++) {
            ses_tensor_release(in[i]);
            ses_tensor_release(out[i]);
        }
    }
    /* A kernel may refuse a form only when it runs; and where ONNX allows more dtypes than the
     * schemas list (u8 Add, i64 exponents), inference refuses them ("allowed dtypes: ...",
     * "dtypes differ: ..."): both are unsupported, not wrong. */
    if (result == FAIL && (is_unsupported(st) || strstr(why, "; allowed dtypes: ") ||
                           strstr(why, ": dtypes differ: ")))
        result = UNSUPPORTED;
    if (result == PASS && !sets) {
        snprintf(why, why_size, "no test_data_set_0");
        result = FAIL;
    }
    ses_plan_destroy(plan);
    ses_session_destroy(s);
    ses_onnx_model_destroy(model);
    return result;
}

/* Whether "<driver> <test>" is a line of the expectations. */
static int expected(char **lines, size_t n, const char *driver, const char *test) {
    char want[512];
    snprintf(want, sizeof want, "%s %s", driver, test);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(lines[i], want))
            return 1;
    return 0;
}

static char **read_lines(const char *path, size_t *out_n) {
    FILE *f = fopen(path, "r");
    char line[512], **lines = NULL;
    size_t n = 0, cap = 0;

    *out_n = 0;
    if (!f)
        return NULL;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0] || line[0] == '#')
            continue;
        if (n == cap) {
            char **grown;
            cap = cap ? cap * 2 : 256;
            grown = realloc(lines, cap * sizeof *grown);
            if (!grown)
                break;
            lines = grown;
        }
        lines[n] = strdup(line);
        if (lines[n])
            n++;
    }
    fclose(f);
    *out_n = n;
    return lines ? lines : calloc(1, sizeof *lines);
}

static void usage(FILE *f) {
    fprintf(f, "usage: session-onnx-test [--device NAME]... [--data DIR] [--filter TEXT]\n"
               "                         [--expect FILE] [--write-expect FILE] [--verbose]\n"
               "Runs the ONNX backend node tests (default %s) on each device (default: every\n"
               "device of every loaded driver) with fallback denied, and prints pass / fail /\n"
               "unsupported counts per device. --expect FILE: lines \"<driver> <test>\" that must\n"
               "pass (exit 1 otherwise).\n",
            DEFAULT_DATA);
}

int main(int argc, char **argv) {
    options_t o;
    ses_registry_t *reg = NULL;
    char **tests, **expect_lines = NULL;
    size_t n_tests, n_expect = 0;
    FILE *write_expect = NULL;
    int status = 0;

    memset(&o, 0, sizeof o);
    o.data = DEFAULT_DATA;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--verbose") || !strcmp(a, "-v")) {
            o.verbose = 1;
        } else if (i + 1 < argc && !strcmp(a, "--device") && o.n_devices < 16) {
            o.devices[o.n_devices++] = argv[++i];
        } else if (i + 1 < argc && !strcmp(a, "--data")) {
            o.data = argv[++i];
        } else if (i + 1 < argc && !strcmp(a, "--filter")) {
            o.filter = argv[++i];
        } else if (i + 1 < argc && !strcmp(a, "--expect")) {
            o.expect = argv[++i];
        } else if (i + 1 < argc && !strcmp(a, "--write-expect")) {
            o.write_expect = argv[++i];
        } else {
            fprintf(stderr, "session-onnx-test: unknown or incomplete argument \"%s\"\n", a);
            usage(stderr);
            return 2;
        }
    }
    tests = list_tests(o.data, o.filter, &n_tests);
    if (!tests || !n_tests) {
        fprintf(stderr, "session-onnx-test: no test_* folders in %s (apt-get install "
                        "libonnx-testdata)\n", o.data);
        return 2;
    }
    if (o.expect && !(expect_lines = read_lines(o.expect, &n_expect))) {
        fprintf(stderr, "session-onnx-test: cannot read %s\n", o.expect);
        return 2;
    }
    if (o.write_expect && !(write_expect = fopen(o.write_expect, "w"))) {
        fprintf(stderr, "session-onnx-test: cannot write %s\n", o.write_expect);
        return 2;
    }
    if (ses_registry_default(&reg) != SES_OK) {
        fprintf(stderr, "session-onnx-test: %s\n", ses_last_error());
        return 2;
    }
    if (!o.n_devices) {
        ses_registry_load_all(reg);
        for (size_t i = 0; i < ses_registry_device_count(reg) && o.n_devices < 16; i++)
            o.devices[o.n_devices++] = ses_device_name(ses_registry_device(reg, i));
    }
    if (write_expect)
        fprintf(write_expect, "# ONNX node tests that pass, as \"<driver> <test>\" "
                              "(session-onnx-test --write-expect)\n");
    for (size_t d = 0; d < o.n_devices; d++) {
        const ses_device_t *dev = NULL;
        const char *driver;
        size_t counts[3] = {0, 0, 0}, missed = 0;
        char failed[8192] = "";
        size_t used = 0;

        if (ses_registry_find_device(reg, o.devices[d], &dev) != SES_OK) {
            fprintf(stderr, "session-onnx-test: %s\n", ses_last_error());
            status = 2;
            continue;
        }
        driver = ses_driver_name(ses_device_driver(dev));
        for (size_t t = 0; t < n_tests; t++) {
            char dir[4096], why[2048];
            outcome_t r;
            snprintf(dir, sizeof dir, "%s/%s", o.data, tests[t]);
            r = run_test(dir, o.devices[d], why, sizeof why);
            counts[r]++;
            if (o.verbose || (r == FAIL))
                printf("%-11s %s %s%s%s\n", r == PASS ? "PASS" : r == FAIL ? "FAIL" : "UNSUPPORTED",
                       o.devices[d], tests[t], why[0] ? ": " : "", why);
            if (r == FAIL && used < sizeof failed - 200)
                used += (size_t)snprintf(failed + used, sizeof failed - used, " %s", tests[t]);
            if (r == PASS && write_expect)
                fprintf(write_expect, "%s %s\n", driver, tests[t]);
            if (r != PASS && expect_lines && expected(expect_lines, n_expect, driver, tests[t])) {
                printf("REGRESSION %s %s: expected to pass\n", o.devices[d], tests[t]);
                missed++;
            }
        }
        printf("onnx node tests on %s (driver %s): %zu passed, %zu failed, %zu unsupported, of "
               "%zu\n",
               o.devices[d], driver, counts[PASS], counts[FAIL], counts[UNSUPPORTED], n_tests);
        if (counts[FAIL])
            printf("  failed:%s\n", failed);
        if (missed) {
            printf("  %zu test(s) expected to pass on %s did not\n", missed, driver);
            status = status ? status : 1;
        }
    }
    if (write_expect)
        fclose(write_expect);
    for (size_t i = 0; i < n_tests; i++)
        free(tests[i]);
    free(tests);
    for (size_t i = 0; i < n_expect; i++)
        free(expect_lines[i]);
    free(expect_lines);
    return status;
}
