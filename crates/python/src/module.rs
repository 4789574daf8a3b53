//! The `agent_tools._native` module: its classes, exceptions and version.

use pyo3::prelude::*;

use crate::{
    command,
    errors::{AgentToolsError, RunClosedError, ToolNotFoundError},
    run::{Cancel, NativeRun},
};

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(command::main, m)?)?;
    m.add_class::<NativeRun>()?;
    m.add_class::<Cancel>()?;
    m.add("AgentToolsError", py.get_type::<AgentToolsError>())?;
    m.add("ToolNotFoundError", py.get_type::<ToolNotFoundError>())?;
    m.add("RunClosedError", py.get_type::<RunClosedError>())?;
    Ok(())
}
