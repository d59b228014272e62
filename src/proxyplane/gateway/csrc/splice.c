/* Zero-copy relaying of long tunnels: splice() through one pipe the whole engine shares.
 *
 * Once a tunnel relayed splice_after bytes (set_splice), its reads go from the socket into the engine's
 * pipe and from there straight into the other socket, without passing through user space. The pipe is
 * empty between two calls: what the other socket cannot take at once is read out of the pipe into the
 * tunnel's queue (as the copying path queues what send() did not take), so a tunnel holds no descriptor
 * more than before. An error that would leave bytes in the pipe drains it, so no tunnel ever sees
 * another's bytes. */
#include "tunnels.h"

#include <fcntl.h>

#ifndef F_SETPIPE_SZ
#define F_SETPIPE_SZ 1031
#define F_GETPIPE_SZ 1032
#endif

static void s_off(Engine *e) {
    if (e->spr >= 0) close(e->spr);
    if (e->spw >= 0) close(e->spw);
    e->spr = e->spw = -1;
    e->splice_after = 0;
}

/* Empty the pipe (discarding left bytes); when it cannot be emptied, splice is switched off. */
static void s_drain(Engine *e, size_t left) {
    while (left) {
        ssize_t r = read(e->spr, e->scratch, left < e->scratch_size ? left : e->scratch_size);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            s_off(e);
            return;
        }
        left -= (size_t)r;
    }
}

/* Move up to one chunk from src to dst; what dst does not take is queued in q. The bytes read (> 0),
 * 0 at EOF, -1 (errno) when src has nothing or failed, -2 when the tunnel must be closed. */
ssize_t tn_splice_move(Engine *e, int src, int dst, buf_t *q) {
    ssize_t n = splice(src, NULL, e->spw, NULL, e->splice_chunk, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (n <= 0) return n;
    size_t left = (size_t)n;
    while (left) {
        ssize_t w = splice(e->spr, NULL, dst, NULL, left, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (w > 0) {
            left -= (size_t)w;
            continue;
        }
        if (w < 0 && (errno == EAGAIN || errno == EINTR)) break;
        s_drain(e, left); /* the other side is gone */
        return -2;
    }
    if (left && tn_buf_reserve(q, left) < 0) {
        s_drain(e, left);
        return -2;
    }
    while (left) {
        ssize_t r = read(e->spr, q->p + q->len, left);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            s_drain(e, left);
            return -2;
        }
        q->len += (size_t)r;
        left -= (size_t)r;
    }
    return n;
}

/* set_splice(after): tunnels that relayed `after` bytes move the rest with splice (0: never) */
PyObject *Engine_set_splice(Engine *e, PyObject *args) {
    unsigned long long after;
    if (!PyArg_ParseTuple(args, "K", &after)) return NULL;
    if (after == 0) {
        e->splice_after = 0;
        Py_RETURN_NONE;
    }
    if (e->spr < 0) {
        int p[2];
        if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0) return PyErr_SetFromErrno(PyExc_OSError);
        e->spr = p[0];
        e->spw = p[1];
        fcntl(e->spw, F_SETPIPE_SZ, (int)e->scratch_size); /* else the default (64 KiB) */
        int size = fcntl(e->spw, F_GETPIPE_SZ);
        e->splice_chunk = size > 0 && (size_t)size < e->scratch_size ? (size_t)size : e->scratch_size;
    }
    e->splice_after = after;
    Py_RETURN_NONE;
}

void tn_splice_free(Engine *e) { s_off(e); }
