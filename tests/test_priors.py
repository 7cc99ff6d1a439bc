"""Knowledge priors: heading chunks, breadcrumbs, and re-indexing only what changed."""

from __future__ import annotations

import codecs
import os
import time
from pathlib import Path

import pytest
from conftest import CountingEmbedder, record_deletes

from mettaclaw.memory.index.longterm import LongTermMemory
from mettaclaw.memory.index.priors import MAX_FILE_MB, MAX_SECTION, MAX_TITLE, chunk_markdown, index_priors
from mettaclaw.memory.recall import render
from mettaclaw.memory.stores.embedders import HashEmbedder
from mettaclaw.memory.stores.vectors import InMemoryVectorStore

REPO_PRIORS = Path(__file__).resolve().parents[1] / "knowledge-priors"


def _para(word: str, n: int = 30) -> str:
    return " ".join([word] * n)


def test_chunks_follow_headings_with_breadcrumbs() -> None:
    text = (f"# Garden\n\n{_para('soil')}\n\n## Tomatoes\n\n{_para('tomato')}\n\n### Pests\n\n{_para('aphid')}\n\n"
            f"```\n# not a heading inside code\n```\n\n## Beans\n\n{_para('bean')}\n")
    chunks = chunk_markdown(text, "garden.md")
    assert [c.breadcrumb for c in chunks] == [
        "garden.md > Garden", "garden.md > Garden > Tomatoes", "garden.md > Garden > Tomatoes > Pests",
        "garden.md > Garden > Beans"]
    assert "# not a heading inside code" in chunks[2].text
    assert chunks[1].text.startswith("## Tomatoes")


def test_table_of_contents_is_dropped_small_sections_merge_long_ones_split() -> None:
    long_body = "\n\n".join(_para(f"w{i}", 400) for i in range(8))  # 8 x 1200 chars
    text = (f"# Guide\n\n## Contents\n\n- [Intro](#intro)\n- [Usage](#usage)\n\n## Intro\n\nShort.\n\n"
            f"## Usage\n\n{_para('use')}\n\n## Reference\n\n{long_body}\n")
    chunks = chunk_markdown(text, "g.md")
    assert not any("[Intro](#intro)" in c.text for c in chunks)
    usage = [c for c in chunks if "## Usage" in c.text][0]
    assert "Short." in usage.text and usage.breadcrumb == "g.md > Guide > Usage", "small Intro merged into next"
    ref = [c for c in chunks if c.breadcrumb == "g.md > Guide > Reference"]
    assert len(ref) >= 2 and all(len(c.text) <= MAX_SECTION for c in ref)
    assert sum(c.text.split().count("w3") for c in ref) == 400, "splitting loses nothing"


def test_reindex_embeds_only_new_or_changed_files(tmp_path: Path) -> None:
    folder = tmp_path / "priors"
    folder.mkdir()
    (folder / "a.md").write_text(f"# A\n\n{_para('alpha')}\n\n## A2\n\n{_para('alphabet')}\n")
    (folder / "b.md").write_text(f"# B\n\n{_para('beta')}\n")
    emb = CountingEmbedder()
    ltm = LongTermMemory(emb, InMemoryVectorStore())
    first = index_priors(ltm, folder, progress=False)
    assert sorted(first.added) == ["a.md", "b.md"] and first.chunks == 3 and emb.texts >= 3

    emb.texts = 0
    again = index_priors(ltm, folder, progress=False)
    assert sorted(again.skipped) == ["a.md", "b.md"] and emb.texts == 0, "nothing changed: nothing embedded"

    (folder / "b.md").write_text(f"# B\n\n{_para('gamma')}\n")
    (folder / "a.md").unlink()
    deletes = record_deletes(ltm.vector_store)
    changed = index_priors(ltm, folder, progress=False)
    assert sorted(len(rows) for rows in deletes) == [1, 2], "one store delete a file, not one a chunk"
    alone = CountingEmbedder()  # what b.md alone costs to embed (its chunk and that chunk's sentences)
    index_priors(LongTermMemory(alone, InMemoryVectorStore()), folder, progress=False)
    assert changed.replaced == ["b.md"] and changed.removed == ["a.md"] and emb.texts == alone.texts
    assert [m.source for m in ltm] == ["b.md"]
    hit = ltm.query("gamma", kind="prior")[0]
    assert hit.time == "knowledge_prior" and hit.meta["breadcrumb"] == "b.md > B"
    assert ltm.query("beta", mode="bm25") == [], "the changed file's old chunk is gone"


def test_bad_files_are_reported_and_skipped(tmp_path: Path) -> None:
    (tmp_path / "good.md").write_text(f"# Good\n\n{_para('fine')}\n")
    (tmp_path / "latin1.md").write_bytes("# Caf\xe9\n\nna\xefve text".encode("latin-1"))
    (tmp_path / "image.md").write_bytes(b"\x89PNG\x00\x00binary")
    (tmp_path / "notes.txt").write_text("plain text")
    ltm = LongTermMemory(HashEmbedder(), InMemoryVectorStore())
    report = index_priors(ltm, tmp_path, progress=False)
    assert report.added == ["good.md"]
    assert sorted(report.errors) == ["image.md: not Markdown (binary content) (skipped)",
                                     "latin1.md: not UTF-8 (byte 5) (skipped)",
                                     "notes.txt: not Markdown (skipped)"]
    assert {m.source for m in ltm} == {"good.md"}


def test_every_refused_file_is_named_past_the_three_the_start_up_line_has_room_for(tmp_path: Path, caplog) -> None:
    """The start-up line names three refused files and said ' ...' for the rest, which were named
    nowhere: a note that is not UTF-8, among a vault's pictures, was refused without a word."""
    for name in ("a.png", "b.png", "c.png", "d.png"):
        (tmp_path / name).write_bytes(b"\x89PNG\x00")
    (tmp_path / "notes.md").write_bytes(b"# Notes\n\ncaf\xe9")
    with caplog.at_level("WARNING", logger="mettaclaw.memory.index.priors"):
        report = index_priors(LongTermMemory(HashEmbedder(), InMemoryVectorStore()), tmp_path, progress=False)
    assert len(report.errors) == 5 and report.summary().endswith("; 2 more, each named in the agent's log)")
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert all(error in logged for error in report.errors) and "notes.md: not UTF-8 (byte 12) (skipped)" in logged

def test_a_file_over_the_size_limit_is_refused_unread_and_keeps_what_it_gave_before(tmp_path: Path) -> None:
    # a file of any size was read whole into memory (and embedded, thousands of chunks)
    (tmp_path / "good.md").write_text(f"# Good\n\n{_para('fine')}\n")
    (tmp_path / "dump.md").write_text(f"# Dump\n\n{_para('alpha')}\n")
    ltm = LongTermMemory(HashEmbedder(), InMemoryVectorStore())
    assert sorted(index_priors(ltm, tmp_path, progress=False).added) == ["dump.md", "good.md"]
    with (tmp_path / "dump.md").open("a") as grown:
        grown.write(("# More\n\n" + _para("omega", 200) + "\n\n") * (MAX_FILE_MB * 2**20 // 1200))
    size = (tmp_path / "dump.md").stat().st_size / 2**20
    assert size > MAX_FILE_MB
    report = index_priors(ltm, tmp_path, progress=False)
    assert report.errors == [f"dump.md: {size:.1f} MB, over the {MAX_FILE_MB} MB a knowledge-prior file may hold; "
                             "split it (skipped)"]
    assert report.skipped == ["good.md"] and not report.removed and "1 refused (dump.md: " in report.summary()
    assert ltm.query("alpha", mode="bm25")[0].source == "dump.md"  # what it gave before is kept


def test_missing_folder_removes_nothing_it_does_not_own(tmp_path: Path) -> None:
    ltm = LongTermMemory(HashEmbedder(), InMemoryVectorStore())
    ltm.remember("an ordinary memory")
    report = index_priors(ltm, tmp_path / "absent", progress=False)
    assert report.added == [] and len(ltm) == 1


@pytest.mark.parametrize("progress", [True, False])
def test_shipped_example_indexes(progress: bool) -> None:
    ltm = LongTermMemory(HashEmbedder(), InMemoryVectorStore())
    report = index_priors(ltm, REPO_PRIORS, progress=progress)
    assert report.added and not report.errors and report.chunks >= 2


def test_subfolders_are_read_hidden_ones_not_and_an_empty_file_is_said_not_indexed(tmp_path: Path) -> None:
    (tmp_path / "team" / ".drafts").mkdir(parents=True)
    (tmp_path / "team" / "oncall.md").write_text("# On call\n\nThe pager rotates every Monday at nine.\n")
    (tmp_path / "team" / ".drafts" / "wip.md").write_text("# Draft\n\nNot ready.\n")
    (tmp_path / "empty.md").write_text("\n\n")
    memory = LongTermMemory(HashEmbedder(), InMemoryVectorStore())
    first = index_priors(memory, tmp_path, progress=False)
    assert first.added == ["team/oncall.md"] and first.errors == ["empty.md: no text (skipped)"]
    assert memory.query("pager rotates", limit=1)[0].source == "team/oncall.md"
    again = index_priors(memory, tmp_path, progress=False)
    assert again.added == [] and again.skipped == ["team/oncall.md"] and "0 file(s) indexed" in again.summary()


def test_a_file_edited_around_an_unchanged_section_is_embedded_once(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text(f"# A\n\n{_para('alpha')}\n\n## A2\n\n{_para('beta')}\n")
    emb = CountingEmbedder()
    ltm = LongTermMemory(emb, InMemoryVectorStore())
    index_priors(ltm, tmp_path, progress=False)
    (tmp_path / "a.md").write_text(f"# B\n\n{_para('gamma')}\n\n## A2\n\n{_para('beta')}\n")  # A2 now under B
    assert index_priors(ltm, tmp_path, progress=False).replaced == ["a.md"]
    emb.texts = 0
    again = index_priors(ltm, tmp_path, progress=False)
    assert again.skipped == ["a.md"] and emb.texts == 0, "the unchanged section kept the old file hash"
    assert sorted(m.meta["breadcrumb"] for m in ltm) == ["a.md > B", "a.md > B > A2"]


def test_a_file_name_that_is_not_utf8_is_reported_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "good.md").write_text(f"# Good\n\n{_para('fine')}\n")
    with open(os.path.join(bytes(tmp_path), b"caf\xe9.md"), "wb") as odd:  # a Latin-1 name, as unzip leaves them
        odd.write(f"# Cafe\n\n{_para('coffee')}\n".encode())
    ltm = LongTermMemory(HashEmbedder(), InMemoryVectorStore())
    report = index_priors(ltm, tmp_path, progress=False)
    assert report.added == ["good.md"] and report.errors == ["caf\ufffd.md: file name is not UTF-8 (skipped)"]
    report.summary().encode("utf-8")  # printable


def test_a_byte_order_mark_does_not_hide_the_first_heading(tmp_path: Path) -> None:
    (tmp_path / "win.md").write_bytes(f"\ufeff# Wifi\n\n{_para('password')}\n".encode())
    ltm = LongTermMemory(HashEmbedder(), InMemoryVectorStore())
    index_priors(ltm, tmp_path, progress=False)
    [chunk] = list(ltm)
    assert chunk.meta["breadcrumb"] == "win.md > Wifi" and chunk.text.startswith("# Wifi")


def test_a_unicode_file_of_a_windows_editor_is_read_by_its_byte_order_mark(tmp_path: Path) -> None:
    # Notepad's "Unicode" is UTF-16 with a byte-order mark: its NUL bytes had it refused as binary content
    (tmp_path / "wifi.md").write_bytes(f"# Wifi\r\n\r\n{_para('password')}\r\n".encode("utf-16"))
    (tmp_path / "big.md").write_bytes(codecs.BOM_UTF16_BE + f"# Router\n\n{_para('bookshelf')}\n".encode("utf-16-be"))
    (tmp_path / "wide.md").write_bytes(f"# Wide\n\n{_para('thirtytwo')}\n".encode("utf-32"))
    (tmp_path / "cut.md").write_bytes("# Cut\n\ntext".encode("utf-16")[:-1])  # an odd byte at the end
    for name, encoding, word in (("bare16.md", "utf-16-le", "cafe"), ("bare32.md", "utf-32-be", "café")):
        (tmp_path / name).write_bytes(f"# Bare\n\n{_para(word)}\n".encode(encoding))  # no mark: not "binary"
    (tmp_path / "zeros.md").write_bytes(bytes(4096))  # what a crash leaves: binary
    ltm = LongTermMemory(HashEmbedder(), InMemoryVectorStore())
    report = index_priors(ltm, tmp_path, progress=False)
    assert sorted(report.added) == ["big.md", "wide.md", "wifi.md"]
    bare = "UTF-16 or UTF-32 text without a byte-order mark; save it as UTF-8 (skipped)"
    assert report.errors == [f"bare16.md: {bare}", f"bare32.md: {bare}", "cut.md: not UTF-16 (byte 22) (skipped)",
                             "zeros.md: not Markdown (binary content) (skipped)"]
    assert sorted(m.meta["breadcrumb"] for m in ltm) == ["big.md > Router", "wide.md > Wide", "wifi.md > Wifi"]
    assert ltm.query("password", mode="bm25")[0].text.startswith("# Wifi\n")
    assert index_priors(ltm, tmp_path, progress=False).skipped == ["big.md", "wide.md", "wifi.md"]


def test_a_folder_gone_says_what_it_removed(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text(f"# A\n\n{_para('alpha')}\n")
    ltm = LongTermMemory(HashEmbedder(), InMemoryVectorStore())
    index_priors(ltm, tmp_path, progress=False)
    report = index_priors(ltm, tmp_path / "typo", progress=False)
    assert report.removed == ["a.md"] and len(ltm) == 0
    assert report.summary() == "knowledge priors: no such folder, none loaded; the chunks of 1 file(s) loaded before removed"
    index_priors(ltm, tmp_path, progress=False)
    report = index_priors(ltm, tmp_path / "a.md", progress=False)  # a file named as the folder
    assert report.summary() == (f"knowledge priors: {tmp_path / 'a.md'} is not a folder, none loaded; "
                                "the chunks of 1 file(s) loaded before removed")
    index_priors(ltm, tmp_path, progress=False)
    report = index_priors(ltm, tmp_path / ("a" * 300), progress=False)  # a name past the system's limit
    assert report.summary() == (f"knowledge priors: {tmp_path / ('a' * 300)} cannot be read (File name too long), "
                                "none loaded; the chunks loaded from it before are kept")
    assert len(ltm) == 1


def test_a_long_file_moves_the_bar_and_a_start_stopped_inside_it_is_finished_at_the_next(tmp_path: Path,
                                                                                         monkeypatch) -> None:
    from mettaclaw.memory.index import priors

    sections = "\n\n".join(f"## Part {i}\n\n{_para(f'word{i}')}" for i in range(priors.BATCH * 2 + 5))
    (tmp_path / "manual.md").write_text(f"# Manual\n\n{sections}\n\n## Part 1\n\n{_para('word1')}\n")  # one said twice
    shown: list[float] = []

    class Bar:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def add_task(self, *args, **kwargs):
            return 0

        def update(self, task, completed=None, **kwargs):
            shown.append(completed)

    monkeypatch.setattr(priors, "progress_bar", lambda enabled: Bar())
    ltm = LongTermMemory(HashEmbedder(), InMemoryVectorStore())
    whole = ltm.remember_many
    calls = []

    def stopped_after_two(items):  # the process ended while the third batch was embedded
        calls.append(len(items))
        if len(calls) > 2:
            raise KeyboardInterrupt
        return whole(items)

    monkeypatch.setattr(ltm, "remember_many", stopped_after_two)
    with pytest.raises(KeyboardInterrupt):
        index_priors(ltm, tmp_path, progress=True)
    assert calls[:2] == [priors.BATCH] * 2 and 0 < shown[1] < shown[2] < 1, "the bar moved inside the file"
    monkeypatch.setattr(ltm, "remember_many", whole)
    kept = {m.id for m in ltm}
    again = index_priors(ltm, tmp_path, progress=False)
    assert again.replaced == ["manual.md"], "the part written before the stop was not taken as the whole file"
    assert again.chunks == 5 and kept <= {m.id for m in ltm}, "only what the stopped start had not written"
    assert len(ltm) == priors.BATCH * 2 + 5
    assert index_priors(ltm, tmp_path, progress=False).skipped == ["manual.md"], "a repeated section is one row"


def test_links_to_folders_and_to_nothing_are_reported(tmp_path: Path) -> None:
    priors, outside = tmp_path / "priors", tmp_path / "outside"
    outside.mkdir()
    (outside / "far.md").write_text(f"# Far\n\n{_para('distant')}\n")
    priors.mkdir()
    (priors / "team").symlink_to(outside)
    (priors / "gone.md").symlink_to(tmp_path / "deleted.md")
    (priors / "loop.md").symlink_to(priors / "loop.md")
    (priors / "home.md").write_text(f"# Home\n\n{_para('hearth')}\n")
    (priors / "near.md").symlink_to(priors / "home.md")  # a link to a file in the folder is read
    report = index_priors(LongTermMemory(HashEmbedder(), InMemoryVectorStore()), priors, progress=False)
    assert report.added == ["home.md", "near.md"]
    assert report.errors == [f"{name}: a link to a folder or to no file (skipped)" for name in ("gone.md", "loop.md", "team")]
    os.mkfifo(priors / "pipe.md")  # passed over without a word
    report = index_priors(LongTermMemory(HashEmbedder(), InMemoryVectorStore()), priors, progress=False)
    assert report.added == ["home.md", "near.md"]
    assert "pipe.md: not a file (a pipe, socket or device; skipped)" in report.errors


def test_a_link_to_a_file_outside_the_folder_is_refused_and_what_it_gave_before_is_removed(tmp_path: Path,
                                                                                         caplog) -> None:
    """Links to folders were refused, but `x.md -> /etc/hostname` was read: any file this user can read
    went into long-term memory and, found by a query, into the prompt."""
    priors, outside = tmp_path / "priors", tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.md"
    secret.write_text(f"# Secret\n\n{_para('password')}\n")
    priors.mkdir()
    (priors / "notes").mkdir()
    (priors / "notes" / "x.md").symlink_to(secret)
    (priors / "up.md").symlink_to(Path("..") / "outside" / "secret.md")  # relative, out through ..
    ltm = LongTermMemory(HashEmbedder(), InMemoryVectorStore())
    (priors / "notes" / "held.md").symlink_to(priors / "notes" / "x.md")  # in the folder, but on to the file outside
    with caplog.at_level("WARNING"):
        report = index_priors(ltm, priors, progress=False)
    assert report.added == [] and len(ltm) == 0
    assert report.errors == [f"{name}: a link to {secret}, a file outside the knowledge-priors folder (skipped; "
                              "copy the file in to load it)" for name in ("notes/held.md", "notes/x.md", "up.md")]
    assert "notes/x.md: a link to" in caplog.text and "3 refused" in report.summary()
    # what such a link gave an older version is dropped
    ltm.remember_many([{"text": "password " * 30, "time": "knowledge_prior", "source": "up.md", "kind": "prior",
                        "extra": {"breadcrumb": "up.md > Secret", "file_hash": "h", "chunk": 0, "file_rows": 1}}])
    again = index_priors(ltm, priors, progress=False)
    assert again.removed == ["up.md"] and len(ltm) == 0


def test_a_contents_section_of_prose_is_kept_a_list_of_the_files_headings_is_not() -> None:
    kit = f"# First-aid kit\n\n## Contents\n\nThe kit holds bandages, scissors and iodine. {_para('bandage')}\n"
    assert any("iodine" in c.text for c in chunk_markdown(kit, "kit.md")), "knowledge dropped for its title"
    guide = (f"# Guide\n\n## Contents\n\n1. Intro\n2. Usage\n\n## Intro\n\n{_para('intro')}\n\n"
             f"## Usage\n\n{_para('use')}\n")
    assert not any("1. Intro" in c.text for c in chunk_markdown(guide, "g.md")), "a plain list of headings is a toc"


def test_a_name_that_looks_like_markup_is_shown_not_read_as_markup(tmp_path: Path) -> None:
    (tmp_path / "notes[").mkdir()
    (tmp_path / "notes[" / "b].md").write_text(f"# Odd\n\n{_para('bracket')}\n")  # 'notes[/b].md' to rich
    report = index_priors(LongTermMemory(HashEmbedder(), InMemoryVectorStore()), tmp_path, progress=True)
    assert report.added == ["notes[/b].md"]


def test_a_name_with_an_escape_sequence_or_a_newline_is_escaped_in_the_bar_too(tmp_path: Path, monkeypatch) -> None:
    """The start-up line escaped such a name, but the bar showed it as it is: rich writes control
    characters through, so `\x1b[2J` in a file's name cleared the terminal while priors were indexed."""
    from rich.progress import Progress

    shown: list[str] = []
    update = Progress.update
    monkeypatch.setattr(Progress, "update", lambda self, task, **kw: (shown.append(kw.get("description") or ""),
                                                                     update(self, task, **kw))[1])
    (tmp_path / "\x1b[2Jclear\nme.md").write_text(f"# Odd\n\n{_para('odd')}\n")
    report = index_priors(LongTermMemory(HashEmbedder(), InMemoryVectorStore()), tmp_path, progress=True)
    assert report.added == ["\x1b[2Jclear\nme.md"]
    assert "priors: \\x1b[2Jclear\\nme.md" in shown and not any("\x1b" in d or "\n" in d for d in shown)

def test_a_heading_padded_with_spaces_is_chunked_at_once() -> None:
    start = time.monotonic()  # the heading pattern backtracked cubically: 4,000 spaces took 141 s
    chunks = chunk_markdown("# Wide" + " " * 20_000 + "title ##\n\n" + _para("body") + "\n", "wide.md")
    assert time.monotonic() - start < 2
    assert chunks[0].breadcrumb == "wide.md > Wide title"  # its breadcrumb as recall shows it



def test_a_heading_of_100k_characters_is_kept_whole_in_the_text_and_cut_in_the_breadcrumb() -> None:
    """Each chunk under a heading carries it in its breadcrumb, which is embedded ahead of the chunk's
    text by an embedder that reads 256 tokens: under a heading of 100k characters every chunk's vector
    was the heading's, so no chunk of the section or of its subsections was found by meaning."""
    heading = " ".join(f"word{n}" for n in range(14_000))
    assert len(heading) > 100_000
    text = f"# {heading}\n\n{_para('body', 400)}\n\n## Sub\n\n{_para('sub', 400)}\n"
    chunks = chunk_markdown(text, "long.md")
    cut = "long.md > " + heading[:MAX_TITLE] + " ..."
    assert {c.breadcrumb for c in chunks} == {cut, cut + " > Sub"}
    assert all(n in " ".join(c.text for c in chunks) for n in ("word0 ", "word6999 ", "word13999\n")), "text whole"

def test_only_markdowns_line_ends_split_lines_every_other_character_is_kept() -> None:
    """str.splitlines also split at a form feed, U+0085, U+2028 and the like, dropping them from the
    text, and a `#` after a U+2028 inside a paragraph began a heading."""
    body = f"Page one\x0cpage two; wait\x85 what; a\u2028# not a heading; {_para('text')}"
    text = f"# Notes\r\n\r\n{body}\r## Next\n\n{_para('next')}\n"
    chunks = chunk_markdown(text, "n.md")
    assert [c.breadcrumb for c in chunks] == ["n.md > Notes", "n.md > Notes > Next"]  # CRLF, CR and LF alike
    assert chunks[0].text == f"# Notes\n\n{body}"

def test_a_fence_is_closed_only_by_its_own_kind_of_fence() -> None:
    """Every ``` or ~~~ line toggled the code state: the inner fence of a Markdown example in a
    ````-fence, or a ~~~ line in a ```-block, ended the code, and the `# comment` after it became a
    heading under which every later section of the file was filed."""
    example = "````markdown\n```bash\n# install it\nmake\n```\n````"
    tildes = "```text\n~~~\n# a shell comment\n~~~\n```"
    inline = "```ls``` lists the files."
    text = "\n\n".join(["# Setup", _para("setup"), example, _para("after"), "## Tools", tildes, _para("tool"),
                        inline, "## Usage", _para("usage")])
    chunks = chunk_markdown(text, "s.md")
    assert [c.breadcrumb for c in chunks] == ["s.md > Setup", "s.md > Setup > Tools", "s.md > Setup > Usage"]
    assert "# install it" in chunks[0].text and "after after" in chunks[0].text
    assert "# a shell comment" in chunks[1].text and "lists the files" in chunks[1].text

def test_refused_names_with_control_characters_keep_the_start_up_line_one_line(tmp_path: Path) -> None:
    (tmp_path / "two\nlines.txt").write_text("x")
    (tmp_path / "\x1b[2Jclear.md").write_text("\n")
    report = index_priors(LongTermMemory(HashEmbedder(), InMemoryVectorStore()), tmp_path, progress=False)
    assert sorted(report.errors) == ["\\x1b[2Jclear.md: no text (skipped)", "two\\nlines.txt: not Markdown (skipped)"]
    assert "\n" not in report.summary() and "\x1b" not in report.summary()


def test_a_folder_that_cannot_be_listed_is_said_and_what_it_gave_before_is_kept(tmp_path: Path, monkeypatch) -> None:
    # a subfolder past the system's path limit raised out of rglob: the agent did not start ("the memory
    # cannot be opened"); one that may not be read was passed over, and its files' chunks removed
    (tmp_path / "good.md").write_text(f"# Good\n\n{_para('fine')}\n")
    (tmp_path / "team").mkdir()
    (tmp_path / "team" / "oncall.md").write_text(f"# On call\n\n{_para('pager')}\n")
    fd = os.open(tmp_path, os.O_RDONLY)
    for _ in range(os.pathconf(tmp_path, "PC_PATH_MAX") // 100 + 1):  # made one level at a time, by its handle
        os.mkdir("d" * 99, dir_fd=fd)
        deeper = os.open("d" * 99, os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = deeper
    os.close(fd)
    ltm = LongTermMemory(HashEmbedder(), InMemoryVectorStore())
    report = index_priors(ltm, tmp_path, progress=False)
    assert sorted(report.added) == ["good.md", "team/oncall.md"]
    [error] = report.errors
    assert error.startswith("ddd") and error.endswith("/: folder cannot be read: File name too long (skipped)")

    scandir = os.scandir

    def refused(path):  # as a folder of another user's is to anyone but root
        if Path(path).name == "team":
            raise PermissionError(13, "Permission denied", str(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", refused)
    report = index_priors(ltm, tmp_path, progress=False)
    assert "team/: folder cannot be read: Permission denied (skipped)" in report.errors
    assert report.removed == [] and ltm.query("pager", mode="bm25")[0].source == "team/oncall.md"


def test_query_names_the_file_and_section_a_prior_came_from(open_test_memory, tmp_path: Path) -> None:
    # a prior was shown as "[longterm] (knowledge_prior) ... (id <uuid>)": which file said it, nobody could tell
    priors = tmp_path / "priors"
    (priors / "house").mkdir(parents=True)
    (priors / "house" / "cabin.md").write_text(
        "# Cabin\n\n## Wifi\n\nThe cabin wifi password is rhubarb-42; the router sits behind the bookshelf.\n")
    (priors / "long.md").write_text("# " + "Heading " * 100 + "\n\nThe boiler manual says to bleed the radiators.\n")
    memory = open_test_memory(f"knowledgePriorsDir={priors}")
    hits = memory.query("what is the cabin wifi password", 5)
    assert "(knowledge_prior: house/cabin.md > Cabin > Wifi) # Cabin" in render(hits), render(hits)
    # its own field (MCP's query gives it as `source`), the time left a time
    assert (hits[0].time, hits[0].source) == ("knowledge_prior", "house/cabin.md > Cabin > Wifi")
    shown = render(memory.query("how do I bleed the radiators", 5))
    assert "(knowledge_prior: long.md > " + ("Heading " * 25)[:200 - len("long.md > ")] + " ...) # Heading" in shown, shown


def test_a_section_said_in_two_batches_and_twice_in_the_second_is_one_row_in_chroma(open_test_memory,
                                                                                     tmp_path: Path) -> None:
    # the copy in the second batch refreshed the row the first batch wrote, and so did the copy after it:
    # its id twice in one upsert, which Chroma refuses (DuplicateIDError), and the agent did not start
    from mettaclaw.memory.index import priors

    repeated = f"## Note\n\n{_para('again')}"
    parts = [f"## Part {i}\n\n{_para(f'word{i}')}" for i in range(priors.BATCH * 2 + 5)]
    parts[1] = parts[priors.BATCH + 1] = parts[priors.BATCH + 2] = repeated
    folder = tmp_path / "priors"
    folder.mkdir()
    (folder / "manual.md").write_text("\n\n".join(parts) + "\n")
    memory = open_test_memory("chromaMode=embedded", f"knowledgePriorsDir={folder}")
    assert memory.priors.added == ["manual.md"], memory.priors.summary()
    rows = memory.index.ids_by(kind="prior")
    assert len(rows) == len(set(parts)) and sum(memory.index.get(i).text == repeated for i in rows) == 1


def test_setext_and_indented_headings_split_sections_as_commonmark_reads_them() -> None:
    """Only `#` at the start of a line was a heading: a setext `Title` over `===` / `---` and an ATX
    heading indented 1-3 spaces were text, and their sections were filed under the heading before."""
    text = (f"Garden\n======\n\n{_para('soil')}\n\n  Tomatoes and\n  peppers\n---\n\n{_para('tomato')}\n\n"
            f"   ### Pests ###\n\n{_para('aphid')}\n\n"
            f"    # four spaces: code\n\n{_para('code')}\n\n> # in a quote\n\n{_para('quote')}\n\n"
            f"- # in a list\n\n{_para('list')}\n\n---\n\n{_para('rule')}\n\n##### Five\n\n{_para('five')}\n\n"
            f"Beans\n-----\n\n{_para('bean')}\n")
    chunks = chunk_markdown(text, "garden.md")
    assert [c.breadcrumb for c in chunks] == [
        "garden.md > Garden", "garden.md > Garden > Tomatoes and peppers",
        "garden.md > Garden > Tomatoes and peppers > Pests", "garden.md > Garden > Beans"]
    assert chunks[1].text.startswith("Tomatoes and\n  peppers\n---")
    pests = chunks[2].text
    assert all(w in pests for w in ("# four spaces: code", "# in a quote", "# in a list", "rule", "##### Five"))
    assert sum(c.text.count("soil") + c.text.count("bean") for c in chunks) == 60, "nothing lost"


def test_yaml_front_matter_is_no_heading() -> None:
    """CommonMark reads a front matter block as a rule and a setext heading: "title: Garden" was a section."""
    text = f"---\ntitle: Garden\ntags: [home]\n---\n\n# Soil\n\n{_para('soil')}\n\nLater\n---\n\n{_para('bean')}\n"
    chunks = chunk_markdown(text, "g.md")
    assert [c.breadcrumb for c in chunks] == ["g.md > Soil", "g.md > Soil > Later"]  # a setext heading after it is one
    assert chunks[0].text.startswith("---\ntitle: Garden")
    assert chunk_markdown("---\ntitle: only\n", "o.md")[0].breadcrumb == "o.md"


def test_a_setext_table_of_contents_is_dropped() -> None:
    text = (f"Guide\n=====\n\nContents\n--------\n\n- [Intro](#intro)\n- [Usage](#usage)\n\n"
            f"Intro\n-----\n\n{_para('intro')}\n\nUsage\n-----\n\n{_para('use')}\n")
    chunks = chunk_markdown(text, "g.md")
    assert not any("[Intro](#intro)" in c.text for c in chunks)
    assert [c.breadcrumb for c in chunks] == ["g.md > Guide > Intro", "g.md > Guide > Usage"]
