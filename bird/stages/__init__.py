"""Loop stages: generate, verify, train, feedback, select. Each reads config and calls registered components."""
