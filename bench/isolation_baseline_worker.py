"""bench_isolation.py's baseline: the reward worker without the layers issue 20 added (pid namespace, task limit,
minimal mount tree), to time what they cost. Not used by bird itself."""

from bird.reward import isolation, worker

isolation.LAYERS = tuple(n for n in isolation.LAYERS if n not in ("pid_namespace", "task_limit", "mount_namespace"))
isolation.refuse_unreadable = lambda paths: None  # without the tree, a root host's worker may not read a 0700 path
main = worker.main
