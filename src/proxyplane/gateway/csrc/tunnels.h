/* The tunnel engine's shared declarations (see module.c for what the engine is). */
#ifndef PROXYPLANE_TUNNELS_H
#define PROXYPLANE_TUNNELS_H

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
#ifndef IP_FREEBIND
#define IP_FREEBIND 15
#endif
#ifndef IPV6_FREEBIND
#define IPV6_FREEBIND 78
#endif

enum { K_HTTP = 0, K_SOCKS = 1 };
enum { S_HTTP, S_GREET, S_AUTH, S_REQ, S_WAIT, S_CONNECTING, S_RELAY, S_CLOSING, S_DEAD };
enum { EV_HANDOFF, EV_CONNECT, EV_SOCKS_NOAUTH, EV_SOCKS_AUTH, EV_SOCKS_REQUEST, EV_CONNECT_FAILED,
       EV_CLOSED, EV_FAST_FAILED, EV_FAST_SOCKS_REQUEST };
enum { FK_OPEN = 1, FK_AUTH = 2 }; /* a cached decision: open a tunnel / SOCKS5 credentials accepted */
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

/* A decision Python made and allowed the engine to repeat (fast.c): keyed by the exact handshake bytes
 * and addresses it was made for; it counts what the tunnels it opened relayed until Python harvests. */
typedef struct fentry {
    struct fentry *hnext, *anext; /* hash chain (live entries); every entry, live or retired */
    uint64_t hash;
    unsigned char *key;
    size_t klen;
    uint32_t id, svc, auth_id;
    uint8_t kind, socks, live;
    uint32_t refs, nexits;
    struct sockaddr_storage dst;
    socklen_t dlen;
    struct sockaddr_storage *exits; /* bind addresses (port 0), picked uniformly */
    socklen_t *elens;
    unsigned long long requests, connections, up, down; /* since the last harvest */
} fentry_t;

typedef struct {
    long credits; /* descriptor-budget slots Python charged and lent to the engine, not in use */
    long open;    /* fast tunnels holding one */
    unsigned long long opened, closed; /* since the last fast_services() */
} fsvc_t;

typedef struct conn {
    uint64_t id;
    uint32_t slot;
    int cfd, ufd;
    uint8_t state, kind, c_eof, u_eof, c_shut, u_shut, socks_reply, sniff, c_parked, u_parked;
    uint32_t cmask, umask; /* epoll masks registered (cfd always registered, ufd when > 0 fd) */
    int tag;
    int cfamily;
    unsigned char caddr[16];
    int lfamily;             /* the local address the client dialed (static listeners only; 0: none) */
    unsigned char laddr[16];
    buf_t in;  /* client -> upstream: handshake bytes, then bytes not yet written upstream */
    buf_t out; /* -> client: replies and upstream bytes not yet written to the client */
    buf_t ok;  /* the reply to send when the upstream connect succeeds (HTTP CONNECT) */
    buf_t key; /* the decision key of the event Python is deciding (fast.c), until it answers */
    fentry_t *fast; /* the cached decision this tunnel was opened by: no Python event until it ends */
    fentry_t *auth; /* SOCKS5: the cached credentials decision (its request is looked up under it) */
    uint8_t auth_py; /* auth was decided by Python for this connection (fast_put AUTH): events as usual */
    uint16_t exit_idx;
    unsigned long long up, down, seen_up, seen_down, idle_total;
    double since, active;
    struct conn *prev, *next;
} conn_t;

typedef struct {
    int fd, kind, tag, sniff, open, paused; /* paused: out of epoll after EMFILE & co, back at a sweep */
    int local; /* a wildcard (static) listener: each accepted socket's local address is its exit IP */
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
    /* the decision cache (fast.c) */
    fentry_t **fb;
    uint32_t fnb, fcount;
    fentry_t *fall;
    fsvc_t *svcs;
    uint32_t nsvcs;
    uint64_t rng;
    buf_t connect_ok;
    int fast_on;
    /* zero-copy relaying (splice.c) */
    int spr, spw;                     /* the shared pipe (-1: none) */
    unsigned long long splice_after;  /* bytes a tunnel relays before it is spliced (0: never) */
    size_t splice_chunk;
} Engine;

/* conn.c */
double tn_mono_now(void);
int tn_buf_reserve(buf_t *b, size_t extra);
int tn_buf_append(buf_t *b, const char *data, size_t n);
void tn_buf_consume(buf_t *b, size_t n);
void tn_buf_free(buf_t *b);
void tn_push(Engine *e, PyObject *ev);
PyObject *tn_client_ip(conn_t *c);
PyObject *tn_local_ip(conn_t *c);
void tn_set_mask(Engine *e, conn_t *c, int up_side, uint32_t mask);
void tn_park(Engine *e, conn_t *c, int up_side);
int tn_add_fd(Engine *e, conn_t *c, int up_side, uint32_t mask);
conn_t *tn_conn_new(Engine *e, int fd);
conn_t *tn_conn_get(Engine *e, unsigned long long id);
void tn_conn_release(Engine *e, conn_t *c);
void tn_reap(Engine *e);
void tn_conn_close(Engine *e, conn_t *c, int why);
void tn_handoff(Engine *e, conn_t *c, int kind);
int tn_client_write(Engine *e, conn_t *c, const char *data, size_t n);
void tn_socks_fail(Engine *e, conn_t *c, int rep, int why);

/* relay.c */
void tn_update(Engine *e, conn_t *c);
int tn_flush_side(Engine *e, conn_t *c, int to_up);
int tn_pump(Engine *e, conn_t *c, int from_client);
void tn_start_relay(Engine *e, conn_t *c);

/* handshake.c */
void tn_read_handshake(Engine *e, conn_t *c);
void tn_advance(Engine *e, conn_t *c);

/* relay.c */
void tn_on_accept(Engine *e, listener_t *l);
void tn_resume_listeners(Engine *e);
void tn_on_connected(Engine *e, conn_t *c, uint32_t ev);
void tn_relay_event(Engine *e, conn_t *c, int up_side, uint32_t ev);
void tn_on_event(Engine *e, uint64_t data, uint32_t ev);

/* module.c */
PyObject *tn_take_pending(Engine *e);
PyObject *Engine_run(Engine *e, PyObject *Py_UNUSED(arg));
PyObject *Engine_take(Engine *e, PyObject *Py_UNUSED(arg));
PyObject *Engine_add_listener(Engine *e, PyObject *args);
PyObject *Engine_remove_listener(Engine *e, PyObject *args);

/* actions.c */
PyObject *Engine_send(Engine *e, PyObject *args);
int tn_parse_addr(const char *ip, int port, struct sockaddr_storage *sa, socklen_t *len);
PyObject *Engine_connect(Engine *e, PyObject *args);
PyObject *Engine_detach(Engine *e, PyObject *args);
PyObject *Engine_close(Engine *e, PyObject *args);
PyObject *Engine_counts(Engine *e, PyObject *Py_UNUSED(arg));
PyObject *Engine_sweep(Engine *e, PyObject *args);

/* fast.c */
int tn_dial(Engine *e, conn_t *c, const struct sockaddr_storage *dst, socklen_t dlen,
            const struct sockaddr_storage *src, socklen_t slen);
void tn_fast_key(Engine *e, conn_t *c, char kind, uint32_t extra, const void *payload, size_t n);
fentry_t *tn_fast_find(Engine *e, conn_t *c);
int tn_fast_open(Engine *e, conn_t *c, fentry_t *f);
void tn_connect_failed(Engine *e, conn_t *c, int err, int timed_out);
void tn_fast_leave(Engine *e, conn_t *c);
void tn_fast_relay_started(conn_t *c);
void tn_fast_free_all(Engine *e);
void tn_fast_free(fentry_t *f);
int tn_fast_svc(Engine *e, uint32_t svc);
PyObject *Engine_fast_enable(Engine *e, PyObject *args);
PyObject *Engine_fast_put(Engine *e, PyObject *args);
PyObject *Engine_fast_forget(Engine *e, PyObject *args);
PyObject *Engine_fast_lease(Engine *e, PyObject *args);
PyObject *Engine_fast_take(Engine *e, PyObject *args);
PyObject *Engine_fast_services(Engine *e, PyObject *Py_UNUSED(arg));
PyObject *Engine_fast_counts(Engine *e, PyObject *Py_UNUSED(arg));
PyObject *Engine_fast_cut(Engine *e, PyObject *args);
void tn_fast_forget_svc(Engine *e, uint32_t svc);

/* splice.c */
ssize_t tn_splice_move(Engine *e, int src, int dst, buf_t *q);
PyObject *Engine_set_splice(Engine *e, PyObject *args);
void tn_splice_free(Engine *e);

/* module.c */
PyObject *Engine_close_all(Engine *e, PyObject *Py_UNUSED(arg));
PyObject *Engine_stats(Engine *e, PyObject *Py_UNUSED(arg));

#endif
