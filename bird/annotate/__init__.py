"""BIRD's human rating study as a local web app: `python -m bird.annotate serve RUNS... --db study.sqlite`."""
