/*
 * Checkpoints: tensors in safetensors files, a session's variables saved and restored, and
 * checkpoint folders that keep the last N with an atomically updated pointer to the latest.
 *
 * The file format is safetensors (https://github.com/huggingface/safetensors), readable by
 * PyTorch and Hugging Face tools: an 8-byte little-endian header length, a JSON header, then the
 * tensors' bytes. Every file is written atomically (a temporary file in the same folder,
 * fsynced, renamed over the target, the folder fsynced): a crash leaves either the old file or
 * the new one, never half of one.
 *
 * I/O errors map to status codes as follows: a missing file or folder is SES_NOT_FOUND; a
 * permission or read-only file system error SES_FAILED_PRECONDITION; a full disk or an I/O error
 * SES_UNAVAILABLE; a malformed file SES_INVALID_ARGUMENT. Messages name the file.
 */
#ifndef SESSION_CHECKPOINT_H
#define SESSION_CHECKPOINT_H

#include <session/status.h>
#include <session/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ses_session ses_session_t;

/* ---- safetensors files ------------------------------------------------------------------ */

/**
 * Writes tensors to a safetensors file: 8-byte little-endian header length, JSON header
 * {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
 *  "__metadata__": {"key": "value", ...}}, padded with spaces to a multiple of 8, then the
 * data, each tensor's bytes in order. Atomically: written to "<path>.tmp-<pid>-<n>" in the same
 * folder, fsynced, renamed over path, and the folder fsynced. Names must be unique and non-empty
 * (and not "__metadata__"). metadata: n_metadata key/value pairs (may be 0/NULL); keys unique.
 *
 * The tensors are borrowed for the call and must be host-visible; dtypes are written with their
 * safetensors names (F32 F64 F16 BF16 I8 I16 I32 I64 U8 U16 U32 U64 BOOL). On failure the
 * temporary file is removed and @p path is untouched.
 * Thread-safety: any thread; the tensors' data must not change during the call.
 */
SES_API ses_status_t ses_safetensors_write(const char *path, const char *const *names,
                                           ses_tensor_t *const *tensors, size_t n,
                                           const char *const *metadata_keys,
                                           const char *const *metadata_values, size_t n_metadata);

/** The whole contents of a safetensors file, as ses_safetensors_read returns it. */
typedef struct ses_safetensors {
    size_t n;                /* tensors, in the order of their data in the file */
    char **names;            /* n names */
    ses_tensor_t **tensors;  /* n host tensors, one reference each */
    size_t n_metadata;
    char **metadata_keys;    /* the "__metadata__" entries, in the header's order */
    char **metadata_values;
} ses_safetensors_t;

/**
 * Reads a whole safetensors file. On success the caller owns the arrays and their contents
 * (free with ses_safetensors_free). Any truncation, bad JSON, unknown dtype, offsets that
 * overlap, leave gaps, exceed the file or disagree with dtype*shape, duplicate names, a header
 * over 100 MB: SES_INVALID_ARGUMENT (or SES_NOT_FOUND for a missing file) naming the file and
 * what is wrong; nothing is returned on failure (@p out is zeroed).
 * Thread-safety: any thread.
 */
SES_API ses_status_t ses_safetensors_read(const char *path, ses_safetensors_t *out);

/** Releases the tensors and frees the arrays of @p st, and zeroes it. Accepts NULL. */
SES_API void ses_safetensors_free(ses_safetensors_t *st);

/* ---- a session's variables -------------------------------------------------------------- */

/**
 * Saves every variable of the session's graph that is set in its root scope (name = the
 * variable's node name) to path, with metadata "step" = step (decimal) and "format" =
 * "libsession-checkpoint-1". Variables not yet initialized are not saved.
 * Thread-safety: may run concurrently with evals; each variable's tensor is referenced while it
 * is written, so a variable replaced meanwhile is saved with the value it had when the save took
 * it (an op that writes a variable's tensor in place during the save may tear that one value).
 */
SES_API ses_status_t ses_session_save(ses_session_t *s, const char *path, uint64_t step);

/**
 * Restores variables from path: every variable of the graph that the file names gets the
 * file's tensor; a name in the file that is not a variable of the graph, or a dtype or shape that
 * differs from the variable's current value (when set) or declared initializer, is an error that
 * lists EVERY mismatch by name (both sides); on any error no variable is changed (all or
 * nothing). Variables the file lacks are an error too unless allow_missing is non-zero.
 * *out_step (may be NULL) gets the metadata "step" (0 when absent).
 *
 * The initializer's type is what shape inference gives without running anything; when it cannot
 * be known (it depends on a fed value) the file's type is taken. If the mismatch list does not
 * fit in ses_last_error()'s message, the message says how many were left out and every
 * mismatch is also logged at error level.
 * Thread-safety: may run concurrently with evals; the variables are replaced in the scope only
 * after the whole file was read and checked, so an eval sees each variable either old or new.
 */
SES_API ses_status_t ses_session_restore(ses_session_t *s, const char *path, int allow_missing,
                                         uint64_t *out_step);

/* ---- checkpoint folders ----------------------------------------------------------------- */

/**
 * Checkpoint folders: dir/ckpt-<step>.safetensors, plus dir/latest, a small text file holding
 * the latest file name, replaced atomically (write temp, fsync, rename, fsync dir) after the
 * checkpoint file itself is durable; then all but the newest keep_last checkpoints are deleted
 * (keep_last 0 = keep all). Creates dir (mode 0755) if missing.
 *
 * "Newest" means the highest steps; the checkpoint just written is always kept, even when an
 * older timeline left higher steps in the folder. Saving a step that exists replaces it.
 * A failure to delete an old checkpoint is logged, not returned: the new one is safe by then.
 * Thread-safety: one saver per folder at a time.
 */
SES_API ses_status_t ses_checkpoint_save(ses_session_t *s, const char *dir, uint64_t step,
                                         uint32_t keep_last);

/**
 * The latest checkpoint of dir: *out_path (malloc'd, caller frees) and *out_step.
 * SES_NOT_FOUND when dir has none. If "latest" names a missing or corrupt file, falls back to the
 * newest ckpt-*.safetensors that reads correctly, and says so in a log line.
 *
 * "Reads correctly" means the header parses and every tensor's bytes lie in the file (safetensors
 * has no checksums, so damage inside the data cannot be seen). The step is the file's "step"
 * metadata, or the one in its name. When checkpoint files exist but none reads correctly, fails
 * with SES_INVALID_ARGUMENT naming each. On failure *out_path is NULL and *out_step 0.
 */
SES_API ses_status_t ses_checkpoint_latest(const char *dir, char **out_path, uint64_t *out_step);

/**
 * Restores the latest checkpoint of dir into s (ses_session_restore with allow_missing 0);
 * *out_step (may be NULL) gets its step. SES_NOT_FOUND when dir has no checkpoint.
 */
SES_API ses_status_t ses_checkpoint_restore_latest(ses_session_t *s, const char *dir,
                                                   uint64_t *out_step);

#ifdef __cplusplus
}
#endif

#endif /* SESSION_CHECKPOINT_H */
