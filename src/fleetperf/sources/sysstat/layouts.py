"""sysstat data file layouts, described once as tables; `reader.py` is driven by them.

Facts from sysstat's sa.h / sa_conv.h / rd_stats.h (format_magic 0x2171: 9.1.6-10.2.1,
0x2173: 10.3.1-11.6.x, 0x2175: 11.7.1 onward). Two kinds of statistics layouts exist:

* 0x2175 files describe every structure by its counts of (unsigned long long, unsigned long,
  unsigned int) fields; sysstat groups the fields of one kind together in that order, so a field is
  "the n-th ULL / UL / U" and an older or newer struct of the same activity magic simply has fewer or
  more of each (missing ones read as 0, extra ones are skipped). `GROUPED` names them.
* 0x2171/0x2173 files carry no description: their structs were written with GCC alignment
  attributes (each ULL on 16 bytes, each UL on 8 ...). `ALIGNED` lists fields with their C type and
  alignment; offsets are computed like the compiler did, and a struct shorter than the table (an
  older sysstat) ends the field list.
"""

from __future__ import annotations

from dataclasses import dataclass

SYSSTAT_MAGIC = 0xD596
FORMAT_2170 = 0x2170  # 9.1.5 and older: refused, as sar does
FORMAT_2171 = 0x2171
FORMAT_2173 = 0x2173
FORMAT_2175 = 0x2175
SUPPORTED_FORMATS = (FORMAT_2171, FORMAT_2173, FORMAT_2175)

# Record types (record_header.record_type)
R_STATS = 1
R_RESTART = 2
R_LAST_STATS = 3
R_COMMENT = 4
R_EXTRA_MIN, R_EXTRA_MAX = 5, 15
MAX_COMMENT_LEN = 64

UTSNAME_LEN = 65
MAX_IFACE_LEN = 16

# Sanity limits a tainted file is checked against (sa.h)
MAX_FILE_HEADER_SIZE = 8192
MAX_FILE_ACTIVITY_SIZE = 1024
MAX_RECORD_HEADER_SIZE = 512
MAX_NR_ACT = 256
MAX_EXTRA_NR = 8192
MAX_EXTRA_SIZE = 1024
NR_MAX = 65536 * 4096
NR2_MAX = 1024
MAX_ITEM_SIZE = 1 << 16
NR_CPUS = 8192  # common.h
MAX_CPU_NR = NR_CPUS + 1  # "all" + CPUs
# plausible record times: the file header's time from 1 day before to 10 years after (a byte flipped in a
# record's time moves it by 194 days or more, or changes its seconds, which the record header repeats)
MIN_EPOCH = 315532800  # 1980-01-01: no sysstat file is older
MAX_EPOCH = 4102444800  # 2100-01-01
RECORD_TIME_BEFORE = 86400
RECORD_TIME_AFTER = 3660 * 86400
# uptime (1/100 s) and clock (s) of two records of one boot must agree on the interval within this: 1.5 s
# for the clock's whole seconds plus 10 % (an NTP slew); a damaged uptime or time otherwise skews every rate
CLOCK_SLACK_S, CLOCK_SLACK_RATIO = 1.5, 0.10
RESYNC_WINDOW = 16 << 20  # bytes searched for the next whole record after damage

ACTIVITY_NAMES = {
    1: "cpu",
    2: "pcsw",
    3: "irq",
    4: "swap",
    5: "page",
    6: "io",
    7: "memory",
    8: "ktables",
    9: "queue",
    10: "serial",
    11: "disk",
    12: "net_dev",
    13: "net_edev",
    14: "net_nfs",
    15: "net_nfsd",
    16: "net_sock",
    17: "net_ip",
    18: "net_eip",
    19: "net_icmp",
    20: "net_eicmp",
    21: "net_tcp",
    22: "net_etcp",
    23: "net_udp",
    24: "net_sock6",
    25: "net_ip6",
    26: "net_eip6",
    27: "net_icmp6",
    28: "net_eicmp6",
    29: "net_udp6",
    30: "pwr_cpu",
    31: "pwr_fan",
    32: "pwr_temp",
    33: "pwr_in",
    34: "huge",
    35: "pwr_freq",
    36: "pwr_usb",
    37: "filesystem",
    38: "net_fc",
    39: "net_soft",
    40: "psi_cpu",
    41: "psi_io",
    42: "psi_mem",
}
A_CPU, A_PCSW, A_SWAP, A_PAGE, A_MEMORY, A_QUEUE, A_DISK, A_NET_DEV, A_NET_EDEV = 1, 2, 4, 5, 7, 9, 11, 12, 13
A_IRQ, A_IO, A_KTABLES, A_SERIAL, A_NET_NFS, A_NET_NFSD, A_NET_SOCK = 3, 6, 8, 10, 14, 15, 16
A_NET_IP, A_NET_EIP, A_NET_ICMP, A_NET_EICMP, A_NET_TCP, A_NET_ETCP, A_NET_UDP = 17, 18, 19, 20, 21, 22, 23
A_NET_SOCK6, A_NET_IP6, A_NET_EIP6, A_NET_ICMP6, A_NET_EICMP6, A_NET_UDP6 = 24, 25, 26, 27, 28, 29
A_PWR_CPU, A_HUGE, A_FILESYSTEM, A_NET_SOFT, A_PSI_CPU, A_PSI_IO, A_PSI_MEM = 30, 34, 37, 39, 40, 41, 42

# Most items an activity may have in one record (activity.c nr_max; sa.h MAX_NR_*); others NR_MAX
ITEM_MAX = {
    1: MAX_CPU_NR, 3: MAX_CPU_NR, 10: 65536, 11: 65536 * 4096, 12: 65536, 13: 65536, 30: MAX_CPU_NR, 31: 4096,
    32: 4096, 33: 4096, 35: MAX_CPU_NR, 36: 65536, 37: 65536 * 4096, 38: 65536, 39: MAX_CPU_NR,
}  # fmt: skip

# Fields without which an activity's items mean nothing (how sar tells them apart, what its rates divide):
# a description that lacks them (damaged, or a layout we do not know) leaves the activity unread.
REQUIRED = {
    A_CPU: ("user", "nice", "sys", "idle"),
    A_DISK: ("major", "minor", "nr_ios"),
    A_NET_DEV: ("interface", "rx_packets", "tx_packets", "rx_bytes", "tx_bytes"),
    A_NET_EDEV: ("interface",),
    A_SERIAL: ("line",),
    A_FILESYSTEM: ("fs_name", "f_blocks", "f_bfree"),
}

# Activities whose item count follows the CPU count across RESTARTs in 0x2173 files ("volatile").
CPU_FIELDS = ("user", "nice", "sys", "idle", "iowait", "steal", "hardirq", "softirq", "guest", "guest_nice")
MEMORY_FIELDS = (
    "frmkb",
    "bufkb",
    "camkb",
    "tlmkb",
    "frskb",
    "tlskb",
    "caskb",
    "comkb",
    "activekb",
    "inactkb",
    "dirtykb",
    "anonpgkb",
    "slabkb",
    "kstackkb",
    "pgtblkb",
    "vmusedkb",
    "availablekb",
    "shmemkb",
)
PAGE_FIELDS = ("pgpgin", "pgpgout", "pgfault", "pgmajfault", "pgfree", "pgscan_kswapd", "pgscan_direct", "pgsteal")
NET_DEV_FIELDS = ("rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_compressed", "tx_compressed", "multicast")
NET_EDEV_FIELDS = (
    "collisions",
    "rx_errors",
    "tx_errors",
    "rx_dropped",
    "tx_dropped",
    "rx_fifo_errors",
    "tx_fifo_errors",
    "rx_frame_errors",
    "tx_carrier_errors",
)

IO_FIELDS = (
    "dk_drive",
    "dk_drive_rio",
    "dk_drive_wio",
    "dk_drive_rblk",
    "dk_drive_wblk",
    "dk_drive_dio",
    "dk_drive_dblk",
)
NFS_FIELDS = ("nfs_rpccnt", "nfs_rpcretrans", "nfs_readcnt", "nfs_writecnt", "nfs_accesscnt", "nfs_getattcnt")
NFSD_FIELDS = (
    "nfsd_rpccnt", "nfsd_rpcbad", "nfsd_netcnt", "nfsd_netudpcnt", "nfsd_nettcpcnt", "nfsd_rchits", "nfsd_rcmisses",
    "nfsd_readcnt", "nfsd_writecnt", "nfsd_accesscnt", "nfsd_getattcnt",
)  # fmt: skip
IP_FIELDS = (
    "InReceives",
    "ForwDatagrams",
    "InDelivers",
    "OutRequests",
    "ReasmReqds",
    "ReasmOKs",
    "FragOKs",
    "FragCreates",
)
EIP_FIELDS = (
    "InHdrErrors", "InAddrErrors", "InUnknownProtos", "InDiscards", "OutDiscards", "OutNoRoutes", "ReasmFails",
    "FragFails",
)  # fmt: skip
ICMP_FIELDS = (
    "InMsgs", "OutMsgs", "InEchos", "InEchoReps", "OutEchos", "OutEchoReps", "InTimestamps", "InTimestampReps",
    "OutTimestamps", "OutTimestampReps", "InAddrMasks", "InAddrMaskReps", "OutAddrMasks", "OutAddrMaskReps",
)  # fmt: skip
EICMP_FIELDS = (
    "InErrors", "OutErrors", "InDestUnreachs", "OutDestUnreachs", "InTimeExcds", "OutTimeExcds", "InParmProbs",
    "OutParmProbs", "InSrcQuenchs", "OutSrcQuenchs", "InRedirects", "OutRedirects",
)  # fmt: skip
TCP_FIELDS = ("ActiveOpens", "PassiveOpens", "InSegs", "OutSegs")
ETCP_FIELDS = ("AttemptFails", "EstabResets", "RetransSegs", "InErrs", "OutRsts")
UDP_FIELDS = ("InDatagrams", "OutDatagrams", "NoPorts", "InErrors")
IP6_FIELDS = (
    "InReceives6", "OutForwDatagrams6", "InDelivers6", "OutRequests6", "ReasmReqds6", "ReasmOKs6", "InMcastPkts6",
    "OutMcastPkts6", "FragOKs6", "FragCreates6",
)  # fmt: skip
EIP6_FIELDS = (
    "InHdrErrors6", "InAddrErrors6", "InUnknownProtos6", "InTooBigErrors6", "InDiscards6", "OutDiscards6",
    "InNoRoutes6", "OutNoRoutes6", "ReasmFails6", "FragFails6", "InTruncatedPkts6",
)  # fmt: skip
ICMP6_FIELDS = (
    "InMsgs6", "OutMsgs6", "InEchos6", "InEchoReplies6", "OutEchoReplies6", "InGroupMembQueries6",
    "InGroupMembResponses6", "OutGroupMembResponses6", "InGroupMembReductions6", "OutGroupMembReductions6",
    "InRouterSolicits6", "OutRouterSolicits6", "InRouterAdvertisements6", "InNeighborSolicits6",
    "OutNeighborSolicits6", "InNeighborAdvertisements6", "OutNeighborAdvertisements6",
)  # fmt: skip
EICMP6_FIELDS = (
    "InErrors6", "InDestUnreachs6", "OutDestUnreachs6", "InTimeExcds6", "OutTimeExcds6", "InParmProblems6",
    "OutParmProblems6", "InRedirects6", "OutRedirects6", "InPktTooBigs6", "OutPktTooBigs6",
)  # fmt: skip
UDP6_FIELDS = ("InDatagrams6", "OutDatagrams6", "NoPorts6", "InErrors6")
PSI_TOTALS = ("some_total", "full_total")
PSI_AVGS = ("some_10", "some_60", "some_300", "full_10", "full_60", "full_300")


@dataclass(frozen=True)
class Grouped:
    """A 0x2175 struct: names of its ULL, UL and U fields, then char arrays (name, length)."""

    ull: tuple[str, ...] = ()
    ul: tuple[str, ...] = ()
    u: tuple[str, ...] = ()
    chars: tuple[tuple[str, int], ...] = ()


# (activity id, activity magic) -> layout, for 0x2175 files
GROUPED: dict[tuple[int, int], Grouped] = {
    (A_CPU, 0x8B): Grouped(ull=CPU_FIELDS),
    (A_PCSW, 0x8B): Grouped(ull=("context_switch",), ul=("processes",)),
    (A_SWAP, 0x8A): Grouped(ul=("pswpin", "pswpout")),
    (A_PAGE, 0x8A): Grouped(ul=PAGE_FIELDS),
    (A_MEMORY, 0x8B): Grouped(ull=MEMORY_FIELDS),
    (A_QUEUE, 0x8C): Grouped(
        ull=("nr_running", "procs_blocked", "nr_threads"), u=("load_avg_1", "load_avg_5", "load_avg_15")
    ),
    # 12.0 writes (1, 2, 6) of these, 12.1+ (3, 3, 8): fields are appended within each group
    (A_DISK, 0x8C): Grouped(
        ull=("nr_ios", "wwn_0", "wwn_1"),
        ul=("rd_sect", "wr_sect", "dc_sect"),
        u=("rd_ticks", "wr_ticks", "tot_ticks", "rq_ticks", "major", "minor", "dc_ticks", "part_nr"),
    ),
    (A_NET_DEV, 0x8D): Grouped(ull=NET_DEV_FIELDS, u=("speed",), chars=(("interface", MAX_IFACE_LEN), ("duplex", 1))),
    (A_NET_EDEV, 0x8C): Grouped(ull=NET_EDEV_FIELDS, chars=(("interface", MAX_IFACE_LEN),)),
    # rd_stats.h of 12.6.1, checked against that version's sadf -j on a fresh recording (tests/unit)
    (A_IRQ, 0x8C): Grouped(u=("irq_nr",), chars=(("irq_name", 8),)),  # CPUs ("all" first) x interrupts
    (A_IO, 0x8B): Grouped(ull=IO_FIELDS),
    (A_KTABLES, 0x8B): Grouped(ull=("file_used", "inode_used", "dentry_stat", "pty_nr")),
    (A_SERIAL, 0x8B): Grouped(u=("rx", "tx", "frame", "parity", "brk", "overrun", "line")),
    (A_NET_NFS, 0x8A): Grouped(u=NFS_FIELDS),
    (A_NET_NFSD, 0x8A): Grouped(u=NFSD_FIELDS),
    (A_NET_SOCK, 0x8A): Grouped(u=("sock_inuse", "tcp_inuse", "tcp_tw", "udp_inuse", "raw_inuse", "frag_inuse")),
    (A_NET_IP, 0x8C): Grouped(ull=IP_FIELDS),
    (A_NET_EIP, 0x8C): Grouped(ull=EIP_FIELDS),
    (A_NET_ICMP, 0x8A): Grouped(ul=ICMP_FIELDS),
    (A_NET_EICMP, 0x8A): Grouped(ul=EICMP_FIELDS),
    (A_NET_TCP, 0x8A): Grouped(ul=TCP_FIELDS),
    (A_NET_ETCP, 0x8A): Grouped(ul=ETCP_FIELDS),
    (A_NET_UDP, 0x8A): Grouped(ul=UDP_FIELDS),
    (A_NET_SOCK6, 0x8A): Grouped(u=("tcp6_inuse", "udp6_inuse", "raw6_inuse", "frag6_inuse")),
    (A_NET_IP6, 0x8C): Grouped(ull=IP6_FIELDS),
    (A_NET_EIP6, 0x8C): Grouped(ull=EIP6_FIELDS),
    (A_NET_ICMP6, 0x8A): Grouped(ul=ICMP6_FIELDS),
    (A_NET_EICMP6, 0x8A): Grouped(ul=EICMP6_FIELDS),
    (A_NET_UDP6, 0x8A): Grouped(ul=UDP6_FIELDS),
    (A_PWR_CPU, 0x8A): Grouped(ul=("cpufreq",)),
    (A_HUGE, 0x8B): Grouped(ull=("frhkb", "tlhkb", "rsvdhkb", "surphkb")),
    (A_FILESYSTEM, 0x8B): Grouped(
        ull=("f_blocks", "f_bfree", "f_bavail", "f_files", "f_ffree"), chars=(("fs_name", 128), ("mountp", 128))
    ),
    (A_NET_SOFT, 0x8A): Grouped(
        u=("processed", "dropped", "time_squeeze", "received_rps", "flow_limit", "backlog_len")
    ),
    (A_PSI_CPU, 0x8A): Grouped(ull=("some_total",), ul=("some_10", "some_60", "some_300")),
    (A_PSI_IO, 0x8A): Grouped(ull=PSI_TOTALS, ul=PSI_AVGS),
    (A_PSI_MEM, 0x8A): Grouped(ull=PSI_TOTALS, ul=PSI_AVGS),
}

# C types of the old formats: (size, default alignment); "ul" depends on the file's sizeof(long)
ULL, UL, U, CHAR = "ull", "ul", "u", "char"


@dataclass(frozen=True)
class Field:
    name: str
    ctype: str
    align: int | None = None  # __attribute__((aligned(n))); None = natural alignment
    length: int = 1  # char arrays


def _each(names: tuple[str, ...], ctype: str, align: int | None) -> tuple[Field, ...]:
    return tuple(Field(n, ctype, align) for n in names)


_QUEUE_LOADS = (Field("load_avg_1", U, 8), Field("load_avg_5", U), Field("load_avg_15", U), Field("nr_threads", U))

# (activity id, activity magic) -> fields, for 0x2171 and 0x2173 files (sa_conv.h *_8a/_8b/_8c)
ALIGNED: dict[tuple[int, int], tuple[Field, ...]] = {
    (A_CPU, 0x8A): _each(CPU_FIELDS, ULL, 16),
    (A_PCSW, 0x8A): (Field("context_switch", ULL, 16), Field("processes", UL, 16)),
    (A_SWAP, 0x8A): _each(("pswpin", "pswpout"), UL, 8),
    (A_PAGE, 0x8A): _each(PAGE_FIELDS, UL, 8),
    (A_MEMORY, 0x8A): _each(MEMORY_FIELDS[:17], UL, 8),
    (A_QUEUE, 0x8A): (Field("nr_running", UL, 8), *_QUEUE_LOADS),
    (A_QUEUE, 0x8B): (Field("nr_running", UL, 8), Field("procs_blocked", UL, 8), *_QUEUE_LOADS),
    (A_DISK, 0x8A): (
        Field("rd_sect", ULL, 16),
        Field("wr_sect", ULL, 16),
        Field("rd_ticks", UL, 16),
        *_each(("wr_ticks", "tot_ticks", "rq_ticks", "nr_ios"), UL, 8),
        Field("major", U, 8),
        Field("minor", U),
    ),
    (A_DISK, 0x8B): (
        Field("nr_ios", ULL, 16),
        Field("rd_sect", UL, 16),
        Field("wr_sect", UL, 8),
        Field("rd_ticks", U, 8),
        *_each(("wr_ticks", "tot_ticks", "rq_ticks", "major", "minor"), U, None),
    ),
    (A_NET_DEV, 0x8A): (*_each(NET_DEV_FIELDS, UL, 8), Field("interface", CHAR, 8, MAX_IFACE_LEN)),
    (A_NET_DEV, 0x8B): (*_each(NET_DEV_FIELDS, ULL, 16), Field("interface", CHAR, 16, MAX_IFACE_LEN)),
    (A_NET_DEV, 0x8C): (
        *_each(NET_DEV_FIELDS, ULL, 16),
        Field("speed", U, 16),
        Field("interface", CHAR, 4, MAX_IFACE_LEN),
        Field("duplex", CHAR),
    ),
    (A_NET_EDEV, 0x8A): (*_each(NET_EDEV_FIELDS, UL, 8), Field("interface", CHAR, 8, MAX_IFACE_LEN)),
    (A_NET_EDEV, 0x8B): (*_each(NET_EDEV_FIELDS, ULL, 16), Field("interface", CHAR, 16, MAX_IFACE_LEN)),
    # sa_conv.h (*_8a, *_8b) and, where the magic did not change, rd_stats.h's unsigned-int structs;
    # checked against the corpus's old files (9.1.6, 10.3.1, 11.6.5) and sar's expected outputs
    (A_IO, 0x8A): _each(IO_FIELDS[:5], U, 4),
    (A_KTABLES, 0x8A): _each(("file_used", "inode_used", "dentry_stat", "pty_nr"), U, 4),
    (A_NET_NFS, 0x8A): _each(NFS_FIELDS, U, 4),
    (A_NET_NFSD, 0x8A): _each(NFSD_FIELDS, U, 4),
    (A_NET_SOCK, 0x8A): _each(("sock_inuse", "tcp_inuse", "tcp_tw", "udp_inuse", "raw_inuse", "frag_inuse"), U, 4),
    (A_NET_SOCK6, 0x8A): _each(("tcp6_inuse", "udp6_inuse", "raw6_inuse", "frag6_inuse"), U, 4),
    (A_NET_IP, 0x8A): _each(IP_FIELDS, UL, 8),
    (A_NET_IP, 0x8B): _each(IP_FIELDS, ULL, 16),
    (A_NET_EIP, 0x8A): _each(EIP_FIELDS, UL, 8),
    (A_NET_EIP, 0x8B): _each(EIP_FIELDS, ULL, 16),
    (A_NET_IP6, 0x8A): _each(IP6_FIELDS, UL, 8),
    (A_NET_IP6, 0x8B): _each(IP6_FIELDS, ULL, 16),
    (A_NET_EIP6, 0x8A): _each(EIP6_FIELDS, UL, 8),
    (A_NET_EIP6, 0x8B): _each(EIP6_FIELDS, ULL, 16),
    (A_NET_ICMP, 0x8A): _each(ICMP_FIELDS, UL, 8),
    (A_NET_EICMP, 0x8A): _each(EICMP_FIELDS, UL, 8),
    (A_NET_TCP, 0x8A): _each(TCP_FIELDS, UL, 8),
    (A_NET_ETCP, 0x8A): _each(ETCP_FIELDS, UL, 8),
    (A_NET_UDP, 0x8A): _each(UDP_FIELDS, UL, 8),
    (A_NET_ICMP6, 0x8A): _each(ICMP6_FIELDS, UL, 8),
    (A_NET_EICMP6, 0x8A): _each(EICMP6_FIELDS, UL, 8),
    (A_NET_UDP6, 0x8A): _each(UDP6_FIELDS, UL, 8),
    (A_NET_SOFT, 0x8A): _each(("processed", "dropped", "time_squeeze", "received_rps", "flow_limit"), U, 4),
    (A_PWR_CPU, 0x8A): (Field("cpufreq", UL, 8),),
}

# Old-format file headers: field name -> (offset from the end of file_magic, struct format char)
# file_header_2171: ulong sa_ust_time (aligned 8); uint sa_act_nr (aligned 8); day, month, year,
# sizeof_long (chars); 4 utsname strings. file_header_2173 adds sa_last_cpu_nr and sa_vol_act_nr.
OLD_HEADER = {
    FORMAT_2171: {"ust_time": 0, "act_nr": 8, "last_cpu_nr": None, "vol_act_nr": None, "day": 12},
    FORMAT_2173: {"ust_time": 0, "act_nr": 12, "last_cpu_nr": 8, "vol_act_nr": 16, "day": 20},
}
OLD_FILE_MAGIC_SIZE = {FORMAT_2171: 8, FORMAT_2173: 76}
NEW_FILE_MAGIC_SIZE = 76  # magic, format, 4 version bytes, header_size, upgraded, hdr_types_nr[3], pad[48]
OLD_FILE_ACTIVITY_SIZE = 20  # id, magic, nr, nr2, size
# old_record_header: ULL uptime (al 16), ULL uptime0 (al 16), UL ust_time (al 16), record_type (al 8), h, m, s
OLD_RECORD_HEADER_SIZE = 48


def type_size(ctype: str, sizeof_long: int) -> int:
    return {ULL: 8, UL: sizeof_long, U: 4, CHAR: 1}[ctype]


def aligned_offsets(fields: tuple[Field, ...], sizeof_long: int) -> list[tuple[Field, int, int]]:
    """(field, offset, size) as GCC laid the struct out."""
    out = []
    offset = 0
    for f in fields:
        size = type_size(f.ctype, sizeof_long)
        align = f.align or size
        offset = (offset + align - 1) // align * align
        out.append((f, offset, size * f.length))
        offset += size * f.length
    return out
