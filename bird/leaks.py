"""Prompt leak audit: does text a generator is shown carry the reference reward, the success check, a success
threshold, or (in few-shot material) an evaluation task's name?

Each suite says what is hidden for one of its tasks (registry family `hidden_facts`, keyed by suite). The tests audit
every prompt kind of every method on every task, and real runs' saved prompts; `python -m bird.leaks RUN_DIR...`
audits a run directory (exit 1 on a finding).
"""

from __future__ import annotations

import json
import re
import sys
from functools import cache
from pathlib import Path
from typing import Any

from bird.envs.hidden import (
    CONTRACT_NAMES,
    HARNESS_NAMES,
    HiddenFacts,
    compared_numbers,
    find_leaks,
    hidden_facts,
)
from bird.files import read_json

__all__ = ["HiddenFacts", "hidden_facts", "find_leaks", "compared_numbers", "eval_task_mentions", "audit_run",
           "HARNESS_NAMES", "CONTRACT_NAMES"]


def _task_patterns(task: str, suite: str = "") -> list[str]:
    """Ways to name a task: its words joined by space/hyphen/underscore/nothing, and verb-first for two-word names
    ("door_open" -> "door open", "door-open", "open the door"). A CamelCase level name (BabyAI's) is named as written,
    case and all; a one-word one ("Open", "Pickup": ordinary words) only after its suite ("BabyAI-Open")."""
    if task[:1].isupper():
        humps = re.findall(r"[A-Z][a-z]*|\d+", task)
        exact = rf"(?-i:{re.escape(task)})"
        return [exact if len(humps) > 1 else rf"{re.escape(suite)}[\s/_-]?{exact}"]
    words = task.split("_")
    joined = r"[\s_-]?".join(map(re.escape, words))
    out = [joined]
    if len(words) >= 2:
        out.append(rf"{re.escape(words[1])}\s+(?:the\s+|a\s+)?{re.escape(words[0])}")
        out.append(r"[\s_-]?".join(map(re.escape, words[:2])))
    if words[:2] == ["pick", "place"]:
        out.append(r"pick\s+(?:and|&)\s+place")
    return out


@cache
def _evaluation_tasks() -> tuple[str, ...]:
    from bird.envs.demos import available_envs

    return tuple(available_envs())


def eval_task_mentions(text: str, env_ids: tuple[str, ...] | None = None) -> list[str]:
    """The evaluation tasks (every task with a conf/env option, by default) that `text` names."""
    out = []
    for env_id in env_ids or _evaluation_tasks():
        suite, _, task = env_id.partition("/")
        if any(re.search(rf"(?<![A-Za-z]){p}(?![A-Za-z])", text, re.IGNORECASE) for p in _task_patterns(task, suite)):
            out.append(env_id)
    return out


def _strip(text: str, authored: list[str]) -> str:
    """`text` without any generator-authored piece (its own programs and answers, shown back to it)."""
    for piece in sorted((a for a in authored if a and a.strip()), key=len, reverse=True):
        text = text.replace(piece, " ")
    return text


def _read_json(path: Path) -> Any:
    """A record of the run (bird/files.py: a regular file in its folder, bounded), None when there is none."""
    return read_json(path, "record") if path.exists() else None


def _run_texts(run: Path) -> tuple[list[tuple[str, str]], list[str], list[str]]:
    """(where, text) of every saved prompt, the few-shot examples shown, and generator-authored text."""
    prompts, authored = [], []
    for cdir in sorted((run / "candidates").glob("*")):
        for i, m in enumerate(_read_json(cdir / "prompt.json") or []):
            prompts.append((f"{cdir.name}/prompt.json[{i}]", str(m.get("content", ""))))
        authored += [(cdir / f).read_text() for f in ("response.txt", "reward.py") if (cdir / f).exists()]
        judge = _read_json(cdir / "judge.json") or {}
        for i, m in enumerate(judge.get("prompt") or []):
            prompts.append((f"{cdir.name}/judge.json:prompt[{i}]", str(m.get("content", ""))))
        authored += [judge.get("response") or "", json.dumps(judge.get("verdict") or {})]
        for where, messages, answers in _pass_exchanges(cdir):
            prompts += [(f"{cdir.name}/{where}[{i}]", str(m.get("content", ""))) for i, m in enumerate(messages)]
            authored += answers
        record = _read_json(cdir / "self_verify.json") or {}  # self-verification (RF-Agent)
        prompts += [(f"{cdir.name}/self_verify.json:prompt[{i}]", str(m.get("content", "")))
                    for i, m in enumerate(record.get("prompt") or [])]
        authored += [str(record.get(k) or "") for k in ("response", "answer")]
    for critic in _read_json(run / "critics.json") or []:  # R*'s critic programs
        prompts += [(f"critics.json:{critic.get('id')}:prompt[{i}]", str(m.get("content", "")))
                    for i, m in enumerate(critic.get("prompt") or [])]
        authored += [str(critic.get(k) or "") for k in ("response", "code")]
    decomposition = _read_json(run / "decomposition.json") or {}
    for i, m in enumerate(decomposition.get("prompt") or []):
        prompts.append((f"decomposition.json:prompt[{i}]", str(m.get("content", ""))))
    authored += [a.get("response", "") for a in decomposition.get("attempts", [])]
    if decomposition.get("graph"):
        from bird.components.decompose import render_graph

        authored.append(render_graph(decomposition["graph"]))
    revisions = (run / "subtasks.jsonl").read_text().splitlines() if (run / "subtasks.jsonl").exists() else []
    for k, rec in enumerate(json.loads(line) for line in revisions):
        prompts += [(f"subtasks.jsonl[{k}]:prompt[{i}]", str(m.get("content", ""))) for i, m in enumerate(rec["prompt"])]
        authored += [a.get("response", "") for a in rec.get("attempts", [])]
    from bird.components.subtasks import render_subtasks

    lists = [decomposition.get("subtasks")] + [json.loads(line).get("revised") for line in revisions]
    authored += [render_subtasks(x) for x in lists if x]
    return prompts, list(decomposition.get("examples") or []), authored


def _pass_exchanges(cdir: Path) -> list[tuple[str, list[dict], list[str]]]:
    """(where, prompt messages, answers) of the judge-role passes a candidate recorded: judge scores, summaries and
    thought alignment (bird/components/judgement.py, summary.py, thought.py)."""
    out = []
    for name in ("judge_scores.json", "summary.json"):
        for k, call in enumerate((_read_json(cdir / name) or {}).get("calls") or []):
            out.append((f"{name}:calls[{k}]", call.get("prompt") or [], [call.get("response") or ""]))
    thought = _read_json(cdir / "thought.json") or {}
    if thought:
        out.append(("thought.json:prompt", thought.get("prompt") or [], [thought.get("response") or "", thought.get("aligned") or "",
                                                                         thought.get("stated") or ""]))
    return out


def _env(run: Path, trust: bool = False) -> Any:
    """The run's env config (config.yaml's env section, read as received data: bird/config/received.py), where it
    holds a task file (its hidden facts come from it). Raises ConfigError when the config holds an interpolation, or
    its task names code or files the user has not vouched for (unless `trust`)."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from bird.config.errors import ConfigError
    from bird.config.received import load_received
    from bird.config.received_task import check_received_task
    from bird.config.schema import EnvConfig

    path = run / "config.yaml"
    if not path.is_file():
        return None
    section = load_received(path).get("env") or {}
    check_received_task(section, trust=trust)
    try:
        env = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(EnvConfig), section))
    except OmegaConfBaseException as exc:
        raise ConfigError(f"{path}: env: {exc}") from None
    return env if isinstance(env, EnvConfig) and env.task is not None else None


def audit_run(run_dir: str | Path, trust: bool = False) -> list[str]:
    """Findings in a run directory's saved prompts (generator-authored text shown back to it is left out). Raises
    ConfigError when its config.yaml is refused (`_env`; `trust`: --trust-config)."""
    run = Path(run_dir)
    task = _read_json(run / "task.json")
    if task is None:
        return [f"{run}: no task.json (not a run directory)"]
    facts = hidden_facts(_env(run, trust) or task["env_id"])
    prompts, examples, authored = _run_texts(run)
    found = [f"{where}: {leak}" for where, text in prompts for leak in find_leaks(_strip(text, authored), facts)]
    found += [f"few-shot example {i + 1} names evaluation task {t}" for i, ex in enumerate(examples)
              for t in eval_task_mentions(ex)]
    return found


def main(argv: list[str] | None = None) -> int:
    """`python -m bird.leaks [--trust-config] RUN_DIR...`: print every finding; exit 1 when there is one, 2 when a
    run's config is refused."""
    import argparse

    from bird.config.errors import ConfigError

    parser = argparse.ArgumentParser(prog="python -m bird.leaks", description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR")
    parser.add_argument("--trust-config", action="store_true",
                        help="build the hidden facts of a task whose config.yaml names code or files (imports and "
                             "reads them; default: refused unless it is your own task file on the config search path)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    status = 0
    for run in args.runs:
        try:
            found = audit_run(run, args.trust_config)
        except ConfigError as exc:
            print(f"{run}: not audited: {exc}")
            status |= 2
            continue
        status |= bool(found)
        print(f"{run}: {'no leaks found' if not found else f'{len(found)} finding(s)'}")
        for line in found:
            print(f"  - {line}")
    return status


if __name__ == "__main__":
    sys.exit(main())
