//! Kernel symbols from a `/proc/kallsyms`-format file.

use std::path::Path;

#[derive(Clone, Debug, Default)]
pub struct Kallsyms {
    /// (address, name), sorted by address; text symbols only.
    syms: Vec<(u64, String)>,
}

impl Kallsyms {
    pub fn parse(text: &str) -> Kallsyms {
        let mut syms = Vec::new();
        for line in text.lines() {
            let mut it = line.split_ascii_whitespace();
            let (Some(addr), Some(ty), Some(name)) = (it.next(), it.next(), it.next()) else {
                continue;
            };
            if !matches!(ty, "t" | "T" | "w" | "W") {
                continue;
            }
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            if addr == 0 {
                continue;
            }
            syms.push((addr, name.to_string()));
        }
        syms.sort();
        Kallsyms { syms }
    }

    pub fn load(path: &Path) -> std::io::Result<Kallsyms> {
        let bytes = crate::file::read_regular(path, 1 << 30)?;
        Ok(Self::parse(&String::from_utf8_lossy(&bytes)))
    }

    /// Symbols already read (address, name), e.g. from the store.
    pub fn from_syms(mut syms: Vec<(u64, String)>) -> Kallsyms {
        syms.sort();
        Kallsyms { syms }
    }

    /// (address, name) by address.
    pub fn syms(&self) -> &[(u64, String)] {
        &self.syms
    }

    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    /// The symbol at or before `addr` and the offset into it. The last
    /// symbol is not extended past 1 MB.
    pub fn find(&self, addr: u64) -> Option<(&str, u64)> {
        let i = self.syms.partition_point(|(a, _)| *a <= addr);
        if i == 0 {
            return None;
        }
        let (start, name) = &self.syms[i - 1];
        if i == self.syms.len() && addr - start > (1 << 20) {
            return None;
        }
        Some((name, addr - start))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn finds_enclosing_text_symbol() {
        let k = super::Kallsyms::parse(
            "ffffffff81000000 T _stext\nffffffff81000100 t foo\nffffffff81000200 D data\nffffffff81000300 T bar [mod]\n",
        );
        assert_eq!(k.find(0xffffffff81000150), Some(("foo", 0x50)));
        assert_eq!(k.find(0xffffffff81000250), Some(("foo", 0x150)));
        assert_eq!(k.find(0xffffffff81000300), Some(("bar", 0)));
        assert_eq!(k.find(0x10), None);
    }
}
