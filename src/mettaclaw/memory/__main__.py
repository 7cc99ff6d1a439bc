"""`python -m mettaclaw.memory export|import`: a whole memory as JSON lines, and back.

    python -m mettaclaw.memory export [key=value ...] > memory.jsonl
    python -m mettaclaw.memory import memory.jsonl [key=value ...]     (`-` reads standard input)

Settings are the agent's (`memoryDir`, `embeddingprovider`, ...). Import needs an empty `memoryDir` and
recomputes every vector with that folder's embedder, so an export moves between embedders. Both lock
the memory folder, so neither runs beside an agent on the same folder.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from mettaclaw import entry

if TYPE_CHECKING:
    from mettaclaw.memory.stores.lock import FolderLock

entry.offline()

INTERRUPTED = 130  # the exit status of a process stopped by Ctrl-C (128 + SIGINT), as shells report it


def main(argv: list[str]) -> int:
    from mettaclaw.config import ConfigError

    if not argv or argv[0] not in ("export", "import") or any(a in ("-h", "--help") for a in argv):
        print(__doc__.strip(), file=sys.stderr if argv and argv[0] not in ("-h", "--help") else sys.stdout)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    command, args = argv[0], argv[1:]
    source = None
    if command == "import":
        if not args or "=" in args[0]:
            print("error: import needs a file (or - for standard input) before the settings", file=sys.stderr)
            return 2
        source, args = args[0], args[1:]
    config = entry.load(args)
    if config is None:
        return 2
    if config.memoryServer:
        print("error: export and import work on a memory folder; run them where the memory server's "
              "memoryDir is (without memoryServer)", file=sys.stderr)
        return 2
    from . import transfer

    if command == "export":
        folder = config.memory_path()
        try:  # a name past the system's limit raised out of is_dir: a traceback
            is_dir, exists = folder.is_dir(), folder.exists()
        except OSError as err:
            entry.unusable(folder, err)
            return 2
        if not is_dir:  # was made, and an empty memory exported, exit 0
            why = "is not a folder" if exists else "does not exist"
            print(f"error: memoryDir {str(folder)!r} {why}, so there is no memory to export", file=sys.stderr)
            return 2
        if entry.log_to(config, "agent.log") is None:
            return 2
        memory = entry.open_memory(config, dream=False)
        if memory is None:
            return 2
        try:
            lines = transfer.write_export(memory, config, sys.stdout)
            sys.stdout.flush()
        except OSError as err:  # a full disk, a pipe closed by its reader: was a traceback
            return _export_stopped(err)
        finally:
            memory.close()
        print(f"exported {lines} lines from {config.memory_path()}", file=sys.stderr)
        return 0
    shown = "standard input" if source == "-" else source
    try:  # the file is checked before the folder is touched: a refused import leaves nothing
        try:
            handle = sys.stdin if source == "-" else open(source, encoding="utf-8")  # noqa: SIM115
        except OSError as err:
            print(f"error: cannot read {source}: {err.strerror}", file=sys.stderr)
            return 2
        with handle:
            items = list(transfer.read_export(handle))
        transfer.check_whole(items, shown)
    except KeyboardInterrupt:  # was a traceback
        print(f"\nstopped: the import was interrupted while reading {shown}; nothing was written", file=sys.stderr)
        return INTERRUPTED
    except (transfer.ImportError_, ConfigError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except UnicodeDecodeError:  # was a traceback
        print(f"error: {shown} is not UTF-8 text, so not a mettaclaw memory export", file=sys.stderr)
        return 2
    from .errors import AgentLocked

    try:  # the folder's lock, before the folder is checked and written: an agent on it is refused, not written into
        undo = transfer.Undo(config)
    except AgentLocked as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        entry.unusable(config.memory_path(), err)
        return 2
    status = 2
    try:
        if _import(config, items, undo.lock):
            status = 0
    except KeyboardInterrupt:  # was a traceback, or opening's "the knowledge priors indexed so far are kept"
        status = INTERRUPTED
    finally:
        if status == 0:
            undo.release()
        elif (why := undo.undo()) is not None:
            print(f"error: what the import wrote to {config.memory_path()} is left there ({why}); delete that "
                  "folder before importing again", file=sys.stderr)
        elif status == INTERRUPTED:
            print(f"\nstopped: the import was interrupted; what it wrote to {config.memory_path()} was taken "
                  "away, so the folder is as it was before", file=sys.stderr)
    return status


def _export_stopped(err: OSError) -> int:
    """Say in one line why the export stopped (the disk full, the reader of a pipe gone) and that what
    it wrote is no whole export; the exit status."""
    where = err.filename or "standard output"
    print(f"error: the export stopped: {err.strerror or err} ({where}); what it wrote is not a whole export, "
          "and import refuses it", file=sys.stderr)
    entry.stdout_gone()
    return 2


def _import(config: Any, items: list[dict[str, Any]], lock: FolderLock) -> bool:
    """Fill the folder, whose `lock` the import holds, with the export's `items`; False after printing
    why it could not."""
    from mettaclaw.config import ConfigError

    from . import transfer

    try:
        transfer.prepare_folder(config, items)
    except (transfer.ImportError_, ConfigError) as err:
        print(f"error: {err}", file=sys.stderr)
        return False
    if entry.log_to(config, "agent.log") is None:
        return False
    memory = entry.open_memory(config, dream=False, progress=True, importing=lock)
    if memory is None:
        return False
    try:
        counts = transfer.restore(memory, items)
    finally:
        memory.close()
    transfer.finish(config)
    print(f"imported into {config.memory_path()}: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())),
          file=sys.stderr)
    return True


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
