"""Server mode: a `chroma run` on loopback, reached through HttpClient, stopped by the test."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time

import pytest

from mettaclaw.config import Config
from mettaclaw.memory.chroma import ChromaVectorStore, EmbedderMismatch, StoreUnavailable
from mettaclaw.memory.embedders import HashEmbedder, make_embedder, signature
from mettaclaw.memory.longterm import LongTermMemory, open_longterm

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def chroma_server(tmp_path):
    exe = shutil.which("chroma")
    if exe is None:
        pytest.fail("the `chroma` command (installed with chromadb) is missing")
    port = _free_port()
    proc = subprocess.Popen(
        [exe, "run", "--path", str(tmp_path / "server"), "--host", "127.0.0.1", "--port", str(port)],
        env={**os.environ, "RUST_LOG": "warn", "ANONYMIZED_TELEMETRY": "False"},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                ChromaVectorStore.server("127.0.0.1", port, embedder_signature="probe:1", collection="probe").close()
                break
            except StoreUnavailable:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"chroma run did not start: {proc.stderr.read().decode()[-2000:]}") from None
                time.sleep(0.2)
        yield port
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_server_round_trip_through_long_term_memory(chroma_server, tmp_path) -> None:
    config = Config(chromaMode="server", chromaPort=chroma_server, embeddingprovider="hash",
                    memoryDir=str(tmp_path / "mem"))
    ltm = open_longterm(config, make_embedder(config))
    written = ltm.remember("the server keeps the grocery list", tags=["shop"], source="chat", time="2024-06-01")
    dup = ltm.remember("the server keeps the grocery list", time="2024-06-02 10:00:00")
    assert not dup.created and dup.id == written.id
    assert ltm.query("grocery list", limit=1, mode="vector")[0].id == written.id
    ltm.close()
    # Another client (another process, in real use) sees the same memory after a fresh open.
    other = LongTermMemory(HashEmbedder(), ChromaVectorStore.server("127.0.0.1", chroma_server,
                                                                    embedder_signature=signature(HashEmbedder())))
    hit = other.query("where is the grocery list", source="chat", tags=["shop"])[0]
    assert (hit.id, hit.time, hit.source) == (written.id, "2024-06-02 10:00:00", "chat")
    assert other.forget(written.id) and other.vector_store.count() == 0
    with pytest.raises(EmbedderMismatch):
        ChromaVectorStore.server("127.0.0.1", chroma_server, embedder_signature="openai:text-embedding-3-small:1536")
