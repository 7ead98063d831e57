//! `perf_sample_symbolized`: every sample with its leaf's names, one flat
//! table for readers without trawl (`trawl symbolize --flat`): the leaves
//! of the capture's stacks named once each ([`LeafNames`]), then the
//! samples read back and written with those names.

use std::path::Path;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, DictionaryArray, Int32Array, Int64Array, TimestampNanosecondArray,
    UInt32Array,
};
use arrow::datatypes::{Int32Type, Int64Type, TimestampNanosecondType, UInt32Type};
use trawl_ingest::columns::{self, Whole};
use trawl_ingest::readback::{col, table_reader};
use trawl_ingest::schema;
use trawl_ingest::table_columns;
use trawl_ingest::writer::replace_table_with;
use trawl_ingest::{Error, Result};

table_columns! {
    /// `perf_sample_symbolized`: columns of `perf_sample` read back and
    /// the leaf's names, given whole.
    struct FlatCols for schema::PERF_SAMPLE_SYMBOLIZED {
        sample_id: Whole<Int64Array>,
        source_id: Whole<Int32Array>,
        time_ns: Whole<Int64Array>,
        time_utc: Whole<TimestampNanosecondArray>,
        pid: Whole<Int32Array>,
        tid: Whole<Int32Array>,
        comm: Whole<DictionaryArray<Int32Type>>,
        cpu: Whole<UInt32Array>,
        event: Whole<DictionaryArray<Int32Type>>,
        period: Whole<Int64Array>,
        cpu_mode: Whole<DictionaryArray<Int32Type>>,
        stack_id: Whole<Int64Array>,
        function: Whole<DictionaryArray<Int32Type>>,
        module: Whole<DictionaryArray<Int32Type>>,
        srcline: Whole<DictionaryArray<Int32Type>>,
        file: Whole<DictionaryArray<Int32Type>>,
        line: Whole<UInt32Array>,
    }
}

/// A frame that is the leaf of some stack, not named yet.
const WANTED: u32 = u32::MAX - 1;
/// Not a leaf frame (or no stack, in `LeafNames::stack_dense`).
const NONE: u32 = u32::MAX;

/// What a leaf frame is called in the flat table (perf's `sym`, `dso` and
/// `srcline` of the sample's ip, and the source position).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeafName<'a> {
    pub function: &'a str,
    pub module: &'a str,
    pub srcline: &'a str,
    pub file: Option<&'a str>,
    pub line: Option<u32>,
}

/// The leaves of a capture's stacks, for [`write_sample_symbolized`]: the
/// frame at depth 0 of every stack (read from the `stack` table), and the
/// names of those frames ([`LeafNames::set`]). Each distinct
/// name is held once and per leaf frame only codes, so a recording with
/// millions of distinct stacks costs a few bytes per stack and per leaf
/// frame rather than names per stack.
#[derive(Default)]
pub struct LeafNames {
    /// stack_id → its leaf's frame_id, while both are dense (they are
    /// numbered from 0 as first seen); `NONE`: no such stack.
    stack_dense: Vec<u32>,
    /// stack_id → frame_id for what `stack_dense` does not hold.
    stack_sparse: rustc_hash::FxHashMap<i64, i64>,
    /// frame_id → row of its names, `WANTED` or `NONE`.
    frame_dense: Vec<u32>,
    frame_sparse: rustc_hash::FxHashMap<i64, u32>,
    function: Names,
    module: Names,
    srcline: Names,
    file: Names,
    line: Vec<Option<u32>>,
}

/// Below this an id is an index into a vector; above, a key of a map (ids
/// from a hostile capture may be anything).
fn dense_index(id: i64, count: usize) -> Option<usize> {
    usize::try_from(id)
        .ok()
        .filter(|&i| i < 16 * count + (1 << 20) && i < NONE as usize - 1)
}

impl LeafNames {
    /// The leaf frame of every stack of the capture in `dir` (none without
    /// a `stack` table).
    pub fn read(dir: &Path) -> Result<LeafNames> {
        let mut s = LeafNames::default();
        let def = &schema::STACK;
        let Some(reader) = table_reader(
            dir,
            def,
            Some(&["stack_id", "depth", "frame_id"]),
            256 * 1024,
        )?
        else {
            return Ok(s);
        };
        let (mut stacks, mut frames) = (0usize, 0usize);
        for b in reader {
            let b = b?;
            let stack = col(&b, def, "stack_id")?.as_primitive::<Int64Type>();
            let depth = col(&b, def, "depth")?.as_primitive::<Int32Type>();
            let frame = col(&b, def, "frame_id")?.as_primitive::<Int64Type>();
            for i in 0..b.num_rows() {
                if depth.is_null(i) || depth.value(i) != 0 || stack.is_null(i) || frame.is_null(i) {
                    continue;
                }
                let (id, f) = (stack.value(i), frame.value(i));
                stacks += 1;
                let fd = dense_index(f, frames);
                match (dense_index(id, stacks), fd) {
                    (Some(i), Some(fi)) => {
                        if s.stack_dense.len() <= i {
                            s.stack_dense.resize(i + 1, NONE);
                        }
                        s.stack_dense[i] = fi as u32;
                    }
                    _ => {
                        s.stack_sparse.insert(id, f);
                    }
                }
                match fd {
                    Some(fi) => {
                        if s.frame_dense.len() <= fi {
                            s.frame_dense.resize(fi + 1, NONE);
                        }
                        if s.frame_dense[fi] == NONE {
                            s.frame_dense[fi] = WANTED;
                            frames += 1;
                        }
                    }
                    None => {
                        if s.frame_sparse.insert(f, WANTED).is_none() {
                            frames += 1;
                        }
                    }
                }
            }
        }
        Ok(s)
    }

    /// Is frame `id` the leaf of a stack, not named yet?
    pub fn wants(&self, id: i64) -> bool {
        let slot = match usize::try_from(id)
            .ok()
            .filter(|&f| f < self.frame_dense.len())
        {
            Some(f) => self.frame_dense[f],
            None => match self.frame_sparse.get(&id) {
                Some(&r) => r,
                None => return false,
            },
        };
        slot == WANTED
    }

    /// Names leaf frame `id` (frames that are no stack's leaf, or are
    /// named already, are skipped).
    pub fn set(&mut self, id: i64, name: &LeafName<'_>) {
        let row = self.line.len() as u32;
        let slot = match usize::try_from(id)
            .ok()
            .filter(|&f| f < self.frame_dense.len())
        {
            Some(f) => &mut self.frame_dense[f],
            None => match self.frame_sparse.get_mut(&id) {
                Some(r) => r,
                None => return,
            },
        };
        if *slot != WANTED {
            return;
        }
        *slot = row;
        self.function.push(Some(name.function));
        self.module.push(Some(name.module));
        self.srcline.push(Some(name.srcline));
        self.file.push(name.file);
        self.line.push(name.line);
    }

    /// The row of the names of the leaf of stack `id`.
    fn row_of_stack(&self, id: i64) -> Option<i32> {
        let f = match usize::try_from(id)
            .ok()
            .and_then(|i| self.stack_dense.get(i))
        {
            Some(&f) if f != NONE => f as i64,
            _ => *self.stack_sparse.get(&id)?,
        };
        let r = match usize::try_from(f)
            .ok()
            .and_then(|i| self.frame_dense.get(i))
        {
            Some(&r) => r,
            None => *self.frame_sparse.get(&f)?,
        };
        (r < WANTED).then_some(r as i32)
    }

    /// Leaf frames named so far.
    pub fn len(&self) -> usize {
        self.line.len()
    }

    pub fn is_empty(&self) -> bool {
        self.line.is_empty()
    }
}

/// Writes `perf_sample_symbolized` into `dir`: every sample of
/// `perf_sample` (read in file order, which is time order) with the names
/// of its stack's leaf frame from `leaves`. Samples without a stack, or
/// whose leaf `leaves` did not name, get nulls. Returns the rows written;
/// nothing is written when the capture has no `perf_sample` table.
pub fn write_sample_symbolized(dir: &Path, leaves: &mut LeafNames) -> Result<u64> {
    use arrow::compute::{cast, take};
    let def = &schema::PERF_SAMPLE_SYMBOLIZED;
    // Only the columns the flat table copies (perf_sample has 28), 64 K
    // rows at a time (256 K held ~90 MB more on the 8 GB recording).
    let wanted: Vec<&str> = def.columns.iter().map(|c| c.name).collect();
    let Some(reader) = table_reader(dir, &schema::PERF_SAMPLE, Some(&wanted), 64 * 1024)? else {
        return Ok(0);
    };
    let arrow_err = |source| Error::Arrow {
        table: def.name.into(),
        source,
    };
    let lines = UInt32Array::from(std::mem::take(&mut leaves.line));
    let mut function = std::mem::take(&mut leaves.function);
    let mut module = std::mem::take(&mut leaves.module);
    let mut srcline = std::mem::take(&mut leaves.srcline);
    let mut file = std::mem::take(&mut leaves.file);
    let leaf_of = |stack: i64| leaves.row_of_stack(stack);

    replace_table_with(dir, def, |w| {
        for b in reader {
            let b = b?;
            let n = b.num_rows();
            // A column of perf_sample as the flat table types it (null
            // in files written before it existed).
            let col = |name: &str| -> Result<ArrayRef> {
                let ty = def.columns[def.column_index(name).expect("column")]
                    .ty
                    .data_type();
                match b.column_by_name(name) {
                    Some(c) => cast(c, &ty).map_err(arrow_err),
                    None => Ok(arrow::array::new_null_array(&ty, n)),
                }
            };
            let i64s = |name: &str| col(name).map(|a| a.as_primitive::<Int64Type>().clone());
            let i32s = |name: &str| col(name).map(|a| a.as_primitive::<Int32Type>().clone());
            let dict = |name: &str| col(name).map(|a| a.as_dictionary::<Int32Type>().clone());
            let stack = i64s("stack_id")?;
            let keys: Int32Array = stack.iter().map(|id| id.and_then(leaf_of)).collect();
            let named = |names: &mut Names| names.batch(&keys).map_err(arrow_err);
            let mut cols = FlatCols {
                sample_id: i64s("sample_id")?.into(),
                source_id: i32s("source_id")?.into(),
                time_ns: i64s("time_ns")?.into(),
                time_utc: col("time_utc")?
                    .as_primitive::<TimestampNanosecondType>()
                    .clone()
                    .into(),
                pid: i32s("pid")?.into(),
                tid: i32s("tid")?.into(),
                comm: dict("comm")?.into(),
                cpu: col("cpu")?.as_primitive::<UInt32Type>().clone().into(),
                event: dict("event")?.into(),
                period: i64s("period")?.into(),
                cpu_mode: dict("cpu_mode")?.into(),
                stack_id: stack.clone().into(),
                function: named(&mut function)?.into(),
                module: named(&mut module)?.into(),
                srcline: named(&mut srcline)?.into(),
                file: named(&mut file)?.into(),
                line: take(&lines, &keys, None)
                    .map_err(arrow_err)?
                    .as_primitive::<UInt32Type>()
                    .clone()
                    .into(),
            };
            w.write(&columns::batch(&mut cols)?)?;
        }
        Ok(())
    })
}

/// One name column of the leaf frames, for the flat table: each distinct
/// name once, and per leaf its name's code. A batch gets a dictionary of
/// the names its samples use only: parquet's Arrow writer goes through a
/// dictionary's values for every batch, and a capture has millions of
/// leaves (2.1 M stacks for 22.6 M samples in bench/perf_ingest.sh's
/// recording: 48 s with the leaves as every batch's dictionary).
///
/// The distinct names are held back to back in one string, found again
/// through a table of 4-byte indices: ~13 bytes per name beyond its text
/// (an `Arc<str>` per name in a map took ~70; the 8 GB recording of
/// bench/large.sh has 840 K leaf frames, most with a srcline of their own).
#[derive(Default)]
struct Names {
    /// Distinct names, back to back.
    text: String,
    /// Per distinct name: where it ends in `text` (it starts where the
    /// previous one ends).
    ends: Vec<usize>,
    /// Indices of distinct names, hashed by their text.
    table: hashbrown::HashTable<u32>,
    /// Per leaf: its name's index; `u32::MAX` for null.
    code: Vec<u32>,
    /// Per name: its key in the batch being built (`u32::MAX`: not yet).
    local: Vec<u32>,
}

impl Names {
    /// Distinct name `i`.
    fn value(&self, i: u32) -> &str {
        let i = i as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start..self.ends[i]]
    }

    fn hash(v: &str) -> u64 {
        use std::hash::BuildHasher;
        rustc_hash::FxBuildHasher.hash_one(v)
    }

    /// Adds the name of the next leaf.
    fn push(&mut self, v: Option<&str>) {
        let c = match v {
            None => u32::MAX,
            Some(v) => {
                let h = Self::hash(v);
                match self.table.find(h, |&c| self.value(c) == v) {
                    Some(&c) => c,
                    None => {
                        let c = self.ends.len() as u32;
                        self.text.push_str(v);
                        self.ends.push(self.text.len());
                        let (text, ends) = (&self.text, &self.ends);
                        self.table.insert_unique(h, c, |&c| {
                            let i = c as usize;
                            let start = if i == 0 { 0 } else { ends[i - 1] };
                            Self::hash(&text[start..ends[i]])
                        });
                        self.local.push(u32::MAX);
                        c
                    }
                }
            }
        };
        self.code.push(c);
    }

    /// The names of a batch's samples (`leaf`: each sample's leaf row, or
    /// null), as a dictionary of the names it uses.
    fn batch(
        &mut self,
        leaf: &Int32Array,
    ) -> std::result::Result<DictionaryArray<Int32Type>, arrow::error::ArrowError> {
        let mut used: Vec<u32> = Vec::new();
        let keys: Int32Array = leaf
            .iter()
            .map(|l| {
                let c = *self.code.get(l? as usize)?;
                if c == u32::MAX {
                    return None;
                }
                let k = &mut self.local[c as usize];
                if *k == u32::MAX {
                    *k = used.len() as u32;
                    used.push(c);
                }
                Some(*k as i32)
            })
            .collect();
        let values =
            arrow::array::StringArray::from_iter_values(used.iter().map(|&c| self.value(c)));
        for &c in &used {
            self.local[c as usize] = u32::MAX;
        }
        DictionaryArray::try_new(keys, Arc::new(values))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names frames (frame_id, function) as the leaf naming would.
    fn add(l: &mut LeafNames, rows: &[(i64, &str)]) {
        for &(id, f) in rows {
            l.set(
                id,
                &LeafName {
                    function: f,
                    module: "/bin/x",
                    srcline: f,
                    file: Some("x.c"),
                    line: Some(7),
                },
            );
        }
    }

    #[test]
    fn leaf_frames_are_named_once() {
        let mut l = LeafNames::default();
        // Stacks 0, 1, 2 with leaves 3, 600000, 3; frame 5 is no leaf.
        l.frame_dense = vec![NONE; 600_001];
        l.frame_dense[3] = WANTED;
        l.frame_dense[600_000] = WANTED;
        l.stack_dense = vec![3, 600_000, 3];
        assert!(l.wants(3) && l.wants(600_000) && !l.wants(5));
        add(&mut l, &[(3, "f"), (5, "g"), (3, "again")]);
        add(&mut l, &[(600_000, "h")]);
        assert!(!l.wants(3));
        assert_eq!(l.len(), 2, "frame 5 is no leaf, frame 3 is named once");
        assert_eq!(l.row_of_stack(0), Some(0));
        assert_eq!(l.row_of_stack(1), Some(1));
        assert_eq!(l.row_of_stack(2), Some(0));
        assert_eq!(l.row_of_stack(3), None, "no such stack");
        assert_eq!(l.function.value(l.function.code[0]), "f");
        assert_eq!(l.function.value(l.function.code[1]), "h");
        assert_eq!(l.srcline.value(l.srcline.code[1]), "h");
    }

    #[test]
    fn names_are_held_once_and_given_back_by_code() {
        let mut n = Names::default();
        let words: Vec<String> = (0..20_000).map(|i| format!("f{}", i % 7_000)).collect();
        for (i, w) in words.iter().enumerate() {
            n.push((i % 11 != 0).then_some(w.as_str()));
        }
        n.push(Some(""));
        assert_eq!(
            n.ends.len(),
            7_001,
            "7,000 distinct words and the empty name"
        );
        for (i, w) in words.iter().enumerate() {
            match i % 11 {
                0 => assert_eq!(n.code[i], u32::MAX),
                _ => assert_eq!(n.value(n.code[i]), w),
            }
        }
        assert_eq!(n.value(n.code[20_000]), "");
    }

    #[test]
    fn hostile_frame_ids_are_one_range_and_a_map() {
        let mut l = LeafNames::default();
        // Ids a capture could claim: far apart, negative, near i64::MAX.
        let ids: Vec<i64> = (0..100)
            .map(|i| i << 40)
            .chain([-5, i64::MAX - 1])
            .collect();
        for (s, &f) in ids.iter().enumerate() {
            l.frame_sparse.insert(f, WANTED);
            l.stack_sparse.insert(s as i64 + (1 << 50), f);
        }
        add(&mut l, &[(i64::MAX - 1, "top"), (-5, "neg"), (7, "none")]);
        assert_eq!(l.len(), 2);
        assert_eq!(l.row_of_stack(101 + (1 << 50)), Some(0));
        assert_eq!(l.row_of_stack(100 + (1 << 50)), Some(1));
        assert_eq!(l.row_of_stack(1 << 50), None, "leaf 0 was not named");
    }
}
