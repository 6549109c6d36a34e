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
    return SES_OK;
}

/* Reads variable @p name as a count; 0 when unset; -1 (with the error set) when malformed. */
static int read_number(const char *name, uint32_t *out, int *found) {
    const char *v = getenv(name);
    char *end;
    unsigned long n;

    *found = 0;
    if (!v)
        return 0;
    errno = 0;
    n = strtoul(v, &end, 10);
    if (!*v || *end || errno || n > 0x7fffffff || v[0] == '-') {
        ses__fail(SES_INVALID_ARGUMENT, "task spec: %s is \"%s\", not a number", name, v);
        return -1;
    }
    *out = (uint32_t)n;
    *found = 1;
    return 0;
}

/* One launcher's variables: rank, size, local rank, local size. */
typedef struct launcher {
    const char *name;
    const char *vars[4];
} launcher_t;

static const launcher_t launchers[] = {
    {"open-mpi",
     {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
      "OMPI_COMM_WORLD_LOCAL_SIZE"}},
    {"pmi", {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"}},
    {"slurm", {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"}},
};

ses_status_t ses_task_spec_from_env(ses_task_spec_t *spec) {
    int found;

    if (!spec)
        return ses__fail(SES_INVALID_ARGUMENT, "ses_task_spec_from_env: spec is NULL");
    ses_task_spec_init(spec);
    spec->launcher = "none";
    for (size_t l = 0; l < sizeof launchers / sizeof launchers[0]; l++) {
        const launcher_t *L = &launchers[l];
        uint32_t v[4] = {0, 1, 0, 1};
        int have[4];
        if (!getenv(L->vars[0]))
            continue;
        for (int i = 0; i < 4; i++)
            if (read_number(L->vars[i], &v[i], &have[i]) != 0)
                return SES_INVALID_ARGUMENT;
        if (!have[1])
            return ses__fail(SES_INVALID_ARGUMENT, "task spec: %s is set but %s is not",
                             L->vars[0], L->vars[1]);
        spec->rank = v[0];
        spec->size = v[1];
        /* Without local variables, every task is alone on its machine. */
        spec->local_rank = have[2] ? v[2] : 0;
        spec->local_size = have[3] ? v[3] : 1;
        spec->launcher = L->name;
        break;
    }
    spec->shard_index = spec->rank;
    spec->shard_count = spec->size;
    if (read_number("SESSION_SHARD_INDEX", &spec->shard_index, &found) != 0 ||
        read_number("SESSION_SHARD_COUNT", &spec->shard_count, &found) != 0)
        return SES_INVALID_ARGUMENT;
    spec->is_chief = spec->rank == 0;
    return ses_task_spec_check(spec);
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
