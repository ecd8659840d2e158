# fleetperf's Python parts (CLI, collectors, warehouse: sink + Superset) for docker-compose.yml (draft).
FROM python:3.11-slim
WORKDIR /app
COPY requirements/ requirements/
RUN python -m venv .venv && .venv/bin/pip install --no-cache-dir \
    -r requirements/superset.lock.txt -r requirements/fleetperf.txt
COPY . .
# the launcher's "requirements installed" stamp, so ./fleetperf does not reinstall
RUN cat requirements/superset.lock.txt requirements/fleetperf.txt | sha256sum | cut -c1-16 > .venv/.fleetperf-requirements
ENTRYPOINT []
