/* Node attributes: an owned list of named values, as the user gave them or as inference
 * normalized them for kernels. */
#ifndef SES_ATTRS_H
#define SES_ATTRS_H

#include <stddef.h>
#include <stdint.h>

#include <session/graph.h>

typedef struct ses__attr {
    char *name;
    ses_attr_type_t type;
    int64_t i;
    double f;
    char *s;
    int64_t *ints;
    double *floats;
    size_t count; /* entries of ints/floats; bytes of s */
} ses__attr_t;

typedef struct ses__attrs {
    ses__attr_t *items;
    size_t count;
} ses__attrs_t;

/* Setters replace an attribute of the same name. They fail only when memory runs out. */
ses_status_t ses__attrs_set(ses__attrs_t *a, const ses_attr_t *value);
ses_status_t ses__attrs_set_int(ses__attrs_t *a, const char *name, int64_t value);
ses_status_t ses__attrs_set_float(ses__attrs_t *a, const char *name, double value);
ses_status_t ses__attrs_set_ints(ses__attrs_t *a, const char *name, const int64_t *values,
                                 size_t count);

/* Getters return 1 when found with that type, 0 when absent, -1 when present with another
 * type. Pointers returned stay valid until the attribute changes. */
const ses__attr_t *ses__attrs_find(const ses__attrs_t *a, const char *name);
int ses__attrs_get_int(const ses__attrs_t *a, const char *name, int64_t *out);
int ses__attrs_get_float(const ses__attrs_t *a, const char *name, double *out);
int ses__attrs_get_ints(const ses__attrs_t *a, const char *name, const int64_t **out_values,
                        size_t *out_count);
int ses__attrs_get_string(const ses__attrs_t *a, const char *name, const char **out);

ses_status_t ses__attrs_copy(ses__attrs_t *dst, const ses__attrs_t *src);
/* Sets a copy of @p x's value under another name, @p name (fused nodes prefix the attributes of
 * a member: MaxPool's kernel_shape as pool_kernel_shape). */
ses_status_t ses__attrs_set_as(ses__attrs_t *dst, const char *name, const ses__attr_t *x);
void ses__attrs_clear(ses__attrs_t *a);

/* "int", "float", "string", "ints", "floats". */
const char *ses__attr_type_name(ses_attr_type_t type);

#endif /* SES_ATTRS_H */
