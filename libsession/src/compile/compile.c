/*
 * Compiling a plan: prune → infer → place → insert copies → plan memory → bind kernels.
 *
 * External values (feeds, constants, variables) are host tensors; their home is the CPU device,
 * which imports host memory without copying. A fed device tensor's home is its device. A
 * consumer on another device than the home gets a copy step.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../log.h"
#include "../scope/scope_internal.h"
#include "../tensor/tensor_internal.h"
#include "plan.h"

typedef struct builder {
    ses_session_t *s;
    ses_plan_t *plan;
    ses__compiled_t *c;
    ses_tensor_t *const *feeds;
    ses_scope_t *scope;
    size_t slot_capacity;
    size_t step_capacity;
    size_t *slot_of; /* (node id * SES__MAX_OUTPUTS + output) → home slot + 1; 0 = none */
    char *summary;
    size_t summary_used;
    size_t summary_capacity;
    int summary_oom; /* a line of the summary was lost: compile fails with SES_OUT_OF_MEMORY */
    size_t *per_device;
    const ses__pruned_t *pruned; /* what the plan runs */
    /* Compiling ahead of any run (ses__compile_declared): the feeds carry types, no values.
     * Inference that must read a fed value sets deferred and stops the compile. */
    int types_only;
    int deferred;
    /* Fusion (fuse.c): the plan's candidates, and how compile_op is being asked to work.
     * probing: stop after placing the node and say where (probe_device), adding nothing;
     * only_device: place the node on that device or fail; trial: a failure of inference or
     * placement sets rejected, so that the chain is compiled unfused instead. */
    ses__fusions_t fusions;
    int probing;
    size_t probe_device;
    size_t only_device;
    int trial;
    int rejected;
    /* Layout (layout.c): on in a session whose one device is the CPU. The reorder nodes take
     * ids from next_id on, below id_limit (slot_of's size). */
    int layout;
    int fold; /* constant folding (fold.c): the session's option */
    /* needed[id] (graph nodes only): inference needs the value of an output of node id, or of
     * a node computed from it, so it is folded over fed values too (mark_needed). */
    unsigned char *needed;
    size_t n_needed;
    const ses_node_t *variant; /* the variant compile_variant is compiling, or NULL */
    size_t next_id;
    size_t id_limit;
    size_t layout_capacity;
} builder_t;

/* ---- small helpers ---------------------------------------------------------------------- */

/* Whether inference needs the value @p node computes (directly or through its consumers). */
static int is_needed(const builder_t *b, const ses_node_t *node) {
    return node->id < b->n_needed && b->needed[node->id];
}

static const char *device_name(const ses_session_t *s, size_t d) {
    return ses_device_name(s->devices[d].device);
}

static void type_of_tensor(const ses_tensor_t *t, ses__type_t *out) {
    memset(out, 0, sizeof *out);
    out->dtype = t->dtype;
    out->rank = t->rank;
    for (uint32_t i = 0; i < t->rank; i++)
        out->dims[i] = t->dims[i];
}

static int types_equal(const ses__type_t *a, const ses__type_t *b) {
    if (a->dtype != b->dtype || a->rank != b->rank)
        return 0;
    for (uint32_t i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return 0;
    return 1;
}

static size_t type_bytes(const ses__type_t *t) {
    return (size_t)ses__type_count(t) * ses_dtype_size(t->dtype);
}

static void summary_add(builder_t *b, const char *format, ...) __attribute__((format(printf, 2, 3)));

static void summary_add(builder_t *b, const char *format, ...) {
    va_list ap;
    int n;

    if (b->summary_used + 512 > b->summary_capacity) {
        size_t capacity = b->summary_capacity ? b->summary_capacity * 2 : 1024;
        char *text = ses__realloc(b->summary, capacity);
        if (!text) {
            b->summary_oom = 1;
            return;
        }
        b->summary = text;
        b->summary_capacity = capacity;
    }
    va_start(ap, format);
    n = vsnprintf(b->summary + b->summary_used, b->summary_capacity - b->summary_used, format, ap);
    va_end(ap);
    if (n > 0)
        b->summary_used += (size_t)n < b->summary_capacity - b->summary_used
                               ? (size_t)n
                               : b->summary_capacity - b->summary_used - 1;
}

/* ---- slots and steps -------------------------------------------------------------------- */

static ses_status_t new_slot(builder_t *b, ses__slot_kind_t kind, const ses__type_t *type,
                             size_t device, ses_edge_t edge, size_t *out_index) {
    ses__compiled_t *c = b->c;
    ses__slot_t *slot;

    if (c->n_slots == b->slot_capacity) {
        size_t capacity = b->slot_capacity ? b->slot_capacity * 2 : 32;
        ses__slot_t *slots = ses__realloc(c->slots, capacity * sizeof *slots);
        if (!slots)
            return ses__fail(SES_OUT_OF_MEMORY, "compile: out of memory");
        c->slots = slots;
        b->slot_capacity = capacity;
    }
    slot = &c->slots[c->n_slots];
    memset(slot, 0, sizeof *slot);
    slot->kind = kind;
    slot->type = *type;
    /* A string value is its host tensor; no arena holds it, no driver copies it. */
    slot->bytes = type->dtype == SES_STRING ? 0 : type_bytes(type);
    slot->device = device;
    slot->edge = edge;
    slot->source = SIZE_MAX;
    slot->group = SIZE_MAX;
    slot->feed_index = SIZE_MAX;
    slot->first_step = c->n_steps;
    slot->last_step = c->n_steps;
    *out_index = c->n_slots++;
    return SES_OK;
}

static ses_status_t new_step(builder_t *b, ses__step_kind_t kind, size_t device,
                             const ses_node_t *node, size_t n_args, ses__step_t **out_step) {
    ses__compiled_t *c = b->c;
    ses__step_t *step;

    if (c->n_steps == b->step_capacity) {
        size_t capacity = b->step_capacity ? b->step_capacity * 2 : 32;
        ses__step_t *steps = ses__realloc(c->steps, capacity * sizeof *steps);
        if (!steps)
            return ses__fail(SES_OUT_OF_MEMORY, "compile: out of memory");
        c->steps = steps;
        b->step_capacity = capacity;
    }
    step = &c->steps[c->n_steps++];
    memset(step, 0, sizeof *step);
    step->kind = kind;
    step->device = device;
    step->node = node;
    step->n_args = n_args;
    step->args = ses__calloc(n_args + 1, sizeof *step->args);
    step->buffers = ses__calloc(n_args + 1, sizeof *step->buffers);
    step->offsets = ses__calloc(n_args + 1, sizeof *step->offsets);
    if (!step->args || !step->buffers || !step->offsets)
        return ses__fail(SES_OUT_OF_MEMORY, "compile: out of memory");
    *out_step = step;
    return SES_OK;
}

/* The slot holding @p slot_index's value on @p device, adding a copy step when needed. */
static ses_status_t slot_on_device(builder_t *b, size_t slot_index, size_t device,
                                   size_t *out_index) {
    ses__compiled_t *c = b->c;
    ses__type_t type;
    ses_edge_t edge;
    ses__step_t *step;
    size_t copy;
    ses_status_t st;

    if (c->slots[slot_index].device == device) {
        *out_index = slot_index;
        return SES_OK;
    }
    for (size_t i = 0; i < c->n_slots; i++)
        if (c->slots[i].source == slot_index && c->slots[i].device == device) {
            *out_index = i;
            return SES_OK;
        }
    type = c->slots[slot_index].type;
    edge = c->slots[slot_index].edge;
    /* A constant on another device than the host is the session's resident copy there: no
     * copy step, no run moves it again. */
    if (c->slots[slot_index].kind == SES__SLOT_CONSTANT && !c->slots[slot_index].folded &&
        c->slots[slot_index].bytes && device != b->s->n_devices - 1) {
        ses_drv_buffer_t *buffer = NULL;
        st = ses__resident_constant(b->s, edge.node->value, device, &buffer);
        if (st == SES_OK)
            st = new_slot(b, SES__SLOT_RESIDENT, &type, device, edge, &copy);
        if (st != SES_OK)
            return st;
        c->slots[copy].source = slot_index;
        c->slots[copy].resident = buffer;
        *out_index = copy;
        return SES_OK;
    }
    /* A variable on another device than the host: the session's copy there, bound per run. */
    if (c->slots[slot_index].kind == SES__SLOT_VARIABLE && c->slots[slot_index].bytes &&
        device != b->s->n_devices - 1) {
        st = new_slot(b, SES__SLOT_RESIDENT_VARIABLE, &type, device, edge, &copy);
        if (st != SES_OK)
            return st;
        c->slots[copy].source = slot_index;
        *out_index = copy;
        return SES_OK;
    }
    st = new_slot(b, SES__SLOT_ARENA, &type, device, edge, &copy);
    if (st != SES_OK)
        return st;
    c->slots[copy].source = slot_index;
    st = new_step(b, SES__STEP_COPY, device, edge.node, 2, &step);
    if (st != SES_OK)
        return st;
    step->args[0] = slot_index;
    step->args[1] = copy;
    c->slots[copy].first_step = c->n_steps - 1;
    c->slots[slot_index].last_step = c->n_steps - 1;
    *out_index = copy;
    return SES_OK;
}

/* The home slot of an edge, creating it for externals (constants, variables, feeds). */
static ses_status_t home_slot(builder_t *b, ses_edge_t edge, size_t *out_index) {
    ses_plan_t *plan = b->plan;
    size_t key = edge.node->id * SES__MAX_OUTPUTS + edge.index;
    size_t fed = ses__fed_index(plan->fed, plan->n_fed, edge);
    size_t cpu = b->s->n_devices - 1;
    ses__type_t type;
    ses_status_t st;

    if (b->slot_of[key]) {
        *out_index = b->slot_of[key] - 1;
        return SES_OK;
    }
    if (fed != SIZE_MAX) {
        /* A device tensor lives on its device (checked to be this session's in compile_with). */
        type_of_tensor(b->feeds[fed], &type);
        st = new_slot(b, SES__SLOT_FEED, &type,
                      b->feeds[fed]->home ? b->feeds[fed]->home_device : cpu, edge, out_index);
        if (st == SES_OK)
            b->c->slots[*out_index].feed_index = fed;
    } else if (edge.node->kind == SES__NODE_CONSTANT) {
        type_of_tensor(edge.node->value, &type);
        st = new_slot(b, SES__SLOT_CONSTANT, &type, cpu, edge, out_index);
    } else if (edge.node->kind == SES__NODE_VARIABLE) {
        ses_tensor_t *value = NULL;
        if (ses__scope_find_raw(b->scope, edge.node->name, &value) != SES_OK)
            return ses__fail(SES_FAILED_PRECONDITION, "variable \"%s\" is not initialized",
                             edge.node->name);
        type_of_tensor(value, &type);
        ses_tensor_release(value);
        st = new_slot(b, SES__SLOT_VARIABLE, &type, cpu, edge, out_index);
    } else {
        char text[300];
        return ses__fail(SES_INTERNAL, "compile: edge %s is used before it is computed",
                         ses__edge_format(edge, text, sizeof text));
    }
    if (st == SES_OK)
        b->slot_of[key] = *out_index + 1;
    return st;
}

/* ---- op nodes --------------------------------------------------------------------------- */

/* The host tensor of a constant slot: the graph constant's, or the value folding computed. */
static ses_tensor_t *constant_tensor(const ses__slot_t *slot) {
    return slot->folded ? slot->folded : slot->edge.node->value;
}

/*
 * Makes the outputs of @p node, edges of @p out_node, the constants @p values (taken over) that
 * fold.c computed: constant slots of the plan, with no step.
 */
static ses_status_t add_folded(builder_t *b, const ses_node_t *node, const ses_node_t *out_node,
                               ses_tensor_t **values) {
    ses__compiled_t *c = b->c;
    ses_status_t st = SES_OK;

    for (size_t o = 0; o < node->n_outputs; o++) {
        ses__type_t type;
        size_t slot = 0;
        type_of_tensor(values[o], &type);
        if (st == SES_OK)
            st = new_slot(b, SES__SLOT_CONSTANT, &type, b->s->n_devices - 1,
                          (ses_edge_t){(ses_node_t *)out_node, (uint32_t)o}, &slot);
        if (st != SES_OK) {
            ses_tensor_release(values[o]);
            continue;
        }
        c->slots[slot].folded = values[o];
        b->slot_of[out_node->id * SES__MAX_OUTPUTS + o] = slot + 1;
    }
    if (st == SES_OK) {
        c->n_folded++;
        ses__session_log(b->s, SES__LOG_DEBUG, "%s \"%s\" folded: computed at compile time",
                         node->op, node->name);
    }
    return st;
}

/*
 * Shape or Size of any value, known from its type (a blocked value's is its NCHW type): folded
 * without computing anything. *out_done says whether it was.
 */
static ses_status_t fold_shape(builder_t *b, const ses_node_t *node, const ses_node_t *out_node,
                               const size_t *in_slots, int *out_done) {
    const ses__slot_t *slot = &b->c->slots[in_slots[0]];
    ses__type_t in = slot->type;
    ses__infer_ctx_t ctx;
    ses_tensor_t *value = NULL;
    ses_status_t st;

    *out_done = 0;
    if ((!b->fold && !is_needed(b, node)) || b->probing || b->trial || node->n_inputs != 1 ||
        node->n_outputs != 1 || (strcmp(node->op, "Shape") != 0 && strcmp(node->op, "Size") != 0))
        return SES_OK;
    if (slot->blocked) {
        /* [N, C/16, H, W, 16] stands for [N, C, H, W]. */
        in.rank = 4;
        in.dims[1] *= 16;
    }
    /* Inference checks the node as it would for the kernel (attributes, dtypes). */
    memset(&ctx, 0, sizeof ctx);
    ctx.node = node->name;
    ctx.op = node->op;
    ctx.n_inputs = 1;
    ctx.inputs = &in;
    ctx.attrs = &node->attrs;
    ctx.n_outputs = 1;
    st = ses__op_infer(node->schema, &ctx);
    ses__attrs_clear(&ctx.kernel_attrs);
    if (st != SES_OK)
        return st;
    if ((st = ses__fold_shape(node, &in, &value)) == SES_UNIMPLEMENTED)
        return SES_OK;
    if (st != SES_OK)
        return st;
    *out_done = 1;
    return add_folded(b, node, out_node, &value);
}

/*
 * Marks the nodes whose outputs inference needs the values of: those an input of a value_inputs
 * position reads (Range's limit, Reshape's shape), and, going up, every node they are computed
 * from, up to constants, fed edges, variables and Shape or Size (known from a type). Folding
 * computes them at compile time even from fed values (the plan then depends on those values).
 * Walked in reverse plan order, so that every consumer is marked before its producers.
 */
static ses_status_t mark_needed(builder_t *b, const ses__pruned_t *pruned) {
    const ses_plan_t *plan = b->plan;

    b->n_needed = b->s->graph->n_nodes;
    b->needed = ses__calloc(b->n_needed + 1, 1);
    if (!b->needed)
        return ses__fail(SES_OUT_OF_MEMORY, "compile: out of memory");
    for (size_t k = pruned->n_nodes; k-- > 0;) {
        const ses_node_t *n = pruned->nodes[k];
        int whole;
        if (n->kind != SES__NODE_OP || !n->schema)
            continue;
        /* Shape and Size read their input's type only. */
        whole = is_needed(b, n) && strcmp(n->op, "Shape") != 0 && strcmp(n->op, "Size") != 0;
        for (size_t i = 0; i < n->n_inputs; i++) {
            const ses_edge_t e = n->inputs[i];
            if (!whole && !(i < 64 && (n->schema->value_inputs & (UINT64_C(1) << i))))
                continue;
            if (e.node->kind != SES__NODE_OP ||
                ses__fed_index(plan->fed, plan->n_fed, e) != SIZE_MAX)
                continue;
            if (e.node->id < b->n_needed)
                b->needed[e.node->id] = 1;
        }
    }
    return SES_OK;
}

/*
 * Why the value of the computed edge @p e is unknown at compile time, into @p out: walks up from
 * it to what stopped folding (a variable, a random op, a device-fed value, a node too large or
 * without a CPU kernel).
 */
static void why_unknown(const builder_t *b, ses_edge_t e, char *out, size_t size) {
    for (size_t steps = 0; steps <= b->id_limit; steps++) {
        const ses_node_t *n = e.node;
        size_t key = n->id * SES__MAX_OUTPUTS + e.index, next = SIZE_MAX;
        const ses__slot_t *slot = b->slot_of[key] ? &b->c->slots[b->slot_of[key] - 1] : NULL;
        if (slot && slot->kind == SES__SLOT_VARIABLE) {
            snprintf(out, size, "it depends on variable \"%s\"", n->name);
            return;
        }
        if (slot && slot->kind == SES__SLOT_FEED) {
            snprintf(out, size, "it depends on \"%s\", fed a device tensor", n->name);
            return;
        }
        if (n->kind != SES__NODE_OP)
            break;
        if (ses__fold_is_random(n->op)) {
            snprintf(out, size, "it depends on %s \"%s\", whose values are random", n->op, n->name);
            return;
        }
        if (!ses__fold_candidate(n)) {
            snprintf(out, size, "it depends on %s \"%s\", which is not computed at compile time",
                     n->op, n->name);
            return;
        }
        for (size_t i = 0; i < n->n_inputs && next == SIZE_MAX; i++) {
            const ses_edge_t in = n->inputs[i];
            size_t k = in.node->id * SES__MAX_OUTPUTS + in.index;
            const ses__slot_t *s = b->slot_of[k] ? &b->c->slots[b->slot_of[k] - 1] : NULL;
            if (s && s->kind != SES__SLOT_CONSTANT &&
                !(s->kind == SES__SLOT_FEED && !b->feeds[s->feed_index]->home))
                next = i;
        }
        if (next == SIZE_MAX) {
            snprintf(out, size,
                     "it depends on %s \"%s\", which was not computed at compile time (an output "
                     "over %d elements, or no CPU kernel for it)",
                     n->op, n->name, SES__FOLD_MAX_ELEMENTS);
            return;
        }
        e = n->inputs[next];
    }
    snprintf(out, size, "it is computed at run time");
}

/* A fed value that inference reads shapes the plan: keep a copy, so that a run fed another
 * value of the same type recompiles (ses__compiled_matches). */
static ses_status_t remember_value(builder_t *b, size_t slot_index) {
    ses__slot_t *slot = &b->c->slots[slot_index];

    if (slot->value_seen || !slot->bytes)
        return SES_OK;
    slot->value_seen = ses__malloc(slot->bytes);
    if (!slot->value_seen)
        return ses__fail(SES_OUT_OF_MEMORY, "compile: out of memory for %zu bytes", slot->bytes);
    memcpy(slot->value_seen, b->feeds[slot->feed_index]->data, slot->bytes);
    return SES_OK;
}

static int32_t node_attr(const ses_drv_node_t *node, const char *name, uint32_t type,
                         uint64_t *inout_count, void *values) {
    const ses__attr_t *a;

    if (!node || !name || !inout_count)
        return SES_DRV_INVALID_ARGUMENT;
    a = ses__attrs_find((const ses__attrs_t *)node->attr_ctx, name);
    if (!a)
        return SES_DRV_NOT_FOUND;
    if ((uint32_t)a->type != type)
        return SES_DRV_INVALID_ARGUMENT;
    switch (a->type) {
    case SES_ATTR_INT:
    case SES_ATTR_FLOAT:
        if (values && *inout_count >= 1) {
            if (a->type == SES_ATTR_INT)
                *(int64_t *)values = a->i;
            else
                *(double *)values = a->f;
        }
        *inout_count = 1;
        return SES_DRV_OK;
    case SES_ATTR_STRING:
        if (values)
            memcpy(values, a->s, *inout_count < a->count ? *inout_count : a->count);
        *inout_count = a->count;
        return SES_DRV_OK;
    case SES_ATTR_INTS:
        if (values)
            memcpy(values, a->ints,
                   (*inout_count < a->count ? *inout_count : a->count) * sizeof(int64_t));
        *inout_count = a->count;
        return SES_DRV_OK;
    case SES_ATTR_FLOATS:
        if (values)
            memcpy(values, a->floats,
                   (*inout_count < a->count ? *inout_count : a->count) * sizeof(double));
        *inout_count = a->count;
        return SES_DRV_OK;
    }
    return SES_DRV_INVALID_ARGUMENT;
}

/* "f32,i64->f32" */
static void make_signature(const ses__type_t *const *ins, size_t n_ins, const ses__type_t *outs,
                           size_t n_outs, char *buffer, size_t size) {
    size_t used = 0;

    buffer[0] = '\0';
    for (size_t i = 0; i < n_ins && used < size; i++)
        used += (size_t)snprintf(buffer + used, size - used, "%s%s", i ? "," : "",
                                 ses_dtype_name(ins[i]->dtype));
    if (used < size)
        used += (size_t)snprintf(buffer + used, size - used, "->");
    for (size_t i = 0; i < n_outs && used < size; i++)
        used += (size_t)snprintf(buffer + used, size - used, "%s%s", i ? "," : "",
                                 ses_dtype_name(outs[i].dtype));
}

static void fill_desc(ses_drv_tensor_desc_t *d, const ses__type_t *t, int64_t *dims_storage) {
    memset(d, 0, sizeof *d);
    d->struct_size = sizeof *d;
    d->dtype = (uint32_t)t->dtype;
    d->rank = t->rank;
    for (uint32_t i = 0; i < t->rank; i++)
        dims_storage[i] = t->dims[i];
    d->dims = dims_storage;
}

/* The index of the session device @p node asks for (ses_node_set_device), 0 without a request. */
static ses_status_t requested_device(const ses_session_t *s, const ses_node_t *node,
                                     size_t *out_index) {
    const ses_device_t *device = NULL;
    char names[512] = "";
    size_t used = 0;

    *out_index = 0;
    if (!node->device)
        return SES_OK;
    if (strncmp(node->device, "/task:", 6) != 0 &&
        ses_registry_find_device(s->registry, node->device, &device) == SES_OK)
        for (size_t d = 0; d < s->n_devices; d++)
            if (s->devices[d].device == device) {
                *out_index = d;
                return SES_OK;
            }
    for (size_t d = 0; d < s->n_devices && used < sizeof names; d++)
        used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", d ? ", " : "",
                                 device_name(s, d));
    return ses__fail(SES_NOT_FOUND,
                     "%s \"%s\" asks for device %s, which is not one of the session's (%s)%s",
                     node->op, node->name, node->device, names,
                     strncmp(node->device, "/task:", 6) == 0
                         ? "; devices of workers need a remote session (<session/remote.h>)"
                         : "");
}

/*
 * Chooses the device of a node: the one it asks for, if any, then the session's in priority
 * order; the first with a kernel that accepts it.
 */
static ses_status_t place(builder_t *b, const ses_node_t *node, const char *kernel_op,
                          const char *signature, const ses_drv_node_t *drv_node,
                          size_t *out_device, const ses_drv_kernel_t **out_kernel) {
    ses_session_t *s = b->s;
    char tried[1024] = "";
    size_t used = 0, first;
    ses_status_t st;

    if ((st = requested_device(s, node, &first)) != SES_OK)
        return st;
    for (size_t i = 0; i < s->n_devices; i++) {
        /* first, then every other device in priority order */
        size_t d = i == 0 ? first : i <= first ? i - 1 : i;
        const ses_drv_kernel_t *refused[8];
        if (b->only_device != SIZE_MAX && d != b->only_device)
            continue;
        size_t n_refused = 0;
        const ses_drv_kernel_t *k = ses__find_kernel(&s->devices[d], kernel_op, signature, NULL, 0);
        char why[1024];

        /* An entry that refuses the node leaves the next one of lower priority to try. */
        while (k && k->supports_node) {
            char message[512];
            int32_t rc = k->supports_node(s->devices[d].handle, drv_node);
            ses__host_take_message(message, sizeof message);
            if (rc == SES_DRV_OK)
                break;
            if (!n_refused)
                snprintf(why, sizeof why, "%s refused it: %s", device_name(s, d),
                         message[0] ? message : "no reason given");
            else
                snprintf(why + strlen(why), sizeof why - strlen(why), "; %s",
                         message[0] ? message : "no reason given");
            refused[n_refused++] = k;
            k = n_refused < sizeof refused / sizeof refused[0]
                    ? ses__find_kernel(&s->devices[d], kernel_op, signature, refused, n_refused)
                    : NULL;
        }
        if (!k && !n_refused) {
            snprintf(why, sizeof why, "%s has no %s %s kernel", device_name(s, d), kernel_op,
                     signature);
        }
        if (k) {
            /* A fused node goes where its chain's first node goes (only_device): that node's
             * placement already applied the fallback policy. A probe says nothing. */
            if (i > 0 && b->only_device == SIZE_MAX) {
                if (s->options.fallback == SES_FALLBACK_DENY)
                    return ses__fail(SES_UNIMPLEMENTED,
                                     "%s \"%s\": cannot run on %s and fallback is denied: %s",
                                     node->op, node->name, device_name(s, first), tried);
                if (!b->probing)
                    summary_add(b, "  fallback: %s \"%s\" (%s) on %s: %s\n", node->op,
                                node->name, signature, device_name(s, d), tried);
                if (!b->probing && s->options.fallback == SES_FALLBACK_WARN)
                    ses__session_log(s, SES__LOG_WARN, "%s \"%s\" (%s) falls back to %s: %s",
                                     node->op, node->name, signature, device_name(s, d), tried);
            }
            *out_device = d;
            *out_kernel = k;
            return SES_OK;
        }
        if (used < sizeof tried)
            used += (size_t)snprintf(tried + used, sizeof tried - used, "%s%s", used ? "; " : "",
                                     why);
    }
    return ses__fail(SES_UNIMPLEMENTED, "%s \"%s\": no device has a kernel for it (%s): %s",
                     node->op, node->name, signature, tried);
}

/* Every input an op updates in place must be a variable, read from the scope (not fed). */
static ses_status_t check_inplace(builder_t *b, const ses_node_t *node, const size_t *in_slots) {
    for (size_t i = 0; i < node->n_inputs && i < 64; i++) {
        const ses_node_t *src = node->inputs[i].node;
        if (!(node->schema->inplace_inputs & (UINT64_C(1) << i)))
            continue;
        if (src->kind != SES__NODE_VARIABLE)
            return ses__fail(SES_INVALID_ARGUMENT,
                             "%s \"%s\": input %zu is updated in place, so it must be a variable; "
                             "it is %s \"%s\"",
                             node->op, node->name, i, src->op, src->name);
        if (b->c->slots[in_slots[i]].kind != SES__SLOT_VARIABLE)
            return ses__fail(SES_INVALID_ARGUMENT,
                             "%s \"%s\": input %zu, variable \"%s\", is fed in this eval, but the "
                             "op updates it in place; do not feed it",
                             node->op, node->name, i, src->name);
        b->c->slots[in_slots[i]].written = 1;
    }
    return SES_OK;
}

/* In-place updates go last, in their order: nothing consumes them (they have no outputs), and
 * every other step of the plan then reads the variables before they change. Without this order
 * an update could run before a reader of its variable, so running out of memory here fails. */
static ses_status_t order_inplace_last(ses__pruned_t *pruned) {
    size_t n = pruned->n_nodes, k = 0;
    const ses_node_t **moved = ses__malloc((n + 1) * sizeof *moved);
    size_t m = 0;

    if (!moved)
        return ses__fail(SES_OUT_OF_MEMORY, "compile: out of memory ordering %zu nodes", n);
    for (size_t i = 0; i < n; i++) {
        const ses_node_t *x = pruned->nodes[i];
        if (x->kind == SES__NODE_OP && x->schema->inplace_inputs)
            moved[m++] = x;
        else
            pruned->nodes[k++] = x;
    }
    memcpy(pruned->nodes + k, moved, m * sizeof *moved);
    free(moved);
    return SES_OK;
}

/*
 * Whether AllReduce's output @p i may take over the slot of its input i, so that the collective
 * sums the gradient where it was computed: a value computed in the CPU device's arena (not a
 * copy of one), which nothing else in the plan reads (no other node, not this one twice, not a
 * fetch): it is gone, replaced by the sum, once the AllReduce ran.
 */
static int reduce_in_place(const builder_t *b, const ses_node_t *node, size_t i,
                           size_t slot_index) {
    const ses__slot_t *slot = &b->c->slots[slot_index];
    const ses_edge_t e = node->inputs[i];
    size_t readers = 0;

    if (strcmp(node->op, "AllReduce") || slot->kind != SES__SLOT_ARENA ||
        slot->source != SIZE_MAX || slot->device != b->s->n_devices - 1)
        return 0;
    for (size_t k = 0; k < b->plan->n_fetches; k++)
        if (b->plan->fetches[k].node == e.node && b->plan->fetches[k].index == e.index)
            return 0;
    for (size_t k = 0; k < b->pruned->n_nodes; k++) {
        const ses_node_t *n = b->pruned->nodes[k];
        for (size_t j = 0; j < n->n_inputs; j++)
            if (n->inputs[j].node == e.node && n->inputs[j].index == e.index && ++readers > 1)
                return 0;
    }
    return readers == 1;
}

/* An op the runtime runs itself: it reads (or, in place, writes) its inputs wherever they are,
 * so it needs no kernel and no copies. Its step counts as on the CPU device, and its outputs
 * (AllReduce's) are values in the CPU device's arena, each in its input's slot where
 * reduce_in_place allows: args are inputs then outputs. */
static ses_status_t compile_host_op(builder_t *b, const ses_node_t *node, const size_t *in_slots,
                                    const ses__type_t *out_types) {
    ses__compiled_t *c = b->c;
    size_t step_index, cpu = b->s->n_devices - 1;
    ses__step_t *step;
    ses_status_t st;

    if (node->schema->inplace_inputs && (st = check_inplace(b, node, in_slots)) != SES_OK)
        return st;
    st = new_step(b, SES__STEP_HOST, cpu, node, node->n_inputs + node->n_outputs, &step);
    if (st != SES_OK)
        return st;
    step_index = c->n_steps - 1;
    for (size_t i = 0; i < node->n_inputs; i++) {
        c->steps[step_index].args[i] = in_slots[i];
        if (c->slots[in_slots[i]].last_step < step_index)
            c->slots[in_slots[i]].last_step = step_index;
    }
    for (size_t o = 0; o < node->n_outputs; o++) {
        size_t out;
        if (o < node->n_inputs && reduce_in_place(b, node, o, in_slots[o])) {
            out = in_slots[o];
        } else {
            st = new_slot(b, out_types[o].dtype == SES_STRING ? SES__SLOT_STRING : SES__SLOT_ARENA,
                          &out_types[o], cpu, (ses_edge_t){(ses_node_t *)node, (uint32_t)o}, &out);
            if (st != SES_OK)
                return st;
            c->slots[out].first_step = step_index;
            c->slots[out].last_step = step_index;
        }
        c->steps[step_index].args[node->n_inputs + o] = out;
        b->slot_of[node->id * SES__MAX_OUTPUTS + o] = out + 1;
    }
    /* The values summed in place, one group per dtype: placed back to back, one collective. */
    for (size_t o = 0; o < node->n_outputs && o < node->n_inputs; o++) {
        ses__slot_t *slot = &c->slots[in_slots[o]];
        if (c->steps[step_index].args[node->n_inputs + o] != in_slots[o] || slot->group != SIZE_MAX)
            continue;
        for (size_t k = o; k < node->n_outputs && k < node->n_inputs; k++)
            if (c->steps[step_index].args[node->n_inputs + k] == in_slots[k] &&
                c->slots[in_slots[k]].type.dtype == slot->type.dtype)
                c->slots[in_slots[k]].group = in_slots[o];
    }
    b->per_device[cpu]++;
    return SES_OK;
}

/* ---- layout (layout.c decides; these make the steps) ------------------------------------ */

static ses_status_t compile_op(builder_t *b, const ses_node_t *node, const ses_node_t *out_node);

/* The plan takes @p n (a variant or a reorder): its steps name it. */
static ses_status_t own_layout_node(builder_t *b, ses_node_t *n) {
    ses__compiled_t *c = b->c;

    if (c->n_layout_nodes == b->layout_capacity) {
        size_t capacity = b->layout_capacity ? 2 * b->layout_capacity : 16;
        ses_node_t **nodes = ses__realloc(c->layout_nodes, capacity * sizeof *nodes);
        if (!nodes) {
            ses__node_free(n);
            return ses__fail(SES_OUT_OF_MEMORY, "compile: out of memory for the layout");
        }
        c->layout_nodes = nodes;
        b->layout_capacity = capacity;
    }
    c->layout_nodes[c->n_layout_nodes++] = n;
    return SES_OK;
}

/* The slot holding blocked slot @p slot in NCHW: its reorder step, made the first time. */
static ses_status_t plain_twin(builder_t *b, size_t slot, size_t *out) {
    ses__compiled_t *c = b->c;
    const int trial = b->trial, probing = b->probing, rejected = b->rejected;
    const size_t only = b->only_device;
    ses_node_t *r;
    ses_status_t st;

    if (c->slots[slot].plain_twin) {
        *out = c->slots[slot].plain_twin - 1;
        return SES_OK;
    }
    if (b->next_id >= b->id_limit)
        return ses__fail(SES_INTERNAL, "compile: more layout reorders than the plan has nodes");
    r = ses__layout_reorder_node(c->slots[slot].edge, b->next_id++);
    if (!r)
        return ses__fail(SES_OUT_OF_MEMORY, "compile: out of memory for the layout");
    if ((st = own_layout_node(b, r)) != SES_OK)
        return st;
    /* Compiled for real whatever the caller is doing: whichever way the reader is compiled
     * (probed, tried as a variant, or as it is) it reads NCHW. */
    b->trial = b->probing = 0;
    b->only_device = SIZE_MAX;
    st = compile_op(b, r, r);
    b->trial = trial;
    b->probing = probing;
    b->rejected = rejected;
    b->only_device = only;
    if (st != SES_OK)
        return st;
    *out = b->slot_of[r->id * SES__MAX_OUTPUTS] - 1;
    c->slots[slot].plain_twin = *out + 1;
    c->n_reorders++;
    return SES_OK;
}

/* Points each input of @p node that is blocked, and that @p node cannot read so, at its NCHW
 * twin; says whether @p node reads a blocked input as it is. */
static ses_status_t layout_inputs(builder_t *b, const ses_node_t *node, size_t *in_slots,
                                  int *out_read_blocked) {
    unsigned char blocked[SES__MAX_INPUTS];
    ses__type_t types[SES__MAX_INPUTS];
    int any = 0;

    *out_read_blocked = 0;
    for (size_t i = 0; i < node->n_inputs; i++) {
        blocked[i] = (unsigned char)b->c->slots[in_slots[i]].blocked;
        types[i] = b->c->slots[in_slots[i]].type;
        any |= blocked[i];
    }
    for (size_t i = 0; any && i < node->n_inputs; i++) {
        ses_status_t st;
        if (!blocked[i])
            continue;
        if (ses__layout_accepts(node, i, blocked, types)) {
            *out_read_blocked = 1;
            continue;
        }
        if ((st = plain_twin(b, in_slots[i], &in_slots[i])) != SES_OK)
            return st;
    }
    return SES_OK;
}

/*
 * Compiles @p n's blocked variant (layout.c) in its place, with the outputs of @p out_node, if
 * it has one and the device's driver takes it; *out_done says whether it did. A variant that
 * inference or the driver refuses is dropped, and the caller compiles @p n as it is.
 */
static ses_status_t compile_variant(builder_t *b, const ses_node_t *n, const ses_node_t *out_node,
                                    int *out_done) {
    ses__compiled_t *c = b->c;
    const char *op;
    size_t x;
    ses_node_t *v;
    ses_status_t st;

    *out_done = 0;
    if (!b->layout || n->n_inputs < 1 || is_needed(b, n) ||
        (st = home_slot(b, n->inputs[0], &x)) != SES_OK)
        return SES_OK; /* an input not there yet is the node's own compile's to report */
    op = ses__layout_variant(n, c->slots[x].blocked);
    if (!op)
        return SES_OK;
    v = ses__layout_variant_node(n, op);
    if (!v)
        return ses__fail(SES_OUT_OF_MEMORY, "compile: out of memory for the layout");
    if ((st = own_layout_node(b, v)) != SES_OK)
        return st;
    b->trial = 1;
    b->rejected = 0;
    b->variant = v;
    st = compile_op(b, v, out_node);
    b->variant = NULL;
    b->trial = 0;
    if (st != SES_OK && b->rejected) {
        ses__session_log(b->s, SES__LOG_DEBUG, "%s \"%s\" stays in NCHW: %s", n->op, n->name,
                         ses_last_error());
        ses__node_free(c->layout_nodes[--c->n_layout_nodes]);
        return SES_OK;
    }
    if (st != SES_OK)
        return st;
    c->n_blocked++;
    *out_done = 1;
    return SES_OK;
}

/*
 * Compiles op node @p node into its step (and the copies it needs). Its outputs are the edges of
 * @p out_node: @p node itself, or for a fused node the chain's last member, whose consumers and
 * fetches then find the fused node's output where they look for that member's.
 */
static ses_status_t compile_op(builder_t *b, const ses_node_t *node, const ses_node_t *out_node) {
    ses__compiled_t *c = b->c;
    ses__infer_ctx_t ctx;
    ses__type_t in_types[SES__MAX_INPUTS];
    const void *values[SES__MAX_INPUTS];
    size_t in_slots[SES__MAX_INPUTS];
    const ses__type_t *kernel_in_types[SES__MAX_INPUTS];
    size_t kernel_in[SES__MAX_INPUTS], kernel_node_in[SES__MAX_INPUTS];
    size_t n_kernel_in = 0, device = 0, step_index;
    const ses_drv_kernel_t *kernel = NULL;
    ses_drv_tensor_desc_t descs[SES__MAX_INPUTS + SES__MAX_OUTPUTS];
    int64_t dims[(SES__MAX_INPUTS + SES__MAX_OUTPUTS) * SES_MAX_RANK];
    ses_drv_node_t drv_node;
    char signature[512];
    ses__step_t *step;
    int read_blocked = 0;
    ses_status_t st;

    if (node->n_inputs > SES__MAX_INPUTS)
        return ses__fail(SES_INVALID_ARGUMENT, "%s \"%s\": %zu inputs; the most is %d", node->op,
                         node->name, node->n_inputs, SES__MAX_INPUTS);
    for (size_t i = 0; i < node->n_inputs; i++) {
        const ses__slot_t *slot;
        st = home_slot(b, node->inputs[i], &in_slots[i]);
        if (st != SES_OK)
            return st;
        slot = &c->slots[in_slots[i]];
        in_types[i] = slot->type;
        values[i] = NULL;
        if (slot->kind == SES__SLOT_FEED)
            values[i] = b->feeds[slot->feed_index]->data; /* NULL for a device tensor */
        else if (slot->kind == SES__SLOT_CONSTANT)
            values[i] = constant_tensor(slot)->data;
        if (slot->kind == SES__SLOT_FEED && (node->schema->value_inputs & (UINT64_C(1) << i))) {
            if (b->feeds[slot->feed_index]->home)
                return ses__fail(SES_INVALID_ARGUMENT,
                                 "%s \"%s\": input %zu shapes the plan, so the host reads it, "
                                 "but it is fed a device tensor on %s; feed a host tensor",
                                 node->op, node->name, i,
                                 b->feeds[slot->feed_index]->device_name);
            if (b->types_only) {
                b->deferred = 1;
                return ses__fail(SES_UNAVAILABLE, "%s \"%s\": input %zu is a fed value that "
                                 "shapes the plan; it is compiled at the first run",
                                 node->op, node->name, i);
            }
            if ((st = remember_value(b, in_slots[i])) != SES_OK)
                return st;
        }
    }
    /* Shape and Size need only a type: folded, their input need not even be computed for them. */
    if (ses__fold_candidate(node)) {
        int folded = 0;
        if ((st = fold_shape(b, node, out_node, in_slots, &folded)) != SES_OK || folded)
            return st;
    }
    /* Strings never reach a driver: only the ops exec/host_strings.c runs may read them. */
    if ((st = ses__string_node_check(node, in_types)) != SES_OK)
        return st;
    /* Blocked values go as they are to the readers that take them, in NCHW to the others. */
    if (b->layout) {
        if ((st = layout_inputs(b, node, in_slots, &read_blocked)) != SES_OK)
            return st;
        for (size_t i = 0; i < node->n_inputs; i++)
            in_types[i] = c->slots[in_slots[i]].type;
    }
    memset(&ctx, 0, sizeof ctx);
    ctx.node = node->name;
    ctx.op = node->op;
    ctx.n_inputs = node->n_inputs;
    ctx.inputs = in_types;
    ctx.values = values;
    ctx.attrs = &node->attrs;
    ctx.n_outputs = node->n_outputs;
    st = ses__op_infer(node->schema, &ctx);
    if (st != SES_OK) {
        ses__attrs_clear(&ctx.kernel_attrs);
        b->rejected = b->trial;
        /* A value inference needed is not known: say what keeps it from being known (a variable,
         * a value computed at run time, a device tensor fed). */
        for (size_t i = 0; i < node->n_inputs && i < 64; i++) {
            char why[400], message[2048];
            if (!(node->schema->value_inputs & (UINT64_C(1) << i)) || values[i] ||
                !ses__type_count(&in_types[i]))
                continue;
            why_unknown(b, node->inputs[i], why, sizeof why);
            snprintf(message, sizeof message, "%s", ses_last_error());
            return ses__fail(st, "%s; %s", message, why);
        }
        return st;
    }
    if (node->schema->host_op ||
        ses__string_node(in_types, node->n_inputs, ctx.outputs, node->n_outputs)) {
        ses__attrs_clear(&ctx.kernel_attrs);
        if (!node->schema->host_op && !ses__string_op_known(node->op))
            return ses__fail(SES_UNIMPLEMENTED,
                             "%s \"%s\": makes a string tensor; only StringNormalizer, Cast, "
                             "CastLike and Identity make strings",
                             node->op, node->name);
        return compile_host_op(b, node, in_slots, ctx.outputs);
    }
    for (size_t i = 0; i < node->n_inputs; i++) {
        if (ctx.kernel_inputs && !(ctx.kernel_inputs & (UINT64_C(1) << i)))
            continue;
        kernel_in[n_kernel_in] = i;
        kernel_in_types[n_kernel_in++] = &in_types[i];
    }
    make_signature(kernel_in_types, n_kernel_in, ctx.outputs, node->n_outputs, signature,
                   sizeof signature);
    for (size_t i = 0; i < n_kernel_in; i++)
        fill_desc(&descs[i], kernel_in_types[i], &dims[i * SES_MAX_RANK]);
    for (size_t i = 0; i < node->n_outputs; i++)
        fill_desc(&descs[n_kernel_in + i], &ctx.outputs[i],
                  &dims[(n_kernel_in + i) * SES_MAX_RANK]);
    memset(&drv_node, 0, sizeof drv_node);
    drv_node.struct_size = sizeof drv_node;
    drv_node.op = ctx.kernel_op ? ctx.kernel_op : node->op;
    drv_node.name = node->name;
    drv_node.n_inputs = (uint32_t)n_kernel_in;
    drv_node.n_outputs = (uint32_t)node->n_outputs;
    drv_node.inputs = descs;
    drv_node.outputs = descs + n_kernel_in;
    drv_node.attr = node_attr;
    drv_node.attr_ctx = &ctx.kernel_attrs;
    /* DRV-85: a graph constant holds the same bytes at the same address in every run (bound
     * from its host tensor, or the session's resident copy on another device). */
    for (size_t i = 0; i < n_kernel_in && i < 64; i++)
        if (c->slots[in_slots[kernel_in[i]]].kind == SES__SLOT_CONSTANT)
            drv_node.constant_inputs |= UINT64_C(1) << i;
    /* In-place updates write variables: only real ones, read from the scope. */
    if (node->schema->inplace_inputs) {
        st = check_inplace(b, node, in_slots);
        if (st != SES_OK) {
            ses__attrs_clear(&ctx.kernel_attrs);
            return st;
        }
    }
    /* Every input known now: computed once here (fold.c), when the CPU has a kernel for it. */
    const int needed = is_needed(b, node);
    if ((b->fold || needed) && !b->probing && !b->trial && ses__fold_candidate(node)) {
        const void *kernel_values[SES__MAX_INPUTS];
        ses_tensor_t *folded[SES__MAX_OUTPUTS];
        int known = 1, reads_fed = 0;
        /* Constants only, unless inference needs the value: a fed value changes from run to
         * run, and folding over it compiles the plan again for every new one. */
        for (size_t i = 0; i < node->n_inputs && known; i++) {
            const ses__slot_kind_t kind = c->slots[in_slots[i]].kind;
            if (kind == SES__SLOT_FEED) {
                /* Compiling ahead of a run, a fed value is not there yet. */
                reads_fed = 1;
                known = needed && (values[i] != NULL || b->types_only);
            } else {
                known = kind == SES__SLOT_CONSTANT && values[i] != NULL;
            }
        }
        if (known && reads_fed && b->types_only) {
            ses__attrs_clear(&ctx.kernel_attrs);
            b->deferred = 1;
            return ses__fail(SES_UNAVAILABLE,
                             "%s \"%s\": computes from fed values a value that "
                             "shapes the plan; it is compiled at the first run",
                             node->op, node->name);
        }
        for (size_t i = 0; i < n_kernel_in && known; i++)
            kernel_values[i] = values[kernel_in[i]];
        if (known && ses__fold_run(b->s, &drv_node, signature, kernel_values, kernel_in_types,
                                   ctx.outputs, needed, folded) == SES_OK) {
            ses__attrs_clear(&ctx.kernel_attrs);
            st = SES_OK;
            for (size_t i = 0; i < node->n_inputs && st == SES_OK; i++)
                if (c->slots[in_slots[i]].kind == SES__SLOT_FEED)
                    st = remember_value(b, in_slots[i]);
            if (st != SES_OK) {
                for (size_t o = 0; o < node->n_outputs; o++)
                    ses_tensor_release(folded[o]);
                return st;
            }
            return add_folded(b, node, out_node, folded);
        }
    }
    st = place(b, node, drv_node.op, signature, &drv_node, &device, &kernel);
    if (st != SES_OK || b->probing) {
        ses__attrs_clear(&ctx.kernel_attrs);
        b->rejected = b->trial;
        b->probe_device = device;
        return st;
    }
    b->per_device[device]++;

    /* Inputs on the chosen device (copies are steps before this one). */
    memcpy(kernel_node_in, kernel_in, n_kernel_in * sizeof *kernel_in);
    for (size_t i = 0; i < n_kernel_in; i++) {
        size_t local;
        st = slot_on_device(b, in_slots[kernel_in[i]], device, &local);
        if (st != SES_OK) {
            ses__attrs_clear(&ctx.kernel_attrs);
            return st;
        }
        kernel_in[i] = local;
        /* The slot the kernel reads: the constant itself or its resident copy keep their
         * address; a copy into the arena (a 0-byte constant) does not count. */
        if (i < 64 && c->slots[local].kind != SES__SLOT_CONSTANT &&
            c->slots[local].kind != SES__SLOT_RESIDENT)
            drv_node.constant_inputs &= ~(UINT64_C(1) << i);
    }
    st = new_step(b, SES__STEP_KERNEL, device, node, n_kernel_in + node->n_outputs, &step);
    if (st != SES_OK) {
        ses__attrs_clear(&ctx.kernel_attrs);
        return st;
    }
    step_index = c->n_steps - 1;
    step->kernel = kernel;
    step->kernel_attrs = ctx.kernel_attrs;
    step->descs = ses__calloc(step->n_args, sizeof *step->descs);
    if (!step->descs)
        return ses__fail(SES_OUT_OF_MEMORY, "compile: out of memory");
    step->drv_node = drv_node;
    for (size_t i = 0; i < n_kernel_in; i++) {
        step->args[i] = kernel_in[i];
        if (c->slots[kernel_in[i]].last_step < step_index)
            c->slots[kernel_in[i]].last_step = step_index;
    }
    for (size_t o = 0; o < node->n_outputs; o++) {
        size_t out;
        st = new_slot(b, SES__SLOT_ARENA, &ctx.outputs[o], device,
                      (ses_edge_t){(ses_node_t *)out_node, (uint32_t)o}, &out);
        if (st != SES_OK)
            return st;
        c->slots[out].first_step = step_index;
        c->slots[out].last_step = step_index;
        c->slots[out].blocked =
            b->layout && ses__layout_makes_blocked(node, node == b->variant, read_blocked);
        c->steps[step_index].args[n_kernel_in + o] = out;
        b->slot_of[out_node->id * SES__MAX_OUTPUTS + o] = out + 1;
    }
    /* A variable updated on another device than its home is copied back after the update. */
    for (size_t i = 0; i < n_kernel_in && node->schema->inplace_inputs; i++) {
        size_t ni = kernel_node_in[i], local = c->steps[step_index].args[i];
        if (ni < 64 && (node->schema->inplace_inputs & (UINT64_C(1) << ni)) &&
            c->slots[local].kind == SES__SLOT_RESIDENT_VARIABLE) {
            /* Updated where it lives: the host reads it back only when it needs it. */
            c->slots[local].written = 1;
        } else if (ni < 64 && (node->schema->inplace_inputs & (UINT64_C(1) << ni)) &&
                   local != in_slots[ni]) {
            st = new_step(b, SES__STEP_COPY, device, node, 2, &step);
            if (st != SES_OK)
                return st;
            step->args[0] = local;
            step->args[1] = in_slots[ni];
            c->slots[local].last_step = c->n_steps - 1;
        }
    }
    return SES_OK;
}

/* Points each step's descriptors and launch at its own storage, once steps stop moving. */
/* Marks the variable slots a step on the host reads: only those need the host's copy current. */
static void mark_host_reads(builder_t *b) {
    ses__compiled_t *c = b->c;
    const size_t host = b->s->n_devices - 1;

    for (size_t i = 0; i < c->n_steps; i++) {
        const ses__step_t *step = &c->steps[i];
        if (step->device != host && step->kind != SES__STEP_COPY)
            continue;
        for (size_t a = 0; a < step->n_args; a++)
            if (c->slots[step->args[a]].kind == SES__SLOT_VARIABLE)
                c->slots[step->args[a]].host_read = 1;
    }
    for (size_t i = 0; i < b->plan->n_fetches; i++)
        if (c->slots[c->fetch_slots[i]].kind == SES__SLOT_VARIABLE)
            c->slots[c->fetch_slots[i]].host_read = 1;
}

static ses_status_t finalize_steps(builder_t *b) {
    ses__compiled_t *c = b->c;

    for (size_t i = 0; i < c->n_steps; i++) {
        ses__step_t *step = &c->steps[i];
        size_t n_in;
        int64_t *dims;

        if (step->kind != SES__STEP_KERNEL)
            continue;
        n_in = step->drv_node.n_inputs;
        dims = ses__calloc(step->n_args * SES_MAX_RANK + 1, sizeof *dims);
        if (!dims)
            return ses__fail(SES_OUT_OF_MEMORY, "compile: out of memory");
        for (size_t a = 0; a < step->n_args; a++)
            fill_desc(&step->descs[a], &c->slots[step->args[a]].type, &dims[a * SES_MAX_RANK]);
        /* The first descriptor's dims pointer owns the block (freed with the plan). */
        step->drv_node.inputs = step->descs;
        step->drv_node.outputs = step->descs + n_in;
        step->drv_node.attr_ctx = &step->kernel_attrs;
        memset(&step->launch, 0, sizeof step->launch);
        step->launch.struct_size = sizeof step->launch;
        step->launch.node = &step->drv_node;
        step->launch.inputs = step->buffers;
        step->launch.input_offsets = step->offsets;
        step->launch.outputs = step->buffers + n_in;
        step->launch.output_offsets = step->offsets + n_in;
    }
    return SES_OK;
}

static ses_status_t allocate_arenas(builder_t *b) {
    ses_session_t *s = b->s;
    ses__compiled_t *c = b->c;

    /* Empty external values are bound to the CPU arena (never read): kernels refuse NULL
     * buffers, and drivers refuse zero-byte imports. */
    for (size_t i = 0; i < c->n_slots; i++)
        if (c->slots[i].kind != SES__SLOT_ARENA && !c->slots[i].bytes &&
            !c->arena_bytes[c->slots[i].device])
            c->arena_bytes[c->slots[i].device] = 64;
    for (size_t d = 0; d < s->n_devices; d++) {
        const ses__device_ctx_t *dev = &s->devices[d];
        int32_t rc;
        char message[512];

        if (!c->arena_bytes[d])
            continue;
        c->arenas[d] = NULL;
        rc = dev->api->alloc(dev->handle, c->arena_bytes[d], SES_DRV_MEM_DEVICE, &c->arenas[d]);
        /* A driver that answers OK without a buffer is out of memory in all but name. */
        if (rc == SES_DRV_OK && !c->arenas[d]) {
            ses__host_take_message(NULL, 0);
            rc = SES_DRV_OUT_OF_MEMORY;
            snprintf(message, sizeof message, "alloc returned OK but no buffer");
        } else if (rc != SES_DRV_OK) {
            ses__host_take_message(message, sizeof message);
            c->arenas[d] = NULL;
        }
        if (rc != SES_DRV_OK)
            return ses__fail(rc == SES_DRV_OUT_OF_MEMORY ? SES_OUT_OF_MEMORY : (ses_status_t)rc,
                             "compile: %s (driver %s) cannot allocate the plan's %llu bytes: %s",
                             device_name(s, d),
                             ses_driver_name(ses_device_driver(dev->device)),
                             (unsigned long long)c->arena_bytes[d],
                             message[0] ? message : ses_status_name((ses_status_t)rc));
    }
    for (size_t i = 0; i < c->n_slots; i++)
        if (c->slots[i].kind == SES__SLOT_ARENA)
            c->slots[i].buffer = c->arenas[c->slots[i].device];
    return SES_OK;
}

static ses_status_t bind_kernels(builder_t *b) {
    ses_session_t *s = b->s;
    ses__compiled_t *c = b->c;

    for (size_t i = 0; i < c->n_steps; i++) {
        ses__step_t *step = &c->steps[i];
        char message[512];
        int32_t rc;

        if (step->kind != SES__STEP_KERNEL || !step->kernel->create)
            continue;
        rc = step->kernel->create(s->devices[step->device].handle, &step->drv_node, &step->state);
        if (rc != SES_DRV_OK) {
            ses__host_take_message(message, sizeof message);
            step->state = NULL;
            return ses__fail((ses_status_t)rc, "%s \"%s\": %s could not prepare its kernel: %s",
                             step->node->op, step->node->name, device_name(s, step->device),
                             message);
        }
    }
    return SES_OK;
}

static ses_status_t make_summary(builder_t *b) {
    ses_session_t *s = b->s;
    ses__compiled_t *c = b->c;
    char *fallbacks = b->summary;
    size_t fallbacks_used = b->summary_used;

    b->summary = NULL;
    b->summary_used = b->summary_capacity = 0;
    summary_add(b, "placement:");
    for (size_t d = 0; d < s->n_devices; d++)
        summary_add(b, " %s %zu node%s%s", device_name(s, d), b->per_device[d],
                    b->per_device[d] == 1 ? "" : "s", d + 1 < s->n_devices ? "," : "");
    summary_add(b, "\n");
    const size_t chains = c->n_fusions - c->n_update_fusions;
    if (chains && !c->n_pool_fusions)
        summary_add(b, "  fused: %zu chain%s into FusedConv or FusedGemm\n", chains,
                    chains == 1 ? "" : "s");
    else if (chains)
        summary_add(b,
                    "  fused: %zu chain%s into FusedConv or FusedGemm, %zu of them with their "
                    "MaxPool into NchwcConv\n",
                    chains, chains == 1 ? "" : "s", c->n_pool_fusions);
    if (c->n_update_fusions)
        summary_add(b, "  fused: %zu MatMulGrad%s into %s SGD update%s (MatMulGradSGD)\n",
                    c->n_update_fusions, c->n_update_fusions == 1 ? "" : "s",
                    c->n_update_fusions == 1 ? "its" : "their",
                    c->n_update_fusions == 1 ? "" : "s");
    if (c->n_folded)
        summary_add(b, "  folded: %zu node%s computed at compile time\n", c->n_folded,
                    c->n_folded == 1 ? "" : "s");
    if (c->n_blocked)
        summary_add(b, "  layout: %zu node%s on NCHWc16 values (NchwcConv and pools), %zu "
                    "reorder%s back to NCHW\n",
                    c->n_blocked, c->n_blocked == 1 ? "" : "s", c->n_reorders,
                    c->n_reorders == 1 ? "" : "s");
    if (c->n_in_place || c->n_concats_in_place || c->n_views)
        summary_add(b,
                    "  in place: %zu output%s written over an input, %zu Concat%s as %s "
                    "inputs laid back to back, %zu cop%s made a view of %s input\n",
                    c->n_in_place, c->n_in_place == 1 ? "" : "s", c->n_concats_in_place,
                    c->n_concats_in_place == 1 ? "" : "s",
                    c->n_concats_in_place == 1 ? "its" : "their", c->n_views,
                    c->n_views == 1 ? "y" : "ies", c->n_views == 1 ? "its" : "their");
    if (fallbacks)
        summary_add(b, "%.*s", (int)fallbacks_used, fallbacks);
    free(fallbacks);
    if (b->summary_oom)
        return ses__fail(SES_OUT_OF_MEMORY, "compile: out of memory for the placement summary");
    c->placement = b->summary ? b->summary : ses__strdup("");
    b->summary = NULL;
    return c->placement ? SES_OK : ses__fail(SES_OUT_OF_MEMORY, "compile: out of memory");
}

static ses_status_t compile_one(builder_t *b, const ses_node_t *n) {
    ses__compiled_t *c = b->c;
    const size_t steps_before = c->n_steps;
    int blocked;
    ses_status_t st = compile_variant(b, n, n, &blocked);

    if (st == SES_OK && !blocked)
        st = compile_op(b, n, n);
    if (st != SES_OK)
        return st;
    c->placed_nodes[c->n_placed] = n;
    /* A folded node added no step: the host computed it, at compile time. */
    c->placed_devices[c->n_placed++] =
        c->n_steps > steps_before ? c->steps[c->n_steps - 1].device : b->s->n_devices - 1;
    return SES_OK;
}

/*
 * Tries to compile fusion @p f as its fused node, at its last member's place in the plan (where
 * every input, Z included, is computed): on the device its first member would take, and only
 * if that device binds a kernel that accepts the fused node. A chain with a trailing MaxPool
 * tries its pooled node first, only ever as NchwcConv (FusedConv has no pool); refused, the
 * chain without the pool is tried as any chain is, and the pool then compiled on its own. Sets
 * f->state and f->n_fused; a rejected chain is compiled unfused by the caller. Fails only for
 * errors that would fail the plan anyway.
 */
static ses_status_t compile_fused(builder_t *b, ses__fusion_t *f) {
    ses__compiled_t *c = b->c;
    const size_t n_chain = f->pooled ? f->n_members - 1 : f->n_members;
    const ses_node_t *last = f->members[n_chain - 1];
    size_t device;
    int blocked;
    ses_status_t st;

    f->state = SES__FUSION_REJECTED;
    f->n_fused = n_chain;
    /* The pooled NchwcConv, where the layout pass runs and the driver takes it. */
    if (f->pooled) {
        if ((st = compile_variant(b, f->pooled, f->members[f->n_members - 1], &blocked)) != SES_OK)
            return st;
        if (blocked) {
            f->n_fused = f->n_members;
            c->n_pool_fusions++;
            device = c->steps[c->n_steps - 1].device;
            goto fused;
        }
    }
    /* NchwcConv first, where the layout pass runs: the fused node's blocked variant. */
    if ((st = compile_variant(b, f->node, last, &blocked)) != SES_OK)
        return st;
    if (blocked) {
        device = c->steps[c->n_steps - 1].device;
        goto fused;
    }
    /* Where the first member would run: its own compile reports any error of its own. */
    b->probing = 1;
    st = compile_op(b, f->members[0], f->members[0]);
    b->probing = 0;
    if (st != SES_OK)
        return SES_OK;
    device = b->probe_device;
    b->only_device = device;
    b->trial = 1;
    b->rejected = 0;
    st = compile_op(b, f->node, last);
    b->only_device = SIZE_MAX;
    b->trial = 0;
    if (st != SES_OK && b->rejected) {
        ses__session_log(b->s, SES__LOG_DEBUG, "%s \"%s\" is not fused: %s", f->node->op,
                         f->node->name, ses_last_error());
        return SES_OK;
    }
    if (st != SES_OK)
        return st;
fused:
    f->state = SES__FUSION_FUSED;
    c->n_fusions++;
    c->n_update_fusions += !strcmp(f->node->op, "MatMulGradSGD");
    b->per_device[device] += f->n_fused - 1;
    for (size_t m = 0; m < f->n_fused; m++) {
        c->placed_nodes[c->n_placed] = f->members[m];
        c->placed_devices[c->n_placed++] = device;
    }
    /* The pool the fused step does not run: on its own, after it, as if never in the chain. */
    return f->n_fused < f->n_members ? compile_one(b, f->members[f->n_members - 1]) : SES_OK;
}

/* The plan takes the nodes of every chain it tried: the fused ones' steps run them, and a
 * rejected FusedConv's empty B may already have a slot (a constant's slot reads its node). A
 * pooled node is not taken: a step runs its NchwcConv variant, a node of its own. */
static ses_status_t adopt_fused_nodes(builder_t *b) {
    ses__compiled_t *c = b->c;

    if (!b->fusions.count)
        return SES_OK;
    c->fused_nodes = ses__calloc(2 * b->fusions.count, sizeof *c->fused_nodes);
    if (!c->fused_nodes)
        return ses__fail(SES_OUT_OF_MEMORY, "compile: out of memory");
    for (size_t i = 0; i < b->fusions.count; i++) {
        ses__fusion_t *f = &b->fusions.items[i];
        if (f->state == SES__FUSION_CANDIDATE)
            continue;
        c->fused_nodes[c->n_fused_nodes++] = f->node;
        f->node = NULL;
        if (f->empty) {
            c->fused_nodes[c->n_fused_nodes++] = f->empty;
            f->empty = NULL;
        }
    }
    return SES_OK;
}

static ses_status_t build(builder_t *b, const ses__pruned_t *pruned) {
    ses_plan_t *plan = b->plan;
    ses__compiled_t *c = b->c;
    ses_status_t st;

    b->pruned = pruned;
    if ((st = mark_needed(b, pruned)) != SES_OK)
        return st;
    /* A pool whose value inference needs is folded on its own: the chain before it may fuse. */
    for (size_t i = 0; i < b->fusions.count; i++) {
        ses__fusion_t *f = &b->fusions.items[i];
        if (f->pooled && is_needed(b, f->members[f->n_members - 1])) {
            ses__node_free(f->pooled);
            f->pooled = NULL;
            f->n_members--;
        }
    }
    for (size_t i = 0; i < pruned->n_nodes; i++) {
        const ses_node_t *n = pruned->nodes[i];
        ses__fusion_t *f;
        int needed = 0;
        if (n->kind != SES__NODE_OP)
            continue;
        f = ses__fusion_of(&b->fusions, n);
        /* A chain a needed value comes from is folded node by node, never fused. */
        for (size_t m = 0; f && m < f->n_members; m++)
            needed |= is_needed(b, f->members[m]);
        if (!f || needed) {
            st = compile_one(b, n);
        } else if (n != f->members[f->n_members - 1]) {
            continue; /* decided at the chain's last member */
        } else {
            st = compile_fused(b, f);
            /* Unfused: the members in their order, here, where all their inputs exist. */
            for (size_t m = 0; st == SES_OK && f->state == SES__FUSION_REJECTED &&
                               m < f->n_members;
                 m++)
                st = compile_one(b, f->members[m]);
        }
        if (st != SES_OK)
            return st;
    }
    if ((st = adopt_fused_nodes(b)) != SES_OK)
        return st;
    for (size_t i = 0; i < plan->n_fetches; i++) {
        ses__slot_t *slot;
        st = home_slot(b, plan->fetches[i], &c->fetch_slots[i]);
        if (st == SES_OK && c->slots[c->fetch_slots[i]].blocked)
            st = plain_twin(b, c->fetch_slots[i], &c->fetch_slots[i]);
        if (st != SES_OK)
            return st;
        slot = &c->slots[c->fetch_slots[i]];
        /* Fetched values live to the end of the run. A computed one on a device that imports
         * host memory is written into the caller's tensor directly. */
        slot->last_step = c->n_steps;
        if (slot->kind == SES__SLOT_ARENA && slot->source == SIZE_MAX &&
            b->s->devices[slot->device].can_import)
            slot->kind = SES__SLOT_OUTPUT;
    }
    mark_host_reads(b);
    if ((st = finalize_steps(b)) != SES_OK || (st = ses__plan_memory(b->s, c)) != SES_OK ||
        (st = allocate_arenas(b)) != SES_OK || (st = bind_kernels(b)) != SES_OK ||
        (st = ses__plan_streams(b->s, c)) != SES_OK)
        return st;
    return make_summary(b);
}

static ses_status_t compile_with(ses_plan_t *plan, ses_tensor_t *const *feeds, ses_scope_t *scope,
                                 int types_only, int *out_deferred) {
    ses_session_t *s = plan->session;
    const ses_graph_t *g = s->graph;
    builder_t b;
    ses__pruned_t pruned;
    ses__compiled_t *c;
    ses_status_t st;

    memset(&b, 0, sizeof b);
    b.only_device = SIZE_MAX;
    st = ses__prune(g, plan->fetches, plan->n_fetches, plan->fed, plan->n_fed, plan->targets,
                    plan->n_targets, &pruned);
    if (st != SES_OK)
        return st;
    /* Fed values must match what their placeholders declare. */
    for (size_t i = 0; i < plan->n_fed; i++) {
        const ses_node_t *p = plan->fed[i].node;
        const ses_tensor_t *t = feeds[i];
        int ok = 1;
        if (t->home) {
            char what[300];
            size_t d;
            snprintf(what, sizeof what, "feed for \"%s\"", p->name);
            st = ses__device_tensor_locate(s, t, what, &d);
            if (st != SES_OK) {
                ses__pruned_clear(&pruned);
                return st;
            }
        }
        if (p->kind != SES__NODE_PLACEHOLDER)
            continue;
        ok = t->dtype == p->dtype && t->rank == p->rank;
        for (uint32_t d = 0; ok && d < p->rank; d++)
            ok = p->dims[d] == -1 || p->dims[d] == t->dims[d];
        if (!ok) {
            ses__type_t want, got;
            char a[128], bb[128];
            int any = 0;
            for (uint32_t d = 0; d < p->rank; d++)
                any |= p->dims[d] == -1;
            memset(&want, 0, sizeof want);
            want.dtype = p->dtype;
            want.rank = p->rank;
            memcpy(want.dims, p->dims, sizeof want.dims);
            type_of_tensor(t, &got);
            ses__pruned_clear(&pruned);
            return ses__fail(SES_INVALID_ARGUMENT,
                             "feed for placeholder \"%s\": expected %s%s, got %s", p->name,
                             ses__type_format(&want, a, sizeof a), any ? " (-1: any size)" : "",
                             ses__type_format(&got, bb, sizeof bb));
        }
    }
    st = order_inplace_last(&pruned);
    if (st != SES_OK) {
        ses__pruned_clear(&pruned);
        return st;
    }
    if (s->options.fusion) {
        st = ses__fuse_find(plan, &pruned, g->n_nodes, &b.fusions);
        if (st != SES_OK) {
            ses__pruned_clear(&pruned);
            return st;
        }
    }
    c = ses__calloc(1, sizeof *c);
    b.s = s;
    b.plan = plan;
    b.c = c;
    b.feeds = feeds;
    b.scope = scope;
    b.types_only = types_only;
    /* Layout: a session whose one device is the CPU; one reorder at most per node. */
    b.layout = s->options.layout && s->n_devices == 1;
    b.fold = s->options.fold != 0;
    b.next_id = g->n_nodes + SES__FUSION_IDS * b.fusions.count;
    b.id_limit = b.next_id + g->n_nodes;
    b.slot_of = ses__calloc(b.id_limit * SES__MAX_OUTPUTS + 1, sizeof *b.slot_of);
    b.per_device = ses__calloc(s->n_devices, sizeof *b.per_device);
    if (c) {
        c->fetch_slots = ses__calloc(plan->n_fetches + 1, sizeof *c->fetch_slots);
        c->arena_bytes = ses__calloc(s->n_devices, sizeof *c->arena_bytes);
        c->arenas = ses__calloc(s->n_devices, sizeof *c->arenas);
        c->placed_nodes = ses__calloc(pruned.n_nodes + 1, sizeof *c->placed_nodes);
        c->placed_devices = ses__calloc(pruned.n_nodes + 1, sizeof *c->placed_devices);
    }
    if (!c || !b.slot_of || !b.per_device || !c->fetch_slots || !c->arena_bytes || !c->arenas ||
        !c->placed_nodes || !c->placed_devices)
        st = ses__fail(SES_OUT_OF_MEMORY, "compile: out of memory");
    else
        st = build(&b, &pruned);
    free(b.slot_of);
    free(b.needed);
    free(b.per_device);
    free(b.summary);
    ses__fusions_clear(&b.fusions);
    ses__pruned_clear(&pruned);
    if (out_deferred)
        *out_deferred = b.deferred;
    if (st != SES_OK) {
        char message[2048];
        snprintf(message, sizeof message, "%s", ses_last_error());
        ses__compiled_free(s, c);
        return ses__fail(st, "%s", message);
    }
    ses__compiled_free(s, plan->compiled);
    plan->compiled = c;
    ses__session_log(s, SES__LOG_DEBUG, "compiled a plan of %zu steps; %s", c->n_steps,
                     c->placement);
    return SES_OK;
}

ses_status_t ses__compile(ses_plan_t *plan, ses_tensor_t *const *feeds, ses_scope_t *scope) {
    return compile_with(plan, feeds, scope, 0, NULL);
}

/* The type a fed edge will have at every run, when the graph says it: a placeholder's declared
 * type without a -1, a constant's, a variable's in @p scope. 0 when only a run can tell. */
static int declared_type(const ses_edge_t *edge, ses_scope_t *scope, ses_tensor_t *out) {
    const ses_node_t *n = edge->node;
    ses_tensor_t *value = NULL;

    memset(out, 0, sizeof *out);
    switch (n->kind) {
    case SES__NODE_PLACEHOLDER:
        for (uint32_t d = 0; d < n->rank; d++)
            if (n->dims[d] < 0)
                return 0;
        out->dtype = n->dtype;
        out->rank = n->rank;
        memcpy(out->dims, n->dims, n->rank * sizeof *n->dims);
        break;
    case SES__NODE_CONSTANT:
        value = ses_tensor_retain(n->value);
        break;
    case SES__NODE_VARIABLE:
        if (ses__scope_find_raw(scope, n->name, &value) != SES_OK)
            return 0;
        break;
    default:
        return 0;
    }
    if (value) {
        out->dtype = value->dtype;
        out->rank = value->rank;
        memcpy(out->dims, value->dims, value->rank * sizeof *value->dims);
        ses_tensor_release(value);
    }
    return ses__tensor_check_shape("compile", out->dtype, out->rank, out->dims, &out->count,
                                   &out->bytes) == SES_OK;
}

ses_status_t ses__compile_declared(ses_plan_t *plan, ses_scope_t *scope, int *out_compiled) {
    ses_tensor_t small[8], *types = small;
    ses_tensor_t *feeds_small[8], **feeds = feeds_small;
    ses_status_t st = SES_OK;
    int known = 1, deferred = 0;

    *out_compiled = 0;
    if (plan->n_fed > 8) {
        types = ses__calloc(plan->n_fed, sizeof *types);
        feeds = ses__calloc(plan->n_fed, sizeof *feeds);
        if (!types || !feeds) {
            st = ses__fail(SES_OUT_OF_MEMORY, "compile: out of memory for %zu feeds", plan->n_fed);
            goto done;
        }
    }
    /* Stand-ins that carry only a type: data is NULL, and nothing reads it at compile time but
     * the inference of a value input, which defers instead (types_only). */
    for (size_t i = 0; i < plan->n_fed && known; i++) {
        known = declared_type(&plan->fed[i], scope, &types[i]);
        feeds[i] = &types[i];
    }
    if (!known)
        goto done;
    st = compile_with(plan, feeds, scope, 1, &deferred);
    if (st == SES_OK)
        *out_compiled = 1;
    else if (deferred) /* not an error: only a run's values can tell */
        st = SES_OK;

done:
    if (types != small) {
        free(types);
        free(feeds);
    }
    return st;
}

void ses__compiled_free(ses_session_t *s, ses__compiled_t *c) {
    if (!c)
        return;
    ses__plan_streams_free(s, c);
    for (size_t i = 0; i < c->n_steps; i++) {
        ses__step_t *step = &c->steps[i];
        if (step->kind == SES__STEP_KERNEL && step->state && step->kernel->destroy)
            step->kernel->destroy(s->devices[step->device].handle, step->state);
        if (step->descs)
            free((void *)step->descs[0].dims);
        free(step->descs);
        ses__attrs_clear(&step->kernel_attrs);
        free(step->args);
        free(step->buffers);
        free(step->offsets);
        free(step->scratch);
    }
    for (size_t d = 0; c->arenas && d < s->n_devices; d++)
        if (c->arenas[d])
            s->devices[d].api->free(s->devices[d].handle, c->arenas[d]);
    free(c->steps);
    for (size_t i = 0; i < c->n_slots; i++) {
        free(c->slots[i].value_seen);
        ses_tensor_release(c->slots[i].folded);
    }
    free(c->slots);
    free(c->fetch_slots);
    free(c->arena_bytes);
    free(c->arenas);
    free(c->placement);
    free(c->placed_nodes);
    free(c->placed_devices);
    for (size_t i = 0; i < c->n_fused_nodes; i++)
        ses__node_free(c->fused_nodes[i]);
    free(c->fused_nodes);
    for (size_t i = 0; i < c->n_layout_nodes; i++)
        ses__node_free(c->layout_nodes[i]);
    free(c->layout_nodes);
    free(c);
}

int ses__compiled_matches(const ses_plan_t *plan, ses_tensor_t *const *feeds, ses_scope_t *scope) {
    const ses__compiled_t *c = plan->compiled;

    if (!c || plan->graph_version != ses_graph_version(plan->session->graph))
        return 0;
    for (size_t i = 0; i < c->n_slots; i++) {
        const ses__slot_t *slot = &c->slots[i];
        ses__type_t t;
        if (slot->kind == SES__SLOT_FEED) {
            const ses_tensor_t *f = feeds[slot->feed_index];
            /* Moved between the host and a device (or to another session: compile says so). */
            if (f->home ? f->home != plan->session->home || f->home_device != slot->device
                        : slot->device != plan->session->n_devices - 1)
                return 0;
            type_of_tensor(f, &t);
            if (slot->value_seen && types_equal(&t, &slot->type) &&
                memcmp(feeds[slot->feed_index]->data, slot->value_seen, slot->bytes) != 0)
                return 0;
        } else if (slot->kind == SES__SLOT_VARIABLE) {
            ses_tensor_t *value = NULL;
            if (ses__scope_find_raw(scope, slot->edge.node->name, &value) != SES_OK)
                return 0;
            type_of_tensor(value, &t);
            ses_tensor_release(value);
        } else {
            continue;
        }
        if (!types_equal(&t, &slot->type))
            return 0;
    }
    return 1;
}
