//! The workers' egress proxy: their only way out of their capsule, to public addresses only.
//!
//! A worker calls its model's API over HTTPS. Its capsule refuses every TCP connection but one
//! to this proxy's port (Landlock's network rules) and every UDP socket, and its proxy
//! variables (`HTTPS_PROXY`, …) point here. The proxy listens on `127.0.0.1` on an ephemeral
//! port and answers HTTP `CONNECT host:port` (a tunnel) and plain HTTP requests in absolute form
//! (`GET http://host/path`): it resolves the destination once, refuses it with `403` and a
//! sentence when any of its addresses is the host's own or not routed past the link
//! ([`destination`](super::destination)), and connects to an address it checked. One per
//! workers' capsule, started with it; dropping it closes its socket, ends every relay and joins
//! every thread.

use std::{
    collections::HashMap,
    io::{self, Read, Write},
    net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream},
    os::fd::{AsRawFd, FromRawFd, OwnedFd},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    thread::JoinHandle,
    time::Duration,
};

use super::destination::{self, Denial, Status};

/// The longest request head read (request line and headers).
const MAX_HEAD: usize = 16 * 1024;
/// How long a client may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a connection to a destination may take (a stopping proxy waits for it).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once; more are answered `503`.
const MAX_CONNECTIONS: usize = 256;

/// Which destinations the proxy connects to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Policy {
    /// Public addresses only (see [`destination::check`]).
    PublicOnly,
    /// Any (the relay's own tests, which have no public server to reach).
    #[cfg(test)]
    Any,
}

/// A running egress proxy. Dropping it stops it: no thread or socket of it outlives it.
pub struct EgressProxy {
    port: u16,
    shared: Arc<Shared>,
    /// The write end of the pipe the accept loop also waits on: closed to stop it.
    wake: Option<OwnedFd>,
    accepting: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for EgressProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EgressProxy").field("port", &self.port).finish_non_exhaustive()
    }
}

/// What the accept loop, the connections' threads and the owner share.
struct Shared {
    policy: Policy,
    stopping: AtomicBool,
    open: Mutex<Open>,
}

/// The proxy's live connections.
#[derive(Default)]
struct Open {
    next: u64,
    /// Each connection's sockets (client, destination), shut down when the proxy stops.
    sockets: HashMap<u64, Vec<TcpStream>>,
    threads: Vec<JoinHandle<()>>,
}

impl EgressProxy {
    /// Starts a proxy on `127.0.0.1` on an ephemeral port.
    pub fn start() -> io::Result<EgressProxy> {
        EgressProxy::with_policy(Policy::PublicOnly)
    }

    fn with_policy(policy: Policy) -> io::Result<EgressProxy> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let (wake_read, wake_write) = pipe()?;
        let shared = Arc::new(Shared {
            policy,
            stopping: AtomicBool::new(false),
            open: Mutex::new(Open::default()),
        });
        let accepting = std::thread::Builder::new().name("egress-proxy".into()).spawn({
            let shared = shared.clone();
            move || accept_loop(&listener, &wake_read, &shared)
        })?;
        Ok(EgressProxy { port, shared, wake: Some(wake_write), accepting: Some(accepting) })
    }

    /// The port it listens on, on `127.0.0.1`.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its address as a proxy variable's value: `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for EgressProxy {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        drop(self.wake.take()); // the accept loop sees the pipe hang up
        if let Some(accepting) = self.accepting.take() {
            let _ = accepting.join();
        }
        let threads = match self.shared.open.lock() {
            Ok(mut open) => {
                for socket in open.sockets.values().flatten() {
                    let _ = socket.shutdown(Shutdown::Both);
                }
                std::mem::take(&mut open.threads)
            }
            Err(_) => Vec::new(),
        };
        for thread in threads {
            let _ = thread.join();
        }
    }
}

/// A pipe whose ends close on exec.
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two new descriptors into `fds`.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and ours.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn accept_loop(listener: &TcpListener, wake: &OwnedFd, shared: &Arc<Shared>) {
    loop {
        let mut fds = [
            libc::pollfd { fd: listener.as_raw_fd(), events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: wake.as_raw_fd(), events: libc::POLLIN, revents: 0 },
        ];
        // SAFETY: two pollfds we own, for the length of the call.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if ready < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return;
        }
        if fds[1].revents != 0 || shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        match listener.accept() {
            Ok((client, _)) => shared.admit(client),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            // Out of descriptors: the connection stays queued; wait rather than spin on it.
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

impl Shared {
    /// Serves `client` on a thread of its own, or answers `503` past the limit.
    fn admit(self: &Arc<Self>, client: TcpStream) {
        let Ok(mut open) = self.open.lock() else { return };
        // Threads that have finished are joined as new ones come.
        let (done, running): (Vec<_>, Vec<_>) =
            std::mem::take(&mut open.threads).into_iter().partition(JoinHandle::is_finished);
        open.threads = running;
        for thread in done {
            let _ = thread.join();
        }
        if open.sockets.len() >= MAX_CONNECTIONS {
            drop(open);
            let sentence = format!(
                "agent-tools' egress proxy serves {MAX_CONNECTIONS} connections at once; retry \
                 when one has closed"
            );
            let _ = answer(&client, &Denial::new(Status::Unavailable, sentence));
            return;
        }
        let (Ok(()), Ok(copy)) = (client.set_nonblocking(false), client.try_clone()) else {
            return;
        };
        let id = open.next;
        open.next += 1;
        open.sockets.insert(id, vec![copy]);
        let shared = self.clone();
        let spawned = std::thread::Builder::new()
            .name("egress-conn".into())
            .spawn(move || shared.serve(id, client));
        match spawned {
            Ok(thread) => open.threads.push(thread),
            Err(_) => {
                open.sockets.remove(&id); // the client closes with the closure
            }
        }
    }

    /// Keeps `socket` to shut down when the proxy stops; false when it is stopping already.
    fn register(&self, id: u64, socket: &TcpStream) -> bool {
        let Ok(mut open) = self.open.lock() else { return false };
        let Ok(copy) = socket.try_clone() else { return false };
        if self.stopping.load(Ordering::SeqCst) {
            return false;
        }
        open.sockets.entry(id).or_default().push(copy);
        true
    }

    fn serve(&self, id: u64, client: TcpStream) {
        let _ = self.serve_request(id, &client); // an error ends the connection
        if let Ok(mut open) = self.open.lock() {
            open.sockets.remove(&id);
        }
    }

    fn serve_request(&self, id: u64, client: &TcpStream) -> io::Result<()> {
        client.set_read_timeout(Some(HEAD_TIMEOUT))?;
        let (head, rest) = read_head(client)?;
        let request = match Request::parse(&head) {
            Ok(request) => request,
            Err(denial) => return answer(client, &denial),
        };
        let addresses = match self.policy {
            Policy::PublicOnly => destination::check(&request.host, request.port),
            #[cfg(test)]
            Policy::Any => Ok(std::net::ToSocketAddrs::to_socket_addrs(&(
                request.host.as_str(),
                request.port,
            ))?
            .collect()),
        };
        let addresses = match addresses {
            Ok(addresses) => addresses,
            Err(denial) => return answer(client, &denial),
        };
        let destination = match connect(&addresses) {
            Ok(stream) => stream,
            Err(e) => {
                let sentence = format!(
                    "agent-tools' egress proxy cannot connect to {}:{} ({}): {e}",
                    request.host,
                    request.port,
                    addresses.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
                );
                return answer(client, &Denial::new(Status::BadGateway, sentence));
            }
        };
        if !self.register(id, &destination) {
            return Ok(());
        }
        client.set_read_timeout(None)?;
        let (mut to_client, mut onwards) = (client, &destination);
        match &request.forward {
            None => to_client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")?,
            Some(head) => onwards.write_all(head.as_bytes())?,
        }
        onwards.write_all(&rest)?;
        relay(client, destination)
    }
}

/// The first address of `addresses` that accepts a connection.
fn connect(addresses: &[SocketAddr]) -> io::Result<TcpStream> {
    let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
    for address in addresses {
        match TcpStream::connect_timeout(address, CONNECT_TIMEOUT) {
            Ok(stream) => return Ok(stream),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Copies both ways until both sides have finished.
fn relay(client: &TcpStream, destination: TcpStream) -> io::Result<()> {
    let (client_in, client_out) = (client.try_clone()?, client.try_clone()?);
    let destination_in = destination.try_clone()?;
    let back = std::thread::Builder::new()
        .name("egress-relay".into())
        .spawn(move || pipe_one_way(destination_in, client_out))?;
    pipe_one_way(client_in, destination);
    let _ = back.join();
    Ok(())
}

/// Copies `from` to `to` until `from` ends (then `to` is told no more comes) or either fails
/// (then both close).
fn pipe_one_way(mut from: TcpStream, to: TcpStream) {
    match io::copy(&mut from, &mut &to) {
        Ok(_) => {
            let _ = to.shutdown(Shutdown::Write);
        }
        Err(_) => {
            let _ = from.shutdown(Shutdown::Both);
            let _ = to.shutdown(Shutdown::Both);
        }
    }
}

/// The request head (up to its empty line) and what the client sent after it.
fn read_head(client: &TcpStream) -> io::Result<(String, Vec<u8>)> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buffer.split_off(end + 4);
            return Ok((String::from_utf8_lossy(&buffer).into_owned(), rest));
        }
        if buffer.len() > MAX_HEAD {
            let sentence = format!("the request head is longer than {MAX_HEAD} bytes");
            answer(client, &Denial::new(Status::BadRequest, sentence))?;
            return Err(io::Error::new(io::ErrorKind::InvalidData, "head too long"));
        }
        let mut input = client;
        let read = input.read(&mut chunk)?;
        if read == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "no request"));
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
}

/// Answers `denial` and closes: the sentence is the status line's reason (what clients show)
/// and the body.
fn answer(client: &TcpStream, denial: &Denial) -> io::Result<()> {
    let sentence = denial.sentence.replace(['\r', '\n'], " ");
    let response = format!(
        "HTTP/1.1 {} {sentence}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: \
         {}\r\nConnection: close\r\n\r\n{sentence}\n",
        denial.status.code(),
        sentence.len() + 1,
    );
    let mut out = client;
    out.write_all(response.as_bytes())?;
    client.shutdown(Shutdown::Both)
}

/// A proxy request: where to connect, and for plain HTTP the head to send there.
#[derive(Debug, PartialEq, Eq)]
struct Request {
    host: String,
    port: u16,
    /// None for a tunnel (`CONNECT`); the request in origin form for plain HTTP.
    forward: Option<String>,
}

impl Request {
    fn parse(head: &str) -> Result<Request, Denial> {
        let bad = |why: String| Denial::new(Status::BadRequest, why);
        let mut lines = head.split("\r\n");
        let first = lines.next().unwrap_or_default();
        let words: Vec<&str> = first.split(' ').collect();
        let [method, target, version] = words[..] else {
            return Err(bad(format!("`{first}` is not an HTTP request line")));
        };
        if !version.starts_with("HTTP/1.") {
            return Err(bad(format!("`{version}`: the proxy speaks HTTP/1.x")));
        }
        if method.eq_ignore_ascii_case("CONNECT") {
            let (host, port) = authority(target, None).map_err(bad)?;
            return Ok(Request { host, port, forward: None });
        }
        let lower = target.to_ascii_lowercase();
        let Some(rest) = lower.starts_with("http://").then(|| &target["http://".len()..]) else {
            let why = if lower.starts_with("https://") {
                format!("`{target}`: an https URL goes through CONNECT (HTTPS_PROXY)")
            } else {
                format!("`{target}`: a proxy request names an absolute http:// URL")
            };
            return Err(bad(why));
        };
        let split = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority_part, path) = rest.split_at(split);
        let (host, port) = authority(authority_part, Some(80)).map_err(bad)?;
        let path = if path.starts_with('/') { path.to_string() } else { format!("/{path}") };
        let mut forward = format!("{method} {path} {version}\r\n");
        for line in lines.filter(|l| !l.is_empty()) {
            // The proxy's own headers stay here.
            if !line.to_ascii_lowercase().starts_with("proxy-") {
                forward.push_str(line);
                forward.push_str("\r\n");
            }
        }
        forward.push_str("\r\n");
        Ok(Request { host, port, forward: Some(forward) })
    }
}

/// `host:port` (`[v6]:port`; user information dropped) as host and port; `default` when the
/// port may be left out.
fn authority(text: &str, default: Option<u16>) -> Result<(String, u16), String> {
    let text = text.rsplit_once('@').map_or(text, |(_, host)| host);
    let (host, port) = match text.strip_prefix('[') {
        Some(bracketed) => {
            let (host, after) = bracketed
                .split_once(']')
                .ok_or_else(|| format!("`{text}`: an IPv6 address ends with `]`"))?;
            (host, after.strip_prefix(':'))
        }
        None => match text.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (text, None),
        },
    };
    let port = match (port, default) {
        (Some(port), _) => port.parse::<u16>().ok().filter(|p| *p != 0),
        (None, default) => default,
    };
    match port {
        Some(port) if !host.is_empty() => Ok((host.to_string(), port)),
        _ => Err(format!("`{text}` is not host:port")),
    }
}

#[cfg(test)]
mod tests {
    use std::io::BufRead;

    use super::*;

    /// Sends `request` to the proxy and returns its status line and body.
    fn ask(proxy: &EgressProxy, request: &str) -> String {
        let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, proxy.port())).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer
    }

    fn threads_named(prefix: &str) -> usize {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .flatten()
            .filter(|t| {
                std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.starts_with(prefix))
            })
            .count()
    }

    #[test]
    fn the_host_is_refused_with_a_sentence_saying_why() {
        let proxy = EgressProxy::start().unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        for (request, said) in [
            (format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n"), "127.0.0.1 is a loopback"),
            (format!("CONNECT localhost:{port} HTTP/1.1\r\n\r\n"), "localhost resolves to"),
            (format!("CONNECT [::ffff:127.0.0.1]:{port} HTTP/1.1\r\n\r\n"), "loopback"),
            ("CONNECT 169.254.169.254:80 HTTP/1.1\r\n\r\n".into(), "link-local"),
            (format!("GET http://127.0.0.1:{port}/x HTTP/1.1\r\nHost: a\r\n\r\n"), "loopback"),
        ] {
            let answer = ask(&proxy, &request);
            assert!(
                answer.starts_with("HTTP/1.1 403 agent-tools' egress proxy refused"),
                "{answer}"
            );
            assert!(answer.contains(said) && answer.contains("never the host's own"), "{answer}");
        }
        for (request, said) in [
            ("GET /x HTTP/1.1\r\n\r\n", "names an absolute http:// URL"),
            ("GET https://a.example/ HTTP/1.1\r\n\r\n", "goes through CONNECT"),
            ("CONNECT a.example HTTP/1.1\r\n\r\n", "is not host:port"),
            ("hello\r\n\r\n", "not an HTTP request line"),
        ] {
            let answer = ask(&proxy, request);
            assert!(answer.starts_with("HTTP/1.1 400 ") && answer.contains(said), "{answer}");
        }
        listener.set_nonblocking(true).unwrap();
        assert!(listener.accept().is_err(), "nothing reached the host's port");
    }

    #[test]
    fn a_tunnel_and_a_plain_request_are_relayed_and_end_with_the_proxy() {
        let proxy = EgressProxy::with_policy(Policy::Any).unwrap();
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = server.local_addr().unwrap().port();
        let mut tunnel = TcpStream::connect((Ipv4Addr::LOCALHOST, proxy.port())).unwrap();
        tunnel
            .write_all(format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\nearly").as_bytes())
            .unwrap();
        let (mut inside, _) = server.accept().unwrap();
        let mut reader = io::BufReader::new(tunnel.try_clone().unwrap());
        let mut status = String::new();
        reader.read_line(&mut status).unwrap();
        assert_eq!(status, "HTTP/1.1 200 Connection established\r\n");
        let mut early = [0u8; 5];
        inside.read_exact(&mut early).unwrap();
        assert_eq!(&early, b"early", "bytes sent with the request pass on");
        inside.write_all(b"pong").unwrap();
        let mut pong = [0u8; 6];
        reader.read_exact(&mut pong).unwrap();
        assert_eq!(&pong, b"\r\npong");

        let mut plain = TcpStream::connect((Ipv4Addr::LOCALHOST, proxy.port())).unwrap();
        let request = format!(
            "GET http://127.0.0.1:{port}/path?q HTTP/1.1\r\nHost: x\r\nProxy-Authorization: k\r\n\r\n"
        );
        plain.write_all(request.as_bytes()).unwrap();
        let (inside_plain, _) = server.accept().unwrap();
        let mut head = String::new();
        let mut lines = io::BufReader::new(inside_plain);
        while !head.ends_with("\r\n\r\n") {
            lines.read_line(&mut head).unwrap();
        }
        assert_eq!(
            head, "GET /path?q HTTP/1.1\r\nHost: x\r\n\r\n",
            "origin form, no Proxy- header"
        );

        assert_eq!(threads_named("egress-proxy"), 1);
        assert!(threads_named("egress-conn") >= 2, "a thread per open connection");
        let port_of_proxy = proxy.port();
        drop(proxy);
        for name in ["egress-proxy", "egress-conn", "egress-relay"] {
            assert_eq!(threads_named(name), 0, "{name} outlived the proxy");
        }
        assert!(TcpStream::connect((Ipv4Addr::LOCALHOST, port_of_proxy)).is_err(), "closed");
        let mut after = Vec::new();
        assert_eq!(tunnel.read_to_end(&mut after).unwrap_or(0), 0, "the tunnel was closed");
    }

    #[test]
    fn an_authority_reads_as_host_and_port() {
        assert_eq!(authority("a.example:443", None), Ok(("a.example".into(), 443)));
        assert_eq!(authority("[::1]:22", None), Ok(("::1".into(), 22)));
        assert_eq!(authority("u:p@a.example", Some(80)), Ok(("a.example".into(), 80)));
        assert!(authority("a.example", None).is_err());
        assert!(authority("a.example:0", None).is_err());
        assert!(authority(":80", None).is_err());
    }
}
