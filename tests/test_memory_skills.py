"""Memory and reasoning skills through the agent loop, on the agent's own memory (open_memory with the
hash embedder and in-memory vector stores)."""

from __future__ import annotations

import pytest


def test_remember_then_query_in_the_same_turn(make_agent) -> None:
    agent, llm, channel, _ = make_agent(["remember the spare key is under the blue flowerpot\nquery where is the spare key"],
                                        ["hi"])
    longterm = agent.memory.index
    outcome = agent.turn()
    assert outcome.results[0].startswith('(remember "the spare key') and "REMEMBER-SUCCESS" in outcome.results[0]
    assert "blue flowerpot" in outcome.results[1]
    stored = longterm.query("spare key", limit=1)[0]
    assert stored.source == "agent" and stored.time == agent.now_text()


def test_remember_a_belief_and_infer_from_it(make_agent) -> None:
    replies = ["remember (--> sam human) (stv 1 0.9)\nremember (--> human mortal) (stv 1 0.9)\nremember sam likes tea",
               "infer is sam mortal?", "infer is sam mortal?"]
    agent, llm, channel, _ = make_agent(replies, ["go"])
    longterm = agent.memory.index
    first = agent.turn()
    assert "belief (--> sam human)" in first.results[0]
    assert [m.kind for m in longterm.query("sam", limit=5, kind="belief")] == ["belief", "belief"]
    second = agent.turn()
    text = second.results[0]
    assert "(--> sam mortal)" in text and "0.81" in text and "deduction" in text
    ids = {m.id for m in longterm.query("sam human mortal", limit=5, kind="belief")}
    assert any(i in text for i in ids)  # the proof trail names the memories it used
    assert len(longterm.ids_by(kind=("memory", "belief"))) == 3  # no new belief: a premise is never its own conclusion
    # the conclusion is kept as a fact of the agent's own inference, with its trail and premises
    kept = text.split("[kept as fact ")[1].split("]")[0]
    fact = agent.memory.semantic.get(kept)
    assert fact.provenance == "agent_inference" and fact.atom.startswith("(--> sam mortal)")
    assert fact.confidence == pytest.approx(0.81) and "inferred" in fact.tags
    assert fact.properties["trail"][-1]["rule"] == "deduction"
    derived = {e.dst for e in agent.memory.semantic.records.edges_of(kept) if e.type == "DERIVED_FROM"}
    assert derived == ids
    assert any(h.id == kept or kept in str(h.item.metadata) for h in agent.memory.query("is sam mortal", 5))
    channel.put("again")
    again = agent.turn().results[0]
    assert f"[kept as fact {kept}]" in again  # the same conclusion is one record, reinforced


def test_malformed_belief_is_refused_with_its_cause(make_agent) -> None:
    agent, *_ = make_agent(["remember (--> cat animal) (stv 1.5 0.9)"], ["go"])
    outcome = agent.turn()
    assert outcome.results[0].startswith('(remember "(--> cat animal) (stv 1.5 0.9)") -> ERROR: remember: not stored')
    assert "malformed" in outcome.results[0]
    assert not agent.memory.index.ids_by(kind=("memory", "belief"))


def test_prose_that_mentions_a_truth_value_is_remembered_as_text(make_agent) -> None:
    # it ends with ")" and holds "(stv ": taken for a malformed belief, it was refused, and the model was
    # told "the has no truth value"
    agent, *_ = make_agent(["remember the acronym (stv means simple truth value)"], ["go"])
    outcome = agent.turn()
    assert "REMEMBER-SUCCESS" in outcome.results[0], outcome.results[0]
    assert len(agent.memory.index.ids_by(kind="memory")) == 1


def test_nal_and_pln_skills(make_agent) -> None:
    agent, *_ = make_agent(["nal (--> sam human) (stv 1 0.9) (--> human mortal) (stv 1 0.9)\n"
                            "pln (Inheritance a b) (stv 1 0.9) (Inheritance b c) (stv 1 0.9)\nnal (--> a) (stv 1 0.9)"], ["go"])
    outcome = agent.turn()
    assert "(--> sam mortal) (stv 1.0 0.81)" in outcome.results[0]
    assert "(Inheritance a c) (stv 1.0 0.81)" in outcome.results[1]
    assert "ERROR" in outcome.results[2]


def test_learn_recall_and_the_knowledge_block(make_agent) -> None:
    agent, llm, channel, _ = make_agent(["learn Alice lives in Paris #person", "recall where does Alice live"], ["hi"])
    first = agent.turn()
    assert "LEARN" in first.results[0] or "learn" in first.results[0].lower()
    channel.put("where does Alice live?")
    second = agent.turn()
    assert "Alice lives in Paris" in second.results[0]
    assert "KNOWLEDGE:" in llm.prompts[1][1] and "Paris" in llm.prompts[1][1]


def test_query_modes_reach_semantic_memory(make_agent) -> None:
    agent, *_ = make_agent(["learn Bob works at the bakery\nremember Bob said the bread was late today\n"
                            "query semantic: where does Bob work\nquery hybrid: Bob bakery bread"], ["go"])
    outcome = agent.turn()
    assert "[semantic]" in outcome.results[2] and "Bob works at the bakery" in outcome.results[2]
    assert "bread" not in outcome.results[2]
    assert "Bob works at the bakery" in outcome.results[3] and "bread was late" in outcome.results[3]


def test_a_long_record_found_by_a_query_is_shown_by_a_passage_and_leaves_room_for_the_others(make_agent) -> None:
    log = "build log: " + " ".join(f"step {n} compiled module m{n} fine." for n in range(20_000))
    agent, *_ = make_agent(["send ok", "remember the build log says module m7 failed once\nquery build log module"],
                           [log])
    agent.turn()
    shown = agent.turn().results[1]
    assert len(shown) < 3_000 and f"[a passage of {len(log):,} characters]" in shown
    assert "module m7 failed once" in shown and "compiled module" in shown


def test_remember_refuses_a_document_and_stores_nothing(make_agent) -> None:
    document = " ".join(f"Section {n} says the valve {n} opens at {n} bar." for n in range(400))
    agent, *_ = make_agent([f"remember {document}\nremember valve 7 was replaced in May\nquery valve"], ["go"],
                           llmMaxTokens=10_000)
    outcome = agent.turn()
    assert "ERROR: remember: not stored: " in outcome.results[0] and "at most 6,000 in one memory" in outcome.results[0]
    assert "REMEMBER-SUCCESS" in outcome.results[1]
    assert "Section 3 says" not in outcome.results[2] and "valve 7 was replaced" in outcome.results[2]


def test_episodes_shows_a_long_record_cut(make_agent) -> None:
    agent, *_ = make_agent(["send ok", "episodes"], ["pasted " + "0123456789" * 10_000])
    agent.turn()
    shown = agent.turn().results[0]
    assert len(shown) < 3_000 and "record truncated: 98102 more characters" in shown


def test_a_query_past_the_length_recall_takes_is_a_clear_skill_error(make_agent) -> None:
    agent, *_ = make_agent([f"query {'peanuts ' * 5_000}"], ["go"], llmMaxTokens=10_000)
    outcome = agent.turn()
    assert "ERROR: query: the query is 39,999 characters long; at most 20,000" in outcome.results[0]
    assert "internal error" not in outcome.results[0]


def test_every_built_in_skill_is_declared_once_from_the_registry(make_agent) -> None:
    """A skill's name, help, MeTTa and Python side come from its one registration: what the model is told
    is what the registry holds, every skill the registry holds is in the prompt, and each runs."""
    from mettaclaw.skills.memory import SKILLS
    from mettaclaw.skills.registry import builtin_skills

    agent, *_ = make_agent([], ())
    registered = list(builtin_skills())
    assert [s.name for s in registered][:2] == ["pin", "send"] and set(SKILLS) <= {s.name for s in registered}
    for skill in registered:
        spec = agent.skills[skill.name]
        assert (spec.args, spec.help, spec.file) == (skill.args, skill.help, "built-in skills")
        assert spec.usage in agent.skill_list().splitlines()
    assert agent.use_skill("remember", "the shed key is under the mat").startswith("REMEMBER-SUCCESS")
    assert "under the mat" in agent.use_skill("query", "where is the shed key")
    assert agent.use_skill("query").startswith("ERROR: query: query needs a phrase")  # (do query) gives ""


def test_the_registry_refuses_a_skill_it_cannot_declare_once() -> None:
    from mettaclaw.skills.registry import Skill, SkillRegistry

    registry = SkillRegistry()
    registry.add(Skill("greet", "NAME", "say hello to NAME", "greet-person", lambda host: str.upper))
    with pytest.raises(ValueError, match="registered twice"):
        registry.add(Skill("greet", "NAME", "say hi", "greet-again", lambda host: str.upper))
    with pytest.raises(ValueError, match="is skill 'greet'"):
        registry.add(Skill("wave", "", "wave", "greet-person", lambda host: str.upper))
    for bad in ({"name": "grüß"}, {"operation": "Greet"}, {"operation": "greet"}, {"help": "  "}):
        with pytest.raises(ValueError):
            Skill(**{"name": "hi", "args": "", "help": "say hi", "operation": "say-hi", "bind": lambda host: str.upper,
                     **bad})
    assert registry.get("greet").metta() == ('(skill greet "NAME" "say hello to NAME")\n'
                                             "(= (do greet $name) (greet-person $name))")


def test_dream_skill_consolidates_the_agents_own_episodes_in_the_background(make_agent) -> None:
    replies = ["send noted"] * 12 + ["dream now", "dream status"]
    agent, llm, channel, clock = make_agent(replies, (), maxNewInputLoops=40, dreamEvery=1000)
    dreamer, semantic = agent.memory.dreamer, agent.memory.semantic
    for i in range(12):
        channel.put(f"Remember that Ada feeds the cat every morning at seven (day {i})")
        clock.advance(3600)
        agent.turn()
    started = agent.turn()
    assert started.results[0].startswith('(dream "now") -> DREAM-STARTED') and "background" in started.results[0]
    assert dreamer.wait(timeout=120) is not None
    status = agent.turn().results[0]
    assert "added" in status and "ERROR" not in status
    assert len(semantic) > 0  # the dream turned episodes into records
    found = agent.memory_skills.query("when does Ada feed the cat")
    assert "cat" in found


def test_query_fuses_every_layer_and_episodic_leaves_out_the_semantic_one(make_agent) -> None:
    agent, *_ = make_agent(["learn Carol plays the cello\nremember Carol had a concert on Friday\n"
                            "query Carol concert cello\nquery episodic: Carol concert cello"], ["go"])
    results = agent.turn().results
    assert "[longterm]" in results[2] and "Carol had a concert on Friday" in results[2]
    assert "[semantic]" in results[2] and "Carol plays the cello" in results[2]
    assert "Carol had a concert" in results[3] and "[semantic]" not in results[3]


def test_skills_that_do_not_touch_memory_never_wait_for_a_dream_writing(make_agent) -> None:
    """A dream holds the memory lock one write at a time; only the turn's episode record waits for it."""
    import threading

    agent, llm, channel, _ = make_agent(["send still responsive\nshell echo fine"], ())  # no KNOWLEDGE lookup
    dreamer = agent.memory.dreamer
    holding, release = threading.Event(), threading.Event()

    def dream_write() -> None:  # stands for a dream in the middle of a memory write
        with dreamer.lock:
            holding.set()
            release.wait(60)

    writer = threading.Thread(target=dream_write)
    writer.start()
    outcome = []
    turn = threading.Thread(target=lambda: outcome.append(agent.turn()))
    try:
        assert holding.wait(10)
        turn.start()
        deadline = __import__("time").monotonic() + 30
        while channel.sent != ["still responsive"] and __import__("time").monotonic() < deadline:
            __import__("time").sleep(0.01)
        assert channel.sent == ["still responsive"]  # sent while the "dream" still holds the lock
        assert turn.is_alive() and writer.is_alive()  # the turn's episode record waits for that one write
    finally:
        release.set()
        writer.join()
        turn.join(30)
    assert outcome[0].results == ['(send "still responsive") -> SENT', '(shell "echo fine") -> fine\n']
    assert outcome[0].episode_ids  # recorded once the write was done


def test_a_layer_with_nothing_to_look_for_is_a_clear_error(make_agent) -> None:
    agent, *_ = make_agent(["remember the semantic web is old\nquery semantic:\nquery episodic:  \nquery episodic:web"], ["go"])
    results = agent.turn().results
    assert all("query needs a phrase" in r for r in results[1:3]), results
    assert "semantic web is old" in results[3]


def test_a_word_inside_a_chinese_or_japanese_message_is_found(make_agent) -> None:
    agent, *_ = make_agent(["send 好", "send はい", "query 绿茶", "query 東京"],
                           ["我喜欢喝绿茶和乌龙茶", "私は東京に住んでいます"])
    agent.turn()
    agent.turn()
    channel_said = [agent.turn().results[0], agent.turn().results[0]]
    assert "我喜欢喝绿茶和乌龙茶" in channel_said[0], channel_said
    assert "私は東京に住んでいます" in channel_said[1], channel_said


def test_spread_starts_from_an_episode_and_says_what_it_takes(open_test_memory) -> None:
    """`spread ep-0` answered "no record with id, name or text 'ep-0'", though the graph links an episode
    to its neighbouring turns and to what was learned from it."""
    import time

    from mettaclaw.messages import Message
    from mettaclaw.skills import SkillError
    from mettaclaw.skills.memory import MemorySkills

    memory = open_test_memory(dream=False)
    said = ["The spare key is under the blue pot.", "Coffee time!", "Emma is allergic to peanuts."]
    turns = [memory.record_turn(time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(1_790_000_000 + 60 * n)),
                                [Message(line, who="ana", channel="terminal")], []).turn_id for n, line in enumerate(said)]
    skills = MemorySkills(memory, lambda: "2026-01-01 00:00:00", 10)
    fact = skills.run("learn", f"The spare key is under the blue pot episodes={turns[0]}").split()[2]
    out = skills.spread(turns[0]).splitlines()
    assert out[0] == f"SPREAD from {turns[0]} (ana: The spare key is under the blue pot.):"
    assert any(line.startswith(f"  semantic: {fact} ") for line in out), out  # learned from it
    assert any(line.startswith(f"  episodic: {turns[1]} 'ana: Coffee time!'") for line in out), out  # the next turn
    assert skills.spread(fact).startswith(f"SPREAD from {fact} (The spare key")
    takes = "spread starts from a fact, concept, summary or theme (its id, name or text) or an episode (ep-N, act-N)"
    memory_id = skills.remember("the garage code is 4321").split()[1]
    for ref, said_first in (("ep-999", "no episode 'ep-999'"), ("act-0", "no episode 'act-0'"),
                            ("no such thing", "no record with id, name or text 'no such thing'"),
                            (memory_id, f"{memory_id!r} is a memory (from remember), which no link leads from")):
        with pytest.raises(SkillError) as err:
            skills.spread(ref)
        assert str(err.value) == f"{said_first}: {takes}"



def test_episodes_finds_turns_by_time_and_alone_the_last_ones_after_the_clock_went_back(make_agent) -> None:
    """The trace was bisected as if its times never decreased: after the clock went back a year,
    `episodes <a time of the second run>` showed turns of the first, and the other way round."""
    agent, llm, channel, clock = make_agent([], [], maxEpisodeRecallLines=2)
    starts = {}
    for name in ("first", "second"):  # the second run of turns is a year before the first
        starts[name] = agent.now_text()
        for i in range(30):
            channel.put(f"{name} run {i}")
            agent.turn()
            clock.advance(3600)
        clock.advance(-2 * 365 * 86400)
    for name in ("first", "second"):
        shown = agent.use_skill("episodes", starts[name])  # two before its time, it and two after
        assert all(f'"{name} run {i}"' in shown for i in range(3)) and f'"{name} run 3"' not in shown, shown
    last = agent.use_skill("episodes", "")  # what just happened, not what the latest time holds
    assert '"second run 29"' in last and '"first run' not in last


LONG = "9" * 100_000


@pytest.mark.parametrize("skill, arg, said", [
    ("forget", f"ep-{LONG}", "no record with id, name or text 'ep-99"), ("history", LONG, "no record with id"),
    ("spread", f"ep-{LONG}", "no record with id"), ("supersede", f"{LONG} => a new fact", "no record with id"),
    ("episodes", f"2024-{LONG}", "time '2024-99"), ("dream", LONG, "unknown argument '99"),
    ("query", f"lens:{LONG} cabin", "no lens named '99"), ("recall", f"sky as_of={LONG}", "not a time: '99"),
    ("recall", f"sky kind={LONG}", "kind '99"), ("relate", f"sky IS_{LONG} blue", "relation type 'IS_99"),
    ("relate", f"{LONG[:3000]} IS_A {LONG[:3000]}", "cannot relate '99"),
])
def test_an_error_names_a_long_argument_by_its_start(make_agent, skill, arg, said) -> None:
    """These errors quoted the argument whole: 100,000 characters came back into the next prompt's results,
    where they crowded out the rest (maxFeedback), and into the trace's error feedback."""
    agent, *_ = make_agent([])
    agent.use_skill("learn", "the sky is blue")
    answer = agent.use_skill(skill, arg)
    assert answer.startswith(f"ERROR: {skill}: ") and said in answer and len(answer) < 600, answer[:300]
    assert "characters)" in answer


def test_a_belief_followed_by_a_metta_comment_is_stored_as_the_belief(make_agent) -> None:
    """`;` starts a comment in MeTTa: `(--> a b) (stv 1 0.9) ; note` answered REMEMBER-SUCCESS but was
    stored as plain text, no atom, so infer never saw it."""
    replies = ["remember (--> a b) (stv 1 0.9) ; note\n(remember \"(--> b c) (stv 1 0.9) ;; from the manual\")",
               "infer (--> a c) (stv 1 0.9)"]
    agent, _, _, _ = make_agent(replies, ["go"])
    first = agent.turn()
    assert "belief (--> a b) (stv 1.0 0.9) (its comment after ';' is not stored)" in first.results[0]
    assert "belief (--> b c) (stv 1.0 0.9)" in first.results[1]
    beliefs = agent.memory.index.query("a b c", limit=5, kind="belief")
    assert sorted(m.atom for m in beliefs) == ["(--> a b) (stv 1.0 0.9)", "(--> b c) (stv 1.0 0.9)"]
    assert "note" not in " ".join(m.text for m in beliefs)
    assert "deduction" in agent.turn().results[0]


def test_a_semicolon_in_plain_text_or_a_quoted_symbol_is_kept(make_agent) -> None:
    agent, _, _, _ = make_agent(['remember buy milk; eggs\nremember ("a;b" --> c) (stv 1 0.9)\n'
                                 'remember (--> "a;b" c) (stv 1 0.9)'], ["go"])
    results = agent.turn().results
    assert "belief" not in results[0] and agent.memory.index.query("milk eggs", limit=1)[0].text == "buy milk; eggs"
    assert "malformed" in results[1]
    assert 'belief (--> "a;b" c) (stv 1.0 0.9)' in results[2] and "comment" not in results[2]
