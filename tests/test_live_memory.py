"""The agent remembers what it is told: every message is an episode the moment its turn ends, found by
`query` as that statement (not a blob), across dreams, crashes and thousands of turns; no record ever
holds text from a turn later than the one it was stored at."""

from __future__ import annotations

import itertools
import re

import pytest

from mettaclaw.memory.core.text import sentences, term_set
from mettaclaw.memory.episodes.trace import EpisodicTrace
from mettaclaw.messages import Message
from mettaclaw.parser import Command

FACTS = [
    ("The wifi password at the cabin is pinecone-42.", "what is the wifi password at the cabin"),
    ("Emma is allergic to peanuts and shellfish.", "what is Emma allergic to"),
    ("My passport expires on 14 March 2027.", "when does my passport expire"),
    ("The spare house key is hidden under the blue flowerpot.", "where is the spare key hidden"),
    ("The dental appointment with Dr. Okafor is on Thursday at 9am.", "when is the dental appointment"),
    ("Our landlord's phone number is 555-0199.", "what is the landlord's phone number"),
    ("Leo's football practice moved to Wednesdays.", "when is Leo's football practice"),
    ("The car insurance renewal costs 480 euros this year.", "how much does the car insurance renewal cost"),
    ("Grandma's birthday party is at the lake house on June 8.", "where is grandma's birthday party"),
    ("I parked the van on level 3 of the Elm Street garage.", "where did I park the van"),
    ("The server backup runs every night at 2am.", "when does the server backup run"),
    ("Maya prefers oat milk in her coffee.", "what milk does Maya like in her coffee"),
]


def small_talk(n: int) -> list[str]:
    """Chat that says nothing lasting, some of it repeated with other numbers."""
    lines = ["Good morning!", "How are you doing today?", "I'm fine, thanks. You?", "Haha, that's funny.",
             "Yeah, totally.", "Ok, sounds good.", "Coffee time!", "See you later.", "Nice one!",
             "What a week it has been.", "Thanks, have a good one!", "Sure thing."]
    numbered = ["It's {} degrees outside today, so warm for this time of year.",
                "The bus was {} minutes late again this morning, as usual.",
                "I walked {} steps today according to my watch, what a day."]
    out = []
    for i in itertools.count():
        if len(out) >= n:
            return out
        out.append(numbered[i % 3].format(10 + i % 17) if i % 4 == 0 else lines[i % len(lines)])
    return out


def conversation() -> list[str]:
    """The twelve facts spread through 150 lines of small talk."""
    chat = small_talk(150)
    for n, (fact, _) in enumerate(FACTS):
        chat.insert(5 + n * 13, fact)
    return chat


def tell(make_agent, lines: list[str], **settings):
    """Send each line as a message to the agent (whose model only answers `send ok`), one turn each."""
    agent, llm, channel, clock = make_agent(["send ok"] * (len(lines) + 5), (), **settings)
    for line in lines:
        clock.advance(60)
        channel.put(line, who="Sam")
        assert agent.turn().episode_ids
        agent.memory.dreamer.wait()  # the dreams run when the default trigger (every 50 episodes) fires
    return agent


def first_hit(agent, question: str) -> str:
    shown = agent.use_skill("query", question)
    match = re.match(r"1\. \[\w+\] (?:\([^)]*\) )?(.*) \(id [^)]*\)$", shown.splitlines()[0])
    assert match, shown
    return match.group(1)


def check_dream_records(memory) -> None:
    """No fact made of small talk said with other numbers; no summary glued from unrelated statements."""
    for rec in memory.semantic:
        if rec.kind == "fact" and "dream" in rec.tags:
            said = [memory.trace.get(e).message for e in rec.source_episodes]
            body = rec.content.split(": ", 1)[-1]
            assert all(body in s for s in said), (rec.content, said)  # said, in these words, every time
        if rec.kind == "summary" and "theme" not in rec.tags:
            parts = [term_set(s.split(": ", 1)[-1]) for s in sentences(rec.content)]
            assert all(p & parts[0] for p in parts[1:]), rec.content  # one topic


def test_each_fact_told_among_small_talk_is_the_first_hit_of_its_question(make_agent) -> None:
    agent = tell(make_agent, conversation())
    assert agent.memory.dreamer.state.dreams >= 3  # 162 episodes, a dream every 50
    for fact, question in FACTS:
        assert first_hit(agent, question) == f"Sam: {fact}", question
    check_dream_records(agent.memory)
    assert agent.use_skill("query", "quantum chromodynamics lattice gauge theory").startswith("no memories match")


@pytest.mark.slow
def test_each_fact_told_among_small_talk_is_the_first_hit_on_the_real_stack(make_agent) -> None:
    agent = tell(make_agent, conversation(), embeddingprovider="local", chromaMode="embedded")
    for fact, question in FACTS:
        assert first_hit(agent, question) == f"Sam: {fact}", question
    check_dream_records(agent.memory)
    assert agent.use_skill("query", "quantum chromodynamics lattice gauge theory").startswith("no memories match")


def hits_of(agent, question: str) -> list[str]:
    """The texts `query` shows, best first."""
    shown = agent.use_skill("query", question).splitlines()
    return [re.sub(r"^\d+\. \[\w+\] (?:\([^)]*\) )?| \(id [^)]*\)$", "", line) for line in shown]


@pytest.mark.parametrize("stack", [{}, pytest.param({"embeddingprovider": "local", "chromaMode": "embedded"},
                                                    marks=pytest.mark.slow, id="real")])
def test_a_correction_is_shown_above_what_it_corrects(make_agent, stack) -> None:
    """The old statement repeats the question's words, so it ranks first on its own; the later one
    that says the value changed is what the person needs first. A later statement on the same subject
    that revises nothing keeps its rank."""
    chat = small_talk(60)
    chat.insert(5, "The wifi password at the cabin is pinecone-42.")
    chat.insert(40, "Correction: the cabin wifi password changed, it is now cedar-77.")
    chat.insert(10, "The dentist appointment is on Tuesday at 3pm.")
    chat.insert(45, "The dentist appointment on Tuesday went well, no cavities.")
    agent = tell(make_agent, chat, **stack)
    wifi = hits_of(agent, "what is the wifi password at the cabin")
    assert wifi[:2] == ["Sam: Correction: the cabin wifi password changed, it is now cedar-77.",
                        "Sam: The wifi password at the cabin is pinecone-42."], wifi
    dentist = hits_of(agent, "when is the dentist appointment")
    # the statement itself, or first in the dream's theme of the two (in time order, citing both)
    assert dentist[0].startswith("Sam: The dentist appointment is on Tuesday at 3pm."), dentist


# A statement and the later one that replaces it, in other words than "correction" or "changed".
UPDATES = [
    ("My address is 12 Elm Street.", "My new address is 5 Oak Road.", "what is my address"),
    ("The team meeting is on Mondays at 10.", "From now on the team meeting will be on Tuesdays at 11.",
     "when is the team meeting"),
    ("My dentist is Dr. Patel.", "I switched dentists, I now see Dr. Romero.", "who is my dentist"),
    ("I drive a blue Toyota Corolla.", "I sold the Corolla and bought a red Mazda 3.", "what car do I drive"),
    ("My gym membership costs 30 dollars a month.", "The gym raised the price to 45 dollars a month.",
     "how much is my gym membership"),
    ("Our wifi password is sunflower77.", "I reset the router, the wifi password is now maple12.",
     "what is the wifi password"),
]


@pytest.mark.parametrize("stack", [{}, pytest.param({"embeddingprovider": "local", "chromaMode": "embedded"},
                                                    marks=pytest.mark.slow, id="real")])
def test_what_replaced_a_statement_comes_before_it(make_agent, stack) -> None:
    """Each later statement is shown first (on its own, or first in a record that holds both), though
    the earlier one repeats the question's words: a person asking where they live now needs the new
    address, not the old one with the new one somewhere below. The revising word may be "new" before
    the thing replaced, "sold", "raised", "reset", ...; a long turn's "don't quit" revises nothing."""
    chat = small_talk(120)
    for n, (old, _, _) in enumerate(UPDATES):
        chat.insert(3 + 5 * n, old)
    for n, (_, new, _) in enumerate(UPDATES):
        chat.insert(70 + 5 * n, new)
    agent = tell(make_agent, chat, **stack)
    for old, new, question in UPDATES:
        if not stack and question in ("what car do I drive", "how much is my gym membership"):
            continue  # the hash embedder, a bag of hashed words, does not find "I sold the Corolla" by meaning
        hits = hits_of(agent, question)
        assert new in hits[0] and hits[0].index(new) >= hits[0].find(old), (question, hits)


# Facts asked in other words than they were told: found by meaning, not by shared words.
PARAPHRASED = [
    ("My sister Ana just moved to Porto for a nursing job.", "which city does Ana live in now"),
    ("The garage door code is 4417.", "how do I open the garage"),
    ("I'm vegetarian since last spring, no meat for me.", "does Sam eat meat"),
    ("Our cat Miso needs her thyroid pills twice a day.", "what medication does the pet take"),
    ("The quarterly report is due to Helen on the 30th.", "when is the report deadline"),
    ("I lent my ladder to Mr. Patel next door.", "who has my ladder"),
    ("The boiler makes a knocking noise when the heating starts.", "what is wrong with the boiler"),
    ("Tom's flight lands at 18:40 at Terminal 2.", "when does Tom arrive"),
    ("I switched my phone plan to Vodafone, 20 euros a month.", "which mobile carrier am I with"),
    ("The kids' school starts at 8:15 from next week.", "what time do the children need to be at school"),
    ("Rita is allergic to penicillin.", "which antibiotic should Rita avoid"),
    ("We planted tomatoes and basil in the raised bed.", "what is growing in the garden"),
]


@pytest.mark.slow
def test_an_agent_that_says_ok_every_turn_hides_nothing_from_a_search_by_meaning(open_test_memory) -> None:
    """A model that answers "send ok" at every turn writes an "agent: ok" row a turn: one vector 162
    times. In Chroma's HNSW graph each copy's neighbours are the other copies, and a search that
    stepped among them returned 200 rows of "agent: ok" (cosine 0.12), not the phone plan (0.41):
    "which mobile carrier am I with" got "no memories match"."""
    memory = open_test_memory("embeddingprovider=local", "chromaMode=embedded", dream=False)
    chat = small_talk(150)
    for n, (fact, _) in enumerate(PARAPHRASED):
        chat.insert(5 + n * 13, fact)
    for i, line in enumerate(chat):
        memory.record_turn(f"2026-01-01 {10 + i // 60:02d}:{i % 60:02d}:00", [Message(line, "Sam")],
                           [Command("send", ("ok",))])
    assert sum(memory.index.row(i).document == "agent: ok" for i in memory.index.ids_by(kind="episode")) == 162
    for fact, question in PARAPHRASED:
        assert f"Sam: {fact}" in [h.text for h in memory.query(question, 3)], question


def test_no_record_holds_text_from_a_turn_later_than_the_one_it_was_stored_at(make_agent) -> None:
    """Every row the index writes and every record semantic memory writes is checked at the moment it
    is written: each of its sentences was said in a turn recorded by then."""
    lines = [f"{who}: {text}" for who, text in zip(itertools.cycle(["Ann", "Bob"]), conversation(), strict=False)]
    agent, llm, channel, clock = make_agent(["send ok"] * (len(lines) + 5), (), dreamEvery=20)
    memory = agent.memory
    written: list[tuple[str, str, int]] = []  # (what, its text and index-only context, trace size then)
    memory.index.on_capture(lambda i, m: written.append(
        (i, m.text + "\n" + str(m.meta.get("context", "")), memory.trace.path.stat().st_size)))
    memory.semantic.on_capture(lambda i, r: written.append((i, r.content, memory.trace.path.stat().st_size)))
    for line in lines:
        who, text = line.split(": ", 1)
        clock.advance(60)
        channel.put(text, who=who)
        agent.turn()
        memory.dreamer.wait()
    said = [(e.offset, e.message) for e in memory.trace]
    assert len(written) > len(lines)  # episodes, their agent rows, dream records and their mirrors
    for record_id, text, trace_size in written:
        before = "\n".join(message for offset, message in said if offset < trace_size)
        for sentence in sentences(text):
            if sentence.startswith(("agent", "doing ", "pattern ")):
                continue  # what the agent did, and patterns named by the dream: not text of a turn
            body = sentence.split(": ", 1)[-1].rstrip(".")
            assert body in before, (record_id, sentence)


def test_an_episode_the_index_lost_in_a_crash_is_indexed_again_at_open(open_test_memory) -> None:
    memory = open_test_memory(dream=False)
    memory.record_turn("2026-01-01 10:00:00", [Message("The boiler was serviced on Monday.", "Ada")], [])
    memory.close()
    # a crash after the trace was synced but before the index write: the record is in the trace only
    EpisodicTrace(memory.trace.path).append("2026-01-01 10:05:00", "Ada: The gas meter reads 48213.", [],
                                            who=("Ada",), channel="terminal")
    again = open_test_memory(dream=False)
    assert [h.text for h in again.query("gas meter reading", 1)] == ["Ada: The gas meter reads 48213."]
    assert [h.text for h in again.query("boiler serviced", 1)] == ["Ada: The boiler was serviced on Monday."]


def test_a_fact_from_turn_5_is_found_at_turn_10000(open_test_memory) -> None:
    memory = open_test_memory(dream=False)
    chat = small_talk(10_000)
    for n in range(10_000):
        text = "The combination of the garden shed lock is 7-3-9-1." if n == 5 else chat[n - (n > 5)]
        memory.record_turn(f"2026-01-{1 + n // 1440:02d} {n // 60 % 24:02d}:{n % 60:02d}:00",
                           [Message(text, "Sam")], [])
    assert len(memory.index.ids_by(kind="episode")) == 10_000
    hits = memory.query("what is the combination of the garden shed lock", 3)
    assert hits[0].text == "Sam: The combination of the garden shed lock is 7-3-9-1."


def test_a_deleted_semantic_store_is_said_at_the_start_that_finds_it(open_test_memory) -> None:
    """The semantic store deleted (or moved aside) started empty without a word, and the open removed
    the index's copies of its facts, the last of them. Now the start that finds it says so, once."""
    memory = open_test_memory("chromaMode=embedded")
    memory.semantic.learn("The boiler is serviced every October.")
    memory.sync_mirror()
    folder = memory.semantic.records.path.parent
    memory.close()
    for part in folder.glob("records.sqlite3*"):
        part.unlink()
    again = open_test_memory("chromaMode=embedded")
    said = [n for n in again.index.notices if n.startswith("the semantic store is empty")]
    assert len(said) == 1 and "copies of 1 of its records" in said[0]
    assert not again.query("boiler serviced October", 5)
    again.close()
    assert not [n for n in open_test_memory("chromaMode=embedded").index.notices if "semantic store" in n]


def test_a_vector_store_emptied_by_forgetting_is_no_lost_store(open_test_memory) -> None:
    """Every row forgotten (the knowledge priors' folder emptied, each memory forgotten) leaves the
    store empty rightly, but each start after said it "was deleted or moved aside" and that memories
    stored with remember "are gone": the vector copies' listing still named the forgotten rows."""
    memory = open_test_memory("chromaMode=embedded")
    kept = memory.remember("The spare key is under the blue flower pot.")
    memory.forget(kept.id)
    memory.close()
    again = open_test_memory("chromaMode=embedded")
    assert not [n for n in again.index.notices if "vector store" in n], again.index.notices


@pytest.mark.parametrize("sam, ann", [("Sam", "Ann"), ("sam_k", "ann")])
def test_a_statement_the_agent_remembered_in_its_speakers_words_is_one_hit(make_agent, sam, ann) -> None:
    """The model answering "Sam: I started learning the cello in January." with `remember` of the
    same words kept a note equal to the episode but for its "Sam: " label, and `query` showed the
    statement twice (the note, then the episode), taking a place from another memory. Now it is one
    hit citing both; two people who said the same words are still two hits. The same for lower-case
    IRC nicks (labels read with the senders memory has), which were still shown twice."""
    cello = "I started learning the cello in January."
    agent, llm, channel, clock = make_agent([f"remember {cello}", "send ok", "send ok"])
    channel.put(cello, who=sam)
    agent.turn()
    channel.put(cello, who=ann)
    agent.turn()
    hits = hits_of(agent, "learning the cello since January")
    assert len(hits) == 2 and f"{ann}: {cello}" in hits, hits  # the note and Sam's episode are one hit
    assert all(h.removeprefix(f"{sam}: ").removeprefix(f"{ann}: ") == cello for h in hits), hits


OWN = {"bob": ("my wifi password is tangerine-77", "I live in Madrid"),
       "alice_92": ("my wifi password is walrus-19", "I live in Porto"),
       "Carol": ("My wifi password is lantern-05", "I live in Lyon")}


@pytest.mark.parametrize("stack", [{}, pytest.param({"embeddingprovider": "local", "chromaMode": "embedded"},
                                                    marks=pytest.mark.slow, id="real")])
def test_a_question_about_the_asker_finds_their_own_statement_first(make_agent, stack) -> None:
    """Three people tell one memory the same kind of thing; "what is my password" asked by alice_92
    means hers. Without the asker the closest words won (bob's password for alice_92 and for Carol),
    while a question naming someone else still finds that person's statement. Each asked once before:
    that question, in the same words, is theirs too, but it answers nothing."""
    people = list(OWN)
    lines = [(people[i % 3], line) for i, line in enumerate(small_talk(40))]
    for n, (who, (password, home)) in enumerate(OWN.items()):
        lines.insert(3 + 7 * n, (who, password))
        lines.insert(20 + 5 * n, (who, home))
    agent, _, channel, clock = make_agent(["send ok"] * (len(lines) + 10), (), **stack)
    for who, line in [*lines, ("bob", "hello again")]:
        clock.advance(60)
        channel.put(Message(line, who, channel.name))
        agent.turn()
    agent.memory.dreamer.wait()
    assert hits_of(agent, "what is alice_92's wifi password")[0] == "alice_92: my wifi password is walrus-19"  # names her
    for who in OWN:
        clock.advance(60)
        channel.put(Message("what is my password?", who, channel.name))
        agent.turn()
    for who, (password, home) in OWN.items():
        clock.advance(60)
        channel.put(Message("hi", who, channel.name))  # the turn being answered is theirs
        agent.turn()
        assert hits_of(agent, "what is my password")[0] == f"{who}: {password}", who
        assert hits_of(agent, "where do I live")[0] == f"{who}: {home}", who


TWO_PEOPLE = [("Sam", "I moved to 14 Harbour Road last spring."), ("Ann", "My sister lives in Oslo."),
              ("Sam", "My dentist appointment is on Tuesday at 3pm."), ("Ann", "I'm allergic to cats.")]


@pytest.mark.parametrize("stack", [{}, pytest.param({"embeddingprovider": "local", "chromaMode": "embedded"},
                                                    marks=pytest.mark.slow, id="real")])
def test_a_question_naming_someone_is_not_answered_by_their_small_talk(make_agent, stack) -> None:
    """Each chat line is kept with its "Sam: " label, so a question naming Sam was close to every line
    of his, the shorter the closer: "what is Sam's address" showed "Sam: Haha, that's funny." first
    (cosine 0.57, the address 0.63), and "what is Sam's favourite band", never said, listed five of his
    small-talk lines instead of "no memories match". Relevance to such a question is now measured with
    the name's own part of both vectors taken out."""
    lines = [(("Sam", "Ann")[i % 2], line) for i, line in enumerate(small_talk(60))]
    for n, fact in enumerate(TWO_PEOPLE):
        lines.insert(5 + 13 * n, fact)
    agent, _, channel, clock = make_agent(["send ok"] * (len(lines) + 5), (), **stack)
    for who, line in lines:
        clock.advance(60)
        channel.put(line, who=who)
        agent.turn()
    if stack:  # the hash embedder, a bag of words, cannot tell "address" is a road
        assert hits_of(agent, "what is Sam's address")[0] == "Sam: I moved to 14 Harbour Road last spring."
    assert hits_of(agent, "when is Sam's dentist appointment")[0] == "Sam: My dentist appointment is on Tuesday at 3pm."
    assert hits_of(agent, "what is Ann allergic to")[0] == "Ann: I'm allergic to cats."
    assert agent.use_skill("query", "what is Sam's favourite band").startswith("no memories match")


IN_OTHER_WORDS = [  # (who, what they said, a question naming them in other words)
    ("Lena", "I started a new job at Globex as a data engineer last week.", "where does Lena work"),
    ("Lena", "I've been taking cello lessons every Thursday evening.", "what instrument does Lena play"),
    ("Lena", "I switched from iPhone to a Pixel 8 because the camera is better.", "what phone does Lena have"),
    ("Omar", "My doctor said my vitamin D is low, so I take 2000 IU daily.", "what supplement is Omar on"),
    ("Omar", "I'm allergic to penicillin, it gave me hives as a kid.", "which antibiotic should Omar avoid"),
    ("Omar", "I'm training for a triathlon in September, mostly swimming now.", "what race is Omar preparing for"),
]


@pytest.mark.slow
def test_a_question_naming_someone_in_other_words_finds_their_statement_first(make_agent) -> None:
    """Ranked by plain cosine, a question naming Lena was closest to her shortest lines: "where does Lena
    work" showed "Lena: which one?" (0.73) and "Lena: tell me about it" above "I started a new job at
    Globex" (0.58), and 12 of 20 such questions found their statement first. Their part along the
    names' vectors is now taken out of the ranking's cosines (`recall.relevance.judge`)."""
    chat = ["hey", "how's it going", "not bad, you?", "busy day", "tell me about it", "which one?", "lol",
            "good idea", "talk later", "sounds relaxing", "me too honestly", "ok bye", "back now", "same"]
    lines = [(("Lena", "Omar")[i % 2], chat[i % len(chat)]) for i in range(140)]
    for n, (who, fact, _) in enumerate(IN_OTHER_WORDS):
        lines.insert(4 + 21 * n, (who, fact))
    agent, _, channel, clock = make_agent(["send ok"] * (len(lines) + 5), (),
                                          embeddingprovider="local", chromaMode="embedded")
    for who, line in lines:
        clock.advance(60)
        channel.put(line, who=who)
        agent.turn()
        agent.memory.dreamer.wait()
    for who, fact, question in IN_OTHER_WORDS:
        assert hits_of(agent, question)[0] == f"{who}: {fact}", (question, hits_of(agent, question)[:3])
