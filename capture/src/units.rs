//! Quantities a user writes: byte counts (`4k`, `2M`, `0x1000`), as the
//! memory log's options and reports take them.

/// A byte count: `4096`, `4k`, `2M`, `0x1000`.
pub fn parse_size(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    if let Some(h) = t.strip_prefix("0x") {
        return u64::from_str_radix(h, 16).map_err(|_| format!("{s:?} is not a size"));
    }
    let (digits, mult) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((k, _)) => {
            let unit = t[k..].to_ascii_lowercase();
            let m = match unit.trim_end_matches(['b', 'i']).trim() {
                "" => 1,
                "k" => 1 << 10,
                "m" => 1 << 20,
                "g" => 1 << 30,
                _ => return Err(format!("{s:?}: sizes are bytes with an optional k, M or G")),
            };
            (&t[..k], m)
        }
        None => (t, 1),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|v| v.checked_mul(mult))
        .ok_or_else(|| format!("{s:?} is not a size"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("2M").unwrap(), 2 << 20);
        assert_eq!(parse_size("4KiB").unwrap(), 4096);
        assert_eq!(parse_size("0x1000").unwrap(), 4096);
        assert!(parse_size("4q").is_err());
        assert!(parse_size("99999999999999999999").is_err());
    }
}
