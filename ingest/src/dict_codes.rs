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
//! write with dictionary encoding on, in ~1/10 of the time. Required
//! Int32 columns without statistics whose values all lie in 0..=255
//! (`mem_access`'s `size` and constant `source_id`) are written the same
//! way, with a dictionary of their distinct values, instead of 4 bytes a
//! row through zstd.
//!
//! Encoding used (Parquet format, `Encodings.md`, "Dictionary Encoding" and
//! "Run Length Encoding / Bit-Packing Hybrid"): data page bytes =
//! `bit_width: u8` then bit-packed runs, each
//! `varint((groups << 1) | 1)` followed by `groups × 8` indices packed
//! LSB-first, `bit_width` bits each; the last group is padded with zeros
//! (readers stop at the page's value count). Runs are kept to 63 groups so
//! each header is one byte, as parquet-rs' own encoder does. The chunk is
//! only written this way when every batch shares one dictionary, no key is
//! null and the column is required; otherwise the caller falls back to the
//! Arrow writer.

use arrow::array::{Array, ArrayRef, DictionaryArray, Int32Array, StringArray};
use arrow::datatypes::Int32Type;
use bytes::Bytes;
use parquet::basic::{Compression, Encoding, EncodingMask, PageType};
use parquet::column::page::{CompressedPage, Page, PageWriter};
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::{ColumnChunkMetaData, PageEncodingStats};
use parquet::file::page_index::offset_index::{OffsetIndexMetaData, PageLocation};
use parquet::file::writer::{SerializedPageWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;

use crate::int_pages::{put_varint, Codec};

/// Indices per bit-packed run (63 groups of 8: a one-byte run header).
const RUN_VALUES: usize = 63 * 8;

/// The dictionary arrays of one column across a row group's batches, if
/// they can be written from their keys: Int32 keys without nulls, Utf8
/// values, one dictionary shared by all.
pub fn shared_dictionary(columns: &[&ArrayRef]) -> Option<StringArray> {
    let first = columns.first()?;
    let d0 = first
        .as_any()
        .downcast_ref::<DictionaryArray<Int32Type>>()?;
    let values = d0.values().as_any().downcast_ref::<StringArray>()?;
    // Indices are gathered as bytes.
    if values.null_count() > 0 || values.len() > 256 {
        return None;
    }
    for c in columns {
        let d = c.as_any().downcast_ref::<DictionaryArray<Int32Type>>()?;
        if d.keys().null_count() > 0 {
            return None;
        }
        if !std::sync::Arc::ptr_eq(d.values(), d0.values())
            && d.values().to_data() != d0.values().to_data()
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

/// Appends `keys` as RLE/bit-packed hybrid runs of `bw`-bit indices.
fn pack(keys: &[u8], bw: u8, out: &mut Vec<u8>) {
    let bw = bw as usize;
    for run in keys.chunks(RUN_VALUES) {
        let groups = run.len().div_ceil(8);
        out.push(((groups << 1) | 1) as u8);
        for g in run.chunks(8) {
            let mut acc = 0u64;
            for (j, &k) in g.iter().enumerate() {
                acc |= (k as u64) << (j * bw);
            }
            out.extend_from_slice(&acc.to_le_bytes()[..bw]);
        }
    }
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
    let keys: Vec<&[i32]> = columns
        .iter()
        .map(|c| {
            c.as_any()
                .downcast_ref::<DictionaryArray<Int32Type>>()
                .map(|d| d.keys().values().as_ref())
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
    )
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
/// RLE_DICTIONARY data pages, as [`encode`].
pub fn encode_small_ints(
    descr: ColumnDescPtr,
    codec: Compression,
    page_rows: usize,
    values: &[i32],
    code: &[u8],
    columns: &[&ArrayRef],
) -> Result<(Bytes, ColumnCloseResult)> {
    let dict: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let vals: Vec<&[i32]> = columns
        .iter()
        .map(|c| {
            c.as_any()
                .downcast_ref::<Int32Array>()
                .map(|a| a.values().as_ref())
                .ok_or_else(|| ParquetError::General("dictionary codes: not Int32".into()))
        })
        .collect::<Result<_>>()?;
    write_chunk(descr, codec, page_rows, dict, values.len(), &vals, code)
}

/// Writes the dictionary page `dict` (`dict_len` values) and data pages of
/// up to `page_rows` indices: the values of `columns` in order, each
/// mapped through `code` (or taken as they are when `code` is empty).
fn write_chunk(
    descr: ColumnDescPtr,
    codec: Compression,
    page_rows: usize,
    dict: Vec<u8>,
    dict_len: usize,
    columns: &[&[i32]],
    code: &[u8],
) -> Result<(Bytes, ColumnCloseResult)> {
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

    // Data pages of up to `page_rows` indices each.
    let bw = bit_width(dict_len);
    let page_rows = page_rows.max(8);
    let mut locations = Vec::new();
    let mut rows = 0usize;
    // A one-value dictionary's indices are all 0: counted, not gathered.
    let constant = dict_len == 1;
    let mut page: Vec<u8> = Vec::with_capacity(if constant { 0 } else { page_rows });
    let mut rest = columns.iter();
    let mut pending: &[i32] = &[];
    loop {
        page.clear();
        let mut n = 0usize;
        while n < page_rows {
            if pending.is_empty() {
                match rest.next() {
                    Some(k) => pending = k,
                    None => break,
                }
                continue;
            }
            let take = (page_rows - n).min(pending.len());
            if !constant {
                if code.is_empty() {
                    // Dictionary keys (fewer than 256 values: checked by
                    // `shared_dictionary`).
                    page.extend(pending[..take].iter().map(|&k| k as u8));
                } else {
                    page.extend(pending[..take].iter().map(|&v| code[v as usize]));
                }
            }
            n += take;
            pending = &pending[take..];
        }
        if n == 0 {
            break;
        }
        let mut body = Vec::with_capacity(1 + n * bw as usize / 8 + n / 256 + 16);
        body.push(bw);
        if constant {
            rle_zeros(n, bw, &mut body);
        } else {
            pack(&page, bw, &mut body);
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
    let metadata = ColumnChunkMetaData::builder(descr)
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
        .set_dictionary_page_offset(Some(0))
        .build()?;
    let buf = Bytes::from(sink.into_inner()?);
    Ok((
        buf,
        ColumnCloseResult {
            bytes_written: written,
            rows_written: rows as u64,
            metadata,
            bloom_filter: None,
            column_index: None,
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
                let dict = shared_dictionary(&cols).expect("one dictionary");
                let descr = file.schema_descr().column(0);
                let chunk = encode(descr, codec, 300, &dict, &cols).unwrap();
                assert_eq!(chunk.1.rows_written, 2001);
                assert_eq!(
                    chunk.1.offset_index.as_ref().unwrap().page_locations.len(),
                    7
                );
                append(&mut file, chunk);
            }
            let mut got = Vec::new();
            for c in read_back(file) {
                let d = c
                    .as_any()
                    .downcast_ref::<DictionaryArray<Int32Type>>()
                    .unwrap();
                let v = d.values().as_any().downcast_ref::<StringArray>().unwrap();
                got.extend(
                    d.keys()
                        .values()
                        .iter()
                        .map(|&k| v.value(k as usize).to_string()),
                );
            }
            assert_eq!(got, expect, "{nd} values, {codec}");
        }
    }

    /// Batches with different dictionaries or null keys go to the Arrow
    /// writer.
    #[test]
    fn only_one_shared_dictionary_without_nulls_is_taken() {
        use arrow::array::Int32Array;
        use std::sync::Arc;
        let a: ArrayRef = Arc::new(StringArray::from(vec!["I", "L"]));
        let b: ArrayRef = Arc::new(StringArray::from(vec!["I", "S"]));
        let b_same: ArrayRef = Arc::new(StringArray::from(vec!["I", "L"]));
        let x = dict_array(vec![0, 1], &a);
        assert!(shared_dictionary(&[&x, &dict_array(vec![1], &b)]).is_none());
        assert!(shared_dictionary(&[&x, &dict_array(vec![1], &b_same)]).is_some());
        let nulls: ArrayRef = Arc::new(
            DictionaryArray::<Int32Type>::try_new(Int32Array::from(vec![Some(0), None]), a.clone())
                .unwrap(),
        );
        assert!(shared_dictionary(&[&x, &nulls]).is_none());
        let plain: ArrayRef = Arc::new(StringArray::from(vec!["I"]));
        assert!(shared_dictionary(&[&plain]).is_none());
        // Keys are gathered as bytes: no more than 256 values.
        let many: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..257).map(|i| i.to_string()),
        ));
        assert!(shared_dictionary(&[&dict_array(vec![0, 256], &many)]).is_none());
        assert!(!supports(Compression::SNAPPY));
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
                encode_small_ints(descr, codec, 700, &values, &code, &cols).unwrap(),
            );
            let mut got = Vec::new();
            for c in read_back(file) {
                got.extend_from_slice(c.as_any().downcast_ref::<Int32Array>().unwrap().values());
            }
            let expect: Vec<i32> = v1.iter().chain(&v2[500..]).copied().collect();
            assert_eq!(got, expect, "{label}");
        }
        let neg: ArrayRef = std::sync::Arc::new(Int32Array::from(vec![1, -1]));
        let big: ArrayRef = std::sync::Arc::new(Int32Array::from(vec![256]));
        assert!(small_ints(&[&neg]).is_none());
        assert!(small_ints(&[&big]).is_none());
    }
}
