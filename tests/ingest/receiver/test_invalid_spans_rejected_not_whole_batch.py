"""A batch with some broken spans must keep the good ones and report the bad ones (partial_success)."""

from __future__ import annotations

from ingest.otlp.respond import export_response
from ingest.otlp.validate import RejectReason, rejection_message, validate_request


def _spans(req):
    return [s for rs in req.resource_spans for ss in rs.scope_spans for s in ss.spans]


def test_each_kind_of_bad_id_is_rejected_and_good_spans_kept(make_request) -> None:
    req = make_request(7)
    spans = _spans(req)
    good_names = {spans[0].name, spans[6].name}
    spans[1].trace_id = b"abc"
    spans[2].span_id = b""
    spans[3].parent_span_id = b"\x01" * 5
    spans[4].trace_id = bytes(16)
    spans[5].span_id = bytes(8)
    spans[6].end_time_unix_nano = spans[6].start_time_unix_nano - 1  # end before start: kept

    result = validate_request(req)

    assert result.accepted == 2 and result.rejected == 5
    assert {s.name for s in _spans(result.request)} == good_names
    assert [r.reason for r in result.rejections] == [
        RejectReason.INVALID_TRACE_ID,
        RejectReason.INVALID_SPAN_ID,
        RejectReason.INVALID_PARENT_SPAN_ID,
        RejectReason.INVALID_TRACE_ID,
        RejectReason.INVALID_SPAN_ID,
    ]
    response = export_response(result.rejections)
    assert response.partial_success.rejected_spans == 5
    assert "invalid_trace_id" in response.partial_success.error_message
    assert "got 3" in response.partial_success.error_message


def test_all_valid_request_is_untouched_and_answer_has_no_partial_success(make_request) -> None:
    req = make_request(4)
    before = req.SerializeToString()
    result = validate_request(req)
    assert result.accepted == 4 and result.rejected == 0
    assert result.request.SerializeToString() == before
    assert not export_response(result.rejections).HasField("partial_success")


def test_rejection_message_stays_bounded(make_request) -> None:
    req = make_request(3000)
    for s in _spans(req):
        s.trace_id = b"x"
    result = validate_request(req)
    assert result.rejected == 3000 and result.accepted == 0
    assert len(rejection_message(result.rejections)) <= 1000
