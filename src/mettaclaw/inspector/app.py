"""The inspector's pages over one running agent's `Memory` and turn log (Starlette, Jinja2 templates).

Every page is a read: search does not touch access times, so looking at memory does not change what
it recalls. The one write is forgetting a record, offered only when `uiReadOnly=false`, after a
confirmation page, through `Memory.forget` (what the `forget` skill calls).

Access: the token (a URL's `?token=` once, then an HttpOnly same-site cookie, or a bearer header); a
request naming another host than the loopback one is refused, so a web page elsewhere cannot reach
it through a rebound DNS name.
"""

from __future__ import annotations

import hmac
import json
import logging
import math
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from mettaclaw import turns
from mettaclaw.memory import (
    PRIOR_KIND,
    LocalMemoryAPI,
    RecordFilter,
    action_id,
    check_kinds,
    check_query,
    format_time,
    message_id,
    offset_of,
    scopes,
)
from mettaclaw.textutil import safe_text

from .picture import draw_svg, neighbourhood

log = logging.getLogger(__name__)

PAGE = 50  # rows a list shows
COOKIE = "mettaclaw_ui"
LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}
TURN = {"turn": "?", "time": "", "episode_id": None, "messages": [], "prompt_chars": 0, "prompt_sections": {},
        "knowledge_level": None, "model_message": "", "reply": "", "model_ms": None, "tokens": None, "commands": [],
        "errors": [], "turn_ms": 0.0}  # what a turn line may lack (an older version's log, a hand-edited line)
COMMAND = {"skill": "?", "ms": 0.0, "result": ""}
MESSAGE = {"who": "", "channel": "", "text": ""}


def _number(value: Any, default: float | None) -> float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else default


def _turn(line: Any) -> dict[str, Any]:
    turn = {**TURN, **line} if isinstance(line, dict) else dict(TURN)
    for key, shape in (("commands", COMMAND), ("messages", MESSAGE)):
        items = turn[key] if isinstance(turn[key], list) else []
        turn[key] = [{**shape, **item} for item in items if isinstance(item, dict)]
    # a value of another type (a hand-edited line) is left out as a missing one is: the page formats
    # these as numbers, mappings and text, and one such line made the whole timeline a 500
    for key in ("prompt_chars", "model_ms", "turn_ms"):
        turn[key] = _number(turn[key], TURN[key])
    for key in ("prompt_sections", "tokens"):
        turn[key] = turn[key] if isinstance(turn[key], dict) else TURN[key]
    for command in turn["commands"]:
        command["ms"] = _number(command["ms"], COMMAND["ms"])
    for message in turn["messages"]:
        message["text"] = message["text"] if isinstance(message["text"], str) else MESSAGE["text"]
    return turn


class Pages:
    """What each page shows, read from the memory (kept apart from HTTP so it reads top to bottom)."""

    def __init__(self, memory: LocalMemoryAPI, turn_log: Path, read_only: bool) -> None:
        self.memory, self.turn_log, self.read_only = memory, Path(turn_log), read_only

    def label(self, node: str, chars: int = 28) -> str:
        text = self.memory.text_of(node) or ""
        text = " ".join(text.split())
        return node[:10] if not text else text[:chars] + ("…" if len(text) > chars else "")

    def timeline(self, page: int) -> dict[str, Any]:
        rows, more = turns.newest(self.turn_log, page * PAGE, PAGE)
        shown = [_turn(r) for r in rows]
        for turn in shown:  # a turn links its trace record, unless it was forgotten since (no page to show)
            episode = turn["episode_id"]
            turn["linked"] = isinstance(episode, str) and self.memory.turn(episode) is not None
        return {"turns": shown, "page": page, "more": more}

    def search(self, query: str, layer: str | None) -> dict[str, Any]:
        hits = self.memory.query(query, limit=20, layer=layer, explain=True, touch=False) if query.strip() else []
        return {"query": query, "layer": layer or "", "hits": [
            {"hit": h, "cites": [(c, self.label(c, 60)) for c in h.cites[:8]],
             "parts": {k: v for k, v in (h.parts or {}).items() if isinstance(v, int | float)}} for h in hits]}

    def records(self, kind: str, after: tuple[float, str] | None) -> dict[str, Any]:
        """A page of the records list, after the record `after` (its time and id) names: its time
        alone skipped the records recorded with it that the page before had no room for."""
        found = self.memory.facts.select(RecordFilter(kinds=(kind,) if kind else ()), limit=PAGE + 1, after=after)
        last = found[PAGE - 1] if len(found) > PAGE else None
        return {"records": found[:PAGE], "kind": kind, "more": last is not None,
                "next": (last.recorded_at, last.id) if last is not None else None}

    def record(self, record_id: str) -> dict[str, Any] | None:
        mem = self.memory
        semantic = mem.facts.get(record_id)
        stat = mem.statistic(record_id)
        row = mem.row(record_id)
        # an episode id names a turn of the trace, which the page shows whole: a turn without a message
        # has no `ep-N` row in the index (the timeline links that id all the same), one that ran only
        # memory's own skills has no `act-N` row, and a row holds only part of the turn
        offset = offset_of(record_id)
        turn = mem.turn(record_id)
        if semantic is None and stat is None and row is None and turn is None:
            return None
        edges = sorted(mem.facts.edges_of(record_id), key=lambda e: (e.type, -e.weight))
        # a knowledge prior's chunk is not forgotten here (its file brings it back): no Forget… for it
        forgettable = stat is None and not (semantic is None and row is not None and row.kind == PRIOR_KIND)
        out: dict[str, Any] = {"id": record_id, "semantic": semantic, "stat": stat, "row": row, "forgettable": forgettable,
                               "edges": [(e, e.other(record_id), self.label(e.other(record_id), 60)) for e in edges[:200]],
                               "more_edges": max(0, len(edges) - 200), "read_only": self.read_only}
        if semantic is not None:
            out["scope"] = scopes.of_tags(semantic.tags)
            out["tags"] = scopes.user_tags(semantic.tags)
            out["versions"] = mem.facts.versions(semantic.lineage)
            out["changes"] = mem.facts.changes(record_id)
            out["episodes"] = [(e, self.label(e, 80)) for e in semantic.source_episodes[-20:]]
        elif row is not None:
            out["scope"] = scopes.of_tags(row.tags)
            out["tags"] = scopes.user_tags(row.tags)
            cites = str(row.meta.get("cites") or "")
            out["episodes"] = [(e, self.label(e, 80)) for e in cites.split("|") if e][:20]
        if turn is not None and offset is not None:
            out["scope"] = out.get("scope") or scopes.of_episode(turn.who, turn.channel)
            out["turn"] = turn
            out["turn_rows"] = [r for r in (message_id(offset), action_id(offset))
                                if r != record_id and mem.row(r) is not None]
        return out

    def forgotten(self, record_id: str) -> bool:
        """Whether `record_id` names a turn whose trace record was erased: a link to it (a bookmark,
        a page opened before, a record still citing it after a forget cut short) was a bare 404.
        A forgotten fact or memory cannot be told from one that never was: nothing of it is kept."""
        return self.memory.turn_erased(record_id)

    def exists(self, record_id: str) -> bool:
        """Whether `record_id` names anything a record page shows (what `record` looks up)."""
        mem = self.memory
        return (mem.facts.get(record_id) is not None or mem.statistic(record_id) is not None
                or mem.row(record_id) is not None or mem.turn(record_id) is not None)

    def graph_svg(self, record_id: str) -> str:
        graph = neighbourhood(self.memory.facts.edges_of, record_id)
        return draw_svg(graph, record_id, self.label)

    def beliefs(self, page: int) -> dict[str, Any]:
        rows, total = self.memory.belief_rows(page * PAGE, PAGE)
        inferred = self.memory.facts.select(RecordFilter(tags_all=("inferred",)), limit=PAGE)
        return {"beliefs": rows, "inferred": inferred, "page": page, "more": total > (page + 1) * PAGE}

    def dreams(self, page: int) -> dict[str, Any]:
        reports = list(reversed(self.memory.dream_reports()))
        shown = reports[page * 10:(page + 1) * 10]
        labelled = [{**r, "labels": {i: self.label(i, 50) for k in ("added", "reinforced", "merged", "superseded")
                                     for i in r.get(k, [])[:30]}} for r in shown]
        running = self.memory.dream_progress()
        return {"reports": labelled, "page": page, "more": len(reports) > (page + 1) * 10, "running": running}

    def stats(self) -> dict[str, Any]:
        overview = self.memory.overview()
        return {**overview, "last_dream": format_time(overview["last_dream"])}


def build(memory: LocalMemoryAPI, turn_log: Path, token: str, read_only: bool = True) -> Starlette:
    """The inspector's ASGI app (uvicorn serves it: inspector/__init__.py)."""
    pages = Pages(memory, turn_log, read_only)
    env = Environment(loader=PackageLoader("mettaclaw.inspector"), autoescape=select_autoescape())
    env.filters["time"] = format_time
    env.filters["json"] = lambda v: json.dumps(v, indent=1, default=str)
    csrf = hmac.new(token.encode(), b"forget", "sha256").hexdigest()

    def html(name: str, status: int = 200, **data: Any) -> HTMLResponse:
        # a lone surrogate (JSON "\ud800" in a turn log line) is a str no UTF-8 page can carry: U+FFFD
        return HTMLResponse(safe_text(env.get_template(name).render(**data), "an inspector page"), status_code=status)

    def allowed(request: Request) -> bool:
        """Whether any credential the request carries is the token. Not the first one found: the token
        is new each start, and the cookie of an earlier start stood before the address's `?token=`, so
        the address the agent printed answered 401 until the browser's cookies were cleared."""
        given = (request.cookies.get(COOKIE), request.query_params.get("token"),
                 request.headers.get("authorization", "").removeprefix("Bearer ").strip())
        return any(value and hmac.compare_digest(value.encode(), token.encode()) for value in given)

    def page(handler: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
        async def guarded(request: Request) -> Response:
            if request.url.hostname not in LOOPBACK:
                return HTMLResponse("the inspector answers on 127.0.0.1 only", status_code=403)
            if not allowed(request):
                return html("denied.html", 401)
            if "token" in request.query_params:  # the token leaves the address bar for a cookie
                rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
                target = request.url.path + ("?" + urlencode(rest) if rest else "")
                response = RedirectResponse(target, status_code=303)
                response.set_cookie(COOKIE, token, httponly=True, samesite="strict")
                return response
            try:
                return await handler(request)
            except Exception:  # a page's fault is the agent log's, never a traceback on the agent's terminal
                log.exception("inspector: %s %s failed", request.method, request.url.path[:300])
                return html("error.html", 500, message="this page failed; the agent's log (agent.log in the memory "
                            "folder) has the details")
        return guarded

    def number(request: Request, name: str) -> int:
        try:
            return max(0, int(request.query_params.get(name, "0")))
        except ValueError:
            return 0

    @page
    async def timeline(request: Request) -> Response:
        return html("timeline.html", **await run_in_threadpool(pages.timeline, number(request, "page")))

    @page
    async def search(request: Request) -> Response:
        layer = request.query_params.get("layer") or None
        if layer not in (None, "episodic", "semantic"):
            return html("error.html", 400, message=f"layer {layer!r} is not episodic or semantic")
        query = request.query_params.get("q", "")
        try:
            check_query(query)  # what recall refuses (too long) is the reader's to change, as the layer is
        except ValueError as err:
            return html("error.html", 400, message=str(err))
        return html("search.html", **await run_in_threadpool(pages.search, query, layer))

    @page
    async def records(request: Request) -> Response:
        try:
            before = float(request.query_params["before"]) if "before" in request.query_params else None
        except ValueError:
            before = None
        if before is not None and not math.isfinite(before):  # `before=nan` matched nothing: an empty list
            before = None
        after = None if before is None else (before, request.query_params.get("before_id", ""))
        kind = request.query_params.get("kind", "")
        try:
            check_kinds((kind,) if kind else ())  # `kind=facts` listed "No records of kind facts."
        except ValueError as err:
            return html("error.html", 400, message=str(err))
        return html("records.html", **await run_in_threadpool(pages.records, kind, after))

    async def gone(record_id: str) -> Response:
        """The answer for an id that names nothing, alike on every page that takes one (the record, its
        picture, Forget…): 410 for a turn forgotten since, 404 otherwise. The picture of an id of
        nothing was a one-node graph (200), and Forget… offered to forget it."""
        if await run_in_threadpool(pages.forgotten, record_id):
            return html("error.html", 410, message=f"{record_id} was forgotten: its turn was erased from the trace "
                        "and from every store and index, so there is nothing to show")
        return html("error.html", 404, message=f"no record {record_id!r}")

    @page
    async def record(request: Request) -> Response:
        record_id = request.path_params["id"]
        found = await run_in_threadpool(pages.record, record_id)
        return await gone(record_id) if found is None else html("record.html", **found)

    @page
    async def graph(request: Request) -> Response:
        record_id = request.path_params["id"]
        if not await run_in_threadpool(pages.exists, record_id):
            return await gone(record_id)
        svg = await run_in_threadpool(pages.graph_svg, record_id)
        return Response(svg, media_type="image/svg+xml")

    @page
    async def beliefs(request: Request) -> Response:
        return html("beliefs.html", **await run_in_threadpool(pages.beliefs, number(request, "page")))

    @page
    async def dreams(request: Request) -> Response:
        return html("dreams.html", **await run_in_threadpool(pages.dreams, number(request, "page")))

    @page
    async def stats(request: Request) -> Response:
        return html("stats.html", **await run_in_threadpool(pages.stats))

    @page
    async def forget(request: Request) -> Response:
        record_id = request.path_params["id"]
        if read_only:
            return html("error.html", 403, message="the inspector is read-only (start the agent with uiReadOnly=false "
                        "to forget records from this page)")
        if request.method == "GET":
            if not await run_in_threadpool(pages.exists, record_id):
                return await gone(record_id)
            return html("forget.html", id=record_id, text=pages.label(record_id, 400), csrf=csrf)
        form = await request.form()
        if not hmac.compare_digest(str(form.get("csrf", "")), csrf) or form.get("confirm") != "yes":
            return html("error.html", 400, message="not forgotten: the confirmation was missing")
        try:  # asked of an erased turn too: it finishes a forget cut short (Memory.forget)
            deleted = await run_in_threadpool(memory.forget, record_id)
        except LookupError as err:
            if await run_in_threadpool(pages.forgotten, record_id):
                return await gone(record_id)
            return html("error.html", 404, message=str(err))
        except ValueError as err:  # what forget refuses (a knowledge prior's chunk: edit its file), said as it is
            return html("error.html", 400, message=f"not forgotten: {err}")
        return html("forgotten.html", id=record_id, gone=deleted)

    return Starlette(routes=[
        Route("/", timeline), Route("/search", search), Route("/records", records),
        Route("/record/{id:path}", record), Route("/graph/{id:path}.svg", graph), Route("/beliefs", beliefs),
        Route("/dreams", dreams), Route("/stats", stats), Route("/forget/{id:path}", forget, methods=["GET", "POST"]),
    ])
