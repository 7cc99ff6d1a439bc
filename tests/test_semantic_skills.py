"""The skill functions: argument parsing, success strings, and SkillErrors naming the cause."""

import re

import pytest

from mettaclaw.memory.semantic import InMemorySemanticStore, SemanticMemory
from mettaclaw.memory.stores.embedders import HashEmbedder
from mettaclaw.memory.stores.vectors import InMemoryVectorStore
from mettaclaw.skills import SkillError
from mettaclaw.skills import semantic as skills


@pytest.fixture
def mem():
    return SemanticMemory(HashEmbedder(256), InMemoryVectorStore(), InMemorySemanticStore())


def ids_in(text):
    return re.findall(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", text)


def test_learn_with_tags_category_concepts_and_atoms(mem):
    out = skills.learn(mem, "Alice lives in Paris #person #home category=place episodes=ep-0,ep-12")
    assert out.startswith("LEARN-SUCCESS created")
    rec = mem.get(ids_in(out)[0])
    assert rec.tags == ["home", "person"] and rec.category == "place" and rec.source_episodes == ["ep-0", "ep-12"]
    assert skills.learn(mem, "alice lives in paris").startswith("LEARN-SUCCESS reinforced")
    out = skills.learn(mem, "Alice moved to Berlin")
    assert out.startswith(f"LEARN-SUCCESS superseded {rec.id} with ")
    out = skills.learn(mem, "concept coffee mug: a cup for hot drinks #object")
    concept = mem.get(ids_in(out)[0])
    assert concept.kind == "concept" and concept.name == "coffee mug" and concept.content == "a cup for hot drinks"
    out = skills.learn(mem, "Bob lives in Rome :: (lives_in bob rome) (stv 1 0.9)")
    assert mem.get(ids_in(out)[0]).truth == (1.0, 0.9)
    out = skills.learn(mem, "Ann is kind :: (--> ann kind) (stv 1.0 1.0)")  # PLN revision caps c at 1: kept by infer
    assert mem.get(ids_in(out)[0]).truth == (1.0, 1.0)


@pytest.mark.parametrize("arg, cause", [
    ("", "nothing to learn"),
    ("#tag-only", "nothing to learn"),
    ("Bob lives in Rome :: (lives_in bob", "unbalanced"),
    ("kind=opinion water is wet", "kind"),
    # an atom's truth value out of range was stored (stv 2 2), or dropped unread (stv -1 0.5), (stv nan 0.5)
    ("Bob is tall :: (--> bob tall) (stv 2 2)", "atom truth value (stv 2 2) must be two numbers in [0, 1]"),
    ("Bob is tall :: (--> bob tall) (stv -1 0.5)", "(stv -1 0.5)"),
    ("Bob is tall :: (--> bob tall) (stv nan 0.5)", "(stv nan 0.5)"),
    ("Bob is tall :: (--> bob tall) (stv 1)", "(stv 1)"),
])
def test_learn_errors_name_the_cause(mem, arg, cause):
    with pytest.raises(SkillError, match=re.escape(cause)):
        skills.learn(mem, arg)
    assert len(mem) == 0


def test_relate_forms_and_errors(mem):
    out = skills.relate(mem, "coffee mug IS_A container")
    assert out == "RELATE-SUCCESS coffee mug IS_A container (weight 0.10)"
    assert "weight 0.19" in skills.relate(mem, "coffee mug | is a | container")
    out = skills.relate(mem, "NASA BUILDS rockets weight=0.5")
    assert "BUILDS" in out and "new relation type BUILDS" in out and "weight 0.50" in out
    with pytest.raises(SkillError, match="no RELATION"):
        skills.relate(mem, "tea and coffee")
    with pytest.raises(SkillError, match="relate a"):
        skills.relate(mem, "a | b")
    with pytest.raises(SkillError, match="outside"):
        skills.relate(mem, "tea IS_A drink weight=3")


def test_recall_modes_and_formats(mem):
    skills.learn(mem, "Alice lives in Paris #person episodes=ep-5")
    out = skills.recall(mem, "where does Alice live")
    assert out.startswith("1. [fact c=0.60] Alice lives in Paris (id ") and "from ep-5" in out
    assert skills.recall(mem, "semantic: Alice #person").startswith("1. ")
    assert skills.recall(mem, "Alice -#person").startswith("RECALL: nothing found")
    episodic = lambda q, n: [("2026-01-01 10:00:00", f"talked about {q}", "ep-5")]  # noqa: E731
    ep = skills.recall(mem, "episodic: Alice", episodic=episodic)
    assert ep == "1. [episode 2026-01-01 10:00:00] talked about Alice (id ep-5)"
    both = skills.recall(mem, "hybrid: Alice", episodic=episodic).splitlines()
    assert both[0].startswith("1. [fact") and both[1].startswith("2. [episode")
    with pytest.raises(SkillError, match="episodic recall is not available"):
        skills.recall(mem, "episodic: Alice")
    with pytest.raises(SkillError, match="give a query"):
        skills.recall(mem, "  ")
    # filters alone list the facts they pass, whichever filter: only #tag did (-#tag, kind= were refused,
    # and `hybrid: #tag` failed as "an empty query"); episodes need a query
    skills.learn(mem, "concept Paris: the capital of France")
    assert "Paris: the capital of France" in skills.recall(mem, "kind=concept")
    assert "Alice lives in Paris" in skills.recall(mem, "-#draft")
    assert "Alice lives in Paris" in skills.recall(mem, "hybrid: #person", episodic=episodic)
    assert skills.recall(mem, "#nosuchtag") == "RECALL: nothing found for those filters (semantic)"
    with pytest.raises(SkillError, match="`recall episodic:` needs a query"):
        skills.recall(mem, "episodic: as_of=2026-01-01", episodic=episodic)
    assert skills.recall(mem, "Alice as_of=2020-01-01").startswith("RECALL: nothing found")
    for bad in ("notadate", "2026-13-45"):  # refused, not read as words of the query
        with pytest.raises(SkillError, match=f"not a time: '{bad}'"):
            skills.recall(mem, f"Alice as_of={bad}")


def test_recall_refuses_a_kind_no_record_has(mem):
    skills.learn(mem, "Alice lives in Paris")
    assert skills.recall(mem, "Alice kind=fact").startswith("1. [fact")
    with pytest.raises(SkillError, match="kind 'facts' is not one of fact, concept, theme, summary"):
        skills.recall(mem, "Alice kind=facts")  # was "RECALL: nothing found", as if no fact matched


@pytest.mark.parametrize("arg", ["Alice limit=abc", "Alice limit=2.5", "Alice limit=0", "Alice limit=-3",
                                 "episodic: Alice limit=5000", "hybrid: Alice limit=abc"])
def test_recall_refuses_a_limit_that_is_not_a_whole_number_in_range(mem, arg):
    # `limit=abc` said only "invalid literal for int() with base 10", and an episodic recall took
    # limit=0 or 5000 unchecked (the semantic layer's own check is not on its way)
    skills.learn(mem, "Alice lives in Paris")
    episodic = lambda q, n: [("2026-01-01 10:00:00", "about Alice", f"ep-{i}") for i in range(n)]  # noqa: E731
    with pytest.raises(SkillError, match=r"^limit= takes a whole number from 1 to 1000, e\.g\. limit=5, not '"):
        skills.recall(mem, arg, episodic=episodic)
    assert skills.recall(mem, "Alice limit=1000").startswith("1. [fact")


@pytest.mark.parametrize("option", ["limit=", "kind=", "category=", "as_of=", "#tag", "-#tag"])
def test_recall_help_names_every_option_recall_reads(option):
    # the model learns a skill only from its declared help, which left out limit= and category=
    from mettaclaw.skills.registry import builtin_skills

    assert option in builtin_skills().get("recall").help


def test_relate_reads_the_weight_as_its_help_writes_it_in_brackets(mem):
    # the help says `relate coffee mug IS_A container [weight=0.5]`: written so, the weight was ignored
    # (0.10) and a concept "container [weight=0.5]" was made
    assert skills.relate(mem, "coffee mug IS_A container [weight=0.5]") == \
        "RELATE-SUCCESS coffee mug IS_A container (weight 0.50)"
    assert {r.name for r in mem if r.kind == "concept"} == {"coffee mug", "container"}
    with pytest.raises(SkillError, match=r"weight nan is outside \[0, 1\]"):
        skills.relate(mem, "tea IS_A drink [weight=nan]")


def test_relate_refuses_a_weight_that_is_not_a_number(mem):
    with pytest.raises(SkillError, match=r"^weight= takes a number from 0 to 1, e\.g\. weight=0\.5, not 'abc'$"):
        skills.relate(mem, "tea IS_A drink weight=abc")  # was float()'s "could not convert string to float"
    assert len(mem) == 0


def test_supersede_and_history(mem):
    first = ids_in(skills.learn(mem, "concept espresso cup: a small cup"))[0]
    out = skills.supersede(mem, "espresso cup => a small cup of about 60 ml")
    assert out.startswith(f"SUPERSEDE-SUCCESS {first} -> ")
    assert len(ids_in(out)) == 2
    hist = skills.history(mem, "espresso cup").splitlines()
    assert len(hist) == 2 and "a small cup (id" in hist[0] and "now (current)" in hist[1]
    with pytest.raises(SkillError, match="use"):
        skills.supersede(mem, "espresso cup")
    with pytest.raises(SkillError, match="no record"):
        skills.supersede(mem, "no such thing => x")
    with pytest.raises(SkillError, match="empty"):
        skills.history(mem, "")


def test_episodic_recall_through_the_real_long_term_memory(mem):
    longterm_mod = pytest.importorskip("mettaclaw.memory.index.longterm")
    longterm = longterm_mod.LongTermMemory(HashEmbedder(256), InMemoryVectorStore())
    longterm.remember("we talked about the broken kettle", time="2026-01-02 09:00:00")
    skills.learn(mem, "The kettle is broken")
    out = skills.recall(mem, "hybrid: broken kettle", episodic=skills.episodic_search(longterm)).splitlines()
    assert out[0].startswith("1. [fact") and "The kettle is broken" in out[0]
    assert out[1].startswith("2. [episode 2026-01-02 09:00:00] we talked about the broken kettle (id ")


def test_facts_of_no_word_are_not_one_another(mem):
    """Their content key is empty, shared by every such record: `learn ❤️` was "reinforced" into an
    earlier `learn 🎉🎉` and its text was lost."""
    first = ids_in(skills.learn(mem, "🎉🎉"))[0]
    out = skills.learn(mem, "❤️")
    assert out.startswith("LEARN-SUCCESS created") and ids_in(out)[0] != first
    assert mem.get(ids_in(out)[0]).content == "❤️" and mem.get(first).content == "🎉🎉"
    assert skills.learn(mem, "🎉🎉").startswith(f"LEARN-SUCCESS reinforced {first}")  # the same text still is


def test_recall_as_of_takes_its_whole_time_or_refuses_it(mem):
    """A zone or fractions of a second were left in the query as words, and `as_of=` alone recalled
    the current facts as if no time had been asked for."""
    mem.learn("Alice lives in Paris", valid_from="2026-01-01 12:00:00")
    for when in ("2026-01-02T13:00:00+01:00", "2026-01-01 12:00:00.5", "2026-01-01T12:30:00.25"):
        assert skills.recall(mem, f"Alice as_of={when}").startswith("1. [fact c=0.60] Alice lives in Paris")
    for when in ("2025-12-31T11:00:00+00:00", "2026-01-01 11:59:59.5"):
        assert skills.recall(mem, f"Alice as_of={when}") == "RECALL: nothing found for 'Alice' (semantic)"
    assert skills.recall(mem, "as_of=2026-01-01 12:00 Alice").startswith("1. [fact")
    with pytest.raises(SkillError, match=r"not a time: '2026-01-01 12:00:00\+99'"):
        skills.recall(mem, "Alice as_of=2026-01-01 12:00:00+99")
    with pytest.raises(SkillError, match="as_of= takes a time"):
        skills.recall(mem, "Alice as_of=")


def test_episodic_recall_holds_episodes_to_as_of_and_refuses_filters_it_cannot_apply(mem):
    """as_of= was ignored for episodes (`recall episodic: Alice as_of=2020-01-01` listed those of
    2026), and so were #tags, kind= and category=, every episode listed as if it matched them."""
    mem.learn("Alice lives in Paris #person", valid_from="2026-01-01 12:00:00")
    said = [("2025-06-01 09:00:00", "Alice said hello", "ep-0"), ("2026-03-01 09:00:00", "Alice moved", "ep-90")]
    episodic = lambda q, n: said[:n]  # noqa: E731
    out = skills.recall(mem, "episodic: Alice as_of=2025-12-31", episodic=episodic)
    assert out == "1. [episode 2025-06-01 09:00:00] Alice said hello (id ep-0)"
    assert skills.recall(mem, "episodic: Alice as_of=2020-01-01", episodic=episodic).startswith("RECALL: nothing")
    assert len(skills.recall(mem, "episodic: Alice", episodic=episodic).splitlines()) == 2
    hybrid = skills.recall(mem, "hybrid: Alice as_of=2026-02-01 12:00", episodic=episodic).splitlines()
    assert len(hybrid) == 2 and "Alice lives in Paris" in hybrid[0] and "Alice said hello" in hybrid[1]
    for option in ("#person", "-#person", "kind=fact", "category=place"):
        with pytest.raises(SkillError, match="filter facts and concepts"):
            skills.recall(mem, f"episodic: Alice {option}", episodic=episodic)


@pytest.mark.parametrize("prefix", ["Episodic:", "EPISODIC: ", "mode=Episodic "])
def test_recall_reads_its_layer_in_any_case_as_query_does(mem, prefix):
    """`recall Episodic: Alice` searched facts for the words "Episodic: Alice"."""
    mem.learn("Alice lives in Paris")
    episodic = lambda q, n: [("2026-01-01 10:00:00", f"talked about {q}", "ep-5")]  # noqa: E731
    assert skills.recall(mem, f"{prefix}Alice", episodic=episodic) == \
        "1. [episode 2026-01-01 10:00:00] talked about Alice (id ep-5)"


def test_supersede_does_not_split_an_atoms_arrow(mem):
    """`->` was looked for before `|`, and found inside the old fact's `(--> ...)`: the old record
    was read as `(-`."""
    old = mem.learn("(--> sam mortal)").id
    out = skills.supersede(mem, "(--> sam mortal) | (--> sam immortal)")
    assert out.startswith(f"SUPERSEDE-SUCCESS {old} -> ") and mem.get(ids_in(out)[1]).content == "(--> sam immortal)"
    out = skills.supersede(mem, "(--> sam immortal) -> Sam lives forever")
    assert mem.get(ids_in(out)[1]).content == "Sam lives forever"


def test_superseding_an_old_version_names_the_current_one(mem):
    """It named the next version, itself superseded down a chain: the model went version by version."""
    first = mem.learn("The door code is 1111").id
    second = mem.supersede(first, "The door code is 2222").id
    third = mem.supersede(second, "The door code is 3333").id
    with pytest.raises(SkillError, match=f"already superseded by {second}; its current version is {third}: "):
        skills.supersede(mem, f"{first} => The door code is 4444")


def test_a_reference_that_is_a_concepts_name_and_a_facts_text_is_refused_as_ambiguous(mem):
    """The name was looked at alone when it matched: `forget`/`supersede Tea is hot` acted on a concept
    named "tea is hot" and left the fact, without a word."""
    fact = ids_in(skills.learn(mem, "Tea is hot"))[0]
    concept = ids_in(skills.learn(mem, "concept tea is hot: a phrase"))[0]
    for skill in (skills.history, lambda m, a: skills.supersede(m, f"{a} => Tea is cold")):
        with pytest.raises(SkillError, match=f"'Tea is hot' names 2 records: .*{fact}|'Tea is hot' names 2 records: .*{concept}"):
            skill(mem, "Tea is hot")
    assert mem.get(fact).current and mem.get(concept).current
    assert skills.history(mem, fact).endswith(f"Tea is hot (id {fact}, c=0.60)")
    skills.learn(mem, "concept coffee: coffee")  # its name and its text: one record, no ambiguity
    assert "(id " in skills.history(mem, "coffee")


@pytest.mark.parametrize("call", [
    lambda m: skills.learn(m, "Bob likes tea category= drinks"), lambda m: skills.learn(m, "Bob likes tea kind="),
    lambda m: skills.learn(m, "Bob likes tea episodes= ep-0"), lambda m: skills.relate(m, "tea IS_A drink weight="),
    lambda m: skills.recall(m, "Bob limit= 5")])
def test_an_option_with_no_value_is_refused_not_kept_as_words(mem, call):
    """`category= drinks` was no option: "category=" and "drinks" were stored as words of the fact."""
    with pytest.raises(SkillError, match=r"= takes its value right after the =, e\.g\. "):
        call(mem)
    assert len(mem) == 0


@pytest.mark.parametrize("arg", ["| IS_A |", "tea | IS_A |", " | IS_A | drink"])
def test_relate_with_an_empty_side_names_what_is_missing(mem, arg):
    """It said "nothing to learn: the content is empty", the words of the learn that makes a concept."""
    with pytest.raises(SkillError, match="relate needs a name or id on each side"):
        skills.relate(mem, arg)


def test_recall_reads_tags_in_any_case_as_learn_keeps_them(mem):
    """learn keeps tags in lower case; recall filtered by them as typed, so `#Person` found nothing and
    `-#Person` kept what was tagged so."""
    alice = ids_in(skills.learn(mem, "Alice lives in Paris #Person"))[0]
    bob = ids_in(skills.learn(mem, "Bob lives in Rome #Work"))[0]
    assert ids_in(skills.recall(mem, "#PERSON")) == [alice]
    assert ids_in(skills.recall(mem, "lives in -#Person")) == [bob]
    assert ids_in(mem.recall(None, 5, mode="logical", tags_any=["WORK"])[0].id) == [bob]


def test_an_id_written_as_prose_writes_it_names_its_record_and_never_a_new_concept(mem):
    """`relate <id>. IS_A ...`, a quoted, cut or capitalised id, `id <id>`: each but the capitalised one
    made a new concept named by its text, linked instead of the record; history and forget said no record."""
    mug = ids_in(skills.learn(mem, "concept mug: a cup"))[0]
    for ref in (f"{mug}.", f'"{mug}"', mug.upper(), f"({mug}),"):
        assert skills.history(mem, ref).endswith(f"a cup (id {mug}, c=0.60)")
        assert skills.relate(mem, f"{ref} IS_A container").startswith("RELATE-SUCCESS")
    for ref in (mug[:-1], f"id {mug}"):
        with pytest.raises(SkillError, match="no fact or concept with id"):
            skills.relate(mem, f"{ref} IS_A container")
    assert sorted(r.name for r in mem) == ["container", "mug"]
    assert [e.dst for e in mem.records.edges_of(mug) if e.type == "IS_A"] == [mem.resolve("container").id]


def test_two_concepts_of_the_same_definition_stay_two(mem):
    """The same definition was "the same normalised content": `learn concept dog: an animal` reinforced
    the concept cat, and no concept dog was made."""
    cat = ids_in(skills.learn(mem, "concept cat: an animal"))[0]
    out = skills.learn(mem, "concept dog: an animal")
    assert out.startswith("LEARN-SUCCESS created") and mem.resolve("dog").id == ids_in(out)[0] != cat
    assert skills.learn(mem, "concept cat: an animal").startswith(f"LEARN-SUCCESS reinforced {cat}")


def test_a_concept_name_is_held_to_what_a_content_holds(mem):
    """Only the definition was held to MAX_CONTENT: a name of 50,000 characters was kept whole."""
    with pytest.raises(SkillError, match="the name is 50000 chars; a name holds at most 4000"):
        skills.learn(mem, "concept " + "n" * 50_000 + ": a definition")
    assert len(mem) == 0


@pytest.mark.parametrize("name", ["ep-0", "act-12", "123e4567-e89b-12d3-a456-426614174000"])
def test_a_concept_is_not_named_like_a_records_id(mem, name):
    """`learn concept ep-0: ...` made a concept that `forget ep-0` and `spread ep-0` never reach (they
    take the episode), as relate already refuses such a name."""
    with pytest.raises(SkillError, match="is shaped like a record's id"):
        skills.learn(mem, f"concept {name}: a thing")
    assert len(mem) == 0
