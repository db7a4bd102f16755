"""bird.analysis: tidy run tables, BCa intervals, Bradley–Terry/Elo, EPIC, rliable metrics, leaderboard report.

See docs/analysis.md; definitions follow the BIRD paper ("A Bird's-Eye View of Iterative Reward Design": Fig. 4, 7, 9
and 11 captions) and the papers each module cites.
"""

from .bootstrap import Interval, bca_interval, interval, stratified_bootstrap
from .bradley_terry import (
    DEFAULT_L2,
    DEFAULT_PRIOR_SD_ELO,
    BTIntervals,
    Ratings,
    bradley_terry,
    bradley_terry_intervals,
    l2_from_prior_sd_elo,
    strongly_connected,
    win_matrix,
)
from .epic import (
    ZeroVarianceWarning,
    canonicalize_samples,
    canonicalize_tabular,
    epic_distance_samples,
    epic_distance_tabular,
    pearson_distance,
)
from .metrics import (
    aggregate_iqm,
    aggregate_mean,
    aggregate_median,
    aggregate_optimality_gap,
    metric_interval,
    performance_profile,
    probability_of_improvement,
)
from .rundir import RunCollection, Skipped, find_run_dirs, load_runs, read_runs
from .store import load_parquet, query, save_parquet
from .tidy import paired_differences, score_table, shared_tasks

_LAZY = {"Leaderboard", "build_leaderboard", "write_leaderboard"}  # report imports matplotlib


def __getattr__(name: str) -> object:
    if name in _LAZY:
        from . import report

        return getattr(report, name)
    raise AttributeError(f"module 'bird.analysis' has no attribute {name!r}")


__all__ = [
    "DEFAULT_L2", "DEFAULT_PRIOR_SD_ELO", "BTIntervals", "Interval", "Leaderboard", "Ratings", "RunCollection", "Skipped", "ZeroVarianceWarning",
    "aggregate_iqm", "aggregate_mean", "aggregate_median", "aggregate_optimality_gap", "bca_interval",
    "bradley_terry", "bradley_terry_intervals", "build_leaderboard", "canonicalize_samples",
    "canonicalize_tabular", "epic_distance_samples", "epic_distance_tabular", "find_run_dirs", "interval", "l2_from_prior_sd_elo",
    "load_parquet", "load_runs", "metric_interval", "paired_differences", "pearson_distance",
    "performance_profile", "probability_of_improvement", "query", "read_runs", "save_parquet", "score_table",
    "shared_tasks", "stratified_bootstrap", "strongly_connected", "win_matrix", "write_leaderboard",
]
