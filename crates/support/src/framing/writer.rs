//! Writing framed messages from a task behind a bounded queue, with a write deadline.

use std::time::Duration;

use serde_json::Value;
use tokio::{
    io::{AsyncWrite, AsyncWriteExt},
    sync::{mpsc, oneshot, watch},
};

use super::{FrameError, QUEUE_MESSAGES, frame};

/// What the writer task is asked to do, in order.
enum Queued {
    Frame(Vec<u8>),
    /// Write what came before, shut the stream down, then answer.
    Close(oneshot::Sender<()>),
}

/// The writing half of a framed connection. Clones share one writer task and one queue.
///
/// A send returns once the message is queued; the task writes it. A write that makes no
/// progress for the deadline stops the writer and drops the stream (the peer sees its input
/// close); that reason is then the error of every send and of [`stopped`](Self::stopped).
#[derive(Debug, Clone)]
pub struct FrameWriter {
    queue: mpsc::Sender<Queued>,
    stopped: watch::Receiver<Option<FrameError>>,
    deadline: Duration,
}

impl FrameWriter {
    /// Starts the writer task on `output` in the current Tokio runtime.
    pub fn spawn<W>(output: W, deadline: Duration) -> Self
    where
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (queue, requests) = mpsc::channel(QUEUE_MESSAGES);
        let (stop, stopped) = watch::channel(None);
        tokio::spawn(write_queue(output, requests, deadline, stop));
        FrameWriter { queue, stopped, deadline }
    }

    /// Queues `message`, waiting up to the deadline for room in the queue.
    pub async fn send(&self, message: &Value) -> Result<(), FrameError> {
        self.check()?;
        match self.queue.send_timeout(Queued::Frame(encode(message)), self.deadline).await {
            Ok(()) => Ok(()),
            Err(mpsc::error::SendTimeoutError::Timeout(_)) => {
                Err(FrameError::WriteDeadline(self.deadline))
            }
            Err(mpsc::error::SendTimeoutError::Closed(_)) => Err(self.reason()),
        }
    }

    /// Queues `message` without waiting (for replies sent from a reader task).
    pub fn try_send(&self, message: &Value) -> Result<(), FrameError> {
        self.check()?;
        match self.queue.try_send(Queued::Frame(encode(message))) {
            Ok(()) => Ok(()),
            Err(mpsc::error::TrySendError::Full(_)) => Err(FrameError::QueueFull(QUEUE_MESSAGES)),
            Err(mpsc::error::TrySendError::Closed(_)) => Err(self.reason()),
        }
    }

    /// Writes what is queued, then shuts the stream down (for a child, closes its stdin).
    /// Idempotent; an error only if the writer had already failed.
    pub async fn close(&self) -> Result<(), FrameError> {
        let (done, closed) = oneshot::channel();
        if self.queue.send_timeout(Queued::Close(done), self.deadline).await.is_ok() {
            let _ = closed.await;
        }
        let mut stopped = self.stopped.clone();
        let _ = stopped.wait_for(Option::is_some).await;
        match self.reason() {
            FrameError::Closed(_) => Ok(()),
            failure => Err(failure),
        }
    }

    /// Waits until the writer stopped; why. A stop by [`close`](Self::close) or by every
    /// handle being dropped is [`FrameError::Closed`].
    pub async fn stopped(&self) -> FrameError {
        let mut stopped = self.stopped.clone();
        let _ = stopped.wait_for(Option::is_some).await;
        self.reason()
    }

    fn check(&self) -> Result<(), FrameError> {
        match &*self.stopped.borrow() {
            Some(reason) => Err(reason.clone()),
            None => Ok(()),
        }
    }

    fn reason(&self) -> FrameError {
        self.stopped
            .borrow()
            .clone()
            .unwrap_or_else(|| FrameError::Closed("the writer task ended".into()))
    }
}

fn encode(message: &Value) -> Vec<u8> {
    frame(message.to_string().as_bytes())
}

async fn write_queue<W: AsyncWrite + Unpin>(
    mut output: W,
    mut requests: mpsc::Receiver<Queued>,
    deadline: Duration,
    stop: watch::Sender<Option<FrameError>>,
) {
    let reason = loop {
        match requests.recv().await {
            Some(Queued::Frame(bytes)) => {
                if let Err(e) = write_all(&mut output, &bytes, deadline).await {
                    break e;
                }
            }
            Some(Queued::Close(done)) => {
                let _ = tokio::time::timeout(deadline, output.shutdown()).await;
                let _ = done.send(());
                break FrameError::Closed("our side was closed".into());
            }
            None => {
                let _ = tokio::time::timeout(deadline, output.shutdown()).await;
                break FrameError::Closed("every handle of the writer was dropped".into());
            }
        }
    };
    // Drop the stream first, so a wedged peer sees its input close.
    drop(output);
    requests.close();
    let _ = stop.send(Some(reason));
    // Answer close requests that were queued behind the failure.
    while let Some(request) = requests.recv().await {
        if let Queued::Close(done) = request {
            let _ = done.send(());
        }
    }
}

/// Writes `bytes` in full; fails when one write makes no progress for `deadline`, so a peer
/// that reads slowly but steadily is fine and one that stopped reading is not.
async fn write_all<W: AsyncWrite + Unpin>(
    output: &mut W,
    bytes: &[u8],
    deadline: Duration,
) -> Result<(), FrameError> {
    let mut written = 0;
    while written < bytes.len() {
        match tokio::time::timeout(deadline, output.write(&bytes[written..])).await {
            Err(_) => return Err(FrameError::WriteDeadline(deadline)),
            Ok(Err(e)) => return Err(FrameError::Closed(format!("cannot write: {e}"))),
            Ok(Ok(0)) => return Err(FrameError::Closed("the peer closed its input".into())),
            Ok(Ok(n)) => written += n,
        }
    }
    match tokio::time::timeout(deadline, output.flush()).await {
        Err(_) => Err(FrameError::WriteDeadline(deadline)),
        Ok(Err(e)) => Err(FrameError::Closed(format!("cannot write: {e}"))),
        Ok(Ok(())) => Ok(()),
    }
}
