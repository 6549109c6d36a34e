/*
 * Launch checking shared by every kernel: what the host hands a compute entry is checked once
 * against the entry's spec (struct sizes, argument counts, dtypes, dims, byte ranges and
 * alignment) before any body touches memory, because a wrong launch from a host bug would
 * otherwise read or write outside a buffer. Also attribute reading and error formatting.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <session/driver.h>

#include "cpu_internal.h"

/* ---------------------------------------------------------------------------------------------
 * Messages
 * ------------------------------------------------------------------------------------------- */

int32_t cpu__call_fail(const cpu__call_t *call, int32_t code, const char *format, ...) {
    char message[448];
    va_list ap;

    va_start(ap, format);
    vsnprintf(message, sizeof message, format, ap);
    va_end(ap);
    return cpu__device_fail(call->device, code, "%s \"%s\": %s", call->spec->op, call->name,
                            message);
}

const char *cpu__format_dims(const int64_t *dims, uint32_t rank, char *buf, size_t size) {
    size_t used = 0;

    if (size < 8) {
        if (size > 0)
            buf[0] = '\0';
        return buf;
    }
    buf[used++] = '[';
    for (uint32_t d = 0; d < rank; d++) {
        char item[24];
        int n = snprintf(item, sizeof item, "%s%" PRId64, d ? "," : "", dims[d]);
        /* Keep room for "...]" and the NUL. */
        if (n < 0 || used + (size_t)n + 5 > size) {
            memcpy(buf + used, "...", 3);
            used += 3;
            break;
        }
        memcpy(buf + used, item, (size_t)n);
        used += (size_t)n;
    }
    buf[used++] = ']';
    buf[used] = '\0';
    return buf;
}

int cpu__same_shape(const cpu__tensor_t *a, const cpu__tensor_t *b) {
    if (a->rank != b->rank)
        return 0;
    for (uint32_t d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d])
            return 0;
    return 1;
}

int32_t cpu__check_rank(const cpu__call_t *call, const char *role, const cpu__tensor_t *t) {
    if (t->rank > CPU__MAX_RANK)
        return cpu__call_fail(call, SES_DRV_UNIMPLEMENTED,
                              "%s has rank %" PRIu32
                              "; the cpu driver supports up to rank %d "
                              "for this op",
                              role, t->rank, CPU__MAX_RANK);
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Checking a launch
 * ------------------------------------------------------------------------------------------- */

/*
 * Tensor descriptor @p i of an array written by the host. The array's stride is the host's
 * sizeof, which its first entry's struct_size states; it may exceed ours when the host is newer.
 */
static const ses_drv_tensor_desc_t *cpu__tensor_at(const ses_drv_tensor_desc_t *base, uint32_t i) {
    return (const ses_drv_tensor_desc_t *)(const void *)((const unsigned char *)base +
                                                         (size_t)i * base->struct_size);
}

/* Writes @p i in decimal; cheaper than snprintf on the launch path. */
static void cpu__format_index(char *out, size_t size, uint32_t i) {
    char digits[12];
    size_t n = 0;

    do {
        digits[n++] = (char)('0' + i % 10);
        i /= 10;
    } while (i > 0 && n < sizeof digits);
    size_t k = 0;
    while (n > 0 && k + 1 < size)
        out[k++] = digits[--n];
    out[k] = '\0';
}

/* The view of a descriptor and its buffer; only after cpu__check_tensor accepted them. */
static cpu__tensor_t cpu__view(const ses_drv_tensor_desc_t *desc, ses_drv_buffer_t *buffer,
                               uint64_t offset) {
    cpu__tensor_t t;
    uint64_t count = 1;

    for (uint32_t d = 0; d < desc->rank; d++)
        count *= (uint64_t)desc->dims[d];
    t.data = (unsigned char *)cpu__buffer(buffer)->data + offset;
    t.dims = desc->dims;
    t.count = count;
    t.esize = cpu__dtype_size(desc->dtype);
    t.dtype = desc->dtype;
    t.rank = desc->rank;
    return t;
}

/*
 * Checks one argument: its descriptor (struct size, dims), its element count and byte size,
 * and that those bytes lie inside its buffer at an offset aligned to the element size. The
 * dtype is checked by the caller, which names the whole signature when one differs.
 * @p role is "input 1" or "output 0".
 */
static int32_t cpu__check_tensor(const cpu__call_t *call, const char *role,
                                 const ses_drv_tensor_desc_t *t, ses_drv_buffer_t *buffer,
                                 uint64_t offset) {
    const size_t min_size = SES_DRV_SIZEOF_1_0(ses_drv_tensor_desc_t, dims);
    uint64_t count = 1;
    int32_t st;

    if (t->struct_size < min_size)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "%s descriptor has struct_size %" PRIu32
                              ", ABI 1.0 needs at least %zu",
                              role, t->struct_size, min_size);
    if (t->rank > 0 && !t->dims)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "%s has rank %" PRIu32 " but dims is NULL", role, t->rank);
    for (uint32_t d = 0; d < t->rank; d++) {
        int64_t dim = t->dims[d];
        if (dim < 0)
            return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                  "%s dim %" PRIu32 " is %" PRId64 ", dims must be >= 0", role, d,
                                  dim);
        if (dim != 0 && count > UINT64_MAX / (uint64_t)dim)
            return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                  "%s element count overflows 64 bits", role);
        count *= (uint64_t)dim;
    }
    size_t esize = cpu__dtype_size(t->dtype);
    if (esize == 0)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT, "%s has unknown dtype %" PRIu32, role,
                              t->dtype);
    if (count > SIZE_MAX / esize)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "%s: %" PRIu64 " elements of %s exceed the address space", role,
                              count, cpu__dtype_label(t->dtype));
    const cpu__buffer_t *b = cpu__buffer(buffer);
    if (!b)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT, "%s buffer is NULL", role);
    /* The message is only formatted for a range that does not fit: snprintf would otherwise
     * be most of the cost of launching a small kernel. */
    uint64_t bytes = count * esize;
    if (offset > b->size || bytes > b->size - offset) {
        char what[192];
        snprintf(what, sizeof what, "%s \"%s\": %s", call->spec->op, call->name, role);
        if ((st = cpu__check_range(call->device, what, b, offset, bytes)) != SES_DRV_OK)
            return st;
    }
    uintptr_t address = (uintptr_t)b->data + (uintptr_t)offset;
    if (address % esize != 0)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "%s at address %p (buffer offset %" PRIu64
                              ") is not aligned to its %zu-byte %s elements",
                              role, (void *)address, offset, esize, cpu__dtype_label(t->dtype));
    return SES_DRV_OK;
}

/* Appends the dtypes of the node (or of the spec when @p node_side is 0) to @p buf. */
static void cpu__describe_dtypes(const cpu__call_t *call, int node_side, char *buf, size_t size) {
    const ses_drv_node_t *node = call->node;
    const cpu__spec_t *spec = call->spec;
    size_t used = 0;

    buf[0] = '\0';
    if (node_side) {
        int n = snprintf(buf, size, "%s ", node->n_inputs == 1 ? "input is" : "inputs are");
        used = n > 0 ? (size_t)n : 0;
        for (uint32_t i = 0; i < node->n_inputs && used < size; i++) {
            uint32_t dtype = cpu__tensor_at(node->inputs, i)->dtype;
            n = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", cpu__dtype_label(dtype));
            used += n > 0 ? (size_t)n : 0;
        }
        if (used < size)
            snprintf(buf + used, size - used, ", output is %s",
                     cpu__dtype_label(cpu__tensor_at(node->outputs, 0)->dtype));
    } else {
        snprintf(buf, size, "%s", spec->signature);
    }
}

/* How an op's output may share bytes with its inputs. */
enum cpu__overlap {
    CPU__OVERLAP_NONE,  /* not at all */
    CPU__OVERLAP_EXACT, /* exactly one input's bytes (same start, same size): elementwise ops,
                           which read each element before writing the same one */
    CPU__OVERLAP_ANY,   /* any overlap: the copies, which memmove */
};

static enum cpu__overlap cpu__overlap_rule(uint32_t code) {
    switch (code) {
    case CPU__OP_COPY: return CPU__OVERLAP_ANY;
    case CPU__OP_MATMUL:
    case CPU__OP_GEMM:
    case CPU__OP_REDUCESUM:
    case CPU__OP_REDUCEMAX:
    case CPU__OP_REDUCEMEAN:
    case CPU__OP_ARGMAX:
    case CPU__OP_TRANSPOSE:
    case CPU__OP_CONCAT:
    case CPU__OP_SLICE:
    case CPU__OP_GATHER: return CPU__OVERLAP_NONE;
    default: return CPU__OVERLAP_EXACT; /* elementwise, Cast, Softmax, LogSoftmax */
    }
}

/*
 * Refuses an output whose bytes overlap an input's in a way the op cannot compute through:
 * the planner may reuse an input's bytes for the output only as cpu__overlap_rule allows.
 * Addresses are compared as integers, since the ranges may lie in different allocations.
 */
static int32_t cpu__check_overlap(const cpu__call_t *call) {
    const enum cpu__overlap rule = cpu__overlap_rule(call->spec->code);
    const uintptr_t o = (uintptr_t)call->out.data;
    const uint64_t o_bytes = call->out.count * call->out.esize;

    if (rule == CPU__OVERLAP_ANY || o_bytes == 0)
        return SES_DRV_OK;
    for (uint32_t i = 0; i < call->n_in; i++) {
        cpu__tensor_t t = cpu__input(call, i);
        const uintptr_t a = (uintptr_t)t.data;
        const uint64_t a_bytes = t.count * t.esize;
        if (a_bytes == 0 || a >= o + o_bytes || o >= a + a_bytes)
            continue;
        if (rule == CPU__OVERLAP_EXACT && a == o && a_bytes == o_bytes)
            continue;
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "output 0 (%" PRIu64 " bytes at %p) overlaps input %" PRIu32
                              " (%" PRIu64 " bytes at %p); %s",
                              o_bytes, (void *)o, i, a_bytes, (void *)a,
                              rule == CPU__OVERLAP_EXACT
                                  ? "this op runs in place only over exactly one input's bytes"
                                  : "this op cannot run in place");
    }
    return SES_DRV_OK;
}

int32_t cpu__run(ses_drv_device_t *device, const ses_drv_launch_t *launch,
                 const cpu__spec_t *spec) {
    const size_t launch_min = SES_DRV_SIZEOF_1_0(ses_drv_launch_t, output_offsets);
    const size_t node_min = SES_DRV_SIZEOF_1_0(ses_drv_node_t, attr_ctx);
    cpu__call_t call;
    int32_t st;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!launch)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT, "%s: launch is NULL", spec->op);
    if (launch->struct_size < launch_min)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "%s: launch has struct_size %" PRIu32
                                ", ABI 1.0 needs at least %zu",
                                spec->op, launch->struct_size, launch_min);
    const ses_drv_node_t *node = launch->node;
    if (!node)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT, "%s: launch->node is NULL",
                                spec->op);
    if (node->struct_size < node_min)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "%s: node has struct_size %" PRIu32 ", ABI 1.0 needs at least %zu",
                                spec->op, node->struct_size, node_min);

    memset(&call, 0, sizeof call);
    call.device = device;
    call.launch = launch;
    call.node = node;
    call.spec = spec;
    call.name = node->name ? node->name : "(unnamed)";
    call.n_in = node->n_inputs;

    if (launch->stream)
        return cpu__call_fail(&call, SES_DRV_INVALID_ARGUMENT,
                              "got a stream, but the cpu driver has no streams");
    int inputs_ok = spec->variadic ? node->n_inputs >= 1 : node->n_inputs == spec->n_inputs;
    if (!inputs_ok || node->n_outputs != 1)
        return cpu__call_fail(&call, SES_DRV_INVALID_ARGUMENT,
                              "has %" PRIu32 " inputs and %" PRIu32
                              " outputs; this kernel (%s) takes %s%" PRIu32 " input%s and 1 output",
                              node->n_inputs, node->n_outputs, spec->signature,
                              spec->variadic ? "at least " : "", spec->n_inputs,
                              spec->n_inputs == 1 ? "" : "s");
    if (!node->inputs || !node->outputs)
        return cpu__call_fail(&call, SES_DRV_INVALID_ARGUMENT, "node inputs or outputs is NULL");
    if (!launch->inputs || !launch->outputs || !launch->input_offsets || !launch->output_offsets)
        return cpu__call_fail(&call, SES_DRV_INVALID_ARGUMENT,
                              "launch buffers or offsets are NULL");
    /* The first descriptor's struct_size is the array's stride: check it before striding. */
    if (node->inputs->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_tensor_desc_t, dims) ||
        node->outputs->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_tensor_desc_t, dims))
        return cpu__call_fail(
            &call, SES_DRV_INVALID_ARGUMENT,
            "%s descriptor has struct_size %" PRIu32 ", ABI 1.0 needs at least %zu",
            node->inputs->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_tensor_desc_t, dims)
                ? "input 0"
                : "output 0",
            node->inputs->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_tensor_desc_t, dims)
                ? node->inputs->struct_size
                : node->outputs->struct_size,
            SES_DRV_SIZEOF_1_0(ses_drv_tensor_desc_t, dims));

    /* Dtypes first: a launch bound to the wrong entry is named as such, whatever else is off. */
    int dtypes_ok = cpu__tensor_at(node->outputs, 0)->dtype == spec->out;
    for (uint32_t i = 0; i < node->n_inputs; i++) {
        uint32_t want = spec->variadic ? spec->in[0] : spec->in[i];
        if (cpu__tensor_at(node->inputs, i)->dtype != want)
            dtypes_ok = 0;
    }
    if (!dtypes_ok) {
        char have[160], want[64];
        cpu__describe_dtypes(&call, 1, have, sizeof have);
        cpu__describe_dtypes(&call, 0, want, sizeof want);
        return cpu__call_fail(&call, SES_DRV_INVALID_ARGUMENT, "%s, but this kernel is %s", have,
                              want);
    }

    for (uint32_t i = 0; i < node->n_inputs; i++) {
        char role[32] = "input ";
        cpu__format_index(role + 6, sizeof role - 6, i);
        const ses_drv_tensor_desc_t *desc = cpu__tensor_at(node->inputs, i);
        st = cpu__check_tensor(&call, role, desc, launch->inputs[i], launch->input_offsets[i]);
        if (st != SES_DRV_OK)
            return st;
        if (i < CPU__MAX_INPUTS)
            call.in[i] = cpu__view(desc, launch->inputs[i], launch->input_offsets[i]);
    }
    const ses_drv_tensor_desc_t *out = cpu__tensor_at(node->outputs, 0);
    st = cpu__check_tensor(&call, "output 0", out, launch->outputs[0], launch->output_offsets[0]);
    if (st != SES_DRV_OK)
        return st;
    call.out = cpu__view(out, launch->outputs[0], launch->output_offsets[0]);
    if ((st = cpu__check_overlap(&call)) != SES_DRV_OK)
        return st;

    return spec->body(&call);
}

cpu__tensor_t cpu__input(const cpu__call_t *call, uint32_t i) {
    if (i < CPU__MAX_INPUTS)
        return call->in[i];
    return cpu__view(cpu__tensor_at(call->node->inputs, i), call->launch->inputs[i],
                     call->launch->input_offsets[i]);
}

/* ---------------------------------------------------------------------------------------------
 * Attributes
 * ------------------------------------------------------------------------------------------- */

/*
 * Reads attribute @p key of @p type into @p values (room for *inout_count). Returns
 * SES_DRV_NOT_FOUND when the node has none (also when the host gave no attr entry), OK, or
 * SES_DRV_INVALID_ARGUMENT with a message for any other answer.
 */
static int32_t cpu__attr(const cpu__call_t *call, const char *key, uint32_t type,
                         uint64_t *inout_count, void *values) {
    static const char *const type_names[] = {"?", "INT", "FLOAT", "STRING", "INTS", "FLOATS"};

    if (!call->node->attr)
        return SES_DRV_NOT_FOUND;
    int32_t st = call->node->attr(call->node, key, type, inout_count, values);
    if (st == SES_DRV_OK || st == SES_DRV_NOT_FOUND)
        return st;
    return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                          "attribute %s cannot be read as %s (the host's attr answered %" PRId32
                          ")",
                          key, type < 6 ? type_names[type] : "?", st);
}

int32_t cpu__attr_int(const cpu__call_t *call, const char *key, int has_default, int64_t def,
                      int64_t *out) {
    uint64_t count = 1;
    int64_t value = 0;
    int32_t st = cpu__attr(call, key, SES_DRV_ATTR_INT, &count, &value);

    if (st == SES_DRV_NOT_FOUND) {
        if (!has_default)
            return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT, "attribute %s is missing", key);
        *out = def;
        return SES_DRV_OK;
    }
    if (st != SES_DRV_OK)
        return st;
    if (count != 1)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "attribute %s holds %" PRIu64 " values, expected 1 INT", key, count);
    *out = value;
    return SES_DRV_OK;
}

int32_t cpu__attr_float(const cpu__call_t *call, const char *key, double def, double *out) {
    uint64_t count = 1;
    double value = 0;
    int32_t st = cpu__attr(call, key, SES_DRV_ATTR_FLOAT, &count, &value);

    if (st == SES_DRV_NOT_FOUND) {
        *out = def;
        return SES_DRV_OK;
    }
    if (st != SES_DRV_OK)
        return st;
    if (count != 1)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "attribute %s holds %" PRIu64 " values, expected 1 FLOAT", key,
                              count);
    *out = value;
    return SES_DRV_OK;
}

int32_t cpu__attr_ints(const cpu__call_t *call, const char *key, int64_t *out, uint32_t max,
                       uint32_t *out_count) {
    uint64_t count = max;
    int32_t st = cpu__attr(call, key, SES_DRV_ATTR_INTS, &count, out);

    if (st == SES_DRV_NOT_FOUND)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT, "attribute %s is missing", key);
    if (st != SES_DRV_OK)
        return st;
    if (count > max)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "attribute %s holds %" PRIu64 " values; at most %" PRIu32
                              " fit this op's rank",
                              key, count, max);
    *out_count = (uint32_t)count;
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Cancellation
 * ------------------------------------------------------------------------------------------- */

int cpu__cancelled(const cpu__call_t *call) {
    const ses_drv_driver_t *driver = call->device->driver;
    const ses_drv_host_t *host = driver->host;

    if (!host || host->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_host_t, should_abort) ||
        !host->should_abort)
        return 0;
    return host->should_abort(driver->ctx) != 0;
}

/* ---------------------------------------------------------------------------------------------
 * Parallel work
 * ------------------------------------------------------------------------------------------- */

void cpu__parallel(const cpu__call_t *call, uint64_t n_items, uint64_t item_cost, cpu__task_fn fn,
                   void *ctx) {
    cpu__parallel_for(call->device->pool, n_items, item_cost, fn, ctx);
}
