//! The Python exceptions of the module; their messages are the facade's own.

use pyo3::{create_exception, exceptions::PyException};

create_exception!(
    _native,
    AgentToolsError,
    PyException,
    "A run cannot be opened or used: a bad root, surface or configuration file."
);
create_exception!(
    _native,
    ToolNotFoundError,
    AgentToolsError,
    "The tool is not on this run's surface: unknown, or above the surface's tier ceiling."
);
create_exception!(
    _native,
    RunClosedError,
    AgentToolsError,
    "The run was closed; its resources are gone. Open a new `Run`."
);
