/* The bench client's compiled reader: a thread that owns each stream's socket once its request
 * is written, and hands the stream's SSE payloads to Python in batches, each stamped with when
 * the kernel received it.
 *
 * Why: a client in Python pays an event-loop wake-up, a read and a parse per event, and must wake
 * on a timer to watch for its own stalls. Here the reads, HTTP (chunked or not) and the SSE
 * framing are compiled, the thread reads at a pace (a share of the streams' gap between events,
 * so several streams' events share one wake-up), and each read is `recvmsg` with the kernel's
 * receive stamp (SO_TIMESTAMPNS): a late read moves no timestamp. What a late read can blur is
 * when it holds several events of one stream: they all carry the stamp of the last byte, and the
 * earlier ones arrived at some time since the stream was last seen empty. The thread keeps the
 * longest such window (`merged_worst`; `first_worst` for the reads that bring a stream's first
 * token, which bounds how far a TTFT moved), which bounds how far any token's timestamp moved.
 *
 * An event that is one token and nothing else (nearly all of a stream's) is read here
 * (_reader_events.c) and handed over in runs, as arrays; every other event (a finish reason,
 * usage with details, an error, anything unusual) goes to Python's parser, the Python client's
 * own, which the reading here is held equal to by a fuzzer.
 *
 * Python owns the sockets (it connects, writes the request, and closes the socket once the
 * stream is reported ended); the thread only reads them, under `mu`, and takes a stream out of
 * its epoll set before it reports it ended or lets `cancel` return. */
#define PY_SSIZE_T_CLEAN
#define _GNU_SOURCE
#include <Python.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "_reader_events.h"

#define HEAD_MAX 16384
#define LINE_MAX_LEN 1024
#define ERROR_BODY_MAX 300
#define READ_SIZE 65536
#define READY_MAX 1024
#define KICK_ID UINT64_MAX
/* The longest the thread blocks with streams open: how late a stall is noticed at worst. */
#define BLOCK_MAX_MS 250

typedef struct {
    char *p;
    size_t len, cap;
} Buf;

static int buf_add(Buf *b, const char *d, size_t n) {
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n) cap *= 2;
        char *q = realloc(b->p, cap);
        if (q == NULL) return -1;
        b->p = q, b->cap = cap;
    }
    memcpy(b->p + b->len, d, n);
    b->len += n;
    return 0;
}

static void buf_free(Buf *b) {
    free(b->p);
    b->p = NULL, b->len = b->cap = 0;
}

/* One event a stream gave: a payload for Python to parse, or a token read here (see
 * _reader_events.c), whose payload is kept only where it carried usage. */
typedef struct {
    size_t end; /* its payload is data[previous end, end) */
    double time;
    long long count;
    unsigned char token, reasoning, has_usage;
} Item;

typedef struct {
    Buf data;
    Item *items;
    size_t n, cap;
} Events;

static int events_add(Events *e, const char *p, size_t n, double t, const TokenEvent *token) {
    if (e->n == e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 64;
        Item *items = realloc(e->items, cap * sizeof *items);
        if (items == NULL) return -1;
        e->items = items, e->cap = cap;
    }
    if ((token == NULL || token->has_usage) && buf_add(&e->data, p, n) < 0) return -1;
    Item *it = &e->items[e->n++];
    it->end = e->data.len, it->time = t;
    it->token = token != NULL;
    it->reasoning = token ? (unsigned char)token->reasoning : 0;
    it->has_usage = token ? (unsigned char)token->has_usage : 0;
    it->count = token ? token->count : -1;
    return 0;
}

static void events_free(Events *e) {
    buf_free(&e->data);
    free(e->items);
    memset(e, 0, sizeof *e);
}

enum { HEAD, BODY_LENGTH, BODY_CLOSE, CHUNK_SIZE, CHUNK_DATA, CHUNK_END, TRAILERS };

typedef struct {
    uint64_t id;
    int fd, used, live, ended, dirty, saw_done, status, phase;
    int after_cr;     /* the body's last byte was a CR: an LF next ends no other line */
    long long left;   /* body bytes left: of the Content-Length, or of the current chunk */
    Buf line;         /* the head, a chunk-size line or a trailer line, across reads */
    Buf sse;          /* body bytes of an event not yet ended by a blank line */
    Buf error_body;   /* the start of a >= 400 reply's body */
    Events out;       /* payloads not yet taken by Python */
    char error[256];  /* why reading failed, or "" */
    double stall_s, last_data, drained, last_arrival; /* last_arrival: of its latest event */
    double ended_at;  /* when reading ended, on the monotonic clock */
    long reads;
    int in_read;      /* events completed by the read being fed */
    int tokens_in_read; /* of them, token events (read in C) */
    int bearer_in_read; /* of them, events that may bear a token: any but a stream's first */
    int after_token;  /* of them, events completed after one that may bear a token */
    int after_latest; /* of them, events completed after the latest that may bear a token */
    int had_token;    /* an earlier read held an event that may bear a token */
    double last_window; /* the merged window of the read that held its latest token; 0: none */
    double last_token; /* when its latest token event arrived; 0: none yet */
} Stream;

typedef struct {
    PyObject_HEAD
    pthread_mutex_t mu;
    pthread_t thread;
    int started, stop, ep, notify_fd, kick_fd;
    Stream **slots;
    size_t nslots;
    size_t *free_slots, nfree;
    size_t *dirty, ndirty, dirty_cap;
    uint32_t generation;
    int open, notified, ended_waiting;
    double pace_share, pace_min, pace_max, flush_s, last_notify;
    double gap;        /* running mean of the gap between two reads of one stream */
    double last_any;   /* latest arrival on any stream while streams were open; 0: none */
    /* the cell's watch, reset by stats(reset=True) */
    double *lags;
    size_t nlags, lags_cap;
    double lag_worst, merged_worst, first_worst, last_worst, read_gap_worst;
    long rounds, reads;
    long unstamped;    /* reads of data that came without the kernel's receive stamp */
} Reader;

static double now_of(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static Stream *find(Reader *r, uint64_t id) {
    size_t slot = (size_t)(id & 0xffffffffu);
    if (slot >= r->nslots || r->slots[slot] == NULL) return NULL;
    Stream *s = r->slots[slot];
    return s->used && s->id == id ? s : NULL;
}

static void mark_dirty(Reader *r, Stream *s) {
    if (s->dirty) return;
    if (r->ndirty == r->dirty_cap) {
        size_t cap = r->dirty_cap ? r->dirty_cap * 2 : 64;
        size_t *d = realloc(r->dirty, cap * sizeof *d);
        if (d == NULL) return; /* reported when the stream ends, as every stream is */
        r->dirty = d, r->dirty_cap = cap;
    }
    r->dirty[r->ndirty++] = (size_t)(s->id & 0xffffffffu);
    s->dirty = 1;
}

/* Reading is over: out of the epoll set, reported to Python at once. */
static void end(Reader *r, Stream *s) {
    if (s->ended) return;
    if (s->live) {
        epoll_ctl(r->ep, EPOLL_CTL_DEL, s->fd, NULL);
        s->live = 0;
        if (--r->open == 0) r->last_any = 0.0;
    }
    s->ended = 1;
    s->ended_at = now_of(CLOCK_MONOTONIC);
    /* The stream's last token: what a per-request rate and a burst's aggregate end on. */
    if (s->last_window > r->last_worst) r->last_worst = s->last_window;
    r->ended_waiting = 1;
    mark_dirty(r, s);
}

static void fail(Reader *r, Stream *s, const char *why) {
    if (s->error[0] == 0) snprintf(s->error, sizeof s->error, "%s", why);
    end(r, s);
}

/* Whether an event the C reading left to Python may carry a token: it names a field that does.
 * A finish or usage event without one (`"delta":{}`) carries none. */
static int may_bear(const char *p, size_t n) {
    static const char *const keys[] = {"\"content\"", "\"reasoning", "\"tool_calls\"", "\"text\""};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
        if (memmem(p, n, keys[k], strlen(keys[k])) != NULL) return 1;
    return 0;
}

static void emit(Reader *r, Stream *s, const char *p, size_t n, double t) {
    if (n == 6 && memcmp(p, "[DONE]", 6) == 0) {
        s->saw_done = 1;
        return;
    }
    TokenEvent token;
    int is_token = token_event(p, n, &token);
    if (events_add(&s->out, p, n, t, is_token ? &token : NULL) < 0) {
        fail(r, s, "dropped: the client ran out of memory");
        return;
    }
    /* A token the C reading knows, or an event that names a token's field and is not the
     * stream's first (a token with details goes to Python's parser; the first event may be the
     * role event, which names "content" too). */
    int bearer = is_token || ((s->in_read > 0 || s->last_arrival > 0.0) && may_bear(p, n));
    s->after_token += s->bearer_in_read > 0;
    s->after_latest = bearer ? 0 : s->after_latest + (s->bearer_in_read > 0);
    if (bearer) s->last_window = 0.0;
    s->bearer_in_read += bearer;
    s->in_read++;
    s->tokens_in_read += is_token;
    mark_dirty(r, s);
}

/* One SSE event (its lines, without the blank line that ended it): its data, joined. */
static void on_event(Reader *r, Stream *s, const char *ev, size_t n, double t) {
    if (n >= 6 && memcmp(ev, "data: ", 6) == 0 && memchr(ev, '\n', n) == NULL) {
        emit(r, s, ev + 6, n - 6, t);
        return;
    }
    Buf joined = {0};
    int lines = 0;
    for (const char *p = ev, *stop = ev + n; p < stop;) {
        const char *nl = memchr(p, '\n', stop - p);
        const char *eol = nl ? nl : stop;
        if (eol - p >= 5 && memcmp(p, "data:", 5) == 0) {
            const char *v = p + 5;
            while (v < eol && *v == ' ') v++;
            if ((lines++ && buf_add(&joined, "\n", 1) < 0) || buf_add(&joined, v, eol - v) < 0) {
                buf_free(&joined);
                fail(r, s, "dropped: the client ran out of memory");
                return;
            }
        }
        p = eol + 1;
    }
    if (lines) emit(r, s, joined.p ? joined.p : "", joined.len, t);
    buf_free(&joined);
}

/* Body bytes: an error reply's start is kept; a stream's are split into events. */
static void on_body(Reader *r, Stream *s, const char *d, size_t n, double t) {
    if (s->status >= 400) {
        size_t room = ERROR_BODY_MAX - s->error_body.len;
        if (room > 0 && buf_add(&s->error_body, d, n < room ? n : room) < 0) fail(r, s, "dropped: the client ran out of memory");
        return;
    }
    Buf *b = &s->sse;
    size_t old = b->len;
    if (buf_add(b, d, n) < 0) {
        fail(r, s, "dropped: the client ran out of memory");
        return;
    }
    /* CR, LF and CRLF each end a line (SSE): every CR becomes an LF, and an LF right after a CR,
     * in this read or the next, is the same line end. */
    if (s->after_cr || memchr(d, '\r', n) != NULL) {
        size_t w = old;
        for (size_t k = old; k < b->len; k++) {
            char c = b->p[k];
            if (c == '\n' && s->after_cr) {
                s->after_cr = 0;
                continue;
            }
            s->after_cr = c == '\r';
            b->p[w++] = c == '\r' ? '\n' : c;
        }
        b->len = w;
    }
    size_t start = 0;
    for (size_t from = 0; !s->ended && !s->saw_done;) { /* each blank line ends an event */
        char *nl = memchr(b->p + from, '\n', b->len - from);
        if (nl == NULL || nl + 1 == b->p + b->len) break;
        from = nl + 1 - b->p;
        if (nl[1] != '\n') continue;
        on_event(r, s, b->p + start, nl - (b->p + start), t);
        start = from = nl + 2 - b->p;
    }
    if (start > 0) memmove(b->p, b->p + start, b->len - start);
    b->len -= start;
    if (s->saw_done) end(r, s);
}

/* A header's value as a message quotes it: before any parameter, trimmed, lower case, printable
 * ASCII only, 60 characters at most (rigbook.openai.stream._media writes the same). */
static void media_of(const char *v, const char *eol, char *out) {
    const char *stop = v;
    while (stop < eol && *stop != ';' && *stop != '\r') stop++;
    while (v < stop && (*v == ' ' || *v == '\t')) v++;
    while (stop > v && (stop[-1] == ' ' || stop[-1] == '\t')) stop--;
    size_t n = 0;
    for (; v < stop && n < 60; v++, n++) {
        unsigned char c = (unsigned char)*v;
        out[n] = c >= 0x21 && c <= 0x7e ? (char)(c >= 'A' && c <= 'Z' ? c + 32 : c) : '?';
    }
    out[n] = 0;
}

/* A complete head in s->line: the status and how the body is framed. 1 when it was a 1xx. */
static int on_head(Reader *r, Stream *s) {
    const char *h = s->line.p, *stop = h + s->line.len;
    if (s->line.len < 12 || memcmp(h, "HTTP/1.", 7) != 0 || h[8] != ' ') {
        fail(r, s, "dropped: bad HTTP from the server: not an HTTP/1.x status line");
        return 0;
    }
    int status = 0;
    for (int k = 9; k < 12; k++) {
        if (h[k] < '0' || h[k] > '9') {
            fail(r, s, "dropped: bad HTTP from the server: bad status code");
            return 0;
        }
        status = status * 10 + (h[k] - '0');
    }
    if (status >= 100 && status < 200) return 1;
    int chunked = 0;
    long long length = -1;
    char type[61] = "", encoding[61] = "";
    for (const char *p = memchr(h, '\n', stop - h); p != NULL && p + 1 < stop;) {
        const char *line = p + 1, *nl = memchr(line, '\n', stop - line);
        const char *eol = nl ? nl : stop;
        const char *colon = memchr(line, ':', eol - line);
        if (colon != NULL) {
            const char *v = colon + 1;
            while (v < eol && (*v == ' ' || *v == '\t')) v++;
            size_t name = colon - line, vlen = eol - v;
            if (name == 17 && strncasecmp(line, "transfer-encoding", 17) == 0) {
                for (size_t k = 0; k + 7 <= vlen; k++)
                    if (strncasecmp(v + k, "chunked", 7) == 0) chunked = 1;
            } else if (name == 14 && strncasecmp(line, "content-length", 14) == 0) {
                length = 0;
                for (const char *q = v; q < eol && *q >= '0' && *q <= '9'; q++) length = length * 10 + (*q - '0');
            } else if (name == 12 && strncasecmp(line, "content-type", 12) == 0) {
                media_of(v, eol, type);
            } else if (name == 16 && strncasecmp(line, "content-encoding", 16) == 0) {
                media_of(v, eol, encoding);
            }
        }
        p = nl;
    }
    s->status = status;
    /* Why a 2xx reply is no event stream to time: rigbook.openai.stream.stream_format_fault, word for word. */
    char why[256];
    if (status >= 200 && status < 300 && encoding[0] && strcmp(encoding, "identity") != 0) {
        snprintf(why, sizeof why,
                 "stream_format: the reply is compressed (Content-Encoding: %s), which holds events back until the "
                 "compressor flushes",
                 encoding);
        fail(r, s, why);
        return 0;
    }
    if (status >= 200 && status < 300 && type[0] && strcmp(type, "text/event-stream") != 0) {
        snprintf(why, sizeof why, "stream_format: the reply is %s, not an event stream (text/event-stream)", type);
        fail(r, s, why);
        return 0;
    }
    s->left = length;
    s->phase = chunked ? CHUNK_SIZE : length >= 0 ? BODY_LENGTH : BODY_CLOSE;
    if (s->phase == BODY_LENGTH && length == 0) end(r, s);
    return 0;
}

/* Take bytes into s->line up to and including a '\n'; how many were taken, and whether the line
 * is complete. */
static size_t take_line(Reader *r, Stream *s, const char *d, size_t n, size_t max, int *complete) {
    const char *nl = memchr(d, '\n', n);
    size_t take = nl ? (size_t)(nl - d) + 1 : n;
    *complete = nl != NULL;
    if (s->line.len + take > max) {
        fail(r, s, "dropped: bad HTTP from the server: a header or chunk line is too long");
        return n;
    }
    if (buf_add(&s->line, d, take) < 0) fail(r, s, "dropped: the client ran out of memory");
    return take;
}

/* Bytes read from the socket, through the HTTP framing. */
static void feed(Reader *r, Stream *s, const char *d, size_t n, double t) {
    while (n > 0 && !s->ended) {
        size_t used = n;
        int complete = 0;
        switch (s->phase) {
        case HEAD: {
            size_t before = s->line.len;
            size_t take = n < HEAD_MAX + 4 ? n : HEAD_MAX + 4;
            if (buf_add(&s->line, d, take) < 0) {
                fail(r, s, "dropped: the client ran out of memory");
                return;
            }
            size_t from = before > 3 ? before - 3 : 0;
            char *stop = memmem(s->line.p + from, s->line.len - from, "\r\n\r\n", 4);
            if (stop == NULL) {
                if (s->line.len > HEAD_MAX) fail(r, s, "dropped: bad HTTP from the server: headers too long");
                used = take;
                break;
            }
            size_t head = stop + 4 - s->line.p;
            used = head - before;
            s->line.len = head;
            int informational = on_head(r, s);
            s->line.len = 0;
            (void)informational; /* a 1xx head is skipped: the real one follows */
            break;
        }
        case BODY_LENGTH:
            used = (size_t)s->left < n ? (size_t)s->left : n;
            on_body(r, s, d, used, t);
            s->left -= used;
            if (s->left == 0) end(r, s);
            break;
        case BODY_CLOSE:
            on_body(r, s, d, n, t);
            break;
        case CHUNK_SIZE:
            used = take_line(r, s, d, n, LINE_MAX_LEN, &complete);
            if (complete && !s->ended) {
                long long size = 0;
                size_t digits = 0;
                for (; digits < s->line.len && digits < 12; digits++) {
                    char c = s->line.p[digits];
                    int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
                    if (v < 0) break;
                    size = size * 16 + v;
                }
                s->line.len = 0;
                if (digits == 0 || digits == 12) {
                    fail(r, s, "dropped: bad HTTP from the server: bad chunk size");
                    break;
                }
                s->left = size;
                s->phase = size ? CHUNK_DATA : TRAILERS;
            }
            break;
        case CHUNK_DATA:
            used = (size_t)s->left < n ? (size_t)s->left : n;
            on_body(r, s, d, used, t);
            s->left -= used;
            if (s->left == 0) s->phase = CHUNK_END;
            break;
        case CHUNK_END: /* the CRLF after a chunk's data */
            used = take_line(r, s, d, n, LINE_MAX_LEN, &complete);
            if (complete) s->line.len = 0, s->phase = CHUNK_SIZE;
            break;
        case TRAILERS: /* trailer lines, then a blank one */
            used = take_line(r, s, d, n, HEAD_MAX, &complete);
            if (complete) {
                int blank = s->line.len <= 2;
                s->line.len = 0;
                if (blank) end(r, s);
            }
            break;
        }
        d += used, n -= used;
    }
}

/* The kernel's receive stamp in a message's control data, on the monotonic clock; 0 if none. */
static double stamp_of(struct msghdr *msg, double real_minus_mono) {
    for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c != NULL; c = CMSG_NXTHDR(msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
            struct timespec k;
            memcpy(&k, CMSG_DATA(c), sizeof k);
            return k.tv_sec + k.tv_nsec * 1e-9 - real_minus_mono;
        }
    }
    return 0.0;
}

/* Bytes of a later event than the last one completed: the read ended inside it. */
static int partial(const Stream *s) { return s->sse.len > 0 || (s->phase == CHUNK_SIZE && s->line.len > 0); }

/* Read what a ready stream holds. `since` is when the thread last saw this stream with nothing
 * to read (its previous epoll_wait): every byte read now arrived after it. */
static void read_stream(Reader *r, Stream *s, char *buffer, double t, double real_minus_mono, double since, int hup) {
    char control[CMSG_SPACE(sizeof(struct timespec))];
    s->in_read = s->tokens_in_read = s->bearer_in_read = s->after_token = s->after_latest = 0;
    double arrival = t;
    for (;;) {
        struct iovec into = {.iov_base = buffer, .iov_len = READ_SIZE};
        struct msghdr msg = {.msg_iov = &into, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
        ssize_t got = recvmsg(s->fd, &msg, MSG_DONTWAIT);
        if (got < 0) {
            if (errno == EINTR) continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                char why[200];
                snprintf(why, sizeof why, "dropped: [Errno %d] %s", errno, strerror(errno));
                fail(r, s, why);
            }
            break;
        }
        s->reads++, r->reads++;
        if (got == 0) { /* the server closed the connection */
            end(r, s);
            break;
        }
        double at = stamp_of(&msg, real_minus_mono);
        int stamped = at > 0.0;
        if (stamped) arrival = at < t ? at : t; /* a stamp after the read (a clock step) is not believed */
        /* A kernel that takes the option and sends no stamp (gVisor's, say): the events carry
         * when the thread woke, which nothing here bounds, so the cell must say so. */
        if (!stamped) r->unstamped++, arrival = t;
        feed(r, s, buffer, (size_t)got, arrival);
        /* A short read took all there was, unless the peer has closed: its end raises no other
         * edge, so it is read now (else the stream would wait for its stall limit). */
        if (((size_t)got < READ_SIZE && !hup) || s->ended) break;
    }
    /* A read that held a token and bytes after it stamped the token with the later bytes' arrival
     * (the kernel merges data waiting in a socket into one buffer, which keeps the newest stamp):
     * by at most the window from when the thread last saw the stream empty to the last byte's
     * stamp. Events before a stream's first token (the role event) move no token, so a read of
     * the role and the first token is no merged read; llama-server writes them together. A read
     * that ends its stream is left out: the events after the last token (finish reason, usage,
     * [DONE]) carry no token and servers write them at once after it. The read that brings a
     * stream's first token is kept apart (`first_worst`): its window bounds how far the TTFT
     * moved, which is judged against the TTFT, not against the gap between tokens. The window of
     * the read that held a stream's last token, with bytes after it, is kept too (`last_worst`,
     * taken as the stream ends): a rate ends on that token, and a read that merged two tokens
     * mid-stream (llama-server writes two at once where one ends inside a UTF-8 character)
     * moves no rate. */
    int merged = s->after_token > 0 || (s->bearer_in_read > 0 && partial(s));
    if (merged && !s->ended) {
        double from = since > s->drained ? since : s->drained;
        double window = arrival - from;
        double *worst = s->had_token ? &r->merged_worst : &r->first_worst;
        if (window > *worst) *worst = window;
        if (s->after_latest > 0 || partial(s)) s->last_window = window;
    }
    if (s->bearer_in_read > 0) s->had_token = 1;
    if (s->in_read > 0) s->last_arrival = arrival;
    /* The pace follows the gap between a stream's token events. Not between any two events: a
     * server that sends the role event at once and the first token after the prefill (vLLM) made
     * the first gap a TTFT, which set the pace to its 10 ms ceiling at each cell's start, and
     * a read held back that long stamps an event with the bytes of the next that came in it. */
    if (s->tokens_in_read > 0) {
        double gap = arrival - s->last_token;
        if (s->last_token > 0.0 && gap > 0.0) r->gap = r->gap == 0.0 ? gap : r->gap + 0.05 * (gap - r->gap);
        s->last_token = arrival;
    }
    if (r->last_any > 0.0 && arrival - r->last_any > r->read_gap_worst) r->read_gap_worst = arrival - r->last_any;
    if (r->open > 0 && arrival > r->last_any) r->last_any = arrival;
    s->last_data = t;
    s->drained = t;
}

static double pace_of(Reader *r) {
    double p = r->pace_share * r->gap;
    return p < r->pace_min ? r->pace_min : p > r->pace_max ? r->pace_max : p;
}

static void check_stalls_and_notify(Reader *r, double t) {
    for (size_t k = 0; k < r->nslots; k++) {
        Stream *s = r->slots[k];
        if (s != NULL && s->used && s->live && t - s->last_data > s->stall_s) {
            char why[80];
            snprintf(why, sizeof why, "stalled: no data for %g s", s->stall_s);
            fail(r, s, why);
        }
    }
    if (!r->notified && (r->ended_waiting || (r->ndirty && t - r->last_notify >= r->flush_s))) {
        uint64_t one = 1;
        if (write(r->notify_fd, &one, sizeof one) == sizeof one) r->notified = 1, r->last_notify = t;
    }
}

/* How long the thread may block: until the nearest stall deadline or batch flush, at most
 * BLOCK_MAX_MS; forever when nothing is open or waiting. */
static int block_ms(Reader *r, double t) {
    if (r->open == 0 && r->ndirty == 0) return -1;
    double wait = BLOCK_MAX_MS / 1000.0;
    for (size_t k = 0; k < r->nslots; k++) {
        Stream *s = r->slots[k];
        if (s != NULL && s->used && s->live && s->last_data + s->stall_s - t < wait) wait = s->last_data + s->stall_s - t;
    }
    if (r->ndirty && !r->notified && r->last_notify + r->flush_s - t < wait) wait = r->last_notify + r->flush_s - t;
    return wait <= 0 ? 0 : (int)(wait * 1000.0) + 1;
}

static void *run(void *arg) {
    Reader *r = arg;
    char *buffer = malloc(READ_SIZE);
    struct epoll_event ready[READY_MAX];
    double since = now_of(CLOCK_MONOTONIC);
    pthread_mutex_lock(&r->mu);
    int timeout = block_ms(r, since);
    pthread_mutex_unlock(&r->mu);
    while (buffer != NULL) {
        int n = epoll_wait(r->ep, ready, READY_MAX, timeout);
        /* A process stopped and continued (SIGSTOP, a debugger) comes back here with EINTR: it
         * looked at no stream, so `since` must stay when the streams were last seen empty. */
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) break;
        double t = now_of(CLOCK_MONOTONIC);
        double real_minus_mono = now_of(CLOCK_REALTIME) - t;
        int streams = 0;
        pthread_mutex_lock(&r->mu);
        if (r->stop) {
            pthread_mutex_unlock(&r->mu);
            break;
        }
        r->rounds++;
        for (int k = 0; k < n; k++) {
            if (ready[k].data.u64 == KICK_ID) {
                uint64_t v;
                if (read(r->kick_fd, &v, sizeof v) < 0) { /* nothing to take */ }
                continue;
            }
            Stream *s = find(r, ready[k].data.u64);
            int hup = (ready[k].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
            if (s != NULL && s->live) read_stream(r, s, buffer, t, real_minus_mono, since, hup), streams++;
        }
        check_stalls_and_notify(r, t);
        double pace = pace_of(r);
        timeout = block_ms(r, t);
        int paced = streams > 0 && n < READY_MAX && r->pace_share > 0.0;
        pthread_mutex_unlock(&r->mu);
        since = t;
        if (!paced) continue;
        /* Let the next events gather: one wake-up then reads several streams' events. */
        double due = t + pace;
        struct timespec until = {.tv_sec = (time_t)due, .tv_nsec = (long)((due - (time_t)due) * 1e9)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR) {
        }
        double woke = now_of(CLOCK_MONOTONIC), lag = woke - due;
        pthread_mutex_lock(&r->mu);
        if (r->open > 0) {
            if (r->nlags == r->lags_cap) {
                size_t cap = r->lags_cap ? r->lags_cap * 2 : 1024;
                double *l = realloc(r->lags, cap * sizeof *l);
                if (l != NULL) r->lags = l, r->lags_cap = cap;
            }
            if (r->nlags < r->lags_cap) r->lags[r->nlags++] = lag;
            if (lag > r->lag_worst) r->lag_worst = lag;
        }
        timeout = block_ms(r, woke);
        pthread_mutex_unlock(&r->mu);
    }
    free(buffer);
    return NULL;
}

/* ---- Python surface ---- */

static void lock(Reader *r) {
    if (pthread_mutex_trylock(&r->mu) == 0) return;
    Py_BEGIN_ALLOW_THREADS pthread_mutex_lock(&r->mu);
    Py_END_ALLOW_THREADS
}

static int Reader_init(Reader *r, PyObject *args, PyObject *kw) {
    static char *names[] = {"pace_share", "pace_min_s", "pace_max_s", "flush_s", NULL};
    r->pace_share = 0.25, r->pace_min = 0.001, r->pace_max = 0.010, r->flush_s = 0.1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|dddd", names, &r->pace_share, &r->pace_min, &r->pace_max, &r->flush_s))
        return -1;
    if (r->started) {
        PyErr_SetString(PyExc_RuntimeError, "a Reader is set up once");
        return -1;
    }
    pthread_mutex_init(&r->mu, NULL);
    r->ep = epoll_create1(EPOLL_CLOEXEC);
    r->notify_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    r->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (r->ep < 0 || r->notify_fd < 0 || r->kick_fd < 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    struct epoll_event kick = {.events = EPOLLIN, .data.u64 = KICK_ID};
    epoll_ctl(r->ep, EPOLL_CTL_ADD, r->kick_fd, &kick);
    r->last_notify = now_of(CLOCK_MONOTONIC);
    if (pthread_create(&r->thread, NULL, run, r) != 0) {
        PyErr_SetString(PyExc_OSError, "could not start the reader thread");
        return -1;
    }
    pthread_setname_np(r->thread, "rigbook-reader"); /* so top -H and /proc say which is which */
    r->started = 1;
    return 0;
}

static void stop_thread(Reader *r) {
    if (!r->started) return;
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    pthread_mutex_unlock(&r->mu);
    uint64_t one = 1;
    if (write(r->kick_fd, &one, sizeof one) < 0) { /* the thread is woken by its timeout then */ }
    Py_BEGIN_ALLOW_THREADS pthread_join(r->thread, NULL);
    Py_END_ALLOW_THREADS
    r->started = 0;
}

static void free_stream(Stream *s) {
    buf_free(&s->line), buf_free(&s->sse), buf_free(&s->error_body);
    events_free(&s->out);
}

static void Reader_dealloc(Reader *r) {
    stop_thread(r);
    for (size_t k = 0; k < r->nslots; k++) {
        if (r->slots[k]) free_stream(r->slots[k]), free(r->slots[k]);
    }
    free(r->slots), free(r->free_slots), free(r->dirty), free(r->lags);
    if (r->ep > 0) close(r->ep);
    if (r->notify_fd > 0) close(r->notify_fd);
    if (r->kick_fd > 0) close(r->kick_fd);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

static PyObject *Reader_close(Reader *r, PyObject *unused) {
    stop_thread(r);
    Py_RETURN_NONE;
}

static PyObject *Reader_fileno(Reader *r, PyObject *unused) { return PyLong_FromLong(r->notify_fd); }

static PyObject *Reader_add(Reader *r, PyObject *args) {
    int fd;
    double stall_s;
    if (!PyArg_ParseTuple(args, "id", &fd, &stall_s)) return NULL;
    if (!r->started) {
        PyErr_SetString(PyExc_RuntimeError, "the reader is closed");
        return NULL;
    }
    int on = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) != 0) return PyErr_SetFromErrno(PyExc_OSError);
    lock(r);
    size_t slot;
    if (r->nfree) {
        slot = r->free_slots[--r->nfree];
    } else {
        Stream **slots = realloc(r->slots, (r->nslots + 1) * sizeof *slots);
        size_t *free_slots = realloc(r->free_slots, (r->nslots + 1) * sizeof *free_slots);
        if (slots) r->slots = slots;
        if (free_slots) r->free_slots = free_slots;
        Stream *s = calloc(1, sizeof *s);
        if (!slots || !free_slots || !s) {
            free(s);
            pthread_mutex_unlock(&r->mu);
            return PyErr_NoMemory();
        }
        slot = r->nslots++;
        r->slots[slot] = s;
    }
    Stream *s = r->slots[slot];
    double t = now_of(CLOCK_MONOTONIC);
    s->id = ((uint64_t)(++r->generation) << 32) | slot;
    s->fd = fd, s->used = 1, s->live = 1, s->stall_s = stall_s, s->last_data = t, s->drained = t;
    /* Edge-triggered: each arrival queues the socket once, and read_stream reads until a short
     * read (once the peer has closed, EPOLLRDHUP, until its end), so nothing is left unseen;
     * level-triggered would poll every socket it had read once more at the next wait, only to
     * find it empty: work per read that buys nothing (benchmarks/runs/2026-12-06-cpu-client/
     * notes.md has the change's effect). */
    struct epoll_event watch = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.u64 = s->id};
    if (epoll_ctl(r->ep, EPOLL_CTL_ADD, fd, &watch) != 0) {
        int e = errno;
        s->used = s->live = 0;
        r->free_slots[r->nfree++] = slot;
        pthread_mutex_unlock(&r->mu);
        errno = e;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    if (r->open++ == 0) r->last_any = t;
    pthread_mutex_unlock(&r->mu);
    uint64_t one = 1; /* the thread may be blocked with no deadline: give it this stream's */
    if (write(r->kick_fd, &one, sizeof one) < 0) { /* it wakes within BLOCK_MAX_MS anyway */ }
    return PyLong_FromUnsignedLongLong(s->id);
}

/* What one stream gave since it was last taken, moved out under the lock. */
typedef struct {
    uint64_t id;
    Events out;
    int ended, saw_done, status;
    long reads;
    double ended_at;
    char error[256];
    Buf error_body;
} Taken;

static void take_stream(Reader *r, Stream *s, Taken *into) {
    into->id = s->id;
    into->out = s->out;
    memset(&s->out, 0, sizeof s->out);
    into->ended = s->ended;
    s->dirty = 0;
    if (!s->ended) return;
    into->saw_done = s->saw_done, into->status = s->status, into->reads = s->reads, into->ended_at = s->ended_at;
    memcpy(into->error, s->error, sizeof into->error);
    into->error_body = s->error_body;
    memset(&s->error_body, 0, sizeof s->error_body);
    free_stream(s);
    uint64_t id = s->id;
    memset(s, 0, sizeof *s);
    s->id = id;
    r->free_slots[r->nfree++] = (size_t)(id & 0xffffffffu);
}

static PyObject *payload_of(const Events *e, size_t k) {
    size_t start = k ? e->items[k - 1].end : 0;
    return PyBytes_FromStringAndSize(e->data.p + start, e->items[k].end - start);
}

/* Tokens k to j (not included) as one run: (times, reasoning, counts, usage), the first three as
 * native arrays (float64, uint8, int64), usage the last payload that carried some, or None. */
static PyObject *token_run(const Events *e, size_t k, size_t j) {
    size_t n = j - k;
    PyObject *times = PyBytes_FromStringAndSize(NULL, n * sizeof(double));
    PyObject *reasoning = PyBytes_FromStringAndSize(NULL, n);
    PyObject *counts = PyBytes_FromStringAndSize(NULL, n * sizeof(long long));
    if (times == NULL || reasoning == NULL || counts == NULL) goto fail;
    double *at = (double *)PyBytes_AS_STRING(times);
    char *flags = PyBytes_AS_STRING(reasoning);
    long long *count = (long long *)PyBytes_AS_STRING(counts);
    size_t last_usage = j;
    for (size_t i = k; i < j; i++) {
        at[i - k] = e->items[i].time, flags[i - k] = (char)e->items[i].reasoning, count[i - k] = e->items[i].count;
        if (e->items[i].has_usage) last_usage = i;
    }
    PyObject *usage = last_usage < j ? payload_of(e, last_usage) : Py_NewRef(Py_None);
    if (usage == NULL) goto fail;
    return Py_BuildValue("(NNNN)", times, reasoning, counts, usage);
fail:
    Py_XDECREF(times), Py_XDECREF(reasoning), Py_XDECREF(counts);
    return NULL;
}

/* A stream's events in order: (payload, time) for Python to parse, a token_run for tokens. */
static PyObject *runs_of(const Events *e) {
    PyObject *runs = PyList_New(0);
    for (size_t k = 0, j; runs != NULL && k < e->n; k = j) {
        j = k + 1;
        PyObject *run;
        if (e->items[k].token) {
            while (j < e->n && e->items[j].token) j++;
            run = token_run(e, k, j);
        } else {
            PyObject *payload = payload_of(e, k);
            run = payload ? Py_BuildValue("(Nd)", payload, e->items[k].time) : NULL;
        }
        if (run == NULL || PyList_Append(runs, run) < 0) Py_CLEAR(runs);
        Py_XDECREF(run);
    }
    return runs;
}

static PyObject *taken_tuple(Taken *t) {
    PyObject *runs = runs_of(&t->out);
    if (runs == NULL) return NULL;
    PyObject *ending;
    if (t->ended) {
        ending = Py_BuildValue("(iOzy#ld)", t->status, t->saw_done ? Py_True : Py_False, t->error[0] ? t->error : NULL,
                               t->error_body.p ? t->error_body.p : "", (Py_ssize_t)t->error_body.len, t->reads, t->ended_at);
        if (ending == NULL) {
            Py_DECREF(runs);
            return NULL;
        }
    } else {
        ending = Py_NewRef(Py_None);
    }
    return Py_BuildValue("(KNN)", (unsigned long long)t->id, runs, ending);
}

static PyObject *Reader_token_event(PyObject *module, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    TokenEvent token;
    int fast = token_event(view.buf, (size_t)view.len, &token);
    PyBuffer_Release(&view);
    if (!fast) Py_RETURN_NONE;
    return Py_BuildValue("(iLO)", token.reasoning, token.count, token.has_usage ? Py_True : Py_False);
}

static void taken_free(Taken *t) {
    events_free(&t->out);
    buf_free(&t->error_body);
}

static PyObject *Reader_take(Reader *r, PyObject *unused) {
    uint64_t v;
    if (read(r->notify_fd, &v, sizeof v) < 0) { /* not signalled: a take on the caller's own time */ }
    lock(r);
    size_t n = r->ndirty;
    Taken *taken = calloc(n ? n : 1, sizeof *taken);
    if (taken == NULL) {
        pthread_mutex_unlock(&r->mu);
        return PyErr_NoMemory();
    }
    size_t got = 0;
    for (size_t k = 0; k < n; k++) {
        Stream *s = r->slots[r->dirty[k]];
        if (s->used && s->dirty) take_stream(r, s, &taken[got++]);
    }
    r->ndirty = 0, r->notified = 0, r->ended_waiting = 0;
    pthread_mutex_unlock(&r->mu);
    PyObject *list = PyList_New(got);
    for (size_t k = 0; k < got; k++) {
        PyObject *item = list ? taken_tuple(&taken[k]) : NULL;
        if (item == NULL) Py_CLEAR(list);
        else PyList_SET_ITEM(list, k, item);
        taken_free(&taken[k]);
    }
    free(taken);
    return list;
}

static PyObject *Reader_cancel(Reader *r, PyObject *args) {
    unsigned long long id;
    if (!PyArg_ParseTuple(args, "K", &id)) return NULL;
    lock(r);
    Stream *s = find(r, id);
    if (s == NULL) {
        pthread_mutex_unlock(&r->mu);
        Py_RETURN_NONE;
    }
    end(r, s);
    Taken taken = {0};
    take_stream(r, s, &taken);
    /* the slot may still be listed as dirty: take() skips a slot no longer used */
    pthread_mutex_unlock(&r->mu);
    PyObject *item = taken_tuple(&taken);
    taken_free(&taken);
    return item;
}

static PyObject *Reader_stats(Reader *r, PyObject *args, PyObject *kw) {
    static char *names[] = {"reset", NULL};
    int reset = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|p", names, &reset)) return NULL;
    lock(r);
    PyObject *lags = PyList_New(r->nlags);
    for (size_t k = 0; lags && k < r->nlags; k++) PyList_SET_ITEM(lags, k, PyFloat_FromDouble(r->lags[k]));
    PyObject *out = lags ? Py_BuildValue("{s:N,s:d,s:d,s:d,s:d,s:d,s:l,s:l,s:l,s:d,s:d}", "lags", lags, "lag_worst", r->lag_worst,
                                         "merged_worst", r->merged_worst, "first_worst", r->first_worst, "last_worst", r->last_worst, "read_gap_worst", r->read_gap_worst,
                                         "rounds", r->rounds, "reads", r->reads, "unstamped", r->unstamped, "gap", r->gap,
                                         "pace", pace_of(r))
                         : NULL;
    if (reset) {
        r->nlags = 0, r->lag_worst = r->merged_worst = r->first_worst = r->last_worst = r->read_gap_worst = 0.0, r->rounds = r->reads = r->unstamped = 0;
    }
    pthread_mutex_unlock(&r->mu);
    return out;
}

static PyMethodDef Reader_methods[] = {
    {"fileno", (PyCFunction)Reader_fileno, METH_NOARGS, "The eventfd that is readable when take() has something."},
    {"add", (PyCFunction)Reader_add, METH_VARARGS, "add(fd, stall_s) -> id: read a connected socket whose request is written."},
    {"take", (PyCFunction)Reader_take, METH_NOARGS,
     "[(id, runs, ending)]: what streams gave since the last take, in order: (payload, time) for each event to "
     "parse, (times, reasoning, counts, usage) for each run of tokens read here; ending is None while open, else "
     "(status, saw_done, error, error_body, reads, ended_at)."},
    {"cancel", (PyCFunction)Reader_cancel, METH_VARARGS, "cancel(id): stop reading a stream; returns what take() would for it."},
    {"stats", (PyCFunction)(void (*)(void))Reader_stats, METH_VARARGS | METH_KEYWORDS, "stats(reset=False) -> dict: the thread's watch on itself."},
    {"close", (PyCFunction)Reader_close, METH_NOARGS, "Stop the thread (the sockets stay Python's)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "rigbook.bench._reader.Reader",
    .tp_basicsize = sizeof(Reader),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Reader(pace_share=0.25, pace_min_s=0.001, pace_max_s=0.010, flush_s=0.1): reads streams in a thread.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Reader_init,
    .tp_dealloc = (destructor)Reader_dealloc,
    .tp_methods = Reader_methods,
};

static PyMethodDef module_methods[] = {
    {"token_event", Reader_token_event, METH_O,
     "token_event(payload) -> (reasoning, count, has_usage) | None: how the reader reads one SSE payload; None: "
     "left to the Python parser."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_reader", "The bench client's compiled reader.", -1, module_methods};

PyMODINIT_FUNC PyInit__reader(void) {
    if (PyType_Ready(&ReaderType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&ReaderType);
    if (PyModule_AddObject(m, "Reader", (PyObject *)&ReaderType) < 0) {
        Py_DECREF(&ReaderType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
