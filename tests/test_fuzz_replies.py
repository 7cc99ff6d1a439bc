"""Malformed and hostile model replies: never a crash, always an answer naming the cause."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, example, given, settings
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


def _reader_finds_it_open(text: str) -> bool:
    """The reference: the reader itself fails on `text` with an unterminated string or an open `(`."""
    from mettaclaw.parser import _readable_part
    from mettaclaw.sexpr import SexprError, read_all

    try:
        read_all(_readable_part(text))
        return False
    except SexprError as err:
        return "unterminated" in str(err) or "unbalanced '('" in str(err)


@settings(max_examples=600, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(['(', ')', '"', '\\', ' ', '\n', 'send', 'a', '\\"', '(((']),
                          st.text(max_size=5)), max_size=30))
@example(["()0;("])  # found by this test in CI: a top-level symbol reads through `;`, so the `(` is open
@example(["() ;(", "\n"])  # ... while a `;` between forms starts a comment
@example(['"a";(', 'b;('])
def test_the_one_pass_scan_finds_open_text_exactly_where_the_reader_does(pieces) -> None:
    from mettaclaw.parser import _OpenScan, _readable_part

    text = "".join(pieces)
    whole = _OpenScan(_readable_part(text))
    assert whole.open == _reader_finds_it_open(text), text


@pytest.mark.parametrize("shape", ["(send ", 'send "', "(send (a ", 'send "x" "'])
def test_parsing_reads_each_character_a_bounded_number_of_times(monkeypatch, shape) -> None:
    """Linear, counted rather than timed: the reader is handed O(reply) characters in all (re-reading
    the growing text after each line behind an unclosed `(` or `"` handed it O(reply²))."""
    import mettaclaw.parser as parser

    read = []
    real = parser.read_all
    monkeypatch.setattr(parser, "read_all", lambda text: (read.append(len(text)), real(text))[1])
    reply = shape + "a few words on a line\n" * 2000
    parser.parse_reply(reply)
    assert sum(read) <= 3 * len(reply), sum(read) / len(reply)
