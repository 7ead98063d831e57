//! `trawl demo`: the README's tour on the committed fixtures, one capture
//! of each kind of input with its headline report, run as the commands
//! shown (this binary, in a scratch directory that links the fixtures).

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

/// The checkout this trawl was built from, else the checkout the command is
/// run in (an installed trawl whose build directory is gone).
pub(crate) fn fixtures_dir() -> PathBuf {
    find_fixtures(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures"),
        std::env::current_dir().ok().as_deref(),
    )
}

fn find_fixtures(built: &Path, cwd: Option<&Path>) -> PathBuf {
    if has_fixtures(built) {
        return built.to_path_buf();
    }
    cwd.map(|d| d.join("fixtures"))
        .filter(|d| has_fixtures(d))
        .unwrap_or_else(|| built.to_path_buf())
}

fn has_fixtures(dir: &Path) -> bool {
    dir.join("perf/hot-fp.data").is_file()
}

/// (what it shows, the commands).
const TOUR: &[(&str, &[&[&str]])] = &[
    (
        "CPU, from perf.data: which functions took the time",
        &[
            &["ingest", "fixtures/perf/hot-fp.data", "-o", "hot", "--debug-dir", "fixtures/perf/bin"],
            &["report", "hotspots", "hot", "--no-inline", "-n", "8"],
        ],
    ),
    (
        "System calls, from strace -k: memory still held at exit, by function and line",
        &[
            &["ingest", "fixtures/phases/run1/app.strace", "-o", "app", "--debug-dir", "fixtures/phases/bin"],
            &["report", "unfreed", "app"],
        ],
    ),
    (
        "Monitoring metrics (vmstat, sar): when the machine ran out of CPU",
        &[
            &["ingest", "fixtures/phases/run1/vmstat.log", "fixtures/phases/run1/sar.csv", "-o", "metrics"],
            &["report", "exhaustion", "metrics", "--rule", "cpu_user+cpu_sys > 90 and runq > 2", "--min-duration", "2s"],
        ],
    ),
    (
        "Memory accesses, from a valgrind lackey log: pages that could be shared",
        &[
            &["ingest", "fixtures/memlog/pages.lackey.zst", "fixtures/memlog/pages.maps", "-o", "pages", "--debug-dir", "fixtures/memlog/bin"],
            &["report", "page-reuse", "pages"],
        ],
    ),
    (
        "Energy, from RAPL readings (simulated: fixtures/energy) and the samples of the same run",
        &[
            &["ingest", "fixtures/energy/sim.data", "fixtures/energy/sim-rapl.csv", "-o", "energy", "--debug-dir", "fixtures/perf/bin"],
            &["report", "energy", "energy", "--by", "function"],
        ],
    ),
    (
        "Your own questions, in SQL",
        &[&[
            "sql",
            "hot",
            "SELECT comm, count(*) AS samples, round(sum(period) / 1e6, 1) AS cpu_ms FROM perf_sample GROUP BY comm",
        ]],
    ),
];

/// An argument as a shell would need it.
fn quoted(a: &str) -> String {
    if a.chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./=:,".contains(c))
    {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', r"'\''"))
    }
}

pub(crate) fn demo() -> Result<()> {
    let fx = fixtures_dir();
    if !has_fixtures(&fx) {
        bail!(
            "the bundled fixtures are not at {} nor in ./fixtures (run it in a checkout of trawl)",
            fx.display()
        );
    }
    let tmp = tempfile::tempdir()?;
    std::os::unix::fs::symlink(&fx, tmp.path().join("fixtures"))?;
    let exe = crate::self_command()?;
    println!(
        "(in a scratch directory where `fixtures` is {})",
        fx.display()
    );
    for (title, cmds) in TOUR {
        println!("\n# {title}");
        for args in *cmds {
            let shown: Vec<String> = args.iter().map(|a| quoted(a)).collect();
            println!("$ trawl {}", shown.join(" "));
            use std::io::Write;
            std::io::stdout().flush()?;
            let st = std::process::Command::new(&exe[0])
                .args(&exe[1..])
                .args(*args)
                .current_dir(tmp.path())
                .status()?;
            if !st.success() {
                bail!("`trawl {}` failed", shown.join(" "));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checkout(root: &Path) {
        let perf = root.join("fixtures/perf");
        std::fs::create_dir_all(&perf).unwrap();
        std::fs::write(perf.join("hot-fp.data"), b"PERFILE2").unwrap();
    }

    #[test]
    fn fixtures_of_the_build_else_of_the_working_directory() {
        let t = tempfile::tempdir().unwrap();
        let (build, cwd) = (t.path().join("build"), t.path().join("cwd"));
        std::fs::create_dir_all(&cwd).unwrap();
        let built = build.join("fixtures");
        // Neither has them: the build's path, for the error message.
        assert_eq!(find_fixtures(&built, Some(&cwd)), built);
        assert_eq!(find_fixtures(&built, None), built);
        // Only the working directory (the build directory is gone).
        checkout(&cwd);
        assert_eq!(find_fixtures(&built, Some(&cwd)), cwd.join("fixtures"));
        // Both: the build's own.
        checkout(&build);
        assert_eq!(find_fixtures(&built, Some(&cwd)), built);
    }
}
