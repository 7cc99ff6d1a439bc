"""Knowledge priors: `knowledge-priors/*.md` chunked by heading into long-term memory at startup.

Why by heading: a section is the unit a reader means, and its breadcrumb (`file > H1 > H2`) says
what a short paragraph is about. Why a content hash per file: a restart with nothing changed must
not re-embed anything, a changed file must not leave stale chunks behind, and a deleted file's
chunks must go.
"""

from __future__ import annotations

import codecs
import hashlib
import logging
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from mettaclaw.memory.core.tags import PRIOR_TIME
from mettaclaw.progress import label, progress_bar
from mettaclaw.textutil import one_line, read_capped

log = logging.getLogger(__name__)

PRIOR_KIND = "prior"
MIN_SECTION = 100  # chars: smaller sections are merged into the next one
MAX_SECTION = 6000  # chars: larger sections are split at blank lines
MAX_FILE_MB = 10  # one file past this is refused unread: a dump of that size is no prior (and was read whole)
MAX_TITLE = 200  # chars of one heading in a breadcrumb: a heading may be a paragraph, or a file's whole text
BATCH = 64  # chunks embedded at a time: a long file (300 chunks took minutes) moves the bar as it goes
# Markdown's line ends: str.splitlines also splits at \f, \v, \x1c-\x1e, U+0085, U+2028 and U+2029, which
# left the text without them (a U+0085, "..." in a file once saved as Windows-1252, vanished) and made
# a "#" after a U+2028 inside a paragraph a heading
_LINE_END = re.compile(r"\r\n|\r|\n")
_TOC_TITLE = re.compile(r"^(table of contents|contents|toc)$", re.IGNORECASE)
_TOC_LINE = re.compile(r"^\s*([-*+]|\d+\.)\s*\[[^\]]*\]\(#[^)]*\)\s*$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+\.)\s+(?:\[([^\]]*)\]\([^)]*\)\s*$|(.*))")


def _headings(text: str) -> dict[int, tuple[int, int, str]]:
    """{first line: (level, lines it spans, title)} of the file's headings of levels 1-4, as CommonMark
    reads them: ATX (`# Title`, indented up to 3 spaces, closing #s dropped) and setext (`Title` over
    `===` or `---`), none inside code (fenced or indented) or HTML blocks, and only those at the top
    level (a `# ` inside a quote or a list item is part of that block). Hand-written line rules missed
    setext and indented headings, and each fix to them (fences closed by their own kind, a heading
    padded with spaces that backtracked, docs/decisions/0018) was CommonMark again, so markdown-it-py, which
    rich brings, reads the blocks. Inline parsing is off: titles are the heading's raw text, and no
    inline rule can be slow on a file's prose."""
    tokens = _markdown().parse(text)
    found: dict[int, tuple[int, int, str]] = {}
    matter = _front_matter_lines(text)
    for n, token in enumerate(tokens):
        if token.type != "heading_open" or token.level != 0 or token.map is None or token.map[0] < matter:
            continue
        level = int(token.tag[1:])
        if level <= 4:
            first, end = token.map
            found[first] = (level, end - first, tokens[n + 1].content)
    return found


def _front_matter_lines(text: str) -> int:
    """How many lines a YAML front matter block at the top of the file takes (`---` on the first line,
    closed by `---` or `...`), 0 without one. CommonMark reads it as a rule and a setext heading, so a
    note's `title: ...` line was a section heading; it stays text of the first section."""
    lines = _LINE_END.split(text, maxsplit=1000)
    if not lines or lines[0].rstrip() != "---":
        return 0
    for n, line in enumerate(lines[1:1000], start=1):
        if line.rstrip() in ("---", "..."):
            return n + 1
    return 0


@lru_cache(maxsize=1)
def _markdown() -> Any:
    from markdown_it import MarkdownIt  # imported on first use: nothing heavy at import time

    return MarkdownIt("commonmark").disable("inline")


def _crumb(title: str) -> str:
    """A heading as its section's breadcrumb shows it: runs of white space as one space, cut at
    MAX_TITLE characters (the heading stays whole in the section's text). Every chunk under a heading
    carries its breadcrumb, embedded ahead of the chunk's text, and the embedder reads only the first
    256 tokens: under a heading of 100,000 characters every chunk's vector was the heading's, so no
    chunk of that section or its subsections was found by meaning, and each row held the heading again."""
    title = " ".join(title.split())
    return title if len(title) <= MAX_TITLE else title[:MAX_TITLE] + " ..."


def _is_toc(title: str, rest: list[str], titles: set[str]) -> bool:
    """A table of contents: a list of links to anchors, or a section titled "Contents" that is empty or
    lists the file's own headings. A "Contents" section of prose or of other things (what a kit holds)
    is knowledge, and was dropped for its title alone."""
    if rest and all(_TOC_LINE.match(ln) for ln in rest):
        return True
    if not _TOC_TITLE.match(title):
        return False
    items = [_LIST_ITEM.match(ln) for ln in rest]
    return all(m is not None and (m[1] or m[2] or "").strip().lower() in titles for m in items)


@dataclass
class Chunk:
    text: str
    breadcrumb: str


@dataclass
class PriorsReport:
    added: list[str] = field(default_factory=list)  # new files indexed
    replaced: list[str] = field(default_factory=list)  # changed files re-indexed
    removed: list[str] = field(default_factory=list)  # deleted files whose chunks were dropped
    skipped: list[str] = field(default_factory=list)  # unchanged files (nothing embedded)
    errors: list[str] = field(default_factory=list)  # files refused, each with its cause
    chunks: int = 0  # chunks written in this run
    folder: str = ""  # where they were read from ("" when that folder does not exist)
    unusable: str = ""  # why the folder the setting names is none: a file, or a path that cannot be read
    kept: bool = False  # the folder could not be read: the chunks loaded from it before are kept

    def summary(self) -> str:
        """One line for start-up: what was loaded, kept, dropped and refused, and from where."""
        if not self.folder:  # the chunks of files loaded from it before are dropped: say so, or a typo is silent
            gone = f"; the chunks of {len(self.removed)} file(s) loaded before removed" if self.removed else ""
            gone += "; the chunks loaded from it before are kept" if self.kept else ""
            # a file named as the folder (`knowledgePriorsDir=notes.md`) was said to be no such folder
            return f"knowledge priors: {self.unusable or 'no such folder'}, none loaded{gone}"
        line = (f"knowledge priors from {self.folder}: {len(self.added) + len(self.replaced)} file(s) indexed "
                f"({self.chunks} chunks), {len(self.skipped)} unchanged, {len(self.removed)} removed, "
                f"{len(self.errors)} refused")
        more = f"; {len(self.errors) - 3} more, each named in the agent's log" if len(self.errors) > 3 else ""
        return line + (f" ({'; '.join(self.errors[:3])}{more})" if self.errors else "")


def _sections(text: str, file_label: str) -> list[Chunk]:
    """Split at headings of levels 1-4 (see _headings); drop table-of-contents sections."""
    sections: list[tuple[list[str], list[str], int]] = []  # (heading path, lines, lines of the heading)
    path: list[str] = []
    lines: list[str] = []
    spans = 0
    headings = _headings(text)
    for n, line in enumerate(_LINE_END.split(text)):
        heading = headings.get(n)
        if heading:
            sections.append((list(path), lines, spans))
            level, spans, title = heading
            title = title.strip()
            path = path[: level - 1] + [""] * max(0, level - 1 - len(path)) + [title]
            lines = [line]
        else:
            lines.append(line)
    sections.append((list(path), lines, spans))
    out = []
    titles = {head.lower() for heads, _, _ in sections for head in heads if head}
    for heads, body, spans in sections:
        content = "\n".join(body).strip()
        if not content:
            continue
        rest = [ln for ln in body[spans:] if ln.strip()] if heads else []
        if heads and _is_toc(heads[-1], rest, titles):
            continue
        out.append(Chunk(content, " > ".join([file_label, *[_crumb(h) for h in heads if h]])))
    return out


def _split_long(chunk: Chunk) -> list[Chunk]:
    if len(chunk.text) <= MAX_SECTION:
        return [chunk]
    parts: list[str] = []
    current = ""
    for para in re.split(r"\n\s*\n", chunk.text):
        while len(para) > MAX_SECTION:  # one paragraph too long on its own: cut it hard
            if current:
                parts.append(current)
                current = ""
            parts.append(para[:MAX_SECTION])
            para = para[MAX_SECTION:]
        if current and len(current) + 2 + len(para) > MAX_SECTION:
            parts.append(current)
            current = para
        else:
            current = f"{current}\n\n{para}" if current else para
    if current.strip():
        parts.append(current)
    return [Chunk(p.strip(), chunk.breadcrumb) for p in parts if p.strip()]


def chunk_markdown(text: str, file_label: str) -> list[Chunk]:
    """Heading-aware chunks with breadcrumbs, small sections merged forward, long ones split."""
    merged: list[Chunk] = []
    carry: Chunk | None = None
    for section in _sections(text, file_label):
        if carry is not None:
            section = Chunk(f"{carry.text}\n\n{section.text}", section.breadcrumb)
            carry = None
        if len(section.text) < MIN_SECTION:
            carry = section
        else:
            merged.append(section)
    if carry is not None:  # a short last section has no next one: it joins the previous
        if merged:
            merged[-1] = Chunk(f"{merged[-1].text}\n\n{carry.text}", merged[-1].breadcrumb)
        else:
            merged.append(carry)
    return [piece for chunk in merged for piece in _split_long(chunk)]


def _shown(name: str) -> str:
    """A file's name as the one start-up line can show it: bytes that are not UTF-8 as U+FFFD, control
    characters (a newline, a terminal escape sequence) escaped, so the line stays one line and the
    terminal is not driven by a file name."""
    name = name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return one_line(name)


# the encodings a byte-order mark names, the longer marks first (UTF-32-LE's begins with UTF-16-LE's)
_MARKS = (("utf-32", codecs.BOM_UTF32_LE), ("utf-32", codecs.BOM_UTF32_BE),
          ("utf-16", codecs.BOM_UTF16_LE), ("utf-16", codecs.BOM_UTF16_BE))


def _read_markdown(path: Path) -> str:
    raw = read_capped(path, MAX_FILE_MB * 2**20)
    if raw is None:
        size = max(path.stat().st_size, MAX_FILE_MB * 2**20 + 1) / 2**20
        raise ValueError(f"{size:,.1f} MB, over the {MAX_FILE_MB} MB a knowledge-prior file may hold; split it")
    # UTF-16 or -32 by its byte-order mark: what Windows editors save as "Unicode"; its NUL bytes had it
    # refused as binary content
    encoding = next((name for name, mark in _MARKS if raw.startswith(mark)), "utf-8-sig")
    # UTF-16 or -32 text without a mark (as .NET's Encoding.Unicode writes it): every other byte of it is
    # NUL, or nearly, the rest mostly not (a file of NULs, what a crash leaves, is binary), and "binary
    # content" sent its owner looking for the wrong fault
    if encoding == "utf-8-sig" and b"\x00" in raw and len(raw) % 2 == 0:
        zeros = sorted(half.count(0) / len(half) for half in (raw[0::2], raw[1::2]))
        if zeros[1] >= 0.9 and zeros[0] <= 0.6:
            raise ValueError("UTF-16 or UTF-32 text without a byte-order mark; save it as UTF-8")
    try:  # a byte-order mark (Windows editors write one) would hide the first heading from the chunker
        text = raw.decode(encoding)
    except UnicodeDecodeError as err:
        if encoding == "utf-8-sig" and b"\x00" in raw:
            raise ValueError("not Markdown (binary content)") from None
        raise ValueError(f"not {encoding.upper().removesuffix('-SIG')} (byte {err.start})") from None
    if "\x00" in text:
        raise ValueError("not Markdown (binary content)")
    return text


@dataclass
class _Listing:
    files: list[Path] = field(default_factory=list)
    links: list[Path] = field(default_factory=list)  # to a folder or to no file
    outside: list[tuple[Path, str]] = field(default_factory=list)  # links to a file out of the folder, and where
    others: list[Path] = field(default_factory=list)  # neither file nor folder
    unread: list[tuple[Path, OSError]] = field(default_factory=list)  # subfolders that could not be listed, and why


def _walk(folder: Path) -> _Listing:
    """What is under `folder`, hidden entries left out, each kind told by what the listing says of it.
    Links to folders are not followed: one may lead back up. A link to a file is read only when the
    file is inside the folder: `x.md -> /etc/hostname` put that file into every prompt, so whatever a
    link reaches, the folder is all that is read. Not `rglob` and `is_file`: a subfolder whose path
    is past the system's limit raised out of them (ENAMETOOLONG), and the agent did not start, blamed
    on its memory; a folder it may not read (permissions) was passed over in silence."""
    found = _Listing()
    files, links, others, unread = found.files, found.links, found.others, found.unread
    root = os.path.realpath(folder)
    pending = [folder]
    while pending:
        top = pending.pop()
        try:
            with os.scandir(top) as listing:
                entries = [entry for entry in listing if not entry.name.startswith(".")]
        except OSError as err:
            unread.append((top, err))
            continue
        for entry in entries:
            try:
                is_file = entry.is_file()
            except OSError:  # a link to itself (ELOOP), or one whose target cannot be reached
                is_file = False
            if is_file and entry.is_symlink():
                target = os.path.realpath(top / entry.name)
                if os.path.commonpath([root, target]) == root:
                    files.append(top / entry.name)
                else:
                    found.outside.append((top / entry.name, target))
            elif is_file:
                files.append(top / entry.name)
            elif entry.is_symlink():
                links.append(top / entry.name)
            elif entry.is_dir(follow_symlinks=False):
                pending.append(top / entry.name)
            else:  # a pipe, socket or device: never read (a pipe blocks), but said, not passed over
                others.append(top / entry.name)
    files.sort()
    links.sort()
    found.outside.sort()
    others.sort()
    unread.sort(key=lambda pair: pair[0])
    return found


def index_priors(memory: Any, folder: Path, *, progress: bool = True) -> PriorsReport:
    """Bring the priors in `memory` in line with `folder`: embed only new or changed files."""
    folder = Path(folder)
    report = PriorsReport()
    try:  # a path past the system's limit, or under a folder this user may not enter, raised out of is_dir
        is_dir, exists = folder.is_dir(), folder.exists()
    except OSError as err:  # it may be there still: what it gave before is kept, as for a folder not listed
        report.unusable, report.kept = f"{_shown(str(folder))} cannot be read ({err.strerror or err})", True
        return report
    if exists and not is_dir:
        report.unusable = f"{_shown(str(folder))} is not a folder"
    # source -> {"hash": set of file hashes, "ids": [...], "rows": set of the row counts the file was written with}
    existing: dict[str, dict[str, Any]] = {}
    for memory_id in memory.ids_by(kind=PRIOR_KIND):
        item = memory.get(memory_id)
        entry = existing.setdefault(item.source, {"hash": set(), "ids": [], "rows": set()})
        entry["hash"].add(item.meta.get("file_hash"))
        entry["ids"].append(memory_id)
        if "file_rows" in item.meta:  # rows written before the count was kept count as complete
            entry["rows"].add(item.meta["file_rows"])
    # subfolders too (a team's notes under their own folder), each file known by its path in the folder
    listing = _walk(folder) if is_dir else _Listing()
    files, unread = listing.files, listing.unread
    report.folder = str(folder) if is_dir else ""
    # a link that leads to no file (broken, a loop), to a folder (not followed: it may lead back up) or
    # to a file outside the folder is said, not passed over in silence as if the user had never put it there
    report.errors.extend(f"{_shown(p.relative_to(folder).as_posix())}: a link to a folder or to no file (skipped)"
                         for p in listing.links)
    report.errors.extend(f"{_shown(p.relative_to(folder).as_posix())}: a link to {_shown(target)}, a file outside "
                         "the knowledge-priors folder (skipped; copy the file in to load it)"
                         for p, target in listing.outside)
    report.errors.extend(f"{_shown(p.relative_to(folder).as_posix())}: not a file (a pipe, socket or device; skipped)"
                         for p in listing.others)
    seen: set[str] = set()
    for path, err in unread:  # its files may be there still: what they gave before is kept, as for a file
        under = path.relative_to(folder).as_posix()
        report.errors.append(f"{_shown(under)}/: folder cannot be read: {err.strerror or err} (skipped)")
        seen.update(name for name in existing if under == "." or name.startswith(under + "/"))
    with progress_bar(progress) as bar:
        task = bar.add_task("knowledge priors", total=len(files))
        for done, path in enumerate(files):
            name = path.relative_to(folder).as_posix()
            try:  # a name of bytes that are not UTF-8 cannot be stored as the chunks' source, nor printed
                name.encode("utf-8")
            except UnicodeEncodeError:
                report.errors.append(f"{_shown(name)}: file name is not UTF-8 (skipped)")
                continue
            bar.update(task, completed=done, description=f"priors: {label(name)}")
            if path.suffix.lower() not in (".md", ".markdown"):
                report.errors.append(f"{_shown(name)}: not Markdown (skipped)")
                continue
            seen.add(name)
            try:
                text = _read_markdown(path)
            except (OSError, ValueError) as err:
                report.errors.append(f"{_shown(name)}: {err} (skipped)")
                continue
            digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
            old = existing.get(name)
            # unchanged, and all of it written (a start stopped while a long file was written in batches
            # left part of it, with the new hash)
            if old is not None and old["hash"] == {digest} and all(n <= len(old["ids"]) for n in old["rows"]):
                report.skipped.append(name)
                continue
            chunks = chunk_markdown(text, name)
            rows = len({c.text for c in chunks})  # a chunk said twice in one file is one row
            items = [{"text": c.text, "time": PRIOR_TIME, "source": name, "kind": PRIOR_KIND,
                      "extra": {"breadcrumb": c.breadcrumb, "file_hash": digest, "chunk": n, "file_rows": rows}}
                     for n, c in enumerate(chunks)]
            if old is not None and old["hash"] == {digest}:  # a start stopped inside this file: only what it lacks
                held = {memory.get(i).text for i in old["ids"]}
                items = [it for it in items if it["text"] not in held]
            else:
                # the changed file's rows go first: a chunk whose text did not change would otherwise be an
                # exact duplicate, refreshed in place with its old file hash and breadcrumb kept, and the
                # file, its hashes never matching again, would be embedded anew at every start
                memory.forget_many((old or {"ids": []})["ids"])
            for start in range(0, len(items), BATCH):
                memory.remember_many(items[start:start + BATCH])
                bar.update(task, completed=done + min(1.0, (start + BATCH) / len(items)))
            if not items:  # nothing to index: said once each start, never counted as indexed
                report.errors.append(f"{_shown(name)}: no text (skipped)")
                if old is not None:
                    report.removed.append(name)
                continue
            report.chunks += len(items)
            (report.replaced if old is not None else report.added).append(name)
    for source, entry in existing.items():
        if source not in seen:
            memory.forget_many(entry["ids"])
            report.removed.append(source)
    if report.errors:  # the start-up line has room for three: past them a refused file was named nowhere
        log.warning("knowledge priors from %s: %d refused: %s", _shown(str(folder)), len(report.errors),
                    "; ".join(report.errors))
    return report
