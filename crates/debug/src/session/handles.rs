//! Frame ids and variable references as the model sees them: small numbers that belong to one
//! stop. A number from an earlier stop is refused with the stop it came from, never silently
//! mapped to whatever the adapter now has under the same id.

use std::collections::HashMap;

use crate::error::DebugError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HandleKind {
    Frame,
    Reference,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Handle {
    pub kind: HandleKind,
    /// The adapter's own id (frameId or variablesReference).
    pub adapter_id: i64,
    /// Known child count (references).
    pub children: Option<u64>,
}

#[derive(Debug, Default)]
pub(crate) struct Handles {
    next: u64,
    stop: u64,
    current: HashMap<u64, Handle>,
    /// (first id handed out at a stop, that stop), in order.
    boundaries: Vec<(u64, u64)>,
}

impl Handles {
    /// Starts the numbering of `stop`; ids of earlier stops become stale.
    pub(crate) fn begin_stop(&mut self, stop: u64) {
        if self.next == 0 {
            self.next = 1;
        }
        if stop != self.stop || self.boundaries.is_empty() {
            self.current.clear();
            self.boundaries.push((self.next, stop));
            self.stop = stop;
        }
    }

    pub(crate) fn add(&mut self, kind: HandleKind, adapter_id: i64, children: Option<u64>) -> u64 {
        if self.next == 0 {
            self.next = 1;
        }
        // Reuse the id if this stop already handed one out for the same thing.
        if let Some((id, _)) =
            self.current.iter().find(|(_, h)| h.kind == kind && h.adapter_id == adapter_id)
        {
            return *id;
        }
        let id = self.next;
        self.next += 1;
        self.current.insert(id, Handle { kind, adapter_id, children });
        id
    }

    /// The handle `id` of the current stop, or an error that says why it is not usable.
    pub(crate) fn resolve(
        &self,
        id: u64,
        kind: HandleKind,
        running: bool,
    ) -> Result<Handle, DebugError> {
        let (noun, source) = match kind {
            HandleKind::Frame => ("frame_id", "`stack` or a stop snapshot"),
            HandleKind::Reference => {
                ("reference", "`scopes`, `variables`, `evaluate` or a stop snapshot")
            }
        };
        if let Some(handle) = self.current.get(&id) {
            if running {
                return Err(DebugError::Stale(format!(
                    "stale reference from stop {}; the program has moved: it is running now. \
                     `pause` it or wait for the next stop, then use the ids it returns",
                    self.stop
                )));
            }
            if handle.kind != kind {
                return Err(DebugError::usage(match handle.kind {
                    HandleKind::Frame => format!(
                        "{id} is a frame_id, not a variables reference: pass it as `frame_id` to \
                         `scopes` or `evaluate`"
                    ),
                    HandleKind::Reference => format!(
                        "{id} is a variables reference, not a frame_id: pass it as `reference` \
                         to `variables`"
                    ),
                }));
            }
            return Ok(*handle);
        }
        if id > 0 && id < self.next {
            let from = self
                .boundaries
                .iter()
                .rev()
                .find(|(first, _)| *first <= id)
                .map_or(0, |(_, stop)| *stop);
            return Err(DebugError::Stale(format!(
                "stale reference from stop {from}; the program has moved (it is at stop {} now): \
                 use the ids of the latest stop snapshot, or run `stack` again",
                self.stop
            )));
        }
        Err(DebugError::usage(format!("unknown {noun} {id}: {noun}s come from {source}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_from_an_earlier_stop_is_refused_with_that_stop() {
        let mut handles = Handles::default();
        handles.begin_stop(3);
        let frame = handles.add(HandleKind::Frame, 524288, None);
        assert!(handles.resolve(frame, HandleKind::Frame, false).is_ok());
        handles.begin_stop(4);
        let err = handles.resolve(frame, HandleKind::Frame, false).unwrap_err().to_string();
        assert!(err.starts_with("stale reference from stop 3; the program has moved"), "{err}");
        let fresh = handles.add(HandleKind::Frame, 524288, None);
        assert_ne!(fresh, frame);
        let err = handles.resolve(99, HandleKind::Reference, false).unwrap_err().to_string();
        assert!(err.starts_with("unknown reference 99"), "{err}");
        let err = handles.resolve(fresh, HandleKind::Reference, false).unwrap_err().to_string();
        assert!(err.contains("is a frame_id, not a variables reference"), "{err}");
        let err = handles.resolve(fresh, HandleKind::Frame, true).unwrap_err().to_string();
        assert!(
            err.contains("stale reference from stop 4; the program has moved: it is running"),
            "{err}"
        );
    }
}
