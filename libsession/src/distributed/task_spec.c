/* TaskSpec from the launcher's environment (see <session/task.h>). No MPI here. */
#include <session/task.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"

void ses_task_spec_init(ses_task_spec_t *spec) {
    if (!spec)
        return;
    memset(spec, 0, sizeof *spec);
    spec->struct_size = sizeof *spec;
    spec->size = spec->local_size = spec->shard_count = 1;
    spec->is_chief = 1;
    spec->launcher = "explicit";
}

ses_status_t ses_task_spec_check(const ses_task_spec_t *s) {
    if (!s || s->struct_size < sizeof *s)
        return ses__fail(SES_INVALID_ARGUMENT, "task spec: NULL or not initialized "
                         "(ses_task_spec_init)");
    if (!s->size || s->rank >= s->size)
        return ses__fail(SES_INVALID_ARGUMENT, "task spec: rank %u is not below the size %u",
                         s->rank, s->size);
    if (!s->local_size || s->local_rank >= s->local_size)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "task spec: local rank %u is not below the local size %u", s->local_rank,
                         s->local_size);
    if (!s->shard_count || s->shard_index >= s->shard_count)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "task spec: shard index %u is not below the shard count %u",
                         s->shard_index, s->shard_count);
    if (s->has_evaluator && s->size < 2)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "task spec: an evaluator needs at least 2 tasks (one trains, the last "
                         "evaluates); the size is %u", s->size);
    if (!s->is_evaluator != !(s->has_evaluator && s->rank == s->size - 1))
        return ses__fail(SES_INVALID_ARGUMENT,
                         "task spec: is_evaluator is %d on rank %u of %u%s; only the last rank "
                         "of a job with an evaluator is it",
                         s->is_evaluator, s->rank, s->size,
                         s->has_evaluator ? " with an evaluator" : " without an evaluator");
    return SES_OK;
}

ses_status_t ses_task_spec_use_last_as_evaluator(ses_task_spec_t *s) {
    if (!s || s->struct_size < sizeof *s)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_task_spec_use_last_as_evaluator: NULL or not "
                         "initialized (ses_task_spec_init)");
    if (s->size < 2)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "task spec: an evaluator needs at least 2 tasks (one trains, the last "
                         "evaluates); the size is %u", s->size);
    if (s->has_evaluator)
        return SES_OK;
    s->has_evaluator = 1;
    s->is_evaluator = s->rank == s->size - 1;
    /* Default shards are spread over the training tasks; the evaluator reads everything. */
    if (s->shard_index == s->rank && s->shard_count == s->size) {
        s->shard_index = s->is_evaluator ? 0 : s->rank;
        s->shard_count = s->is_evaluator ? 1 : s->size - 1;
    }
    return SES_OK;
}

uint32_t ses_task_workers(const ses_task_spec_t *s) {
    if (!s || !s->size)
        return 1;
    return s->has_evaluator && s->size > 1 ? s->size - 1 : s->size;
}

/* The largest count a variable may hold: ranks and sizes are uint32_t, and int in MPI. */
#define MAX_COUNT 0x7fffffffUL

/*
 * Parses the decimal count at @p text (digits only: no sign, no space), at most MAX_COUNT.
 * Returns the first character after it, or NULL when there are no digits or it is too large.
 */
static const char *parse_count(const char *text, uint32_t *out) {
    char *end;
    unsigned long n;

    if (*text < '0' || *text > '9')
        return NULL;
    errno = 0;
    n = strtoul(text, &end, 10);
    if (errno || n > MAX_COUNT)
        return NULL;
    *out = (uint32_t)n;
    return end;
}

/* Reads variable @p name as a count; 0 when unset; -1 (with the error set) when malformed. */
static int read_number(const char *name, uint32_t *out, int *found) {
    const char *v = getenv(name), *end;

    *found = 0;
    if (!v)
        return 0;
    end = parse_count(v, out);
    if (!end || *end) {
        ses__fail(SES_INVALID_ARGUMENT, "task spec: %s is \"%s\", not a number", name, v);
        return -1;
    }
    *found = 1;
    return 0;
}

/*
 * Slurm's per-node task counts, as in SLURM_TASKS_PER_NODE: entries separated by commas, each a
 * count of tasks, optionally followed by "(xR)" for R nodes in a row with that count ("2(x3),1"
 * is nodes 0-2 with 2 tasks and node 3 with 1). Gives the count of node @p node, or, when
 * @p have_node is 0, the count every node has (an error when they differ). -1 with the error
 * set when the list is malformed or does not reach the node.
 */
static int slurm_tasks_on_node(const char *name, const char *list, uint32_t node, int have_node,
                               uint32_t *out) {
    const char *p = list;
    uint64_t first = 0; /* the first node of the current entry */
    uint32_t found = 0, common = 0;
    int have_found = 0, all_same = 1;

    for (;;) {
        uint32_t count, repeat = 1;
        if (!(p = parse_count(p, &count)) || count == 0)
            goto malformed;
        if (*p == '(') {
            if (p[1] != 'x' || !(p = parse_count(p + 2, &repeat)) || repeat == 0 || *p != ')')
                goto malformed;
            p++;
        }
        if (have_node && !have_found && node < first + repeat) {
            found = count;
            have_found = 1;
        }
        if (first == 0)
            common = count;
        else if (count != common)
            all_same = 0;
        first += repeat; /* at most strlen(list) * 2^31: no overflow */
        if (!*p)
            break;
        if (*p++ != ',')
            goto malformed;
    }
    if (!have_node) {
        if (!all_same) {
            ses__fail(SES_INVALID_ARGUMENT,
                      "task spec: %s is \"%s\", different counts on different nodes, and "
                      "SLURM_NODEID is not set to say which node this is",
                      name, list);
            return -1;
        }
        *out = common;
        return 0;
    }
    if (!have_found) {
        ses__fail(SES_INVALID_ARGUMENT,
                  "task spec: SLURM_NODEID=%u is beyond the %llu nodes of %s=\"%s\"", node,
                  (unsigned long long)first, name, list);
        return -1;
    }
    *out = found;
    return 0;

malformed:
    ses__fail(SES_INVALID_ARGUMENT,
              "task spec: %s is \"%s\", not a list of task counts such as \"2(x3),1\"", name,
              list);
    return -1;
}

/*
 * The number of tasks on this node under Slurm, and where it came from (@p origin). Slurm sets
 * SLURM_NTASKS_PER_NODE only for --ntasks-per-node; SLURM_STEP_TASKS_PER_NODE (srun's step)
 * and SLURM_TASKS_PER_NODE (the allocation) are always there and exact.
 */
static int slurm_local_size(uint32_t size, uint32_t local_rank, uint32_t *out, char *origin,
                            size_t origin_size) {
    static const char *const lists[] = {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"};
    uint32_t node = 0, n = 0;
    int have_node, have;

    for (size_t i = 0; i < 2; i++) {
        const char *list = getenv(lists[i]);
        if (!list)
            continue;
        if (read_number("SLURM_NODEID", &node, &have_node) != 0 ||
            slurm_tasks_on_node(lists[i], list, node, have_node, out) != 0)
            return -1;
        if (have_node)
            snprintf(origin, origin_size, "the local size %u (%s=\"%s\" at SLURM_NODEID=%u)",
                     *out, lists[i], list, node);
        else
            snprintf(origin, origin_size, "the local size %u (%s=\"%s\")", *out, lists[i], list);
        return 0;
    }
    if (read_number("SLURM_NTASKS_PER_NODE", out, &have) != 0)
        return -1;
    if (have) {
        snprintf(origin, origin_size, "SLURM_NTASKS_PER_NODE=%u", *out);
        return 0;
    }
    if (read_number("SLURM_NNODES", &n, &have) != 0)
        return -1;
    if (have) {
        if (n == 0) {
            ses__fail(SES_INVALID_ARGUMENT, "task spec: SLURM_NNODES is \"0\", not a count of "
                      "nodes");
            return -1;
        }
        /* The tasks spread evenly: exact on one node, an estimate on several. */
        *out = size / n + (size % n != 0);
        if (*out <= local_rank)
            *out = local_rank + 1;
        snprintf(origin, origin_size, "the local size %u (SLURM_NTASKS=%u over SLURM_NNODES=%u)",
                 *out, size, n);
        return 0;
    }
    *out = 1;
    snprintf(origin, origin_size,
             "the local size 1 (none of SLURM_STEP_TASKS_PER_NODE, SLURM_TASKS_PER_NODE, "
             "SLURM_NTASKS_PER_NODE, SLURM_NNODES is set)");
    return 0;
}

/* One launcher's variables: rank, size, local rank, local size (NULL: computed). */
typedef struct launcher {
    const char *name;
    const char *vars[4];
} launcher_t;

static const launcher_t launchers[] = {
    {"open-mpi",
     {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
      "OMPI_COMM_WORLD_LOCAL_SIZE"}},
    {"pmi", {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"}},
    {"slurm", {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", NULL}},
};

enum { RANK, SIZE, LOCAL_RANK, LOCAL_SIZE, SHARD_INDEX, SHARD_COUNT, N_VALUES };

/* Where each value of a spec read from the environment came from, for messages. */
typedef struct origins {
    char text[N_VALUES][384];
} origins_t;

/* SES_INVALID_ARGUMENT when value @p a is not below value @p b, naming where both came from. */
static ses_status_t check_below(const origins_t *o, uint32_t a_value, int a, uint32_t b_value,
                                int b) {
    if (a_value < b_value)
        return SES_OK;
    return ses__fail(SES_INVALID_ARGUMENT, "task spec: %s is not below %s", o->text[a],
                     o->text[b]);
}

/*
 * SESSION_SHARD_INDEX, SESSION_SHARD_COUNT and SESSION_EVALUATOR on a spec whose rank, size and
 * local values are set (@p o says where they came from), then the checks, naming variables.
 */
static ses_status_t apply_env(ses_task_spec_t *spec, origins_t *o) {
    const char *evaluator = getenv("SESSION_EVALUATOR");
    int found_index, found_count, had_evaluator = spec->has_evaluator;
    ses_status_t st;

    spec->shard_index = spec->rank;
    spec->shard_count = spec->size;
    spec->has_evaluator = spec->is_evaluator = 0;
    spec->is_chief = spec->rank == 0;
    if ((st = check_below(o, spec->rank, RANK, spec->size, SIZE)) != SES_OK ||
        (st = check_below(o, spec->local_rank, LOCAL_RANK, spec->local_size, LOCAL_SIZE)) !=
            SES_OK)
        return st;
    snprintf(o->text[SHARD_INDEX], sizeof o->text[SHARD_INDEX], "the shard index %u (%.320s)",
             spec->rank, o->text[RANK]);
    snprintf(o->text[SHARD_COUNT], sizeof o->text[SHARD_COUNT], "the shard count %u (%.320s)",
             spec->size, o->text[SIZE]);
    if (evaluator && strcmp(evaluator, "0") != 0 && strcmp(evaluator, "1") != 0)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "task spec: SESSION_EVALUATOR is \"%s\", not 0 or 1", evaluator);
    /* An evaluator the program chose stays; the variable can add one, not take it away. */
    if (had_evaluator || (evaluator && strcmp(evaluator, "1") == 0)) {
        if (spec->size < 2 && !had_evaluator)
            return ses__fail(SES_INVALID_ARGUMENT,
                             "task spec: SESSION_EVALUATOR=1 needs at least 2 tasks (one trains, "
                             "the last evaluates), and %s", o->text[SIZE]);
        if ((st = ses_task_spec_use_last_as_evaluator(spec)) != SES_OK)
            return st;
        snprintf(o->text[SHARD_INDEX], sizeof o->text[SHARD_INDEX],
                 "the shard index %u (%.320s%s)", spec->shard_index, o->text[RANK],
                 spec->is_evaluator ? ", the evaluator's" : "");
        snprintf(o->text[SHARD_COUNT], sizeof o->text[SHARD_COUNT],
                 "the shard count %u (%.320s, %s)", spec->shard_count, o->text[SIZE],
                 spec->is_evaluator ? "the evaluator's" : "less SESSION_EVALUATOR's task");
    }
    if (read_number("SESSION_SHARD_INDEX", &spec->shard_index, &found_index) != 0 ||
        read_number("SESSION_SHARD_COUNT", &spec->shard_count, &found_count) != 0)
        return SES_INVALID_ARGUMENT;
    if (found_index)
        snprintf(o->text[SHARD_INDEX], sizeof o->text[SHARD_INDEX], "SESSION_SHARD_INDEX=%u",
                 spec->shard_index);
    if (found_count)
        snprintf(o->text[SHARD_COUNT], sizeof o->text[SHARD_COUNT], "SESSION_SHARD_COUNT=%u",
                 spec->shard_count);
    if ((st = check_below(o, spec->shard_index, SHARD_INDEX, spec->shard_count, SHARD_COUNT)) !=
        SES_OK)
        return st;
    return ses_task_spec_check(spec);
}

ses_status_t ses_task_spec_from_env(ses_task_spec_t *spec) {
    origins_t o;

    if (!spec)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_task_spec_from_env: spec is NULL");
    ses_task_spec_init(spec);
    spec->launcher = "none";
    snprintf(o.text[RANK], sizeof o.text[RANK], "the rank 0 (no launcher)");
    snprintf(o.text[SIZE], sizeof o.text[SIZE], "the size 1 (no launcher)");
    snprintf(o.text[LOCAL_RANK], sizeof o.text[LOCAL_RANK], "the local rank 0 (no launcher)");
    snprintf(o.text[LOCAL_SIZE], sizeof o.text[LOCAL_SIZE], "the local size 1 (no launcher)");
    for (size_t l = 0; l < sizeof launchers / sizeof launchers[0]; l++) {
        const launcher_t *L = &launchers[l];
        uint32_t v[4] = {0, 1, 0, 1};
        int have[4] = {0, 0, 0, 0};
        if (!getenv(L->vars[0]))
            continue;
        for (int i = 0; i < 4; i++)
            if (L->vars[i] && read_number(L->vars[i], &v[i], &have[i]) != 0)
                return SES_INVALID_ARGUMENT;
        if (!have[1])
            return ses__fail(SES_INVALID_ARGUMENT, "task spec: %s is set but %s is not",
                             L->vars[0], L->vars[1]);
        for (int i = 0; i < 3; i++)
            if (have[i])
                snprintf(o.text[i], sizeof o.text[i], "%s=%u", L->vars[i], v[i]);
        if (!have[2])
            snprintf(o.text[LOCAL_RANK], sizeof o.text[LOCAL_RANK],
                     "the local rank 0 (%s is not set)", L->vars[2]);
        if (!L->vars[3]) {
            if (slurm_local_size(v[1], v[2], &v[3], o.text[LOCAL_SIZE],
                                 sizeof o.text[LOCAL_SIZE]) != 0)
                return SES_INVALID_ARGUMENT;
        } else if (have[3]) {
            snprintf(o.text[LOCAL_SIZE], sizeof o.text[LOCAL_SIZE], "%s=%u", L->vars[3], v[3]);
        } else {
            /* Without a local size, every task is alone on its machine. */
            snprintf(o.text[LOCAL_SIZE], sizeof o.text[LOCAL_SIZE],
                     "the local size 1 (%s is not set)", L->vars[3]);
        }
        spec->rank = v[0];
        spec->size = v[1];
        spec->local_rank = v[2];
        spec->local_size = v[3];
        spec->launcher = L->name;
        break;
    }
    return apply_env(spec, &o);
}

ses_status_t ses_task_spec_apply_env(ses_task_spec_t *spec) {
    origins_t o;

    if (!spec || spec->struct_size < sizeof *spec)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_task_spec_apply_env: NULL or not initialized "
                         "(ses_task_spec_init)");
    snprintf(o.text[RANK], sizeof o.text[RANK], "the rank %u (%s)", spec->rank, spec->launcher);
    snprintf(o.text[SIZE], sizeof o.text[SIZE], "the size %u (%s)", spec->size, spec->launcher);
    snprintf(o.text[LOCAL_RANK], sizeof o.text[LOCAL_RANK], "the local rank %u (%s)",
             spec->local_rank, spec->launcher);
    snprintf(o.text[LOCAL_SIZE], sizeof o.text[LOCAL_SIZE], "the local size %u (%s)",
             spec->local_size, spec->launcher);
    return apply_env(spec, &o);
}

ses_status_t ses_task_default_device(const ses_task_spec_t *spec, ses_registry_t *registry,
                                     char *buffer, size_t size) {
    const ses_device_t *device = NULL;
    char gpu[32];

    if (!spec || !buffer || !size)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_task_default_device: NULL argument");
    snprintf(gpu, sizeof gpu, "gpu:%u", spec->local_rank);
    if (registry && ses_registry_find_device(registry, gpu, &device) == SES_OK && device) {
        if ((size_t)snprintf(buffer, size, "%s", gpu) >= size)
            return ses__fail(SES_INVALID_ARGUMENT, "ses_task_default_device: buffer too small");
        return SES_OK;
    }
    if (size < 4)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_task_default_device: buffer too small");
    memcpy(buffer, "cpu", 4);
    return SES_OK;
}

void ses_task_shard_range(const ses_task_spec_t *spec, size_t n, size_t *begin, size_t *end) {
    size_t count = spec && spec->shard_count ? spec->shard_count : 1;
    size_t index = spec && spec->shard_index < count ? spec->shard_index : 0;
    size_t base = n / count, extra = n % count;

    /* The first n % count shards get one more example. */
    *begin = index * base + (index < extra ? index : extra);
    *end = *begin + base + (index < extra ? 1 : 0);
}
