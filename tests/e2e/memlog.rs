//! Memory access logs (Mibu et al., memory access analysis for memory
//! saving): valgrind lackey logs of
//! fixtures/memlog/src/pages.c, a program with a known page story, through
//! `trawl ingest`, `convert lackey`, the page and symbol reports and the
//! heatmap. Expected per-page values come from an independent Python
//! reading of the same log (tests/e2e/memlog_py/pages.py); the page story
//! and symbol expectations from the program source and `nm`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::*;

fn memlog(name: &str) -> PathBuf {
    root().join("fixtures/memlog").join(name)
}

/// The fixture log as text (it is committed zstd-compressed).
fn text_log(dir: &Path) -> PathBuf {
    let out = dir.join("pages.lackey");
    let st = Command::new("zstd")
        .args(["-q", "-d", "-f"])
        .arg(memlog("pages.lackey.zst"))
        .arg("-o")
        .arg(&out)
        .status()
        .expect("run zstd");
    assert!(st.success());
    out
}

/// a, b, c, d of pages.c, as the program printed them.
fn addrs() -> HashMap<String, u64> {
    std::fs::read_to_string(memlog("pages.addr"))
        .unwrap()
        .lines()
        .filter_map(|l| {
            let (n, a) = l.split_once(' ')?;
            Some((
                n.to_string(),
                u64::from_str_radix(a.trim_start_matches("0x"), 16).ok()?,
            ))
        })
        .collect()
}

pub(crate) fn ingest_pages(dir: &Path, extra: &[&str]) -> PathBuf {
    let cap = dir.join("cap");
    let mut args: Vec<String> = vec![
        "ingest".into(),
        memlog("pages.lackey.zst").to_str().unwrap().to_string(),
        memlog("pages.maps").to_str().unwrap().to_string(),
        "--debug-dir".into(),
        memlog("bin").to_str().unwrap().to_string(),
        "-o".into(),
        cap.to_str().unwrap().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    trawl_ok(&refs);
    cap
}

/// (csv rows of pages, reuse line fields) from the Python reference.
fn python_pages(log: &Path, page_size: u64) -> (Vec<Vec<String>>, Vec<u64>) {
    let out = Command::new("python3")
        .arg(root().join("tests/e2e/memlog_py/pages.py"))
        .arg(log)
        .arg(page_size.to_string())
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let reuse = text
        .lines()
        .find_map(|l| l.strip_prefix("#reuse,"))
        .unwrap()
        .split(',')
        .map(|x| x.parse().unwrap())
        .collect();
    let csv: String = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    (csv_rows(&csv), reuse)
}

const PAGE_COLS: &str = "CAST(page AS VARCHAR) AS c0, CAST(fetches AS VARCHAR) AS c1, CAST(loads AS VARCHAR) AS c2, CAST(stores AS VARCHAR) AS c3, CAST(modifies AS VARCHAR) AS c4, CAST(bytes_touched AS VARCHAR) AS c5, CAST(first_ordinal AS VARCHAR) AS c6, CAST(last_ordinal AS VARCHAR) AS c7";

#[test]
fn pages_match_an_independent_reading_of_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = text_log(dir.path());
    let cap = ingest_pages(dir.path(), &[]);
    let (want, _) = python_pages(&log, 4096);
    let got = sql_rows(
        &cap,
        &format!("SELECT {PAGE_COLS} FROM mem_page ORDER BY page"),
    );
    assert!(want.len() > 100, "{} pages", want.len());
    assert_eq!(got, want);
    // Every record kept: kinds as grep counts them.
    let text = std::fs::read_to_string(&log).unwrap();
    let count = |p: &str| {
        text.lines()
            .filter(|l| l.starts_with(p))
            .count()
            .to_string()
    };
    let rows = sql_rows(
        &cap,
        "SELECT kind, CAST(count(*) AS VARCHAR) AS n FROM mem_access GROUP BY kind ORDER BY kind",
    );
    assert_eq!(
        rows,
        vec![
            vec!["L".to_string(), count(" L ")],
            vec!["M".to_string(), count(" M ")],
            vec!["S".to_string(), count(" S ")],
        ]
    );
    assert_eq!(
        sql_scalar(&cap, "SELECT sum(count) FROM mem_fetch"),
        count("I  ")
    );
    // valgrind's banner is kept.
    assert!(sql_scalar(
        &cap,
        "SELECT value FROM capture_meta WHERE key = 'valgrind_command'"
    )
    .ends_with("pages pages.maps"));
    // A page size that is a multiple regroups exactly.
    let (want16, _) = python_pages(&log, 16384);
    let got16 = csv_rows(&report_csv("pages", &cap, &["--page-size", "16k"]));
    assert_eq!(got16.len(), want16.len());
    let p16: Vec<(u64, String)> = got16
        .iter()
        .map(|r| {
            (
                u64::from_str_radix(r[2].trim_start_matches("0x"), 16).unwrap(),
                r[9].clone(),
            )
        })
        .collect();
    let w16: Vec<(u64, String)> = want16
        .iter()
        .map(|r| (r[0].parse().unwrap(), r[5].clone()))
        .collect();
    assert_eq!(p16, w16, "bytes touched per 16 KiB page");
}

#[test]
fn page_reuse_matches_the_page_story() {
    let dir = tempfile::tempdir().unwrap();
    let log = text_log(dir.path());
    let cap = ingest_pages(dir.path(), &[]);
    let (_, reuse) = python_pages(&log, 4096);
    let m = &csv_maps(&report_csv("page-reuse", &cap, &[]))[0];
    let get = |k: &str| m[k].parse::<u64>().unwrap();
    // Every figure of the README's page-reuse example (the same ingest):
    // the page size the Python reference was run with, the log as the
    // first input named (source ids are 0-based in command-line order),
    // then its reuse figures.
    assert_eq!(get("page_size"), 4096);
    assert_eq!(get("source_id"), 0);
    assert_eq!(get("pages"), reuse[0]);
    assert_eq!(get("min_pages"), reuse[1]);
    assert_eq!(get("saving_pages"), reuse[0] - reuse[1]);
    assert_eq!(get("saving_bytes"), (reuse[0] - reuse[1]) * 4096);
    assert_eq!(get("pairs"), reuse[2]);
    assert_eq!(get("spanning_pages"), reuse[3]);
    // The program's story: a (phase 1) can be reused as b (phase 2) and d
    // (phase 3); c is touched before and after b, so (c, b) never pairs.
    let ad = addrs();
    let pairs: std::collections::HashSet<(u64, u64)> =
        csv_rows(&report_csv("page-reuse", &cap, &["--show", "pairs"]))
            .iter()
            .map(|r| {
                let h = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
                (h(&r[2]), h(&r[4]))
            })
            .collect();
    assert_eq!(pairs.len() as u64, reuse[2]);
    let (a, b, c, d) = (ad["a"], ad["b"], ad["c"], ad["d"]);
    for (x, y) in [
        (a, b),
        (a, b + 4096),
        (a + 4096, b),
        (a + 4096, b + 4096),
        (a, d),
        (b, d),
    ] {
        assert!(pairs.contains(&(x, y)), "({x:#x}, {y:#x}) missing");
    }
    for (x, y) in [(c, b), (b, c), (c, d), (d, c), (b, a)] {
        assert!(!pairs.contains(&(x, y)), "({x:#x}, {y:#x}) must not pair");
    }
    // The plan puts a page of a and a page of b on one physical page.
    let plan = csv_maps(&report_csv("page-reuse", &cap, &["--show", "plan"]));
    let slot_of = |p: u64| {
        plan.iter()
            .find(|r| r["page"] == format!("{p:#x}"))
            .map(|r| r["physical_page"].clone())
            .unwrap()
    };
    let slots: std::collections::HashSet<String> =
        plan.iter().map(|r| r["physical_page"].clone()).collect();
    assert_eq!(slots.len() as u64, reuse[1]);
    assert_ne!(slot_of(c), slot_of(b));
    assert_ne!(slot_of(c), slot_of(d));
}

#[test]
fn symbols_never_executed_and_never_touched() {
    let dir = tempfile::tempdir().unwrap();
    let cap = ingest_pages(dir.path(), &[]);
    let rows = csv_maps(&report_csv(
        "mem-symbols",
        &cap,
        &["--object", "memlog/bin/pages"],
    ));
    let used = |n: &str| {
        rows.iter()
            .find(|r| r["name"] == n)
            .map(|r| r["used"].clone())
            .unwrap_or_else(|| panic!("{n} missing"))
    };
    for f in ["main", "fill", "sum", "a", "b", "c", "d"] {
        assert_eq!(used(f), "true", "{f}");
    }
    for f in ["never_called", "unused_table"] {
        assert_eq!(used(f), "false", "{f}");
    }
    // a: 2 pages written then read, one access per 64 bytes (pages.c).
    let a = rows.iter().find(|r| r["name"] == "a").unwrap();
    assert_eq!((a["loads"].as_str(), a["stores"].as_str()), ("128", "128"));
    // `--never` lists exactly the unused ones.
    let never = csv_maps(&report_csv(
        "mem-symbols",
        &cap,
        &[
            "--object",
            "memlog/bin/pages",
            "--never",
            "--kind",
            "function",
        ],
    ));
    assert!(never.iter().any(|r| r["name"] == "never_called"));
    assert!(never.iter().all(|r| r["used"] == "false"));
    // Per object: the executable's 5 mapped pages are all touched; libc has
    // functions that never ran.
    let objs = csv_maps(&report_csv("mem-objects", &cap, &[]));
    let exe = objs
        .iter()
        .find(|r| r["object"].ends_with("memlog/bin/pages"))
        .unwrap();
    assert_eq!(
        (
            exe["mapped_pages"].as_str(),
            exe["untouched_pages"].as_str()
        ),
        ("5", "0")
    );
    assert_eq!(exe["functions_never_executed"], never.len().to_string());
    let libc = objs
        .iter()
        .find(|r| r["object"].contains("libc.so"))
        .unwrap();
    // libc's functions, executed and never executed, as an independent
    // reading of the log, the maps and readelf's symbol table of libc's
    // debug file (libc6-dbg, by build-id) gives them (memlog_py/symbols.py).
    let libc_path = libc["object"].clone();
    let bid = trawl_symbolize::build_id_of(Path::new(&libc_path)).unwrap();
    let dbg = format!("/usr/lib/debug/.build-id/{}/{}.debug", &bid[..2], &bid[2..]);
    let symfile = if Path::new(&dbg).is_file() {
        dbg
    } else {
        libc_path.clone()
    };
    let out = Command::new("python3")
        .arg(root().join("tests/e2e/memlog_py/symbols.py"))
        .arg(text_log(dir.path()))
        .arg(memlog("pages.maps"))
        .arg("libc.so")
        .arg(&libc_path)
        .arg(&symfile)
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let got = format!(
        "{},{},{}",
        libc["functions"], libc["functions_executed"], libc["functions_never_executed"]
    );
    assert_eq!(got, want, "libc functions, executed, never executed");
}

#[test]
fn binary_log_is_smaller_and_reads_back_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let log = text_log(dir.path());
    let bin = dir.path().join("pages.tmem");
    trawl_ok(&[
        "convert",
        "lackey",
        log.to_str().unwrap(),
        "-o",
        bin.to_str().unwrap(),
    ]);
    let tlen = std::fs::metadata(&log).unwrap().len();
    let blen = std::fs::metadata(&bin).unwrap().len();
    assert!(tlen >= 5 * blen, "text {tlen} B, binary {blen} B");
    assert_eq!(&std::fs::read(&bin).unwrap()[..8], b"TRAWLMEM");
    let text_cap = ingest_pages(dir.path(), &[]);
    let bin_cap = dir.path().join("bincap");
    ingest_file(&bin, &bin_cap, &["--no-symbolize"]);
    for q in [
        format!("SELECT {PAGE_COLS} FROM mem_page ORDER BY page"),
        "SELECT CAST(count(*) AS VARCHAR) AS n, CAST(sum(ordinal) AS VARCHAR) AS o, CAST(sum(address) AS VARCHAR) AS a, CAST(sum(size) AS VARCHAR) AS s FROM mem_access".into(),
        "SELECT CAST(address AS VARCHAR) AS a, CAST(count AS VARCHAR) AS n, CAST(first_ordinal AS VARCHAR) AS f, CAST(last_ordinal AS VARCHAR) AS l FROM mem_fetch ORDER BY address".into(),
        "SELECT value FROM capture_meta WHERE key IN ('mem_instructions', 'mem_lines', 'valgrind_command') ORDER BY key".into(),
    ] {
        assert_eq!(sql_rows(&bin_cap, &q), sql_rows(&text_cap, &q), "{q}");
    }
    // Filters while converting: stores in b only; the header says so.
    let ad = addrs();
    let range = format!("{:#x}+8k", ad["b"]);
    let fbin = dir.path().join("b.tmem");
    trawl_ok(&[
        "convert",
        "lackey",
        log.to_str().unwrap(),
        "-o",
        fbin.to_str().unwrap(),
        "--mem-kinds",
        "S",
        "--mem-range",
        &range,
    ]);
    let fcap = dir.path().join("fcap");
    ingest_file(&fbin, &fcap, &["--no-symbolize"]);
    assert_eq!(sql_scalar(&fcap, "SELECT count(*) FROM mem_access"), "128");
    assert_eq!(
        sql_scalar(&fcap, "SELECT count(DISTINCT kind) FROM mem_access"),
        "1"
    );
    assert_eq!(
        sql_scalar(
            &fcap,
            "SELECT value FROM capture_meta WHERE key = 'mem_binary_kinds'"
        ),
        "S"
    );
    // Ordinals stay those of the whole log.
    assert_eq!(
        sql_scalar(&fcap, "SELECT min(ordinal) FROM mem_access"),
        sql_scalar(&text_cap, &format!("SELECT min(ordinal) FROM mem_access WHERE kind = 'S' AND address >= {} AND address < {}", ad["b"], ad["b"] + 8192))
    );
}

#[test]
fn pipe_and_gzip_inputs_with_filters() {
    let dir = tempfile::tempdir().unwrap();
    let log = text_log(dir.path());
    let ad = addrs();
    let range = format!("{:#x}-{:#x}", ad["d"], ad["a"] + 8192);
    // zstd -dc LOG | trawl ingest - --mem-range …
    let cap = dir.path().join("pipe");
    let mut z = Command::new("zstd")
        .args(["-dc"])
        .arg(memlog("pages.lackey.zst"))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = Command::new(crate::common::trawl_exe())
        .args([
            "ingest",
            "-",
            "--no-symbolize",
            "--mem-range",
            &range,
            "--mem-kinds",
            "LSM",
            "-o",
        ])
        .arg(&cap)
        .stdin(z.stdout.take().unwrap())
        .output()
        .unwrap();
    assert!(z.wait().unwrap().success());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // a, b, c, d: 6 pages, one store per 64 bytes each, loads of a, b, c.
    assert_eq!(sql_scalar(&cap, "SELECT count(*) FROM mem_page"), "6");
    assert_eq!(
        sql_scalar(&cap, "SELECT sum(stores) FROM mem_page"),
        (6 * 64).to_string()
    );
    assert_eq!(
        sql_scalar(&cap, "SELECT sum(loads) FROM mem_page"),
        (5 * 64).to_string()
    );
    assert_eq!(sql_scalar(&cap, "SELECT count(*) FROM mem_fetch"), "0");
    // gzip: same as the text.
    let gz = dir.path().join("pages.lackey.gz");
    let st = Command::new("sh")
        .arg("-c")
        .arg(format!("gzip -c {} > {}", log.display(), gz.display()))
        .status()
        .unwrap();
    assert!(st.success());
    let gcap = dir.path().join("gz");
    ingest_file(&gz, &gcap, &["--no-symbolize"]);
    let tcap = dir.path().join("txt");
    ingest_file(&log, &tcap, &["--no-symbolize"]);
    let q = format!("SELECT {PAGE_COLS} FROM mem_page ORDER BY page");
    assert_eq!(sql_rows(&gcap, &q), sql_rows(&tcap, &q));
    assert_eq!(
        sql_scalar(
            &gcap,
            "SELECT value FROM capture_meta WHERE key = 'compression'"
        ),
        "gzip"
    );
}

#[test]
fn heatmap_shows_the_page_story() {
    let dir = tempfile::tempdir().unwrap();
    let cap = ingest_pages(dir.path(), &[]);
    let ad = addrs();
    // Used-pages overview: one row per touched page, in address order.
    let png = dir.path().join("mem.png");
    trawl_ok(&[
        "render",
        "heatmap",
        cap.to_str().unwrap(),
        "-o",
        png.to_str().unwrap(),
        "--bare",
    ]);
    let rows = csv_maps(&std::fs::read_to_string(dir.path().join("mem.png.rows.csv")).unwrap());
    assert_eq!(
        rows.len().to_string(),
        sql_scalar(
            &cap,
            "SELECT count(DISTINCT page) FROM mem_page WHERE loads + stores + modifies > 0"
        )
    );
    let img = image::open(&png).unwrap().to_rgb8();
    assert_eq!(img.height() as usize, rows.len());
    let a_row = rows
        .iter()
        .position(|r| r["start_address"] == format!("{:#x}", ad["a"]))
        .unwrap();
    assert_eq!(rows[a_row]["symbol"], "a");
    // The executable's first page, from the saved maps.
    assert!(
        rows[0]["object"].ends_with("memlog/bin/pages"),
        "{:?}",
        rows[0]
    );
    // Zoom on a..d, 4 KiB rows, one column per 64 instructions: the rows
    // of a are used only in columns before b's first; c's before and after.
    let z = dir.path().join("zoom.png");
    let range = format!("{:#x}-{:#x}", ad["d"], ad["a"] + 8192);
    trawl_ok(&[
        "render",
        "heatmap",
        cap.to_str().unwrap(),
        "-o",
        z.to_str().unwrap(),
        "--view",
        "full",
        "--addr-range",
        &range,
        "--bytes-per-row",
        "4096",
        "--instr-per-col",
        "64",
        "--bare",
    ]);
    let img = image::open(&z).unwrap().to_rgb8();
    assert_eq!(img.height(), 6); // d, c, b, b, a, a
    let cols = |row: u32| -> Vec<(u32, [u8; 3])> {
        (0..img.width())
            .map(|x| (x, img.get_pixel(x, row).0))
            .filter(|(_, p)| *p != [0, 0, 0])
            .collect()
    };
    let (d, c, b, a) = (cols(0), cols(1), cols(2), cols(4));
    let first = |v: &Vec<(u32, [u8; 3])>| v.first().unwrap().0;
    let last = |v: &Vec<(u32, [u8; 3])>| v.last().unwrap().0;
    assert!(last(&a) < first(&b), "a is done before b starts");
    assert!(last(&b) < first(&d), "b is done before d starts");
    assert!(first(&c) < first(&b) && last(&c) > last(&b), "c spans b");
    // Colours (Mibu et al., Table 1): a is stored (cyan) first, then
    // loaded (yellow); d is only stored.
    assert_eq!(a.first().unwrap().1, [0, 255, 255]);
    assert_eq!(a.last().unwrap().1, [255, 255, 0]);
    assert!(d.iter().all(|(_, p)| *p == [0, 255, 255]));

    // The same zoom as a figure (Mibu et al., Fig. 3-4, Table 1), SVG and
    // PNG: its cells are the bitmap's, cell for cell; it names the
    // capture, view and granularity, the ordinals, the rows' addresses and
    // symbols, and the four colours.
    let zoom = |out: &Path| {
        trawl_ok(&[
            "render",
            "heatmap",
            cap.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--view",
            "full",
            "--addr-range",
            &range,
            "--bytes-per-row",
            "4096",
            "--instr-per-col",
            "64",
        ])
    };
    let (fsvg, fpng) = (dir.path().join("zoom.svg"), dir.path().join("zoomf.png"));
    zoom(&fsvg);
    zoom(&fpng);
    let t = std::fs::read_to_string(&fsvg).unwrap();
    let texts = crate::figure::texts(&t);
    let title = &texts[0];
    assert!(
        title.starts_with(
            "cap: memory accesses, full view, 4096 bytes per row, 64 instructions per column"
        ),
        "{title}"
    );
    for want in [
        "store only",
        "load only",
        "store &amp; load",
        "none",
        "instruction order (ordinal)",
    ] {
        assert!(texts.iter().any(|x| x == want), "{want} missing: {texts:?}");
    }
    assert!(
        texts
            .iter()
            .any(|x| x.starts_with(&format!("{:#x}", ad["d"])) && x.ends_with(": d")),
        "{texts:?}"
    );
    assert!(
        texts
            .iter()
            .any(|x| x.starts_with(&format!("{:#x}", ad["a"])) && x.ends_with(": a")),
        "{texts:?}"
    );
    // The plot frame (grey outline) gives the cells' geometry.
    let frame = crate::figure::tags(&t, "rect")
        .into_iter()
        .find(|r| {
            crate::figure::attr(r, "stroke") == Some("#808080")
                && crate::figure::attr(r, "fill") == Some("none")
        })
        .expect("plot frame");
    let n = |k: &str| {
        crate::figure::attr(frame, k)
            .unwrap()
            .parse::<u32>()
            .unwrap()
    };
    let (x0, y0) = (n("x") + 1, n("y") + 1);
    let (sx, sy) = (
        (n("width") - 1) / img.width(),
        (n("height") - 1) / img.height(),
    );
    assert!(sx >= 1 && sy >= 16, "a 6-row zoom is enlarged: {sx} × {sy}");
    // The first tick is the first column's ordinal.
    let first_ord = sql_scalar(
        &cap,
        &format!(
            "SELECT min(ordinal) FROM mem_access WHERE address >= {} AND address < {}",
            ad["d"],
            ad["a"] + 8192
        ),
    );
    assert!(texts.contains(&first_ord), "{first_ord} not a tick label");
    let fig = crate::figure::png(&fpng);
    for r in 0..img.height() {
        for c in 0..img.width() {
            let p = fig.get_pixel(x0 + c * sx + sx / 2, y0 + r * sy + sy / 2).0;
            assert_eq!(p, img.get_pixel(c, r).0, "cell ({c}, {r})");
        }
    }
    // Table 1's colours in the legend.
    let fills: Vec<&str> = crate::figure::tags(&t, "rect")
        .into_iter()
        .filter_map(|r| crate::figure::attr(r, "fill"))
        .collect();
    for c in ["#00FFFF", "#FFFF00", "#FFFFFF", "#000000"] {
        assert!(fills.contains(&c), "{c} missing");
    }
}

#[test]
fn bad_lackey_lines_are_reported_with_line_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let log = text_log(dir.path());
    let text = std::fs::read_to_string(&log).unwrap();
    let mut lines: Vec<&str> = text.lines().take(2000).collect();
    lines.insert(100, " X 04001000,4");
    lines.insert(200, " L 1234567890abcdef12,8");
    lines.insert(300, "garbage from the program");
    let mut bad = lines.join("\n");
    bad.push_str("\nI  0401ab7"); // cut mid-record, no newline
    let f = dir.path().join("bad.lackey");
    std::fs::write(&f, bad).unwrap();
    let cap = dir.path().join("bad");
    ingest_file(&f, &cap, &["--no-symbolize"]);
    let d = sql_rows(
        &cap,
        "SELECT CAST(line AS VARCHAR) AS l, kind FROM diagnostic ORDER BY line",
    );
    let want: Vec<Vec<String>> = [
        ("101", "unknown_record"),
        ("201", "bad_address"),
        ("301", "unknown_record"),
        ("2004", "truncated_line"),
    ]
    .iter()
    .map(|(l, k)| vec![l.to_string(), k.to_string()])
    .collect();
    assert_eq!(d, want);
    // What could be read was kept: every good record line.
    let good = lines
        .iter()
        .filter(|l| l.starts_with(" L ") || l.starts_with(" S ") || l.starts_with(" M "))
        .count()
        - 1;
    assert_eq!(
        sql_scalar(&cap, "SELECT count(*) FROM mem_access"),
        good.to_string()
    );
    // --strict fails, naming the line.
    let o = trawl(&[
        "ingest",
        f.to_str().unwrap(),
        "-o",
        dir.path().join("s").to_str().unwrap(),
        "--strict",
    ]);
    assert_refused(&o, "unknown_record");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("bad.lackey:101"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // A binary log cut short keeps its records and says where it ends.
    let bin = dir.path().join("p.tmem");
    trawl_ok(&[
        "convert",
        "lackey",
        log.to_str().unwrap(),
        "-o",
        bin.to_str().unwrap(),
    ]);
    let bytes = std::fs::read(&bin).unwrap();
    let cut = dir.path().join("cut.tmem");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let ccap = dir.path().join("cut");
    ingest_file(&cut, &ccap, &["--no-symbolize"]);
    let kinds = sql_rows(&ccap, "SELECT kind, severity FROM diagnostic ORDER BY kind");
    assert!(
        kinds
            .iter()
            .any(|r| r[0] == "corrupt" || r[0] == "truncated"),
        "{kinds:?}"
    );
    // The fixture's 49 882 accesses fit one block, written before the
    // fetch summary where the cut falls: all are kept.
    let n: u64 = sql_scalar(&ccap, "SELECT count(*) FROM mem_access")
        .parse()
        .unwrap();
    assert_eq!(n, 49882);
}

/// A data-only log (the writer of Mibu et al. keeps loads and stores only;
/// here lackey's log with its `I` lines removed) keeps the order of its
/// accesses: ordinals number the data accesses in log order, the capture
/// says so, and the page lifetimes follow that axis.
#[test]
fn data_only_logs_are_ordered_by_access() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(text_log(dir.path())).unwrap();
    let data: Vec<&str> = text.lines().filter(|l| !l.starts_with("I ")).collect();
    let log = dir.path().join("data.lackey");
    std::fs::write(&log, data.join("\n") + "\n").unwrap();
    // The expected rows, from the text: (index, kind, address).
    let want: Vec<(u64, String, u64)> = data
        .iter()
        .filter_map(|l| {
            let k = l.get(1..2)?;
            if !l.starts_with(' ') || !["L", "S", "M"].contains(&k) {
                return None;
            }
            let addr = l[3..].split(',').next()?.trim();
            Some((k.to_string(), u64::from_str_radix(addr, 16).ok()?))
        })
        .enumerate()
        .map(|(i, (k, a))| (i as u64 + 1, k, a))
        .collect();
    assert!(want.len() > 40_000, "{}", want.len());
    for (name, input) in [
        ("text", log.clone()),
        ("binary", {
            let b = dir.path().join("data.tmem");
            trawl_ok(&[
                "convert",
                "lackey",
                log.to_str().unwrap(),
                "-o",
                b.to_str().unwrap(),
            ]);
            b
        }),
    ] {
        let cap = dir.path().join(format!("cap-{name}"));
        trawl_ok(&[
            "ingest",
            input.to_str().unwrap(),
            "-o",
            cap.to_str().unwrap(),
            "--no-symbolize",
        ]);
        assert_eq!(
            sql_scalar(
                &cap,
                "SELECT value FROM capture_meta WHERE key = 'mem_x_axis'"
            ),
            "access",
            "{name}"
        );
        let got: Vec<(u64, String, u64)> = sql_rows(
            &cap,
            "SELECT ordinal, CAST(kind AS VARCHAR), address FROM mem_access ORDER BY ordinal",
        )
        .into_iter()
        .map(|r| (r[0].parse().unwrap(), r[1].clone(), r[2].parse().unwrap()))
        .collect();
        assert_eq!(got.len(), want.len(), "{name}");
        assert!(
            got == want,
            "{name}: rows differ from the log's data lines in order"
        );
        // Page a (pages.addr): first used at its first access in the log.
        let a = addrs()["a"];
        let first = want.iter().find(|w| w.2 >> 12 == a >> 12).unwrap().0;
        assert_eq!(
            sql_scalar(
                &cap,
                &format!(
                    "SELECT first_ordinal FROM mem_page WHERE page = {}",
                    a >> 12 << 12
                )
            ),
            first.to_string(),
            "{name}"
        );
    }
    // With instruction records the axis is instructions.
    let cap = ingest_pages(dir.path(), &["--no-symbolize"]);
    assert_eq!(
        sql_scalar(
            &cap,
            "SELECT value FROM capture_meta WHERE key = 'mem_x_axis'"
        ),
        "instruction"
    );
}

/// The trawlmem valgrind tool (tools/trawlmem, the binary writer of Mibu
/// et al.) built into `dir`: its library directory for VALGRIND_LIB.
fn trawlmem(dir: &Path) -> PathBuf {
    let lib = dir.join("vglib");
    let o = Command::new(root().join("tools/trawlmem/build.sh"))
        .arg(&lib)
        .output()
        .expect("run tools/trawlmem/build.sh");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    lib
}

/// Runs `bin/pages` (no arguments: it writes no maps file) under a
/// valgrind tool with a fixed, empty environment, so that two runs lay the
/// program out alike.
fn under_valgrind(lib: &Path, args: &[&str]) {
    let o = Command::new("env")
        .args(["-i", "PATH=/usr/bin:/bin"])
        .arg(format!("VALGRIND_LIB={}", lib.display()))
        .arg("valgrind")
        .args(args)
        .arg(memlog("bin/pages"))
        .output()
        .expect("valgrind");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn page_rows(cap: &Path) -> Vec<Vec<String>> {
    sql_rows(
        cap,
        "SELECT page, loads, stores, modifies, bytes_accessed, bytes_touched, first_ordinal, last_ordinal \
         FROM mem_page WHERE loads + stores + modifies > 0 ORDER BY page",
    )
}

fn access_rows(cap: &Path) -> Vec<Vec<String>> {
    sql_rows(
        cap,
        "SELECT ordinal, CAST(kind AS VARCHAR), address, size FROM mem_access WHERE CAST(kind AS VARCHAR) <> 'I' \
         ORDER BY ordinal, address, CAST(kind AS VARCHAR), size",
    )
}

/// The binary log trawlmem writes while the program runs holds what
/// lackey's text log of the same run holds: the same data accesses at the
/// same instruction ordinals, so the same `mem_page` rows; `--kinds=LS`
/// (the paper's writer: no modify detection) splits each modify into
/// a load and a store; `--range` keeps the accesses in the range.
#[test]
fn trawlmem_logs_what_lackey_logs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lib = trawlmem(d);
    let lk = d.join("pages.lackey");
    under_valgrind(
        &lib,
        &[
            "--tool=lackey",
            "--trace-mem=yes",
            &format!("--log-file={}", lk.display()),
        ],
    );
    let ingest = |input: &Path, name: &str, extra: &[&str]| -> PathBuf {
        let cap = d.join(name);
        let mut args = vec![
            "ingest",
            input.to_str().unwrap(),
            "-o",
            cap.to_str().unwrap(),
            "--no-symbolize",
        ];
        args.extend_from_slice(extra);
        trawl_ok(&args);
        cap
    };
    let lackey = ingest(&lk, "lackey", &[]);
    let tm = d.join("pages.tmem");
    under_valgrind(
        &lib,
        &["--tool=trawlmem", &format!("--out={}", tm.display())],
    );
    let binary = ingest(&tm, "trawlmem", &[]);
    let pages = page_rows(&lackey);
    assert!(pages.len() > 50, "{}", pages.len());
    assert_eq!(page_rows(&binary), pages, "mem_page: trawlmem vs lackey");
    // Access by access: the same ordinals, kinds and sizes; the same
    // addresses but for a handful of 1-byte stack loads whose address
    // depends on data that differs from run to run (two runs of one tool
    // differ there too: the auxiliary vector's random bytes).
    let acc = access_rows(&lackey);
    assert!(acc.iter().any(|r| r[1] == "M"));
    let got = access_rows(&binary);
    assert_eq!(got.len(), acc.len());
    let key = |r: &Vec<String>| (r[0].clone(), r[1].clone(), r[3].clone());
    assert!(
        got.iter().map(key).eq(acc.iter().map(key)),
        "ordinal, kind, size differ"
    );
    let moved = got.iter().zip(&acc).filter(|(g, a)| g[2] != a[2]).count();
    assert!(
        moved * 1000 < acc.len(),
        "{moved} of {} addresses differ",
        acc.len()
    );
    assert_eq!(
        sql_scalar(
            &binary,
            "SELECT value FROM capture_meta WHERE key = 'mem_instructions'"
        ),
        sql_scalar(
            &lackey,
            "SELECT value FROM capture_meta WHERE key = 'mem_instructions'"
        ),
    );

    // Loads and stores only: lackey's log with each modify written as a
    // load and a store.
    let text = std::fs::read_to_string(&lk).unwrap();
    let split: String = text
        .lines()
        .flat_map(|l| match l.strip_prefix(" M ") {
            Some(r) => vec![format!(" L {r}"), format!(" S {r}")],
            None => vec![l.to_string()],
        })
        .map(|l| l + "\n")
        .collect();
    let lk_ls = d.join("pages-ls.lackey");
    std::fs::write(&lk_ls, split).unwrap();
    let tm_ls = d.join("pages-ls.tmem");
    under_valgrind(
        &lib,
        &[
            "--tool=trawlmem",
            "--kinds=LS",
            &format!("--out={}", tm_ls.display()),
        ],
    );
    assert_eq!(
        page_rows(&ingest(&tm_ls, "trawlmem-ls", &[])),
        page_rows(&ingest(&lk_ls, "lackey-ls", &[])),
        "--kinds=LS"
    );

    // One address range: arrays a and b of pages.c (pages.addr).
    let a = addrs();
    let (lo, hi) = (a["a"].min(a["b"]), a["a"].max(a["b"]) + 2 * 4096);
    let range = format!("{lo:x}-{hi:x}");
    let tm_r = d.join("pages-r.tmem");
    under_valgrind(
        &lib,
        &[
            "--tool=trawlmem",
            &format!("--range={range}"),
            &format!("--out={}", tm_r.display()),
        ],
    );
    let got = page_rows(&ingest(&tm_r, "trawlmem-r", &[]));
    let want = page_rows(&ingest(&lk, "lackey-r", &["--mem-range", &range]));
    assert_eq!(got.len(), 4, "{got:?}");
    assert_eq!(got, want, "--range");
}
