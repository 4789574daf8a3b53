//! `cargo xtask bench [NAME]`: benchmarks that run us and the reference tool side by side.
//!
//! Each family adds an entry to `BENCHES`; results go into `BENCHMARKS.md` by hand.

use anyhow::{Result, bail};

type Bench = fn(&[String]) -> Result<()>;

/// Name, what it compares, and the function that runs it.
const BENCHES: &[(&str, &str, Bench)] = &[];

pub(crate) fn run(args: &[String]) -> Result<()> {
    let wanted = args.first().map(String::as_str);
    let selected: Vec<_> =
        BENCHES.iter().filter(|(name, _, _)| wanted.is_none_or(|w| w == *name)).collect();
    if selected.is_empty() {
        let names: Vec<&str> = BENCHES.iter().map(|(n, _, _)| *n).collect();
        bail!(
            "no benchmark named {:?}; available: {}",
            wanted.unwrap_or(""),
            if names.is_empty() { "none yet".to_string() } else { names.join(", ") }
        );
    }
    for (name, what, bench) in selected {
        crate::step(&format!("bench {name}: {what}"));
        bench(&args[1.min(args.len())..])?;
    }
    Ok(())
}
