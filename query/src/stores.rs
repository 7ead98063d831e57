//! The object stores a session reads captures from: DataFusion's registry,
//! which also builds the store of a bucket (`s3://bucket`, `gs://...`,
//! `az://...`) from the process's environment the first time a plan reads
//! it ([`trawl_capture::store`]). Sessions use it, and so does every
//! process of a cluster: a client sends the executors URLs, and each
//! executor reaches the bucket with its own credentials.

use std::sync::Arc;

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::object_store::{DefaultObjectStoreRegistry, ObjectStoreRegistry};
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use trawl_capture::store::object_store::ObjectStore;
use url::Url;

/// DataFusion's registry, with the stores of buckets built on first use.
#[derive(Debug, Default)]
pub struct EnvStores {
    inner: DefaultObjectStoreRegistry,
}

impl ObjectStoreRegistry for EnvStores {
    fn register_store(
        &self,
        url: &Url,
        store: Arc<dyn ObjectStore>,
    ) -> Option<Arc<dyn ObjectStore>> {
        self.inner.register_store(url, store)
    }

    fn deregister_store(&self, url: &Url) -> Result<Arc<dyn ObjectStore>> {
        self.inner.deregister_store(url)
    }

    fn get_store(&self, url: &Url) -> Result<Arc<dyn ObjectStore>> {
        self.inner.get_store(url).or_else(|e| {
            let root = format!("{}://{}", url.scheme(), url.authority());
            if !trawl_capture::store::is_url(std::path::Path::new(&root)) {
                return Err(e);
            }
            let store = trawl_capture::store::store(&root).map_err(DataFusionError::Execution)?;
            self.inner.register_store(url, store.clone());
            Ok(store)
        })
    }
}

/// A runtime whose object stores are [`EnvStores`].
pub fn runtime() -> Result<Arc<RuntimeEnv>> {
    Ok(Arc::new(
        RuntimeEnvBuilder::new()
            .with_object_store_registry(Arc::new(EnvStores::default()))
            .build()?,
    ))
}
