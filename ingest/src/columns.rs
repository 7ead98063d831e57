//! Column builders for converters that append millions of rows:
//! [`OptPrim`] costs nothing per row while a nullable column is all null
//! (most optional sample fields are absent for a given event), and
//! [`DictKeys`] appends precomputed dictionary keys instead of hashing a
//! string per row.

use std::sync::Arc;

use arrow::array::{
    new_null_array, ArrayRef, BinaryBuilder, DictionaryArray, Int32Array, PrimitiveBuilder,
    StringArray,
};
use arrow::datatypes::{ArrowPrimitiveType, DataType, Int32Type};

/// A nullable primitive column, materialized at its first non-null value.
pub struct OptPrim<T: ArrowPrimitiveType> {
    b: Option<PrimitiveBuilder<T>>,
    len: usize,
}

impl<T: ArrowPrimitiveType> Default for OptPrim<T> {
    fn default() -> Self {
        OptPrim { b: None, len: 0 }
    }
}

impl<T: ArrowPrimitiveType> OptPrim<T> {
    #[inline]
    pub fn push(&mut self, v: Option<T::Native>) {
        match (&mut self.b, v) {
            (None, None) => {}
            (None, Some(x)) => {
                let mut b = PrimitiveBuilder::<T>::with_capacity(self.len.max(1024));
                b.append_nulls(self.len);
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
            None => new_null_array(&T::DATA_TYPE, n),
        }
    }
}

/// A nullable binary column, materialized at its first non-null value.
#[derive(Default)]
pub struct OptBinary {
    b: Option<BinaryBuilder>,
    len: usize,
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
            None => new_null_array(&DataType::Binary, n),
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

    #[inline]
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
