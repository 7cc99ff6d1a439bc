"""The inspector's pages over a live agent's memory, through HTTP (Starlette's test client): the token,
each page showing the records the agent made, paging, and forgetting only after a confirmation.
The real-browser test is tests/test_inspector_browser.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from conftest import free_port
from starlette.testclient import TestClient

from mettaclaw.inspector.app import COOKIE, PAGE, build
from mettaclaw.memory.semantic.store import RecordFilter

TOKEN = "s3cret-token"


@pytest.fixture
def lived(make_agent):
    """An agent after a few turns: a remembered fact, two beliefs and an inference, a dream."""
    replies = ["remember the spare key is under the blue flowerpot",
               "remember (--> sam human) (stv 1 0.9)\nremember (--> human mortal) (stv 1 0.9)",
               "infer is sam mortal?", "send noted"]
    agent, llm, channel, clock = make_agent(replies, sleepInterval=0)
    for text in ("where do we keep the spare key? under the blue flowerpot", "sam is a human",
                 "is sam mortal?", "thanks"):
        channel.put(text)
        agent.turn()
    agent.memory.dreamer.dream()
    return agent


def client(agent, read_only: bool = True) -> TestClient:
    app = build(agent.memory, agent.config.memory_path("turns.jsonl"), TOKEN, read_only=read_only)
    return TestClient(app, base_url="http://127.0.0.1")


def test_every_page_asks_for_the_token_and_only_on_loopback(lived) -> None:
    c = client(lived)
    for path in ("/", "/search?q=key", "/records", "/beliefs", "/dreams", "/stats"):
        assert c.get(path).status_code == 401, path
    assert c.get("/", headers={"Authorization": "Bearer wrong"}).status_code == 401
    first = c.get(f"/?token={TOKEN}", follow_redirects=False)
    assert first.status_code == 303 and first.headers["location"] == "/"  # the token leaves the address
    assert COOKIE in first.cookies
    assert c.get("/stats").status_code == 200  # the cookie carries it from then on
    other = TestClient(c.app, base_url="http://attacker.example")
    assert other.get("/", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 403


def test_the_address_printed_at_start_opens_the_inspector_in_a_browser_holding_an_earlier_starts_cookie(lived) -> None:
    """The token is new each start, and the cookie was checked before the address's `?token=`: a
    browser that had opened the inspector of an earlier start got 401 from the address printed now."""
    c = client(lived)
    c.cookies.set(COOKIE, "the-token-of-an-earlier-start")
    first = c.get(f"/?token={TOKEN}", follow_redirects=False)
    assert first.status_code == 303 and first.cookies[COOKIE] == TOKEN
    assert c.get("/stats").status_code == 200  # the new cookie from then on
    stale = client(lived)
    stale.cookies.set(COOKIE, "the-token-of-an-earlier-start")
    assert stale.get("/stats").status_code == 401  # alone it opens nothing
    assert stale.get("/stats", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200

def test_the_pages_show_what_the_agent_saw_did_and_knows(lived) -> None:
    c = client(lived)
    c.headers["Authorization"] = f"Bearer {TOKEN}"
    timeline = c.get("/").text
    assert "where do we keep the spare key?" in timeline and "the model was shown" in timeline
    assert "remember the spare key is under the blue flowerpot" in timeline  # the reply
    search = c.get("/search", params={"q": "spare key flowerpot"}).text
    assert "the spare key is under the blue flowerpot" in search and "score" in search and "bm25" in search
    beliefs = c.get("/beliefs").text
    assert "(--&gt; sam human)" in beliefs and "deduction" in beliefs  # a belief and the trail of an inference
    kept = next(iter(lived.memory.semantic.records.select(RecordFilter(tags_all=("inferred",)))))
    record = c.get(f"/record/{kept.id}").text
    assert "agent_inference" in record and "Versions" in record and "DERIVED_FROM" in record
    svg = c.get(f"/graph/{kept.id}.svg")
    assert svg.status_code == 200 and svg.headers["content-type"].startswith("image/svg+xml") and "<svg" in svg.text
    assert "DERIVED_FROM" in svg.text  # the edge's type is drawn as its label
    dreams = c.get("/dreams").text
    assert "episodes" in dreams and "added" in dreams
    stats = c.get("/stats").text
    assert "semantic records" in stats and "memory index rows" in stats
    assert c.get("/record/no-such-id").status_code == 404
    assert c.get("/search", params={"q": "x", "layer": "bogus"}).status_code == 400
    facts = c.get("/records", params={"kind": "facts"})  # was "No records of kind facts." as if there were none
    assert facts.status_code == 400 and "kind &#39;facts&#39; is not one of fact, concept, theme, summary" in facts.text
    too_long = c.get("/search", params={"q": "a" * 25_000})  # was a 500 (recall's ValueError)
    assert too_long.status_code == 400 and "the query is 25,000 characters long" in too_long.text


def test_forgetting_from_the_page_needs_write_access_and_a_confirmation(lived) -> None:
    hit = lived.memory.query("spare key flowerpot", 1)[0]
    read_only = client(lived)
    read_only.headers["Authorization"] = f"Bearer {TOKEN}"
    assert read_only.post(f"/forget/{hit.id}", data={"confirm": "yes"}).status_code == 403
    c = client(lived, read_only=False)
    c.headers["Authorization"] = f"Bearer {TOKEN}"
    page = c.get(f"/forget/{hit.id}").text
    assert "Forget it" in page and "cannot be undone" in page
    assert c.post(f"/forget/{hit.id}", data={"confirm": "yes"}).status_code == 400  # no confirmation token
    csrf = page.split('name="csrf" value="')[1].split('"')[0]
    done = c.post(f"/forget/{hit.id}", data={"confirm": "yes", "csrf": csrf})
    assert done.status_code == 200 and hit.id in done.text
    assert lived.memory.index.get(hit.id) is None
    assert hit.id not in {h.id for h in lived.memory.query("spare key flowerpot", 10)}


def test_the_timeline_is_paged(make_agent) -> None:
    agent, llm, channel, _ = make_agent(["send ok"] * (PAGE + 5), sleepInterval=0)
    for n in range(PAGE + 5):
        channel.put(f"message number {n}")
        agent.turn()
    c = client(agent)
    c.headers["Authorization"] = f"Bearer {TOKEN}"
    first = c.get("/").text
    assert f"message number {PAGE + 4}" in first and "message number 0<" not in first and 'id="older"' in first
    second = c.get("/?page=1").text
    assert "message number 0" in second and f"message number {PAGE + 4}" not in second
    with open(agent.config.memory_path("turns.jsonl"), "a") as log:  # a line of another version, a torn one
        log.write('{"turn": 998, "turn_ms": "slow", "model_ms": "x", "tokens": [1], "prompt_sections": [1], '
                  '"commands": [{"ms": "x"}], "messages": [{"text": 5}]}\n')  # values of other types: a 500
        log.write('{"turn": 999, "commands": [{"skill": "send"}, 3], "messages": [{"who": "x"}]}\n[1, 2]\n{"turn": 1000, "rep')
    timeline = c.get("/").text
    assert "turn 999" in timeline and "turn 998" in timeline


def test_the_graph_draws_dollar_signs_as_written(make_agent) -> None:
    """"$...$" in a label is a memory's words, not matplotlib math: an unknown macro failed the picture
    (500) and "$5 and $6" came out as an italic formula."""
    agent, _, _, _ = make_agent(["relate ALPHA CAUSES $\\undefinedmacro{x}$ trouble\n"
                                 "relate the price is $5 and $6 today RELATED_TO ALPHA"], sleepInterval=0)
    agent.turn()
    c = client(agent)
    c.headers["Authorization"] = f"Bearer {TOKEN}"
    alpha = next(r for r in agent.memory.semantic.records.select(RecordFilter()) if r.content == "ALPHA")
    svg = c.get(f"/graph/{alpha.id}.svg")
    assert svg.status_code == 200
    assert "$\\undefinedmacro{x}$ trouble" in svg.text and "the price is $5 and $6" in svg.text  # labels drawn
    assert "Oblique" not in svg.text  # no glyph set in math italics


def test_a_failing_page_is_a_short_500_and_a_line_in_the_log_not_a_traceback_on_the_terminal(
        make_agent, monkeypatch, capfd, caplog) -> None:
    """The agent's terminal is its conversation: a page's exception went there as uvicorn's "Exception
    in ASGI application" traceback. It belongs in the log (agent.log), with a short page for the reader."""
    from mettaclaw.inspector import app, serve

    agent, _, _, _ = make_agent([], uiPort=free_port())
    monkeypatch.setenv(agent.config.uiTokenEnv, TOKEN)
    monkeypatch.setattr(app.Pages, "stats", lambda self: 1 / 0)
    inspector = serve(agent.memory, agent.config)
    try:
        request = urllib.request.Request(f"http://127.0.0.1:{inspector.port}/stats",
                                         headers={"Authorization": f"Bearer {TOKEN}"})
        for _ in range(100):  # the server's thread is starting
            try:
                urllib.request.urlopen(request, timeout=10)
            except urllib.error.HTTPError as err:
                status, text = err.code, err.read().decode()
                break
            except urllib.error.URLError:
                time.sleep(0.05)
    finally:
        inspector.close()
    assert status == 500 and "this page failed" in text and "Traceback" not in text
    assert "Traceback" not in capfd.readouterr().err
    failed = [r for r in caplog.records if r.name == "mettaclaw.inspector.app"]
    assert failed and failed[0].exc_info[0] is ZeroDivisionError and "/stats" in failed[0].getMessage()


def test_every_turn_on_the_timeline_links_a_page(make_agent) -> None:
    """The timeline links each turn's trace record (`ep-N`), but the index has an `ep-N` row only for a
    turn with a human message, and an `act-N` row only when the agent did more than memory's own
    skills: the links of scripted and autonomous turns were 404s. The record page shows the turn."""
    agent, _, channel, _ = make_agent(["learn the kettle is in the attic", "send hello there", "shell echo hi",
                                       "send bye"], sleepInterval=0)
    agent.turn()  # no message, only a memory skill: no row at all
    channel.put("a human says hi")
    agent.turn()
    agent.turn()  # no message, a shell command: an act- row only
    channel.put("forget this turn")
    agent.turn()
    c = client(agent)
    c.headers["Authorization"] = f"Bearer {TOKEN}"
    linked = re.findall(r'href="/record/(ep-\d+)"', c.get("/").text)
    assert len(linked) == 4
    for episode in linked:
        assert c.get(f"/record/{episode}").status_code == 200, episode
    scripted = c.get(f"/record/{linked[-1]}").text  # newest first: the oldest turn is last
    assert "the kettle is in the attic" in scripted and "no message" in scripted
    assert c.get(f"/record/{linked[-1].replace('ep-', 'act-')}").status_code == 200
    shell = c.get(f"/record/{linked[1]}").text
    assert "echo hi" in shell and f'href="/record/{linked[1].replace("ep-", "act-")}"' in shell  # its index row
    agent.memory.forget(linked[0])
    timeline = c.get("/").text
    assert f'href="/record/{linked[0]}"' not in timeline and f"{linked[0]} (forgotten)" in timeline
    for forgotten in (linked[0], linked[0].replace("ep-", "act-")):  # a link to it from before says so
        page = c.get(f"/record/{forgotten}")
        assert page.status_code == 410 and f"{forgotten} was forgotten" in page.text, page.text
    assert not agent.memory.trace.has("ep-1") and not agent.memory.trace.has("act-0")  # not a record's start
    for never in ("ep-1", f"ep-{int(linked[0][3:]) + 1}", "ep-99999999"):  # no record started there
        assert c.get(f"/record/{never}").status_code == 404
    assert c.get("/record/ep-" + "9" * 5000).status_code == 404  # was a 500: int() refuses 5,000 digits


def test_nul_bytes_surrogates_and_megabyte_lines_show_on_every_page(make_agent) -> None:
    """A lone surrogate (a model's, kept in the turn log as a JSON escape) made the timeline a 500: no
    UTF-8 page can carry it, so it is shown as U+FFFD. NUL bytes and a 1 MB line are shown as they are."""
    big = "long " + "x" * 1_000_000
    agent, _, channel, _ = make_agent(["remember a nul\x00byte memory", f"send {big}"], sleepInterval=0)
    channel.put("a nul\x00byte message")
    agent.turn()
    channel.put(big)
    agent.turn()
    with open(agent.config.memory_path("turns.jsonl"), "a") as log:
        log.write(json.dumps({"turn": 3, "reply": "a lone \ud800 surrogate", "messages": [{"text": "\udcff"}]}) + "\n")
    c = client(agent)
    c.headers["Authorization"] = f"Bearer {TOKEN}"
    timeline = c.get("/")
    assert timeline.status_code == 200 and "a lone \ufffd surrogate" in timeline.text
    ids = set(re.findall(r'href="/record/([^"]+)"', timeline.text + c.get("/records").text))
    ids |= set(agent.memory.index.ids_by(kind="episode"))
    assert len(ids) >= 4
    paths = ["/records", "/beliefs", "/dreams", "/stats", "/search?q=nul%00byte", "/search?q=long+x"]
    for path in paths + [f"/record/{i}" for i in ids] + [f"/graph/{i}.svg" for i in ids]:
        assert c.get(path).status_code == 200, path


def test_a_label_the_font_cannot_draw_prints_no_warning() -> None:
    """matplotlib warns for each character its font lacks (a NUL byte, Chinese), and Python prints that
    on stderr, the agent's terminal; the character is drawn as a box all the same. A process of its own:
    pytest resets warning filters around each test and import."""
    code = ("import networkx as nx\nfrom mettaclaw.inspector.picture import draw_svg\n"
            "g = nx.MultiDiGraph()\ng.add_edge('a', 'b', key='CAUSES', type='CAUSES', weight=0.5)\n"
            "print('<svg' in draw_svg(g, 'a', {'a': 'a nul\\x00byte', 'b': '\u732b and \u9f20'}.get))\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}  # this checkout's
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert done.stdout.strip() == "True" and done.stderr == ""


def test_records_recorded_at_one_time_are_each_listed_once_across_the_pages(open_test_memory, tmp_path) -> None:
    """The records list paged by time alone (`before` the last one shown): of the records recorded at
    the same time as the page's last, those not on it were never shown, so a batch written at one
    time (an import, a dream's facts) showed its first page's worth and then skipped to older ones.
    The cursor is now the last record's time and id."""
    from conftest import FakeClock

    clock = FakeClock(1_700_000_000.0)
    memory = open_test_memory(clock=clock)
    written = []
    for n, at in enumerate([0.0] * 3 + [500.0] * (2 * PAGE + 7) + [900.0] * 2):  # one batch over three pages
        clock.now = 1_700_000_000.0 + at
        written.append(memory.semantic.learn(f"record {n}: {' '.join(f'w{n}x{k}' for k in range(4))}").id)
    assert len(set(written)) == len(written) == len(memory.semantic.records.select(RecordFilter()))
    c = TestClient(build(memory, tmp_path / "turns.jsonl", TOKEN), base_url="http://127.0.0.1")
    c.headers["Authorization"] = f"Bearer {TOKEN}"
    shown, path = [], "/records?kind=fact"
    for _ in range(10):
        page = c.get(path)
        assert page.status_code == 200
        shown += re.findall(r'href="/record/([^"]+)"', page.text)
        older = re.search(r'id="older" href="([^"]+)"', page.text)
        if older is None:
            break
        path = older[1].replace("&amp;", "&")
    assert sorted(shown) == sorted(written), f"{len(shown)} shown of {len(written)}"
    assert shown == [r.id for r in memory.semantic.records.select(RecordFilter(kinds=("fact",)))], "in the listing's order"
    for odd in ("nan", "inf", "-inf", "x"):  # a cursor that is no time lists from the newest (`nan` listed none)
        assert re.findall(r'href="/record/([^"]+)"', c.get(f"/records?kind=fact&before={odd}").text) == shown[:PAGE]


def test_a_link_to_a_record_whose_id_holds_hash_question_mark_or_percent_opens_it(make_agent) -> None:
    """Ids went into links as written: a statistic of an IRC channel's scope is `stat:channel:#team:...`,
    whose `#` the browser reads as the start of a fragment, so its link on the stats page opened
    `/record/stat:channel:` (404); `?` and `%` broke links alike. Each id in a link is percent-encoded."""
    from mettaclaw.memory.episodes.statistics import KindStatistics

    agent, _, _, _ = make_agent([], sleepInterval=0)
    odd = KindStatistics("shell run#1?x 100%", "channel:#team")
    odd.add("ep-0", "2026-01-01 10:00:00", 0, 5.0)
    agent.memory.statistics.kinds[f"{odd.scope}\t{odd.kind}"] = odd
    c = client(agent)
    c.headers["Authorization"] = f"Bearer {TOKEN}"
    links = re.findall(r'href="(/record/stat[^"]+)"', c.get("/stats").text)
    assert len(links) == 1
    page = c.get(links[0])
    assert page.status_code == 200 and "shell run#1?x 100%" in page.text


def test_a_knowledge_prior_is_not_offered_for_forgetting_and_a_forget_asked_anyway_says_why(open_test_memory,
                                                                                            tmp_path) -> None:
    """Memory.forget refuses a prior's chunk (its file brings it back at the next start) with a
    ValueError, which the page did not catch: the record page offered Forget… and confirming it
    answered 500, "this page failed", instead of what to do."""
    priors = tmp_path / "priors"
    priors.mkdir()
    (priors / "cabin.md").write_text("# Cabin\n\n## Wifi\n\nThe cabin wifi password is cedar-42.\n")
    memory = open_test_memory(f"knowledgePriorsDir={priors}")
    [chunk] = [row.id for row in memory.index]
    c = TestClient(build(memory, tmp_path / "turns.jsonl", TOKEN, read_only=False), base_url="http://127.0.0.1")
    c.headers["Authorization"] = f"Bearer {TOKEN}"
    page = c.get(f"/record/{chunk}")
    assert page.status_code == 200 and "cedar-42" in page.text and 'id="forget"' not in page.text
    csrf = c.get(f"/forget/{chunk}").text.split('name="csrf" value="')[1].split('"')[0]
    refused = c.post(f"/forget/{chunk}", data={"confirm": "yes", "csrf": csrf})
    assert refused.status_code == 400 and "knowledge prior &#39;cabin.md&#39;" in refused.text, refused.text
    assert memory.index.get(chunk) is not None


def test_an_id_of_nothing_answers_alike_on_every_page_that_takes_one(make_agent) -> None:
    """The picture of an id of nothing was a one-node graph (200) and Forget… offered to forget it (only
    its POST answered 404). Every page that takes an id now answers 404 for one that never was and 410
    for a turn forgotten since; a forgotten fact answers 404, as one that never was: nothing of it is
    kept to tell them apart, its id included."""
    agent, _, channel, _ = make_agent(["learn the kettle is in the attic", "send ok"], sleepInterval=0)
    channel.put("where is the kettle?")
    agent.turn()
    channel.put("thanks")
    agent.turn()
    memory = agent.memory
    fact = next(r for r in memory.semantic.records.select(RecordFilter()) if "kettle" in r.content)
    turn = next(m.id for m in memory.index if m.kind == "episode" and m.text == "thanks")
    c = client(agent, read_only=False)
    c.headers["Authorization"] = f"Bearer {TOKEN}"
    page = c.get(f"/forget/{fact.id}")
    assert page.status_code == 200 and "Forget it" in page.text
    assert c.get(f"/graph/{fact.id}.svg").status_code == 200 and c.get(f"/graph/{turn}.svg").status_code == 200
    csrf = page.text.split('name="csrf" value="')[1].split('"')[0]

    def answers(record_id: str) -> list[int]:
        return [c.get(f"/record/{record_id}").status_code, c.get(f"/graph/{record_id}.svg").status_code,
                c.get(f"/forget/{record_id}").status_code,
                c.post(f"/forget/{record_id}", data={"confirm": "yes", "csrf": csrf}).status_code]

    assert answers("no-such-id") == [404] * 4
    assert answers(f"ep-{int(turn[3:]) + 1}") == [404] * 4  # no turn started there
    memory.forget(turn)
    assert answers(turn) == [410] * 4
    memory.forget(fact.id)
    assert answers(fact.id) == [404] * 4
