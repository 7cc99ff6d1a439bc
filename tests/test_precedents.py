"""Pattern completion by meaning: before each model call, what the agent did for earlier requests that
mean the same as the current message, and how it ended, is shown as a prediction when the evidence
passes the statistics' gates, however the request is worded and whatever program it ran."""

from __future__ import annotations

import pytest

FAILING = "shell sh -c 'echo backup target not mounted >&2; exit 3'"
WORKING = "shell sh -c 'echo backed up'"
REQUESTS = ["please back up my photos folder", "back up the photos folder again please",
            "can you back up my photos folder to the usb disk", "please back up my photos folder",
            "back up my photos folder now", "I need my photos folder backed up",
            "please back up the photos folder today", "back up my photos folder please"]
CHATTER = ["the cat knocked a plant over", "lunch was good today", "it is raining again",
           "my sister visits on sunday", "the train was late", "I finished the book",
           "coffee machine is broken", "we won the quiz", "the heating is on", "new shoes arrived"]
AGAIN = "my photos folder needs a backup, please"  # the ninth request, in other words


def run(make_agent, replies: list[str], ninth: str, pace: int = 1, thanks: bool = True, **settings):
    """Eight backup requests answered by `replies` (one a turn; at pace 3 each between two lines of small
    talk), a turn of thanks answered without a command (so no prediction comes from the last commands
    used), then `ninth`: the message part of the prompt before its model call, and the ids of the eight
    turns' records of what was done (at pace 1, the requests' own)."""
    agent, llm, channel, clock = make_agent([*replies, "send ok", "send on it"], **settings)
    turns = []
    for n, (request, reply) in enumerate(zip(REQUESTS, replies, strict=True)):
        said = [CHATTER[n % len(CHATTER)], request, CHATTER[(n + 5) % len(CHATTER)]] if pace == 3 else [request]
        for text in said:
            channel.put(text)
        outcome = agent.turn()
        assert outcome.commands and outcome.commands[0].skill == "shell", reply
        failed = "[exit status 3]" in agent.last_results
        assert failed == (reply == FAILING), agent.last_results
        turns.append(outcome.episode_id)
        clock.advance(3600)
    if thanks:
        channel.put("thanks, that is all for now")
        agent.turn()
        clock.advance(3600)
    for text in ([CHATTER[8], ninth, CHATTER[9]] if pace == 3 else [ninth]):
        channel.put(text)
    agent.turn()
    return llm.prompts[-1][1], turns


def prediction_line(message: str) -> str:
    return next((x for x in message.splitlines() if x.startswith("- shell sh")), "")


@pytest.mark.parametrize("pace", [1, 3])
def test_a_request_in_other_words_is_told_how_the_same_request_ended_before(make_agent, pace) -> None:
    message, turns = run(make_agent, [FAILING] * 8, AGAIN, pace)
    assert "PREDICTIONS" in message, message
    line = prediction_line(message)
    assert "(run for 8 earlier requests like this one, such as " in line, line
    assert "expect failure (exit 3): failed 8 of 8" in line, line
    cited = line.split("episodes ")[1].split(", ")
    assert cited and set(cited) <= set(turns), "the evidence is the turns of the earlier requests"
    assert message.count("- shell sh") == 1


def test_a_kind_predicted_by_name_and_by_meaning_is_shown_once_by_name(make_agent) -> None:
    """Straight after the eighth request, `shell sh` is the last command used: named, it is predicted
    from all of its history, and not a second time from the requests like this one."""
    message, _ = run(make_agent, [FAILING] * 8, AGAIN, thanks=False)
    assert message.count("- shell sh") == 1, message
    assert "- shell sh: expect failure (exit 3): failed 8 of 8" in message, message


def test_a_coin_flip_history_predicts_nothing(make_agent) -> None:
    message, _ = run(make_agent, [FAILING, WORKING] * 4, AGAIN)
    assert "PREDICTIONS" not in message, message


def test_an_unrelated_request_is_told_nothing(make_agent) -> None:
    message, _ = run(make_agent, [FAILING] * 8, "what is the weather in Lisbon today")
    assert "PREDICTIONS" not in message, message


@pytest.mark.parametrize("pace", [1, 3])
def test_an_unrelated_request_among_others_is_told_nothing(make_agent, pace) -> None:
    """Small talk shares no meaning with the requests: the turn's other messages find nothing either."""
    message, _ = run(make_agent, [FAILING] * 8, "did anyone feed the fish", pace)
    assert "PREDICTIONS" not in message, message


@pytest.mark.slow
@pytest.mark.parametrize(("ninth", "predicted"), [("my pictures need saving to the backup drive", True),
                                                  ("what is the weather in Lisbon today", False)])
def test_a_paraphrase_is_found_by_meaning_with_the_real_embedder(make_agent, ninth, predicted) -> None:
    """MiniLM: a request sharing almost no words with the earlier ones still means the same; a request
    for something else does not."""
    message, turns = run(make_agent, [FAILING] * 8, ninth, embeddingprovider="local")
    line = prediction_line(message)
    assert ("expect failure (exit 3): failed 8 of 8" in line) == predicted, message
    assert ("PREDICTIONS" in message) == predicted, message
    if predicted:
        assert set(line.split("episodes ")[1].split(", ")) <= set(turns)


def test_only_requests_the_asker_may_read_are_evidence(open_test_memory) -> None:
    """Alice's requests on a shared channel are hers: bob asking the same is told nothing of them (the
    memory server's tool, as a remote agent calls it)."""
    from mettaclaw.mcp.tools import MemoryTools
    from mettaclaw.messages import Message
    from mettaclaw.parser import Command

    memory = open_test_memory()
    for n, request in enumerate(REQUESTS):
        memory.record_turn(f"2026-03-0{1 + n} 10:00:00", [Message(request, "alice", "irc:#home")],
                           [Command("shell", ("sh -c 'exit 3'",))], None, [(3, 40.0)])
    now = "2026-03-10 10:00:00"
    asked = {who: MemoryTools(memory).agent_predictions("", [], now, scope=f"user:{who}",
                                                        messages=[f"{who}: {AGAIN}"])["block"]
             for who in ("alice", "bob")}
    assert "- shell sh (run for 8 earlier requests" in asked["alice"], asked
    assert asked["bob"] == "", asked


def test_the_turn_of_a_message_is_read_forward_from_it(tmp_path) -> None:
    """A message's turn: its own record when it holds what was done, else the record that names it
    (IN_REPLY_TO) among the next few; none when that turn did nothing."""
    from mettaclaw.memory.episodes.trace import EpisodicTrace
    from mettaclaw.parser import Command

    trace = EpisodicTrace(tmp_path / "history.metta")
    shell = [Command("shell", ("sh -c 'exit 3'",))]
    alone = trace.append_turn("2026-03-01 10:00:00", [("back up my photos", ())], shell, None, "terminal", [(3, 5.0)])
    idle = trace.append_turn("2026-03-01 10:01:00", [("hello", ()), ("anyone there", ())], [], None, "terminal")
    gathered = trace.append_turn("2026-03-01 10:02:00", [("hi", ()), ("back up my photos", ()), ("bye", ())],
                                 shell, None, "terminal", [(3, 5.0)])
    assert trace.turn_of(alone[0].id).id == alone[0].id
    assert [trace.turn_of(e.id).id for e in gathered[:3]] == [gathered[3].id] * 3
    assert trace.turn_of(gathered[3].id).id == gathered[3].id
    assert [trace.turn_of(e.id) for e in idle] == [None, None], "a turn that did nothing has no record of it"
    assert trace.turn_of(gathered[0].id, within=2) is None, "read no further than `within` records"
    assert trace.turn_of("ep-999999") is None


def test_the_turn_of_a_message_is_not_looked_for_past_its_turns_time(tmp_path, monkeypatch) -> None:
    """A turn's records are written together at one time: the search for what a turn that did nothing
    did stops at the first record of another time without parsing it (parsing the next records, long
    ones among them, for every such turn was a third of a BEAM turn's cost)."""
    from mettaclaw.memory.episodes import trace as trace_module

    trace = trace_module.EpisodicTrace(tmp_path / "history.metta")
    idle = trace.append_turn("2026-03-01 10:00:00", [("hello", ())], [], None, "terminal")
    for n in range(5):
        trace.append_turn(f"2026-03-01 10:0{n + 1}:00", [("a long reply " * 200, ())], [], None, "terminal")
    parsed = []
    real = trace_module.parse_record
    monkeypatch.setattr(trace_module, "parse_record", lambda line, pos: parsed.append(pos) or real(line, pos))
    assert trace.turn_of(idle[0].id) is None
    assert parsed == [idle[0].offset]  # its own record only
