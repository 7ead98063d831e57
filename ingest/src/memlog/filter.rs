//! What a memory log keeps: access kinds, address ranges, the fetch rows
//! limit.

use trawl_capture::units::parse_size;

pub const KIND_I: u8 = 0;
pub const KIND_L: u8 = 1;
pub const KIND_S: u8 = 2;
pub const KIND_M: u8 = 3;
/// The kind letters, by kind code.
pub const KIND_LETTERS: [&str; 4] = ["I", "L", "S", "M"];

/// Which records to keep while reading.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    /// Bit `1 << KIND_*` per kind kept.
    pub kinds: u8,
    /// Address ranges `[lo, hi)`; empty keeps every address.
    pub ranges: Vec<(u64, u64)>,
    /// Keep each instruction fetch as a `mem_access` row too (not only
    /// the per-address summary `mem_fetch`).
    pub fetch_rows: bool,
}

impl Default for Filter {
    fn default() -> Self {
        Filter {
            kinds: 0b1111,
            ranges: Vec::new(),
            fetch_rows: false,
        }
    }
}

impl Filter {
    #[inline]
    pub fn keep_addr(&self, a: u64) -> bool {
        self.ranges.is_empty() || self.ranges.iter().any(|&(lo, hi)| a >= lo && a < hi)
    }

    /// Parses `ILSM`-style kind letters.
    pub fn parse_kinds(s: &str) -> std::result::Result<u8, String> {
        let mut m = 0u8;
        for c in s.chars() {
            m |= match c.to_ascii_uppercase() {
                'I' => 1 << KIND_I,
                'L' => 1 << KIND_L,
                'S' => 1 << KIND_S,
                'M' => 1 << KIND_M,
                ',' | ' ' => 0,
                _ => {
                    return Err(format!(
                        "{s:?}: kinds are letters of ILSM (I fetch, L load, S store, M modify)"
                    ))
                }
            };
        }
        if m == 0 {
            return Err(format!("{s:?}: no kind given (letters of ILSM)"));
        }
        Ok(m)
    }

    /// Parses `LO-HI` / `LO..HI` (hex with or without `0x`, `HI`
    /// exclusive) or `LO+LEN`.
    pub fn parse_range(s: &str) -> std::result::Result<(u64, u64), String> {
        let num = |t: &str| {
            let t = t.trim();
            let h = t
                .strip_prefix("0x")
                .or_else(|| t.strip_prefix("0X"))
                .unwrap_or(t);
            u64::from_str_radix(h, 16).map_err(|_| format!("{t:?} is not a hex address"))
        };
        let (lo, hi) = if let Some((a, b)) = s.split_once("..") {
            (num(a)?, num(b)?)
        } else if let Some((a, b)) = s.split_once('+') {
            let lo = num(a)?;
            let len = parse_size(b)?;
            (lo, lo.saturating_add(len))
        } else if let Some((a, b)) = s.split_once('-') {
            (num(a)?, num(b)?)
        } else {
            return Err(format!(
                "{s:?}: give an address range as LO-HI (hex, HI exclusive) or LO+LEN"
            ));
        };
        if hi <= lo {
            return Err(format!("{s:?}: the range is empty"));
        }
        Ok((lo, hi))
    }

    /// `ILSM` letters of the kinds kept.
    pub fn kind_letters(&self) -> String {
        (0..4)
            .filter(|k| self.kinds & (1 << k) != 0)
            .map(|k| KIND_LETTERS[k as usize])
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_filters_and_sizes() {
        assert_eq!(Filter::parse_kinds("ls").unwrap(), 0b0110);
        assert!(Filter::parse_kinds("X").is_err());
        assert_eq!(
            Filter::parse_range("0x1000-0x2000").unwrap(),
            (0x1000, 0x2000)
        );
        assert_eq!(Filter::parse_range("1000+4k").unwrap(), (0x1000, 0x2000));
        assert!(Filter::parse_range("2000-1000").is_err());
    }
}
