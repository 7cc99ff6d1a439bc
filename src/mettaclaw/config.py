"""One typed configuration: defaults < file < environment < `key=value` arguments.

Names follow the reference agent (`provider`, `LLM`, `maxNewInputLoops`, ...), so its users can carry
their settings over. Secrets never live here: only the *name* of the environment variable that holds a
key is configurable.
"""

from __future__ import annotations

import ipaddress
import json
import os
import sys
import tomllib
import urllib.parse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
)
from pydantic.fields import FieldInfo

ENV_PREFIX = "METTACLAW_"
DEFAULT_FILE = "mettaclaw.toml"


class ConfigError(ValueError):
    """A setting was unknown or had a bad value; the message names the key."""


# Every number has a range a working agent can use: an infinite timeout or a 30-digit budget is a typo,
# and is refused by name rather than failing later (sleep(inf) raised OverflowError mid-run).
HOUR, DAY = 3600.0, 86400.0
MANY = 1_000_000  # turns, loops, episodes
MAX_CHARS = 100_000_000


def _path_text(path: str) -> str:
    """A path the file system can take, refused here by name rather than failing at start-up with a
    traceback: a NUL byte (a ValueError from mkdir), `~name` of no such user (a RuntimeError)."""
    if "\x00" in path:
        raise ValueError("a path cannot hold a NUL character")
    try:
        Path(path).expanduser()
    except RuntimeError:
        raise ValueError(f"{path.split('/', 1)[0]!r} names no user's home folder") from None
    return path


MIN_TIMEOUT = 1.0  # seconds


def _timeout_floor(value: Any) -> Any:
    """A timeout under MIN_TIMEOUT is refused with why: `llmTimeout=1e-300` was taken, and every model
    call timed out at once (no connection is made in that time, let alone an answer), turn after turn.
    Checked before the range (which `--help` shows) to say so in words rather than as a bare bound."""
    if isinstance(value, bool):
        return value  # refused as no number by _Settings
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return value  # pydantic names what it is not
    if seconds < MIN_TIMEOUT:  # nan is not less than anything: left to the range check
        raise ValueError(f"a timeout is in seconds and at least {MIN_TIMEOUT:g} s; {value} s is too short for any "
                         "call to finish, so every one would time out at once")
    return value


# a timeout: at least MIN_TIMEOUT, at most an hour (an infinite one is a typo too)
Timeout = Annotated[float, BeforeValidator(_timeout_floor), Field(ge=MIN_TIMEOUT, le=HOUR)]


PathText = Annotated[str, AfterValidator(_path_text)]
Path_ = Annotated[PathText, Field(min_length=1, pattern=r"\S")]  # an empty path would mean "the current folder"


# A host, a model's name, the name of a variable: an empty one was taken, and meant something else. An
# empty mcpHost served the memory on every interface (asyncio's "" is all of them) where 127.0.0.1 was
# meant; an empty LLM or embeddingModel failed every call; an empty variable name can name no variable.
Host = Annotated[str, Field(min_length=1, pattern=r"^\S+$")]
Name = Annotated[str, Field(min_length=1, pattern=r"\S")]
VariableName = Annotated[str, Field(min_length=1, pattern=r"^[^\s=]+$")]


SCOPE_NAME = r"^[a-z0-9][a-z0-9_.:#@-]{0,63}$"


class _Settings(BaseModel):
    """What every table of settings refuses besides its fields' own limits."""

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_numbers(cls, value: Any, info: Any) -> Any:
        """TOML's `true` is not a number, but pydantic takes it as 1: `maxTurns = true` ran one turn and
        `maxEntries = true` would keep one record of a scope."""
        if isinstance(value, bool) and _accepts(cls.model_fields[info.field_name].annotation).startswith(("integer", "number")):
            raise ValueError(f"{value!r} is not a number")
        return value


class ScopePolicy(_Settings):
    """How long a scope's records live and how many it keeps (the dream evicts what is over)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, use_attribute_docstrings=True)
    ttlDays: float | None = Field(None, gt=0, le=36_500)
    """Days a record of the scope lives (empty: no limit)."""
    maxEntries: int | None = Field(None, gt=0, le=10**9)
    """Records the scope keeps; past it the lowest keep score goes first (empty: no cap)."""


class Lens(_Settings):
    """A saved query preset: `query lens:NAME PHRASE` searches with these filters."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, use_attribute_docstrings=True)
    layer: Literal["episodic", "semantic"] | None = None
    """Only what was said and done, or only facts (empty: both)."""
    tags: list[Annotated[str, Field(min_length=1, pattern=r"^[^|\s]+$")]] = []
    """Tags a hit must carry, every one of them."""
    sinceDays: float | None = Field(None, gt=0, le=36_500)
    """Only what is at most this many days old."""
    limit: int | None = Field(None, gt=0, le=1000)
    """Hits shown (empty: the query's own)."""


def _http_url(url: str, example: str) -> urllib.parse.SplitResult:
    """`url` split, when it is an http(s) URL with a host and a valid port; else ValueError saying so.
    A space or control character anywhere is refused: urlsplit skips leading blanks, so ' http://...'
    was taken and every call then failed in httpx as a URL with no http:// and no host."""
    if any(c.isspace() or not c.isprintable() for c in url):
        raise ValueError(f"{url!r} holds a space or control character; a URL such as {example} has none")
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port out of range or not a number
    except ValueError as err:
        raise ValueError(f"{url!r} is not a URL such as {example} ({err})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{url!r} is not an http(s) URL such as {example}")
    return parts


def clear_text_host(url: str) -> str | None:
    """The host a plain http:// `url` reaches across a network (None for https or this machine): what
    is sent there with a key or token travels in clear text."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        return None
    try:
        loopback = parts.hostname == "localhost" or ipaddress.ip_address(parts.hostname).is_loopback
    except ValueError:
        loopback = False
    return None if loopback else parts.hostname


def _json_object(value: Any) -> Any:
    """A table from the config file as is; from an argument or the environment, as a JSON object."""
    if isinstance(value, str):
        try:
            return json.loads(value or "{}")
        except json.JSONDecodeError as err:
            raise ValueError(f"not a JSON object: {err}") from None
        except RecursionError:  # `[[[[...` thousands deep: a traceback from the decoder, not a setting
            raise ValueError("not a JSON object: nested too deeply") from None
    return value


class Config(_Settings):
    """Every setting of the agent, the memory server and the inspector. Each field's docstring is its
    line in docs/configuration.md (`settings_markdown`), so the description lives beside the field."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=False, allow_inf_nan=False,
                              use_attribute_docstrings=True)

    # --- model provider
    provider: Literal["auto", "openai", "anthropic", "ollama", "scripted", "console"] = "auto"
    """`auto`: an OpenAI-compatible API when the key's variable is set, else `console` (you type the
    model's lines); `anthropic` and `ollama` preset their endpoint; `scripted` replies from `scriptFile`."""
    LLM: Name = "gpt-4o-mini"
    """The model's name, as the endpoint knows it."""
    base_url: str | None = None
    """The endpoint (empty: the provider's own). A key is sent to whatever host it names; over plain
    http:// to another machine start-up warns that it goes in clear text."""
    apiKeyEnv: VariableName = "OPENAI_API_KEY"
    """The variable holding the API key (keys are read from the environment only; `anthropic` reads
    ANTHROPIC_API_KEY unless this is changed)."""
    llmTimeout: Timeout = 60.0
    """Seconds one model call may take, retries and a slow body included."""
    llmMaxTokens: int = Field(1024, gt=0, le=1_000_000)
    """The reply's length in tokens (a broken endpoint's longer reply is cut at 16 characters a token)."""
    scriptFile: Path_ | None = None
    """Replies of the `scripted` provider: blocks split by lines of `---`."""

    # --- the loop (reference names and defaults)
    maxNewInputLoops: int = Field(50, ge=0, le=MANY)
    """Turns granted by a new message (and at start-up)."""
    maxWakeLoops: int = Field(1, ge=0, le=MANY)
    """Autonomous turns granted after `wakeupInterval` seconds without a message."""
    sleepInterval: float = Field(1.0, ge=0, le=DAY)
    """Seconds between turns."""
    wakeupInterval: float = Field(600.0, gt=0, le=30 * DAY)
    """Seconds idle before `maxWakeLoops` autonomous turns are granted."""
    maxFeedback: int = Field(50_000, gt=0, le=MAX_CHARS)
    """Characters of the last commands' results in the prompt."""
    maxHistory: int = Field(30_000, ge=0, le=MAX_CHARS)
    """Characters of the trace's tail in the prompt."""
    maxMessage: int = Field(30_000, gt=0, le=MAX_CHARS)
    """Characters of a turn's messages as the model reads them; a longer message is cut with a marker
    (the trace keeps it whole)."""
    maxCommands: int = Field(5, gt=0, le=1000)
    """Commands run from one reply; the rest are reported as skipped."""
    spamShield: bool = True
    """With no new message, tell the model not to message the user again without news."""
    maxTurns: int | None = Field(None, ge=0, le=10**12)
    """Stop after this many turns (empty: run until Ctrl-D or Ctrl-C)."""
    turnLogMB: int = Field(20, ge=0, le=10_000)
    """Size at which `memory/turns.jsonl` rotates, three old files kept (0: no turn log)."""

    # --- memory
    memoryDir: Path_ = "memory"
    """All state: the trace, the stores, pins, workspace, log and lock (one process per folder)."""
    maxRecallItems: int = Field(20, gt=0, le=1000)
    """Hits a `query` shows."""
    maxEpisodeRecallLines: int = Field(20, gt=0, le=10_000)
    """Trace records `episodes` shows on each side of a time."""
    recallMode: Literal["hybrid", "vector", "bm25"] = "hybrid"
    """The memory index's rankings: BM25 and vectors fused, or one of them."""
    embeddingprovider: Literal["local", "openai", "hash"] = "local"
    """`local`: all-MiniLM-L6-v2, offline; `openai`: `embeddingModel` over the API; `hash`: for tests.
    A store made with one embedder refuses another."""
    embeddingModel: Name = "text-embedding-3-small"
    """The model of the `openai` embedder."""
    chromaMode: Literal["embedded", "server", "memory"] = "embedded"
    """`embedded`: Chroma under memoryDir; `server`: a `chroma run` at chromaHost:chromaPort;
    `memory`: in process, nothing kept."""
    chromaHost: Host = "127.0.0.1"
    """The Chroma server's host (`chromaMode=server`)."""
    chromaPort: int = Field(8000, gt=0, lt=65536)
    """The Chroma server's port (`chromaMode=server`)."""
    knowledgePriorsDir: Path_ = "knowledge-priors"
    """Markdown indexed into long-term memory at start, split at its headings (docs/running.md)."""
    knowledgeChars: int = Field(1500, ge=0, le=MAX_CHARS)
    """Size of the prompt's KNOWLEDGE block of relevant facts (0: no block)."""
    knowledgeMs: float = Field(50.0, gt=0, le=10_000)
    """Time budget of the KNOWLEDGE block in ms: past it, fewer levels."""
    dreamEvery: int = Field(50, ge=1, le=MANY)
    """New episodes that start a dream."""
    dreamInterval: float = Field(3600.0, ge=0, le=30 * DAY)
    """Seconds between scheduled dreams (0: no schedule)."""
    sessionEndDream: float = Field(30.0, ge=0, le=3600)
    """Seconds closing the memory may dream over what no dream reached yet (0: not at all)."""

    # --- skills
    skillsDir: Path_ = "metta/skills"
    """User skill files (`.metta`); said in one line at start when it is not a folder."""
    workspaceDir: PathText = ""
    """Where the file and shell skills work (empty: <memoryDir>/workspace, so one setting moves all state)."""
    allowOutsideWorkspace: bool = False
    """true: `shell` is not confined to the workspace (it reads and writes what this user can)."""
    shellTimeout: Timeout = 5.0
    """Seconds a `shell` command may run."""
    maxSkillOutput: int = Field(20_000, gt=0, le=MAX_CHARS)
    """Characters of a skill's output the model reads."""
    mettaTimeout: Timeout = 10.0
    """Seconds a `metta` sandbox evaluation may run."""
    mettaMemoryMB: int = Field(1024, gt=64, le=1_048_576)
    """Memory of the `metta` sandbox process."""
    skillTimeout: Timeout = 10.0
    """Seconds one call of a user skill (metta/skills/) may run."""
    skillMemoryMB: int = Field(512, gt=0, le=1_048_576)
    """Memory one call of a user skill may add."""
    skillStackDepth: int = Field(10_000, ge=100, le=10_000_000)
    """hyperon's interpreter stack for a user skill (a recursion level takes 30-40 frames)."""

    # --- channel
    commchannel: Literal["terminal", "irc"] = "terminal"
    """Where messages come from and replies go: this terminal, or an IRC room (docs/running.md)."""
    ircHost: Host = "127.0.0.1"
    """The IRC server."""
    ircPort: int = Field(6667, gt=0, lt=65536)
    """The IRC server's port."""
    ircChannel: str = Field("#mettaclaw", pattern=r"^[#&][^\s,]+$")
    """The IRC room."""
    ircNick: str = Field("mettaclaw", pattern=r"^[A-Za-z\[\]\\`_^{|}][A-Za-z0-9\[\]\\`_^{|}-]*$")
    """The bot's nick (a nick in use gets `_` appended, and is taken back when free)."""
    ircSecretEnv: VariableName = "IRC_OWNER_SECRET"
    """The variable holding the owner's secret: with it set, only the nick that says `auth SECRET`
    is heard."""

    # --- memory over MCP (python -m mettaclaw.mcp)
    mcpTransport: Literal["stdio", "http"] = "stdio"
    """The memory server's transport (short name `transport`)."""
    mcpHost: Host = "127.0.0.1"
    """The HTTP server's host (short name `host`); another than loopback is served with a warning."""
    mcpPort: int = Field(8765, gt=0, lt=65536)
    """The HTTP server's port (short name `port`)."""
    mcpTokenEnv: VariableName = "MEMORY_MCP_TOKEN"
    """The variable holding the bearer token HTTP clients must send (at least 16 characters)."""
    mcpScope: str = Field("agent", pattern=SCOPE_NAME)
    """The one scope the server's tools read and write (short name `scope`)."""
    memoryServer: str = ""
    """The agent's memory on that memory server (http://127.0.0.1:8765/mcp, or https://...); its token
    from `mcpTokenEnv`."""

    # --- the inspector (a local web page over the running agent's memory; mettaclaw/inspector)
    ui: bool = False
    """true: serve the inspector beside the agent."""
    uiPort: int = Field(8766, gt=0, lt=65536)
    """The inspector's port, on 127.0.0.1 only."""
    uiTokenEnv: VariableName = "INSPECTOR_TOKEN"
    """The variable holding the inspector's token (unset: a new one each start)."""
    uiReadOnly: bool = True
    """false: a record's page may forget it, after a confirmation."""

    # --- scopes and lenses (tables in mettaclaw.toml, or JSON objects as arguments)
    scopePolicies: dict[Annotated[str, Field(pattern=SCOPE_NAME)], ScopePolicy] = {}
    """Per scope, how long its records live and how many it keeps (`ttlDays`, `maxEntries`)."""
    lenses: dict[Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,40}$")], Lens] = {}
    """Saved query presets: `query lens:NAME PHRASE` (`layer`, `tags`, `sinceDays`, `limit`)."""

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, url: str | None) -> str | None:
        """An endpoint a client can call: `notaurl` or `ftp://...` failed every model call, and
        `http://[::1` ended start-up in httpx's traceback."""
        if url is not None:
            _http_url(url, "http://127.0.0.1:8080/v1")
        return url

    @field_validator("memoryServer")
    @classmethod
    def _memory_server(cls, url: str) -> str:
        """https anywhere, plain http to this machine only: the bearer token must not cross a network in clear."""
        if not url:
            return url
        _http_url(url, "http://127.0.0.1:8765/mcp")
        if clear_text_host(url):
            raise ValueError(f"{url!r}: plain http only to this machine (127.0.0.1); the bearer token "
                             "would cross the network in clear text (use https)")
        return url

    @field_validator("scopePolicies", "lenses", mode="before")
    @classmethod
    def _tables(cls, value: Any) -> Any:
        return _json_object(value)

    def memory_path(self, *parts: str) -> Path:
        """Every piece of runtime state lives under memoryDir, so one setting moves it all."""
        return project_path(self.memoryDir).joinpath(*parts)

    def folder(self, name: str) -> Path:
        """A folder setting (`knowledgePriorsDir`, `skillsDir`, `workspaceDir`) as a path."""
        return project_path(getattr(self, name))


_FIELDS = set(Config.model_fields)
PROJECT_ROOT = Path(__file__).resolve().parents[2]


def project_path(value: str) -> Path:
    """A folder setting as a path: a relative one is taken from the project folder (where run.py is),
    so the agent finds its memory, priors and skills the same way from whatever folder it starts."""
    path = Path(value).expanduser()
    return path if path.is_absolute() else PROJECT_ROOT / path


def _accepts(annotation: Any) -> str:
    """A field's type in words: `one of a|b`, `number`, `integer`, `true/false`, `text`."""
    args = get_args(annotation)
    if get_origin(annotation) is Literal:
        return "one of " + "|".join(str(a) for a in args)
    if type(None) in args:
        return _accepts(next(a for a in args if a is not type(None))) + " or empty"
    if get_origin(annotation) is Annotated:
        return _accepts(args[0])
    if get_origin(annotation) is list:
        return "list of " + _accepts(args[0])
    if get_origin(annotation) is dict:
        return f"table of {args[1].__name__} (JSON object as an argument; see docs/configuration.md)"
    return {bool: "true/false", int: "integer", float: "number", str: "text"}.get(annotation, str(annotation))


def _number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else str(value)


def _takes(field: FieldInfo) -> str:
    """What values a field accepts, in words, with its limits: `integer (> 0, <= 1,000)`."""
    limits = [f"{op} {_number(getattr(m, attr))}" for m in field.metadata
              for op, attr in ((">", "gt"), (">=", "ge"), ("<", "lt"), ("<=", "le"), ("length >=", "min_length"))
              if getattr(m, attr, None) is not None]
    return _accepts(field.annotation) + (f" ({', '.join(limits)})" if limits else "")


def settings_table() -> str:
    """Every setting with its default and what values it takes, read off the model (so it cannot drift
    from what is accepted): what `python run.py --help` prints."""
    rows = [("name", "default", "accepts")]
    for name, field in Config.model_fields.items():
        rows.append((name, "" if field.default is None else str(field.default), _takes(field)))
    width = [max(len(r[i]) for r in rows) for i in range(2)]
    lines = [f"{a:<{width[0]}}  {b:<{width[1]}}  {c}" for a, b, c in rows]
    return ("Settings, as name=value arguments, METTACLAW_<name> environment variables or keys of "
            f"{DEFAULT_FILE} (later ones win: file < environment < arguments):\n\n" + "\n".join(lines))


DOCS_PAGE = "docs/configuration.md"
_PAGE_HEAD = """\
# Configuration

<!-- Generated from src/mettaclaw/config.py by `python -m mettaclaw.config --markdown > docs/configuration.md`;
     tests/test_config_docs.py fails when this page and the settings differ. Edit the fields' docstrings. -->

One typed configuration (`mettaclaw.config.Config`); each layer overrides the one before: defaults <
`mettaclaw.toml` (or the file named by `config=PATH` / `METTACLAW_CONFIG`) < environment variables
`METTACLAW_<name>` < `name=value` arguments to `run.py` (or to `python -m mettaclaw.mcp`). Unknown names
and bad values (out of range, infinite, an empty path, host, model or variable name, a timeout under
1 s) are refused with the name given. `python run.py --help` prints the same settings with their
defaults.

Relative folder settings (`memoryDir`, `knowledgePriorsDir`, `skillsDir`, `workspaceDir`) are taken from
the project folder (where `run.py` is), whatever folder the agent is started from. Tables
(`scopePolicies`, `lenses`) are TOML tables in `mettaclaw.toml` or JSON objects as arguments:

```sh
python run.py 'scopePolicies={"user:bob": {"ttlDays": 30, "maxEntries": 5000}}'
python run.py 'lenses={"work": {"tags": ["work"], "sinceDays": 14}}'
```
"""


def _cell(text: str) -> str:
    """`text` as one Markdown table cell: on one line, its pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _default_text(value: Any) -> str:
    """A default as a person would type it: `true`, `60`, `gpt-4o-mini`; empty for none."""
    if value is None or value == "" or value == {} or value == []:
        return ""
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"`{value}`"


def _markdown_table(model: type[BaseModel]) -> list[str]:
    lines = ["| name | default | accepts | what |", "|---|---|---|---|"]
    for name, field in model.model_fields.items():
        lines.append(f"| `{name}` | {_default_text(field.default)} | {_cell(_takes(field))} | "
                     f"{_cell(field.description or '')} |")
    return lines


def settings_markdown() -> str:
    """docs/configuration.md: every setting (and the fields of the `scopePolicies` and `lenses`
    tables) with its default, what it accepts and its docstring, read off the models like
    `settings_table`, so the page cannot drift from what is accepted."""
    parts = [_PAGE_HEAD, "## Settings", "", *_markdown_table(Config), ""]
    for model, setting in ((ScopePolicy, "scopePolicies"), (Lens, "lenses")):
        parts += [f"## Each table of `{setting}`", "", model.__doc__ or "", "", *_markdown_table(model), ""]
    return "\n".join(parts)


def _coerce_env(raw: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key.startswith(ENV_PREFIX) and key != ENV_PREFIX + "CONFIG":
            out[key[len(ENV_PREFIX) :]] = value
    return out


def parse_args(args: Sequence[str]) -> dict[str, str]:
    """`key=value` arguments as given to run.py; anything else is refused with its text."""
    out: dict[str, str] = {}
    for arg in args:
        key, sep, value = arg.partition("=")
        if not sep or not key:
            raise ConfigError(f"argument {arg!r} is not of the form key=value")
        out[key.strip()] = value
    return out


def _validate(layers: list[tuple[str, Mapping[str, Any]]]) -> Config:
    merged: dict[str, Any] = {}
    for origin, layer in layers:
        for key, value in layer.items():
            if key not in _FIELDS:
                raise ConfigError(f"unknown setting {key!r} (from {origin}); known: {', '.join(sorted(_FIELDS))}")
            merged[key] = None if value == "" and Config.model_fields[key].default is None else value
    try:
        return Config.model_validate(merged)
    except ValidationError as err:
        first = err.errors()[0]
        key = ".".join(str(p) for p in first["loc"]) or "?"
        got = repr(first.get("input"))
        got = got if len(got) <= 200 else got[:200] + f"... ({len(got):,} characters)"  # the line stays readable
        raise ConfigError(f"bad value for setting {key!r}: {first['msg']} (got {got})") from None


def load_config(
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    file: str | os.PathLike[str] | None = None,
) -> Config:
    """Build the config from its four layers; any bad key or value raises ConfigError naming it."""
    env = os.environ if env is None else env
    cli = parse_args(args)
    # an empty value names no file, from the environment (`METTACLAW_CONFIG=` in a service file) as
    # from an argument: it was refused as a missing 'mettaclaw.toml' the user never named
    path = cli.pop("config", None) or file or env.get(ENV_PREFIX + "CONFIG") or None
    file_values: dict[str, Any] = {}
    if path is not None or Path(DEFAULT_FILE).is_file():
        chosen = Path(path or DEFAULT_FILE)
        try:  # a name past the system's limit raised out of is_file: a traceback
            regular, there = chosen.is_file(), chosen.exists()
        except OSError as err:
            raise ConfigError(f"config file {str(chosen)!r} cannot be read: {err.strerror or err}") from None
        if not regular:  # a folder or a device was said not to exist; a device is not read (/dev/zero never ends)
            raise ConfigError(f"config file {str(chosen)!r} " + ("is not a file" if there else "does not exist"))
        try:
            # utf-8-sig: Windows editors begin a file with a byte-order mark, and TOML has it as an
            # "Invalid statement (at line 1, column 1)" the person cannot see
            file_values = tomllib.loads(chosen.read_text(encoding="utf-8-sig"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
            raise ConfigError(f"config file {str(chosen)!r} is not valid TOML: {err}") from None
        except RecursionError:
            raise ConfigError(f"config file {str(chosen)!r} is not valid TOML: nested too deeply") from None
        except OSError as err:  # there but unreadable (permissions, a device): the user's to fix, not a traceback
            raise ConfigError(f"config file {str(chosen)!r} cannot be read: {err.strerror or err}") from None
    return _validate([(f"file {path or DEFAULT_FILE}", file_values), ("environment", _coerce_env(env)), ("arguments", cli)])


def main(argv: Sequence[str]) -> int:
    """`python -m mettaclaw.config --markdown`: print docs/configuration.md (the settings, generated)."""
    if list(argv) != ["--markdown"]:
        print("usage: python -m mettaclaw.config --markdown > " + DOCS_PAGE, file=sys.stderr)
        return 2
    print(settings_markdown(), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
