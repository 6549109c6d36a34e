/*
 * libsession driver ABI, major 1.
 *
 * This header is the whole contract between libsession (the host) and a driver plugin. A driver
 * includes only this file, never links libsession, and exports exactly one symbol:
 *
 *     int32_t ses_drv_negotiate(ses_drv_negotiate_t *args);
 *
 * Rules every struct here follows (sdk/DRIVER_ABI.md states them as numbered rules):
 *   - it starts with `uint32_t struct_size`, `uint32_t reserved` (zero) and `const void *next`
 *     (an extension chain, NULL if none);
 *   - fields are only appended within a major version; comments mark where each minor's fields
 *     start; the reader of a struct never touches bytes past the writer's `struct_size`;
 *   - only fixed-width integers, pointers and `double`; no bool, no enum-typed fields, no
 *     bitfields; constants are #defines;
 *   - a NULL function pointer means "optional and not implemented": the host degrades; an
 *     optional entry tied to a capability bit is called on a device only when that device sets
 *     the bit, and refuses with SES_DRV_UNIMPLEMENTED if called on one that does not;
 *   - flags that describe (caps, mem_kinds, info and kernel flags): readers ignore unknown bits;
 *     flags that ask (map_flags): the callee refuses unknown bits (SES_DRV_INVALID_ARGUMENT);
 *   - strings are UTF-8 and NUL-terminated; each field says how long it stays valid;
 *   - arrays are passed "count then fill".
 *
 * Thread-safety is stated on every entry. Unless stated otherwise, driver-level and device-level
 * entries must be callable from any thread, concurrently.
 *
 * A driver never aborts the process and never prints: it returns a status code and attaches a
 * message with ses_drv_host_t.error, and logs through ses_drv_host_t.log.
 */
#ifndef SESSION_DRIVER_H
#define SESSION_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * Versions
 * ------------------------------------------------------------------------------------------- */

/** The ABI major this header describes. A different major is a different, incompatible ABI. */
#define SES_DRV_ABI_MAJOR 1
/** The newest ABI minor this header describes. Minors only append fields and entries. */
#define SES_DRV_ABI_MINOR 5

/** The one symbol a driver exports. */
#define SES_DRV_NEGOTIATE_SYMBOL "ses_drv_negotiate"

/** Marks the entry point for export; build drivers with -fvisibility=hidden. */
#if defined(_WIN32)
#define SES_DRV_EXPORT __declspec(dllexport)
#else
#define SES_DRV_EXPORT __attribute__((visibility("default")))
#endif

/* ---------------------------------------------------------------------------------------------
 * Status codes. They equal libsession's public ses_status_t values.
 * ------------------------------------------------------------------------------------------- */

#define SES_DRV_OK 0
/** The caller passed a bad value: NULL, out of range, wrong size. */
#define SES_DRV_INVALID_ARGUMENT 1
/** A named thing does not exist: a file, a symbol, a device, an option. */
#define SES_DRV_NOT_FOUND 2
/** The call is valid but the object is in the wrong state for it. */
#define SES_DRV_FAILED_PRECONDITION 3
/** Host or device memory ran out. */
#define SES_DRV_OUT_OF_MEMORY 4
/** The entry, dtype or attribute combination is not implemented. */
#define SES_DRV_UNIMPLEMENTED 5
/** Versions do not match: ABI, op set, device generation. */
#define SES_DRV_INCOMPATIBLE 6
/** A resource is missing for now: no vendor runtime, no device, device lost. */
#define SES_DRV_UNAVAILABLE 7
/** A bug or an unexpected vendor-runtime failure. */
#define SES_DRV_INTERNAL 8
/** The work was cancelled because ses_drv_host_t.should_abort answered non-zero. */
#define SES_DRV_CANCELLED 9
/** The thing being created exists already. */
#define SES_DRV_ALREADY_EXISTS 10

/* ---------------------------------------------------------------------------------------------
 * Opaque handles. The driver defines what they point at; the host never dereferences them.
 * ------------------------------------------------------------------------------------------- */

typedef struct ses_drv_host_ctx ses_drv_host_ctx_t; /* host-owned, passed back to host services */
typedef struct ses_drv_driver ses_drv_driver_t;     /* one opened driver instance */
typedef struct ses_drv_device ses_drv_device_t;     /* one opened device */
typedef struct ses_drv_buffer ses_drv_buffer_t;     /* one allocation in device memory */
typedef struct ses_drv_stream ses_drv_stream_t;     /* an in-order queue of work */
typedef struct ses_drv_event ses_drv_event_t;       /* a point in a stream */
typedef struct ses_drv_graph ses_drv_graph_t;       /* recorded work, replayed (ABI 1.1) */

/* ---------------------------------------------------------------------------------------------
 * Enumerations, as plain constants (the fields that hold them are uint32_t).
 * ------------------------------------------------------------------------------------------- */

/* Log levels, most severe first. */
#define SES_DRV_LOG_ERROR 0
#define SES_DRV_LOG_WARN 1
#define SES_DRV_LOG_INFO 2
#define SES_DRV_LOG_DEBUG 3

/* Device kinds. */
#define SES_DRV_DEVICE_CPU 0
#define SES_DRV_DEVICE_GPU 1
#define SES_DRV_DEVICE_FPGA 2
#define SES_DRV_DEVICE_ACCEL 3

/* Device capability flags (ses_drv_device_desc_t.caps). */
#define SES_DRV_CAP_HOST_VISIBLE (UINT64_C(1) << 0)  /* buffers live in host memory: map costs
                                                        no copy; only with SES_DRV_CAP_MAP */
#define SES_DRV_CAP_STREAMS (UINT64_C(1) << 1)       /* stream entries are implemented */
#define SES_DRV_CAP_EVENTS (UINT64_C(1) << 2)        /* event entries are implemented */
#define SES_DRV_CAP_ASYNC_COPY (UINT64_C(1) << 3)    /* copies accept a stream */
#define SES_DRV_CAP_HOST_IMPORT (UINT64_C(1) << 4)   /* import_host_ptr is implemented */
#define SES_DRV_CAP_MAP (UINT64_C(1) << 5)           /* map/unmap are implemented */
#define SES_DRV_CAP_F16 (UINT64_C(1) << 6)           /* has f16 arithmetic */
#define SES_DRV_CAP_BF16 (UINT64_C(1) << 7)          /* has bf16 arithmetic */
#define SES_DRV_CAP_F64 (UINT64_C(1) << 8)           /* has f64 arithmetic */
#define SES_DRV_CAP_CONCURRENT (UINT64_C(1) << 9)    /* kernels of one device may run at once;
                                                        describes only: compute's thread-safety
                                                        is the same with or without it */
#define SES_DRV_CAP_GRAPHS (UINT64_C(1) << 10)       /* ABI 1.1: capture_begin, capture_end,
                                                        graph_launch, graph_destroy */
#define SES_DRV_CAP_NATIVE (UINT64_C(1) << 11)       /* ABI 1.2: buffer_native, import_native
                                                        (the vendor runtime's device addresses) */

/* Memory kinds (alloc's mem_kind; ses_drv_device_desc_t.mem_kinds has bit 1 << kind set). */
#define SES_DRV_MEM_DEVICE 0      /* device memory: fastest for kernels; always supported */
#define SES_DRV_MEM_HOST_PINNED 1 /* host memory the device reaches directly (staging) */
#define SES_DRV_MEM_SHARED 2      /* memory both sides address (unified/managed) */

/* Map flags: they ask, so map refuses any other bit with SES_DRV_INVALID_ARGUMENT. */
#define SES_DRV_MAP_READ 1u
#define SES_DRV_MAP_WRITE 2u

/*
 * Element types. In kernel signatures they are spelled by the short name in the comment:
 * a signature lists input dtypes, "->", output dtypes, e.g. "f32,f32->f32" or "f32,i64->f32".
 */
#define SES_DRV_DTYPE_INVALID 0
#define SES_DRV_DTYPE_F32 1   /* "f32"  */
#define SES_DRV_DTYPE_F64 2   /* "f64"  */
#define SES_DRV_DTYPE_F16 3   /* "f16"  */
#define SES_DRV_DTYPE_BF16 4  /* "bf16" */
#define SES_DRV_DTYPE_I8 5    /* "i8"   */
#define SES_DRV_DTYPE_I16 6   /* "i16"  */
#define SES_DRV_DTYPE_I32 7   /* "i32"  */
#define SES_DRV_DTYPE_I64 8   /* "i64"  */
#define SES_DRV_DTYPE_U8 9    /* "u8"   */
#define SES_DRV_DTYPE_U16 10  /* "u16"  */
#define SES_DRV_DTYPE_U32 11  /* "u32"  */
#define SES_DRV_DTYPE_U64 12  /* "u64"  */
#define SES_DRV_DTYPE_BOOL 13 /* "bool", one byte, 0 or 1 */

/* Attribute types (ses_drv_node_t.attr). */
#define SES_DRV_ATTR_INT 1    /* one int64_t */
#define SES_DRV_ATTR_FLOAT 2  /* one double */
#define SES_DRV_ATTR_STRING 3 /* bytes of a UTF-8 string, no NUL; count = byte length */
#define SES_DRV_ATTR_INTS 4   /* int64_t[count] */
#define SES_DRV_ATTR_FLOATS 5 /* double[count] */

/* Kernel flags (ses_drv_kernel_t.flags). */
#define SES_DRV_KERNEL_NO_CAPTURE 1u /* ABI 1.1: compute waits for the device or reads device
                                        memory on the host, so it cannot be captured into a
                                        graph; the host runs it outside any capture */

/* Driver info flags. */
#define SES_DRV_INFO_UNLOADABLE 1u /* the host may dlclose the library after close */

/* ---------------------------------------------------------------------------------------------
 * Host services: what libsession offers a driver.
 * ------------------------------------------------------------------------------------------- */

/**
 * Services the host gives a driver. The table and its ctx are owned by the host and stay valid
 * from the driver's open until its close returns (during negotiate: for that call only).
 * Every entry is thread-safe and may be called from any thread, including the driver's own.
 */
typedef struct ses_drv_host {
    uint32_t struct_size;
    uint32_t reserved;
    const void *next;
    /* ABI 1.0 */
    /** Logs one message (no trailing newline needed). The host prefixes the driver's name. */
    void (*log)(ses_drv_host_ctx_t *ctx, uint32_t level, const char *message);
    /** Non-zero when a message at @p level would be shown; lets drivers skip costly formatting. */
    int32_t (*log_enabled)(ses_drv_host_ctx_t *ctx, uint32_t level);
    /**
     * Records a message for the error the calling thread is about to return, and returns @p code,
     * so a driver writes `return host->error(ctx, SES_DRV_UNAVAILABLE, "no device: %s", why);`.
     * The message is printf-formatted, copied by the host, and attached to the next non-OK code
     * this thread returns to the host. Call it on the thread that returns the code.
     */
    int32_t (*error)(ses_drv_host_ctx_t *ctx, int32_t code, const char *format, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 3, 4)))
#endif
        ;
    /**
     * Looks up option @p key ("driver.<name>.<option>", e.g. "driver.xrt.xclbin") in the session
     * options, the environment (SESSION_ + key upper-cased with dots as underscores) and the
     * driver's manifest, in that order. Copies the value with its NUL into @p buffer when it fits
     * and stores the size it needs (NUL included) in @p out_size. Returns SES_DRV_OK,
     * SES_DRV_NOT_FOUND when the option is not set, or SES_DRV_INVALID_ARGUMENT when @p buffer is
     * too small (out_size then says how much to pass).
     */
    int32_t (*get_option)(ses_drv_host_ctx_t *ctx, const char *key, char *buffer,
                          uint64_t buffer_size, uint64_t *out_size);
    /**
     * Non-zero when the work of the calling thread should stop (the eval was cancelled or ran
     * past its deadline). Long kernels poll it and return SES_DRV_CANCELLED.
     */
    int32_t (*should_abort)(ses_drv_host_ctx_t *ctx);
    /* ABI 1.1 and later append here. */
} ses_drv_host_t;

/**
 * ABI 1.5: the options of the session that opens a device, passed to open_device_with_options.
 * Owned by the host; valid for that call only (a driver copies what it keeps). Reading it needs
 * no thread-local state, so a driver may read it on any thread during the call.
 */
typedef struct ses_drv_options {
    uint32_t struct_size;
    uint32_t reserved;
    const void *next;
    /* ABI 1.5 */
    /** How many options the session set for this driver: keys[i] = values[i]. */
    uint32_t count;
    uint32_t reserved1;
    /** count full keys, "driver.<this driver's name>.<option>", in the order the session set
     *  them (a key set twice appears twice; the later one wins), so that a driver can refuse
     *  options it does not know. */
    const char *const *keys;
    /** count values, UTF-8, NUL-terminated. */
    const char *const *values;
    /**
     * Looks up @p key as ses_drv_host_t.get_option does (the session's options, then the
     * environment, then the manifest; the same codes and sizing), reading the session's options
     * from this struct rather than from the calling thread.
     */
    int32_t (*get)(const struct ses_drv_options *options, const char *key, char *buffer,
                   uint64_t buffer_size, uint64_t *out_size);
} ses_drv_options_t;

/* ---------------------------------------------------------------------------------------------
 * What a driver describes.
 * ------------------------------------------------------------------------------------------- */

/** Static facts about a driver. Owned by the driver; valid until the library is unloaded. */
typedef struct ses_drv_info {
    uint32_t struct_size;
    uint32_t reserved;
    const void *next;
    /* ABI 1.0 */
    const char *name;           /* short, [a-z0-9_-]+, equals the manifest's name: "cpu", "cuda" */
    const char *vendor;         /* who ships it: "libsession", "Example Corp" */
    const char *version;        /* the driver's own semantic version: "1.4.2" */
    const char *build_features; /* comma-separated build facts: "openblas,avx2"; "" if none */
    uint32_t opset_version;     /* the libsession op-set version its kernels implement */
    uint32_t flags;             /* SES_DRV_INFO_* */
} ses_drv_info_t;

/** One device, as enumerated. Strings are owned by the driver and live until its close. */
typedef struct ses_drv_device_desc {
    uint32_t struct_size;
    uint32_t reserved;
    const void *next;
    /* ABI 1.0 */
    uint32_t kind;          /* SES_DRV_DEVICE_* */
    uint32_t ordinal;       /* index within this driver: 0, 1, ... in enumeration order */
    const char *stable_id;  /* same physical device → same id across drivers and boots:
                               "pci:0000:65:00.0", "uuid:GPU-…", "host", "<vendor>:<id>" with
                               an id that is not a bare number (never a device name such as
                               "acme:0"); "" if unknown */
    const char *name;       /* human-readable model: "NVIDIA H100 80GB HBM3" */
    uint64_t memory_bytes;  /* total memory usable by the device; 0 if unknown */
    uint64_t memory_free;   /* free at enumeration; 0 if unknown */
    uint64_t caps;          /* SES_DRV_CAP_* */
    uint32_t mem_kinds;     /* bit (1 << SES_DRV_MEM_*) per supported memory kind */
    uint32_t alignment;     /* alignment in bytes of every allocation, a power of two */
    uint64_t max_alloc;     /* largest single allocation in bytes; 0 if unlimited */
} ses_drv_device_desc_t;

/** Shape and dtype of one tensor argument. Owned by the host; valid for the call it is part of. */
typedef struct ses_drv_tensor_desc {
    uint32_t struct_size;
    uint32_t reserved;
    const void *next;
    /* ABI 1.0 */
    uint32_t dtype;       /* SES_DRV_DTYPE_* */
    uint32_t rank;        /* number of dimensions; 0 for a scalar */
    const int64_t *dims;  /* rank entries, each >= 0; row-major, dense */
} ses_drv_tensor_desc_t;

/**
 * A graph node as a kernel sees it: op, name, argument shapes and attributes. Owned by the host;
 * valid only during the call it is passed to (a kernel that needs more copies what it needs).
 */
typedef struct ses_drv_node {
    uint32_t struct_size;
    uint32_t reserved;
    const void *next;
    /* ABI 1.0 */
    const char *op;   /* ONNX op type: "Add" */
    const char *name; /* the node's unique name in its graph */
    uint32_t n_inputs;
    uint32_t n_outputs;
    /* n_inputs entries; the array's stride is inputs[0].struct_size (the host's sizeof) */
    const ses_drv_tensor_desc_t *inputs;
    /* n_outputs entries; stride outputs[0].struct_size */
    const ses_drv_tensor_desc_t *outputs;
    /**
     * Reads attribute @p attr_name as @p type (SES_DRV_ATTR_*), count then fill: with
     * @p values NULL it stores the element count in @p inout_count; otherwise it copies at most
     * *inout_count elements and stores the full count. Returns SES_DRV_NOT_FOUND when the node
     * has no such attribute, SES_DRV_INVALID_ARGUMENT when it has another type.
     * Thread-safe; valid while @p node is.
     */
    int32_t (*attr)(const struct ses_drv_node *node, const char *attr_name, uint32_t type,
                    uint64_t *inout_count, void *values);
    const void *attr_ctx; /* host data behind attr; drivers leave it alone */
    /* ABI 1.3: read only when struct_size covers it (an older host's node ends before) */
    uint64_t constant_inputs; /* bit i: input i holds the same bytes at the same address for
                                 every run of this node (a graph constant); never set for a
                                 variable, a feed or a computed value. Kernels may keep what they
                                 derive from such an input (reordered weights) in their state */
} ses_drv_node_t;

/**
 * One kernel invocation. Owned by the host; valid during compute only.
 * Buffers are arguments at a byte offset: tensors of a plan share one arena per device.
 */
typedef struct ses_drv_launch {
    uint32_t struct_size;
    uint32_t reserved;
    const void *next;
    /* ABI 1.0 */
    const ses_drv_node_t *node;             /* op, shapes of this run, attributes */
    ses_drv_stream_t *stream;               /* NULL: complete the work before returning */
    ses_drv_buffer_t *const *inputs;        /* node->n_inputs buffers, none NULL; an absent
                                               optional input is not passed at all */
    const uint64_t *input_offsets;          /* byte offset of each input in its buffer */
    ses_drv_buffer_t *const *outputs;       /* node->n_outputs buffers, none NULL; they never
                                               overlap an input or each other */
    const uint64_t *output_offsets;         /* byte offset of each output in its buffer */
} ses_drv_launch_t;

/**
 * One kernel: an op at one dtype signature. Owned by the driver; valid until its device closes.
 *
 * Thread-safety: compute may be called from any host thread, and concurrently for different
 * nodes; calls that share one per-node state never overlap. supports_node, create and destroy
 * may be called from any thread, concurrently.
 */
typedef struct ses_drv_kernel {
    uint32_t struct_size;
    uint32_t reserved;
    const void *next;
    /* ABI 1.0 */
    const char *op;        /* ONNX op type: "MatMul" */
    const char *signature; /* input and output dtypes: "f32,f32->f32" */
    uint32_t priority;     /* among several entries that match a node, the highest wins */
    uint32_t flags;        /* SES_DRV_KERNEL_* (ABI 1.1); 0 in 1.0 */
    /**
     * Optional. Returns SES_DRV_OK when this kernel can run @p node (attributes, ranks, sizes),
     * SES_DRV_UNIMPLEMENTED with a message saying why not. NULL means "every node that matches
     * the op and signature".
     */
    int32_t (*supports_node)(ses_drv_device_t *device, const ses_drv_node_t *node);
    /**
     * Optional. Builds per-node state (a compiled program, a cuBLAS plan) once per plan node.
     * *out_state is owned by the driver and given back to destroy. NULL: state is NULL.
     */
    int32_t (*create)(ses_drv_device_t *device, const ses_drv_node_t *node, void **out_state);
    /** Optional, required when create is set. Frees what create made; accepts NULL state. */
    void (*destroy)(ses_drv_device_t *device, void *state);
    /** Required. Runs the node. Returns SES_DRV_OK or a code with a message. */
    int32_t (*compute)(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch);
    /* ABI 1.4: read only from a driver that chose minor 4 or later, through a table whose stride
     * covers it */
    /**
     * Optional. Which inputs output @p output of @p node may be written over: bit i lets the
     * host place that output on exactly the bytes of input i (of those passed, DRV-51), same
     * buffer and offset, when the two have the same dtype and element count and no later step
     * reads the input (DRV-86). The kernel must then compute right with the two the same:
     * each element of the input read before that element of the output is written. 0 or NULL:
     * never. Called at compile time, after supports_node accepted the node; thread-safe.
     */
    uint64_t (*reuse_inputs)(ses_drv_device_t *device, const ses_drv_node_t *node,
                             uint32_t output);
} ses_drv_kernel_t;

/* ---------------------------------------------------------------------------------------------
 * The driver's function table.
 * ------------------------------------------------------------------------------------------- */

/**
 * Everything a driver implements. Returned by negotiate; `const`, static, valid until the library
 * is unloaded. Entries marked required must be non-NULL; the host rejects a table that lacks one.
 */
typedef struct ses_drv_api {
    uint32_t struct_size;
    uint32_t reserved;
    const void *next;
    /* ABI 1.0 */
    const ses_drv_info_t *info; /* required */

    /* -- driver ---------------------------------------------------------------------------- */

    /**
     * Required. Opens one driver instance: loads the vendor runtime, finds devices. @p host and
     * @p ctx stay valid until close returns. The host may open one library several times.
     * A @p host shorter than SES_DRV_SIZEOF_1_0(ses_drv_host_t, should_abort) is refused with
     * SES_DRV_INVALID_ARGUMENT: with a message through host->error when the table holds it,
     * otherwise without calling the host.
     * Returns SES_DRV_UNAVAILABLE with a message saying why when the driver cannot offer any
     * device on this machine (vendor runtime missing, no hardware): the host reports that as
     * "no devices: <message>", not as a broken driver. Thread-safe.
     */
    int32_t (*open)(const ses_drv_host_t *host, ses_drv_host_ctx_t *ctx,
                    ses_drv_driver_t **out_driver);
    /** Required. Closes an instance after all its devices are closed. Accepts NULL. */
    void (*close)(ses_drv_driver_t *driver);
    /**
     * Required. Count then fill: with @p out_descs NULL stores the number of devices in
     * @p inout_count; otherwise fills at most *inout_count descriptors and stores how many it
     * filled. The host sets every descriptor's struct_size first, and the array's stride is that
     * size: the driver writes only the fields that fit in it and leaves struct_size and next as
     * the host set them. Zero devices is not an error. Thread-safe.
     */
    int32_t (*enumerate_devices)(ses_drv_driver_t *driver, uint32_t *inout_count,
                                 ses_drv_device_desc_t *out_descs);

    /* -- devices --------------------------------------------------------------------------- */

    /** Required. Opens device @p ordinal. Thread-safe. */
    int32_t (*open_device)(ses_drv_driver_t *driver, uint32_t ordinal,
                           ses_drv_device_t **out_device);
    /** Required. Closes a device after every buffer, stream and event of it is freed. NULL ok. */
    void (*close_device)(ses_drv_device_t *device);
    /**
     * Required. The device's kernel table: *out_kernels points at *out_count entries, each of
     * stride *out_stride bytes (sizeof(ses_drv_kernel_t) at the driver's build). Owned by the
     * driver; valid until close_device. May differ per device (an FPGA's comes from its image).
     */
    int32_t (*get_kernels)(ses_drv_device_t *device, const ses_drv_kernel_t **out_kernels,
                           uint32_t *out_count, uint32_t *out_stride);
    /** Optional. Current free and total memory in bytes. Thread-safe. */
    int32_t (*memory_info)(ses_drv_device_t *device, uint64_t *out_free, uint64_t *out_total);

    /* -- memory ---------------------------------------------------------------------------- */

    /**
     * Required. Allocates @p bytes (> 0) of memory kind @p mem_kind, aligned to the device's
     * alignment. Returns SES_DRV_OUT_OF_MEMORY when it cannot. Thread-safe.
     */
    int32_t (*alloc)(ses_drv_device_t *device, uint64_t bytes, uint32_t mem_kind,
                     ses_drv_buffer_t **out_buffer);
    /** Required. Frees a buffer; accepts NULL. The buffer must not be in use on any stream. */
    void (*free)(ses_drv_device_t *device, ses_drv_buffer_t *buffer);
    /**
     * Optional (SES_DRV_CAP_MAP). Makes [offset, offset+bytes) of @p buffer host-addressable.
     * The pointer stays valid until unmap. @p map_flags is SES_DRV_MAP_READ and/or
     * SES_DRV_MAP_WRITE; another bit is refused with SES_DRV_INVALID_ARGUMENT. On a device
     * without SES_DRV_CAP_MAP it returns SES_DRV_UNIMPLEMENTED. Externally synchronized per
     * buffer.
     */
    int32_t (*map)(ses_drv_device_t *device, ses_drv_buffer_t *buffer, uint64_t offset,
                   uint64_t bytes, uint32_t map_flags, void **out_host_ptr);
    /** Optional, required with map. Ends a mapping made by map; writes become visible. */
    int32_t (*unmap)(ses_drv_device_t *device, ses_drv_buffer_t *buffer, void *host_ptr);
    /**
     * Optional (SES_DRV_CAP_HOST_IMPORT). Wraps caller host memory as a buffer without copying.
     * The host keeps @p host_ptr alive until it frees the buffer with free. A driver may refuse
     * a pointer that is not aligned to the device's alignment (SES_DRV_INVALID_ARGUMENT).
     */
    int32_t (*import_host_ptr)(ses_drv_device_t *device, void *host_ptr, uint64_t bytes,
                               ses_drv_buffer_t **out_buffer);

    /* -- copies ---------------------------------------------------------------------------- */
    /*
     * Required. With @p stream NULL a copy is complete when it returns. With a stream
     * (SES_DRV_CAP_ASYNC_COPY) it is enqueued, and the host keeps host memory alive and untouched
     * until the stream is synchronized. Thread-safe across different buffers.
     * [offset, offset + bytes) must lie inside the buffer's allocated size, else
     * SES_DRV_INVALID_ARGUMENT; 0 bytes at offset <= size succeed and do nothing, with the host
     * pointer allowed to be NULL; 0 bytes at offset > size are refused.
     */
    int32_t (*copy_h2d)(ses_drv_device_t *device, ses_drv_stream_t *stream, const void *src,
                        ses_drv_buffer_t *dst, uint64_t dst_offset, uint64_t bytes);
    int32_t (*copy_d2h)(ses_drv_device_t *device, ses_drv_stream_t *stream,
                        ses_drv_buffer_t *src, uint64_t src_offset, void *dst, uint64_t bytes);
    int32_t (*copy_d2d)(ses_drv_device_t *device, ses_drv_stream_t *stream,
                        ses_drv_buffer_t *src, uint64_t src_offset, ses_drv_buffer_t *dst,
                        uint64_t dst_offset, uint64_t bytes);

    /* -- streams and events: optional (SES_DRV_CAP_STREAMS / SES_DRV_CAP_EVENTS) ------------ */
    /*
     * A stream runs its work in order. One stream is used by one host thread at a time
     * (externally synchronized); different streams may be used concurrently.
     */
    int32_t (*stream_create)(ses_drv_device_t *device, ses_drv_stream_t **out_stream);
    void (*stream_destroy)(ses_drv_device_t *device, ses_drv_stream_t *stream);
    int32_t (*stream_synchronize)(ses_drv_device_t *device, ses_drv_stream_t *stream);
    int32_t (*event_create)(ses_drv_device_t *device, ses_drv_event_t **out_event);
    void (*event_destroy)(ses_drv_device_t *device, ses_drv_event_t *event);
    /** Marks the point in @p stream reached once the work enqueued so far completes. */
    int32_t (*event_record)(ses_drv_device_t *device, ses_drv_event_t *event,
                            ses_drv_stream_t *stream);
    /** Makes later work on @p stream wait for @p event, without blocking the host. */
    int32_t (*stream_wait_event)(ses_drv_device_t *device, ses_drv_stream_t *stream,
                                 ses_drv_event_t *event);
    /** Blocks the calling host thread until @p event completes. */
    int32_t (*event_synchronize)(ses_drv_device_t *device, ses_drv_event_t *event);

    /* ABI 1.1 */
    /* -- graphs: optional (SES_DRV_CAP_GRAPHS, which also needs SES_DRV_CAP_STREAMS) --------- */
    /*
     * A graph is work recorded once and replayed many times at the cost of one launch (a CUDA
     * Graph, a recorded command buffer). The host captures a run of kernel computes that all go
     * to one stream of one device, name only buffers that stay allocated at the same place until
     * the graph is destroyed, and come from kernels without SES_DRV_KERNEL_NO_CAPTURE. The same
     * stream is used by one host thread at a time (as every stream).
     */
    /**
     * Starts recording @p stream: until capture_end, each compute given this stream records its
     * work instead of running it. The host makes no other call on the stream meanwhile.
     */
    int32_t (*capture_begin)(ses_drv_device_t *device, ses_drv_stream_t *stream);
    /**
     * Ends the recording on @p stream. With @p out_graph non-NULL and success, *out_graph holds
     * the recorded work, which has not run yet. With @p out_graph NULL the host abandons the
     * capture (a compute failed during it) and nothing is kept. Either way the stream is back
     * to normal.
     */
    int32_t (*capture_end)(ses_drv_device_t *device, ses_drv_stream_t *stream,
                           ses_drv_graph_t **out_graph);
    /** Enqueues every recorded compute on @p stream, in recorded order, with the same buffers. */
    int32_t (*graph_launch)(ses_drv_device_t *device, ses_drv_graph_t *graph,
                            ses_drv_stream_t *stream);
    /** Frees a graph that no stream still runs (the host synchronizes first). Accepts NULL. */
    void (*graph_destroy)(ses_drv_device_t *device, ses_drv_graph_t *graph);

    /* ABI 1.2 */
    /* -- native pointers: optional (SES_DRV_CAP_NATIVE) ------------------------------------- */
    /*
     * A native pointer is the address the vendor runtime's own API uses for device memory (a
     * CUDA driver's is a device pointer from cudaMalloc, valid in the device's context), so that
     * the host can hand a buffer to another library and take one in (DLPack) without a copy.
     */
    /**
     * Stores in *@p out_native the native address of byte 0 of @p buffer (allocated or imported
     * on @p device). It stays valid, and keeps naming the buffer's bytes, until the buffer is
     * freed; the host never frees memory through it. Thread-safe.
     */
    int32_t (*buffer_native)(ses_drv_device_t *device, ses_drv_buffer_t *buffer,
                             void **out_native);
    /**
     * Wraps @p bytes (> 0) of device memory at the native address @p native as a buffer without
     * copying. The memory belongs to the caller, who keeps it alive until the buffer is freed;
     * free releases the driver's handle only. The buffer works wherever an allocated one does
     * (kernels, copies). A driver may refuse an address not aligned to its alignment, or one it
     * can tell is not device memory of @p device, with SES_DRV_INVALID_ARGUMENT. Thread-safe.
     */
    int32_t (*import_native)(ses_drv_device_t *device, void *native, uint64_t bytes,
                             ses_drv_buffer_t **out_buffer);

    /* ABI 1.5 */
    /**
     * Optional. open_device with the opening session's options passed in (DRV-87): when a
     * driver that chose minor 5 or later sets it, the host calls it instead of open_device.
     * @p options is never NULL from the host and is valid for this call only. Thread-safe.
     */
    int32_t (*open_device_with_options)(ses_drv_driver_t *driver, uint32_t ordinal,
                                        const ses_drv_options_t *options,
                                        ses_drv_device_t **out_device);

    /* ABI 1.6 and later append here. */
} ses_drv_api_t;

/* ---------------------------------------------------------------------------------------------
 * Negotiation: the one exported entry point.
 * ------------------------------------------------------------------------------------------- */

/**
 * Arguments of ses_drv_negotiate. The host fills the "in" fields and zeroes the rest.
 *
 * The driver answers SES_DRV_OK after setting chosen_minor and api, or SES_DRV_INCOMPATIBLE when
 * abi_major differs from its own or the host's minor range [host_minor_min, host_minor_max] and
 * its own do not overlap. Its checks come in this order (DRV-6): struct_size below the frozen
 * prefix (through driver_minor_max): SES_DRV_INVALID_ARGUMENT, nothing written; then it sets
 * driver_abi_major and driver_minor_max, so the host can name both sides; another abi_major:
 * SES_DRV_INCOMPATIBLE, whatever the size; struct_size below the 1.0 size:
 * SES_DRV_INVALID_ARGUMENT. Those three answers carry no message and call no host entry. Compare minors through variables: with a minor of 0, `x < 0` on a
 * uint32_t trips -Wtype-limits.
 * Negotiation does no work beyond that: no vendor runtime is loaded until open.
 */
typedef struct ses_drv_negotiate {
    uint32_t struct_size;
    uint32_t reserved;
    const void *next;
    /* ABI 1.0 — in */
    uint32_t abi_major;      /* the host's major: SES_DRV_ABI_MAJOR */
    uint32_t host_minor_min; /* the oldest minor the host accepts */
    uint32_t host_minor_max; /* the newest minor the host speaks */
    uint32_t reserved2;
    const ses_drv_host_t *host; /* for error messages during this call only */
    ses_drv_host_ctx_t *host_ctx;
    /* ABI 1.0 — out */
    uint32_t driver_abi_major; /* the driver's own major */
    uint32_t driver_minor_max; /* the newest minor the driver speaks */
    uint32_t chosen_minor;     /* min(host_minor_max, driver_minor_max) */
    uint32_t reserved3;
    const ses_drv_api_t *api; /* static, const */
} ses_drv_negotiate_t;

/** The signature of the exported entry point. Thread-safe; may be called several times. */
typedef int32_t (*ses_drv_negotiate_fn)(ses_drv_negotiate_t *args);

/**
 * The entry point every driver defines and exports (the host looks it up by name, never links
 * it). Declared here so a driver's definition is checked against this signature.
 * When args->abi_major differs from the driver's major, the layout of args->host may differ
 * from the driver's header: the driver must then not call host services, only fill
 * driver_abi_major and driver_minor_max and return SES_DRV_INCOMPATIBLE.
 */
SES_DRV_EXPORT int32_t ses_drv_negotiate(ses_drv_negotiate_t *args);

/*
 * Sizes of each struct as of ABI 1.0: the host rejects a driver struct smaller than these.
 * They are the offset of the last 1.0 field plus its size.
 */
#define SES_DRV_SIZEOF_1_0(type, last_field) \
    (offsetof(type, last_field) + sizeof(((type *)0)->last_field))

#ifdef __cplusplus
}
#endif

#endif /* SESSION_DRIVER_H */
