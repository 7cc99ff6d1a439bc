"""`python -m mettaclaw.mcp [key=value ...]`: serve one memory folder over MCP.

    python -m mettaclaw.mcp                                  stdio (an MCP client starts it)
    MEMORY_MCP_TOKEN=... python -m mettaclaw.mcp transport=http port=8765

Settings are the agent's (`memoryDir`, `embeddingprovider`, ...) plus `mcpTransport` (`transport`),
`mcpHost` (`host`), `mcpPort` (`port`) and `mcpTokenEnv`. The memory folder is locked while it serves,
as it is while the agent runs.
"""

from __future__ import annotations

import signal
import sys
from typing import Any

from mettaclaw import entry
from mettaclaw.config import clear_text_host

entry.offline()

SHORT_NAMES = {"transport": "mcpTransport", "host": "mcpHost", "port": "mcpPort", "scope": "mcpScope"}


def main(argv: list[str]) -> int:
    from mettaclaw.config import ConfigError, settings_table

    if any(arg in ("-h", "--help", "help") for arg in argv):
        print(__doc__.strip() + "\n\n" + settings_table())
        return 0
    args = []
    for arg in argv:
        key, sep, value = arg.partition("=")
        args.append(f"{SHORT_NAMES.get(key, key)}{sep}{value}")
    config = entry.load(args)
    if config is None:
        return 2
    if config.memoryServer:
        print("error: the memory server serves a memory folder of its own; drop memoryServer", file=sys.stderr)
        return 2
    if config.mcpTransport == "http":
        from .server import bearer_token

        try:
            bearer_token(config)  # refused before the memory is opened
        except ConfigError as err:
            print(f"config error: {err}", file=sys.stderr)
            return 2
    if entry.log_to(config, "mcp.log") is None:
        return 2
    from .server import serve

    memory = entry.open_memory(config)
    if memory is None:
        return 2
    # SIGTERM (a service manager, a test) ends the server like Ctrl-C: the memory is closed, not abandoned
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        if config.mcpTransport == "http":
            print(f"mettaclaw memory over MCP at http://{config.mcpHost}:{config.mcpPort}/mcp "
                  f"(bearer token from {config.mcpTokenEnv})", file=sys.stderr, flush=True)
            if (warning := exposure_warning(config)) is not None:
                print(warning, file=sys.stderr, flush=True)
        serve(memory, config)
    except KeyboardInterrupt:
        pass
    finally:
        memory.close()
    return 0


def exposure_warning(config: Any) -> str | None:
    """A warning when the HTTP server listens beyond this machine (mcpHost=0.0.0.0, a LAN address):
    the token and every memory then cross the network in clear text, which mcpHost=0.0.0.0 did
    without a word (the default, 127.0.0.1, and any loopback address are quiet)."""
    host = config.mcpHost
    if clear_text_host(f"http://{f'[{host}]' if ':' in host else host}:{config.mcpPort}/") is None:
        return None
    return (f"warning: the memory is served on {host}, reachable from other machines, over plain http: the bearer "
            "token and every memory sent travel in clear text; keep mcpHost=127.0.0.1 and reach it through an "
            "SSH tunnel or a TLS proxy")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
