/*
 * Strided iteration: a dense row-major output computed row by row, each input read through
 * per-dimension element strides. Broadcasting is stride 0, Transpose permutes the strides,
 * Slice scales them (negative for a backwards step). Strides are precomputed once; the walk
 * divides only once per chunk, to find where the chunk starts, and then carries an odometer.
 */
#include <stdint.h>
#include <string.h>

#include "cpu_internal.h"

void cpu__strided_merge(cpu__strided_t *s) {
    uint32_t r = 0;

    /* Size-1 dims move nothing, whatever their strides. */
    for (uint32_t d = 0; d < s->rank; d++) {
        if (s->dims[d] == 1)
            continue;
        s->dims[r] = s->dims[d];
        for (uint32_t k = 0; k < s->n_in; k++)
            s->stride[k][r] = s->stride[k][d];
        r++;
    }
    /* Dims d and d+1 are one dim when every input steps across d as far as across all of d+1;
     * for a broadcast input both strides are 0, which also chains. */
    uint32_t m = 0;
    for (uint32_t d = 0; d < r; d++) {
        int chains = m > 0;
        for (uint32_t k = 0; chains && k < s->n_in; k++)
            if (s->stride[k][m - 1] != s->stride[k][d] * s->dims[d])
                chains = 0;
        if (chains) {
            s->dims[m - 1] *= s->dims[d];
            for (uint32_t k = 0; k < s->n_in; k++)
                s->stride[k][m - 1] = s->stride[k][d];
            continue;
        }
        s->dims[m] = s->dims[d];
        for (uint32_t k = 0; k < s->n_in; k++)
            s->stride[k][m] = s->stride[k][d];
        m++;
    }
    if (m == 0) {
        /* A single element (or a scalar): one dim of 1. */
        s->dims[0] = 1;
        for (uint32_t k = 0; k < s->n_in; k++)
            s->stride[k][0] = 0;
        m = 1;
    }
    s->rank = m;
}

void cpu__strided_run(const cpu__strided_t *s, uint64_t begin, uint64_t end, cpu__row_fn row,
                      const void *params) {
    const uint32_t last = s->rank - 1;
    const uint64_t inner = (uint64_t)s->dims[last];
    int64_t idx[CPU__MAX_RANK];
    int64_t off[CPU__MAX_INPUTS] = {0};
    int64_t step[CPU__MAX_INPUTS] = {0};
    const void *in[CPU__MAX_INPUTS] = {0};

    if (begin >= end || inner == 0)
        return;
    /* Where the chunk starts: the one division of the walk. */
    uint64_t r = begin / inner;
    uint64_t col = begin % inner;
    for (uint32_t d = last; d-- > 0;) {
        idx[d] = (int64_t)(r % (uint64_t)s->dims[d]);
        r /= (uint64_t)s->dims[d];
    }
    for (uint32_t k = 0; k < s->n_in; k++) {
        for (uint32_t d = 0; d < last; d++)
            off[k] += idx[d] * s->stride[k][d];
        step[k] = s->stride[k][last];
    }

    unsigned char *out = s->out + begin * s->out_esize;
    uint64_t pos = begin;
    while (pos < end) {
        uint64_t n = inner - col;
        if (n > end - pos)
            n = end - pos;
        for (uint32_t k = 0; k < s->n_in; k++)
            in[k] = s->base[k] + (off[k] + (int64_t)col * step[k]) * (int64_t)s->esize[k];
        row(out, in, step, (size_t)n, params);
        out += n * s->out_esize;
        pos += n;
        col = 0;
        /* The odometer over the outer dims. */
        for (uint32_t d = last; d-- > 0;) {
            for (uint32_t k = 0; k < s->n_in; k++)
                off[k] += s->stride[k][d];
            if (++idx[d] < s->dims[d])
                break;
            for (uint32_t k = 0; k < s->n_in; k++)
                off[k] -= s->stride[k][d] * s->dims[d];
            idx[d] = 0;
        }
    }
}

typedef struct cpu__strided_job {
    const cpu__strided_t *s;
    cpu__row_fn row;
    const void *params;
} cpu__strided_job_t;

static void cpu__strided_task(void *ctx, uint64_t begin, uint64_t end) {
    const cpu__strided_job_t *job = ctx;
    cpu__strided_run(job->s, begin, end, job->row, job->params);
}

void cpu__strided_parallel(const cpu__call_t *call, const cpu__strided_t *s, cpu__row_fn row,
                           const void *params, uint64_t cost) {
    cpu__strided_job_t job = {s, row, params};
    cpu__parallel(call, s->count, cost, cpu__strided_task, &job);
}

int32_t cpu__broadcast_setup(const cpu__call_t *call, uint32_t n_in, cpu__strided_t *s) {
    const cpu__tensor_t *out = &call->out;
    uint32_t max_rank = 0;
    int ok = 1;
    int32_t st;

    if ((st = cpu__check_rank(call, "output 0", out)) != SES_DRV_OK)
        return st;
    for (uint32_t k = 0; k < n_in; k++) {
        char role[16] = "input 0";
        role[6] = (char)('0' + k);
        if ((st = cpu__check_rank(call, role, &call->in[k])) != SES_DRV_OK)
            return st;
        if (call->in[k].rank > max_rank)
            max_rank = call->in[k].rank;
    }
    if (out->rank != max_rank)
        ok = 0;
    memset(s, 0, sizeof *s);
    s->rank = out->rank;
    s->n_in = n_in;
    for (uint32_t d = 0; ok && d < out->rank; d++) {
        /* The broadcast of this dim: the one size other than 1 among the inputs, else 1. */
        int64_t want = 1;
        for (uint32_t k = 0; k < n_in; k++) {
            const cpu__tensor_t *t = &call->in[k];
            uint32_t lead = out->rank - t->rank;
            if (d < lead)
                continue;
            int64_t dim = t->dims[d - lead];
            if (dim == 1)
                continue;
            if (want != 1 && want != dim)
                ok = 0;
            want = dim;
        }
        if (out->dims[d] != want)
            ok = 0;
        s->dims[d] = out->dims[d];
    }
    if (!ok) {
        char shapes[3][96], o[96];
        for (uint32_t k = 0; k < n_in; k++)
            cpu__format_dims(call->in[k].dims, call->in[k].rank, shapes[k], sizeof shapes[k]);
        cpu__format_dims(out->dims, out->rank, o, sizeof o);
        if (n_in == 2)
            return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                  "shapes do not broadcast to the output: input 0 is %s, "
                                  "input 1 is %s, output is %s",
                                  shapes[0], shapes[1], o);
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "shapes do not broadcast to the output: input 0 is %s, input 1 is "
                              "%s, input 2 is %s, output is %s",
                              shapes[0], shapes[1], shapes[2], o);
    }
    for (uint32_t k = 0; k < n_in; k++) {
        const cpu__tensor_t *t = &call->in[k];
        uint32_t lead = out->rank - t->rank;
        int64_t stride = 1;
        for (uint32_t d = out->rank; d-- > 0;) {
            if (d < lead) {
                s->stride[k][d] = 0;
                continue;
            }
            int64_t dim = t->dims[d - lead];
            s->stride[k][d] = dim == 1 ? 0 : stride;
            stride *= dim;
        }
        s->base[k] = t->data;
        s->esize[k] = t->esize;
    }
    s->out = out->data;
    s->out_esize = out->esize;
    s->count = out->count;
    cpu__strided_merge(s);
    return SES_DRV_OK;
}
