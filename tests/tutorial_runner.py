"""Run a tutorial of docs/tutorials/ as its reader would: its file blocks written, its commands run in order in one
shell, in one folder; then the output each command block shows is checked, loosely, against what the command printed.

A tutorial's blocks (tests/docs/test_tutorials.py runs them):
- ```console: lines starting `$ ` are commands (a line ending in `\\` continues); the lines after a command are the
  output it shows. Each shown line must match a line of the real output, in order; a number matches any number and
  `...` anything, so the figures of a run may differ.
- a block with a title (```yaml title="my_conf/env/gym/my_pendulum.yaml"): a file the reader writes, written into
  the folder before the commands that follow it. A line `--8<-- "PATH"` is replaced by the repository's file PATH (the
  site includes it the same way, pymdownx.snippets).
Other blocks (Python without a title, text) are illustrations and are not run. A shell block in any other form is
refused by `check_blocks`, so every command of a tutorial runs in a test.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TUTORIALS = ROOT / "docs" / "tutorials"
SHELLS = ("bash", "sh", "shell", "zsh", "console", "shell-session")
_FENCE = re.compile(r"^```(\S*)([^\n]*)\n(.*?)^```\s*$", re.M | re.S)
_SNIPPET = re.compile(r'^--8<-- "([^"]+)"$', re.M)
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")


@dataclass
class Command:
    line: str
    shown: list[str] = field(default_factory=list)


@dataclass
class Block:
    kind: str  # "console" or "file"
    commands: list[Command] = field(default_factory=list)
    path: str = ""
    content: str = ""


def snippets(text: str) -> str:
    """`--8<-- "PATH"` lines replaced by the repository's files."""
    return _SNIPPET.sub(lambda m: (ROOT / m.group(1)).read_text().rstrip("\n"), text)


def _console(body: str) -> list[Command]:
    commands: list[Command] = []
    pending = ""
    for line in body.splitlines():
        if pending or line.startswith("$ "):
            part = line[2:] if not pending else line
            if part.endswith("\\"):
                pending += part[:-1] + " "
                continue
            commands.append(Command(pending + part))
            pending = ""
        elif commands and line.strip():
            commands[-1].shown.append(line)
    return commands


def blocks(text: str) -> list[Block]:
    """The console and file blocks of a tutorial, in order."""
    out = []
    for lang, info, body in _FENCE.findall(text):
        title = re.search(r'title="([^"]+)"', info)
        if lang == "console":
            out.append(Block("console", commands=_console(body)))
        elif title:
            out.append(Block("file", path=title.group(1), content=snippets(body)))
    return out


def check_blocks(text: str) -> list[str]:
    """What keeps a tutorial's commands from being run: a shell block that is not `console`, a console block without
    a command, a file block whose path leaves the folder."""
    problems = []
    for lang, info, body in _FENCE.findall(text):
        if lang in SHELLS and lang != "console":
            problems.append(f"a ```{lang} block: write commands in a ```console block (`$ command`), so a test runs them")
        if lang == "console" and not _console(body):
            problems.append(f"a console block without a `$ ` command: {body[:60]!r}")
        title = re.search(r'title="([^"]+)"', info)
        if title and (title.group(1).startswith("/") or ".." in Path(title.group(1)).parts):
            problems.append(f"file block {title.group(1)!r} leaves the tutorial's folder")
    return problems


def _pattern(shown: str) -> re.Pattern:
    """A shown output line as a regex: numbers match any number, `...` anything, runs of spaces any spacing."""
    chunks = []
    for chunk in re.split(r"\s*\.\.\.\s*", shown.strip()):
        parts = []
        for piece in re.split(r"(" + _NUMBER.pattern + r"|\s+)", chunk):
            if piece and _NUMBER.fullmatch(piece):
                parts.append(r"(?:-?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?|nan|inf)")
            elif piece and piece.isspace():
                parts.append(r"\s+")
            elif piece:
                parts.append(re.escape(piece))
        chunks.append("".join(parts))
    return re.compile(".*".join(chunks))


def unmatched(shown: list[str], output: str) -> list[str]:
    """The shown lines (in order) that no line of the output, after the previous match, matches."""
    lines, at, missing = output.splitlines(), 0, []
    for want in (s for s in shown if s.strip()):
        pattern = _pattern(want)
        hit = next((i for i in range(at, len(lines)) if pattern.search(lines[i])), None)
        if hit is None:
            missing.append(want)
        else:
            at = hit + 1
    return missing


def script(tutorial: list[Block], extra: dict[str, str]) -> tuple[str, list[Command]]:
    """One bash script for the whole tutorial, and its commands in order. `extra`: a regex on a command -> arguments
    the test appends to it (a smaller budget)."""
    lines = ["set -o pipefail"]
    commands = []
    for block in tutorial:
        if block.kind == "file":
            lines += [f"mkdir -p {shlex.quote(str(Path(block.path).parent))}",
                      f"cat > {shlex.quote(block.path)} <<'BIRD_TUTORIAL_EOF'", block.content, "BIRD_TUTORIAL_EOF"]
            continue
        for command in block.commands:
            line = command.line
            for regex, args in extra.items():
                if re.search(regex, line):
                    line = f"{line} {args}"
            n = len(commands)
            commands.append(command)
            lines += [f"echo '@@bird-step {n}'", f"{line} 2>&1 || {{ echo \"@@bird-failed {n} $?\"; exit 1; }}"]
    return "\n".join(lines) + "\n", commands


@dataclass
class Ran:
    commands: list[Command]
    outputs: list[str]
    failed: str | None  # the command that failed, with its output


def run(path: Path, folder: Path, env: dict[str, str], extra: dict[str, str], timeout: float) -> Ran:
    """Run the tutorial at `path` in `folder` (its files written there, its commands run from there)."""
    text, commands = script(blocks(path.read_text()), extra)
    (folder / f".{path.stem}.sh").write_text(text)
    done = subprocess.run(["bash", f".{path.stem}.sh"], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=timeout)
    pieces = re.split(r"^@@bird-step (\d+)\n", done.stdout, flags=re.M)
    outputs = [""] * len(commands)
    for i in range(1, len(pieces) - 1, 2):
        outputs[int(pieces[i])] = pieces[i + 1]
    failed = re.search(r"^@@bird-failed (\d+) (\d+)$", done.stdout, re.M)
    why = None
    if failed or done.returncode:
        n = int(failed.group(1)) if failed else len(commands) - 1
        why = (f"`{commands[n].line}` exited {failed.group(2) if failed else done.returncode}:\n"
               f"{outputs[n][-3000:]}\n{done.stderr[-2000:]}")
    return Ran(commands, outputs, why)
