"""Name normalisation and the triple extractor that contradiction detection rests on."""

import pytest

from mettaclaw.memory.semantic.normalize import (
    content_key,
    extract_triple,
    normalize_name,
    same_object,
    triple_from_atom,
)


@pytest.mark.parametrize("raw, norm", [
    ("navigate_to_kitchen", "navigate kitchen"),
    ("graspObject", "grasp object"),
    ("Coffee-Mug", "coffee mug"),
    ("HTTPServer", "http server"),
    ("the", "the"),  # all stop words: keep them rather than return an empty key
])
def test_normalize_name_follows_the_spec_examples(raw, norm):
    assert normalize_name(raw) == norm


def test_content_key_ignores_case_punctuation_and_articles():
    assert content_key("The cat sat on a mat.") == content_key("the cat sat on mat")
    assert content_key("Alice lives in Paris") != content_key("Alice lives in Rome")


def _triple_of(sentence: str) -> tuple:
    """The triple extracted from `sentence` as (subject, relation, object, polarity, functional)."""
    t = extract_triple(sentence)
    assert t is not None
    return (t.subject, t.relation, t.object, t.polarity, t.functional)


@pytest.mark.parametrize("sentence, expected", [
    ("Alice lives in Paris.", ("alice", "LIVES_IN", "paris", True, True)),
    ("Alice moved to Berlin", ("alice", "LIVES_IN", "berlin", True, True)),
    ("Paris is where Alice lives", ("alice", "LIVES_IN", "paris", True, True)),
    ("I work at Google", ("user", "WORKS_AT", "google", True, True)),
    ("Bob is employed by Acme", ("bob", "WORKS_AT", "acme", True, True)),
    ("Carol is married to Dan", ("carol", "MARRIED_TO", "dan", True, True)),
    ("My favorite color is blue", ("user", "ATTR:favourite colour", "blue", True, True)),
    ("The favourite food of Bob is pizza", ("bob", "ATTR:favourite food", "pizza", True, True)),
    ("Alice is 30 years old", ("alice", "AGE", "30", True, True)),
    ("Alice has three cats", ("alice", "COUNT:cat", "3", True, True)),
    ("Alice no longer lives in Paris", ("alice", "LIVES_IN", "paris", False, True)),
    ("The keys are in the drawer", ("keys", "LOCATED_IN", "drawer", True, True)),
    ("The meeting is at 3pm", ("meeting", "TIME", "3pm", True, True)),
    ("Alice is a doctor", ("alice", "IS_A", "doctor", True, False)),
    ("Alice likes jazz", ("alice", "VERB:like", "jazz", True, False)),
    ("Alice's sister is Carol", ("alice", "ATTR:sister", "carol", True, False)),
    ("Bob lives in a flat", ("bob", "LIVES_IN:KIND", "flat", True, False)),  # a kind, not a place
    ("Tom works at night", ("tom", "WORKS_AT:WHEN", "night", True, False)),  # a time, not an employer
    ("Tom works at a small bakery", ("tom", "WORKS_AT", "small bakery", True, True)),  # still an employer
    ("Bob was born in June", ("bob", "BORN_WHEN", "june", True, True)),
    ("Heidi's favourite season is spring", ("heidi", "ATTR:favourite season", "spring", True, True)),
    ("The cat is on a diet", ("cat", "LOCATED_ON:KIND", "diet", True, False)),
])
def test_extract_triple(sentence, expected):
    assert _triple_of(sentence) == expected


@pytest.mark.parametrize("sentence", [
    "She lives in Rome",  # unresolved pronoun: cannot be compared, so can never supersede
    "Where does Alice live?",
    "Alice lives in Paris. Bob lives in Rome.",
    "",
])
def test_no_triple_for_what_is_not_a_simple_resolvable_fact(sentence):
    assert extract_triple(sentence) is None


@pytest.mark.parametrize("sentence, expected", [
    ("sam: I live in Paris near the canal.", ("sam", "LIVES_IN", "paris near the canal", True, True)),
    ("sam: Paris is where I live", ("sam", "LIVES_IN", "paris", True, True)),
    ("ana: My favourite colour is blue.", ("ana", "ATTR:favourite colour", "blue", True, True)),
    ("user: I work at Acme", ("user", "WORKS_AT", "acme", True, True)),
    ("Note: the printer is in room 4.", ("printer", "LOCATED_IN", "room 4", True, True)),
])
def test_a_speakers_label_names_the_first_person(sentence, expected):
    """The dream keeps who said a sentence as a label ("sam: ..."): its "I" and "my" are that speaker."""
    assert _triple_of(sentence) == expected


@pytest.mark.parametrize("sentence, expected", [
    ("I don't work at Acme", ("user", "WORKS_AT", "acme", False, True)),
    ("sam: I don't live in Paris", ("sam", "LIVES_IN", "paris", False, True)),
    ("I'm 30 years old", ("user", "AGE", "30", True, True)),
    ("I've moved to Berlin", ("user", "LIVES_IN", "berlin", True, True)),
])
def test_first_person_contractions_are_read_as_their_words(sentence, expected):
    assert _triple_of(sentence) == expected


@pytest.mark.parametrize("sentence, expected", [
    ("My flight is at 7am", ("user flight", "TIME", "7am", True, True)),
    ("sam: My flight is now at 9am on Friday.", ("sam flight", "TIME", "9am on friday", True, True)),
    ("Ana's dentist appointment is at 3:30pm, Monday", ("ana dentist appointment", "TIME", "3:30pm, monday", True, True)),
    # not a clock time: no schedule, so nothing it could replace
    ("My flight is at gate 12", ("user", "ATTR:flight", "at gate 12", True, False)),
    ("My meeting is at the main office", ("user", "ATTR:meeting", "at the main office", True, False)),
    ("My flight is on Friday", ("user", "ATTR:flight", "on friday", True, False)),
])
def test_a_clock_time_of_someones_plan_is_its_one_time(sentence, expected):
    """`my X is at <clock time>` is X's time (single-valued, as "the meeting is at 3pm" is), of X's
    owner: a later time supersedes it; someone's other plan is another subject."""
    assert _triple_of(sentence) == expected


@pytest.mark.parametrize("sentence, expected", [
    ("My flight leaves at 7am", ("user flight", "TIME", "7am", True, True)),
    ("sam: My flight to Lisbon now leaves at 9am on Friday.", ("sam flight to lisbon", "TIME", "9am on friday", True, True)),
    ("My flight got moved to 9am", ("user flight", "TIME", "9am", True, True)),
    ("The meeting was moved from 3pm to 4:30pm", ("meeting", "TIME", "4:30pm", True, True)),
    ("Ana's dentist appointment has been pushed back to 11am", ("ana dentist appointment", "TIME", "11am", True, True)),
    ("The standup starts at 9:15", ("standup", "TIME", "9:15", True, True)),
    ("My train arrives at 11:30", ("user train", "TIME:END", "11:30", True, True)),  # when it ends: another time
    ("The shop closes at 5pm", ("shop", "TIME:END", "5pm", True, True)),
])
def test_a_verb_that_says_when_a_plan_is_gives_its_one_time(sentence, expected):
    """"my flight leaves at 7am" was the verb `leave` with the object "at 7am", a relation of many values,
    and "my flight got moved to 9am" a place the flight lived in: neither replaced the other."""
    assert _triple_of(sentence) == expected


@pytest.mark.parametrize("sentence", [
    "My desk got moved to the second floor", "My flight leaves from gate 12", "My flight leaves at dawn on Friday",
    "The shop opens at weekends", "Sam leaves at 7am",  # a person, not a plan: another day, another time
])
def test_a_verb_without_a_clock_time_or_of_a_person_is_no_plans_time(sentence):
    t = extract_triple(sentence)
    assert t is None or not t.relation.startswith("TIME"), t


def test_a_label_of_several_speakers_names_no_one():
    assert extract_triple("alice, bob: I live in Rome") is None


def test_states_are_not_places():
    t = extract_triple("The printer is in need of repair")
    assert t is not None and not t.functional


def test_atoms_give_triples_and_truth_values():
    t, truth = triple_from_atom("(lives_in alice paris) (stv 1 0.9)")
    assert (t.subject, t.relation, t.object, t.functional) == ("alice", "LIVES_IN", "paris", True)
    assert truth == (1.0, 0.9)
    t, _ = triple_from_atom("(--> (× alice paris) lives_in)")
    assert (t.subject, t.relation, t.object) == ("alice", "LIVES_IN", "paris")
    t, _ = triple_from_atom("(--> coffee_mug container)")
    assert (t.subject, t.relation, t.object, t.functional) == ("coffee mug", "IS_A", "container", False)
    with pytest.raises(ValueError, match="unbalanced"):
        triple_from_atom("(lives_in alice paris")


def test_same_object_allows_refinement_but_not_a_changed_number():
    assert same_object("paris", "paris france")
    assert same_object("berlin", "berlin since 2019")
    assert not same_object("paris", "berlin")
    assert not same_object("555 1234", "555 1234 5")


def test_an_atom_is_read_as_the_reasoners_read_it():
    """semantic/normalize split an atom on spaces and counted parentheses: a quoted name was two
    symbols, `) (` was balanced, and a MeTTa comment was part of the atom."""
    t, _ = triple_from_atom('(lives_in alice "New York") (stv 1 0.9)')
    assert (t.subject, t.relation, t.object) == ("alice", "LIVES_IN", "new york")
    t, _ = triple_from_atom("(lives_in alice paris) ; she moved in May")
    assert (t.subject, t.object) == ("alice", "paris")
    with pytest.raises(ValueError, match="unexpected '\\)' at character 1"):
        triple_from_atom(") lives_in alice paris (")
