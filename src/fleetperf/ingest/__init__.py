"""Collectors: read a source's files and turn them into Avro records (dicts shaped by schemas/)."""
