/*
 * Test-only: the CUDA runtime (cudart) entry points the CUDA driver calls, emulated on host
 * memory, so that the real cuda_driver.c, cuda_ops.c and the host-compiled kernels run as one
 * driver on a machine without a GPU. Compiled against the toolkit's own headers, so that every
 * type, enum value and versioned name is the one the driver was written against.
 *
 * One device, "cuda:0": sm_80, 8 GiB, a fixed UUID and PCI bus id. Device and pinned memory
 * are malloc'd blocks, tracked so that a copy or memset whose device range leaves its block,
 * a free of an unknown pointer and an allocation beyond the device's size fail as on a GPU.
 * Work is synchronous: a stream runs what it is given at once, events are always complete.
 *
 * Stream capture is emulated: between cudaStreamBeginCapture and cudaStreamEndCapture a stream
 * records its work (kernels, memsets, copies, cuBLAS GEMMs) instead of running it; the graph
 * replays the records at each cudaGraphLaunch. As on a GPU, a capture is invalidated, and
 * cudaStreamEndCapture fails, when the capturing thread makes a call that is forbidden while
 * capturing (allocating, freeing, synchronous copies, synchronizing) or a launch fails.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* posix_memalign under -std=c11 */
#endif
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_runtime.h"

_Static_assert(cudaSuccess == EMU_SUCCESS && cudaErrorInvalidValue == EMU_ERROR_INVALID_VALUE &&
                   cudaErrorInvalidConfiguration == EMU_ERROR_INVALID_CONFIGURATION,
               "emu_runtime.h's error values differ from the toolkit's");

#define EMU_DEVICE_NAME "libsession CUDA emulator (host, one thread)"
#define EMU_DEVICE_BYTES ((size_t)8 << 30)
#define EMU_ALIGNMENT 256
#define EMU_STREAM_MAGIC 0x53545245u /* "STRE" */
#define EMU_EVENT_MAGIC 0x45564e54u  /* "EVNT" */
#define EMU_GRAPH_MAGIC 0x47525048u  /* "GRPH" */
#define EMU_EXEC_MAGIC 0x45584543u   /* "EXEC" */

/* ---------------------------------------------------------------------------------------------
 * Errors: each failing call also becomes the thread's last error, as in cudart.
 * ------------------------------------------------------------------------------------------- */

static _Thread_local cudaError_t emu_last_error = cudaSuccess;

static cudaError_t emu_fail(cudaError_t e) {
    emu_last_error = e;
    return e;
}

cudaError_t cudaGetLastError(void) {
    cudaError_t e = emu_last_error;
    emu_last_error = cudaSuccess;
    return e;
}

const char *cudaGetErrorString(cudaError_t error) {
    switch (error) {
    case cudaSuccess:
        return "no error";
    case cudaErrorInvalidValue:
        return "invalid argument (emulated)";
    case cudaErrorMemoryAllocation:
        return "out of memory (emulated)";
    case cudaErrorInvalidConfiguration:
        return "invalid configuration argument (emulated)";
    case cudaErrorInvalidDevice:
        return "invalid device ordinal (emulated)";
    case cudaErrorInvalidResourceHandle:
        return "invalid resource handle (emulated)";
    case cudaErrorIllegalState:
        return "the operation cannot be performed in the present state (emulated)";
    case cudaErrorStreamCaptureUnsupported:
        return "operation not permitted when stream is capturing (emulated)";
    case cudaErrorStreamCaptureInvalidated:
        return "operation failed due to a previous error during capture (emulated)";
    case cudaErrorStreamCaptureImplicit:
        return "operation would make the legacy stream depend on a capturing blocking stream "
               "(emulated)";
    case cudaErrorStreamCaptureWrongThread:
        return "attempt to terminate a thread-local capture sequence from another thread "
               "(emulated)";
    default:
        return "unknown error (emulated)";
    }
}

/* ---------------------------------------------------------------------------------------------
 * Work lists: what a capture records and a graph replays, shared by a graph and its
 * instantiations (counted references).
 * ------------------------------------------------------------------------------------------- */

typedef struct emu_work {
    void (*run)(void *ctx);
    void (*release)(void *ctx);
    void *ctx;
} emu_work_t;

typedef struct emu_worklist {
    atomic_int refs;
    size_t n, capacity;
    emu_work_t *items;
} emu_worklist_t;

static emu_worklist_t *emu_worklist_create(void) {
    emu_worklist_t *w = calloc(1, sizeof *w);
    if (w)
        atomic_init(&w->refs, 1);
    return w;
}

static void emu_worklist_release(emu_worklist_t *w) {
    if (!w || atomic_fetch_sub(&w->refs, 1) != 1)
        return;
    for (size_t i = 0; i < w->n; i++)
        if (w->items[i].release)
            w->items[i].release(w->items[i].ctx);
    free(w->items);
    free(w);
}

/* Appends; 0 on success, -1 when host memory ran out (the caller still owns ctx). */
static int emu_worklist_add(emu_worklist_t *w, void (*run)(void *), void (*release)(void *),
                            void *ctx) {
    if (w->n == w->capacity) {
        size_t capacity = w->capacity ? 2 * w->capacity : 16;
        emu_work_t *grown = realloc(w->items, capacity * sizeof *grown);
        if (!grown)
            return -1;
        w->items = grown;
        w->capacity = capacity;
    }
    w->items[w->n].run = run;
    w->items[w->n].release = release;
    w->items[w->n].ctx = ctx;
    w->n++;
    return 0;
}

static void emu_worklist_run(const emu_worklist_t *w) {
    for (size_t i = 0; i < w->n; i++)
        w->items[i].run(w->items[i].ctx);
}

/* ---------------------------------------------------------------------------------------------
 * Streams and capture
 * ------------------------------------------------------------------------------------------- */

struct CUstream_st {
    uint32_t magic;
    emu_worklist_t *capture; /* non-NULL while capturing */
    enum cudaStreamCaptureMode mode;
    int invalidated; /* a forbidden call or a failed launch broke the capture */
};

/* The stream this thread captures in a mode other than relaxed, or NULL. Such a thread may not
 * make potentially unsafe calls (cudaStreamCaptureModeThreadLocal and Global alike; the
 * emulator does not tell other threads' calls apart). */
static _Thread_local struct CUstream_st *emu_capturing;

static int emu_stream_ok(const struct CUstream_st *s) {
    return s && s->magic == EMU_STREAM_MAGIC;
}

/* A potentially unsafe call on this thread: while it captures, the call fails and the capture
 * is invalidated. Returns cudaSuccess when the call may go on. */
static cudaError_t emu_unsafe_call(void) {
    if (!emu_capturing)
        return cudaSuccess;
    emu_capturing->invalidated = 1;
    return emu_fail(cudaErrorStreamCaptureUnsupported);
}

int emu_enqueue(struct CUstream_st *stream, void (*run)(void *ctx), void (*release)(void *ctx),
                void *ctx) {
    cudaError_t e = cudaSuccess;

    if (stream && !emu_stream_ok(stream)) {
        e = emu_fail(cudaErrorInvalidResourceHandle);
    } else if (stream && stream->capture) {
        if (stream->invalidated)
            e = emu_fail(cudaErrorStreamCaptureInvalidated);
        else if (emu_worklist_add(stream->capture, run, release, ctx) == 0)
            return cudaSuccess; /* the capture owns ctx now */
        else
            e = emu_fail(cudaErrorMemoryAllocation);
        stream->invalidated = 1;
    } else if (!stream && emu_capturing) {
        /* The legacy default stream would wait for the capturing stream. */
        emu_capturing->invalidated = 1;
        e = emu_fail(cudaErrorStreamCaptureImplicit);
    } else {
        run(ctx);
    }
    if (release)
        release(ctx);
    return e;
}

void emu_launch_failed(struct CUstream_st *stream, int error) {
    if (emu_stream_ok(stream) && stream->capture)
        stream->invalidated = 1;
    emu_fail((cudaError_t)error);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int flags) {
    struct CUstream_st *s;

    if (!stream || (flags & ~(unsigned)cudaStreamNonBlocking))
        return emu_fail(cudaErrorInvalidValue);
    s = calloc(1, sizeof *s);
    if (!s)
        return emu_fail(cudaErrorMemoryAllocation);
    s->magic = EMU_STREAM_MAGIC;
    *stream = s;
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
    if (!emu_stream_ok(stream))
        return emu_fail(cudaErrorInvalidResourceHandle);
    if (emu_capturing == stream)
        emu_capturing = NULL;
    emu_worklist_release(stream->capture);
    stream->magic = 0;
    free(stream);
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
    cudaError_t e;

    if (stream && !emu_stream_ok(stream))
        return emu_fail(cudaErrorInvalidResourceHandle);
    if (stream && stream->capture) {
        stream->invalidated = 1;
        return emu_fail(cudaErrorStreamCaptureUnsupported);
    }
    if ((e = emu_unsafe_call()) != cudaSuccess)
        return e;
    return cudaSuccess; /* its work is done: it ran when it was enqueued */
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
    if (!stream)
        return emu_fail(cudaErrorStreamCaptureImplicit); /* the legacy stream cannot capture */
    if (!emu_stream_ok(stream))
        return emu_fail(cudaErrorInvalidResourceHandle);
    if (stream->capture)
        return emu_fail(cudaErrorIllegalState);
    if (mode != cudaStreamCaptureModeRelaxed && emu_capturing)
        return emu_fail(cudaErrorIllegalState); /* one capture a thread is all the driver needs */
    stream->capture = emu_worklist_create();
    if (!stream->capture)
        return emu_fail(cudaErrorMemoryAllocation);
    stream->mode = mode;
    stream->invalidated = 0;
    if (mode != cudaStreamCaptureModeRelaxed)
        emu_capturing = stream;
    return cudaSuccess;
}

struct CUgraph_st {
    uint32_t magic;
    emu_worklist_t *work;
};

struct CUgraphExec_st {
    uint32_t magic;
    emu_worklist_t *work;
};

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph) {
    emu_worklist_t *work;
    int invalidated;

    if (!graph)
        return emu_fail(cudaErrorInvalidValue);
    *graph = NULL;
    if (!emu_stream_ok(stream))
        return emu_fail(cudaErrorInvalidResourceHandle);
    if (!stream->capture)
        return emu_fail(cudaErrorIllegalState);
    if (stream->mode != cudaStreamCaptureModeRelaxed && emu_capturing != stream)
        return emu_fail(cudaErrorStreamCaptureWrongThread);
    work = stream->capture;
    invalidated = stream->invalidated;
    stream->capture = NULL;
    stream->invalidated = 0;
    if (emu_capturing == stream)
        emu_capturing = NULL;
    if (invalidated) {
        emu_worklist_release(work);
        return emu_fail(cudaErrorStreamCaptureInvalidated);
    }
    *graph = malloc(sizeof **graph);
    if (!*graph) {
        emu_worklist_release(work);
        return emu_fail(cudaErrorMemoryAllocation);
    }
    (*graph)->magic = EMU_GRAPH_MAGIC;
    (*graph)->work = work;
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                 unsigned long long flags) {
    if (!exec)
        return emu_fail(cudaErrorInvalidValue);
    *exec = NULL;
    if (!graph || graph->magic != EMU_GRAPH_MAGIC || flags != 0)
        return emu_fail(cudaErrorInvalidValue);
    *exec = malloc(sizeof **exec);
    if (!*exec)
        return emu_fail(cudaErrorMemoryAllocation);
    (*exec)->magic = EMU_EXEC_MAGIC;
    (*exec)->work = graph->work;
    atomic_fetch_add(&graph->work->refs, 1);
    return cudaSuccess;
}

static void emu_run_graph(void *work) {
    emu_worklist_run(work);
}

static void emu_release_graph(void *work) {
    emu_worklist_release(work);
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
    if (!exec || exec->magic != EMU_EXEC_MAGIC)
        return emu_fail(cudaErrorInvalidValue);
    /* Launched into a capture, the graph is recorded whole and keeps its work alive. */
    atomic_fetch_add(&exec->work->refs, 1);
    return emu_enqueue(stream, emu_run_graph, emu_release_graph, exec->work);
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
    if (!graph || graph->magic != EMU_GRAPH_MAGIC)
        return emu_fail(cudaErrorInvalidValue);
    emu_worklist_release(graph->work);
    graph->magic = 0;
    free(graph);
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
    if (!exec || exec->magic != EMU_EXEC_MAGIC)
        return emu_fail(cudaErrorInvalidValue);
    emu_worklist_release(exec->work);
    exec->magic = 0;
    free(exec);
    return cudaSuccess;
}

/* ---------------------------------------------------------------------------------------------
 * Events: always complete, since work runs when it is enqueued (or at a graph's replay, which
 * is enqueued work too).
 * ------------------------------------------------------------------------------------------- */

struct CUevent_st {
    uint32_t magic;
    int captured; /* last recorded into a capture: waiting on it from the host is an error */
};

static int emu_event_ok(const struct CUevent_st *e) {
    return e && e->magic == EMU_EVENT_MAGIC;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags) {
    struct CUevent_st *e;

    if (!event)
        return emu_fail(cudaErrorInvalidValue);
    (void)flags;
    e = calloc(1, sizeof *e);
    if (!e)
        return emu_fail(cudaErrorMemoryAllocation);
    e->magic = EMU_EVENT_MAGIC;
    *event = e;
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
    if (!emu_event_ok(event))
        return emu_fail(cudaErrorInvalidResourceHandle);
    event->magic = 0;
    free(event);
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
    if (!emu_event_ok(event) || (stream && !emu_stream_ok(stream)))
        return emu_fail(cudaErrorInvalidResourceHandle);
    event->captured = stream && stream->capture;
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
    if (!emu_event_ok(event))
        return emu_fail(cudaErrorInvalidResourceHandle);
    if (event->captured)
        return emu_fail(cudaErrorStreamCaptureUnsupported);
    return emu_unsafe_call();
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
    if (!emu_event_ok(event) || (stream && !emu_stream_ok(stream)))
        return emu_fail(cudaErrorInvalidResourceHandle);
    (void)flags;
    /* An event of a capture joins that capture to the stream's: not emulated, and never done by
     * the driver (it captures one stream at a time). */
    if (event->captured && !(stream && stream->capture))
        return emu_fail(cudaErrorStreamCaptureUnsupported);
    return cudaSuccess;
}

/* ---------------------------------------------------------------------------------------------
 * Devices
 * ------------------------------------------------------------------------------------------- */

cudaError_t cudaDriverGetVersion(int *version) {
    if (!version)
        return emu_fail(cudaErrorInvalidValue);
    *version = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *version) {
    if (!version)
        return emu_fail(cudaErrorInvalidValue);
    *version = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceCount(int *count) {
    if (!count)
        return emu_fail(cudaErrorInvalidValue);
    *count = 1;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
    return device == 0 ? cudaSuccess : emu_fail(cudaErrorInvalidDevice);
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device) {
    static const char uuid[16] = "libsession-emu-0";

    if (!prop)
        return emu_fail(cudaErrorInvalidValue);
    if (device != 0)
        return emu_fail(cudaErrorInvalidDevice);
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "%s", EMU_DEVICE_NAME);
    memcpy(prop->uuid.bytes, uuid, sizeof uuid);
    prop->major = 8;
    prop->minor = 0;
    prop->totalGlobalMem = EMU_DEVICE_BYTES;
    prop->multiProcessorCount = 1;
    prop->warpSize = 32;
    prop->maxThreadsPerBlock = 1024;
    prop->sharedMemPerBlock = 48 * 1024;
    prop->textureAlignment = 512;
    prop->maxGridSize[0] = INT32_MAX;
    prop->maxGridSize[1] = prop->maxGridSize[2] = 65535;
    prop->maxThreadsDim[0] = prop->maxThreadsDim[1] = 1024;
    prop->maxThreadsDim[2] = 64;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char *bus_id, int len, int device) {
    if (!bus_id || len <= 0)
        return emu_fail(cudaErrorInvalidValue);
    if (device != 0)
        return emu_fail(cudaErrorInvalidDevice);
    /* Upper case, as cudart writes it; the driver lowers it for the stable id. */
    snprintf(bus_id, (size_t)len, "%s", "0000:EE:00.0");
    return cudaSuccess;
}

/* ---------------------------------------------------------------------------------------------
 * Memory: tracked blocks
 * ------------------------------------------------------------------------------------------- */

typedef struct emu_block {
    char *ptr;
    size_t bytes;
    int pinned; /* cudaMallocHost */
} emu_block_t;

static pthread_mutex_t emu_blocks_lock = PTHREAD_MUTEX_INITIALIZER;
static emu_block_t *emu_blocks;
static size_t emu_n_blocks, emu_blocks_capacity, emu_device_used;

static cudaError_t emu_alloc(void **out, size_t bytes, int pinned) {
    cudaError_t e = cudaSuccess;
    void *p = NULL;

    if (!out)
        return emu_fail(cudaErrorInvalidValue);
    *out = NULL;
    if ((e = emu_unsafe_call()) != cudaSuccess)
        return e;
    if (bytes == 0)
        return cudaSuccess;
    pthread_mutex_lock(&emu_blocks_lock);
    if (!pinned && bytes > EMU_DEVICE_BYTES - emu_device_used) {
        e = cudaErrorMemoryAllocation;
    } else if (emu_n_blocks == emu_blocks_capacity) {
        size_t capacity = emu_blocks_capacity ? 2 * emu_blocks_capacity : 64;
        emu_block_t *grown = realloc(emu_blocks, capacity * sizeof *grown);
        if (grown) {
            emu_blocks = grown;
            emu_blocks_capacity = capacity;
        } else {
            e = cudaErrorMemoryAllocation;
        }
    }
    /* The exact size, so that the sanitizers see a kernel that reads past its buffer. */
    if (e == cudaSuccess && posix_memalign(&p, EMU_ALIGNMENT, bytes) != 0)
        e = cudaErrorMemoryAllocation;
    if (e == cudaSuccess) {
        emu_blocks[emu_n_blocks].ptr = p;
        emu_blocks[emu_n_blocks].bytes = bytes;
        emu_blocks[emu_n_blocks].pinned = pinned;
        emu_n_blocks++;
        if (!pinned)
            emu_device_used += bytes;
        *out = p;
    }
    pthread_mutex_unlock(&emu_blocks_lock);
    return e == cudaSuccess ? e : emu_fail(e);
}

static cudaError_t emu_free(void *ptr, int pinned) {
    cudaError_t e;
    int found = 0;

    if (!ptr)
        return cudaSuccess;
    if ((e = emu_unsafe_call()) != cudaSuccess)
        return e;
    pthread_mutex_lock(&emu_blocks_lock);
    for (size_t i = 0; i < emu_n_blocks && !found; i++)
        if (emu_blocks[i].ptr == ptr && emu_blocks[i].pinned == pinned) {
            if (!pinned)
                emu_device_used -= emu_blocks[i].bytes;
            emu_blocks[i] = emu_blocks[--emu_n_blocks];
            found = 1;
        }
    if (emu_n_blocks == 0) { /* nothing left for the leak checker to find at exit */
        free(emu_blocks);
        emu_blocks = NULL;
        emu_blocks_capacity = 0;
    }
    pthread_mutex_unlock(&emu_blocks_lock);
    if (!found)
        return emu_fail(cudaErrorInvalidValue);
    free(ptr);
    return cudaSuccess;
}

cudaError_t cudaMalloc(void **ptr, size_t bytes) {
    return emu_alloc(ptr, bytes, 0);
}

cudaError_t cudaFree(void *ptr) {
    return emu_free(ptr, 0);
}

cudaError_t cudaMallocHost(void **ptr, size_t bytes) {
    return emu_alloc(ptr, bytes, 1);
}

cudaError_t cudaFreeHost(void *ptr) {
    return emu_free(ptr, 1);
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes) {
    if (!free_bytes || !total_bytes)
        return emu_fail(cudaErrorInvalidValue);
    pthread_mutex_lock(&emu_blocks_lock);
    *free_bytes = EMU_DEVICE_BYTES - emu_device_used;
    pthread_mutex_unlock(&emu_blocks_lock);
    *total_bytes = EMU_DEVICE_BYTES;
    return cudaSuccess;
}

int emu_device_range(const void *ptr, size_t bytes) {
    const char *p = ptr;
    int found = 0;

    pthread_mutex_lock(&emu_blocks_lock);
    for (size_t i = 0; i < emu_n_blocks && !found; i++) {
        const emu_block_t *b = &emu_blocks[i];
        found = !b->pinned && p >= b->ptr && p < b->ptr + b->bytes &&
                bytes <= (size_t)(b->ptr + b->bytes - p);
    }
    pthread_mutex_unlock(&emu_blocks_lock);
    return found;
}

/* Checks a copy's ranges against its kind: the device side must lie in one device block. With
 * cudaMemcpyDefault, a pointer that starts in device memory must stay in its block. */
static cudaError_t emu_check_copy(void *dst, const void *src, size_t bytes,
                                  enum cudaMemcpyKind kind) {
    int dst_dev, src_dev;

    if (bytes == 0)
        return cudaSuccess;
    if (!dst || !src)
        return cudaErrorInvalidValue;
    switch (kind) {
    case cudaMemcpyHostToHost:
        dst_dev = src_dev = 0;
        break;
    case cudaMemcpyHostToDevice:
        dst_dev = 1, src_dev = 0;
        break;
    case cudaMemcpyDeviceToHost:
        dst_dev = 0, src_dev = 1;
        break;
    case cudaMemcpyDeviceToDevice:
        dst_dev = src_dev = 1;
        break;
    case cudaMemcpyDefault:
        dst_dev = emu_device_range(dst, 1);
        src_dev = emu_device_range(src, 1);
        break;
    default:
        return cudaErrorInvalidMemcpyDirection;
    }
    if ((dst_dev && !emu_device_range(dst, bytes)) || (src_dev && !emu_device_range(src, bytes)))
        return cudaErrorInvalidValue;
    return cudaSuccess;
}

typedef struct emu_copy {
    void *dst;
    const void *src;
    size_t bytes;
    int value; /* memset */
} emu_copy_t;

/* memcpy, not memmove: overlapping ranges are undefined for cudaMemcpy, and the sanitizers
 * report them. */
static void emu_run_copy(void *ctx) {
    const emu_copy_t *c = ctx;
    if (c->bytes)
        memcpy(c->dst, c->src, c->bytes);
}

static void emu_run_memset(void *ctx) {
    const emu_copy_t *c = ctx;
    if (c->bytes)
        memset(c->dst, c->value, c->bytes);
}

static cudaError_t emu_enqueue_copy(cudaStream_t stream, void (*run)(void *), void *dst,
                                    const void *src, size_t bytes, int value) {
    emu_copy_t *c = malloc(sizeof *c);

    if (!c)
        return emu_fail(cudaErrorMemoryAllocation);
    c->dst = dst;
    c->src = src;
    c->bytes = bytes;
    c->value = value;
    return (cudaError_t)emu_enqueue(stream, run, free, c);
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind) {
    cudaError_t e;
    emu_copy_t c = {dst, src, bytes, 0};

    if ((e = emu_unsafe_call()) != cudaSuccess)
        return e;
    if ((e = emu_check_copy(dst, src, bytes, kind)) != cudaSuccess)
        return emu_fail(e);
    emu_run_copy(&c);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                            cudaStream_t stream) {
    cudaError_t e = emu_check_copy(dst, src, bytes, kind);
    if (e != cudaSuccess)
        return emu_fail(e);
    return emu_enqueue_copy(stream, emu_run_copy, dst, src, bytes, 0);
}

cudaError_t cudaMemsetAsync(void *ptr, int value, size_t bytes, cudaStream_t stream) {
    if (bytes && (!ptr || !emu_device_range(ptr, bytes)))
        return emu_fail(cudaErrorInvalidValue);
    return emu_enqueue_copy(stream, emu_run_memset, ptr, NULL, bytes, value);
}
