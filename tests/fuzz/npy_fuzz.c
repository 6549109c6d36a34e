/* libFuzzer target: .npy images from arbitrary bytes (see onnx_import_fuzz.c). */
#include <stddef.h>
#include <stdint.h>

#include <session/npy.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ses_tensor_t *t = NULL;

    if (ses_npy_read(data, size, &t) == SES_OK)
        ses_tensor_release(t);
    return 0;
}
