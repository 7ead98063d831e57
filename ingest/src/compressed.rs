//! gzip- and zstd-compressed inputs, decompressed as they are read, with
//! the expansion bounded: a decompression bomb (a few kilobytes that
//! expand to terabytes) stops at the limit instead of filling memory,
//! disk or hours. The reader then ends as if the input ended there and
//! the ingest records a `decompression_limit` diagnostic (an error with
//! `--strict`), keeping what was read.

use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// How far a compressed input may expand: to `floor` bytes whatever its
/// size, beyond that to `ratio` times the compressed bytes read so far.
/// `ratio` 0: no limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExpansionLimit {
    pub ratio: u64,
    pub floor: u64,
}

impl ExpansionLimit {
    /// Real logs expand 5–50× (perf script text, strace, lackey: 32× for
    /// the fixture at zstd -19); gzip cannot pass ~1030×, zstd bombs go to
    /// 30,000× and beyond.
    pub const DEFAULT_RATIO: u64 = 200;
    pub const DEFAULT_FLOOR: u64 = 64 << 20;

    pub fn unlimited() -> Self {
        ExpansionLimit { ratio: 0, floor: 0 }
    }

    /// What stopped a stream that expanded to `produced` bytes from
    /// `consumed` compressed ones.
    pub fn exceeded(&self, produced: u64, consumed: u64) -> String {
        format!(
            "expanded to {produced} bytes from {consumed} compressed bytes, past the limit ({}× after the first {} MiB; --max-expansion)",
            self.ratio,
            self.floor >> 20
        )
    }

    fn allows(&self, produced: u64, consumed: u64) -> bool {
        self.ratio == 0 || produced <= self.floor.max(consumed.saturating_mul(self.ratio))
    }
}

impl Default for ExpansionLimit {
    fn default() -> Self {
        ExpansionLimit {
            ratio: Self::DEFAULT_RATIO,
            floor: Self::DEFAULT_FLOOR,
        }
    }
}

/// What a decompressing stream has done: compressed bytes read, bytes
/// produced, and whether it stopped at the limit.
#[derive(Debug, Default)]
pub struct Expansion {
    consumed: AtomicU64,
    produced: AtomicU64,
    stopped: AtomicBool,
}

impl Expansion {
    pub fn consumed(&self) -> u64 {
        self.consumed.load(Ordering::Relaxed)
    }
    pub fn produced(&self) -> u64 {
        self.produced.load(Ordering::Relaxed)
    }
    /// The stream was ended at the limit.
    pub fn stopped(&self) -> bool {
        self.stopped.load(Ordering::Relaxed)
    }
}

/// Counts the compressed bytes a decompressor reads.
struct Counted<R> {
    inner: R,
    state: Arc<Expansion>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.state.consumed.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// A decompressor's output, ended at the limit: as if the input ended
/// there, or (`fail`: `--strict`) with an error.
struct Limited<R> {
    inner: R,
    limit: ExpansionLimit,
    state: Arc<Expansion>,
    fail: bool,
}

impl<R: Read> Read for Limited<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.state.stopped() {
            return Ok(0);
        }
        let produced = self.state.produced();
        if !self.limit.allows(produced, self.state.consumed()) {
            self.state.stopped.store(true, Ordering::Relaxed);
            if self.fail {
                return Err(std::io::Error::other(format!(
                    "decompression_limit: {}",
                    self.limit.exceeded(produced, self.state.consumed())
                )));
            }
            return Ok(0);
        }
        // Never more than 1 MiB past the limit in one read.
        let k = buf.len().min(1 << 20);
        let n = self.inner.read(&mut buf[..k])?;
        self.state.produced.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Is this the start of a gzip or zstd stream?
pub fn is_compressed(head: &[u8]) -> bool {
    head.starts_with(&[0x1f, 0x8b]) || head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd])
}

/// A decompressing stream.
pub struct Decompressed {
    /// `gzip` or `zstd`.
    pub kind: &'static str,
    pub stream: Box<dyn Read + Send>,
    pub expansion: Arc<Expansion>,
}

/// Wraps a gzip or zstd stream (recognised by its magic bytes, see
/// [`is_compressed`]) in a decompressor bounded by `limit`: at the limit
/// the stream ends, or with `strict` fails. `head` are the first bytes
/// already read from `input`.
pub fn decompress(
    head: Vec<u8>,
    input: Box<dyn Read + Send>,
    limit: ExpansionLimit,
    strict: bool,
) -> std::io::Result<Decompressed> {
    let expansion = Arc::new(Expansion::default());
    let whole = Counted {
        inner: std::io::Cursor::new(head.clone()).chain(input),
        state: expansion.clone(),
    };
    let (kind, d): (&'static str, Box<dyn Read + Send>) = if head.starts_with(&[0x1f, 0x8b]) {
        let d =
            flate2::read::MultiGzDecoder::new(std::io::BufReader::with_capacity(64 << 10, whole));
        ("gzip", Box::new(d))
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        ("zstd", Box::new(zstd::stream::read::Decoder::new(whole)?))
    } else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "neither a gzip nor a zstd stream",
        ));
    };
    Ok(Decompressed {
        kind,
        stream: Box::new(Limited {
            inner: d,
            limit,
            state: expansion.clone(),
            fail: strict,
        }),
        expansion,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    /// A stream under the limit is read whole; one past it stops near the
    /// limit (within a read of 1 MiB) and says so. Expected sizes by hand.
    #[test]
    fn expansion_stops_at_ratio_times_compressed_or_floor() {
        let text = vec![b'x'; 8 << 20];
        let z = gzip(&text);
        assert!(z.len() < 64 << 10, "{}", z.len());
        let read = |limit: ExpansionLimit| {
            let d = decompress(
                z[..4].to_vec(),
                Box::new(std::io::Cursor::new(z[4..].to_vec())),
                limit,
                false,
            )
            .unwrap();
            let mut out = Vec::new();
            let mut s = d.stream;
            s.read_to_end(&mut out).unwrap();
            (
                out.len() as u64,
                d.expansion.stopped(),
                d.expansion.consumed(),
            )
        };
        let (n, stopped, consumed) = read(ExpansionLimit::unlimited());
        assert_eq!((n, stopped), (8 << 20, false));
        assert_eq!(consumed, z.len() as u64);
        // Floor 1 MiB, ratio 2: stops after 1 MiB (+ at most one read).
        let (n, stopped, _) = read(ExpansionLimit {
            ratio: 2,
            floor: 1 << 20,
        });
        assert!(stopped);
        assert!((1 << 20..=2 << 20).contains(&n), "{n}");
        // A floor above the size: whole.
        let (n, stopped, _) = read(ExpansionLimit {
            ratio: 2,
            floor: 16 << 20,
        });
        assert_eq!((n, stopped), (8 << 20, false));
    }
}
