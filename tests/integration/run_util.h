/* Running a command and capturing what it prints, for the integration tests. */
#ifndef SES_RUN_UTIL_H
#define SES_RUN_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* Output of one command: stdout and stderr together, and its exit status. */
typedef struct run_result {
    char *output;
    int exit_code; /* -1 when it did not exit normally */
} run_result_t;

/* Runs @p command through the shell and captures everything it prints. */
static inline run_result_t run_command(const char *command) {
    run_result_t r = {NULL, -1};
    size_t size = 0, capacity = 4096;
    char *full = malloc(strlen(command) + 8);
    FILE *pipe;
    int status;

    sprintf(full, "%s 2>&1", command);
    r.output = malloc(capacity);
    pipe = popen(full, "r");
    free(full);
    if (!pipe || !r.output)
        abort();
    for (;;) {
        size_t got;
        if (size + 1024 + 1 > capacity) {
            capacity *= 2;
            r.output = realloc(r.output, capacity);
            if (!r.output)
                abort();
        }
        got = fread(r.output + size, 1, 1024, pipe);
        if (got == 0)
            break;
        size += got;
    }
    r.output[size] = '\0';
    status = pclose(pipe);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

/* The line of @p text that contains @p needle, copied into @p line; 0 when there is none. */
static inline int line_containing(const char *text, const char *needle, char *line, size_t size) {
    const char *hit = strstr(text, needle);
    const char *start, *end;

    if (!hit)
        return 0;
    for (start = hit; start > text && start[-1] != '\n'; start--)
        ;
    end = strchr(hit, '\n');
    if (!end)
        end = hit + strlen(hit);
    snprintf(line, size, "%.*s", (int)(end - start), start);
    return 1;
}

#endif /* SES_RUN_UTIL_H */
