/*
 * Node output types known without compiling or running (static_types.c): for checks made on a
 * graph before any plan exists.
 */
#ifndef SES_OPS_STATIC_TYPES_H
#define SES_OPS_STATIC_TYPES_H

#include <session/session.h>

#include "op_schema.h"

typedef struct ses__static_types ses__static_types_t;

/* A cache over @p g (whose variables' values are looked up in @p scope); NULL when out of
 * memory. Free it with ses__static_types_free. */
ses__static_types_t *ses__static_types_new(const ses_graph_t *g, ses_scope_t *scope);
void ses__static_types_free(ses__static_types_t *c);

/* The type of @p e into @p out: 1 when it can be known statically, 0 otherwise. */
int ses__static_type(ses__static_types_t *c, ses_edge_t e, ses__type_t *out);

/* A tensor's dtype and shape as a type. */
void ses__type_of_tensor(const ses_tensor_t *t, ses__type_t *out);

#endif /* SES_OPS_STATIC_TYPES_H */
