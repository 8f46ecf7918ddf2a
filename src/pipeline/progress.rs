//! The progress of a run over capture files, for the caller to show (the
//! binary draws a bar on standard error): the pipeline adds the bytes it
//! reads to a counter the caller's [`Bar`] holds, and drops the bar when
//! the files are read. The library draws nothing.

use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// A run's progress while it is shown: the bytes read so far, which the
/// pipeline adds to; dropped when the files are read (the caller's `stop`
/// runs then).
pub struct Bar {
    pub(crate) consumed: Arc<AtomicU64>,
    stop: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl Bar {
    /// A bar counting into `consumed`; `stop` when the run is done with it.
    pub fn new(consumed: Arc<AtomicU64>, stop: impl FnOnce() + Send + Sync + 'static) -> Bar {
        Bar {
            consumed,
            stop: Some(Box::new(stop)),
        }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            stop();
        }
    }
}

/// What starts a run's [`Bar`].
type Start = Arc<dyn Fn(&[PathBuf], bool) -> Option<Bar> + Send + Sync>;

/// Where a run's progress is shown; by default nowhere.
#[derive(Clone, Default)]
pub struct Progress(Option<Start>);

impl Progress {
    /// Progress shown by `start`, called with the files a run reads and
    /// whether its command prints only once they are read (its bar may then
    /// share a terminal with the output); `None` shows nothing.
    pub fn new(start: impl Fn(&[PathBuf], bool) -> Option<Bar> + Send + Sync + 'static) -> Self {
        Progress(Some(Arc::new(start)))
    }

    /// The bar of a run over `paths`, if one is shown.
    pub(crate) fn start(&self, paths: &[PathBuf], summary_only: bool) -> Option<Bar> {
        self.0.as_ref().and_then(|s| s(paths, summary_only))
    }
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Progress(shown)"
        } else {
            "Progress(none)"
        })
    }
}
