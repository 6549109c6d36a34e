/* Helpers shared by the unit tests: temporary folders and files. */
#ifndef SES_TEST_UTIL_H
#define SES_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Makes a fresh temporary folder; the path is static storage per call site's buffer. */
static inline void test_mkdtemp(char *buffer, size_t size) {
    snprintf(buffer, size, "/tmp/ses-test-XXXXXX");
    if (!mkdtemp(buffer))
        abort();
}

/* Writes @p text to @p folder/@p name and stores the path in @p out_path. */
static inline void test_write_file(const char *folder, const char *name, const char *text,
                                   char *out_path, size_t size) {
    FILE *f;

    if (snprintf(out_path, size, "%s/%s", folder, name) >= (int)size)
        abort();
    f = fopen(out_path, "wb");
    if (!f)
        abort();
    fputs(text, f);
    fclose(f);
}

/* Removes a temporary folder and what is in it (one level deep is all the tests make). */
static inline void test_rmtree(const char *folder) {
    char command[4200];

    if (strncmp(folder, "/tmp/ses-test-", 14) != 0)
        return;
    if (snprintf(command, sizeof command, "rm -rf '%s'", folder) >= (int)sizeof command)
        return;
    if (system(command) != 0)
        fprintf(stderr, "could not remove %s\n", folder);
}

#endif /* SES_TEST_UTIL_H */
