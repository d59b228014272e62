/* Accepting, connecting and relaying: the readiness events of every socket. */
#include "tunnels.h"

/* Wanted epoll masks from the state; closes a finished relay. */
void tn_update(Engine *e, conn_t *c) {
    if (c->state == S_DEAD) return;
    uint32_t cm = 0, um = 0;
    switch (c->state) {
    case S_RELAY:
        if (c->c_eof && c->u_eof && c->in.len == 0 && c->out.len == 0) {
            tn_conn_close(e, c, WHY_DONE);
            return;
        }
        if (!c->c_eof && c->in.len == 0) cm |= EPOLLIN;
        if (c->out.len) cm |= EPOLLOUT;
        if (!c->u_eof && c->out.len == 0) um |= EPOLLIN;
        if (c->in.len) um |= EPOLLOUT;
        tn_set_mask(e, c, 1, um);
        break;
    case S_CLOSING:
        if (c->out.len == 0) {
            tn_conn_close(e, c, WHY_REFUSED);
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
    tn_set_mask(e, c, 0, cm);
}

/* Flush queued bytes to one side; -1 when the connection was closed. */
int tn_flush_side(Engine *e, conn_t *c, int to_up) {
    buf_t *b = to_up ? &c->in : &c->out;
    int fd = to_up ? c->ufd : c->cfd;
    while (b->len) {
        ssize_t w = send(fd, b->p, b->len, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EAGAIN || errno == EINTR) return 0;
            tn_conn_close(e, c, c->state == S_RELAY ? WHY_DONE : WHY_GONE);
            return -1;
        }
        tn_buf_consume(b, (size_t)w);
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

/* A read that returned no bytes: an EOF (n == 0) is passed on; nothing to read yet (EAGAIN) is left;
 * an error ends the tunnel (-1). */
static int tn_pump_end(Engine *e, conn_t *c, int from_client, ssize_t n) {
    if (n == 0) {
        /* pass the EOF on, unless the other side ended too and nothing is queued: then both
         * sockets are closed right away (tn_update) and a shutdown would be a wasted syscall */
        if (from_client) {
            c->c_eof = 1;
            if (c->in.len == 0 && !c->u_shut && !(c->u_eof && c->out.len == 0)) {
                shutdown(c->ufd, SHUT_WR);
                c->u_shut = 1;
            }
        } else {
            c->u_eof = 1;
            if (c->out.len == 0 && !c->c_shut && !(c->c_eof && c->in.len == 0)) {
                shutdown(c->cfd, SHUT_WR);
                c->c_shut = 1;
            }
        }
        return 0;
    }
    if (errno == EAGAIN || errno == EINTR) return 0;
    tn_conn_close(e, c, WHY_DONE);
    return -1;
}

/* Relay: read from one side, write to the other; the rest is queued and reading pauses. */
int tn_pump(Engine *e, conn_t *c, int from_client) {
    int src = from_client ? c->cfd : c->ufd, dst = from_client ? c->ufd : c->cfd;
    buf_t *q = from_client ? &c->in : &c->out;
    for (int round = 0; round < 4 && q->len == 0; round++) {
        if (e->splice_after && c->up + c->down >= e->splice_after) { /* a long tunnel (splice.c) */
            ssize_t n = tn_splice_move(e, src, dst, q);
            if (n == -2) {
                tn_conn_close(e, c, WHY_DONE);
                return -1;
            }
            if (n > 0) {
                if (from_client)
                    c->up += (unsigned long long)n;
                else
                    c->down += (unsigned long long)n;
                continue; /* a short splice is no sign of a drained socket (the pipe has slots, not bytes) */
            }
            if (n < 0 && errno == EINVAL) { /* not spliceable here: copy from now on */
                e->splice_after = 0;
                continue;
            }
            if (tn_pump_end(e, c, from_client, n) < 0) return -1;
            break;
        }
        ssize_t n = recv(src, e->scratch, e->scratch_size, 0);
        if (n > 0) {
            if (from_client)
                c->up += (unsigned long long)n;
            else
                c->down += (unsigned long long)n;
            ssize_t w = send(dst, e->scratch, (size_t)n, MSG_NOSIGNAL);
            if (w < 0) {
                if (errno != EAGAIN && errno != EINTR) {
                    tn_conn_close(e, c, WHY_DONE);
                    return -1;
                }
                w = 0;
            }
            if (w < n && tn_buf_append(q, e->scratch + w, (size_t)(n - w)) < 0) {
                tn_conn_close(e, c, WHY_DONE);
                return -1;
            }
            if ((size_t)n < e->scratch_size) break;
            continue;
        }
        if (tn_pump_end(e, c, from_client, n) < 0) return -1;
        break;
    }
    return 0;
}

/* The upstream connection is open: reply to the client, pass on what it sent early, relay. */
void tn_start_relay(Engine *e, conn_t *c) {
    c->state = S_RELAY;
    tn_fast_relay_started(c);
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
        if (tn_client_write(e, c, (const char *)r, n) < 0) return;
    } else if (c->ok.len) {
        if (tn_client_write(e, c, c->ok.p, c->ok.len) < 0) return;
        tn_buf_free(&c->ok);
    }
    if (c->in.len) {
        c->up += c->in.len;
        if (tn_flush_side(e, c, 1) < 0) return;
    }
    if (c->c_eof && c->in.len == 0 && !c->u_shut) {
        shutdown(c->ufd, SHUT_WR);
        c->u_shut = 1;
    }
    /* the handshake's buffers are not kept for an idle tunnel: relay queues allocate on demand */
    if (c->in.len == 0) tn_buf_free(&c->in);
    if (c->out.len == 0) tn_buf_free(&c->out);
    tn_update(e, c);
}

/* -- event dispatch -- */
void tn_resume_listeners(Engine *e) {
    for (int i = 0; i < e->nlisteners; i++) {
        listener_t *l = &e->listeners[i];
        if (!l->open || !l->paused) continue;
        struct epoll_event ev;
        ev.events = EPOLLIN;
        ev.data.u64 = ((uint64_t)i << 2) | SIDE_LISTENER;
        if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, l->fd, &ev) == 0) l->paused = 0;
    }
}

void tn_on_accept(Engine *e, listener_t *l) {
    for (int i = 0; i < 64; i++) {
        struct sockaddr_storage sa;
        socklen_t sl = sizeof sa;
        int fd = accept4(l->fd, (struct sockaddr *)&sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                /* out of descriptors or memory: stop accepting until the next sweep, not spin */
                epoll_ctl(e->epfd, EPOLL_CTL_DEL, l->fd, NULL);
                l->paused = 1;
            }
            return;
        }
        /* TCP_NODELAY comes from the listening socket (Linux copies it to accepted sockets) */
        conn_t *c = tn_conn_new(e, fd);
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
        if (l->local) { /* a wildcard listener: the address the client dialed is the exit IP */
            struct sockaddr_storage la;
            socklen_t ll = sizeof la;
            if (getsockname(fd, (struct sockaddr *)&la, &ll) == 0) {
                if (la.ss_family == AF_INET6) {
                    c->lfamily = AF_INET6;
                    memcpy(c->laddr, &((struct sockaddr_in6 *)&la)->sin6_addr, 16);
                } else if (la.ss_family == AF_INET) {
                    c->lfamily = AF_INET;
                    memcpy(c->laddr, &((struct sockaddr_in *)&la)->sin_addr, 4);
                }
            }
        }
        if (tn_add_fd(e, c, 0, EPOLLIN) < 0) {
            close(fd);
            c->cfd = -1;
            tn_conn_release(e, c);
            continue;
        }
        tn_read_handshake(e, c); /* the client usually sent its first bytes already */
    }
}

void tn_on_connected(Engine *e, conn_t *c, uint32_t ev) {
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
        tn_connect_failed(e, c, err, 0);
        tn_update(e, c);
        return;
    }
    tn_start_relay(e, c);
}

/* A relay socket is ready: ``up_side`` says which one. */
void tn_relay_event(Engine *e, conn_t *c, int up_side, uint32_t ev) {
    uint8_t *eof = up_side ? &c->u_eof : &c->c_eof;
    buf_t *to_this = up_side ? &c->in : &c->out;    /* queued for this socket */
    buf_t *from_this = up_side ? &c->out : &c->in;  /* read from it, queued for the other */
    if (ev & EPOLLERR) { /* reset: whatever is queued cannot be delivered */
        tn_conn_close(e, c, WHY_DONE);
        return;
    }
    if ((ev & EPOLLOUT) && to_this->len && tn_flush_side(e, c, up_side) < 0) return;
    if ((ev & (EPOLLIN | EPOLLHUP)) && !*eof && from_this->len == 0 && tn_pump(e, c, !up_side) < 0) return;
    if (ev & EPOLLHUP) { /* both directions of this socket are shut */
        if (to_this->len) {
            tn_conn_close(e, c, WHY_DONE);
            return;
        }
        if (*eof || from_this->len) tn_park(e, c, up_side);
    }
    tn_update(e, c);
}

void tn_on_event(Engine *e, uint64_t data, uint32_t ev) {
    uint32_t side = (uint32_t)(data & 3u), index = (uint32_t)(data >> 2);
    if (side == SIDE_LISTENER) {
        if ((int)index < e->nlisteners && e->listeners[index].open) tn_on_accept(e, &e->listeners[index]);
        return;
    }
    if (index >= e->nslots) return;
    conn_t *c = e->slots[index];
    if (!c || c->state == S_DEAD) return;
    if (side == SIDE_UP) {
        if (c->state == S_CONNECTING) {
            tn_on_connected(e, c, ev);
            return;
        }
        if (c->state == S_RELAY) tn_relay_event(e, c, 1, ev);
        return;
    }
    switch (c->state) {
    case S_RELAY:
        tn_relay_event(e, c, 0, ev);
        return;
    case S_CLOSING:
        if (ev & (EPOLLERR | EPOLLHUP)) {
            tn_conn_close(e, c, WHY_REFUSED);
            return;
        }
        if (tn_flush_side(e, c, 0) < 0) return;
        tn_update(e, c);
        return;
    default:
        if ((ev & EPOLLOUT) && c->out.len && tn_flush_side(e, c, 0) < 0) return;
        if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
            if (c->c_eof) { /* waiting on Python after the client's EOF: nothing more to read */
                if (ev & (EPOLLHUP | EPOLLERR)) tn_conn_close(e, c, WHY_GONE);
                else tn_update(e, c);
                return;
            }
            tn_read_handshake(e, c);
        } else {
            tn_update(e, c);
        }
    }
}
