"""The task checker's report per shipped task (tests/envs/test_task_files.py), at a short horizon and one episode. A
Brax task's is made by the background job "brax_envs" (tests/jaxpath/warm_programs.py), right after it traced that
task's reset and step for the leak audit: tracing them again in a test would cost about 20 s per task."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

CHECK_HORIZON = 50  # = prompt_rehearsal.REHEARSAL_HORIZON: the brax programs the leak audit's job traces


def check_report(env_id: str) -> dict[str, Any]:
    """The checker's verdict on `env_id` at CHECK_HORIZON steps and one episode: {ok, problems, notes}."""
    from bird.envs.check import check_task
    from bird.envs.demos import env_config

    env = env_config(env_id)
    report = check_task(replace(env, horizon=min(env.horizon, CHECK_HORIZON)), episodes=1)
    return {"ok": report.ok, "problems": [str(p) for p in report.problems], "notes": report.notes}


def report_path(env_id: str) -> Path:
    import session_share

    return session_share.folder() / "task_checks" / f"{env_id.replace('/', '__')}.json"


def save_check_report(env_id: str) -> None:
    """check_report to its session file (written whole, then renamed into place)."""
    path = report_path(env_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(check_report(env_id)))
    os.replace(tmp, path)
