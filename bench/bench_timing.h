/* The clock and the median every benchmark program of bench/ uses (header-only). */
#ifndef SES_BENCH_TIMING_H
#define SES_BENCH_TIMING_H

#include <stddef.h>
#include <stdlib.h>
#include <time.h>

/** Seconds on the monotonic clock. */
static inline double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int bench_compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/** The median of @p v[@p n] (sorts it; the mean of the middle two for an even count). */
static inline double bench_median(double *v, size_t n) {
    qsort(v, n, sizeof *v, bench_compare_doubles);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif /* SES_BENCH_TIMING_H */
