"""`python -m bird.analysis leaderboard RUNS... --out DIR` (and `export` to Parquet, `epic` to write epic.csv,
`agreement` for a rating study's reliability and human-vs-benchmark tables)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bird.analysis", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    lb = sub.add_parser("leaderboard", help="write leaderboard.md/.html and PNG figures")
    lb.add_argument("runs", nargs="+", help="run directories, sweep folders, bundles (NAME.bird), or a Parquet "
                    "export directory")
    lb.add_argument("--out", required=True, help="output directory")
    lb.add_argument("--pair", nargs=2, metavar=("A", "B"), help="methods for the paired-difference figure")
    lb.add_argument("--n-resamples", type=int, default=10_000, help="bootstrap resamples for means (BCa)")
    lb.add_argument("--bt-resamples", type=int, default=1_000, help="bootstrap resamples for Elo intervals")
    lb.add_argument("--curve-resamples", type=int, default=2_000, help="bootstrap resamples per curve point")
    lb.add_argument("--prior-sd-elo", type=float, help="Gaussian prior on each Bradley–Terry rating, its sd in Elo "
                    "(default: DEFAULT_PRIOR_SD_ELO of analysis/bradley_terry.py, a modelling choice: docs/analysis.md)")
    lb.add_argument("--l2", type=float, help="Bradley–Terry L2 penalty in natural units; overrides --prior-sd-elo")
    lb.add_argument("--seed", type=int, default=0, help="random_state of every bootstrap")
    lb.add_argument("--rank-baselines", action="store_true",
                    help="rank the reference-reward baseline (method=oracle) in Bradley–Terry too")
    lb.add_argument("--bundle", help="the bundle (NAME.bird) the runs came from, named in the page's re-run box "
                    "(default: the source itself when it is a .bird file)")
    ex = sub.add_parser("export", help="read runs and write runs/iterations/candidates/epic.parquet")
    ex.add_argument("runs", nargs="+")
    ex.add_argument("--out", required=True)
    ep = sub.add_parser("epic", help="write epic.csv (EPIC of each iteration's best reward) into each run directory")
    ep.add_argument("runs", nargs="+", help="run directories or folders holding them")
    ep.add_argument("--policy-steps", type=int, default=100_000, help="PPO steps of the competent policy")
    ep.add_argument("--n-transitions", type=int, default=4096, help="N_V: transitions the Pearson is taken over")
    ep.add_argument("--n-mean", type=int, default=1024, help="N_M: paired canonicalisation samples")
    ep.add_argument("--n-random", type=int, default=32, help="random rewards for the baseline")
    ep.add_argument("--discount", type=float, default=0.99, help="gamma of the canonicalisation")
    ep.add_argument("--seed", type=int, default=0, help="seed of the policy, rollouts and random rewards")
    ag = sub.add_parser("agreement", help="rating-study agreement (BIRD Tables 12, 13) from a study DB or CSV")
    ag.add_argument("ratings", help="study database (python -m bird.annotate) or its exported CSV")
    ag.add_argument("--out", help="also write agreement.md and agreement.json here")
    ag.add_argument("--n-resamples", type=int, default=2000, help="percentile-bootstrap resamples (BIRD: 2000)")
    ag.add_argument("--seed", type=int, default=0, help="random seed of the bootstrap")
    return p


def _agreement(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from .agreement import agreement_report, load_ratings

    try:
        df = load_ratings(args.ratings)
    except (FileNotFoundError, ValueError) as exc:
        print(f"bird.analysis agreement: {exc}", file=sys.stderr)
        return 1
    if df.empty:
        print("bird.analysis agreement: no ratings yet", file=sys.stderr)
        return 1
    report = agreement_report(df, args.n_resamples, args.seed)
    md = report.to_markdown()
    print(md)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "agreement.md").write_text(md)
        (out / "agreement.json").write_text(json.dumps(report.to_json(), indent=1, default=str) + "\n")
    return 0


def _epic(args: argparse.Namespace) -> int:
    from bird.escape import terminal

    from .epic_bench import EpicSettings, evaluate_run, write_epic_csv
    from .rundir import find_run_dirs

    s = EpicSettings(policy_steps=args.policy_steps, n_transitions=args.n_transitions, n_mean=args.n_mean,
                     seed=args.seed, discount=args.discount, n_random=args.n_random)
    refs: dict = {}
    dirs = [d for d in find_run_dirs(args.runs) if (d / "result.json").is_file()]
    if not dirs:
        print("no run directories with result.json found", file=sys.stderr)
        return 1
    evaluated = 0
    for d in dirs:
        try:
            rows = evaluate_run(d, s, refs)
        except (OSError, ValueError, KeyError, TypeError) as exc:  # a run bird will not read: skipped, the others go on
            print(terminal(f"{d}: skipped ({exc})"), file=sys.stderr)
            continue
        evaluated += 1
        path = write_epic_csv(d, rows)
        print(f"{path}")
        for r in rows:
            reason = f"  ({r['reason']})" if r["reason"] else ""
            print(terminal(f"  it{r['iteration']} {r['candidate'] or '-':8s} distance {r['distance']:.4f}  "
                           f"random median {r['random_median']:.4f}{reason}"))
    return 0 if evaluated else 1


def _source(paths: Sequence[str], out: str | None = None):
    """Runs from run directories, sweep folders, a Parquet export, or bundles (unpacked under OUT/runs/, or a
    temporary folder without OUT)."""
    import tempfile

    from .rundir import read_runs
    from .store import load_parquet

    if len(paths) == 1 and (Path(paths[0]) / "runs.parquet").is_file():
        return load_parquet(paths[0])
    into = Path(out) / "runs" if out else Path(tempfile.mkdtemp(prefix="bird-bundle-"))
    return read_runs([str(d) for p in paths for d in _unbundled(p, into)])


def _unbundled(path: str, into: Path) -> list:
    """[path], or a bundle's run directories, unpacked once into `into/<bundle name>/` (kept: the report links
    to their files)."""
    from bird.bundle import Bundle, is_bundle, unpack
    from bird.bundle.archive import sha256

    if not is_bundle(path):
        return [path]
    bundle, marker = Bundle(path), into / Path(path).stem / "BUNDLE.json"
    digest = sha256(Path(path).read_bytes())
    if marker.is_file() and json.loads(marker.read_text()).get("sha256") == digest:
        return [marker.parent / c["id"] for c in bundle.cells]
    runs = unpack(path, marker.parent)
    marker.write_text(json.dumps({"bundle": Path(path).name, "sha256": digest}) + "\n")
    return runs


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "epic":
        return _epic(args)
    if args.command == "agreement":
        return _agreement(args)
    from bird.bundle import BundleError

    try:
        source = _source(args.runs, args.out)
    except BundleError as exc:
        print(f"bird.analysis: {exc}", file=sys.stderr)
        return 2
    if args.command == "export":
        from .store import save_parquet

        coll = source
        out = save_parquet(coll, args.out)
        print(f"wrote {len(coll.runs)} runs ({len(coll.skipped)} skipped) to {out}")
        return 0
    from .bradley_terry import DEFAULT_PRIOR_SD_ELO, l2_from_prior_sd_elo
    from .report import build_leaderboard, write_leaderboard

    l2 = l2_from_prior_sd_elo(args.prior_sd_elo or DEFAULT_PRIOR_SD_ELO) if args.l2 is None else args.l2
    lb = build_leaderboard(source, pair=tuple(args.pair) if args.pair else None,
                           n_resamples=args.n_resamples, bt_resamples=args.bt_resamples,
                           curve_resamples=args.curve_resamples, l2=l2, random_state=args.seed,
                           rank_baselines=args.rank_baselines)
    bundle = args.bundle or (args.runs[0] if len(args.runs) == 1 and args.runs[0].endswith(".bird") else None)
    md = write_leaderboard(lb, args.out, bundle=bundle)
    print(f"wrote {md} and {md.with_suffix('.html')}")
    for n in lb.notes:
        print(f"note: {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
