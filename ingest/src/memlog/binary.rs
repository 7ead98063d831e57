//! trawl's binary memory log (`.tmem`), version 1: what a lackey log says
//! in fixed-size little-endian records, zstd-compressed in blocks. Written
//! by `trawl convert lackey LOG -o FILE`, read by `trawl ingest`.
//!
//! ```text
//! header (64 bytes + 16 per range)
//!   0  magic        b"TRAWLMEM"
//!   8  version      u16 = 1
//!  10  header_len   u16 = 64 + 16 × n_ranges
//!  12  page_size    u32   page size the converter was given (ingest default)
//!  16  kinds        u8    kinds kept: bit 0 I, 1 L, 2 S, 3 M
//!  17  flags        u8    bit 0: every kept fetch is an access record too
//!  18  n_ranges     u16   address filter ranges (0: every address)
//!  20  record_size  u32 = 16
//!  24  reserved     40 bytes of zero
//!  64  ranges       n_ranges × (lo u64, hi u64), [lo, hi)
//! blocks, each a 32-byte header and a zstd frame of raw_len bytes
//!   0  tag          4 bytes: ACC1 | FET1 | META | DIAG | END1
//!   4  count        u32   records in the block
//!   8  raw_len      u32   bytes after decompression
//!  12  stored_len   u32   bytes of the zstd frame that follows
//!  16  base         u64   ACC1: ordinal the deltas start from; END1: instructions
//!  24  extra        u64   END1: lines of the text log; otherwise 0
//! ACC1 record (16 bytes): address u64, ordinal − previous ordinal u32
//!   (the first from base), size u16, kind u8 (0 I, 1 L, 2 S, 3 M), 0 u8
//! FET1 record (40 bytes), one per fetched address: address u64,
//!   first ordinal u64, last ordinal u64, count u64, size u32, 0 u32
//! META: valgrind's lines, `LINE<TAB>TEXT\n` each
//! DIAG: the converter's diagnostics, `LINE<TAB>KIND<TAB>MESSAGE\n` each
//! END1: no payload (stored_len 0); a file without it was cut short
//! ```
//! Blocks hold at most 65536 records; a delta that does not fit 32 bits
//! starts a new block.

use std::io::{Read, Write};

use super::fetch::{FetchMap, FetchStat};
use super::filter::{Filter, KIND_I};
use super::rows::{RowSink, Rows};
use crate::error::{Error, Result};

pub const MAGIC: &[u8; 8] = b"TRAWLMEM";
pub const VERSION: u16 = 1;
pub const RECORD_SIZE: usize = 16;
pub const FETCH_RECORD_SIZE: usize = 40;
const BLOCK_RECORDS: usize = 65536;
const BLOCK_HEADER: usize = 32;

pub fn sniff(head: &[u8]) -> bool {
    head.starts_with(MAGIC)
}

/// The header of a binary log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub version: u16,
    pub page_size: u32,
    pub filter: Filter,
}

impl Header {
    fn encode(&self) -> Vec<u8> {
        let mut h = Vec::with_capacity(64 + 16 * self.filter.ranges.len());
        h.extend_from_slice(MAGIC);
        h.extend_from_slice(&VERSION.to_le_bytes());
        h.extend_from_slice(&((64 + 16 * self.filter.ranges.len()) as u16).to_le_bytes());
        h.extend_from_slice(&self.page_size.to_le_bytes());
        h.push(self.filter.kinds);
        h.push(u8::from(self.filter.fetch_rows));
        h.extend_from_slice(&(self.filter.ranges.len() as u16).to_le_bytes());
        h.extend_from_slice(&(RECORD_SIZE as u32).to_le_bytes());
        h.resize(64, 0);
        for (lo, hi) in &self.filter.ranges {
            h.extend_from_slice(&lo.to_le_bytes());
            h.extend_from_slice(&hi.to_le_bytes());
        }
        h
    }
}

fn u16_at(b: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([b[i], b[i + 1]])
}
fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(b[i..i + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(b[i..i + 8].try_into().unwrap())
}

/// Writes a binary log: rows as they come, then the fetch summary,
/// metadata and diagnostics at [`Writer::finish`].
pub struct Writer<W: Write> {
    out: W,
    raw: Vec<u8>,
    count: usize,
    base: i64,
    prev: i64,
    pub bytes: u64,
    /// Sizes above 65535 stored as 65535.
    pub clamped: u64,
}

impl<W: Write> Writer<W> {
    pub fn new(mut out: W, header: &Header) -> std::io::Result<Self> {
        let h = header.encode();
        out.write_all(&h)?;
        Ok(Writer {
            out,
            raw: Vec::with_capacity(BLOCK_RECORDS * RECORD_SIZE),
            count: 0,
            base: 0,
            prev: 0,
            bytes: h.len() as u64,
            clamped: 0,
        })
    }

    fn block(
        &mut self,
        tag: &[u8; 4],
        count: usize,
        raw: &[u8],
        base: u64,
        extra: u64,
    ) -> std::io::Result<()> {
        let stored = if raw.is_empty() {
            Vec::new()
        } else {
            zstd::bulk::compress(raw, 1)?
        };
        let mut h = [0u8; BLOCK_HEADER];
        h[..4].copy_from_slice(tag);
        h[4..8].copy_from_slice(&(count as u32).to_le_bytes());
        h[8..12].copy_from_slice(&(raw.len() as u32).to_le_bytes());
        h[12..16].copy_from_slice(&(stored.len() as u32).to_le_bytes());
        h[16..24].copy_from_slice(&base.to_le_bytes());
        h[24..32].copy_from_slice(&extra.to_le_bytes());
        self.out.write_all(&h)?;
        self.out.write_all(&stored)?;
        self.bytes += (BLOCK_HEADER + stored.len()) as u64;
        Ok(())
    }

    fn flush_accesses(&mut self) -> std::io::Result<()> {
        if self.count > 0 {
            let raw = std::mem::take(&mut self.raw);
            self.block(b"ACC1", self.count, &raw, self.base as u64, 0)?;
            self.raw = raw;
            self.raw.clear();
            self.count = 0;
        }
        Ok(())
    }

    pub fn push(&mut self, ord: i64, kind: u8, addr: u64, size: u32) -> std::io::Result<()> {
        let mut delta = ord - self.prev;
        if self.count == BLOCK_RECORDS || !(0..=u32::MAX as i64).contains(&delta) {
            self.flush_accesses()?;
        }
        if self.count == 0 {
            self.base = ord;
            self.prev = ord;
            delta = 0;
        }
        let size = if size > u16::MAX as u32 {
            self.clamped += 1;
            u16::MAX
        } else {
            size as u16
        };
        let mut r = [0u8; RECORD_SIZE];
        r[..8].copy_from_slice(&addr.to_le_bytes());
        r[8..12].copy_from_slice(&(delta as u32).to_le_bytes());
        r[12..14].copy_from_slice(&size.to_le_bytes());
        r[14] = kind;
        self.raw.extend_from_slice(&r);
        self.count += 1;
        self.prev = ord;
        Ok(())
    }

    /// Writes the remaining records, the fetch summary, `meta` (line,
    /// text), `diags` (line, kind, message) and the end block.
    pub fn finish(
        mut self,
        fetch: &FetchMap,
        meta: &[(u64, String)],
        diags: &[(u64, String, String)],
        instrs: u64,
        lines: u64,
    ) -> std::io::Result<(W, u64)> {
        self.flush_accesses()?;
        let sorted = fetch.sorted();
        for part in sorted.chunks(BLOCK_RECORDS) {
            let mut raw = Vec::with_capacity(part.len() * FETCH_RECORD_SIZE);
            for (a, s) in part {
                raw.extend_from_slice(&a.to_le_bytes());
                raw.extend_from_slice(&(s.first as u64).to_le_bytes());
                raw.extend_from_slice(&(s.last as u64).to_le_bytes());
                raw.extend_from_slice(&s.count.to_le_bytes());
                raw.extend_from_slice(&s.size.to_le_bytes());
                raw.extend_from_slice(&0u32.to_le_bytes());
            }
            self.block(b"FET1", part.len(), &raw, 0, 0)?;
        }
        let clean = |s: &str| s.replace(['\t', '\n'], " ");
        if !meta.is_empty() {
            let text: String = meta
                .iter()
                .map(|(l, t)| format!("{l}\t{}\n", clean(t)))
                .collect();
            self.block(b"META", meta.len(), text.as_bytes(), 0, 0)?;
        }
        if !diags.is_empty() {
            let text: String = diags
                .iter()
                .map(|(l, k, m)| format!("{l}\t{}\t{}\n", clean(k), clean(m)))
                .collect();
            self.block(b"DIAG", diags.len(), text.as_bytes(), 0, 0)?;
        }
        self.block(b"END1", 0, &[], instrs, lines)?;
        self.out.flush()?;
        Ok((self.out, self.bytes))
    }
}

impl<W: Write> RowSink for Writer<W> {
    fn rows(&mut self, rows: Rows) -> Result<()> {
        for i in 0..rows.len() {
            self.push(rows.ordinal[i], rows.kind[i], rows.address[i], rows.size[i])
                .map_err(|e| Error::io("binary memory log", e))?;
        }
        Ok(())
    }
}

/// One block of a binary log, as read.
pub enum Block {
    /// Access records (not yet decoded) and their base ordinal.
    Accesses {
        raw: Vec<u8>,
        count: usize,
        base: u64,
        offset: u64,
    },
    Fetch(Vec<(u64, FetchStat)>),
    Meta(Vec<(u64, String)>),
    Diag(Vec<(u64, String, String)>),
    End {
        instrs: u64,
        lines: u64,
    },
}

/// A problem with the file itself: where, and what.
#[derive(Debug)]
pub struct Corrupt {
    pub offset: u64,
    pub message: String,
}

/// Reads the header of a binary log.
pub fn read_header(r: &mut dyn Read) -> std::result::Result<(Header, u64), Corrupt> {
    let mut h = [0u8; 64];
    r.read_exact(&mut h).map_err(|_| Corrupt {
        offset: 0,
        message: "file ends inside the 64-byte header".into(),
    })?;
    if &h[..8] != MAGIC {
        return Err(Corrupt {
            offset: 0,
            message: "not a trawl binary memory log (magic TRAWLMEM missing)".into(),
        });
    }
    let version = u16_at(&h, 8);
    if version != VERSION {
        return Err(Corrupt {
            offset: 8,
            message: format!("version {version}; this trawl reads version {VERSION}"),
        });
    }
    let header_len = u16_at(&h, 10) as usize;
    let n_ranges = u16_at(&h, 18) as usize;
    let rec = u32_at(&h, 20) as usize;
    if header_len != 64 + 16 * n_ranges || rec != RECORD_SIZE {
        return Err(Corrupt {
            offset: 10,
            message: format!(
                "header length {header_len} / record size {rec} do not match {n_ranges} ranges and {RECORD_SIZE}-byte records"
            ),
        });
    }
    let page_size = u32_at(&h, 12);
    let mut ranges = Vec::with_capacity(n_ranges);
    let mut rb = vec![0u8; 16 * n_ranges];
    r.read_exact(&mut rb).map_err(|_| Corrupt {
        offset: 64,
        message: "file ends inside the header's address ranges".into(),
    })?;
    for k in 0..n_ranges {
        ranges.push((u64_at(&rb, 16 * k), u64_at(&rb, 16 * k + 8)));
    }
    Ok((
        Header {
            version,
            page_size,
            filter: Filter {
                kinds: h[16] & 0b1111,
                ranges,
                fetch_rows: h[17] & 1 != 0,
            },
        },
        header_len as u64,
    ))
}

/// Reads the next block at byte `offset`; `Ok(None)` at a clean end of
/// input (which, without an END1 block first, means the file was cut).
pub fn read_block(
    r: &mut dyn Read,
    offset: u64,
) -> std::result::Result<Option<(Block, u64)>, Corrupt> {
    let mut h = [0u8; BLOCK_HEADER];
    let mut got = 0;
    while got < BLOCK_HEADER {
        match r.read(&mut h[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(Corrupt {
                    offset,
                    message: e.to_string(),
                })
            }
        }
    }
    if got == 0 {
        return Ok(None);
    }
    if got < BLOCK_HEADER {
        return Err(Corrupt {
            offset,
            message: format!("file ends inside a block header ({got} of {BLOCK_HEADER} bytes)"),
        });
    }
    let tag: [u8; 4] = h[..4].try_into().unwrap();
    let count = u32_at(&h, 4) as usize;
    let raw_len = u32_at(&h, 8) as usize;
    let stored = u32_at(&h, 12) as usize;
    let base = u64_at(&h, 16);
    let extra = u64_at(&h, 24);
    let bad = |m: String| Corrupt { offset, message: m };
    let want_raw = match &tag {
        b"ACC1" => count * RECORD_SIZE,
        b"FET1" => count * FETCH_RECORD_SIZE,
        b"META" | b"DIAG" | b"END1" => raw_len,
        _ => {
            return Err(bad(format!(
                "unknown block tag {:?}",
                String::from_utf8_lossy(&tag)
            )))
        }
    };
    if raw_len != want_raw || count > BLOCK_RECORDS || raw_len > 64 << 20 || stored > 64 << 20 {
        return Err(bad(format!(
            "block {} with {count} records has {raw_len} bytes (want {want_raw})",
            String::from_utf8_lossy(&tag)
        )));
    }
    // Grown as the bytes arrive: a header claiming 64 MB in a short file
    // allocates what the file holds.
    let mut payload = Vec::new();
    let got = r
        .take(stored as u64)
        .read_to_end(&mut payload)
        .map_err(|e| bad(e.to_string()))?;
    if got < stored {
        return Err(bad(format!(
            "file ends inside a {}-byte {} block",
            stored,
            String::from_utf8_lossy(&tag)
        )));
    }
    let raw = if stored == 0 {
        Vec::new()
    } else {
        zstd::bulk::decompress(&payload, raw_len)
            .map_err(|e| bad(format!("block does not decompress: {e}")))?
    };
    if raw.len() != raw_len {
        return Err(bad(format!(
            "block decompresses to {} bytes, header says {raw_len}",
            raw.len()
        )));
    }
    let next = offset + (BLOCK_HEADER + stored) as u64;
    let text = |raw: &[u8]| String::from_utf8_lossy(raw).into_owned();
    let block = match &tag {
        b"ACC1" => Block::Accesses {
            raw,
            count,
            base,
            offset,
        },
        b"FET1" => Block::Fetch(
            raw.chunks_exact(FETCH_RECORD_SIZE)
                .map(|c| {
                    (
                        u64_at(c, 0),
                        FetchStat {
                            first: u64_at(c, 8) as i64,
                            last: u64_at(c, 16) as i64,
                            count: u64_at(c, 24),
                            size: u32_at(c, 32),
                        },
                    )
                })
                .collect(),
        ),
        b"META" => Block::Meta(
            text(&raw)
                .lines()
                .filter_map(|l| {
                    let (n, t) = l.split_once('\t')?;
                    Some((n.parse().ok()?, t.to_string()))
                })
                .collect(),
        ),
        b"DIAG" => Block::Diag(
            text(&raw)
                .lines()
                .filter_map(|l| {
                    let mut it = l.splitn(3, '\t');
                    Some((
                        it.next()?.parse().ok()?,
                        it.next()?.to_string(),
                        it.next()?.to_string(),
                    ))
                })
                .collect(),
        ),
        _ => Block::End {
            instrs: base,
            lines: extra,
        },
    };
    Ok(Some((block, next)))
}

/// Decodes the access records of an ACC1 block, keeping those `filter`
/// keeps (a binary log may be read with narrower filters than it was
/// written with).
pub fn decode_accesses(
    raw: &[u8],
    base: u64,
    filter: &Filter,
    rows: &mut Rows,
) -> std::result::Result<(), String> {
    rows.reserve(raw.len() / RECORD_SIZE);
    let mut ord = base as i64;
    for r in raw.chunks_exact(RECORD_SIZE) {
        let addr = u64_at(r, 0);
        ord = ord.saturating_add(u32_at(r, 8) as i64);
        let size = u16_at(r, 12) as u32;
        let kind = r[14];
        if kind > 3 {
            return Err(format!("record with kind {kind} (0–3 expected)"));
        }
        if filter.kinds & (1 << kind) != 0
            && filter.keep_addr(addr)
            && (kind != KIND_I || filter.fetch_rows)
        {
            rows.push(ord, kind, addr, size);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let h = Header {
            version: 1,
            page_size: 4096,
            filter: Filter {
                kinds: 0b1110,
                ranges: vec![(0x1000, 0x9000)],
                fetch_rows: false,
            },
        };
        let mut w = Writer::new(Vec::new(), &h).unwrap();
        w.push(3, 1, 0x1234, 8).unwrap();
        w.push(3, 2, 0x1238, 4).unwrap();
        // A gap wider than 32 bits starts a new block.
        w.push(1 << 40, 3, 0x2000, 1).unwrap();
        let mut f = FetchMap::default();
        f.add(0x400000, 3, 7, 1, 9);
        let (bytes, n) = w
            .finish(
                &f,
                &[(1, "==1== Command: x".into())],
                &[(5, "bad_record".into(), "x".into())],
                10,
                20,
            )
            .unwrap();
        assert_eq!(n as usize, bytes.len());
        let mut r: &[u8] = &bytes;
        let (h2, mut off) = read_header(&mut r).unwrap();
        assert_eq!(h2, h);
        let mut rows = Rows::default();
        let mut tags = Vec::new();
        while let Some((b, next)) = read_block(&mut r, off).unwrap() {
            off = next;
            match b {
                Block::Accesses { raw, base, .. } => {
                    tags.push("ACC");
                    decode_accesses(&raw, base, &Filter::default(), &mut rows).unwrap()
                }
                Block::Fetch(v) => {
                    tags.push("FET");
                    assert_eq!(v[0].1.count, 7)
                }
                Block::Meta(m) => {
                    tags.push("META");
                    assert_eq!(m[0].1, "==1== Command: x")
                }
                Block::Diag(d) => {
                    tags.push("DIAG");
                    assert_eq!(d[0].0, 5)
                }
                Block::End { instrs, lines } => {
                    tags.push("END");
                    assert_eq!((instrs, lines), (10, 20))
                }
            }
        }
        assert_eq!(tags, ["ACC", "ACC", "FET", "META", "DIAG", "END"]);
        assert_eq!(rows.ordinal, vec![3, 3, 1 << 40]);
        assert_eq!(rows.address, vec![0x1234, 0x1238, 0x2000]);
        assert_eq!(rows.kind, vec![1, 2, 3]);
    }

    #[test]
    fn cut_file_is_reported_with_offset() {
        let h = Header {
            version: 1,
            page_size: 4096,
            filter: Filter::default(),
        };
        let mut w = Writer::new(Vec::new(), &h).unwrap();
        w.push(1, 1, 0x10, 8).unwrap();
        let (bytes, _) = w.finish(&FetchMap::default(), &[], &[], 1, 2).unwrap();
        let cut = &bytes[..bytes.len() - 40];
        let mut r: &[u8] = cut;
        let (_, off) = read_header(&mut r).unwrap();
        let e = read_block(&mut r, off).err().unwrap();
        assert_eq!(e.offset, 64);
        assert!(e.message.contains("ends inside"), "{}", e.message);
    }
}
