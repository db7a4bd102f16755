"""The leaderboard's figures, read back from the matplotlib Figure objects build_leaderboard returns: which data
each figure plots (hand-computed from the runs' files where that is simple), and that each is drawn with the
leaderboard's own bootstrap sizes, penalty and seed. Fast: tiny bootstraps on a small synthetic sweep."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from synthetic_runs import write_run

from bird.analysis import DEFAULT_L2, build_leaderboard, plots, read_runs
from bird.analysis.bootstrap import interval
from bird.analysis.bradley_terry import bradley_terry_intervals
from bird.analysis.metrics import performance_profile
from bird.analysis.tidy import score_table

# non-default sizes, penalty and seed: a figure drawn with any default instead of these differs
SIZES = {"n_resamples": 40, "bt_resamples": 12, "curve_resamples": 30, "l2": 0.01, "random_state": 4}
FIGURES = ["method_comparison", "bradley_terry", "curves_iteration", "curves_env_steps", "epic", "paired", "profiles"]
METHODS = {"alpha": 0.9, "beta": -0.3, "gamma": 0.2}
TASKS = [("mujoco", "hopper"), ("metaworld", "push")]


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return fn(*args, **kw)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    """3 methods x 2 tasks (2 benchmarks) x 3 seeds, with EPIC distances."""
    root = tmp_path_factory.mktemp("figures")
    for method, effect in METHODS.items():
        for suite, task in TASKS:
            for seed in (0, 1, 2):
                write_run(root, method, suite, task, seed, effect=effect, epic=True)
    return root


@pytest.fixture(scope="module")
def board(sweep):
    coll = _quiet(read_runs, sweep, warn=False)
    return coll, _quiet(build_leaderboard, coll, **SIZES)


def artists(fig) -> dict:
    """Everything a figure shows, as plain data: per axes its texts, ticks, lines and collections."""
    assert fig is not None
    axes = []
    for ax in fig.axes:
        axes.append({
            "title": ax.get_title(), "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(),
            "xticks": [t.get_text() for t in ax.get_xticklabels()], "yticks": [t.get_text() for t in ax.get_yticklabels()],
            "lines": [(np.asarray(ln.get_xdata(), float).tolist(), np.asarray(ln.get_ydata(), float).tolist(),
                       ln.get_label()) for ln in ax.lines],
            "collections": [([np.asarray(p.vertices).tolist() for p in c.get_paths()],
                             np.asarray(c.get_offsets()).tolist()) for c in ax.collections],
        })
    return {"axes": axes, "suptitle": fig._suptitle.get_text() if fig._suptitle else None}


def _errorbars(ax) -> list[tuple[float, ...]]:
    """(x, y, bar start, bar end) of each error bar of an axes, in drawing order (along y for vertical bars); (x, y)
    for a marker drawn without a bar."""
    out = []
    for container in ax.containers:
        line, _, bars = container
        x, y = float(line.get_xdata()[0]), float(line.get_ydata()[0])
        if not bars:
            out.append((x, y))
            continue
        (x0, y0), (x1, y1) = bars[0].get_segments()[0]
        out.append((x, y, y0, y1) if x0 == x1 else (x, y, x0, x1))
    return out


def _scores(root: Path) -> pd.DataFrame:
    rows = []
    for path in root.rglob("result.json"):
        r = json.loads(path.read_text())
        rows.append({"method": r["method"], "benchmark": r["suite"], "task": r["task"], "seed": r["seed"],
                     "score": r["returned_score"], "iterations": r["iterations"], "epic": path.parent / "epic.csv"})
    return pd.DataFrame(rows).sort_values(["method", "benchmark", "task", "seed"])


def test_every_figure_is_drawn_and_each_is_the_plot_of_its_own_data(board):
    """Each figure equals its plot function drawn on the collection's own tables with the leaderboard's sizes, and
    the notes are the plot functions' notes, each prefixed with its figure's name, in drawing order."""
    from bird.analysis.report import _bt_fits

    coll, lb = board
    assert list(lb.figures) == FIGURES and all(f is not None for f in lb.figures.values())
    runs, it, n, c, rs = coll.runs, coll.iterations, SIZES["n_resamples"], SIZES["curve_resamples"], SIZES["random_state"]
    bt_notes: list[str] = []
    fits, n_tasks = _quiet(_bt_fits, runs, SIZES["bt_resamples"], SIZES["l2"], rs, bt_notes)
    expected = {
        "method_comparison": _quiet(plots.plot_method_comparison, runs, n, rs),
        "bradley_terry": _quiet(plots.plot_bradley_terry, fits, n_tasks, SIZES["l2"]),
        "curves_iteration": _quiet(plots.plot_curves, it, "iteration", c, rs),
        "curves_env_steps": _quiet(plots.plot_curves, it, "env_steps_cum", c, rs),
        "epic": _quiet(plots.plot_epic, coll.epic, c, rs),
        "paired": _quiet(plots.plot_paired, runs, "alpha", "gamma", n_resamples=n, random_state=rs),
        "profiles": _quiet(plots.plot_profiles, runs),
    }
    for name, (fig, _) in expected.items():
        assert artists(lb.figures[name]) == artists(fig), name
    assert lb.notes == bt_notes + ["clips: none to show: the runs list none"] + [
        f"{name}: {note}" for name, (_, notes) in expected.items() for note in notes]
    assert any(n.startswith("bradley_terry: ") for n in lb.notes)  # this sweep has some to pass on


def test_method_comparison_ticks_are_the_mean_of_per_task_means_with_the_leaderboards_bootstrap(board, sweep):
    coll, lb = board
    scores = _scores(sweep)
    for ax, bench in zip(lb.figures["method_comparison"].axes, ["metaworld", "mujoco"], strict=True):
        assert ax.get_title().startswith(f"{bench}\nn = 1 task, 3 seeds per task")
        assert [t.get_text() for t in ax.get_xticklabels()] == sorted(METHODS)
        for m, (_, y, lo, hi) in zip(sorted(METHODS), _errorbars(ax), strict=True):
            mine = scores[(scores["method"] == m) & (scores["benchmark"] == bench)]["score"]
            assert y == pytest.approx(mine.mean(), abs=1e-12)
            iv = _quiet(interval, {"t": mine.to_numpy(float)}, "BCa", n_resamples=SIZES["n_resamples"],
                        random_state=SIZES["random_state"])
            assert (lo, hi) == pytest.approx((iv.low, iv.high), abs=1e-12), (bench, m)


def test_bradley_terry_panels_show_each_fits_ratings_with_the_leaderboards_penalty_and_bootstrap(board):
    coll, lb = board
    fig = lb.figures["bradley_terry"]
    assert [ax.get_title().split("\n")[0] for ax in fig.axes] == ["metaworld", "mujoco", "pooled"]
    for ax, bench in zip(fig.axes, ["metaworld", "mujoco", None], strict=True):
        runs = coll.runs if bench is None else coll.runs[coll.runs["benchmark"] == bench]
        fit = _quiet(bradley_terry_intervals, score_table(runs), l2=SIZES["l2"], n_resamples=SIZES["bt_resamples"],
                     random_state=SIZES["random_state"])
        order = sorted(fit.ratings, key=fit.ratings.get)
        assert [t.get_text() for t in ax.get_yticklabels()] == order
        for y, (m, drawn) in enumerate(zip(order, _errorbars(ax), strict=True)):  # a bar only where identifiable
            want = (fit.ratings[m], y, fit.low[m], fit.high[m]) if fit.identifiable else (fit.ratings[m], y)
            assert drawn == pytest.approx(want, abs=1e-9)
        tasks = "2 tasks" if bench is None else "1 task"
        assert ax.get_title().split("\n")[1] == f"n = {tasks}; BCa B=12"
        if not fit.identifiable:
            assert ax.get_title().split("\n")[2] == f"{fit.not_connected_share:.1%} of fits not connected: no intervals"
    assert "l2=0.01;" in fig._suptitle.get_text()


def test_curves_plot_the_incumbent_over_iterations_and_over_cumulative_env_steps(board):
    coll, lb = board
    by_iteration, by_steps = lb.figures["curves_iteration"], lb.figures["curves_env_steps"]
    assert [ax.get_title() for ax in by_iteration.axes] == ["metaworld/push (3 seeds)", "mujoco/hopper (3 seeds)"]
    for ax_it, ax_st, (_, task) in zip(by_iteration.axes, by_steps.axes, sorted(TASKS), strict=True):
        assert (ax_it.get_xlabel(), ax_st.get_xlabel()) == ("iteration", "cumulative env steps")
        for k, m in enumerate(sorted(METHODS)):
            rows = coll.iterations[(coll.iterations["method"] == m) & (coll.iterations["task"] == task)]
            means = rows.groupby("iteration")["incumbent_score"].mean()
            line_it, line_st = ax_it.lines[k], ax_st.lines[k]
            assert line_it.get_label() == line_st.get_label() == m
            assert list(line_it.get_xdata()) == [1, 2, 3]
            assert list(line_st.get_xdata()) == [60_000, 120_000, 180_000]  # 3 candidates x 20,000 steps each
            assert np.allclose(line_it.get_ydata(), means) and np.allclose(line_st.get_ydata(), means)


def test_epic_figure_plots_mean_distances_with_the_random_reward_line(board, sweep):
    _, lb = board
    ax = lb.figures["epic"].axes[0]
    scores = _scores(sweep)
    for k, m in enumerate(sorted(METHODS)):
        tables = [pd.read_csv(p) for p in scores[scores["method"] == m]["epic"]]
        mean = pd.concat(tables).groupby("iteration")["distance"].mean()  # equal seeds per task: mean of means
        assert ax.lines[k].get_label() == m and np.allclose(ax.lines[k].get_ydata(), mean.to_numpy())
    baseline = ax.lines[len(METHODS)]
    assert baseline.get_label() == "random rewards (0.70)" and np.allclose(baseline.get_ydata(), 0.70)


def test_paired_figure_defaults_to_the_two_best_rated_methods_of_the_pooled_fit(board, sweep):
    coll, lb = board
    fit = _quiet(bradley_terry_intervals, score_table(coll.runs), l2=SIZES["l2"], n_resamples=SIZES["bt_resamples"],
                 random_state=SIZES["random_state"])
    a, b = sorted(fit.ratings, key=fit.ratings.get, reverse=True)[:2]
    ax = lb.figures["paired"].axes[0]
    assert ax.get_ylabel() == f"{a} − {b}"
    scores = _scores(sweep).set_index(["method", "benchmark", "task", "seed"])["score"]
    for x, key in enumerate(["metaworld/push", "mujoco/hopper"]):
        bench, task = key.split("/")
        want = [scores[(a, bench, task, s)] - scores[(b, bench, task, s)] for s in (0, 1, 2)]
        assert np.allclose(np.asarray(ax.collections[x].get_offsets())[:, 1], want)
    (_, est, lo, hi), = _errorbars(ax)
    diffs = {k: np.array([scores[(a, *k.split("/"), s)] - scores[(b, *k.split("/"), s)] for s in (0, 1, 2)])
             for k in ("metaworld/push", "mujoco/hopper")}
    iv = _quiet(interval, diffs, "BCa", n_resamples=SIZES["n_resamples"], random_state=SIZES["random_state"])
    assert (est, lo, hi) == pytest.approx((iv.estimate, iv.low, iv.high), abs=1e-12)


def test_an_explicit_pair_is_plotted_in_the_order_given(board):
    coll, _ = board
    lb = _quiet(build_leaderboard, coll, pair=("gamma", "alpha"), **SIZES)
    assert lb.figures["paired"].axes[0].get_ylabel() == "gamma − alpha"


def test_profiles_plot_each_methods_score_distribution(board):
    coll, lb = board
    for ax, bench in zip(lb.figures["profiles"].axes, ["metaworld", "mujoco"], strict=True):
        table = score_table(coll.runs, bench)
        for k, m in enumerate(sorted(METHODS)):
            assert ax.lines[k].get_label() == m
            assert np.allclose(ax.lines[k].get_ydata(), performance_profile(table[m], np.linspace(0, 1, 101)))


def test_figures_that_cannot_be_drawn_are_none_and_their_notes_name_them(tmp_path):
    """One method, one seed, no EPIC data: no ratings, no pairs, no EPIC; each note carries its figure's name."""
    write_run(tmp_path / "runs", "alpha", "mujoco", "hopper", 0)
    lb = _quiet(build_leaderboard, tmp_path / "runs", **SIZES)
    assert list(lb.figures) == FIGURES
    assert {k for k, v in lb.figures.items() if v is None} == {"bradley_terry", "epic", "paired"}
    assert lb.notes == [
        "mujoco: Bradley–Terry needs two methods, found ['alpha']",
        "clips: none to show: the runs list none",
        "method_comparison: mujoco: alpha interval degenerate (one seed per task or constant scores)",
        "bradley_terry: no Bradley–Terry fits (need at least two methods sharing a task)",
        "epic: no EPIC data in the runs (no epic.csv): EPIC figure skipped",
        "paired: one method only: no paired differences",
    ]


def test_defaults_are_the_documented_bootstrap_sizes_penalty_and_seed(tmp_path):
    """build_leaderboard(source) alone: 10,000 resamples for means, 1,000 for Elo, 2,000 for curves, l2 of the default prior,
    seed 0, figures drawn. Read back unrounded from the figures (the tables round)."""
    root = tmp_path / "runs"
    # six irregular scores per method (each wins some seed pairs): enough distinct resamples that one resample
    # more or less moves the interval bounds, which three seeds do not
    for method, scores in (("alpha", (0.5, 0.2, 0.7, 0.15, 0.93, 0.36)), ("beta", (0.4, 0.6, 0.3, 0.82, 0.11, 0.57))):
        for seed, score in enumerate(scores):
            run = write_run(root, method, "mujoco", "hopper", seed, iterations=2, candidates=1)
            result = json.loads((run / "result.json").read_text())
            (run / "result.json").write_text(json.dumps({**result, "returned_score": score}))
    lb = _quiet(build_leaderboard, root)
    assert list(lb.figures) == FIGURES
    # with figures drawn, the tables and the header come back too
    assert lb.tables["mujoco"]["method"].tolist() == ["alpha", "beta"] and lb.header[0] == "12 runs; 2 methods; 1 task."
    coll = _quiet(read_runs, root, warn=False)
    table = score_table(coll.runs)
    for m, (_, _, lo, hi) in zip(sorted(table), _errorbars(lb.figures["method_comparison"].axes[0]), strict=True):
        iv = _quiet(interval, table[m], "BCa", n_resamples=10_000, random_state=0)
        assert (lo, hi) == pytest.approx((iv.low, iv.high), abs=1e-12)
    fit = _quiet(bradley_terry_intervals, table, l2=DEFAULT_L2, n_resamples=1_000, random_state=0)
    assert fit.ratings.strongly_connected and fit.n_not_connected < fit.n_fits  # bounds the data set, not the penalty
    bars = [bound for bar in _errorbars(lb.figures["bradley_terry"].axes[0]) for bound in bar[2:]]
    order = sorted(fit.ratings, key=fit.ratings.get)
    assert bars == pytest.approx([bound for m in order for bound in (fit.low[m], fit.high[m])], abs=1e-9)
    curves = _quiet(plots.plot_curves, coll.iterations, "iteration", 2_000, 0)[0]
    assert artists(lb.figures["curves_iteration"]) == artists(curves)


def test_a_method_with_no_in_loop_score_draws_no_line_and_the_notes_say_why():
    rows = [{"benchmark": "metaworld", "task": "reach", "method": m, "seed": s, "iteration": i,
             "env_steps_cum": 1000.0 * i, "incumbent_score": (0.1 * i + 0.01 * s) if m == "eureka" else np.nan}
            for m in ("card", "eureka") for s in (0, 1) for i in (1, 2)]
    fig, notes = _quiet(plots.plot_curves, pd.DataFrame(rows), "iteration", 30, 0)
    assert [line.get_label() for line in fig.axes[0].lines] == ["eureka"]
    assert notes == ["card: no line: the reward it would return after each iteration was never trained in the loop "
                     "(no in-loop score; e.g. CARD's last, feedback-less iteration, or a screened candidate)"]
    assert "no line for card" in fig._suptitle.get_text()

