//! The architecture invariants of ARCHITECTURE.md that a reading of the
//! sources can check: which modules may see Arrow, that `query` reads
//! captures through `trawl-capture` and never links `ingest` or
//! `symbolize`, and that only the CLI knows exit codes.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(rust_files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out
}

/// Lines of `file` outside comments that mention one of `needles`.
fn mentions(file: &Path, needles: &[&str]) -> Vec<String> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .filter(|l| needles.iter().any(|n| l.contains(n)))
        .map(|l| format!("{}: {}", file.display(), l.trim()))
        .collect()
}

/// Every file of a format's folder (`ingest/src/<family>/`) is its parser,
/// but for its converter (`convert.rs`, `convert/`): a new format's files
/// are checked without being listed here.
#[test]
fn parsers_never_see_arrow() {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            let name = e.file_name();
            if p.is_dir() && name != "convert" {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") && name != "convert.rs" {
                out.push(p);
            }
        }
    }
    let ingest = root().join("ingest/src");
    let mut parsers = Vec::new();
    for e in std::fs::read_dir(&ingest).unwrap().flatten() {
        if e.path().is_dir() {
            walk(&e.path(), &mut parsers);
        }
    }
    assert!(
        parsers.len() > 20,
        "the formats' folders hold {} files",
        parsers.len()
    );
    let mut bad = Vec::new();
    for p in parsers {
        bad.extend(mentions(&p, &["arrow::", "parquet::", "datafusion"]));
    }
    assert!(
        bad.is_empty(),
        "parsers import Arrow/Parquet:\n{}",
        bad.join("\n")
    );
}

/// Converters write tables only through builders declared with
/// `table_columns!` (checked against the schema when ingest compiles):
/// nothing in ingest but `columns.rs` makes a batch of a table from a
/// list of columns.
#[test]
fn converters_build_columns_from_the_schema() {
    let mut bad = Vec::new();
    for f in rust_files(&root().join("ingest/src")) {
        if f.ends_with("columns.rs") {
            continue;
        }
        bad.extend(mentions(&f, &["RecordBatch::try_new", "write_columns("]));
    }
    assert!(
        bad.is_empty(),
        "positional column lists outside table_columns!:\n{}",
        bad.join("\n")
    );
}

#[test]
fn ingest_writes_only_what_it_read() {
    // The tables that name frames (symbols, decoded code, memory symbols,
    // the flat sample table) are enrichment's: ingest declares no writer
    // for them; enrich/src/tables.rs and enrich/src/flat.rs do.
    let enrichment = [
        "schema::SYMBOL ",
        "schema::SYMBOL_FILE",
        "schema::INSTRUCTION",
        "schema::MEM_SYMBOL",
        "schema::PERF_SAMPLE_SYMBOLIZED",
    ];
    let mut bad = Vec::new();
    for f in rust_files(&root().join("ingest/src")) {
        bad.extend(mentions(&f, &enrichment));
    }
    assert!(
        bad.is_empty(),
        "ingest writes enrichment's tables:\n{}",
        bad.join("\n")
    );
    let read = |f: &str| std::fs::read_to_string(root().join(f)).unwrap();
    let tables = read("enrich/src/tables.rs") + &read("enrich/src/flat.rs");
    for t in enrichment {
        assert!(
            tables.contains(t.trim_end()),
            "enrich/src/tables.rs or flat.rs writes {t}"
        );
    }
}

#[test]
fn query_reads_only_parquet_and_never_symbolizes() {
    // The cluster crate is transport for query's sessions, and the plot
    // crate draws what query computed: the same rule.
    for krate in ["cluster", "plot"] {
        let manifest = std::fs::read_to_string(root().join(krate).join("Cargo.toml")).unwrap();
        for dep in ["trawl-symbolize", "trawl-ingest"] {
            assert!(!manifest.contains(dep), "{krate} depends on {dep}");
        }
    }
    let manifest = std::fs::read_to_string(root().join("query/Cargo.toml")).unwrap();
    assert!(
        !manifest.contains("trawl-symbolize"),
        "query depends on symbolize"
    );
    // The capture (its layout and table definitions) is trawl-capture's:
    // query never links the readers and converters of ingest.
    assert!(
        !manifest.contains("trawl-ingest"),
        "query depends on ingest"
    );
    let mut bad = Vec::new();
    for f in rust_files(&root().join("query/src")) {
        bad.extend(mentions(&f, &["trawl_ingest"]));
    }
    assert!(bad.is_empty(), "query names ingest:\n{}", bad.join("\n"));
}

#[test]
fn only_the_cli_knows_exit_codes_and_terminals() {
    let mut bad = Vec::new();
    for krate in [
        "capture/src",
        "ingest/src",
        "symbolize/src",
        "enrich/src",
        "query/src",
        "archive/src",
        "cluster/src",
        "plot/src",
        // The Python package's errors are exceptions; Python owns the
        // process and its terminal.
        "python/src",
    ] {
        for f in rust_files(&root().join(krate)) {
            bad.extend(mentions(
                &f,
                &[
                    "process::exit",
                    "ExitCode",
                    "IsTerminal",
                    "isatty",
                    "println!",
                    "eprintln!",
                ],
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "libraries deciding exits or terminals:\n{}",
        bad.join("\n")
    );
}

#[test]
fn analyses_build_no_sql_from_arguments() {
    // The analyses bind arguments to placeholders: no SQL file is a text
    // template with `{holes}`, and the query crate has no quoting helper
    // (values such as event names, zones and captures are bound as
    // `$name` parameters, never pasted into SQL text).
    let mut files = Vec::new();
    let mut stack = vec![root().join("query/analyses")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "sql") {
                files.push(p);
            }
        }
    }
    assert!(files.len() > 20, "{files:?}");
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let code: String = text
            .lines()
            .map(|l| l.split("--").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(!code.contains('{'), "{} is a text template", f.display());
    }
    let mut bad = Vec::new();
    for f in rust_files(&root().join("query/src")) {
        bad.extend(mentions(&f, &["replace('\\'', \"''\")", "fn quote("]));
    }
    assert!(bad.is_empty(), "SQL quoting in query:\n{}", bad.join("\n"));
    // No statement or fragment of one is assembled from text anywhere in
    // query/src: the SQL the Rust code runs is a constant (most of it in
    // analyses/**/*.sql) with `$name` placeholders.
    let mut bad = Vec::new();
    for f in rust_files(&root().join("query/src")) {
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, _) in text.match_indices("format!(") {
            let lit = first_string_literal(&text[i..]);
            if looks_like_sql(&lit) {
                bad.push(format!("{}: format!({lit:?}", f.display()));
            }
        }
        bad.extend(
            mentions(&f, &["push_str(\" ", "push_str(\"AND", "push_str(\"WHERE"])
                .into_iter()
                .filter(|l| looks_like_sql(l.split("push_str(").nth(1).unwrap_or(""))),
        );
    }
    assert!(
        bad.is_empty(),
        "SQL assembled from text in query/src:\n{}",
        bad.join("\n")
    );
}

/// The first string literal of `code` (its text between the quotes).
fn first_string_literal(code: &str) -> String {
    let Some(start) = code.find('"') else {
        return String::new();
    };
    let mut out = String::new();
    let mut chars = code[start + 1..].chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '"' => break,
            c => out.push(c),
        }
    }
    out
}

/// SQL text or a fragment of it: a statement's or clause's first word, or
/// FROM and WHERE together (messages to users are lower case sentences).
fn looks_like_sql(s: &str) -> bool {
    let t = s.trim_start_matches(|c: char| c.is_whitespace() || c == '"' || c == '(');
    let starts = [
        "SELECT ",
        "WITH ",
        "CREATE ",
        "INSERT ",
        "AND ",
        "OR ",
        "WHERE ",
        "JOIN ",
        "LEFT JOIN ",
        "ORDER BY ",
        "GROUP BY ",
        "CASE ",
    ];
    starts.iter().any(|k| t.starts_with(k)) || (s.contains("FROM ") && s.contains("WHERE "))
}

#[test]
fn the_sql_check_sees_what_it_must() {
    // The check above must catch what it bans (worked by hand, not with
    // the code under test's output).
    assert!(looks_like_sql(&first_string_literal(
        r#"format!("SELECT a FROM t WHERE b = {x}")"#
    )));
    assert!(looks_like_sql(&first_string_literal(
        r#"format!(" AND CAST({c} AS INT) IN (SELECT 1)")"#
    )));
    assert!(looks_like_sql(&first_string_literal(
        r#"format!(
        "LEFT JOIN (SELECT x FROM r WHERE e = ${a}) {a}")"#
    )));
    assert!(!looks_like_sql(&first_string_literal(
        r#"format!("no samples of event {e:?}")"#
    )));
    assert!(!looks_like_sql(&first_string_literal(
        r#"format!("read:{e}")"#
    )));
}

/// Text files of the repository (not build output, not binary fixtures).
fn text_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if p.is_dir() {
            if !matches!(
                name.as_str(),
                "target" | ".git" | "node_modules" | "__pycache__"
            ) {
                text_files(&p, out);
            }
        } else if e.metadata().is_ok_and(|m| m.len() < 4 << 20) {
            out.push(p);
        }
    }
}

/// Where `text` cites a source users do not have: the project's internal
/// documents by number, or its own issue tracker ("issue 5"; an issue of
/// another project, "samply issue 870", names that project).
fn internal_citations(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let mut out = Vec::new();
    for pat in [
        "seed document",
        "seed doc ",
        "document 00",
        "documents 00",
        "seed 00",
    ] {
        for (i, _) in lower.match_indices(pat) {
            out.push(lower[i..(i + 30).min(lower.len())].to_string());
        }
    }
    for (i, _) in lower.match_indices("issue ") {
        let after = &lower[i + 6..];
        if !after.starts_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        let before = &lower[i.saturating_sub(16)..i];
        if ["samply", "github", "upstream", "datafusion", "arrow"]
            .iter()
            .any(|p| before.contains(p))
        {
            continue;
        }
        out.push(lower[i..(i + 20).min(lower.len())].to_string());
    }
    out
}

#[test]
fn methods_are_cited_by_their_published_source() {
    // Users have neither the documents the project was created from nor
    // its issue tracker: help, docs, SQL and code cite the published method
    // (docs/guide/references.md) or say what it does.
    let mut files = Vec::new();
    text_files(&root(), &mut files);
    assert!(files.len() > 300, "{} files", files.len());
    let me = root().join("tests/e2e/layering.rs");
    let mut bad = Vec::new();
    for f in files.iter().filter(|f| **f != me) {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        for c in internal_citations(&text) {
            bad.push(format!("{}: {c:?}", f.display()));
        }
    }
    assert!(bad.is_empty(), "internal citations:\n{}", bad.join("\n"));
}

#[test]
fn the_citation_check_sees_what_it_must() {
    // Worked by hand: what the check must catch and what it must let by.
    assert!(!internal_citations("the CPU case of seed document 000").is_empty());
    assert!(!internal_citations("(document 001, section 3.3)").is_empty());
    assert!(!internal_citations("trawl's cause tests (issue 5):").is_empty());
    assert!(internal_citations("samply issue 870: a zero-length mapping").is_empty());
    assert!(internal_citations("Mibu et al., memory access analysis").is_empty());
    assert!(internal_citations("an issue of ordering").is_empty());
}
