//! Counts worded for a model: `1 line`, `3 lines`, `0 files`.

/// `n` and the noun in the number `n` takes: `one` for exactly 1, `many` otherwise.
///
/// ```
/// use agent_tools_support::words::count;
/// assert_eq!(count(1, "line", "lines"), "1 line");
/// assert_eq!(count(3, "line", "lines"), "3 lines");
/// assert_eq!(count(0, "match", "matches"), "0 matches");
/// ```
pub fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
