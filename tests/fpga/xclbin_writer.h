/*
 * Writes minimal xclbin files for the FPGA driver's tests: the four sections XRT's noop
 * emulation reads (MEM_TOPOLOGY, IP_LAYOUT, CONNECTIVITY, EMBEDDED_METADATA) for a list of
 * kernels, one compute unit each. The layout follows XRT's xclbin.h; nothing in it is a real
 * bitstream, so only XCL_EMULATION_MODE=noop accepts it.
 */
#ifndef SES_TEST_XCLBIN_WRITER_H
#define SES_TEST_XCLBIN_WRITER_H

#include <stddef.h>
#include <stdint.h>

#define XCLBIN_WRITER_MAX_ARGS 16

/* One kernel argument as the metadata describes it. */
typedef struct xclbin_arg {
    const char *name;
    int is_buffer;      /* 1: a global pointer (a buffer object), 0: a scalar */
    uint32_t host_size; /* bytes of a scalar (4 for `unsigned int`); ignored for buffers */
} xclbin_arg_t;

/* One kernel with one compute unit; its buffer arguments connect to memory bank @p bank. */
typedef struct xclbin_kernel {
    const char *name;
    uint32_t n_args;
    xclbin_arg_t args[XCLBIN_WRITER_MAX_ARGS];
    uint32_t bank; /* 0 or 1: the file has two DDR banks */
} xclbin_kernel_t;

/*
 * Writes an xclbin with @p n_kernels kernels to @p path. Returns 0, or -1 with errno set when
 * the file cannot be written or the kernels do not fit the format.
 */
int xclbin_write(const char *path, const xclbin_kernel_t *kernels, size_t n_kernels);

/* The argument list of the driver's convention for op class @p shape ("matmul", "binary",
 * "unary") into @p k->args; returns @p k. */
xclbin_kernel_t *xclbin_convention(xclbin_kernel_t *k, const char *name, const char *shape);

#endif /* SES_TEST_XCLBIN_WRITER_H */
