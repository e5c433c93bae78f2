/* The floor of any client on this machine: a C program that opens N streams to the synthetic
 * server, reads every event as it arrives (epoll, one read per ready socket, one clock reading
 * per read) and does nothing else. What it costs is the kernel's share of a streamed token,
 * which no client in any language avoids while it reads each event as it arrives.
 *
 *     cc -O2 -o c_reader c_reader.c && ./c_reader PORT STREAMS TOKENS
 *
 * Prints one line: "cpu_s=<user+system seconds> reads=<reads> wakes=<epoll returns>". */
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

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s PORT STREAMS TOKENS\n", argv[0]);
        return 2;
    }
    int port = atoi(argv[1]), streams = atoi(argv[2]), tokens = atoi(argv[3]);
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
    struct rusage before, after;
    getrusage(RUSAGE_SELF, &before);
    int poller = epoll_create1(0);
    for (int i = 0; i < streams; i++) {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port)};
        inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
        if (s < 0 || connect(s, (struct sockaddr *)&to, sizeof to) != 0 ||
            write(s, request, length) != length) {
            perror("c_reader: connect or send");
            return 1;
        }
        fcntl(s, F_SETFL, O_NONBLOCK);
        struct epoll_event watch = {.events = EPOLLIN, .data.fd = s};
        epoll_ctl(poller, EPOLL_CTL_ADD, s, &watch);
    }
    static char buffer[65536];
    struct epoll_event ready[1024];
    struct timespec now;
    long reads = 0, wakes = 0;
    for (int open = streams; open > 0;) {
        int n = epoll_wait(poller, ready, 1024, -1);
        wakes++;
        for (int k = 0; k < n; k++) {
            ssize_t got = read(ready[k].data.fd, buffer, sizeof buffer);
            clock_gettime(CLOCK_MONOTONIC, &now);
            reads++;
            if (got < 0 && errno == EAGAIN) continue;
            if (got <= 0) {
                close(ready[k].data.fd);
                open--;
            }
        }
    }
    getrusage(RUSAGE_SELF, &after);
    double cpu = seconds(after.ru_utime) - seconds(before.ru_utime) + seconds(after.ru_stime) -
                 seconds(before.ru_stime);
    printf("cpu_s=%.6f reads=%ld wakes=%ld\n", cpu, reads, wakes);
    return 0;
}
