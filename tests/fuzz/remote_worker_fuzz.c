/*
 * libFuzzer target: a remote session's requests as a worker reads them (src/distributed/
 * remote.c, remote_wire.c): graphs, tensors, edges and targets from arbitrary bytes. Each input
 * goes to a new worker, which must answer with an error or a reply, never crash or leak.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <session/remote.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ses_remote_worker_t *worker = NULL;
    void *reply = NULL;
    size_t bytes = 0;
    int exit_now = 0;

    if (ses_remote_worker_create(&worker) != SES_OK)
        return 0;
    if (ses_remote_worker_handle(worker, data, size, &reply, &bytes, &exit_now) == SES_OK)
        free(reply);
    ses_remote_worker_destroy(worker);
    return 0;
}
