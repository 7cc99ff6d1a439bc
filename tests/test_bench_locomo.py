"""The LoCoMo benchmark's statistics: the interval printed beside each R@10 and the paired comparison
with an earlier run, which decide whether a tuning change is a change at all."""

import pytest
from conftest import bench_module

locomo = bench_module("locomo")


def _run(scores: dict[str, list[float]]) -> list[dict]:
    """A --json run's conversations: per source, questions with these R@10 values (category 1)."""
    return [{"source": src, "questions": [{"question": f"q{i}", "category": 1, "agent": {"R@10": v}}
                                          for i, v in enumerate(values)]} for src, values in scores.items()]


def test_the_interval_holds_the_mean_and_narrows_with_more_questions():
    few = [1.0, 0.0] * 10
    many = few * 20
    lo_few, hi_few = locomo._recall.bootstrap_ci(few)
    lo_many, hi_many = locomo._recall.bootstrap_ci(many)
    assert lo_few < 0.5 < hi_few and lo_many < 0.5 < hi_many
    assert hi_many - lo_many < (hi_few - lo_few) / 2
    assert locomo._recall.bootstrap_ci([0.7] * 5) == (0.7, 0.7)
    assert locomo._recall.bootstrap_ci(few) == (lo_few, hi_few)  # seeded: the same run prints the same


def test_paired_comparison_matches_questions_by_conversation_and_text():
    before = locomo.questions_of(_run({"a": [0.0] * 30, "b": [1.0] * 5}))
    after = locomo.questions_of(_run({"a": [1.0] * 30, "c": [0.0] * 5}))  # "c" was not in the earlier run
    n, mean, lo, hi = locomo.paired(after, before)["all"]
    assert (n, mean, lo, hi) == (30, 1.0, 1.0, 1.0)
    n, mean, lo, hi = locomo.paired(before, before)["multi-hop"]
    assert (n, mean, lo, hi) == (35, 0.0, 0.0, 0.0)


def test_evidence_is_compared_rank_by_rank_by_the_turns_each_hit_stands_for():
    def run(shown):
        return [{"source": "locomo:a", "question": f"q{i}", "shown": s} for i, s in enumerate(shown)]

    before = run([[["x", ["D1:1"]], ["y", ["D1:2", "D1:3"]]], [["z", ["D2:1"]]]])
    reworded = run([[["x said otherwise", ["D1:1"]], ["y", ["D1:2", "D1:3"]]], [["z", ["D2:1"]]]])
    assert locomo.changed_evidence(reworded, before) == (2, [])  # the text a hit shows is not its evidence
    swapped = run([[["y", ["D1:2", "D1:3"]], ["x", ["D1:1"]]], [["z", ["D2:1"]]]])
    assert locomo.changed_evidence(swapped, before) == (2, ["locomo:a: q0"])  # the same turns, in another order
    assert locomo.changed_evidence(run([[["x", ["D1:1"]]]]), before) == (1, ["locomo:a: q0"])  # one hit fewer


def test_a_mixed_change_has_an_interval_around_zero():
    before = locomo.questions_of(_run({"a": [0.0, 1.0] * 20}))
    after = locomo.questions_of(_run({"a": [1.0, 0.0] * 20}))  # as many gained as lost
    n, mean, lo, hi = locomo.paired(after, before)["all"]
    assert n == 40 and mean == 0.0 and lo < 0 < hi


def test_conversations_together_keep_their_channels_and_their_own_evidence():
    def conv(source, times, speaker):
        return {"source": source, "questions": [{"question": f"What did {speaker} say?", "category": 4,
                                                 "evidence": ["D1:2"]}],
                "turns": [{"dia_id": f"D1:{i + 1}", "speaker": speaker, "text": f"line {i}", "time": t}
                          for i, t in enumerate(times)]}

    convs = [conv("locomo:a", [10.0, 30.0], "Ann"), conv("locomo:b", [20.0, 40.0], "Bob")]
    one = locomo.together(convs, [0, 1])
    assert [t["dia_id"] for t in one["turns"]] == ["0/D1:1", "1/D1:1", "0/D1:2", "1/D1:2"]  # time order
    assert [t["channel"] for t in one["turns"]] == ["locomo:a", "locomo:b", "locomo:a", "locomo:b"]
    assert [q["evidence"] for q in one["questions"]] == [["0/D1:2"], ["1/D1:2"]]
    assert one["source"] == "together:locomo:a+locomo:b"


def test_the_listing_is_read_as_the_model_reads_it():
    """Each hit's id and the text shown for it, however many lines that text spans; a listing the
    reader cannot take apart is an error, not a hit quietly left out."""
    from mettaclaw.memory.recall import Hit, render

    hits = [Hit("episodic", "ep-1", "Sam: I paint (mostly lakes).", 2.0, ["ep-1"], time="2026-01-01 10:00:00"),
            Hit("semantic", "th-1", "Sam: I paint.\nAnn: 2. [x] nice (id fake)", 1.0, ["ep-1", "ep-2"]),
            Hit("longterm", "mem-1", "a note", 0.5)]
    assert locomo.shown_hits(render(hits)) == [("ep-1", "Sam: I paint (mostly lakes)."),
                                               ("th-1", "Sam: I paint.\nAnn: 2. [x] nice (id fake)"),
                                               ("mem-1", "a note")]
    assert locomo.shown_hits("no memories match 'x'") == []
    with pytest.raises(ValueError, match="does not end with its id"):
        locomo.shown_hits("1. [episodic] something without an id")


def test_pace_groups_consecutive_messages_of_one_channel() -> None:
    turns = [{"dia_id": str(n), "channel": "a" if n < 5 else "b"} for n in range(7)]
    groups = locomo.paced(turns, 3)
    assert [[t["dia_id"] for t in g] for g in groups] == [["0", "1", "2"], ["3", "4"], ["5", "6"]]
    assert [len(g) for g in locomo.paced(turns, 1)] == [1] * 7
