/*
 * What the op families share: the inference function of every op in the table, and the checks
 * they are built from (dtypes, broadcasting, axes, attributes, compile-time values of shape-like
 * inputs). Every check fails with a message that starts with the op and the quoted node name.
 * Internal to src/ops.
 */
#ifndef SES_OPS_INFER_H
#define SES_OPS_INFER_H

#include <stddef.h>
#include <stdint.h>

#include "op_schema.h"

/* Sets of dtypes, as bit masks over ses_dtype_t. */
#define SES__DT(d) (1u << (unsigned)(d))
/* Floating point: f16 and bf16 as well, which a device without kernels for them (the CPU) refuses
 * when the plan is compiled, naming the node and signature. */
#define SES__DT_FLOAT (SES__DT(SES_F32) | SES__DT(SES_F64) | SES__DT(SES_F16) | SES__DT(SES_BF16))
#define SES__DT_NUMERIC (SES__DT_FLOAT | SES__DT(SES_I32) | SES__DT(SES_I64))
/* The dtypes Cast, Where and Equal work on. */
#define SES__DT_BASIC (SES__DT_NUMERIC | SES__DT(SES_U8) | SES__DT(SES_BOOL))
#define SES__DT_INDEX (SES__DT(SES_I32) | SES__DT(SES_I64))
/* Every numeric ses_dtype_t (not SES_DTYPE_INVALID, not SES_STRING). */
#define SES__DT_ANY (((1u << (SES_BOOL + 1)) - 1) & ~1u)

/*
 * A formatted type or list, returned by value so that a message can show several at once:
 * ses__tstr(&a).s is valid until the end of the full expression it appears in (C11 6.2.4p8),
 * which is all a message argument needs.
 */
typedef struct ses__tstr {
    char s[200]; /* "bool[" + 8 dims of up to 20 digits and commas + "]" fits */
} ses__tstr_t;

ses__tstr_t ses__tstr(const ses__type_t *t);
/** "[4,-1,2]" for a list of ints (a Reshape target, a perm). */
ses__tstr_t ses__ints_str(const int64_t *values, size_t count);
/** The short name of @p dtype, "f32"; "invalid" outside the set. */
const char *ses__dtype_str(ses_dtype_t dtype);

/** Sets the message to `<op> "<node>": <format...>` and returns @p status. */
ses_status_t ses__op_fail(const ses__infer_ctx_t *ctx, ses_status_t status, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

/* Input @p index, which the messages call @p name ("A", "data"), is present and its dtype is in
 * @p allowed; the message lists the allowed dtypes. */
ses_status_t ses__op_check_dtype(const ses__infer_ctx_t *ctx, size_t index, const char *name,
                                 uint32_t allowed);
/* Inputs @p i and @p j have the same dtype. */
ses_status_t ses__op_check_same_dtype(const ses__infer_ctx_t *ctx, size_t i, const char *name_i,
                                      size_t j, const char *name_j);
/* Whether optional input @p index was given (within the count, with a dtype). */
int ses__op_has_input(const ses__infer_ctx_t *ctx, size_t index);
/* Whether optional input @p index was given and is not empty: a graph cannot leave a middle
 * input out, so an empty tensor stands for an absent one. */
int ses__op_given(const ses__infer_ctx_t *ctx, size_t index);
/* Whether @p a and @p b have the same rank and dims (their dtypes aside). */
int ses__same_dims(const ses__type_t *a, const ses__type_t *b);

/*
 * Numpy broadcasting of @p types[0..n) into @p out's rank and dims (out's dtype is left alone).
 * A dimension 1 stretches, 0 stays 0; anything else must agree. Returns 0 when they cannot
 * broadcast, leaving the message to the caller.
 */
int ses__broadcast_shapes(const ses__type_t *const *types, size_t n, ses__type_t *out);

/*
 * ses__broadcast_shapes of inputs @p indices[0..n) (named @p names) into @p out's rank and dims
 * failing with a message that shows every one of them.
 */
ses_status_t ses__op_broadcast(const ses__infer_ctx_t *ctx, const size_t *indices,
                               const char *const *names, size_t n, ses__type_t *out);

/*
 * Checks @p axis against [-rank, rank-1] and stores it non-negative in @p out. @p what names it
 * ("axis", "axes value"); @p t, the input the axis refers to, is shown in the message. @p rank
 * may differ from t's (Unsqueeze's axes index the output).
 */
ses_status_t ses__op_axis(const ses__infer_ctx_t *ctx, const char *what, int64_t axis,
                          uint32_t rank, const ses__type_t *t, int64_t *out);

/* What ses__op_axes does with an axis given twice. */
enum { SES__AXES_MERGE_DUPLICATES, SES__AXES_REJECT_DUPLICATES };

/*
 * Normalizes @p axes[0..n) with ses__op_axis, then sorts them into @p out (rank entries) and
 * either merges or rejects duplicates; @p out_n receives the count.
 */
ses_status_t ses__op_axes(const ses__infer_ctx_t *ctx, const char *what, const int64_t *axes,
                          size_t n, uint32_t rank, const ses__type_t *t, int duplicates,
                          int64_t *out, size_t *out_n);

/* Attributes. Each fails naming the attribute when it has another type; an absent one takes
 * @p fallback. */
ses_status_t ses__op_attr_int(const ses__infer_ctx_t *ctx, const char *name, int64_t fallback,
                              int64_t *out);
/* An int that must be 0 or 1 (keepdims, transA, ...). */
ses_status_t ses__op_attr_flag(const ses__infer_ctx_t *ctx, const char *name, int64_t fallback,
                               int64_t *out);
ses_status_t ses__op_attr_float(const ses__infer_ctx_t *ctx, const char *name, double fallback,
                                double *out);
/* An int attribute without a default: absent is an error. */
ses_status_t ses__op_attr_required_int(const ses__infer_ctx_t *ctx, const char *name, int64_t *out);
/* An ints attribute; @p out_present says whether it was given (the list may be empty). */
ses_status_t ses__op_attr_ints(const ses__infer_ctx_t *ctx, const char *name,
                               const int64_t **out_values, size_t *out_count, int *out_present);

/*
 * Reads the compile-time value of input @p index (named @p name), a 0-D or 1-D tensor of a
 * dtype in @p allowed (i32 and/or i64), widened to int64 into @p out (capacity @p cap entries).
 * Fails when the value is unknown ("must be a constant or fed") or has more than @p cap entries;
 * an empty input needs no value.
 */
ses_status_t ses__op_read_ints(const ses__infer_ctx_t *ctx, size_t index, const char *name,
                               uint32_t allowed, int64_t *out, size_t cap, size_t *out_n);

/* Fails with SES_UNIMPLEMENTED when an output would have more than SES_MAX_RANK dimensions. */
ses_status_t ses__op_check_out_rank(const ses__infer_ctx_t *ctx, size_t rank);

/*
 * Reads the compile-time value of input @p index (named @p name), a one-element f32, f64, i32,
 * i64, bool or u8 tensor of rank 0 or 1, as a double into @p out_f and, for the integer dtypes,
 * exactly into @p out_i (0 for the floats). Fails when the value is unknown or not a scalar.
 */
ses_status_t ses__op_read_scalar(const ses__infer_ctx_t *ctx, size_t index, const char *name,
                                 double *out_f, int64_t *out_i);

/*
 * FusedConv's and FusedGemm's activation: reads attributes activation (STRING: Relu, LeakyRelu,
 * Sigmoid, Tanh, Clip; absent or empty for none) and activation_params (FLOATS: LeakyRelu's
 * alpha, Clip's min and max), and sets the kernel's normalized ones: activation (the name, or
 * "Identity"), activation_params (every parameter the activation takes, defaults filled in:
 * LeakyRelu 1, Clip 2, the others none). An unknown name or a wrong count fails naming the node.
 */
ses_status_t ses__op_activation(ses__infer_ctx_t *ctx);

/* elementwise.c */
ses_status_t ses__infer_identity(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_arithmetic(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_pow(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_equal(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_compare(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_where(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_unary_numeric(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_unary_float(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_leaky_relu(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_prelu(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_min_max(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_mod(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_logical(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_bit_shift(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_not(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_sign(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_is_nan(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_is_inf(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_clip(ses__infer_ctx_t *ctx);
/* matmul.c */
ses_status_t ses__infer_matmul(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_gemm(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_fused_gemm(ses__infer_ctx_t *ctx);
/* reduce.c */
ses_status_t ses__infer_reduce_sum(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_reduce_mean(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_reduce_max(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_reduce_numeric(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_reduce_float(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_argmax(ses__infer_ctx_t *ctx);
/* The normalized axes of a reduction of @p x (shared with ReduceGrad): @p axes[0..n) checked
 * against x's rank and sorted, repeats merged, into @p out (room for SES_MAX_RANK); none means
 * every axis, or none at all with @p noop_with_empty_axes. */
ses_status_t ses__reduce_axes(const ses__infer_ctx_t *ctx, const ses__type_t *x,
                              const int64_t *axes, size_t n, int64_t noop_with_empty_axes,
                              int64_t *out, size_t *out_n);
/* The type of @p x with the dimensions in sorted @p axes[0..n) set to 1 (keepdims) or removed. */
void ses__reduced_shape(const ses__type_t *x, const int64_t *axes, size_t n, int64_t keepdims,
                        ses__type_t *out);
/* softmax.c */
ses_status_t ses__infer_softmax(ses__infer_ctx_t *ctx);
/* shape_ops.c */
ses_status_t ses__infer_reshape(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_flatten(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_squeeze(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_unsqueeze(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_transpose(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_concat(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_expand(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_split(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_shape(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_size(ses__infer_ctx_t *ctx);
/* pad.c */
ses_status_t ses__infer_pad(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_pad_grad(ses__infer_ctx_t *ctx);
/* slice.c */
ses_status_t ses__infer_slice(ses__infer_ctx_t *ctx);
/* Slice's normalization (shared with SliceGrad): slices input @p data_index (named
 * @p data_name) by the starts, ends and optional axes and steps of the inputs after it, storing
 * one clamped start and one non-zero step per dimension of the data in @p starts and @p steps
 * (room for SES_MAX_RANK) and the sliced type in @p out. */
ses_status_t ses__slice_normalize(ses__infer_ctx_t *ctx, size_t data_index,
                                  const char *data_name, int64_t *starts, int64_t *steps,
                                  ses__type_t *out);
/* gather.c */
ses_status_t ses__infer_gather(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_gather_elements(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_scatter_elements(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_one_hot(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_gather_nd(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_scatter_nd(ses__infer_ctx_t *ctx);
/* ScatterElements' and ScatterND's "reduction" as the kernels get it (an INT). */
enum { SES__SCATTER_NONE, SES__SCATTER_ADD, SES__SCATTER_MUL, SES__SCATTER_MAX, SES__SCATTER_MIN };
/* cumsum_trilu.c */
ses_status_t ses__infer_cumsum(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_trilu(ses__infer_ctx_t *ctx);
/* cast.c */
ses_status_t ses__infer_cast(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_save(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_restore(ses__infer_ctx_t *ctx);
/* collective_ops.c */
ses_status_t ses__infer_allreduce(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_rank_weight(ses__infer_ctx_t *ctx);
/* sequence.c (ONNX sequences, kept as lists of edges by the importer) */
enum { SES__SELECT_AT, SES__SELECT_INSERT, SES__SELECT_ERASE }; /* SelectInput's mode */
ses_status_t ses__infer_select_input(ses__infer_ctx_t *ctx);
/* train_ops.c */
ses_status_t ses__infer_softmax_cross_entropy_loss(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_softmax_cross_entropy_loss_grad(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_nll_loss(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_nll_loss_grad(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_sgd(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_momentum(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_adam(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_matmul_grad_sgd(ses__infer_ctx_t *ctx);
/* grad_ops.c */
ses_status_t ses__infer_expand_like(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_reduce_sum_like(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_scalar_like(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_reshape_like(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_cast_like(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_activation_grad(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_softmax_grad(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_matmul_grad(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_reduce_grad(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_gather_grad(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_slice_grad(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_concat_grad(ses__infer_ctx_t *ctx);
/* activation.c: the activations (one inference, told apart by the op), their gradient ops
 * (<Op>Grad), Sum and Mean, Det */
ses_status_t ses__infer_activation(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_activation_grad2(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_sum_mean(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_det(ses__infer_ctx_t *ctx);
/* signal.c */
ses_status_t ses__infer_window(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_mel_weight_matrix(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_dft(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_stft(ses__infer_ctx_t *ctx);

/* ---- g-rnnq: recurrent layers (rnn.c) and linear quantization (quant.c) ---- */
/* The activations of RNN, GRU and LSTM, as the kernels' attribute activations codes them
 * (plugins/cpu/README.md lists the same numbers). */
enum ses__rnn_act {
    SES__RNN_RELU = 0,
    SES__RNN_TANH = 1,
    SES__RNN_SIGMOID = 2,
    SES__RNN_AFFINE = 3,
    SES__RNN_LEAKYRELU = 4,
    SES__RNN_THRESHOLDEDRELU = 5,
    SES__RNN_SCALEDTANH = 6,
    SES__RNN_HARDSIGMOID = 7,
    SES__RNN_ELU = 8,
    SES__RNN_SOFTSIGN = 9,
    SES__RNN_SOFTPLUS = 10,
};
ses_status_t ses__infer_rnn(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_gru(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_lstm(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_quantize_linear(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_dequantize_linear(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_dynamic_quantize_linear(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_matmul_integer(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_conv_integer(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_qlinear_matmul(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_qlinear_conv(ses__infer_ctx_t *ctx);
/* cnn.c: Conv's shape and kernel attributes of X (input @p xi) and W (@p wi) whatever their
 * dtypes, for the integer convolutions; @p out_y gets the shape (its dtype X's). */
ses_status_t ses__conv_shape(ses__infer_ctx_t *ctx, size_t xi, size_t wi, ses__type_t *out_y);
/* resize.c (group g-resize) */
ses_status_t ses__infer_resize(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_resize_grad(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_grid_sample(ses__infer_ctx_t *ctx);
/* g-dtypes: elementwise.c (GreaterOrEqual LessOrEqual), generators.c (EyeLike and the random
 * ops) */
ses_status_t ses__infer_compare_or_equal(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_eye_like(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_bernoulli(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_random_like(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_constant_of_shape(ses__infer_ctx_t *ctx);
ses_status_t ses__infer_range(ses__infer_ctx_t *ctx);
/*
 * cast.c: an ONNX TensorProto dtype number in INT attribute @p name (Cast's to, EyeLike's and
 * the random ops' dtype) as our dtype; @p fallback when the attribute is absent. An unknown
 * number is SES_INVALID_ARGUMENT, one we do not support (STRING, COMPLEX64, the float8 types)
 * SES_UNIMPLEMENTED, both naming the attribute and listing the supported ones.
 */
ses_status_t ses__op_attr_onnx_dtype(ses__infer_ctx_t *ctx, const char *name, ses_dtype_t fallback,
                                     ses_dtype_t *out);

#endif /* SES_OPS_INFER_H */
