"""Model providers behind one interface: `complete(prompt, message) -> reply text`.

`prompt` is the turn's context (system prompt, skills, memory), `message` the human message or the
no-spam reminder. Providers raise LLMError for anything that went wrong; the loop reports it in the
next prompt and goes on.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, Protocol, TextIO, runtime_checkable

from mettaclaw.config import Config, ConfigError, clear_text_host
from mettaclaw.textutil import cap_head, read_capped

log = logging.getLogger(__name__)

SCRIPT_SEPARATOR = "---"
MAX_SCRIPT_MB = 64  # a script read past this is refused: /dev/zero (or a runaway pipe) was read until memory ran out
MAX_REASON = 2000  # characters of why a call failed: an endpoint's error text past this is cut


class LLMError(RuntimeError):
    """The model call failed (network, timeout, bad answer); the message says why, cut at MAX_REASON:
    it goes into the trace record, the log and the next prompt at every failure, and an endpoint's
    error message may be megabytes long. `retry_after` is the wait in seconds the endpoint
    asked for (a 429's or 503's Retry-After), when it asked."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(cap_head(message, MAX_REASON, "error message"))
        self.retry_after = retry_after


BACKOFF_MAX = 300.0  # seconds: the longest wait between failed model calls, whatever Retry-After asks


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """The wait an answer's `retry-after-ms` or `Retry-After` (seconds or an HTTP date) asks for, in
    seconds; None when it asks none or says it in no form we read."""
    if not headers:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = (headers.get(name) or "").strip()
        if not value:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            try:
                seconds = parsedate_to_datetime(value).timestamp() - time.time()
            except (TypeError, ValueError, IndexError, OverflowError):
                continue
        if math.isfinite(seconds):
            return max(0.0, seconds)
    return None


class Backoff:
    """Model calls failed in a row, and how long the loop waits before the next one. Why: every turn a
    message grants (maxNewInputLoops, 50) called a broken endpoint again after sleepInterval, so one
    message to an agent with a wrong key or an exhausted quota sent 50 requests in under a minute,
    a 429's Retry-After unheeded. The wait doubles from 1 s with each failure, at least what the
    endpoint asked for, at most BACKOFF_MAX; a call that succeeds ends it."""

    def __init__(self) -> None:
        self.failures = 0
        self.asked: float | None = None  # the endpoint's last Retry-After
        self.told: str | None = None  # the reason the user was last told, within this run of failures

    @property
    def delay(self) -> float:
        if not self.failures:
            return 0.0
        return min(BACKOFF_MAX, max(2.0 ** min(self.failures - 1, 16), self.asked or 0.0))

    def failed(self, reason: str, asked: float | None = None) -> bool:
        """Count a failure; True when the user should be told (the first in a row, or a new reason)."""
        self.failures += 1
        self.asked = asked
        tell, self.told = reason != self.told, reason
        return tell

    def succeeded(self) -> None:
        self.failures, self.asked, self.told = 0, None, None


@runtime_checkable
class LLM(Protocol):
    name: str

    def complete(self, prompt: str, message: str) -> str: ...


def call_in_thread(call: Callable[[], str], *, limit: float | None = None,
                   stopping: threading.Event | None = None, what: str = "model call") -> str:
    """`call()` in a daemon thread, waited for here until it ends, `limit` seconds pass or `stopping` is
    set; its exception is raised here. Why: an HTTP call or a console read cannot be interrupted, and
    an HTTP client's timeout bounds each read, not the call (a server trickling its body, or a 429
    asking to wait 20 s, held a turn that long); past the limit the thread is left to finish alone."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["reply"] = call()
        except BaseException as err:  # handed to the waiting thread
            box["error"] = err

    worker = threading.Thread(target=run, name=what.replace(" ", "-"), daemon=True)
    worker.start()
    ends = None if limit is None else time.monotonic() + limit
    while worker.is_alive():
        worker.join(0.05)
        if worker.is_alive() and stopping is not None and stopping.is_set():
            raise LLMError("abandoned: the agent is stopping")
        if worker.is_alive() and ends is not None and time.monotonic() >= ends:
            raise LLMError(f"timed out: no whole answer within llmTimeout ({limit:g} s)")
    if "error" in box:
        raise box["error"]
    return box["reply"]


class OpenAICompatible:
    """Any OpenAI-compatible chat endpoint: OpenAI, Anthropic's compatible API, Ollama, llama.cpp, vLLM."""

    def __init__(self, model: str, api_key: str, base_url: str | None, timeout: float, max_tokens: int) -> None:
        from openai import DefaultHttpxClient, OpenAI  # imported here: nothing heavy at import time

        self.name = f"openai-compatible:{model}"
        self.model = model
        self.max_tokens = max_tokens
        self.timeout = timeout  # for the whole call, retries and waits included (call_in_thread)
        # redirects are not followed: a 307 sent the whole prompt (pins, recalled memories, the person's
        # message) to whatever host the endpoint named, and that host's reply ran as the model's commands
        self._client = OpenAI(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=1,
                              http_client=DefaultHttpxClient(follow_redirects=False))
        self.last_usage: dict[str, int] | None = None  # token counts of the last call, when the endpoint gives them

    def complete(self, prompt: str, message: str) -> str:
        return call_in_thread(lambda: self._ask(prompt, message), limit=self.timeout)

    def _ask(self, prompt: str, message: str) -> str:
        """One request; whatever the endpoint got wrong is an LLMError saying what, so every caller (the
        turn, the dream's summariser) falls back the same way."""
        import openai

        try:
            answer = self._client.chat.completions.create(
                model=self.model,
                messages=[{"role": "system", "content": prompt}, {"role": "user", "content": message}],
                max_tokens=self.max_tokens,
            )
        except openai.APITimeoutError as err:
            raise LLMError(f"timed out: {err}") from err
        except openai.APIConnectionError as err:  # 'Connection error.' alone: refused? no such host? cut off?
            cause = err.__cause__
            why = f"{type(cause).__name__}: {cause}" if cause is not None and str(cause) else str(err)
            url = self._client.base_url
            where = url.host if url.port is None else f"{url.host}:{url.port}"
            raise LLMError(f"cannot reach {where} ({why})") from err
        except openai.APIStatusError as err:
            if err.response.is_redirect:
                where = err.response.headers.get("location", "")[:200]
                raise LLMError(f"the endpoint redirects ({err.status_code}) to {where!r}, which is not followed: the "
                               "prompt would go to an address you did not name; set base_url to it if it is right") from err
            if err.status_code == 404:  # a proxy's or server's page said only "Error code: 404", not where
                url = err.response.request.url  # no user:password, which would go into the trace and the prompt
                where = f"{url.scheme}://{url.host}{'' if url.port is None else f':{url.port}'}{url.path}"
                raise LLMError(f"{type(err).__name__}: {err} (at {where}: check base_url, and that the model "
                               f"{self.model!r} is served there)") from err
            raise LLMError(f"{type(err).__name__}: {err}", retry_after(err.response.headers)) from err
        except openai.OpenAIError as err:
            raise LLMError(f"{type(err).__name__}: {err}") from err
        except (ValueError, UnicodeError, RecursionError) as err:  # a body not JSON, not UTF-8, or nested past the decoder
            raise LLMError(f"the endpoint's answer could not be read: {type(err).__name__}: {err}") from err
        choices = getattr(answer, "choices", None)  # a 200 with a body that is not JSON comes back as text
        if not isinstance(choices, list):
            raise LLMError(f"the endpoint's answer is not a chat completion: {str(answer)[:200]!r}")
        if not choices:
            raise LLMError("the endpoint's answer holds no choices (an empty list): the model returned nothing")
        reply = getattr(choices[0], "message", None)
        content = _text_parts(getattr(reply, "content", None))
        if content is None:
            raise LLMError(_why_no_text(reply))
        if not isinstance(content, str):
            raise LLMError(f"the model's text is not a string but {type(content).__name__}")
        usage = getattr(answer, "usage", None)
        self.last_usage = None if usage is None else {  # for the turn log
            k: int(v) for k in ("prompt_tokens", "completion_tokens", "total_tokens")
            if isinstance(v := getattr(usage, k, None), int)}
        return content


def _text_parts(content: Any) -> Any:
    """A content given as a list of parts ([{"type": "text", "text": ...}], as some servers and
    reasoning models answer, a "thinking" part beside the text) as the text of its text parts; any
    other value as it is. Such an answer failed every call with 'not a string but list'."""
    if not isinstance(content, list):
        return content
    texts = [part["text"] for part in content if isinstance(part, dict) and part.get("type") in ("text", "output_text")
             and isinstance(part.get("text"), str)]
    return "".join(texts) if texts else content


def _why_no_text(reply: Any) -> str:
    """Why a chat completion's message has no text, as far as it says: a tool call (a model or server
    set up for function calling), a refusal, or nothing. All were 'the model returned no text', which
    sent the person looking at the network instead of at the model's settings."""
    calls = getattr(reply, "tool_calls", None) or []
    if isinstance(calls, list) and calls:
        names = ", ".join(str(getattr(getattr(c, "function", None), "name", None) or "?")[:40] for c in calls[:5])
        return (f"the model answered with a tool call ({names}) instead of text: this agent reads skill lines "
                "from the reply's text, so the endpoint must not be set up for function calling")
    refusal = getattr(reply, "refusal", None)
    if isinstance(refusal, str) and refusal.strip():
        return f"the model refused: {refusal.strip()[:300]}"
    return "the model returned no text (its message's content is null)"


class Scripted:
    """Replies from a file (blocks separated by lines of `---`) or a list; for tests and demos.

    A reply block reading `!error <text>` raises LLMError, so tests can exercise model failures.
    Once the script is used up every reply is empty (the agent does nothing).
    """

    name = "scripted"

    def __init__(self, replies: list[str]) -> None:
        self._replies: Iterator[str] = iter(list(replies))
        self.prompts: list[tuple[str, str]] = []
        self.keep_prompts = True

    @classmethod
    def from_file(cls, path: Path) -> Scripted:
        try:  # a pipe is read (`scriptFile=<(...)`), but at most one byte past the limit
            raw = read_capped(path, MAX_SCRIPT_MB * 2**20)
            if raw is None:
                raise ConfigError(f"scriptFile {str(path)!r} holds more than {MAX_SCRIPT_MB} MB; a script of replies "
                                  "is not that long")
            text = raw.decode("utf-8")
        except (OSError, UnicodeDecodeError) as err:  # missing, a folder, unreadable, not text
            raise ConfigError(f"scriptFile {str(path)!r} cannot be read as text: {getattr(err, 'strerror', None) or err}") from None
        text = text.replace("\r\n", "\n").replace("\r", "\n")  # as read_text's universal newlines did
        blocks, current = [], []
        for line in text.splitlines():
            if line.strip() == SCRIPT_SEPARATOR:
                blocks.append("\n".join(current))
                current = []
            else:
                current.append(line)
        blocks.append("\n".join(current))
        return cls([b.strip("\n") for b in blocks])

    def complete(self, prompt: str, message: str) -> str:
        if self.keep_prompts:
            self.prompts.append((prompt, message))
        reply = next(self._replies, "")
        if reply.startswith("!error"):
            raise LLMError(reply[len("!error") :].strip() or "scripted failure")
        return reply


class Console:
    """A person types the model's lines (finish with an empty line): the skill console."""

    name = "console"

    SHOWN = ("LAST_SKILL_USE_RESULTS", "PINNED")

    def __init__(self, read_line: Callable[[], str | None], out: TextIO = sys.stdout) -> None:
        self._read_line = read_line
        self._out = out

    def _sections(self, prompt: str) -> str:
        """The parts of the prompt a person at the console needs: what their last commands returned."""
        shown = []
        for block in prompt.split("\n\n"):
            title, _, body = block.partition(":\n")
            if title in self.SHOWN and body.strip():
                shown.append(f"{title}:\n{body}")
        return "\n".join(shown)

    def complete(self, prompt: str, message: str) -> str:
        context = self._sections(prompt)
        if context:
            self._out.write(context + "\n")
        self._out.write(f"{message}\n[you are the model] type skill lines (e.g. `send hi`), empty line to end:\n")
        self._out.flush()
        lines: list[str] = []
        while True:
            line = self._read_line()
            if line is None:
                if not lines:
                    raise LLMError("console closed (end of input)")
                break
            if not line.strip():
                break
            lines.append(line)
        return "\n".join(lines)


PRESETS = {
    "anthropic": ("https://api.anthropic.com/v1/", "ANTHROPIC_API_KEY"),
    "ollama": ("http://127.0.0.1:11434/v1", None),
}


def make_llm(
    config: Config,
    read_line: Callable[[], str | None],
    notice: Callable[[str], None],
    env: Mapping[str, str] | None = None,
) -> LLM:
    """Pick the provider; with `provider=auto` and no key, say so in one line and use the console."""
    provider = config.provider
    if provider == "scripted":
        if not config.scriptFile:
            raise ConfigError("provider 'scripted' needs the setting 'scriptFile'")
        return Scripted.from_file(Path(config.scriptFile))
    if provider == "console":
        return Console(read_line)
    base_url, key_env = config.base_url, config.apiKeyEnv
    if provider in PRESETS:
        preset_url, preset_env = PRESETS[provider]
        base_url = base_url or preset_url
        if preset_env and key_env == Config.model_fields["apiKeyEnv"].default:
            key_env = preset_env
    key = (os.environ if env is None else env).get(key_env) or None
    person_key = key is not None  # not Ollama's stand-in
    if provider == "ollama":
        key = key or "ollama"  # a local server takes any key
    if not key:
        if provider != "auto":
            raise ConfigError(f"provider {provider!r} needs an API key in the environment variable {key_env}")
        notice(f"No API key in ${key_env}: starting with the offline 'console' provider (you type the model's lines).")
        return Console(read_line)
    host = clear_text_host(base_url or "")
    if host and person_key:
        notice(f"warning: the API key in ${key_env} is sent to {host} in clear text (base_url is plain http://); "
               "use https, or a key meant for that server only")
    return OpenAICompatible(config.LLM, key, base_url, config.llmTimeout, config.llmMaxTokens)
