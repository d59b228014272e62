/* The decision cache's bookkeeping methods (see fast.c): budget slots lent, per-service and per-entry
 * counts for Python's limiter and meter. */
#include "tunnels.h"

/* fast_lease(svc, n): n more budget slots of service svc for the engine's tunnels */
PyObject *Engine_fast_lease(Engine *e, PyObject *args) {
    unsigned int svc;
    long n;
    if (!PyArg_ParseTuple(args, "Il", &svc, &n)) return NULL;
    if (n < 0) return PyErr_Format(PyExc_ValueError, "n < 0");
    if (tn_fast_svc(e, svc) < 0) return PyErr_NoMemory();
    e->svcs[svc].credits += n;
    Py_RETURN_NONE;
}

/* fast_take(svc, n) -> k: take back up to n of its unused slots */
PyObject *Engine_fast_take(Engine *e, PyObject *args) {
    unsigned int svc;
    long n;
    if (!PyArg_ParseTuple(args, "Il", &svc, &n)) return NULL;
    if (svc >= e->nsvcs || n <= 0) return PyLong_FromLong(0);
    long k = e->svcs[svc].credits < n ? e->svcs[svc].credits : n;
    e->svcs[svc].credits -= k;
    return PyLong_FromLong(k);
}

/* fast_services() -> [(svc, unused slots, open, opened, closed)]; opened/closed since the last call */
PyObject *Engine_fast_services(Engine *e, PyObject *Py_UNUSED(arg)) {
    PyObject *out = PyList_New(0);
    for (uint32_t i = 0; out && i < e->nsvcs; i++) {
        fsvc_t *s = &e->svcs[i];
        if (!s->credits && !s->open && !s->opened && !s->closed) continue;
        PyObject *t = Py_BuildValue("(IllKK)", i, s->credits, s->open, s->opened, s->closed);
        s->opened = s->closed = 0;
        if (!t || PyList_Append(out, t) < 0) {
            Py_XDECREF(t);
            Py_CLEAR(out);
            break;
        }
        Py_DECREF(t);
    }
    return out;
}

/* fast_counts() -> ([(entry_id, requests, connections, up, down)], [freed entry ids]): what the fast
 * tunnels did since the last call (open ones included); forgotten entries no tunnel holds are freed */
PyObject *Engine_fast_counts(Engine *e, PyObject *Py_UNUSED(arg)) {
    for (conn_t *c = e->all.next; c != &e->all; c = c->next) {
        fentry_t *f = c->fast;
        if (!f) continue;
        f->up += c->up - c->seen_up;
        f->down += c->down - c->seen_down;
        c->seen_up = c->up;
        c->seen_down = c->down;
    }
    PyObject *counts = PyList_New(0), *freed = PyList_New(0);
    if (!counts || !freed) goto fail;
    for (fentry_t **at = &e->fall; *at;) {
        fentry_t *f = *at;
        if (f->requests || f->connections || f->up || f->down) {
            PyObject *t = Py_BuildValue("(IKKKK)", f->id, f->requests, f->connections, f->up, f->down);
            if (!t || PyList_Append(counts, t) < 0) {
                Py_XDECREF(t);
                goto fail;
            }
            Py_DECREF(t);
            f->requests = f->connections = f->up = f->down = 0;
        }
        if (!f->live && f->refs == 0) {
            PyObject *id = PyLong_FromUnsignedLong(f->id);
            if (!id || PyList_Append(freed, id) < 0) {
                Py_XDECREF(id);
                goto fail;
            }
            Py_DECREF(id);
            *at = f->anext;
            tn_fast_free(f);
            continue;
        }
        at = &f->anext;
    }
    return Py_BuildValue("(NN)", counts, freed);
fail:
    Py_XDECREF(counts);
    Py_XDECREF(freed);
    return NULL;
}

/* fast_cut(svc) -> [entry id per tunnel ended]: forget service svc's entries and end its open fast
 * tunnels now (its quota is used up: Python meters each ended tunnel as its own path does) */
PyObject *Engine_fast_cut(Engine *e, PyObject *args) {
    unsigned int svc;
    if (!PyArg_ParseTuple(args, "I", &svc)) return NULL;
    tn_fast_forget_svc(e, svc);
    PyObject *out = PyList_New(0);
    if (!out) return NULL;
    for (conn_t *c = e->all.next, *next; c != &e->all; c = next) {
        next = c->next;
        if (!c->fast || c->fast->svc != svc) continue;
        PyObject *id = PyLong_FromUnsignedLong(c->fast->id);
        if (!id || PyList_Append(out, id) < 0) {
            Py_XDECREF(id);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(id);
        tn_conn_close(e, c, WHY_DONE);
    }
    return out;
}
