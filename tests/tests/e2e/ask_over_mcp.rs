//! `ask_user` and approval cards over MCP elicitation, with the official Python client:
//! accept with option 2, decline, cancel, and a client without the capability.

use serde_json::{Value, json};

use crate::support::{McpScript, RawHost, Sdk, TempProject, text_of, tool_names};

/// Runs `script`; returns the driver's whole output (`results`, `elicitations`).
fn check(project: &TempProject, script: McpScript) -> Option<Value> {
    let _ = project;
    script.run_and_end()
}

fn database_question() -> Value {
    json!({
        "question": "Which database should the cache use?",
        "context": "The schema depends on it.",
        "options": [
            {"label": "Redis", "description": "already deployed"},
            {"label": "SQLite"},
            {"label": "Postgres"}
        ]
    })
}

#[test]
fn a_client_that_accepts_option_2_gets_that_answer() {
    let project = TempProject::new(&[]);
    let script = McpScript::new(&project.root, &[])
        .elicitation("accept", json!({"choice": "2. SQLite"}))
        .list_tools()
        .call("ask_user", database_question());
    let Some(out) = check(&project, script) else { return };
    let results = out["results"].as_array().unwrap();
    assert!(tool_names(&results[1]).contains(&"ask_user"), "{:?}", results[1]);
    let ask = results[1]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "ask_user");
    assert_eq!(ask.unwrap()["readOnly"], true, "ask_user is tier read");

    let answer = &results[2];
    assert_eq!(answer["isError"], false, "{}", text_of(answer));
    assert!(
        text_of(answer).starts_with("Card 1 answered by the operator of "),
        "{}",
        text_of(answer)
    );
    assert!(text_of(answer).ends_with("\nChosen: 2. SQLite"), "{}", text_of(answer));
    assert_eq!(answer["structured"]["status"], "answered");
    assert_eq!(answer["structured"]["selected"], json!([{"number": 2, "label": "SQLite"}]));

    let elicitations = out["elicitations"].as_array().unwrap();
    assert_eq!(elicitations.len(), 1);
    let form = &elicitations[0];
    let message = form["message"].as_str().unwrap();
    assert!(
        message.starts_with("Card 1 · question\nWhich database should the cache use?"),
        "{message}"
    );
    assert!(message.contains("1. Redis — already deployed"), "{message}");
    assert_eq!(
        form["schema"]["properties"]["choice"]["enum"],
        json!(["1. Redis", "2. SQLite", "3. Postgres"])
    );
    assert_eq!(form["schema"]["required"], json!(["choice"]));
    assert!(form["schema"]["properties"].get("text").is_none(), "no free text was allowed");
}

#[test]
fn a_client_that_declines_skips_the_card_without_an_error() {
    let project = TempProject::new(&[]);
    let script = McpScript::new(&project.root, &[])
        .elicitation("decline", Value::Null)
        .call("ask_user", database_question());
    let Some(out) = check(&project, script) else { return };
    let result = &out["results"][1];
    assert_eq!(result["isError"], false, "a skip is a success");
    assert_eq!(result["structured"]["status"], "skipped");
    assert_eq!(result["structured"]["how"], "declined");
    // A client that shows the model only the payload (Claude Code) carries the instruction too.
    let next = result["structured"]["next"].as_str().unwrap_or_default();
    assert!(next.contains("do not ask this question again"), "{result}");
    let text = text_of(result);
    assert!(text.starts_with("Card 1 declined:") && !text.contains("skipped"), "{text}");
    assert!(text.contains("declined to answer"), "{text}");
    assert!(text.contains("do not ask this question again"), "{text}");
}

#[test]
fn a_client_that_cancels_skips_the_card_and_says_so() {
    let project = TempProject::new(&[]);
    let script = McpScript::new(&project.root, &[])
        .elicitation("cancel", Value::Null)
        .call("ask_user", database_question());
    let Some(out) = check(&project, script) else { return };
    let result = &out["results"][1];
    assert_eq!(result["isError"], false);
    assert_eq!(result["structured"]["how"], "dismissed");
    assert!(text_of(result).contains("cancelled it"), "{}", text_of(result));
}

#[test]
fn a_client_without_the_elicitation_capability_does_not_see_ask_user() {
    let project = TempProject::new(&[]);
    let script =
        McpScript::new(&project.root, &[]).list_tools().call("ask_user", database_question());
    let Some(out) = check(&project, script) else { return };
    let results = out["results"].as_array().unwrap();
    assert!(!tool_names(&results[1]).contains(&"ask_user"), "{:?}", results[1]);
    assert_eq!(results[2]["isError"], true);
    assert!(text_of(&results[2]).contains("unknown tool `ask_user`"), "{}", text_of(&results[2]));
    assert!(out["elicitations"].as_array().unwrap().is_empty());
}

#[test]
fn a_declined_approval_card_denies_the_write() {
    let project =
        TempProject::new(&[("agent-tools.toml", "[approval]\npolicy = \"before_write\"\n")]);
    let script = McpScript::new(&project.root, &[])
        .elicitation("decline", Value::Null)
        .call("write", json!({"path": "a.txt", "content": "x\n"}));
    let Some(out) = check(&project, script) else { return };
    let result = &out["results"][1];
    assert_eq!(result["isError"], true);
    assert!(
        text_of(result).starts_with("write: did not run, approval denied"),
        "{}",
        text_of(result)
    );
    assert!(!project.root.join("a.txt").exists());
    let message = out["elicitations"][0]["message"].as_str().unwrap();
    assert!(message.starts_with("Card 1 · approval\nAllow `write` (write-tier)"), "{message}");
}

#[test]
fn an_approval_with_nobody_to_ask_fails_closed() {
    let project =
        TempProject::new(&[("agent-tools.toml", "[approval]\npolicy = \"before_write\"\n")]);
    let script = McpScript::new(&project.root, &[])
        .call("write", json!({"path": "a.txt", "content": "x\n"}))
        .call("read", json!({"path": "agent-tools.toml"}));
    let Some(out) = check(&project, script) else { return };
    let write = &out["results"][1];
    assert_eq!(write["isError"], true);
    assert!(text_of(write).contains("approvals fail closed"), "{}", text_of(write));
    assert!(!project.root.join("a.txt").exists());
    assert_eq!(out["results"][2]["isError"], false, "reads need no approval");
}

/// The 2026-07-28 protocol: cards as multi round-trip requests, with the Python SDK 2.x.
fn check_modern(project: &TempProject, script: McpScript) -> Option<Value> {
    let _ = project;
    script.mode("2026-07-28").run_with(Sdk::V2)
}

#[test]
fn a_2026_client_gets_ask_user_and_its_answer_through_input_required_rounds() {
    let project = TempProject::new(&[]);
    for mode in ["auto", "2026-07-28"] {
        let script = McpScript::new(&project.root, &[])
            .mode(mode)
            .elicitation("accept", json!({"choice": "2. SQLite"}))
            .list_tools()
            .call("ask_user", database_question());
        let Some(out) = script.run_with(Sdk::V2) else { return };
        let results = out["results"].as_array().unwrap();
        assert!(tool_names(&results[1]).contains(&"ask_user"), "{mode}: {:?}", results[1]);
        let answer = &results[2];
        assert_eq!(answer["isError"], false, "{mode}: {}", text_of(answer));
        assert!(text_of(answer).ends_with("\nChosen: 2. SQLite"), "{mode}: {}", text_of(answer));
        let elicitations = out["elicitations"].as_array().unwrap();
        assert_eq!(elicitations.len(), 1, "{mode}: one card, one form");
        assert_eq!(elicitations[0]["schema"]["properties"]["choice"]["enum"][1], "2. SQLite");
    }
}

#[test]
fn a_2026_client_allows_an_approval_card_and_the_write_goes_through() {
    let project =
        TempProject::new(&[("agent-tools.toml", "[approval]\npolicy = \"before_write\"\n")]);
    let script = McpScript::new(&project.root, &[])
        .elicitation("accept", json!({"choice": "1. Allow"}))
        .call("write", json!({"path": "new.txt", "content": "hello\n"}));
    let Some(out) = check_modern(&project, script) else { return };
    let write = &out["results"][1];
    assert_eq!(write["isError"], false, "{}", text_of(write));
    assert_eq!(std::fs::read_to_string(project.root.join("new.txt")).unwrap(), "hello\n");
    let message = out["elicitations"][0]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("Card 1 · approval\nAllow `write` (write-tier)"), "{message}");
}

/// The `_meta` of a raw 2026-07-28 request from a client that can answer forms.
fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "raw-e2e", "version": "0"},
    })
}

/// `tools/call` params for `ask_user` with `question`, plus `extra` fields.
fn ask_params(question: &Value, extra: Value) -> Value {
    let mut params = json!({"_meta": modern_meta(), "name": "ask_user", "arguments": question});
    params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    params
}

/// The first round's `requestState` of `ask_user` with `question`.
fn first_state(host: &mut RawHost, id: u64, question: &Value) -> String {
    let first = host.request(id, "tools/call", ask_params(question, json!({})));
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    first["result"]["requestState"].as_str().expect("requestState").to_string()
}

/// `state` with one character of its signed payload (the middle part) changed.
fn tampered(state: &str) -> String {
    let (prefix, rest) = state.split_once('.').expect("a dotted token");
    let (payload, tag) = rest.split_once('.').expect("payload and tag");
    let mut payload = payload.to_string().into_bytes();
    let middle = payload.len() / 2;
    payload[middle] = if payload[middle] == b'A' { b'B' } else { b'A' };
    format!("{prefix}.{}.{tag}", String::from_utf8(payload).unwrap())
}

#[test]
fn a_forged_tampered_foreign_retargeted_or_replayed_request_state_is_refused() {
    let project = TempProject::new(&[]);
    let mut host = RawHost::start(&project.root, "mrtr-state", &[]);
    let mut other_host = RawHost::start(&project.root, "mrtr-other", &[]);
    let question = database_question();
    let answer = json!({"card": {"action": "accept", "content": {"choice": "3. Postgres"}}});
    let retry = |state: &str| json!({"requestState": state, "inputResponses": answer});
    let state = first_state(&mut host, 1, &question);
    let foreign = first_state(&mut other_host, 1, &question);
    let mut other_question = question.clone();
    other_question["question"] = json!("Which cache should we use?");

    let forged = "integrity check failed";
    let mut ask = |id: u64, question: &Value, state: &str| {
        host.request(id, "tools/call", ask_params(question, retry(state)))
    };
    let refusals = [
        ("made up", ask(2, &question, "rs1.e30.AAAA"), forged),
        ("tampered", ask(3, &question, &tampered(&state)), forged),
        ("another process's", ask(4, &question, &foreign), forged),
        ("another call's", ask(5, &other_question, &state), "another tool call"),
    ];
    let answered = ask(6, &question, &state);
    let replayed = ask(7, &question, &state);

    for (what, refused, reason) in &refusals {
        assert_eq!(refused["result"]["isError"], true, "{what}: {refused}");
        let text = refused.to_string();
        assert!(text.contains("requestState refused") && text.contains(reason), "{what}: {text}");
    }
    assert_eq!(answered["result"]["isError"], false, "{answered}");
    assert!(answered.to_string().contains("Chosen: 3. Postgres"), "{answered}");
    assert!(replayed.to_string().contains("already used"), "{replayed}");
    assert!(host.finish().success());
    assert!(other_host.finish().success());
}

#[test]
fn a_request_state_that_is_not_a_string_is_invalid_params_naming_it() {
    let project = TempProject::new(&[]);
    let mut host = RawHost::start(&project.root, "mrtr-state-type", &[]);
    let question = database_question();
    for (id, state) in [(1, json!(42)), (2, json!({"nonce": "x"})), (3, json!(["rs1"]))] {
        let params = ask_params(&question, json!({"requestState": state}));
        host.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}));
        let error = host.next_error(Some(id));
        assert_eq!(error["error"]["code"], -32602, "{state}: {error}");
        let message = error["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("`requestState` must be a string"), "{state}: {message}");
    }
    // The connection still serves: a first round without requestState raises its card.
    first_state(&mut host, 4, &question);
    assert!(host.finish().success());
}
