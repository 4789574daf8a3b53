//! Session expiry: a session with no request in flight for the idle time is closed.
//!
//! rmcp's own keep-alive counts only messages, so a long call without progress would expire
//! under its caller; here a session is idle only while no request of it is being answered (an
//! open response stream counts as busy), and the clock starts when the last one ended.
//!
//! A client that leaves without deleting its session (Claude Code drops the connection) is
//! seen by its standing GET stream being dropped unfinished: such a session ends after the
//! shorter detached time unless the client comes back (a reconnected stream, a new request).

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
    /// The last thing to end was a standing GET stream dropped before its end: the client went
    /// away without deleting the session.
    detached: bool,
}

/// How long a session waits: `idle` without requests, or `detached` once its client left.
#[derive(Debug, Clone, Copy)]
pub(super) struct Expiry {
    pub(super) idle: Duration,
    pub(super) detached: Duration,
}

/// What each session is doing, by session id.
#[derive(Clone, Default)]
pub(super) struct Sessions(Arc<Mutex<HashMap<String, Activity>>>);

impl Sessions {
    /// `body`, marking `session` busy until it has been sent or dropped; `standing` for the
    /// GET stream a client keeps open for the server's messages.
    pub(super) fn track(&self, session: &str, body: Body, standing: bool) -> Body {
        let Ok(mut map) = self.0.lock() else { return body };
        let activity = map.entry(session.to_string()).or_default();
        activity.in_flight += 1;
        activity.detached = false;
        let busy = Busy { sessions: self.clone(), session: session.to_string(), standing };
        Tracked { body, ended: false, busy }.boxed()
    }

    /// The sessions idle past their time, removed from the table.
    fn take_expired(&self, expiry: Expiry) -> Vec<String> {
        let Ok(mut map) = self.0.lock() else { return Vec::new() };
        let expired: Vec<String> = map
            .iter()
            .filter(|(_, a)| {
                let wait = if a.detached { expiry.detached.min(expiry.idle) } else { expiry.idle };
                a.in_flight == 0 && a.last.is_some_and(|t| t.elapsed() >= wait)
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in &expired {
            map.remove(id);
        }
        expired
    }

    /// Closes every session idle past its time, checking a few times per period, forever.
    pub(super) async fn expire(self, expiry: Expiry, manager: Arc<LocalSessionManager>) {
        let shortest = expiry.idle.min(expiry.detached);
        let period = (shortest / 4).clamp(Duration::from_millis(100), Duration::from_secs(30));
        loop {
            tokio::time::sleep(period).await;
            for id in self.take_expired(expiry) {
                tracing::info!(session = %id, "session idle (or its client gone); closing it");
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
    standing: bool,
}

impl Busy {
    fn end(&self, finished: bool) {
        let Ok(mut map) = self.sessions.0.lock() else { return };
        if let Some(activity) = map.get_mut(&self.session) {
            activity.in_flight = activity.in_flight.saturating_sub(1);
            activity.last = Some(Instant::now());
            activity.detached = self.standing && !finished;
        }
    }
}

/// A response body that keeps its session busy until it is done.
struct Tracked {
    body: Body,
    /// The body reached its end (rather than being dropped by a closed connection).
    ended: bool,
    busy: Busy,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.busy.end(self.ended);
    }
}

impl hyper::body::Body for Tracked {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        let frame = Pin::new(&mut this.body).poll_frame(cx);
        if let Poll::Ready(None) = frame {
            this.ended = true;
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
