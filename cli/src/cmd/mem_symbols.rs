//! `trawl report mem-symbols`: functions and data objects used and never used.

use crate::*;

#[derive(Args)]
pub(crate) struct MemSymbolsArgs {
    /// Capture with a memory log and a maps file.
    pub(crate) captures: Vec<PathBuf>,
    /// Only functions or only data objects.
    #[arg(long, value_enum)]
    pub(crate) kind: Option<MemSymKind>,
    /// Only objects whose path contains this.
    #[arg(long)]
    pub(crate) object: Option<String>,
    /// Only symbols never executed / never touched.
    #[arg(long)]
    pub(crate) never: bool,
    /// Show at most N symbols.
    #[arg(long)]
    pub(crate) limit: Option<usize>,
    #[command(flatten)]
    pub(crate) out: OutputOpts,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum MemSymKind {
    Function,
    Object,
}

pub(crate) async fn report_mem_symbols(a: MemSymbolsArgs) -> Result<()> {
    let s = Session::open(&a.captures).await?;
    let mut w = vec!["true".to_string()];
    match a.kind {
        Some(MemSymKind::Function) => w.push("kind = 'function'".into()),
        Some(MemSymKind::Object) => w.push("kind = 'object'".into()),
        None => {}
    }
    if let Some(o) = &a.object {
        w.push(format!("strpos(path, '{}') > 0", o.replace('\'', "''")));
    }
    if a.never {
        w.push("NOT used".into());
    }
    let q = format!(
        "SELECT capture, path, name, kind, section, '0x' || to_hex(start_address) AS address, size,
                fetches, loads, stores, modifies, used, first_ordinal, last_ordinal
         FROM mem_symbol_use WHERE {} ORDER BY capture, path, start_address, name",
        w.join(" AND ")
    );
    let df = s.sql(&q).await?;
    output::write(&limited(df, a.limit).await?, &a.out)
}
