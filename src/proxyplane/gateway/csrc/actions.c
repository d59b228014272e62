/* What Python answers with: send, connect, detach; and counts and sweep. */
#include "tunnels.h"

/* send(id, data, next): write to the client, then close (0), read credentials (1) or a request (2) */
PyObject *Engine_send(Engine *e, PyObject *args) {
    unsigned long long id;
    Py_buffer data;
    int next;
    if (!PyArg_ParseTuple(args, "Ky*i", &id, &data, &next)) return NULL;
    conn_t *c = tn_conn_get(e, id);
    if (!c || (c->state != S_WAIT)) {
        PyBuffer_Release(&data);
        Py_RETURN_FALSE;
    }
    tn_buf_free(&c->key); /* decided */
    int rc = tn_client_write(e, c, data.buf, (size_t)data.len);
    PyBuffer_Release(&data);
    if (rc < 0) Py_RETURN_TRUE;
    if (next == NEXT_CLOSE) {
        c->state = S_CLOSING;
        c->since = e->now;
        tn_update(e, c);
        Py_RETURN_TRUE;
    }
    c->state = next == NEXT_AUTH ? S_AUTH : S_REQ;
    c->since = e->now;
    if (c->c_eof) {
        tn_conn_close(e, c, WHY_GONE);
        Py_RETURN_TRUE;
    }
    tn_advance(e, c);
    tn_update(e, c);
    Py_RETURN_TRUE;
}

int tn_parse_addr(const char *ip, int port, struct sockaddr_storage *sa, socklen_t *len) {
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
PyObject *Engine_connect(Engine *e, PyObject *args) {
    unsigned long long id;
    const char *ip, *bind_ip;
    int port;
    PyObject *ok;
    if (!PyArg_ParseTuple(args, "KsisO", &id, &ip, &port, &bind_ip, &ok)) return NULL;
    conn_t *c = tn_conn_get(e, id);
    if (!c || c->state != S_WAIT) Py_RETURN_FALSE;
    struct sockaddr_storage dst, src;
    socklen_t dlen, slen = 0;
    if (tn_parse_addr(ip, port, &dst, &dlen) < 0) {
        PyErr_Format(PyExc_ValueError, "not an IP address: %s", ip);
        return NULL;
    }
    if (*bind_ip && tn_parse_addr(bind_ip, 0, &src, &slen) < 0) {
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
        if (tn_buf_append(&c->ok, p, (size_t)n) < 0) return PyErr_NoMemory();
    }
    c->since = e->now = tn_mono_now();
    tn_buf_free(&c->key); /* decided: nothing left to cache for this connection */
    int err = tn_dial(e, c, &dst, dlen, &src, slen);
    if (err) tn_connect_failed(e, c, err, 0);
    Py_RETURN_TRUE;
}

/* detach(id) -> (fd, buffered bytes): the connection is Python's from now on */
PyObject *Engine_detach(Engine *e, PyObject *args) {
    unsigned long long id;
    if (!PyArg_ParseTuple(args, "K", &id)) return NULL;
    conn_t *c = tn_conn_get(e, id);
    if (!c || c->state != S_WAIT) Py_RETURN_NONE;
    epoll_ctl(e->epfd, EPOLL_CTL_DEL, c->cfd, NULL);
    PyObject *res = Py_BuildValue("(iy#)", c->cfd, c->in.p ? c->in.p : "", (Py_ssize_t)c->in.len);
    if (!res) return NULL;
    c->cfd = -1;
    tn_conn_release(e, c);
    return res;
}

/* close(id): end a connection in any state (e.g. a relaying tunnel whose user lost the right to it);
   its CLOSED event (why = WHY_DONE, with the final byte counts) is queued for take() */
PyObject *Engine_close(Engine *e, PyObject *args) {
    unsigned long long id;
    if (!PyArg_ParseTuple(args, "K", &id)) return NULL;
    conn_t *c = tn_conn_get(e, id);
    if (!c) Py_RETURN_FALSE;
    tn_conn_close(e, c, WHY_DONE);
    Py_RETURN_TRUE;
}

/* counts() -> [(id, up, down)] for relays whose totals changed since the last call */
PyObject *Engine_counts(Engine *e, PyObject *Py_UNUSED(arg)) {
    PyObject *out = PyList_New(0);
    if (!out) return NULL;
    for (conn_t *c = e->all.next; c != &e->all; c = c->next) {
        if (c->fast || (c->up == c->seen_up && c->down == c->seen_down)) continue; /* fast: fast_counts */
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
PyObject *Engine_sweep(Engine *e, PyObject *args) {
    double hs, ct, idle;
    if (!PyArg_ParseTuple(args, "ddd", &hs, &ct, &idle)) return NULL;
    double now = e->now = tn_mono_now();
    tn_resume_listeners(e);
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
                tn_conn_close(e, c, WHY_HANDSHAKE_TIMEOUT);
            }
            break;
        case S_CLOSING:
            if (now - c->since >= hs) tn_conn_close(e, c, WHY_REFUSED);
            break;
        case S_CONNECTING:
            if (now - c->since >= ct) {
                epoll_ctl(e->epfd, EPOLL_CTL_DEL, c->ufd, NULL);
                close(c->ufd);
                c->ufd = -1;
                c->umask = 0;
                tn_connect_failed(e, c, ETIMEDOUT, 1);
            }
            break;
        case S_RELAY: {
            unsigned long long total = c->up + c->down;
            if (total != c->idle_total) {
                c->idle_total = total;
                c->active = now;
            } else if (now - c->active >= idle) {
                tn_conn_close(e, c, WHY_IDLE);
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
