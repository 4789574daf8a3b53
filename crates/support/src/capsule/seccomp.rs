//! The system-call filter of a capsule: what Landlock cannot express, and what bubblewrap does
//! not refuse by itself (it loads the same program from a descriptor).
//!
//! Refused with `EPERM`: new namespaces (`unshare`, `setns`, `clone` with a `CLONE_NEW*` flag;
//! `clone3`, whose flags a filter cannot read, answers `ENOSYS` so libc falls back to `clone`),
//! the kernel keyring (`keyctl`, `add_key`, `request_key`), `io_uring` (its operations bypass
//! this filter), `bpf`, `perf_event_open`, pushing keystrokes into a terminal (`TIOCSTI`),
//! and without network (or for workers) every IP socket but plain TCP (whose connections Landlock
//! refuses but to the ports it allows). A
//! hand-built classic BPF program: a handful of comparisons, no dependency.

/// One BPF instruction (`struct sock_filter`).
pub(super) type Instruction = libc::sock_filter;

const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const JSET_K: u16 = (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16;
const AND_K: u16 = (libc::BPF_ALU | libc::BPF_AND | libc::BPF_K) as u16;
const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

/// Offsets in `struct seccomp_data`.
const NR: u32 = 0;
const ARCH: u32 = 4;
/// The low 32 bits of argument `i` (little-endian).
const fn arg(i: u32) -> u32 {
    16 + 8 * i
}

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;

const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
const EPERM: u32 = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
const ENOSYS: u32 = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;

/// `CLONE_NEW*` flags `clone` may not carry (`CLONE_NEWTIME` shares its bit with the exit
/// signal in `clone`'s flags; `unshare` is refused whole).
const CLONE_NEW: u32 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWCGROUP
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET) as u32;

fn op(code: u16, k: u32, jt: u8, jf: u8) -> Instruction {
    Instruction { code, jt, jf, k }
}

fn load(offset: u32) -> Instruction {
    op(LD_W_ABS, offset, 0, 0)
}

fn ret(value: u32) -> Instruction {
    op(RET_K, value, 0, 0)
}

/// Whether IP sockets other than TCP are refused (a capsule without network).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum IpSockets {
    TcpOnly,
    All,
}

/// The filter program.
pub(super) fn program(ip: IpSockets) -> Vec<Instruction> {
    let mut p = vec![
        load(ARCH),
        op(JEQ_K, AUDIT_ARCH, 1, 0),
        ret(EPERM), // another architecture's system calls (i386 on x86-64)
        load(NR),
    ];
    #[cfg(target_arch = "x86_64")]
    p.extend([op(JGE_K, 0x4000_0000, 0, 1), ret(EPERM)]); // the x32 ABI
    let refused = [
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
    ];
    for nr in refused {
        p.extend([op(JEQ_K, nr as u32, 0, 1), ret(EPERM)]);
    }
    p.extend([op(JEQ_K, libc::SYS_clone3 as u32, 0, 1), ret(ENOSYS)]);
    // clone: refused with a namespace flag.
    p.extend([
        op(JEQ_K, libc::SYS_clone as u32, 0, 4),
        load(arg(0)),
        op(JSET_K, CLONE_NEW, 0, 1),
        ret(EPERM),
        ret(ALLOW),
    ]);
    // ioctl(fd, TIOCSTI, …): refused.
    p.extend([
        op(JEQ_K, libc::SYS_ioctl as u32, 0, 4),
        load(arg(1)),
        op(JEQ_K, libc::TIOCSTI as u32, 0, 1),
        ret(EPERM),
        ret(ALLOW),
    ]);
    if ip == IpSockets::TcpOnly {
        // socket(AF_INET or AF_INET6, …) other than SOCK_STREAM with protocol 0 or TCP:
        // refused (MPTCP and SCTP streams are not TCP to Landlock's rules).
        p.extend([
            op(JEQ_K, libc::SYS_socket as u32, 0, 11),
            load(arg(0)),
            op(JEQ_K, libc::AF_INET as u32, 1, 0),
            op(JEQ_K, libc::AF_INET6 as u32, 0, 7),
            load(arg(1)),
            op(AND_K, 0xf, 0, 0),
            op(JEQ_K, libc::SOCK_STREAM as u32, 0, 3),
            load(arg(2)),
            op(JEQ_K, 0, 2, 0),
            op(JEQ_K, libc::IPPROTO_TCP as u32, 1, 0),
            ret(EPERM),
            ret(ALLOW),
        ]);
    }
    p.push(ret(ALLOW));
    p
}

/// Installs `program` on the calling thread. Between fork and exec: one `prctl`, no
/// allocation; `no_new_privs` must be set first.
pub(super) fn install(program: &[Instruction]) -> std::io::Result<()> {
    let fprog = libc::sock_fprog { len: program.len() as u16, filter: program.as_ptr().cast_mut() };
    // SAFETY: `fprog` points at `program`, alive for the call; the kernel copies it.
    let done = unsafe {
        libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &raw const fprog as usize)
    };
    if done != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// `program` in a sealed-off memory file at offset 0, for bubblewrap's `--add-seccomp-fd` (it
/// reads the instructions as they lie in memory).
pub(super) fn memory_file(program: &[Instruction]) -> std::io::Result<std::os::fd::OwnedFd> {
    use std::{io::Write, os::fd::FromRawFd};
    // SAFETY: a NUL-terminated name; the call returns a new descriptor or -1.
    let fd = unsafe { libc::memfd_create(c"agent-tools-seccomp".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a new descriptor, ours alone.
    let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
    // SAFETY: `sock_filter` is plain data (u16, u8, u8, u32) without padding; its bytes are
    // what the kernel reads.
    let bytes = unsafe {
        std::slice::from_raw_parts(program.as_ptr().cast::<u8>(), std::mem::size_of_val(program))
    };
    file.write_all(bytes)?;
    use std::io::Seek;
    file.seek(std::io::SeekFrom::Start(0))?;
    Ok(file.into())
}
