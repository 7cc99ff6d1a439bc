"""The real memory stack end to end: all-MiniLM-L6-v2 + embedded Chroma + priors + remember/query."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mettaclaw.config import Config
from mettaclaw.memory.errors import EmbedderMismatch, StoreLocked
from mettaclaw.memory.index.longterm import open_longterm
from mettaclaw.memory.index.priors import index_priors
from mettaclaw.memory.stores.embedders import make_embedder

pytestmark = pytest.mark.slow
REPO_PRIORS = Path(__file__).resolve().parents[1] / "knowledge-priors"


def test_real_stack_priors_remember_query_reopen(tmp_path: Path) -> None:
    priors = tmp_path / "priors"
    shutil.copytree(REPO_PRIORS, priors)
    config = Config(memoryDir=str(tmp_path / "memory"), embeddingprovider="local", chromaMode="embedded")
    ltm = open_longterm(config, make_embedder(config))
    try:
        report = index_priors(ltm, priors, progress=False)
        assert report.added and report.chunks >= 2 and not report.errors
        ltm.remember("Maya's sister Lena lives in Porto and teaches the cello.", time="2024-03-02 18:00:00",
                     source="chat", tags=["family"])
        ltm.remember("The quarterly report is due on the first Friday of April.", time="2024-03-03 09:00:00",
                     source="chat", tags=["work"])
        ltm.remember("(--> lena musician)", kind="belief", atom="(--> lena musician) (stv 1.0 0.9)")
        # Same turn, paraphrased, in every mode: the vector path must find what BM25 cannot word-match.
        assert ltm.query("Which instrument does Maya's sibling play?", mode="vector", limit=1)[0].text.startswith(
            "Maya's sister")
        assert ltm.query("when is the report due", limit=1)[0].tags == ("work",)
        truth = ltm.query("what do NAL truth values mean", kind="prior", limit=1)[0]
        assert truth.time == "knowledge_prior" and "Truth values" in truth.meta["breadcrumb"]
        assert ltm.query("Lena", kind="belief")[0].atom == "(--> lena musician) (stv 1.0 0.9)"
        with pytest.raises(StoreLocked):
            open_longterm(config, make_embedder(config))
    finally:
        ltm.close()

    again = open_longterm(config, make_embedder(config))
    try:
        assert index_priors(again, priors, progress=False).skipped == ["about-mettaclaw.md"]
        hit = again.query("cello teacher in Porto", source="chat", since="2024-03-01", until="2024-03-02")[0]
        assert hit.time == "2024-03-02 18:00:00" and hit.score > 0
    finally:
        again.close()
    with pytest.raises(EmbedderMismatch, match="st:all-MiniLM-L6-v2:384"):
        open_longterm(config.model_copy(update={"embeddingprovider": "hash"}), make_embedder(config.model_copy(update={"embeddingprovider": "hash"})))
