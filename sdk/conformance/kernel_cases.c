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
static const char *const leaky_relu[] = {
    "[2,3]", "[] alpha=0.2", "[0]", "[7,9,5] alpha=0.5", "[65536]", NULL,
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
    NULL,
};
static const char *const reduce_attr[] = {
    "[3,4,5] axes=[1]",
    "[3,4,5] axes=[0,2] keepdims=0",
    "[3,4] axes=[-1]",
    "[]",
    "[7,9]",
    "[0,4] axes=[1]",
    "[256,256] axes=[1]",
    NULL,
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
    {"Relu", EXACT, unary},
    {"Exp", LIBM, unary},
    {"Log", LIBM, unary_pos},
    {"Sqrt", ROUNDED, unary_pos},
    {"Reciprocal", ROUNDED, unary_nz},
    {"Sigmoid", LIBM, unary},
    {"Tanh", LIBM, unary},
    {"Softplus", LIBM, unary},
    {"Erf", LIBM, unary},
    {"LeakyRelu", ROUNDED, leaky_relu},
    {"Cast", EXACT, cast},
    {"MatMul", PRODUCTS, matmul},
    {"Gemm", PRODUCTS, gemm},
    {"ReduceSum", SUMS, reduce_sum},
    {"ReduceMax", EXACT, reduce_attr},
    {"ReduceMean", SUMS, reduce_attr},
    {"Softmax", LIBM, softmax},
    {"LogSoftmax", LIBM, softmax},
    {"ArgMax", EXACT, argmax},
    {"Transpose", EXACT, transpose},
    {"Concat", EXACT, concat},
    {"Slice", EXACT, slice},
    {"Gather", EXACT, gather},
};

const ses_conf_op_cases_t *ses_conf_find_cases(const char *op) {
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (!strcmp(table[i].op, op))
            return &table[i];
    return NULL;
}
