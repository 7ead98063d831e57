//! Executables and debug files by build-id from debuginfod servers
//! (elfutils' protocol: `GET URL/buildid/BUILDID/executable` and
//! `.../debuginfo`), for modules whose files are not on this machine.
//!
//! Configured as elfutils' client is: `DEBUGINFOD_URLS` (space-separated),
//! `DEBUGINFOD_CACHE_PATH` (default `$XDG_CACHE_HOME/debuginfod_client`,
//! else `~/.cache/debuginfod_client`: files fetched by gdb, perf or
//! valgrind are reused, and the other way round), `DEBUGINFOD_TIMEOUT`
//! (seconds, default 90) and `DEBUGINFOD_MAXSIZE` (bytes); trawl's
//! `--debuginfod URL` replaces the URLs. Unset: nothing is fetched.
//!
//! A download goes to a temporary file beside its place in the cache, is
//! accepted only if it is an ELF file with the requested build-id, and is
//! then renamed into place (`CACHE/BUILDID/executable`), so a killed run
//! or a wrong answer never leaves a bad file in the cache.

use std::collections::HashSet;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Which file of a build-id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Artifact {
    Executable,
    Debuginfo,
}

impl Artifact {
    fn name(self) -> &'static str {
        match self {
            Artifact::Executable => "executable",
            Artifact::Debuginfo => "debuginfo",
        }
    }
}

/// The servers and the cache.
#[derive(Clone, Debug)]
pub struct Debuginfod {
    pub urls: Vec<String>,
    pub cache: PathBuf,
    /// Time limit of one download (connect and transfer).
    pub timeout: Duration,
    /// Largest file accepted.
    pub max_size: u64,
    /// Build-ids and files no server had, this run (not asked twice).
    missing: Arc<Mutex<HashSet<(String, Artifact)>>>,
}

impl Debuginfod {
    /// Servers `urls` with the environment's cache, time limit and size
    /// limit; None when `urls` is empty.
    pub fn new(urls: Vec<String>) -> Option<Debuginfod> {
        let urls: Vec<String> = urls
            .into_iter()
            .map(|u| u.trim().trim_end_matches('/').to_string())
            .filter(|u| !u.is_empty())
            .collect();
        if urls.is_empty() {
            return None;
        }
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let cache = env("DEBUGINFOD_CACHE_PATH")
            .map(PathBuf::from)
            .or_else(|| env("XDG_CACHE_HOME").map(|x| PathBuf::from(x).join("debuginfod_client")))
            .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".cache/debuginfod_client")))
            .unwrap_or_else(|| std::env::temp_dir().join("debuginfod_client"));
        let timeout = env("DEBUGINFOD_TIMEOUT")
            .and_then(|t| t.parse::<u64>().ok())
            .filter(|&t| t > 0)
            .unwrap_or(90);
        let max_size = env("DEBUGINFOD_MAXSIZE")
            .and_then(|t| t.parse::<u64>().ok())
            .filter(|&t| t > 0)
            .unwrap_or(4 << 30);
        Some(Debuginfod {
            urls,
            cache,
            timeout: Duration::from_secs(timeout),
            max_size,
            missing: Default::default(),
        })
    }

    /// The servers of `DEBUGINFOD_URLS`, if set.
    pub fn from_env() -> Option<Debuginfod> {
        let urls = std::env::var("DEBUGINFOD_URLS").ok()?;
        Debuginfod::new(urls.split_whitespace().map(str::to_string).collect())
    }

    /// The file's place in the cache.
    pub fn cached_path(&self, build_id: &str, what: Artifact) -> PathBuf {
        self.cache.join(build_id).join(what.name())
    }

    /// The file `what` of `build_id` (lowercase hex): from the cache, else
    /// from the first server that has it. Err says what each server
    /// answered.
    pub fn fetch(&self, build_id: &str, what: Artifact) -> Result<PathBuf, String> {
        if build_id.len() < 4 || !build_id.bytes().all(|c| c.is_ascii_hexdigit()) {
            return Err(format!("debuginfod: {build_id:?} is not a build-id"));
        }
        let bid = build_id.to_ascii_lowercase();
        let dest = self.cached_path(&bid, what);
        if verify(&dest, &bid).is_ok() {
            return Ok(dest);
        }
        let key = (bid.clone(), what);
        if self.missing.lock().unwrap().contains(&key) {
            return Err(format!("debuginfod: no {} for {bid}", what.name()));
        }
        let mut answers = Vec::new();
        for url in &self.urls {
            let full = format!("{url}/buildid/{bid}/{}", what.name());
            match self.download(&full, &dest, &bid) {
                Ok(()) => return Ok(dest),
                Err(e) => answers.push(format!("{full}: {e}")),
            }
        }
        self.missing.lock().unwrap().insert(key);
        Err(format!("debuginfod: {}", answers.join("; ")))
    }

    fn download(&self, url: &str, dest: &Path, bid: &str) -> Result<(), String> {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(self.timeout))
            .http_status_as_error(false)
            .user_agent(concat!("trawl/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        let resp = agent.get(url).call().map_err(|e| e.to_string())?;
        let status = resp.status();
        if status != 200 {
            return Err(format!("HTTP {}", status.as_u16()));
        }
        let dir = dest.parent().ok_or("cache path has no directory")?;
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let tmp = dir.join(format!(
            ".{}.trawl-tmp-{}",
            dest.file_name().and_then(|n| n.to_str()).unwrap_or("file"),
            std::process::id()
        ));
        let result = (|| {
            let mut f =
                std::fs::File::create(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
            let mut body = resp.into_body().into_reader().take(self.max_size + 1);
            let n = std::io::copy(&mut body, &mut f).map_err(|e| format!("reading: {e}"))?;
            if n > self.max_size {
                return Err(format!(
                    "larger than {} bytes (DEBUGINFOD_MAXSIZE)",
                    self.max_size
                ));
            }
            f.flush().map_err(|e| e.to_string())?;
            f.sync_all().map_err(|e| e.to_string())?;
            verify(&tmp, bid)?;
            std::fs::rename(&tmp, dest).map_err(|e| format!("{}: {e}", dest.display()))
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result
    }
}

/// `path` is a regular ELF file whose build-id is `bid`.
fn verify(path: &Path, bid: &str) -> Result<(), String> {
    let l = crate::file::Loaded::open(path).ok_or("not an ELF file")?;
    match l.build_id() {
        Some(b) if b == bid => Ok(()),
        Some(b) => Err(format!("the file has build-id {b}")),
        None => Err("the file has no build-id".into()),
    }
}
