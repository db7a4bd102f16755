"""`python -m bird.bundle pack RUNS... --out NAME.bird` · `verify NAME.bird` · `replay NAME.bird --out DIR [cells]` ·
`compare RUN_A RUN_B`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from bird.bundle.archive import BundleError
from bird.bundle.compare import Tolerance
from bird.escape import terminal


def _replay_description() -> str:
    from bird.config.received import AUTHORITY

    def keys(kind: str, inert: bool = False) -> str:
        return ", ".join(a.key for a in AUTHORITY if a.kind == kind and (a.inert is not None) == inert)

    return ("Re-run a bundle's cells from its recorded answers, with no network, no key and no client: llm.cache=replay "
            "from a fresh cache under OUT, tracker.backend=none.\n\n"
            "A bundle's config.yaml is data. These recorded values are ignored, this machine's used instead:\n"
            f"  endpoints and credentials: {keys('endpoint')}\n"
            f"  paths: {keys('path')}\n"
            f"A recorded limit looser than this machine's stops the replay before any work: {keys('limit')}.\n"
            "Set a value yourself with --set KEY=VALUE, or accept the recorded ones with --trust-config. An "
            "interpolation (${...}) in a recorded config is refused, never resolved. A recorded task (env.task) that "
            "names code or files (a module:Class, a function, a source file) stops the replay unless it is your own "
            "task file on the config search path, is in a plugin the runs import (named with --plugin), or "
            "--trust-config.\n"
            f"Kept as recorded, since no client is built and no key read (the recorded server is part of the answers' "
            f"keys): {keys('endpoint', inert=True)}.")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bird.bundle", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    pk = sub.add_parser("pack", help="pack completed run directories (or sweep folders) into one bundle file")
    pk.add_argument("runs", nargs="+", type=Path)
    pk.add_argument("--out", required=True, type=Path, help="the bundle file to write (NAME.bird)")
    pk.add_argument("--with-media", action="store_true", help="also pack clips, keyframes and rollouts")
    pk.add_argument("--cache-dir", type=Path, help="the response cache the runs used (default: each run's "
                    "llm.cache_dir, else $BIRD_CACHE_DIR or ~/.cache/bird/llm)")
    pk.add_argument("--allow-incomplete", action="store_true",
                    help="pack runs whose answers the cache lacks (they are marked not replayable)")
    vf = sub.add_parser("verify", help="check hashes, completeness and schema version; say what can be reproduced")
    vf.add_argument("bundle", type=Path)
    rp = sub.add_parser("replay", help="re-run cells from the recorded answers and compare with the bundle's results",
                        description=_replay_description(), formatter_class=argparse.RawDescriptionHelpFormatter)
    rp.add_argument("bundle", type=Path)
    rp.add_argument("cells", nargs="*", help="cell ids or prefixes (e.g. eureka/ or eureka/mujoco-hopper/seed0); "
                    "default: every cell")
    rp.add_argument("--out", required=True, type=Path, help="a fresh folder for the replayed runs")
    rp.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                    help="a config override for every cell (execution-only keys such as train.workers=1)")
    rp.add_argument("--trust-config", action="store_true",
                    help="take the recorded endpoints, paths, looser limits and the code a recorded task names as they "
                         "are (a bundle you made)")
    rp.add_argument("--plugin", dest="plugins", action="append", default=[], metavar="MODULE",
                    help="a plugin module the bundle's runs import, which you trust replay to import (it must be on "
                         "this machine's Python path; a bundle names plugins, it never holds their code)")
    rp.add_argument("--tol", action="append", default=[], metavar="METRIC=RTOL[,ATOL]",
                    help="tolerance of a metric (a curve column or JSON key; * = any other number) for cells "
                         "not expected to be bit-for-bit")
    cp = sub.add_parser("compare", help="compare two run directories of one search: what it computed, not how it ran")
    cp.add_argument("runs", nargs=2, type=Path, metavar="RUN", help="two run directories (A, then B)")
    cp.add_argument("--tol", action="append", default=[], metavar="METRIC=RTOL[,ATOL]",
                    help="tolerance of a metric (a curve column or JSON key; * = any other number); default: exact")
    return p


def _compare(a: Path, b: Path, tolerance: dict[str, Tolerance]) -> int:
    """Print what differs between run directories `a` and `b`; 0 when identical (or within --tol), else 1."""
    from bird.bundle.compare import compare_runs, read_run

    for run in (a, b):
        if not (run / "result.json").is_file():
            raise BundleError(f"{run} is not a finished run directory (no result.json)")
    exact = {"*": Tolerance()} if not tolerance else {}
    found = compare_runs(read_run(a), read_run(b), {**exact, **tolerance})
    listed = [f"only in {a}: {p}" for p in found.only_recorded] + [f"only in {b}: {p}" for p in found.only_replayed] \
        + [f"{d}{' (within tolerance)' * d.within_tolerance}" for d in found.differences]
    verdict = "identical" if found.identical else "within tolerance" if found.within_tolerance else "differ"
    print(f"{a} and {b}: {verdict}" + (f" ({len(listed)} difference(s); A is 'recorded', B 'replayed')"
                                       if listed else ""))
    for line in listed[:50]:
        print(f"  {line}")
    if len(listed) > 50:
        print(f"  ... and {len(listed) - 50} more")
    return 0 if found.within_tolerance else 1


def _tolerances(items: list[str]) -> dict[str, Tolerance]:
    out = {}
    for item in items:
        name, _, value = item.partition("=")
        rtol, _, atol = value.partition(",")
        try:
            out[name] = Tolerance(float(rtol), float(atol or 0.0))
        except ValueError:
            raise BundleError(f"--tol {item!r}: expected METRIC=RTOL[,ATOL] with numbers") from None
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "pack":
            from bird.bundle.pack import pack

            res = pack(args.runs, args.out, args.with_media, args.cache_dir, args.allow_incomplete)
            print(terminal(f"wrote {res.path} ({res.size / 1e6:.2f} MB, {len(res.cells)} cell(s), "
                           f"{len(res.left_out)} file(s) left out"
                           f"{'' if args.with_media else ': media without --with-media'})"))
            for c in res.cells:
                print(terminal(f"  {c['id']}: {c['transcript']['answers']} answer(s)" +
                               ("" if c["replayable"] else f"; NOT replayable: {c['why_not']}")))
            return 0
        if args.command == "verify":
            from bird.bundle.verify import verify

            report = verify(args.bundle)
            print(terminal(report.render()))  # member names, cell ids and transcript fields are the sender's
            return 0 if report.ok else 1
        if args.command == "compare":
            return _compare(*args.runs, _tolerances(args.tol))
        from bird.bundle.replay import replay

        result = replay(args.bundle, args.out, args.cells, args.overrides, _tolerances(args.tol), args.trust_config,
                        args.plugins)
        print(terminal(result.render()))
        return 0 if result.ok else 1
    except BundleError as exc:
        print(terminal(f"bird.bundle: {exc}"), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
