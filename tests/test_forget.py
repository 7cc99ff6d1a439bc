"""Deletion that deletes: a forgotten fact, memory or episode never comes back, through any query path,
the trace file, the vector store, a restart or a dream; what was derived from it goes with it."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from mettaclaw.config import load_config
from mettaclaw.memory import open_memory
from mettaclaw.memory.stores.keyed_vectors import text_digest
from mettaclaw.messages import Message

SECRET = "4417"
TOLD = ["Good morning!", f"The safe code at the office is {SECRET}, behind the harbour painting.", "How are you?",
        f"Remember the safe code at the office is {SECRET}, behind the harbour painting.", "Coffee time!",
        "Ok, sounds good.", f"The harbour painting hides the office safe with code {SECRET}."]
QUESTIONS = ["office safe code", "harbour painting", f"code {SECRET}"]


class Clock:
    def __init__(self) -> None:
        self.now = 1_790_000_000.0

    def __call__(self) -> float:
        return self.now


def config(tmp_path: Path, **more: str):
    (tmp_path / "priors").mkdir(exist_ok=True)
    settings = {"memoryDir": str(tmp_path / "memory"), "knowledgePriorsDir": str(tmp_path / "priors"),
                "embeddingprovider": "hash", "chromaMode": "embedded", "dreamInterval": "0", **more}
    return load_config([f"{k}={v}" for k, v in settings.items()], env={})


def tell(memory, clock: Clock, lines: list[str]) -> None:
    for line in lines:
        clock.now += 60
        memory.record_turn(time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(clock.now)),
                           [Message(line, who="ana", channel="terminal")], [])


def everything_shown(memory) -> str:
    """The text of every answer every read path gives for the questions, and every stored byte of
    the trace and the vector store."""
    out = []
    for q in QUESTIONS:
        for layer in (None, "episodic", "semantic"):
            out += [h.text for h in memory.query(q, 50, layer=layer)]
        for mode in ("bm25", "vector", "hybrid"):
            out += [m.text for m in memory.index.query(q, limit=50, mode=mode)]
        for mode in ("semantic", "hybrid"):
            out += [r.record.content for r in memory.semantic.recall(q, 50, mode=mode, include_history=True) if r.record]
        out.append(memory.knowledge(q, 5000))
        out += [m.text for m in memory.beliefs(q, 50)]
    out += [r.content for r in memory.semantic]
    out += [str(memory.semantic.changes(r.id)) for r in memory.semantic]
    out += [e.text for e in memory.trace.around("2000", 10_000)]
    out.append(memory.trace.path.read_bytes().decode("utf-8", "replace"))
    out += [m.text for m in memory.index]
    return "\n".join(out)


def test_a_forgotten_fact_never_comes_back(tmp_path) -> None:
    clock = Clock()
    memory = open_memory(config(tmp_path), clock=clock, dream=False)
    tell(memory, clock, TOLD + [f"I walked {1000 + i} steps today according to my watch." for i in range(10)])
    memory.dreamer.dream("test")
    fact = next(r for r in memory.semantic if r.kind == "fact" and SECRET in r.content)
    assert len(fact.source_episodes) == 3
    kept_id = memory.remember("The bicycle is in the blue shed.").id
    memory.semantic.learn(f"The office safe opens with {SECRET}.", name="safe code")
    memory.sync_mirror()
    assert SECRET in everything_shown(memory)

    gone = memory.forget(fact.id)
    assert fact.id in gone and set(fact.source_episodes) <= set(gone), "the episodes it came from go with it"
    assert any(memory.semantic.get(i) is None for i in gone if not i.startswith("ep-"))
    memory.forget("safe code")  # by name
    assert SECRET not in everything_shown(memory)
    assert memory.index.get(kept_id) is not None, "nothing else was touched"
    assert [h.id for h in memory.query("where is the bicycle", 3)][0] == kept_id
    memory.close()

    clock.now += 3600
    memory = open_memory(config(tmp_path), clock=clock, dream=False)  # a restart: stores, snapshot, trace
    assert SECRET not in everything_shown(memory)
    tell(memory, clock, ["Lunch was good.", "See you tomorrow."])
    memory.dreamer.dream("after forgetting")
    assert SECRET not in everything_shown(memory), "a dream does not re-derive it"
    memory.close()
    documents = _chroma_documents(tmp_path)
    assert "bicycle" in documents and SECRET not in documents, "the vector store itself no longer holds it"


def _chroma_documents(tmp_path: Path) -> str:
    """Every document the embedded Chroma store holds, read with Chroma's own client."""
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(next((tmp_path / "memory").rglob("chroma.sqlite3")).parent),
                                       settings=Settings(anonymized_telemetry=False))
    return "\n".join(d or "" for c in client.list_collections() for d in client.get_collection(c.name).get()["documents"])


def test_forgetting_an_episode_retires_what_shows_it(tmp_path) -> None:
    clock = Clock()
    memory = open_memory(config(tmp_path), clock=clock, dream=False)
    tell(memory, clock, TOLD)
    memory.dreamer.dream("test")
    episodes = [m.id for m in memory.index if m.kind == "episode" and SECRET in m.text]
    derived = [r.id for r in memory.semantic if SECRET in r.content]
    assert episodes and derived
    for episode in episodes:
        memory.forget(episode)
    assert SECRET not in everything_shown(memory)
    assert all(memory.semantic.get(i) is None for i in derived)
    assert "Coffee time!" in [h.text.split(": ", 1)[-1] for h in memory.query("coffee time", 5, layer="episodic")]
    with pytest.raises(LookupError, match="no episode"):
        memory.forget(episodes[0])
    memory.close()


def test_a_forgotten_episode_does_not_come_back_in_its_speakers_next_theme(tmp_path) -> None:
    """The dream keeps each person's recent sentences (the theme window) to rebuild their themes when
    they say more: a forgotten episode leaves that window at once, on disk too, and a window that a
    crash left holding it is mended at the next rebuild."""
    clock = Clock()
    memory = open_memory(config(tmp_path), clock=clock, dream=False)
    tell(memory, clock, TOLD + [f"I walked {1000 + i} steps today according to my watch." for i in range(10)])
    memory.dreamer.dream("test")
    assert any(SECRET in r.content and "theme" in r.tags for r in memory.semantic)
    state = memory.dreamer.state_path
    before = state.read_bytes()
    assert SECRET.encode() in before
    kept, digest = memory.dreamer.window.vectors.store, text_digest(TOLD[1])  # the window's vectors, on disk
    assert kept.get(digest, digest) is not None
    for episode in [m.id for m in memory.index if m.kind == "episode" and SECRET in m.text]:
        memory.forget(episode)
    assert SECRET.encode() not in state.read_bytes()
    assert kept.get(digest, digest) is None
    tell(memory, clock, ["The harbour painting at the office is lovely.", "I like the office safe, it is sturdy."])
    memory.dreamer.dream("after forgetting")  # ana said more on the topic: her themes are rebuilt
    assert SECRET not in everything_shown(memory)
    memory.close()

    state.write_bytes(before)  # as if the process died between erasing the episodes and saving the window
    memory = open_memory(config(tmp_path), clock=clock, dream=False)
    tell(memory, clock, ["The office safe is painted grey.", "My aunt painted the harbour painting."])
    memory.dreamer.dream("after a crash")
    assert SECRET not in everything_shown(memory)
    assert SECRET.encode() not in state.read_bytes()
    memory.close()


def test_an_episode_erased_while_its_speakers_themes_are_built_is_not_written_into_one(tmp_path, monkeypatch) -> None:
    from mettaclaw.memory.dream import themes

    clock = Clock()
    memory = open_memory(config(tmp_path), clock=clock, dream=False)
    tell(memory, clock, TOLD + [f"I walked {1000 + i} steps today according to my watch." for i in range(10)])
    told = [m.id for m in memory.index if m.kind == "episode" and SECRET in m.text]
    build = themes.build

    def build_while_forgetting(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        found = build(*args, **kwargs)
        assert any(SECRET in t.text for t in found)
        while told:  # what a turn may do while the dream builds (the build holds no lock)
            memory.forget(told.pop())
        return found

    monkeypatch.setattr(themes, "build", build_while_forgetting)
    memory.dreamer.dream("test")
    assert not told and SECRET not in everything_shown(memory)
    memory.close()


def test_an_episode_erased_while_a_dream_reads_it_is_not_distilled(tmp_path) -> None:
    """A dream reads its episodes first and distils them batch by batch, for up to a minute: what is
    forgotten meanwhile is left out of the batches still to come and of the records still to write."""
    clock = Clock()
    memory = open_memory(config(tmp_path), clock=clock, dream=False)
    tell(memory, clock, TOLD + [f"I walked {1000 + i} steps today according to my watch." for i in range(10)])
    told = [m.id for m in memory.index if m.kind == "episode" and SECRET in m.text]
    dreamer = memory.dreamer
    distil = dreamer._batch

    def forget_then_distil(batch, report):  # noqa: ANN001, ANN202
        assert any(ep.id in told for ep in batch)  # read before it was forgotten
        while told:  # what a turn may do while the dream runs
            memory.forget(told.pop())
        return distil(batch, report)

    dreamer._batch = forget_then_distil
    report = dreamer.dream("test")
    assert report.episodes and not told
    assert SECRET not in everything_shown(memory)
    memory.close()


def test_turns_forgotten_together_go_in_one_store_delete_and_their_neighbours_are_indexed_again_without_them(
        tmp_path) -> None:
    """A scope or a fact takes many turns with it: one delete for all their rows, and each later turn
    whose index-only context held their words indexed again once (one by one, a scope of 2,000 turns
    took 41 s under the memory's lock)."""
    from conftest import record_deletes

    from mettaclaw.memory.episodes.index import offset_of

    clock = Clock()
    memory = open_memory(config(tmp_path), clock=clock, dream=False)
    tell(memory, clock, ["We planned the trip to Lisbon.", "The ferry leaves at noon.", "Bring the blue umbrella.",
                         "Sounds good to me.", "See you at the pier.", "The museum opens at nine."])
    turns = sorted((m for m in memory.index if m.kind == "episode"), key=lambda m: offset_of(m.id))
    after = turns[3].id
    assert "ferry" in memory.index.get(after).meta["context"]  # the turns just before it, for its words
    deletes = record_deletes(memory.index.vector_store)
    gone = memory.episodes.erase_many([offset_of(turns[1].id), offset_of(turns[2].id)])
    assert sorted(gone) == sorted([turns[1].id, turns[2].id]) and len(deletes) == 1
    for word in ("ferry", "umbrella"):
        assert memory.index.query(word, limit=5, mode="bm25") == []
    assert "Lisbon" in memory.index.get(after).meta["context"]  # its context reaches back past them now
    assert [m.text for m in memory.index.query("museum", limit=1, mode="bm25")] == ["ana: The museum opens at nine."]
    memory.close()


def test_forget_refuses_what_it_cannot_delete(tmp_path) -> None:
    (tmp_path / "priors").mkdir()
    (tmp_path / "priors" / "house.md").write_text("# House\n\nThe boiler is serviced every October by Mr. Lund.\n")
    memory = open_memory(config(tmp_path), dream=False)
    prior = memory.query("when is the boiler serviced", 1)[0].id
    with pytest.raises(ValueError, match="knowledge prior 'house.md'"):
        memory.forget(prior)
    with pytest.raises(LookupError, match="no record"):
        memory.forget("nothing by this name")
    assert memory.record_turn("2026-01-01 10:00:00", [Message("the gate code is 1234")], []).turn_id == "ep-0"
    for ref in ("ep-" + "9" * 5000, "ep-\uff10", "act-\u0660"):  # int() refused 5,000 digits; other scripts' zeros
        with pytest.raises(LookupError):                     # were read as 0 and forgot ep-0
            memory.forget(ref)
    assert memory.trace.get("ep-0") is not None
    memory.close()


def test_the_forget_skill_deletes_through_the_agent(make_agent) -> None:
    agent, llm, channel, clock = make_agent(["remember The locker combination is 31-07-12.", "send ok"],
                                            ["keep this: the locker combination is 31-07-12"])
    agent.turn()
    row = next(m.id for m in agent.memory.index if "31-07-12" in m.text and m.kind == "memory")
    episode = next(m.id for m in agent.memory.index if "31-07-12" in m.text and m.kind == "episode")
    for ref in (row, episode):
        assert agent.use_skill("forget", ref).startswith("FORGET-SUCCESS")
    assert "31-07-12" not in agent.use_skill("query", "locker combination")
    assert agent.use_skill("forget", row).startswith("ERROR")


def test_a_name_only_forgotten_episodes_told_goes_with_them(tmp_path) -> None:
    clock = Clock()
    memory = open_memory(config(tmp_path), clock=clock, dream=False)
    tell(memory, clock, ["My secret lover is Horatio Plumtree.", "Lunch with Greta Lindqvist today.",
                         "Greta Lindqvist says hello again."])
    memory.dreamer.extract_pending()
    concepts = {r.content: r for r in memory.semantic if r.kind == "concept"}
    assert {"Horatio Plumtree", "Greta Lindqvist"} <= set(concepts)
    for episode in (concepts["Horatio Plumtree"].source_episodes[0], concepts["Greta Lindqvist"].source_episodes[0]):
        memory.forget(episode)
    left = {r.content: r for r in memory.semantic if r.kind == "concept"}
    assert "Horatio Plumtree" not in left and "Horatio" not in memory.knowledge("who is Horatio Plumtree?", 5000)
    assert len(left["Greta Lindqvist"].source_episodes) == 1  # still named by the turn that was kept
    memory.close()


def test_a_reference_of_only_punctuation_names_no_record(tmp_path) -> None:
    memory = open_memory(config(tmp_path), dream=False)
    fact = memory.semantic.learn("The payroll server password rotates monthly.")
    for ref in ("?", "%", "...", "*"):
        with pytest.raises(LookupError, match="no record"):
            memory.forget(ref)
    assert memory.semantic.get(fact.id) is not None
    memory.close()


def test_forgetting_reaches_the_trace_record_of_a_remember_and_the_turn_log(make_agent) -> None:
    agent, _, channel, _ = make_agent(["remember the vault combination is 4321-zq88\nsend noted", "send ok"],
                                      ["the weather is fine"])
    agent.turn()
    channel.put("my bank pin is 9911")
    agent.turn()
    folder = agent.memory.turn_log.parent
    assert "9911" in (folder / "turns.jsonl").read_text() and "4321-zq88" in (folder / "history.metta").read_text()
    row = next(m.id for m in agent.memory.index if m.kind == "memory" and "4321" in m.text)
    episode = next(m.id for m in agent.memory.index if m.kind == "episode" and "9911" in m.text)
    for ref in (row, episode):
        assert agent.use_skill("forget", ref).startswith("FORGET-SUCCESS")
    for name in ("turns.jsonl", "history.metta"):
        text = (folder / name).read_text()
        assert "9911" not in text and "4321" not in text, name
    [record] = [e for e in agent.memory.trace if e.commands and e.commands[0].skill == "remember"]
    assert record.commands[0].args == ("[forgotten]",) and record.commands[1].args == ("noted",)
    logged = [json.loads(line) for line in (folder / "turns.jsonl").read_text().splitlines()]
    assert [bool(r.get("forgotten")) for r in logged] == [True, True]  # each turn showed one of the two
    shown = agent.use_skill("episodes", "")
    assert "the weather is fine" in shown and "[forgotten]" in shown and "noted" in shown


def test_forgetting_a_memory_reaches_its_remember_after_the_clock_went_back(make_agent) -> None:
    """The turn that stored it was looked up by its time with one bisection of the trace, which
    assumed times never decrease: after the clock went back, the remember kept the text."""
    agent, llm, channel, clock = make_agent(["remember my bank pin is 4921"], ["note it"])
    agent.turn()
    clock.advance(-400 * 86400)
    for i in range(60):
        channel.put(f"message {i}")
        agent.turn()
        clock.advance(60)
    row = next(m.id for m in agent.memory.index if m.kind == "memory" and "4921" in m.text)
    assert agent.use_skill("forget", row).startswith("FORGET-SUCCESS")
    assert "4921" not in (agent.memory.turn_log.parent / "history.metta").read_text()


def test_forgetting_a_belief_reaches_its_remember_written_in_other_numbers(make_agent) -> None:
    """A belief is stored as its atom's text, `(stv 1.0 0.9)` for the model's `(stv 1 0.9)`: the
    remember was looked for by the stored text, so its record and log line kept the belief."""
    agent, *_ = make_agent(["remember (--> sam spy) (stv 1 0.9)\nremember (--> ann cook) (stv 1 0.9)"], ["note"])
    agent.turn()
    row = next(m.id for m in agent.memory.index if m.kind == "belief" and "spy" in m.text)
    assert agent.use_skill("forget", row).startswith("FORGET-SUCCESS")
    folder = agent.memory.turn_log.parent
    for name in ("history.metta", "turns.jsonl"):
        assert "spy" not in (folder / name).read_text(), name
    [record] = list(agent.memory.trace)
    assert [c.args for c in record.commands] == [("[forgotten]",), ("(--> ann cook) (stv 1 0.9)",)]


def test_forgetting_a_memory_reaches_every_remember_of_it_whenever_its_turn_was_recorded(make_agent,
                                                                                          monkeypatch) -> None:
    """The remember was looked for among the records of the second the memory was stored in: a turn
    recorded in a later second (its other commands took the time) kept the text, and so did an earlier
    turn that stored it too (remembering it again moved the memory's time to the later turn)."""
    agent, llm, channel, clock = make_agent(["remember my locker code is 5813", "remember my locker code is 5813"],
                                            ["note it"])
    agent.turn()
    channel.put("again")
    clock.advance(60)
    from mettaclaw.textutil import now_text

    monkeypatch.setattr(agent, "now_text", lambda: now_text(clock() + 1))  # the turn ends a second later
    agent.turn()
    row = next(m for m in agent.memory.index if m.kind == "memory" and "5813" in m.text)
    assert [e.time == row.time for e in agent.memory.trace] == [False, False]
    assert agent.use_skill("forget", row.id).startswith("FORGET-SUCCESS")
    folder = agent.memory.turn_log.parent
    for name in ("history.metta", "turns.jsonl"):
        assert "5813" not in (folder / name).read_text(), name


@pytest.mark.parametrize("text", ["ÜBER-STRASSE 12 is Zoë's door code", "4411 9930", "Ödön's pin is 7731"])
def test_forgetting_a_memory_finds_its_remember_whatever_letters_it_has(make_agent, text) -> None:
    """The trace's remembers are looked through only where they hold the memory's longest word, in
    any case (a whole-trace parse took 1.2 s at 76 MB): a word of capitals past ASCII, or none, is found."""
    agent, *_ = make_agent([f"remember {text}\nremember the bins go out on Tuesday"], ["note"])
    agent.turn()
    row = next(m for m in agent.memory.index if m.kind == "memory" and m.text == text)
    assert agent.use_skill("forget", row.id).startswith("FORGET-SUCCESS")
    folder = agent.memory.turn_log.parent
    for name in ("history.metta", "turns.jsonl"):
        assert text not in (folder / name).read_text(), name
    assert "the bins go out on Tuesday" in (folder / "history.metta").read_text()


def test_forgetting_a_premise_takes_the_inferences_drawn_from_it(make_agent) -> None:
    """An inferred fact keeps its proof trail, which quotes each premise's belief: forgetting a premise
    left its text there (the inspector's trail, the export), linked to a memory that was gone."""
    agent, *_ = make_agent(["remember (--> sam spy) (stv 1 0.9)\nremember (--> spy liar) (stv 1 0.9)",
                            "infer is sam a liar?"], ["go"])
    agent.turn()
    agent.channel.put("well?")
    kept = agent.turn().results[0].split("[kept as fact ")[1].split("]")[0]
    premise = next(m.id for m in agent.memory.index if m.kind == "belief" and "sam spy" in m.text)
    other = next(m.id for m in agent.memory.index if m.kind == "belief" and "spy liar" in m.text)
    gone = agent.use_skill("forget", premise)
    assert gone == f"FORGET-SUCCESS {premise}, {kept}" and agent.memory.semantic.get(kept) is None
    assert agent.memory.index.get(other) is not None  # the other premise stays
    assert not any("sam spy" in str(r.properties) for r in agent.memory.semantic.records.iter_records())
    assert not any(e.dst == premise for e in agent.memory.semantic.records.iter_edges())


def test_forgetting_one_of_the_turns_that_said_a_fact_keeps_it_for_the_others(tmp_path) -> None:
    """The wifi password said in three turns is one fact citing the three. Forgetting the first turn
    deleted the fact, and no later dream made it again (the dream had read the other two already):
    it now cites the two turns that still say it, in those words, and its index copy does too."""
    clock = Clock()
    memory = open_memory(config(tmp_path), clock=clock, dream=False)
    wifi = "The cabin wifi password is pinecone-42 and it is case sensitive."
    tell(memory, clock, [wifi, "Emma is allergic to peanuts.", wifi, wifi])
    memory.dreamer.dream("test")
    fact = next(r for r in memory.semantic if r.kind == "fact" and "pinecone" in r.content)
    first, *others = fact.source_episodes
    assert len(others) == 2
    memory.forget(first)
    kept = memory.semantic.get(fact.id)
    assert kept is not None and kept.source_episodes == others and kept.reinforcements == 2
    assert {e.dst for e in memory.semantic.records.edges_of(fact.id) if e.type == "DERIVED_FROM"} == set(others)
    # the episodes that say it are shown above it (and it then shows nothing more): asked of the dream's layer
    hit = next(h for h in memory.query("cabin wifi password", 5, layer="semantic") if h.id == fact.id)
    assert first not in hit.cites
    memory.forget(others[0])
    assert memory.semantic.get(fact.id).source_episodes == others[1:]
    memory.forget(others[1])  # no turn says it any more
    assert memory.semantic.get(fact.id) is None
    memory.close()


KILLED_MID_FORGET = """
import os, sys, time
sys.path.insert(0, sys.argv[2])
from test_forget import Clock, config, tell
from mettaclaw.memory import open_memory
from mettaclaw.memory import offset_of
from pathlib import Path
clock = Clock()
memory = open_memory(config(Path(sys.argv[1])), clock=clock, dream=False)
tell(memory, clock, ["We planned the trip to Lisbon.", "The ferry leaves at noon.", "Bring the blue umbrella.",
                     "Sounds good to me.", "See you at the pier."])
memory.index.vector_store.flush()
turns = sorted((m for m in memory.index if m.kind == "episode"), key=lambda m: offset_of(m.id))
print(" ".join(m.id for m in turns), flush=True)
deleted = memory.index.forget_many
memory.index.forget_many = lambda ids: (deleted(ids), os._exit(9))  # kill -9 just after the index delete
memory.forget(turns[1].id)
"""


def _killed(script: str, tmp_path: Path) -> list[str]:
    """Run `script` (which ends in os._exit(9), a kill -9 at that point) in a process of its own over
    `tmp_path`; the episode ids it printed."""
    import os
    import subprocess
    import sys

    tests = Path(__file__).parent
    path = os.pathsep.join([str(tests), str(tests.parent / "src")])  # this checkout's package, not an installed one
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path), str(tests)], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": path})
    assert done.returncode == 9, done.stderr[-2000:]
    return done.stdout.split()


def test_a_forget_killed_halfway_loses_no_other_turn_from_the_index(tmp_path) -> None:
    """Forgetting a turn indexes the next turns again without its words. They used to be deleted and
    written again: a kill -9 between the two left acknowledged turns in the trace but out of the index
    for good (the next start indexes only records after the last one indexed)."""
    ids = _killed(KILLED_MID_FORGET, tmp_path)
    memory = open_memory(config(tmp_path), clock=Clock(), dream=False)
    try:
        assert [i for i in ids if i != ids[1] and memory.index.get(i) is None] == []
        assert memory.trace.get(ids[1]) is not None, "the forget did not finish: it can be asked again"
        assert memory.forget(ids[1]) == [ids[1]]
        assert memory.index.query("ferry", limit=5, mode="bm25") == []
    finally:
        memory.close()


CUT_AFTER_THE_TRACE = """
import os, sys, time
sys.path.insert(0, sys.argv[2])
from pathlib import Path
from test_forget import Clock, config
from mettaclaw.memory import open_memory
from mettaclaw.messages import Message
clock = Clock()
memory = open_memory(config(Path(sys.argv[1])), clock=clock, dream=False)
said = ["my locker code is 5150", "the blue van is parked at the harbour", "my locker code is 5150 at the gym"]
turns = [memory.record_turn(time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(clock.now + 60 * n)),
                            [Message(said[n % 3], who="bob", channel="irc:#c")], []) for n in range(6)]
memory.dreamer.dream("test")
memory.index.vector_store.flush()
print(" ".join(t.turn_id for t in turns if "5150" in memory.trace.get(t.turn_id).message), flush=True)
memory.semantic.retire_citing = lambda *cited: os._exit(9)  # killed after the trace records were erased
memory.forget_scope("user:bob")
"""


def test_a_forget_cut_short_after_the_trace_is_finished_by_asking_again(tmp_path) -> None:
    """A forget killed after the trace record was erased but before what the dream distilled from it
    was retired: asking again answered "no episode", and the summary quoting it stayed for good."""
    from contextlib import nullcontext

    ids = _killed(CUT_AFTER_THE_TRACE, tmp_path)
    memory = open_memory(config(tmp_path), clock=Clock(), dream=False)
    try:
        assert all(memory.trace.get(i) is None for i in ids)
        assert any("5150" in r.content for r in memory.semantic), "the summary is still there"
        retired = []
        for episode in ids:
            with pytest.raises(LookupError) if not any(episode in r.source_episodes for r in memory.semantic) else nullcontext():
                retired += memory.forget(episode)
        assert retired, "asking again finished the forget"
        assert [r.content for r in memory.semantic if "5150" in r.content] == []
        assert [h.text for h in memory.query("locker code 5150", 10) if "5150" in h.text] == []
        window = json.loads((tmp_path / "memory" / "dream" / "state.json").read_text())["theme_sentences"]
        assert "5150" not in json.dumps(window)
    finally:
        memory.close()


def test_a_forget_cut_short_is_finished_by_its_own_scope_asking_again(tmp_path) -> None:
    """The same crash, asked again by bob himself (the `forget` skill as bob, or an MCP server of his
    scope): his erased turn was "no episode" to him, since a scoped reader was checked against the
    trace record the crash had already erased, and the summary quoting it stayed. Another scope's
    reader still gets "no episode" and changes nothing."""
    from mettaclaw.memory.core import scopes

    ids = _killed(CUT_AFTER_THE_TRACE, tmp_path)
    memory = open_memory(config(tmp_path), clock=Clock(), dream=False)
    try:
        quoting = sorted(r.id for r in memory.semantic if "5150" in r.content)
        assert quoting
        for episode in ids:
            with pytest.raises(LookupError, match="no episode"):
                memory.forget(episode, scopes.reading("user:alice"))
        assert sorted(r.id for r in memory.semantic if "5150" in r.content) == quoting
        assert sorted(memory.forget(ids[0], scopes.reading("user:bob"))) == quoting  # each cites all of them
        assert [r.content for r in memory.semantic if "5150" in r.content] == []
    finally:
        memory.close()


CUT_BEFORE_THE_MIRROR = CUT_AFTER_THE_TRACE.replace(
    "memory.semantic.retire_citing = lambda *cited: os._exit(9)  # killed after the trace records were erased",
    "memory._mirror.sync = lambda: os._exit(9)  # killed after the records were retired, before their copies")


def test_a_forget_killed_before_the_index_copies_of_retired_records_went_leaves_no_copy(tmp_path) -> None:
    """A forget killed after the dream's records citing the turn were deleted but before their copies
    in the memory index were: the copies outlived their records, `query` still showed the forgotten
    words, and asking again could not find them (the records were gone). Opening the memory removes
    every copy whose record is gone."""
    _killed(CUT_BEFORE_THE_MIRROR, tmp_path)
    memory = open_memory(config(tmp_path), clock=Clock(), dream=False)
    try:
        assert [r.content for r in memory.semantic if "5150" in r.content] == []
        assert [m.text for m in memory.index if "5150" in m.text] == []
        assert [h.text for h in memory.query("locker code 5150", 10) if "5150" in h.text] == []
    finally:
        memory.close()
