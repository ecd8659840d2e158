"""What several commands share: the exit-status text, the reachability check of the stack."""

from __future__ import annotations

import sys

from fleetperf import config

EPILOG = "Settings: config/fleetperf.toml; override any key with FLEETPERF__SECTION__KEY=value."
EXIT_EPILOG = (
    "exit status: 0 clean; 1 a file could not be read at all (named on stderr, dead-lettered; the others"
    " were published); 2 wrong command line; 3 some records were bad input (dead letters, everything else"
    " published); 4 Kafka or the schema registry not reachable (nothing published; start the stack:"
    " ./fleetperf up).\n" + EPILOG
)


class StackUnreachableError(ConnectionError):
    pass


def stack_unreachable() -> tuple[type[BaseException], ...]:
    """Errors that mean the stack is down rather than the input bad."""
    errors: list[type[BaseException]] = [StackUnreachableError, ConnectionError]
    # httpx's errors only when something imported httpx (the registry library's client): nothing
    # else raises them, and importing it here cost every command 0.1 s of start-up (its CLI module
    # loads rich and click), 7 ingests of a fleet's sources 0.7 CPU-s
    httpx = sys.modules.get("httpx")
    if httpx is not None:
        errors += [httpx.ConnectError, httpx.ConnectTimeout]
    return tuple(errors)


def check_stack(s: config.Settings, timeout: float = 3.0) -> None:
    """Fails fast, with one message, when Kafka's bootstrap address or the registry does not answer
    (instead of librdkafka's retry lines and a client traceback)."""
    import socket  # on use: every command imports this module, few probe the stack
    import urllib.error
    import urllib.request

    # any broker of the list will do: a client started while one broker of a cluster is down
    # still finds the others (librdkafka bootstraps from whichever answers)
    brokers = [b.strip() for b in s.bootstrap.split(",") if b.strip()]
    errors = []
    for broker in brokers:
        host, _, port = broker.rpartition(":")
        try:
            with socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=timeout):
                break
        except (OSError, ValueError) as exc:
            errors.append(f"{broker}: {getattr(exc, 'strerror', None) or exc}")
    else:
        raise StackUnreachableError(f"Kafka at {'; '.join(errors) or s.bootstrap}")
    try:
        urllib.request.urlopen(f"{s.registry_url}/subjects", timeout=timeout).close()
    except urllib.error.HTTPError:
        pass  # it answered (authentication or the like is the client's business)
    except (OSError, ValueError) as exc:
        raise StackUnreachableError(f"schema registry at {s.registry_url}: {exc}") from exc
