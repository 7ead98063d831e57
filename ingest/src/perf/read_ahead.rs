//! A mapped perf.data read on a thread of its own.
//!
//! Framing, decompressing and time-ordering the records (the reader's
//! work) is done by a second thread while the caller converts the records
//! before them; the records are handed over in batches of positions into
//! the mapped file (a decompressed record's bytes are copied into its
//! batch). Batches come back empty to be filled again, so the exchange
//! allocates nothing once running.
//!
//! What the caller sees is what [`PerfReader::next_record`] gives, in the
//! same order: every diagnostic the reader reports comes out just before
//! the record the single-threaded reader would have handed out after it,
//! and a change of the events or metadata (pipe-mode attributes, a late
//! feature record) takes effect at the record where it happened. Pages of
//! the mapping are released only behind the records the caller is done
//! with (`Hold`).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};

use super::header::{EventDesc, Metadata};
use super::reader::{Body, Item, PerfReader};
use crate::diag::{Diagnostic, Diagnostics};
use crate::error::Result;

/// A batch is handed over at this many records, or this many bytes of
/// decompressed records.
const BATCH_RECORDS: usize = 8192;
const BATCH_OWN_BYTES: usize = 4 << 20;
/// Batches read ahead of the one being converted.
const AHEAD: usize = 3;

/// Inputs smaller than this are read on the caller's thread: a thread
/// costs more than it saves there.
pub(super) const MIN_BYTES: u64 = 256 << 10;

/// One record of a batch: where its bytes are (the mapped file, or the
/// batch's own bytes), and what the reader knew of it.
struct Sent {
    record_type: u32,
    event: u32,
    misc: u16,
    own: bool,
    off: usize,
    len: usize,
    /// [`Item`]'s position.
    at: (u64, u64),
}

#[derive(Default)]
struct Batch {
    seq: u64,
    items: Vec<Sent>,
    own: Vec<u8>,
    /// Diagnostics reported while reading, each before the record at its
    /// index.
    diags: Vec<(usize, Diagnostic)>,
    /// The reader's events and metadata as they became from the record at
    /// this index on.
    snaps: Vec<(usize, Box<Snapshot>)>,
}

/// The reader's events and metadata at one point of the input.
type Snapshot = (Vec<EventDesc>, Metadata);

enum Msg {
    Batch(Batch),
    /// The input is read; `Err`: reading failed after the last batch. The
    /// diagnostics of each kind counted but not kept (past the first
    /// [`Diagnostics::MAX_PER_KIND`]).
    End(Result<()>, Vec<(&'static str, u64)>),
}

/// Which mapped bytes the caller may still read: the lowest mapped offset
/// of every batch sent and not yet done with.
/// Also tells the reading thread to stop when the caller stopped early.
#[derive(Default)]
pub(super) struct Hold {
    done: AtomicU64,
    sent: Mutex<VecDeque<(u64, usize)>>,
    stop: AtomicBool,
    /// The mapping below this offset has been released (for tests: no
    /// record handed out lies below it).
    pub(super) released: AtomicUsize,
}

/// Tells the reading thread to stop when the [`ReadAhead`] goes (an error
/// ended the conversion), so that the scope's join does not wait for it to
/// read on.
struct StopOnDrop(Arc<Hold>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.stop.store(true, Ordering::Relaxed);
    }
}

impl Hold {
    /// The lowest offset still held.
    pub(super) fn low(&self) -> usize {
        let done = self.done.load(Ordering::Acquire);
        let mut sent = self.sent.lock().unwrap_or_else(|e| e.into_inner());
        while sent.front().is_some_and(|&(seq, _)| seq < done) {
            sent.pop_front();
        }
        sent.iter().map(|&(_, low)| low).min().unwrap_or(usize::MAX)
    }
}

/// The records of a mapped input, read ahead on a scoped thread.
pub(super) struct ReadAhead<'scope> {
    map: Arc<memmap2::Mmap>,
    be: bool,
    pub events: Vec<EventDesc>,
    pub meta: Metadata,
    pub events_version: u64,
    rx: Receiver<Msg>,
    back: Sender<Batch>,
    hold: Arc<Hold>,
    cur: Batch,
    at: usize,
    /// Something is due before the record at this index ([`ReadAhead::advance`]).
    due: usize,
    diag_at: usize,
    snap_at: usize,
    ended: bool,
    thread: std::thread::ScopedJoinHandle<'scope, Option<PerfReader>>,
    _stop: StopOnDrop,
}

impl<'scope> ReadAhead<'scope> {
    /// Starts reading `reader` (a mapped input) on a thread of `scope`;
    /// the reader back where no thread can be made.
    pub(super) fn start<'env>(
        scope: &'scope std::thread::Scope<'scope, 'env>,
        mut reader: PerfReader,
        source: &str,
    ) -> std::result::Result<ReadAhead<'scope>, Box<PerfReader>> {
        let map = reader.mapped().expect("read ahead only maps");
        let hold = Arc::new(Hold::default());
        reader.hold = Some(Arc::clone(&hold));
        let (tx, rx) = std::sync::mpsc::sync_channel(AHEAD);
        let (back, back_rx) = std::sync::mpsc::channel();
        let events = reader.events.clone();
        let meta = reader.meta.clone();
        let events_version = reader.events_version;
        let be = reader.be;
        // Reported here again, in order ([`ReadAhead::advance`]): never
        // strict on the reading thread; past the first of a kind only
        // counted (`Diagnostics::not_kept`), as here.
        let diags = Diagnostics::new(source, false);
        // The thread is made first and given the reader after, so that
        // the reader is still here when no thread can be made.
        let (give, take) = std::sync::mpsc::sync_channel::<PerfReader>(1);
        let spawned = std::thread::Builder::new()
            .name("trawl-read".into())
            .spawn_scoped(scope, move || {
                let reader = take.recv().ok()?;
                Some(read(reader, diags, tx, back_rx))
            });
        let Ok(thread) = spawned else {
            reader.hold = None;
            return Err(Box::new(reader));
        };
        if let Err(back) = give.send(reader) {
            let mut reader = back.0;
            reader.hold = None;
            return Err(Box::new(reader));
        }
        Ok(ReadAhead {
            _stop: StopOnDrop(Arc::clone(&hold)),
            map,
            be,
            events,
            meta,
            events_version,
            rx,
            back,
            hold,
            cur: Batch::default(),
            at: 0,
            due: 0,
            diag_at: 0,
            snap_at: 0,
            ended: false,
            thread,
        })
    }

    /// The next record in time order, or `None` at the end of the input;
    /// as [`PerfReader::next_record`]. Inlined into the loop that converts
    /// the records, so that the record is handed over in registers.
    #[inline(always)]
    pub(super) fn next_record(&mut self, diags: &mut Diagnostics) -> Result<Option<Item<'_>>> {
        if self.at >= self.due && !self.advance(diags)? {
            return Ok(None);
        }
        let s = &self.cur.items[self.at];
        self.at += 1;
        let body = if s.own {
            &self.cur.own[s.off..s.off + s.len]
        } else {
            &self.map[s.off..s.off + s.len]
        };
        Ok(Some(Item::new(
            s.event as usize,
            s.at,
            s.record_type,
            self.meta.utc_offset_ns,
            s.misc,
            body,
            &self.events[s.event as usize].attr,
            self.be,
        )))
    }

    /// What is due before the record at `at`: the events as they changed,
    /// the diagnostics reported, the next batch. False at the end of the
    /// input.
    #[inline(never)]
    fn advance(&mut self, diags: &mut Diagnostics) -> Result<bool> {
        loop {
            while let Some((i, _)) = self.cur.snaps.get(self.snap_at) {
                if *i > self.at {
                    break;
                }
                let (events, meta) = *std::mem::take(&mut self.cur.snaps[self.snap_at].1);
                self.events = events;
                self.meta = meta;
                self.events_version += 1;
                self.snap_at += 1;
            }
            while let Some((i, _)) = self.cur.diags.get(self.diag_at) {
                if *i > self.at {
                    break;
                }
                let d = &mut self.cur.diags[self.diag_at].1;
                self.diag_at += 1;
                let message = std::mem::take(&mut d.message);
                diags.report(d.position, d.severity, d.kind, message)?;
            }
            if self.at < self.cur.items.len() {
                self.due = self.cur.items.len();
                if let Some((i, _)) = self.cur.snaps.get(self.snap_at) {
                    self.due = self.due.min(*i);
                }
                if let Some((i, _)) = self.cur.diags.get(self.diag_at) {
                    self.due = self.due.min(*i);
                }
                return Ok(true);
            }
            if self.ended {
                return Ok(false);
            }
            match self.rx.recv() {
                Ok(Msg::Batch(b)) => {
                    // The records of the batch before are done with.
                    self.hold.done.store(b.seq, Ordering::Release);
                    let old = std::mem::replace(&mut self.cur, b);
                    let _ = self.back.send(old);
                    self.at = 0;
                    self.diag_at = 0;
                    self.snap_at = 0;
                }
                Ok(Msg::End(r, not_kept)) => {
                    self.ended = true;
                    for (kind, n) in not_kept {
                        diags.count_not_kept(kind, n);
                    }
                    r?;
                }
                // The thread ended without saying so: it panicked
                // (`finish` passes the panic on).
                Err(_) => self.ended = true,
            }
        }
    }

    /// The reader, once the input is read (a panic of its thread is
    /// passed on).
    pub(super) fn finish(self) -> PerfReader {
        let ReadAhead {
            rx, back, thread, ..
        } = self;
        drop((rx, back));
        match thread.join() {
            Ok(r) => r.expect("the thread was given the reader when it started"),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

/// The reading thread: the single-threaded reader's loop, with the records
/// put in batches instead of handed out one by one.
fn read(
    mut r: PerfReader,
    mut diags: Diagnostics,
    tx: SyncSender<Msg>,
    back: Receiver<Batch>,
) -> PerfReader {
    let mut seq = 0u64;
    let mut batch = Batch::default();
    let state = |r: &PerfReader| {
        (
            r.events_version,
            r.meta.tracepoint_formats.len(),
            r.meta.utc_offset_ns,
        )
    };
    let mut seen = state(&r);
    // The batch being filled holds the mapping from `r.held_low` on.
    let send = |r: &mut PerfReader, batch: &mut Batch, seq: &mut u64| -> bool {
        let mut next = back.try_recv().unwrap_or_default();
        next.items.clear();
        next.own.clear();
        next.diags.clear();
        next.snaps.clear();
        let mut full = std::mem::replace(batch, next);
        *seq += 1;
        full.seq = *seq;
        if let Some(h) = &r.hold {
            h.sent
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push_back((*seq, r.held_low));
        }
        r.held_low = usize::MAX;
        tx.send(Msg::Batch(full)).is_ok()
    };
    let stop = r.hold.as_ref().map(Arc::clone);
    let stopped = || {
        stop.as_ref()
            .is_some_and(|h| h.stop.load(Ordering::Relaxed))
    };
    let end = loop {
        if stopped() {
            return r;
        }
        while let Some(q) = r.ready.pop_front() {
            if q.event as usize >= r.events.len() {
                r.recycle(q.body);
                continue;
            }
            let position = q.position();
            let (own, off, len) = match q.body {
                Body::Map { off, len } => {
                    r.held_low = r.held_low.min(off);
                    (false, off, len)
                }
                Body::Own(v, _) => {
                    let off = batch.own.len();
                    batch.own.extend_from_slice(&v);
                    r.recycle(Body::Own(v, position));
                    (true, off, batch.own.len() - off)
                }
            };
            batch.items.push(Sent {
                record_type: q.record_type,
                event: q.event,
                misc: q.misc,
                own,
                off,
                len,
                at: super::reader::split_position(position),
            });
            if (batch.items.len() >= BATCH_RECORDS || batch.own.len() >= BATCH_OWN_BYTES)
                && !send(&mut r, &mut batch, &mut seq)
            {
                // The caller stopped reading.
                return r;
            }
        }
        if r.eof {
            if r.pending.is_empty() {
                break Ok(());
            }
            r.flush_until(u64::MAX);
            continue;
        }
        let pumped = r.pump(&mut diags);
        let reported = !diags.is_empty();
        if reported {
            let at = batch.items.len();
            batch
                .diags
                .extend(diags.take_all().into_iter().map(|d| (at, d)));
        }
        match pumped {
            Ok(true) => {}
            Ok(false) => r.eof = true,
            Err(e) => break Err(e),
        }
        let now = state(&r);
        if now != seen {
            seen = now;
            let at = batch.items.len();
            let snap = Box::new((r.events.clone(), r.meta.clone()));
            // Changes between two records: the last is the one seen.
            match batch.snaps.last_mut() {
                Some((i, s)) if *i == at => *s = snap,
                _ => batch.snaps.push((at, snap)),
            }
        }
        // A diagnostic goes out at once: under --strict it ends the run
        // there (a damaged input may hand out no record for long).
        if reported && !send(&mut r, &mut batch, &mut seq) {
            return r;
        }
    };
    if !batch.items.is_empty() || !batch.diags.is_empty() || !batch.snaps.is_empty() {
        send(&mut r, &mut batch, &mut seq);
    }
    let _ = tx.send(Msg::End(end, diags.not_kept()));
    r
}

#[cfg(test)]
mod tests {
    //! The records, diagnostics and events read ahead on a thread are those
    //! read on the caller's thread, in the same order: pipe-mode streams
    //! saved to a file, built as in the reader's tests.

    use super::super::reader::tests::{record, sample_at, stream};
    use super::*;
    use crate::perf::records::rtype;

    /// What a reader hands out: one line per record (with the events
    /// known when it comes out) and per diagnostic reported before it.
    fn transcript(bytes: &[u8], ahead: bool) -> Vec<String> {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut f, bytes).unwrap();
        let reader = PerfReader::open_pipe_file(f.path()).unwrap();
        let mut d = Diagnostics::new("t", false);
        let mut out = Vec::new();
        fn read<R: crate::perf::Records>(
            mut r: R,
            d: &mut Diagnostics,
            out: &mut Vec<String>,
        ) -> PerfReader {
            let mut kept = 0;
            loop {
                let line = r.next_record(d).unwrap().map(|item| {
                    format!(
                        "type {} event {} at {:?} utc {:?} time {:?}",
                        item.record_type,
                        item.event,
                        item.position(),
                        item.utc_offset_ns,
                        item.decode().map(|(_, id)| id.time)
                    )
                });
                for x in &d.kept()[kept..] {
                    out.push(format!("{} at {:?}: {}", x.kind, x.position, x.message));
                }
                kept = d.len();
                let Some(line) = line else { break };
                out.push(format!("{line} of {} events", r.events().len()));
            }
            r.finish()
        }
        let r = if ahead {
            std::thread::scope(|scope| {
                read(
                    ReadAhead::start(scope, reader, "t").ok().unwrap(),
                    &mut d,
                    &mut out,
                )
            })
        } else {
            read(reader, &mut d, &mut out)
        };
        out.push(format!("{} records", r.stats.records));
        // The diagnostics kept, and the counts of those that were not.
        for x in d.into_vec() {
            out.push(format!(
                "kept {} at {:?}: {}",
                x.kind, x.position, x.message
            ));
        }
        out
    }

    fn second_attr() -> Vec<u8> {
        // As the first (see `stream`), with id 9.
        let first = stream();
        let mut attr = first[16 + 8..].to_vec();
        let n = attr.len();
        attr[n - 8..].copy_from_slice(&9u64.to_le_bytes());
        record(rtype::HEADER_ATTR, &attr)
    }

    #[test]
    fn read_ahead_hands_out_what_the_reader_does() {
        // Rounds of samples out of time order, over many batches; records
        // compressed and not; an unknown record type, a record after a
        // second attribute, and a cut record at the end.
        let mut s = stream();
        let mut t = 0u64;
        for round in 0..40u64 {
            let mut plain = Vec::new();
            for i in 0..700u64 {
                t += 1;
                // Out of order inside the round.
                plain.extend(sample_at(round * 10_000 + (i * 7919) % 700));
            }
            if round % 3 == 1 {
                s.extend(record(
                    rtype::COMPRESSED,
                    &zstd::bulk::compress(&plain, 1).unwrap(),
                ));
            } else {
                s.extend(plain);
            }
            if round == 7 {
                s.extend(record(rtype::MAX_KERNEL, &[0; 16]));
            }
            if round == 30 {
                // More of a kind than are kept (100), with no record
                // between them.
                for _ in 0..300 {
                    s.extend(record(rtype::MAX_KERNEL - 1, &[0; 8]));
                }
            }
            if round == 20 {
                s.extend(second_attr());
            }
            s.extend(record(rtype::FINISHED_ROUND, &[]));
        }
        let cut = sample_at(t + 1);
        s.extend(&cut[..cut.len() - 2]);
        let direct = transcript(&s, false);
        // 28,000 samples; the first 100 of the 301 unknown records and the
        // cut one where they came out; the count of records; the same 101
        // diagnostics kept, and the line counting the 201 not kept.
        assert_eq!(
            direct.len(),
            40 * 700 + 101 + 1 + 101 + 1,
            "{:?}",
            &direct[..4]
        );
        assert!(
            direct.last().unwrap().contains("201 more"),
            "{:?}",
            direct.last()
        );
        let ahead = transcript(&s, true);
        assert_eq!(direct.len(), ahead.len());
        for (i, (a, b)) in direct.iter().zip(&ahead).enumerate() {
            assert_eq!(a, b, "line {i}");
        }
    }

    /// Pages of the mapping are released behind the reader, never under a
    /// record the converter holds: 126 MB of records of 2 KB, so that a
    /// batch spans 16 MB and the batches in flight more than the 16 MB the
    /// release keeps behind the oldest record held.
    #[test]
    fn pages_are_released_only_behind_the_records_handed_out() {
        let mut s = stream();
        let pad = vec![0u8; 2048];
        for i in 0..60_000u64 {
            let mut r = sample_at(i);
            let size = (r.len() + pad.len()) as u16;
            r[6..8].copy_from_slice(&size.to_le_bytes());
            r.extend_from_slice(&pad);
            s.extend(r);
            if i % 1000 == 999 {
                s.extend(record(rtype::FINISHED_ROUND, &[]));
            }
        }
        let mut f = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut f, &s).unwrap();
        drop(s);
        let reader = PerfReader::open_pipe_file(f.path()).unwrap();
        let mut d = Diagnostics::new("t", false);
        let (n, released) = std::thread::scope(|scope| {
            let mut r = ReadAhead::start(scope, reader, "t").ok().unwrap();
            let mut n = 0u64;
            while let Some(at) = r
                .next_record(&mut d)
                .unwrap()
                .map(|item| item.position().byte_offset().unwrap() as usize)
            {
                // The converter is slow at first: the reader fills the
                // batches ahead, 64 MB past the first record; then it
                // keeps up, and pages go.
                if n == 0 {
                    std::thread::sleep(std::time::Duration::from_millis(200));
                }
                let released = r.hold.released.load(Ordering::Relaxed);
                assert!(
                    released <= at,
                    "record at {at} handed out, released below {released}"
                );
                n += 1;
            }
            let released = r.hold.released.load(Ordering::Relaxed);
            r.finish();
            (n, released)
        });
        assert_eq!(n, 60_000);
        // Pages were released while reading (the release stays 16 MB
        // behind the oldest record held).
        assert!(released >= 16 << 20, "released below {released}");
        assert!(d.is_empty());
    }
}
