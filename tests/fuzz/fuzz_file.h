/*
 * For fuzz targets whose parser reads a file by path: writes each input to one file in a
 * private temporary folder made on first use, and gives its path.
 */
#ifndef SES_FUZZ_FILE_H
#define SES_FUZZ_FILE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((unused)) static const char *fuzz_folder(void) {
    static char folder[64];
    if (!folder[0]) {
        snprintf(folder, sizeof folder, "/tmp/ses-fuzz-XXXXXX");
        if (!mkdtemp(folder))
            abort();
    }
    return folder;
}

/* Writes @p data to <folder>/<name> and returns that path (valid until the next call). */
__attribute__((unused)) static const char *fuzz_file(const char *name, const unsigned char *data, size_t size) {
    static char path[128];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", fuzz_folder(), name);
    f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
        abort();
    return path;
}

#endif /* SES_FUZZ_FILE_H */
