"""Group a batch of episodes by meaning before summarising, so each summary is about one thing.

k-means on the L2-normalised episode vectors (cosine geometry), about 5 episodes a cluster: small
enough for a summary to be precise, large enough for recurrences to show.
"""

from __future__ import annotations

import numpy as np

CLUSTERINGS = ("kmeans", "ward")


def choose_k(n: int, per_cluster: int = 5) -> int:
    if n <= 0:
        return 0
    return max(1, min(n // 2, round(n / per_cluster)))


def cluster_vectors(vectors: np.ndarray, k: int | None = None, seed: int = 0, method: str = "kmeans") -> list[list[int]]:
    """Row indices grouped into clusters, biggest first; each row in exactly one cluster. `method`
    "ward" (agglomerative, Ward linkage) is deterministic and hierarchical: rows added later seldom
    move the earlier ones to other clusters, so what is rebuilt often stays much the same."""
    if method not in CLUSTERINGS:
        raise ValueError(f"unknown clustering method {method!r}; use kmeans or ward")
    rows = np.asarray(vectors, dtype=np.float32)
    n = len(rows)
    if n == 0:
        return []
    k = choose_k(n) if k is None else max(1, min(int(k), n))
    if k == 1 or n <= 2:
        return [list(range(n))]
    import warnings

    from sklearn.cluster import KMeans  # imported here: sklearn costs ~0.5 s to import
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():  # repeated episodes give fewer distinct points than k: fine
        warnings.simplefilter("ignore", ConvergenceWarning)
        if method == "ward":
            from sklearn.cluster import AgglomerativeClustering

            labels = AgglomerativeClustering(n_clusters=k, linkage="ward").fit_predict(rows)
        else:
            labels = KMeans(n_clusters=k, n_init=2, random_state=seed, max_iter=100).fit_predict(rows)
    groups: dict[int, list[int]] = {}
    for index, label in enumerate(labels):
        groups.setdefault(int(label), []).append(index)
    return sorted(groups.values(), key=lambda g: (-len(g), g[0]))


def word_vectors(texts: list[str]) -> np.ndarray:
    """L2-normalised TF-IDF rows of a batch: clustering by shared words, with no model call. The
    cheap alternative to embeddings when no index has embedded the episodes already (the agent's
    memory hands the dream the vectors its turns indexed, so there this saves no model call)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    if not texts:
        return np.zeros((0, 1), dtype=np.float32)
    try:
        matrix = TfidfVectorizer(stop_words="english", sublinear_tf=True).fit_transform(texts)
    except ValueError:  # only stop words: nothing to cluster on
        return np.ones((len(texts), 1), dtype=np.float32)
    return np.asarray(matrix.toarray(), dtype=np.float32)
