/*
 * Compiled plans: the structures compile/ builds and exec/ runs (the session's own are in
 * session/session_internal.h).
 *
 * Compiling (compile.c) turns (fetches, fed edges, targets) into a plan:
 *   prune.c   what the fetches and targets need, stopping at fed edges; placeholder and cycle
 *             checks
 *   infer     each needed op node's output types and kernel lowering (ops/)
 *   place.c   the first device, in the session's priority order, with a kernel for the node
 *   memory.c  one arena per device, offsets by liveness so buffers are reused
 *   bind      per-node kernel state (kernel create)
 * Running (exec/run.c) binds this run's external tensors (feeds, constants, variables), calls
 * the steps in order and copies the fetched values out.
 */
#ifndef SES_PLAN_H
#define SES_PLAN_H

#include <pthread.h>
#include <stdatomic.h>

#include <session/session.h>

#include "../graph/graph_internal.h"
#include "../ops/op_schema.h"
#include "../session/session_internal.h"

/* Arena offsets are multiples of this, so that any dtype and SIMD loads are aligned. */
#define SES__ARENA_ALIGNMENT 64

/* Where a value lives during a run. */
typedef enum ses__slot_kind {
    SES__SLOT_ARENA = 0, /* computed: at an offset in its device's arena */
    SES__SLOT_FEED,      /* a fed host tensor */
    SES__SLOT_CONSTANT,  /* a constant node's tensor */
    SES__SLOT_VARIABLE,  /* the scope's tensor for a variable */
    SES__SLOT_OUTPUT,    /* computed and fetched: written straight into the tensor handed to
                            the caller (a device that imports host memory), no copy */
    SES__SLOT_RESIDENT,  /* a constant's copy the session keeps on a device (exec/resident.c):
                            uploaded once, bound by every run and plan, never copied again */
    SES__SLOT_RESIDENT_VARIABLE, /* a variable's copy on a device (exec/resident.c): bound
                            each run, uploaded only when the host's bytes changed; updated there
                            in place, read back only when the host reads it */
    SES__SLOT_STRING,    /* a string value a host step computes (exec/host_strings.c): never in
                            an arena; tensor is this run's host tensor, owned by the slot until
                            the run ends or it is fetched */
} ses__slot_kind_t;

typedef struct ses__slot {
    ses__slot_kind_t kind;
    ses__type_t type;
    size_t bytes;
    size_t device;        /* index in session->devices */
    ses_edge_t edge;      /* the graph edge it holds */
    size_t source;        /* for a copy: the slot it copies; SIZE_MAX otherwise */
    size_t feed_index;    /* SES__SLOT_FEED: index in the plan's fed edges */
    void *value_seen;     /* SES__SLOT_FEED whose value shape inference read (a shape, starts,
                             pads): a copy of it, for ses__compiled_matches; else NULL */
    uint64_t offset;      /* SES__SLOT_ARENA: offset in the arena; externals: 0 */
    size_t first_step;    /* liveness: the step that writes it (0 for externals) */
    size_t last_step;     /* liveness: the last step that reads it */
    int written;          /* SES__SLOT_VARIABLE: an op of the plan updates it in place, so a
                             private scope gets its own copy first (copy-on-write);
                             SES__SLOT_RESIDENT_VARIABLE: updated on its device */
    int host_read;        /* SES__SLOT_VARIABLE: a step on the host reads it (or fetches it) */
    struct ses__resident_var *resident_var; /* SES__SLOT_RESIDENT_VARIABLE, per run */
    ses_drv_buffer_t *bound_before; /* SES__SLOT_RESIDENT_VARIABLE: last run's buffer; another
                             one means captured graphs must be recorded again */
    ses_drv_buffer_t *resident; /* SES__SLOT_RESIDENT: the session's buffer, at offset 0 */
    int blocked;          /* an NCHWc16 value (layout.c), of a single-device CPU plan */
    size_t plain_twin;    /* blocked: the slot holding it in NCHW + 1 (its reorder), or 0 */
    size_t alias_of;      /* SES__SLOT_ARENA: the first slot of the group whose bytes it is
                             + 1 (a Concat's output over its inputs, memory.c), or the slot it
                             is a view of + 1 (viewed set), or 0 */
    int viewed;           /* SES__SLOT_ARENA: a view, or the value views are on (memory.c):
                             its bytes are never an in-place output's */
    ses_tensor_t *folded; /* SES__SLOT_CONSTANT computed at compile time (fold.c): its value,
                             owned by the plan; NULL for a graph constant */
    size_t group;         /* SES__SLOT_ARENA: the first slot of the values placed back to back
                             with it (one AllReduce bucket, summed by one collective), or
                             SIZE_MAX */
    /* Per run: */
    ses_drv_buffer_t *buffer;
    ses_tensor_t *tensor;   /* externals: the host tensor of this run (borrowed) */
    int imported;           /* buffer came from import_host_ptr and is freed after the run */
    int handed_out;         /* SES__SLOT_OUTPUT: the tensor went to the caller this run */
    ses_tensor_t *device_feed; /* SES__SLOT_FEED of a device tensor (slot->device is its
                               device): this run's value, borrowed; bound in place */
} ses__slot_t;

typedef enum ses__step_kind {
    SES__STEP_KERNEL = 0,
    SES__STEP_COPY,
    SES__STEP_HOST, /* an op the runtime runs itself (Save, Restore): exec/host_ops.c */
    SES__STEP_NONE, /* nothing to run: a Concat whose inputs memory.c laid out back to back
                       where its output is, or a copy whose output is a view of its input */
} ses__step_kind_t;

struct ses__segment;

typedef struct ses__step {
    ses__step_kind_t kind;
    size_t device;
    const ses_node_t *node;
    /* Kernel steps. */
    const ses_drv_kernel_t *kernel;
    void *state;
    ses__attrs_t kernel_attrs;
    ses_drv_tensor_desc_t *descs; /* inputs then outputs */
    ses_drv_node_t drv_node;
    ses_drv_launch_t launch;
    size_t n_args;                /* inputs then outputs */
    size_t *args;                 /* slot index of each argument */
    ses_drv_buffer_t **buffers;   /* filled per run from the slots */
    uint64_t *offsets;
    struct ses__segment *segment; /* the captured run of kernels it belongs to, or NULL */
    /* Host steps: memory kept from run to run (AllReduce's fused buffer), freed with the plan. */
    void *scratch;
    size_t scratch_bytes;
    /* Copy steps: args[0] is the source slot, args[1] the destination. */
    /* Profiling (ses_session_options_t.profile): runs that executed the step and their summed
     * time; guarded by the plan's lock. */
    uint64_t profile_calls;
    uint64_t profile_ns;
} ses__step_t;

/*
 * A run of consecutive kernel steps on one device that records graphs, captured on the plan's
 * first run and replayed as one launch after (compile/streams.c).
 */
typedef struct ses__segment {
    size_t device;
    size_t first, end;      /* steps [first, end) */
    ses_drv_graph_t *graph; /* NULL until captured */
    int failed;             /* the capture failed once: its steps run one by one */
} ses__segment_t;

/* What one compile produced for one set of external types. */
typedef struct ses__compiled {
    ses__slot_t *slots;
    size_t n_slots;
    ses__step_t *steps;
    size_t n_steps;
    size_t *fetch_slots;          /* per fetch (plan order) */
    uint64_t *arena_bytes;        /* per device */
    ses_drv_buffer_t **arenas;    /* per device, allocated at compile */
    char *placement;              /* the summary text */
    const ses_node_t **placed_nodes;
    size_t *placed_devices;
    size_t n_placed;
    ses_drv_stream_t **streams;   /* per device: the plan's stream, or NULL (no streams) */
    unsigned char *pending;       /* per device, during a run: kernels enqueued, not waited for */
    size_t *last_enqueued;        /* per device, during a run: the step enqueued last */
    ses__segment_t *segments;
    size_t n_segments;
    ses_transfer_stats_t *transfers; /* the plan's counters, for this run's copies */
    ses_node_t **fused_nodes;     /* the fused nodes its steps run, and their empty Bs */
    size_t n_fused_nodes;
    size_t n_fusions;             /* chains run as one fused node */
    size_t n_pool_fusions;        /* of which with their trailing MaxPool (NchwcConv) */
    size_t n_update_fusions;      /* of which MatMulGrad -> SGD (MatMulGradSGD) */
    ses_node_t **layout_nodes;    /* the layout pass's nodes its steps run (layout.c) */
    size_t n_layout_nodes;
    size_t n_blocked;             /* nodes run on NCHWc16 values */
    size_t n_reorders;            /* NchwcReorderOutput steps */
    size_t n_in_place;            /* outputs written over an input (memory.c, DRV-86) */
    size_t n_concats_in_place;    /* Concat steps made SES__STEP_NONE (memory.c) */
    size_t n_views;               /* copies made views of their input, SES__STEP_NONE (memory.c) */
    size_t n_folded;              /* nodes computed at compile time (fold.c) */
    int recapture; /* a resident variable moved to another buffer: graphs are recorded again */
} ses__compiled_t;

struct ses_plan {
    ses_session_t *session;
    uint64_t graph_version;
    ses_edge_t *fetches;
    size_t n_fetches;
    ses_edge_t *fed;
    size_t n_fed;
    ses_node_t **targets;
    size_t n_targets;
    int cached; /* made by eval (kept in the cache) rather than by ses_session_compile */
    pthread_mutex_t lock;
    ses_transfer_stats_t transfers; /* every run's copies so far; guarded by lock */
    ses__compiled_t *compiled;
};

/* ---- compile ---------------------------------------------------------------------------- */

/** What prune found: the needed nodes in topological order and the variables they read. */
typedef struct ses__pruned {
    const ses_node_t **nodes; /* op and NoOp nodes to run, and every external node needed */
    size_t n_nodes;
    const ses_node_t **variables;
    size_t n_variables;
} ses__pruned_t;

/* ---- fusion (compile/fuse.c) ------------------------------------------------------------ */

typedef enum ses__fusion_state {
    SES__FUSION_CANDIDATE = 0, /* found; decided when the compiler reaches its last member */
    SES__FUSION_FUSED,         /* compiled as one step of the fused node (see n_fused) */
    SES__FUSION_REJECTED,      /* no kernel on the device, or inference refused: unfused */
} ses__fusion_state_t;

/** A chain of the plan that may run as one fused node (see fuse.c for the patterns). */
typedef struct ses__fusion {
    /* in plan order: Conv or Gemm, [Add], the activation[, a trailing MaxPool (pooled)]; or
     * MatMulGrad, SGD */
    const ses_node_t *members[4];
    size_t n_members;
    ses_node_t *node;  /* FusedConv or FusedGemm, the plan's own (not the graph's), of the
                          members up to the activation: the pool stays out of it; or
                          MatMulGradSGD, without outputs */
    ses_node_t *empty; /* FusedConv with Z and no B: the empty constant standing for B, or NULL */
    /* With a trailing MaxPool: node with the pool's attributes as pool_kernel_shape, ...,
     * named after every member, which is compiled only as its blocked variant (NchwcConv);
     * NULL for a chain without a pool. FusedConv never gets the pool_ attributes. */
    ses_node_t *pooled;
    ses__fusion_state_t state;
    size_t n_fused; /* SES__FUSION_FUSED: members run by the fused step (the pool's or not) */
} ses__fusion_t;

/* Ids a candidate takes: its fused node, the empty B, the pooled node. */
#define SES__FUSION_IDS 3

typedef struct ses__fusions {
    ses__fusion_t *items;
    size_t count;
} ses__fusions_t;

/**
 * Finds the fusion candidates of @p pruned for @p plan and builds their nodes, with ids from
 * @p first_id on (SES__FUSION_IDS per candidate: the compiler's tables index them past the
 * graph's nodes).
 * Fails only when memory runs out.
 */
ses_status_t ses__fuse_find(const ses_plan_t *plan, const ses__pruned_t *pruned, size_t first_id,
                            ses__fusions_t *out);
/** The candidate @p n is a member of, or NULL. */
ses__fusion_t *ses__fusion_of(const ses__fusions_t *f, const ses_node_t *n);
/** Frees the candidates and the nodes still theirs (a compiled plan takes the fused ones). */
void ses__fusions_clear(ses__fusions_t *f);

/** A node of the plan's own, outside the graph, with @p n_inputs inputs left for the caller to
 *  set and one output: id @p id indexes the compiler's tables only. NULL when memory runs out
 *  or @p op has no schema. */
ses_node_t *ses__plan_node(const ses_node_t *like, size_t id, const char *name, const char *op,
                           ses__node_kind_t kind, size_t n_inputs);

/* Layout (layout.c): NCHWc16 activations between convolutions on the CPU. */
/** The blocked op that runs @p n, or NULL: NchwcConv for Conv and FusedConv; the Nchwc pools
 *  for a pool whose input is blocked (@p input_blocked). */
const char *ses__layout_variant(const ses_node_t *n, int input_blocked);
/** Whether @p n reads input @p i as it is while it is blocked, given which of its inputs are
 *  (@p blocked) and their types. */
int ses__layout_accepts(const ses_node_t *n, size_t i, const unsigned char *blocked,
                        const ses__type_t *types);
/** Whether @p n's output is one of the pass's blocked values: a blocked variant's (@p variant;
 *  not NchwcReorderOutput's), or a pass-through op's that read blocked inputs
 *  (@p read_blocked). */
int ses__layout_makes_blocked(const ses_node_t *n, int variant, int read_blocked);
/** @p n with op @p op: same name, id, inputs and attributes; NULL when memory runs out. */
ses_node_t *ses__layout_variant_node(const ses_node_t *n, const char *op);
/** NchwcReorderOutput of @p blocked, id @p id, named "<node>:<output>/nchw". */
ses_node_t *ses__layout_reorder_node(ses_edge_t blocked, size_t id);

/** Validates the request and finds what it needs. Messages name the node and edge at fault. */
ses_status_t ses__prune(const ses_graph_t *g, const ses_edge_t *fetches, size_t n_fetches,
                        const ses_edge_t *fed, size_t n_fed, ses_node_t *const *targets,
                        size_t n_targets, ses__pruned_t *out);
void ses__pruned_clear(ses__pruned_t *p);

/** Index of @p edge in @p fed, or SIZE_MAX. */
size_t ses__fed_index(const ses_edge_t *fed, size_t n_fed, ses_edge_t edge);

/**
 * Compiles @p plan for this run's external tensors: @p feeds (plan order) and the variables in
 * @p scope. Replaces plan->compiled.
 */
ses_status_t ses__compile(ses_plan_t *plan, ses_tensor_t *const *feeds, ses_scope_t *scope);
void ses__compiled_free(ses_session_t *s, ses__compiled_t *c);

/**
 * Compiles @p plan before any run, for the types its fed edges are declared with (placeholders
 * without a -1 dimension, fed constants and variables), so that every error the types decide
 * (shapes, dtypes, placement, kernels, memory) is reported now. Sets @p out_compiled to 0, and
 * succeeds, when a fed type or a fed value that shapes the plan is known only at a run.
 */
ses_status_t ses__compile_declared(ses_plan_t *plan, ses_scope_t *scope, int *out_compiled);

/**
 * Gives each device with streams a stream of the plan's and points its kernel steps at it, and
 * finds the segments to capture on devices that record graphs (compile/streams.c).
 */
ses_status_t ses__plan_streams(ses_session_t *s, ses__compiled_t *c);
/** Destroys what ses__plan_streams made; no work of the plan may be in flight. */
void ses__plan_streams_free(ses_session_t *s, ses__compiled_t *c);
/** Drops the captured graphs, so that the next run records them again (new buffers). */
void ses__plan_forget_graphs(ses_session_t *s, ses__compiled_t *c);

/** Whether this run's external tensors still have the types the plan was compiled for, and the
 *  graph has not changed since. */
int ses__compiled_matches(const ses_plan_t *plan, ses_tensor_t *const *feeds, ses_scope_t *scope);

/**
 * Finds the highest-priority kernel of @p dev for @p op at @p signature that is not one of
 * @p skip[@p n_skip] (entries whose supports_node refused the node); NULL when there is none.
 */
const ses_drv_kernel_t *ses__find_kernel(const ses__device_ctx_t *dev, const char *op,
                                         const char *signature,
                                         const ses_drv_kernel_t *const *skip, size_t n_skip);

/**
 * The buffer on device @p device holding constant @p value, uploaded the first time a plan of
 * @p s asks (counted as a host-to-device transfer of the session). Thread-safe.
 */
ses_status_t ses__resident_constant(ses_session_t *s, ses_tensor_t *value, size_t device,
                                    ses_drv_buffer_t **out_buffer);
/** Frees every resident constant of @p s; no plan may use them any more. */
void ses__resident_free(ses_session_t *s);

struct ses__resident_var;
/**
 * The copy of variable tensor @p t on device @p device, made or refreshed from the host when the
 * host's bytes are newer (counted in @p c). Thread-safe.
 */
ses_status_t ses__resident_variable(ses_session_t *s, ses__compiled_t *c, ses_tensor_t *t,
                                    size_t device, ses_drv_buffer_t **out_buffer,
                                    struct ses__resident_var **out_entry);
/** A run updated @p e's device copy: the host's is stale until someone reads it. */
void ses__resident_variable_updated(ses_session_t *s, struct ses__resident_var *e);
/** Brings a device's newer bytes of @p t home now (counted in @p c), if @p s has them. */
ses_status_t ses__resident_materialize(ses_session_t *s, ses__compiled_t *c, ses_tensor_t *t);
/** Reads every device-newer variable back, then frees the copies. At close. */
void ses__resident_variables_free(ses_session_t *s);

/* ---- constant folding (compile/fold.c) ------------------------------------------------- */

/* The most elements a folded output may have: shape computations, not weights; in a session
 * with other devices than the CPU, where a kernel may read it from there at every run, less. */
#define SES__FOLD_MAX_ELEMENTS 65536
#define SES__FOLD_MAX_ELEMENTS_SHARED 1024

/** Whether @p node may be folded at all: it has outputs, is deterministic, runs as a kernel. */
int ses__fold_candidate(const ses_node_t *node);
/** Whether @p op's result differs from run to run (RandomNormal, Dropout, ...): never folded. */
int ses__fold_is_random(const char *op);
/**
 * Shape or Size @p node of a value of type @p in, as a new tensor in @p out; SES_UNIMPLEMENTED
 * (no message) when a dimension is unknown.
 */
ses_status_t ses__fold_shape(const ses_node_t *node, const ses__type_t *in, ses_tensor_t **out);
/**
 * Runs @p drv_node (kernel @p signature) now on the session's CPU device, its inputs the host
 * bytes @p in_values of types @p in_types, into new tensors @p out_tensors of @p out_types.
 * SES_UNIMPLEMENTED (no message, nothing made) when it cannot be folded: a value unknown or
 * empty, an output too large, no CPU kernel, or the kernel refusing or failing. @p needed: the
 * value is one inference must read, allowed SES__FOLD_MAX_ELEMENTS in every session.
 */
ses_status_t ses__fold_run(ses_session_t *s, const ses_drv_node_t *drv_node, const char *signature,
                           const void *const *in_values, const ses__type_t *const *in_types,
                           const ses__type_t *out_types, int needed, ses_tensor_t **out_tensors);

/** Offsets for every arena slot of @p c, reusing memory once a value's last reader ran. */
ses_status_t ses__plan_memory(ses_session_t *s, ses__compiled_t *c);

/* ---- device tensors (session/device_tensor.c) ------------------------------------------ */

/** Makes @p s's home for device tensors, at open. */
ses_status_t ses__device_home_open(ses_session_t *s);
/** Frees the buffers of @p s's live device tensors and marks them closed; before the devices
 *  close. */
void ses__device_home_close(ses_session_t *s);
/** Drops the session's reference to its home, at destroy. */
void ses__device_home_release(ses_session_t *s);
/**
 * A new device tensor of @p s on device @p device owning @p buffer (freed with it, or now on
 * failure; NULL for 0 bytes).
 */
ses_status_t ses__device_tensor_wrap(ses_session_t *s, size_t device, ses_dtype_t dtype,
                                     size_t rank, const int64_t *dims, ses_drv_buffer_t *buffer,
                                     ses_tensor_t **out);
/**
 * The index in @p s->devices of device tensor @p t's device; SES_INVALID_ARGUMENT when it is
 * another session's, SES_FAILED_PRECONDITION when its session closed (messages start with
 * @p what).
 */
ses_status_t ses__device_tensor_locate(ses_session_t *s, const ses_tensor_t *t, const char *what,
                                       size_t *out_device);
/** Holds @p t's home open (its buffer valid) and gives its session, or fails if closed. */
ses_status_t ses__device_tensor_lock(ses_tensor_t *t, const char *what, ses_session_t **out_s);
void ses__device_tensor_unlock(ses_tensor_t *t);

/* ---- run -------------------------------------------------------------------------------- */

/**
 * Runs a compiled plan: binds externals, runs the steps, copies fetches out (as device tensors
 * where @p device_fetches and the value is on a device other than the host).
 */
ses_status_t ses__run(ses_plan_t *plan, ses_tensor_t *const *feeds, ses_scope_t *scope,
                      int device_fetches, ses_tensor_t **out_values);

/**
 * Counts @p bytes moved from device @p from to device @p to (indexes in s->devices; the CPU
 * device, last, is the host) in @p c's plan and in its session. Nothing when both are the host.
 */
void ses__count_transfer(ses_session_t *s, ses__compiled_t *c, size_t from, size_t to,
                         uint64_t bytes);

/* exec/transfers.c: device @p d's name and its driver's, for messages; a driver's answer
 * SES_DRV_UNAVAILABLE marks the session lost (DRV-81); a failed copy to, from or within device
 * @p device as an error naming both (@p how: "to", "from", "within"). */
const char *ses__device_name_of(const ses_session_t *s, size_t d);
const char *ses__driver_name_of(const ses_session_t *s, size_t d);
void ses__note_device_failure(ses_session_t *s, size_t d, int32_t rc);
ses_status_t ses__copy_failed(ses_session_t *s, size_t device, int32_t rc, const char *how);

/** Reads a slot's bytes into @p host, from whatever device holds it (counted in @p c). */
ses_status_t ses__read_slot(ses_session_t *s, ses__compiled_t *c, const ses__slot_t *slot,
                            void *host);

/**
 * Runs a host step (Save, Restore) with its input slots bound for this run. Errors name the node
 * and the file.
 */
ses_status_t ses__host_op_run(ses_session_t *s, ses__compiled_t *c, ses__step_t *step);

/* ---- string values (exec/host_strings.c) ------------------------------------------------ */

/** Whether @p node reads or makes a string: any input of @p in_types (@p n_in of them) or output
 *  of @p out_types (@p n_out) is SES_STRING. Such a node runs as a host step. */
int ses__string_node(const ses__type_t *in_types, size_t n_in, const ses__type_t *out_types,
                     size_t n_out);
/** Whether exec/host_strings.c runs @p op on strings. */
int ses__string_op_known(const char *op);
/** SES_INVALID_ARGUMENT naming @p node and the input when @p node's op cannot take the strings it
 *  is given (only the ops of exec/host_strings.c can). */
ses_status_t ses__string_node_check(const ses_node_t *node, const ses__type_t *in_types);
/** Runs string host step @p step (StringNormalizer, Cast, CastLike, Equal, Identity). */
ses_status_t ses__string_op_run(ses_session_t *s, ses__compiled_t *c, ses__step_t *step);

/** Copies @p bytes between two slots' buffers on possibly different devices. */
ses_status_t ses__copy_slot(ses_session_t *s, ses__compiled_t *c, const ses__slot_t *src,
                            const ses__slot_t *dst);
/** Host to device: @p host into a slot (mapped where the device allows, else copy_h2d). */
ses_status_t ses__write_slot(ses_session_t *s, ses__compiled_t *c, const ses__slot_t *slot,
                             const void *host);
/**
 * A host pointer to a slot's bytes: its host tensor, or its buffer mapped (SES_DRV_MAP_READ or
 * _WRITE) when the device maps memory; NULL otherwise. Give it back with ses__unmap_slot.
 */
void *ses__map_slot(ses_session_t *s, const ses__slot_t *slot, uint32_t flags);
void ses__unmap_slot(ses_session_t *s, const ses__slot_t *slot, void *p);

#endif /* SES_PLAN_H */
