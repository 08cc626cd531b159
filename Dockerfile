# MAIL server image: `docker build -t mail .` then `docker run -p 8000:8000 mail`.
# See docs/docker.md.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PYTHON_DOWNLOADS=never

RUN pip install --no-cache-dir uv \
    && groupadd --gid 10001 mail \
    && useradd --uid 10001 --gid mail --create-home --shell /usr/sbin/nologin mail \
    && mkdir -p /app/registries /data \
    && chown -R mail:mail /app /data

WORKDIR /app
USER mail

# Dependencies first, so that code changes do not invalidate this layer. The `cluster`
# extra (the redis client) lets the same image run as a replica (docker-compose.cluster.yml).
COPY --chown=mail:mail pyproject.toml uv.lock README.md ./
RUN uv sync --locked --no-dev --extra cluster --no-install-project

COPY --chown=mail:mail src/ ./src/
COPY --chown=mail:mail swarms.json mail.toml ./
COPY --chown=mail:mail spec/ ./spec/
# Not editable: the package goes into the environment with its bytecode compiled
# (UV_COMPILE_BYTECODE), so a start loads it instead of compiling it.
RUN uv sync --locked --no-dev --extra cluster --no-editable

# MAIL_PORT is the port the server listens on and the one the health check asks: change it
# with `docker run -e MAIL_PORT=9000 -p 9000:9000 ...`, not with a -p flag of the command.
ENV MAIL_DATA_DIR=/data \
    MAIL_PORT=8000 \
    PATH="/app/.venv/bin:${PATH}"

# /data: keys, the task store and the registry of peer swarms; /app/registries: registries
# of the previous release (seed 002 mounts `-v ./registries:/app/registries`), still read.
VOLUME ["/data", "/app/registries"]
EXPOSE 8000

HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD python -c "import os, sys, urllib.request; port = os.environ.get('MAIL_PORT') or '8000'; sys.exit(0 if urllib.request.urlopen(f'http://127.0.0.1:{port}/health', timeout=4).status == 200 else 1)"

CMD ["mail", "server", "-c", "/app/mail.toml", "-H", "0.0.0.0"]
