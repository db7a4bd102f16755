"""Task decomposition before the first generation (registry family decompose).

- none: no decomposition.
- tag_graph: RE-GoT §IV-C2 (a single query, §IV-D) returns a text-attributed graph G = (V, E, T_v, T_e) of sub-goals, guided by
  rules and k few-shot (task → graph) examples (methods/<generate.prompt>/decompose_*.txt; k = 0 is the zero-shot
  ablation). The answer is validated (`graph_problems`); an invalid graph is re-asked decompose.retries times, then
  the search goes on without one, recorded in decomposition.json.
"""

from __future__ import annotations

from typing import Any

from bird.config.schema import BirdConfig
from bird.llm.base import Generator, LLMError, Message, Request
from bird.llm.parsing import AnswerParseError, parse_json_answer
from bird.prompts import obs_fields_context, templates
from bird.registry import get, register
from bird.state import SearchState

__all__ = ["graph_problems", "render_graph", "decompose", "decompose_request"]

SUBSTEP_TYPES = ("reward", "primitive")


def _node_problems(graph: dict[str, Any]) -> tuple[list[str], set[str]]:
    nodes = graph.get("nodes")
    if not isinstance(nodes, list) or not nodes:
        return ["'nodes' must be a non-empty list"], set()
    problems, ids = [], []
    for i, n in enumerate(nodes):
        if not isinstance(n, dict) or not isinstance(n.get("id"), str):
            problems.append(f"nodes[{i}] needs a string 'id'")
            continue
        ids.append(n["id"])
        if not str(n.get("status", "")).strip():
            problems.append(f"node {n['id']!r} has no 'status' text")
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        problems.append(f"duplicate node ids {dup}")
    for key in ("start", "goal"):
        if graph.get(key) not in ids:
            problems.append(f"'{key}'={graph.get(key)!r} is not a node id (nodes: {ids})")
    return problems, set(ids)


def _edge_problems(graph: dict[str, Any], ids: set[str]) -> tuple[list[str], list[tuple[str, str]]]:
    edges = graph.get("edges")
    if not isinstance(edges, list) or not edges:
        return ["'edges' must be a non-empty list"], []
    problems, pairs = [], []
    for i, e in enumerate(edges):
        if not isinstance(e, dict):
            problems.append(f"edges[{i}] is not an object")
            continue
        src, dst = e.get("src"), e.get("dst")
        if src not in ids or dst not in ids:
            problems.append(f"edges[{i}] {src!r}->{dst!r} names an unknown node")
            continue
        pairs.append((src, dst))
        if e.get("substep_type") not in SUBSTEP_TYPES:
            problems.append(f"edges[{i}] substep_type={e.get('substep_type')!r}; allowed: {list(SUBSTEP_TYPES)}")
        if not str(e.get("behavior", "")).strip():
            problems.append(f"edges[{i}] {src}->{dst} has no 'behavior' text")
        if e.get("substep_type") == "reward" and not str(e.get("success_condition", "")).strip():
            problems.append(f"reward edge {src}->{dst} has no success_condition")
    return problems, pairs


def _reach(start: str, pairs: list[tuple[str, str]], reverse: bool = False) -> set[str]:
    nxt: dict[str, list[str]] = {}
    for a, b in pairs:
        nxt.setdefault(b if reverse else a, []).append(a if reverse else b)
    seen, todo = {start}, [start]
    while todo:
        for m in nxt.get(todo.pop(), []):
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return seen


def _has_cycle(ids: set[str], pairs: list[tuple[str, str]]) -> bool:
    indeg = {i: 0 for i in ids}
    for _, b in pairs:
        indeg[b] += 1
    ready = [i for i, d in indeg.items() if d == 0]
    seen = 0
    while ready:
        n = ready.pop()
        seen += 1
        for a, b in pairs:
            if a == n:
                indeg[b] -= 1
                if indeg[b] == 0:
                    ready.append(b)
    return seen < len(ids)


def graph_problems(graph: Any) -> list[str]:
    """Every reason `graph` is not a valid task graph: a DAG from `start` to `goal` in which every node lies on a
    start→goal path, with text on nodes and edges and a success condition on every reward edge. Empty = valid."""
    if not isinstance(graph, dict):
        return [f"the graph must be a JSON object, got {type(graph).__name__}"]
    problems, ids = _node_problems(graph)
    edge_problems, pairs = _edge_problems(graph, ids)
    problems += edge_problems
    if problems:
        return problems
    if _has_cycle(ids, pairs):
        return ["the graph has a cycle (it must be a DAG)"]
    start, goal = graph["start"], graph["goal"]
    from_start, to_goal = _reach(start, pairs), _reach(goal, pairs, reverse=True)
    if goal not in from_start:
        return [f"goal {goal!r} is not reachable from start {start!r}"]
    off = sorted(ids - (from_start & to_goal))
    return [f"nodes {off} are not on any path from start to goal"] if off else []


def render_graph(graph: dict[str, Any]) -> str:
    """The graph as prompt text: stages, then behaviours with their success conditions."""
    lines = ["Task graph (stages are nodes, behaviours are edges):"]
    lines += [f"- stage {n['id']}: {n['status']}" for n in graph["nodes"]]
    for e in graph["edges"]:
        alt = f" [alternative {e['alt_rank']}]" if e.get("alt_rank") else ""
        cond = f"; success when {e['success_condition']}" if e.get("success_condition") else ""
        lines.append(f"- {e['src']} -> {e['dst']} ({e.get('substep_type')}){alt}: {e['behavior']}{cond}")
    lines.append(f"Start at {graph['start']}; the goal stage is {graph['goal']}.")
    return "\n".join(lines)


def decompose_request(cfg: BirdConfig, state: SearchState, attempt: int) -> Request:
    """The decomposition prompt (attempt k = its k-th blind re-ask), with the few-shot examples in its context."""
    t = templates(cfg.generate.prompt)
    examples = [t[k] for k in sorted(t) if k.startswith("decompose_example_")][: cfg.decompose.n_examples]
    env_repr = get("env_representation", cfg.generate.env_representation)(state.spec)
    user = t["decompose_user"].format(env_repr=env_repr, task=state.spec.description, rules=t["decompose_rules"],
                                      examples="\n".join(examples))
    context = {"task": state.spec.description, "obs_fields": obs_fields_context(state.spec, cfg.generate.field_view),
               "n_examples": len(examples), "examples": examples}
    return Request(purpose="decompose", messages=(Message("system", t["decompose_system"]), Message("user", user)),
                   context=context, temperature=cfg.generate.temperature, max_tokens=cfg.generate.max_tokens,
                   sample_index=attempt, seed=state.seed)


@register("decompose", "none")
def _none(cfg: BirdConfig, state: SearchState, generator: Generator) -> dict[str, Any] | None:
    return None


@register("decompose", "tag_graph")
def _tag_graph(cfg: BirdConfig, state: SearchState, generator: Generator) -> dict[str, Any]:
    """Ask for the graph (1 + decompose.retries attempts); the record says which attempt, if any, was valid."""
    attempts: list[dict[str, Any]] = []
    for attempt in range(cfg.decompose.retries + 1):
        req = decompose_request(cfg, state, attempt)
        [answer] = generator.complete_many([req])
        if isinstance(answer, LLMError):
            attempts.append({"error": str(answer)[:500]})
            continue
        try:
            graph: Any = parse_json_answer(answer.text)
            problems = graph_problems(graph)
        except AnswerParseError as exc:
            graph, problems = None, [str(exc)]
        if problems and answer.truncated:
            problems.insert(0, f"the answer was cut off at the output limit (max_tokens={req.max_tokens})")
        attempts.append({"response": answer.text, "problems": problems, "llm": answer.to_json()})
        if not problems:
            return {"kind": "tag_graph", "valid": True, "graph": graph, "n_examples": req.context["n_examples"],
                    "examples": req.context["examples"], "prompt": req.messages_json(), "attempts": attempts}
    return {"kind": "tag_graph", "valid": False, "graph": None, "n_examples": req.context["n_examples"],
            "examples": req.context["examples"], "prompt": req.messages_json(), "attempts": attempts}


def decompose(cfg: BirdConfig, state: SearchState, generator: Generator) -> dict[str, Any] | None:
    """Run decompose.kind; the record (or None) goes on state.decomposition and into decomposition.json."""
    return get("decompose", cfg.decompose.kind)(cfg, state, generator)
