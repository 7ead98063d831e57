//! Column builders for converters that append millions of rows:
//! [`Prim`] and [`OptPrim`] push to plain vectors; [`OptPrim`] costs a
//! counter increment per row while a nullable column is all null (most
//! optional sample fields are absent for a given event); and
//! [`DictKeys`] appends precomputed dictionary keys instead of hashing a
//! string per row.

use std::sync::Arc;

use arrow::array::BooleanBufferBuilder;
use arrow::array::{
    new_null_array, Array, ArrayRef, BinaryBuilder, DictionaryArray, Int32Array, PrimitiveArray,
    StringArray,
};
use arrow::buffer::{NullBuffer, ScalarBuffer};
use arrow::datatypes::{ArrowPrimitiveType, DataType, Int32Type};

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
