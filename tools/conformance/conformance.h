/*
 * The driver conformance suite that `session-driver-test` runs against any driver.
 *
 * Two halves:
 *   - ABI checks (abi_checks.c) load the driver's library themselves and call its table
 *     directly through a strict host (conformance_host.c): negotiation, table sanity, device
 *     enumeration, memory, copies, streams and events. They need nothing but driver.h.
 *   - Kernel checks (kernel_checks.c, cases in kernel_cases.c) run every (op, signature) the
 *     driver claims as a one-node graph in a session on the driver's device, with fallback
 *     denied, and compare the result with the reference driver (the CPU driver) on the same
 *     random inputs, within a per-op tolerance.
 *
 * Results go to a report (report.c): one line per check and per kernel as they finish, a
 * summary, or one JSON document.
 */
#ifndef SES_CONFORMANCE_H
#define SES_CONFORMANCE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <session/driver.h>
#include <session/session.h>

/* ---- the report ---------------------------------------------------------------------------- */

typedef enum ses_conf_verdict {
    SES_CONF_PASS = 0,
    SES_CONF_FAIL = 1,
    SES_CONF_SKIP = 2,
} ses_conf_verdict_t;

typedef struct ses_conf_result {
    char *group;  /* "abi", "device", "memory", "copy", "stream", "event", "kernel" */
    char *name;   /* what was checked: "negotiate: another major", "Add f32,f32->f32" */
    ses_conf_verdict_t verdict;
    char *detail; /* why it failed or was skipped, or what passed ("" if nothing to say) */
    /* Kernel results only (has_error = 1): the worst errors over every case and element. */
    int has_error;
    double max_abs;
    double max_rel;
    uint32_t cases;   /* cases that ran and were compared */
    uint32_t refused; /* cases the driver refused (supports_node or no kernel for the shape) */
} ses_conf_result_t;

typedef struct ses_conf_report {
    FILE *out;       /* where lines are printed as results come in; NULL: nowhere */
    int verbose;     /* print passing lines too (always on unless quiet) */
    ses_conf_result_t *results;
    size_t n_results;
    size_t capacity;
    int out_of_memory; /* a result could not be recorded: the run counts as failed */
    /* What was tested, for the summary and the JSON document. */
    char driver[64];
    char driver_description[256];
    char device[64];
    char reference[64];
} ses_conf_report_t;

/** Records one result (copying the strings) and prints its line. printf-style @p detail. */
void ses_conf_add(ses_conf_report_t *r, const char *group, const char *name,
                  ses_conf_verdict_t verdict, const char *detail_format, ...)
    __attribute__((format(printf, 5, 6)));

/** Records one kernel result with its error figures and prints its line. */
void ses_conf_add_kernel(ses_conf_report_t *r, const char *name, ses_conf_verdict_t verdict,
                         double max_abs, double max_rel, uint32_t cases, uint32_t refused,
                         const char *detail);

/** Counts results of @p verdict; @p group NULL counts every group. */
size_t ses_conf_count(const ses_conf_report_t *r, const char *group, ses_conf_verdict_t verdict);

/** Non-zero when anything failed (or a result was lost to memory). */
int ses_conf_failed(const ses_conf_report_t *r);

/** Prints the summary lines. */
void ses_conf_print_summary(const ses_conf_report_t *r, FILE *out);

/** Prints the whole report as one JSON document. Returns 0, or -1 when out of memory. */
int ses_conf_print_json(const ses_conf_report_t *r, FILE *out);

/** Frees every result. */
void ses_conf_report_clear(ses_conf_report_t *r);

/* ---- the run ------------------------------------------------------------------------------- */

typedef struct ses_conf_options {
    ses_registry_t *registry;  /* where the driver and the reference are found */
    const ses_driver_t *driver; /* the driver under test (from registry) */
    const ses_driver_t *reference; /* the reference driver, normally "cpu" */
    uint32_t device;           /* the ordinal whose kernels are compared */
    uint64_t seed;             /* random inputs */
    const char *only_op;       /* NULL: every op; else only kernels of this op */
    int skip_kernels;          /* ABI checks only */
    /* "driver.<name>.<option>=value" strings for the driver under test (and its sessions). */
    const char *const *driver_options;
    size_t n_driver_options;
} ses_conf_options_t;

/**
 * The ABI checks. Loads the driver's library itself. On success *out_kernels lists the
 * (op, signature) pairs device @p o->device claims, deduplicated, as "op\tsignature" strings the
 * caller frees with ses_conf_free_strings; NULL when the device could not be opened (which is
 * reported) or the driver has no devices.
 */
void ses_conf_run_abi(const ses_conf_options_t *o, ses_conf_report_t *r, char ***out_kernels,
                      size_t *out_n_kernels);

/** The kernel checks, for each "op\tsignature" in @p kernels. */
void ses_conf_run_kernels(const ses_conf_options_t *o, ses_conf_report_t *r,
                          char *const *kernels, size_t n_kernels);

void ses_conf_free_strings(char **strings, size_t n);

/* ---- the strict host (conformance_host.c) ---------------------------------------------------- */

/** What the conformance host knows about the driver it serves. */
struct ses_drv_host_ctx {
    const ses_driver_t *driver;             /* manifest options come from here */
    const char *const *options;             /* "key=value", searched first */
    size_t n_options;
    uint32_t log_level;                     /* messages at or below are kept */
};

/** The host services the ABI checks give a driver. */
extern const ses_drv_host_t ses_conf_host;

/** Forgets the calling thread's pending driver message and host-call count. */
void ses_conf_host_reset(void);
/** The message the driver attached on this thread since the last reset, or NULL. */
const char *ses_conf_host_message(void);
/** How many host services the driver called on this thread since the last reset. */
uint32_t ses_conf_host_calls(void);
/** How many log lines drivers sent (any thread), and the last one. */
uint32_t ses_conf_host_log_count(void);

/**
 * open_device_with_options' argument (ABI 1.5, DRV-87) as libsession would pass it: the entries of
 * @p ctx's options that name driver @p name, then @p extra_key = @p extra_value when not NULL;
 * get answers as get_option does for @p ctx. Returns 0, or -1 out of memory (free it anyway).
 */
typedef struct ses_conf_options_arg {
    ses_drv_options_t pub; /* first: get finds the rest from it */
    ses_drv_host_ctx_t *ctx;
    char **keys;
    const char **values;
} ses_conf_options_arg_t;

int ses_conf_options_make(ses_conf_options_arg_t *o, ses_drv_host_ctx_t *ctx, const char *name,
                          const char *extra_key, const char *extra_value);
void ses_conf_options_free(ses_conf_options_arg_t *o);

#endif /* SES_CONFORMANCE_H */
