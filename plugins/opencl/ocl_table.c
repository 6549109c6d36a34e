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
#define ANY(OP, FN)                                                                             \
    E(OP, "f32->f32", FN) E(OP, "f64->f64", FN) E(OP, "f16->f16", FN) E(OP, "bf16->bf16", FN) \
    E(OP, "i8->i8", FN) E(OP, "i16->i16", FN) E(OP, "i32->i32", FN) E(OP, "i64->i64", FN)     \
    E(OP, "u8->u8", FN) E(OP, "u16->u16", FN) E(OP, "u32->u32", FN) E(OP, "u64->u64", FN)     \
    E(OP, "bool->bool", FN)
#define ANYV(OP, FN)                                                                  \
    E(OP, "f32...->f32", FN) E(OP, "f64...->f64", FN) E(OP, "f16...->f16", FN)        \
    E(OP, "bf16...->bf16", FN) E(OP, "i8...->i8", FN) E(OP, "i16...->i16", FN)        \
    E(OP, "i32...->i32", FN) E(OP, "i64...->i64", FN) E(OP, "u8...->u8", FN)          \
    E(OP, "u16...->u16", FN) E(OP, "u32...->u32", FN) E(OP, "u64...->u64", FN)        \
    E(OP, "bool...->bool", FN)
#define GIDX(T, I) E("Gather", T "," I "->" T, ocl__k_gather)
#define GANY(I)                                                                               \
    GIDX("f32", I) GIDX("f64", I) GIDX("f16", I) GIDX("bf16", I) GIDX("i8", I) GIDX("i16", I) \
    GIDX("i32", I) GIDX("i64", I) GIDX("u8", I) GIDX("u16", I) GIDX("u32", I) GIDX("u64", I)  \
    GIDX("bool", I)
#define PAD(T) E("Pad", T "->" T, ocl__k_pad) E("Pad", T "," T "->" T, ocl__k_pad)
#define CLIP(T)                                                                            \
    E("Clip", T "->" T, ocl__k_clip) E("Clip", T "," T "->" T, ocl__k_clip)                 \
    E("Clip", T "," T "," T "->" T, ocl__k_clip)
#define SPLIT(T)                                                                           \
    E("Split", T "->" T, ocl__k_split) E("Split", T "->" T "," T, ocl__k_split)             \
    E("Split", T "->" T "," T "," T, ocl__k_split)                                         \
    E("Split", T "->" T "," T "," T "," T, ocl__k_split)                                   \
    E("Split", T "->" T "," T "," T "," T "," T, ocl__k_split)                             \
    E("Split", T "->" T "," T "," T "," T "," T "," T, ocl__k_split)                       \
    E("Split", T "->" T "," T "," T "," T "," T "," T "," T, ocl__k_split)                 \
    E("Split", T "->" T "," T "," T "," T "," T "," T "," T "," T, ocl__k_split)
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

static const ses_drv_kernel_t ocl_kernels[] = {
    U("Neg") U("Abs") U("Relu") U("Exp") U("Log") U("Sqrt") U("Reciprocal") U("Sigmoid")
    U("Tanh") U("Softplus") U("Erf") U("LeakyRelu")
    U("Cos") U("Sin") U("Tan") U("Acos") U("Asin") U("Atan") U("Cosh") U("Sinh") U("Asinh")
    U("Acosh") U("Atanh") U("Round") U("Sign")
    B("Add") B("Sub") B("Mul") B("Div") B("Pow") B("Min") B("Max")
    B("ReluGrad") B("SigmoidGrad") B("TanhGrad") B("LeakyReluGrad") B("PRelu")
    E("Equal", "f32,f32->bool", ocl__k_compare)
    E("Greater", "f32,f32->bool", ocl__k_compare)
    E("Less", "f32,f32->bool", ocl__k_compare)
    E("Where", "bool,f32,f32->f32", ocl__k_where)
    E("Where", "bool,i32,i32->i32", ocl__k_where)
    E("Where", "bool,i64,i64->i64", ocl__k_where)
    E("Where", "bool,f64,f64->f64", ocl__k_where)
    E("Where", "bool,u8,u8->u8", ocl__k_where)
    E("Where", "bool,bool,bool->bool", ocl__k_where)
    ANY("Identity", ocl__k_copy) ANY("Reshape", ocl__k_copy) ANY("Flatten", ocl__k_copy)
    ANY("Squeeze", ocl__k_copy) ANY("Unsqueeze", ocl__k_copy)
    ANY("Transpose", ocl__k_transpose) ANY("Slice", ocl__k_slice) ANY("ExpandLike", ocl__k_expand)
    ANYV("Concat", ocl__k_concat)
    GANY("i32") GANY("i64")
    E("Cast", "f32->i32", ocl__k_cast) E("Cast", "f32->i64", ocl__k_cast)
    E("Cast", "f32->u8", ocl__k_cast) E("Cast", "f32->bool", ocl__k_cast)
    E("Cast", "i32->f32", ocl__k_cast) E("Cast", "i64->f32", ocl__k_cast)
    E("Cast", "u8->f32", ocl__k_cast) E("Cast", "bool->f32", ocl__k_cast)
    E("MatMul", "f32,f32->f32", ocl__k_matmul)
    E("Gemm", "f32,f32->f32", ocl__k_gemm)
    E("Gemm", "f32,f32,f32->f32", ocl__k_gemm)
    E("ReduceSum", "f32->f32", ocl__k_reduce)
    E("ReduceMean", "f32->f32", ocl__k_reduce)
    E("ReduceMax", "f32->f32", ocl__k_reduce)
    E("ReduceMin", "f32->f32", ocl__k_reduce)
    E("ReduceProd", "f32->f32", ocl__k_reduce)
    E("ReduceL1", "f32->f32", ocl__k_reduce)
    E("ReduceL2", "f32->f32", ocl__k_reduce)
    E("ReduceLogSum", "f32->f32", ocl__k_reduce)
    E("ReduceLogSumExp", "f32->f32", ocl__k_reduce)
    E("ReduceSumSquare", "f32->f32", ocl__k_reduce)
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
    E("SoftmaxCrossEntropyLoss", "f32,i64->f32", ocl__k_sce)
    E("SoftmaxCrossEntropyLoss", "f32,i32->f32", ocl__k_sce)
    E("SoftmaxCrossEntropyLoss", "f32,i64,f32->f32", ocl__k_sce)
    E("SoftmaxCrossEntropyLoss", "f32,i32,f32->f32", ocl__k_sce)
    E("SoftmaxCrossEntropyLoss", "f32,i64->f32,f32", ocl__k_sce)
    E("SoftmaxCrossEntropyLoss", "f32,i32->f32,f32", ocl__k_sce)
    E("SoftmaxCrossEntropyLoss", "f32,i64,f32->f32,f32", ocl__k_sce)
    E("SoftmaxCrossEntropyLoss", "f32,i32,f32->f32,f32", ocl__k_sce)
    E("SoftmaxCrossEntropyLossGrad", "f32,f32,i64->f32", ocl__k_sce_grad)
    E("SoftmaxCrossEntropyLossGrad", "f32,f32,i32->f32", ocl__k_sce_grad)
    E("SoftmaxCrossEntropyLossGrad", "f32,f32,i64,f32->f32", ocl__k_sce_grad)
    E("SoftmaxCrossEntropyLossGrad", "f32,f32,i32,f32->f32", ocl__k_sce_grad)
    E("NegativeLogLikelihoodLoss", "f32,i64->f32", ocl__k_nll)
    E("NegativeLogLikelihoodLoss", "f32,i32->f32", ocl__k_nll)
    E("NegativeLogLikelihoodLoss", "f32,i64,f32->f32", ocl__k_nll)
    E("NegativeLogLikelihoodLoss", "f32,i32,f32->f32", ocl__k_nll)
    E("NegativeLogLikelihoodLossGrad", "f32,f32,i64->f32", ocl__k_nll_grad)
    E("NegativeLogLikelihoodLossGrad", "f32,f32,i32->f32", ocl__k_nll_grad)
    E("NegativeLogLikelihoodLossGrad", "f32,f32,i64,f32->f32", ocl__k_nll_grad)
    E("NegativeLogLikelihoodLossGrad", "f32,f32,i32,f32->f32", ocl__k_nll_grad)
    E("ScalarLike", "f32->f32", ocl__k_scalar_like)
    E("SGD", "f32,f32,f32->", ocl__k_optim)
    E("Momentum", "f32,f32,f32,f32->", ocl__k_optim)
    E("Adam", "f32,f32,f32,f32,f32,f32->", ocl__k_optim)
    E("Equal", "i32,i32->bool", ocl__k_compare)
    E("Equal", "i64,i64->bool", ocl__k_compare)
    E("Equal", "u8,u8->bool", ocl__k_compare)
    E("Equal", "bool,bool->bool", ocl__k_compare)
    E("Greater", "i32,i32->bool", ocl__k_compare)
    E("Greater", "i64,i64->bool", ocl__k_compare)
    E("Greater", "u8,u8->bool", ocl__k_compare)
    E("Less", "i32,i32->bool", ocl__k_compare)
    E("Less", "i64,i64->bool", ocl__k_compare)
    E("Less", "u8,u8->bool", ocl__k_compare)
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
    E("Shape", "f32->i64", ocl__k_shape) E("Shape", "f64->i64", ocl__k_shape)
    E("Shape", "f16->i64", ocl__k_shape) E("Shape", "bf16->i64", ocl__k_shape)
    E("Shape", "i8->i64", ocl__k_shape) E("Shape", "i16->i64", ocl__k_shape)
    E("Shape", "i32->i64", ocl__k_shape) E("Shape", "i64->i64", ocl__k_shape)
    E("Shape", "u8->i64", ocl__k_shape) E("Shape", "u16->i64", ocl__k_shape)
    E("Shape", "u32->i64", ocl__k_shape) E("Shape", "u64->i64", ocl__k_shape)
    E("Shape", "bool->i64", ocl__k_shape)
    E("ConstantOfShape", "i64->f32", ocl__k_constant_of_shape)
    E("ConstantOfShape", "i64->f64", ocl__k_constant_of_shape)
    E("ConstantOfShape", "i64->i32", ocl__k_constant_of_shape)
    E("ConstantOfShape", "i64->i64", ocl__k_constant_of_shape)
    E("ConstantOfShape", "i64->bool", ocl__k_constant_of_shape)
    E("Range", "f32,f32,f32->f32", ocl__k_range)
    E("Range", "f64,f64,f64->f64", ocl__k_range)
    E("Range", "i32,i32,i32->i32", ocl__k_range)
    E("Range", "i64,i64,i64->i64", ocl__k_range)
    /* g-ocl: logic ops on bool (compare_u8 with op codes 3..6) */
    E("And", "bool,bool->bool", ocl__k_compare)
    E("Or", "bool,bool->bool", ocl__k_compare)
    E("Xor", "bool,bool->bool", ocl__k_compare)
    E("Not", "bool->bool", ocl__k_compare)
    /* Last: the entries that need cl_khr_fp64, left out of the table on devices without it. */
    OCL_FP64_KERNELS(E)
};

/* One mark per entry at the end of ocl_kernels that needs cl_khr_fp64. */
#define OCL_MARK(OP, SIG, FN) 1,
static const char ocl_fp64_marks[] = {OCL_FP64_KERNELS(OCL_MARK)};

/* The kernels of ocl_kernels.cl that ocl_driver.c does not create, by OCL_X_*. */
static const char *const ocl_xkernel_names[OCL_X_COUNT] = {
    [OCL_X_COMPARE_I32] = "compare_i32",     [OCL_X_COMPARE_I64] = "compare_i64",
    [OCL_X_COMPARE_U8] = "compare_u8",       [OCL_X_IM2COL] = "im2col_f32",
    [OCL_X_COL2IM] = "col2im_f32",           [OCL_X_CHANNEL_FILL] = "channel_fill_f32",
    [OCL_X_POOL] = "pool_f32",               [OCL_X_POOL_GRAD] = "pool_grad_f32",
    [OCL_X_BATCH_NORM] = "batch_norm_f32",   [OCL_X_PAD4] = "pad4",
    [OCL_X_PAD8] = "pad8",                   [OCL_X_CLIP_F32] = "clip_f32",
    [OCL_X_CLIP_I32] = "clip_i32",           [OCL_X_CLIP_I64] = "clip_i64",
    [OCL_X_PAD_GRAD] = "pad_grad_f32",
    [OCL_X_CAST_F32_F64] = "cast_f32_f64",   [OCL_X_CAST_F64_F32] = "cast_f64_f32",
    [OCL_X_CLIP_F64] = "clip_f64",           [OCL_X_BATCH_NORM_F64] = "batch_norm_f64",
    [OCL_X_IM2COL_F64] = "im2col_f64",       [OCL_X_COL2IM_F64] = "col2im_f64",
    [OCL_X_CHANNEL_FILL_F64] = "channel_fill_f64", [OCL_X_POOL_F64] = "pool_f64",
    [OCL_X_POOL_GRAD_F64] = "pool_grad_f64", [OCL_X_PAD_GRAD_F64] = "pad_grad_f64",
    [OCL_X_COMPARE_F64] = "compare_f64",
};

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
