/* The table of op schemas, lookup, and the checks run before every op's inference. */
#include "op_schema.h"

#include <stdio.h>
#include <string.h>

#include "../error.h"
#include "cnn.h"
#include "infer.h"
#include "spatial.h"
#include "value_shape.h"
#include "reverse_sequence.h"
#include "einsum.h"
#include "tfidf.h"
#include "string_ops.h"

#define BIT(i) ((uint64_t)1 << (i))

/* One line per op: name, min and max inputs, default and max outputs, inputs whose value
 * inference reads, inference. Grouped by family, in the order of the files that infer them. */
/* Entries leave trailing fields (inplace_inputs) out when they are zero. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const ses__op_schema_t schemas[] = {
    /* elementwise.c */
    {"Identity", 1, 1, 1, 1, 0, ses__infer_identity},
    {"Add", 2, 2, 1, 1, 0, ses__infer_arithmetic},
    {"Sub", 2, 2, 1, 1, 0, ses__infer_arithmetic},
    {"Mul", 2, 2, 1, 1, 0, ses__infer_arithmetic},
    {"Div", 2, 2, 1, 1, 0, ses__infer_arithmetic},
    {"Pow", 2, 2, 1, 1, 0, ses__infer_pow},
    {"Equal", 2, 2, 1, 1, 0, ses__infer_equal},
    {"Greater", 2, 2, 1, 1, 0, ses__infer_compare},
    {"Less", 2, 2, 1, 1, 0, ses__infer_compare},
    {"Where", 3, 3, 1, 1, 0, ses__infer_where},
    {"Neg", 1, 1, 1, 1, 0, ses__infer_unary_numeric},
    {"Abs", 1, 1, 1, 1, 0, ses__infer_unary_numeric},
    {"Relu", 1, 1, 1, 1, 0, ses__infer_unary_numeric},
    {"Exp", 1, 1, 1, 1, 0, ses__infer_unary_float},
    {"Log", 1, 1, 1, 1, 0, ses__infer_unary_float},
    {"Sqrt", 1, 1, 1, 1, 0, ses__infer_unary_float},
    {"Reciprocal", 1, 1, 1, 1, 0, ses__infer_unary_float},
    {"Sigmoid", 1, 1, 1, 1, 0, ses__infer_unary_float},
    {"Tanh", 1, 1, 1, 1, 0, ses__infer_unary_float},
    {"Softplus", 1, 1, 1, 1, 0, ses__infer_unary_float},
    {"Erf", 1, 1, 1, 1, 0, ses__infer_unary_float},
    {"LeakyRelu", 1, 1, 1, 1, 0, ses__infer_leaky_relu},
    {"PRelu", 2, 2, 1, 1, 0, ses__infer_prelu},
    {"Min", 1, SES__MAX_INPUTS, 1, 1, 0, ses__infer_min_max},
    {"Max", 1, SES__MAX_INPUTS, 1, 1, 0, ses__infer_min_max},
    {"Mod", 2, 2, 1, 1, 0, ses__infer_mod},
    {"And", 2, 2, 1, 1, 0, ses__infer_logical},
    {"Or", 2, 2, 1, 1, 0, ses__infer_logical},
    {"Xor", 2, 2, 1, 1, 0, ses__infer_logical},
    {"BitShift", 2, 2, 1, 1, 0, ses__infer_bit_shift},
    {"Not", 1, 1, 1, 1, 0, ses__infer_not},
    {"Sign", 1, 1, 1, 1, 0, ses__infer_sign},
    {"IsNaN", 1, 1, 1, 1, 0, ses__infer_is_nan},
    {"IsInf", 1, 1, 1, 1, 0, ses__infer_is_inf},
    {"Round", 1, 1, 1, 1, 0, ses__infer_unary_float},
    {"Floor", 1, 1, 1, 1, 0, ses__infer_unary_float},
    {"Ceil", 1, 1, 1, 1, 0, ses__infer_unary_float},
    {"Cos", 1, 1, 1, 1, 0, ses__infer_unary_float},
    {"Sin", 1, 1, 1, 1, 0, ses__infer_unary_float},
    {"Tan", 1, 1, 1, 1, 0, ses__infer_unary_float},
    {"Acos", 1, 1, 1, 1, 0, ses__infer_unary_float},
    {"Asin", 1, 1, 1, 1, 0, ses__infer_unary_float},
    {"Atan", 1, 1, 1, 1, 0, ses__infer_unary_float},
    {"Cosh", 1, 1, 1, 1, 0, ses__infer_unary_float},
    {"Sinh", 1, 1, 1, 1, 0, ses__infer_unary_float},
    {"Asinh", 1, 1, 1, 1, 0, ses__infer_unary_float},
    {"Acosh", 1, 1, 1, 1, 0, ses__infer_unary_float},
    {"Atanh", 1, 1, 1, 1, 0, ses__infer_unary_float},
    /* matmul.c */
    {"MatMul", 2, 2, 1, 1, 0, ses__infer_matmul},
    {"Gemm", 2, 3, 1, 1, 0, ses__infer_gemm},
    {"FusedGemm", 2, 3, 1, 1, 0, ses__infer_fused_gemm},
    /* reduce.c. The Reduce ops other than ReduceSum accept a second input only to refuse the
     * opset-18 form (axes as an input) with a clear message rather than a bare count error. */
    {"ReduceSum", 1, 2, 1, 1, BIT(1), ses__infer_reduce_sum},
    {"ReduceMean", 1, 2, 1, 1, 0, ses__infer_reduce_mean},
    {"ReduceMax", 1, 2, 1, 1, 0, ses__infer_reduce_max},
    {"ArgMax", 1, 1, 1, 1, 0, ses__infer_argmax},
    {"ReduceMin", 1, 2, 1, 1, 0, ses__infer_reduce_numeric},
    {"ReduceProd", 1, 2, 1, 1, 0, ses__infer_reduce_numeric},
    {"ReduceL1", 1, 2, 1, 1, 0, ses__infer_reduce_numeric},
    {"ReduceL2", 1, 2, 1, 1, 0, ses__infer_reduce_float},
    {"ReduceLogSum", 1, 2, 1, 1, 0, ses__infer_reduce_float},
    {"ReduceLogSumExp", 1, 2, 1, 1, 0, ses__infer_reduce_float},
    {"ReduceSumSquare", 1, 2, 1, 1, 0, ses__infer_reduce_numeric},
    {"ArgMin", 1, 1, 1, 1, 0, ses__infer_argmax},
    /* softmax.c */
    {"Softmax", 1, 1, 1, 1, 0, ses__infer_softmax},
    {"LogSoftmax", 1, 1, 1, 1, 0, ses__infer_softmax},
    {"Hardmax", 1, 1, 1, 1, 0, ses__infer_softmax},
    /* shape_ops.c */
    {"Reshape", 2, 2, 1, 1, BIT(1), ses__infer_reshape},
    {"Flatten", 1, 1, 1, 1, 0, ses__infer_flatten},
    {"Squeeze", 1, 2, 1, 1, BIT(1), ses__infer_squeeze},
    {"Unsqueeze", 2, 2, 1, 1, BIT(1), ses__infer_unsqueeze},
    {"Transpose", 1, 1, 1, 1, 0, ses__infer_transpose},
    {"Concat", 1, SES__MAX_INPUTS, 1, 1, 0, ses__infer_concat},
    /* slice.c */
    {"Slice", 3, 5, 1, 1, BIT(1) | BIT(2) | BIT(3) | BIT(4), ses__infer_slice},
    /* gather.c: the indices are data, read by the kernel; OneHot's depth is shape-like. */
    {"Gather", 2, 2, 1, 1, 0, ses__infer_gather},
    {"GatherElements", 2, 2, 1, 1, 0, ses__infer_gather_elements},
    {"ScatterElements", 3, 3, 1, 1, 0, ses__infer_scatter_elements},
    {"OneHot", 3, 3, 1, 1, BIT(1), ses__infer_one_hot},
    {"GatherND", 2, 2, 1, 1, 0, ses__infer_gather_nd},
    {"ScatterND", 3, 3, 1, 1, 0, ses__infer_scatter_nd},
    /* cumsum_trilu.c: CumSum's axis and Trilu's k are shape-like. */
    {"CumSum", 2, 2, 1, 1, BIT(1), ses__infer_cumsum},
    {"Trilu", 1, 2, 1, 1, BIT(1), ses__infer_trilu},
    /* cast.c */
    {"Cast", 1, 1, 1, 1, 0, ses__infer_cast},
    /* checkpoint_ops.c: run by the runtime itself; Restore writes every input in place. */
    {"Save", 1, SES__MAX_INPUTS, 0, 0, 0, ses__infer_save, 0, 1},
    {"Restore", 1, SES__MAX_INPUTS, 0, 0, 0, ses__infer_restore, ~UINT64_C(0), 1},
    /* collective_ops.c: run by the runtime through the session's communicator */
    {"AllReduce", 1, SES__MAX_OUTPUTS, 1, SES__MAX_OUTPUTS, 0, ses__infer_allreduce, 0, 1},
    {"RankWeight", 1, 1, 1, 1, 0, ses__infer_rank_weight, 0, 1},
    /* grad_ops.c: the ops gradients are built from. "like" inputs give a shape or dtype only;
     * ReduceGrad's axes and SliceGrad's starts, ends, axes, steps are shape-like, as in
     * ReduceSum and Slice. */
    {"ExpandLike", 2, 2, 1, 1, 0, ses__infer_expand_like},
    {"ReduceSumLike", 2, 2, 1, 1, 0, ses__infer_reduce_sum_like},
    {"ScalarLike", 1, 1, 1, 1, 0, ses__infer_scalar_like},
    {"ReshapeLike", 2, 2, 1, 1, 0, ses__infer_reshape_like},
    {"CastLike", 2, 2, 1, 1, 0, ses__infer_cast_like},
    {"ReluGrad", 2, 2, 1, 1, 0, ses__infer_activation_grad},
    {"LeakyReluGrad", 2, 2, 1, 1, 0, ses__infer_activation_grad},
    {"SigmoidGrad", 2, 2, 1, 1, 0, ses__infer_activation_grad},
    {"TanhGrad", 2, 2, 1, 1, 0, ses__infer_activation_grad},
    {"SoftmaxGrad", 2, 2, 1, 1, 0, ses__infer_softmax_grad},
    {"LogSoftmaxGrad", 2, 2, 1, 1, 0, ses__infer_softmax_grad},
    {"MatMulGrad", 3, 3, 1, 1, 0, ses__infer_matmul_grad},
    {"ReduceGrad", 2, 3, 1, 1, BIT(2), ses__infer_reduce_grad},
    {"GatherGrad", 3, 3, 1, 1, 0, ses__infer_gather_grad},
    {"SliceGrad", 4, 6, 1, 1, BIT(2) | BIT(3) | BIT(4) | BIT(5), ses__infer_slice_grad},
    {"ConcatGrad", 2, SES__MAX_INPUTS, 1, 1, 0, ses__infer_concat_grad},
    /* train_ops.c: the losses (SoftmaxCrossEntropyLoss's optional second output is log_prob);
     * the optimizers have no outputs and update the inputs marked in the last field in place. */
    {"SoftmaxCrossEntropyLoss", 2, 3, 1, 2, 0, ses__infer_softmax_cross_entropy_loss},
    {"SoftmaxCrossEntropyLossGrad", 3, 4, 1, 1, 0, ses__infer_softmax_cross_entropy_loss_grad},
    {"NegativeLogLikelihoodLoss", 2, 3, 1, 1, 0, ses__infer_nll_loss},
    {"NegativeLogLikelihoodLossGrad", 3, 4, 1, 1, 0, ses__infer_nll_loss_grad},
    {"SGD", 3, 3, 0, 0, 0, ses__infer_sgd, BIT(0)},
    {"Momentum", 4, 4, 0, 0, 0, ses__infer_momentum, BIT(0) | BIT(3)},
    {"Adam", 6, 6, 0, 0, 0, ses__infer_adam, BIT(0) | BIT(3) | BIT(4) | BIT(5)},
    /* SGD(var, MatMulGrad(dy, A, B; input), lr) as one node: what fusion (compile/fuse.c) runs
     * where the driver has it, so that the gradient is never written */
    {"MatMulGradSGD", 5, 5, 0, 0, 0, ses__infer_matmul_grad_sgd, BIT(0)},
    /* cnn.c: convolution, pooling, normalization and the shape ops exported models use, with
     * the gradient ops of the differentiable ones. Shape-like inputs (Pad's pads and axes,
     * Expand's shape, Split's split, ConstantOfShape's input, Range's scalars, Dropout's
     * training_mode) are read at compile time. */
    {"Conv", 2, 3, 1, 1, 0, ses__infer_conv},
    {"FusedConv", 2, 4, 1, 1, 0, ses__infer_fused_conv},
    {"ConvGrad", 3, 3, 1, 1, 0, ses__infer_conv_grad},
    {"MaxPool", 1, 1, 1, 2, 0, ses__infer_max_pool},
    {"AveragePool", 1, 1, 1, 1, 0, ses__infer_average_pool},
    {"MaxPoolGrad", 2, 2, 1, 1, 0, ses__infer_pool_grad},
    {"AveragePoolGrad", 2, 2, 1, 1, 0, ses__infer_pool_grad},
    {"GlobalAveragePool", 1, 1, 1, 1, 0, ses__infer_global_pool},
    {"GlobalMaxPool", 1, 1, 1, 1, 0, ses__infer_global_pool},
    {"GlobalAveragePoolGrad", 2, 2, 1, 1, 0, ses__infer_global_average_pool_grad},
    /* nchwc.c: made by the compiler's layout pass */
    {"NchwcConv", 2, 4, 1, 1, 0, ses__infer_nchwc_conv},
    {"NchwcMaxPool", 1, 1, 1, 1, 0, ses__infer_nchwc_pool},
    {"NchwcAveragePool", 1, 1, 1, 1, 0, ses__infer_nchwc_pool},
    {"NchwcGlobalAveragePool", 1, 1, 1, 1, 0, ses__infer_nchwc_global_pool},
    {"NchwcGlobalMaxPool", 1, 1, 1, 1, 0, ses__infer_nchwc_global_pool},
    {"NchwcReorderOutput", 1, 1, 1, 1, 0, ses__infer_nchwc_reorder_output},
    {"BatchNormalization", 3, 5, 1, 3, 0, ses__infer_batch_norm},
    {"Dropout", 1, 3, 1, 2, BIT(2), ses__infer_dropout},
    /* LayerNormalization's optional outputs are Mean and InvStdDev. */
    {"LayerNormalization", 2, 3, 1, 3, 0, ses__infer_layer_norm},
    {"LayerNormalizationGrad", 3, 3, 1, 1, 0, ses__infer_layer_norm_grad},
    {"Pad", 1, 4, 1, 1, BIT(1) | BIT(3), ses__infer_pad},
    {"PadGrad", 3, 5, 1, 1, BIT(2) | BIT(4), ses__infer_pad_grad},
    {"Clip", 1, 3, 1, 1, 0, ses__infer_clip},
    {"Expand", 2, 2, 1, 1, BIT(1), ses__infer_expand},
    {"Split", 1, 2, 1, SES__MAX_OUTPUTS, BIT(1), ses__infer_split},
    {"Shape", 1, 1, 1, 1, 0, ses__infer_shape},
    {"Size", 1, 1, 1, 1, 0, ses__infer_size},
    {"ConstantOfShape", 1, 1, 1, 1, BIT(0), ses__infer_constant_of_shape},
    {"Range", 3, 3, 1, 1, BIT(0) | BIT(1) | BIT(2), ses__infer_range},
    /* g-rnnq: the recurrent layers (rnn.c; outputs Y, Y_h[, Y_c]) and linear quantization
     * (quant.c). Optional inputs may be empty (absent). */
    {"RNN", 3, 6, 2, 2, 0, ses__infer_rnn},
    {"GRU", 3, 6, 2, 2, 0, ses__infer_gru},
    {"LSTM", 3, 8, 3, 3, 0, ses__infer_lstm},
    {"QuantizeLinear", 2, 3, 1, 1, 0, ses__infer_quantize_linear},
    {"DequantizeLinear", 2, 3, 1, 1, 0, ses__infer_dequantize_linear},
    {"DynamicQuantizeLinear", 1, 1, 3, 3, 0, ses__infer_dynamic_quantize_linear},
    {"MatMulInteger", 2, 4, 1, 1, 0, ses__infer_matmul_integer},
    {"ConvInteger", 2, 4, 1, 1, 0, ses__infer_conv_integer},
    {"QLinearMatMul", 8, 8, 1, 1, 0, ses__infer_qlinear_matmul},
    {"QLinearConv", 8, 9, 1, 1, 0, ses__infer_qlinear_conv},
    /* sequence.c: ONNX sequences (the importer's lists of edges) */
    {"SelectInput", 2, SES__MAX_INPUTS, 1, 1, BIT(0), ses__infer_select_input},
    /* activation.c, signal.c (group g-act): the parameterised activations and their gradient
     * ops, Sum and Mean, Det, the window generators, MelWeightMatrix, DFT, STFT. The scalars
     * that give the signal ops' output shapes are read at compile time. */
    {"Elu", 1, 1, 1, 1, 0, ses__infer_activation},
    {"Selu", 1, 1, 1, 1, 0, ses__infer_activation},
    {"Celu", 1, 1, 1, 1, 0, ses__infer_activation},
    {"HardSigmoid", 1, 1, 1, 1, 0, ses__infer_activation},
    {"HardSwish", 1, 1, 1, 1, 0, ses__infer_activation},
    {"ThresholdedRelu", 1, 1, 1, 1, 0, ses__infer_activation},
    {"Softsign", 1, 1, 1, 1, 0, ses__infer_activation},
    {"Shrink", 1, 1, 1, 1, 0, ses__infer_activation},
    {"Gelu", 1, 1, 1, 1, 0, ses__infer_activation},
    {"Mish", 1, 1, 1, 1, 0, ses__infer_activation},
    {"EluGrad", 2, 2, 1, 1, 0, ses__infer_activation_grad2},
    {"SeluGrad", 2, 2, 1, 1, 0, ses__infer_activation_grad2},
    {"CeluGrad", 2, 2, 1, 1, 0, ses__infer_activation_grad2},
    {"HardSigmoidGrad", 2, 2, 1, 1, 0, ses__infer_activation_grad2},
    {"HardSwishGrad", 2, 2, 1, 1, 0, ses__infer_activation_grad2},
    {"ThresholdedReluGrad", 2, 2, 1, 1, 0, ses__infer_activation_grad2},
    {"SoftsignGrad", 2, 2, 1, 1, 0, ses__infer_activation_grad2},
    {"ShrinkGrad", 2, 2, 1, 1, 0, ses__infer_activation_grad2},
    {"GeluGrad", 2, 2, 1, 1, 0, ses__infer_activation_grad2},
    {"MishGrad", 2, 2, 1, 1, 0, ses__infer_activation_grad2},
    {"Sum", 1, SES__MAX_INPUTS, 1, 1, 0, ses__infer_sum_mean},
    {"Mean", 1, SES__MAX_INPUTS, 1, 1, 0, ses__infer_sum_mean},
    {"Det", 1, 1, 1, 1, 0, ses__infer_det},
    {"HannWindow", 1, 1, 1, 1, BIT(0), ses__infer_window},
    {"HammingWindow", 1, 1, 1, 1, BIT(0), ses__infer_window},
    {"BlackmanWindow", 1, 1, 1, 1, BIT(0), ses__infer_window},
    {"MelWeightMatrix", 5, 5, 1, 1, BIT(0) | BIT(1) | BIT(2) | BIT(3) | BIT(4),
     ses__infer_mel_weight_matrix},
    {"DFT", 1, 3, 1, 1, BIT(1) | BIT(2), ses__infer_dft},
    {"STFT", 2, 4, 1, 1, BIT(1) | BIT(3), ses__infer_stft},
    /* g-convfam: conv_transpose.c, spatial.c, norm.c. ConvTransposeGrad takes X first (see
     * conv_transpose.c). */
    {"ConvTranspose", 2, 3, 1, 1, 0, ses__infer_conv_transpose},
    {"ConvTransposeGrad", 3, 3, 1, 1, 0, ses__infer_conv_transpose_grad},
    {"DepthToSpace", 1, 1, 1, 1, 0, ses__infer_depth_space},
    {"SpaceToDepth", 1, 1, 1, 1, 0, ses__infer_depth_space},
    {"Tile", 2, 2, 1, 1, BIT(1), ses__infer_tile},
    {"MaxUnpool", 2, 3, 1, 1, BIT(2), ses__infer_max_unpool},
    {"InstanceNormalization", 3, 3, 1, 1, 0, ses__infer_instance_norm},
    {"LRN", 1, 1, 1, 1, 0, ses__infer_lrn},
    {"MeanVarianceNormalization", 1, 1, 1, 1, 0, ses__infer_mvn},
    {"RoiAlign", 3, 3, 1, 1, 0, ses__infer_roi_align},
    /* value_shape.c: output shapes that depend on input values, read at compile time */
    {"NonZero", 1, 1, 1, 1, BIT(0), ses__infer_nonzero},
    {"Compress", 2, 2, 1, 1, BIT(1), ses__infer_compress},
    {"TopK", 2, 2, 2, 2, BIT(1), ses__infer_topk},
    {"Unique", 1, 1, 1, 4, BIT(0), ses__infer_unique},
    {"NonMaxSuppression", 2, 5, 1, 1, BIT(0) | BIT(1) | BIT(2) | BIT(3) | BIT(4), ses__infer_nms},
    /* reverse_sequence.c */
    {"ReverseSequence", 2, 2, 1, 1, 0, ses__infer_reverse_sequence},
    /* einsum.c */
    {"Einsum", 1, 3, 1, 1, 0, ses__infer_einsum},
    /* tfidf.c */
    {"TfIdfVectorizer", 1, 1, 1, 1, 0, ses__infer_tfidf},
    /* resize.c (group g-resize): Resize and its gradient read roi, scales and sizes at compile
     * time; GridSample. */
    {"Resize", 1, 4, 1, 1, BIT(1) | BIT(2) | BIT(3), ses__infer_resize},
    {"ResizeGrad", 2, 5, 1, 1, BIT(2) | BIT(3) | BIT(4), ses__infer_resize_grad},
    {"GridSample", 2, 2, 1, 1, 0, ses__infer_grid_sample},
    /* g-dtypes: elementwise.c */
    {"GreaterOrEqual", 2, 2, 1, 1, 0, ses__infer_compare_or_equal},
    {"LessOrEqual", 2, 2, 1, 1, 0, ses__infer_compare_or_equal},
    /* g-dtypes: generators.c */
    {"EyeLike", 1, 1, 1, 1, 0, ses__infer_eye_like},
    {"Bernoulli", 1, 1, 1, 1, 0, ses__infer_bernoulli},
    {"RandomUniformLike", 1, 1, 1, 1, 0, ses__infer_random_like},
    {"RandomNormalLike", 1, 1, 1, 1, 0, ses__infer_random_like},
    /* String tensors (issue #22): string_ops.c; run by exec/host_strings.c */
    {"StringNormalizer", 1, 1, 1, 1, 0, ses__infer_string_normalizer},
};
#pragma GCC diagnostic pop

#define N_SCHEMAS (sizeof schemas / sizeof schemas[0])

const ses__op_schema_t *ses__op_schema_find(const char *op) {
    for (size_t i = 0; op && i < N_SCHEMAS; i++)
        if (strcmp(schemas[i].name, op) == 0)
            return &schemas[i];
    return NULL;
}

size_t ses__op_schema_count(void) {
    return N_SCHEMAS;
}

const ses__op_schema_t *ses__op_schema_at(size_t index) {
    return index < N_SCHEMAS ? &schemas[index] : NULL;
}

const char *ses__type_format(const ses__type_t *t, char *buffer, size_t size) {
    size_t used;
    int n;

    if (!buffer || size == 0)
        return buffer;
    if (!t) {
        snprintf(buffer, size, "(none)");
        return buffer;
    }
    n = snprintf(buffer, size, "%s[", ses__dtype_str(t->dtype));
    used = n < 0 ? size : (size_t)n;
    for (uint32_t d = 0; d < t->rank && d < SES_MAX_RANK && used < size; d++) {
        n = snprintf(buffer + used, size - used, "%s%lld", d ? "," : "", (long long)t->dims[d]);
        used = n < 0 ? size : used + (size_t)n;
    }
    if (used < size)
        snprintf(buffer + used, size - used, "]");
    return buffer;
}

int64_t ses__type_count(const ses__type_t *t) {
    int64_t count = 1;

    /* A zero dimension makes the tensor empty whatever the others are, so look for one before
     * multiplying: the product of the others may not fit. -1 means it does not fit. */
    for (uint32_t d = 0; d < t->rank; d++)
        if (t->dims[d] == 0)
            return 0;
    for (uint32_t d = 0; d < t->rank; d++)
        if (__builtin_mul_overflow(count, t->dims[d], &count))
            return -1;
    return count;
}

/* "2 inputs", "2 to 3 inputs", "at least 1 input". */
static ses_status_t count_error(const ses__infer_ctx_t *ctx, const char *noun, size_t min,
                                size_t max, size_t variadic_max, size_t got) {
    if (min == max)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "takes %zu %s%s, got %zu", min, noun,
                            min == 1 ? "" : "s", got);
    if (max == variadic_max && got < min)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "takes at least %zu %s%s, got %zu", min,
                            noun, min == 1 ? "" : "s", got);
    return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "takes %zu to %zu %ss, got %zu", min, max, noun,
                        got);
}

/* Counts, then the types themselves: inference trusts ranks and dims from here on. */
static ses_status_t check_inputs(const ses__op_schema_t *schema, const ses__infer_ctx_t *ctx) {
    if (ctx->n_inputs < schema->min_inputs || ctx->n_inputs > schema->max_inputs)
        return count_error(ctx, "input", schema->min_inputs, schema->max_inputs, SES__MAX_INPUTS,
                           ctx->n_inputs);
    /* Ops with outputs need at least one; in-place update ops (max_outputs 0) have none. */
    if (ctx->n_outputs < (schema->max_outputs ? 1u : 0u) || ctx->n_outputs > schema->max_outputs)
        return count_error(ctx, "output", schema->max_outputs ? 1 : 0, schema->max_outputs,
                           SES__MAX_OUTPUTS, ctx->n_outputs);
    if (ctx->n_inputs && !ctx->inputs)
        return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "NULL input types");
    for (size_t i = 0; i < ctx->n_inputs; i++) {
        const ses__type_t *t = &ctx->inputs[i];
        if (t->dtype == SES_DTYPE_INVALID) {
            /* Only optional inputs may be absent; each op says which of its are. */
            if (i < schema->min_inputs)
                return ses__op_fail(ctx, SES_INVALID_ARGUMENT, "input %zu is missing", i);
            continue;
        }
        if (((unsigned)t->dtype > SES_BOOL && t->dtype != SES_STRING) || t->rank > SES_MAX_RANK)
            return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                "input %zu has dtype %d and rank %u; dtype must be a ses_dtype_t "
                                "and rank at most %d",
                                i, (int)t->dtype, t->rank, SES_MAX_RANK);
        /* A string value's dimension may be -1: known only when it is computed at run time
         * (StringNormalizer's output); exec/host_strings.c's ops are the only readers. */
        for (uint32_t d = 0; d < t->rank; d++)
            if (t->dims[d] < 0 && !(t->dtype == SES_STRING && t->dims[d] == -1))
                return ses__op_fail(ctx, SES_INVALID_ARGUMENT,
                                    "input %zu is %s: a dimension is negative", i, ses__tstr(t).s);
    }
    return SES_OK;
}

static void reset_outputs(ses__infer_ctx_t *ctx) {
    memset(ctx->outputs, 0, sizeof ctx->outputs);
    ctx->kernel_op = NULL;
    ctx->kernel_inputs = 0;
}

ses_status_t ses__op_infer(const ses__op_schema_t *schema, ses__infer_ctx_t *ctx) {
    ses_status_t st;

    if (!schema || !ctx || !schema->infer)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: NULL argument", __func__);
    if (!ctx->op)
        ctx->op = schema->name;
    reset_outputs(ctx);
    st = check_inputs(schema, ctx);
    if (st == SES_OK)
        st = schema->infer(ctx);
    if (st != SES_OK) {
        /* Nothing half-inferred survives a failure. */
        reset_outputs(ctx);
        ses__attrs_clear(&ctx->kernel_attrs);
    }
    return st;
}
