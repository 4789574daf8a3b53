//! The janitor thread: ends trees whose handle was dropped without `terminate`, so `Drop`
//! never blocks and still leaves nothing behind (orphans killed and reaped).

use std::{
    sync::{OnceLock, mpsc},
    time::Duration,
};

use super::{teardown::teardown, tree::TreeId, watchdog::Watchdog};

/// A dropped tree to end, with its watchdog, stopped once the sweep is done.
type Work = (TreeId, Option<Watchdog>);

/// Ends `id` in the background; without a janitor thread (it could not start), the watchdog's
/// pipe is closed instead, so the watchdog sweeps.
pub(super) fn end_later(id: TreeId, watchdog: Option<Watchdog>) {
    static JANITOR: OnceLock<Option<mpsc::Sender<Work>>> = OnceLock::new();
    let janitor = JANITOR.get_or_init(|| {
        let (work, queue) = mpsc::channel::<Work>();
        std::thread::Builder::new()
            .name("agent-tools-janitor".into())
            .spawn(move || {
                for (id, watchdog) in queue {
                    teardown(&id, Duration::ZERO);
                    if let Some(watchdog) = watchdog {
                        watchdog.stop();
                    }
                }
            })
            .ok()
            .map(|_| work)
    });
    let unsent = match janitor {
        Some(janitor) => janitor.send((id, watchdog)).err().map(|e| e.0.1),
        None => Some(watchdog),
    };
    if let Some(Some(watchdog)) = unsent {
        watchdog.release();
    }
}
