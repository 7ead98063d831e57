//! `trawl functions`: the SQL table functions (the analyses), their
//! parameters and what they answer, from the library's specs.

use std::sync::Arc;

use anyhow::Result;
use trawl_ingest::arrow::array::{ArrayRef, StringBuilder};
use trawl_ingest::arrow::record_batch::RecordBatch;

use crate::output::{self, OutputOpts};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    out: OutputOpts,
}

pub fn run(a: Args) -> Result<()> {
    let mut func = StringBuilder::new();
    let mut param = StringBuilder::new();
    let mut how = StringBuilder::new();
    let mut ty = StringBuilder::new();
    let mut doc = StringBuilder::new();
    for spec in trawl_query::specs() {
        func.append_value(spec.name);
        param.append_null();
        how.append_null();
        ty.append_null();
        doc.append_value(spec.doc);
        for (i, p) in spec.params.iter().enumerate() {
            func.append_value(spec.name);
            param.append_value(p.name);
            how.append_value(if i < spec.positional {
                format!("position {}", i + 1)
            } else {
                format!("'{}', value", p.name)
            });
            ty.append_value(format!("{:?}", p.kind).to_lowercase());
            doc.append_value(p.doc);
        }
    }
    let cols: Vec<(&str, ArrayRef)> = vec![
        ("function", Arc::new(func.finish())),
        ("parameter", Arc::new(param.finish())),
        ("given_as", Arc::new(how.finish())),
        ("type", Arc::new(ty.finish())),
        ("description", Arc::new(doc.finish())),
    ];
    output::write(&[RecordBatch::try_from_iter(cols)?], &a.out)
}
