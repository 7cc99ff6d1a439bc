"""A long message (an assistant's reply, a pasted document) is measured by its passages and shown by
the one that answers, never whole; its length is no advantage over a short statement."""

from __future__ import annotations

from mettaclaw.memory.core.settings import RecallSettings
from mettaclaw.memory.core.text import LONG_TEXT, PASSAGE_CHARS, labelled_sentences, passages
from mettaclaw.memory.recall import RecallPipeline
from mettaclaw.messages import Message

FILLER = ["Step {n}: review the project plan and keep the milestones in view.",
          "Remember to commit your changes often and write clear commit messages.",
          "Testing early saves time later, so add unit tests as you go along.",
          "Keep the documentation next to the code so that it stays current."]


def long_reply(middle: str, sentences: int = 60) -> str:
    lines = [FILLER[n % len(FILLER)].format(n=n) for n in range(sentences)]
    lines.insert(sentences // 2, middle)
    return " ".join(lines)


def test_a_short_text_is_measured_by_its_sentences() -> None:
    text = "Sam: I moved to Lisbon. The flat has a view of the river."
    assert passages(text, frozenset({"Sam"})) == labelled_sentences(text, frozenset({"Sam"}))


def test_a_long_text_is_cut_into_labelled_passages_that_keep_every_sentence() -> None:
    text = "assistant: " + long_reply("The database password rotates every 30 days.")
    assert len(text) > LONG_TEXT
    parts = passages(text, frozenset({"assistant"}))
    assert 1 < len(parts) < len(labelled_sentences(text, frozenset({"assistant"}), limit=1000))
    assert all(p.startswith("assistant: ") and len(p) <= PASSAGE_CHARS + len("assistant: ") for p in parts)
    assert sum("rotates every 30 days" in p for p in parts) == 1


def test_a_long_reply_is_shown_by_the_passage_that_answers(open_test_memory) -> None:
    memory = open_test_memory()
    reply = long_reply("The staging server backup runs every Sunday at 4am from the cron job.")
    memory.record_turn("2026-11-28 10:00:00", [Message("how should I plan my project?", "dana", "irc:#dev")], [])
    memory.record_turn("2026-11-28 10:01:00", [Message(reply, "helper", "irc:#dev")], [])
    hits = memory.pipeline.run("when does the staging server backup run", 5)
    assert hits and "every Sunday at 4am" in hits[0].text
    assert len(hits[0].text) <= PASSAGE_CHARS + 60 < len(reply)  # the passage, not the whole reply
    assert hits[0].text.endswith(f"[a passage of {len('helper: ' + reply):,} characters]")


def test_length_is_no_advantage_over_the_short_statement_that_answers(open_test_memory) -> None:
    """The long reply repeats the question's words in many sentences; the short statement answers it.
    (The replies on a channel of their own: along one channel's turns, spreading decides a near tie.)"""
    memory = open_test_memory()
    reply = long_reply("Choosing a database for the budget tracker depends on the database features you need.")
    reply += " " + " ".join(f"A database option number {n} for a tracker could be considered." for n in range(20))
    said = [("helper", reply), ("ann", "the weather is lovely for a walk today"),
            ("dana", "I picked PostgreSQL as the database for my budget tracker"),
            ("ann", "my cat knocked the plant off the shelf again"), ("helper", long_reply("Nice choice overall."))]
    for n, (who, text) in enumerate(said):
        memory.record_turn(f"2026-11-28 10:0{n}:00", [Message(text, who, "irc:#help" if who == "helper" else "irc:#dev")], [])
    hits = memory.pipeline.run("which database did dana pick for the budget tracker", 5)
    assert hits[0].text == "dana: I picked PostgreSQL as the database for my budget tracker"


def test_a_long_paste_is_ranked_by_words_as_its_best_passage_not_as_all_of_its_words(open_test_memory) -> None:
    """Pasted notes hold every word of the question somewhere, each passage of them two or three; the
    short line holds three together. Plain BM25 ranks the notes first (more of the question's words,
    however far apart, among long texts that make their length look usual); by words, recall takes
    them for no better than their best passage."""
    memory = open_test_memory()
    filler = " ".join(f"Step {n}: review the project plan and keep the milestones in view." for n in range(25))
    for n in range(3):
        memory.record_turn(f"2026-11-28 09:0{n}:00", [Message(filler, "helper", "irc:#help")], [])
    notes = [f"Rule {n}: keep the shared kitchen tidy and wash up after yourself." for n in range(18)]
    notes[1] = "Parking: the van bays are for the shop deliveries on weekdays."
    notes[7] = "Lockers: the parcel locker codes change on the first of the month."
    notes[13] = "Bikes: the rack by the gate is cleared every spring."
    paste = "pasting the building notes: " + " ".join(notes)
    assert len(paste) > LONG_TEXT
    memory.record_turn("2026-11-28 10:00:00", [Message(paste, "maya", "irc:#notes")], [])
    for n, line in enumerate(["the bike shop shut early", "the spice rack fell off the wall", "someone left the gate open",
                              "the bike lane is closed", "a shoe rack for the hall", "the gate squeaks"]):
        memory.record_turn(f"2026-11-28 10:0{n + 1}:00", [Message(line, "ann", "irc:#flat")], [])
    memory.record_turn("2026-11-28 10:09:00", [Message("got a parcel locker fitted in the van", "dan", "irc:#flat")], [])
    question = "van deliveries parcel locker bike rack gate"
    plain = memory.index.rankings(question, 5, "bm25")["bm25"]
    assert memory.index.row(plain[0][0]).document.startswith("maya: pasting")  # what the words alone rank first
    by_words = RecallPipeline(memory.index, settings=RecallSettings(stages="candidates,fuse"), mode="bm25")
    assert by_words.run(question, 3)[0].text == "dan: got a parcel locker fitted in the van"
