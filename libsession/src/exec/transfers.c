/*
 * What crosses between the host and devices: every copy a plan makes, and the uploads and
 * read-backs of resident state, counted for the plan (ses_plan_transfers) and its session
 * (ses_session_transfers).
 */
#include <stdatomic.h>

#include "../compile/plan.h"

void ses__count_transfer(ses_session_t *s, ses__compiled_t *c, size_t from, size_t to,
                         uint64_t bytes) {
    const size_t host = s->n_devices - 1;
    size_t kind; /* 0 h2d, 1 d2h, 2 d2d */
    uint64_t *counters;

    if (from == host && to == host)
        return;
    kind = from == host ? 0 : to == host ? 1 : 2;
    atomic_fetch_add(&s->transfers[1 + 2 * kind], bytes);
    atomic_fetch_add(&s->transfers[2 + 2 * kind], 1);
    if (!c || !c->transfers)
        return;
    counters = kind == 0 ? &c->transfers->h2d_bytes
               : kind == 1 ? &c->transfers->d2h_bytes
                           : &c->transfers->d2d_bytes;
    counters[0] += bytes;
    counters[1]++;
}
