"""The leaderboard's tables, header and notes without figures, and write_leaderboard on a hand-made Leaderboard:
fast checks of what the report says, with known inputs."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pandas as pd
import pytest
from synthetic_runs import corrupt, write_run

from bird.analysis import build_leaderboard, read_runs, report, write_leaderboard
from bird.analysis.report import Leaderboard, _default_pair, _md_table


def _set_scores(run, score):
    result = json.loads((run / "result.json").read_text())
    result.update(returned_score=score, returned_score_per_seed=[score], env_steps=1000, llm_calls=4, cost_usd=0.25)
    (run / "result.json").write_text(json.dumps(result))
    return run


def _board(root, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return build_leaderboard(read_runs(root, warn=False), n_resamples=200, bt_resamples=20, figures=False, **kw)


@pytest.fixture()
def two_benchmarks(tmp_path):
    """alpha beats beta on every (task, seed); two benchmarks; one null score; one broken run directory."""
    root = tmp_path / "runs"
    scores = {("mujoco", "hopper"): (0.9, 0.2), ("metaworld", "push"): (0.7, 0.1)}
    for (suite, task), (a, b) in scores.items():
        for seed in (0, 1):
            _set_scores(write_run(root, "alpha", suite, task, seed), a + 0.01 * seed)
            _set_scores(write_run(root, "beta", suite, task, seed), b + 0.01 * seed)
    _set_scores(write_run(root, "beta", "mujoco", "hopper", 5), None)
    corrupt(write_run(root, "alpha", "mujoco", "hopper", 9), "running")
    return root


def test_header_counts_runs_methods_tasks_and_says_what_was_left_out(two_benchmarks):
    lb = _board(two_benchmarks)
    assert lb.header[0] == "9 runs; 2 methods; 2 tasks."
    assert lb.header[1].startswith("Generators: ") and "SYNTHETIC" in lb.header[1]
    assert lb.header[2] == ("1 completed runs returned no reward (returned_score null); they are left out of every "
                            "score statistic below.")
    assert lb.header[3].startswith("Skipped 1 run directories (not counted): `") and len(lb.header) == 4
    assert lb.figures == {} and list(lb.tables) == ["metaworld", "mujoco", "pooled"]


def test_each_benchmark_table_reports_per_method_costs_and_a_ranking(two_benchmarks):
    lb = _board(two_benchmarks)
    table = lb.tables["mujoco"].set_index("method")
    assert list(table.index) == ["alpha", "beta"]
    assert table.loc["alpha", "mean [95% BCa]"].startswith("0.905 [")
    assert (table.loc["beta", "tasks"], table.loc["beta", "seeds"]) == (1, "2")  # the null-score run is left out
    assert table.loc["alpha", "env steps / run"] == "1e+03" and table.loc["alpha", "LLM calls / run"] == "4"
    assert table.loc["alpha", "cost USD (total)"] == "0.50" and table.loc["beta", "cost USD (total)"] == "0.75"
    elo = [c for c in table.columns if c.startswith("Elo [95% ")]
    assert len(elo) == 1
    a, b = (int(table.loc[m, elo[0]].split()[0]) for m in ("alpha", "beta"))
    assert a > 1500 > b
    pooled = lb.tables["pooled"].set_index("method")
    assert pooled.loc["alpha", "tasks"] == 2 and pooled.loc["alpha", "mean [95% BCa]"].startswith("0.805 [")
    assert _default_pair(read_runs(two_benchmarks, warn=False).runs, {}) == ("alpha", "beta")


def test_one_method_gets_no_ratings_and_a_note(tmp_path):
    for seed in (0, 1):
        _set_scores(write_run(tmp_path / "runs", "alpha", "mujoco", "hopper", seed), 0.5 + 0.1 * seed)
    lb = _board(tmp_path / "runs")
    assert lb.notes == ["mujoco: Bradley–Terry needs two methods, found ['alpha']", "clips: none to show: the runs list none"]
    assert not any(c.startswith("Elo") for c in lb.tables["mujoco"].columns)
    assert lb.header[0] == "2 runs; 1 method; 1 task."
    assert _default_pair(read_runs(tmp_path / "runs", warn=False).runs, {}) is None


def test_seed_counts_show_a_range_when_tasks_differ(tmp_path):
    root = tmp_path / "runs"
    for seed in (0, 1, 2):
        _set_scores(write_run(root, "alpha", "mujoco", "hopper", seed), 0.5 + 0.1 * seed)
        _set_scores(write_run(root, "beta", "mujoco", "hopper", seed), 0.1 * seed)
    for seed in (0, 1):
        _set_scores(write_run(root, "alpha", "mujoco", "ant", seed), 0.3 + 0.1 * seed)
        _set_scores(write_run(root, "beta", "mujoco", "ant", seed), 0.05 * seed)
    table = _board(root).tables["mujoco"].set_index("method")
    assert table.loc["alpha", "seeds"] == "2–3" and table.loc["alpha", "tasks"] == 2


def test_a_single_run_reports_a_degenerate_interval(tmp_path):
    _set_scores(write_run(tmp_path / "runs", "alpha", "mujoco", "hopper", 0), 0.4)
    table = _board(tmp_path / "runs").tables["mujoco"]
    assert table.loc[0, "mean [95% BCa]"] == "0.400 [0.400, 0.400] (degenerate)"
    assert table.loc[0, "IQM"] == "0.400" and table.loc[0, "opt. gap"] == "0.600"


def test_the_paired_figure_defaults_to_the_two_best_rated_methods():
    from bird.analysis.bradley_terry import Ratings

    runs = pd.DataFrame({"method": ["a", "b", "c"]})

    class Fit:
        ratings = Ratings({"a": 1400.0, "b": 1600.0, "c": 1500.0})

    class Other:
        ratings = Ratings({"a": 1700.0, "b": 1300.0, "c": 1500.0})

    assert _default_pair(runs, {"pooled": Fit()}) == ("b", "c")
    assert _default_pair(runs, {"mujoco": Fit()}) == ("b", "c")
    assert _default_pair(runs, {"mujoco": Other(), "pooled": Fit()}) == ("b", "c")  # pooled ranks first
    assert _default_pair(runs, {}) == ("a", "b")  # no ratings: by name


def test_markdown_tables_escape_pipes():
    df = pd.DataFrame([{"method": "a|b", "score": 1}])
    assert _md_table(df) == "| method | score |\n|---|---|\n| a\\|b | 1 |"


def test_write_leaderboard_writes_tables_figures_reasons_and_notes(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([0, 1], [0, 1])
    lb = Leaderboard({"mujoco": pd.DataFrame([{"method": "x<y", "score": "0.5"}])},
                     {"method_comparison": fig, "epic": None, "custom": None},
                     ["epic: no EPIC data", "epic: second reason", "other note"], ["3 runs & more"])
    md_path = write_leaderboard(lb, tmp_path / "out", dpi=50)
    md = md_path.read_text()
    assert md_path == tmp_path / "out" / "leaderboard.md"
    assert md.startswith("# bird leaderboard\n\n- 3 runs &amp; more\n\n## mujoco\n\n| method | score |")
    assert "Intervals: 95% BCa (scipy.stats.bootstrap), seeds resampled within tasks, task set fixed." in md
    caption = "Method comparison per benchmark (dots: runs; ticks: mean; bars: 95% BCa)"
    assert f"### {caption}\n\n![{caption}](method_comparison.png)\n\n###" in md  # a blank line, then the next
    assert "### EPIC distance to the reference reward over iterations\n\n_Not drawn: no EPIC data; second reason_" in md
    assert "### custom\n\n_Not drawn: no data_" in md
    assert md.endswith("## Notes\n\n- epic: no EPIC data\n- epic: second reason\n- other note\n")
    assert (tmp_path / "out" / "method_comparison.png").stat().st_size > 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["leaderboard.html", "leaderboard.md",
                                                                   "method_comparison.png"]
    html = (tmp_path / "out" / "leaderboard.html").read_text()
    assert "<li>3 runs &amp; more</li>" in html and "x&lt;y" in html and '<h3 id="overview-mujoco">mujoco</h3>' in html
    assert '<figure id="fig-method_comparison"><img src="method_comparison.png" width="200" alt="' in html
    assert ('<p class="missing" id="fig-epic">EPIC distance to the reference reward over iterations: not drawn '
            "(no EPIC data; second reason).</p>") in html
    assert "<h2>Notes</h2>" in html and html.startswith("<!doctype html>")
    plt.close(fig)


def test_an_empty_leaderboard_writes_no_notes_section(tmp_path):
    md = write_leaderboard(Leaderboard({}, {}, [], []), tmp_path).read_text()
    assert "## Notes" not in md and "## Figures" in md


def test_write_leaderboard_output_is_exactly_as_specified(tmp_path):
    """The whole Markdown and HTML of a small hand-made leaderboard, byte for byte."""
    lb = Leaderboard({"mujoco": pd.DataFrame([{"method": "x<y", "score": "0.5"}])}, {"epic": None},
                     ["epic: no EPIC data", "a: b: c"], ["2 runs"])
    write_leaderboard(lb, tmp_path / "deep" / "out")
    md = (tmp_path / "deep" / "out" / "leaderboard.md").read_text()
    assert md == (
        "# bird leaderboard\n\n- 2 runs\n\n## mujoco\n\n| method | score |\n|---|---|\n| x&lt;y | 0.5 |\n\n"
        "Intervals: 95% BCa (scipy.stats.bootstrap), seeds resampled within tasks, task set fixed.\n\n"
        "## Figures\n\n### EPIC distance to the reference reward over iterations\n\n_Not drawn: no EPIC data_\n\n"
        "## Notes\n\n- epic: no EPIC data\n- a: b: c\n")
    html = (tmp_path / "deep" / "out" / "leaderboard.html").read_text()
    assets = Path(report.__file__).parent
    style, script = (assets / "leaderboard.css").read_text(), (assets / "leaderboard.js").read_text()
    assert html == (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'><title>bird leaderboard</title>"
        f"<style>{style}</style></head><body>"
        '<main><h1>bird leaderboard</h1><ul class="summary"><li>2 runs</li></ul>'
        '<nav><a href="#overview">Overview</a><a href="#tasks">Per task</a><a href="#figures">Figures</a>'
        '<a href="#notes">Notes</a><a href="#rerun">Re-run</a></nav>'
        '<section class="rerun" id="rerun"><h2>Re-run this comparison</h2><p>Built from run directories. Pack them '
        "into a bundle to publish the comparison; anyone can then re-run every cell from it with no API key and no "
        "network (the recorded LLM answers are replayed).</p><pre>python -m bird.bundle pack RUNS... --out NAME.bird\n"
        "python -m bird.bundle replay NAME.bird --out DIR\npython -m bird.analysis leaderboard DIR --out OUT</pre>"
        '</section><section id="overview"><h2>Overview</h2><p class="hint">Click a column heading to sort by it; '
        "click again to reverse. Intervals: 95% BCa (scipy.stats.bootstrap), seeds resampled within tasks, task set "
        'fixed.</p><h3 id="overview-mujoco">mujoco</h3><table class="sortable"><thead><tr><th>method</th><th>score'
        '</th></tr></thead><tbody><tr><td>x&lt;y</td><td class="num" data-sort="0.5">0.5</td></tr></tbody>'
        "</table></section>"
        '<section id="figures"><h2>Figures</h2><p class="missing" id="fig-epic">EPIC distance to the reference '
        'reward over iterations: not drawn (no EPIC data).</p></section><section id="notes"><h2>Notes</h2><ul>'
        "<li>epic: no EPIC data</li><li>a: b: c</li></ul></section></main>"
        f"<script>{script}</script></body></html>\n")


def test_a_figure_note_keeps_colons_after_the_first(tmp_path):
    lb = Leaderboard({}, {"paired": None}, ["paired: one method only: no paired differences"], [])
    assert "_Not drawn: one method only: no paired differences_" in write_leaderboard(lb, tmp_path).read_text()


def test_figures_are_saved_at_the_requested_resolution(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image

    fig, _ = plt.subplots(figsize=(2, 1))
    write_leaderboard(Leaderboard({}, {"profiles": fig}, [], []), tmp_path, dpi=40)
    assert Image.open(tmp_path / "profiles.png").size == (80, 40)
    write_leaderboard(Leaderboard({}, {"profiles": fig}, [], []), tmp_path / "default")
    assert Image.open(tmp_path / "default" / "profiles.png").size == (400, 200)
    assert '<img src="profiles.png" width="200"' in (tmp_path / "default" / "leaderboard.html").read_text()
    plt.close(fig)


def test_ratings_use_the_given_penalty_and_seed_and_pooled_ranks_first(tmp_path):
    from bird.analysis.report import _bt_fits

    root = tmp_path / "runs"
    for suite, task in (("mujoco", "hopper"), ("metaworld", "push"), ("metaworld", "reach")):
        for seed in (0, 1, 2):
            _set_scores(write_run(root, "alpha", suite, task, seed), 0.5 + 0.2 * seed)
            _set_scores(write_run(root, "beta", suite, task, seed), 0.4 + 0.25 * seed)
            _set_scores(write_run(root, "gamma", suite, task, seed), 0.1 * seed)
    runs = read_runs(root, warn=False).runs
    notes: list[str] = []
    fits, n_tasks = _bt_fits(runs, 30, 1e-6, 0, notes)
    assert list(fits) == ["metaworld", "mujoco", "pooled"] and n_tasks == {"metaworld": 2, "mujoco": 1, "pooled": 3}
    again, _ = _bt_fits(runs, 30, 1e-6, 0, [])
    other_seed, _ = _bt_fits(runs, 30, 1e-6, 1, [])
    penalised, _ = _bt_fits(runs, 30, 1.0, 0, [])
    assert again["pooled"].low == fits["pooled"].low and other_seed["pooled"].low != fits["pooled"].low
    assert penalised["pooled"].ratings["alpha"] < fits["pooled"].ratings["alpha"]


def test_a_benchmark_with_one_method_is_noted_and_the_others_still_rated(tmp_path):
    from bird.analysis.report import _bt_fits

    root = tmp_path / "runs"
    for seed in (0, 1):
        _set_scores(write_run(root, "alpha", "mujoco", "hopper", seed), 0.5 + 0.1 * seed)
        _set_scores(write_run(root, "alpha", "metaworld", "push", seed), 0.4 + 0.1 * seed)
        _set_scores(write_run(root, "beta", "metaworld", "push", seed), 0.2 * seed)
    notes: list[str] = []
    fits, _ = _bt_fits(read_runs(root, warn=False).runs, 20, 1e-6, 0, notes)
    assert notes == ["mujoco: Bradley–Terry needs two methods, found ['alpha']"]
    assert sorted(fits) == ["metaworld", "pooled"]


def test_the_per_task_section_names_its_columns_and_labels_each_interval():
    from bird.analysis.report import _task_md
    tasks = pd.DataFrame({"benchmark": ["mw", "mw", "mw"], "task": ["a", "b", "c"], "method": ["m1", "m2", "m3"],
                          "n_seeds": [2, 2, 0], "mean": [0.5, 0.25, float("nan")], "low": [0.25, 0.125, float("nan")],
                          "high": [0.75, 0.5, float("nan")], "degenerate": [False, True, False]})
    assert _task_md(tasks) == [
        "## Per task", "",
        "| task | method | seeds | mean [95% BCa] |\n|---|---|---|---|\n"
        "| mw/a | m1 | 2 | 0.500 [0.250, 0.750] (2 seeds < 5: about the seeds' range) |\n"
        "| mw/b | m2 | 2 | 0.250 [0.125, 0.500] |\n"
        "| mw/c | m3 | 0 | n/a |", ""]
    assert _task_md(tasks.iloc[:0]) == []


def test_the_generalisation_section_is_its_note_and_a_table_of_the_transfer_rows():
    from bird.analysis.report import _transfer_md
    transfer = pd.DataFrame({"method": ["m1"], "source": ["a"], "task": ["b"], "unseen": [True], "n_seeds": [5],
                             "mean": [0.5], "low": [0.25], "high": [0.75], "degenerate": [False]})
    assert _transfer_md(transfer) == [
        "## Generalisation", "", report.TRANSFER_NOTE, "",
        "| method | trained on | evaluated on | seeds | success [95% BCa] |\n|---|---|---|---|---|\n"
        "| m1 | a | b | 5 | 0.500 [0.250, 0.750] |", ""]
    assert _transfer_md(transfer.iloc[:0]) == []


@pytest.mark.parametrize("figures", [False, True])
def test_the_leaderboard_keeps_the_per_task_and_transfer_tables_of_its_own_resamples_and_seed(tmp_path, figures):
    from analysis.task_table import per_task_table
    from analysis.transfer_table import transfer_table
    for seed, score in enumerate([0.2, 0.5, 0.7]):
        run = _set_scores(write_run(tmp_path, "prm4rl", "metaworld", "pick_place", seed, minimal=True), score)
        result = json.loads((run / "result.json").read_text())
        result["transfer"] = {"source": result["env"], "episodes": 100, "seeds": [1000], "prior": "none",
                              "tasks": {"metaworld/drawer_close": {"scores": [score / 2, 0.1 * seed], "mean": None,
                                                                  "failure": None}}}
        (run / "result.json").write_text(json.dumps(result))
    for seed in range(2):
        _set_scores(write_run(tmp_path, "eureka", "metaworld", "pick_place", seed, minimal=True), 0.1 + 0.3 * seed)
    coll = read_runs(tmp_path, warn=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lb = build_leaderboard(coll, n_resamples=150, bt_resamples=20, curve_resamples=20, random_state=3,
                               figures=figures)
        tasks, transfer = per_task_table(coll.runs, 150, 3), transfer_table(coll.transfer, coll.runs, 150, 3)
    pd.testing.assert_frame_equal(lb.tasks, tasks)
    pd.testing.assert_frame_equal(lb.transfer, transfer)
    assert lb.runs is coll.runs and set(lb.remarks) <= set(lb.tables)
    assert transfer["low"].notna().any()  # intervals that move with the resamples and the seed


def test_the_fraction_of_the_baseline_says_why_it_has_none():
    import numpy as np

    from bird.analysis.report import _fraction_of_baseline
    a = np.array([0.2, 0.4])
    assert _fraction_of_baseline({"t": a}, None) == "" and _fraction_of_baseline({"t": a}, {}) == ""
    assert _fraction_of_baseline({"t": a}, {"u": a}) == "n/a (no shared task)"
    assert _fraction_of_baseline({"t": a, "u": a}, {"t": np.array([0.6])}) == "0.50"
    assert _fraction_of_baseline({"t": a}, {"t": np.array([0.0])}) == "n/a (baseline mean not positive)"
    assert _fraction_of_baseline({"t": a}, {"t": np.array([-0.5])}) == "n/a (baseline mean not positive)"


def test_tied_iterations_are_not_recorded_without_the_column():
    from bird.analysis.report import _tied
    assert _tied(pd.DataFrame({"n_iterations": [3]})) == "n/a (not recorded)"
    assert _tied(pd.DataFrame({"n_iterations": [3, 4], "n_tied": [1, None]})) == "1 of 3"


def test_few_seeds_pairs_whose_intervals_meet_or_nest_are_named():
    from bird.analysis.report import _few_seeds_remark
    two = {"a": 2, "b": 2, "c": 2}
    assert len(_few_seeds_remark({"a": (0.5, 1.0), "b": (0.0, 0.5)}, two)) == 1  # meet: a's low is b's high
    assert len(_few_seeds_remark({"a": (0.0, 0.5), "b": (0.5, 1.0)}, two)) == 1  # meet: b's low is a's high
    assert len(_few_seeds_remark({"a": (0.0, 1.0), "b": (0.2, 0.5)}, two)) == 1  # b inside a
    assert _few_seeds_remark({"a": (0.0, 0.4), "b": (0.5, 1.0)}, two) == []
    (said,) = _few_seeds_remark({"a": (0.0, 1.0), "b": (0.2, 0.5), "c": (0.9, 2.0)}, two)
    assert said.startswith("Too few seeds to separate methods: a and b; a and c (fewer than ")


def test_write_leaderboard_puts_remarks_under_their_table_and_names_the_bundle(tmp_path):
    lb = Leaderboard({"mujoco": pd.DataFrame([{"method": "x", "score": "0.5"}])}, {}, [], ["1 run"],
                     remarks={"mujoco": ["too few seeds"]})
    md = write_leaderboard(lb, tmp_path, bundle="mine.bird").read_text()
    assert "| x | 0.5 |\n\n**too few seeds**\n\nIntervals: 95% BCa" in md
    assert "mine.bird" in (tmp_path / "leaderboard.html").read_text()


def test_write_leaderboard_copies_each_runs_files(tmp_path):
    for seed in range(2):
        _set_scores(write_run(tmp_path / "runs", "eureka", "mujoco", "hopper", seed, minimal=True), 0.5)
    out = write_leaderboard(_board(tmp_path / "runs"), tmp_path / "out").parent
    assert any((out / "runs").rglob("result.json"))


def test_runs_without_baseline_or_reward_accuracy_columns_still_make_a_table(tmp_path):
    from bird.analysis.report import _baselines
    for seed in range(2):
        _set_scores(write_run(tmp_path, "eureka", "mujoco", "hopper", seed, minimal=True), 0.5)
    coll = read_runs(tmp_path, warn=False)
    import dataclasses
    coll = dataclasses.replace(coll, runs=coll.runs.drop(columns=["baseline", "reward_accuracy"], errors="ignore"))
    assert _baselines(coll.runs) == set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        lb = build_leaderboard(coll, n_resamples=200, bt_resamples=20, figures=False)
    assert list(lb.tables["mujoco"]["method"]) == ["eureka"]
