//! `trawl report diff` and `report flamegraph --diff` on two recordings of
//! `fixtures/perf/src/regress.c`: `regress 1` (diff-base.data) and
//! `regress 3` (diff-new.data, `parse` three times slower on purpose,
//! `validate` instead of `legacy_check`). Expected shares: `perf report
//! --no-children --sort dso,sym` on each file.

use std::collections::HashMap;

use crate::common::*;
use crate::perf_fixtures::perf_report;

fn perf_shares(file: &str) -> HashMap<String, f64> {
    let mut m = HashMap::new();
    for r in perf_report(&fixture(file), false) {
        *m.entry(r.sym).or_default() += r.self_pct;
    }
    m
}

#[test]
fn diff_gives_each_sides_shares_and_the_change() {
    let (_a, base) = ingest("diff-base.data");
    let (_b, new) = ingest("diff-new.data");
    let out = trawl_ok(&[
        "report",
        "diff",
        base.to_str().unwrap(),
        new.to_str().unwrap(),
        "--no-inline",
        "--format",
        "csv",
    ]);
    let rows = csv_maps(&out);
    let by: HashMap<String, &HashMap<String, String>> =
        rows.iter().map(|r| (r["function"].clone(), r)).collect();
    let (pb, pn) = (perf_shares("diff-base.data"), perf_shares("diff-new.data"));
    let f = |r: &HashMap<String, String>, c: &str| r[c].parse::<f64>().unwrap();
    for func in ["parse", "compute", "emit", "legacy_check", "validate"] {
        let r = by[func];
        let (b, n) = (
            pb.get(func).copied().unwrap_or(0.0),
            pn.get(func).copied().unwrap_or(0.0),
        );
        // perf report prints two decimals.
        assert!(
            (f(r, "base_self_pct") - b).abs() < 0.006,
            "{func} base {r:?} vs {b}"
        );
        assert!(
            (f(r, "new_self_pct") - n).abs() < 0.006,
            "{func} new {r:?} vs {n}"
        );
        assert!(
            (f(r, "self_pct_change") - (f(r, "new_self_pct") - f(r, "base_self_pct"))).abs() < 1e-3
        );
    }
    assert_eq!(by["legacy_check"]["status"], "base only");
    assert_eq!(by["validate"]["status"], "new only");
    assert_eq!(by["parse"]["status"], "both");
    // The largest change first: parse, made slower on purpose.
    assert_eq!(rows[0]["function"], "parse");
    assert!(f(&rows[0], "self_pct_change") > 15.0);
    // Normalized: compute did the same work in both runs; against the base
    // scaled to the new total, it shrank (the new run is longer).
    assert!(f(by["compute"], "self_pct_change") < 0.0);
    // The same from SQL, by capture names.
    let sql = trawl_ok(&[
        "sql",
        base.to_str().unwrap(),
        new.to_str().unwrap(),
        "SELECT function, status FROM diff('function', 'base', 'cap', 'new', 'cap#2', 'inline', false) \
         WHERE function IN ('legacy_check', 'validate') ORDER BY function",
        "--format",
        "csv",
    ]);
    assert_eq!(
        csv_rows(&sql),
        vec![
            vec!["legacy_check".to_string(), "base only".to_string()],
            vec!["validate".to_string(), "new only".to_string()]
        ]
    );
    // Without sides, SQL says what is missing.
    let o = trawl(&[
        "sql",
        base.to_str().unwrap(),
        "SELECT * FROM diff('function')",
    ]);
    assert_refused(&o, "name the base captures");
    assert!(String::from_utf8_lossy(&o.stderr).contains("name the base captures"));
}

#[test]
fn differential_flame_graph_colours_what_grew() {
    let (t, base) = ingest("diff-base.data");
    let (_b, new) = ingest("diff-new.data");
    let svg = t.path().join("d.svg");
    trawl_ok(&[
        "report",
        "flamegraph",
        "--diff",
        base.to_str().unwrap(),
        new.to_str().unwrap(),
        "-o",
        svg.to_str().unwrap(),
        "--weight",
        "samples",
        "--no-inline",
    ]);
    let text = std::fs::read_to_string(&svg).unwrap();
    // inferno titles a differential frame `NAME (N samples, P%; +D%)`;
    // parse grew, compute shrank (base scaled to the new total).
    let title = |name: &str| -> String {
        let i = text
            .find(&format!("<title>{name} ("))
            .unwrap_or_else(|| panic!("{name} not drawn"));
        text[i..i + text[i..].find("</title>").unwrap()].to_string()
    };
    assert!(title("parse").contains("; +"), "{}", title("parse"));
    assert!(title("compute").contains("; -"), "{}", title("compute"));
    // Its width is the new run's: the samples of diff-new with parse in
    // their stack (perf script's call chains; kernel frames above it).
    let script = perf(&[
        "script",
        "-i",
        fixture("diff-new.data").to_str().unwrap(),
        "-F",
        "ip,sym",
    ]);
    let n = script
        .split("\n\n")
        .filter(|s| {
            s.lines()
                .any(|l| l.split_whitespace().nth(1) == Some("parse"))
        })
        .count();
    assert!(
        title("parse").starts_with(&format!("<title>parse ({n} samples")),
        "{}",
        title("parse")
    );
}
