//! How far an ingest has read, for a progress display on another thread,
//! and whether it was asked to stop.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::error::{Error, Result};

/// The input of one ingest read so far: `base` (the inputs before this
/// one) plus an offset in the current input.
#[derive(Clone, Debug)]
pub struct Progress {
    pub(crate) done: Arc<AtomicU64>,
    pub(crate) base: u64,
    pub(crate) cancel: Option<Arc<std::sync::atomic::AtomicBool>>,
}

impl Progress {
    /// `off` bytes of the current input are read; `Err` when the ingest
    /// was cancelled ([`IngestOptions::cancel`]).
    pub fn at(&self, off: u64) -> Result<()> {
        self.done.fetch_max(self.base + off, Ordering::Relaxed);
        match &self.cancel {
            Some(c) if c.load(Ordering::Relaxed) => Err(Error::Interrupted),
            _ => Ok(()),
        }
    }
}
