/*
 * The messages of a remote session (src/distributed/remote.c): a growable writer and a
 * bounds-checked reader of little fixed-width fields, strings and tensors, and a graph's
 * serialization. Both ends are the same build of libsession, so the format is private and
 * unversioned; the reader still checks every length, since a message is a buffer from another
 * process.
 */
#ifndef SES_REMOTE_WIRE_H
#define SES_REMOTE_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include <session/graph.h>
#include <session/tensor.h>

typedef struct ses__wire_writer {
    unsigned char *data;
    size_t used;
    size_t capacity;
    int failed; /* out of memory: every later write is dropped */
} ses__wire_writer_t;

void ses__wire_u32(ses__wire_writer_t *w, uint32_t v);
void ses__wire_u64(ses__wire_writer_t *w, uint64_t v);
void ses__wire_f64(ses__wire_writer_t *w, double v);
void ses__wire_bytes(ses__wire_writer_t *w, const void *data, size_t bytes);
/** A length and the bytes; NULL is written apart from "". */
void ses__wire_string(ses__wire_writer_t *w, const char *s);
void ses__wire_tensor(ses__wire_writer_t *w, ses_tensor_t *t);
/** Every node of @p g in order, with attributes, constants' values and device requests. */
void ses__wire_graph(ses__wire_writer_t *w, const ses_graph_t *g);
/** SES_OUT_OF_MEMORY (with a message naming @p what) when a write failed, else SES_OK. */
ses_status_t ses__wire_check(const ses__wire_writer_t *w, const char *what);

typedef struct ses__wire_reader {
    const unsigned char *data;
    size_t size;
    size_t at;
    int failed; /* read past the end or a bad value: every later read gives 0 */
    int oom;    /* ...because memory ran out (failed is set too), not because of the message */
} ses__wire_reader_t;

uint32_t ses__wire_read_u32(ses__wire_reader_t *r);
uint64_t ses__wire_read_u64(ses__wire_reader_t *r);
double ses__wire_read_f64(ses__wire_reader_t *r);
/** Points into the message (@p out_bytes bytes); NULL when too short. */
const void *ses__wire_read_bytes(ses__wire_reader_t *r, size_t bytes);
/** A new NUL-terminated copy (free it), or NULL for a NULL string or a failed read. */
char *ses__wire_read_string(ses__wire_reader_t *r);
/** A new tensor into @p out; a status naming what is wrong with the message otherwise. */
ses_status_t ses__wire_read_tensor(ses__wire_reader_t *r, ses_tensor_t **out);
/**
 * The status for a read that failed: SES_OUT_OF_MEMORY when memory ran out while reading,
 * else SES_INTERNAL with the printf message (what is wrong with the message).
 */
ses_status_t ses__wire_read_fail(const ses__wire_reader_t *r, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
/** Builds a new graph from ses__wire_graph's output. */
ses_status_t ses__wire_read_graph(ses__wire_reader_t *r, ses_graph_t **out_graph);

#endif /* SES_REMOTE_WIRE_H */
