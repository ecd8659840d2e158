"""AIX command collectors: hpmstat (PMU counters for SLB/ERAT miss rates) and entstat (per-port
EtherChannel / 802.3ad counters and LACP state for hash skew)."""
