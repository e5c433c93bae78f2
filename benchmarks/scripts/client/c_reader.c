/* The floor of any client on this machine, and what a compiled client would cost.
 *
 * Mode `read`: a C program that opens N streams to the synthetic server, reads every event as it
 * arrives (epoll, one read per ready socket, one clock reading per read) and does nothing else.
 * What it costs is the kernel's share of a streamed token, which no client in any language
 * avoids while it reads each event as it arrives.
 *
 * Mode `parse`: also does a bench client's work, in C: the reply's headers, a chunked body when
 * the server sends one, SSE events split on bytes, each event scanned for a token (non-empty
 * `content` or `reasoning_content`), `completion_tokens` and `[DONE]`, and one timestamp per
 * token-bearing event kept per stream. Its stall watch needs no timer: each read is `recvmsg`
 * with the kernel's receive stamp (SO_TIMESTAMPNS), so how long data waited for the client is
 * measured at every read (`worst_wait_ms`). The JSON scan is not a parser; it is enough for the
 * synthetic server's replies and for costing, not for rigbook.
 *
 *     cc -O2 -o c_reader c_reader.c && ./c_reader PORT STREAMS TOKENS [read|parse]
 *
 * Prints one line: "cpu_s=<user+system seconds> reads=<reads> wakes=<epoll returns>", and in
 * parse mode also "events=<token-bearing events> usage=<last completion_tokens summed>
 * done=<streams that sent [DONE]> worst_wait_ms=<longest a read's data waited>". */
#define _GNU_SOURCE /* memmem */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double seconds(struct timeval t) { return t.tv_sec + t.tv_usec / 1e6; }

static double stamp(struct timespec t) { return t.tv_sec + t.tv_nsec / 1e9; }

/* One stream's parse state: headers, then the body (chunked or not), then SSE events. */
struct stream {
    int headers_done, chunked;
    long chunk_left; /* body bytes left in the current chunk; -1: reading a size line */
    char *pending;   /* bytes of an event not yet ended by a blank line */
    size_t pending_len, pending_cap;
    char line[64]; /* a chunk-size line, across reads */
    size_t line_len;
    double *times; /* arrival of each token-bearing event */
    long events, times_cap, usage, done;
};

static void keep(struct stream *s, const char *data, size_t n) {
    if (s->pending_len + n > s->pending_cap) {
        s->pending_cap = (s->pending_len + n) * 2;
        s->pending = realloc(s->pending, s->pending_cap);
    }
    memcpy(s->pending + s->pending_len, data, n);
    s->pending_len += n;
}

/* The value after `"key":` in an event (spaces skipped), or NULL. */
static const char *field(const char *event, size_t n, const char *key) {
    size_t k = strlen(key);
    const char *end = event + n;
    for (const char *p = event; p + k <= end; p++) {
        p = memchr(p, key[0], end - p);
        if (p == NULL || p + k > end) return NULL;
        if (memcmp(p, key, k) == 0) {
            for (p += k; p < end && *p == ' ';) p++;
            return p;
        }
    }
    return NULL;
}

/* Whether the value at `v` is a non-empty string. */
static int text(const char *v, const char *end) { return v && v + 1 < end && v[0] == '"' && v[1] != '"'; }

static void on_event(struct stream *s, const char *event, size_t n, double now) {
    if (n < 6 || memcmp(event, "data: ", 6) != 0) return;
    event += 6, n -= 6;
    if (n == 6 && memcmp(event, "[DONE]", 6) == 0) {
        s->done = 1;
        return;
    }
    const char *end = event + n;
    if (text(field(event, n, "\"content\":"), end) ||
        text(field(event, n, "\"reasoning_content\":"), end)) {
        if (s->events == s->times_cap) {
            s->times_cap = s->times_cap ? s->times_cap * 2 : 256;
            s->times = realloc(s->times, s->times_cap * sizeof *s->times);
        }
        s->times[s->events++] = now;
    }
    const char *usage = field(event, n, "\"completion_tokens\":");
    if (usage != NULL) s->usage = strtol(usage, NULL, 10);
}

/* SSE: body bytes end events at a blank line. */
static void on_body(struct stream *s, const char *data, size_t n, double now) {
    keep(s, data, n);
    size_t start = 0;
    for (;;) {
        char *end = memmem(s->pending + start, s->pending_len - start, "\n\n", 2);
        if (end == NULL) break;
        on_event(s, s->pending + start, end - (s->pending + start), now);
        start = end + 2 - s->pending;
    }
    memmove(s->pending, s->pending + start, s->pending_len - start);
    s->pending_len -= start;
}

static void on_read(struct stream *s, const char *data, size_t n, double now) {
    if (!s->headers_done) { /* held in `pending` until their blank line comes */
        keep(s, data, n);
        const char *end = memmem(s->pending, s->pending_len, "\r\n\r\n", 4);
        if (end == NULL) return;
        size_t head = end + 4 - s->pending, rest = s->pending_len - head;
        s->chunked = memmem(s->pending, head, "chunked", 7) != NULL;
        s->headers_done = 1;
        s->chunk_left = -1;
        char *body = malloc(rest + 1);
        memcpy(body, s->pending + head, rest);
        s->pending_len = 0;
        on_read(s, body, rest, now);
        free(body);
        return;
    }
    if (!s->chunked) {
        on_body(s, data, n, now);
        return;
    }
    while (n > 0) {
        if (s->chunk_left < 0) { /* a size line, possibly split across reads */
            const char *nl = memchr(data, '\n', n);
            size_t take = nl ? (size_t)(nl - data + 1) : n;
            if (s->line_len + take < sizeof s->line) memcpy(s->line + s->line_len, data, take);
            s->line_len += take;
            data += take, n -= take;
            if (nl == NULL) continue;
            s->line[s->line_len < sizeof s->line ? s->line_len : sizeof s->line - 1] = 0;
            s->line_len = 0;
            if (s->line[0] == '\r') continue; /* the CRLF after a chunk's data */
            s->chunk_left = strtol(s->line, NULL, 16);
            continue;
        }
        size_t take = (size_t)s->chunk_left < n ? (size_t)s->chunk_left : n;
        on_body(s, data, take, now);
        data += take, n -= take;
        s->chunk_left -= take;
        if (s->chunk_left == 0) s->chunk_left = -1;
    }
}

int main(int argc, char **argv) {
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: %s PORT STREAMS TOKENS [read|parse]\n", argv[0]);
        return 2;
    }
    int port = atoi(argv[1]), streams = atoi(argv[2]), tokens = atoi(argv[3]);
    int parse = argc == 5 && strcmp(argv[4], "parse") == 0;
    char body[512], request[1024];
    snprintf(body, sizeof body,
             "{\"model\":\"synthetic\",\"messages\":[{\"role\":\"user\",\"content\":\"Count.\"}],"
             "\"max_tokens\":%d,\"stream\":true,\"stream_options\":{\"include_usage\":true,"
             "\"continuous_usage_stats\":true}}",
             tokens);
    int length = snprintf(request, sizeof request,
                          "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                          "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                          strlen(body), body);
    struct stream *state = calloc(streams, sizeof *state);
    int *slot = calloc(65536, sizeof *slot); /* fd -> stream */
    struct rusage before, after;
    getrusage(RUSAGE_SELF, &before);
    int poller = epoll_create1(0), on = 1;
    for (int i = 0; i < streams; i++) {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port)};
        inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
        if (s < 0 || s >= 65536 || connect(s, (struct sockaddr *)&to, sizeof to) != 0 ||
            write(s, request, length) != length) {
            perror("c_reader: connect or send");
            return 1;
        }
        if (parse) setsockopt(s, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
        fcntl(s, F_SETFL, O_NONBLOCK);
        slot[s] = i;
        struct epoll_event watch = {.events = EPOLLIN, .data.fd = s};
        epoll_ctl(poller, EPOLL_CTL_ADD, s, &watch);
    }
    static char buffer[65536];
    char control[CMSG_SPACE(sizeof(struct timespec))];
    struct epoll_event ready[1024];
    struct timespec now, wall;
    long reads = 0, wakes = 0;
    double worst_wait = 0.0;
    for (int open = streams; open > 0;) {
        int n = epoll_wait(poller, ready, 1024, -1);
        wakes++;
        for (int k = 0; k < n; k++) {
            int fd = ready[k].data.fd;
            ssize_t got;
            if (parse) {
                struct iovec into = {.iov_base = buffer, .iov_len = sizeof buffer};
                struct msghdr message = {.msg_iov = &into,
                                         .msg_iovlen = 1,
                                         .msg_control = control,
                                         .msg_controllen = sizeof control};
                got = recvmsg(fd, &message, 0);
                clock_gettime(CLOCK_MONOTONIC, &now);
                struct cmsghdr *c = CMSG_FIRSTHDR(&message);
                if (got > 0 && c != NULL && c->cmsg_type == SCM_TIMESTAMPNS) {
                    struct timespec arrived;
                    memcpy(&arrived, CMSG_DATA(c), sizeof arrived);
                    clock_gettime(CLOCK_REALTIME, &wall);
                    double wait = stamp(wall) - stamp(arrived);
                    if (wait > worst_wait) worst_wait = wait;
                }
                if (got > 0) on_read(&state[slot[fd]], buffer, got, stamp(now));
            } else {
                got = read(fd, buffer, sizeof buffer);
                clock_gettime(CLOCK_MONOTONIC, &now);
            }
            reads++;
            if (got < 0 && errno == EAGAIN) continue;
            if (got <= 0) {
                close(fd);
                open--;
            }
        }
    }
    getrusage(RUSAGE_SELF, &after);
    double cpu = seconds(after.ru_utime) - seconds(before.ru_utime) + seconds(after.ru_stime) -
                 seconds(before.ru_stime);
    printf("cpu_s=%.6f reads=%ld wakes=%ld", cpu, reads, wakes);
    if (parse) {
        long events = 0, usage = 0, done = 0;
        for (int i = 0; i < streams; i++) {
            events += state[i].events, usage += state[i].usage, done += state[i].done;
        }
        printf(" events=%ld usage=%ld done=%ld worst_wait_ms=%.3f", events, usage, done,
               worst_wait * 1000.0);
    }
    printf("\n");
    return 0;
}
