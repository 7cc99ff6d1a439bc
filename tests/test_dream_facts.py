"""What the dream makes of what people said: facts said again, their corrections, and what is no fact."""

from __future__ import annotations

import pytest

from mettaclaw.llm import Scripted
from mettaclaw.memory.core.text import code_line, prose
from mettaclaw.memory.dream import Dreamer, ExtractiveSummariser, ListSource, LLMSummariser
from mettaclaw.memory.dream.episodes import DreamEpisode
from mettaclaw.memory.semantic import InMemorySemanticStore, SemanticMemory
from mettaclaw.memory.stores.embedders import HashEmbedder
from mettaclaw.memory.stores.vectors import InMemoryVectorStore

T0 = 1_800_000_000.0
HOUR = 3600.0


def said(n: int, who: str, text: str, at: float) -> DreamEpisode:
    """A turn as the trace gives it to the dream: the message labelled with its speaker."""
    return DreamEpisode(f"ep-{n}", at, f"{who}: {text}", meta={"who": who})


def said_twice(n: int, who: str, text: str, at: float) -> list[DreamEpisode]:
    """The same statement in turns `n` and `n + 1`, an hour apart: said twice, it makes a fact."""
    return [said(n, who, text, at), said(n + 1, who, text, at + HOUR)]


def dreamer(tmp_path, source: ListSource) -> tuple[SemanticMemory, Dreamer]:
    sem = SemanticMemory(HashEmbedder(256), InMemoryVectorStore(), InMemorySemanticStore(), clock=lambda: T0)
    return sem, Dreamer(sem, source, sem.embedder, tmp_path / "dream.json", extract_concepts=False, group_by="who",
                        theme_policy=None, clock=lambda: T0)


def facts(sem: SemanticMemory) -> dict[str, tuple[bool, str | None]]:
    return {r.content: (r.current, r.superseded_by) for r in sem if r.kind == "fact"}


def test_a_persons_fact_said_again_changed_in_a_later_dream_supersedes_the_old_one(tmp_path):
    """Before, the speaker's label ("sam: I live in Paris") hid the subject from the triple extractor:
    both facts stayed current, and recall showed Sam living in Paris and in Berlin."""
    source = ListSource(said_twice(1, "sam", "I live in Paris near the canal.", T0))
    sem, dream = dreamer(tmp_path, source)
    dream.dream("first")
    source.extend(said_twice(3, "sam", "I moved to Berlin last month.", T0 + 50 * HOUR))
    report = dream.dream("second")
    found = facts(sem)
    berlin = next(r.id for r in sem if r.content == "sam: I moved to Berlin last month.")
    assert found["sam: I live in Paris near the canal."] == (False, berlin)
    assert found["sam: I moved to Berlin last month."] == (True, None)
    assert report.counts()["superseded"] == 1


@pytest.mark.parametrize("first, moved", [
    ("My flight to Lisbon is at 7am.", "My flight to Lisbon is now at 9am on Friday."),
    ("My flight to Lisbon leaves at 7am.", "My flight to Lisbon got moved to 9am."),
    ("My flight to Lisbon leaves at 7am.", "My flight to Lisbon now leaves at 9am."),
])
def test_a_plan_said_again_at_a_new_time_supersedes_the_old_time_and_other_plans_stay(tmp_path, first, moved):
    """Before, "sam: My flight to Lisbon is at 7am." and "... is now at 9am on Friday." were both current
    facts (a time read as an attribute of many values), and so were "... leaves at 7am." and "... got
    moved to 9am." (a time said with a verb)."""
    source = ListSource([*said_twice(1, "sam", first, T0),
                         *said_twice(3, "sam", "My team meeting with Dana is at 9am.", T0 + 2 * HOUR)])
    sem, dream = dreamer(tmp_path, source)
    dream.dream("first")
    source.extend(said_twice(5, "sam", moved, T0 + 50 * HOUR))
    report = dream.dream("second")
    new = next(r.id for r in sem if r.content == f"sam: {moved}")
    assert facts(sem) == {f"sam: {first}": (False, new), "sam: My team meeting with Dana is at 9am.": (True, None),
                          f"sam: {moved}": (True, None)}
    assert report.counts()["superseded"] == 1
    then = [h.record.content for h in sem.recall("sam flight to Lisbon", as_of=T0 + 10 * HOUR)]
    assert f"sam: {first}" in then and f"sam: {moved}" not in then


def summarise(*turns: tuple[str, str]) -> list[tuple[str, str, tuple[str, ...]]]:
    """What the offline summariser makes of one cluster of turns: (kind, text, cited episodes); the
    speakers' names are no content (the runner's `participant_names`)."""
    cluster = [said(n, who, text, T0 + n * HOUR) for n, (who, text) in enumerate(turns, start=1)]
    names = frozenset(who for who, _ in turns)
    return [(c.kind, c.content, c.episodes) for c in ExtractiveSummariser().summarise(cluster, names)]


def test_a_reading_said_again_with_other_numbers_is_no_fact_and_no_summary():
    """Before, two of these with the same number by chance were a fact ("ana: It's 12 degrees outside
    today and raining a lot.", citing ep-1 and ep-3), and one of them went into a summary."""
    made = summarise(("ana", "It's 12 degrees outside today and raining a lot."),
                     ("ana", "It's 14 degrees outside today and raining a lot."),
                     ("ana", "It's 12 degrees outside today and raining a lot."),
                     ("ana", "I walked 8000 steps today, what a long walk along the river."),
                     ("ana", "I walked 9500 steps today, what a long walk along the river."),
                     ("ana", "The wifi password at the cabin is pinecone-42."),
                     ("ana", "The wifi password at the cabin is pinecone-42."))
    assert made == [("fact", "ana: The wifi password at the cabin is pinecone-42.", ("ep-6", "ep-7"))]


def test_a_summary_glues_no_statements_that_share_only_when_they_were_said():
    """Before, the release went into the fence's summary: all three sentences say "today"."""
    made = summarise(("sam", "I repaired the old garden fence today."),
                     ("sam", "We shipped the billing service release today."),
                     ("sam", "The old garden fence needed new paint today."),
                     ("sam", "On Monday the garden fence gets its second coat."),
                     ("sam", "On Monday the dentist pulls my wisdom tooth."))
    assert made == [("summary", "sam: I repaired the old garden fence today. sam: The old garden fence needed new "
                                "paint today. sam: On Monday the garden fence gets its second coat.",
                     ("ep-1", "ep-3", "ep-4"))]


def test_a_fact_said_again_says_what_most_of_its_turns_said_in_full():
    """Before, the fact took the longer wording and cited both turns: the first never said "bring the budget"."""
    made = summarise(("ana", "The team meeting is on Tuesday at 10am in room 4."),
                     ("ana", "The team meeting is on Tuesday at 10am in room 4, bring the budget."))
    assert made == [("fact", "ana: The team meeting is on Tuesday at 10am in room 4.", ("ep-1", "ep-2"))]
    made = summarise(("ana", "The safe code at the office is 4417, behind the harbour painting."),
                     ("ana", "Remember: the safe code at the office is 4417, behind the harbour painting."),
                     ("ana", "The harbour painting hides the office safe with code 4417."))
    assert made == [("fact", "ana: The safe code at the office is 4417, behind the harbour painting.",
                     ("ep-1", "ep-2", "ep-3"))]


TRACEBACK = '''Traceback (most recent call last):
  File "/home/sam/importer/main.py", line 42, in <module>
    rows = load_rows(path)
  File "/home/sam/importer/loader.py", line 17, in load_rows
    return [parse(line) for line in handle]
ValueError: invalid literal for int() with base 10: 'abc'
Any idea? I moved to Berlin last month by the way.'''
PROGRAM = '''```python
def load_rows(path):
    with open(path) as handle:
        return [parse(line) for line in handle]
```'''
LOG = '''2026-03-02 08:00:01,123 INFO importer started with 4 workers
2026-03-02 08:00:02,001 ERROR importer could not reach the database: timeout
[WARN] importer retrying the database connection in 5 seconds'''


def test_a_pasted_traceback_program_or_log_said_again_makes_no_fact_and_no_person(tmp_path):
    """Before, each line of a traceback pasted twice was a fact ("sam: File "/home/sam/importer/main.py",
    line 42, in <module>"), and "Traceback" and "File" were people. The paste stays an episode; what
    was said beside it is still distilled."""
    turns = [TRACEBACK, TRACEBACK, PROGRAM, PROGRAM, LOG, LOG]
    source = ListSource([said(n, "sam", text, T0 + n * HOUR) for n, text in enumerate(turns, start=1)])
    sem, dream = dreamer(tmp_path, source)
    dream.extract_concepts = True
    dream.extract_pending()
    dream.dream("pastes")
    assert {r.content for r in sem if r.kind in ("fact", "summary")} == {"sam: I moved to Berlin last month by the way."}
    assert {(r.name, r.category) for r in sem if r.kind == "concept"} == {("Berlin", "place")}


def test_the_model_is_shown_no_paste_and_a_fact_citing_only_a_paste_is_dropped():
    llm = Scripted(["- The importer fails on line 42 [1]\n- Sam moved to Berlin [2]"])
    cluster = [said(1, "sam", TRACEBACK.rsplit("\n", 1)[0], T0), said(2, "sam", "I moved to Berlin last month.", T0 + HOUR)]
    facts = LLMSummariser(llm).summarise(cluster)
    assert [(f.content, f.episodes) for f in facts] == [("Sam moved to Berlin", ("ep-2",))]
    assert "Traceback" not in llm.prompts[0][1] and "[2] sam: I moved to Berlin last month." in llm.prompts[0][1]


@pytest.mark.parametrize("line", [
    "let me know when you're free", "return the book tomorrow pls", "raise the issue with Tom (again)",
    "I (Bob) like [this] thing a lot", "Here are the options (three of them):", "$ 20 is fine for lunch",
    "class starts at 9: bring books", "Error: the site is down again", "I scored 3/5 = 60% on the test",
    "Check https://example.com/a/b_c?x=1&y=2 for details", "my email is john_doe@example.com",
    "we met at 10:30 - 11:00 (room 3)", "WARNING: wet paint", "try: the blue one", "1) buy milk",
    "Melanie: Yeah, I painted that lake sunrise last year! It's special to me.",
])
def test_chat_is_no_code(line):
    """The code test reads shapes chat does not take (it flags no turn of the LoCoMo conversations)."""
    assert not code_line(line) and prose(line) == line


def test_a_model_fact_longer_than_a_fact_holds_is_dropped_and_the_dream_goes_on(tmp_path):
    """The semantic store refuses a fact over 4,000 characters, and that ValueError failed the whole
    dream: the batch was never marked dreamt, so a model that wrote such a line failed every dream
    after it, and the good facts of its batch were never kept."""
    source = ListSource([said(1, "sam", "I moved to Berlin last month.", T0), said(2, "sam", "I like tea.", T0 + HOUR)])
    sem, dream = dreamer(tmp_path, source)
    dream.summariser = LLMSummariser(Scripted(["- " + "long " * 1000 + "[1]\n- Sam moved to Berlin [1]"]))
    report = dream.dream("model")
    assert report.error is None and report.episodes == 2
    assert [r.content for r in sem if r.kind == "fact"] == ["Sam moved to Berlin"]


@pytest.mark.parametrize(("line", "read"), [
    ("- Sam moved to Berlin [1, 2]", ("Sam moved to Berlin", "1, 2")), ("* fact [3] .", ("fact", "3")),
    ("a [1] b [2]", ("a [1] b", "2")), ("  - Tea  [ 1 ,2 ]  ", ("Tea", " 1 ,2 ")), ("- [1]", None),
    ("no citation", None), ("x [a]", None), ("a [1]" + " " * 16_000 + "b", None),
    ("a" + " " * 16_000 + "b", None), ("a [1]" + " " * 16_000 + ".", ("a", "1")),
])
def test_a_model_line_is_read_in_one_pass(line, read):
    """Read by one pattern, a line with a long run of spaces backtracked quadratically: 16,000 of them
    took 2.8 s inside `re`, which holds the interpreter's lock, so the agent's turn waited on the dream."""
    from mettaclaw.memory.dream.summarise import fact_line

    assert fact_line(line) == read
