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

/* Unary ops on f32; the input is read through the broadcast strides st[0]. */
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
        default: r = v; break;
        }
        y[yo + i] = r;
    }
}

/* Binary ops on f32 with numpy broadcasting, and the one-shape gradient ops. */
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

/* Reductions of f32: 0 sum, 1 mean (sum times scale), 2 max (NaN wins), 3 sum times scale. */
kernel void reduce_f32(global const float *x, ulong xo, global float *y, ulong yo, ulong nout,
                       ulong nred, rd_t r, int op, float scale) {
    FOR_EACH(i, nout) {
        long base = 0;
        ulong rest = i;
        for (int d = r.orank - 1; d >= 0; d--) {
            base += (long)(rest % (ulong)r.odims[d]) * r.ost[d];
            rest /= (ulong)r.odims[d];
        }
        float acc = op == 2 ? -INFINITY : 0.0f;
        for (ulong j = 0; j < nred; j++) {
            long off = 0;
            ulong q = j;
            for (int d = r.rrank - 1; d >= 0; d--) {
                off += (long)(q % (ulong)r.rdims[d]) * r.rst[d];
                q /= (ulong)r.rdims[d];
            }
            float v = x[xo + base + off];
            if (op == 2)
                acc = (v > acc || isnan(v)) && !isnan(acc) ? v : acc;
            else
                acc += v;
        }
        y[yo + i] = op == 1 || op == 3 ? acc * scale : acc;
    }
}

/* Softmax family along one axis of [outer, axis, inner]: 0 Softmax(x), 1 LogSoftmax(x),
 * 2 SoftmaxGrad(dy = a, y = b), 3 LogSoftmaxGrad(dy = a, y = b). */
kernel void softmax_f32(global const float *a, ulong ao, global const float *b, ulong bo,
                        global float *y, ulong yo, ulong outer, ulong axis, ulong inner,
                        int mode) {
    FOR_EACH(g, outer * inner) {
        ulong base = (g / inner) * axis * inner + g % inner;
        if (mode <= 1) {
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

/* ArgMax of f32 along the middle axis of [outer, axis, inner] into i64; NaN counts as largest,
 * the first NaN wins; ties take the first index, or the last with select_last. */
kernel void argmax_f32(global const float *x, ulong xo, global long *y, ulong yo, ulong outer,
                       ulong axis, ulong inner, int select_last) {
    FOR_EACH(g, outer * inner) {
        ulong base = (g / inner) * axis * inner + g % inner;
        float best = x[xo + base];
        long at = 0;
        for (ulong k = 1; k < axis && !isnan(best); k++) {
            float v = x[xo + base + k * inner];
            if (isnan(v) || v > best || (select_last && v == best)) {
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
 * work item that adds them up (mean divides by total_w, the counted weights, from the host). */
static inline long sce_label(global const void *lab, ulong lo, int lab64, ulong pos) {
    return lab64 ? ((global const long *)lab)[lo + pos] : (long)((global const int *)lab)[lo + pos];
}

kernel void sce_f32(global const float *x, ulong xo, global const void *lab, ulong lo, int lab64,
                    global const float *w, ulong wo, int has_w, global float *loss, ulong losso,
                    global float *lp, ulong lpo, int has_lp, ulong N, ulong C, ulong inner,
                    int reduction, long ignore, int has_ignore, float total_w) {
    float acc = 0.0f;
    FOR_EACH(pos, N * inner) {
        ulong base = (pos / inner) * C * inner + pos % inner;
        float m = -INFINITY, s = 0.0f;
        for (ulong c = 0; c < C; c++)
            m = fmax(m, x[xo + base + c * inner]);
        for (ulong c = 0; c < C; c++)
            s += exp(x[xo + base + c * inner] - m);
        float ls = log(s);
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
 * ignored positions; dloss is a scalar for sum and mean (scale 1/total_w for mean). */
kernel void sce_grad_f32(global const float *dl, ulong dlo, int dl_scalar, global const float *lp,
                         ulong lpo, global const void *lab, ulong lo, int lab64,
                         global const float *w, ulong wo, int has_w, global float *dx, ulong dxo,
                         ulong N, ulong C, ulong inner, long ignore, int has_ignore,
                         float scale) {
    FOR_EACH(t, N * C * inner) {
        ulong n = t / (C * inner), c = (t / inner) % C, i = t % inner, pos = n * inner + i;
        long l = sce_label(lab, lo, lab64, pos);
        float r = 0.0f;
        if (!(has_ignore && l == ignore)) {
            float wl = has_w ? w[wo + l] : 1.0f;
            float d = dl_scalar ? dl[dlo] : dl[dlo + pos];
            r = (exp(lp[lpo + t]) - ((long)c == l ? 1.0f : 0.0f)) * wl * d * scale;
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
