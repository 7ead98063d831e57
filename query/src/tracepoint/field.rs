//! `tracepoint_field(raw, decode, offset, size [, big_endian])`: one field
//! of a tracepoint payload (`perf_sample.raw`), read as the event's format
//! lays it out (`tracepoint_field` table: `decode`, `offset`, `size`,
//! `big_endian` of the field's row).
//!
//! `decode` names the value's type, so it must be a constant: `i8`..`i64`,
//! `u8`..`u64` (Int8..UInt64), `str` (Utf8: the bytes up to the first NUL,
//! invalid UTF-8 replaced), `bytes` (Binary), `T[]` (a list of integers of
//! type T), each optionally after `loc:`, `rel:`, `loc2:`, `rel2:` or
//! `rest:` (where the data lies: `__data_loc` / `__rel_loc` descriptors of
//! 4 or 2 bytes at `offset`, or from `offset` to the payload's end). The
//! other arguments may be constants or columns. A field that does not fit
//! in its payload (a short or corrupt sample) is NULL.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, ArrowPrimitiveType, AsArray, BinaryBuilder, ListBuilder, PrimitiveBuilder,
    StringBuilder,
};
use datafusion::arrow::datatypes::{
    DataType, Field, FieldRef, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use datafusion::common::{exec_err, plan_err, Result, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};

/// Where a field's bytes lie.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Place {
    /// `size` bytes at `offset`.
    Fixed,
    /// A u32 `len << 16 | off` at `offset`; `off` from the payload's start
    /// (`__data_loc`) or from the descriptor's end (`__rel_loc`).
    Loc4 { relative: bool },
    /// A u16 `off` at `offset`: the data runs to the payload's end (text:
    /// to its NUL).
    Loc2 { relative: bool },
    /// From `offset` to the payload's end.
    Rest,
}

/// What the bytes hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Value {
    Int { bytes: u8, signed: bool },
    Text,
    Bytes,
    Array { bytes: u8, signed: bool },
}

/// A parsed `decode` argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Decode {
    place: Place,
    value: Value,
}

impl Decode {
    pub(crate) fn parse(s: &str) -> Option<Decode> {
        let (place, rest) = match s.split_once(':') {
            None => (Place::Fixed, s),
            Some(("loc", r)) => (Place::Loc4 { relative: false }, r),
            Some(("rel", r)) => (Place::Loc4 { relative: true }, r),
            Some(("loc2", r)) => (Place::Loc2 { relative: false }, r),
            Some(("rel2", r)) => (Place::Loc2 { relative: true }, r),
            Some(("rest", r)) => (Place::Rest, r),
            _ => return None,
        };
        let int = |t: &str| -> Option<(u8, bool)> {
            let (signed, bits) = match t.split_at_checked(1)? {
                ("i", b) => (true, b),
                ("u", b) => (false, b),
                _ => return None,
            };
            match bits {
                "8" => Some((1, signed)),
                "16" => Some((2, signed)),
                "32" => Some((4, signed)),
                "64" => Some((8, signed)),
                _ => None,
            }
        };
        let value = match rest {
            "str" => Value::Text,
            "bytes" => Value::Bytes,
            t => match t.strip_suffix("[]") {
                Some(e) => {
                    let (bytes, signed) = int(e)?;
                    Value::Array { bytes, signed }
                }
                None => {
                    let (bytes, signed) = int(t)?;
                    Value::Int { bytes, signed }
                }
            },
        };
        // A scalar integer sits at a fixed place.
        if matches!(value, Value::Int { .. }) && place != Place::Fixed {
            return None;
        }
        Some(Decode { place, value })
    }

    pub(crate) fn data_type(&self) -> DataType {
        fn int(bytes: u8, signed: bool) -> DataType {
            match (bytes, signed) {
                (1, true) => DataType::Int8,
                (2, true) => DataType::Int16,
                (4, true) => DataType::Int32,
                (8, true) => DataType::Int64,
                (1, false) => DataType::UInt8,
                (2, false) => DataType::UInt16,
                (4, false) => DataType::UInt32,
                _ => DataType::UInt64,
            }
        }
        match self.value {
            Value::Int { bytes, signed } => int(bytes, signed),
            Value::Text => DataType::Utf8,
            Value::Bytes => DataType::Binary,
            Value::Array { bytes, signed } => {
                DataType::List(Arc::new(Field::new_list_field(int(bytes, signed), false)))
            }
        }
    }

    /// The field's bytes in `raw`, None when they do not fit.
    fn bytes<'a>(&self, raw: &'a [u8], offset: usize, size: usize, be: bool) -> Option<&'a [u8]> {
        let read = |n: usize| -> Option<u64> {
            let b = raw.get(offset..offset.checked_add(n)?)?;
            Some(uint(b, be))
        };
        match self.place {
            Place::Fixed => raw.get(offset..offset.checked_add(size)?),
            Place::Rest => raw.get(offset..),
            Place::Loc4 { relative } => {
                let d = read(4)?;
                let base = if relative { offset + 4 } else { 0 };
                let start = base + (d & 0xffff) as usize;
                raw.get(start..start + (d >> 16) as usize)
            }
            Place::Loc2 { relative } => {
                let d = read(2)? as usize;
                let base = if relative { offset + 2 } else { 0 };
                raw.get(base + d..)
            }
        }
    }
}

/// An unsigned integer of 1 to 8 bytes.
fn uint(b: &[u8], be: bool) -> u64 {
    let mut v = 0u64;
    if be {
        for &x in b {
            v = v << 8 | u64::from(x);
        }
    } else {
        for &x in b.iter().rev() {
            v = v << 8 | u64::from(x);
        }
    }
    v
}

/// `b` (1 to 8 bytes) as a signed integer of its width.
fn int(b: &[u8], be: bool) -> i64 {
    let shift = 64 - 8 * b.len() as u32;
    ((uint(b, be) << shift) as i64) >> shift
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct TracepointField {
    signature: Signature,
}

/// The function, as sessions and a cluster's processes register it.
pub fn udf() -> ScalarUDF {
    ScalarUDF::from(TracepointField {
        signature: Signature::variadic_any(Volatility::Immutable),
    })
}

fn decode_arg(scalars: &[Option<&ScalarValue>]) -> Result<Decode> {
    match scalars.get(1).copied().flatten() {
        Some(ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s)) | ScalarValue::LargeUtf8(Some(s))) => {
            match Decode::parse(s) {
                Some(d) => Ok(d),
                None => plan_err!("tracepoint_field: decode {s:?} is not one of i8..i64, u8..u64, str, bytes, T[] (with loc:, rel:, loc2:, rel2: or rest: before it)"),
            }
        }
        _ => plan_err!("tracepoint_field(raw, decode, offset, size [, big_endian]): decode must be a constant text, e.g. 'u32' or 'loc:str'"),
    }
}

impl ScalarUDFImpl for TracepointField {
    fn name(&self) -> &str {
        "tracepoint_field"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        // Decided by the decode argument: return_field_from_args.
        plan_err!("tracepoint_field: the decode argument must be a constant")
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        if !(4..=5).contains(&args.arg_fields.len()) {
            return plan_err!(
                "tracepoint_field(raw, decode, offset, size [, big_endian]) takes 4 or 5 arguments"
            );
        }
        let d = decode_arg(args.scalar_arguments)?;
        Ok(Arc::new(Field::new(self.name(), d.data_type(), true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let n = args.number_rows;
        let scalars: Vec<Option<&ScalarValue>> = args
            .args
            .iter()
            .map(|a| match a {
                ColumnarValue::Scalar(s) => Some(s),
                ColumnarValue::Array(_) => None,
            })
            .collect();
        let d = decode_arg(&scalars)?;
        let all_scalar = scalars.iter().all(Option::is_some);
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let raw = datafusion::arrow::compute::cast(&arrays[0], &DataType::Binary)?;
        let raw = raw.as_binary::<i32>();
        let ints = |i: usize| -> Result<ArrayRef> {
            Ok(datafusion::arrow::compute::cast(
                &arrays[i],
                &DataType::Int64,
            )?)
        };
        let (offset, size) = (ints(2)?, ints(3)?);
        let (offset, size) = (
            offset.as_primitive::<Int64Type>(),
            size.as_primitive::<Int64Type>(),
        );
        let be = match arrays.get(4) {
            Some(a) => Some(datafusion::arrow::compute::cast(a, &DataType::Boolean)?),
            None => None,
        };
        let be = be.as_ref().map(|a| a.as_boolean());
        let rows = n.max(raw.len());
        // Each row's bytes of the field.
        let field = |i: usize| -> Option<&[u8]> {
            if raw.is_null(i) || offset.is_null(i) || size.is_null(i) {
                return None;
            }
            let off = usize::try_from(offset.value(i)).ok()?;
            let sz = usize::try_from(size.value(i)).ok()?;
            let big = be.is_some_and(|b| b.is_valid(i) && b.value(i));
            d.bytes(raw.value(i), off, sz, big)
        };
        let big = |i: usize| be.is_some_and(|b| b.is_valid(i) && b.value(i));
        let out: ArrayRef = match d.value {
            Value::Int { bytes, signed } => {
                let w = usize::from(bytes);
                let get = |i: usize| field(i).filter(|b| b.len() >= w).map(|b| &b[..w]);
                match (bytes, signed) {
                    (1, true) => {
                        ints_of::<Int8Type>(rows, |i| get(i).map(|b| int(b, big(i)) as i8))
                    }
                    (2, true) => {
                        ints_of::<Int16Type>(rows, |i| get(i).map(|b| int(b, big(i)) as i16))
                    }
                    (4, true) => {
                        ints_of::<Int32Type>(rows, |i| get(i).map(|b| int(b, big(i)) as i32))
                    }
                    (8, true) => ints_of::<Int64Type>(rows, |i| get(i).map(|b| int(b, big(i)))),
                    (1, false) => {
                        ints_of::<UInt8Type>(rows, |i| get(i).map(|b| uint(b, big(i)) as u8))
                    }
                    (2, false) => {
                        ints_of::<UInt16Type>(rows, |i| get(i).map(|b| uint(b, big(i)) as u16))
                    }
                    (4, false) => {
                        ints_of::<UInt32Type>(rows, |i| get(i).map(|b| uint(b, big(i)) as u32))
                    }
                    _ => ints_of::<UInt64Type>(rows, |i| get(i).map(|b| uint(b, big(i)))),
                }
            }
            Value::Text => {
                let mut b = StringBuilder::with_capacity(rows, rows * 16);
                for i in 0..rows {
                    match field(i) {
                        Some(x) => {
                            let x = &x[..memchr_nul(x)];
                            match std::str::from_utf8(x) {
                                Ok(s) => b.append_value(s),
                                Err(_) => b.append_value(String::from_utf8_lossy(x)),
                            }
                        }
                        None => b.append_null(),
                    }
                }
                Arc::new(b.finish())
            }
            Value::Bytes => {
                let mut b = BinaryBuilder::with_capacity(rows, rows * 8);
                for i in 0..rows {
                    b.append_option(field(i));
                }
                Arc::new(b.finish())
            }
            Value::Array { bytes, signed } => {
                let w = usize::from(bytes);
                match (bytes, signed) {
                    (1, true) => list_of::<Int8Type>(rows, w, &field, |b, i| int(b, big(i)) as i8),
                    (2, true) => {
                        list_of::<Int16Type>(rows, w, &field, |b, i| int(b, big(i)) as i16)
                    }
                    (4, true) => {
                        list_of::<Int32Type>(rows, w, &field, |b, i| int(b, big(i)) as i32)
                    }
                    (8, true) => list_of::<Int64Type>(rows, w, &field, |b, i| int(b, big(i))),
                    (1, false) => {
                        list_of::<UInt8Type>(rows, w, &field, |b, i| uint(b, big(i)) as u8)
                    }
                    (2, false) => {
                        list_of::<UInt16Type>(rows, w, &field, |b, i| uint(b, big(i)) as u16)
                    }
                    (4, false) => {
                        list_of::<UInt32Type>(rows, w, &field, |b, i| uint(b, big(i)) as u32)
                    }
                    _ => list_of::<UInt64Type>(rows, w, &field, |b, i| uint(b, big(i))),
                }
            }
        };
        if out.data_type() != &d.data_type() {
            return exec_err!("tracepoint_field: built {} for {:?}", out.data_type(), d);
        }
        Ok(if all_scalar {
            ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?)
        } else {
            ColumnarValue::Array(out)
        })
    }
}

/// The index of the first NUL of `b` (its length when none).
fn memchr_nul(b: &[u8]) -> usize {
    b.iter().position(|&x| x == 0).unwrap_or(b.len())
}

fn ints_of<T: ArrowPrimitiveType>(
    rows: usize,
    get: impl Fn(usize) -> Option<T::Native>,
) -> ArrayRef {
    let mut b = PrimitiveBuilder::<T>::with_capacity(rows);
    for i in 0..rows {
        b.append_option(get(i));
    }
    Arc::new(b.finish())
}

fn list_of<'a, T: ArrowPrimitiveType>(
    rows: usize,
    width: usize,
    field: &impl Fn(usize) -> Option<&'a [u8]>,
    conv: impl Fn(&[u8], usize) -> T::Native,
) -> ArrayRef {
    let mut b = ListBuilder::new(PrimitiveBuilder::<T>::new())
        .with_field(Arc::new(Field::new_list_field(T::DATA_TYPE, false)));
    for i in 0..rows {
        match field(i) {
            Some(x) => {
                for e in x.chunks_exact(width) {
                    b.values().append_value(conv(e, i));
                }
                b.append(true);
            }
            None => b.append(false),
        }
    }
    Arc::new(b.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Payload bytes worked by hand (little- and big-endian).
    #[test]
    fn fields_of_a_payload() {
        // 0: u16 2, 2: i32 -100 at 4, 8: data_loc (len 4, off 16),
        // 12: rel_loc (len 3, from 16: off 4 -> 20), 16: "abc\0", 20: "xy\0"
        let mut p = vec![0u8; 24];
        p[0..2].copy_from_slice(&2u16.to_le_bytes());
        p[4..8].copy_from_slice(&(-100i32).to_le_bytes());
        p[8..12].copy_from_slice(&(4u32 << 16 | 16).to_le_bytes());
        p[12..16].copy_from_slice(&(3u32 << 16 | 4).to_le_bytes());
        p[16..20].copy_from_slice(b"abc\0");
        p[20..23].copy_from_slice(b"xy\0");
        let d = |s: &str| Decode::parse(s).unwrap();
        assert_eq!(d("loc:str").bytes(&p, 8, 4, false), Some(&b"abc\0"[..]));
        assert_eq!(d("rel:str").bytes(&p, 12, 4, false), Some(&b"xy\0"[..]));
        assert_eq!(
            d("i32").bytes(&p, 4, 4, false).map(|b| int(b, false)),
            Some(-100)
        );
        assert_eq!(
            d("u32").bytes(&p, 4, 4, false).map(|b| uint(b, false)),
            Some(0xffff_ff9c)
        );
        assert_eq!(
            d("u16").bytes(&p, 0, 2, true).map(|b| uint(b, true)),
            Some(0x0200)
        );
        assert_eq!(d("u64").bytes(&p, 20, 8, false), None);
        assert_eq!(d("rest:bytes").bytes(&p, 20, 0, false), Some(&p[20..]));
        assert_eq!(int(&[0x80], false), -128);
        assert_eq!(int(&[0xff, 0x7f], true), -129);
        assert!(Decode::parse("loc:u32").is_none());
        assert!(Decode::parse("f32").is_none());
        assert!(Decode::parse("x:str").is_none());
        assert_eq!(
            d("i16[]").data_type(),
            DataType::List(Arc::new(Field::new_list_field(DataType::Int16, false)))
        );
    }
}
