"""The inspector's page times on a large memory: each page fetched over HTTP from the real server
(uvicorn, as `ui=true` starts it) on a memory the agent's `open_memory` opened with the default
configuration, filled in bulk (setup, not measured) with `--memories` index rows (memory_scale.fill),
`--records` semantic records (semantic_scale.prefill) with links among them, and a full turn log.

    python bench/inspector.py [--memories 100000] [--records 5000] [--turns 20000] [--repeat 5]
                              [--json bench/results/inspector.json]

Prints the median and the worst of `--repeat` fetches per page (ms), with the load average.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import free_port, load_average, median, report  # noqa: E402
from memory_scale import fill, vector_pool  # noqa: E402
from semantic_scale import prefill  # noqa: E402


def write_turns(path: Path, n: int, rng: random.Random) -> None:
    """A turn log as a long run leaves it (one JSON line a turn, about 1 kB each)."""
    with open(path, "w", encoding="utf-8") as fh:
        for t in range(n):
            fh.write(json.dumps({"turn": t, "time": "2026-01-01 12:00:00", "episode_id": f"ep-{t}",
                                 "messages": [{"who": "user", "channel": "console", "text": f"message {t} " * 20}],
                                 "prompt_chars": 9000, "prompt_sections": {"PINS": 100, "HISTORY": 4000},
                                 "model_message": "KNOWLEDGE: ... " * 30, "reply": f"send reply {t}",
                                 "commands": [{"skill": "send", "ms": rng.random(), "result": "SENT"}],
                                 "errors": [], "turn_ms": 40.0}) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--memories", type=int, default=100_000)
    ap.add_argument("--records", type=int, default=5_000)
    ap.add_argument("--turns", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", default="bench/results/inspector.json")
    args = ap.parse_args(argv)

    import httpx
    import uvicorn

    from mettaclaw.config import load_config
    from mettaclaw.inspector.app import build
    from mettaclaw.memory import open_memory
    from mettaclaw.memory.semantic.records import Edge

    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "priors").mkdir()
        config = load_config([f"memoryDir={folder / 'memory'}", f"knowledgePriorsDir={folder / 'priors'}"], env={})
        memory = open_memory(config, dream=False)
        print("filling (setup, not timed) ...", flush=True)
        fill(memory, vector_pool(memory, rng), rng, 0, args.memories)
        prefill(memory.semantic, args.records, rng)
        ids = memory.semantic.records.ids()
        with memory.semantic.records.transaction():
            for a in ids[:2000]:  # a linked neighbourhood to draw
                for b in rng.sample(ids, 5):
                    if a != b:
                        memory.semantic.records.put_edge(Edge(a, b, "RELATED_TO", rng.random(), created_at=time.time()))
        write_turns(config.memory_path("turns.jsonl"), args.turns, rng)
        record, row = ids[0], next(iter(memory.index.ids_by(tags=["synthetic"])))

        token, port = "bench", free_port()
        server = uvicorn.Server(uvicorn.Config(build(memory, config.memory_path("turns.jsonl"), token), host="127.0.0.1",
                                               port=port, log_level="warning", lifespan="off"))
        import threading

        threading.Thread(target=server.run, daemon=True).start()
        while not server.started:
            time.sleep(0.05)
        pages = {"timeline": "/", "timeline, page 200": "/?page=200", "search": "/search?q=Ada+painted+a+red+bicycle",
                 "records": "/records", "records, next page": f"/records?before={time.time()}",
                 "semantic record": f"/record/{record}", "memory row": f"/record/{row}",
                 "graph picture": f"/graph/{record}.svg", "beliefs": "/beliefs", "dreams": "/dreams", "stats": "/stats"}
        rows, payload = [], {"memories": len(memory.index), "records": args.records, "turns": args.turns,
                             "load_before": load_average(), "pages_ms": {}}
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {token}"},
                          timeout=60) as http:
            for name, path in pages.items():
                times = []
                for _ in range(args.repeat):
                    began = time.perf_counter()
                    response = http.get(path)
                    times.append(1000 * (time.perf_counter() - began))
                    assert response.status_code == 200, (path, response.status_code, response.text[:300])
                payload["pages_ms"][name] = {"median": median(times), "max": max(times)}
                rows.append((name, f"median {median(times):7.1f} ms   worst {max(times):7.1f} ms"))
        payload["load_after"] = load_average()
        rows.append(("load average (1, 5, 15 min)", f"{payload['load_before']} before, {payload['load_after']} after"))
        server.should_exit = True
        memory.close()
    report(f"inspector pages over {payload['memories']:,} memories", rows, args.json, payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
