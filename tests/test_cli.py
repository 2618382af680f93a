"""Every command has --help, and the core commands work as real processes."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from logkit.cli import build_parser


def _commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.append(prefix + (name,))
                found.extend(_commands(sub, prefix + (name,)))
    return found


@pytest.mark.slow
def test_every_command_has_help(logkit) -> None:
    commands = _commands(build_parser())
    assert ("session", "start") in commands and ("schema",) in commands
    for command in commands:
        result = logkit(*command, "--help")
        assert result.returncode == 0, (command, result.stderr)
        assert "usage: logkit " + " ".join(command) in result.stdout


def test_command_table_matches_the_modules() -> None:
    import importlib

    from logkit.cli import COMMAND_MODULES

    for module, commands in COMMAND_MODULES.items():
        parser = argparse.ArgumentParser()
        sub = parser.add_subparsers()
        importlib.import_module(f"logkit.cli.{module}").register(sub)
        assert tuple(sub.choices) == commands, module
    one = build_parser("run")
    assert [a for a in one._actions if isinstance(a, argparse._SubParsersAction)][0].choices.keys() == {"run"}


def test_session_start_list_show(logkit, sessions: Path) -> None:
    started = logkit("session", "start", "Qwen3.5 on SM120", "--tag", "qwen", "--json")
    assert started.returncode == 0, started.stderr
    sid = json.loads(started.stdout)["session"]
    listed = json.loads(logkit("session", "list", "--json").stdout)
    assert [(r["id"], r["current"]) for r in listed] == [(sid, True)]
    shown = logkit("session", "show")
    assert "Qwen3.5 on SM120" in shown.stdout


def test_errors_name_the_fix_and_exit_2(logkit, sessions: Path) -> None:
    result = logkit("session", "show")
    assert result.returncode == 2
    assert "no current session" in result.stderr and "logkit session start" in result.stderr


@pytest.mark.slow
def test_schema_command(logkit, tmp_path: Path) -> None:
    kinds = logkit("schema", "--list").stdout
    assert "attempt" in kinds and "decision" in kinds
    one = json.loads(logkit("schema", "outcome").stdout)
    assert "ready" in json.dumps(one)
    assert logkit("schema", "--write", str(tmp_path)).returncode == 0
    assert logkit("schema", "--check", str(tmp_path)).returncode == 0
    (tmp_path / "note.schema.json").write_text("{}")
    assert logkit("schema", "--check", str(tmp_path)).returncode == 1
