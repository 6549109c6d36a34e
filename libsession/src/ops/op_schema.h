/*
 * Op schemas: what the core knows about each op type. Drivers never define semantics; they
 * implement kernels for what a schema's inference lowers a node to.
 *
 * Inference runs at compile time with concrete shapes (feeds are known then). For each node it
 *   1. checks input count, dtypes and shapes and the attributes, and fills the output types;
 *   2. lowers the node for kernels: which inputs are passed to the kernel (data inputs), the
 *      kernel's op name (usually the node's), and the normalized attributes kernels read
 *      (plugins/cpu/README.md lists them per op: axes non-negative and sorted, Slice starts and
 *      steps per dimension, Reduce axes explicit, ...). Shape-like inputs (Reshape's shape,
 *      Slice's starts/ends/axes/steps, Squeeze/Unsqueeze/Reduce axes) are read from
 *      ctx->values at compile time and never reach kernels.
 *
 * Errors name the node and both sides of any mismatch, e.g.
 *   Add "n3": inputs cannot broadcast: A is f32[2,3], B is f32[4]
 */
#ifndef SES_OP_SCHEMA_H
#define SES_OP_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

#include <session/tensor.h>

#include "../graph/attrs.h"

/** A tensor type as inference sees it: dtype and concrete shape. */
typedef struct ses__type {
    ses_dtype_t dtype; /* SES_DTYPE_INVALID for an absent optional input */
    uint32_t rank;
    int64_t dims[SES_MAX_RANK];
} ses__type_t;

/* The most inputs a variadic op (Concat) may have. */
#define SES__MAX_INPUTS 64
#define SES__MAX_OUTPUTS 8

typedef struct ses__infer_ctx {
    /* in */
    const char *node; /* the node's name, for messages */
    const char *op;
    size_t n_inputs;
    const ses__type_t *inputs;
    /* Host data of each input when known at compile time (a constant or a fed value), else NULL.
     * Shape-like inputs must be known; say so naming the input when one is not. */
    const void *const *values;
    const ses__attrs_t *attrs; /* as the user gave them */
    size_t n_outputs;          /* how many outputs the node has */

    /* out */
    ses__type_t outputs[SES__MAX_OUTPUTS];
    const char *kernel_op;     /* static string; NULL means ctx->op */
    uint64_t kernel_inputs;    /* bit i set: input i is passed to the kernel; 0 means all */
    ses__attrs_t kernel_attrs; /* normalized attributes for the kernel; owned by the caller,
                                  who zeroes it before and clears it after */
} ses__infer_ctx_t;

typedef struct ses__op_schema {
    const char *name;         /* ONNX op type */
    uint16_t min_inputs;
    uint16_t max_inputs;      /* SES__MAX_INPUTS for variadic */
    uint16_t default_outputs; /* outputs when the caller asks for 0 */
    uint16_t max_outputs;
    uint64_t value_inputs;    /* bit i: inference needs input i's value (shape-like inputs) */
    ses_status_t (*infer)(ses__infer_ctx_t *ctx);
    /* bit i: input i is updated in place (optimizers): it must be a variable, whose own storage
     * the kernel writes; such ops have no outputs and run after every other step of the plan */
    uint64_t inplace_inputs;
    /* non-zero: the runtime runs the op itself (exec/host_ops.c), not a driver kernel: file I/O
     * such as Save and Restore */
    uint32_t host_op;
} ses__op_schema_t;

/** The schema of @p op, or NULL. */
const ses__op_schema_t *ses__op_schema_find(const char *op);
/** All schemas, for listing ("did you mean") and tests. */
size_t ses__op_schema_count(void);
const ses__op_schema_t *ses__op_schema_at(size_t index);

/** Runs the schema's inference after checking the input and output counts. */
ses_status_t ses__op_infer(const ses__op_schema_t *schema, ses__infer_ctx_t *ctx);

/** "f32[2,3]" into @p buffer; "f32[]" for a scalar. */
const char *ses__type_format(const ses__type_t *t, char *buffer, size_t size);

/** Number of elements of @p t (1 for a scalar). */
int64_t ses__type_count(const ses__type_t *t);

#endif /* SES_OP_SCHEMA_H */
