"""Whatever parser produced a promoted number, the normalized table holds no integer beyond
±MAX_COUNT and no cost outside [0, MAX_COST_USD]: the table-level guard nulls and counts what a
convention's parser let through (a sum of token parts, a client-reported cost of 1e300), so no
BIGINT / DECIMAL(38, 12) sum downstream can overflow."""

from __future__ import annotations

from collections import Counter
from datetime import datetime

import pyarrow as pa

from ingest.normalize.bounds import bound_table
from ingest.normalize.columns import SPANS_SCHEMA
from ingest.normalize.table import rows_to_table, spans_table
from ingest.normalize.values import MAX_COST_USD, MAX_COUNT, out_of_range_counts
from tests.ingest.receiver.conftest import sample_request


def test_every_integer_and_cost_column_is_bounded() -> None:
    table = spans_table("p", sample_request(3), datetime(2026, 1, 1))
    ints = [f.name for f in SPANS_SCHEMA if pa.types.is_integer(f.type)]
    costs = [f.name for f in SPANS_SCHEMA if pa.types.is_floating(f.type) and f.name.endswith("cost_usd")]
    assert {"input_tokens", "output_tokens", "step_index", "dropped_tokens"} <= set(ints) and "cost_usd" in costs
    # what a too-lenient parser could have produced, in every such column of every row
    for name in ints:
        i = table.schema.get_field_index(name)
        values = [MAX_COUNT + 1, MAX_COUNT, None] if table.schema.field(i).type == pa.int64() else [2**31 - 1, 7, None]
        table = table.set_column(i, table.schema.field(i), pa.array(values, table.schema.field(i).type))
    for name in costs:
        i = table.schema.get_field_index(name)
        table = table.set_column(i, table.schema.field(i), pa.array([1e300, MAX_COST_USD, float("nan")]))

    nulled: Counter[str] = Counter()
    bounded = bound_table(table, nulled)
    for name in ints:
        assert bounded.column(name).to_pylist()[0] is None and bounded.column(name).to_pylist()[1] is not None
    for name in costs:
        assert bounded.column(name).to_pylist() == [None, MAX_COST_USD, None]
    assert nulled == {"count": len(ints), "cost_usd": 2 * len(costs)}
    assert bounded.column("start_time") == table.column("start_time")  # timestamps are not counts


def test_a_clean_table_is_left_as_it_is() -> None:
    table = rows_to_table([])
    assert bound_table(table, Counter()) is table
    normal = spans_table("p", sample_request(5), datetime(2026, 1, 1))
    assert out_of_range_counts(normal) == {}
