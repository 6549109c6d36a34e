/*
 * The OpenCL driver's kernels, in OpenCL C 1.2. Built once per device context (and cached on
 * disk as a binary, ocl_driver.c). Every kernel takes its buffers with element offsets, since a
 * plan's tensors sit at byte offsets in one arena, and loops grid-stride over its elements so
 * that the host may launch fewer work items than elements.
 */

/* Per-dimension sizes and up to three operands' element strides (0 where an operand is
 * broadcast), in output order. Mirrors ocl_bcast_t in ocl_ops.c. */
typedef struct {
    long dims[8];
    long st[3][8];
    int rank;
    int contig; /* non-zero: every operand is dense in output order, so offsets are the index */
} bc_t;

/* Reduction geometry: the output walks odims with input strides ost; each output element sums
 * the input over rdims with strides rst. Mirrors ocl_reduce_t. */
typedef struct {
    long odims[8];
    long ost[8];
    long rdims[8];
    long rst[8];
    int orank;
    int rrank;
} rd_t;

static inline long bc_off(const bc_t *bc, int k, ulong i) {
    long off = 0;
    if (bc->contig)
        return (long)i;
    for (int d = bc->rank - 1; d >= 0; d--) {
        long n = bc->dims[d];
        long idx = (long)(i % (ulong)n);
        i /= (ulong)n;
        off += idx * bc->st[k][d];
    }
    return off;
}

#define FOR_EACH(i, n) for (ulong i = get_global_id(0); i < (n); i += get_global_size(0))

/* Unary ops on f32 (op: ocl_unary_code's index); the input is read through the broadcast
 * strides st[0]. */
kernel void unary_f32(global const float *x, ulong xo, global float *y, ulong yo, ulong n,
                      bc_t bc, int op, float alpha) {
    FOR_EACH(i, n) {
        float v = x[xo + bc_off(&bc, 0, i)], r;
        switch (op) {
        case 0: r = -v; break;
        case 1: r = fabs(v); break;
        case 2: r = v < 0.0f ? 0.0f : v; break;
        case 3: r = exp(v); break;
        case 4: r = log(v); break;
        case 5: r = sqrt(v); break;
        case 6: r = 1.0f / v; break;
        case 7: r = 1.0f / (1.0f + exp(-v)); break;
        case 8: r = tanh(v); break;
        case 9: r = v > 20.0f ? v : log1p(exp(v)); break;
        case 10: r = erf(v); break;
        case 11: r = v < 0.0f ? alpha * v : v; break;
        case 12: r = alpha * v; break;
        case 13: r = cos(v); break;
        case 14: r = sin(v); break;
        case 15: r = tan(v); break;
        case 16: r = acos(v); break;
        case 17: r = asin(v); break;
        case 18: r = atan(v); break;
        case 19: r = cosh(v); break;
        case 20: r = sinh(v); break;
        case 21: r = asinh(v); break;
        case 22: r = acosh(v); break;
        case 23: r = atanh(v); break;
        case 24: r = rint(v); break; /* halves to even */
        /* Not OpenCL's sign(), which turns NaN into 0. */
        case 25: r = v > 0.0f ? 1.0f : v < 0.0f ? -1.0f : v; break;
        default: r = v; break;
        }
        y[yo + i] = r;
    }
}

/* Binary ops on f32 with numpy broadcasting (Min and Max of two inputs among them), and the
 * one-shape gradient ops. */
kernel void binary_f32(global const float *a, ulong ao, global const float *b, ulong bo,
                       global float *y, ulong yo, ulong n, bc_t bc, int op, float alpha) {
    FOR_EACH(i, n) {
        float u = a[ao + bc_off(&bc, 0, i)], v = b[bo + bc_off(&bc, 1, i)], r;
        switch (op) {
        case 0: r = u + v; break;
        case 1: r = u - v; break;
        case 2: r = u * v; break;
        case 3: r = u / v; break;
        case 4: r = pow(u, v); break;
        case 5: r = v > 0.0f ? u : 0.0f; break;               /* ReluGrad(dy, x) */
        case 6: r = u * v * (1.0f - v); break;                /* SigmoidGrad(dy, y) */
        case 7: r = u * (1.0f - v * v); break;                /* TanhGrad(dy, y) */
        case 8: r = v > 0.0f ? u : alpha * u; break;          /* LeakyReluGrad(dy, x) */
        case 9: r = (u < v || isnan(u)) ? u : v; break;       /* Min: NaN wins */
        case 10: r = (u > v || isnan(u)) ? u : v; break;     /* Max */
        case 11: r = u < 0.0f ? v * u : u; break;             /* PRelu(x, slope) */
        default: r = u; break;
        }
        y[yo + i] = r;
    }
}

/* Comparisons of f32 to bool (one byte, 0 or 1). NaN compares false, so it equals nothing. */
kernel void compare_f32(global const float *a, ulong ao, global const float *b, ulong bo,
                        global uchar *y, ulong yo, ulong n, bc_t bc, int op) {
    FOR_EACH(i, n) {
        float u = a[ao + bc_off(&bc, 0, i)], v = b[bo + bc_off(&bc, 1, i)];
        int r = op == 0 ? u == v : op == 1 ? u > v : u < v;
        y[yo + i] = (uchar)(r ? 1 : 0);
    }
}

/* Where(condition, X, Y) by element size: the values are only moved, never computed on. */
#define WHERE(NAME, T)                                                                          \
    kernel void NAME(global const uchar *c, ulong co, global const T *a, ulong ao,              \
                     global const T *b, ulong bo, global T *y, ulong yo, ulong n, bc_t bc) {    \
        FOR_EACH(i, n) {                                                                        \
            y[yo + i] = c[co + bc_off(&bc, 0, i)] ? a[ao + bc_off(&bc, 1, i)]                   \
                                                  : b[bo + bc_off(&bc, 2, i)];                  \
        }                                                                                       \
    }
WHERE(where1, uchar)
WHERE(where4, uint)
WHERE(where8, ulong)

/* Strided copies by element size: input strides st[0], output strides st[1]. Transpose,
 * Slice, Concat, ExpandLike and the copy ops are all this, with different strides. */
#define STRIDED(NAME, T)                                                                        \
    kernel void NAME(global const T *x, long xo, global T *y, long yo, ulong n, bc_t bc) {      \
        FOR_EACH(i, n) {                                                                        \
            y[yo + bc_off(&bc, 1, i)] = x[xo + bc_off(&bc, 0, i)];                              \
        }                                                                                       \
    }
STRIDED(strided1, uchar)
STRIDED(strided2, ushort)
STRIDED(strided4, uint)
STRIDED(strided8, ulong)

/* Reductions of f32: 0 sum, 1 mean (sum times scale), 2 max (NaN wins), 3 sum times scale,
 * 4 min (NaN wins), 5 product, 6 L1, 7 L2, 8 log of the sum, 9 log of the sum of exp (the max
 * subtracted first, in a pass of its own), 10 sum of squares. */
kernel void reduce_f32(global const float *x, ulong xo, global float *y, ulong yo, ulong nout,
                       ulong nred, rd_t r, int op, float scale) {
    FOR_EACH(i, nout) {
        long base = 0;
        ulong rest = i;
        for (int d = r.orank - 1; d >= 0; d--) {
            base += (long)(rest % (ulong)r.odims[d]) * r.ost[d];
            rest /= (ulong)r.odims[d];
        }
        float acc = op == 2 || op == 9 ? -INFINITY : op == 4 ? INFINITY : op == 5 ? 1.0f : 0.0f;
        float mx = 0.0f;
        /* LogSumExp's first pass finds the max; a NaN or infinite max is the result. */
        for (int pass = op == 9 ? 0 : 1; pass < 2; pass++) {
            if (pass == 1 && op == 9) {
                mx = acc;
                acc = 0.0f;
                if (isnan(mx) || isinf(mx))
                    break;
            }
            for (ulong j = 0; j < nred; j++) {
                long off = 0;
                ulong q = j;
                for (int d = r.rrank - 1; d >= 0; d--) {
                    off += (long)(q % (ulong)r.rdims[d]) * r.rst[d];
                    q /= (ulong)r.rdims[d];
                }
                float v = x[xo + base + off];
                if (op == 2 || (op == 9 && pass == 0))
                    acc = (v > acc || isnan(v)) && !isnan(acc) ? v : acc;
                else if (op == 4)
                    acc = (v < acc || isnan(v)) && !isnan(acc) ? v : acc;
                else if (op == 5)
                    acc *= v;
                else if (op == 6)
                    acc += fabs(v);
                else if (op == 7 || op == 10)
                    acc += v * v;
                else if (op == 9)
                    acc += exp(v - mx);
                else
                    acc += v;
            }
        }
        y[yo + i] = op == 1 || op == 3 ? acc * scale
                    : op == 7          ? sqrt(acc)
                    : op == 8          ? log(acc)
                    : op == 9          ? (isnan(mx) || isinf(mx) ? mx : mx + log(acc))
                                       : acc;
    }
}

/* Softmax family along one axis of [outer, axis, inner]: 0 Softmax(x), 1 LogSoftmax(x),
 * 2 SoftmaxGrad(dy = a, y = b), 3 LogSoftmaxGrad(dy = a, y = b). */
kernel void softmax_f32(global const float *a, ulong ao, global const float *b, ulong bo,
                        global float *y, ulong yo, ulong outer, ulong axis, ulong inner,
                        int mode) {
    FOR_EACH(g, outer * inner) {
        ulong base = (g / inner) * axis * inner + g % inner;
        if (mode == 4) {
            /* Hardmax: 1 at the first largest element (NaN never is), 0 elsewhere. */
            ulong best = 0;
            for (ulong k = 1; k < axis; k++)
                if (a[ao + base + k * inner] > a[ao + base + best * inner])
                    best = k;
            for (ulong k = 0; k < axis; k++)
                y[yo + base + k * inner] = k == best ? 1.0f : 0.0f;
        } else if (mode <= 1) {
            float m = -INFINITY, s = 0.0f;
            for (ulong k = 0; k < axis; k++)
                m = fmax(m, a[ao + base + k * inner]);
            for (ulong k = 0; k < axis; k++)
                s += exp(a[ao + base + k * inner] - m);
            for (ulong k = 0; k < axis; k++) {
                float v = a[ao + base + k * inner] - m;
                y[yo + base + k * inner] = mode == 0 ? exp(v) / s : v - log(s);
            }
        } else {
            float s = 0.0f;
            for (ulong k = 0; k < axis; k++)
                s += mode == 2 ? a[ao + base + k * inner] * b[bo + base + k * inner]
                               : a[ao + base + k * inner];
            for (ulong k = 0; k < axis; k++) {
                float dy = a[ao + base + k * inner], v = b[bo + base + k * inner];
                y[yo + base + k * inner] = mode == 2 ? v * (dy - s) : dy - exp(v) * s;
            }
        }
    }
}

/* Optimizers, in place: 0 SGD, 1 Momentum, 2 Momentum (Nesterov), 3 Adam. lr is a scalar
 * buffer; Adam's corrections c1 = 1 - beta1^t and c2 = 1 - beta2^t come from the host. */
kernel void optim_f32(global float *var, ulong vo, global const float *grad, ulong go,
                      global const float *lrp, ulong lo, global float *m, ulong mo,
                      global float *v, ulong wo, ulong n, int op, float a, float b, float eps,
                      float c1, float c2) {
    float lr = lrp[lo];
    FOR_EACH(i, n) {
        float g = grad[go + i];
        if (op == 0) {
            var[vo + i] -= lr * g;
        } else if (op == 1 || op == 2) {
            float vel = a * m[mo + i] + g;
            m[mo + i] = vel;
            var[vo + i] -= lr * (op == 2 ? g + a * vel : vel);
        } else {
            float mm = a * m[mo + i] + (1.0f - a) * g;
            float vv = b * v[wo + i] + (1.0f - b) * g * g;
            m[mo + i] = mm;
            v[wo + i] = vv;
            var[vo + i] -= lr * (mm / c1) / (sqrt(vv / c2) + eps);
        }
    }
}

/* ArgMax (ArgMin when is_min) of f32 along the middle axis of [outer, axis, inner] into i64;
 * NaN counts as largest (smallest), the first NaN wins; ties take the first index, or the last
 * with select_last. */
kernel void argmax_f32(global const float *x, ulong xo, global long *y, ulong yo, ulong outer,
                       ulong axis, ulong inner, int select_last, int is_min) {
    FOR_EACH(g, outer * inner) {
        ulong base = (g / inner) * axis * inner + g % inner;
        float best = x[xo + base];
        long at = 0;
        for (ulong k = 1; k < axis && !isnan(best); k++) {
            float v = x[xo + base + k * inner];
            if (isnan(v) || (is_min ? v < best : v > best) || (select_last && v == best)) {
                best = v;
                at = (long)k;
            }
        }
        y[yo + g] = at;
    }
}

/* SoftmaxCrossEntropyLoss over scores [N, C, inner] and labels [N, inner] (i32 or i64). Each
 * position's log_prob is LogSoftmax over C; its loss -w[label] * log_prob[label], 0 where the
 * label is ignored. Reduction none writes a loss per position; sum and mean are launched as one
 * work item that adds them up (mean divides by total_w, the counted weights, from the host).
 * With nll set it is NegativeLogLikelihoodLoss: x is log_prob already (has_lp is 0). */
static inline long sce_label(global const void *lab, ulong lo, int lab64, ulong pos) {
    return lab64 ? ((global const long *)lab)[lo + pos] : (long)((global const int *)lab)[lo + pos];
}

kernel void sce_f32(global const float *x, ulong xo, global const void *lab, ulong lo, int lab64,
                    global const float *w, ulong wo, int has_w, global float *loss, ulong losso,
                    global float *lp, ulong lpo, int has_lp, ulong N, ulong C, ulong inner,
                    int reduction, long ignore, int has_ignore, float total_w, int nll) {
    float acc = 0.0f;
    FOR_EACH(pos, N * inner) {
        ulong base = (pos / inner) * C * inner + pos % inner;
        float m = -INFINITY, s = 0.0f;
        for (ulong c = 0; !nll && c < C; c++)
            m = fmax(m, x[xo + base + c * inner]);
        for (ulong c = 0; !nll && c < C; c++)
            s += exp(x[xo + base + c * inner] - m);
        float ls = nll ? 0.0f : log(s);
        if (nll)
            m = 0.0f;
        if (has_lp)
            for (ulong c = 0; c < C; c++)
                lp[lpo + base + c * inner] = x[xo + base + c * inner] - m - ls;
        long l = sce_label(lab, lo, lab64, pos);
        float v = 0.0f;
        if (!(has_ignore && l == ignore)) {
            float wl = has_w ? w[wo + l] : 1.0f;
            v = -wl * (x[xo + base + (ulong)l * inner] - m - ls);
        }
        if (reduction == 2)
            loss[losso + pos] = v;
        else
            acc += v;
    }
    if (reduction != 2 && get_global_id(0) == 0)
        loss[losso] = reduction == 0 ? acc / total_w : acc;
}

/* Its gradient: dscores = (exp(log_prob) - onehot(label)) * w[label] * dloss * scale, 0 at
 * ignored positions; dloss is a scalar for sum and mean (scale 1/total_w for mean). With nll
 * set, NegativeLogLikelihoodLossGrad: -onehot(label) * w[label] * dloss * scale (lp is the
 * loss's input, not read). */
kernel void sce_grad_f32(global const float *dl, ulong dlo, int dl_scalar, global const float *lp,
                         ulong lpo, global const void *lab, ulong lo, int lab64,
                         global const float *w, ulong wo, int has_w, global float *dx, ulong dxo,
                         ulong N, ulong C, ulong inner, long ignore, int has_ignore,
                         float scale, int nll) {
    FOR_EACH(t, N * C * inner) {
        ulong n = t / (C * inner), c = (t / inner) % C, i = t % inner, pos = n * inner + i;
        long l = sce_label(lab, lo, lab64, pos);
        float r = 0.0f;
        if (!(has_ignore && l == ignore)) {
            float wl = has_w ? w[wo + l] : 1.0f;
            float d = dl_scalar ? dl[dlo] : dl[dlo + pos];
            float p = nll ? 0.0f : exp(lp[lpo + t]);
            r = (p - ((long)c == l ? 1.0f : 0.0f)) * wl * d * scale;
        }
        dx[dxo + t] = r;
    }
}

/* Gather along one axis of data [outer, A, inner] with nidx indices (i32 or i64, already checked
 * on the host; negative ones count from the end), by element size. */
#define GATHER(NAME, T)                                                                         \
    kernel void NAME(global const T *x, ulong xo, global const void *idx, ulong io, int idx64,  \
                     global T *y, ulong yo, ulong outer, ulong A, ulong nidx, ulong inner) {    \
        FOR_EACH(t, outer * nidx * inner) {                                                     \
            ulong i = t % inner, j = (t / inner) % nidx, o = t / (inner * nidx);                \
            long k = idx64 ? ((global const long *)idx)[io + j]                                 \
                           : (long)((global const int *)idx)[io + j];                           \
            if (k < 0)                                                                          \
                k += (long)A;                                                                   \
            y[yo + t] = x[xo + (o * A + (ulong)k) * inner + i];                                 \
        }                                                                                       \
    }
GATHER(gather1, uchar)
GATHER(gather2, ushort)
GATHER(gather4, uint)
GATHER(gather8, ulong)

/* Cast: float to integer truncates toward zero and saturates (NaN gives 0: the _sat_rtz
 * conversions); to bool is x != 0; integers to f32 round to nearest. */
#define CAST(NAME, TI, TO, EXPR)                                                                \
    kernel void NAME(global const TI *x, ulong xo, global TO *y, ulong yo, ulong n) {           \
        FOR_EACH(i, n) {                                                                        \
            TI v = x[xo + i];                                                                   \
            y[yo + i] = EXPR;                                                                   \
        }                                                                                       \
    }
CAST(cast_f32_i32, float, int, convert_int_sat_rtz(v))
CAST(cast_f32_i64, float, long, convert_long_sat_rtz(v))
CAST(cast_f32_u8, float, uchar, convert_uchar_sat_rtz(v))
CAST(cast_f32_bool, float, uchar, (uchar)(v != 0.0f ? 1 : 0))
CAST(cast_i32_f32, int, float, convert_float(v))
CAST(cast_i64_f32, long, float, convert_float(v))
CAST(cast_u8_f32, uchar, float, convert_float(v))
CAST(cast_bool_f32, uchar, float, v ? 1.0f : 0.0f)

/* ---------------------------------------------------------------------------------------------
 * Comparisons of integers, and Cast between f32 and f64
 * ------------------------------------------------------------------------------------------- */

/* Equal, Greater, Less of T to bool (0 Equal, 1 Greater, 2 Less), with broadcasting; on bool
 * (compare_u8) also the logic ops, any nonzero byte being true: 3 And, 4 Or, 5 Xor, 6 Not (of a;
 * the caller passes a twice). */
#define COMPARE(NAME, T)                                                                        \
    kernel void NAME(global const T *a, ulong ao, global const T *b, ulong bo, global uchar *y, \
                     ulong yo, ulong n, bc_t bc, int op) {                                      \
        FOR_EACH(i, n) {                                                                        \
            T u = a[ao + bc_off(&bc, 0, i)], v = b[bo + bc_off(&bc, 1, i)];                     \
            int r = op == 0   ? u == v                                                          \
                    : op == 1 ? u > v                                                           \
                    : op == 2 ? u < v                                                           \
                    : op == 3 ? (u != 0) && (v != 0)                                            \
                    : op == 4 ? (u != 0) || (v != 0)                                            \
                    : op == 5 ? (u != 0) != (v != 0)                                            \
                              : u == 0;                                                         \
            y[yo + i] = (uchar)(r ? 1 : 0);                                                     \
        }                                                                                       \
    }
COMPARE(compare_i32, int)
COMPARE(compare_i64, long)
COMPARE(compare_u8, uchar)

/* Only where the device has doubles: the host creates these kernels only then. */
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
CAST(cast_f32_f64, float, double, convert_double(v))
CAST(cast_f64_f32, double, float, convert_float(v))
#endif

/* ---------------------------------------------------------------------------------------------
 * The CNN ops
 * ------------------------------------------------------------------------------------------- */

/* A pool's or convolution's sliding window over up to 6 spatial dims: kernel, strides,
 * dilations, pad begins and ends, input and output dims. Mirrors ocl_win_t in ocl_ops.c. */
typedef struct {
    long k[6], s[6], d[6], pb[6], pe[6], in[6], out[6];
    long k_count, in_count, out_count;
    int n;
} win_t;

/* Unravels @p idx row-major over dims[0..n) into c. */
static inline void unravel(ulong idx, const long *dims, int n, long *c) {
    for (int i = n - 1; i >= 0; i--) {
        c[i] = (long)(idx % (ulong)dims[i]);
        idx /= (ulong)dims[i];
    }
}

/* Tap @p kk of the window at output position @p o: its offset in the input plane; @p inside
 * whether it lands in the input, @p in_pad whether in the input with its pads. */
static inline long window_tap(const win_t *w, const long *o, long kk, int *inside, int *in_pad) {
    long k[6], off = 0;
    *inside = 1;
    *in_pad = 1;
    unravel((ulong)kk, w->k, w->n, k);
    for (int i = 0; i < w->n; i++) {
        long c = o[i] * w->s[i] - w->pb[i] + k[i] * w->d[i];
        *inside = *inside && c >= 0 && c < w->in[i];
        *in_pad = *in_pad && c >= -w->pb[i] && c < w->in[i] + w->pe[i];
        off = off * w->in[i] + c;
    }
    return off;
}

/* im2col of whole (image, channel) planes of x: row (plane, kernel offset kk) of the column
 * matrix, column p (an output position) holds the input at p * stride - pad_begin + kk *
 * dilation, or 0 outside the input. */
#define IM2COL(NAME, T)                                                                        \
    kernel void NAME(global const T *x, ulong xo, global T *col, ulong co, ulong total,        \
                     win_t w) {                                                                \
        FOR_EACH(t, total) {                                                                   \
            ulong r = t / (ulong)w.out_count;                                                  \
            ulong plane = r / (ulong)w.k_count;                                                \
            long o[6], k[6], off = 0;                                                          \
            int inside = 1;                                                                    \
            unravel(t % (ulong)w.out_count, w.out, w.n, o);                                    \
            unravel(r % (ulong)w.k_count, w.k, w.n, k);                                        \
            for (int i = 0; i < w.n; i++) {                                                    \
                long c = o[i] * w.s[i] - w.pb[i] + k[i] * w.d[i];                              \
                inside = inside && c >= 0 && c < w.in[i];                                      \
                off = off * w.in[i] + c;                                                       \
            }                                                                                  \
            col[co + t] = inside ? x[xo + plane * (ulong)w.in_count + (ulong)off] : (T)0;      \
        }                                                                                      \
    }
IM2COL(im2col_f32, float)

/* col2im: each input element of the planes sums, in kernel-offset order, the column entries
 * that im2col read from it. */
#define COL2IM(NAME, T)                                                                        \
    kernel void NAME(global const T *col, ulong co, global T *dx, ulong xo, ulong total,       \
                     win_t w) {                                                                \
        FOR_EACH(t, total) {                                                                   \
            ulong plane = t / (ulong)w.in_count;                                               \
            long c[6], k[6];                                                                   \
            T acc = (T)0;                                                                      \
            unravel(t % (ulong)w.in_count, w.in, w.n, c);                                      \
            for (long kk = 0; kk < w.k_count; kk++) {                                          \
                long pos = 0;                                                                  \
                int hit = 1;                                                                   \
                unravel((ulong)kk, w.k, w.n, k);                                               \
                for (int i = 0; i < w.n && hit; i++) {                                         \
                    long num = c[i] + w.pb[i] - k[i] * w.d[i];                                 \
                    hit = num >= 0 && num % w.s[i] == 0 && num / w.s[i] < w.out[i];            \
                    pos = pos * w.out[i] + num / w.s[i];                                       \
                }                                                                              \
                if (hit) {                                                                     \
                    ulong row = plane * (ulong)w.k_count + (ulong)kk;                          \
                    acc += col[co + row * (ulong)w.out_count + (ulong)pos];                    \
                }                                                                              \
            }                                                                                  \
            dx[xo + t] = acc;                                                                  \
        }                                                                                      \
    }
COL2IM(col2im_f32, float)

/* y[i] = b[channel of i] over [outer, C, inner]: a convolution's bias, before the GEMM adds. */
#define CHANNEL_FILL(NAME, T)                                                                  \
    kernel void NAME(global const T *b, ulong bo, global T *y, ulong yo, ulong n,              \
                     ulong inner, ulong C) {                                                   \
        FOR_EACH(i, n) {                                                                       \
            y[yo + i] = b[bo + (i / inner) % C];                                               \
        }                                                                                      \
    }
CHANNEL_FILL(channel_fill_f32, float)

/* MaxPool (op 0) and AveragePool (op 1), one work item per output element. Padding never wins
 * the max, NaN does; the average divides by the positions inside x, or with include_pad by
 * those inside the padded input. */
#define POOL(NAME, T)                                                                          \
    kernel void NAME(global const T *x, ulong xo, global T *y, ulong yo, ulong total,          \
                     win_t w, int op, int include_pad) {                                       \
        FOR_EACH(t, total) {                                                                   \
            ulong plane = t / (ulong)w.out_count;                                              \
            long o[6];                                                                         \
            long valid = 0, padded = 0;                                                        \
            int found = 0;                                                                     \
            T best = -INFINITY, acc = (T)0;                                                    \
            unravel(t % (ulong)w.out_count, w.out, w.n, o);                                    \
            for (long kk = 0; kk < w.k_count; kk++) {                                          \
                int inside, in_pad;                                                            \
                const long off = window_tap(&w, o, kk, &inside, &in_pad);                      \
                padded += in_pad;                                                              \
                if (!inside)                                                                   \
                    continue;                                                                  \
                valid++;                                                                       \
                T v = x[xo + plane * (ulong)w.in_count + (ulong)off];                          \
                if (op == 0) {                                                                 \
                    if (!found || v > best || (isnan(v) && !isnan(best)))                      \
                        best = v;                                                              \
                    found = 1;                                                                 \
                } else {                                                                       \
                    acc += v;                                                                  \
                }                                                                              \
            }                                                                                  \
            long divisor = include_pad ? padded : valid;                                       \
            y[yo + t] = op == 0 ? best : divisor ? acc / (T)divisor : NAN;                     \
        }                                                                                      \
    }
POOL(pool_f32, float)

/* MaxPoolGrad (op 0: dy added at each window's first max in x) and AveragePoolGrad (op 1: dy
 * over the window's divisor added at its positions inside x), one work item per plane, so that
 * the additions land in the order of the output positions. */
#define POOL_GRAD(NAME, T)                                                                     \
    kernel void NAME(global const T *dy, ulong dyo, global const T *x, ulong xo,               \
                     global T *dx, ulong dxo, ulong planes, win_t w, int op,                   \
                     int include_pad) {                                                        \
        FOR_EACH(plane, planes) {                                                              \
            ulong ib = dxo + plane * (ulong)w.in_count, xb = xo + plane * (ulong)w.in_count;   \
            long o[6];                                                                         \
            for (long q = 0; q < w.in_count; q++)                                              \
                dx[ib + (ulong)q] = (T)0;                                                      \
            for (long p = 0; p < w.out_count; p++) {                                           \
                long valid = 0, padded = 0, best_at = -1;                                      \
                T best = -INFINITY;                                                            \
                unravel((ulong)p, w.out, w.n, o);                                              \
                for (long kk = 0; kk < w.k_count; kk++) {                                      \
                    int inside, in_pad;                                                        \
                    const long off = window_tap(&w, o, kk, &inside, &in_pad);                  \
                    padded += in_pad;                                                          \
                    if (!inside)                                                               \
                        continue;                                                              \
                    valid++;                                                                   \
                    if (op == 0) {                                                             \
                        T v = x[xb + (ulong)off];                                              \
                        if (best_at < 0 || v > best || (isnan(v) && !isnan(best))) {           \
                            best = v;                                                          \
                            best_at = off;                                                     \
                        }                                                                      \
                    }                                                                          \
                }                                                                              \
                T g = dy[dyo + plane * (ulong)w.out_count + (ulong)p];                         \
                if (op == 0) {                                                                 \
                    if (best_at >= 0)                                                          \
                        dx[ib + (ulong)best_at] += g;                                          \
                    continue;                                                                  \
                }                                                                              \
                long divisor = include_pad ? padded : valid;                                   \
                if (!divisor)                                                                  \
                    continue;                                                                  \
                g = g / (T)divisor;                                                            \
                for (long kk = 0; kk < w.k_count; kk++) {                                      \
                    int inside, in_pad;                                                        \
                    const long off = window_tap(&w, o, kk, &inside, &in_pad);                  \
                    if (inside)                                                                \
                        dx[ib + (ulong)off] += g;                                              \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
    }
POOL_GRAD(pool_grad_f32, float)

/* BatchNormalization, inference: y = x * scale + shift per channel of [outer, C, inner], with
 * scale = s / sqrt(var + epsilon) and shift = B - mean * scale. */
kernel void batch_norm_f32(global const float *x, ulong xo, global const float *s, ulong so,
                           global const float *b, ulong bo, global const float *m, ulong mo,
                           global const float *v, ulong vo, global float *y, ulong yo, ulong n,
                           ulong inner, ulong C, float eps) {
    FOR_EACH(i, n) {
        ulong c = (i / inner) % C;
        float scale = s[so + c] / sqrt(v[vo + c] + eps);
        float shift = b[bo + c] - m[mo + c] * scale;
        y[yo + i] = x[xo + i] * scale + shift;
    }
}

/* Pad geometry: output and input dims, the begins (negative ones crop), the mode (0 constant,
 * 1 reflect, 2 edge). Mirrors ocl_pad_t in ocl_ops.c. */
typedef struct {
    long odims[8];
    long idims[8];
    long begin[8];
    int rank;
    int mode;
} pad_t;

/* The input index output coordinate o reads along one axis, or -1 for the constant. */
static inline long pad_source(long o, long begin, long dim, int mode) {
    long i = o - begin;
    if (i >= 0 && i < dim)
        return i;
    if (mode == 0 || dim == 0)
        return -1;
    if (mode == 2)
        return i < 0 ? 0 : dim - 1;
    if (dim == 1)
        return 0;
    if (i < 0)
        i = -i;
    if (i >= dim)
        i = 2 * (dim - 1) - i;
    return i < 0 ? 0 : i >= dim ? dim - 1 : i;
}

/* Pad by element size; the constant is c[co] when has_c, else 0. */
#define PAD(NAME, T)                                                                            \
    kernel void NAME(global const T *x, ulong xo, global const T *c, ulong co, int has_c,       \
                     global T *y, ulong yo, ulong n, pad_t pd) {                                \
        FOR_EACH(i, n) {                                                                        \
            long o[8], off = 0;                                                                 \
            int valid = 1;                                                                      \
            unravel(i, pd.odims, pd.rank, o);                                                   \
            for (int d = 0; d < pd.rank; d++) {                                                 \
                long s = pad_source(o[d], pd.begin[d], pd.idims[d], pd.mode);                   \
                valid = valid && s >= 0;                                                        \
                off = off * pd.idims[d] + (s < 0 ? 0 : s);                                      \
            }                                                                                   \
            y[yo + i] = valid ? x[xo + (ulong)off] : has_c ? c[co] : (T)0;                     \
        }                                                                                       \
    }
PAD(pad4, uint)
PAD(pad8, ulong)

/* Clip by dtype: below min gives min, then above max gives max (NaN passes). */
#define CLIP(NAME, T)                                                                           \
    kernel void NAME(global const T *x, ulong xo, global const T *lo, ulong loo, int has_min,   \
                     global const T *hi, ulong hio, int has_max, global T *y, ulong yo,         \
                     ulong n) {                                                                 \
        T l = has_min ? lo[loo] : (T)0, h = has_max ? hi[hio] : (T)0;                           \
        FOR_EACH(i, n) {                                                                        \
            T v = x[xo + i];                                                                    \
            if (has_min && v < l)                                                               \
                v = l;                                                                          \
            if (has_max && v > h)                                                               \
                v = h;                                                                          \
            y[yo + i] = v;                                                                      \
        }                                                                                       \
    }
CLIP(clip_f32, float)
CLIP(clip_i32, int)
CLIP(clip_i64, long)

/* The output coordinates along one axis that Pad reads input index i from, as up to three
 * ascending ranges [lo, hi) within [0, odim); returns how many. Edge and constant give one range,
 * reflect up to three points (the host keeps reflect pads below the dim: one bounce). */
static inline int pad_preimage(long i, long begin, long dim, long odim, int mode, long *lo,
                               long *hi) {
    int n = 0;
    if (mode == 1 && dim > 1) {
        long pts[3] = {begin - i, begin + i, begin + 2 * (dim - 1) - i};
        for (int k = 0; k < 3; k++) {
            if ((k > 0 && pts[k] == pts[k - 1]) || pts[k] < 0 || pts[k] >= odim)
                continue;
            lo[n] = pts[k];
            hi[n++] = pts[k] + 1;
        }
        return n;
    }
    long a = i + begin, b = i + begin + 1;
    if (mode != 0 && dim == 1) { /* every position reads the one element */
        a = 0;
        b = odim;
    } else if (mode == 2) {
        if (i == 0)
            a = 0;
        if (i == dim - 1)
            b = odim;
    }
    a = a < 0 ? 0 : a;
    b = b > odim ? odim : b;
    if (a < b) {
        lo[n] = a;
        hi[n++] = b;
    }
    return n;
}

/* PadGrad: each element of dx sums, in dy's row-major order, the elements of dy that Pad read
 * from it (pd: odims are dy's dims, idims dx's). */
#define PAD_GRAD(NAME, T)                                                                      \
    kernel void NAME(global const T *dy, ulong dyo, global T *dx, ulong dxo, ulong n,          \
                     pad_t pd) {                                                               \
        FOR_EACH(t, n) {                                                                       \
            long c[8], lo[8][3], hi[8][3], o[8];                                               \
            int nr[8], r[8], empty = 0;                                                        \
            T acc = (T)0;                                                                      \
            unravel(t, pd.idims, pd.rank, c);                                                  \
            for (int d = 0; d < pd.rank; d++) {                                                \
                nr[d] = pad_preimage(c[d], pd.begin[d], pd.idims[d], pd.odims[d], pd.mode,     \
                                     lo[d], hi[d]);                                            \
                empty = empty || nr[d] == 0;                                                   \
                r[d] = 0;                                                                      \
                o[d] = lo[d][0];                                                               \
            }                                                                                  \
            while (!empty) {                                                                   \
                long off = 0;                                                                  \
                int d;                                                                         \
                for (d = 0; d < pd.rank; d++)                                                  \
                    off = off * pd.odims[d] + o[d];                                            \
                acc += dy[dyo + (ulong)off];                                                   \
                for (d = pd.rank - 1; d >= 0; d--) {                                           \
                    if (++o[d] < hi[d][r[d]])                                                  \
                        break;                                                                 \
                    if (++r[d] < nr[d]) {                                                      \
                        o[d] = lo[d][r[d]];                                                    \
                        break;                                                                 \
                    }                                                                          \
                    r[d] = 0;                                                                  \
                    o[d] = lo[d][0];                                                           \
                }                                                                              \
                if (d < 0)                                                                     \
                    break;                                                                     \
            }                                                                                  \
            dx[dxo + t] = acc;                                                                 \
        }                                                                                      \
    }
PAD_GRAD(pad_grad_f32, float)

/* The f64 forms, only where the device has doubles (the host creates them only then). */
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
CLIP(clip_f64, double)
COMPARE(compare_f64, double)
IM2COL(im2col_f64, double)
COL2IM(col2im_f64, double)
CHANNEL_FILL(channel_fill_f64, double)
POOL(pool_f64, double)
POOL_GRAD(pool_grad_f64, double)
PAD_GRAD(pad_grad_f64, double)

kernel void batch_norm_f64(global const double *x, ulong xo, global const double *s, ulong so,
                           global const double *b, ulong bo, global const double *m, ulong mo,
                           global const double *v, ulong vo, global double *y, ulong yo, ulong n,
                           ulong inner, ulong C, double eps) {
    FOR_EACH(i, n) {
        ulong c = (i / inner) % C;
        double scale = s[so + c] / sqrt(v[vo + c] + eps);
        double shift = b[bo + c] - m[mo + c] * scale;
        y[yo + i] = x[xo + i] * scale + shift;
    }
}
#endif
