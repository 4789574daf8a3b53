//! Which question port a client's run gets: cards as elicitation requests on a connection
//! that still allows server-to-client requests, multi round-trip cards on 2026-07-28, or none.

use std::sync::Arc;

use agent_tools_ask::{QuestionPort, Target};
use rmcp::{
    Peer, RoleServer,
    model::{InitializeRequestParams, InitializeResult, ProtocolVersion},
    service::ElicitationMode,
};

use crate::{elicitation::ElicitationPort, mrtr::MrtrPort};

/// A question port for a client that declared form elicitation on a protocol that still
/// allows server-to-client requests; `None` otherwise (no port: no `ask_user`).
pub(super) fn port_for(
    peer: &Peer<RoleServer>,
    request: &InitializeRequestParams,
    result: &InitializeResult,
) -> Option<(Arc<dyn QuestionPort>, Target)> {
    if !peer.supported_elicitation_modes().contains(&ElicitationMode::Form) {
        return None;
    }
    if result.protocol_version >= ProtocolVersion::V_2026_07_28 {
        let client = &request.client_info;
        let target = Target::new(format!("the operator of {} {}", client.name, client.version));
        return Some((Arc::new(MrtrPort), target));
    }
    let client = &request.client_info;
    let target = Target::new(format!("the operator of {} {}", client.name, client.version));
    Some((Arc::new(ElicitationPort::new(peer.clone())), target))
}

/// The question port of a 2026-07-28 request, from its `_meta`: multi round-trip cards
/// when the client declares form elicitation, else none.
pub(super) fn modern_port_for(
    meta: &rmcp::model::RequestMetaObject,
) -> Option<(Arc<dyn QuestionPort>, Target)> {
    let version = meta.protocol_version()?;
    if version < ProtocolVersion::V_2026_07_28 {
        return None;
    }
    let elicitation = meta.client_capabilities()?.elicitation?;
    // An empty elicitation capability means form mode.
    if elicitation.form.is_none() && elicitation.url.is_some() {
        return None;
    }
    let client = meta
        .client_info()
        .map_or_else(|| "the MCP client".to_string(), |c| format!("{} {}", c.name, c.version));
    Some((Arc::new(MrtrPort), Target::new(format!("the operator of {client}"))))
}
