//! Telling at once that the program waits for input: a thread of one of its processes is
//! blocked in `read` on a stdin that is the pipe (or FIFO) `stdin` feeds, with nothing pending.

use std::os::unix::fs::MetadataExt;

use agent_tools_support::process::KnownProcess;

/// `read`, `pread64` and `readv` on this architecture.
#[cfg(target_arch = "aarch64")]
const READS: [u64; 3] = [63, 67, 65];
#[cfg(not(target_arch = "aarch64"))]
const READS: [u64; 3] = [0, 17, 19];

/// The inode of the pipe or FIFO behind an open file (ours, the writing end).
pub(super) fn inode_of(file: &std::fs::File) -> Option<u64> {
    file.metadata().ok().map(|m| m.ino())
}

/// Whether one of `procs` has a thread blocked reading its fd 0, and fd 0 is `stdin_inode`.
pub(super) fn reading_stdin(procs: &[KnownProcess], stdin_inode: u64) -> bool {
    procs.iter().filter(|p| p.alive()).any(|p| {
        let ours = std::fs::metadata(format!("/proc/{}/fd/0", p.pid))
            .is_ok_and(|m| m.ino() == stdin_inode);
        ours && thread_reads_fd0(p.pid)
    })
}

fn thread_reads_fd0(pid: i32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return false };
    tasks.flatten().any(|task| {
        // `NR arg0 arg1 …` while blocked in a system call (`running` or `-1 …` otherwise).
        let Ok(text) = std::fs::read_to_string(task.path().join("syscall")) else { return false };
        let mut fields = text.split_whitespace();
        let number = fields.next().and_then(|n| n.parse::<u64>().ok());
        let fd =
            fields.next().and_then(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).ok());
        number.is_some_and(|n| READS.contains(&n)) && fd == Some(0)
    })
}
