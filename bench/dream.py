"""The dream phase over 10k episodes with the offline summariser: time, and whether memory stays flat.

    python bench/dream.py [--episodes 10000] [--speakers 0] [--then 50] [--restart] [--embedder minilm|hash]
                          [--store chroma|memory] [--json PATH]

A synthetic but realistic trace (a real `history.metta` file): daily routines said again and again,
actions with success or failure, and one-off events naming people, places and objects. It is written
into a fresh memory folder, which `open_memory(config)` opens as `run.py` would (indexing the
episodes it finds, timed apart); then the memory's own dreamer dreams once, as the agent's does
(batches of 100, extractive summaries, themes, concepts, reconciliation through the semantic layer
on SQLite and the vector store, pattern promotion, decay/prune/cap). Resident memory is sampled after
every batch: "flat" means the last batches cost no more than the early ones.

Then, as a running agent goes on, `--then` more turns (the agent's dreamEvery) are recorded through the
memory and the next dream is timed: it rebuilds the themes of whoever spoke, over their whole kept
window. With `--speakers N` the trace is a chat of N named people, each with a window of their own;
with `--restart` the memory is closed and opened again before those turns, as when the agent starts anew.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from _common import load_average, report, rss_mb  # noqa: E402

from mettaclaw.config import load_config  # noqa: E402
from mettaclaw.memory import open_memory  # noqa: E402
from mettaclaw.memory.episodes.index import senders  # noqa: E402
from mettaclaw.memory.episodes.records import format_record  # noqa: E402
from mettaclaw.messages import Message  # noqa: E402
from mettaclaw.parser import Command  # noqa: E402
from mettaclaw.textutil import TIME_FORMAT  # noqa: E402

PEOPLE = ["Alice", "Bob", "Carol", "Dmitri", "Esther", "Farid", "Grace", "Hiro", "Ines", "Jonas"]
PLACES = ["Paris", "Leeds", "the office", "the garden", "the station", "the gym", "the library", "the market"]
OBJECTS = ["coffee mug", "laptop", "bicycle", "umbrella", "notebook", "kettle", "phone", "backpack", "lamp", "keys"]
VERBS = ["found", "lost", "repaired", "bought", "borrowed", "cleaned", "sold", "painted", "moved", "forgot"]
ROUTINES = ["Alice drinks black coffee every morning before work.", "Bob walks the dog in the park after lunch.",
            "The team meets on Mondays at ten to plan the week.", "Carol waters the plants every evening.",
            "The backup job runs every night at two.", "Hiro cycles to the office when it is dry."]
ACTIONS = [("shell", None), ("send", None), ("remember", None), ("query", None), ("shell", "disk full"),
           ("write-file", "permission denied")]


def synthetic_turns(n: int, speakers: int, seed: int = 7, start: datetime = datetime(2026, 1, 1, 8, 0, 0),
                    first: int = 0) -> list[tuple[datetime, str, str | None, Command, str | None]]:
    """(time, message, who or None, command, error) for n turns; who is one of the first `speakers`
    of PEOPLE (none: no names, one anonymous user)."""
    rng = random.Random(seed)
    when, out = start, []
    for i in range(first, first + n):
        when += timedelta(minutes=rng.randint(5, 90))
        if rng.random() < 0.35:
            message = rng.choice(ROUTINES)
        else:
            message = (f"{rng.choice(PEOPLE)} {rng.choice(VERBS)} the {rng.choice(OBJECTS)} at {rng.choice(PLACES)}"
                       f" on {when:%A}, ticket {rng.randint(100, 999)}.")
        skill, error = rng.choice(ACTIONS)
        who = rng.choice(PEOPLE[:speakers]) if speakers else None
        out.append((when, message, who, Command(skill, (f"step {i}",)), error))
    return out


def said(message: str, who: str | None) -> Message:
    """A line as the agent receives it: a named person's on a chat channel, else the terminal user's."""
    return Message(message, who, "chat" if who else "terminal")


def synthetic_trace(path: Path, n: int, speakers: int = 0) -> datetime:
    """The trace of `synthetic_turns`, written at once; returns the last turn's time."""
    turns = synthetic_turns(n, speakers)
    lines = [format_record(when.strftime(TIME_FORMAT), message, [command], error,
                           *senders([said(message, who)]))
             for when, message, who, command, error in turns]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")  # bulk write: the bench measures the dream
    return turns[-1][0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument("--speakers", type=int, default=0, choices=range(len(PEOPLE) + 1),
                        help="named people in the chat (0: one anonymous user)")
    parser.add_argument("--then", type=int, default=50, help="turns recorded before the next dream is timed")
    parser.add_argument("--embedder", choices=("minilm", "hash"), default="minilm")
    parser.add_argument("--store", choices=("chroma", "memory"), default="chroma", help="chromaMode embedded or memory")
    parser.add_argument("--cluster-on", choices=("embedding", "words"), default="embedding",
                        help="cluster episodes by their embeddings (the agent's way) or by TF-IDF words")
    parser.add_argument("--restart", action="store_true",
                        help="close and open the memory again before the --then turns (an agent started anew)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-dream-") as tmp:
        folder = Path(tmp)
        (folder / "priors").mkdir()
        config = load_config([f"memoryDir={folder / 'memory'}", f"knowledgePriorsDir={folder / 'priors'}",
                              f"embeddingprovider={'local' if args.embedder == 'minilm' else 'hash'}",
                              f"chromaMode={'embedded' if args.store == 'chroma' else 'memory'}"], env={})
        last = synthetic_trace(config.memory_path("history.metta"), args.episodes, args.speakers)
        start = time.perf_counter()
        memory = open_memory(config, dream=False, progress=True)  # indexes the episodes, as after a restart
        open_s = time.perf_counter() - start
        dreamer = memory.dreamer
        dreamer.show_progress, dreamer.cluster_on = True, args.cluster_on
        dreamer.max_episodes = max(dreamer.max_episodes, args.episodes)
        rss: list[float] = []
        original = dreamer._batch

        def measured(batch, rep):  # noqa: ANN001, ANN202 - sample memory after each batch
            out = original(batch, rep)
            rss.append(rss_mb())
            return out

        dreamer._batch = measured
        rss_start = rss_mb()
        start = time.perf_counter()
        result = dreamer.dream("benchmark")
        seconds = time.perf_counter() - start
        records = len(memory.semantic)
        embedded = dreamer.embedder.misses  # texts the model embedded (the cache missed), turns and dreams
        if args.restart:
            memory.close()
            memory = open_memory(config, dream=False)
            dreamer = memory.dreamer
        for when, message, who, command, error in synthetic_turns(args.then, args.speakers, seed=8, start=last,
                                                                  first=args.episodes):
            memory.record_turn(when.strftime(TIME_FORMAT), [said(message, who)],
                               [command], error)
        start, before = time.perf_counter(), dreamer.embedder.misses
        following = dreamer.dream("benchmark")
        next_s = time.perf_counter() - start
        next_embedded = dreamer.embedder.misses - before
        memory.close()
    tenth = max(1, len(rss) // 10)
    early, late = max(rss[:tenth]), max(rss[-tenth:])
    rows = [("episodes", result.episodes), ("embedder", config.embeddingprovider), ("store", config.chromaMode),
            ("clustered on", args.cluster_on), ("open + index episodes s", open_s),
            ("dream seconds", seconds), ("episodes / s", result.episodes / seconds), ("clusters", result.clusters),
            ("candidates", result.candidates), ("records after", records),
            *((a, n) for a, n in result.counts().items()), ("themes written", len(result.themes)),
            ("patterns promoted", len(result.patterns_promoted)), ("texts embedded, open + dream", embedded),
            (f"next dream after {args.then} turns{', after a restart' if args.restart else ''} s", next_s), ("... themes written", len(following.themes)),
            ("... texts it embedded", next_embedded),
            ("RSS at start MB", rss_start), ("RSS after first 10% MB", early), ("RSS after last 10% MB", late),
            ("RSS growth first->last 10%", late / early - 1.0), ("load average", load_average())]
    report("dream phase", rows, args.json, {k: v for k, v in rows} | {"rss_per_batch_mb": rss,
                                                                      "report": result.to_dict() | {"added": None,
                                                                      "reinforced": None, "merged": None,
                                                                      "themes": None}})
    if result.error or following.error:
        print(f"the dream failed: {result.error or following.error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
