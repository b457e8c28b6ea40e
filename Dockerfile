# thunder-lint's HTTP service. The image holds only what serving needs: the analyzer, the rules, the
# server and their dependencies (libcst, pathspec, and the `server` extra: fastapi, uvicorn), each pinned to the
# version the test suite ran with; torch and the compiler are not installed,
# because the service only parses submitted source and never runs it.
#
#   docker build -t thunder-lint .
#   docker run -p 8000:8000 -e THUNDER_LINT_TOKEN=... thunder-lint
# A fixed Python and Debian release: a rebuild next month gets the same base.
FROM python:3.11.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
# The service's own dependencies: pyproject's [project].dependencies and its `server` extra, pinned (a test keeps
# the names equal and each pin inside pyproject's range; torch is only the `torch` extra).
RUN pip install "libcst==1.9.0" "pathspec==1.1.1" "fastapi==0.165.0" "uvicorn==0.55.0" "prometheus-client==0.26.0"
COPY pyproject.toml README.md ./
COPY analyzer ./analyzer
COPY rules ./rules
COPY server ./server
# --no-deps: its dependencies are the ones installed just above.
RUN pip install --no-deps . \
    && rm -rf /src \
    && useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin thunder

WORKDIR /
# A numeric user: Kubernetes' runAsNonRoot can only verify a UID, and refuses an image whose USER is a name.
USER 10001:10001
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]
CMD ["thunder-lint", "serve", "--host", "0.0.0.0", "--port", "8000"]
