//! Process ids across a capsule's PID namespace: what an adapter inside reports is its own
//! namespace's number, and the host must act on its host number.

use std::collections::VecDeque;

/// `pid` and its descendants, breadth first (at most 4096).
pub(super) fn descendants(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let mut queue = VecDeque::from([pid]);
    while let Some(next) = queue.pop_front() {
        if found.len() >= 4096 {
            break;
        }
        found.push(next);
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{next}/task")) else { continue };
        for task in tasks.flatten() {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            queue.extend(children.split_whitespace().filter_map(|c| c.parse::<u32>().ok()));
        }
    }
    found
}

/// The host pid of the process under `under` whose pid in its own (innermost) namespace is
/// `inside`; None when no descendant has it.
pub(super) fn host_pid_of(inside: u32, under: u32) -> Option<u32> {
    descendants(under).into_iter().find(|&pid| {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let Some(line) = status.lines().find(|l| l.starts_with("NSpid:")) else { return false };
        let numbers: Vec<u32> =
            line["NSpid:".len()..].split_whitespace().filter_map(|n| n.parse().ok()).collect();
        numbers.len() > 1 && numbers.last() == Some(&inside)
    })
}
