/*
 * Unit tests of the CPU driver's kernels (plugins/cpu), driven through the ABI exactly as the
 * host drives them: dlopen the module, negotiate, open the device, find each kernel by op and
 * signature in get_kernels' table, allocate buffers, copy the inputs in, build a node with
 * tensor descriptors and an attribute callback, compute, copy the output back.
 *
 * Values are checked by hand, or against a naive loop written here where the case is too large
 * to write out. The module's path comes from the build as SES_CPU_DRIVER_PATH.
 *
 * This file holds the kernel table's checks, the launch checks every kernel shares, per-node
 * state and the runner; the kernel families are tested in cpu_kernels_*_test.c, the harness
 * (fixture, running one node, comparing values) is cpu_kernels_harness.c. One program, the test
 * "cpu_kernels".
 */
#include "cpu_kernels_harness.h"

/* ---------------------------------------------------------------------------------------------
 * The table
 * ------------------------------------------------------------------------------------------- */

static int is_dtype_name(const char *s, size_t n) {
    static const char *const names[] = {"f32", "f64", "f16", "bf16", "i8",  "i16", "i32",
                                        "i64", "u8",  "u16", "u32",  "u64", "bool"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == n && strncmp(names[i], s, n) == 0)
            return 1;
    return 0;
}

/* "a,b->c" or "a...->c": dtype names separated by commas, one arrow, then the outputs: one, or
 * for the training ops two ("f32,i64->f32,f32") or none ("f32,f32,f32->", an in-place update). */
static int signature_is_well_formed(const char *sig) {
    const char *arrow = strstr(sig, "->");
    if (!arrow || strstr(arrow + 2, "->"))
        return 0;
    for (const char *q = arrow + 2; *q;) {
        const char *comma = strchr(q, ',');
        size_t n = comma ? (size_t)(comma - q) : strlen(q);
        if (!is_dtype_name(q, n) || (comma && !comma[1]))
            return 0;
        q += n + (comma ? 1 : 0);
    }
    const char *p = sig;
    while (p < arrow) {
        const char *end = p;
        while (end < arrow && *end != ',' && *end != '.')
            end++;
        if (!is_dtype_name(p, (size_t)(end - p)))
            return 0;
        if (end < arrow && *end == '.')
            return end + 3 == arrow && strncmp(end, "...", 3) == 0 && p == sig;
        p = end < arrow ? end + 1 : end;
    }
    return 1;
}

void the_kernel_table_has_no_duplicate_op_and_signature_pairs(void **state) {
    fixture_t *f = *state;
    const ses_drv_kernel_t *table = NULL;
    uint32_t count = 0, stride = 0;

    assert_int_equal(f->api->get_kernels(f->device, &table, &count, &stride), SES_DRV_OK);
    assert_int_equal(stride, sizeof(ses_drv_kernel_t));
    assert_true(count > 13);
    for (uint32_t i = 0; i < count; i++) {
        const ses_drv_kernel_t *a = kernel_at(table, stride, i);
        for (uint32_t j = i + 1; j < count; j++) {
            const ses_drv_kernel_t *b = kernel_at(table, stride, j);
            if (strcmp(a->op, b->op) == 0 && strcmp(a->signature, b->signature) == 0)
                fail_msg("entries %u and %u are both %s %s", i, j, a->op, a->signature);
        }
    }
}

/* The ops whose entries prepare per-node state in create: the elementwise ones. */
static int op_prepares(const char *op) {
    static const char *const elementwise[] = {
        "Add",     "Sub",  "Mul",      "Div",  "Pow",       "Equal", "Greater", "Less",
        "Where",   "Neg",  "Abs",      "Relu", "Exp",       "Log",   "Sqrt",    "Reciprocal",
        "Sigmoid", "Tanh", "Softplus", "Erf",  "LeakyRelu", "Cast",
        "PRelu",
        "Mod", "And", "Or", "Xor", "BitShift", "Not", "Sign", "IsNaN", "IsInf", "Round", "Floor",
        "Ceil", "Cos",
        "Sin", "Tan", "Acos", "Asin", "Atan", "Cosh", "Sinh", "Asinh", "Acosh", "Atanh",
        /* not Min and Max: variadic, they fold their inputs without a prepared walk */
        "Conv", "FusedConv", "NchwcConv", /* their state keeps oneDNN's primitives and the
                                             constant-input bits */
        "MatMul", "Gemm", "FusedGemm", /* oneDNN's matmul for constant weights */
        /* group g-act: the activations of cpu_activation.c (not their gradients) */
        "Elu", "Selu", "Celu", "HardSigmoid", "HardSwish", "ThresholdedRelu", "Softsign",
        "Shrink", "Gelu", "Mish",
        "ConvTranspose",               /* g-convfam: its column matrix */
        "GreaterOrEqual", "LessOrEqual",
        /* the random ops keep their stream (cpu_random.c) */
        "Bernoulli", "RandomUniformLike", "RandomNormalLike",
    };
    for (size_t i = 0; i < sizeof elementwise / sizeof elementwise[0]; i++)
        if (strcmp(op, elementwise[i]) == 0)
            return 1;
    return 0;
}

void every_table_entry_is_well_formed(void **state) {
    fixture_t *f = *state;
    const ses_drv_kernel_t *table = NULL;
    uint32_t count = 0, stride = 0;

    assert_int_equal(f->api->get_kernels(f->device, &table, &count, &stride), SES_DRV_OK);
    for (uint32_t i = 0; i < count; i++) {
        const ses_drv_kernel_t *k = kernel_at(table, stride, i);
        assert_int_equal(k->struct_size, sizeof(ses_drv_kernel_t));
        assert_non_null(k->op);
        assert_non_null(k->compute);
        assert_int_equal(k->flags, 0);
        /* create and destroy come as a pair, on the elementwise entries, Conv, FusedConv,
         * NchwcConv, MatMul, Gemm and FusedGemm only. */
        /* Dropout's training form (data and ratio) keeps a random stream; its inference form
         * (data alone) keeps nothing. */
        const char *comma = strchr(k->signature, ','), *arrow = strstr(k->signature, "->");
        const int training_dropout =
            strcmp(k->op, "Dropout") == 0 && comma && arrow && comma < arrow;
        if (op_prepares(k->op) || training_dropout) {
            if (!k->create || !k->destroy)
                fail_msg("%s %s has no create or no destroy", k->op, k->signature);
        } else if (k->create || k->destroy) {
            fail_msg("%s %s has a create or a destroy", k->op, k->signature);
        }
        if (!signature_is_well_formed(k->signature))
            fail_msg("%s has a malformed signature \"%s\"", k->op, k->signature);
    }
}

/* Spot checks that each op of the contract is offered at the dtypes it promises. */
void the_table_offers_every_op_of_the_contract_at_its_dtypes(void **state) {
    fixture_t *f = *state;
    static const char *const all13[] = {"f32", "f64", "f16", "bf16", "i8",  "i16", "i32",
                                        "i64", "u8",  "u16", "u32",  "u64", "bool"};
    static const char *const basic[] = {"f32", "f64", "i32", "i64", "u8", "bool"};
    static const char *const expected[][2] = {
        {"Add", "i64,i64->i64"},      {"Sub", "f64,f64->f64"},
        {"Mul", "i32,i32->i32"},      {"Div", "f32,f32->f32"},
        {"Pow", "f64,f64->f64"},      {"Equal", "bool,bool->bool"},
        {"Equal", "u8,u8->bool"},     {"Greater", "u8,u8->bool"},
        {"Less", "i64,i64->bool"},    {"Where", "bool,bool,bool->bool"},
        {"Where", "bool,u8,u8->u8"},  {"Neg", "i32->i32"},
        {"Neg", "f64->f64"},          {"Abs", "i64->i64"},
        {"Relu", "i32->i32"},         {"Exp", "f64->f64"},
        {"Log", "f32->f32"},          {"Sqrt", "f32->f32"},
        {"Reciprocal", "f64->f64"},   {"Sigmoid", "f32->f32"},
        {"Tanh", "f64->f64"},         {"Softplus", "f32->f32"},
        {"Erf", "f64->f64"},          {"LeakyRelu", "f32->f32"},
        {"MatMul", "f64,f64->f64"},   {"Gemm", "f32,f32->f32"},
        {"Gemm", "f64,f64,f64->f64"}, {"ReduceSum", "i32->i32"},
        {"ReduceMax", "i64->i64"},    {"ReduceMean", "f64->f64"},
        {"Softmax", "f32->f32"},      {"LogSoftmax", "f64->f64"},
        {"ArgMax", "i32->i64"},       {"Gather", "bf16,i32->bf16"},
        {"Concat", "u16...->u16"},    {"Min", "u16...->u16"},
        {"Max", "f64...->f64"},       {"Mod", "i8,i8->i8"},
        {"BitShift", "u64,u64->u64"}, {"Xor", "bool,bool->bool"},
        {"Not", "bool->bool"},        {"Sign", "u32->u32"},
        {"IsInf", "f64->bool"},       {"Acosh", "f32->f32"},
        /* g-dtypes */
        {"Add", "u8,u8->u8"},         {"Div", "u64,u64->u64"},
        {"Pow", "i32,i32->i32"},      {"Pow", "f32,i64->f32"},
        {"Pow", "i64,f32->i64"},      {"Min", "f16...->f16"},
        {"Mod", "bf16,bf16->bf16"},   {"GreaterOrEqual", "u16,u16->bool"},
        {"LessOrEqual", "f64,f64->bool"}, {"EyeLike", "i32->f64"},
        {"Bernoulli", "f32->f64"},    {"RandomUniformLike", "i64->f16"},
        {"Clip", "i8,i8,i8->i8"},     {"Dropout", "f32,f32->f32,bool"},
        {"BatchNormalization", "f32,f32,f32->f32"},
    };
    static const char *const missing[][2] = {
        {"Neg", "i32,i32->i32"}, /* not an op of two inputs */
        {"Pow", "u8,u8->u8"}, /* a base of f32, f64, i32 or i64 only */
        {"ReduceMean", "i32->i32"},
        {"Greater", "bool,bool->bool"},
        {"BitShift", "i32,i32->i32"}, /* unsigned only */
        {"Min", "bool...->bool"},
    };
    char sig[64];

    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        if (!find_kernel_on(f->api, f->device, expected[i][0], expected[i][1]))
            fail_msg("no %s %s", expected[i][0], expected[i][1]);
    for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++)
        if (find_kernel_on(f->api, f->device, missing[i][0], missing[i][1]))
            fail_msg("unexpected %s %s", missing[i][0], missing[i][1]);
    static const char *const movers[] = {"Identity",  "Reshape",   "Flatten", "Squeeze",
                                         "Unsqueeze", "Transpose", "Slice"};
    for (size_t m = 0; m < sizeof movers / sizeof movers[0]; m++)
        for (size_t d = 0; d < 13; d++) {
            snprintf(sig, sizeof sig, "%s->%s", all13[d], all13[d]);
            if (!find_kernel_on(f->api, f->device, movers[m], sig))
                fail_msg("no %s %s", movers[m], sig);
        }
    for (size_t d = 0; d < 13; d++) {
        snprintf(sig, sizeof sig, "%s...->%s", all13[d], all13[d]);
        assert_non_null(find_kernel_on(f->api, f->device, "Concat", sig));
        snprintf(sig, sizeof sig, "%s,i64->%s", all13[d], all13[d]);
        assert_non_null(find_kernel_on(f->api, f->device, "Gather", sig));
        snprintf(sig, sizeof sig, "%s,i32->%s", all13[d], all13[d]);
        assert_non_null(find_kernel_on(f->api, f->device, "Gather", sig));
    }
    (void)basic;
    for (size_t a = 0; a < 13; a++)
        for (size_t b = 0; b < 13; b++) {
            snprintf(sig, sizeof sig, "%s->%s", all13[a], all13[b]);
            if (!find_kernel_on(f->api, f->device, "Cast", sig))
                fail_msg("no Cast %s", sig);
        }
}

/* ---------------------------------------------------------------------------------------------
 * Launch checks shared by every kernel
 * ------------------------------------------------------------------------------------------- */

void a_launch_whose_dtypes_differ_from_the_entry_is_refused_naming_both(void **state) {
    fixture_t *f = *state;
    const ses_drv_kernel_t *k = find_kernel_on(f->api, f->device, "Add", "f32,f32->f32");
    ses_drv_tensor_desc_t descs[3];
    ses_drv_buffer_t *buf = NULL;
    ses_drv_node_t node;
    ses_drv_launch_t launch;
    uint64_t offs[2] = {0, 0};

    assert_non_null(k);
    assert_int_equal(f->api->alloc(f->device, 64, SES_DRV_MEM_DEVICE, &buf), SES_DRV_OK);
    int64_t dims[1] = {2};
    for (int i = 0; i < 3; i++) {
        memset(&descs[i], 0, sizeof descs[i]);
        descs[i].struct_size = sizeof descs[i];
        descs[i].dtype = i == 1 ? I32 : F32;
        descs[i].rank = 1;
        descs[i].dims = dims;
    }
    ses_drv_buffer_t *bufs[2] = {buf, buf};
    memset(&node, 0, sizeof node);
    node.struct_size = sizeof node;
    node.op = "Add";
    node.name = "mixed";
    node.n_inputs = 2;
    node.n_outputs = 1;
    node.inputs = descs;
    node.outputs = &descs[2];
    memset(&launch, 0, sizeof launch);
    launch.struct_size = sizeof launch;
    launch.node = &node;
    launch.inputs = bufs;
    launch.input_offsets = offs;
    launch.outputs = bufs;
    launch.output_offsets = offs;

    assert_int_equal(k->compute(f->device, NULL, &launch), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "Add \"mixed\"");
    assert_message_contains(f, "inputs are f32, i32, output is f32");
    assert_message_contains(f, "f32,f32->f32");

    /* Misaligned: an f32 at byte offset 2. */
    descs[1].dtype = F32;
    uint64_t odd[2] = {2, 0};
    launch.input_offsets = odd;
    assert_int_equal(k->compute(f->device, NULL, &launch), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "input 0");
    assert_message_contains(f, "not aligned");

    /* Past the end of the buffer. */
    uint64_t far[2] = {0, 60};
    launch.input_offsets = far;
    assert_int_equal(k->compute(f->device, NULL, &launch), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "input 1");
    assert_message_contains(f, "64 bytes");
    f->api->free(f->device, buf);
}

/* The planner may give an elementwise op's output exactly an input's bytes, and a copy any
 * overlapping bytes; every other overlap is refused rather than computed wrong. */
void outputs_may_overlap_inputs_only_where_the_op_computes_through_it(void **state) {
    fixture_t *f = *state;
    ses_drv_buffer_t *arena = NULL;
    float init[32], got[32];

    for (int i = 0; i < 32; i++)
        init[i] = (float)i;
    assert_int_equal(f->api->alloc(f->device, sizeof init, SES_DRV_MEM_DEVICE, &arena), SES_DRV_OK);
    targ_t v8[2] = {tensor(F32, NULL, 1, 8), tensor(F32, NULL, 1, 8)};

    /* Add in place over input 0: x[0..8) += x[16..24). */
    assert_int_equal(f->api->copy_h2d(f->device, NULL, init, arena, 0, sizeof init), SES_DRV_OK);
    assert_int_equal(run_in_arena(f, arena, "Add", "f32,f32->f32", NULL, 2, v8,
                                  (const uint64_t[]){0, 64}, tensor(F32, NULL, 1, 8), 0),
                     SES_DRV_OK);
    assert_int_equal(f->api->copy_d2h(f->device, NULL, arena, 0, got, sizeof got), SES_DRV_OK);
    for (int i = 0; i < 8; i++)
        assert_true(got[i] == (float)(i + i + 16));

    /* Softmax in place. */
    const test_attr_t axis0[] = {A_INT("axis", 0), A_END};
    assert_int_equal(f->api->copy_h2d(f->device, NULL, init, arena, 0, sizeof init), SES_DRV_OK);
    assert_int_equal(run_in_arena(f, arena, "Softmax", "f32->f32", axis0, 1, v8,
                                  (const uint64_t[]){0}, tensor(F32, NULL, 1, 8), 0),
                     SES_DRV_OK);
    assert_int_equal(f->api->copy_d2h(f->device, NULL, arena, 0, got, sizeof got), SES_DRV_OK);
    float sum = 0;
    for (int i = 0; i < 8; i++)
        sum += got[i];
    assert_true(fabsf(sum - 1.0f) < 1e-6f && got[7] > got[6]);

    /* Reshape over overlapping bytes moves them like memmove. */
    assert_int_equal(f->api->copy_h2d(f->device, NULL, init, arena, 0, sizeof init), SES_DRV_OK);
    assert_int_equal(run_in_arena(f, arena, "Reshape", "f32->f32", NULL, 1, v8,
                                  (const uint64_t[]){0}, tensor(F32, NULL, 2, 2, 4), 8),
                     SES_DRV_OK);
    assert_int_equal(f->api->copy_d2h(f->device, NULL, arena, 0, got, sizeof got), SES_DRV_OK);
    for (int i = 0; i < 8; i++)
        assert_true(got[i + 2] == (float)i);

    /* An elementwise output shifted by one element, and a Transpose over its input. */
    f->name = "shifted";
    assert_int_equal(run_in_arena(f, arena, "Add", "f32,f32->f32", NULL, 2, v8,
                                  (const uint64_t[]){0, 64}, tensor(F32, NULL, 1, 8), 4),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "Add \"shifted\"");
    assert_message_contains(f, "overlaps input 0");
    const test_attr_t swap[] = {A_INTS("perm", 1, 0), A_END};
    targ_t m[1] = {tensor(F32, NULL, 2, 2, 4)};
    assert_int_equal(run_in_arena(f, arena, "Transpose", "f32->f32", swap, 1, m,
                                  (const uint64_t[]){0}, tensor(F32, NULL, 2, 4, 2), 0),
                     SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "cannot run in place");
    f->api->free(f->device, arena);
}

/* ---------------------------------------------------------------------------------------------
 * Per-node state: create, then launches that need only their buffers checked
 * ------------------------------------------------------------------------------------------- */

/* A node and its launch built by hand, each argument in its own 64-byte buffer (output last),
 * so that a test can change one descriptor, offset or buffer between launches. */
typedef struct hand {
    targ_t arg[MAX_IN + 1];
    ses_drv_tensor_desc_t desc[MAX_IN + 1];
    ses_drv_buffer_t *buf[MAX_IN + 1];
    uint64_t off[MAX_IN + 1];
    ses_drv_node_t node;
    ses_drv_launch_t launch;
    uint32_t n_in;
} hand_t;

static void hand_open(fixture_t *f, hand_t *h, const char *op, uint32_t n_in, const targ_t *args) {
    memset(h, 0, sizeof *h);
    h->n_in = n_in;
    for (uint32_t i = 0; i <= n_in; i++) {
        h->arg[i] = args[i];
        h->desc[i].struct_size = sizeof h->desc[i];
        h->desc[i].dtype = args[i].dtype;
        h->desc[i].rank = args[i].rank;
        h->desc[i].dims = h->arg[i].dims;
        assert_int_equal(f->api->alloc(f->device, 64, SES_DRV_MEM_DEVICE, &h->buf[i]), SES_DRV_OK);
        if (args[i].data)
            assert_int_equal(
                f->api->copy_h2d(f->device, NULL, args[i].data, h->buf[i], 0, targ_bytes(&args[i])),
                SES_DRV_OK);
    }
    h->node.struct_size = sizeof h->node;
    h->node.op = op;
    h->node.name = f->name;
    h->node.n_inputs = n_in;
    h->node.n_outputs = 1;
    h->node.inputs = h->desc;
    h->node.outputs = &h->desc[n_in];
    h->node.attr = test_attr_read;
    h->launch.struct_size = sizeof h->launch;
    h->launch.node = &h->node;
    h->launch.inputs = h->buf;
    h->launch.input_offsets = h->off;
    h->launch.outputs = &h->buf[n_in];
    h->launch.output_offsets = &h->off[n_in];
}

static void hand_close(fixture_t *f, hand_t *h) {
    for (uint32_t i = 0; i <= h->n_in; i++)
        f->api->free(f->device, h->buf[i]);
}

/* Computes with @p state and returns the status; the output's first @p n floats go to @p got. */
static int32_t hand_compute(fixture_t *f, hand_t *h, const ses_drv_kernel_t *k, void *state,
                            float *got, size_t n) {
    memset(&f->ctx.base, 0, sizeof f->ctx.base);
    int32_t st = k->compute(f->device, state, &h->launch);
    if (st == SES_DRV_OK && n)
        assert_int_equal(f->api->copy_d2h(f->device, NULL, h->buf[h->n_in], h->off[h->n_in], got,
                                          n * sizeof(float)),
                         SES_DRV_OK);
    return st;
}

/*
 * The walk without strides (same shapes, or single elements) and the broadcasting walk must give
 * the same bits for the same values, prepared or not: [2,3] op [3] and [2,3] op [] against
 * [2,3] op the same values tiled to [2,3].
 */
void the_flat_and_the_broadcasting_walk_give_the_same_bits(void **state) {
    fixture_t *f = *state;
    static const char *const ops[][2] = {
        {"Add", "f32,f32->f32"},   {"Sub", "f32,f32->f32"},    {"Mul", "f32,f32->f32"},
        {"Div", "f32,f32->f32"},   {"Pow", "f32,f32->f32"},    {"Add", "f64,f64->f64"},
        {"Div", "f64,f64->f64"},   {"Equal", "f32,f32->bool"}, {"Greater", "f32,f32->bool"},
        {"Less", "f64,f64->bool"},
    };
    const float a[6] = {1.5f, -2.25f, 3.0f, 0.1f, 7.0f, -0.0f};
    const float row[3] = {0.3f, 2.0f, -3.0f};
    const float tiled_row[6] = {0.3f, 2.0f, -3.0f, 0.3f, 2.0f, -3.0f};
    const float one[1] = {0.7f};
    const float tiled_one[6] = {0.7f, 0.7f, 0.7f, 0.7f, 0.7f, 0.7f};
    const double da[6] = {1.5, -2.25, 3.0, 0.1, 7.0, -0.0};
    const double drow[3] = {0.3, 2.0, -3.0};
    const double dtiled[6] = {0.3, 2.0, -3.0, 0.3, 2.0, -3.0};
    const double done[1] = {0.7};
    const double dtiled_one[6] = {0.7, 0.7, 0.7, 0.7, 0.7, 0.7};
    unsigned char got[4][48];

    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        const int dbl = strstr(ops[o][1], "f64") != NULL;
        const uint32_t t = dbl ? F64 : F32;
        const uint32_t to = strstr(ops[o][1], "bool") ? BOOL : t;
        const void *x = dbl ? (const void *)da : (const void *)a;
        for (int scalar = 0; scalar < 2; scalar++) {
            const void *small = scalar ? (dbl ? (const void *)done : (const void *)one)
                                       : (dbl ? (const void *)drow : (const void *)row);
            const void *tiled = scalar ? (dbl ? (const void *)dtiled_one : (const void *)tiled_one)
                                       : (dbl ? (const void *)dtiled : (const void *)tiled_row);
            targ_t bcast[2] = {tensor(t, x, 2, 2, 3),
                               scalar ? tensor(t, small, 0) : tensor(t, small, 1, 3)};
            targ_t flat[2] = {tensor(t, x, 2, 2, 3), tensor(t, tiled, 2, 2, 3)};
            targ_t out = tensor(to, NULL, 2, 2, 3);
            for (int prepare = 0; prepare < 2; prepare++) {
                f->prepare = prepare;
                RUN_OK(f, ops[o][0], ops[o][1], NULL, 2, bcast, out, got[prepare * 2]);
                RUN_OK(f, ops[o][0], ops[o][1], NULL, 2, flat, out, got[prepare * 2 + 1]);
            }
            for (int i = 1; i < 4; i++)
                if (memcmp(got[0], got[i], targ_bytes(&out)) != 0)
                    fail_msg("%s %s with a %s: run %d differs from the broadcasting one", ops[o][0],
                             ops[o][1], scalar ? "scalar" : "row", i);
        }
    }

    /* Where, three ways: [2,3] condition with a [3] and a [] value. */
    const uint8_t c[6] = {1, 0, 1, 0, 0, 1};
    targ_t wb[3] = {tensor(BOOL, c, 2, 2, 3), tensor(F32, row, 1, 3), tensor(F32, one, 0)};
    targ_t wf[3] = {tensor(BOOL, c, 2, 2, 3), tensor(F32, tiled_row, 2, 2, 3),
                    tensor(F32, tiled_one, 2, 2, 3)};
    for (int prepare = 0; prepare < 2; prepare++) {
        f->prepare = prepare;
        RUN_OK(f, "Where", "bool,f32,f32->f32", NULL, 3, wb, tensor(F32, NULL, 2, 2, 3),
               got[prepare * 2]);
        RUN_OK(f, "Where", "bool,f32,f32->f32", NULL, 3, wf, tensor(F32, NULL, 2, 2, 3),
               got[prepare * 2 + 1]);
    }
    for (int i = 1; i < 4; i++)
        assert_memory_equal(got[0], got[i], 6 * sizeof(float));
    expect_f32((const float[]){0.3f, 0.7f, -3.0f, 0.7f, 0.7f, -3.0f}, (const float *)got[0], 6, 0);
}

/* The broadcasting walk create works out ([2,1,3] + [4,1] -> [2,4,3]) gives what the walk set
 * up at each launch gives. */
void a_prepared_broadcasting_walk_gives_the_unprepared_result(void **state) {
    fixture_t *f = *state;
    const float x[6] = {1, 2, 3, 4, 5, 6};
    const float y[4] = {10, 20, 30, 40};
    float want[24], got[24];
    targ_t in[2] = {tensor(F32, x, 3, 2, 1, 3), tensor(F32, y, 2, 4, 1)};

    f->prepare = 0;
    RUN_OK(f, "Add", "f32,f32->f32", NULL, 2, in, tensor(F32, NULL, 3, 2, 4, 3), want);
    f->prepare = 1;
    RUN_OK(f, "Add", "f32,f32->f32", NULL, 2, in, tensor(F32, NULL, 3, 2, 4, 3), got);
    assert_memory_equal(want, got, sizeof got);
    for (int b = 0; b < 2; b++)
        for (int r = 0; r < 4; r++)
            for (int c = 0; c < 3; c++)
                assert_true(got[(b * 4 + r) * 3 + c] == x[b * 3 + c] + y[r]);
}

/* A state describes the shapes create saw. A launch with other shapes or dtypes is checked from
 * scratch: refused with the usual message when they are wrong, computed when they are right. */
void a_prepared_node_launched_with_other_shapes_is_checked_from_scratch(void **state) {
    fixture_t *f = *state;
    const ses_drv_kernel_t *k = find_kernel_on(f->api, f->device, "Add", "f32,f32->f32");
    const float x[4] = {1, 2, 3, 4}, y[4] = {10, 20, 30, 40};
    const targ_t args[3] = {tensor(F32, x, 1, 4), tensor(F32, y, 1, 4), tensor(F32, NULL, 1, 4)};
    void *prep = NULL;
    float got[4];
    hand_t h;

    assert_non_null(k);
    f->name = "reshaped";
    hand_open(f, &h, "Add", 2, args);
    assert_int_equal(k->create(f->device, &h.node, &prep), SES_DRV_OK);
    assert_non_null(prep);
    assert_int_equal(hand_compute(f, &h, k, prep, got, 4), SES_DRV_OK);
    expect_f32((const float[]){11, 22, 33, 44}, got, 4, 0);

    /* [4] + [3] does not broadcast to [4], whatever create saw. */
    h.arg[1].dims[0] = 3;
    assert_int_equal(hand_compute(f, &h, k, prep, got, 0), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "Add \"reshaped\": shapes do not broadcast");
    assert_message_contains(f, "input 1 is [3]");
    /* [3] + [3] -> [3] is a good launch, computed without the state's walk. */
    h.arg[0].dims[0] = 3;
    h.arg[2].dims[0] = 3;
    assert_int_equal(hand_compute(f, &h, k, prep, got, 3), SES_DRV_OK);
    expect_f32((const float[]){11, 22, 33}, got, 3, 0);
    /* Ranks the state did not see: [1,4] + [4] -> [1,4]. */
    h.desc[0].rank = 2;
    h.arg[0].dims[0] = 1;
    h.arg[0].dims[1] = 4;
    h.arg[1].dims[0] = 4;
    h.desc[2].rank = 2;
    h.arg[2].dims[0] = 1;
    h.arg[2].dims[1] = 4;
    assert_int_equal(hand_compute(f, &h, k, prep, got, 4), SES_DRV_OK);
    expect_f32((const float[]){11, 22, 33, 44}, got, 4, 0);
    /* Another dtype is refused naming it. */
    h.desc[0].rank = 1;
    h.arg[0].dims[0] = 4;
    h.desc[2].rank = 1;
    h.arg[2].dims[0] = 4;
    h.desc[1].dtype = I32;
    assert_int_equal(hand_compute(f, &h, k, prep, got, 0), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "inputs are f32, i32, output is f32");
    /* And the shapes it saw work again. */
    h.desc[1].dtype = F32;
    assert_int_equal(hand_compute(f, &h, k, prep, got, 4), SES_DRV_OK);
    expect_f32((const float[]){11, 22, 33, 44}, got, 4, 0);
    k->destroy(f->device, prep);
    hand_close(f, &h);
}

/* What protects memory is checked on every launch, prepared or not. */
void a_prepared_launch_still_checks_ranges_alignment_and_overlap(void **state) {
    fixture_t *f = *state;
    const ses_drv_kernel_t *k = find_kernel_on(f->api, f->device, "Add", "f32,f32->f32");
    const float x[4] = {1, 2, 3, 4};
    const targ_t args[3] = {tensor(F32, x, 1, 4), tensor(F32, x, 1, 4), tensor(F32, NULL, 1, 4)};
    void *prep = NULL;
    float got[4];
    hand_t h;

    assert_non_null(k);
    hand_open(f, &h, "Add", 2, args);
    assert_int_equal(k->create(f->device, &h.node, &prep), SES_DRV_OK);
    assert_non_null(prep);

    /* 16 bytes at 56 end past the 64-byte buffer. */
    h.off[1] = 56;
    assert_int_equal(hand_compute(f, &h, k, prep, got, 0), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "input 1");
    assert_message_contains(f, "64 bytes");
    h.off[1] = 0;
    h.off[2] = UINT64_MAX - 4;
    assert_int_equal(hand_compute(f, &h, k, prep, got, 0), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "output 0");
    /* An f32 at byte offset 2. */
    h.off[2] = 0;
    h.off[0] = 2;
    assert_int_equal(hand_compute(f, &h, k, prep, got, 0), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "input 0");
    assert_message_contains(f, "not aligned");
    h.off[0] = 0;
    /* No buffer. */
    ses_drv_buffer_t *kept = h.buf[1];
    h.buf[1] = NULL;
    assert_int_equal(hand_compute(f, &h, k, prep, got, 0), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "input 1 buffer is NULL");
    h.buf[1] = kept;
    /* The output one element into input 0's bytes; then exactly over them, which is allowed. */
    ses_drv_buffer_t *out = h.buf[2];
    h.buf[2] = h.buf[0];
    h.off[2] = 4;
    assert_int_equal(hand_compute(f, &h, k, prep, got, 0), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "overlaps input 0");
    h.off[2] = 0;
    assert_int_equal(hand_compute(f, &h, k, prep, got, 4), SES_DRV_OK);
    expect_f32((const float[]){2, 4, 6, 8}, got, 4, 0);
    h.buf[2] = out;
    k->destroy(f->device, prep);
    hand_close(f, &h);
}

/* A node its launches would refuse gets no state, so that the launch fails where it did before
 * and with the same message; the host's compile is not where a kernel reports it. */
void create_gives_no_state_to_a_node_its_launches_would_refuse(void **state) {
    fixture_t *f = *state;
    const ses_drv_kernel_t *k = find_kernel_on(f->api, f->device, "Add", "f32,f32->f32");
    const targ_t args[3] = {tensor(F32, NULL, 1, 4), tensor(I32, NULL, 1, 4),
                            tensor(F32, NULL, 1, 4)};
    void *prep = (void *)&prep;
    hand_t h;

    assert_non_null(k);
    f->name = "mixed";
    hand_open(f, &h, "Add", 2, args);
    assert_int_equal(k->create(f->device, &h.node, &prep), SES_DRV_OK);
    assert_null(prep);
    assert_int_equal(hand_compute(f, &h, k, prep, NULL, 0), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "Add \"mixed\": inputs are f32, i32, output is f32");
    k->destroy(f->device, prep); /* accepts NULL */

    /* A negative dim, a rank past the limit, a third input: no state either. */
    h.desc[1].dtype = F32;
    h.arg[0].dims[0] = -4;
    prep = (void *)&prep;
    assert_int_equal(k->create(f->device, &h.node, &prep), SES_DRV_OK);
    assert_null(prep);
    h.arg[0].dims[0] = 4;
    h.node.n_inputs = 3;
    prep = (void *)&prep;
    assert_int_equal(k->create(f->device, &h.node, &prep), SES_DRV_OK);
    assert_null(prep);
    h.node.n_inputs = 2;
    assert_int_equal(k->create(f->device, NULL, &prep), SES_DRV_OK);
    assert_null(prep);
    assert_int_equal(k->create(f->device, &h.node, NULL), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "out_state is NULL");
    hand_close(f, &h);

    int64_t dims17[17];
    for (int d = 0; d < 17; d++)
        dims17[d] = 1;
    ses_drv_tensor_desc_t big[3];
    memset(big, 0, sizeof big);
    for (int i = 0; i < 3; i++) {
        big[i].struct_size = sizeof big[i];
        big[i].dtype = F32;
        big[i].rank = 17;
        big[i].dims = dims17;
    }
    h.node.inputs = big;
    h.node.outputs = &big[2];
    prep = (void *)&prep;
    assert_int_equal(k->create(f->device, &h.node, &prep), SES_DRV_OK);
    assert_null(prep);
}

/* The compute entry takes a state only from its own entry's create. */
void a_state_made_for_another_entry_is_not_used(void **state) {
    fixture_t *f = *state;
    const ses_drv_kernel_t *add = find_kernel_on(f->api, f->device, "Add", "f32,f32->f32");
    const ses_drv_kernel_t *sub = find_kernel_on(f->api, f->device, "Sub", "f32,f32->f32");
    const float x[4] = {1, 2, 3, 4}, y[4] = {10, 20, 30, 40};
    const targ_t args[3] = {tensor(F32, x, 1, 4), tensor(F32, y, 1, 4), tensor(F32, NULL, 1, 4)};
    void *prep = NULL;
    float got[4];
    hand_t h;

    assert_non_null(add);
    assert_non_null(sub);
    hand_open(f, &h, "Sub", 2, args);
    assert_int_equal(add->create(f->device, &h.node, &prep), SES_DRV_OK);
    assert_non_null(prep);
    assert_int_equal(hand_compute(f, &h, sub, prep, got, 4), SES_DRV_OK);
    expect_f32((const float[]){-9, -18, -27, -36}, got, 4, 0);
    add->destroy(f->device, prep);
    hand_close(f, &h);
}

/* A prepared integer Div still looks at its divisor, on every launch. */
void a_prepared_integer_division_still_refuses_a_zero_divisor(void **state) {
    fixture_t *f = *state;
    const ses_drv_kernel_t *k = find_kernel_on(f->api, f->device, "Div", "i32,i32->i32");
    const int32_t x[4] = {8, -9, 10, 11}, y[4] = {2, 3, 5, 1}, zero[1] = {0};
    const targ_t args[3] = {tensor(I32, x, 1, 4), tensor(I32, y, 1, 4), tensor(I32, NULL, 1, 4)};
    void *prep = NULL;
    int32_t got[4];
    hand_t h;

    assert_non_null(k);
    hand_open(f, &h, "Div", 2, args);
    assert_int_equal(k->create(f->device, &h.node, &prep), SES_DRV_OK);
    assert_int_equal(hand_compute(f, &h, k, prep, (float *)(void *)got, 4), SES_DRV_OK);
    expect_i32((const int32_t[]){4, -3, 2, 11}, got, 4);
    assert_int_equal(f->api->copy_h2d(f->device, NULL, zero, h.buf[1], 8, sizeof zero), SES_DRV_OK);
    assert_int_equal(hand_compute(f, &h, k, prep, NULL, 0), SES_DRV_INVALID_ARGUMENT);
    assert_message_contains(f, "integer division by zero");
    assert_message_contains(f, "element 2");
    k->destroy(f->device, prep);
    hand_close(f, &h);
}

/* ---------------------------------------------------------------------------------------------
 * Runner
 * ------------------------------------------------------------------------------------------- */

#define TEST(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
/* The same test again with every kernel that has a create prepared first, as in a plan. */
#define TEST_PREPARED(fn) \
    { #fn " (prepared)", fn, setup_prepared, teardown, NULL }

int main(void) {
    const struct CMUnitTest tests[] = {
        TEST(the_kernel_table_has_no_duplicate_op_and_signature_pairs),
        TEST(every_table_entry_is_well_formed),
        TEST(the_table_offers_every_op_of_the_contract_at_its_dtypes),
        TEST(a_launch_whose_dtypes_differ_from_the_entry_is_refused_naming_both),
        TEST(outputs_may_overlap_inputs_only_where_the_op_computes_through_it),
        TEST(shape_only_ops_copy_the_bytes_unchanged_at_every_dtype),
        TEST(copies_handle_scalars_and_empty_tensors),
        TEST(reshape_refuses_an_output_with_another_element_count),
        TEST(arithmetic_on_equal_shapes_computes_elementwise_in_f32_and_f64),
        TEST(float_division_by_zero_gives_infinity_not_an_error),
        TEST(arithmetic_broadcasts_rows_columns_and_outer_products),
        TEST(arithmetic_works_on_scalars_and_zero_size_tensors),
        TEST(integer_arithmetic_wraps_and_division_truncates_toward_zero),
        TEST(integer_division_by_zero_is_refused_naming_the_node),
        TEST(arithmetic_refuses_shapes_that_do_not_broadcast_naming_all_of_them),
        TEST(comparisons_give_bools_with_broadcasting_and_nan_unequal),
        TEST(where_selects_with_three_way_broadcasting_at_each_width),
        TEST(unary_float_ops_match_libm_in_f32_and_f64),
        TEST(sigmoid_and_softplus_stay_finite_for_large_inputs),
        TEST(leaky_relu_reads_alpha_and_integer_unary_ops_wrap),
        TEST(sign_round_is_nan_and_is_inf_handle_zeros_halves_and_infinities),
        TEST(logic_ops_broadcast_and_read_any_nonzero_byte_as_true),
        TEST(mod_takes_the_divisors_sign_or_with_fmod_the_dividends),
        TEST(bit_shift_moves_bits_either_way_and_gives_zero_past_the_width),
        TEST(min_and_max_fold_any_number_of_inputs_with_broadcasting),
        TEST(unary_ops_handle_scalars_and_empty_tensors_and_refuse_other_shapes),
        TEST(cast_truncates_toward_zero_and_maps_bools_to_0_and_1),
        TEST(cast_refuses_a_to_attribute_that_disagrees_with_the_output),
        TEST(matmul_multiplies_matrices_in_f32_and_f64),
        TEST(matmul_promotes_one_dimensional_operands_and_drops_the_added_dim),
        TEST(matmul_broadcasts_batch_dims_against_a_naive_loop),
        TEST(matmul_with_an_empty_inner_dim_gives_zeros_and_empty_outputs_are_no_ops),
        TEST(matmul_refuses_inner_dimensions_that_differ_naming_both_shapes),
        TEST(gemm_applies_transposes_alpha_beta_and_broadcasts_c),
        TEST(gemm_refuses_a_c_that_does_not_broadcast_to_the_output),
        TEST(reduce_sum_over_one_axis_with_and_without_keepdims),
        TEST(reduce_over_every_combination_of_axes_matches_a_naive_loop),
        TEST(reduce_max_propagates_nan_and_reduce_mean_divides_by_the_count),
        TEST(reducing_an_empty_axis_sums_to_zero_averages_to_nan_and_has_no_max),
        TEST(reductions_refuse_bad_axes_and_wrong_output_shapes),
        TEST(softmax_normalizes_along_the_axis_without_overflow),
        TEST(argmax_returns_the_first_or_last_index_of_the_largest),
        TEST(argmin_returns_the_first_or_last_index_of_the_smallest),
        TEST(the_other_reductions_match_their_definitions),
        TEST(reduce_log_sum_exp_is_stable_and_size_one_axes_still_map),
        TEST(the_other_reductions_of_an_empty_axis),
        TEST(transpose_permutes_axes_at_every_element_width),
        TEST(transpose_of_large_batched_matrices_matches_index_arithmetic),
        TEST(transpose_refuses_a_perm_that_is_not_a_permutation),
        TEST(concat_joins_inputs_along_the_axis),
        TEST(slice_takes_forward_backward_and_strided_ranges),
        TEST(gather_picks_along_the_axis_with_negative_indices),
        TEST(gather_refuses_an_index_out_of_range_naming_node_index_and_dim),
        TEST(gather_and_scatter_elements_index_along_the_axis),
        TEST(gather_nd_and_scatter_nd_move_blocks),
        TEST(one_hot_trilu_cumsum_and_hardmax_compute_like_onnx),
        TEST(gradient_kernels_are_offered_at_their_dtypes),
        TEST(scalar_like_converts_its_value_as_cast_does),
        TEST(gradient_kernels_refuse_shapes_and_attributes_that_do_not_fit),
        TEST(gradient_kernels_refuse_an_output_over_their_input_but_scalar_like),
        TEST(f32_gemms_on_onednn_agree_with_openblas),
        TEST(conv_state_keeps_and_grows_its_scratch),
        TEST(the_pools_spin_time_is_an_option_that_changes_no_result),
        TEST(the_gemm_option_refuses_an_unknown_library),
        TEST(open_device_starts_its_pool_and_close_device_joins_it),
        TEST(open_device_refuses_a_thread_count_that_is_not_a_number),
        TEST(large_kernels_on_the_pool_give_the_inline_result),
        TEST(conv_by_images_on_the_pool_gives_the_inline_result),
        TEST(a_batched_matmul_stops_when_the_host_cancels),
        TEST(kernels_called_from_several_threads_at_once_all_compute_correctly),
        TEST(the_flat_and_the_broadcasting_walk_give_the_same_bits),
        TEST(a_prepared_broadcasting_walk_gives_the_unprepared_result),
        TEST(a_prepared_node_launched_with_other_shapes_is_checked_from_scratch),
        TEST(a_prepared_launch_still_checks_ranges_alignment_and_overlap),
        TEST(create_gives_no_state_to_a_node_its_launches_would_refuse),
        TEST(a_state_made_for_another_entry_is_not_used),
        TEST(a_prepared_integer_division_still_refuses_a_zero_divisor),
        TEST_PREPARED(outputs_may_overlap_inputs_only_where_the_op_computes_through_it),
        TEST_PREPARED(arithmetic_on_equal_shapes_computes_elementwise_in_f32_and_f64),
        TEST_PREPARED(float_division_by_zero_gives_infinity_not_an_error),
        TEST_PREPARED(arithmetic_broadcasts_rows_columns_and_outer_products),
        TEST_PREPARED(arithmetic_works_on_scalars_and_zero_size_tensors),
        TEST_PREPARED(integer_arithmetic_wraps_and_division_truncates_toward_zero),
        TEST_PREPARED(integer_division_by_zero_is_refused_naming_the_node),
        TEST_PREPARED(arithmetic_refuses_shapes_that_do_not_broadcast_naming_all_of_them),
        TEST_PREPARED(comparisons_give_bools_with_broadcasting_and_nan_unequal),
        TEST_PREPARED(where_selects_with_three_way_broadcasting_at_each_width),
        TEST_PREPARED(unary_float_ops_match_libm_in_f32_and_f64),
        TEST_PREPARED(sigmoid_and_softplus_stay_finite_for_large_inputs),
        TEST_PREPARED(leaky_relu_reads_alpha_and_integer_unary_ops_wrap),
        TEST_PREPARED(sign_round_is_nan_and_is_inf_handle_zeros_halves_and_infinities),
        TEST_PREPARED(logic_ops_broadcast_and_read_any_nonzero_byte_as_true),
        TEST_PREPARED(mod_takes_the_divisors_sign_or_with_fmod_the_dividends),
        TEST_PREPARED(bit_shift_moves_bits_either_way_and_gives_zero_past_the_width),
        TEST_PREPARED(min_and_max_fold_any_number_of_inputs_with_broadcasting),
        TEST_PREPARED(unary_ops_handle_scalars_and_empty_tensors_and_refuse_other_shapes),
        TEST_PREPARED(cast_truncates_toward_zero_and_maps_bools_to_0_and_1),
        TEST_PREPARED(cast_refuses_a_to_attribute_that_disagrees_with_the_output),
        TEST_PREPARED(large_kernels_on_the_pool_give_the_inline_result),
        TEST_PREPARED(conv_by_images_on_the_pool_gives_the_inline_result),
        TEST_PREPARED(kernels_called_from_several_threads_at_once_all_compute_correctly),
    };
    return cmocka_run_group_tests_name("cpu_kernels", tests, NULL, NULL);
}
