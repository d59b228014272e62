/*
 * _tunnels: the gateway's tunnel engine (Linux, epoll).
 *
 * It moves bytes; Python decides. The engine accepts on the gateway's HTTP and SOCKS5 listening
 * sockets, frames the handshake (a CONNECT head; the SOCKS5 greeting, RFC 1929 credentials and
 * request), opens the upstream connection Python asks for (bound to the exit IP Python chose) and
 * relays both directions with byte counts. Everything that needs a decision (credentials, whitelist,
 * routing, limits, destination policy, DNS, metering, error replies) becomes an event for Python:
 * `run()` returns them as tuples and Python answers with `send()`, `connect()` or `detach()`.
 * Anything the engine does not handle itself (a plain HTTP request, a malformed greeting) is handed
 * to Python whole, before the engine has written a byte: Python's protocol classes serve it.
 *
 * The engine owns one epoll instance; its fd is registered with the asyncio loop, which calls
 * `run()` when it is readable. No threads, no locks: every call runs on the loop's thread.
 *
 * Events (tuples, first item the kind):
 *   (HANDOFF, tag, fd, data, kind)         the connection is Python's now (fd + bytes read so far)
 *   (CONNECT, id, tag, head, client_ip)    a CONNECT head (without the final CRLFCRLF)
 *   (SOCKS_NOAUTH, id, tag, client_ip)     greeting offered no-auth only: whitelist decision
 *   (SOCKS_AUTH, id, tag, login, password) RFC 1929 credentials (bytes)
 *   (SOCKS_REQUEST, id, cmd, atyp, host, port)  host: str for IP literals, bytes for a domain name
 *   (CONNECT_FAILED, id, errno, timed_out) the upstream connect failed; Python replies
 *   (CLOSED, id, up, down, why, kind)      the connection ended (once per id, unless detached)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24
#endif

enum { K_HTTP = 0, K_SOCKS = 1 };
enum { S_HTTP, S_GREET, S_AUTH, S_REQ, S_WAIT, S_CONNECTING, S_RELAY, S_CLOSING, S_DEAD };
enum { EV_HANDOFF, EV_CONNECT, EV_SOCKS_NOAUTH, EV_SOCKS_AUTH, EV_SOCKS_REQUEST, EV_CONNECT_FAILED,
       EV_CLOSED };
enum { WHY_DONE, WHY_GONE, WHY_HANDSHAKE_TIMEOUT, WHY_IDLE, WHY_PROTOCOL, WHY_REFUSED, WHY_SHUTDOWN };
enum { NEXT_CLOSE = 0, NEXT_AUTH = 1, NEXT_REQUEST = 2 };

#define SIDE_CLIENT 0u
#define SIDE_UP 1u
#define SIDE_LISTENER 2u
#define MAX_EVENTS 256
#define HS_LIMIT_EXTRA 65536 /* client bytes held while Python decides (beyond the head) */

typedef struct {
    char *p;
    size_t len, cap;
} buf_t;

typedef struct conn {
    uint64_t id;
    uint32_t slot;
    int cfd, ufd;
    uint8_t state, kind, c_eof, u_eof, c_shut, u_shut, socks_reply, sniff, c_parked, u_parked;
    uint32_t cmask, umask; /* epoll masks registered (cfd always registered, ufd when > 0 fd) */
    int tag;
    int cfamily;
    unsigned char caddr[16];
    buf_t in;  /* client -> upstream: handshake bytes, then bytes not yet written upstream */
    buf_t out; /* -> client: replies and upstream bytes not yet written to the client */
    buf_t ok;  /* the reply to send when the upstream connect succeeds (HTTP CONNECT) */
    unsigned long long up, down, seen_up, seen_down, idle_total;
    double since, active;
    struct conn *prev, *next;
} conn_t;

typedef struct {
    int fd, kind, tag, sniff, open;
} listener_t;

typedef struct {
    PyObject_HEAD
    int epfd;
    conn_t **slots;
    uint32_t nslots;
    uint32_t *free_slots;
    uint32_t nfree;
    conn_t **dead;
    uint32_t ndead, dead_cap;
    uint64_t gen;
    listener_t *listeners;
    int nlisteners;
    conn_t all; /* list sentinel */
    long nconns;
    PyObject *pending;
    char *scratch;
    size_t scratch_size, max_head;
    PyObject *timeout_reply;
    double now;
} Engine;

static double mono_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* -- buffers -- */
static int buf_reserve(buf_t *b, size_t extra) {
    if (b->len + extra <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->len + extra) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

static int buf_append(buf_t *b, const char *data, size_t n) {
    if (buf_reserve(b, n) < 0) return -1;
    memcpy(b->p + b->len, data, n);
    b->len += n;
    return 0;
}

static void buf_consume(buf_t *b, size_t n) {
    if (n >= b->len) {
        b->len = 0;
        return;
    }
    memmove(b->p, b->p + n, b->len - n);
    b->len -= n;
}

static void buf_free(buf_t *b) {
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* -- events -- */
static void push(Engine *e, PyObject *ev) {
    if (ev == NULL) {
        PyErr_Clear();
        return;
    }
    PyList_Append(e->pending, ev);
    Py_DECREF(ev);
}

static PyObject *client_ip(conn_t *c) {
    char text[INET6_ADDRSTRLEN];
    if (!inet_ntop(c->cfamily, c->caddr, text, sizeof text)) text[0] = 0;
    return PyUnicode_FromString(text);
}

/* -- epoll bookkeeping -- */
static void set_mask(Engine *e, conn_t *c, int up_side, uint32_t mask) {
    uint32_t *cur = up_side ? &c->umask : &c->cmask;
    uint8_t *parked = up_side ? &c->u_parked : &c->c_parked;
    int fd = up_side ? c->ufd : c->cfd;
    if (fd < 0) return;
    if (*parked) { /* out of the epoll set (see park); back in once there is something to wait for */
        if (mask == 0) return;
        struct epoll_event ev;
        ev.events = mask;
        ev.data.u64 = ((uint64_t)c->slot << 2) | (up_side ? SIDE_UP : SIDE_CLIENT);
        epoll_ctl(e->epfd, EPOLL_CTL_ADD, fd, &ev);
        *parked = 0;
        *cur = mask;
        return;
    }
    if (*cur == mask) return;
    struct epoll_event ev;
    ev.events = mask;
    ev.data.u64 = ((uint64_t)c->slot << 2) | (up_side ? SIDE_UP : SIDE_CLIENT);
    epoll_ctl(e->epfd, EPOLL_CTL_MOD, fd, &ev);
    *cur = mask;
}

/* A hung-up socket reports EPOLLHUP whatever its mask: take it out of the epoll set while there is
 * nothing to do on it (its EOF was read, or reading is paused for backpressure). */
static void park(Engine *e, conn_t *c, int up_side) {
    uint8_t *parked = up_side ? &c->u_parked : &c->c_parked;
    if (*parked) return;
    epoll_ctl(e->epfd, EPOLL_CTL_DEL, up_side ? c->ufd : c->cfd, NULL);
    *parked = 1;
    if (up_side)
        c->umask = 0;
    else
        c->cmask = 0;
}

static int add_fd(Engine *e, conn_t *c, int up_side, uint32_t mask) {
    struct epoll_event ev;
    ev.events = mask;
    ev.data.u64 = ((uint64_t)c->slot << 2) | (up_side ? SIDE_UP : SIDE_CLIENT);
    if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, up_side ? c->ufd : c->cfd, &ev) < 0) return -1;
    if (up_side)
        c->umask = mask;
    else
        c->cmask = mask;
    return 0;
}

/* -- connections -- */
static conn_t *conn_new(Engine *e, int fd) {
    uint32_t slot;
    if (e->nfree) {
        slot = e->free_slots[--e->nfree];
    } else {
        uint32_t n = e->nslots ? e->nslots * 2 : 1024;
        conn_t **slots = realloc(e->slots, n * sizeof *slots);
        if (!slots) return NULL;
        uint32_t *fs = realloc(e->free_slots, n * sizeof *fs);
        if (!fs) {
            e->slots = slots;
            return NULL;
        }
        e->slots = slots;
        e->free_slots = fs;
        for (uint32_t i = e->nslots; i < n; i++) slots[i] = NULL;
        for (uint32_t i = n; i > e->nslots + 1; i--) fs[e->nfree++] = i - 1;
        slot = e->nslots;
        e->nslots = n;
    }
    conn_t *c = calloc(1, sizeof *c);
    if (!c) {
        e->free_slots[e->nfree++] = slot;
        return NULL;
    }
    c->slot = slot;
    c->id = (++e->gen << 32) | slot;
    c->cfd = fd;
    c->ufd = -1;
    c->since = c->active = e->now;
    e->slots[slot] = c;
    c->next = e->all.next;
    c->prev = &e->all;
    e->all.next->prev = c;
    e->all.next = c;
    e->nconns++;
    return c;
}

static conn_t *conn_get(Engine *e, unsigned long long id) {
    uint32_t slot = (uint32_t)(id & 0xffffffffu);
    if (slot >= e->nslots) return NULL;
    conn_t *c = e->slots[slot];
    if (!c || c->id != id || c->state == S_DEAD) return NULL;
    return c;
}

/* Unlink; the slot and memory are released after the current epoll batch (stale events name it). */
static void conn_release(Engine *e, conn_t *c) {
    c->state = S_DEAD;
    c->prev->next = c->next;
    c->next->prev = c->prev;
    c->prev = c->next = c;
    e->nconns--;
    buf_free(&c->in);
    buf_free(&c->out);
    buf_free(&c->ok);
    if (e->ndead == e->dead_cap) {
        uint32_t cap = e->dead_cap ? e->dead_cap * 2 : 256;
        conn_t **d = realloc(e->dead, cap * sizeof *d);
        if (!d) { /* leak the slot rather than reuse it unsafely */
            return;
        }
        e->dead = d;
        e->dead_cap = cap;
    }
    e->dead[e->ndead++] = c;
}

static void reap(Engine *e) {
    for (uint32_t i = 0; i < e->ndead; i++) {
        conn_t *c = e->dead[i];
        e->slots[c->slot] = NULL;
        e->free_slots[e->nfree++] = c->slot;
        free(c);
    }
    e->ndead = 0;
}

static void conn_close(Engine *e, conn_t *c, int why) {
    if (c->state == S_DEAD) return;
    if (c->cfd >= 0) close(c->cfd);
    if (c->ufd >= 0) close(c->ufd);
    c->cfd = c->ufd = -1;
    push(e, Py_BuildValue("(iKKKii)", EV_CLOSED, (unsigned long long)c->id, c->up, c->down, why, c->kind));
    conn_release(e, c);
}

/* The connection leaves the engine for Python: its client fd and the bytes read so far. */
static void handoff(Engine *e, conn_t *c, int kind) {
    epoll_ctl(e->epfd, EPOLL_CTL_DEL, c->cfd, NULL);
    PyObject *data = PyBytes_FromStringAndSize(c->in.p ? c->in.p : "", (Py_ssize_t)c->in.len);
    push(e, Py_BuildValue("(iiiNi)", EV_HANDOFF, c->tag, c->cfd, data, kind));
    c->cfd = -1;
    conn_release(e, c);
}

/* Write to the client (queueing what does not fit); -1 when the connection was closed. */
static int client_write(Engine *e, conn_t *c, const char *data, size_t n) {
    if (c->out.len == 0) {
        ssize_t w = send(c->cfd, data, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno != EAGAIN && errno != EINTR) {
                conn_close(e, c, WHY_GONE);
                return -1;
            }
            w = 0;
        }
        data += w;
        n -= (size_t)w;
    }
    if (n && buf_append(&c->out, data, n) < 0) {
        conn_close(e, c, WHY_GONE);
        return -1;
    }
    return 0;
}

static void socks_fail(Engine *e, conn_t *c, int rep, int why) {
    char r[10] = {5, (char)rep, 0, 1, 0, 0, 0, 0, 0, 0};
    send(c->cfd, r, sizeof r, MSG_NOSIGNAL);
    conn_close(e, c, why);
}

/* Wanted epoll masks from the state; closes a finished relay. */
static void update(Engine *e, conn_t *c) {
    if (c->state == S_DEAD) return;
    uint32_t cm = 0, um = 0;
    switch (c->state) {
    case S_RELAY:
        if (c->c_eof && c->u_eof && c->in.len == 0 && c->out.len == 0) {
            conn_close(e, c, WHY_DONE);
            return;
        }
        if (!c->c_eof && c->in.len == 0) cm |= EPOLLIN;
        if (c->out.len) cm |= EPOLLOUT;
        if (!c->u_eof && c->out.len == 0) um |= EPOLLIN;
        if (c->in.len) um |= EPOLLOUT;
        set_mask(e, c, 1, um);
        break;
    case S_CLOSING:
        if (c->out.len == 0) {
            conn_close(e, c, WHY_REFUSED);
            return;
        }
        cm = EPOLLOUT;
        break;
    case S_CONNECTING:
    case S_WAIT:
        if (!c->c_eof && c->in.len < e->max_head + HS_LIMIT_EXTRA) cm |= EPOLLIN;
        if (c->out.len) cm |= EPOLLOUT;
        break;
    default: /* reading a handshake */
        cm = EPOLLIN | (c->out.len ? EPOLLOUT : 0);
    }
    set_mask(e, c, 0, cm);
}

/* Flush queued bytes to one side; -1 when the connection was closed. */
static int flush_side(Engine *e, conn_t *c, int to_up) {
    buf_t *b = to_up ? &c->in : &c->out;
    int fd = to_up ? c->ufd : c->cfd;
    while (b->len) {
        ssize_t w = send(fd, b->p, b->len, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EAGAIN || errno == EINTR) return 0;
            conn_close(e, c, c->state == S_RELAY ? WHY_DONE : WHY_GONE);
            return -1;
        }
        buf_consume(b, (size_t)w);
    }
    if (c->state == S_RELAY) { /* an EOF waiting for the queue to drain */
        if (to_up && c->c_eof && !c->u_shut) {
            shutdown(c->ufd, SHUT_WR);
            c->u_shut = 1;
        } else if (!to_up && c->u_eof && !c->c_shut) {
            shutdown(c->cfd, SHUT_WR);
            c->c_shut = 1;
        }
    }
    return 0;
}

/* Relay: read from one side, write to the other; the rest is queued and reading pauses. */
static int pump(Engine *e, conn_t *c, int from_client) {
    int src = from_client ? c->cfd : c->ufd, dst = from_client ? c->ufd : c->cfd;
    buf_t *q = from_client ? &c->in : &c->out;
    for (int round = 0; round < 4 && q->len == 0; round++) {
        ssize_t n = recv(src, e->scratch, e->scratch_size, 0);
        if (n > 0) {
            if (from_client)
                c->up += (unsigned long long)n;
            else
                c->down += (unsigned long long)n;
            ssize_t w = send(dst, e->scratch, (size_t)n, MSG_NOSIGNAL);
            if (w < 0) {
                if (errno != EAGAIN && errno != EINTR) {
                    conn_close(e, c, WHY_DONE);
                    return -1;
                }
                w = 0;
            }
            if (w < n && buf_append(q, e->scratch + w, (size_t)(n - w)) < 0) {
                conn_close(e, c, WHY_DONE);
                return -1;
            }
            if ((size_t)n < e->scratch_size) break;
            continue;
        }
        if (n == 0) {
            if (from_client) {
                c->c_eof = 1;
                if (c->in.len == 0 && !c->u_shut) {
                    shutdown(c->ufd, SHUT_WR);
                    c->u_shut = 1;
                }
            } else {
                c->u_eof = 1;
                if (c->out.len == 0 && !c->c_shut) {
                    shutdown(c->cfd, SHUT_WR);
                    c->c_shut = 1;
                }
            }
            break;
        }
        if (errno == EAGAIN || errno == EINTR) break;
        conn_close(e, c, WHY_DONE);
        return -1;
    }
    return 0;
}

/* The upstream connection is open: reply to the client, pass on what it sent early, relay. */
static void start_relay(Engine *e, conn_t *c) {
    c->state = S_RELAY;
    c->active = e->now;
    if (c->socks_reply) {
        struct sockaddr_storage sa;
        socklen_t sl = sizeof sa;
        unsigned char r[22] = {5, 0, 0, 1};
        size_t n = 10;
        if (getsockname(c->ufd, (struct sockaddr *)&sa, &sl) == 0 && sa.ss_family == AF_INET6) {
            struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&sa;
            r[3] = 4;
            memcpy(r + 4, &s6->sin6_addr, 16);
            memcpy(r + 20, &s6->sin6_port, 2);
            n = 22;
        } else if (sa.ss_family == AF_INET) {
            struct sockaddr_in *s4 = (struct sockaddr_in *)&sa;
            memcpy(r + 4, &s4->sin_addr, 4);
            memcpy(r + 8, &s4->sin_port, 2);
        }
        if (client_write(e, c, (const char *)r, n) < 0) return;
    } else if (c->ok.len) {
        if (client_write(e, c, c->ok.p, c->ok.len) < 0) return;
        buf_free(&c->ok);
    }
    if (c->in.len) {
        c->up += c->in.len;
        if (flush_side(e, c, 1) < 0) return;
    }
    if (c->c_eof && c->in.len == 0 && !c->u_shut) {
        shutdown(c->ufd, SHUT_WR);
        c->u_shut = 1;
    }
    update(e, c);
}

/* -- handshake framing -- */
static void advance(Engine *e, conn_t *c);

static void read_handshake(Engine *e, conn_t *c) {
    size_t limit = e->max_head + HS_LIMIT_EXTRA;
    for (;;) {
        if (c->in.len >= limit) break;
        if (buf_reserve(&c->in, 4096) < 0) {
            conn_close(e, c, WHY_GONE);
            return;
        }
        size_t room = c->in.cap - c->in.len;
        if (room > limit - c->in.len) room = limit - c->in.len;
        ssize_t n = recv(c->cfd, c->in.p + c->in.len, room, 0);
        if (n > 0) {
            c->in.len += (size_t)n;
            if ((size_t)n < room) break;
            continue;
        }
        if (n == 0) {
            if (c->state == S_WAIT || c->state == S_CONNECTING) { /* Python still decides: keep going */
                c->c_eof = 1;
                break;
            }
            conn_close(e, c, WHY_GONE);
            return;
        }
        if (errno == EAGAIN || errno == EINTR) break;
        conn_close(e, c, WHY_GONE);
        return;
    }
    if (c->state != S_WAIT && c->state != S_CONNECTING) advance(e, c);
    if (c->state != S_DEAD) update(e, c);
}

static void advance(Engine *e, conn_t *c) {
    static const char connect_prefix[] = "CONNECT ";
    for (;;) {
        unsigned char *p = (unsigned char *)c->in.p;
        size_t n = c->in.len;
        switch (c->state) {
        case S_HTTP: {
            if (n == 0) return;
            if (p[0] == 5 && c->sniff) {
                c->state = S_GREET;
                c->kind = K_SOCKS;
                continue;
            }
            size_t k = n < 8 ? n : 8;
            if (memcmp(p, connect_prefix, k) != 0) {
                handoff(e, c, K_HTTP);
                return;
            }
            if (n < 8) return;
            char *end = memmem(p, n, "\r\n\r\n", 4);
            if (!end) {
                if (n > e->max_head) handoff(e, c, K_HTTP);
                return;
            }
            size_t idx = (size_t)(end - (char *)p);
            if (idx > e->max_head) {
                handoff(e, c, K_HTTP);
                return;
            }
            PyObject *head = PyBytes_FromStringAndSize((char *)p, (Py_ssize_t)idx);
            push(e, Py_BuildValue("(iKiNN)", EV_CONNECT, (unsigned long long)c->id, c->tag, head,
                                  client_ip(c)));
            buf_consume(&c->in, idx + 4);
            c->state = S_WAIT;
            return;
        }
        case S_GREET: {
            if (n == 0) return;
            if (p[0] != 5 || (n >= 2 && p[1] == 0)) { /* nothing written yet: Python's parser answers */
                handoff(e, c, K_SOCKS);
                return;
            }
            if (n < 2 || n < 2u + p[1]) return;
            int userpass = 0, noauth = 0;
            for (unsigned i = 0; i < p[1]; i++) {
                if (p[2 + i] == 2) userpass = 1;
                if (p[2 + i] == 0) noauth = 1;
            }
            buf_consume(&c->in, 2u + p[1]);
            if (userpass) {
                if (client_write(e, c, "\x05\x02", 2) < 0) return;
                c->state = S_AUTH;
                continue;
            }
            if (noauth) {
                push(e, Py_BuildValue("(iKiN)", EV_SOCKS_NOAUTH, (unsigned long long)c->id, c->tag,
                                      client_ip(c)));
                c->state = S_WAIT;
                return;
            }
            send(c->cfd, "\x05\xff", 2, MSG_NOSIGNAL);
            conn_close(e, c, WHY_REFUSED);
            return;
        }
        case S_AUTH: {
            if (n == 0) return;
            if (p[0] != 1) {
                send(c->cfd, "\x01\x01", 2, MSG_NOSIGNAL);
                conn_close(e, c, WHY_PROTOCOL);
                return;
            }
            if (n < 3 || n < 3u + p[1]) return;
            size_t ulen = p[1], plen = p[2 + ulen];
            if (n < 3 + ulen + plen) return;
            PyObject *login = PyBytes_FromStringAndSize((char *)p + 2, (Py_ssize_t)ulen);
            PyObject *password = PyBytes_FromStringAndSize((char *)p + 3 + ulen, (Py_ssize_t)plen);
            push(e, Py_BuildValue("(iKiNN)", EV_SOCKS_AUTH, (unsigned long long)c->id, c->tag, login,
                                  password));
            buf_consume(&c->in, 3 + ulen + plen);
            c->state = S_WAIT;
            return;
        }
        case S_REQ: {
            if (n == 0) return;
            if (p[0] != 5) {
                socks_fail(e, c, 1, WHY_PROTOCOL);
                return;
            }
            if (n < 4) return;
            int cmd = p[1], atyp = p[3];
            if (cmd != 1 && cmd != 3) {
                socks_fail(e, c, 7, WHY_PROTOCOL);
                return;
            }
            PyObject *host;
            size_t end;
            if (atyp == 1 || atyp == 4) {
                size_t alen = atyp == 1 ? 4 : 16;
                end = 4 + alen;
                if (n < end + 2) return;
                char text[INET6_ADDRSTRLEN];
                inet_ntop(atyp == 1 ? AF_INET : AF_INET6, p + 4, text, sizeof text);
                host = PyUnicode_FromString(text);
            } else if (atyp == 3) {
                if (n < 5) return;
                end = 5 + (size_t)p[4];
                if (n < end + 2) return;
                host = PyBytes_FromStringAndSize((char *)p + 5, (Py_ssize_t)p[4]);
            } else {
                socks_fail(e, c, 8, WHY_PROTOCOL);
                return;
            }
            int port = (p[end] << 8) | p[end + 1];
            push(e, Py_BuildValue("(iKiiNi)", EV_SOCKS_REQUEST, (unsigned long long)c->id, cmd, atyp,
                                  host, port));
            buf_consume(&c->in, end + 2);
            c->state = S_WAIT;
            return;
        }
        default:
            return;
        }
    }
}

/* -- event dispatch -- */
static void on_accept(Engine *e, listener_t *l) {
    for (int i = 0; i < 64; i++) {
        struct sockaddr_storage sa;
        socklen_t sl = sizeof sa;
        int fd = accept4(l->fd, (struct sockaddr *)&sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            return;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        conn_t *c = conn_new(e, fd);
        if (!c) {
            close(fd);
            return;
        }
        c->tag = l->tag;
        c->kind = (uint8_t)l->kind;
        c->sniff = (uint8_t)l->sniff;
        c->state = l->kind == K_SOCKS ? S_GREET : S_HTTP;
        if (sa.ss_family == AF_INET6) {
            c->cfamily = AF_INET6;
            memcpy(c->caddr, &((struct sockaddr_in6 *)&sa)->sin6_addr, 16);
        } else {
            c->cfamily = AF_INET;
            memcpy(c->caddr, &((struct sockaddr_in *)&sa)->sin_addr, 4);
        }
        if (add_fd(e, c, 0, EPOLLIN) < 0) {
            close(fd);
            c->cfd = -1;
            conn_release(e, c);
            continue;
        }
        read_handshake(e, c); /* the client usually sent its first bytes already */
    }
}

static void on_connected(Engine *e, conn_t *c, uint32_t ev) {
    int err = 0;
    if (ev & (EPOLLERR | EPOLLHUP)) { /* writable without an error means connected: no syscall then */
        socklen_t len = sizeof err;
        if (getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) err = errno;
        if (!err) err = ECONNREFUSED;
    } else if (!(ev & EPOLLOUT)) {
        return;
    }
    if (err == EINPROGRESS || err == EALREADY) return;
    if (err) {
        close(c->ufd);
        c->ufd = -1;
        c->umask = 0;
        c->state = S_WAIT;
        push(e, Py_BuildValue("(iKii)", EV_CONNECT_FAILED, (unsigned long long)c->id, err, 0));
        update(e, c);
        return;
    }
    start_relay(e, c);
}

/* A relay socket is ready: ``up_side`` says which one. */
static void relay_event(Engine *e, conn_t *c, int up_side, uint32_t ev) {
    uint8_t *eof = up_side ? &c->u_eof : &c->c_eof;
    buf_t *to_this = up_side ? &c->in : &c->out;    /* queued for this socket */
    buf_t *from_this = up_side ? &c->out : &c->in;  /* read from it, queued for the other */
    if (ev & EPOLLERR) { /* reset: whatever is queued cannot be delivered */
        conn_close(e, c, WHY_DONE);
        return;
    }
    if ((ev & EPOLLOUT) && to_this->len && flush_side(e, c, up_side) < 0) return;
    if ((ev & (EPOLLIN | EPOLLHUP)) && !*eof && from_this->len == 0 && pump(e, c, !up_side) < 0) return;
    if (ev & EPOLLHUP) { /* both directions of this socket are shut */
        if (to_this->len) {
            conn_close(e, c, WHY_DONE);
            return;
        }
        if (*eof || from_this->len) park(e, c, up_side);
    }
    update(e, c);
}

static void on_event(Engine *e, uint64_t data, uint32_t ev) {
    uint32_t side = (uint32_t)(data & 3u), index = (uint32_t)(data >> 2);
    if (side == SIDE_LISTENER) {
        if ((int)index < e->nlisteners && e->listeners[index].open) on_accept(e, &e->listeners[index]);
        return;
    }
    if (index >= e->nslots) return;
    conn_t *c = e->slots[index];
    if (!c || c->state == S_DEAD) return;
    if (side == SIDE_UP) {
        if (c->state == S_CONNECTING) {
            on_connected(e, c, ev);
            return;
        }
        if (c->state == S_RELAY) relay_event(e, c, 1, ev);
        return;
    }
    switch (c->state) {
    case S_RELAY:
        relay_event(e, c, 0, ev);
        return;
    case S_CLOSING:
        if (ev & (EPOLLERR | EPOLLHUP)) {
            conn_close(e, c, WHY_REFUSED);
            return;
        }
        if (flush_side(e, c, 0) < 0) return;
        update(e, c);
        return;
    default:
        if ((ev & EPOLLOUT) && c->out.len && flush_side(e, c, 0) < 0) return;
        if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
            if (c->c_eof) { /* waiting on Python after the client's EOF: nothing more to read */
                if (ev & (EPOLLHUP | EPOLLERR)) conn_close(e, c, WHY_GONE);
                else update(e, c);
                return;
            }
            read_handshake(e, c);
        } else {
            update(e, c);
        }
    }
}

/* -- Python methods -- */
static PyObject *take_pending(Engine *e) {
    if (PyList_GET_SIZE(e->pending) == 0) Py_RETURN_NONE;
    PyObject *out = e->pending;
    e->pending = PyList_New(0);
    if (!e->pending) {
        e->pending = out;
        return NULL;
    }
    return out;
}

static PyObject *Engine_run(Engine *e, PyObject *Py_UNUSED(arg)) {
    struct epoll_event evs[MAX_EVENTS];
    e->now = mono_now();
    reap(e);
    for (int rounds = 0; rounds < 8; rounds++) {
        int n = epoll_wait(e->epfd, evs, MAX_EVENTS, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int i = 0; i < n; i++) on_event(e, evs[i].data.u64, evs[i].events);
        reap(e);
        if (n < MAX_EVENTS) break;
    }
    return take_pending(e);
}

static PyObject *Engine_take(Engine *e, PyObject *Py_UNUSED(arg)) {
    reap(e);
    return take_pending(e);
}

static PyObject *Engine_fileno(Engine *e, PyObject *Py_UNUSED(arg)) { return PyLong_FromLong(e->epfd); }

static PyObject *Engine_add_listener(Engine *e, PyObject *args) {
    int fd, kind, tag, sniff;
    if (!PyArg_ParseTuple(args, "iiip", &fd, &kind, &tag, &sniff)) return NULL;
    listener_t *ls = realloc(e->listeners, (size_t)(e->nlisteners + 1) * sizeof *ls);
    if (!ls) return PyErr_NoMemory();
    e->listeners = ls;
    int index = e->nlisteners++;
    ls[index] = (listener_t){fd, kind, tag, sniff, 1};
    struct epoll_event ev;
    ev.events = EPOLLIN;
    ev.data.u64 = ((uint64_t)index << 2) | SIDE_LISTENER;
    if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        ls[index].open = 0;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    Py_RETURN_NONE;
}

static PyObject *Engine_remove_listener(Engine *e, PyObject *args) {
    int fd;
    if (!PyArg_ParseTuple(args, "i", &fd)) return NULL;
    for (int i = 0; i < e->nlisteners; i++) {
        if (e->listeners[i].open && e->listeners[i].fd == fd) {
            e->listeners[i].open = 0;
            epoll_ctl(e->epfd, EPOLL_CTL_DEL, fd, NULL);
        }
    }
    Py_RETURN_NONE;
}

/* send(id, data, next): write to the client, then close (0), read credentials (1) or a request (2) */
static PyObject *Engine_send(Engine *e, PyObject *args) {
    unsigned long long id;
    Py_buffer data;
    int next;
    if (!PyArg_ParseTuple(args, "Ky*i", &id, &data, &next)) return NULL;
    conn_t *c = conn_get(e, id);
    if (!c || (c->state != S_WAIT)) {
        PyBuffer_Release(&data);
        Py_RETURN_FALSE;
    }
    int rc = client_write(e, c, data.buf, (size_t)data.len);
    PyBuffer_Release(&data);
    if (rc < 0) Py_RETURN_TRUE;
    if (next == NEXT_CLOSE) {
        c->state = S_CLOSING;
        c->since = e->now;
        update(e, c);
        Py_RETURN_TRUE;
    }
    c->state = next == NEXT_AUTH ? S_AUTH : S_REQ;
    c->since = e->now;
    if (c->c_eof) {
        conn_close(e, c, WHY_GONE);
        Py_RETURN_TRUE;
    }
    advance(e, c);
    update(e, c);
    Py_RETURN_TRUE;
}

static int parse_addr(const char *ip, int port, struct sockaddr_storage *sa, socklen_t *len) {
    memset(sa, 0, sizeof *sa);
    if (strchr(ip, ':')) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)sa;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, ip, &s6->sin6_addr) != 1) return -1;
        *len = sizeof *s6;
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)sa;
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)port);
        if (inet_pton(AF_INET, ip, &s4->sin_addr) != 1) return -1;
        *len = sizeof *s4;
    }
    return 0;
}

/* connect(id, ip, port, bind_ip, ok_reply or None): None = answer with a SOCKS5 success reply */
static PyObject *Engine_connect(Engine *e, PyObject *args) {
    unsigned long long id;
    const char *ip, *bind_ip;
    int port;
    PyObject *ok;
    if (!PyArg_ParseTuple(args, "KsisO", &id, &ip, &port, &bind_ip, &ok)) return NULL;
    conn_t *c = conn_get(e, id);
    if (!c || c->state != S_WAIT) Py_RETURN_FALSE;
    struct sockaddr_storage dst, src;
    socklen_t dlen, slen = 0;
    if (parse_addr(ip, port, &dst, &dlen) < 0) {
        PyErr_Format(PyExc_ValueError, "not an IP address: %s", ip);
        return NULL;
    }
    if (*bind_ip && parse_addr(bind_ip, 0, &src, &slen) < 0) {
        PyErr_Format(PyExc_ValueError, "not an IP address: %s", bind_ip);
        return NULL;
    }
    if (ok == Py_None) {
        c->socks_reply = 1;
    } else {
        char *p;
        Py_ssize_t n;
        if (PyBytes_AsStringAndSize(ok, &p, &n) < 0) return NULL;
        c->ok.len = 0;
        if (buf_append(&c->ok, p, (size_t)n) < 0) return PyErr_NoMemory();
    }
    c->since = e->now = mono_now();
    int fd = socket(dst.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int err = 0;
    if (fd < 0) {
        err = errno;
    } else {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (slen) {
            setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
            if (bind(fd, (struct sockaddr *)&src, slen) < 0) err = errno;
        }
        if (!err && connect(fd, (struct sockaddr *)&dst, dlen) < 0 && errno != EINPROGRESS) err = errno;
    }
    if (err) {
        if (fd >= 0) close(fd);
        push(e, Py_BuildValue("(iKii)", EV_CONNECT_FAILED, id, err, 0));
        Py_RETURN_TRUE;
    }
    c->ufd = fd;
    c->state = S_CONNECTING;
    if (add_fd(e, c, 1, EPOLLOUT) < 0) {
        err = errno;
        close(fd);
        c->ufd = -1;
        c->state = S_WAIT;
        push(e, Py_BuildValue("(iKii)", EV_CONNECT_FAILED, id, err, 0));
    }
    Py_RETURN_TRUE;
}

/* detach(id) -> (fd, buffered bytes): the connection is Python's from now on */
static PyObject *Engine_detach(Engine *e, PyObject *args) {
    unsigned long long id;
    if (!PyArg_ParseTuple(args, "K", &id)) return NULL;
    conn_t *c = conn_get(e, id);
    if (!c || c->state != S_WAIT) Py_RETURN_NONE;
    epoll_ctl(e->epfd, EPOLL_CTL_DEL, c->cfd, NULL);
    PyObject *res = Py_BuildValue("(iy#)", c->cfd, c->in.p ? c->in.p : "", (Py_ssize_t)c->in.len);
    if (!res) return NULL;
    c->cfd = -1;
    conn_release(e, c);
    return res;
}

/* counts() -> [(id, up, down)] for relays whose totals changed since the last call */
static PyObject *Engine_counts(Engine *e, PyObject *Py_UNUSED(arg)) {
    PyObject *out = PyList_New(0);
    if (!out) return NULL;
    for (conn_t *c = e->all.next; c != &e->all; c = c->next) {
        if (c->up == c->seen_up && c->down == c->seen_down) continue;
        c->seen_up = c->up;
        c->seen_down = c->down;
        PyObject *t = Py_BuildValue("(KKK)", (unsigned long long)c->id, c->up, c->down);
        if (!t || PyList_Append(out, t) < 0) {
            Py_XDECREF(t);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(t);
    }
    return out;
}

/* sweep(handshake_timeout, connect_timeout, idle_timeout): close what waited too long */
static PyObject *Engine_sweep(Engine *e, PyObject *args) {
    double hs, ct, idle;
    if (!PyArg_ParseTuple(args, "ddd", &hs, &ct, &idle)) return NULL;
    double now = e->now = mono_now();
    conn_t *c = e->all.next;
    while (c != &e->all) {
        conn_t *next = c->next;
        switch (c->state) {
        case S_HTTP:
        case S_GREET:
        case S_AUTH:
        case S_REQ:
            if (now - c->since >= hs) {
                if (c->state == S_HTTP && c->in.len && e->timeout_reply)
                    send(c->cfd, PyBytes_AS_STRING(e->timeout_reply),
                         (size_t)PyBytes_GET_SIZE(e->timeout_reply), MSG_NOSIGNAL);
                conn_close(e, c, WHY_HANDSHAKE_TIMEOUT);
            }
            break;
        case S_CLOSING:
            if (now - c->since >= hs) conn_close(e, c, WHY_REFUSED);
            break;
        case S_CONNECTING:
            if (now - c->since >= ct) {
                epoll_ctl(e->epfd, EPOLL_CTL_DEL, c->ufd, NULL);
                close(c->ufd);
                c->ufd = -1;
                c->umask = 0;
                c->state = S_WAIT;
                push(e, Py_BuildValue("(iKii)", EV_CONNECT_FAILED, (unsigned long long)c->id, ETIMEDOUT, 1));
            }
            break;
        case S_RELAY: {
            unsigned long long total = c->up + c->down;
            if (total != c->idle_total) {
                c->idle_total = total;
                c->active = now;
            } else if (now - c->active >= idle) {
                conn_close(e, c, WHY_IDLE);
            }
            break;
        }
        default:
            break;
        }
        c = next;
    }
    Py_RETURN_NONE;
}

static PyObject *Engine_close_all(Engine *e, PyObject *Py_UNUSED(arg)) {
    while (e->all.next != &e->all) conn_close(e, e->all.next, WHY_SHUTDOWN);
    reap(e);
    return take_pending(e);
}

static PyObject *Engine_stats(Engine *e, PyObject *Py_UNUSED(arg)) {
    long relays = 0;
    for (conn_t *c = e->all.next; c != &e->all; c = c->next)
        if (c->state == S_RELAY) relays++;
    return Py_BuildValue("{s:l,s:l}", "connections", e->nconns, "relays", relays);
}

static int Engine_init(Engine *e, PyObject *args, PyObject *kw) {
    static char *names[] = {"max_head", "buffer_size", "timeout_reply", NULL};
    Py_ssize_t max_head = 16384, size = 65536;
    PyObject *timeout_reply = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|nnS", names, &max_head, &size, &timeout_reply)) return -1;
    if (max_head < 16 || size < 1024) {
        PyErr_SetString(PyExc_ValueError, "max_head >= 16 and buffer_size >= 1024");
        return -1;
    }
    e->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (e->epfd < 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    e->all.next = e->all.prev = &e->all;
    e->pending = PyList_New(0);
    e->scratch = malloc((size_t)size);
    if (!e->pending || !e->scratch) {
        PyErr_NoMemory();
        return -1;
    }
    e->scratch_size = (size_t)size;
    e->max_head = (size_t)max_head;
    Py_XINCREF(timeout_reply);
    e->timeout_reply = timeout_reply;
    e->now = mono_now();
    return 0;
}

static PyObject *Engine_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    Engine *e = (Engine *)type->tp_alloc(type, 0);
    if (e) e->epfd = -1;
    return (PyObject *)e;
}

static void Engine_dealloc(Engine *e) {
    if (e->all.next) {
        while (e->all.next != &e->all) {
            conn_t *c = e->all.next;
            if (c->cfd >= 0) close(c->cfd);
            if (c->ufd >= 0) close(c->ufd);
            c->cfd = c->ufd = -1;
            conn_release(e, c);
        }
        reap(e);
    }
    if (e->epfd >= 0) close(e->epfd);
    free(e->slots);
    free(e->free_slots);
    free(e->dead);
    free(e->listeners);
    free(e->scratch);
    Py_XDECREF(e->pending);
    Py_XDECREF(e->timeout_reply);
    Py_TYPE(e)->tp_free((PyObject *)e);
}

static PyMethodDef Engine_methods[] = {
    {"run", (PyCFunction)Engine_run, METH_NOARGS, "Process ready sockets; the events (or None)."},
    {"take", (PyCFunction)Engine_take, METH_NOARGS, "Events queued by send/connect/sweep (or None)."},
    {"fileno", (PyCFunction)Engine_fileno, METH_NOARGS, "The epoll fd (readable when run() has work)."},
    {"add_listener", (PyCFunction)Engine_add_listener, METH_VARARGS, "add_listener(fd, kind, tag, sniff)"},
    {"remove_listener", (PyCFunction)Engine_remove_listener, METH_VARARGS, "remove_listener(fd)"},
    {"send", (PyCFunction)Engine_send, METH_VARARGS, "send(id, data, next)"},
    {"connect", (PyCFunction)Engine_connect, METH_VARARGS, "connect(id, ip, port, bind_ip, ok_reply)"},
    {"detach", (PyCFunction)Engine_detach, METH_VARARGS, "detach(id) -> (fd, data) or None"},
    {"counts", (PyCFunction)Engine_counts, METH_NOARGS, "[(id, up, down)] changed since last call"},
    {"sweep", (PyCFunction)Engine_sweep, METH_VARARGS, "sweep(handshake, connect, idle timeouts)"},
    {"close_all", (PyCFunction)Engine_close_all, METH_NOARGS, "Close every connection; the events."},
    {"stats", (PyCFunction)Engine_stats, METH_NOARGS, "{'connections': n, 'relays': n}"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject EngineType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "proxyplane.gateway._tunnels.Engine",
    .tp_basicsize = sizeof(Engine),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The tunnel engine: accepts, frames handshakes, connects and relays; Python decides.",
    .tp_new = Engine_new,
    .tp_init = (initproc)Engine_init,
    .tp_dealloc = (destructor)Engine_dealloc,
    .tp_methods = Engine_methods,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_tunnels", "The gateway's tunnel engine.", -1,
                                    NULL};

PyMODINIT_FUNC PyInit__tunnels(void) {
    if (PyType_Ready(&EngineType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&EngineType);
    if (PyModule_AddObject(m, "Engine", (PyObject *)&EngineType) < 0) return NULL;
    PyModule_AddIntConstant(m, "HANDOFF", EV_HANDOFF);
    PyModule_AddIntConstant(m, "CONNECT", EV_CONNECT);
    PyModule_AddIntConstant(m, "SOCKS_NOAUTH", EV_SOCKS_NOAUTH);
    PyModule_AddIntConstant(m, "SOCKS_AUTH", EV_SOCKS_AUTH);
    PyModule_AddIntConstant(m, "SOCKS_REQUEST", EV_SOCKS_REQUEST);
    PyModule_AddIntConstant(m, "CONNECT_FAILED", EV_CONNECT_FAILED);
    PyModule_AddIntConstant(m, "CLOSED", EV_CLOSED);
    PyModule_AddIntConstant(m, "KIND_HTTP", K_HTTP);
    PyModule_AddIntConstant(m, "KIND_SOCKS", K_SOCKS);
    PyModule_AddIntConstant(m, "NEXT_CLOSE", NEXT_CLOSE);
    PyModule_AddIntConstant(m, "NEXT_AUTH", NEXT_AUTH);
    PyModule_AddIntConstant(m, "NEXT_REQUEST", NEXT_REQUEST);
    PyModule_AddIntConstant(m, "WHY_DONE", WHY_DONE);
    PyModule_AddIntConstant(m, "WHY_GONE", WHY_GONE);
    PyModule_AddIntConstant(m, "WHY_HANDSHAKE_TIMEOUT", WHY_HANDSHAKE_TIMEOUT);
    PyModule_AddIntConstant(m, "WHY_IDLE", WHY_IDLE);
    PyModule_AddIntConstant(m, "WHY_PROTOCOL", WHY_PROTOCOL);
    PyModule_AddIntConstant(m, "WHY_REFUSED", WHY_REFUSED);
    PyModule_AddIntConstant(m, "WHY_SHUTDOWN", WHY_SHUTDOWN);
    return m;
}
