"""Write the handshake fuzzer's seed corpus (tests/fuzz/corpus/handshake) from the byte conversations of
tests/gateway/test_tunnels.py and tests/gateway/protocol/. Run again after changing it:

    .venv/bin/python tests/fuzz/seeds.py

Each seed: a flags byte, a chunk-size byte, then the client's bytes (the format in fuzz_handshake.c)."""

from __future__ import annotations

from pathlib import Path

HTTP, SNIFF, SOCKS = 0, 1, 2
ACCEPT, EOF, LOCAL, HANGUP = 0x04, 0x20, 0x40, 0x80
HEAD_16, HEAD_64, HEAD_512, HEAD_16K = 0x00, 0x08, 0x10, 0x18

PORT = (8080).to_bytes(2, "big")
USERPASS = b"\x05\x01\x02" + b"\x01\x03rot\x02pw"
IPV4_REQ = b"\x05\x01\x00\x01\x7f\x00\x00\x01" + PORT
CONNECT = (
    b"CONNECT 127.0.0.1:8080 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nProxy-Authorization: Basic cm90OnB3\r\n\r\n"
)

SEEDS: dict[str, tuple[int, bytes]] = {
    "connect": (HTTP | ACCEPT | HEAD_16K, CONNECT),
    "connect_early_data": (HTTP | ACCEPT | HEAD_16K, CONNECT + b"GET /early HTTP/1.1\r\nHost: x\r\n\r\n"),
    "connect_ipv6": (HTTP | HEAD_512, b"CONNECT [::1]:443 HTTP/1.1\r\nHost: [::1]:443\r\n\r\n"),
    "connect_no_host": (HTTP | HEAD_512 | EOF, b"CONNECT h HTTP/1.1\r\n\r\n"),
    "connect_head_too_big": (HTTP | HEAD_64, CONNECT),
    "get_absolute": (HTTP | HEAD_512, b"GET http://127.0.0.1:8080/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"),
    "sniffed_socks_userpass": (
        SNIFF | ACCEPT | HEAD_16K,
        USERPASS + IPV4_REQ + b"GET /piped HTTP/1.1\r\n\r\n",
    ),
    "socks_userpass_ipv4": (SOCKS | ACCEPT | HEAD_16K, USERPASS + IPV4_REQ),
    "socks_userpass_refused": (SOCKS | HEAD_16K, b"\x05\x01\x02\x01\x03rot\x02pw"),
    "socks_bad_auth_version": (SOCKS | ACCEPT | HEAD_16K, b"\x05\x01\x02\x02\x03rot\x02pw"),
    "socks_udp_associate": (
        SOCKS | ACCEPT | HEAD_16K,
        USERPASS + b"\x04\x01\x00\x01\x7f\x00\x00\x01\x00\x50",
    ),
    "socks_noauth_domain": (
        SOCKS | ACCEPT | HEAD_16K,
        b"\x05\x02\x00\x02" + b"\x01\x03rot\x02pw" + b"\x05\x01\x00\x03\x09127.0.0.1" + PORT,
    ),
    "socks_noauth_ipv6": (
        SOCKS | ACCEPT | LOCAL | HEAD_16K,
        b"\x05\x01\x00" + b"\x05\x01\x00\x04" + bytes(15) + b"\x01\x00\x50",
    ),
    "socks_no_methods": (SOCKS | ACCEPT | HEAD_16K, b"\x05\x00"),
    "socks4": (SOCKS | ACCEPT | HEAD_16K | EOF, b"\x04\x01\x00\x50\x7f\x00\x00\x01\x00"),
    "socks_bind_cmd": (
        SOCKS | ACCEPT | HEAD_16K,
        b"\x05\x01\x00" + b"\x05\x02\x00\x01\x7f\x00\x00\x01" + PORT,
    ),
    "socks_bad_atyp": (
        SOCKS | ACCEPT | HEAD_16K,
        b"\x05\x01\x00" + b"\x05\x01\x00\x07\x7f\x00\x00\x01" + PORT,
    ),
    "socks_hangup_before_answer": (SOCKS | ACCEPT | HANGUP | HEAD_16K, b"\x05\x01\x00" + IPV4_REQ),
    "connect_hangup_before_answer": (HTTP | HANGUP | HEAD_16K, CONNECT),
    "socks_eof_mid_auth": (SOCKS | ACCEPT | HEAD_16K | EOF, b"\x05\x01\x02\x01\x03ro"),
}


def main() -> None:
    out = Path(__file__).parent / "corpus" / "handshake"
    out.mkdir(parents=True, exist_ok=True)
    for name, (flags, data) in SEEDS.items():
        for chunk in (0, 255):  # byte at a time, and whole
            (out / f"{name}_{chunk + 1}").write_bytes(bytes([flags, chunk]) + data)


if __name__ == "__main__":
    main()
