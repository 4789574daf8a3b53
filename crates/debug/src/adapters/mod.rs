//! The four adapters: which one a program needs (`kind.rs`), where their binaries are and what
//! versions they are (`probe.rs`), how to start one for a root or why it cannot start
//! (`resolve.rs`), and their launch and attach argument shapes with each adapter's quirks (the
//! measured ones, see the crate README; `arguments.rs`).

mod arguments;
mod kind;
mod probe;
mod resolve;

pub(crate) use self::probe::is_executable;
use self::probe::{go_binary, minor, parse_delve_version, parse_go_version};
pub use self::{
    arguments::{
        ExceptionMode, LaunchSpec, StdinSource, attach_arguments, attach_is_direct,
        exception_filters, launch_arguments,
    },
    kind::{AdapterKind, adapter_for_program, find_marker, go_module_dir, is_elf, looks_like_rust},
    probe::{
        Probes, SearchEnv, delve_candidates, delve_go_fit, lldb_candidates, lldb_version,
        probe_python, python_candidates, rust_formatter_commands,
    },
    resolve::{AdapterCommand, AdapterReport, report, resolve, resolve_with},
};
