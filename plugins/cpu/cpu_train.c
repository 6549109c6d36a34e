/*
 * Training kernels: SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss and their gradients
 * (ONNX opset-13 semantics; the two losses share their code, NegativeLogLikelihoodLoss reading
 * its input as log_prob), and
 * the optimizers SGD, Momentum and Adam, which have no outputs and write their variable and
 * state inputs in place. All are general entries (cpu__run_general checked the launch: counts,
 * dtypes, byte ranges, and that nothing written overlaps another argument); the bodies check
 * the shapes and attributes their op needs.
 *
 * Work is split over the pool by position (the loss) or by element (the optimizers). A loss
 * reduced to a scalar is summed on the calling thread in position order, in double, so its
 * value is the same whatever the number of threads.
 */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"
#include "cpu_math.h"

/* The values of the normalized reduction attribute. */
enum { CPU__REDUCTION_MEAN = 0, CPU__REDUCTION_SUM = 1, CPU__REDUCTION_NONE = 2 };

/* ---------------------------------------------------------------------------------------------
 * Shared checks
 * ------------------------------------------------------------------------------------------- */

/* Fails unless @p t has the shape @p dims[0 .. rank), naming @p role and @p want_what. */
static int32_t cpu__train_shape(const cpu__call_t *call, const char *role, const cpu__tensor_t *t,
                                const int64_t *dims, uint32_t rank, const char *want_what) {
    char have[96], want[96];
    int same = t->rank == rank;

    for (uint32_t d = 0; same && d < rank; d++)
        same = t->dims[d] == dims[d];
    if (same)
        return SES_DRV_OK;
    return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT, "%s is %s; it must be %s %s", role,
                          cpu__format_dims(t->dims, t->rank, have, sizeof have), want_what,
                          cpu__format_dims(dims, rank, want, sizeof want));
}

/* ---------------------------------------------------------------------------------------------
 * SoftmaxCrossEntropyLoss, SoftmaxCrossEntropyLossGrad, NegativeLogLikelihoodLoss,
 * NegativeLogLikelihoodLossGrad
 * ------------------------------------------------------------------------------------------- */

/* What both loss kernels work on. Position p is (n, d) of labels [N, d1, ...]; its scores are
 * classes apart by inner, from (p / inner) * classes * inner + p % inner. */
typedef struct cpu__sce {
    const unsigned char *x;      /* scores (the loss) or log_prob (the gradient); NLL: input */
    const unsigned char *labels; /* i32 or i64 */
    uint32_t label_dtype;
    const unsigned char *weights; /* [classes] of the scores' dtype, or NULL */
    uint64_t positions;           /* N * d1 * ... */
    uint64_t classes;
    uint64_t inner; /* d1 * ... (1 for [N, C]) */
    int64_t reduction;
    int nll; /* NegativeLogLikelihoodLoss(Grad): x is already the log-probabilities */
    int has_ignore;
    int64_t ignore_index;
    /* The loss: per-position loss (reduction none) and log_prob, each NULL when not written. */
    unsigned char *loss;
    unsigned char *log_prob;
    /* The gradient: its output, dloss, and the factor of every counted position (mean and sum;
     * reduction none reads dloss per position instead). */
    unsigned char *dx;
    const unsigned char *dloss;
    double scale;
} cpu__sce_t;

static inline int64_t cpu__label_at(const cpu__sce_t *j, uint64_t p) {
    if (j->label_dtype == SES_DRV_DTYPE_I64)
        return ((const int64_t *)(const void *)j->labels)[p];
    return ((const int32_t *)(const void *)j->labels)[p];
}

/* The class of position @p p, or -1 when it is ignored. Labels were checked before. */
static inline int64_t cpu__class_at(const cpu__sce_t *j, uint64_t p) {
    const int64_t y = cpu__label_at(j, p);
    return j->has_ignore && y == j->ignore_index ? -1 : y;
}

/* Reads the reduction and ignore_index attributes and checks each label: in [0, classes) or
 * ignore_index. The message names the position in the labels' dims and the value. */
static int32_t cpu__sce_setup(const cpu__call_t *call, const cpu__tensor_t *x,
                              const cpu__tensor_t *labels, const cpu__tensor_t *weights,
                              cpu__sce_t *j) {
    int64_t has_ignore = 0;
    int32_t st;

    memset(j, 0, sizeof *j);
    if ((st = cpu__attr_int(call, "reduction", 0, 0, &j->reduction)) != SES_DRV_OK ||
        (st = cpu__attr_int(call, "has_ignore_index", 1, 0, &has_ignore)) != SES_DRV_OK ||
        (st = cpu__attr_int(call, "ignore_index", 1, 0, &j->ignore_index)) != SES_DRV_OK)
        return st;
    if (j->reduction < CPU__REDUCTION_MEAN || j->reduction > CPU__REDUCTION_NONE)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "attribute reduction is %" PRId64
                              "; expected 0 (mean), 1 (sum) or 2 (none)",
                              j->reduction);
    if (has_ignore != 0 && has_ignore != 1)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "attribute has_ignore_index is %" PRId64 "; expected 0 or 1",
                              has_ignore);
    j->has_ignore = (int)has_ignore;
    const uint32_t code = call->spec->code;
    const int is_loss = code == CPU__OP_SCE_LOSS || code == CPU__OP_NLL_LOSS;
    j->nll = code == CPU__OP_NLL_LOSS || code == CPU__OP_NLL_GRAD;
    const char *x_role = j->nll    ? (is_loss ? "input 0 (input)" : "input 1 (input)")
                         : is_loss ? "input 0 (scores)"
                                   : "input 1 (log_prob)";
    if ((st = cpu__check_rank(call, x_role, x)) != SES_DRV_OK)
        return st;
    if (x->rank < 2)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "%s has rank %" PRIu32 "; it must be [N, C, d1, ...], rank 2 or more",
                              x_role, x->rank);
    /* labels: x's shape without the class axis 1. */
    int64_t want[CPU__MAX_RANK];
    want[0] = x->dims[0];
    for (uint32_t d = 2; d < x->rank; d++)
        want[d - 1] = x->dims[d];
    if ((st = cpu__train_shape(call, "labels", labels, want, x->rank - 1,
                               j->nll    ? "the input's shape without axis 1,"
                               : is_loss ? "the scores' shape without axis 1,"
                                         : "log_prob's shape without axis 1,")) != SES_DRV_OK)
        return st;
    if (weights && (st = cpu__train_shape(call, "weights", weights, &x->dims[1], 1,
                                          "one per class,")) != SES_DRV_OK)
        return st;

    j->x = x->data;
    j->labels = labels->data;
    j->label_dtype = labels->dtype;
    j->weights = weights ? weights->data : NULL;
    j->positions = labels->count;
    j->classes = (uint64_t)x->dims[1];
    j->inner = 1;
    for (uint32_t d = 2; d < x->rank; d++)
        j->inner *= (uint64_t)x->dims[d];

    for (uint64_t p = 0; p < j->positions; p++) {
        const int64_t y = cpu__label_at(j, p);
        if ((j->has_ignore && y == j->ignore_index) || (y >= 0 && (uint64_t)y < j->classes))
            continue;
        /* The position in the labels' own dims. */
        int64_t at[CPU__MAX_RANK];
        uint64_t rest = p;
        char where[160];
        for (uint32_t d = labels->rank; d-- > 0;) {
            at[d] = (int64_t)(rest % (uint64_t)labels->dims[d]);
            rest /= (uint64_t)labels->dims[d];
        }
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "label %" PRId64 " at position %s is out of range [0, %" PRIu64 ")%s",
                              y, cpu__format_dims(at, labels->rank, where, sizeof where),
                              j->classes, j->has_ignore ? " and is not ignore_index" : "");
    }
    return SES_DRV_OK;
}

/*
 * Per dtype: the log-softmax of position p's scores, written to log_prob when the job has one,
 * and the log-probability of class y (0 for y < 0; NegativeLogLikelihoodLoss reads it from its
 * input); the loss task (reduction none, or writing
 * log_prob); and the gradient task. The max is subtracted first, as LogSoftmax does, so exp
 * never overflows and log_prob is LogSoftmax's value.
 */
#define CPU__SCE_FUNCTIONS(T, EXP, LOG, suffix)                                                \
    static T cpu__sce_position_##suffix(const cpu__sce_t *j, uint64_t p, int64_t y) {          \
        const T *x = (const T *)(const void *)j->x;                                            \
        const uint64_t inner = j->inner, n_c = j->classes;                                     \
        const uint64_t base = (p / inner) * n_c * inner + p % inner;                           \
        if (j->nll)                                                                            \
            return y < 0 ? (T)0 : x[base + (uint64_t)y * inner];                               \
        T mx = -(T)INFINITY, sum = 0;                                                          \
        for (uint64_t c = 0; c < n_c; c++) {                                                   \
            const T v = x[base + c * inner];                                                   \
            mx = (v > mx || v != v) ? v : mx;                                                  \
        }                                                                                      \
        for (uint64_t c = 0; c < n_c; c++)                                                     \
            sum += EXP(x[base + c * inner] - mx);                                              \
        const T ls = LOG(sum);                                                                 \
        if (j->log_prob) {                                                                     \
            T *lp = (T *)(void *)j->log_prob;                                                  \
            for (uint64_t c = 0; c < n_c; c++)                                                 \
                lp[base + c * inner] = (x[base + c * inner] - mx) - ls;                        \
        }                                                                                      \
        return y < 0 ? (T)0 : (x[base + (uint64_t)y * inner] - mx) - ls;                       \
    }                                                                                          \
    static T cpu__sce_weight_##suffix(const cpu__sce_t *j, int64_t y) {                        \
        return j->weights ? ((const T *)(const void *)j->weights)[y] : (T)1;                   \
    }                                                                                          \
    static void cpu__sce_loss_task_##suffix(void *ctx, uint64_t begin, uint64_t end) {         \
        const cpu__sce_t *j = ctx;                                                             \
        T *loss = (T *)(void *)j->loss;                                                        \
        for (uint64_t p = begin; p < end; p++) {                                               \
            const int64_t y = cpu__class_at(j, p);                                             \
            const T lp = cpu__sce_position_##suffix(j, p, y);                                  \
            if (loss)                                                                          \
                loss[p] = y < 0 ? (T)0 : -cpu__sce_weight_##suffix(j, y) * lp;                 \
        }                                                                                      \
    }                                                                                          \
    /* The reduced loss: the sum over counted positions of -w[y] * log_prob[y], in position    \
     * order, and the sum of their weights. Reads log_prob when the task wrote it. */          \
    static void cpu__sce_reduce_##suffix(const cpu__sce_t *j, double *out_total,               \
                                         double *out_weight) {                                 \
        double total = 0, weight = 0;                                                          \
        for (uint64_t p = 0; p < j->positions; p++) {                                          \
            const int64_t y = cpu__class_at(j, p);                                             \
            if (y < 0)                                                                         \
                continue;                                                                      \
            T lp;                                                                              \
            if (j->log_prob) {                                                                 \
                const uint64_t base = (p / j->inner) * j->classes * j->inner + p % j->inner;   \
                lp = ((const T *)(const void *)j->log_prob)[base + (uint64_t)y * j->inner];    \
            } else {                                                                           \
                lp = cpu__sce_position_##suffix(j, p, y);                                      \
            }                                                                                  \
            const T w = cpu__sce_weight_##suffix(j, y);                                        \
            total += (double)(-w * lp);                                                        \
            weight += (double)w;                                                               \
        }                                                                                      \
        *out_total = total;                                                                    \
        *out_weight = weight;                                                                  \
    }                                                                                          \
    /* dx = (exp(log_prob) - onehot(y)) * w[y] * factor, 0 at ignored positions; the factor is \
     * dloss[p] for reduction none, else the job's scale. NLL: dx = -onehot(y) * w[y] * factor \
     * (its x is the loss's input, not read). */                                               \
    static void cpu__sce_grad_task_##suffix(void *ctx, uint64_t begin, uint64_t end) {         \
        const cpu__sce_t *j = ctx;                                                             \
        const T *lp = (const T *)(const void *)j->x;                                           \
        const T *dloss = (const T *)(const void *)j->dloss;                                    \
        T *dx = (T *)(void *)j->dx;                                                            \
        const uint64_t inner = j->inner, n_c = j->classes;                                     \
        for (uint64_t p = begin; p < end; p++) {                                               \
            const uint64_t base = (p / inner) * n_c * inner + p % inner;                       \
            const int64_t y = cpu__class_at(j, p);                                             \
            if (y < 0) {                                                                       \
                for (uint64_t c = 0; c < n_c; c++)                                             \
                    dx[base + c * inner] = 0;                                                  \
                continue;                                                                      \
            }                                                                                  \
            const T factor = (j->reduction == CPU__REDUCTION_NONE ? dloss[p] : (T)j->scale) *  \
                             cpu__sce_weight_##suffix(j, y);                                   \
            if (j->nll) {                                                                      \
                for (uint64_t c = 0; c < n_c; c++)                                             \
                    dx[base + c * inner] = 0;                                                  \
                dx[base + (uint64_t)y * inner] = -factor;                                      \
                continue;                                                                      \
            }                                                                                  \
            for (uint64_t c = 0; c < n_c; c++)                                                 \
                dx[base + c * inner] = EXP(lp[base + c * inner]) * factor;                     \
            dx[base + (uint64_t)y * inner] =                                                   \
                (EXP(lp[base + (uint64_t)y * inner]) - (T)1) * factor;                         \
        }                                                                                      \
    }

CPU__SCE_FUNCTIONS(float, cpu__expf, logf, f32)
CPU__SCE_FUNCTIONS(double, exp, log, f64)

/* SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss (one output, never log_prob). */
int32_t cpu__sce_loss(const cpu__call_t *call) {
    const cpu__tensor_t *scores = &call->in[0], *labels = &call->in[1];
    const cpu__tensor_t *weights = call->n_in > 2 ? &call->in[2] : NULL;
    const cpu__tensor_t *loss = &call->outs[0];
    const cpu__tensor_t *log_prob = call->n_out > 1 ? &call->outs[1] : NULL;
    const int f32 = scores->dtype == SES_DRV_DTYPE_F32;
    cpu__sce_t j;
    int32_t st;

    if ((st = cpu__sce_setup(call, scores, labels, weights, &j)) != SES_DRV_OK)
        return st;
    if (j.reduction == CPU__REDUCTION_NONE)
        st = cpu__train_shape(call, "output 0 (loss)", loss, labels->dims, labels->rank,
                              "with reduction none the labels' shape");
    else
        st = cpu__train_shape(call, "output 0 (loss)", loss, NULL, 0,
                              "with reduction mean or sum a scalar");
    if (st == SES_DRV_OK && log_prob)
        st = cpu__train_shape(call, "output 1 (log_prob)", log_prob, scores->dims, scores->rank,
                              "the scores' shape");
    if (st != SES_DRV_OK)
        return st;

    j.log_prob = log_prob ? log_prob->data : NULL;
    j.loss = j.reduction == CPU__REDUCTION_NONE ? loss->data : NULL;
    /* Positions in parallel when each writes its own output; a reduced loss without log_prob
     * is computed in the sum below. */
    if (j.positions > 0 && (j.loss || j.log_prob))
        cpu__parallel(call, j.positions, j.classes * 8 + 1,
                      f32 ? cpu__sce_loss_task_f32 : cpu__sce_loss_task_f64, &j);
    if (j.reduction == CPU__REDUCTION_NONE)
        return SES_DRV_OK;

    double total, weight;
    if (f32)
        cpu__sce_reduce_f32(&j, &total, &weight);
    else
        cpu__sce_reduce_f64(&j, &total, &weight);
    /* Mean divides by the weights of the counted positions (their count without weights);
     * with none counted that is 0 / 0, NaN, as in ONNX's reference. */
    const double value = j.reduction == CPU__REDUCTION_MEAN ? total / weight : total;
    if (f32)
        *(float *)(void *)loss->data = (float)value;
    else
        *(double *)(void *)loss->data = value;
    return SES_DRV_OK;
}

/* SoftmaxCrossEntropyLossGrad and NegativeLogLikelihoodLossGrad (whose input 1 is the loss's
 * input, read only for its shape). */
int32_t cpu__sce_grad(const cpu__call_t *call) {
    const cpu__tensor_t *dloss = &call->in[0], *log_prob = &call->in[1], *labels = &call->in[2];
    cpu__tensor_t weights_view;
    const cpu__tensor_t *weights = NULL;
    const cpu__tensor_t *dx = &call->outs[0];
    const int f32 = log_prob->dtype == SES_DRV_DTYPE_F32;
    cpu__sce_t j;
    int32_t st;

    if (call->n_in > 3) {
        weights_view = cpu__input(call, 3);
        weights = &weights_view;
    }
    if ((st = cpu__sce_setup(call, log_prob, labels, weights, &j)) != SES_DRV_OK)
        return st;
    if (j.reduction == CPU__REDUCTION_NONE)
        st = cpu__train_shape(call, "input 0 (dloss)", dloss, labels->dims, labels->rank,
                              "with reduction none the labels' shape");
    else
        st = cpu__train_shape(call, "input 0 (dloss)", dloss, NULL, 0,
                              "with reduction mean or sum a scalar");
    if (st == SES_DRV_OK)
        st = cpu__train_shape(call, j.nll ? "output 0 (dinput)" : "output 0 (dscores)", dx,
                              log_prob->dims, log_prob->rank,
                              j.nll ? "the input's shape" : "log_prob's shape");
    if (st != SES_DRV_OK)
        return st;
    if (dx->count == 0)
        return SES_DRV_OK;

    j.dx = dx->data;
    j.dloss = dloss->data;
    if (j.reduction != CPU__REDUCTION_NONE) {
        double d = f32 ? (double)*(const float *)(const void *)dloss->data
                       : *(const double *)(const void *)dloss->data;
        if (j.reduction == CPU__REDUCTION_MEAN) {
            /* The loss divided by the counted weights; with none counted every position is
             * ignored and the scale is never read. */
            double weight = 0;
            for (uint64_t p = 0; p < j.positions; p++) {
                const int64_t y = cpu__class_at(&j, p);
                if (y >= 0)
                    weight += j.weights ? (f32 ? (double)((const float *)(const void *)j.weights)[y]
                                               : ((const double *)(const void *)j.weights)[y])
                                        : 1.0;
            }
            d = weight != 0 ? d / weight : 0;
        }
        j.scale = d;
    }
    cpu__parallel(call, j.positions, j.classes * 8 + 1,
                  f32 ? cpu__sce_grad_task_f32 : cpu__sce_grad_task_f64, &j);
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * SGD, Momentum, Adam
 * ------------------------------------------------------------------------------------------- */

typedef struct cpu__opt {
    uint32_t code;
    unsigned char *var;
    const unsigned char *grad;
    unsigned char *s1; /* Momentum: velocity; Adam: m */
    unsigned char *s2; /* Adam: v */
    double lr;
    double momentum; /* Momentum */
    int nesterov;
    double beta1, beta2, epsilon; /* Adam */
    double bc1, bc2;              /* Adam: 1 - beta1^t, 1 - beta2^t at the new t */
} cpu__opt_t;

/* Elements [begin, end) of one step. Parameters are rounded to T once, so that every element
 * is computed in T as the test's reference computes it. */
#define CPU__OPT_TASK(T, SQRT, suffix)                                            \
    static void cpu__opt_task_##suffix(void *ctx, uint64_t begin, uint64_t end) { \
        const cpu__opt_t *o = ctx;                                                \
        T *var = (T *)(void *)o->var;                                             \
        const T *g = (const T *)(const void *)o->grad;                            \
        T *s1 = (T *)(void *)o->s1, *s2 = (T *)(void *)o->s2;                     \
        const T lr = (T)o->lr;                                                    \
        if (o->code == CPU__OP_SGD) {                                             \
            for (uint64_t i = begin; i < end; i++)                                \
                var[i] -= lr * g[i];                                              \
        } else if (o->code == CPU__OP_MOMENTUM) {                                 \
            const T mu = (T)o->momentum;                                          \
            for (uint64_t i = begin; i < end; i++) {                              \
                const T vel = mu * s1[i] + g[i];                                  \
                s1[i] = vel;                                                      \
                var[i] -= lr * (o->nesterov ? g[i] + mu * vel : vel);             \
            }                                                                     \
        } else {                                                                  \
            const T b1 = (T)o->beta1, b2 = (T)o->beta2, eps = (T)o->epsilon;      \
            const T c1 = (T)o->bc1, c2 = (T)o->bc2;                               \
            for (uint64_t i = begin; i < end; i++) {                              \
                const T m = b1 * s1[i] + (1 - b1) * g[i];                         \
                const T v = b2 * s2[i] + (1 - b2) * g[i] * g[i];                  \
                s1[i] = m;                                                        \
                s2[i] = v;                                                        \
                var[i] -= lr * (m / c1) / (SQRT(v / c2) + eps);                   \
            }                                                                     \
        }                                                                         \
    }

CPU__OPT_TASK(float, sqrtf, f32)
CPU__OPT_TASK(double, sqrt, f64)

/* A FLOAT attribute in [0, 1) (Adam's betas: 1 would divide by zero in the bias correction). */
static int32_t cpu__beta_attr(const cpu__call_t *call, const char *key, double def, double *out) {
    int32_t st = cpu__attr_float(call, key, def, out);

    if (st == SES_DRV_OK && !(*out >= 0.0 && *out < 1.0))
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "attribute %s is %g; it must be in [0, 1)", key, *out);
    return st;
}

static double cpu__scalar(const cpu__tensor_t *t) {
    return t->dtype == SES_DRV_DTYPE_F32 ? (double)*(const float *)(const void *)t->data
                                         : *(const double *)(const void *)t->data;
}

int32_t cpu__optimizer(const cpu__call_t *call) {
    const uint32_t code = call->spec->code;
    const cpu__tensor_t *var = &call->in[0], *grad = &call->in[1], *lr = &call->in[2];
    const int f32 = var->dtype == SES_DRV_DTYPE_F32;
    cpu__tensor_t s1, s2, t;
    cpu__opt_t o;
    int32_t st;

    memset(&o, 0, sizeof o);
    o.code = code;
    st = cpu__train_shape(call, "input 1 (grad)", grad, var->dims, var->rank, "var's shape");
    if (st == SES_DRV_OK)
        st = cpu__train_shape(call, "input 2 (lr)", lr, NULL, 0, "a scalar");
    if (st != SES_DRV_OK)
        return st;
    if (code == CPU__OP_MOMENTUM) {
        int64_t nesterov = 0;
        s1 = cpu__input(call, 3);
        st = cpu__train_shape(call, "input 3 (velocity)", &s1, var->dims, var->rank, "var's shape");
        if (st == SES_DRV_OK)
            st = cpu__attr_float(call, "momentum", 0.9, &o.momentum);
        if (st == SES_DRV_OK)
            st = cpu__attr_int(call, "nesterov", 1, 0, &nesterov);
        if (st == SES_DRV_OK && nesterov != 0 && nesterov != 1)
            st = cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                                "attribute nesterov is %" PRId64 "; expected 0 or 1", nesterov);
        if (st != SES_DRV_OK)
            return st;
        o.nesterov = (int)nesterov;
        o.s1 = s1.data;
    } else if (code == CPU__OP_ADAM) {
        s1 = cpu__input(call, 3);
        s2 = cpu__input(call, 4);
        t = cpu__input(call, 5);
        st = cpu__train_shape(call, "input 3 (m)", &s1, var->dims, var->rank, "var's shape");
        if (st == SES_DRV_OK)
            st = cpu__train_shape(call, "input 4 (v)", &s2, var->dims, var->rank, "var's shape");
        if (st == SES_DRV_OK)
            st = cpu__train_shape(call, "input 5 (t)", &t, NULL, 0, "a scalar");
        if (st == SES_DRV_OK)
            st = cpu__beta_attr(call, "beta1", 0.9, &o.beta1);
        if (st == SES_DRV_OK)
            st = cpu__beta_attr(call, "beta2", 0.999, &o.beta2);
        if (st == SES_DRV_OK)
            st = cpu__attr_float(call, "epsilon", 1e-8, &o.epsilon);
        if (st != SES_DRV_OK)
            return st;
        o.s1 = s1.data;
        o.s2 = s2.data;
        /* The step count goes up first, even for an empty var: it counts steps, not elements. */
        if (f32) {
            float *step = (float *)(void *)t.data;
            *step += 1.0f;
        } else {
            double *step = (double *)(void *)t.data;
            *step += 1.0;
        }
        const double steps = cpu__scalar(&t);
        o.bc1 = 1.0 - pow(o.beta1, steps);
        o.bc2 = 1.0 - pow(o.beta2, steps);
    }
    o.var = var->data;
    o.grad = grad->data;
    o.lr = cpu__scalar(lr);
    if (var->count == 0)
        return SES_DRV_OK;
    cpu__parallel(call, var->count, code == CPU__OP_ADAM ? 12 : 4,
                  f32 ? cpu__opt_task_f32 : cpu__opt_task_f64, &o);
    return SES_DRV_OK;
}

/* ---------------------------------------------------------------------------------------------
 * MatMulGradSGD: SGD of a MatMulGrad in one GEMM, var = (-lr) * gradient + 1 * var, so that the
 * gradient is never written (libsession's fusion makes the node; compile/fuse.c). The kernel
 * gets var, dy, the operand the gradient is computed from (A for input 1, B for input 0) and
 * lr; the other operand's shape is var's. cpu__run_general refused a var that shares a byte
 * with another argument, so the GEMM never reads what it writes. Only the gradients that one
 * GEMM computes are taken (supports_node); the others run as MatMulGrad then SGD.
 * ------------------------------------------------------------------------------------------- */

/* The input attribute of a MatMulGradSGD node: 0 (var is A) or 1 (var is B). */
static int32_t cpu__update_input(const ses_drv_node_t *node, int64_t *out) {
    uint64_t count = 1;

    *out = -1;
    if (node->attr(node, "input", SES_DRV_ATTR_INT, &count, out) != SES_DRV_OK || count != 1 ||
        (*out != 0 && *out != 1))
        return SES_DRV_INVALID_ARGUMENT;
    return SES_DRV_OK;
}

int32_t cpu__matmul_grad_sgd_supports(ses_drv_device_t *device, const ses_drv_node_t *node) {
    const char *name;
    int64_t input;
    char dims[96];

    if (!node || !node->attr || !node->op || (node->n_inputs && !node->inputs))
        return cpu__device_fail(device, SES_DRV_INVALID_ARGUMENT,
                                "supports_node: node, its attr, op or inputs is NULL");
    name = node->name ? node->name : "";
    if (node->n_inputs != 4 || node->n_outputs != 0)
        return cpu__device_fail(device, SES_DRV_UNIMPLEMENTED,
                                "%s \"%s\": %" PRIu32 " inputs and %" PRIu32
                                " outputs; expected var, dy, A or B, lr and none",
                                node->op, name, node->n_inputs, node->n_outputs);
    if (cpu__update_input(node, &input) != SES_DRV_OK)
        return cpu__device_fail(device, SES_DRV_UNIMPLEMENTED,
                                "%s \"%s\": attribute input is missing or not 0 or 1", node->op,
                                name);
    /* B is var for input 1, the operand passed for input 0. With no batch dim of B other than
     * 1, cpu__matmul_shape sets neither b_batched nor a_broadcast: one GEMM. */
    const ses_drv_tensor_desc_t *b = &node->inputs[input ? 0 : 2];
    for (uint32_t d = 0; b->rank > 2 && d < b->rank - 2; d++)
        if (!b->dims || b->dims[d] != 1)
            return cpu__device_fail(
                device, SES_DRV_UNIMPLEMENTED,
                "%s \"%s\": B is %s: the gradient of a batched B is a sum of "
                "GEMMs, and only one GEMM updates var in place",
                node->op, name,
                b->dims ? cpu__format_dims(b->dims, b->rank, dims, sizeof dims) : "without dims");
    return SES_DRV_OK;
}

int32_t cpu__matmul_grad_sgd(const cpu__call_t *call) {
    const cpu__tensor_t *var = &call->in[0], *dy = &call->in[1], *x = &call->in[2];
    const cpu__tensor_t lr = cpu__input(call, 3);
    cpu__tensor_t shape_of_var = *var;
    cpu__matmul_shape_t sh;
    int64_t input;
    int32_t st;

    if (cpu__update_input(call->node, &input) != SES_DRV_OK)
        return cpu__call_fail(call, SES_DRV_INVALID_ARGUMENT,
                              "attribute input is missing or not 0 or 1");
    if ((st = cpu__train_shape(call, "input 3 (lr)", &lr, NULL, 0, "a scalar")) != SES_DRV_OK)
        return st;
    /* The operand not passed stands as var's shape alone: nothing reads its data. */
    shape_of_var.data = NULL;
    st = input ? cpu__matmul_shape(call, x, "input 2 (A)", &shape_of_var, "var (B's shape)", dy,
                                   "input 1 (dy)", &sh)
               : cpu__matmul_shape(call, &shape_of_var, "var (A's shape)", x, "input 2 (B)", dy,
                                   "input 1 (dy)", &sh);
    if (st != SES_DRV_OK)
        return st;
    if (sh.b_batched || sh.a_broadcast)
        return cpu__call_fail(call, SES_DRV_UNIMPLEMENTED,
                              "the gradient is a sum of GEMMs (a batched B); supports_node "
                              "refuses such a node");
    /* An empty var, or an empty sum: var += 0. */
    if (var->count == 0 || (input ? sh.m : sh.n) == 0 || sh.n_matrices == 0)
        return SES_DRV_OK;
    const double rate = cpu__scalar(&lr);
    if (rate != 0.0)
        return cpu__matmul_grad_gemm(call, (int)input, &sh, var->dtype, dy->data, x->data, -rate,
                                     1.0, var->data);
    /* A GEMM skips the product when alpha is 0, where SGD's var - 0 * gradient is NaN for an
     * infinite or NaN gradient: with lr 0 the gradient is computed apart and applied as SGD
     * applies it (a rare launch, which allocates). */
    unsigned char *g = malloc((size_t)var->count * var->esize);
    if (!g)
        return cpu__call_fail(call, SES_DRV_OUT_OF_MEMORY,
                              "cannot allocate the gradient of %" PRIu64 " elements (lr is 0)",
                              (uint64_t)var->count);
    st = cpu__matmul_grad_gemm(call, (int)input, &sh, var->dtype, dy->data, x->data, 1.0, 0.0, g);
    if (st == SES_DRV_OK) {
        cpu__opt_t o;
        memset(&o, 0, sizeof o);
        o.code = CPU__OP_SGD;
        o.var = var->data;
        o.grad = g;
        (var->dtype == SES_DRV_DTYPE_F32 ? cpu__opt_task_f32 : cpu__opt_task_f64)(
            &o, 0, (uint64_t)var->count);
    }
    free(g);
    return st;
}
