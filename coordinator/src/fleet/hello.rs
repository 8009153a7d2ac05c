//! A host's hello, checked whole before anything of it is stored: its role, host id, address
//! and facts. Every refusal is InvalidArgument naming the field.

use blocklab_proto::v1::{Hello, Role};
use blocklab_spec::HostRole;
use tonic::Status;

/// What a valid hello says, as the coordinator keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    pub role: HostRole,
    /// The advertised IP address, or the peer's when none is advertised.
    pub address: String,
    /// A JSON object (`{}` when the hello carries no facts).
    pub facts_json: String,
}

/// The role and host id of a hello (checked before its credential is judged).
pub fn role_and_id(hello: &Hello) -> Result<HostRole, Status> {
    let role = match Role::try_from(hello.role).unwrap_or(Role::Unspecified) {
        Role::Agent => HostRole::Agent,
        Role::Worker => HostRole::Worker,
        Role::Unspecified => {
            return Err(Status::invalid_argument(
                "hello.role: must be agent or worker",
            ));
        }
    };
    if hello.host_id.is_empty() || hello.host_id.len() > 128 {
        return Err(Status::invalid_argument(
            "hello.host_id: must be 1 to 128 characters",
        ));
    }
    Ok(role)
}

/// The address and facts of a hello whose role and id passed [`role_and_id`].
pub fn check(
    hello: &Hello,
    role: HostRole,
    peer: Option<std::net::SocketAddr>,
) -> Result<Checked, Status> {
    super::limits::hello(hello).map_err(Status::invalid_argument)?;
    let address = if hello.address.is_empty() {
        peer.map(|p| p.ip().to_string()).unwrap_or_default()
    } else {
        hello.address.clone()
    };
    if address.parse::<std::net::IpAddr>().is_err() {
        return Err(Status::invalid_argument(format!(
            "hello.address: {address:?} is not an IP address"
        )));
    }
    // No facts is an empty object; anything else must be one.
    let facts_json = if hello.facts_json.trim().is_empty() {
        "{}".to_string()
    } else {
        match serde_json::from_str::<serde_json::Value>(&hello.facts_json) {
            Ok(serde_json::Value::Object(_)) => hello.facts_json.clone(),
            Ok(_) => {
                return Err(Status::invalid_argument(
                    "hello.facts_json: must be a JSON object",
                ));
            }
            Err(e) => {
                return Err(Status::invalid_argument(format!(
                    "hello.facts_json: not JSON ({e})"
                )));
            }
        }
    };
    Ok(Checked {
        role,
        address,
        facts_json,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(facts: &str) -> Hello {
        Hello {
            host_id: "db1".into(),
            role: Role::Agent as i32,
            address: "127.0.0.1".into(),
            facts_json: facts.into(),
            ..Default::default()
        }
    }

    #[test]
    fn facts_are_a_json_object_or_nothing() {
        for (facts, stored) in [("", "{}"), ("{\"cpus\": 2}", "{\"cpus\": 2}")] {
            let h = hello(facts);
            let c = check(&h, role_and_id(&h).expect("role"), None).expect("valid");
            assert_eq!(c.facts_json, stored);
        }
        for facts in ["{", "[]", "null", "\"x\""] {
            let h = hello(facts);
            let e = check(&h, HostRole::Agent, None).expect_err(facts);
            assert_eq!(e.code(), tonic::Code::InvalidArgument);
            assert!(e.message().starts_with("hello.facts_json: "), "{e:?}");
        }
    }
}
