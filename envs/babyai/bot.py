"""The BabyAI bot (minigrid.utils.baby_ai_bot) as bird's scripted expert, extended to GRACE's new levels as the
paper extended it ("We extend the bot to support our custom levels as well", §5.1).

The bot plans from the simulator's state, so the policy is told each episode's env when the episode starts
(`BotPolicy.start`, called by bird/envs/demos.py after every reset) and then maps an observation to the bot's action.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from minigrid.utils.baby_ai_bot import BabyAIBot, DropSubgoal, GoNextToSubgoal, PickupSubgoal

from bird.envs.babyai.new_levels import PlaceBetweenInstr, SortColorsInstr

__all__ = ["BotPolicy", "GraceBot"]


def _free_cell(env: Any, room: Any, avoid: set[tuple[int, int]]) -> tuple[int, int]:
    """An empty interior cell of `room` away from its doors (the first in reading order that is empty and not
    in front of a door), for the bot to drop an object on."""
    (x0, y0), (w, h) = room.top, room.size
    near_door = {(int(d.cur_pos[0]) + dx, int(d.cur_pos[1]) + dy) for d in room.doors if d is not None
                 for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1))}
    for y in range(y0 + 1, y0 + h - 1):
        for x in range(x0 + 1, x0 + w - 1):
            if env.grid.get(x, y) is None and (x, y) not in near_door | avoid:
                return x, y
    raise RuntimeError("no free cell to drop on")


class GraceBot(BabyAIBot):
    """BabyAIBot plus plans for PlaceBetween and SortColors (OpenMatchingDoor is an OpenInstr the bot handles)."""

    def _process_instr(self, instr: Any) -> None:
        env = self.mission.unwrapped
        if isinstance(instr, PlaceBetweenInstr):
            cells = instr.between_cells()
            spot = cells[len(cells) // 2]
            self.stack += [DropSubgoal(self), GoNextToSubgoal(self, spot), PickupSubgoal(self),
                           GoNextToSubgoal(self, instr.target)]
            return
        if isinstance(instr, SortColorsInstr):
            agent = {tuple(int(v) for v in env.agent_pos)}
            left = _free_cell(env, env.get_room(0, 0), agent)
            right = _free_cell(env, env.get_room(1, 0), agent | {left})
            # executed last first: the red ball to the right room, then the blue ball to the left room
            self.stack += [DropSubgoal(self), GoNextToSubgoal(self, left), PickupSubgoal(self),
                           GoNextToSubgoal(self, instr.blue), DropSubgoal(self), GoNextToSubgoal(self, right),
                           PickupSubgoal(self), GoNextToSubgoal(self, instr.red)]
            return
        super()._process_instr(instr)


class BotPolicy:
    """obs -> the bot's action for the episode `start` was last called with (a fresh bot per episode)."""

    def __init__(self) -> None:
        self._bot: GraceBot | None = None

    def start(self, env: Any) -> None:
        self._bot = GraceBot(_minigrid(env))

    def __call__(self, obs: np.ndarray) -> int:
        if self._bot is None:
            raise RuntimeError("BotPolicy.start(env) must be called after each reset")
        return int(self._bot.replan())


def _minigrid(env: Any) -> Any:
    """The minigrid level under bird's wrappers (the bot reads `.unwrapped` and steps nothing itself)."""
    return env.unwrapped
