/* String tensors (SES_STRING): an array of `char *` elements, each a NUL-terminated UTF-8 string
 * the tensor owns. They live in host memory only; drivers never see one (README, "String
 * tensors"). */
#include <stdlib.h>
#include <string.h>

#include "../alloc.h"
#include "../error.h"
#include "tensor_internal.h"

/* The element of a tensor made by ses_tensor_create: shared, never freed, never written. */
static char empty_string[1];

static char **elements(const ses_tensor_t *t) { return (char **)t->data; }

size_t ses__utf8_check(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;

    while (i < n) {
        unsigned c = p[i];
        size_t len;
        unsigned min, cp;

        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) {
            len = 2, min = 0x80, cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            len = 3, min = 0x800, cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4, min = 0x10000, cp = c & 0x07;
        } else {
            return i + 1;
        }
        if (n - i < len)
            return i + 1;
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xC0) != 0x80)
                return i + 1;
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        /* Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not UTF-8. */
        if (cp < min || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
            return i + 1;
        i += len;
    }
    return 0;
}

void ses__string_tensor_fill_empty(ses_tensor_t *t) {
    for (size_t i = 0; i < t->count; i++)
        elements(t)[i] = empty_string;
}

void ses__string_tensor_free_elements(ses_tensor_t *t) {
    if (!t->data)
        return;
    for (size_t i = 0; i < t->count; i++) {
        if (elements(t)[i] != empty_string)
            free(elements(t)[i]);
        elements(t)[i] = NULL;
    }
}

void ses__string_tensor_take(ses_tensor_t *t, size_t index, char *value) {
    char *old = elements(t)[index];

    if (old != empty_string)
        free(old);
    elements(t)[index] = value;
}

const char *ses__string_at(const ses_tensor_t *t, size_t index) {
    const char *v = elements(t)[index];
    return v ? v : "";
}

/* A copy of @p value after checking it; messages start with @p what and name element @p index. */
static ses_status_t copy_checked(const char *what, size_t index, const char *value, char **out) {
    size_t n, bad;

    *out = NULL;
    if (!value)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: string %zu is NULL", what, index);
    n = strlen(value);
    bad = ses__utf8_check(value, n);
    if (bad)
        return ses__fail(SES_INVALID_ARGUMENT,
                         "%s: string %zu is not valid UTF-8 (byte %zu, 0x%02x, starts no valid "
                         "sequence)",
                         what, index, bad - 1, (unsigned)(unsigned char)value[bad - 1]);
    *out = ses__malloc(n + 1);
    if (!*out)
        return ses__fail(SES_OUT_OF_MEMORY, "%s: out of memory for string %zu (%zu bytes)", what,
                         index, n + 1);
    memcpy(*out, value, n + 1);
    return SES_OK;
}

ses_status_t ses__string_tensor_copy_in(const char *what, ses_tensor_t *t, const void *src) {
    const char *const *in = src;

    for (size_t i = 0; i < t->count; i++) {
        char *copy;
        ses_status_t st = copy_checked(what, i, in[i], &copy);
        if (st != SES_OK)
            return st;
        ses__string_tensor_take(t, i, copy);
    }
    return SES_OK;
}

/* The checks both accessors share: arguments, dtype, host memory, index. */
static ses_status_t check_access(const char *what, const ses_tensor_t *t, size_t index) {
    if (!t)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: tensor is NULL", what);
    if (t->dtype != SES_STRING)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: the tensor is %s, not string", what,
                         ses_dtype_name(t->dtype));
    if (index >= t->count)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: index %zu is outside the tensor's %zu elements",
                         what, index, t->count);
    return SES_OK;
}

ses_status_t ses_tensor_string(const ses_tensor_t *t, size_t index, const char **out_value) {
    ses_status_t st;

    if (!out_value)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: out_value is NULL", __func__);
    *out_value = NULL;
    if ((st = check_access(__func__, t, index)) != SES_OK)
        return st;
    *out_value = ses__string_at(t, index);
    return SES_OK;
}

ses_status_t ses_tensor_set_string(ses_tensor_t *t, size_t index, const char *value) {
    ses_status_t st;
    char *copy;

    if ((st = check_access(__func__, t, index)) != SES_OK)
        return st;
    if (!value)
        return ses__fail(SES_INVALID_ARGUMENT, "%s: value is NULL", __func__);
    if ((st = copy_checked(__func__, index, value, &copy)) != SES_OK)
        return st;
    ses__string_tensor_take(t, index, copy);
    return SES_OK;
}
