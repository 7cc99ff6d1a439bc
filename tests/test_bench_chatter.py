"""The facts-among-chatter benchmark: its data file holds what its questions claim (answers, originals,
near misses that exist, each fact asked once in other words, parts that share no names), and its
scoring rules count what they say."""

import re
from datetime import datetime

import pytest
from conftest import bench_module

from mettaclaw.memory.core.text import term_set

chatter = bench_module("chatter")
make = bench_module("make_chatter")
DATA = chatter.load()


@pytest.fixture(params=sorted(DATA))
def part(request):
    return DATA[request.param]


def test_the_file_is_what_the_generator_writes():
    written = {name: make.build(name, spec, seed) for seed, (name, spec) in enumerate(make.PARTS.items())}
    assert written == DATA


def test_every_id_a_question_names_is_a_line_of_its_kind(part):
    lines = {line["id"]: line for line in part["lines"]}
    assert len(lines) == len(part["lines"])
    for q in part["questions"]:
        assert len(q["answer"]) == 1
        for field, kind in (("answer", "fact"), ("original", "original"), ("near_misses", "near_miss"),
                            ("asked", "asked")):
            assert all(lines[i]["kind"] == kind for i in q[field]), (q["id"], field)
        when = {i: datetime.fromisoformat(lines[i]["time"]) for i in q["answer"] + q["original"] + q["asked"]}
        assert all(when[o] < when[q["answer"][0]] for o in q["original"] + q["asked"]), q["id"]


def test_each_fact_is_asked_once_in_other_words(part):
    lines = {line["id"]: line for line in part["lines"]}
    facts = [line["id"] for line in part["lines"] if line["kind"] == "fact"]
    assert sorted(i for q in part["questions"] for i in q["answer"]) == sorted(facts)
    assert len({q["text"] for q in part["questions"]}) == len(part["questions"])
    names = term_set(" ".join(part["names"]))
    for q in part["questions"]:
        answer = chatter.evidence_text(lines[q["answer"][0]])
        assert len((term_set(q["text"]) & term_set(answer)) - names) <= 1, q["id"]


def test_each_part_has_the_shape_the_benchmark_promises(part):
    lines = part["lines"]
    assert 450 <= len(lines) <= 550
    assert 4 <= len({line["speaker"] for line in lines}) <= 6 and len({line["channel"] for line in lines}) <= 2
    times = [datetime.fromisoformat(line["time"]) for line in lines]
    assert times == sorted(times) and (times[-1] - times[0]).days >= 4
    questions = part["questions"]
    assert len(questions) >= 16 and sum(bool(q["original"]) for q in questions) >= 5
    assert sum(bool(q["near_misses"]) for q in questions) > len(questions) / 2
    assert any(q["asked"] for q in questions)
    longs = [line for line in lines if len(line["text"]) >= 600]
    assert len(longs) >= 3 and all(len(line["text"]) <= 1500 for line in lines)
    held = [line for line in longs if line["kind"] == "fact"]
    assert held and all(line["span"] in line["text"] for line in held)
    assert all(line["text"].isascii() for line in lines)
    for kind in ("greeting", "ack", "question", "chatter"):
        assert sum(line["kind"] == kind for line in lines) >= 10, kind


def test_the_parts_share_no_names():
    def words(part):
        return {w.lower() for line in part["lines"] for w in re.findall(r"[A-Za-z0-9]+", line["text"] + " " + line["speaker"])} | \
               {w.lower() for q in part["questions"] for w in re.findall(r"[A-Za-z0-9]+", q["text"])}

    tune, held = DATA["tune"], DATA["held_out"]
    assert not {line["speaker"] for line in tune["lines"]} & {line["speaker"] for line in held["lines"]}
    assert not {n.lower() for n in tune["names"]} & words(held)
    assert not {n.lower() for n in held["names"]} & words(tune)


KINDS = {"a": "fact", "o": "original", "n": "near_miss", "k": "ack", "g": "greeting", "q": "asked", "c": "chatter"}
QUESTION = {"id": "x", "text": "?", "answer": ["a"], "original": ["o"], "near_misses": ["n"], "asked": ["q"]}


def test_a_near_miss_above_the_answer_and_an_answer_below_its_original_are_counted():
    ranked = [("near", ["n"]), ("orig", ["o"]), ("answer", ["a"])]
    got = chatter.judged(ranked, QUESTION, KINDS)
    assert (got["answer_rank"], got["first"], got["R@1"], got["R@3"]) == (3, False, 0.0, 1.0)
    assert got["near_above"] is True and got["revision_above"] is False
    got = chatter.judged([("answer", ["a"]), ("orig", ["o"]), ("near", ["n"])], QUESTION, KINDS)
    assert got["first"] and got["own_first"] and got["near_above"] is False and got["revision_above"] is True
    bundled = chatter.judged([("answer and chatter", ["a", "c"])], QUESTION, KINDS)
    assert bundled["first"] and not bundled["own_first"]  # a turn of several messages shows the answer, not alone
    missing = chatter.judged([("near", ["n"])], QUESTION, KINDS)  # the answer not shown at all
    assert missing["answer_rank"] is None and missing["near_above"] is True and missing["revision_above"] is False
    plain = chatter.judged([("answer", ["a"])], {**QUESTION, "original": [], "near_misses": []}, KINDS)
    assert plain["revision_above"] is None and plain["near_above"] is None  # not counted where nothing to rank


def test_noise_is_a_first_hit_that_shows_nothing_but_acks_greetings_or_questions():
    got = chatter.judged([("Dan: ok", ["k"]), ("answer", ["a"])], QUESTION, KINDS)
    assert got["acks@3"] and not got["questions@3"]
    got = chatter.judged([("x", ["q"]), ("y", []), ("answer", ["a"])], QUESTION, KINDS)
    assert got["questions@3"] and not got["acks@3"]  # a hit that shows no line is no noise either
    got = chatter.judged([("blob", ["k", "a"]), ("z", ["c"]), ("w", ["c"]), ("Dan: ok", ["k"])], QUESTION, KINDS)
    assert not got["acks@3"]  # beside an answer an ack is no hit of its own; past the 3rd it is not counted
    assert got["tokens@3"] == 3


def test_a_long_line_is_shown_only_by_the_sentence_its_fact_is_in():
    long = {"speaker": "Maya", "text": "lots of words. the bins go out on tuesdays now. more words", "span": "the bins go out on tuesdays now."}
    assert chatter.evidence_text(long) == long["span"]
    assert chatter.evidence_text({"speaker": "Dan", "text": "ok"}) == "Dan: ok"


def test_turns_gather_pace_lines_each():
    lines = [{"id": str(n)} for n in range(7)]
    assert [len(b) for b in chatter.batches(lines, 5)] == [5, 2]
    assert [len(b) for b in chatter.batches(lines, 1)] == [1] * 7
    with pytest.raises(ValueError, match="at least one"):
        chatter.batches(lines, 0)
