"""The reply format: the spec's golden cases and the fixes to the reference's defects."""

from __future__ import annotations

import pytest

from mettaclaw.parser import Command, parse_reply

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


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("```\nsend hi\nremember the sky is blue\n```", ['(send "hi")', '(remember "the sky is blue")']),
        ("```text\nsend hi\n```\nsend after", ['(send "hi")', '(send "after")']),
        ("```\nsend hi\nremember cut short", ['(send "hi")', '(remember "cut short")']),
    ],
)
def test_a_reply_wrapped_in_a_code_block_runs_its_lines(reply: str, expected: list[str]) -> None:
    """Models often fence their whole answer: its first line was "'```\\nsend' is not a skill name"
    and nothing ran."""
    parsed = parse_reply(reply, arity=ARITY)
    assert [str(c) for c in parsed.commands] == expected and not parsed.errors, parsed.errors


def test_a_fenced_block_after_a_command_without_its_argument_is_that_argument() -> None:
    """Not its lines run as commands: a file's text that reads `remember ...` is the file's."""
    reply = "write-file a.txt\n```\nremember to buy milk\nsend nothing\n```\nsend\n```\ntwo\nlines\n```"
    assert commands(reply) == ['(write-file "a.txt" "remember to buy milk\\nsend nothing")', '(send "two\\nlines")']


def test_a_reasoning_models_think_block_is_not_read_as_commands() -> None:
    """DeepSeek-R1 or Qwen3 on Ollama answer `<think>...</think>` before their lines: each line of
    thought was an unknown skill, and with five of them the model's own commands were skipped."""
    thoughts = "\n".join(f"Thought {i}: the user greets me." for i in range(6))
    parsed = parse_reply(f"<think>\n{thoughts}\n</think>\n\nsend hello\nbad(", arity=ARITY)
    assert [str(c) for c in parsed.commands] == ['(send "hello")'] and not parsed.skipped
    assert parsed.errors == ["line 11: 'bad(' is not a skill name (a word without ( ) or \")"]
    cut = parse_reply("<think>\nthe reply ran out of tokens here")
    assert not cut.commands and "never closed" in cut.errors[0]


@pytest.mark.parametrize(
    "reply",
    ['\ufeffsend "hi"', "\u200bsend hi", " \u2060 send hi", 'send\u200b hi', '\ufeff(send "hi")', '(\u200bsend\u200d "hi")',
     '\ufeff```\nsend hi\n```', '\ufeff<think>hmm</think>\nsend hi'],
)
def test_invisible_characters_before_or_after_a_skill_name_are_not_part_of_it(reply: str) -> None:
    """A reply that began with a byte-order mark was one unknown skill `\\ufeffsend` that looked like `send`."""
    parsed = parse_reply(reply, arity=ARITY)
    assert [str(c) for c in parsed.commands] == ['(send "hi")'] and not parsed.errors, parsed.errors


def test_invisible_characters_where_a_line_starts_are_dropped_but_kept_inside_an_argument() -> None:
    parsed = parse_reply('send hi\n\u200bremember x\nsend "a\n\u200bb \u200d c"', arity=ARITY)
    assert parsed.commands[1:] == [Command("remember", ("x",)), Command("send", ("a\n\u200bb \u200d c",))]
    assert parse_reply("se\u200bnd hi").commands == [Command("se\u200bnd", ("hi",))]  # inside a name: kept, to be shown


SKILLS = {"send", "remember", "write-file", "append-file", "pin"}


@pytest.mark.parametrize(
    ("reply", "expected", "prose"),
    [
        ('Here:\n```\nsend "hi"\n```', ['(send "hi")'], "line 1: 'Here:' is text outside"),
        ("Here is what I'll do:\n```\nsend hi\nremember x\n```\nHope this helps!",
         ['(send "hi")', '(remember "x")'], "line 1: \"Here is what I'll do:\" and 1 more line are text outside"),
        ("I'll save it.\nwrite-file a.txt\n```\nsend nothing\n```\nDone.",
         ['(write-file "a.txt" "send nothing")'], "line 1: \"I'll save it.\" and 1 more line are text outside"),
    ],
)
def test_prose_around_a_fenced_block_is_not_run_and_the_blocks_commands_are(reply, expected, prose) -> None:
    """`Here:` before a block made the block the argument of an unknown skill `Here:`, and nothing ran;
    a prose line of several words was an unknown skill that took one of max_commands."""
    parsed = parse_reply(reply, max_commands=2, arity=ARITY, skills=SKILLS)
    assert [str(c) for c in parsed.commands] == expected and not parsed.skipped
    [error] = parsed.errors
    assert error.startswith(prose) and "not run" in error


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("fly to the moon\nsend hi", ['(fly "to the moon")', '(send "hi")']),  # nothing fenced: every line a command
        ("Here:\n```python\nprint(1)\n```", ['(Here: "print(1)")']),  # no skill anywhere: said as before
        ("send hi\n```\nfly\n```", ['(send "hi")', "(fly)"]),  # inside a block, each line is a command
    ],
)
def test_without_a_fenced_block_or_any_skill_every_line_is_still_a_command(reply, expected) -> None:
    parsed = parse_reply(reply, arity=ARITY, skills=SKILLS)
    assert [str(c) for c in parsed.commands] == expected and not parsed.errors
    assert [str(c) for c in parse_reply(reply, arity=ARITY).commands] == expected
