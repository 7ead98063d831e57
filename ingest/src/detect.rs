//! Opening an input: a path or standard input, gzip and zstd unwrapped
//! (within the expansion limit), and its format detected from the first
//! bytes (see [`crate::formats`]).

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::formats::{detect, text_source, Format, HEAD_BYTES};
use crate::{compressed, memlog};

fn read_head(r: &mut dyn Read, n: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; n];
    let mut got = 0;
    while got < n {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(got);
    Ok(buf)
}

/// The format of an input file (gzip and zstd unwrapped), as [`ingest`]
/// would detect it; an error when it is none trawl reads.
pub fn input_format(path: &Path) -> Result<Format> {
    open_input(
        path,
        &path.to_string_lossy(),
        compressed::ExpansionLimit::default(),
        false,
    )
    .map(|o| o.format)
}

/// An input opened by [`open_input`].
pub(crate) struct Opened {
    pub(crate) format: Format,
    /// Standard input or a decompressing stream; `None`: the file itself.
    pub(crate) stream: Option<Box<dyn Read + Send>>,
    /// `gzip` or `zstd`.
    pub(crate) compression: Option<&'static str>,
    pub(crate) expansion: Option<Arc<compressed::Expansion>>,
}

/// Opens an input (a path, or `-` for standard input), decompresses gzip
/// and zstd streams (expanding at most as `limit` allows; `strict`: past
/// it, an error), and detects the format from the first bytes.
pub(crate) fn open_input(
    input: &Path,
    name: &str,
    limit: compressed::ExpansionLimit,
    strict: bool,
) -> Result<Opened> {
    let (mut raw, head): (Box<dyn Read + Send>, Vec<u8>) = if name == "-" {
        let mut stdin = std::io::stdin();
        let head = read_head(&mut stdin, HEAD_BYTES).map_err(|e| Error::io("-", e))?;
        (Box::new(stdin), head)
    } else {
        let mut f = std::fs::File::open(input).map_err(|e| Error::io(input, e))?;
        let head = read_head(&mut f, HEAD_BYTES).map_err(|e| Error::io(input, e))?;
        (Box::new(f), head)
    };
    if compressed::is_compressed(&head) {
        let mut d =
            compressed::decompress(head, raw, limit, strict).map_err(|e| Error::io(input, e))?;
        let head = read_head(&mut d.stream, HEAD_BYTES).map_err(|e| Error::io(input, e))?;
        let format = detect(&head).ok_or_else(|| Error::UnknownFormat {
            path: input.into(),
            head: head.clone(),
        })?;
        return Ok(Opened {
            format,
            stream: Some(Box::new(std::io::Cursor::new(head).chain(d.stream))),
            compression: Some(d.kind),
            expansion: Some(d.expansion),
        });
    }
    let format = detect(&head).ok_or_else(|| Error::UnknownFormat {
        path: input.into(),
        head: head.clone(),
    })?;
    let stream = if name == "-" {
        raw = Box::new(std::io::Cursor::new(head).chain(raw));
        Some(raw)
    } else {
        None
    };
    Ok(Opened {
        format,
        stream,
        compression: None,
        expansion: None,
    })
}

/// Opens a text input (a path, or `-`): its format, its text (a regular
/// uncompressed file mapped, anything else as a decompressing stream) and
/// the compression found.
pub fn open_text(input: &Path) -> Result<(Format, memlog::TextSource, Option<&'static str>)> {
    let name = input.to_string_lossy();
    let o = open_input(input, &name, compressed::ExpansionLimit::default(), false)?;
    Ok((o.format, text_source(input, o.stream)?, o.compression))
}
