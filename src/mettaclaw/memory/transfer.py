"""Export a whole memory as JSON lines, and import such a file into an empty memory folder.

What is written is what cannot be derived again, with its provenance: the trace line by line (episode
ids are byte offsets, so the lines keep their exact bytes, blanks of erased records included), the
memories the agent or a client stored, every semantic record (every version, with its source episodes
and validity interval), every edge, every record's write log, the relation types, the pins and the
dream's progress. What is derived is not written but rebuilt on import: episode rows (from the trace),
the index copies of facts (from the records), knowledge priors (from their files) and every vector,
computed by the importing folder's embedder, whichever it is.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Iterable, Iterator
from typing import IO, Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model

from mettaclaw.memory.core import scopes
from mettaclaw.memory.core.tags import tag_keys
from mettaclaw.memory.episodes.trace import EpisodicTrace
from mettaclaw.memory.index.priors import PRIOR_KIND
from mettaclaw.memory.index.rows import RESERVED_KEYS

FORMAT = "mettaclaw-memory/2"  # 2: the last line is an `end` line, so an export cut short is told apart
FORMATS = ("mettaclaw-memory/1", FORMAT)  # 1: written before the end line; imported as it is
UNFINISHED = "import-unfinished"  # in a folder an import is filling; removed when it is complete
REBUILT_KINDS = frozenset({"episode", "derived", PRIOR_KIND})  # index rows that are derived, not stored


class ImportError_(ValueError):
    """The file is not an export, or the folder is not empty; nothing was written."""


def export_lines(memory: Any, config: Any) -> Iterator[dict[str, Any]]:
    """Every line of an export, header first."""
    yield {"type": "header", "format": FORMAT, "embedder": memory.index.stats()["embedder"]}
    with memory.lock:
        with open(memory.trace.path, "rb") as fh:
            for raw in fh:
                yield {"type": "trace", "line": raw.rstrip(b"\n").decode("utf-8", errors="surrogateescape")}
        for row in memory.index:
            if row.kind in REBUILT_KINDS:
                continue
            extra = {k: v for k, v in row.meta.items() if k not in RESERVED_KEYS and k not in tag_keys(row.tags)}
            yield {"type": "memory", "id": row.id, "text": row.text, "time": row.time, "source": row.source,
                   "kind": row.kind, "tags": list(row.tags), "atom": row.atom, "extra": extra}
        records = memory.semantic.records
        for name, (symmetric, builtin) in records.relation_types().items():
            yield {"type": "relation_type", "name": name, "symmetric": symmetric, "builtin": builtin}
        for rec in records.iter_records():
            yield {"type": "record", **rec.to_dict()}
            for version in records.versions(rec.id):
                yield {"type": "version", **version}
        for edge in records.iter_edges():
            yield {"type": "edge", "edge": vars(edge)}  # nested: an edge has a `type` of its own
    for scope, text in memory.working.pinned().items():
        yield {"type": "pins", "text": text, **({} if scope == scopes.DEFAULT else {"scope": scope})}
    state = config.memory_path("dream", "state.json")
    if state.is_file():
        yield {"type": "dream_state", "state": json.loads(state.read_text(encoding="utf-8"))}


def write_export(memory: Any, config: Any, out: IO[str]) -> int:
    """Write the export to `out`, ending with a line that counts the lines before it; the number of
    lines. Why the end line: the output is written a buffer of whole lines at a time, so an export
    killed or stopped halfway left a file that ended on a whole line and was imported as a memory
    (a part of it) without a word."""
    count = 0
    for line in export_lines(memory, config):
        out.write(json.dumps(line) + "\n")  # ASCII escapes: a trace's undecodable bytes travel as \\udcXX
        count += 1
    out.write(json.dumps({"type": "end", "lines": count}) + "\n")
    return count + 1


def _on_calendar(value: Any) -> Any:
    """A time (seconds) every reader can show: `format_time` of 1e20 raised OverflowError when the
    imported record was mirrored, after the folder had been written."""
    from mettaclaw.memory.core.times import format_time

    for ts in value if isinstance(value, list) else [value]:
        try:
            format_time(ts)
        except (OverflowError, OSError, ValueError):
            raise ValueError(f"time {ts!r} is not on the calendar") from None
    return value


_TIME = AfterValidator(_on_calendar)
_UNIT = Field(ge=0, le=1)
# What a record's fields may hold beyond their types; what the agent's own writes can never make.
_RECORD_CHECKS: dict[str, Any] = {
    "confidence": _UNIT, "valid_from": _TIME, "valid_to": _TIME, "recorded_at": _TIME, "last_updated": _TIME,
    "source_times": _TIME, "access_times": _TIME,
}


class _Line(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class _Trace(_Line):
    type: Literal["trace"]
    line: str


def _row_time(value: str | None) -> str | None:
    """A memory's time as the index parses it (a bad one raised only while the import wrote)."""
    from mettaclaw.memory.core.times import time_key

    if value is not None:
        time_key(value)
    return value


def _stored_kind(value: str) -> str:
    if value in REBUILT_KINDS:
        raise ValueError(f"kind {value!r} is rebuilt on import, not imported")
    return value


def _not_episode_id(value: str) -> str:
    """A memory may not take an episode's id: its row would replace that episode's in the index."""
    from mettaclaw.memory.episodes.records import record_offset

    if record_offset(value, ("ep-", "act-")) is not None:
        raise ValueError(f"id {value!r} is an episode's id")
    return value


class _Row(_Line):
    type: Literal["memory"]
    id: Annotated[str, Field(min_length=1), AfterValidator(_not_episode_id)]
    text: str = Field(min_length=1)
    time: Annotated[str | None, AfterValidator(_row_time)] = None
    source: str
    kind: Annotated[str, Field(min_length=1), AfterValidator(_stored_kind)]
    tags: list[str]
    atom: str | None = None
    extra: dict[str, str | int | float | bool]


class _Version(_Line):
    type: Literal["version"]
    record_id: str
    action: str
    at: Annotated[float, _TIME]
    snapshot: dict[str, Any]


class _RelationType(_Line):
    type: Literal["relation_type"]
    name: str = Field(min_length=1)
    symmetric: bool
    builtin: bool


class _End(_Line):
    type: Literal["end"]
    lines: int = Field(ge=1)  # the lines before it, the header included


class _Other(_Line):
    model_config = ConfigDict(extra="allow")
    type: Literal["header", "record", "edge", "pins", "dream_state"]


# tagged by `type`, so an error names the field of the line's own kind (not 38 errors, one per kind tried)
_LINE: TypeAdapter[Any] = TypeAdapter(Annotated[_Trace | _Row | _Version | _RelationType | _End | _Other,
                                                Field(discriminator="type")])


@functools.cache
def _record_line() -> type[BaseModel]:
    """A record line's schema, read off SemanticRecord's own fields (so it cannot drift from them)."""
    import dataclasses
    import typing

    from mettaclaw.memory.semantic.records import KINDS, SemanticRecord

    hints = typing.get_type_hints(SemanticRecord)
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(SemanticRecord):
        if f.name == "embedding":
            continue
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else ...)
        hint = list[float] | None if f.name == "truth" else hints[f.name]  # a tuple travels as a list
        if f.name == "kind":
            hint = Literal[KINDS]  # a record of another kind is neither mirrored nor recalled
        elif f.name in _RECORD_CHECKS:
            hint = Annotated[hint, _RECORD_CHECKS[f.name]]
        fields[f.name] = (hint, default)
    return create_model("RecordLine", __config__=ConfigDict(extra="forbid", allow_inf_nan=False),
                        type=(Literal["record"], ...), **fields)


def _check_edge(edge: Any) -> None:
    if not isinstance(edge.weight, int | float) or not 0 <= edge.weight <= 1:
        raise ValueError(f"edge weight {edge.weight!r} is not in [0, 1]")
    for ts in (edge.created_at, edge.last_co_access):
        _on_calendar(ts)


def _cause(err: Exception) -> str:
    """What is wrong, named: pydantic's first line only counts the errors ("1 validation error for ...")."""
    if isinstance(err, ValidationError) and (errors := err.errors()):
        where = ".".join(str(part) for part in errors[0]["loc"])
        return f"{where}: {errors[0]['msg']}" if where else errors[0]["msg"]
    return str(err).splitlines()[0] if str(err) else type(err).__name__


def read_export(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """The export's lines as objects, each checked; ImportError_ naming the first line that is not what
    an export holds (so that an import stops before it writes anything)."""
    from mettaclaw.memory.core.times import check_time
    from mettaclaw.memory.episodes.records import parse_record
    from mettaclaw.memory.semantic.records import Edge

    first_seen: dict[str, int] = {}  # a memory's or record's id -> the line that gave it
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            item = json.loads(text)
        except json.JSONDecodeError as err:
            raise ImportError_(f"line {number} is not JSON: {err}") from None
        if number == 1 and (not isinstance(item, dict) or item.get("type") != "header" or item.get("format") not in FORMATS):
            raise ImportError_(f"not a mettaclaw memory export (the first line must be a {FORMAT} header)")
        try:
            _LINE.validate_python(item)
            if item["type"] == "record":
                _record_line().model_validate(item)
            elif item["type"] == "edge":
                _check_edge(Edge(**item["edge"]))
            elif item["type"] == "trace" and (episode := parse_record(item["line"], 0)) is not None:
                check_time(episode.time)  # a record no reader can parse back would stop the folder opening
            elif item["type"] in ("pins", "dream_state") and not isinstance(item.get("text", item.get("state")), str | dict):
                raise ValueError(f"a {item['type']} line has no content")
            elif item["type"] == "pins":
                scopes.check(str(item.get("scope", scopes.DEFAULT)))
            # a second line with one id silently replaced the first
            if (item["type"] in ("memory", "record") and "id" in item
                    and (earlier := first_seen.setdefault(str(item["id"]), number)) != number):
                raise ValueError(f"id {item['id']!r} was already given on line {earlier}")
        except (ValidationError, TypeError, ValueError, KeyError) as err:
            first = _cause(err)[:200]
            raise ImportError_(f"line {number} is not a valid {str(item.get('type', 'line'))[:20]!r}: {first}") from None
        yield item


def check_whole(items: list[dict[str, Any]], shown: str) -> None:
    """ImportError_ unless the export read from `shown` is whole: its last line, and only that, is the end
    line, which counts the lines before it (an export of format 1, made before there was one, is taken
    as it is)."""
    if not items or items[0].get("format") != FORMAT:
        return
    ends = [n for n, item in enumerate(items) if item["type"] == "end"]
    if not ends:
        raise ImportError_(f"{shown} is cut short: it has no end line, so it holds only the start of an export "
                           "(one stopped or killed before it finished, or a copy cut short); export again")
    if ends != [len(items) - 1]:
        raise ImportError_(f"{shown} goes on after its end line (two exports joined, or lines added); export again")
    if items[-1]["lines"] != len(items) - 1:
        raise ImportError_(f"{shown} has {len(items) - 1} lines before its end line, which counts "
                           f"{items[-1]['lines']}: lines were lost or added; export again")


def unfinished(config: Any) -> str | None:
    """Why the folder must not be used, when an import into it did not finish (killed, Ctrl-C, a full
    disk): it holds part of the memory, and an agent on it would answer from that part as if it were all."""
    if not config.memory_path(UNFINISHED).exists():
        return None
    return (f"an import into {config.memory_path()} did not finish, so it holds only part of that memory: "
            "delete the folder and run the import again")


def check_folder(config: Any) -> None:
    """ImportError_ when the folder holds memory (a trace, a store, the dream's progress, pins) or an
    unfinished import: an import fills an empty folder, and never writes over what it holds. Pins
    were not looked at, and the export's replaced the person's working memory without a word."""
    from .working import WorkingMemory

    trace = config.memory_path("history.metta")
    if (why := unfinished(config)) is not None:
        raise ImportError_(why)
    if ((trace.is_file() and trace.stat().st_size) or config.memory_path("dream", "state.json").exists()
            or any(config.memory_path().glob("**/*.sqlite3"))):
        raise ImportError_(f"{config.memory_path()} already holds a memory: import into an empty memoryDir")
    working = WorkingMemory(config.memory_path("pins.txt"))
    if pinned := [str(working.file_of(scope)) for scope in working.pinned()]:
        raise ImportError_(f"{config.memory_path()} already holds pins ({', '.join(pinned)}): import into an "
                           "empty memoryDir, or move them out of it first")


class Undo:
    """What an import adds to the memory folder, taken away again when it fails, and nothing else: the
    folder and its parents when it made them; in a folder that was there, the entries that were not
    (and the trace, empty before, emptied again). A failed import left its agent.log, or a half-filled
    folder, behind.

    Made before anything is written, it takes the folder's lock (AgentLocked when another process holds
    it) and keeps it until `undo()` or `release()`: the folder is checked and filled under it. Checked
    and written before the lock was taken, an import beside an agent on the folder replaced the agent's
    trace and marked its folder unfinished, then told the person to delete it.

    With `chromaMode=server` the collections the import made on the server for this folder go too: a
    failed import left them holding its rows, claimed with the folder's id, which went with the folder,
    so every later import into the folder was refused as "another memory folder"."""

    def __init__(self, config: Any) -> None:
        from mettaclaw.memory.stores.lock import FolderLock

        self.server: tuple[Any, set[str]] | None = None  # the Chroma server's client and its collections before
        self.where = f"the Chroma server {config.chromaHost}:{config.chromaPort}"
        if config.chromaMode == "server":
            from mettaclaw.memory.stores.chroma import server_client

            # not answering: the import fails opening its stores, and there is nothing of it to remove
            with contextlib.suppress(Exception):
                client = server_client(config.chromaHost, config.chromaPort)
                self.server = client, {c.name for c in client.list_collections()}
        self.folder = config.memory_path()
        self.trace = config.memory_path("history.metta")
        self.made = None if self.folder.exists() or self.folder.is_symlink() else self.folder
        while self.made is not None and not self.made.parent.exists():
            self.made = self.made.parent  # the first folder that was not there: it goes, with what it holds
        self.before = set(self.folder.rglob("*")) if self.made is None and self.folder.is_dir() else set()
        # emptied again only when it was empty: a folder refused under the lock keeps its trace
        self.trace_was_empty = self.trace in self.before and self.trace.stat().st_size == 0
        try:
            self.lock = FolderLock(self.folder)
        except BaseException:
            self._remove_made()
            raise

    def release(self) -> None:
        """The import is done: the folder is the agent's to take."""
        self.lock.release()

    def undo(self) -> str | None:
        """Remove what the import added and release the folder; None when it is done, else why it was not."""
        from mettaclaw.memory.stores.chroma import claimed_by

        own = {self.lock.path, self.lock.holder_path}
        marker = self.folder / UNFINISHED
        try:
            if self.server is not None:  # before the files: the folder's id is one of them
                client, existed = self.server
                try:
                    for name in sorted(claimed_by(client, self.folder) - existed):
                        client.delete_collection(name)
                except Exception as err:  # the server gone, or refusing: said, and the folder kept with its id
                    return f"its collections on {self.where} could not be removed: {err}"
            # deepest first, the unfinished mark last: stopped half way, what is left still says so
            for path in sorted(set(self.folder.rglob("*")) - self.before - own - {marker}, reverse=True):
                if path.is_dir() and not path.is_symlink():
                    path.rmdir()
                else:
                    path.unlink()
            if self.trace_was_empty:
                self.trace.write_bytes(b"")
            if marker not in self.before:
                marker.unlink(missing_ok=True)
        except OSError as err:
            return f"{err.strerror or err} ({err.filename})"
        finally:
            self.lock.release()
        for path in own - self.before:
            path.unlink(missing_ok=True)
        return self._remove_made()

    def _remove_made(self) -> str | None:
        """Remove the folders the import made (empty by now); None, else why not."""
        folder = self.folder
        try:
            while self.made is not None and folder.is_relative_to(self.made):
                with contextlib.suppress(FileNotFoundError):  # a lock refused before it made the folder
                    folder.rmdir()
                folder = folder.parent
        except OSError as err:
            return f"{err.strerror or err} ({folder})"
        return None


def prepare_folder(config: Any, items: list[dict[str, Any]]) -> None:
    """Before the memory is opened, under the folder's lock (Undo): refuse a folder that holds memory,
    then mark it as being filled (`finish` removes the mark) and write the trace and the dream's
    progress, so that opening indexes the episodes as it does after a crash."""
    from mettaclaw.textutil import atomic_write

    trace = config.memory_path("history.metta")
    check_folder(config)
    atomic_write(config.memory_path(UNFINISHED), "python -m mettaclaw.memory import has not finished filling this folder\n")
    with open(trace, "wb") as fh:
        for item in items:
            if item["type"] == "trace":
                fh.write(item["line"].encode("utf-8", errors="surrogateescape") + b"\n")
    EpisodicTrace(trace).note_runs()  # where its clock went back, as appending would have noted
    for item in items:
        if item["type"] == "dream_state":
            state = config.memory_path("dream", "state.json")
            state.parent.mkdir(parents=True, exist_ok=True)
            state.write_text(json.dumps(item["state"]), encoding="utf-8")


def finish(config: Any) -> None:
    """The import is complete and its memory closed: the folder may be used."""
    config.memory_path(UNFINISHED).unlink()


def restore(memory: Any, items: list[dict[str, Any]]) -> dict[str, int]:
    """Into the opened memory: memories, records (re-embedded), edges, versions, relation types, pins."""
    from mettaclaw.memory.semantic.records import Edge, SemanticRecord

    by_type: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        by_type.setdefault(item.pop("type"), []).append(item)
    with memory.lock:
        rows = by_type.get("memory", [])
        if rows:
            memory.index.remember_many(rows)
        records = memory.semantic.records
        for rel in by_type.get("relation_type", []):
            records.put_relation_type(rel["name"], rel["symmetric"], rel["builtin"])
        memory.semantic.restore([SemanticRecord.from_dict(r) for r in by_type.get("record", [])])
        for edge in by_type.get("edge", []):
            records.put_edge(Edge(**edge["edge"]))
        for version in by_type.get("version", []):
            records.log_version(version["record_id"], version["action"], version["at"], version["snapshot"])
        for pins in by_type.get("pins", []):
            memory.working.pin(pins["text"], scopes.check(str(pins.get("scope", scopes.DEFAULT))))
    memory.sync_mirror()
    return {kind: len(found) for kind, found in by_type.items() if kind not in ("header", "end")}
