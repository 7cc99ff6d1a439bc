"""Themes: one participant's sentences about one topic, gathered across batches, with exact provenance."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import CountingEmbedder

from mettaclaw.memory.dream import Dreamer, ListSource
from mettaclaw.memory.dream.cluster import cluster_vectors
from mettaclaw.memory.dream.episodes import DreamEpisode
from mettaclaw.memory.dream.themes import GROUP_KEY, THEME_TAG, ThemePolicy, collect, current_themes, spoken
from mettaclaw.memory.index.longterm import LongTermMemory
from mettaclaw.memory.mirror import Mirror
from mettaclaw.memory.semantic import InMemorySemanticStore, SemanticMemory
from mettaclaw.memory.stores.embedders import HashEmbedder
from mettaclaw.memory.stores.vectors import InMemoryVectorStore

T0 = 1_800_000_000.0
SPORT = ["I played football with the football club on Saturday.", "Football training with the club went long today.",
         "Our football club won the football match!", "I scored in football practice with the club."]
COOKING = ["I baked sourdough bread in the new oven.", "The sourdough bread from the oven came out crusty.",
           "Tried a rye sourdough bread recipe in the oven.", "My oven finally bakes even sourdough bread."]
FILLER = ["Hi!", "Thanks!", "Wow, great!", "See you!"]  # one content word at most


def conversation(n_batches: int = 4) -> list[DreamEpisode]:
    """Two speakers over several batches; John's football and baking lines are spread across all of them."""
    eps, t = [], T0
    for i in range(n_batches * 6):
        who = "John" if i % 2 == 0 else "Maria"
        if who == "John" and (i // 2) % 3 == 0 and SPORT:
            text = SPORT[(i // 6) % len(SPORT)]
        elif who == "John" and (i // 2) % 3 == 1:
            text = COOKING[(i // 6) % len(COOKING)]
        else:
            text = FILLER[i % len(FILLER)]
        eps.append(DreamEpisode(f"D{i}", t + 60 * i, f"{who}: {text}", meta={"who": who}))
    return eps


SMALL = ThemePolicy(size=2, max_sentences=6)


def setup(tmp_path, episodes, policy=SMALL, batch=6):
    embedder = HashEmbedder(256)
    sem = SemanticMemory(embedder, InMemoryVectorStore(), InMemorySemanticStore(), clock=lambda: T0)
    longterm = LongTermMemory(embedder, InMemoryVectorStore())
    source = ListSource(episodes)
    dreamer = Dreamer(sem, source, embedder, tmp_path / "dream.json", batch_size=batch, extract_concepts=False,
                      group_by="who", after_writes=Mirror(longterm, sem).sync, theme_policy=policy, clock=lambda: T0)
    return sem, longterm, source, dreamer


def test_a_theme_gathers_one_speakers_topic_across_batches_and_cites_exactly_what_it_shows(tmp_path):
    episodes = conversation()
    sem, longterm, _, dreamer = setup(tmp_path, episodes)
    report = dreamer.dream("test")
    john = current_themes(sem, "John")
    assert report.themes and len(john) >= 1
    text_of = {ep.id: ep.text.removeprefix("John: ") for ep in episodes}
    football = [t for t in john if "football" in t.content.lower()]
    assert football, [t.content for t in john]
    theme = football[0]
    batches = {int(e[1:]) // 6 for e in theme.source_episodes}
    assert len(batches) >= 2  # a batch summary could never have joined these
    assert theme.content.startswith("John: ") and theme.content.count("John:") == 1
    for ep in theme.source_episodes:  # provenance is exact: every cited episode's sentence is in the text
        assert text_of[ep] in theme.content
    assert THEME_TAG in theme.tags and theme.properties[GROUP_KEY] == "John" and theme.kind == "summary"
    # greetings and thanks are background, never a theme; Maria said nothing but those
    assert not current_themes(sem, "Maria")
    # the agent finds it where it looks: long-term memory holds a mirror citing the same episodes
    mirrors = longterm.ids_by(tags=[f"sem:{theme.id}"])
    assert len(mirrors) == 1 and longterm.get(next(iter(mirrors))).meta["cites"] == "|".join(theme.source_episodes)


def test_new_episodes_rebuild_a_speakers_themes_keeping_the_unchanged_and_retiring_the_stale(tmp_path):
    episodes = conversation(4)
    sem, longterm, source, dreamer = setup(tmp_path, episodes[:12])
    dreamer.dream("first")
    before = {t.id: t.content for t in current_themes(sem, "John")}
    assert before
    source.extend(episodes[12:])
    report = dreamer.dream("second")
    after = {t.id: t.content for t in current_themes(sem, "John")}
    assert set(report.themes) == set(after) - set(before)
    assert set(report.themes_retired) == set(before) - set(after)
    assert all(sem.get(rid) is None for rid in report.themes_retired)
    for rid in report.themes_retired:  # their mirrors went with them
        assert not longterm.ids_by(tags=[f"sem:{rid}"])
    assert sum(len(longterm.ids_by(tags=[f"sem:{rid}"])) for rid in after) == len(after)
    # nothing new said: nothing rebuilt
    again = dreamer.dream("third")
    assert not again.themes and not again.themes_retired


def test_a_theme_its_participant_still_confirms_is_not_pruned_for_age(tmp_path):
    """Months later John speaks again about something else: his football theme comes out the same, so
    it is confirmed as of now and kept, not pruned as if it had idled all that time."""
    now = [T0]
    embedder = HashEmbedder(256)
    sem = SemanticMemory(embedder, InMemoryVectorStore(), InMemorySemanticStore(), clock=lambda: now[0])
    episodes = conversation(4)
    source = ListSource(episodes)
    dreamer = Dreamer(sem, source, embedder, tmp_path / "dream.json", batch_size=6, extract_concepts=False,
                      group_by="who", theme_policy=SMALL, clock=lambda: now[0])
    dreamer.dream("first")
    football = [t.id for t in current_themes(sem, "John") if "football" in t.content.lower()]
    assert football
    now[0] = T0 + 200 * 86_400.0  # 0.5 ** (200 / 30) of a theme idle that long is under the prune floor
    source.extend([DreamEpisode("late1", now[0], "John: I repainted the garage door in bright green paint.",
                                meta={"who": "John"}),
                   DreamEpisode("late2", now[0] + 60, "John: The green paint on the garage door dried overnight.",
                                meta={"who": "John"})])
    report = dreamer.dream("second")
    assert not set(football) & set(report.pruned)
    assert all(sem.get(i) is not None and sem.get(i).strength > 0.9 for i in football)


def test_a_dream_cut_short_before_its_themes_rebuilds_them_next_time(tmp_path):
    episodes = conversation(3)
    sem, _, _, dreamer = setup(tmp_path, episodes)

    def crash(report):  # noqa: ANN001, ARG001 - the batches are saved, then the process dies
        raise KeyboardInterrupt

    dreamer._themes = crash
    with pytest.raises(KeyboardInterrupt):
        dreamer.dream("crashes")
    assert not current_themes(sem, "John")
    _, _, _, second = setup(tmp_path, episodes)  # a new process, same state file and (in-memory) stores
    second.semantic = sem
    assert "John" in second.state.theme_pending
    report = second.dream("resumes")
    assert report.themes and current_themes(sem, "John") and not second.state.theme_pending


def test_collect_keeps_a_window_and_ignores_a_replayed_batch():
    policy = ThemePolicy(size=2, max_sentences=4, window=5)
    kept: dict = {}
    batch = conversation(1)
    assert collect(kept, batch, "who", policy) == {"John"}
    snapshot = [list(r) for r in kept["John"]]
    assert collect(kept, batch, "who", policy) == set()
    assert kept["John"] == snapshot
    two = [DreamEpisode("Y", T0, "John: The garden shed roof leaks badly. I patched the shed roof with tar. "
                                 "Then the garden hose burst too.", meta={"who": "John"}),
           DreamEpisode("Z", T0 + 1, "John: New garden hose bought today. It cost twelve dollars at the hardware store.",
                        meta={"who": "John"})]
    collect(kept, two, "who", policy)
    assert collect(kept, two, "who", policy) == set()  # an episode of several sentences is seen too
    more = [DreamEpisode(f"X{i}", T0 + i, f"John: I repaired bicycle wheel number {i} today.", meta={"who": "John"})
            for i in range(10)]
    collect(kept, more, "who", policy)
    assert [r[0] for r in kept["John"]] == [f"X{i}" for i in range(5, 10)]  # the most recent five


def test_in_a_turn_several_people_spoke_in_each_line_is_its_speakers():
    """carol's line of a turn alice, bob and carol spoke in went to a theme of "alice, bob, carol",
    shown as "alice, bob, carol: carol: Meeting moved to room 3", where it was never carol's alone."""
    policy = ThemePolicy(size=2, max_sentences=4, window=5)
    kept: dict = {}
    turn = DreamEpisode("T", T0, "alice: I booked the train tickets to Lisbon for Friday.\n"
                                 "carol: Meeting moved to room 3 on the second floor.\n"
                                 "It starts at noon with the budget review.\n"
                                 "bob: hi", meta={"who": "alice, bob, carol"})
    assert collect(kept, [turn], "who", policy) == {"alice", "carol"}
    assert [r[2] for r in kept["carol"]] == ["Meeting moved to room 3 on the second floor.",
                                             "It starts at noon with the budget review."]
    assert [r[2] for r in kept["alice"]] == ["I booked the train tickets to Lisbon for Friday."]
    assert "alice, bob, carol" not in kept or not kept["alice, bob, carol"]
    assert spoken("Smith, John: hello there", "Smith, John") == [("Smith, John", "Smith, John: hello there")]


def test_many_participants_share_one_bound_and_the_least_recent_give_way():
    policy = ThemePolicy(size=2, max_sentences=4, window=4, total=10)
    kept: dict = {}
    for n in range(6):  # six speakers, one after another, three sentences each
        who = f"Speaker{n}"
        collect(kept, [DreamEpisode(f"{who}-{i}", T0 + 10 * n + i, f"{who}: I repaired bicycle wheel {i} in the garage.",
                                    meta={"who": who}) for i in range(3)], "who", policy)
    assert sum(len(rows) for rows in kept.values()) <= 10
    assert [len(kept[f"Speaker{n}"]) for n in (3, 4, 5)] == [3, 3, 3]  # the latest speakers keep theirs
    assert "Speaker0" not in kept


@pytest.mark.parametrize("bad", [{"size": 1}, {"max_sentences": 0}, {"window": 1}, {"min_terms": 0},
                                 {"window": 10, "total": 5}, {"clustering": "spectral"}])
def test_a_bad_theme_policy_is_refused(bad):
    with pytest.raises(ValueError, match="theme policy"):
        ThemePolicy(**bad)


def test_themes_can_be_turned_off(tmp_path):
    sem, _, _, dreamer = setup(tmp_path, conversation(), policy=None)
    report = dreamer.dream("test")
    assert not report.themes and not current_themes(sem, "John")


def test_an_index_record_is_stored_as_is_and_kept_out_of_the_graph():
    sem = SemanticMemory(HashEmbedder(64), InMemoryVectorStore(), InMemorySemanticStore(), clock=lambda: T0)
    a = sem.learn("John played football with the club.", source_episodes=["D1"])
    b = sem.learn("John played football with the club.", kind="summary", source_episodes=["D1", "D2"], index=True)
    assert a.id != b.id and b.action == "created" and len(sem) == 2  # no reconciliation: not a reinforcement
    assert sem.get(b.id).source_episodes == ["D1", "D2"] and "index" in sem.get(b.id).tags
    c = sem.learn("The club meets on Saturday mornings.", source_episodes=["D2"])
    # no DERIVED_FROM edges, and no co-occurrence either way, though it shares episodes with both facts
    assert sem.records.edges_of(b.id) == []
    assert all(b.id not in (e.src, e.dst) for e in sem.records.edges_of(c.id) + sem.records.edges_of(a.id))
    # and nothing written later reconciles into it: not the same text, not the same subject and relation
    shown = "John: I played football. The club won."
    theme = sem.learn(shown, kind="summary", source_episodes=["D1", "D2"], index=True)
    same = sem.learn(shown, kind="summary", source_episodes=["D3"])
    assert same.id != theme.id and sem.get(theme.id).source_episodes == ["D1", "D2"]
    lone = sem.learn("John lives in Leeds.", kind="summary", source_episodes=["D4", "D5"], index=True)
    moved = sem.learn("John lives in York.", source_episodes=["D6"])
    assert moved.action == "created" and sem.get(lone.id).current and sem.get(lone.id).subject is None


def test_ward_clustering_is_deterministic_and_keeps_earlier_groups_when_a_row_is_added():
    rng = np.random.default_rng(7)
    centres = np.eye(3, 16, dtype=np.float32)
    rows = np.vstack([c + 0.05 * rng.normal(size=(4, 16)) for c in centres]).astype(np.float32)
    first = cluster_vectors(rows, 3, method="ward")
    assert first == cluster_vectors(rows, 3, method="ward", seed=99)  # no random start
    assert sorted(sorted(g) for g in first) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    grown = cluster_vectors(np.vstack([rows, centres[1] + 0.05 * rng.normal(size=(1, 16))]), 3, method="ward")
    assert sorted(sorted(g) for g in grown) == [[0, 1, 2, 3], [4, 5, 6, 7, 12], [8, 9, 10, 11]]
    with pytest.raises(ValueError, match="clustering method"):
        cluster_vectors(rows, 3, method="spectral")


def test_new_themes_are_embedded_in_one_model_call_and_unchanged_ones_not_again():
    """Each theme is learned on its own; its text is embedded ahead with the others in one batch."""
    from mettaclaw.memory.dream.themes import Theme, refresh
    from mettaclaw.memory.stores.cache import CachedEmbedder

    calls: list[list[str]] = []

    class Recording(HashEmbedder):
        def embed(self, texts):
            calls.append(list(texts))
            return super().embed(texts)

    sem = SemanticMemory(CachedEmbedder(Recording(64)), InMemoryVectorStore(), InMemorySemanticStore(), clock=lambda: T0)
    found = [Theme("John", f"John: {line} Again.", (f"D{n}", f"D{n + 1}"), T0) for n, line in enumerate(SPORT + COOKING)]
    written, retired = refresh(sem, "John", found)
    assert len(written) == 8 and retired == [] and len(calls) == 1
    assert sorted(calls[0]) == sorted(" ".join(t.text.split()) for t in found)
    calls.clear()
    written, retired = refresh(sem, "John", found[:6] + [Theme("John", "John: I walk to work.", ("D20", "D21"), T0)])
    assert [sem.get(w.id).content for w in written] == ["John: I walk to work."] and len(retired) == 2
    assert calls == [["John: I walk to work."]]


UNRELATED = ["My sister Ana lives in Porto now.", "We booked the flight to Oslo for the 3rd of May.",
             "Tom can't eat gluten, so no pasta for him.", "I left my reading glasses in the blue backpack.",
             "Our anniversary dinner is at Casa Lupo.", "I promised to bring a lemon cake to Sunday's picnic."]


class NameHeavy(HashEmbedder):
    """Like a sentence model, a "Who: " label weighs in every vector: one person's sentences on any
    topic come out close together (all-MiniLM-L6-v2: 0.25-0.46 for the six UNRELATED lines said by Sam,
    -0.02-0.26 without the name)."""

    def embed(self, texts):
        vectors = super().embed(texts)
        named = np.asarray([t.startswith("Sam: ") for t in texts], dtype=np.float32)[:, None]
        vectors = vectors + 2.0 * named * super().embed(["Sam"])[0]
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.mark.parametrize("embedder", [NameHeavy(256), pytest.param("real", marks=pytest.mark.slow)])
def test_a_theme_never_glues_one_persons_unrelated_statements(embedder):
    from mettaclaw.memory.dream.themes import build
    from mettaclaw.memory.semantic.reconcile import THRESHOLDS_BY_EMBEDDER, Thresholds

    if embedder == "real":
        from mettaclaw.memory.stores.embedders import SentenceTransformerEmbedder

        embedder = SentenceTransformerEmbedder()
    cohesion = THRESHOLDS_BY_EMBEDDER.get(embedder.name, Thresholds()).relevant
    rows = [[f"D{n}", T0 + n, line] for n, line in enumerate(UNRELATED)]
    assert build("Sam", rows, embedder, ThemePolicy(size=6), cohesion=cohesion) == []
    # ...while what they said about one topic is still gathered
    rows = [[f"D{n}", T0 + n, line] for n, line in enumerate(COOKING + UNRELATED)]
    found = build("Sam", rows, embedder, ThemePolicy(size=10), cohesion=cohesion)
    assert [t.episodes for t in found] == [("D0", "D1", "D2", "D3")]


HABITS = ["The traffic was terrible this morning.", "The traffic was terrible again this morning, ugh."]


@pytest.mark.parametrize("embedder", [NameHeavy(256), pytest.param("real", marks=pytest.mark.slow)])
def test_small_talk_said_word_for_word_again_and_again_makes_no_theme(embedder):
    """A line someone says in many chats is how they talk, not what they talk about: such lines made a
    theme of Sam's small talk, which came first for "how much did Sam get for his car". Said twice, a
    sentence still counts (a plan told, then told again)."""
    from mettaclaw.memory.dream.themes import build
    from mettaclaw.memory.semantic.reconcile import THRESHOLDS_BY_EMBEDDER, Thresholds

    if embedder == "real":
        from mettaclaw.memory.stores.embedders import SentenceTransformerEmbedder

        embedder = SentenceTransformerEmbedder()
    cohesion = THRESHOLDS_BY_EMBEDDER.get(embedder.name, Thresholds()).relevant
    habits = [[f"H{n}", T0 + n, HABITS[n % 2]] for n in range(8)]  # each said in four episodes
    cooking = [[f"C{n}", T0 + 100 + n, line] for n, line in enumerate(COOKING)]
    found = build("Sam", habits + cooking, embedder, ThemePolicy(size=10), cohesion=cohesion)
    assert [t.episodes for t in found] == [("C0", "C1", "C2", "C3")], found
    twice = [[f"H{n}", T0 + n, line] for n, line in enumerate(COOKING[:2] * 2)]  # each said in two episodes
    assert [t.episodes for t in build("Sam", twice, embedder, ThemePolicy(size=10), cohesion=cohesion)] == \
        [("H0", "H2", "H1", "H3")]


CHANGED = ["The team standup is at 9:30 every morning.", "My locker number at the gym is 112.",
           "Our cat Miso only eats the salmon food.", "The team standup moved to 10:00 every morning.",
           "My locker number at the gym is 87 now.", "Our cat Miso only eats the chicken food now."]


@pytest.mark.parametrize("embedder", [NameHeavy(256), pytest.param("real", marks=pytest.mark.slow)])
def test_a_theme_never_glues_two_topics_each_said_twice(embedder):
    """A small window is one cluster, and each sentence there had a partner on its own topic, so the
    standup's time, the gym locker and the cat's food (each told, then changed) were one theme."""
    from mettaclaw.memory.dream.themes import build
    from mettaclaw.memory.semantic.reconcile import THRESHOLDS_BY_EMBEDDER, Thresholds

    if embedder == "real":
        from mettaclaw.memory.stores.embedders import SentenceTransformerEmbedder

        embedder = SentenceTransformerEmbedder()
    cohesion = THRESHOLDS_BY_EMBEDDER.get(embedder.name, Thresholds()).relevant
    rows = [[f"D{n}", T0 + n, line] for n, line in enumerate(CHANGED)]
    found = build("Sam", rows, embedder, ThemePolicy(size=8), cohesion=cohesion)
    assert sorted(t.episodes for t in found) == [("D0", "D3"), ("D1", "D4"), ("D2", "D5")], found


def test_the_next_dream_embeds_what_is_new_not_a_whole_window_larger_than_the_cache(tmp_path):
    """A rebuild reads every kept sentence of whoever spoke; a shared cache smaller than that window
    evicted each vector before its next use, so every dream embedded the whole window again."""
    from mettaclaw.memory.stores.cache import CachedEmbedder

    topics = ["garden", "piano", "bicycle", "harbour", "museum", "pottery"]
    things = ["tomatoes", "scales", "brakes", "ferries", "fossils", "bowls"]
    episodes = [DreamEpisode(f"D{i}", T0 + 60 * i, f"John: I checked the {topics[i % 6]} {things[i // 6 % 6]} "
                             f"before lunch on day {i}.", meta={"who": "John"}) for i in range(72)]
    model = CountingEmbedder()
    embedder = CachedEmbedder(model, size=8)
    sem = SemanticMemory(embedder, InMemoryVectorStore(), InMemorySemanticStore(), clock=lambda: T0)
    longterm = LongTermMemory(embedder, InMemoryVectorStore())
    source = ListSource(episodes[:70])
    dreamer = Dreamer(sem, source, embedder, tmp_path / "dream.json", batch_size=10, extract_concepts=False,
                      group_by="who", after_writes=Mirror(longterm, sem).sync, theme_policy=SMALL, clock=lambda: T0)
    assert dreamer.dream("first").themes
    source.extend(episodes[70:])
    before = model.texts
    assert dreamer.dream("next").episodes == 2
    assert model.texts - before < 70  # the 70 kept sentences, twice each, came from the cache


def test_after_a_restart_the_next_dream_reads_the_window_vectors_back_and_derives_the_same_themes(tmp_path):
    """The embedder's cache is empty after a restart; the window's vectors are kept on disk
    (cache.WindowVectors), so the first rebuild embeds what is new, not each kept sentence again, and
    derives the themes it would have derived without the restart."""
    from mettaclaw.memory.stores.cache import CachedEmbedder
    from mettaclaw.memory.stores.embedders import signature
    from mettaclaw.memory.stores.keyed_vectors import FileKeyedVectors

    topics = ["garden", "piano", "bicycle", "harbour", "museum", "pottery"]
    things = ["tomatoes", "scales", "brakes", "ferries", "fossils", "bowls"]
    episodes = [DreamEpisode(f"D{i}", T0 + 60 * i, f"John: I checked the {topics[i % 6]} {things[i // 6 % 6]} "
                             f"before lunch on day {i}.", meta={"who": "John"}) for i in range(72)]

    def start(folder, model):  # noqa: ANN001, ANN202 - a dreamer as open_memory makes one, on `folder`
        embedder = CachedEmbedder(model)
        sem = SemanticMemory(embedder, InMemoryVectorStore(), InMemorySemanticStore(), clock=lambda: T0)
        kept = FileKeyedVectors(folder / "theme-vectors", signature(model), model.dim, "float32")
        return sem, Dreamer(sem, source, embedder, folder / "dream.json", batch_size=10, extract_concepts=False,
                            group_by="who", theme_policy=SMALL, clock=lambda: T0, theme_vectors=kept)

    themes_of = {}
    for restart in (False, True):
        folder, model = tmp_path / str(restart), CountingEmbedder()
        source = ListSource(episodes[:70])
        sem, dreamer = start(folder, model)
        assert dreamer.dream("first").themes
        source.extend(episodes[70:])
        if restart:
            dreamer.close()
            sem, dreamer = start(folder, model)  # its records are gone with the process; its window is not
        before = model.texts
        assert dreamer.dream("next").episodes == 2
        if restart:
            assert model.texts - before < 70  # without the kept vectors: the 70 sentences, twice each
        themes_of[restart] = sorted((r.content, tuple(r.source_episodes)) for r in current_themes(sem, "John"))
        dreamer.close()
    assert themes_of[True] == themes_of[False] != []


def test_the_cache_serves_two_threads_at_once():
    """The turn embeds a question while the dream embeds its batch, through the same cache."""
    import threading

    from mettaclaw.memory.stores.cache import CachedEmbedder

    model = HashEmbedder(32)
    cache = CachedEmbedder(model, size=4)
    errors: list[BaseException] = []

    def hammer(offset: int) -> None:
        try:
            for i in range(400):
                texts = [f"text {(offset + i + j) % 23}" for j in range(3)]
                assert np.array_equal(cache.embed(texts), model.embed(texts))
        except BaseException as error:  # noqa: BLE001 - reported by the assertion below
            errors.append(error)

    threads = [threading.Thread(target=hammer, args=(n * 7,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors


def test_a_long_text_makes_no_theme_its_passages_are_recalled_instead():
    """An assistant's reply or a pasted document is recalled by its own passages (text.passages): its
    dozens of sentences would make themes that outrank what people said."""
    policy = ThemePolicy(size=2, max_sentences=4, window=50)
    reply = " ".join(f"Step {n}: configure the garden irrigation timer for zone {n} before the summer." for n in range(20))
    kept: dict = {}
    assert collect(kept, [DreamEpisode("L", T0, f"helper: {reply}", meta={"who": "helper"})], "who", policy) == set()
    assert collect(kept, [DreamEpisode("S", T0, "helper: The garden irrigation timer runs at dawn every day.",
                                       meta={"who": "helper"})], "who", policy) == {"helper"}
