"""bird/bundle/replay.py in the test process: which cells a name selects, the response cache a replay fills, the
config each cell is re-run under, each cell's verdict (identical, within tolerance, differs, a request the transcript
lacks, a failure, not replayable) and the report. A stand-in for the search re-runs a cell (training is not what is
tested here: tests/bundle/test_bundle_e2e.py trains)."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

import bird.loop
from bird.bundle import Bundle, BundleError, pack, replay, verify
from bird.bundle.compare import Comparison, Difference
from bird.bundle.replay import CellReplay, ReplayReport, _fill_cache, _select, _verdict, remove_work
from bird.llm.base import Generator, Message, Request, Response
from bird.llm.cache import CachingGenerator, ReplayMissError, ResponseCache
from bird.llm.journal import JournalGenerator

SMOKE_RUNS = Path(__file__).resolve().parents[1] / "analysis" / "fixtures" / "smoke_runs"
RUN = SMOKE_RUNS / "mujoco-inverted_pendulum" / "eureka-s0"
CELL = "eureka/mujoco-inverted_pendulum/seed0"
ALL = [f"{m}/mujoco-inverted_pendulum/seed{s}" for m in ("eureka", "zeroshot") for s in (0, 1)]


class _Answers(Generator):
    """A cacheable generator answering from its prompt (the paid API is the boundary it stands for)."""

    provider, cacheable = "fake-api", True

    def complete(self, request: Request) -> Response:
        return Response(text=f"answer to {request.messages[-1].content}", model=self.model, input_tokens=1,
                        output_tokens=2)


def _request(text: str, purpose: str = "reward", index: int = 0) -> Request:
    return Request(purpose, (Message("system", "s"), Message("user", text)), {"iteration": 1}, sample_index=index,
                   seed=3)


@pytest.fixture(scope="module")
def four(tmp_path_factory) -> Path:
    """The four smoke runs in one bundle (offline: no answers recorded)."""
    out = tmp_path_factory.mktemp("four") / "four.bird"
    pack([SMOKE_RUNS], out)
    return out


@pytest.fixture(scope="module")
def answered(tmp_path_factory) -> Path:
    """One smoke run whose journal records two answered calls of a cacheable generator."""
    root = tmp_path_factory.mktemp("answered")
    run = root / "run"
    shutil.copytree(RUN, run)
    gen = JournalGenerator(CachingGenerator(_Answers("m1"), ResponseCache(root / "cache"), "readwrite"),
                           run / "llm_calls.jsonl")
    gen.complete(_request("first"))
    gen.complete(_request("rate it", "judge_score", 2))
    pack([run], root / "answered.bird", cache_dir=root / "cache")
    return root / "answered.bird"


def _search(monkeypatch, source: Path = RUN, raises: BaseException | None = None, edit=None) -> list:
    """Replace the search a replay runs: it writes a copy of `source` (edited by `edit`) or raises `raises`; returns
    the list the configs it was called with go to."""
    seen: list = []

    def search(cfg, target):  # noqa: ANN001, ANN202 - bird.loop.search's signature
        seen.append((cfg, Path(target)))
        if raises is not None:
            raise raises
        shutil.copytree(source, target)
        if edit is not None:
            edit(Path(target))

    monkeypatch.setattr(bird.loop, "search", search)
    return seen


# -- selecting cells -----------------------------------------------------------------------------------------
def test_cells_are_selected_exactly_or_by_a_prefix_of_whole_names_in_the_order_asked(four):
    b = Bundle(four)
    assert _select(b, []) == ALL
    assert _select(b, ["zeroshot/mujoco-inverted_pendulum/seed1"]) == [ALL[3]]
    assert _select(b, ["zeroshot", "eureka/"]) == [ALL[2], ALL[3], ALL[0], ALL[1]]
    assert _select(b, ["eureka/mujoco-inverted_pendulum", ALL[1], "eureka"]) == ALL[:2]
    for partial in ("eur", "eureka/mujoco-inverted_pendulum/seed"):
        with pytest.raises(BundleError) as err:
            _select(b, [partial])
        assert str(err.value) == f"no cell {partial!r} in {four}; cells: {ALL}"


# -- the response cache a replay reads ----------------------------------------------------------------------
def test_the_cache_is_filled_with_the_chosen_cells_answers_in_the_caches_layout(answered, tmp_path):
    b = Bundle(answered)
    lines = b.transcript(CELL)
    cache = ResponseCache(tmp_path / "cache")
    _fill_cache(b, [CELL], cache)
    for line in lines:
        entry = cache.get(line["key"])
        assert {k: entry[k] for k in ("created", "provider", "model", "request", "response")} == {
            "created": 0.0, "provider": "fake-api", "model": "m1", "request": line["request"],
            "response": line["response"]}
    assert CachingGenerator(_Answers("m1"), cache, "replay").complete(_request("rate it", "judge_score", 2)).text == \
        "answer to rate it"
    empty = ResponseCache(tmp_path / "none")
    _fill_cache(b, [], empty)
    assert not (tmp_path / "none").exists()


# -- verdicts ------------------------------------------------------------------------------------------------
def _cmp(*diffs: Difference, only_recorded=(), only_replayed=()) -> Comparison:
    return Comparison(list(diffs), list(only_recorded), list(only_replayed))


def test_a_verdict_is_identical_within_tolerance_or_differs_by_what_was_expected():
    near = Difference("result.json:returned_score", 0.5, 0.5000001, within_tolerance=True)
    far = Difference("result.json:env_steps", 10, 12)
    assert _verdict("c", _cmp(), "bit-for-bit", 2.0) == CellReplay("c", "identical", "bit-for-bit", "bit-for-bit",
                                                                    "", 2.0)
    assert _verdict("c", _cmp(near), "bit-for-bit", 1.0) == CellReplay(
        "c", "differs", "bit-for-bit", "bit-for-bit", "1 difference(s) where bit-for-bit was expected", 1.0,
        [str(near)])
    assert _verdict("c", _cmp(near, near), "within tolerance", 1.0) == CellReplay(
        "c", "within_tolerance", "within tolerance", "within tolerance", "2 number(s) differ within their tolerance",
        1.0, [str(near), str(near)])
    assert _verdict("c", _cmp(near, far, near), "within tolerance", 3.0) == CellReplay(
        "c", "differs", "within tolerance", "within tolerance", "1 difference(s) beyond tolerance, 2 within", 3.0,
        [str(far), str(near), str(near)])  # what broke the expectation first
    listed = _verdict("c", _cmp(near, far, only_recorded=["a.csv"], only_replayed=["b.csv", "c.csv"]), "-", 0.0)
    assert listed.differences == ["only in the bundle: a.csv", "only in the replay: b.csv",
                                  "only in the replay: c.csv", str(far), str(near)]
    assert listed.detail == "4 difference(s) beyond tolerance, 1 within" and listed.status == "differs"
    only_files = _verdict("c", _cmp(only_replayed=["b"]), "within tolerance", 0.0)
    assert (only_files.status, only_files.detail) == ("differs", "1 difference(s) beyond tolerance")


def test_the_report_is_ok_only_when_every_cell_reproduced_and_renders_each_cell():
    cells = [CellReplay("a/x/seed0", "identical", "bit-for-bit", "bit-for-bit", wall_s=1.25),
             CellReplay("a/x/seed1", "within_tolerance", "within tolerance", "within tolerance", "2 number(s) differ",
                        0.04, [f"d{i}" for i in range(12)], ["llm.base_url: kept"])]
    report = ReplayReport(Path("b.bird"), Path("out"), cells)
    assert report.ok and all(c.ok for c in cells)
    assert report.render().splitlines() == [
        "replayed 2 cell(s) of b.bird into out",
        "  a/x/seed0: IDENTICAL (compared bit-for-bit; expected bit-for-bit; 1.2 s)",
        "  a/x/seed1: WITHIN_TOLERANCE (compared within tolerance; expected within tolerance; 0.0 s)",
        "    2 number(s) differ", "    config: llm.base_url: kept", *[f"    d{i}" for i in range(10)],
        "replay: every cell reproduced"]
    assert report.to_json() == {"bundle": "b.bird", "out": "out", "ok": True, "cells": [c.__dict__ for c in cells]}
    for status in ("differs", "request_mismatch", "failed", "not_replayable"):
        bad = ReplayReport(Path("b.bird"), Path("out"), [*cells, CellReplay("z", status, "-", "-")])
        assert not bad.ok and not bad.cells[-1].ok and bad.to_json()["ok"] is False
        assert bad.render().endswith("\n  z: " + status.upper() + " (compared -; expected -; 0.0 s)\nreplay: FAILED")


# -- replay ------------------------------------------------------------------------------------------------------
def test_replay_reruns_each_cell_under_the_replay_config_and_writes_the_report(four, tmp_path, monkeypatch, capsys):
    seen = _search(monkeypatch)
    out = tmp_path / "out"
    report = replay(four, out, cells=["eureka/mujoco-inverted_pendulum/seed0"], overrides=["train.n_envs=3"])
    assert [(c.id, c.status, c.compared) for c in report.cells] == [(CELL, "identical", "bit-for-bit")]
    assert report.cells[0].expected == "within tolerance"  # the smoke runs recorded no environment.json
    [(cfg, target)] = seen
    assert target == out / CELL
    assert (cfg.llm.cache, cfg.tracker.backend, cfg.run.progress, cfg.train.n_envs) == ("replay", "none", False, 3)
    cache_dir = Path(cfg.llm.cache_dir)
    assert cache_dir.parent == out / ".bundle" and cache_dir.name.startswith("llm_cache-")
    assert (out / ".bundle" / "runs" / CELL / "result.json").is_file()
    assert json.loads((out / "replay_report.json").read_text()) == report.to_json()
    assert capsys.readouterr().err.splitlines() == [f"replay: cell 1/1 {CELL} ...",
                                                    f"replay: cell 1/1 {CELL}: identical ({report.cells[0].wall_s:.1f} s)"]
    remove_work(out)
    assert not (out / ".bundle").exists() and (out / CELL / "result.json").is_file()
    remove_work(tmp_path / "never")  # nothing there: nothing to do


def test_replay_refuses_an_out_folder_that_holds_a_chosen_cell(four, tmp_path, monkeypatch):
    seen = _search(monkeypatch)
    (tmp_path / "out" / ALL[3]).mkdir(parents=True)
    replay(four, tmp_path / "out", cells=[ALL[0]])  # another cell: replayed
    with pytest.raises(BundleError, match=f"^{tmp_path / 'out' / ALL[3]} already exists; replay into a fresh folder$"):
        replay(four, tmp_path / "out", cells=["zeroshot"])
    assert len(seen) == 1 and not (tmp_path / "out" / ALL[2]).exists()


def test_a_cell_config_that_is_refused_stops_the_replay_naming_the_cell(four, tmp_path, monkeypatch):
    seen = _search(monkeypatch)
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    (run / "config.yaml").write_text((run / "config.yaml").read_text() + "extra_key: ${oc.env:HOME}\n")
    pack([run], tmp_path / "b.bird", cache_dir=tmp_path / "cache")
    with pytest.raises(BundleError, match=f"^{CELL}: .*interpolation.*; nothing was replayed$"):
        replay(tmp_path / "b.bird", tmp_path / "out")
    with pytest.raises(BundleError, match=f"(?s)^{CELL}: .*no_such_key.*; nothing was replayed$"):
        replay(four, tmp_path / "out2", cells=[CELL], overrides=["train.no_such_key=1"])
    assert not seen


def test_a_cell_packed_without_its_answers_is_not_replayed(tmp_path, monkeypatch):
    seen = _search(monkeypatch)
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    with open(run / "llm_calls.jsonl", "a") as f:
        f.write(json.dumps({"key": "e" * 64, "purpose": "reward", "provider": "fake-api"}) + "\n")
    pack([run], tmp_path / "b.bird", cache_dir=tmp_path / "empty", allow_incomplete=True)
    report = replay(tmp_path / "b.bird", tmp_path / "out")
    assert report.cells == [CellReplay(CELL, "not_replayable", "-", "-",
                                       "1 answer(s) missing from the response cache when packed")]
    assert not seen and not report.ok


def test_a_request_the_transcript_lacks_is_named_with_the_closest_recorded_one(answered, tmp_path, monkeypatch):
    asked = _request("rate it again", "judge_score", 2)
    _search(monkeypatch, raises=ReplayMissError("not in the cache", asked, "f" * 64, "fake-api", "m1"))
    [cell] = replay(answered, tmp_path / "out").cells
    assert (cell.status, cell.compared, cell.expected) == ("request_mismatch", "-", "within tolerance")
    assert cell.detail.startswith("request purpose=judge_score iteration=1 sample_index=2 is not in the transcript; "
                                  "closest recorded request: call #")
    assert "messages[1].content" in cell.detail and cell.wall_s >= 0 and isinstance(cell.config_notes, list)
    _search(monkeypatch, raises=ReplayMissError("no answer for key abc"))
    [cell] = replay(answered, tmp_path / "out2").cells
    assert (cell.status, cell.detail) == ("request_mismatch", "no answer for key abc")


def test_a_cell_whose_search_fails_is_reported_and_the_next_cell_still_replays(four, tmp_path, monkeypatch):
    calls = []

    def search(cfg, target):  # noqa: ANN001, ANN202
        calls.append(target)
        if len(calls) == 1:
            raise KeyError("x" * 3000)
        shutil.copytree(RUN, target)

    monkeypatch.setattr(bird.loop, "search", search)
    first, second = replay(four, tmp_path / "out", cells=["eureka"]).cells
    assert (first.status, first.compared, first.expected) == ("failed", "-", "within tolerance")
    assert first.detail.startswith("KeyError: 'xxx") and len(first.detail) == 2000
    assert first.wall_s >= 0 and isinstance(first.config_notes, list)
    assert second.status == "differs"  # seed1's bundle against seed0's files


def test_a_replayed_run_that_cannot_be_read_is_a_failed_cell(four, tmp_path, monkeypatch):
    _search(monkeypatch, edit=lambda t: (t / "result.json").write_text("{not json"))
    [cell] = replay(four, tmp_path / "out", cells=[CELL]).cells
    assert (cell.status, cell.compared, cell.expected) == ("failed", "-", "within tolerance")
    assert cell.detail.startswith("not compared: ") and isinstance(cell.config_notes, list)


def test_a_value_beyond_its_tolerance_is_listed_as_a_difference(four, tmp_path, monkeypatch):
    def edit(target: Path) -> None:
        result = json.loads((target / "result.json").read_text())
        (target / "result.json").write_text(json.dumps({**result, "returned_score": 0.5}))

    _search(monkeypatch, edit=edit)
    [cell] = replay(four, tmp_path / "out", cells=[CELL], tolerance={}).cells
    assert (cell.status, cell.compared) == ("differs", "within tolerance")
    assert any(d.startswith("result.json:returned_score: recorded") for d in cell.differences)


def test_a_cell_is_run_only_when_the_bundle_says_it_replays_and_its_config_was_made(four, tmp_path, monkeypatch):
    from bird.bundle.replay import _replay_cell

    seen = _search(monkeypatch)
    b = Bundle(four)
    no_config = _replay_cell(b, CELL, None, tmp_path / "a", tmp_path / "rec", {"expect": "bit-for-bit"}, None)
    assert no_config == CellReplay(CELL, "not_replayable", "-", "bit-for-bit", "")
    b.cell(CELL)["replayable"], b.cell(CELL)["why_not"] = False, "told so"
    refused = _replay_cell(b, CELL, (object(), ["a note"]), tmp_path / "b", tmp_path / "rec", {}, None)
    assert refused == CellReplay(CELL, "not_replayable", "-", "-", "told so")
    assert not seen


def _clock(monkeypatch, *readings: float) -> None:
    """replay.py's clock reads `readings` in turn."""
    import types

    it = iter(readings)
    monkeypatch.setattr(sys.modules["bird.bundle.replay"], "time", types.SimpleNamespace(monotonic=lambda: next(it)))


@pytest.mark.parametrize("outcome, status", [
    (ReplayMissError("no answer"), "request_mismatch"), (RuntimeError("boom"), "failed"), (None, "identical"),
    ("unreadable", "failed")])
def test_each_cells_verdict_carries_its_id_wall_time_and_config_notes(four, tmp_path, monkeypatch, outcome, status):
    from bird.bundle.replay import _replay_cell

    if outcome == "unreadable":  # a record bird will not read, with a long reason
        _search(monkeypatch)

        def unreadable(path):  # noqa: ANN001, ANN202
            raise ValueError("x" * 3000)

        monkeypatch.setattr(sys.modules["bird.bundle.replay"], "read_run", unreadable)
    else:
        _search(monkeypatch, raises=outcome if isinstance(outcome, BaseException) else None)
    _clock(monkeypatch, 100.0, 102.5, 200.0)
    Bundle(four).extract(tmp_path / "rec", f"runs/{CELL}/")
    cell = _replay_cell(Bundle(four), CELL, (object(), ["llm.base_url: this machine's"]), tmp_path / "out",
                        tmp_path / "rec" / "runs" / CELL, {"expect": "within tolerance"}, None)
    assert (cell.id, cell.status, cell.wall_s, cell.config_notes) == (CELL, status, 2.5,
                                                                      ["llm.base_url: this machine's"])
    if outcome == "unreadable":
        assert cell.detail == ("not compared: " + "x" * 3000)[:2000]


def test_the_tolerance_asked_for_decides_the_verdict(four, tmp_path, monkeypatch):
    from bird.bundle.compare import Tolerance

    def edit(target: Path) -> None:
        result = json.loads((target / "result.json").read_text())
        (target / "result.json").write_text(json.dumps({**result, "returned_score": result["returned_score"] * (1 + 1e-12)}))

    _search(monkeypatch, edit=edit)
    [default] = replay(four, tmp_path / "a", cells=[CELL]).cells
    assert default.status == "within_tolerance"
    [exact] = replay(four, tmp_path / "b", cells=[CELL], tolerance={"returned_score": Tolerance()}).cells
    assert exact.status == "differs" and exact.detail == "1 difference(s) beyond tolerance"


def test_a_looser_recorded_limit_is_replayed_only_when_trusted_and_each_kept_value_is_noted(tmp_path, monkeypatch):
    seen = _search(monkeypatch)
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    text = (run / "config.yaml").read_text()
    assert "  call_timeout_s: 5.0\n  memory_mb: 2048\n" in text
    (run / "config.yaml").write_text(text.replace("  call_timeout_s: 5.0\n  memory_mb: 2048\n",
                                                  "  call_timeout_s: 2.0\n  memory_mb: 4096\n", 1))
    pack([run], tmp_path / "b.bird")
    with pytest.raises(BundleError, match=f"^{CELL}: .*verify.memory_mb=4096 \\(local 2048\\).*nothing was replayed$"):
        replay(tmp_path / "b.bird", tmp_path / "out")
    assert not seen
    [cell] = replay(tmp_path / "b.bird", tmp_path / "out", trust_config=True).cells
    assert cell.config_notes == [
        "verify.call_timeout_s: the received 2.0 is kept (stricter than the local 5.0)",
        "verify.memory_mb: the received 4096 is used instead of the local 2048 (--trust-config)"]
    assert (seen[0][0].verify.call_timeout_s, seen[0][0].verify.memory_mb) == (2.0, 4096)


def test_a_prefix_keeps_its_own_last_characters_and_loses_only_its_slashes():
    import types

    b = types.SimpleNamespace(cells=[{"id": "methodX/suite-task/seed0"}, {"id": "method/suite-task/seed0"}],
                              path=Path("b.bird"))
    assert _select(b, ["methodX"]) == ["methodX/suite-task/seed0"]
    assert _select(b, ["method//"]) == ["method/suite-task/seed0"]


def test_the_trusted_plugins_a_cells_config_names_reach_its_replayed_config(tmp_path, monkeypatch):
    for name in ("replay_plug_a", "replay_plug_b"):
        (tmp_path / f"{name}.py").write_text("LOADED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    text = (run / "config.yaml").read_text()
    (run / "config.yaml").write_text(text.replace("choices: []\n", "choices: []\nplugins:\n- replay_plug_a\n"
                                                  "- replay_plug_b\n", 1))
    pack([run], tmp_path / "b.bird")
    seen = _search(monkeypatch)
    replay(tmp_path / "b.bird", tmp_path / "out", plugins=["replay_plug_a", "replay_plug_b"])
    assert list(seen[0][0].plugins) == ["replay_plug_a", "replay_plug_b"]


def test_replay_extracts_only_the_runs_and_fills_a_private_cache_with_the_answers(answered, tmp_path, monkeypatch):
    monkeypatch.setenv("BIRD_CACHE_DIR", str(tmp_path / "users_cache"))
    seen = _search(monkeypatch)
    report = replay(answered, tmp_path / "out")
    assert (report.bundle, report.out) == (answered, tmp_path / "out")
    work = tmp_path / "out" / ".bundle"
    assert sorted(p.name for p in work.iterdir() if not p.name.startswith("llm_cache-")) == ["runs"]
    cache = ResponseCache(seen[0][0].llm.cache_dir)
    assert cache.root.parent == work
    assert all(cache.get(line["key"]) is not None for line in Bundle(answered).transcript(CELL))
    assert not (tmp_path / "users_cache").exists()


def test_a_bundle_that_fails_verification_is_refused_with_every_problem_and_nothing_runs(four, tmp_path, monkeypatch):
    import zipfile

    seen = _search(monkeypatch)
    edited = tmp_path / "edited.bird"
    with zipfile.ZipFile(four) as zin, zipfile.ZipFile(edited, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            zout.writestr(info.filename, data + b" " if info.filename.endswith("/result.json") else data)
    problems = verify(edited).problems
    assert len(problems) >= 2
    with pytest.raises(BundleError) as err:
        replay(edited, tmp_path / "out")
    assert str(err.value) == "the bundle fails verification; nothing was replayed:\n  " + "\n  ".join(problems)
    assert not seen and not (tmp_path / "out").exists()


def test_progress_is_on_stderr_and_flushed_before_each_cell_runs_and_after_it_ends(four, tmp_path, monkeypatch):
    class Stream:
        """stderr as a pipe holds it: what is written shows once flushed."""

        def __init__(self) -> None:
            self.pending, self.shown = "", ""

        def write(self, text: str) -> int:
            self.pending += text
            return len(text)

        def flush(self) -> None:
            self.shown, self.pending = self.shown + self.pending, ""

    stream = Stream()
    monkeypatch.setattr(sys, "stderr", stream)
    shown_while_running = []

    def search(cfg, target):  # noqa: ANN001, ANN202
        shown_while_running.append(stream.shown)
        shutil.copytree(RUN, target)

    monkeypatch.setattr(bird.loop, "search", search)
    replay(four, tmp_path / "out", cells=[CELL])
    assert shown_while_running == [f"replay: cell 1/1 {CELL} ...\n"]
    assert stream.pending == "" and re.fullmatch(
        rf"replay: cell 1/1 {re.escape(CELL)} \.\.\.\nreplay: cell 1/1 {re.escape(CELL)}: identical \(\d+\.\d s\)\n",
        stream.shown)
