/* The cases each op is checked on; the notation is explained in kernel_cases.h. */
#include <string.h>

#include "kernel_cases.h"

/* Tolerance classes (f32). Data movement and comparisons are exact; one rounding step may
 * differ by an ulp or so; library functions by a few; long sums by their length. */
#define EXACT 0.0, 0.0
#define ROUNDED 1e-6, 1e-6
#define LIBM 1e-5, 1e-6
#define SUMS 1e-5, 1e-4
#define PRODUCTS 1e-4, 1e-4

static const char *const unary[] = {
    "[2,3]", "[]", "[0]", "[7,9,5]", "[65536]", NULL,
};
static const char *const unary_pos[] = {
    "[2,3]@pos", "[]@pos", "[0]@pos", "[7,9,5]@pos", "[65536]@pos", NULL,
};
static const char *const unary_nz[] = {
    "[2,3]@nz", "[]@nz", "[0]@nz", "[7,9,5]@nz", "[65536]@nz", NULL,
};
/* NaN must come out where it went in (DRV-54): all NaN, so that every output must be NaN
 * whatever the reference says, and NaN among other values, compared with the reference. */
#define NAN_ELEMENTWISE "[6]@nan !nan", "[7,9]@somenan"
static const char *const relu[] = {
    "[2,3]", "[]", "[0]", "[7,9,5]", "[65536]", NAN_ELEMENTWISE, NULL,
};
static const char *const leaky_relu[] = {
    "[2,3]", "[] alpha=0.2", "[0]", "[7,9,5] alpha=0.5", "[65536]", NAN_ELEMENTWISE, NULL,
};
/* X, then slope broadcast to X one way: the same shape, a trailing vector, a channel column,
 * a scalar slope, empty, large. */
static const char *const prelu[] = {
    "[2,3] [2,3]",     "[2,3,4] [4]",      "[3,4,5] [4,1]",     "[] []", "[7,9] []", "[0,3] [3]",
    "[65536] [65536]", "[6]@nan [6] !nan", "[7,9]@somenan [9]", NULL,
};
static const char *const cast[] = {
    "[2,3]@cast", "[]@cast", "[0]@cast", "[7,9,5]@cast", "[65536]@cast", NULL,
};

/* Two-way broadcasting: same shapes, a trailing vector, both sides stretched, scalars, empty,
 * odd and large. */
#define BINARY(A, B)                                                                           \
    "[2,3]" A " [2,3]" B, "[2,3,4]" A " [4]" B, "[3,1]" A " [1,5]" B, "[]" A " [6]" B,          \
        "[]" A " []" B, "[0,3]" A " [3]" B, "[7,9]" A " [7,1]" B, "[65536]" A " [65536]" B, \
        "[256,256]" A " [256,1]" B, NULL
static const char *const binary[] = {BINARY("", "")};
static const char *const binary_div[] = {BINARY("", "@nz")};
static const char *const binary_pow[] = {BINARY("@pos", "@exp")};
static const char *const compare[] = {BINARY("@small", "@small")};

/* Mod: divisors never zero (integer Mod refuses 0); fmod=1 as ONNX requires for floats, and
 * the floor form (fmod=0) too, which libsession refuses for floats on every device. */
static const char *const mod[] = {
    "[2,3] [2,3]@nz fmod=1",
    "[2,3,4] [4]@nz fmod=1",
    "[3,1] [1,5]@nz fmod=1",
    "[] [6]@nz fmod=1",
    "[0,3] [3]@nz fmod=1",
    "[65536] [65536]@nz fmod=1",
    "[256,256] [256,1]@nz fmod=1",
    "[2,3] [2,3]@nz fmod=0",
    "[7,9] [7,1]@nz fmod=0",
    "[6]@nan [6]@nz fmod=1 !nan",
    NULL,
};
/* BitShift: shifts of 0 to 2 bits, and of 0 to 40 (past the width of u8, u16 and u32). */
static const char *const bit_shift[] = {
    "[2,3] [2,3]@small direction=LEFT",
    "[2,3,4] [4]@small direction=RIGHT",
    "[3,1] [1,5]@small direction=LEFT",
    "[] [6]@small direction=RIGHT",
    "[] []@small direction=LEFT",
    "[0,3] [3]@small direction=RIGHT",
    "[7,9] [7,1] direction=LEFT",
    "[7,9] [7,1] direction=RIGHT",
    "[65536] [65536]@small direction=LEFT",
    "[256,256] [256,1]@small direction=RIGHT",
    NULL,
};
/* Min and Max take one or more inputs: one, two broadcast as the binary ops, three, and four
 * (past the first three, which a driver may hold apart); NaN wins (DRV-54). */
static const char *const min_max[] = {
    "[2,3]",
    "[]",
    "[2,3] [2,3]",
    "[2,3,4] [4]",
    "[3,1] [1,5]",
    "[] [6]",
    "[0,3] [3]",
    "[7,9]@small [7,1]@small",
    "[2,1] [1,3] [3]",
    "[2,3] [3] [2,1] [] [1,1]",
    "[65536] [65536]",
    "[256,256] [256,1]",
    "[6]@nan [6] !nan",
    "[7,9]@somenan [9]@somenan",
    NULL,
};
static const char *const unary_unit[] = {
    "[2,3]@unit", "[]@unit", "[0]@unit", "[7,9,5]@unit", "[65536]@unit", NAN_ELEMENTWISE, NULL,
};
static const char *const unary_nan[] = {
    "[2,3]", "[]", "[0]", "[7,9,5]", "[65536]", NAN_ELEMENTWISE, NULL,
};
/* Rounding: halves (multiples of 0.25) and values that round either way. */
static const char *const round_cases[] = {
    "[2,3]@cast", "[]", "[0]", "[7,9,5]", "[65536]@cast", NAN_ELEMENTWISE, NULL,
};
/* Sign: zeros among the values (small integers). */
static const char *const sign[] = {
    "[2,3]@small", "[]", "[0]", "[7,9,5]@small", "[65536]", NAN_ELEMENTWISE, NULL,
};
/* IsNaN and IsInf: values over every binade with infinities and NaN among them. */
static const char *const is_nan[] = {
    "[2,3]@span", "[]", "[0]", "[7,9]@somenan", "[65536]@span", NULL,
};
static const char *const is_inf[] = {
    "[2,3]@span",
    "[]@span",
    "[0]",
    "[7,9]@span detect_negative=0",
    "[64]@span detect_positive=0",
    "[64]@span detect_negative=0 detect_positive=0",
    "[65536]@span",
    NULL,
};
static const char *const logical[] = {BINARY("@bool", "@bool")};
static const char *const logical_not[] = {
    "[2,3]@bool", "[]@bool", "[0]@bool", "[7,9,5]@bool", "[65536]@bool", NULL,
};

static const char *const where[] = {
    "[2,3] [2,3] [2,3]", "[2,1] [1,3] [3]", "[] [4] []", "[0,3] [3] [3]",
    "[65536] [65536] []", NULL,
};

static const char *const matmul[] = {
    "[2,3]@unit [3,4]@unit",       "[3]@unit [3,4]@unit",         "[2,3]@unit [3]@unit",
    "[3]@unit [3]@unit",           "[2,3,4]@unit [4,5]@unit",     "[2,1,3,4]@unit [3,4,2]@unit",
    "[0,3]@unit [3,4]@unit",       "[2,0]@unit [0,3]@unit",       "[64,128]@unit [128,96]@unit",
    NULL,
};
static const char *const gemm[] = {
    "[3,4]@unit [4,5]@unit",
    "[4,3]@unit [4,5]@unit transA=1",
    "[3,4]@unit [5,4]@unit transB=1 alpha=0.5",
    "[0,4]@unit [4,5]@unit",
    "[64,128]@unit [128,96]@unit",
    "[3,4]@unit [4,5]@unit [5]@unit",
    "[3,4]@unit [4,5]@unit [3,5]@unit alpha=2.0 beta=0.5",
    "[3,4]@unit [4,5]@unit []@unit",
    "[3,4]@unit [4,5]@unit [3,1]@unit",
    "[4,3]@unit [5,4]@unit [1,5]@unit transA=1 transB=1",
    "[64,128]@unit [96,128]@unit [96]@unit transB=1",
    NULL,
};

static const char *const reduce_sum[] = {
    "[3,4,5] axes=i64:[1]",
    "[3,4,5] axes=i64:[0,2] keepdims=0",
    "[3,4] axes=i64:[-1]",
    "[] ",
    "[7,9]",
    "[0,4] axes=i64:[0]",
    "[0,4] axes=i64:[1]",
    "[256,256] axes=i64:[1]",
    "[4,3000] axes=i64:[1]", /* few long rows: GPU drivers' block-per-output path */
    NULL,
};
#define REDUCE_ATTR                                                                       \
    "[3,4,5] axes=[1]", "[3,4,5] axes=[0,2] keepdims=0", "[3,4] axes=[-1]", "[]", "[7,9]",     \
        "[0,4] axes=[1]", "[256,256] axes=[1]", "[4,3000] axes=[1]"
static const char *const reduce_attr[] = {REDUCE_ATTR, NULL};
/* ReduceMax: a NaN in every reduced row makes every output NaN (DRV-54), on the one-thread
 * path and on a GPU's block-per-row one. */
static const char *const reduce_max[] = {
    REDUCE_ATTR,
    "[4,5]@nanrow axes=[1] !nan",
    "[3,7]@nanrow axes=[-1] keepdims=0 !nan",
    "[3,5]@nanrow !nan",
    "[4,3000]@nanrow axes=[1] !nan",
    "[6,4]@somenan axes=[0]",
    NULL,
};
/* ReduceMin: NaN wins as in ReduceMax (DRV-54). */
static const char *const reduce_min[] = {
    REDUCE_ATTR,
    "[4,5]@nanrow axes=[1] !nan",
    "[3,5]@nanrow !nan",
    "[4,3000]@nanrow axes=[1] !nan",
    "[6,4]@somenan axes=[0]",
    NULL,
};
/* ReduceProd: factors of 0.5 to 4 in magnitude (1 to 20 for integers, whose products wrap the
 * same way in any order), at most 32 to a product so that f32 neither overflows nor
 * underflows; the empty product is 1. */
static const char *const reduce_prod[] = {
    "[3,4,5]@nz axes=[1]",
    "[3,4,5]@nz axes=[0,2] keepdims=0",
    "[3,4]@nz axes=[-1]",
    "[]@nz",
    "[0,4] axes=[0]",
    "[0,4] axes=[1]",
    "[512,32]@nz axes=[1]",
    "[32,512]@nz axes=[0]",
    NULL,
};
/* ReduceL1, ReduceL2, ReduceSumSquare: sums of |x| and x * x; the empty ones are 0. */
static const char *const reduce_norm[] = {REDUCE_ATTR, "[0,4] axes=[0]", NULL};
/* ReduceLogSum: positive sums only (the log of the empty sum is -inf). */
static const char *const reduce_log_sum[] = {
    "[3,4,5]@pos axes=[1]",
    "[3,4,5]@pos axes=[0,2] keepdims=0",
    "[3,4]@pos axes=[-1]",
    "[]@pos",
    "[7,9]@pos",
    "[0,4]@pos axes=[1]",
    "[0,4] axes=[0]",
    "[256,256]@pos axes=[1]",
    "[4,3000]@pos axes=[1]",
    NULL,
};
/* ReduceLogSumExp: a NaN in every reduced row makes every output NaN. */
static const char *const reduce_log_sum_exp[] = {
    REDUCE_ATTR, "[0,4] axes=[0]", "[4,5]@nanrow axes=[1] !nan", "[32,512] axes=[0]", NULL,
};
static const char *const softmax[] = {
    "[3,4] axis=1", "[2,3,4] axis=0", "[2,3,4]", "[7] axis=0", "[0,5] axis=1",
    "[64,1000] axis=1", NULL,
};
static const char *const argmax[] = {
    "[3,4] axis=1",
    "[3,4,5] axis=0 keepdims=0",
    "[7]@small axis=0 select_last_index=1",
    "[6,5]@small axis=1",
    "[0,5] axis=1",
    "[256,256] axis=1",
    "[4,6]@nanrow axis=1", /* NaN counts as the largest (DRV-54) */
    NULL,
};

static const char *const argmin[] = {
    "[3,4] axis=1",
    "[3,4,5] axis=0 keepdims=0",
    "[7]@small axis=0 select_last_index=1",
    "[6,5]@small axis=1",
    "[0,5] axis=1",
    "[256,256] axis=1",
    "[4,6]@nanrow axis=1", /* NaN counts as the smallest, as in numpy */
    NULL,
};

static const char *const identity[] = {
    "[2,3]", "[]", "[0]", "[7,9,5]", "[65536]", NULL,
};
static const char *const reshape[] = {
    "[2,3,4] shape=i64:[4,-1]", "[] shape=i64:[1]", "[1] shape=i64:[]",
    "[0,3] shape=i64:[3,0] allowzero=1", "[2,3,4] shape=i64:[0,12]",
    "[65536] shape=i64:[256,256]", NULL,
};
static const char *const flatten[] = {
    "[2,3,4] axis=1", "[2,3,4] axis=0", "[2,3,4] axis=-1", "[] axis=0", "[0,3] axis=1",
    "[64,32,32]", NULL,
};
static const char *const squeeze[] = {
    "[1,3,1] axes=i64:[0,2]", "[1,3,1]", "[1]", "[0,1] axes=i64:[1]", "[1,65536] axes=i64:[0]",
    NULL,
};
static const char *const unsqueeze[] = {
    "[3] axes=i64:[0,2]", "[] axes=i64:[0]", "[0] axes=i64:[1]", "[2,3] axes=i64:[-1]",
    "[65536] axes=i64:[0]", NULL,
};
static const char *const transpose[] = {
    "[2,3] perm=[1,0]", "[2,3,4] perm=[2,0,1]", "[2,3,4]", "[]", "[0,3] perm=[1,0]",
    "[5,1,7] perm=[1,2,0]", "[128,256] perm=[1,0]", NULL,
};
static const char *const concat[] = {
    "[2,3] [2,5] axis=1", "[2,3] axis=0", "[1,4] [2,4] [0,4] axis=0", "[2,3] [2,3] axis=-1",
    "[3] [4] axis=0", "[256,64] [256,64] axis=1", NULL,
};
static const char *const slice[] = {
    "[5,6] starts=i64:[1,0] ends=i64:[4,6] axes=i64:[0,1] steps=i64:[1,2]",
    "[10] starts=i64:[-1] ends=i64:[-11] axes=i64:[0] steps=i64:[-2]",
    "[4,5] starts=i64:[1] ends=i64:[100]",
    "[4,0] starts=i64:[0,0] ends=i64:[2,0]",
    "[3,4,5] starts=i64:[2] ends=i64:[2] axes=i64:[1]",
    "[512,512] starts=i64:[1,3] ends=i64:[500,400] axes=i64:[0,1] steps=i64:[3,1]",
    NULL,
};
static const char *const gather[] = {
    "[5,4] [3]@idx5 axis=0", "[5,4] [2,2]@idx4 axis=1", "[5] []@idx5", "[5,3] [0]@idx5",
    "[3,4,5] [2]@idx4 axis=-2", "[1000,64] [512]@idx1000", NULL,
};
/* data, indices (idxN: N is the axis's size), updates; the last cases repeat indices. */
static const char *const gather_elements[] = {
    "[5,4] [3,4]@idx5 axis=0",
    "[5,4] [5,2]@idx4 axis=1",
    "[3,4,5] [3,7,5]@idx4 axis=-2",
    "[5,3] [0,3]@idx5",
    "[5] [8]@idx5",
    "[1] []@idx1 axis=0",
    "[256,256] [256,256]@idx256 axis=1",
    NULL,
};
static const char *const scatter_elements[] = {
    "[5,4] [3,4]@idx5 [3,4] axis=0",
    "[5,4] [5,2]@idx4 [5,2] axis=1",
    "[3,4,5] [3,2,5]@idx4 [3,2,5] axis=-2",
    "[5,3] [0,3]@idx5 [0,3]",
    "[8] [20]@idx8 [20] reduction=add",
    "[8] [20]@idx8 [20]@small reduction=mul",
    "[8] [20]@idx8 [20] reduction=max",
    "[6,2] [9,2]@idx6 [9,2] reduction=min",
    "[256,256] [256,200]@idx256 [256,200] axis=1 reduction=add",
    NULL,
};
/* data, indices [..., m] (idxN: N is at most the smallest dim indexed), updates. */
static const char *const gather_nd[] = {
    "[5,4] [3,2]@idx4",
    "[5,4,3] [2,1]@idx5",
    "[2,5,4] [2,3,1]@idx4 batch_dims=1",
    "[5,3] [0,1]@idx5",
    "[4,4] [2]@idx4",
    "[300,64] [200,1]@idx300",
    NULL,
};
static const char *const scatter_nd[] = {
    "[5,4] [3,2]@idx4 [3]",
    "[5,4,3] [2,1]@idx5 [2,4,3]",
    "[5,3] [0,1]@idx5 [0,3]",
    "[8] [20,1]@idx8 [20] reduction=add",
    "[8] [20,1]@idx8 [20]@small reduction=mul",
    "[6,2] [9,1]@idx6 [9,2] reduction=max",
    "[6,2] [9,1]@idx6 [9,2] reduction=min",
    "[300,64] [200,1]@idx300 [200,64] reduction=add",
    NULL,
};
/* indices, depth, values [off, on]; idxN beyond depth gives rows left off. */
static const char *const one_hot[] = {
    "[3,4]@idx5 depth=i64:[5] [2]",
    "[6]@idx3 depth=i64:[4] [2] axis=0",
    "[2,3]@idx4 depth=i64:[3] [2] axis=1",
    "[]@idx2 depth=i64:[3] [2]",
    "[0,2]@idx3 depth=i64:[3] [2]",
    "[64,64]@idx50 depth=i64:[40] [2]",
    NULL,
};
static const char *const trilu[] = {
    "[4,5]",
    "[4,5] k=i64:[1]",
    "[3,4,5] k=i64:[-1] upper=0",
    "[2,0,3]",
    "[5,3] k=i64:[10] upper=0",
    "[3,1,6,6] k=i64:[-7]",
    "[256,256] upper=0",
    NULL,
};
static const char *const cumsum[] = {
    "[5] axis=i64:[0]",
    "[3,4] axis=i64:[1] exclusive=1",
    "[3,4,5] axis=i64:[-2] reverse=1",
    "[2,3] axis=i64:[0] exclusive=1 reverse=1",
    "[0,3] axis=i64:[1]",
    "[256,256] axis=i64:[0]",
    NULL,
};
static const char *const hardmax[] = {
    "[3,4]", "[2,3,4] axis=1", "[5] axis=0", "[0,3]", "[4,6]@small", "[256,256] axis=0", NULL,
};

/* The gradient ops. A "@like" input gives the node a shape only; its kernel never sees it. */
static const char *const expand_like[] = {
    "[3] [2,3]@like",     "[2,1] [2,3]@like",         "[] [4,5]@like",
    "[1,3] [0,3]@like",   "[2,3] [2,3]@like",         "[] []@like",
    "[7,1,5] [3,7,9,5]@like", "[256] [256,256]@like", NULL,
};
static const char *const reduce_sum_like[] = {
    "[2,3] [3]@like",     "[2,3] [2,1]@like",      "[4,5] []@like",
    "[3,4,5] [4,1]@like", "[0,3] [3]@like",        "[2,0] [2,1]@like",
    "[2,3] [2,3]@like",   "[] []@like",            "[256,256] [256]@like",
    "[256,256] [256,1]@like", NULL,
};
/* The like input is the kernel's one input, never read. */
static const char *const scalar_like[] = {
    "[2,3] value=2.5", "[] value=-1.0", "[0] value=0.0", "[7,9,5] value=1.0e30",
    "[65536] value=-3.75", NULL,
};
/* dy, then the forward input (ReluGrad, LeakyReluGrad) or output (SigmoidGrad, TanhGrad). */
static const char *const activation_grad[] = {
    "[2,3] [2,3]", "[] []", "[0] [0]", "[7,9,5] [7,9,5]", "[65536] [65536]", NULL,
};
static const char *const leaky_relu_grad[] = {
    "[2,3] [2,3]", "[] [] alpha=0.2", "[0] [0]", "[7,9,5] [7,9,5] alpha=0.5", "[65536] [65536]",
    NULL,
};
static const char *const output_grad[] = {
    "[2,3] [2,3]@unit", "[] []@unit", "[0] [0]@unit", "[7,9,5] [7,9,5]@unit",
    "[65536] [65536]@unit", NULL,
};
/* dy and the forward output y; the axis innermost, outer, default, and with more lanes than
 * a block. */
static const char *const softmax_grad[] = {
    "[3,4] [3,4]@unit axis=1",     "[2,3,4] [2,3,4]@unit axis=0", "[2,3,4] [2,3,4]@unit",
    "[7] [7]@unit axis=0",         "[0,5] [0,5]@unit axis=1",     "[2,5,300] [2,5,300]@unit axis=1",
    "[64,1000] [64,1000]@unit axis=1", NULL,
};
/* dy, A, B: plain, 1-D operands, batched with B shared, both broadcast, empty. A weight
 * shared by two batch dims: its gradient (input=1) folds the 32 batches into one GEMM's inner
 * dimension; the shared A's (input=0) sums 32 batches of 32 products per element. */
#define MATMUL_GRAD(input)                                                                      \
    "[2,4]@unit [2,3]@unit [3,4]@unit input=" input,                                             \
        "[4]@unit [3]@unit [3,4]@unit input=" input, "[2]@unit [2,3]@unit [3]@unit input=" input, \
        "[]@unit [3]@unit [3]@unit input=" input,                                                \
        "[2,3,5]@unit [2,3,4]@unit [4,5]@unit input=" input,                                     \
        "[2,3,5]@unit [3,4]@unit [2,4,5]@unit input=" input,                                     \
        "[2,3,3,2]@unit [2,1,3,4]@unit [3,4,2]@unit input=" input,                               \
        "[4,8,16,32]@unit [4,8,16,24]@unit [24,32]@unit input=" input,                           \
        "[4,8,16,32]@unit [16,24]@unit [4,8,24,32]@unit input=" input,                           \
        "[0,4]@unit [0,3]@unit [3,4]@unit input=" input,                                         \
        "[2,3]@unit [2,0]@unit [0,3]@unit input=" input,                                         \
        "[64,96]@unit [64,128]@unit [128,96]@unit input=" input
static const char *const matmul_grad[] = {MATMUL_GRAD("0"), MATMUL_GRAD("1"), NULL};
/* dy, x@like, and the axes as input 2 or as the attribute. */
static const char *const reduce_grad[] = {
    "[3,1,5] [3,4,5]@like axes=i64:[1]",
    "[3,5] [3,4,5]@like axes=i64:[1] keepdims=0",
    "[4] [3,4,5]@like axes=i64:[0,2] keepdims=0 mean=1",
    "[1,1] [3,4]@like",
    "[] [3,4]@like keepdims=0 mean=1",
    "[] []@like",
    "[3,4] [3,4]@like noop_with_empty_axes=1",
    "[3,1] [3,4]@like axes=[-1] mean=1",
    "[1,4] [0,4]@like axes=i64:[0] mean=1",
    "[0,1] [0,4]@like axes=i64:[1]",
    "[256,1] [256,256]@like axes=i64:[1] mean=1",
    NULL,
};
/* dy, indices, like: the Gather cases backwards, and many repeats of few indices. */
static const char *const gather_grad[] = {
    "[3,4] [3]@idx5 [5,4]@like axis=0",
    "[5,2,2] [2,2]@idx4 [5,4]@like axis=1",
    "[] []@idx5 [5]@like",
    "[0,3] [0]@idx5 [5,3]@like",
    "[3,2,5] [2]@idx4 [3,4,5]@like axis=-2",
    "[8,3] [8]@idx2 [2,3]@like",
    "[512,64] [512]@idx1000 [1000,64]@like",
    NULL,
};
/* dy, x@like, then Slice's inputs: the Slice cases backwards. */
static const char *const slice_grad[] = {
    "[3,3] [5,6]@like starts=i64:[1,0] ends=i64:[4,6] axes=i64:[0,1] steps=i64:[1,2]",
    "[5] [10]@like starts=i64:[-1] ends=i64:[-11] axes=i64:[0] steps=i64:[-2]",
    "[3,5] [4,5]@like starts=i64:[1] ends=i64:[100]",
    "[2,0] [4,0]@like starts=i64:[0,0] ends=i64:[2,0]",
    "[3,0,5] [3,4,5]@like starts=i64:[2] ends=i64:[2] axes=i64:[1]",
    "[] []@like starts=i64:[] ends=i64:[]",
    "[167,397] [512,512]@like starts=i64:[1,3] ends=i64:[500,400] axes=i64:[0,1] steps=i64:[3,1]",
    NULL,
};

/* Scores, class labels (@classN: in [0, N)) and, for the weighted signatures, one weight per
 * class; ignore_index hits some labels. The loss with two outputs also gives log_prob. */
static const char *const sce_loss[] = {
    "[3,5] [3]@class5",
    "[3,5] [3]@class5 reduction=sum",
    "[3,5] [3]@class5 reduction=none",
    "[2,4,3] [2,3]@class4 reduction=none",
    "[2,4,3,2] [2,3,2]@class4",
    "[6,4] [6]@class4 ignore_index=1",
    "[6,4] [6]@class4 reduction=none ignore_index=2",
    "[0,5] [0]@class5 reduction=sum",
    "[64,1000] [64]@class1000",
    "[8,10,16,16] [8,16,16]@class10 reduction=none",
    "[3,5] [3]@class5 [5]@pos",
    "[4,3] [4]@class3 [3]@pos reduction=sum",
    "[6,4] [6]@class4 [4]@pos ignore_index=0",
    "[2,4,3] [2,3]@class4 [4]@pos reduction=none",
    NULL,
};
/* dloss (a scalar, or the labels' shape for reduction none), log_prob, labels[, weights]. */
static const char *const sce_grad[] = {
    "[] [3,5] [3]@class5",
    "[] [3,5] [3]@class5 reduction=sum",
    "[3] [3,5] [3]@class5 reduction=none",
    "[2,3] [2,4,3] [2,3]@class4 reduction=none",
    "[] [6,4] [6]@class4 ignore_index=1",
    "[] [0,5] [0]@class5",
    "[] [64,1000] [64]@class1000",
    "[] [3,5] [3]@class5 [5]@pos",
    "[] [6,4] [6]@class4 [4]@pos reduction=sum ignore_index=3",
    "[4] [4,3] [4]@class3 [3]@pos reduction=none ignore_index=2",
    NULL,
};
/* NegativeLogLikelihoodLoss: input (log-probabilities, any values), target[, weight]. */
static const char *const nll_loss[] = {
    "[3,5] [3]@class5",
    "[3,5] [3]@class5 reduction=sum",
    "[3,5] [3]@class5 reduction=none",
    "[2,4,3] [2,3]@class4 reduction=none",
    "[2,4,3,2] [2,3,2]@class4",
    "[6,4] [6]@class4 ignore_index=1",
    "[6,4] [6]@class4 reduction=none ignore_index=2",
    "[0,5] [0]@class5 reduction=sum",
    "[64,1000] [64]@class1000",
    "[3,5] [3]@class5 [5]@pos",
    "[4,3] [4]@class3 [3]@pos reduction=sum",
    "[6,4] [6]@class4 [4]@pos ignore_index=0",
    "[2,4,3] [2,3]@class4 [4]@pos reduction=none",
    NULL,
};
/* dloss (a scalar, or the target's shape for reduction none), input, target[, weight]. */
static const char *const nll_grad[] = {
    "[] [3,5] [3]@class5",
    "[] [3,5] [3]@class5 reduction=sum",
    "[3] [3,5] [3]@class5 reduction=none",
    "[2,3] [2,4,3] [2,3]@class4 reduction=none",
    "[] [6,4] [6]@class4 ignore_index=1",
    "[] [0,5] [0]@class5",
    "[] [3,5] [3]@class5 [5]@pos",
    "[] [6,4] [6]@class4 [4]@pos reduction=sum ignore_index=3",
    "[4] [4,3] [4]@class3 [3]@pos reduction=none ignore_index=2",
    NULL,
};

/* In-place updates: "+var" inputs are variables, compared after one step. */
static const char *const sgd[] = {
    "[4,3]@any+var [4,3] []@pos", "[]@any+var [] []@pos", "[0]@any+var [0] []@pos",
    "[7,9]@any+var [7,9] []@unit", "[65536]@any+var [65536] []@pos", NULL,
};
/* MatMulGradSGD(var, dy, A, B, lr): var is the operand whose gradient updates it, and the other
 * operand's values are read; the operand var stands for is a "like" input (its shape only).
 * B's gradient (input=1) and A's (input=0): plain, a 1-D A or B, A's batches stacked on a
 * shared B (one GEMM summing them for B), empty sums (var unchanged), and a large one. A
 * batched B is refused where only one GEMM is fused (the CPU driver). */
#define MATMUL_GRAD_SGD_B(var, dy, a, lr) \
    "[" var "]@any+var [" dy "]@unit [" a "]@unit [" var "]@like []@" lr " input=1"
#define MATMUL_GRAD_SGD_A(var, dy, b, lr) \
    "[" var "]@any+var [" dy "]@unit [" var "]@like [" b "]@unit []@" lr " input=0"
static const char *const matmul_grad_sgd[] = {
    MATMUL_GRAD_SGD_B("3,4", "2,4", "2,3", "pos"),
    MATMUL_GRAD_SGD_A("2,3", "2,4", "3,4", "pos"),
    MATMUL_GRAD_SGD_B("3,4", "4", "3", "unit"),
    MATMUL_GRAD_SGD_A("3", "4", "3,4", "unit"),
    MATMUL_GRAD_SGD_B("4,5", "2,3,5", "2,3,4", "pos"),
    MATMUL_GRAD_SGD_A("2,3,4", "2,3,5", "4,5", "pos"),
    MATMUL_GRAD_SGD_B("3,4", "0,4", "0,3", "pos"),
    MATMUL_GRAD_SGD_A("2,0", "2,3", "0,3", "pos"),
    MATMUL_GRAD_SGD_B("2,4,5", "2,3,5", "2,3,4", "pos"),
    MATMUL_GRAD_SGD_B("128,96", "64,96", "64,128", "unit"),
    MATMUL_GRAD_SGD_A("64,128", "64,96", "128,96", "unit"),
    NULL,
};
static const char *const momentum[] = {
    "[4,3]@any+var [4,3] []@pos [4,3]@any+var",
    "[4,3]@any+var [4,3] []@pos [4,3]@any+var nesterov=1 momentum=0.5",
    "[]@any+var [] []@pos []@any+var",
    "[0]@any+var [0] []@pos [0]@any+var",
    "[65536]@any+var [65536] []@pos [65536]@any+var nesterov=1",
    NULL,
};
static const char *const adam[] = {
    "[4,3]@any+var [4,3] []@pos [4,3]@any+var [4,3]@pos+var []@pos+var",
    "[4,3]@any+var [4,3] []@pos [4,3]@any+var [4,3]@pos+var []@pos+var beta1=0.5 beta2=0.75 "
    "epsilon=0.001",
    "[]@any+var [] []@pos []@any+var []@pos+var []@pos+var",
    "[0]@any+var [0] []@pos [0]@any+var [0]@pos+var []@pos+var",
    "[65536]@any+var [65536] []@pos [65536]@any+var [65536]@pos+var []@pos+var",
    NULL,
};

/* The CNN ops: X [N,C,spatial...], W [M,C/group,kernel...], then B. 2-D, 1-D and 3-D windows,
 * strides, pads, dilations, groups (depthwise), every auto_pad, the 1x1 case that needs no
 * im2col, an empty batch, and a large one. */
static const char *const conv[] = {
    "[1,1,5,5] [1,1,3,3]",
    "[2,3,7,7] [4,3,3,3] pads=[1,1,1,1] strides=[2,2]",
    "[1,4,6,6] [4,2,3,3] group=2 dilations=[2,2]",
    "[1,2,9] [3,2,3] auto_pad=SAME_UPPER strides=[2]",
    "[1,2,4,4,4] [2,2,2,2,2] pads=[0,1,0,1,0,1]",
    "[1,4,5,5] [4,1,3,3] group=4 auto_pad=SAME_LOWER",
    "[1,3,5,6] [2,3,2,2] auto_pad=VALID strides=[2,3]",
    "[0,3,5,5] [2,3,3,3]",
    "[2,8,5,5] [6,8,1,1]",
    "[4,16,32,32] [32,16,3,3] pads=[1,1,1,1]",
    "[1,2,5,5] [3,2,3,3] [3]",
    "[2,4,6,6] [4,2,3,3] [4] group=2 pads=[1,0,1,0]",
    "[1,3,5,5] [2,3,1,1] [2]",
    "[2,16,16,16] [32,16,3,3] [32] pads=[1,1,1,1] strides=[2,2]",
    NULL,
};
/* FusedConv: X, W, then B and Z; an empty B (@like: never passed to the kernel) is absent, so
 * that Z comes third. Each activation, with and without parameters. */
static const char *const fused_conv[] = {
    "[1,1,5,5] [1,1,3,3] activation=Relu",
    "[2,3,7,7] [4,3,3,3] pads=[1,1,1,1] strides=[2,2] activation=Sigmoid",
    "[1,4,6,6] [4,2,3,3] group=2 dilations=[2,2] activation=Tanh",
    "[0,3,5,5] [2,3,3,3] activation=Relu",
    "[4,16,32,32] [32,16,3,3] pads=[1,1,1,1] activation=Relu",
    "[1,2,5,5] [3,2,3,3] [3] activation=LeakyRelu",
    "[2,4,6,6] [4,2,3,3] [4] group=2 pads=[1,0,1,0] activation=LeakyRelu "
    "activation_params=[0.2]",
    "[1,3,5,5] [2,3,1,1] [2] activation=Clip activation_params=[-0.5,0.5]",
    "[2,16,16,16] [32,16,3,3] [32] pads=[1,1,1,1] strides=[2,2] activation=Relu",
    "[1,2,5,5] [3,2,3,3] [0]@like [1,3,3,3] activation=Relu",
    "[2,16,8,8] [16,16,3,3] [0]@like [2,16,8,8] pads=[1,1,1,1] activation=Tanh",
    "[1,2,5,5] [3,2,3,3] [3] [1,3,3,3] activation=Relu",
    "[2,8,5,5] [6,8,1,1] [6] [2,6,5,5]",
    "[4,16,16,16] [16,16,3,3] [16] [4,16,16,16] pads=[1,1,1,1] activation=Clip "
    "activation_params=[0.0,6.0]",
    NULL,
};
/* FusedGemm: Gemm's cases with each activation. */
static const char *const fused_gemm[] = {
    "[3,4]@unit [4,5]@unit activation=Relu",
    "[4,3]@unit [4,5]@unit transA=1 activation=Sigmoid",
    "[0,4]@unit [4,5]@unit activation=Relu",
    "[64,128]@unit [128,96]@unit activation=Tanh",
    "[3,4]@unit [4,5]@unit [5]@unit activation=LeakyRelu",
    "[3,4]@unit [4,5]@unit [3,5]@unit alpha=2.0 beta=0.5 activation=LeakyRelu "
    "activation_params=[0.2]",
    "[3,4]@unit [4,5]@unit [3,1]@unit activation=Clip activation_params=[-0.25,0.5]",
    "[64,128]@unit [96,128]@unit [96]@unit transB=1 activation=Relu",
    "[3,4]@unit [4,5]@unit [5]@unit",
    NULL,
};
/* dy, X, W: the gradient of X (input=0) and of W (input=1) of the Conv cases. */
#define CONV_GRAD(input)                                                                         \
    "[1,1,3,3] [1,1,5,5] [1,1,3,3] input=" input,                                                \
        "[2,4,4,4] [2,3,7,7] [4,3,3,3] pads=[1,1,1,1] strides=[2,2] input=" input,               \
        "[1,4,2,2] [1,4,6,6] [4,2,3,3] group=2 dilations=[2,2] input=" input,                    \
        "[1,3,5] [1,2,9] [3,2,3] auto_pad=SAME_UPPER strides=[2] input=" input,                  \
        "[1,2,4,4,4] [1,2,4,4,4] [2,2,2,2,2] pads=[0,1,0,1,0,1] input=" input,                   \
        "[2,6,5,5] [2,8,5,5] [6,8,1,1] input=" input,                                            \
        "[0,2,3,3] [0,3,5,5] [2,3,3,3] input=" input,                                            \
        "[4,32,16,16] [4,16,16,16] [32,16,3,3] pads=[1,1,1,1] input=" input
static const char *const conv_grad[] = {CONV_GRAD("0"), CONV_GRAD("1"), NULL};
#define POOLS                                                                                    \
    "[1,1,4,4] kernel_shape=[2,2] strides=[2,2]",                                                \
        "[2,3,7,7] kernel_shape=[3,3] strides=[2,2] pads=[1,1,1,1]",                             \
        "[1,2,6,6] kernel_shape=[3,3] strides=[2,2] ceil_mode=1",                                \
        "[1,2,9] kernel_shape=[3] dilations=[2]", "[1,2,4,4,4] kernel_shape=[2,2,2]",            \
        "[1,2,5,5] kernel_shape=[2,2] auto_pad=SAME_UPPER",                                      \
        "[1,2,5,5] kernel_shape=[3,2] auto_pad=SAME_LOWER strides=[2,2]",                        \
        "[0,2,4,4] kernel_shape=[2,2]", "[8,16,32,32] kernel_shape=[2,2] strides=[2,2]"
/* A window that is a whole row holds that row's NaN: every output is NaN (DRV-54). */
static const char *const max_pool[] = {
    POOLS,
    "[1,2,3,6]@nanrow kernel_shape=[1,6] !nan",
    "[2,1,4,5]@nanrow kernel_shape=[1,5] strides=[1,1] !nan",
    "[1,2,6,6]@somenan kernel_shape=[2,2] strides=[2,2]",
    NULL,
};
static const char *const average_pool[] = {
    POOLS,
    "[2,3,7,7] kernel_shape=[3,3] strides=[2,2] pads=[1,1,1,1] count_include_pad=1",
    "[1,2,6,6] kernel_shape=[3,3] strides=[2,2] pads=[1,1,1,1] ceil_mode=1 count_include_pad=1",
    NULL,
};
/* dy, then X (MaxPoolGrad reads it; AveragePoolGrad takes its shape only). */
#define POOL_GRADS(X)                                                                            \
    "[1,1,2,2] [1,1,4,4]" X " kernel_shape=[2,2] strides=[2,2]",                                 \
        "[2,3,4,4] [2,3,7,7]" X " kernel_shape=[3,3] strides=[2,2] pads=[1,1,1,1]",              \
        "[1,2,3,3] [1,2,6,6]" X " kernel_shape=[3,3] strides=[2,2] ceil_mode=1",                 \
        "[1,2,5] [1,2,9]" X " kernel_shape=[3] dilations=[2]",                                   \
        "[1,2,3,3,3] [1,2,4,4,4]" X " kernel_shape=[2,2,2]",                                     \
        "[1,2,5,5] [1,2,5,5]" X " kernel_shape=[2,2] auto_pad=SAME_UPPER",                       \
        "[0,2,2,2] [0,2,4,4]" X " kernel_shape=[2,2] strides=[2,2]",                             \
        "[8,16,16,16] [8,16,32,32]" X " kernel_shape=[2,2] strides=[2,2]"
static const char *const max_pool_grad[] = {POOL_GRADS(""), NULL};
static const char *const average_pool_grad[] = {
    POOL_GRADS("@like"),
    "[2,3,4,4] [2,3,7,7]@like kernel_shape=[3,3] strides=[2,2] pads=[1,1,1,1] "
    "count_include_pad=1",
    NULL,
};
/*
 * The NCHWc16 ops (libsession/src/ops/nchwc.c): a blocked tensor [N, C/16, H, W, 16] is written
 * as that 5-D shape, so C is a multiple of 16 by construction; the kernels see exactly these
 * tensors (the suite's sessions run with the layout pass off). NchwcConv: FusedConv's inputs
 * and attributes, X plain NCHW (any C: the first convolution of a blocked region, the 7x7
 * stride 2 stem on RGB) or blocked, M a multiple of 16, Z blocked as Y; an empty B (@like) is
 * absent, so that Z comes third. 1x1, 3x3 with pad 1 at stride 1 and 2, 7x7 stride 2 pad 3,
 * dilations, groups of 16 channels, an empty batch, and Identity (the default), Relu and Clip.
 */
static const char *const nchwc_conv[] = {
    "[1,3,7,7] [16,3,1,1]",
    "[2,3,9,9] [16,3,3,3] pads=[1,1,1,1] activation=Relu",
    "[1,3,8,8] [32,3,3,3] pads=[1,1,1,1] strides=[2,2]",
    "[1,3,15,15] [32,3,7,7] pads=[3,3,3,3] strides=[2,2] activation=Relu",
    "[2,1,8,8,16] [16,16,1,1]",
    "[1,2,6,6,16] [32,32,3,3] pads=[1,1,1,1] activation=Relu",
    "[1,2,9,9,16] [32,32,3,3] pads=[1,1,1,1] strides=[2,2] activation=Relu",
    "[1,1,9,9,16] [16,16,3,3] pads=[2,2,2,2] dilations=[2,2]",
    "[1,2,6,6,16] [32,16,3,3] pads=[1,1,1,1] group=2 activation=Relu",
    "[0,1,5,5,16] [16,16,3,3] pads=[1,1,1,1]",
    "[4,4,16,16,16] [64,64,3,3] pads=[1,1,1,1] activation=Relu",
    "[1,3,7,7] [16,3,3,3] [16] pads=[1,1,1,1] activation=Relu",
    "[1,3,15,15] [16,3,7,7] [16] pads=[3,3,3,3] strides=[2,2] activation=Relu",
    "[2,1,8,8,16] [16,16,1,1] [16]",
    "[1,2,9,9,16] [32,32,3,3] [32] pads=[1,1,1,1] strides=[2,2] activation=Relu",
    "[1,2,7,7,16] [16,32,1,1] [16] activation=Clip activation_params=[0.0,6.0]",
    "[1,3,5,5] [16,3,1,1] [0]@like [1,1,5,5,16]",
    "[1,1,6,6,16] [16,16,3,3] [0]@like [1,1,6,6,16] pads=[1,1,1,1] activation=Relu",
    "[1,1,6,6,16] [16,16,3,3] [16] [1,1,6,6,16] pads=[1,1,1,1] activation=Relu",
    "[2,2,8,8,16] [32,32,1,1] [32] [2,2,8,8,16]",
    "[1,3,8,8] [32,3,3,3] [32] [1,2,4,4,16] pads=[1,1,1,1] strides=[2,2] activation=Relu",
    "[2,2,7,7,16] [32,32,3,3] [32] [2,2,4,4,16] pads=[1,1,1,1] strides=[2,2] activation=Clip "
    "activation_params=[0.0,6.0]",
    "[4,4,16,16,16] [64,64,3,3] [64] [4,4,16,16,16] pads=[1,1,1,1] activation=Relu",
    NULL,
};
/* The 2-D pools' cases on blocked X: 2x2 stride 2, 3x3 stride 2 with pads and with ceil_mode
 * (SqueezeNet's), dilations, auto_pad, an empty batch and a large one. NaN as for MaxPool
 * (DRV-54), by lane: all NaN, and NaN among other values. */
#define NCHWC_POOLS                                                          \
    "[1,1,4,4,16] kernel_shape=[2,2] strides=[2,2]",                         \
        "[2,2,7,7,16] kernel_shape=[3,3] strides=[2,2] pads=[1,1,1,1]",      \
        "[1,1,6,6,16] kernel_shape=[3,3] strides=[2,2] ceil_mode=1",         \
        "[1,2,14,14,16] kernel_shape=[3,3] strides=[2,2] ceil_mode=1",       \
        "[1,1,9,9,16] kernel_shape=[3,3] dilations=[2,2]",                   \
        "[1,1,5,5,16] kernel_shape=[2,2] auto_pad=SAME_UPPER",               \
        "[1,1,5,5,16] kernel_shape=[3,2] auto_pad=SAME_LOWER strides=[2,2]", \
        "[0,1,4,4,16] kernel_shape=[2,2]", "[8,4,16,16,16] kernel_shape=[2,2] strides=[2,2]"
static const char *const nchwc_max_pool[] = {
    NCHWC_POOLS,
    "[1,2,4,4,16]@nan kernel_shape=[2,2] strides=[2,2] !nan",
    "[2,1,6,6,16]@somenan kernel_shape=[3,3] strides=[2,2] pads=[1,1,1,1]",
    NULL,
};
static const char *const nchwc_average_pool[] = {
    NCHWC_POOLS,
    "[2,2,7,7,16] kernel_shape=[3,3] strides=[2,2] pads=[1,1,1,1] count_include_pad=1",
    "[1,1,6,6,16] kernel_shape=[3,3] strides=[2,2] pads=[1,1,1,1] ceil_mode=1 "
    "count_include_pad=1",
    NULL,
};
/* Whole planes: one pixel, odd sizes, an empty batch, ResNet-50's last (2048 channels, 7x7). */
static const char *const nchwc_global_average_pool[] = {
    "[1,1,5,5,16]", "[2,3,7,7,16]", "[1,2,1,1,16]", "[0,1,3,3,16]", "[1,128,7,7,16]", NULL,
};
static const char *const nchwc_global_max_pool[] = {
    "[1,1,5,5,16]",   "[2,3,7,7,16]",          "[1,2,1,1,16]",         "[0,1,3,3,16]",
    "[1,128,7,7,16]", "[1,2,3,3,16]@nan !nan", "[2,1,4,4,16]@somenan", NULL,
};
/* NCHWc16 to NCHW. */
static const char *const nchwc_reorder_output[] = {
    "[1,1,2,2,16]", "[2,3,5,7,16]", "[1,4,1,1,16]", "[0,1,3,3,16]", "[4,8,14,14,16]", NULL,
};
/* X, scale, B, mean, var. */
static const char *const batch_norm[] = {
    "[2,3,4,4] [3] [3] [3] [3]@pos",
    "[2,3] [3] [3] [3] [3]@pos epsilon=0.01",
    "[2,3,5] [3] [3] [3] [3]@pos",
    "[0,3,2] [3] [3] [3] [3]@pos",
    "[8,64,16,16] [64] [64] [64] [64]@pos",
    /* g-dtypes: training mode (the batch's statistics; Y alone from X, scale and B, or Y and
     * the running statistics from all five) */
    "[2,3,4,4] [3] [3] training_mode=1",
    "[2,3] [3] [3] epsilon=0.01 training_mode=1",
    "[0,3,2] [3] [3] training_mode=1",
    "[2,3,4,4] [3] [3] [3] [3]@pos training_mode=1",
    "[2,3,5] [3] [3] [3] [3]@pos training_mode=1 momentum=0.8",
    "[0,3,2] [3] [3] [3] [3]@pos training_mode=1",
    "[8,64,16,16] [64] [64] [64] [64]@pos training_mode=1",
    NULL,
};
/* X, Scale[, B] (Y and any of Mean and InvStdDev): the axis last, inner, first, epsilon, empty
 * rows, one row, and a transformer's width. */
static const char *const layer_norm[] = {
    "[2,3] [3]",
    "[2,3] [3] [3]",
    "[2,3,4] [3,4] [3,4] axis=1",
    "[2,3,4] [2,3,4] axis=0",
    "[4,5] [5]@unit [5] epsilon=0.01",
    "[0,4] [4] [4]",
    "[7] [7] [7] axis=-1",
    "[64,768] [768] [768]",
    NULL,
};
/* dY, X, Scale: the gradient of X (input=0) and of Scale (input=1), as the forward cases. */
#define LAYER_NORM_GRAD(input)                                                       \
    "[2,3] [2,3] [3] input=" input, "[2,3,4] [2,3,4] [3,4] axis=1 input=" input,     \
        "[2,3,4] [2,3,4] [2,3,4] axis=0 input=" input,                               \
        "[4,5] [4,5] [5] epsilon=0.01 input=" input, "[0,4] [0,4] [4] input=" input, \
        "[64,768] [64,768] [768] input=" input
static const char *const layer_norm_grad[] = {
    LAYER_NORM_GRAD("0"),
    LAYER_NORM_GRAD("1"),
    NULL,
};
/* Dropout with its mask output (the inference form: the data, and all true). */
static const char *const dropout[] = {
    "[2,3]", "[]", "[0]", "[7,9,5]", "[65536]",
    /* g-dtypes: training mode, data and ratio, seeded (the CPU's stream is numpy's legacy
     * MT19937: seed s drops where np.random.seed(s); np.random.uniform(size=shape) < ratio) */
    "[2,3] []@prob training_mode=bool:[1] seed=1",
    "[] []@prob training_mode=bool:[1] seed=2",
    "[0] []@prob training_mode=bool:[1] seed=3",
    "[7,9,5] []@prob training_mode=bool:[1] seed=0",
    "[65536] []@prob training_mode=bool:[1] seed=7",
    NULL,
};
/* data, pads, then constant_value and axes where given. */
static const char *const pad[] = {
    "[3,4] pads=i64:[1,2,1,1]",
    "[3,4] pads=i64:[1,2,2,1] mode=reflect",
    "[3,4] pads=i64:[2,0,0,3] mode=edge",
    "[3,4] pads=i64:[-1,1,0,-2]",
    "[] pads=i64:[]",
    "[2,3,4] pads=i64:[0,1,2,0,2,1] mode=reflect",
    "[3,4] pads=i64:[1,1,1,1] []",
    "[0,3] pads=i64:[1,0,1,0] []",
    "[2,3,4] pads=i64:[1,2] [] axes=i64:[-1]",
    "[256,256] pads=i64:[2,3,4,5] mode=reflect",
    "[256,256] pads=i64:[2,3,4,5] []",
    NULL,
};
/* dy, x (its shape), then Pad's inputs: the Pad cases backwards. */
static const char *const pad_grad[] = {
    "[5,7] [3,4]@like pads=i64:[1,2,1,1]",
    "[6,7] [3,4]@like pads=i64:[1,2,2,1] mode=reflect",
    "[5,7] [3,4]@like pads=i64:[2,0,0,3] mode=edge",
    "[3,3] [3,4]@like pads=i64:[-1,1,1,-2]",
    "[3,5,9] [2,3,4]@like pads=i64:[0,1,2,1,1,3] mode=reflect",
    "[] []@like pads=i64:[]",
    "[260,265] [256,256]@like pads=i64:[2,3,2,6] mode=edge",
    NULL,
};
/* x, then min and max (scalars) where given. */
static const char *const clip[] = {
    "[2,3]", "[]", "[0]", "[7,9,5] []@unit", "[2,3] []", "[65536] []@small",
    "[2,3] []@unit []@pos", "[7,9,5] [1] [1]", "[0] [] []", "[65536] [] []",
    /* NaN passes whatever the bounds (DRV-54): fminf(fmaxf(x, lo), hi) gives lo instead. */
    "[6]@nan !nan", "[6]@nan []@unit []@pos !nan", "[7,9]@somenan []@unit []@pos", NULL,
};
/* 840 splits evenly into 1 to 8 parts, so each case fits every output count. */
static const char *const split[] = {
    "[840] axis=0", "[2,840] axis=1", "[840,3] axis=-2", "[0,840] axis=1", "[2,840,2] axis=1",
    "[5,4] split=i64:[2,3]", "[7,3] num_outputs=2", NULL,
};
static const char *const shape[] = {
    "[2,3,4]", "[2,3,4] start=1", "[2,3,4] start=-2 end=-1", "[]", "[0,5]", "[2,3,4] start=5",
    NULL,
};
static const char *const size[] = {"[2,3,4]", "[]", "[0,5]", "[7]", NULL};
/* The input (a shape, drawn as small positive dims); value FLOAT gives f32 and INT i64, dtype
 * (a ses_dtype_t) any other: 2 f64, 7 i32, 13 bool. */
static const char *const constant_of_shape[] = {
    "[3]@pos value=1.5", "[2]@pos value=7", "[2]@pos value=3 dtype=7", "[1]@pos value=2.5 dtype=2",
    "[2]@pos value=1 dtype=13", "[0]@pos", NULL,
};
/* start, limit, delta: rising, falling, and ranges that are empty. */
static const char *const range[] = {
    "[]@small []@pos []@pos", "[]@pos []@small []@nz", "[]@small []@small []@nz",
    "[]@pos []@pos []@nz", NULL,
};
/* Output shapes that depend on input values (read at compile time): small values make zeros
 * and ties; bool conditions select some of the entries; K is a constant. */
static const char *const nonzero[] = {
    "[2,3]@small", "[7,9,5]@small", "[0]", "[1]@small", "[6]@bool", "[256,256]@small", NULL,
};
static const char *const compress[] = {
    "[5,4] [5]@bool axis=0", "[5,4] [3]@bool axis=1", "[3,4] [7]@bool",
    "[0,3] [0]@bool axis=0", "[2,3,4] [3]@bool axis=-2", "[256,256] [256]@bool axis=1", NULL,
};
static const char *const topk[] = {
    "[5,4]@small K=i64:[2]",
    "[5,4]@small K=i64:[3] axis=0 largest=0",
    "[7,9,5] K=i64:[9] axis=1",
    "[3,0] K=i64:[0]",
    "[100]@small K=i64:[100]",
    "[64,1000] K=i64:[5] sorted=1",
    NULL,
};
static const char *const unique[] = {
    "[12]@small", "[3,4]@small axis=1", "[4,3]@small axis=0 sorted=0", "[0]",
    "[2,3,4]@small axis=-1", "[1000]@small sorted=0", "[6]@somenan", NULL,
};
/* input, sequence_lens (classN: lengths in [0, N), N one more than the time axis's size);
 * batch and time axes both ways. */
static const char *const reverse_sequence[] = {
    "[4,4] [4]@class5",
    "[4,4] [4]@class5 batch_axis=0 time_axis=1",
    "[3,2,5] [2]@class4",
    "[2,6,3] [2]@class7 batch_axis=0 time_axis=1",
    "[0,2] [2]@class1",
    "[64,32,16] [32]@class65",
    NULL,
};
/* Equations without spaces (a token each): transpose, sums, matmul, batch matmul with a
 * diagonal, implicit outputs, three inputs, an empty dimension. */
static const char *const einsum[] = {
    "[3,4] equation=ij->ji",
    "[3,4] equation=ij->i",
    "[5,5] equation=ii",
    "[3,4] [4,5] equation=ij,jk",
    "[2,3,3] [2,3,4] equation=bii,bik->bk",
    "[2,3] [3,4] [4,2] equation=ij,jk,kl->il",
    "[0,3] [3,2] equation=ij,jk->ik",
    "[16,32] [32,24] equation=ik,kj->ij",
    NULL,
};
/* boxes, scores, then max_output_boxes_per_class as a constant (the thresholds keep their
 * defaults: any overlap suppresses, no score is filtered); corners and centers. */
static const char *const nms[] = {
    "[1,6,4] [1,2,6]",
    "[2,8,4]@unit [2,3,8] max=i64:[3]",
    "[1,0,4] [1,1,0] max=i64:[2]",
    "[1,50,4] [1,1,50]@small max=i64:[10] center_point_box=1",
    "[3,20,4]@pos [3,2,20] max=i64:[20]",
    /* h-cuda: NaN scores (the CPU's insertion order keeps a NaN where it came) */
    "[1,12,4]@unit [1,2,12]@somenan max=i64:[12]",
    "[2,16,4]@unit [2,3,16]@nanrow max=i64:[16] iou=f32:[0.3]",
    NULL,
};
/* Tokens 0..8 (class9) against a pool of four 1-grams and three 2-grams. */
#define TFIDF_POOL "pool_int64s=[2,3,5,4,5,6,7,8,6,7] ngram_counts=[0,4] ngram_indexes=[0,1,2,3,4,5,6]"
static const char *const tfidf[] = {
    "[12]@class9 mode=TF min_gram_length=2 max_gram_length=2 max_skip_count=0 " TFIDF_POOL,
    "[2,6]@class9 mode=TF min_gram_length=1 max_gram_length=2 max_skip_count=5 " TFIDF_POOL,
    "[3,40]@class9 mode=IDF min_gram_length=1 max_gram_length=2 max_skip_count=2 " TFIDF_POOL
    " weights=[0.5,1.0,1.5,2.0,2.5,3.0,3.5]",
    "[200]@class9 mode=TFIDF min_gram_length=1 max_gram_length=2 max_skip_count=3 " TFIDF_POOL
    " weights=[0.5,1.0,1.5,2.0,2.5,3.0,3.5]",
    "[0]@class9 mode=TF min_gram_length=1 max_gram_length=2 max_skip_count=0 " TFIDF_POOL,
    NULL,
};

/* g-rnnq: the recurrent layers. X [seq, batch, input] (layout 0), W, R, then B, sequence_lens
 * (lengths 0 to seq), initial_h, initial_c, P; an absent input in the middle is an empty "like"
 * input. Every list of given inputs the kernels take, both directions, layout 1, other
 * activations, clip, an empty batch and a large layer. */
#define RNN_X "[3,2,5] "
static const char *const rnn[] = {
    RNN_X "[1,4,5] [1,4,4] hidden_size=4",
    RNN_X "[1,4,5] [1,4,4] [1,8] hidden_size=4",
    RNN_X "[2,4,5] [2,4,4] [2,8] hidden_size=4 direction=bidirectional",
    RNN_X "[1,4,5] [1,4,4] [0]@like [0]@like [1,2,4] hidden_size=4 direction=reverse",
    RNN_X "[1,4,5] [1,4,4] [1,8] [0]@like [1,2,4] hidden_size=4 activations=Relu",
    RNN_X "[1,4,5] [1,4,4] [0]@like [2]@class4 hidden_size=4",
    RNN_X "[1,4,5] [1,4,4] [1,8] [2]@class4 hidden_size=4 direction=reverse clip=0.5",
    RNN_X "[1,4,5] [1,4,4] [0]@like [2]@class4 [1,2,4] hidden_size=4",
    RNN_X "[2,4,5] [2,4,4] [2,8] [2]@class4 [2,2,4] hidden_size=4 direction=bidirectional",
    "[2,3,5] [1,4,5] [1,4,4] [1,8] [0]@like [2,1,4] hidden_size=4 layout=1",
    "[3,0,5] [1,4,5] [1,4,4] hidden_size=4",
    "[16,8,32] [1,64,32] [1,64,64] [1,128] hidden_size=64",
    NULL,
};
static const char *const gru[] = {
    RNN_X "[1,12,5] [1,12,4] hidden_size=4",
    RNN_X "[1,12,5] [1,12,4] [1,24] hidden_size=4 linear_before_reset=1",
    RNN_X "[2,12,5] [2,12,4] [2,24] hidden_size=4 direction=bidirectional",
    RNN_X "[1,12,5] [1,12,4] [0]@like [0]@like [1,2,4] hidden_size=4 direction=reverse",
    RNN_X "[1,12,5] [1,12,4] [1,24] [0]@like [1,2,4] hidden_size=4 linear_before_reset=1",
    RNN_X "[1,12,5] [1,12,4] [0]@like [2]@class4 hidden_size=4",
    RNN_X "[1,12,5] [1,12,4] [1,24] [2]@class4 hidden_size=4 direction=reverse clip=0.5",
    RNN_X "[1,12,5] [1,12,4] [0]@like [2]@class4 [1,2,4] hidden_size=4 linear_before_reset=1",
    RNN_X "[2,12,5] [2,12,4] [2,24] [2]@class4 [2,2,4] hidden_size=4 direction=bidirectional",
    "[2,3,5] [1,12,5] [1,12,4] [1,24] [0]@like [2,1,4] hidden_size=4 layout=1",
    "[3,0,5] [1,12,5] [1,12,4] hidden_size=4",
    "[16,8,32] [1,96,32] [1,96,32] [1,192] hidden_size=32",
    NULL,
};
/* LSTM: every count of T inputs after R without sequence_lens (B, initial_h, initial_c, P in
 * turn), and with it B or not before and 0 to 3 after. */
static const char *const lstm[] = {
    RNN_X "[1,16,5] [1,16,4] hidden_size=4",
    RNN_X "[1,16,5] [1,16,4] [1,32] hidden_size=4",
    RNN_X "[2,16,5] [2,16,4] [2,32] [0]@like [2,2,4] hidden_size=4 direction=bidirectional",
    RNN_X "[1,16,5] [1,16,4] [1,32] [0]@like [1,2,4] [1,2,4] hidden_size=4 input_forget=1",
    RNN_X "[1,16,5] [1,16,4] [1,32] [0]@like [1,2,4] [1,2,4] [1,12] hidden_size=4",
    RNN_X "[1,16,5] [1,16,4] [0]@like [2]@class4 hidden_size=4 direction=reverse",
    RNN_X "[1,16,5] [1,16,4] [1,32] [2]@class4 hidden_size=4 clip=0.5",
    RNN_X "[1,16,5] [1,16,4] [0]@like [2]@class4 [1,2,4] hidden_size=4",
    RNN_X "[1,16,5] [1,16,4] [1,32] [2]@class4 [1,2,4] hidden_size=4",
    RNN_X "[1,16,5] [1,16,4] [0]@like [2]@class4 [1,2,4] [1,2,4] hidden_size=4",
    RNN_X "[2,16,5] [2,16,4] [2,32] [2]@class4 [2,2,4] [2,2,4] hidden_size=4 "
          "direction=bidirectional",
    RNN_X "[1,16,5] [1,16,4] [0]@like [2]@class4 [1,2,4] [1,2,4] [1,12] hidden_size=4",
    RNN_X "[2,16,5] [2,16,4] [2,32] [2]@class4 [2,2,4] [2,2,4] [2,12] hidden_size=4 "
          "direction=bidirectional",
    "[2,3,5] [1,16,5] [1,16,4] [1,32] [0]@like [2,1,4] [2,1,4] [1,12] hidden_size=4 layout=1",
    "[3,0,5] [1,16,5] [1,16,4] hidden_size=4",
    "[16,8,32] [1,128,32] [1,128,32] [1,256] hidden_size=32",
    NULL,
};
/* g-rnnq: quantization. Scales positive; zero points of the integer dtype. Per tensor, per axis
 * (axis 1 and the last), blocked (op set 21), empty and large. */
static const char *const quantize[] = {
    "[2,3] []@pos",
    "[2,3] []@pos []",
    "[2,3,4] [3]@pos [3]",
    "[2,3,4] [4]@pos [4] axis=-1",
    "[2,6] [2,3]@pos [2,3] axis=1 block_size=2",
    "[2,5] [2,3]@pos axis=1 block_size=2",
    "[0,3] []@pos []",
    "[65536] []@pos []",
    NULL,
};
static const char *const dynamic_quantize[] = {
    "[6]", "[3,4]", "[]", "[0]", "[65536]", NULL,
};
/* A, B, then the zero points given: a's alone, b's alone (a's an empty like input), both, per
 * row and per column; batched, 1-D A, empty, large. */
static const char *const matmul_integer[] = {
    "[3,4] [4,5]",
    "[2,3,4] [4,5]",
    "[4] [4,3]",
    "[3,4] [4,5] []",
    "[3,4] [4,5] [3]",
    "[3,4] [4,5] [0]@like [5]",
    "[3,4] [4,5] [] []",
    "[2,3,4] [2,4,5] [3] [5]",
    "[0,4] [4,5] [] []",
    "[64,128] [128,32] [] []",
    NULL,
};
static const char *const conv_integer[] = {
    "[1,2,5,5] [3,2,3,3]",
    "[1,2,5,5] [3,2,3,3] []",
    "[1,2,5,5] [3,2,3,3] [0]@like [3]",
    "[2,4,6,6] [4,2,3,3] [] [4] group=2 pads=[1,1,1,1] strides=[2,2]",
    "[1,2,9] [3,2,3] [] [] dilations=[2]",
    "[1,2,4,4,4] [2,2,2,2,2] [] [] pads=[0,1,0,1,0,1]",
    "[0,2,5,5] [3,2,3,3] [] []",
    "[2,16,16,16] [32,16,3,3] [] [32] pads=[1,1,1,1]",
    NULL,
};
static const char *const qlinear_matmul[] = {
    "[3,4] []@pos [] [4,5] []@pos [] []@pos []",
    "[3,4] [3]@pos [3] [4,5] [5]@pos [5] []@pos []",
    "[2,3,4] []@pos [] [4,5] []@pos [] []@pos []",
    "[0,4] []@pos [] [4,5] []@pos [] []@pos []",
    "[64,128] []@pos [] [128,32] []@pos [] []@pos []",
    NULL,
};
static const char *const qlinear_conv[] = {
    "[1,2,5,5] []@pos [] [3,2,3,3] []@pos [] []@pos []",
    "[1,2,5,5] []@pos [] [3,2,3,3] [3]@pos [3] []@pos [] [3] pads=[1,1,1,1]",
    "[2,4,6,6] []@pos [] [4,2,3,3] [4]@pos [4] []@pos [] group=2 strides=[2,2]",
    "[2,16,16,16] []@pos [] [32,16,3,3] []@pos [] []@pos [] [32] pads=[1,1,1,1]",
    NULL,
};
/* group g-act. The activations: each attribute away from its default somewhere, NaN kept. */
#define ACT_CASES(A, B) \
    "[2,3]", "[]" A, "[0]", "[7,9,5]" B, "[65536]", NAN_ELEMENTWISE, NULL
static const char *const act_plain[] = {ACT_CASES("", "")};
static const char *const act_elu[] = {ACT_CASES(" alpha=0.5", " alpha=2.0")};
static const char *const act_selu[] = {ACT_CASES(" alpha=1.5", " alpha=1.2 gamma=0.8")};
static const char *const act_hard_sigmoid[] = {ACT_CASES(" alpha=0.5", " alpha=0.3 beta=0.4")};
static const char *const act_shrink[] = {ACT_CASES(" lambd=1.0", " bias=0.2 lambd=0.7")};
static const char *const act_gelu[] = {ACT_CASES(" approximate=tanh", " approximate=none")};
/* dy, then the forward input x. */
#define ACT_GRAD_CASES(A, B) \
    "[2,3] [2,3]", "[] []" A, "[0] [0]", "[7,9,5] [7,9,5]" B, "[65536] [65536]", NULL
static const char *const act_grad_plain[] = {ACT_GRAD_CASES("", "")};
static const char *const act_grad_elu[] = {ACT_GRAD_CASES(" alpha=0.5", " alpha=2.0")};
static const char *const act_grad_selu[] = {ACT_GRAD_CASES(" alpha=1.5", " gamma=0.8")};
static const char *const act_grad_hard_sigmoid[] = {
    ACT_GRAD_CASES(" alpha=0.5", " alpha=0.3 beta=0.4")};
static const char *const act_grad_shrink[] = {ACT_GRAD_CASES(" lambd=1.0", " bias=0.2 lambd=0.7")};
static const char *const act_grad_gelu[] = {ACT_GRAD_CASES(" approximate=tanh", "")};
/* Det: one matrix, a batch, 1x1, 0x0 matrices, an empty batch, a larger matrix. */
static const char *const det[] = {
    "[3,3]", "[2,4,4]", "[2,3,1,1]", "[2,0,0]", "[0,2,2]", "[12,12]@unit", NULL,
};
/* The window generators: the size (0 to 4 from @pos), periodic and symmetric. */
static const char *const window[] = {
    "[]@pos", "[]@pos periodic=0", "[1]@pos", "[1]@pos periodic=1", NULL,
};
/* DFT: real and complex, each axis, lengths a power of two or not, cut or padded by
 * dft_length, onesided, inverse. */
static const char *const dft[] = {
    "[2,8,1] axis=1",
    "[3,10,2] axis=1",
    "[4,6,3,2] axis=2 inverse=1",
    "[5,3,1] axis=0",
    "[2,16,1] axis=-2 onesided=1",
    "[2,7,2] dft_length=i64:[12] axis=1",
    "[2,9,1] dft_length=i64:[4] axis=1 onesided=1",
    "[0,4,1] axis=1",
    "[2,256,2] axis=1",
    NULL,
};
/* STFT with a window: real signals (onesided or not), a complex one, one frame; without one
 * (an empty window is an absent one), frame_length given. */
static const char *const stft[] = {
    "[1,64,1] frame_step=i64:[8] window=i64:[] frame_length=i64:[16]",
    "[2,30,2] frame_step=i64:[7] window=i64:[] frame_length=i64:[9] onesided=0",
    "[1,64,1] frame_step=i64:[8] [16]",
    "[2,50,1] frame_step=i64:[5] [12] onesided=0",
    "[2,40,2] frame_step=i64:[3] [10] onesided=0",
    "[1,16,1] frame_step=i64:[4] [16]",
    NULL,
};

/* MelWeightMatrix: num_mel_bins (1 to 20 from @pos), then dft_length, sample_rate and the
 * edges (integers here, which libsession takes as well as floats). */
static const char *const mel_weight_matrix[] = {
    "[]@pos dft_length=i64:[64] sample_rate=i64:[16000] lower=i64:[0] upper=i64:[8000]",
    "[]@pos dft_length=i64:[512] sample_rate=i64:[22050] lower=i64:[125] upper=i64:[7600]",
    "[1]@pos dft_length=i64:[17] sample_rate=i64:[100] lower=i64:[5] upper=i64:[50]",
    NULL,
};
/* g-convfam: ConvTranspose: X [N,C,spatial...], W [C,M/group,kernel...], then B. 1-D, 2-D and
 * 3-D, strides, pads, dilations, output_padding, output_shape, groups, every auto_pad, an empty
 * batch and a large one. */
static const char *const conv_transpose[] = {
    "[1,1,3,3] [1,2,3,3]",
    "[2,3,4,4] [3,4,3,3] strides=[2,2] pads=[1,1,1,1] output_padding=[1,1]",
    "[1,4,3,3] [4,2,3,3] group=2 dilations=[2,2]",
    "[1,2,5] [2,3,3] strides=[3] auto_pad=SAME_UPPER",
    "[1,2,5] [2,3,3] strides=[2] auto_pad=SAME_LOWER",
    "[1,2,3,3,3] [2,2,2,2,2] strides=[2,1,2] pads=[0,1,0,1,0,1]",
    "[1,1,3,3] [1,2,3,3] strides=[3,2] output_shape=[10,8]",
    "[1,3,5,6] [3,2,2,2] auto_pad=VALID strides=[2,3]",
    "[0,3,5,5] [3,2,3,3]",
    "[1,2,5,5] [2,3,3,3] [3]",
    "[2,4,6,6] [4,1,3,3] [4] group=4 pads=[1,0,1,0] strides=[2,2]",
    "[2,32,16,16] [32,16,4,4] [16] pads=[1,1,1,1] strides=[2,2]",
    NULL,
};

/* g-convfam: DepthToSpace (DCR, CRD) and SpaceToDepth, blocks of 1 to 3, an empty batch and a
 * large input. */
static const char *const depth_to_space[] = {
    "[1,4,2,3] blocksize=2",
    "[2,18,3,2] blocksize=3 mode=CRD",
    "[1,8,2,2] blocksize=2 mode=DCR",
    "[1,3,2,2] blocksize=1",
    "[0,4,2,2] blocksize=2",
    "[4,64,16,16] blocksize=2 mode=CRD",
    NULL,
};
static const char *const space_to_depth[] = {
    "[1,1,4,6] blocksize=2", "[2,3,6,3] blocksize=3",    "[1,3,2,2] blocksize=1",
    "[0,2,4,4] blocksize=2", "[4,16,32,32] blocksize=2", NULL,
};
/* Tile: repeats per dim, a zero repeat, a scalar, a large one. */
static const char *const tile[] = {
    "[2,3] repeats=i64:[2,2]",     "[3] repeats=i64:[4]",
    "[2,1,3] repeats=i64:[1,3,2]", "[2,3] repeats=i64:[0,2]",
    "[] repeats=i64:[]",           "[0,3] repeats=i64:[2,1]",
    "[64,64] repeats=i64:[4,8]",   NULL,
};
/* MaxUnpool: X, then I (offsets into the default output, classN: in [0, N)). */
static const char *const max_unpool[] = {
    "[1,1,2,2] [1,1,2,2]@class16 kernel_shape=[2,2] strides=[2,2]",
    "[2,3,3] [2,3,3]@class7 kernel_shape=[3] strides=[2] pads=[1,1]",
    "[0,2,2,2] [0,2,2,2]@class4 kernel_shape=[2,2] strides=[2,2]",
    NULL,
};
/* InstanceNormalization: input, scale, B. LRN and MeanVarianceNormalization over 1-D to 3-D. */
static const char *const instance_norm[] = {
    "[2,3,4,5] [3] [3]", "[1,2,7] [2] [2] epsilon=0.01", "[2,2,2,3,2] [2] [2]",
    "[0,3,4] [3] [3]",   "[8,16,32,32] [16] [16]",       NULL,
};
static const char *const lrn[] = {
    "[2,5,3,3] size=3",    "[1,4,6] size=2 alpha=0.001 beta=0.5 bias=2.0",
    "[2,3] size=5",        "[0,3,2,2] size=3",
    "[4,32,16,16] size=5", NULL,
};
/* RoiAlign: X, rois (boxes inside the image: pos), batch_indices (class: in [0, N)). */
static const char *const roi_align[] = {
    "[2,3,6,6] [4,4]@pos [4]@class2 output_height=2 output_width=2",
    "[1,2,5,7] [3,4]@pos [3]@class1 output_height=3 output_width=2 sampling_ratio=2 "
    "coordinate_transformation_mode=output_half_pixel",
    "[2,2,8,8] [5,4]@pos [5]@class2 mode=max spatial_scale=0.5",
    "[1,2,4,4] [0,4] [0]@class1",
    NULL,
};
static const char *const mvn[] = {
    "[2,3,4,5]",          "[2,3,4,5] axes=[1,2,3]", "[3,4] axes=[1]",
    "[2,3,4] axes=[0,2]", "[8,16,32,32]",           NULL,
};

/* group g-resize. Resize: X, then roi and scales (f32, empty when not used) and sizes: up and
 * down, each mode and coordinate transform, 1-D to 4-D, empty, large (the integer entries take
 * the nearest cases). */
static const char *const resize[] = {
    "[1,1,4,4] roi=f32:[] scales=f32:[1.0,1.0,2.0,2.0]",
    "[2,3,5,4] roi=f32:[] scales=f32:[1.0,1.0,0.6,1.5] mode=linear",
    "[2,3,5,4] roi=f32:[] scales=f32:[] sizes=i64:[2,3,7,3] mode=cubic",
    "[3,5] roi=f32:[] scales=f32:[2.5,0.5] mode=linear coordinate_transformation_mode=align_corners",
    "[3,5] roi=f32:[] scales=f32:[] sizes=i64:[1,9] mode=cubic exclude_outside=1 "
    "cubic_coeff_a=-0.5 coordinate_transformation_mode=pytorch_half_pixel",
    "[4,6] roi=f32:[] scales=f32:[1.5,1.5] nearest_mode=ceil "
    "coordinate_transformation_mode=asymmetric",
    "[4,6] roi=f32:[] scales=f32:[0.5,0.7] nearest_mode=round_prefer_ceil "
    "coordinate_transformation_mode=half_pixel_symmetric",
    "[5,6] roi=f32:[0.1,-0.2,0.7,1.1] scales=f32:[] sizes=i64:[4,5] mode=linear "
    "coordinate_transformation_mode=tf_crop_and_resize extrapolation_value=2.5",
    "[7] roi=f32:[] scales=f32:[3.0] mode=cubic",
    "[5,6] roi=f32:[0.1,-0.2,0.7,1.1] scales=f32:[] sizes=i64:[4,5] nearest_mode=floor "
    "coordinate_transformation_mode=tf_crop_and_resize extrapolation_value=3.0",
    "[2,9,11] roi=f32:[] scales=f32:[] sizes=i64:[2,4,3] mode=cubic antialias=1",
    "[2,9,11] roi=f32:[] scales=f32:[1.0,0.5,0.3] mode=linear antialias=1 exclude_outside=1",
    "[0,4] roi=f32:[] scales=f32:[1.0,2.0] mode=linear",
    "[64,64] roi=f32:[] scales=f32:[4.0,4.0] mode=linear",
    "[6]@nan roi=f32:[] scales=f32:[2.0] mode=linear !nan",
    NULL,
};
/* dY, X (its shape), then Resize's inputs: the Resize cases backwards. */
static const char *const resize_grad[] = {
    "[1,1,8,8] [1,1,4,4]@like roi=f32:[] scales=f32:[1.0,1.0,2.0,2.0]",
    "[2,3,3,6] [2,3,5,4]@like roi=f32:[] scales=f32:[1.0,1.0,0.6,1.5] mode=linear",
    "[2,3,7,3] [2,3,5,4]@like roi=f32:[] scales=f32:[] sizes=i64:[2,3,7,3] mode=cubic",
    "[5,6] [5,6]@like roi=f32:[0.1,-0.2,0.7,1.1] scales=f32:[] sizes=i64:[5,6] mode=linear "
    "coordinate_transformation_mode=tf_crop_and_resize",
    "[0,8] [0,4]@like roi=f32:[] scales=f32:[1.0,2.0] mode=linear",
    "[256,256] [64,64]@like roi=f32:[] scales=f32:[4.0,4.0] mode=linear",
    NULL,
};
/* GridSample: X [N, C, H, W], grid [N, Ho, Wo, 2] (unit: in [-1, 1], some pixels beyond with
 * any), each mode and padding; volumetric and 1-D (opset 20). */
static const char *const grid_sample[] = {
    "[1,1,4,5] [1,3,2,2]@unit",
    "[2,3,4,5] [2,3,4,2] align_corners=1",
    "[2,3,4,5] [2,3,4,2] mode=nearest padding_mode=border",
    "[2,3,4,5] [2,3,4,2] mode=bicubic padding_mode=reflection",
    "[2,3,4,5] [2,3,4,2]@unit mode=bicubic padding_mode=border align_corners=1",
    "[2,3,4,5] [2,3,4,2] padding_mode=reflection align_corners=1",
    "[1,2,0,5] [1,3,3,2]",
    "[2,2,3,4,5] [2,2,3,4,3]@unit mode=linear padding_mode=reflection",
    "[2,2,3,4,5] [2,2,3,4,3] mode=nearest align_corners=1",
    "[2,3,7] [2,5,1] padding_mode=border",
    "[2,4,32,32] [2,16,16,2]@unit",
    NULL,
};

/* g-dtypes: EyeLike's input gives only the shape (its values are never read); the random ops
 * are seeded, so that a driver drawing the CPU's stream (numpy's legacy MT19937, see
 * plugins/cpu/cpu_random.c) gives the same values. */
static const char *const eye_like[] = {
    "[3,4]", "[4,4] k=1", "[3,5] k=-2", "[2,3] k=7", "[0,3]", "[256,256] k=3", NULL,
};
static const char *const bernoulli[] = {
    "[2,3]@prob seed=1.0", "[]@prob seed=2.0", "[0]@prob seed=0.0", "[7,9,5]@prob seed=5.0",
    "[65536]@prob seed=3.0", NULL,
};
static const char *const random_uniform_like[] = {
    "[2,3] seed=1.0", "[] low=-2.0 high=3.0 seed=2.0", "[0] seed=0.0",
    "[7,9,5] low=1.0 high=1.5 seed=5.0", "[65536] seed=3.0", NULL,
};
static const char *const random_normal_like[] = {
    "[2,3] seed=1.0", "[] mean=-2.0 scale=3.0 seed=2.0", "[0] seed=0.0",
    "[7,9,5] mean=1.0 scale=0.5 seed=5.0", "[65536] seed=3.0", NULL,
};

static const ses_conf_op_cases_t table[] = {
    {"Identity", EXACT, identity},
    {"Reshape", EXACT, reshape},
    {"Flatten", EXACT, flatten},
    {"Squeeze", EXACT, squeeze},
    {"Unsqueeze", EXACT, unsqueeze},
    {"Add", ROUNDED, binary},
    {"Sub", ROUNDED, binary},
    {"Mul", ROUNDED, binary},
    {"Div", ROUNDED, binary_div},
    {"Pow", LIBM, binary_pow},
    {"Equal", EXACT, compare},
    {"Greater", EXACT, compare},
    {"Less", EXACT, compare},
    {"Where", EXACT, where},
    {"Neg", EXACT, unary},
    {"Abs", EXACT, unary},
    {"Relu", EXACT, relu},
    {"Exp", LIBM, unary},
    {"Log", LIBM, unary_pos},
    {"Sqrt", ROUNDED, unary_pos},
    {"Reciprocal", ROUNDED, unary_nz},
    {"Sigmoid", LIBM, unary},
    {"Tanh", LIBM, unary},
    {"Softplus", LIBM, unary},
    {"Erf", LIBM, unary},
    {"LeakyRelu", ROUNDED, leaky_relu},
    {"PRelu", ROUNDED, prelu},
    {"Min", EXACT, min_max},
    {"Max", EXACT, min_max},
    {"Mod", ROUNDED, mod},
    {"And", EXACT, logical},
    {"Or", EXACT, logical},
    {"Xor", EXACT, logical},
    {"BitShift", EXACT, bit_shift},
    {"Not", EXACT, logical_not},
    {"Sign", EXACT, sign},
    {"IsNaN", EXACT, is_nan},
    {"IsInf", EXACT, is_inf},
    {"Round", EXACT, round_cases},
    {"Floor", EXACT, round_cases},
    {"Ceil", EXACT, round_cases},
    {"Cos", LIBM, unary_nan},
    {"Sin", LIBM, unary_nan},
    {"Tan", LIBM, unary_unit},
    {"Acos", LIBM, unary_unit},
    {"Asin", LIBM, unary_unit},
    {"Atan", LIBM, unary_nan},
    {"Cosh", LIBM, unary_nan},
    {"Sinh", LIBM, unary_nan},
    {"Asinh", LIBM, unary_nan},
    {"Acosh", LIBM, unary_pos},
    {"Atanh", LIBM, unary_unit},
    {"Cast", EXACT, cast},
    {"MatMul", PRODUCTS, matmul},
    {"Gemm", PRODUCTS, gemm},
    {"ReduceSum", SUMS, reduce_sum},
    {"ReduceMax", EXACT, reduce_max},
    {"ReduceMean", SUMS, reduce_attr},
    {"Softmax", LIBM, softmax},
    {"LogSoftmax", LIBM, softmax},
    {"ArgMax", EXACT, argmax},
    {"ReduceMin", EXACT, reduce_min},
    {"ReduceProd", PRODUCTS, reduce_prod},
    {"ReduceL1", SUMS, reduce_norm},
    {"ReduceL2", SUMS, reduce_norm},
    {"ReduceLogSum", SUMS, reduce_log_sum},
    {"ReduceLogSumExp", SUMS, reduce_log_sum_exp},
    {"ReduceSumSquare", SUMS, reduce_norm},
    {"ArgMin", EXACT, argmin},
    {"Transpose", EXACT, transpose},
    {"Concat", EXACT, concat},
    {"Slice", EXACT, slice},
    {"Gather", EXACT, gather},
    {"GatherElements", EXACT, gather_elements},
    {"ScatterElements", ROUNDED, scatter_elements},
    {"GatherND", EXACT, gather_nd},
    {"ScatterND", ROUNDED, scatter_nd},
    {"OneHot", EXACT, one_hot},
    {"Trilu", EXACT, trilu},
    {"CumSum", SUMS, cumsum},
    {"Hardmax", EXACT, hardmax},
    {"ExpandLike", EXACT, expand_like},
    {"ReduceSumLike", SUMS, reduce_sum_like},
    {"ScalarLike", EXACT, scalar_like},
    {"ReluGrad", EXACT, activation_grad},
    {"LeakyReluGrad", ROUNDED, leaky_relu_grad},
    {"SigmoidGrad", ROUNDED, output_grad},
    {"TanhGrad", ROUNDED, output_grad},
    {"SoftmaxGrad", SUMS, softmax_grad},
    {"LogSoftmaxGrad", SUMS, softmax_grad},
    {"MatMulGrad", PRODUCTS, matmul_grad},
    {"ReduceGrad", ROUNDED, reduce_grad},
    {"GatherGrad", SUMS, gather_grad},
    {"SliceGrad", EXACT, slice_grad},
    {"SoftmaxCrossEntropyLoss", SUMS, sce_loss},
    {"SoftmaxCrossEntropyLossGrad", LIBM, sce_grad},
    {"NegativeLogLikelihoodLoss", SUMS, nll_loss},
    {"NegativeLogLikelihoodLossGrad", ROUNDED, nll_grad},
    {"SGD", ROUNDED, sgd},
    {"MatMulGradSGD", PRODUCTS, matmul_grad_sgd},
    {"Momentum", ROUNDED, momentum},
    {"Adam", LIBM, adam},
    {"Conv", PRODUCTS, conv},
    {"ConvGrad", PRODUCTS, conv_grad},
    {"FusedConv", PRODUCTS, fused_conv},
    {"FusedGemm", PRODUCTS, fused_gemm},
    {"MaxPool", EXACT, max_pool},
    {"AveragePool", SUMS, average_pool},
    {"MaxPoolGrad", ROUNDED, max_pool_grad},
    {"AveragePoolGrad", SUMS, average_pool_grad},
    {"NchwcConv", PRODUCTS, nchwc_conv},
    {"NchwcMaxPool", EXACT, nchwc_max_pool},
    {"NchwcAveragePool", SUMS, nchwc_average_pool},
    {"NchwcGlobalAveragePool", SUMS, nchwc_global_average_pool},
    {"NchwcGlobalMaxPool", EXACT, nchwc_global_max_pool},
    {"NchwcReorderOutput", EXACT, nchwc_reorder_output},
    {"BatchNormalization", LIBM, batch_norm},
    {"Dropout", EXACT, dropout},
    {"LayerNormalization", SUMS, layer_norm},
    {"LayerNormalizationGrad", SUMS, layer_norm_grad},
    {"Pad", EXACT, pad},
    {"PadGrad", SUMS, pad_grad},
    {"Clip", EXACT, clip},
    {"Split", EXACT, split},
    {"Shape", EXACT, shape},
    {"Size", EXACT, size},
    {"ConstantOfShape", EXACT, constant_of_shape},
    {"Range", ROUNDED, range},
    /* g-rnnq */
    {"RNN", SUMS, rnn},
    {"GRU", SUMS, gru},
    {"LSTM", SUMS, lstm},
    {"QuantizeLinear", EXACT, quantize},
    {"DequantizeLinear", ROUNDED, quantize},
    {"DynamicQuantizeLinear", EXACT, dynamic_quantize},
    {"MatMulInteger", EXACT, matmul_integer},
    {"ConvInteger", EXACT, conv_integer},
    {"QLinearMatMul", EXACT, qlinear_matmul},
    {"QLinearConv", EXACT, qlinear_conv},
    /* group g-act */
    {"MelWeightMatrix", ROUNDED, mel_weight_matrix},
    {"Elu", LIBM, act_elu},
    {"Selu", LIBM, act_selu},
    {"Celu", LIBM, act_elu},
    {"HardSigmoid", ROUNDED, act_hard_sigmoid},
    {"HardSwish", ROUNDED, act_plain},
    {"ThresholdedRelu", EXACT, act_elu},
    {"Softsign", ROUNDED, act_plain},
    {"Shrink", ROUNDED, act_shrink},
    {"Gelu", LIBM, act_gelu},
    {"Mish", LIBM, act_plain},
    {"EluGrad", LIBM, act_grad_elu},
    {"SeluGrad", LIBM, act_grad_selu},
    {"CeluGrad", LIBM, act_grad_elu},
    {"HardSigmoidGrad", ROUNDED, act_grad_hard_sigmoid},
    {"HardSwishGrad", ROUNDED, act_grad_plain},
    {"ThresholdedReluGrad", EXACT, act_grad_elu},
    {"SoftsignGrad", ROUNDED, act_grad_plain},
    {"ShrinkGrad", EXACT, act_grad_shrink},
    {"GeluGrad", LIBM, act_grad_gelu},
    {"MishGrad", LIBM, act_grad_plain},
    {"Sum", SUMS, min_max},
    {"Mean", SUMS, min_max},
    {"Det", PRODUCTS, det},
    {"HannWindow", LIBM, window},
    {"HammingWindow", LIBM, window},
    {"BlackmanWindow", LIBM, window},
    {"DFT", PRODUCTS, dft},
    {"STFT", PRODUCTS, stft},
    /* g-convfam */
    {"ConvTranspose", PRODUCTS, conv_transpose},
    {"DepthToSpace", EXACT, depth_to_space},
    {"SpaceToDepth", EXACT, space_to_depth},
    {"Tile", EXACT, tile},
    {"MaxUnpool", EXACT, max_unpool},
    {"InstanceNormalization", LIBM, instance_norm},
    {"LRN", LIBM, lrn},
    {"MeanVarianceNormalization", LIBM, mvn},
    {"RoiAlign", SUMS, roi_align},
    /* output shapes that depend on input values */
    {"NonZero", EXACT, nonzero},
    {"Compress", EXACT, compress},
    {"TopK", EXACT, topk},
    {"Unique", EXACT, unique},
    {"NonMaxSuppression", EXACT, nms},
    {"TfIdfVectorizer", ROUNDED, tfidf},
    {"ReverseSequence", EXACT, reverse_sequence},
    {"Einsum", SUMS, einsum},
    /* group g-resize */
    {"Resize", SUMS, resize},
    {"ResizeGrad", SUMS, resize_grad},
    {"GridSample", SUMS, grid_sample},
    /* g-dtypes */
    {"GreaterOrEqual", EXACT, compare},
    {"LessOrEqual", EXACT, compare},
    {"EyeLike", EXACT, eye_like},
    {"Bernoulli", EXACT, bernoulli},
    {"RandomUniformLike", ROUNDED, random_uniform_like},
    {"RandomNormalLike", LIBM, random_normal_like},
};

const ses_conf_op_cases_t *ses_conf_find_cases(const char *op) {
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (!strcmp(table[i].op, op))
            return &table[i];
    return NULL;
}
