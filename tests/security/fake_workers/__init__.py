"""Worker entry modules that misbehave on purpose, to test the host's side of the protocol (test_host_side.py)."""
