"""A scripted OpenAI-compatible chat-completions server on loopback.

Tests drive the real `openai` client (and any subprocess that reads OPENAI_BASE_URL) against it, so
what the agent sends and receives goes over real HTTP in OpenAI's real wire shapes, with nothing
monkeypatched. A test queues what the "model" answers next; the server records every request body.

    with ScriptedModel() as model:
        model.chat.push(tool_calls(call("delete-record", {"id": "42"})), reply("Deleted."))
        model.structured.push(structured({"city": "Paris"}))
        ...
        model.chat.requests[-1]["messages"]   # what the agent sent last

A request whose body has `response_format` is served from `model.structured`, every other one from
`model.chat`. When the queue is empty the server answers HTTP 500 "scripted model: script exhausted"
and records the request in `model.unexpected`. Error answers carry `x-should-retry: false` so the
client's built-in retries do not eat further scripted answers (pass `retry=True` to `failure` to let
the client retry).

Only the standard library is used; the server runs in a daemon thread, so it serves the test process
and its subprocesses alike.
"""

from __future__ import annotations

import dataclasses
import http.server
import itertools
import json
import math
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Union

__all__ = [
    "Script",
    "ScriptedCall",
    "ScriptedModel",
    "ScriptedResponse",
    "call",
    "failure",
    "reply",
    "structured",
    "tool_calls",
]


# ---------------------------------------------------------------------------------------------
# What a test queues


@dataclasses.dataclass(frozen=True, kw_only=True)
class ScriptedCall:
    """One tool call the model makes. `arguments` is sent verbatim when it is a str (to script
    malformed JSON), else JSON-encoded. `id` None: the server assigns `call_<n>` when it is served."""

    name: str
    arguments: Any
    id: str | None = None

    def arguments_text(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ScriptedResponse:
    """One answer of the scripted model.

    kind "message": an assistant message (text and/or tool calls).
    kind "error": HTTP `status` with OpenAI's error body.
    kind "garbage": HTTP 200 with a body that is not a chat completion.
    kind "timeout": wait `seconds`, then serve `then` (default: an HTTP 504 error).
    kind "disconnect": close the connection without answering.
    """

    kind: str = "message"
    text: str | None = None
    calls: tuple[ScriptedCall, ...] = ()
    finish_reason: str | None = None
    usage: dict[str, int] | None = None
    status: int = 200
    message: str | None = None
    error_type: str | None = None
    retry: bool = False
    seconds: float = 0.0
    then: Responder | None = None
    body: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    """Extra response headers of an error answer (e.g. `Retry-After` of a 429)."""


Responder = Union[ScriptedResponse, Callable[[dict], "ScriptedResponse | str"]]  # noqa: UP007 - a runtime alias with a forward reference


def reply(text: str, *, finish_reason: str = "stop", usage: dict[str, int] | None = None) -> ScriptedResponse:
    """An assistant message with text `text`."""
    return ScriptedResponse(text=text, finish_reason=finish_reason, usage=usage)


def call(name: str, arguments: Any = None, *, id: str | None = None) -> ScriptedCall:
    """A tool call for `tool_calls(...)`. `arguments`: a dict (JSON-encoded) or a raw str."""
    return ScriptedCall(name=name, arguments={} if arguments is None else arguments, id=id)


def tool_calls(*calls: ScriptedCall, text: str | None = None, usage: dict[str, int] | None = None) -> ScriptedResponse:
    """An assistant message making one or more tool calls (finish_reason "tool_calls")."""
    if not calls:
        raise ValueError("tool_calls() needs at least one call(...)")
    return ScriptedResponse(text=text, calls=tuple(calls), finish_reason="tool_calls", usage=usage)


def structured(value: Any, *, usage: dict[str, int] | None = None) -> ScriptedResponse:
    """An assistant message whose content is `value` as JSON (the answer to a `response_format`
    request). A str is sent verbatim, to script an answer that is not valid JSON."""
    text = value if isinstance(value, str) else json.dumps(value)
    return ScriptedResponse(text=text, finish_reason="stop", usage=usage)


def failure(
    kind: int | str,
    *,
    seconds: float = 0.0,
    message: str | None = None,
    retry: bool = False,
    then: Responder | None = None,
    body: str | None = None,
    headers: dict[str, str] | None = None,
) -> ScriptedResponse:
    """A failing answer.

    - `failure(500)` (any int status): that status with OpenAI's error body
      `{"error": {"message", "type", "param", "code"}}`; `message` overrides the text.
    - `failure("garbage")`: HTTP 200 with a body that is not JSON (`body` overrides it).
    - `failure("timeout", seconds=5)`: sleep, then serve `then` (default HTTP 504 error).
    - `failure("disconnect")`: drop the connection without an answer.
    `retry=False` (default) sends `x-should-retry: false` so the openai client raises at once.
    `headers` are sent with an HTTP error (`failure(429, headers={"Retry-After": "0.2"})`).
    """
    if isinstance(kind, int):
        extra = tuple((headers or {}).items())
        return ScriptedResponse(kind="error", status=kind, message=message, retry=retry, headers=extra)
    if kind == "garbage":
        return ScriptedResponse(kind="garbage", body=body, retry=retry)
    if kind == "timeout":
        return ScriptedResponse(kind="timeout", seconds=seconds or 5.0, then=then, retry=retry, message=message)
    if kind == "disconnect":
        return ScriptedResponse(kind="disconnect")
    raise ValueError(f"unknown failure kind {kind!r}: use an HTTP status, 'garbage', 'timeout' or 'disconnect'")


_ERROR_TYPES = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", None),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


# ---------------------------------------------------------------------------------------------
# Queues


class Script:
    """A FIFO of responders for one kind of request, plus the request bodies it served."""

    def __init__(self, name: str, lock: threading.RLock) -> None:
        self.name = name
        self._lock = lock
        self._queue: deque[Responder] = deque()
        self._requests: list[dict] = []
        self._served = threading.Condition(lock)

    def push(self, *responders: Responder) -> Script:
        """Queue answers, served in order. A responder is a `ScriptedResponse` (from `reply`,
        `tool_calls`, `structured`, `failure`) or a callable taking the request body (a dict) and
        returning one (a returned str means `reply(str)`)."""
        for responder in responders:
            if not (isinstance(responder, ScriptedResponse) or callable(responder)):
                raise TypeError(f"not a responder: {responder!r}")
        with self._lock:
            self._queue.extend(responders)
        return self

    def clear(self) -> None:
        """Drop every queued answer."""
        with self._lock:
            self._queue.clear()

    @property
    def remaining(self) -> int:
        """How many queued answers have not been served yet."""
        with self._lock:
            return len(self._queue)

    def __len__(self) -> int:
        return self.remaining

    @property
    def requests(self) -> list[dict]:
        """The request bodies this queue was asked to answer (including ones it could not)."""
        with self._lock:
            return list(self._requests)

    def wait_for_requests(self, count: int, timeout: float = 10.0) -> list[dict]:
        """Block until this queue has seen at least `count` requests; returns them. Raises
        TimeoutError otherwise. Safe to call from a thread other than the server's."""
        deadline = time.monotonic() + timeout
        with self._served:
            while len(self._requests) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(
                        f"scripted model: {self.name} saw {len(self._requests)} requests, expected {count}"
                    )
                self._served.wait(left)
            return list(self._requests)

    def _take(self, body: dict) -> Responder | None:
        with self._lock:
            self._requests.append(body)
            self._served.notify_all()
            return self._queue.popleft() if self._queue else None


# ---------------------------------------------------------------------------------------------
# The server


class ScriptedModel:
    """An OpenAI-compatible server answering from scripts. See the module docstring."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._host = host
        self._port = port
        self._lock = threading.RLock()
        self.chat = Script("chat", self._lock)
        self.structured = Script("structured", self._lock)
        self._requests: list[dict] = []
        self._unexpected: list[dict] = []
        self._errors: list[str] = []
        self._call_ids = itertools.count(1)
        self._completion_ids = itertools.count(1)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._in_flight = 0
        self._max_in_flight = 0

    # lifecycle

    def start(self) -> ScriptedModel:
        if self._server is not None:
            return self
        self._stopping.clear()
        self._server = _Server((self._host, self._port), _Handler, self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="scripted-model", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.close_connections()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedModel:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # what tests read

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("scripted model is not started")
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT/v1`, for OPENAI_BASE_URL or `AsyncOpenAI(base_url=...)`."""
        return f"http://{self._host}:{self.port}/v1"

    @property
    def requests(self) -> list[dict]:
        """Every chat-completions request body, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def unexpected(self) -> list[dict]:
        """Request bodies that arrived when their queue was empty."""
        with self._lock:
            return list(self._unexpected)

    @property
    def in_flight(self) -> int:
        """Requests being answered now (received, their answer not yet sent)."""
        with self._lock:
            return self._in_flight

    @property
    def max_in_flight(self) -> int:
        """The most requests that were being answered at the same time."""
        with self._lock:
            return self._max_in_flight

    def _answering(self, change: int) -> None:
        with self._lock:
            self._in_flight += change
            self._max_in_flight = max(self._max_in_flight, self._in_flight)

    @property
    def errors(self) -> list[str]:
        """Problems of the script itself (a callable responder that raised, a bad return value)."""
        with self._lock:
            return list(self._errors)

    # serving (called from handler threads)

    def _record(self, body: dict) -> Responder | None:
        with self._lock:
            self._requests.append(body)
        script = self.structured if body.get("response_format") is not None else self.chat
        responder = script._take(body)
        if responder is None:
            with self._lock:
                self._unexpected.append(body)
        return responder

    def _resolve(self, responder: Responder, body: dict) -> ScriptedResponse:
        if isinstance(responder, ScriptedResponse):
            return responder
        try:
            result = responder(body)
        except Exception as exc:  # a bug in the test's script: answer 500 and keep it visible
            with self._lock:
                self._errors.append(f"responder raised {exc!r}")
            return failure(500, message=f"scripted model: responder raised {exc!r}")
        if isinstance(result, str):
            return reply(result)
        if isinstance(result, ScriptedResponse):
            return result
        with self._lock:
            self._errors.append(f"responder returned {result!r}")
        return failure(500, message=f"scripted model: responder returned {result!r}, not a response")

    def _next_call_id(self) -> str:
        with self._lock:
            return f"call_{next(self._call_ids)}"

    def _next_completion_id(self) -> str:
        with self._lock:
            return f"chatcmpl-scripted{next(self._completion_ids)}"


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], handler: type, model: ScriptedModel) -> None:
        self.model = model
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, handler)

    def close_connections(self) -> None:
        with self.connections_lock:
            connections = list(self.connections)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # as real servers do: a streamed chunk goes out now, not after the client's delayed ACK
    disable_nagle_algorithm = True
    server: _Server
    timeout = 60  # an idle keep-alive connection is dropped after this

    def setup(self) -> None:
        super().setup()
        with self.server.connections_lock:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        with self.server.connections_lock:
            self.server.connections.discard(self.connection)
        try:
            super().finish()
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass

    # routing

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path in ("/v1/models", "/models"):
            self._send_json(
                200,
                {
                    "object": "list",
                    "data": [{"id": "test-model", "object": "model", "created": 0, "owned_by": "scripted-model"}],
                },
            )
        else:
            self._send_error(404, f"scripted model: no route GET {path}", retry=False)

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if path not in ("/v1/chat/completions", "/chat/completions"):
            self._send_error(404, f"scripted model: no route POST {path}", retry=False)
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send_error(400, "scripted model: request body is not JSON", retry=False)
            return
        model = self.server.model
        model._answering(+1)
        try:
            responder = model._record(body)
            if responder is None:
                self._send_error(500, "scripted model: script exhausted", retry=False)
                return
            self._serve(model._resolve(responder, body), body)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True  # the client went away (e.g. it timed out)
        finally:
            model._answering(-1)

    def _serve(self, response: ScriptedResponse, body: dict) -> None:
        model = self.server.model
        if response.kind == "timeout":
            if model._stopping.wait(response.seconds):
                self.close_connection = True
                return
            after = response.then
            if after is None:
                after = failure(504, message=response.message or "scripted model: timed out", retry=response.retry)
            self._serve(model._resolve(after, body), body)
        elif response.kind == "disconnect":
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        elif response.kind == "error":
            self._send_error(response.status, response.message, retry=response.retry, headers=dict(response.headers))
        elif response.kind == "garbage":
            self._send_garbage(response, body)
        elif body.get("stream"):
            self._send_stream(response, body)
        else:
            self._send_json(200, _completion(response, body, model))

    # wire formats

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _send_error(
        self, status: int, message: str | None, *, retry: bool, headers: dict[str, str] | None = None
    ) -> None:
        error_type, code = _ERROR_TYPES.get(
            status, ("server_error" if status >= 500 else "invalid_request_error", None)
        )
        payload = {
            "error": {
                "message": message or f"scripted model: HTTP {status}",
                "type": error_type,
                "param": None,
                "code": code,
            }
        }
        self._send_json(status, payload, {"x-should-retry": "true" if retry else "false", **(headers or {})})

    def _send_garbage(self, response: ScriptedResponse, body: dict) -> None:
        if body.get("stream"):
            text = response.body if response.body is not None else "data: {this is not json\n\ndata: [DONE]\n\n"
            self._start_chunked("text/event-stream")
            self._write_chunk(text.encode())
            self._end_chunked()
        else:
            data = (response.body if response.body is not None else "<html>502 Bad Gateway{").encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("x-should-retry", "true" if response.retry else "false")
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()

    def _start_chunked(self, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _end_chunked(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _send_stream(self, response: ScriptedResponse, body: dict) -> None:
        self._start_chunked("text/event-stream")
        for chunk in _stream_chunks(response, body, self.server.model):
            self._write_chunk(f"data: {json.dumps(chunk)}\n\n".encode())
        self._write_chunk(b"data: [DONE]\n\n")
        self._end_chunked()


# ---------------------------------------------------------------------------------------------
# OpenAI payload shapes


def _assigned_calls(response: ScriptedResponse, model: ScriptedModel) -> list[tuple[str, ScriptedCall]]:
    return [(c.id or model._next_call_id(), c) for c in response.calls]


def _usage(response: ScriptedResponse, body: dict) -> dict[str, int]:
    if response.usage is not None:
        usage = dict(response.usage)
        usage.setdefault("total_tokens", usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0))
        return usage
    prompt = max(1, len(json.dumps(body.get("messages", []))) // 4)
    produced = len(response.text or "") + sum(len(c.name) + len(c.arguments_text()) for c in response.calls)
    completion = max(1, math.ceil(produced / 4))
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _finish_reason(response: ScriptedResponse) -> str:
    return response.finish_reason or ("tool_calls" if response.calls else "stop")


def _completion(response: ScriptedResponse, body: dict, model: ScriptedModel) -> dict:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": response.text if (response.text is not None or not response.calls) else None,
        "refusal": None,
        "annotations": [],
    }
    if message["content"] is None and not response.calls:
        message["content"] = ""
    if response.calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": c.name, "arguments": c.arguments_text()}}
            for call_id, c in _assigned_calls(response, model)
        ]
    return {
        "id": model._next_completion_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "test-model"),
        "system_fingerprint": "fp_scripted",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": _finish_reason(response)}],
        "usage": _usage(response, body),
    }


def _pieces(text: str, count: int = 3) -> list[str]:
    """Split `text` into up to `count` non-empty pieces at arbitrary character positions."""
    if not text:
        return []
    size = max(1, math.ceil(len(text) / count))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _stream_chunks(response: ScriptedResponse, body: dict, model: ScriptedModel) -> list[dict]:
    completion_id = model._next_completion_id()
    created = int(time.time())
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

    def chunk(delta: dict, finish_reason: str | None = None) -> dict:
        out = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": body.get("model", "test-model"),
            "system_fingerprint": "fp_scripted",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
        }
        if include_usage:
            out["usage"] = None
        return out

    chunks = [chunk({"role": "assistant", "content": "", "refusal": None})]
    for piece in _pieces(response.text or ""):
        chunks.append(chunk({"content": piece}))
    for index, (call_id, c) in enumerate(_assigned_calls(response, model)):
        chunks.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": ""},
                        }
                    ]
                }
            )
        )
        for piece in _pieces(c.arguments_text()):
            chunks.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
    chunks.append(chunk({}, _finish_reason(response)))
    if include_usage:
        chunks.append(
            {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": body.get("model", "test-model"),
                "system_fingerprint": "fp_scripted",
                "choices": [],
                "usage": _usage(response, body),
            }
        )
    return chunks
