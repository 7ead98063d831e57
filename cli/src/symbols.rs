//! `trawl addr2line`: addresses of one file, printed as `addr2line -f -i -C`.

use std::path::Path;

use anyhow::Result;
use trawl_symbolize::{ModuleRequest, Status};

/// `trawl addr2line`: addresses of one file, printed as `addr2line -f -i -C`.
pub fn addr2line(
    exe: &Path,
    args: &[String],
    print_addr: bool,
    cfg: &trawl_symbolize::Config,
) -> Result<()> {
    use std::io::{BufRead, Write};
    let mut text = Vec::new();
    if args.is_empty() {
        for l in std::io::stdin().lock().lines() {
            let l = l?;
            if !l.trim().is_empty() {
                text.push(l.trim().to_string());
            }
        }
    } else {
        text = args.to_vec();
    }
    let vaddrs: Vec<u64> = text
        .iter()
        .map(|t| {
            u64::from_str_radix(t.trim_start_matches("0x"), 16)
                .map_err(|_| anyhow::anyhow!("{t:?} is not a hex address"))
        })
        .collect::<Result<_>>()?;
    std::fs::metadata(exe).map_err(|e| anyhow::anyhow!("{}: {e}", exe.display()))?;
    let segs = trawl_symbolize::elf::LoadSegments::from_path(exe).unwrap_or_default();
    let offsets: Vec<u64> = vaddrs
        .iter()
        .map(|&v| segs.vaddr_to_offset(v).unwrap_or(u64::MAX))
        .collect();
    let path = std::fs::canonicalize(exe)?.to_string_lossy().into_owned();
    let mut cfg = cfg.clone();
    cfg.debug_dirs.extend(exe.parent().map(Path::to_path_buf));
    let res = trawl_symbolize::symbolize(
        &cfg,
        vec![ModuleRequest {
            path,
            build_id: None,
            kernel: false,
            addresses: offsets,
        }],
    );
    let res = &res[0];
    if res.status != Status::Ok {
        anyhow::bail!(
            "{}: {}",
            exe.display(),
            res.message.as_deref().unwrap_or(res.status.as_str())
        );
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for (v, r) in vaddrs.iter().zip(&res.symbols) {
        if print_addr {
            writeln!(out, "0x{v:016x}")?;
        }
        if r.inline.is_empty() {
            let name = r.symbol.as_ref().map_or("??", |s| s.name.as_str());
            writeln!(out, "{name}\n??:0")?;
            continue;
        }
        let outer = r.inline.len() - 1;
        for (k, l) in r.inline.iter().enumerate() {
            let name = if k == outer {
                l.function
                    .as_deref()
                    .or(r.symbol.as_ref().map(|s| s.name.as_str()))
            } else {
                l.function.as_deref()
            };
            writeln!(
                out,
                "{}\n{}:{}",
                name.unwrap_or("??"),
                l.file.as_deref().unwrap_or("??"),
                l.line.unwrap_or(0)
            )?;
        }
    }
    out.flush()?;
    Ok(())
}
