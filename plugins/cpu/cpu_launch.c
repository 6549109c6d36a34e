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
#include <stdlib.h>
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

/* Writes "input 3" or "output 0" into @p out; only failing checks need the words. */
static const char *cpu__role(char *out, size_t size, int is_output, uint32_t i) {
    snprintf(out, size, "%s %" PRIu32, is_output ? "output" : "input", i);
    return out;
}

/* @p a * @p b into *@p out; non-zero when the product does not fit 64 bits. */
static inline int cpu__mul_overflows(uint64_t a, uint64_t b, uint64_t *out) {
#if defined(__GNUC__)
    return __builtin_mul_overflow(a, b, out);
#else
    if (b != 0 && a > UINT64_MAX / b)
        return 1;
    *out = a * b;
    return 0;
#endif
}

/*
 * Checks one argument and writes its view into @p view: its descriptor (struct size, dims),
 * its element count and byte size, and that those bytes lie inside its buffer at an offset
 * aligned to the element size. The dtype is checked by the caller, which names the whole
 * signature when one differs. @p is_output and @p index name the argument ("input 1",
 * "output 0") in messages, which are only formatted when a check fails: formatting is most of
 * the cost of launching a small kernel otherwise.
 */
static int32_t cpu__check_tensor(const cpu__call_t *call, int is_output, uint32_t index,
                                 const ses_drv_tensor_desc_t *t, ses_drv_buffer_t *buffer,
                                 uint64_t offset, cpu__tensor_t *view) {
    const size_t min_size = SES_DRV_SIZEOF_1_0(ses_drv_tensor_desc_t, dims);
    char role[24];
    uint64_t count = 1;
    uint64_t bytes;
    int32_t st;

    if (t->struct_size < min_size)
        return cpu__call_fail(
            call, SES_DRV_INVALID_ARGUMENT,
            "%s descriptor has struct_size %" PRIu32 ", ABI 1.0 needs at least %zu",
            cpu__role(role, sizeof role, is_output, index), t->struct_size, min_size);
    if (t->rank > 0 && !t->dims)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "%s has rank %" PRIu32 " but dims is NULL",
                              cpu__role(role, sizeof role, is_output, index), t->rank);
    for (uint32_t d = 0; d < t->rank; d++) {
        int64_t dim = t->dims[d];
        if (dim < 0)
            return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                  "%s dim %" PRIu32 " is %" PRId64 ", dims must be >= 0",
                                  cpu__role(role, sizeof role, is_output, index), d, dim);
        if (cpu__mul_overflows(count, (uint64_t)dim, &count))
            return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                  "%s element count overflows 64 bits",
                                  cpu__role(role, sizeof role, is_output, index));
    }
    size_t esize = cpu__dtype_size(t->dtype);
    if (esize == 0)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT, "%s has unknown dtype %" PRIu32,
                              cpu__role(role, sizeof role, is_output, index), t->dtype);
    /* The same test as count > SIZE_MAX / esize, without the division. */
    if (cpu__mul_overflows(count, esize, &bytes) || bytes > SIZE_MAX)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "%s: %" PRIu64 " elements of %s exceed the address space",
                              cpu__role(role, sizeof role, is_output, index), count,
                              cpu__dtype_label(t->dtype));
    const cpu__buffer_t *b = cpu__buffer(buffer);
    if (!b)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT, "%s buffer is NULL",
                              cpu__role(role, sizeof role, is_output, index));
    if (offset > b->size || bytes > b->size - offset) {
        char what[192];
        snprintf(what, sizeof what, "%s \"%s\": %s", call->spec->op, call->name,
                 cpu__role(role, sizeof role, is_output, index));
        if ((st = cpu__check_range(call->device, what, b, offset, bytes)) != SES_DRV_OK)
            return st;
    }
    /* Element sizes are powers of two, so the remainder is a mask. */
    uintptr_t address = (uintptr_t)b->data + (uintptr_t)offset;
    if ((address & (uintptr_t)(esize - 1)) != 0)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "%s at address %p (buffer offset %" PRIu64
                              ") is not aligned to its %zu-byte %s elements",
                              cpu__role(role, sizeof role, is_output, index), (void *)address,
                              offset, esize, cpu__dtype_label(t->dtype));
    view->data = (unsigned char *)b->data + offset;
    view->dims = t->dims;
    view->count = count;
    view->esize = esize;
    view->dtype = t->dtype;
    view->rank = t->rank;
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
            uint32_t dtype = ses_drv_util_tensor_at(node->inputs, i)->dtype;
            n = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", cpu__dtype_label(dtype));
            used += n > 0 ? (size_t)n : 0;
        }
        if (used < size)
            snprintf(buf + used, size - used, ", output is %s",
                     cpu__dtype_label(ses_drv_util_tensor_at(node->outputs, 0)->dtype));
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
    case CPU__OP_COPY:
    case CPU__OP_SCALARLIKE: return CPU__OVERLAP_ANY; /* ScalarLike reads nothing */
    case CPU__OP_EXPANDLIKE:
    case CPU__OP_REDUCESUMLIKE:
    case CPU__OP_MATMULGRAD:
    case CPU__OP_REDUCEGRAD:
    case CPU__OP_GATHERGRAD:
    case CPU__OP_SLICEGRAD:
    case CPU__OP_MATMUL:
    case CPU__OP_GEMM:
    case CPU__OP_FUSEDGEMM:
    case CPU__OP_FUSEDCONV:
    case CPU__OP_NCHWC_CONV:
    case CPU__OP_NCHWC_MAXPOOL:
    case CPU__OP_NCHWC_AVGPOOL:
    case CPU__OP_NCHWC_GLOBALAVGPOOL:
    case CPU__OP_NCHWC_GLOBALMAXPOOL:
    case CPU__OP_NCHWC_REORDER_OUTPUT:
    case CPU__OP_REDUCESUM:
    case CPU__OP_REDUCEMAX:
    case CPU__OP_REDUCEMEAN:
    case CPU__OP_ARGMAX:
    case CPU__OP_REDUCEMIN:
    case CPU__OP_REDUCEPROD:
    case CPU__OP_REDUCEL1:
    case CPU__OP_REDUCEL2:
    case CPU__OP_REDUCELOGSUM:
    case CPU__OP_REDUCELOGSUMEXP:
    case CPU__OP_REDUCESUMSQUARE:
    case CPU__OP_ARGMIN:
    case CPU__OP_TRANSPOSE:
    case CPU__OP_CONCAT:
    case CPU__OP_SLICE:
    case CPU__OP_GATHER:
    case CPU__OP_NLL_LOSS:
    case CPU__OP_NLL_GRAD:
    case CPU__OP_GATHERELEMENTS:
    case CPU__OP_SCATTERELEMENTS:
    case CPU__OP_GATHERND:
    case CPU__OP_SCATTERND:
    case CPU__OP_ONEHOT:
    case CPU__OP_TRILU:
    case CPU__OP_CUMSUM:
    case CPU__OP_HARDMAX:
    case CPU__OP_LAYERNORM:
    case CPU__OP_LAYERNORMGRAD:
    /* group g-act: read across the whole input while writing */
    case CPU__OP_DET:
    case CPU__OP_HANNWINDOW:
    case CPU__OP_HAMMINGWINDOW:
    case CPU__OP_BLACKMANWINDOW:
    case CPU__OP_MELWEIGHTMATRIX:
    case CPU__OP_DFT:
    case CPU__OP_STFT: return CPU__OVERLAP_NONE;
    /* elementwise, Cast, Softmax, LogSoftmax, the activation and softmax gradients */
    default: return CPU__OVERLAP_EXACT;
    }
}

uint64_t cpu__reuse_by_rule(ses_drv_device_t *device, const ses_drv_node_t *node, uint32_t output,
                            const cpu__spec_t *spec) {
    (void)device;
    if (!node || output != 0 || node->n_inputs == 0 || node->n_inputs > 64 ||
        cpu__overlap_rule(spec->code) == CPU__OVERLAP_NONE)
        return 0;
    return node->n_inputs == 64 ? ~UINT64_C(0) : (UINT64_C(1) << node->n_inputs) - 1;
}

/* The bytes a checked view covers. */
static inline uint64_t cpu__bytes(const cpu__tensor_t *t) {
    return t->count * t->esize;
}

/*
 * Non-zero when the output's @p o_bytes at @p o may share bytes with an input's @p a_bytes at
 * @p a under @p rule: the planner may reuse an input's bytes for the output only as
 * cpu__overlap_rule allows. Addresses are compared as integers, since the ranges may lie in
 * different allocations.
 */
static inline int cpu__overlap_ok(enum cpu__overlap rule, uintptr_t o, uint64_t o_bytes,
                                  uintptr_t a, uint64_t a_bytes) {
    if (rule == CPU__OVERLAP_ANY || o_bytes == 0 || a_bytes == 0 || a >= o + o_bytes ||
        o >= a + a_bytes)
        return 1;
    return rule == CPU__OVERLAP_EXACT && a == o && a_bytes == o_bytes;
}

/*
 * The first input whose bytes overlap the output's in a way the op cannot compute through
 * (cpu__overlap_ok), or call->n_in when there is none. Inputs past CPU__MAX_INPUTS (Concat) are
 * viewed through cpu__input.
 */
static inline uint32_t cpu__find_overlap(const cpu__call_t *call, enum cpu__overlap rule) {
    const uintptr_t o = (uintptr_t)call->out.data;
    const uint64_t o_bytes = cpu__bytes(&call->out);

    if (rule == CPU__OVERLAP_ANY || o_bytes == 0)
        return call->n_in;
    for (uint32_t i = 0; i < call->n_in; i++) {
        cpu__tensor_t extra;
        const cpu__tensor_t *t;
        /* Inputs past the array are viewed on the fly; never index past it. */
        if (i < CPU__MAX_INPUTS) {
            t = &call->in[i];
        } else {
            extra = cpu__input(call, i);
            t = &extra;
        }
        if (!cpu__overlap_ok(rule, o, o_bytes, (uintptr_t)t->data, cpu__bytes(t)))
            return i;
    }
    return call->n_in;
}

/* Refuses an overlap that cpu__find_overlap finds, naming both ranges. */
static int32_t cpu__check_overlap(const cpu__call_t *call) {
    const enum cpu__overlap rule = cpu__overlap_rule(call->spec->code);
    const uint32_t i = cpu__find_overlap(call, rule);

    if (i == call->n_in)
        return SES_DRV_OK;
    cpu__tensor_t t = cpu__input(call, i);
    return cpu__call_fail(
        call, SES_DRV_INVALID_ARGUMENT,
        "output 0 (%" PRIu64 " bytes at %p) overlaps input %" PRIu32 " (%" PRIu64
        " bytes at %p); %s",
        cpu__bytes(&call->out), (void *)call->out.data, i, cpu__bytes(&t), (void *)t.data,
        rule == CPU__OVERLAP_EXACT ? "this op runs in place only over exactly one input's bytes"
                                   : "this op cannot run in place");
}

/* The launch's head: a device, a launch and its node, each at least ABI 1.0's size. */
static CPU__COLD int32_t cpu__check_launch_head(ses_drv_device_t *device,
                                                const ses_drv_launch_t *launch,
                                                const cpu__spec_t *spec) {
    const size_t launch_min = SES_DRV_SIZEOF_1_0(ses_drv_launch_t, output_offsets);
    const size_t node_min = SES_DRV_SIZEOF_1_0(ses_drv_node_t, attr_ctx);

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
    return SES_DRV_OK;
}

/*
 * Checks @p launch against @p spec one step at a time, refusing the first thing that is wrong
 * with a message that names it, and runs the body when nothing is. cpu__run comes here when its
 * quick pass (cpu__launch_ok) refuses a launch, so the order of these checks decides which
 * message a bad launch gets.
 */
static CPU__COLD int32_t cpu__run_checked(ses_drv_device_t *device, const ses_drv_launch_t *launch,
                                          const cpu__spec_t *spec) {
    cpu__call_t call;
    int32_t st;

    if ((st = cpu__check_launch_head(device, launch, spec)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;

    /* Field by field rather than a memset of the whole call: the views are written below as
     * each argument is checked, and the slots past n_in are zeroed there. */
    call.device = device;
    call.launch = launch;
    call.node = node;
    call.spec = spec;
    call.name = node->name ? node->name : "(unnamed)";
    call.n_in = node->n_inputs;
    call.prep = NULL;

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
    int dtypes_ok = ses_drv_util_tensor_at(node->outputs, 0)->dtype == spec->out;
    for (uint32_t i = 0; i < node->n_inputs; i++) {
        uint32_t want = spec->variadic ? spec->in[0] : spec->in[i];
        if (ses_drv_util_tensor_at(node->inputs, i)->dtype != want)
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
        cpu__tensor_t extra; /* inputs past CPU__MAX_INPUTS are viewed again by cpu__input */
        cpu__tensor_t *view = i < CPU__MAX_INPUTS ? &call.in[i] : &extra;
        st = cpu__check_tensor(&call, 0, i, ses_drv_util_tensor_at(node->inputs, i), launch->inputs[i],
                               launch->input_offsets[i], view);
        if (st != SES_DRV_OK)
            return st;
    }
    for (uint32_t i = node->n_inputs; i < CPU__MAX_INPUTS; i++)
        memset(&call.in[i], 0, sizeof call.in[i]);
    st = cpu__check_tensor(&call, 1, 0, ses_drv_util_tensor_at(node->outputs, 0), launch->outputs[0],
                           launch->output_offsets[0], &call.out);
    if (st != SES_DRV_OK)
        return st;
    if ((st = cpu__check_overlap(&call)) != SES_DRV_OK)
        return st;

    return spec->body(&call);
}

/* ---------------------------------------------------------------------------------------------
 * The quick path: the same checks as predicates that format nothing
 * ------------------------------------------------------------------------------------------- */

/*
 * The descriptor checks of cpu__check_tensor: struct size, dims, element count and byte size.
 * Non-zero, with the count, byte size and element size stored, when all pass.
 */
static inline int cpu__shape_ok(const ses_drv_tensor_desc_t *t, uint64_t *out_count,
                                uint64_t *out_bytes, size_t *out_esize) {
    uint64_t count = 1;

    if (t->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_tensor_desc_t, dims) ||
        (t->rank > 0 && !t->dims))
        return 0;
    for (uint32_t d = 0; d < t->rank; d++)
        if (t->dims[d] < 0 || cpu__mul_overflows(count, (uint64_t)t->dims[d], &count))
            return 0;
    const size_t esize = cpu__dtype_size(t->dtype);
    if (esize == 0 || cpu__mul_overflows(count, esize, out_bytes) || *out_bytes > SIZE_MAX)
        return 0;
    *out_count = count;
    *out_esize = esize;
    return 1;
}

/*
 * The buffer checks of cpu__check_tensor: @p bytes at @p offset lie inside @p buffer, aligned
 * to @p esize (a power of two). Non-zero, with view->data set, when they do.
 */
static inline int cpu__place_ok(ses_drv_buffer_t *buffer, uint64_t offset, uint64_t bytes,
                                size_t esize, cpu__tensor_t *view) {
    const cpu__buffer_t *b = cpu__buffer(buffer);

    if (!b || offset > b->size || bytes > b->size - offset)
        return 0;
    if ((((uintptr_t)b->data + (uintptr_t)offset) & (uintptr_t)(esize - 1)) != 0)
        return 0;
    view->data = (unsigned char *)b->data + offset;
    return 1;
}

/* All of cpu__check_tensor: non-zero, with @p view written, when every check passes. */
static inline int cpu__tensor_ok(const ses_drv_tensor_desc_t *t, ses_drv_buffer_t *buffer,
                                 uint64_t offset, cpu__tensor_t *view) {
    uint64_t bytes;

    if (!cpu__shape_ok(t, &view->count, &bytes, &view->esize) ||
        !cpu__place_ok(buffer, offset, bytes, view->esize, view))
        return 0;
    view->dims = t->dims;
    view->dtype = t->dtype;
    view->rank = t->rank;
    return 1;
}

/*
 * The checks of a launch and its node that do not depend on the kernel: struct sizes, no
 * stream, one output, the arrays present, and the first descriptors' struct sizes (the arrays'
 * stride, needed before striding). The node, or NULL when one fails.
 */
static inline const ses_drv_node_t *cpu__frame_ok(const ses_drv_device_t *device,
                                                  const ses_drv_launch_t *launch) {
    if (!device || !launch ||
        launch->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_launch_t, output_offsets))
        return NULL;
    const ses_drv_node_t *node = launch->node;
    if (!node || node->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_node_t, attr_ctx) ||
        launch->stream || node->n_outputs != 1)
        return NULL;
    if (!node->inputs || !node->outputs || !launch->inputs || !launch->outputs ||
        !launch->input_offsets || !launch->output_offsets)
        return NULL;
    if (node->inputs->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_tensor_desc_t, dims) ||
        node->outputs->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_tensor_desc_t, dims))
        return NULL;
    return node;
}

/* Fills the fields of @p call that come from the launch itself. */
static inline void cpu__call_init(cpu__call_t *call, ses_drv_device_t *device,
                                  const ses_drv_launch_t *launch, const cpu__spec_t *spec,
                                  const cpu__prep_t *prep) {
    const ses_drv_node_t *node = launch->node;

    call->device = device;
    call->launch = launch;
    call->node = node;
    call->spec = spec;
    call->name = node->name ? node->name : "(unnamed)";
    call->n_in = node->n_inputs;
    call->prep = prep;
    /* Field by field rather than a memset of the whole call: the views are written as each
     * argument is checked, and only the slots past n_in need zeroing. */
    for (uint32_t i = call->n_in; i < CPU__MAX_INPUTS; i++)
        memset(&call->in[i], 0, sizeof call->in[i]);
}

/*
 * Every check of cpu__run_checked, in one pass that formats nothing: non-zero, with @p call
 * built, when the launch passes them all. It is the path every good launch takes, so it stays
 * free of snprintf and of the order that picks a bad launch's message.
 */
static inline int cpu__launch_ok(ses_drv_device_t *device, const ses_drv_launch_t *launch,
                                 const cpu__spec_t *spec, cpu__call_t *call) {
    const ses_drv_node_t *node = cpu__frame_ok(device, launch);

    if (!node)
        return 0;
    const uint32_t n_in = node->n_inputs;
    if (spec->variadic ? n_in < 1 : n_in != spec->n_inputs)
        return 0;
    cpu__call_init(call, device, launch, spec, NULL);
    for (uint32_t i = 0; i < n_in; i++) {
        const ses_drv_tensor_desc_t *desc = ses_drv_util_tensor_at(node->inputs, i);
        cpu__tensor_t extra; /* inputs past CPU__MAX_INPUTS are viewed again by cpu__input */
        if (desc->dtype != (spec->variadic ? spec->in[0] : spec->in[i]))
            return 0;
        if (!cpu__tensor_ok(desc, launch->inputs[i], launch->input_offsets[i],
                            i < CPU__MAX_INPUTS ? &call->in[i] : &extra))
            return 0;
    }
    const ses_drv_tensor_desc_t *out = ses_drv_util_tensor_at(node->outputs, 0);
    if (out->dtype != spec->out ||
        !cpu__tensor_ok(out, launch->outputs[0], launch->output_offsets[0], &call->out))
        return 0;
    return cpu__find_overlap(call, cpu__overlap_rule(spec->code)) == n_in;
}

CPU__NOINLINE int32_t cpu__run(ses_drv_device_t *device, const ses_drv_launch_t *launch,
                               const cpu__spec_t *spec) {
    cpu__call_t call;

    if (cpu__launch_ok(device, launch, spec, &call))
        return spec->body(&call);
    /* Something is wrong: check again, one step at a time, to say what. */
    return cpu__run_checked(device, launch, spec);
}

/* ---------------------------------------------------------------------------------------------
 * General entries: any number of inputs and outputs
 * ------------------------------------------------------------------------------------------- */

/* "inputs are f32, i64, outputs are f32, f32" (or "no outputs") for a general launch's node. */
static void cpu__describe_general(const ses_drv_node_t *node, char *buf, size_t size) {
    size_t used = 0;
    int n = snprintf(buf, size, "%s ", node->n_inputs == 1 ? "input is" : "inputs are");

    used = n > 0 ? (size_t)n : 0;
    for (uint32_t i = 0; i < node->n_inputs && used < size; i++) {
        n = snprintf(buf + used, size - used, "%s%s", i ? ", " : "",
                     cpu__dtype_label(ses_drv_util_tensor_at(node->inputs, i)->dtype));
        used += n > 0 ? (size_t)n : 0;
    }
    if (used < size && node->n_outputs == 0)
        snprintf(buf + used, size - used, ", no outputs");
    for (uint32_t i = 0; i < node->n_outputs && used < size; i++) {
        n = snprintf(buf + used, size - used, "%s%s",
                     i ? ", " : node->n_outputs == 1 ? ", output is " : ", outputs are ",
                     cpu__dtype_label(ses_drv_util_tensor_at(node->outputs, i)->dtype));
        used += n > 0 ? (size_t)n : 0;
    }
}

/* Refuses two arguments of a general call that share bytes: @p a is input or output @p ai,
 * @p b input or output @p bi; @p why ends the message. */
static int32_t cpu__general_overlap(const cpu__call_t *call, int a_out, uint32_t ai,
                                    const cpu__tensor_t *a, int b_out, uint32_t bi,
                                    const cpu__tensor_t *b, const char *why) {
    char ra[24], rb[24];

    if (cpu__overlap_ok(CPU__OVERLAP_NONE, (uintptr_t)a->data, cpu__bytes(a), (uintptr_t)b->data,
                        cpu__bytes(b)))
        return SES_DRV_OK;
    return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                          "%s (%" PRIu64 " bytes at %p) overlaps %s (%" PRIu64 " bytes at %p); %s",
                          cpu__role(ra, sizeof ra, a_out, ai), cpu__bytes(a), (void *)a->data,
                          cpu__role(rb, sizeof rb, b_out, bi), cpu__bytes(b), (void *)b->data,
                          why);
}

int32_t cpu__run_general(ses_drv_device_t *device, const ses_drv_launch_t *launch,
                         const cpu__spec_t *spec, void *state) {
    const size_t desc_min = SES_DRV_SIZEOF_1_0(ses_drv_tensor_desc_t, dims);
    cpu__tensor_t in[CPU__GENERAL_MAX_INPUTS];
    cpu__call_t call;
    int32_t st;

    if ((st = cpu__check_launch_head(device, launch, spec)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;

    memset(&call, 0, sizeof call);
    call.device = device;
    call.launch = launch;
    call.node = node;
    call.spec = spec;
    call.name = node->name ? node->name : "(unnamed)";
    call.n_in = node->n_inputs;
    call.n_out = node->n_outputs;
    call.state = state;

    if (launch->stream)
        return cpu__call_fail(&call, SES_DRV_INVALID_ARGUMENT,
                              "got a stream, but the cpu driver has no streams");
    if (node->n_inputs != spec->n_inputs || node->n_outputs != spec->n_outputs)
        return cpu__call_fail(&call, SES_DRV_INVALID_ARGUMENT,
                              "has %" PRIu32 " inputs and %" PRIu32
                              " outputs; this kernel (%s) takes %" PRIu32 " input%s and %" PRIu32
                              " output%s",
                              node->n_inputs, node->n_outputs, spec->signature, spec->n_inputs,
                              spec->n_inputs == 1 ? "" : "s", spec->n_outputs,
                              spec->n_outputs == 1 ? "" : "s");
    /* Output arrays are read only when there are outputs: an op without any may get NULL. */
    if ((node->n_inputs && (!node->inputs || !launch->inputs || !launch->input_offsets)) ||
        (node->n_outputs && (!node->outputs || !launch->outputs || !launch->output_offsets)))
        return cpu__call_fail(&call, SES_DRV_INVALID_ARGUMENT,
                              "node descriptors, launch buffers or offsets are NULL");
    /* The first descriptor's struct_size is the array's stride: check it before striding. */
    if (node->n_inputs && node->inputs->struct_size < desc_min)
        return cpu__call_fail(&call, SES_DRV_INVALID_ARGUMENT,
                              "input 0 descriptor has struct_size %" PRIu32
                              ", ABI 1.0 needs at least %zu",
                              node->inputs->struct_size, desc_min);
    if (node->n_outputs && node->outputs->struct_size < desc_min)
        return cpu__call_fail(&call, SES_DRV_INVALID_ARGUMENT,
                              "output 0 descriptor has struct_size %" PRIu32
                              ", ABI 1.0 needs at least %zu",
                              node->outputs->struct_size, desc_min);

    /* Dtypes first: a launch bound to the wrong entry is named as such, whatever else is off. */
    int dtypes_ok = 1;
    for (uint32_t i = 0; i < node->n_inputs; i++)
        dtypes_ok &= ses_drv_util_tensor_at(node->inputs, i)->dtype == spec->in[i];
    for (uint32_t i = 0; i < node->n_outputs; i++)
        dtypes_ok &= ses_drv_util_tensor_at(node->outputs, i)->dtype == spec->outs[i];
    if (!dtypes_ok) {
        char have[256];
        cpu__describe_general(node, have, sizeof have);
        return cpu__call_fail(&call, SES_DRV_INVALID_ARGUMENT, "%s, but this kernel is %s", have,
                              spec->signature);
    }

    for (uint32_t i = 0; i < node->n_inputs; i++) {
        st = cpu__check_tensor(&call, 0, i, ses_drv_util_tensor_at(node->inputs, i), launch->inputs[i],
                               launch->input_offsets[i], &in[i]);
        if (st != SES_DRV_OK)
            return st;
        if (i < CPU__MAX_INPUTS)
            call.in[i] = in[i];
    }
    for (uint32_t o = 0; o < node->n_outputs; o++) {
        st = cpu__check_tensor(&call, 1, o, ses_drv_util_tensor_at(node->outputs, o), launch->outputs[o],
                               launch->output_offsets[o], &call.outs[o]);
        if (st != SES_DRV_OK)
            return st;
    }
    if (node->n_outputs)
        call.out = call.outs[0];

    /* Outputs share no byte with inputs or with each other, but for an output written over
     * exactly the bytes of an input its entry allows (DRV-86); an input written in place shares
     * none with any other argument (two read-only inputs may be the same bytes). */
    for (uint32_t o = 0; o < node->n_outputs; o++) {
        const uint64_t reuse = spec->reuse ? spec->reuse(device, node, o) : 0;
        for (uint32_t i = 0; i < node->n_inputs; i++) {
            if (i < 64 && (reuse & (UINT64_C(1) << i)) && call.outs[o].data == in[i].data &&
                cpu__bytes(&call.outs[o]) == cpu__bytes(&in[i]))
                continue;
            if ((st = cpu__general_overlap(&call, 1, o, &call.outs[o], 0, i, &in[i],
                                           "this op cannot run in place")) != SES_DRV_OK)
                return st;
        }
        for (uint32_t p = o + 1; p < node->n_outputs; p++)
            if ((st = cpu__general_overlap(&call, 1, o, &call.outs[o], 1, p, &call.outs[p],
                                           "outputs must not share bytes")) != SES_DRV_OK)
                return st;
    }
    for (uint32_t i = 0; i < node->n_inputs; i++) {
        if (!(spec->inplace >> i & 1))
            continue;
        for (uint32_t k = 0; k < node->n_inputs; k++)
            if (k != i &&
                (st = cpu__general_overlap(&call, 0, i, &in[i], 0, k, &in[k],
                                           "an input updated in place must not share bytes with "
                                           "another argument")) != SES_DRV_OK)
                return st;
    }
    return spec->body(&call);
}

/* ---------------------------------------------------------------------------------------------
 * Per-node state
 * ------------------------------------------------------------------------------------------- */

/* Non-zero for the ops that broadcast their inputs (cpu__broadcast_setup). */
static int cpu__op_broadcasts(uint32_t code) {
    switch (code) {
    case CPU__OP_ADD:
    case CPU__OP_SUB:
    case CPU__OP_MUL:
    case CPU__OP_DIV:
    case CPU__OP_POW:
    case CPU__OP_PRELU:
    case CPU__OP_MOD:
    case CPU__OP_BITSHIFT:
    case CPU__OP_AND:
    case CPU__OP_OR:
    case CPU__OP_XOR:
    case CPU__OP_EQUAL:
    case CPU__OP_GREATER:
    case CPU__OP_LESS:
    case CPU__OP_WHERE: return 1;
    default: return 0;
    }
}

/*
 * The node checks of cpu__launch_ok, with ranks within CPU__MAX_RANK and at most
 * CPU__MAX_INPUTS inputs: non-zero, with @p in and @p out filled (data NULL), when they pass.
 */
static int cpu__node_ok(const ses_drv_node_t *node, const cpu__spec_t *spec, cpu__tensor_t *in,
                        cpu__tensor_t *out) {
    const size_t desc_min = SES_DRV_SIZEOF_1_0(ses_drv_tensor_desc_t, dims);
    uint64_t bytes;

    if (!node || node->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_node_t, attr_ctx) ||
        spec->variadic || node->n_inputs != spec->n_inputs || node->n_inputs > CPU__MAX_INPUTS ||
        node->n_outputs != 1 || !node->inputs || !node->outputs ||
        node->inputs->struct_size < desc_min || node->outputs->struct_size < desc_min)
        return 0;
    for (uint32_t i = 0; i <= node->n_inputs; i++) {
        const int is_out = i == node->n_inputs;
        const ses_drv_tensor_desc_t *t =
            is_out ? ses_drv_util_tensor_at(node->outputs, 0) : ses_drv_util_tensor_at(node->inputs, i);
        cpu__tensor_t *view = is_out ? out : &in[i];
        if (t->dtype != (is_out ? spec->out : spec->in[i]) || t->rank > CPU__MAX_RANK ||
            !cpu__shape_ok(t, &view->count, &bytes, &view->esize))
            return 0;
        view->data = NULL;
        view->dims = t->dims;
        view->dtype = t->dtype;
        view->rank = t->rank;
    }
    return 1;
}

/* Copies a checked view into a state's argument, its dims into @p storage. */
static void cpu__arg_set(cpu__arg_t *a, const cpu__tensor_t *t, int64_t *storage) {
    if (t->rank > 0)
        memcpy(storage, t->dims, t->rank * sizeof *storage);
    a->dims = storage;
    a->count = t->count;
    a->bytes = t->count * t->esize;
    a->esize = t->esize;
    a->dtype = t->dtype;
    a->rank = t->rank;
}

int32_t cpu__create(ses_drv_device_t *device, const ses_drv_node_t *node, const cpu__spec_t *spec,
                    void **out_state) {
    cpu__tensor_t in[CPU__MAX_INPUTS], out;
    cpu__prep_t *prep = NULL;
    int32_t st;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_state)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT, "%s: create: out_state is NULL",
                                spec->op);
    *out_state = NULL;
    /* A node its launches would refuse gets no state: they take the unprepared path and are
     * refused there, with the message that names what is wrong. */
    if (!cpu__node_ok(node, spec, in, &out))
        return SES_DRV_OK;

    const uint32_t n_in = node->n_inputs;
    size_t n_dims = out.rank;
    for (uint32_t i = 0; i < n_in; i++)
        n_dims += in[i].rank;
    const size_t size = sizeof *prep + n_dims * sizeof prep->dims[0];
    prep = malloc(size);
    if (!prep) {
        st = cpu__device_fail(device, SES_DRV_OUT_OF_MEMORY,
                              "%s \"%s\": cannot allocate the kernel's state (%zu bytes)", spec->op,
                              node->name ? node->name : "(unnamed)", size);
        goto fail;
    }
    prep->spec = spec;
    prep->n_in = n_in;
    prep->overlap = (uint32_t)cpu__overlap_rule(spec->code);
    prep->walk = CPU__WALK_NONE;
    prep->strided = NULL;
    prep->row = NULL;
    prep->direct = 0;
    prep->gemm = NULL;
    if ((spec->code == CPU__OP_MATMUL || spec->code == CPU__OP_GEMM) &&
        out.dtype == SES_DRV_DTYPE_F32) {
        int oom = 0;
        prep->gemm = cpu__gemm_state_new(node, &oom);
        if (oom) {
            st = cpu__device_fail(device, SES_DRV_OUT_OF_MEMORY,
                                  "%s \"%s\": cannot allocate the kernel's state", spec->op,
                                  node->name ? node->name : "(unnamed)");
            goto fail;
        }
    }
    int64_t *storage = prep->dims;
    for (uint32_t i = 0; i < n_in; i++) {
        cpu__arg_set(&prep->in[i], &in[i], storage);
        storage += in[i].rank;
    }
    cpu__arg_set(&prep->out, &out, storage);

    /* Shapes that do not broadcast keep CPU__WALK_NONE: the body refuses them at launch. */
    if (cpu__op_broadcasts(spec->code)) {
        if (cpu__broadcast_flat(in, n_in, &out, prep->flat_step)) {
            prep->walk = CPU__WALK_FLAT;
            uint64_t cost = 1;
            prep->row = cpu__elementwise_row(spec, &cost);
            /* Small enough to run inline whatever the pool, and not empty (the body returns
             * before its loop then). */
            prep->direct = prep->row && out.count > 0 && cpu__parallel_small(out.count, cost);
        } else {
            prep->strided = malloc(sizeof *prep->strided);
            if (!prep->strided) {
                st = cpu__device_fail(device, SES_DRV_OUT_OF_MEMORY,
                                      "%s \"%s\": cannot allocate the kernel's state (%zu bytes)",
                                      spec->op, node->name ? node->name : "(unnamed)",
                                      sizeof *prep->strided);
                goto fail;
            }
            if (cpu__broadcast_plan(in, n_in, &out, prep->strided)) {
                prep->walk = CPU__WALK_STRIDED;
            } else {
                free(prep->strided);
                prep->strided = NULL;
            }
        }
    }
    *out_state = prep;
    return SES_DRV_OK;

fail:
    cpu__destroy(device, prep);
    return st;
}

void cpu__destroy(ses_drv_device_t *device, void *state) {
    cpu__prep_t *prep = state;

    (void)device;
    if (!prep)
        return;
    cpu__gemm_state_free(prep->gemm);
    free(prep->strided);
    free(prep);
}

/*
 * One argument of a prepared launch: its descriptor says what create saw (dtype, rank, dims)
 * and its bytes lie inside its buffer, aligned. The address of its first element, or NULL when
 * something differs. (A zero-size argument at offset 0 of an empty buffer is still non-NULL:
 * every buffer's data is.)
 */
static inline unsigned char *cpu__arg_at(const cpu__arg_t *a, const ses_drv_tensor_desc_t *t,
                                         ses_drv_buffer_t *buffer, uint64_t offset) {
    const cpu__buffer_t *b = cpu__buffer(buffer);

    if (t->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_tensor_desc_t, dims) || t->dtype != a->dtype ||
        t->rank != a->rank || (a->rank > 0 && !t->dims))
        return NULL;
    for (uint32_t d = 0; d < a->rank; d++)
        if (t->dims[d] != a->dims[d])
            return NULL;
    if (!b || !b->data || offset > b->size || a->bytes > b->size - offset)
        return NULL;
    unsigned char *data = (unsigned char *)b->data + offset;
    if (((uintptr_t)data & (uintptr_t)(a->esize - 1)) != 0)
        return NULL;
    return data;
}

/*
 * cpu__launch_ok for a launch of a prepared node: the node must have the shapes and dtypes
 * create checked, which leaves the buffers to check. Non-zero, with the first element of each
 * input and then of the output in @p data, when all is well; zero sends the launch through
 * cpu__run, which checks it from scratch.
 */
static inline int cpu__prepared_ok(const ses_drv_device_t *device, const ses_drv_launch_t *launch,
                                   const cpu__prep_t *prep, unsigned char **data, const void **in) {
    const ses_drv_node_t *node = cpu__frame_ok(device, launch);
    const uint32_t n_in = prep->n_in;
    const enum cpu__overlap rule = (enum cpu__overlap)prep->overlap;

    if (!node || node->n_inputs != n_in)
        return 0;
    data[n_in] = cpu__arg_at(&prep->out, ses_drv_util_tensor_at(node->outputs, 0), launch->outputs[0],
                             launch->output_offsets[0]);
    if (!data[n_in])
        return 0;
    for (uint32_t i = 0; i < n_in; i++) {
        data[i] = cpu__arg_at(&prep->in[i], ses_drv_util_tensor_at(node->inputs, i), launch->inputs[i],
                              launch->input_offsets[i]);
        if (!data[i] || !cpu__overlap_ok(rule, (uintptr_t)data[n_in], prep->out.bytes,
                                         (uintptr_t)data[i], prep->in[i].bytes))
            return 0;
        in[i] = data[i];
    }
    return 1;
}

/* A checked view of a prepared argument. */
static inline void cpu__arg_view(const cpu__arg_t *a, unsigned char *data, cpu__tensor_t *view) {
    view->data = data;
    view->dims = a->dims;
    view->count = a->count;
    view->esize = a->esize;
    view->dtype = a->dtype;
    view->rank = a->rank;
}

/* A prepared launch that the body computes: a large output, or an op that checks its data. */
static CPU__NOINLINE int32_t cpu__run_prepared_body(ses_drv_device_t *device,
                                                    const ses_drv_launch_t *launch,
                                                    const cpu__prep_t *prep,
                                                    unsigned char *const *data) {
    cpu__call_t call;

    cpu__call_init(&call, device, launch, prep->spec, prep);
    for (uint32_t i = 0; i < prep->n_in; i++)
        cpu__arg_view(&prep->in[i], data[i], &call.in[i]);
    cpu__arg_view(&prep->out, data[prep->n_in], &call.out);
    return prep->spec->body(&call);
}

int32_t cpu__run_prepared(ses_drv_device_t *device, const void *state,
                          const ses_drv_launch_t *launch, const cpu__spec_t *spec) {
    const cpu__prep_t *prep = state;
    unsigned char *data[CPU__MAX_INPUTS + 1];
    const void *in[CPU__MAX_INPUTS];

    if (!prep || prep->spec != spec || !cpu__prepared_ok(device, launch, prep, data, in))
        return cpu__run(device, launch, spec);
    /* The loop create chose, run here: what the body would do for this small a node (the
     * single row of cpu__broadcast_setup, run inline by cpu__strided_parallel), without it. */
    if (prep->direct) {
        prep->row(data[prep->n_in], in, prep->flat_step, (size_t)prep->out.count, NULL);
        return SES_DRV_OK;
    }
    return cpu__run_prepared_body(device, launch, prep, data);
}

cpu__tensor_t cpu__input(const cpu__call_t *call, uint32_t i) {
    if (i < CPU__MAX_INPUTS)
        return call->in[i];
    return cpu__view(ses_drv_util_tensor_at(call->node->inputs, i), call->launch->inputs[i],
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

/* A list attribute of @p type (INTS or FLOATS) of at most @p max values into @p out. */
static int32_t cpu__attr_list(const cpu__call_t *call, const char *key, uint32_t type, void *out,
                              uint32_t max, uint32_t *out_count) {
    uint64_t count = max;
    int32_t st = cpu__attr(call, key, type, &count, out);

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

int32_t cpu__attr_ints(const cpu__call_t *call, const char *key, int64_t *out, uint32_t max,
                       uint32_t *out_count) {
    return cpu__attr_list(call, key, SES_DRV_ATTR_INTS, out, max, out_count);
}

int32_t cpu__attr_floats(const cpu__call_t *call, const char *key, double *out, uint32_t max,
                         uint32_t *out_count) {
    return cpu__attr_list(call, key, SES_DRV_ATTR_FLOATS, out, max, out_count);
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
