//! Lackey text read in blocks cut at line ends, from a stream (a thread
//! of its own fills recycled blocks) or a mapped file (parsed in place),
//! parsed in parallel two blocks per thread at a time.

use std::io::Read;

use crate::diag::Diagnostics;
use crate::error::{Error, Result};

use super::collect::Collector;
use super::filter::Filter;
use super::lackey;
use super::rows::RowSink;

/// Bytes of text per parsed block; blocks are cut at line ends and parsed
/// two per thread at a time, so memory stays bounded whatever the input
/// size.
pub const BLOCK_BYTES: usize = 8 << 20;

/// Lackey text to read.
pub enum TextSource {
    /// Standard input, a decompressor, or a file that cannot be mapped:
    /// read by a thread of its own into recycled blocks.
    Stream(Box<dyn Read + Send>),
    /// A regular file mapped into memory: blocks are parsed in place (no
    /// copy out of the page cache) and released once parsed, so resident
    /// memory stays a few blocks whatever the file size. Like every
    /// reader of mapped files (ripgrep, perf), this assumes the file is not
    /// truncated while it is read.
    Mapped(memmap2::Mmap),
}

impl TextSource {
    /// The file at `path`, mapped when it is a non-empty regular file.
    pub fn file(path: &std::path::Path) -> std::io::Result<Self> {
        let f = std::fs::File::open(path)?;
        let meta = f.metadata()?;
        if meta.is_file() && meta.len() > 0 {
            if let Ok(m) = crate::mapped::map_readonly(&f) {
                return Ok(TextSource::Mapped(m));
            }
        }
        Ok(TextSource::Stream(Box::new(f)))
    }
}

/// What a block source has next.
enum NextBlock<B> {
    Block(B),
    /// Nothing yet (only when not asked to wait).
    NotYet,
    End,
}

/// Line-aligned blocks of text, handed back once parsed.
trait Blocks {
    type B: AsRef<[u8]> + Send;
    fn next(&mut self, wait: bool) -> NextBlock<Self::B>;
    /// Hands a parsed block back; `Err` when the ingest was cancelled.
    fn done(&mut self, b: Self::B) -> crate::error::Result<()>;
}

/// Blocks cut by a reader thread, buffers recycled.
struct StreamBlocks {
    rx: std::sync::mpsc::Receiver<Vec<u8>>,
    back: std::sync::mpsc::Sender<Vec<u8>>,
}

impl Blocks for StreamBlocks {
    type B = Vec<u8>;
    fn next(&mut self, wait: bool) -> NextBlock<Vec<u8>> {
        use std::sync::mpsc::TryRecvError;
        if wait {
            return self.rx.recv().map_or(NextBlock::End, NextBlock::Block);
        }
        match self.rx.try_recv() {
            Ok(b) => NextBlock::Block(b),
            Err(TryRecvError::Empty) => NextBlock::NotYet,
            Err(TryRecvError::Disconnected) => NextBlock::End,
        }
    }
    fn done(&mut self, b: Vec<u8>) -> crate::error::Result<()> {
        let _ = self.back.send(b);
        Ok(())
    }
}

/// Blocks of a mapped file, cut at line ends; a parsed block's pages are
/// dropped from the process (MADV_DONTNEED; the page cache keeps them).
struct MappedBlocks<'a> {
    map: &'a memmap2::Mmap,
    at: usize,
    /// Advanced to the end of every block parsed.
    progress: Option<&'a crate::progress::Progress>,
}

impl<'a> Blocks for MappedBlocks<'a> {
    type B = &'a [u8];
    fn next(&mut self, _wait: bool) -> NextBlock<&'a [u8]> {
        let all: &'a [u8] = self.map;
        if self.at >= all.len() {
            return NextBlock::End;
        }
        let mut end = (self.at + BLOCK_BYTES).min(all.len());
        if end < all.len() {
            // A "line" longer than a block is garbage: parsed as is (it
            // is reported).
            if let Some(k) = memchr::memrchr(b'\n', &all[self.at..end]) {
                end = self.at + k + 1;
            }
        }
        let b = &all[self.at..end];
        self.at = end;
        NextBlock::Block(b)
    }
    fn done(&mut self, b: &'a [u8]) -> crate::error::Result<()> {
        let off = b.as_ptr() as usize - self.map.as_ptr() as usize;
        // (The page shared with the next block is read again.)
        crate::mapped::release(self.map, off, b.len());
        match self.progress {
            Some(p) => p.at((off + b.len()) as u64),
            None => Ok(()),
        }
    }
}

/// Reads lackey text from `input` into `collector` and `sink`. Returns
/// the bytes read. Blocks are parsed two per thread at a time and put in
/// order here.
pub fn read_lackey(
    input: &mut TextSource,
    name: &str,
    filter: &Filter,
    collector: &mut Collector,
    diags: &mut Diagnostics,
    sink: &mut dyn RowSink,
    progress: Option<&crate::progress::Progress>,
) -> Result<u64> {
    use std::sync::mpsc::{channel, sync_channel};
    let batch = rayon::current_num_threads().max(1) * 2;
    let input = match input {
        TextSource::Mapped(map) => {
            let _ = map.advise(memmap2::Advice::Sequential);
            let mut blocks = MappedBlocks {
                map,
                at: 0,
                progress,
            };
            parse_blocks(&mut blocks, batch, filter, collector, diags, sink)?;
            return Ok(map.len() as u64);
        }
        TextSource::Stream(r) => &mut **r,
    };
    let (tx, rx) = sync_channel::<Vec<u8>>(batch);
    let (back_tx, back_rx) = channel::<Vec<u8>>();
    std::thread::scope(|sc| -> Result<u64> {
        let reader = sc.spawn(move || -> std::io::Result<u64> {
            let mut carry: Vec<u8> = Vec::new();
            let mut total = 0u64;
            loop {
                let mut b = back_rx.try_recv().unwrap_or_default();
                b.clear();
                b.extend_from_slice(&carry);
                carry.clear();
                b.reserve(BLOCK_BYTES + 4096);
                let want = BLOCK_BYTES.saturating_sub(b.len()) as u64;
                let got = (&mut *input).take(want).read_to_end(&mut b)?;
                total += got as u64;
                let eof = (got as u64) < want;
                if !eof {
                    // A "line" longer than a block is garbage: parse it
                    // as is (it is reported).
                    if let Some(k) = memchr::memrchr(b'\n', &b) {
                        carry.extend_from_slice(&b[k + 1..]);
                        b.truncate(k + 1);
                    }
                }
                if !b.is_empty() && tx.send(b).is_err() {
                    break;
                }
                if eof {
                    break;
                }
            }
            Ok(total)
        });
        let mut blocks = StreamBlocks { rx, back: back_tx };
        let result = parse_blocks(&mut blocks, batch, filter, collector, diags, sink);
        drop(blocks);
        let total = reader
            .join()
            .map_err(|_| Error::io(name, std::io::Error::other("reader thread panicked")))?
            .map_err(|e| Error::io(name, e))?;
        result.map(|_| total)
    })
}

/// Parses `blocks` on the rayon pool as they arrive, up to `inflight` at
/// a time, and hands them to the collector in input order; the pool never
/// waits for the collector.
fn parse_blocks<S: Blocks>(
    blocks: &mut S,
    inflight: usize,
    filter: &Filter,
    collector: &mut Collector,
    diags: &mut Diagnostics,
    sink: &mut dyn RowSink,
) -> Result<()> {
    use std::sync::mpsc::channel;
    let page_size = collector.pages.page_size;
    let (res_tx, res_rx) = channel::<(u64, lackey::Chunk, S::B)>();
    // Each parse takes a fetch aggregate (line cache and fetch map) from
    // here and puts it back: fetches are counted in a few maps that live
    // through the whole input, with chunk-keyed ordinals, rather than in
    // a new map per block merged into the collector's.
    let aggs = std::sync::Mutex::new(Vec::<lackey::FetchAgg>::new());
    let aggs = &aggs;
    let result = rayon::in_place_scope(|scope| -> Result<()> {
        let (mut sent, mut next) = (0u64, 0u64);
        let mut eof = false;
        let mut ready = std::collections::BTreeMap::new();
        loop {
            while !eof && sent - next < inflight as u64 {
                let b = match blocks.next(sent == next) {
                    NextBlock::Block(b) => b,
                    NextBlock::NotYet => break,
                    NextBlock::End => {
                        eof = true;
                        break;
                    }
                };
                let (seq, res_tx) = (sent, res_tx.clone());
                sent += 1;
                scope.spawn(move |_| {
                    let taken = aggs.lock().unwrap_or_else(|p| p.into_inner()).pop();
                    let mut agg = taken.unwrap_or_default();
                    let c = lackey::parse_chunk_into(
                        b.as_ref(),
                        filter,
                        page_size,
                        &mut agg,
                        seq as u32,
                    );
                    aggs.lock().unwrap_or_else(|p| p.into_inner()).push(agg);
                    let _ = res_tx.send((seq, c, b));
                });
            }
            if sent == next {
                return Ok(());
            }
            let Ok((seq, c, b)) = res_rx.recv() else {
                return Ok(());
            };
            ready.insert(seq, (c, b));
            while let Some((c, b)) = ready.remove(&next) {
                next += 1;
                blocks.done(b)?;
                collector.add_chunk(c, diags, sink)?;
            }
        }
    });
    result?;
    // A poisoned lock still holds whole aggregates (push and pop only).
    let aggs = std::mem::take(&mut *aggs.lock().unwrap_or_else(|p| p.into_inner()));
    for agg in aggs {
        collector.add_keyed_fetches(agg.into_map());
    }
    Ok(())
}
