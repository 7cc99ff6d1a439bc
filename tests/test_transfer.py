"""Export and import: a memory written out as JSON lines and read into an empty folder answers every
query as the original did, through the same command a user runs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mettaclaw.config import load_config
from mettaclaw.memory import open_memory
from mettaclaw.messages import Message

QUESTIONS = ["where is the spare key", "what is Emma allergic to", "when does the backup run", "Alice",
             "harbour painting", "is sam mortal"]


def settings(folder: Path, *more: str) -> list[str]:
    return [f"memoryDir={folder}", f"knowledgePriorsDir={folder.parent / 'no-priors'}", "embeddingprovider=hash",
            "chromaMode=embedded", "dreamInterval=0", *more]


def fill(folder: Path) -> None:
    memory = open_memory(load_config(settings(folder), env={}), dream=False)
    said = ["Good morning!", "The spare house key is hidden under the blue flowerpot.", "Coffee time!",
            "Emma is allergic to peanuts and shellfish.", "The server backup runs every night at 2am.",
            "Remember: the spare house key is under the blue flowerpot, not the mat.", "See you later."]
    for n, line in enumerate(said):
        memory.record_turn(time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(1_790_000_000 + 60 * n)),
                           [Message(line, who="ana", channel="terminal")], [])
    memory.remember("The harbour painting hides the office safe.", time="2026-01-02 10:00:00", tags=("house",))
    memory.remember("(--> sam human) (stv 1.0 0.9)", kind="belief", atom="(--> sam human) (stv 1.0 0.9)")
    semantic = memory.semantic
    first = semantic.learn("Alice lives in Paris", name="alice home", tags=("people",))
    semantic.supersede(first.id, "Alice lives in Berlin")
    semantic.relate("alice home", "NEAR", "the Spree")
    memory.sync_mirror()
    memory.dreamer.dream("test")
    memory.working.pin("find the spare key")
    memory.working.pin("bob: call the plumber", "user:bob")
    memory.close()


def answers(folder: Path) -> dict[str, object]:
    memory = open_memory(load_config(settings(folder), env={}), dream=False)
    try:
        out: dict[str, object] = {q: [(h.id, h.text, h.cites) for h in memory.query(q, 10, touch=False)]
                                  for q in QUESTIONS}
        out["history"] = [(r.id, r.content, r.valid_to) for r in memory.semantic.history("alice home")]
        out["edges"] = sorted((e.src, e.dst, e.type, e.weight) for e in memory.semantic.records.iter_edges())
        out["records"] = sorted(r.id for r in memory.semantic)
        out["pins"] = memory.working.pinned()
        out["episodes"] = [e.text for e in memory.trace.around("2026", 100)]
        out["stats"] = len(memory.index)
        return out
    finally:
        memory.close()


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mettaclaw.memory", *args], capture_output=True, text=True,
                          input=stdin, timeout=300)


def test_export_then_import_answers_the_same(tmp_path) -> None:
    original, copy = tmp_path / "original", tmp_path / "copy"
    fill(original)
    exported = cli("export", *settings(original))
    assert exported.returncode == 0, exported.stderr
    lines = [json.loads(line) for line in exported.stdout.splitlines()]
    kinds = {line["type"] for line in lines}
    assert {"header", "trace", "memory", "record", "edge", "version", "relation_type", "pins"} <= kinds
    assert all(line["source_episodes"] is not None and "valid_from" in line for line in lines if line["type"] == "record")
    dump = tmp_path / "memory.jsonl"
    dump.write_text(exported.stdout)
    imported = cli("import", str(dump), *settings(copy))
    assert imported.returncode == 0, imported.stderr
    before, after = answers(original), answers(copy)
    for key in before:
        assert after[key] == before[key], key
    assert before["where is the spare key"] and before["history"], "the comparison compares something"

    again = cli("import", str(dump), *settings(copy))
    assert again.returncode == 2 and "already holds a memory" in again.stderr
    (tmp_path / "junk.jsonl").write_text('{"hello": 1}\n')
    junk = cli("import", str(tmp_path / "junk.jsonl"), *settings(tmp_path / "third"))
    assert junk.returncode == 2 and "not a mettaclaw memory export" in junk.stderr
    missing = cli("import", str(tmp_path / "nope.jsonl"), *settings(tmp_path / "fourth"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr


def test_import_under_another_embedder_recomputes_every_vector(tmp_path) -> None:
    """An export made with the hash embedder, imported with MiniLM: same records and episodes, and
    recall by meaning works with the new vectors."""
    import pytest

    pytest.importorskip("sentence_transformers")
    original, copy = tmp_path / "original", tmp_path / "copy"
    fill(original)
    dump = tmp_path / "memory.jsonl"
    dump.write_text(cli("export", *settings(original)).stdout)
    local = [s.replace("embeddingprovider=hash", "embeddingprovider=local") for s in settings(copy)]
    imported = cli("import", str(dump), *local)
    assert imported.returncode == 0, imported.stderr
    memory = open_memory(load_config(local, env={}), dream=False)
    try:
        assert memory.index.stats()["embedder"] == "st:all-MiniLM-L6-v2:384"
        hit = memory.query("which food makes Emma ill", 1, touch=False)[0]
        assert "peanuts" in hit.text
        assert [r.content for r in memory.semantic.history("alice home")] == ["Alice lives in Paris", "Alice lives in Berlin"]
    finally:
        memory.close()


def test_a_damaged_export_is_refused_before_anything_is_written(tmp_path) -> None:
    original = tmp_path / "original"
    fill(original)
    lines = cli("export", *settings(original)).stdout.splitlines()
    record_at = next(n for n, line in enumerate(lines) if json.loads(line)["type"] == "record")
    for damage in ({"confidence": "very"}, {"source_episodes": 7}, {"no_such_field": 1}):
        broken = [*lines]
        broken[record_at] = json.dumps({**json.loads(lines[record_at]), **damage})
        dump = tmp_path / "broken.jsonl"
        dump.write_text("\n".join(broken) + "\n")
        target = tmp_path / f"copy-{len(damage)}-{next(iter(damage))}"
        done = cli("import", str(dump), *settings(target))
        assert done.returncode == 2 and f"line {record_at + 1} is not a valid 'record'" in done.stderr, done.stderr
        assert not target.exists(), "nothing was written (the folder was made, with an agent.log in it)"


def test_an_export_cut_short_is_refused_and_one_made_before_the_end_line_still_imports(tmp_path) -> None:
    """An export is written a buffer of whole lines at a time, so one killed halfway (kill -9, a full
    disk, a lost connection in `export | ssh host import -`) left a file that ended on a whole line: it
    was imported without a word, as a memory holding part of the memories. Now its last line counts
    the lines before it, and a file without it, or whose count is off, is refused before anything is written."""
    original = tmp_path / "original"
    fill(original)
    lines = cli("export", *settings(original)).stdout.splitlines(keepends=True)
    assert json.loads(lines[-1]) == {"type": "end", "lines": len(lines) - 1}
    dump = tmp_path / "cut.jsonl"
    for kept, said in ((lines[: len(lines) // 2], "is cut short: it has no end line"),
                       (lines[:-1], "is cut short: it has no end line"),
                       (lines[:3] + lines[4:], f"has {len(lines) - 2} lines before its end line, which counts {len(lines) - 1}"),
                       (lines + lines[1:2], "goes on after its end line")):
        dump.write_text("".join(kept))
        target = tmp_path / "copy"
        done = cli("import", str(dump), *settings(target))
        assert done.returncode == 2 and f"error: {dump} {said}" in done.stderr, done.stderr
        assert not target.exists(), "nothing was written"
    older = [json.dumps({**json.loads(lines[0]), "format": "mettaclaw-memory/1"}) + "\n", *lines[1:-1]]
    dump.write_text("".join(older))  # an export made before the end line: imported as it was
    assert cli("import", str(dump), *settings(tmp_path / "copy")).returncode == 0
    assert answers(tmp_path / "copy") == answers(original)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (a disk that is always full)")
def test_an_export_that_cannot_be_written_says_so_in_one_line(tmp_path) -> None:
    """An export to a full disk (or into a pipe whose reader went away) ended in an OSError traceback,
    and a second one when the interpreter flushed its output at exit. Now one line says why it stopped
    and that what it wrote is no whole export."""
    original = tmp_path / "original"
    fill(original)
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "mettaclaw.memory", "export", *settings(original)], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=300)
    assert done.returncode == 2 and done.stderr == ("error: the export stopped: No space left on device (standard "
                                                    "output); what it wrote is not a whole export, and import refuses "
                                                    "it\n"), done.stderr


def test_an_export_with_a_trace_record_at_an_impossible_time_is_refused(tmp_path) -> None:
    """Opening indexes every trace record, so an imported record at 2026-02-30 left a folder that never
    opened; the import stops at that line instead (a torn line stays, as readers skip it)."""
    import pytest

    from mettaclaw.memory.transfer import FORMAT, ImportError_, read_export

    header = json.dumps({"type": "header", "format": FORMAT})
    good = json.dumps({"type": "trace", "line": '("2026-02-28 10:00:00" "HUMAN_MESSAGE: " "fine")'})
    torn = json.dumps({"type": "trace", "line": '("2026-02-28 10:00:01" "HUMAN_MES'})
    bad = json.dumps({"type": "trace", "line": '("2026-02-30 10:00:00" "HUMAN_MESSAGE: " "not a day")'})
    assert len(list(read_export([header, good, torn]))) == 3
    with pytest.raises(ImportError_, match="line 4 is not a valid 'trace': bad time '2026-02-30 10:00:00'"):
        list(read_export([header, good, torn, bad]))


def test_an_export_with_values_no_write_could_make_is_refused_before_anything_is_written(tmp_path) -> None:
    """Each of these passed the type checks, then the import stopped half way (a memory at 2026-02-30,
    a record at 1e20 s: ValueError and OverflowError after the trace was written) or kept what the
    agent never writes: a memory that replaced episode ep-0's row in the index, a second line that
    silently replaced the first of its id, a record of kind 'banana' (never recalled), a confidence of 7,
    an edge of weight 9."""
    import pytest

    from mettaclaw.memory.transfer import FORMAT, ImportError_, read_export

    header = json.dumps({"type": "header", "format": FORMAT})
    memory = {"type": "memory", "id": "3e2c6eed-4343-4907-a703-15f9e311a6ca", "text": "The harbour painting.",
              "time": "2026-01-02 10:00:00", "source": "agent", "kind": "memory", "tags": [], "atom": None, "extra": {}}
    record = {"type": "record", "id": "r1", "content": "Alice lives in Paris", "valid_from": 1_790_000_000.0}
    edge = {"type": "edge", "edge": {"src": "r1", "dst": "ep-0", "type": "DERIVED_FROM", "weight": 1.0}}
    assert len(list(read_export([header, json.dumps(memory), json.dumps(record), json.dumps(edge)]))) == 4
    damaged = {
        "memory.time: Value error, bad time '2026-02-30 10:00:00'": {**memory, "time": "2026-02-30 10:00:00"},
        "memory.id: Value error, id 'ep-0' is an episode's id": {**memory, "id": "ep-0"},
        "memory.kind: Value error, kind 'episode' is rebuilt": {**memory, "kind": "episode"},
        "memory.tags.0: Input should be a valid string": {**memory, "tags": [1]},
        "valid_from: Value error, time 1e+20 is not on the calendar": {**record, "valid_from": 1e20},
        "access_times: Value error, time -1e+20 is not on the calendar": {**record, "access_times": [-1e20]},
        "kind: Input should be 'fact', 'concept', 'theme' or 'summary'": {**record, "kind": "banana"},
        "confidence: Input should be less than or equal to 1": {**record, "confidence": 7},
        "edge weight 9 is not in [0, 1]": {**edge, "edge": {**edge["edge"], "weight": 9}},
        "version.at: Value error, time 1e+300 is not on the calendar":
            {"type": "version", "record_id": "r1", "action": "created", "at": 1e300, "snapshot": {}},
    }
    for cause, line in damaged.items():
        with pytest.raises(ImportError_, match=re.escape(f"line 2 is not a valid {line['type']!r}: {cause}")):
            list(read_export([header, json.dumps(line)]))
    for line in (memory, record):
        again = json.dumps({**line, "text": "other"} if line is memory else {**line, "content": "other"})
        with pytest.raises(ImportError_, match=f"line 3 .*id '{line['id']}' was already given on line 2"):
            list(read_export([header, json.dumps(line), again]))

    target = tmp_path / "copy"
    dump = tmp_path / "damaged.jsonl"
    dump.write_text("\n".join([header, json.dumps({"type": "trace", "line": '("2026-02-28 10:00:00" "HUMAN_MESSAGE: " "hi")'}),
                               json.dumps({**record, "valid_from": 1e20})]) + "\n")
    done = cli("import", str(dump), *settings(target))
    assert done.returncode == 2 and "line 3 is not a valid 'record'" in done.stderr, done.stderr
    assert not (target / "history.metta").exists(), "nothing was written"


def tree(folder: Path) -> dict[str, bytes | None]:
    return {p.relative_to(folder).as_posix(): None if p.is_dir() else p.read_bytes() for p in folder.rglob("*")}


def test_a_failed_import_takes_away_what_it_wrote_and_nothing_that_was_there(tmp_path) -> None:
    """An import refused or failed left the folder it made, with its agent.log, or a folder filled with
    the trace and marked unfinished; a folder that was there keeps what it held, and only that."""
    from conftest import free_port

    original = tmp_path / "original"
    fill(original)
    dump = tmp_path / "memory.jsonl"
    dump.write_text(cli("export", *settings(original)).stdout)
    (tmp_path / "bad.jsonl").write_text('{"type": "nonsense"}\n')
    made = tmp_path / "made"
    done = cli("import", str(tmp_path / "bad.jsonl"), *settings(made / "below"))
    assert done.returncode == 2 and "not a mettaclaw memory export" in done.stderr and not made.exists(), done.stderr
    (tmp_path / "latin.jsonl").write_bytes(b'{"type": "header", "format": "caf\xe9"}\n')
    done = cli("import", str(tmp_path / "latin.jsonl"), *settings(made))  # was a UnicodeDecodeError traceback
    assert done.returncode == 2 and done.stderr == f"error: {tmp_path / 'latin.jsonl'} is not UTF-8 text, so not a " \
        "mettaclaw memory export\n" and not made.exists(), done.stderr
    done = cli("import", str(tmp_path / "missing.jsonl"), *settings(made))
    assert done.returncode == 2 and "cannot read" in done.stderr and not made.exists(), done.stderr
    no_server = ("chromaMode=server", f"chromaPort={free_port()}")  # fails opening, after the trace was written
    done = cli("import", str(dump), *settings(made / "below", *no_server))
    assert done.returncode == 2 and "no Chroma server" in done.stderr and not made.exists(), done.stderr
    kept = tmp_path / "kept"
    (kept / "workspace").mkdir(parents=True)
    (kept / "workspace" / "notes.txt").write_text("mine")
    (kept / "history.metta").write_bytes(b"")
    before = tree(kept)
    done = cli("import", str(dump), *settings(kept, *no_server))
    assert done.returncode == 2 and "no Chroma server" in done.stderr and tree(kept) == before, done.stderr
    (kept / "history.metta").write_text('("2026-01-01 10:00:00" "HUMAN_MESSAGE: " "hi")\n')
    before = tree(kept)
    done = cli("import", str(dump), *settings(kept))
    assert done.returncode == 2 and "already holds a memory" in done.stderr and tree(kept) == before, done.stderr
    (kept / "history.metta").write_bytes(b"")
    (kept / "dream").mkdir()
    (kept / "dream" / "state.json").write_text('{"dream_mark": 7}')  # the import would have written over it
    done = cli("import", str(dump), *settings(kept))
    assert done.returncode == 2 and "already holds a memory" in done.stderr, done.stderr
    __import__("shutil").rmtree(kept / "dream")
    assert cli("import", str(dump), *settings(kept)).returncode == 0  # what was there was no hindrance
    assert (kept / "workspace" / "notes.txt").read_text() == "mine"
    assert answers(kept) == answers(original)


def test_an_import_cut_short_leaves_a_folder_that_says_so_instead_of_part_of_a_memory(tmp_path) -> None:
    """An import killed halfway (kill -9, Ctrl-C, a full disk) left a folder with the trace and some of
    the rows: the agent opened it and answered from that part as if it were all, and a second import
    only said the folder "already holds a memory". Now both say the import did not finish."""
    import os

    import pytest

    from mettaclaw.memory.errors import StoreDamaged

    original, target = tmp_path / "original", tmp_path / "copy"
    fill(original)
    dump = tmp_path / "memory.jsonl"
    dump.write_text(cli("export", *settings(original)).stdout)
    killed = ("import os, sys\nfrom mettaclaw.memory import __main__ as cli, transfer\n"
              "transfer.restore = lambda memory, items: os._exit(9)\nsys.exit(cli.main(sys.argv[1:]))\n")
    done = subprocess.run([sys.executable, "-c", killed, "import", str(dump), *settings(target)], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")})
    assert done.returncode == 9, done.stderr[-2000:]
    with pytest.raises(StoreDamaged, match="did not finish"):
        open_memory(load_config(settings(target), env={}), dream=False)
    again = cli("import", str(dump), *settings(target))
    assert again.returncode == 2 and "did not finish" in again.stderr and "delete the folder" in again.stderr
    __import__("shutil").rmtree(target)
    assert cli("import", str(dump), *settings(target)).returncode == 0
    assert answers(target) == answers(original)


def test_records_of_one_time_are_listed_in_the_same_order_after_a_round_trip(tmp_path) -> None:
    """Records written in the same second (a dream writes many) were exported by id and so written
    by the import in another order than they were written: listing them newest first (the `recall`
    skill, the inspector's records) gave the ties in another order after the round trip."""
    from mettaclaw.memory.semantic.store import RecordFilter

    original, copy = tmp_path / "original", tmp_path / "copy"
    memory = open_memory(load_config(settings(original), env={}), dream=False, clock=lambda: 1_790_000_000.0)
    for fruit in ["zebra melon", "apple", "mango", "kiwi", "banana", "cherry", "grape", "lemon"]:
        memory.semantic.learn(f"The {fruit} is on the kitchen shelf.", name=f"{fruit} place")
    memory.close()

    def listed(folder: Path) -> list[str]:
        memory = open_memory(load_config(settings(folder), env={}), dream=False)
        try:
            return [r.id for r in memory.semantic.records.select(RecordFilter())]
        finally:
            memory.close()

    dump = tmp_path / "memory.jsonl"
    dump.write_text(cli("export", *settings(original)).stdout)
    assert cli("import", str(dump), *settings(copy)).returncode == 0
    before = listed(original)
    assert len(before) == 8 and listed(copy) == before


def test_an_import_into_a_folder_an_agent_holds_writes_nothing_there(tmp_path) -> None:
    """The import checked the folder and wrote its trace and unfinished mark before it took the lock,
    which it first asked for when it opened the memory: beside an agent on the folder it replaced that
    agent's trace, marked its folder unfinished, and told the person to delete it."""
    from mettaclaw.memory.stores.lock import FolderLock

    original, busy = tmp_path / "original", tmp_path / "busy"
    fill(original)
    dump = tmp_path / "memory.jsonl"
    dump.write_text(cli("export", *settings(original)).stdout)
    busy.mkdir()
    (busy / "history.metta").write_bytes(b"")  # an agent just started: nothing said yet
    agent = FolderLock(busy)
    try:
        before = tree(busy)
        done = cli("import", str(dump), *settings(busy))
        assert done.returncode == 2 and "is already using the memory folder" in done.stderr, done.stderr
        assert "left there" not in done.stderr and tree(busy) == before, done.stderr
    finally:
        agent.release()
    assert cli("import", str(dump), *settings(busy)).returncode == 0  # once the agent is gone
    assert answers(busy) == answers(original)


def test_an_import_into_a_folder_with_pins_is_refused_and_the_pins_kept(tmp_path) -> None:
    """Pins are working memory, but the emptiness check looked only at the trace, the stores and the
    dream's progress: the export's pins replaced the person's own without a word."""
    original, target = tmp_path / "original", tmp_path / "copy"
    fill(original)  # with pins of its own
    dump = tmp_path / "memory.jsonl"
    dump.write_text(cli("export", *settings(original)).stdout)
    target.mkdir()
    (target / "pins.txt").write_text("finish the quarterly report")
    before = tree(target)
    done = cli("import", str(dump), *settings(target))
    assert done.returncode == 2 and f"already holds pins ({target / 'pins.txt'})" in done.stderr, done.stderr
    assert tree(target) == before
    (target / "pins.txt").unlink()
    assert cli("import", str(dump), *settings(target)).returncode == 0
    assert answers(target) == answers(original)


def test_ctrl_c_during_an_import_says_it_was_interrupted_and_what_became_of_the_folder(tmp_path) -> None:
    """Ctrl-C while the memory opened said "the knowledge priors indexed so far are kept, the rest are
    indexed at the next start" (the agent's message: the import had taken them all away) and exited 2;
    while the rows were written, or the file read, it was a traceback. Now each says the import was
    interrupted and what is left, and exits 130 as a Ctrl-C does."""
    import os

    original = tmp_path / "original"
    fill(original)
    dump = tmp_path / "memory.jsonl"
    dump.write_text(cli("export", *settings(original)).stdout)
    script = ("import sys\nfrom mettaclaw.memory import __main__ as cli, transfer\nfrom mettaclaw.memory.index import longterm\n"
              "def stop(*args, **kwargs):\n    raise KeyboardInterrupt\n"
              "setattr({}, {!r}, stop)\nsys.exit(cli.main(sys.argv[1:]))\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
    for where, what in [("longterm", "open_longterm"), ("transfer", "restore"), ("transfer", "read_export")]:
        target = tmp_path / what
        done = subprocess.run([sys.executable, "-c", script.format(where, what), "import", str(dump),
                               *settings(target)], capture_output=True, text=True, timeout=300, env=env)
        assert done.returncode == 130 and "Traceback" not in done.stderr, done.stderr[-2000:]
        said = "while reading" if what == "read_export" else "the folder is as it was before"
        assert "stopped: the import was interrupted" in done.stderr and said in done.stderr, done.stderr
        assert "knowledge priors" not in done.stderr and not target.exists(), done.stderr


@pytest.mark.slow
def test_a_failed_import_into_server_collections_takes_them_away(chroma_server, tmp_path) -> None:
    """With chromaMode=server the import's rows go to the server's collections, claimed with the
    folder's id: a failed import took the folder (its id with it) and left the collections full and
    claimed, so the next import into the folder was refused as "another memory folder"."""
    import os

    import chromadb

    original, target = tmp_path / "original", tmp_path / "copy"
    fill(original)
    dump = tmp_path / "memory.jsonl"
    dump.write_text(cli("export", *settings(original)).stdout)
    server = [s for s in settings(target) if s != "chromaMode=embedded"] + ["chromaMode=server", f"chromaPort={chroma_server}"]
    client = chromadb.HttpClient(host="127.0.0.1", port=chroma_server)
    before = {c.name for c in client.list_collections()}
    failing = ("import sys\nfrom mettaclaw.memory import __main__ as cli, transfer\nwritten = transfer.restore\n"
               "def fail(memory, items):\n    written(memory, items)\n    raise KeyboardInterrupt\n"
               "transfer.restore = fail\nsys.exit(cli.main(sys.argv[1:]))\n")
    done = subprocess.run([sys.executable, "-c", failing, "import", str(dump), *server], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")})
    assert done.returncode == 130 and "the folder is as it was before" in done.stderr, done.stderr[-2000:]
    assert not target.exists() and {c.name for c in client.list_collections()} == before
    again = cli("import", str(dump), *server)
    assert again.returncode == 0, again.stderr
    assert sum(c.count() for c in client.list_collections() if c.name not in before) > 0


def test_exporting_a_memory_folder_that_is_not_there_is_refused_and_makes_nothing(tmp_path) -> None:
    """A mistyped memoryDir was made, with empty stores, and its empty memory exported (exit 0): the
    person got a file of one header and no word that the memory they meant was elsewhere."""
    missing = tmp_path / "memroy"
    done = cli("export", *settings(missing))
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert done.stderr == f"error: memoryDir {str(missing)!r} does not exist, so there is no memory to export\n"
    assert not missing.exists()
    missing.write_text("a file")
    done = cli("export", *settings(missing))
    assert done.returncode == 2 and "is not a folder, so there is no memory to export" in done.stderr, done.stderr
    too_long = tmp_path / ("m" * 300)  # was a traceback (is_dir raised)
    done = cli("export", *settings(too_long))
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert done.stderr == f"error: memoryDir {str(too_long)!r} cannot be used: File name too long\n"
