/*
 * The kernel table of an FPGA device: built from the kernels of its loaded xclbin.
 *
 * Naming rule: a kernel named ses_<op>_<dtype>, <op> the ONNX op type in lower case and <dtype>
 * a short dtype name, runs that op at that dtype: ses_matmul_f32 is MatMul "f32,f32->f32",
 * ses_add_f32 Add "f32,f32->f32", ses_relu_f32 Relu "f32->f32". Other kernels are left alone.
 *
 * Argument convention, per op class (buffers first, then scalar sizes, each `unsigned int` or
 * a 64-bit unsigned integer as the kernel declares it):
 *   MatMul           (A, B, C, M, K, N)   C[M,N] = A[M,K] * B[K,N], row-major
 *   Add Sub Mul Div  (A, B, C, n)         C[i] = A[i] op B[i], n elements, equal shapes
 *   Relu Neg Abs ... (X, Y, n)            Y[i] = op(X[i]), n elements
 * A node a kernel cannot do (broadcasting, batched or 1-D MatMul, sizes over the scalars'
 * range) is refused in supports_node, so the host runs it on another device.
 *
 * A run: per node, create opens an XRT run handle; compute makes (and caches) a sub-buffer for
 * each tensor inside its plan buffer, sets the arguments, starts the run and waits for it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xrt_internal.h"

#include <ert.h>

/* ---------------------------------------------------------------------------------------------
 * The ops the naming rule knows.
 * ------------------------------------------------------------------------------------------- */

#define DT(x) (1u << SES_DRV_DTYPE_##x)
#define XRT_FLOAT (DT(F32) | DT(F64))
#define XRT_NUMBER (XRT_FLOAT | DT(I32) | DT(I64))

typedef struct xrt_op {
    const char *lower; /* the kernel name's spelling */
    const char *op;    /* the ONNX op type */
    uint32_t cls;      /* XRT_CLASS_* */
    uint32_t dtypes;   /* bit per SES_DRV_DTYPE_* the op takes (DRV-54) */
} xrt_op_t;

static const xrt_op_t xrt_ops[] = {
    {"matmul", "MatMul", XRT_CLASS_MATMUL, XRT_FLOAT},
    {"add", "Add", XRT_CLASS_BINARY, XRT_NUMBER},
    {"sub", "Sub", XRT_CLASS_BINARY, XRT_NUMBER},
    {"mul", "Mul", XRT_CLASS_BINARY, XRT_NUMBER},
    /* Integer Div must fail on a zero divisor, which a kernel cannot report: floats only. */
    {"div", "Div", XRT_CLASS_BINARY, XRT_FLOAT},
    {"relu", "Relu", XRT_CLASS_UNARY, XRT_NUMBER},
    {"neg", "Neg", XRT_CLASS_UNARY, XRT_NUMBER},
    {"abs", "Abs", XRT_CLASS_UNARY, XRT_NUMBER},
    {"exp", "Exp", XRT_CLASS_UNARY, XRT_FLOAT},
    {"log", "Log", XRT_CLASS_UNARY, XRT_FLOAT},
    {"sqrt", "Sqrt", XRT_CLASS_UNARY, XRT_FLOAT},
    {"reciprocal", "Reciprocal", XRT_CLASS_UNARY, XRT_FLOAT},
    {"sigmoid", "Sigmoid", XRT_CLASS_UNARY, XRT_FLOAT},
    {"tanh", "Tanh", XRT_CLASS_UNARY, XRT_FLOAT},
};

static const struct {
    const char *name;
    uint32_t dtype;
    uint32_t size;
} xrt_dtypes[] = {
    {"f32", SES_DRV_DTYPE_F32, 4},
    {"f64", SES_DRV_DTYPE_F64, 8},
    {"i32", SES_DRV_DTYPE_I32, 4},
    {"i64", SES_DRV_DTYPE_I64, 8},
};

/* Buffers and scalars of each class, and the scalars' names in messages. */
static const uint32_t xrt_class_buffers[] = {3, 3, 2};
static const uint32_t xrt_class_scalars[] = {3, 1, 1};
static const char *const xrt_class_args[][XRT_MAX_ARGS] = {
    {"A", "B", "C", "M", "K", "N"},
    {"A", "B", "C", "n"},
    {"X", "Y", "n"},
};
static const char *const xrt_class_convention[] = {"(A, B, C, M, K, N)", "(A, B, C, n)",
                                                   "(X, Y, n)"};

const char *xrt__dtype_name(uint32_t dtype) {
    static const char *const names[] = {"invalid", "f32", "f64", "f16", "bf16", "i8",  "i16",
                                        "i32",     "i64", "u8",  "u16", "u32",  "u64", "bool"};
    return dtype < sizeof names / sizeof names[0] ? names[dtype] : "unknown";
}

/* ---------------------------------------------------------------------------------------------
 * Building the table.
 * ------------------------------------------------------------------------------------------- */

static int32_t xrt_supports_node(ses_drv_device_t *device, const ses_drv_node_t *node);
static int32_t xrt_create(ses_drv_device_t *device, const ses_drv_node_t *node, void **out_state);
static void xrt_destroy(ses_drv_device_t *device, void *state);
static int32_t xrt_compute(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);

/*
 * Matches @p name against the naming rule and the convention; fills @p k (not its handle).
 * Returns 1 when it is usable, 0 when it is not a ses_ kernel, -1 when it is one that cannot be
 * used (@p why says why).
 */
static int xrt_match(const xrt_xkernel_t *x, xrt_kernel_t *k, char *why, size_t why_size) {
    const char *name = x->name;
    const char *last = strrchr(name, '_');
    const xrt_op_t *op = NULL;
    uint32_t d = 0;

    if (strncmp(name, "ses_", 4) != 0)
        return 0;
    if (!last || last < name + 4) {
        snprintf(why, why_size, "the name is not ses_<op>_<dtype>");
        return -1;
    }
    const size_t op_len = (size_t)(last - (name + 4));
    for (size_t i = 0; i < sizeof xrt_ops / sizeof xrt_ops[0] && !op; i++)
        if (strlen(xrt_ops[i].lower) == op_len && !strncmp(name + 4, xrt_ops[i].lower, op_len))
            op = &xrt_ops[i];
    while (d < sizeof xrt_dtypes / sizeof xrt_dtypes[0] && strcmp(last + 1, xrt_dtypes[d].name))
        d++;
    if (!op) {
        snprintf(why, why_size,
                 "\"%.*s\" is not an op this driver knows (matmul, add, sub, mul, div, relu, neg, "
                 "abs, exp, log, sqrt, reciprocal, sigmoid, tanh)",
                 (int)op_len, name + 4);
        return -1;
    }
    if (d == sizeof xrt_dtypes / sizeof xrt_dtypes[0] ||
        !(op->dtypes & (1u << xrt_dtypes[d].dtype))) {
        snprintf(why, why_size, "%s does not take dtype \"%s\" here (it takes %s)", op->op,
                 last + 1, op->dtypes == XRT_FLOAT ? "f32, f64" : "f32, f64, i32, i64");
        return -1;
    }

    const uint32_t nb = xrt_class_buffers[op->cls], ns = xrt_class_scalars[op->cls];
    if (!x->args_found) {
        snprintf(why, why_size, "the xclbin's metadata does not describe its arguments");
        return -1;
    }
    if (x->n_args != nb + ns) {
        snprintf(why, why_size, "it has %" PRIu32 " arguments; the convention for %s is %s",
                 x->n_args, op->op, xrt_class_convention[op->cls]);
        return -1;
    }
    memset(k, 0, sizeof *k);
    for (uint32_t i = 0; i < nb + ns; i++) {
        const xrt_xarg_t *a = &x->args[i];
        const int want_buffer = i < nb;
        if (a->host_size == 0 || a->qualifier != (want_buffer ? 1u : 0u) ||
            (!want_buffer && a->host_size != 4 && a->host_size != 8)) {
            snprintf(
                why, why_size,
                "argument %" PRIu32
                " (%s of %s) must be %s; the xclbin says %s "
                "(addressQualifier %" PRIu32 ", %" PRIu32 " bytes)",
                i, xrt_class_args[op->cls][i], xrt_class_convention[op->cls],
                want_buffer ? "a global memory pointer" : "a 4- or 8-byte unsigned integer scalar",
                a->host_size == 0 ? "nothing" : "otherwise", a->qualifier, a->host_size);
            return -1;
        }
        if (!want_buffer)
            k->scalar_size[i - nb] = a->host_size;
    }
    snprintf(k->xrt_name, sizeof k->xrt_name, "%s", name);
    k->op = op->op;
    k->cls = op->cls;
    k->dtype = xrt_dtypes[d].dtype;
    k->elem_size = xrt_dtypes[d].size;
    k->n_buffers = nb;
    k->n_scalars = ns;
    const char *t = xrt_dtypes[d].name;
    if (op->cls == XRT_CLASS_UNARY)
        snprintf(k->signature, sizeof k->signature, "%s->%s", t, t);
    else
        snprintf(k->signature, sizeof k->signature, "%s,%s->%s", t, t, t);
    return 1;
}

void xrt__free_kernels(ses_drv_device_t *device) {
    for (uint32_t i = 0; i < device->n_kernels; i++) {
        if (device->kernels[i].handle) {
            int rc = xrtKernelClose(device->kernels[i].handle);
            xrt__trace(device->driver, "xrtKernelClose(%s) -> %d", device->kernels[i].xrt_name, rc);
        }
    }
    free(device->kernels);
    free(device->table);
    device->kernels = NULL;
    device->table = NULL;
    device->n_kernels = 0;
}

int32_t xrt__build_kernels(ses_drv_device_t *device, const char *path, const xuid_t uuid,
                           xrt_xkernel_t *found, uint32_t n_found) {
    ses_drv_driver_t *driver = device->driver;
    int32_t *groups = NULL;
    uint32_t n = 0;
    char why[512];
    int32_t st;

    device->group = 0;
    device->kernels = calloc(n_found ? n_found : 1, sizeof *device->kernels);
    groups = calloc(n_found ? n_found : 1, sizeof *groups);
    if (!device->kernels || !groups) {
        st = XRT_DEVICE_FAIL(device, SES_DRV_OUT_OF_MEMORY, "open_device: out of host memory");
        goto fail;
    }
    for (uint32_t i = 0; i < n_found; i++) {
        xrt_kernel_t *k = &device->kernels[n];
        int m = xrt_match(&found[i], k, why, sizeof why);
        if (m == 0) {
            xrt__log(driver, SES_DRV_LOG_DEBUG,
                     "%s: kernel %s is not named ses_<op>_<dtype>; not used", path, found[i].name);
            continue;
        }
        if (m < 0) {
            xrt__log(driver, SES_DRV_LOG_WARN, "%s: kernel %s skipped: %s", path, found[i].name,
                     why);
            continue;
        }
        errno = 0;
        k->handle = xrtPLKernelOpen(device->handle, uuid, k->xrt_name);
        int err = errno;
        xrt__trace(driver, "xrtPLKernelOpen(%s) -> %s", k->xrt_name, k->handle ? "ok" : "NULL");
        if (!k->handle) {
            xrt__log(driver, SES_DRV_LOG_WARN, "%s: kernel %s skipped: xrtPLKernelOpen failed: %s",
                     path, k->xrt_name, err ? strerror(err) : "no reason given");
            continue;
        }
        /* Every buffer argument must reach one memory group: the plan's buffer lives there. */
        int32_t group = -1;
        int ok = 1;
        for (uint32_t a = 0; a < k->n_buffers && ok; a++) {
            int g = xrtKernelArgGroupId(k->handle, (int)a);
            xrt__trace(driver, "xrtKernelArgGroupId(%s, %" PRIu32 ") -> %d", k->xrt_name, a, g);
            if (g < 0) {
                snprintf(why, sizeof why, "argument %" PRIu32 " connects to no memory bank", a);
                ok = 0;
            } else if (group >= 0 && g != group) {
                snprintf(why, sizeof why,
                         "its buffer arguments connect to different memory groups (%d and %d)",
                         (int)group, g);
                ok = 0;
            }
            group = g;
        }
        if (!ok) {
            xrt__log(driver, SES_DRV_LOG_WARN, "%s: kernel %s skipped: %s", path, k->xrt_name, why);
            xrtKernelClose(k->handle);
            k->handle = NULL;
            continue;
        }
        groups[n++] = group;
    }

    /* The group most kernels use (the lowest on a tie) takes every buffer; kernels connected
     * elsewhere could not reach a plan's tensors, so they go. */
    uint32_t best_votes = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t votes = 0;
        for (uint32_t j = 0; j < n; j++)
            votes += groups[j] == groups[i];
        if (votes > best_votes || (votes == best_votes && groups[i] < device->group)) {
            best_votes = votes;
            device->group = groups[i];
        }
    }
    uint32_t kept = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (groups[i] != device->group) {
            xrt__log(driver, SES_DRV_LOG_WARN,
                     "%s: kernel %s skipped: its buffers are in memory group %d, the other "
                     "kernels' in group %d; connect every ses_ kernel to one bank "
                     "(v++ --connectivity.sp)",
                     path, device->kernels[i].xrt_name, (int)groups[i], (int)device->group);
            xrtKernelClose(device->kernels[i].handle);
            continue;
        }
        device->kernels[kept++] = device->kernels[i];
    }
    device->n_kernels = kept;

    device->table = calloc(kept ? kept : 1, sizeof *device->table);
    if (!device->table) {
        st = XRT_DEVICE_FAIL(device, SES_DRV_OUT_OF_MEMORY, "open_device: out of host memory");
        goto fail;
    }
    for (uint32_t i = 0; i < kept; i++) {
        ses_drv_kernel_t *e = &device->table[i];
        e->struct_size = sizeof *e;
        e->op = device->kernels[i].op;
        e->signature = device->kernels[i].signature;
        e->priority = 0;
        e->flags = 0;
        e->supports_node = xrt_supports_node;
        e->create = xrt_create;
        e->destroy = xrt_destroy;
        e->compute = xrt_compute;
        xrt__log(driver, SES_DRV_LOG_INFO, "%s:%" PRIu32 ": kernel %s runs %s %s", XRT_NAME,
                 device->ordinal, device->kernels[i].xrt_name, e->op, e->signature);
    }
    if (kept == 0)
        xrt__log(driver, SES_DRV_LOG_INFO,
                 "%s:%" PRIu32 ": %s has no usable ses_<op>_<dtype> kernel (%" PRIu32
                 " kernel(s) in it); every node runs on another device",
                 XRT_NAME, device->ordinal, path, n_found);
    free(found);
    free(groups);
    return SES_DRV_OK;

fail:
    free(found);
    free(groups);
    xrt__free_kernels(device);
    return st;
}

/* ---------------------------------------------------------------------------------------------
 * Nodes: finding the kernel, checking shapes.
 * ------------------------------------------------------------------------------------------- */

static const ses_drv_tensor_desc_t *xrt_desc(const ses_drv_tensor_desc_t *base, uint32_t i) {
    return (const ses_drv_tensor_desc_t *)(const void *)((const unsigned char *)base +
                                                         (size_t)i * base->struct_size);
}

/* "[2,3]" into @p buf. */
static const char *xrt_dims(const ses_drv_tensor_desc_t *t, char *buf, size_t size) {
    size_t n = 0;

    n += (size_t)snprintf(buf, size, "[");
    for (uint32_t d = 0; d < t->rank && n < size; d++)
        n += (size_t)snprintf(buf + n, size - n, "%s%" PRId64, d ? "," : "", t->dims[d]);
    if (n < size)
        snprintf(buf + n, size - n, "]");
    return buf;
}

/* a * b * size into @p out; 0 when it does not fit in 63 bits. */
static int xrt_bytes(uint64_t a, uint64_t b, uint64_t size, uint64_t *out) {
    const uint64_t limit = UINT64_C(1) << 62;

    if ((b && a > limit / b) || (size && a * b > limit / size))
        return 0;
    *out = a * b * size;
    return 1;
}

/* What one node means for its kernel: the scalars and each buffer argument's byte count. */
typedef struct xrt_shape {
    uint64_t scalars[3];
    uint64_t bytes[3]; /* per buffer argument, in the convention's order */
    uint64_t out_count;
} xrt_shape_t;

#define XRT_NODE_FAIL(device, k, node, code, fmt, ...)                              \
    XRT_DEVICE_FAIL(device, code, "%s \"%s\": the FPGA kernel %s " fmt, (node)->op, \
                    (node)->name ? (node)->name : "?", (k)->xrt_name, __VA_ARGS__)

/*
 * Finds @p node's kernel and checks the node fits it; fills @p out. Returns SES_DRV_UNIMPLEMENTED
 * with the reason when the kernel cannot run it, SES_DRV_INVALID_ARGUMENT when the node is
 * malformed.
 */
static int32_t xrt_check_node(ses_drv_device_t *device, const ses_drv_node_t *node,
                              const xrt_kernel_t **out_kernel, xrt_shape_t *out) {
    const size_t desc_min = SES_DRV_SIZEOF_1_0(ses_drv_tensor_desc_t, dims);
    const xrt_kernel_t *k = NULL;
    const ses_drv_tensor_desc_t *t[3];
    char a[96], b[96], c[96];

    if (!node || node->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_node_t, attr_ctx) || !node->op)
        return XRT_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                               "the node is NULL or older than ABI 1.0");
    if (node->n_inputs == 0 || node->n_outputs != 1 || !node->inputs || !node->outputs ||
        node->inputs->struct_size < desc_min || node->outputs->struct_size < desc_min)
        return XRT_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                               "%s \"%s\": %" PRIu32 " inputs and %" PRIu32
                               " outputs, or tensor descriptors older than ABI 1.0",
                               node->op, node->name ? node->name : "?", node->n_inputs,
                               node->n_outputs);
    for (uint32_t i = 0; i < device->n_kernels && !k; i++)
        if (!strcmp(device->kernels[i].op, node->op) &&
            device->kernels[i].dtype == node->inputs->dtype)
            k = &device->kernels[i];
    if (!k)
        return XRT_DEVICE_FAIL(device, SES_DRV_UNIMPLEMENTED,
                               "%s \"%s\": the loaded xclbin has no kernel for %s at %s", node->op,
                               node->name ? node->name : "?", node->op,
                               xrt__dtype_name(node->inputs->dtype));
    const uint32_t n_in = k->n_buffers - 1;
    if (node->n_inputs != n_in)
        return XRT_NODE_FAIL(device, k, node, SES_DRV_INVALID_ARGUMENT,
                             "takes %" PRIu32 " inputs, the node has %" PRIu32, n_in,
                             node->n_inputs);
    for (uint32_t i = 0; i <= n_in; i++) {
        t[i] = i < n_in ? xrt_desc(node->inputs, i) : node->outputs;
        if (t[i]->dtype != k->dtype)
            return XRT_NODE_FAIL(device, k, node, SES_DRV_UNIMPLEMENTED,
                                 "is %s, but %s %" PRIu32 " is %s", k->signature,
                                 i < n_in ? "input" : "output", i < n_in ? i : 0,
                                 xrt__dtype_name(t[i]->dtype));
        if (t[i]->rank > 0 && !t[i]->dims)
            return XRT_NODE_FAIL(device, k, node, SES_DRV_INVALID_ARGUMENT,
                                 "got a rank-%" PRIu32 " tensor without dims", t[i]->rank);
        for (uint32_t d = 0; d < t[i]->rank; d++)
            if (t[i]->dims[d] < 0)
                return XRT_NODE_FAIL(device, k, node, SES_DRV_INVALID_ARGUMENT, "got dim %" PRId64,
                                     t[i]->dims[d]);
    }

    memset(out, 0, sizeof *out);
    if (k->cls == XRT_CLASS_MATMUL) {
        if (t[0]->rank != 2 || t[1]->rank != 2 || t[2]->rank != 2)
            return XRT_NODE_FAIL(device, k, node, SES_DRV_UNIMPLEMENTED,
                                 "multiplies 2-D matrices only: A is %s, B is %s",
                                 xrt_dims(t[0], a, sizeof a), xrt_dims(t[1], b, sizeof b));
        const int64_t m = t[0]->dims[0], kk = t[0]->dims[1], n = t[1]->dims[1];
        if (t[1]->dims[0] != kk || t[2]->dims[0] != m || t[2]->dims[1] != n)
            return XRT_NODE_FAIL(device, k, node, SES_DRV_INVALID_ARGUMENT,
                                 "got shapes that do not multiply: A is %s, B is %s, C is %s",
                                 xrt_dims(t[0], a, sizeof a), xrt_dims(t[1], b, sizeof b),
                                 xrt_dims(t[2], c, sizeof c));
        if (kk == 0 && m > 0 && n > 0)
            return XRT_NODE_FAIL(device, k, node, SES_DRV_UNIMPLEMENTED,
                                 "needs K > 0 (A is %s): an empty sum would leave C unwritten",
                                 xrt_dims(t[0], a, sizeof a));
        out->scalars[0] = (uint64_t)m;
        out->scalars[1] = (uint64_t)kk;
        out->scalars[2] = (uint64_t)n;
        if (!xrt_bytes((uint64_t)m, (uint64_t)kk, k->elem_size, &out->bytes[0]) ||
            !xrt_bytes((uint64_t)kk, (uint64_t)n, k->elem_size, &out->bytes[1]) ||
            !xrt_bytes((uint64_t)m, (uint64_t)n, k->elem_size, &out->bytes[2]))
            return XRT_NODE_FAIL(device, k, node, SES_DRV_INVALID_ARGUMENT, "%s",
                                 "got tensors of more bytes than 64 bits count");
        out->out_count = (uint64_t)m * (uint64_t)n;
    } else {
        int same = 1;
        for (uint32_t i = 1; i <= n_in && same; i++) {
            same = t[i]->rank == t[0]->rank;
            for (uint32_t d = 0; d < t[0]->rank && same; d++)
                same = t[i]->dims[d] == t[0]->dims[d];
        }
        if (!same)
            return XRT_NODE_FAIL(device, k, node, SES_DRV_UNIMPLEMENTED,
                                 "needs equal shapes (no broadcasting): %s%s%s, output %s",
                                 xrt_dims(t[0], a, sizeof a), n_in > 1 ? " and " : "",
                                 n_in > 1 ? xrt_dims(t[1], b, sizeof b) : "",
                                 xrt_dims(t[n_in], c, sizeof c));
        uint64_t count = 1, bytes = 0;
        for (uint32_t d = 0; d < t[0]->rank; d++)
            if (!xrt_bytes(count, (uint64_t)t[0]->dims[d], 1, &count))
                return XRT_NODE_FAIL(device, k, node, SES_DRV_INVALID_ARGUMENT, "%s",
                                     "got tensors of more elements than 64 bits count");
        if (!xrt_bytes(count, 1, k->elem_size, &bytes))
            return XRT_NODE_FAIL(device, k, node, SES_DRV_INVALID_ARGUMENT, "%s",
                                 "got tensors of more bytes than 64 bits count");
        out->scalars[0] = count;
        for (uint32_t i = 0; i <= n_in; i++)
            out->bytes[i] = bytes;
        out->out_count = count;
    }
    for (uint32_t s = 0; s < k->n_scalars; s++)
        if (k->scalar_size[s] == 4 && out->scalars[s] > UINT32_MAX)
            return XRT_NODE_FAIL(device, k, node, SES_DRV_UNIMPLEMENTED,
                                 "takes a 32-bit %s, and the node needs %" PRIu64,
                                 xrt_class_args[k->cls][k->n_buffers + s], out->scalars[s]);
    *out_kernel = k;
    return SES_DRV_OK;
}

static int32_t xrt_supports_node(ses_drv_device_t *device, const ses_drv_node_t *node) {
    const xrt_kernel_t *k;
    xrt_shape_t shape;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    return xrt_check_node(device, node, &k, &shape);
}

/* ---------------------------------------------------------------------------------------------
 * Runs.
 * ------------------------------------------------------------------------------------------- */

/* A sub-buffer made for one argument, kept while the same bytes are passed again. */
typedef struct xrt_sub {
    uint64_t buffer_id, offset, bytes;
    xrtBufferHandle bo;
} xrt_sub_t;

typedef struct xrt_state {
    const xrt_kernel_t *kernel;
    xrtRunHandle run;
    xrt_sub_t subs[3];
} xrt_state_t;

static void xrt_destroy(ses_drv_device_t *device, void *state) {
    xrt_state_t *s = state;

    if (!device || !s)
        return;
    for (uint32_t i = 0; i < 3; i++)
        if (s->subs[i].bo) {
            int rc = xrtBOFree(s->subs[i].bo);
            xrt__trace(device->driver, "xrtBOFree(sub-buffer of buffer %" PRIu64 ") -> %d",
                       s->subs[i].buffer_id, rc);
        }
    if (s->run) {
        int rc = xrtRunClose(s->run);
        xrt__trace(device->driver, "xrtRunClose(%s) -> %d", s->kernel->xrt_name, rc);
    }
    free(s);
}

static int32_t xrt_create(ses_drv_device_t *device, const ses_drv_node_t *node, void **out_state) {
    const xrt_kernel_t *k;
    xrt_shape_t shape;
    xrt_state_t *s;
    int32_t st;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_state)
        return XRT_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT, "create: out_state is NULL");
    *out_state = NULL;
    if ((st = xrt_check_node(device, node, &k, &shape)) != SES_DRV_OK)
        return st;
    s = calloc(1, sizeof *s);
    if (!s)
        return XRT_DEVICE_FAIL(device, SES_DRV_OUT_OF_MEMORY, "create: out of host memory");
    s->kernel = k;
    errno = 0;
    s->run = xrtRunOpen(k->handle);
    int err = errno;
    xrt__trace(device->driver, "xrtRunOpen(%s) -> %s", k->xrt_name, s->run ? "ok" : "NULL");
    if (!s->run) {
        free(s);
        return XRT_DEVICE_FAIL(device, SES_DRV_INTERNAL, "%s \"%s\": xrtRunOpen(%s) failed: %s",
                               node->op, node->name ? node->name : "?", k->xrt_name,
                               err ? strerror(err) : "no reason given");
    }
    *out_state = s;
    return SES_DRV_OK;
}

static const char *xrt_state_name(enum ert_cmd_state state) {
    switch (state) {
    case ERT_CMD_STATE_NEW:
        return "NEW";
    case ERT_CMD_STATE_QUEUED:
        return "QUEUED";
    case ERT_CMD_STATE_RUNNING:
        return "RUNNING";
    case ERT_CMD_STATE_COMPLETED:
        return "COMPLETED";
    case ERT_CMD_STATE_ERROR:
        return "ERROR";
    case ERT_CMD_STATE_ABORT:
        return "ABORT";
    case ERT_CMD_STATE_SUBMITTED:
        return "SUBMITTED";
    case ERT_CMD_STATE_TIMEOUT:
        return "TIMEOUT";
    case ERT_CMD_STATE_NORESPONSE:
        return "NORESPONSE";
    default:
        return "unknown";
    }
}

/* The sub-buffer for @p bytes at @p offset of @p b, from the cache or new. */
static int32_t xrt_sub(ses_drv_device_t *device, xrt_state_t *s, uint32_t arg, ses_drv_buffer_t *b,
                       uint64_t offset, uint64_t bytes) {
    xrt_sub_t *sub = &s->subs[arg];

    if (sub->bo && sub->buffer_id == b->id && sub->offset == offset && sub->bytes == bytes)
        return SES_DRV_OK;
    if (sub->bo) {
        xrtBOFree(sub->bo);
        sub->bo = NULL;
    }
    errno = 0;
    sub->bo = xrtBOSubAlloc(b->bo, (size_t)bytes, (size_t)offset);
    int err = errno;
    xrt__trace(device->driver,
               "xrtBOSubAlloc(buffer %" PRIu64 ", %" PRIu64 " bytes at offset %" PRIu64
               ") -> %s, argument %s of %s",
               b->id, bytes, offset, sub->bo ? "ok" : "NULL", xrt_class_args[s->kernel->cls][arg],
               s->kernel->xrt_name);
    if (!sub->bo)
        return XRT_DEVICE_FAIL(device, SES_DRV_INTERNAL,
                               "%s: xrtBOSubAlloc of %" PRIu64 " bytes at offset %" PRIu64
                               " of buffer %" PRIu64 " failed: %s",
                               s->kernel->xrt_name, bytes, offset, b->id,
                               err ? strerror(err) : "no reason given");
    sub->buffer_id = b->id;
    sub->offset = offset;
    sub->bytes = bytes;
    return SES_DRV_OK;
}

static int32_t xrt_compute(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    xrt_state_t *s = state;
    const xrt_kernel_t *k;
    xrt_shape_t shape;
    ses_drv_buffer_t *bufs[3] = {NULL, NULL, NULL};
    uint64_t offs[3];
    int32_t st;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!launch || launch->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_launch_t, output_offsets))
        return XRT_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                               "compute: the launch is NULL or older than ABI 1.0");
    if (!s)
        return XRT_DEVICE_FAIL(device, SES_DRV_FAILED_PRECONDITION,
                               "compute: no per-node state; create was not called");
    if ((st = xrt_check_node(device, launch->node, &k, &shape)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if (k != s->kernel)
        return XRT_NODE_FAIL(device, s->kernel, node, SES_DRV_INVALID_ARGUMENT,
                             "was prepared for this node, but the launch is for %s", k->xrt_name);
    if (launch->stream)
        return XRT_NODE_FAIL(device, k, node, SES_DRV_INVALID_ARGUMENT, "%s",
                             "got a stream, but " XRT_NAME " has no streams; pass NULL");
    if (!launch->inputs || !launch->input_offsets || !launch->outputs || !launch->output_offsets)
        return XRT_NODE_FAIL(device, k, node, SES_DRV_INVALID_ARGUMENT, "%s",
                             "got a launch without its buffer or offset arrays");
    const uint32_t n_in = k->n_buffers - 1;
    for (uint32_t i = 0; i < k->n_buffers; i++) {
        bufs[i] = i < n_in ? launch->inputs[i] : launch->outputs[0];
        offs[i] = i < n_in ? launch->input_offsets[i] : launch->output_offsets[0];
        if (!bufs[i] || offs[i] > bufs[i]->size || shape.bytes[i] > bufs[i]->size - offs[i])
            return XRT_NODE_FAIL(device, k, node, SES_DRV_INVALID_ARGUMENT,
                                 "argument %s: %" PRIu64 " bytes at offset %" PRIu64
                                 " end past its buffer's %" PRIu64 " bytes",
                                 xrt_class_args[k->cls][i], shape.bytes[i], offs[i],
                                 bufs[i] ? bufs[i]->size : 0);
    }
    if (shape.out_count == 0)
        return SES_DRV_OK; /* nothing to compute, and XRT refuses 0-byte sub-buffers */
    /* The output may be exactly an input's bytes for elementwise kernels (each element is read
     * before it is written); any other overlap is refused. */
    const ses_drv_buffer_t *o = bufs[n_in];
    for (uint32_t i = 0; i < n_in; i++) {
        if (bufs[i] != o)
            continue;
        const int overlap =
            offs[i] < offs[n_in] + shape.bytes[n_in] && offs[n_in] < offs[i] + shape.bytes[i];
        const int exact = offs[i] == offs[n_in] && shape.bytes[i] == shape.bytes[n_in];
        if (overlap && (!exact || k->cls == XRT_CLASS_MATMUL))
            return XRT_NODE_FAIL(device, k, node, SES_DRV_INVALID_ARGUMENT,
                                 "cannot write its output over input %" PRIu32, i);
    }

    const int tracing = xrt__tracing(device->driver);
    for (uint32_t i = 0; i < k->n_buffers; i++) {
        if ((st = xrt_sub(device, s, i, bufs[i], offs[i], shape.bytes[i])) != SES_DRV_OK)
            return st;
        int rc = xrtRunSetArg(s->run, (int)i, s->subs[i].bo);
        if (tracing)
            xrt__trace(device->driver,
                       "xrtRunSetArg(%s, %" PRIu32 ", %s = buffer %" PRIu64 ", %" PRIu64
                       " bytes at offset %" PRIu64 ") -> %d",
                       k->xrt_name, i, xrt_class_args[k->cls][i], bufs[i]->id, shape.bytes[i],
                       offs[i], rc);
        if (rc != 0)
            return XRT_NODE_FAIL(device, k, node, SES_DRV_INTERNAL,
                                 "refused argument %" PRIu32 " (xrtRunSetArg: %d)", i, rc);
    }
    for (uint32_t j = 0; j < k->n_scalars; j++) {
        const uint32_t index = k->n_buffers + j;
        /* xrtRunSetArg reads a scalar with the size the xclbin gives it. */
        int rc = k->scalar_size[j] == 8
                     ? xrtRunSetArg(s->run, (int)index, (uint64_t)shape.scalars[j])
                     : xrtRunSetArg(s->run, (int)index, (uint32_t)shape.scalars[j]);
        if (tracing)
            xrt__trace(device->driver, "xrtRunSetArg(%s, %" PRIu32 ", %s = %" PRIu64 ") -> %d",
                       k->xrt_name, index, xrt_class_args[k->cls][index], shape.scalars[j], rc);
        if (rc != 0)
            return XRT_NODE_FAIL(device, k, node, SES_DRV_INTERNAL,
                                 "refused argument %" PRIu32 " (xrtRunSetArg: %d)", index, rc);
    }
    int rc = xrtRunStart(s->run);
    xrt__trace(device->driver, "xrtRunStart(%s) -> %d", k->xrt_name, rc);
    if (rc != 0)
        return XRT_NODE_FAIL(device, k, node, SES_DRV_INTERNAL, "did not start (xrtRunStart: %d)",
                             rc);
    enum ert_cmd_state done = xrtRunWait(s->run);
    xrt__trace(device->driver, "xrtRunWait(%s) -> %s", k->xrt_name, xrt_state_name(done));
    if (done != ERT_CMD_STATE_COMPLETED)
        return XRT_NODE_FAIL(device, k, node, SES_DRV_INTERNAL, "ended in state %s (%d)",
                             xrt_state_name(done), (int)done);
    return SES_DRV_OK;
}
