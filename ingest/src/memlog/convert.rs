//! Memory log rows and summaries → Arrow batches of `mem_access`,
//! `mem_fetch`, `mem_page` and `mem_map`. No bytes here: the readers in
//! [`super::lackey`], [`super::binary`] and [`super::maps`] parse.

use std::ptr::NonNull;
use std::sync::Arc;

use arrow::array::{
    ArrayRef, DictionaryArray, Int32Array, Int32Builder, Int64Array, Int64Builder, StringArray,
    StringBuilder, UInt64Array, UInt64Builder,
};
use arrow::buffer::{Buffer, ScalarBuffer};
use arrow::datatypes::{ArrowNativeType, Int32Type};

use super::collect::Collector;
use super::filter::KIND_LETTERS;
use super::maps::Mapping;
use super::pool::{self, VecPool};
use super::rows::{RowSink, Rows};
use crate::columns::Whole;
use crate::error::Result;
use crate::writer::{CaptureWriter, TableWriter};
use trawl_capture::schema;

table_columns! {
    struct AccessCols for schema::MEM_ACCESS {
        source_id: Whole<Int32Array>,
        ordinal: Whole<Int64Array>,
        kind: Whole<DictionaryArray<Int32Type>>,
        address: Whole<UInt64Array>,
        size: Whole<Int32Array>,
    }
}

table_columns! {
    struct FetchCols for schema::MEM_FETCH {
        source_id: Whole<Int32Array>,
        address: Whole<UInt64Array>,
        size: Whole<Int32Array>,
        count: Whole<Int64Array>,
        first_ordinal: Whole<Int64Array>,
        last_ordinal: Whole<Int64Array>,
    }
}

table_columns! {
    struct PageCols for schema::MEM_PAGE {
        source_id: Whole<Int32Array>,
        page: Whole<UInt64Array>,
        page_size: Whole<Int64Array>,
        fetches: Whole<Int64Array>,
        loads: Whole<Int64Array>,
        stores: Whole<Int64Array>,
        modifies: Whole<Int64Array>,
        bytes_accessed: Whole<Int64Array>,
        bytes_touched: Whole<Int64Array>,
        first_ordinal: Whole<Int64Array>,
        last_ordinal: Whole<Int64Array>,
    }
}

table_columns! {
    #[derive(Default)]
    struct MapCols for schema::MEM_MAP {
        source_id: Int32Builder,
        line: Int64Builder,
        start_address: UInt64Builder,
        end_address: UInt64Builder,
        perms: StringBuilder,
        file_offset: UInt64Builder,
        dev: StringBuilder,
        inode: Int64Builder,
        path: StringBuilder,
    }
}

/// Writes the memory tables of a capture. Tables are created at the first
/// memory input, so captures without one do not have them.
pub struct MemConverter {
    source_id: i32,
    access: Option<TableWriter>,
    fetch: Option<TableWriter>,
    page: Option<TableWriter>,
    map: Option<TableWriter>,
    kinds: ArrayRef,
    /// `source_id` values of `mem_access`, sliced for each batch.
    sids: Int32Array,
}

impl MemConverter {
    pub fn new() -> Self {
        MemConverter {
            source_id: 0,
            access: None,
            fetch: None,
            page: None,
            map: None,
            kinds: Arc::new(StringArray::from(KIND_LETTERS.to_vec())),
            sids: Int32Array::from(Vec::<i32>::new()),
        }
    }

    pub fn begin_source(&mut self, cap: &mut CaptureWriter, id: i32) -> Result<()> {
        self.source_id = id;
        self.sids = Int32Array::from(Vec::<i32>::new());
        if self.access.is_none() {
            self.access = Some(cap.open_table(&schema::MEM_ACCESS)?);
            self.fetch = Some(cap.open_table(&schema::MEM_FETCH)?);
            self.page = Some(cap.open_table(&schema::MEM_PAGE)?);
        }
        Ok(())
    }

    /// Writes the per-address fetch and per-page summaries of the input
    /// just read.
    pub fn end_source(&mut self, c: &Collector) -> Result<()> {
        let sid = self.source_id;
        let fetch = c.fetch.sorted();
        for part in fetch.chunks(256 * 1024) {
            let n = part.len();
            let mut cols = FetchCols {
                source_id: Int32Array::from(vec![sid; n]).into(),
                address: part.iter().map(|e| e.0).collect::<UInt64Array>().into(),
                size: part
                    .iter()
                    .map(|e| e.1.size as i32)
                    .collect::<Int32Array>()
                    .into(),
                count: part
                    .iter()
                    .map(|e| e.1.count as i64)
                    .collect::<Int64Array>()
                    .into(),
                first_ordinal: part
                    .iter()
                    .map(|e| e.1.first)
                    .collect::<Int64Array>()
                    .into(),
                last_ordinal: part.iter().map(|e| e.1.last).collect::<Int64Array>().into(),
            };
            if let Some(w) = &mut self.fetch {
                w.write_rows(&mut cols)?;
            }
        }
        let pages = c.page_summary();
        let ps = c.pages.page_size as i64;
        for part in pages.chunks(256 * 1024) {
            let n = part.len();
            let count = |k: usize| -> Whole<Int64Array> {
                part.iter()
                    .map(|p| p.counts[k] as i64)
                    .collect::<Int64Array>()
                    .into()
            };
            let mut cols = PageCols {
                source_id: Int32Array::from(vec![sid; n]).into(),
                page: part.iter().map(|p| p.page).collect::<UInt64Array>().into(),
                page_size: Int64Array::from(vec![ps; n]).into(),
                fetches: count(0),
                loads: count(1),
                stores: count(2),
                modifies: count(3),
                bytes_accessed: part
                    .iter()
                    .map(|p| p.bytes as i64)
                    .collect::<Int64Array>()
                    .into(),
                bytes_touched: part
                    .iter()
                    .map(|p| p.bytes_touched() as i64)
                    .collect::<Int64Array>()
                    .into(),
                first_ordinal: part.iter().map(|p| p.first).collect::<Int64Array>().into(),
                last_ordinal: part.iter().map(|p| p.last).collect::<Int64Array>().into(),
            };
            if let Some(w) = &mut self.page {
                w.write_rows(&mut cols)?;
            }
        }
        Ok(())
    }

    /// `n` copies of the source id: a slice of one array made for many
    /// batches (not a new vector each).
    fn source_ids(&mut self, n: usize) -> Int32Array {
        if self.sids.len() < n {
            self.sids = Int32Array::from(vec![self.source_id; n.max(1 << 18)]);
        }
        self.sids.slice(0, n)
    }

    /// Writes the mappings of a maps file (input `id`).
    pub fn maps(&mut self, cap: &mut CaptureWriter, id: i32, maps: &[Mapping]) -> Result<()> {
        if self.map.is_none() {
            self.map = Some(cap.open_table(&schema::MEM_MAP)?);
        }
        let mut c = MapCols::default();
        for m in maps {
            c.source_id.append_value(id);
            c.line.append_value(m.line as i64);
            c.start_address.append_value(m.start);
            c.end_address.append_value(m.end);
            c.perms.append_value(&m.perms);
            c.file_offset.append_value(m.offset);
            c.dev.append_value(&m.dev);
            c.inode.append_value(m.inode as i64);
            c.path.append_value(&m.path);
        }
        if let Some(w) = &mut self.map {
            w.write_rows(&mut c)?;
        }
        Ok(())
    }

    pub fn finish(self, cap: &mut CaptureWriter) -> Result<()> {
        for w in [self.access, self.fetch, self.page, self.map]
            .into_iter()
            .flatten()
        {
            cap.close_table(w)?;
        }
        Ok(())
    }
}

/// Owns a vector behind an Arrow buffer; gives it back to its pool when
/// the buffer's last reference is dropped.
struct Pooled<T: 'static> {
    v: Vec<T>,
    pool: &'static VecPool<T>,
}

impl<T: 'static> Drop for Pooled<T> {
    fn drop(&mut self) {
        self.pool.give(std::mem::take(&mut self.v));
    }
}

/// `v`'s elements as an Arrow buffer (no copy); the vector goes back to
/// `pool` once the buffer (every slice of it) is dropped.
pub fn pooled_buffer<T: ArrowNativeType + std::panic::RefUnwindSafe>(
    v: Vec<T>,
    pool: &'static VecPool<T>,
) -> Buffer {
    let len = std::mem::size_of_val(v.as_slice());
    // A vector's pointer is never null (dangling but aligned when empty).
    let ptr = NonNull::new(v.as_ptr() as *mut u8).unwrap_or(NonNull::dangling());
    let owner = Arc::new(Pooled { v, pool });
    // SAFETY: `ptr` points at `len` initialised bytes of the vector's heap
    // allocation, which `owner` keeps (unmoved, unchanged: the vector is
    // only touched again in `drop`) until the buffer's last reference goes.
    unsafe { Buffer::from_custom_allocation(ptr, len, owner) }
}

impl Default for MemConverter {
    fn default() -> Self {
        Self::new()
    }
}

impl RowSink for MemConverter {
    fn rows(&mut self, rows: Rows) -> Result<()> {
        let n = rows.len();
        // Every key indexes the four kind letters (one vectorised max
        // instead of try_new's check of each key).
        let top = rows.kind.iter().copied().max().unwrap_or(0) as usize;
        if top >= self.kinds.len() {
            return Err(crate::error::Error::Arrow {
                table: "mem_access".into(),
                source: arrow::error::ArrowError::InvalidArgumentError(format!(
                    "access kind code {top} has no letter"
                )),
            });
        }
        let mut keys = pool::KEYS.take(n);
        keys.extend(rows.kind.iter().map(|&k| k as i32));
        pool::KINDS.give(rows.kind);
        let keys = Int32Array::new(
            ScalarBuffer::new(pooled_buffer(keys, &pool::KEYS), 0, n),
            None,
        );
        // SAFETY: no key is null, and the largest is below the number of
        // dictionary values (checked above).
        let kind = unsafe { DictionaryArray::<Int32Type>::new_unchecked(keys, self.kinds.clone()) };
        // The vectors go back to the parsers' pools once their row group
        // is written (no copy: Arrow buffers over them).
        let mut cols = AccessCols {
            source_id: self.source_ids(n).into(),
            ordinal: Int64Array::new(
                ScalarBuffer::new(pooled_buffer(rows.ordinal, &pool::ORDINALS), 0, n),
                None,
            )
            .into(),
            kind: kind.into(),
            address: UInt64Array::new(
                ScalarBuffer::new(pooled_buffer(rows.address, &pool::ADDRESSES), 0, n),
                None,
            )
            .into(),
            // The u32 sizes reinterpreted as Int32 without a copy (sizes
            // are < 2^31: lackey's are at most a few hundred bytes).
            size: Int32Array::new(
                ScalarBuffer::new(pooled_buffer(rows.size, &pool::SIZES), 0, n),
                None,
            )
            .into(),
        };
        match &mut self.access {
            Some(w) => w.write_rows(&mut cols),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_give_their_vectors_back_when_dropped() {
        static POOL: VecPool<i64> = VecPool::new();
        let mut v = POOL.take(1000);
        v.extend(0..1000);
        let at = v.as_ptr();
        let a = Int64Array::new(ScalarBuffer::new(pooled_buffer(v, &POOL), 0, 1000), None);
        let b = a.slice(10, 5);
        drop(a);
        // A slice still holds the buffer: nothing back yet.
        let other = POOL.take(1);
        assert_ne!(other.as_ptr(), at);
        assert_eq!(b.values().as_ref(), &[10, 11, 12, 13, 14]);
        drop(b);
        let again = POOL.take(10);
        assert_eq!(again.as_ptr(), at, "the same allocation, emptied");
        assert!(again.is_empty());
    }
}
