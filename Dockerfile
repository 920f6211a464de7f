# One image per service: docker build --build-arg SERVICE=scheduler .
FROM python:3.11-slim

ARG SERVICE
RUN test -n "$SERVICE" || (echo "build with --build-arg SERVICE=<gateway|scheduler|agent_runtime|tool_sandbox|review>" && false)

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    HEYM_SERVICE=${SERVICE}

WORKDIR /app
COPY pyproject.toml README.md ./
COPY contracts ./contracts
COPY libs ./libs
COPY services ./services
COPY docs ./docs
RUN pip install . && useradd --system --uid 10001 heym
USER heym

CMD ["sh", "-c", "exec python -m services.${HEYM_SERVICE}"]
