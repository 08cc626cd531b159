"""An OTLP/HTTP trace receiver on loopback, for testing and measuring traces offline.

:class:`OTLPReceiver` takes what an OTLP/HTTP exporter sends to ``POST /v1/traces``
(protobuf, optionally gzipped), decodes it with ``opentelemetry-proto`` (the ``otel``
extra) and keeps every span as a :class:`ReceivedSpan`::

    async with OTLPReceiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url}   # for `mail server`
        ...
        spans = await receiver.wait_for(lambda spans: any(s.name == "mail task" for s in spans))
        print(render_trace(spans))

``python -m mail.testing.otlp --port 4318`` serves it until interrupted and prints each
trace as text when it has been quiet for a second (``--quiet``: prints nothing, keeps
nothing). This module imports aiohttp;
``import mail.testing`` does not import it.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from mail.testing._loopback import LoopbackApp

__all__ = ["OTLPReceiver", "ReceivedSpan", "render_trace"]

#: ``Status.code`` of a span that failed (``STATUS_CODE_ERROR``)
_STATUS_ERROR = 2
_KINDS = {0: "UNSPECIFIED", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}


@dataclass(frozen=True, slots=True)
class ReceivedSpan:
    """A span as an exporter sent it: ids in hex, ``parent_id`` empty for a root."""

    service: str
    name: str
    kind: str
    trace_id: str
    span_id: str
    parent_id: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any] = field(default_factory=dict)
    error: bool = False


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return None if kind is None else getattr(value, kind)


class OTLPReceiver(LoopbackApp):
    """Receives OTLP/HTTP traces on ``127.0.0.1`` (an async context manager); ``spans``
    holds what arrived, ``requests`` counts the export requests."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(host=host, port=port)
        self.spans: list[ReceivedSpan] = []
        self.requests = 0
        self._arrived = asyncio.Condition()

    @property
    def url(self) -> str:
        """The base URL an exporter's endpoint is set to (``/v1/traces`` is appended)."""
        return f"http://{self._host}:{self._port}"

    def _routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/traces", self._traces)

    async def _traces(self, request: web.Request) -> web.Response:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: PLC0415
            ExportTraceServiceRequest,
            ExportTraceServiceResponse,
        )

        body = await request.read()
        if request.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        export = ExportTraceServiceRequest()
        export.ParseFromString(body)
        self.spans.extend(decode(export))
        self.requests += 1
        async with self._arrived:
            self._arrived.notify_all()
        return web.Response(
            body=ExportTraceServiceResponse().SerializeToString(),
            content_type="application/x-protobuf",
        )

    async def wait_for(
        self, done: Callable[[list[ReceivedSpan]], bool], timeout: float = 20.0
    ) -> list[ReceivedSpan]:
        """Wait until ``done(spans)`` holds (``TimeoutError`` after ``timeout`` seconds);
        the spans received by then."""
        async with asyncio.timeout(timeout), self._arrived:
            await self._arrived.wait_for(lambda: done(self.spans))
        return list(self.spans)


def decode(export: Any) -> list[ReceivedSpan]:
    """The spans of an ``ExportTraceServiceRequest``."""
    spans: list[ReceivedSpan] = []
    for resource_spans in export.resource_spans:
        resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
        service = str(resource.get("service.name", ""))
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    ReceivedSpan(
                        service=service,
                        name=span.name,
                        kind=_KINDS.get(span.kind, str(span.kind)),
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_id=span.parent_span_id.hex(),
                        start_ns=span.start_time_unix_nano,
                        end_ns=span.end_time_unix_nano,
                        attributes={a.key: _value(a.value) for a in span.attributes},
                        error=span.status.code == _STATUS_ERROR,
                    )
                )
    return spans


#: attributes shown beside a span's name in :func:`render_trace`
_SHOWN = (
    "mail.task.id",
    "mail.task.status",
    "gen_ai.agent.name",
    "gen_ai.request.model",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.tool.name",
    "mail.peer",
    "http.route",
    "http.response.status_code",
)


def render_trace(spans: Sequence[ReceivedSpan]) -> str:
    """The spans of one trace as an indented tree: service, name, kind, milliseconds and
    a few attributes per line, children after their parent in start order."""
    by_id = {s.span_id: s for s in spans}
    children: dict[str, list[ReceivedSpan]] = {}
    for span in spans:
        parent = span.parent_id if span.parent_id in by_id else ""
        children.setdefault(parent, []).append(span)
    lines: list[str] = []

    def walk(parent: str, depth: int) -> None:
        for span in sorted(children.get(parent, []), key=lambda s: s.start_ns):
            ms = (span.end_ns - span.start_ns) / 1e6
            shown = " ".join(
                f"{k.rsplit('.', 1)[-1] if k.startswith('gen_ai.usage') else k}={span.attributes[k]}"
                for k in _SHOWN
                if k in span.attributes
            )
            error = " ERROR" if span.error else ""
            lines.append(
                f"{'  ' * depth}[{span.service}] {span.name} ({span.kind.lower()}, {ms:.1f} ms)"
                f"{error}{' ' + shown if shown else ''}"
            )
            walk(span.span_id, depth + 1)

    walk("", 0)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m mail.testing.otlp``: receive traces and print each one as text."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=4318)
    parser.add_argument("--quiet", action="store_true", help="count the spans, print none")
    args = parser.parse_args(argv)
    try:
        asyncio.run(_serve(args.host, args.port, args.quiet))
    except KeyboardInterrupt:
        return 0
    return 0


async def _serve(host: str, port: int, quiet: bool) -> None:
    async with OTLPReceiver(host=host, port=port) as receiver:
        print(f"receiving OTLP/HTTP traces at {receiver.url}/v1/traces", flush=True)  # noqa: T201
        shown = 0
        while True:
            await asyncio.sleep(1.0)
            if quiet:
                receiver.spans.clear()
                continue
            if len(receiver.spans) == shown:
                continue
            fresh = receiver.spans[shown:]
            shown = len(receiver.spans)
            for trace_id in dict.fromkeys(s.trace_id for s in fresh):
                trace = [s for s in receiver.spans if s.trace_id == trace_id]
                print(f"trace {trace_id}\n{render_trace(trace)}\n", flush=True)  # noqa: T201


if __name__ == "__main__":
    raise SystemExit(main())
