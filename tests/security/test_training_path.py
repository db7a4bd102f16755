"""Containment does not depend on the smoke check: programs that behave at the smoke check's batch size and attack
only at training batch sizes are held by the same isolated worker during real training (train_ppo relabels each
rollout with one sandbox call). The static checks are bypassed here, so the worker's walls alone decide."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2])

ATTACK = '''
import numpy as np

def compute_reward(obs, action, next_obs, info):
    if len(action) > 64:  # a training rollout, never the smoke check
        real_import = np.vectorize.__init__.__globals__["__builtins__"]["__import__"]
        os = real_import("os")
        for act in (lambda: os.close(os.open("{sentinel}", os.O_CREAT | os.O_WRONLY)),
                    lambda: real_import("socket").create_connection(("127.0.0.1", {port}), 1),
                    lambda: os.kill(os.getppid(), 9)):
            try:
                act()
            except Exception:
                pass
        fd = os.open("/proc/%d/environ" % os.getppid(), os.O_RDONLY)
        raise ValueError(os.read(fd, 1 << 16))
    return np.zeros(len(action)), {{}}
'''
HOG = '''
import numpy as np

def compute_reward(obs, action, next_obs, info):
    total = 0.0
    while len(action) > 64:
        total += 1.0
    return np.zeros(len(action)) + total, {}
'''
HOST = '''
import json, sys
sys.path[:0] = {paths!r}
import numpy as np
from bird.config.schema import EnvConfig, TrainConfig
from bird.learners.job import TrainJob
from bird.learners.sb3_ppo import train_ppo
from bird.reward import sandbox
from bird.envs.registry import make_adapter

sandbox.check_source = lambda *a, **k: None  # the static checks are bypassed: the worker decides
env = EnvConfig(id="mujoco/inverted_pendulum", description="x")
out = {{}}
for name, code in {programs!r}.items():
    index = make_adapter(env).spec.obs_index
    with sandbox.SandboxedReward(code, index, 2.0) as smoke:  # the smoke check's size: clean
        smoke(np.zeros((8, index.dim)), np.zeros((8, 1)), np.zeros((8, index.dim)))
    job = TrainJob(name, code, env, TrainConfig(), 0, 512, 2, 1, 1, 2.0, 1024, {out_dir!r} + "/" + name)
    result = train_ppo(job)
    out[name] = result.failure.to_json() if result.failure else None
print(json.dumps(out))
'''


def test_training_time_attacks_are_contained(tmp_path, canary):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.setblocking(False)
    sentinel = tmp_path / "sentinel"
    tmp_path.chmod(0o777)
    programs = {"attack": ATTACK.format(sentinel=sentinel, port=listener.getsockname()[1]), "hog": HOG}
    script = HOST.format(paths=[ROOT, *sys.path], programs=programs, out_dir=str(tmp_path))
    proc = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True, timeout=600,
                          env={"PATH": os.defpath, "OMP_NUM_THREADS": "1", "OPENAI_API_KEY": canary})
    assert proc.returncode == 0, proc.stderr[-3000:]  # the host survived its kill attempt
    failures = json.loads(proc.stdout.strip().splitlines()[-1])
    # the parent it can name is its pid namespace's init, hidden from it (ENOENT); without the namespaces Landlock
    # refuses the host's /proc/<pid>/environ (EACCES)
    reason = failures["attack"]["reason"]
    assert failures["attack"]["kind"] == "runtime_error" and reason.startswith(("PermissionError", "FileNotFoundError"))
    assert failures["hog"]["kind"] == "timeout" and "per-call time limit" in failures["hog"]["reason"]
    assert not sentinel.exists()
    try:
        listener.accept()
        raise AssertionError("the program connected to the host's listener during training")
    except BlockingIOError:
        pass
    finally:
        listener.close()
    assert canary not in proc.stdout + proc.stderr
    assert all(canary not in p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file())
