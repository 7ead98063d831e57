//! Reading values out of result batches and building small ones: the
//! helpers every analysis that post-processes rows in Rust uses.

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::record_batch::RecordBatch;

use crate::error::Result;

/// A batch of named columns (a column is nullable when it holds nulls).
pub fn batch_of(cols: Vec<(&str, datafusion::arrow::array::ArrayRef)>) -> Result<RecordBatch> {
    Ok(RecordBatch::try_from_iter(cols).map_err(datafusion::error::DataFusionError::from)?)
}

/// A string-like column as small ids (null: the empty string), new
/// strings numbered in order of arrival into `ids`, without a string per
/// row (runs of the same string are looked up once).
pub fn string_ids<H: std::hash::BuildHasher>(
    a: &datafusion::arrow::array::ArrayRef,
    ids: &mut std::collections::HashMap<String, u32, H>,
) -> Result<Vec<u32>> {
    ids_of(a, |v| {
        let n = ids.len() as u32;
        *ids.entry(v.to_string()).or_insert(n)
    })
}

/// The ids `intern` gives a string-like column's rows (null: the empty
/// string), asked once per run of the same string.
fn ids_of(
    a: &datafusion::arrow::array::ArrayRef,
    mut intern: impl FnMut(&str) -> u32,
) -> Result<Vec<u32>> {
    use datafusion::arrow::datatypes::{DataType, Int32Type};
    // A dictionary's values are asked once each, its rows by key.
    if let DataType::Dictionary(k, v) = a.data_type() {
        if **k == DataType::Int32 && **v == DataType::Utf8 {
            let d = a.as_dictionary::<Int32Type>();
            let values = d.values().as_string::<i32>();
            let mut of_value: Vec<Option<u32>> = vec![None; values.len()];
            let mut empty = None;
            let mut out = Vec::with_capacity(d.len());
            for i in 0..d.len() {
                let id = if d.is_null(i) {
                    *empty.get_or_insert_with(|| intern(""))
                } else {
                    let k = d.keys().value(i) as usize;
                    match of_value[k] {
                        Some(id) => id,
                        None => {
                            let v = if values.is_null(k) {
                                ""
                            } else {
                                values.value(k)
                            };
                            let id = intern(v);
                            of_value[k] = Some(id);
                            id
                        }
                    }
                };
                out.push(id);
            }
            return Ok(out);
        }
    }
    let a = datafusion::arrow::compute::cast(a, &datafusion::arrow::datatypes::DataType::Utf8)
        .map_err(datafusion::error::DataFusionError::from)?;
    let a = a.as_string::<i32>();
    let mut out = Vec::with_capacity(a.len());
    let mut last: Option<(&str, u32)> = None;
    for i in 0..a.len() {
        let v = if a.is_null(i) { "" } else { a.value(i) };
        let id = match last {
            Some((l, id)) if l == v => id,
            _ => intern(v),
        };
        last = Some((v, id));
        out.push(id);
    }
    Ok(out)
}

/// Small integer ids for strings (captures, domains, function names),
/// numbered in order of arrival, and the strings back (one allocation per
/// new string: the table holds ids, hashed by their strings).
#[derive(Clone, Debug, Default)]
pub struct Interner {
    ids: hashbrown::HashTable<u32>,
    names: Vec<String>,
}

fn hash_str(s: &str) -> u64 {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one(s)
}

impl Interner {
    /// `names`, numbered in their order (the first occurrence of a
    /// repeated name keeps its id).
    pub fn from_names(names: Vec<String>) -> Interner {
        let mut i = Interner::default();
        for n in names {
            i.id(&n);
        }
        i
    }

    pub fn id(&mut self, s: &str) -> u32 {
        let names = &self.names;
        let h = hash_str(s);
        if let Some(&i) = self.ids.find(h, |&i| names[i as usize] == s) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(s.to_string());
        let names = &self.names;
        self.ids
            .insert_unique(h, i, |&j| hash_str(&names[j as usize]));
        i
    }

    pub fn name(&self, i: u32) -> &str {
        &self.names[i as usize]
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The strings, by id.
    pub fn into_names(self) -> Vec<String> {
        self.names
    }

    /// The ids of a string-like column's rows (null: the empty string).
    pub fn column(&mut self, a: &datafusion::arrow::array::ArrayRef) -> Result<Vec<u32>> {
        ids_of(a, |v| self.id(v))
    }
}

/// The values of a string-like column (Utf8, Utf8View, LargeUtf8,
/// dictionary), as owned strings.
pub fn string_values(a: &datafusion::arrow::array::ArrayRef) -> Vec<Option<String>> {
    use datafusion::arrow::datatypes::DataType;
    let Ok(c) = datafusion::arrow::compute::cast(a, &DataType::Utf8) else {
        return vec![None; a.len()];
    };
    let c = c.as_string::<i32>();
    (0..c.len())
        .map(|i| (!c.is_null(i)).then(|| c.value(i).to_string()))
        .collect()
}

/// The values of a numeric column as f64.
pub fn float_values(a: &datafusion::arrow::array::ArrayRef) -> Vec<Option<f64>> {
    use datafusion::arrow::datatypes::{DataType, Float64Type};
    let Ok(c) = datafusion::arrow::compute::cast(a, &DataType::Float64) else {
        return vec![None; a.len()];
    };
    let c = c.as_primitive::<Float64Type>();
    (0..c.len())
        .map(|i| (!c.is_null(i)).then(|| c.value(i)))
        .collect()
}

/// Row `i` of column `col` as i64 (cast), `None` when null.
pub fn i64_at(b: &RecordBatch, col: usize, i: usize) -> Option<i64> {
    let c = datafusion::arrow::compute::cast(
        b.column(col),
        &datafusion::arrow::datatypes::DataType::Int64,
    )
    .ok()?;
    let c = c.as_primitive::<datafusion::arrow::datatypes::Int64Type>();
    (!c.is_null(i)).then(|| c.value(i))
}

/// Splits a script into statements at `;` outside quotes and comments.
pub fn split_statements(script: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = script.chars().peekable();
    let (mut sq, mut dq) = (false, false);
    while let Some(c) = chars.next() {
        match c {
            '\'' if !dq => sq = !sq,
            '"' if !sq => dq = !dq,
            '-' if !sq && !dq && chars.peek() == Some(&'-') => {
                // Line comment: skip to end of line.
                for c2 in chars.by_ref() {
                    if c2 == '\n' {
                        break;
                    }
                }
                cur.push('\n');
                continue;
            }
            ';' if !sq && !dq => {
                if !cur.trim().is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn splits_statements_outside_quotes_and_comments() {
        let v = super::split_statements("SELECT ';' AS a; -- x; y\nSELECT 2;\n");
        assert_eq!(v.len(), 2);
        assert!(v[0].contains("';'"));
    }
}
