//! # trawl-capture
//!
//! One place for the capture: where a capture keeps its tables
//! ([`layout`]) and the schema of every table trawl writes, with a sentence
//! of documentation per column ([`schema`], rendered as `docs/tables.md`).
//! The ingest crate writes captures by these definitions and the query
//! crate reads them; neither needs the other. [`cloud`]: captures and
//! archives in object storage (`s3://...`).

pub mod cloud;
pub mod layout;
pub mod schema;
pub mod units;
