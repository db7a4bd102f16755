"""The leaderboard's tables, header and notes on small hand-made run sets: cells computed with the leaderboard's own
bootstrap sizes and seed, ratings from the right fit, methods lacking tasks, empty collections."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from synthetic_runs import write_run

from bird.analysis import build_leaderboard, read_runs
from bird.analysis.bootstrap import few_seeds_label, interval
from bird.analysis.bradley_terry import bradley_terry_intervals
from bird.analysis.report import _bt_fits, _table
from bird.analysis.tidy import score_table

SIZES = {"n_resamples": 40, "bt_resamples": 12, "l2": 0.01, "random_state": 4}


def _runs(root, scores: dict, generator: dict | None = None):
    """scores: (method, suite, task) -> per-seed returned scores."""
    for (method, suite, task), values in scores.items():
        for seed, score in enumerate(values):
            run = write_run(root, method, suite, task, seed, iterations=1, candidates=1)
            result = json.loads((run / "result.json").read_text())
            result["returned_score"] = score
            if generator is not None and (method, seed) in generator:
                result["generator"] = generator[(method, seed)]
            (run / "result.json").write_text(json.dumps(result))
    return read_runs(root, warn=False)


def _board(coll, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return build_leaderboard(coll, figures=False, **{**SIZES, **kw})


MIXED = {("alpha", "mujoco", "hopper"): [0.9, 0.2, 0.6, 0.4], ("beta", "mujoco", "hopper"): [0.5, 0.7, 0.1, 0.3],
         ("alpha", "metaworld", "push"): [0.3, 0.8, 0.5], ("beta", "metaworld", "push"): [0.6, 0.2, 0.9]}


def test_cells_use_the_leaderboards_bootstrap_size_and_seed(tmp_path):
    coll = _runs(tmp_path, MIXED)
    lb = _board(coll)
    for bench in ("mujoco", "metaworld", "pooled"):
        runs = coll.runs if bench == "pooled" else coll.runs[coll.runs["benchmark"] == bench]
        table, rows = score_table(runs), lb.tables[bench].set_index("method")
        for m in ("alpha", "beta"):
            iv = interval(table[m], "BCa", n_resamples=40, random_state=4)
            fewest = min(map(len, table[m].values()))
            assert rows.loc[m, "mean [95% BCa]"] == (f"{iv.estimate:.3f} [{iv.low:.3f}, {iv.high:.3f}]"
                                                     + few_seeds_label(fewest)), (bench, m)
        fit = bradley_terry_intervals(table, l2=0.01, n_resamples=12, random_state=4)
        assert fit.ratings.strongly_connected
        for m in ("alpha", "beta"):
            fewest = min(map(len, table[m].values()))
            assert rows.loc[m, "Elo [95% BCa]"] == fit.describe(m) + few_seeds_label(fewest) * fit.identifiable, \
                (bench, m)  # the benchmark's own fit, or the pooled one
    other = _board(coll, random_state=5).tables["pooled"]
    assert not other.equals(lb.tables["pooled"])  # the seed matters at this size, so the comparison above can fail


def test_a_rating_set_by_the_prior_has_its_interval_marked_not_identifiable(tmp_path):
    """alpha beats beta in every seed pair of every resample: the win graph is never strongly connected."""
    coll = _runs(tmp_path, {("alpha", "mujoco", "hopper"): [0.9, 0.8], ("beta", "mujoco", "hopper"): [0.1, 0.2]})
    for cell in _board(coll).tables["mujoco"]["Elo [95% BCa]"]:
        assert cell.endswith(" (rating set by the prior) (not identifiable: 100.0% of resamples not "
                             "connected)") and "[" not in cell
    ties = {("alpha", "mujoco", "hopper"): [0.5, 0.5, 0.5], ("beta", "mujoco", "hopper"): [0.5, 0.5, 0.5]}
    assert _board(_runs(tmp_path / "ties", ties)).tables["mujoco"]["Elo [95% BCa]"].tolist() == \
        ["1500 [1500, 1500] (3 seeds < 5: about the seeds' range)"] * 2


def test_a_method_lacking_tasks_gets_no_aggregate_and_a_note_in_its_benchmark_and_pooled(tmp_path):
    scores = {**MIXED, ("alpha", "mujoco", "ant"): [0.4, 0.5]}
    lb = _board(_runs(tmp_path, scores))
    for bench in ("mujoco", "pooled"):
        rows = lb.tables[bench].set_index("method")
        assert rows.loc["beta", "mean [95% BCa]"] == "n/a (lacks tasks)"
        assert rows.loc["alpha", "mean [95% BCa]"][0].isdigit()
    assert lb.tables["metaworld"].set_index("method").loc["beta", "mean [95% BCa]"][0].isdigit()
    assert [n for n in lb.notes if "lacks" in n] == [
        "mujoco: beta lacks tasks ['mujoco/ant']; no aggregate over a different task set",
        "pooled: beta lacks tasks ['mujoco/ant']; no aggregate over a different task set"]


def test_one_benchmark_has_no_pooled_table(tmp_path):
    lb = _board(_runs(tmp_path, {k: v for k, v in MIXED.items() if k[1] == "mujoco"}))
    assert list(lb.tables) == ["mujoco"]
    assert list(lb.tables["mujoco"].columns) == ["method", "tasks", "seeds", "mean [95% BCa]", "IQM", "opt. gap",
                                                 "Elo [95% BCa]", "selections tied", "env steps / run", "LLM calls / run",
                                                 "cost USD (total)"]


def test_an_empty_collection_says_so(tmp_path):
    (tmp_path / "runs").mkdir()
    for source in (tmp_path / "runs", read_runs(tmp_path / "runs", warn=False)):
        lb = _board(source)
        assert (lb.tables, lb.figures, lb.notes, lb.header) == (
            {}, {}, ["no completed runs: nothing to report"], ["0 runs; 0 methods; 0 tasks."])
        assert lb.clips.empty


def test_header_lists_every_generator_and_unknown_for_runs_without_one(tmp_path):
    generators = {("alpha", 0): {"label": "zeta model"}, ("alpha", 1): None, ("beta", 0): {"label": "alpha model"}}
    coll = _runs(tmp_path, {("alpha", "mujoco", "hopper"): [0.5, 0.6], ("beta", "mujoco", "hopper"): [0.4]},
                 generators)
    header = _board(coll).header
    assert header[0] == "3 runs; 2 methods; 1 task."
    assert header[1] == "Generators: alpha model; unknown; zeta model"
    assert len(header) == 2


def test_a_skipped_run_directory_is_named_with_its_reason(tmp_path):
    coll = _runs(tmp_path, {("alpha", "mujoco", "hopper"): [0.5]})
    for seed in (3, 4):
        bad = write_run(tmp_path, "alpha", "mujoco", "hopper", seed)
        (bad / "result.json").write_text("{")
    coll = read_runs(tmp_path, warn=False)
    header = _board(coll).header
    skipped = [h for h in header if h.startswith("Skipped")]
    first, second = coll.skipped
    assert skipped == [f"Skipped 2 run directories (not counted): `{first.path}`: {first.reason}; "
                       f"`{second.path}`: {second.reason}"]


def test_table_rows_for_a_hand_made_benchmark(tmp_path):
    """_table on its own: seeds as a range, costs summed, calls averaged."""
    coll = _runs(tmp_path, {("alpha", "mujoco", "hopper"): [0.2, 0.4, 0.9], ("alpha", "mujoco", "ant"): [0.1, 0.3]})
    notes: list[str] = []
    fits, _ = _bt_fits(coll.runs, 12, 0.01, 4, notes)
    table, remarks = _table(coll.runs, "mujoco", fits.get("mujoco"), 40, 4, notes)
    row = table.iloc[0].to_dict()
    cells = score_table(coll.runs)["alpha"]
    iv = interval(cells, "BCa", n_resamples=40, random_state=4)
    assert remarks == []  # one method: nothing to separate
    assert row == {"method": "alpha", "tasks": 2, "seeds": "2–3",
                   "mean [95% BCa]": f"{iv.estimate:.3f} [{iv.low:.3f}, {iv.high:.3f}] (2 seeds < 5: about the "
                                     "seeds' range)",
                   "IQM": row["IQM"], "opt. gap": row["opt. gap"], "selections tied": "n/a (not recorded)",
                   "env steps / run": "4e+04", "LLM calls / run": "1", "cost USD (total)": "0.00"}
    assert iv.estimate == pytest.approx((np.mean([0.2, 0.4, 0.9]) + 0.2) / 2)
    assert notes == ["mujoco: Bradley–Terry needs two methods, found ['alpha']"]


# -- small samples: intervals over fewer than five seeds are labelled, and overlaps said in words ------------------
def test_intervals_over_fewer_than_five_seeds_say_they_are_about_the_seeds_range():
    assert few_seeds_label(2) == " (2 seeds < 5: about the seeds' range)"
    assert few_seeds_label(1) == " (1 seed < 5: about the seeds' range)"
    assert few_seeds_label(5) == few_seeds_label(9) == ""


def test_the_overview_labels_small_n_intervals_and_says_too_few_seeds_where_they_overlap(tmp_path):
    two = _board(_runs(tmp_path / "two", {("alpha", "mujoco", "hopper"): [0.2, 0.6],
                                          ("beta", "mujoco", "hopper"): [0.3, 0.7]}))
    rows = two.tables["mujoco"].set_index("method")
    assert all(cell.endswith("] (2 seeds < 5: about the seeds' range)") for cell in rows["mean [95% BCa]"])
    assert two.remarks == {"mujoco": ["Too few seeds to separate methods: alpha and beta (fewer than 5 seeds a cell, "
                                      "and their mean intervals overlap)."]}
    apart = _board(_runs(tmp_path / "apart", {("alpha", "mujoco", "hopper"): [0.90, 0.91],
                                              ("beta", "mujoco", "hopper"): [0.10, 0.11]}))
    assert apart.remarks == {}  # two seeds, but intervals that do not overlap: nothing to say
    five = _board(_runs(tmp_path / "five", {("alpha", "mujoco", "hopper"): [0.2, 0.6, 0.4, 0.5, 0.3],
                                            ("beta", "mujoco", "hopper"): [0.3, 0.7, 0.5, 0.4, 0.6]}))
    assert five.remarks == {} and not any("seeds' range" in c for c in five.tables["mujoco"]["mean [95% BCa]"])


def test_the_page_and_the_markdown_show_the_small_n_labels_and_the_remark(tmp_path):
    from bird.analysis import write_leaderboard

    lb = _board(_runs(tmp_path / "runs", {("alpha", "mujoco", "hopper"): [0.2, 0.6],
                                          ("beta", "mujoco", "hopper"): [0.3, 0.7]}))
    md = write_leaderboard(lb, tmp_path / "out").read_text()
    page = (tmp_path / "out" / "leaderboard.html").read_text()
    for text in (md, page):
        assert "Too few seeds to separate methods: alpha and beta" in text
        assert text.count("(2 seeds &lt; 5: about the seeds&#x27; range)" if text is page else
                          "(2 seeds < 5: about the seeds' range)") == 4  # overview and per-task, both methods


def test_the_overview_counts_the_selections_that_were_ties_from_result_json(tmp_path):
    coll = _runs(tmp_path / "runs", {("alpha", "mujoco", "hopper"): [0.2, 0.6], ("beta", "mujoco", "hopper"): [0.3]})
    for run in (tmp_path / "runs").rglob("result.json"):  # 1 iteration each (synthetic runs); alpha seed 0 tied
        result = json.loads(run.read_text())
        if result["method"] == "alpha":
            run.write_text(json.dumps({**result, "tied_iterations": [1] if result["seed"] == 0 else []}))
    rows = _board(read_runs(tmp_path / "runs", warn=False)).tables["mujoco"].set_index("method")
    assert rows.loc["alpha", "selections tied"] == "1 of 2"
    assert rows.loc["beta", "selections tied"] == "n/a (not recorded)"  # a result.json from before ties were kept
    assert len(coll.runs) == 3


def _baseline_runs(root, scores: dict, accuracy: dict | None = None):
    """As _runs; methods named in `accuracy` record GRACE's reward accuracy, a method named "ref" is a reference-reward
    baseline (what method=oracle writes: reward_source reference)."""
    for (method, suite, task), values in scores.items():
        for seed, score in enumerate(values):
            run = write_run(root, method, suite, task, seed, iterations=1, candidates=1)
            result = json.loads((run / "result.json").read_text())
            result["returned_score"] = score
            result["reward_source"] = "reference" if method == "ref" else "candidate"
            if accuracy and method in accuracy:
                result["reward_accuracy"] = {"metric": "demo_pairwise", "returned": "it1-c0", "train": 1.0,
                                             "test": accuracy[method][seed], "per_generation": []}
            (run / "result.json").write_text(json.dumps(result))
    return read_runs(root, warn=False)


def test_the_reference_reward_baseline_is_a_labelled_row_each_method_a_fraction_of_it_and_unranked(tmp_path):
    coll = _baseline_runs(tmp_path, {("ref", "babyai", "a"): [0.8, 0.6], ("ref", "babyai", "b"): [0.4, 0.2],
                                     ("alpha", "babyai", "a"): [0.7, 0.3], ("alpha", "babyai", "b"): [0.3, 0.3],
                                     ("beta", "babyai", "a"): [0.2, 0.2], ("beta", "babyai", "b"): [0.1, 0.1]},
                          accuracy={"alpha": [0.9, 0.7]})
    board = _board(coll)
    rows = {r["method"]: r for r in board.tables["babyai"].to_dict("records")}
    assert set(rows) == {"alpha", "beta", "ref (baseline: reference reward)"}
    # alpha's mean 0.4 of ref's 0.5 over the shared tasks; beta's 0.15
    assert (rows["alpha"]["of baseline"], rows["beta"]["of baseline"]) == ("0.80", "0.30")
    assert rows["ref (baseline: reference reward)"]["of baseline"] == "baseline"
    elo = next(k for k in rows["alpha"] if k.startswith("Elo"))
    assert rows["ref (baseline: reference reward)"][elo] == "(not ranked)" and rows["alpha"][elo] != "(not ranked)"
    assert rows["alpha"]["reward acc. (test)"] == "0.800" and rows["beta"]["reward acc. (test)"] == ""
    assert any("leaves out the baseline(s) ['ref']" in n for n in board.notes)
    ranked = _board(coll, rank_baselines=True).tables["babyai"]
    assert "(not ranked)" not in ranked[elo].tolist()


def test_a_collection_without_a_baseline_has_no_fraction_column(tmp_path):
    coll = _baseline_runs(tmp_path, {("alpha", "mujoco", "hopper"): [0.2, 0.4], ("beta", "mujoco", "hopper"): [0.1, 0.3]})
    table = _board(coll).tables["mujoco"]
    assert "of baseline" not in table and "reward acc. (test)" not in table


def test_runs_that_record_reward_accuracy_per_generation_get_gracess_fig_2(tmp_path):
    for seed, accs in enumerate([(0.6, 0.9), (0.7, 0.8)]):
        run = write_run(tmp_path, "grace", "babyai", "a", seed, iterations=2, candidates=1)
        result = json.loads((run / "result.json").read_text())
        for it, acc in zip(result["iterations"], accs, strict=True):
            it["reward_accuracy"] = {"metric": "demo_pairwise", "returned": "it1-c0", "train": 1.0, "test": acc}
        (run / "result.json").write_text(json.dumps(result))
    coll = read_runs(tmp_path, warn=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        board = build_leaderboard(coll, **SIZES, curve_resamples=20)
    ax = board.figures["reward_accuracy"].axes[0]
    test_line = next(line for line in ax.get_lines() if line.get_label() == "grace test")
    assert test_line.get_xdata().tolist() == [1, 2] and test_line.get_ydata() == pytest.approx([0.65, 0.85])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        none = build_leaderboard(_runs(tmp_path / "none", {("a", "mujoco", "h"): [0.1]}), **SIZES, curve_resamples=20)
    assert "reward_accuracy" not in none.figures
