"""Scopes isolate users: two people tell one memory near-identical things; nothing either can reach
(vector, BM25, the fused query, semantic recall, spreading, themes, the KNOWLEDGE block, infer,
episodes, history, tags, the MCP tools) ever shows the other's records, and forgetting a scope is one call."""

from __future__ import annotations

import json
import re
import time

import pytest

from mettaclaw.config import load_config
from mettaclaw.mcp.tools import MemoryTools
from mettaclaw.memory import open_memory
from mettaclaw.memory.core import scopes
from mettaclaw.memory.recall import LayerGraph
from mettaclaw.messages import Message
from mettaclaw.skills import SkillError
from mettaclaw.skills.memory import for_memory

PEOPLE = {"alice": ("1111", "red", "Rosa's"), "bob": ("2222", "blue", "Rosa's place")}
QUESTIONS = ["what is my locker code", "what colour is my bike", "where is the team lunch", "garage door code",
             "locker", "bike", "member", "gym"]


def said_by(person: str) -> list[str]:
    code, colour, lunch = PEOPLE[person]
    return [f"My locker code at the gym is {code} and my bike is {colour}.", "Good morning everyone!",
            f"Remember, my locker code at the gym is {code}.", f"My bike is {colour}, parked by the gym.",
            f"The team lunch is on Friday at {lunch}.", f"I told you: locker code {code}, bike {colour}."]


def fill(memory) -> None:
    t = 1_790_000_000
    for n in range(6):
        for person in PEOPLE:
            t += 60
            memory.record_turn(time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)),
                               [Message(said_by(person)[n], who=person, channel="irc:#room")], [])
    for person, (code, colour, lunch) in PEOPLE.items():
        scope = f"user:{person}"
        memory.remember(f"The garage door code is {code}-{colour}.", scope=scope, time="2026-01-01 10:00:00")
        memory.remember(f"(--> {person} member) (stv 1.0 0.9)", kind="belief", atom=f"(--> {person} member) (stv 1.0 0.9)",
                        scope=scope)
        memory.remember("(--> member gym-user) (stv 1.0 0.9)", kind="belief", atom="(--> member gym-user) (stv 1.0 0.9)",
                        scope=scope)
        semantic = memory.semantic
        semantic.learn(f"The team lunch is on Friday at {lunch}", name="team lunch", tags=(colour,), scope=scope)
        semantic.relate("team lunch", "NEAR", f"the {colour} gym", scope=scope)
    memory.sync_mirror()
    memory.dreamer.dream("test")


def shown(memory, visible: frozenset[str]) -> str:
    """Everything every read path returns to a reader of `visible`, as one text (ids included)."""
    out: list[str] = []
    for q in QUESTIONS:
        for layer in (None, "episodic", "semantic"):
            out += [f"{h.id} {h.text} {h.cites}" for h in memory.query(q, 50, layer=layer, explain=True, visible=visible)]
        for mode in ("bm25", "vector", "hybrid"):
            out += [f"{m.id} {m.text}" for m in memory.index.query(q, limit=50, mode=mode, scopes=visible)]
        for mode in ("semantic", "hybrid"):
            out += [f"{r.id} {r.record.content} {r.record.tags}" for r in
                    memory.semantic.recall(q, 50, mode=mode, include_history=True, visible=visible, touch=False)]
        out.append(memory.knowledge(q, 5000, visible))
        out += [f"{m.id} {m.text}" for m in memory.beliefs(q, 50, visible)]
    out += [f"{r.id} {r.record.content}" for r in memory.semantic.recall(1000, mode="logical", include_history=True,
                                                                           visible=visible, touch=False)]
    out += [f"{e.id} {e.text}" for e in memory.around("2026", 1000, visible)]
    out.append(json.dumps(memory.semantic.tags(visible)))
    for ref in ("team lunch", "locker", "gym", *(e.id for e in memory.around("2026", 1000))):  # episodes of both
        try:
            _, text, grouped = memory.spread(ref, visible)
            out += [text] + [f"{n} {memory.text_of(n)}" for found in grouped.values() for n, _ in found]
        except LookupError:
            pass
    return "\n".join(out)


def owned(memory, scope: str) -> set[str]:
    """The ids of every record of `scope` (index rows and semantic records)."""
    rows = memory.index.select(scopes=frozenset({scope})) or set()
    records = {r.id for r in memory.semantic if scopes.of_tags(r.tags) == scope}
    return set(rows) | records


@pytest.fixture
def memory(tmp_path):
    (tmp_path / "priors").mkdir()
    config = load_config([f"memoryDir={tmp_path / 'memory'}", f"knowledgePriorsDir={tmp_path / 'priors'}",
                          "embeddingprovider=hash", "chromaMode=embedded", "dreamInterval=0"], env={})
    memory = open_memory(config, dream=False)
    fill(memory)
    yield memory
    memory.close()


def test_no_read_path_shows_another_scope(memory) -> None:
    alice, bob = owned(memory, "user:alice"), owned(memory, "user:bob")
    assert len(alice) > 10 and len(bob) > 10 and not alice & bob
    kinds = {r.kind for r in memory.semantic if scopes.of_tags(r.tags) == "user:alice"}
    assert {"fact", "concept", "summary"} <= kinds, "the dream distilled each person's episodes in their scope"
    lunches = [r for r in memory.semantic if r.name == "team lunch"]
    assert len(lunches) == 2, "near-identical facts of two scopes are never merged"
    for person, other in (("alice", "bob"), ("bob", "alice")):
        for with_agent in (False, True):  # an MCP client of one scope; the agent answering that person
            text = shown(memory, scopes.reading(f"user:{person}", with_agent))
            code, colour, _ = PEOPLE[other]
            assert code not in text and f"{colour} gym" not in text, f"{person} saw {other}'s records"
            assert not any(i in text for i in owned(memory, f"user:{other}")), f"{person} saw an id of {other}'s"
            assert PEOPLE[person][0] in text, "and sees their own"
        with pytest.raises(LookupError):
            memory.semantic.history(next(iter(r.id for r in memory.semantic if scopes.of_tags(r.tags) == f"user:{other}")),
                                    scopes.reading(f"user:{person}"))
    infer = MemoryTools(memory, scope="user:alice").infer("is alice a gym-user?")["answer"]
    assert "(--> alice gym-user)" in infer and "bob" not in infer


def test_activation_never_flows_through_another_scopes_records(tmp_path) -> None:
    """Alice's two records are linked only through a record of Bob's: spreading for Alice must not
    cross it, so Bob's memory cannot change what Alice is shown or how it ranks."""
    config = load_config([f"memoryDir={tmp_path}", "embeddingprovider=hash", "chromaMode=memory"], env={})
    memory = open_memory(config, dream=False)
    try:
        semantic = memory.semantic
        start = semantic.learn("Alice keeps her kayak at the boathouse", name="kayak", scope="user:alice").id
        far = semantic.learn("Alice renews her fishing licence in March", name="licence", scope="user:alice").id
        bridge = semantic.learn("Bob borrowed the kayak to go fishing", name="bob's trip", scope="user:bob").id
        semantic.relate(start, "RELATED_TO", bridge, weight=1.0)
        semantic.relate(bridge, "RELATED_TO", far, weight=1.0)
        memory.sync_mirror()
        alice = scopes.reading("user:alice")
        *_, everyone = memory.spread(start)
        assert {bridge, far} <= {n for found in everyone.values() for n, _ in found}  # the path exists
        *_, grouped = memory.spread(start, alice)
        assert not {bridge, far} & {n for found in grouped.values() for n, _ in found}
        expanded: set[str] = set()

        class Watched(LayerGraph):
            def __call__(self, layer: str, node: str) -> list[tuple[str, str, float]]:
                expanded.add(node)
                return super().__call__(layer, node)

        memory.pipeline.graph = Watched(semantic, memory.episodes.neighbours)
        memory.query("kayak boathouse", 10, visible=alice)
        assert start in expanded and bridge not in expanded, "recall's spreading crossed a record of another scope"
    finally:
        memory.close()


def test_the_mcp_tools_of_one_scope_see_only_it(memory) -> None:
    tools = MemoryTools(memory, scope="user:bob")
    answers = json.dumps([tools.query(q, 50) for q in QUESTIONS] + [tools.semantic_recall(q, 50) for q in QUESTIONS[:4]]
                         + [tools.episodes("2026", 1000), tools.list_tags(), tools.stats(), tools.spread_activation("team lunch")])
    assert "2222" in answers and "1111" not in answers and "red gym" not in answers
    alice_fact = next(r.id for r in memory.semantic if scopes.of_tags(r.tags) == "user:alice" and r.kind == "fact")
    from mcp.server.mcpserver.exceptions import ToolError

    for call in (lambda: tools.forget(alice_fact), lambda: tools.history(alice_fact),
                 lambda: tools.supersede_fact(alice_fact, "changed"), lambda: tools.spread_activation(alice_fact)):
        with pytest.raises(ToolError, match="no record"):
            call()
    assert memory.semantic.get(alice_fact) is not None
    written = tools.create_entity("The team lunch is on Friday at Rosa's")  # alice's words, said by bob
    assert scopes.of_tags(memory.semantic.get(written["id"]).tags) == "user:bob", "reconciled within bob's scope"
    with pytest.raises(ValueError, match="reserved for scopes"):
        memory.remember("sneaky", tags=("scope:user:alice",))
    with pytest.raises(ToolError, match="report covers every scope"):
        tools.agent_skill("dream", "status", "2026-11-24 10:00:00", scope="user:bob")


def test_forgetting_a_scope_is_one_call(memory) -> None:
    alice = owned(memory, "user:alice")
    bob_before = owned(memory, "user:bob")
    assert memory.forget_scope("user:alice") >= len(alice) // 2  # (an index copy of a fact goes with the fact)
    assert not owned(memory, "user:alice")
    assert "1111" not in shown(memory, None) and "1111" not in memory.trace.path.read_text(errors="replace")
    assert owned(memory, "user:bob") == bob_before
    with pytest.raises(ValueError, match="scope"):
        memory.forget_scope("User Alice!")


def test_the_agent_answers_each_irc_user_from_their_own_scope(make_agent) -> None:
    """On IRC, what alice told the agent is hers: bob's `query` never shows it, hers does."""
    agent, llm, channel, clock = make_agent(["send noted", "query locker code gym", "query locker code gym"])
    room = "irc:#room"
    channel.put(Message("My locker code at the gym is 1111.", who="alice", channel=room))
    agent.turn()
    channel.put(Message("what is the locker code at the gym?", who="bob", channel=room))
    agent.turn()
    assert agent.memory_skills.scope == "user:bob" and "1111" not in agent.last_results, agent.last_results
    channel.put(Message("and mine?", who="alice", channel=room))
    agent.turn()
    assert agent.memory_skills.scope == "user:alice" and "1111" in agent.last_results


def test_a_server_of_one_scope_never_reads_or_changes_the_agents_own_memory(memory) -> None:
    """The agent_* tools read scopes.reading(scope), which adds the agent's own: bob's server found the
    agent's memories through agent_skill query and recall and deleted an agent fact through forget.
    The agent's own server still shows a user's turn that user's memory and the agent's."""
    from mcp.server.mcpserver.exceptions import ToolError

    from mettaclaw.parser import Command

    secret = memory.remember("AGENTPRIVATE the owner's alarm code is 2468", time="2026-01-02 10:00:00")
    diary = memory.semantic.learn("AGENTPRIVATE owner diary: feeling unwell", name="owner diary").id
    memory.remember("(--> owner unwell) (stv 1.0 0.9)", kind="belief", atom="(--> owner unwell) (stv 1.0 0.9)")
    memory.sync_mirror()
    episode = memory.record_turn("2026-01-02 10:00:00", [Message("AGENTPRIVATE the drone key is in the drawer")], []).turn_id
    for n in range(6):
        memory.record_turn(f"2026-01-02 11:0{n}:00", [], [Command("shell", ("make deploy",))], None, [(2, 900.0)])
    bob = MemoryTools(memory, scope="user:bob")
    now = "2026-01-03 00:00:00"

    def skill(name: str, arg: str) -> str:
        try:
            return bob.agent_skill(name, arg, now, scope="user:bob")["result"]
        except ToolError as err:
            return f"refused: {err}"

    seen = [skill("query", "alarm code"), skill("query", "episodic: drone key"), skill("recall", "owner diary"),
            skill("recall", "hybrid: drone key"), skill("episodes", "2026-01-02"), skill("history", "owner diary"),
            skill("spread", "owner diary"), skill("infer", "is owner unwell?"),
            skill("supersede", "owner diary => the owner is fine"),
            bob.agent_knowledge("owner diary alarm code drone key", 5000, scope="user:bob")["block"],
            bob.agent_predictions("shell make deploy", [], now, scope="user:bob")["block"]]
    shown = "\n".join(seen)
    for private in ("AGENTPRIVATE", "2468", "feeling unwell", "owner unwell", "shell make", secret.id, diary, episode):
        # whole words: the episode's id (ep-<byte offset>) may begin one of bob's own (ep-1234 in ep-12345)
        assert not re.search(rf"(?<![\w-]){re.escape(private)}(?![\w-])", shown), (private, seen)
    for ref in (diary, "owner diary", secret.id, episode):
        assert skill("forget", ref).startswith(("refused: no record", "refused: no episode")), ref
    assert memory.semantic.get(diary) is not None and memory.text_of(secret.id) and memory.trace.get(episode)
    # the agent's own server: a remote agent answering bob reads bob's scope and its own, as a local one does
    agent = MemoryTools(memory)
    assert "AGENTPRIVATE" in agent.agent_skill("query", "AGENTPRIVATE alarm code", now, scope="user:bob")["result"]
    assert "2222" in agent.agent_skill("query", "locker code", now, scope="user:bob")["result"]
    assert "AGENTPRIVATE" in agent.agent_knowledge("AGENTPRIVATE owner diary", 5000, scope="user:bob")["block"]
    assert "shell make: expect failure" in agent.agent_predictions("shell make deploy", [], now, scope="user:bob")["block"]


def test_the_prompt_of_bobs_turn_shows_nothing_of_alices(make_agent) -> None:
    """The prompt is built before the turn's message arrives: when that message is another person's,
    LAST_SKILL_USE_RESULTS, PINNED and HISTORY are theirs, not the previous speaker's."""
    agent, llm, channel, _ = make_agent(["remember my bank pin is 4417\n- alice: pin 4417 for the deposit\nquery bank pin",
                                         "send hello bob", "send hello again alice"])
    room = "irc:#room"
    channel.put(Message("my bank pin is 4417, keep it", who="alice", channel=room))
    agent.turn()
    channel.put(Message("hi, anything new?", who="bob", channel=room))
    agent.turn()
    bobs_prompt = llm.prompts[1][0]
    assert "4417" not in bobs_prompt, bobs_prompt
    assert "hi, anything new?" in agent.history()  # bob's own turn is in his HISTORY
    channel.put(Message("back again", who="alice", channel=room))
    agent.turn()
    alices_prompt = llm.prompts[2][0]
    assert "alice: pin 4417 for the deposit" in alices_prompt.split("PINNED:")[1].split("HISTORY:")[0]
    assert "my bank pin is 4417" in alices_prompt.split("LAST_SKILL_USE_RESULTS:")[1]
    assert "hello bob" not in alices_prompt.split("HISTORY:")[1]


def test_what_two_people_said_in_one_turn_is_read_by_each_of_them_later(make_agent) -> None:
    """Such a turn is the channel's (of_episode): said in front of everyone there, so alice's later
    turns on that channel read it; a person on another channel does not."""
    agent, llm, channel, _ = make_agent(["send hi both", "query where does alice live", "query where does alice live"])
    channel.put(Message("I live in Paris near the Louvre", who="alice", channel="irc:#room"))
    channel.put(Message("hi all", who="carol", channel="irc:#room"))
    agent.turn()
    channel.put(Message("where do I live again?", who="alice", channel="irc:#room"))
    assert "Louvre" in agent.turn().results[0]
    channel.put(Message("where does alice live?", who="mallory", channel="irc:#other"))
    assert "Louvre" not in agent.turn().results[0]


def test_nicks_that_differ_are_scopes_that_differ() -> None:
    nicks = ["alice", "alice_", "alice[", "alice{", "alice^", "al@ice", "é", "x" * 80, "x" * 79 + "y"]
    derived = [scopes.of_episode((nick,), "irc:#c") for nick in nicks]
    assert len(set(derived)) == len(nicks) and all(scopes.check(d) == d for d in derived), derived
    assert scopes.of_episode(("Alice",), "irc:#c") == "user:alice"  # IRC nicks are case-insensitive


def test_irc_nicks_with_a_separator_character_are_people_of_their_own(make_agent) -> None:
    """`|` is a nick character on IRC (`alice|away`), and the sender's name dropped it as a separator of
    the trace and the tags: `alice|` spoke as alice and was shown alice's pin and memories, `|` as the
    anonymous `user`."""
    nicks = ["alice", "alice|", "|alice", "alice||", "a|b", "a||b", "|", "||", "user", "x" * 62 + "|"]
    who = [Message("hi", who=nick, channel="irc:#c").who for nick in nicks]
    assert len(set(who)) == len(nicks) and None not in who, who
    derived = {scopes.of_episode((w,), "irc:#c") for w in who}
    assert len(derived) == len(nicks), derived
    agent, _, channel, _ = make_agent(["pin alice's locker code is 1111", "send hi"])
    channel.put(Message("my locker code is 1111", who="alice", channel="irc:#room"))
    agent.turn()
    channel.put(Message("what is my locker code?", who="alice|", channel="irc:#room"))
    agent.turn()
    assert "1111" not in agent.llm.prompts[1][0].split("PINNED:")[1]


def test_learn_cites_only_episodes_there_are_and_the_speaker_may_read(make_agent) -> None:
    """`learn ... episodes=` stored any id as the fact's source: one of no episode, or one of another
    person's turns (which a forget of that turn would then take the fact with)."""
    agent, *_ = make_agent(["send noted", "send noted"])
    room = "irc:#room"
    channel = agent.channel
    channel.put(Message("My locker code at the gym is 1111.", who="alice", channel=room))
    alices = agent.turn().episode_ids[0]
    channel.put(Message("hello", who="bob", channel=room))
    bobs = agent.turn().episode_ids[0]
    learn = agent.memory_skills.learn
    assert agent.memory_skills.scope == "user:bob"
    with pytest.raises(SkillError, match="no episode ep-99999999"):
        learn("Bob likes tea episodes=ep-99999999")
    with pytest.raises(SkillError, match=f"no episode {alices}"):
        learn(f"Bob likes tea episodes={bobs},{alices}")
    assert learn(f"Bob likes tea episodes={bobs}").startswith("LEARN-SUCCESS")


def test_a_turn_supersedes_only_its_own_scopes_facts(open_test_memory) -> None:
    """A turn answering bob reads the agent's own facts, and `supersede` replaced them there, for
    everyone: alice was then told the wifi password bob had written."""
    memory = open_test_memory()
    skills = for_memory(memory, lambda: "2026-01-01 10:00:00", 10, 20)
    agents = skills.run("learn", "The office wifi password is tulip42")
    skills.scope = "user:bob"
    with pytest.raises(SkillError, match="in scope 'agent', which this turn \\(scope 'user:bob'\\) reads but does not"):
        skills.run("supersede", "The office wifi password is tulip42 => The office wifi password is hacked")
    own = skills.run("learn", "Bob's desk is by the window")
    assert skills.run("supersede", "Bob's desk is by the window => Bob's desk is by the door").startswith(
        f"SUPERSEDE-SUCCESS {own.split()[2]} -> ")
    skills.scope = "user:alice"
    assert "tulip42" in skills.run("recall", "office wifi password") and agents.split()[2] in skills.run(
        "history", "The office wifi password is tulip42")


def test_each_person_gets_their_own_latest_episodes_however_much_others_said_since(open_test_memory) -> None:
    """`episodes` (alone: the latest; or around a time) took the trace's nearest records and then left
    out those of other scopes: with 30 of alice's turns after bob's, bob's `episodes` answered "no
    episodes recorded yet" and `episodes 2026-01-01 10:29` nothing, on a memory holding bob's turns."""
    memory = open_test_memory()
    for n in range(3):
        memory.record_turn(f"2026-01-01 09:0{n}:00", [Message(f"bob's note number {n}", "bob", "irc:#r")], [])
    for n in range(30):
        memory.record_turn(f"2026-01-01 10:{n:02d}:00", [Message(f"alice line {n}", "alice", "irc:#r")], [])
    bob = MemoryTools(memory, scope="user:bob")
    skills = for_memory(memory, lambda: "2026-01-01 11:00:00", 10, 2)
    skills.scope, skills.with_agent = "user:bob", False
    latest = skills.run("episodes", "")
    assert "bob's note number 1" in latest and "bob's note number 2" in latest and "alice" not in latest, latest
    assert "bob's note number 0" not in latest  # two lines, the latest two of his
    around = [e["text"] for e in bob.episodes("2026-01-01 10:29", lines=2)["episodes"]]
    assert len(around) == 2 and all("bob's note number" in t for t in around), around
    assert [e.id for e in memory.latest(2, frozenset({"user:alice"}))] == \
        [e.id for e in memory.latest(2)], "a scope with the latest turns gets them as before"
    early = [e.text for e in memory.around("2026-01-01 09:01", 1, frozenset({"user:alice"}))]
    assert len(early) == 2 and all("alice line" in t for t in early), early  # the first alice said


def test_forgetting_a_scope_takes_its_pin(make_agent) -> None:
    """Each person's pin is kept in `pins/<scope>.txt` and shown in their next prompt; forget_scope left
    it, so alice's "pin 4417 for the deposit" outlived the forgetting of everything of hers (and an export carries every pin)."""
    agent, llm, channel, _ = make_agent(["pin 4417 for the deposit\nsend noted", "pin call the plumber"])
    channel.put(Message("my bank pin is 4417, keep it", who="alice", channel="irc:#room"))
    agent.turn()
    channel.put(Message("remind me about the plumber", who="bob", channel="irc:#room"))
    agent.turn()
    memory = agent.memory
    assert set(memory.working.pinned()) == {"user:alice", "user:bob"}
    memory.forget_scope("user:alice")
    assert memory.working.pinned() == {"user:bob": "call the plumber"}
    assert not memory.working.file_of("user:alice").exists()
    assert "4417" not in "".join(p.read_text() for p in agent.config.memory_path().rglob("*") if p.is_file()
                                 and p.suffix in (".txt", ".metta", ".jsonl", ".json"))
