"""The inspector: with `ui=true` the running agent serves a local web page (127.0.0.1:`uiPort`) that
shows what the agent saw and did (the turn log), what it knows (search with score parts, records with
their versions and links, a picture of the graph, beliefs and inference trails) and what its dreams
changed. `serve` starts it beside the agent loop; pages are in app.py, templates in templates/."""

from __future__ import annotations

import os
import secrets
import socket
import threading
from pathlib import Path
from typing import Any


class InspectorError(RuntimeError):
    """The inspector cannot start (its port is taken)."""


class Inspector:
    """The server thread; `url` carries the token once, for the person who started the agent."""

    def __init__(self, server: Any, thread: threading.Thread, port: int, token: str) -> None:
        self.server, self.thread, self.port, self.token = server, thread, port, token

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/?token={self.token}"

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=5)


def serve(memory: Any, config: Any) -> Inspector:
    """Start the inspector for `memory` on 127.0.0.1:`config.uiPort`, in a daemon thread."""
    import uvicorn

    from .app import build

    token = os.environ.get(config.uiTokenEnv, "").strip() or secrets.token_urlsafe(18)
    with socket.socket() as probe:  # a clear error now rather than a log line from the server's thread
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", config.uiPort))
        except OSError as err:
            raise InspectorError(f"the inspector cannot listen on 127.0.0.1:{config.uiPort} ({err.strerror}); "
                                 "set uiPort to a free port") from None
    app = build(memory, Path(config.memory_path("turns.jsonl")), token, read_only=config.uiReadOnly)
    # log_config=None: uvicorn's own messages go where the agent's log goes (agent.log), not to a stream
    # handler of its own on the terminal the agent is talking on
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=config.uiPort, log_level="warning",
                                           log_config=None, access_log=False, lifespan="off"))
    thread = threading.Thread(target=server.run, name="inspector", daemon=True)
    thread.start()
    return Inspector(server, thread, config.uiPort, token)
