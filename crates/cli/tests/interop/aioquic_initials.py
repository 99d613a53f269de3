"""Write the first datagram of COUNT fresh aioquic client connections to stdout.

Usage: aioquic_initials.py COUNT ALPN

Each connection offers ALPN and server name ``localhost`` and has its own connection IDs and
TLS keys, so each datagram is a valid client Initial (padded to 1200 bytes) of a connection a
server has never seen. Each is written as a 2-byte big-endian length and the datagram.
"""

from __future__ import annotations

import struct
import sys
import time

from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import QuicConnection

SERVER_NAME = "localhost"


def main() -> int:
    count = int(sys.argv[1])
    alpn = sys.argv[2]
    out = sys.stdout.buffer
    for _ in range(count):
        configuration = QuicConfiguration(
            is_client=True, alpn_protocols=[alpn], server_name=SERVER_NAME
        )
        connection = QuicConnection(configuration=configuration)
        now = time.monotonic()
        # The address is only where aioquic would send: the caller sends the bytes itself.
        connection.connect(("127.0.0.1", 9), now=now)
        datagram = connection.datagrams_to_send(now=now)[0][0]
        out.write(struct.pack(">H", len(datagram)))
        out.write(datagram)
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
