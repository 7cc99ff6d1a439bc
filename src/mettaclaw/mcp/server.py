"""The MCP server over one memory folder: stdio for a client that starts it, streamable HTTP for
several clients at once.

HTTP is guarded by a static bearer token read from an environment variable (`mcpTokenEnv`): the SDK's
own auth is OAuth, which a local memory service does not need, so a small ASGI check sits in front of
the SDK's app and compares the token in constant time. Without a token the HTTP server refuses to
start: a memory server anyone on the machine can read is not offered.
"""

from __future__ import annotations

import dataclasses
import hmac
import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from typing import Any

from mcp.server import MCPServer

from mettaclaw.config import ConfigError
from mettaclaw.textutil import safe_text

from .tools import MemoryTools

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


def http_app(server: MCPServer, token: str, host: str) -> Any:
    """The server's streamable-HTTP app at `/mcp`, behind the bearer check."""
    return RequireBearer(server.streamable_http_app(host=host), token)


def serve(memory: Any, config: Any) -> None:
    """Serve until the client goes (stdio) or the process is stopped (HTTP)."""
    server = build_server(memory, scope=config.mcpScope, lenses=config.lenses)
    if config.mcpTransport == "stdio":
        server.run("stdio")
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
