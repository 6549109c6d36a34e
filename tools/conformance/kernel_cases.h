/*
 * The inputs every op is checked on, written as short strings so that a case reads like the
 * node it builds. Tokens, separated by spaces:
 *
 *   [2,3]          a data input of that shape (dtype from the kernel's signature, in order);
 *   [2,3]@pos      ... with values from a domain: any (default), pos (0.1..4), nz (|x| in
 *                  0.5..4), small (integers -2..2, so that ties and equal values occur),
 *                  unit (-1..1), exp (-2..2), prob (0..0.95: probabilities, ratios), cast
 *                  (multiples of 0.25 in 0..100), idxN (indices
 *                  in [-N, N)), classN (class labels in [0, N)), bool (0 or 1), and the
 *                  NaN domains, for float dtypes only (a case with them is skipped for
 *                  integer signatures): nan (every element NaN), nanrow (one NaN in each row
 *                  of the last dimension, at a column that moves from row to row), somenan
 *                  (about one element in four NaN, the others as any);
 *   [5,4]@like     a "like" input: data the node takes only for its shape or dtype, which the
 *                  host does not pass to the kernel (ExpandLike's like, SliceGrad's x). It is
 *                  not in the signature and not counted among the data inputs; it has the
 *                  signature's output dtype and random values;
 *   [4,3]@pos+var  a variable starting at random values of that domain, for ops without
 *                  outputs that update inputs in place (SGD, Momentum, Adam): the op runs once
 *                  as a target and the variables are compared afterwards;
 *   shape=i64:[4,-1]   a constant i64 input (a shape-like input, resolved at compile time);
 *   scales=f32:[1.0,2.0]  roi=f32:[]   a constant f32 input, possibly empty (Resize's);
 *   training_mode=bool:[1]   a constant bool input, likewise;
 *   axis=1  alpha=0.5  perm=[1,0]  reduction=sum   an INT, FLOAT (has a '.'), INTS or STRING
 *                  (starts with a letter) attribute; activation_params=[0.0,6.0] a FLOATS one
 *                  (a list with a '.');
 *   !nan           every output element must be NaN (DRV-54), checked on the driver's output
 *                  itself, not only against the reference.
 *
 * A case applies to a kernel when its number of data inputs equals the signature's (any number
 * for a variadic signature). Every op has cases of rank 0, zero size, broadcasting where the op
 * broadcasts, odd sizes, and a large one.
 */
#ifndef SES_CONFORMANCE_KERNEL_CASES_H
#define SES_CONFORMANCE_KERNEL_CASES_H

typedef struct ses_conf_op_cases {
    const char *op;
    /* Tolerance for f32 results: |got - want| <= atol + rtol * |want|. Other float dtypes scale
     * it (kernel_checks.c); integers and bools are always compared exactly. */
    double rtol;
    double atol;
    const char *const *cases; /* NULL-terminated */
} ses_conf_op_cases_t;

/** The cases of @p op, or NULL when the suite has none (the kernel is then reported). */
const ses_conf_op_cases_t *ses_conf_find_cases(const char *op);

#endif
