/*
 * Kernel lookup: a device's kernel table entry for an op at a dtype signature. A signature lists
 * input dtypes, "->", output dtypes ("f32,f32->f32"); an entry whose input list is one dtype
 * followed by "..." ("f32...->f32") takes any number (at least one) of inputs of that dtype.
 * Among matching entries the highest priority wins.
 */
#include <string.h>

#include "plan.h"

/* Whether entry signature @p pattern accepts @p signature. */
static int signature_matches(const char *pattern, const char *signature) {
    const char *dots = strstr(pattern, "...->");
    const char *arrow;
    size_t dtype_length;

    if (!dots)
        return strcmp(pattern, signature) == 0;
    /* Variadic: every input of signature is the one dtype, and the outputs agree. */
    dtype_length = (size_t)(dots - pattern);
    arrow = strstr(signature, "->");
    if (!arrow || strcmp(arrow, dots + 3) != 0)
        return 0;
    for (const char *p = signature; p < arrow;) {
        if ((size_t)(arrow - p) < dtype_length || strncmp(p, pattern, dtype_length) != 0)
            return 0;
        p += dtype_length;
        if (p < arrow && *p++ != ',')
            return 0;
    }
    return arrow > signature;
}

const ses_drv_kernel_t *ses__find_kernel(const ses__device_ctx_t *dev, const char *op,
                                         const char *signature,
                                         const ses_drv_kernel_t *const *skip, size_t n_skip) {
    const ses_drv_kernel_t *best = NULL;

    for (uint32_t i = 0; i < dev->n_kernels; i++) {
        const ses_drv_kernel_t *k =
            (const ses_drv_kernel_t *)((const char *)dev->kernels + (size_t)i * dev->kernel_stride);
        int skipped = 0;
        if (!k->op || !k->signature || !k->compute || strcmp(k->op, op) != 0)
            continue;
        for (size_t s = 0; s < n_skip && !skipped; s++)
            skipped = skip[s] == k;
        if (skipped)
            continue;
        if (signature_matches(k->signature, signature) && (!best || k->priority > best->priority))
            best = k;
    }
    return best;
}
