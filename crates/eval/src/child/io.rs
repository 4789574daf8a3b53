//! The kernel's pipes: the command pipe's writer task, the readers of its event frames and of
//! its stdout and stderr, and the events they produce for the cell loop.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use serde_json::Value;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::unix::pipe,
    process::{ChildStderr, ChildStdout},
    sync::mpsc,
};

use crate::types::StreamName;

/// What the kernel's pipes deliver to the cell loop.
#[derive(Debug)]
pub(super) enum Raw {
    Frame(Value),
    Bytes(StreamName, Vec<u8>),
    /// The event pipe closed (or sent garbage): the kernel is gone.
    EventsClosed(Option<String>),
    StreamClosed(StreamName),
}

pub(super) fn cloexec_pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 writes two fds into the array on success.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both fds were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Maps the protocol pipes to the child's fds 3 (commands in) and 4 (events out), between
/// fork and exec.
pub(super) fn map_protocol_fds(std_cmd: &mut std::process::Command, child_fds: [i32; 2]) {
    use std::os::unix::process::CommandExt;
    // SAFETY: only async-signal-safe calls (fcntl, dup2) between fork and exec.
    unsafe {
        std_cmd.pre_exec(move || {
            let mut high = [0i32; 2];
            for (i, fd) in child_fds.iter().enumerate() {
                let dup = libc::fcntl(*fd, libc::F_DUPFD_CLOEXEC, 10);
                if dup < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                high[i] = dup;
            }
            for (i, fd) in high.iter().enumerate() {
                if libc::dup2(*fd, 3 + i as i32) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

pub(super) fn set_nonblocking(fd: &OwnedFd) -> std::io::Result<()> {
    // SAFETY: plain fcntl calls on an fd we own.
    unsafe {
        let flags = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The task that writes queued frames to the runner's command pipe, whole and in order, for as
/// long as the pipe takes them.
pub(super) fn write_frames(mut pipe: pipe::Sender) -> mpsc::UnboundedSender<Vec<u8>> {
    let (frames, mut queue) = mpsc::unbounded_channel::<Vec<u8>>();
    tokio::spawn(async move {
        while let Some(bytes) = queue.recv().await {
            if pipe.write_all(&bytes).await.is_err() {
                break;
            }
        }
    });
    frames
}

pub(super) fn encode_frame(value: &Value) -> Vec<u8> {
    let body = serde_json::to_vec(value).unwrap_or_default();
    let mut frame = Vec::with_capacity(body.len() + 4);
    frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
    frame.extend_from_slice(&body);
    frame
}

pub(super) fn stdout_reader(s: ChildStdout) -> Box<dyn tokio::io::AsyncRead + Unpin + Send> {
    Box::new(s)
}

pub(super) fn stderr_reader(s: ChildStderr) -> Box<dyn tokio::io::AsyncRead + Unpin + Send> {
    Box::new(s)
}

pub(super) async fn read_stream(
    mut reader: Box<dyn tokio::io::AsyncRead + Unpin + Send>,
    name: StreamName,
    tx: mpsc::UnboundedSender<Raw>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if tx.send(Raw::Bytes(name, buf[..n].to_vec())).is_err() {
                    return;
                }
            }
        }
    }
    let _ = tx.send(Raw::StreamClosed(name));
}

pub(super) async fn read_frames(mut events: pipe::Receiver, tx: mpsc::UnboundedSender<Raw>) {
    let mut head = [0u8; 4];
    loop {
        if events.read_exact(&mut head).await.is_err() {
            let _ = tx.send(Raw::EventsClosed(None));
            return;
        }
        let len = u32::from_be_bytes(head) as usize;
        if len > 256 * 1024 * 1024 {
            let _ = tx.send(Raw::EventsClosed(Some(format!("frame of {len} bytes"))));
            return;
        }
        let mut body = vec![0u8; len];
        if events.read_exact(&mut body).await.is_err() {
            let _ = tx.send(Raw::EventsClosed(None));
            return;
        }
        match serde_json::from_slice::<Value>(&body) {
            Ok(frame) => {
                if tx.send(Raw::Frame(frame)).is_err() {
                    return;
                }
            }
            Err(e) => {
                let _ = tx.send(Raw::EventsClosed(Some(format!("bad frame: {e}"))));
                return;
            }
        }
    }
}
