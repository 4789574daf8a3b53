//! The README's client matrix (client × transport × what is shown) is made here, from the list
//! of client tests below: each row names the test that shows it, every such test exists, every
//! test of the real clients (`clients/`) has a row, and the README holds exactly this table.
//! `AGENT_TOOLS_WRITE_README=1` writes it there.

use std::path::{Path, PathBuf};

/// (client, transport, what the test shows, the test's module and name).
const ROWS: &[(&str, &str, &str, &str)] = &[
    (
        "Claude Code",
        "stdio",
        "the README line, health check, tool calls for a model, a dismissed card",
        "clients::claude_code::claude_code_adds_the_readme_line_connects_and_calls_tools_for_a_model",
    ),
    (
        "Claude Code",
        "stdio",
        "a 3,519-line read and a 500-match search cut once; a figure as an image",
        "clients::claude_code::claude_codes_model_gets_a_long_read_and_a_large_search_cut_once_and_a_figure",
    ),
    (
        "Claude Code",
        "HTTP",
        "the token; its abandoned session ends",
        "clients::claude_code::claude_code_connects_over_http_with_the_token_and_its_abandoned_session_ends",
    ),
    (
        "Codex",
        "stdio",
        "the README config, tool calls, cards and approvals dismissed",
        "clients::codex::codex_parses_the_readme_config_lists_the_tools_and_calls_them",
    ),
    (
        "Codex",
        "HTTP",
        "the token; it deletes its session",
        "clients::codex::codex_connects_over_http_with_the_token_and_deletes_its_session",
    ),
    (
        "Codex",
        "HTTP",
        "a figure as an image without structured content; a long read and a large search cut alike",
        "clients::codex::codex_gets_a_figure_as_an_image_block_and_a_long_read_and_search_cut_alike",
    ),
    (
        "Claude Code, newest (npm at test time)",
        "stdio",
        "a long read and a large search cut once; a figure as an image",
        "clients::newest::the_newest_claude_code_still_gets_a_long_read_a_large_search_and_a_figure_cut_alike",
    ),
    (
        "Codex, newest (npm at test time)",
        "HTTP",
        "a figure as an image; a long read and a large search cut alike",
        "clients::newest::the_newest_codex_still_gets_a_long_read_a_large_search_and_a_figure_cut_alike",
    ),
    (
        "VS Code",
        "stdio",
        "the README block started as VS Code would",
        "clients::the_vs_code_block_starts_the_server_at_the_opened_folder",
    ),
    (
        "Cursor",
        "stdio",
        "the README block started as Cursor would",
        "clients::the_cursor_block_starts_the_server_at_the_root",
    ),
    (
        "Zed",
        "stdio",
        "the README block started as Zed would",
        "clients::the_zed_block_starts_the_server_at_the_root",
    ),
    (
        "Goose",
        "stdio",
        "the README block started as Goose would",
        "clients::the_goose_block_starts_the_server_at_the_root",
    ),
    (
        "Python SDK 1.x",
        "stdio",
        "a long read and a large search cut once, schema-valid",
        "output_cap_over_mcp::a_long_read_and_a_large_search_are_cut_the_same_way_in_text_and_structured_content_sdk1",
    ),
    (
        "Python SDK 1.x",
        "stdio",
        "a cancelled cell interrupted, the next cells answer",
        "host_over_mcp::a_cancelled_ten_second_python_cell_is_interrupted_and_the_next_cells_answer_sdk1",
    ),
    (
        "Python SDK 2.x",
        "stdio",
        "a long read and a large search cut once, schema-valid",
        "output_cap_over_mcp::a_long_read_and_a_large_search_are_cut_the_same_way_in_text_and_structured_content_sdk2",
    ),
    (
        "Python SDK 2.x",
        "stdio",
        "a cancelled cell interrupted, the next cells answer",
        "host_over_mcp::a_cancelled_ten_second_python_cell_is_interrupted_and_the_next_cells_answer_sdk2",
    ),
    (
        "Python SDK 2.x, 2026-07-28",
        "stdio",
        "a cancelled cell interrupted",
        "host_over_mcp::a_cancelled_python_cell_on_a_2026_07_28_connection_is_interrupted_too",
    ),
    (
        "Python SDK 1.x",
        "HTTP",
        "two sessions at once, a kernel each",
        "http_over_mcp::two_sessions_at_once_list_call_and_keep_their_own_kernels",
    ),
    (
        "Python SDK 2.x, auto",
        "HTTP",
        "2026-07-28, the kernel kept across requests",
        "http_over_mcp::an_sdk2_client_in_auto_mode_speaks_2026_07_28_and_keeps_its_kernel",
    ),
    (
        "Python SDK 2.x, legacy",
        "HTTP",
        "a session each",
        "http_over_mcp::an_sdk2_client_in_legacy_mode_gets_a_session_of_its_own",
    ),
    (
        "Python SDK 2.x, pinned 2026-07-28",
        "HTTP",
        "the kernel kept, an approval card in rounds",
        "http_over_mcp::a_client_pinned_to_2026_07_28_keeps_its_kernel_and_answers_cards_in_rounds",
    ),
    (
        "TypeScript SDK 1.x",
        "stdio",
        "a cancelled cell interrupted, the next cells answer",
        "host_over_mcp::a_cell_cancelled_by_the_typescript_sdk_is_interrupted_and_the_next_cells_answer",
    ),
    (
        "TypeScript client 2.x, pinned, auto, legacy",
        "HTTP",
        "connects, the kernel kept",
        "http_over_mcp::the_typescript_client_pinned_to_2026_07_28_connects_and_keeps_its_kernel",
    ),
    (
        "raw JSON-RPC",
        "stdio",
        "errors for bad input, JSON-RPC 1.0, whole numbers as integers",
        "host_over_mcp::bad_input_gets_json_rpc_errors_that_say_what_is_wrong",
    ),
    (
        "raw JSON-RPC",
        "stdio",
        "a batch answered as one array",
        "host_over_mcp::a_batch_over_stdio_gets_its_replies_as_one_array",
    ),
    (
        "raw JSON-RPC",
        "stdio",
        "no bare `true` where a schema belongs, in any tool's input or output schema",
        "host_over_mcp::no_listed_schema_has_a_bare_boolean_where_a_schema_belongs",
    ),
    (
        "raw HTTP",
        "HTTP",
        "a batch answered as one array",
        "http_protocol::a_batch_on_a_2025_03_26_session_gets_its_replies_together",
    ),
    (
        "raw HTTP",
        "HTTP",
        "-32700 and -32600 for bodies that are not JSON-RPC 2.0",
        "http_protocol::a_body_that_is_not_json_or_not_json_rpc_2_gets_a_json_rpc_error",
    ),
    (
        "raw HTTP",
        "HTTP",
        "`bearer` in any case",
        "http_protocol::the_bearer_scheme_is_case_insensitive_and_a_wrong_token_still_is_not",
    ),
    (
        "raw HTTP",
        "HTTP",
        "DELETE of a session answers 204",
        "http_protocol::deleting_a_session_answers_no_content_and_ends_it",
    ),
    (
        "raw JSON-RPC",
        "stdio",
        "cells sent back to back run in arrival order; a cancelled queued cell never runs",
        "host_over_mcp::cells_sent_back_to_back_run_in_arrival_order_and_a_cancelled_queued_one_never_runs",
    ),
    (
        "raw JSON-RPC",
        "stdio",
        "a batch whose call raises an approval card",
        "host_over_mcp::a_batch_whose_call_raises_an_approval_card_gets_the_card_and_then_its_replies",
    ),
    (
        "raw HTTP",
        "HTTP",
        "a batch whose call raises an approval card, streamed",
        "http_protocol::a_batch_whose_call_raises_an_approval_card_streams_the_card_and_then_its_replies",
    ),
    (
        "raw HTTP",
        "HTTP",
        "a peer over its bound of busy connections refused, silent ones held",
        "http_protocol::a_peer_over_its_bound_of_busy_connections_is_refused_while_silent_ones_are_held",
    ),
    (
        "raw HTTP",
        "HTTP",
        "a body sent slowly cut off, others served",
        "http_protocol::a_body_sent_slowly_is_cut_off_at_the_body_timeout_while_others_are_served",
    ),
    (
        "conformance suite 0.1.16",
        "HTTP",
        "every scenario passes or is listed below",
        "conformance::every_conformance_scenario_passes_or_is_listed_in_the_readme_as_not_offered",
    ),
];

const BEGIN: &str =
    "<!-- client matrix: made by the e2e test `matrix`; AGENT_TOOLS_WRITE_README=1 rewrites it -->";
const END: &str = "<!-- end of the client matrix -->";

fn e2e_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e")
}

fn readme() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md")
}

fn table() -> String {
    let mut out = String::from("| client | transport | shown | test |\n|---|---|---|---|\n");
    for (client, transport, shown, test) in ROWS {
        let name = test.rsplit("::").next().unwrap_or(test);
        out.push_str(&format!("| {client} | {transport} | {shown} | {name} |\n"));
    }
    out
}

/// The source file of a test path `a::b::name`: `a/b.rs`, or `a.rs` for `a::name`.
fn source_of(test: &str) -> PathBuf {
    let mut parts: Vec<&str> = test.split("::").collect();
    parts.pop();
    e2e_dir().join(format!("{}.rs", parts.join("/")))
}

#[test]
fn the_readme_client_matrix_is_made_from_the_client_tests() {
    for (_, _, _, test) in ROWS {
        let name = test.rsplit("::").next().unwrap_or(test);
        let source = std::fs::read_to_string(source_of(test))
            .unwrap_or_else(|e| panic!("{test}: {} ({e})", source_of(test).display()));
        assert!(source.contains(&format!("fn {name}()")), "{test} is not a test in its file");
    }
    // Every test of a real client has its row.
    for file in ["clients/claude_code.rs", "clients/codex.rs"] {
        let source = std::fs::read_to_string(e2e_dir().join(file)).expect("client tests");
        let mut lines = source.lines();
        while let Some(line) = lines.next() {
            if line.trim() != "#[test]" {
                continue;
            }
            let Some(name) = lines
                .next()
                .and_then(|l| l.trim().strip_prefix("fn "))
                .and_then(|l| l.split('(').next())
            else {
                continue;
            };
            assert!(
                ROWS.iter().any(|(_, _, _, test)| test.ends_with(&format!("::{name}"))),
                "{file}: {name} has no row in the client matrix"
            );
        }
    }
    let text = std::fs::read_to_string(readme()).expect("README.md");
    let made = format!("{BEGIN}\n\n{}\n{END}", table());
    let (Some(start), Some(end)) = (text.find(BEGIN), text.find(END)) else {
        panic!("README.md has no client matrix between its markers");
    };
    let current = &text[start..end + END.len()];
    if current == made {
        return;
    }
    if std::env::var_os("AGENT_TOOLS_WRITE_README").is_some() {
        let updated = format!("{}{made}{}", &text[..start], &text[end + END.len()..]);
        std::fs::write(readme(), updated).expect("write README.md");
        return;
    }
    panic!("README.md's client matrix is stale; run this test with AGENT_TOOLS_WRITE_README=1");
}
