"""The OTel GenAI client metrics: token usage and operation duration, recorded per LLM attempt.

Created through the metrics API, so they cost a no-op call until a meter provider is configured
(globally, or passed to `tracer.setup(meter_provider=...)`).
"""

from __future__ import annotations

from opentelemetry.metrics import Meter

from tracer.conventions import (
    ERROR_TYPE,
    GEN_AI_OPERATION_NAME,
    GEN_AI_PROVIDER_NAME,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_RESPONSE_MODEL,
    GEN_AI_TOKEN_TYPE,
    METRIC_OPERATION_DURATION,
    METRIC_TOKEN_USAGE,
)

# Bucket boundaries recommended by the GenAI semantic conventions.
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)

TOKEN_TYPE_INPUT = "input"
TOKEN_TYPE_OUTPUT = "output"


class GenAIMetrics:
    """The two instruments, created once per meter."""

    __slots__ = ("duration", "tokens")

    def __init__(self, meter: Meter) -> None:
        self.tokens = meter.create_histogram(
            METRIC_TOKEN_USAGE,
            unit="{token}",
            description="Number of input and output tokens used per LLM call",
            explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
        )
        self.duration = meter.create_histogram(
            METRIC_OPERATION_DURATION,
            unit="s",
            description="Duration of one LLM call (one attempt)",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )

    def record(
        self,
        *,
        operation: str,
        provider: str | None,
        request_model: str | None,
        response_model: str | None,
        duration_s: float,
        input_tokens: int | None,
        output_tokens: int | None,
        error_type: str | None,
    ) -> None:
        attrs: dict[str, str] = {GEN_AI_OPERATION_NAME: operation}
        if provider:
            attrs[GEN_AI_PROVIDER_NAME] = provider
        if request_model:
            attrs[GEN_AI_REQUEST_MODEL] = request_model
        if response_model:
            attrs[GEN_AI_RESPONSE_MODEL] = response_model
        if error_type:
            attrs[ERROR_TYPE] = error_type
        self.duration.record(duration_s, attrs)
        if input_tokens is not None:
            self.tokens.record(input_tokens, {**attrs, GEN_AI_TOKEN_TYPE: TOKEN_TYPE_INPUT})
        if output_tokens is not None:
            self.tokens.record(output_tokens, {**attrs, GEN_AI_TOKEN_TYPE: TOKEN_TYPE_OUTPUT})
