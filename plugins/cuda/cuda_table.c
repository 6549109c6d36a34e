/*
 * The CUDA driver's kernel table.
 */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_ops.h"

/* ---------------------------------------------------------------------------------------------
 * The table.
 * ------------------------------------------------------------------------------------------- */

/* One entry: F is its flags (SES_DRV_KERNEL_NO_CAPTURE for the kernels that wait), CR and DE
 * its per-node state's create and destroy (NULL: none). */
#define KE(o, sig, fn, sup, f, cr, de)        \
    {.struct_size = sizeof(ses_drv_kernel_t), \
     .op = (o),                               \
     .signature = (sig),                      \
     .priority = 0,                           \
     .flags = (f),                            \
     .supports_node = (sup),                  \
     .compute = (fn),                         \
     .create = (cr),                          \
     .destroy = (de)},
#define KF(o, sig, fn, sup, f) KE(o, sig, fn, sup, f, NULL, NULL)
#define K(o, sig, fn) KF(o, sig, fn, cuda__rank_supports, 0)
/* An entry with per-node state (create, destroy). */
#define KS(o, sig, fn, cr, de) KE(o, sig, fn, cuda__rank_supports, 0, cr, de)
#define NC SES_DRV_KERNEL_NO_CAPTURE

/* Dtype lists: M(args..., T) for each T. */
/* clang-format off */
#define FP(M, ...) M(__VA_ARGS__, "f32") M(__VA_ARGS__, "f64") M(__VA_ARGS__, "f16") \
    M(__VA_ARGS__, "bf16")
#define FLOATS(M, ...) M(__VA_ARGS__, "f32") M(__VA_ARGS__, "f64")
#define NUMBERS(M, ...) FLOATS(M, __VA_ARGS__) M(__VA_ARGS__, "i32") M(__VA_ARGS__, "i64")
#define ORDERED(M, ...) NUMBERS(M, __VA_ARGS__) M(__VA_ARGS__, "u8")
#define BASIC(M, ...) ORDERED(M, __VA_ARGS__) M(__VA_ARGS__, "bool")
#define ANY(M, ...) BASIC(M, __VA_ARGS__) M(__VA_ARGS__, "f16") M(__VA_ARGS__, "bf16") \
    M(__VA_ARGS__, "i8") M(__VA_ARGS__, "i16") M(__VA_ARGS__, "u16") M(__VA_ARGS__, "u32") \
    M(__VA_ARGS__, "u64")
/* clang-format on */

/* Entry shapes by signature. */
#define UN(o, fn, T) K(o, T "->" T, fn)
#define BIN(o, fn, T) K(o, T "," T "->" T, fn)
#define BIN_NC(o, fn, T) KF(o, T "," T "->" T, fn, cuda__rank_supports, NC)
#define TER(o, fn, T) K(o, T "," T "," T "->" T, fn)
#define CMP(o, fn, T) K(o, T "," T "->bool", fn)
#define WHERE(o, fn, T) K(o, "bool," T "," T "->" T, fn)
#define VAR(o, fn, T) K(o, T "...->" T, fn)
#define TO_I64(o, fn, T) K(o, T "->i64", fn)
#define FROM_I64(o, fn, T) K(o, "i64->" T, fn)
#define SCE_L(o, fn, T, L)                                  \
    KF(o, T "," L "->" T, fn, cuda__rank_supports, NC)       \
    KF(o, T "," L "->" T "," T, fn, cuda__rank_supports, NC) \
    KF(o, T "," L "," T "->" T, fn, cuda__rank_supports, NC) \
    KF(o, T "," L "," T "->" T "," T, fn, cuda__rank_supports, NC)
#define SCE(o, fn, T) SCE_L(o, fn, T, "i64") SCE_L(o, fn, T, "i32")
#define SCE_GRAD_L(o, fn, T, L)                             \
    KF(o, T "," T "," L "->" T, fn, cuda__rank_supports, NC) \
    KF(o, T "," T "," L "," T "->" T, fn, cuda__rank_supports, NC)
#define SCE_GRAD(o, fn, T) SCE_GRAD_L(o, fn, T, "i64") SCE_GRAD_L(o, fn, T, "i32")
/* SGD, Momentum, Adam: no outputs, the signature ends in the arrow. */
#define OPTIMIZERS(unused, fn, T)               \
    K("SGD", T "," T "," T "->", fn)            \
    K("Momentum", T "," T "," T "," T "->", fn) \
    K("Adam", T "," T "," T "," T "," T "," T "->", fn)
/* Conv, ConvGrad and the forward pools keep per-node state (cuDNN or im2col, see above). */
#define CNN_UN(o, fn, T) KS(o, T "->" T, fn, cuda__cnn_create, cuda__cnn_destroy)
#define CNN_BIN(o, fn, T) KS(o, T "," T "->" T, fn, cuda__cnn_create, cuda__cnn_destroy)
#define CNN_TER(o, fn, T) KS(o, T "," T "," T "->" T, fn, cuda__cnn_create, cuda__cnn_destroy)
#define BN(o, fn, T) K(o, T "," T "," T "," T "," T "->" T, fn)
#define DROPOUT(o, fn, T) K(o, T "->" T ",bool", fn)
#define SPLIT(o, fn, T)                                                 \
    K(o, T "->" T, fn)                                                  \
    K(o, T "->" T "," T, fn)                                            \
    K(o, T "->" T "," T "," T, fn) K(o, T "->" T "," T "," T "," T, fn) \
        K(o, T "->" T "," T "," T "," T "," T, fn)                      \
            K(o, T "->" T "," T "," T "," T "," T "," T, fn)            \
                K(o, T "->" T "," T "," T "," T "," T "," T "," T, fn)  \
                    K(o, T "->" T "," T "," T "," T "," T "," T "," T "," T, fn)
#define IDX(o, fn, T)                                 \
    KF(o, T ",i32->" T, fn, cuda__rank_supports, NC) \
    KF(o, T ",i64->" T, fn, cuda__rank_supports, NC)
#define CAST_TO(o, fn, A, B) K(o, A "->" B, fn)
/* BASIC spelled again: a macro is not expanded inside its own expansion. */
#define CAST_FROM(o, fn, A)                                                   \
    CAST_TO(o, fn, A, "f32")                                                  \
    CAST_TO(o, fn, A, "f64")                                                  \
    CAST_TO(o, fn, A, "i32") CAST_TO(o, fn, A, "i64") CAST_TO(o, fn, A, "u8") \
        CAST_TO(o, fn, A, "bool")
/* h-cuda: LayerNormalization with X, Scale[, B], giving Y[, Mean[, InvStdDev]]. */
#define LAYER_NORM(o, fn, T)                                                      \
    K(o, T "," T "->" T, fn)                                                      \
    K(o, T "," T "->" T "," T, fn) K(o, T "," T "->" T "," T "," T, fn)           \
        K(o, T "," T "," T "->" T, fn) K(o, T "," T "," T "->" T "," T, fn)       \
            K(o, T "," T "," T "->" T "," T "," T, fn)
/* h-cuda: TopK, X -> Values, Indices (K is the outputs' size). */
#define TOPK(o, fn, T) K(o, T "->" T ",i64", fn)
/* h-cuda: Resize and ResizeGrad, without antialias (refused, so that the node runs elsewhere). */
#define RESIZE(o, fn, T) KF(o, T "->" T, fn, cuda__resize_supports, 0)

static const ses_drv_kernel_t cuda_kernels[] = {
    /* clang-format off */
    ANY(UN, "Identity", cuda__k_copy_op)
    ANY(UN, "Reshape", cuda__k_copy_op)
    ANY(UN, "Flatten", cuda__k_copy_op)
    ANY(UN, "Squeeze", cuda__k_copy_op)
    ANY(UN, "Unsqueeze", cuda__k_copy_op)
    FP(BIN, "Add", cuda__k_binary)
    BIN("Add", cuda__k_binary, "i32") BIN("Add", cuda__k_binary, "i64")
    FP(BIN, "Sub", cuda__k_binary)
    BIN("Sub", cuda__k_binary, "i32") BIN("Sub", cuda__k_binary, "i64")
    FP(BIN, "Mul", cuda__k_binary)
    BIN("Mul", cuda__k_binary, "i32") BIN("Mul", cuda__k_binary, "i64")
    FP(BIN, "Div", cuda__k_binary)
    BIN_NC("Div", cuda__k_binary, "i32") BIN_NC("Div", cuda__k_binary, "i64")
    FP(BIN, "Pow", cuda__k_binary)
    BASIC(CMP, "Equal", cuda__k_compare)
    ORDERED(CMP, "Greater", cuda__k_compare)
    ORDERED(CMP, "Less", cuda__k_compare)
    BASIC(WHERE, "Where", cuda__k_where) WHERE("Where", cuda__k_where, "f16")
    WHERE("Where", cuda__k_where, "bf16")
    FP(UN, "Neg", cuda__k_unary) UN("Neg", cuda__k_unary, "i32") UN("Neg", cuda__k_unary, "i64")
    FP(UN, "Abs", cuda__k_unary) UN("Abs", cuda__k_unary, "i32") UN("Abs", cuda__k_unary, "i64")
    FP(UN, "Relu", cuda__k_unary) UN("Relu", cuda__k_unary, "i32") UN("Relu", cuda__k_unary, "i64")
    FP(UN, "Exp", cuda__k_unary)
    FP(UN, "Log", cuda__k_unary)
    FP(UN, "Sqrt", cuda__k_unary)
    FP(UN, "Reciprocal", cuda__k_unary)
    FP(UN, "Sigmoid", cuda__k_unary)
    FP(UN, "Tanh", cuda__k_unary)
    FP(UN, "Softplus", cuda__k_unary)
    FP(UN, "Erf", cuda__k_unary)
    FP(UN, "LeakyRelu", cuda__k_unary)
    BASIC(CAST_FROM, "Cast", cuda__k_cast)
    CAST_TO("Cast", cuda__k_cast, "f32", "f16") CAST_TO("Cast", cuda__k_cast, "f32", "bf16")
    CAST_TO("Cast", cuda__k_cast, "f16", "f32") CAST_TO("Cast", cuda__k_cast, "bf16", "f32")
    FP(BIN, "MatMul", cuda__k_matmul)
    FP(BIN, "Gemm", cuda__k_gemm_op)
    FP(TER, "Gemm", cuda__k_gemm_op)
    NUMBERS(UN, "ReduceSum", cuda__k_reduce)
    NUMBERS(UN, "ReduceMax", cuda__k_reduce)
    FLOATS(UN, "ReduceMean", cuda__k_reduce)
    FLOATS(UN, "Softmax", cuda__k_softmax)
    FLOATS(UN, "LogSoftmax", cuda__k_softmax)
    NUMBERS(TO_I64, "ArgMax", cuda__k_argmax)
    ANY(UN, "Transpose", cuda__k_transpose)
    ANY(VAR, "Concat", cuda__k_concat)
    ANY(UN, "Slice", cuda__k_slice)
    ANY(IDX, "Gather", cuda__k_gather)
    ANY(UN, "ExpandLike", cuda__k_expand_like)
    NUMBERS(UN, "ReduceSumLike", cuda__k_reduce_sum_like)
    ANY(UN, "ScalarLike", cuda__k_scalar_like)
    FP(BIN, "ReluGrad", cuda__k_binary)
    FP(BIN, "LeakyReluGrad", cuda__k_binary)
    FP(BIN, "SigmoidGrad", cuda__k_binary)
    FP(BIN, "TanhGrad", cuda__k_binary)
    FLOATS(BIN, "SoftmaxGrad", cuda__k_softmax)
    FLOATS(BIN, "LogSoftmaxGrad", cuda__k_softmax)
    FP(TER, "MatMulGrad", cuda__k_matmul_grad)
    FP(UN, "ReduceGrad", cuda__k_reduce_grad)
    FLOATS(IDX, "GatherGrad", cuda__k_gather_grad)
    ANY(UN, "SliceGrad", cuda__k_slice_grad)
    NUMBERS(UN, "Clip", cuda__k_clip)
    NUMBERS(BIN, "Clip", cuda__k_clip)
    NUMBERS(TER, "Clip", cuda__k_clip)
    NUMBERS(TER, "Range", cuda__k_range)
    NUMBERS(FROM_I64, "ConstantOfShape", cuda__k_constant_of_shape)
    FROM_I64("ConstantOfShape", cuda__k_constant_of_shape, "bool")
    ANY(TO_I64, "Shape", cuda__k_shape)
    NUMBERS(SPLIT, "Split", cuda__k_split)
    FLOATS(CNN_BIN, "Conv", cuda__k_conv)
    FLOATS(CNN_TER, "Conv", cuda__k_conv)
    FLOATS(CNN_TER, "ConvGrad", cuda__k_conv_grad)
    FLOATS(CNN_UN, "MaxPool", cuda__k_pool)
    FLOATS(CNN_UN, "AveragePool", cuda__k_pool)
    FLOATS(BIN, "MaxPoolGrad", cuda__k_pool)
    FLOATS(UN, "AveragePoolGrad", cuda__k_pool)
    FLOATS(BN, "BatchNormalization", cuda__k_batch_norm)
    FLOATS(DROPOUT, "Dropout", cuda__k_dropout)
    NUMBERS(UN, "Pad", cuda__k_pad)
    NUMBERS(BIN, "Pad", cuda__k_pad)
    FLOATS(UN, "PadGrad", cuda__k_pad_grad)
    /* The loss ops check their labels on the device and wait for the check. */
    FLOATS(SCE, "SoftmaxCrossEntropyLoss", cuda__k_sce)
    FLOATS(SCE_GRAD, "SoftmaxCrossEntropyLossGrad", cuda__k_sce)
    FLOATS(OPTIMIZERS, "", cuda__k_optimizer)
    /* h-cuda (issue #22): the ops transformers and detection models spend their time in. */
    FLOATS(UN, "Gelu", cuda__k_unary)
    FLOATS(BIN, "GeluGrad", cuda__k_binary)
    FLOATS(LAYER_NORM, "LayerNormalization", cuda__k_layer_norm)
    FLOATS(TER, "LayerNormalizationGrad", cuda__k_layer_norm_grad)
    ANY(IDX, "GatherElements", cuda__k_gather_elements)
    NUMBERS(TOPK, "TopK", cuda__k_topk)
    FLOATS(RESIZE, "Resize", cuda__k_resize)
    RESIZE("Resize", cuda__k_resize, "i8") RESIZE("Resize", cuda__k_resize, "u8")
    RESIZE("Resize", cuda__k_resize, "i32") RESIZE("Resize", cuda__k_resize, "i64")
    FLOATS(RESIZE, "ResizeGrad", cuda__k_resize_grad)
    FLOATS(CNN_BIN, "ConvTranspose", cuda__k_conv_transpose)
    FLOATS(CNN_TER, "ConvTranspose", cuda__k_conv_transpose)
    /* NonMaxSuppression checks the selection's size on the device and waits for the check. */
    KF("NonMaxSuppression", "f32,f32->i64", cuda__k_nms, cuda__nms_supports, NC)
    /* clang-format on */
};

int32_t cuda__get_kernels(ses_drv_device_t *device, const ses_drv_kernel_t **out_kernels,
                          uint32_t *out_count, uint32_t *out_stride) {
    if (!device)
        return SES_DRV_INVALID_ARGUMENT;
    if (!out_kernels || !out_count || !out_stride)
        return CUDA_DEVICE_FAIL(device, SES_DRV_INVALID_ARGUMENT,
                                "get_kernels: an out parameter is NULL");
    *out_kernels = cuda_kernels;
    *out_count = (uint32_t)(sizeof cuda_kernels / sizeof cuda_kernels[0]);
    *out_stride = (uint32_t)sizeof(ses_drv_kernel_t);
    return SES_DRV_OK;
}
