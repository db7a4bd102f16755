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
