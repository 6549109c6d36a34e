/*
 * One node of the CPU driver run through the ABI, as a plan runs it, shared by cpu_matmul_test
 * and cpu_nchwc_test: the driver loaded and opened through a host that answers the test's
 * options, attribute tables answered as the host answers them, f32 tensor arguments, and a node
 * kept (descriptors, buffers, kernel state) so that it can run several times.
 */
#ifndef SES_TESTS_CPU_NODE_HARNESS_H
#define SES_TESTS_CPU_NODE_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include <session/driver.h>
#include "../support/test_host.h"

#define MAX_RANK 6
#define MAX_IN 4

/* ---------------------------------------------------------------------------------------------
 * The driver, opened through a host that answers the test's options
 * ------------------------------------------------------------------------------------------- */

#define HARNESS_MAX_OPTIONS 8

/* The host's context: the test host's error record first, then the options get_option answers
 * (driver.cpu.spin_us is "0" unless set: the test machines' cores are shared). */
typedef struct harness_host_ctx {
    struct ses_drv_host_ctx base;
    const char *keys[HARNESS_MAX_OPTIONS];
    const char *values[HARNESS_MAX_OPTIONS];
} harness_host_ctx_t;

/* Sets option @p key to @p value (NULL: unset) for the next open_device. */
void harness_set_option(harness_host_ctx_t *h, const char *key, const char *value);

/* The value of option @p key, or NULL. */
const char *harness_option(const harness_host_ctx_t *h, const char *key);

/* The CPU driver loaded from a path, negotiated, opened, and its device 0 opened. */
typedef test_driver_t harness_cpu_t;

/* Opens @p c through a host whose context is @p ctx: 0, or -1 with the reason printed and
 * nothing left open. */
int harness_cpu_open(harness_cpu_t *c, const char *path, harness_host_ctx_t *ctx);

/* Closes what harness_cpu_open opened; accepts a partly opened @p c. */
void harness_cpu_close(harness_cpu_t *c);

/* The host the driver was opened with (to open another device of it with other options). */
extern const ses_drv_host_t harness_host;

/* ---------------------------------------------------------------------------------------------
 * Attributes
 * ------------------------------------------------------------------------------------------- */

typedef struct test_attr {
    const char *name; /* NULL ends a table */
    uint32_t type;    /* SES_DRV_ATTR_* */
    int64_t i;
    const char *s;
    const int64_t *ints;
    const double *floats;
    uint64_t n;
    double f;
} test_attr_t;

/* clang-format off */
#define A_INT(key, value) {.name = (key), .type = SES_DRV_ATTR_INT, .i = (value)}
#define A_FLOAT(key, value) {.name = (key), .type = SES_DRV_ATTR_FLOAT, .f = (value)}
#define A_STR(key, value) {.name = (key), .type = SES_DRV_ATTR_STRING, .s = (value)}
#define A_INTS(key, ...)                                                                   \
    {.name = (key), .type = SES_DRV_ATTR_INTS, .ints = (const int64_t[]){__VA_ARGS__},     \
     .n = sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)}
#define A_FLOATS(key, ...)                                                                 \
    {.name = (key), .type = SES_DRV_ATTR_FLOATS, .floats = (const double[]){__VA_ARGS__},  \
     .n = sizeof((const double[]){__VA_ARGS__}) / sizeof(double)}
#define A_END {.name = NULL}
/* clang-format on */

/* As the host does: count then fill, NOT_FOUND when absent, INVALID_ARGUMENT on another type.
 * The node's attr_ctx is a test_attr_t table ended by A_END. */
int32_t test_attr_read(const ses_drv_node_t *node, const char *name, uint32_t type,
                       uint64_t *inout_count, void *values);

/* ---------------------------------------------------------------------------------------------
 * One node: its descriptors, buffers and state, kept so that it can run several times.
 * ------------------------------------------------------------------------------------------- */

typedef struct targ {
    uint32_t dtype;
    uint32_t rank;
    int64_t dims[MAX_RANK];
    const float *data; /* host values of an input; NULL reads as zeros */
} targ_t;

/* An f32 tensor of @p rank dims (ints) with host values @p data. */
targ_t tensor(const float *data, uint32_t rank, ...);

size_t targ_count(const targ_t *t);

typedef struct noderun {
    const ses_drv_api_t *api;
    void *host_ctx; /* the host's error record, cleared before each compute */
    size_t host_ctx_size;
    ses_drv_device_t *device;
    const ses_drv_kernel_t *k;
    targ_t in[MAX_IN], out;
    ses_drv_tensor_desc_t in_desc[MAX_IN], out_desc;
    ses_drv_buffer_t *in_buf[MAX_IN], *out_buf;
    uint64_t in_off[MAX_IN], out_off;
    ses_drv_node_t node;
    ses_drv_launch_t launch;
    void *state;
} noderun_t;

/* The kernel of @p op with signature @p sig on @p device; fails the test when there is none. */
const ses_drv_kernel_t *node_find_kernel(const ses_drv_api_t *api, ses_drv_device_t *device,
                                         const char *op, const char *sig);

/* Describes the node of kernel @p k (not yet any buffer); @p host_ctx (@p host_ctx_size bytes)
 * is zeroed before each compute. */
void node_describe_kernel(noderun_t *r, const ses_drv_api_t *api, void *host_ctx,
                          size_t host_ctx_size, ses_drv_device_t *device, const ses_drv_kernel_t *k,
                          const char *op, const test_attr_t *attrs, uint32_t n_in, const targ_t *in,
                          targ_t out);

/* Writes input @p i's values (f32) into its buffer. */
void node_set_input(noderun_t *r, uint32_t i, const float *data);

/* Allocates the buffers, fills the inputs, and makes the kernel's state as a plan does, with
 * the node's DRV-85 bits @p constant_inputs. */
void node_open(noderun_t *r, uint64_t constant_inputs);

/* Computes; on success copies the output into @p out_host. */
int32_t node_compute(noderun_t *r, float *out_host);

void node_close(noderun_t *r);

#endif
