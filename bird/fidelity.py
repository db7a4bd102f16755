"""Fidelity data, one source of truth: per method, one row per value its config sets (methods/<name>/fidelity.yaml),
and BIRD's matched protocol shared by every method (methods/protocol.yaml), each with its source and whether it
matches the method's paper, BIRD's matched run, both or neither (with the reason).

The README tables (methods/<name>/README.md, docs/fidelity.md) are rendered from these files; `python -m bird.fidelity
--write` rewrites them and tests/methods/test_fidelity.py fails when a table, its data file or the config disagree.
`python -m bird.fidelity METHOD [OVERRIDE...]` prints each resolved value of a composed config with its source and
verdict; `protocol_differences` labels, for result.json, every resolved value that differs from BIRD's matched run."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bird.config.errors import ConfigError
from bird.config.schema import BirdConfig
from bird.config.searchpath import CONF_DIR, find, options
from bird.config.validate import METHODS_DIR

__all__ = ["MATCHES", "Verdict", "Row", "Table", "load_table", "load_protocol", "known_methods", "chain", "config_values",
           "table_problems", "citation_problems", "protocol_citation_problems", "render_rows", "render_readme",
           "protocol_differences", "config_substitutes", "resolved", "main"]

#: paper = the method's paper; BIRD = BIRD's matched run; both; release = BIRD's release file of a method outside BIRD's
#: matched comparison; neither (with the reason)
MATCHES = ("paper", "BIRD", "both", "release", "neither")
UNRECORDED = "unrecorded"  # the verdict of a value a user's method sets: bird holds no fidelity data for it
PROTOCOL_FILE = METHODS_DIR / "protocol.yaml"
_BLOCKS = ("table", "inherited", "substitutes")


@dataclass(frozen=True)
class Verdict:
    source: str
    matches: str
    note: str = ""


@dataclass(frozen=True)
class Row:
    """One value: as written in the config (an interpolation stays a string), and its verdict under budget=matched
    (and under every budget, unless `own` gives the verdict of the value another budget resolves to)."""

    key: str
    value: Any
    verdict: Verdict
    own: Verdict | None = None

    def for_protocol(self, protocol: str) -> Verdict:
        return self.own if self.own is not None and protocol != "matched" else self.verdict


@dataclass(frozen=True)
class Table:
    method: str
    rows: dict[str, Row]
    inherited: dict[str, Row]


def _verdict(raw: dict[str, Any], where: str) -> Verdict:
    missing = [k for k in ("source", "matches") if not raw.get(k)]
    if missing:
        raise ValueError(f"{where}: needs {missing}")
    return Verdict(str(raw["source"]), str(raw["matches"]), str(raw.get("note") or ""))


def _rows(items: list[dict[str, Any]], where: str) -> dict[str, Row]:
    out = {}
    for item in items or []:
        key = item["key"]
        own = _verdict(item["own"], f"{where} {key} (own)") if item.get("own") else None
        out[key] = Row(key, item.get("value"), _verdict(item, f"{where} {key}"), own)
    return out


def _data_file(method: str) -> Path:
    return METHODS_DIR / method / "fidelity.yaml"


def load_table(method: str) -> Table:
    """methods/<method>/fidelity.yaml."""
    path = _data_file(method)
    if not path.is_file():
        raise FileNotFoundError(f"no fidelity data for method {method!r}: {path} (methods: {methods()})")
    data = yaml.safe_load(path.read_text()) or {}
    return Table(method, _rows(data.get("rows"), str(path)), _rows(data.get("inherited"), str(path)))


def load_protocol() -> dict[str, Row]:
    """methods/protocol.yaml: BIRD's matched protocol, the values budget=matched and the trainer resolve to."""
    return _rows((yaml.safe_load(PROTOCOL_FILE.read_text()) or {}).get("rows"), str(PROTOCOL_FILE))


def methods() -> list[str]:
    """Every method config of bird's own (subfolders too: method=hillclimb/<step>); each has fidelity data."""
    base = CONF_DIR / "method"
    return sorted(p.relative_to(base).with_suffix("").as_posix() for p in base.rglob("*.yaml"))


def known_methods(overrides: Sequence[str] = ()) -> list[str]:
    """Every method config on the search path: bird's own and a user's (BIRD_CONFIG_PATH, hydra.searchpath)."""
    return options("method", overrides)


def _flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        out.update(_flatten(v, key + ".") if isinstance(v, dict) else {key: v})
    return out


def _file(group: str, name: str, overrides: Sequence[str] = ()) -> Path:
    path = find(group, name, overrides)
    if path is None:
        raise FileNotFoundError(f"no {group} config {name!r} on the config search path; known: {options(group, overrides)}")
    return path


def config_values(method: str, overrides: Sequence[str] = (), group: str = "method") -> dict[str, Any]:
    """Every key the method's config file (conf/method/<method>.yaml, or a user's on the search path) sets (dotted),
    with its value as written; `group="choice"` reads a design choice's file."""
    return _flatten(yaml.safe_load(_file(group, method, overrides).read_text()) or {})


def _defaults(method: str, prefix: str, overrides: Sequence[str] = ()) -> list[str]:
    return [d.removeprefix(prefix) for d in config_values(method, overrides).get("defaults", [])
            if isinstance(d, str) and d.startswith(prefix)]


def chain(method: str, overrides: Sequence[str] = ()) -> list[str]:
    """The method and the methods its config extends (Hydra defaults `/method/<parent>`), nearest first."""
    out = [method]
    while True:
        parents = _defaults(out[-1], "/method/", overrides)
        if not parents:
            return out
        out.append(parents[0])


def _unrecorded(method: str, overrides: Sequence[str]) -> Table:
    """A method without fidelity data (a user's): the keys its file sets, then those of the design choices it composes
    (`- /choice/<name>`, the last first), each with its file as the source."""
    rows: dict[str, Row] = {}
    path = _file("method", method, overrides)
    note = "a method outside bird: no methods/<name>/fidelity.yaml"
    for key, value in config_values(method, overrides).items():
        rows.setdefault(key, Row(key, value, Verdict(str(path), UNRECORDED, note)))
    for choice in reversed(_defaults(method, "/choice/", overrides)):
        where = _file("choice", choice, overrides)
        for key, value in config_values(choice, overrides, group="choice").items():
            rows.setdefault(key, Row(key, value, Verdict(str(where), UNRECORDED, f"design choice {choice}, composed by "
                                                                                 f"{method}")))
    return Table(method, rows, {})


def table_problems(method: str) -> list[str]:
    """Every way the method's data file and its config disagree (empty = in step)."""
    table, values = load_table(method), config_values(method)
    problems = [f"{method}: the config sets {k} but fidelity.yaml has no row for it" for k in values
                if k not in table.rows]
    problems += [f"{method}: fidelity.yaml has a row for {k}, which the config does not set" for k in table.rows
                 if k not in values]
    for key, row in table.rows.items():
        if key in values and key != "substitutes" and row.value != values[key]:
            problems.append(f"{method}: {key}: fidelity.yaml says {row.value!r}, the config {values[key]!r}")
        for v in (row.verdict, row.own):
            if v is not None and v.matches not in MATCHES:
                problems.append(f"{method}: {key}: matches must be one of {list(MATCHES)}, got {v.matches!r}")
            if v is not None and v.matches == "neither" and len(v.note) <= 10:
                problems.append(f"{method}: {key}: 'neither' needs a reason in the note")
    return problems


def _cell(value: Any) -> str:
    return "`" + (value if isinstance(value, str) else _show(value)).replace("|", "\\|") + "`"


def _esc(text: str) -> str:
    return text.replace("|", "\\|")


def render_rows(rows: dict[str, Row], values: dict[str, Any] | None = None) -> str:
    """A markdown table: key, value, source, matches, note (an `own` verdict joins its own budget's cells)."""
    lines = ["| key | value | source | matches | note |", "|---|---|---|---|---|"]
    for key, row in rows.items():
        value = "below" if key == "substitutes" else _cell(row.value if values is None else values.get(key, row.value))
        v, own = row.verdict, row.own
        source = v.source if own is None else f"budget=matched: {v.source}. Other budgets: {own.source}"
        matches = v.matches if own is None else f"{v.matches} (matched), {own.matches} (own)"
        note = v.note if own is None else "; ".join(n for n in (v.note, own.note) if n)
        lines.append(f"| `{key}` | {value} | {_esc(source)} | {matches} | {_esc(note)} |")
    return "\n".join(lines)


def _marker(kind: str, method: str) -> tuple[str, str]:
    return (f"<!-- BEGIN {kind}: generated from methods/{method}/fidelity.yaml by `python -m bird.fidelity --write` -->",
            f"<!-- END {kind} -->")


def _blocks(method: str) -> dict[str, str]:
    table = load_table(method)
    subs = config_values(method).get("substitutes") or []
    return {"table": render_rows(table.rows),
            "inherited": render_rows(table.inherited) if table.inherited else "",
            "substitutes": "\n".join(f'- "{s}"' for s in subs) or "- none in the config"}


def render_readme(method: str, text: str) -> str:
    """`text` (a README) with each generated block replaced by its rendering; a block without markers is left out."""
    for kind, body in _blocks(method).items():
        begin, end = _marker(kind, method)
        pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.DOTALL)
        if pattern.search(text):
            text = pattern.sub(lambda _m, b=body, s=begin, e=end: f"{s}\n{b}\n{e}", text)
    return text


def _render_protocol(text: str) -> str:
    begin = "<!-- BEGIN protocol: generated from methods/protocol.yaml by `python -m bird.fidelity --write` -->"
    end = "<!-- END protocol -->"
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.DOTALL)
    return pattern.sub(lambda _m: f"{begin}\n{render_rows(load_protocol())}\n{end}", text)


def stale_documents() -> list[Path]:
    """README files (and docs/fidelity.md) whose generated blocks differ from their data."""
    out = [p for m in methods() if (p := METHODS_DIR / m / "README.md").is_file()
           and render_readme(m, p.read_text()) != p.read_text()]
    index = METHODS_DIR.parent / "docs" / "fidelity.md"
    if index.is_file() and _render_protocol(index.read_text()) != index.read_text():
        out.append(index)
    return out


def write_documents() -> list[Path]:
    """Rewrite every stale generated block; returns the files written."""
    written = stale_documents()
    for path in written:
        method = path.parent.relative_to(METHODS_DIR).as_posix() if path.name == "README.md" else None
        text = path.read_text()
        path.write_text(render_readme(method, text) if method else _render_protocol(text))
    return written


def _get(cfg: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        cfg = getattr(cfg, part)
    return cfg


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def protocol_differences(cfg: BirdConfig) -> list[str]:
    """Under budget=matched, one label per protocol value the config resolves differently from BIRD's matched run."""
    if cfg.budget.protocol != "matched":
        return []
    return [f"budget=matched: {row.key}={_show(_plain(_get(cfg, row.key)))} where BIRD's matched runs used "
            f"{_show(row.value)} (methods/protocol.yaml)"
            for row in load_protocol().values() if _plain(_get(cfg, row.key)) != row.value]


def _show(value: Any) -> str:
    return yaml.safe_dump(value, default_flow_style=True, width=10_000).strip().removesuffix("\n...")


def resolved(cfg: BirdConfig, method: str, overrides: Sequence[str] = ()) -> list[tuple[str, str, Any, Verdict]]:
    """(defining method, key, resolved value, verdict) for every row of the method's chain, nearest table first,
    then BIRD's matched protocol; a protocol value that differs from BIRD's gets verdict neither. A method without
    fidelity data (a user's) gives the keys its file and its design choices set, verdict `unrecorded`."""
    out, seen = [], set()
    for name in chain(method, overrides):
        table = load_table(name) if _data_file(name).is_file() else _unrecorded(name, overrides)
        for key, row in {**table.rows, **table.inherited}.items():
            if key in seen or key == "defaults":
                continue
            seen.add(key)
            value = config_values(method, overrides).get("substitutes") if key == "substitutes" else \
                _value(cfg, key, row)
            out.append((name, key, value, row.for_protocol(cfg.budget.protocol)))
    for key, row in load_protocol().items():
        if key in seen:
            continue
        value = _plain(_get(cfg, key))
        verdict = row.verdict if value == row.value else Verdict(
            row.verdict.source, "neither", f"BIRD's matched runs used {row.value!r}; this config resolves {value!r}")
        out.append(("protocol", key, value, verdict))
    return out


def _value(cfg: BirdConfig, key: str, row: Row) -> Any:
    try:
        return _plain(_get(cfg, key))
    except AttributeError:
        return row.value  # a key that is not a config field (e.g. the method's own name)


def config_substitutes(cfg: BirdConfig) -> list[str]:
    """The substitutes a config declares: its own list, those the components it names declare
    (Component.substitute) and its differences from BIRD's matched protocol (under budget=matched). A run adds those
    of run time."""
    from bird.config.needs import configured

    out = list(cfg.substitutes) + [c.substitute for c in configured(cfg) if c.substitute]
    return list(dict.fromkeys(out + protocol_differences(cfg)))


# -- citations (`--check`): every value tagged paper, BIRD or both cites the release or a paper it was read in --------

#: a release, as owner/repo@commit (a path after ':' names a file in it)
_RELEASE = re.compile(r"\b[\w.-]+/[\w.-]+@[0-9a-f]{7,40}\b")
#: a place in a paper: a section, table, figure, appendix, algorithm, equation, page, or a line of its TeX source
_PAPER = re.compile(r"§\s*[\w.-]+|\b(?:Tables?|Figs?\.?|App\.|Appendix|Alg\.|Eq\.|Section|p\.)\s*(?:[A-Z]?[\d.]*\d|[IVX]+\b)"
                    r"|\b[\w-]+\.tex:\d+")
#: what a committed citation never points at: a place outside the project
_OUTSIDE = re.compile(r"/work/|\.\./shared/|\bshared/(?:methods|papers)/")
_CITED = ("paper", "BIRD", "both", "release")


def _cites(source: str, aliases: dict[str, str]) -> bool:
    """True when `source` names a release (owner/repo@commit, or a short name the table declares as one) or a place
    in a paper."""
    if _RELEASE.search(source) or _PAPER.search(source):
        return True
    return any(name in source for name, ref in aliases.items() if _RELEASE.search(ref))


def _aliases(path: Path) -> dict[str, str]:
    raw = (yaml.safe_load(path.read_text()) or {}).get("aliases") or {}
    return {str(k): str(v) for k, v in raw.items()}


def _row_citation_problems(where: str, rows: dict[str, Row], aliases: dict[str, str]) -> list[str]:
    out = []
    for key, row in rows.items():
        for label, v in (("", row.verdict), (" (own)", row.own)):
            if v is None or key == "method":  # the method's own name cites nothing
                continue
            if v.matches in _CITED and not _cites(v.source, aliases):
                out.append(f"{where}: {key}{label} is tagged {v.matches!r} but its source cites no release "
                           f"(owner/repo@commit:path) or paper place (§, Table, Fig., App., Alg., Eq.): {v.source!r}")
            if _OUTSIDE.search(v.source + " " + v.note):
                out.append(f"{where}: {key}{label} cites a path outside the project: {v.source!r}")
    return out


def citation_problems(method: str) -> list[str]:
    """Every row of methods/<method>/fidelity.yaml (and its `own` verdict) tagged paper, BIRD or both whose source cites
    neither a release nor a paper place, or that points outside the project. A table names its short release names
    in `aliases:` (e.g. `rf_agent.yaml: safety-research/bird@54a9ce3:configs/methods/rf_agent.yaml`)."""
    table, path = load_table(method), _data_file(method)
    aliases = _aliases(path)
    bad = [f"{path}: alias {k!r} = {v!r} is not owner/repo@commit[:path]" for k, v in aliases.items()
           if not _RELEASE.search(v)]
    return bad + _row_citation_problems(f"methods/{method}/fidelity.yaml", {**table.rows, **table.inherited}, aliases)


def protocol_citation_problems() -> list[str]:
    """citation_problems for BIRD's matched protocol (methods/protocol.yaml)."""
    return _row_citation_problems("methods/protocol.yaml", load_protocol(), _aliases(PROTOCOL_FILE))


def _title(name: str, overrides: list[str]) -> str:
    if name == "protocol":
        return "BIRD's matched protocol (methods/protocol.yaml)"
    if _data_file(name).is_file():
        return f"set by conf/method/{name}.yaml (methods/{name}/fidelity.yaml)"
    return f"set by {_file('method', name, overrides)} and the design choices it composes (no fidelity data)"


def _print_report(method: str, overrides: list[str]) -> None:
    from bird.config.load import compose
    from bird.config.task_for import task_for

    overrides = task_for([method], overrides)  # a task the method runs on (the default task may refuse it)
    cfg = compose([f"method={method}", *overrides])
    print(f"method={method} {' '.join(overrides)}  (budget {cfg.budget.name}, protocol {cfg.budget.protocol})")
    print("verdicts: paper = the method's paper; BIRD = BIRD's matched run; both; release = BIRD's release file of a "
          f"method outside BIRD's matched comparison; neither (with the reason); {UNRECORDED} = a user's value, not "
          "compared\n")
    current = None
    for name, key, value, v in resolved(cfg, method, overrides):
        if name != current:
            current = name
            title = _title(name, overrides)
            print(f"== {title}")
        shown = "see substitutes below" if key == "substitutes" else _show(value)
        print(f"{key} = {shown}\n    [{v.matches}] {v.source}" + (f"\n    note: {v.note}" if v.note else ""))
    print("\n== substitutes (as result.json records them)")
    for label in config_substitutes(cfg):
        print(f"- {label}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bird.fidelity", description=__doc__.splitlines()[0])
    parser.add_argument("method", nargs="?", help=f"a method config ({', '.join(methods())}, or a user's on "
                        "BIRD_CONFIG_PATH)")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. budget=matched env=metaworld/push")
    parser.add_argument("--write", action="store_true", help="rewrite the generated tables in the README files")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if a table, its data or a config disagree, or a tagged value cites no source")
    args = parser.parse_args(argv)
    if args.write or args.check:
        problems = [p for m in methods() for p in table_problems(m)]
        problems += [p for m in methods() for p in citation_problems(m)] + protocol_citation_problems()
        for p in problems:
            print(p, file=sys.stderr)
        stale = write_documents() if args.write else stale_documents()
        for path in stale:
            print(f"{'rewrote' if args.write else 'stale'}: {path}")
        return 1 if problems or (stale and args.check) else 0
    try:
        known = known_methods(args.overrides)
        if args.method not in known:
            parser.error(f"method {args.method!r} unknown; allowed: {known}")
        _print_report(args.method, args.overrides)
    except ConfigError as exc:
        print(f"bird.fidelity: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
