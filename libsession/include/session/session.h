/*
 * libsession: evaluate computation graphs inside sessions, on devices supplied by driver plugins.
 * Include this header; it includes the rest. Link with `pkg-config --libs session`.
 */
#ifndef SESSION_SESSION_H
#define SESSION_SESSION_H

#include <session/status.h>
#include <session/registry.h>

#endif /* SESSION_SESSION_H */
