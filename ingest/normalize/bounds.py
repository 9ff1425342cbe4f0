"""The last guard on a normalized table's numbers: every integer column within ±MAX_COUNT and every
cost column within [0, MAX_COST_USD], whatever code path produced the value.

Why a table-level pass on top of the coercions in values.py: promoted numbers come from many
conventions (each new one adds a parser), and one value that slips past its parser unbounded (a
sum of token parts, a client-reported cost of 1e300) is enough to overflow a BIGINT or
DECIMAL(38, 12) sum later, failing a load or the analytics upkeep over and over. Here it costs one
vectorized min/max per integer column (a mask per cost column); values outside are nulled and tallied like the others.
"""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pyarrow.compute as pc

from ingest.normalize.values import MAX_COST_USD, MAX_COUNT, OUT_OF_RANGE_COST, OUT_OF_RANGE_COUNT

_COST_SUFFIX = "cost_usd"
# Integer columns that are not counts (none yet: times are TIMESTAMP columns); a column holding,
# say, raw nanoseconds would be listed here so that it is not held to MAX_COUNT.
NOT_COUNTS: frozenset[str] = frozenset()


def bound_table(table: pa.Table, nulled: Counter[str]) -> pa.Table:
    """`table` with out-of-range numbers nulled (counted into `nulled` by kind)."""
    for i, field in enumerate(table.schema):
        column = table.column(i)
        if pa.types.is_integer(field.type) and field.name not in NOT_COUNTS:
            low, high, kind = -MAX_COUNT, MAX_COUNT, OUT_OF_RANGE_COUNT
        elif pa.types.is_floating(field.type) and field.name.endswith(_COST_SUFFIX):
            low, high, kind = 0.0, MAX_COST_USD, OUT_OF_RANGE_COST
        else:
            continue
        if column.null_count == len(column):
            continue
        if kind is OUT_OF_RANGE_COUNT:
            # One min/max kernel settles the usual case (all inside) of an integer column; the mask
            # below costs four more kernels. Floats keep the mask: min/max skips NaN, which is outside.
            extremes = pc.min_max(column)
            if low <= extremes["min"].as_py() and extremes["max"].as_py() <= high:
                continue
        inside = pc.and_(pc.greater_equal(column, low), pc.less_equal(column, high))  # nan: False
        outside = pc.sum(pc.invert(inside)).as_py() or 0
        if outside:
            bounded = pc.if_else(inside, column, pa.scalar(None, field.type))
            table = table.set_column(i, field, bounded)
            nulled[kind] += outside
    return table
