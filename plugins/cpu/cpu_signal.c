/*
 * Det, the window generators (HannWindow HammingWindow BlackmanWindow), MelWeightMatrix, DFT
 * and STFT, at f32 and f64. Everything is computed in double and rounded once at the end.
 *
 * Det factors each matrix as LU with partial pivoting. The transforms use an iterative radix-2
 * FFT when the length is a power of two and the plain O(n^2) sum otherwise, with the twiddles
 * e^(-2 pi i k / n) tabulated once per launch (index j k mod n, so no angle is ever large).
 * The shape-giving scalars arrive as attributes (libsession/src/ops/signal.c); each body still
 * checks that its output has the shape they imply.
 */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

#define CPU__PI 3.14159265358979323846

static inline double cpu__load(const cpu__tensor_t *t, uint64_t i) {
    return t->dtype == SES_DRV_DTYPE_F32 ? (double)((const float *)(const void *)t->data)[i]
                                         : ((const double *)(const void *)t->data)[i];
}

static inline void cpu__store(const cpu__tensor_t *t, uint64_t i, double v) {
    if (t->dtype == SES_DRV_DTYPE_F32)
        ((float *)(void *)t->data)[i] = (float)v;
    else
        ((double *)(void *)t->data)[i] = v;
}

static int32_t cpu__signal_shape_fail(const cpu__call_t *call, const char *what,
                                      const int64_t *want, uint32_t want_rank) {
    char a[96], o[96];
    return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT, "%s: the output is %s, expected %s", what,
                          cpu__format_dims(call->out.dims, call->out.rank, o, sizeof o),
                          cpu__format_dims(want, want_rank, a, sizeof a));
}

static int cpu__dims_equal(const int64_t *a, const int64_t *b, uint32_t rank) {
    for (uint32_t d = 0; d < rank; d++)
        if (a[d] != b[d])
            return 0;
    return 1;
}

/* ---------------------------------------------------------------------------------------------
 * Det
 * ------------------------------------------------------------------------------------------- */

int32_t cpu__det(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0];
    double *a;

    if (x->rank < 2 || x->dims[x->rank - 1] != x->dims[x->rank - 2])
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "input 0 must be square matrices [*, M, M]");
    if (call->out.rank != x->rank - 2 || !cpu__dims_equal(call->out.dims, x->dims, x->rank - 2))
        return cpu__signal_shape_fail(call, "Det of [*, M, M] is [*]", x->dims, x->rank - 2);
    const uint64_t m = (uint64_t)x->dims[x->rank - 1];
    const uint64_t count = call->out.count;
    if (count == 0)
        return SES_DRV_OK;
    a = malloc((m ? m * m : 1) * sizeof *a);
    if (!a)
        return cpu__call_fail(call, SES_DRV_OUT_OF_MEMORY,
                              "cannot allocate a %" PRIu64 "x%" PRIu64 " work matrix", m, m);
    for (uint64_t b = 0; b < count; b++) {
        double det = 1.0;
        for (uint64_t i = 0; i < m * m; i++)
            a[i] = cpu__load(x, b * m * m + i);
        for (uint64_t c = 0; c < m && det != 0.0; c++) {
            uint64_t p = c;
            for (uint64_t r = c + 1; r < m; r++)
                if (fabs(a[r * m + c]) > fabs(a[p * m + c]))
                    p = r;
            if (a[p * m + c] == 0.0) {
                det = 0.0;
                break;
            }
            if (p != c) {
                for (uint64_t k = 0; k < m; k++) {
                    double t = a[c * m + k];
                    a[c * m + k] = a[p * m + k];
                    a[p * m + k] = t;
                }
                det = -det;
            }
            det *= a[c * m + c];
            for (uint64_t r = c + 1; r < m; r++) {
                const double f = a[r * m + c] / a[c * m + c];
                for (uint64_t k = c + 1; k < m; k++)
                    a[r * m + k] -= f * a[c * m + k];
            }
        }
        cpu__store(&call->out, b, det);
    }
    free(a);
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Windows and MelWeightMatrix
 * ------------------------------------------------------------------------------------------- */

/* The value of a generator's first input, an integer scalar. */
static int64_t cpu__int_scalar(const cpu__tensor_t *t) {
    if (t->count < 1)
        return -1;
    if (t->dtype == SES_DRV_DTYPE_I32)
        return ((const int32_t *)(const void *)t->data)[0];
    return ((const int64_t *)(const void *)t->data)[0];
}

int32_t cpu__window(const cpu__call_t *call) {
    int64_t periodic = 1;
    int32_t st;

    if ((st = cpu__attr_int(call, "periodic", 1, 1, &periodic)) != SES_DRV_OK)
        return st;
    const int64_t size = cpu__int_scalar(&call->in[0]);
    if (call->in[0].count != 1 || call->out.rank != 1 || call->out.dims[0] != size)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "input 0 (size) must be one integer equal to the output's length");
    /* The symmetric window's period is size - 1; a window of one sample is its value at 0. */
    const double period = (double)(periodic ? size : size - 1 > 0 ? size - 1 : 1);
    for (int64_t i = 0; i < size; i++) {
        const double t = 2.0 * CPU__PI * (double)i / period;
        double v;
        switch (call->spec->code) {
            case CPU__OP_HANNWINDOW:
                v = 0.5 - 0.5 * cos(t);
                break;
            case CPU__OP_HAMMINGWINDOW:
                v = 25.0 / 46.0 - (21.0 / 46.0) * cos(t);
                break;
            default:
                v = 0.42 - 0.5 * cos(t) + 0.08 * cos(2.0 * t);
                break;
        }
        cpu__store(&call->out, (uint64_t)i, v);
    }
    return SES_DRV_OK;
}

/*
 * ONNX's MelWeightMatrix: num_mel_bins + 2 points evenly spaced on the mel scale
 * (mel(f) = 2595 log10(1 + f / 700)) from lower_edge_hertz, by (high - low) / (num_mel_bins + 2),
 * each mapped to the spectrogram bin floor((dft_length + 1) f / sample_rate); filter i rises
 * linearly from point i to point i + 1 (1 there) and falls to point i + 2.
 */
int32_t cpu__mel_weight_matrix(const cpu__call_t *call) {
    int64_t bins, length, rate;
    double lower, upper;
    int64_t *points;
    int32_t st;

    if ((st = cpu__attr_int(call, "num_mel_bins", 0, 0, &bins)) != SES_DRV_OK ||
        (st = cpu__attr_int(call, "dft_length", 0, 0, &length)) != SES_DRV_OK ||
        (st = cpu__attr_int(call, "sample_rate", 0, 0, &rate)) != SES_DRV_OK ||
        (st = cpu__attr_float(call, "lower_edge_hertz", 0.0, &lower)) != SES_DRV_OK ||
        (st = cpu__attr_float(call, "upper_edge_hertz", 0.0, &upper)) != SES_DRV_OK)
        return st;
    if (bins < 1 || length < 1 || rate < 1 || !(lower >= 0.0) || !(upper > lower) ||
        upper > (double)rate)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "num_mel_bins %" PRId64 ", dft_length %" PRId64
                              ", sample_rate %" PRId64 ", edges %g to %g: out of range",
                              bins, length, rate, lower, upper);
    const int64_t spectrum = length / 2 + 1;
    const int64_t want[2] = {spectrum, bins};
    if (call->out.rank != 2 || !cpu__dims_equal(call->out.dims, want, 2))
        return cpu__signal_shape_fail(call, "[dft_length / 2 + 1, num_mel_bins]", want, 2);
    points = malloc((size_t)(bins + 2) * sizeof *points);
    if (!points)
        return cpu__call_fail(call, SES_DRV_OUT_OF_MEMORY, "cannot allocate %" PRId64 " points",
                              bins + 2);
    const double low_mel = 2595.0 * log10(1.0 + lower / 700.0);
    const double high_mel = 2595.0 * log10(1.0 + upper / 700.0);
    const double step = (high_mel - low_mel) / (double)(bins + 2);
    for (int64_t i = 0; i < bins + 2; i++) {
        const double hz = 700.0 * (pow(10.0, ((double)i * step + low_mel) / 2595.0) - 1.0);
        int64_t p = (int64_t)floor((double)(length + 1) * hz / (double)rate);
        points[i] = p < 0 ? 0 : p >= spectrum ? spectrum - 1 : p;
    }
    for (uint64_t i = 0; i < call->out.count; i++)
        cpu__store(&call->out, i, 0.0);
    for (int64_t i = 0; i < bins; i++) {
        const int64_t lo = points[i], center = points[i + 1], hi = points[i + 2];
        if (center == lo) {
            cpu__store(&call->out, (uint64_t)(center * bins + i), 1.0);
        } else {
            for (int64_t j = lo; j <= center; j++)
                cpu__store(&call->out, (uint64_t)(j * bins + i),
                           (double)(j - lo) / (double)(center - lo));
        }
        for (int64_t j = center; j < hi; j++)
            cpu__store(&call->out, (uint64_t)(j * bins + i),
                       (double)(hi - j) / (double)(hi - center));
    }
    free(points);
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * DFT and STFT
 * ------------------------------------------------------------------------------------------- */

/* One transform length's tables and work space, in one allocation. */
typedef struct cpu__fft {
    uint64_t n;
    int pow2;
    double *cos_t, *sin_t; /* cos and sin of 2 pi k / n; the direction gives sin's sign */
    double *re, *im;       /* the line being transformed */
    double *tr, *ti;       /* the O(n^2) sum's output */
} cpu__fft_t;

static int cpu__fft_init(cpu__fft_t *f, uint64_t n) {
    f->n = n;
    f->pow2 = (n & (n - 1)) == 0;
    f->cos_t = malloc(6 * n * sizeof(double));
    if (!f->cos_t)
        return 0;
    f->sin_t = f->cos_t + n;
    f->re = f->sin_t + n;
    f->im = f->re + n;
    f->tr = f->im + n;
    f->ti = f->tr + n;
    for (uint64_t k = 0; k < n; k++) {
        const double t = 2.0 * CPU__PI * (double)k / (double)n;
        f->cos_t[k] = cos(t);
        f->sin_t[k] = sin(t);
    }
    return 1;
}

/* Transforms f->re, f->im in place: sum_j x[j] e^(-+2 pi i j k / n) (+ for the inverse, which
 * also divides by n). */
static void cpu__fft_run(cpu__fft_t *f, int inverse) {
    const uint64_t n = f->n;
    const double sgn = inverse ? 1.0 : -1.0;
    double *re = f->re, *im = f->im;

    if (f->pow2) {
        for (uint64_t i = 1, j = 0; i < n; i++) {
            uint64_t bit = n >> 1;
            for (; j & bit; bit >>= 1)
                j ^= bit;
            j ^= bit;
            if (i < j) {
                double t = re[i];
                re[i] = re[j];
                re[j] = t;
                t = im[i];
                im[i] = im[j];
                im[j] = t;
            }
        }
        for (uint64_t len = 2; len <= n; len <<= 1) {
            const uint64_t stride = n / len, half = len / 2;
            for (uint64_t s = 0; s < n; s += len)
                for (uint64_t k = 0; k < half; k++) {
                    const double wr = f->cos_t[k * stride], wi = sgn * f->sin_t[k * stride];
                    const uint64_t a = s + k, b = s + k + half;
                    const double xr = re[b] * wr - im[b] * wi, xi = re[b] * wi + im[b] * wr;
                    re[b] = re[a] - xr;
                    im[b] = im[a] - xi;
                    re[a] += xr;
                    im[a] += xi;
                }
        }
    } else {
        for (uint64_t k = 0; k < n; k++) {
            double sr = 0.0, si = 0.0;
            for (uint64_t j = 0; j < n; j++) {
                const uint64_t w = (j * k) % n;
                const double wr = f->cos_t[w], wi = sgn * f->sin_t[w];
                sr += re[j] * wr - im[j] * wi;
                si += re[j] * wi + im[j] * wr;
            }
            f->tr[k] = sr;
            f->ti[k] = si;
        }
        memcpy(re, f->tr, n * sizeof *re);
        memcpy(im, f->ti, n * sizeof *im);
    }
    if (inverse)
        for (uint64_t k = 0; k < n; k++) {
            re[k] /= (double)n;
            im[k] /= (double)n;
        }
}

int32_t cpu__dft(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0];
    int64_t axis, inverse, onesided, length;
    cpu__fft_t f;
    int32_t st;

    if ((st = cpu__attr_int(call, "axis", 1, 1, &axis)) != SES_DRV_OK ||
        (st = cpu__attr_int(call, "inverse", 1, 0, &inverse)) != SES_DRV_OK ||
        (st = cpu__attr_int(call, "onesided", 1, 0, &onesided)) != SES_DRV_OK ||
        (st = cpu__attr_int(call, "dft_length", 0, 0, &length)) != SES_DRV_OK)
        return st;
    if (x->rank < 2 || (x->dims[x->rank - 1] != 1 && x->dims[x->rank - 1] != 2) || axis < 0 ||
        axis > (int64_t)x->rank - 2 || length < 1 || (inverse && onesided))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "input 0 must be [..., n, 1 or 2] with axis (%" PRId64
                              ") in [0, rank - 2], dft_length (%" PRId64
                              ") positive, and not both inverse and onesided",
                              axis, length);
    int64_t want[CPU__MAX_RANK];
    if ((st = cpu__check_rank(call, "input 0", x)) != SES_DRV_OK)
        return st;
    memcpy(want, x->dims, x->rank * sizeof *want);
    const int64_t bins = onesided ? length / 2 + 1 : length;
    want[axis] = bins;
    want[x->rank - 1] = 2;
    if (call->out.rank != x->rank || !cpu__dims_equal(call->out.dims, want, x->rank))
        return cpu__signal_shape_fail(call, "DFT", want, x->rank);
    if (call->out.count == 0)
        return SES_DRV_OK;
    const uint64_t c = (uint64_t)x->dims[x->rank - 1], n = (uint64_t)x->dims[axis];
    uint64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; d++)
        outer *= (uint64_t)x->dims[d];
    for (uint32_t d = (uint32_t)axis + 1; d + 1 < x->rank; d++)
        inner *= (uint64_t)x->dims[d];
    if (!cpu__fft_init(&f, (uint64_t)length))
        return cpu__call_fail(call, SES_DRV_OUT_OF_MEMORY,
                              "cannot allocate the tables of a %" PRId64 "-point transform",
                              length);
    const uint64_t take = n < (uint64_t)length ? n : (uint64_t)length;
    for (uint64_t o = 0; o < outer; o++)
        for (uint64_t i = 0; i < inner; i++) {
            for (uint64_t j = 0; j < (uint64_t)length; j++) {
                const uint64_t at = ((o * n + j) * inner + i) * c;
                f.re[j] = j < take ? cpu__load(x, at) : 0.0;
                f.im[j] = j < take && c == 2 ? cpu__load(x, at + 1) : 0.0;
            }
            cpu__fft_run(&f, (int)inverse);
            for (uint64_t k = 0; k < (uint64_t)bins; k++) {
                const uint64_t at = ((o * (uint64_t)bins + k) * inner + i) * 2;
                cpu__store(&call->out, at, f.re[k]);
                cpu__store(&call->out, at + 1, f.im[k]);
            }
        }
    free(f.cos_t);
    return SES_DRV_OK;
}

int32_t cpu__stft(const cpu__call_t *call) {
    const cpu__tensor_t *x = &call->in[0];
    const cpu__tensor_t *w = call->n_in > 1 ? &call->in[1] : NULL;
    int64_t step, length, onesided;
    cpu__fft_t f;
    int32_t st;

    if ((st = cpu__attr_int(call, "frame_step", 0, 0, &step)) != SES_DRV_OK ||
        (st = cpu__attr_int(call, "frame_length", 0, 0, &length)) != SES_DRV_OK ||
        (st = cpu__attr_int(call, "onesided", 1, 1, &onesided)) != SES_DRV_OK)
        return st;
    if (x->rank != 3 || (x->dims[2] != 1 && x->dims[2] != 2) || step < 1 || length < 1 ||
        length > x->dims[1] || (w && (w->rank != 1 || w->dims[0] != length)))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "the signal must be [batch, length, 1 or 2] with frame_step (%" PRId64
                              ") positive, frame_length (%" PRId64
                              ") in [1, length], and the window of frame_length values",
                              step, length);
    const int64_t bins = onesided ? length / 2 + 1 : length;
    const int64_t frames = 1 + (x->dims[1] - length) / step;
    const int64_t want[4] = {x->dims[0], frames, bins, 2};
    if (call->out.rank != 4 || !cpu__dims_equal(call->out.dims, want, 4))
        return cpu__signal_shape_fail(call, "STFT", want, 4);
    if (call->out.count == 0)
        return SES_DRV_OK;
    if (!cpu__fft_init(&f, (uint64_t)length))
        return cpu__call_fail(call, SES_DRV_OUT_OF_MEMORY,
                              "cannot allocate the tables of a %" PRId64 "-point transform",
                              length);
    const uint64_t c = (uint64_t)x->dims[2], n = (uint64_t)x->dims[1];
    for (uint64_t b = 0; b < (uint64_t)x->dims[0]; b++)
        for (uint64_t fr = 0; fr < (uint64_t)frames; fr++) {
            for (uint64_t j = 0; j < (uint64_t)length; j++) {
                const uint64_t at = (b * n + fr * (uint64_t)step + j) * c;
                const double scale = w ? cpu__load(w, j) : 1.0;
                f.re[j] = cpu__load(x, at) * scale;
                f.im[j] = c == 2 ? cpu__load(x, at + 1) * scale : 0.0;
            }
            cpu__fft_run(&f, 0);
            for (uint64_t k = 0; k < (uint64_t)bins; k++) {
                const uint64_t at = ((b * (uint64_t)frames + fr) * (uint64_t)bins + k) * 2;
                cpu__store(&call->out, at, f.re[k]);
                cpu__store(&call->out, at + 1, f.im[k]);
            }
        }
    free(f.cos_t);
    return SES_DRV_OK;
}
