"""What a local training worker imports before its first job, imported once by the fork server the workers fork from
(bird/executors/local.py, train.start_method=forkserver): torch, Stable-Baselines3 and the learners, and torch._dynamo,
which the first optimizer of every process imports (about 1.5 s of CPU)."""

import os

from bird.lifetime import die_with_parent

# the pool owner that started this server (bird/executors/local.py sets it for the start); the workers it forks
# watch this server (SERVER_PID) and end with it
die_with_parent(int(os.environ.pop("BIRD_POOL_OWNER", os.getppid())))
SERVER_PID = os.getpid()

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before torch reads it; a spawned worker sets the same

import torch._dynamo  # noqa: E402,F401

import bird.executors.local  # noqa: E402,F401
import bird.learners.sb3_ppo  # noqa: E402,F401
from bird.registry import load_builtin_components  # noqa: E402

load_builtin_components()

from bird.reward.isolation import harden_host  # noqa: E402

harden_host()  # the server holds the pool owner's environment; the workers forked from it start non-dumpable too
