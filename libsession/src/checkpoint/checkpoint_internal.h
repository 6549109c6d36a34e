/* What safetensors.c offers checkpoint.c: atomic file writes and header-only reads. */
#ifndef SES_CHECKPOINT_INTERNAL_H
#define SES_CHECKPOINT_INTERNAL_H

#include <stddef.h>

#include <session/checkpoint.h>

/* One piece of a file being written. */
typedef struct ses__chunk {
    const void *data;
    size_t size;
} ses__chunk_t;

/**
 * Writes @p chunks[@p n] to @p path atomically: a new "<path>.tmp-<pid>-<n>" in the same folder,
 * fsynced, renamed over @p path, then the folder fsynced. On failure the temporary file is gone
 * and @p path is untouched (unless only the folder's fsync failed: then the new file is in
 * place but may not survive a crash, and the message says so).
 */
ses_status_t ses__write_file_atomic(const char *path, const ses__chunk_t *chunks, size_t n);

/** The status for an errno value from a file operation (see checkpoint.h). */
ses_status_t ses__errno_status(int err);

/**
 * ses_safetensors_read, but with @p load_data 0 only the header is read and checked against
 * the file's size: names and metadata are filled, tensors is NULL.
 */
ses_status_t ses__safetensors_read(const char *path, int load_data, ses_safetensors_t *out);

#endif /* SES_CHECKPOINT_INTERNAL_H */
