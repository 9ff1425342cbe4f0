# steplens: one image for `steplens serve` (ingest + query API) and `steplens ui` (dashboards).
# Build: docker build -t steplens .    Run: see docker-compose.yml and docs/deploy.md.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# A fixed non-root uid, so a bind-mounted data directory can be given to it (chown 10001).
# /data is created here, owned by that user, so a named volume mounted on it starts writable.
RUN groupadd --system --gid 10001 steplens \
 && useradd --system --uid 10001 --gid steplens --home-dir /home/steplens --create-home steplens \
 && mkdir /data && chown steplens:steplens /data

WORKDIR /src
# Metadata first: the dependency layer is rebuilt only when pyproject.toml changes.
COPY pyproject.toml README.md ./
RUN mkdir kernel tracer ingest dashboards steplens \
 && touch kernel/__init__.py tracer/__init__.py ingest/__init__.py dashboards/__init__.py steplens/__init__.py \
 && pip install . && pip uninstall -y steplens
COPY kernel/ kernel/
COPY tracer/ tracer/
COPY ingest/ ingest/
COPY dashboards/ dashboards/
COPY steplens/ steplens/
RUN pip install --no-deps . && rm -rf /src

USER steplens
WORKDIR /home/steplens
ENV STEPLENS_DB=/data/steplens.duckdb
VOLUME ["/data"]
# 4318 OTLP/HTTP + query API, 4317 OTLP/gRPC, 8501 dashboards (`steplens ui`).
EXPOSE 4318 4317 8501

HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=5 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:4318/healthz', timeout=3)"]

ENTRYPOINT ["steplens"]
# Beyond loopback the server requires API keys (STEPLENS_API_KEYS); without them it exits with a clear message.
CMD ["serve", "--host", "0.0.0.0"]
