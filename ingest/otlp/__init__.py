"""OTLP trace and logs export handling shared by the HTTP and gRPC receivers: decode, validate, answer.

Both transports run the same path (decode -> validate -> store.submit) so that a span accepted or
rejected over HTTP is accepted or rejected the same way over gRPC.
"""
