"""Time the analysis layer on a SYNTHETIC 10,000-run collection (made-up scores; for timing only).

    .venv/bin/python bench/bench_analysis.py [--n-runs 10000] [--keep DIR]     (--n-runs 200: a smoke run, seconds)

Writes the collection in the docs/rundir.md layout into a temp dir (minimal files: status, result, one
candidate.json per candidate), then times: reading the run directories, Parquet export, DuckDB aggregation over
the Parquet files, the same aggregation in pandas, BCa intervals per (benchmark, method), and a pooled
Bradley–Terry fit.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

import record

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "analysis"))

from synthetic_runs import write_run  # noqa: E402

from bird.analysis import (  # noqa: E402
    bca_interval,
    bradley_terry,
    bradley_terry_intervals,
    query,
    read_runs,
    save_parquet,
    score_table,
)

AGG_SQL = """
SELECT benchmark, method, count(*) AS runs, count(DISTINCT task) AS tasks, avg(returned_score) AS mean_score,
       avg(env_steps) AS env_steps, sum(cost_usd) AS cost
FROM runs GROUP BY ALL ORDER BY benchmark, method"""
CURVE_SQL = """
SELECT benchmark, task, method, iteration, avg(incumbent_score) AS score, count(*) AS seeds
FROM iterations GROUP BY ALL"""


def _timed(label: str, fn, results: dict, key: str):
    """Run fn, print its wall time under `label`, keep it as results[key] (a results-file column)."""
    t0 = time.perf_counter()
    out = fn()
    results[key] = time.perf_counter() - t0
    print(f"  {label:<44s} {results[key]:8.2f} s", flush=True)
    return out


def _layout(n_runs: int) -> list[tuple[str, str, str, int, float]]:
    """10 methods x 4 benchmarks x 25 tasks x 10 seeds = 10,000 runs, truncated to n_runs; tasks, then seeds vary
    slowest, so a small n_runs still has every method on every benchmark (200 runs: one task, 5 seeds)."""
    cells = [(f"method{m}", f"suite{b}", f"task{t:02d}", s, 0.15 * m - 0.7)
             for t in range(25) for s in range(10) for b in range(4) for m in range(10)]
    return cells[:n_runs]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n-runs", type=int, default=10_000)
    p.add_argument("--keep", help="write the collection here and keep it (default: a temp dir, removed); "
                   "if DIR/runs exists it is reused")
    args = p.parse_args()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bird-bench-SYNTHETIC-"))
    results: dict[str, float] = {}
    started = record.begin()
    print(f"SYNTHETIC collection (made-up scores, timing only): {args.n_runs} runs in {root}")
    try:
        cells = _layout(args.n_runs)
        if not (root / "runs").is_dir():
            _timed(f"write {len(cells)} synthetic run dirs", lambda: [
                write_run(root / "runs", m, b, t, s, effect=e, minimal=True) for m, b, t, s, e in cells], results, "write_s")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            coll = _timed("read_runs (JSON scan, all tables)", lambda: read_runs(root / "runs"), results, "read_runs_s")
        print(f"    -> {len(coll.runs)} runs, {len(coll.iterations)} iterations, {len(coll.candidates)} candidates")
        _timed("save_parquet", lambda: save_parquet(coll, root / "parquet"), results, "save_parquet_s")
        agg = _timed("DuckDB aggregate over Parquet (runs)", lambda: query(AGG_SQL, root / "parquet"), results, "duckdb_aggregate_s")
        _timed("DuckDB per-iteration curves over Parquet", lambda: query(CURVE_SQL, root / "parquet"), results, "duckdb_curves_s")
        _timed("pandas groupby aggregate (in memory)", lambda: coll.runs.groupby(["benchmark", "method"])
               ["returned_score"].agg(["mean", "count"]), results, "pandas_aggregate_s")
        keys = agg[["benchmark", "method"]].itertuples(index=False)

        def bca_all():
            tables = {b: score_table(coll.runs, b) for b in coll.runs["benchmark"].unique()}
            return [bca_interval(tables[b][m], n_resamples=10_000) for b, m in keys]

        ivs = _timed(f"BCa (B=10^4) for {len(agg)} benchmark x method cells", bca_all, results, "bca_s")
        pooled = score_table(coll.runs)
        _timed(f"Bradley–Terry pooled fit ({len(pooled)} methods)", lambda: bradley_terry(pooled), results, "bt_fit_s")
        sub = score_table(coll.runs[coll.runs["benchmark"] == "suite0"])
        _timed("Bradley–Terry intervals, one benchmark, B=200", lambda: bradley_terry_intervals(
            sub, n_resamples=200), results, "bt_intervals_s")
        print(f"\n  first interval {ivs[0]}; load + aggregate from JSON: "
              f"{results['read_runs_s'] + results['duckdb_aggregate_s']:.2f} s; "
              f"aggregate from Parquet: {results['duckdb_aggregate_s']:.2f} s")
        print(f"row appended to {record.append('analysis', {'n_runs': len(coll.runs), **results}, started)}")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
        else:
            shutil.rmtree(root / "parquet", ignore_errors=True)


if __name__ == "__main__":
    main()
