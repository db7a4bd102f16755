"""A user's launcher script without an `if __name__ == "__main__":` guard: the training workers never run it again
(they never import the parent's `__main__`), whether they fork from the fork server or are spawned."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Top-level code only: each run of the file appends a line to ran.txt, then uses a pool of workers.
POOL_SCRIPT = """
import os, sys
from pathlib import Path
out = Path(sys.argv[1])
with open(out / "ran.txt", "a") as f:
    f.write(f"{os.getpid()}\\n")
from bird.executors.local import TrainPool
pool = TrainPool(2, start_method=sys.argv[2])
pids = {pool._procs.executor.submit(os.getpid).result(timeout=120) for _ in range(4)}
pool.close()
(out / "pids.txt").write_text(" ".join(map(str, sorted(pids))))
"""

# A whole search launched by a script, as a user without `python -m bird` would write it.
SEARCH_SCRIPT = """
import os, sys
from pathlib import Path
out = Path(sys.argv[1])
with open(out / "ran.txt", "a") as f:
    f.write(f"{os.getpid()}\\n")
from bird.config.load import compose
from bird.loop import search
cfg = compose(["budget=smoke", "run.progress=false", "video.record=none", "env=mujoco/inverted_pendulum",
               "budget.env_steps=512", "budget.max_iterations=1", "final.retrain=false", "env.horizon=100",
               "train.start_method=" + sys.argv[2]])
search(cfg, out / "run")
"""


def _launch(tmp_path: Path, script: str, start_method: str) -> subprocess.CompletedProcess:
    (tmp_path / "launch.py").write_text(script)
    return subprocess.run([sys.executable, str(tmp_path / "launch.py"), str(tmp_path), start_method],
                          capture_output=True, text=True, cwd=tmp_path, timeout=600)


@pytest.mark.parametrize("start_method", ["forkserver", "spawn"])
def test_workers_never_rerun_an_unguarded_launcher_script(tmp_path, start_method):
    proc = _launch(tmp_path, POOL_SCRIPT, start_method)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len((tmp_path / "ran.txt").read_text().split()) == 1  # the script ran once: in its own process
    assert (tmp_path / "pids.txt").read_text().split()  # and the workers answered


@pytest.mark.slow
def test_a_search_from_an_unguarded_launcher_script_trains_every_candidate(tmp_path):
    proc = _launch(tmp_path, SEARCH_SCRIPT, "forkserver")
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["status"] == "completed" and result["failures"] == {}, result["failures"]
    assert len((tmp_path / "ran.txt").read_text().split()) == 1
