"""The Dreamer: triggers, background work that never blocks the turn, crash safety, the skill, the mirror."""

from __future__ import annotations

import json
import logging
import threading
import time
from datetime import datetime, timedelta

import pytest

from mettaclaw.memory.dream import Dreamer, ExtractiveSummariser, ListSource
from mettaclaw.memory.dream.episodes import DreamEpisode
from mettaclaw.memory.dream.state import DreamState, save_state
from mettaclaw.memory.episodes.trace import EpisodicTrace
from mettaclaw.memory.errors import StoreDamaged
from mettaclaw.memory.index.longterm import LongTermMemory
from mettaclaw.memory.mirror import Mirror
from mettaclaw.memory.semantic import InMemorySemanticStore, SemanticMemory
from mettaclaw.memory.semantic.sqlite_store import SqliteSemanticStore
from mettaclaw.memory.stores.embedders import HashEmbedder
from mettaclaw.memory.stores.vectors import InMemoryVectorStore
from mettaclaw.parser import Command
from mettaclaw.skills import SkillError
from mettaclaw.skills.dream import dream_skill

START = datetime(2026, 3, 2, 8, 0, 0)
WAIT = 30.0  # generous limit for background work in tests; never a timing assertion


def stamp(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%d %H:%M:%S")


def fill(trace: EpisodicTrace, days: int = 6) -> None:
    for day in range(days):
        t = START + timedelta(days=day)
        trace.append(stamp(t), "Alice drinks black coffee every morning before work.", [Command("remember", ("x",))])
        trace.append(stamp(t + timedelta(hours=3)), "Bob walks the dog in the park after lunch.", [])
        trace.append(stamp(t + timedelta(hours=8)), f"Day {day}: Carol fixed bug number {day * 7} in the parser.", [])


def semantic(store=None) -> SemanticMemory:
    return SemanticMemory(HashEmbedder(256), InMemoryVectorStore(), store or InMemorySemanticStore(),
                          clock=lambda: 1_800_000_000.0)


def snapshot(sem: SemanticMemory):
    return sorted((r.kind, r.content, r.reinforcements, tuple(sorted(r.source_episodes))) for r in sem)


def until(predicate, limit: float = WAIT) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return False


class BlockingSummariser(ExtractiveSummariser):
    """Holds the first cluster until released, so a test can act while a dream is mid-way."""

    def __init__(self) -> None:
        super().__init__()
        self.entered, self.release = threading.Event(), threading.Event()

    def summarise(self, cluster, ignore=frozenset()):
        self.entered.set()
        if not self.release.wait(WAIT):
            raise RuntimeError("test never released the dream")
        return super().summarise(cluster)


class CrashingSummariser(ExtractiveSummariser):
    def __init__(self, after: int) -> None:
        super().__init__()
        self.calls, self.after = 0, after

    def summarise(self, cluster, ignore=frozenset()):
        self.calls += 1
        if self.calls > self.after:
            raise RuntimeError("power cut")
        return super().summarise(cluster)


def test_the_turn_is_not_blocked_while_a_dream_runs(tmp_path):
    trace = EpisodicTrace(tmp_path / "history.metta")
    fill(trace, 3)
    sem = semantic()
    sem.learn("The office opens at nine.")
    blocking = BlockingSummariser()
    dreamer = Dreamer(sem, trace, sem.embedder, tmp_path / "s.json", summariser=blocking, extract_concepts=False)
    dreamer.attach(trace)
    try:
        assert dream_skill(dreamer, "now").startswith("DREAM-STARTED")
        assert blocking.entered.wait(WAIT)
        # mid-dream: the turn's own work (append a record, recall, the skill) all complete
        new_id = trace.append(stamp(START + timedelta(days=9)), "What time does the office open?", [])
        assert trace.get(new_id).message == "What time does the office open?"
        assert sem.recall("when does the office open", 3)[0].record.content == "The office opens at nine."
        status = dream_skill(dreamer, "status")
        assert status.startswith("DREAM-RUNNING (skill)")
        assert dream_skill(dreamer, "now").startswith("DREAM-QUEUED")
        blocking.release.set()
        assert until(lambda: dreamer.last_report is not None and dreamer.running is None
                     and dreamer.state.dream_mark >= int(new_id.removeprefix("ep-")))
    finally:
        blocking.release.set()
        dreamer.stop()
    assert "DREAM-DONE" in dream_skill(dreamer, "status")


def test_a_crash_mid_dream_loses_nothing_and_the_next_dream_completes(tmp_path):
    trace = EpisodicTrace(tmp_path / "history.metta")
    fill(trace, 6)
    clean = semantic()
    Dreamer(clean, trace, clean.embedder, tmp_path / "clean.json", batch_size=6, extract_concepts=False).dream()

    store_path, state_path = tmp_path / "sem.sqlite3", tmp_path / "dream" / "state.json"
    sem = semantic(SqliteSemanticStore(store_path))
    crashing = Dreamer(sem, trace, sem.embedder, state_path, batch_size=6, extract_concepts=False,
                       summariser=CrashingSummariser(after=1))
    with pytest.raises(RuntimeError, match="power cut"):
        crashing.dream()
    saved = json.loads(state_path.read_text())
    assert saved["in_progress"] is not None and saved["dream_mark"] >= 0  # some batches finished, one did not
    sem.close()

    reopened = semantic(SqliteSemanticStore(store_path))
    again = Dreamer(reopened, trace, reopened.embedder, state_path, batch_size=6, extract_concepts=False)
    again.start()  # the restarted agent resumes the interrupted dream by itself
    try:
        assert until(lambda: again.last_report is not None and again.running is None)
    finally:
        again.stop()
    report = again.last_report
    assert report.reason == "resume an interrupted dream"
    assert report.resumed and report.error is None and report.finished_at is not None
    assert json.loads(state_path.read_text())["in_progress"] is None
    assert snapshot(reopened) == snapshot(clean)  # nothing lost, nothing counted twice


class SlowSummariser(ExtractiveSummariser):
    """A model that takes a while a cluster, as a real endpoint summarising may; `ctrl_c` is set (as
    run.py's Ctrl-C handler sets its event) while it works on its first cluster."""

    def __init__(self, ctrl_c: threading.Event) -> None:
        super().__init__()
        self.ctrl_c, self.calls = ctrl_c, 0

    def summarise(self, cluster, ignore=frozenset()):
        self.calls += 1
        self.ctrl_c.set()
        time.sleep(0.3)
        return super().summarise(cluster, ignore)


def test_ctrl_c_during_the_session_end_dream_ends_it_at_once_and_loses_nothing(tmp_path):
    """'consolidating this session's memories (at most 30 s)...': Ctrl-C then did nothing, since only
    the batch boundaries looked at the stop, and a batch's clusters each waited for the model; run.py
    sat out the 30 s and then stop's own 30 s. Now the dream stops after the cluster under way (not
    after all six of the batch). Cut, the batch is not marked done and writes nothing, so the next
    start dreams it whole."""
    trace = EpisodicTrace(tmp_path / "history.metta")
    fill(trace, 6)
    clean = semantic()
    Dreamer(clean, trace, clean.embedder, tmp_path / "clean.json", cluster_size=1, extract_concepts=False).dream()
    sem = semantic()
    state_path = tmp_path / "dream" / "state.json"
    cancel = threading.Event()
    slow = SlowSummariser(cancel)
    dreamer = Dreamer(sem, trace, sem.embedder, state_path, summariser=slow, cluster_size=1, extract_concepts=False)
    dreamer.start()
    try:
        dreamer.finish_session(30, cancel)
    finally:
        dreamer.stop()
    assert slow.calls == 1
    assert dreamer.state.dream_mark < 0 and dreamer.state.in_progress is not None and len(sem) == 0
    again = Dreamer(sem, trace, sem.embedder, state_path, cluster_size=1, extract_concepts=False)
    again.dream()
    assert snapshot(sem) == snapshot(clean)


class HeldModel:
    """A model whose call does not end until the test releases it (or a hang guard passes)."""

    name = "held"

    def __init__(self) -> None:
        self.entered, self.release, self.returned = threading.Event(), threading.Event(), threading.Event()

    def complete(self, prompt: str, message: str) -> str:
        self.entered.set()
        self.release.wait(120)
        self.returned.set()
        return "- Alice drinks black coffee every morning before work. [1]"


def test_ctrl_c_during_the_session_end_dream_abandons_the_summarisers_model_call(tmp_path):
    """The session-end dream's summariser called the model in the dreamer's own thread, so Ctrl-C (or
    SIGTERM) waited out the call under way, up to llmTimeout (30 s), where the agent's own calls are
    abandoned at once. Now the call is abandoned as those are: stop returns with the call still
    running, the cut batch writes nothing (no fallback facts), and the next dream does it whole."""
    trace = EpisodicTrace(tmp_path / "history.metta")
    fill(trace, 6)
    clean = semantic()
    Dreamer(clean, trace, clean.embedder, tmp_path / "clean.json", cluster_size=1, extract_concepts=False).dream()
    sem, model = semantic(), HeldModel()
    state_path = tmp_path / "dream" / "state.json"
    dreamer = Dreamer(sem, trace, sem.embedder, state_path, llm=model, cluster_size=1, extract_concepts=False)
    dreamer.start()
    cancel = threading.Event()
    threading.Thread(target=lambda: model.entered.wait(WAIT) and cancel.set(), daemon=True).start()
    try:
        dreamer.finish_session(WAIT, cancel)
        assert model.entered.is_set() and cancel.is_set()
        dreamer.stop(WAIT)
        assert not dreamer._thread.is_alive(), "stop waited for the model"
        assert not model.returned.is_set(), "the model call is still under way: abandoned, not waited out"
    finally:
        model.release.set()
    assert dreamer.summariser.failures == 0  # abandoned, not failed over to the extractive summariser
    assert dreamer.state.dream_mark < 0 and dreamer.state.in_progress is not None and len(sem) == 0
    again = Dreamer(sem, trace, sem.embedder, state_path, cluster_size=1, extract_concepts=False)
    again.dream()
    assert snapshot(sem) == snapshot(clean)


class DamagedStore(InMemorySemanticStore):
    """An in-memory store whose every write fails, while `broken`, as one damaged on disk does."""

    broken = False

    def transaction(self):
        if self.broken:
            raise StoreDamaged("the semantic store /m/records.sqlite3 is damaged (database disk image is malformed)")
        return super().transaction()


def test_a_damaged_store_is_logged_once_while_each_dream_still_fails(tmp_path, caplog):
    """Before, each wake-up of the worker (every new episode, every dream asked for) logged the same
    "dream failed" line while the store stayed damaged."""
    store = DamagedStore()
    sem = semantic(store)
    said = "Alice: The boiler in the cellar gets serviced every spring."
    source = ListSource([DreamEpisode(f"ep-{i}", 1_800_000_000.0 + i, said, meta={"who": "Alice"}) for i in range(2)])
    dreamer = Dreamer(sem, source, sem.embedder, tmp_path / "s.json", theme_policy=None)
    caplog.set_level(logging.INFO, logger="mettaclaw.memory.dream.runner")

    def failures() -> int:
        return sum(r.levelno >= logging.ERROR and "is damaged" in r.getMessage() for r in caplog.records)

    def wake(n: int) -> None:
        """A new episode and a dream asked for: each wakes the worker."""
        source.extend([DreamEpisode(f"ep-{n}", 1_800_000_000.0 + n, said, meta={"who": "Alice"})])
        dreamer.on_episode(f"ep-{n}", None)
        dreamer.request("skill")
        dreamer.wait(WAIT)

    store.broken = True
    dreamer.start()
    try:
        for n in range(2, 5):
            wake(n)
            assert dream_skill(dreamer, "status").startswith("DREAM-FAILED: the semantic store /m/records.sqlite3")
            with pytest.raises(StoreDamaged, match="is damaged"):  # each use fails, and says why
                dreamer.dream("now")
        assert failures() == 1
        store.broken = False  # mended: the next wake-up writes, and says so
        wake(5)
        assert dreamer.last_report.error is None and dream_skill(dreamer, "status").startswith("DREAM-DONE")
        assert any("written again" in r.getMessage() for r in caplog.records)
        store.broken = True  # damaged again: said again, once
        wake(6)
        wake(7)
        assert failures() == 2
    finally:
        dreamer.stop()


def test_a_fault_in_concept_extraction_fails_the_dream_asked_for_and_is_logged_once_with_its_traceback(
        tmp_path, caplog, monkeypatch):
    """A fault of ours (not a damaged store) while extracting concepts left the dream asked for pending:
    `wait()` and the session-end dream waited for it until their timeout, and each wake-up logged it."""
    from mettaclaw.memory.dream import runner

    sem = semantic()
    said = "Alice: The boiler in the cellar gets serviced every spring."
    source = ListSource([DreamEpisode(f"ep-{i}", 1_800_000_000.0 + i, said, meta={"who": "Alice"}) for i in range(2)])
    dreamer = Dreamer(sem, source, sem.embedder, tmp_path / "s.json", theme_policy=None)
    caplog.set_level(logging.INFO, logger="mettaclaw.memory.dream.runner")
    learn = runner.learn_concepts

    def broken(semantic_memory, episode):
        raise KeyError(f"no concept for {episode.id}")  # a bug of ours, not a damaged store

    monkeypatch.setattr(runner, "learn_concepts", broken)
    dreamer.start()
    try:
        for n in range(2, 5):
            source.extend([DreamEpisode(f"ep-{n}", 1_800_000_000.0 + n, said, meta={"who": "Alice"})])
            dreamer.on_episode(f"ep-{n}", None)
            dreamer.request("skill")
            report = dreamer.wait(WAIT)
            assert report is not None and report.reason == "skill" and report.error == "KeyError: 'no concept for ep-0'"
            assert dream_skill(dreamer, "status") == "DREAM-FAILED: KeyError: 'no concept for ep-0'"
        logged = [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert len(logged) == 1 and logged[0].exc_info is not None and "KeyError" in logged[0].getMessage()
        assert dreamer.finish_session(WAIT).error.startswith("KeyError")  # the session-end dream fails, not hangs
        monkeypatch.setattr(runner, "learn_concepts", learn)  # fixed: the next wake-up dreams
        dreamer.request("skill")
        assert dreamer.wait(WAIT).error is None and dream_skill(dreamer, "status").startswith("DREAM-DONE")
    finally:
        dreamer.stop()


def test_every_n_new_episodes_triggers_a_dream_in_the_background(tmp_path):
    trace = EpisodicTrace(tmp_path / "history.metta")
    sem = semantic()
    dreamer = Dreamer(sem, trace, sem.embedder, tmp_path / "s.json", every_n=9, extract_concepts=True)
    dreamer.attach(trace)
    dreamer.start()
    try:
        fill(trace, 2)
        assert dreamer.last_report is None
        fill(trace, 1)  # the ninth episode
        assert until(lambda: dreamer.last_report is not None)
        assert dreamer.last_report.reason == "9 new episodes"
        assert until(lambda: dreamer.state.concept_mark == dreamer.state.dream_mark)
    finally:
        dreamer.stop()
    alice = [r for r in sem if r.kind == "concept" and r.name == "Alice"]
    assert alice and alice[0].category == "person" and len(alice[0].source_episodes) == 3


def test_the_schedule_triggers_a_dream(tmp_path):
    now = [1_800_000_000.0]
    sem = semantic()
    source = ListSource([DreamEpisode(f"e{i}", now[0] + i, f"Note {i}: the heating was fixed.") for i in range(4)])
    dreamer = Dreamer(sem, source, sem.embedder, tmp_path / "s.json", interval_s=3600, clock=lambda: now[0],
                      extract_concepts=False)
    dreamer.state.last_dream = now[0]
    dreamer.start()
    try:
        now[0] += 2 * 3600
        dreamer.tick()
        assert until(lambda: dreamer.last_report is not None)
        assert dreamer.last_report.reason == "schedule" and dreamer.last_report.episodes == 4
    finally:
        dreamer.stop()


def test_a_memory_that_never_dreamed_waits_a_whole_interval_before_its_first_scheduled_dream(tmp_path):
    """A fresh folder's first episode started a dream (and, with an API model, a model call) at once."""
    now = [1_800_000_000.0]
    sem = semantic()
    source = ListSource([DreamEpisode("e0", now[0], "Note: the heating was fixed.")])
    dreamer = Dreamer(sem, source, sem.embedder, tmp_path / "s.json", interval_s=3600, clock=lambda: now[0],
                      extract_concepts=False)
    assert dreamer.state.last_dream is None
    dreamer.start()
    try:
        now[0] += 60
        dreamer.tick()
        dreamer.wait()
        assert dreamer.last_report is None, "no dream a minute after the first start"
        now[0] += 3600
        dreamer.tick()
        assert until(lambda: dreamer.last_report is not None)
        assert dreamer.last_report.reason == "schedule"
    finally:
        dreamer.stop()


@pytest.mark.parametrize("when", ["while the agent runs", "while it was stopped"])
def test_a_clock_moved_back_does_not_put_the_scheduled_dream_off(tmp_path, when):
    """The schedule counted from the last dream's time by the system clock alone: a clock moved back a
    day put the next dream off by that day, until it caught up with the last dream's time. Now the time
    that really passes counts. A last dream a day ahead of the clock is that clock moved back (a 1 s
    interval here; the wait is a hang guard, not a measurement)."""
    state_path = tmp_path / "dream" / "state.json"
    ahead = time.time() + 86_400
    if when == "while it was stopped":
        save_state(state_path, DreamState(last_dream=ahead))
    sem = semantic()
    source = ListSource([DreamEpisode(f"e{i}", ahead + i, f"Note {i}: the heating was fixed.") for i in range(4)])
    dreamer = Dreamer(sem, source, sem.embedder, state_path, interval_s=1.0, extract_concepts=False)
    if when == "while the agent runs":
        dreamer.state.last_dream = ahead
    dreamer.start()
    try:
        assert until(lambda: dreamer.last_report is not None)
        assert dreamer.last_report.reason == "schedule" and dreamer.last_report.episodes == 4
    finally:
        dreamer.stop()


def test_bad_settings_and_skill_arguments_are_refused_clearly(tmp_path):
    sem = semantic()
    source = ListSource()
    with pytest.raises(ValueError, match="every_n"):
        Dreamer(sem, source, sem.embedder, tmp_path / "s.json", every_n=0)
    with pytest.raises(ValueError, match="interval_s"):
        Dreamer(sem, source, sem.embedder, tmp_path / "s.json", interval_s=-1)
    dreamer = Dreamer(sem, source, sem.embedder, tmp_path / "s.json")
    with pytest.raises(SkillError, match="unknown argument 'sideways'; use `dream`, `dream now` or `dream status`"):
        dream_skill(dreamer, "sideways")
    assert dream_skill(dreamer, "status").startswith("DREAM-IDLE")


def test_a_corrupt_state_file_is_set_aside_and_nothing_is_lost(tmp_path):
    trace = EpisodicTrace(tmp_path / "history.metta")
    fill(trace, 2)
    state = tmp_path / "s.json"
    sem = semantic()
    Dreamer(sem, trace, sem.embedder, state, extract_concepts=False).dream()
    before = snapshot(sem)
    state.write_text("{not json")
    dreamer = Dreamer(sem, trace, sem.embedder, state, extract_concepts=False)
    assert dreamer.state.dream_mark == -1 and list(tmp_path.glob("s.json.corrupt-*"))
    dreamer.dream()  # starts over: every write replays as the same confirmation
    assert snapshot(sem) == before
    for damage in ('{"dream_mark": "12"}', '{"patterns": 5}', '{"theme_pending": {}}'):  # JSON, but not a state
        state.write_text(damage)  # every dream (and the session's end) raised TypeError from the mark
        dreamer = Dreamer(sem, trace, sem.embedder, state, extract_concepts=False)
        assert dreamer.state.dream_mark == -1 and not state.exists(), "moved aside"
        dreamer.dream()
        assert snapshot(sem) == before
    # each damaged file is kept: set aside in one second, they shared one name and the last replaced the others
    kept = sorted(p.read_text() for p in tmp_path.glob("s.json.corrupt-*"))
    assert kept == sorted(['{not json', '{"dream_mark": "12"}', '{"patterns": 5}', '{"theme_pending": {}}'])


def test_state_files_set_aside_in_one_second_keep_each_its_own_name(tmp_path, monkeypatch):
    from mettaclaw.memory.dream.state import load_state

    monkeypatch.setattr(time, "time", lambda: 1_800_000_000.5)  # all in one second
    state = tmp_path / "state.json"
    for damage in ("{not json", "[1]", '{"dream_mark": "x"}'):
        state.write_text(damage)
        assert load_state(state).dream_mark == -1
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == {
        "state.json.corrupt-1800000000": "{not json", "state.json.corrupt-1800000000-2": "[1]",
        "state.json.corrupt-1800000000-3": '{"dream_mark": "x"}'}


def test_derived_records_are_mirrored_into_longterm_memory_with_their_citations(tmp_path):
    trace = EpisodicTrace(tmp_path / "history.metta")
    fill(trace, 4)
    sem = semantic()
    longterm = LongTermMemory(HashEmbedder(256), InMemoryVectorStore())
    Dreamer(sem, trace, sem.embedder, tmp_path / "s.json", extract_concepts=False, after_writes=Mirror(longterm, sem).sync).dream()
    derived = [m for m in longterm if m.kind == "derived"]
    records = {r.id: r for r in sem if r.kind in ("fact", "summary")}
    assert derived and len(derived) == len(records)
    for memory in derived:
        rec = records[memory.meta["semantic_id"]]
        assert memory.text == rec.content and memory.meta["cites"] == "|".join(rec.source_episodes)
    coffee = longterm.query("coffee every morning", limit=1)[0]
    assert coffee.kind == "derived" and len(coffee.meta["cites"].split("|")) == 4
    from mettaclaw.memory.mirror import sync

    victim = derived[0].meta["semantic_id"]
    sem.remove(victim)
    assert sync(longterm, sem, [victim]) == {"written": 0, "forgotten": 1}
    assert not longterm.ids_by(tags=[f"sem:{victim}"])
