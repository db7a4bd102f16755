"""Offscreen RGB frames of rollouts (for VLM judges and humans) and a GIF/MP4 writer. Nothing else needs GL.

MuJoCo picks its GL backend from MUJOCO_GL when the first renderer is made: EGL (GPU, or Mesa's software
EGL) or OSMesa (CPU). `gl_backend()` chooses one that can load, or raises RenderingUnavailable saying what to
install.
"""

from __future__ import annotations

import ctypes.util
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["RenderingUnavailable", "gl_backend", "render_episode", "write_video"]

_LIBS = {"egl": "EGL", "osmesa": "OSMesa"}


class RenderingUnavailable(RuntimeError):
    """No offscreen GL library can be loaded."""


def gl_backend() -> str:
    """Set MUJOCO_GL (and PYOPENGL_PLATFORM) if unset and return it: "egl" if libEGL loads, else "osmesa"."""
    chosen = os.environ.get("MUJOCO_GL")
    if chosen is None:
        chosen = next((b for b, lib in _LIBS.items() if ctypes.util.find_library(lib)), None)
        if chosen is None:
            raise RenderingUnavailable(
                "offscreen rendering needs libEGL (GPU driver or Mesa: apt-get install libegl1) or "
                "libOSMesa (apt-get install libosmesa6); neither was found"
            )
        os.environ["MUJOCO_GL"] = chosen
    if chosen in _LIBS:
        os.environ.setdefault("PYOPENGL_PLATFORM", chosen)
    return chosen


def render_episode(
    adapter: Any,
    seed: int = 0,
    policy: Callable[[np.ndarray], np.ndarray] | None = None,
    *,
    max_steps: int | None = None,
    every: int = 1,
    **render_kwargs: Any,
) -> list[np.ndarray]:
    """Frames (H, W, 3) uint8 of one episode: the reset frame, then every `every`-th step.

    :param adapter: a TaskAdapter; render_kwargs (camera_name, width, height) go to its make_env.
    :param policy: obs -> action; None = uniform random (action space seeded with `seed`).
    :param max_steps: stop early (default: the task's horizon).
    """
    gl_backend()
    env = adapter.make_env(seed=seed, render_mode="rgb_array", **render_kwargs)
    try:
        obs, _ = env.reset(seed=seed)
        env.action_space.seed(seed)
        frames = [env.render()]
        for t in range(1, (max_steps or adapter.spec.horizon) + 1):
            action = env.action_space.sample() if policy is None else policy(obs)
            obs, _, terminated, truncated, _ = env.step(action)
            if t % every == 0:
                frames.append(env.render())
            if terminated or truncated:
                break
    except Exception as exc:  # GL errors surface here, at the first render
        if "GL" in type(exc).__name__ or "gl" in str(exc).lower():
            raise RenderingUnavailable(f"offscreen rendering failed with MUJOCO_GL={os.environ.get('MUJOCO_GL')}: {exc}") from exc
        raise
    finally:
        env.close()
    return [np.asarray(f, dtype=np.uint8) for f in frames]


def write_video(frames: list[np.ndarray], path: str | Path, fps: int = 20) -> Path:
    """Write frames as a GIF (always available) or an MP4 (needs imageio-ffmpeg); the suffix decides."""
    import imageio.v3 as iio

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".gif":
        iio.imwrite(path, np.stack(frames), duration=1000 / fps, loop=0)
    elif path.suffix == ".mp4":
        try:
            import imageio_ffmpeg  # noqa: F401
        except ImportError as exc:
            raise ValueError("MP4 needs the imageio-ffmpeg package; write a .gif instead") from exc
        iio.imwrite(path, np.stack(frames), fps=fps, codec="libx264")
    else:
        raise ValueError(f"unsupported video suffix {path.suffix!r}; use .gif or .mp4")
    return path
