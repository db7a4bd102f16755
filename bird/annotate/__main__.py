"""`python -m bird.annotate serve RUNS... --db study.sqlite` (rate clips in a browser), `export` (tidy CSV), `links`.

Agreement statistics: `python -m bird.analysis agreement study.sqlite`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from bird.annotate.study import COMPLETION_ONLY, Study, find_clips


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bird.annotate", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="add the runs' clips to the study and serve the rating pages")
    s.add_argument("runs", nargs="*", help="run directories or folders holding them (clips: final/seed*/episode*.mp4)")
    s.add_argument("--db", required=True, help="study database (SQLite; created if missing)")
    s.add_argument("--raters", nargs="+", metavar="NAME",
                   help="raters to create (each gets a private link); default: A and B when the study has none")
    s.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    s.add_argument("--port", type=int, default=8765)
    s.add_argument("--repeat-fraction", type=float, default=0.2,
                   help="share of clips shown a second time, unannounced, to measure within-rater agreement")
    s.add_argument("--seed", type=int, default=0, help="seed of the schedules (order and repeats)")
    s.add_argument("--completion-only", nargs="*", default=list(COMPLETION_ONLY), metavar="SUITE",
                   help="suites rated for completion only (default: mujoco, as in BIRD's study)")
    s.add_argument("--include-candidates", action="store_true", help="also every candidate's clips")
    s.add_argument("--no-serve", action="store_true", help="set the study up and print the links, then exit")
    e = sub.add_parser("export", help="write one tidy CSV row per answer")
    e.add_argument("--db", required=True)
    e.add_argument("--out", required=True, help="CSV path")
    lk = sub.add_parser("links", help="print each rater's link")
    lk.add_argument("--db", required=True)
    lk.add_argument("--host", default="127.0.0.1")
    lk.add_argument("--port", type=int, default=8765)
    return p


def _links(study: Study, host: str, port: int) -> None:
    shown = "localhost" if host in ("127.0.0.1", "0.0.0.0", "::") else host
    for r in study.raters():
        print(f"  {r.name}: http://{shown}:{port}/r/{r.token}/")


def _serve(args: argparse.Namespace) -> int:
    if not 0.0 <= args.repeat_fraction <= 1.0:
        print("--repeat-fraction must be in [0, 1]", file=sys.stderr)
        return 2
    study = Study(args.db)
    try:
        clips = find_clips(args.runs, args.include_candidates) if args.runs else []
    except FileNotFoundError as exc:
        print(f"bird.annotate: {exc}", file=sys.stderr)
        return 2
    new = study.add_clips(clips, args.completion_only)
    names = args.raters or ([] if study.raters() else ["A", "B"])
    for name in names:
        study.add_rater(name, args.repeat_fraction, args.seed)
    print(f"study {args.db}: {new} new clips ({len(clips)} found); {study.summary()}")
    if not study.clip_count():
        print("bird.annotate: no clips yet: runs film their returned policy unless video.record=none "
              "(final/seed*/episode*.mp4)", file=sys.stderr)
    print("rater links (each rater only sees their own):")
    _links(study, args.host, args.port)
    if args.no_serve:
        return 0
    import uvicorn

    from bird.annotate.app import make_app

    uvicorn.run(make_app(study), host=args.host, port=args.port, log_level="warning")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    study = Study(args.db)
    if args.command == "links":
        _links(study, args.host, args.port)
        return 0
    n = study.export_csv(args.out)
    print(f"wrote {n} answers to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
