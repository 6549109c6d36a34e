/*
 * Test-only: what the host-compiled kernels (cuda_kernels_*_host.cpp, C++), the emulated cudart
 * (emu_cudart.c) and the emulated cuBLAS (emu_cublas.c) share. Streams are struct CUstream_st,
 * as in the toolkit's headers, so that C and C++ name the same type.
 */
#ifndef SES_EMU_RUNTIME_H
#define SES_EMU_RUNTIME_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct CUstream_st;

/* cudaError_t values the kernels' side needs; emu_cudart.c checks them against the real enum. */
#define EMU_SUCCESS 0
#define EMU_ERROR_INVALID_VALUE 1
#define EMU_ERROR_INVALID_CONFIGURATION 9

/*
 * Runs @p run(@p ctx) now, or, when @p stream is being captured, appends it to the capture so
 * that it runs at each cudaGraphLaunch. Takes @p ctx in every case: @p release (may be NULL)
 * frees it once it is no longer needed. Returns a cudaError_t (0 = success); a failure is also
 * what the thread's next cudaGetLastError returns.
 */
int emu_enqueue(struct CUstream_st *stream, void (*run)(void *ctx), void (*release)(void *ctx),
                void *ctx);

/* Records a launch that could not start (@p error, a cudaError_t) as a GPU does: the thread's
 * next cudaGetLastError returns it, and a capture on @p stream is invalidated. */
void emu_launch_failed(struct CUstream_st *stream, int error);

/* Whether [@p ptr, @p ptr + @p bytes) lies in one block of emulated device memory. */
int emu_device_range(const void *ptr, size_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* SES_EMU_RUNTIME_H */
