//! The structured form of a cell's result: the same payload as the rendered text, as data.
//!
//! Clients such as Claude Code and Codex show the model only `structuredContent` when a result
//! has it, so this carries everything the text does (outputs, value, traceback, kernel state),
//! with images referenced by their position among the result's image blocks.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::{
    render::{clean_terminal_text, render_bundle},
    types::{
        Bundle, CellError, CellReport, CellStatus, InterruptReason, KernelNote, Language, Output,
        StreamName,
    },
};

/// One cell's result as data.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct CellPayload {
    pub status: CellStatus,
    pub language: Language,
    /// The run's number for this cell: `eval` with `cell` waits again for it while it runs.
    #[serde(skip_serializing_if = "is_zero")]
    pub cell: u64,
    /// `In[n]`; 0 when the cell did not run.
    pub execution_count: u64,
    pub outputs: Vec<PayloadOutput>,
    /// The last expression's value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Shown>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<CellError>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupt: Option<InterruptReason>,
    pub kernel: KernelNote,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The working directory, when the cell changed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// An output in the order it came.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PayloadOutput {
    Stream {
        name: StreamName,
        text: String,
    },
    Display(Shown),
    /// Characters of output cut from the middle.
    Cut {
        chars: usize,
    },
}

/// A rich output or value: its model view, its JSON data, its image.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Shown {
    /// Tables as markdown, HTML as text, images as `[image N: …]`.
    pub text: String,
    /// 1-based index among the result's images.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<usize>,
    /// `application/json` data, when the object has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl Shown {
    fn of(bundle: &Bundle, image_no: &mut usize) -> Self {
        let before = *image_no;
        let text = render_bundle(bundle, image_no);
        Shown {
            text,
            image: (*image_no > before).then_some(*image_no),
            data: bundle.get("application/json").cloned(),
        }
    }
}

/// The payload of `report`; image indices match [`crate::images`].
pub fn payload(report: &CellReport) -> CellPayload {
    let mut image_no = 0;
    let outputs = report
        .outputs
        .iter()
        .map(|o| match o {
            Output::Stream { name, text } => {
                PayloadOutput::Stream { name: *name, text: clean_terminal_text(text) }
            }
            Output::Display { bundle, .. } => {
                PayloadOutput::Display(Shown::of(bundle, &mut image_no))
            }
            Output::Cut { chars } => PayloadOutput::Cut { chars: *chars },
        })
        .collect();
    let value = report.result.as_ref().map(|b| Shown::of(b, &mut image_no));
    CellPayload {
        status: report.status,
        language: report.language,
        cell: report.cell,
        execution_count: report.execution_count,
        outputs,
        value,
        error: report.error.clone().filter(|_| report.status != CellStatus::Interrupted),
        interrupt: report.interrupt,
        kernel: report.kernel.clone(),
        notes: report.notes.iter().filter(|n| !n.starts_with("budget:")).cloned().collect(),
        cwd: report.cwd_changed.clone(),
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
