/* The common case of an SSE payload, read in C: one token and nothing else.
 *
 * Why: parsing every event in Python (orjson, then a dict walk) was most of the event loop's
 * cost per token with the compiled reader. Nearly every event of a stream is a token: one choice
 * whose delta holds content or reasoning, perhaps the usage so far. `token_event` recognises
 * exactly those and says what `rigbook.openai.stream.apply_event` would do with them; the reader then hands them
 * to Python as arrays, a run of tokens at a time.
 *
 * It is not a second parser of what a server may send. It answers 1 only where it is sure that
 * orjson accepts the payload and that apply_event would add one token and change nothing else
 * but the usage; anything else (a finish reason, an error, a duplicated key, a string escape it
 * does not decode, a number it does not need, invalid UTF-8...) answers 0 and the payload goes
 * to the Python parser as before. tests/bench/test_event_parse.py holds the two to that on a
 * corpus of real servers' events and on fuzzed ones. */
#include "_reader_events.h"

#include <string.h>

#define DEPTH_MAX 64 /* deeper is left to orjson, whose limit is higher */

typedef struct {
    const unsigned char *p, *end;
} Scan;

static void skip_ws(Scan *s) {
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r')) s->p++;
}

static int eat(Scan *s, char c) {
    skip_ws(s);
    if (s->p < s->end && *s->p == c) {
        s->p++;
        return 1;
    }
    return 0;
}

static int peek(Scan *s) {
    skip_ws(s);
    return s->p < s->end ? *s->p : -1;
}

static int hex_digit(unsigned c) {
    return c >= '0' && c <= '9' ? (int)(c - '0') : c >= 'a' && c <= 'f' ? (int)(c - 'a' + 10) : c >= 'A' && c <= 'F' ? (int)(c - 'A' + 10) : -1;
}

/* A string at its opening quote: 0 when valid JSON in valid UTF-8, a surrogate escaped only as
 * a pair (orjson refuses one alone). *len: its bytes between the quotes; *escaped: whether it
 * holds a backslash. */
static int string(Scan *s, size_t *len, int *escaped) {
    /* printable ASCII but the quote and the backslash (GNU C's ranges; a later index wins) */
    static const unsigned char ascii[256] = {[0x20 ... 0x7f] = 1, ['"'] = 0, ['\\'] = 0};
    const unsigned char *q = s->p + 1, *end = s->end;
    *escaped = 0;
    while (q < end) {
        while (q < end && ascii[*q]) q++; /* most of any string: one look a byte */
        if (q == end) break;
        unsigned c = *q;
        if (c == '"') {
            *len = (size_t)(q - (s->p + 1));
            s->p = q + 1;
            return 0;
        }
        if (c < 0x20) return -1;
        if (c == '\\') {
            *escaped = 1;
            if (++q >= end) return -1;
            if (*q == 'u') {
                unsigned v = 0;
                if (end - q < 5) return -1;
                for (int k = 1; k <= 4; k++) {
                    int h = hex_digit(q[k]);
                    if (h < 0) return -1;
                    v = v * 16 + (unsigned)h;
                }
                q += 5;
                if (v >= 0xDC00 && v <= 0xDFFF) return -1; /* a low surrogate alone */
                if (v >= 0xD800 && v <= 0xDBFF) {           /* a high one: its low one must follow */
                    unsigned low = 0;
                    if (end - q < 6 || q[0] != '\\' || q[1] != 'u') return -1;
                    for (int k = 2; k <= 5; k++) {
                        int h = hex_digit(q[k]);
                        if (h < 0) return -1;
                        low = low * 16 + (unsigned)h;
                    }
                    if (low < 0xDC00 || low > 0xDFFF) return -1;
                    q += 6;
                }
            } else if (*q != 0 && strchr("\"\\/bfnrt", *q) != NULL) {
                q++;
            } else {
                return -1;
            }
            continue;
        }
        if (c < 0x80) {
            q++;
            continue;
        }
        /* UTF-8 past ASCII: no overlong form, no surrogate, nothing past U+10FFFF */
        size_t more;
        unsigned lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) {
            more = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            more = 2;
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            more = 3;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        } else {
            return -1;
        }
        if ((size_t)(end - q) <= more || q[1] < lo || q[1] > hi) return -1;
        for (size_t k = 2; k <= more; k++)
            if (q[k] < 0x80 || q[k] > 0xBF) return -1;
        q += more + 1;
    }
    return -1;
}

static int is_digit(const Scan *s, const unsigned char *q) { return q < s->end && *q >= '0' && *q <= '9'; }

/* A number: 0 when valid JSON and surely finite as a double (orjson refuses one that is not).
 * *count: its value where it is a whole number of at most 18 digits written plainly, else -1. */
static int number(Scan *s, long long *count) {
    const unsigned char *q = s->p;
    int plain = 1;
    if (q < s->end && *q == '-') plain = 0, q++;
    const unsigned char *digits = q;
    if (q < s->end && *q == '0') {
        q++;
    } else {
        if (!is_digit(s, q)) return -1;
        while (is_digit(s, q)) q++;
    }
    if (q - digits > 18) return -1;
    long long v = 0;
    for (const unsigned char *d = digits; d < q; d++) v = v * 10 + (*d - '0');
    if (q < s->end && *q == '.') {
        const unsigned char *f = ++q;
        while (is_digit(s, q)) q++;
        if (q == f || q - f > 30) return -1;
        plain = 0;
    }
    if (q < s->end && (*q == 'e' || *q == 'E')) {
        q++;
        int down = q < s->end && *q == '-';
        if (q < s->end && (*q == '+' || *q == '-')) q++;
        const unsigned char *e = q;
        int exponent = 0;
        while (is_digit(s, q)) exponent = exponent * 10 + (*q++ - '0');
        if (q == e || q - e > 3 || (!down && exponent > 280)) return -1; /* 18 digits e280 < 1e308 */
        plain = 0;
    }
    *count = plain ? v : -1;
    s->p = q;
    return 0;
}

static int literal(Scan *s, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0) return -1;
    s->p += n;
    return 0;
}

/* Called for each member of an object with the scan at its value, which it must consume. */
typedef int (*Member)(void *ctx, const unsigned char *key, size_t len, int escaped, Scan *s, int depth);

static int value(Scan *s, int depth);

static int any_member(void *ctx, const unsigned char *key, size_t len, int escaped, Scan *s, int depth) {
    (void)ctx, (void)key, (void)len, (void)escaped;
    return value(s, depth);
}

static int object(Scan *s, int depth, Member member, void *ctx) {
    if (depth > DEPTH_MAX || !eat(s, '{')) return -1;
    if (eat(s, '}')) return 0;
    for (;;) {
        if (peek(s) != '"') return -1;
        const unsigned char *key = s->p + 1;
        size_t len;
        int escaped;
        if (string(s, &len, &escaped) != 0 || !eat(s, ':')) return -1;
        skip_ws(s);
        if (member(ctx, key, len, escaped, s, depth + 1) != 0) return -1;
        if (eat(s, ',')) continue;
        return eat(s, '}') ? 0 : -1;
    }
}

static int value(Scan *s, int depth) {
    if (depth > DEPTH_MAX) return -1;
    size_t len;
    int escaped;
    long long count;
    switch (peek(s)) {
    case '{':
        return object(s, depth, any_member, NULL);
    case '[':
        s->p++;
        if (eat(s, ']')) return 0;
        for (;;) {
            if (value(s, depth + 1) != 0) return -1;
            if (eat(s, ',')) continue;
            return eat(s, ']') ? 0 : -1;
        }
    case '"':
        return string(s, &len, &escaped);
    case 't':
        return literal(s, "true");
    case 'f':
        return literal(s, "false");
    case 'n':
        return literal(s, "null");
    case -1:
        return -1;
    default:
        return number(s, &count);
    }
}

static int is_key(const unsigned char *key, size_t len, int escaped, const char *name) {
    return !escaped && len == strlen(name) && memcmp(key, name, len) == 0;
}

/* A member apply_event reads: seen once at most (a duplicated one is read by its last value,
 * which is left to orjson), and never under an escaped key that might spell its name. */
#define READS(name, flag)                                  \
    if (is_key(key, len, escaped, name)) {                 \
        if (c->flag++) return -1;                          \
        return read_##flag(c, s, depth);                   \
    }

typedef struct {
    int delta, content, reasoning_content, reasoning, tool_calls, finish_reason, members;
    int content_set, reasoning_set; /* a non-empty string: what Python finds truthy */
} Choice;

/* A delta's text: a string (non-empty or not) or null; anything else is left to Python. */
static int text(Scan *s, int *set) {
    if (peek(s) == 'n') return literal(s, "null");
    if (peek(s) != '"') return -1;
    size_t len;
    int escaped;
    if (string(s, &len, &escaped) != 0) return -1;
    if (len > 0) *set = 1;
    return 0;
}

static int read_content(Choice *c, Scan *s, int depth) { return text(s, &c->content_set); }
static int read_reasoning_content(Choice *c, Scan *s, int depth) {
    int set = 0;
    if (text(s, &set) != 0) return -1;
    if (set) c->reasoning_set = 1;
    return 0;
}
static int read_reasoning(Choice *c, Scan *s, int depth) { return read_reasoning_content(c, s, depth); }
/* A tool call's delta is a token to apply_event, of content, whatever other choices carry: one
 * that is not null is left to Python. */
static int read_tool_calls(Choice *c, Scan *s, int depth) { return literal(s, "null"); }

static int delta_member(void *ctx, const unsigned char *key, size_t len, int escaped, Scan *s, int depth) {
    Choice *c = ctx;
    c->members++;
    if (escaped) return -1;
    READS("content", content)
    READS("reasoning_content", reasoning_content)
    READS("reasoning", reasoning)
    READS("tool_calls", tool_calls)
    return value(s, depth);
}

static int read_delta(Choice *c, Scan *s, int depth) {
    if (peek(s) == 'n') return literal(s, "null");
    return object(s, depth, delta_member, c);
}

static int read_finish_reason(Choice *c, Scan *s, int depth) { return literal(s, "null"); }

static int choice_member(void *ctx, const unsigned char *key, size_t len, int escaped, Scan *s, int depth) {
    if (escaped) return -1;
    Choice *c = ctx;
    READS("delta", delta)
    READS("finish_reason", finish_reason)
    return value(s, depth);
}

typedef struct {
    int choices, error, usage, completion_tokens, prompt_tokens, completion_tokens_details;
    int has_usage; /* a usage object, not null */
    int token; /* -1: none yet; else 1 reasoning, 0 content */
    long long count;
} Event;

static int read_completion_tokens(Event *e, Scan *s, int depth) {
    if (peek(s) == 'n') return literal(s, "null");
    long long count;
    if (number(s, &count) != 0 || count < 0) return -1;
    e->count = count;
    return 0;
}

static int read_prompt_tokens(Event *e, Scan *s, int depth) {
    long long count;
    return number(s, &count) != 0 || count < 0 ? -1 : 0;
}

static int read_completion_tokens_details(Event *e, Scan *s, int depth) { return literal(s, "null"); }

static int usage_member(void *ctx, const unsigned char *key, size_t len, int escaped, Scan *s, int depth) {
    if (escaped) return -1;
    Event *c = ctx;
    READS("completion_tokens", completion_tokens)
    READS("prompt_tokens", prompt_tokens)
    READS("completion_tokens_details", completion_tokens_details)
    return value(s, depth);
}

/* Usage with a prompt count (an event without one keeps the request's earlier count, which a run
 * of tokens does not track), and no details (their reasoning count, likewise). */
static int read_usage(Event *e, Scan *s, int depth) {
    if (peek(s) == 'n') return literal(s, "null"); /* no usage: Python finds null falsy */
    if (object(s, depth, usage_member, e) != 0 || !e->prompt_tokens) return -1;
    e->has_usage = 1;
    return 0;
}

static int read_error(Event *e, Scan *s, int depth) { return literal(s, "null"); }

static int read_choices(Event *e, Scan *s, int depth) {
    if (peek(s) == 'n') return literal(s, "null");
    if (!eat(s, '[')) return -1;
    if (eat(s, ']')) return 0;
    for (;;) {
        Choice c = {0};
        if (peek(s) != '{' || object(s, depth + 1, choice_member, &c) != 0) return -1;
        /* apply_event: the first choice with a non-empty delta that bears a token */
        if (c.members > 0 && e->token < 0 && (c.reasoning_set || c.content_set)) e->token = c.reasoning_set;
        if (eat(s, ',')) continue;
        return eat(s, ']') ? 0 : -1;
    }
}

static int event_member(void *ctx, const unsigned char *key, size_t len, int escaped, Scan *s, int depth) {
    if (escaped) return -1;
    Event *c = ctx;
    READS("choices", choices)
    READS("error", error)
    READS("usage", usage)
    /* a response's own timings (llama-server's drafted and accepted tokens): apply_event's */
    if (is_key(key, len, escaped, "timings")) return -1;
    return value(s, depth);
}

/* 1 when `payload` is a JSON object that apply_event reads as one token and nothing else but the
 * usage so far; 0 when it is anything else, for the Python parser to read. */
int token_event(const char *payload, size_t n, TokenEvent *out) {
    Scan s = {(const unsigned char *)payload, (const unsigned char *)payload + n};
    Event e = {0};
    e.token = -1, e.count = -1;
    if (object(&s, 0, event_member, &e) != 0) return 0;
    skip_ws(&s);
    if (s.p != s.end || e.token < 0) return 0;
    out->reasoning = e.token;
    out->has_usage = e.has_usage;
    out->count = e.has_usage ? e.count : -1;
    return 1;
}
