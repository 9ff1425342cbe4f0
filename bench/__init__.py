"""steplens benchmarks: `python -m bench` runs every `bench/*_bench.py` that has a `main()`.

Speed claims live here, never in timed unit tests; figures and the commands that produced them
are recorded in docs/benchmarks.md.
"""
