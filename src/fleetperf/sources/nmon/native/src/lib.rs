//! The hot path of the nmon collector in native code.
//!
//! An nmon file is almost entirely data lines of sections whose header is already known
//! (`CPU_ALL,T0042,3.1,1.0,...`). Python needs about a microsecond per such line just to split it
//! and convert its numbers, which caps the collector far below the disk. This scanner does
//! exactly that part: it splits chunks into lines, turns data lines into Avro-encoded
//! `NmonRow`s (schemas/nmon_snapshot.avsc) and keeps them per snapshot until the snapshot is
//! complete. Every other line (ZZZZ times, AAA/BBB configuration, header lines, garbage) goes to
//! Python's `control` hook, which holds the nmon knowledge that is not per line
//! (ingest/nmon/layout.py, host_config.py), so the mapping exists once.
//!
//! The Python parser (ingest/nmon/parser.py) is the reference: tests/unit/test_nmon_native.py
//! checks that both give byte-identical Avro for every corpus file.
//!
//! Lines mode (`fleetperf parse`, native_parser.py `topics`): the same records written as parse's
//! JSON lines instead of Avro (Python's json.JSONEncoder text, byte for byte: repr floats,
//! ensure_ascii strings), one bytes object per fed chunk; the tests compare them with the Avro
//! path read back and with the Python parser.

use memchr::memchr;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};
use rustc_hash::{FxHashMap, FxHashSet};
use std::io::Write;
use std::sync::Arc as Rc; // shared by the header map and the line being read (the pyclass must be Send)

/// Typed cpu_sample slots a header can fill (index into layout.CPU_SAMPLE_FIELDS).
const CPU_SLOTS: usize = 32;

// --- Avro binary encoding, as fastavro writes it: zig-zag varint longs, length-prefixed
// strings, arrays and maps as a single block (count, items, 0), unions as branch index + value.

fn put_long(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    put_long(out, s.len() as i64);
    out.extend_from_slice(s);
}

fn str_array(items: &[String]) -> Vec<u8> {
    let mut out = Vec::new();
    if !items.is_empty() {
        put_long(&mut out, items.len() as i64);
        for item in items {
            put_str(&mut out, item.as_bytes());
        }
    }
    out.push(0);
    out
}

// --- JSON text as `fleetperf parse` prints it: Python's json.JSONEncoder(allow_nan=False), i.e.
// ensure_ascii strings, floats as repr(), separators ", " and ": ". The scanner writes the bulk
// (rows, numbers, labels); Python renders the rest once (topic, key, field names, identity) so
// the two cannot drift apart.

/// A JSON string as Python's `json` writes it with ensure_ascii: `"` and `\` escaped, \b \f \n
/// \r \t short, every other character outside ' '..'~' as \uXXXX (lowercase hex; UTF-16
/// surrogate pairs above U+FFFF).
fn push_json_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let (mut i, mut start) = (0, 0);
    while i < bytes.len() {
        let b = bytes[i];
        if (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\' {
            i += 1;
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        let c = if b < 0x80 {
            b as char
        } else {
            s[i..].chars().next().expect("a char at a boundary")
        };
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            '\x08' => out.extend_from_slice(b"\\b"),
            '\x0c' => out.extend_from_slice(b"\\f"),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
        i += c.len_utf8();
        start = i;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// extend_from_slice for the short pieces of the JSON lines (a number, a separator): the copy
/// done with two possibly overlapping loads and stores instead of a call to memcpy, which cost
/// 16 % of the scanner's time in lines mode when every number took one or more calls (perf).
#[inline(always)]
fn put(out: &mut Vec<u8>, src: &[u8]) {
    let n = src.len();
    if n > 16 {
        out.extend_from_slice(src);
        return;
    }
    out.reserve(16);
    // SAFETY: `reserve` left at least 16 bytes of capacity after len, every store is within
    // dst[0..n] with n <= 16, every load within src[0..n]; the n bytes are initialised before
    // set_len.
    unsafe {
        let dst = out.as_mut_ptr().add(out.len());
        let s = src.as_ptr();
        if n >= 8 {
            let (a, b) = (
                s.cast::<u64>().read_unaligned(),
                s.add(n - 8).cast::<u64>().read_unaligned(),
            );
            dst.cast::<u64>().write_unaligned(a);
            dst.add(n - 8).cast::<u64>().write_unaligned(b);
        } else if n >= 4 {
            let (a, b) = (
                s.cast::<u32>().read_unaligned(),
                s.add(n - 4).cast::<u32>().read_unaligned(),
            );
            dst.cast::<u32>().write_unaligned(a);
            dst.add(n - 4).cast::<u32>().write_unaligned(b);
        } else if n > 0 {
            *dst = *s;
            *dst.add(n / 2) = *s.add(n / 2);
            *dst.add(n - 1) = *s.add(n - 1);
        }
        out.set_len(out.len() + n);
    }
}

/// A section or snapshot tag as two integers and its length when it has at most 15 bytes, as
/// nearly all have: a hash key and a comparison without a memcmp call (perf: the Vec keys' hashing
/// and memcmp were ~10 % of lines mode); LONG_TAG for the rest.
type TagKey = (u64, u64, u8);
const LONG_TAG: TagKey = (0, 0, u8::MAX);

fn tag_key(tag: &[u8]) -> TagKey {
    let n = tag.len();
    if n > 15 {
        return LONG_TAG;
    }
    // two loads that together cover the tag (overlapping when it is shorter than 16 bytes); with
    // the length, equal keys mean equal tags
    let (lo, hi) = if n >= 8 {
        (
            u64::from_le_bytes(tag[..8].try_into().expect("8")),
            u64::from_le_bytes(tag[n - 8..].try_into().expect("8")),
        )
    } else if n >= 4 {
        let a = u32::from_le_bytes(tag[..4].try_into().expect("4"));
        let b = u32::from_le_bytes(tag[n - 4..].try_into().expect("4"));
        (u64::from(a), u64::from(b))
    } else {
        let b = |i: usize| tag.get(i).copied().map_or(0, u64::from);
        (b(0) | b(1) << 8 | b(2) << 16, 0)
    };
    (lo, hi, n as u8)
}

/// repr() of the float a `Decimal` read. A decimal of at most 15 significant digits is the only
/// one of that length or shorter that reads back as its double (DBL_DIG is 15), so the shortest
/// round-trip digits repr() prints are the text's own digits without leading and trailing zeros;
/// only the layout is left to do. Most nmon cells take this path: no float formatting at all.
#[inline]
fn push_decimal_repr(out: &mut Vec<u8>, text: &[u8], d: &Decimal) {
    if d.negative {
        out.push(b'-');
    }
    if d.zero {
        put(out, b"0.0"); // zero keeps its sign: repr(-0.0) is '-0.0'
        return;
    }
    let n = text.len();
    // the usual cells are repr's text once a fraction's trailing zeros are off ("12.30" is
    // "12.3"), or an integer that lacks only ".0" ("1234", "12.", "5.00"). (A trailing zero sent
    // "1.20" down the general path below: ~65 instructions a value, 9 % of a Linux file's
    // `parse nmon`, whose cells are mostly like it; callgrind.)
    let mut end = n;
    if d.point < n {
        // stops at the '.' at the latest
        while text[end - 1] == b'0' {
            end -= 1;
        }
    }
    let whole = end <= d.point + 1; // nothing but zeros after the point, or no point
    if d.point > d.start && text[d.start] != b'0' {
        if whole {
            put(out, &text[d.start..d.point]); // "1234", "5.00"
            put(out, b".0");
        } else {
            put(out, &text[d.start..end]); // "12.3", "1.20"
        }
        return;
    }
    if !whole
        && d.point == d.start + 1
        && text[d.start + 1..(d.start + 6).min(n)]
            .iter()
            .any(|&b| b != b'0' && b != b'.')
    {
        put(out, &text[d.start..end]); // "0.05", "0.50": "0" then a non-zero digit within four decimals
        return;
    }
    // a non-zero digit exists (d.zero is false): the first and the one after the last
    let first = d.start
        + text[d.start..]
            .iter()
            .position(|&b| b != b'0' && b != b'.')
            .expect("a non-zero digit");
    let last_nonzero = text
        .iter()
        .rposition(|&b| b != b'0' && b != b'.')
        .expect("a non-zero digit")
        + 1;
    if first < d.point {
        // at most 15 digits before the point: fixed notation (repr switches at 1e16)
        put(out, &text[first..d.point]);
        out.push(b'.');
        if last_nonzero > d.point + 1 {
            put(out, &text[d.point + 1..last_nonzero]);
        } else {
            out.push(b'0');
        }
        return;
    }
    let zeros = first - d.point - 1;
    if zeros <= 3 {
        put(out, b"0.");
        put(out, &text[d.point + 1..last_nonzero]);
        return;
    }
    // below 1e-4 repr writes d.ddde-XX
    out.push(text[first]);
    if last_nonzero > first + 1 {
        out.push(b'.');
        put(out, &text[first + 1..last_nonzero]);
    }
    let _ = write!(out, "e-{:02}", zeros + 1);
}

/// repr() of any finite float: the shortest digits that read back as `v` (the nearest such
/// string; of two equally near, the one whose last digit is even, as CPython's dtoa does), fixed
/// notation from 1e-4 up to 1e16, else d.ddde+XX.
fn push_repr(out: &mut Vec<u8>, v: f64) {
    if v == 0.0 {
        out.extend_from_slice(if v.is_sign_negative() { b"-0.0" } else { b"0.0" });
        return;
    }
    if v.fract() == 0.0 && v.abs() < 1e16 {
        // an integer below 2**53 (or an even one below 1e16): its own digits are the shortest
        let _ = write!(out, "{}.0", v as i64);
        return;
    }
    // core's shortest round-trip digits (Grisu with a Dragon fallback; boundaries included for
    // an even mantissa, as in dtoa), nearest to v
    let text = format!("{:e}", v.abs());
    let e = text.find('e').expect("exponent");
    let mut exp: i32 = text[e + 1..].parse().expect("exponent digits");
    let mut digits: Vec<u8> = text.as_bytes()[..e].iter().copied().filter(|&b| b != b'.').collect();
    let nd = digits.len();
    // Two shortest strings can be equally near: v exactly halfway, its exact decimal one digit
    // longer and ending in 5. Core then may take either; dtoa takes the even one. Only strings
    // of 16-17 digits can tie (shorter ones are unique): the exact expansion tells.
    if nd >= 16 {
        let exact = format!("{:.*e}", nd, v.abs());
        let ee = exact.find('e').expect("exponent");
        let longer: Vec<u8> = exact.as_bytes()[..ee].iter().copied().filter(|&b| b != b'.').collect();
        let same_decade = exact[ee + 1..].parse::<i32>().ok() == Some(exp);
        if same_decade && longer[nd] == b'5' && is_exact(v, &exact) {
            digits.copy_from_slice(&longer[..nd]);
            if (digits[nd - 1] - b'0') % 2 == 1 {
                // round the odd last digit up, carrying
                let mut k = nd;
                loop {
                    if k == 0 {
                        digits.insert(0, b'1');
                        digits.pop();
                        exp += 1;
                        break;
                    }
                    k -= 1;
                    if digits[k] == b'9' {
                        digits[k] = b'0';
                    } else {
                        digits[k] += 1;
                        break;
                    }
                }
            }
            while digits.len() > 1 && digits[digits.len() - 1] == b'0' {
                digits.pop();
            }
        }
    }
    if v < 0.0 {
        out.push(b'-');
    }
    let nd = digits.len() as i32;
    let decpt = exp + 1;
    if -4 < decpt && decpt <= 16 {
        if decpt <= 0 {
            out.extend_from_slice(b"0.");
            out.extend(std::iter::repeat_n(b'0', (-decpt) as usize));
            out.extend_from_slice(&digits);
        } else if decpt >= nd {
            out.extend_from_slice(&digits);
            out.extend(std::iter::repeat_n(b'0', (decpt - nd) as usize));
            out.extend_from_slice(b".0");
        } else {
            out.extend_from_slice(&digits[..decpt as usize]);
            out.push(b'.');
            out.extend_from_slice(&digits[decpt as usize..]);
        }
    } else {
        out.push(digits[0]);
        if nd > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        let x = decpt - 1;
        let _ = write!(out, "e{}{:02}", if x < 0 { '-' } else { '+' }, x.abs());
    }
}

/// `rounded` (v in d.ddde±x) is v exactly: the full expansion (at most 767 significant digits)
/// has nothing after those digits.
fn is_exact(v: f64, rounded: &str) -> bool {
    let shown = rounded.find('e').expect("exponent") - 1; // digits shown, point excluded
    let full = format!("{:.800e}", v.abs());
    let e = full.find('e').expect("exponent");
    let all: Vec<u8> = full.as_bytes()[..e].iter().copied().filter(|&b| b != b'.').collect();
    all[shown..].iter().all(|&b| b == b'0')
}

/// The repr of a float as a Python string (for tests: tests/unit/test_nmon_native.py).
#[pyfunction]
fn float_repr(v: f64) -> String {
    let mut out = Vec::new();
    push_repr(&mut out, v);
    String::from_utf8(out).expect("ASCII")
}

/// The repr of the float a cell's text reads as, by the path the scanner takes (for tests).
#[pyfunction]
fn cell_repr(text: &[u8]) -> Option<String> {
    let mut out = Vec::new();
    if let Some(d) = decimal(text) {
        push_decimal_repr(&mut out, text, &d);
    } else {
        push_repr(&mut out, parse_float(text).filter(|v| v.is_finite())?);
    }
    Some(String::from_utf8(out).expect("ASCII"))
}

/// json.dumps(s) with ensure_ascii (for tests).
#[pyfunction]
fn json_str(s: &str) -> String {
    let mut out = Vec::new();
    push_json_str(&mut out, s);
    String::from_utf8(out).expect("ASCII")
}

/// One bytes object holding `parts` one after the other (`len`: their total length). Not
/// PyBytes::new_with, which zeroes the buffer before the closure fills it: that memset was as
/// much work as the copy itself, 3.6 % of a `parse nmon` (callgrind, 12 MB AIX file).
fn bytes_of<'py>(py: Python<'py>, parts: &[&[u8]], len: usize) -> Bound<'py, PyBytes> {
    // SAFETY: PyBytes_FromStringAndSize(NULL, n) returns a new bytes object of n bytes whose
    // contents are uninitialised (or NULL with an exception set); the copies below write exactly
    // `len` bytes into it, each within its buffer, before Python sees it.
    unsafe {
        let obj = pyo3::ffi::PyBytes_FromStringAndSize(std::ptr::null(), len as pyo3::ffi::Py_ssize_t);
        assert!(!obj.is_null(), "a bytes object of {len} bytes");
        let mut dst = pyo3::ffi::PyBytes_AsString(obj).cast::<u8>();
        let mut written = 0;
        for part in parts {
            written += part.len();
            assert!(written <= len, "parts longer than the bytes object");
            std::ptr::copy_nonoverlapping(part.as_ptr(), dst, part.len());
            dst = dst.add(part.len());
        }
        assert_eq!(written, len, "parts shorter than the bytes object");
        Bound::from_owned_ptr(py, obj).downcast_into_unchecked()
    }
}

/// The cells of line[base..] between commas, as byte ranges, appended to `fields`. Eight bytes
/// at a time: a word's commas found with exact zero-byte arithmetic on word ^ ",,,,,,,," (no
/// carry crosses a byte), then one step per comma; the bytes after the last whole word one by one.
/// (A byte loop's branch per byte, mispredicted at every comma, was the larger part of raw_line's
/// ~12 % of a Linux file's `parse nmon`, perf; a SIMD search per comma cost more, see line().)
fn split_commas(line: &[u8], base: usize, fields: &mut Vec<(usize, usize)>) {
    const COMMAS: u64 = u64::from_ne_bytes([b','; 8]);
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let mut start = base;
    let mut at = base;
    while at + 8 <= line.len() {
        let word = u64::from_le_bytes(line[at..at + 8].try_into().expect("8 bytes")) ^ COMMAS;
        // 0x80 in each byte that was a comma (now zero), nothing elsewhere
        let mut hits = !(((word & LOW7) + LOW7) | word | LOW7);
        while hits != 0 {
            let p = at + (hits.trailing_zeros() / 8) as usize;
            fields.push((start, p));
            start = p + 1;
            hits &= hits - 1;
        }
        at += 8;
    }
    for (p, &b) in line.iter().enumerate().skip(at) {
        if b == b',' {
            fields.push((start, p));
            start = p + 1;
        }
    }
    fields.push((start, line.len()));
}

// --- Python's notion of blanks, so labels and numbers match the reference parser.

/// bytes.strip(): ASCII space, \t \n \v \f \r.
fn strip_bytes(s: &[u8]) -> &[u8] {
    let blank = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r');
    // most cells have nothing to strip: their two ends tell (2 % of `parse nmon`'s work otherwise)
    // (every blank is at most b' ': one comparison an end)
    match (s.first(), s.last()) {
        (Some(&a), Some(&z)) if a > b' ' && z > b' ' => return s,
        _ => {}
    }
    let start = s.iter().position(|b| !blank(b)).unwrap_or(s.len());
    let end = s.iter().rposition(|b| !blank(b)).map_or(start, |p| p + 1);
    &s[start..end]
}

/// bytes.decode("utf-8", "replace").strip(): str.isspace() also counts \x1c..\x1f; written
/// into `out` (cleared first), whose buffer is reused from row to row.
fn text_value_into(s: &[u8], out: &mut String) {
    out.clear();
    if s.is_ascii() {
        // nearly every text cell (TOP's command): the same blanks as bytes, without the lossy
        // decoding's chunking and a char-wise trim (~2 % of a Linux file's `parse nmon`, callgrind)
        let blank = |b: &u8| matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | 0x1c..=0x1f | b' ');
        let start = s.iter().position(|b| !blank(b)).unwrap_or(s.len());
        let end = s.iter().rposition(|b| !blank(b)).map_or(start, |p| p + 1);
        out.push_str(std::str::from_utf8(&s[start..end]).expect("ASCII is UTF-8"));
        return;
    }
    let decoded = String::from_utf8_lossy(s);
    out.push_str(decoded.trim_matches(|c: char| c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)));
}

/// A data line's labels, as the reference parser's dict: a repeated column name keeps its first
/// position and takes the last value. Keys are column indexes of the section's header; value
/// buffers stay allocated from row to row (a String per label and row, then freed, was ~8 % of a
/// Linux file's `parse nmon`: TOP's PID and command on every process line, perf).
#[derive(Default)]
struct Labels {
    items: Vec<(usize, String)>, // (column index, value); only the first `len` are this line's
    len: usize,
}

impl Labels {
    fn clear(&mut self) {
        self.len = 0;
    }

    /// (column index, value) in dict order.
    fn items(&self) -> &[(usize, String)] {
        &self.items[..self.len]
    }

    fn get<'a>(&'a self, columns: &[String], name: &str) -> Option<&'a str> {
        self.items()
            .iter()
            .find(|(c, _)| columns[*c] == name)
            .map(|(_, v)| v.as_str())
    }

    /// labels[columns[column]] = text_value(raw)
    fn set(&mut self, columns: &[String], column: usize, raw: &[u8]) {
        let name = &columns[column];
        let at = match self.items[..self.len].iter().position(|(c, _)| columns[*c] == *name) {
            Some(at) => at,
            None => {
                if self.len == self.items.len() {
                    self.items.push((column, String::new()));
                }
                self.items[self.len].0 = column;
                self.len += 1;
                self.len - 1
            }
        };
        text_value_into(raw, &mut self.items[at].1);
    }
}

/// A short decimal (`fast_decimal`) and where its digits are, for its repr.
struct Decimal {
    mantissa: u64,   // the digits as an integer, below 10^15
    fraction: usize, // digits after the point: the number is mantissa / 10^fraction
    negative: bool,
    start: usize, // index of the first digit or '.', after the sign
    point: usize, // index of the '.', or the text's length
    zero: bool,   // every digit is 0
}

/// Clinger's fast path: a decimal of at most 15 significant digits and 22 fraction digits is
/// exactly m / 10^k with m and 10^k exact doubles, and one IEEE division rounds correctly, so the
/// result has the bits Python's float() gives. Most nmon cells are like "12.3"; anything else
/// (exponents, long mantissas, inf, nan) goes to the standard parser. One branch-light pass: a
/// 16th significant digit is the mantissa reaching 10^15 (leading zeros leave it at 0).
fn decimal(s: &[u8]) -> Option<Decimal> {
    const LIMIT: u64 = 1_000_000_000_000_000;
    let (negative, start) = match s.first() {
        Some(b'-') => (true, 1),
        Some(b'+') => (false, 1),
        _ => (false, 0),
    };
    let n = s.len();
    let mut mantissa: u64 = 0;
    let mut i = start;
    while i < n {
        let d = s[i].wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        mantissa = mantissa * 10 + u64::from(d);
        if mantissa >= LIMIT {
            return None;
        }
        i += 1;
    }
    let point = i;
    let mut fraction = 0;
    if i < n {
        if s[i] != b'.' {
            return None;
        }
        i += 1;
        while i < n {
            let d = s[i].wrapping_sub(b'0');
            if d > 9 {
                return None;
            }
            mantissa = mantissa * 10 + u64::from(d);
            if mantissa >= LIMIT {
                return None;
            }
            i += 1;
        }
        fraction = n - point - 1;
    }
    if (point == start && fraction == 0) || fraction > 22 {
        return None; // no digit at all, or beyond the exact powers of ten
    }
    Some(Decimal {
        mantissa,
        fraction,
        negative,
        start,
        point,
        zero: mantissa == 0,
    })
}

impl Decimal {
    /// The double Python's float() reads from the text (one correctly rounded division).
    fn value(&self) -> f64 {
        const POW10: [f64; 23] = [
            1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18,
            1e19, 1e20, 1e21, 1e22,
        ];
        let value = self.mantissa as f64 / POW10[self.fraction];
        if self.negative {
            -value
        } else {
            value
        }
    }

    /// Whether the number passes its column's checks (those of Scanner::data) for certain, told
    /// from its digits without the division: false when unsure or when it fails (the caller then
    /// checks the double). Rounding is monotonic and the bounds are integers a double holds
    /// exactly, so digits at most a bound make a double at most that bound. (The division's
    /// latency, waited on by the checks, was ~3 % of a Linux file's `parse nmon`, perf.)
    fn passes(&self, kind: u8, percent_cap: u128) -> bool {
        const POW10: [u128; 23] = {
            let mut p = [1u128; 23];
            let mut i = 1;
            while i < 23 {
                p[i] = p[i - 1] * 10;
                i += 1;
            }
            p
        };
        if self.negative && self.mantissa != 0 && kind >= 1 {
            return false; // "negative"
        }
        let m = u128::from(self.mantissa);
        match kind {
            2 => m <= percent_cap * POW10[self.fraction],
            4 => m <= (i32::MAX as u128) * POW10[self.fraction],
            _ => true,
        }
    }
}

fn fast_decimal(s: &[u8]) -> Option<f64> {
    decimal(s).map(|d| d.value())
}

fn parse_float(s: &[u8]) -> Option<f64> {
    fast_decimal(s).or_else(|| std::str::from_utf8(s).ok().and_then(|t| t.parse::<f64>().ok()))
}

/// "HH:MM:SS" (one or two digits each) -> seconds of the day, for times datetime() accepts.
fn parse_clock(s: &[u8]) -> Option<i64> {
    let mut it = s.split(|&b| b == b':');
    let (h, m, sec) = (
        small_number(it.next()?)?,
        small_number(it.next()?)?,
        small_number(it.next()?)?,
    );
    if it.next().is_some() || h > 23 || m > 59 || sec > 59 {
        return None;
    }
    Some(h * 3600 + m * 60 + sec)
}

/// "DD-MON-YYYY" -> (year, month, day) for real dates.
fn parse_day(s: &[u8]) -> Option<(i64, i64, i64)> {
    const MONTHS: [&[u8; 3]; 12] = [
        b"JAN", b"FEB", b"MAR", b"APR", b"MAY", b"JUN", b"JUL", b"AUG", b"SEP", b"OCT", b"NOV", b"DEC",
    ];
    let mut it = s.split(|&b| b == b'-');
    let (d, mon, y) = (it.next()?, it.next()?, it.next()?);
    if it.next().is_some() || mon.len() != 3 || y.len() != 4 {
        return None;
    }
    let upper = [
        mon[0].to_ascii_uppercase(),
        mon[1].to_ascii_uppercase(),
        mon[2].to_ascii_uppercase(),
    ];
    let month = MONTHS.iter().position(|m| **m == upper)? as i64 + 1;
    let (day, year) = (
        small_number(d)?,
        y.iter()
            .try_fold(0i64, |n, b| b.is_ascii_digit().then(|| n * 10 + i64::from(b - b'0')))?,
    );
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][(month - 1) as usize];
    (year >= 1 && day >= 1 && day <= days).then_some((year, month, day))
}

fn small_number(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 2 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0, |n, b| n * 10 + i64::from(b - b'0')))
}

/// `AAA` or `BBB*` that `NmonParser.control` takes as configuration text: a valid section tag
/// (`[A-Z][A-Za-z0-9_+-]*`).
fn is_config_tag(tag: &[u8]) -> bool {
    (tag == b"AAA" || tag.starts_with(b"BBB"))
        && tag
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'+' || b == b'-')
}

/// `T0001`, at most MAX_TAG_CHARS long (parser.py `_is_snapshot_tag`); longer ones go to Python,
/// which words the error.
const MAX_TAG_CHARS: usize = 10;

/// A UTF-8 byte order mark before the first line (sniff.py BOM).
const BOM: &[u8] = b"\xef\xbb\xbf";

fn is_snapshot_tag(s: &[u8]) -> bool {
    s.len() > 1 && s.len() <= MAX_TAG_CHARS && s[0] == b'T' && s[1..].iter().all(u8::is_ascii_digit)
}

fn tag_number(tag: &[u8]) -> u64 {
    tag[1..]
        .iter()
        .fold(0u64, |n, d| n.saturating_mul(10).saturating_add(u64::from(d - b'0')))
}

/// How one record field is written: a plan per record, compiled in Python from the topic's .avsc
/// (ingest/nmon/native_parser.py), so the schemas stay the one description of the records.
#[derive(Clone, Copy)]
enum Field {
    ContextStr(usize),    // string: host_id, hostname, source, origin_file
    ContextDouble(usize), // double: interval_s
    Ts,                   // long: the snapshot's ZZZZ time, epoch ms
    Tag,                  // string: origin_snapshot
    Rows,                 // array<NmonRow>: the snapshot's rows
    CpuDouble(usize),     // ["null", "double"] from a typed cpu slot
    CpuInt(usize),        // ["null", "int"] from a typed cpu slot
}

fn compile_plan(plan: Vec<(String, usize)>) -> PyResult<Vec<Field>> {
    if plan.iter().filter(|(kind, _)| kind == "rows").count() > 1 {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "a record has one rows field at most",
        ));
    }
    plan.into_iter()
        .map(|(kind, i)| {
            Ok(match kind.as_str() {
                "context_str" => Field::ContextStr(i),
                "context_double" => Field::ContextDouble(i),
                "ts" => Field::Ts,
                "tag" => Field::Tag,
                "rows" => Field::Rows,
                "cpu_double" if i < CPU_SLOTS => Field::CpuDouble(i),
                "cpu_int" if i < CPU_SLOTS => Field::CpuInt(i),
                other => {
                    return Err(pyo3::exceptions::PyValueError::new_err(format!(
                        "unknown plan field {other} {i}"
                    )))
                }
            })
        })
        .collect()
}

/// What the records of a snapshot share with the file: identity and interval (set by Python at
/// every ZZZZ line, since AAA lines decide them).
#[derive(Default)]
struct Context {
    strings: Vec<String>,
    doubles: Vec<f64>,
    // the same as Python's JSON renders them (lines mode); None: a number JSON cannot show
    json_strings: Vec<Vec<u8>>,
    json_doubles: Vec<Option<Vec<u8>>>,
}

impl Context {
    /// (strings, doubles) as the hooks give them, and in lines mode their JSON texts.
    fn of(answer: &Bound<'_, PyAny>) -> PyResult<Context> {
        let t = answer.downcast::<PyTuple>()?;
        let mut context = Context {
            strings: t.get_item(0)?.extract()?,
            doubles: t.get_item(1)?.extract()?,
            ..Context::default()
        };
        if t.len() > 2 {
            let strings: Vec<String> = t.get_item(2)?.extract()?;
            let doubles: Vec<Option<String>> = t.get_item(3)?.extract()?;
            context.json_strings = strings.into_iter().map(String::into_bytes).collect();
            context.json_doubles = doubles.into_iter().map(|d| d.map(String::into_bytes)).collect();
        }
        Ok(context)
    }
}

/// Lines mode (`fleetperf parse`): what Python rendered once per file of the JSON lines around
/// the scanner's part, and the lines written since the last event.
struct JsonOut {
    heads: [Vec<u8>; 2],         // nmon_snapshots, cpu_samples: `{"topic": "...", "key": `
    keys: [Vec<Vec<u8>>; 2],     // per plan field: `, "value": {"host_id": ` then `, "name": `
    out: Vec<u8>,                // complete lines, flushed as one event, but for:
    rows: Vec<(usize, Vec<u8>)>, // snapshots' rows, moved here, and where in `out` they go
    counts: [u64; 3],            // nmon_snapshots, cpu_samples, values in `out`
    fd: Option<i32>,             // where `parse` wants the lines written (write_lines_to), or None
}

impl JsonOut {
    /// The lines written since the last event, in order: `out` with each snapshot's rows put in
    /// at its place (the rows were moved here, not copied into `out`).
    fn pieces(&self) -> Vec<&[u8]> {
        let mut pieces: Vec<&[u8]> = Vec::with_capacity(2 * self.rows.len() + 1);
        let mut from = 0;
        for (pos, rows) in &self.rows {
            pieces.push(&self.out[from..*pos]);
            pieces.push(rows);
            from = *pos;
        }
        pieces.push(&self.out[from..]);
        pieces
    }
}

struct Header {
    section: String,
    columns: Vec<String>,
    numeric: Vec<usize>,
    text: Vec<usize>,
    strict: bool,
    top: bool,
    entity_from_labels: Vec<String>,
    cpu_fields: Vec<(usize, usize)>, // (slot, position among the numbers)
    kinds: Vec<u8>, // validate.Kind per number: 0 any, 1 non-negative, 2 percent, 3 ratio, 4 32-bit count
    rest: Option<usize>, // the last column, the rest of the line commas and all (layout._REST_OF_LINE)
    section_avro: Vec<u8>,
    entities_avro: Vec<u8>, // unused when the entity comes from labels
    metrics_avro: Vec<u8>,
    // lines mode, rendered by Python: `{"section": "CPU", "entities": `, `["1"]`,
    // `, "metrics": [...], "values": [`
    json_head: Vec<u8>,
    json_metrics: Vec<u8>,
    json_prefix: Vec<u8>, // head, entities and metrics: a row up to its values, when its entity is fixed
    json_columns: Vec<Vec<u8>>, // each column's name as a JSON string (a label's key), rendered once
}

impl Header {
    fn from_spec(spec: &Bound<'_, PyTuple>) -> PyResult<Header> {
        let section: String = spec.get_item(0)?.extract()?;
        let columns: Vec<String> = spec.get_item(1)?.extract()?;
        let numeric: Vec<usize> = spec.get_item(2)?.extract()?;
        let text: Vec<usize> = spec.get_item(3)?.extract()?;
        let entities: Vec<String> = spec.get_item(4)?.extract()?;
        let metrics: Vec<String> = spec.get_item(5)?.extract()?;
        let strict: bool = spec.get_item(6)?.extract()?;
        let top: bool = spec.get_item(7)?.extract()?;
        let entity_from_labels: Vec<String> = spec.get_item(8)?.extract()?;
        let cpu_fields: Vec<(usize, usize)> = spec.get_item(9)?.extract()?;
        let kinds: Vec<u8> = spec.get_item(10)?.extract()?;
        let rest: i64 = spec.get_item(11)?.extract()?;
        let rest = usize::try_from(rest).ok().filter(|&r| r + 1 == columns.len());
        let (json_head, json_entities, json_metrics): (String, String, String) = if spec.len() > 12 {
            spec.get_item(12)?.extract()?
        } else {
            Default::default()
        };
        if kinds.len() != numeric.len() {
            return Err(pyo3::exceptions::PyValueError::new_err("one kind per numeric column"));
        }
        if cpu_fields.iter().any(|(slot, _)| *slot >= CPU_SLOTS) {
            return Err(pyo3::exceptions::PyValueError::new_err("cpu slot out of range"));
        }
        let mut section_avro = Vec::new();
        put_str(&mut section_avro, section.as_bytes());
        let json_columns = columns
            .iter()
            .map(|c| {
                let mut key = Vec::new();
                push_json_str(&mut key, c);
                key
            })
            .collect();
        Ok(Header {
            section,
            columns,
            numeric,
            text,
            strict,
            top,
            entity_from_labels,
            cpu_fields,
            kinds,
            rest,
            section_avro,
            entities_avro: str_array(&entities),
            metrics_avro: str_array(&metrics),
            json_prefix: [json_head.as_bytes(), json_entities.as_bytes(), json_metrics.as_bytes()].concat(),
            json_head: json_head.into_bytes(),
            json_metrics: json_metrics.into_bytes(),
            json_columns,
        })
    }
}

struct Snap {
    tag: Vec<u8>,
    key: TagKey, // tag_key(tag)
    number: u64,
    rows: Vec<u8>,
    n_rows: u64,
    n_values: u64,
    cpu: [Option<f64>; CPU_SLOTS],
    cpu_json: [Vec<u8>; CPU_SLOTS], // lines mode: the repr of each cpu value, as in the rows
    cpu_any: bool,
    first_line: u64,
    first_offset: u64,
    ts: Option<i64>,
    lines: u64,     // data lines
    size: u64,      // bytes of its data lines
    overflow: bool, // larger than max_snapshot: rows dropped, lines only counted
}

impl Snap {
    fn is(&self, key: TagKey, tag: &[u8]) -> bool {
        self.key == key && (key != LONG_TAG || self.tag == tag)
    }

    fn new(tag: &[u8], first_line: u64, first_offset: u64, capacity: usize) -> Snap {
        let rows = Vec::with_capacity(capacity);
        Snap {
            tag: tag.to_vec(),
            key: tag_key(tag),
            number: tag_number(tag),
            rows,
            n_rows: 0,
            n_values: 0,
            cpu: [None; CPU_SLOTS],
            cpu_json: std::array::from_fn(|_| Vec::new()),
            cpu_any: false,
            first_line,
            first_offset,
            ts: None,
            lines: 0,
            size: 0,
            overflow: false,
        }
    }
}

/// Feed it chunks of one nmon file in order; it returns events as snapshots complete:
/// ("snapshot", number, values, nmon_snapshots Avro, cpu_samples Avro or None), ("dead", line,
/// offset, error, raw), ("config",) where the reference parser emits the host configuration.
#[pyclass(module = "fleetperf_nmon_scan")]
struct Scanner {
    hooks: PyObject,
    headers: FxHashMap<TagKey, Rc<Header>>,       // by tag_key
    long_headers: FxHashMap<Vec<u8>, Rc<Header>>, // tags of more than 15 bytes
    // headers (their address) whose data lines had values past their last column: reported once
    // a header (parser.py beyond_reported)
    beyond_reported: FxHashSet<usize>,
    snaps: Vec<Snap>, // open snapshots in the order they were first seen (usually one or two)
    carry: Vec<u8>,
    next_offset: u64,
    #[pyo3(get)]
    lines: u64,
    #[pyo3(get)]
    last_line_offset: i64,
    events: Vec<PyObject>,
    json: Option<JsonOut>, // lines mode: records written as `fleetperf parse`'s JSON lines
    values: Vec<Option<f64>>,
    values_json: Vec<u8>,             // lines mode: the line's values as a JSON list body
    value_spans: Vec<(usize, usize)>, // each value's text in values_json
    labels: Labels,
    entity: String,              // the entity made of text columns (TOP), reused
    fields: Vec<(usize, usize)>, // cells of the current line as byte ranges, reused
    rows_hint: usize,            // size of the last snapshot's rows, to allocate once
    snapshot_plan: Vec<Field>,
    cpu_plan: Vec<Field>,
    context: Context,
    seen_zzzz: bool, // the first ZZZZ always goes to Python (host configuration)
    // AAA/BBB* lines (tag, rest) not yet handed to Python: one call per run of them instead of one
    // per line (an AIX file has ~1,500 BBBP lines); handed over before anything that writes context
    config_lines: Vec<(Vec<u8>, Vec<u8>)>,
    days: FxHashMap<(i64, i64, i64), Option<i64>>, // midnight in epoch ms, None: the offset changes that day
    limits: Limits,
    started: bool, // a non-blank line was seen (and it was AAA,)
    #[pyo3(get)]
    rejected: Option<String>, // why the whole file is not read
    cut_offset: Option<u64>, // the file ended inside a line starting here
    skipping: Option<(Vec<u8>, u64)>, // an over-long line being skipped: its head, its length so far
    seen_ts: FxHashMap<i64, (Vec<u8>, u64)>, // time -> (tag, line) of published snapshots
}

/// Bounds and wording shared with parser.py (passed in, so they exist once).
struct Limits {
    max_line: u64,
    max_snapshot: u64,
    max_number_chars: usize,
    percent_max: f64,
    percent_cap: u128, // the largest integer at most percent_max (Decimal::passes)
    raw_kept: usize,
    not_nmon: String,
    empty: String,
    cut: String,
}

enum LineOutcome {
    Ok,
    Error(String),
    /// the headers changed under the line's tag (NmonParser.shift_cpuutil): read it again
    Again,
}

#[pymethods]
impl Scanner {
    /// hooks.scan_control(tag, rest, line, line_no) answers the lines that are not data, but for
    /// configuration text (hooks.scan_config, several lines at once); the
    /// plans say how nmon_snapshots and cpu_samples records are written, field by field. With
    /// `lines` (each record's head `{"topic": ..., "key": ` and the text before each plan field)
    /// they are written as `fleetperf parse`'s JSON lines instead of Avro: ("lines", text,
    /// snapshots, cpu samples, values) events; the hooks then answer contexts with their JSON.
    #[new]
    #[allow(clippy::type_complexity)]
    #[pyo3(signature = (hooks, snapshot_plan, cpu_plan, limits, lines=None))]
    fn new(
        hooks: PyObject,
        snapshot_plan: Vec<(String, usize)>,
        cpu_plan: Vec<(String, usize)>,
        limits: (u64, u64, usize, f64, usize, (String, String, String)),
        lines: Option<((String, Vec<String>), (String, Vec<String>))>,
    ) -> PyResult<Scanner> {
        let (max_line, max_snapshot, max_number_chars, percent_max, raw_kept, (not_nmon, empty, cut)) = limits;
        let json = match lines {
            None => None,
            Some(((snap_head, snap_keys), (cpu_head, cpu_keys))) => {
                if snap_keys.len() != snapshot_plan.len() || cpu_keys.len() != cpu_plan.len() {
                    return Err(pyo3::exceptions::PyValueError::new_err("one JSON key per plan field"));
                }
                let bytes = |keys: Vec<String>| keys.into_iter().map(String::into_bytes).collect();
                Some(JsonOut {
                    heads: [snap_head.into_bytes(), cpu_head.into_bytes()],
                    keys: [bytes(snap_keys), bytes(cpu_keys)],
                    out: Vec::new(),
                    rows: Vec::new(),
                    counts: [0; 3],
                    fd: None,
                })
            }
        };
        Ok(Scanner {
            json,
            values_json: Vec::new(),
            value_spans: Vec::new(),
            limits: Limits {
                max_line,
                max_snapshot,
                max_number_chars,
                percent_max,
                percent_cap: if percent_max >= 0.0 {
                    percent_max.floor() as u128
                } else {
                    0
                },
                raw_kept,
                not_nmon,
                empty,
                cut,
            },
            started: false,
            rejected: None,
            cut_offset: None,
            skipping: None,
            seen_ts: FxHashMap::default(),
            hooks,
            headers: FxHashMap::default(),
            long_headers: FxHashMap::default(),
            beyond_reported: FxHashSet::default(),
            fields: Vec::new(),
            rows_hint: 0,
            snapshot_plan: compile_plan(snapshot_plan)?,
            cpu_plan: compile_plan(cpu_plan)?,
            context: Context::default(),
            seen_zzzz: false,
            config_lines: Vec::new(),
            days: FxHashMap::default(),
            snaps: Vec::new(),
            carry: Vec::new(),
            next_offset: 0,
            lines: 0,
            last_line_offset: -1,
            events: Vec::new(),
            values: Vec::new(),
            labels: Labels::default(),
            entity: String::new(),
        })
    }

    /// Lines mode: write the lines to this fd (`parse`'s stdout, its Python buffers flushed
    /// before every call that feeds the scanner) instead of handing them to Python as bytes,
    /// whenever no other event waits before them; None: as bytes again.
    #[pyo3(signature = (fd))]
    fn write_lines_to(&mut self, fd: Option<i32>) -> PyResult<()> {
        match self.json.as_mut() {
            Some(json) => {
                json.fd = fd;
                Ok(())
            }
            None if fd.is_none() => Ok(()),
            None => Err(pyo3::exceptions::PyValueError::new_err("not in lines mode")),
        }
    }

    /// Bytes read so far that ended in a complete line.
    #[getter]
    fn consumed(&self) -> u64 {
        self.next_offset
    }

    fn feed<'py>(&mut self, py: Python<'py>, chunk: &[u8]) -> PyResult<Bound<'py, PyList>> {
        let mut start = 0;
        if self.skipping.is_some() || !self.carry.is_empty() {
            match memchr(b'\n', chunk) {
                Some(p) => {
                    if let Some((mut head, length)) = self.skipping.take() {
                        let (line_no, offset) = (self.lines + 1, self.next_offset);
                        let room = self.limits.raw_kept.saturating_sub(head.len());
                        head.extend_from_slice(&chunk[..p.min(room)]);
                        self.long_line(py, head, length + p as u64, true, line_no, offset);
                    } else {
                        let mut line = std::mem::take(&mut self.carry);
                        line.extend_from_slice(&chunk[..=p]);
                        self.raw_line(py, &line)?;
                    }
                    start = p + 1;
                }
                None => {
                    self.keep(chunk);
                    self.flush_config(py)?;
                    return self.take_events(py);
                }
            }
        }
        let mut rest = &chunk[start..];
        while let Some(p) = memchr(b'\n', rest) {
            self.raw_line(py, &rest[..=p])?;
            rest = &rest[p + 1..];
        }
        self.keep(rest);
        self.flush_config(py)?;
        self.take_events(py)
    }

    /// Offset before which every line is accounted for by the events so far (parser.py
    /// `resume_offset`).
    #[getter]
    fn resume_offset(&self) -> u64 {
        if self.rejected.is_some() {
            return 0;
        }
        let end = self.cut_offset.unwrap_or(self.next_offset);
        self.snaps.iter().map(|s| s.first_offset).fold(end, u64::min)
    }

    /// The file cannot be read on (a damaged gzip stream): like a cut, with the reason.
    fn damaged<'py>(&mut self, py: Python<'py>, reason: String) -> PyResult<Bound<'py, PyList>> {
        self.carry.clear();
        self.skipping = None;
        if self.rejected.is_none() {
            self.cut_offset = Some(self.next_offset);
            self.dead(py, self.lines + 1, self.next_offset, reason, b"");
        }
        self.take_events(py)
    }

    /// End of file: a last line without newline, then every snapshot still open.
    #[pyo3(signature = (context, complete_tail=true))]
    fn finish<'py>(
        &mut self,
        py: Python<'py>,
        context: Bound<'py, PyAny>,
        complete_tail: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        self.context = Context::of(&context)?;
        if let Some((head, length)) = self.skipping.take() {
            let (line_no, offset) = (self.lines + 1, self.next_offset);
            self.long_line(py, head, length, false, line_no, offset);
        } else if !self.carry.is_empty() {
            let line = std::mem::take(&mut self.carry);
            self.cut_line(py, &line)?;
        }
        self.flush_config(py)?;
        if self.rejected.is_some() {
            return self.take_events(py);
        }
        if !self.started {
            let message = self.limits.empty.clone();
            self.reject(py, message, 1, 0, b"");
            return self.take_events(py);
        }
        if self.cut_offset.is_none() && complete_tail {
            // a clean end: every open snapshot is complete
            let mut open = std::mem::take(&mut self.snaps);
            open.sort_by_key(|s| s.number);
            for snap in open {
                self.close(py, snap);
            }
        }
        self.take_events(py)
    }

    /// A live file whose writer has been quiet (nmon writes a snapshot in one burst): the open
    /// snapshots that have their ZZZZ time and data lines are complete; closed now rather than at
    /// the next ZZZZ line, which then finds them gone (parser.py `flush_open_snapshot`). Nothing
    /// while a line is half-read.
    fn flush_open<'py>(&mut self, py: Python<'py>, context: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        if self.rejected.is_some() || self.cut_offset.is_some() || !self.carry.is_empty() || self.skipping.is_some() {
            return self.take_events(py);
        }
        self.flush_config(py)?;
        self.context = Context::of(&context)?;
        let (mut done, keep): (Vec<Snap>, Vec<Snap>) = std::mem::take(&mut self.snaps)
            .into_iter()
            .partition(|s| s.ts.is_some() && s.lines > 0);
        self.snaps = keep;
        done.sort_by_key(|s| s.number);
        for snap in done {
            self.close(py, snap);
        }
        self.take_events(py)
    }
}

impl Scanner {
    fn take_events<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        match self.json.as_ref().and_then(|json| json.fd) {
            // nothing else waits for Python: the lines cannot overtake an event, so they go to
            // the fd as they are (perf: copying them into one bytes object for Python to write
            // was ~7 % of a Linux file's `parse nmon`; a 40 MB file makes 209 MB of lines)
            Some(fd) if self.events.is_empty() => self.write_lines(py, fd)?,
            _ => self.flush_lines(py),
        }
        PyList::new(py, std::mem::take(&mut self.events))
    }

    /// Lines mode with an fd: the lines written since the last event go to it (all of them, or
    /// an OSError such as BrokenPipeError), then a ("lines", b"", ...) event counts them.
    fn write_lines(&mut self, py: Python<'_>, fd: i32) -> PyResult<()> {
        use std::io::IoSlice;
        let Some(json) = self.json.as_mut() else { return Ok(()) };
        if json.out.is_empty() {
            return Ok(());
        }
        let mut pieces: Vec<IoSlice<'_>> = json
            .pieces()
            .into_iter()
            .filter(|piece| !piece.is_empty())
            .map(IoSlice::new)
            .collect();
        // SAFETY: the fd is Python's (parse's stdout), open for the whole call; ManuallyDrop
        // keeps this File from closing it
        let mut file =
            std::mem::ManuallyDrop::new(unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) });
        let mut rest: &mut [IoSlice<'_>] = &mut pieces;
        while !rest.is_empty() {
            // write_vectored takes at most IOV_MAX pieces at a time and may write part of them
            match file.write_vectored(rest) {
                Ok(0) => return Err(std::io::Error::from(std::io::ErrorKind::WriteZero).into()),
                Ok(n) => IoSlice::advance_slices(&mut rest, n),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => py.check_signals()?,
                // a non-blocking stdout that is full: wait a little, as a blocking write would
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(std::time::Duration::from_millis(1))
                }
                Err(e) => return Err(e.into()),
            }
        }
        drop(pieces);
        self.lines_event(py, PyBytes::new(py, b""));
        Ok(())
    }

    /// The ("lines", text, snapshots, cpu samples, values) event of the lines written since the
    /// last event (text: those lines, or b"" when the scanner wrote them to the fd); they are gone.
    fn lines_event(&mut self, py: Python<'_>, text: Bound<'_, PyBytes>) {
        let json = self.json.as_mut().expect("lines mode");
        let [snapshots, cpus, values] = std::mem::take(&mut json.counts);
        json.out.clear();
        json.rows.clear();
        let event = ("lines", text, snapshots, cpus, values)
            .into_pyobject(py)
            .expect("tuple");
        self.events.push(event.into_any().unbind());
    }

    /// An event after the lines written so far (which go first, to keep the file's order).
    fn push_event(&mut self, py: Python<'_>, event: Bound<'_, PyTuple>) {
        self.flush_lines(py);
        self.events.push(event.into_any().unbind());
    }

    /// Lines mode: the JSON lines written since the last event as one ("lines", text, snapshots,
    /// cpu samples, values) event: one bytes object per fed chunk, not one per record.
    fn flush_lines(&mut self, py: Python<'_>) {
        let Some(json) = self.json.as_mut() else { return };
        if json.out.is_empty() {
            return;
        }
        // ASCII bytes (ensure_ascii): parse writes them to stdout's binary layer as they are
        let pieces = json.pieces();
        let text = bytes_of(py, &pieces, pieces.iter().map(|p| p.len()).sum());
        drop(pieces);
        self.lines_event(py, text);
    }

    fn dead(&mut self, py: Python<'_>, line_no: u64, offset: u64, message: String, raw: &[u8]) {
        let event = ("dead", line_no, offset, message, PyBytes::new(py, raw));
        self.push_event(py, event.into_pyobject(py).expect("tuple"));
    }

    /// The partial line of a chunk: kept, or skipped once longer than max_line.
    fn keep(&mut self, rest: &[u8]) {
        if let Some((head, length)) = self.skipping.as_mut() {
            // the dead letter keeps the line's first raw_kept bytes, however the chunks fell
            let room = self.limits.raw_kept.saturating_sub(head.len());
            head.extend_from_slice(&rest[..rest.len().min(room)]);
            *length += rest.len() as u64;
            return;
        }
        self.carry.extend_from_slice(rest);
        if self.carry.len() as u64 > self.limits.max_line {
            let mut head = std::mem::take(&mut self.carry);
            let length = head.len() as u64;
            head.truncate(self.limits.raw_kept);
            self.carry.shrink_to_fit();
            self.skipping = Some((head, length));
        }
    }

    /// A line longer than max_line: a dead letter with its first bytes; the file goes on.
    fn long_line(&mut self, py: Python<'_>, head: Vec<u8>, length: u64, complete: bool, line_no: u64, offset: u64) {
        if self.rejected.is_some() {
            return;
        }
        self.lines = line_no;
        if complete {
            self.next_offset = offset + length + 1;
            self.last_line_offset = offset as i64;
        } else {
            self.cut_offset = Some(offset);
        }
        let message = format!(
            "line longer than {} bytes ({} bytes): skipped",
            self.limits.max_line, length
        );
        let kept = head.len().min(self.limits.raw_kept);
        self.dead(py, line_no, offset, message, &head[..kept]);
    }

    fn reject(&mut self, py: Python<'_>, reason: String, line_no: u64, offset: u64, raw: &[u8]) {
        self.snaps.clear();
        self.config_lines.clear();
        let kept = raw.len().min(self.limits.raw_kept);
        self.dead(py, line_no, offset, reason.clone(), &raw[..kept]);
        self.rejected = Some(reason);
    }

    /// The first non-blank line decides whether this is nmon at all (sniff.py).
    fn sniffed(&mut self, py: Python<'_>, line: &[u8], line_no: u64, offset: u64) -> bool {
        if self.started {
            return true;
        }
        if !line.starts_with(b"AAA,") {
            let message = self.limits.not_nmon.clone();
            self.reject(py, message, line_no, offset, line);
            return false;
        }
        self.started = true;
        true
    }

    /// The end of the file came inside a line: not data; the snapshot it belongs to waits.
    fn cut_line(&mut self, py: Python<'_>, raw: &[u8]) -> PyResult<()> {
        if self.rejected.is_some() {
            return Ok(());
        }
        self.lines += 1;
        let (line_no, offset) = (self.lines, self.next_offset);
        if raw.len() as u64 > self.limits.max_line {
            let head = raw[..raw.len().min(self.limits.raw_kept)].to_vec();
            self.long_line(py, head, raw.len() as u64, false, line_no, offset);
            return Ok(());
        }
        let end = raw.iter().rposition(|&b| b != b'\n' && b != b'\r').map_or(0, |p| p + 1);
        let mut line = &raw[..end];
        if strip_bytes(line).is_empty() {
            return Ok(());
        }
        self.flush_config(py)?;
        if !self.started {
            line = line.strip_prefix(BOM).unwrap_or(line);
            if !self.sniffed(py, line, line_no, offset) {
                return Ok(());
            }
        }
        self.cut_offset = Some(offset);
        let message = self.limits.cut.clone();
        self.dead(py, line_no, offset, message, line);
        Ok(())
    }

    fn raw_line(&mut self, py: Python<'_>, raw: &[u8]) -> PyResult<()> {
        if self.rejected.is_some() {
            return Ok(());
        }
        self.lines += 1;
        let line_no = self.lines;
        let offset = self.next_offset;
        self.next_offset += raw.len() as u64;
        self.last_line_offset = offset as i64;
        if raw.len() as u64 - 1 > self.limits.max_line {
            let head = raw[..(raw.len() - 1).min(self.limits.raw_kept)].to_vec();
            self.long_line(py, head, raw.len() as u64 - 1, true, line_no, offset);
            return Ok(());
        }
        let end = raw.iter().rposition(|&b| b != b'\n' && b != b'\r').map_or(0, |p| p + 1);
        let mut line = &raw[..end];
        if strip_bytes(line).is_empty() {
            return Ok(());
        }
        if !self.started {
            self.flush_config(py)?;
            line = line.strip_prefix(BOM).unwrap_or(line);
            if !self.sniffed(py, line, line_no, offset) {
                return Ok(());
            }
        }
        if let LineOutcome::Error(message) = self.line(py, line, line_no, offset, raw.len() as u64)? {
            if self.rejected.is_none() {
                self.dead(py, line_no, offset, message, line);
            }
        }
        Ok(())
    }

    fn line(&mut self, py: Python<'_>, line: &[u8], line_no: u64, offset: u64, size: u64) -> PyResult<LineOutcome> {
        let comma = memchr(b',', line);
        let (tag, rest) = match comma {
            Some(p) => (&line[..p], &line[p + 1..]),
            None => (line, &line[line.len()..]),
        };
        if let Some(header) = find_header(&self.headers, &self.long_headers, tag) {
            // SAFETY: the Header lives in its own Arc allocation, held by self.headers or
            // self.long_headers, which only control lines change (headers are added or replaced
            // there, never in data(), whose &mut self also bars any re-entrant call from Python).
            // So it outlives the data() call below and nothing writes it meanwhile. (A clone of
            // the Arc per data line cost two atomic operations: ~2 % of `parse nmon`, perf.)
            let header: &Header = unsafe { &*Rc::as_ptr(header) };
            let base = line.len() - rest.len();
            self.fields.clear();
            // not memchr_iter: the cells are a few bytes long, and a SIMD search started per comma
            // cost more than it saved (2.6 M calls, 9 % of a `parse nmon`'s instructions,
            // callgrind on a 12 MB AIX file)
            split_commas(line, base, &mut self.fields);
            let cell = |k: usize| &line[self.fields[k].0..self.fields[k].1];
            if is_snapshot_tag(cell(0)) {
                return self.data(py, header, line, 1, None, (line_no, offset, size));
            }
            if header.top && self.fields.len() > 1 && is_snapshot_tag(cell(1)) {
                // TOP,<PID>,T0001,...: the process id comes before the snapshot tag
                return self.data(py, header, line, 2, Some(0), (line_no, offset, size));
            }
        }
        if tag == b"ZZZZ" && self.seen_zzzz && memchr(0, line).is_none() {
            if let Some((snap_tag, ts)) = self.quick_time(py, rest)? {
                self.flush_config(py)?;
                self.zzzz(py, snap_tag, ts, false, line_no, offset);
                return Ok(LineOutcome::Ok);
            }
        }
        if is_config_tag(tag) && memchr(0, line).is_none() {
            self.config_lines.push((tag.to_vec(), rest.to_vec()));
            return Ok(LineOutcome::Ok);
        }
        self.flush_config(py)?;
        match self.control(py, tag, rest, line, line_no, offset)? {
            // once per file at most, and the header is there now: the data path takes the line
            LineOutcome::Again if find_header(&self.headers, &self.long_headers, tag).is_some() => {
                self.line(py, line, line_no, offset, size)
            }
            LineOutcome::Again => Ok(LineOutcome::Error(format!(
                "{} data before its header line",
                String::from_utf8_lossy(tag)
            ))),
            outcome => Ok(outcome),
        }
    }

    /// hooks.scan_config([(tag, rest), ...]) takes the pending configuration lines; it answers the
    /// new context when an AAA line was among them (identity, interval), else None.
    fn flush_config(&mut self, py: Python<'_>) -> PyResult<()> {
        if self.config_lines.is_empty() {
            return Ok(());
        }
        let lines = std::mem::take(&mut self.config_lines);
        let items = lines.iter().map(|(t, r)| (PyBytes::new(py, t), PyBytes::new(py, r)));
        let answer = self.hooks.call_method1(py, "scan_config", (PyList::new(py, items)?,))?;
        let answer = answer.bind(py);
        if !answer.is_none() {
            self.context = Context::of(answer)?;
        }
        Ok(())
    }

    /// A well-formed `ZZZZ,Tnnnn,HH:MM:SS,DD-MON-YYYY` on a day whose UTC offset does not change:
    /// midnight of the day (asked of Python once per day, it knows the zone) plus the clock. Every
    /// other form, and days with a DST switch, go to Python's `control`, which also words errors.
    fn quick_time<'a>(&mut self, py: Python<'_>, rest: &'a [u8]) -> PyResult<Option<(&'a [u8], i64)>> {
        let mut parts = rest.split(|&b| b == b',');
        let (Some(snap_tag), Some(clock), Some(day)) = (parts.next(), parts.next(), parts.next()) else {
            return Ok(None);
        };
        if !is_snapshot_tag(snap_tag) {
            return Ok(None);
        }
        let (Some(clock), Some(date)) = (parse_clock(strip_bytes(clock)), parse_day(strip_bytes(day))) else {
            return Ok(None);
        };
        let midnight = match self.days.get(&date) {
            Some(known) => *known,
            None => {
                let answer = self.hooks.call_method1(py, "scan_day_start", date)?;
                let known: Option<i64> = answer.extract(py)?;
                self.days.insert(date, known);
                known
            }
        };
        Ok(midnight.map(|ms| (snap_tag, ms + clock * 1000)))
    }

    #[allow(clippy::too_many_arguments)]
    fn control(
        &mut self,
        py: Python<'_>,
        tag: &[u8],
        rest: &[u8],
        line: &[u8],
        line_no: u64,
        offset: u64,
    ) -> PyResult<LineOutcome> {
        let answer = self.hooks.call_method1(
            py,
            "scan_control",
            (
                PyBytes::new(py, tag),
                PyBytes::new(py, rest),
                PyBytes::new(py, line),
                line_no,
            ),
        )?;
        let answer = answer.bind(py);
        if answer.is_none() {
            return Ok(LineOutcome::Ok);
        }
        let answer = answer.downcast::<PyTuple>()?;
        let kind: String = answer.get_item(0)?.extract()?;
        match kind.as_str() {
            "error" => Ok(LineOutcome::Error(answer.get_item(1)?.extract()?)),
            "reject" => {
                let reason: String = answer.get_item(1)?.extract()?;
                self.reject(py, reason, line_no, offset, line);
                Ok(LineOutcome::Ok)
            }
            "header" => {
                // under the tag of the data lines it describes (NmonParser.data_tag)
                let key: Vec<u8> = answer.get_item(2)?.extract()?;
                let spec = answer.get_item(1)?;
                self.set_header(&key, Some(Header::from_spec(spec.downcast::<PyTuple>()?)?));
                Ok(LineOutcome::Ok)
            }
            "headers" => {
                for item in answer.get_item(1)?.try_iter()? {
                    let (key, spec): (Vec<u8>, Option<Bound<'_, PyTuple>>) = item?.extract()?;
                    let header = spec.map(|s| Header::from_spec(&s)).transpose()?;
                    self.set_header(&key, header);
                }
                Ok(LineOutcome::Again)
            }
            "zzzz" => {
                let snap_tag: Vec<u8> = answer.get_item(1)?.extract()?;
                let ts: i64 = answer.get_item(2)?.extract()?;
                let first: bool = answer.get_item(3)?.extract()?;
                self.context = Context::of(&answer.get_item(4)?)?;
                self.seen_zzzz = true;
                self.zzzz(py, &snap_tag, ts, first, line_no, offset);
                Ok(LineOutcome::Ok)
            }
            "context" => {
                self.context = Context::of(&answer.get_item(1)?)?;
                Ok(LineOutcome::Ok)
            }
            other => Err(pyo3::exceptions::PyValueError::new_err(format!(
                "control hook answered {other:?}"
            ))),
        }
    }

    /// The header of the data lines tagged `key` (None: none any more). Only control lines call
    /// this, never data(): see the SAFETY note in line().
    /// A header it replaces is forgotten (its address may be a new header's later).
    fn set_header(&mut self, key: &[u8], header: Option<Header>) {
        let k = tag_key(key);
        let old = match k {
            LONG_TAG => self.long_headers.remove(key),
            k => self.headers.remove(&k),
        };
        if let Some(old) = old {
            self.beyond_reported.remove(&(Rc::as_ptr(&old) as usize));
        }
        match (k, header) {
            (_, None) => {}
            (LONG_TAG, Some(h)) => drop(self.long_headers.insert(key.to_vec(), Rc::new(h))),
            (k, Some(h)) => drop(self.headers.insert(k, Rc::new(h))),
        }
    }

    fn zzzz(&mut self, py: Python<'_>, tag: &[u8], ts: i64, first: bool, line_no: u64, offset: u64) {
        if first {
            self.push_event(py, ("config", offset).into_pyobject(py).expect("tuple"));
        }
        // every other open snapshot has seen all its lines now (also when nmon restarted at T0001);
        // taken out in place, in the order they were opened (a partition into two new vectors per
        // ZZZZ line was ~1 % of a Linux file's `parse nmon`, callgrind)
        let key = tag_key(tag);
        let mut same = None;
        let mut open = std::mem::take(&mut self.snaps);
        for snap in open.drain(..) {
            if same.is_none() && snap.is(key, tag) {
                same = Some(snap);
            } else {
                self.close(py, snap);
            }
        }
        self.snaps = open; // empty, its capacity kept
        if let Some(snap) = same.take_if(|s| s.ts.is_some()) {
            self.close(py, snap); // a second ZZZZ line for the open snapshot
        }
        let mut snap = same.unwrap_or_else(|| Snap::new(tag, line_no, offset, self.rows_hint));
        snap.ts = Some(ts);
        self.snaps.push(snap);
    }

    /// A snapshot that will get no more lines: published, or a dead letter saying why not.
    fn close(&mut self, py: Python<'_>, snap: Snap) {
        // only the dead letters name it (a string per published snapshot otherwise)
        let name = || String::from_utf8_lossy(&snap.tag).into_owned();
        let message = if snap.overflow {
            format!(
                "snapshot {} larger than {} bytes ({} data lines, {} bytes): not published",
                name(),
                self.limits.max_snapshot,
                snap.lines,
                snap.size
            )
        } else if let Some(ts) = snap.ts {
            if snap.n_rows == 0 {
                return;
            }
            match self.seen_ts.get(&ts) {
                Some((other, line)) => format!(
                    "snapshot {} has the time of snapshot {} (line {line}) of this file (nmon restarted, or files spliced?): not published",
                    name(),
                    String::from_utf8_lossy(other)
                ),
                None => {
                    self.seen_ts.insert(ts, (snap.tag.clone(), snap.first_line));
                    self.emit(py, snap);
                    return;
                }
            }
        } else {
            if snap.lines == 0 {
                return;
            }
            format!(
                "snapshot {}: {} data lines without a valid ZZZZ time line: not published",
                name(),
                snap.lines
            )
        };
        self.dead(py, snap.first_line, snap.first_offset, message, &snap.tag);
    }

    fn snap_index(&mut self, tag: &[u8], line_no: u64, offset: u64) -> usize {
        let key = tag_key(tag);
        if let Some(i) = self.snaps.iter().position(|s| s.is(key, tag)) {
            return i;
        }
        self.snaps.push(Snap::new(tag, line_no, offset, self.rows_hint));
        self.snaps.len() - 1
    }

    fn emit(&mut self, py: Python<'_>, mut snap: Snap) {
        if snap.n_rows == 0 {
            return;
        }
        self.rows_hint = self.rows_hint.max(snap.rows.len());
        if self.json.is_some() {
            self.emit_json(py, &mut snap);
            return;
        }
        let record = |plan: &[Field]| {
            // written straight into the bytes object Python gets, so the rows are copied once
            let (mut before, mut after) = (Vec::with_capacity(128), Vec::with_capacity(64));
            let mut has_rows = false;
            for &field in plan {
                match field {
                    Field::Rows => has_rows = true,
                    other => self.write_field(if has_rows { &mut after } else { &mut before }, other, &snap),
                }
            }
            if !has_rows {
                return PyBytes::new(py, &before);
            }
            let mut count = Vec::with_capacity(10);
            put_long(&mut count, snap.n_rows as i64);
            let parts: [&[u8]; 5] = [&before, &count, &snap.rows, &[0], &after];
            let len = parts.iter().map(|p| p.len()).sum();
            bytes_of(py, &parts, len)
        };
        let snapshot = record(&self.snapshot_plan);
        let cpu = if snap.cpu_any {
            Some(record(&self.cpu_plan))
        } else {
            None
        };
        // the Kafka key is the host_id the records carry (context string 0), as of this snapshot
        let key = self.context.strings.first().map_or("", |k| k.as_str());
        let event = (
            "snapshot",
            snap.number,
            snap.n_values,
            snapshot,
            cpu,
            snap.first_offset,
            key,
        );
        self.events
            .push(event.into_pyobject(py).expect("tuple").into_any().unbind());
    }

    /// Lines mode: the snapshot's cpu_samples and nmon_snapshots messages as JSON lines, in the
    /// order `emit` gives their Avro. A record holding a number JSON cannot show (a non-finite
    /// context double) is not written: a ("nonfinite", topic key, key) event takes its place, and
    /// Python reports it as `parse` reports such a record.
    fn emit_json(&mut self, py: Python<'_>, snap: &mut Snap) {
        for (which, topic) in [(1usize, "cpu_samples"), (0, "nmon_snapshots")] {
            if which == 1 && !snap.cpu_any {
                continue;
            }
            let plan = if which == 0 {
                &self.snapshot_plan
            } else {
                &self.cpu_plan
            };
            let context = &self.context;
            let finite = plan.iter().all(|f| match f {
                Field::ContextDouble(i) => context.json_doubles.get(*i).is_none_or(|d| d.is_some()),
                _ => true,
            });
            if !finite {
                let key = context.strings.first().cloned().unwrap_or_default();
                self.push_event(py, ("nonfinite", topic, key).into_pyobject(py).expect("tuple"));
                continue;
            }
            let json = self.json.as_mut().expect("lines mode");
            let out = &mut json.out;
            out.extend_from_slice(&json.heads[which]);
            push_context_str(out, context, 0);
            for (field, key) in plan.iter().zip(&json.keys[which]) {
                out.extend_from_slice(key);
                match *field {
                    Field::ContextStr(i) => push_context_str(out, context, i),
                    Field::ContextDouble(i) => match context.json_doubles.get(i) {
                        Some(Some(text)) => out.extend_from_slice(text),
                        _ => out.extend_from_slice(b"0.0"), // as the Avro path writes a missing one
                    },
                    Field::Ts => {
                        let _ = write!(out, "{}", snap.ts.expect("emitted snapshots have a time"));
                    }
                    Field::Tag => push_json_str(out, &String::from_utf8_lossy(&snap.tag)),
                    Field::Rows => {
                        out.push(b'[');
                        if which == 0 {
                            // the rows (most of the text) are not copied here but once, straight
                            // into the bytes object, by flush_lines
                            json.rows.push((out.len(), std::mem::take(&mut snap.rows)));
                        } else {
                            out.extend_from_slice(&snap.rows);
                        }
                        out.push(b']');
                    }
                    Field::CpuDouble(slot) => match snap.cpu[slot] {
                        None => out.extend_from_slice(b"null"),
                        Some(_) => out.extend_from_slice(&snap.cpu_json[slot]),
                    },
                    // the reference parser stores int(value): truncation toward zero
                    Field::CpuInt(slot) => match snap.cpu[slot] {
                        None => out.extend_from_slice(b"null"),
                        Some(v) => {
                            let _ = write!(out, "{}", v.trunc() as i64);
                        }
                    },
                }
            }
            out.extend_from_slice(b"}}\n");
            json.counts[which] += 1;
            if which == 0 {
                json.counts[2] += snap.n_values;
            }
        }
    }

    fn write_field(&self, out: &mut Vec<u8>, field: Field, snap: &Snap) {
        match field {
            Field::ContextStr(i) => put_str(out, self.context.strings.get(i).map_or("", |s| s.as_str()).as_bytes()),
            Field::ContextDouble(i) => {
                out.extend_from_slice(&self.context.doubles.get(i).copied().unwrap_or(0.0).to_le_bytes())
            }
            Field::Ts => put_long(out, snap.ts.expect("emitted snapshots have a time")),
            Field::Tag => put_str(out, &snap.tag),
            Field::Rows => unreachable!("rows are placed by emit"),
            Field::CpuDouble(slot) => match snap.cpu[slot] {
                None => out.push(0),
                Some(v) => {
                    out.push(2);
                    out.extend_from_slice(&v.to_le_bytes());
                }
            },
            // the reference parser stores int(value): truncation toward zero
            Field::CpuInt(slot) => match snap.cpu[slot] {
                None => out.push(0),
                Some(v) => {
                    out.push(2);
                    put_long(out, v.trunc() as i64);
                }
            },
        }
    }

    /// A data line: its values are the cells from `first` on, after TOP's PID cell `pid`.
    #[allow(clippy::too_many_arguments)]
    fn data(
        &mut self,
        py: Python<'_>,
        header: &Header,
        line: &[u8],
        first: usize,
        pid: Option<usize>,
        (line_no, offset, size): (u64, u64, u64),
    ) -> PyResult<LineOutcome> {
        let snap_tag = &line[self.fields[first - 1].0..self.fields[first - 1].1];
        let idx = self.snap_index(snap_tag, line_no, offset);
        {
            let max_snapshot = self.limits.max_snapshot;
            let snap = &mut self.snaps[idx];
            snap.lines += 1;
            snap.size += size;
            if snap.overflow || snap.size > max_snapshot {
                // beyond the bound its rows are dropped and its lines only counted: one dead letter when it closes
                snap.overflow = true;
                snap.rows = Vec::new();
                snap.n_rows = 0;
                snap.n_values = 0;
                snap.cpu = [None; CPU_SLOTS];
                snap.cpu_any = false;
                return Ok(LineOutcome::Ok);
            }
        }
        let limits = &self.limits;
        let mut problems: Vec<String> = Vec::new();
        let fields = &self.fields;
        // cells past the header's last column (parser.py _data): not published, the first such
        // line of a header a dead letter; every cell after the tag but the snapshot tag counts
        // (TOP's PID is a column)
        let cells = fields.len() - 1;
        let address = header as *const Header as usize;
        let mut beyond = 0;
        if header.rest.is_none() && cells > header.columns.len() && !self.beyond_reported.contains(&address) {
            beyond = (header.columns.len()..cells)
                .filter(|&i| {
                    let k = if pid.is_some() { first + i - 1 } else { first + i };
                    !strip_bytes(&line[fields[k].0..fields[k].1]).is_empty()
                })
                .count();
            if beyond > 0 {
                self.beyond_reported.insert(address);
            }
        }
        // the values as the reference parser sees them: TOP's PID first, short lines padded
        let rest = header.rest;
        let cell = |i: usize| -> &[u8] {
            let k = match pid {
                Some(p) if i == 0 => p,
                Some(_) => first + i - 1,
                None => first + i,
            };
            match fields.get(k) {
                None => b"",
                // the rest of the line: from this cell to the end of the last, the commas kept
                Some(&(a, _)) if rest == Some(i) => &line[a..fields[fields.len() - 1].1],
                Some(&(a, b)) => &line[a..b],
            }
        };
        let labels = &mut self.labels;
        labels.clear();
        for &i in &header.text {
            labels.set(&header.columns, i, cell(i));
        }
        let values = &mut self.values;
        values.clear();
        // lines mode keeps the numbers only where the cpu_sample fields need them (the Avro path
        // always): elsewhere they are written as text and counted
        let keep = self.json.is_none() || !header.cpu_fields.is_empty();
        let mut count = 0usize;
        let json_mode = self.json.is_some();
        let (values_json, spans) = (&mut self.values_json, &mut self.value_spans);
        values_json.clear();
        spans.clear();
        // each value's text is wanted only by the cpu_sample fields this section fills
        let want_spans = json_mode && !header.cpu_fields.is_empty();
        // lines mode, entity known before the values (all but TOP): the row's head and values
        // go straight into the snapshot's rows, without a copy of the values (perf: the copies
        // of a row's pieces were ~6 % of lines mode)
        let direct = json_mode && header.entity_from_labels.is_empty();
        let values_json: &mut Vec<u8> = if direct {
            let snap = &mut self.snaps[idx];
            if snap.n_rows > 0 {
                put(&mut snap.rows, b", ");
            }
            snap.rows.extend_from_slice(&header.json_prefix);
            &mut snap.rows
        } else {
            values_json
        };
        let values_start = values_json.len();
        for (k, &i) in header.numeric.iter().enumerate() {
            let raw = cell(i);
            let trimmed = strip_bytes(raw);
            let nan_text = |t: &[u8]| {
                let t = if matches!(t.first(), Some(b'-') | Some(b'+')) {
                    &t[1..]
                } else {
                    t
                };
                t.eq_ignore_ascii_case(b"nan")
            };
            if json_mode {
                if values_json.len() > values_start {
                    put(values_json, b", ");
                }
                if want_spans {
                    spans.push((values_json.len(), values_json.len()));
                }
            }
            count += 1;
            if trimmed.is_empty() || (header.kinds[k] == 3 && nan_text(trimmed)) {
                if keep {
                    values.push(None);
                }
                if json_mode {
                    put(values_json, b"null");
                }
                continue;
            }
            // most cells are short decimals (whose repr also comes from their text)
            let fast = decimal(trimmed);
            if !keep && trimmed.len() <= limits.max_number_chars {
                if let Some(d) = &fast {
                    if d.passes(header.kinds[k], limits.percent_cap) {
                        push_decimal_repr(values_json, trimmed, d);
                        continue;
                    }
                }
            }
            // ingest/validate.py: parse_number, then out_of_range for the column's kind
            let why = if trimmed.len() > limits.max_number_chars {
                Err(format!("number too long ({} characters)", trimmed.len()))
            } else {
                let parsed = match &fast {
                    Some(d) => Some(d.value()),
                    None => parse_float(trimmed).filter(|_| memchr(b'_', trimmed).is_none()),
                };
                match parsed {
                    Some(v) if v.is_finite() => {
                        let kind = header.kinds[k];
                        if kind >= 1 && v < 0.0 {
                            Err("negative".to_string())
                        } else if kind == 2 && v > limits.percent_max {
                            Err("above 100 %".to_string())
                        } else if kind == 4 && v > f64::from(i32::MAX) {
                            Err(format!("above {}", i32::MAX))
                        } else {
                            Ok(v)
                        }
                    }
                    _ => Err("not a finite number".to_string()),
                }
            };
            match why {
                Ok(v) => {
                    if keep {
                        values.push(Some(v));
                    }
                    if json_mode {
                        if let Some(d) = &fast {
                            push_decimal_repr(values_json, trimmed, d);
                        } else {
                            push_repr(values_json, v);
                        }
                        if want_spans {
                            spans.last_mut().expect("a span per value").1 = values_json.len();
                        }
                    }
                }
                Err(why) => {
                    if keep {
                        values.push(None);
                    }
                    if json_mode {
                        put(values_json, b"null");
                    }
                    if header.strict {
                        let shown = PyBytes::new(py, &raw[..raw.len().min(40)]).repr()?.to_string();
                        problems.push(format!("{} {}: {}: {}", header.section, header.columns[i], why, shown));
                    } else {
                        // a section we do not know may carry text anywhere: keep it as a label
                        labels.set(&header.columns, i, raw);
                    }
                }
            }
        }
        let snap = &mut self.snaps[idx];
        let rows = &mut snap.rows;
        if json_mode {
            // {"section": ..., "entities": [...], "metrics": [...], "values": [...], "labels": {...}}
            if !direct {
                if snap.n_rows > 0 {
                    put(rows, b", ");
                }
                rows.extend_from_slice(&header.json_head);
                rows.push(b'[');
                // one entity also when every column is text (Linux UARG): the labels' key
                push_json_str(rows, entity_of(&mut self.entity, header, labels));
                rows.push(b']');
                rows.extend_from_slice(&header.json_metrics);
                rows.extend_from_slice(&self.values_json);
            }
            put(rows, b"], \"labels\": {");
            for (n, &(column, ref v)) in labels.items().iter().enumerate() {
                if n > 0 {
                    put(rows, b", ");
                }
                put(rows, &header.json_columns[column]);
                rows.extend_from_slice(b": ");
                push_json_str(rows, v);
            }
            put(rows, b"}}");
            let source: &[u8] = if direct { rows } else { &self.values_json };
            for &(slot, pos) in &header.cpu_fields {
                let text = &mut snap.cpu_json[slot];
                text.clear();
                if let Some(&(a, b)) = self.value_spans.get(pos) {
                    text.extend_from_slice(&source[a..b]);
                }
            }
        } else {
            rows.extend_from_slice(&header.section_avro);
            if header.entity_from_labels.is_empty() {
                rows.extend_from_slice(&header.entities_avro);
            } else {
                // one entity for all values (schemas/nmon_snapshot.avsc), also when every column
                // is text (Linux UARG): the labels' key
                put_long(rows, 1);
                put_str(rows, entity_of(&mut self.entity, header, labels).as_bytes());
                rows.push(0);
            }
            rows.extend_from_slice(&header.metrics_avro);
            if !values.is_empty() {
                put_long(rows, values.len() as i64);
                for v in values.iter() {
                    match v {
                        None => rows.push(0),
                        Some(x) => {
                            rows.push(2);
                            rows.extend_from_slice(&x.to_le_bytes());
                        }
                    }
                }
            }
            rows.push(0);
            let items = labels.items();
            if !items.is_empty() {
                put_long(rows, items.len() as i64);
                for &(column, ref v) in items {
                    put_str(rows, header.columns[column].as_bytes());
                    put_str(rows, v.as_bytes());
                }
            }
            rows.push(0);
        }
        snap.n_rows += 1;
        snap.n_values += count as u64;
        for &(slot, pos) in &header.cpu_fields {
            snap.cpu[slot] = values.get(pos).copied().flatten();
            snap.cpu_any = true;
        }
        if problems.is_empty() && beyond == 0 {
            return Ok(LineOutcome::Ok);
        }
        // parser.row_problems
        let mut parts = Vec::new();
        if !problems.is_empty() {
            let more = if problems.len() > 5 {
                format!("; and {} more", problems.len() - 5)
            } else {
                String::new()
            };
            problems.truncate(5);
            parts.push(format!("{}{} (published as null)", problems.join("; "), more));
        }
        if beyond > 0 {
            parts.push(format!(
                "{}: {} values past the header's {} columns (not published; later lines of this \
                 header alike are not reported again)",
                header.section,
                beyond,
                header.columns.len()
            ));
        }
        Ok(LineOutcome::Error(parts.join("; ")))
    }
}

/// A context string's JSON as Python rendered it ("" when there is none, as in the Avro path).
fn push_context_str(out: &mut Vec<u8>, context: &Context, i: usize) {
    match context.json_strings.get(i) {
        Some(text) => out.extend_from_slice(text),
        None => out.extend_from_slice(b"\"\""),
    }
}

fn find_header<'a>(
    short: &'a FxHashMap<TagKey, Rc<Header>>,
    long: &'a FxHashMap<Vec<u8>, Rc<Header>>,
    tag: &[u8],
) -> Option<&'a Rc<Header>> {
    match tag_key(tag) {
        LONG_TAG => long.get(tag),
        key => short.get(&key),
    }
}

/// The one entity of a row whose entity is made of text columns (TOP: 'PID command'): the
/// columns' labels ("" when absent) joined by a space and stripped, in `buffer` (reused).
fn entity_of<'a>(buffer: &'a mut String, header: &Header, labels: &Labels) -> &'a str {
    buffer.clear();
    for (n, column) in header.entity_from_labels.iter().enumerate() {
        if n > 0 {
            buffer.push(' ');
        }
        buffer.push_str(labels.get(&header.columns, column).unwrap_or(""));
    }
    buffer.trim_matches(|c: char| c.is_whitespace() || ('\x1c'..='\x1f').contains(&c))
}

#[pymodule]
fn fleetperf_nmon_scan(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Scanner>()?;
    m.add("CPU_SLOTS", CPU_SLOTS)?;
    m.add_function(wrap_pyfunction!(float_repr, m)?)?;
    m.add_function(wrap_pyfunction!(cell_repr, m)?)?;
    m.add_function(wrap_pyfunction!(json_str, m)?)?;
    Ok(())
}
