"""The BEAM benchmark's reading and scoring: evidence of every shape flattened (and an unknown shape
refused), the rule for the updated message ranking above the original, and the messages a turn
gathers at a pace. Tiny inline data: the real chats are not part of the project."""

import json

import pytest
from conftest import bench_module

beam = bench_module("beam")


def test_evidence_of_every_shape_is_every_message_it_names_once():
    assert beam.evidence_of([4, 2], "q") == [4, 2]
    assert beam.evidence_of([[4, 6], 8, [2, 4]], "q") == [4, 6, 8, 2]  # event ordering: one list per item
    assert beam.evidence_of({"original_info": [3], "updated_info": [9, 11]}, "q") == [3, 9, 11]
    assert beam.evidence_of({"first_statement": [5], "second_statement": [7]}, "q") == [5, 7]
    assert beam.evidence_of({"first_event": [1], "second_event": [2]}, "q") == [1, 2]
    assert beam.evidence_of([], "q") == []


@pytest.mark.parametrize("source", [{"before": [1], "after": [2]}, ["4"], [1.0], 7, [True], None])
def test_an_evidence_shape_the_reader_does_not_know_is_an_error_naming_the_question(source):
    with pytest.raises(ValueError, match="chat 3 temporal_reasoning question 0"):
        beam.evidence_of(source, "chat 3 temporal_reasoning question 0")


def test_the_updated_message_is_above_the_original_only_when_it_ranks_better_within_the_first_20():
    original, updated = [10], [20, 22]
    assert beam.updated_first([[20], [10]], original, updated)
    assert not beam.updated_first([[10], [22]], original, updated)
    assert beam.updated_first([[5], [22], [10, 20]], original, updated)  # the best rank of either counts
    assert not beam.updated_first([[10, 20]], original, updated)  # one hit showing both: not above
    assert beam.updated_first([[1], [22]], original, updated)  # the original not found at all
    assert not beam.updated_first([[1], [2]], original, updated)  # neither found
    assert not beam.updated_first([[n] for n in range(100, 120)] + [[20]], original, updated)  # rank 21


def test_an_update_whose_order_is_undefined_is_left_out_of_the_ordering():
    assert beam.update_parts({"original_info": [3], "updated_info": [9]}, "q") == ([3], [9])
    assert beam.update_parts({"original_info": [108], "updated_info": []}, "q") is None
    assert beam.update_parts({"original_info": [214], "updated_info": [214]}, "q") is None
    with pytest.raises(ValueError, match="original_info and updated_info"):
        beam.update_parts([3, 9], "q")


def test_a_turn_gathers_pace_messages_and_never_two_batches():
    batches = [[{"id": n} for n in range(7)], [{"id": n} for n in range(7, 10)]]
    assert [[m["id"] for m in turn] for turn in beam.paced(batches, 5)] == [[0, 1, 2, 3, 4], [5, 6], [7, 8, 9]]
    assert [[m["id"] for m in turn] for turn in beam.paced(batches, 1)] == [[n] for n in range(10)]


def test_each_message_maps_to_its_own_episode_and_a_turn_naming_fewer_is_an_error():
    assert beam.episode_messages([4, 5, 6], ["ep-1", "ep-2", "ep-3"]) == {"ep-1": [4], "ep-2": [5], "ep-3": [6]}
    with pytest.raises(ValueError, match="3 messages named 1"):
        beam.episode_messages([4, 5, 6], ["ep-1"])  # one episode for a whole turn would credit it with all three


def test_an_episode_stands_for_its_message_by_any_passage_and_a_derived_record_for_what_it_shows():
    listing = "assistant: " + " ".join(f"step {n} compiles module m{n} fine" for n in range(60))  # one sentence
    passage = "step 30 compiles module m30 fine step 31 compiles module m31 fine"
    text_of = {7: listing, 8: "user: My sister moved to Porto in May."}
    messages_of = {"ep-7": [7], "ep-8": [8]}
    assert not beam.shows(passage, listing)  # a passage need not show a whole sentence of its message
    assert beam.hit_messages("ep-7", passage, ["ep-7"], messages_of, text_of) == [7]
    assert beam.hit_messages("th-1", "user: My sister moved to Porto in May.", ["ep-7", "ep-8"], messages_of,
                             text_of) == [8]
    assert beam.hit_messages("th-2", "Porto", ["ep-8", "ep-99"], messages_of, text_of) == []


def test_a_late_sentence_of_a_long_message_is_shown_by_a_record_quoting_it():
    long = "assistant: " + " ".join(f"The module alpha{n} needs setting{n} before release{n}." for n in range(80))
    assert beam.shows("The module alpha75 needs setting75 before release75.", long)  # past the first 50
    assert not beam.shows("The module alpha95 needs setting95 before release95.", long)


def test_a_chat_is_read_with_its_batch_dates_and_its_questions_by_ability(tmp_path):
    def message(n, role, anchor=None):
        return {"role": role, "id": n, "content": f"message {n}", **({"time_anchor": anchor} if anchor else {})}

    batches = [{"batch_number": 1, "time_anchor": None,
                "turns": [[message(0, "user", "March-15-2024"), message(1, "assistant")], [message(2, "user")]]},
               {"batch_number": 2, "time_anchor": "April-02-2024", "turns": [[message(3, "user")]]}]
    questions = {"abstention": [{"question": "Who is Bob?"}],
                 "knowledge_update": [{"question": "Where now?", "source_chat_ids": {"original_info": [0], "updated_info": [3]}}],
                 "summarization": [{"question": "Sum it up", "source_chat_ids": []}]}
    (tmp_path / "chat.json").write_text(json.dumps(batches))
    (tmp_path / "probing_questions.json").write_text(json.dumps(questions))
    chat = beam.load_chat(tmp_path, 7)
    first, second = chat["batches"]
    assert [m["id"] for m in first] == [0, 1, 2] and [m["role"] for m in first] == ["user", "assistant", "user"]
    assert [m["time"] - first[0]["time"] for m in first] == [0, 60, 120]  # a minute apart
    assert second[0]["time"] - first[0]["time"] == 18 * 86400  # March 15 to April 2, both at the same hour
    assert [(q["ability"], q["evidence"]) for q in chat["questions"]] == [
        ("abstention", []), ("knowledge_update", [0, 3]), ("summarization", [])]
    assert chat["questions"][1]["update"] == ([0], [3])

    questions["knowledge_update"][0]["source_chat_ids"]["updated_info"] = [99]
    (tmp_path / "probing_questions.json").write_text(json.dumps(questions))
    with pytest.raises(ValueError, match=r"chat 7 knowledge_update question 0: .* no message of the chat: \[99\]"):
        beam.load_chat(tmp_path, 7)


def test_figures_are_printed_for_each_half_and_all_only_when_both_halves_are_chosen():
    assert [name for name, _ in beam.chat_sets(list(range(1, 21)), "1-20")] == ["chats 1-10", "chats 11-20", "all chats"]
    assert beam.chat_sets([3, 12], "3,12") == [("chats 1-10", [3]), ("chats 11-20", [12]), ("all chats", [3, 12])]
    assert beam.chat_sets(list(range(1, 11)), "1-10") == [("chats 1-10", list(range(1, 11)))]
    assert beam.chat_numbers("1,4,7-9") == [1, 4, 7, 8, 9]
