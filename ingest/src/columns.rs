//! Column builders for converters that append millions of rows:
//! [`Prim`] and [`OptPrim`] push to plain vectors; [`OptPrim`] costs a
//! counter increment per row while a nullable column is all null (most
//! optional sample fields are absent for a given event); and
//! [`DictKeys`] appends precomputed dictionary keys instead of hashing a
//! string per row.
//!
//! A converter declares the builders of a table with [`table_columns!`]:
//! one field per column, named like the column, in the table's order. The
//! declaration is checked against the table's [`TableDef`] when the crate
//! compiles (names, order and types: see [`check_columns`]), and the
//! generated `finish` hands the writer the columns in that order, so no
//! converter lists its columns by position.

use std::sync::Arc;

pub use arrow::array::ArrayRef;
use arrow::array::BooleanBufferBuilder;
use arrow::array::{
    new_null_array, Array, BinaryBuilder, DictionaryArray, Int32Array, PrimitiveArray, StringArray,
};
use arrow::array::{
    ArrayBuilder, BooleanBuilder, ListBuilder, PrimitiveBuilder, StringBuilder,
    StringDictionaryBuilder,
};
use arrow::buffer::{NullBuffer, ScalarBuffer};
use arrow::datatypes::{
    ArrowPrimitiveType, DataType, Float64Type, Int32Type, Int64Type, UInt32Type, UInt64Type,
};
use trawl_capture::schema::ColType;
pub use trawl_capture::schema::TableDef;

/// A builder of one column: [`Self::TYPE`] is the column type it builds.
pub trait Column {
    const TYPE: ColType;
    /// The rows appended since the last call, as one array.
    fn finish_column(&mut self) -> ArrayRef;
    /// Rows appended since the last `finish_column`.
    fn rows(&self) -> usize;
}

/// Arrow primitive types that are a [`ColType`].
pub trait PrimCol: ArrowPrimitiveType {
    const COL: ColType;
}

macro_rules! prim_col {
    ($($t:ty => $c:ident),*) => {$(
        impl PrimCol for $t {
            const COL: ColType = ColType::$c;
        }
    )*};
}
prim_col!(Int32Type => Int32, Int64Type => Int64, UInt32Type => UInt32,
    UInt64Type => UInt64, Float64Type => Float64);

impl<T: PrimCol> Column for Prim<T> {
    const TYPE: ColType = T::COL;
    fn finish_column(&mut self) -> ArrayRef {
        self.finish()
    }
    fn rows(&self) -> usize {
        self.vals.len()
    }
}

impl<T: PrimCol> Column for OptPrim<T> {
    const TYPE: ColType = T::COL;
    fn finish_column(&mut self) -> ArrayRef {
        self.finish()
    }
    fn rows(&self) -> usize {
        self.len
    }
}

impl Column for OptBinary {
    const TYPE: ColType = ColType::Binary;
    fn finish_column(&mut self) -> ArrayRef {
        self.finish()
    }
    fn rows(&self) -> usize {
        self.len
    }
}

impl Column for DictKeys {
    const TYPE: ColType = ColType::DictUtf8;
    fn finish_column(&mut self) -> ArrayRef {
        self.finish()
    }
    fn rows(&self) -> usize {
        self.keys.len
    }
}

impl<T: PrimCol> Column for PrimitiveBuilder<T> {
    const TYPE: ColType = T::COL;
    fn finish_column(&mut self) -> ArrayRef {
        ArrayBuilder::finish(self)
    }
    fn rows(&self) -> usize {
        ArrayBuilder::len(self)
    }
}

macro_rules! arrow_col {
    ($($t:ty => $c:ident),*) => {$(
        impl Column for $t {
            const TYPE: ColType = ColType::$c;
            fn finish_column(&mut self) -> ArrayRef {
                ArrayBuilder::finish(self)
            }
            fn rows(&self) -> usize {
                ArrayBuilder::len(self)
            }
        }
    )*};
}
arrow_col!(BooleanBuilder => Bool, StringBuilder => Utf8,
    StringDictionaryBuilder<Int32Type> => DictUtf8, BinaryBuilder => Binary,
    ListBuilder<PrimitiveBuilder<UInt64Type>> => ListUInt64);

/// A time on UTC (`ColType::TimeUtc`): nanoseconds since the epoch pushed
/// as `i64`, handed out as `timestamp[ns, UTC]` (the same buffers,
/// reinterpreted).
#[derive(Default)]
pub struct UtcTime(OptPrim<Int64Type>);

impl UtcTime {
    #[inline(always)]
    pub fn push(&mut self, ns: Option<i64>) {
        self.0.push(ns)
    }
}

impl Column for UtcTime {
    const TYPE: ColType = ColType::TimeUtc;
    fn finish_column(&mut self) -> ArrayRef {
        use arrow::array::AsArray;
        use arrow::datatypes::TimestampNanosecondType;
        let a = self.0.finish();
        Arc::new(
            a.as_primitive::<Int64Type>()
                .reinterpret_cast::<TimestampNanosecondType>()
                .with_timezone("UTC"),
        )
    }
    fn rows(&self) -> usize {
        self.0.len
    }
}

/// A column given whole, as an array built elsewhere (e.g. over a
/// parser's vectors without a copy). Empty once taken.
pub struct Whole<A>(Option<A>);

impl<A> From<A> for Whole<A> {
    fn from(a: A) -> Self {
        Whole(Some(a))
    }
}

macro_rules! whole_col {
    ($($t:ty => $c:ident),*) => {$(
        impl Column for Whole<$t> {
            const TYPE: ColType = ColType::$c;
            fn finish_column(&mut self) -> ArrayRef {
                match self.0.take() {
                    Some(a) => Arc::new(a),
                    None => arrow::array::new_empty_array(&Self::TYPE.data_type()),
                }
            }
            fn rows(&self) -> usize {
                self.0.as_ref().map_or(0, |a| a.len())
            }
        }
    )*};
}
whole_col!(Int32Array => Int32, arrow::array::Int64Array => Int64,
    arrow::array::UInt32Array => UInt32,
    arrow::array::UInt64Array => UInt64, StringArray => Utf8,
    DictionaryArray<Int32Type> => DictUtf8,
    arrow::array::TimestampNanosecondArray => TimeUtc);

/// The builders of one table's columns, declared with [`table_columns!`].
pub trait TableColumns {
    /// The table these are the columns of.
    const DEF: &'static TableDef;
    /// The rows appended so far, a column each in the table's order; the
    /// builders are left empty.
    fn finish(&mut self) -> Vec<ArrayRef>;
    /// Rows appended since the last `finish` (those of the first column).
    fn rows(&self) -> usize;
}

/// The rows appended to `cols` as a batch of their table (types and
/// nullability checked against its definition); empties the builders.
pub fn batch<C: TableColumns>(
    cols: &mut C,
) -> crate::error::Result<arrow::record_batch::RecordBatch> {
    arrow::record_batch::RecordBatch::try_new(C::DEF.schema(), cols.finish()).map_err(|source| {
        crate::error::Error::Arrow {
            table: C::DEF.name.into(),
            source,
        }
    })
}

/// `batch` of table `def` with its column `name` replaced by what `f`
/// makes of it (types and nullability checked again).
pub fn replace_column(
    def: &TableDef,
    batch: &arrow::record_batch::RecordBatch,
    name: &str,
    f: impl FnOnce(&ArrayRef) -> ArrayRef,
) -> crate::error::Result<arrow::record_batch::RecordBatch> {
    let mut cols = batch.columns().to_vec();
    if let Some((at, _)) = batch.schema().column_with_name(name) {
        cols[at] = f(&cols[at]);
    }
    arrow::record_batch::RecordBatch::try_new(batch.schema(), cols).map_err(|source| {
        crate::error::Error::Arrow {
            table: def.name.into(),
            source,
        }
    })
}

/// Fails the build unless `cols` (a builder struct's field names and
/// column types, in declaration order) are the columns of `def`, in its
/// order. Called in a `const` by [`table_columns!`]; a mismatch stops the
/// compilation at the declaration, with the first wrong field's name.
pub const fn check_columns(def: &TableDef, cols: &[(&str, ColType)]) {
    if def.columns.len() != cols.len() {
        panic!("a table_columns! declaration does not have its table's number of columns");
    }
    let mut i = 0;
    while i < cols.len() {
        let (name, ty) = cols[i];
        let name = match name.as_bytes() {
            // `r#type` names the column `type`.
            [b'r', b'#', ..] => name.split_at(2).1,
            _ => name,
        };
        if !str_eq(def.columns[i].name, name) {
            panic!("{}", name);
        }
        if def.columns[i].ty as u8 != ty as u8 {
            panic!("{}", name);
        }
        i += 1;
    }
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Declares the builders of one table: a struct with a field per column,
/// each named like its column (`r#type` for `type`) and of a [`Column`]
/// type, in the order of the table's [`TableDef`]. The compiler checks
/// that (see [`check_columns`]). The struct is a [`TableColumns`]:
/// [`TableWriter::write_rows`](crate::writer::TableWriter::write_rows)
/// writes what was appended.
///
/// ```
/// use trawl_ingest::arrow::array::{Int32Builder, StringBuilder};
/// use trawl_ingest::columns::{batch, TableColumns};
/// use trawl_ingest::{schema, table_columns};
///
/// table_columns! {
///     #[derive(Default)]
///     struct MetaCols for schema::CAPTURE_META {
///         source_id: Int32Builder,
///         key: StringBuilder,
///         value: StringBuilder,
///     }
/// }
/// let mut c = MetaCols::default();
/// c.source_id.append_value(0);
/// c.key.append_value("hostname");
/// c.value.append_value("box");
/// assert_eq!(c.rows(), 1);
/// let b = batch(&mut c).unwrap();
/// assert_eq!(b.schema().field(1).name(), "key");
/// ```
///
/// Columns out of the table's order, misnamed, missing or of another type
/// do not compile:
///
/// ```compile_fail
/// use trawl_ingest::arrow::array::{Int32Builder, StringBuilder};
/// use trawl_ingest::{schema, table_columns};
///
/// table_columns! {
///     #[derive(Default)]
///     struct MetaCols for schema::CAPTURE_META {
///         source_id: Int32Builder,
///         value: StringBuilder,
///         key: StringBuilder,
///     }
/// }
/// ```
#[macro_export]
macro_rules! table_columns {
    (@first $s:ident $f:ident $($rest:ident)*) => {
        $crate::columns::Column::rows(&$s.$f)
    };
    ($(#[$m:meta])* $vis:vis struct $name:ident for $def:path {
        $($field:ident : $ty:ty),* $(,)?
    }) => {
        $(#[$m])*
        $vis struct $name {
            $(pub $field: $ty,)*
        }

        impl $crate::columns::TableColumns for $name {
            const DEF: &'static $crate::columns::TableDef = &$def;

            fn finish(&mut self) -> Vec<$crate::columns::ArrayRef> {
                vec![$($crate::columns::Column::finish_column(&mut self.$field),)*]
            }

            fn rows(&self) -> usize {
                $crate::table_columns!(@first self $($field)*)
            }
        }

        const _: () = $crate::columns::check_columns(
            &$def,
            &[$((stringify!($field), <$ty as $crate::columns::Column>::TYPE),)*],
        );
    };
}

/// A nullable primitive column. Values go to a plain `Vec` (a push is a
/// few instructions); the validity bitmap exists only once a null follows a
/// value, and a column that stays null costs a counter increment per row.
pub struct OptPrim<T: ArrowPrimitiveType> {
    vals: Vec<T::Native>,
    valid: Option<BooleanBufferBuilder>,
    len: usize,
    any: bool,
    /// The last all-null array handed out: batches have the same length,
    /// so an absent field costs one allocation per file, not per batch.
    nulls: Option<ArrayRef>,
}

impl<T: ArrowPrimitiveType> Default for OptPrim<T> {
    fn default() -> Self {
        OptPrim {
            vals: Vec::new(),
            valid: None,
            len: 0,
            any: false,
            nulls: None,
        }
    }
}

impl<T: ArrowPrimitiveType> OptPrim<T> {
    #[inline(always)]
    pub fn push(&mut self, v: Option<T::Native>) {
        match v {
            Some(x) => {
                if !self.any {
                    self.first_value();
                }
                self.vals.push(x);
                if let Some(b) = &mut self.valid {
                    b.append(true);
                }
            }
            None => {
                if self.any {
                    self.null_after_values();
                }
            }
        }
        self.len += 1;
    }

    /// Rows pushed since the last [`OptPrim::finish`].
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Rewrites the values of rows `from..` with `f` (a null row's
    /// placeholder too, which stays null).
    pub fn map_from(&mut self, from: usize, f: impl Fn(T::Native) -> T::Native) {
        if let Some(v) = self.vals.get_mut(from..) {
            for x in v {
                *x = f(*x);
            }
        }
    }

    #[inline(never)]
    fn null_after_values(&mut self) {
        self.vals.push(T::Native::default());
        let len = self.len;
        self.valid
            .get_or_insert_with(|| {
                let mut b = BooleanBufferBuilder::new(len.max(1024));
                b.append_n(len, true);
                b
            })
            .append(false);
    }

    #[cold]
    fn first_value(&mut self) {
        self.any = true;
        self.vals.reserve(self.len.max(64 * 1024));
        self.vals.resize(self.len, T::Native::default());
        if self.len > 0 {
            let mut b = BooleanBufferBuilder::new(self.len.max(1024));
            b.append_n(self.len, false);
            self.valid = Some(b);
        }
    }

    pub fn finish(&mut self) -> ArrayRef {
        let n = std::mem::take(&mut self.len);
        if !std::mem::take(&mut self.any) {
            return null_array(&mut self.nulls, &T::DATA_TYPE, n);
        }
        let vals = std::mem::take(&mut self.vals);
        let nulls = self.valid.take().map(|mut b| NullBuffer::new(b.finish()));
        Arc::new(PrimitiveArray::<T>::new(ScalarBuffer::from(vals), nulls))
    }
}

/// A non-null primitive column on a plain `Vec`.
pub struct Prim<T: ArrowPrimitiveType> {
    vals: Vec<T::Native>,
}

impl<T: ArrowPrimitiveType> Default for Prim<T> {
    fn default() -> Self {
        Prim { vals: Vec::new() }
    }
}

impl<T: ArrowPrimitiveType> Prim<T> {
    #[inline(always)]
    pub fn push(&mut self, v: T::Native) {
        self.vals.push(v);
    }

    pub fn finish(&mut self) -> ArrayRef {
        let vals = std::mem::replace(&mut self.vals, Vec::with_capacity(64 * 1024));
        Arc::new(PrimitiveArray::<T>::new(ScalarBuffer::from(vals), None))
    }
}

/// A non-null boolean column on a plain `Vec<bool>`, packed into bits
/// when the batch is handed out: arrow's `BooleanBuilder` checks its
/// capacity and sets one bit per append, about 20 ns a row of
/// `perf_sample.has_user_stack` on the sample loop's thread.
#[derive(Default)]
pub struct Bools {
    vals: Vec<bool>,
}

impl Bools {
    #[inline(always)]
    pub fn push(&mut self, v: bool) {
        self.vals.push(v);
    }

    pub fn finish(&mut self) -> ArrayRef {
        let vals = &self.vals;
        let bits = arrow::buffer::BooleanBuffer::collect_bool(vals.len(), |i| vals[i]);
        self.vals.clear();
        Arc::new(arrow::array::BooleanArray::new(bits, None))
    }
}

impl Column for Bools {
    const TYPE: ColType = ColType::Bool;
    fn finish_column(&mut self) -> ArrayRef {
        self.finish()
    }
    fn rows(&self) -> usize {
        self.vals.len()
    }
}

/// An all-null array of `len` rows, reusing `cache` when it has that length.
fn null_array(cache: &mut Option<ArrayRef>, ty: &DataType, len: usize) -> ArrayRef {
    match cache {
        Some(a) if a.len() == len => a.clone(),
        _ => {
            let a = new_null_array(ty, len);
            *cache = Some(a.clone());
            a
        }
    }
}

/// A nullable binary column, materialized at its first non-null value.
#[derive(Default)]
pub struct OptBinary {
    b: Option<BinaryBuilder>,
    len: usize,
    nulls: Option<ArrayRef>,
}

impl OptBinary {
    #[inline]
    pub fn push(&mut self, v: Option<&[u8]>) {
        match (&mut self.b, v) {
            (None, None) => {}
            (None, Some(x)) => {
                let mut b = BinaryBuilder::new();
                for _ in 0..self.len {
                    b.append_null();
                }
                b.append_value(x);
                self.b = Some(b);
            }
            (Some(b), v) => b.append_option(v),
        }
        self.len += 1;
    }

    pub fn finish(&mut self) -> ArrayRef {
        let n = std::mem::take(&mut self.len);
        match self.b.take() {
            Some(mut b) => Arc::new(b.finish()),
            None => null_array(&mut self.nulls, &DataType::Binary, n),
        }
    }
}

/// A dictionary-encoded string column whose keys the converter already
/// knows (an event index, an interned command name): appending is pushing
/// an integer. The dictionary is shared by all batches and only grows.
#[derive(Default)]
pub struct DictKeys {
    keys: OptPrim<Int32Type>,
    values: Vec<Arc<str>>,
    index: rustc_hash::FxHashMap<Arc<str>, i32>,
}

impl DictKeys {
    /// The key of `s`, adding it to the dictionary when new.
    pub fn intern(&mut self, s: &str) -> i32 {
        if let Some(&k) = self.index.get(s) {
            return k;
        }
        let k = self.values.len() as i32;
        let a: Arc<str> = s.into();
        self.values.push(a.clone());
        self.index.insert(a, k);
        k
    }

    #[inline(always)]
    pub fn push(&mut self, key: Option<i32>) {
        self.keys.push(key);
    }

    pub fn finish(&mut self) -> ArrayRef {
        let keys = self.keys.finish();
        let keys = keys
            .as_any()
            .downcast_ref::<Int32Array>()
            .cloned()
            .unwrap_or_else(|| Int32Array::new_null(keys.len()));
        let values = Arc::new(StringArray::from_iter_values(
            self.values.iter().map(|s| &**s),
        ));
        Arc::new(
            DictionaryArray::<Int32Type>::try_new(keys, values)
                .expect("keys are indexes of interned values"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::Int64Type;

    #[test]
    fn bools_round_trip_across_batches() {
        let mut c = Bools::default();
        let first: Vec<bool> = (0..70).map(|i| i % 3 == 0 || i == 69).collect();
        for &v in &first {
            c.push(v);
        }
        let a = c.finish();
        let a = a.as_boolean();
        assert_eq!(a.null_count(), 0);
        assert_eq!(a.iter().map(Option::unwrap).collect::<Vec<_>>(), first);
        c.push(true);
        assert_eq!(c.rows(), 1);
        let b = c.finish();
        assert_eq!((b.len(), b.as_boolean().value(0)), (1, true));
    }

    #[test]
    fn lazy_columns_round_trip() {
        let mut c = OptPrim::<Int64Type>::default();
        c.push(None);
        c.push(None);
        c.push(Some(5));
        c.push(None);
        let a = c.finish();
        let a = a.as_primitive::<Int64Type>();
        assert_eq!(a.len(), 4);
        assert_eq!(
            (a.is_null(0), a.is_null(1), a.value(2), a.is_null(3)),
            (true, true, 5, true)
        );
        c.push(None);
        let a = c.finish();
        assert_eq!((a.len(), a.null_count()), (1, 1));

        let mut d = DictKeys::default();
        let k = d.intern("x");
        d.push(Some(k));
        d.push(None);
        let y = d.intern("y");
        d.push(Some(y));
        let a = d.finish();
        let a = a.as_dictionary::<Int32Type>();
        assert_eq!(a.len(), 3);
        assert!(a.is_null(1));
    }
}
