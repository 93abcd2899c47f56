"""A switchable TCP gate on 127.0.0.1, to make a real database unreachable, hung, or reachable again.

    gate = TcpGate(target=("127.0.0.1", 5432)).start()     # or target="/path/to/.s.PGSQL.5432" (unix socket)
    gate.mode = "refuse"    # accept, then close at once: clients fail fast (connection reset)
    gate.mode = "hang"      # accept, never answer: clients wait until their own timeout
    gate.mode = "forward"   # pipe bytes to the target: the database is back

Modes apply to new connections; `drop()` also cuts the ones already open.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading


class TcpGate:
    def __init__(self, target: tuple[str, int] | str | None = None, mode: str = "refuse") -> None:
        self.target = target
        self.mode = mode
        self.port = 0
        self.connections = 0
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.base_events.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._thread = threading.Thread(target=self._loop.run_forever, name="tcp-gate", daemon=True)

    def start(self) -> TcpGate:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._handle, "127.0.0.1", 0), self._loop
        ).result(10)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def url(self, user: str = "postgres", database: str = "postgres") -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{database}"

    def drop(self) -> None:
        def close_all() -> None:
            for writer in list(self._writers):
                writer.close()

        self._loop.call_soon_threadsafe(close_all)

    def stop(self) -> None:
        if self._server is not None:
            self._loop.call_soon_threadsafe(self._server.close)
        self.drop()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)

    def __enter__(self) -> TcpGate:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.add(writer)
        try:
            if self.mode == "refuse":
                return
            if self.mode == "hang":
                with contextlib.suppress(ConnectionError):
                    while await reader.read(65536):
                        pass
                return
            if isinstance(self.target, str):
                up_reader, up_writer = await asyncio.open_unix_connection(self.target)
            else:
                assert self.target is not None
                up_reader, up_writer = await asyncio.open_connection(*self.target)
            self._writers.add(up_writer)
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        except (ConnectionError, OSError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()
