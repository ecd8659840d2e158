//! fleetperf's sadc hot path (see sources/sysstat/README.md, "Native path").
//!
//! Two calls, both driven by what Python hands over at run time:
//! * `stats`: a STATS record's activity items -> counters. The layouts are the Python reader's compiled
//!   `struct` formats (layouts.py's tables turned into e.g. "<QQ8xI16s1s" by reader.py) with their field
//!   names: no offset is written down here.
//! * `interval`: sar's arithmetic over two records (rates.py, ported function by function, same operation
//!   order, same doubles) and the range checks of records.py, written straight out as the JSON lines of
//!   `fleetperf parse` (Python's json.dumps format, floats as Python's repr) or as (section, item, dict).
//!
//! Whatever this code cannot reproduce exactly (an integer division whose operands exceed 2**53, a field the
//! Python path would raise a KeyError on, a panic) returns None, and Python computes that interval itself:
//! the output is the Python path's either way.

//!
//! The Python glue (feature "python", the extension maturin builds) is gated: without it the same decoding,
//! arithmetic and JSON writer serve the standalone `fleetperf-sadc` binary (src/bin), which links no libpython.

#[cfg(feature = "python")]
use pyo3::exceptions::PyValueError;
#[cfg(feature = "python")]
use pyo3::prelude::*;
#[cfg(feature = "python")]
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};
use rustc_hash::FxHashMap as HashMap;
use std::borrow::Cow;
use std::convert::Infallible;
use std::fmt::Write as _;
#[cfg(feature = "python")]
use std::panic::{catch_unwind, AssertUnwindSafe};

pub mod layouts_2175;

// ------------------------------------------------------------------------------------------------
// layouts (from Python)

#[derive(Clone, Copy)]
enum Op {
    Skip(usize),
    U32,
    U64,
    Chars(usize),
}

#[derive(Clone, Copy, PartialEq)]
enum FieldRef {
    Num(usize),
    Text(usize),
}

pub struct Decoder {
    big: bool,
    ops: Vec<Op>,
    n_num: usize, // numbers per item, one-byte char arrays (duplex) included, as Python's raw[0]
    n_text: usize,
    fields: HashMap<String, FieldRef>,
}

pub struct ActSpec {
    pub aid: u32,
    pub name: String,
    pub nr: i64,
    pub nr2: i64,
    pub size: i64,
    pub has_nr: bool,
    pub item_max: i64,
    pub dec: Option<Decoder>,
}

/// The file's activities as the Python reader compiled them (one per file; rebuilt after a 0x2173 RESTART).
#[cfg_attr(feature = "python", pyclass(frozen))]
pub struct Spec {
    pub big: bool, // the file's byte order (item counts)
    pub acts: Vec<ActSpec>,
}

/// A struct format of Python's `struct` module (as reader.py compiles layouts.py's tables: byte order, then
/// Q/I/x/s codes with counts) with its field names -> a Decoder; an error unless it adds up to `size`.
pub fn parse_format(fmt: &str, names: &[String], chars: &[String], size: i64) -> Result<Decoder, String> {
    let b = fmt.as_bytes();
    if b.is_empty() {
        return Err("empty format".to_string());
    }
    let big = match b[0] {
        b'<' => false,
        b'>' => true,
        _ => return Err("format without byte order".to_string()),
    };
    let mut ops = Vec::new();
    let mut i = 1;
    let mut total = 0usize;
    let (mut n_q, mut n_s) = (0usize, 0usize);
    let mut fields = HashMap::default();
    let (mut n_num, mut n_text) = (0usize, 0usize);
    let mut one_byte = Vec::new(); // (char index) of one-byte arrays: numbers, after the others
    while i < b.len() {
        let mut count: Option<usize> = None;
        while i < b.len() && b[i].is_ascii_digit() {
            count = Some(count.unwrap_or(0) * 10 + (b[i] - b'0') as usize);
            i += 1;
        }
        if i >= b.len() {
            return Err("format ends with a count".to_string());
        }
        let n = count.unwrap_or(1);
        match b[i] {
            b'x' => {
                ops.push(Op::Skip(n));
                total += n;
            }
            b'Q' | b'I' => {
                for _ in 0..n {
                    let name = names.get(n_q).ok_or_else(|| "fewer names than numbers".to_string())?;
                    fields.insert(name.clone(), FieldRef::Num(n_num));
                    n_num += 1;
                    n_q += 1;
                    ops.push(if b[i] == b'Q' { Op::U64 } else { Op::U32 });
                    total += if b[i] == b'Q' { 8 } else { 4 };
                }
            }
            b's' => {
                let name = chars.get(n_s).ok_or_else(|| "fewer names than char arrays".to_string())?;
                n_s += 1;
                ops.push(Op::Chars(n));
                total += n;
                if n == 1 {
                    one_byte.push(name.clone());
                } else {
                    fields.insert(name.clone(), FieldRef::Text(n_text));
                    n_text += 1;
                }
            }
            _ => return Err("unexpected format code".to_string()),
        }
        i += 1;
    }
    if n_q != names.len() || n_s != chars.len() || total as i64 != size {
        return Err("format, names and item size disagree".to_string());
    }
    for name in one_byte {
        fields.insert(name, FieldRef::Num(n_num));
        n_num += 1;
    }
    Ok(Decoder { big, ops, n_num, n_text, fields })
}

#[cfg(feature = "python")]
#[pymethods]
impl Spec {
    /// acts: (id, name, nr, nr2, size, has_nr, item_max, format | None, names | None, chars | None) each
    #[new]
    #[allow(clippy::type_complexity)]
    fn new(
        big: bool,
        acts: Vec<(u32, String, i64, i64, i64, bool, i64, Option<String>, Option<Vec<String>>, Option<Vec<String>>)>,
    ) -> PyResult<Self> {
        let mut out = Vec::new();
        for (aid, name, nr, nr2, size, has_nr, item_max, fmt, names, chars) in acts {
            let dec = match fmt {
                Some(f) => Some(
                    parse_format(&f, &names.unwrap_or_default(), &chars.unwrap_or_default(), size)
                        .map_err(PyValueError::new_err)?,
                ),
                None => None,
            };
            if size <= 0 || nr2 <= 0 || nr < 0 {
                return Err(PyValueError::new_err("activity sizes out of range"));
            }
            out.push(ActSpec { aid, name, nr, nr2, size, has_nr, item_max, dec });
        }
        Ok(Spec { big, acts: out })
    }
}

// ------------------------------------------------------------------------------------------------
// decoded records

pub struct ActData {
    spec: usize, // index into Spec.acts
    n: usize,
    nums: Vec<u64>,
    texts: Vec<String>,
}

/// One STATS record's counters by activity id (a later activity of the same id replacing an earlier one),
/// with the Spec they were decoded with.
pub struct View<'s> {
    pub spec: &'s Spec,
    pub acts: &'s [(u32, ActData)],
}

/// One STATS record's counters (activity id -> items), and where its items lie in the reader's window, for
/// the Python decoders when Python computes an interval itself.
#[cfg(feature = "python")]
#[pyclass(frozen)]
struct Stats {
    spec: Py<Spec>,
    acts: Vec<(u32, ActData)>, // by activity id, a later activity of the same id replacing an earlier one
    data: Py<PyBytes>,
    spans: Vec<(usize, usize, usize)>, // (activity index, offset in data, items)
}

#[cfg(feature = "python")]
#[pymethods]
impl Stats {
    /// (window bytes, [(activity index, offset, items)]): what Python's decoders need
    fn raw<'py>(&self, py: Python<'py>) -> (Py<PyBytes>, Vec<(usize, usize, usize)>) {
        (self.data.clone_ref(py), self.spans.clone())
    }
}

pub fn rd32(b: &[u8], big: bool) -> u32 {
    let a = [b[0], b[1], b[2], b[3]];
    if big {
        u32::from_be_bytes(a)
    } else {
        u32::from_le_bytes(a)
    }
}

pub fn rd64(b: &[u8], big: bool) -> u64 {
    let a = [b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]];
    if big {
        u64::from_be_bytes(a)
    } else {
        u64::from_le_bytes(a)
    }
}

fn text_of(raw: &[u8]) -> String {
    // raw.split(b"\0", 1)[0].decode("ascii", "replace")
    let end = raw.iter().position(|&c| c == 0).unwrap_or(raw.len());
    raw[..end].iter().map(|&c| if c < 0x80 { c as char } else { '\u{fffd}' }).collect()
}

fn decode(dec: &Decoder, d: &[u8], off: usize, n: usize, size: usize) -> (Vec<u64>, Vec<String>) {
    let mut nums = Vec::with_capacity(n * dec.n_num);
    let mut texts = Vec::with_capacity(n * dec.n_text);
    let mut ones = Vec::new();
    for k in 0..n {
        let mut p = off + k * size;
        ones.clear();
        for op in &dec.ops {
            match *op {
                Op::Skip(m) => p += m,
                Op::U32 => {
                    nums.push(rd32(&d[p..p + 4], dec.big) as u64);
                    p += 4
                }
                Op::U64 => {
                    nums.push(rd64(&d[p..p + 8], dec.big));
                    p += 8
                }
                Op::Chars(m) => {
                    if m == 1 {
                        ones.push(d[p] as u64);
                    } else {
                        texts.push(text_of(&d[p..p + m]));
                    }
                    p += m
                }
            }
        }
        nums.extend_from_slice(&ones);
    }
    (nums, texts)
}

pub enum StatsResult {
    Need(usize, i64, String),
    Bad(usize, String),
    Ok(usize, Vec<(u32, ActData)>, Vec<(usize, usize, usize)>),
}

pub fn stats_inner(spec: &Spec, d: &[u8], mut off: usize, counted: bool) -> StatsResult {
    let size = d.len();
    let mut acts: Vec<(u32, ActData)> = Vec::new();
    let mut spans = Vec::new();
    for (ai, a) in spec.acts.iter().enumerate() {
        let mut nr = a.nr;
        if counted && a.has_nr {
            if off + 4 > size {
                return StatsResult::Need(off, 4, format!("item count of activity {}", a.name));
            }
            let raw = rd32(&d[off..off + 4], spec.big) as i32 as i64;
            nr = raw;
            if !(0 <= nr && nr <= a.item_max) {
                return StatsResult::Bad(off, format!("activity {}: item count {} out of range", a.name, nr));
            }
            off += 4;
        }
        let total = nr * a.nr2 * a.size;
        if off as i64 + total > size as i64 {
            return StatsResult::Need(off, total, format!("statistics of activity {}", a.name));
        }
        if let Some(dec) = &a.dec {
            let n = (nr * a.nr2) as usize;
            let (nums, texts) = decode(dec, d, off, n, a.size as usize);
            spans.push((ai, off, n));
            let data = ActData { spec: ai, n, nums, texts };
            if let Some(slot) = acts.iter_mut().find(|(id, _)| *id == a.aid) {
                slot.1 = data;
            } else {
                acts.push((a.aid, data));
            }
        }
        off += total as usize;
    }
    StatsResult::Ok(off, acts, spans)
}


/// The items of a STATS record from `off` in `data`: (2, end, Stats), (0, offset, size, what) when the
/// window must hold more bytes first (Python reads them, or says the file ends), (1, offset, message) for
/// an item count out of range, (3,) when something unexpected happened (Python decodes the record).
#[cfg(feature = "python")]
#[pyfunction]
fn stats<'py>(
    py: Python<'py>,
    spec: Bound<'py, Spec>,
    data: Bound<'py, PyBytes>,
    off: usize,
    counted: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    let d = data.as_bytes();
    let s = spec.get();
    let r = catch_unwind(AssertUnwindSafe(|| stats_inner(s, d, off, counted)));
    match r {
        Ok(StatsResult::Ok(end, acts, spans)) => {
            let st = Stats { spec: spec.clone().unbind(), acts, data: data.clone().unbind(), spans };
            PyTuple::new(py, [2i64.into_pyobject(py)?.into_any(), end.into_pyobject(py)?.into_any(), Bound::new(py, st)?.into_any()])
        }
        Ok(StatsResult::Need(o, size, what)) => PyTuple::new(
            py,
            [0i64.into_pyobject(py)?.into_any(), o.into_pyobject(py)?.into_any(), size.into_pyobject(py)?.into_any(), what.into_pyobject(py)?.into_any()],
        ),
        Ok(StatsResult::Bad(o, msg)) => PyTuple::new(
            py,
            [1i64.into_pyobject(py)?.into_any(), o.into_pyobject(py)?.into_any(), msg.into_pyobject(py)?.into_any()],
        ),
        Err(_) => PyTuple::new(py, [3i64.into_pyobject(py)?.into_any()]),
    }
}

// ------------------------------------------------------------------------------------------------
// access to counters

struct Fallback;
type R<T> = Result<T, Fallback>;

struct Act<'a> {
    dec: &'a Decoder,
    n: usize,
    nums: &'a [u64],
    texts: &'a [String],
}

impl<'a> Act<'a> {
    fn of(st: &View<'a>, aid: u32) -> Option<Act<'a>> {
        let spec = st.spec;
        st.acts.iter().find(|(id, _)| *id == aid).map(|(_, a)| Act {
            dec: spec.acts[a.spec].dec.as_ref().unwrap(),
            n: a.n,
            nums: &a.nums,
            texts: &a.texts,
        })
    }
    fn f(&self, name: &str) -> Option<FieldRef> {
        self.dec.fields.get(name).copied()
    }
    fn num(&self, i: usize, f: Option<FieldRef>) -> Option<i128> {
        match f {
            Some(FieldRef::Num(k)) => Some(self.nums[i * self.dec.n_num + k] as i128),
            _ => None,
        }
    }
    fn get(&self, i: usize, f: Option<FieldRef>) -> i128 {
        self.num(i, f).unwrap_or(0)
    }
    fn text(&self, i: usize, f: Option<FieldRef>) -> Option<&'a str> {
        match f {
            Some(FieldRef::Text(k)) => Some(self.texts[i * self.dec.n_text + k].as_str()),
            _ => None,
        }
    }
}

/// A counter of an item that may be "absent" (Python's `{}` for a device new since the last record).
#[derive(Clone, Copy)]
struct Item<'a, 'b> {
    act: &'b Act<'a>,
    i: usize,
}

impl<'a, 'b> Item<'a, 'b> {
    fn get(&self, f: Option<FieldRef>) -> i128 {
        self.act.get(self.i, f)
    }
    fn num(&self, f: Option<FieldRef>) -> Option<i128> {
        self.act.num(self.i, f)
    }
}

const MAX_EXACT: i128 = 1 << 53;

/// Python's int / int (correctly rounded): exact operands give the same double; others go to Python.
fn idiv(a: i128, b: i128) -> R<f64> {
    if a.abs() <= MAX_EXACT && b.abs() <= MAX_EXACT && b != 0 {
        Ok(a as f64 / b as f64)
    } else {
        Err(Fallback)
    }
}

fn sp_value(m: i128, n: i128, p: f64) -> f64 {
    (n - m) as f64 / p * 100.0
}

fn ll_sp_value(v1: i128, v2: i128, itv: f64) -> f64 {
    if v2 < v1 {
        if v1 <= 0xFFFF_FFFF {
            ((v2 - v1) & 0xFFFF_FFFF) as f64 / itv * 100.0
        } else {
            0.0
        }
    } else {
        sp_value(v1, v2, itv)
    }
}

// ------------------------------------------------------------------------------------------------
// output: Python's json.dumps / repr, records.py's range checks

/// repr(float) of CPython: the shortest digits that round-trip, fixed notation for decimal exponents
/// -4 < decpt <= 16, else d.ddde+XX.
fn push_repr(out: &mut String, v: f64, tmp: &mut String) {
    if v.is_nan() {
        out.push_str("nan");
        return;
    }
    if v.is_infinite() {
        out.push_str(if v > 0.0 { "inf" } else { "-inf" });
        return;
    }
    if v == 0.0 {
        out.push_str(if v.is_sign_negative() { "-0.0" } else { "0.0" });
        return;
    }
    if v.fract() == 0.0 && v.abs() < 1e16 {
        let _ = write!(out, "{}.0", v as i64);
        return;
    }
    tmp.clear();
    let _ = write!(tmp, "{:e}", v.abs());
    // digits and exponent of the shortest round-trip string (d.ddde±x)
    let mut dig = [0u8; 24];
    let mut nd = 0usize;
    let epos = tmp.find('e').unwrap();
    for &c in tmp.as_bytes()[..epos].iter() {
        if c != b'.' {
            dig[nd] = c;
            nd += 1;
        }
    }
    let mut exp: i32 = tmp[epos + 1..].parse().unwrap();
    // Two shortest strings can be equally near (x exactly halfway between them): CPython takes the even one,
    // core's shortest formatting the upper. Only a double with few fraction bits and 15+ digits can be such a
    // midpoint: for those, the exact expansion tells.
    if nd >= 15 && (v * 262144.0).fract() == 0.0 {
        tmp.clear();
        let _ = write!(tmp, "{:.40e}", v.abs());
        let epos2 = tmp.find('e').unwrap();
        let exp2: i32 = tmp[epos2 + 1..].parse().unwrap();
        let exact: Vec<u8> = tmp.as_bytes()[..epos2].iter().copied().filter(|&c| c != b'.').collect();
        if exp2 == exp && exact[nd] == b'5' && exact[nd + 1..].iter().all(|&c| c == b'0') {
            dig[..nd].copy_from_slice(&exact[..nd]);
            if (dig[nd - 1] - b'0') % 2 == 1 {
                let mut k = nd;
                loop {
                    if k == 0 {
                        // 99..9 + 1: one more decade
                        dig[0] = b'1';
                        for d in dig[1..nd].iter_mut() {
                            *d = b'0';
                        }
                        exp += 1;
                        break;
                    }
                    k -= 1;
                    if dig[k] == b'9' {
                        dig[k] = b'0';
                    } else {
                        dig[k] += 1;
                        break;
                    }
                }
            }
            while nd > 1 && dig[nd - 1] == b'0' {
                nd -= 1;
            }
        }
    }
    let digits = std::str::from_utf8(&dig[..nd]).unwrap();
    let (first, rest) = (&digits[..1], &digits[1..]);
    let nd = nd as i32;
    let decpt = exp + 1;
    if v < 0.0 {
        out.push('-');
    }
    if -4 < decpt && decpt <= 16 {
        if decpt <= 0 {
            out.push_str("0.");
            for _ in 0..(-decpt) {
                out.push('0');
            }
            out.push_str(digits);
        } else if decpt >= nd {
            out.push_str(digits);
            for _ in 0..(decpt - nd) {
                out.push('0');
            }
            out.push_str(".0");
        } else {
            out.push_str(&digits[..decpt as usize]);
            out.push('.');
            out.push_str(&digits[decpt as usize..]);
        }
    } else {
        out.push_str(first);
        if nd > 1 {
            out.push('.');
            out.push_str(rest);
        }
        let e = decpt - 1;
        let _ = write!(out, "e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    }
}

fn repr(v: f64) -> String {
    let mut s = String::new();
    let mut t = String::new();
    push_repr(&mut s, v, &mut t);
    s
}

/// json.dumps of a str with ensure_ascii
fn push_json_str(out: &mut String, s: &str) {
    out.push('"');
    if s.bytes().all(|b| (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\') {
        out.push_str(s);
        out.push('"');
        return;
    }
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut buf = [0u16; 2];
                for u in c.encode_utf16(&mut buf) {
                    let _ = write!(out, "\\u{:04x}", u);
                }
            }
        }
    }
    out.push('"');
}

const MAX_RATE: f64 = 1e13;
const MAX_LEVEL: f64 = 9007199254740992.0; // float(1 << 53)

/// What one interval gives, in order: JSON lines (text, how many, topic key), a row out of range (section,
/// item, why), or (dict mode, the collector's) a row's figures.
pub enum Seg {
    Lines(String, usize, &'static str),
    Bad(&'static str, String, String),
    Dict(&'static str, String, Vec<(Cow<'static, str>, f64)>),
}

struct Out {
    prefix: Option<String>, // JSON mode: each line's text before "section"
    text: String,
    rows: usize,
    segments: Vec<Seg>,
    section: &'static str,
    rate: bool,
    percent: bool,
    item: String,
    names: Vec<Cow<'static, str>>,
    vals: Vec<f64>,
    cpu_all: Option<Vec<f64>>,
    online: usize,
    tmp: String,
}

impl Out {
    fn section(&mut self, name: &'static str, rate: bool) {
        self.section = name;
        self.rate = rate;
        self.percent = name == "cpu-load-all";
    }
    fn begin(&mut self, item: &str) {
        self.item.clear();
        self.item.push_str(item);
        self.names.clear();
        self.vals.clear();
    }
    fn v(&mut self, name: &'static str, v: f64) {
        self.names.push(Cow::Borrowed(name));
        self.vals.push(v);
    }
    fn vo(&mut self, name: String, v: f64) {
        self.names.push(Cow::Owned(name));
        self.vals.push(v);
    }
    /// records.py's out-of-range text, "" when the row is published
    fn out_of_range(&self) -> String {
        let bound = if self.percent { 100.0001 } else { MAX_RATE };
        let vals = &self.vals;
        if !vals.is_empty() {
            // min/max as Python's (first of equals; NaN never replaces), sum left to right
            let mut lo = vals[0];
            let mut hi = vals[0];
            let mut total = 0.0f64;
            for (k, &x) in vals.iter().enumerate() {
                if k > 0 {
                    if x < lo {
                        lo = x;
                    }
                    if x > hi {
                        hi = x;
                    }
                }
                total += x;
            }
            if lo >= 0.0 && hi <= bound && total == total && total <= MAX_LEVEL * vals.len() as f64 {
                return String::new();
            }
        }
        for (name, &v) in self.names.iter().zip(vals.iter()) {
            if !(0.0 <= v && v <= MAX_LEVEL) {
                return format!("{} = {} out of range", name, repr(v));
            }
            if self.rate
                && v > MAX_RATE
                && !matches!(name.as_ref(), "rx_bytes" | "tx_bytes" | "rx_packets" | "tx_packets" | "speed")
            {
                return format!("{} = {} per second out of range", name, repr(v));
            }
            if self.percent && v > 100.0001 {
                return format!("{} = {} % out of range", name, repr(v));
            }
        }
        String::new()
    }
    fn end(&mut self) -> Result<R<()>, Infallible> {
        // the fast test of records.py first, inline
        let bad = {
            let bound = if self.percent { 100.0001 } else { MAX_RATE };
            let mut ok = !self.vals.is_empty();
            if ok {
                let (mut lo, mut hi, mut total) = (self.vals[0], self.vals[0], 0.0f64);
                for (k, &x) in self.vals.iter().enumerate() {
                    if k > 0 {
                        if x < lo {
                            lo = x;
                        }
                        if x > hi {
                            hi = x;
                        }
                    }
                    total += x;
                }
                ok = lo >= 0.0 && hi <= bound && total == total && total <= MAX_LEVEL * self.vals.len() as f64;
            }
            if ok {
                String::new()
            } else {
                self.out_of_range()
            }
        };
        if !bad.is_empty() {
            self.flush();
            self.segments.push(Seg::Bad(self.section, self.item.clone(), bad));
            return Ok(Ok(()));
        }
        if self.vals.iter().any(|v| !v.is_finite()) {
            return Ok(Err(Fallback)); // json.dumps would refuse it: the Python path says so
        }
        if self.section == "cpu-load-all" {
            if self.item == "all" {
                self.cpu_all = Some(self.vals.clone());
            } else {
                self.online += 1;
            }
        }
        if let Some(prefix) = &self.prefix {
            let t = &mut self.text;
            t.push_str(prefix);
            t.push_str("\"section\": \"");
            t.push_str(self.section);
            t.push_str("\", \"item\": ");
            push_json_str(t, &self.item);
            t.push_str(", \"metrics\": {");
            for (k, (name, &v)) in self.names.iter().zip(self.vals.iter()).enumerate() {
                if k > 0 {
                    t.push_str(", ");
                }
                push_json_str(t, name);
                t.push_str(": ");
                push_repr(t, v, &mut self.tmp);
            }
            t.push_str("}}}\n");
            self.rows += 1;
        } else {
            let d = self.names.iter().cloned().zip(self.vals.iter().copied()).collect();
            self.segments.push(Seg::Dict(self.section, self.item.clone(), d));
        }
        Ok(Ok(()))
    }
    fn flush(&mut self) {
        if self.rows > 0 {
            self.segments.push(Seg::Lines(std::mem::take(&mut self.text), self.rows, "sysstat_samples"));
            self.rows = 0;
        }
    }
}

macro_rules! row {
    ($out:expr) => {
        if let Err(f) = $out.end()? {
            return Ok(Err(f));
        }
    };
}
macro_rules! tr {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(f) => return Ok(Err(f)),
        }
    };
}

type Res = Result<R<()>, Infallible>;

// ------------------------------------------------------------------------------------------------
// sar's arithmetic (rates.py)

const CPU_F: [&str; 10] = ["user", "nice", "sys", "idle", "iowait", "steal", "hardirq", "softirq", "guest", "guest_nice"];
const CPU_OUT: [&str; 10] = ["usr", "nice", "sys", "iowait", "steal", "irq", "soft", "guest", "gnice", "idle"];
const CU: usize = 0;
const CN: usize = 1;
const CS: usize = 2;
const CID: usize = 3;
const CIO: usize = 4;
const CST: usize = 5;
const CHI: usize = 6;
const CSI: usize = 7;
const CG: usize = 8;
const CGN: usize = 9;

type Cpu = [i128; 10];

fn cpu_counters(a: &Act, i: usize, f: &[Option<FieldRef>; 10]) -> Cpu {
    let mut c = [0i128; 10];
    for k in 0..10 {
        c[k] = a.get(i, f[k]);
    }
    c
}

fn sum8(c: &Cpu) -> i128 {
    c[..8].iter().sum()
}

fn cpu_prev(scc: &Cpu, scp: &Cpu) -> Cpu {
    let mut p = *scp;
    for i in [CID, CIO] {
        if scc[i] < p[i] {
            p[i] = 0;
        }
    }
    p
}

fn cpu_interval(scc: &Cpu, scp: &Cpu) -> i128 {
    let mut ishift = 0;
    let (ucur, uprev) = (scc[CU] - scc[CG], scp[CU] - scp[CG]);
    if ucur < uprev {
        ishift += uprev - ucur;
    }
    let (ncur, nprev) = (scc[CN] - scc[CGN], scp[CN] - scp[CGN]);
    if ncur < nprev {
        ishift += nprev - ncur;
    }
    sum8(scc) - sum8(scp) + ishift
}

fn cpu_values(out: &mut Out, c: &Cpu, p: &Cpu, dt: i128) {
    if dt == 0 {
        for k in CPU_OUT.iter().take(9) {
            out.v(k, 0.0);
        }
        out.v("idle", 100.0);
        return;
    }
    let d = dt as f64;
    let (ucur, uprev) = (c[CU] - c[CG], p[CU] - p[CG]);
    let (ncur, nprev) = (c[CN] - c[CGN], p[CN] - p[CGN]);
    out.v("usr", if ucur < uprev { 0.0 } else { ll_sp_value(uprev, ucur, d) });
    out.v("nice", if ncur < nprev { 0.0 } else { ll_sp_value(nprev, ncur, d) });
    out.v("sys", ll_sp_value(p[CS], c[CS], d));
    out.v("iowait", ll_sp_value(p[CIO], c[CIO], d));
    out.v("steal", ll_sp_value(p[CST], c[CST], d));
    out.v("irq", ll_sp_value(p[CHI], c[CHI], d));
    out.v("soft", ll_sp_value(p[CSI], c[CSI], d));
    out.v("guest", ll_sp_value(p[CG], c[CG], d));
    out.v("gnice", ll_sp_value(p[CGN], c[CGN], d));
    out.v("idle", if c[CID] < p[CID] { 0.0 } else { ll_sp_value(p[CID], c[CID], d) });
}

fn cpu(out: &mut Out, cur: &Act, prev: &Act) -> Res {
    let f: [Option<FieldRef>; 10] = CPU_F.map(|n| cur.f(n));
    let fp: [Option<FieldRef>; 10] = CPU_F.map(|n| prev.f(n));
    let mut per_cpu: Vec<(usize, Cpu, Cpu)> = Vec::new();
    for i in 1..cur.n.min(prev.n) {
        let scc = cpu_counters(cur, i, &f);
        let total = sum8(&scc);
        if total == 0 {
            continue;
        }
        let mut scp = cpu_counters(prev, i, &fp);
        if sum8(&scp) > total {
            scp = [0; 10];
        }
        let adj = cpu_prev(&scc, &scp);
        per_cpu.push((i - 1, scc, adj));
    }
    if !per_cpu.is_empty() {
        let mut all_c = [0i128; 10];
        let mut all_p = [0i128; 10];
        let mut dt = 0i128;
        for (_, c, p) in &per_cpu {
            for k in 0..10 {
                all_c[k] += c[k];
                all_p[k] += p[k];
            }
            dt += cpu_interval(c, p);
        }
        out.begin("all");
        cpu_values(out, &all_c, &all_p, dt);
        row!(out);
    } else if cur.n > 0 && prev.n > 0 {
        let scc = cpu_counters(cur, 0, &f);
        let scp = cpu_prev(&scc, &cpu_counters(prev, 0, &fp));
        out.begin("all");
        cpu_values(out, &scc, &scp, cpu_interval(&scc, &scp));
        row!(out);
    }
    let mut name = String::new();
    for (i, c, p) in &per_cpu {
        name.clear();
        let _ = write!(name, "{}", i);
        out.begin(&name);
        cpu_values(out, c, p, cpu_interval(c, p));
        row!(out);
    }
    Ok(Ok(()))
}

/// rates.py's _rates: `{out: float(cur[raw] - prev.get(raw, 0)) / itv * 100 for raw, out in names if raw in cur}`
type Resolved = Vec<(Option<FieldRef>, Option<FieldRef>, &'static str)>;

/// A name table's fields in the current and the previous record's layouts, looked up once per activity
fn resolve(cur: &Act, prev: &Act, names: &[(&str, &'static str)]) -> Resolved {
    names.iter().map(|&(raw, name)| (cur.f(raw), prev.f(raw), name)).collect()
}

/// rates.py's _rates: `{out: float(cur[raw] - prev.get(raw, 0)) / itv * 100 for raw, out in names if raw in cur}`
fn rates(out: &mut Out, c: Item, p: Option<Item>, names: &Resolved, itv: f64, wrap32: bool) {
    for &(fc, fp, name) in names {
        if let Some(cv) = c.num(fc) {
            let pv = p.map(|p| p.get(fp)).unwrap_or(0);
            let v = if wrap32 { ((cv - pv) & 0xFFFF_FFFF) as f64 / itv * 100.0 } else { (cv - pv) as f64 / itv * 100.0 };
            out.v(name, v);
        }
    }
}

fn single(out: &mut Out, cur: &Act, prev: &Act, names: &[(&str, &'static str)], itv: f64, wrap32: bool) -> Res {
    out.begin("");
    let r = resolve(cur, prev, names);
    rates(out, Item { act: cur, i: 0 }, Some(Item { act: prev, i: 0 }), &r, itv, wrap32);
    row!(out);
    Ok(Ok(()))
}

const PCSW: [(&str, &str); 2] = [("processes", "proc"), ("context_switch", "cswch")];
const SWAP: [(&str, &str); 2] = [("pswpin", "pswpin"), ("pswpout", "pswpout")];
const PAGE: [(&str, &str); 8] = [
    ("pgpgin", "pgpgin"),
    ("pgpgout", "pgpgout"),
    ("pgfault", "fault"),
    ("pgmajfault", "majflt"),
    ("pgfree", "pgfree"),
    ("pgscan_kswapd", "pgscank"),
    ("pgscan_direct", "pgscand"),
    ("pgsteal", "pgsteal"),
];
const EDEV: [(&str, &str); 9] = [
    ("rx_errors", "rxerr"),
    ("tx_errors", "txerr"),
    ("collisions", "coll"),
    ("rx_dropped", "rxdrop"),
    ("tx_dropped", "txdrop"),
    ("tx_carrier_errors", "txcarr"),
    ("rx_frame_errors", "rxfram"),
    ("rx_fifo_errors", "rxfifo"),
    ("tx_fifo_errors", "txfifo"),
];

fn paging(out: &mut Out, cur: &Act, prev: &Act, itv: f64) -> Res {
    out.begin("");
    let r = resolve(cur, prev, &PAGE);
    rates(out, Item { act: cur, i: 0 }, Some(Item { act: prev, i: 0 }), &r, itv, false);
    let get = |out: &Out, n: &str| out.names.iter().position(|x| x == n).map(|k| out.vals[k]).unwrap_or(0.0);
    let scan = get(out, "pgscank") + get(out, "pgscand");
    let steal = get(out, "pgsteal");
    out.v("vmeff-percent", if scan != 0.0 { steal / scan * 100.0 } else { 0.0 });
    row!(out);
    Ok(Ok(()))
}

fn memory(out: &mut Out, cur: &Act, rule: u8) -> Res {
    let m = Item { act: cur, i: 0 };
    let g = |n: &str| m.get(cur.f(n));
    let has = |n: &str| m.num(cur.f(n)).is_some();
    let (tlm, tls) = (g("tlmkb"), g("tlskb"));
    let avail = if has("availablekb") { g("availablekb") } else { g("frmkb") };
    let nousedmem = match rule {
        2 => avail,
        1 => (g("frmkb") + g("bufkb") + g("camkb") + g("slabkb")).min(tlm),
        _ => g("frmkb"),
    };
    out.begin("");
    out.v("memfree", g("frmkb") as f64);
    out.v("avail", avail as f64);
    out.v("memused", (tlm - nousedmem) as f64);
    out.v("memused-percent", if tlm != 0 { sp_value(nousedmem, tlm, tlm as f64) } else { 0.0 });
    out.v("buffers", g("bufkb") as f64);
    out.v("cached", g("camkb") as f64);
    out.v("commit", g("comkb") as f64);
    out.v("commit-percent", if tlm + tls != 0 { sp_value(0, g("comkb"), (tlm + tls) as f64) } else { 0.0 });
    out.v("active", g("activekb") as f64);
    out.v("inactive", g("inactkb") as f64);
    out.v("dirty", g("dirtykb") as f64);
    for (raw, name) in [
        ("anonpgkb", "anonpg"),
        ("slabkb", "slab"),
        ("kstackkb", "kstack"),
        ("pgtblkb", "pgtbl"),
        ("vmusedkb", "vmused"),
        ("shmemkb", "shmem"),
    ] {
        if has(raw) {
            out.v(name, g(raw) as f64);
        }
    }
    let used = tls - g("frskb");
    out.v("swpfree", g("frskb") as f64);
    out.v("swpused", used as f64);
    out.v("swpused-percent", if tls != 0 { sp_value(g("frskb"), tls, tls as f64) } else { 0.0 });
    out.v("swpcad", g("caskb") as f64);
    out.v("swpcad-percent", if used != 0 { sp_value(0, g("caskb"), used as f64) } else { 0.0 });
    row!(out);
    Ok(Ok(()))
}

fn queue(out: &mut Out, cur: &Act) -> Res {
    let q = Item { act: cur, i: 0 };
    let g = |n: &str| q.get(cur.f(n));
    out.begin("");
    out.v("runq-sz", g("nr_running") as f64);
    out.v("plist-sz", g("nr_threads") as f64);
    out.v("ldavg-1", tr!(idiv(g("load_avg_1"), 100)));
    out.v("ldavg-5", tr!(idiv(g("load_avg_5"), 100)));
    out.v("ldavg-15", tr!(idiv(g("load_avg_15"), 100)));
    if let Some(b) = q.num(cur.f("procs_blocked")) {
        out.v("blocked", b as f64);
    }
    row!(out);
    Ok(Ok(()))
}

fn sd_group(major: i128) -> Option<i128> {
    match major {
        8 => Some(0),
        65..=71 => Some(1 + major - 65),
        128..=135 => Some(8 + major - 128),
        _ => None,
    }
}

fn letters(n: i128) -> String {
    let mut out = Vec::new();
    let mut n = n + 1;
    while n != 0 {
        let (q, r) = ((n - 1).div_euclid(26), (n - 1).rem_euclid(26));
        n = q;
        out.push((b'a' + r as u8) as char);
    }
    out.iter().rev().collect()
}

fn disk_name(major: i128, minor: i128) -> String {
    if let Some(group) = sd_group(major) {
        let part = minor % 16;
        let mut s = format!("sd{}", letters(group * 16 + minor / 16));
        if part != 0 {
            let _ = write!(s, "{}", part);
        }
        s
    } else {
        format!("dev{}-{}", major, minor)
    }
}

fn disk(out: &mut Out, cur: &Act, prev: &Act, itv: f64) -> Res {
    let (fmaj, fmin, fios) = (cur.f("major"), cur.f("minor"), cur.f("nr_ios"));
    let (pmaj, pmin) = (prev.f("major"), prev.f("minor"));
    if fmin.is_none() || pmin.is_none() {
        return Ok(Err(Fallback));
    }
    let mut before: HashMap<(i128, i128), usize> = HashMap::default();
    for i in 0..prev.n {
        let maj = prev.get(i, pmaj);
        if maj != 0 {
            before.insert((maj, prev.get(i, pmin)), i);
        }
    }
    let names = ["nr_ios", "rd_sect", "wr_sect", "dc_sect", "rd_ticks", "wr_ticks", "dc_ticks", "rq_ticks", "tot_ticks"];
    let fc: Vec<Option<FieldRef>> = names.iter().map(|n| cur.f(n)).collect();
    let fp: Vec<Option<FieldRef>> = names.iter().map(|n| prev.f(n)).collect();
    for i in 0..cur.n {
        let maj = cur.get(i, fmaj);
        if maj == 0 {
            continue;
        }
        let min = cur.get(i, fmin);
        let mut p = before.get(&(maj, min)).copied();
        if let Some(k) = p {
            if cur.get(i, fios) < prev.get(k, fp[0]) {
                p = None;
            }
        }
        let g = |j: usize| cur.get(i, fc[j]);
        let h = |j: usize| p.map(|k| prev.get(k, fp[j])).unwrap_or(0);
        let ios = g(0) - h(0);
        let sectors = (g(1) - h(1)) + (g(2) - h(2)) + (g(3) - h(3));
        let ticks = (g(4) - h(4)) + (g(5) - h(5)) + (g(6) - h(6));
        let name = disk_name(maj, min);
        out.begin(&name);
        out.v("tps", sp_value(h(0), g(0), itv));
        out.v("rkB", sp_value(h(1), g(1), itv) / 2.0);
        out.v("wkB", sp_value(h(2), g(2), itv) / 2.0);
        out.v("dkB", sp_value(h(3), g(3), itv) / 2.0);
        out.v("areq-sz", if ios != 0 { tr!(idiv(sectors, ios)) / 2.0 } else { 0.0 });
        out.v("aqu-sz", sp_value(h(7), g(7), itv) / 1000.0);
        out.v("await", if ios != 0 { tr!(idiv(ticks, ios)) } else { 0.0 });
        out.v("util-percent", sp_value(h(8), g(8), itv) / 10.0);
        row!(out);
    }
    Ok(Ok(()))
}

/// `{it["interface"]: it for it in items if it.get("interface")}`: names in first-seen order, the last item
fn by_interface<'a>(a: &Act<'a>) -> R<(Vec<&'a str>, HashMap<&'a str, usize>)> {
    let f = a.f("interface");
    let mut order = Vec::new();
    let mut at: HashMap<&'a str, usize> = HashMap::default();
    for i in 0..a.n {
        let name = match a.text(i, f) {
            Some(t) => t,
            None => return Err(Fallback),
        };
        if name.is_empty() {
            continue;
        }
        if at.insert(name, i).is_none() {
            order.push(name);
        }
    }
    Ok((order, at))
}

/// rates.py's _previous: None when new or any counter went down
fn previous<'a, 'b>(c: Item<'a, 'b>, p: Option<Item<'a, 'b>>, counters: &Resolved) -> Option<Item<'a, 'b>> {
    let p = p?;
    for &(fc, fp, _) in counters {
        if c.get(fc) < p.get(fp) {
            return None;
        }
    }
    Some(p)
}

fn net_dev(out: &mut Out, cur: &Act, prev: &Act, itv: f64) -> Res {
    let (_, before) = tr!(by_interface(prev));
    let (order, at) = tr!(by_interface(cur));
    let need = ["rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_compressed", "tx_compressed", "multicast"];
    let fc: Vec<Option<FieldRef>> = need.iter().map(|n| cur.f(n)).collect();
    if fc.iter().any(|f| !matches!(f, Some(FieldRef::Num(_)))) {
        return Ok(Err(Fallback)); // c["rx_compressed"] would raise
    }
    let fp: Vec<Option<FieldRef>> = need.iter().map(|n| prev.f(n)).collect();
    let counters = resolve(cur, prev, &[("rx_packets", ""), ("tx_packets", ""), ("rx_bytes", ""), ("tx_bytes", "")]);
    let fspeed = cur.f("speed");
    let fduplex = cur.f("duplex");
    for name in order {
        let i = at[name];
        let c = Item { act: cur, i };
        let p = previous(c, before.get(name).map(|&k| Item { act: prev, i: k }), &counters);
        let g = |j: usize| cur.get(i, fc[j]);
        let h = |j: usize| p.map(|p| prev.get(p.i, fp[j])).unwrap_or(0);
        let rx = sp_value(h(2), g(2), itv);
        let tx = sp_value(h(3), g(3), itv);
        out.begin(name);
        out.v("rxpck", sp_value(h(0), g(0), itv));
        out.v("txpck", sp_value(h(1), g(1), itv));
        out.v("rxkB", rx / 1024.0);
        out.v("txkB", tx / 1024.0);
        out.v("rxcmp", sp_value(h(4), g(4), itv));
        out.v("txcmp", sp_value(h(5), g(5), itv));
        out.v("rxmcst", sp_value(h(6), g(6), itv));
        out.v("rx_bytes", g(2) as f64);
        out.v("tx_bytes", g(3) as f64);
        out.v("rx_packets", g(0) as f64);
        out.v("tx_packets", g(1) as f64);
        if let Some(speed) = c.num(fspeed) {
            out.v("speed", speed as f64);
            let bps = (speed * 1000000) as f64;
            if speed == 0 {
                out.v("ifutil-percent", 0.0);
            } else if c.num(fduplex) == Some(2) {
                let m = if tx > rx { tx } else { rx };
                out.v("ifutil-percent", m * 800.0 / bps);
            } else {
                out.v("ifutil-percent", (rx + tx) * 800.0 / bps);
            }
        }
        row!(out);
    }
    Ok(Ok(()))
}

fn net_edev(out: &mut Out, cur: &Act, prev: &Act, itv: f64) -> Res {
    let (_, before) = tr!(by_interface(prev));
    let (order, at) = tr!(by_interface(cur));
    let counters = resolve(cur, prev, &EDEV);
    for name in order {
        let c = Item { act: cur, i: at[name] };
        let p = previous(c, before.get(name).map(|&k| Item { act: prev, i: k }), &counters);
        out.begin(name);
        rates(out, c, p, &counters, itv, false);
        row!(out);
    }
    Ok(Ok(()))
}

fn interrupts(out: &mut Out, cur: &Act, prev: &Act, itv: f64, nr2: i64) -> Res {
    let nr2 = nr2 as usize;
    if nr2 < 1 || cur.n == 0 || cur.n % nr2 != 0 || prev.n != cur.n {
        return Ok(Ok(()));
    }
    let fname = cur.f("irq_name");
    let fnr = cur.f("irq_nr");
    let fpnr = prev.f("irq_nr");
    let names: Vec<&str> = (0..nr2)
        .map(|i| match fname {
            Some(FieldRef::Text(_)) => cur.text(i, fname).unwrap(),
            _ => "",
        })
        .collect();
    if matches!(fname, Some(FieldRef::Num(_))) {
        return Ok(Err(Fallback));
    }
    let now: Vec<i128> = (0..cur.n).map(|i| cur.get(i, fnr)).collect();
    let before: Vec<i128> = (0..prev.n).map(|i| prev.get(i, fpnr)).collect();
    let shown: Vec<usize> =
        (1..cur.n / nr2).map(|c| c * nr2).filter(|&b| before[b] != 0 && now[b] != 0).collect();
    let show_all = before[0] != 0 && now[0] != 0;
    if !show_all && shown.is_empty() {
        return Ok(Ok(()));
    }
    let labels: Vec<String> = shown.iter().map(|b| format!("CPU{}", b / nr2 - 1)).collect();
    for k in 0..nr2 {
        out.begin(names[k]);
        if show_all {
            let (n, b) = (now[k], before[k]);
            out.v("all", if n < b { 0.0 } else { (n - b) as f64 / itv * 100.0 });
        }
        for (label, &base) in labels.iter().zip(shown.iter()) {
            let (n, b) = (now[base + k], before[base + k]);
            out.vo(label.clone(), ((n - b) & 0xFFFF_FFFF) as f64 / itv * 100.0);
        }
        row!(out);
    }
    Ok(Ok(()))
}

const IO: [(&str, &str); 7] = [
    ("dk_drive", "tps"),
    ("dk_drive_rio", "rtps"),
    ("dk_drive_rblk", "bread"),
    ("dk_drive_wio", "wtps"),
    ("dk_drive_wblk", "bwrtn"),
    ("dk_drive_dio", "dtps"),
    ("dk_drive_dblk", "bdscd"),
];

fn io(out: &mut Out, cur: &Act, prev: &Act, itv: f64) -> Res {
    out.begin("");
    for (raw, name) in IO {
        if let Some(c) = cur.num(0, cur.f(raw)) {
            let p = prev.get(0, prev.f(raw));
            out.v(name, if c < p { 0.0 } else { sp_value(p, c, itv) });
        }
    }
    row!(out);
    Ok(Ok(()))
}

fn huge(out: &mut Out, cur: &Act) -> Res {
    let g = |n: &str| cur.get(0, cur.f(n));
    let (free, total) = (g("frhkb"), g("tlhkb"));
    out.begin("");
    out.v("hugfree", free as f64);
    out.v("hugused", (total - free) as f64);
    out.v("hugused-percent", if total != 0 { sp_value(free, total, total as f64) } else { 0.0 });
    out.v("hugrsvd", g("rsvdhkb") as f64);
    out.v("hugsurp", g("surphkb") as f64);
    row!(out);
    Ok(Ok(()))
}

fn level(out: &mut Out, cur: &Act, names: &[(&str, &'static str)]) -> Res {
    out.begin("");
    for &(raw, name) in names {
        if let Some(v) = cur.num(0, cur.f(raw)) {
            out.v(name, v as f64);
        }
    }
    row!(out);
    Ok(Ok(()))
}

const SERIAL: [(&str, &str); 6] = [
    ("rx", "rcvin"),
    ("tx", "xmtin"),
    ("frame", "framerr"),
    ("parity", "prtyerr"),
    ("brk", "brk"),
    ("overrun", "ovrun"),
];

fn serial(out: &mut Out, cur: &Act, prev: &Act, itv: f64) -> Res {
    let fl = cur.f("line");
    let fpl = prev.f("line");
    if !matches!(fl, Some(FieldRef::Num(_))) || !matches!(fpl, Some(FieldRef::Num(_))) {
        return Ok(Err(Fallback));
    }
    let table = resolve(cur, prev, &SERIAL);
    let mut before: HashMap<i128, usize> = HashMap::default();
    for i in 0..prev.n {
        before.insert(prev.get(i, fpl), i);
    }
    let mut name = String::new();
    for i in 0..cur.n {
        let line = cur.get(i, fl);
        name.clear();
        let _ = write!(name, "{}", line);
        let c = Item { act: cur, i };
        let p = before.get(&line).map(|&k| Item { act: prev, i: k });
        out.begin(&name);
        rates(out, c, p, &table, itv, true);
        row!(out);
    }
    Ok(Ok(()))
}

const SOFTNET: [(&str, &str); 5] = [
    ("processed", "total"),
    ("dropped", "dropd"),
    ("time_squeeze", "squeezd"),
    ("received_rps", "rx_rps"),
    ("flow_limit", "flw_lim"),
];
const SOFTNET_ALL: [&str; 6] = ["processed", "dropped", "time_squeeze", "received_rps", "flow_limit", "backlog_len"];

fn cpu_item(i: usize, s: &mut String) {
    s.clear();
    if i == 0 {
        s.push_str("all");
    } else {
        let _ = write!(s, "{}", i - 1);
    }
}

fn softnet(out: &mut Out, cur: &Act, prev: &Act, itv: f64) -> Res {
    let fc: Vec<Option<FieldRef>> = SOFTNET_ALL.iter().map(|n| cur.f(n)).collect();
    let fp: Vec<Option<FieldRef>> = SOFTNET_ALL.iter().map(|n| prev.f(n)).collect();
    let table = resolve(cur, prev, &SOFTNET);
    let mut shown = Vec::new();
    let mut all_c = [0i128; 6];
    let mut all_p = [0i128; 6];
    for i in 1..cur.n.min(prev.n) {
        let p: Vec<i128> = (0..6).map(|k| prev.get(i, fp[k])).collect();
        if p.iter().all(|&x| x == 0) {
            continue;
        }
        let mut c: Vec<i128> = (0..6).map(|k| cur.get(i, fc[k])).collect();
        if c.iter().all(|&x| x == 0) {
            c = p.clone(); // offline: counts with its previous sample, not shown
        } else {
            shown.push(i);
        }
        for k in 0..6 {
            all_c[k] = (all_c[k] + c[k]) & 0xFFFF_FFFF;
            all_p[k] = (all_p[k] + p[k]) & 0xFFFF_FFFF;
        }
    }
    let mut name = String::new();
    cpu_item(0, &mut name);
    out.begin(&name);
    for (k, &(_, n)) in SOFTNET.iter().enumerate() {
        out.v(n, ((all_c[k] - all_p[k]) & 0xFFFF_FFFF) as f64 / itv * 100.0);
    }
    out.v("blg_len", all_c[5] as f64);
    row!(out);
    for i in shown {
        cpu_item(i, &mut name);
        out.begin(&name);
        rates(out, Item { act: cur, i }, Some(Item { act: prev, i }), &table, itv, true);
        out.v("blg_len", cur.get(i, fc[5]) as f64);
        row!(out);
    }
    Ok(Ok(()))
}

fn cpu_frequency(out: &mut Out, cur: &Act) -> Res {
    let f = cur.f("cpufreq");
    let mut name = String::new();
    for i in 0..cur.n {
        cpu_item(i, &mut name);
        out.begin(&name);
        out.v("frequency", tr!(idiv(cur.get(i, f), 100)));
        row!(out);
    }
    Ok(Ok(()))
}

fn filesystem(out: &mut Out, cur: &Act) -> Res {
    let ff = cur.f("fs_name");
    let (fb, fbf, fba, ffi, fff) = (cur.f("f_blocks"), cur.f("f_bfree"), cur.f("f_bavail"), cur.f("f_files"), cur.f("f_ffree"));
    if !matches!(ff, Some(FieldRef::Text(_))) || !matches!(fb, Some(FieldRef::Num(_))) || !matches!(fbf, Some(FieldRef::Num(_))) {
        return Ok(Err(Fallback));
    }
    for i in 0..cur.n {
        let name = cur.text(i, ff).unwrap();
        if name.is_empty() {
            continue;
        }
        let (blocks, bfree, files, ffree) = (cur.get(i, fb), cur.get(i, fbf), cur.get(i, ffi), cur.get(i, fff));
        out.begin(name);
        // int / 1024 is exact division by a power of two of the rounded int: the same double as Python's
        out.v("MBfsfree", bfree as f64 / 1024.0 / 1024.0);
        out.v("MBfsused", (blocks - bfree) as f64 / 1024.0 / 1024.0);
        out.v("%fsused", if blocks != 0 { sp_value(bfree, blocks, blocks as f64) } else { 0.0 });
        out.v("%ufsused", if blocks != 0 { sp_value(cur.get(i, fba), blocks, blocks as f64) } else { 0.0 });
        out.v("Ifree", ffree as f64);
        out.v("Iused", (files - ffree) as f64);
        out.v("%Iused", if files != 0 { sp_value(ffree, files, files as f64) } else { 0.0 });
        row!(out);
    }
    Ok(Ok(()))
}

fn psi(out: &mut Out, cur: &Act, prev: &Act, itv: i128) -> Res {
    out.begin("");
    for kind in ["some", "full"] {
        let total = format!("{}_total", kind);
        let c_total = match cur.num(0, cur.f(&total)) {
            Some(v) => v,
            None => continue,
        };
        for span in ["10", "60", "300"] {
            let v = tr!(idiv(cur.get(0, cur.f(&format!("{}_{}", kind, span))), 100));
            out.vo(format!("{}_avg{}", kind, span), v);
        }
        let p_total = prev.get(0, prev.f(&total));
        out.vo(format!("{}_avg", kind), tr!(idiv(c_total - p_total, 100 * itv)));
    }
    row!(out);
    Ok(Ok(()))
}

#[cfg_attr(not(feature = "python"), allow(dead_code))]
const A_CPU: u32 = 1;
const A_IRQ: u32 = 3;
const A_MEMORY: u32 = 7;

/// rates.COMPUTE's order: (activity id, section, kind 0 cpu / 1 rate / 2 level)
/// rates.COMPUTE's (activity id, section) in order, as ported here: the binary compares it with the copy
/// gen_layouts.py made of rates.py's (an activity added on one side only sends the file to Python)
pub fn compute_sections() -> Vec<(u32, &'static str)> {
    COMPUTE.iter().map(|&(aid, section, _)| (aid, section)).collect()
}

const COMPUTE: [(u32, &str, u8); 36] = [
    (1, "cpu-load-all", 0),
    (2, "process-and-context-switch", 1),
    (4, "swap-pages", 1),
    (5, "paging", 1),
    (7, "memory", 2),
    (9, "queue", 2),
    (11, "disk", 1),
    (12, "net-dev", 1),
    (13, "net-edev", 1),
    (3, "interrupts", 1),
    (6, "io", 1),
    (34, "hugepages", 2),
    (8, "kernel", 2),
    (10, "serial", 1),
    (14, "net-nfs", 1),
    (15, "net-nfsd", 1),
    (16, "net-sock", 2),
    (17, "net-ip", 1),
    (18, "net-eip", 1),
    (19, "net-icmp", 1),
    (20, "net-eicmp", 1),
    (21, "net-tcp", 1),
    (22, "net-etcp", 1),
    (23, "net-udp", 1),
    (24, "net-sock6", 2),
    (25, "net-ip6", 1),
    (26, "net-eip6", 1),
    (27, "net-icmp6", 1),
    (28, "net-eicmp6", 1),
    (29, "net-udp6", 1),
    (39, "softnet", 1),
    (30, "cpu-frequency", 2),
    (37, "filesystems", 2),
    (40, "psi-cpu", 1),
    (41, "psi-io", 1),
    (42, "psi-mem", 1),
];

fn zip_names(fields: &[&'static str], names: &'static str) -> Vec<(&'static str, &'static str)> {
    fields.iter().copied().zip(names.split(' ')).collect()
}

struct Tables {
    snmp: HashMap<u32, (Vec<(&'static str, &'static str)>, bool)>,
    levels: HashMap<u32, Vec<(&'static str, &'static str)>>,
}

fn tables() -> &'static Tables {
    use std::sync::OnceLock;
    static T: OnceLock<Tables> = OnceLock::new();
    T.get_or_init(|| {
        let mut snmp = HashMap::default();
        let s = |f: &[&'static str], n: &'static str| zip_names(f, n);
        snmp.insert(14, (s(&["nfs_rpccnt", "nfs_rpcretrans", "nfs_readcnt", "nfs_writecnt", "nfs_accesscnt", "nfs_getattcnt"], "call retrans read write access getatt"), true));
        snmp.insert(15, (s(&["nfsd_rpccnt", "nfsd_rpcbad", "nfsd_netcnt", "nfsd_netudpcnt", "nfsd_nettcpcnt", "nfsd_rchits", "nfsd_rcmisses", "nfsd_readcnt", "nfsd_writecnt", "nfsd_accesscnt", "nfsd_getattcnt"], "scall badcall packet udp tcp hit miss sread swrite saccess sgetatt"), true));
        snmp.insert(17, (s(&["InReceives", "ForwDatagrams", "InDelivers", "OutRequests", "ReasmReqds", "ReasmOKs", "FragOKs", "FragCreates"], "irec fwddgm idel orq asmrq asmok fragok fragcrt"), false));
        snmp.insert(18, (s(&["InHdrErrors", "InAddrErrors", "InUnknownProtos", "InDiscards", "OutDiscards", "OutNoRoutes", "ReasmFails", "FragFails"], "ihdrerr iadrerr iukwnpr idisc odisc onort asmf fragf"), false));
        snmp.insert(19, (s(&["InMsgs", "OutMsgs", "InEchos", "InEchoReps", "OutEchos", "OutEchoReps", "InTimestamps", "InTimestampReps", "OutTimestamps", "OutTimestampReps", "InAddrMasks", "InAddrMaskReps", "OutAddrMasks", "OutAddrMaskReps"], "imsg omsg iech iechr oech oechr itm itmr otm otmr iadrmk iadrmkr oadrmk oadrmkr"), false));
        snmp.insert(20, (s(&["InErrors", "OutErrors", "InDestUnreachs", "OutDestUnreachs", "InTimeExcds", "OutTimeExcds", "InParmProbs", "OutParmProbs", "InSrcQuenchs", "OutSrcQuenchs", "InRedirects", "OutRedirects"], "ierr oerr idstunr odstunr itmex otmex iparmpb oparmpb isrcq osrcq iredir oredir"), false));
        snmp.insert(21, (s(&["ActiveOpens", "PassiveOpens", "InSegs", "OutSegs"], "active passive iseg oseg"), false));
        snmp.insert(22, (s(&["AttemptFails", "EstabResets", "RetransSegs", "InErrs", "OutRsts"], "atmptf estres retrans isegerr orsts"), false));
        snmp.insert(23, (s(&["InDatagrams", "OutDatagrams", "NoPorts", "InErrors"], "idgm odgm noport idgmerr"), false));
        snmp.insert(25, (s(&["InReceives6", "OutForwDatagrams6", "InDelivers6", "OutRequests6", "ReasmReqds6", "ReasmOKs6", "InMcastPkts6", "OutMcastPkts6", "FragOKs6", "FragCreates6"], "irec6 fwddgm6 idel6 orq6 asmrq6 asmok6 imcpck6 omcpck6 fragok6 fragcr6"), false));
        snmp.insert(26, (s(&["InHdrErrors6", "InAddrErrors6", "InUnknownProtos6", "InTooBigErrors6", "InDiscards6", "OutDiscards6", "InNoRoutes6", "OutNoRoutes6", "ReasmFails6", "FragFails6", "InTruncatedPkts6"], "ihdrer6 iadrer6 iukwnp6 i2big6 idisc6 odisc6 inort6 onort6 asmf6 fragf6 itrpck6"), false));
        snmp.insert(27, (s(&["InMsgs6", "OutMsgs6", "InEchos6", "InEchoReplies6", "OutEchoReplies6", "InGroupMembQueries6", "InGroupMembResponses6", "OutGroupMembResponses6", "InGroupMembReductions6", "OutGroupMembReductions6", "InRouterSolicits6", "OutRouterSolicits6", "InRouterAdvertisements6", "InNeighborSolicits6", "OutNeighborSolicits6", "InNeighborAdvertisements6", "OutNeighborAdvertisements6"], "imsg6 omsg6 iech6 iechr6 oechr6 igmbq6 igmbr6 ogmbr6 igmbrd6 ogmbrd6 irtsol6 ortsol6 irtad6 inbsol6 onbsol6 inbad6 onbad6"), false));
        snmp.insert(28, (s(&["InErrors6", "InDestUnreachs6", "OutDestUnreachs6", "InTimeExcds6", "OutTimeExcds6", "InParmProblems6", "OutParmProblems6", "InRedirects6", "OutRedirects6", "InPktTooBigs6", "OutPktTooBigs6"], "ierr6 idtunr6 odtunr6 itmex6 otmex6 iprmpb6 oprmpb6 iredir6 oredir6 ipck2b6 opck2b6"), false));
        snmp.insert(29, (s(&["InDatagrams6", "OutDatagrams6", "NoPorts6", "InErrors6"], "idgm6 odgm6 noport6 idgmer6"), false));
        let mut levels = HashMap::default();
        levels.insert(8, vec![("dentry_stat", "dentunusd"), ("file_used", "file-nr"), ("inode_used", "inode-nr"), ("pty_nr", "pty-nr")]);
        levels.insert(16, vec![("sock_inuse", "totsck"), ("tcp_inuse", "tcpsck"), ("udp_inuse", "udpsck"), ("raw_inuse", "rawsck"), ("frag_inuse", "ip-frag"), ("tcp_tw", "tcp-tw")]);
        levels.insert(24, vec![("tcp6_inuse", "tcp6sck"), ("udp6_inuse", "udp6sck"), ("raw6_inuse", "raw6sck"), ("frag6_inuse", "ip6-frag")]);
        Tables { snmp, levels }
    })
}

/// How a collector's intervals are computed: memused rule (0 total-free, 1 total-free-buffers-cached-slab,
/// 2 total-available) and each activity's nr2 (the file header's, the last of an id).
#[cfg_attr(feature = "python", pyclass(frozen))]
pub struct Ctx {
    rule: u8,
    nr2: HashMap<u32, i64>,
}

impl Ctx {
    /// memused rule (0 total-free, 1 total-free-buffers-cached-slab, 2 total-available), nr2 by activity id
    pub fn plain(rule: u8, nr2: HashMap<u32, i64>) -> Option<Self> {
        (rule <= 2).then_some(Ctx { rule, nr2 })
    }
}

#[cfg(feature = "python")]
#[pymethods]
impl Ctx {
    /// compute: rates.COMPUTE's (activity id, section) in order: anything but the sections ported here
    /// (an activity added in Python only) is refused, and the collector stays on the Python path
    #[new]
    fn new(rule: u8, nr2: std::collections::HashMap<u32, i64>, compute: Vec<(u32, String)>) -> PyResult<Self> {
        let ours: Vec<(u32, String)> = COMPUTE.iter().map(|&(aid, section, _)| (aid, section.to_string())).collect();
        if compute != ours || rule > 2 {
            return Err(PyValueError::new_err("rates.COMPUTE is not what the native path computes"));
        }
        Ok(Ctx { rule, nr2: nr2.into_iter().collect() })
    }
}

fn sections(out: &mut Out, ctx: &Ctx, prev: &View, cur: &View, itv: u64, do_rates: bool) -> Res {
    let t = tables();
    let itv_f = itv as f64;
    for &(aid, section, kind) in COMPUTE.iter() {
        let c = match Act::of(cur, aid) {
            Some(c) if c.n > 0 => c,
            _ => continue,
        };
        let p = match Act::of(prev, aid) {
            Some(p) => p,
            None => continue,
        };
        out.section(section, kind == 1);
        let r = match kind {
            0 => cpu(out, &c, &p)?,
            1 => {
                if p.n == 0 || !do_rates {
                    continue;
                }
                match aid {
                    2 => single(out, &c, &p, &PCSW, itv_f, false)?,
                    4 => single(out, &c, &p, &SWAP, itv_f, false)?,
                    5 => paging(out, &c, &p, itv_f)?,
                    11 => disk(out, &c, &p, itv_f)?,
                    12 => net_dev(out, &c, &p, itv_f)?,
                    13 => net_edev(out, &c, &p, itv_f)?,
                    A_IRQ => interrupts(out, &c, &p, itv_f, ctx.nr2.get(&aid).copied().unwrap_or(1))?,
                    6 => io(out, &c, &p, itv_f)?,
                    10 => serial(out, &c, &p, itv_f)?,
                    39 => softnet(out, &c, &p, itv_f)?,
                    40..=42 => psi(out, &c, &p, itv as i128)?,
                    _ => {
                        let (names, wrap) = &t.snmp[&aid];
                        single(out, &c, &p, names, itv_f, *wrap)?
                    }
                }
            }
            _ => match aid {
                A_MEMORY => memory(out, &c, ctx.rule)?,
                9 => queue(out, &c)?,
                34 => huge(out, &c)?,
                30 => cpu_frequency(out, &c)?,
                37 => filesystem(out, &c)?,
                _ => level(out, &c, &t.levels[&aid])?,
            },
        };
        if r.is_err() {
            return Ok(r);
        }
    }
    Ok(Ok(()))
}

/// What the JSON lines of one collector hold besides the figures: pieces of text Python wrote once per file.
#[cfg_attr(feature = "python", pyclass(frozen))]
pub struct Lines {
    pub row_head: String, // a sysstat_samples line up to its ts
    pub row_mid: String,  // from after interval_s to origin_offset's value
    pub cpu_head: String, // a cpu_samples line up to its ts
    pub cpu_tail: String, // from after cpus to origin_snapshot's "offset "
    pub trusted: bool,
    pub cpu_count: i64,
}

#[cfg(feature = "python")]
#[pymethods]
impl Lines {
    #[new]
    fn new(row_head: String, row_mid: String, cpu_head: String, cpu_tail: String, trusted: bool, cpu_count: i64) -> Self {
        Lines { row_head, row_mid, cpu_head, cpu_tail, trusted, cpu_count }
    }
}

/// One interval's result: its segments in order, the CPU "all" figures (None without a CPU row), the online
/// CPUs, and whether the cpu_samples line is among the segments (with `lines`).
pub struct Interval {
    pub segments: Vec<Seg>,
    pub cpu_all: Option<Vec<f64>>,
    pub online: usize,
    pub cpu_done: bool,
}

/// sar's figures of one interval (prev -> cur), written as `fleetperf parse`'s JSON lines with `lines`, else
/// as rows; None when this code cannot be sure to give the Python path's result (Python computes it then).
#[allow(clippy::too_many_arguments)]
pub fn interval_of(
    ctx: &Ctx,
    prev: &View,
    cur: &View,
    itv: u64,
    rates: bool,
    lines: Option<&Lines>,
    ts: i64,
    interval_s: Option<f64>,
    offset: i64,
) -> Option<Interval> {
    let mut tmp = String::new();
    let prefix = lines.map(|l| {
        let mut p = String::with_capacity(l.row_head.len() + l.row_mid.len() + 64);
        p.push_str(&l.row_head);
        let _ = write!(p, "{}, \"interval_s\": ", ts);
        match interval_s {
            Some(v) => push_repr(&mut p, v, &mut tmp),
            None => p.push_str("null"),
        }
        p.push_str(&l.row_mid);
        let _ = write!(p, "{}, ", offset);
        p
    });
    let mut out = Out {
        prefix,
        text: String::with_capacity(1 << 16),
        rows: 0,
        segments: Vec::new(),
        section: "",
        rate: false,
        percent: false,
        item: String::new(),
        names: Vec::new(),
        vals: Vec::new(),
        cpu_all: None,
        online: 0,
        tmp: String::new(),
    };
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        sections(&mut out, ctx, prev, cur, itv.max(1), rates)
    }));
    if !matches!(r, Ok(Ok(Ok(())))) {
        return None; // Fallback, or a panic: Python computes the interval
    }
    out.flush();
    let mut cpu_done = false;
    if let (Some(l), Some(itv_s), Some(v)) = (lines, interval_s, out.cpu_all.as_ref()) {
        // records.py's cpu_line and its range check; out of range: Python writes the dead letter
        let figures = [v[0] + v[1] + v[7] + v[8], v[2] + v[5] + v[6], v[3], v[9], v[4]];
        if figures.iter().all(|&x| (0.0..=100.0001).contains(&x)) {
            let mut t = String::with_capacity(512);
            t.push_str(&l.cpu_head);
            let _ = write!(t, "{}, \"interval_s\": ", ts);
            push_repr(&mut t, itv_s, &mut tmp);
            t.push_str(", \"source\": \"sadc\"");
            for (name, x) in ["user_pct", "sys_pct", "wait_pct", "idle_pct"].iter().zip(figures.iter()) {
                let _ = write!(t, ", \"{}\": ", name);
                push_repr(&mut t, *x, &mut tmp);
            }
            t.push_str(", \"steal_pct\": ");
            if l.trusted {
                push_repr(&mut t, v[4], &mut tmp);
            } else {
                t.push_str("null");
            }
            let cpus = if out.online > 0 { out.online as i64 } else { l.cpu_count };
            let _ = write!(t, ", \"cpus\": {}", cpus);
            t.push_str(&l.cpu_tail);
            let _ = write!(t, "{}\"}}}}\n", offset);
            out.segments.push(Seg::Lines(t, 1, "cpu_samples"));
            cpu_done = true;
        }
    }
    Some(Interval { segments: out.segments, cpu_all: out.cpu_all, online: out.online, cpu_done })
}

/// One interval's rows: (segments, cpu "all" figures or None, online CPUs, whether the cpu_samples line is
/// among the segments), or None when Python must compute this interval itself. Segments: (JSON lines as
/// ASCII bytes, how many, topic key) with `lines` given, (section, item, dict) otherwise, and (section, item, why) for a row out of
/// range.
#[cfg(feature = "python")]
#[pyfunction]
#[pyo3(signature = (ctx, prev, cur, itv, rates, lines=None, ts=0, interval_s=None, offset=0))]
#[allow(clippy::too_many_arguments)]
fn interval<'py>(
    py: Python<'py>,
    ctx: Bound<'py, Ctx>,
    prev: Bound<'py, Stats>,
    cur: Bound<'py, Stats>,
    itv: u64,
    rates: bool,
    lines: Option<Bound<'py, Lines>>,
    ts: i64,
    interval_s: Option<f64>,
    offset: i64,
) -> PyResult<PyObject> {
    let (p, c) = (prev.get(), cur.get());
    let pv = View { spec: p.spec.get(), acts: &p.acts };
    let cv = View { spec: c.spec.get(), acts: &c.acts };
    let l = lines.as_ref().map(|l| l.get());
    let Some(r) = interval_of(ctx.get(), &pv, &cv, itv, rates, l, ts, interval_s, offset) else {
        return Ok(py.None());
    };
    let mut segs = Vec::with_capacity(r.segments.len());
    for seg in r.segments {
        let t = match seg {
            Seg::Lines(text, n, key) => PyTuple::new(
                py,
                [
                    PyBytes::new(py, text.as_bytes()).into_any(),
                    n.into_pyobject(py)?.into_any(),
                    key.into_pyobject(py)?.into_any(),
                ],
            )?,
            Seg::Bad(section, item, why) => PyTuple::new(py, [section.to_string(), item, why])?,
            Seg::Dict(section, item, values) => {
                let d = PyDict::new(py);
                for (name, v) in values {
                    d.set_item(name.as_ref(), v)?;
                }
                PyTuple::new(
                    py,
                    [section.into_pyobject(py)?.into_any(), item.into_pyobject(py)?.into_any(), d.into_any()],
                )?
            }
        };
        segs.push(t.into_any());
    }
    let segs = PyList::new(py, segs)?;
    let all = match r.cpu_all {
        Some(v) => PyList::new(py, v)?.into_any().unbind(),
        None => py.None(),
    };
    let done = pyo3::types::PyBool::new(py, r.cpu_done).to_owned().into_any().unbind();
    Ok(PyTuple::new(py, [segs.into_any().unbind(), all, r.online.into_pyobject(py)?.into_any().unbind(), done])?
        .into_any()
        .unbind())
}

#[cfg(feature = "python")]
#[pyfunction]
fn float_repr(v: f64) -> String {
    repr(v)
}

#[cfg(feature = "python")]
#[pyfunction]
fn json_str(s: &str) -> String {
    let mut o = String::new();
    push_json_str(&mut o, s);
    o
}

/// `json.dumps(s)` (ensure_ascii) of a string, for the binary's own lines
pub fn json_string(s: &str) -> String {
    let mut o = String::new();
    push_json_str(&mut o, s);
    o
}

#[cfg(feature = "python")]
#[pymodule]
fn fleetperf_sadc_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Spec>()?;
    m.add_class::<Stats>()?;
    m.add_class::<Ctx>()?;
    m.add_class::<Lines>()?;
    m.add_function(wrap_pyfunction!(stats, m)?)?;
    m.add_function(wrap_pyfunction!(interval, m)?)?;
    m.add_function(wrap_pyfunction!(float_repr, m)?)?;
    m.add_function(wrap_pyfunction!(json_str, m)?)?;
    m.add("CPU_OUT", CPU_OUT.to_vec())?;
    let _ = A_CPU;
    Ok(())
}
