//! Where `annotate` gets the machine code it shows. The `instruction`
//! table holds only the functions someone asked to see: before a call of
//! `annotate(function, ...)` is planned, the session's [`CodeSource`]
//! (trawl-enrich's decoder, which the CLI and the Python package give the
//! sessions they open) makes sure each capture holds that function's code,
//! and the call then reads `instruction` as the files are now (a
//! segment of an archive holds the code for all its captures). Without a
//! source (a session of a library user, a cluster) `annotate` reads what
//! the captures hold, as it does for captures in object stores.

use std::sync::Arc;

use datafusion::catalog::TableProvider;

use crate::functions::{text, texts, Bound};

/// `annotate`'s input: `instruction` after the code source was asked for
/// the call's function in the captures it reads.
pub(crate) fn annotate_inputs(
    b: &Bound,
    shared: &Arc<crate::session::Shared>,
) -> datafusion::error::Result<Vec<(&'static str, Arc<dyn TableProvider>)>> {
    let Some(function) = text(b, "function") else {
        return Ok(Vec::new());
    };
    let Some(src) = shared.code.get() else {
        return Ok(Vec::new());
    };
    let module = text(b, "module");
    let only = texts(b, "capture")?;
    // A capture's directory, or the segment of an archive holding it
    // (whose `instruction` serves all its captures), once each.
    let mut dirs: Vec<&std::path::Path> = Vec::new();
    for c in &shared.captures {
        // Captures in object stores are read as they are.
        if (!only.is_empty() && !only.contains(&c.name)) || c.remote.is_some() {
            continue;
        }
        let dir = match &c.in_segment {
            Some(s) if s.files.at.is_some() => continue,
            Some(s) => s.files.dir.as_path(),
            None => c.dir.as_path(),
        };
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    for dir in dirs {
        src.ensure(dir, &function, module.as_deref())
            .map_err(|e| datafusion::error::DataFusionError::Execution(format!("annotate: {e}")))?;
    }
    Ok(vec![(
        "instruction",
        Arc::new(crate::tables::stored_table(
            &shared.captures,
            &trawl_capture::schema::INSTRUCTION,
        )),
    )])
}
