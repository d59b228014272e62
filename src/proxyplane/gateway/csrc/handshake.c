/* Framing the handshakes: a CONNECT head; the SOCKS5 greeting, RFC 1929 credentials and request. */
#include "tunnels.h"


/* -- handshake framing -- */
void tn_advance(Engine *e, conn_t *c);

void tn_read_handshake(Engine *e, conn_t *c) {
    size_t limit = e->max_head + HS_LIMIT_EXTRA;
    for (;;) {
        if (c->in.len >= limit) break;
        if (tn_buf_reserve(&c->in, 4096) < 0) {
            tn_conn_close(e, c, WHY_GONE);
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
            tn_conn_close(e, c, WHY_GONE);
            return;
        }
        if (errno == EAGAIN || errno == EINTR) break;
        tn_conn_close(e, c, WHY_GONE);
        return;
    }
    if (c->state != S_WAIT && c->state != S_CONNECTING) tn_advance(e, c);
    if (c->state != S_DEAD) tn_update(e, c);
}

void tn_advance(Engine *e, conn_t *c) {
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
                tn_handoff(e, c, K_HTTP);
                return;
            }
            if (n < 8) return;
            char *end = memmem(p, n, "\r\n\r\n", 4);
            if (!end) {
                if (n > e->max_head) tn_handoff(e, c, K_HTTP);
                return;
            }
            size_t idx = (size_t)(end - (char *)p);
            if (idx > e->max_head) {
                tn_handoff(e, c, K_HTTP);
                return;
            }
            tn_fast_key(e, c, 'C', 0, p, idx);
            fentry_t *f = tn_fast_find(e, c);
            if (f && f->kind == FK_OPEN && e->svcs[f->svc].credits > 0) { /* decided before: open it */
                tn_buf_free(&c->key);
                tn_buf_consume(&c->in, idx + 4);
                tn_fast_open(e, c, f);
                return;
            }
            PyObject *head = PyBytes_FromStringAndSize((char *)p, (Py_ssize_t)idx);
            tn_push(e, Py_BuildValue("(iKiNNN)", EV_CONNECT, (unsigned long long)c->id, c->tag, head,
                                     tn_client_ip(c), tn_local_ip(c)));
            tn_buf_consume(&c->in, idx + 4);
            c->state = S_WAIT;
            return;
        }
        case S_GREET: {
            if (n == 0) return;
            if (p[0] != 5 || (n >= 2 && p[1] == 0)) { /* nothing written yet: Python's parser answers */
                tn_handoff(e, c, K_SOCKS);
                return;
            }
            if (n < 2 || n < 2u + p[1]) return;
            int userpass = 0, noauth = 0;
            for (unsigned i = 0; i < p[1]; i++) {
                if (p[2 + i] == 2) userpass = 1;
                if (p[2 + i] == 0) noauth = 1;
            }
            tn_buf_consume(&c->in, 2u + p[1]);
            if (userpass) {
                if (tn_client_write(e, c, "\x05\x02", 2) < 0) return;
                c->state = S_AUTH;
                continue;
            }
            if (noauth) {
                tn_fast_key(e, c, 'N', 0, NULL, 0);
                fentry_t *f = tn_fast_find(e, c);
                if (f && f->kind == FK_AUTH) { /* the whitelist decision, made before */
                    tn_buf_free(&c->key);
                    if (tn_client_write(e, c, "\x05\x00", 2) < 0) return;
                    c->auth = f;
                    f->refs++;
                    c->state = S_REQ;
                    continue;
                }
                tn_push(e, Py_BuildValue("(iKiNN)", EV_SOCKS_NOAUTH, (unsigned long long)c->id, c->tag,
                                         tn_client_ip(c), tn_local_ip(c)));
                c->state = S_WAIT;
                return;
            }
            send(c->cfd, "\x05\xff", 2, MSG_NOSIGNAL);
            tn_conn_close(e, c, WHY_REFUSED);
            return;
        }
        case S_AUTH: {
            if (n == 0) return;
            if (p[0] != 1) {
                send(c->cfd, "\x01\x01", 2, MSG_NOSIGNAL);
                tn_conn_close(e, c, WHY_PROTOCOL);
                return;
            }
            if (n < 3 || n < 3u + p[1]) return;
            size_t ulen = p[1], plen = p[2 + ulen];
            if (n < 3 + ulen + plen) return;
            tn_fast_key(e, c, 'S', 0, p + 1, 2 + ulen + plen);
            fentry_t *f = tn_fast_find(e, c);
            if (f && f->kind == FK_AUTH) { /* these credentials were accepted before */
                tn_buf_free(&c->key);
                tn_buf_consume(&c->in, 3 + ulen + plen);
                if (tn_client_write(e, c, "\x01\x00", 2) < 0) return;
                c->auth = f;
                f->refs++;
                c->state = S_REQ;
                continue;
            }
            PyObject *login = PyBytes_FromStringAndSize((char *)p + 2, (Py_ssize_t)ulen);
            PyObject *password = PyBytes_FromStringAndSize((char *)p + 3 + ulen, (Py_ssize_t)plen);
            tn_push(e, Py_BuildValue("(iKiNNNN)", EV_SOCKS_AUTH, (unsigned long long)c->id, c->tag, login,
                                     password, tn_client_ip(c), tn_local_ip(c)));
            tn_buf_consume(&c->in, 3 + ulen + plen);
            c->state = S_WAIT;
            return;
        }
        case S_REQ: {
            if (n == 0) return;
            if (p[0] != 5) {
                tn_socks_fail(e, c, 1, WHY_PROTOCOL);
                return;
            }
            if (n < 4) return;
            int cmd = p[1], atyp = p[3];
            if (cmd != 1 && cmd != 3) {
                tn_socks_fail(e, c, 7, WHY_PROTOCOL);
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
                tn_socks_fail(e, c, 8, WHY_PROTOCOL);
                return;
            }
            int port = (p[end] << 8) | p[end + 1];
            fentry_t *auth = c->auth;
            tn_buf_free(&c->key);
            if (auth && cmd == 1 && atyp != 3) { /* a CONNECT to an address: decided before? */
                tn_fast_key(e, c, 'R', auth->id, p, end + 2);
                fentry_t *f = tn_fast_find(e, c);
                if (f && f->kind == FK_OPEN && e->svcs[f->svc].credits > 0) {
                    Py_DECREF(host);
                    tn_buf_free(&c->key);
                    tn_buf_consume(&c->in, end + 2);
                    tn_fast_open(e, c, f);
                    return;
                }
            }
            if (auth && !c->auth_py) /* accepted by the cache: Python learns whose request it is */
                tn_push(e, Py_BuildValue("(iKIiiNi)", EV_FAST_SOCKS_REQUEST, (unsigned long long)c->id,
                                         auth->id, cmd, atyp, host, port));
            else
                tn_push(e, Py_BuildValue("(iKiiNi)", EV_SOCKS_REQUEST, (unsigned long long)c->id, cmd, atyp,
                                         host, port));
            tn_buf_consume(&c->in, end + 2);
            c->state = S_WAIT;
            return;
        }
        default:
            return;
        }
    }
}
