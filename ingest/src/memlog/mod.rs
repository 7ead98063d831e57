//! Memory access logs: valgrind lackey text (`--trace-mem=yes`) and trawl's
//! binary memory log → `mem_access`, `mem_fetch`, `mem_page`; saved
//! `/proc/PID/maps` → `mem_map` (Mibu et al., memory access analysis for
//! memory saving).
//!
//! - [`lackey`]: text lines → [`lackey::Chunk`]s of typed records, in
//!   parallel over line-aligned blocks (no Arrow).
//! - [`binary`]: the binary log format: [`binary::Writer`] (records →
//!   bytes) and [`binary::read`] (bytes → records).
//! - [`maps`]: `/proc/PID/maps` lines → mappings.
//! - [`Collector`]: puts chunks in order (instruction ordinals and line
//!   numbers continue across chunks), keeps per-address fetch and per-page
//!   summaries, and hands rows to a [`RowSink`].
//! - [`convert`]: rows and summaries → Arrow batches of the tables.
//!
//! Every record gets an instruction **ordinal**: for a data access the
//! number of `I` records before it (so a load or store carries the 1-based
//! index of the instruction that made it), for a fetch the 1-based index of
//! its instruction. Filters (address ranges, kinds) drop records while
//! reading; ordinals still count every instruction.

pub mod binary;
pub mod convert;
pub mod lackey;
pub mod maps;
pub mod pool;

mod collect;
mod fetch;
mod filter;
mod pages;
mod rows;
mod run;
mod text;

pub use collect::{Axis, Collector};
pub use fetch::{chunk_key, FetchCache, FetchMap, FetchStat};
pub use filter::{Filter, KIND_I, KIND_L, KIND_LETTERS, KIND_M, KIND_S};
pub use pages::{PageStat, PageStats, MAX_PAGE_SIZE, MIN_PAGE_SIZE};
pub use rows::{Problem, RowSink, Rows};
pub use run::{
    ingest_binary, ingest_text, read_binary, read_text, to_binary, ConvertSummary, MemOptions,
    MemStats,
};
pub use text::{TextSource, BLOCK_BYTES};
pub use trawl_capture::units::parse_size;
