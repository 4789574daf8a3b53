//! Starting, restarting, reloading and releasing one run's servers: a lease per slot of the
//! pool, the spawn lock, crash records and the restart cap.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use tokio_util::sync::CancellationToken;

use super::{Supervisor, Target};
use crate::{
    error::LspError,
    paths::display_relative,
    pool::{Slot, SlotKey},
    server::Server,
};

impl Supervisor {
    /// This run's lease on the slot of `target`, taken from the pool on first use.
    fn slot(&self, target: &Target) -> Result<Arc<Slot>, LspError> {
        let mut slots = self.inner.slots.lock();
        // Checked under the lock `shutdown` takes after cancelling: no lease after it.
        if self.inner.closing.is_cancelled() {
            return Err(LspError::Failed("the run is ending; no server starts now".into()));
        }
        let name = (target.def.id.clone(), target.root.root.clone());
        if let Some(slot) = slots.get(&name) {
            return Ok(slot.clone());
        }
        let config = &self.inner.config;
        let key = SlotKey::new(
            &target.def,
            &target.root.root,
            &target.command,
            self.allow_project_code(),
            (config.request_timeout_ms, config.startup_timeout_ms),
        );
        let slot =
            self.inner.pool.lease(key, &target.def, &target.root, self.inner.run).ok_or_else(
                || LspError::Failed("the host is stopping; no server starts now".into()),
            )?;
        slots.insert(name, slot.clone());
        Ok(slot)
    }

    /// The running server for `target`, started (or restarted after a crash) if needed.
    pub(crate) async fn server(
        &self,
        target: &Target,
        cancel: &CancellationToken,
    ) -> Result<Arc<Server>, LspError> {
        if self.inner.closing.is_cancelled() {
            return Err(LspError::Failed("the run is ending; no server starts now".into()));
        }
        let slot = self.slot(target)?;
        let mut guard = tokio::select! {
            g = slot.server.lock() => g,
            _ = cancel.cancelled() => return Err(LspError::Failed("cancelled".into())),
            _ = self.inner.closing.cancelled() => return Err(LspError::Failed("the run is ending".into())),
        };
        let mut after_crash = false;
        if let Some(server) = guard.as_ref() {
            if !server.is_dead() {
                return Ok(server.clone());
            }
            let status = server.exit_status().unwrap_or_else(|| "connection closed".into());
            let tail = server.stderr_tail();
            let mut record = slot.record.lock();
            if !server.is_shutting_down() {
                record.crashes += 1;
                record.last_crash = Some(if tail.is_empty() {
                    format!("exited: {status}")
                } else {
                    format!("exited: {status}; stderr: {tail}")
                });
                after_crash = true;
            }
            drop(record);
            // Make sure nothing of the old group lingers before a new one starts.
            server.kill_now();
            *guard = None;
            *slot.current.lock() = None;
        } else if slot.record.lock().crashes > 0 {
            after_crash = true;
        }
        if after_crash {
            let cap = self.inner.config.max_restarts_per_minute as usize;
            let mut record = slot.record.lock();
            record.restarts.retain(|t| t.elapsed() < Duration::from_secs(60));
            if record.restarts.len() >= cap {
                let wait = record
                    .restarts
                    .first()
                    .map_or(60, |t| 60u64.saturating_sub(t.elapsed().as_secs()));
                return Err(LspError::Failed(format!(
                    "the {} server for {} crashed {} time(s) and was restarted {cap} times in the last minute; \
                     not restarting it for another {wait} s (last crash: {}). Call lsp with action `reload` to force a restart",
                    target.def.display_languages(),
                    display_relative(&self.inner.root, &target.root.root),
                    record.crashes,
                    record.last_crash.as_deref().unwrap_or("unknown"),
                )));
            }
            record.restarts.push(Instant::now());
        }
        slot.record.lock().starting = true;
        let activity = self.inner.pool.activity().clone();
        activity.send_modify(|n| *n += 1);
        let (def, mut command) = crate::trust::prepare(
            &target.def,
            &target.root.root,
            &target.command,
            self.allow_project_code(),
            self.inner.pool.private_dir(),
        );
        command.env.extend(self.inner.pool.server_temp_env());
        let command = self.with_version_flags(&def, command).await;
        let started = tokio::select! {
            s = Server::start(Arc::new(def), target.root.root.clone(), command, self.timeouts(), activity.clone(), cancel) => s,
            _ = self.inner.closing.cancelled() => {
                slot.record.lock().starting = false;
                return Err(LspError::Failed("the run is ending".into()));
            }
        };
        let mut record = slot.record.lock();
        record.starting = false;
        record.stopped = false;
        activity.send_modify(|n| *n += 1);
        match started {
            Ok(server) => {
                drop(record);
                *guard = Some(server.clone());
                *slot.current.lock() = Some(server.clone());
                Ok(server)
            }
            Err(e) => {
                record.crashes += 1;
                record.last_crash = Some(e.message.clone());
                Err(LspError::Failed(e.message))
            }
        }
    }

    /// Restarts the server of `target` (not counted as a crash; resets the restart cap). The
    /// server may be shared: the second value is how many other runs use it (they get their
    /// documents sent again on their next call, as after a crash).
    pub(crate) async fn reload_target(
        &self,
        target: &Target,
        cancel: &CancellationToken,
    ) -> Result<(Arc<Server>, usize), LspError> {
        let slot = self.slot(target)?;
        {
            let mut guard = slot.server.lock().await;
            if let Some(server) = guard.take() {
                server.shutdown().await;
            }
            *slot.current.lock() = None;
            let mut record = slot.record.lock();
            record.restarts.clear();
            record.crashes = 0;
        }
        let server = self.server(target, cancel).await?;
        Ok((server, slot.lessees().saturating_sub(1)))
    }

    /// Every (server, root) that has a running server.
    pub(crate) fn running(&self) -> Vec<Arc<Server>> {
        self.inner
            .slots
            .lock()
            .values()
            .filter_map(|s| s.current.lock().clone())
            .filter(|s| !s.is_dead())
            .collect()
    }

    /// Ends the run's use of its servers: in-flight starts are abandoned, each lease goes back
    /// to the pool. A server no other run uses gets `shutdown` → `exit` → SIGTERM → SIGKILL of
    /// its group (all in parallel and bounded); on a shared one the documents only this run
    /// held are closed.
    pub async fn shutdown(&self) {
        let slots: Vec<Arc<Slot>> = {
            let slots = self.inner.slots.lock();
            self.inner.closing.cancel();
            slots.values().cloned().collect()
        };
        let (pool, run) = (&self.inner.pool, self.inner.run);
        futures_util::future::join_all(slots.iter().map(|slot| pool.release(slot, run))).await;
    }
}
