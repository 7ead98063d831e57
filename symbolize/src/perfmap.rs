//! JIT symbol maps: `/tmp/perf-PID.map`, written by JIT compilers (V8
//! `--perf-basic-prof`, perf-map-agent for the JVM, LuaJIT, .NET
//! `DOTNET_PerfMapEnabled`, CPython 3.12 `-X perf`). One line per piece of
//! generated code, `START SIZE NAME`, START and SIZE in hex (an optional
//! `0x` is accepted), NAME running to the end of the line and free to
//! contain spaces. Addresses are absolute virtual addresses of the process.
//!
//! Code can be regenerated at an address already used: a later line for
//! the same range replaces the earlier one, as the JIT wrote it last.

/// The parsed map: entries sorted by start address, without overlaps.
#[derive(Debug, Default)]
pub struct PerfMap {
    entries: Vec<(u64, u64, String)>,
    /// Lines that were not `START SIZE NAME` (1-based numbers), for the
    /// diagnostic message.
    pub bad_lines: Vec<usize>,
}

impl PerfMap {
    /// Reads the map found for a capture's module: a regular file only (the
    /// path comes from the capture), up to 1 GiB.
    pub(crate) fn load(file: &crate::file::Cand) -> std::io::Result<PerfMap> {
        let bytes = file.read(1 << 30)?;
        Ok(Self::parse(&String::from_utf8_lossy(&bytes)))
    }

    pub fn parse(text: &str) -> PerfMap {
        let mut raw = Vec::new();
        let mut bad_lines = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            match parse_line(line) {
                Some(e) => raw.push((raw.len(), e)),
                None => bad_lines.push(i + 1),
            }
        }
        // Later lines win: sort by start, newest first among equal starts,
        // then drop entries overlapped by a newer one.
        raw.sort_by(|(ia, a), (ib, b)| a.0.cmp(&b.0).then(ib.cmp(ia)));
        let mut entries: Vec<(u64, u64, String)> = Vec::with_capacity(raw.len());
        let mut order: Vec<usize> = Vec::with_capacity(raw.len());
        for (i, (start, size, name)) in raw {
            let end = start.saturating_add(size);
            if let Some(last) = entries.last_mut() {
                let j = *order.last().unwrap();
                if start < last.1 {
                    if i < j {
                        // An older entry starting inside a newer one: the
                        // JIT has overwritten that code.
                        continue;
                    }
                    // Newer entry overlaps the tail of an older one.
                    last.1 = start;
                    if last.1 <= last.0 {
                        entries.pop();
                        order.pop();
                    }
                }
            }
            entries.push((start, end, name));
            order.push(i);
        }
        PerfMap { entries, bad_lines }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The name of the code containing `addr`, and the offset into it.
    pub fn find(&self, addr: u64) -> Option<(&str, u64)> {
        let i = self.entries.partition_point(|e| e.0 <= addr);
        let (start, end, name) = self.entries.get(i.checked_sub(1)?)?;
        (addr < *end).then(|| (name.as_str(), addr - start))
    }
}

fn parse_line(line: &str) -> Option<(u64, u64, String)> {
    let line = line.trim_end_matches(['\r', '\n']);
    let (start, rest) = line.trim_start().split_once(char::is_whitespace)?;
    let (size, name) = rest.trim_start().split_once(char::is_whitespace)?;
    let hex =
        |s: &str| u64::from_str_radix(s.trim_start_matches("0x").trim_start_matches("0X"), 16).ok();
    let name = name.trim_start();
    if name.is_empty() {
        return None;
    }
    Some((hex(start)?, hex(size)?, name.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_with_spaces_and_later_lines_win() {
        let m = PerfMap::parse(
            "7f0000001000 40 LazyCompile:*hot script.js:10\n\
             0x7f0000002000 0x20 cold\n\
             garbage\n\
             7f0000001000 10 recompiled\n",
        );
        assert_eq!(m.bad_lines, vec![3]);
        assert_eq!(m.find(0x7f0000001008), Some(("recompiled", 8)));
        // The tail of the older entry beyond the newer one is gone too:
        // the JIT rewrote the range starting there.
        assert_eq!(m.find(0x7f0000001020), None);
        assert_eq!(m.find(0x7f000000201f), Some(("cold", 0x1f)));
        assert_eq!(m.find(0x7f0000002020), None);
        assert_eq!(m.find(0x10), None);
    }
}
