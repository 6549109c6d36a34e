/*
 * The helper library of the fake_missing_dep driver. It is built with the SONAME
 * libses_fake_gone.so.1, a file that never exists, so the fake that links it cannot be loaded:
 * the dynamic loader looks for libses_fake_gone.so.1 and fails with
 * "cannot open shared object file". Nothing ever calls this function at run time.
 */
#include <stdint.h>

__attribute__((visibility("default"))) int32_t ses_fake_dep_answer(void);

__attribute__((visibility("default"))) int32_t ses_fake_dep_answer(void) {
    return 42;
}
