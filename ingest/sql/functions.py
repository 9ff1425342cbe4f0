"""The functions a `POST /api/sql` query may call: an allow-list, never a deny-list.

Why an allow-list: DuckDB keeps adding functions that reach outside the data (`read_csv`, `glob`,
`getenv`, `query`, `current_setting`, `duckdb_*`, extensions' table functions). Anything not named
here is refused, so a new DuckDB release cannot open a hole. Also left out on purpose: functions
whose output size is an argument (`repeat`, `lpad`, `rpad`, `range`, `generate_series`,
`format`/`printf` widths), which turn a 20-byte query into gigabytes, and `list_aggregate`, which
calls a function named by a string argument.

sqlglot parses many functions into its own classes under a canonical name (`quantile_cont` becomes
`PercentileCont`, `list` becomes `ArrayAgg`), so the allowed names are also parsed once, here, to
learn which classes they stand for; a call is allowed when it is an unknown-to-sqlglot function
with an allowed name, or an instance of one of those classes.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

_NAMES = """
    count sum avg mean min max median mode quantile quantile_cont quantile_disc approx_quantile
    approx_count_distinct stddev stddev_pop stddev_samp var_pop var_samp variance corr covar_pop covar_samp
    regr_slope regr_intercept arg_max arg_min argmax argmin max_by min_by first last any_value list array_agg
    string_agg group_concat bool_and bool_or count_if countif histogram product entropy kurtosis skewness fsum favg
    row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value nth_value
    abs ceil ceiling floor round sqrt cbrt exp ln log log2 log10 pow power sign greatest least trunc isnan isinf
    isfinite even gcd lcm factorial degrees radians pi sin cos tan asin acos atan atan2
    coalesce nullif ifnull if iif
    length lower upper trim ltrim rtrim substr substring left right replace concat concat_ws contains starts_with
    ends_with prefix suffix strpos instr position split_part string_split str_split string_split_regex
    regexp_matches regexp_full_match regexp_extract regexp_extract_all regexp_replace regexp_split_to_array
    lcase ucase reverse md5 hash sha256 strlen len ascii chr like_escape ilike_escape translate
    date_trunc datetrunc date_part datepart extract epoch epoch_ms epoch_us epoch_ns strftime strptime try_strptime
    to_timestamp make_date make_timestamp now current_timestamp current_date get_current_timestamp age date_diff
    datediff date_sub datesub date_add time_bucket dayname monthname year month day hour minute second
    millisecond microsecond week weekday weekofyear dayofweek dayofmonth dayofyear isodow isoyear quarter
    yearweek last_day to_seconds to_milliseconds to_minutes to_hours to_days
    json_extract json_extract_string json_extract_path json_extract_path_text json_value json_exists json_keys
    json_type json_array_length json_valid json_contains json_structure to_json json_object json_array
    json_group_array json_group_object json_quote json
    list_value list_extract list_element list_contains list_has array_contains list_has_any list_has_all
    array_length list_sort array_sort list_reverse_sort list_distinct array_distinct list_unique list_transform
    array_transform list_apply apply list_filter array_filter filter list_reduce reduce unnest flatten list_slice
    array_slice list_position list_indexof array_position array_to_string list_count list_sum
    list_min list_max list_avg list_first list_last
    struct_extract struct_pack row
    typeof try_cast cast
"""
ALLOWED_FUNCTIONS: frozenset[str] = frozenset(_NAMES.split())

# Constructs sqlglot represents as function nodes though the user wrote syntax, not a call:
# `x::INT`, `CASE`, `AND`/`OR`, `EXISTS (...)`, `[1, 2]`, `{'a': 1}`, `MAP {...}`, `x -> '$.a'`,
# `x ->> '$.a'`, `DATE '2025-01-01'`, `COLUMNS('re')`, `FROM t, unnest(t.list)`.
_SYNTAX: tuple[type[exp.Func], ...] = (
    exp.Cast, exp.TryCast, exp.Case, exp.If, exp.And, exp.Or, exp.Xor, exp.Exists, exp.Array, exp.Struct,
    exp.ToMap, exp.Extract, exp.JSONExtract, exp.JSONExtractScalar, exp.CurrentTimestamp, exp.CurrentDate,
    exp.Columns, exp.Unnest,
)  # fmt: skip

_SAMPLE_ARGS = ("a", "a, b", "a, b, c", "a, 1, 2", "", "hour FROM a", "a AS INT", "'a' IN b")


def _classes_of(names: frozenset[str]) -> frozenset[type[exp.Func]]:
    """The sqlglot classes the allowed names parse into (their calls are recognised by class)."""
    found: set[type[exp.Func]] = set(_SYNTAX)
    for name in names:
        for args in _SAMPLE_ARGS:
            try:
                node = sqlglot.parse_one(f"SELECT {name}({args})", read="duckdb").expressions[0]
            except sqlglot.errors.SqlglotError:
                continue
            while isinstance(node, (exp.IgnoreNulls, exp.RespectNulls, exp.Alias)):
                node = node.this
            if isinstance(node, exp.Func) and not isinstance(node, exp.Anonymous):
                found.add(type(node))
            break
    return frozenset(found)


ALLOWED_CLASSES: frozenset[type[exp.Func]] = _classes_of(ALLOWED_FUNCTIONS)


def function_name(node: exp.Func) -> str:
    """The name a refusal quotes: the function as DuckDB would be asked for it (`lpad`, not sqlglot's `pad`)."""
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    try:
        rendered = node.sql(dialect="duckdb", comments=False)
    except sqlglot.errors.SqlglotError:
        rendered = ""
    head = rendered.split("(", 1)[0].strip()
    return (head if head and "(" in rendered and head.replace("_", "").isalnum() else node.sql_name()).lower()


def is_allowed(node: exp.Func) -> bool:
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower() in ALLOWED_FUNCTIONS
    return type(node) in ALLOWED_CLASSES
