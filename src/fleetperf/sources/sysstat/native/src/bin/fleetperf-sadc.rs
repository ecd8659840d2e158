//! `fleetperf parse sadc FILE...` without a Python interpreter, for clean files.
//!
//! The Python command's start-up (interpreter, settings, the reader's modules: 0.06-0.15 CPU s) is ten times
//! sadf's whole run on a daily file; this binary does the same work in the crate's code and prints the same
//! bytes. It is the Python path's mirror for the case where nothing is wrong, nothing else:
//!
//! * the reading follows reader.py (`_header_2175`, `_record_2175`, `_check_time`, `_clock_disagrees`,
//!   `_skip_extra`), the layouts are layouts.py's tables (src/layouts_2175.rs, generated from them), the items
//!   and sar's arithmetic are the extension's own code (`stats_inner`, `interval_of`), and the lines around the
//!   figures are records.py's `host_config` / `_lines`;
//! * anything else (an option, a glob, a directory, an old format, any check that would give a dead letter, an
//!   interval the native code leaves to Python, settings overridden in the environment, a file above
//!   MAX_INPUT) is not judged here: the binary prints nothing and execs the Python command with the same
//!   arguments (FLEETPERF_SADC_FALLBACK names the interpreter; ./fleetperf sets it), so errors, dead letters
//!   and exit statuses are always the Python path's own.
//!
//! Memory stays flat: a file is read through a window (1 MB reads, the bytes before the current record dropped,
//! as reader.py's SaFile), lines go out as they are made. When something is met after lines went out, the
//! Python command is started with its output piped: its first bytes (the same lines: the Python path writes
//! what this binary wrote up to there, checked by line count and the last 4 kB) are dropped, the rest passed on,
//! its exit status returned; stderr is its own.

use fleetperf_sadc_native::layouts_2175 as lay;
use fleetperf_sadc_native::{
    compute_sections, interval_of, json_string, parse_format, rd32, rd64, stats_inner, ActData, ActSpec, Ctx, Lines,
    Seg, Spec, StatsResult, View,
};
use rustc_hash::FxHashMap as HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::io::{BufWriter, IsTerminal, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{exit, Command, Stdio};

/// Bytes read from a file at a time; and kept before the current record at most (reader.py's CHUNK, KEEP)
const CHUNK: usize = 1 << 20;
/// Bytes of the output's end compared with the Python path's at a hand-over
const TAIL: usize = 4096;
/// records.py: a longer gap between two records is damage, not an interval (1/100 s)
const MAX_INTERVAL_CS: u64 = 31 * 86400 * 100;

/// Why this file is left to the Python path (printed with FLEETPERF_SADC_BIN_VERBOSE=1)
type Why = String;

fn main() {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    blocking_stdout();
    let mut sink = Sink {
        w: BufWriter::with_capacity(1 << 16, std::io::stdout().lock()),
        bytes: 0,
        lines: 0,
        tail: Vec::new(),
    };
    // a panic (a defect here) is one more thing handed over, quietly unless asked
    let verbose = std::env::var_os("FLEETPERF_SADC_BIN_VERBOSE").is_some();
    std::panic::set_hook(Box::new(move |info| {
        if verbose {
            eprintln!("fleetperf-sadc: {info}");
        }
    }));
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&args, &mut sink))) {
        Ok(Ok(code)) => exit(code),
        Ok(Err(why)) => fall_back(&args, &why, sink),
        Err(_) => fall_back(&args, "a panic in fleetperf-sadc", sink),
    }
}

/// A stdout its parent left non-blocking is made blocking, as `parse` does in Python: a full pipe
/// made the write fail with EAGAIN ("cannot write: Resource temporarily unavailable", exit 1,
/// the rest of the output lost) where a blocking write waits for the reader.
fn blocking_stdout() {
    // SAFETY: fcntl on fd 1 with F_GETFL / F_SETFL reads and sets its status flags only; a
    // closed fd makes it return -1, which leaves everything as it was
    unsafe {
        let flags = libc::fcntl(1, libc::F_GETFL);
        if flags >= 0 && flags & libc::O_NONBLOCK != 0 {
            libc::fcntl(1, libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
    }
}

/// stdout, and what went out on it: bytes, lines, the last TAIL bytes
struct Sink {
    w: BufWriter<std::io::StdoutLock<'static>>,
    bytes: u64,
    lines: u64,
    tail: Vec<u8>,
}

impl Sink {
    fn put(&mut self, text: &[u8], lines: usize) {
        if let Err(e) = self.w.write_all(text) {
            gone(e);
        }
        self.bytes += text.len() as u64;
        self.lines += lines as u64;
        if text.len() >= TAIL {
            self.tail.clear();
            self.tail.extend_from_slice(&text[text.len() - TAIL..]);
        } else {
            self.tail.extend_from_slice(text);
            if self.tail.len() > 2 * TAIL {
                self.tail.drain(..self.tail.len() - TAIL);
            }
        }
    }
    fn end(&self) -> &[u8] {
        &self.tail[self.tail.len().saturating_sub(TAIL)..]
    }
}

/// stdout failed: piped into head & co. ends quietly with 0 (cli/main.py's BrokenPipeError), else 1
fn gone(e: std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        exit(0);
    }
    eprintln!("fleetperf parse: cannot write: {e}");
    exit(1)
}

fn fall_back(args: &[OsString], why: &str, mut sink: Sink) -> ! {
    if std::env::var_os("FLEETPERF_SADC_BIN_VERBOSE").is_some() {
        eprintln!("fleetperf-sadc: {why}: the Python path reads it");
    }
    let Some(python) = std::env::var_os("FLEETPERF_SADC_FALLBACK") else {
        if let Err(e) = sink.w.flush() {
            gone(e);
        }
        eprintln!("fleetperf-sadc: {why}, and no Python command to leave it to (run it as ./fleetperf parse sadc)");
        exit(2);
    };
    let mut cmd = Command::new(&python);
    cmd.args(["-m", "fleetperf.cli.main", "parse", "sadc"])
        .args(args)
        .env("FLEETPERF_SADC_BIN_FELL_BACK", why);
    if sink.bytes == 0 {
        let err = cmd.exec(); // nothing written yet: the Python command in this process
        eprintln!("fleetperf-sadc: cannot start {}: {err}", python.to_string_lossy());
        exit(1)
    }
    if let Err(e) = sink.w.flush() {
        gone(e);
    }
    let mut child = match cmd.stdout(Stdio::piped()).spawn() {
        Ok(c) => c,
        Err(err) => {
            eprintln!("fleetperf-sadc: cannot start {}: {err}", python.to_string_lossy());
            exit(1)
        }
    };
    let mut from = child.stdout.take().expect("piped");
    // the first `sink.bytes` bytes are those already written: dropped, once they are seen to be the same lines
    let (mut left, mut lines, mut tail) = (sink.bytes, 0u64, Vec::with_capacity(2 * TAIL));
    let mut buf = vec![0u8; 1 << 16];
    let mut rest = Vec::new();
    while left > 0 {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let take = (n as u64).min(left) as usize;
        lines += buf[..take].iter().filter(|&&b| b == b'\n').count() as u64;
        tail.extend_from_slice(&buf[..take]);
        if tail.len() > 2 * TAIL {
            tail.drain(..tail.len() - TAIL);
        }
        left -= take as u64;
        if left == 0 {
            rest = buf[take..n].to_vec(); // the Python path's own lines begin here
        }
    }
    let tail = &tail[tail.len().saturating_sub(TAIL)..];
    if left > 0 || lines != sink.lines || tail != sink.end() {
        let _ = child.kill();
        let _ = child.wait();
        eprintln!(
            "fleetperf-sadc: the Python path's first {} bytes are not the {} lines this binary wrote; a defect to \
             report (FLEETPERF_SADC_PARSER=python reads without the binary)",
            sink.bytes, sink.lines
        );
        exit(1);
    }
    if let Err(e) = sink
        .w
        .write_all(&rest)
        .and_then(|_| std::io::copy(&mut from, &mut sink.w).map(|_| ()))
    {
        gone(e);
    }
    if let Err(e) = sink.w.flush() {
        gone(e);
    }
    drop(from);
    let status = child
        .wait()
        .map_or(1, |s| s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0)));
    exit(status)
}

fn run(args: &[OsString], sink: &mut Sink) -> Result<i32, Why> {
    if std::env::var("FLEETPERF_SADC_PARSER").as_deref() == Ok("python") {
        return Err("FLEETPERF_SADC_PARSER=python".into());
    }
    if std::env::vars_os().any(|(k, _)| k.to_string_lossy().starts_with("FLEETPERF__")) {
        return Err("settings overridden in the environment".into()); // config.py's FLEETPERF__* overrides
    }
    let mut files = Vec::new();
    for a in args {
        let s = a.to_str().ok_or("an argument that is not UTF-8")?;
        if s == "--no-progress" {
            continue; // no bar either way: one file, or stderr not a terminal (below)
        }
        if s.starts_with('-') || s.is_empty() || s.contains(['*', '?', '[']) {
            return Err(format!("argument {s:?}"));
        }
        files.push(s.to_string());
    }
    if files.is_empty() {
        return Err("no file".into());
    }
    if files.len() > 1 && std::io::stderr().is_terminal() {
        return Err("several files on a terminal (progress bar)".into());
    }
    for f in &files {
        let m = std::fs::metadata(f).map_err(|e| format!("{f}: {e}"))?;
        if !m.is_file() {
            return Err(format!("{f} is not a regular file"));
        }
    }
    let root = std::env::var("FLEETPERF_SADC_ROOT").map_err(|_| "FLEETPERF_SADC_ROOT not set")?;
    let topics = topics(&format!("{root}/config/fleetperf.toml"))?;
    if compute_sections() != lay::RATES_COMPUTE.to_vec() {
        return Err("rates.COMPUTE is not what the native arithmetic computes".into());
    }
    let mut counts: HashMap<&'static str, usize> = HashMap::default();
    for f in &files {
        let handle = File::open(f).map_err(|e| format!("{f}: {e}"))?;
        let size = handle.metadata().map_err(|e| format!("{f}: {e}"))?.len() as usize;
        let mut win = Win {
            f: handle,
            size,
            base: 0,
            buf: Vec::new(),
        };
        file(f, &mut win, &topics, sink, &mut counts)?;
    }
    if let Err(e) = sink.w.flush() {
        gone(e);
    }
    let mut keys: Vec<_> = counts.into_iter().collect();
    keys.sort();
    let made: Vec<String> = keys.iter().map(|(k, n)| format!("{n} {k}")).collect();
    let made = if made.is_empty() {
        "no records".to_string()
    } else {
        made.join(", ")
    };
    eprintln!("{} files: {made}; 0 errors, 0 files unreadable", files.len());
    Ok(0)
}

/// The topic names `parse` prints, from config/fleetperf.toml's [topics.KEY] name, read with the toml crate
/// (the file Python's config.load() reads; FLEETPERF__* overrides never reach here, they send the run to Python).
fn topics(path: &str) -> Result<HashMap<&'static str, String>, Why> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let doc: toml::Table = text.parse().map_err(|e| format!("{path}: {e}"))?;
    let mut found = HashMap::default();
    for key in ["sysstat_samples", "cpu_samples", "host_configs"] {
        let name = doc
            .get("topics")
            .and_then(|t| t.get(key))
            .and_then(|t| t.get("name"))
            .and_then(|n| n.as_str())
            .ok_or_else(|| format!("{path}: no [topics.{key}] name"))?;
        found.insert(key, name.to_string());
    }
    Ok(found)
}

/// A file read through a window: `buf` holds its bytes from offset `base` on (reader.py's SaFile)
struct Win {
    f: File,
    size: usize,
    base: usize,
    buf: Vec<u8>,
}

impl Win {
    /// Read more (at least CHUNK, at least as much again as held: a large record takes few rounds);
    /// false at the end of the file
    fn more(&mut self) -> Result<bool, Why> {
        let have = self.base + self.buf.len();
        if have >= self.size {
            return Ok(false);
        }
        let want = CHUNK.max(self.buf.len()).min(self.size - have);
        let old = self.buf.len();
        self.buf.resize(old + want, 0);
        let mut got = 0;
        while got < want {
            match self.f.read(&mut self.buf[old + got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) => return Err(format!("read: {e}")),
            }
        }
        self.buf.truncate(old + got);
        Ok(got > 0)
    }
    /// Drop the bytes well before file offset `pos`
    fn slide(&mut self, pos: usize) {
        if pos - self.base > CHUNK {
            self.buf.drain(..pos - self.base);
            self.base = pos;
        }
    }
}

/// Why a parse stopped: the window must hold more bytes first, or the file is left to Python
enum Stop {
    Need,
    Bail(Why),
}

impl From<Why> for Stop {
    fn from(w: Why) -> Self {
        Stop::Bail(w)
    }
}

/// Parse `f` from the window, reading more while it needs more (`Stop::Need` at the file's end: it is cut short)
fn with_more<T>(win: &mut Win, mut f: impl FnMut(&Win) -> Result<T, Stop>) -> Result<T, Why> {
    loop {
        match f(win) {
            Ok(v) => return Ok(v),
            Err(Stop::Bail(w)) => return Err(w),
            Err(Stop::Need) => {
                if !win.more()? {
                    return Err("the file ends inside a record".into());
                }
            }
        }
    }
}

struct Reader<'d> {
    d: &'d [u8],
    base: usize, // file offset of d[0]: every offset below is the file's
    big: bool,
}

impl Reader<'_> {
    /// reader.py's `_need`: the window holds `size` bytes at `off`, else more must be read (or the file ends)
    fn need(&self, off: usize, size: usize) -> Result<(), Stop> {
        if off.checked_add(size).is_none_or(|end| end > self.base + self.d.len()) {
            return Err(Stop::Need);
        }
        Ok(())
    }
    fn byte(&self, off: usize) -> u8 {
        self.d[off - self.base]
    }
    fn bytes(&self, off: usize, n: usize) -> &[u8] {
        &self.d[off - self.base..off - self.base + n]
    }
    fn u16(&self, off: usize) -> u16 {
        let b = [self.byte(off), self.byte(off + 1)];
        if self.big {
            u16::from_be_bytes(b)
        } else {
            u16::from_le_bytes(b)
        }
    }
    fn u32(&self, off: usize) -> u32 {
        rd32(self.bytes(off, 4), self.big)
    }
    fn i32(&self, off: usize) -> i32 {
        self.u32(off) as i32
    }
    fn u64(&self, off: usize) -> u64 {
        rd64(self.bytes(off, 8), self.big)
    }
    /// reader.py's `_skip_extra`
    fn skip_extra(&self, mut off: usize) -> Result<usize, Stop> {
        loop {
            self.need(off, 24)?;
            let (nr, size, next) = (self.u32(off) as usize, self.u32(off + 4) as usize, self.u32(off + 8));
            if nr as i64 > lay::MAX_EXTRA_NR || size as i64 > lay::MAX_EXTRA_SIZE {
                return Err(Stop::Bail(format!("extra structures out of range at offset {off}")));
            }
            off += 24 + nr * size;
            self.need(off, 0)?;
            if next == 0 {
                return Ok(off);
            }
        }
    }
}

struct Header {
    version: String,
    version3: (u8, u8, u8),
    big: bool,
    sizeof_long: u8,
    hz: u64,
    ust_time: u64,
    cpu_nr: u32,
    names: [String; 4],                  // sysname, nodename, release, machine
    acts: Vec<(u32, u32, String, bool)>, // id, magic, name, read (a layout we have)
    spec: Spec,
    rec_size: usize,
    rec_int: usize, // ints in the record header
    data_offset: usize,
}

/// A NUL-terminated utsname field: printable ASCII only here (reader.py decodes UTF-8 with replacement, and
/// json.dumps escapes what is not printable ASCII; those cases are left to Python)
fn cstr(raw: &[u8]) -> Result<String, Why> {
    let end = raw.iter().position(|&c| c == 0).unwrap_or(raw.len());
    let s = &raw[..end];
    if !s.iter().all(|b| (b' '..=b'~').contains(b)) {
        return Err("a header name that is not printable ASCII".into());
    }
    Ok(String::from_utf8_lossy(s).into_owned())
}

/// reader.py's `_grouped_decoder`: the struct format (padded to the item size, as `_Decoder.items`), the
/// numeric fields' names and the char arrays' names; None when the fields do not fit the size
fn grouped(
    g: &lay::Grouped,
    types: [u32; 3],
    size: usize,
    big: bool,
    sl: usize,
) -> Option<(String, Vec<String>, Vec<String>)> {
    let mut fmt = String::from(if big { ">" } else { "<" });
    let mut names = Vec::new();
    let lf = if sl == 8 { 'Q' } else { 'I' };
    for (count, known, code, width) in [
        (types[0] as usize, g.ull, 'Q', 8usize),
        (types[1] as usize, g.ul, lf, sl),
        (types[2] as usize, g.u, 'I', 4),
    ] {
        let take = count.min(known.len());
        for _ in 0..take {
            fmt.push(code);
        }
        names.extend(known[..take].iter().map(|s| s.to_string()));
        if count > take {
            fmt.push_str(&format!("{}x", (count - take) * width));
        }
    }
    let mut used = types[0] as usize * 8 + types[1] as usize * sl + types[2] as usize * 4;
    let mut chars = Vec::new();
    for &(name, length) in g.chars {
        if used + length <= size {
            fmt.push_str(&format!("{length}s"));
            chars.push(name.to_string());
            used += length;
        }
    }
    if used > size {
        return None;
    }
    if size > used {
        fmt.push_str(&format!("{}x", size - used)); // _Decoder's pad to the item size
    }
    Some((fmt, names, chars))
}

/// reader.py's `_read_header` / `_header_2175`, for the files read here (0x2175, every check passed)
fn header(win: &Win) -> Result<Header, Stop> {
    let d = &win.buf[..]; // from offset 0: the header is read before the window moves
    let r = Reader { d, base: 0, big: false };
    r.need(0, 8)?;
    let big = match (d[0], d[1]) {
        (0x96, 0xd5) => false,
        (0xd5, 0x96) => true,
        _ => return Err(Stop::Bail("not a sysstat data file".into())),
    };
    let r = Reader { d, base: 0, big };
    if r.u16(2) as i64 != lay::FORMAT_2175 {
        return Err(Stop::Bail(format!("format 0x{:04x}", r.u16(2))));
    }
    let version = format!("{}.{}.{}", d[4], d[5], d[6]);
    let h = lay::NEW_FILE_MAGIC_SIZE as usize;
    r.need(0, h)?;
    let (header_size, hull, hul, hu) = (r.u32(8) as usize, r.u32(16), r.u32(20), r.u32(24) as usize);
    if !(header_size > 0 && header_size as i64 <= lay::MAX_FILE_HEADER_SIZE) {
        return Err(Stop::Bail("file header size".into()));
    }
    let utsname = lay::UTSNAME_LEN as usize;
    if (hull, hul) != (1, 1) || !(11..=64).contains(&hu) || 16 + 4 * hu + 3 + 4 * utsname > header_size {
        return Err(Stop::Bail("file header description".into()));
    }
    r.need(h, header_size)?;
    let ust_time = r.u64(h);
    let ints: Vec<u32> = (0..hu).map(|i| r.u32(h + 16 + 4 * i)).collect();
    let (cpu_nr, act_nr) = (ints[0], ints[1]);
    let (act_types, rec_types) = (&ints[3..6], &ints[6..9]);
    let (act_size, rec_size) = (ints[9] as usize, ints[10] as usize);
    let extra_next = if hu >= 12 { ints[11] } else { 0 };
    let c = h + 16 + 4 * hu;
    let sizeof_long = d[c + 2];
    if sizeof_long != 4 && sizeof_long != 8 {
        return Err(Stop::Bail("sizeof(long)".into()));
    }
    let hz = if sizeof_long == 8 {
        r.u64(h + 8)
    } else {
        r.u32(h + 8) as u64
    };
    let mut names: [String; 4] = Default::default();
    for (i, n) in names.iter_mut().enumerate() {
        *n = cstr(&d[c + 3 + i * utsname..c + 3 + (i + 1) * utsname])?;
    }
    if !(act_nr > 0 && act_nr as i64 <= lay::MAX_NR_ACT) || !(cpu_nr > 0 && cpu_nr as i64 <= lay::MAX_CPU_NR) {
        return Err(Stop::Bail("activity or CPU count".into()));
    }
    if !(act_size > 0 && act_size as i64 <= lay::MAX_FILE_ACTIVITY_SIZE)
        || !(rec_size > 0 && rec_size as i64 <= lay::MAX_RECORD_HEADER_SIZE)
    {
        return Err(Stop::Bail("activity/record header size".into()));
    }
    if act_types[..2] != [0, 0] || !(9 <= act_types[2] as usize && act_types[2] as usize <= act_size / 4) {
        return Err(Stop::Bail("activity description".into()));
    }
    if rec_types[..2] != [2, 0] || 16 + 4 * rec_types[2] as usize + 4 > rec_size {
        return Err(Stop::Bail("record header description".into()));
    }
    if !(lay::MIN_EPOCH <= ust_time as i64 && (ust_time as i64) < lay::MAX_EPOCH) || ust_time > i64::MAX as u64 {
        return Err(Stop::Bail("file header time".into()));
    }
    let mut off = h + header_size;
    let mut acts = Vec::new();
    let mut specs = Vec::new();
    for _ in 0..act_nr {
        r.need(off, act_size)?;
        let (aid, magic) = (r.u32(off), r.u32(off + 4));
        let (nr, nr2, has_nr, size) = (
            r.i32(off + 8) as i64,
            r.i32(off + 12) as i64,
            r.i32(off + 16),
            r.i32(off + 20) as i64,
        );
        let types = [r.u32(off + 24), r.u32(off + 28), r.u32(off + 32)];
        if !(0 <= nr && nr <= lay::NR_MAX && 0 < nr2 && nr2 <= lay::NR2_MAX && 0 < size && size <= lay::MAX_ITEM_SIZE)
            || nr * nr2 > lay::NR_MAX
        {
            return Err(Stop::Bail(format!("activity {aid}: items out of range")));
        }
        let name = lay::ACTIVITY_NAMES
            .iter()
            .find(|(k, _)| *k == aid)
            .map_or_else(|| format!("activity_{aid}"), |(_, n)| n.to_string());
        let layout = lay::GROUPED.iter().find(|(k, _)| *k == (aid, magic)).map(|(_, g)| g);
        let dec = match layout {
            None => None, // unknown activity or magic: skipped by its size, listed as unread
            Some(g) => {
                let (fmt, fields, chars) = grouped(g, types, size as usize, big, sizeof_long as usize)
                    .ok_or_else(|| Stop::Bail(format!("activity {name}: a description its fields do not fit")))?;
                let required = lay::REQUIRED
                    .iter()
                    .find(|(k, _)| *k == aid)
                    .map_or(&[][..], |(_, r)| *r);
                if required
                    .iter()
                    .any(|n| !fields.iter().any(|f| f == n) && !chars.iter().any(|f| f == n))
                {
                    return Err(Stop::Bail(format!(
                        "activity {name}: a description without a field it needs"
                    )));
                }
                Some(
                    parse_format(&fmt, &fields, &chars, size)
                        .map_err(|e| Stop::Bail(format!("activity {name}: {e}")))?,
                )
            }
        };
        let item_max = lay::ITEM_MAX
            .iter()
            .find(|(k, _)| *k == aid)
            .map_or(lay::NR_MAX, |(_, m)| *m);
        acts.push((aid, magic, name.clone(), dec.is_some()));
        specs.push(ActSpec {
            aid,
            name,
            nr,
            nr2,
            size,
            has_nr: has_nr != 0,
            item_max,
            dec,
        });
        off += act_size;
    }
    if extra_next != 0 {
        off = r.skip_extra(off)?;
    }
    Ok(Header {
        version,
        version3: (d[4], d[5], d[6]),
        big,
        sizeof_long,
        hz,
        ust_time,
        cpu_nr,
        names,
        acts,
        spec: Spec { big, acts: specs },
        rec_size,
        rec_int: rec_types[2] as usize,
        data_offset: off,
    })
}

enum Kind {
    Stats(Vec<(u32, ActData)>),
    Restart,
    Other,
}

struct Rec {
    kind: Kind,
    offset: usize,
    end: usize,
    uptime_cs: u64,
    ust_time: u64,
    real_clock: bool,
}

/// reader.py's time and clock state of one file
struct Times {
    header_time: i64,
    last_time: Option<i64>,
    seconds_agree: bool,
    ss_last: bool,
    last_stats: Option<(u64, u64)>, // (uptime, time) of the last statistics record since a restart
}

/// reader.py's `_record_2175` and `_check_time` (check_times on: no option changes it here)
fn record(r: &Reader, hd: &Header, t: &mut Times, off: usize) -> Result<Rec, Stop> {
    r.need(off, hd.rec_size)?;
    let (uptime_cs, ust_time) = (r.u64(off), r.u64(off + 8));
    let n = hd.rec_int;
    let extra_next = if n >= 1 { r.u32(off + 16) } else { 0 };
    let p = off + 16 + 4 * n;
    let (rtype, hh, mm, ss) = (r.byte(p) as i64, r.byte(p + 1), r.byte(p + 2), r.byte(p + 3));
    if hh > 23 || mm > 59 || ss > 59 {
        return Err(Stop::Bail(format!("record time {hh}:{mm}:{ss} at offset {off}")));
    }
    let ust = ust_time as i64;
    if !(lay::MIN_EPOCH <= ust && ust < lay::MAX_EPOCH) || ust_time > i64::MAX as u64 {
        return Err(Stop::Bail(format!("record time at offset {off}")));
    }
    t.ss_last = ust % 60 == ss as i64;
    if t.seconds_agree && !t.ss_last {
        return Err(Stop::Bail(format!("record time and hh:mm:ss disagree at offset {off}")));
    }
    if let Some(last) = t.last_time {
        let near = |base: i64| base - lay::RECORD_TIME_BEFORE <= ust && ust <= base + lay::RECORD_TIME_AFTER;
        if !near(last) && !near(t.header_time) {
            return Err(Stop::Bail(format!("implausible record time at offset {off}")));
        }
    }
    let mut body = off + hd.rec_size;
    let kind = if rtype == lay::R_STATS || rtype == lay::R_LAST_STATS {
        if extra_next != 0 {
            body = r.skip_extra(body)?;
        }
        match stats_inner(&hd.spec, r.d, body - r.base, true) {
            StatsResult::Ok(end, acts, _spans) => {
                body = r.base + end;
                Kind::Stats(acts)
            }
            StatsResult::Need(..) => return Err(Stop::Need),
            StatsResult::Bad(..) => return Err(Stop::Bail(format!("item count out of range at offset {off}"))),
        }
    } else if rtype == lay::R_RESTART {
        r.need(body, 4)?;
        let cpu_nr = r.i32(body);
        if !(0 < cpu_nr && cpu_nr <= 16384) {
            return Err(Stop::Bail(format!("restart record with {cpu_nr} CPUs")));
        }
        body += 4;
        if extra_next != 0 {
            body = r.skip_extra(body)?;
        }
        Kind::Restart
    } else if rtype == lay::R_COMMENT || (lay::R_EXTRA_MIN..=lay::R_EXTRA_MAX).contains(&rtype) {
        if rtype == lay::R_COMMENT {
            r.need(body, lay::MAX_COMMENT_LEN as usize)?;
            body += lay::MAX_COMMENT_LEN as usize;
        }
        if extra_next != 0 {
            body = r.skip_extra(body)?;
        }
        Kind::Other
    } else {
        return Err(Stop::Bail(format!("unknown record type {rtype} at offset {off}")));
    };
    Ok(Rec {
        kind,
        offset: off,
        end: body,
        uptime_cs,
        ust_time,
        real_clock: false,
    })
}

/// reader.py's `_clock_disagrees` (a 0x2175 file: the only format read here)
fn clock_disagrees(t: &Times, rec: &Rec) -> bool {
    let Some((uptime, time)) = t.last_stats else {
        return false;
    };
    if !matches!(rec.kind, Kind::Stats(_)) || !t.seconds_agree {
        return false;
    }
    let itv = rec.uptime_cs as i128 - uptime as i128;
    let clock = rec.ust_time as i64 - time as i64;
    itv <= 0
        || (itv as f64 / 100.0 - clock as f64).abs()
            > lay::CLOCK_SLACK_S + lay::CLOCK_SLACK_RATIO * (clock.abs() as f64)
}

/// One file: records.py's `_emitted` (host config, then each interval's lines), appended to `out`
fn file(
    path: &str,
    win: &mut Win,
    topics: &HashMap<&'static str, String>,
    out: &mut Sink,
    counts: &mut HashMap<&'static str, usize>,
) -> Result<(), Why> {
    let hd = with_more(win, header)?;
    // Path(path).name
    let name = path.trim_end_matches('/').rsplit('/').next().unwrap_or("");
    if name.is_empty() || name == "." || name == ".." || path.ends_with('/') {
        return Err("a path whose name is not its last part".into());
    }
    let [sysname, nodename, release, machine] = &hd.names;
    let host_id = if nodename.is_empty() {
        "unknown"
    } else {
        nodename.as_str()
    };
    let trusted = hd.version3.0 >= 7; // records.steal_trusted
    let (j, jh, jn) = (json_string, json_string(host_id), json_string(name));
    // rates.memused_rule of the file's version (parse_version gives three numbers: the header's bytes)
    let rule = if hd.version3 >= (12, 7, 8) {
        2
    } else if hd.version3 >= (11, 7, 4) {
        1
    } else {
        0
    };
    let nr2: HashMap<u32, i64> = hd.spec.acts.iter().map(|a| (a.aid, a.nr2)).collect();
    let ctx = Ctx::plain(rule, nr2).ok_or("memused rule")?;
    let head = |key: &str| {
        format!(
            "{{\"topic\": {}, \"key\": {jh}, \"value\": {{\"host_id\": {jh}, \"hostname\": {}, \"ts\": ",
            j(&topics[key]),
            j(nodename)
        )
    };
    let lines = Lines {
        row_head: head("sysstat_samples"),
        row_mid: format!(
            ", \"source\": \"sadc\", \"sysstat_version\": {}, \"steal_trusted\": {trusted}, \"origin_file\": {jn}, \"origin_offset\": ",
            j(&hd.version)
        ),
        cpu_head: head("cpu_samples"),
        cpu_tail: format!(
            ", \"physc\": null, \"entitled\": null, \"virtual_cpus\": null, \"origin_file\": {jn}, \"origin_snapshot\": \"offset "
        ),
        trusted,
        cpu_count: (hd.cpu_nr as i64 - 1).max(1),
    };
    // records.py's host_config, as parse's json.dumps writes it
    let mut attrs = vec![
        ("os", sysname.clone()),
        ("kernel", release.clone()),
        ("machine", machine.clone()),
        ("nodename", nodename.clone()),
        ("cpu_count", lines.cpu_count.to_string()),
        ("sysstat_version", hd.version.clone()),
        ("sysstat_format", "0x2175".to_string()),
        ("byte_order", if hd.big { "big" } else { "little" }.to_string()),
        ("sizeof_long", hd.sizeof_long.to_string()),
        (
            "activities",
            hd.acts.iter().map(|a| a.2.as_str()).collect::<Vec<_>>().join(","),
        ),
    ];
    if hd.hz != 0 {
        attrs.push(("hz", hd.hz.to_string()));
    }
    let unread: Vec<String> = hd
        .acts
        .iter()
        .filter(|a| !a.3)
        .map(|a| format!("{}@0x{:02x}", a.2, a.1))
        .collect();
    if !unread.is_empty() {
        attrs.push(("unread_activities", unread.join(",")));
    }
    let attrs: Vec<String> = attrs.iter().map(|(k, v)| format!("\"{k}\": {}", j(v))).collect();
    let line = format!(
        "{}{}, \"source\": \"sadc\", \"origin_file\": {jn}, \"attributes\": {{{}}}, \"config_text\": {{}}}}}}\n",
        head("host_configs"),
        hd.ust_time * 1000,
        attrs.join(", ")
    );
    out.put(line.as_bytes(), 1);
    *counts.entry("host_configs").or_default() += 1;

    // reader.py's records() over a complete file, records.py's Collector.feed
    let mut t = Times {
        header_time: hd.ust_time as i64,
        last_time: None,
        seconds_agree: false,
        ss_last: false,
        last_stats: None,
    };
    let mut prev: Option<Rec> = None;
    let mut pos = hd.data_offset;
    while pos < win.size {
        win.slide(pos);
        let mut rec = with_more(win, |w| {
            record(
                &Reader {
                    d: &w.buf,
                    base: w.base,
                    big: hd.big,
                },
                &hd,
                &mut t,
                pos,
            )
        })?;
        let near = |u: i64| t.header_time - lay::RECORD_TIME_BEFORE <= u && u <= t.header_time + lay::RECORD_TIME_AFTER;
        if t.last_time.is_none() && !near(rec.ust_time as i64) {
            return Err(format!("first record far from the file's time at offset {pos}"));
        }
        if clock_disagrees(&t, &rec) {
            return Err(format!(
                "record time and uptime disagree with the last record's at offset {pos}"
            ));
        }
        // _accept
        if t.last_time.is_none() {
            t.seconds_agree = t.ss_last;
        }
        t.last_time = Some(rec.ust_time as i64);
        match rec.kind {
            Kind::Stats(_) => t.last_stats = Some((rec.uptime_cs, rec.ust_time)),
            Kind::Restart => t.last_stats = None,
            Kind::Other => {}
        }
        rec.real_clock = t.seconds_agree;
        pos = rec.end;
        match rec.kind {
            Kind::Restart => prev = None,
            Kind::Other => {}
            Kind::Stats(_) => {
                if let Some(p) = prev.take() {
                    interval(&ctx, &hd, &lines, &p, &rec, out, counts)?;
                }
                prev = Some(rec);
            }
        }
    }
    Ok(())
}

/// records.py's Collector._interval for a plausible interval whose every row is in range
fn interval(
    ctx: &Ctx,
    hd: &Header,
    lines: &Lines,
    prev: &Rec,
    cur: &Rec,
    out: &mut Sink,
    counts: &mut HashMap<&'static str, usize>,
) -> Result<(), Why> {
    let itv = cur.uptime_cs.wrapping_sub(prev.uptime_cs);
    let mut plausible = 0 < itv && itv <= MAX_INTERVAL_CS;
    let clock = cur.ust_time as i64 - prev.ust_time as i64;
    if plausible && cur.real_clock && prev.real_clock {
        let slack = lay::CLOCK_SLACK_S + lay::CLOCK_SLACK_RATIO * (clock.abs() as f64);
        plausible = (itv as f64 / 100.0 - clock as f64).abs() <= slack;
    }
    if !plausible {
        return Err(format!("an implausible interval at offset {}", cur.offset));
    }
    let (Kind::Stats(pa), Kind::Stats(ca)) = (&prev.kind, &cur.kind) else {
        unreachable!()
    };
    let (pv, cv) = (
        View {
            spec: &hd.spec,
            acts: pa,
        },
        View {
            spec: &hd.spec,
            acts: ca,
        },
    );
    let ts = cur.ust_time as i64 * 1000;
    let itv_s = itv as f64 / 100.0;
    let r = interval_of(
        ctx,
        &pv,
        &cv,
        itv,
        true,
        Some(lines),
        ts,
        Some(itv_s),
        cur.offset as i64,
        None,
    )
    .ok_or_else(|| {
        format!(
            "an interval the native arithmetic leaves to Python at offset {}",
            cur.offset
        )
    })?;
    // judged whole before a line goes out: a hand-over then starts at the interval's first line
    if r.segments.iter().any(|seg| !matches!(seg, Seg::Lines(..))) {
        return Err(format!("a row out of range at offset {}", cur.offset));
    }
    if r.cpu_all.is_some() && !r.cpu_done {
        return Err(format!("a CPU line out of range at offset {}", cur.offset));
    }
    for seg in &r.segments {
        if let Seg::Lines(text, n, key) = seg {
            out.put(text.as_bytes(), *n);
            *counts.entry(key).or_default() += n;
        }
    }
    Ok(())
}
