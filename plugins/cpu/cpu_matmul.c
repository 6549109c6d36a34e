/*
 * MatMul and Gemm through OpenBLAS's cblas_sgemm / cblas_dgemm (cpu__gemm_call, cpu_gemm.c).
 *
 * OpenBLAS runs its own threads (as many as the device's pool, set by open_device), so these
 * kernels call it from the calling thread and do not use the device's pool: running GEMMs on
 * the pool's workers would oversubscribe the machine.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_act.h"
#include "cpu_dnnl.h"
#include "cpu_internal.h"

/* BLAS takes int dimensions (blasint); anything larger is refused rather than truncated. */
int32_t cpu__check_blas_dims(const cpu__call_t *call, int64_t m, int64_t n, int64_t k) {
    const int64_t max = INT_MAX;

    if (m > max || n > max || k > max)
        return cpu__call_fail(call, SES_DRV_UNIMPLEMENTED,
                              "M=%" PRId64 ", N=%" PRId64 ", K=%" PRId64
                              ": OpenBLAS takes dimensions up to %d",
                              m, n, k, INT_MAX);
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * MatMul: numpy matmul semantics.
 * ------------------------------------------------------------------------------------------- */

int32_t cpu__matmul_shape(const cpu__call_t *call, const cpu__tensor_t *a, const char *a_name,
                          const cpu__tensor_t *b, const char *b_name,
                          const cpu__tensor_t *product, const char *product_name,
                          cpu__matmul_shape_t *sh) {
    int64_t want[CPU__MAX_RANK + 2];
    int32_t st;
    char x[96], y[96], o[96], w[96];

    if (a->rank == 0 || b->rank == 0)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "operands must have rank >= 1: %s is %s, %s is %s", a_name,
                              cpu__format_dims(a->dims, a->rank, x, sizeof x), b_name,
                              cpu__format_dims(b->dims, b->rank, y, sizeof y));
    if ((st = cpu__check_rank(call, a_name, a)) != SES_DRV_OK ||
        (st = cpu__check_rank(call, b_name, b)) != SES_DRV_OK)
        return st;

    /* A 1-D operand is a row (a) or a column (b), and that dim is dropped from the product. */
    memset(sh, 0, sizeof *sh);
    sh->m = a->rank >= 2 ? a->dims[a->rank - 2] : 1;
    sh->k = a->dims[a->rank - 1];
    const int64_t kb = b->rank >= 2 ? b->dims[b->rank - 2] : b->dims[0];
    sh->n = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
    if (sh->k != kb)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "inner dimensions differ: %s is %s, %s is %s", a_name,
                              cpu__format_dims(a->dims, a->rank, x, sizeof x), b_name,
                              cpu__format_dims(b->dims, b->rank, y, sizeof y));

    const uint32_t a_batch = a->rank > 2 ? a->rank - 2 : 0;
    const uint32_t b_batch = b->rank > 2 ? b->rank - 2 : 0;
    const uint32_t n_batch = a_batch > b_batch ? a_batch : b_batch;
    int64_t a_step = 1, b_step = 1;
    sh->n_batch = n_batch;
    sh->n_matrices = 1;
    for (uint32_t d = n_batch; d-- > 0;) {
        int64_t da = d >= n_batch - a_batch ? a->dims[d - (n_batch - a_batch)] : 1;
        int64_t db = d >= n_batch - b_batch ? b->dims[d - (n_batch - b_batch)] : 1;
        if (da != db && da != 1 && db != 1)
            return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                  "batch dimensions do not broadcast: %s is %s, %s is %s", a_name,
                                  cpu__format_dims(a->dims, a->rank, x, sizeof x), b_name,
                                  cpu__format_dims(b->dims, b->rank, y, sizeof y));
        sh->batch[d] = da == 1 ? db : da;
        sh->a_stride[d] = da == 1 ? 0 : a_step;
        sh->b_stride[d] = db == 1 ? 0 : b_step;
        a_step *= da;
        b_step *= db;
        if (da != sh->batch[d])
            sh->a_broadcast = 1;
        if (db != 1)
            sh->b_batched = 1;
        sh->n_matrices *= sh->batch[d];
    }
    uint32_t want_rank = 0;
    for (uint32_t d = 0; d < n_batch; d++)
        want[want_rank++] = sh->batch[d];
    if (a->rank >= 2)
        want[want_rank++] = sh->m;
    if (b->rank >= 2)
        want[want_rank++] = sh->n;
    int ok = product->rank == want_rank;
    for (uint32_t d = 0; ok && d < want_rank; d++)
        if (product->dims[d] != want[d])
            ok = 0;
    if (!ok)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT, "%s is %s, but %s %s times %s %s is %s",
                              product_name,
                              cpu__format_dims(product->dims, product->rank, o, sizeof o), a_name,
                              cpu__format_dims(a->dims, a->rank, x, sizeof x), b_name,
                              cpu__format_dims(b->dims, b->rank, y, sizeof y),
                              cpu__format_dims(want, want_rank, w, sizeof w));
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Constant weights: oneDNN's matmul primitive
 *
 * dnnl_sgemm packs B into its kernel's layout at every call; ONNX Runtime's MLAS packs constant
 * weights once. For f32 MatMul, Gemm and FusedGemm whose input 1 the host marks constant
 * (DRV-85), the driver runs oneDNN's matmul primitive instead (brgemm kernels), with the weights
 * reordered once into the layout it prefers and kept in the node's state while their address
 * stays the same; C as its bias or sum post-op, alpha and the activation as post-ops. It runs
 * on oneDNN's OpenMP threads, as many as the pool's, as the convolution does (cpu_cnn.c).
 * Weights that are not constant keep the sgemm path: nothing is cached for them.
 * ------------------------------------------------------------------------------------------- */

/*
 * Below this many multiply-adds the GEMM stays on the sgemm path, where OpenBLAS runs it on the
 * calling thread (cpu_gemm.c's CPU__ONEDNN_MIN); one row of A (a GEMV) stays there too, bound
 * by reading the weights: oneDNN's matmul on its blocked layout took 3.51 against sgemm's
 * 3.21 ms for 1x4096x4096, 0.65 against 0.62 for 1x1024x4096 (one thread, 2-core Xeon with
 * AVX-512), while from two rows on it was as fast or faster (2x1024x4096 0.61 against 0.62,
 * 4x1024x4096 0.62 against 1.20, 64x784x256 0.134 against 0.184, 16x256x256 0.011 against
 * 0.020 ms).
 */
#define CPU__MATMUL_MIN (1u << 18)

/*
 * On a pool of several threads the matmul runs on oneDNN's OpenMP team, and below this many
 * multiply-adds the team's start and its spinning beside the pool's workers cost more than the
 * packing saves: the MLP 784-256-10 at batch 64 (64x784x256) on 2 threads took 0.08-0.10 ms a
 * run in some processes and 0.24-0.28 in others (1 process in 3), against 0.11-0.13 on the
 * sgemm path cut over the pool. Those stay on the sgemm path there.
 */
#define CPU__MATMUL_TEAM_MIN (1u << 26)

/*
 * Below the team's size, on several threads, the matmul runs by slices of Y's columns on the
 * pool's threads instead (cpu__dnnl_matmul_slices): each slice a primitive made for one OpenMP
 * thread with its own packed weights, so there is no team to start and the weights are packed
 * once, where the sgemm path packs them at every call. A slice is at least this many
 * multiply-adds and 16 columns (an AVX-512 vector), and the slices divide n evenly.
 */
#define CPU__MATMUL_SLICE_MIN (1u << 18)

/* How many column slices an [m, k] x [k, n] GEMM is cut into on @p threads; 0: not sliced. */
static int64_t cpu__matmul_slices(int64_t m, int64_t n, int64_t k, uint32_t threads) {
    const double macs = (double)m * (double)n * (double)k;
    if (threads < 2 || macs >= (double)CPU__MATMUL_TEAM_MIN)
        return 0;
    int64_t slices = (int64_t)threads;
    if ((double)slices > macs / (double)CPU__MATMUL_SLICE_MIN)
        slices = (int64_t)(macs / (double)CPU__MATMUL_SLICE_MIN);
    if (slices > n / 16)
        slices = n / 16;
    while (slices > 1 && n % slices != 0)
        slices--;
    return slices >= 2 ? slices : 0;
}

/* Whether an [m, k] x [k, n] GEMM goes to the matmul path on a pool of @p threads. */
static int cpu__matmul_worth(int64_t m, int64_t n, int64_t k, uint32_t threads) {
    const double macs = (double)m * (double)n * (double)k;
    return m >= 2 && macs >= (double)CPU__MATMUL_MIN &&
           (threads <= 1 || macs >= (double)CPU__MATMUL_TEAM_MIN ||
            cpu__matmul_slices(m, n, k, threads) >= 2);
}

cpu__gemm_state_t *cpu__gemm_state_new(const ses_drv_node_t *node, int *out_oom) {
    *out_oom = 0;
    /* DRV-85: read only from a node that has the field. */
    if (!node || node->struct_size < offsetof(ses_drv_node_t, constant_inputs) + sizeof(uint64_t) ||
        !(node->constant_inputs & 2u))
        return NULL;
    cpu__gemm_state_t *state = calloc(1, sizeof *state);
    if (!state) {
        *out_oom = 1;
        return NULL;
    }
    state->constant_inputs = node->constant_inputs;
    return state;
}

void cpu__gemm_state_free(cpu__gemm_state_t *state) {
    if (!state)
        return;
    cpu__dnnl_mm_cache_destroy(state->mm);
    cpu__team_user_release(&state->team);
    free(state);
}

/* The node's state when its f32 GEMM may take the matmul path, else NULL. */
static cpu__gemm_state_t *cpu__gemm_state_of(const cpu__call_t *call) {
    cpu__gemm_state_t *state = NULL;

    if (call->prep)
        state = call->prep->gemm;
    else if (call->spec->code == CPU__OP_FUSEDGEMM)
        state = call->state;
    if (!state || !(state->constant_inputs & 2u) || !call->device->driver->gemm_onednn ||
        call->out.dtype != SES_DRV_DTYPE_F32)
        return NULL;
    return state;
}

/* @p act as oneDNN's post-op in @p p: 0 when it has none for it. */
static int cpu__act_to_dnnl(const cpu__act_t *act, cpu__dnnl_mm_params_t *p) {
    if (!act)
        return 1;
    switch (act->kind) {
        case CPU__ACT_IDENTITY:
            return 1;
        case CPU__ACT_RELU:
            p->activation = CPU__DNNL_ACT_RELU;
            return 1;
        case CPU__ACT_LEAKYRELU:
            p->activation = CPU__DNNL_ACT_LEAKY_RELU;
            p->act_alpha = (float)act->alpha;
            return 1;
        case CPU__ACT_SIGMOID:
            p->activation = CPU__DNNL_ACT_SIGMOID;
            return 1;
        case CPU__ACT_TANH:
            p->activation = CPU__DNNL_ACT_TANH;
            return 1;
        case CPU__ACT_CLIP:
            p->activation = CPU__DNNL_ACT_CLIP;
            p->act_alpha = (float)act->lo;
            p->act_beta = (float)act->hi;
            return 1;
        default:
            return 0;
    }
}

/* The column slices of one matmul on the pool: items are slices. */
typedef struct cpu__mm_slices_job {
    cpu__dnnl_mm_cache_t *cache;
    cpu__first_error_t error; /* the first slice that fails */
} cpu__mm_slices_job_t;

static void cpu__mm_slices_task(void *ctx, uint64_t begin, uint64_t end) {
    cpu__mm_slices_job_t *j = ctx;
    char why[256];

    for (uint64_t i = begin; i < end; i++) {
        const int32_t st = cpu__dnnl_matmul_slice(j->cache, (int64_t)i, why, sizeof why);
        if (st != SES_DRV_OK) {
            cpu__first_error_set(&j->error, st, why);
            return;
        }
    }
}

/*
 * Runs @p p through oneDNN's matmul with the node's cached primitive and weights: SES_DRV_OK
 * when done, SES_DRV_UNIMPLEMENTED (no message) when the caller should take the sgemm path,
 * another code with a message when it failed.
 */
static int32_t cpu__gemm_dnnl(const cpu__call_t *call, cpu__gemm_state_t *state,
                              const cpu__dnnl_mm_params_t *p, const void *a, const void *w,
                              const void *bias, void *y) {
    char why[256];

    if (!state->mm && cpu__dnnl_mm_cache_create(&state->mm) != SES_DRV_OK)
        return cpu__call_fail(call, SES_DRV_OUT_OF_MEMORY, "cannot allocate oneDNN's cache");
    const uint32_t threads = cpu__pool_threads(call->device->pool);
    const int64_t slices = cpu__matmul_slices(p->m, p->n, p->k, threads);
    if (slices >= 2) {
        int32_t st = cpu__dnnl_matmul_slices(state->mm, p, (const float *)a, (const float *)w,
                                             (const float *)bias, (float *)y, slices,
                                             CPU__DNNL_W_CONSTANT, why, sizeof why);
        if (st == SES_DRV_OK) {
            cpu__mm_slices_job_t j = {.cache = state->mm};
            atomic_init(&j.error.failed, 0);
            /* One item per slice, each far above the pool's threshold: every slice a chunk. */
            cpu__parallel(call, (uint64_t)slices, UINT64_C(1) << 32, cpu__mm_slices_task, &j);
            if (atomic_load(&j.error.failed))
                return cpu__call_fail(call, j.error.st, "%s", j.error.why);
            return SES_DRV_OK;
        }
        if (st == SES_DRV_UNAVAILABLE)
            return SES_DRV_UNIMPLEMENTED;
        if (st != SES_DRV_UNIMPLEMENTED)
            return cpu__call_fail(call, st, "%s", why);
    }
    /* oneDNN's OpenMP team takes the cores now: the pool's idle workers stop spinning. */
    if (threads > 1)
        cpu__pool_park_for(call->device->pool, &state->team);
    int32_t st =
        cpu__dnnl_matmul(state->mm, p, (const float *)a, (const float *)w, (const float *)bias,
                         (float *)y, threads, CPU__DNNL_W_CONSTANT, why, sizeof why);
    if (st == SES_DRV_OK || st == SES_DRV_UNIMPLEMENTED)
        return st;
    if (st == SES_DRV_UNAVAILABLE)
        return SES_DRV_UNIMPLEMENTED;
    return cpu__call_fail(call, st, "%s", why);
}

int32_t cpu__matmul(const cpu__call_t *call) {
    const cpu__tensor_t *a = &call->in[0];
    const cpu__tensor_t *b = &call->in[1];
    const cpu__tensor_t *out = &call->out;
    cpu__matmul_shape_t sh;
    int32_t st;

    if ((st = cpu__matmul_shape(call, a, "input 0", b, "input 1", out, "output", &sh)) !=
        SES_DRV_OK)
        return st;
    const int64_t m = sh.m, k = sh.k, n = sh.n, n_matrices = sh.n_matrices;
    const uint32_t n_batch = sh.n_batch;
    const int64_t *batch = sh.batch, *a_stride = sh.a_stride, *b_stride = sh.b_stride;
    const int a_broadcast = sh.a_broadcast, b_batched = sh.b_batched;
    if (out->count == 0)
        return SES_DRV_OK;
    if (k == 0) {
        /* A sum of nothing; BLAS would want a leading dimension of at least 1 here. */
        memset(out->data, 0, (size_t)(out->count * out->esize));
        return SES_DRV_OK;
    }
    if ((st = cpu__check_blas_dims(call, m * (b_batched ? 1 : n_matrices), n, k)) != SES_DRV_OK)
        return st;

    const uint32_t dtype = out->dtype;
    const size_t es = out->esize;
    if (!b_batched && !a_broadcast) {
        /* Every matrix of a against the same b, and a's matrices lie one after the other:
         * one GEMM with the batches stacked as rows. */
        cpu__gemm_state_t *state = cpu__gemm_state_of(call);
        if (state &&
            cpu__matmul_worth(m * n_matrices, n, k, cpu__pool_threads(call->device->pool))) {
            cpu__dnnl_mm_params_t p;
            memset(&p, 0, sizeof p);
            p.m = m * n_matrices;
            p.n = n;
            p.k = k;
            p.alpha = 1.0f;
            if ((st = cpu__gemm_dnnl(call, state, &p, a->data, b->data, NULL, out->data)) !=
                SES_DRV_UNIMPLEMENTED)
                return st;
        }
        cpu__gemm_call(call->device, 1, dtype, 0, 0, m * n_matrices, n, k, 1.0, a->data, k, b->data,
                       n, 0.0, out->data, n);
        return SES_DRV_OK;
    }
    int64_t idx[CPU__MAX_RANK] = {0};
    int64_t a_off = 0, b_off = 0;
    for (int64_t i = 0; i < n_matrices; i++) {
        /* A long batch stops between GEMMs when the host cancels the eval. */
        if (cpu__cancelled(call))
            return cpu__call_fail(call, SES_DRV_CANCELLED,
                                  "cancelled by the host after %" PRId64 " of %" PRId64
                                  " matrix products",
                                  i, n_matrices);
        cpu__gemm_call(call->device, 1, dtype, 0, 0, m, n, k, 1.0,
                       a->data + (size_t)(a_off * m * k) * es, k,
                       b->data + (size_t)(b_off * k * n) * es, n, 0.0,
                       out->data + (size_t)(i * m * n) * es, n);
        for (uint32_t d = n_batch; d-- > 0;) {
            a_off += a_stride[d];
            b_off += b_stride[d];
            if (++idx[d] < batch[d])
                break;
            a_off -= a_stride[d] * batch[d];
            b_off -= b_stride[d] * batch[d];
            idx[d] = 0;
        }
    }
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Gemm: Y = alpha * op(A) * op(B) + beta * C, C broadcast to (M, N).
 * ------------------------------------------------------------------------------------------- */

/* Y[i, j] = scale * C[i or 0, j or 0] for C of rank <= 2 broadcast to (m, n). */
#define CPU__FILL_FROM_C(T)                                                                       \
    static void cpu__fill_from_c_##T(T *y, const T *c, int64_t c_rows, int64_t c_cols, int64_t m, \
                                     int64_t n, T scale) {                                        \
        for (int64_t i = 0; i < m; i++) {                                                         \
            const T *row = c + (c_rows == 1 ? 0 : i) * c_cols;                                    \
            T *dst = y + i * n;                                                                   \
            if (c_cols == 1) {                                                                    \
                const T v = scale * row[0];                                                       \
                for (int64_t j = 0; j < n; j++)                                                   \
                    dst[j] = v;                                                                   \
            } else {                                                                              \
                for (int64_t j = 0; j < n; j++)                                                   \
                    dst[j] = scale * row[j];                                                      \
            }                                                                                     \
        }                                                                                         \
    }

CPU__FILL_FROM_C(float)
CPU__FILL_FROM_C(double)

int32_t cpu__gemm(const cpu__call_t *call) {
    int act_done = 0;
    return cpu__gemm_act(call, NULL, &act_done);
}

int32_t cpu__gemm_act(const cpu__call_t *call, const cpu__act_t *act, int *out_act_done) {
    const cpu__tensor_t *a = &call->in[0];
    const cpu__tensor_t *b = &call->in[1];
    const cpu__tensor_t *c = call->n_in > 2 ? &call->in[2] : NULL;
    const cpu__tensor_t *out = &call->out;
    int64_t trans_a = 0, trans_b = 0;
    double alpha = 1.0, beta = 1.0;
    int32_t st;
    char x[96], y[96], z[96], o[96];

    if ((st = cpu__attr_float(call, "alpha", 1.0, &alpha)) != SES_DRV_OK ||
        (st = cpu__attr_float(call, "beta", 1.0, &beta)) != SES_DRV_OK ||
        (st = cpu__attr_int(call, "transA", 1, 0, &trans_a)) != SES_DRV_OK ||
        (st = cpu__attr_int(call, "transB", 1, 0, &trans_b)) != SES_DRV_OK)
        return st;
    if ((trans_a != 0 && trans_a != 1) || (trans_b != 0 && trans_b != 1))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "attributes transA %" PRId64 " and transB %" PRId64
                              " must each be 0 or 1",
                              trans_a, trans_b);
    if (a->rank != 2 || b->rank != 2)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "A and B must be matrices: input 0 is %s, input 1 is %s",
                              cpu__format_dims(a->dims, a->rank, x, sizeof x),
                              cpu__format_dims(b->dims, b->rank, y, sizeof y));
    const int64_t m = trans_a ? a->dims[1] : a->dims[0];
    const int64_t k = trans_a ? a->dims[0] : a->dims[1];
    const int64_t kb = trans_b ? b->dims[1] : b->dims[0];
    const int64_t n = trans_b ? b->dims[0] : b->dims[1];
    if (k != kb)
        return cpu__call_fail(
            call, SES_DRV_INVALID_ARGUMENT,
            "inner dimensions differ: input 0 is %s%s, input 1 is %s%s",
            cpu__format_dims(a->dims, a->rank, x, sizeof x), trans_a ? " (transposed)" : "",
            cpu__format_dims(b->dims, b->rank, y, sizeof y), trans_b ? " (transposed)" : "");
    if (out->rank != 2 || out->dims[0] != m || out->dims[1] != n)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "output is %s, expected [%" PRId64 ",%" PRId64 "]",
                              cpu__format_dims(out->dims, out->rank, o, sizeof o), m, n);
    /* C broadcasts one way only, to (M, N): each of its dims, aligned right, is that dim or 1. */
    int64_t c_rows = 1, c_cols = 1;
    if (c) {
        int ok = c->rank <= 2;
        if (ok && c->rank >= 1)
            c_cols = c->dims[c->rank - 1];
        if (ok && c->rank == 2)
            c_rows = c->dims[0];
        if (!ok || (c_cols != 1 && c_cols != n) || (c_rows != 1 && c_rows != m))
            return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                  "input 2 (C) is %s, which does not broadcast to [%" PRId64
                                  ",%" PRId64 "] (A is %s, B is %s)",
                                  cpu__format_dims(c->dims, c->rank, z, sizeof z), m, n,
                                  cpu__format_dims(a->dims, a->rank, x, sizeof x),
                                  cpu__format_dims(b->dims, b->rank, y, sizeof y));
    }
    if (out->count == 0)
        return SES_DRV_OK;
    if ((st = cpu__check_blas_dims(call, m, n, k)) != SES_DRV_OK)
        return st;

    const int f32 = out->dtype == SES_DRV_DTYPE_F32;
    const int use_c = c && beta != 0.0;
    *out_act_done = 0;
    cpu__gemm_state_t *state = k > 0 ? cpu__gemm_state_of(call) : NULL;
    cpu__dnnl_mm_params_t p;
    memset(&p, 0, sizeof p);
    if (state && cpu__matmul_worth(m, n, k, cpu__pool_threads(call->device->pool)) &&
        cpu__act_to_dnnl(act, &p)) {
        p.m = m;
        p.n = n;
        p.k = k;
        p.trans_a = (int32_t)trans_a;
        p.trans_b = (int32_t)trans_b;
        p.alpha = (float)alpha;
        /* C as oneDNN's bias where it is one row added as it is (ONNX's usual Gemm); otherwise
         * broadcast into Y below and added by the sum post-op. */
        p.bias = use_c && c_rows == 1 && c_cols == n && alpha == 1.0 && beta == 1.0;
        p.sum = use_c && !p.bias;
        p.beta = p.sum ? (float)beta : 0.0f;
        if (p.bias) {
            if ((st = cpu__gemm_dnnl(call, state, &p, a->data, b->data, c->data, out->data)) !=
                SES_DRV_UNIMPLEMENTED) {
                *out_act_done = st == SES_DRV_OK;
                return st;
            }
            state = NULL; /* the sgemm path, C filled below */
        }
    } else {
        state = NULL;
    }
    /* With K = 0 the product is empty and Y is beta * C alone; BLAS is not called, since it
     * wants leading dimensions of at least 1. */
    const double c_scale = k == 0 ? beta : 1.0;
    if (use_c) {
        if (f32)
            cpu__fill_from_c_float((float *)(void *)out->data, (const float *)(void *)c->data,
                                   c_rows, c_cols, m, n, (float)c_scale);
        else
            cpu__fill_from_c_double((double *)(void *)out->data, (const double *)(void *)c->data,
                                    c_rows, c_cols, m, n, c_scale);
    } else if (k == 0) {
        memset(out->data, 0, (size_t)(out->count * out->esize));
    }
    if (k == 0)
        return SES_DRV_OK;
    if (state && (st = cpu__gemm_dnnl(call, state, &p, a->data, b->data, NULL, out->data)) !=
                     SES_DRV_UNIMPLEMENTED) {
        *out_act_done = st == SES_DRV_OK;
        return st;
    }
    cpu__gemm_call(call->device, 1, out->dtype, (int)trans_a, (int)trans_b, m, n, k, alpha, a->data,
                   a->dims[1], b->data, b->dims[1], use_c ? beta : 0.0, out->data, n);
    return SES_DRV_OK;
}
