"""nmon collector (AIX topas_nmon and Linux nmon files)."""

from fleetperf.sources.nmon.parser import NmonParser, parse_file

__all__ = ["NmonParser", "parse_file"]
