"""Pattern completion: how each kind of action ended is counted as it happens (the statistics
layer), and before the next decision the prompt shows what to expect, with counts and the episodes
behind it, only when the evidence says something."""

from __future__ import annotations

import random
import time

import pytest
from conftest import TickingClock

from mettaclaw.memory.episodes.statistics import (
    KindStatistics,
    action_kind,
    differs,
    part_of_day,
    wilson_lower,
)
from mettaclaw.parser import Command

BACKUP = "#!/bin/sh\n[ \"$(cat mode)\" = ok ]\n"


def at(day: int, hour: int, minute: int = 0) -> float:
    """A local time `day` days after 2026-03-02 (a Monday)."""
    return time.mktime((2026, 3, 2 + day, hour, minute, 0, 0, 0, -1))


def test_a_fortnight_of_night_failures_is_predicted_before_the_next_night_run(make_agent) -> None:
    runs = [(day, hour, "fail" if hour == 2 and day % 5 != 4 else "ok") for day in range(14) for hour in (2, 14)]
    replies = ["shell bash backup.sh" for _ in runs] + ["send checking the backup first"]
    agent, llm, channel, clock = make_agent(replies, sleepInterval=0)
    agent.workspace.root.mkdir(parents=True, exist_ok=True)
    (agent.workspace.root / "backup.sh").write_text(BACKUP)
    night_episodes = []
    for day, hour, mode in runs:
        (agent.workspace.root / "mode").write_text(mode)
        clock.now = at(day, hour)
        channel.put("run the nightly backup" if hour == 2 else "run the backup")
        outcome = agent.turn()
        assert ("[exit status 1]" in agent.last_results) == (mode == "fail"), agent.last_results
        if hour == 2:
            night_episodes.append(outcome.episode_id)
    clock.now = at(14, 2, 30)
    channel.put("please run the backup")
    agent.turn()
    prompt, message = llm.prompts[-1]
    assert "PREDICTIONS" in message, message
    line = next(x for x in message.splitlines() if x.startswith("- shell backup"))
    failed = sum(1 for _, hour, mode in runs if hour == 2 and mode == "fail")
    assert f"at night: expect failure (exit 1): failed {failed} of 14; otherwise succeeded 14 of 14" in line, line
    cited = line.split("episodes ")[1].split(", ")
    assert cited and set(cited) <= set(night_episodes), "the evidence is the night runs themselves"
    # by day the same command is expected to work, and the prediction says so, against the nights
    clock.now = at(14, 15)
    channel.put("please run the backup")
    agent.turn()
    assert "- shell backup in the afternoon: expect success: succeeded 14 of 14; otherwise succeeded " \
        f"{14 - failed} of 14" in llm.prompts[-1][1]
    # the dream links the statistic into the graph: what it counted, the patterns it quantifies and confirms
    agent.memory.dreamer.dream()
    store, node = agent.memory.semantic.records, "stat:agent:shell backup"
    edges = {(e.type, e.other(node)): e for e in store.edges_of(node)}
    assert set(night_episodes) <= {other for kind, other in edges if kind == "COMPUTED_FROM"}
    failing = agent.memory.semantic.resolve("pattern shell backup exit 1")
    assert ("QUANTIFIES", failing.id) in edges and ("STATISTICALLY_CONFIRMS", failing.id) in edges
    assert edges["STATISTICALLY_CONFIRMS", failing.id].weight > 0.5 > edges["QUANTIFIES", failing.id].weight
    assert "failed" in agent.memory.text_of(node) or "succeeded" in agent.memory.text_of(node)


def test_no_prediction_without_evidence_or_for_a_kind_nobody_named(make_agent) -> None:
    agent, llm, channel, clock = make_agent(["shell bash backup.sh"] * 2 + ["send hi"] * 2)
    agent.workspace.root.mkdir(parents=True, exist_ok=True)
    (agent.workspace.root / "backup.sh").write_text(BACKUP)
    (agent.workspace.root / "mode").write_text("fail")
    for n in range(2):
        clock.now = at(n, 2)
        channel.put("run the backup")
        agent.turn()
    clock.now = at(3, 2)
    channel.put("run the backup")
    agent.turn()
    assert "PREDICTIONS" not in llm.prompts[-1][1], "two failures are no evidence yet"
    channel.put("what is the weather")
    agent.turn()
    assert "PREDICTIONS" not in llm.prompts[-1][1]


def test_outcomes_that_do_not_depend_on_the_time_give_no_time_of_day_prediction() -> None:
    rng = random.Random(7)
    coin, steady = KindStatistics("shell flaky"), KindStatistics("shell deploy")
    for n in range(200):
        when = f"2026-03-{1 + n // 8:02d} {(n * 3) % 24:02d}:00:00"
        coin.add(f"ep-{n}", when, rng.choice((0, 1)), 100.0)
        steady.add(f"ep-{n}", when, 0 if n % 5 == 0 else 2, 100.0)
    assert coin.prediction("night") is None, "a coin flip predicts nothing"
    p = steady.prediction("night")
    assert p is not None and p.part is None and p.expected == "failure" and p.statuses == ["2"], \
        "failing at every hour is predicted without a time condition"
    assert "at night" not in p.line() and "failed 160 of 200" in p.line()


def test_the_statistics_count_as_they_happen_and_survive_a_restart(tmp_path, open_test_memory) -> None:
    memory = open_test_memory(folder="m")
    for n in range(5):
        memory.record_turn(f"2026-03-0{n + 1} 02:00:00", [], [Command("shell", ("make test",))], None, [(2, 1500.0 + n)])
    stats = memory.statistics.most_observed(kind="shell make")[0]
    assert (stats.n, stats.ok, stats.statuses) == (5, 0, {"2": 5}) and stats.ms_mean == pytest.approx(1502.0)
    assert "succeeded 0 of 5" in stats.verbal() and "exit 2 x5" in stats.verbal()
    memory.close()
    (tmp_path / "m" / "statistics.json").unlink()  # lost (a crash before the first save): recounted from the trace
    again = open_test_memory(folder="m")
    assert again.statistics.most_observed(kind="shell make")[0].n == 5


def test_damaged_statistics_are_set_aside_and_recounted(tmp_path, open_test_memory) -> None:
    """statistics.json that cannot be read was recounted from the trace and then written over at the next
    save: the damaged file, which a user may want to look at, was gone. Now it is moved aside, as the
    dream's state is, and the statistics are counted again."""
    memory = open_test_memory(folder="m")
    memory.record_turn("2026-03-01 02:00:00", [], [Command("shell", ("make test",))], None, [(2, 1500.0)])
    memory.close()
    damaged = b'{"mark": 0, "kinds": {"agent\tshell make": {"kind": "shell m'
    (tmp_path / "m" / "statistics.json").write_bytes(damaged)
    again = open_test_memory(folder="m")
    assert again.statistics.most_observed(kind="shell make")[0].n == 1
    again.close()  # saves the statistics
    aside = list((tmp_path / "m").glob("statistics.json.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == damaged


def test_action_kinds_and_the_arithmetic() -> None:
    assert action_kind(Command("shell", ("bash ./scripts/backup.sh --full",))) == "shell backup"
    assert action_kind(Command("shell", ("LANG=C sudo rsync -a a b",))) == "shell rsync"
    assert action_kind(Command("shell", ("echo 'unbalanced",))) == "shell echo"
    # a kind is a tag (`action_type:`), which holds at most 100 characters: a made-up program of 5,000 was kept whole
    assert action_kind(Command("shell", ("x" * 5000 + " --flag",))) == "shell " + "x" * 40
    assert action_kind(Command("query", ("x",))) == "query"
    assert part_of_day("2026-03-01 02:10:00") == "night" and part_of_day("2026-03-01 14:00:00") == "afternoon"
    assert wilson_lower(0, 0) == 0.0 and 0.5 < wilson_lower(11, 14) < 0.79
    assert differs(3, 14, 14, 14) and not differs(5, 10, 6, 10)


def test_the_knowledge_builder_degrades_to_fit_its_time_budget(open_test_memory) -> None:
    memory = open_test_memory()
    semantic = memory.semantic
    semantic.learn("Dana keeps the spare keys in the red toolbox", name="dana", kind="concept",
                   source_episodes=["ep-1", "ep-2"])
    semantic.learn("The red toolbox sits in the garage", name="red toolbox", kind="concept")
    semantic.relate("dana", "uses", "red toolbox")
    for n in range(300):
        semantic.learn(f"delivery {n} of crate {n * 7} went to warehouse {n % 13}")
    message = "did dana move the red toolbox?"
    full = semantic.context(message, 2000)
    assert full.level == "full" and "Dana keeps the spare keys" in full.text and "USES red toolbox" in full.text
    semantic.timer = TickingClock()  # each reading a second after the last: the test decides what time passes
    hurried = semantic.context(message, 2000, budget_ms=500)
    assert hurried.level == "names", "past its budget the builder stops at the cheapest level"
    assert "- dana [concept] (2 episodes)" in hurried.text and "red toolbox" in hurried.text
    assert "USES" not in hurried.text
    semantic._full_ms = 1e9  # the full level took longer than the budget last time: not started again
    middle = semantic.context(message, 2000, budget_ms=10_000)
    assert middle.level == "relations" and "USES red toolbox" in middle.text
    assert semantic.context("", 2000).level == "none"
    assert memory.knowledge(message, 2000, budget_ms=500).startswith("KNOWLEDGE:")
    assert memory.last_context.level == "names"


def test_the_end_of_a_session_consolidates_what_the_dream_had_not_reached(open_test_memory) -> None:
    """close(): promote, then consolidate, then persist, within `sessionEndDream` seconds."""
    memory = open_test_memory("dreamEvery=1000", "chromaMode=embedded", folder="m")  # no dream during the session
    for n in range(4):
        memory.record_turn(f"2026-03-0{n + 1} 10:00:00", [], [Command("shell", ("make deploy",))], None, [(0, 900.0)])
    last = memory.trace.path.stat().st_size
    assert not [r for r in memory.semantic if r.name == "pattern shell make deploy success"]
    memory.close()
    again = open_test_memory("chromaMode=embedded", folder="m", dream=False)
    assert [r for r in again.semantic if r.name and r.name.startswith("pattern shell make")], \
        "the session's pattern was promoted at its end"
    assert again.dreamer.state.dream_mark > 0 and again.dreamer.state.in_progress is None
    assert again.dreamer.state.dream_mark < last


def test_an_end_of_session_dream_cut_short_is_resumed_at_the_next_start(open_test_memory) -> None:
    memory = open_test_memory("dreamEvery=1000", "sessionEndDream=0", "chromaMode=embedded", folder="m")
    for n in range(4):
        memory.record_turn(f"2026-03-0{n + 1} 10:00:00", [], [Command("shell", ("make deploy",))], None, [(0, 900.0)])
    memory.close()  # no time to dream: nothing is lost, the episodes wait
    again = open_test_memory("dreamEvery=1000", "chromaMode=embedded", folder="m")
    assert again.dreamer.state.dream_mark == -1
    again.close()
    third = open_test_memory("chromaMode=embedded", folder="m", dream=False)
    assert [r for r in third.semantic if r.name and r.name.startswith("pattern shell make")]


def test_a_pattern_named_by_an_error_text_is_quantified_by_the_error_count() -> None:
    """The dream names failures `exit N` and `error: <first words>`; the statistics count errors as -1."""
    from mettaclaw.memory.dream.quantify import _support

    stat = KindStatistics("remember")
    for k in range(6):
        stat.add(f"ep-{k}", "2026-03-02 14:00:00", -1 if k else 0, 5.0)
    rate, support = _support(stat, "error: not stored the")
    assert rate == pytest.approx(wilson_lower(5, 6)) and support >= rate > 0
    assert _support(stat, "exit 1") == (0.0, 0.0)
