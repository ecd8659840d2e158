"""Pieces every part of fleetperf shares: settings, schemas, Kafka/registry plumbing."""
