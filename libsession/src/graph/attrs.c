/* Node attributes. */
#include "attrs.h"

#include <stdlib.h>
#include <string.h>

#include "../error.h"

static void attr_free(ses__attr_t *a) {
    free(a->name);
    free(a->s);
    free(a->ints);
    free(a->floats);
    memset(a, 0, sizeof *a);
}

ses_status_t ses__attrs_set(ses__attrs_t *a, const ses_attr_t *v) {
    ses__attr_t fresh = {0};
    size_t i;

    if (!v || !v->name)
        return ses__fail(SES_INVALID_ARGUMENT, "attribute: NULL name");
    fresh.name = ses__strdup(v->name);
    fresh.type = v->type;
    switch (v->type) {
    case SES_ATTR_INT:
        fresh.i = v->i;
        break;
    case SES_ATTR_FLOAT:
        fresh.f = v->f;
        break;
    case SES_ATTR_STRING:
        if (!v->s) {
            free(fresh.name);
            return ses__fail(SES_INVALID_ARGUMENT, "attribute \"%s\": NULL string", v->name);
        }
        fresh.s = ses__strdup(v->s);
        fresh.count = strlen(v->s);
        if (!fresh.s)
            goto oom;
        break;
    case SES_ATTR_INTS:
        if (v->count && !v->ints) {
            free(fresh.name);
            return ses__fail(SES_INVALID_ARGUMENT, "attribute \"%s\": NULL ints with count %zu",
                             v->name, v->count);
        }
        fresh.count = v->count;
        fresh.ints = ses__malloc((v->count ? v->count : 1) * sizeof(int64_t));
        if (!fresh.ints)
            goto oom;
        if (v->count)
            memcpy(fresh.ints, v->ints, v->count * sizeof(int64_t));
        break;
    case SES_ATTR_FLOATS:
        if (v->count && !v->floats) {
            free(fresh.name);
            return ses__fail(SES_INVALID_ARGUMENT, "attribute \"%s\": NULL floats with count %zu",
                             v->name, v->count);
        }
        fresh.count = v->count;
        fresh.floats = ses__malloc((v->count ? v->count : 1) * sizeof(double));
        if (!fresh.floats)
            goto oom;
        if (v->count)
            memcpy(fresh.floats, v->floats, v->count * sizeof(double));
        break;
    default:
        free(fresh.name);
        return ses__fail(SES_INVALID_ARGUMENT, "attribute \"%s\": unknown type %d", v->name,
                         (int)v->type);
    }
    if (!fresh.name)
        goto oom;
    for (i = 0; i < a->count; i++) {
        if (strcmp(a->items[i].name, v->name) == 0) {
            attr_free(&a->items[i]);
            a->items[i] = fresh;
            return SES_OK;
        }
    }
    {
        ses__attr_t *items = ses__realloc(a->items, (a->count + 1) * sizeof *items);
        if (!items)
            goto oom;
        a->items = items;
        a->items[a->count++] = fresh;
    }
    return SES_OK;

oom:
    attr_free(&fresh);
    return ses__fail(SES_OUT_OF_MEMORY, "attribute \"%s\": out of memory", v->name);
}

ses_status_t ses__attrs_set_int(ses__attrs_t *a, const char *name, int64_t value) {
    ses_attr_t v = ses_attr_int(name, value);
    return ses__attrs_set(a, &v);
}

ses_status_t ses__attrs_set_float(ses__attrs_t *a, const char *name, double value) {
    ses_attr_t v = ses_attr_float(name, value);
    return ses__attrs_set(a, &v);
}

ses_status_t ses__attrs_set_ints(ses__attrs_t *a, const char *name, const int64_t *values,
                                 size_t count) {
    ses_attr_t v = ses_attr_ints(name, values, count);
    return ses__attrs_set(a, &v);
}

const ses__attr_t *ses__attrs_find(const ses__attrs_t *a, const char *name) {
    for (size_t i = 0; a && i < a->count; i++)
        if (strcmp(a->items[i].name, name) == 0)
            return &a->items[i];
    return NULL;
}

static int typed(const ses__attrs_t *a, const char *name, ses_attr_type_t type,
                 const ses__attr_t **out) {
    const ses__attr_t *found = ses__attrs_find(a, name);

    if (!found)
        return 0;
    if (found->type != type)
        return -1;
    *out = found;
    return 1;
}

int ses__attrs_get_int(const ses__attrs_t *a, const char *name, int64_t *out) {
    const ses__attr_t *x = NULL;
    int rc = typed(a, name, SES_ATTR_INT, &x);
    if (rc == 1)
        *out = x->i;
    return rc;
}

int ses__attrs_get_float(const ses__attrs_t *a, const char *name, double *out) {
    const ses__attr_t *x = NULL;
    int rc = typed(a, name, SES_ATTR_FLOAT, &x);
    if (rc == 1)
        *out = x->f;
    return rc;
}

int ses__attrs_get_ints(const ses__attrs_t *a, const char *name, const int64_t **out_values,
                        size_t *out_count) {
    const ses__attr_t *x = NULL;
    int rc = typed(a, name, SES_ATTR_INTS, &x);
    if (rc == 1) {
        *out_values = x->ints;
        *out_count = x->count;
    }
    return rc;
}

int ses__attrs_get_string(const ses__attrs_t *a, const char *name, const char **out) {
    const ses__attr_t *x = NULL;
    int rc = typed(a, name, SES_ATTR_STRING, &x);
    if (rc == 1)
        *out = x->s;
    return rc;
}

ses_status_t ses__attrs_copy(ses__attrs_t *dst, const ses__attrs_t *src) {
    for (size_t i = 0; src && i < src->count; i++) {
        const ses__attr_t *x = &src->items[i];
        ses_attr_t v = {x->name, x->type, x->i, x->f, x->s, x->ints, x->floats, x->count};
        ses_status_t st = ses__attrs_set(dst, &v);
        if (st != SES_OK)
            return st;
    }
    return SES_OK;
}

ses_status_t ses__attrs_set_as(ses__attrs_t *dst, const char *name, const ses__attr_t *x) {
    ses_attr_t v = {name, x->type, x->i, x->f, x->s, x->ints, x->floats, x->count};
    return ses__attrs_set(dst, &v);
}

void ses__attrs_clear(ses__attrs_t *a) {
    for (size_t i = 0; a && i < a->count; i++)
        attr_free(&a->items[i]);
    if (a) {
        free(a->items);
        a->items = NULL;
        a->count = 0;
    }
}

const char *ses__attr_type_name(ses_attr_type_t type) {
    switch (type) {
    case SES_ATTR_INT: return "int";
    case SES_ATTR_FLOAT: return "float";
    case SES_ATTR_STRING: return "string";
    case SES_ATTR_INTS: return "ints";
    case SES_ATTR_FLOATS: return "floats";
    }
    return "unknown";
}
