"""A task a method can run on, for the tools that compose methods without naming a task (bird.diff, bird.fidelity,
bird.ablate): the default task, else the first shipped task, suite by suite, that every method composes on."""

from __future__ import annotations

__all__ = ["task_for"]


def task_for(methods: list[str], overrides: list[str]) -> list[str]:
    """`overrides` with `env=<task>` added where the default task refuses one of `methods` (e.g. RE-GoT's Meta-World
    abstraction on the default MuJoCo task); unchanged when they name a task or the default serves every method."""
    from bird.config.load import CONF_DIR, ConfigError, compose

    if any(o.startswith("env=") for o in overrides):
        return overrides

    def composes(extra: list[str]) -> bool:
        try:
            for method in methods:
                compose([f"method={method}", *overrides, *extra])
        except ConfigError:
            return False
        return True

    if composes([]):
        return overrides
    for suite in sorted(p for p in (CONF_DIR / "env").iterdir() if p.is_dir()):
        tasks = sorted(p.stem for p in suite.glob("*.yaml") if "-" not in p.stem)
        if tasks and composes([f"env={suite.name}/{tasks[0]}"]):
            return [*overrides, f"env={suite.name}/{tasks[0]}"]
    return overrides
