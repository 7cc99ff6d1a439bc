"""LoCoMo through the agent's whole memory pipeline: turns -> episodes -> dream -> the agent's recall.

Each conversation is one agent's memory: its turns are remembered in long-term memory (exactly as
`bench/locomo.py` indexes them) and are also the episodes a Dreamer consolidates (offline extractive
summariser: recurring statements become facts, clusters become summaries, and each speaker's content
sentences across the whole conversation become themes, each citing exactly the turns its text was
taken from). Each question is then answered by `crosslayer.AgentRecall` (memories
and semantic records fused by rank, spreading activation across layers, hits that add no new turn
dropped). A derived record counts for the turns it cites whose words it really shows (`verified`;
`pipeline-provenance` counts every turn a memory, fact or summary cites; a concept, whose name only
points at its turns, counts for none); nothing looks at a question's answer or evidence
before scoring. The plain hybrid query over the same memories runs alongside for comparison.

    python bench/locomo_pipeline.py [--data PATH] [--json PATH] [--limit-convs N] [--batch N]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from locomo import CATEGORIES, KS, count_tokens, load, memories_for  # noqa: E402

from mettaclaw.memory.dream import DreamEpisode, Dreamer, ExtractiveSummariser, ListSource  # noqa: E402
from mettaclaw.memory.dream.cache import CachedEmbedder  # noqa: E402
from mettaclaw.memory.longterm import LongTermMemory  # noqa: E402
from mettaclaw.memory.recall import AGENT_RECALL_OPTIONS, AgentRecall, LayerGraph  # noqa: E402
from mettaclaw.memory.semantic import InMemorySemanticStore, SemanticMemory  # noqa: E402
from mettaclaw.memory.text import sentences  # noqa: E402
from mettaclaw.memory.text import term_set as terms  # noqa: E402
from mettaclaw.memory.vectors import InMemoryVectorStore  # noqa: E402


def episodes_for(conv: dict) -> list[DreamEpisode]:
    """One episode a turn, id = its dia_id (so provenance is the turn itself), in conversation order."""
    out = []
    for n, turn in enumerate(conv["turns"]):
        when = datetime.strptime(turn["time"], "%Y-%m-%d %H:%M:%S").timestamp() + turn["idx"]
        out.append(DreamEpisode(turn["dia_id"], when, turn["text"], mark=n, meta={"speaker": turn["speaker"]}))
    return out


# How the agent is configured for this benchmark (chosen on the first two conversations only; the
# other five were held out to check them, see the report): summaries of up to 6 sentences, clusters
# per speaker, derived records ranked through their long-term mirror (so the semantic list itself
# adds nothing to the fusion) and spreading activation from the 10 best hits deciding the rest.
SUMMARY_SENTENCES = 6
GROUP_BY = "speaker"
RECALL_OPTIONS = AGENT_RECALL_OPTIONS  # the agent's own recall settings


def build_agent(conv: dict, embedder: Any, folder: Path, batch: int, concepts: bool,
                summariser: Any = None, group_by: str | None = GROUP_BY,
                recall_options: dict | None = None, cluster_size: int = 5) -> tuple[AgentRecall, LongTermMemory, dict]:
    """Remember the turns, dream over them, and return the agent's recall over both layers."""
    longterm = LongTermMemory(embedder, InMemoryVectorStore())
    results = longterm.remember_many(memories_for(conv))
    by_turn = {turn["dia_id"]: r.id for turn, r in zip(conv["turns"], results, strict=True)}
    turn_of = {mid: dia for dia, mid in by_turn.items()}
    semantic = SemanticMemory(embedder, InMemoryVectorStore(), InMemorySemanticStore())
    summariser = summariser or ExtractiveSummariser(summary_sentences=SUMMARY_SENTENCES)
    dreamer = Dreamer(semantic, ListSource(episodes_for(conv)), embedder, folder / "dream.json",
                      batch_size=batch, max_episodes=10**6, extract_concepts=concepts, summariser=summariser,
                      longterm=longterm, group_by=group_by, cluster_size=cluster_size)
    if concepts:
        dreamer.extract_pending(limit=10**6)
    report = dreamer.dream("benchmark")
    order = [t["dia_id"] for t in conv["turns"]]
    session = {t["dia_id"]: t["session"] for t in conv["turns"]}
    pos = {d: i for i, d in enumerate(order)}

    def adjacent(dia: str) -> list[str]:
        i = pos.get(dia)
        if i is None:
            return []
        return [order[j] for j in (i - 1, i + 1) if 0 <= j < len(order) and session[order[j]] == session[dia]]

    graph = LayerGraph(semantic, longterm=longterm, adjacent=adjacent, memories_of=lambda d: [by_turn[d]] if d in by_turn else [],
                       episode_of=turn_of.get)
    recall = AgentRecall(longterm, semantic, graph, touch=False, **(RECALL_OPTIONS if recall_options is None else recall_options))
    kinds = defaultdict(int)
    for rec in semantic:
        kinds[rec.kind] += 1
    return recall, longterm, {"dream": report.counts(), "records": dict(kinds), "clusters": report.clusters,
                              "candidates": report.candidates}


def verified(text: str, cites: list[str], turn_text: dict[str, str]) -> list[str]:
    """The cited turns whose words really are in the hit: some sentence of the turn (two content words
    or more) has at least 80% of its content words in the text. A turn counts for itself; a summary
    whose provenance was widened by a merge (a paraphrase folded in) counts only for what it shows."""
    have = terms(text)
    out = []
    for turn in cites:
        if turn_text.get(turn) == text:
            out.append(turn)
            continue
        for sent in sentences(turn_text.get(turn, "")):
            want = terms(sent)
            if len(want) >= 2 and len(want & have) >= 0.8 * len(want):
                out.append(turn)
                break
    return out


def score(found: list[list[str]], evidence: set[str]) -> dict[int, float]:
    out = {}
    for k in KS:
        covered = set().union(*found[:k]) if found else set()
        out[k] = len(evidence & covered) / len(evidence)
    return out


def run_pipeline(convs: list[dict], embedder: Any, *, batch: int = 100, concepts: bool = False,
                 compare: bool = True) -> dict[str, Any]:
    """Per-question ranked cited turns for mode "pipeline" (and "hybrid" alongside when `compare`),
    with recall by category and tokens of the top 10. What bench/locomo.py calls for mode pipeline."""
    from rich.progress import Progress

    embedder = CachedEmbedder(embedder, size=10**6)  # each text once per run: the dream re-reads the turns
    modes = ["pipeline", "pipeline-provenance", "hybrid"] if compare else ["pipeline", "pipeline-provenance"]
    recall = {m: defaultdict(lambda: defaultdict(list)) for m in modes}
    tokens: dict[str, list[int]] = {m: [] for m in modes}
    latency: dict[str, list[float]] = {m: [] for m in modes}
    questions, builds = [], []
    total = sum(len(c["questions"]) for c in convs)
    with Progress(transient=True) as bar, tempfile.TemporaryDirectory(prefix="locomo-dream-") as tmp:
        task = bar.add_task("building memories and dreaming", total=len(convs))
        agents = []
        for n, conv in enumerate(convs):
            start = time.perf_counter()
            agent, longterm, info = build_agent(conv, embedder, Path(tmp) / str(n), batch, concepts)
            info["build_s"] = time.perf_counter() - start
            builds.append({"source": conv["source"], **info})
            agents.append((agent, longterm))
            bar.update(task, advance=1)
        task = bar.add_task("asking", total=total)
        for conv, (agent, longterm) in zip(convs, agents, strict=True):
            turn_text = {t["dia_id"]: t["text"] for t in conv["turns"]}
            for qa in conv["questions"]:
                ranked: dict[str, tuple[list[list[str]], list[str]]] = {}
                t0 = time.perf_counter()
                hits = agent.recall(qa["question"], limit=max(KS))
                latency["pipeline"].append(time.perf_counter() - t0)
                ranked["pipeline"] = ([verified(h.text, h.cites, turn_text) for h in hits], [h.text for h in hits])
                ranked["pipeline-provenance"] = ([h.covers for h in hits], [h.text for h in hits])
                latency["pipeline-provenance"] = latency["pipeline"]
                if compare:
                    t0 = time.perf_counter()
                    mems = longterm.query(qa["question"], limit=max(KS), mode="hybrid")
                    latency["hybrid"].append(time.perf_counter() - t0)
                    ranked["hybrid"] = ([[str(m.meta.get("dia_id"))] for m in mems], [m.text for m in mems])
                entry = {"question": qa["question"], "category": qa["category"], "evidence": qa["evidence"]}
                for mode, (cites, texts) in ranked.items():
                    shares = score(cites, set(qa["evidence"]))
                    cat = CATEGORIES.get(qa["category"], str(qa["category"]))
                    for k, share in shares.items():
                        recall[mode][cat][k].append(share)
                        recall[mode]["all"][k].append(share)
                    tokens[mode].append(sum(count_tokens(t) for t in texts[:10]))
                    entry[mode] = cites
                questions.append(entry)
                bar.update(task, advance=1)
    out: dict[str, Any] = {"builds": builds, "questions": questions, "modes": {}}
    for mode in modes:
        lat = sorted(latency[mode])
        out["modes"][mode] = {
            "by_category": {cat: {"n": len(r[10]), **{f"R@{k}": sum(r[k]) / len(r[k]) for k in KS}}
                            for cat, r in recall[mode].items()},
            "tokens@10": sum(tokens[mode]) / len(tokens[mode]),
            "query_p50_ms": 1000 * lat[len(lat) // 2], "query_p95_ms": 1000 * lat[int(len(lat) * 0.95)]}
    return out


def print_lines(results: dict[str, Any]) -> None:
    """The same line format as bench/locomo.py."""
    for mode, res in results["modes"].items():
        for cat in [*CATEGORIES.values(), "all"]:
            if cat in res["by_category"]:
                r = res["by_category"][cat]
                line = f"{mode} {cat} " + " ".join(f"R@{k}={r[f'R@{k}']:.3f}" for k in KS)
                line += f" tokens@10={res['tokens@10']:.0f}" if cat == "all" else f" (n={r['n']})"
                print(line)
        print(f"{mode} query p50={res['query_p50_ms']:.1f} ms p95={res['query_p95_ms']:.1f} ms")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "locomo-dev.json")
    parser.add_argument("--json", type=Path, help="write the figures (and per-question ranked turns) here")
    parser.add_argument("--limit-convs", type=int, help="only the first N conversations (quick checks)")
    parser.add_argument("--skip-convs", type=int, default=0, help="leave out the first N conversations (held-out check)")
    parser.add_argument("--batch", type=int, default=100, help="episodes a dream clusters at once (default 100)")
    parser.add_argument("--concepts", action="store_true", help="also extract concepts from every turn (slow)")
    parser.add_argument("--no-compare", action="store_true", help="skip the plain hybrid query")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        parser.error(f"no data file at {args.data}")
    from mettaclaw.memory.embedders import SentenceTransformerEmbedder

    convs = load(args.data)[args.skip_convs :][: args.limit_convs]
    start = time.perf_counter()
    results = run_pipeline(convs, SentenceTransformerEmbedder(), batch=args.batch, concepts=args.concepts,
                           compare=not args.no_compare)
    n_q = sum(len(c["questions"]) for c in convs)
    print(f"{sum(len(c['turns']) for c in convs)} turns, {len(convs)} conversations, {n_q} questions; "
          f"batch {args.batch}; {time.perf_counter() - start:.0f} s")
    for b in results["builds"]:
        print(f"  {b['source']}: dream {b['dream']} records {b['records']} build {b['build_s']:.1f} s")
    print_lines(results)
    if args.json:
        args.json.write_text(json.dumps({"data": str(args.data), "batch": args.batch, **results}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
