/*
 * The CPU driver's kernel table. For now it holds Identity at every dtype; later ops are added
 * as further entries of the same table.
 *
 * Kernels validate what the host hands them (struct sizes, argument counts, dtypes, shapes and
 * byte ranges) and report a mismatch with both sides named, because a wrong launch from a host
 * bug would otherwise read or write outside a buffer.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <session/driver.h>

#include "cpu_internal.h"

/* ---------------------------------------------------------------------------------------------
 * Dtypes
 * ------------------------------------------------------------------------------------------- */

/* Indexed by SES_DRV_DTYPE_*; entry 0 is SES_DRV_DTYPE_INVALID. */
static const struct {
    const char *name;
    size_t size;
} cpu_dtypes[] = {
    [SES_DRV_DTYPE_F32] = {"f32", 4},   [SES_DRV_DTYPE_F64] = {"f64", 8},
    [SES_DRV_DTYPE_F16] = {"f16", 2},   [SES_DRV_DTYPE_BF16] = {"bf16", 2},
    [SES_DRV_DTYPE_I8] = {"i8", 1},     [SES_DRV_DTYPE_I16] = {"i16", 2},
    [SES_DRV_DTYPE_I32] = {"i32", 4},   [SES_DRV_DTYPE_I64] = {"i64", 8},
    [SES_DRV_DTYPE_U8] = {"u8", 1},     [SES_DRV_DTYPE_U16] = {"u16", 2},
    [SES_DRV_DTYPE_U32] = {"u32", 4},   [SES_DRV_DTYPE_U64] = {"u64", 8},
    [SES_DRV_DTYPE_BOOL] = {"bool", 1},
};

const char *cpu__dtype_name(uint32_t dtype) {
    if (dtype >= sizeof cpu_dtypes / sizeof cpu_dtypes[0])
        return NULL;
    return cpu_dtypes[dtype].name;
}

size_t cpu__dtype_size(uint32_t dtype) {
    if (dtype >= sizeof cpu_dtypes / sizeof cpu_dtypes[0])
        return 0;
    return cpu_dtypes[dtype].size;
}

/* A dtype's name for messages, never NULL. */
static const char *cpu__dtype_label(uint32_t dtype) {
    const char *name = cpu__dtype_name(dtype);
    return name ? name : "unknown dtype";
}

/* ---------------------------------------------------------------------------------------------
 * Launch validation helpers
 * ------------------------------------------------------------------------------------------- */

/*
 * Tensor descriptor @p i of an array written by the host. The array's stride is the host's
 * sizeof, which its struct_size states; it may exceed ours when the host is newer.
 */
static const ses_drv_tensor_desc_t *cpu__tensor_at(const ses_drv_tensor_desc_t *base, uint32_t i) {
    return (const ses_drv_tensor_desc_t *)(const void *)((const unsigned char *)base +
                                                         (size_t)i * base->struct_size);
}

/*
 * Counts the elements of @p t into @p out_count after checking its struct size, dims pointer,
 * that every dim is >= 0 and that the product fits in 64 bits. @p role is "input 0" or
 * "output 0" for messages; @p node_name names the node.
 */
static int32_t cpu__element_count(const ses_drv_device_t *device, const char *node_name,
                                  const char *role, const ses_drv_tensor_desc_t *t,
                                  uint64_t *out_count) {
    const size_t min_size = SES_DRV_SIZEOF_1_0(ses_drv_tensor_desc_t, dims);
    uint64_t count = 1;

    if (t->struct_size < min_size)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "Identity \"%s\": %s descriptor has struct_size %" PRIu32
                                ", ABI 1.0 needs at least %zu",
                                node_name, role, t->struct_size, min_size);
    if (t->rank > 0 && !t->dims)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "Identity \"%s\": %s has rank %" PRIu32 " but dims is NULL",
                                node_name, role, t->rank);
    for (uint32_t d = 0; d < t->rank; d++) {
        int64_t dim = t->dims[d];
        if (dim < 0)
            return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                    "Identity \"%s\": %s dim %" PRIu32 " is %" PRId64
                                    ", dims must be >= 0",
                                    node_name, role, d, dim);
        if (dim != 0 && count > UINT64_MAX / (uint64_t)dim)
            return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                    "Identity \"%s\": %s element count overflows 64 bits",
                                    node_name, role);
        count *= (uint64_t)dim;
    }
    *out_count = count;
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Identity: output = input, at one dtype.
 * ------------------------------------------------------------------------------------------- */

/*
 * The body shared by every Identity entry. @p dtype is the dtype of the entry the host bound,
 * so a node whose dtypes disagree with the bound signature is refused instead of copied at the
 * wrong width.
 */
static int32_t cpu__identity(ses_drv_device_t *device, const ses_drv_launch_t *launch,
                             uint32_t dtype) {
    const size_t launch_min = SES_DRV_SIZEOF_1_0(ses_drv_launch_t, output_offsets);
    const size_t node_min = SES_DRV_SIZEOF_1_0(ses_drv_node_t, attr_ctx);
    uint64_t n_in, n_out, bytes;
    int32_t st;

    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!launch)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT, "Identity: launch is NULL");
    if (launch->struct_size < launch_min)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "Identity: launch has struct_size %" PRIu32
                                ", ABI 1.0 needs at least %zu",
                                launch->struct_size, launch_min);
    const ses_drv_node_t *node = launch->node;
    if (!node)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT, "Identity: launch->node is NULL");
    if (node->struct_size < node_min)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "Identity: node has struct_size %" PRIu32
                                ", ABI 1.0 needs at least %zu",
                                node->struct_size, node_min);
    const char *name = node->name ? node->name : "(unnamed)";
    if (launch->stream)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "Identity \"%s\": got a stream, but the cpu driver has no streams",
                                name);
    if (node->n_inputs != 1 || node->n_outputs != 1)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "Identity \"%s\": has %" PRIu32 " inputs and %" PRIu32
                                " outputs, Identity takes 1 input and 1 output",
                                name, node->n_inputs, node->n_outputs);
    if (!node->inputs || !node->outputs)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "Identity \"%s\": node inputs or outputs is NULL", name);

    const ses_drv_tensor_desc_t *in = cpu__tensor_at(node->inputs, 0);
    const ses_drv_tensor_desc_t *out = cpu__tensor_at(node->outputs, 0);
    if ((st = cpu__element_count(device, name, "input 0", in, &n_in)) != SES_DRV_OK)
        return st;
    if ((st = cpu__element_count(device, name, "output 0", out, &n_out)) != SES_DRV_OK)
        return st;
    if (in->dtype != out->dtype)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "Identity \"%s\": dtypes differ: input is %s, output is %s", name,
                                cpu__dtype_label(in->dtype), cpu__dtype_label(out->dtype));
    if (in->dtype != dtype)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "Identity \"%s\": input is %s, but this kernel is %s->%s", name,
                                cpu__dtype_label(in->dtype), cpu__dtype_label(dtype),
                                cpu__dtype_label(dtype));
    if (n_in != n_out)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "Identity \"%s\": element counts differ: input has %" PRIu64
                                ", output has %" PRIu64,
                                name, n_in, n_out);
    size_t elem = cpu__dtype_size(dtype);
    if (n_in > UINT64_MAX / elem)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "Identity \"%s\": %" PRIu64 " elements of %s overflow 64 bits",
                                name, n_in, cpu__dtype_label(dtype));
    bytes = n_in * elem;

    if (!launch->inputs || !launch->outputs || !launch->input_offsets || !launch->output_offsets)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "Identity \"%s\": launch buffers or offsets are NULL", name);
    const cpu__buffer_t *src = cpu__buffer(launch->inputs[0]);
    const cpu__buffer_t *dst = cpu__buffer(launch->outputs[0]);
    if (!src || !dst)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "Identity \"%s\": %s buffer is NULL", name,
                                !src ? "input 0" : "output 0");
    char what[160];
    snprintf(what, sizeof what, "Identity \"%s\": input 0", name);
    if ((st = cpu__check_range(device, what, src, launch->input_offsets[0], bytes)) != SES_DRV_OK)
        return st;
    snprintf(what, sizeof what, "Identity \"%s\": output 0", name);
    if ((st = cpu__check_range(device, what, dst, launch->output_offsets[0], bytes)) != SES_DRV_OK)
        return st;

    /* memmove: the planner may place the output over its input in one arena. */
    memmove((unsigned char *)dst->data + launch->output_offsets[0],
            (const unsigned char *)src->data + launch->input_offsets[0], (size_t)bytes);
    return SES_DRV_OK;
}

/* One compute entry per dtype, so each knows the signature it was bound under. */
#define CPU__IDENTITY(suffix, DTYPE)                                             \
    static int32_t cpu__identity_##suffix(ses_drv_device_t *device, void *state, \
                                          const ses_drv_launch_t *launch) {      \
        (void)state;                                                             \
        return cpu__identity(device, launch, DTYPE);                             \
    }

CPU__IDENTITY(f32, SES_DRV_DTYPE_F32)
CPU__IDENTITY(f64, SES_DRV_DTYPE_F64)
CPU__IDENTITY(f16, SES_DRV_DTYPE_F16)
CPU__IDENTITY(bf16, SES_DRV_DTYPE_BF16)
CPU__IDENTITY(i8, SES_DRV_DTYPE_I8)
CPU__IDENTITY(i16, SES_DRV_DTYPE_I16)
CPU__IDENTITY(i32, SES_DRV_DTYPE_I32)
CPU__IDENTITY(i64, SES_DRV_DTYPE_I64)
CPU__IDENTITY(u8, SES_DRV_DTYPE_U8)
CPU__IDENTITY(u16, SES_DRV_DTYPE_U16)
CPU__IDENTITY(u32, SES_DRV_DTYPE_U32)
CPU__IDENTITY(u64, SES_DRV_DTYPE_U64)
CPU__IDENTITY(bool, SES_DRV_DTYPE_BOOL)

/* ---------------------------------------------------------------------------------------------
 * The table
 * ------------------------------------------------------------------------------------------- */

#define CPU__KERNEL(op_name, sig, fn)                                                      \
    {                                                                                      \
        .struct_size = sizeof(ses_drv_kernel_t), .op = (op_name), .signature = (sig),      \
        .priority = 0, .flags = 0, .supports_node = NULL, .create = NULL, .destroy = NULL, \
        .compute = (fn),                                                                   \
    }

static const ses_drv_kernel_t cpu_kernels[] = {
    CPU__KERNEL("Identity", "f32->f32", cpu__identity_f32),
    CPU__KERNEL("Identity", "f64->f64", cpu__identity_f64),
    CPU__KERNEL("Identity", "f16->f16", cpu__identity_f16),
    CPU__KERNEL("Identity", "bf16->bf16", cpu__identity_bf16),
    CPU__KERNEL("Identity", "i8->i8", cpu__identity_i8),
    CPU__KERNEL("Identity", "i16->i16", cpu__identity_i16),
    CPU__KERNEL("Identity", "i32->i32", cpu__identity_i32),
    CPU__KERNEL("Identity", "i64->i64", cpu__identity_i64),
    CPU__KERNEL("Identity", "u8->u8", cpu__identity_u8),
    CPU__KERNEL("Identity", "u16->u16", cpu__identity_u16),
    CPU__KERNEL("Identity", "u32->u32", cpu__identity_u32),
    CPU__KERNEL("Identity", "u64->u64", cpu__identity_u64),
    CPU__KERNEL("Identity", "bool->bool", cpu__identity_bool),
};

int32_t cpu__get_kernels(ses_drv_device_t *device, const ses_drv_kernel_t **out_kernels,
                         uint32_t *out_count, uint32_t *out_stride) {
    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_kernels || !out_count || !out_stride)
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "get_kernels: out_kernels, out_count or out_stride is NULL");
    *out_kernels = cpu_kernels;
    *out_count = (uint32_t)(sizeof cpu_kernels / sizeof cpu_kernels[0]);
    *out_stride = (uint32_t)sizeof(ses_drv_kernel_t);
    return SES_DRV_OK;
}
