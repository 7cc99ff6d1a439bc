"""SQLite record store: records, tags, source episodes, edges, relation types and versions in one
file (stdlib sqlite3, WAL), each write a transaction, lexical search by FTS5's BM25.

WAL with synchronous=NORMAL survives a killed process without losing a committed write; a power cut
may lose the last few commits (set `synchronous="FULL"` to trade latency for that).
"""

from __future__ import annotations

import contextlib
import errno
import json
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from mettaclaw.memory.core.text import TERMS_VERSION, query_terms, terms

from .records import Edge, SemanticRecord
from .sqlite_schema import SCHEMA
from .store import Link, RecordFilter, links

_COLUMNS = ("id, kind, name, name_norm, content, content_key, category, confidence, valid_from, valid_to, "
            "recorded_at, lineage, subject, relation, data, embedding")
_EDGE_COLUMNS = "src, dst, type, weight, co_access, last_co_access, created_at, src_layer, dst_layer"
LINK_CACHE = 50_000  # nodes whose links are kept in memory (cleared whole when full)
FTS_FORMAT = ("fts_format", f"terms-{TERMS_VERSION}")  # FTS5 holds memory.text.terms, so both stores read words alike


def fts_text(name: str, content: str) -> str:
    return " ".join(terms(f"{name} {content}"))


def _row_to_record(row: sqlite3.Row) -> SemanticRecord:
    blob = row["embedding"]
    vec = None if blob is None else np.frombuffer(blob, dtype=np.float32).copy()
    return SemanticRecord.from_dict(json.loads(row["data"]), vec)


def unopenable(path: Path, err: sqlite3.Error) -> OSError:
    """Why SQLite could not open or write the store at all (a folder in the file's place, a file or folder
    this user may not write), as an OSError naming the file, which the entry points say in one line: it
    came out of sqlite3 as a traceback that named no file."""
    return OSError(errno.EACCES, f"SQLite cannot open the semantic store ({err}): it must be a file this user "
                                 "can read and write, in a folder it can write", str(path))


def is_damage(err: BaseException) -> bool:
    """Whether SQLite said the file is damaged (SQLITE_CORRUPT, its extended codes, or SQLITE_NOTADB),
    not that it is busy, full or unwritable: in `err`, or in the error a StoreDamaged was raised from."""
    for said in (err, err.__cause__):
        code = getattr(said, "sqlite_errorcode", None) if isinstance(said, sqlite3.DatabaseError) else None
        if code is not None and code & 0xFF in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
            return True
    return False


def damaged(path: Path, err: sqlite3.DatabaseError) -> Exception:
    """The store-damaged error for the semantic store at `path`, naming the file and the way out."""
    from mettaclaw.memory.errors import StoreDamaged

    return StoreDamaged(
        f"the semantic store {path} is damaged ({err}). With the agent stopped, move it aside (mv {path} "
        f"{path}.damaged) to start it empty: its facts, concepts and links are lost unless a copy or an export "
        "(python -m mettaclaw.memory export) is restored")


def count_upper_bound(store: SqliteSemanticStore, f: RecordFilter, cap: int) -> int:
    """At most how many records pass `f`, capped at cap + 1, from the tag index alone when tags filter
    (an index-only count), else by counting; deciding "too many to scan" needs no exact figure."""
    tag_sets = [(t,) for t in f.tags_all] + ([tuple(f.tags_any)] if f.tags_any else [])
    if not tag_sets:
        where, params = store._where(f)
        return int(store._all(f"SELECT COUNT(*) FROM (SELECT 1 FROM records WHERE {where} LIMIT {cap + 1})", params)[0][0])
    return min(int(store._all(f"SELECT COUNT(*) FROM (SELECT 1 FROM record_tags WHERE tag IN ({','.join('?' * len(tags))}) "
                              f"LIMIT {cap + 1})", tags)[0][0]) for tags in tag_sets)


class SqliteSemanticStore:
    """One SQLite file; safe to share between threads of one process (one lock around the connection)."""

    def __init__(self, path: str | Path, synchronous: str = "NORMAL") -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._depth = 0
        self._links: dict[str, tuple[Link, ...]] = {}  # node -> its links, read-through; writes only drop entries
        try:
            self._db = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
        except sqlite3.OperationalError as err:
            raise unopenable(self.path, err) from None
        try:
            self._db.row_factory = sqlite3.Row
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={synchronous}")
            self._db.execute("PRAGMA foreign_keys=OFF")
            self._db.execute("PRAGMA secure_delete=ON")  # a forgotten record's text is overwritten on disk, not left in free pages
            self._db.executescript(SCHEMA)
            if self.get_meta(FTS_FORMAT[0]) != FTS_FORMAT[1]:
                self._rebuild_fts()
        except sqlite3.DatabaseError as err:
            self._db.close()
            if not is_damage(err):
                if isinstance(err, sqlite3.OperationalError):
                    raise unopenable(self.path, err) from None
                raise
            raise damaged(self.path, err) from None

    def _rebuild_fts(self) -> None:
        """A store whose FTS holds other terms (raw text, or an earlier `terms`) is re-indexed once, in one
        transaction."""
        with self.transaction():
            self._db.execute("DELETE FROM records_fts")
            rows = self._db.execute("SELECT rowid, name, content FROM records").fetchall()
            self._db.executemany("INSERT INTO records_fts(rowid, text) VALUES (?, ?)",
                                 [(r[0], fts_text(r[1] or "", r[2])) for r in rows])
            self.set_meta(*FTS_FORMAT)

    @contextlib.contextmanager
    def _damage_named(self) -> Iterator[None]:
        """SQLite's "database disk image is malformed" as StoreDamaged naming this file and what to do.
        Why: a file damaged past its first pages opens fine (checking it whole at open, PRAGMA
        quick_check, reads every page: too slow a start at 100k records), and the first read of a
        damaged page failed the dream and each recall with an internal error that named no file."""
        try:
            yield
        except sqlite3.DatabaseError as err:
            if not is_damage(err):
                raise
            raise damaged(self.path, err) from err

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Nestable: only the outermost level commits, and any exception rolls the whole write back."""
        with self._lock, self._damage_named():
            if self._depth == 0:
                self._db.execute("BEGIN IMMEDIATE")
            self._depth += 1
            try:
                yield
            except BaseException as err:
                self._depth -= 1
                if self._depth == 0:
                    try:
                        self._db.execute("ROLLBACK")
                    except sqlite3.Error:
                        if not is_damage(err):
                            raise
                        # SQLite may have ended the transaction itself: the damage is what to say
                raise
            self._depth -= 1
            if self._depth == 0:
                self._db.execute("COMMIT")

    def _all(self, sql: str, params: Any = ()) -> list[sqlite3.Row]:
        with self._lock, self._damage_named():
            return self._db.execute(sql, params).fetchall()

    # --- records
    def put(self, record: SemanticRecord, reindex: bool = True) -> None:
        """Upsert; `reindex=False` (usage updates: access times, stability) skips text, tags, episodes."""
        emb = None if record.embedding is None else np.asarray(record.embedding, dtype=np.float32).tobytes()
        values = (record.id, record.kind, record.name, record.name_norm, record.content, record.content_key,
                  record.category, record.confidence, record.valid_from, record.valid_to, record.recorded_at,
                  record.lineage, record.subject, record.relation, json.dumps(record.to_dict()), emb)
        updates = ", ".join(f"{c.strip()}=excluded.{c.strip()}" for c in _COLUMNS.split(",")[1:])
        with self.transaction():
            db = self._db
            db.execute(f"INSERT INTO records ({_COLUMNS}) VALUES ({','.join('?' * 16)}) "
                       f"ON CONFLICT(id) DO UPDATE SET {updates}", values)
            if not reindex:
                return
            rowid = db.execute("SELECT rowid FROM records WHERE id=?", (record.id,)).fetchone()[0]
            db.execute("DELETE FROM records_fts WHERE rowid=?", (rowid,))
            db.execute("INSERT INTO records_fts(rowid, text) VALUES (?, ?)", (rowid, fts_text(record.name, record.content)))
            db.execute("DELETE FROM record_tags WHERE record_id=?", (record.id,))
            db.executemany("INSERT OR IGNORE INTO record_tags VALUES (?, ?)", [(record.id, t) for t in record.tags])
            db.execute("DELETE FROM record_episodes WHERE record_id=?", (record.id,))
            db.executemany("INSERT OR IGNORE INTO record_episodes VALUES (?, ?)",
                           [(record.id, e) for e in record.source_episodes])

    def get(self, record_id: str) -> SemanticRecord | None:
        rows = self._all("SELECT data, embedding FROM records WHERE id=?", (record_id,))
        return _row_to_record(rows[0]) if rows else None

    def get_many(self, ids: list[str]) -> list[SemanticRecord]:
        out: dict[str, SemanticRecord] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            for row in self._all(f"SELECT data, embedding FROM records WHERE id IN ({','.join('?' * len(chunk))})", chunk):
                rec = _row_to_record(row)
                out[rec.id] = rec
        return [out[i] for i in ids if i in out]

    def delete(self, record_id: str) -> bool:
        with self.transaction():
            db = self._db
            row = db.execute("SELECT rowid FROM records WHERE id=?", (record_id,)).fetchone()
            if row is None:
                return False
            db.execute("DELETE FROM records_fts WHERE rowid=?", (row[0],))
            db.execute("DELETE FROM records WHERE id=?", (record_id,))
            db.execute("DELETE FROM record_tags WHERE record_id=?", (record_id,))
            db.execute("DELETE FROM record_episodes WHERE record_id=?", (record_id,))
            for src, dst in db.execute("SELECT src, dst FROM edges WHERE src=? OR dst=?", (record_id, record_id)):
                self._forget_edges(src, dst)
            db.execute("DELETE FROM edges WHERE src=? OR dst=?", (record_id, record_id))
            db.execute("DELETE FROM vector_queue WHERE id=?", (record_id,))
            db.execute("DELETE FROM versions WHERE record_id=?", (record_id,))
            return True

    def ids(self) -> list[str]:
        return [row[0] for row in self._all("SELECT id FROM records")]

    def count(self, current_only: bool = False) -> int:
        where = " WHERE valid_to IS NULL" if current_only else ""
        return int(self._all(f"SELECT COUNT(*) FROM records{where}")[0][0])

    def iter_records(self) -> Iterator[SemanticRecord]:
        last = 0  # by rowid: an upsert keeps a record's rowid, so this is the order records were first written
        while True:
            rows = self._all("SELECT rowid, data, embedding FROM records WHERE rowid > ? ORDER BY rowid LIMIT 500", (last,))
            if not rows:
                return
            for row in rows:
                yield _row_to_record(row)
            last = rows[-1]["rowid"]

    def _records(self, where: str, params: Any) -> list[SemanticRecord]:
        return [_row_to_record(r) for r in self._all(f"SELECT data, embedding FROM records WHERE {where}", params)]

    def find_by_key(self, *, content_key: str | None = None, name_norm: str | None = None,
                    current_only: bool = True) -> list[SemanticRecord]:
        clauses, params = [], []
        if content_key is not None:
            clauses.append("content_key=?")
            params.append(content_key)
        if name_norm is not None:
            clauses.append("name_norm=?")
            params.append(name_norm)
        if current_only:
            clauses.append("valid_to IS NULL")
        return self._records(" AND ".join(clauses) or "1", params)

    def find_by_subject(self, subject: str, relation: str, current_only: bool = True) -> list[SemanticRecord]:
        extra = " AND valid_to IS NULL" if current_only else ""
        return self._records(f"subject=? AND relation=?{extra}", (subject, relation))

    def by_lineage(self, lineage: str) -> list[SemanticRecord]:
        return sorted(self._records("lineage=?", (lineage,)), key=lambda r: (r.valid_from, r.recorded_at))

    def sharing_episodes(self, episode_ids: list[str]) -> dict[str, set[str]]:
        if not episode_ids:
            return {}
        marks = ",".join("?" * len(episode_ids))
        rows = self._all("SELECT record_id, episode_id FROM record_episodes WHERE record_id IN "
                         f"(SELECT record_id FROM record_episodes WHERE episode_id IN ({marks}))", list(episode_ids))
        out: dict[str, set[str]] = {}
        for row in rows:
            out.setdefault(row[0], set()).add(row[1])
        return out

    @staticmethod
    def _where(f: RecordFilter, per_row: bool = False) -> tuple[str, list[Any]]:
        """SQL for a filter. Tag clauses drive from the tag index (`IN` list) for scans, or are
        checked per row (`EXISTS` on the primary key) when the caller already has a few ids."""
        clauses: list[str] = []
        params: list[Any] = []
        if f.as_of is not None:
            clauses.append("valid_from <= ? AND (valid_to IS NULL OR valid_to > ?)")
            params += [f.as_of, f.as_of]
        elif not f.include_history:
            clauses.append("valid_to IS NULL")
        tag_sql = ("EXISTS (SELECT 1 FROM record_tags t WHERE t.record_id = records.id AND t.tag IN ({}))" if per_row
                   else "records.id IN (SELECT record_id FROM record_tags WHERE tag IN ({}))")
        for tag in f.tags_all:
            clauses.append(tag_sql.format("?"))
            params.append(tag)
        if f.tags_any:
            clauses.append(tag_sql.format(",".join("?" * len(f.tags_any))))
            params += list(f.tags_any)
        if f.tags_none:
            negated = "NOT " + tag_sql if per_row else tag_sql.replace(" IN (SELECT", " NOT IN (SELECT", 1)
            clauses.append(negated.format(",".join("?" * len(f.tags_none))))
            params += list(f.tags_none)
        if f.kinds:
            clauses.append(f"kind IN ({','.join('?' * len(f.kinds))})")
            params += list(f.kinds)
        for sql, value in (("category = ?", f.category), ("confidence >= ?", f.min_confidence),
                           ("recorded_at >= ?", f.time_from), ("recorded_at <= ?", f.time_to)):
            if value is not None:
                clauses.append(sql)
                params.append(value)
        if f.name_pattern:
            pat = f.name_pattern.lower()
            clauses.append("(name_norm GLOB ? OR lower(name) GLOB ? OR lower(content) GLOB ?)")
            params += [pat, pat, pat]
        return " AND ".join(clauses) or "1", params

    def select(self, f: RecordFilter, limit: int | None = None,
               after: tuple[float, str] | None = None) -> list[SemanticRecord]:
        where, params = self._where(f)
        if after is not None:  # past the cursor record in this order: its time, then its rowid (a gone one: none)
            where += (" AND (recorded_at < ? OR (recorded_at = ? AND rowid < COALESCE("
                      "(SELECT rowid FROM records WHERE id = ?), 9223372036854775807)))")
            params = [*params, after[0], after[0], after[1]]
        sql = f"{where} ORDER BY recorded_at DESC, rowid DESC" + ("" if limit is None else f" LIMIT {int(limit)}")
        return self._records(sql, params)

    def filter_ids(self, ids: list[str], f: RecordFilter) -> set[str]:
        where, params = self._where(f, per_row=True)
        out: set[str] = set()
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            rows = self._all(f"SELECT id FROM records WHERE id IN ({','.join('?' * len(chunk))}) AND {where}",
                             [*chunk, *params])
            out.update(row[0] for row in rows)
        return out

    def select_vectors(self, f: RecordFilter, limit: int) -> tuple[list[str], np.ndarray]:
        where, params = self._where(f)
        if count_upper_bound(self, f, limit) > limit:
            return ["?"] * (int(limit) + 1), np.zeros((0, 0), dtype=np.float32)
        rows = self._all(f"SELECT id, embedding FROM records WHERE {where} AND embedding IS NOT NULL", params)
        if not rows:
            return [], np.zeros((0, 0), dtype=np.float32)
        dim = len(rows[0][1]) // 4
        rows = [r for r in rows if len(r[1]) == 4 * dim]
        return [r[0] for r in rows], np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), dim)

    def lexical(self, query: str, limit: int, f: RecordFilter | None = None) -> list[tuple[str, float]]:
        wanted = sorted(set(query_terms(query)))
        if not wanted:
            return []
        match = " OR ".join('"' + t.replace('"', "") + '"' for t in wanted)
        where, params = self._where(f) if f is not None else ("1", [])
        if f is None or not f.is_logical():
            # FTS5's own `ORDER BY rank LIMIT` first (half the cost of ranking inside a join at 100k),
            # then validity; a few extra rows cover the superseded ones dropped by it.
            rows = self._all("SELECT records.id, -m.rank FROM (SELECT rowid, rank FROM records_fts WHERE records_fts "
                             "MATCH ? ORDER BY rank LIMIT ?) m JOIN records ON records.rowid = m.rowid "
                             f"WHERE {where} ORDER BY m.rank LIMIT ?", (match, 2 * limit + 20, *params, limit))
        else:  # a logical filter: rank only what passes it
            rows = self._all("SELECT records.id, -bm25(records_fts) FROM records_fts JOIN records "
                             f"ON records.rowid = records_fts.rowid WHERE records_fts MATCH ? AND {where} "
                             "ORDER BY bm25(records_fts) LIMIT ?", (match, *params, limit))
        return [(row[0], float(row[1])) for row in rows]

    def tag_counts(self, current_only: bool = True) -> dict[str, int]:
        where = "WHERE r.valid_to IS NULL" if current_only else ""
        rows = self._all(f"SELECT t.tag, COUNT(*) FROM record_tags t JOIN records r ON r.id = t.record_id {where} "
                         "GROUP BY t.tag ORDER BY 2 DESC, 1")
        return {row[0]: int(row[1]) for row in rows}

    def summary(self) -> dict[str, Any]:
        total, current, oldest, newest = self._all(
            "SELECT COUNT(*), SUM(valid_to IS NULL), MIN(recorded_at), MAX(recorded_at) FROM records")[0]
        kinds = self._all("SELECT kind, COUNT(*) FROM records WHERE valid_to IS NULL GROUP BY kind")
        edges = self._all("SELECT COUNT(*) FROM edges")[0][0]
        return {"records": int(total), "current": int(current or 0), "by_kind": {k: int(n) for k, n in kinds},
                "oldest": oldest, "newest": newest, "edges": int(edges)}

    # --- edges
    def _forget_edges(self, *nodes: str) -> None:
        for node in nodes:
            self._links.pop(node, None)

    def put_edge(self, edge: Edge) -> None:
        with self.transaction():
            self._db.execute(f"INSERT OR REPLACE INTO edges ({_EDGE_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)",
                             (edge.src, edge.dst, edge.type, edge.weight, edge.co_access, edge.last_co_access,
                              edge.created_at, edge.src_layer, edge.dst_layer))
            self._forget_edges(edge.src, edge.dst)

    def get_edge(self, src: str, dst: str, type_: str) -> Edge | None:
        rows = self._all(f"SELECT {_EDGE_COLUMNS} FROM edges WHERE src=? AND dst=? AND type=?", (src, dst, type_))
        return Edge(*rows[0]) if rows else None

    def edges_of(self, node: str) -> list[Edge]:
        rows = self._all(f"SELECT {_EDGE_COLUMNS} FROM edges WHERE src=? UNION ALL "
                         f"SELECT {_EDGE_COLUMNS} FROM edges WHERE dst=? AND src<>?", (node, node, node))
        return [Edge(*row) for row in rows]

    def links_of(self, node: str) -> list[Link]:
        """Spreading asks for the same nodes query after query, so their links are kept until a write
        changes them (a hub such as a person's concept has hundreds)."""
        with self._lock:
            cached = self._links.get(node)
            if cached is None:
                if len(self._links) >= LINK_CACHE:
                    self._links.clear()
                cached = self._links[node] = tuple(links(node, self.edges_of(node)))
        return list(cached)

    def delete_edge(self, src: str, dst: str, type_: str) -> None:
        with self.transaction():
            self._db.execute("DELETE FROM edges WHERE src=? AND dst=? AND type=?", (src, dst, type_))
            self._forget_edges(src, dst)

    def iter_edges(self) -> Iterator[Edge]:
        yield from (Edge(*row) for row in self._all(f"SELECT {_EDGE_COLUMNS} FROM edges"))

    # --- relation registry, versions, meta
    def put_relation_type(self, name: str, symmetric: bool, builtin: bool) -> None:
        with self.transaction():
            self._db.execute("INSERT OR REPLACE INTO relation_types VALUES (?, ?, ?)", (name, int(symmetric), int(builtin)))

    def relation_types(self) -> dict[str, tuple[bool, bool]]:
        return {row[0]: (bool(row[1]), bool(row[2])) for row in self._all("SELECT * FROM relation_types")}

    def log_version(self, record_id: str, action: str, at: float, snapshot: dict[str, Any]) -> None:
        with self.transaction():
            self._db.execute("INSERT INTO versions (record_id, action, at, snapshot) VALUES (?, ?, ?, ?)",
                             (record_id, action, at, json.dumps(snapshot)))

    def versions(self, record_id: str) -> list[dict[str, Any]]:
        rows = self._all("SELECT record_id, action, at, snapshot FROM versions WHERE record_id=? ORDER BY seq",
                         (record_id,))
        return [{"record_id": r[0], "action": r[1], "at": r[2], "snapshot": json.loads(r[3])} for r in rows]

    def queue_vectors(self, ids: list[str]) -> None:
        with self.transaction():
            self._db.executemany("INSERT OR IGNORE INTO vector_queue VALUES (?)", [(i,) for i in ids])

    def unqueue_vectors(self, ids: list[str]) -> None:
        with self.transaction():
            self._db.executemany("DELETE FROM vector_queue WHERE id=?", [(i,) for i in ids])

    def queued_vectors(self) -> list[str]:
        return [row[0] for row in self._all("SELECT id FROM vector_queue")]

    def get_meta(self, key: str) -> str | None:
        rows = self._all("SELECT value FROM meta WHERE key=?", (key,))
        return rows[0][0] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction():
            self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def close(self) -> None:
        with self._lock:
            self._db.close()
