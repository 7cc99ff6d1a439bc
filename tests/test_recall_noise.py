"""Nothing that says nothing is a hit: acknowledgements and greetings never come back for a content
question, and someone's earlier asking of the same question is not an answer to it."""

from __future__ import annotations

import pytest

from mettaclaw.memory.core.text import asks_again, says_nothing, term_set
from mettaclaw.messages import Message


@pytest.mark.parametrize("line", ["ok", "Sam: ok", "lol thanks!", "morning!", "good night all", "sam: see ya later",
                                  "yes", "haha nice"])
def test_acknowledgements_and_greetings_say_nothing(line) -> None:
    assert says_nothing(line, frozenset({"sam"}))


@pytest.mark.parametrize("line", ["Sam: the repair is on Friday morning", "Tuesday", "Sam: moved to Lisbon",
                                  "ok so the plumber comes at 9"])
def test_a_line_with_something_in_it_says_something(line) -> None:
    assert not says_nothing(line, frozenset({"sam"}))


def test_an_earlier_asking_is_only_the_same_question_when_it_adds_nothing() -> None:
    wanted = term_set("what is the cabin wifi password")
    assert asks_again("Sam: what is the wifi password?", wanted, frozenset({"sam"}))
    assert not asks_again("Sam: did you know the wifi password is pinecone?", wanted, frozenset({"sam"}))
    assert not asks_again("Sam: the wifi password is pinecone", wanted, frozenset({"sam"}))


def test_no_ack_greeting_or_earlier_question_comes_back_for_a_content_question(open_test_memory) -> None:
    memory = open_test_memory()
    lines = [("ann", "why did you change gyms?"), ("sam", "I changed gyms because the old one closed the pool"),
             ("ann", "ok"), ("ann", "morning!"), ("sam", "when will the boiler repair happen?"),
             ("ann", "the boiler repair happens on Friday"), ("sam", "ok thanks")]
    for n, (who, text) in enumerate(lines):
        memory.record_turn(f"2026-11-28 10:{n:02d}:00", [Message(text, who, "irc:#home")], [])
    for question in ("why did Sam change gyms", "when will the boiler repair happen"):
        shown = [h.text for h in memory.pipeline.run(question, 10)]
        assert shown, question
        assert not any(says_nothing(t) or t.endswith("?") for t in shown), (question, shown)


def test_a_statement_is_shown_above_the_small_dream_record_that_glues_it_to_a_look_alike() -> None:
    from mettaclaw.memory.recall.present import Hit, statements_first

    glued = Hit("semantic", "theme-1", "Theo: the guy next door got a husky. we came home with a beagle pup.",
                cites=["ep-1", "ep-2"])
    gathered = Hit("semantic", "theme-2", "Sam: I paint. I painted a lake. I painted a sunrise. I sold one.",
                   cites=["ep-5", "ep-6", "ep-7", "ep-8"])
    ordered = [glued, Hit("episodic", "ep-9", "Ann: where did you get the pup?", cites=["ep-9"]),
               Hit("episodic", "ep-2", "Theo: we came home with a beagle pup.", cites=["ep-2"]), gathered,
               Hit("episodic", "ep-6", "Sam: I painted a lake.", cites=["ep-6"])]
    shown = [h.id for h in statements_first(ordered, frozenset({"Theo", "Sam", "Ann"}))]
    assert shown == ["ep-2", "theme-1", "theme-2", "ep-6", "ep-9"]  # the question last; a big theme keeps its place
