//! Captures and archives in object storage: S3 and S3-compatible stores
//! (`s3://bucket/prefix`), Google Cloud Storage (`gs://bucket/prefix`) and
//! Azure Blob Storage (`az://container/prefix`), through the `object_store`
//! crate DataFusion reads files with. A capture there has the layout of a
//! local one (`PREFIX/<table>.parquet`), an archive too
//! (`PREFIX/segment=NAME/<table>.parquet`, the manifest at `PREFIX/`).
//!
//! Settings come from the environment the clouds' own tools read: for S3
//! `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`,
//! `AWS_REGION`, `AWS_ENDPOINT_URL` (an S3-compatible server),
//! `AWS_ALLOW_HTTP`, ..., then the profile `AWS_PROFILE` (else `default`)
//! of the shared files `~/.aws/credentials` and `~/.aws/config`
//! (`AWS_SHARED_CREDENTIALS_FILE`, `AWS_CONFIG_FILE`); the environment
//! wins, as with the AWS CLI. GCS reads `GOOGLE_*` (`GOOGLE_SERVICE_ACCOUNT`,
//! ...), Azure `AZURE_*`. One store per bucket per process.
//!
//! Requests are retried a few times on server errors (4 retries within a
//! minute) and time out (connections after 5 s, requests after 120 s):
//! a store that cannot be reached is an error, never a hang. Errors of
//! these functions name the object's URL.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures::TryStreamExt;
use object_store::path::Path as Key;
use object_store::{ClientOptions, ObjectMeta, ObjectStore, ObjectStoreExt, RetryConfig};

pub use object_store;

/// The version of an object a conditional write expects.
pub type Version = object_store::UpdateVersion;

/// A key's part as it was named: keys encode characters object stores
/// advise against (`capture=run~2` is stored as `capture=run%7E2`).
pub fn decoded(part: &str) -> String {
    percent_encoding::percent_decode_str(part)
        .decode_utf8_lossy()
        .into_owned()
}

/// A place in an object store: the store (one per bucket) and a prefix.
#[derive(Clone)]
pub struct Location {
    /// `scheme://bucket`: the store's URL, as DataFusion registers it.
    pub root: String,
    /// The prefix in the bucket (no leading or trailing `/`).
    pub prefix: Key,
    pub store: Arc<dyn ObjectStore>,
}

impl std::fmt::Debug for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.url())
    }
}

/// Whether a capture argument names an object store (`s3://...`, ...)
/// rather than a local path.
pub fn is_url(arg: &Path) -> bool {
    split(&arg.to_string_lossy()).is_some()
}

/// `(scheme, bucket, prefix)` of an object store URL.
fn split(url: &str) -> Option<(&str, &str, &str)> {
    let (scheme, rest) = url.split_once("://")?;
    if !matches!(
        scheme,
        "s3" | "s3a" | "gs" | "az" | "azure" | "abfs" | "abfss"
    ) {
        return None;
    }
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    (!bucket.is_empty()).then_some((scheme, bucket, prefix.trim_matches('/')))
}

/// The location `url` names, with its bucket's store.
pub fn open(url: &str) -> Result<Location, String> {
    let (scheme, bucket, prefix) = split(url).ok_or_else(|| {
        format!("{url}: not an object store URL (s3://, gs://, az://BUCKET/PREFIX)")
    })?;
    let root = format!("{scheme}://{bucket}");
    Ok(Location {
        store: store(&root)?,
        prefix: Key::from(prefix),
        root,
    })
}

/// The store of `root` (`scheme://bucket`), built once per process from
/// the environment.
pub fn store(root: &str) -> Result<Arc<dyn ObjectStore>, String> {
    static STORES: OnceLock<Mutex<HashMap<String, Arc<dyn ObjectStore>>>> = OnceLock::new();
    let mut stores = STORES
        .get_or_init(Default::default)
        .lock()
        .expect("store lock");
    if let Some(s) = stores.get(root) {
        return Ok(s.clone());
    }
    let (scheme, _, _) = split(root).ok_or_else(|| format!("{root}: not an object store URL"))?;
    // A few retries, bounded in time; connections that cannot be made
    // fail fast.
    let retry = RetryConfig {
        max_retries: 4,
        retry_timeout: Duration::from_secs(60),
        ..Default::default()
    };
    let client = ClientOptions::new()
        .with_connect_timeout(Duration::from_secs(5))
        .with_timeout(Duration::from_secs(120));
    // The environment over trawl's defaults (`AWS_ALLOW_HTTP`,
    // `AWS_TIMEOUT`, ... are client options too), as `from_env` reads it.
    fn env<K: std::str::FromStr>(prefix: &str) -> Vec<(K, String)> {
        std::env::vars()
            .filter(|(k, _)| k.starts_with(prefix))
            .filter_map(|(k, v)| Some((k.to_ascii_lowercase().parse().ok()?, v)))
            .collect()
    }
    let built: object_store::Result<Arc<dyn ObjectStore>> = match scheme {
        "s3" | "s3a" => {
            let mut b = object_store::aws::AmazonS3Builder::new()
                .with_retry(retry)
                .with_client_options(client);
            for (k, v) in env("AWS_") {
                b = b.with_config(k, v);
            }
            aws_profile(b)
                .with_url(root)
                .build()
                .map(|s| Arc::new(s) as _)
        }
        "gs" => {
            let mut b = object_store::gcp::GoogleCloudStorageBuilder::new()
                .with_retry(retry)
                .with_client_options(client);
            for (k, v) in env("GOOGLE_") {
                b = b.with_config(k, v);
            }
            b.with_url(root).build().map(|s| Arc::new(s) as _)
        }
        _ => {
            let mut b = object_store::azure::MicrosoftAzureBuilder::new()
                .with_retry(retry)
                .with_client_options(client);
            for (k, v) in env("AZURE_") {
                b = b.with_config(k, v);
            }
            b.with_url(root).build().map(|s| Arc::new(s) as _)
        }
    };
    let s = built.map_err(|e| format!("{root}: {e}"))?;
    stores.insert(root.to_string(), s.clone());
    Ok(s)
}

/// `b` with what the shared AWS files say for the profile, where the
/// environment says nothing.
fn aws_profile(mut b: object_store::aws::AmazonS3Builder) -> object_store::aws::AmazonS3Builder {
    use object_store::aws::AmazonS3ConfigKey as K;
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let profile = env("AWS_PROFILE")
        .or_else(|| env("AWS_DEFAULT_PROFILE"))
        .unwrap_or_else(|| "default".into());
    let home = env("HOME").unwrap_or_default();
    let file = |var: &str, name: &str| env(var).unwrap_or_else(|| format!("{home}/.aws/{name}"));
    let mut set = |key: K, value: Option<&str>, over: &[&str]| {
        if let Some(v) = value.filter(|_| over.iter().all(|k| env(k).is_none())) {
            b = std::mem::take(&mut b).with_config(key, v);
        }
    };
    // Keys in `credentials` under `[NAME]`; in `config` under
    // `[profile NAME]` (`[default]` for the default profile).
    let creds = ini::Ini::load_from_file(file("AWS_SHARED_CREDENTIALS_FILE", "credentials")).ok();
    let config = ini::Ini::load_from_file(file("AWS_CONFIG_FILE", "config")).ok();
    let config_section = if profile == "default" {
        "default".to_string()
    } else {
        format!("profile {profile}")
    };
    for (ini, section) in [(&config, &config_section), (&creds, &profile)] {
        let Some(s) = ini.as_ref().and_then(|i| i.section(Some(section.as_str()))) else {
            continue;
        };
        set(
            K::Region,
            s.get("region"),
            &["AWS_REGION", "AWS_DEFAULT_REGION"],
        );
        set(
            K::Endpoint,
            s.get("endpoint_url"),
            &["AWS_ENDPOINT_URL", "AWS_ENDPOINT"],
        );
        let keyed = env("AWS_ACCESS_KEY_ID").is_some();
        if !keyed {
            set(K::AccessKeyId, s.get("aws_access_key_id"), &[]);
            set(K::SecretAccessKey, s.get("aws_secret_access_key"), &[]);
            set(K::Token, s.get("aws_session_token"), &[]);
        }
    }
    b
}

/// What an error from the store means for the user, naming `url`.
pub fn describe(url: &str, e: &object_store::Error) -> String {
    if matches!(e, object_store::Error::NotFound { .. }) {
        return format!("{url}: no such object");
    }
    describe_text(url, &e.to_string())
}

/// [`describe`] of an error's text.
pub fn describe_text(url: &str, text: &str) -> String {
    let hint = if text.contains("403")
        || text.contains("AccessDenied")
        || text.contains("SignatureDoesNotMatch")
        || text.contains("InvalidAccessKeyId")
        || text.contains("privileges")
    {
        " (access denied: check the credentials, e.g. AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or AWS_PROFILE)"
    } else if text.contains("NoSuchBucket") {
        " (no such bucket)"
    } else if text.contains("connect")
        || text.contains("timed out")
        || text.contains("error sending request")
    {
        " (the store could not be reached: check AWS_ENDPOINT_URL / the network)"
    } else {
        ""
    };
    // The server's own words (`<Code>..</Code><Message>..</Message>` of an
    // S3 error) rather than the whole exchange.
    let tag = |t: &str| {
        let open = format!("<{t}>");
        let at = text.find(&open)? + open.len();
        let len = text[at..].find('<')?;
        Some(text[at..at + len].to_string())
    };
    match (tag("Code"), tag("Message")) {
        (Some(code), Some(msg)) => format!("{url}: {code}: {msg}{hint}"),
        _ => format!("{url}: {text}{hint}"),
    }
}

impl Location {
    /// `scheme://bucket/prefix`.
    pub fn url(&self) -> String {
        self.url_of(&self.prefix)
    }

    /// The URL of `key`.
    pub fn url_of(&self, key: &Key) -> String {
        if key.as_ref().is_empty() {
            self.root.clone()
        } else {
            format!("{}/{}", self.root, key)
        }
    }

    /// The key of `rel` (`/`-separated names, each encoded as a key's
    /// part) under the prefix.
    pub fn key(&self, rel: &str) -> Key {
        rel.split('/')
            .filter(|p| !p.is_empty())
            .fold(self.prefix.clone(), |k, part| k.join(part))
    }

    /// The location of `key` (as a listing gives it) in the same store.
    pub fn at_key(&self, key: Key) -> Location {
        Location {
            prefix: key,
            ..self.clone()
        }
    }

    /// The location of `rel` under this one.
    pub fn child(&self, rel: &str) -> Location {
        Location {
            prefix: self.key(rel),
            ..self.clone()
        }
    }

    /// The whole object `rel` (None when there is none).
    pub async fn read(&self, rel: &str) -> Result<Option<bytes::Bytes>, String> {
        let key = self.key(rel);
        let got = match self.store.get(&key).await {
            Ok(g) => g.bytes().await,
            Err(e) => Err(e),
        };
        match got {
            Ok(b) => Ok(Some(b)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(describe(&self.url_of(&key), &e)),
        }
    }

    /// Every object under the prefix (as a directory: `prefix/...`), by
    /// key.
    pub async fn list(&self) -> Result<Vec<ObjectMeta>, String> {
        let prefix = (!self.prefix.as_ref().is_empty()).then_some(&self.prefix);
        let mut out: Vec<ObjectMeta> = self
            .store
            .list(prefix)
            .try_collect()
            .await
            .map_err(|e| describe(&self.url(), &e))?;
        out.sort_by(|a, b| a.location.cmp(&b.location));
        Ok(out)
    }

    /// Writes `bytes` as object `rel`, replacing it (one request; each
    /// object appears whole).
    pub async fn write(&self, rel: &str, bytes: Vec<u8>) -> Result<(), String> {
        let key = self.key(rel);
        self.store
            .put(&key, bytes.into())
            .await
            .map(|_| ())
            .map_err(|e| describe(&self.url_of(&key), &e))
    }

    /// Writes `bytes` as object `rel` if there is none (an atomic
    /// create-if-absent on stores that honour conditional writes, as S3,
    /// GCS, Azure, MinIO and R2 do): the version written, or None when the
    /// object exists.
    pub async fn create(&self, rel: &str, bytes: Vec<u8>) -> Result<Option<Version>, String> {
        self.put_mode(rel, bytes, object_store::PutMode::Create)
            .await
    }

    /// Replaces object `rel` if it is still at `version` (a conditional
    /// write): the version written, or None when it changed meanwhile.
    pub async fn replace(
        &self,
        rel: &str,
        bytes: Vec<u8>,
        version: &Version,
    ) -> Result<Option<Version>, String> {
        self.put_mode(rel, bytes, object_store::PutMode::Update(version.clone()))
            .await
    }

    async fn put_mode(
        &self,
        rel: &str,
        bytes: Vec<u8>,
        mode: object_store::PutMode,
    ) -> Result<Option<Version>, String> {
        let key = self.key(rel);
        let opts = object_store::PutOptions::from(mode);
        match self.store.put_opts(&key, bytes.into(), opts).await {
            Ok(r) => Ok(Some(Version {
                e_tag: r.e_tag,
                version: r.version,
            })),
            Err(object_store::Error::AlreadyExists { .. })
            | Err(object_store::Error::Precondition { .. }) => Ok(None),
            Err(e) => Err(describe(&self.url_of(&key), &e)),
        }
    }

    /// The whole object `rel`, its version and when the store last wrote
    /// it (by the store's clock); None when there is none.
    pub async fn read_versioned(
        &self,
        rel: &str,
    ) -> Result<Option<(bytes::Bytes, Version, std::time::SystemTime)>, String> {
        let key = self.key(rel);
        let got = match self.store.get(&key).await {
            Ok(g) => {
                let meta = g.meta.clone();
                g.bytes().await.map(|b| (b, meta))
            }
            Err(e) => Err(e),
        };
        match got {
            Ok((b, meta)) => Ok(Some((
                b,
                Version {
                    e_tag: meta.e_tag,
                    version: meta.version,
                },
                meta.last_modified.into(),
            ))),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(describe(&self.url_of(&key), &e)),
        }
    }

    /// Writes object `key` into the local file `path`, as it arrives.
    pub async fn download(&self, key: &Key, path: &Path) -> Result<(), String> {
        use futures::StreamExt;
        use tokio::io::AsyncWriteExt;
        let url = self.url_of(key);
        let mut f = tokio::fs::File::create(path)
            .await
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let mut body = self
            .store
            .get(key)
            .await
            .map_err(|e| describe(&url, &e))?
            .into_stream();
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| describe(&url, &e))?;
            f.write_all(&chunk)
                .await
                .map_err(|e| format!("{}: {e}", path.display()))?;
        }
        f.flush()
            .await
            .map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The object at the prefix itself, if the URL names one.
    pub async fn head(&self) -> Result<Option<ObjectMeta>, String> {
        match self.store.head(&self.prefix).await {
            Ok(m) => Ok(Some(m)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(describe(&self.url(), &e)),
        }
    }

    /// Uploads the local file `path` as object `rel`: in parts when it is
    /// large (a part upload interrupted leaves no object).
    pub async fn upload(&self, rel: &str, path: &Path) -> Result<(), String> {
        use tokio::io::AsyncWriteExt;
        let key = self.key(rel);
        let url = self.url_of(&key);
        let mut f = tokio::fs::File::open(path)
            .await
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let mut w =
            object_store::buffered::BufWriter::with_capacity(self.store.clone(), key, 16 << 20);
        let copied = tokio::io::copy(&mut f, &mut w).await;
        match copied {
            Ok(_) => w
                .shutdown()
                .await
                .map_err(|e| describe_text(&url, &e.to_string())),
            Err(e) => {
                let _ = w.abort().await;
                Err(describe_text(&url, &e.to_string()))
            }
        }
    }

    /// Removes object `rel` (absent is fine).
    pub async fn delete(&self, rel: &str) -> Result<(), String> {
        let key = self.key(rel);
        match self.store.delete(&key).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(describe(&self.url_of(&key), &e)),
        }
    }
}

/// Runs `f` to completion from synchronous code, on a runtime kept for
/// the process (the stores' connections live on it), from any thread,
/// inside an async runtime or not, except from a future running on that
/// runtime itself (its two workers would wait on each other).
pub fn block_on<F>(f: F) -> F::Output
where
    F: std::future::Future + Send,
    F::Output: Send,
{
    static IO: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    let rt = IO.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("trawl-object-store")
            .enable_all()
            .build()
            .expect("an I/O runtime")
    });
    if tokio::runtime::Handle::try_current().is_err() {
        return rt.block_on(f);
    }
    // Inside a runtime: wait on another thread.
    std::thread::scope(|s| {
        s.spawn(|| rt.block_on(f))
            .join()
            .expect("object store call")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_a_bucket_and_a_prefix() {
        assert!(is_url(Path::new("s3://b/archive")));
        assert!(is_url(Path::new("gs://b")));
        assert!(!is_url(Path::new("/tmp/s3://x")));
        assert!(!is_url(Path::new("archive")));
        assert!(!is_url(Path::new("file:///tmp/a")));
        assert_eq!(split("s3://b/a/b/"), Some(("s3", "b", "a/b")));
        assert_eq!(split("s3://b"), Some(("s3", "b", "")));
        assert_eq!(split("s3:///x"), None);
    }
}
