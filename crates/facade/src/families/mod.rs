//! Adapters from each family crate into the registry, one file per family.
//!
//! Each family file adds its `RegistryBuilder::with_<family>` (an inherent impl lives
//! beside the adapter), implements `Tool` for its tools over the family crate's domain API,
//! and offers `status_details` for `agent-tools status`. Each sits behind the cargo feature
//! of the same name, so a harness that wants one family pays for no other.
