"""Evaluation datasets for the example agents (JSONL, shipped with the package).

`TICKET_EVAL` is the ticket agent's 60-case set; `build_ticket_eval` regenerates it from the
example shop, so the expectations always match the shop's data.
"""

from pathlib import Path

HERE = Path(__file__).parent
TICKET_EVAL = HERE / "ticket_eval.jsonl"
