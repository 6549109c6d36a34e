/*
 * Memory planning: each device gets one arena per plan, and every computed value an offset in
 * it. A value's bytes are reused once its last reader has run (first fit among the gaps left by
 * values whose lifetimes overlap it). Values that are fetched live to the end.
 */
#include <stdlib.h>

#include "../error.h"
#include "plan.h"

/* Offsets are aligned so that any dtype and SIMD loads are aligned. */
#define ARENA_ALIGNMENT 64

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

ses_status_t ses__plan_memory(ses_session_t *s, ses__compiled_t *c) {
    block_t *busy = ses__malloc((c->n_slots + 1) * sizeof *busy);

    if (!busy)
        return ses__fail(SES_OUT_OF_MEMORY, "compile: out of memory planning memory");
    for (size_t d = 0; d < s->n_devices; d++)
        c->arena_bytes[d] = 0;
    /* Slots are created in step order, so earlier slots are placed first. */
    for (size_t i = 0; i < c->n_slots; i++) {
        ses__slot_t *slot = &c->slots[i];
        size_t n_busy = 0;
        uint64_t offset = 0, size = align_up(slot->bytes ? slot->bytes : 1, ARENA_ALIGNMENT);

        if (slot->kind != SES__SLOT_ARENA)
            continue;
        for (size_t j = 0; j < i; j++) {
            const ses__slot_t *other = &c->slots[j];
            if (other->kind != SES__SLOT_ARENA || other->device != slot->device)
                continue;
            /* Lifetimes [first, last] overlap: both are live at some step. */
            if (other->first_step <= slot->last_step && slot->first_step <= other->last_step)
                busy[n_busy++] = (block_t){other->offset,
                                           other->offset + align_up(other->bytes ? other->bytes : 1,
                                                                    ARENA_ALIGNMENT)};
        }
        qsort(busy, n_busy, sizeof *busy, compare_blocks);
        for (size_t j = 0; j < n_busy; j++) {
            if (busy[j].offset >= offset + size)
                break;
            if (busy[j].end > offset)
                offset = busy[j].end;
        }
        slot->offset = offset;
        if (offset + size > c->arena_bytes[slot->device])
            c->arena_bytes[slot->device] = offset + size;
    }
    free(busy);
    return SES_OK;
}
