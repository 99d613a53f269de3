"""Fetch N bytes from an hq-interop (HTTP/0.9 over QUIC) server with aioquic.

Usage: aioquic_fetch.py HOST PORT CAFILE SIZE [--timeout SECONDS]

Connects to HOST:PORT with server name ``localhost``, trusting only CAFILE,
offers ALPN ``hq-interop``, sends ``GET /SIZE`` on one bidirectional stream
and reads the answer to its end. Prints one JSON line
``{"bytes": N, "sha256": "...", "retried": false, ...}`` and exits 0; on any failure (handshake,
wrong ALPN, stream reset, connection closed by the peer with an error,
timeout, short answer) prints a message on stderr and exits 1.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import ssl
import sys
import time
from typing import Any

from aioquic.asyncio.client import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import (
    ConnectionTerminated,
    QuicEvent,
    StreamDataReceived,
    StreamReset,
)

ALPN = "hq-interop"
SERVER_NAME = "localhost"


class FetchError(Exception):
    """The fetch failed; the message says why."""


class HqClient(QuicConnectionProtocol):
    """Counts and hashes the bytes of one response stream."""

    last: HqClient | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        HqClient.last = self
        self.stream_id: int | None = None
        self.received = 0
        self.digest = hashlib.sha256()
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        # A failure may land after the waiter gave up (timeout): count it as seen.
        self.done.add_done_callback(lambda f: f.cancelled() or f.exception())
        self.terminated: ConnectionTerminated | None = None

    def _fail(self, message: str) -> None:
        if not self.done.done():
            self.done.set_exception(FetchError(message))

    def quic_event_received(self, event: QuicEvent) -> None:
        if isinstance(event, StreamDataReceived) and event.stream_id == self.stream_id:
            self.received += len(event.data)
            self.digest.update(event.data)
            if event.end_stream and not self.done.done():
                self.done.set_result(None)
        elif isinstance(event, StreamReset) and event.stream_id == self.stream_id:
            self._fail(f"server reset the stream with error code {event.error_code}")
        elif isinstance(event, ConnectionTerminated):
            self.terminated = event
            self._fail(
                "connection closed before the response ended: "
                f"error code {event.error_code:#x}, frame type {event.frame_type}, "
                f"reason {event.reason_phrase!r}, after {self.received} bytes"
            )
        # Not passed on to QuicConnectionProtocol: its default handler would buffer the whole
        # response in an asyncio StreamReader and make a writer for a stream already finished.

    def request(self, size: int) -> None:
        self.stream_id = self._quic.get_next_available_stream_id()
        self._quic.send_stream_data(
            self.stream_id, f"GET /{size}\r\n".encode("ascii"), end_stream=True
        )
        self.transmit()


async def fetch(host: str, port: int, cafile: str, size: int) -> dict[str, Any]:
    configuration = QuicConfiguration(
        is_client=True,
        alpn_protocols=[ALPN],
        server_name=SERVER_NAME,
        verify_mode=ssl.CERT_REQUIRED,
        idle_timeout=10.0,
    )
    configuration.load_verify_locations(cafile=cafile)
    started = time.monotonic()
    async with connect(
        host, port, configuration=configuration, create_protocol=HqClient
    ) as protocol:
        assert isinstance(protocol, HqClient)
        alpn = protocol._quic.tls.alpn_negotiated
        if alpn != ALPN:
            raise FetchError(f"server negotiated ALPN {alpn!r}, expected {ALPN!r}")
        handshake_s = time.monotonic() - started
        protocol.request(size)
        await protocol.done
        elapsed_s = time.monotonic() - started
        if protocol.received != size:
            raise FetchError(f"asked for {size} bytes, the stream ended after {protocol.received}")
        # Leaving the context closes the connection with NO_ERROR and waits for it to drain.
    return {
        "bytes": protocol.received,
        "sha256": protocol.digest.hexdigest(),
        "alpn": alpn,
        "handshake_s": round(handshake_s, 4),
        "elapsed_s": round(elapsed_s, 4),
        # The server answered the first Initial with Retry (address validation).
        "retried": protocol._quic._retry_count > 0,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("cafile")
    parser.add_argument("size", type=int)
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds for the whole fetch")
    args = parser.parse_args()
    try:
        result = asyncio.run(
            asyncio.wait_for(fetch(args.host, args.port, args.cafile, args.size), args.timeout)
        )
    except (asyncio.TimeoutError, TimeoutError):
        print(f"aioquic_fetch: timed out after {args.timeout} s", file=sys.stderr)
        return 1
    except ConnectionError as e:
        client = HqClient.last
        why = repr(e)
        if client is not None and client.terminated is not None:
            t = client.terminated
            why = f"error code {t.error_code:#x}, frame type {t.frame_type}, reason {t.reason_phrase!r}"
        print(f"aioquic_fetch: handshake failed: {why}", file=sys.stderr)
        return 1
    except FetchError as e:
        print(f"aioquic_fetch: {e}", file=sys.stderr)
        return 1
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
