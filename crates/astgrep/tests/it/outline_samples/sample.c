#ifndef SAMPLE_H
#define SAMPLE_H

#include <stdio.h>

#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define VERSION 3

/* A buffer. */
struct buffer {
    char *data;
    size_t len, cap;
};

typedef struct {
    int x;
    int y;
} point_t;

enum color { RED, GREEN };

int buffer_push(struct buffer *b, char c);
static char *buffer_str(const struct buffer *b);

/* Pushes one byte. */
int buffer_push(struct buffer *b, char c)
{
    int local = 0;
    b->data[b->len++] = c;
    return local;
}

static char *buffer_str(const struct buffer *b) { return b->data; }

#endif
