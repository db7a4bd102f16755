"""A reward program's float literals as parameters (registry family tunable): find them, evaluate the program under
many parameter vectors in one sandbox call, and write tuned values back into the source.

Only literals inside function bodies are parameters (module-level constants and default arguments are evaluated
once, at import). Evaluation rewrites the program so each literal reads `_BIRD_P[i]`, and a wrapper entry point
runs the original entry once per distinct parameter row, the rows arriving as an extra observation field."""

from __future__ import annotations

import ast
from dataclasses import dataclass

import numpy as np

from bird.envs.base import ObsField, ObsIndex
from bird.registry import register
from bird.reward.factory import ProgramLimits, open_program

__all__ = ["Literals", "find_literals", "substitute", "ThetaProgram", "THETA_FIELD"]

THETA_FIELD = "_bird_theta"
_BODY = "_bird_reward_body"


@dataclass(frozen=True)
class Literals:
    """Float literals of a program: source spans (line, start col, end col; 1-based lines) and values."""

    spans: tuple[tuple[int, int, int], ...]
    values: np.ndarray

    def __len__(self) -> int:
        return len(self.spans)


def _function_literals(tree: ast.Module) -> list[ast.Constant]:
    found: dict[int, ast.Constant] = {}
    for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        for stmt in fn.body:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Constant) and type(node.value) is float:
                    found[id(node)] = node
    return sorted(found.values(), key=lambda n: (n.lineno, n.col_offset))


@register("tunable", "float_literals")
def find_literals(code: str) -> Literals:
    """The float literals inside the program's function bodies, in source order."""
    nodes = _function_literals(ast.parse(code))
    spans = tuple((n.lineno, n.col_offset, n.end_col_offset) for n in nodes if n.lineno == n.end_lineno)
    values = np.array([n.value for n in nodes if n.lineno == n.end_lineno], dtype=np.float64)
    return Literals(spans, values)  # type: ignore[arg-type]


def _replace(code: str, spans: tuple[tuple[int, int, int], ...], texts: list[str]) -> str:
    lines = code.splitlines(keepends=True)
    for (line, start, end), text in sorted(zip(spans, texts, strict=True), reverse=True):
        row = lines[line - 1].encode()  # col offsets are UTF-8 byte offsets
        lines[line - 1] = (row[:start] + text.encode() + row[end:]).decode()
    return "".join(lines)


def _literal(value: float) -> str:
    return repr(float(f"{value:.6g}"))


def substitute(code: str, literals: Literals, values: np.ndarray) -> str:
    """The program with each literal replaced by the new value (comments and layout kept)."""
    return _replace(code, literals.spans, [_literal(v) for v in values])


def _parametrised(code: str, literals: Literals) -> str:
    body = _replace(code, literals.spans, [f"_BIRD_P[{i}]" for i in range(len(literals))])
    tree = ast.parse(body)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "compute_reward":
            node.name = _BODY
        elif isinstance(node, ast.Name) and node.id == "compute_reward":
            node.id = _BODY
    head = f"_BIRD_P = {[float(v) for v in literals.values]!r}\n"
    return head + ast.unparse(tree) + "\n\n" + _WRAPPER.format(theta=THETA_FIELD, body=_BODY)


_WRAPPER = '''
def compute_reward(obs, action, next_obs, info):
    theta = np.reshape(np.asarray(obs["{theta}"], dtype=float), (len(action), -1))
    keys, group = np.unique(theta, axis=0, return_inverse=True)
    group = np.reshape(group, -1)
    reward = np.zeros(len(action))
    for g in range(len(keys)):
        rows = np.flatnonzero(group == g)
        _BIRD_P[:] = [float(v) for v in keys[g]]
        sub = {{k: v[rows] for k, v in obs.items() if k != "{theta}"}}
        sub_next = {{k: v[rows] for k, v in next_obs.items() if k != "{theta}"}}
        out = {body}(sub, action[rows], sub_next, info)
        reward[rows] = np.broadcast_to(np.asarray(out[0], dtype=float), (len(rows),))
    return reward, {{}}
'''


class ThetaProgram:
    """The program evaluated on fixed transitions under many parameter vectors, in one sandbox worker.

    Calling it with thetas (G, n) returns (G, rows) rewards."""

    def __init__(self, code: str, literals: Literals, obs_index: ObsIndex, obs: np.ndarray, actions: np.ndarray,
                 next_obs: np.ndarray, call_timeout_s: float = 30.0, memory_mb: int = 2048) -> None:
        n = len(literals)
        extended = ObsIndex((*obs_index.fields, ObsField(THETA_FIELD, obs_index.dim, n, "other", "parameters")),
                            obs_index.dim + n)
        self.obs, self.actions, self.next_obs = obs, actions, next_obs
        self.program = open_program(_parametrised(code, literals), extended, ProgramLimits(call_timeout_s, memory_mb))

    def __call__(self, thetas: np.ndarray) -> np.ndarray:
        g, rows = len(thetas), len(self.obs)
        tiled = np.repeat(np.asarray(thetas, dtype=np.float64), rows, axis=0)
        obs = np.hstack([np.tile(self.obs, (g, 1)), tiled])
        nxt = np.hstack([np.tile(self.next_obs, (g, 1)), tiled])
        reward, _ = self.program(obs, np.tile(self.actions, (g, 1)), nxt)
        return reward.reshape(g, rows)

    def close(self) -> None:
        self.program.close()

    def __enter__(self) -> ThetaProgram:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
