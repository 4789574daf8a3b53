//! Durations worded for a model: `250 ms`, `1.5 s`, `90 s`, `15 min`, `1 h 5 min`.

use std::time::Duration;

/// The one wording of a duration in every family's output.
///
/// Below one second in milliseconds; below ten seconds with one decimal when it has one; below
/// two minutes in whole seconds; then minutes (with leftover seconds) and hours.
///
/// ```
/// use std::time::Duration;
/// use agent_tools_support::duration::human;
/// assert_eq!(human(Duration::from_millis(250)), "250 ms");
/// assert_eq!(human(Duration::from_millis(1500)), "1.5 s");
/// assert_eq!(human(Duration::from_secs(90)), "90 s");
/// assert_eq!(human(Duration::from_secs(900)), "15 min");
/// assert_eq!(human(Duration::from_secs(3900)), "1 h 5 min");
/// ```
pub fn human(d: Duration) -> String {
    let millis = d.as_millis();
    if millis < 1000 {
        return format!("{millis} ms");
    }
    let secs = d.as_secs();
    if secs < 10 {
        let tenths = (millis + 50) / 100;
        return if tenths.is_multiple_of(10) {
            format!("{} s", tenths / 10)
        } else {
            format!("{}.{} s", tenths / 10, tenths % 10)
        };
    }
    if secs < 120 {
        return format!("{secs} s");
    }
    let (h, m, s) = (secs / 3600, (secs % 3600) / 60, secs % 60);
    match (h, m, s) {
        (0, m, 0) => format!("{m} min"),
        (0, m, s) => format!("{m} min {s} s"),
        (h, 0, _) => format!("{h} h"),
        (h, m, _) => format!("{h} h {m} min"),
    }
}

/// [`human`] of a whole number of seconds, for configured limits.
pub fn human_seconds(secs: u64) -> String {
    human(Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_range_has_its_unit() {
        let cases = [
            (0, "0 ms"),
            (999, "999 ms"),
            (1000, "1 s"),
            (2340, "2.3 s"),
            (9960, "10 s"),
            (10_000, "10 s"),
            (119_000, "119 s"),
            (120_000, "2 min"),
            (1_798_000, "29 min 58 s"),
            (1_800_000, "30 min"),
            (7_200_000, "2 h"),
            (7_500_000, "2 h 5 min"),
        ];
        for (ms, want) in cases {
            assert_eq!(human(Duration::from_millis(ms)), want, "{ms} ms");
        }
    }
}
