"""Model providers: the OpenAI-compatible path against a loopback server, scripted, console, no-key start."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mettaclaw.config import ConfigError, load_config
from mettaclaw.llm import (
    BACKOFF_MAX,
    Backoff,
    Console,
    LLMError,
    OpenAICompatible,
    Scripted,
    make_llm,
    retry_after,
)


class FakeChat(BaseHTTPRequestHandler):
    """A minimal OpenAI-compatible /chat/completions endpoint; the model name picks the behaviour."""

    seen: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeChat.seen.append({"body": body, "auth": self.headers.get("Authorization")})
        if body["model"] == "slow":
            time.sleep(3)
        if body["model"] == "notjson":  # a proxy's error page, with a 200
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(b"ERROR: upstream unavailable, try again later")
            return
        if body["model"] == "trickle":  # headers at once, then the body a byte a second
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                for byte in b'{"choices": []}':
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(1)
            return
        if body["model"] == "moved":  # to another origin (localhost is not 127.0.0.1), which answers
            self.send_response(307)
            self.send_header("Location", f"http://localhost:{self.server.server_address[1]}/v1/chat/completions")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if body["model"] == "busy":  # asks to be tried again in 20 s
            self.send_response(429)
            self.send_header("Retry-After", "20")
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"error": {"message": "slow down"}}')
            return
        odd = {"badjson": b'{"choices": [', "latin1": b'{"choices": [{"message": {"content": "caf\xe9"}}]}',
               "toolcall": b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": '
                           b'[{"id": "c", "type": "function", "function": {"name": "send", "arguments": "{}"}}]}}]}',
               "refusal": b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": null, '
                          b'"refusal": "I cannot help with that."}}]}',
               "nochoices": b'{"choices": []}',
               "parts": b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": [{"type": "thinking", '
                        b'"thinking": "hmm"}, {"type": "text", "text": "send "}, {"type": "text", "text": "hi"}]}}]}',
               "nullcontent": b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": null}}]}',
               "intcontent": b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": 42}}]}',
               "nomessage": b'{"choices": [{"index": 0}]}',
               "deepjson": b"[" * 100_000 + b"]" * 100_000}
        if body["model"] in odd:  # a 200 whose body a client cannot read as a chat completion
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(odd[body["model"]])
            return
        if body["model"] == "hugeerror":  # an error page of megabytes, its text in the JSON error's message
            self.send_response(500)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"error": {"message": "upstream said: ' + b"E" * 3_000_000 + b'"}}')
            return
        if body["model"] == "nowhere":  # a base_url without its /v1, as a web server answers it
            self.send_response(404)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(b"<html><body><h1>404 Not Found</h1></body></html>")
            return
        if body["model"] == "broken":
            self.send_response(500)
            self.end_headers()
            self.wfile.write(b'{"error": {"message": "upstream exploded"}}')
            return
        reply = {
            "id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "send echo " + body["messages"][1]["content"]}}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
        }
        data = json.dumps(reply).encode()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the slow case's client gave up
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FakeChat)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()


def test_openai_compatible_round_trip(server) -> None:
    llm = OpenAICompatible("tiny", "sk-test", server, timeout=10, max_tokens=50)
    assert llm.complete("SYSTEM PROMPT", "(HUMAN-MSG: hi)") == "send echo (HUMAN-MSG: hi)"
    sent = FakeChat.seen[-1]
    assert sent["auth"] == "Bearer sk-test"
    assert sent["body"]["messages"][0] == {"role": "system", "content": "SYSTEM PROMPT"}
    assert llm.last_usage == {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}


def test_openai_compatible_errors_and_timeouts_become_llm_errors(server) -> None:
    with pytest.raises(LLMError, match="InternalServerError"):
        OpenAICompatible("broken", "k", server, timeout=10, max_tokens=5).complete("p", "m")
    with pytest.raises(LLMError, match="timed out"):
        OpenAICompatible("slow", "k", server, timeout=0.5, max_tokens=5).complete("p", "m")


def test_an_endpoint_error_of_megabytes_is_cut_where_it_becomes_an_llm_error(tmp_path, server) -> None:
    """A 500 whose message was 3 MB went whole into the trace record (3 MB a failed turn), the log and
    the next prompt: every failure in a row of the turns a message grants wrote it again."""
    from conftest import test_config

    from mettaclaw.channels import QueueChannel
    from mettaclaw.memory import open_memory
    from mettaclaw.runtime import Agent

    with pytest.raises(LLMError) as caught:
        OpenAICompatible("hugeerror", "k", server, timeout=10, max_tokens=5).complete("p", "m")
    reason = str(caught.value)
    assert reason.startswith("InternalServerError: Error code: 500 - upstream said: EEE") and "truncated" in reason
    assert len(reason) <= 2000 + 100
    config = test_config(tmp_path / "memory", "provider=openai", f"base_url={server}", "LLM=hugeerror")
    llm = make_llm(config, lambda: None, notice=print, env={"OPENAI_API_KEY": "k"})
    memory = open_memory(config)
    agent = Agent(config, llm, QueueChannel(["hello"]), memory)
    try:
        agent.turn()
        [episode] = list(memory.trace)
        assert episode.message == "hello" and len(episode.text) < 3000
    finally:
        agent.close()
        memory.close()


def test_a_redirect_is_not_followed_and_says_where_it_points(server) -> None:
    """A 307 to another host got the whole prompt (the key was stripped, the memories in it were not)
    and its answer ran as the model's reply."""
    before = len(FakeChat.seen)
    with pytest.raises(LLMError, match=r"redirects \(307\) to 'http://localhost:\d+/v1/chat/completions'.*base_url"):
        OpenAICompatible("moved", "sk-secret", server, timeout=10, max_tokens=5).complete("PINNED: door code 4711", "m")
    assert [seen["body"]["model"] for seen in FakeChat.seen[before:]] == ["moved"]  # asked once, never the other host


def test_an_endpoint_that_cannot_be_reached_says_why() -> None:
    """'APIConnectionError: Connection error.' said the same for a refused port and a host of no name."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # free once closed: nothing listens there
    with pytest.raises(LLMError, match=rf"^cannot reach 127\.0\.0\.1:{port} \(ConnectError: .*Connection refused\)$"):
        OpenAICompatible("tiny", "k", f"http://127.0.0.1:{port}/v1", timeout=10, max_tokens=5).complete("p", "m")


def test_a_404_says_where_nothing_answered(server) -> None:
    """A base_url missing its /v1 (or a model the server does not serve) said "NotFoundError: Error
    code: 404" alone: not which address, nor what to check. The user:password of a URL is not shown."""
    secret_url = server.replace("http://", "http://user:pw@")
    with pytest.raises(LLMError) as caught:
        OpenAICompatible("nowhere", "k", secret_url, timeout=10, max_tokens=5).complete("p", "m")
    said = str(caught.value)
    assert f"at {server}/chat/completions: check base_url, and that the model 'nowhere' is served there" in said
    assert "pw" not in said


def test_a_429_carries_the_wait_its_retry_after_asks_for(server) -> None:
    with pytest.raises(LLMError) as caught:
        OpenAICompatible("busy", "k", server, timeout=30, max_tokens=5).complete("p", "m")
    assert caught.value.retry_after == 20


def test_retry_after_is_read_in_seconds_milliseconds_or_as_a_date() -> None:
    assert retry_after({"retry-after": "7"}) == 7
    assert retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert 50 < retry_after({"retry-after": time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 60))}) <= 60
    assert retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0  # past: no wait
    for odd in ({}, None, {"retry-after": "soon"}, {"retry-after": "nan"}, {"retry-after": "inf"}):
        assert retry_after(odd) is None


def test_backoff_doubles_heeds_retry_after_within_a_bound_and_tells_each_new_reason_once() -> None:
    backoff = Backoff()
    assert backoff.delay == 0
    assert backoff.failed("401") and backoff.delay == 1
    assert not backoff.failed("401") and backoff.delay == 2
    assert backoff.failed("429", asked=30) and backoff.delay == 30
    assert not backoff.failed("429", asked=3600) and backoff.delay == BACKOFF_MAX
    for _ in range(100):
        backoff.failed("429")
    assert backoff.delay == BACKOFF_MAX
    backoff.succeeded()
    assert backoff.delay == 0 and backoff.failed("429")


def test_llm_timeout_bounds_the_whole_call_however_the_server_stalls(server) -> None:
    for model in ("trickle", "busy"):
        began = time.monotonic()
        with pytest.raises(LLMError, match="timed out"):
            OpenAICompatible(model, "k", server, timeout=1.5, max_tokens=5).complete("p", "m")
        assert time.monotonic() - began < 8, model  # not the 15 s of trickling or the 20 s the 429 asked for


@pytest.mark.parametrize("model", ["badjson", "latin1", "intcontent", "nomessage", "deepjson"])
def test_a_200_body_that_is_no_chat_completion_is_an_llm_error(server, model: str) -> None:
    """deepjson: JSON nested deeper than the decoder's recursion raised RecursionError, no LLMError, so
    the dream's summariser (which falls back on LLMError) failed the whole dream."""
    with pytest.raises(LLMError):
        OpenAICompatible(model, "k", server, timeout=10, max_tokens=5).complete("p", "m")


@pytest.mark.parametrize(("model", "said"), [
    ("toolcall", "answered with a tool call (send) instead of text"), ("refusal", "refused: I cannot help with that."),
    ("nochoices", "no choices"), ("nullcontent", "content is null")])
def test_a_reply_without_text_says_why(server, model: str, said: str) -> None:
    """A tool call, a refusal and an empty answer were all 'the model returned no text'."""
    with pytest.raises(LLMError, match=re.escape(said)):
        OpenAICompatible(model, "k", server, timeout=10, max_tokens=5).complete("p", "m")


def test_a_content_of_text_parts_is_their_text(server) -> None:
    assert OpenAICompatible("parts", "k", server, timeout=10, max_tokens=5).complete("p", "m") == "send hi"


def test_agent_on_an_endpoint_reports_a_timeout_in_the_next_prompt(tmp_path, server) -> None:
    from conftest import test_config

    from mettaclaw.channels import QueueChannel
    from mettaclaw.memory import open_memory
    from mettaclaw.runtime import Agent

    config = test_config(tmp_path / "memory", "provider=openai", f"base_url={server}", "LLM=slow", "llmTimeout=1")
    llm = make_llm(config, lambda: None, notice=print, env={"OPENAI_API_KEY": "k"})
    memory = open_memory(config)
    agent = Agent(config, llm, QueueChannel(["hello"]), memory)
    try:
        outcome = agent.turn()
        assert any("timed out" in e for e in outcome.errors)
        assert "timed out" in agent.last_results
        assert list(memory.trace)[0].message == "hello"  # the message is kept in the trace all the same
    finally:
        agent.close()
        memory.close()


def test_a_200_answer_that_is_not_json_is_a_model_failure_never_a_reply(tmp_path, server) -> None:
    from conftest import test_config

    from mettaclaw.channels import QueueChannel
    from mettaclaw.memory import open_memory
    from mettaclaw.runtime import Agent

    with pytest.raises(LLMError, match="not a chat completion"):
        OpenAICompatible("notjson", "k", server, timeout=10, max_tokens=5).complete("p", "m")
    config = test_config(tmp_path / "memory", "provider=openai", f"base_url={server}", "LLM=notjson")
    llm = make_llm(config, lambda: None, notice=print, env={"OPENAI_API_KEY": "k"})
    memory = open_memory(config)
    agent = Agent(config, llm, QueueChannel(["hello"]), memory)
    try:
        outcome = agent.turn()
        assert outcome.commands == [] and not any("unknown skill" in e for e in outcome.errors), outcome
        [error] = outcome.errors
        assert error.count("model call failed") == 1 and "upstream unavailable" in error
        [episode] = list(memory.trace)
        assert episode.message == "hello" and episode.commands == []
    finally:
        agent.close()
        memory.close()


def test_no_key_starts_on_the_console_with_a_one_line_notice(monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    notices: list[str] = []
    llm = make_llm(load_config([], env={}), lambda: None, notices.append)
    assert isinstance(llm, Console)
    assert len(notices) == 1 and "OPENAI_API_KEY" in notices[0] and "\n" not in notices[0]


def test_a_key_sent_over_plain_http_across_a_network_is_warned_of_once() -> None:
    """base_url=http://10.0.0.5:8000/v1 with the person's OPENAI_API_KEY set sent that key in clear text."""
    said: dict[str, list[str]] = {}
    for url in ("http://10.0.0.5:8000/v1", "https://10.0.0.5/v1", "http://127.0.0.1:8080/v1", "http://localhost/v1"):
        said[url] = []
        make_llm(load_config(["provider=openai", f"base_url={url}"], env={}), lambda: None, said[url].append,
                 env={"OPENAI_API_KEY": "sk-real"})
    assert said.pop("http://10.0.0.5:8000/v1") == [
        "warning: the API key in $OPENAI_API_KEY is sent to 10.0.0.5 in clear text (base_url is plain http://); "
        "use https, or a key meant for that server only"]
    assert all(notices == [] for notices in said.values()), said
    stand_in: list[str] = []  # Ollama's key is a stand-in unless the person set one
    make_llm(load_config(["provider=ollama", "base_url=http://10.0.0.5:11434/v1"], env={}), lambda: None,
             stand_in.append, env={})
    assert stand_in == []


def test_named_provider_without_key_is_refused(monkeypatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        make_llm(load_config(["provider=anthropic"], env={}), lambda: None, print)


def test_scripted_replies_from_a_file(tmp_path) -> None:
    script = tmp_path / "s.txt"
    script.write_text("send one\npin two\n---\n!error rate limited\n---\nsend three\n")
    llm = make_llm(load_config(["provider=scripted", f"scriptFile={script}"], env={}), lambda: None, print)
    assert llm.complete("p", "m") == "send one\npin two"
    with pytest.raises(LLMError, match="rate limited"):
        llm.complete("p", "m")
    assert llm.complete("p", "m") == "send three"
    assert llm.complete("p", "m") == ""
    with pytest.raises(ConfigError, match="scriptFile"):
        make_llm(load_config(["provider=scripted"], env={}), lambda: None, print)
    with pytest.raises(ConfigError, match="'/dev/zero' holds more than 64 MB"):  # read until memory ran out
        make_llm(load_config(["provider=scripted", "scriptFile=/dev/zero"], env={}), lambda: None, print)
    reader, writer = os.pipe()  # a pipe is a script too: scriptFile=<(...)
    os.write(writer, b"send piped\r\n---\r\nsend two\n")
    os.close(writer)
    llm = make_llm(load_config(["provider=scripted", f"scriptFile=/dev/fd/{reader}"], env={}), lambda: None, print)
    os.close(reader)
    assert [llm.complete("p", "m") for _ in range(3)] == ["send piped", "send two", ""]


def test_console_reads_lines_until_an_empty_one() -> None:
    lines = iter(["send hi", "pin x", "", "send later"])
    out = io.StringIO()
    llm = Console(lambda: next(lines, None), out)
    assert llm.complete("prompt", "(HUMAN-MSG: yo)") == "send hi\npin x"
    assert "(HUMAN-MSG: yo)" in out.getvalue()
    assert llm.complete("prompt", "m") == "send later"  # end of input ends the reply
    with pytest.raises(LLMError, match="end of input"):
        llm.complete("prompt", "m")


def test_scripted_llm_from_list_keeps_prompts() -> None:
    llm = Scripted(["a"])
    llm.complete("P", "M")
    assert llm.prompts == [("P", "M")]
