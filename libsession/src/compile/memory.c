/*
 * Memory planning: each device gets one arena per plan, and every computed value an offset in
 * it. A value's bytes are reused once its last reader has run (first fit among the gaps left by
 * values whose lifetimes overlap it). Values that are fetched live to the end. The values of a
 * group (an AllReduce bucket) are placed back to back, as one block that lives from the first
 * one's writer to the last one's reader, so that one collective sums them all. An output whose
 * kernel allows it (DRV-86) takes the very bytes of an input that dies at its node instead; and
 * a Concat whose output is its inputs one after the other (every dimension before its axis 1)
 * gets its inputs placed back to back as a group, its output on the group's bytes, and nothing
 * to run.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "plan.h"

typedef struct block {
    uint64_t offset;
    uint64_t end;
} block_t;

static int compare_blocks(const void *a, const void *b) {
    const block_t *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static uint64_t align_up(uint64_t v, uint64_t a) {
    return (v + a - 1) / a * a;
}

static uint64_t footprint(const ses__slot_t *slot) {
    return align_up(slot->bytes ? slot->bytes : 1, SES__ARENA_ALIGNMENT);
}

static int in_group(const ses__slot_t *slot, const ses__slot_t *first) {
    return slot->kind == SES__SLOT_ARENA && first->group != SIZE_MAX &&
           slot->group == first->group && slot->device == first->device;
}

/*
 * The lowest offset where @p size bytes fit on @p device beside every value already placed
 * whose lifetime meets [first, last].
 */
static uint64_t first_fit(const ses__compiled_t *c, const unsigned char *placed, block_t *busy,
                          size_t device, uint64_t size, size_t first, size_t last) {
    size_t n_busy = 0;
    uint64_t offset = 0;

    for (size_t j = 0; j < c->n_slots; j++) {
        const ses__slot_t *other = &c->slots[j];
        if (!placed[j] || other->device != device)
            continue;
        /* Lifetimes [first, last] overlap: both are live at some step. */
        if (other->first_step <= last && first <= other->last_step)
            busy[n_busy++] = (block_t){other->offset, other->offset + footprint(other)};
    }
    qsort(busy, n_busy, sizeof *busy, compare_blocks);
    for (size_t j = 0; j < n_busy; j++) {
        if (busy[j].offset >= offset + size)
            break;
        if (busy[j].end > offset)
            offset = busy[j].end;
    }
    return offset;
}

/*
 * Whether Concat step @p step's output can be its inputs' bytes: every dimension before the axis
 * is 1, so the output is input 0's bytes, then input 1's, and so on; each input an arena value
 * of the output's device and dtype in no group, made in slot order (the order a group is placed
 * in), and all but the last a whole number of arena alignments long (no gap between them).
 */
static int concat_fits(const ses__compiled_t *c, const ses__step_t *step) {
    const size_t n_in = step->drv_node.n_inputs;
    uint64_t count = 1, total = 0;
    int64_t axis = 0;

    if (step->kind != SES__STEP_KERNEL || strcmp(step->drv_node.op, "Concat") != 0 || n_in < 2 ||
        step->n_args != n_in + 1 ||
        step->drv_node.attr(&step->drv_node, "axis", SES_DRV_ATTR_INT, &count, &axis) !=
            SES_DRV_OK)
        return 0;
    const ses__slot_t *out = &c->slots[step->args[n_in]];
    if (out->kind != SES__SLOT_ARENA || out->group != SIZE_MAX || out->alias_of)
        return 0;
    if (axis < 0)
        axis += (int64_t)out->type.rank;
    if (axis < 0 || axis >= (int64_t)out->type.rank)
        return 0;
    for (int64_t d = 0; d < axis; d++)
        if (out->type.dims[d] != 1)
            return 0;
    for (size_t i = 0; i < n_in; i++) {
        const ses__slot_t *in = &c->slots[step->args[i]];
        if (in->kind != SES__SLOT_ARENA || in->group != SIZE_MAX || in->alias_of ||
            in->device != out->device || in->type.dtype != out->type.dtype || !in->bytes ||
            (i > 0 && step->args[i] <= step->args[i - 1]) ||
            (i + 1 < n_in && in->bytes % SES__ARENA_ALIGNMENT != 0))
            return 0;
        total += in->bytes;
    }
    return total == out->bytes;
}

/* Makes each Concat that concat_fits allows a group of its inputs, living as long as its output,
 * with the output on the group's bytes and nothing to run. */
static void concats_in_place(ses_session_t *s, ses__compiled_t *c) {
    for (size_t i = 0; i < c->n_steps && s->options.in_place; i++) {
        ses__step_t *step = &c->steps[i];
        if (!concat_fits(c, step))
            continue;
        const size_t n_in = step->drv_node.n_inputs, first = step->args[0];
        ses__slot_t *out = &c->slots[step->args[n_in]];
        for (size_t k = 0; k < n_in; k++) {
            ses__slot_t *in = &c->slots[step->args[k]];
            in->group = first;
            if (in->last_step < out->last_step)
                in->last_step = out->last_step;
        }
        out->alias_of = first + 1;
        step->kind = SES__STEP_NONE;
        c->n_concats_in_place++;
    }
}

/* Whether a step's kernel copies its input 0 to its output unchanged when both have the same
 * bytes: the ops that only rename a shape, and the ...Like ops with nothing to sum or expand
 * (a ReduceSumLike whose input already has the output's element count has every summed
 * dimension 1: the gradient of an Add whose operand has the output's shape). Not Identity:
 * a graph that asks for one asks for a copy, and it is what the fake drivers' tests run as
 * the simplest kernel. */
static int copies_input(const ses__step_t *step) {
    static const char *const ops[] = {"Reshape",   "Flatten",       "Squeeze",
                                      "Unsqueeze", "ReduceSumLike", "ExpandLike"};

    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!strcmp(step->drv_node.op, ops[i]))
            return 1;
    return 0;
}

/* Whether some step writes slot @p i other than the one that makes it: an AllReduce summing
 * in place (its output is its input). */
static int overwritten(const ses__compiled_t *c, size_t i) {
    for (size_t k = 0; k < c->n_steps; k++) {
        const ses__step_t *step = &c->steps[k];
        /* Arguments are inputs then outputs; a copy's are its source and its destination. */
        const size_t n_in = step->kind == SES__STEP_KERNEL ? step->drv_node.n_inputs
                            : step->kind == SES__STEP_COPY ? 1
                            : step->node                   ? step->node->n_inputs
                                                           : 0;
        if (k == c->slots[i].first_step || n_in > step->n_args)
            continue;
        for (size_t o = n_in; o < step->n_args; o++)
            if (step->args[o] == i)
                return 1;
    }
    return 0;
}

/*
 * Makes each step that copies_input a view: its output on its input's bytes and nothing to run,
 * where the input is an arena value of the same dtype and size on the same device, in no group,
 * that no other step writes; the input (or the value it is itself a view of) then lives as long
 * as the view. Its bytes are never an in-place output's (donor_of) while a view reads them.
 */
static void views_in_place(ses_session_t *s, ses__compiled_t *c) {
    for (size_t i = 0; i < c->n_steps && s->options.in_place; i++) {
        ses__step_t *step = &c->steps[i];
        const size_t n_in = step->drv_node.n_inputs;
        if (step->kind != SES__STEP_KERNEL || n_in < 1 || step->n_args != n_in + 1 ||
            !copies_input(step))
            continue;
        ses__slot_t *out = &c->slots[step->args[n_in]];
        size_t root = step->args[0];
        if (c->slots[root].alias_of && c->slots[root].viewed == 0)
            continue; /* a Concat's output */
        if (c->slots[root].alias_of)
            root = c->slots[root].alias_of - 1;
        ses__slot_t *in = &c->slots[root];
        if (out->kind != SES__SLOT_ARENA || in->kind != SES__SLOT_ARENA || out->group != SIZE_MAX ||
            in->group != SIZE_MAX || out->alias_of || out->blocked || in->blocked ||
            in->device != out->device || in->bytes != out->bytes ||
            in->type.dtype != out->type.dtype || overwritten(c, root))
            continue;
        out->alias_of = root + 1;
        out->viewed = 1;
        in->viewed = 1;
        if (in->last_step < out->last_step)
            in->last_step = out->last_step;
        step->kind = SES__STEP_NONE;
        c->n_views++;
    }
}

/* Whether [offset, offset + size) is free on @p device through [first, last], but for slot
 * @p except (the input whose bytes an output takes over). */
static int range_free(const ses__compiled_t *c, const unsigned char *placed, size_t device,
                      uint64_t offset, uint64_t size, size_t first, size_t last, size_t except) {
    for (size_t j = 0; j < c->n_slots; j++) {
        const ses__slot_t *other = &c->slots[j];
        if (!placed[j] || j == except || other->device != device || other->kind != SES__SLOT_ARENA)
            continue;
        if (other->first_step <= last && first <= other->last_step &&
            other->offset < offset + size && offset < other->offset + footprint(other))
            return 0;
    }
    return 1;
}

/*
 * The input whose bytes output slot @p i may take (DRV-86), or SIZE_MAX: its kernel allows it
 * (reuse_inputs, from a driver of ABI 1.4 or later), the input is an arena value of the same
 * dtype and size on the same device that no later step reads, not another input of the node too,
 * and its bytes are free for the output's whole life.
 */
static size_t donor_of(ses_session_t *s, const ses__compiled_t *c, const unsigned char *placed,
                       size_t i) {
    const ses__slot_t *slot = &c->slots[i];
    if (!s->options.in_place || slot->kind != SES__SLOT_ARENA || slot->group != SIZE_MAX ||
        slot->first_step >= c->n_steps)
        return SIZE_MAX;
    const ses__step_t *step = &c->steps[slot->first_step];
    const ses__device_ctx_t *dev = &s->devices[step->device];
    if (step->kind != SES__STEP_KERNEL || dev->abi_minor < 4 ||
        dev->kernel_stride < offsetof(ses_drv_kernel_t, reuse_inputs) + sizeof(void *) ||
        !step->kernel->reuse_inputs)
        return SIZE_MAX;
    const size_t n_in = step->drv_node.n_inputs;
    size_t k = n_in;
    while (k < step->n_args && step->args[k] != i)
        k++;
    if (k == step->n_args)
        return SIZE_MAX;
    const uint64_t mask =
        step->kernel->reuse_inputs(dev->handle, &step->drv_node, (uint32_t)(k - n_in));
    for (size_t in = 0; in < n_in && in < 64; in++) {
        const size_t d = step->args[in];
        const ses__slot_t *donor = &c->slots[d];
        int shared = 0;
        if (!(mask & (UINT64_C(1) << in)) || !placed[d] || donor->kind != SES__SLOT_ARENA ||
            donor->alias_of || donor->viewed || donor->group != SIZE_MAX ||
            donor->device != slot->device || donor->last_step != slot->first_step ||
            donor->bytes != slot->bytes || donor->type.dtype != slot->type.dtype)
            continue;
        for (size_t other = 0; other < n_in; other++)
            shared |= other != in && step->args[other] == d;
        if (!shared && range_free(c, placed, slot->device, donor->offset, footprint(slot),
                                  slot->first_step, slot->last_step, d))
            return d;
    }
    return SIZE_MAX;
}

ses_status_t ses__plan_memory(ses_session_t *s, ses__compiled_t *c) {
    block_t *busy = ses__malloc((c->n_slots + 1) * sizeof *busy);
    unsigned char *placed = ses__calloc(c->n_slots + 1, 1);

    if (!busy || !placed) {
        free(busy);
        free(placed);
        return ses__fail(SES_OUT_OF_MEMORY, "compile: out of memory planning memory");
    }
    for (size_t d = 0; d < s->n_devices; d++)
        c->arena_bytes[d] = 0;
    concats_in_place(s, c);
    views_in_place(s, c);
    /* Slots are created in step order, so earlier slots are placed first; a group is placed
     * whole when its first slot comes. */
    for (size_t i = 0; i < c->n_slots; i++) {
        ses__slot_t *slot = &c->slots[i];
        size_t first = slot->first_step, last = slot->last_step;
        uint64_t offset, size = 0;

        if (slot->kind != SES__SLOT_ARENA || placed[i])
            continue;
        if (slot->alias_of) {
            /* A Concat's output (its inputs, placed back to back before it) or a view (its
             * input, placed before it: slots are made in step order). */
            slot->offset = c->slots[slot->alias_of - 1].offset;
            placed[i] = 1;
            continue;
        }
        const size_t donor = donor_of(s, c, placed, i);
        if (donor != SIZE_MAX) {
            /* Written over an input that dies here: its bytes, already within the arena. */
            slot->offset = c->slots[donor].offset;
            placed[i] = 1;
            c->n_in_place++;
            continue;
        }
        if (slot->group == SIZE_MAX) {
            size = footprint(slot);
        } else {
            for (size_t k = i; k < c->n_slots; k++) {
                const ses__slot_t *member = &c->slots[k];
                if (!in_group(member, slot))
                    continue;
                size += footprint(member);
                first = member->first_step < first ? member->first_step : first;
                last = member->last_step > last ? member->last_step : last;
            }
        }
        offset = first_fit(c, placed, busy, slot->device, size, first, last);
        for (size_t k = i; k < c->n_slots; k++) {
            ses__slot_t *member = &c->slots[k];
            if (k != i && (slot->group == SIZE_MAX || !in_group(member, slot)))
                continue;
            /* Each member lives as long as the block, so later values keep out of all of it. */
            member->offset = offset;
            member->first_step = first;
            member->last_step = last;
            offset += footprint(member);
            placed[k] = 1;
            if (slot->group == SIZE_MAX)
                break;
        }
        if (offset > c->arena_bytes[slot->device])
            c->arena_bytes[slot->device] = offset;
    }
    free(busy);
    free(placed);
    return SES_OK;
}
