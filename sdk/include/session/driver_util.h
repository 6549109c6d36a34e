/*
 * Helpers for driver authors: the plumbing every driver of <session/driver.h> writes the same
 * way, written once. Header-only (static inline functions and macros), so a driver that uses it
 * still links nothing of libsession's; using it is optional and changes nothing on the wire.
 *
 *   SES_DRV_UTIL_HAS(p, type, field)   a versioned struct *p is long enough to hold field
 *   SES_DRV_UTIL_HOST_HAS(host, fn)    the host table has service fn, and it is set
 *   ses_drv_util_fail, _vfail          report an error through host->error when there is one
 *   ses_drv_util_dtype_size            bytes per element of a SES_DRV_DTYPE_*
 *   ses_drv_util_tensor_at             tensor descriptor i of the host's array, at its stride
 *   ses_drv_util_negotiate             the whole of ses_drv_negotiate's checks (DRV-6, DRV-7)
 *   ses_drv_util_enumerate_begin /
 *   ses_drv_util_put_device            enumerate_devices' checks, and writing one descriptor at
 *                                      the host's stride
 *   ses_drv_util_get_option            an option from open_device_with_options' argument (ABI
 *                                      1.5), else through the host's get_option
 *   ses_drv_util_check_options         refuses a session option the driver does not know
 */
#ifndef SESSION_DRIVER_UTIL_H
#define SESSION_DRIVER_UTIL_H

#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <session/driver.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Whether the versioned struct at @p p (NULL allowed) is long enough to hold @p field of
 * @p type: its struct_size covers the field's last byte. */
#define SES_DRV_UTIL_HAS(p, type, field) \
    ((p) != NULL && (size_t)(p)->struct_size >= SES_DRV_SIZEOF_1_0(type, field))

/* Whether the host table @p host has the service @p fn and it is not NULL. */
#define SES_DRV_UTIL_HOST_HAS(host, fn) (SES_DRV_UTIL_HAS(host, ses_drv_host_t, fn) && (host)->fn)

#if defined(__GNUC__)
#define SES_DRV_UTIL_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define SES_DRV_UTIL_PRINTF(f, a)
#endif

static inline int32_t ses_drv_util_vfail(const ses_drv_host_t *host, ses_drv_host_ctx_t *ctx,
                                         int32_t code, const char *format, va_list ap)
    SES_DRV_UTIL_PRINTF(4, 0);
static inline int32_t ses_drv_util_fail(const ses_drv_host_t *host, ses_drv_host_ctx_t *ctx,
                                        int32_t code, const char *format, ...)
    SES_DRV_UTIL_PRINTF(4, 5);

/*
 * Returns @p code, after recording the printf-formatted message with the host's error service
 * when the host has one (a host without it gets the bare code). The host's service is variadic,
 * so the message is formatted here (up to 1023 bytes) and handed over as "%s".
 */
static inline int32_t ses_drv_util_vfail(const ses_drv_host_t *host, ses_drv_host_ctx_t *ctx,
                                         int32_t code, const char *format, va_list ap) {
    char message[1024];

    if (!SES_DRV_UTIL_HOST_HAS(host, error))
        return code;
    vsnprintf(message, sizeof message, format, ap);
    return host->error(ctx, code, "%s", message);
}

/* ses_drv_util_vfail with the arguments inline. */
static inline int32_t ses_drv_util_fail(const ses_drv_host_t *host, ses_drv_host_ctx_t *ctx,
                                        int32_t code, const char *format, ...) {
    va_list ap;
    int32_t st;

    va_start(ap, format);
    st = ses_drv_util_vfail(host, ctx, code, format, ap);
    va_end(ap);
    return st;
}

/* Bytes per element of @p dtype (SES_DRV_DTYPE_*); 0 for an unknown one. Every size is a power
 * of two. A table, not a switch: launches ask it once per argument. */
static inline uint32_t ses_drv_util_dtype_size(uint32_t dtype) {
    static const unsigned char sizes[] = {
        [SES_DRV_DTYPE_F32] = 4,  [SES_DRV_DTYPE_F64] = 8, [SES_DRV_DTYPE_F16] = 2,
        [SES_DRV_DTYPE_BF16] = 2, [SES_DRV_DTYPE_I8] = 1,  [SES_DRV_DTYPE_I16] = 2,
        [SES_DRV_DTYPE_I32] = 4,  [SES_DRV_DTYPE_I64] = 8, [SES_DRV_DTYPE_U8] = 1,
        [SES_DRV_DTYPE_U16] = 2,  [SES_DRV_DTYPE_U32] = 4, [SES_DRV_DTYPE_U64] = 8,
        [SES_DRV_DTYPE_BOOL] = 1,
    };
    return dtype < sizeof sizes ? sizes[dtype] : 0;
}

/* Descriptor @p i of the host's array @p base of tensor descriptors, which are laid at the
 * stride of their struct_size (the host's, which may be newer than the driver's). */
static inline const ses_drv_tensor_desc_t *ses_drv_util_tensor_at(
    const ses_drv_tensor_desc_t *base, uint32_t i) {
    return (const ses_drv_tensor_desc_t *)(const void *)((const unsigned char *)base +
                                                         (size_t)i * base->struct_size);
}

/*
 * The body of a driver's ses_drv_negotiate, for a driver called @p name that speaks minors
 * @p minor_min to @p minor_max of this header's major and hands out @p api:
 * - DRV-6: @p args NULL or too short for its frozen prefix: SES_DRV_INVALID_ARGUMENT, nothing
 *   written;
 * - driver_abi_major and driver_minor_max are set in every other case, so the host can name both
 *   sides of a mismatch;
 * - DRV-7: another major: SES_DRV_INCOMPATIBLE without touching the rest of @p args or the host;
 * - too short for its 1.0 fields: SES_DRV_INVALID_ARGUMENT, the host table unread;
 * - host_minor_min above host_minor_max: SES_DRV_INVALID_ARGUMENT; ranges that do not meet:
 *   SES_DRV_INCOMPATIBLE, each with a message naming both ranges;
 * - otherwise chosen_minor is the newest minor both speak, api is @p api, and SES_DRV_OK.
 */
static inline int32_t ses_drv_util_negotiate(ses_drv_negotiate_t *args, const char *name,
                                             uint32_t minor_min, uint32_t minor_max,
                                             const ses_drv_api_t *api) {
    if (!args || (size_t)args->struct_size <
                     SES_DRV_SIZEOF_1_0(ses_drv_negotiate_t, driver_minor_max))
        return SES_DRV_INVALID_ARGUMENT;
    args->driver_abi_major = SES_DRV_ABI_MAJOR;
    args->driver_minor_max = minor_max;
    if (args->abi_major != SES_DRV_ABI_MAJOR)
        return SES_DRV_INCOMPATIBLE;
    if ((size_t)args->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_negotiate_t, api))
        return SES_DRV_INVALID_ARGUMENT;
    args->chosen_minor = 0;
    args->api = NULL;
    if (args->host_minor_min > args->host_minor_max)
        return ses_drv_util_fail(args->host, args->host_ctx, SES_DRV_INVALID_ARGUMENT,
                                 "negotiate: host_minor_min %" PRIu32
                                 " is above host_minor_max %" PRIu32,
                                 args->host_minor_min, args->host_minor_max);
    if (args->host_minor_min > minor_max || args->host_minor_max < minor_min)
        return ses_drv_util_fail(args->host, args->host_ctx, SES_DRV_INCOMPATIBLE,
                                 "the host accepts driver ABI %d.%" PRIu32 " to %d.%" PRIu32
                                 ", the %s driver speaks ABI %d.%" PRIu32 " to %d.%" PRIu32 "; %s",
                                 SES_DRV_ABI_MAJOR, args->host_minor_min, SES_DRV_ABI_MAJOR,
                                 args->host_minor_max, name ? name : "?", SES_DRV_ABI_MAJOR,
                                 minor_min, SES_DRV_ABI_MAJOR, minor_max,
                                 args->host_minor_min > minor_max
                                     ? "install a newer driver"
                                     : "upgrade libsession, or install an older driver");
    args->chosen_minor = args->host_minor_max < minor_max ? args->host_minor_max : minor_max;
    args->api = api;
    return SES_DRV_OK;
}

/*
 * The checks that open a driver's enumerate_devices for a driver with @p n_devices devices:
 * @p inout_count NULL is SES_DRV_INVALID_ARGUMENT; with @p out_descs NULL, *inout_count becomes
 * @p n_devices (the caller then returns SES_DRV_OK); otherwise every slot that will be written
 * (the first min(*inout_count, n_devices), each at the stride of its own struct_size) must hold
 * ABI 1.0's fields, checked before any is written, so a refused call changes nothing. On
 * SES_DRV_OK, *out_fill is how many slots the caller fills with ses_drv_util_put_device before it
 * sets *inout_count to that number.
 */
static inline int32_t ses_drv_util_enumerate_begin(const ses_drv_host_t *host,
                                                   ses_drv_host_ctx_t *ctx, uint32_t *inout_count,
                                                   const ses_drv_device_desc_t *out_descs,
                                                   uint32_t n_devices, uint32_t *out_fill) {
    const size_t min_size = SES_DRV_SIZEOF_1_0(ses_drv_device_desc_t, max_alloc);
    const unsigned char *slot = (const unsigned char *)out_descs;

    *out_fill = 0;
    if (!inout_count)
        return ses_drv_util_fail(host, ctx, SES_DRV_INVALID_ARGUMENT,
                                 "enumerate_devices: inout_count is NULL");
    if (!out_descs) {
        *inout_count = n_devices;
        return SES_DRV_OK;
    }
    uint32_t n = *inout_count < n_devices ? *inout_count : n_devices;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t size = ((const ses_drv_device_desc_t *)(const void *)slot)->struct_size;
        if (size < min_size)
            return ses_drv_util_fail(host, ctx, SES_DRV_INVALID_ARGUMENT,
                                     "enumerate_devices: descriptor %" PRIu32
                                     " has struct_size %" PRIu32 ", ABI 1.0 needs at least %zu",
                                     i, size, min_size);
        slot += size;
    }
    *out_fill = n;
    return SES_DRV_OK;
}

/*
 * Writes @p desc into slot @p index of the host's array @p out_descs, whose slots are laid at
 * the stride of their own struct_size (checked by ses_drv_util_enumerate_begin): the fields both
 * sides know, from kind on; struct_size and next stay the host's, reserved becomes 0, and fields
 * of a newer minor than this driver's keep what the host put there.
 */
static inline void ses_drv_util_put_device(ses_drv_device_desc_t *out_descs, uint32_t index,
                                           const ses_drv_device_desc_t *desc) {
    const size_t first = offsetof(ses_drv_device_desc_t, kind);
    unsigned char *slot = (unsigned char *)out_descs;

    for (uint32_t i = 0; i < index; i++)
        slot += ((const ses_drv_device_desc_t *)(const void *)slot)->struct_size;
    ses_drv_device_desc_t *d = (ses_drv_device_desc_t *)(void *)slot;
    size_t fits = d->struct_size < sizeof *desc ? d->struct_size : sizeof *desc;
    d->reserved = 0;
    memcpy(slot + first, (const unsigned char *)desc + first, fits - first);
}

/*
 * Reads option @p key the way get_option does (same codes, same sizing): from @p options when
 * the host passed them to open_device_with_options (ABI 1.5, DRV-87), else through the host's
 * get_option, which sees the opening session's options only on the thread that opens a device
 * (DRV-29). SES_DRV_NOT_FOUND, with *@p out_size 0, when neither can answer.
 */
static inline int32_t ses_drv_util_get_option(const ses_drv_host_t *host, ses_drv_host_ctx_t *ctx,
                                              const ses_drv_options_t *options, const char *key,
                                              char *buffer, uint64_t buffer_size,
                                              uint64_t *out_size) {
    if (SES_DRV_UTIL_HAS(options, ses_drv_options_t, get) && options->get)
        return options->get(options, key, buffer, buffer_size, out_size);
    if (SES_DRV_UTIL_HOST_HAS(host, get_option))
        return host->get_option(ctx, key, buffer, buffer_size, out_size);
    if (out_size)
        *out_size = 0;
    return SES_DRV_NOT_FOUND;
}

/*
 * Refuses with SES_DRV_INVALID_ARGUMENT, naming it and the @p n_known keys of @p known, the
 * first option of @p options (the session's options for this driver) that is not one of them,
 * so that a misspelt option is an error rather than silently ignored. OK for NULL @p options.
 */
static inline int32_t ses_drv_util_check_options(const ses_drv_host_t *host,
                                                 ses_drv_host_ctx_t *ctx,
                                                 const ses_drv_options_t *options,
                                                 const char *const *known, size_t n_known) {
    if (!SES_DRV_UTIL_HAS(options, ses_drv_options_t, values) || !options->keys)
        return SES_DRV_OK;
    for (uint32_t i = 0; i < options->count; i++) {
        const char *key = options->keys[i] ? options->keys[i] : "(null)";
        size_t k = 0;
        while (k < n_known && strcmp(key, known[k]) != 0)
            k++;
        if (k < n_known)
            continue;
        char list[512] = "";
        size_t used = 0;
        for (k = 0; k < n_known && used < sizeof list; k++) {
            int n = snprintf(list + used, sizeof list - used, "%s%s", k ? ", " : "", known[k]);
            used += n > 0 ? (size_t)n : 0;
        }
        return ses_drv_util_fail(host, ctx, SES_DRV_INVALID_ARGUMENT,
                                 "unknown option %s; this driver reads %s", key,
                                 n_known ? list : "no options");
    }
    return SES_DRV_OK;
}

#ifdef __cplusplus
}
#endif

#endif /* SESSION_DRIVER_UTIL_H */
