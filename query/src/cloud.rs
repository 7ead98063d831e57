//! The object stores a session reads captures from: DataFusion's registry,
//! which also builds the store of a bucket (`s3://bucket`, `gs://...`,
//! `az://...`) from the process's environment the first time a plan reads
//! it ([`trawl_capture::cloud`]). Sessions use it, and so does every
//! process of a cluster: a client sends the executors URLs, and each
//! executor reaches the bucket with its own credentials.
//!
//! The stores of buckets answer DataFusion's scans with errors that name
//! the object's URL (`s3://bucket/archive/capture=a/perf_sample.parquet`),
//! where the store's own errors name only the key in the bucket.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::object_store::ObjectStoreRegistry;
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use futures::stream::{BoxStream, StreamExt};
use trawl_capture::cloud::describe_text;
use trawl_capture::cloud::object_store::{
    self, path::Path as Key, CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload,
    ObjectMeta, ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions,
};
use url::Url;

/// The stores of a session: the local file system and the buckets',
/// built on first use. Keyed by scheme and whole authority, so that
/// Azure's `abfss://CONTAINER@ACCOUNT.dfs.core.windows.net` of two
/// containers of one account are two stores (DataFusion's own registry
/// keys by host and would give both the first one's).
#[derive(Debug)]
pub struct EnvStores {
    stores: RwLock<HashMap<String, Arc<dyn ObjectStore>>>,
}

impl Default for EnvStores {
    fn default() -> EnvStores {
        let local: Arc<dyn ObjectStore> = Arc::new(object_store::local::LocalFileSystem::new());
        EnvStores {
            stores: RwLock::new(HashMap::from([("file://".to_string(), local)])),
        }
    }
}

/// `scheme://authority` of `url`: the key of its store.
fn root_of(url: &Url) -> String {
    format!("{}://{}", url.scheme(), url.authority())
}

impl ObjectStoreRegistry for EnvStores {
    fn register_store(
        &self,
        url: &Url,
        store: Arc<dyn ObjectStore>,
    ) -> Option<Arc<dyn ObjectStore>> {
        let mut stores = self.stores.write().expect("stores lock");
        stores.insert(root_of(url), store)
    }

    fn deregister_store(&self, url: &Url) -> Result<Arc<dyn ObjectStore>> {
        let mut stores = self.stores.write().expect("stores lock");
        stores.remove(&root_of(url)).ok_or_else(|| {
            DataFusionError::Execution(format!("no object store registered for {url}"))
        })
    }

    fn get_store(&self, url: &Url) -> Result<Arc<dyn ObjectStore>> {
        let root = root_of(url);
        if let Some(s) = self.stores.read().expect("stores lock").get(&root) {
            return Ok(s.clone());
        }
        if !trawl_capture::cloud::is_url(std::path::Path::new(&root)) {
            return Err(DataFusionError::Execution(format!(
                "no object store for {url}: trawl reads s3://, gs://, az:// and abfss:// URLs"
            )));
        }
        let store = bucket_store(&root).map_err(DataFusionError::Execution)?;
        let mut stores = self.stores.write().expect("stores lock");
        Ok(stores.entry(root).or_insert(store).clone())
    }
}

/// The store of `root` (`scheme://bucket`) as sessions read it: built
/// from the environment ([`trawl_capture::cloud::store`]), its errors
/// naming URLs.
pub fn bucket_store(root: &str) -> std::result::Result<Arc<dyn ObjectStore>, String> {
    Ok(Arc::new(Named {
        root: root.to_string(),
        inner: trawl_capture::cloud::store(root)?,
    }))
}

/// A runtime whose object stores are [`EnvStores`].
pub fn runtime() -> Result<Arc<RuntimeEnv>> {
    Ok(Arc::new(
        RuntimeEnvBuilder::new()
            .with_object_store_registry(Arc::new(EnvStores::default()))
            .build()?,
    ))
}

/// A bucket's store whose errors name the object's URL. Ranges are read
/// by the trait's own `get_ranges` (which the clouds' stores keep too):
/// nearby ranges coalesced into one request, through `get_opts` here.
#[derive(Debug)]
struct Named {
    root: String,
    inner: Arc<dyn ObjectStore>,
}

impl std::fmt::Display for Named {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.inner, f)
    }
}

impl Named {
    /// `e`, about `key`, naming its URL.
    fn named(&self, key: &Key, e: object_store::Error) -> object_store::Error {
        named(&self.root, key, e)
    }
}

/// `e` naming `root/key` where it named the key, or nothing, in the
/// server's own words (not the whole HTTP exchange), with a hint where
/// credentials or the network are the likely cause.
fn named(root: &str, key: &Key, e: object_store::Error) -> object_store::Error {
    use object_store::Error as E;
    let url = |path: String| {
        if path.contains("://") {
            path
        } else {
            format!("{root}/{path}")
        }
    };
    match e {
        E::NotFound { path, .. } => E::NotFound {
            path: url(path),
            source: "no such object".into(),
        },
        E::AlreadyExists { path, source } => E::AlreadyExists {
            path: url(path),
            source,
        },
        E::Precondition { path, source } => E::Precondition {
            path: url(path),
            source,
        },
        E::NotModified { path, source } => E::NotModified {
            path: url(path),
            source,
        },
        E::PermissionDenied { path, source } => E::PermissionDenied {
            source: said(&path, &source.to_string()),
            path: url(path),
        },
        E::Unauthenticated { path, source } => E::Unauthenticated {
            source: said(&path, &source.to_string()),
            path: url(path),
        },
        E::Generic { store, source } => E::Generic {
            store,
            source: describe_text(&url(key.to_string()), &source.to_string()).into(),
        },
        e => e,
    }
}

/// The server's words of `text`, with a hint, without repeating `path`.
fn said(path: &str, text: &str) -> Box<dyn std::error::Error + Send + Sync> {
    let t = describe_text(path, text);
    t.strip_prefix(path)
        .and_then(|t| t.strip_prefix(": "))
        .unwrap_or(&t)
        .to_string()
        .into()
}

#[async_trait]
impl ObjectStore for Named {
    async fn put_opts(
        &self,
        location: &Key,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        let r = self.inner.put_opts(location, payload, opts).await;
        r.map_err(|e| self.named(location, e))
    }

    async fn put_multipart_opts(
        &self,
        location: &Key,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        let r = self.inner.put_multipart_opts(location, opts).await;
        r.map_err(|e| self.named(location, e))
    }

    async fn get_opts(
        &self,
        location: &Key,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        let r = self.inner.get_opts(location, options).await;
        r.map_err(|e| self.named(location, e))
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Key>>,
    ) -> BoxStream<'static, object_store::Result<Key>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Key>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        let (root, at) = (self.root.clone(), prefix.cloned().unwrap_or_default());
        let listed = self.inner.list(prefix);
        listed
            .map(move |r| r.map_err(|e| named(&root, &at, e)))
            .boxed()
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Key>,
        offset: &Key,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        let (root, at) = (self.root.clone(), prefix.cloned().unwrap_or_default());
        let listed = self.inner.list_with_offset(prefix, offset);
        listed
            .map(move |r| r.map_err(|e| named(&root, &at, e)))
            .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Key>) -> object_store::Result<ListResult> {
        let r = self.inner.list_with_delimiter(prefix).await;
        r.map_err(|e| self.named(&prefix.cloned().unwrap_or_default(), e))
    }

    async fn copy_opts(
        &self,
        from: &Key,
        to: &Key,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        let r = self.inner.copy_opts(from, to, options).await;
        r.map_err(|e| self.named(from, e))
    }

    async fn rename_opts(
        &self,
        from: &Key,
        to: &Key,
        options: RenameOptions,
    ) -> object_store::Result<()> {
        let r = self.inner.rename_opts(from, to, options).await;
        r.map_err(|e| self.named(from, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_objects_url() {
        let e = object_store::Error::NotFound {
            path: "nightly/capture=a/perf_sample.parquet".into(),
            source: "404".into(),
        };
        let key = Key::from("nightly/capture=a/perf_sample.parquet");
        let text = named("s3://trawl", &key, e).to_string();
        assert!(
            text.contains(
                "s3://trawl/nightly/capture=a/perf_sample.parquet not found: no such object"
            ),
            "{text}"
        );
        // An S3 refusal: its code and message, and what to check.
        let e = object_store::Error::Generic {
            store: "S3",
            source: "Error performing GET http://127.0.0.1:9000/trawl/a/x.parquet - Client error \
                     with status 403 Forbidden: <Error><Code>AccessDenied</Code><Message>Access \
                     Denied</Message></Error>"
                .into(),
        };
        let text = named("s3://trawl", &Key::from("a/x.parquet"), e).to_string();
        assert!(
            text.starts_with("Generic S3 error: s3://trawl/a/x.parquet: AccessDenied: Access Denied (access denied"),
            "{text}"
        );
    }

    #[test]
    fn containers_of_one_azure_account_are_two_stores() {
        let a = Url::parse("abfss://one@acct.dfs.core.windows.net/x").unwrap();
        let b = Url::parse("abfss://two@acct.dfs.core.windows.net/x").unwrap();
        assert_ne!(root_of(&a), root_of(&b));
        assert_eq!(
            root_of(&Url::parse("s3://trawl/a/b").unwrap()),
            "s3://trawl"
        );
    }
}
