"""The parts of `make mutate` (tools/mutate.py, its command line), one job each; each imports
only the parts listed above it.

- `modules`: the module table (each core module's files and the fast tests that cover it) and the paths the tool uses.
- `staging`: stages a module under .mutmut/<module>/, runs mutmut there (in full, resumed, or its set-up only) and
  reads back its verdicts and the surviving mutants' diffs.
- `incremental`: after a source change (`--changed`), re-checks only what the change can affect.
- `report`: scores, stale runs and notes; stores the results and writes docs/mutation.md and
  docs/mutation_survivors.md.
"""
