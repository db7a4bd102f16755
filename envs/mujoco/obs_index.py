"""Derive a named observation index from the MuJoCo model (joint names, types and axes), not from hand-typed lists."""

from __future__ import annotations

from dataclasses import replace

import mujoco
import numpy as np

from bird.envs.base import ObsField, ObsIndex

__all__ = ["derive_obs_index"]

_AXES = ("x", "y", "z")


def _axis_name(axis: np.ndarray) -> str:
    i = int(np.argmax(np.abs(axis)))
    return _AXES[i] if np.isclose(abs(axis[i]), 1.0) else ""


def _free_parts(name: str, qpos: int, dof: int) -> list[dict]:
    """A free joint as four coordinates: slide x, y, z, then the orientation (quaternion in qpos, 3 dofs in qvel)."""
    slides = [{"name": f"{name}_{a}", "slide": True, "axis": a, "qpos": qpos + i, "dof": dof + i,
               "label": f"free joint {name}"} for i, a in enumerate(_AXES)]
    return [*slides, {"name": name, "quat": True, "slide": False, "axis": "xyz", "qpos": qpos + 3, "dof": dof + 3}]


def _joints(model: mujoco.MjModel) -> list[dict]:
    """Joint coordinates in qpos order with name, kind, axis: slide and hinge joints, and free joints split by
    _free_parts (the MuJoCo v5 tasks use slide/hinge only; Brax's ant has a free root)."""
    out = []
    for j in range(model.njnt):
        jtype = int(model.jnt_type[j])
        qpos, dof = int(model.jnt_qposadr[j]), int(model.jnt_dofadr[j])
        if jtype == mujoco.mjtJoint.mjJNT_FREE:
            out.extend(_free_parts(model.joint(j).name, qpos, dof))
            continue
        if jtype not in (mujoco.mjtJoint.mjJNT_SLIDE, mujoco.mjtJoint.mjJNT_HINGE):
            raise ValueError(f"joint {model.joint(j).name!r}: only slide, hinge and free joints are supported")
        out.append({"name": model.joint(j).name, "slide": jtype == mujoco.mjtJoint.mjJNT_SLIDE,
                    "axis": _axis_name(model.jnt_axis[j]), "qpos": qpos, "dof": dof})
    return sorted(out, key=lambda d: d["qpos"])


def _pos_field(j: dict, start: int) -> ObsField:
    if j.get("quat"):
        return ObsField(f"{j['name']}_quat", start, 4, "quaternion",
                        f"orientation of free joint {j['name']} as a unit quaternion (w, x, y, z)")
    if j["slide"]:
        label = j.get("label", f"slide joint {j['name']}")
        return ObsField(f"{j['name']}_pos", start, 1, "position",
                        f"position of {label} along {j['axis'] or 'its axis'}", "m", j["axis"])
    return ObsField(f"{j['name']}_angle", start, 1, "angle",
                    f"angle of hinge joint {j['name']} about {j['axis'] or 'its axis'}", "rad", j["axis"])


def _vel_field(j: dict, start: int, clipped: bool) -> ObsField:
    note = " (clipped to [-10, 10])" if clipped else ""
    if j.get("quat"):
        return ObsField(f"{j['name']}_angvel", start, 3, "angular_velocity",
                        f"angular velocity of free joint {j['name']}{note}", "rad/s", "xyz")
    if j["slide"]:
        label = j.get("label", f"slide joint {j['name']}")
        return ObsField(f"{j['name']}_vel", start, 1, "velocity",
                        f"velocity of {label} along {j['axis'] or 'its axis'}{note}", "m/s", j["axis"])
    return ObsField(f"{j['name']}_angvel", start, 1, "angular_velocity",
                    f"angular velocity of hinge joint {j['name']}{note}", "rad/s", j["axis"])


def _stack(fields: list[ObsField], start: int) -> list[ObsField]:
    """Lay fields out one after another from `start` (a quaternion takes 4 slots, its angular velocity 3)."""
    out = []
    for f in fields:
        out.append(replace(f, start=start))
        start += f.size
    return out


def derive_obs_index(model: mujoco.MjModel, layout: tuple[tuple, ...]) -> ObsIndex:
    """Build the index for a layout of segments (see envs/mujoco/tasks.py) over `model`'s joints."""
    joints = _joints(model)
    fields: list[ObsField] = []
    pos = 0
    for seg in layout:
        op = seg[0]
        if op in ("qpos", "qpos_from", "qpos_height"):
            new = _stack([_pos_field(j, 0) for j in joints[seg[1]:]], pos)
            if op == "qpos_height":  # Brax writes the root body's world height into this slot
                new[0] = replace(new[0], description=f"height of the root body above the ground, world z ({new[0].name})")
        elif op in ("qvel", "qvel_clip"):
            new = _stack([_vel_field(j, 0, op == "qvel_clip") for j in joints[seg[1]:]], pos)
        elif op == "qvel_first":
            new = _stack([_vel_field(j, 0, False) for j in joints[: seg[1]]], pos)
        elif op in ("cos", "sin"):
            kind = "angle_cos" if op == "cos" else "angle_sin"
            new = [
                ObsField(f"{op}_{j['name']}", pos + i, 1, kind, f"{op} of the angle of hinge joint {j['name']}")
                for i, j in enumerate(joints[: seg[1]])
            ]
        elif op == "field":  # a quantity no joint names: ("field", name, size, kind, description, unit, axis)
            new = [ObsField(seg[1], pos, seg[2], seg[3], seg[4], seg[5], seg[6])]
        elif op == "body_delta":
            _, a, b, dims = seg
            new = [ObsField(f"{a}_minus_{b}", pos, dims, "position_delta",
                            f"{a} position minus {b} position in the {'xyz'[:dims]} plane", "m", "xyz"[:dims])]
        else:
            raise ValueError(f"unknown layout segment {seg!r}")
        fields.extend(new)
        pos += sum(f.size for f in new)
    return ObsIndex(tuple(fields), pos)
