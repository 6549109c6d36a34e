/*
 * Loads cuDNN 9 with dlopen and resolves the legacy-API functions the CUDA driver uses for Conv,
 * ConvGrad and the pools (cuda_cudnn.h). Without it the driver computes those ops with its own
 * kernels and cuBLAS; so every failure here is a message, never an error of the driver.
 */
#if !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* dlinfo-free; RTLD_* only, but keep glibc's full declarations */
#endif
#include "cuda_cudnn.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#if defined(__has_include)
#if __has_include(<cudnn.h>) && defined(SES_CUDA_CHECK_CUDNN_HEADER)
/* With cuDNN's headers at hand, check that the values declared in cuda_cudnn.h are theirs. */
#include <cudnn.h>
_Static_assert(CUDNN__STATUS_SUCCESS == CUDNN_STATUS_SUCCESS, "cudnnStatus_t");
_Static_assert(CUDNN__DATA_FLOAT == CUDNN_DATA_FLOAT, "CUDNN_DATA_FLOAT");
_Static_assert(CUDNN__DATA_DOUBLE == CUDNN_DATA_DOUBLE, "CUDNN_DATA_DOUBLE");
_Static_assert(CUDNN__TENSOR_NCHW == CUDNN_TENSOR_NCHW, "CUDNN_TENSOR_NCHW");
_Static_assert(CUDNN__CROSS_CORRELATION == CUDNN_CROSS_CORRELATION, "CUDNN_CROSS_CORRELATION");
_Static_assert(CUDNN__DEFAULT_MATH == CUDNN_DEFAULT_MATH, "CUDNN_DEFAULT_MATH");
_Static_assert(CUDNN__FMA_MATH == CUDNN_FMA_MATH, "CUDNN_FMA_MATH");
_Static_assert(CUDNN__PROPAGATE_NAN == CUDNN_PROPAGATE_NAN, "CUDNN_PROPAGATE_NAN");
_Static_assert(CUDNN__POOLING_AVERAGE_COUNT_INCLUDE_PADDING ==
                   CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
               "CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING");
_Static_assert(CUDNN__POOLING_AVERAGE_COUNT_EXCLUDE_PADDING ==
                   CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING,
               "CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING");
_Static_assert(CUDNN__POOLING_MAX_DETERMINISTIC == CUDNN_POOLING_MAX_DETERMINISTIC,
               "CUDNN_POOLING_MAX_DETERMINISTIC");
_Static_assert(sizeof(cudnn_perf_t) == sizeof(cudnnConvolutionFwdAlgoPerf_t), "perf struct");
_Static_assert(offsetof(cudnn_perf_t, memory) == offsetof(cudnnConvolutionFwdAlgoPerf_t, memory),
               "perf struct");
#endif
#endif

void cuda__cudnn_version_str(size_t version, char *buf, size_t size) {
    /* cuDNN 9 encodes major * 10000 + minor * 100 + patch; cuDNN 8 and older major * 1000. */
    if (version >= 10000)
        snprintf(buf, size, "%zu.%zu.%zu", version / 10000, version / 100 % 100, version % 100);
    else
        snprintf(buf, size, "%zu.%zu.%zu", version / 1000, version / 100 % 10, version % 100);
}

void cuda__cudnn_unload(cuda_cudnn_t *c) {
    if (!c)
        return;
    if (c->lib)
        dlclose(c->lib);
    memset(c, 0, sizeof *c);
}

/* One line of dlerror() text (it never has a newline today; be sure). */
static void cuda_cudnn_dlerror(char *buf, size_t size) {
    const char *e = dlerror();
    snprintf(buf, size, "%s", e ? e : "unknown error");
    for (char *p = buf; *p; p++)
        if (*p == '\n')
            *p = ' ';
}

int cuda__cudnn_load(const char *spec, const char *default_name, cuda_cudnn_t *out, char *why,
                     size_t why_size) {
    char err[400];
    struct stat sb;

    memset(out, 0, sizeof *out);
    if (spec && (strcmp(spec, "0") == 0 || strcmp(spec, "off") == 0 || strcmp(spec, "none") == 0)) {
        snprintf(why, why_size, "turned off by driver.cuda.cudnn=%s", spec);
        return -1;
    }
    if (!spec || !*spec)
        snprintf(out->path, sizeof out->path, "%s", default_name);
    else if (stat(spec, &sb) == 0 && S_ISDIR(sb.st_mode))
        snprintf(out->path, sizeof out->path, "%s/%s", spec, CUDA_CUDNN_DEFAULT_NAME);
    else
        snprintf(out->path, sizeof out->path, "%s", spec);

    dlerror();
    /* RTLD_LOCAL: cuDNN's symbols stay out of the process's namespace; RTLD_NOW: a library whose
     * own dependencies are missing fails here, not at the first convolution. */
    out->lib = dlopen(out->path, RTLD_NOW | RTLD_LOCAL);
    if (!out->lib) {
        cuda_cudnn_dlerror(err, sizeof err);
        snprintf(why, why_size, "cannot load %s: %s", out->path, err);
        memset(out, 0, sizeof *out);
        return -1;
    }

    static const struct {
        const char *name;
        size_t offset;
    } syms[] = {
#define SYM(RET, NAME, PARAMS) {"cudnn" #NAME, offsetof(cuda_cudnn_t, NAME)},
        CUDA_CUDNN_FUNCTIONS(SYM)
#undef SYM
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *f;
        dlerror();
        f = dlsym(out->lib, syms[i].name);
        if (!f) {
            snprintf(why, why_size, "%s has no %s: not cuDNN 9", out->path, syms[i].name);
            cuda__cudnn_unload(out);
            return -1;
        }
        /* Object and function pointers have one representation on every POSIX system. */
        memcpy((char *)out + syms[i].offset, &f, sizeof f);
        if (i == 0) {
            /* The version first: an older cuDNN may lack some names, and saying so is clearer. */
            char v[32];
            out->version = out->GetVersion();
            cuda__cudnn_version_str(out->version, v, sizeof v);
            if (out->version < 90000) {
                snprintf(why, why_size, "%s is cuDNN %s; the cuda driver needs cuDNN 9",
                         out->path, v);
                cuda__cudnn_unload(out);
                return -1;
            }
        }
    }
    return 0;
}
