//! Reaching a port on a capsule's own loopback: a connection made inside its network namespace.
//!
//! A capsule without network has a loopback of its own, so a debug adapter that listens on
//! `127.0.0.1` (delve) cannot be reached from the host by address. A short-lived forked child
//! joins the namespaces of a process inside (its user namespace first when it has one, as an
//! unprivileged bubblewrap makes: joining one needs a single-threaded process), connects there,
//! and hands the connected socket back over a socket pair; a socket keeps the namespace it was
//! made in, so the host then talks to the adapter as to any TCP peer.

use std::{
    fs::File,
    io,
    net::TcpStream,
    os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd},
    path::Path,
    time::Duration,
};

/// Connects to `127.0.0.1:port` in the network namespace of `pid` or of its first descendant
/// that has one different from the host's.
pub(super) fn connect_inside(pid: u32, port: u16, within: Duration) -> io::Result<TcpStream> {
    let target = process_in_other_netns(pid).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("no process under pid {pid} runs in a network namespace of its own"),
        )
    })?;
    let net = File::open(format!("/proc/{target}/ns/net"))?;
    // The user namespace that owns the network namespace: an unprivileged bubblewrap runs its
    // processes in a user namespace nested in the one that owns it, and joining theirs would
    // leave the host without the right to enter the network namespace.
    let user = owner_of(&net)?;
    let join_user = !same_inode(&user, Path::new("/proc/self/ns/user"));
    let (ours, theirs) = socket_pair()?;
    let address = loopback(port);
    let timeout = libc::timeval {
        tv_sec: within.as_secs() as libc::time_t,
        tv_usec: libc::suseconds_t::from(within.subsec_micros() as i32),
    };
    // SAFETY: the child only makes system calls (setns, socket, setsockopt, connect, sendmsg,
    // _exit) on memory prepared before the fork; it never allocates or takes a lock.
    let child = unsafe { libc::fork() };
    if child < 0 {
        return Err(io::Error::last_os_error());
    }
    if child == 0 {
        // SAFETY: see above; every path ends in _exit.
        unsafe {
            let code = connect_and_send(
                join_user,
                user.as_raw_fd(),
                net.as_raw_fd(),
                &address,
                &timeout,
                theirs.as_raw_fd(),
            );
            libc::_exit(code);
        }
    }
    drop(theirs);
    let received = receive_fd(&ours, within + Duration::from_secs(1));
    let mut status = 0;
    // SAFETY: reaping the child forked above.
    unsafe { libc::waitpid(child, &mut status, 0) };
    match received {
        Ok(fd) => Ok(TcpStream::from(fd)),
        Err(e) => {
            let step = match libc::WEXITSTATUS(status) {
                1 => "cannot join the capsule's user namespace",
                2 => "cannot join the capsule's network namespace",
                3 => "cannot make a socket in the capsule",
                4 => "the connection was refused or timed out inside the capsule",
                _ => "the connection was not handed back",
            };
            Err(io::Error::new(e.kind(), format!("{step} (127.0.0.1:{port} under pid {pid}): {e}")))
        }
    }
}

/// Runs in the forked child.
unsafe fn connect_and_send(
    join_user: bool,
    user: RawFd,
    net: RawFd,
    address: &libc::sockaddr_in,
    timeout: &libc::timeval,
    reply: RawFd,
) -> i32 {
    unsafe {
        if join_user && libc::setns(user, libc::CLONE_NEWUSER) != 0 {
            return 1;
        }
        if libc::setns(net, libc::CLONE_NEWNET) != 0 {
            return 2;
        }
        let socket = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if socket < 0 {
            return 3;
        }
        // SO_SNDTIMEO bounds a blocking connect on Linux.
        set_send_timeout(socket, timeout);
        if libc::connect(
            socket,
            (address as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        ) != 0
        {
            return 4;
        }
        set_send_timeout(socket, &libc::timeval { tv_sec: 0, tv_usec: 0 });
        if send_fd(reply, socket) { 0 } else { 5 }
    }
}

unsafe fn set_send_timeout(socket: RawFd, timeout: &libc::timeval) {
    // SAFETY: a timeval the caller owns, for the length of the call.
    unsafe {
        libc::setsockopt(
            socket,
            libc::SOL_SOCKET,
            libc::SO_SNDTIMEO,
            (timeout as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        );
    }
}

unsafe fn send_fd(over: RawFd, fd: RawFd) -> bool {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
    let mut control = [0u8; 64];
    // SAFETY: the control buffer holds one cmsg with one descriptor (CMSG_SPACE of 4 bytes).
    unsafe {
        let space = libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as usize;
        let message = one_block_message(&mut iov, &mut control, space);
        let header = libc::CMSG_FIRSTHDR(&message);
        (*header).cmsg_level = libc::SOL_SOCKET;
        (*header).cmsg_type = libc::SCM_RIGHTS;
        (*header).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(header).cast::<RawFd>(), fd);
        libc::sendmsg(over, &message, 0) == 1
    }
}

/// A message of one byte (`iov`) with `control_len` bytes of `control` for its descriptor.
unsafe fn one_block_message(
    iov: &mut libc::iovec,
    control: &mut [u8],
    control_len: usize,
) -> libc::msghdr {
    // SAFETY: msghdr is plain data; a zeroed one is valid before its fields are set.
    let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
    message.msg_iov = iov;
    message.msg_iovlen = 1;
    message.msg_control = control.as_mut_ptr().cast();
    message.msg_controllen = control_len as _;
    message
}

fn receive_fd(over: &OwnedFd, within: Duration) -> io::Result<OwnedFd> {
    let mut poll = libc::pollfd { fd: over.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    let millis = i32::try_from(within.as_millis()).unwrap_or(i32::MAX);
    // SAFETY: one pollfd on a descriptor we own.
    if unsafe { libc::poll(&mut poll, 1, millis) } <= 0 {
        return Err(io::Error::new(io::ErrorKind::TimedOut, "no answer from the connecting child"));
    }
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
    let mut control = [0u8; 64];
    // SAFETY: a zeroed msghdr pointing at buffers that outlive the call.
    unsafe {
        let len = control.len();
        let mut message = one_block_message(&mut iov, &mut control, len);
        if libc::recvmsg(over.as_raw_fd(), &mut message, libc::MSG_CMSG_CLOEXEC) != 1 {
            return Err(io::Error::new(io::ErrorKind::ConnectionRefused, "the connection failed"));
        }
        let header = libc::CMSG_FIRSTHDR(&message);
        if header.is_null() || (*header).cmsg_type != libc::SCM_RIGHTS {
            return Err(io::Error::other("the child sent no descriptor"));
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(header).cast::<RawFd>());
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

fn socket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: socketpair writes two descriptors into `fds`.
    if unsafe {
        libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr())
    } != 0
    {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and ours.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn loopback(port: u16) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from(std::net::Ipv4Addr::LOCALHOST).to_be() },
        sin_zero: [0; 8],
    }
}

/// `NS_GET_USERNS`: the user namespace owning a namespace, as a new descriptor.
const NS_GET_USERNS: libc::c_ulong = 0xb701;

fn owner_of(namespace: &File) -> io::Result<OwnedFd> {
    // SAFETY: the ioctl takes no argument and returns a new descriptor or -1.
    let fd = unsafe { libc::ioctl(namespace.as_raw_fd(), NS_GET_USERNS as _) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor, ours alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Whether the namespace open as `fd` is the one at `path`.
fn same_inode(fd: &OwnedFd, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(at_path) = std::fs::metadata(path) else { return false };
    // SAFETY: fstat on a descriptor we own into a zeroed stat.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    let done = unsafe { libc::fstat(fd.as_raw_fd(), &mut stat) };
    done == 0 && stat.st_ino == at_path.ino() && stat.st_dev == at_path.dev()
}

fn same_namespace(a: &str, b: &str) -> bool {
    match (std::fs::read_link(a), std::fs::read_link(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// `pid` or its first descendant (breadth first) whose network namespace is not the host's.
fn process_in_other_netns(pid: u32) -> Option<u32> {
    super::pids::descendants(pid).into_iter().find(|candidate| {
        Path::new(&format!("/proc/{candidate}")).exists()
            && !same_namespace(&format!("/proc/{candidate}/ns/net"), "/proc/self/ns/net")
    })
}
