"""The agent's recall: spreading across layers, rank fusion of the index's rankings, covered hits
dropped, score parts, the relevance floor, and bad input refused."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from mettaclaw.memory.core.ranking import fuse, spread
from mettaclaw.memory.core.settings import RecallSettings
from mettaclaw.memory.core.text import label, labelled_sentences, sentence_starts, sentences, speakers
from mettaclaw.memory.core.text import prose as without_code
from mettaclaw.memory.dream.concepts import extract
from mettaclaw.memory.index.longterm import LongTermMemory
from mettaclaw.memory.index.sentence_vectors import sentence_parts
from mettaclaw.memory.recall import Hit, LayerGraph, RecallPipeline, render
from mettaclaw.memory.recall.candidates import Candidates
from mettaclaw.memory.recall.present import dedup, latest_first
from mettaclaw.memory.semantic import InMemorySemanticStore, SemanticMemory
from mettaclaw.memory.stores.embedders import HashEmbedder
from mettaclaw.memory.stores.vectors import InMemoryVectorStore
from mettaclaw.messages import Message

T0 = 1_800_000_000.0


def semantic() -> SemanticMemory:
    return SemanticMemory(HashEmbedder(256), InMemoryVectorStore(), InMemorySemanticStore(), clock=lambda: T0)


def test_spread_matches_the_spec_arithmetic_on_a_chain():
    links = {("semantic", "a"): [("episodic", "e1", 1.0)], ("episodic", "e1"): [("semantic", "a", 1.0)]}
    found = spread(lambda layer, node: links.get((layer, node), []), {("semantic", "a"): 1.0}, steps=1)
    # one step: a keeps 0.5 and passes 0.5 to e1; everything decays by 0.1
    assert found == {"episodic": [("e1", pytest.approx(0.45))]}
    with_seed = spread(lambda layer, node: links.get((layer, node), []), {("semantic", "a"): 1.0}, steps=1,
                       with_seeds=True)
    assert with_seed["semantic"] == [("a", pytest.approx(0.45))]


def test_spread_crosses_layers_and_groups_results_by_layer():
    sem = semantic()
    coffee = sem.learn("Alice drinks coffee every morning.", source_episodes=["ep-1", "ep-2"]).id
    mug = sem.learn("The blue mug is Alice's favourite.", source_episodes=["ep-2"]).id
    graph = LayerGraph(sem, adjacent=lambda ep: {"ep-1": ["ep-0"]}.get(ep, []))
    grouped = spread(graph, {("semantic", coffee): 1.0})
    assert {n for n, _ in grouped["episodic"]} >= {"ep-1", "ep-2", "ep-0"}  # provenance, then adjacency
    assert mug in {n for n, _ in grouped["semantic"]}  # through the shared episode


def test_fuse_is_weighted_reciprocal_rank():
    scores, ranks = fuse({"a": ["x", "y"], "b": ["y"]}, {"a": 1.0, "b": 0.5}, k=10)
    assert scores["x"] == pytest.approx(1 / 11) and scores["y"] == pytest.approx(1 / 12 + 0.5 / 11)
    assert ranks["y"] == {"a": 2, "b": 1}


def test_recall_fuses_the_index_and_semantic_records_drops_covered_hits_and_explains(open_test_memory):
    memory = open_test_memory(dream=False)
    said = {}
    for text in ("I moved to Paris last spring.", "My new flat in Paris has a balcony.", "I sold my old car."):
        said[text] = memory.record_turn("2026-01-01 10:00:00", [Message(text, "Alice", "chat")], []).episode_ids[0]
    cites = [said["I moved to Paris last spring."], said["My new flat in Paris has a balcony."]]
    fact = memory.semantic.learn("Alice lives in Paris in a flat with a balcony.", source_episodes=cites).id
    memory.sync_mirror()
    hits = memory.query("where does Alice live, Paris flat", limit=5, explain=True)
    by_id = {h.id: h for h in hits}
    assert fact in by_id and by_id[fact].cites == cites and by_id[fact].layer == "semantic"
    for name in ("bm25_rank", "relevance", "spread", "score"):
        assert name in by_id[fact].parts
    seen: set[str] = set()
    for hit in hits:  # a hit whose episodes are all shown by a better hit is not shown again
        assert not (hit.cites and set(hit.cites) <= seen), hit
        seen |= set(hit.cites)
    assert seen >= set(cites)
    assert all(h.parts is None for h in memory.query("Alice Paris", 3))
    assert "from ep-" in render(hits) and "relevance=" in render(hits, explain=True)


def test_recall_refuses_bad_input_and_bad_settings(open_test_memory):
    memory = open_test_memory(dream=False)
    with pytest.raises(ValueError, match="empty query"):
        memory.query("   ")
    with pytest.raises(ValueError, match="at most 20,000"):
        memory.query("peanuts " * 5_000)
    with pytest.raises(ValueError, match="limit"):
        memory.query("x", limit=0)
    with pytest.raises(ValueError, match="layer"):
        memory.query("x", layer="dreams")
    with pytest.raises(ValidationError):
        RecallSettings(sentences=-1.0)
    with pytest.raises(ValidationError):
        RecallSettings(sentence_pool=0)
    with pytest.raises(ValidationError):
        RecallSettings(no_such_knob=1)


def test_empty_and_half_empty_memories_answer_nothing_and_never_raise(open_test_memory):
    memory = open_test_memory(dream=False)
    assert memory.query("anything at all", 5) == []  # nothing stored
    memory.semantic.learn("Alice lives in Paris.")  # a semantic record and an empty episode index
    assert [h.text for h in memory.query("Alice Paris", 5)] == []  # not mirrored yet: still no crash
    memory.sync_mirror()
    assert [h.text for h in memory.query("Alice Paris", 5)] == ["Alice lives in Paris."]


def test_a_concept_points_at_its_episodes_but_never_hides_them(open_test_memory):
    memory = open_test_memory(dream=False)
    eps = [memory.record_turn("2026-01-01 10:00:00", [Message(f"pottery class number {n} was fun.", "Alice")],
                              []).episode_ids[0] for n in range(2)]
    concept = memory.semantic.learn("pottery", name="pottery", kind="concept", source_episodes=eps).id
    memory.sync_mirror()
    hits = memory.query("pottery", limit=5)
    assert {h.id for h in hits} == set(eps)  # a concept is a hub activation flows through, not a result
    assert concept not in {h.id for h in hits}


def test_sentence_ranking_finds_the_one_sentence_a_long_memory_buries_and_embeds_it_once():
    from conftest import CountingEmbedder

    embedder = CountingEmbedder()
    index = LongTermMemory(embedder, InMemoryVectorStore())
    filler = " ".join(f"Errand {n} took ages at the market stall number {n}." for n in range(12))
    buried = index.remember(f"Zed: {filler} You asked how the violin recital went.").id
    for n in range(30):
        index.remember(f"Ann: how the violin lesson went, chapter {n}?")
    question = "How the violin recital went?"
    whole = [m.id for m in index.query(question, limit=31, mode="vector")]
    assert whole.index(buried) > 0  # the whole memory's vector is blurred by its filler
    only_sentences = RecallSettings(bm25=0.0, vector=0.0, sentences=1.0, spread_weight=0.0)
    pipeline = RecallPipeline(index, settings=only_sentences)
    assert pipeline.run(question, limit=3)[0].id == buried  # its best sentence is the question's
    before = embedder.texts
    pipeline.run(question, limit=3)
    assert embedder.texts - before <= 3  # the query again, no sentence re-embedded


def test_the_floor_answers_nothing_for_an_unrelated_question_but_a_named_word_always_passes():
    index = LongTermMemory(HashEmbedder(), InMemoryVectorStore())
    index.remember("The wifi password at the cabin is pinecone-42.")
    index.remember("Emma is allergic to peanuts and shellfish.")
    pipeline = RecallPipeline(index)
    assert pipeline.run("quantum chromodynamics lattice gauge", 5) == []
    assert [h.text for h in pipeline.run("pinecone", 5)][0] == "The wifi password at the cabin is pinecone-42."


def test_a_query_of_only_stop_words_asks_about_nothing_and_matches_nothing(make_agent):
    """`query the of and` listed the turns and facts that say "the", "of" and "and": the hash
    embedder's bag of words counts stop words, so they were above the floor. A query with no content
    word (stop words, a question's frame) is related to nothing; one word it asks about brings hits back."""
    agent, _, channel, _ = make_agent(["send ok"] * 3, sleepInterval=0)
    for text in ("The cat of the neighbour sleeps on the roof and the porch.", "The backup runs at 2am."):
        channel.put(text)
        agent.turn()
    agent.memory.remember("A list of the things to buy and the shops to visit.")
    agent.memory.semantic.learn("The office of the mayor is on the second floor and closes at five.")
    agent.memory.sync_mirror()
    for nothing in ("the of and", "the", "what is the", "tell me about it"):
        assert agent.use_skill("query", nothing) == f"no memories match {nothing!r}"
        assert agent.memory.query(nothing, 10) == []
    assert "neighbour" in agent.use_skill("query", "the cat of the neighbour")


def test_the_recall_skill_holds_its_hits_to_the_floor_query_does(make_agent):
    """`recall` listed the nearest records however far: an unrelated question got every fact. It now
    keeps only what passes the floor `query` holds its hits to (RecallPipeline.relevant)."""
    agent, _, _, _ = make_agent([], sleepInterval=0)
    agent.memory.semantic.learn("The cabin wifi password is pinecone-42.")
    agent.memory.semantic.learn("The office of the mayor is on the second floor and closes at five.", tags=("town",))
    agent.memory.sync_mirror()
    for unrelated in ("quantum chromodynamics lattice", "the of and"):
        assert agent.use_skill("query", unrelated) == f"no memories match {unrelated!r}"
        for mode in ("", "hybrid: "):
            assert agent.use_skill("recall", mode + unrelated).startswith("RECALL: nothing found"), mode + unrelated
    found = agent.use_skill("recall", "cabin wifi password")
    assert found.startswith("1. [fact") and "pinecone-42" in found and "mayor" not in found
    assert "mayor" in agent.use_skill("recall", "#town")  # a listing by filters alone has no floor
    # the answer names the query by its start: a query of thousands of characters came back whole
    long = " ".join(f"zq{n}x" for n in range(2000))
    for skill in ("query", "recall"):
        answer = agent.use_skill(skill, long)
        assert len(answer) < 300 and f"(+{len(long) - 200} characters)" in answer, (skill, len(answer))


def test_what_only_spreading_reaches_faces_the_same_floor(open_test_memory):
    """The turns next to the one that matches are linked to it (adjacency), and so are the turns next
    to them: a question with one match gets that match, not its unrelated neighbours as padding."""
    memory = open_test_memory(dream=False)
    said = ["Emma is allergic to peanuts and shellfish.", "Let me tell you about my weekend, it was long.",
            "Did I mention the printer on floor two broke again?", "Can you remind me what time it is?",
            "I always ask my kids to read more books."]
    ids = [memory.record_turn(f"2026-01-01 10:0{n}:00", [Message(text, "Ann")], []).episode_ids[0]
           for n, text in enumerate(said)]
    assert memory.pipeline.graph("episodic", ids[2])  # the printer turn has neighbours activation reaches
    hits = memory.query("printer", limit=10, explain=True)
    assert [h.id for h in hits] == [ids[2]]
    assert all(h.parts["relevance"] >= memory.pipeline.floor for h in hits)


class _WholeNotParts(HashEmbedder):
    """The question and the row as a whole share a vector; each of the row's sentences is unrelated."""

    ROW = "Went there in May. Loved it."

    def embed(self, texts: list[str]):
        out = super().embed(texts)
        for i, text in enumerate(texts):
            if text in (self.ROW, "which trips did I enjoy"):
                out[i] = 0.0
                out[i, 0] = 1.0
            elif text in ("Went there in May.", "Loved it."):
                out[i] = 0.0
                out[i, 1 + len(text) % 2] = 1.0
        return out


def test_a_row_close_as_a_whole_passes_the_floor_though_none_of_its_sentences_does():
    index = LongTermMemory(_WholeNotParts(), InMemoryVectorStore())
    index.remember(_WholeNotParts.ROW)
    index.remember("The printer on floor two is out of toner.")
    hits = RecallPipeline(index).run("which trips did I enjoy", 5, explain=True)
    assert [h.text for h in hits] == [_WholeNotParts.ROW]
    assert hits[0].parts["relevance"] == pytest.approx(1.0)


def test_recall_and_the_dream_share_one_sentence_rule():
    """A title's or an initial's period ends no sentence, for recall as for the dream's concepts: recall
    split "I saw Dr. Manning" after "Dr." (and embedded "Manning at the clinic." alone) while the concepts
    read one sentence; a closing quote or bracket stays with its sentence."""
    assert sentences("I saw Dr. Manning at the clinic. J.K. Rowling was there too. So was I. We left early.") == [
        "I saw Dr. Manning at the clinic.", "J.K. Rowling was there too.", "So was I.", "We left early."]
    assert sentences('She said "we moved to St. Louis." Then she left.\nBack home now!') == [
        'She said "we moved to St. Louis."', "Then she left.", "Back home now!"]
    text = "Yesterday I saw Dr. Manning. Today Mr. Okafor came."
    assert sentence_starts(text) == [0, text.index("Today")]
    assert {m.name for m in extract(text)} == {"Manning", "Okafor"}, "Today opens a sentence, Manning does not"


def test_a_chat_lines_later_sentences_keep_who_said_them():
    assert labelled_sentences("Melanie: Yep, Caroline. I'm off to go swimming with the kids.") == [
        "Melanie: Yep, Caroline.", "Melanie: I'm off to go swimming with the kids."]
    assert labelled_sentences("Mary Ann Lee: Hi there. We moved house today.")[1] == "Mary Ann Lee: We moved house today."
    # no label, or a sentence that merely contains a colon: left as they are
    assert labelled_sentences("remember this: the key is under the mat. And the code is 42.") == [
        "remember this: the key is under the mat.", "And the code is 42."]


def test_a_dream_records_sentences_keep_each_speaker_it_names():
    """A summary names each speaker once per run on one line; Jo's words were embedded as "Sam: Jo:
    ..." (Sam's), and her sentence after one too short to be a statement ("Jo: Oh!") as Sam's too."""
    known = frozenset({"Sam", "Jo"})
    assert labelled_sentences("Sam: I paint a lot. Jo: Oh! Lovely colours. Sam: Thanks, it took ages.", known) == [
        "Sam: I paint a lot.", "Jo: Lovely colours.", "Sam: Thanks, it took ages."]
    assert labelled_sentences("Alice: I'm off to Rome.\nbob: nice, enjoy the trip!", frozenset({"bob"})) == [
        "Alice: I'm off to Rome.", "bob: nice, enjoy the trip!"]


def _two_painters(memory, alice: str = "Alice", bob: str = "Bob") -> tuple[str, str]:
    """Alice's theme of what she painted, and Bob's record that says "painted" more often and names her,
    each labelled with the name given."""
    mine = memory.semantic.learn(f"{alice}: I did a watercolour of the lake at sunrise. {alice}: I painted my dog Luna.",
                                 kind="summary", source_episodes=["ep-1", "ep-2"]).id
    theirs = memory.semantic.learn(f"{bob}: Wow Alice, you painted that? Alice has painted so much! I painted a fence.",
                                   kind="summary", source_episodes=["ep-3"]).id
    memory.sync_mirror()
    return mine, theirs


@pytest.mark.parametrize("weight", [0.0, RecallSettings().speaker])
def test_what_the_dream_gathered_of_the_person_a_question_names_ranks_first(open_test_memory, weight):
    memory = open_test_memory(dream=False, settings=RecallSettings(speaker=weight))
    alice, bob = _two_painters(memory)
    order = [h.id for h in memory.query("What has Alice painted?", 10) if h.id in (alice, bob)]
    assert order == ([alice, bob] if weight else [bob, alice])  # without it, Bob's words win
    # naming nobody, or everybody the records quote, leaves the order to words and meaning
    for question in ("What has been painted?", "What have Alice and Bob painted?"):
        assert [h.id for h in memory.query(question, 10) if h.id in (alice, bob)][0] == bob


def test_who_a_memory_quotes():
    assert speakers("Melanie: I paint. Caroline: So do I.\nMary Ann Lee: Me too!") == {"Melanie", "Caroline", "Mary Ann Lee"}
    assert speakers("remember this: the key is under the mat.") == frozenset()


@pytest.mark.parametrize("line", [
    "ValueError: invalid literal for int() with base 10: 'abc'", "KeyError: 'x'",
    "TypeError: unsupported operand type(s) for +: 'int' and 'str'", "ZeroDivisionError: division by zero",
    "DeprecationWarning: the module is deprecated", "KeyboardInterrupt: stopped", "Requests.HTTPError: 404",
    "requests.exceptions.HTTPError: 404 Client Error",
])
def test_an_exceptions_name_is_no_speaker_unless_memory_knows_the_sender(line):
    """Before, "ValueError: invalid literal ..." had a label's shape (a capitalised word, ": "): the
    error quoted "ValueError" as a speaker, and a pasted traceback's last line was someone's words."""
    head = line.split(": ", 1)[0]
    assert label(line) is None and label(line, frozenset({"bob"})) is None
    assert speakers(line) == frozenset() and labelled_sentences(line + " More.") == sentences(line + " More.")
    assert label(line, frozenset({head})) == head + ": "  # a sender of that name is one
    assert without_code("sam: Any idea?\n" + line) == "sam: Any idea?"


def test_names_that_end_like_an_exception_or_carry_dots_are_still_speakers():
    for line, who in [("Alice: I paint.", "Alice"), ("Mary Ann: We moved.", "Mary Ann"), ("Error: the site is down", "Error"),
                      ("J.R. Smith: Hello there.", "J.R. Smith"), ("Dr. Terror: Hello there.", "Dr. Terror"),
                      ("WARNING: wet paint", "WARNING")]:
        assert label(line) == who + ": ", line


def test_only_the_best_few_of_the_named_persons_records_are_lifted(open_test_memory):
    memory = open_test_memory(dream=False, settings=RecallSettings(speaker_records=1))
    _two_painters(memory)
    memory.semantic.learn("Alice: I painted the kitchen blue last spring.", kind="summary", source_episodes=["ep-4"])
    memory.sync_mirror()
    hits = memory.query("What has Alice painted?", 10, explain=True)
    lifted = [h for h in hits if "speaker_rank" in h.parts]
    assert len(lifted) == 1 and lifted[0].text.startswith("Alice:")  # each theme costs the model up to 10 sentences


def test_each_line_of_a_turn_where_several_spoke_keeps_its_own_speaker():
    """A turn where several people spoke holds one "Who: " line each; every sentence after the first
    line was labelled with the first speaker ("Alice: Bob: nice, enjoy the trip!"), so Bob's words
    were embedded, and ranked, as Alice's."""
    said = "Alice: My flight leaves Thursday. It is early.\nBob: Nice, enjoy the trip! See you.\nAlice: It moved to Friday."
    assert labelled_sentences(said) == ["Alice: My flight leaves Thursday.", "Alice: It is early.",
                                        "Bob: Nice, enjoy the trip!", "Bob: See you.", "Alice: It moved to Friday."]
    # a word with a colon inside a line is not a speaker
    assert labelled_sentences("Melanie: Yep. Note: the shop closes at 5.")[1] == "Melanie: Note: the shop closes at 5."


def test_a_lower_case_nick_the_memory_knows_is_a_speaker_and_prose_is_not():
    """IRC nicks are mostly lower-case; a channel writes each message as "<nick>: <text>". Before,
    only a capitalised label was a speaker: "bob: I sold my car. It was old." quoted nobody and its
    second sentence lost who said it. Their shape is the shape of prose ("note: buy milk"), so a
    lower-case label is a speaker only when it is a sender's name memory knows."""
    known = frozenset({"bob", "alice_92", "Jean de la Rue"})
    said = "bob: I sold my car. It was old.\nalice_92: Nice, what did you get for it?"
    assert speakers(said, known) == {"bob", "alice_92"}
    assert labelled_sentences(said, known) == ["bob: I sold my car.", "bob: It was old.",
                                               "alice_92: Nice, what did you get for it?"]
    assert speakers("Jean de la Rue: I moved to Lyon.", known) == {"Jean de la Rue"}
    for prose in ("note: buy milk and eggs.", "update: the wifi changed.", "e.g. x: y and z here.",
                  "http://example.com/a: the page.", "10:30: the meeting starts.", "re: the wifi password."):
        assert speakers(prose, known) == frozenset(), prose
        assert labelled_sentences(prose + " And more.", known) == sentences(prose + " And more."), prose
    assert speakers("bob: I sold my car.") == frozenset()  # a name memory does not know is no speaker
    # a capitalised label is read as before, whoever memory knows
    assert speakers("Melanie: I paint. Caroline: So do I.", frozenset()) == {"Melanie", "Caroline"}
    assert labelled_sentences("Melanie: Yep. Note: the shop closes at 5.", known)[1] == "Melanie: Note: the shop closes at 5."


def test_the_index_knows_its_senders_and_splits_their_rows_by_them(open_test_memory):
    """The senders are the rows' `who:` tags (while some row has them); an episode's sentences keep
    its lower-case sender on every sentence."""
    memory = open_test_memory(dream=False)
    turn = memory.record_turn("2026-01-01 10:00:00", [Message("I sold my car. It was old.", "bob", "irc")], [])
    assert "bob" in memory.index.senders()
    row = memory.index.row(turn.episode_ids[0])
    assert sentence_parts(row.document, row.metadata, memory.index.senders()) == ["bob: I sold my car.", "bob: It was old."]
    memory.index.forget(row.id)
    assert "bob" not in memory.index.senders()  # kept until a row comes or goes


def _two_painting_nicks(memory) -> tuple[str, str]:
    """`_two_painters` as an IRC channel writes them: lower-case nicks, each a sender memory has."""
    for n, nick in enumerate(("alice", "bob")):
        memory.record_turn(f"2026-01-0{n + 1} 10:00:00", [Message("hello everyone", nick, "irc")], [])
    return _two_painters(memory, "alice", "bob")


@pytest.mark.parametrize("question", ["What has Alice painted?", "What has alice painted?"])
def test_a_question_naming_a_lower_case_nick_lifts_what_the_dream_gathered_of_them(open_test_memory, question):
    """As `test_what_the_dream_gathered_of_the_person_a_question_names_ranks_first`, for the nick
    "alice": before, her theme quoted nobody, so Bob's words won; the name is matched whatever its case."""
    memory = open_test_memory(dream=False)
    alice, bob = _two_painting_nicks(memory)
    hits = memory.query(question, 10, explain=True)
    assert [h.id for h in hits if h.id in (alice, bob)] == [alice, bob]
    assert "speaker_rank" in next(h for h in hits if h.id == alice).parts
    for naming_nobody in ("What has been painted?", "What have alice and bob painted?"):
        assert [h.id for h in memory.query(naming_nobody, 10) if h.id in (alice, bob)][0] == bob


def test_a_knowledge_prior_is_not_dated_so_it_revises_no_statement() -> None:
    """A prior's time is "knowledge_prior", not a date: compared as text it sorted after every date, so
    a prior in revising words ("changed", "now") was moved above the statement it seemed to correct.
    A dated statement in the same words is."""
    index = LongTermMemory(HashEmbedder(), InMemoryVectorStore())
    said = index.remember("Sam: The wifi password at the cabin is pinecone-42.", time="2026-01-01 10:00:00")
    prior = index.remember("Sam: The wifi password at the cabin changed, it is now cedar-77.",
                           time="knowledge_prior", kind="prior")
    later = index.remember("Sam: The wifi password at the cabin changed, it is now cedar-77!",
                           time="2026-02-01 10:00:00")
    cands = Candidates(index)
    for r in (said, prior, later):  # what recall ranked them by
        cands.row(r.id)
    hits = [Hit("longterm", r.id, index.row(r.id).document, time=index.row(r.id).metadata["time"])
            for r in (said, prior)]
    assert [h.id for h in latest_first(hits, cands, index.senders())] == [said.id, prior.id]
    hits.append(Hit("longterm", later.id, index.row(later.id).document, time="2026-02-01 10:00:00"))
    assert [h.id for h in latest_first(hits, cands, index.senders())] == [later.id, said.id, prior.id]


def test_names_that_embed_alike_take_out_one_direction_of_the_question() -> None:
    """Two senders whose names embed alike ("Sam" and "sam" for an uncased model) are one direction:
    QR gave the second an arbitrary one, and a part of the question was taken out for nothing."""
    import numpy as np

    from mettaclaw.memory.recall.relevance import orthonormal, without

    sam = np.eye(8, dtype=np.float32)[0]
    basis = orthonormal(np.stack([sam, sam, np.eye(8, dtype=np.float32)[3]]))
    assert basis.shape == (2, 8)
    question = np.arange(1, 9, dtype=np.float32)
    expected = question.copy()
    expected[[0, 3]] = 0  # the name's direction and the other sender's, nothing else
    assert np.allclose(without(question[None, :], basis)[0], expected)


def test_a_dream_record_below_the_episodes_it_gathers_shows_only_what_they_did_not_say() -> None:
    """A theme below two of its episodes repeated their sentences, and the model read them twice; one
    all of whose sentences are shown above adds nothing and is left out."""
    known = frozenset({"Mel", "Jo"})
    first = Hit("episodic", "ep-1", "Mel: I painted a lake at sunrise. It was calm.", 3.0, ["ep-1"])
    second = Hit("episodic", "ep-2", "Jo: Lovely colours.", 2.5, ["ep-2"])  # the same words, another stop
    theme = Hit("semantic", "th-1", "Mel: I painted a lake at sunrise. I also paint horses. Jo: lovely colours!",
                2.0, ["ep-1", "ep-3", "ep-2"])
    repeat = Hit("semantic", "th-2", "Mel: It was calm.", 1.0, ["ep-1", "ep-4"])
    shown = dedup([first, second, theme, repeat], 10, known)
    assert [h.id for h in shown] == ["ep-1", "ep-2", "th-1"]
    assert shown[2].text == "Mel: I also paint horses." and shown[2].cites == ["ep-1", "ep-3", "ep-2"]
    assert theme.text.startswith("Mel: I painted")  # the hit recall ranked is left as it was
