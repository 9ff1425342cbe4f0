"""The minimal reference receiver of issue 4's Performance section, measured in the same run as steplens.

Decode the protobuf, ACK AT ONCE (before anything is committed: not durable, which is the point of
the comparison), and let one writer thread flatten the spans to columns in Python, build an Arrow
table and append it to DuckDB, one transaction per group of queued requests. No spool, no dedup,
no runs table, no validation: the floor of what a Python OTLP→DuckDB receiver costs on this machine.

    python -m bench._ingest_reference --db /tmp/ref.duckdb   # prints its port, serves until SIGTERM

`GET /count` answers the number of spans committed in DuckDB (what the benchmark calls durable).
"""

from __future__ import annotations

import argparse
import json
import queue
import socket
import threading

import duckdb
import pyarrow as pa
import uvicorn
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tracer import conventions as c

_OK = ExportTraceServiceResponse().SerializeToString()
_DDL = """CREATE TABLE IF NOT EXISTS spans (trace_id VARCHAR, span_id VARCHAR, parent_span_id VARCHAR,
    name VARCHAR, kind INTEGER, start_time TIMESTAMP, end_time TIMESTAMP, status INTEGER, model VARCHAR,
    input_tokens BIGINT, output_tokens BIGINT, tool_name VARCHAR, attributes VARCHAR)"""
_SCALARS = frozenset({"string_value", "bool_value", "int_value", "double_value"})


def flatten(request: ExportTraceServiceRequest) -> pa.Table:
    cols: dict[str, list] = {k: [] for k in (
        "trace_id", "span_id", "parent_span_id", "name", "kind", "start_time", "end_time", "status", "model",
        "input_tokens", "output_tokens", "tool_name", "attributes",
    )}
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                attrs = {}
                for kv in span.attributes:
                    which = kv.value.WhichOneof("value")
                    attrs[kv.key] = getattr(kv.value, which) if which in _SCALARS else str(kv.value)
                cols["trace_id"].append(span.trace_id.hex())
                cols["span_id"].append(span.span_id.hex())
                cols["parent_span_id"].append(span.parent_span_id.hex() or None)
                cols["name"].append(span.name)
                cols["kind"].append(span.kind)
                cols["start_time"].append(span.start_time_unix_nano // 1000)
                cols["end_time"].append(span.end_time_unix_nano // 1000)
                cols["status"].append(span.status.code)
                cols["model"].append(attrs.get(c.GEN_AI_REQUEST_MODEL))
                cols["input_tokens"].append(attrs.get(c.GEN_AI_USAGE_INPUT_TOKENS))
                cols["output_tokens"].append(attrs.get(c.GEN_AI_USAGE_OUTPUT_TOKENS))
                cols["tool_name"].append(attrs.get(c.GEN_AI_TOOL_NAME))
                cols["attributes"].append(json.dumps(attrs))
    arrays = {k: pa.array(v) for k, v in cols.items()}
    for k in ("start_time", "end_time"):
        arrays[k] = pa.array(cols[k], type=pa.timestamp("us"))
    return pa.table(arrays)


class Reference:
    def __init__(self, db: str) -> None:
        self.conn = duckdb.connect(db)
        self.conn.execute(_DDL)
        self.queue: queue.Queue[ExportTraceServiceRequest | None] = queue.Queue()
        self.stored = 0
        self.thread = threading.Thread(target=self._write, daemon=True)

    def _write(self) -> None:
        done = False
        while not done:
            group = [self.queue.get()]
            while not self.queue.empty():
                group.append(self.queue.get_nowait())
            done = group[-1] is None
            tables = [flatten(r) for r in group if r is not None]
            if not tables:
                continue
            table = pa.concat_tables(tables)
            self.conn.register("batch", table)
            self.conn.execute("BEGIN")
            self.conn.execute("INSERT INTO spans SELECT * FROM batch")
            self.conn.execute("COMMIT")
            self.conn.unregister("batch")
            self.stored += table.num_rows

    async def __call__(self, scope: dict, receive, send) -> None:  # noqa: ANN001 - raw ASGI
        if scope["type"] != "http":
            return
        if scope["method"] == "GET":
            body = json.dumps({"spans": self.stored}).encode()
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body})
            return
        chunks = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        self.queue.put(ExportTraceServiceRequest.FromString(b"".join(chunks)))
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/x-protobuf")]})
        await send({"type": "http.response.body", "body": _OK})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True)
    args = parser.parse_args()
    app = Reference(args.db)
    app.thread.start()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    print(sock.getsockname()[1], flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off"))
    server.run(sockets=[sock])
    app.queue.put(None)
    app.thread.join()
    app.conn.execute("CHECKPOINT")
    app.conn.close()


if __name__ == "__main__":
    main()
