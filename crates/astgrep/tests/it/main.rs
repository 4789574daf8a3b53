//! The astgrep crate's integration tests, one binary: each file is a module (one link, not ten).
//! `features` runs in every build; the others need the grammars their `cfg` names, all of
//! which the default features turn on.
// Tests, examples and test programs start and signal programs directly, on purpose.
#![allow(clippy::disallowed_methods)]

mod support;

#[cfg(feature = "default")]
mod bug_classes;
#[cfg(feature = "default")]
mod conformance;
#[cfg(all(feature = "lang-javascript", feature = "lang-python", feature = "lang-rust"))]
mod edit;
mod features;
#[cfg(feature = "default")]
mod fuzz;
#[cfg(feature = "default")]
mod matching;
#[cfg(feature = "default")]
mod outline;
#[cfg(all(
    feature = "lang-c",
    feature = "lang-go",
    feature = "lang-java",
    feature = "lang-javascript",
    feature = "lang-python",
    feature = "lang-rust",
    feature = "lang-tsx",
    feature = "lang-typescript"
))]
mod rule_vectors;
#[cfg(all(feature = "lang-javascript", feature = "lang-python", feature = "lang-rust"))]
mod rules;
#[cfg(all(
    feature = "lang-go",
    feature = "lang-javascript",
    feature = "lang-python",
    feature = "lang-rust"
))]
mod safe_rules;
#[cfg(all(
    feature = "lang-go",
    feature = "lang-javascript",
    feature = "lang-python",
    feature = "lang-rust"
))]
mod search;
