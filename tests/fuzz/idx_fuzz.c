/* libFuzzer target: MNIST idx files, plain or gzip (src/formats/idx.c), from arbitrary bytes. */
#include <stddef.h>
#include <stdint.h>

#include <session/dataset.h>

#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ses_tensor_t *t = NULL;

    if (ses_idx_read(fuzz_file("images-idx3-ubyte", data, size), &t) == SES_OK)
        ses_tensor_release(t);
    return 0;
}
