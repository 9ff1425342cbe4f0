"""Reading the compose files as docker compose would, without docker: `${VAR}` interpolation of the
forms the files use, and steplens command lines parsed by the real typer/click command tree (an
unknown flag raises), so the tests check the files against the code, not against a copy of it."""

from __future__ import annotations

import re

import typer

from steplens.cli import app

_VAR = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:-|:\?)(?P<arg>[^}]*))?\}")


class MissingVariable(Exception):
    pass


def interpolate(value: object, env: dict[str, str]) -> object:
    """Compose's `${VAR}`, `${VAR:-default}` and `${VAR:?error}` (the forms these files use)."""
    if isinstance(value, dict):
        return {k: interpolate(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    if not isinstance(value, str):
        return value

    def one(m: re.Match[str]) -> str:
        name, op, arg = m["name"], m["op"], m["arg"]
        if env.get(name):
            return env[name]
        if op == ":-":
            return arg
        raise MissingVariable(f"{name}: {arg}" if op == ":?" else name)

    return _VAR.sub(one, value)


def variables(text: str) -> list[re.Match[str]]:
    return list(_VAR.finditer(text))


def parse(argv: list[str]) -> tuple[str, dict]:
    """Parse a steplens command line with the real click command tree; unknown flags raise."""
    root = typer.main.get_command(app)
    assert hasattr(root, "commands"), root
    command = root.commands[argv[0]]
    ctx = command.make_context(argv[0], list(argv[1:]))
    return argv[0], ctx.params


def container_ports(service: dict) -> set[int]:
    return {int(str(p).rsplit(":", 1)[1].split("/")[0]) for p in service.get("ports", [])}
