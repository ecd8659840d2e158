"""The CP monitor writer of the integration tests: the demo's (`fleetperf.demo.monwrite`), one copy.

Not an oracle for layouts: it writes per the reader's own table. The unit tests
(tests/unit/test_zvm_monitor.py) build records from IBM's offsets held there as literals instead."""

from fleetperf.demo.monwrite import appldata_os, encode_fields, frames, monreader_stream, monwrite_file, record

__all__ = ["appldata_os", "encode_fields", "frames", "monreader_stream", "monwrite_file", "record"]
