"""The config overrides every test search starts from (conftest.py's compose_cfg; background jobs that compile what
those searches train)."""

# No clips: filming the returned policy renders in software (seconds per Meta-World episode). The tests that look at
# clips ask for them (tests/observe films Hopper, push and a no-GL run; tests/envs renders every suite).
SMOKE = ["budget=smoke", "run.progress=false", "video.record=none"]
