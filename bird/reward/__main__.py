"""`python -m bird.reward check FILE env=mujoco/hopper`: the verify checks on a file; JSON verdict, exit 0/1.
A program that imports jax is checked as reward.language=jax (traced and exported in the sandbox) unless the
overrides say otherwise.
`python -m bird.reward check --explain`: every isolation layer of the reward sandbox and of the JAX trainer, and
whether it is active here."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

__all__ = ["main", "explain"]


def _host_layers() -> list[dict[str, Any]]:
    import ctypes

    from bird.reward.isolation import harden_host

    harden_host()
    dumpable = ctypes.CDLL(None).prctl(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE
    return [
        {"name": "host_non_dumpable", "active": dumpable == 0,
         "detail": "PR_SET_DUMPABLE=0 in every process that starts workers (the parent, each training process)"},
        {"name": "process_group_kill", "active": True,
         "detail": "worker in its own session; on close, on every time-out and on a bad frame its pid namespace's "
                   "init is killed first (the namespace dies with it), then the whole group (killpg SIGKILL)"},
        {"name": "result_channel", "active": True,
         "detail": "replies on a dedicated pipe (stdout/stderr are /dev/null); host checks sequence, sizes, float64, "
                   "shape, finiteness, component names; texts bounded and stripped of control characters"},
        {"name": "python_wall", "active": True,
         "detail": "static checks (bird/reward/static.py) + restricted builtins, read-only module proxies, import hook"},
    ]


def _trainer_layers() -> list[dict[str, Any]]:
    from bird.jax_cache import cache_dir
    from bird.reward.replies import RewardProgramError
    from bird.reward.trainer_wall import explain_trainer

    try:
        return explain_trainer(cache=cache_dir())
    except RewardProgramError as exc:
        return [{"name": "trainer", "active": False, "detail": f"did not start: {exc.failure.reason}"}]


def _trainer_host_layers() -> list[dict[str, Any]]:
    return [
        {"name": "watchdog", "active": True,
         "detail": "every phase has a wall-clock deadline (start-up, compile, load, each update with its evaluation: "
                   "train.jax.update_timeout_s, outputs); when one passes the trainer's group is killed"},
        {"name": "artefact_inspection", "active": True,
         "detail": "each artefact deserialised and checked in a throwaway isolated process first: exact signature, "
                   "no custom call, no symbolic shape; the training-size dry run in the reward worker before that"},
        {"name": "culprit_search", "active": True,
         "detail": "a failed shared step retrains halves of the group in fresh trainers until the culprit is alone"},
        {"name": "result_channel", "active": True,
         "detail": "curves, statistics, policies and rollouts framed on a pipe and validated before anything is "
                   "written; the trainer writes no file"},
    ]


def explain(language: str = "numpy") -> tuple[str, bool]:
    """The layer report of a freshly started worker and trainer, plus the host-side protections; (text, all
    active)."""
    from bird.reward.languages import get_language
    from bird.reward.sandbox import WorkerProcess

    worker = WorkerProcess(get_language(language), memory_mb=2048, call_timeout_s=5.0)
    try:
        layers = list(worker.layers)
    finally:
        worker.close()
    host = _host_layers()
    trainer = _trainer_layers()
    lines = [f"reward sandbox on {platform.node()} (kernel {platform.release()}, host uid {os.geteuid()}, "
             f"language {language})"]
    for title, group in (("worker, applied before the program is imported:", layers), ("host side:", host),
                         ("JAX trainer (train.learner=jax_ppo), applied before any reward program reaches it:",
                          trainer), ("trainer host side:", _trainer_host_layers())):
        lines.append(title)
        lines += [f"  [{'active' if d['active'] else 'INACTIVE'}] {d['name']:<20} {d['detail']}" for d in group]
    inactive = [d["name"] for d in layers + host if not d["active"]]
    inactive += [f"trainer {d['name']}" for d in trainer if not d["active"]]
    lines.append("all layers active" if not inactive else f"INACTIVE layers: {', '.join(inactive)}")
    return "\n".join(lines), not inactive


def _check(path: Path, overrides: list[str]) -> int:
    from bird.config.load import ConfigError, compose
    from bird.envs.registry import make_adapter
    from bird.reward.checks import random_transitions, verify_code

    try:
        code = path.read_text()
    except OSError as exc:
        print(json.dumps({"valid": False, "file": str(path), "failure": {"kind": "io_error", "reason": str(exc)}}))
        return 1
    overrides = list(overrides)
    if not any(o.startswith("reward.language=") for o in overrides) and _imports_jax(code):
        overrides.append("reward.language=jax")  # a jax.numpy program is checked (and traced) as one
    try:
        cfg = compose(overrides)
    except (ConfigError, Exception) as exc:  # noqa: BLE001 - Hydra raises several types for a bad override
        print(f"bird.reward: {exc}", file=sys.stderr)
        return 2
    adapter = make_adapter(cfg.env)
    batch = random_transitions(adapter, cfg.verify.smoke_steps, cfg.seed)
    result = verify_code(code, cfg, batch, adapter.spec)
    smoke = result.checks.get("smoke", {})
    verdict = {
        "valid": result.ok, "file": str(path), "env": cfg.env.id,
        "failure": result.failure.to_json() if result.failure else None,
        "components": list(result.components), "checks": result.checks, "language": cfg.reward.language,
    }
    if "smoke" in result.checks:  # the program reached a worker: name every layer it ran without
        verdict["isolation"] = {"inactive_layers": smoke.get("inactive_layers", {})}
    print(json.dumps(verdict, indent=1))
    return 0 if result.ok else 1


def _imports_jax(code: str) -> bool:
    import ast

    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    return any(name.split(".")[0] == "jax" for name in names)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bird.reward", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="run the static and smoke checks on a reward program")
    check.add_argument("file", type=Path, nargs="?")
    check.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. env=mujoco/hopper verify.smoke_steps=128")
    check.add_argument("--explain", action="store_true", help="list the sandbox's isolation layers on this machine")
    args = parser.parse_args(argv)
    status = 0
    if args.explain:
        text, ok = explain()
        print(text, file=sys.stderr if args.file else sys.stdout)
        status = 0 if ok else 1
    if args.file is not None:
        status = max(status, _check(args.file, args.overrides))
    elif not args.explain:
        parser.error("check needs FILE (or --explain)")
    return status


if __name__ == "__main__":
    sys.exit(main())
