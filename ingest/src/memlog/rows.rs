//! Kept records as columns, what a parser says of a line that was not a
//! record, and where kept rows go.

use crate::error::Result;

/// Kept records as columns (rows of `mem_access`).
#[derive(Clone, Debug, Default)]
pub struct Rows {
    pub ordinal: Vec<i64>,
    pub kind: Vec<u8>,
    pub address: Vec<u64>,
    pub size: Vec<u32>,
}

impl Rows {
    #[inline(always)]
    pub fn push(&mut self, ord: i64, kind: u8, addr: u64, size: u32) {
        self.ordinal.push(ord);
        self.kind.push(kind);
        self.address.push(addr);
        self.size.push(size);
    }

    pub fn reserve(&mut self, n: usize) {
        self.ordinal.reserve(n);
        self.kind.reserve(n);
        self.address.reserve(n);
        self.size.reserve(n);
    }

    pub fn len(&self) -> usize {
        self.ordinal.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ordinal.is_empty()
    }
}

/// A line that was not a record, before it is placed in the input.
#[derive(Clone, Debug)]
pub struct Problem {
    /// Line in its chunk, 1-based.
    pub line: u64,
    pub kind: &'static str,
    pub message: String,
}

/// Where kept rows go: the `mem_access` converter, or the binary writer.
pub trait RowSink {
    fn rows(&mut self, rows: Rows) -> Result<()>;
}
