"""Derive a named observation index from the MuJoCo model (joint names, types and axes), not from hand-typed lists."""

from __future__ import annotations

import mujoco
import numpy as np

from bird.envs.base import ObsField, ObsIndex

__all__ = ["derive_obs_index"]

_AXES = ("x", "y", "z")


def _axis_name(axis: np.ndarray) -> str:
    i = int(np.argmax(np.abs(axis)))
    return _AXES[i] if np.isclose(abs(axis[i]), 1.0) else ""


def _joints(model: mujoco.MjModel) -> list[dict]:
    """1-dof joints in qpos order with name, kind, axis (every Gym MuJoCo v5 task uses only slide/hinge joints)."""
    out = []
    for j in range(model.njnt):
        jtype = int(model.jnt_type[j])
        if jtype not in (mujoco.mjtJoint.mjJNT_SLIDE, mujoco.mjtJoint.mjJNT_HINGE):
            raise ValueError(f"joint {model.joint(j).name!r}: only slide/hinge joints are supported")
        out.append(
            {
                "name": model.joint(j).name,
                "slide": jtype == mujoco.mjtJoint.mjJNT_SLIDE,
                "axis": _axis_name(model.jnt_axis[j]),
                "qpos": int(model.jnt_qposadr[j]),
                "dof": int(model.jnt_dofadr[j]),
            }
        )
    return sorted(out, key=lambda d: d["qpos"])


def _pos_field(j: dict, start: int) -> ObsField:
    if j["slide"]:
        return ObsField(f"{j['name']}_pos", start, 1, "position",
                        f"position of slide joint {j['name']} along {j['axis'] or 'its axis'}", "m", j["axis"])
    return ObsField(f"{j['name']}_angle", start, 1, "angle",
                    f"angle of hinge joint {j['name']} about {j['axis'] or 'its axis'}", "rad", j["axis"])


def _vel_field(j: dict, start: int, clipped: bool) -> ObsField:
    note = " (clipped to [-10, 10])" if clipped else ""
    if j["slide"]:
        return ObsField(f"{j['name']}_vel", start, 1, "velocity",
                        f"velocity of slide joint {j['name']} along {j['axis'] or 'its axis'}{note}", "m/s", j["axis"])
    return ObsField(f"{j['name']}_angvel", start, 1, "angular_velocity",
                    f"angular velocity of hinge joint {j['name']}{note}", "rad/s", j["axis"])


def derive_obs_index(model: mujoco.MjModel, layout: tuple[tuple, ...]) -> ObsIndex:
    """Build the index for a layout of segments (see envs/mujoco/tasks.py) over `model`'s joints."""
    joints = _joints(model)
    fields: list[ObsField] = []
    pos = 0
    for seg in layout:
        op = seg[0]
        if op in ("qpos", "qpos_from"):
            chosen = joints[seg[1]:]
            new = [_pos_field(j, pos + i) for i, j in enumerate(chosen)]
        elif op in ("qvel", "qvel_clip"):
            chosen = joints[seg[1]:]
            new = [_vel_field(j, pos + i, op == "qvel_clip") for i, j in enumerate(chosen)]
        elif op == "qvel_first":
            new = [_vel_field(j, pos + i, False) for i, j in enumerate(joints[: seg[1]])]
        elif op in ("cos", "sin"):
            kind = "angle_cos" if op == "cos" else "angle_sin"
            new = [
                ObsField(f"{op}_{j['name']}", pos + i, 1, kind, f"{op} of the angle of hinge joint {j['name']}")
                for i, j in enumerate(joints[: seg[1]])
            ]
        elif op == "body_delta":
            _, a, b, dims = seg
            new = [ObsField(f"{a}_minus_{b}", pos, dims, "position_delta",
                            f"{a} position minus {b} position in the {'xyz'[:dims]} plane", "m", "xyz"[:dims])]
        else:
            raise ValueError(f"unknown layout segment {seg!r}")
        fields.extend(new)
        pos += sum(f.size for f in new)
    return ObsIndex(tuple(fields), pos)
