//! Parquet column chunks of required 64-bit integer columns written from
//! their Arrow value buffers, PLAIN or DELTA_BINARY_PACKED.
//!
//! parquet's typed column writer copies every value into its encoder in
//! mini-batches and, for DELTA_BINARY_PACKED, packs each value through a
//! general bit writer one call at a time. For `mem_access` (22 M rows per
//! GB of lackey log) that was a tenth of the whole ingest: the `ordinal`
//! column's delta encoding ≈0.1 CPU-s, `address`'s copy into the PLAIN
//! encoder and per-batch bookkeeping ≈0.08. Here the same pages are made
//! directly: PLAIN pages are compressed straight out of the Arrow buffer,
//! and delta blocks are packed 64 values at a time.
//!
//! The pages, statistics, column index and offset index are those parquet's
//! own writer makes with the same properties, byte for byte (tests compare
//! both writers' chunks, uncompressed and zstd): values are taken in mini-batches of
//! `write_batch_size` from each batch, and a page ends after the mini-batch
//! that brings it to `data_page_row_count_limit` rows or to
//! `data_page_size_limit` estimated bytes (PLAIN: 8 per value; delta: the
//! blocks completed so far). Delta blocks are 256 values in 4 miniblocks of
//! 64 (parquet-rs' layout for INT64; Parquet format, `Encodings.md`,
//! "Delta Encoding"): `<min delta: zigzag varint> <4 bit widths> <miniblocks
//! bit-packed LSB-first>`, the last miniblock padded with zeros, widths of
//! unused miniblocks 0; the page starts with `<256> <4> <value count>
//! <first value: zigzag varint>`. Statistics are only made for signed
//! columns (an unsigned annotation orders min/max differently): other
//! columns with statistics go to parquet's writer.

use bytes::Bytes;
use parquet::basic::{
    BoundaryOrder, Compression, Encoding, EncodingMask, PageType, SortOrder, Type,
};
use parquet::column::page::{CompressedPage, Page, PageWriter};
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::{
    ColumnChunkMetaData, ColumnIndexBuilder, LevelHistogram, OffsetIndexBuilder, PageEncodingStats,
};
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use parquet::file::statistics::{Statistics, ValueStatistics};
use parquet::file::writer::{SerializedPageWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;

/// Values per delta block and per miniblock (parquet-rs' INT64 layout).
const BLOCK: usize = 256;
const MINI: usize = 64;

/// How the values are encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Values {
    Plain,
    Delta,
}

impl Values {
    fn encoding(self) -> Encoding {
        match self {
            Values::Plain => Encoding::PLAIN,
            Values::Delta => Encoding::DELTA_BINARY_PACKED,
        }
    }
}

/// How this module writes the column `descr` with `props`, or `None` when
/// parquet's writer must (nested, dictionary, bloom filter,
/// page header statistics, data page v2, another codec or encoding, or
/// statistics of an unsigned column).
pub fn plan(
    descr: &ColumnDescPtr,
    props: &WriterProperties,
) -> Option<(Values, EnabledStatistics)> {
    let path = descr.path();
    if descr.physical_type() != Type::INT64
        || descr.max_def_level() > 1
        || descr.max_rep_level() != 0
        || props.writer_version() != WriterVersion::PARQUET_1_0
        || props.dictionary_enabled(path)
        || props.bloom_filter_properties(path).is_some()
        || props.write_page_header_statistics(path)
        || props.offset_index_disabled()
        || !matches!(
            props.compression(path),
            Compression::UNCOMPRESSED | Compression::ZSTD(_)
        )
    {
        return None;
    }
    // A mini-batch that could overshoot a page on its own is cut finer by
    // parquet's writer (its byte-budget chunker): not done here.
    if 8 * props.write_batch_size() > props.column_data_page_size_limit(path) {
        return None;
    }
    let values = match props.encoding(path) {
        None | Some(Encoding::PLAIN) => Values::Plain,
        Some(Encoding::DELTA_BINARY_PACKED) => Values::Delta,
        Some(_) => return None,
    };
    let stats = props.statistics_enabled(path);
    if stats != EnabledStatistics::None && descr.sort_order() != SortOrder::SIGNED {
        return None;
    }
    Some((values, stats))
}

/// Compresses page bodies with a chunk's codec (ZSTD or none), one zstd
/// context for all of its pages (also used by [`crate::dict_codes`]).
pub(crate) enum Codec {
    None,
    Zstd(zstd::bulk::Compressor<'static>),
}

impl Codec {
    pub(crate) fn new(c: Compression) -> Result<Self> {
        match c {
            Compression::UNCOMPRESSED => Ok(Codec::None),
            Compression::ZSTD(level) => zstd::bulk::Compressor::new(level.compression_level())
                .map(Codec::Zstd)
                .map_err(|e| ParquetError::External(Box::new(e))),
            other => Err(ParquetError::NYI(format!(
                "pages written here with {other}"
            ))),
        }
    }

    pub(crate) fn compress(&mut self, raw: &[u8]) -> Result<Bytes> {
        match self {
            Codec::None => Ok(Bytes::copy_from_slice(raw)),
            Codec::Zstd(z) => z
                .compress(raw)
                .map(Bytes::from)
                .map_err(|e| ParquetError::External(Box::new(e))),
        }
    }
}

/// Appends `v` as an unsigned LEB128 varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_zigzag(out: &mut Vec<u8>, v: i64) {
    put_varint(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// Appends 64 values of `bw` bits (`bw` ≤ 64, every value < 2^bw),
/// LSB-first: exactly `8 × bw` bytes.
fn pack_mini(vals: &[u64; MINI], bw: u32, out: &mut Vec<u8>) {
    if bw == 0 {
        return;
    }
    let start = out.len();
    out.resize(start + 8 * bw as usize, 0);
    let dst = &mut out[start..];
    // Widths that divide 64 (ordinal deltas are a few bits): whole words
    // of 64 / bw values, shifts known at compile time.
    macro_rules! words {
        ($bw:literal) => {{
            const PER: usize = 64 / $bw;
            for (w, vs) in dst.chunks_exact_mut(8).zip(vals.chunks_exact(PER)) {
                let mut acc = 0u64;
                for (k, &v) in vs.iter().enumerate() {
                    acc |= v << (k * $bw);
                }
                w.copy_from_slice(&acc.to_le_bytes());
            }
            return;
        }};
    }
    match bw {
        1 => words!(1),
        2 => words!(2),
        4 => words!(4),
        8 => words!(8),
        16 => words!(16),
        32 => words!(32),
        _ => {}
    }
    let (mut acc, mut bits, mut w) = (0u128, 0u32, 0usize);
    for &v in vals {
        acc |= (v as u128) << bits;
        bits += bw;
        if bits >= 64 {
            dst[w..w + 8].copy_from_slice(&(acc as u64).to_le_bytes());
            w += 8;
            acc >>= 64;
            bits -= 64;
        }
    }
    debug_assert_eq!(w, dst.len());
}

/// The page being filled.
struct PageState {
    values: Values,
    rows: usize,
    min: i64,
    max: i64,
    /// PLAIN: the page's values, as runs (buffer, first byte, end byte) of
    /// the batches' buffers.
    parts: Vec<(usize, usize, usize)>,
    /// Delta: first value, last value, pending deltas, completed blocks.
    first: i64,
    last: i64,
    deltas: Box<[i64; BLOCK]>,
    pending: usize,
    blocks: Vec<u8>,
}

impl PageState {
    fn new(values: Values) -> Self {
        PageState {
            values,
            rows: 0,
            min: i64::MAX,
            max: i64::MIN,
            parts: Vec::new(),
            first: 0,
            last: 0,
            deltas: Box::new([0; BLOCK]),
            pending: 0,
            blocks: Vec::new(),
        }
    }

    /// Adds a mini-batch: `v`, bytes `bytes` of buffer `buf`.
    fn put(&mut self, v: &[i64], buf: usize, bytes: std::ops::Range<usize>, stats: bool) {
        if v.is_empty() {
            return;
        }
        if stats {
            let (lo, hi) = v
                .iter()
                .fold((self.min, self.max), |(lo, hi), &x| (lo.min(x), hi.max(x)));
            self.min = lo;
            self.max = hi;
        }
        match self.values {
            Values::Plain => {
                // Mini-batches of one batch follow each other.
                match self.parts.last_mut() {
                    Some((b, _, end)) if *b == buf && *end == bytes.start => *end = bytes.end,
                    _ => self.parts.push((buf, bytes.start, bytes.end)),
                }
            }
            Values::Delta => {
                let mut rest = v;
                if self.rows == 0 {
                    self.first = v[0];
                    self.last = v[0];
                    rest = &v[1..];
                }
                while !rest.is_empty() {
                    let take = (BLOCK - self.pending).min(rest.len());
                    let mut prev = self.last;
                    for (d, &x) in self.deltas[self.pending..self.pending + take]
                        .iter_mut()
                        .zip(&rest[..take])
                    {
                        *d = x.wrapping_sub(prev);
                        prev = x;
                    }
                    self.last = prev;
                    self.pending += take;
                    rest = &rest[take..];
                    if self.pending == BLOCK {
                        self.flush_block();
                    }
                }
            }
        }
        self.rows += v.len();
    }

    /// Encodes the pending deltas as one block.
    fn flush_block(&mut self) {
        let n = self.pending;
        if n == 0 {
            return;
        }
        let deltas = &self.deltas[..n];
        let min = deltas.iter().copied().min().unwrap_or(0);
        put_zigzag(&mut self.blocks, min);
        let widths = self.blocks.len();
        self.blocks.extend_from_slice(&[0; BLOCK / MINI]);
        let mut vals = [0u64; MINI];
        for (m, d) in deltas.chunks(MINI).enumerate() {
            let mut or = 0u64;
            for (slot, &x) in vals.iter_mut().zip(d) {
                *slot = x.wrapping_sub(min) as u64;
                or |= *slot;
            }
            vals[d.len()..].fill(0);
            let bw = 64 - or.leading_zeros();
            self.blocks[widths + m] = bw as u8;
            pack_mini(&vals, bw, &mut self.blocks);
        }
        self.pending = 0;
    }

    /// The encoder's estimate of the page's bytes, as parquet's writer
    /// checks it against the page size limit.
    fn estimated_bytes(&self) -> usize {
        match self.values {
            Values::Plain => 8 * self.rows,
            Values::Delta => self.blocks.len(),
        }
    }

    /// The page's uncompressed body.
    fn body(&mut self) -> Vec<u8> {
        match self.values {
            Values::Plain => Vec::new(),
            Values::Delta => {
                self.flush_block();
                let mut out = Vec::with_capacity(self.blocks.len() + 24);
                put_varint(&mut out, BLOCK as u64);
                put_varint(&mut out, (BLOCK / MINI) as u64);
                put_varint(&mut out, self.rows as u64);
                put_zigzag(&mut out, self.first);
                out.extend_from_slice(&self.blocks);
                out
            }
        }
    }

    fn reset(&mut self) {
        self.rows = 0;
        self.min = i64::MAX;
        self.max = i64::MIN;
        self.parts.clear();
        self.pending = 0;
        self.blocks.clear();
    }
}

/// Each page's min/max as parquet's writer tracks them for the chunk's
/// statistics and the column index's boundary order (also used by
/// [`crate::dict_codes`]).
pub(crate) struct PageBounds<T> {
    chunk: Option<(T, T)>,
    last: Option<(T, T)>,
    ascending: bool,
    descending: bool,
}

impl<T: Ord + Copy> PageBounds<T> {
    pub(crate) fn new() -> Self {
        PageBounds {
            chunk: None,
            last: None,
            ascending: true,
            descending: true,
        }
    }

    /// Adds the next page's smallest and largest value.
    pub(crate) fn page(&mut self, lo: T, hi: T) {
        self.chunk = Some(self.chunk.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
        if let Some((a, b)) = self.last {
            self.ascending &= a <= lo && b <= hi;
            self.descending &= lo <= a && hi <= b;
        }
        self.last = Some((lo, hi));
    }

    /// The chunk's smallest and largest value (none without a page).
    pub(crate) fn chunk(&self) -> Option<(T, T)> {
        self.chunk
    }

    /// The pages' order, as the column index states it.
    pub(crate) fn order(&self) -> BoundaryOrder {
        match (self.ascending, self.descending) {
            (true, _) => BoundaryOrder::ASCENDING,
            (false, true) => BoundaryOrder::DESCENDING,
            (false, false) => BoundaryOrder::UNORDERED,
        }
    }
}

/// Appends the definition levels of a page of `rows` values of a nullable
/// column, none null, as parquet's writer encodes them (v1 pages: a 4-byte
/// length, then RLE/bit-packed hybrid runs of 1-bit levels): one RLE run
/// of 1s, at any length.
pub(crate) fn all_defined(rows: usize, out: &mut Vec<u8>) {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    put_varint(out, (rows as u64) << 1);
    out.push(1);
    let len = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
}

/// Encodes one column chunk from `buffers` (each an Arrow buffer of one
/// batch's 64-bit values, in order) as `plan` said, into a buffer holding
/// its pages, with the metadata to append it to a row group (offsets
/// relative to the buffer). A nullable column's values must all be
/// defined (the caller checks that no row is null).
pub fn encode(
    descr: ColumnDescPtr,
    props: &WriterProperties,
    (values, stats): (Values, EnabledStatistics),
    buffers: &[&arrow::buffer::Buffer],
) -> Result<(Bytes, ColumnCloseResult)> {
    let path = descr.path().clone();
    let codec = props.compression(&path);
    let mut z = Codec::new(codec)?;
    let row_limit = props.data_page_row_count_limit();
    let size_limit = props.column_data_page_size_limit(&path);
    let batch = props.write_batch_size().max(1);
    let with_stats = stats != EnabledStatistics::None;
    let nullable = descr.max_def_level() == 1;

    let mut sink = TrackedWrite::new(Vec::new());
    let mut pw = SerializedPageWriter::new(&mut sink);
    let mut index = ColumnIndexBuilder::new(Type::INT64);
    if stats != EnabledStatistics::Page {
        index.to_invalid();
    }
    let mut offsets = OffsetIndexBuilder::new();
    let mut bounds = PageBounds::<i64>::new();
    let (mut compressed, mut uncompressed, mut written, mut total) = (0i64, 0i64, 0u64, 0usize);
    let mut data_offset = None;
    let mut pages = 0i32;
    let mut scratch = Vec::new();

    let mut page = PageState::new(values);
    let mut emit = |page: &mut PageState, pw: &mut SerializedPageWriter<_>| -> Result<()> {
        let body = page.body();
        let raw: &[u8] = match (values, page.parts.as_slice(), nullable) {
            (Values::Delta, _, false) => &body,
            (Values::Plain, &[(b, start, end)], false) => &buffers[b].as_slice()[start..end],
            (_, parts, _) => {
                scratch.clear();
                if nullable {
                    all_defined(page.rows, &mut scratch);
                }
                match values {
                    Values::Delta => scratch.extend_from_slice(&body),
                    Values::Plain => {
                        for &(b, start, end) in parts {
                            scratch.extend_from_slice(&buffers[b].as_slice()[start..end]);
                        }
                    }
                }
                &scratch
            }
        };
        let buf = z.compress(raw)?;
        let spec = pw.write_page(CompressedPage::new(
            Page::DataPage {
                buf,
                num_values: page.rows as u32,
                encoding: values.encoding(),
                def_level_encoding: Encoding::RLE,
                rep_level_encoding: Encoding::RLE,
                statistics: None,
            },
            raw.len(),
        ))?;
        if with_stats {
            let (lo, hi) = (page.min, page.max);
            bounds.page(lo, hi);
            if index.valid() {
                index.append(
                    false,
                    lo.to_le_bytes().to_vec(),
                    hi.to_le_bytes().to_vec(),
                    0,
                );
                // Rows at each definition level (0: null, 1: defined).
                let levels = nullable.then(|| LevelHistogram::from(vec![0, page.rows as i64]));
                index.append_histograms(&None, &levels);
            }
        }
        offsets.append_offset_and_size(spec.offset as i64, spec.compressed_size as i32);
        offsets.append_row_count(page.rows as i64);
        data_offset.get_or_insert(spec.offset as i64);
        compressed += spec.compressed_size as i64;
        uncompressed += spec.uncompressed_size as i64;
        written += spec.bytes_written;
        total += page.rows;
        pages += 1;
        page.reset();
        Ok(())
    };

    for (k, b) in buffers.iter().enumerate() {
        let v: &[i64] = b.typed_data::<i64>();
        let mut off = 0;
        while off < v.len() {
            let end = (off + batch).min(v.len());
            page.put(&v[off..end], k, off * 8..end * 8, with_stats);
            off = end;
            if page.rows >= row_limit || page.estimated_bytes() >= size_limit {
                emit(&mut page, &mut pw)?;
            }
        }
    }
    if page.rows > 0 {
        emit(&mut page, &mut pw)?;
    }
    pw.close()?;

    let encoding = values.encoding();
    let mut meta = ColumnChunkMetaData::builder(descr)
        .set_compression(codec)
        .set_encodings_mask(EncodingMask::new_from_encodings(
            [Encoding::RLE, encoding].iter(),
        ))
        .set_page_encoding_stats(if pages > 0 {
            vec![PageEncodingStats {
                page_type: PageType::DATA_PAGE,
                encoding,
                count: pages,
            }]
        } else {
            Vec::new()
        })
        .set_total_compressed_size(compressed)
        .set_total_uncompressed_size(uncompressed)
        .set_num_values(total as i64)
        .set_data_page_offset(data_offset.unwrap_or(0))
        .set_dictionary_page_offset(None);
    if with_stats {
        let (lo, hi) = bounds.chunk().unzip();
        let s: Statistics = ValueStatistics::<i64>::new(lo, hi, None, Some(0), false)
            .with_backwards_compatible_min_max(true)
            .into();
        meta = meta.set_statistics(s);
        if nullable {
            meta = meta
                .set_definition_level_histogram(Some(LevelHistogram::from(vec![0, total as i64])));
        }
    }
    let column_index = if index.valid() {
        index.set_boundary_order(bounds.order());
        Some(index.build()?)
    } else {
        None
    };
    let metadata = meta.build()?;
    let buf = Bytes::from(sink.into_inner()?);
    Ok((
        buf,
        ColumnCloseResult {
            bytes_written: written,
            rows_written: total as u64,
            metadata,
            bloom_filter: None,
            column_index,
            offset_index: Some(offsets.build()),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::basic::ZstdLevel;
    use parquet::column::writer::{get_column_writer, ColumnWriter};
    use parquet::schema::parser::parse_message_type;
    use parquet::schema::types::SchemaDescriptor;
    use std::sync::Arc;

    fn column(unsigned: bool) -> ColumnDescPtr {
        let ty = if unsigned {
            "message m { required int64 c (INTEGER(64,false)); }"
        } else {
            "message m { required int64 c; }"
        };
        SchemaDescriptor::new(Arc::new(parse_message_type(ty).unwrap())).column(0)
    }

    fn optional_column() -> ColumnDescPtr {
        let ty = "message m { optional int64 c; }";
        SchemaDescriptor::new(Arc::new(parse_message_type(ty).unwrap())).column(0)
    }

    /// The chunk as parquet's own typed column writer writes it: one
    /// `write_batch` per batch.
    fn reference(
        descr: ColumnDescPtr,
        props: &Arc<WriterProperties>,
        batches: &[Vec<i64>],
    ) -> (Bytes, ColumnCloseResult) {
        let mut sink = TrackedWrite::new(Vec::new());
        let close = {
            let pages = Box::new(SerializedPageWriter::new(&mut sink));
            let mut w = get_column_writer(descr, props.clone(), pages);
            let ColumnWriter::Int64ColumnWriter(t) = &mut w else {
                panic!("not int64")
            };
            for b in batches {
                let levels = vec![1i16; b.len()];
                let def = (t.get_descriptor().max_def_level() == 1).then_some(&levels[..]);
                t.write_batch(b, def, None).unwrap();
            }
            w.close().unwrap()
        };
        (Bytes::from(sink.into_inner().unwrap()), close)
    }

    fn values(seed: u64) -> Vec<Vec<i64>> {
        let mut x = seed;
        let mut next = move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x
        };
        // Instruction ordinals: non-decreasing, small steps.
        let mut o = 0i64;
        let ordinals: Vec<i64> = (0..2600)
            .map(|_| {
                o += (next() >> 61) as i64;
                o
            })
            .collect();
        vec![
            ordinals[..1000].to_vec(),
            ordinals[1000..1001].to_vec(),
            Vec::new(),
            ordinals[1001..].to_vec(),
            // Any 64-bit values: deltas wrap around.
            (0..3000).map(|_| next() as i64).collect(),
            vec![i64::MIN, i64::MAX, i64::MIN, 0, -1, i64::MAX],
            // Descending, then constant.
            (0..700).map(|i| 5000 - 3 * i).collect(),
            vec![42; 777],
            // Blocks of deltas of every bit width 1..=63 (0 and
            // 2^bw - 1 in each, so each miniblock packs at that width).
            {
                let mut v = vec![0i64];
                for bw in 1..64u32 {
                    let top = (1u64 << bw) - 1;
                    for i in 0..256u64 {
                        let d = match i % 64 {
                            0 => 0,
                            1 => top,
                            _ => (i.wrapping_mul(0x9e37_79b9_7f4a_7c15)) & top,
                        };
                        let last = *v.last().unwrap();
                        v.push((last as u64).wrapping_add(d) as i64);
                    }
                }
                v
            },
        ]
    }

    /// Encodes `batches` here and with parquet's writer; asserts both
    /// are the same and returns ours.
    fn same_as_parquet(
        props: &Arc<WriterProperties>,
        batches: &[Vec<i64>],
        what: &str,
    ) -> ColumnCloseResult {
        same_as_parquet_in(column(false), props, batches, what)
    }

    fn same_as_parquet_in(
        descr: ColumnDescPtr,
        props: &Arc<WriterProperties>,
        batches: &[Vec<i64>],
        what: &str,
    ) -> ColumnCloseResult {
        let plan = plan(&descr, props).expect("written here");
        let expect = reference(descr.clone(), props, batches);
        let buffers: Vec<arrow::buffer::Buffer> = batches
            .iter()
            .map(|b| arrow::buffer::Buffer::from_vec(b.clone()))
            .collect();
        let refs: Vec<&arrow::buffer::Buffer> = buffers.iter().collect();
        let (got, close) = encode(descr, props, plan, &refs).unwrap();
        assert_eq!(got.len(), expect.0.len(), "{what}");
        let first_difference = got.iter().zip(expect.0.iter()).position(|(a, b)| a != b);
        assert!(
            got == expect.0,
            "{what}: bytes differ (from byte {first_difference:?})"
        );
        assert_eq!(close.metadata, expect.1.metadata, "{what}");
        assert_eq!(
            format!("{:?}", close.column_index),
            format!("{:?}", expect.1.column_index),
            "{what}"
        );
        assert_eq!(
            format!("{:?}", close.offset_index),
            format!("{:?}", expect.1.offset_index),
            "{what}"
        );
        assert_eq!(close.bytes_written, expect.1.bytes_written, "{what}");
        assert_eq!(close.rows_written, expect.1.rows_written, "{what}");
        close
    }

    /// Every combination of encoding, statistics, codec and page limits
    /// gives the chunk parquet's own writer gives: the same bytes (page
    /// headers, bodies, zstd frames), metadata, statistics, column index
    /// and offset index. Expected values come from parquet-rs itself.
    #[test]
    fn chunks_equal_parquets_own_writer() {
        let codecs = [
            Compression::UNCOMPRESSED,
            Compression::ZSTD(ZstdLevel::try_new(1).unwrap()),
        ];
        let mut checked = 0;
        for (seed, enc) in [(1, Encoding::PLAIN), (2, Encoding::DELTA_BINARY_PACKED)] {
            for stats in [
                EnabledStatistics::None,
                EnabledStatistics::Chunk,
                EnabledStatistics::Page,
            ] {
                for codec in codecs {
                    // Page limits: parquet's defaults; small ones that cut
                    // pages inside batches by bytes and by rows.
                    for (bytes, rows, batch) in [
                        (1 << 20, 20_000, 1024),
                        (800, 1 << 20, 50),
                        (1 << 20, 333, 50),
                    ] {
                        let props = Arc::new(
                            WriterProperties::builder()
                                .set_dictionary_enabled(false)
                                .set_encoding(enc)
                                .set_statistics_enabled(stats)
                                .set_compression(codec)
                                .set_data_page_size_limit(bytes)
                                .set_data_page_row_count_limit(rows)
                                .set_write_batch_size(batch)
                                .build(),
                        );
                        let what = format!("{enc} {stats:?} {codec} {bytes} {rows} {batch}");
                        let close = same_as_parquet(&props, &values(seed), &what);
                        // A nullable column without nulls: the same pages
                        // with their definition levels (pages of 1 to 5
                        // rows too).
                        let what = format!("optional {what}");
                        same_as_parquet_in(optional_column(), &props, &values(seed), &what);
                        let small = Arc::new(
                            WriterProperties::builder()
                                .set_dictionary_enabled(false)
                                .set_encoding(enc)
                                .set_statistics_enabled(stats)
                                .set_compression(codec)
                                .set_data_page_row_count_limit(5)
                                .set_write_batch_size(3)
                                .build(),
                        );
                        same_as_parquet_in(optional_column(), &small, &values(seed), &what);
                        if stats == EnabledStatistics::Page && rows == 333 {
                            // Several pages, some not in ascending order.
                            let n = close.offset_index.as_ref().unwrap().page_locations.len();
                            assert!(n > 20, "{what}: {n} pages");
                            assert!(close.column_index.is_some());
                        }
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, 36);
    }

    /// The column index's boundary order, from pages of two values:
    /// ascending, descending, and mins ascending with maxes not
    /// (unordered), as parquet's writer orders them.
    #[test]
    fn boundary_order_as_parquets() {
        for (vals, order) in [
            (vec![0, 100, 1, 100, 2, 101], "ASCENDING"),
            (vec![9, 100, 8, 99, 7, 0], "DESCENDING"),
            (vec![0, 100, 1, 50], "UNORDERED"),
            (vec![5, 6, 5, 7, 4, 6], "UNORDERED"),
        ] {
            let props = Arc::new(
                WriterProperties::builder()
                    .set_dictionary_enabled(false)
                    .set_encoding(Encoding::DELTA_BINARY_PACKED)
                    .set_data_page_row_count_limit(2)
                    .set_write_batch_size(1)
                    .build(),
            );
            let close = same_as_parquet(&props, std::slice::from_ref(&vals), &format!("{vals:?}"));
            let index = format!("{:?}", close.column_index.unwrap());
            assert!(index.contains(order), "{vals:?}: {index}");
        }
    }

    #[test]
    fn leaves_other_columns_to_parquet() {
        let props = |b: parquet::file::properties::WriterPropertiesBuilder| b.build();
        let plain = props(WriterProperties::builder().set_dictionary_enabled(false));
        assert_eq!(
            plan(&column(false), &plain),
            Some((Values::Plain, EnabledStatistics::Page))
        );
        // Unsigned with statistics (min/max ordered as unsigned): no.
        assert_eq!(plan(&column(true), &plain), None);
        let unsigned_no_stats = props(
            WriterProperties::builder()
                .set_dictionary_enabled(false)
                .set_statistics_enabled(EnabledStatistics::None),
        );
        assert_eq!(
            plan(&column(true), &unsigned_no_stats),
            Some((Values::Plain, EnabledStatistics::None))
        );
        // Mini-batches bigger than a page: no.
        let tiny_pages = props(
            WriterProperties::builder()
                .set_dictionary_enabled(false)
                .set_data_page_size_limit(1000)
                .set_write_batch_size(200),
        );
        assert_eq!(plan(&column(false), &tiny_pages), None);
        // Dictionary, another codec, data page v2: no.
        assert_eq!(
            plan(&column(false), &props(WriterProperties::builder())),
            None
        );
        let snappy = props(
            WriterProperties::builder()
                .set_dictionary_enabled(false)
                .set_compression(Compression::SNAPPY),
        );
        assert_eq!(plan(&column(false), &snappy), None);
        let v2 = props(
            WriterProperties::builder()
                .set_dictionary_enabled(false)
                .set_writer_version(WriterVersion::PARQUET_2_0),
        );
        assert_eq!(plan(&column(false), &v2), None);
    }
}
