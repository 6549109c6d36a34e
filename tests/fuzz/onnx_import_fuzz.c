/*
 * libFuzzer target: ONNX model import and TensorProto reading from arbitrary bytes. Every input
 * must end in a status, never a crash, a leak or undefined behaviour (scripts/fuzz builds this
 * with clang, ASan and UBSan). Seeds: tests/fuzz/corpus/onnx_import and the node tests' models.
 */
#include <stddef.h>
#include <stdint.h>

#include <session/onnx.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ses_onnx_options_t o;
    ses_onnx_model_t *m = NULL;
    ses_tensor_t *t = NULL;

    /* Limits small enough that a valid huge tensor cannot exhaust the fuzzer's memory. */
    ses_onnx_options_init(&o);
    o.max_elements = UINT64_C(1) << 22;
    o.max_nodes = 10000;
    if (ses_onnx_import(data, size, &o, &m) == SES_OK)
        ses_onnx_model_destroy(m);
    if (size < (UINT64_C(1) << 22) && ses_onnx_read_tensor(data, size, &t) == SES_OK)
        ses_tensor_release(t);
    return 0;
}
