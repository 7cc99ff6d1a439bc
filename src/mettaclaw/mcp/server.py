"""The MCP server over one memory folder: stdio for a client that starts it, streamable HTTP for
several clients at once.

HTTP is guarded by a static bearer token read from an environment variable (`mcpTokenEnv`): the SDK's
own auth is OAuth, which a local memory service does not need, so a small ASGI check sits in front of
the SDK's app and compares the token in constant time. Without a token the HTTP server refuses to
start: a memory server anyone on the machine can read is not offered.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hmac
import json
import logging
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any

import anyio
from mcp import types as mcp_types
from mcp.server import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from mettaclaw.config import ConfigError
from mettaclaw.textutil import safe_text

from .tools import MemoryTools

log = logging.getLogger(__name__)

INSTRUCTIONS = ("The long-term memory of a mettaclaw agent: episodes (what was said and done), memories and "
                "semantic facts linked in a typed, weighted graph. `query` is the agent's own recall; "
                "`semantic_recall` and `spread_activation` search facts and their links; writes are "
                "reconciled (a near-duplicate reinforces instead of adding).")


def build_server(memory: Any, source: str = "mcp", scope: str = "agent", lenses: dict[str, Any] | None = None) -> MCPServer:
    """An MCP server whose tools read and write `memory` in one scope (writes recorded with `source`)."""
    server: MCPServer = MCPServer("mettaclaw-memory", instructions=INSTRUCTIONS, log_level="WARNING",
                                  middleware=[safe_arguments])
    for tool in MemoryTools(memory, source, scope, lenses).tools():
        server.add_tool(tool, structured_output=True)
    return server


def _safe(value: Any) -> Any:
    if isinstance(value, str):
        return safe_text(value, "an MCP client")
    if isinstance(value, list):
        return [_safe(v) for v in value]
    return {k: _safe(v) for k, v in value.items()} if isinstance(value, dict) else value


async def safe_arguments(ctx: Any, call_next: Any) -> Any:
    """Middleware: a tool call's arguments made safe where they enter, before validation (JSON may
    carry a lone surrogate, which no store can encode and the validator refuses)."""
    if ctx.method == "tools/call" and ctx.params:
        ctx = dataclasses.replace(ctx, params=_safe(dict(ctx.params)))
    return await call_next(ctx)


def bearer_token(config: Any, environ: dict[str, str] | None = None) -> str:
    """The token HTTP clients must send, from the variable `mcpTokenEnv` names (ConfigError without it)."""
    token = (os.environ if environ is None else environ).get(config.mcpTokenEnv, "")
    if len(token.strip()) < 16:
        raise ConfigError(f"transport=http needs a bearer token of at least 16 characters in the environment "
                          f"variable {config.mcpTokenEnv} (mcpTokenEnv names it); refusing to serve memory without one")
    return token.strip()


class RequireBearer:
    """ASGI middleware: HTTP requests without `Authorization: Bearer <token>` get 401 and never reach MCP."""

    def __init__(self, app: Any, token: str) -> None:
        self.app, self._expected = app, token.encode()

    def _token(self, header: bytes) -> bytes:
        """The credentials of an `Authorization` header of the Bearer scheme (b"" for any other): the
        scheme's name is case-insensitive (RFC 7235), so `bearer <token>` is the same as `Bearer <token>`."""
        scheme, _, credentials = header.strip().partition(b" ")
        return credentials.strip(b" ") if scheme.lower() == b"bearer" else b""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = self._token(dict(scope.get("headers") or []).get(b"authorization", b""))
            if not hmac.compare_digest(given, self._expected):
                body = json.dumps({"error": "unauthorized: send Authorization: Bearer <token>"}).encode()
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


class AnswerAsStdio:
    """ASGI middleware: a JSON body POSTed to `/mcp` that is no JSON-RPC 2.0 message MCP takes is
    answered 400 with the error `read_line` answers that line with over stdio (-32600 Invalid Request:
    a batch, `"jsonrpc": "1.0"`, a method that is no string, an id MCP does not take), and a malformed
    response 400 with no JSON-RPC answer (a response is never answered). The SDK's HTTP transport
    answered a batch or another version -32602 "Invalid params" with a pydantic dump, and read a
    request with an odd id (null, a fraction, a boolean, an object) as a notification: 202 Accepted,
    nothing run, and its client never learnt why. Every other body reaches the SDK as it came, which
    answers the rest as before (-32700 for a body that is not JSON); one past MAX_BODY bytes, or
    without a length, goes to it unread, and it refuses what is too large."""

    def __init__(self, app: Any, path: str = "/mcp") -> None:
        self.app, self.path = app, path

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers") or [])
        length = headers.get(b"content-length", b"")
        media = headers.get(b"content-type", b"").split(b";")[0].split(b",")
        if (scope["type"] != "http" or scope.get("method") != "POST" or scope.get("path") != self.path
                or b"application/json" not in (m.strip().lower() for m in media)
                or not length.isdigit() or int(length) > MAX_BODY):
            await self.app(scope, receive, send)
            return
        received, body, more = [], b"", True
        while more:
            message = await receive()
            received.append(message)
            if message["type"] != "http.request":
                break
            body, more = body + message.get("body", b""), message.get("more_body", False)
        served, answer = read_line(body.decode("utf-8", errors="replace")) if body.strip() else (None, None)
        error = getattr(answer.message, "error", None) if answer is not None else None
        if served is None and body.strip() and (error is None or error.code != mcp_types.PARSE_ERROR):
            said = b"" if answer is None else answer.message.model_dump_json(by_alias=True, exclude_unset=True).encode()
            await send({"type": "http.response.start", "status": 400,
                        "headers": [(b"content-type", b"application/json")] if said else []})
            await send({"type": "http.response.body", "body": said})
            return

        async def replay() -> Any:
            return received.pop(0) if received else await receive()

        await self.app(scope, replay, send)


MAX_BODY = 4 * 1024 * 1024  # the most the SDK takes in one request


def http_app(server: MCPServer, token: str, host: str) -> Any:
    """The server's streamable-HTTP app at `/mcp`, behind the bearer check."""
    return RequireBearer(AnswerAsStdio(server.streamable_http_app(host=host)), token)


def malformed_answer(error: Exception) -> SessionMessage | None:
    """The JSON-RPC 2.0 error for a stdio line the SDK could not read as a message (`error`, the
    pydantic error it raised): -32700 for a line that is not JSON, -32600 for JSON that is no JSON-RPC
    message, with the request's id when it has one (a client waiting on it gets its answer) and null
    otherwise; None for a blank line, which asks nothing."""
    details = error.errors(include_url=False) if hasattr(error, "errors") else []
    given = details[0].get("input") if details else None
    if any(d.get("type") == "json_invalid" for d in details):
        if isinstance(given, str) and not given.strip():
            return None
        code, message = mcp_types.PARSE_ERROR, "Parse error: the line is not JSON"
    else:
        code, message = mcp_types.INVALID_REQUEST, INVALID_REQUEST
    # a field missing from one of the message types is reported with the whole object as its input
    whole = next((d["input"] for d in details if d.get("type") == "missing" and len(d.get("loc", ())) == 2), None)
    asked = whole.get("id") if isinstance(whole, dict) and "method" in whole else None
    where = ".".join(map(str, details[0].get("loc", ()))) if details else ""
    reason = (f"{details[0].get('msg')}{' at ' + where if where else ''}" if details else str(error)) or type(error).__name__
    return _error_answer(code, message, reason, asked if _valid_id(asked) else None)


INVALID_REQUEST = "Invalid Request: not a JSON-RPC 2.0 request, notification or response"


def _valid_id(value: Any) -> bool:
    """An id MCP takes (a string or an integer; JSON-RPC's null and fractions are not)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _error_answer(code: int, message: str, reason: str, answer_id: str | int | None) -> SessionMessage:
    log.warning("answered a malformed message with %d: %s", code, reason[:200])
    return SessionMessage(mcp_types.JSONRPCError(jsonrpc="2.0", id=answer_id, error=mcp_types.ErrorData(
        code=code, message=message, data=reason[:500])))


def _id_given(line: str) -> Any:
    """The `id` member of a line that is a JSON object, or _NO_ID when it has none."""
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return _NO_ID
    return data.get("id", _NO_ID) if isinstance(data, dict) else _NO_ID


_NO_ID = object()


def _is_response(line: str) -> bool:
    """Whether the line is a JSON object shaped as a response: `result` or `error`, and no `method`."""
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return isinstance(data, dict) and "method" not in data and ("result" in data or "error" in data)


def read_line(line: str) -> tuple[SessionMessage | None, SessionMessage | None]:
    """A stdio line as (the message to serve, the answer to send back at once); (None, None) for a
    blank line, which asks nothing. A line that is no message is answered by `malformed_answer`. A
    request whose id is not a string or an integer (an object, an array, a fraction, a boolean, null)
    is answered -32600 with id null: the SDK reads it as a notification (its models drop the id), so
    it was served and never answered, and its client waited for an answer that never came.

    A response (`result` or `error`, no `method`) is never answered, as JSON-RPC 2.0 says: one the SDK
    cannot read (an id that is an object, a fraction or missing; a malformed error) is logged and
    dropped (it was answered -32600, an answer to an answer); a readable one goes to the SDK, which
    gives it to the request of ours it answers, or drops it with a debug line when none waits."""
    if not line.strip():
        return None, None
    try:
        message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except Exception as err:  # what the SDK's stdio reader catches
        if _is_response(line):
            log.warning("dropped a malformed response (a response is never answered): %r", line[:200])
            return None, None
        return None, malformed_answer(err)
    if isinstance(message, mcp_types.JSONRPCNotification) and (given := _id_given(line)) is not _NO_ID:
        return None, _error_answer(mcp_types.INVALID_REQUEST, INVALID_REQUEST,
                                   f"the id must be a string or an integer, not {json.dumps(given)[:100]}", None)
    return SessionMessage(message), None


class _NoLines:
    """An input that ends at once: the SDK's stdio reader is given it, since serve_stdio reads stdin."""

    def __aiter__(self) -> _NoLines:
        return self

    async def __anext__(self) -> str:
        raise StopAsyncIteration


async def serve_stdio(server: MCPServer) -> None:
    """The server over stdin and stdout, as MCPServer.run("stdio") serves it, except that each line is
    read here (`read_line`), so that every request gets exactly one answer: the SDK's stdio reader
    hands a line it cannot read on as an exception, which its dispatcher logs at debug level and
    drops, and reads a request with an odd id as a notification, so a client that sent either waited
    for an answer that never came; the lines after it are served as before. The SDK still writes
    stdout (its claim of fd 1 keeps stray prints off the wire); stdin is read here in place."""
    lowlevel = server._lowlevel_server  # (as the SDK's own in-process client reaches it)
    stdin = anyio.wrap_file(open(sys.stdin.fileno(), encoding="utf-8", errors="replace", closefd=False))  # noqa: SIM115
    async with stdio_server(stdin=_NoLines()) as (_, write_stream):  # type: ignore[arg-type]
        checked_send, checked = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def relay() -> None:
            # once the server has stopped serving, what is left unread is nobody's to answer
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                async with checked_send:
                    async for line in stdin:
                        served, answer = read_line(line)
                        if served is not None:
                            await checked_send.send(served)
                        elif answer is not None:
                            await write_stream.send(answer)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(relay)
            await lowlevel.run(checked, write_stream, lowlevel.create_initialization_options())
            tasks.cancel_scope.cancel()


def serve(memory: Any, config: Any) -> None:
    """Serve until the client goes (stdio) or the process is stopped (HTTP)."""
    server = build_server(memory, scope=config.mcpScope, lenses=config.lenses)
    if config.mcpTransport == "stdio":
        anyio.run(serve_stdio, server)
        return
    import uvicorn

    app = http_app(server, bearer_token(config), config.mcpHost)
    uvicorn.run(app, host=config.mcpHost, port=config.mcpPort, log_level="warning")


def wait_until_serving(url: str, process: subprocess.Popen, timeout_s: float = 120.0) -> None:
    """Return once the HTTP transport at `url` answers at all (401 without a token counts), for whoever
    starts `python -m mettaclaw.mcp transport=http` as a child process: a request sent before the
    server listens is refused by the OS, not by the server. Raises RuntimeError, with what the child
    wrote to stderr when it was piped, if the child exits first or `timeout_s` passes."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            urllib.request.urlopen(url, timeout=1)
            return
        except urllib.error.HTTPError:
            return
        except OSError:
            if process.poll() is not None:
                said = process.stderr.read() if process.stderr else ""
                raise RuntimeError(f"the MCP server exited with status {process.returncode}: {said}") from None
            if time.monotonic() > deadline:
                raise RuntimeError(f"the MCP server did not answer at {url} within {timeout_s:g} s") from None
            time.sleep(0.1)
