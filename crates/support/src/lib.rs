//! Mechanisms every agent-tools family needs once, written and tested once.
#![doc = include_str!("../README.md")]

mod before;
pub mod capsule;
pub mod duration;
mod error;
pub mod family;
pub mod framing;
pub mod fs;
pub mod journal;
pub mod name_path;
pub mod process;
pub mod progress;
mod tier;
mod unavailable;
pub mod watch;
pub mod words;

pub use crate::{before::Before, error::Error, tier::Tier, unavailable::Unavailable};
