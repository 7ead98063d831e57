//! Parquet column chunks of a dictionary column written straight from its
//! Arrow dictionary keys.
//!
//! parquet's Arrow writer encodes a `DictionaryArray` by interning every
//! row's *value* into a new dictionary (a hash lookup per row), or, with
//! dictionary encoding off, by copying every value's bytes with a length
//! prefix. For a column of tens of millions of one-letter codes (`kind` of
//! `mem_access`: 22 M rows per GB of lackey log) that was the most
//! expensive column of the table (0.28 CPU-s of ≈0.9 for the whole table).
//! The keys already are dictionary indices, so this writes them as such:
//! one PLAIN dictionary page holding the Arrow dictionary's values, and data
//! pages (format v1, as the Arrow writer writes) of RLE_DICTIONARY indices
//! bit-packed at the dictionary's bit width — what the Arrow writer would
//! write with dictionary encoding on, in ~1/10 of the time. The string
//! columns of `perf_sample` (`comm`, `event`, `cpu_mode`: millions of rows
//! of a few hundred names) are written the same way: their dictionaries
//! only grow from batch to batch ([`crate::columns::DictKeys`]), so the
//! row group's last dictionary holds every key of the others. Required
//! Int32 columns without statistics whose values all lie in 0..=255
//! (`mem_access`'s `size` and constant `source_id`) are written the same
//! way, with a dictionary of their distinct values, instead of 4 bytes a
//! row through zstd.
//!
//! Encoding used (Parquet format, `Encodings.md`, "Dictionary Encoding" and
//! "Run Length Encoding / Bit-Packing Hybrid"): data page bytes = the
//! definition levels of a nullable column (a 4-byte length, then RLE runs
//! of 1-bit levels, or bit-packed ones where a page has nulls), then
//! `bit_width: u8` and bit-packed runs of the non-null rows' indices, each
//! `varint((groups << 1) | 1)` followed by `groups × 8` indices packed
//! LSB-first, `bit_width` bits each; the last group is padded with zeros
//! (readers stop at the page's value count). Runs are kept to 63 groups so
//! each header is one byte, as parquet-rs' own encoder does. The chunk is
//! only written this way when each batch's dictionary is the longest one
//! or a prefix of it, and it has at most 65,536 values (16-bit indices);
//! otherwise the caller falls back to the Arrow writer.

use arrow::array::{Array, ArrayRef, DictionaryArray, Int32Array, StringArray};
use arrow::buffer::NullBuffer;
use arrow::datatypes::Int32Type;
use bytes::Bytes;
use parquet::basic::{Compression, Encoding, EncodingMask, PageType, Type};
use parquet::column::page::{CompressedPage, Page, PageWriter};
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::{ColumnChunkMetaData, ColumnIndexBuilder, PageEncodingStats};
use parquet::file::page_index::offset_index::{OffsetIndexMetaData, PageLocation};
use parquet::file::properties::EnabledStatistics;
use parquet::file::statistics::{Statistics, ValueStatistics};
use parquet::file::writer::{SerializedPageWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;

use crate::int_pages::{all_defined, put_varint, Codec, PageBounds};

/// Indices per bit-packed run (63 groups of 8: a one-byte run header).
const RUN_VALUES: usize = 63 * 8;

/// Dictionary values at most (indices are gathered as 16 bits).
const MAX_VALUES: usize = 1 << 16;

/// The dictionary one column's batches can be written with from their
/// keys: Int32 keys, Utf8 values without nulls, every batch's dictionary
/// the longest one or a prefix of it (a dictionary that only grew), no
/// null key unless `nullable`.
pub fn shared_dictionary(columns: &[&ArrayRef], nullable: bool) -> Option<StringArray> {
    let dicts: Vec<&DictionaryArray<Int32Type>> = columns
        .iter()
        .map(|c| c.as_any().downcast_ref::<DictionaryArray<Int32Type>>())
        .collect::<Option<_>>()?;
    let longest = dicts.iter().max_by_key(|d| d.values().len())?;
    let values = longest.values().as_any().downcast_ref::<StringArray>()?;
    if values.is_empty() || values.null_count() > 0 || values.len() > MAX_VALUES {
        return None;
    }
    for d in &dicts {
        if !nullable && d.keys().null_count() > 0 {
            return None;
        }
        if !std::sync::Arc::ptr_eq(d.values(), longest.values())
            && d.values().to_data() != values.slice(0, d.values().len()).to_data()
        {
            return None;
        }
    }
    Some(values.clone())
}

/// Bits per index for a dictionary of `n` values (at least 1).
fn bit_width(n: usize) -> u8 {
    let max = n.saturating_sub(1) as u64;
    (64 - max.leading_zeros()).max(1) as u8
}

/// Appends `keys` as RLE/bit-packed hybrid runs of `bw`-bit indices
/// (`bw` ≤ 16).
fn pack(keys: &[u16], bw: u8, out: &mut Vec<u8>) {
    let bw = bw as usize;
    for run in keys.chunks(RUN_VALUES) {
        let groups = run.len().div_ceil(8);
        out.push(((groups << 1) | 1) as u8);
        for g in run.chunks(8) {
            if bw <= 8 {
                let mut acc = 0u64;
                for (j, &k) in g.iter().enumerate() {
                    acc |= (k as u64) << (j * bw);
                }
                out.extend_from_slice(&acc.to_le_bytes()[..bw]);
            } else {
                let mut acc = 0u128;
                for (j, &k) in g.iter().enumerate() {
                    acc |= (k as u128) << (j * bw);
                }
                out.extend_from_slice(&acc.to_le_bytes()[..bw]);
            }
        }
    }
}

/// Appends a page's definition levels of a column whose level is 0 or 1
/// (`defined`: each row's), RLE/bit-packed hybrid with their 4-byte
/// length first: one RLE run of 1s when the page has no null.
fn def_levels(defined: &[u16], nulls: usize, out: &mut Vec<u8>) {
    if nulls == 0 {
        return all_defined(defined.len(), out);
    }
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    pack(defined, 1, out);
    let len = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
}

/// Appends `n` copies of index 0 as one RLE run (`varint(n << 1)`, then
/// the value in `ceil(bw / 8)` bytes): a one-value dictionary's page.
fn rle_zeros(n: usize, bw: u8, out: &mut Vec<u8>) {
    put_varint(out, (n as u64) << 1);
    out.extend(std::iter::repeat_n(0u8, (bw as usize).div_ceil(8)));
}

/// Compresses `raw` with the chunk's codec: (page bytes, uncompressed
/// length).
fn compress(z: &mut Codec, raw: Vec<u8>) -> Result<(Bytes, usize)> {
    Ok((z.compress(&raw)?, raw.len()))
}

/// Whether [`encode`] can write a chunk with this codec.
pub fn supports(codec: Compression) -> bool {
    matches!(codec, Compression::UNCOMPRESSED | Compression::ZSTD(_))
}

/// Encodes one column chunk from the keys of `columns` (which passed
/// [`shared_dictionary`]) into a buffer holding its pages, with the
/// metadata to append it to a row group (offsets relative to the buffer).
pub fn encode(
    descr: ColumnDescPtr,
    codec: Compression,
    page_rows: usize,
    dictionary: &StringArray,
    columns: &[&ArrayRef],
) -> Result<(Bytes, ColumnCloseResult)> {
    // The dictionary page: PLAIN byte arrays (u32 length, bytes).
    let mut dict = Vec::new();
    for v in dictionary.iter().flatten() {
        dict.extend_from_slice(&(v.len() as u32).to_le_bytes());
        dict.extend_from_slice(v.as_bytes());
    }
    let keys: Vec<Keys<'_>> = columns
        .iter()
        .map(|c| {
            c.as_any()
                .downcast_ref::<DictionaryArray<Int32Type>>()
                .map(|d| Keys {
                    values: d.keys().values().as_ref(),
                    nulls: d.keys().nulls(),
                })
                .ok_or_else(|| {
                    ParquetError::General("dictionary codes: not an Int32 dictionary".into())
                })
        })
        .collect::<Result<_>>()?;
    let identity: Vec<u8> = Vec::new();
    write_chunk(
        descr,
        codec,
        page_rows,
        dict,
        dictionary.len(),
        &keys,
        &identity,
        None,
    )
}

/// One batch's indices (or values to map), and its null rows.
struct Keys<'a> {
    values: &'a [i32],
    nulls: Option<&'a NullBuffer>,
}

/// The values of a required Int32 column when they are all in 0..=255 (the
/// access sizes of `mem_access`, its constant `source_id`): the distinct
/// values in ascending order and each value's code.
pub fn small_ints(columns: &[&ArrayRef]) -> Option<(Vec<i32>, Vec<u8>)> {
    let mut arrays = Vec::with_capacity(columns.len());
    let (mut lo, mut hi) = (i32::MAX, i32::MIN);
    for c in columns {
        let a = c.as_any().downcast_ref::<Int32Array>()?;
        if a.null_count() > 0 {
            return None;
        }
        // Range first, without a branch per value (two vectorised
        // passes; a (min, max) fold was not vectorised).
        let v = a.values();
        lo = lo.min(v.iter().copied().min().unwrap_or(lo));
        hi = hi.max(v.iter().copied().max().unwrap_or(hi));
        arrays.push(a);
    }
    if lo < 0 || hi > 255 {
        return None;
    }
    let values: Vec<i32> = if lo == hi {
        // A constant column (`source_id`): nothing more to look at.
        vec![lo]
    } else {
        // Four tables, so stores of the same few values do not wait on
        // each other.
        let mut seen = [[false; 256]; 4];
        for a in arrays {
            let v = a.values();
            let mut quads = v.chunks_exact(4);
            for q in &mut quads {
                seen[0][q[0] as u8 as usize] = true;
                seen[1][q[1] as u8 as usize] = true;
                seen[2][q[2] as u8 as usize] = true;
                seen[3][q[3] as u8 as usize] = true;
            }
            for &x in quads.remainder() {
                seen[0][x as u8 as usize] = true;
            }
        }
        (0..256)
            .filter(|&v| seen.iter().any(|t| t[v as usize]))
            .collect()
    };
    let mut code = vec![0u8; 256];
    for (k, &v) in values.iter().enumerate() {
        code[v as usize] = k as u8;
    }
    Some((values, code))
}

/// Encodes a chunk of a required Int32 column whose values passed
/// [`small_ints`]: a PLAIN dictionary page of the distinct values and
/// RLE_DICTIONARY data pages, as [`encode`]; with `stats`, the chunk's
/// min/max statistics and (at [`EnabledStatistics::Page`]) a column index
/// of each page's, as parquet's writer makes them.
pub fn encode_small_ints(
    descr: ColumnDescPtr,
    codec: Compression,
    page_rows: usize,
    stats: EnabledStatistics,
    values: &[i32],
    code: &[u8],
    columns: &[&ArrayRef],
) -> Result<(Bytes, ColumnCloseResult)> {
    // The statistics and column index made here count no nulls and give
    // every page an entry: a required column only.
    if descr.max_def_level() != 0 || descr.max_rep_level() != 0 {
        return Err(ParquetError::General(
            "dictionary of small ints: not a required flat column".into(),
        ));
    }
    let dict: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let vals: Vec<Keys<'_>> = columns
        .iter()
        .map(|c| {
            c.as_any()
                .downcast_ref::<Int32Array>()
                .map(|a| Keys {
                    values: a.values().as_ref(),
                    nulls: None,
                })
                .ok_or_else(|| ParquetError::General("dictionary codes: not Int32".into()))
        })
        .collect::<Result<_>>()?;
    let stats = (stats != EnabledStatistics::None).then_some((values, stats));
    write_chunk(
        descr,
        codec,
        page_rows,
        dict,
        values.len(),
        &vals,
        code,
        stats,
    )
}

/// Writes the dictionary page `dict` (`dict_len` values) and data pages of
/// up to `page_rows` rows: the values of `columns` in order, each mapped
/// through `code` (or taken as they are when `code` is empty); null rows
/// (of a nullable column) get definition level 0 and no index. `stats`:
/// the Int32 values of the dictionary, ascending (so index order is value
/// order), and the statistics to make of them.
#[allow(clippy::too_many_arguments)]
fn write_chunk(
    descr: ColumnDescPtr,
    codec: Compression,
    page_rows: usize,
    dict: Vec<u8>,
    dict_len: usize,
    columns: &[Keys<'_>],
    code: &[u8],
    stats: Option<(&[i32], EnabledStatistics)>,
) -> Result<(Bytes, ColumnCloseResult)> {
    let nullable = descr.max_def_level() == 1;
    if descr.max_def_level() > 1 || descr.max_rep_level() != 0 || dict_len > MAX_VALUES {
        return Err(ParquetError::General(
            "dictionary codes: not a flat column of at most 65,536 values".into(),
        ));
    }
    let mut sink = TrackedWrite::new(Vec::new());
    let mut pw = SerializedPageWriter::new(&mut sink);
    let mut z = Codec::new(codec)?;
    let (buf, raw_len) = compress(&mut z, dict)?;
    let spec = pw.write_page(CompressedPage::new(
        Page::DictionaryPage {
            buf,
            num_values: dict_len as u32,
            encoding: Encoding::PLAIN,
            is_sorted: false,
        },
        raw_len,
    ))?;
    let (mut compressed, mut uncompressed, mut written) = (
        spec.compressed_size as i64,
        spec.uncompressed_size as i64,
        spec.bytes_written,
    );

    // Data pages of up to `page_rows` rows each.
    let bw = bit_width(dict_len);
    let page_rows = page_rows.max(8);
    let mut locations = Vec::new();
    let mut rows = 0usize;
    // A one-value dictionary's indices are all 0: counted, not gathered.
    let constant = dict_len == 1;
    let mut page: Vec<u16> = Vec::with_capacity(if constant { 0 } else { page_rows });
    let mut defined: Vec<u16> = Vec::new();
    let mut index = ColumnIndexBuilder::new(Type::INT32);
    if !matches!(stats, Some((_, EnabledStatistics::Page))) {
        index.to_invalid();
    }
    let mut bounds = PageBounds::<u16>::new();
    let mut rest = columns.iter();
    let mut pending: &[i32] = &[];
    let mut pending_nulls: Option<arrow::buffer::BooleanBuffer> = None;
    loop {
        page.clear();
        defined.clear();
        let (mut n, mut nulls) = (0usize, 0usize);
        while n < page_rows {
            if pending.is_empty() {
                match rest.next() {
                    Some(k) => {
                        pending = k.values;
                        pending_nulls = k
                            .nulls
                            .filter(|b| b.null_count() > 0)
                            .map(|b| b.inner().clone());
                    }
                    None => break,
                }
                continue;
            }
            let take = (page_rows - n).min(pending.len());
            let chunk = &pending[..take];
            let map = |k: i32| match code.is_empty() {
                // Dictionary keys (at most MAX_VALUES values: checked by
                // `shared_dictionary`).
                true => k as u16,
                false => code[k as usize] as u16,
            };
            match &pending_nulls {
                None => {
                    if !constant {
                        page.extend(chunk.iter().map(|&k| map(k)));
                    }
                    if nullable {
                        defined.extend(std::iter::repeat_n(1, take));
                    }
                }
                Some(valid) => {
                    for (j, &k) in chunk.iter().enumerate() {
                        let v = valid.value(j);
                        defined.push(v as u16);
                        if v {
                            if !constant {
                                page.push(map(k));
                            }
                        } else {
                            nulls += 1;
                        }
                    }
                    pending_nulls = Some(valid.slice(take, valid.len() - take));
                }
            }
            n += take;
            pending = &pending[take..];
        }
        if n == 0 {
            break;
        }
        let mut body = Vec::with_capacity(1 + n * bw as usize / 8 + n / 256 + 32);
        if nullable {
            def_levels(&defined, nulls, &mut body);
        }
        body.push(bw);
        if constant {
            if n > nulls {
                rle_zeros(n - nulls, bw, &mut body);
            }
        } else {
            pack(&page, bw, &mut body);
        }
        if stats.is_some() && n > nulls {
            // The page's smallest and largest index (of a small-ints
            // dictionary: of values).
            let (lo, hi) = match constant {
                true => (0, 0),
                false => (
                    page.iter().copied().min().unwrap_or(0),
                    page.iter().copied().max().unwrap_or(0),
                ),
            };
            bounds.page(lo, hi);
            if index.valid() {
                let v = |k: u16| {
                    stats
                        .map_or(0, |(v, _)| v[k as usize])
                        .to_le_bytes()
                        .to_vec()
                };
                index.append(false, v(lo), v(hi), 0);
            }
        }
        let (buf, raw_len) = compress(&mut z, body)?;
        let spec = pw.write_page(CompressedPage::new(
            Page::DataPage {
                buf,
                num_values: n as u32,
                encoding: Encoding::RLE_DICTIONARY,
                def_level_encoding: Encoding::RLE,
                rep_level_encoding: Encoding::RLE,
                statistics: None,
            },
            raw_len,
        ))?;
        locations.push(PageLocation {
            offset: spec.offset as i64,
            compressed_page_size: spec.compressed_size as i32,
            first_row_index: rows as i64,
        });
        compressed += spec.compressed_size as i64;
        uncompressed += spec.uncompressed_size as i64;
        written += spec.bytes_written;
        rows += n;
    }
    pw.close()?;
    let data_offset = locations.first().map_or(0, |l| l.offset);
    let mut meta = ColumnChunkMetaData::builder(descr)
        .set_compression(codec)
        .set_encodings_mask(EncodingMask::new_from_encodings(
            [Encoding::PLAIN, Encoding::RLE, Encoding::RLE_DICTIONARY].iter(),
        ))
        .set_page_encoding_stats(vec![
            PageEncodingStats {
                page_type: PageType::DICTIONARY_PAGE,
                encoding: Encoding::PLAIN,
                count: 1,
            },
            PageEncodingStats {
                page_type: PageType::DATA_PAGE,
                encoding: Encoding::RLE_DICTIONARY,
                count: locations.len() as i32,
            },
        ])
        .set_total_compressed_size(compressed)
        .set_total_uncompressed_size(uncompressed)
        .set_num_values(rows as i64)
        .set_data_page_offset(data_offset)
        .set_dictionary_page_offset(Some(0));
    let mut column_index = None;
    if let Some((values, _)) = stats {
        let (lo, hi) = bounds
            .chunk()
            .map(|(lo, hi)| (values[lo as usize], values[hi as usize]))
            .unzip();
        let s: Statistics = ValueStatistics::<i32>::new(lo, hi, None, Some(0), false)
            .with_backwards_compatible_min_max(true)
            .into();
        meta = meta.set_statistics(s);
        if index.valid() {
            index.set_boundary_order(bounds.order());
            column_index = Some(index.build()?);
        }
    }
    let metadata = meta.build()?;
    let buf = Bytes::from(sink.into_inner()?);
    Ok((
        buf,
        ColumnCloseResult {
            bytes_written: written,
            rows_written: rows as u64,
            metadata,
            bloom_filter: None,
            column_index,
            offset_index: Some(OffsetIndexMetaData {
                page_locations: locations,
                unencoded_byte_array_data_bytes: None,
            }),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_groups_lsb_first_in_short_runs() {
        // Hand-worked: 2-bit indices 1,2,3,0,1,1,1,1 -> bits (LSB first)
        // 01 10 11 00 | 01 01 01 01 -> bytes 0b00111001, 0b01010101.
        let mut out = Vec::new();
        pack(&[1, 2, 3, 0, 1, 1, 1, 1, 3], 2, &mut out);
        // One run of 2 groups: header (2 << 1) | 1 = 5; the 9th index
        // starts a zero-padded group.
        assert_eq!(out, vec![5, 0b0011_1001, 0b0101_0101, 0b0000_0011, 0]);
        // 600 indices: a run of 63 groups (504 indices) then one of 12.
        let mut out = Vec::new();
        pack(&[3; 600], 2, &mut out);
        assert_eq!(out[0], 127);
        assert_eq!(out[1 + 126], 25);
        assert_eq!(out.len(), 1 + 126 + 1 + 24);
        // 300 zeros of a 1-bit index as one RLE run: varint(300 << 1) =
        // 600 = 0xd8 0x04, then the value in one byte.
        let mut out = Vec::new();
        rle_zeros(300, 1, &mut out);
        assert_eq!(out, vec![0xd8, 0x04, 0]);
        assert_eq!(bit_width(1), 1);
        assert_eq!(bit_width(4), 2);
        assert_eq!(bit_width(5), 3);
    }

    /// Keys of a small made-up dictionary, deterministic.
    fn keys(n: usize, dict: usize, seed: u64) -> Vec<i32> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((x >> 33) % dict as u64) as i32
            })
            .collect()
    }

    fn dict_array(keys: Vec<i32>, values: &ArrayRef) -> ArrayRef {
        use arrow::array::Int32Array;
        std::sync::Arc::new(
            DictionaryArray::<Int32Type>::try_new(Int32Array::from(keys), values.clone()).unwrap(),
        )
    }

    type File = parquet::file::writer::SerializedFileWriter<Vec<u8>>;

    /// A file of one column `ty` (required) with parquet's own writer.
    fn one_column_file(ty: arrow::datatypes::DataType, codec: Compression) -> File {
        use arrow::datatypes::{Field, Schema};
        use parquet::arrow::ArrowWriter;
        use parquet::file::properties::WriterProperties;
        let schema = std::sync::Arc::new(Schema::new(vec![Field::new("c", ty, false)]));
        let props = WriterProperties::builder().set_compression(codec).build();
        ArrowWriter::try_new(Vec::new(), schema, Some(props))
            .unwrap()
            .into_serialized_writer()
            .unwrap()
            .0
    }

    /// Appends an encoded chunk as a row group of its own.
    fn append(file: &mut File, (bytes, close): (Bytes, ColumnCloseResult)) {
        let mut g = file.next_row_group().unwrap();
        g.append_column(&bytes, close).unwrap();
        g.close().unwrap();
    }

    /// The strings of a dictionary column as parquet's Arrow reader reads
    /// it back (null rows: `None`).
    fn read_back_strings(file: File) -> Vec<Option<String>> {
        let mut got = Vec::new();
        for c in read_back(file) {
            let d = c
                .as_any()
                .downcast_ref::<DictionaryArray<Int32Type>>()
                .unwrap();
            let v = d.values().as_any().downcast_ref::<StringArray>().unwrap();
            got.extend(
                d.keys()
                    .iter()
                    .map(|k| k.map(|k| v.value(k as usize).to_string())),
            );
        }
        got
    }

    /// The column as parquet's Arrow reader reads it back.
    fn read_back(file: File) -> Vec<ArrayRef> {
        use parquet::arrow::arrow_reader::ParquetRecordBatchReader;
        let data = Bytes::from(file.into_inner().unwrap());
        ParquetRecordBatchReader::try_new(data, 1000)
            .unwrap()
            .map(|b| b.unwrap().column(0).clone())
            .collect()
    }

    /// Chunks encoded here, appended to a file with parquet's own writer
    /// and read back with parquet's Arrow reader, give the strings the keys
    /// stand for: several pages, sliced batches, 1 to 5 dictionary values,
    /// zstd and uncompressed.
    #[test]
    fn chunks_read_back_as_the_keys_values() {
        use arrow::datatypes::DataType;
        use parquet::basic::ZstdLevel;
        use std::sync::Arc;

        let words = ["I", "L", "S", "M", "longer value"];
        for (nd, codec) in [
            (1, Compression::UNCOMPRESSED),
            (4, Compression::ZSTD(ZstdLevel::try_new(1).unwrap())),
            (5, Compression::UNCOMPRESSED),
            (3, Compression::ZSTD(ZstdLevel::try_new(3).unwrap())),
        ] {
            let values: ArrayRef = Arc::new(StringArray::from(words[..nd].to_vec()));
            let ty = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
            let mut file = one_column_file(ty, codec);
            let mut expect = Vec::new();
            for rg in 0..2u64 {
                // Batches of 700 and 1,301 rows, the second a slice.
                let k1 = keys(700, nd, rg);
                let k2 = keys(1400, nd, rg + 7);
                let a1 = dict_array(k1.clone(), &values);
                let a2 = dict_array(k2.clone(), &values).slice(99, 1301);
                expect.extend(
                    k1.iter()
                        .chain(&k2[99..])
                        .map(|&k| words[k as usize].to_string()),
                );
                let cols = [&a1, &a2];
                let dict = shared_dictionary(&cols, false).expect("one dictionary");
                let descr = file.schema_descr().column(0);
                let chunk = encode(descr, codec, 300, &dict, &cols).unwrap();
                assert_eq!(chunk.1.rows_written, 2001);
                assert_eq!(
                    chunk.1.offset_index.as_ref().unwrap().page_locations.len(),
                    7
                );
                append(&mut file, chunk);
            }
            let expect: Vec<Option<String>> = expect.into_iter().map(Some).collect();
            assert_eq!(read_back_strings(file), expect, "{nd} values, {codec}");
        }
    }

    /// Batches whose dictionaries are not one growing dictionary, or with
    /// null keys in a required column, go to the Arrow writer.
    #[test]
    fn only_one_growing_dictionary_is_taken() {
        use arrow::array::Int32Array;
        use std::sync::Arc;
        let a: ArrayRef = Arc::new(StringArray::from(vec!["I", "L"]));
        let b: ArrayRef = Arc::new(StringArray::from(vec!["I", "S"]));
        let b_same: ArrayRef = Arc::new(StringArray::from(vec!["I", "L"]));
        let grown: ArrayRef = Arc::new(StringArray::from(vec!["I", "L", "S"]));
        let x = dict_array(vec![0, 1], &a);
        assert!(shared_dictionary(&[&x, &dict_array(vec![1], &b)], false).is_none());
        assert!(shared_dictionary(&[&x, &dict_array(vec![1], &b_same)], false).is_some());
        // A prefix of the longest, either way round.
        let g = dict_array(vec![2], &grown);
        let d = shared_dictionary(&[&x, &g], false).unwrap();
        assert_eq!(d.len(), 3);
        assert_eq!(shared_dictionary(&[&g, &x], false).unwrap().len(), 3);
        let nulls: ArrayRef = Arc::new(
            DictionaryArray::<Int32Type>::try_new(Int32Array::from(vec![Some(0), None]), a.clone())
                .unwrap(),
        );
        assert!(shared_dictionary(&[&x, &nulls], false).is_none());
        assert!(shared_dictionary(&[&x, &nulls], true).is_some());
        let plain: ArrayRef = Arc::new(StringArray::from(vec!["I"]));
        assert!(shared_dictionary(&[&plain], false).is_none());
        // Indices are gathered as 16 bits: no more than 65,536 values.
        let many: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..65_537).map(|i| i.to_string()),
        ));
        assert!(shared_dictionary(&[&dict_array(vec![0, 65_536], &many)], false).is_none());
        assert!(!supports(Compression::SNAPPY));
    }

    /// A nullable column whose batches' dictionaries grow (as the
    /// converters' command names do), with null rows, and dictionaries of
    /// 1, 3, 300 and 40,000 values (1 to 16-bit indices), written here and
    /// read back by parquet's Arrow reader: the rows' strings and nulls,
    /// as made.
    #[test]
    fn growing_nullable_dictionaries_read_back_as_made() {
        use arrow::array::Int32Array;
        use arrow::datatypes::{DataType, Field, Schema};
        use parquet::arrow::ArrowWriter;
        use parquet::basic::ZstdLevel;
        use parquet::file::properties::WriterProperties;
        use std::sync::Arc;

        for (nd, null_every) in [(1usize, 3usize), (3, 0), (300, 7), (40_000, 2), (3, 1)] {
            let words: Vec<String> = (0..nd).map(|i| format!("comm-{i}")).collect();
            let ty = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
            let schema = Arc::new(Schema::new(vec![Field::new("c", ty, true)]));
            let codec = Compression::ZSTD(ZstdLevel::try_new(1).unwrap());
            let props = WriterProperties::builder().set_compression(codec).build();
            let mut file = ArrowWriter::try_new(Vec::new(), schema, Some(props))
                .unwrap()
                .into_serialized_writer()
                .unwrap()
                .0;
            let mut expect: Vec<Option<String>> = Vec::new();
            let mut cols = Vec::new();
            // Three batches; the first sees the first half of the names,
            // the others all (each batch's dictionary a prefix of the
            // last); the second batch is a slice.
            for (b, (n, known)) in [(900, nd.div_ceil(2)), (1500, nd), (611, nd)]
                .into_iter()
                .enumerate()
            {
                let values: ArrayRef = Arc::new(StringArray::from_iter_values(&words[..known]));
                let k = keys(n, known, b as u64 + 11);
                let rows: Vec<Option<i32>> = k
                    .iter()
                    .enumerate()
                    .map(|(j, &k)| (null_every == 0 || j % null_every != 0).then_some(k))
                    .collect();
                let a: ArrayRef = Arc::new(
                    DictionaryArray::<Int32Type>::try_new(Int32Array::from(rows.clone()), values)
                        .unwrap(),
                );
                let (a, rows) = match b {
                    1 => (a.slice(101, n - 101), &rows[101..]),
                    _ => (a, &rows[..]),
                };
                expect.extend(rows.iter().map(|r| r.map(|k| words[k as usize].clone())));
                cols.push(a);
            }
            let refs: Vec<&ArrayRef> = cols.iter().collect();
            let dict = shared_dictionary(&refs, true).expect("a growing dictionary");
            assert_eq!(dict.len(), nd);
            let descr = file.schema_descr().column(0);
            append(&mut file, encode(descr, codec, 256, &dict, &refs).unwrap());
            let got = read_back_strings(file);
            assert_eq!(got.len(), expect.len(), "{nd} values");
            assert_eq!(got, expect, "{nd} values, a null every {null_every}");
        }
    }

    /// Small Int32 columns (sizes, a constant id) written as a dictionary
    /// of their distinct values read back as the values; values outside
    /// 0..=255 are left to the Arrow writer.
    #[test]
    fn small_ints_read_back_as_written() {
        use arrow::array::Int32Array;
        use arrow::datatypes::DataType;
        use parquet::basic::ZstdLevel;
        use std::sync::Arc;

        let sizes = [1, 2, 4, 8, 16, 32, 255];
        for (label, make) in [
            (
                "sizes",
                Box::new(|k: i32| sizes[k as usize]) as Box<dyn Fn(i32) -> i32>,
            ),
            ("constant", Box::new(|_| 3)),
            ("zero", Box::new(|_| 0)),
        ] {
            let codec = Compression::ZSTD(ZstdLevel::try_new(1).unwrap());
            let mut file = one_column_file(DataType::Int32, codec);
            let v1: Vec<i32> = keys(1000, sizes.len(), 5).into_iter().map(&make).collect();
            let v2: Vec<i32> = keys(2500, sizes.len(), 6).into_iter().map(&make).collect();
            let a1: ArrayRef = Arc::new(Int32Array::from(v1.clone()));
            let a2: ArrayRef = Arc::new(Int32Array::from(v2.clone()).slice(500, 2000));
            let cols = [&a1, &a2];
            let (values, code) = small_ints(&cols).expect("values in 0..=255");
            let descr = file.schema_descr().column(0);
            append(
                &mut file,
                encode_small_ints(
                    descr,
                    codec,
                    700,
                    EnabledStatistics::Page,
                    &values,
                    &code,
                    &cols,
                )
                .unwrap(),
            );
            let data = Bytes::from(file.into_inner().unwrap());
            let expect: Vec<i32> = v1.iter().chain(&v2[500..]).copied().collect();
            // Statistics and the column index as parquet's reader reads
            // them: the min/max of the rows, of the chunk and of each page
            // of 700 rows.
            let reader = parquet::file::serialized_reader::SerializedFileReader::new_with_options(
                data.clone(),
                parquet::file::serialized_reader::ReadOptionsBuilder::new()
                    .with_page_index()
                    .build(),
            )
            .unwrap();
            use parquet::file::reader::FileReader;
            let meta = reader.metadata();
            let st = meta.row_group(0).column(0).statistics().unwrap();
            let (lo, hi) = (expect.iter().min().unwrap(), expect.iter().max().unwrap());
            assert_eq!(st.min_bytes_opt(), Some(&lo.to_le_bytes()[..]), "{label}");
            assert_eq!(st.max_bytes_opt(), Some(&hi.to_le_bytes()[..]), "{label}");
            assert_eq!(st.null_count_opt(), Some(0));
            let index = &meta.column_index().unwrap()[0][0];
            let parquet::file::page_index::column_index::ColumnIndexMetaData::INT32(ix) = index
            else {
                panic!("{label}: no Int32 column index: {index:?}");
            };
            let pages: Vec<(i32, i32)> = expect
                .chunks(700)
                .map(|p| (*p.iter().min().unwrap(), *p.iter().max().unwrap()))
                .collect();
            assert_eq!(ix.num_pages() as usize, pages.len(), "{label}");
            for (i, (lo, hi)) in pages.iter().enumerate() {
                assert_eq!(
                    (ix.min_value(i), ix.max_value(i)),
                    (Some(lo), Some(hi)),
                    "{label} page {i}"
                );
            }
            let mut got = Vec::new();
            use parquet::arrow::arrow_reader::ParquetRecordBatchReader;
            for b in ParquetRecordBatchReader::try_new(data, 1000).unwrap() {
                let c = b.unwrap().column(0).clone();
                got.extend_from_slice(c.as_any().downcast_ref::<Int32Array>().unwrap().values());
            }
            assert_eq!(got, expect, "{label}");
        }
        let neg: ArrayRef = std::sync::Arc::new(Int32Array::from(vec![1, -1]));
        let big: ArrayRef = std::sync::Arc::new(Int32Array::from(vec![256]));
        assert!(small_ints(&[&neg]).is_none());
        assert!(small_ints(&[&big]).is_none());
        // An optional column is refused (its statistics would count no
        // nulls).
        let optional = parquet::schema::types::SchemaDescriptor::new(Arc::new(
            parquet::schema::parser::parse_message_type("message m { optional int32 c; }").unwrap(),
        ))
        .column(0);
        let a: ArrayRef = Arc::new(Int32Array::from(vec![1, 2]));
        let (values, code) = small_ints(&[&a]).unwrap();
        let r = encode_small_ints(
            optional,
            Compression::UNCOMPRESSED,
            100,
            EnabledStatistics::Page,
            &values,
            &code,
            &[&a],
        );
        assert!(r.is_err());
    }
}
