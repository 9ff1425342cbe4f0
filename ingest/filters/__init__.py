"""Filter expressions (`filter=` on /api/runs and /api/spans): a grammar, and a compiler to
parameterized SQL over the runs and spans tables. See design.md §4 "Filter expressions"."""
