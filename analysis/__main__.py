"""`python -m bird.analysis leaderboard RUNS... --out DIR` (and `export` to Parquet)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bird.analysis", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    lb = sub.add_parser("leaderboard", help="write leaderboard.md/.html and PNG figures")
    lb.add_argument("runs", nargs="+", help="run directories, sweep folders, or a Parquet export directory")
    lb.add_argument("--out", required=True, help="output directory")
    lb.add_argument("--pair", nargs=2, metavar=("A", "B"), help="methods for the paired-difference figure")
    lb.add_argument("--n-resamples", type=int, default=10_000, help="bootstrap resamples for means (BCa)")
    lb.add_argument("--bt-resamples", type=int, default=1_000, help="bootstrap resamples for Elo intervals")
    lb.add_argument("--curve-resamples", type=int, default=2_000, help="bootstrap resamples per curve point")
    lb.add_argument("--l2", type=float, default=1e-6, help="Bradley–Terry L2 penalty (natural units)")
    lb.add_argument("--prior-sd-elo", type=float, help="Gaussian prior on ratings (Elo sd); overrides --l2")
    lb.add_argument("--seed", type=int, default=0, help="random_state of every bootstrap")
    ex = sub.add_parser("export", help="read runs and write runs/iterations/candidates/epic.parquet")
    ex.add_argument("runs", nargs="+")
    ex.add_argument("--out", required=True)
    return p


def _source(paths: Sequence[str]):
    from pathlib import Path

    from .rundir import read_runs
    from .store import load_parquet

    if len(paths) == 1 and (Path(paths[0]) / "runs.parquet").is_file():
        return load_parquet(paths[0])
    return read_runs(paths)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "export":
        from .store import save_parquet

        coll = _source(args.runs)
        out = save_parquet(coll, args.out)
        print(f"wrote {len(coll.runs)} runs ({len(coll.skipped)} skipped) to {out}")
        return 0
    from .bradley_terry import l2_from_prior_sd_elo
    from .report import build_leaderboard, write_leaderboard

    l2 = l2_from_prior_sd_elo(args.prior_sd_elo) if args.prior_sd_elo else args.l2
    lb = build_leaderboard(_source(args.runs), pair=tuple(args.pair) if args.pair else None,
                           n_resamples=args.n_resamples, bt_resamples=args.bt_resamples,
                           curve_resamples=args.curve_resamples, l2=l2, random_state=args.seed)
    md = write_leaderboard(lb, args.out)
    print(f"wrote {md} and {md.with_suffix('.html')}")
    for n in lb.notes:
        print(f"note: {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
