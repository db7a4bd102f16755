"""GRACE's three new BabyAI levels (arXiv 2510.02180v2, App. A.3), written from the paper's descriptions as minigrid
levels of bird's own (the paper's code is unpublished): PlaceBetween, OpenMatchingDoor, SortColors.

Each is a RoomGridLevel whose instruction verifies success at every step, so the env terminates on success with
BabyAI's reward 1 - 0.9 * step_count / max_steps, like the public levels. Registered as gymnasium ids
`bird/BabyAI-<Level>-v0` when this module is imported.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from minigrid.core.constants import COLOR_NAMES
from minigrid.core.world_object import Ball, Key
from minigrid.envs.babyai.core.roomgrid_level import RejectSampling, RoomGridLevel
from minigrid.envs.babyai.core.verifier import ActionInstr, ObjDesc, OpenInstr

__all__ = ["PlaceBetween", "OpenMatchingDoor", "SortColors", "PlaceBetweenInstr", "SortColorsInstr", "GYM_IDS"]

DEFAULT_MAX_STEPS = 100  # GRACE App. A.4 Table 4: episode length 100


def _carried(env: Any, obj: Any) -> bool:
    return env.carrying is obj


class PlaceBetweenInstr(ActionInstr):
    """Put `target` on a cell strictly between `anchors` (two objects on one row or one column)."""

    def __init__(self, target: Any, anchors: tuple[Any, Any]) -> None:
        super().__init__()
        self.target, self.anchors = target, anchors

    def surface(self, env: Any) -> str:
        a, b = self.anchors
        return f"put the {self.target.color} {self.target.type} between the {a.color} {a.type} and the {b.color} {b.type}"

    def update_objs_poss(self) -> None:
        """Positions are read from the objects themselves (cur_pos), so there is nothing to refresh."""

    def between_cells(self) -> list[tuple[int, int]]:
        """The cells strictly between the anchors when they share a row or a column, else []."""
        (ax, ay), (bx, by) = (tuple(int(v) for v in a.cur_pos) for a in self.anchors)
        if ax == bx:
            return [(ax, y) for y in range(min(ay, by) + 1, max(ay, by))]
        if ay == by:
            return [(x, ay) for x in range(min(ax, bx) + 1, max(ax, bx))]
        return []

    def verify_action(self, action: int) -> str:
        if _carried(self.env, self.target) or any(_carried(self.env, a) for a in self.anchors):
            return "continue"
        pos = tuple(int(v) for v in self.target.cur_pos)
        return "success" if pos in self.between_cells() else "continue"


class PlaceBetween(RoomGridLevel):
    """One room, three balls of distinct colours; pick up the target and drop it strictly between the two anchors,
    which stand on one row or column with at least one free cell between them (App. A.3 PlaceBetween)."""

    def __init__(self, room_size: int = 8, max_steps: int = DEFAULT_MAX_STEPS, **kwargs: Any) -> None:
        super().__init__(num_rows=1, num_cols=1, room_size=room_size, max_steps=max_steps, **kwargs)

    def gen_mission(self) -> None:
        colors = self._rand_subset(COLOR_NAMES, 3)
        target, a, b = (Ball(c) for c in colors)
        lo, hi = 1, self.room_size - 2  # interior cells of the single room
        horizontal = self._rand_bool()
        line = self._rand_int(lo, hi + 1)
        p, q = sorted(self._rand_subset(list(range(lo, hi + 1)), 2))
        if q - p < 2:
            raise RejectSampling("anchors need a free cell between them")
        for obj, k in ((a, p), (b, q)):
            pos = (k, line) if horizontal else (line, k)
            self.grid.set(*pos, obj)
            obj.init_pos, obj.cur_pos = pos, np.array(pos)
        self.instrs = PlaceBetweenInstr(target, (a, b))
        between = set(self.instrs.between_cells())
        self.place_obj(target, (lo, lo), (hi - lo + 1, hi - lo + 1), reject_fn=lambda env, pos: tuple(pos) in between)
        self.place_agent(0, 0)
        self.check_objs_reachable()


class _MatchingDoorInstr(OpenInstr):
    """Open the door whose colour is the key's; the mission names neither colour."""

    def surface(self, env: Any) -> str:
        return "open the door matching the key"


class OpenMatchingDoor(RoomGridLevel):
    """A room with one key and four doors of distinct colours (OpenDoor's 3 x 3 layout, agent and key in the middle
    room); open the door whose colour matches the key's (App. A.3 OpenMatchingDoor). Doors are unlocked."""

    def __init__(self, max_steps: int = DEFAULT_MAX_STEPS, **kwargs: Any) -> None:
        super().__init__(max_steps=max_steps, **kwargs)

    def gen_mission(self) -> None:
        colors = self._rand_subset(COLOR_NAMES, 4)
        for i, color in enumerate(colors):
            self.add_door(1, 1, door_idx=i, color=color, locked=False)
        match = self._rand_elem(colors)
        self.place_in_room(1, 1, Key(match))
        self.place_agent(1, 1)
        self.instrs = _MatchingDoorInstr(ObjDesc("door", match))


class SortColorsInstr(ActionInstr):
    """The red ball in the right room and the blue ball in the left room, neither carried."""

    def __init__(self, red: Any, blue: Any) -> None:
        super().__init__()
        self.red, self.blue = red, blue

    def surface(self, env: Any) -> str:
        return "put the red ball in the right room and put the blue ball in the left room"

    def update_objs_poss(self) -> None:
        """Positions are read from the objects themselves (cur_pos)."""

    def verify_action(self, action: int) -> str:
        env = self.env
        if _carried(env, self.red) or _carried(env, self.blue):
            return "continue"
        right = env.room_from_pos(*self.red.cur_pos) is env.get_room(1, 0)
        left = env.room_from_pos(*self.blue.cur_pos) is env.get_room(0, 0)
        return "success" if right and left else "continue"


class SortColors(RoomGridLevel):
    """Two rooms joined by a door, the red ball in the left room and the blue ball in the right one (swapped with
    respect to their goal rooms); put each in the other room (App. A.3 SortColors)."""

    def __init__(self, room_size: int = 6, max_steps: int = DEFAULT_MAX_STEPS, **kwargs: Any) -> None:
        super().__init__(num_rows=1, num_cols=2, room_size=room_size, max_steps=max_steps, **kwargs)

    def gen_mission(self) -> None:
        self.add_door(0, 0, door_idx=0, color=self._rand_color(), locked=False)
        red, _ = self.place_in_room(0, 0, Ball("red"))
        blue, _ = self.place_in_room(1, 0, Ball("blue"))
        self.place_agent()
        self.check_objs_reachable()
        self.instrs = SortColorsInstr(red, blue)


GYM_IDS = {"PlaceBetween": "bird/BabyAI-PlaceBetween-v0", "OpenMatchingDoor": "bird/BabyAI-OpenMatchingDoor-v0",
           "SortColors": "bird/BabyAI-SortColors-v0"}

for _name, _id in GYM_IDS.items():
    if _id not in gym.registry:
        gym.register(_id, entry_point=f"{__name__}:{_name}")
