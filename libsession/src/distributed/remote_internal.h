/*
 * What the three parts of remote sessions share: remote.c (the session's side), remote_partition.c
 * (cutting an eval into segments) and remote_worker.c (the worker's side).
 */
#ifndef SES_REMOTE_INTERNAL_H
#define SES_REMOTE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <session/session.h>

/* The requests a worker answers. */
enum { REQUEST_OPEN = 1, REQUEST_EVAL = 2, REQUEST_EXIT = 3 };

/* This process's task; worker K is task K + 1. */
#define LOCAL_TASK 0u

/* Parses "/task:K/device": 1 with K and the device's offset, 0 for a local name, -1 if bad. */
int ses__remote_parse_task(const char *name, uint32_t *out_task, size_t *out_rest);

/* One eval's partition state. */
typedef struct eval_state {
    const ses_graph_t *g;
    size_t *offset;         /* per node: its first edge's index; offset[n] edges in all */
    ses_tensor_t **fed;     /* per edge: the caller's value (borrowed) */
    ses_tensor_t **value;   /* per edge: computed by an earlier segment (owned) */
    unsigned char *fetched; /* per edge: the caller fetches it */
    unsigned char *cross;   /* per edge: a later segment reads it */
    unsigned char *target;  /* per node: run it for its effect */
    size_t *segment;        /* per node: its segment + 1; 0 when not needed */
    const uint32_t *task_of;
} eval_state_t;

/* A segment's part of the eval. */
typedef struct segment_io {
    ses_edge_t *fetches;
    size_t n_fetches;
    ses_feed_t *feeds;
    size_t n_feeds;
    ses_node_t **targets;
    size_t n_targets;
} segment_io_t;

ses_status_t ses__remote_mark_needed(eval_state_t *e, const ses_edge_t *fetches, size_t n_fetches,
                                     ses_node_t *const *targets, size_t n_targets);
size_t ses__remote_cut_segments(eval_state_t *e, const uint32_t *task_of);
void ses__remote_mark_crossings(eval_state_t *e);
void ses__remote_segment_io(const eval_state_t *e, size_t number, segment_io_t *io,
                            unsigned char *seen);

#endif /* SES_REMOTE_INTERNAL_H */
