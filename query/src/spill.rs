//! Samples kept apart beyond what memory should hold: sorted runs in
//! temporary files, read back merged (an external merge sort). The files
//! are anonymous (`tempfile`): they vanish when the profile is dropped or
//! the process dies.

use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;

use crate::profile::Sample;

/// One sample in a run: its numbers as the scan gave them (capture,
/// command and stack numbered in order of arrival), before the profile's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Raw {
    pub capture: u32,
    /// The first sample_id (its order in the capture).
    pub first: i64,
    pub time_ns: Option<i64>,
    pub pid: i32,
    pub tid: i32,
    pub comm: u32,
    pub stack: Option<u32>,
    pub weight: i64,
}

const RECORD: usize = 44;

impl Raw {
    fn put(&self, out: &mut [u8; RECORD]) {
        out[0..4].copy_from_slice(&self.capture.to_le_bytes());
        out[4..12].copy_from_slice(&self.first.to_le_bytes());
        out[12..20].copy_from_slice(&self.time_ns.unwrap_or(i64::MIN).to_le_bytes());
        out[20..24].copy_from_slice(&self.pid.to_le_bytes());
        out[24..28].copy_from_slice(&self.tid.to_le_bytes());
        out[28..32].copy_from_slice(&self.comm.to_le_bytes());
        out[32..36].copy_from_slice(&self.stack.unwrap_or(u32::MAX).to_le_bytes());
        out[36..44].copy_from_slice(&self.weight.to_le_bytes());
    }

    fn get(b: &[u8]) -> Raw {
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        let i64_at = |i: usize| i64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let time = i64_at(12);
        let stack = u32_at(32);
        Raw {
            capture: u32_at(0),
            first: i64_at(4),
            time_ns: (time != i64::MIN).then_some(time),
            pid: u32_at(20) as i32,
            tid: u32_at(24) as i32,
            comm: u32_at(28),
            stack: (stack != u32::MAX).then_some(stack),
            weight: i64_at(36),
        }
    }
}

/// Sorted runs of samples in temporary files, and the numbers the profile
/// gives what the scan numbered (see [`Spilled::iter`]).
#[derive(Debug, Default)]
pub struct Spilled {
    runs: Vec<Run>,
    /// Per capture, command and stack as the scan numbered them: the
    /// profile's number.
    pub(crate) capture: Vec<u32>,
    pub(crate) comm: Vec<u32>,
    pub(crate) stack: Vec<u32>,
    count: u64,
}

#[derive(Debug)]
struct Run {
    file: std::fs::File,
    len: u64,
}

impl Spilled {
    /// Writes `run` (in order already) as a run of its own.
    pub(crate) fn push(&mut self, run: impl ExactSizeIterator<Item = Raw>) -> std::io::Result<()> {
        let file = tempfile::tempfile()?;
        let len = run.len() as u64;
        let mut w = BufWriter::with_capacity(1 << 20, &file);
        let mut rec = [0u8; RECORD];
        for r in run {
            r.put(&mut rec);
            w.write_all(&rec)?;
        }
        w.flush()?;
        drop(w);
        self.count += len;
        self.runs.push(Run { file, len });
        Ok(())
    }

    /// Number of samples.
    pub fn len(&self) -> u64 {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The samples in the profile's order, (capture, first sample_id),
    /// with the profile's numbers; samples of equal keys in the order
    /// they came.
    pub fn iter(&self) -> impl Iterator<Item = std::io::Result<Sample>> + '_ {
        let mut readers: Vec<Reader> = self.runs.iter().map(Reader::new).collect();
        let mut heap = std::collections::BinaryHeap::new();
        let mut failed: Option<std::io::Error> = None;
        for (k, r) in readers.iter_mut().enumerate() {
            match r.next() {
                Ok(Some(raw)) => heap.push(self.head(raw, k)),
                Ok(None) => {}
                Err(e) => failed = failed.or(Some(e)),
            }
        }
        std::iter::from_fn(move || {
            if let Some(e) = failed.take() {
                heap.clear();
                return Some(Err(e));
            }
            let std::cmp::Reverse((_, _, k, raw)) = heap.pop()?;
            match readers[k].next() {
                Ok(Some(next)) => heap.push(self.head(next, k)),
                Ok(None) => {}
                Err(e) => failed = Some(e),
            }
            Some(Ok(self.sample(raw.0)))
        })
    }

    #[allow(clippy::type_complexity)]
    fn head(&self, raw: Raw, run: usize) -> std::cmp::Reverse<(u32, i64, usize, RawKey)> {
        std::cmp::Reverse((
            self.capture[raw.capture as usize],
            raw.first,
            run,
            RawKey(raw),
        ))
    }

    fn sample(&self, r: Raw) -> Sample {
        Sample {
            capture: self.capture[r.capture as usize],
            time_ns: r.time_ns,
            pid: r.pid,
            tid: r.tid,
            comm: self.comm[r.comm as usize],
            stack: r.stack.map(|s| self.stack[s as usize]),
            count: 1,
            weight: r.weight,
        }
    }
}

/// A sample in the merge's heap, ordered by the key before it alone.
#[derive(Debug, Clone, Copy)]
struct RawKey(Raw);

impl PartialEq for RawKey {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for RawKey {}
impl PartialOrd for RawKey {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for RawKey {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

/// A run read a buffer at a time, at its own offset (runs share no file
/// position).
struct Reader<'a> {
    run: &'a Run,
    at: u64,
    buf: Vec<u8>,
    pos: usize,
}

const READ: usize = RECORD * 8192;

impl<'a> Reader<'a> {
    fn new(run: &'a Run) -> Reader<'a> {
        Reader {
            run,
            at: 0,
            buf: Vec::new(),
            pos: 0,
        }
    }

    fn next(&mut self) -> std::io::Result<Option<Raw>> {
        if self.pos == self.buf.len() {
            let total = self.run.len * RECORD as u64;
            if self.at >= total {
                return Ok(None);
            }
            let n = (total - self.at).min(READ as u64) as usize;
            self.buf.resize(n, 0);
            self.run.file.read_exact_at(&mut self.buf, self.at)?;
            self.at += n as u64;
            self.pos = 0;
        }
        let r = Raw::get(&self.buf[self.pos..self.pos + RECORD]);
        self.pos += RECORD;
        Ok(Some(r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(capture: u32, first: i64) -> Raw {
        Raw {
            capture,
            first,
            time_ns: (first != 3).then_some(first * 10),
            pid: -1,
            tid: first as i32,
            comm: capture,
            stack: (first % 2 == 0).then_some(first as u32),
            weight: first * 100,
        }
    }

    #[test]
    fn runs_merge_in_the_profiles_order() {
        // Worked by hand: captures 0 and 1 in the scan's numbers are the
        // profile's 1 and 0, so capture 1's samples come first, each
        // capture's in sample_id order; each run is in that order (as
        // `profile::spill` sorts them, by capture name) and runs
        // interleave.
        let mut s = Spilled {
            capture: vec![1, 0],
            comm: vec![5, 6],
            stack: (0..10).map(|i| 100 + i).collect(),
            ..Default::default()
        };
        s.push([raw(1, 2), raw(0, 1), raw(0, 4)].into_iter())
            .unwrap();
        s.push([raw(1, 1), raw(1, 5), raw(0, 2), raw(0, 3)].into_iter())
            .unwrap();
        let got: Vec<Sample> = s.iter().collect::<Result<_, _>>().unwrap();
        let keys: Vec<(u32, i32)> = got.iter().map(|x| (x.capture, x.tid)).collect();
        // The sample of capture 1 with sample_id 2 is scan capture 1's.
        assert_eq!(
            keys,
            vec![(0, 1), (0, 2), (0, 5), (1, 1), (1, 2), (1, 3), (1, 4)]
        );
        assert_eq!(s.len(), 7);
        let third = &got[5];
        assert_eq!((third.time_ns, third.comm, third.stack), (None, 5, None));
        let second = &got[1];
        assert_eq!(
            (second.time_ns, second.comm, second.stack, second.weight),
            (Some(20), 6, Some(102), 200)
        );
    }
}
