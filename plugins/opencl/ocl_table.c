/*
 * The OpenCL driver's kernel table: every entry it offers, the ones that need cl_khr_fp64, and
 * the per-device table built at open.
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
 * The table
 * ------------------------------------------------------------------------------------------- */

#define E(OP, SIG, FN) \
    {.struct_size = sizeof(ses_drv_kernel_t), .op = OP, .signature = SIG, .compute = FN},
/* M(A, B, T) for each dtype T the copying ops take. */
#define EACH_T(M, A, B)                                                                      \
    M(A, B, "f32") M(A, B, "f64") M(A, B, "f16") M(A, B, "bf16") M(A, B, "i8") M(A, B, "i16") \
    M(A, B, "i32") M(A, B, "i64") M(A, B, "u8") M(A, B, "u16") M(A, B, "u32") M(A, B, "u64")  \
    M(A, B, "bool")
#define T_T(OP, FN, T) E(OP, T "->" T, FN)
#define TV_T(OP, FN, T) E(OP, T "...->" T, FN)
#define T_I64(OP, FN, T) E(OP, T "->i64", FN)
#define T_I_T(I, FN, T) E("Gather", T "," I "->" T, FN)
#define ANY(OP, FN) EACH_T(T_T, OP, FN)
#define ANYV(OP, FN) EACH_T(TV_T, OP, FN)
#define GANY(I) EACH_T(T_I_T, I, ocl__k_gather)
#define PAD(T) E("Pad", T "->" T, ocl__k_pad) E("Pad", T "," T "->" T, ocl__k_pad)
#define CLIP(T)                                                                            \
    E("Clip", T "->" T, ocl__k_clip) E("Clip", T "," T "->" T, ocl__k_clip)                 \
    E("Clip", T "," T "," T "->" T, ocl__k_clip)
/* Split of one to eight outputs: OUTS is "->T" followed by one ",T" per further output. */
#define SPLIT1(T, OUTS) E("Split", T OUTS, ocl__k_split)
#define SPLIT(T)                                                                             \
    SPLIT1(T, "->" T) SPLIT1(T, "->" T "," T) SPLIT1(T, "->" T "," T "," T)                   \
    SPLIT1(T, "->" T "," T "," T "," T) SPLIT1(T, "->" T "," T "," T "," T "," T)             \
    SPLIT1(T, "->" T "," T "," T "," T "," T "," T)                                           \
    SPLIT1(T, "->" T "," T "," T "," T "," T "," T "," T)                                     \
    SPLIT1(T, "->" T "," T "," T "," T "," T "," T "," T "," T)
/* The entries that need cl_khr_fp64 (f64 arithmetic), X(op, signature, compute). */
#define OCL_FP64_KERNELS(X)                                                                 \
    X("Cast", "f32->f64", ocl__k_cast) X("Cast", "f64->f32", ocl__k_cast)                     \
    X("Clip", "f64->f64", ocl__k_clip) X("Clip", "f64,f64->f64", ocl__k_clip)                 \
    X("Clip", "f64,f64,f64->f64", ocl__k_clip)                                               \
    X("BatchNormalization", "f64,f64,f64,f64,f64->f64", ocl__k_batch_norm)                   \
    X("Conv", "f64,f64->f64", ocl__k_conv) X("Conv", "f64,f64,f64->f64", ocl__k_conv)         \
    X("ConvGrad", "f64,f64,f64->f64", ocl__k_conv_grad)                                      \
    X("MaxPool", "f64->f64", ocl__k_pool) X("AveragePool", "f64->f64", ocl__k_pool)           \
    X("MaxPoolGrad", "f64,f64->f64", ocl__k_pool) X("AveragePoolGrad", "f64->f64", ocl__k_pool) \
    X("PadGrad", "f64->f64", ocl__k_pad_grad)                                                \
    X("Equal", "f64,f64->bool", ocl__k_compare) X("Greater", "f64,f64->bool", ocl__k_compare) \
    X("Less", "f64,f64->bool", ocl__k_compare)
#define U(OP) E(OP, "f32->f32", ocl__k_unary)
#define B(OP) E(OP, "f32,f32->f32", ocl__k_binary)
#define R(OP) E(OP, "f32->f32", ocl__k_reduce)
#define CMP(OP, T) E(OP, T "," T "->bool", ocl__k_compare)
#define WHERE(T) E("Where", "bool," T "," T "->" T, ocl__k_where)
#define FROM_F32(T) E("Cast", "f32->" T, ocl__k_cast)
#define TO_F32(T) E("Cast", T "->f32", ocl__k_cast)
/* A loss over the f32 scores PRE ("f32," or "f32,f32," for a gradient) and targets of index
 * dtype I, without and with the f32 weights, to OUTS. */
#define LOSS(OP, FN, PRE, I, OUTS) E(OP, PRE I OUTS, FN) E(OP, PRE I ",f32" OUTS, FN)
#define LOSSES(I)                                                                     \
    LOSS("SoftmaxCrossEntropyLoss", ocl__k_sce, "f32,", I, "->f32")                   \
    LOSS("SoftmaxCrossEntropyLoss", ocl__k_sce, "f32,", I, "->f32,f32")               \
    LOSS("SoftmaxCrossEntropyLossGrad", ocl__k_sce_grad, "f32,f32,", I, "->f32")      \
    LOSS("NegativeLogLikelihoodLoss", ocl__k_nll, "f32,", I, "->f32")                 \
    LOSS("NegativeLogLikelihoodLossGrad", ocl__k_nll_grad, "f32,f32,", I, "->f32")
#define OF_SHAPE(T) E("ConstantOfShape", "i64->" T, ocl__k_constant_of_shape)
#define RANGE(T) E("Range", T "," T "," T "->" T, ocl__k_range)

static const ses_drv_kernel_t ocl_kernels[] = {
    U("Neg") U("Abs") U("Relu") U("Exp") U("Log") U("Sqrt") U("Reciprocal") U("Sigmoid")
    U("Tanh") U("Softplus") U("Erf") U("LeakyRelu")
    U("Cos") U("Sin") U("Tan") U("Acos") U("Asin") U("Atan") U("Cosh") U("Sinh") U("Asinh")
    U("Acosh") U("Atanh") U("Round") U("Sign")
    B("Add") B("Sub") B("Mul") B("Div") B("Pow") B("Min") B("Max")
    B("ReluGrad") B("SigmoidGrad") B("TanhGrad") B("LeakyReluGrad") B("PRelu")
    CMP("Equal", "f32") CMP("Greater", "f32") CMP("Less", "f32")
    WHERE("f32") WHERE("i32") WHERE("i64") WHERE("f64") WHERE("u8") WHERE("bool")
    ANY("Identity", ocl__k_copy) ANY("Reshape", ocl__k_copy) ANY("Flatten", ocl__k_copy)
    ANY("Squeeze", ocl__k_copy) ANY("Unsqueeze", ocl__k_copy)
    ANY("Transpose", ocl__k_transpose) ANY("Slice", ocl__k_slice) ANY("ExpandLike", ocl__k_expand)
    ANYV("Concat", ocl__k_concat)
    GANY("i32") GANY("i64")
    FROM_F32("i32") FROM_F32("i64") FROM_F32("u8") FROM_F32("bool")
    TO_F32("i32") TO_F32("i64") TO_F32("u8") TO_F32("bool")
    E("MatMul", "f32,f32->f32", ocl__k_matmul)
    E("Gemm", "f32,f32->f32", ocl__k_gemm)
    E("Gemm", "f32,f32,f32->f32", ocl__k_gemm)
    R("ReduceSum") R("ReduceMean") R("ReduceMax") R("ReduceMin") R("ReduceProd") R("ReduceL1")
    R("ReduceL2") R("ReduceLogSum") R("ReduceLogSumExp") R("ReduceSumSquare")
    E("ReduceSumLike", "f32->f32", ocl__k_reduce_sum_like)
    E("ReduceGrad", "f32->f32", ocl__k_reduce_grad)
    E("Softmax", "f32->f32", ocl__k_softmax)
    E("LogSoftmax", "f32->f32", ocl__k_softmax)
    E("Hardmax", "f32->f32", ocl__k_softmax)
    E("SoftmaxGrad", "f32,f32->f32", ocl__k_softmax)
    E("LogSoftmaxGrad", "f32,f32->f32", ocl__k_softmax)
    E("ArgMax", "f32->i64", ocl__k_argmax)
    E("ArgMin", "f32->i64", ocl__k_argmax)
    E("MatMulGrad", "f32,f32,f32->f32", ocl__k_matmul_grad)
    LOSSES("i64") LOSSES("i32")
    E("ScalarLike", "f32->f32", ocl__k_scalar_like)
    E("SGD", "f32,f32,f32->", ocl__k_optim)
    E("Momentum", "f32,f32,f32,f32->", ocl__k_optim)
    E("Adam", "f32,f32,f32,f32,f32,f32->", ocl__k_optim)
    CMP("Equal", "i32") CMP("Equal", "i64") CMP("Equal", "u8") CMP("Equal", "bool")
    CMP("Greater", "i32") CMP("Greater", "i64") CMP("Greater", "u8")
    CMP("Less", "i32") CMP("Less", "i64") CMP("Less", "u8")
    E("Conv", "f32,f32->f32", ocl__k_conv)
    E("Conv", "f32,f32,f32->f32", ocl__k_conv)
    E("ConvGrad", "f32,f32,f32->f32", ocl__k_conv_grad)
    E("MaxPool", "f32->f32", ocl__k_pool)
    E("AveragePool", "f32->f32", ocl__k_pool)
    E("MaxPoolGrad", "f32,f32->f32", ocl__k_pool)
    E("AveragePoolGrad", "f32->f32", ocl__k_pool)
    E("BatchNormalization", "f32,f32,f32,f32,f32->f32", ocl__k_batch_norm)
    E("Dropout", "f32->f32,bool", ocl__k_dropout)
    E("Dropout", "f64->f64,bool", ocl__k_dropout)
    E("PadGrad", "f32->f32", ocl__k_pad_grad)
    PAD("f32") PAD("f64") PAD("i32") PAD("i64")
    CLIP("f32") CLIP("i32") CLIP("i64")
    SPLIT("f32") SPLIT("f64") SPLIT("i32") SPLIT("i64")
    EACH_T(T_I64, "Shape", ocl__k_shape)
    OF_SHAPE("f32") OF_SHAPE("f64") OF_SHAPE("i32") OF_SHAPE("i64") OF_SHAPE("bool")
    RANGE("f32") RANGE("f64") RANGE("i32") RANGE("i64")
    /* g-ocl: logic ops on bool (compare_u8 with op codes 3..6) */
    CMP("And", "bool") CMP("Or", "bool") CMP("Xor", "bool")
    E("Not", "bool->bool", ocl__k_compare)
    /* Last: the entries that need cl_khr_fp64, left out of the table on devices without it. */
    OCL_FP64_KERNELS(E)
};

/* One mark per entry at the end of ocl_kernels that needs cl_khr_fp64. */
#define OCL_MARK(OP, SIG, FN) 1,
static const char ocl_fp64_marks[] = {OCL_FP64_KERNELS(OCL_MARK)};

/* The kernels of ocl_kernels.cl that ocl_driver.c does not create, by OCL_X_*. */
static const char *const ocl_xkernel_names[OCL_X_COUNT] = {
    OCL_XKERNELS(OCL_KERNEL_NAME_) OCL_XKERNELS_FP64(OCL_KERNEL_NAME_)};

/* Whether the device lists cl_khr_fp64 among its extensions. */
static int ocl_has_fp64(cl_device_id id) {
    size_t size = 0;
    int has = 0;
    if (clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, 0, NULL, &size) != CL_SUCCESS || !size)
        return 0;
    char *ext = malloc(size + 1);
    if (!ext)
        return 0;
    if (clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, size, ext, NULL) == CL_SUCCESS) {
        ext[size] = '\0';
        const char *p = ext;
        while (!has && (p = strstr(p, "cl_khr_fp64")) != NULL) {
            has = (p == ext || p[-1] == ' ') && (p[11] == '\0' || p[11] == ' ');
            p++;
        }
    }
    free(ext);
    return has;
}

/* Creates this file's kernels from the built program (the f64 ones only where the device has
 * cl_khr_fp64; without it they are not compiled and their Cast entries are left out). */
int32_t ocl__make_table(ses_drv_device_t *device) {
    cl_int err = CL_SUCCESS;

    device->fp64 = ocl_has_fp64(device->info->id);
    for (int k = 0; k < OCL_X_COUNT; k++) {
        if (k >= OCL_X_FP64_FIRST && !device->fp64)
            break;
        device->xkernels[k] = clCreateKernel(device->program, ocl_xkernel_names[k], &err);
        if (device->xkernels[k] && err == CL_SUCCESS)
            continue;
        device->xkernels[k] = NULL;
        if (k < OCL_X_FP64_FIRST)
            return OCL_DEVICE_FAIL(device, SES_DRV_INTERNAL,
                                   "open_device: clCreateKernel(%s) failed: %s",
                                   ocl_xkernel_names[k], ocl__error_name(err));
        /* The extension is listed but its kernels did not compile: go without f64. */
        for (int j = OCL_X_FP64_FIRST; j < k; j++) {
            clReleaseKernel(device->xkernels[j]);
            device->xkernels[j] = NULL;
        }
        device->fp64 = 0;
        break;
    }
    device->table = ocl_kernels;
    device->n_table = (uint32_t)(sizeof ocl_kernels / sizeof ocl_kernels[0]);
    if (!device->fp64)
        device->n_table -= (uint32_t)sizeof ocl_fp64_marks;
    return SES_DRV_OK;
}

void ocl__free_table(ses_drv_device_t *device) {
    for (int k = 0; k < OCL_X_COUNT; k++) {
        if (device->xkernels[k])
            clReleaseKernel(device->xkernels[k]);
        device->xkernels[k] = NULL;
    }
    device->table = NULL;
    device->n_table = 0;
}
