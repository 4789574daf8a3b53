//! One kernel's place in a run: the kernel (a child process or the in-process JavaScript
//! engine), its slot (held by the kernel's worker while a cell runs), and the jobs its worker
//! takes from its queue.

use std::{
    path::PathBuf,
    sync::{Arc, atomic::AtomicBool},
};

use agent_tools_support::{Tier, process::WeakProcessGroup};
use tokio::sync::mpsc;

use crate::{bridge::ToolBridge, child::ChildKernel, js::JsKernel, running::CellRecord};

/// A cell sent to a kernel.
pub(crate) struct Job {
    pub(crate) record: Arc<CellRecord>,
    pub(crate) code: String,
    pub(crate) reset: bool,
    pub(crate) root: PathBuf,
    pub(crate) bridge: Arc<dyn ToolBridge>,
}

pub(crate) enum Kernel {
    Child(Box<ChildKernel>),
    Js(JsKernel),
}

impl Kernel {
    pub(crate) async fn shutdown(self) {
        match self {
            Kernel::Child(k) => k.shutdown().await,
            Kernel::Js(k) => k.shutdown().await,
        }
    }
}

#[derive(Default)]
pub(crate) struct Slot {
    pub(crate) kernel: Option<Kernel>,
    /// Why the previous kernel's state is gone, reported when the next one starts.
    pub(crate) lost: Option<String>,
    pub(crate) interpreter: String,
    pub(crate) version: String,
    pub(crate) cwd: Option<String>,
    /// What the next result should say about how the previous cell ended (a cancelled cell
    /// that was interrupted: the client never saw that result).
    pub(crate) carry: Option<String>,
    /// The tier the kernel's `tool()` calls may reach, fixed when the kernel started: the lower
    /// of the configured `bridge_tier` and the starting caller's ceiling.
    pub(crate) ceiling: Tier,
}

/// One kernel's place: its slot (held by its worker while a cell runs), its worker's queue, and
/// what can be reached without the slot's lock (to kill a busy kernel at shutdown).
pub(crate) struct SlotHandle {
    pub(crate) slot: tokio::sync::Mutex<Slot>,
    /// The kernel's tree while one runs (weak: the kernel owns it).
    pub(crate) group: parking_lot::Mutex<WeakProcessGroup>,
    pub(crate) js_interrupt: parking_lot::Mutex<Option<Arc<AtomicBool>>>,
    /// The worker's queue, in arrival order; dropped at shutdown.
    pub(crate) jobs: parking_lot::Mutex<Option<mpsc::UnboundedSender<Job>>>,
    /// The last cell sent here, to say what a new one waits behind.
    pub(crate) last_sent: parking_lot::Mutex<Option<Arc<CellRecord>>>,
    pub(crate) worker: parking_lot::Mutex<Option<tokio::task::JoinHandle<()>>>,
}
