/*
 * MatMul, Gemm and MatMul's gradient through CLBlast.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clblast_c.h>

#include "ocl_ops.h"


/* ---------------------------------------------------------------------------------------------
 * GEMM through CLBlast
 * ------------------------------------------------------------------------------------------- */

int32_t ocl__blast_fail(ses_drv_device_t *device, const ses_drv_node_t *node, CLBlastStatusCode s) {
    return ocl__node_fail(device, node, SES_DRV_INTERNAL, "the CLBlast GEMM failed: status %d (%s)",
                          (int)s, (int)s > -1000 ? ocl__error_name((cl_int)s) : "a CLBlast error");
}

/* y[m,n] = alpha * op(a)[m,k] * op(b)[k,n] + beta * y, on the device's queue; not waited for. */
static CLBlastStatusCode ocl_sgemm(ses_drv_device_t *device, int ta, int tb, size_t m, size_t n,
                                   size_t k, float alpha, cl_mem a, size_t ao, cl_mem b,
                                   size_t bo, float beta, cl_mem y, size_t yo) {
    return CLBlastSgemm(CLBlastLayoutRowMajor, ta ? CLBlastTransposeYes : CLBlastTransposeNo,
                        tb ? CLBlastTransposeYes : CLBlastTransposeNo, m, n, k, alpha, a, ao,
                        ta ? m : k, b, bo, tb ? k : n, beta, y, yo, n, &device->queue, NULL);
}

/* ocl_sgemm in f32 or, with @p f64, CLBlastDgemm. */
CLBlastStatusCode ocl__gemm(ses_drv_device_t *device, int f64, int ta, int tb, size_t m, size_t n,
                            size_t k, double alpha, cl_mem a, size_t ao, cl_mem b, size_t bo,
                            double beta, cl_mem y, size_t yo) {
    if (!f64)
        return ocl_sgemm(device, ta, tb, m, n, k, (float)alpha, a, ao, b, bo, (float)beta, y, yo);
    return CLBlastDgemm(CLBlastLayoutRowMajor, ta ? CLBlastTransposeYes : CLBlastTransposeNo,
                        tb ? CLBlastTransposeYes : CLBlastTransposeNo, m, n, k, alpha, a, ao,
                        ta ? m : k, b, bo, tb ? k : n, beta, y, yo, n, &device->queue, NULL);
}

/* MatMul(A, B) as a batch of [M,K] x [K,N] products: the batch dims (the output's leading ones),
 * and each operand's element stride along them, 0 where it is broadcast. */
typedef struct mm_batches {
    int64_t M, K, N;
    uint32_t rank; /* batch dims */
    int64_t dims[OCL_MAX_RANK], ast[OCL_MAX_RANK], bst[OCL_MAX_RANK];
    uint64_t count; /* batches */
} mm_batches_t;

/* Checks A and B (rank >= 1, inner dims equal, batch dims broadcasting) against @p Y, the output
 * or dy, which must have MatMul(A, B)'s shape (else fails with @p mismatch), and fills @p m. */
static int32_t mm_batches(ses_drv_device_t *device, const ses_drv_node_t *node, const ocl_arg_t *A,
                          const ocl_arg_t *B, const ocl_arg_t *Y, const char *mismatch,
                          mm_batches_t *m) {
    if (A->rank < 1 || B->rank < 1)
        return ocl__shape_fail(device, node, "MatMul needs operands of rank >= 1", A, B);
    const int64_t M = A->rank == 1 ? 1 : A->dims[A->rank - 2], K = A->dims[A->rank - 1];
    const int64_t KB = B->rank == 1 ? B->dims[0] : B->dims[B->rank - 2];
    const int64_t N = B->rank == 1 ? 1 : B->dims[B->rank - 1];
    if (K != KB)
        return ocl__shape_fail(device, node, "inner dimensions differ", A, B);
    const uint32_t ab = A->rank > 2 ? A->rank - 2 : 0, bb = B->rank > 2 ? B->rank - 2 : 0;
    const uint32_t yb = ab > bb ? ab : bb;
    if (Y->rank != yb + (A->rank > 1) + (B->rank > 1) || (A->rank > 1 && Y->dims[yb] != M) ||
        (B->rank > 1 && Y->dims[Y->rank - 1] != N))
        return ocl__shape_fail(device, node, mismatch, Y, A);
    int64_t sa = M * K, sb = K * N;
    m->M = M;
    m->K = K;
    m->N = N;
    m->rank = yb;
    m->count = 1;
    for (uint32_t d = yb; d-- > 0;) {
        const int64_t da = d + ab >= yb ? A->dims[d + ab - yb] : 1;
        const int64_t db = d + bb >= yb ? B->dims[d + bb - yb] : 1;
        if (Y->dims[d] != (da == 1 ? db : da) || (da != 1 && db != 1 && da != db))
            return ocl__shape_fail(device, node, "batch dims do not broadcast", A, B);
        m->dims[d] = Y->dims[d];
        m->ast[d] = da == 1 ? 0 : sa;
        m->bst[d] = db == 1 ? 0 : sb;
        sa *= da;
        sb *= db;
        m->count *= (uint64_t)Y->dims[d];
    }
    return SES_DRV_OK;
}

/* Batch @p b's offsets (in elements) into A and B. */
static void mm_offsets(const mm_batches_t *m, uint64_t b, int64_t *ao, int64_t *bo) {
    *ao = *bo = 0;
    for (uint32_t d = m->rank; d-- > 0;) {
        const int64_t i = (int64_t)(b % (uint64_t)m->dims[d]);
        b /= (uint64_t)m->dims[d];
        *ao += i * m->ast[d];
        *bo += i * m->bst[d];
    }
}

int32_t ocl__k_matmul(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[2], out[1];
    int32_t st;

    (void)state;
    if ((st = ocl__prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    const ocl_arg_t *A = &in[0], *B = &in[1], *Y = &out[0];
    mm_batches_t m;
    if ((st = mm_batches(device, node, A, B, Y, "the output does not match MatMul(A, B)", &m)) !=
        SES_DRV_OK)
        return st;
    if (!Y->count)
        return SES_DRV_OK;
    if (m.K == 0)
        return ocl__fill_zero(device, node, Y);
    CLBlastStatusCode s = CLBlastSuccess;
    cl_int err = CL_SUCCESS;
    pthread_mutex_lock(&device->lock);
    for (uint64_t b = 0; b < m.count && s == CLBlastSuccess; b++) {
        int64_t ao, bo;
        mm_offsets(&m, b, &ao, &bo);
        s = ocl_sgemm(device, 0, 0, (size_t)m.M, (size_t)m.N, (size_t)m.K, 1.0f, A->buf->mem,
                      (size_t)(A->off + (uint64_t)ao), B->buf->mem,
                      (size_t)(B->off + (uint64_t)bo), 0.0f, Y->buf->mem,
                      (size_t)(Y->off + b * (uint64_t)(m.M * m.N)));
    }
    err = clFinish(device->queue);
    pthread_mutex_unlock(&device->lock);
    if (s != CLBlastSuccess)
        return ocl__blast_fail(device, node, s);
    if (err != CL_SUCCESS)
        return ocl__node_fail(device, node, SES_DRV_INTERNAL, "clFinish failed: %s",
                              ocl__error_name(err));
    return SES_DRV_OK;
}

/*
 * MatMulGrad: for y = MatMul(A, B) with dy of y's shape, the gradient of A (dy * B^T) or of B
 * (A^T * dy), summed over the batch dims that operand was broadcast along: the output is zeroed
 * and every batch's product is added into its operand's slot.
 */
int32_t ocl__k_matmul_grad(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[3], out[1];
    int64_t which = 0;
    int32_t st;

    (void)state;
    if ((st = ocl__prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = ocl__need_int(device, node, "input", &which)) != SES_DRV_OK)
        return st;
    const ocl_arg_t *DY = &in[0], *A = &in[1], *B = &in[2], *G = &out[0];
    const ocl_arg_t *T = which ? B : A;
    if (A->rank < 1 || B->rank < 1 || (which != 0 && which != 1))
        return ocl__shape_fail(device, node, "MatMulGrad needs operands of rank >= 1", A, B);
    if (!ocl__same_shape(G, T))
        return ocl__shape_fail(device, node, "the output differs from the operand's shape", G, T);
    mm_batches_t m;
    if ((st = mm_batches(device, node, A, B, DY, "dy does not match MatMul(A, B)", &m)) !=
        SES_DRV_OK)
        return st;
    if ((st = ocl__fill_zero(device, node, G)) != SES_DRV_OK)
        return st;
    if (!G->count || !DY->count)
        return SES_DRV_OK;
    CLBlastStatusCode s = CLBlastSuccess;
    pthread_mutex_lock(&device->lock);
    const size_t M = (size_t)m.M, K = (size_t)m.K, N = (size_t)m.N;
    for (uint64_t b = 0; b < m.count && s == CLBlastSuccess; b++) {
        int64_t ao, bo;
        mm_offsets(&m, b, &ao, &bo);
        size_t dyo = (size_t)(DY->off + b * (uint64_t)(M * N));
        if (which == 0) /* dA[M,K] += dy[M,N] * B[K,N]^T */
            s = ocl_sgemm(device, 0, 1, M, K, N, 1.0f, DY->buf->mem, dyo, B->buf->mem,
                          (size_t)(B->off + (uint64_t)bo), 1.0f, G->buf->mem,
                          (size_t)(G->off + (uint64_t)ao));
        else /* dB[K,N] += A[M,K]^T * dy[M,N] */
            s = ocl_sgemm(device, 1, 0, K, N, M, 1.0f, A->buf->mem, (size_t)(A->off + (uint64_t)ao),
                          DY->buf->mem, dyo, 1.0f, G->buf->mem, (size_t)(G->off + (uint64_t)bo));
    }
    cl_int err = clFinish(device->queue);
    pthread_mutex_unlock(&device->lock);
    if (s != CLBlastSuccess)
        return ocl__blast_fail(device, node, s);
    if (err != CL_SUCCESS)
        return ocl__node_fail(device, node, SES_DRV_INTERNAL, "clFinish failed: %s",
                              ocl__error_name(err));
    return SES_DRV_OK;
}

int32_t ocl__k_gemm(ses_drv_device_t *device, void *state, const ses_drv_launch_t *launch) {
    ocl_arg_t in[3], out[1];
    double alpha = 1.0, beta = 1.0;
    int64_t ta = 0, tb = 0;
    int32_t st;

    (void)state;
    if ((st = ocl__prepare(device, launch, 0, in, out)) != SES_DRV_OK)
        return st;
    const ses_drv_node_t *node = launch->node;
    if ((st = ocl__need_float(device, node, "alpha", &alpha)) ||
        (st = ocl__need_float(device, node, "beta", &beta)) ||
        (st = ocl__need_int(device, node, "transA", &ta)) ||
        (st = ocl__need_int(device, node, "transB", &tb)))
        return st;
    const ocl_arg_t *A = &in[0], *B = &in[1], *Y = &out[0];
    if (A->rank != 2 || B->rank != 2 || Y->rank != 2)
        return ocl__shape_fail(device, node, "Gemm takes matrices", A, B);
    int64_t M = ta ? A->dims[1] : A->dims[0], K = ta ? A->dims[0] : A->dims[1];
    int64_t KB = tb ? B->dims[1] : B->dims[0], N = tb ? B->dims[0] : B->dims[1];
    if (K != KB || Y->dims[0] != M || Y->dims[1] != N)
        return ocl__shape_fail(device, node, "shapes do not agree", A, B);
    if (!Y->count)
        return SES_DRV_OK;
    float gb = 0.0f;
    if (node->n_inputs == 3 && beta != 0.0) {
        /* y = beta * C broadcast, then the product is added on top. */
        if ((st = ocl__unary_f32(device, node, &in[2], Y, 12, (float)beta)) != SES_DRV_OK)
            return st;
        gb = 1.0f;
    } else if ((st = ocl__fill_zero(device, node, Y)) != SES_DRV_OK) {
        return st;
    }
    if (K == 0)
        return SES_DRV_OK;
    pthread_mutex_lock(&device->lock);
    CLBlastStatusCode s = ocl_sgemm(device, (int)ta, (int)tb, (size_t)M, (size_t)N, (size_t)K,
                                    (float)alpha, A->buf->mem, (size_t)A->off, B->buf->mem,
                                    (size_t)B->off, gb, Y->buf->mem, (size_t)Y->off);
    cl_int err = clFinish(device->queue);
    pthread_mutex_unlock(&device->lock);
    if (s != CLBlastSuccess)
        return ocl__blast_fail(device, node, s);
    if (err != CL_SUCCESS)
        return ocl__node_fail(device, node, SES_DRV_INTERNAL, "clFinish failed: %s",
                              ocl__error_name(err));
    return SES_DRV_OK;
}
