/*
 * TaskSpec: where this process stands in a distributed job, read from the environment its
 * launcher set (Open MPI's mpirun, MPICH/Hydra and other PMI launchers, Slurm's srun), or given
 * explicitly. Reading it needs no MPI: a program started without a launcher is task 0 of 1.
 * The MPI side (collectives, distributed sessions) is <session/mpi.h>, in libsession-mpi.
 */
#ifndef SESSION_TASK_H
#define SESSION_TASK_H

#include <stddef.h>
#include <stdint.h>

#include <session/registry.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ses_task_spec {
    uint32_t struct_size;  /* set by ses_task_spec_from_env / ses_task_spec_init */
    uint32_t rank;         /* 0 .. size-1 in the job */
    uint32_t size;         /* processes in the job */
    uint32_t local_rank;   /* 0 .. local_size-1 on this machine */
    uint32_t local_size;   /* processes of the job on this machine */
    uint32_t shard_index;  /* which part of the data this task reads (default: rank) */
    uint32_t shard_count;  /* how many parts (default: size) */
    int is_chief;          /* rank 0: writes checkpoints and logs */
    const char *launcher;  /* where the values came from: "open-mpi", "pmi" or "slurm" (that
                              launcher's variables), "mpi" (MPI_COMM_WORLD itself, read by
                              ses_mpi_init in <session/mpi.h>, whatever started the job),
                              "explicit" (ses_task_spec_init) or "none" (no launcher) */
    /* The evaluator (ses_task_spec_use_last_as_evaluator); 0 and 0 without one. */
    int has_evaluator;     /* the last task (rank size-1) evaluates: ranks 0 .. size-2 train */
    int is_evaluator;      /* this task is that evaluator: it does not train */
} ses_task_spec_t;

/** Task 0 of 1 ("explicit"); then set the fields and call ses_task_spec_check. */
SES_API void ses_task_spec_init(ses_task_spec_t *spec);

/**
 * Reads the launcher's variables: Open MPI (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK,
 * _LOCAL_SIZE), PMI (PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS), Slurm (SLURM_PROCID,
 * SLURM_NTASKS, SLURM_LOCALID), first that is set wins. Without a local size, a task is alone
 * on its machine (local size 1).
 *
 * Slurm's local size is this node's entry of SLURM_STEP_TASKS_PER_NODE (srun's step), else of
 * SLURM_TASKS_PER_NODE (the allocation): lists such as "2(x3),1" (nodes 0-2 run 2 tasks, node 3
 * runs 1), indexed by SLURM_NODEID (needed only when the counts differ); else
 * SLURM_NTASKS_PER_NODE (set only with --ntasks-per-node); else, with SLURM_NNODES alone, the
 * even split of SLURM_NTASKS over the nodes rounded up (exact on one node, an estimate on
 * several, never below SLURM_LOCALID + 1).
 *
 * SESSION_SHARD_INDEX, SESSION_SHARD_COUNT and SESSION_EVALUATOR apply as in
 * ses_task_spec_apply_env. Without any launcher, task 0 of 1 ("none"). A value that is not a
 * number or a list as above, a rank not below the size (local rank, local size; shard index,
 * shard count) is SES_INVALID_ARGUMENT naming the variables and their values: "task spec:
 * SLURM_PROCID=4 is not below SLURM_NTASKS=4".
 */
SES_API ses_status_t ses_task_spec_from_env(ses_task_spec_t *spec);

/**
 * Sets the last task aside as the job's evaluator, as TensorLayer's TaskSpecDef does with
 * use_last_worker_as_evaluator(): rank size-1 evaluates checkpoints as they appear and does not
 * train; ranks 0 .. size-2 are the training tasks (ses_task_workers), the chief among them.
 * Shards that were the default (rank of size) become rank of size-1 on a training task and 0
 * of 1 (everything) on the evaluator; overridden shards are left alone. Calling it twice is
 * calling it once. SESSION_EVALUATOR=1 makes ses_task_spec_from_env (and ses_mpi_init) call it.
 * SES_INVALID_ARGUMENT when the job has fewer than 2 tasks (nothing would train).
 */
SES_API ses_status_t ses_task_spec_use_last_as_evaluator(ses_task_spec_t *spec);

/** The tasks that train: size, or size - 1 with an evaluator. 1 for NULL. */
SES_API uint32_t ses_task_workers(const ses_task_spec_t *spec);

/**
 * Applies this process's own settings to @p spec, whose rank, size and local values are set
 * (by a program's own launcher, or ses_mpi_init from MPI): SESSION_SHARD_INDEX and
 * SESSION_SHARD_COUNT, then SESSION_EVALUATOR (1: ses_task_spec_use_last_as_evaluator; 0 or
 * unset: none), then checks it. ses_task_spec_from_env does this itself. A value that is not a
 * number (SESSION_EVALUATOR: not 0 or 1) is SES_INVALID_ARGUMENT naming the variable.
 */
SES_API ses_status_t ses_task_spec_apply_env(ses_task_spec_t *spec);

/**
 * Checks an explicit spec: rank < size, local_rank < local_size, shard_index < shard_count; with
 * an evaluator, size >= 2 and is_evaluator set on rank size-1 only.
 */
SES_API ses_status_t ses_task_spec_check(const ses_task_spec_t *spec);

/**
 * The device a task uses by default: "gpu:<local_rank>" when @p registry has that GPU, else
 * "cpu". Writes it into @p buffer of @p size bytes.
 */
SES_API ses_status_t ses_task_default_device(const ses_task_spec_t *spec,
                                             ses_registry_t *registry, char *buffer, size_t size);

/**
 * The part of @p n examples this task reads: [*begin, *end), contiguous, sizes differing by at
 * most one, every example in exactly one shard.
 */
SES_API void ses_task_shard_range(const ses_task_spec_t *spec, size_t n, size_t *begin,
                                  size_t *end);

#ifdef __cplusplus
}
#endif

#endif /* SESSION_TASK_H */
