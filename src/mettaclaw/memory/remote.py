"""An agent whose memory is a memory server's (`memoryServer=URL`): several agents, one memory.

Why through the MCP server and not by opening the same folder: the embedded stores are one process's
(the folder is locked), and even with `chromaMode=server` each process keeps in-process copies (the
BM25 index, the semantic store's SQLite, the trace) that another writer would silently contradict.
So one process, `python -m mettaclaw.mcp transport=http`, owns the memory and every agent reaches it
over MCP with the same bearer token (`mcpTokenEnv`); its writes are serialized by that server's one
lock, the same lock its own dreamer takes.

What stays in the agent's own folder (locked as always): its pins, its own conversation (the trace
its prompt's history tail shows, so two agents do not see each other's talk as their own), its turn
log and workspace. Its episodes, memories and facts go to the server, and every memory skill runs
there (`agent_skill`), so a remote agent's skills answer exactly as a local agent's do.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from mettaclaw.config import ConfigError
from mettaclaw.memory.core import scopes
from mettaclaw.memory.episodes.index import TurnRecord, senders
from mettaclaw.memory.episodes.trace import EpisodicTrace
from mettaclaw.memory.errors import ServerRefused, ServerUnavailable
from mettaclaw.memory.stores.lock import FolderLock
from mettaclaw.messages import Message
from mettaclaw.parser import Command
from mettaclaw.textutil import append_synced, atomic_write

from .working import WorkingMemory

log = logging.getLogger(__name__)

CALL_TIMEOUT_S = 120.0  # a dream the agent asked for runs inside the call
REQUEST_ENVELOPE_BYTES = 1024  # what a tools/call request adds around its arguments (JSON-RPC, tool name, _meta)


class McpCaller:
    """A blocking client for one MCP server over streamable HTTP: its own event loop in a thread,
    one session for the agent's life, each call waited for with a timeout."""

    def __init__(self, url: str, token: str, timeout_s: float = CALL_TIMEOUT_S) -> None:
        self.url, self.timeout_s, self._token = url, timeout_s, token
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="memory-server", daemon=True)
        self._thread.start()
        self._stop: asyncio.Event | None = None
        self._client: Any = None
        self._session: Future[None] | None = None
        try:
            self._connect()
        except ServerUnavailable:
            self._halt()
            raise

    def _connect(self) -> None:
        """A new session (at start, and after the server went away and came back)."""
        ready: Future[None] = Future()
        self._client = None
        self._session = asyncio.run_coroutine_threadsafe(self._hold(self._token, ready), self._loop)
        try:
            ready.result(timeout=60)
        except Exception as err:
            raise ServerUnavailable(f"memory server {self.url} did not answer ({_cause(err)}); is it running "
                                    "(python -m mettaclaw.mcp transport=http), and is the token it was started "
                                    "with the one in this agent's environment?") from None

    async def _hold(self, token: str, ready: Future[None]) -> None:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        self._stop = asyncio.Event()
        try:
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=self.timeout_s) as http, \
                    Client(streamable_http_client(self.url, http_client=http)) as client:
                self._client = client
                ready.set_result(None)
                await self._stop.wait()
        except BaseException as err:
            if not ready.done():
                ready.set_exception(err)
            elif not isinstance(err, asyncio.CancelledError):
                raise

    def call(self, tool: str, **args: Any) -> dict[str, Any]:
        """The tool's JSON answer; ServerRefused with the server's text when the tool refused the call,
        ServerUnavailable when the server could not be reached."""
        if self._client is None or self._session is None or self._session.done():
            self._connect()
        try:
            result = asyncio.run_coroutine_threadsafe(self._client.call_tool(tool, args), self._loop).result(self.timeout_s)
        except Exception as err:
            raise ServerUnavailable(f"memory server {self.url}: {tool} failed: {_cause(err)}") from None
        if result.is_error:
            raise ServerRefused(" ".join(getattr(c, "text", "") for c in result.content).strip() or f"{tool} refused")
        return dict(result.structured_content or {})

    def close(self) -> None:
        if self._stop is not None and self._session is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
            with contextlib.suppress(Exception):  # a session that already broke has nothing left to close
                self._session.result(timeout=10)
        self._halt()

    def _halt(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)


def _cause(err: BaseException) -> str:
    """The innermost error of an exception group (anyio wraps transport failures in them)."""
    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    return f"{type(err).__name__}: {err}"


class Outbox:
    """Turns not yet taken by the server, one JSON line each, oldest first (appended, synced)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, turn: dict[str, Any]) -> None:
        append_synced(self.path, json.dumps(turn, ensure_ascii=True) + "\n")

    def deliver(self, send: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
        """Send every waiting turn in order; the last answer. What was sent before a failure is
        dropped from the file, the rest stays (ServerUnavailable propagates)."""
        pending = [line for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
        answer: dict[str, Any] = {}
        while pending:
            try:
                turn = json.loads(pending[0])
            except json.JSONDecodeError:  # a line cut by a crash mid-append: the turn is in the trace
                log.error("dropped an unreadable outbox line: %r", pending[0][:200])
            else:
                try:
                    answer = send(_within_request_limit(turn))
                except ServerRefused as err:  # the server refused this turn for good (e.g. another scope)
                    log.error("the memory server refused a turn of %s: %s", turn.get("time"), err)
                except ServerUnavailable:
                    atomic_write(self.path, "".join(f"{line}\n" for line in pending))
                    raise
            pending.pop(0)
        self.path.unlink()
        return answer


def _within_request_limit(turn: dict[str, Any]) -> dict[str, Any]:
    """`turn`, or ServerRefused when its request would be past the body size the server's HTTP transport
    takes (the SDK's default, which `serve` keeps): it answers such a request 413, which reaches the
    caller as a failed call, indistinguishable from a server that is down, so a turn of a 5 MB
    message stayed first in the outbox and every later turn waited behind it for good."""
    from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE as limit

    size = len(json.dumps(turn, ensure_ascii=False, separators=(",", ":")).encode("utf-8")) + REQUEST_ENVELOPE_BYTES
    if size > limit:
        raise ServerRefused(f"the turn is {size:,} bytes, past the {limit:,} the memory server "
                         "takes in one request; it stays in this agent's own trace only")
    return turn


class RemotePriors:
    def __init__(self, url: str) -> None:
        self.url = url

    def summary(self) -> str:
        return f"knowledge priors: those of the memory server at {self.url}"


class RemoteMemory:
    """An agent's memory on a memory server (MemoryAPI, api.py): its turns and prompt blocks go to the
    server; its pins and its own trace stay here. Its memory skills run on the server (RemoteSkills)."""

    def __init__(self, config: Any, caller: McpCaller, folder_lock: FolderLock) -> None:
        self.caller, self._folder_lock = caller, folder_lock
        self.working = WorkingMemory(config.memory_path("pins.txt"))
        self.trace = EpisodicTrace(config.memory_path("history.metta"))  # this agent's own conversation
        self.lock = threading.RLock()  # the server serializes writes; this orders the agent's own threads
        self.dreamer = None  # the server dreams over every agent's episodes
        self.priors = RemotePriors(caller.url)
        self.last_context = None  # built on the server
        self.session_end_s = 0.0  # the server dreams; nothing to finish here
        self.outbox = Outbox(config.memory_path("outbox.jsonl"))
        self._closed = False

    def record_turn(self, time_text: str, messages: list[Message], commands: list[Command],
                    errors: str | None = None, outcomes: list[tuple[int, float]] = ()) -> TurnRecord:
        """The turn in this agent's own trace, then as episodes on the server (ids from there). While
        the server cannot be reached the turn waits in `outbox.jsonl` and is sent, in order, before
        the next turn that gets through; meanwhile its id is the local trace's. Each turn carries a
        key, so one whose answer was lost after the server recorded it is not recorded twice."""
        channel = senders(messages)[1]
        with self.lock:
            said = [(m.shown(), senders([m])[0]) for m in messages]
            local = self.trace.append_turn(time_text, said, commands, errors, channel)[-1]
            self.outbox.append({"time": time_text, "errors": errors, "key": uuid.uuid4().hex,
                                "messages": [{"text": m.text, "who": m.who, "channel": m.channel} for m in messages],
                                "commands": [{"skill": c.skill, "args": list(c.args), "status": status, "ms": ms}
                                             for c, (status, ms) in zip(commands, _padded(outcomes, len(commands)), strict=True)]})
            try:
                answer = self.outbox.deliver(lambda turn: self.caller.call("agent_turn", **turn))
            except ServerUnavailable as err:
                log.warning("turn kept in %s until the memory server answers: %s", self.outbox.path, err)
                return TurnRecord(local.id, [])
        if not answer:  # the server refused this turn (logged)
            return TurnRecord(local.id, [])
        return TurnRecord(str(answer["turn_id"]), list(answer["episode_ids"]), list(answer.get("message_ids", ())))

    def trace_tail(self, max_chars: int, visible: frozenset[str] | None = None) -> str:
        """This agent's own trace's last records that a reader of `visible` may read (HISTORY)."""
        return self.trace.tail(max_chars, scopes.readable_by(visible))

    def tick(self) -> None:
        """Nothing: the server dreams over every agent's episodes on its own schedule."""

    def knowledge(self, message: str, budget: int, visible: frozenset[str] | None = None,
                  budget_ms: float | None = None) -> str:
        if not message.strip() or budget <= 0:
            return ""
        return str(self.caller.call("agent_knowledge", message=message, budget=budget, scope=_scope(visible),
                                    budget_ms=budget_ms)["block"])

    def predictions(self, context: str, recent: list[Command], now_text: str,
                    visible: frozenset[str] | None = None, messages: Sequence[str] = ()) -> str:
        return str(self.caller.call("agent_predictions", context=context, time=now_text, scope=_scope(visible),
                                    recent=[{"skill": c.skill, "args": list(c.args)} for c in recent],
                                    messages=list(messages))["block"])

    def close(self, cancel: threading.Event | None = None) -> None:
        """As Memory.close; the server dreams, so there is no session-end dream here for `cancel` to cut."""
        if self._closed:
            return
        self._closed = True
        try:
            self.caller.close()
        finally:
            self._folder_lock.release()


def _scope(visible: frozenset[str] | None) -> str:
    """The turn's scope from what it may read (its own and the agent's)."""
    return next((s for s in sorted(visible or ()) if s != scopes.DEFAULT), scopes.DEFAULT)


def _padded(outcomes: list[tuple[int, float]], n: int) -> list[tuple[int, float | None]]:
    return list(outcomes) if len(outcomes) == n else [(0, None)] * n


def open_remote(config: Any, environ: dict[str, str]) -> RemoteMemory:
    """The agent's memory on the server `config.memoryServer` names, with the token from `mcpTokenEnv`;
    ConfigError (bad URL, no token) or ServerUnavailable before anything is written."""
    url = config.memoryServer
    token = environ.get(config.mcpTokenEnv, "").strip()
    if not token:
        raise ConfigError(f"memoryServer needs the server's bearer token in the environment variable "
                          f"{config.mcpTokenEnv} (mcpTokenEnv names it)")
    folder_lock = FolderLock(config.memory_path())
    try:
        caller = McpCaller(url, token)
    except BaseException:
        folder_lock.release()
        raise
    return RemoteMemory(config, caller, folder_lock)
