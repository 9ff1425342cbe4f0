"""The `steplens` console script and process orchestration.

This small package sits outside kernel/, tracer/, ingest/ and dashboards/ so that it may
dispatch to all of them without any of them importing the others (design.md §1).
"""
