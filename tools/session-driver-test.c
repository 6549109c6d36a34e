/*
 * session-driver-test: proves a driver keeps the contract of sdk/DRIVER_ABI.md and computes
 * what the CPU driver computes. The checks live in tools/conformance/.
 *
 *   session-driver-test acme                 by name, found like any driver
 *   session-driver-test build/acme.json      by manifest path (added to the search)
 *   session-driver-test --json cpu           one JSON document instead of lines
 *
 * Exits 0 when every check passed (skips allowed), 1 when any failed, 2 when it could not run:
 * a bad argument, or the driver or the reference driver not found.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

#define MAX_OPTIONS 32

static void usage(FILE *out) {
    fprintf(out,
            "usage: session-driver-test [options] DRIVER\n"
            "Checks a libsession driver against the driver ABI contract and compares every\n"
            "kernel it claims with the reference driver on random inputs.\n"
            "DRIVER is a driver name (\"cpu\", \"acme\") or the path of its manifest (.json).\n"
            "  --json               print one JSON document instead of a line per check\n"
            "  --reference NAME     the driver to compare with (default: cpu)\n"
            "  --device N           the device whose kernels are compared (default: 0)\n"
            "  --op OP              compare only the kernels of OP\n"
            "  --seed N             seed of the random inputs (default: 1)\n"
            "  --abi-only           skip the kernel comparisons\n"
            "  --option KEY=VALUE   a driver option, e.g. driver.xrt.xclbin=/a.xclbin\n"
            "  --help, --version\n"
            "Exit status: 0 all passed, 1 a check failed, 2 could not run.\n");
}

static int parse_u64(const char *text, uint64_t *out) {
    char *end;
    unsigned long long v;

    if (!text || !*text || *text == '-')
        return 0;
    v = strtoull(text, &end, 10);
    if (*end)
        return 0;
    *out = v;
    return 1;
}

static int is_manifest_path(const char *s) {
    size_t n = strlen(s);
    return strchr(s, '/') || (n > 5 && !strcmp(s + n - 5, ".json"));
}

/* Finds the driver by name or adds its manifest; reports why not. */
static const ses_driver_t *resolve(ses_registry_t *reg, const char *what) {
    const ses_driver_t *d = NULL;

    if (is_manifest_path(what)) {
        ses_status_t st = ses_registry_add_driver_file(reg, what, &d);
        if (!d) {
            fprintf(stderr, "session-driver-test: %s\n", ses_last_error());
            return NULL;
        }
        (void)st; /* a manifest that failed is reported as a check */
        return d;
    }
    if (ses_registry_find_driver(reg, what, &d) != SES_OK) {
        fprintf(stderr, "session-driver-test: %s\n", ses_last_error());
        return NULL;
    }
    return d;
}

/* The host's own view: does libsession's loader accept this driver? Returns 0 when there is
 * nothing more to check (the manifest is unusable). */
static int check_host_loads(ses_registry_t *reg, const ses_driver_t *d, ses_conf_report_t *r) {
    ses_driver_state_t state = ses_driver_state(d);

    if (state == SES_DRIVER_FAILED || state == SES_DRIVER_DISABLED) {
        ses_conf_add(r, "abi", "manifest", SES_CONF_FAIL, "%s: %s",
                     ses_driver_state_name(state), ses_driver_error(d));
        return 0;
    }
    ses_conf_add(r, "abi", "manifest", SES_CONF_PASS, "%s", ses_driver_manifest_path(d));
    (void)ses_registry_device_count(reg); /* loads every driver */
    state = ses_driver_state(d);
    if (state == SES_DRIVER_FAILED) {
        /* The checks below go on: they say more precisely what is wrong. */
        ses_conf_add(r, "abi", "libsession loads it", SES_CONF_FAIL, "%s", ses_driver_error(d));
        return 1;
    }
    ses_conf_add(r, "abi", "libsession loads it", SES_CONF_PASS, "%s, ABI 1.%" PRIu32 ", %zu device%s%s%s",
                 ses_driver_state_name(state), ses_driver_abi_minor(d),
                 ses_driver_device_count(d), ses_driver_device_count(d) == 1 ? "" : "s",
                 state == SES_DRIVER_NO_DEVICES ? ": " : "",
                 state == SES_DRIVER_NO_DEVICES ? ses_driver_error(d) : "");
    return 1;
}

int main(int argc, char **argv) {
    const char *driver_arg = NULL, *reference_name = "cpu";
    const char *options[MAX_OPTIONS];
    ses_conf_options_t o;
    ses_conf_report_t report;
    ses_registry_t *reg = NULL;
    char **kernels = NULL;
    size_t n_kernels = 0, n_options = 0;
    int json = 0, status;
    uint64_t value;

    memset(&o, 0, sizeof o);
    memset(&report, 0, sizeof report);
    o.seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;

        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--version")) {
            printf("session-driver-test (libsession) %s, driver ABI %d.%d\n", ses_version(),
                   SES_DRV_ABI_MAJOR, SES_DRV_ABI_MINOR);
            return 0;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--abi-only")) {
            o.skip_kernels = 1;
        } else if (!strcmp(a, "--reference") && next) {
            reference_name = argv[++i];
        } else if (!strcmp(a, "--op") && next) {
            o.only_op = argv[++i];
        } else if (!strcmp(a, "--device") && next) {
            if (!parse_u64(argv[++i], &value) || value > UINT32_MAX) {
                fprintf(stderr, "session-driver-test: --device wants a number, got \"%s\"\n",
                        argv[i]);
                return 2;
            }
            o.device = (uint32_t)value;
        } else if (!strcmp(a, "--seed") && next) {
            if (!parse_u64(argv[++i], &o.seed)) {
                fprintf(stderr, "session-driver-test: --seed wants a number, got \"%s\"\n",
                        argv[i]);
                return 2;
            }
        } else if (!strcmp(a, "--option") && next) {
            const char *kv = argv[++i];
            if (!strchr(kv, '=') || strncmp(kv, "driver.", 7) != 0 || n_options == MAX_OPTIONS) {
                fprintf(stderr,
                        "session-driver-test: --option wants driver.<name>.<option>=value "
                        "(at most %d), got \"%s\"\n",
                        MAX_OPTIONS, kv);
                return 2;
            }
            options[n_options++] = kv;
        } else if (a[0] == '-' || driver_arg) {
            fprintf(stderr, "session-driver-test: unexpected argument \"%s\"%s\n", a,
                    a[0] == '-' && !next ? " (missing its value?)" : "");
            usage(stderr);
            return 2;
        } else {
            driver_arg = a;
        }
    }
    if (!driver_arg) {
        usage(stderr);
        return 2;
    }

    if (ses_registry_create(&reg) != SES_OK) {
        fprintf(stderr, "session-driver-test: %s\n", ses_last_error());
        return 2;
    }
    o.registry = reg;
    o.driver_options = options;
    o.n_driver_options = n_options;
    o.driver = resolve(reg, driver_arg);
    if (!o.driver) {
        ses_registry_destroy(reg);
        return 2;
    }
    o.reference = resolve(reg, reference_name);
    if (!o.reference && !o.skip_kernels) {
        fprintf(stderr, "session-driver-test: cannot compare kernels without the reference "
                        "driver; pass --abi-only to skip them\n");
        ses_registry_destroy(reg);
        return 2;
    }

    report.out = json ? NULL : stdout;
    snprintf(report.driver, sizeof report.driver, "%s", ses_driver_name(o.driver));
    snprintf(report.device, sizeof report.device, "%s:%" PRIu32, ses_driver_name(o.driver),
             o.device);
    snprintf(report.reference, sizeof report.reference, "%s",
             o.skip_kernels || !o.reference ? "" : ses_driver_name(o.reference));
    snprintf(report.driver_description, sizeof report.driver_description, "?");

    if (check_host_loads(reg, o.driver, &report)) {
        ses_conf_run_abi(&o, &report, &kernels, &n_kernels);
        if (!o.skip_kernels && kernels && o.device < ses_driver_device_count(o.driver))
            ses_conf_run_kernels(&o, &report, kernels, n_kernels);
    }

    if (json) {
        if (ses_conf_print_json(&report, stdout) != 0)
            fprintf(stderr, "session-driver-test: out of memory writing JSON\n");
    } else {
        ses_conf_print_summary(&report, stdout);
    }
    status = ses_conf_failed(&report) ? 1 : 0;
    ses_conf_free_strings(kernels, n_kernels);
    ses_conf_report_clear(&report);
    ses_registry_destroy(reg);
    return status;
}
