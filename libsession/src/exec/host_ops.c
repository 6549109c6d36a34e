/*
 * Ops the runtime runs itself rather than a driver: Save and Restore, checkpoints as ops, and
 * the collectives (AllReduce, RankWeight). They
 * run where the values live: inputs on a device are read back through the device's driver, and
 * Restore writes the variables' own tensors (which live in the session's scope, on the host).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <session/checkpoint.h>

#include "../compile/plan.h"
#include "../error.h"
#include "../tensor/tensor_internal.h"

/* The name an input is saved under: its edge, "name" or "name:index". */
static void edge_name(ses_edge_t e, char *buffer, size_t size) {
    ses__edge_format(e, buffer, size);
}

static ses_status_t run_save(ses_session_t *s, ses__compiled_t *c, const ses__step_t *step,
                             const char *path) {
    const ses_node_t *n = step->node;
    ses_tensor_t **tensors = ses__calloc(step->n_args + 1, sizeof *tensors);
    char **names = ses__calloc(step->n_args + 1, sizeof *names);
    static const char *const keys[] = {"format"};
    static const char *const values[] = {"libsession-checkpoint-1"};
    ses_status_t st = SES_OK;

    if (!tensors || !names) {
        st = ses__fail(SES_OUT_OF_MEMORY, "Save \"%s\": out of memory", n->name);
        goto done;
    }
    for (size_t i = 0; i < step->n_args && st == SES_OK; i++) {
        const ses__slot_t *slot = &c->slots[step->args[i]];
        names[i] = ses__malloc(300);
        if (!names[i]) {
            st = ses__fail(SES_OUT_OF_MEMORY, "Save \"%s\": out of memory", n->name);
            break;
        }
        edge_name(n->inputs[i], names[i], 300);
        if (slot->tensor) {
            tensors[i] = ses_tensor_retain(slot->tensor);
            continue;
        }
        st = ses_tensor_create(slot->type.dtype, slot->type.rank, slot->type.dims, &tensors[i]);
        if (st == SES_OK)
            st = ses__read_slot(s, c, slot, tensors[i]->data);
    }
    if (st == SES_OK)
        st = ses_safetensors_write(path, (const char *const *)names, tensors, step->n_args, keys,
                                   values, 1);
    if (st != SES_OK && st != SES_OUT_OF_MEMORY) {
        char message[2048];
        snprintf(message, sizeof message, "%s", ses_last_error());
        st = ses__fail(st, "Save \"%s\": %s", n->name, message);
    }
done:
    for (size_t i = 0; tensors && i < step->n_args; i++)
        ses_tensor_release(tensors[i]);
    for (size_t i = 0; names && i < step->n_args; i++)
        free(names[i]);
    free(tensors);
    free(names);
    return st;
}

/* Checks every input against the file, listing every mismatch, then writes them all. */
static ses_status_t run_restore(ses__compiled_t *c, const ses__step_t *step, const char *path) {
    const ses_node_t *n = step->node;
    ses_safetensors_t file;
    char problems[4096] = "";
    size_t used = 0, *found = NULL;
    ses_status_t st;

    st = ses_safetensors_read(path, &file);
    if (st != SES_OK) {
        char message[2048];
        snprintf(message, sizeof message, "%s", ses_last_error());
        return ses__fail(st, "Restore \"%s\": %s", n->name, message);
    }
    found = ses__calloc(step->n_args + 1, sizeof *found);
    if (!found) {
        ses_safetensors_free(&file);
        return ses__fail(SES_OUT_OF_MEMORY, "Restore \"%s\": out of memory", n->name);
    }
    for (size_t i = 0; i < step->n_args; i++) {
        const ses__slot_t *slot = &c->slots[step->args[i]];
        const char *name = n->inputs[i].node->name;
        size_t k = 0;
        ses_tensor_t *t;
        int same;

        while (k < file.n && strcmp(file.names[k], name) != 0)
            k++;
        found[i] = k;
        if (k == file.n) {
            if (used < sizeof problems)
                used += (size_t)snprintf(problems + used, sizeof problems - used,
                                         "%s\"%s\" is not in the file", used ? "; " : "", name);
            continue;
        }
        t = file.tensors[k];
        same = t->dtype == slot->type.dtype && t->rank == slot->type.rank &&
               memcmp(t->dims, slot->type.dims, t->rank * sizeof *t->dims) == 0;
        if (!same && used < sizeof problems) {
            char want[160], got[160];
            ses__type_t tt;
            memset(&tt, 0, sizeof tt);
            tt.dtype = t->dtype;
            tt.rank = (uint32_t)t->rank;
            memcpy(tt.dims, t->dims, t->rank * sizeof *t->dims);
            used += (size_t)snprintf(problems + used, sizeof problems - used,
                                     "%s\"%s\" is %s in the file, the variable is %s",
                                     used ? "; " : "", name, ses__type_format(&tt, got, sizeof got),
                                     ses__type_format(&slot->type, want, sizeof want));
        }
    }
    if (used) {
        st = ses__fail(SES_INVALID_ARGUMENT, "Restore \"%s\": %s does not fit, nothing restored: %s",
                       n->name, path, problems);
    } else {
        for (size_t i = 0; i < step->n_args; i++) {
            const ses__slot_t *slot = &c->slots[step->args[i]];
            memcpy(slot->tensor->data, file.tensors[found[i]]->data, slot->bytes);
        }
    }
    free(found);
    ses_safetensors_free(&file);
    return st;
}

/*
 * AllReduce. With several ranks, a tensor of at least ALLREDUCE_DIRECT_BYTES in host memory is
 * summed by the communicator where it is: in place when the compiler gave its output the input's
 * slot (a gradient nothing else reads: compile.c's reduce_in_place), else straight from input to
 * output (allreduce_sum_into). No copy either way, and the mean is taken while the result is
 * still in cache. The other inputs of each dtype are fused into one buffer kept with the step,
 * reduced by one collective, and written out from it. A session without a communicator is a job
 * of one process.
 */
#define ALLREDUCE_DIRECT_BYTES (64 * 1024)

/* The mean over @p ranks of @p count sums at @p data. Dividing by a power of two is multiplying
 * by its reciprocal, exactly, and the multiply vectorizes; other counts divide. */
static void divide_by_ranks(void *data, size_t count, ses_dtype_t dtype, uint32_t ranks) {
    const int exact = (ranks & (ranks - 1)) == 0;
#define DIVIDE(T)                                  \
    do {                                           \
        T *v = data;                               \
        const T n = (T)ranks, r = (T)1 / n;        \
        if (exact)                                 \
            for (size_t k = 0; k < count; k++)     \
                v[k] *= r;                         \
        else                                       \
            for (size_t k = 0; k < count; k++)     \
                v[k] /= n;                         \
    } while (0)

    if (dtype == SES_F32)
        DIVIDE(float);
    else
        DIVIDE(double);
#undef DIVIDE
}

/* The step's buffer, grown to @p bytes; no allocation (nor page faults) on later runs. */
static unsigned char *scratch_of(ses__step_t *step, size_t bytes) {
    if (step->scratch_bytes < bytes) {
        void *grown = ses__realloc(step->scratch, bytes);
        if (!grown) {
            ses__fail(SES_OUT_OF_MEMORY, "AllReduce \"%s\": out of memory for %zu bytes",
                      step->node->name, bytes);
            return NULL;
        }
        step->scratch = grown;
        step->scratch_bytes = bytes;
    }
    return step->scratch;
}

/* Whether input @p in goes to output @p out straight through the communicator. */
static int reduced_directly(const ses_session_t *s, const ses_communicator_t *comm,
                            const ses__slot_t *in, const ses__slot_t *out) {
    const ses__device_ctx_t *a = &s->devices[in->device], *b = &s->devices[out->device];

    return comm->allreduce_sum && comm->size > 1 && in->bytes >= ALLREDUCE_DIRECT_BYTES &&
           (in == out || comm->allreduce_sum_into) &&
           (in->tensor || (a->host_visible && a->api->map)) &&
           (out->tensor || (b->host_visible && b->api->map));
}

/* Sums @p count values of one dtype over the ranks, @p send into @p recv (NULL: in place). */
static ses_status_t sum(const ses__step_t *step, const ses_communicator_t *comm, const void *send,
                        void *recv, size_t count, ses_dtype_t dtype, int mean) {
    ses_status_t st;

    if (!comm->allreduce_sum || comm->size < 2)
        return SES_OK;
    st = send ? comm->allreduce_sum_into(comm->user, send, recv, count, dtype)
              : comm->allreduce_sum(comm->user, recv, count, dtype);
    if (st != SES_OK) {
        char message[1024];
        snprintf(message, sizeof message, "%s", ses_last_error());
        return ses__fail(st, "AllReduce \"%s\": %s", step->node->name, message);
    }
    if (mean)
        divide_by_ranks(recv, count, dtype, comm->size);
    return SES_OK;
}

/* Whether input @p in is summed in place as part of its dtype's bucket (compile.c groups them,
 * memory.c places them back to back in the CPU device's arena). */
static int in_bucket(const ses_session_t *s, const ses__slot_t *in, const ses__slot_t *out) {
    const ses__device_ctx_t *d = &s->devices[in->device];

    return in == out && in->kind == SES__SLOT_ARENA && in->group != SIZE_MAX && d->host_visible &&
           d->api->map;
}

/* Summed some other way than by the buckets' or the fused buffer's collective. */
static int reduced_apart(const ses_session_t *s, const ses_communicator_t *comm,
                         const ses__slot_t *in, const ses__slot_t *out) {
    return in_bucket(s, in, out) || reduced_directly(s, comm, in, out);
}

/* One input reduced into its output: straight from host memory, or through the step's buffer. */
static ses_status_t reduce_one(ses_session_t *s, ses__compiled_t *c, ses__step_t *step,
                               const ses_communicator_t *comm, const ses__slot_t *in,
                               const ses__slot_t *out, int mean) {
    const size_t count = in->bytes / ses_dtype_size(in->type.dtype);
    const void *src = in == out ? NULL : ses__map_slot(s, in, SES_DRV_MAP_READ);
    void *dst = ses__map_slot(s, out, SES_DRV_MAP_WRITE | (in == out ? SES_DRV_MAP_READ : 0));
    unsigned char *buffer;
    ses_status_t st;

    if (in == out && dst) {
        st = sum(step, comm, NULL, dst, count, in->type.dtype, mean);
        ses__unmap_slot(s, out, dst);
        return st;
    }
    if (src && dst) {
        st = sum(step, comm, src, dst, count, in->type.dtype, mean);
        ses__unmap_slot(s, in, (void *)src);
        ses__unmap_slot(s, out, dst);
        return st;
    }
    ses__unmap_slot(s, in, (void *)src);
    ses__unmap_slot(s, out, dst);
    if (!(buffer = scratch_of(step, in->bytes)))
        return SES_OUT_OF_MEMORY;
    if ((st = ses__read_slot(s, c, in, buffer)) != SES_OK ||
        (st = sum(step, comm, NULL, buffer, count, in->type.dtype, mean)) != SES_OK)
        return st;
    return ses__write_slot(s, c, out, buffer);
}

/*
 * The bucket of @p dtype: its values lie back to back in the CPU device's arena, so one
 * collective sums them in place, the few padding bytes between them zeroed first. Where the
 * arena cannot be mapped, each is reduced alone.
 */
static ses_status_t reduce_bucket(ses_session_t *s, ses__compiled_t *c, ses__step_t *step,
                                  const ses_communicator_t *comm, ses_dtype_t dtype, int mean) {
    const ses_node_t *n = step->node;
    const ses__slot_t *first = NULL;
    uint64_t lo = UINT64_MAX, hi = 0;
    ses__slot_t range;
    unsigned char *p;
    ses_status_t st = SES_OK;

    for (size_t i = 0; i < n->n_inputs; i++) {
        const ses__slot_t *in = &c->slots[step->args[i]];
        if (in->type.dtype != dtype || !in_bucket(s, in, &c->slots[step->args[n->n_inputs + i]]))
            continue;
        first = first ? first : in;
        lo = in->offset < lo ? in->offset : lo;
        hi = in->offset + in->bytes > hi ? in->offset + in->bytes : hi;
    }
    if (!first)
        return SES_OK;
    range = *first;
    range.offset = lo;
    range.bytes = (size_t)(hi - lo);
    if (!(p = ses__map_slot(s, &range, SES_DRV_MAP_READ | SES_DRV_MAP_WRITE))) {
        for (size_t i = 0; i < n->n_inputs && st == SES_OK; i++) {
            const ses__slot_t *in = &c->slots[step->args[i]];
            if (in->type.dtype == dtype && in_bucket(s, in, &c->slots[step->args[n->n_inputs + i]]))
                st = reduce_one(s, c, step, comm, in, in, mean);
        }
        return st;
    }
    for (size_t i = 0; i < n->n_inputs; i++) {
        const ses__slot_t *in = &c->slots[step->args[i]];
        uint64_t end = in->offset + in->bytes, next;
        if (in->type.dtype != dtype || !in_bucket(s, in, &c->slots[step->args[n->n_inputs + i]]))
            continue;
        next = (end + SES__ARENA_ALIGNMENT - 1) / SES__ARENA_ALIGNMENT * SES__ARENA_ALIGNMENT;
        if (end < hi)
            memset(p + (end - lo), 0, (size_t)((next < hi ? next : hi) - end));
    }
    st = sum(step, comm, NULL, p, range.bytes / ses_dtype_size(dtype), dtype, mean);
    ses__unmap_slot(s, &range, p);
    return st;
}

/* A job of one process: each input is its output (nothing to do in place), else copied once. */
static ses_status_t copy_alone(ses_session_t *s, ses__compiled_t *c, ses__step_t *step) {
    const ses_node_t *n = step->node;
    ses_status_t st = SES_OK;

    for (size_t i = 0; i < n->n_inputs && st == SES_OK; i++) {
        const ses__slot_t *in = &c->slots[step->args[i]];
        const ses__slot_t *out = &c->slots[step->args[n->n_inputs + i]];
        void *dst;
        unsigned char *buffer;
        if (in == out)
            continue;
        if ((dst = ses__map_slot(s, out, SES_DRV_MAP_WRITE)) != NULL) {
            st = ses__read_slot(s, c, in, dst);
            ses__unmap_slot(s, out, dst);
        } else if ((buffer = scratch_of(step, in->bytes)) != NULL) {
            if ((st = ses__read_slot(s, c, in, buffer)) == SES_OK)
                st = ses__write_slot(s, c, out, buffer);
        } else {
            st = SES_OUT_OF_MEMORY;
        }
    }
    return st;
}

static ses_status_t run_allreduce(ses_session_t *s, ses__compiled_t *c, ses__step_t *step) {
    const ses_node_t *n = step->node;
    const char *reduction = "mean";
    ses_communicator_t comm;
    ses_status_t st = SES_OK;
    int mean;

    pthread_mutex_lock(&s->lock);
    comm = s->comm;
    pthread_mutex_unlock(&s->lock);
    ses__attrs_get_string(&n->attrs, "reduction", &reduction);
    mean = !strcmp(reduction, "mean");
    if (!comm.allreduce_sum || comm.size < 2) /* alone, the sum and the mean are the value */
        return copy_alone(s, c, step);
    for (int pass = 0; pass < 2 && st == SES_OK; pass++)
        st = reduce_bucket(s, c, step, &comm, pass ? SES_F64 : SES_F32, mean);
    for (size_t i = 0; i < n->n_inputs && st == SES_OK; i++) {
        const ses__slot_t *in = &c->slots[step->args[i]];
        const ses__slot_t *out = &c->slots[step->args[n->n_inputs + i]];
        if (!in_bucket(s, in, out) && reduced_directly(s, &comm, in, out))
            st = reduce_one(s, c, step, &comm, in, out, mean);
    }
    for (int pass = 0; pass < 2 && st == SES_OK; pass++) {
        ses_dtype_t dtype = pass ? SES_F64 : SES_F32;
        size_t bytes = 0, at = 0;
        unsigned char *buffer;

        for (size_t i = 0; i < n->n_inputs; i++) {
            const ses__slot_t *in = &c->slots[step->args[i]];
            if (in->type.dtype == dtype &&
                !reduced_apart(s, &comm, in, &c->slots[step->args[n->n_inputs + i]]))
                bytes += in->bytes;
        }
        if (!bytes)
            continue;
        if (!(buffer = scratch_of(step, bytes)))
            return SES_OUT_OF_MEMORY;
        for (size_t i = 0; i < n->n_inputs && st == SES_OK; i++) {
            const ses__slot_t *in = &c->slots[step->args[i]];
            if (in->type.dtype != dtype ||
                reduced_apart(s, &comm, in, &c->slots[step->args[n->n_inputs + i]]))
                continue;
            st = ses__read_slot(s, c, in, buffer + at);
            at += in->bytes;
        }
        if (st == SES_OK)
            st = sum(step, &comm, NULL, buffer, bytes / ses_dtype_size(dtype), dtype, mean);
        at = 0;
        for (size_t i = 0; i < n->n_inputs && st == SES_OK; i++) {
            const ses__slot_t *in = &c->slots[step->args[i]];
            const ses__slot_t *out = &c->slots[step->args[n->n_inputs + i]];
            if (in->type.dtype != dtype || reduced_apart(s, &comm, in, out))
                continue;
            st = ses__write_slot(s, c, out, buffer + at);
            at += out->bytes;
        }
    }
    return st;
}

/* RankWeight: 1/N everywhere, N the ranks of the session's job (1 without a communicator). */
static ses_status_t run_rank_weight(ses_session_t *s, ses__compiled_t *c, ses__step_t *step) {
    const ses__slot_t *out = &c->slots[step->args[1]];
    const size_t count = out->bytes / ses_dtype_size(out->type.dtype);
    unsigned char *buffer = scratch_of(step, out->bytes);
    uint32_t ranks;

    if (!buffer)
        return SES_OUT_OF_MEMORY;
    pthread_mutex_lock(&s->lock);
    ranks = s->comm.allreduce_sum && s->comm.size ? s->comm.size : 1;
    pthread_mutex_unlock(&s->lock);
    for (size_t k = 0; k < count; k++) {
        if (out->type.dtype == SES_F32)
            ((float *)(void *)buffer)[k] = 1.0f / (float)ranks;
        else
            ((double *)(void *)buffer)[k] = 1.0 / (double)ranks;
    }
    return ses__write_slot(s, c, out, buffer);
}

ses_status_t ses__host_op_run(ses_session_t *s, ses__compiled_t *c, ses__step_t *step) {
    const char *path = NULL;

    /* Ops that are host steps only because they read or make strings. */
    if (!step->node->schema || !step->node->schema->host_op)
        return ses__string_op_run(s, c, step);

    if (!strcmp(step->node->op, "AllReduce"))
        return run_allreduce(s, c, step);
    if (!strcmp(step->node->op, "RankWeight"))
        return run_rank_weight(s, c, step);

    if (ses__attrs_get_string(&step->node->attrs, "path", &path) != 1 || !path)
        return ses__fail(SES_INVALID_ARGUMENT, "%s \"%s\": no path", step->node->op,
                         step->node->name);
    if (!strcmp(step->node->op, "Save"))
        return run_save(s, c, step, path);
    if (!strcmp(step->node->op, "Restore"))
        return run_restore(c, step, path);
    return ses__fail(SES_INTERNAL, "%s \"%s\": the runtime does not run this op",
                     step->node->op, step->node->name);
}
