"""One typed configuration: defaults < file < environment < `key=value` arguments.

Names follow the reference agent (`provider`, `LLM`, `maxNewInputLoops`, ...), so its users can carry
their settings over. Secrets never live here: only the *name* of the environment variable that holds a
key is configurable.
"""

from __future__ import annotations

import ipaddress
import json
import os
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

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    ttlDays: float | None = Field(None, gt=0, le=36_500)
    maxEntries: int | None = Field(None, gt=0, le=10**9)


class Lens(_Settings):
    """A saved query preset: `query lens:NAME PHRASE` searches with these filters."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    layer: Literal["episodic", "semantic"] | None = None
    tags: list[Annotated[str, Field(min_length=1, pattern=r"^[^|\s]+$")]] = []
    sinceDays: float | None = Field(None, gt=0, le=36_500)
    limit: int | None = Field(None, gt=0, le=1000)


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
    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=False, allow_inf_nan=False)

    # --- model provider
    provider: Literal["auto", "openai", "anthropic", "ollama", "scripted", "console"] = "auto"
    LLM: Name = "gpt-4o-mini"
    base_url: str | None = None
    apiKeyEnv: VariableName = "OPENAI_API_KEY"
    llmTimeout: Timeout = 60.0
    llmMaxTokens: int = Field(1024, gt=0, le=1_000_000)
    scriptFile: Path_ | None = None

    # --- the loop (reference names and defaults)
    maxNewInputLoops: int = Field(50, ge=0, le=MANY)
    maxWakeLoops: int = Field(1, ge=0, le=MANY)
    sleepInterval: float = Field(1.0, ge=0, le=DAY)
    wakeupInterval: float = Field(600.0, gt=0, le=30 * DAY)
    maxFeedback: int = Field(50_000, gt=0, le=MAX_CHARS)
    maxHistory: int = Field(30_000, ge=0, le=MAX_CHARS)
    maxMessage: int = Field(30_000, gt=0, le=MAX_CHARS)  # a turn's messages as the model reads them (the trace keeps them whole)
    maxCommands: int = Field(5, gt=0, le=1000)
    spamShield: bool = True
    maxTurns: int | None = Field(None, ge=0, le=10**12)
    turnLogMB: int = Field(20, ge=0, le=10_000)  # memory/turns.jsonl rotates past this size; 0: no turn log

    # --- memory
    memoryDir: Path_ = "memory"
    maxRecallItems: int = Field(20, gt=0, le=1000)
    maxEpisodeRecallLines: int = Field(20, gt=0, le=10_000)
    recallMode: Literal["hybrid", "vector", "bm25"] = "hybrid"
    embeddingprovider: Literal["local", "openai", "hash"] = "local"
    embeddingModel: Name = "text-embedding-3-small"
    chromaMode: Literal["embedded", "server", "memory"] = "embedded"
    chromaHost: Host = "127.0.0.1"
    chromaPort: int = Field(8000, gt=0, lt=65536)
    knowledgePriorsDir: Path_ = "knowledge-priors"
    knowledgeChars: int = Field(1500, ge=0, le=MAX_CHARS)
    knowledgeMs: float = Field(50.0, gt=0, le=10_000)  # time budget of the KNOWLEDGE block: past it, fewer levels
    dreamEvery: int = Field(50, ge=1, le=MANY)  # new episodes that trigger a dream
    dreamInterval: float = Field(3600.0, ge=0, le=30 * DAY)  # seconds between scheduled dreams; 0: no schedule
    sessionEndDream: float = Field(30.0, ge=0, le=3600)  # seconds the end of a session may dream; 0: none

    # --- skills
    skillsDir: Path_ = "metta/skills"
    workspaceDir: PathText = ""  # empty: <memoryDir>/workspace, so one setting moves all state
    allowOutsideWorkspace: bool = False
    shellTimeout: Timeout = 5.0
    maxSkillOutput: int = Field(20_000, gt=0, le=MAX_CHARS)
    mettaTimeout: Timeout = 10.0
    mettaMemoryMB: int = Field(1024, gt=64, le=1_048_576)
    skillTimeout: Timeout = 10.0  # one call of a user skill (metta/skills/)
    skillMemoryMB: int = Field(512, gt=0, le=1_048_576)  # the memory one user skill call may add
    skillStackDepth: int = Field(10_000, ge=100, le=10_000_000)  # hyperon's max-stack-depth for a user skill

    # --- channel
    commchannel: Literal["terminal", "irc"] = "terminal"
    ircHost: Host = "127.0.0.1"
    ircPort: int = Field(6667, gt=0, lt=65536)
    ircChannel: str = Field("#mettaclaw", pattern=r"^[#&][^\s,]+$")
    ircNick: str = Field("mettaclaw", pattern=r"^[A-Za-z\[\]\\`_^{|}][A-Za-z0-9\[\]\\`_^{|}-]*$")
    ircSecretEnv: VariableName = "IRC_OWNER_SECRET"  # the owner's secret is read from this variable only

    # --- memory over MCP (python -m mettaclaw.mcp)
    mcpTransport: Literal["stdio", "http"] = "stdio"
    mcpHost: Host = "127.0.0.1"
    mcpPort: int = Field(8765, gt=0, lt=65536)
    mcpTokenEnv: VariableName = "MEMORY_MCP_TOKEN"  # HTTP clients must send this variable's value as a bearer token
    mcpScope: str = Field("agent", pattern=SCOPE_NAME)  # the one scope its tools read and write
    memoryServer: str = ""  # an agent's memory on that MCP server (http://127.0.0.1:8765/mcp), token from mcpTokenEnv

    # --- the inspector (a local web page over the running agent's memory; mettaclaw/inspector)
    ui: bool = False
    uiPort: int = Field(8766, gt=0, lt=65536)  # served on 127.0.0.1 only
    uiTokenEnv: VariableName = "INSPECTOR_TOKEN"  # the page asks for this variable's value; unset: a new one each start
    uiReadOnly: bool = True  # false: a record's page may forget it (after a confirmation)

    # --- scopes and lenses (tables in mettaclaw.toml, or JSON objects as arguments)
    scopePolicies: dict[Annotated[str, Field(pattern=SCOPE_NAME)], ScopePolicy] = {}
    lenses: dict[Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,40}$")], Lens] = {}

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
    if get_origin(annotation) is dict:
        return f"table of {args[1].__name__} (JSON object as an argument; see README)"
    return {bool: "true/false", int: "integer", float: "number", str: "text"}.get(annotation, str(annotation))


def _number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else str(value)


def settings_table() -> str:
    """Every setting with its default and what values it takes, read off the model (so it cannot drift
    from what is accepted): what `python run.py --help` prints."""
    rows = [("name", "default", "accepts")]
    for name, field in Config.model_fields.items():
        limits = [f"{op} {_number(getattr(m, attr))}" for m in field.metadata
                  for op, attr in ((">", "gt"), (">=", "ge"), ("<", "lt"), ("<=", "le"), ("length >=", "min_length"))
                  if getattr(m, attr, None) is not None]
        accepts = _accepts(field.annotation) + (f" ({', '.join(limits)})" if limits else "")
        rows.append((name, "" if field.default is None else str(field.default), accepts))
    width = [max(len(r[i]) for r in rows) for i in range(2)]
    lines = [f"{a:<{width[0]}}  {b:<{width[1]}}  {c}" for a, b, c in rows]
    return ("Settings, as name=value arguments, METTACLAW_<name> environment variables or keys of "
            f"{DEFAULT_FILE} (later ones win: file < environment < arguments):\n\n" + "\n".join(lines))


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
