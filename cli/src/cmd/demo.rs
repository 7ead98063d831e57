//! `trawl demo`: the reports on the committed fixtures.

use crate::*;

pub(crate) fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures")
}

pub(crate) async fn demo() -> Result<()> {
    let fx = fixtures_dir().join("perf");
    let input = fx.join("hot-fp.data");
    if !input.is_file() {
        bail!(
            "bundled fixture {} not found (run from a checkout)",
            input.display()
        );
    }
    let tmp = tempfile::tempdir()?;
    let cap = tmp.path().join("hot");
    println!(
        "$ trawl ingest fixtures/perf/hot-fp.data --debug-dir fixtures/perf/bin -o {}",
        cap.display()
    );
    let args = IngestArgs {
        inputs: vec![input],
        output: cap.clone(),
        conv: ConvertArgs {
            strict: false,
            tz: None,
            no_symbolize: false,
            no_unwind: false,
            max_expansion: trawl_ingest::compressed::ExpansionLimit::DEFAULT_RATIO,
            mem: MemArgs::default(),
            sym: SymArgs {
                debug_dirs: vec![fx.join("bin")],
                ..Default::default()
            },
        },
    };
    ingest(&args)?;
    println!("\n$ trawl report hotspots {} --limit 12", cap.display());
    let s = crate::open(std::slice::from_ref(&cap)).await?;
    let weight = analyses::Weight::Period;
    let event = analyses::choose_event(&s, None).await?;
    println!("event: {event}");
    let sel = analyses::Selection {
        filter: &SampleFilter::default(),
        event: &event,
        weight: &weight,
        opts: Default::default(),
    };
    let df = analyses::hotspots(&s, HotspotKey::Function, &sel)
        .await?
        .limit(0, Some(12))?;
    output::write(&df.collect().await?, &OutputOpts::default())?;
    let q = "SELECT comm, pid, count(*) AS samples, round(sum(period) / 1e6, 1) AS cpu_ms FROM perf_sample GROUP BY comm, pid ORDER BY samples DESC";
    println!("\n$ trawl sql {} \"{q}\"", cap.display());
    let df = s.sql(q).await?;
    output::write(&df.collect().await?, &OutputOpts::default())?;
    Ok(())
}
