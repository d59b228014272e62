/* libFuzzer target: the C tunnel engine's handshake framing (csrc/handshake.c) driven through its real
 * entry points. A client's bytes reach a real socketpair in chunks, tn_read_handshake() recv()s and
 * frames them (CONNECT head; SOCKS5 greeting, RFC 1929 credentials, request), and where Python would
 * decide the harness answers through Engine_send() as the gateway does (accept or refuse).
 *
 * Input: byte 0 = flags (bit 0-1 listener: HTTP, HTTP sniffing SOCKS5, SOCKS5; bit 2 accept; bits 3-4
 * max_head 16/64/512/16384; bit 5 client EOF at the end; bit 6 a static listener's local address; bit 7 the
 * client hangs up before each answer), byte 1 = chunk size - 1, then the client bytes.
 * Checked beyond ASan/UBSan: the unconsumed bytes are always the tail of what the client sent, a handed-off
 * connection carries exactly those bytes, a CONNECT head fits max_head and was followed by CRLFCRLF, SOCKS5
 * credentials and address/port are bytes the client sent, fields are in range. Built and run by
 * scripts/fuzz.sh (the engine's C files linked, Python embedded).
 * The decision cache (csrc/fast.c) is on: an accepted handshake is also cached (fast_put) the way Python
 * caches it, so later inputs with the same bytes take the engine's own path (SOCKS5 credentials answered,
 * tunnels dialled to a closed loopback port, their failure handed back); entries are counted, freed and
 * forgotten between inputs. */
#include "../../src/proxyplane/gateway/csrc/tunnels.h"

#include <assert.h>
#include <fcntl.h>
#include <stdio.h>

static Engine engine;
static void call(PyObject *(*method)(Engine *, PyObject *), PyObject *args);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    Py_InitializeEx(0);
    engine.epfd = epoll_create1(EPOLL_CLOEXEC);
    engine.all.next = engine.all.prev = &engine.all;
    engine.pending = PyList_New(0);
    engine.now = tn_mono_now();
    call(Engine_fast_enable, Py_BuildValue("(y)", "HTTP/1.1 200 Connection established\r\n\r\n"));
    call(Engine_fast_lease, Py_BuildValue("(Il)", 0u, 1L << 40));
    return 0;
}

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "fuzz_handshake: check failed: %s (line %d)\n", #cond, __LINE__); \
            abort();                                                                  \
        }                                                                             \
    } while (0)

/* an engine method with these arguments; its result must not be an exception */
static void call(PyObject *(*method)(Engine *, PyObject *), PyObject *args) {
    CHECK(args != NULL);
    PyObject *res = method(&engine, args);
    CHECK(res != NULL);
    Py_DECREF(res);
    Py_DECREF(args);
}

static unsigned int next_entry = 1;

/* cache the decision being answered, as fastpath.py does for an accepted handshake */
static void cache(unsigned long long id, int kind, int socks) {
    call(Engine_fast_put, Py_BuildValue("(KiIIisi(s))", id, kind, next_entry++, 0u, socks, "127.0.0.1", 9,
                                        "127.0.0.1"));
}

typedef struct {
    const uint8_t *sent; /* what the client has sent so far: data[0..nsent) */
    size_t nsent;
    int accept, done, peer, hangup;
    unsigned long long id;
    conn_t *c;
} run_t;

static void answer(run_t *r, const char *reply, size_t len, int next) {
    if (r->hangup) { /* the client hangs up while Python decides: the engine reads EOF in S_WAIT */
        shutdown(r->peer, SHUT_WR);
        tn_read_handshake(&engine, r->c);
    }
    PyObject *args = Py_BuildValue("(Ky#i)", r->id, reply, (Py_ssize_t)len, next);
    CHECK(args != NULL);
    PyObject *res = Engine_send(&engine, args);
    CHECK(res != NULL);
    Py_DECREF(res);
    Py_DECREF(args);
}

/* Take the engine's events, check them, and answer as Python's gateway would. */
static void events(run_t *r) {
    while (PyList_GET_SIZE(engine.pending)) {
        PyObject *list = engine.pending;
        engine.pending = PyList_New(0);
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
            PyObject *ev = PyList_GET_ITEM(list, i);
            int kind = (int)PyLong_AsLong(PyTuple_GET_ITEM(ev, 0));
            if (kind == EV_HANDOFF) {
                PyObject *data = PyTuple_GET_ITEM(ev, 3);
                size_t n = (size_t)PyBytes_GET_SIZE(data);
                CHECK(n <= r->nsent);
                CHECK(memcmp(PyBytes_AS_STRING(data), r->sent + r->nsent - n, n) == 0);
                close((int)PyLong_AsLong(PyTuple_GET_ITEM(ev, 2)));
                r->done = 1;
            } else if (kind == EV_CLOSED) {
                r->done = 1;
            } else if (kind == EV_CONNECT) {
                PyObject *head = PyTuple_GET_ITEM(ev, 3);
                size_t n = (size_t)PyBytes_GET_SIZE(head);
                CHECK(n <= engine.max_head && n >= 8 && memcmp(PyBytes_AS_STRING(head), "CONNECT ", 8) == 0);
                const uint8_t *at = memmem(r->sent, r->nsent, PyBytes_AS_STRING(head), n);
                CHECK(at != NULL && (size_t)(at - r->sent) + n + 4 <= r->nsent);
                CHECK(memcmp(at + n, "\r\n\r\n", 4) == 0);
                if (!r->done && r->accept) cache(r->id, FK_OPEN, 0);
                if (!r->done) answer(r, "HTTP/1.1 407 x\r\n\r\n", 18, NEXT_CLOSE);
            } else if (kind == EV_SOCKS_NOAUTH) {
                if (!r->done && r->accept) cache(r->id, FK_AUTH, 1);
                if (!r->done) answer(r, r->accept ? "\x05\x00" : "\x05\xff", 2, r->accept ? NEXT_REQUEST : 0);
            } else if (kind == EV_SOCKS_AUTH) {
                PyObject *login = PyTuple_GET_ITEM(ev, 3), *password = PyTuple_GET_ITEM(ev, 4);
                size_t ul = (size_t)PyBytes_GET_SIZE(login), pl = (size_t)PyBytes_GET_SIZE(password);
                CHECK(ul <= 255 && pl <= 255);
                uint8_t msg[3 + 255 + 255] = {1, (uint8_t)ul}; /* the credentials are what the client sent */
                memcpy(msg + 2, PyBytes_AS_STRING(login), ul);
                msg[2 + ul] = (uint8_t)pl;
                memcpy(msg + 3 + ul, PyBytes_AS_STRING(password), pl);
                CHECK(memmem(r->sent, r->nsent, msg, 3 + ul + pl) != NULL);
                if (!r->done && r->accept) cache(r->id, FK_AUTH, 1);
                if (!r->done) answer(r, r->accept ? "\x01\x00" : "\x01\x01", 2, r->accept ? NEXT_REQUEST : 0);
            } else if (kind == EV_FAST_FAILED || kind == EV_FAST_SOCKS_REQUEST) {
                /* a cached tunnel's connect failed / a request under cached credentials: Python replies */
                CHECK(PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(ev, 1)) == r->id);
                if (!r->done) answer(r, "\x05\x01\x00\x01\x00\x00\x00\x00\x00\x00", 10, NEXT_CLOSE);
            } else if (kind == EV_SOCKS_REQUEST) {
                int cmd = (int)PyLong_AsLong(PyTuple_GET_ITEM(ev, 2));
                int atyp = (int)PyLong_AsLong(PyTuple_GET_ITEM(ev, 3));
                long port = PyLong_AsLong(PyTuple_GET_ITEM(ev, 5));
                CHECK((cmd == 1 || cmd == 3) && (atyp == 1 || atyp == 3 || atyp == 4));
                CHECK(port >= 0 && port <= 65535);
                uint8_t msg[1 + 1 + 255 + 2] = {(uint8_t)atyp}; /* address and port as the client sent them */
                size_t len;
                PyObject *host = PyTuple_GET_ITEM(ev, 4);
                if (atyp == 3) {
                    len = (size_t)PyBytes_GET_SIZE(host);
                    msg[1] = (uint8_t)len;
                    memcpy(msg + 2, PyBytes_AS_STRING(host), len);
                    len += 2;
                } else {
                    CHECK(inet_pton(atyp == 1 ? AF_INET : AF_INET6, PyUnicode_AsUTF8(host), msg + 1) == 1);
                    len = atyp == 1 ? 5 : 17;
                }
                msg[len] = (uint8_t)(port >> 8);
                msg[len + 1] = (uint8_t)port;
                CHECK(memmem(r->sent, r->nsent, msg, len + 2) != NULL);
                if (!r->done && r->accept && cmd == 1 && atyp != 3) cache(r->id, FK_OPEN, 1);
                if (!r->done) answer(r, "\x05\x02\x00\x01\x00\x00\x00\x00\x00\x00", 10, NEXT_CLOSE);
            }
        }
        Py_DECREF(list);
    }
    if (!r->done) {
        conn_t *c = r->c;
        CHECK(tn_conn_get(&engine, r->id) == c);
        CHECK(c->in.len <= r->nsent);
        CHECK(c->in.len == 0 || memcmp(c->in.p, r->sent + r->nsent - c->in.len, c->in.len) == 0);
    }
}

static void drain(int fd) {
    char sink[4096];
    while (recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0) {
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const size_t heads[] = {16, 64, 512, 16384};
    if (size < 2) return 0;
    int flags = data[0];
    size_t chunk = (size_t)data[1] + 1;
    data += 2;
    size -= 2;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0) abort();
    int big = 1 << 20;
    setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    engine.max_head = heads[(flags >> 3) & 3];
    conn_t *c = tn_conn_new(&engine, sv[0]);
    CHECK(c != NULL);
    int listener = flags & 3;
    c->kind = listener == 2 ? K_SOCKS : K_HTTP;
    c->sniff = listener == 1;
    c->state = listener == 2 ? S_GREET : S_HTTP;
    c->cfamily = AF_INET;
    memcpy(c->caddr, "\x7f\x00\x00\x01", 4);
    c->lfamily = (flags & 0x40) ? AF_INET : 0;
    memcpy(c->laddr, "\x7f\x00\x01\x02", 4);
    tn_add_fd(&engine, c, 0, EPOLLIN);
    run_t r = {data, 0, (flags >> 2) & 1, 0, sv[1], flags >> 7, c->id, c};
    while (!r.done && r.nsent < size) {
        size_t n = size - r.nsent < chunk ? size - r.nsent : chunk;
        ssize_t w = send(sv[1], data + r.nsent, n, MSG_NOSIGNAL);
        if (w <= 0) break; /* the engine closed its end */
        r.nsent += (size_t)w;
        tn_read_handshake(&engine, c);
        events(&r);
        drain(sv[1]);
    }
    if (!r.done && (flags & 0x20)) {
        shutdown(sv[1], SHUT_WR);
        tn_read_handshake(&engine, c);
        events(&r);
    }
    if (!r.done) {
        tn_conn_close(&engine, c, WHY_SHUTDOWN);
        Py_CLEAR(engine.pending);
        engine.pending = PyList_New(0);
    }
    tn_reap(&engine);
    close(sv[1]);
    call(Engine_fast_counts, PyTuple_New(0)); /* frees what was forgotten */
    if ((next_entry & 63) == 0) call(Engine_fast_forget, Py_BuildValue("(s)", "127.0.0.1"));
    if ((next_entry & 1023) == 0) call(Engine_fast_forget, Py_BuildValue("(z)", NULL));
    return 0;
}
