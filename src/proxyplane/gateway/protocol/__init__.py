"""Sans-IO protocol parsers for the gateway: bytes in, events out, no sockets."""

from .errors import ProtocolError

__all__ = ["ProtocolError"]
