# fleetperf's Python parts (CLI, collectors, warehouse: sink + SQL endpoint + Superset), for
# docker-compose.yml and the testcontainers provider (tests/providers/containers.py).
#
# The base images are arguments (config/images.toml): the official python:3.11-slim and
# rust:1-slim-bookworm by default; docker/build-images.sh passes the images it builds from Debian's
# packages where no image registry is reachable (FLEETPERF_IMAGES=local).
ARG PYTHON_IMAGE=python:3.11-slim
ARG RUST_IMAGE=rust:1-slim-bookworm

# the native nmon scanner (src/fleetperf/sources/nmon/native), built as an abi3 wheel for Python >= 3.11
FROM ${RUST_IMAGE} AS nmon-scan
RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-venv \
    && python3 -m venv /build && /build/bin/pip install --no-cache-dir "maturin>=1.7,<2"
COPY src/fleetperf/sources/nmon/native /src
RUN /build/bin/maturin build --release --manifest-path /src/Cargo.toml --out /wheels

FROM ${PYTHON_IMAGE}
WORKDIR /app
COPY requirements/ requirements/
RUN python -m venv .venv && .venv/bin/pip install --no-cache-dir \
    -r requirements/superset.lock.txt -r requirements/fleetperf.txt
COPY --from=nmon-scan /wheels /wheels
RUN .venv/bin/pip install --no-cache-dir /wheels/*.whl
COPY . .
# the launcher's "requirements installed" stamp, so ./fleetperf does not reinstall
RUN cat requirements/superset.lock.txt requirements/fleetperf.txt | sha256sum | cut -c1-16 > .venv/.fleetperf-requirements \
    && N=src/fleetperf/sources/nmon/native && cat $N/Cargo.toml $N/Cargo.lock $N/pyproject.toml $N/src/*.rs | sha256sum | cut -c1-16 \
    > .venv/.fleetperf-nmon-scan
# what ./fleetperf sets for the CLI, for commands that start Python directly (compose's setup service)
ENV PYTHONPATH=/app/src:/app
ENTRYPOINT []
