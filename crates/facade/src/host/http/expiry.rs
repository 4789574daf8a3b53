//! Session expiry: a session with no request in flight for the idle time is closed.
//!
//! rmcp's own keep-alive counts only messages, so a long call without progress would expire
//! under its caller; here a session is idle only while no request of it is being answered (an
//! open response stream counts as busy), and the clock starts when the last one ended.

use std::{
    collections::HashMap,
    pin::Pin,
    sync::{Arc, Mutex},
    task::{Context, Poll},
    time::{Duration, Instant},
};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Frame, SizeHint};
use rmcp::transport::streamable_http_server::{
    SessionId, SessionManager, session::local::LocalSessionManager,
};

use super::Body;

#[derive(Default)]
struct Activity {
    in_flight: usize,
    last: Option<Instant>,
}

/// What each session is doing, by session id.
#[derive(Clone, Default)]
pub(super) struct Sessions(Arc<Mutex<HashMap<String, Activity>>>);

impl Sessions {
    /// `body`, marking `session` busy until it has been sent or dropped.
    pub(super) fn track(&self, session: &str, body: Body) -> Body {
        let Ok(mut map) = self.0.lock() else { return body };
        map.entry(session.to_string()).or_default().in_flight += 1;
        let guard = Busy { sessions: self.clone(), session: session.to_string() };
        Tracked { body, _busy: guard }.boxed()
    }

    /// The sessions idle for `idle` or longer, removed from the table.
    fn take_expired(&self, idle: Duration) -> Vec<String> {
        let Ok(mut map) = self.0.lock() else { return Vec::new() };
        let expired: Vec<String> = map
            .iter()
            .filter(|(_, a)| a.in_flight == 0 && a.last.is_some_and(|t| t.elapsed() >= idle))
            .map(|(id, _)| id.clone())
            .collect();
        for id in &expired {
            map.remove(id);
        }
        expired
    }

    /// Closes every session idle past `idle`, checking a few times per idle period, forever.
    pub(super) async fn expire(self, idle: Duration, manager: Arc<LocalSessionManager>) {
        let period = (idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(30));
        loop {
            tokio::time::sleep(period).await;
            for id in self.take_expired(idle) {
                tracing::info!(session = %id, "session idle for {}s; closing it", idle.as_secs());
                let id: SessionId = id.into();
                // A session deleted by its client is gone already; nothing to close.
                let _ = manager.close_session(&id).await;
            }
        }
    }
}

/// Marks a session busy while alive.
struct Busy {
    sessions: Sessions,
    session: String,
}

impl Drop for Busy {
    fn drop(&mut self) {
        let Ok(mut map) = self.sessions.0.lock() else { return };
        if let Some(activity) = map.get_mut(&self.session) {
            activity.in_flight = activity.in_flight.saturating_sub(1);
            activity.last = Some(Instant::now());
        }
    }
}

/// A response body that keeps its session busy until it is done.
struct Tracked {
    body: Body,
    _busy: Busy,
}

impl hyper::body::Body for Tracked {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
