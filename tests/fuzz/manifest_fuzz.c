/* libFuzzer target: driver manifests (src/registry/manifest.c) from arbitrary bytes. */
#include <stddef.h>
#include <stdint.h>

#include "../../libsession/src/registry/registry_internal.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ses__manifest_t m;

    ses__manifest_read(fuzz_file("acme.json", data, size), &m);
    ses__manifest_clear(&m);
    return 0;
}
