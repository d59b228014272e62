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
 *   (CONNECT, id, tag, head, client_ip, local_ip)  a CONNECT head (without the final CRLFCRLF)
 *   (SOCKS_NOAUTH, id, tag, client_ip, local_ip)   greeting offered no-auth only: whitelist decision
 *   (SOCKS_AUTH, id, tag, login, password, client_ip, local_ip)  RFC 1929 credentials (bytes)
 * local_ip: the address the client dialed on a `local` (wildcard, static) listener, else None.
 *   (SOCKS_REQUEST, id, cmd, atyp, host, port)  host: str for IP literals, bytes for a domain name
 *   (CONNECT_FAILED, id, errno, timed_out) the upstream connect failed; Python replies
 *   (CLOSED, id, up, down, why, kind[, auth_id])  the connection ended (once per id, unless detached or
 *                                          a fast tunnel); auth_id: SOCKS5 credentials the cache accepted
 *   (FAST_FAILED, id, entry_id, exit_ip, errno, timed_out)  a tunnel opened by a cached decision (fast.c)
 *                                          could not connect: it is Python's now, which replies
 *   (FAST_SOCKS_REQUEST, id, auth_id, cmd, atyp, host, port)  a request after credentials the engine
 *                                          accepted by a cached decision, with no cached decision itself
 */
#include "tunnels.h"

/* -- Python methods -- */
PyObject *tn_take_pending(Engine *e) {
    if (PyList_GET_SIZE(e->pending) == 0) Py_RETURN_NONE;
    PyObject *out = e->pending;
    e->pending = PyList_New(0);
    if (!e->pending) {
        e->pending = out;
        return NULL;
    }
    return out;
}

PyObject *Engine_run(Engine *e, PyObject *Py_UNUSED(arg)) {
    struct epoll_event evs[MAX_EVENTS];
    e->now = tn_mono_now();
    tn_reap(e);
    for (int rounds = 0; rounds < 8; rounds++) {
        int n = epoll_wait(e->epfd, evs, MAX_EVENTS, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int i = 0; i < n; i++) tn_on_event(e, evs[i].data.u64, evs[i].events);
        tn_reap(e);
        if (n < MAX_EVENTS) break;
    }
    return tn_take_pending(e);
}

PyObject *Engine_take(Engine *e, PyObject *Py_UNUSED(arg)) {
    tn_reap(e);
    return tn_take_pending(e);
}

PyObject *Engine_fileno(Engine *e, PyObject *Py_UNUSED(arg)) { return PyLong_FromLong(e->epfd); }

PyObject *Engine_add_listener(Engine *e, PyObject *args) {
    int fd, kind, tag, sniff, local = 0;
    if (!PyArg_ParseTuple(args, "iiip|p", &fd, &kind, &tag, &sniff, &local)) return NULL;
    int index = 0;
    while (index < e->nlisteners && e->listeners[index].open) index++; /* reuse a closed entry */
    if (index == e->nlisteners) {
        listener_t *ls = realloc(e->listeners, (size_t)(e->nlisteners + 1) * sizeof *ls);
        if (!ls) return PyErr_NoMemory();
        e->listeners = ls;
        e->nlisteners++;
    }
    e->listeners[index] = (listener_t){fd, kind, tag, sniff, 1, 0, local};
    struct epoll_event ev;
    ev.events = EPOLLIN;
    ev.data.u64 = ((uint64_t)index << 2) | SIDE_LISTENER;
    if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        e->listeners[index].open = 0;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    Py_RETURN_NONE;
}

PyObject *Engine_remove_listener(Engine *e, PyObject *args) {
    int fd;
    if (!PyArg_ParseTuple(args, "i", &fd)) return NULL;
    for (int i = 0; i < e->nlisteners; i++) {
        if (e->listeners[i].open && e->listeners[i].fd == fd) {
            e->listeners[i].open = 0;
            if (!e->listeners[i].paused) epoll_ctl(e->epfd, EPOLL_CTL_DEL, fd, NULL);
        }
    }
    Py_RETURN_NONE;
}

PyObject *Engine_close_all(Engine *e, PyObject *Py_UNUSED(arg)) {
    while (e->all.next != &e->all) tn_conn_close(e, e->all.next, WHY_SHUTDOWN);
    tn_reap(e);
    return tn_take_pending(e);
}

PyObject *Engine_stats(Engine *e, PyObject *Py_UNUSED(arg)) {
    long relays = 0, fast = 0;
    for (conn_t *c = e->all.next; c != &e->all; c = c->next) {
        if (c->state == S_RELAY) relays++;
        if (c->fast) fast++;
    }
    return Py_BuildValue("{s:l,s:l,s:l,s:I}", "connections", e->nconns, "relays", relays, "fast", fast,
                         "entries", e->fcount);
}

int Engine_init(Engine *e, PyObject *args, PyObject *kw) {
    static char *names[] = {"max_head", "buffer_size", "timeout_reply", NULL};
    Py_ssize_t max_head = 16384, size = 262144;
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
    e->now = tn_mono_now();
    return 0;
}

PyObject *Engine_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    Engine *e = (Engine *)type->tp_alloc(type, 0);
    if (e) e->epfd = e->spr = e->spw = -1;
    return (PyObject *)e;
}

void Engine_dealloc(Engine *e) {
    if (e->all.next) {
        while (e->all.next != &e->all) {
            conn_t *c = e->all.next;
            if (c->cfd >= 0) close(c->cfd);
            if (c->ufd >= 0) close(c->ufd);
            c->cfd = c->ufd = -1;
            tn_conn_release(e, c);
        }
        tn_reap(e);
    }
    tn_fast_free_all(e);
    tn_splice_free(e);
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
    {"add_listener", (PyCFunction)Engine_add_listener, METH_VARARGS, "add_listener(fd, kind, tag, sniff, local=False)"},
    {"remove_listener", (PyCFunction)Engine_remove_listener, METH_VARARGS, "remove_listener(fd)"},
    {"send", (PyCFunction)Engine_send, METH_VARARGS, "send(id, data, next)"},
    {"connect", (PyCFunction)Engine_connect, METH_VARARGS, "connect(id, ip, port, bind_ip, ok_reply)"},
    {"detach", (PyCFunction)Engine_detach, METH_VARARGS, "detach(id) -> (fd, data) or None"},
    {"close", (PyCFunction)Engine_close, METH_VARARGS, "close(id): end a connection now (a CLOSED event)"},
    {"counts", (PyCFunction)Engine_counts, METH_NOARGS, "[(id, up, down)] changed since last call"},
    {"sweep", (PyCFunction)Engine_sweep, METH_VARARGS, "sweep(handshake, connect, idle timeouts)"},
    {"close_all", (PyCFunction)Engine_close_all, METH_NOARGS, "Close every connection; the events."},
    {"stats", (PyCFunction)Engine_stats, METH_NOARGS, "{'connections': n, 'relays': n, 'fast': n}"},
    {"fast_enable", (PyCFunction)Engine_fast_enable, METH_VARARGS, "fast_enable(connect_reply)"},
    {"fast_put", (PyCFunction)Engine_fast_put, METH_VARARGS,
     "fast_put(id, kind, entry_id, svc, socks, dst_ip, dst_port, exits) -> bool"},
    {"fast_forget", (PyCFunction)Engine_fast_forget, METH_VARARGS, "fast_forget(client_ip=None)"},
    {"fast_lease", (PyCFunction)Engine_fast_lease, METH_VARARGS, "fast_lease(svc, n)"},
    {"fast_take", (PyCFunction)Engine_fast_take, METH_VARARGS, "fast_take(svc, n) -> taken"},
    {"fast_services", (PyCFunction)Engine_fast_services, METH_NOARGS,
     "[(svc, unused, open, opened, closed)]"},
    {"fast_counts", (PyCFunction)Engine_fast_counts, METH_NOARGS,
     "([(entry_id, requests, connections, up, down)], [freed entry ids])"},
    {"set_splice", (PyCFunction)Engine_set_splice, METH_VARARGS,
     "set_splice(after): tunnels that relayed `after` bytes are spliced (0: never)"},
    {"fast_cut", (PyCFunction)Engine_fast_cut, METH_VARARGS,
     "fast_cut(svc) -> [entry id per tunnel ended]: forget svc's entries, end its fast tunnels"},
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
    PyModule_AddIntConstant(m, "FAST_FAILED", EV_FAST_FAILED);
    PyModule_AddIntConstant(m, "FAST_SOCKS_REQUEST", EV_FAST_SOCKS_REQUEST);
    PyModule_AddIntConstant(m, "FAST_OPEN", FK_OPEN);
    PyModule_AddIntConstant(m, "FAST_AUTH", FK_AUTH);
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
