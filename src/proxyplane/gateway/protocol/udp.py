"""SOCKS5 UDP request header (RFC 1928 section 7): RSV(2) FRAG(1) ATYP addr port, then the payload."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import ProtocolError
from .socks5 import decode_address, encode_address


@dataclass(slots=True, frozen=True)
class UdpDatagram:
    frag: int
    host: str
    port: int
    payload: bytes


def parse_udp_datagram(data: bytes) -> UdpDatagram:
    if len(data) < 4:
        raise ProtocolError("UDP datagram too short")
    if data[0] != 0 or data[1] != 0:
        raise ProtocolError("UDP datagram RSV must be zero")
    decoded = decode_address(data, 3)
    if decoded is None:
        raise ProtocolError("UDP datagram truncated")
    host, port, _atyp, end = decoded
    return UdpDatagram(data[2], host, port, data[end:])


def build_udp_datagram(host: str, port: int, payload: bytes, frag: int = 0) -> bytes:
    return b"\x00\x00" + bytes((frag,)) + encode_address(host, port) + payload
