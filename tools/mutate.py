"""Mutation testing of bird's core modules with mutmut, one module at a time: `make mutate` (docs/mutation.md).

Each module is staged under .mutmut/<module>/ and mutmut runs there with only that module's files mutated and only
the fast tests that cover it (tools/mutation/staging.py says why it is staged).

Results go to docs/mutation/results.json (one entry per module, kept between runs) and docs/mutation.md is written
from it, with the surviving mutants explained in docs/mutation/notes.toml.

This file is the command line; the package tools/mutation/ does the work (its __init__ lists the parts).

    python tools/mutate.py                      # every module (hours on 2 cores)
    python tools/mutate.py retry cache          # some modules
    python tools/mutate.py --report             # rewrite docs/mutation.md from the stored results only
    python tools/mutate.py --baseline bundle_verify   # check a module's set-up (no mutation run)
    python tools/mutate.py bundle_compare --changed  # after a source change: re-check only what it can affect
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mutation.incremental import run_changed
from mutation.modules import MODULES, NOTES, RESULTS, ROOT, STAGE
from mutation.report import _load_notes, _score, _store, prune_notes, stale, unused_notes, write_report
from mutation.staging import baseline, collect, failed_early, last_words, run_module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("modules", nargs="*", help=f"some of {list(MODULES)} (default: all)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per module before mutmut is stopped")
    parser.add_argument("--max-children", type=int, default=2, help="parallel mutant runs (the machine has 2 cores)")
    parser.add_argument("--report", action="store_true", help="only rewrite docs/mutation.md and docs/mutation_survivors.md from stored results")
    parser.add_argument("--results", type=Path, default=RESULTS, help="results file to update and report from")
    parser.add_argument("--resume", action="store_true",
                        help="re-check only the last run's mutants that were not killed, with the current tests")
    parser.add_argument("--changed", action="store_true",
                        help="after a source change: re-check the mutants of changed or new functions and of their "
                             "callers, and the last run's survivors; the other verdicts of the last run are kept")
    parser.add_argument("--prune-notes", action="store_true",
                        help="remove the notes in notes.toml that match no surviving mutant of the stored results")
    parser.add_argument("--collect", action="store_true", help="record the modules' last (e.g. stopped) runs, run none")
    parser.add_argument("--baseline", action="store_true",
                        help="check the modules' set-up only (the listed tests pass under mutmut, reach mutants, and "
                             "fail when every mutant raises) and print the time estimates; no mutation run, no results")
    args = parser.parse_args(argv)
    unknown = [m for m in args.modules if m not in MODULES]
    if unknown:
        parser.error(f"unknown module(s) {unknown}; choose from {list(MODULES)}")
    if args.baseline:
        bad = 0
        for name in args.modules or list(MODULES):
            b = baseline(name, args.timeout)
            bad += not b["ok"]
            print(f"{name:22s} {'ok' if b['ok'] else 'FAILED: ' + b['why']}: {b.get('mutants', '?')} mutants, "
                  f"{b.get('no_tests', '?')} reached by no listed test, worst case {b.get('worst_case_s', '?')} s of "
                  "tests" + ("" if b["ok"] else "\n" + b.get("log", "")), flush=True)
        return 1 if bad else 0
    failed = 0
    if args.collect:
        for name in args.modules:
            _store(args.results, name, collect(name))
    elif not (args.report or args.prune_notes):  # both only rewrite files from the stored results
        for name in args.modules or list(MODULES):
            print(f"mutate: {name} ...", flush=True)
            entry = (run_changed(name, args.timeout, args.max_children) if args.changed
                     else run_module(name, args.timeout, args.max_children, args.resume))
            previous = json.loads(args.results.read_text()).get(name) if args.results.exists() else None
            if entry["command"].endswith(("--resume", "--changed")) and previous:
                entry["wall_s"] += previous["wall_s"]  # the run it continued, and the runs before that
            print(f"mutate: {name}: {entry['total']} mutants, {entry['counts']}, {entry['wall_s']} s", flush=True)
            early = failed_early(STAGE / name)
            if early or (entry["total"] and entry["counts"].get("not checked", 0) == entry["total"]):
                failed += 1  # mutmut stopped before its first mutant (its clean run of the tests failed, say)
                print(f"mutate: {name}: no mutant was checked ({last_words(STAGE / name, early)}); the stored result "
                      "is kept", flush=True)
                continue
            _store(args.results, name, entry)
    results = json.loads(args.results.read_text()) if args.results.exists() else {}
    if args.prune_notes:
        print(f"mutate: {prune_notes(results)} unused notes removed from {NOTES.relative_to(ROOT)}")
    write_report(results)
    notes = _load_notes()
    for name, e in results.items():
        print(f"{name:18s} score {_score(e, name, notes)[3]:.1%}" + (" (stale)" if stale(e) else ""))
    for n in unused_notes(results, notes):
        print(f"unused note: {n['module']}: {n['function']}: {n['added']}")
    return 1 if failed else 0



if __name__ == "__main__":
    sys.exit(main())
