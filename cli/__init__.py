"""The `fleetperf` command line."""
