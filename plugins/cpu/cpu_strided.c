/*
 * Strided iteration: a dense row-major output computed row by row, each input read through
 * per-dimension element strides. Broadcasting is stride 0, Transpose permutes the strides,
 * Slice scales them (negative for a backwards step). Strides are precomputed once; the walk
 * divides only once per chunk, to find where the chunk starts, and then carries an odometer.
 */
#include <stdint.h>

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
    if (last == 0) {
        /* One row (elementwise ops without broadcasting get here): no odometer. */
        for (uint32_t k = 0; k < s->n_in; k++) {
            step[k] = s->stride[k][0];
            in[k] = s->base[k] + (int64_t)begin * step[k] * (int64_t)s->esize[k];
        }
        row(s->out + begin * s->out_esize, in, step, (size_t)(end - begin), params);
        return;
    }
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
    /* Small work runs here directly, as cpu__parallel would, without the job. */
    if (cpu__parallel_small(s->count, cost)) {
        cpu__strided_run(s, 0, s->count, row, params);
        return;
    }
    cpu__strided_job_t job = {s, row, params};
    cpu__parallel(call, s->count, cost, cpu__strided_task, &job);
}

/*
 * The common case of broadcasting: some input has the output's shape and every other input is
 * a single element of no larger rank. The output is then one row that each input walks with
 * step 1 or 0, stored in @p step. Zero when that is not so.
 */
int cpu__broadcast_flat(const cpu__tensor_t *in, uint32_t n_in, const cpu__tensor_t *out,
                        int64_t *step) {
    int same = 0;

    for (uint32_t k = 0; k < n_in; k++) {
        if (cpu__same_shape(&in[k], out)) {
            step[k] = 1;
            same = 1;
        } else if (in[k].count == 1 && in[k].rank <= out->rank) {
            step[k] = 0; /* all its dims are 1 */
        } else {
            return 0;
        }
    }
    return same;
}

int cpu__broadcast_plan(const cpu__tensor_t *in, uint32_t n_in, const cpu__tensor_t *out,
                        cpu__strided_t *s) {
    uint32_t max_rank = 0;

    for (uint32_t k = 0; k < n_in; k++)
        if (in[k].rank > max_rank)
            max_rank = in[k].rank;
    if (out->rank != max_rank)
        return 0;
    /* No memset of the whole struct: every field the walk reads is written below. */
    s->rank = out->rank;
    s->n_in = n_in;
    for (uint32_t d = 0; d < out->rank; d++) {
        /* The broadcast of this dim: the one size other than 1 among the inputs, else 1. */
        int64_t want = 1;
        for (uint32_t k = 0; k < n_in; k++) {
            uint32_t lead = out->rank - in[k].rank;
            if (d < lead)
                continue;
            int64_t dim = in[k].dims[d - lead];
            if (dim == 1)
                continue;
            if (want != 1 && want != dim)
                return 0;
            want = dim;
        }
        if (out->dims[d] != want)
            return 0;
        s->dims[d] = out->dims[d];
    }
    for (uint32_t k = 0; k < n_in; k++) {
        uint32_t lead = out->rank - in[k].rank;
        int64_t stride = 1;
        for (uint32_t d = out->rank; d-- > 0;) {
            if (d < lead) {
                s->stride[k][d] = 0;
                continue;
            }
            int64_t dim = in[k].dims[d - lead];
            s->stride[k][d] = dim == 1 ? 0 : stride;
            stride *= dim;
        }
        s->base[k] = in[k].data;
        s->esize[k] = in[k].esize;
    }
    s->out = out->data;
    s->out_esize = out->esize;
    s->count = out->count;
    cpu__strided_merge(s);
    return 1;
}

/* Sets up @p s as one row over the call's arguments, input k moving @p step[k] per element. */
static void cpu__walk_flat(const cpu__call_t *call, uint32_t n_in, const int64_t *step,
                           cpu__strided_t *s) {
    for (uint32_t k = 0; k < n_in; k++) {
        s->stride[k][0] = step[k];
        s->base[k] = call->in[k].data;
        s->esize[k] = call->in[k].esize;
    }
    s->rank = 1;
    s->n_in = n_in;
    s->dims[0] = (int64_t)call->out.count;
    s->out = call->out.data;
    s->out_esize = call->out.esize;
    s->count = call->out.count;
}

/* Sets up @p s as the prepared walk @p w over the call's arguments. */
static void cpu__walk_prepared(const cpu__call_t *call, uint32_t n_in, const cpu__strided_t *w,
                               cpu__strided_t *s) {
    s->rank = w->rank;
    s->n_in = n_in;
    for (uint32_t d = 0; d < w->rank; d++)
        s->dims[d] = w->dims[d];
    for (uint32_t k = 0; k < n_in; k++) {
        for (uint32_t d = 0; d < w->rank; d++)
            s->stride[k][d] = w->stride[k][d];
        s->base[k] = call->in[k].data;
        s->esize[k] = call->in[k].esize;
    }
    s->out = call->out.data;
    s->out_esize = call->out.esize;
    s->count = call->out.count;
}

int32_t cpu__broadcast_setup(const cpu__call_t *call, uint32_t n_in, cpu__strided_t *s) {
    const cpu__prep_t *prep = call->prep;
    const cpu__tensor_t *out = &call->out;
    int64_t step[CPU__MAX_INPUTS];
    int32_t st;

    /* What create worked out for these very shapes. */
    if (prep && prep->walk == CPU__WALK_FLAT) {
        cpu__walk_flat(call, n_in, prep->flat_step, s);
        return SES_DRV_OK;
    }
    if (prep && prep->walk == CPU__WALK_STRIDED) {
        cpu__walk_prepared(call, n_in, prep->strided, s);
        return SES_DRV_OK;
    }
    /* Ranks over the limit are refused below, with their message. */
    if (out->rank <= CPU__MAX_RANK && cpu__broadcast_flat(call->in, n_in, out, step)) {
        cpu__walk_flat(call, n_in, step, s);
        return SES_DRV_OK;
    }
    if ((st = cpu__check_rank(call, "output 0", out)) != SES_DRV_OK)
        return st;
    for (uint32_t k = 0; k < n_in; k++) {
        char role[16] = "input 0";
        role[6] = (char)('0' + k);
        if ((st = cpu__check_rank(call, role, &call->in[k])) != SES_DRV_OK)
            return st;
    }
    if (!cpu__broadcast_plan(call->in, n_in, out, s)) {
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
    return SES_DRV_OK;
}
