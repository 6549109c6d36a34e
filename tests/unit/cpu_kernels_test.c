/*
 * Unit tests of the CPU driver's kernels (plugins/cpu), driven through the ABI exactly as the
 * host drives them: dlopen the module, negotiate, open the device, find each kernel by op and
 * signature in get_kernels' table, allocate buffers, copy the inputs in, build a node with
 * tensor descriptors and an attribute callback, compute, copy the output back.
 *
 * Values are checked by hand, or against a naive loop written here where the case is too large
 * to write out. The module's path comes from the build as SES_CPU_DRIVER_PATH.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <session/driver.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#ifndef SES_CPU_DRIVER_PATH
#error "compile with -DSES_CPU_DRIVER_PATH=\"/path/to/ses_cpu.so\""
#endif

#include "../support/test_host.h"

#define F32 SES_DRV_DTYPE_F32
#define F64 SES_DRV_DTYPE_F64
#define I32 SES_DRV_DTYPE_I32
#define I64 SES_DRV_DTYPE_I64
#define U8 SES_DRV_DTYPE_U8
#define BOOL SES_DRV_DTYPE_BOOL
#define I8 SES_DRV_DTYPE_I8
#define U64 SES_DRV_DTYPE_U64

/* ---------------------------------------------------------------------------------------------
 * A host whose get_option answers driver.cpu.threads, to size the device's pool.
 * ------------------------------------------------------------------------------------------- */

typedef struct kernel_host_ctx {
    struct ses_drv_host_ctx base; /* first: the test host's error entry writes here */
    const char *threads;          /* the value of driver.cpu.threads; NULL when unset */
    const char *gemm;             /* the value of driver.cpu.gemm; NULL when unset */
    const char *spin_us;          /* the value of driver.cpu.spin_us; NULL when unset */
    int abort;                    /* what should_abort answers */
} kernel_host_ctx_t;

static int32_t option_host_get_option(ses_drv_host_ctx_t *ctx, const char *key, char *buffer,
                                      uint64_t buffer_size, uint64_t *out_size) {
    const kernel_host_ctx_t *k = (const kernel_host_ctx_t *)(const void *)ctx;
    const char *value = strcmp(key, "driver.cpu.threads") == 0 ? k->threads
                        : strcmp(key, "driver.cpu.gemm") == 0  ? k->gemm
                        : strcmp(key, "driver.cpu.spin_us") == 0 ? k->spin_us
                                                                 : NULL;

    if (!value)
        return SES_DRV_NOT_FOUND;
    uint64_t need = strlen(value) + 1;
    *out_size = need;
    if (need > buffer_size)
        return SES_DRV_INVALID_ARGUMENT;
    memcpy(buffer, value, need);
    return SES_DRV_OK;
}

static int32_t option_host_should_abort(ses_drv_host_ctx_t *ctx) {
    return ((const kernel_host_ctx_t *)(const void *)ctx)->abort;
}

static const ses_drv_host_t option_host = {
    .struct_size = sizeof(ses_drv_host_t),
    .log = test_host_log,
    .log_enabled = test_host_log_enabled,
    .error = test_host_error,
    .get_option = option_host_get_option,
    .should_abort = option_host_should_abort,
};

/* ---------------------------------------------------------------------------------------------
 * Fixture: the module loaded and negotiated, one driver instance and its device open.
 * ------------------------------------------------------------------------------------------- */

typedef struct fixture {
    void *lib;
    const ses_drv_api_t *api;
    kernel_host_ctx_t ctx;
    ses_drv_driver_t *driver;
    ses_drv_device_t *device;
    const char *name; /* the name of the nodes run() builds */
    int prepare;      /* non-zero: run() calls create first, as a plan does (compute_as_host) */
} fixture_t;

static int teardown(void **state) {
    fixture_t *f = *state;

    if (!f)
        return 0;
    if (f->api) {
        f->api->close_device(f->device);
        f->api->close(f->driver);
    }
    if (f->lib)
        dlclose(f->lib);
    free(f);
    *state = NULL;
    return 0;
}

static int setup(void **state) {
    fixture_t *f = calloc(1, sizeof *f);
    ses_drv_negotiate_t args;
    ses_drv_negotiate_fn negotiate;

    if (!f)
        return -1;
    *state = f;
    f->name = "node";
    f->lib = dlopen(SES_CPU_DRIVER_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!f->lib) {
        print_error("cannot load %s: %s\n", SES_CPU_DRIVER_PATH, dlerror());
        goto fail;
    }
    /* POSIX allows converting dlsym's void * to a function pointer; ISO C does not, hence the
     * memcpy, which -Wpedantic accepts. */
    void *sym = dlsym(f->lib, SES_DRV_NEGOTIATE_SYMBOL);
    if (!sym) {
        print_error("%s has no %s\n", SES_CPU_DRIVER_PATH, SES_DRV_NEGOTIATE_SYMBOL);
        goto fail;
    }
    memcpy(&negotiate, &sym, sizeof negotiate);

    memset(&args, 0, sizeof args);
    args.struct_size = sizeof args;
    args.abi_major = SES_DRV_ABI_MAJOR;
    args.host_minor_min = 0;
    args.host_minor_max = SES_DRV_ABI_MINOR;
    args.host = &test_host;
    args.host_ctx = &f->ctx.base;
    if (negotiate(&args) != SES_DRV_OK) {
        print_error("negotiate failed: %s\n", f->ctx.base.message);
        goto fail;
    }
    f->api = args.api;
    if (f->api->open(&test_host, &f->ctx.base, &f->driver) != SES_DRV_OK) {
        print_error("open failed: %s\n", f->ctx.base.message);
        goto fail;
    }
    if (f->api->open_device(f->driver, 0, &f->device) != SES_DRV_OK) {
        print_error("open_device failed: %s\n", f->ctx.base.message);
        goto fail;
    }
    return 0;

fail:
    /* cmocka does not call teardown after a failed setup. */
    teardown(state);
    return -1;
}

/* The same tests with per-node state: every kernel that has a create is prepared first. */
static int setup_prepared(void **state) {
    int rc = setup(state);

    if (rc == 0)
        ((fixture_t *)*state)->prepare = 1;
    return rc;
}

/* Fails with both the message and the expected fragment printed. */
#define assert_message_contains(f, fragment)                                                \
    do {                                                                                    \
        if (!strstr((f)->ctx.base.message, (fragment)))                                     \
            fail_msg("error message \"%s\" does not contain \"%s\"", (f)->ctx.base.message, \
                     (fragment));                                                           \
    } while (0)

/* ---------------------------------------------------------------------------------------------
 * Finding kernels
 * ------------------------------------------------------------------------------------------- */

static const ses_drv_kernel_t *kernel_at(const ses_drv_kernel_t *table, uint32_t stride,
                                         uint32_t i) {
    return (const ses_drv_kernel_t *)(const void *)((const char *)table + (size_t)i * stride);
}

static const ses_drv_kernel_t *find_kernel_on(const ses_drv_api_t *api, ses_drv_device_t *device,
                                              const char *op, const char *signature) {
    const ses_drv_kernel_t *table = NULL;
    uint32_t count = 0, stride = 0;

    assert_int_equal(api->get_kernels(device, &table, &count, &stride), SES_DRV_OK);
    for (uint32_t i = 0; i < count; i++) {
        const ses_drv_kernel_t *k = kernel_at(table, stride, i);
        if (strcmp(k->op, op) == 0 && strcmp(k->signature, signature) == 0)
            return k;
    }
    return NULL;
}

/*
 * Computes @p launch as a host does. With @p prepare, a kernel that has a create gets one made
 * from the launch's own node, as a plan's compile makes it, computes with it and destroys it;
 * otherwise it computes with no state. Returns create's status when that fails.
 */
/* When set, compute_as_host keeps the kernel's state in *kept_state across calls (made at the
 * first, destroyed by the test), as a plan's node keeps it across runs. */
static void **kept_state;

static int32_t compute_as_host(const ses_drv_kernel_t *k, ses_drv_device_t *dev, int prepare,
                               const ses_drv_launch_t *launch) {
    void *state = NULL;
    int32_t st;

    if (kept_state) {
        if (!*kept_state && k->create &&
            (st = k->create(dev, launch->node, kept_state)) != SES_DRV_OK)
            return st;
        return k->compute(dev, *kept_state, launch);
    }
    if (prepare && k->create && (st = k->create(dev, launch->node, &state)) != SES_DRV_OK)
        return st;
    st = k->compute(dev, state, launch);
    if (k->destroy)
        k->destroy(dev, state);
    return st;
}

/* ---------------------------------------------------------------------------------------------
 * Attributes: a small table behind the node's attr callback.
 * ------------------------------------------------------------------------------------------- */

typedef struct test_attr {
    const char *name; /* NULL ends a table */
    uint32_t type;    /* SES_DRV_ATTR_INT, FLOAT or INTS */
    int64_t i;
    double f;
    const int64_t *ints;
    uint64_t n_ints;
} test_attr_t;

/* clang-format off */
#define A_INT(key, value) {.name = (key), .type = SES_DRV_ATTR_INT, .i = (value)}
#define A_FLOAT(key, value) {.name = (key), .type = SES_DRV_ATTR_FLOAT, .f = (value)}
#define A_INTS(key, ...)                                                                   \
    {.name = (key), .type = SES_DRV_ATTR_INTS, .ints = (const int64_t[]){__VA_ARGS__},     \
     .n_ints = sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)}
#define A_END {.name = NULL}
/* clang-format on */

/* As the host does: count then fill, NOT_FOUND when absent, INVALID_ARGUMENT on another type. */
static int32_t test_attr_read(const ses_drv_node_t *node, const char *name, uint32_t type,
                              uint64_t *inout_count, void *values) {
    const test_attr_t *a = node->attr_ctx;

    for (; a && a->name; a++) {
        if (strcmp(a->name, name) != 0)
            continue;
        if (a->type != type)
            return SES_DRV_INVALID_ARGUMENT;
        uint64_t count = a->type == SES_DRV_ATTR_INTS ? a->n_ints : 1;
        if (values) {
            uint64_t n = count < *inout_count ? count : *inout_count;
            if (a->type == SES_DRV_ATTR_INT && n)
                memcpy(values, &a->i, sizeof a->i);
            else if (a->type == SES_DRV_ATTR_FLOAT && n)
                memcpy(values, &a->f, sizeof a->f);
            else if (a->type == SES_DRV_ATTR_INTS && n)
                memcpy(values, a->ints, (size_t)n * sizeof(int64_t));
        }
        *inout_count = count;
        return SES_DRV_OK;
    }
    return SES_DRV_NOT_FOUND;
}

/* ---------------------------------------------------------------------------------------------
 * Running one node
 * ------------------------------------------------------------------------------------------- */

#define MAX_RANK 8
#define MAX_IN 6

/* A tensor argument: dtype, shape and (for inputs) the host values; NULL data reads as zeros. */
typedef struct targ {
    uint32_t dtype;
    uint32_t rank;
    int64_t dims[MAX_RANK];
    const void *data;
} targ_t;

/* tensor(F32, values, rank, dim0, dim1, ...) */
static targ_t tensor(uint32_t dtype, const void *data, uint32_t rank, ...) {
    targ_t t;
    va_list ap;

    memset(&t, 0, sizeof t);
    t.dtype = dtype;
    t.rank = rank;
    t.data = data;
    va_start(ap, rank);
    for (uint32_t d = 0; d < rank; d++)
        t.dims[d] = va_arg(ap, int);
    va_end(ap);
    return t;
}

static size_t dtype_size(uint32_t dtype) {
    switch (dtype) {
    case SES_DRV_DTYPE_F64:
    case SES_DRV_DTYPE_I64:
    case SES_DRV_DTYPE_U64: return 8;
    case SES_DRV_DTYPE_F32:
    case SES_DRV_DTYPE_I32:
    case SES_DRV_DTYPE_U32: return 4;
    case SES_DRV_DTYPE_F16:
    case SES_DRV_DTYPE_BF16:
    case SES_DRV_DTYPE_I16:
    case SES_DRV_DTYPE_U16: return 2;
    default: return 1;
    }
}

static size_t targ_bytes(const targ_t *t) {
    size_t n = dtype_size(t->dtype);
    for (uint32_t d = 0; d < t->rank; d++)
        n *= (size_t)t->dims[d];
    return n;
}

/*
 * Runs kernel (op, sig) of device @p dev over @p n_in inputs and one output, and copies the
 * output into @p out_host when it succeeds. Each argument gets its own buffer (at least one
 * byte, as alloc wants); the output's is prefilled with 0xab so a write past a zero-size output
 * would show. Returns the kernel's status.
 */
static int32_t run_on(const ses_drv_api_t *api, ses_drv_device_t *dev, int prepare,
                      const char *name, const char *op, const char *sig, const test_attr_t *attrs,
                      uint32_t n_in, const targ_t *in, targ_t out, void *out_host) {
    const ses_drv_kernel_t *k = find_kernel_on(api, dev, op, sig);
    ses_drv_tensor_desc_t in_desc[MAX_IN], out_desc;
    ses_drv_buffer_t *in_buf[MAX_IN] = {0}, *out_buf = NULL;
    uint64_t in_off[MAX_IN] = {0}, out_off = 0;
    ses_drv_node_t node;
    ses_drv_launch_t launch;

    if (!k)
        fail_msg("no kernel %s %s", op, sig);
    assert_true(n_in <= MAX_IN);
    memset(in_desc, 0, sizeof in_desc);
    for (uint32_t i = 0; i < n_in; i++) {
        size_t bytes = targ_bytes(&in[i]);
        assert_int_equal(api->alloc(dev, bytes ? bytes : 1, SES_DRV_MEM_DEVICE, &in_buf[i]),
                         SES_DRV_OK);
        void *zeros = in[i].data || !bytes ? NULL : calloc(1, bytes);
        if (bytes)
            assert_int_equal(
                api->copy_h2d(dev, NULL, in[i].data ? in[i].data : zeros, in_buf[i], 0, bytes),
                SES_DRV_OK);
        free(zeros);
        in_desc[i].struct_size = sizeof in_desc[i];
        in_desc[i].dtype = in[i].dtype;
        in_desc[i].rank = in[i].rank;
        in_desc[i].dims = in[i].dims;
    }
    size_t out_bytes = targ_bytes(&out);
    size_t alloc_bytes = out_bytes ? out_bytes : 1;
    unsigned char *fill = malloc(alloc_bytes);
    assert_non_null(fill);
    memset(fill, 0xab, alloc_bytes);
    assert_int_equal(api->alloc(dev, alloc_bytes, SES_DRV_MEM_DEVICE, &out_buf), SES_DRV_OK);
    assert_int_equal(api->copy_h2d(dev, NULL, fill, out_buf, 0, alloc_bytes), SES_DRV_OK);
    memset(&out_desc, 0, sizeof out_desc);
    out_desc.struct_size = sizeof out_desc;
    out_desc.dtype = out.dtype;
    out_desc.rank = out.rank;
    out_desc.dims = out.dims;

    memset(&node, 0, sizeof node);
    node.struct_size = sizeof node;
    node.op = op;
    node.name = name;
    node.n_inputs = n_in;
    node.n_outputs = 1;
    node.inputs = in_desc;
    node.outputs = &out_desc;
    node.attr = test_attr_read;
    node.attr_ctx = attrs;
    memset(&launch, 0, sizeof launch);
    launch.struct_size = sizeof launch;
    launch.node = &node;
    launch.inputs = in_buf;
    launch.input_offsets = in_off;
    launch.outputs = &out_buf;
    launch.output_offsets = &out_off;

    int32_t st = compute_as_host(k, dev, prepare, &launch);

    if (st == SES_DRV_OK && out_host && out_bytes)
        assert_int_equal(api->copy_d2h(dev, NULL, out_buf, 0, out_host, out_bytes), SES_DRV_OK);
    if (st == SES_DRV_OK && out_bytes == 0) {
        /* A zero-size output is a no-op: its buffer still holds the fill. */
        unsigned char b = 0;
        assert_int_equal(api->copy_d2h(dev, NULL, out_buf, 0, &b, 1), SES_DRV_OK);
        assert_int_equal(b, 0xab);
    }
    for (uint32_t i = 0; i < n_in; i++)
        api->free(dev, in_buf[i]);
    api->free(dev, out_buf);
    free(fill);
    return st;
}

static int32_t run(fixture_t *f, const char *op, const char *sig, const test_attr_t *attrs,
                   uint32_t n_in, const targ_t *in, targ_t out, void *out_host) {
    memset(&f->ctx.base, 0, sizeof f->ctx.base);
    return run_on(f->api, f->device, f->prepare, f->name, op, sig, attrs, n_in, in, out, out_host);
}

/* run() that must succeed; prints the driver's message otherwise. */
#define RUN_OK(f, op, sig, attrs, n_in, in, out, out_host)                                   \
    do {                                                                                     \
        int32_t st_ = run((f), (op), (sig), (attrs), (n_in), (in), (out), (out_host));       \
        if (st_ != SES_DRV_OK)                                                               \
            fail_msg("%s %s returned %d: %s", (op), (sig), (int)st_, (f)->ctx.base.message); \
    } while (0)

/* ---------------------------------------------------------------------------------------------
 * Comparing values
 * ------------------------------------------------------------------------------------------- */

static void expect_f32(const float *want, const float *got, size_t n, double tol) {
    for (size_t i = 0; i < n; i++) {
        if (isnan(want[i]) && isnan(got[i]))
            continue;
        if (isinf(want[i]) && want[i] == got[i])
            continue;
        double err = fabs((double)want[i] - (double)got[i]);
        if (!(err <= tol * (1.0 + fabs((double)want[i]))))
            fail_msg("element %zu: want %.9g, got %.9g", i, (double)want[i], (double)got[i]);
    }
}

static void expect_f64(const double *want, const double *got, size_t n, double tol) {
    for (size_t i = 0; i < n; i++) {
        if (isnan(want[i]) && isnan(got[i]))
            continue;
        if (isinf(want[i]) && want[i] == got[i])
            continue;
        double err = fabs(want[i] - got[i]);
        if (!(err <= tol * (1.0 + fabs(want[i]))))
            fail_msg("element %zu: want %.17g, got %.17g", i, want[i], got[i]);
    }
}

static void expect_i32(const int32_t *want, const int32_t *got, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (want[i] != got[i])
            fail_msg("element %zu: want %d, got %d", i, (int)want[i], (int)got[i]);
}

static void expect_i64(const int64_t *want, const int64_t *got, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (want[i] != got[i])
            fail_msg("element %zu: want %lld, got %lld", i, (long long)want[i], (long long)got[i]);
}

static void expect_u8(const uint8_t *want, const uint8_t *got, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (want[i] != got[i])
            fail_msg("element %zu: want %u, got %u", i, (unsigned)want[i], (unsigned)got[i]);
}

/* ---------------------------------------------------------------------------------------------
 * The table
 * ------------------------------------------------------------------------------------------- */

static int is_dtype_name(const char *s, size_t n) {
    static const char *const names[] = {"f32", "f64", "f16", "bf16", "i8",  "i16", "i32",
                                        "i64", "u8",  "u16", "u32",  "u64", "bool"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == n && strncmp(names[i], s, n) == 0)
            return 1;
    return 0;
}

/* "a,b->c" or "a...->c": dtype names separated by commas, one arrow, then the outputs: one, or
 * for the training ops two ("f32,i64->f32,f32") or none ("f32,f32,f32->", an in-place update). */
static int signature_is_well_formed(const char *sig) {
    const char *arrow = strstr(sig, "->");
    if (!arrow || strstr(arrow + 2, "->"))
        return 0;
    for (const char *q = arrow + 2; *q;) {
        const char *comma = strchr(q, ',');
        size_t n = comma ? (size_t)(comma - q) : strlen(q);
        if (!is_dtype_name(q, n) || (comma && !comma[1]))
            return 0;
        q += n + (comma ? 1 : 0);
    }
    const char *p = sig;
    while (p < arrow) {
        const char *end = p;
        while (end < arrow && *end != ',' && *end != '.')
            end++;
        if (!is_dtype_name(p, (size_t)(end - p)))
            return 0;
        if (end < arrow && *end == '.')
            return end + 3 == arrow && strncmp(end, "...", 3) == 0 && p == sig;
        p = end < arrow ? end + 1 : end;
    }
    return 1;
}

static void the_kernel_table_has_no_duplicate_op_and_signature_pairs(void **state) {
    fixture_t *f = *state;
    const ses_drv_kernel_t *table = NULL;
    uint32_t count = 0, stride = 0;

    assert_int_equal(f->api->get_kernels(f->device, &table, &count, &stride), SES_DRV_OK);
    assert_int_equal(stride, sizeof(ses_drv_kernel_t));
    assert_true(count > 13);
    for (uint32_t i = 0; i < count; i++) {
        const ses_drv_kernel_t *a = kernel_at(table, stride, i);
        for (uint32_t j = i + 1; j < count; j++) {
            const ses_drv_kernel_t *b = kernel_at(table, stride, j);
            if (strcmp(a->op, b->op) == 0 && strcmp(a->signature, b->signature) == 0)
                fail_msg("entries %u and %u are both %s %s", i, j, a->op, a->signature);
        }
    }
}

/* The ops whose entries prepare per-node state in create: the elementwise ones. */
static int op_prepares(const char *op) {
    static const char *const elementwise[] = {
        "Add",     "Sub",  "Mul",      "Div",  "Pow",       "Equal", "Greater", "Less",
        "Where",   "Neg",  "Abs",      "Relu", "Exp",       "Log",   "Sqrt",    "Reciprocal",
        "Sigmoid", "Tanh", "Softplus", "Erf",  "LeakyRelu", "Cast",
        "PRelu",
        "Mod", "And", "Or", "Xor", "BitShift", "Not", "Sign", "IsNaN", "IsInf", "Round", "Floor",
        "Ceil", "Cos",
        "Sin", "Tan", "Acos", "Asin", "Atan", "Cosh", "Sinh", "Asinh", "Acosh", "Atanh",
        /* not Min and Max: variadic, they fold their inputs without a prepared walk */
        "Conv", "FusedConv", "NchwcConv", /* their state keeps oneDNN's primitives and the
                                             constant-input bits */
        "MatMul", "Gemm", "FusedGemm", /* oneDNN's matmul for constant weights */
        /* group g-act: the activations of cpu_activation.c (not their gradients) */
        "Elu", "Selu", "Celu", "HardSigmoid", "HardSwish", "ThresholdedRelu", "Softsign",
        "Shrink", "Gelu", "Mish",
        "ConvTranspose",               /* g-convfam: its column matrix */
        "GreaterOrEqual", "LessOrEqual",
        /* the random ops keep their stream (cpu_random.c) */
        "Bernoulli", "RandomUniformLike", "RandomNormalLike",
    };
    for (size_t i = 0; i < sizeof elementwise / sizeof elementwise[0]; i++)
        if (strcmp(op, elementwise[i]) == 0)
            return 1;
    return 0;
}

static void every_table_entry_is_well_formed(void **state) {
    fixture_t *f = *state;
    const ses_drv_kernel_t *table = NULL;
    uint32_t count = 0, stride = 0;

    assert_int_equal(f->api->get_kernels(f->device, &table, &count, &stride), SES_DRV_OK);
    for (uint32_t i = 0; i < count; i++) {
        const ses_drv_kernel_t *k = kernel_at(table, stride, i);
        assert_int_equal(k->struct_size, sizeof(ses_drv_kernel_t));
        assert_non_null(k->op);
        assert_non_null(k->compute);
        assert_int_equal(k->flags, 0);
        /* create and destroy come as a pair, on the elementwise entries, Conv, FusedConv,
         * NchwcConv, MatMul, Gemm and FusedGemm only. */
        /* Dropout's training form (data and ratio) keeps a random stream; its inference form
         * (data alone) keeps nothing. */
        const char *comma = strchr(k->signature, ','), *arrow = strstr(k->signature, "->");
        const int training_dropout =
            strcmp(k->op, "Dropout") == 0 && comma && arrow && comma < arrow;
        if (op_prepares(k->op) || training_dropout) {
            if (!k->create || !k->destroy)
                fail_msg("%s %s has no create or no destroy", k->op, k->signature);
        } else if (k->create || k->destroy) {
            fail_msg("%s %s has a create or a destroy", k->op, k->signature);
        }
        if (!signature_is_well_formed(k->signature))
            fail_msg("%s has a malformed signature \"%s\"", k->op, k->signature);
    }
}

/* Spot checks that each op of the contract is offered at the dtypes it promises. */
static void the_table_offers_every_op_of_the_contract_at_its_dtypes(void **state) {
    fixture_t *f = *state;
    static const char *const all13[] = {"f32", "f64", "f16", "bf16", "i8",  "i16", "i32",
                                        "i64", "u8",  "u16", "u32",  "u64", "bool"};
    static const char *const basic[] = {"f32", "f64", "i32", "i64", "u8", "bool"};
    static const char *const expected[][2] = {
        {"Add", "i64,i64->i64"},      {"Sub", "f64,f64->f64"},
        {"Mul", "i32,i32->i32"},      {"Div", "f32,f32->f32"},
        {"Pow", "f64,f64->f64"},      {"Equal", "bool,bool->bool"},
        {"Equal", "u8,u8->bool"},     {"Greater", "u8,u8->bool"},
        {"Less", "i64,i64->bool"},    {"Where", "bool,bool,bool->bool"},
        {"Where", "bool,u8,u8->u8"},  {"Neg", "i32->i32"},
        {"Neg", "f64->f64"},          {"Abs", "i64->i64"},
        {"Relu", "i32->i32"},         {"Exp", "f64->f64"},
        {"Log", "f32->f32"},          {"Sqrt", "f32->f32"},
        {"Reciprocal", "f64->f64"},   {"Sigmoid", "f32->f32"},
        {"Tanh", "f64->f64"},         {"Softplus", "f32->f32"},
        {"Erf", "f64->f64"},          {"LeakyRelu", "f32->f32"},
        {"MatMul", "f64,f64->f64"},   {"Gemm", "f32,f32->f32"},
        {"Gemm", "f64,f64,f64->f64"}, {"ReduceSum", "i32->i32"},
        {"ReduceMax", "i64->i64"},    {"ReduceMean", "f64->f64"},
        {"Softmax", "f32->f32"},      {"LogSoftmax", "f64->f64"},
        {"ArgMax", "i32->i64"},       {"Gather", "bf16,i32->bf16"},
        {"Concat", "u16...->u16"},    {"Min", "u16...->u16"},
        {"Max", "f64...->f64"},       {"Mod", "i8,i8->i8"},
        {"BitShift", "u64,u64->u64"}, {"Xor", "bool,bool->bool"},
        {"Not", "bool->bool"},        {"Sign", "u32->u32"},
        {"IsInf", "f64->bool"},       {"Acosh", "f32->f32"},
        /* g-dtypes */
        {"Add", "u8,u8->u8"},         {"Div", "u64,u64->u64"},
        {"Pow", "i32,i32->i32"},      {"Pow", "f32,i64->f32"},
        {"Pow", "i64,f32->i64"},      {"Min", "f16...->f16"},
        {"Mod", "bf16,bf16->bf16"},   {"GreaterOrEqual", "u16,u16->bool"},
        {"LessOrEqual", "f64,f64->bool"}, {"EyeLike", "i32->f64"},
        {"Bernoulli", "f32->f64"},    {"RandomUniformLike", "i64->f16"},
        {"Clip", "i8,i8,i8->i8"},     {"Dropout", "f32,f32->f32,bool"},
        {"BatchNormalization", "f32,f32,f32->f32"},
    };
    static const char *const missing[][2] = {
        {"Neg", "i32,i32->i32"}, /* not an op of two inputs */
        {"Pow", "u8,u8->u8"}, /* a base of f32, f64, i32 or i64 only */
        {"ReduceMean", "i32->i32"},
        {"Greater", "bool,bool->bool"},
        {"BitShift", "i32,i32->i32"}, /* unsigned only */
        {"Min", "bool...->bool"},
    };
    char sig[64];

    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        if (!find_kernel_on(f->api, f->device, expected[i][0], expected[i][1]))
            fail_msg("no %s %s", expected[i][0], expected[i][1]);
    for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++)
        if (find_kernel_on(f->api, f->device, missing[i][0], missing[i][1]))
            fail_msg("unexpected %s %s", missing[i][0], missing[i][1]);
    static const char *const movers[] = {"Identity",  "Reshape",   "Flatten", "Squeeze",
                                         "Unsqueeze", "Transpose", "Slice"};
    for (size_t m = 0; m < sizeof movers / sizeof movers[0]; m++)
        for (size_t d = 0; d < 13; d++) {
            snprintf(sig, sizeof sig, "%s->%s", all13[d], all13[d]);
            if (!find_kernel_on(f->api, f->device, movers[m], sig))
                fail_msg("no %s %s", movers[m], sig);
        }
    for (size_t d = 0; d < 13; d++) {
        snprintf(sig, sizeof sig, "%s...->%s", all13[d], all13[d]);
        assert_non_null(find_kernel_on(f->api, f->device, "Concat", sig));
        snprintf(sig, sizeof sig, "%s,i64->%s", all13[d], all13[d]);
        assert_non_null(find_kernel_on(f->api, f->device, "Gather", sig));
        snprintf(sig, sizeof sig, "%s,i32->%s", all13[d], all13[d]);
        assert_non_null(find_kernel_on(f->api, f->device, "Gather", sig));
    }
    (void)basic;
    for (size_t a = 0; a < 13; a++)
        for (size_t b = 0; b < 13; b++) {
            snprintf(sig, sizeof sig, "%s->%s", all13[a], all13[b]);
            if (!find_kernel_on(f->api, f->device, "Cast", sig))
                fail_msg("no Cast %s", sig);
        }
}

/* ---------------------------------------------------------------------------------------------
 * Launch checks shared by every kernel
 * ------------------------------------------------------------------------------------------- */

static void a_launch_whose_dtypes_differ_from_the_entry_is_refused_naming_both(void **state) {
    fixture_t *f = *state;
    const ses_drv_kernel_t *k = find_kernel_on(f->api, f->device, "Add", "f32,f32->f32");
    ses_drv_tensor_desc_t descs[3];
    ses_drv_buffer_t *buf = NULL;
    ses_drv_node_t node;
    ses_drv_launch_t launch;
    uint64_t offs[2] = {0, 0};

    assert_non_null(k);
    assert_int_equal(f->api->alloc(f->device, 64, SES_DRV_MEM_DEVICE, &buf), SES_DRV_OK);
    int64_t dims[1] = {2};
    for (int i = 0; i < 3; i++) {
        memset(&descs[i], 0, sizeof descs[i]);
        descs[i].struct_size = sizeof descs[i];
        descs[i].dtype = i == 1 ? I32 : F32;
        descs[i].rank = 1;
        descs[i].dims = dims;
    }
    ses_drv_buffer_t *bufs[2] = {buf, buf};
    memset(&node, 0, sizeof node);
    node.struct_size = sizeof node;
    node.op = "Add";
    node.name = "mixed";
    node.n_inputs = 2;
    node.n_outputs = 1;
    node.inputs = descs;
    node.outputs = &descs[2];
    memset(&launch, 0, sizeof launch);
    launch.struct_size = sizeof launch;
    launch.node = &node;
    launch.inputs = bufs;
    launch.input_offsets = offs;
    launch.outputs = bufs;
    launch.output_offsets = offs;

    assert_int_equal(k->compute(f->device, NULL, &launch), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "Add \"mixed\"");
    assert_message_contains(f, "inputs are f32, i32, output is f32");
    assert_message_contains(f, "f32,f32->f32");

    /* Misaligned: an f32 at byte offset 2. */
    descs[1].dtype = F32;
    uint64_t odd[2] = {2, 0};
    launch.input_offsets = odd;
    assert_int_equal(k->compute(f->device, NULL, &launch), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "input 0");
    assert_message_contains(f, "not aligned");

    /* Past the end of the buffer. */
    uint64_t far[2] = {0, 60};
    launch.input_offsets = far;
    assert_int_equal(k->compute(f->device, NULL, &launch), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "input 1");
    assert_message_contains(f, "64 bytes");
    f->api->free(f->device, buf);
}

/* Runs a node whose arguments all lie in @p arena at the given byte offsets, as a plan's
 * memory planner lays them out; @p in and @p out give only dtypes and shapes. */
static int32_t run_in_arena(fixture_t *f, ses_drv_buffer_t *arena, const char *op, const char *sig,
                            const test_attr_t *attrs, uint32_t n_in, const targ_t *in,
                            const uint64_t *in_off, targ_t out, uint64_t out_off) {
    const ses_drv_kernel_t *k = find_kernel_on(f->api, f->device, op, sig);
    ses_drv_tensor_desc_t descs[MAX_IN + 1];
    ses_drv_buffer_t *bufs[MAX_IN + 1];
    ses_drv_node_t node;
    ses_drv_launch_t launch;

    assert_non_null(k);
    memset(descs, 0, sizeof descs);
    for (uint32_t i = 0; i <= n_in; i++) {
        const targ_t *t = i < n_in ? &in[i] : &out;
        descs[i].struct_size = sizeof descs[i];
        descs[i].dtype = t->dtype;
        descs[i].rank = t->rank;
        descs[i].dims = t->dims;
        bufs[i] = arena;
    }
    memset(&node, 0, sizeof node);
    node.struct_size = sizeof node;
    node.op = op;
    node.name = f->name;
    node.n_inputs = n_in;
    node.n_outputs = 1;
    node.inputs = descs;
    node.outputs = &descs[n_in];
    node.attr = test_attr_read;
    node.attr_ctx = attrs;
    memset(&launch, 0, sizeof launch);
    launch.struct_size = sizeof launch;
    launch.node = &node;
    launch.inputs = bufs;
    launch.input_offsets = in_off;
    launch.outputs = &bufs[n_in];
    launch.output_offsets = &out_off;
    memset(&f->ctx.base, 0, sizeof f->ctx.base);
    return compute_as_host(k, f->device, f->prepare, &launch);
}

/* The planner may give an elementwise op's output exactly an input's bytes, and a copy any
 * overlapping bytes; every other overlap is refused rather than computed wrong. */
static void outputs_may_overlap_inputs_only_where_the_op_computes_through_it(void **state) {
    fixture_t *f = *state;
    ses_drv_buffer_t *arena = NULL;
    float init[32], got[32];

    for (int i = 0; i < 32; i++)
        init[i] = (float)i;
    assert_int_equal(f->api->alloc(f->device, sizeof init, SES_DRV_MEM_DEVICE, &arena), SES_DRV_OK);
    targ_t v8[2] = {tensor(F32, NULL, 1, 8), tensor(F32, NULL, 1, 8)};

    /* Add in place over input 0: x[0..8) += x[16..24). */
    assert_int_equal(f->api->copy_h2d(f->device, NULL, init, arena, 0, sizeof init), SES_DRV_OK);
    assert_int_equal(run_in_arena(f, arena, "Add", "f32,f32->f32", NULL, 2, v8,
                                  (const uint64_t[]){0, 64}, tensor(F32, NULL, 1, 8), 0),
                     SES_DRV_OK);
    assert_int_equal(f->api->copy_d2h(f->device, NULL, arena, 0, got, sizeof got), SES_DRV_OK);
    for (int i = 0; i < 8; i++)
        assert_true(got[i] == (float)(i + i + 16));

    /* Softmax in place. */
    const test_attr_t axis0[] = {A_INT("axis", 0), A_END};
    assert_int_equal(f->api->copy_h2d(f->device, NULL, init, arena, 0, sizeof init), SES_DRV_OK);
    assert_int_equal(run_in_arena(f, arena, "Softmax", "f32->f32", axis0, 1, v8,
                                  (const uint64_t[]){0}, tensor(F32, NULL, 1, 8), 0),
                     SES_DRV_OK);
    assert_int_equal(f->api->copy_d2h(f->device, NULL, arena, 0, got, sizeof got), SES_DRV_OK);
    float sum = 0;
    for (int i = 0; i < 8; i++)
        sum += got[i];
    assert_true(fabsf(sum - 1.0f) < 1e-6f && got[7] > got[6]);

    /* Reshape over overlapping bytes moves them like memmove. */
    assert_int_equal(f->api->copy_h2d(f->device, NULL, init, arena, 0, sizeof init), SES_DRV_OK);
    assert_int_equal(run_in_arena(f, arena, "Reshape", "f32->f32", NULL, 1, v8,
                                  (const uint64_t[]){0}, tensor(F32, NULL, 2, 2, 4), 8),
                     SES_DRV_OK);
    assert_int_equal(f->api->copy_d2h(f->device, NULL, arena, 0, got, sizeof got), SES_DRV_OK);
    for (int i = 0; i < 8; i++)
        assert_true(got[i + 2] == (float)i);

    /* An elementwise output shifted by one element, and a Transpose over its input. */
    f->name = "shifted";
    assert_int_equal(run_in_arena(f, arena, "Add", "f32,f32->f32", NULL, 2, v8,
                                  (const uint64_t[]){0, 64}, tensor(F32, NULL, 1, 8), 4),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "Add \"shifted\"");
    assert_message_contains(f, "overlaps input 0");
    const test_attr_t swap[] = {A_INTS("perm", 1, 0), A_END};
    targ_t m[1] = {tensor(F32, NULL, 2, 2, 4)};
    assert_int_equal(run_in_arena(f, arena, "Transpose", "f32->f32", swap, 1, m,
                                  (const uint64_t[]){0}, tensor(F32, NULL, 2, 4, 2), 0),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "cannot run in place");
    f->api->free(f->device, arena);
}

/* ---------------------------------------------------------------------------------------------
 * Per-node state: create, then launches that need only their buffers checked
 * ------------------------------------------------------------------------------------------- */

/* A node and its launch built by hand, each argument in its own 64-byte buffer (output last),
 * so that a test can change one descriptor, offset or buffer between launches. */
typedef struct hand {
    targ_t arg[MAX_IN + 1];
    ses_drv_tensor_desc_t desc[MAX_IN + 1];
    ses_drv_buffer_t *buf[MAX_IN + 1];
    uint64_t off[MAX_IN + 1];
    ses_drv_node_t node;
    ses_drv_launch_t launch;
    uint32_t n_in;
} hand_t;

static void hand_open(fixture_t *f, hand_t *h, const char *op, uint32_t n_in, const targ_t *args) {
    memset(h, 0, sizeof *h);
    h->n_in = n_in;
    for (uint32_t i = 0; i <= n_in; i++) {
        h->arg[i] = args[i];
        h->desc[i].struct_size = sizeof h->desc[i];
        h->desc[i].dtype = args[i].dtype;
        h->desc[i].rank = args[i].rank;
        h->desc[i].dims = h->arg[i].dims;
        assert_int_equal(f->api->alloc(f->device, 64, SES_DRV_MEM_DEVICE, &h->buf[i]), SES_DRV_OK);
        if (args[i].data)
            assert_int_equal(
                f->api->copy_h2d(f->device, NULL, args[i].data, h->buf[i], 0, targ_bytes(&args[i])),
                SES_DRV_OK);
    }
    h->node.struct_size = sizeof h->node;
    h->node.op = op;
    h->node.name = f->name;
    h->node.n_inputs = n_in;
    h->node.n_outputs = 1;
    h->node.inputs = h->desc;
    h->node.outputs = &h->desc[n_in];
    h->node.attr = test_attr_read;
    h->launch.struct_size = sizeof h->launch;
    h->launch.node = &h->node;
    h->launch.inputs = h->buf;
    h->launch.input_offsets = h->off;
    h->launch.outputs = &h->buf[n_in];
    h->launch.output_offsets = &h->off[n_in];
}

static void hand_close(fixture_t *f, hand_t *h) {
    for (uint32_t i = 0; i <= h->n_in; i++)
        f->api->free(f->device, h->buf[i]);
}

/* Computes with @p state and returns the status; the output's first @p n floats go to @p got. */
static int32_t hand_compute(fixture_t *f, hand_t *h, const ses_drv_kernel_t *k, void *state,
                            float *got, size_t n) {
    memset(&f->ctx.base, 0, sizeof f->ctx.base);
    int32_t st = k->compute(f->device, state, &h->launch);
    if (st == SES_DRV_OK && n)
        assert_int_equal(f->api->copy_d2h(f->device, NULL, h->buf[h->n_in], h->off[h->n_in], got,
                                          n * sizeof(float)),
                         SES_DRV_OK);
    return st;
}

/*
 * The walk without strides (same shapes, or single elements) and the broadcasting walk must give
 * the same bits for the same values, prepared or not: [2,3] op [3] and [2,3] op [] against
 * [2,3] op the same values tiled to [2,3].
 */
static void the_flat_and_the_broadcasting_walk_give_the_same_bits(void **state) {
    fixture_t *f = *state;
    static const char *const ops[][2] = {
        {"Add", "f32,f32->f32"},   {"Sub", "f32,f32->f32"},    {"Mul", "f32,f32->f32"},
        {"Div", "f32,f32->f32"},   {"Pow", "f32,f32->f32"},    {"Add", "f64,f64->f64"},
        {"Div", "f64,f64->f64"},   {"Equal", "f32,f32->bool"}, {"Greater", "f32,f32->bool"},
        {"Less", "f64,f64->bool"},
    };
    const float a[6] = {1.5f, -2.25f, 3.0f, 0.1f, 7.0f, -0.0f};
    const float row[3] = {0.3f, 2.0f, -3.0f};
    const float tiled_row[6] = {0.3f, 2.0f, -3.0f, 0.3f, 2.0f, -3.0f};
    const float one[1] = {0.7f};
    const float tiled_one[6] = {0.7f, 0.7f, 0.7f, 0.7f, 0.7f, 0.7f};
    const double da[6] = {1.5, -2.25, 3.0, 0.1, 7.0, -0.0};
    const double drow[3] = {0.3, 2.0, -3.0};
    const double dtiled[6] = {0.3, 2.0, -3.0, 0.3, 2.0, -3.0};
    const double done[1] = {0.7};
    const double dtiled_one[6] = {0.7, 0.7, 0.7, 0.7, 0.7, 0.7};
    unsigned char got[4][48];

    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        const int dbl = strstr(ops[o][1], "f64") != NULL;
        const uint32_t t = dbl ? F64 : F32;
        const uint32_t to = strstr(ops[o][1], "bool") ? BOOL : t;
        const void *x = dbl ? (const void *)da : (const void *)a;
        for (int scalar = 0; scalar < 2; scalar++) {
            const void *small = scalar ? (dbl ? (const void *)done : (const void *)one)
                                       : (dbl ? (const void *)drow : (const void *)row);
            const void *tiled = scalar ? (dbl ? (const void *)dtiled_one : (const void *)tiled_one)
                                       : (dbl ? (const void *)dtiled : (const void *)tiled_row);
            targ_t bcast[2] = {tensor(t, x, 2, 2, 3),
                               scalar ? tensor(t, small, 0) : tensor(t, small, 1, 3)};
            targ_t flat[2] = {tensor(t, x, 2, 2, 3), tensor(t, tiled, 2, 2, 3)};
            targ_t out = tensor(to, NULL, 2, 2, 3);
            for (int prepare = 0; prepare < 2; prepare++) {
                f->prepare = prepare;
                RUN_OK(f, ops[o][0], ops[o][1], NULL, 2, bcast, out, got[prepare * 2]);
                RUN_OK(f, ops[o][0], ops[o][1], NULL, 2, flat, out, got[prepare * 2 + 1]);
            }
            for (int i = 1; i < 4; i++)
                if (memcmp(got[0], got[i], targ_bytes(&out)) != 0)
                    fail_msg("%s %s with a %s: run %d differs from the broadcasting one", ops[o][0],
                             ops[o][1], scalar ? "scalar" : "row", i);
        }
    }

    /* Where, three ways: [2,3] condition with a [3] and a [] value. */
    const uint8_t c[6] = {1, 0, 1, 0, 0, 1};
    targ_t wb[3] = {tensor(BOOL, c, 2, 2, 3), tensor(F32, row, 1, 3), tensor(F32, one, 0)};
    targ_t wf[3] = {tensor(BOOL, c, 2, 2, 3), tensor(F32, tiled_row, 2, 2, 3),
                    tensor(F32, tiled_one, 2, 2, 3)};
    for (int prepare = 0; prepare < 2; prepare++) {
        f->prepare = prepare;
        RUN_OK(f, "Where", "bool,f32,f32->f32", NULL, 3, wb, tensor(F32, NULL, 2, 2, 3),
               got[prepare * 2]);
        RUN_OK(f, "Where", "bool,f32,f32->f32", NULL, 3, wf, tensor(F32, NULL, 2, 2, 3),
               got[prepare * 2 + 1]);
    }
    for (int i = 1; i < 4; i++)
        assert_memory_equal(got[0], got[i], 6 * sizeof(float));
    expect_f32((const float[]){0.3f, 0.7f, -3.0f, 0.7f, 0.7f, -3.0f}, (const float *)got[0], 6, 0);
}

/* The broadcasting walk create works out ([2,1,3] + [4,1] -> [2,4,3]) gives what the walk set
 * up at each launch gives. */
static void a_prepared_broadcasting_walk_gives_the_unprepared_result(void **state) {
    fixture_t *f = *state;
    const float x[6] = {1, 2, 3, 4, 5, 6};
    const float y[4] = {10, 20, 30, 40};
    float want[24], got[24];
    targ_t in[2] = {tensor(F32, x, 3, 2, 1, 3), tensor(F32, y, 2, 4, 1)};

    f->prepare = 0;
    RUN_OK(f, "Add", "f32,f32->f32", NULL, 2, in, tensor(F32, NULL, 3, 2, 4, 3), want);
    f->prepare = 1;
    RUN_OK(f, "Add", "f32,f32->f32", NULL, 2, in, tensor(F32, NULL, 3, 2, 4, 3), got);
    assert_memory_equal(want, got, sizeof got);
    for (int b = 0; b < 2; b++)
        for (int r = 0; r < 4; r++)
            for (int c = 0; c < 3; c++)
                assert_true(got[(b * 4 + r) * 3 + c] == x[b * 3 + c] + y[r]);
}

/* A state describes the shapes create saw. A launch with other shapes or dtypes is checked from
 * scratch: refused with the usual message when they are wrong, computed when they are right. */
static void a_prepared_node_launched_with_other_shapes_is_checked_from_scratch(void **state) {
    fixture_t *f = *state;
    const ses_drv_kernel_t *k = find_kernel_on(f->api, f->device, "Add", "f32,f32->f32");
    const float x[4] = {1, 2, 3, 4}, y[4] = {10, 20, 30, 40};
    const targ_t args[3] = {tensor(F32, x, 1, 4), tensor(F32, y, 1, 4), tensor(F32, NULL, 1, 4)};
    void *prep = NULL;
    float got[4];
    hand_t h;

    assert_non_null(k);
    f->name = "reshaped";
    hand_open(f, &h, "Add", 2, args);
    assert_int_equal(k->create(f->device, &h.node, &prep), SES_DRV_OK);
    assert_non_null(prep);
    assert_int_equal(hand_compute(f, &h, k, prep, got, 4), SES_DRV_OK);
    expect_f32((const float[]){11, 22, 33, 44}, got, 4, 0);

    /* [4] + [3] does not broadcast to [4], whatever create saw. */
    h.arg[1].dims[0] = 3;
    assert_int_equal(hand_compute(f, &h, k, prep, got, 0), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "Add \"reshaped\": shapes do not broadcast");
    assert_message_contains(f, "input 1 is [3]");
    /* [3] + [3] -> [3] is a good launch, computed without the state's walk. */
    h.arg[0].dims[0] = 3;
    h.arg[2].dims[0] = 3;
    assert_int_equal(hand_compute(f, &h, k, prep, got, 3), SES_DRV_OK);
    expect_f32((const float[]){11, 22, 33}, got, 3, 0);
    /* Ranks the state did not see: [1,4] + [4] -> [1,4]. */
    h.desc[0].rank = 2;
    h.arg[0].dims[0] = 1;
    h.arg[0].dims[1] = 4;
    h.arg[1].dims[0] = 4;
    h.desc[2].rank = 2;
    h.arg[2].dims[0] = 1;
    h.arg[2].dims[1] = 4;
    assert_int_equal(hand_compute(f, &h, k, prep, got, 4), SES_DRV_OK);
    expect_f32((const float[]){11, 22, 33, 44}, got, 4, 0);
    /* Another dtype is refused naming it. */
    h.desc[0].rank = 1;
    h.arg[0].dims[0] = 4;
    h.desc[2].rank = 1;
    h.arg[2].dims[0] = 4;
    h.desc[1].dtype = I32;
    assert_int_equal(hand_compute(f, &h, k, prep, got, 0), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "inputs are f32, i32, output is f32");
    /* And the shapes it saw work again. */
    h.desc[1].dtype = F32;
    assert_int_equal(hand_compute(f, &h, k, prep, got, 4), SES_DRV_OK);
    expect_f32((const float[]){11, 22, 33, 44}, got, 4, 0);
    k->destroy(f->device, prep);
    hand_close(f, &h);
}

/* What protects memory is checked on every launch, prepared or not. */
static void a_prepared_launch_still_checks_ranges_alignment_and_overlap(void **state) {
    fixture_t *f = *state;
    const ses_drv_kernel_t *k = find_kernel_on(f->api, f->device, "Add", "f32,f32->f32");
    const float x[4] = {1, 2, 3, 4};
    const targ_t args[3] = {tensor(F32, x, 1, 4), tensor(F32, x, 1, 4), tensor(F32, NULL, 1, 4)};
    void *prep = NULL;
    float got[4];
    hand_t h;

    assert_non_null(k);
    hand_open(f, &h, "Add", 2, args);
    assert_int_equal(k->create(f->device, &h.node, &prep), SES_DRV_OK);
    assert_non_null(prep);

    /* 16 bytes at 56 end past the 64-byte buffer. */
    h.off[1] = 56;
    assert_int_equal(hand_compute(f, &h, k, prep, got, 0), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "input 1");
    assert_message_contains(f, "64 bytes");
    h.off[1] = 0;
    h.off[2] = UINT64_MAX - 4;
    assert_int_equal(hand_compute(f, &h, k, prep, got, 0), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "output 0");
    /* An f32 at byte offset 2. */
    h.off[2] = 0;
    h.off[0] = 2;
    assert_int_equal(hand_compute(f, &h, k, prep, got, 0), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "input 0");
    assert_message_contains(f, "not aligned");
    h.off[0] = 0;
    /* No buffer. */
    ses_drv_buffer_t *kept = h.buf[1];
    h.buf[1] = NULL;
    assert_int_equal(hand_compute(f, &h, k, prep, got, 0), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "input 1 buffer is NULL");
    h.buf[1] = kept;
    /* The output one element into input 0's bytes; then exactly over them, which is allowed. */
    ses_drv_buffer_t *out = h.buf[2];
    h.buf[2] = h.buf[0];
    h.off[2] = 4;
    assert_int_equal(hand_compute(f, &h, k, prep, got, 0), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "overlaps input 0");
    h.off[2] = 0;
    assert_int_equal(hand_compute(f, &h, k, prep, got, 4), SES_DRV_OK);
    expect_f32((const float[]){2, 4, 6, 8}, got, 4, 0);
    h.buf[2] = out;
    k->destroy(f->device, prep);
    hand_close(f, &h);
}

/* A node its launches would refuse gets no state, so that the launch fails where it did before
 * and with the same message; the host's compile is not where a kernel reports it. */
static void create_gives_no_state_to_a_node_its_launches_would_refuse(void **state) {
    fixture_t *f = *state;
    const ses_drv_kernel_t *k = find_kernel_on(f->api, f->device, "Add", "f32,f32->f32");
    const targ_t args[3] = {tensor(F32, NULL, 1, 4), tensor(I32, NULL, 1, 4),
                            tensor(F32, NULL, 1, 4)};
    void *prep = (void *)&prep;
    hand_t h;

    assert_non_null(k);
    f->name = "mixed";
    hand_open(f, &h, "Add", 2, args);
    assert_int_equal(k->create(f->device, &h.node, &prep), SES_DRV_OK);
    assert_null(prep);
    assert_int_equal(hand_compute(f, &h, k, prep, NULL, 0), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "Add \"mixed\": inputs are f32, i32, output is f32");
    k->destroy(f->device, prep); /* accepts NULL */

    /* A negative dim, a rank past the limit, a third input: no state either. */
    h.desc[1].dtype = F32;
    h.arg[0].dims[0] = -4;
    prep = (void *)&prep;
    assert_int_equal(k->create(f->device, &h.node, &prep), SES_DRV_OK);
    assert_null(prep);
    h.arg[0].dims[0] = 4;
    h.node.n_inputs = 3;
    prep = (void *)&prep;
    assert_int_equal(k->create(f->device, &h.node, &prep), SES_DRV_OK);
    assert_null(prep);
    h.node.n_inputs = 2;
    assert_int_equal(k->create(f->device, NULL, &prep), SES_DRV_OK);
    assert_null(prep);
    assert_int_equal(k->create(f->device, &h.node, NULL), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "out_state is NULL");
    hand_close(f, &h);

    int64_t dims17[17];
    for (int d = 0; d < 17; d++)
        dims17[d] = 1;
    ses_drv_tensor_desc_t big[3];
    memset(big, 0, sizeof big);
    for (int i = 0; i < 3; i++) {
        big[i].struct_size = sizeof big[i];
        big[i].dtype = F32;
        big[i].rank = 17;
        big[i].dims = dims17;
    }
    h.node.inputs = big;
    h.node.outputs = &big[2];
    prep = (void *)&prep;
    assert_int_equal(k->create(f->device, &h.node, &prep), SES_DRV_OK);
    assert_null(prep);
}

/* The compute entry takes a state only from its own entry's create. */
static void a_state_made_for_another_entry_is_not_used(void **state) {
    fixture_t *f = *state;
    const ses_drv_kernel_t *add = find_kernel_on(f->api, f->device, "Add", "f32,f32->f32");
    const ses_drv_kernel_t *sub = find_kernel_on(f->api, f->device, "Sub", "f32,f32->f32");
    const float x[4] = {1, 2, 3, 4}, y[4] = {10, 20, 30, 40};
    const targ_t args[3] = {tensor(F32, x, 1, 4), tensor(F32, y, 1, 4), tensor(F32, NULL, 1, 4)};
    void *prep = NULL;
    float got[4];
    hand_t h;

    assert_non_null(add);
    assert_non_null(sub);
    hand_open(f, &h, "Sub", 2, args);
    assert_int_equal(add->create(f->device, &h.node, &prep), SES_DRV_OK);
    assert_non_null(prep);
    assert_int_equal(hand_compute(f, &h, sub, prep, got, 4), SES_DRV_OK);
    expect_f32((const float[]){-9, -18, -27, -36}, got, 4, 0);
    add->destroy(f->device, prep);
    hand_close(f, &h);
}

/* A prepared integer Div still looks at its divisor, on every launch. */
static void a_prepared_integer_division_still_refuses_a_zero_divisor(void **state) {
    fixture_t *f = *state;
    const ses_drv_kernel_t *k = find_kernel_on(f->api, f->device, "Div", "i32,i32->i32");
    const int32_t x[4] = {8, -9, 10, 11}, y[4] = {2, 3, 5, 1}, zero[1] = {0};
    const targ_t args[3] = {tensor(I32, x, 1, 4), tensor(I32, y, 1, 4), tensor(I32, NULL, 1, 4)};
    void *prep = NULL;
    int32_t got[4];
    hand_t h;

    assert_non_null(k);
    hand_open(f, &h, "Div", 2, args);
    assert_int_equal(k->create(f->device, &h.node, &prep), SES_DRV_OK);
    assert_int_equal(hand_compute(f, &h, k, prep, (float *)(void *)got, 4), SES_DRV_OK);
    expect_i32((const int32_t[]){4, -3, 2, 11}, got, 4);
    assert_int_equal(f->api->copy_h2d(f->device, NULL, zero, h.buf[1], 8, sizeof zero), SES_DRV_OK);
    assert_int_equal(hand_compute(f, &h, k, prep, NULL, 0), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "integer division by zero");
    assert_message_contains(f, "element 2");
    k->destroy(f->device, prep);
    hand_close(f, &h);
}

/* ---------------------------------------------------------------------------------------------
 * Copies: Identity Reshape Flatten Squeeze Unsqueeze
 * ------------------------------------------------------------------------------------------- */

static void shape_only_ops_copy_the_bytes_unchanged_at_every_dtype(void **state) {
    fixture_t *f = *state;
    static const char *const names[] = {"f32", "f64", "f16", "bf16", "i8",  "i16", "i32",
                                        "i64", "u8",  "u16", "u32",  "u64", "bool"};
    static const char *const ops[] = {"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze"};
    uint8_t src[48], dst[48];
    char sig[32];

    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (uint8_t)(i * 37 + 5);
    for (uint32_t dtype = 1; dtype <= 13; dtype++) {
        snprintf(sig, sizeof sig, "%s->%s", names[dtype - 1], names[dtype - 1]);
        size_t bytes = 6 * dtype_size(dtype);
        if (dtype == BOOL)
            for (size_t i = 0; i < 6; i++)
                src[i] &= 1;
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
            targ_t in = tensor(dtype, src, 2, 2, 3);
            targ_t out = o == 3 ? tensor(dtype, NULL, 1, 6) : tensor(dtype, NULL, 3, 3, 1, 2);
            memset(dst, 0, sizeof dst);
            RUN_OK(f, ops[o], sig, NULL, 1, &in, out, dst);
            assert_memory_equal(src, dst, bytes);
        }
    }
}

static void copies_handle_scalars_and_empty_tensors(void **state) {
    fixture_t *f = *state;
    const int64_t x[1] = {-42};
    int64_t got[1] = {0};

    targ_t scalar = tensor(I64, x, 0);
    RUN_OK(f, "Unsqueeze", "i64->i64", NULL, 1, &scalar, tensor(I64, NULL, 2, 1, 1), got);
    assert_int_equal(got[0], -42);
    targ_t one = tensor(I64, x, 3, 1, 1, 1);
    RUN_OK(f, "Squeeze", "i64->i64", NULL, 1, &one, tensor(I64, NULL, 0), got);
    assert_int_equal(got[0], -42);
    targ_t empty = tensor(I64, x, 2, 0, 3);
    RUN_OK(f, "Flatten", "i64->i64", NULL, 1, &empty, tensor(I64, NULL, 2, 1, 0), NULL);

    const test_attr_t to_f32[] = {A_INT("to", F32), A_END};
    float fgot[1];
    RUN_OK(f, "Cast", "i64->f32", to_f32, 1, &scalar, tensor(F32, NULL, 0), fgot);
    assert_true(fgot[0] == -42.0f);
    RUN_OK(f, "Cast", "i64->f32", to_f32, 1, &empty, tensor(F32, NULL, 2, 0, 3), NULL);
}

static void reshape_refuses_an_output_with_another_element_count(void **state) {
    fixture_t *f = *state;
    const float x[6] = {0};
    targ_t in = tensor(F32, x, 2, 2, 3);
    f->name = "r1";

    assert_int_equal(run(f, "Reshape", "f32->f32", NULL, 1, &in, tensor(F32, NULL, 1, 5), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "Reshape \"r1\"");
    assert_message_contains(f, "input has 6");
    assert_message_contains(f, "output has 5");
}

/* ---------------------------------------------------------------------------------------------
 * Add Sub Mul Div Pow
 * ------------------------------------------------------------------------------------------- */

static void arithmetic_on_equal_shapes_computes_elementwise_in_f32_and_f64(void **state) {
    fixture_t *f = *state;
    const float a[4] = {1.5f, -2.0f, 3.0f, 0.25f};
    const float b[4] = {0.5f, 4.0f, -3.0f, 2.0f};
    const double da[3] = {1e300, -1.0, 2.5};
    const double db[3] = {1e300, 3.0, -0.5};
    targ_t in[2] = {tensor(F32, a, 2, 2, 2), tensor(F32, b, 2, 2, 2)};
    targ_t din[2] = {tensor(F64, da, 1, 3), tensor(F64, db, 1, 3)};
    float got[4];
    double dgot[3];

    RUN_OK(f, "Add", "f32,f32->f32", NULL, 2, in, tensor(F32, NULL, 2, 2, 2), got);
    expect_f32((const float[]){2.0f, 2.0f, 0.0f, 2.25f}, got, 4, 0);
    RUN_OK(f, "Sub", "f32,f32->f32", NULL, 2, in, tensor(F32, NULL, 2, 2, 2), got);
    expect_f32((const float[]){1.0f, -6.0f, 6.0f, -1.75f}, got, 4, 0);
    RUN_OK(f, "Mul", "f32,f32->f32", NULL, 2, in, tensor(F32, NULL, 2, 2, 2), got);
    expect_f32((const float[]){0.75f, -8.0f, -9.0f, 0.5f}, got, 4, 0);
    RUN_OK(f, "Div", "f32,f32->f32", NULL, 2, in, tensor(F32, NULL, 2, 2, 2), got);
    expect_f32((const float[]){3.0f, -0.5f, -1.0f, 0.125f}, got, 4, 0);
    RUN_OK(f, "Pow", "f32,f32->f32", NULL, 2, in, tensor(F32, NULL, 2, 2, 2), got);
    expect_f32((const float[]){sqrtf(1.5f), 16.0f, 1.0f / 27.0f, 0.0625f}, got, 4, 1e-6);

    RUN_OK(f, "Add", "f64,f64->f64", NULL, 2, din, tensor(F64, NULL, 1, 3), dgot);
    expect_f64((const double[]){2e300, 2.0, 2.0}, dgot, 3, 0);
    RUN_OK(f, "Mul", "f64,f64->f64", NULL, 2, din, tensor(F64, NULL, 1, 3), dgot);
    expect_f64((const double[]){INFINITY, -3.0, -1.25}, dgot, 3, 0);
}

static void float_division_by_zero_gives_infinity_not_an_error(void **state) {
    fixture_t *f = *state;
    const float a[3] = {1.0f, -1.0f, 0.0f};
    const float b[1] = {0.0f};
    targ_t in[2] = {tensor(F32, a, 1, 3), tensor(F32, b, 0)};
    float got[3];

    RUN_OK(f, "Div", "f32,f32->f32", NULL, 2, in, tensor(F32, NULL, 1, 3), got);
    assert_true(isinf(got[0]) && got[0] > 0);
    assert_true(isinf(got[1]) && got[1] < 0);
    assert_true(isnan(got[2]));
}

/* [2,3] + [3]: the row is added to each row; [2,1] * [1,3]: an outer product. */
static void arithmetic_broadcasts_rows_columns_and_outer_products(void **state) {
    fixture_t *f = *state;
    const float m[6] = {1, 2, 3, 4, 5, 6};
    const float row[3] = {10, 20, 30};
    const float col[2] = {2, 3};
    float got[6];

    targ_t a[2] = {tensor(F32, m, 2, 2, 3), tensor(F32, row, 1, 3)};
    RUN_OK(f, "Add", "f32,f32->f32", NULL, 2, a, tensor(F32, NULL, 2, 2, 3), got);
    expect_f32((const float[]){11, 22, 33, 14, 25, 36}, got, 6, 0);

    targ_t b[2] = {tensor(F32, row, 1, 3), tensor(F32, m, 2, 2, 3)};
    RUN_OK(f, "Sub", "f32,f32->f32", NULL, 2, b, tensor(F32, NULL, 2, 2, 3), got);
    expect_f32((const float[]){9, 18, 27, 6, 15, 24}, got, 6, 0);

    targ_t c[2] = {tensor(F32, col, 2, 2, 1), tensor(F32, row, 2, 1, 3)};
    RUN_OK(f, "Mul", "f32,f32->f32", NULL, 2, c, tensor(F32, NULL, 2, 2, 3), got);
    expect_f32((const float[]){20, 40, 60, 30, 60, 90}, got, 6, 0);

    /* [2,1,3] / [2,1] -> [2,2,3]: both sides broadcast in different dims. */
    const float big[6] = {2, 4, 6, 8, 10, 12};
    float got12[12];
    targ_t d[2] = {tensor(F32, big, 3, 2, 1, 3), tensor(F32, col, 2, 2, 1)};
    RUN_OK(f, "Div", "f32,f32->f32", NULL, 2, d, tensor(F32, NULL, 3, 2, 2, 3), got12);
    expect_f32((const float[]){1, 2, 3, 2.0f / 3, 4.0f / 3, 2, 4, 5, 6, 8.0f / 3, 10.0f / 3, 4},
               got12, 12, 1e-6);
}

static void arithmetic_works_on_scalars_and_zero_size_tensors(void **state) {
    fixture_t *f = *state;
    const int64_t s[1] = {7};
    const int64_t t[1] = {-3};
    const int64_t v[3] = {1, 2, 3};
    int64_t got[3];

    targ_t scalars[2] = {tensor(I64, s, 0), tensor(I64, t, 0)};
    RUN_OK(f, "Mul", "i64,i64->i64", NULL, 2, scalars, tensor(I64, NULL, 0), got);
    assert_int_equal(got[0], -21);

    targ_t sv[2] = {tensor(I64, s, 0), tensor(I64, v, 1, 3)};
    RUN_OK(f, "Sub", "i64,i64->i64", NULL, 2, sv, tensor(I64, NULL, 1, 3), got);
    expect_i64((const int64_t[]){6, 5, 4}, got, 3);

    /* [0,3] + [3] -> [0,3]: nothing to compute, and nothing written. */
    targ_t empty[2] = {tensor(I64, v, 2, 0, 3), tensor(I64, v, 1, 3)};
    RUN_OK(f, "Add", "i64,i64->i64", NULL, 2, empty, tensor(I64, NULL, 2, 0, 3), NULL);
    /* [0] + scalar, [1] broadcast against [0]. */
    targ_t empty2[2] = {tensor(I64, v, 1, 1), tensor(I64, v, 1, 0)};
    RUN_OK(f, "Div", "i64,i64->i64", NULL, 2, empty2, tensor(I64, NULL, 1, 0), NULL);
}

static void integer_arithmetic_wraps_and_division_truncates_toward_zero(void **state) {
    fixture_t *f = *state;
    const int32_t a[6] = {INT32_MAX, -7, 7, -7, INT32_MIN, 9};
    const int32_t b[6] = {1, 2, -2, -2, -1, 3};
    int32_t got[6];
    targ_t in[2] = {tensor(I32, a, 1, 6), tensor(I32, b, 1, 6)};

    RUN_OK(f, "Add", "i32,i32->i32", NULL, 2, in, tensor(I32, NULL, 1, 6), got);
    assert_int_equal(got[0], INT32_MIN);
    RUN_OK(f, "Div", "i32,i32->i32", NULL, 2, in, tensor(I32, NULL, 1, 6), got);
    expect_i32((const int32_t[]){INT32_MAX, -3, -3, 3, INT32_MIN, 3}, got, 6);
    RUN_OK(f, "Mul", "i32,i32->i32", NULL, 2, in, tensor(I32, NULL, 1, 6), got);
    expect_i32((const int32_t[]){INT32_MAX, -14, -14, 14, INT32_MIN, 27}, got, 6);

    const int64_t c[2] = {INT64_MIN, -9};
    const int64_t d[2] = {1, 4};
    int64_t got64[2];
    targ_t in64[2] = {tensor(I64, c, 1, 2), tensor(I64, d, 1, 2)};
    RUN_OK(f, "Sub", "i64,i64->i64", NULL, 2, in64, tensor(I64, NULL, 1, 2), got64);
    expect_i64((const int64_t[]){INT64_MAX, -13}, got64, 2);
    RUN_OK(f, "Div", "i64,i64->i64", NULL, 2, in64, tensor(I64, NULL, 1, 2), got64);
    expect_i64((const int64_t[]){INT64_MIN, -2}, got64, 2);
}

static void integer_division_by_zero_is_refused_naming_the_node(void **state) {
    fixture_t *f = *state;
    const int64_t a[3] = {1, 2, 3};
    const int64_t b[3] = {1, 0, 1};
    targ_t in[2] = {tensor(I64, a, 1, 3), tensor(I64, b, 1, 3)};
    f->name = "ratio";

    assert_int_equal(run(f, "Div", "i64,i64->i64", NULL, 2, in, tensor(I64, NULL, 1, 3), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "Div \"ratio\"");
    assert_message_contains(f, "division by zero");
    assert_message_contains(f, "element 1");

    const int32_t x[2] = {4, 5};
    const int32_t zero[1] = {0};
    targ_t in32[2] = {tensor(I32, x, 1, 2), tensor(I32, zero, 0)};
    assert_int_equal(run(f, "Div", "i32,i32->i32", NULL, 2, in32, tensor(I32, NULL, 1, 2), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "division by zero");
}

static void arithmetic_refuses_shapes_that_do_not_broadcast_naming_all_of_them(void **state) {
    fixture_t *f = *state;
    const float a[6] = {0};
    const float b[4] = {0};
    targ_t in[2] = {tensor(F32, a, 2, 2, 3), tensor(F32, b, 1, 4)};
    f->name = "bad_add";

    assert_int_equal(run(f, "Add", "f32,f32->f32", NULL, 2, in, tensor(F32, NULL, 2, 2, 4), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "Add \"bad_add\"");
    assert_message_contains(f, "input 0 is [2,3]");
    assert_message_contains(f, "input 1 is [4]");
    assert_message_contains(f, "output is [2,4]");

    /* Inputs that broadcast, but to another shape than the host's output. */
    targ_t ok[2] = {tensor(F32, a, 2, 2, 3), tensor(F32, a, 1, 3)};
    assert_int_equal(run(f, "Add", "f32,f32->f32", NULL, 2, ok, tensor(F32, NULL, 2, 3, 3), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "output is [3,3]");
    assert_int_equal(
        run(f, "Add", "f32,f32->f32", NULL, 2, ok, tensor(F32, NULL, 3, 1, 2, 3), NULL),
        SES_DRV_INVALID_ARGUMENT);
}

/* ---------------------------------------------------------------------------------------------
 * Equal Greater Less Where
 * ------------------------------------------------------------------------------------------- */

static void comparisons_give_bools_with_broadcasting_and_nan_unequal(void **state) {
    fixture_t *f = *state;
    const float a[4] = {1.0f, 2.0f, NAN, -0.0f};
    const float b[1] = {2.0f};
    const float z[4] = {0.0f, 3.0f, NAN, 0.0f};
    uint8_t got[6];

    targ_t ab[2] = {tensor(F32, a, 1, 4), tensor(F32, b, 0)};
    RUN_OK(f, "Equal", "f32,f32->bool", NULL, 2, ab, tensor(BOOL, NULL, 1, 4), got);
    expect_u8((const uint8_t[]){0, 1, 0, 0}, got, 4);
    RUN_OK(f, "Greater", "f32,f32->bool", NULL, 2, ab, tensor(BOOL, NULL, 1, 4), got);
    expect_u8((const uint8_t[]){0, 0, 0, 0}, got, 4);
    RUN_OK(f, "Less", "f32,f32->bool", NULL, 2, ab, tensor(BOOL, NULL, 1, 4), got);
    expect_u8((const uint8_t[]){1, 0, 0, 1}, got, 4);
    targ_t az[2] = {tensor(F32, a, 1, 4), tensor(F32, z, 1, 4)};
    RUN_OK(f, "Equal", "f32,f32->bool", NULL, 2, az, tensor(BOOL, NULL, 1, 4), got);
    expect_u8((const uint8_t[]){0, 0, 0, 1}, got, 4); /* -0 == 0, NaN != NaN */

    const int64_t i[3] = {-5, 0, 5};
    const int64_t j[2] = {0, 5};
    targ_t ij[2] = {tensor(I64, i, 2, 3, 1), tensor(I64, j, 2, 1, 2)};
    RUN_OK(f, "Greater", "i64,i64->bool", NULL, 2, ij, tensor(BOOL, NULL, 2, 3, 2), got);
    expect_u8((const uint8_t[]){0, 0, 0, 0, 1, 0}, got, 6);

    const uint8_t u[3] = {0, 200, 255};
    const uint8_t v[3] = {1, 100, 255};
    targ_t uv[2] = {tensor(U8, u, 1, 3), tensor(U8, v, 1, 3)};
    RUN_OK(f, "Less", "u8,u8->bool", NULL, 2, uv, tensor(BOOL, NULL, 1, 3), got);
    expect_u8((const uint8_t[]){1, 0, 0}, got, 3);
    RUN_OK(f, "Equal", "u8,u8->bool", NULL, 2, uv, tensor(BOOL, NULL, 1, 3), got);
    expect_u8((const uint8_t[]){0, 0, 1}, got, 3);

    const uint8_t p[4] = {0, 1, 0, 1};
    const uint8_t q[4] = {0, 0, 1, 1};
    targ_t pq[2] = {tensor(BOOL, p, 1, 4), tensor(BOOL, q, 1, 4)};
    RUN_OK(f, "Equal", "bool,bool->bool", NULL, 2, pq, tensor(BOOL, NULL, 1, 4), got);
    expect_u8((const uint8_t[]){1, 0, 0, 1}, got, 4);

    const int32_t r[2] = {3, 4};
    const double d[2] = {3.0, 4.5};
    targ_t rr[2] = {tensor(I32, r, 1, 2), tensor(I32, r + 1, 0)};
    RUN_OK(f, "Equal", "i32,i32->bool", NULL, 2, rr, tensor(BOOL, NULL, 1, 2), got);
    expect_u8((const uint8_t[]){0, 1}, got, 2);
    targ_t dd[2] = {tensor(F64, d, 1, 2), tensor(F64, d, 0)};
    RUN_OK(f, "Greater", "f64,f64->bool", NULL, 2, dd, tensor(BOOL, NULL, 1, 2), got);
    expect_u8((const uint8_t[]){0, 1}, got, 2);
}

static void where_selects_with_three_way_broadcasting_at_each_width(void **state) {
    fixture_t *f = *state;
    const uint8_t cond[2] = {1, 0};
    const float x[3] = {1, 2, 3};
    const float y[1] = {-1};
    float got[6];

    /* cond [2,1], x [1,3], y [] -> [2,3] */
    targ_t in[3] = {tensor(BOOL, cond, 2, 2, 1), tensor(F32, x, 2, 1, 3), tensor(F32, y, 0)};
    RUN_OK(f, "Where", "bool,f32,f32->f32", NULL, 3, in, tensor(F32, NULL, 2, 2, 3), got);
    expect_f32((const float[]){1, 2, 3, -1, -1, -1}, got, 6, 0);

    const uint8_t c4[4] = {0, 1, 1, 0};
    const int64_t a64[4] = {1, 2, 3, 4};
    const int64_t b64[4] = {-1, -2, -3, -4};
    int64_t got64[4];
    targ_t in64[3] = {tensor(BOOL, c4, 1, 4), tensor(I64, a64, 1, 4), tensor(I64, b64, 1, 4)};
    RUN_OK(f, "Where", "bool,i64,i64->i64", NULL, 3, in64, tensor(I64, NULL, 1, 4), got64);
    expect_i64((const int64_t[]){-1, 2, 3, -4}, got64, 4);

    const uint8_t a8[2] = {7, 8};
    const uint8_t b8[2] = {0, 1};
    uint8_t got8[4];
    targ_t in8[3] = {tensor(BOOL, c4, 2, 2, 2), tensor(U8, a8, 1, 2), tensor(U8, b8, 2, 2, 1)};
    RUN_OK(f, "Where", "bool,u8,u8->u8", NULL, 3, in8, tensor(U8, NULL, 2, 2, 2), got8);
    expect_u8((const uint8_t[]){0, 8, 7, 1}, got8, 4);

    /* A scalar condition over an empty output is a no-op. */
    targ_t empty[3] = {tensor(BOOL, c4, 0), tensor(U8, a8, 1, 0), tensor(U8, b8, 0)};
    RUN_OK(f, "Where", "bool,u8,u8->u8", NULL, 3, empty, tensor(U8, NULL, 1, 0), NULL);

    targ_t bad[3] = {tensor(BOOL, c4, 1, 4), tensor(U8, a8, 1, 2), tensor(U8, b8, 0)};
    assert_int_equal(run(f, "Where", "bool,u8,u8->u8", NULL, 3, bad, tensor(U8, NULL, 1, 4), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "input 2 is []");
}

/* ---------------------------------------------------------------------------------------------
 * Unary ops
 * ------------------------------------------------------------------------------------------- */

static void unary_float_ops_match_libm_in_f32_and_f64(void **state) {
    fixture_t *f = *state;
    const float x[5] = {-2.0f, -0.5f, 0.0f, 0.5f, 3.0f};
    const double dx[5] = {-2.0, -0.5, 0.0, 0.5, 3.0};
    const float pos[3] = {0.25f, 1.0f, 4.0f};
    float got[5], want[5];
    double dgot[5], dwant[5];

    targ_t in = tensor(F32, x, 1, 5), din = tensor(F64, dx, 1, 5), pin = tensor(F32, pos, 1, 3);
#define CHECK_UNARY(op, fexpr, dexpr)                                            \
    do {                                                                         \
        RUN_OK(f, op, "f32->f32", NULL, 1, &in, tensor(F32, NULL, 1, 5), got);   \
        for (int i = 0; i < 5; i++) {                                            \
            float v = x[i];                                                      \
            want[i] = (fexpr);                                                   \
        }                                                                        \
        expect_f32(want, got, 5, 1e-6);                                          \
        RUN_OK(f, op, "f64->f64", NULL, 1, &din, tensor(F64, NULL, 1, 5), dgot); \
        for (int i = 0; i < 5; i++) {                                            \
            double v = dx[i];                                                    \
            dwant[i] = (dexpr);                                                  \
        }                                                                        \
        expect_f64(dwant, dgot, 5, 1e-14);                                       \
    } while (0)
    CHECK_UNARY("Neg", -v, -v);
    CHECK_UNARY("Abs", fabsf(v), fabs(v));
    CHECK_UNARY("Exp", expf(v), exp(v));
    CHECK_UNARY("Relu", v < 0 ? 0.0f : v, v < 0 ? 0.0 : v);
    CHECK_UNARY("Sigmoid", 1.0f / (1.0f + expf(-v)), 1.0 / (1.0 + exp(-v)));
    CHECK_UNARY("Tanh", tanhf(v), tanh(v));
    CHECK_UNARY("Softplus", logf(1.0f + expf(v)), log(1.0 + exp(v)));
    CHECK_UNARY("Erf", erff(v), erf(v));
    CHECK_UNARY("LeakyRelu", v < 0 ? 0.01f * v : v, v < 0 ? 0.01 * v : v);
    CHECK_UNARY("Cos", cosf(v), cos(v));
    CHECK_UNARY("Sin", sinf(v), sin(v));
    CHECK_UNARY("Tan", tanf(v), tan(v));
    CHECK_UNARY("Atan", atanf(v), atan(v));
    CHECK_UNARY("Cosh", coshf(v), cosh(v));
    CHECK_UNARY("Sinh", sinhf(v), sinh(v));
    CHECK_UNARY("Asinh", asinhf(v), asinh(v));
    /* Outside their domains (|x| > 1, x < 1) these give NaN, which the checks match. */
    CHECK_UNARY("Acos", acosf(v), acos(v));
    CHECK_UNARY("Asin", asinf(v), asin(v));
    CHECK_UNARY("Atanh", atanhf(v), atanh(v));
    CHECK_UNARY("Acosh", acoshf(v), acosh(v));
#undef CHECK_UNARY
    /* Hand values for the ones with a domain. */
    RUN_OK(f, "Log", "f32->f32", NULL, 1, &pin, tensor(F32, NULL, 1, 3), got);
    expect_f32((const float[]){-1.3862944f, 0.0f, 1.3862944f}, got, 3, 1e-6);
    RUN_OK(f, "Sqrt", "f32->f32", NULL, 1, &pin, tensor(F32, NULL, 1, 3), got);
    expect_f32((const float[]){0.5f, 1.0f, 2.0f}, got, 3, 0);
    RUN_OK(f, "Reciprocal", "f32->f32", NULL, 1, &pin, tensor(F32, NULL, 1, 3), got);
    expect_f32((const float[]){4.0f, 1.0f, 0.25f}, got, 3, 0);
    RUN_OK(f, "Sqrt", "f64->f64", NULL, 1, &din, tensor(F64, NULL, 1, 5), dgot);
    assert_true(isnan(dgot[0]));
    expect_f64((const double[]){0.0, sqrt(0.5), sqrt(3.0)}, dgot + 2, 3, 0);
    RUN_OK(f, "Log", "f64->f64", NULL, 1, &din, tensor(F64, NULL, 1, 5), dgot);
    assert_true(isinf(dgot[2]) && dgot[2] < 0);
    RUN_OK(f, "Reciprocal", "f64->f64", NULL, 1, &din, tensor(F64, NULL, 1, 5), dgot);
    expect_f64((const double[]){-0.5, -2.0}, dgot, 2, 0);
}

static void sigmoid_and_softplus_stay_finite_for_large_inputs(void **state) {
    fixture_t *f = *state;
    const float x[4] = {-1000.0f, -100.0f, 100.0f, 1000.0f};
    float got[4];
    targ_t in = tensor(F32, x, 1, 4);

    RUN_OK(f, "Sigmoid", "f32->f32", NULL, 1, &in, tensor(F32, NULL, 1, 4), got);
    expect_f32((const float[]){0.0f, expf(-100.0f), 1.0f, 1.0f}, got, 4, 1e-6);
    RUN_OK(f, "Softplus", "f32->f32", NULL, 1, &in, tensor(F32, NULL, 1, 4), got);
    expect_f32((const float[]){0.0f, expf(-100.0f), 100.0f, 1000.0f}, got, 4, 1e-6);
}

static void leaky_relu_reads_alpha_and_integer_unary_ops_wrap(void **state) {
    fixture_t *f = *state;
    const float x[3] = {-4.0f, 0.0f, 2.0f};
    const test_attr_t alpha[] = {A_FLOAT("alpha", 0.5), A_END};
    float got[3];
    targ_t in = tensor(F32, x, 1, 3);

    RUN_OK(f, "LeakyRelu", "f32->f32", alpha, 1, &in, tensor(F32, NULL, 1, 3), got);
    expect_f32((const float[]){-2.0f, 0.0f, 2.0f}, got, 3, 0);

    const int32_t i[4] = {INT32_MIN, -3, 0, 5};
    int32_t igot[4];
    targ_t iin = tensor(I32, i, 1, 4);
    RUN_OK(f, "Neg", "i32->i32", NULL, 1, &iin, tensor(I32, NULL, 1, 4), igot);
    expect_i32((const int32_t[]){INT32_MIN, 3, 0, -5}, igot, 4);
    RUN_OK(f, "Abs", "i32->i32", NULL, 1, &iin, tensor(I32, NULL, 1, 4), igot);
    expect_i32((const int32_t[]){INT32_MIN, 3, 0, 5}, igot, 4);
    RUN_OK(f, "Relu", "i32->i32", NULL, 1, &iin, tensor(I32, NULL, 1, 4), igot);
    expect_i32((const int32_t[]){0, 0, 0, 5}, igot, 4);

    const int64_t l[2] = {-7, 8};
    int64_t lgot[2];
    targ_t lin = tensor(I64, l, 2, 1, 2);
    RUN_OK(f, "Abs", "i64->i64", NULL, 1, &lin, tensor(I64, NULL, 2, 1, 2), lgot);
    expect_i64((const int64_t[]){7, 8}, lgot, 2);
    RUN_OK(f, "Relu", "i64->i64", NULL, 1, &lin, tensor(I64, NULL, 2, 1, 2), lgot);
    expect_i64((const int64_t[]){0, 8}, lgot, 2);
}

static void sign_round_is_nan_and_is_inf_handle_zeros_halves_and_infinities(void **state) {
    fixture_t *f = *state;
    const float x[7] = {-2.5f, -0.5f, 0.5f, 1.5f, 2.5f, -INFINITY, NAN};
    const test_attr_t positive_only[] = {A_INT("detect_negative", 0), A_INT("detect_positive", 1),
                                         A_END};
    float got[7];
    uint8_t bits[7];
    targ_t in = tensor(F32, x, 1, 7);

    /* Halves round to even, as ONNX says. */
    RUN_OK(f, "Round", "f32->f32", NULL, 1, &in, tensor(F32, NULL, 1, 7), got);
    expect_f32((const float[]){-2.0f, -0.0f, 0.0f, 2.0f, 2.0f, -INFINITY, NAN}, got, 7, 0);
    RUN_OK(f, "Floor", "f32->f32", NULL, 1, &in, tensor(F32, NULL, 1, 7), got);
    expect_f32((const float[]){-3.0f, -1.0f, 0.0f, 1.0f, 2.0f, -INFINITY, NAN}, got, 7, 0);
    RUN_OK(f, "Ceil", "f32->f32", NULL, 1, &in, tensor(F32, NULL, 1, 7), got);
    expect_f32((const float[]){-2.0f, -0.0f, 1.0f, 2.0f, 3.0f, -INFINITY, NAN}, got, 7, 0);
    RUN_OK(f, "Sign", "f32->f32", NULL, 1, &in, tensor(F32, NULL, 1, 7), got);
    expect_f32((const float[]){-1, -1, 1, 1, 1, -1, NAN}, got, 7, 0);
    RUN_OK(f, "IsNaN", "f32->bool", NULL, 1, &in, tensor(BOOL, NULL, 1, 7), bits);
    expect_u8((const uint8_t[]){0, 0, 0, 0, 0, 0, 1}, bits, 7);
    RUN_OK(f, "IsInf", "f32->bool", NULL, 1, &in, tensor(BOOL, NULL, 1, 7), bits);
    expect_u8((const uint8_t[]){0, 0, 0, 0, 0, 1, 0}, bits, 7);

    const double dx[3] = {INFINITY, -INFINITY, 1e308};
    targ_t din = tensor(F64, dx, 1, 3);
    RUN_OK(f, "IsInf", "f64->bool", positive_only, 1, &din, tensor(BOOL, NULL, 1, 3), bits);
    expect_u8((const uint8_t[]){1, 0, 0}, bits, 3);

    const int8_t i[4] = {INT8_MIN, -3, 0, 5};
    int8_t igot[4];
    targ_t iin = tensor(I8, i, 1, 4);
    RUN_OK(f, "Sign", "i8->i8", NULL, 1, &iin, tensor(I8, NULL, 1, 4), igot);
    assert_memory_equal(igot, ((const int8_t[]){-1, -1, 0, 1}), 4);
}

static void logic_ops_broadcast_and_read_any_nonzero_byte_as_true(void **state) {
    fixture_t *f = *state;
    const uint8_t a[4] = {0, 1, 2, 0}; /* [2,2]; 2 is a true bool byte */
    const uint8_t b[2] = {1, 0};       /* [2] */
    uint8_t got[4];
    targ_t in[2] = {tensor(BOOL, a, 2, 2, 2), tensor(BOOL, b, 1, 2)};

    RUN_OK(f, "And", "bool,bool->bool", NULL, 2, in, tensor(BOOL, NULL, 2, 2, 2), got);
    expect_u8((const uint8_t[]){0, 0, 1, 0}, got, 4);
    RUN_OK(f, "Or", "bool,bool->bool", NULL, 2, in, tensor(BOOL, NULL, 2, 2, 2), got);
    expect_u8((const uint8_t[]){1, 1, 1, 0}, got, 4);
    RUN_OK(f, "Xor", "bool,bool->bool", NULL, 2, in, tensor(BOOL, NULL, 2, 2, 2), got);
    expect_u8((const uint8_t[]){1, 1, 0, 0}, got, 4);
    RUN_OK(f, "Not", "bool->bool", NULL, 1, in, tensor(BOOL, NULL, 2, 2, 2), got);
    expect_u8((const uint8_t[]){1, 0, 0, 1}, got, 4);
}

static void mod_takes_the_divisors_sign_or_with_fmod_the_dividends(void **state) {
    fixture_t *f = *state;
    const int32_t a[5] = {7, -7, 7, -7, INT32_MIN};
    const int32_t b[5] = {3, 3, -3, -3, -1};
    const test_attr_t floor_mod[] = {A_INT("fmod", 0), A_END};
    const test_attr_t trunc_mod[] = {A_INT("fmod", 1), A_END};
    int32_t got[5];
    targ_t in[2] = {tensor(I32, a, 1, 5), tensor(I32, b, 1, 5)};

    RUN_OK(f, "Mod", "i32,i32->i32", floor_mod, 2, in, tensor(I32, NULL, 1, 5), got);
    expect_i32((const int32_t[]){1, 2, -2, -1, 0}, got, 5);
    RUN_OK(f, "Mod", "i32,i32->i32", trunc_mod, 2, in, tensor(I32, NULL, 1, 5), got);
    expect_i32((const int32_t[]){1, -1, 1, -1, 0}, got, 5);

    const float x[3] = {5.5f, -5.5f, 5.5f};
    const float y[1] = {2.0f};
    float fgot[3];
    targ_t fin[2] = {tensor(F32, x, 1, 3), tensor(F32, y, 0)};
    RUN_OK(f, "Mod", "f32,f32->f32", trunc_mod, 2, fin, tensor(F32, NULL, 1, 3), fgot);
    expect_f32((const float[]){1.5f, -1.5f, 1.5f}, fgot, 3, 0);

    const uint64_t u[2] = {UINT64_MAX, 9};
    const uint64_t zero[2] = {4, 0};
    targ_t uin[2] = {tensor(U64, u, 1, 2), tensor(U64, zero, 1, 2)};
    f->name = "rem";
    assert_int_equal(
        run(f, "Mod", "u64,u64->u64", floor_mod, 2, uin, tensor(U64, NULL, 1, 2), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "Mod \"rem\"");
    assert_message_contains(f, "division by zero");
    assert_message_contains(f, "element 1");
}

static void bit_shift_moves_bits_either_way_and_gives_zero_past_the_width(void **state) {
    fixture_t *f = *state;
    const uint8_t x[4] = {1, 0x80, 0xff, 3};
    const uint8_t y[4] = {1, 1, 8, 0};
    const test_attr_t left[] = {A_INT("direction", 0), A_END};
    const test_attr_t right[] = {A_INT("direction", 1), A_END};
    uint8_t got[4];
    targ_t in[2] = {tensor(U8, x, 1, 4), tensor(U8, y, 1, 4)};

    RUN_OK(f, "BitShift", "u8,u8->u8", left, 2, in, tensor(U8, NULL, 1, 4), got);
    expect_u8((const uint8_t[]){2, 0, 0, 3}, got, 4);
    RUN_OK(f, "BitShift", "u8,u8->u8", right, 2, in, tensor(U8, NULL, 1, 4), got);
    expect_u8((const uint8_t[]){0, 0x40, 0, 3}, got, 4);

    const uint64_t big[2] = {1, UINT64_MAX};
    const uint64_t by[1] = {63};
    uint64_t bgot[2];
    targ_t bin[2] = {tensor(U64, big, 1, 2), tensor(U64, by, 0)};
    RUN_OK(f, "BitShift", "u64,u64->u64", left, 2, bin, tensor(U64, NULL, 1, 2), bgot);
    assert_true(bgot[0] == UINT64_C(1) << 63 && bgot[1] == UINT64_C(1) << 63);
}

static void min_and_max_fold_any_number_of_inputs_with_broadcasting(void **state) {
    fixture_t *f = *state;
    const float a[4] = {1, 5, -2, 8}; /* [2,2] */
    const float b[2] = {3, NAN};      /* [2] */
    const float c[1] = {0};           /* [] */
    float got[4];
    targ_t in[3] = {tensor(F32, a, 2, 2, 2), tensor(F32, b, 1, 2), tensor(F32, c, 0)};

    /* NaN wins, as in numpy's minimum and maximum. */
    RUN_OK(f, "Min", "f32...->f32", NULL, 3, in, tensor(F32, NULL, 2, 2, 2), got);
    expect_f32((const float[]){0, NAN, -2, NAN}, got, 4, 0);
    RUN_OK(f, "Max", "f32...->f32", NULL, 3, in, tensor(F32, NULL, 2, 2, 2), got);
    expect_f32((const float[]){3, NAN, 3, NAN}, got, 4, 0);
    /* One input is a copy. */
    RUN_OK(f, "Max", "f32...->f32", NULL, 1, in, tensor(F32, NULL, 2, 2, 2), got);
    expect_f32(a, got, 4, 0);

    /* Five inputs: more than the three a kernel call keeps views of. */
    const int8_t v[5][2] = {{1, -9}, {4, 2}, {INT8_MIN, 3}, {0, 0}, {7, INT8_MAX}};
    int8_t igot[2];
    targ_t many[5];
    for (int i = 0; i < 5; i++)
        many[i] = tensor(I8, v[i], 1, 2);
    RUN_OK(f, "Max", "i8...->i8", NULL, 5, many, tensor(I8, NULL, 1, 2), igot);
    assert_memory_equal(igot, ((const int8_t[]){7, INT8_MAX}), 2);
    RUN_OK(f, "Min", "i8...->i8", NULL, 5, many, tensor(I8, NULL, 1, 2), igot);
    assert_memory_equal(igot, ((const int8_t[]){INT8_MIN, -9}), 2);

    f->name = "lo";
    targ_t bad[2] = {tensor(F32, a, 2, 2, 2), tensor(F32, a, 1, 3)};
    assert_int_equal(run(f, "Min", "f32...->f32", NULL, 2, bad, tensor(F32, NULL, 2, 2, 2), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "Min \"lo\"");
    assert_message_contains(f, "do not broadcast");
}

static void unary_ops_handle_scalars_and_empty_tensors_and_refuse_other_shapes(void **state) {
    fixture_t *f = *state;
    const double x[1] = {0.0};
    double got[1];
    targ_t scalar = tensor(F64, x, 0);

    RUN_OK(f, "Exp", "f64->f64", NULL, 1, &scalar, tensor(F64, NULL, 0), got);
    assert_true(got[0] == 1.0);
    targ_t empty = tensor(F64, x, 3, 2, 0, 4);
    RUN_OK(f, "Tanh", "f64->f64", NULL, 1, &empty, tensor(F64, NULL, 3, 2, 0, 4), NULL);

    f->name = "act";
    targ_t two = tensor(F64, x, 1, 1);
    assert_int_equal(run(f, "Exp", "f64->f64", NULL, 1, &two, tensor(F64, NULL, 2, 1, 1), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "Exp \"act\"");
    assert_message_contains(f, "input 0 is [1], output is [1,1]");
}

/* ---------------------------------------------------------------------------------------------
 * Cast
 * ------------------------------------------------------------------------------------------- */

static void cast_truncates_toward_zero_and_maps_bools_to_0_and_1(void **state) {
    fixture_t *f = *state;
    const float x[6] = {2.7f, -2.7f, 0.0f, -0.0f, 255.9f, NAN};
    const test_attr_t to_i64[] = {A_INT("to", I64), A_END};
    const test_attr_t to_bool[] = {A_INT("to", BOOL), A_END};
    const test_attr_t to_u8[] = {A_INT("to", U8), A_END};
    targ_t in = tensor(F32, x, 1, 6);
    int64_t got64[6];
    uint8_t got8[6];

    RUN_OK(f, "Cast", "f32->i64", to_i64, 1, &in, tensor(I64, NULL, 1, 6), got64);
    expect_i64((const int64_t[]){2, -2, 0, 0, 255, 0}, got64, 6);
    RUN_OK(f, "Cast", "f32->bool", to_bool, 1, &in, tensor(BOOL, NULL, 1, 6), got8);
    expect_u8((const uint8_t[]){1, 1, 0, 0, 1, 1}, got8, 6);
    RUN_OK(f, "Cast", "f32->u8", to_u8, 1, &in, tensor(U8, NULL, 1, 6), got8);
    expect_u8((const uint8_t[]){2, 0, 0, 0, 255, 0}, got8, 6);

    const uint8_t b[3] = {0, 1, 1};
    const test_attr_t to_f64[] = {A_INT("to", F64), A_END};
    double gotd[3];
    targ_t bin = tensor(BOOL, b, 1, 3);
    RUN_OK(f, "Cast", "bool->f64", to_f64, 1, &bin, tensor(F64, NULL, 1, 3), gotd);
    expect_f64((const double[]){0.0, 1.0, 1.0}, gotd, 3, 0);

    const int64_t big[3] = {(int64_t)1 << 32 | 5, -1, 300};
    const test_attr_t to_i32[] = {A_INT("to", I32), A_END};
    int32_t got32[3];
    targ_t lin = tensor(I64, big, 1, 3);
    RUN_OK(f, "Cast", "i64->i32", to_i32, 1, &lin, tensor(I32, NULL, 1, 3), got32);
    expect_i32((const int32_t[]){5, -1, 300}, got32, 3);
    RUN_OK(f, "Cast", "i64->u8", to_u8, 1, &lin, tensor(U8, NULL, 1, 3), got8);
    expect_u8((const uint8_t[]){5, 255, 44}, got8, 3);

    const double huge[3] = {1e30, -1e30, -2147483648.9};
    targ_t hin = tensor(F64, huge, 1, 3);
    RUN_OK(f, "Cast", "f64->i32", to_i32, 1, &hin, tensor(I32, NULL, 1, 3), got32);
    expect_i32((const int32_t[]){INT32_MAX, INT32_MIN, INT32_MIN}, got32, 3);

    const int32_t small[2] = {16777217, -3};
    const test_attr_t to_f32[] = {A_INT("to", F32), A_END};
    float gotf[2];
    targ_t sin_ = tensor(I32, small, 1, 2);
    RUN_OK(f, "Cast", "i32->f32", to_f32, 1, &sin_, tensor(F32, NULL, 1, 2), gotf);
    expect_f32((const float[]){16777216.0f, -3.0f}, gotf, 2, 0);
}

static void cast_refuses_a_to_attribute_that_disagrees_with_the_output(void **state) {
    fixture_t *f = *state;
    const float x[1] = {1.0f};
    const test_attr_t to_f64[] = {A_INT("to", F64), A_END};
    targ_t in = tensor(F32, x, 0);
    f->name = "c1";

    assert_int_equal(run(f, "Cast", "f32->i32", to_f64, 1, &in, tensor(I32, NULL, 0), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "Cast \"c1\"");
    assert_message_contains(f, "f64");
    assert_message_contains(f, "i32");
}

/* ---------------------------------------------------------------------------------------------
 * MatMul Gemm
 * ------------------------------------------------------------------------------------------- */

/* out[b] = a[b mod] @ b[b mod] with numpy broadcasting, by hand, in double. */
static void naive_batched_matmul(const float *a, const int64_t *ad, int ar, const float *b,
                                 const int64_t *bd, int br, float *out, int64_t batches,
                                 const int64_t *bdims, int nb) {
    int64_t m = ad[ar - 2], k = ad[ar - 1], n = bd[br - 1];
    for (int64_t i = 0; i < batches; i++) {
        int64_t rest = i, aoff = 0, boff = 0, astep = 1, bstep = 1;
        for (int d = nb - 1; d >= 0; d--) {
            int64_t idx = rest % bdims[d];
            rest /= bdims[d];
            int ai = ar - 2 - (nb - d), bi = br - 2 - (nb - d);
            int64_t adim = ai >= 0 ? ad[ai] : 1, bdim = bi >= 0 ? bd[bi] : 1;
            aoff += (adim == 1 ? 0 : idx) * astep;
            boff += (bdim == 1 ? 0 : idx) * bstep;
            astep *= adim;
            bstep *= bdim;
        }
        for (int64_t r = 0; r < m; r++)
            for (int64_t c = 0; c < n; c++) {
                double s = 0;
                for (int64_t t = 0; t < k; t++)
                    s += (double)a[aoff * m * k + r * k + t] * b[boff * k * n + t * n + c];
                out[i * m * n + r * n + c] = (float)s;
            }
    }
}

static void matmul_multiplies_matrices_in_f32_and_f64(void **state) {
    fixture_t *f = *state;
    const float a[6] = {1, 2, 3, 4, 5, 6};
    const float b[6] = {7, 8, 9, 10, 11, 12};
    float got[4];
    targ_t in[2] = {tensor(F32, a, 2, 2, 3), tensor(F32, b, 2, 3, 2)};

    RUN_OK(f, "MatMul", "f32,f32->f32", NULL, 2, in, tensor(F32, NULL, 2, 2, 2), got);
    expect_f32((const float[]){58, 64, 139, 154}, got, 4, 0);

    const double da[4] = {1, 2, 3, 4};
    const double db[4] = {0.5, -1, 2, 0};
    double dgot[4];
    targ_t din[2] = {tensor(F64, da, 2, 2, 2), tensor(F64, db, 2, 2, 2)};
    RUN_OK(f, "MatMul", "f64,f64->f64", NULL, 2, din, tensor(F64, NULL, 2, 2, 2), dgot);
    expect_f64((const double[]){4.5, -1, 9.5, -3}, dgot, 4, 0);
}

static void matmul_promotes_one_dimensional_operands_and_drops_the_added_dim(void **state) {
    fixture_t *f = *state;
    const float v[3] = {1, 2, 3};
    const float m[6] = {1, 2, 3, 4, 5, 6}; /* [3,2] or [2,3] */
    float got[2];

    targ_t vm[2] = {tensor(F32, v, 1, 3), tensor(F32, m, 2, 3, 2)};
    RUN_OK(f, "MatMul", "f32,f32->f32", NULL, 2, vm, tensor(F32, NULL, 1, 2), got);
    expect_f32((const float[]){22, 28}, got, 2, 0);
    targ_t mv[2] = {tensor(F32, m, 2, 2, 3), tensor(F32, v, 1, 3)};
    RUN_OK(f, "MatMul", "f32,f32->f32", NULL, 2, mv, tensor(F32, NULL, 1, 2), got);
    expect_f32((const float[]){14, 32}, got, 2, 0);
    targ_t vv[2] = {tensor(F32, v, 1, 3), tensor(F32, v, 1, 3)};
    RUN_OK(f, "MatMul", "f32,f32->f32", NULL, 2, vv, tensor(F32, NULL, 0), got);
    assert_true(got[0] == 14.0f);
    /* A batch of matrices times a vector: [2,2,3] x [3] -> [2,2]. */
    const float bm[12] = {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1};
    float got4[4];
    targ_t bv[2] = {tensor(F32, bm, 3, 2, 2, 3), tensor(F32, v, 1, 3)};
    RUN_OK(f, "MatMul", "f32,f32->f32", NULL, 2, bv, tensor(F32, NULL, 2, 2, 2), got4);
    expect_f32((const float[]){1, 2, 3, 6}, got4, 4, 0);
}

static void matmul_broadcasts_batch_dims_against_a_naive_loop(void **state) {
    fixture_t *f = *state;
    /* a [2,1,3,4], b [3,4,2] -> [2,3,3,2]; then a [3,4] against b [2,4,5] (a broadcast);
     * then a [2,3,3,4] against b [4,2] (one stacked GEMM). */
    static float a[2 * 3 * 3 * 4], b[3 * 4 * 5 * 2], got[2 * 3 * 3 * 5], want[2 * 3 * 3 * 5];
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++)
        a[i] = (float)((int)(i * 7 % 11) - 5);
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        b[i] = (float)((int)(i * 5 % 13) - 6) * 0.5f;

    {
        const int64_t ad[4] = {2, 1, 3, 4}, bd[3] = {3, 4, 2}, batch[2] = {2, 3};
        targ_t in[2] = {tensor(F32, a, 4, 2, 1, 3, 4), tensor(F32, b, 3, 3, 4, 2)};
        RUN_OK(f, "MatMul", "f32,f32->f32", NULL, 2, in, tensor(F32, NULL, 4, 2, 3, 3, 2), got);
        naive_batched_matmul(a, ad, 4, b, bd, 3, want, 6, batch, 2);
        expect_f32(want, got, 36, 1e-6);
    }
    {
        const int64_t ad[2] = {3, 4}, bd[3] = {2, 4, 5}, batch[1] = {2};
        targ_t in[2] = {tensor(F32, a, 2, 3, 4), tensor(F32, b, 3, 2, 4, 5)};
        RUN_OK(f, "MatMul", "f32,f32->f32", NULL, 2, in, tensor(F32, NULL, 3, 2, 3, 5), got);
        naive_batched_matmul(a, ad, 2, b, bd, 3, want, 2, batch, 1);
        expect_f32(want, got, 30, 1e-6);
    }
    {
        const int64_t ad[4] = {2, 3, 3, 4}, bd[2] = {4, 2}, batch[2] = {2, 3};
        targ_t in[2] = {tensor(F32, a, 4, 2, 3, 3, 4), tensor(F32, b, 2, 4, 2)};
        RUN_OK(f, "MatMul", "f32,f32->f32", NULL, 2, in, tensor(F32, NULL, 4, 2, 3, 3, 2), got);
        naive_batched_matmul(a, ad, 4, b, bd, 2, want, 6, batch, 2);
        expect_f32(want, got, 36, 1e-6);
    }
}

static void matmul_with_an_empty_inner_dim_gives_zeros_and_empty_outputs_are_no_ops(void **state) {
    fixture_t *f = *state;
    const float x[1] = {0};
    float got[6];

    targ_t k0[2] = {tensor(F32, x, 2, 2, 0), tensor(F32, x, 2, 0, 3)};
    memset(got, 0xff, sizeof got);
    RUN_OK(f, "MatMul", "f32,f32->f32", NULL, 2, k0, tensor(F32, NULL, 2, 2, 3), got);
    expect_f32((const float[]){0, 0, 0, 0, 0, 0}, got, 6, 0);
    targ_t m0[2] = {tensor(F32, x, 2, 0, 4), tensor(F32, NULL, 2, 4, 3)};
    RUN_OK(f, "MatMul", "f32,f32->f32", NULL, 2, m0, tensor(F32, NULL, 2, 0, 3), NULL);
}

static void matmul_refuses_inner_dimensions_that_differ_naming_both_shapes(void **state) {
    fixture_t *f = *state;
    targ_t in[2] = {tensor(F32, NULL, 2, 64, 784), tensor(F32, NULL, 2, 748, 256)};
    f->name = "fc1";

    assert_int_equal(
        run(f, "MatMul", "f32,f32->f32", NULL, 2, in, tensor(F32, NULL, 2, 64, 256), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f,
                            "MatMul \"fc1\": inner dimensions differ: input 0 is [64,784], "
                            "input 1 is [748,256]");

    targ_t batch[2] = {tensor(F32, NULL, 3, 2, 1, 1), tensor(F32, NULL, 3, 3, 1, 1)};
    assert_int_equal(
        run(f, "MatMul", "f32,f32->f32", NULL, 2, batch, tensor(F32, NULL, 3, 3, 1, 1), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "batch dimensions do not broadcast");
    targ_t ok[2] = {tensor(F32, NULL, 2, 1, 1), tensor(F32, NULL, 2, 1, 1)};
    assert_int_equal(run(f, "MatMul", "f32,f32->f32", NULL, 2, ok, tensor(F32, NULL, 1, 1), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "output is [1]");
}

static void gemm_applies_transposes_alpha_beta_and_broadcasts_c(void **state) {
    fixture_t *f = *state;
    const float a[6] = {1, 4, 2, 5, 3, 6};    /* [3,2]: A^T is [[1,2,3],[4,5,6]] */
    const float b[6] = {7, 9, 11, 8, 10, 12}; /* [2,3]: B^T is [[7,8],[9,10],[11,12]] */
    const float c_row[2] = {1, 2};
    const float c_col[2] = {100, 200};
    const float c_scalar[1] = {0.5f};
    const test_attr_t attrs[] = {A_INT("transA", 1), A_INT("transB", 1), A_FLOAT("alpha", 2.0),
                                 A_FLOAT("beta", 3.0), A_END};
    float got[4];

    /* A^T B^T = [[58,64],[139,154]]; 2 * that + 3 * C */
    targ_t in[3] = {tensor(F32, a, 2, 3, 2), tensor(F32, b, 2, 2, 3), tensor(F32, c_row, 1, 2)};
    RUN_OK(f, "Gemm", "f32,f32,f32->f32", attrs, 3, in, tensor(F32, NULL, 2, 2, 2), got);
    expect_f32((const float[]){119, 134, 281, 314}, got, 4, 0);
    in[2] = tensor(F32, c_col, 2, 2, 1);
    RUN_OK(f, "Gemm", "f32,f32,f32->f32", attrs, 3, in, tensor(F32, NULL, 2, 2, 2), got);
    expect_f32((const float[]){416, 428, 878, 908}, got, 4, 0);
    in[2] = tensor(F32, c_scalar, 0);
    RUN_OK(f, "Gemm", "f32,f32,f32->f32", attrs, 3, in, tensor(F32, NULL, 2, 2, 2), got);
    expect_f32((const float[]){117.5f, 129.5f, 279.5f, 309.5f}, got, 4, 0);
    /* Without C, and with the default attributes: plain A B. */
    const float a2[4] = {1, 2, 3, 4};
    targ_t plain[2] = {tensor(F32, a2, 2, 2, 2), tensor(F32, a2, 2, 2, 2)};
    RUN_OK(f, "Gemm", "f32,f32->f32", NULL, 2, plain, tensor(F32, NULL, 2, 2, 2), got);
    expect_f32((const float[]){7, 10, 15, 22}, got, 4, 0);

    const double da[2] = {1, 2};
    const double db[2] = {3, 4};
    const double dc[1] = {10};
    double dgot[4];
    const test_attr_t beta0[] = {A_FLOAT("beta", 0.0), A_END};
    targ_t din[3] = {tensor(F64, da, 2, 2, 1), tensor(F64, db, 2, 1, 2), tensor(F64, dc, 1, 1)};
    RUN_OK(f, "Gemm", "f64,f64,f64->f64", NULL, 3, din, tensor(F64, NULL, 2, 2, 2), dgot);
    expect_f64((const double[]){13, 14, 16, 18}, dgot, 4, 0);
    RUN_OK(f, "Gemm", "f64,f64,f64->f64", beta0, 3, din, tensor(F64, NULL, 2, 2, 2), dgot);
    expect_f64((const double[]){3, 4, 6, 8}, dgot, 4, 0);
    /* K = 0: Y = beta * C. */
    targ_t k0[3] = {tensor(F64, da, 2, 2, 0), tensor(F64, db, 2, 0, 2), tensor(F64, dc, 0)};
    const test_attr_t beta2[] = {A_FLOAT("beta", 2.0), A_END};
    RUN_OK(f, "Gemm", "f64,f64,f64->f64", beta2, 3, k0, tensor(F64, NULL, 2, 2, 2), dgot);
    expect_f64((const double[]){20, 20, 20, 20}, dgot, 4, 0);
}

static void gemm_refuses_a_c_that_does_not_broadcast_to_the_output(void **state) {
    fixture_t *f = *state;
    const float x[6] = {0};
    targ_t in[3] = {tensor(F32, x, 2, 2, 2), tensor(F32, x, 2, 2, 3), tensor(F32, x, 1, 2)};
    f->name = "g";

    assert_int_equal(
        run(f, "Gemm", "f32,f32,f32->f32", NULL, 3, in, tensor(F32, NULL, 2, 2, 3), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "Gemm \"g\"");
    assert_message_contains(f, "input 2 (C) is [2]");
    assert_message_contains(f, "[2,3]");
}

/* ---------------------------------------------------------------------------------------------
 * Reductions
 * ------------------------------------------------------------------------------------------- */

static void reduce_sum_over_one_axis_with_and_without_keepdims(void **state) {
    fixture_t *f = *state;
    const float x[6] = {1, 2, 3, 4, 5, 6};
    const test_attr_t ax1[] = {A_INTS("axes", 1), A_END};
    const test_attr_t ax0_flat[] = {A_INTS("axes", 0), A_INT("keepdims", 0), A_END};
    targ_t in = tensor(F32, x, 2, 2, 3);
    float got[3];

    RUN_OK(f, "ReduceSum", "f32->f32", ax1, 1, &in, tensor(F32, NULL, 2, 2, 1), got);
    expect_f32((const float[]){6, 15}, got, 2, 0);
    RUN_OK(f, "ReduceSum", "f32->f32", ax0_flat, 1, &in, tensor(F32, NULL, 1, 3), got);
    expect_f32((const float[]){5, 7, 9}, got, 3, 0);
    RUN_OK(f, "ReduceMean", "f32->f32", ax1, 1, &in, tensor(F32, NULL, 2, 2, 1), got);
    expect_f32((const float[]){2, 5}, got, 2, 0);
    RUN_OK(f, "ReduceMax", "f32->f32", ax0_flat, 1, &in, tensor(F32, NULL, 1, 3), got);
    expect_f32((const float[]){4, 5, 6}, got, 3, 0);

    const int32_t ix[6] = {INT32_MAX, 1, -5, 7, 0, -1};
    int32_t igot[3];
    targ_t iin = tensor(I32, ix, 2, 2, 3);
    RUN_OK(f, "ReduceSum", "i32->i32", ax1, 1, &iin, tensor(I32, NULL, 2, 2, 1), igot);
    /* MAX + 1 - 5 wraps twice on the way and lands in range. */
    expect_i32((const int32_t[]){INT32_MAX - 4, 6}, igot, 2);
    RUN_OK(f, "ReduceMax", "i32->i32", ax0_flat, 1, &iin, tensor(I32, NULL, 1, 3), igot);
    expect_i32((const int32_t[]){INT32_MAX, 1, -1}, igot, 3);
}

/* Sum of x[i,j,k,l] over the axes flagged in @p red, for a [2,3,4,5] input, by hand. */
static void naive_reduce_sum_2345(const double *x, const int *red, double *out) {
    const int dims[4] = {2, 3, 4, 5};
    int od[4];
    for (int d = 0; d < 4; d++)
        od[d] = red[d] ? 1 : dims[d];
    memset(out, 0, sizeof(double) * (size_t)(od[0] * od[1] * od[2] * od[3]));
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++)
                for (int l = 0; l < 5; l++) {
                    int oi = red[0] ? 0 : i, oj = red[1] ? 0 : j, ok = red[2] ? 0 : k,
                        ol = red[3] ? 0 : l;
                    out[((oi * od[1] + oj) * od[2] + ok) * od[3] + ol] +=
                        x[((i * 3 + j) * 4 + k) * 5 + l];
                }
}

static void reduce_over_every_combination_of_axes_matches_a_naive_loop(void **state) {
    fixture_t *f = *state;
    double x[120], want[120], got[120];
    const int dims[4] = {2, 3, 4, 5};

    for (int i = 0; i < 120; i++)
        x[i] = (double)((i * 37) % 19) - 9.0 + 0.25 * (i % 3);
    for (int mask = 1; mask < 16; mask++) {
        int red[4];
        int64_t axes[4];
        uint64_t n_axes = 0;
        targ_t out = tensor(F64, NULL, 4, 1, 1, 1, 1);
        size_t count = 1;
        for (int d = 0; d < 4; d++) {
            red[d] = (mask >> d) & 1;
            if (red[d])
                axes[n_axes++] = d;
            out.dims[d] = red[d] ? 1 : dims[d];
            count *= (size_t)out.dims[d];
        }
        test_attr_t attrs[2] = {
            {.name = "axes", .type = SES_DRV_ATTR_INTS, .ints = axes, .n_ints = n_axes}, A_END};
        targ_t in = tensor(F64, x, 4, 2, 3, 4, 5);
        RUN_OK(f, "ReduceSum", "f64->f64", attrs, 1, &in, out, got);
        naive_reduce_sum_2345(x, red, want);
        expect_f64(want, got, count, 1e-12);
    }
}

static void reduce_max_propagates_nan_and_reduce_mean_divides_by_the_count(void **state) {
    fixture_t *f = *state;
    const float x[20] = {1, NAN, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20};
    const test_attr_t all[] = {A_INTS("axes", 0), A_INT("keepdims", 0), A_END};
    targ_t in = tensor(F32, x, 1, 20);
    float got[1];

    RUN_OK(f, "ReduceMax", "f32->f32", all, 1, &in, tensor(F32, NULL, 0), got);
    assert_true(isnan(got[0]));
    targ_t tail = tensor(F32, x + 2, 1, 18);
    RUN_OK(f, "ReduceMax", "f32->f32", all, 1, &tail, tensor(F32, NULL, 0), got);
    assert_true(got[0] == 20.0f);
    RUN_OK(f, "ReduceMean", "f32->f32", all, 1, &tail, tensor(F32, NULL, 0), got);
    assert_true(got[0] == 11.5f);
    RUN_OK(f, "ReduceSum", "f32->f32", all, 1, &tail, tensor(F32, NULL, 0), got);
    assert_true(got[0] == 207.0f);

    const int64_t l[4] = {-3, -9, -1, -4};
    int64_t lgot[2];
    const test_attr_t ax1[] = {A_INTS("axes", 1), A_INT("keepdims", 0), A_END};
    targ_t lin = tensor(I64, l, 2, 2, 2);
    RUN_OK(f, "ReduceMax", "i64->i64", ax1, 1, &lin, tensor(I64, NULL, 1, 2), lgot);
    expect_i64((const int64_t[]){-3, -1}, lgot, 2);
}

static void reducing_an_empty_axis_sums_to_zero_averages_to_nan_and_has_no_max(void **state) {
    fixture_t *f = *state;
    const double x[1] = {0};
    const test_attr_t ax1[] = {A_INTS("axes", 1), A_END};
    targ_t in = tensor(F64, x, 2, 2, 0);
    double got[2];

    RUN_OK(f, "ReduceSum", "f64->f64", ax1, 1, &in, tensor(F64, NULL, 2, 2, 1), got);
    expect_f64((const double[]){0, 0}, got, 2, 0);
    RUN_OK(f, "ReduceMean", "f64->f64", ax1, 1, &in, tensor(F64, NULL, 2, 2, 1), got);
    assert_true(isnan(got[0]) && isnan(got[1]));
    f->name = "rmax";
    assert_int_equal(run(f, "ReduceMax", "f64->f64", ax1, 1, &in, tensor(F64, NULL, 2, 2, 1), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "ReduceMax \"rmax\"");
    assert_message_contains(f, "empty");
    /* Reducing the non-empty axis of [2,0] leaves an empty output: a no-op for all three. */
    const test_attr_t ax0[] = {A_INTS("axes", 0), A_END};
    RUN_OK(f, "ReduceMax", "f64->f64", ax0, 1, &in, tensor(F64, NULL, 2, 1, 0), NULL);
}

/* ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare: the
 * entries exist in the dtypes they carry, and each agrees with its definition over the
 * innermost axis (a contiguous row) and the outer one (whole rows folded in). */
static void the_other_reductions_match_their_definitions(void **state) {
    fixture_t *f = *state;
    static const char *const have[][2] = {
        {"ReduceMin", "i32->i32"},       {"ReduceProd", "i64->i64"},
        {"ReduceL1", "f64->f64"},        {"ReduceL2", "f32->f32"},
        {"ReduceLogSum", "f64->f64"},    {"ReduceLogSumExp", "f32->f32"},
        {"ReduceSumSquare", "i32->i32"}, {"ArgMin", "i64->i64"},
    };
    static const char *const lack[][2] = {
        {"ReduceL2", "i32->i32"},
        {"ReduceLogSum", "i64->i64"},
        {"ReduceLogSumExp", "i32->i32"},
    };
    const float x[6] = {1, -2, 3, -4, 5, -6}, p[6] = {1, 2, 3, 4, 5, 6};
    const test_attr_t ax1[] = {A_INTS("axes", 1), A_END};
    const test_attr_t ax0_flat[] = {A_INTS("axes", 0), A_INT("keepdims", 0), A_END};
    targ_t in = tensor(F32, x, 2, 2, 3), pin = tensor(F32, p, 2, 2, 3);
    float got[3];

    for (size_t i = 0; i < sizeof have / sizeof have[0]; i++)
        if (!find_kernel_on(f->api, f->device, have[i][0], have[i][1]))
            fail_msg("no %s %s", have[i][0], have[i][1]);
    for (size_t i = 0; i < sizeof lack / sizeof lack[0]; i++)
        if (find_kernel_on(f->api, f->device, lack[i][0], lack[i][1]))
            fail_msg("%s %s should not exist", lack[i][0], lack[i][1]);

    RUN_OK(f, "ReduceMin", "f32->f32", ax1, 1, &in, tensor(F32, NULL, 2, 2, 1), got);
    expect_f32((const float[]){-2, -6}, got, 2, 0);
    RUN_OK(f, "ReduceMin", "f32->f32", ax0_flat, 1, &in, tensor(F32, NULL, 1, 3), got);
    expect_f32((const float[]){-4, -2, -6}, got, 3, 0);
    RUN_OK(f, "ReduceProd", "f32->f32", ax1, 1, &in, tensor(F32, NULL, 2, 2, 1), got);
    expect_f32((const float[]){-6, 120}, got, 2, 0);
    RUN_OK(f, "ReduceProd", "f32->f32", ax0_flat, 1, &in, tensor(F32, NULL, 1, 3), got);
    expect_f32((const float[]){-4, -10, -18}, got, 3, 0);
    RUN_OK(f, "ReduceL1", "f32->f32", ax1, 1, &in, tensor(F32, NULL, 2, 2, 1), got);
    expect_f32((const float[]){6, 15}, got, 2, 0);
    RUN_OK(f, "ReduceL1", "f32->f32", ax0_flat, 1, &in, tensor(F32, NULL, 1, 3), got);
    expect_f32((const float[]){5, 7, 9}, got, 3, 0);
    RUN_OK(f, "ReduceSumSquare", "f32->f32", ax1, 1, &in, tensor(F32, NULL, 2, 2, 1), got);
    expect_f32((const float[]){14, 77}, got, 2, 0);
    RUN_OK(f, "ReduceSumSquare", "f32->f32", ax0_flat, 1, &in, tensor(F32, NULL, 1, 3), got);
    expect_f32((const float[]){17, 29, 45}, got, 3, 0);
    RUN_OK(f, "ReduceL2", "f32->f32", ax1, 1, &in, tensor(F32, NULL, 2, 2, 1), got);
    expect_f32((const float[]){sqrtf(14), sqrtf(77)}, got, 2, 1e-6);
    RUN_OK(f, "ReduceL2", "f32->f32", ax0_flat, 1, &in, tensor(F32, NULL, 1, 3), got);
    expect_f32((const float[]){sqrtf(17), sqrtf(29), sqrtf(45)}, got, 3, 1e-6);
    RUN_OK(f, "ReduceLogSum", "f32->f32", ax1, 1, &pin, tensor(F32, NULL, 2, 2, 1), got);
    expect_f32((const float[]){logf(6), logf(15)}, got, 2, 1e-6);
    RUN_OK(f, "ReduceLogSum", "f32->f32", ax0_flat, 1, &pin, tensor(F32, NULL, 1, 3), got);
    expect_f32((const float[]){logf(5), logf(7), logf(9)}, got, 3, 1e-6);
    RUN_OK(f, "ReduceLogSumExp", "f32->f32", ax1, 1, &in, tensor(F32, NULL, 2, 2, 1), got);
    expect_f32((const float[]){(float)log(exp(1) + exp(-2) + exp(3)),
                               (float)log(exp(-4) + exp(5) + exp(-6))},
               got, 2, 1e-6);
    RUN_OK(f, "ReduceLogSumExp", "f32->f32", ax0_flat, 1, &in, tensor(F32, NULL, 1, 3), got);
    expect_f32((const float[]){(float)log(exp(1) + exp(-4)), (float)log(exp(-2) + exp(5)),
                               (float)log(exp(3) + exp(-6))},
               got, 3, 1e-6);

    /* Rows of 20 go through the 8-lane loops, mapped. */
    double r[40], want[2] = {0, 0}, sq[2] = {0, 0}, dgot[2];
    for (int i = 0; i < 40; i++) {
        r[i] = (double)((i * 7) % 11) - 5.5;
        want[i / 20] += fabs(r[i]);
        sq[i / 20] += r[i] * r[i];
    }
    targ_t rin = tensor(F64, r, 2, 2, 20);
    RUN_OK(f, "ReduceL1", "f64->f64", ax1, 1, &rin, tensor(F64, NULL, 2, 2, 1), dgot);
    expect_f64(want, dgot, 2, 1e-12);
    RUN_OK(f, "ReduceSumSquare", "f64->f64", ax1, 1, &rin, tensor(F64, NULL, 2, 2, 1), dgot);
    expect_f64(sq, dgot, 2, 1e-12);

    /* Integers wrap as unsigned arithmetic does; |INT32_MIN| is INT32_MIN. */
    const int32_t ix[4] = {65536, 65537, INT32_MIN, 3};
    int32_t igot[2];
    targ_t iin = tensor(I32, ix, 2, 2, 2);
    RUN_OK(f, "ReduceProd", "i32->i32", ax1, 1, &iin, tensor(I32, NULL, 2, 2, 1), igot);
    expect_i32((const int32_t[]){65536, INT32_MIN}, igot, 2);
    RUN_OK(f, "ReduceL1", "i32->i32", ax1, 1, &iin, tensor(I32, NULL, 2, 2, 1), igot);
    expect_i32((const int32_t[]){131073, INT32_MIN + 3}, igot, 2);
    RUN_OK(f, "ReduceMin", "i32->i32", ax0_flat, 1, &iin, tensor(I32, NULL, 1, 2), igot);
    expect_i32((const int32_t[]){INT32_MIN, 3}, igot, 2);
    const int64_t lx[2] = {-3000000000, 2};
    int64_t lgot[1];
    const test_attr_t all[] = {A_INTS("axes", 0), A_INT("keepdims", 0), A_END};
    targ_t lin = tensor(I64, lx, 1, 2);
    RUN_OK(f, "ReduceSumSquare", "i64->i64", all, 1, &lin, tensor(I64, NULL, 0), lgot);
    assert_true(lgot[0] == INT64_C(9000000000000000004));
}

/* ReduceLogSumExp subtracts the max: large values do not overflow, and infinities and NaN come
 * out as themselves. Reducing a size-1 axis still maps and finishes each element. */
static void reduce_log_sum_exp_is_stable_and_size_one_axes_still_map(void **state) {
    fixture_t *f = *state;
    const float big[8] = {1000, 1000, -INFINITY, -INFINITY, INFINITY, 1, NAN, 1};
    const test_attr_t ax1[] = {A_INTS("axes", 1), A_INT("keepdims", 0), A_END};
    targ_t in = tensor(F32, big, 2, 4, 2);
    float got[4];

    RUN_OK(f, "ReduceLogSumExp", "f32->f32", ax1, 1, &in, tensor(F32, NULL, 1, 4), got);
    expect_f32((const float[]){1000 + logf(2), -INFINITY, INFINITY, NAN}, got, 4, 1e-6);
    /* Over the outer axis, [2,4] read down its columns: the same values, transposed. */
    const float t[8] = {1000, -INFINITY, INFINITY, NAN, 1000, -INFINITY, 1, 1};
    const test_attr_t ax0[] = {A_INTS("axes", 0), A_INT("keepdims", 0), A_END};
    targ_t tin = tensor(F32, t, 2, 2, 4);
    RUN_OK(f, "ReduceLogSumExp", "f32->f32", ax0, 1, &tin, tensor(F32, NULL, 1, 4), got);
    expect_f32((const float[]){1000 + logf(2), -INFINITY, INFINITY, NAN}, got, 4, 1e-6);

    const double one[2] = {-3, 2.718281828459045};
    double dgot[2];
    targ_t oin = tensor(F64, one, 2, 2, 1);
    RUN_OK(f, "ReduceL1", "f64->f64", ax1, 1, &oin, tensor(F64, NULL, 1, 2), dgot);
    expect_f64((const double[]){3, 2.718281828459045}, dgot, 2, 0);
    RUN_OK(f, "ReduceL2", "f64->f64", ax1, 1, &oin, tensor(F64, NULL, 1, 2), dgot);
    expect_f64((const double[]){3, 2.718281828459045}, dgot, 2, 1e-15);
    RUN_OK(f, "ReduceSumSquare", "f64->f64", ax1, 1, &oin, tensor(F64, NULL, 1, 2), dgot);
    expect_f64((const double[]){9, 2.718281828459045 * 2.718281828459045}, dgot, 2, 1e-15);
    RUN_OK(f, "ReduceLogSum", "f64->f64", ax1, 1, &oin, tensor(F64, NULL, 1, 2), dgot);
    assert_true(isnan(dgot[0]));
    expect_f64((const double[]){1}, dgot + 1, 1, 1e-15);
    RUN_OK(f, "ReduceLogSumExp", "f64->f64", ax1, 1, &oin, tensor(F64, NULL, 1, 2), dgot);
    expect_f64(one, dgot, 2, 0);
}

/* The empty product is 1, the logs of the empty sum -inf, the norms 0; the min does not
 * exist. */
static void the_other_reductions_of_an_empty_axis(void **state) {
    fixture_t *f = *state;
    const double x[1] = {0};
    const test_attr_t ax1[] = {A_INTS("axes", 1), A_END};
    targ_t in = tensor(F64, x, 2, 2, 0);
    double got[2];

    RUN_OK(f, "ReduceProd", "f64->f64", ax1, 1, &in, tensor(F64, NULL, 2, 2, 1), got);
    expect_f64((const double[]){1, 1}, got, 2, 0);
    RUN_OK(f, "ReduceLogSum", "f64->f64", ax1, 1, &in, tensor(F64, NULL, 2, 2, 1), got);
    expect_f64((const double[]){-INFINITY, -INFINITY}, got, 2, 0);
    RUN_OK(f, "ReduceLogSumExp", "f64->f64", ax1, 1, &in, tensor(F64, NULL, 2, 2, 1), got);
    expect_f64((const double[]){-INFINITY, -INFINITY}, got, 2, 0);
    RUN_OK(f, "ReduceL2", "f64->f64", ax1, 1, &in, tensor(F64, NULL, 2, 2, 1), got);
    expect_f64((const double[]){0, 0}, got, 2, 0);
    const int64_t l[1] = {0};
    int64_t lgot[2];
    targ_t lin = tensor(I64, l, 2, 2, 0);
    RUN_OK(f, "ReduceProd", "i64->i64", ax1, 1, &lin, tensor(I64, NULL, 2, 2, 1), lgot);
    expect_i64((const int64_t[]){1, 1}, lgot, 2);
    f->name = "rmin";
    assert_int_equal(run(f, "ReduceMin", "f64->f64", ax1, 1, &in, tensor(F64, NULL, 2, 2, 1), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "ReduceMin \"rmin\"");
    assert_message_contains(f, "the min of no elements");
}

static void reductions_refuse_bad_axes_and_wrong_output_shapes(void **state) {
    fixture_t *f = *state;
    const float x[6] = {0};
    targ_t in = tensor(F32, x, 2, 2, 3);
    const test_attr_t unsorted[] = {A_INTS("axes", 1, 0), A_END};
    const test_attr_t out_of_range[] = {A_INTS("axes", 2), A_END};
    const test_attr_t ax1[] = {A_INTS("axes", 1), A_END};
    f->name = "red";

    assert_int_equal(
        run(f, "ReduceSum", "f32->f32", unsorted, 1, &in, tensor(F32, NULL, 2, 1, 1), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "axes is [1,0]");
    assert_int_equal(
        run(f, "ReduceSum", "f32->f32", out_of_range, 1, &in, tensor(F32, NULL, 2, 2, 3), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_int_equal(
        run(f, "ReduceSum", "f32->f32", NULL, 1, &in, tensor(F32, NULL, 2, 2, 3), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "axes is missing");
    assert_int_equal(run(f, "ReduceSum", "f32->f32", ax1, 1, &in, tensor(F32, NULL, 1, 2), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "output is [2]");
    assert_message_contains(f, "is [2,1]");
}

/* ---------------------------------------------------------------------------------------------
 * Softmax LogSoftmax ArgMax
 * ------------------------------------------------------------------------------------------- */

static void softmax_normalizes_along_the_axis_without_overflow(void **state) {
    fixture_t *f = *state;
    /* Rows [1,2,3] and [1000,1001,1002]: the same softmax, since it ignores shifts. */
    const float x[6] = {1, 2, 3, 1000, 1001, 1002};
    const test_attr_t ax1[] = {A_INT("axis", 1), A_END};
    const test_attr_t ax0[] = {A_INT("axis", 0), A_END};
    targ_t in = tensor(F32, x, 2, 2, 3);
    float got[6];
    const float e = 0.09003057f, g = 0.24472847f, h = 0.66524096f;

    RUN_OK(f, "Softmax", "f32->f32", ax1, 1, &in, tensor(F32, NULL, 2, 2, 3), got);
    expect_f32((const float[]){e, g, h, e, g, h}, got, 6, 1e-6);
    RUN_OK(f, "LogSoftmax", "f32->f32", ax1, 1, &in, tensor(F32, NULL, 2, 2, 3), got);
    expect_f32((const float[]){logf(e), logf(g), logf(h), logf(e), logf(g), logf(h)}, got, 6, 1e-6);
    /* Along axis 0 (strided): each column is [small, small + 999]: [0, 1]. */
    RUN_OK(f, "Softmax", "f32->f32", ax0, 1, &in, tensor(F32, NULL, 2, 2, 3), got);
    expect_f32((const float[]){0, 0, 0, 1, 1, 1}, got, 6, 1e-6);
    RUN_OK(f, "LogSoftmax", "f32->f32", ax0, 1, &in, tensor(F32, NULL, 2, 2, 3), got);
    expect_f32((const float[]){-999, -999, -999, 0, 0, 0}, got, 6, 1e-6);

    /* [2,2,2] along the middle axis, in f64. */
    const double d[8] = {0, 1, 2, 3, 0, 0, 0, 0};
    const double s = 1.0 / (1.0 + exp(2.0));
    double dgot[8];
    targ_t din = tensor(F64, d, 3, 2, 2, 2);
    RUN_OK(f, "Softmax", "f64->f64", ax1, 1, &din, tensor(F64, NULL, 3, 2, 2, 2), dgot);
    expect_f64((const double[]){s, s, 1 - s, 1 - s, 0.5, 0.5, 0.5, 0.5}, dgot, 8, 1e-14);
    /* An empty axis has nothing to normalize. */
    targ_t empty = tensor(F64, d, 2, 3, 0);
    RUN_OK(f, "Softmax", "f64->f64", ax1, 1, &empty, tensor(F64, NULL, 2, 3, 0), NULL);
    f->name = "sm";
    assert_int_equal(
        run(f, "Softmax", "f64->f64", NULL, 1, &din, tensor(F64, NULL, 3, 2, 2, 2), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "axis is missing");
}

static void argmax_returns_the_first_or_last_index_of_the_largest(void **state) {
    fixture_t *f = *state;
    const float x[6] = {1, 5, 5, 7, 2, 7};
    const test_attr_t first[] = {A_INT("axis", 1), A_END};
    const test_attr_t last[] = {A_INT("axis", 1), A_INT("select_last_index", 1),
                                A_INT("keepdims", 0), A_END};
    const test_attr_t cols[] = {A_INT("axis", 0), A_INT("keepdims", 0), A_END};
    targ_t in = tensor(F32, x, 2, 2, 3);
    int64_t got[3];

    RUN_OK(f, "ArgMax", "f32->i64", first, 1, &in, tensor(I64, NULL, 2, 2, 1), got);
    expect_i64((const int64_t[]){1, 0}, got, 2);
    RUN_OK(f, "ArgMax", "f32->i64", last, 1, &in, tensor(I64, NULL, 1, 2), got);
    expect_i64((const int64_t[]){2, 2}, got, 2);
    RUN_OK(f, "ArgMax", "f32->i64", cols, 1, &in, tensor(I64, NULL, 1, 3), got);
    expect_i64((const int64_t[]){1, 0, 1}, got, 3);

    const float n[4] = {1, NAN, 9, NAN};
    targ_t nin = tensor(F32, n, 1, 4);
    const test_attr_t flat[] = {A_INT("axis", 0), A_INT("keepdims", 0), A_END};
    const test_attr_t flat_last[] = {A_INT("axis", 0), A_INT("keepdims", 0),
                                     A_INT("select_last_index", 1), A_END};
    RUN_OK(f, "ArgMax", "f32->i64", flat, 1, &nin, tensor(I64, NULL, 0), got);
    assert_int_equal(got[0], 1);
    RUN_OK(f, "ArgMax", "f32->i64", flat_last, 1, &nin, tensor(I64, NULL, 0), got);
    assert_int_equal(got[0], 3);

    const int32_t i[3] = {-4, -2, -3};
    targ_t iin = tensor(I32, i, 1, 3);
    RUN_OK(f, "ArgMax", "i32->i64", flat, 1, &iin, tensor(I64, NULL, 0), got);
    assert_int_equal(got[0], 1);
    const int64_t l[2] = {INT64_MIN, INT64_MIN};
    targ_t lin = tensor(I64, l, 1, 2);
    RUN_OK(f, "ArgMax", "i64->i64", flat_last, 1, &lin, tensor(I64, NULL, 0), got);
    assert_int_equal(got[0], 1);

    targ_t empty = tensor(F32, x, 2, 2, 0);
    f->name = "am";
    assert_int_equal(
        run(f, "ArgMax", "f32->i64", first, 1, &empty, tensor(I64, NULL, 2, 2, 1), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "ArgMax \"am\"");
    assert_message_contains(f, "empty");
}

/* ArgMin: the first or last index of the smallest, NaN counting as the smallest (numpy). */
static void argmin_returns_the_first_or_last_index_of_the_smallest(void **state) {
    fixture_t *f = *state;
    const float x[6] = {4, 1, 1, 0, 2, 0};
    const test_attr_t first[] = {A_INT("axis", 1), A_END};
    const test_attr_t last[] = {A_INT("axis", 1), A_INT("select_last_index", 1),
                                A_INT("keepdims", 0), A_END};
    const test_attr_t cols[] = {A_INT("axis", 0), A_INT("keepdims", 0), A_END};
    targ_t in = tensor(F32, x, 2, 2, 3);
    int64_t got[3];

    RUN_OK(f, "ArgMin", "f32->i64", first, 1, &in, tensor(I64, NULL, 2, 2, 1), got);
    expect_i64((const int64_t[]){1, 0}, got, 2);
    RUN_OK(f, "ArgMin", "f32->i64", last, 1, &in, tensor(I64, NULL, 1, 2), got);
    expect_i64((const int64_t[]){2, 2}, got, 2);
    RUN_OK(f, "ArgMin", "f32->i64", cols, 1, &in, tensor(I64, NULL, 1, 3), got);
    expect_i64((const int64_t[]){1, 0, 1}, got, 3);

    const float n[4] = {1, NAN, -9, NAN};
    targ_t nin = tensor(F32, n, 1, 4);
    const test_attr_t flat[] = {A_INT("axis", 0), A_INT("keepdims", 0), A_END};
    const test_attr_t flat_last[] = {A_INT("axis", 0), A_INT("keepdims", 0),
                                     A_INT("select_last_index", 1), A_END};
    RUN_OK(f, "ArgMin", "f32->i64", flat, 1, &nin, tensor(I64, NULL, 0), got);
    assert_int_equal(got[0], 1);
    RUN_OK(f, "ArgMin", "f32->i64", flat_last, 1, &nin, tensor(I64, NULL, 0), got);
    assert_int_equal(got[0], 3);
    const int64_t l[3] = {INT64_MAX, INT64_MIN, INT64_MIN};
    targ_t lin = tensor(I64, l, 1, 3);
    RUN_OK(f, "ArgMin", "i64->i64", flat, 1, &lin, tensor(I64, NULL, 0), got);
    assert_int_equal(got[0], 1);

    targ_t empty = tensor(F32, x, 2, 2, 0);
    f->name = "amin";
    assert_int_equal(
        run(f, "ArgMin", "f32->i64", first, 1, &empty, tensor(I64, NULL, 2, 2, 1), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "ArgMin \"amin\"");
    assert_message_contains(f, "no smallest element");
}

/* ---------------------------------------------------------------------------------------------
 * Transpose Concat Slice Gather
 * ------------------------------------------------------------------------------------------- */

static void transpose_permutes_axes_at_every_element_width(void **state) {
    fixture_t *f = *state;
    const test_attr_t swap[] = {A_INTS("perm", 1, 0), A_END};
    const int16_t m[6] = {1, 2, 3, 4, 5, 6};
    int16_t got[6];
    targ_t in = tensor(SES_DRV_DTYPE_I16, m, 2, 2, 3);

    RUN_OK(f, "Transpose", "i16->i16", swap, 1, &in, tensor(SES_DRV_DTYPE_I16, NULL, 2, 3, 2), got);
    assert_memory_equal(got, ((const int16_t[]){1, 4, 2, 5, 3, 6}), sizeof got);

    /* [2,3,4] by perm [2,0,1] -> [4,2,3], against index arithmetic, at 1, 4 and 8 bytes. */
    const test_attr_t rot[] = {A_INTS("perm", 2, 0, 1), A_END};
    uint8_t x8[24], g8[24];
    float x32[24], g32[24];
    double x64[24], g64[24];
    for (int i = 0; i < 24; i++) {
        x8[i] = (uint8_t)i;
        x32[i] = (float)i;
        x64[i] = (double)i;
    }
    targ_t in8 = tensor(U8, x8, 3, 2, 3, 4);
    targ_t in32 = tensor(F32, x32, 3, 2, 3, 4);
    targ_t in64 = tensor(F64, x64, 3, 2, 3, 4);
    RUN_OK(f, "Transpose", "u8->u8", rot, 1, &in8, tensor(U8, NULL, 3, 4, 2, 3), g8);
    RUN_OK(f, "Transpose", "f32->f32", rot, 1, &in32, tensor(F32, NULL, 3, 4, 2, 3), g32);
    RUN_OK(f, "Transpose", "f64->f64", rot, 1, &in64, tensor(F64, NULL, 3, 4, 2, 3), g64);
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++) {
                int o = (k * 2 + i) * 3 + j, s = (i * 3 + j) * 4 + k;
                assert_int_equal(g8[o], s);
                assert_true(g32[o] == (float)s);
                assert_true(g64[o] == (double)s);
            }
    /* Rank 0 and an empty tensor. */
    const test_attr_t none[] = {{.name = "perm", .type = SES_DRV_ATTR_INTS, .n_ints = 0}, A_END};
    targ_t scalar = tensor(F64, x64 + 5, 0);
    RUN_OK(f, "Transpose", "f64->f64", none, 1, &scalar, tensor(F64, NULL, 0), g64);
    assert_true(g64[0] == 5.0);
    targ_t empty = tensor(F64, x64, 2, 0, 3);
    RUN_OK(f, "Transpose", "f64->f64", swap, 1, &empty, tensor(F64, NULL, 2, 3, 0), NULL);
}

/* Shapes past the tile size take the tiled path: a batch of matrices whose sides are not
 * multiples of the tile, and NCHW -> NHWC, which merges into one. */
static void transpose_of_large_batched_matrices_matches_index_arithmetic(void **state) {
    fixture_t *f = *state;
    enum { B = 3, R = 10, C = 13, N = B * R * C };
    const test_attr_t last2[] = {A_INTS("perm", 0, 2, 1), A_END};
    static uint8_t x8[N], g8[N];
    static int16_t x16[N], g16[N];
    static double x64[N], g64[N];
    for (int i = 0; i < N; i++) {
        x8[i] = (uint8_t)(i * 7);
        x16[i] = (int16_t)(i - 200);
        x64[i] = i * 0.5;
    }
    targ_t in8 = tensor(U8, x8, 3, B, R, C);
    targ_t in16 = tensor(SES_DRV_DTYPE_I16, x16, 3, B, R, C);
    targ_t in64 = tensor(F64, x64, 3, B, R, C);
    RUN_OK(f, "Transpose", "u8->u8", last2, 1, &in8, tensor(U8, NULL, 3, B, C, R), g8);
    RUN_OK(f, "Transpose", "i16->i16", last2, 1, &in16, tensor(SES_DRV_DTYPE_I16, NULL, 3, B, C, R),
           g16);
    RUN_OK(f, "Transpose", "f64->f64", last2, 1, &in64, tensor(F64, NULL, 3, B, C, R), g64);
    for (int b = 0; b < B; b++)
        for (int c = 0; c < C; c++)
            for (int r = 0; r < R; r++) {
                int o = (b * C + c) * R + r, s = (b * R + r) * C + c;
                if (g8[o] != x8[s] || g16[o] != x16[s] || g64[o] != x64[s])
                    fail_msg("element [%d,%d,%d] differs", b, c, r);
            }

    /* NCHW [2,12,9,11] -> NHWC [2,9,11,12] */
    const test_attr_t nhwc[] = {A_INTS("perm", 0, 2, 3, 1), A_END};
    static float img[2 * 12 * 9 * 11], got[2 * 12 * 9 * 11];
    for (int i = 0; i < 2 * 12 * 9 * 11; i++)
        img[i] = (float)i;
    targ_t in = tensor(F32, img, 4, 2, 12, 9, 11);
    RUN_OK(f, "Transpose", "f32->f32", nhwc, 1, &in, tensor(F32, NULL, 4, 2, 9, 11, 12), got);
    for (int n = 0; n < 2; n++)
        for (int h = 0; h < 9; h++)
            for (int w = 0; w < 11; w++)
                for (int c = 0; c < 12; c++)
                    if (got[((n * 9 + h) * 11 + w) * 12 + c] !=
                        img[((n * 12 + c) * 9 + h) * 11 + w])
                        fail_msg("NHWC element [%d,%d,%d,%d] differs", n, h, w, c);
}

static void transpose_refuses_a_perm_that_is_not_a_permutation(void **state) {
    fixture_t *f = *state;
    const float x[6] = {0};
    const test_attr_t dup[] = {A_INTS("perm", 0, 0), A_END};
    const test_attr_t swap[] = {A_INTS("perm", 1, 0), A_END};
    targ_t in = tensor(F32, x, 2, 2, 3);
    f->name = "t";

    assert_int_equal(run(f, "Transpose", "f32->f32", dup, 1, &in, tensor(F32, NULL, 2, 2, 2), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "Transpose \"t\"");
    assert_message_contains(f, "perm [0,0]");
    assert_int_equal(
        run(f, "Transpose", "f32->f32", swap, 1, &in, tensor(F32, NULL, 2, 2, 3), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "output is [2,3]");
}

static void concat_joins_inputs_along_the_axis(void **state) {
    fixture_t *f = *state;
    const float a[4] = {1, 2, 3, 4};          /* [2,2] */
    const float b[2] = {5, 6};                /* [2,1] */
    const float c[6] = {7, 8, 9, 10, 11, 12}; /* [2,3] */
    const test_attr_t ax1[] = {A_INT("axis", 1), A_END};
    const test_attr_t ax0[] = {A_INT("axis", 0), A_END};
    float got[12];

    targ_t cols[4] = {tensor(F32, a, 2, 2, 2), tensor(F32, b, 2, 2, 1), tensor(F32, b, 2, 2, 0),
                      tensor(F32, c, 2, 2, 3)};
    RUN_OK(f, "Concat", "f32...->f32", ax1, 4, cols, tensor(F32, NULL, 2, 2, 6), got);
    expect_f32((const float[]){1, 2, 5, 7, 8, 9, 3, 4, 6, 10, 11, 12}, got, 12, 0);
    targ_t rows[2] = {tensor(F32, a, 2, 2, 2), tensor(F32, c, 2, 1, 2)};
    RUN_OK(f, "Concat", "f32...->f32", ax0, 2, rows, tensor(F32, NULL, 2, 3, 2), got);
    expect_f32((const float[]){1, 2, 3, 4, 7, 8}, got, 6, 0);
    /* One input is a copy. */
    const uint8_t bits[3] = {1, 0, 1};
    uint8_t gb[3];
    targ_t one = tensor(BOOL, bits, 1, 3);
    RUN_OK(f, "Concat", "bool...->bool", ax0, 1, &one, tensor(BOOL, NULL, 1, 3), gb);
    expect_u8(bits, gb, 3);
    /* Six inputs: more than the three a kernel call keeps views of. */
    const int64_t v[7] = {1, 2, 3, 4, 5, 6, 7};
    int64_t gv[7];
    targ_t many[6];
    for (int i = 0; i < 5; i++)
        many[i] = tensor(I64, v + i, 1, 1);
    many[5] = tensor(I64, v + 5, 1, 2);
    RUN_OK(f, "Concat", "i64...->i64", ax0, 6, many, tensor(I64, NULL, 1, 7), gv);
    expect_i64(v, gv, 7);

    f->name = "cat";
    targ_t bad[2] = {tensor(F32, a, 2, 2, 2), tensor(F32, c, 2, 3, 2)};
    assert_int_equal(run(f, "Concat", "f32...->f32", ax1, 2, bad, tensor(F32, NULL, 2, 2, 4), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "Concat \"cat\"");
    assert_message_contains(f, "input 1 is [3,2]");
    assert_int_equal(
        run(f, "Concat", "f32...->f32", ax1, 2, rows, tensor(F32, NULL, 2, 2, 5), NULL),
        SES_DRV_INVALID_ARGUMENT);
}

static void slice_takes_forward_backward_and_strided_ranges(void **state) {
    fixture_t *f = *state;
    const int32_t x[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}; /* [3,4] */
    targ_t in = tensor(I32, x, 2, 3, 4);
    int32_t got[12];

    /* Rows 1.., columns 1, 3. */
    const test_attr_t fwd[] = {A_INTS("starts", 1, 1), A_INTS("steps", 1, 2), A_END};
    RUN_OK(f, "Slice", "i32->i32", fwd, 1, &in, tensor(I32, NULL, 2, 2, 2), got);
    expect_i32((const int32_t[]){5, 7, 9, 11}, got, 4);
    /* Everything, reversed on both axes. */
    const test_attr_t rev[] = {A_INTS("starts", 2, 3), A_INTS("steps", -1, -1), A_END};
    RUN_OK(f, "Slice", "i32->i32", rev, 1, &in, tensor(I32, NULL, 2, 3, 4), got);
    expect_i32((const int32_t[]){11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, got, 12);
    /* Column 3 then 0 of row 2: step -3 from 3. */
    const test_attr_t back3[] = {A_INTS("starts", 2, 3), A_INTS("steps", 1, -3), A_END};
    RUN_OK(f, "Slice", "i32->i32", back3, 1, &in, tensor(I32, NULL, 2, 1, 2), got);
    expect_i32((const int32_t[]){11, 8}, got, 2);
    /* Empty: start clamped to the end, nothing taken. */
    const test_attr_t end[] = {A_INTS("starts", 3, 0), A_INTS("steps", 1, 1), A_END};
    RUN_OK(f, "Slice", "i32->i32", end, 1, &in, tensor(I32, NULL, 2, 0, 4), NULL);

    f->name = "sl";
    assert_int_equal(run(f, "Slice", "i32->i32", fwd, 1, &in, tensor(I32, NULL, 2, 2, 3), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "Slice \"sl\"");
    assert_message_contains(f, "axis 1");
    const test_attr_t zero[] = {A_INTS("starts", 0, 0), A_INTS("steps", 1, 0), A_END};
    assert_int_equal(run(f, "Slice", "i32->i32", zero, 1, &in, tensor(I32, NULL, 2, 3, 1), NULL),
                     SES_DRV_INVALID_ARGUMENT);
}

static void gather_picks_along_the_axis_with_negative_indices(void **state) {
    fixture_t *f = *state;
    const float data[6] = {1, 2, 3, 4, 5, 6}; /* [3,2] */
    const int64_t idx[4] = {2, 0, -1, 1};     /* [2,2] */
    const int32_t col[1] = {-2};
    const test_attr_t ax0[] = {A_INT("axis", 0), A_END};
    const test_attr_t ax1[] = {A_INT("axis", 1), A_END};
    float got[8];

    targ_t in[2] = {tensor(F32, data, 2, 3, 2), tensor(I64, idx, 2, 2, 2)};
    RUN_OK(f, "Gather", "f32,i64->f32", ax0, 2, in, tensor(F32, NULL, 3, 2, 2, 2), got);
    expect_f32((const float[]){5, 6, 1, 2, 5, 6, 3, 4}, got, 8, 0);
    /* A scalar index drops the axis: column -2 = 0 of each row. */
    targ_t in32[2] = {tensor(F32, data, 2, 3, 2), tensor(I32, col, 0)};
    RUN_OK(f, "Gather", "f32,i32->f32", ax1, 2, in32, tensor(F32, NULL, 1, 3), got);
    expect_f32((const float[]){1, 3, 5}, got, 3, 0);
    /* No indices: an empty output. */
    targ_t none[2] = {tensor(F32, data, 2, 3, 2), tensor(I64, idx, 1, 0)};
    RUN_OK(f, "Gather", "f32,i64->f32", ax0, 2, none, tensor(F32, NULL, 2, 0, 2), NULL);
    const uint16_t w[3] = {10, 20, 30};
    uint16_t gw[2];
    targ_t win[2] = {tensor(SES_DRV_DTYPE_U16, w, 1, 3),
                     tensor(I32, (const int32_t[]){2, 0}, 1, 2)};
    RUN_OK(f, "Gather", "u16,i32->u16", ax0, 2, win, tensor(SES_DRV_DTYPE_U16, NULL, 1, 2), gw);
    assert_int_equal(gw[0], 30);
    assert_int_equal(gw[1], 10);
}

static void gather_refuses_an_index_out_of_range_naming_node_index_and_dim(void **state) {
    fixture_t *f = *state;
    const float data[6] = {0};
    const int64_t idx[3] = {0, 3, 1};
    const int32_t neg[1] = {-4};
    const test_attr_t ax0[] = {A_INT("axis", 0), A_END};
    f->name = "embed";

    targ_t in[2] = {tensor(F32, data, 2, 3, 2), tensor(I64, idx, 1, 3)};
    assert_int_equal(run(f, "Gather", "f32,i64->f32", ax0, 2, in, tensor(F32, NULL, 2, 3, 2), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "Gather \"embed\"");
    assert_message_contains(f, "index 3");
    assert_message_contains(f, "size 3");
    targ_t in32[2] = {tensor(F32, data, 2, 3, 2), tensor(I32, neg, 1, 1)};
    assert_int_equal(
        run(f, "Gather", "f32,i32->f32", ax0, 2, in32, tensor(F32, NULL, 2, 1, 2), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "index -4");
    targ_t shape[2] = {tensor(F32, data, 2, 3, 2), tensor(I64, idx, 1, 3)};
    assert_int_equal(
        run(f, "Gather", "f32,i64->f32", ax0, 2, shape, tensor(F32, NULL, 2, 3, 3), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "output is [3,3]");
}

/* ---------------------------------------------------------------------------------------------
 * GatherElements ScatterElements GatherND ScatterND OneHot Trilu CumSum Hardmax (cpu_index.c)
 * ------------------------------------------------------------------------------------------- */

static void gather_and_scatter_elements_index_along_the_axis(void **state) {
    fixture_t *f = *state;
    const float data[6] = {1, 2, 3, 4, 5, 6}; /* [2,3] */
    const int64_t idx[4] = {2, -3, 1, 1};     /* [2,2] */
    const float upd[4] = {10, 20, 30, 40};
    const test_attr_t ax1[] = {A_INT("axis", 1), A_END};
    const test_attr_t add[] = {A_INT("axis", 1), A_INT("reduction", 1), A_END};
    float got[6];

    targ_t in[2] = {tensor(F32, data, 2, 2, 3), tensor(I64, idx, 2, 2, 2)};
    RUN_OK(f, "GatherElements", "f32,i64->f32", ax1, 2, in, tensor(F32, NULL, 2, 2, 2), got);
    expect_f32((const float[]){3, 1, 5, 5}, got, 4, 0);
    targ_t sin[3] = {tensor(F32, data, 2, 2, 3), tensor(I64, idx, 2, 2, 2),
                     tensor(F32, upd, 2, 2, 2)};
    RUN_OK(f, "ScatterElements", "f32,i64,f32->f32", ax1, 3, sin, tensor(F32, NULL, 2, 2, 3), got);
    expect_f32((const float[]){20, 2, 10, 4, 40, 6}, got, 6, 0);
    /* add: the repeated index 1 of row 1 gets both updates. */
    RUN_OK(f, "ScatterElements", "f32,i64,f32->f32", add, 3, sin, tensor(F32, NULL, 2, 2, 3), got);
    expect_f32((const float[]){21, 2, 13, 4, 75, 6}, got, 6, 0);

    const int64_t bad[4] = {0, 3, 1, 1};
    targ_t oob[2] = {tensor(F32, data, 2, 2, 3), tensor(I64, bad, 2, 2, 2)};
    f->name = "ge";
    assert_int_equal(
        run(f, "GatherElements", "f32,i64->f32", ax1, 2, oob, tensor(F32, NULL, 2, 2, 2), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "GatherElements \"ge\"");
    assert_message_contains(f, "index 3");
    targ_t wide[2] = {tensor(F32, data, 2, 2, 3), tensor(I64, idx, 2, 4, 1)};
    assert_int_equal(
        run(f, "GatherElements", "f32,i64->f32", ax1, 2, wide, tensor(F32, NULL, 2, 4, 1), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "no dimension larger");
}

static void gather_nd_and_scatter_nd_move_blocks(void **state) {
    fixture_t *f = *state;
    const int32_t data[8] = {0, 1, 2, 3, 4, 5, 6, 7}; /* [2,2,2] */
    const int64_t rows[4] = {1, 0, -2, 1};            /* [2,2]: data[1,0,:], data[0,1,:] */
    const int64_t batch[2] = {1, 0};                  /* [2,1] with batch_dims 1 */
    const test_attr_t none[] = {A_END};
    const test_attr_t b1[] = {A_INT("batch_dims", 1), A_END};
    const test_attr_t mul[] = {A_INT("reduction", 2), A_END};
    int32_t got[8];

    targ_t in[2] = {tensor(I32, data, 3, 2, 2, 2), tensor(I64, rows, 2, 2, 2)};
    RUN_OK(f, "GatherND", "i32,i64->i32", none, 2, in, tensor(I32, NULL, 2, 2, 2), got);
    expect_i32((const int32_t[]){4, 5, 2, 3}, got, 4);
    targ_t bin[2] = {tensor(I32, data, 3, 2, 2, 2), tensor(I64, batch, 2, 2, 1)};
    RUN_OK(f, "GatherND", "i32,i64->i32", b1, 2, bin, tensor(I32, NULL, 2, 2, 2), got);
    expect_i32((const int32_t[]){2, 3, 4, 5}, got, 4);
    const int32_t upd[4] = {10, 20, 30, 40};
    targ_t sin[3] = {tensor(I32, data, 3, 2, 2, 2), tensor(I64, rows, 2, 2, 2),
                     tensor(I32, upd, 2, 2, 2)};
    RUN_OK(f, "ScatterND", "i32,i64,i32->i32", none, 3, sin, tensor(I32, NULL, 3, 2, 2, 2), got);
    expect_i32((const int32_t[]){0, 1, 30, 40, 10, 20, 6, 7}, got, 8);
    RUN_OK(f, "ScatterND", "i32,i64,i32->i32", mul, 3, sin, tensor(I32, NULL, 3, 2, 2, 2), got);
    expect_i32((const int32_t[]){0, 1, 60, 120, 40, 100, 6, 7}, got, 8);

    const int64_t bad[2] = {0, 2};
    targ_t oob[2] = {tensor(I32, data, 3, 2, 2, 2), tensor(I64, bad, 1, 2)};
    f->name = "gnd";
    assert_int_equal(
        run(f, "GatherND", "i32,i64->i32", none, 2, oob, tensor(I32, NULL, 1, 2), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "GatherND \"gnd\"");
    assert_message_contains(f, "index 2");
}

static void one_hot_trilu_cumsum_and_hardmax_compute_like_onnx(void **state) {
    fixture_t *f = *state;
    const float idx[3] = {1.7f, -1, 5}; /* 1.7 truncates to 1; 5 is out of range: all off */
    const int64_t vals[2] = {-1, 7};
    const test_attr_t hot[] = {A_INT("axis", 1), A_INT("depth", 3), A_END};
    int64_t got[9];

    targ_t hin[2] = {tensor(F32, idx, 1, 3), tensor(I64, vals, 1, 2)};
    RUN_OK(f, "OneHot", "f32,i64->i64", hot, 2, hin, tensor(I64, NULL, 2, 3, 3), got);
    expect_i64((const int64_t[]){-1, 7, -1, -1, -1, 7, -1, -1, -1}, got, 9);

    const int32_t m[6] = {1, 2, 3, 4, 5, 6}; /* [2,3] */
    const test_attr_t up1[] = {A_INT("upper", 1), A_INT("k", 1), A_END};
    const test_attr_t low0[] = {A_INT("upper", 0), A_INT("k", 0), A_END};
    int32_t t[6];
    targ_t tin[1] = {tensor(I32, m, 2, 2, 3)};
    RUN_OK(f, "Trilu", "i32->i32", up1, 1, tin, tensor(I32, NULL, 2, 2, 3), t);
    expect_i32((const int32_t[]){0, 2, 3, 0, 0, 6}, t, 6);
    RUN_OK(f, "Trilu", "i32->i32", low0, 1, tin, tensor(I32, NULL, 2, 2, 3), t);
    expect_i32((const int32_t[]){1, 0, 0, 4, 5, 0}, t, 6);

    const test_attr_t sum1[] = {A_INT("axis", 1), A_END};
    const test_attr_t excl_rev[] = {A_INT("axis", 1), A_INT("exclusive", 1), A_INT("reverse", 1),
                                    A_END};
    RUN_OK(f, "CumSum", "i32->i32", sum1, 1, tin, tensor(I32, NULL, 2, 2, 3), t);
    expect_i32((const int32_t[]){1, 3, 6, 4, 9, 15}, t, 6);
    RUN_OK(f, "CumSum", "i32->i32", excl_rev, 1, tin, tensor(I32, NULL, 2, 2, 3), t);
    expect_i32((const int32_t[]){5, 3, 0, 11, 6, 0}, t, 6);

    const float x[6] = {3, 1, 3, -1, 2, 0}; /* [2,3]: ties go to the first */
    const test_attr_t ax0[] = {A_INT("axis", 0), A_END};
    float h[6];
    targ_t xin[1] = {tensor(F32, x, 2, 2, 3)};
    RUN_OK(f, "Hardmax", "f32->f32", sum1, 1, xin, tensor(F32, NULL, 2, 2, 3), h);
    expect_f32((const float[]){1, 0, 0, 0, 1, 0}, h, 6, 0);
    RUN_OK(f, "Hardmax", "f32->f32", ax0, 1, xin, tensor(F32, NULL, 2, 2, 3), h);
    expect_f32((const float[]){1, 0, 1, 0, 1, 0}, h, 6, 0);
}

/* ---------------------------------------------------------------------------------------------
 * The gradient ops (cpu_grad.c); their values are checked through sessions in grad_ops_test.c.
 * ------------------------------------------------------------------------------------------- */

static void gradient_kernels_are_offered_at_their_dtypes(void **state) {
    fixture_t *f = *state;
    static const char *const all13[] = {"f32", "f64", "f16", "bf16", "i8",  "i16", "i32",
                                        "i64", "u8",  "u16", "u32",  "u64", "bool"};
    static const char *const expected[][2] = {
        {"ReduceSumLike", "i64->i64"},        {"ReduceSumLike", "f32->f32"},
        {"ReluGrad", "f64,f64->f64"},         {"LeakyReluGrad", "f32,f32->f32"},
        {"SigmoidGrad", "f32,f32->f32"},      {"TanhGrad", "f64,f64->f64"},
        {"SoftmaxGrad", "f32,f32->f32"},      {"LogSoftmaxGrad", "f64,f64->f64"},
        {"MatMulGrad", "f32,f32,f32->f32"},   {"MatMulGrad", "f64,f64,f64->f64"},
        {"ReduceGrad", "f64->f64"},           {"GatherGrad", "f32,i64->f32"},
        {"GatherGrad", "f64,i32->f64"},
    };
    static const char *const missing[][2] = {
        {"ReluGrad", "i32,i32->i32"},      /* the arithmetic gradients are float only */
        {"ReduceSumLike", "u8->u8"},       /* as ReduceSum */
        {"GatherGrad", "i32,i32->i32"},    /* a scatter-add of floats */
        {"ReshapeLike", "f32->f32"},       /* lowered to Reshape by the host */
        {"CastLike", "f32->i32"},          /* lowered to Cast */
        {"ConcatGrad", "f32->f32"},        /* lowered to Slice */
    };
    char sig[64];

    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        if (!find_kernel_on(f->api, f->device, expected[i][0], expected[i][1]))
            fail_msg("no %s %s", expected[i][0], expected[i][1]);
    for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++)
        if (find_kernel_on(f->api, f->device, missing[i][0], missing[i][1]))
            fail_msg("unexpected %s %s", missing[i][0], missing[i][1]);
    static const char *const movers[] = {"ExpandLike", "ScalarLike", "SliceGrad"};
    for (size_t m = 0; m < sizeof movers / sizeof movers[0]; m++)
        for (size_t d = 0; d < 13; d++) {
            snprintf(sig, sizeof sig, "%s->%s", all13[d], all13[d]);
            if (!find_kernel_on(f->api, f->device, movers[m], sig))
                fail_msg("no %s %s", movers[m], sig);
        }
}

/* Saturating toward zero for integers, round to nearest even for the half floats. */
static void scalar_like_converts_its_value_as_cast_does(void **state) {
    fixture_t *f = *state;
    unsigned char got[8];
    static const struct {
        uint32_t dtype;
        double value;
        uint64_t want; /* the output's bytes, little-endian, as an integer */
        size_t size;
    } cases[] = {
        {SES_DRV_DTYPE_I8, 1e30, 0x7f, 1},
        {SES_DRV_DTYPE_I8, -1e30, 0x80, 1},
        {SES_DRV_DTYPE_U16, -5.5, 0, 2},
        {SES_DRV_DTYPE_U8, 300.7, 255, 1},
        {I32, NAN, 0, 4},
        {I64, -2.9, UINT64_C(0xfffffffffffffffe), 8},
        {SES_DRV_DTYPE_U64, 1e30, UINT64_MAX, 8},
        {SES_DRV_DTYPE_BF16, 1.0, 0x3f80, 2},
        {SES_DRV_DTYPE_F16, 65520.0, 0x7c00, 2}, /* halfway past the largest: even is inf */
        {SES_DRV_DTYPE_F16, -0.5, 0xb800, 2},
        {SES_DRV_DTYPE_F16, 1e-7, 0x0002, 2}, /* subnormal */
        {BOOL, -0.25, 1, 1},
    };
    char sig[32];

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *name = cases[i].dtype == BOOL ? "bool"
                           : cases[i].dtype == I32 ? "i32"
                           : cases[i].dtype == I64 ? "i64"
                           : cases[i].dtype == SES_DRV_DTYPE_I8 ? "i8"
                           : cases[i].dtype == SES_DRV_DTYPE_U8 ? "u8"
                           : cases[i].dtype == SES_DRV_DTYPE_U16 ? "u16"
                           : cases[i].dtype == SES_DRV_DTYPE_U64 ? "u64"
                           : cases[i].dtype == SES_DRV_DTYPE_BF16 ? "bf16"
                                                                  : "f16";
        const test_attr_t value[] = {A_FLOAT("value", cases[i].value), A_END};
        uint64_t v = 0;
        snprintf(sig, sizeof sig, "%s->%s", name, name);
        /* like gives the dtype only; an empty one will do. */
        targ_t in = tensor(cases[i].dtype, NULL, 1, 0);
        memset(got, 0, sizeof got);
        RUN_OK(f, "ScalarLike", sig, value, 1, &in, tensor(cases[i].dtype, NULL, 0), got);
        memcpy(&v, got, cases[i].size);
        if (v != cases[i].want)
            fail_msg("ScalarLike %s of %g: got 0x%llx, want 0x%llx", name, cases[i].value,
                     (unsigned long long)v, (unsigned long long)cases[i].want);
    }
}

/* What the host never passes is still refused, naming the node and both sides. */
static void gradient_kernels_refuse_shapes_and_attributes_that_do_not_fit(void **state) {
    fixture_t *f = *state;
    const float data[12] = {0};
    f->name = "g";

    /* ExpandLike: the input must broadcast to the output. */
    targ_t x23 = tensor(F32, data, 2, 2, 3);
    assert_int_equal(run(f, "ExpandLike", "f32->f32", NULL, 1, &x23, tensor(F32, NULL, 1, 3), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "ExpandLike \"g\"");
    assert_message_contains(f, "input 0 is [2,3], output is [3]");
    /* ReduceSumLike: the output must broadcast to the input. */
    assert_int_equal(
        run(f, "ReduceSumLike", "f32->f32", NULL, 1, &x23, tensor(F32, NULL, 1, 2), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "input 0 is [2,3], output is [2]");
    /* ScalarLike gives a scalar. */
    const test_attr_t one[] = {A_FLOAT("value", 1.0), A_END};
    assert_int_equal(run(f, "ScalarLike", "f32->f32", one, 1, &x23, tensor(F32, NULL, 1, 1), NULL),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "must be a scalar");
    /* ReluGrad: one shape for all three. */
    targ_t two[2] = {tensor(F32, data, 2, 2, 3), tensor(F32, data, 1, 6)};
    assert_int_equal(
        run(f, "ReluGrad", "f32,f32->f32", NULL, 2, two, tensor(F32, NULL, 2, 2, 3), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "input 0 is [2,3], input 1 is [6], output is [2,3]");
    /* SoftmaxGrad: a normalized axis. */
    targ_t same[2] = {tensor(F32, data, 2, 2, 3), tensor(F32, data, 2, 2, 3)};
    const test_attr_t far[] = {A_INT("axis", -1), A_END};
    assert_int_equal(
        run(f, "SoftmaxGrad", "f32,f32->f32", far, 2, same, tensor(F32, NULL, 2, 2, 3), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "attribute axis is -1");
    /* MatMulGrad: input 0 or 1, dy of the product's shape, the output of the operand's. */
    targ_t mm[3] = {tensor(F32, data, 2, 2, 2), tensor(F32, data, 2, 2, 3),
                    tensor(F32, data, 2, 3, 2)};
    const test_attr_t in2[] = {A_INT("input", 2), A_END}, in0[] = {A_INT("input", 0), A_END};
    assert_int_equal(
        run(f, "MatMulGrad", "f32,f32,f32->f32", in2, 3, mm, tensor(F32, NULL, 2, 2, 3), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "attribute input is 2");
    assert_int_equal(
        run(f, "MatMulGrad", "f32,f32,f32->f32", in0, 3, mm, tensor(F32, NULL, 2, 3, 2), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "output is [3,2], but the gradient of input 1 is [2,3]");
    mm[0] = tensor(F32, data, 2, 2, 3);
    assert_int_equal(
        run(f, "MatMulGrad", "f32,f32,f32->f32", in0, 3, mm, tensor(F32, NULL, 2, 2, 3), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "input 0 (dy) is [2,3], but input 1 [2,3] times input 2 [3,2] is [2,2]");
    /* ReduceGrad: sorted axes, and a dy that is the output reduced over them. */
    targ_t dy21 = tensor(F32, data, 2, 2, 1);
    const test_attr_t unsorted[] = {A_INTS("axes", 1, 0), A_END};
    assert_int_equal(
        run(f, "ReduceGrad", "f32->f32", unsorted, 1, &dy21, tensor(F32, NULL, 2, 2, 3), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "attribute axes is [1,0]");
    const test_attr_t axis0[] = {A_INTS("axes", 0), A_END};
    assert_int_equal(
        run(f, "ReduceGrad", "f32->f32", axis0, 1, &dy21, tensor(F32, NULL, 2, 2, 3), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "input 0 (dy) is [2,1], but the output [2,3] reduced over axes [0]");
    /* GatherGrad: dy of the gather's shape. */
    targ_t gg[2] = {tensor(F32, data, 2, 2, 2), tensor(I64, (const int64_t[]){0, 1, 2}, 1, 3)};
    assert_int_equal(
        run(f, "GatherGrad", "f32,i64->f32", NULL, 2, gg, tensor(F32, NULL, 2, 4, 2), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "input 0 (dy) is [2,2]");
    /* SliceGrad: every start and step fits its dim. */
    targ_t dy = tensor(F32, data, 2, 2, 2);
    const test_attr_t past[] = {A_INTS("starts", 0, 2), A_INTS("steps", 1, 1), A_END};
    assert_int_equal(
        run(f, "SliceGrad", "f32->f32", past, 1, &dy, tensor(F32, NULL, 2, 2, 3), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "SliceGrad \"g\": axis 1: 2 elements from 2 by step 1 do not fit");
    const test_attr_t short_starts[] = {A_INTS("starts", 0), A_INTS("steps", 1), A_END};
    assert_int_equal(
        run(f, "SliceGrad", "f32->f32", short_starts, 1, &dy, tensor(F32, NULL, 2, 2, 3), NULL),
        SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "expected one start and step per output axis");
}

/* A broadcast copy or a scatter cannot write over the input it reads; ScalarLike may. */
static void gradient_kernels_refuse_an_output_over_their_input_but_scalar_like(void **state) {
    fixture_t *f = *state;
    ses_drv_buffer_t *arena = NULL;
    float init[16] = {0}, got;

    assert_int_equal(f->api->alloc(f->device, sizeof init, SES_DRV_MEM_DEVICE, &arena), SES_DRV_OK);
    assert_int_equal(f->api->copy_h2d(f->device, NULL, init, arena, 0, sizeof init), SES_DRV_OK);
    targ_t row[1] = {tensor(F32, NULL, 1, 4)};
    f->name = "over";
    assert_int_equal(run_in_arena(f, arena, "ExpandLike", "f32->f32", NULL, 1, row,
                                  (const uint64_t[]){0}, tensor(F32, NULL, 2, 2, 4), 0),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "ExpandLike \"over\"");
    assert_message_contains(f, "cannot run in place");
    const test_attr_t value[] = {A_FLOAT("value", 4.5), A_END};
    assert_int_equal(run_in_arena(f, arena, "ScalarLike", "f32->f32", value, 1, row,
                                  (const uint64_t[]){0}, tensor(F32, NULL, 0), 4),
                     SES_DRV_OK);
    assert_int_equal(f->api->copy_d2h(f->device, NULL, arena, 4, &got, sizeof got), SES_DRV_OK);
    assert_true(got == 4.5f);
    f->api->free(f->device, arena);
}

/* ---------------------------------------------------------------------------------------------
 * The thread pool
 * ------------------------------------------------------------------------------------------- */

/* The threads of this process, from /proc/self/task; 0 where that is not readable. */
static int count_threads(void) {
    DIR *dir = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;

    if (!dir)
        return 0;
    while ((e = readdir(dir)))
        if (e->d_name[0] != '.')
            n++;
    closedir(dir);
    return n;
}

static void sleep_ms(long ms) {
    struct timespec t = {0, ms * 1000000L};
    nanosleep(&t, NULL);
}

/*
 * The thread count once it stops changing: a thread that pthread_join has returned for can
 * still be listed for a moment while the kernel tears it down.
 */
static int settled_threads(void) {
    int last = count_threads();
    for (int i = 0; i < 100; i++) {
        sleep_ms(10);
        int now = count_threads();
        if (now == last)
            return now;
        last = now;
    }
    return last;
}

/* Waits up to 2 s for the thread count to become @p want; returns the last count seen. */
static int wait_for_threads(int want) {
    int n = count_threads();
    for (int i = 0; i < 200 && n != want; i++) {
        sleep_ms(10);
        n = count_threads();
    }
    return n;
}

/* A driver instance whose device pool has @p threads threads. */
typedef struct pooled {
    kernel_host_ctx_t ctx;
    ses_drv_driver_t *driver;
    ses_drv_device_t *device;
} pooled_t;

/* Opens a driver instance with options threads and gemm (NULL: unset); returns open's status. */
static int32_t try_open_pooled(fixture_t *f, pooled_t *p, const char *threads, const char *gemm) {
    memset(p, 0, sizeof *p);
    p->ctx.threads = threads;
    p->ctx.gemm = gemm;
    int32_t st = f->api->open(&option_host, &p->ctx.base, &p->driver);
    if (st != SES_DRV_OK)
        return st;
    if (f->api->open_device(p->driver, 0, &p->device) != SES_DRV_OK)
        fail_msg("open_device with %s threads: %s", threads, p->ctx.base.message);
    return SES_DRV_OK;
}

static void open_pooled(fixture_t *f, pooled_t *p, const char *threads) {
    memset(p, 0, sizeof *p);
    p->ctx.threads = threads;
    assert_int_equal(f->api->open(&option_host, &p->ctx.base, &p->driver), SES_DRV_OK);
    if (f->api->open_device(p->driver, 0, &p->device) != SES_DRV_OK)
        fail_msg("open_device with %s threads: %s", threads, p->ctx.base.message);
}

static void close_pooled(fixture_t *f, pooled_t *p) {
    f->api->close_device(p->device);
    f->api->close(p->driver);
}

/* Fills @p n floats with values in [-1, 1) from a small LCG seeded with @p seed. */
static void fill_random(float *v, size_t n, uint32_t seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = (float)((double)(seed >> 8) / 8388608.0 - 1.0);
    }
}

/* max |got - want| / max |want| over @p n values */
static double relative_error(const float *want, const float *got, size_t n) {
    double err = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)want[i]);
        err = d > err ? d : err;
        scale = fabs((double)want[i]) > scale ? fabs((double)want[i]) : scale;
    }
    return scale > 0 ? err / scale : err;
}

/*
 * f32 GEMMs on oneDNN (option driver.cpu.gemm=onednn), cut into blocks of rows or columns over
 * a pool of 4 threads, agree with OpenBLAS on one thread: MatMul and Gemm with both transposes,
 * C, alpha and beta, at shapes that split by rows and by columns, with a last block shorter
 * than the others, and too small to split at all.
 */
static void f32_gemms_on_onednn_agree_with_openblas(void **state) {
    fixture_t *f = *state;
    pooled_t ref, dnn;
    static const int shapes[][3] = {/* m, k, n */
                                    {1, 7, 3},     {64, 784, 256}, {300, 33, 5},
                                    {17, 129, 700}, {130, 64, 65},  {257, 300, 190}};

    if (try_open_pooled(f, &dnn, "4", "onednn") != SES_DRV_OK) {
        print_message("skipped: oneDNN is not usable here: %s\n", dnn.ctx.base.message);
        skip();
    }
    /* Opened last, so OpenBLAS's process-wide count is this device's 1: its own threads are
     * not instrumented for ThreadSanitizer. */
    assert_int_equal(try_open_pooled(f, &ref, "1", "openblas"), SES_DRV_OK);
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const int m = shapes[s][0], k = shapes[s][1], n = shapes[s][2];
        float *a = malloc(sizeof(float) * (size_t)m * k);
        float *b = malloc(sizeof(float) * (size_t)k * n);
        float *c = malloc(sizeof(float) * (size_t)m * n);
        float *want = malloc(sizeof(float) * (size_t)m * n);
        float *got = malloc(sizeof(float) * (size_t)m * n);
        assert_true(a && b && c && want && got);
        fill_random(a, (size_t)m * k, 1u + (uint32_t)s);
        fill_random(b, (size_t)k * n, 7u + (uint32_t)s);
        fill_random(c, (size_t)m * n, 13u + (uint32_t)s);

        targ_t mm[2] = {tensor(F32, a, 2, m, k), tensor(F32, b, 2, k, n)};
        assert_int_equal(run_on(f->api, ref.device, 0, "mm", "MatMul", "f32,f32->f32", NULL, 2, mm,
                                tensor(F32, NULL, 2, m, n), want),
                         SES_DRV_OK);
        assert_int_equal(run_on(f->api, dnn.device, 0, "mm", "MatMul", "f32,f32->f32", NULL, 2, mm,
                                tensor(F32, NULL, 2, m, n), got),
                         SES_DRV_OK);
        if (relative_error(want, got, (size_t)m * n) > 1e-5)
            fail_msg("MatMul %dx%dx%d: oneDNN differs from OpenBLAS by %g", m, k, n,
                     relative_error(want, got, (size_t)m * n));

        /* The same operands read transposed: A as [k, m], B as [n, k]. */
        for (int t = 0; t < 4; t++) {
            const int ta = t & 1, tb = (t >> 1) & 1;
            test_attr_t attrs[] = {A_INT("transA", ta), A_INT("transB", tb),
                                   A_FLOAT("alpha", 0.5), A_FLOAT("beta", -2.0), A_END};
            targ_t g[3] = {ta ? tensor(F32, a, 2, k, m) : tensor(F32, a, 2, m, k),
                           tb ? tensor(F32, b, 2, n, k) : tensor(F32, b, 2, k, n),
                           tensor(F32, c, 2, m, n)};
            assert_int_equal(run_on(f->api, ref.device, 0, "g", "Gemm", "f32,f32,f32->f32", attrs,
                                    3, g, tensor(F32, NULL, 2, m, n), want),
                             SES_DRV_OK);
            assert_int_equal(run_on(f->api, dnn.device, 0, "g", "Gemm", "f32,f32,f32->f32", attrs,
                                    3, g, tensor(F32, NULL, 2, m, n), got),
                             SES_DRV_OK);
            if (relative_error(want, got, (size_t)m * n) > 1e-5)
                fail_msg("Gemm %dx%dx%d transA %d transB %d: oneDNN differs from OpenBLAS by %g",
                         m, k, n, ta, tb, relative_error(want, got, (size_t)m * n));
        }
        free(a);
        free(b);
        free(c);
        free(want);
        free(got);
    }
    close_pooled(f, &dnn);
    close_pooled(f, &ref);
}

/* Option driver.cpu.gemm takes auto, onednn or openblas, and names them when it is anything
 * else. */
static void the_gemm_option_refuses_an_unknown_library(void **state) {
    fixture_t *f = *state;
    pooled_t p;

    assert_int_equal(try_open_pooled(f, &p, "1", "mkl"), SES_DRV_INVALID_ARGUMENT);
    assert_non_null(strstr(p.ctx.base.message, "driver.cpu.gemm is \"mkl\""));
    assert_non_null(strstr(p.ctx.base.message, "auto"));
    assert_non_null(strstr(p.ctx.base.message, "onednn or openblas"));
}

/*
 * Conv's state keeps the im2col path's column matrices between launches and grows them when a
 * launch needs more: one state through images of 5x5, 11x11 (by images, on the pool), 4x4 and
 * 11x11 gives each the values of a launch without state.
 */
static void conv_state_keeps_and_grows_its_scratch(void **state) {
    fixture_t *f = *state;
    static const int sizes[][2] = {{1, 5}, {2, 11}, {1, 4}, {2, 11}}; /* batch, side */
    float w[4 * 3 * 9];
    test_attr_t attrs[] = {A_INTS("kernel_shape", 3, 3), A_INTS("strides", 1, 1),
                           A_INTS("dilations", 1, 1),  A_INTS("pads", 1, 1, 1, 1),
                           A_INT("group", 1),          A_END};
    void *conv_state = NULL;
    const ses_drv_kernel_t *k = find_kernel_on(f->api, f->device, "Conv", "f32,f32->f32");

    assert_non_null(k);
    assert_non_null(k->create);
    fill_random(w, sizeof w / sizeof w[0], 3u);
    for (size_t r = 0; r < sizeof sizes / sizeof sizes[0]; r++) {
        const int n = sizes[r][0], side = sizes[r][1];
        const size_t nx = (size_t)n * 3 * side * side, ny = (size_t)n * 4 * side * side;
        float *x = malloc(nx * sizeof *x), *want = malloc(ny * sizeof *want);
        float *got = malloc(ny * sizeof *got);
        assert_true(x && want && got);
        fill_random(x, nx, 11u + (uint32_t)r);
        targ_t in[2] = {tensor(F32, x, 4, n, 3, side, side), tensor(F32, w, 4, 4, 3, 3, 3)};
        RUN_OK(f, "Conv", "f32,f32->f32", attrs, 2, in, tensor(F32, NULL, 4, n, 4, side, side),
               want);
        kept_state = &conv_state;
        int32_t st = run(f, "Conv", "f32,f32->f32", attrs, 2, in,
                         tensor(F32, NULL, 4, n, 4, side, side), got);
        kept_state = NULL;
        if (st != SES_DRV_OK)
            fail_msg("Conv with a kept state, %dx%d: %s", side, side, f->ctx.base.message);
        assert_non_null(conv_state);
        assert_memory_equal(want, got, ny * sizeof *got);
        free(x);
        free(want);
        free(got);
    }
    k->destroy(f->device, conv_state);
}

/* Option driver.cpu.spin_us: idle workers spin 0 to 100000 us before they sleep; the pool's
 * results do not depend on it, and anything else is refused naming the option. */
static void the_pools_spin_time_is_an_option_that_changes_no_result(void **state) {
    fixture_t *f = *state;
    static const char *const good[] = {"0", "200", " 100000 "};
    static const char *const bad[] = {"abc", "100001", "-1", "", "5us"};
    enum { N = 1 << 16 };
    float *x = malloc(N * sizeof *x), *want = malloc(N * sizeof *want),
          *got = malloc(N * sizeof *got);

    assert_true(x && want && got);
    fill_random(x, N, 5u);
    targ_t in[1] = {tensor(F32, x, 1, N)};
    RUN_OK(f, "Sigmoid", "f32->f32", NULL, 1, in, tensor(F32, NULL, 1, N), want);
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        pooled_t p;
        memset(&p, 0, sizeof p);
        p.ctx.threads = "4";
        p.ctx.spin_us = good[i];
        assert_int_equal(f->api->open(&option_host, &p.ctx.base, &p.driver), SES_DRV_OK);
        if (f->api->open_device(p.driver, 0, &p.device) != SES_DRV_OK)
            fail_msg("spin_us \"%s\": %s", good[i], p.ctx.base.message);
        for (int r = 0; r < 3; r++) {
            assert_int_equal(run_on(f->api, p.device, 0, "s", "Sigmoid", "f32->f32", NULL, 1, in,
                                    tensor(F32, NULL, 1, N), got),
                             SES_DRV_OK);
            assert_memory_equal(want, got, N * sizeof *got);
        }
        close_pooled(f, &p);
    }
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        kernel_host_ctx_t ctx;
        ses_drv_driver_t *driver = NULL;
        ses_drv_device_t *dev = NULL;
        memset(&ctx, 0, sizeof ctx);
        ctx.spin_us = bad[i];
        assert_int_equal(f->api->open(&option_host, &ctx.base, &driver), SES_DRV_OK);
        assert_int_equal(f->api->open_device(driver, 0, &dev), SES_DRV_INVALID_ARGUMENT);
        assert_null(dev);
        if (!strstr(ctx.base.message, "driver.cpu.spin_us"))
            fail_msg("spin_us \"%s\": the message does not name the option: %s", bad[i],
                     ctx.base.message);
        f->api->close(driver);
    }
    free(x);
    free(want);
    free(got);
}

static void open_device_starts_its_pool_and_close_device_joins_it(void **state) {
    fixture_t *f = *state;
    pooled_t p;

    /* OpenBLAS is sized to each pool (it shares the pool's thread count) and starts its own
     * workers when asked for more, keeping them for good: size it once before counting. */
    open_pooled(f, &p, "4");
    close_pooled(f, &p);
    int before = settled_threads();
    if (before == 0)
        skip();
    open_pooled(f, &p, "4");
    /* The caller is one of the four; three workers wait for work. */
    assert_int_equal(wait_for_threads(before + 3), before + 3);
    close_pooled(f, &p);
    assert_int_equal(wait_for_threads(before), before);
    open_pooled(f, &p, "1");
    assert_int_equal(settled_threads(), before);
    close_pooled(f, &p);
}

static void open_device_refuses_a_thread_count_that_is_not_a_number(void **state) {
    fixture_t *f = *state;
    pooled_t p;
    ses_drv_device_t *dev = (ses_drv_device_t *)(uintptr_t)1;

    memset(&p, 0, sizeof p);
    p.ctx.threads = "four";
    assert_int_equal(f->api->open(&option_host, &p.ctx.base, &p.driver), SES_DRV_OK);
    assert_int_equal(f->api->open_device(p.driver, 0, &dev), SES_DRV_INVALID_ARGUMENT);
    assert_null(dev);
    assert_non_null(strstr(p.ctx.base.message, "driver.cpu.threads"));
    assert_non_null(strstr(p.ctx.base.message, "\"four\""));
    p.ctx.threads = "100000";
    assert_int_equal(f->api->open_device(p.driver, 0, &dev), SES_DRV_INVALID_ARGUMENT);
    /* 0 means one thread per online CPU. */
    p.ctx.threads = " 0 ";
    assert_int_equal(f->api->open_device(p.driver, 0, &dev), SES_DRV_OK);
    f->api->close_device(dev);
    f->api->close(p.driver);
}

/* Runs one node on the pooled device and on the one-thread device; the outputs must be equal
 * bit for bit, since work is split by output element and never inside one reduction. */
static void same_on_both(fixture_t *f, pooled_t *wide, pooled_t *narrow, const char *op,
                         const char *sig, const test_attr_t *attrs, uint32_t n_in, const targ_t *in,
                         targ_t out, void *got_wide, void *got_narrow) {
    int32_t st =
        run_on(f->api, wide->device, f->prepare, "wide", op, sig, attrs, n_in, in, out, got_wide);
    if (st != SES_DRV_OK)
        fail_msg("%s on 4 threads: %s", op, wide->ctx.base.message);
    st = run_on(f->api, narrow->device, f->prepare, "narrow", op, sig, attrs, n_in, in, out,
                got_narrow);
    if (st != SES_DRV_OK)
        fail_msg("%s on 1 thread: %s", op, narrow->ctx.base.message);
    if (memcmp(got_wide, got_narrow, targ_bytes(&out)) != 0)
        fail_msg("%s %s: the pooled result differs from the inline one", op, sig);
}

static void large_kernels_on_the_pool_give_the_inline_result(void **state) {
    fixture_t *f = *state;
    enum { R = 512, C = 768, N = R * C };
    float *x = malloc(N * sizeof(float));
    float *y = malloc(C * sizeof(float));
    float *w = malloc(N * sizeof(float)), *n = malloc(N * sizeof(float));
    int64_t *idx = malloc(R * sizeof(int64_t));
    pooled_t wide, narrow;

    assert_non_null(x);
    assert_non_null(y);
    assert_non_null(w);
    assert_non_null(n);
    assert_non_null(idx);
    for (int i = 0; i < N; i++)
        x[i] = (float)(((int64_t)i * 7919) % 1000) * 0.01f - 5.0f;
    for (int i = 0; i < C; i++)
        y[i] = (float)(i % 17) - 8.0f;
    for (int i = 0; i < R; i++)
        idx[i] = (i * 31) % R - (i % 2 ? R : 0);
    open_pooled(f, &wide, "4");
    open_pooled(f, &narrow, "1");

    targ_t xy[2] = {tensor(F32, x, 2, R, C), tensor(F32, y, 1, C)};
    same_on_both(f, &wide, &narrow, "Add", "f32,f32->f32", NULL, 2, xy, tensor(F32, NULL, 2, R, C),
                 w, n);
    for (int i = 0; i < N; i += 997)
        assert_true(w[i] == x[i] + y[i % C]);
    targ_t xx = tensor(F32, x, 2, R, C);
    same_on_both(f, &wide, &narrow, "Sigmoid", "f32->f32", NULL, 1, &xx, tensor(F32, NULL, 2, R, C),
                 w, n);
    const test_attr_t rows[] = {A_INTS("axes", 1), A_END};
    const test_attr_t cols[] = {A_INTS("axes", 0), A_END};
    same_on_both(f, &wide, &narrow, "ReduceSum", "f32->f32", rows, 1, &xx,
                 tensor(F32, NULL, 2, R, 1), w, n);
    same_on_both(f, &wide, &narrow, "ReduceMax", "f32->f32", cols, 1, &xx,
                 tensor(F32, NULL, 2, 1, C), w, n);
    /* The innermost dim kept, in rows of 8 and in rows longer than a thread's block. */
    const test_attr_t middle[] = {A_INTS("axes", 1), A_END};
    targ_t x3 = tensor(F32, x, 3, 8, 64, 768);
    same_on_both(f, &wide, &narrow, "ReduceMax", "f32->f32", middle, 1, &x3,
                 tensor(F32, NULL, 3, 8, 1, 768), w, n);
    targ_t x4 = tensor(F32, x, 3, 2, 64, 3072);
    same_on_both(f, &wide, &narrow, "ReduceMean", "f32->f32", middle, 1, &x4,
                 tensor(F32, NULL, 3, 2, 1, 3072), w, n);
    for (int o = 0; o < 2; o++)
        for (int c = 0; c < 3072; c += 511) {
            double sum = 0;
            for (int k = 0; k < 64; k++)
                sum += x[(o * 64 + k) * 3072 + c];
            float want_mean = (float)(sum / 64);
            expect_f32(&want_mean, &w[o * 3072 + c], 1, 1e-5);
        }
    const test_attr_t last[] = {A_INT("axis", 1), A_END};
    const test_attr_t first[] = {A_INT("axis", 0), A_END};
    same_on_both(f, &wide, &narrow, "Softmax", "f32->f32", last, 1, &xx, tensor(F32, NULL, 2, R, C),
                 w, n);
    same_on_both(f, &wide, &narrow, "LogSoftmax", "f32->f32", first, 1, &xx,
                 tensor(F32, NULL, 2, R, C), w, n);
    const test_attr_t swap[] = {A_INTS("perm", 1, 0), A_END};
    same_on_both(f, &wide, &narrow, "Transpose", "f32->f32", swap, 1, &xx,
                 tensor(F32, NULL, 2, C, R), w, n);
    for (int i = 0; i < N; i += 1009)
        assert_true(w[(i % C) * R + i / C] == x[i]);
    targ_t gi[2] = {tensor(F32, x, 2, R, C), tensor(I64, idx, 1, R)};
    same_on_both(f, &wide, &narrow, "Gather", "f32,i64->f32", first, 2, gi,
                 tensor(F32, NULL, 2, R, C), w, n);
    targ_t halves[2] = {tensor(F32, x, 2, R, C / 2), tensor(F32, x + N / 2, 2, R, C / 2)};
    same_on_both(f, &wide, &narrow, "Concat", "f32...->f32", last, 2, halves,
                 tensor(F32, NULL, 2, R, C), w, n);
    const test_attr_t am[] = {A_INT("axis", 1), A_INT("keepdims", 0), A_END};
    same_on_both(f, &wide, &narrow, "ArgMax", "f32->i64", am, 1, &xx, tensor(I64, NULL, 1, R), w,
                 n);

    close_pooled(f, &wide);
    close_pooled(f, &narrow);
    free(x);
    free(y);
    free(w);
    free(n);
    free(idx);
}

/* Conv and ConvGrad by images (each image and group a task on the pool, with a single-threaded
 * GEMM and its thread's own column matrix): Y and dX are one thread's bit for bit; dW, summed per
 * thread then across, within f32 rounding. Under ThreadSanitizer this checks the tasks' scratch
 * and the per-thread dW. */
static void conv_by_images_on_the_pool_gives_the_inline_result(void **state) {
    fixture_t *f = *state;
    enum { N = 8, C = 8, H = 10, M = 16 };
    static float x[N * C * H * H], w[M * C * 9], b[M], dy[N * M * H * H];
    static float y1[N * M * H * H], y4[N * M * H * H], dx1[N * C * H * H], dx4[N * C * H * H];
    pooled_t wide, narrow;

    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
        x[i] = (float)((int64_t)(i * 7919) % 1000) * 0.002f - 1.0f;
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
        w[i] = (float)((int64_t)(i * 104729) % 1000) * 0.002f - 1.0f;
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        b[i] = (float)i * 0.1f - 0.8f;
    for (size_t i = 0; i < sizeof dy / sizeof dy[0]; i++)
        dy[i] = (float)((int64_t)(i * 31) % 97) * 0.02f - 1.0f;
    open_pooled(f, &wide, "4");
    open_pooled(f, &narrow, "1");
    for (int64_t group = 1; group <= 2; group++) {
        const test_attr_t conv[] = {A_INTS("kernel_shape", 3, 3), A_INTS("strides", 1, 1),
                                    A_INTS("dilations", 1, 1),  A_INTS("pads", 1, 1, 1, 1),
                                    A_INT("group", group),      A_END};
        const test_attr_t grad_x[] = {A_INTS("kernel_shape", 3, 3),
                                      A_INTS("strides", 1, 1),
                                      A_INTS("dilations", 1, 1),
                                      A_INTS("pads", 1, 1, 1, 1),
                                      A_INT("group", group),
                                      A_INT("input", 0),
                                      A_END};
        const test_attr_t grad_w[] = {A_INTS("kernel_shape", 3, 3),
                                      A_INTS("strides", 1, 1),
                                      A_INTS("dilations", 1, 1),
                                      A_INTS("pads", 1, 1, 1, 1),
                                      A_INT("group", group),
                                      A_INT("input", 1),
                                      A_END};
        const int64_t cg = C / group;
        targ_t in[3] = {tensor(F32, x, 4, N, C, H, H), tensor(F32, w, 4, M, cg, 3, 3),
                        tensor(F32, b, 1, M)};
        same_on_both(f, &wide, &narrow, "Conv", "f32,f32,f32->f32", conv, 3, in,
                     tensor(F32, NULL, 4, N, M, H, H), y4, y1);
        targ_t gin[3] = {tensor(F32, dy, 4, N, M, H, H), tensor(F32, x, 4, N, C, H, H),
                         tensor(F32, w, 4, M, cg, 3, 3)};
        same_on_both(f, &wide, &narrow, "ConvGrad", "f32,f32,f32->f32", grad_x, 3, gin,
                     tensor(F32, NULL, 4, N, C, H, H), dx4, dx1);
        float dw1[M * C * 9], dw4[M * C * 9];
        RUN_OK(f, "ConvGrad", "f32,f32,f32->f32", grad_w, 3, gin, tensor(F32, NULL, 4, M, cg, 3, 3),
               dw1);
        int32_t st = run_on(f->api, wide.device, f->prepare, "wide", "ConvGrad",
                            "f32,f32,f32->f32", grad_w, 3, gin, tensor(F32, NULL, 4, M, cg, 3, 3),
                            dw4);
        if (st != SES_DRV_OK)
            fail_msg("ConvGrad dW on 4 threads: %s", wide.ctx.base.message);
        expect_f32(dw1, dw4, (size_t)(M * cg * 9), 1e-4);
    }
    close_pooled(f, &wide);
    close_pooled(f, &narrow);
}

static void a_batched_matmul_stops_when_the_host_cancels(void **state) {
    fixture_t *f = *state;
    pooled_t p;
    float got[4];
    const float a[4] = {1, 2, 3, 4};
    /* [4,1,1] x [1,1] would be one stacked GEMM; a batched b makes one GEMM per matrix. */
    targ_t in[2] = {tensor(F32, a, 3, 4, 1, 1), tensor(F32, a, 3, 4, 1, 1)};

    open_pooled(f, &p, "1");
    assert_int_equal(run_on(f->api, p.device, 0, "mm", "MatMul", "f32,f32->f32", NULL, 2, in,
                            tensor(F32, NULL, 3, 4, 1, 1), got),
                     SES_DRV_OK);
    expect_f32((const float[]){1, 4, 9, 16}, got, 4, 0);
    p.ctx.abort = 1;
    assert_int_equal(run_on(f->api, p.device, 0, "mm", "MatMul", "f32,f32->f32", NULL, 2, in,
                            tensor(F32, NULL, 3, 4, 1, 1), got),
                     SES_DRV_CANCELLED);
    assert_non_null(strstr(p.ctx.base.message, "MatMul \"mm\": cancelled"));
    close_pooled(f, &p);
}

/* Several host threads computing on one device at once share its pool or run inline. */
typedef struct worker_arg {
    const ses_drv_api_t *api;
    ses_drv_device_t *device;
    const float *x;
    int rounds;
    int prepare; /* each round creates a state for its node, as a plan would */
    int failures;
} worker_arg_t;

static void *concurrent_worker(void *p) {
    worker_arg_t *w = p;
    enum { N = 1 << 17 };
    float *out = malloc(N * sizeof(float));
    const float two[1] = {2.0f};

    if (!out) {
        w->failures++;
        return NULL;
    }
    for (int r = 0; r < w->rounds; r++) {
        /* The host's error slot is shared; only the codes are looked at here. */
        ses_drv_tensor_desc_t d[3];
        int64_t dims[1] = {N};
        int64_t none[1] = {0};
        ses_drv_buffer_t *a = NULL, *b = NULL, *o = NULL;
        if (w->api->alloc(w->device, N * sizeof(float), 0, &a) != SES_DRV_OK ||
            w->api->alloc(w->device, sizeof(float), 0, &b) != SES_DRV_OK ||
            w->api->alloc(w->device, N * sizeof(float), 0, &o) != SES_DRV_OK) {
            w->failures++;
            break;
        }
        w->api->copy_h2d(w->device, NULL, w->x, a, 0, N * sizeof(float));
        w->api->copy_h2d(w->device, NULL, two, b, 0, sizeof(float));
        memset(d, 0, sizeof d);
        for (int i = 0; i < 3; i++) {
            d[i].struct_size = sizeof d[i];
            d[i].dtype = F32;
            d[i].rank = i == 1 ? 0 : 1;
            d[i].dims = i == 1 ? none : dims;
        }
        ses_drv_node_t node;
        memset(&node, 0, sizeof node);
        node.struct_size = sizeof node;
        node.op = "Mul";
        node.name = "scale";
        node.n_inputs = 2;
        node.n_outputs = 1;
        node.inputs = d;
        node.outputs = &d[2];
        ses_drv_buffer_t *ins[2] = {a, b};
        uint64_t offs[2] = {0, 0};
        ses_drv_launch_t launch;
        memset(&launch, 0, sizeof launch);
        launch.struct_size = sizeof launch;
        launch.node = &node;
        launch.inputs = ins;
        launch.input_offsets = offs;
        launch.outputs = &o;
        launch.output_offsets = offs;
        const ses_drv_kernel_t *k = NULL;
        const ses_drv_kernel_t *table = NULL;
        uint32_t count = 0, stride = 0;
        w->api->get_kernels(w->device, &table, &count, &stride);
        for (uint32_t i = 0; i < count && !k; i++) {
            const ses_drv_kernel_t *e = kernel_at(table, stride, i);
            if (strcmp(e->op, "Mul") == 0 && strcmp(e->signature, "f32,f32->f32") == 0)
                k = e;
        }
        if (!k || compute_as_host(k, w->device, w->prepare, &launch) != SES_DRV_OK)
            w->failures++;
        else {
            w->api->copy_d2h(w->device, NULL, o, 0, out, N * sizeof(float));
            for (int i = 0; i < N; i++)
                if (out[i] != 2.0f * w->x[i]) {
                    w->failures++;
                    break;
                }
        }
        w->api->free(w->device, a);
        w->api->free(w->device, b);
        w->api->free(w->device, o);
    }
    free(out);
    return NULL;
}

static void kernels_called_from_several_threads_at_once_all_compute_correctly(void **state) {
    fixture_t *f = *state;
    enum { THREADS = 4, N = 1 << 17 };
    pthread_t threads[THREADS];
    worker_arg_t args[THREADS];
    pooled_t p;
    float *x = malloc(N * sizeof(float));

    assert_non_null(x);
    for (int i = 0; i < N; i++)
        x[i] = (float)(i % 1000) - 500.0f;
    open_pooled(f, &p, "3");
    for (int t = 0; t < THREADS; t++) {
        args[t] = (worker_arg_t){f->api, p.device, x, 20, f->prepare, 0};
        assert_int_equal(pthread_create(&threads[t], NULL, concurrent_worker, &args[t]), 0);
    }
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        assert_int_equal(args[t].failures, 0);
    }
    close_pooled(f, &p);
    free(x);
}

/* ---------------------------------------------------------------------------------------------
 * Runner
 * ------------------------------------------------------------------------------------------- */

#define TEST(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
/* The same test again with every kernel that has a create prepared first, as in a plan. */
#define TEST_PREPARED(fn) \
    { #fn " (prepared)", fn, setup_prepared, teardown, NULL }

int main(void) {
    const struct CMUnitTest tests[] = {
        TEST(the_kernel_table_has_no_duplicate_op_and_signature_pairs),
        TEST(every_table_entry_is_well_formed),
        TEST(the_table_offers_every_op_of_the_contract_at_its_dtypes),
        TEST(a_launch_whose_dtypes_differ_from_the_entry_is_refused_naming_both),
        TEST(outputs_may_overlap_inputs_only_where_the_op_computes_through_it),
        TEST(shape_only_ops_copy_the_bytes_unchanged_at_every_dtype),
        TEST(copies_handle_scalars_and_empty_tensors),
        TEST(reshape_refuses_an_output_with_another_element_count),
        TEST(arithmetic_on_equal_shapes_computes_elementwise_in_f32_and_f64),
        TEST(float_division_by_zero_gives_infinity_not_an_error),
        TEST(arithmetic_broadcasts_rows_columns_and_outer_products),
        TEST(arithmetic_works_on_scalars_and_zero_size_tensors),
        TEST(integer_arithmetic_wraps_and_division_truncates_toward_zero),
        TEST(integer_division_by_zero_is_refused_naming_the_node),
        TEST(arithmetic_refuses_shapes_that_do_not_broadcast_naming_all_of_them),
        TEST(comparisons_give_bools_with_broadcasting_and_nan_unequal),
        TEST(where_selects_with_three_way_broadcasting_at_each_width),
        TEST(unary_float_ops_match_libm_in_f32_and_f64),
        TEST(sigmoid_and_softplus_stay_finite_for_large_inputs),
        TEST(leaky_relu_reads_alpha_and_integer_unary_ops_wrap),
        TEST(sign_round_is_nan_and_is_inf_handle_zeros_halves_and_infinities),
        TEST(logic_ops_broadcast_and_read_any_nonzero_byte_as_true),
        TEST(mod_takes_the_divisors_sign_or_with_fmod_the_dividends),
        TEST(bit_shift_moves_bits_either_way_and_gives_zero_past_the_width),
        TEST(min_and_max_fold_any_number_of_inputs_with_broadcasting),
        TEST(unary_ops_handle_scalars_and_empty_tensors_and_refuse_other_shapes),
        TEST(cast_truncates_toward_zero_and_maps_bools_to_0_and_1),
        TEST(cast_refuses_a_to_attribute_that_disagrees_with_the_output),
        TEST(matmul_multiplies_matrices_in_f32_and_f64),
        TEST(matmul_promotes_one_dimensional_operands_and_drops_the_added_dim),
        TEST(matmul_broadcasts_batch_dims_against_a_naive_loop),
        TEST(matmul_with_an_empty_inner_dim_gives_zeros_and_empty_outputs_are_no_ops),
        TEST(matmul_refuses_inner_dimensions_that_differ_naming_both_shapes),
        TEST(gemm_applies_transposes_alpha_beta_and_broadcasts_c),
        TEST(gemm_refuses_a_c_that_does_not_broadcast_to_the_output),
        TEST(reduce_sum_over_one_axis_with_and_without_keepdims),
        TEST(reduce_over_every_combination_of_axes_matches_a_naive_loop),
        TEST(reduce_max_propagates_nan_and_reduce_mean_divides_by_the_count),
        TEST(reducing_an_empty_axis_sums_to_zero_averages_to_nan_and_has_no_max),
        TEST(reductions_refuse_bad_axes_and_wrong_output_shapes),
        TEST(softmax_normalizes_along_the_axis_without_overflow),
        TEST(argmax_returns_the_first_or_last_index_of_the_largest),
        TEST(argmin_returns_the_first_or_last_index_of_the_smallest),
        TEST(the_other_reductions_match_their_definitions),
        TEST(reduce_log_sum_exp_is_stable_and_size_one_axes_still_map),
        TEST(the_other_reductions_of_an_empty_axis),
        TEST(transpose_permutes_axes_at_every_element_width),
        TEST(transpose_of_large_batched_matrices_matches_index_arithmetic),
        TEST(transpose_refuses_a_perm_that_is_not_a_permutation),
        TEST(concat_joins_inputs_along_the_axis),
        TEST(slice_takes_forward_backward_and_strided_ranges),
        TEST(gather_picks_along_the_axis_with_negative_indices),
        TEST(gather_refuses_an_index_out_of_range_naming_node_index_and_dim),
        TEST(gather_and_scatter_elements_index_along_the_axis),
        TEST(gather_nd_and_scatter_nd_move_blocks),
        TEST(one_hot_trilu_cumsum_and_hardmax_compute_like_onnx),
        TEST(gradient_kernels_are_offered_at_their_dtypes),
        TEST(scalar_like_converts_its_value_as_cast_does),
        TEST(gradient_kernels_refuse_shapes_and_attributes_that_do_not_fit),
        TEST(gradient_kernels_refuse_an_output_over_their_input_but_scalar_like),
        TEST(f32_gemms_on_onednn_agree_with_openblas),
        TEST(conv_state_keeps_and_grows_its_scratch),
        TEST(the_pools_spin_time_is_an_option_that_changes_no_result),
        TEST(the_gemm_option_refuses_an_unknown_library),
        TEST(open_device_starts_its_pool_and_close_device_joins_it),
        TEST(open_device_refuses_a_thread_count_that_is_not_a_number),
        TEST(large_kernels_on_the_pool_give_the_inline_result),
        TEST(conv_by_images_on_the_pool_gives_the_inline_result),
        TEST(a_batched_matmul_stops_when_the_host_cancels),
        TEST(kernels_called_from_several_threads_at_once_all_compute_correctly),
        TEST(the_flat_and_the_broadcasting_walk_give_the_same_bits),
        TEST(a_prepared_broadcasting_walk_gives_the_unprepared_result),
        TEST(a_prepared_node_launched_with_other_shapes_is_checked_from_scratch),
        TEST(a_prepared_launch_still_checks_ranges_alignment_and_overlap),
        TEST(create_gives_no_state_to_a_node_its_launches_would_refuse),
        TEST(a_state_made_for_another_entry_is_not_used),
        TEST(a_prepared_integer_division_still_refuses_a_zero_divisor),
        TEST_PREPARED(outputs_may_overlap_inputs_only_where_the_op_computes_through_it),
        TEST_PREPARED(arithmetic_on_equal_shapes_computes_elementwise_in_f32_and_f64),
        TEST_PREPARED(float_division_by_zero_gives_infinity_not_an_error),
        TEST_PREPARED(arithmetic_broadcasts_rows_columns_and_outer_products),
        TEST_PREPARED(arithmetic_works_on_scalars_and_zero_size_tensors),
        TEST_PREPARED(integer_arithmetic_wraps_and_division_truncates_toward_zero),
        TEST_PREPARED(integer_division_by_zero_is_refused_naming_the_node),
        TEST_PREPARED(arithmetic_refuses_shapes_that_do_not_broadcast_naming_all_of_them),
        TEST_PREPARED(comparisons_give_bools_with_broadcasting_and_nan_unequal),
        TEST_PREPARED(where_selects_with_three_way_broadcasting_at_each_width),
        TEST_PREPARED(unary_float_ops_match_libm_in_f32_and_f64),
        TEST_PREPARED(sigmoid_and_softplus_stay_finite_for_large_inputs),
        TEST_PREPARED(leaky_relu_reads_alpha_and_integer_unary_ops_wrap),
        TEST_PREPARED(sign_round_is_nan_and_is_inf_handle_zeros_halves_and_infinities),
        TEST_PREPARED(logic_ops_broadcast_and_read_any_nonzero_byte_as_true),
        TEST_PREPARED(mod_takes_the_divisors_sign_or_with_fmod_the_dividends),
        TEST_PREPARED(bit_shift_moves_bits_either_way_and_gives_zero_past_the_width),
        TEST_PREPARED(min_and_max_fold_any_number_of_inputs_with_broadcasting),
        TEST_PREPARED(unary_ops_handle_scalars_and_empty_tensors_and_refuse_other_shapes),
        TEST_PREPARED(cast_truncates_toward_zero_and_maps_bools_to_0_and_1),
        TEST_PREPARED(cast_refuses_a_to_attribute_that_disagrees_with_the_output),
        TEST_PREPARED(large_kernels_on_the_pool_give_the_inline_result),
        TEST_PREPARED(conv_by_images_on_the_pool_gives_the_inline_result),
        TEST_PREPARED(kernels_called_from_several_threads_at_once_all_compute_correctly),
    };
    return cmocka_run_group_tests_name("cpu_kernels", tests, NULL, NULL);
}
