"""What a BabyAI task hides from generators: the names of its reference reward and of its success check (the level's
instruction verifier, minigrid.envs.babyai.core.verifier, and bird's verifiers of the new levels)."""

from __future__ import annotations

__all__ = ["hidden_names"]

_VERIFIER = ("verify", "verify_action", "reset_verifier", "lastStepMatch", "instrs", "find_matching_objs",
             "update_objs_poss", "between_cells", "_reward")
_INSTRUCTIONS = ("ActionInstr", "GoToInstr", "OpenInstr", "PickupInstr", "PutNextInstr", "BeforeInstr", "AfterInstr",
                 "AndInstr", "SeqInstr", "PlaceBetweenInstr", "SortColorsInstr", "_MatchingDoorInstr")


def hidden_names() -> frozenset[str]:
    """The verifier's and the reward's identifiers (the same for every level)."""
    return frozenset(_VERIFIER + _INSTRUCTIONS)
