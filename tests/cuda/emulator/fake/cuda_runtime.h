/*
 * Test-only: the part of the CUDA runtime cuda_kernels_*.cu use, for their host build
 * (cuda_kernels_*_host.cpp, where emu_launches.py turned every kernel<<<grid, block, shared, stream>>>
 * into emu::launch(grid, block, shared, stream, kernel)).
 *
 * Every kernel runs as the one thread of one block: threadIdx and blockIdx are 0, blockDim and
 * gridDim 1, so a grid-stride loop walks every element in order and a block's tree reduction
 * has nothing to combine. A launch checks its configuration as a GPU does, then runs on the
 * emulated stream: at once, or at each replay of the graph the stream is capturing.
 */
#ifndef SES_EMU_CUDA_RUNTIME_H
#define SES_EMU_CUDA_RUNTIME_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <functional>

#include "../emu_runtime.h"

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
/* A block's shared memory belongs to its one thread; thread_local keeps two host threads that
 * run kernels at once (two sessions) apart. */
#define __shared__ static thread_local

typedef struct CUstream_st *cudaStream_t;
enum cudaError {
    cudaSuccess = EMU_SUCCESS,
    cudaErrorInvalidValue = EMU_ERROR_INVALID_VALUE,
    cudaErrorInvalidConfiguration = EMU_ERROR_INVALID_CONFIGURATION,
};
typedef enum cudaError cudaError_t;

/* Defined by the emulated cudart (emu_cudart.c). */
extern "C" cudaError_t cudaGetLastError(void);
extern "C" cudaError_t cudaMemsetAsync(void *ptr, int value, size_t bytes, cudaStream_t stream);

struct emu_dim3 {
    unsigned x, y, z;
};
constexpr emu_dim3 threadIdx = {0, 0, 0}, blockIdx = {0, 0, 0};
constexpr emu_dim3 blockDim = {1, 1, 1}, gridDim = {1, 1, 1};

inline void __syncthreads() {}

/* Atomics of one thread: plain read-modify-write. */
inline float atomicAdd(float *address, float value) {
    const float old = *address;
    *address = old + value;
    return old;
}
inline double atomicAdd(double *address, double value) {
    const double old = *address;
    *address = old + value;
    return old;
}
inline unsigned long long atomicMin(unsigned long long *address, unsigned long long value) {
    const unsigned long long old = *address;
    if (value < old)
        *address = value;
    return old;
}

/* The rounding intrinsics: one IEEE operation each, never contracted into an FMA (the kernels
 * are compiled with -ffp-contract=off). */
inline float __fadd_rn(float a, float b) {
    return a + b;
}
inline float __fmul_rn(float a, float b) {
    return a * b;
}
inline double __dadd_rn(double a, double b) {
    return a + b;
}
inline double __dmul_rn(double a, double b) {
    return a * b;
}
inline double __ddiv_rn(double a, double b) {
    return a / b;
}
inline double __dsqrt_rn(double a) {
    return sqrt(a);
}

namespace emu {

/* A kernel with its launch configuration; calling it with the kernel's arguments launches it. */
template <typename... P>
class launcher {
  public:
    launcher(int64_t grid, int64_t block, int64_t shared, cudaStream_t stream,
             void (*kernel)(P...))
        : grid_(grid), block_(block), shared_(shared), stream_(stream), kernel_(kernel) {}

    void operator()(P... args) const {
        void (*kernel)(P...) = kernel_;

        /* The limits of every GPU since sm_30: 2^31 - 1 blocks along x, 1024 threads a block,
         * 48 KiB of dynamic shared memory without opting in. */
        if (grid_ < 1 || grid_ > INT32_MAX || block_ < 1 || block_ > 1024 || shared_ < 0 ||
            shared_ > 48 * 1024) {
            emu_launch_failed(stream_, EMU_ERROR_INVALID_CONFIGURATION);
            return;
        }
        /* The arguments are copied now, as a launch copies them; the kernel may run later. */
        (void)emu_enqueue(stream_, run, release,
                          new std::function<void()>([kernel, args...]() { kernel(args...); }));
    }

  private:
    static void run(void *work) {
        (*static_cast<std::function<void()> *>(work))();
    }
    static void release(void *work) {
        delete static_cast<std::function<void()> *>(work);
    }

    int64_t grid_, block_, shared_;
    cudaStream_t stream_;
    void (*kernel_)(P...);
};

template <typename... P>
launcher<P...> launch(int64_t grid, int64_t block, int64_t shared, cudaStream_t stream,
                      void (*kernel)(P...)) {
    return launcher<P...>(grid, block, shared, stream, kernel);
}

} /* namespace emu */

#endif /* SES_EMU_CUDA_RUNTIME_H */
