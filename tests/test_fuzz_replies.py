"""Malformed and hostile model replies: never a crash, always an answer naming the cause."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mettaclaw.parser import parse_reply

PIECES = ["(", ")", '"', "```", "\\", "-", "send", "pin", "write-file", "shell", "metta", "query", "$x", "!", "(import! &self x)",
          "\n", " ", "é", "\x00", "(((", ")))", "((send \"a\") (pin", "``` bash", "&self", ";", "\t"]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=12)), max_size=40))
def test_parser_never_raises_and_accounts_for_every_line(pieces) -> None:
    reply = "".join(pieces)
    parsed = parse_reply(reply, max_commands=5, arity={"write-file": 2})
    assert len(parsed.commands) <= 5
    for error in parsed.errors:
        assert error.startswith("line ")  # each error names where it came from


HOSTILE = [
    "(import! &self os)",
    "!(bind! &budget 1000)",
    '(send "a" "b" "c")',
    "send " + " ".join(["(a)"] * 1500),
    '(send ' + " ".join(['"x"'] * 1500) + ")",
    "(" * 500 + "send x" + ")" * 500,
    "(" * 5000 + "send x" + ")" * 5000,
    "(" * 5000,
    "metta (superpose (" + " ".join(["1"] * 1100) + "))",
    'shell ```\n' + "echo hi\n" * 3 + "```",
    "\x00\x01\x02 binary junk \xff",
    "",
    "pin " + "x" * 200_000,
    "(change-state! &budget 99)",
    "$x $y",
    "((((",
    "do send hi",
]


def test_hostile_replies_through_the_agent_are_answered_with_causes(make_agent) -> None:
    rng = random.Random(7)
    replies = HOSTILE + ["".join(rng.choice(PIECES) for _ in range(rng.randint(1, 30))) for _ in range(60)]
    agent, llm, channel, _ = make_agent(replies + ["send alive"], ["go"], maxNewInputLoops=len(replies) + 5)
    for _ in replies:
        outcome = agent.turn()
        for line in outcome.errors:
            assert "ERROR" in line and len(line) < 5000
    last = agent.turn()
    assert last.results == ['(send "alive") -> SENT']
    budget = agent.runner.run("!(get-state &budget)")[0][0]
    assert int(str(budget)) <= len(replies) + 5  # nothing the model wrote changed the agent's own state


@pytest.mark.parametrize("name", ["Error", "Empty", "if", "let", "superpose", "collapse", "case", "quote", "eval"])
def test_a_line_named_like_a_metta_builtin_fails_alone_and_every_other_command_runs(make_agent, name) -> None:
    """`Error a b` between two sends made hyperon turn the whole command list into an error (neither
    send ran); `Empty` made it vanish. Each command runs or fails on its own."""
    agent, _, channel, _ = make_agent([f"send hi\n{name} a b\nsend bye"], ["go"])
    outcome = agent.turn()
    assert channel.sent == ["hi", "bye"], outcome
    assert [c.skill for c in outcome.commands] == ["send", name, "send"]
    [error] = outcome.errors
    assert error.startswith(f'({name} "a b") -> ERROR: {name}: unknown skill')
