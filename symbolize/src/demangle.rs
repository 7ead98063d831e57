//! Demangling of C++ (Itanium ABI) and Rust symbol names.

/// Demangles `name` when it is a mangled C++ or Rust name; returns it
/// unchanged otherwise.
pub fn demangle(name: &str) -> String {
    if let Ok(d) = rustc_demangle::try_demangle(name) {
        // `{:#}` drops the hash suffix, as perf and samply show Rust names.
        return format!("{d:#}");
    }
    if name.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(name) {
            if let Ok(s) = sym.demangle() {
                return s;
            }
        }
    }
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::demangle;

    #[test]
    fn demangles_cpp_and_rust() {
        assert_eq!(demangle("_ZN3foo3barEv"), "foo::bar()");
        assert_eq!(
            demangle("_ZN4core3fmt5write17h0123456789abcdefE"),
            "core::fmt::write"
        );
        assert_eq!(demangle("main"), "main");
    }
}

/// Demangled names, computed once per distinct mangled name.
#[derive(Default)]
pub struct NameCache {
    map: std::collections::HashMap<String, String>,
}

impl NameCache {
    pub fn demangle(&mut self, raw: &str) -> String {
        if let Some(d) = self.map.get(raw) {
            return d.clone();
        }
        let d = demangle(raw);
        self.map.insert(raw.to_string(), d.clone());
        d
    }
}
