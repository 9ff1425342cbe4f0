"""The parsed form of a filter expression: small frozen nodes the compiler walks.

Why an AST of our own (not lark's tree): the compiler, the depth check and the error messages need
typed nodes that carry the position of the token they came from, and nothing of the parser library.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Pos:
    """1-based line and column of a token in the filter text, and its character offset."""

    line: int
    column: int
    offset: int


@dataclass(frozen=True)
class Column:
    """A promoted column named bare (`tool_name`, `cost_usd`); `span.` forces the span's column."""

    name: str
    pos: Pos
    span: bool = False


@dataclass(frozen=True)
class Attribute:
    """`attributes["gen_ai.tool.name"]`: one key of the span's attributes JSON."""

    key: str
    pos: Pos


Field = Column | Attribute


@dataclass(frozen=True)
class Literal:
    """A value as written: a string, a finite number or a boolean."""

    value: str | float | bool
    pos: Pos


@dataclass(frozen=True)
class Compare:
    field: Field
    op: str  # = != > >= < <=
    value: Literal


@dataclass(frozen=True)
class Contains:
    field: Field
    value: Literal  # a string


@dataclass(frozen=True)
class Exists:
    field: Field


@dataclass(frozen=True)
class In:
    field: Field
    values: tuple[Literal, ...]


@dataclass(frozen=True)
class Search:
    """`search("timeout")`: full-text match on the span's content (ingest/search)."""

    text: str
    pos: Pos


@dataclass(frozen=True)
class And:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Or:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Not:
    item: Node


Node = Compare | Contains | Exists | In | Search | And | Or | Not
Term = Compare | Contains | Exists | In | Search
