/*
 * libsession: evaluate computation graphs inside sessions, on devices supplied by driver plugins.
 * Include this header; it includes the rest. Link with `pkg-config --libs session`.
 *
 * A session is opened on a graph and a device list. It owns a root scope (variables live there),
 * the devices' memory and its compiled plans. eval computes what fetches and targets need:
 * a feed overrides any edge, and nothing upstream of a fed edge runs.
 */
#ifndef SESSION_SESSION_H
#define SESSION_SESSION_H

#include <session/status.h>
#include <session/registry.h>
#include <session/tensor.h>
#include <session/graph.h>
#include <session/scope.h>
#include <session/checkpoint.h>
#include <session/train.h>
#include <session/dataset.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ses_session ses_session_t;
typedef struct ses_plan ses_plan_t;

/** What happens when a node cannot run on the device the caller preferred. */
typedef enum ses_fallback {
    SES_FALLBACK_ALLOW = 0, /* run it on the next device that can, silently */
    SES_FALLBACK_WARN = 1,  /* the same, with a warning naming the node and why */
    SES_FALLBACK_DENY = 2,  /* fail the compile, naming the node, op, dtypes and devices tried */
} ses_fallback_t;

typedef struct ses_session_options {
    uint32_t struct_size;      /* sizeof(ses_session_options_t); set by ses_session_options_init */
    ses_fallback_t fallback;   /* default SES_FALLBACK_WARN */
    uint32_t threads;          /* CPU kernel threads (the driver option driver.cpu.threads);
                                  0: the environment's or manifest's value, else one per CPU */
    uint32_t log_level;        /* what this session prints on stderr: 0 error, 1 warn (default:
                                  each fallback), 2 info, 3 debug (each plan's placement) */
    ses_registry_t *registry;  /* NULL: ses_registry_default() */
    /* Driver options as "driver.<name>.<option>=value" strings, e.g. "driver.xrt.xclbin=/a.bin";
     * they win over the environment and the manifest. Copied at open. */
    const char *const *driver_options;
    size_t n_driver_options;
    /* 1 (default): on a device that records graphs (SES_DEVICE_CAP_GRAPHS, e.g. a CUDA GPU), each
     * run of consecutive kernels of a plan is captured on the plan's first run and replayed as one
     * launch after; 0: every kernel is launched on every run. */
    uint32_t graphs;
    /* 1 (default): the compiler runs chains Conv -> [Add ->] activation and Gemm -> activation
     * as one fused node (FusedConv, FusedGemm) where the device's driver has a kernel for it;
     * placement and errors still name the user's nodes. 0: every node runs as it is. The
     * environment variable SESSION_FUSION=0 (or off) forces 0, for debugging and A/B benches. */
    uint32_t fusion;
    /* 1 (default): in a session whose one device is the CPU, activations stay in the blocked
     * layout NCHWc16 from one convolution to the next (NchwcConv and the Nchwc pools, where
     * the driver has kernels for them), and are reordered to NCHW only for the ops that need
     * it; results are the same. 0: every op reads and writes NCHW. The environment variable
     * SESSION_LAYOUT=0 (or off) forces 0. */
    uint32_t layout;
    /* 1 (default): an output may be written over the bytes of an input that no later step
     * reads, where its kernel allows it (a fused convolution's residual input on the CPU), and
     * a Concat whose output is its inputs one after the other gets them placed back to back
     * where its output is, so neither value is copied; results are the same. 0: every output
     * gets bytes of its own. The environment variable SESSION_IN_PLACE=0 (or off) forces 0. */
    uint32_t in_place;
    /* 1 (default): a node whose inputs are all known when the plan is compiled (constants, fed
     * values the plan reads, values folded before it) is computed then, once, on the CPU, and
     * Shape and Size from their input's type: chains that compute shapes reach the ops that
     * read them (Reshape's shape, Slice's ends) as known values. 0: every node runs each time,
     * except those computing a value shape inference needs (computed at compile time whatever
     * this option, from the fed values if need be). The environment variable SESSION_FOLD=0 (or
     * off) forces 0. */
    uint32_t fold;
    /* 0 (default): no profiling. 1: every step of a plan run (kernel, copy, host step) is timed
     * on the calling thread and the times are summed per step (ses_plan_profile). A kernel
     * launched on a stream is waited for right after its launch, so that its time is the
     * kernel's, and captured graphs are not used: runs go step by step, slower than unprofiled
     * ones. The environment variable SESSION_PROFILE=1 (or on) forces 1, =0 (or off) forces 0.
     * A struct_size that ends before this field: 0. */
    uint32_t profile;
} ses_session_options_t;

/** Fills @p options with the defaults. */
SES_API void ses_session_options_init(ses_session_options_t *options);

/**
 * Opens a session on @p graph (retained) with the devices @p devices[@p n_devices] in priority
 * order ("gpu:0", "cpu"; see ses_registry_find_device); the CPU device is always added last.
 * @p options may be NULL for the defaults. Fails with SES_NOT_FOUND for an unknown device name
 * (the message lists the devices that exist).
 */
SES_API ses_status_t ses_session_open(ses_graph_t *graph, const char *const *devices,
                                      size_t n_devices, const ses_session_options_t *options,
                                      ses_session_t **out_session);

/** A value to use for an edge instead of computing it. */
typedef struct ses_feed {
    ses_edge_t edge;
    /* Borrowed for the call. A host tensor, or a device tensor of this session: nodes on its
     * device read it in place (no copy); others get a copy, counted. A device tensor of another
     * session, or of a closed one, is refused (SES_INVALID_ARGUMENT, SES_FAILED_PRECONDITION). */
    ses_tensor_t *value;
} ses_feed_t;

/**
 * Evaluates @p fetches and runs @p targets for their effect, computing only what they need.
 * A feed replaces its edge wherever it is consumed; nothing upstream of a fed edge runs, and
 * fetching a fed edge gives the fed value. @p out_values receives one new tensor per fetch,
 * owned by the caller; on failure every entry is NULL and ses_last_error() names the node, edge
 * or device at fault. Thread-safety: may be called concurrently on one session.
 */
SES_API ses_status_t ses_session_eval(ses_session_t *s, const ses_edge_t *fetches,
                                      size_t n_fetches, const ses_feed_t *feeds, size_t n_feeds,
                                      ses_node_t *const *targets, size_t n_targets,
                                      ses_tensor_t **out_values);

/** Extra arguments of ses_session_eval_ex. */
typedef struct ses_eval_options {
    uint32_t struct_size;
    /** Run in a new child of the session's scope, dropped afterwards (Caffe2's private
     *  workspace). Copy-on-write: the eval reads the session's variables, but a variable it
     *  updates (an optimizer step, a Restore) is first copied into the private scope, so the
     *  update and any variable first set by this eval vanish with it; the session's variables
     *  never change. */
    int private_scope;
    /* Since libsession 0.1's device tensors (a struct_size that ends before it: 0). */
    /** 1: a fetched value computed on a device other than the host comes back as a device
     *  tensor on that device (ses_tensor_is_device, ses_tensor_device), its bytes copied on the
     *  device (counted as device to device), never through the host; a fed device tensor fetched
     *  comes back as itself. A value that is already in host memory (computed on the CPU, on a
     *  device that writes results into host memory, a variable) is a host tensor as before.
     *  0 (default): every fetched value is a host tensor. */
    int device_fetches;
} ses_eval_options_t;

SES_API ses_status_t ses_session_eval_ex(ses_session_t *s, const ses_edge_t *fetches,
                                         size_t n_fetches, const ses_feed_t *feeds,
                                         size_t n_feeds, ses_node_t *const *targets,
                                         size_t n_targets, const ses_eval_options_t *options,
                                         ses_tensor_t **out_values);

/**
 * Compiles what eval would run for these fetches, fed edges and targets into a plan for hot
 * loops. Everything the fed edges' declared types decide is done now: shapes and dtypes are
 * inferred, nodes placed (the fallback policy applied), kernels bound and memory planned, so
 * every error they can raise is returned here, naming the node, and ses_plan_placement,
 * ses_plan_node_device and ses_plan_step_count answer before any run. The variables the plan
 * reads are initialized for that, as the first run would. A fed edge's type is declared by a
 * placeholder without a -1 dimension, a fed constant or an initialized variable; when one is
 * not (a -1 dimension, a fed intermediate), or a fed value shapes the plan (a Reshape's shape),
 * only pruning is checked now and the plan compiles at ses_plan_prepare or its first run.
 * The plan belongs to the session: ses_session_close frees what it holds (no run works after
 * it), ses_session_destroy frees the plan itself, and ses_plan_destroy frees it sooner, before,
 * during or after the close (from any thread).
 */
SES_API ses_status_t ses_session_compile(ses_session_t *s, const ses_edge_t *fetches,
                                         size_t n_fetches, const ses_edge_t *fed_edges,
                                         size_t n_fed, ses_node_t *const *targets,
                                         size_t n_targets, ses_plan_t **out_plan);

/**
 * Runs a plan with new values for its fed edges (in the order given to compile). A value of
 * another shape than the last run recompiles the plan's shapes. Thread-safety: runs of one plan
 * are serialized; different plans run concurrently.
 */
SES_API ses_status_t ses_plan_run(ses_plan_t *plan, ses_tensor_t *const *feed_values,
                                  size_t n_feed_values, ses_tensor_t **out_values);

/**
 * ses_plan_run with options: only ses_eval_options_t.device_fetches applies (private_scope set
 * is SES_UNIMPLEMENTED: a plan runs in its session's scope). @p options may be NULL. A feed value
 * may be a device tensor of the plan's session: a node on its device reads it where it is (no
 * copy, no transfer counted); a node elsewhere gets a copy (counted). The plan recompiles when a
 * fed value moves between the host and a device.
 */
SES_API ses_status_t ses_plan_run_ex(ses_plan_t *plan, ses_tensor_t *const *feed_values,
                                     size_t n_feed_values, const ses_eval_options_t *options,
                                     ses_tensor_t **out_values);

/**
 * Compiles @p plan for these feed values (their types, and the values that shape the plan)
 * without running it, so that their errors come now and the placement can be read. A run with
 * values of the same types then starts at once. Errors as ses_plan_run's.
 */
SES_API ses_status_t ses_plan_prepare(ses_plan_t *plan, ses_tensor_t *const *feed_values,
                                      size_t n_feed_values);

/** Frees a plan before its session is destroyed (closed or not). Accepts NULL. */
SES_API void ses_plan_destroy(ses_plan_t *plan);

/** Steps (kernel launches and copies) one run of the plan makes. */
SES_API size_t ses_plan_step_count(const ses_plan_t *plan);

/**
 * The plan's placement summary: nodes per device, then each node that fell back and why.
 * Owned by the plan; valid until it is destroyed or recompiled.
 */
SES_API const char *ses_plan_placement(const ses_plan_t *plan);

/** The device the plan placed @p node on ("cpu:0"), or NULL when the node does not run. */
SES_API const char *ses_plan_node_device(const ses_plan_t *plan, const ses_node_t *node);

/**
 * Bytes and copies that crossed between the host and devices. "Host" is host memory (the CPU
 * device, the caller's tensors); a device reached through map counts like one reached through
 * copies. A copy between two devices, or within one, counts as device to device.
 */
typedef struct ses_transfer_stats {
    uint32_t struct_size; /* sizeof(ses_transfer_stats_t): set it before the call */
    uint64_t runs;        /* plan runs counted (for a session: of all its plans and evals) */
    uint64_t h2d_bytes, h2d_copies;
    uint64_t d2h_bytes, d2h_copies;
    uint64_t d2d_bytes, d2d_copies;
} ses_transfer_stats_t;

/**
 * What every run of @p plan moved so far, in total (subtract two readings for a window: runs 2
 * to N, say). SES_INVALID_ARGUMENT for NULL or a struct_size smaller than this version's.
 * Thread-safety: waits for a run of the plan in flight.
 */
SES_API ses_status_t ses_plan_transfers(ses_plan_t *plan, ses_transfer_stats_t *out_stats);

/** The same for every plan and eval of @p s, since it opened. Thread-safe. */
SES_API ses_status_t ses_session_transfers(ses_session_t *s, ses_transfer_stats_t *out_stats);

/** The time one step of a plan took in the runs profiled so far (ses_plan_profile). */
typedef struct ses_step_time {
    uint32_t struct_size; /* sizeof(ses_step_time_t): set it in out[0] before the call */
    const char *op;       /* what ran: the kernel's op as the driver names it ("NchwcConv",
                             "FusedGemm"), "Copy" for a copy between devices, or the op type of a
                             step the runtime runs itself ("Save") */
    const char *node;     /* the graph node's name (a fused step: the node errors name it by) */
    const char *device;   /* where it ran: "cpu:0" */
    uint64_t calls;       /* runs that executed it */
    uint64_t total_ns;    /* its time summed over those runs (CLOCK_MONOTONIC, calling thread) */
} ses_step_time_t;

/**
 * The time of each step of @p plan summed over its runs since it was compiled or
 * ses_plan_profile_reset, in plan step order (steps that run nothing are left out), for a
 * session opened with ses_session_options_t.profile = 1. @p out[0].struct_size must be set;
 * every entry filled gets it. @p out may be NULL with @p capacity 0: only *@p out_count is set
 * (the sizing call). When @p capacity is smaller than the count, nothing is filled, *@p
 * out_count is the count needed and the call fails with SES_INVALID_ARGUMENT. The strings are
 * owned by the plan, valid until it is destroyed or recompiled (new feed shapes), and a
 * recompile starts the sums again. A plan not compiled yet has no steps (count 0).
 * SES_FAILED_PRECONDITION when the session does not profile; SES_INVALID_ARGUMENT for a NULL
 * @p plan or @p out_count, or a struct_size smaller than this version's.
 * Thread-safety: waits for a run of the plan in flight.
 */
SES_API ses_status_t ses_plan_profile(ses_plan_t *plan, ses_step_time_t *out, size_t capacity,
                                      size_t *out_count);

/**
 * Sets every step's calls and time of @p plan to 0 (after a first run that included one-time
 * work, say). The same errors and thread-safety as ses_plan_profile.
 */
SES_API ses_status_t ses_plan_profile_reset(ses_plan_t *plan);

/**
 * The session's root scope: its variables. Owned by the session; the pointer stays valid until
 * ses_session_destroy (a close empties the scope but keeps it).
 */
SES_API ses_scope_t *ses_session_scope(ses_session_t *s);

/**
 * Kernel computes this session has called so far (for tests and profiling). A kernel replayed as
 * part of a graph is not called again, so it is not counted again.
 */
SES_API uint64_t ses_session_kernel_calls(const ses_session_t *s);

/**
 * How a session reaches the other processes of a distributed job: the AllReduce op
 * (ses_minimize_distributed's gradients) calls it. libsession-mpi gives one on MPI
 * (<session/mpi.h>); without one a session is a job of one process.
 */
typedef struct ses_communicator {
    uint32_t struct_size; /* sizeof(ses_communicator_t) */
    uint32_t rank;        /* this process, 0 .. size-1 */
    uint32_t size;        /* processes in the job */
    /** Sums @p count values of @p dtype (f32 or f64) at @p data over every rank, in place.
     *  Every rank calls it with the same count and dtype, in the same order. */
    ses_status_t (*allreduce_sum)(void *user, void *data, size_t count, ses_dtype_t dtype);
    void *user;
    /** Optional (since libsession 0.1; NULL, or a struct_size that ends before it: not offered).
     *  Sums @p count values at @p send over every rank into @p recv (the two do not overlap):
     *  AllReduce then reads a gradient where it was computed and writes the result where it is
     *  read next, without copying either. */
    ses_status_t (*allreduce_sum_into)(void *user, const void *send, void *recv, size_t count,
                                       ses_dtype_t dtype);
} ses_communicator_t;

/** Sets (copies) @p comm as @p s's communicator; NULL removes it. Not while evals run. */
SES_API ses_status_t ses_session_set_communicator(ses_session_t *s, const ses_communicator_t *comm);

/** Initializes every variable of the session's graph that its scope does not hold yet. */
SES_API ses_status_t ses_session_initialize_variables(ses_session_t *s);

/** Graphs this session has captured so far (see ses_session_options_t.graphs). */
SES_API uint64_t ses_session_graph_captures(const ses_session_t *s);

/** Graph launches (replays, the first included) this session has made so far. */
SES_API uint64_t ses_session_graph_launches(const ses_session_t *s);

/**
 * Copies the variables of @p from's graph from @p from's scope into @p to's (new tensors, not
 * shared). Both sessions must be open.
 */
SES_API ses_status_t ses_session_copy_variables(ses_session_t *to, ses_session_t *from);

/**
 * Closes the session: new evals fail with SES_FAILED_PRECONDITION, evals in flight are waited
 * for, plans and all device memory are freed, the scope is emptied. Child scopes a caller made
 * from the session's scope (ses_scope_create_child) are emptied too and stay valid, owned by the
 * caller; ses_session_destroy detaches them (their parent becomes NULL). Closing always
 * succeeds on a session; closing twice is allowed.
 */
SES_API ses_status_t ses_session_close(ses_session_t *s);

/**
 * 1 while @p s can eval: opened and neither closed nor lost (a device answered "lost"); 0
 * otherwise, and for NULL (Caffe2's is_open). Thread-safe.
 */
SES_API int ses_session_is_open(ses_session_t *s);

/** Closes (if open) and frees the session. Accepts NULL. */
SES_API void ses_session_destroy(ses_session_t *s);

#ifdef __cplusplus
}
#endif

/* DLPack exchange of host and device tensors. */
#include <session/dlpack.h>

/* Hooks and the monitored training loop build on the types above; hooks.h includes this
 * header itself, so either may be included first. */
#include <session/hooks.h>

#endif /* SESSION_SESSION_H */
