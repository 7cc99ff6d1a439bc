"""Text no UTF-8 encoder accepts (lone UTF-16 surrogates, bytes that are not UTF-8) from a model, a
person or a tool: made safe where it enters, so it neither breaks the trace nor panics hyperon."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mettaclaw.llm import Scripted
from mettaclaw.messages import Message
from mettaclaw.textutil import safe_text

ROOT = Path(__file__).resolve().parents[1]
# every code point, lone surrogates (category Cs) included: what JSON `\ud800` or surrogateescape yields
ANY_TEXT = st.text(st.characters(codec=None, categories=None), max_size=30)


def test_safe_text_replaces_lone_surrogates_and_keeps_everything_else(caplog) -> None:
    assert safe_text("hi \ud800 there \udcff \x00", "the model") == "hi \ufffd there \ufffd \ufffd"
    assert "replaced 3 character(s)" in caplog.text and "the model" in caplog.text
    fine = "ok é 😀 \x01 \ufffe"
    assert safe_text(fine, "x") is fine  # valid text is passed through untouched, not copied
    assert Message("a\udcffb", who="x\ud800").shown() == "x\ufffd: a\ufffdb"


def test_a_model_reply_with_a_lone_surrogate_is_sent_and_recorded(make_agent) -> None:
    agent, _, channel, _ = make_agent(["send hi \ud800 there\nremember the code is \udcff42", "send still alive"], ["go"])
    outcome = agent.turn()
    assert not outcome.errors, outcome.errors
    assert channel.sent == ["hi \ufffd there"]
    record = agent.memory.trace.tail(10_000)
    assert "hi \ufffd there" in record and "\ud800" not in record
    assert any("\ufffd42" in h.text for h in agent.memory.query("code 42", 5))
    agent.turn()
    assert channel.sent[-1] == "still alive"


def test_a_nul_in_a_message_hides_nothing_from_the_model(make_agent) -> None:
    """hyperon carries strings as C strings: a NUL ended the message, and every message after it in
    the turn, as the model saw them."""
    agent, llm, _, _ = make_agent(["send ok"], ["before \x00 after", "the second message"])
    agent.turn()
    shown = llm.prompts[0][1]
    assert "before \ufffd after" in shown and "the second message" in shown
    assert "before \ufffd after" in agent.memory.trace.tail(10_000)


def test_a_skill_that_returns_a_lone_surrogate_does_not_panic_hyperon(make_agent) -> None:
    agent, _, _, _ = make_agent(["write-file bad.txt a\udcffb\nread-file bad.txt", "send done"], ["go"])
    outcome = agent.turn()
    assert any("a\ufffdb" in r for r in outcome.results), outcome.results


def test_a_sender_name_with_separators_and_a_line_that_is_no_skill_name_keep_the_record_whole(make_agent) -> None:
    """Found by the fuzz below: a sender named `|` broke the episode index (the turn failed), and a reply
    line `"` was written to the trace as a command `(")` that made the whole record unreadable."""
    agent, _, channel, _ = make_agent(['send ok\n"\n(pin x'], ())
    channel.put("the gate code is 4711", who="Smith, John | (admin)")
    outcome = agent.turn()
    assert any("is not a skill name" in e for e in outcome.errors)
    [episode] = list(agent.memory.trace)
    # the separators written as their hex code, so no two names become one (irc: `alice|` is not alice)
    name = "Smith@2c. John @7c. @28.admin@29."
    assert episode.message == f"{name}: the gate code is 4711" and episode.who == (name,)
    assert [c.skill for c in episode.commands] == ["send"]
    assert episode.id in {c for h in agent.memory.query("gate code", 3) for c in h.cites}


def test_any_text_from_a_channel_or_the_model_goes_through_a_whole_turn(make_agent) -> None:
    """Every place outside text enters a MeTTa atom in one turn: the message and its sender (receive,
    the prompt), the reply (parse, skills, errors), the trace and the episode index. A panic here
    would abort the test process, not fail one test: CI goes red either way."""
    agent, _, channel, _ = make_agent([], (), maxNewInputLoops=1000)

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(message=ANY_TEXT, who=ANY_TEXT, reply=ANY_TEXT)
    def one_turn(message: str, who: str, reply: str) -> None:
        agent.llm = Scripted([f"send {reply}\npin {reply}\n{reply}"])
        channel.put(message, who=who or None)
        before = len(agent.memory.trace)
        outcome = agent.turn()
        if message.strip():  # what was said is on record, readable back as UTF-8
            assert len(agent.memory.trace) == before + 1 and outcome.episode_ids
        agent.memory.trace.tail(2000)

    one_turn()


def _run_agent(stdin: bytes, tmp_path: Path, locale: str) -> subprocess.CompletedProcess:
    script = tmp_path / "script.txt"
    script.write_text("send got it\n")
    env = {**os.environ, "LC_ALL": locale, "LANG": locale, "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
    env.pop("PYTHONIOENCODING", None)
    return subprocess.run(
        [sys.executable, "run.py", "provider=scripted", f"scriptFile={script}", f"memoryDir={tmp_path / 'm'}",
         "embeddingprovider=hash", "chromaMode=memory", "maxTurns=1", "sleepInterval=0",
         f"knowledgePriorsDir={tmp_path / 'none'}"],
        cwd=ROOT, env=env, input=stdin, capture_output=True, timeout=120,
    )


def test_bytes_that_are_not_utf8_typed_on_the_terminal_are_heard_under_any_locale(tmp_path) -> None:
    for n, locale in enumerate(("C", "C.UTF-8")):
        folder = tmp_path / str(n)
        folder.mkdir()
        proc = _run_agent(b"caf\xff\xfe ok\n", folder, locale)
        assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
        assert b"agent> got it" in proc.stdout
        trace = (folder / "m" / "history.metta").read_text(encoding="utf-8")
        assert "caf\ufffd\ufffd ok" in trace, trace


def test_a_send_of_nothing_is_refused_not_reported_sent(make_agent) -> None:
    """`send ""` printed an empty `agent> ` line on the terminal and sent `PRIVMSG #room :` on IRC,
    which servers refuse (412 no text to send), while the model was told SENT."""
    agent, _, channel, _ = make_agent(['send ""\nsend "   "\nsend ok'], ["hi"])
    outcome = agent.turn()
    assert channel.sent == ["ok"]
    assert sum("ERROR: send: not sent: the message is empty" in e for e in outcome.errors) == 2, outcome.errors
