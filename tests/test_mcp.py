"""The memory over MCP, driven by the SDK's own client: every tool over stdio, then over streamable
HTTP on loopback with its bearer token (and refused without it)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from mettaclaw.config import ConfigError, load_config
from mettaclaw.mcp.server import bearer_token, wait_until_serving
from mettaclaw.memory import open_memory

TOKEN = "test-token-0123456789abcdef"
TOOLS = {"create_entity", "create_relation", "semantic_recall", "spread_activation", "supersede_fact", "remember",
         "agent_turn", "agent_skill", "agent_knowledge", "agent_predictions",
         "query", "episodes", "history", "forget", "list_tags", "stats", "infer"}


def settings(tmp_path: Path) -> list[str]:
    (tmp_path / "priors").mkdir(exist_ok=True)
    return [f"memoryDir={tmp_path / 'memory'}", f"knowledgePriorsDir={tmp_path / 'priors'}", "embeddingprovider=hash",
            "chromaMode=embedded"]


def environment() -> dict[str, str]:
    return {**os.environ, "MEMORY_MCP_TOKEN": TOKEN, "PYTHONUNBUFFERED": "1"}


async def exercise(client: Client) -> dict[str, object]:
    """Every tool once, in an order where each finds what the one before it wrote; the answers."""
    listed = await client.list_tools()
    assert {t.name for t in listed.tools} == TOOLS
    assert all(t.description and t.input_schema.get("type") == "object" for t in listed.tools)

    async def call(tool: str, **args: object) -> dict:
        result = await client.call_tool(tool, args)
        assert not result.is_error, f"{tool}: {result.content}"
        return result.structured_content

    out: dict[str, object] = {}
    entity = await call("create_entity", content="Alice lives in Paris", name="alice home", tags=["people"])
    assert entity["action"] == "created"
    assert (await call("create_entity", content="Alice lives in Paris"))["action"] in ("reinforced", "merged")
    edge = await call("create_relation", source="alice home", relation="near", target="the Louvre")
    assert edge["relation"] == "NEAR" and 0 < edge["weight"] <= 1
    found = (await call("semantic_recall", query="where does Alice live", explain=True))["results"]
    assert found[0]["id"] == entity["id"] and "parts" in found[0]
    spread = await call("spread_activation", source="alice home")
    assert any(hit["text"] == "the Louvre" for hit in spread["layers"]["semantic"])
    newer = await call("supersede_fact", old="alice home", new_content="Alice lives in Berlin")
    assert newer["superseded"] == [entity["id"]]
    versions = (await call("history", ref="alice home"))["versions"]
    assert [v["content"] for v in versions] == ["Alice lives in Paris", "Alice lives in Berlin"]
    assert versions[0]["valid_to"] and not versions[0]["current"] and versions[1]["current"]
    await call("remember", text="(--> sam human) (stv 1.0 0.9)")
    await call("remember", text="(--> human mortal) (stv 1.0 0.9)")
    note = await call("remember", text="The boat is moored at pier seven")
    assert "(--> sam mortal)" in (await call("infer", question="is sam mortal?"))["answer"]
    hits = (await call("query", phrase="where is the boat moored"))["results"]
    assert hits[0]["id"] == note["id"]
    assert (await call("list_tags"))["tags"] == {"people": 1}
    out["stats"] = await call("stats")
    assert isinstance((await call("episodes", when="2026"))["episodes"], list)
    assert (await call("forget", ref=note["id"]))["forgotten"] == [note["id"]]
    assert note["id"] not in [h["id"] for h in (await call("query", phrase="where is the boat moored"))["results"]]
    # a caller's mistakes come back as tool errors naming the cause
    missing = await client.call_tool("forget", {"ref": "no such record"})
    assert missing.is_error and "no record with id, name or text" in missing.content[0].text
    bad = await client.call_tool("create_entity", {"content": "x", "kind": "bogus"})
    assert bad.is_error and "kind" in bad.content[0].text
    unknown = await client.call_tool("no_such_tool", {})
    assert unknown.is_error
    return out


def test_every_tool_over_stdio(tmp_path) -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "mettaclaw.mcp", *settings(tmp_path)],
                                   env=environment())

    async def run() -> dict[str, object]:
        async with Client(params, read_timeout_seconds=60) as client:
            return await exercise(client)

    out = asyncio.run(run())
    assert out["stats"]["embedder"] == "hash:64" and out["stats"]["scope"] == "agent"
    assert out["stats"]["index_rows_by_kind"]["memory"] == 1 and out["stats"]["current_records_by_kind"]["fact"] == 1


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_waiting_for_a_server_that_exits_or_never_listens_says_so() -> None:
    """A child that dies is reported with its exit status and what it wrote to stderr, at once; one that
    never listens is reported after the timeout, never waited on forever."""
    url = f"http://127.0.0.1:{free_port()}/mcp"
    died = subprocess.Popen([sys.executable, "-c", "import sys; sys.stderr.write('no token set'); sys.exit(3)"],
                            stderr=subprocess.PIPE, text=True)
    with pytest.raises(RuntimeError, match=r"status 3: no token set"):
        wait_until_serving(url, died, timeout_s=60)
    silent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with pytest.raises(RuntimeError, match="did not answer"):
            wait_until_serving(url, silent, timeout_s=0.5)
    finally:
        silent.kill()
        silent.wait()


def test_every_tool_over_http_with_a_bearer_token(tmp_path) -> None:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "mettaclaw.mcp", "transport=http", f"port={port}",
                               *settings(tmp_path)], env=environment(), stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_until_serving(url, server)
        with pytest.raises(urllib.error.HTTPError) as bare:
            urllib.request.urlopen(url, timeout=5)
        assert bare.value.code == 401, "a request without the token is refused"
        wrong = urllib.request.Request(url, method="POST", data=b"{}", headers={"Authorization": "Bearer wrong"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(wrong, timeout=5)
        assert refused.value.code == 401

        async def run() -> dict[str, object]:
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http, \
                    Client(streamable_http_client(url, http_client=http)) as client:
                return await exercise(client)

        out = asyncio.run(run())
        assert json.dumps(out["stats"])
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert server.returncode == 0, "the server shuts down cleanly on SIGTERM"


def test_http_without_a_token_is_refused_before_anything_opens(tmp_path) -> None:
    config = load_config(["mcpTransport=http", *settings(tmp_path)], env={})
    with pytest.raises(ConfigError, match="MEMORY_MCP_TOKEN"):
        bearer_token(config, environ={})
    with pytest.raises(ConfigError, match="at least 16"):
        bearer_token(config, environ={"MEMORY_MCP_TOKEN": "short"})
    env = {k: v for k, v in os.environ.items() if k != "MEMORY_MCP_TOKEN"}
    done = subprocess.run([sys.executable, "-m", "mettaclaw.mcp", "transport=http", *settings(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "bearer token" in done.stderr and not (tmp_path / "memory").exists()
    bad = subprocess.run([sys.executable, "-m", "mettaclaw.mcp", "port=99999", *settings(tmp_path)], env=env,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "mcpPort" in bad.stderr


@pytest.mark.parametrize("host, warned", [("127.0.0.1", False), ("localhost", False), ("::1", False),
                                           ("0.0.0.0", True), ("192.168.1.20", True), ("::", True)])
def test_http_beyond_this_machine_is_warned_of(tmp_path, host, warned) -> None:
    # mcpHost=0.0.0.0 served the token and every memory to the network in clear text without a word
    from mettaclaw.mcp.__main__ import exposure_warning

    warning = exposure_warning(load_config(["mcpTransport=http", f"mcpHost={host}", *settings(tmp_path)], env={}))
    assert (warning is not None) == warned
    if warned:
        assert warning.startswith(f"warning: the memory is served on {host}, reachable from other machines")


def test_concurrent_clients_over_http_lose_and_duplicate_nothing(tmp_path) -> None:
    """Four MCP clients write at once through one HTTP server: every acknowledged write is found
    afterwards, exactly once, with its own text."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "mettaclaw.mcp", "transport=http", f"port={port}",
                               *settings(tmp_path)], env=environment(), stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/mcp"
    writers, each = 4, 15
    try:
        wait_until_serving(url, server)

        async def writer(n: int) -> list[tuple[str, str]]:
            acked = []
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http, \
                    Client(streamable_http_client(url, http_client=http)) as client:
                for k in range(each):
                    text = f"writer {n} note {k}: parcel {n * 100 + k} goes to dock {k % 7}"
                    tool = "remember" if k % 2 else "create_entity"
                    args = {"text": text} if tool == "remember" else {"content": text}
                    result = await client.call_tool(tool, args)
                    assert not result.is_error, result.content
                    acked.append((result.structured_content["id"], text))
            return acked

        async def run() -> list[tuple[str, str]]:
            done = await asyncio.gather(*(writer(n) for n in range(writers)))
            return [pair for acked in done for pair in acked]

        acked = asyncio.run(run())
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert len(acked) == writers * each and len({i for i, _ in acked}) == writers * each, "no write merged into another"
    memory = open_memory(load_config(settings(tmp_path), env={}), dream=False)
    try:
        for record_id, text in acked:
            assert memory.text_of(record_id) == text, f"{record_id} lost or changed"
        stored = [m.text for m in memory.index if m.text.startswith("writer ") and m.kind != "derived"]  # (a fact's copy)
        stored += [r.content for r in memory.semantic if r.content.startswith("writer ")]
        assert sorted(stored) == sorted(t for _, t in acked), "nothing duplicated, nothing extra"
    finally:
        memory.close()


def test_text_a_client_sends_is_made_safe_where_it_enters(open_test_memory) -> None:
    """JSON can carry a lone surrogate; it is replaced, never handed to a store that cannot encode it."""
    from mettaclaw.mcp.server import build_server

    memory = open_test_memory()

    async def run() -> tuple:
        async with Client(build_server(memory)) as client:
            stored = await client.call_tool("remember", {"text": "the gate code is 12\ud80034", "tags": ["x\udcff"]})
            entity = await client.call_tool("create_entity", {"content": "Zoe owns the \ud800 boat"})
            return stored, entity

    stored, entity = asyncio.run(run())
    assert not stored.is_error and not entity.is_error, (stored.content, entity.content)
    assert memory.text_of(stored.structured_content["id"]) == "the gate code is 12\ufffd34"
    assert memory.semantic.get(entity.structured_content["id"]).content == "Zoe owns the \ufffd boat"


def test_a_query_recall_refuses_comes_back_as_a_tool_error_naming_the_cause(open_test_memory) -> None:
    from mettaclaw.mcp.server import build_server

    memory = open_test_memory()

    async def run() -> tuple:
        async with Client(build_server(memory)) as client:
            return (await client.call_tool("query", {"phrase": "   "}),
                    await client.call_tool("query", {"phrase": "peanuts " * 5_000}))

    blank, long = asyncio.run(run())
    assert blank.is_error and "empty query" in blank.content[0].text
    assert long.is_error and "at most 20,000" in long.content[0].text


def test_remembering_a_document_is_a_tool_error_and_stores_nothing(open_test_memory) -> None:
    from mettaclaw.mcp.server import build_server

    memory = open_test_memory()

    async def run() -> tuple:
        async with Client(build_server(memory)) as client:
            return await client.call_tool("remember", {"text": "the pump manual says " + "check the seal. " * 1_000})

    refused = asyncio.run(run())
    assert refused.is_error and "at most 6,000 in one memory" in refused.content[0].text
    assert len(memory.index) == 0


def test_a_turn_at_an_impossible_time_is_refused_before_it_is_written_and_the_folder_still_opens(open_test_memory) -> None:
    """The tool's pattern lets 2026-02-30 through; such a turn was written to the trace first, the call
    then failed without a cause, and the folder never opened again (`bad time` at the index's catch-up)."""
    from mettaclaw.mcp.server import build_server

    memory = open_test_memory()
    turn = {"messages": [{"text": "the boiler is serviced in March"}], "commands": []}

    async def run() -> list:
        async with Client(build_server(memory)) as client:
            answers = [await client.call_tool("agent_turn", {"time": when, **turn})
                       for when in ("2026-02-30 10:00:00", "2026-13-45 99:99:99", "0001-01-01 00:00:00")]
            answers.append(await client.call_tool("agent_skill", {"skill": "query", "arg": "boiler",
                                                                  "time": "2026-02-30 10:00:00"}))
            answers.append(await client.call_tool("agent_turn", {"time": "2026-03-01 10:00:00", **turn}))
            return answers

    *refused, kept = asyncio.run(run())
    for answer, when in zip(refused, ("2026-02-30 10:00:00", "2026-13-45 99:99:99", "0001-01-01 00:00:00",
                                      "2026-02-30 10:00:00"), strict=True):
        assert answer.is_error and f"bad time {when!r}" in answer.content[0].text, answer.content
    assert not kept.is_error, kept.content
    assert [e.time for e in memory.trace] == ["2026-03-01 10:00:00"], "nothing of a refused turn was written"
    memory.close()
    reopened = open_test_memory()
    assert [h.id for h in reopened.query("boiler serviced", 5)] == kept.structured_content["episode_ids"]


def test_episodes_refuses_a_time_on_no_calendar_as_the_skill_does(open_test_memory) -> None:
    """The tool's pattern let 2026-02-30 and 25:61:61 through, answered as if no episode were there."""
    from mettaclaw.mcp.server import build_server

    memory = open_test_memory()

    async def run() -> list:
        async with Client(build_server(memory)) as client:
            return [await client.call_tool("episodes", {"when": when})
                    for when in ("2026-02-30", "2026-01-01 25:61:61", "0000", "2026-02-28 23:59")]

    *refused, fine = asyncio.run(run())
    for answer in refused:
        assert answer.is_error and "not on the calendar" in answer.content[0].text, answer.content
    assert not fine.is_error and fine.structured_content == {"episodes": []}


def test_a_number_that_is_not_finite_is_refused_naming_why(open_test_memory) -> None:
    """A NaN confidence failed the 0-1 check as "less than or equal to 1" (the SDK's client even sends a
    NaN as null, which stores the default); a NaN or infinite duration went into the trace and the
    statistics. Each is refused as not a finite number, and nothing is stored."""
    from mcp.server.mcpserver.exceptions import ToolError

    from mettaclaw.mcp.server import build_server

    memory = open_test_memory()
    server = build_server(memory)  # called directly: arguments arrive as the server parsed them, NaN included
    calls = [("create_entity", {"content": "Dave likes cheese", "confidence": float("nan")}),
             ("create_entity", {"content": "Dave likes ham", "confidence": float("inf")}),
             ("create_relation", {"source": "dave", "relation": "likes", "target": "cheese", "weight": float("nan")}),
             ("semantic_recall", {"query": "cheese", "min_confidence": float("nan")}),
             ("agent_knowledge", {"message": "cheese", "budget": 100, "budget_ms": float("inf")}),
             ("agent_turn", {"time": "2026-01-01 10:00:00", "messages": [],
                             "commands": [{"skill": "shell", "args": ["make"], "ms": float("nan")}]}),
             ("agent_turn", {"time": "2026-01-01 10:00:00", "messages": [],
                             "commands": [{"skill": "shell", "args": ["make"], "ms": -5.0}]})]
    for tool, args in calls:
        with pytest.raises(ToolError, match="finite number|greater than or equal to 0"):
            asyncio.run(server.call_tool(tool, args))
    assert not list(memory.semantic) and len(memory.trace) == 0


def test_the_bearer_scheme_is_matched_without_regard_to_case() -> None:
    """RFC 7235: the scheme's name is case-insensitive; `bearer <token>` got 401. The token itself is
    still compared exactly, and another scheme or a missing header is refused."""
    from mettaclaw.mcp.server import RequireBearer

    async def app(scope, receive, send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})

    guard = RequireBearer(app, TOKEN)

    def status(header: str | None) -> int:
        sent: list[dict] = []

        async def send(message: dict) -> None:
            sent.append(message)

        headers = [] if header is None else [(b"authorization", header.encode())]
        asyncio.run(guard({"type": "http", "headers": headers}, None, send))
        return sent[0]["status"]

    for ok in (f"Bearer {TOKEN}", f"bearer {TOKEN}", f"BEARER {TOKEN}", f"Bearer  {TOKEN}"):
        assert status(ok) == 200, ok
    for refused in (None, "", TOKEN, f"Basic {TOKEN}", f"Bearer {TOKEN.upper()}", f"Bearer {TOKEN}x", "Bearer",
                    f"Bearer{TOKEN}"):
        assert status(refused) == 401, refused


def test_relating_an_id_of_no_record_is_an_error_and_makes_nothing(open_test_memory) -> None:
    """The tool promises that unknown *names* become concepts; an id of no record (mistyped, forgotten,
    another scope's, an episode's) was made a concept named by the id's text."""
    import uuid

    from mcp.server.mcpserver.exceptions import ToolError

    from mettaclaw.mcp.tools import MemoryTools

    memory = open_test_memory()
    tools = MemoryTools(memory, scope="user:bob")
    alices = memory.semantic.learn("Alice keeps bees", name="alice bees", scope="user:alice").id
    bobs = tools.create_entity("Bob keeps goats", name="bob goats")["id"]
    for missing in (str(uuid.uuid4()), str(uuid.uuid4()).upper(), alices, "ep-0", "act-12"):
        with pytest.raises(ToolError, match=f"no fact or concept with id {missing!r} here"):
            tools.create_relation(bobs, "near", missing)
        with pytest.raises(ToolError, match="no fact or concept with id"):
            tools.create_relation(missing, "newrelation", "the big barn")
    assert sorted(r.id for r in memory.semantic) == sorted([alices, bobs]), "no concept was made"
    assert "NEWRELATION" not in memory.semantic.relations.types()
    edge = tools.create_relation(bobs, "near", "the big barn")  # a name of no record still becomes a concept
    assert edge["source"] == bobs or edge["target"] == bobs
    assert any(r.name == "the big barn" and r.kind == "concept" for r in memory.semantic)


def test_semantic_recall_holds_its_results_to_the_floor_query_does(open_test_memory) -> None:
    """semantic_recall listed the nearest records however far: an unrelated question got every fact,
    while `query` (and the `recall` skill) answered nothing. It now keeps what passes the same floor
    (RecallPipeline.relevant); a listing by filters alone (mode logical) has no query, so no floor."""
    from mettaclaw.mcp.tools import MemoryTools
    from mettaclaw.skills import semantic as skills

    memory = open_test_memory()
    tools = MemoryTools(memory)
    tools.create_entity("The cabin wifi password is pinecone-42.")
    tools.create_entity("The office of the mayor is on the second floor and closes at five.", tags=["town"])
    for unrelated in ("quantum chromodynamics lattice", "the of and"):
        assert tools.query(unrelated)["results"] == []
        for mode in ("semantic", "hybrid"):
            assert tools.semantic_recall(unrelated, mode=mode) == {"results": []}, (mode, unrelated)
    # what the floor turned away was not used: it was strengthened for every unrelated question
    memory.apply_touches()  # a read notes its uses; the writer applies them
    assert all(not r.access_times for r in memory.semantic), "a record nobody was shown was counted as used"
    skills.recall(memory.semantic, "quantum chromodynamics lattice", relevant=memory.pipeline.relevant)
    memory.apply_touches()
    assert all(not r.access_times for r in memory.semantic)
    found = tools.semantic_recall("cabin wifi password")["results"]
    assert [r["content"] for r in found] == ["The cabin wifi password is pinecone-42."]
    memory.apply_touches()
    assert [len(r.access_times) for r in memory.semantic if "wifi" in r.content] == [1]
    listed = tools.semantic_recall("anything", mode="logical", tags_all=["town"])["results"]
    assert [r["content"] for r in listed] == ["The office of the mayor is on the second floor and closes at five."]


def test_a_tag_past_the_limit_is_refused_naming_it_and_nothing_is_stored(open_test_memory) -> None:
    """A tag of a megabyte was accepted and stored (in the row's metadata, the tag sets, the semantic
    store). The tools' schemas say maxLength, and the memory refuses it too, for callers the schema
    does not guard (the tools called directly, the `learn` skill)."""
    from mcp.server.mcpserver.exceptions import ToolError

    from mettaclaw.mcp.server import build_server
    from mettaclaw.mcp.tools import MemoryTools
    from mettaclaw.memory.core.tags import MAX_TAG_CHARS

    memory = open_test_memory()
    huge, longest = "x" * 1_000_000, "t" * MAX_TAG_CHARS

    async def run() -> tuple:
        async with Client(build_server(memory)) as client:
            schemas = {t.name: t.input_schema for t in (await client.list_tools()).tools}
            return schemas, [await client.call_tool("remember", {"text": "the shed key is under the mat", "tags": [huge]}),
                             await client.call_tool("create_entity", {"content": "Zoe owns a boat", "tags": ["ok", huge]})]

    schemas, refused = asyncio.run(run())
    for answer in refused:
        assert answer.is_error and f"at most {MAX_TAG_CHARS} characters" in answer.content[0].text, answer.content
    for tool, arg in (("remember", "tags"), ("create_entity", "tags"), ("semantic_recall", "tags_all")):
        assert f'"maxLength": {MAX_TAG_CHARS}' in json.dumps(schemas[tool]["properties"][arg]), (tool, arg)
    tools = MemoryTools(memory)
    with pytest.raises(ToolError, match=f"1,000,000 characters; a tag holds at most {MAX_TAG_CHARS}"):
        tools.remember("the shed key is under the mat", tags=[huge])
    with pytest.raises(ToolError, match=f"a tag holds at most {MAX_TAG_CHARS}"):
        tools.create_entity("Zoe owns a boat", tags=[huge])
    assert len(memory.index) == 0 and not list(memory.semantic), "nothing of a refused write was stored"
    assert tools.remember("the shed key is under the mat", tags=[longest])["created"]
    assert tools.create_entity("Zoe owns a boat", tags=[longest])["action"] == "created"


def test_a_category_past_the_limit_is_refused_naming_it_and_nothing_is_stored(open_test_memory) -> None:
    """create_entity stored a category of a megabyte (and showed it in every result of that record),
    where a name of the same length is refused."""
    from mettaclaw.mcp.server import build_server
    from mettaclaw.memory.semantic.memory import MAX_CONTENT

    memory = open_test_memory()

    async def run() -> tuple:
        async with Client(build_server(memory)) as client:
            return (await client.call_tool("create_entity", {"content": "Zoe owns a boat", "category": "x" * 1_000_000}),
                    await client.call_tool("create_entity", {"content": "Zoe owns a boat", "category": "vehicle"}))

    refused, kept = asyncio.run(run())
    assert refused.is_error and f"the category is 1000000 chars; a category holds at most {MAX_CONTENT}" in \
        refused.content[0].text, refused.content
    assert not kept.is_error and [r.category for r in memory.semantic] == ["vehicle"]


INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})


def over_stdio(tmp_path: Path, lines: list[str], answers: int) -> tuple[list[dict], bool, int]:
    """`lines` sent to `python -m mettaclaw.mcp` over stdio, stdin then closed: the first `answers`
    answers, whether any other came, and the server's exit code."""
    import queue
    import threading

    server = subprocess.Popen([sys.executable, "-m", "mettaclaw.mcp", *settings(tmp_path)], env=environment(),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    said: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [said.put(line) for line in server.stdout], daemon=True).start()
    try:
        server.stdin.write("\n".join(lines) + "\n")
        server.stdin.flush()
        got = [json.loads(said.get(timeout=120)) for _ in range(answers)]
    finally:
        server.stdin.close()
        server.wait(timeout=60)
    return got, not said.empty(), server.returncode


def test_a_malformed_line_over_stdio_gets_its_json_rpc_error_and_the_session_goes_on(tmp_path) -> None:
    """The SDK's stdio reader dropped a line that is not JSON, or JSON that is no JSON-RPC message, with
    a debug log line: the client got no answer at all. JSON-RPC 2.0 answers -32700 and -32600 (id null,
    or the request's own when it has one); a blank line asks nothing; the lines after are served."""
    lines = ["this is not json", "", "[1, 2]", '{"jsonrpc": "2.0", "id": 7, "method": 3}', "{broken", INITIALIZE,
             '{"jsonrpc": "2.0", "method": "notifications/initialized"}', '{"jsonrpc": "2.0", "id": 2, "method": "ping"}']
    got, _, returncode = over_stdio(tmp_path, lines, 6)
    errors = [(a["id"], a["error"]["code"]) for a in got if "error" in a]
    assert errors == [(None, -32700), (None, -32600), (7, -32600), (None, -32700)], got
    assert all(a["jsonrpc"] == "2.0" and a["error"]["message"] for a in got if "error" in a)
    assert {a["id"]: "result" in a for a in got if "error" not in a} == {1: True, 2: True}, got
    assert returncode == 0


def test_a_request_with_an_id_mcp_does_not_take_gets_one_invalid_request_answer_over_stdio(tmp_path) -> None:
    """A request whose id is an object, an array, a fraction, a boolean or null was read by the SDK as a
    notification (its models drop the id): served, never answered, and the client waited. JSON-RPC 2.0
    answers an invalid request -32600 with id null; every request that is not a notification gets
    exactly one answer, in order, and a notification none."""
    odd = ['{"a": 1}', "[1]", "1.5", "2.0", "true", "false", "null"]
    lines = [INITIALIZE, '{"jsonrpc": "2.0", "method": "notifications/initialized"}',
             *(f'{{"jsonrpc": "2.0", "id": {given}, "method": "ping"}}' for given in odd),
             '{"jsonrpc": "2.0", "method": "ping"}',  # no id: a notification, answered by nothing
             '{"jsonrpc": "2.0", "id": "last", "method": "ping"}']
    got, more, returncode = over_stdio(tmp_path, lines, len(odd) + 2)
    assert got[0]["id"] == 1 and "result" in got[0], got[0]
    assert [(a["id"], a.get("error", {}).get("code")) for a in got[1:-1]] == [(None, -32600)] * len(odd), got
    assert all(given in a["error"]["data"] for given, a in zip(odd, got[1:-1], strict=True)), got
    assert got[-1] == {"jsonrpc": "2.0", "id": "last", "result": {}}, got[-1]
    assert not more and returncode == 0


def test_a_response_from_the_client_is_never_answered_over_stdio(tmp_path) -> None:
    """A response whose id MCP does not take (an object, a fraction, an array, none) was answered -32600:
    an answer to an answer, which JSON-RPC 2.0 forbids. Responses are dropped, a readable one by the
    SDK (no request of ours waits on it), and the requests around them are answered as before."""
    responses = ['{"jsonrpc": "2.0", "id": {"a": 1}, "result": {}}', '{"jsonrpc": "2.0", "id": 1.5, "result": {}}',
                 '{"jsonrpc": "2.0", "id": [1], "error": {"code": 1, "message": "x"}}', '{"jsonrpc": "2.0", "result": {}}',
                 '{"jsonrpc": "2.0", "id": 9, "error": {"code": "not a number"}}',
                 '{"jsonrpc": "2.0", "id": 5, "result": {}}', '{"jsonrpc": "2.0", "id": "x", "error": {"code": 1, "message": "m"}}']
    lines = [INITIALIZE, '{"jsonrpc": "2.0", "method": "notifications/initialized"}', *responses,
             '{"jsonrpc": "2.0", "id": "last", "method": "ping"}']
    got, more, returncode = over_stdio(tmp_path, lines, 2)
    assert got[0]["id"] == 1 and "result" in got[0], got[0]
    assert got[1] == {"jsonrpc": "2.0", "id": "last", "result": {}}, got[1]
    assert not more and returncode == 0


def test_a_malformed_response_is_dropped_and_logged_not_answered(caplog) -> None:
    from mettaclaw.mcp.server import read_line

    with caplog.at_level("WARNING", logger="mettaclaw.mcp.server"):
        assert read_line('{"jsonrpc": "2.0", "id": {"a": 1}, "result": {}}') == (None, None)
    assert "dropped a malformed response" in caplog.text
    served, answer = read_line('{"jsonrpc": "2.0", "id": 5, "result": {}}')  # the SDK's to match or drop
    assert answer is None and served is not None
    _, answer = read_line('{"jsonrpc": "2.0", "id": 7, "method": 3}')  # a request is still answered
    assert answer is not None and answer.message.error.code == -32600


def test_forgetting_a_knowledge_prior_is_a_tool_error_naming_why_and_keeps_it(open_test_memory, tmp_path) -> None:
    """Memory.forget refuses a knowledge prior's chunk with a ValueError (it comes back from its file at
    the next start); the tool caught LookupError only, so the SDK answered a bare "Error executing tool
    forget", without the cause, as it does for a bug."""
    from mettaclaw.mcp.server import build_server

    priors = tmp_path / "priors"
    priors.mkdir()
    (priors / "cabin.md").write_text("# Cabin\n\n## Wifi\n\nThe cabin wifi password is cedar-42.\n")
    memory = open_test_memory(f"knowledgePriorsDir={priors}")
    [chunk] = [row.id for row in memory.index]

    async def run() -> object:
        async with Client(build_server(memory)) as client:
            return await client.call_tool("forget", {"ref": chunk})

    refused = asyncio.run(run())
    assert refused.is_error and "knowledge prior 'cabin.md'" in refused.content[0].text, refused.content
    assert memory.index.get(chunk) is not None


def test_a_record_a_scoped_server_shows_carries_the_tags_its_writer_gave_and_they_can_be_written_back(
        open_test_memory) -> None:
    """A record of a user's scope carries the reserved tag `scope:<name>`; semantic_recall and history
    showed it among the record's tags, and a client that wrote a record's tags back (a copy, a
    correction) was refused: "tags starting with 'scope:' are reserved for scopes"."""
    from mettaclaw.mcp.tools import MemoryTools

    memory = open_test_memory()
    bob = MemoryTools(memory, scope="user:bob")
    made = bob.create_entity("Bob's boat is moored at pier seven", name="bob boat", tags=["boats"])
    [found] = bob.semantic_recall("where is bob's boat moored")["results"]
    assert found["id"] == made["id"] and found["tags"] == ["boats"], found
    assert [v["tags"] for v in bob.history("bob boat")["versions"]] == [["boats"]]
    bob.create_entity("Bob's canoe is in the shed", tags=found["tags"])  # written back as shown
    assert bob.list_tags()["tags"] == {"boats": 2}
    assert all("scope:user:bob" in r.tags for r in memory.semantic), "the records are bob's all the same"


def test_a_request_with_an_id_mcp_does_not_take_gets_one_invalid_request_answer_over_http(open_test_memory) -> None:
    """As over stdio (read_line): the SDK reads a request whose id is null, a fraction, a boolean or an
    object as a notification, so over HTTP it answered 202 Accepted, ran nothing and its client never
    learnt why; each is now answered -32600 with id null, and the requests around it are served."""
    from starlette.testclient import TestClient

    from mettaclaw.mcp.server import build_server, http_app

    memory = open_test_memory()
    app = http_app(build_server(memory), TOKEN, "127.0.0.1")
    headers = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json, text/event-stream",
               "Content-Type": "application/json"}

    def remember(request_id: object, text: str) -> dict:
        return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                "params": {"name": "remember", "arguments": {"text": text}}}

    with TestClient(app, base_url="http://127.0.0.1:8765") as client:
        opened = client.post("/mcp", headers=headers, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        assert opened.status_code == 200, opened.text
        headers["mcp-session-id"] = opened.headers["mcp-session-id"]
        client.post("/mcp", headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        for odd in (None, 1.5, True, {"a": 1}, [2]):
            answer = client.post("/mcp", headers=headers, json=remember(odd, f"odd id {odd!r}"))
            assert answer.status_code == 400, (odd, answer.status_code, answer.text)
            error = answer.json()
            assert error["id"] is None and error["error"]["code"] == -32600, error
            assert "the id must be a string or an integer" in error["error"]["data"]
        served = client.post("/mcp", headers=headers, json=remember(7, "the kayak is in the boathouse"))
        assert served.status_code == 200 and "the kayak" not in served.text and '"id":7' in served.text, served.text
    assert [row.text for row in memory.index] == ["the kayak is in the boathouse"], "no odd-id request was run"


def test_a_batch_or_another_json_rpc_version_over_http_gets_the_invalid_request_answer_stdio_gives(
        open_test_memory) -> None:
    """Over HTTP the SDK answered a JSON array (a batch, which MCP does not take) and `"jsonrpc": "1.0"`
    with -32602 "Invalid params" and a pydantic dump; over stdio they get -32600 Invalid Request (with
    the request's id when it has one). HTTP now answers each as stdio does (`read_line`), 400, runs
    none of them, and serves the requests after; a malformed response gets 400 and no answer."""
    from starlette.testclient import TestClient

    from mettaclaw.mcp.server import build_server, http_app, read_line

    memory = open_test_memory()
    app = http_app(build_server(memory), TOKEN, "127.0.0.1")
    headers = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json, text/event-stream",
               "Content-Type": "application/json"}

    def remember(text: str, **fields: object) -> dict:
        return {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": "remember", "arguments": {"text": text}}, **fields}

    odd = [json.dumps([remember("a batch of one")]), json.dumps([]), json.dumps(remember("version one", jsonrpc="1.0")),
           json.dumps(remember("no version", jsonrpc=None)), '{"jsonrpc": "2.0", "id": 7, "method": 3}', "1.5",
           json.dumps(remember("a null id", id=None))]
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:
        opened = client.post("/mcp", headers=headers, content=INITIALIZE)
        assert opened.status_code == 200, opened.text
        headers["mcp-session-id"] = opened.headers["mcp-session-id"]
        client.post("/mcp", headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        for body in odd:
            answer = client.post("/mcp", headers=headers, content=body)
            stdio = json.loads(read_line(body)[1].message.model_dump_json(by_alias=True, exclude_unset=True))
            assert answer.status_code == 400 and answer.json() == stdio, (body, answer.text)
            assert stdio["error"]["code"] == -32600 and "validation" not in answer.text.lower(), answer.text
        assert client.post("/mcp", headers=headers, content=odd[2]).json()["id"] == 3  # its own id, as over stdio
        response = client.post("/mcp", headers=headers, content='{"jsonrpc": "1.0", "id": 2, "result": {}}')
        assert response.status_code == 400 and not response.content
        assert client.post("/mcp", headers=headers, content="{broken").json()["error"]["code"] == -32700
        served = client.post("/mcp", headers=headers, json=remember("the kayak is in the boathouse"))
        assert served.status_code == 200 and '"id":3' in served.text, served.text
    assert [row.text for row in memory.index] == ["the kayak is in the boathouse"], "none of the others was run"
