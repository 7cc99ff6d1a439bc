"""The reply format: the spec's golden cases and the fixes to the reference's defects."""

from __future__ import annotations

import pytest

from mettaclaw.parser import parse_reply

ARITY = {"write-file": 2, "append-file": 2}


def commands(reply: str, **kw) -> list[str]:
    return [str(c) for c in parse_reply(reply, arity=ARITY, **kw).commands]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("send hello world\nremember the sky is blue", ['(send "hello world")', '(remember "the sky is blue")']),
        ('(send "hi") (pin "x")', ['(send "hi")', '(pin "x")']),
        ("- task: step 2 pending", ['(pin "- task: step 2 pending")']),
        ('shell echo "hi" > out.txt', ['(shell "echo \\"hi\\" > out.txt")']),
        ("write-file notes/a.txt line one", ['(write-file "notes/a.txt" "line one")']),
        ("query", ["(query)"]),
    ],
)
def test_golden_cases(reply: str, expected: list[str]) -> None:
    assert commands(reply) == expected


def test_tuple_form_is_accepted() -> None:
    assert commands('((send "a") (remember "b c"))') == ['(send "a")', '(remember "b c")']


def test_blank_lines_skipped_and_outer_parentheses_stripped() -> None:
    assert commands("\n\n(remember the sky is blue)\n\n") == ['(remember "the sky is blue")']


def test_fenced_multiline_argument_is_kept_whole() -> None:
    reply = "shell ```bash\ncat <<EOF > a.txt\nline 1\nline 2\nEOF\n```\nsend done"
    parsed = parse_reply(reply, arity=ARITY)
    assert [c.skill for c in parsed.commands] == ["shell", "send"]
    assert parsed.commands[0].args == ("cat <<EOF > a.txt\nline 1\nline 2\nEOF",)


def test_quoted_multiline_argument_with_file_name() -> None:
    parsed = parse_reply('write-file notes.md "# Title\n\nbody line"\nsend ok', arity=ARITY)
    assert parsed.commands[0].args == ("notes.md", "# Title\n\nbody line")
    assert parsed.commands[1].args == ("ok",)


def test_stray_quote_inside_text_does_not_swallow_following_lines() -> None:
    assert commands("send it's \"great\nsend next") == ['(send "it\'s \\"great")', '(send "next")']


def test_more_than_max_commands_run_first_five_and_report_the_rest() -> None:
    parsed = parse_reply("\n".join(f"send m{i}" for i in range(8)), max_commands=5)
    assert [c.args[0] for c in parsed.commands] == ["m0", "m1", "m2", "m3", "m4"]
    assert [c.args[0] for c in parsed.skipped] == ["m5", "m6", "m7"]


@pytest.mark.parametrize(
    ("reply", "cause"),
    [
        ('(send "never closed', "line 1"),
        ("shell ```\nls -la", "unclosed ``` fence"),
        ("(\"send\" hi)", "does not start with a skill name"),
    ],
)
def test_malformed_lines_give_an_error_naming_the_cause(reply: str, cause: str) -> None:
    parsed = parse_reply(reply)
    assert not parsed.commands
    assert parsed.errors and cause in parsed.errors[0]


def test_an_open_quote_on_a_first_argument_is_an_error_not_a_name() -> None:
    """`write-file "notes text` wrote a file named `"notes` (its quote kept as part of the name)."""
    parsed = parse_reply('write-file "notes text\nwrite-file "a b.txt" kept', arity={"write-file": 2})
    assert parsed.errors == ["line 1: unterminated string starting at character 1"]
    assert [c.args for c in parsed.commands] == [("a b.txt", "kept")]


def test_a_bad_line_does_not_stop_the_good_ones() -> None:
    parsed = parse_reply('send first\n(send "broken\nsend last')
    assert [c.args for c in parsed.commands][0] == ("first",)
    assert ("last",) in [c.args for c in parsed.commands]
    assert parsed.errors


def test_code_argument_keeps_its_text() -> None:
    assert commands("(metta (+ 1 2))") == ['(metta "(+ 1 2)")']
