"""The demo's hand-off policies: which example-agent runs reach a person, and how.

Every example agent hands runs that end on an outage, the step limit or a replanning breaker to
tier 2 (`catalog.DEMO_HANDOFF`). In the demo the ticket agent's policy also names an escalation
tool, `transfer_to_human`: the model calls it for tickets it must not answer itself (a customer
threatening legal action), so the Overview's hand-off rate has model-called hand-offs (reason
`escalation`) next to the stop-reason ones.
"""

from __future__ import annotations

import dataclasses

from kernel.examples.catalog import DEMO_HANDOFF
from kernel.examples.ticket import TRANSFER_TOOL
from kernel.handoff import HandoffPolicy

TICKET_HANDOFF: HandoffPolicy = dataclasses.replace(DEMO_HANDOFF, escalation_tool=TRANSFER_TOOL)
