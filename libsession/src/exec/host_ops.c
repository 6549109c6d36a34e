/*
 * Ops the runtime runs itself rather than a driver: Save and Restore, checkpoints as ops. They
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
            st = ses__read_slot(s, slot, tensors[i]->data);
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
 * AllReduce: the inputs of each dtype fused into one host buffer, one collective per dtype, then
 * the outputs written from it. A session without a communicator is a job of one process.
 */
static ses_status_t run_allreduce(ses_session_t *s, ses__compiled_t *c, ses__step_t *step) {
    const ses_node_t *n = step->node;
    const char *reduction = "mean";
    ses_communicator_t comm;
    ses_status_t st = SES_OK;

    pthread_mutex_lock(&s->lock);
    comm = s->comm;
    pthread_mutex_unlock(&s->lock);
    ses__attrs_get_string(&n->attrs, "reduction", &reduction);
    for (int pass = 0; pass < 2 && st == SES_OK; pass++) {
        ses_dtype_t dtype = pass ? SES_F64 : SES_F32;
        size_t bytes = 0, at = 0, count;
        unsigned char *buffer;

        for (size_t i = 0; i < n->n_inputs; i++)
            if (c->slots[step->args[i]].type.dtype == dtype)
                bytes += c->slots[step->args[i]].bytes;
        if (!bytes)
            continue;
        /* One buffer for both dtypes, kept with the step: no allocation (nor page faults on
         * fresh pages) per run. */
        if (step->scratch_bytes < bytes) {
            void *grown = ses__realloc(step->scratch, bytes);
            if (!grown)
                return ses__fail(SES_OUT_OF_MEMORY,
                                 "AllReduce \"%s\": out of memory for %zu bytes", n->name, bytes);
            step->scratch = grown;
            step->scratch_bytes = bytes;
        }
        buffer = step->scratch;
        for (size_t i = 0; i < n->n_inputs && st == SES_OK; i++) {
            const ses__slot_t *slot = &c->slots[step->args[i]];
            if (slot->type.dtype != dtype)
                continue;
            if (slot->tensor)
                memcpy(buffer + at, slot->tensor->data, slot->bytes);
            else
                st = ses__read_slot(s, slot, buffer + at);
            at += slot->bytes;
        }
        count = bytes / ses_dtype_size(dtype);
        if (st == SES_OK && comm.allreduce_sum && comm.size > 1) {
            st = comm.allreduce_sum(comm.user, buffer, count, dtype);
            if (st != SES_OK) {
                char message[1024];
                snprintf(message, sizeof message, "%s", ses_last_error());
                st = ses__fail(st, "AllReduce \"%s\": %s", n->name, message);
            } else if (!strcmp(reduction, "mean")) {
                for (size_t k = 0; k < count; k++) {
                    if (dtype == SES_F32)
                        ((float *)(void *)buffer)[k] /= (float)comm.size;
                    else
                        ((double *)(void *)buffer)[k] /= (double)comm.size;
                }
            }
        }
        at = 0;
        for (size_t i = 0; i < n->n_inputs && st == SES_OK; i++) {
            const ses__slot_t *out = &c->slots[step->args[n->n_inputs + i]];
            if (c->slots[step->args[i]].type.dtype != dtype)
                continue;
            st = ses__write_slot(s, out, buffer + at);
            at += out->bytes;
        }
    }
    return st;
}

ses_status_t ses__host_op_run(ses_session_t *s, ses__compiled_t *c, ses__step_t *step) {
    const char *path = NULL;

    if (!strcmp(step->node->op, "AllReduce"))
        return run_allreduce(s, c, step);

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
