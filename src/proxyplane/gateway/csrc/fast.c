/*
 * The decision cache: decisions Python made, repeated by the engine without an event.
 *
 * When Python has decided a handshake (a CONNECT head, SOCKS5 credentials or a no-auth greeting, a SOCKS5
 * request) and the decision depends on nothing but those bytes, the addresses and the platform's tables
 * (docs/decisions/connection-setup.md says which), it stores it with fast_put() under the exact key the
 * engine built for that event: the kind, the listener tag, the local and client addresses and the bytes
 * the client sent. The next connection with the same key is served here: the engine answers the SOCKS5
 * credentials itself, or opens the tunnel (an exit drawn uniformly from the stored ones, bound as Python
 * binds it) with one of the descriptor-budget slots Python lent it (fast_lease), and the tunnel ends
 * without a CLOSED event. Its requests, connections and bytes are added up per entry and handed to
 * Python's meter by fast_counts(); a failed connect goes back to Python (EV_FAST_FAILED), which answers
 * and meters it as on its own path. Python forgets entries (fast_forget) whenever anything they depend
 * on changes; a forgotten entry stays allocated until its last tunnel ended and its counts were taken.
 */
#include "tunnels.h"

#include <sys/random.h>

#define F_BUCKETS 8192u /* a power of two */
#define F_MAX 4096u     /* live entries; more: every entry is forgotten and the cache refills */
#define KEY_HEAD 43

static uint64_t f_hash(const unsigned char *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static uint64_t f_rand(Engine *e) { /* xorshift64*: an exit per tunnel, uniformly */
    uint64_t x = e->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    e->rng = x;
    return x * 2685821657736338717ull;
}

/* The key of the event about to be sent to Python: kind, tag, extra (a SOCKS5 request: the id of its
 * credentials' entry), local and client address, the client's bytes. Empty when the cache is off. */
void tn_fast_key(Engine *e, conn_t *c, char kind, uint32_t extra, const void *payload, size_t n) {
    tn_buf_free(&c->key);
    if (!e->fast_on) return;
    unsigned char h[KEY_HEAD];
    uint32_t tag = (uint32_t)c->tag;
    h[0] = (unsigned char)kind;
    memcpy(h + 1, &tag, 4);
    memcpy(h + 5, &extra, 4);
    h[9] = (unsigned char)(c->lfamily == AF_INET6 ? 6 : c->lfamily ? 4 : 0);
    memcpy(h + 10, c->laddr, 16);
    h[26] = (unsigned char)(c->cfamily == AF_INET6 ? 6 : 4);
    memcpy(h + 27, c->caddr, 16);
    c->key.p = malloc(KEY_HEAD + n); /* exactly: held only while Python decides */
    if (!c->key.p) return;
    c->key.cap = KEY_HEAD + n;
    memcpy(c->key.p, h, KEY_HEAD);
    if (n) memcpy(c->key.p + KEY_HEAD, payload, n);
    c->key.len = KEY_HEAD + n;
}

fentry_t *tn_fast_find(Engine *e, conn_t *c) {
    if (!e->fb || c->key.len == 0) return NULL;
    uint64_t h = f_hash((unsigned char *)c->key.p, c->key.len);
    for (fentry_t *f = e->fb[h & (F_BUCKETS - 1)]; f; f = f->hnext)
        if (f->hash == h && f->klen == c->key.len && memcmp(f->key, c->key.p, f->klen) == 0) return f;
    return NULL;
}

static void f_unlink(Engine *e, fentry_t *f) {
    fentry_t **at = &e->fb[f->hash & (F_BUCKETS - 1)];
    while (*at && *at != f) at = &(*at)->hnext;
    if (*at) *at = f->hnext;
    f->hnext = NULL;
    f->live = 0;
    e->fcount--;
}

void tn_fast_free(fentry_t *f) {
    free(f->key);
    free(f->exits);
    free(f->elens);
    free(f);
}

/* Forget the live entries of service svc (its tunnels and credentials go back to Python's decisions). */
void tn_fast_forget_svc(Engine *e, uint32_t svc) {
    for (uint32_t b = 0; e->fb && b < F_BUCKETS; b++) {
        for (fentry_t *f = e->fb[b]; f;) {
            fentry_t *next = f->hnext;
            if (f->svc == svc) f_unlink(e, f);
            f = next;
        }
    }
}

static void f_forget_all(Engine *e) {
    if (!e->fb) return;
    for (uint32_t b = 0; b < F_BUCKETS; b++) {
        for (fentry_t *f = e->fb[b]; f;) {
            fentry_t *next = f->hnext;
            f->hnext = NULL;
            f->live = 0;
            f = next;
        }
        e->fb[b] = NULL;
    }
    e->fcount = 0;
}

int tn_fast_svc(Engine *e, uint32_t svc) {
    if (svc < e->nsvcs) return 0;
    uint32_t n = e->nsvcs ? e->nsvcs : 64;
    while (n <= svc) n *= 2;
    fsvc_t *s = realloc(e->svcs, n * sizeof *s);
    if (!s) return -1;
    memset(s + e->nsvcs, 0, (n - e->nsvcs) * sizeof *s);
    e->svcs = s;
    e->nsvcs = n;
    return 0;
}

/* Open the upstream connection (bound to src when slen) and wait for it; 0 or the errno. */
int tn_dial(Engine *e, conn_t *c, const struct sockaddr_storage *dst, socklen_t dlen,
            const struct sockaddr_storage *src, socklen_t slen) {
    int fd = socket(dst->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return errno;
    int one = 1, err = 0;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (slen) {
        setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
        if (src->ss_family == AF_INET6) {
            /* an exit drawn from a routed prefix (issue 16): bound without being configured */
            if (setsockopt(fd, IPPROTO_IPV6, IPV6_FREEBIND, &one, sizeof one) < 0)
                setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof one);
        }
        if (bind(fd, (const struct sockaddr *)src, slen) < 0) err = errno;
    }
    if (!err && connect(fd, (const struct sockaddr *)dst, dlen) < 0 && errno != EINPROGRESS) err = errno;
    if (!err) {
        c->ufd = fd;
        c->state = S_CONNECTING;
        if (tn_add_fd(e, c, 1, EPOLLOUT) < 0) {
            err = errno;
            c->ufd = -1;
            c->state = S_WAIT;
        }
    }
    if (err) close(fd);
    return err;
}

/* Open a tunnel by a cached decision: 1 when done (connecting, or failed and handed to Python), 0 when
 * the engine holds no budget slot of the service (Python decides this one). */
int tn_fast_open(Engine *e, conn_t *c, fentry_t *f) {
    fsvc_t *s = &e->svcs[f->svc];
    if (s->credits <= 0) return 0;
    s->credits--;
    s->open++;
    s->opened++;
    c->fast = f;
    f->refs++;
    uint32_t i = f->nexits == 1 ? 0 : (uint32_t)(f_rand(e) % f->nexits);
    c->exit_idx = (uint16_t)i;
    if (f->socks) {
        c->socks_reply = 1;
    } else {
        c->ok.len = 0;
        if (tn_buf_append(&c->ok, e->connect_ok.p, e->connect_ok.len) < 0) {
            tn_conn_close(e, c, WHY_GONE);
            return 1;
        }
    }
    c->state = S_WAIT;
    c->since = e->now;
    int err = tn_dial(e, c, &f->dst, f->dlen, &f->exits[i], f->elens[i]);
    if (err) tn_connect_failed(e, c, err, 0);
    return 1;
}

/* The upstream connect failed: Python answers (a fast tunnel becomes Python's, with the exit it used). */
void tn_connect_failed(Engine *e, conn_t *c, int err, int timed_out) {
    c->state = S_WAIT;
    fentry_t *f = c->fast;
    if (!f) {
        tn_push(e, Py_BuildValue("(iKii)", EV_CONNECT_FAILED, (unsigned long long)c->id, err, timed_out));
        return;
    }
    char text[INET6_ADDRSTRLEN] = "";
    const struct sockaddr_storage *sa = &f->exits[c->exit_idx];
    if (sa->ss_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, text, sizeof text);
    else if (sa->ss_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, text, sizeof text);
    uint32_t id = f->id;
    tn_fast_leave(e, c);
    tn_push(e, Py_BuildValue("(iKIsii)", EV_FAST_FAILED, (unsigned long long)c->id, id, text, err, timed_out));
}

void tn_fast_relay_started(conn_t *c) {
    if (c->fast) {
        c->fast->requests++;
        c->fast->connections++;
    }
}

/* The connection stops being a fast tunnel (it ended, or Python took it): counts, the slot back. */
void tn_fast_leave(Engine *e, conn_t *c) {
    fentry_t *f = c->fast;
    if (f) {
        f->up += c->up - c->seen_up;
        f->down += c->down - c->seen_down;
        c->seen_up = c->up;
        c->seen_down = c->down;
        fsvc_t *s = &e->svcs[f->svc];
        s->open--;
        s->credits++;
        s->closed++;
        f->refs--;
        c->fast = NULL;
    }
    if (c->auth) {
        c->auth->refs--;
        c->auth = NULL;
    }
}

void tn_fast_free_all(Engine *e) {
    f_forget_all(e);
    for (fentry_t *f = e->fall; f;) {
        fentry_t *next = f->anext;
        tn_fast_free(f);
        f = next;
    }
    e->fall = NULL;
    free(e->fb);
    e->fb = NULL;
    free(e->svcs);
    e->svcs = NULL;
    e->nsvcs = 0;
    tn_buf_free(&e->connect_ok);
}

/* fast_enable(connect_reply): turn the cache on; connect_reply answers a CONNECT whose tunnel opened */
PyObject *Engine_fast_enable(Engine *e, PyObject *args) {
    Py_buffer ok;
    if (!PyArg_ParseTuple(args, "y*", &ok)) return NULL;
    if (!e->fb) {
        e->fb = calloc(F_BUCKETS, sizeof *e->fb);
        if (!e->fb) {
            PyBuffer_Release(&ok);
            return PyErr_NoMemory();
        }
    }
    e->connect_ok.len = 0;
    int rc = tn_buf_append(&e->connect_ok, ok.buf, (size_t)ok.len);
    PyBuffer_Release(&ok);
    if (rc < 0) return PyErr_NoMemory();
    if (getrandom(&e->rng, sizeof e->rng, 0) != (ssize_t)sizeof e->rng || e->rng == 0)
        e->rng = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^ 0x9e3779b97f4a7c15ull;
    e->fast_on = 1;
    Py_RETURN_NONE;
}

/* fast_put(id, kind, entry_id, svc, socks, dst_ip, dst_port, exits): cache the decision Python just made
 * for connection id's pending event (False: nothing pending, or a request under forgotten credentials) */
PyObject *Engine_fast_put(Engine *e, PyObject *args) {
    unsigned long long cid;
    int kind, socks, port;
    unsigned int id, svc;
    const char *dst_ip;
    PyObject *exits;
    if (!PyArg_ParseTuple(args, "KiIIpsiO", &cid, &kind, &id, &svc, &socks, &dst_ip, &port, &exits)) return NULL;
    conn_t *c = tn_conn_get(e, cid);
    if (!c || c->key.len == 0 || !e->fb) Py_RETURN_FALSE;
    if (kind != FK_OPEN && kind != FK_AUTH) return PyErr_Format(PyExc_ValueError, "kind %d", kind);
    char k = c->key.p[0];
    if ((kind == FK_AUTH) != (k == 'S' || k == 'N')) Py_RETURN_FALSE;
    if (k == 'R' && (!c->auth || !c->auth->live)) Py_RETURN_FALSE;
    if (tn_fast_svc(e, svc) < 0) return PyErr_NoMemory();
    fentry_t *f = calloc(1, sizeof *f);
    if (!f) return PyErr_NoMemory();
    f->kind = (uint8_t)kind;
    f->socks = (uint8_t)socks;
    f->id = id;
    f->svc = svc;
    if (kind == FK_OPEN) {
        PyObject *seq = PySequence_Fast(exits, "exits: a sequence of IP strings");
        Py_ssize_t n = seq ? PySequence_Fast_GET_SIZE(seq) : 0;
        if (!seq || n < 1 || n > 65535 || tn_parse_addr(dst_ip, port, &f->dst, &f->dlen) < 0 || port < 1 ||
            port > 65535) {
            Py_XDECREF(seq);
            free(f);
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "bad destination or exits");
            return NULL;
        }
        f->exits = calloc((size_t)n, sizeof *f->exits);
        f->elens = calloc((size_t)n, sizeof *f->elens);
        f->nexits = (uint32_t)n;
        for (Py_ssize_t i = 0; f->exits && f->elens && i < n; i++) {
            const char *ip = PyUnicode_Check(PySequence_Fast_GET_ITEM(seq, i))
                                 ? PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(seq, i)) : NULL;
            if (!ip || tn_parse_addr(ip, 0, &f->exits[i], &f->elens[i]) < 0) {
                Py_DECREF(seq);
                tn_fast_free(f);
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "exits: IP strings");
                return NULL;
            }
        }
        Py_DECREF(seq);
        if (!f->exits || !f->elens) {
            tn_fast_free(f);
            return PyErr_NoMemory();
        }
    }
    fentry_t *old = tn_fast_find(e, c);
    f->key = (unsigned char *)c->key.p; /* the entry takes the connection's key */
    c->key.p = NULL;
    c->key.cap = 0;
    f->klen = c->key.len;
    f->hash = f_hash(f->key, f->klen);
    if (old) f_unlink(e, old);
    if (e->fcount >= F_MAX) f_forget_all(e);
    fentry_t **b = &e->fb[f->hash & (F_BUCKETS - 1)];
    f->hnext = *b;
    *b = f;
    f->live = 1;
    e->fcount++;
    f->anext = e->fall;
    e->fall = f;
    if (kind == FK_AUTH) { /* this connection's request is looked up under it too */
        if (c->auth) c->auth->refs--;
        c->auth = f;
        f->refs++;
        c->auth_py = 1;
    }
    c->key.len = 0;
    Py_RETURN_TRUE;
}

/* fast_forget(client_ip=None): forget every entry, or those of a client address (IPv6: its /64) */
PyObject *Engine_fast_forget(Engine *e, PyObject *args) {
    const char *ip = NULL;
    if (!PyArg_ParseTuple(args, "|z", &ip)) return NULL;
    if (!ip) {
        f_forget_all(e);
        Py_RETURN_NONE;
    }
    unsigned char a[16] = {0};
    size_t n;
    int fam;
    if (inet_pton(AF_INET, ip, a) == 1) {
        fam = 4;
        n = 4;
    } else if (inet_pton(AF_INET6, ip, a) == 1) {
        fam = 6;
        n = 8;
    } else {
        return PyErr_Format(PyExc_ValueError, "not an IP address: %s", ip);
    }
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    int v4 = fam == 4 || memcmp(a, mapped, 12) == 0;
    if (fam == 6 && v4) memmove(a, a + 12, 4);
    for (uint32_t b = 0; e->fb && b < F_BUCKETS; b++) {
        for (fentry_t *f = e->fb[b]; f;) {
            fentry_t *next = f->hnext;
            const unsigned char *k = f->key;
            int hit = v4 ? ((k[26] == 4 && memcmp(k + 27, a, 4) == 0) || (k[26] == 6 && memcmp(k + 27, mapped, 12) == 0))
                         : (k[26] == 6 && memcmp(k + 27, a, n) == 0);
            if (hit) f_unlink(e, f);
            f = next;
        }
    }
    Py_RETURN_NONE;
}

