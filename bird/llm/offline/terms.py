"""Typed reward terms over named observation fields, rendered as plain numpy (or jax.numpy) code."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

__all__ = ["Term", "render_program", "SPEC_MARKER"]

SPEC_MARKER = "# bird-offline-spec: "


@dataclass(frozen=True)
class Term:
    """One named reward component: `weight * f(fields)`; `form` picks f, `temp` is its temperature."""

    name: str
    kind: str  # progress | alive | upright | upright_cos | distance | pair_distance | bonus | control | smooth
    fields: tuple[str, ...] = ()
    weight: float = 1.0
    form: str = "linear"  # linear | exp
    temp: float = 1.0
    extra: dict[str, Any] = field(default_factory=dict)

    def scaled(self, factor: float) -> Term:
        return replace(self, weight=round(self.weight * factor, 4))

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "fields": list(self.fields), "weight": self.weight,
                "form": self.form, "temp": self.temp, "extra": self.extra}

    @staticmethod
    def from_json(d: dict[str, Any]) -> Term:
        return Term(d["name"], d["kind"], tuple(d["fields"]), float(d["weight"]), d["form"], float(d["temp"]),
                    dict(d.get("extra", {})))


# reward.language -> (import line, array module name, ones of the batch size)
_LANGUAGES = {
    "numpy": ("import numpy as np", "np", "np.ones(len(action))"),
    "jax": ("import jax.numpy as jnp", "jnp", "jnp.ones(action.shape[0])"),
}


def _dist_expr(a: str, b: str | None, np: str = "np") -> str:
    if b is None:  # a is already a difference vector
        return f"{np}.linalg.norm(next_obs[{a!r}], axis=-1)"
    return f"{np}.linalg.norm(next_obs[{a!r}] - next_obs[{b!r}], axis=-1)"


def _body(t: Term, language: str = "numpy", weighted: bool = True) -> list[str]:  # noqa: C901 - one case per term
    """Lines computing component `t.name`; unweighted (weighted=False) when the weight lives in REWARD_WEIGHTS."""
    _, np, ones = _LANGUAGES[language]
    w, tmp = (f"{t.name}_weight", f"{t.name}_temp") if weighted else ("1.0", f"{t.name}_temp")
    lines = [f"{w} = {t.weight!r}"] if weighted else []
    if t.form == "exp" or t.kind in ("bonus",):
        lines.append(f"{tmp} = {t.temp!r}")
    if t.kind == "progress":
        lines.append(f"{t.name} = {w} * next_obs[{t.fields[0]!r}]")
    elif t.kind == "alive":
        lines.append(f"{t.name} = {w} * {ones}")
    elif t.kind == "upright":
        sq = f"next_obs[{t.fields[0]!r}] ** 2"
        lines.append(f"{t.name} = {w} * {np}.exp(-{sq} / {tmp})" if t.form == "exp" else f"{t.name} = -{w} * {sq}")
    elif t.kind == "upright_cos":  # the cosine of an angle from upright: 1 upright, -1 upside down
        gap = f"(1.0 - next_obs[{t.fields[0]!r}])"
        lines.append(f"{t.name} = {w} * {np}.exp(-{gap} / {tmp})" if t.form == "exp" else f"{t.name} = -{w} * {gap}")
    elif t.kind in ("distance", "pair_distance"):
        b = t.fields[1] if len(t.fields) > 1 else None
        lines.append(f"{t.name}_dist = {_dist_expr(t.fields[0], b, np)}")
        lines.append(f"{t.name} = {w} * {np}.exp(-{t.name}_dist / {tmp})" if t.form == "exp"
                     else f"{t.name} = -{w} * {t.name}_dist")
    elif t.kind == "bonus":
        b = t.fields[1] if len(t.fields) > 1 else None
        lines.append(f"{t.name} = {w} * ({_dist_expr(t.fields[0], b, np)} < {tmp}).astype(float)")
    elif t.kind == "control":
        lines.append(f"{t.name} = -{w} * {np}.sum({np}.square(action), axis=-1)")
    elif t.kind == "smooth":
        total = " + ".join(f"next_obs[{f!r}] ** 2" for f in t.fields)
        lines.append(f"{t.name} = -{w} * ({total})")
    else:
        raise ValueError(f"unknown term kind {t.kind!r}")
    return lines


def render_program(terms: list[Term], note: str, language: str = "numpy", weighted: bool = False) -> str:
    """Plain readable Python in the reward-program contract, with the term spec in a comment line.

    :param language: reward.language: "numpy" or "jax" (the same terms against jax.numpy).
    :param weighted: the weighted_components contract (components returned as a dict, weights in REWARD_WEIGHTS)."""
    import json

    spec = json.dumps([t.to_json() for t in terms], separators=(",", ":"))
    out = [f"# {note}", SPEC_MARKER + spec, _LANGUAGES[language][0], "", ""]
    if weighted:
        out += ["REWARD_WEIGHTS = {" + ", ".join(f"{t.name!r}: {t.weight!r}" for t in terms) + "}", "", ""]
    out.append("def compute_reward(obs, action, next_obs, info):")
    for t in terms:
        out += ["    " + line for line in _body(t, language, weighted=not weighted)]
    out.append("    components = {" + ", ".join(f"{t.name!r}: {t.name}" for t in terms) + "}")
    if weighted:
        out.append("    return components")
    else:
        out.append("    reward = " + " + ".join(t.name for t in terms))
        out.append("    return reward, components")
    return "\n".join(out) + "\n"
