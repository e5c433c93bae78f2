/* The compiled reader's reading of a token event: see _reader_events.c. */
#ifndef RIGBOOK_READER_EVENTS_H
#define RIGBOOK_READER_EVENTS_H

#include <stddef.h>

typedef struct {
    int reasoning;   /* 1: the token is reasoning, 0: content */
    int has_usage;   /* the event carried a usage object (continuous usage) */
    long long count; /* its completion_tokens, or -1 where it carried none */
} TokenEvent;

int token_event(const char *payload, size_t n, TokenEvent *out);

#endif
