"""Offscreen RGB frames of rollouts (for VLM judges, videos and raters) and a GIF/MP4 writer. Nothing else needs GL.

MuJoCo picks its GL backend from MUJOCO_GL when the first renderer is made: EGL (GPU, or Mesa's software
EGL) or OSMesa (CPU). `gl_backend()` chooses one that can load, or raises RenderingUnavailable saying what to
install; MUJOCO_GL=disable (MuJoCo's own off switch) turns rendering off.
"""

from __future__ import annotations

import ctypes.util
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["RenderingUnavailable", "gl_backend", "record_episode", "render_episode", "write_video", "caption_frames"]

_LIBS = {"egl": "EGL", "osmesa": "OSMesa"}
_DISABLED = ("disable", "disabled", "off", "false", "0")  # the values MuJoCo itself reads as "no rendering"


class RenderingUnavailable(RuntimeError):
    """No offscreen GL library can be loaded (or rendering is switched off)."""


def gl_backend() -> str:
    """Set MUJOCO_GL (and PYOPENGL_PLATFORM) if unset and return it: "egl" if libEGL loads, else "osmesa"."""
    chosen = os.environ.get("MUJOCO_GL")
    if chosen is not None and chosen.strip().lower() in _DISABLED:
        raise RenderingUnavailable(f"rendering is switched off (MUJOCO_GL={chosen})")
    if chosen is None:
        chosen = next((b for b, lib in _LIBS.items() if ctypes.util.find_library(lib)), None)
        if chosen is None:
            raise RenderingUnavailable(
                "offscreen rendering needs libEGL (GPU driver or Mesa: apt-get install libegl1 libegl-mesa0 "
                "libgl1-mesa-dri) or libOSMesa (apt-get install libosmesa6); neither was found"
            )
        os.environ["MUJOCO_GL"] = chosen
    elif chosen in _LIBS and not ctypes.util.find_library(_LIBS[chosen]):
        raise RenderingUnavailable(f"MUJOCO_GL={chosen} but lib{_LIBS[chosen]} is not installed")
    if chosen in _LIBS:
        os.environ.setdefault("PYOPENGL_PLATFORM", chosen)
    return chosen


def _no_shadows(env: Any) -> None:
    """Switch off shadows and reflections (scene flags): 2-4x cheaper with software GL, and clearer to watch."""
    import mujoco

    renderer = getattr(env.unwrapped, "mujoco_renderer", None)
    viewer = renderer._get_viewer("rgb_array") if renderer is not None else None
    scene = getattr(viewer, "scn", None)
    if scene is not None:
        scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = 0
        scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = 0


def record_episode(
    adapter: Any,
    seed: int = 0,
    policy: Callable[[np.ndarray], np.ndarray] | None = None,
    *,
    max_steps: int | None = None,
    every: int = 1,
    shadows: bool = True,
    **render_kwargs: Any,
) -> tuple[list[np.ndarray], dict[str, Any]]:
    """Frames (H, W, 3) uint8 of one episode (the reset frame, then every `every`-th step) and its outcome.

    The env is the one the learner and evaluator use (`adapter.make_env()`), reset with `seed`, so an episode
    reset with an evaluation seed replays that evaluation episode.

    :param adapter: a TaskAdapter; render_kwargs (camera_name, width, height) go to its make_env.
    :param policy: obs (D,) -> action; None = uniform random (action space seeded with `seed`).
    :param max_steps: stop early (default: the task's horizon).
    :returns: (frames, outcome): outcome = {"steps", "score", "quantity"} (score/quantity None if cut short).
    """
    gl_backend()
    env = adapter.make_env(render_mode="rgb_array", **render_kwargs)
    outcome: dict[str, Any] = {"steps": 0, "score": None, "quantity": None}
    try:
        obs, _ = env.reset(seed=seed)
        env.action_space.seed(seed)
        space = env.observation_space
        frames = [env.render()]
        if not shadows:
            _no_shadows(env)
            frames = [env.render()]
        for t in range(1, (max_steps or adapter.spec.horizon) + 1):
            # the policy sees the observation as a vectorised env stores it (the space's dtype)
            action = env.action_space.sample() if policy is None else policy(np.asarray(obs, dtype=space.dtype))
            obs, _, terminated, truncated, info = env.step(action)
            outcome["steps"] = t
            done = terminated or truncated
            if t % every == 0 or done:
                frames.append(env.render())
            if "bird_episode" in info:
                outcome["score"], outcome["quantity"] = info["bird_episode"]["score"], info["bird_episode"]["quantity"]
            if done:
                break
    except Exception as exc:  # GL errors surface here, at the first render
        if "GL" in type(exc).__name__ or "gl" in str(exc).lower():
            raise RenderingUnavailable(f"offscreen rendering failed with MUJOCO_GL={os.environ.get('MUJOCO_GL')}: {exc}") from exc
        raise
    finally:
        env.close()
    return [np.asarray(f, dtype=np.uint8) for f in frames], outcome


def render_episode(adapter: Any, seed: int = 0, policy: Callable[[np.ndarray], np.ndarray] | None = None,
                   **kwargs: Any) -> list[np.ndarray]:
    """The frames of `record_episode` alone (same arguments)."""
    return record_episode(adapter, seed, policy, **kwargs)[0]


def caption_frames(frames: list[np.ndarray], text: str) -> list[np.ndarray]:
    """Burn `text` into the top-left corner of every frame (white on a dark band)."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=max(10, frames[0].shape[0] // 24))
    out = []
    for frame in frames:
        img = Image.fromarray(frame)
        draw = ImageDraw.Draw(img)
        box = draw.textbbox((6, 4), text, font=font)
        draw.rectangle((0, 0, img.width, box[3] + 4), fill=(20, 20, 20))
        draw.text((6, 4), text, fill=(255, 255, 255), font=font)
        out.append(np.asarray(img))
    return out


def write_video(frames: list[np.ndarray], path: str | Path, fps: int = 20) -> Path:
    """Write frames as a GIF (always available) or an MP4 (H.264, needs imageio-ffmpeg); the suffix decides."""
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
        # yuv420p + faststart: plays in every browser and starts before the whole file has arrived
        iio.imwrite(path, np.stack(frames), extension=".mp4", fps=fps, codec="libx264",
                    pixelformat="yuv420p", macro_block_size=16, ffmpeg_params=["-movflags", "+faststart"])
    else:
        raise ValueError(f"unsupported video suffix {path.suffix!r}; use .gif or .mp4")
    return path
