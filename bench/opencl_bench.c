/*
 * opencl-bench: the OpenCL driver measured side by side with raw OpenCL in one run.
 *
 *   opencl_matmul_<n>_gflops      MatMul [n,n]x[n,n] through a compiled plan on opencl:0
 *                                 (feeds copied in and the result out on every run)
 *   clblast_sgemm_<n>_gflops      CLBlastSgemm on the same device, buffers already there
 *   cpu_matmul_<n>_gflops         the same plan on the CPU driver
 *   opencl_add_<n>_gbps           Add of two n-float vectors through a plan on opencl:0
 *                                 (3n floats moved, copies included)
 *   copy_buffer_<n>_gbps          clEnqueueCopyBuffer of the same 3n floats on the device
 *
 * Medians of interleaved runs. In a build tree (bench programs are not on the devenv's PATH):
 *   SESSION_DRIVER_FILES=build/plugins/cpu/cpu.json:build/plugins/opencl/opencl.json \
 *       build/bench/opencl-bench
 * with a warm POCL_CACHE_DIR (CLBlast's first call compiles its kernels).
 * The output ends with one line per figure: "bench: <name>: <value> <unit>".
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CL/cl.h>
#include <clblast_c.h>

#include "bench_timing.h"

#include <session/session.h>

static void die(const char *what) {
    fprintf(stderr, "opencl-bench: %s: %s\n", what, ses_last_error());
    exit(1);
}

static ses_tensor_t *random_tensor(uint32_t rank, const int64_t *dims) {
    ses_tensor_t *t = NULL;

    if (ses_tensor_create(SES_F32, rank, dims, &t) != SES_OK)
        die("tensor");
    for (size_t i = 0; i < ses_tensor_count(t); i++)
        ((float *)ses_tensor_data(t))[i] = (float)(rand() % 1000) / 1000.0f - 0.5f;
    return t;
}

/* A compiled two-input plan of @p op on @p device. */
static ses_plan_t *plan_of(const char *op, const char *device, uint32_t rank, const int64_t *da,
                           const int64_t *db, ses_graph_t **out_g, ses_session_t **out_s) {
    ses_edge_t in[2], y;
    ses_plan_t *plan = NULL;

    if (ses_graph_create(out_g) != SES_OK ||
        ses_graph_placeholder(*out_g, "a", SES_F32, rank, da, &in[0]) != SES_OK ||
        ses_graph_placeholder(*out_g, "b", SES_F32, rank, db, &in[1]) != SES_OK ||
        ses_graph_op(*out_g, op, "y", in, 2, NULL, 0, &y) != SES_OK ||
        ses_session_open(*out_g, &device, 1, NULL, out_s) != SES_OK ||
        ses_session_compile(*out_s, &y, 1, in, 2, NULL, 0, &plan) != SES_OK)
        die(op);
    return plan;
}

static double time_plan(ses_plan_t *plan, ses_tensor_t **feeds) {
    ses_tensor_t *out = NULL;
    double t0 = bench_now();

    if (ses_plan_run(plan, feeds, 2, &out) != SES_OK)
        die("run");
    ses_tensor_release(out);
    return bench_now() - t0;
}

int main(void) {
    enum { REPS = 9 };
    const int64_t n = 512, vn = 1 << 22;
    int64_t dm[2] = {n, n}, dv[1] = {vn};
    double ocl_t[REPS], cpu_t[REPS], blast_t[REPS], add_t[REPS], copy_t[REPS];
    cl_platform_id platform;
    cl_device_id device;
    cl_int err;

    if (clGetPlatformIDs(1, &platform, NULL) != CL_SUCCESS ||
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL) != CL_SUCCESS) {
        printf("opencl-bench: no OpenCL device; nothing to measure\n");
        return 0;
    }
    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueue(ctx, device, 0, &err);
    size_t mbytes = (size_t)(n * n) * sizeof(float), vbytes = (size_t)vn * sizeof(float);
    cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE, mbytes, NULL, &err);
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, mbytes, NULL, &err);
    cl_mem c = clCreateBuffer(ctx, CL_MEM_READ_WRITE, mbytes, NULL, &err);
    cl_mem src = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 3 * vbytes, NULL, &err);
    cl_mem dst = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 3 * vbytes, NULL, &err);
    if (!ctx || !q || !a || !b || !c || !src || !dst) {
        fprintf(stderr, "opencl-bench: OpenCL setup failed\n");
        return 1;
    }
    ses_tensor_t *ma = random_tensor(2, dm), *mb = random_tensor(2, dm);
    ses_tensor_t *va = random_tensor(1, dv), *vb = random_tensor(1, dv);
    ses_tensor_t *mfeeds[2] = {ma, mb}, *vfeeds[2] = {va, vb};
    clEnqueueWriteBuffer(q, a, CL_TRUE, 0, mbytes, ses_tensor_data(ma), 0, NULL, NULL);
    clEnqueueWriteBuffer(q, b, CL_TRUE, 0, mbytes, ses_tensor_data(mb), 0, NULL, NULL);

    ses_graph_t *g1, *g2, *g3;
    ses_session_t *s1, *s2, *s3;
    ses_plan_t *ocl = plan_of("MatMul", "opencl:0", 2, dm, dm, &g1, &s1);
    ses_plan_t *cpu = plan_of("MatMul", "cpu", 2, dm, dm, &g2, &s2);
    ses_plan_t *add = plan_of("Add", "opencl:0", 1, dv, dv, &g3, &s3);
    for (int r = -2; r < REPS; r++) {
        double t0, o = time_plan(ocl, mfeeds), p = time_plan(cpu, mfeeds), s = time_plan(add, vfeeds);
        t0 = bench_now();
        if (CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo,
                         (size_t)n, (size_t)n, (size_t)n, 1.0f, a, 0, (size_t)n, b, 0, (size_t)n,
                         0.0f, c, 0, (size_t)n, &q, NULL) != CLBlastSuccess)
            die("CLBlastSgemm");
        clFinish(q);
        double bl = bench_now() - t0;
        t0 = bench_now();
        clEnqueueCopyBuffer(q, src, dst, 0, 0, 3 * vbytes, 0, NULL, NULL);
        clFinish(q);
        double cp = bench_now() - t0;
        if (r >= 0) {
            ocl_t[r] = o;
            cpu_t[r] = p;
            add_t[r] = s;
            blast_t[r] = bl;
            copy_t[r] = cp;
        }
    }
    double flop = 2.0 * (double)n * (double)n * (double)n, moved = 3.0 * (double)vbytes;
    printf("bench: opencl_matmul_%lld_gflops: %.2f GFLOP/s\n", (long long)n,
           flop / bench_median(ocl_t, REPS) * 1e-9);
    printf("bench: clblast_sgemm_%lld_gflops: %.2f GFLOP/s\n", (long long)n,
           flop / bench_median(blast_t, REPS) * 1e-9);
    printf("bench: cpu_matmul_%lld_gflops: %.2f GFLOP/s\n", (long long)n,
           flop / bench_median(cpu_t, REPS) * 1e-9);
    printf("bench: opencl_add_%lld_gbps: %.2f GB/s\n", (long long)vn,
           moved / bench_median(add_t, REPS) * 1e-9);
    printf("bench: copy_buffer_%lld_gbps: %.2f GB/s\n", (long long)vn,
           moved / bench_median(copy_t, REPS) * 1e-9);

    ses_session_destroy(s1);
    ses_session_destroy(s2);
    ses_session_destroy(s3);
    ses_graph_release(g1);
    ses_graph_release(g2);
    ses_graph_release(g3);
    ses_tensor_release(ma);
    ses_tensor_release(mb);
    ses_tensor_release(va);
    ses_tensor_release(vb);
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    clReleaseMemObject(c);
    clReleaseMemObject(src);
    clReleaseMemObject(dst);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return 0;
}
