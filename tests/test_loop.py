"""The turn, end to end on hyperon with a scripted model: prompt timing, results, trace, errors, budget."""

from __future__ import annotations

import re
import time
from pathlib import Path
from types import SimpleNamespace

from mettaclaw import runtime
from mettaclaw.runtime import PROJECT_ROOT


def prompt_of(llm, turn: int) -> str:
    return llm.prompts[turn][0]


def test_pin_shows_from_the_next_turn_and_results_reach_the_next_prompt(make_agent) -> None:
    agent, llm, channel, _ = make_agent(["pin remember the milk\nsend hello", "send again", ""], ["hi"])
    for _ in range(3):
        agent.turn()
    assert "remember the milk" not in prompt_of(llm, 0).split("PINNED:")[1]
    assert "PINNED:\nremember the milk" in prompt_of(llm, 1)
    assert "PINNED:\nremember the milk" in prompt_of(llm, 2)
    # results of turn N appear first in turn N+1's prompt
    assert '(send "hello") -> SENT' not in prompt_of(llm, 0)
    assert '(send "hello") -> SENT' in prompt_of(llm, 1)
    assert '(send "again") -> SENT' in prompt_of(llm, 2)
    assert channel.sent == ["hello", "again"]


def test_every_message_is_new_even_the_same_text_twice_and_only_an_empty_receive_is_not(make_agent) -> None:
    agent, llm, channel, _ = make_agent(["send a", "send b", "send c", "send d"], ["yes, book the ferry"])
    first = agent.turn()
    channel.put("yes, book the ferry")  # a person who says it twice is heard twice
    second = agent.turn()
    agent.turn()  # nothing arrived
    channel.put("and 3+3?", who="Ada")
    agent.turn()
    assert all(llm.prompts[n][1].endswith("(HUMAN-MSG: yes, book the ferry)") for n in (0, 1))
    assert "HUMAN-MSG" not in llm.prompts[2][1] and "NO NEW MESSAGE" in llm.prompts[2][1]
    assert llm.prompts[3][1].endswith("(HUMAN-MSG: Ada: and 3+3?)")  # a named sender is shown with the text
    episodes = [e for e in agent.memory.trace if e.message == "yes, book the ferry"]
    assert len(episodes) == 2 and first.episode_ids[0] != second.episode_ids[0]
    # both are found; the same words said twice are shown once, citing both episodes
    cited = {c for h in agent.memory.query("ferry", 5) for c in h.cites}  # (a bare "yes" asks about nothing)
    assert cited >= {first.episode_ids[0], second.episode_ids[0]}


def test_a_trace_record_per_active_turn_found_by_episodes_after_history_moved_on(make_agent) -> None:
    replies = ["remember day one"] + [f"send message number {i}" for i in range(30)] + ["episodes 2026-1"]
    agent, llm, channel, clock = make_agent(replies, ["start"], maxHistory=400)
    outcome = agent.turn()
    first = agent.memory.trace.get(outcome.episode_id)
    assert first is not None and first.message == "start" and first.commands[0].skill == "remember"
    for _ in range(30):
        clock.advance(60)
        agent.turn()
    assert len(agent.memory.trace) == 31  # one record per active turn
    # the first record has left the prompt's HISTORY window...
    history = prompt_of(llm, 30).split("HISTORY:")[1]
    assert "day one" not in history
    # ...but `episodes` finds it by time
    found = agent.use_skill("episodes", first.time)
    assert "day one" in found and '"HUMAN_MESSAGE: " "start"' in found


def test_unknown_skill_and_malformed_reply_report_their_cause_and_nothing_else_breaks(make_agent) -> None:
    agent, llm, channel, _ = make_agent(['fly to the moon\n(send "unterminated\nsend still here', "send next turn"], ["go"])
    outcome = agent.turn()
    errors = "\n".join(outcome.errors)
    assert "ERROR: fly: unknown skill" in errors and "Skills: append-file" in errors
    assert "unbalanced" in errors or "unterminated" in errors
    assert channel.sent == ["still here"]
    agent.turn()
    nxt = prompt_of(llm, 1).split("LAST_SKILL_USE_RESULTS:")[1]
    assert "ERROR: fly: unknown skill" in nxt and "could not read your reply: line 2" in nxt
    assert channel.sent == ["still here", "next turn"]
    record = list(agent.memory.trace)[0]
    assert record.errors and "ERROR: fly: unknown skill" in record.errors


def test_a_reply_opening_with_a_byte_order_mark_runs_and_an_invisible_character_in_a_name_is_shown(make_agent) -> None:
    """`\\ufeffsend "hi"` was an unknown skill the model saw as `send`; one left inside a name is escaped."""
    agent, _, channel, _ = make_agent(['\ufeffsend "hi"\nse\u200bnd bye'], ["go"])
    outcome = agent.turn()
    assert channel.sent == ["hi"]
    [error] = outcome.errors
    assert "ERROR: se\\u200bnd: unknown skill (its name holds characters that cannot be seen, shown escaped)" in error


def test_a_line_of_prose_before_a_fenced_block_lets_the_blocks_commands_run(make_agent) -> None:
    """`Here:` then a fenced `send "hi"` was the unknown skill `Here:`, the block its argument: nothing was sent."""
    agent, _, channel, _ = make_agent(['Here:\n```\nsend "hi"\n```'], ["go"])
    outcome = agent.turn()
    assert channel.sent == ["hi"] and [str(c) for c in outcome.commands] == ['(send "hi")']
    [error] = outcome.errors
    assert "line 1: 'Here:' is text outside the code block, not a command: not run" in error


def test_model_failure_goes_to_the_next_prompt_and_the_loop_goes_on(make_agent, caplog) -> None:
    agent, llm, channel, _ = make_agent(["!error connection refused", "send recovered"], ["hello"])
    agent.turn()
    agent.turn()
    assert "ERROR: model call failed: connection refused" in prompt_of(llm, 1)
    assert channel.sent == ["recovered"]
    assert "model call failed" in caplog.text


def test_a_failed_model_call_is_told_to_the_person_once_a_reason_and_the_loop_backs_off(make_agent, monkeypatch) -> None:
    """One message to an agent whose endpoint fails called it again every sleepInterval for all the
    turns the message grants (50 calls in under a minute) and told the person nothing at all."""
    import threading

    replies = ["!error AuthenticationError: 401 bad key"] * 3 + ["!error timed out"] + ["send back"]
    agent, llm, channel, _ = make_agent(replies, ["hello"], sleepInterval=0)
    waits: list[float] = []
    now = [1000.0]

    class Stopping(threading.Event):  # waits pass at once, on a clock of the test's
        def wait(self, timeout=None):
            waits.append(timeout)
            now[0] += timeout
            return False

    monkeypatch.setattr(runtime, "time", SimpleNamespace(monotonic=lambda: now[0], perf_counter=time.perf_counter))
    agent.stopping = Stopping()
    agent.run(5)
    assert channel.notices == ["model call failed: AuthenticationError: 401 bad key; the next call waits 1 s",
                               "model call failed: timed out; the next call waits 8 s"]
    assert channel.sent == ["back"]
    assert agent.backoff.delay == 0  # the call that got through ended the backoff
    assert round(sum(waits)) == 1 + 2 + 4 + 8  # the loop waited longer after each failure


def test_a_model_call_abandoned_for_ctrl_c_is_no_failure_to_tell(make_agent) -> None:
    agent, llm, channel, _ = make_agent(["!error abandoned: the agent is stopping"], ["hello"])
    agent.stopping.set()
    agent.model_failed("abandoned: the agent is stopping")
    assert channel.notices == [] and agent.backoff.delay == 0


def test_a_new_message_cuts_the_backoff_short(make_agent) -> None:
    """The turns a message grants wait for a broken endpoint; the person's next message does not."""
    import threading

    agent, llm, channel, _ = make_agent(["!error down", "send up"], ["hello"], sleepInterval=0)
    agent.backoff.failures = 7  # the failure to come is the eighth in a row: 128 s to wait
    threading.Timer(0.5, channel.put, ["are you there?"]).start()
    guard = threading.Timer(10, agent.stop)  # a hang is a failure, not a stuck test
    guard.start()
    agent.run(2)
    guard.cancel()
    assert not agent.stopping.is_set(), "the guard stopped a turn that waited out the backoff"
    assert "are you there?" in llm.prompts[1][1] and channel.sent == ["up"]


def test_a_bug_while_running_one_command_is_reported_and_the_next_commands_run(make_agent, caplog, monkeypatch) -> None:
    agent, llm, channel, _ = make_agent(["send one\nsend two\nsend three"], ["go"])
    real = agent.run_skill

    def flaky(command):
        if "two" in str(command):
            raise RuntimeError("bookkeeping broke")
        return real(command)

    monkeypatch.setattr(agent, "run_skill", flaky)
    outcome = agent.turn()
    assert channel.sent == ["one", "three"]
    assert any("internal error" in e and "bookkeeping broke" in e for e in outcome.errors)
    assert "bookkeeping broke" in caplog.text


def test_more_commands_than_allowed_are_reported_as_skipped(make_agent) -> None:
    agent, llm, channel, _ = make_agent(["\n".join(f"send m{i}" for i in range(7))], ["go"])
    outcome = agent.turn()
    assert channel.sent == ["m0", "m1", "m2", "m3", "m4"]
    assert any("skipped" in e and '(send "m5")' in e and '(send "m6")' in e for e in outcome.errors)


def test_repeated_send_is_dropped(make_agent) -> None:
    agent, llm, channel, _ = make_agent(["send same\nsend same\nsend other"], ["go"])
    outcome = agent.turn()
    assert channel.sent == ["same", "other"]
    assert any("NOT SENT" in r for r in outcome.results)


def test_what_the_channel_could_not_carry_is_told_to_the_model(make_agent, monkeypatch) -> None:
    """IRC cuts a message past its lines; the model was told SENT and went on as if all was read."""
    agent, _, channel, _ = make_agent(["send a long answer\nsend short"], ["go"])
    monkeypatch.setattr(channel, "send", lambda text: "cut: 3 more lines were not sent" if "long" in text else None)
    assert agent.turn().results[:2] == ['(send "a long answer") -> SENT (cut: 3 more lines were not sent)',
                                        '(send "short") -> SENT']


def test_budget_runs_out_then_idle_then_wakes(make_agent) -> None:
    agent, llm, channel, clock = make_agent(["pin working"] * 20, ["task"], maxNewInputLoops=3, wakeupInterval=600, maxWakeLoops=1)
    acted = [agent.turn().acted for _ in range(5)]
    assert acted == [True, True, True, False, False]
    assert len(llm.prompts) == 3  # no model call once the budget is spent
    clock.advance(601)
    assert agent.turn().acted  # the idle wake grants maxWakeLoops (1) autonomous turn
    assert not agent.turn().acted
    channel.put("new message")
    assert [agent.turn().acted for _ in range(4)] == [True, True, True, False]


def test_startup_grants_the_budget_without_a_message(make_agent) -> None:
    agent, llm, channel, _ = make_agent(["pin boot"], (), maxNewInputLoops=2)
    assert agent.turn().acted
    assert "NO NEW MESSAGE" in llm.prompts[0][1]


def test_turn_without_message_or_command_writes_no_record(make_agent) -> None:
    agent, llm, channel, _ = make_agent(["", ""], ())
    agent.turn()
    agent.turn()
    assert len(agent.memory.trace) == 0


def test_prompt_sections_are_in_the_spec_order(make_agent) -> None:
    agent, llm, channel, _ = make_agent(["send x"], ["hi"])
    agent.turn()
    prompt = prompt_of(llm, 0)
    order = ["SKILLS", "OUTPUT_FORMAT:", "LAST_SKILL_USE_RESULTS:", "PINNED:", "HISTORY:", "TIME:"]
    positions = [prompt.index(name) for name in order]
    assert positions == sorted(positions)
    assert prompt.startswith(Path(PROJECT_ROOT / "metta" / "prompt.txt").read_text().strip()[:40])
    # the skill list is generated from the declarations, help text included
    assert "write-file PATH TEXT : write TEXT to a file in the workspace" in prompt


def test_the_prompt_head_is_assembled_once_and_again_when_prompt_txt_changes(tmp_path, open_test_memory) -> None:
    """The instructions, skills and output format come from (prompt-head) once, are kept while prompt.txt
    says the same, and are noted in every turn's log; an edited prompt.txt shows from the next turn."""
    import json
    import shutil

    from conftest import FakeClock, test_config

    from mettaclaw.channels import QueueChannel
    from mettaclaw.llm import Scripted
    from mettaclaw.runtime import Agent

    root = tmp_path / "root"
    for part in ("metta", "lib"):
        shutil.copytree(PROJECT_ROOT / part, root / part)
    clock = FakeClock()
    llm = Scripted(["send one", "send two", "send three"])
    agent = Agent(test_config(tmp_path / "memory"), llm, QueueChannel(["hi"]), open_test_memory(clock=clock), clock=clock,
                  root=root)
    assembled = []
    evaluate = agent.runner.evaluate_atom
    agent.runner.evaluate_atom = lambda atom: (assembled.append(str(atom)), evaluate(atom))[1]
    try:
        agent.turn()
        agent.turn()
        (root / "metta" / "prompt.txt").write_text("You are a test agent with new instructions.\n")
        agent.turn()
    finally:
        agent.close()
    assert assembled.count("(prompt-head)") == 2  # at the first turn and after the edit, not in between
    first, second, third = (prompt_of(llm, n) for n in range(3))
    head = first.split("\n\nLAST_SKILL_USE_RESULTS:")[0]
    assert head.startswith((PROJECT_ROOT / "metta" / "prompt.txt").read_text().strip()[:40]) and "OUTPUT_FORMAT:" in head
    assert second.split("\n\nLAST_SKILL_USE_RESULTS:")[0] == head
    assert third.startswith("You are a test agent with new instructions.\n\nSKILLS")
    records = [json.loads(line) for line in agent.config.memory_path("turns.jsonl").read_text().splitlines()]
    for record in records:  # noted each turn, first, as when the sections were assembled every turn
        assert list(record["prompt_sections"])[:3] == ["instructions", "SKILLS", "OUTPUT_FORMAT"]
    assert records[0]["prompt_sections"]["SKILLS"] == records[1]["prompt_sections"]["SKILLS"] > 0
    assert records[1]["prompt_sections"]["instructions"] == len(head.split("\n\nSKILLS")[0])
    assert records[2]["prompt_sections"]["instructions"] == len("You are a test agent with new instructions.")


def test_a_pin_too_long_for_every_prompt_is_refused_and_the_old_pin_stays(make_agent) -> None:
    agent, llm, _, _ = make_agent(["pin step 1: write the report", f"pin {'x' * 6000}", "send ok"], ["go"])
    outcomes = [agent.turn() for _ in range(3)]
    assert "ERROR: pin: not pinned: 6,000 characters, at most 5,000" in outcomes[1].results[0]
    assert agent.memory.working.text == "step 1: write the report"
    assert "PINNED:\nstep 1: write the report" in llm.prompts[2][0]


def test_a_pin_file_written_by_hand_is_shown_cut_and_a_folder_in_its_place_is_said(make_agent) -> None:
    """A 60,000-character pins.txt went whole into every prompt (only `pin` is held to 5,000); a folder
    where pins.txt goes made `pin` an internal error."""
    agent, llm, _, _ = make_agent(["send ok", "pin next task", "send ok"], ["go"])
    agent.memory.working.path.write_text("task: " + "y" * 60_000, encoding="utf-8")
    agent.turn()
    pinned = llm.prompts[0][0].split("PINNED:\n", 1)[1]
    assert pinned.startswith("task: yyy") and "pin (its file is longer) truncated" in pinned
    assert len(pinned) < 6_000
    agent.memory.working.path.unlink()
    agent.memory.working.path.mkdir()
    agent.memory.working._texts.clear()  # as at a restart
    result = agent.turn().results[0]
    assert "ERROR: pin: not pinned:" in result and "pins.txt' cannot be written (Is a directory); the old pin stays" in result
    assert agent.memory.working.path.is_dir()


def test_results_are_tail_capped_at_max_feedback(make_agent) -> None:
    agent, llm, channel, _ = make_agent(["shell python3 -c \"print('x' * 5000)\"", "send ok"], ["go"], maxFeedback=1000)
    agent.turn()
    agent.turn()
    results = prompt_of(llm, 1).split("LAST_SKILL_USE_RESULTS:\n")[1].split("\n\nPINNED:")[0]
    assert len(results) < 1100 and "earlier characters not shown" in results


def test_a_message_longer_than_max_message_is_cut_for_the_model_and_kept_whole_in_the_trace(make_agent) -> None:
    pasted = "log line " + "0123456789" * 10_000
    agent, llm, _, _ = make_agent(["send got it"], [pasted], maxMessage=2000)
    outcome = agent.turn()
    message = llm.prompts[0][1].split("(HUMAN-MSG: ")[1]
    assert message.startswith("log line 0123") and len(message) < 2200
    assert "message (kept whole in the trace) truncated: 98009 more characters" in message
    assert agent.memory.trace.get(outcome.episode_ids[0]).message == pasted


def test_episodes_alone_shows_the_latest_records(make_agent) -> None:
    agent, _, _, clock = make_agent([f"send message number {i}" for i in range(3)] + ["episodes"], ["start"])
    for _ in range(3):
        agent.turn()
        clock.advance(60)
    found = agent.use_skill("episodes")
    assert not found.startswith("ERROR") and "message number 0" in found and "message number 2" in found


def test_a_command_refused_before_it_runs_keeps_its_place_in_the_results_and_the_trace(make_agent) -> None:
    """Too many arguments, or an unknown skill's several, were said when the reply was parsed: before the
    results of the commands written above them, and in that order in the trace."""
    reply = 'send one\n(send "two" "three")\n(fly "to" "moon")\nsend four'
    agent, llm, channel, _ = make_agent([reply], ["go"])
    outcome = agent.turn()
    assert [r.split(" -> ")[0] for r in outcome.results] == ['(send "one")', '(send "two" "three")',
                                                              '(fly "to" "moon")', '(send "four")']
    assert "ERROR: send: takes 1 argument(s) (TEXT), got 2" in outcome.results[1]
    assert "ERROR: fly: unknown skill" in outcome.results[2]
    assert [c.skill for c in outcome.commands] == ["send", "send", "fly", "send"] and channel.sent == ["one", "four"]
    [record] = list(agent.memory.trace)
    assert [c.skill for c in record.commands] == ["send", "send", "fly", "send"]


def test_a_call_with_the_wrong_arguments_is_told_the_skills_usage(make_agent) -> None:
    agent, _, _, _ = make_agent(["write-file notes.txt", "send fine"], ["go"])
    errors = "\n".join(agent.turn().errors)
    assert "ERROR: write-file: no definition matches these arguments; usage: write-file PATH TEXT : write TEXT" in errors
    assert not agent.workspace.root.joinpath("notes.txt").exists()


def test_a_reply_no_model_could_write_is_cut_and_so_is_the_list_of_skipped_commands(make_agent) -> None:
    agent, _, channel, _ = make_agent(["send " + "x" * 100_000, "\n".join(f"send m{i}" for i in range(5_000))],
                                      ["go"], llmMaxTokens=100)
    first = agent.turn()
    assert len(channel.sent[0]) < 1_700 and any("only its first 1,600 were read" in e for e in first.errors)
    second = agent.turn()
    [skipped] = [e for e in second.errors if "skipped" in e]
    assert re.search(r"and \d+ more$", skipped) and len(skipped) < 2_000 and "m14" in skipped and "m15" not in skipped


def test_a_message_that_arrives_while_the_agent_stops_is_kept_in_the_trace(make_agent) -> None:
    """The turn at start-up calls the model before anyone spoke; a line typed during that call, then
    Ctrl-C or SIGTERM, ended the agent with the line still queued in the channel: it was never
    written to history.metta, as if it had not been said."""
    agent, llm, channel, _ = make_agent([], ())

    class TypedThenStopped:
        name = "scripted"

        def complete(self, prompt: str, message: str) -> str:
            channel.put("my door code is 4711, keep it")
            agent.stop()
            return "send too late"

    agent.llm = TypedThenStopped()
    agent.run()
    agent.close()  # as run.py does when the loop ends, before the memory is closed
    [kept] = [e for e in agent.memory.trace if e.message]
    assert kept.message == "my door code is 4711, keep it" and not channel.pending()
    assert kept.id in {c for h in agent.memory.query("door code", 3) for c in h.cites}  # an episode, as any
