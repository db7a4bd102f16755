"""Leaderboard figures. Each function returns (Figure or None, notes); None means the figure cannot be drawn
from the data, and the notes say why. Figures use matplotlib's object API (no pyplot, no global state)."""

from __future__ import annotations

import textwrap
import warnings

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from .bootstrap import interval
from .bradley_terry import BTIntervals
from .metrics import performance_profile
from .tidy import paired_differences, score_table, shared_tasks

__all__ = ["plot_bradley_terry", "plot_curves", "plot_epic", "plot_method_comparison", "plot_paired",
           "plot_profiles", "plot_reward_accuracy"]

Result = tuple[Figure | None, list[str]]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' * (n != 1)}"


def _suptitle(fig: Figure, text: str) -> None:
    """A figure title wrapped to the figure's width."""
    width = int(fig.get_figwidth() * 12.5)
    fig.suptitle("\n".join(textwrap.fill(line, width) for line in text.split("\n")), fontsize=10)


def _range(counts: list[int] | np.ndarray) -> str:
    c = np.asarray(counts)
    return f"{c.min()}" if c.min() == c.max() else f"{c.min()}–{c.max()}"


def _n_label(n_tasks: int, seeds: list[int] | np.ndarray, unit: str = "seeds") -> str:
    return f"n = {_plural(n_tasks, 'task')}, {_range(seeds)} {unit} per task"


def _quiet_interval(scores: dict[str, np.ndarray], **kw: object):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return interval(scores, **kw)  # type: ignore[arg-type]


def plot_method_comparison(runs: pd.DataFrame, n_resamples: int = 10_000, random_state: int = 0) -> Result:
    """Per benchmark: one dot per run (task x seed), a tick at the mean over tasks of per-task means, 95% BCa
    bars (seeds resampled within tasks). A method lacking some of the benchmark's tasks gets dots only."""
    benches = sorted(runs["benchmark"].unique())
    if not benches:
        return None, ["no completed runs"]
    fig = Figure(figsize=(max(4.5, 3.2 * len(benches)), 4.2), layout="constrained")
    axes = fig.subplots(1, len(benches), squeeze=False)[0]
    notes: list[str] = []
    rng = np.random.default_rng(0)
    for ax, b in zip(axes, benches, strict=True):
        table = score_table(runs, b)
        methods = sorted(table)
        _, lacking = shared_tasks(table)
        n_tasks = len(set().union(*(t.keys() for t in table.values())))
        seeds = [v.size for t in table.values() for v in t.values()]
        for x, m in enumerate(methods):
            vals = np.concatenate(list(table[m].values()))
            ax.scatter(x + rng.uniform(-0.15, 0.15, vals.size), vals, s=10, alpha=0.45, color=f"C{x % 10}")
            if m in lacking:
                notes.append(f"{b}: {m} has no aggregate (lacks tasks {lacking[m]})")
                continue
            iv = _quiet_interval(table[m], method="BCa", n_resamples=n_resamples, random_state=random_state)
            ax.errorbar(x, iv.estimate, yerr=[[iv.estimate - iv.low], [iv.high - iv.estimate]], fmt="_",
                        markersize=22, color="black", capsize=4, lw=1.5)
            if iv.degenerate:
                notes.append(f"{b}: {m} interval degenerate (one seed per task or constant scores)")
        ax.set_xticks(range(len(methods)), methods, rotation=30, ha="right")
        ax.set_title(f"{b}\n{_n_label(n_tasks, seeds)}", fontsize=9)
        ax.set_ylabel("returned score")
    _suptitle(fig, "Method comparison: dots = runs, ticks = mean over tasks of per-task means,\n"
                 "bars = 95% BCa (seeds resampled within tasks, tasks fixed)")
    return fig, notes


def plot_bradley_terry(fits: dict[str, BTIntervals], n_tasks: dict[str, int], l2: float) -> Result:
    """One panel per fit (per benchmark and pooled): Elo with interval bars; open markers where the win graph
    is not strongly connected (rating set by the penalty, not the data)."""
    if not fits:
        return None, ["no Bradley–Terry fits (need at least two methods sharing a task)"]
    fig = Figure(figsize=(max(4.5, 3.4 * len(fits)), 4.2), layout="constrained")
    axes = fig.subplots(1, len(fits), squeeze=False)[0]
    notes = []
    for ax, (name, fit) in zip(axes, fits.items(), strict=True):
        methods = sorted(fit.ratings, key=fit.ratings.get)
        for y, m in enumerate(methods):
            r, lo, hi = fit.ratings[m], fit.low[m], fit.high[m]
            bar = [[r - lo], [hi - r]] if fit.identifiable else None  # no bar where the interval is not identifiable
            ax.errorbar(r, y, xerr=bar, fmt="o", color="C0", capsize=3,
                        mfc="C0" if fit.ratings.strongly_connected else "white")
        ax.axvline(np.mean(list(fit.ratings.values())), ls="--", color="grey", lw=1)
        ax.set_yticks(range(len(methods)), methods)
        ax.set_xlabel("Elo (Bradley–Terry)")
        bad = ("" if not fit.n_not_connected else f"\n{fit.not_connected_share:.1%} of fits not connected"
               + ("" if fit.identifiable else ": no intervals"))
        ax.set_title(f"{name}\nn = {_plural(n_tasks[name], 'task')}; {fit.method} B={fit.n_resamples}{bad}", fontsize=9)
        if not fit.ratings.strongly_connected:
            notes.append(f"{name}: win graph not strongly connected; open markers are set by the prior (l2={l2:g})")
        if fit.n_not_connected:
            tail = (1 - fit.confidence_level) / 2
            notes.append(f"{name}: {fit.n_not_connected} of {fit.n_fits} bootstrap fits "
                         f"({fit.not_connected_share:.1%}) not strongly connected; " +
                         (f"above {tail:.1%}, one tail of the interval, so the Elo intervals are not identifiable "
                          "and are not shown" if not fit.identifiable else
                          f"at most {tail:.1%}, one tail of the interval, so the intervals are shown"))
    _suptitle(fig, f"Bradley–Terry ratings (l2={l2:g}; open marker = set by the prior; no bar = interval not "
                 "identifiable): seeds compared all-vs-all within tasks, ties half;\nintervals resample seeds with "
                 "tasks fixed")
    return fig, notes


def _band(ax, x: np.ndarray, by_task: list[dict[str, np.ndarray]], color: str, label: str,
          n_resamples: int, random_state: int) -> None:
    """Mean over tasks of per-task seed means at each x, with a 95% BCa band over seeds."""
    est, lo, hi = [], [], []
    for scores in by_task:
        iv = _quiet_interval(scores, method="BCa", n_resamples=n_resamples, random_state=random_state)
        est.append(iv.estimate)
        lo.append(iv.low)
        hi.append(iv.high)
    ax.plot(x, est, marker="o", ms=3, color=color, label=label)
    ax.fill_between(x, lo, hi, color=color, alpha=0.2)


def plot_curves(iterations: pd.DataFrame, x: str = "iteration", n_resamples: int = 2_000,
                random_state: int = 0) -> Result:
    """Per task: in-loop score of the incumbent (the engine's `returned_so_far`, else the best fitness so far)
    after each iteration, mean over seeds with 95% BCa bands over seeds; x = "iteration" or "env_steps_cum"
    (mean over seeds at each iteration)."""
    if x not in ("iteration", "env_steps_cum"):
        raise ValueError(f"x={x!r}; expected 'iteration' or 'env_steps_cum'")
    df = iterations.dropna(subset=["incumbent_score"])
    lineless = sorted(set(iterations["method"]) - set(df["method"])) if len(iterations) else []
    notes = [f"{m}: no line: the reward it would return after each iteration was never trained in the loop (no "
             "in-loop score; e.g. CARD's last, feedback-less iteration, or a screened candidate)" for m in lineless]
    if df.empty:
        return None, ["no per-iteration scores in the runs", *notes]
    tasks = sorted({(b, t) for b, t in zip(df["benchmark"], df["task"], strict=True)})
    ncol = min(4, len(tasks))
    nrow = -(-len(tasks) // ncol)
    fig = Figure(figsize=(3.4 * ncol, 2.8 * nrow + 0.6), layout="constrained")
    axes = fig.subplots(nrow, ncol, squeeze=False).ravel()
    methods = sorted(df["method"].unique())
    for ax, (b, t) in zip(axes, tasks, strict=False):
        sub = df[(df["benchmark"] == b) & (df["task"] == t)]
        n_seeds = []
        for k, m in enumerate(methods):
            g = sub[sub["method"] == m]
            if g.empty:
                continue
            its = sorted(g["iteration"].unique())
            per_it = [{"t": g.loc[g["iteration"] == i, "incumbent_score"].to_numpy(float)} for i in its]
            xs = np.array(its if x == "iteration" else
                          [g.loc[g["iteration"] == i, "env_steps_cum"].mean() for i in its], dtype=float)
            _band(ax, xs, per_it, f"C{k % 10}", m, n_resamples, random_state)
            n_seeds.append(g["seed"].nunique())
        ax.set_title(f"{b}/{t} ({_range(n_seeds)} seeds)", fontsize=9)
        ax.set_xlabel("iteration" if x == "iteration" else "cumulative env steps")
        if x == "iteration":
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel("incumbent score")
    for ax in axes[len(tasks):]:
        ax.set_axis_off()
    axes[0].legend(fontsize=8)
    _suptitle(fig, f"Per-task curves, n = {_plural(len(tasks), 'task')}: in-loop score of the reward that would be "
                   "returned after each iteration;\nmean over seeds, 95% BCa bands over seeds"
              + (f"; no line for {', '.join(lineless)} (no in-loop score: Notes)" if lineless else ""))
    return fig, notes


def plot_reward_accuracy(iterations: pd.DataFrame) -> Result:
    """GRACE Fig. 2: per task and method, the reward accuracy (fraction of expert/negative state pairs ordered
    correctly) of the reward returned so far, on the train and the held-out split, against the generation; mean over
    seeds, shaded ± one standard deviation (the paper's shading)."""
    cols = {"reward_accuracy_train", "reward_accuracy_test"}
    if not cols <= set(iterations.columns) or iterations[sorted(cols)].isna().all().all():
        return None, ["no run records reward accuracy (a demo-fitness method: GRACE)"]
    df = iterations.dropna(subset=["reward_accuracy_train"])
    tasks = sorted({(b, t) for b, t in zip(df["benchmark"], df["task"], strict=True)})
    ncol = min(4, len(tasks))
    nrow = -(-len(tasks) // ncol)
    fig = Figure(figsize=(3.4 * ncol, 2.8 * nrow + 0.6), layout="constrained")
    axes = fig.subplots(nrow, ncol, squeeze=False).ravel()
    for ax, (b, t) in zip(axes, tasks, strict=False):
        sub = df[(df["benchmark"] == b) & (df["task"] == t)]
        for k, m in enumerate(sorted(sub["method"].unique())):
            g = sub[sub["method"] == m].groupby("iteration")
            for col, style in (("reward_accuracy_train", "--"), ("reward_accuracy_test", "-")):
                mean, std = g[col].mean(), g[col].std().fillna(0.0)
                label = f"{m} {'train' if col.endswith('train') else 'test'}"
                ax.plot(mean.index, mean.to_numpy(), style, color=f"C{k % 10}", label=label)
                ax.fill_between(mean.index, (mean - std).to_numpy(), (mean + std).to_numpy(), color=f"C{k % 10}",
                                alpha=0.15)
        ax.set_title(f"{b}/{t} ({sub['seed'].nunique()} seeds)", fontsize=9)
        ax.set_xlabel("generation")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel("reward accuracy")
        ax.set_ylim(-0.02, 1.02)
    for ax in axes[len(tasks):]:
        ax.set_axis_off()
    axes[0].legend(fontsize=7)
    _suptitle(fig, f"Reward accuracy per generation (GRACE Fig. 2), n = {_plural(len(tasks), 'task')}: train (dashed) "
                   "and held-out (solid) split; mean over seeds ± 1 std")
    return fig, []


def plot_epic(epic: pd.DataFrame, n_resamples: int = 2_000, random_state: int = 0) -> Result:
    """EPIC distance of each iteration's best reward to the reference: mean over tasks and seeds, 95% BCa bands
    over seeds (tasks fixed); dashed line = random-reward baseline (mean over tasks of per-task medians)."""
    df = epic.dropna(subset=["distance"]) if "distance" in epic else epic
    if df.empty:
        return None, ["no EPIC data in the runs (no epic.csv): EPIC figure skipped"]
    fig = Figure(figsize=(5.5, 4), layout="constrained")
    ax = fig.subplots()
    for k, m in enumerate(sorted(df["method"].unique())):
        g = df[df["method"] == m]
        its = sorted(g["iteration"].unique())
        per_it = [{f"{b}/{t}": gg["distance"].to_numpy(float)
                   for (b, t), gg in g[g["iteration"] == i].groupby(["benchmark", "task"])} for i in its]
        _band(ax, np.array(its, dtype=float), per_it, f"C{k % 10}", m, n_resamples, random_state)
    notes = []
    if "random_median" in df and df["random_median"].notna().any():
        baseline = df.groupby(["benchmark", "task"])["random_median"].first().mean()
        ax.axhline(baseline, ls="--", color="grey", label=f"random rewards ({baseline:.2f})")
    else:
        notes.append("no random-reward baseline in epic.csv")
    n_tasks = df.groupby(["benchmark", "task"]).ngroups
    seeds = df.groupby(["benchmark", "task", "method"])["seed"].nunique().to_numpy()
    ax.set_xlabel("iteration")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("EPIC distance to reference")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8)
    ax.set_title(f"EPIC over iterations ({_n_label(n_tasks, seeds)})\n95% BCa over seeds, tasks fixed",
                 fontsize=9)
    return fig, notes


def plot_paired(runs: pd.DataFrame, method_a: str, method_b: str, n_resamples: int = 10_000,
                random_state: int = 0) -> Result:
    """Paired differences a - b on (task, seed): one dot per pair grouped by task, and the mean over tasks of
    per-task mean differences with a 95% BCa interval (pairs resampled within tasks)."""
    d = paired_differences(runs, method_a, method_b)
    if d.empty:
        return None, [f"{method_a} and {method_b} share no (task, seed) cells: paired figure skipped"]
    d["key"] = d["benchmark"] + "/" + d["task"]
    keys = sorted(d["key"].unique())
    by_task = {k: d.loc[d["key"] == k, "diff"].to_numpy(float) for k in keys}
    iv = _quiet_interval(by_task, method="BCa", n_resamples=n_resamples, random_state=random_state)
    fig = Figure(figsize=(max(5, 0.5 * len(keys) + 3), 4), layout="constrained")
    ax = fig.subplots()
    for x, k in enumerate(keys):
        ax.scatter(np.full(by_task[k].size, x), by_task[k], s=12, alpha=0.6, color="C0")
    x_all = len(keys) + 0.5
    ax.errorbar(x_all, iv.estimate, yerr=[[iv.estimate - iv.low], [iv.high - iv.estimate]], fmt="s",
                color="black", capsize=4)
    ax.axhline(0, color="grey", lw=1)
    ax.set_xticks([*range(len(keys)), x_all], [*keys, "mean"], rotation=40, ha="right", fontsize=8)
    ax.set_ylabel(f"{method_a} − {method_b}")
    seeds = [v.size for v in by_task.values()]
    ax.set_title(f"Paired differences ({_n_label(len(keys), seeds, 'pairs')})\nmean {iv.estimate:+.3f}, "
                 f"95% BCa [{iv.low:+.3f}, {iv.high:+.3f}], pooled mean {d['diff'].mean():+.3f}", fontsize=9)
    return fig, [] if not iv.degenerate else ["paired interval degenerate (one pair per task or equal diffs)"]


def plot_profiles(runs: pd.DataFrame) -> Result:
    """Performance profiles (rliable score distributions): fraction of runs with score > tau, averaged over
    tasks, per benchmark; methods lacking tasks are left out."""
    benches = sorted(runs["benchmark"].unique())
    if not benches:
        return None, ["no completed runs"]
    fig = Figure(figsize=(max(4.5, 3.4 * len(benches)), 3.6), layout="constrained")
    axes = fig.subplots(1, len(benches), squeeze=False)[0]
    taus = np.linspace(0, 1, 101)
    for ax, b in zip(axes, benches, strict=True):
        table = score_table(runs, b)
        _, lacking = shared_tasks(table)
        for k, m in enumerate(sorted(table)):
            if m not in lacking:
                ax.plot(taus, performance_profile(table[m], taus), color=f"C{k % 10}", label=m)
        ax.set_xlabel("score τ")
        ax.set_ylabel("fraction of runs > τ")
        seeds = [v.size for t in table.values() for v in t.values()]
        ax.set_title(f"{b} ({_n_label(len(set().union(*table.values())), seeds)})", fontsize=9)
        ax.legend(fontsize=8)
    _suptitle(fig, "Performance profiles (no intervals)")
    return fig, []
