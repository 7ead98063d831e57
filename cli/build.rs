include!("link.rs");

/// The sources whose hash is the build id (`trawl --version`): every crate
/// the command and the Python package are compiled from, the pure-Python
/// part of the package, the manifests and the lock file.
const SOURCES: &[&str] = &[
    "Cargo.toml",
    "Cargo.lock",
    "capture",
    "ingest",
    "symbolize",
    "enrich",
    "query",
    "archive",
    "cluster",
    "plot",
    "export",
    "cli",
    "python/Cargo.toml",
    "python/build.rs",
    "python/pyproject.toml",
    "python/src",
    "python/trawl",
];

fn main() {
    println!("cargo:rerun-if-changed=link.rs");
    link_args("bins");
    build_id();
}

/// `TRAWL_BUILD_ID`: a hash (FNV-1a, 64 bits) of the paths and bytes of
/// the files under `SOURCES`, so that a test can tell the command it runs
/// is the build of its own tree (not an older install earlier on the
/// PATH). Cargo reruns this when any file under them changes.
fn build_id() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for s in SOURCES {
        println!("cargo:rerun-if-changed=../{s}");
        collect(&root, &root.join(s), &mut files);
    }
    files.sort();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for (rel, path) in &files {
        feed(rel.as_bytes());
        feed(&[0]);
        feed(&std::fs::read(path).unwrap_or_default());
        feed(&[0]);
    }
    println!("cargo:rustc-env=TRAWL_BUILD_ID={h:016x}");
}

fn collect(
    root: &std::path::Path,
    p: &std::path::Path,
    out: &mut Vec<(String, std::path::PathBuf)>,
) {
    let Ok(meta) = std::fs::metadata(p) else {
        return;
    };
    if meta.is_dir() {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name == "target" || name == "__pycache__" || name.starts_with('.') {
            return;
        }
        for e in std::fs::read_dir(p).into_iter().flatten().flatten() {
            collect(root, &e.path(), out);
        }
    } else if meta.is_file() {
        let rel = p.strip_prefix(root).unwrap_or(p);
        out.push((rel.to_string_lossy().replace('\\', "/"), p.to_path_buf()));
    }
}
