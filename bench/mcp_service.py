"""The memory over MCP: what a tool call costs over stdio and HTTP against the same call in process,
and how many writes a second one HTTP server takes from 1, 2 and 4 clients at once.

    python bench/mcp_service.py [--memories 5000] [--calls 60] [--writes 40] [--json PATH]

Default configuration (MiniLM embedder, embedded Chroma) in a fresh folder filled with `--memories`
generated memories. In process: the same `MemoryTools` function the server runs, called directly.
Over stdio and HTTP: `python -m mettaclaw.mcp` started as a user starts it, called with the SDK's own
client. One folder can be open in one process only, so the three run one after the other on the same
calls: quote the load average beside them. After the write runs, every acknowledged write is looked
up again.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import free_port, load_average, median, percentile, report  # noqa: E402
from memory_scale import fill, sentence, vector_pool  # noqa: E402

TOKEN = "bench-token-" + "x" * 16
QUESTIONS = ["what did I say about the garden", "when is the dentist", "where are the keys", "who called on Monday",
             "what is the wifi password", "how much was the insurance"]


def prepare(folder: Path, memories: int) -> list[str]:
    """A memory folder with `memories` rows; the settings that open it."""
    from mettaclaw.config import load_config
    from mettaclaw.memory import open_memory

    (folder / "priors").mkdir(parents=True)
    settings = [f"memoryDir={folder / 'memory'}", f"knowledgePriorsDir={folder / 'priors'}"]
    memory = open_memory(load_config(settings, env={}), dream=False)
    rng = random.Random(7)
    fill(memory, vector_pool(memory, rng), rng, 0, memories)
    memory.close()
    return settings


async def time_calls(client, calls: list[tuple[str, dict]]) -> list[float]:
    out = []
    for tool, args in calls:
        began = time.perf_counter()
        result = await client.call_tool(tool, args)
        out.append(time.perf_counter() - began)
        if result.is_error:
            raise SystemExit(f"{tool} failed: {result.content}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=5000)
    parser.add_argument("--calls", type=int, default=60, help="query and remember calls per transport")
    parser.add_argument("--writes", type=int, default=40, help="writes per client in the concurrent runs")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    import httpx2
    from mcp import Client, StdioServerParameters
    from mcp.client.streamable_http import streamable_http_client

    from mettaclaw.config import load_config
    from mettaclaw.mcp.server import wait_until_serving
    from mettaclaw.mcp.tools import MemoryTools
    from mettaclaw.memory import open_memory

    env = {**os.environ, "MEMORY_MCP_TOKEN": TOKEN}
    rng = random.Random(11)
    calls = [("query", {"phrase": rng.choice(QUESTIONS)}) if i % 2 else ("remember", {"text": sentence(rng, i)})
             for i in range(2 * args.calls)]
    times: dict[str, dict[str, list[float]]] = {t: {"query": [], "remember": []} for t in ("in_process", "stdio", "http")}
    with tempfile.TemporaryDirectory() as tmp:
        print(f"filling a memory with {args.memories:,} memories ...", flush=True)
        settings = prepare(Path(tmp), args.memories)

        def note(transport: str, batch: list[tuple[str, dict]], took: list[float]) -> None:
            for (tool, _), t in zip(batch, took, strict=True):
                times[transport][tool].append(t)

        async def interleaved() -> None:
            port = free_port()
            url = f"http://127.0.0.1:{port}/mcp"
            stdio = StdioServerParameters(command=sys.executable, args=["-m", "mettaclaw.mcp", *settings], env=env)
            rounds = [calls[i : i + 10] for i in range(0, len(calls), 10)]
            async with Client(stdio, read_timeout_seconds=120) as over_stdio:
                await time_calls(over_stdio, calls[:2])  # warm: the embedder loads on first use
                for batch in rounds:
                    note("stdio", batch, await time_calls(over_stdio, batch))
            server = subprocess.Popen([sys.executable, "-m", "mettaclaw.mcp", "transport=http", f"port={port}",
                                       *settings], env=env, stderr=subprocess.PIPE, text=True)
            try:
                wait_until_serving(url, server)
                async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120) as http, \
                        Client(streamable_http_client(url, http_client=http)) as over_http:
                    await time_calls(over_http, calls[:2])
                    for batch in rounds:
                        note("http", batch, await time_calls(over_http, batch))
            finally:
                server.terminate()
                server.wait(timeout=60)

        print("timing calls over stdio and HTTP ...", flush=True)
        asyncio.run(interleaved())
        print("timing the same calls in process ...", flush=True)
        memory = open_memory(load_config(settings, env={}), dream=False)
        tools = MemoryTools(memory)
        for tool, kwargs in calls[:2]:
            getattr(tools, tool)(**kwargs)
        for tool, kwargs in calls:
            began = time.perf_counter()
            getattr(tools, tool)(**kwargs)
            times["in_process"][tool].append(time.perf_counter() - began)
        memory.close()

        throughput = concurrent_writes(settings, env, args.writes, httpx2, Client, streamable_http_client)

    rows, payload = [], {"memories": args.memories, "calls_per_tool": args.calls, "load": load_average()}
    for tool in ("query", "remember"):
        base = median(times["in_process"][tool])
        for transport in ("in_process", "stdio", "http"):
            t = times[transport][tool]
            p50, p95 = 1000 * median(t), 1000 * percentile(t, 95)
            rows += [(f"{tool} {transport} p50 ms", p50), (f"{tool} {transport} p95 ms", p95)]
            payload[f"{tool}_{transport}_ms"] = {"p50": p50, "p95": p95, "ratio_p50": median(t) / base}
            if transport != "in_process":
                rows.append((f"{tool} {transport} / in process (p50)", median(t) / base))
    for writers, figures in throughput.items():
        rows += [(f"{writers} writer(s): writes/s", figures["writes_per_s"]),
                 (f"{writers} writer(s): acknowledged and found", f"{figures['found']}/{figures['acked']}")]
    payload["concurrent_writes"] = throughput
    rows.append(("load average", payload["load"]))
    report("memory over MCP", rows, args.json, payload)


async def write_at_once(url: str, writers: int, writes: int, httpx2, Client, streamable_http_client,
                        ) -> tuple[float, list[tuple[str, str]]]:
    """`writers` connected, warm clients start writing together; (seconds, acknowledged (id, text))."""
    ready = asyncio.Event()

    async def writer(n: int) -> list[tuple[str, str]]:
        acked = []
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120) as http, \
                Client(streamable_http_client(url, http_client=http)) as client:
            await client.call_tool("query", {"phrase": "warm up"})
            await ready.wait()
            for k in range(writes):
                text = f"run {writers} writer {n} write {k}: crate {k} goes to bay {n}-{k % 9}"
                result = await client.call_tool("remember", {"text": text})
                acked.append((result.structured_content["id"], text))
        return acked

    tasks = [asyncio.create_task(writer(n)) for n in range(writers)]
    await asyncio.sleep(3)  # every client connected and warm
    began = time.perf_counter()
    ready.set()
    done = await asyncio.gather(*tasks)
    return time.perf_counter() - began, [pair for acked in done for pair in acked]


def concurrent_writes(settings: list[str], env: dict, writes: int, httpx2, Client, streamable_http_client) -> dict:
    """Writes per second through one HTTP server from 1, 2 and 4 clients, each write looked up after."""
    from mettaclaw.config import load_config
    from mettaclaw.mcp.server import wait_until_serving
    from mettaclaw.memory import open_memory

    out = {}
    for writers in (1, 2, 4):
        port = free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        server = subprocess.Popen([sys.executable, "-m", "mettaclaw.mcp", "transport=http", f"port={port}", *settings],
                                  env=env, stderr=subprocess.PIPE, text=True)
        try:
            wait_until_serving(url, server)
            print(f"{writers} concurrent writer(s) ...", flush=True)
            took, acked = asyncio.run(write_at_once(url, writers, writes, httpx2, Client, streamable_http_client))
        finally:
            server.terminate()
            server.wait(timeout=60)
        memory = open_memory(load_config(settings, env={}), dream=False)
        found = sum(memory.text_of(i) == text for i, text in acked)
        memory.close()
        out[writers] = {"acked": len(acked), "found": found, "seconds": took, "writes_per_s": len(acked) / took}
    return out


if __name__ == "__main__":
    main()
