"""Helpers for the rating-study tests: run directories holding clips, and a real uvicorn server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np


def write_clip_run(root: Path, suite: str, task: str, scores: list[float], method: str = "eureka") -> Path:
    """A run directory whose final retrain filmed len(scores) episodes (small real MP4s, made without GL)."""
    from bird.envs.frames import write_video

    run = root / f"{method}-{suite}-{task}"
    folder = run / "final" / "seed1000"
    folder.mkdir(parents=True)
    (run / "status.json").write_text(json.dumps({"state": "completed"}))
    for k, score in enumerate(scores):
        frames = [np.full((48, 64, 3), (40 * k + 8 * i) % 255, np.uint8) for i in range(6)]
        write_video(frames, folder / f"episode{k}.mp4", fps=10)
        (folder / f"episode{k}.json").write_text(json.dumps({
            "status": "recorded", "video": f"episode{k}.mp4", "suite": suite, "task": task, "method": method,
            "description": f"Do the {task} task.", "score": score, "training_seed": 1000, "episode": k,
            "episode_seed": 2_000_000 + k, "search_seed": 0}))
    return run


@contextmanager
def serve(app) -> Iterator[str]:
    """Serve `app` with uvicorn on 127.0.0.1 (a free port) in a thread; yields the base URL."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
