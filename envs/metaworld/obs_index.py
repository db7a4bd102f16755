"""Derive the named index of Meta-World's 39-d observation from a live env (object count, zero quaternions) and the
task's source (each quaternion's order)."""

from __future__ import annotations

from typing import Any

import numpy as np

from bird.envs.base import ObsField, ObsIndex
from bird.envs.metaworld.source import quat_orders
from bird.envs.metaworld.tasks import MetaWorldTask

__all__ = ["derive_obs_index"]

_QUAT_DESC = {
    "xyzw": "orientation quaternion (x, y, z, w)",
    "wxyz": "orientation quaternion (w, x, y, z)",
}


def _objects(env: Any, task: MetaWorldTask) -> list[tuple[str, str, str, bool]]:
    """(name, description, quaternion order, quaternion always zero) of each object the observation holds."""
    n_obj = len(env._get_pos_objects()) // 3
    orders = quat_orders(task.mw_name)
    quats = np.asarray(env._get_quat_objects()).reshape(n_obj, 4)
    names = [(task.obj, task.obj_desc), (task.obj2, task.obj2_desc)]
    out = []
    for i in range(n_obj):
        name, desc = names[i] if i < len(names) and names[i][0] else (f"object{i + 1}", f"object {i + 1}")
        zero = orders[i] == "zero" or not np.any(quats[i])
        out.append((name, desc, orders[i], zero))
    return out


def _frame(env: Any, task: MetaWorldTask, start: int, prev: bool) -> list[ObsField]:
    """Fields of one frame: hand (3), gripper (1), objects (pos 3 + quat 4 each), zero padding."""
    p = "prev_" if prev else ""
    when = " at the previous step" if prev else ""
    fields = [
        ObsField(f"{p}hand_pos", start, 3, "position", f"end-effector (hand) position{when}", "m", "xyz"),
        ObsField(f"{p}gripper_open", start + 3, 1, "gripper",
                 f"gripper opening{when}: finger distance / 0.1 m, clipped to [0, 1] (1 = open)"),
    ]
    pos = start + 4
    for name, desc, order, zero in _objects(env, task):
        fields.append(ObsField(f"{p}{name}_pos", pos, 3, "position", f"{desc}{when}", "m", "xyz"))
        qdesc = "always zero in this task" if zero else f"{_QUAT_DESC[order]} of the {name}{when}"
        fields.append(ObsField(f"{p}{name}_quat", pos + 3, 4, "quaternion", qdesc, always_zero=zero))
        pos += 7
    pad = start + 4 + env._obs_obj_max_len - pos
    if pad == 7:
        fields.append(ObsField(f"{p}second_object_pos", pos, 3, "position",
                               "second object slot, unused by this task (always zero)", always_zero=True))
        fields.append(ObsField(f"{p}second_object_quat", pos + 3, 4, "quaternion",
                               "second object slot, unused by this task (always zero)", always_zero=True))
    elif pad > 0:
        fields.append(ObsField(f"{p}padding", pos, pad, "other", "unused slots (always zero)", always_zero=True))
    return fields


def derive_obs_index(env: Any, task: MetaWorldTask) -> ObsIndex:
    """Index of `env`'s observation: current frame (18), previous frame (18), goal position (3).

    :param env: the unwrapped SawyerXYZEnv, reset at least once.
    :param task: the task's names and descriptions.
    """
    current = _frame(env, task, 0, prev=False)
    frame_len = 4 + env._obs_obj_max_len
    previous = _frame(env, task, frame_len, prev=True)
    goal = ObsField("goal_pos", 2 * frame_len, 3, "goal", task.goal_desc, "m", "xyz")
    dim = int(env.observation_space.shape[0])
    index = ObsIndex((*current, *previous, goal), dim)
    return index
