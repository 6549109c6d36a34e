/* A library that says it is cuDNN 8.9.7 and has nothing else: the loader must refuse it by its
 * version, before it looks for the cuDNN 9 functions. */
#include <stddef.h>

size_t cudnnGetVersion(void);

size_t cudnnGetVersion(void) {
    return 8907;
}
