/* libFuzzer target: safetensors checkpoints (src/checkpoint/safetensors.c) from arbitrary bytes. */
#include <stddef.h>
#include <stdint.h>

#include <session/checkpoint.h>

#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ses_safetensors_t st;

    if (ses_safetensors_read(fuzz_file("model.safetensors", data, size), &st) == SES_OK)
        ses_safetensors_free(&st);
    return 0;
}
