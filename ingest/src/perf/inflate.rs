//! The records inside zstd-compressed ones (`perf record -z`):
//! COMPRESSED and COMPRESSED2 records carry a zstd stream whose output is
//! more records, framed as in the file, and a record may continue in the
//! next compressed record. [`Inflated`] holds what was decompressed and not
//! yet read; the reader takes its records before reading the input again.

use super::bytes::Cursor;
use super::records::rtype;
use crate::diag::{Diagnostics, Position, Severity};
use crate::error::{Error, Result};

/// Most decompressed bytes one COMPRESSED record may produce.
const MAX_INFLATE_PER_RECORD: usize = 256 << 20;

/// Decompressed records not yet read.
#[derive(Default)]
pub(super) struct Inflated {
    zstd: Option<zstd::stream::raw::Decoder<'static>>,
    buf: Vec<u8>,
    /// The next record's offset in `buf`.
    pos: usize,
    /// Bytes decompressed since the input began.
    total: u64,
    /// The offset of the compressed record the data came from.
    from: u64,
}

/// What [`Inflated::next`] found.
pub(super) enum Inner {
    /// No whole record: read the input.
    Wanting,
    /// A record whose size is impossible: the rest of the compressed
    /// stream was dropped (and reported).
    Dropped,
    /// A record: its type, misc, body and position.
    Record {
        ty: u32,
        misc: u16,
        body: std::ops::Range<usize>,
        at: Position,
    },
}

impl Inflated {
    /// The next whole record, if one is here; its body is
    /// [`Inflated::bytes`] until the next call.
    pub(super) fn next(&mut self, be: bool, diags: &mut Diagnostics) -> Result<Inner> {
        if self.pos >= self.buf.len() {
            return Ok(Inner::Wanting);
        }
        let avail = &self.buf[self.pos..];
        if avail.len() >= 8 {
            let (ty, misc, size) = super::reader::record_header(avail, be);
            let at = Position::Compressed {
                record: self.from,
                inner: self.total - avail.len() as u64,
            };
            if size < 8 {
                diags.report(
                    at,
                    Severity::Error,
                    "bad_record_size",
                    format!("record size {size} < 8 inside compressed data; rest of the compressed stream skipped"),
                )?;
                self.buf.clear();
                self.pos = 0;
                return Ok(Inner::Dropped);
            }
            if avail.len() >= size {
                let from = self.pos + 8;
                self.pos += size;
                return Ok(Inner::Record {
                    ty,
                    misc,
                    body: from..from + size - 8,
                    at,
                });
            }
        }
        // Partial record: keep it for the next compressed chunk.
        self.buf.drain(..self.pos);
        self.pos = 0;
        Ok(Inner::Wanting)
    }

    pub(super) fn bytes(&self, r: std::ops::Range<usize>) -> &[u8] {
        &self.buf[r]
    }

    /// At the end of the input: reports a record cut short.
    pub(super) fn finish(&mut self, diags: &mut Diagnostics) -> Result<()> {
        if self.pos < self.buf.len() {
            let left = self.buf.len() - self.pos;
            diags.report(
                Position::Compressed {
                    record: self.from,
                    inner: self.total - left as u64,
                },
                Severity::Error,
                "truncated",
                format!("compressed data ends inside a record ({left} bytes left over)"),
            )?;
            self.buf.clear();
            self.pos = 0;
        }
        Ok(())
    }

    /// Decompresses the body of the COMPRESSED(2) record of type `ty` at
    /// `at`; returns the bytes it produced.
    pub(super) fn inflate(
        &mut self,
        ty: u32,
        body: &[u8],
        at: u64,
        be: bool,
        diags: &mut Diagnostics,
    ) -> Result<u64> {
        use zstd::stream::raw::{InBuffer, Operation, OutBuffer};
        let data = if ty == rtype::COMPRESSED2 {
            let mut c = Cursor::new(body, be);
            let n = c.u64().unwrap_or(u64::MAX) as usize;
            match body.get(8..8usize.saturating_add(n)) {
                Some(d) => d,
                None => {
                    diags.report(
                        Position::Byte(at),
                        Severity::Error,
                        "bad_compressed",
                        "COMPRESSED2 record's data size exceeds the record",
                    )?;
                    return Ok(0);
                }
            }
        } else {
            body
        };
        if self.zstd.is_none() {
            match zstd::stream::raw::Decoder::new() {
                Ok(d) => self.zstd = Some(d),
                Err(e) => {
                    return Err(Error::BadInput {
                        path: "zstd".into(),
                        offset: at,
                        message: e.to_string(),
                    })
                }
            }
        }
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.from = at;
        let dec = self.zstd.as_mut().expect("made above");
        let mut input = InBuffer::around(data);
        let mut chunk = vec![0u8; 1 << 16];
        let (mut produced, mut added) = (0usize, 0u64);
        loop {
            let mut out = OutBuffer::around(&mut chunk[..]);
            match dec.run(&mut input, &mut out) {
                Ok(_) => {
                    let n = out.pos();
                    produced += n;
                    // perf compresses one mmap buffer (at most a few MB) per
                    // record; far more output is a corrupt or hostile stream.
                    if produced > MAX_INFLATE_PER_RECORD {
                        diags.report(
                            Position::Byte(at),
                            Severity::Error,
                            "bad_compressed",
                            format!(
                                "compressed record expands beyond {} MB; rest of it skipped",
                                MAX_INFLATE_PER_RECORD >> 20
                            ),
                        )?;
                        let _ = dec.reinit();
                        break;
                    }
                    self.buf.extend_from_slice(&chunk[..n]);
                    self.total += n as u64;
                    added += n as u64;
                    if input.pos() >= data.len() && n < chunk.len() {
                        break;
                    }
                }
                Err(e) => {
                    diags.report(
                        Position::Byte(at),
                        Severity::Error,
                        "bad_compressed",
                        format!("zstd: {e}; the compressed record is skipped"),
                    )?;
                    let _ = dec.reinit();
                    break;
                }
            }
        }
        Ok(added)
    }
}
