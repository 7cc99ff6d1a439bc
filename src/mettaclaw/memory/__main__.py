"""`python -m mettaclaw.memory export|import`: a whole memory as JSON lines, and back.

    python -m mettaclaw.memory export [key=value ...] > memory.jsonl
    python -m mettaclaw.memory import memory.jsonl [key=value ...]     (`-` reads standard input)

Settings are the agent's (`memoryDir`, `embeddingprovider`, ...). Import needs an empty `memoryDir` and
recomputes every vector with that folder's embedder, so an export moves between embedders. Both lock
the memory folder, so neither runs beside an agent on the same folder.
"""

from __future__ import annotations

import sys

from mettaclaw import entry

entry.offline()


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
    if entry.log_to(config, "agent.log") is None:
        return 2
    from . import transfer

    try:
        if command == "export":
            memory = entry.open_memory(config, dream=False)
            if memory is None:
                return 2
            try:
                lines = transfer.write_export(memory, config, sys.stdout)
            finally:
                memory.close()
            print(f"exported {lines} lines from {config.memory_path()}", file=sys.stderr)
            return 0
        try:
            handle = sys.stdin if source == "-" else open(source, encoding="utf-8")  # noqa: SIM115
        except OSError as err:
            print(f"error: cannot read {source}: {err.strerror}", file=sys.stderr)
            return 2
        with handle:
            items = list(transfer.read_export(handle))
        transfer.prepare_folder(config, items)
        memory = entry.open_memory(config, dream=False, progress=True, importing=True)
        if memory is None:
            return 2
        try:
            counts = transfer.restore(memory, items)
        finally:
            memory.close()
        transfer.finish(config)
        print(f"imported into {config.memory_path()}: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())),
              file=sys.stderr)
        return 0
    except (transfer.ImportError_, ConfigError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
