/* Buffers, the connection table, epoll bookkeeping and closing. */
#include "tunnels.h"

double tn_mono_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* -- buffers -- */
int tn_buf_reserve(buf_t *b, size_t extra) {
    if (b->len + extra <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->len + extra) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

int tn_buf_append(buf_t *b, const char *data, size_t n) {
    if (tn_buf_reserve(b, n) < 0) return -1;
    memcpy(b->p + b->len, data, n);
    b->len += n;
    return 0;
}

void tn_buf_consume(buf_t *b, size_t n) {
    if (n >= b->len) {
        b->len = 0;
        return;
    }
    memmove(b->p, b->p + n, b->len - n);
    b->len -= n;
}

void tn_buf_free(buf_t *b) {
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* -- events -- */
void tn_push(Engine *e, PyObject *ev) {
    if (ev == NULL) {
        PyErr_Clear();
        return;
    }
    PyList_Append(e->pending, ev);
    Py_DECREF(ev);
}

PyObject *tn_client_ip(conn_t *c) {
    char text[INET6_ADDRSTRLEN];
    if (!inet_ntop(c->cfamily, c->caddr, text, sizeof text)) text[0] = 0;
    return PyUnicode_FromString(text);
}

/* The local address the client dialed (getsockname at accept, static listeners), else None. */
PyObject *tn_local_ip(conn_t *c) {
    char text[INET6_ADDRSTRLEN];
    if (!c->lfamily) Py_RETURN_NONE;
    if (!inet_ntop(c->lfamily, c->laddr, text, sizeof text)) Py_RETURN_NONE;
    return PyUnicode_FromString(text);
}

/* -- epoll bookkeeping -- */
void tn_set_mask(Engine *e, conn_t *c, int up_side, uint32_t mask) {
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
void tn_park(Engine *e, conn_t *c, int up_side) {
    uint8_t *parked = up_side ? &c->u_parked : &c->c_parked;
    if (*parked) return;
    epoll_ctl(e->epfd, EPOLL_CTL_DEL, up_side ? c->ufd : c->cfd, NULL);
    *parked = 1;
    if (up_side)
        c->umask = 0;
    else
        c->cmask = 0;
}

int tn_add_fd(Engine *e, conn_t *c, int up_side, uint32_t mask) {
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
conn_t *tn_conn_new(Engine *e, int fd) {
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

conn_t *tn_conn_get(Engine *e, unsigned long long id) {
    uint32_t slot = (uint32_t)(id & 0xffffffffu);
    if (slot >= e->nslots) return NULL;
    conn_t *c = e->slots[slot];
    if (!c || c->id != id || c->state == S_DEAD) return NULL;
    return c;
}

/* Unlink; the slot and memory are released after the current epoll batch (stale events name it). */
void tn_conn_release(Engine *e, conn_t *c) {
    tn_fast_leave(e, c);
    c->state = S_DEAD;
    c->prev->next = c->next;
    c->next->prev = c->prev;
    c->prev = c->next = c;
    e->nconns--;
    tn_buf_free(&c->in);
    tn_buf_free(&c->out);
    tn_buf_free(&c->ok);
    tn_buf_free(&c->key);
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

void tn_reap(Engine *e) {
    for (uint32_t i = 0; i < e->ndead; i++) {
        conn_t *c = e->dead[i];
        e->slots[c->slot] = NULL;
        e->free_slots[e->nfree++] = c->slot;
        free(c);
    }
    e->ndead = 0;
}

void tn_conn_close(Engine *e, conn_t *c, int why) {
    if (c->state == S_DEAD) return;
    if (c->cfd >= 0) close(c->cfd);
    if (c->ufd >= 0) close(c->ufd);
    c->cfd = c->ufd = -1;
    if (c->fast) {
        /* a fast tunnel ends silently: its counts are the entry's (fast.c) */
    } else if (c->auth && !c->auth_py) { /* SOCKS5 credentials the cache accepted: whose connection */
        tn_push(e, Py_BuildValue("(iKKKiiI)", EV_CLOSED, (unsigned long long)c->id, c->up, c->down, why, c->kind,
                                 c->auth->id));
    } else {
        tn_push(e, Py_BuildValue("(iKKKii)", EV_CLOSED, (unsigned long long)c->id, c->up, c->down, why, c->kind));
    }
    tn_conn_release(e, c);
}

/* The connection leaves the engine for Python: its client fd and the bytes read so far. */
void tn_handoff(Engine *e, conn_t *c, int kind) {
    epoll_ctl(e->epfd, EPOLL_CTL_DEL, c->cfd, NULL);
    PyObject *data = PyBytes_FromStringAndSize(c->in.p ? c->in.p : "", (Py_ssize_t)c->in.len);
    tn_push(e, Py_BuildValue("(iiiNi)", EV_HANDOFF, c->tag, c->cfd, data, kind));
    c->cfd = -1;
    tn_conn_release(e, c);
}

/* Write to the client (queueing what does not fit); -1 when the connection was closed. */
int tn_client_write(Engine *e, conn_t *c, const char *data, size_t n) {
    if (c->out.len == 0) {
        ssize_t w = send(c->cfd, data, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno != EAGAIN && errno != EINTR) {
                tn_conn_close(e, c, WHY_GONE);
                return -1;
            }
            w = 0;
        }
        data += w;
        n -= (size_t)w;
    }
    if (n && tn_buf_append(&c->out, data, n) < 0) {
        tn_conn_close(e, c, WHY_GONE);
        return -1;
    }
    return 0;
}

void tn_socks_fail(Engine *e, conn_t *c, int rep, int why) {
    char r[10] = {5, (char)rep, 0, 1, 0, 0, 0, 0, 0, 0};
    send(c->cfd, r, sizeof r, MSG_NOSIGNAL);
    tn_conn_close(e, c, why);
}
