"""The command-line reference, generated: each `python -m bird.*` command's own --help (argparse), subcommands
included, and `python -m bird --help` (Hydra's help template, conf/hydra/help/bird.yaml).

    python tools/cli_reference.py        # print the page (the docs site makes it on every build)
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

__all__ = ["COMMANDS", "help_texts", "render"]

# command -> module whose main() builds its parser
COMMANDS = {
    "python -m bird.plan": "bird.plan",
    "python -m bird.diff": "bird.diff",
    "python -m bird.fidelity": "bird.fidelity",
    "python -m bird.ablate": "bird.ablate",
    "python -m bird.status": "bird.status",
    "python -m bird.resume": "bird.resume",
    "python -m bird.sweeps": "bird.sweeps",
    "python -m bird.leaks": "bird.leaks",
    "python -m bird.reward": "bird.reward.__main__",
    "python -m bird.envs": "bird.envs.__main__",
    "python -m bird.analysis": "bird.analysis.__main__",
    "python -m bird.bundle": "bird.bundle.__main__",
    "python -m bird.annotate": "bird.annotate.__main__",
    "python -m bird.envs.mujoco.baselines": "bird.envs.mujoco.baselines",
    "python -m bird.envs.brax.baselines": "bird.envs.brax.baselines",
    "python -m bird.envs.metaworld.measure": "bird.envs.metaworld.measure",
}


class _Parsed(Exception):
    def __init__(self, parser: argparse.ArgumentParser):
        self.parser = parser


def _parser_of(module: str, prog: str) -> argparse.ArgumentParser:
    """The parser `module.main()` builds, caught when it parses (nothing of the command runs)."""
    main = importlib.import_module(module).main
    names = ("parse_known_args", "parse_known_intermixed_args")
    originals = {name: getattr(argparse.ArgumentParser, name) for name in names}

    def catch(self, *args, **kwargs):
        raise _Parsed(self)

    for name in names:
        setattr(argparse.ArgumentParser, name, catch)
    try:
        main([]) if main.__code__.co_argcount else main()
    except _Parsed as caught:
        caught.parser.prog = prog
        return caught.parser
    finally:
        for name, original in originals.items():
            setattr(argparse.ArgumentParser, name, original)
    raise RuntimeError(f"{module}.main() returned without parsing arguments")


def _with_subcommands(parser: argparse.ArgumentParser, prog: str) -> list[tuple[str, str]]:
    texts = [(prog, parser.format_help())]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                texts.append((f"{prog} {name}", sub.format_help()))
    return texts


def help_texts() -> list[tuple[str, str]]:
    """(command, its --help) for every command, subcommands after their command."""
    texts = []
    env = {**os.environ, "COLUMNS": "110"}
    done = subprocess.run([sys.executable, "-m", "bird", "--help"], cwd=ROOT, capture_output=True, text=True, env=env,
                          check=True)
    texts.append(("python -m bird", done.stdout))
    os.environ.setdefault("COLUMNS", "110")
    with contextlib.redirect_stdout(io.StringIO()):
        for prog, module in COMMANDS.items():
            texts += _with_subcommands(_parser_of(module, prog), prog)
    return texts


def render() -> str:
    lines = ["# Command-line reference", "",
             "Every command bird installs, with its own `--help` (generated on each build of this site). "
             "`python -m bird` runs one search or, with `-m`, a sweep; the others plan, inspect, analyse and "
             "package runs. Run any of them with `--help` for the same text.", ""]
    for prog, text in help_texts():
        level = "##" if prog.count(" ") <= 2 else "###"
        lines += [f"{level} `{prog}`", "", "```text", text.rstrip(), "```", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    print(render(), end="")
