"""The answer of `POST /api/sql` as the dashboards read it (the JSON format, design.md §4 "SQL")."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class SqlColumn(BaseModel):
    name: str
    type: str


class SqlAnswer(BaseModel):
    columns: list[SqlColumn] = Field(default_factory=list)
    rows: list[list[Any]] = Field(default_factory=list)
    row_count: int = 0
    truncated: bool = False
    truncated_by: str | None = None
    error: str | None = None

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def numeric(self) -> list[str]:
        """Columns a y axis can take (DuckDB's numeric types)."""
        kinds = ("INT", "DOUBLE", "FLOAT", "DECIMAL", "REAL", "NUMERIC")
        return [c.name for c in self.columns if any(k in c.type.upper() for k in kinds)]


class SqlView(BaseModel):
    name: str
    doc: str = ""
    columns: list[SqlColumn] = Field(default_factory=list)


class SqlExample(BaseModel):
    title: str
    sql: str


class SqlCatalog(BaseModel):
    """`GET /api/sql/views`: what a query may use, and example queries."""

    views: list[SqlView] = Field(default_factory=list)
    functions: list[str] = Field(default_factory=list)
    examples: list[SqlExample] = Field(default_factory=list)
    limits: dict[str, float] = Field(default_factory=dict)
