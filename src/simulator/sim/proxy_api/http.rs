//! The proxy API's routes: cae-resp-proxy's, on the simulator's HTTP plumbing
//! ([`crate::simulator::sim::http_api`]: bounded connections, bodies and deadlines). A malformed
//! request (an unknown route, a bad query, JSON that is not the expected shape, base64 that does
//! not decode) gets a 4xx with a JSON message, `{"success":false,"error":...}`, and the
//! simulator goes on.

use std::sync::Arc;

use hyper::body::Incoming;
use hyper::{Method, Request, StatusCode};
use serde::Deserialize;
use tokio::net::TcpListener;

use super::intercept::{Interceptor, Kind};
use super::{connections, stats, Api};
use crate::simulator::sim::http_api::{self, body, json, param, parse_json, Answer, Fail};
use crate::simulator::sim::upstream::Upstream;

pub(super) async fn serve(api: Arc<Api>, listener: TcpListener) {
    let shutdown = api.shared.shutdown.clone();
    http_api::serve(listener, shutdown, move |req| {
        let api = api.clone();
        async move { answer(&api, req).await }
    })
    .await
}

async fn answer(api: &Arc<Api>, req: Request<Incoming>) -> Answer {
    match route(api, req).await {
        Ok(v) => json(StatusCode::OK, &v),
        Err(Fail(status, error)) => json(
            status,
            &serde_json::json!({ "success": false, "error": error }),
        ),
    }
}

async fn route(api: &Arc<Api>, req: Request<Incoming>) -> Result<serde_json::Value, Fail> {
    let target = http_api::Target::of(&req)?;
    let (segs, query) = (target.segs(), target.query.as_str());
    match (&target.method, segs.as_slice()) {
        (&Method::GET, ["nodes"]) => Ok(serde_json::json!({ "ids": node_ids(api) })),
        (&Method::POST, ["nodes"]) => add_node(api, &body(req).await?).await,
        (&Method::DELETE, ["nodes", id]) => {
            Ok(serde_json::json!({ "success": api.remove_node(id) }))
        }
        (&Method::GET, ["stats"]) => Ok(stats(api)),
        (&Method::GET, ["connections"]) => Ok(connections(api)),
        (&Method::DELETE, ["connections", id]) => {
            Ok(serde_json::json!({ "success": api.close(id), "connectionId": id }))
        }
        (&Method::POST, ["send-to-client", id]) => {
            let encoding = encoding(query)?;
            let bytes = decode(&body(req).await?, encoding)?;
            let route = format!("send-to-client {id}");
            let ids = [id.to_string()];
            let mut results = api.inject(&route, Some(&ids), bytes.into(), false);
            Ok(results.pop().unwrap_or_default())
        }
        (&Method::POST, ["send-to-clients"]) => {
            let encoding = encoding(query)?;
            let ids = connection_ids(query)?;
            let bytes = decode(&body(req).await?, encoding)?;
            let results = api.inject("send-to-clients", Some(&ids), bytes.into(), true);
            Ok(serde_json::json!({ "results": results }))
        }
        (&Method::POST, ["send-to-all-clients"]) => {
            let encoding = encoding(query)?;
            let bytes = decode(&body(req).await?, encoding)?;
            let results = api.inject("send-to-all-clients", None, bytes.into(), false);
            Ok(serde_json::json!({ "results": results }))
        }
        (&Method::POST, ["scenarios"]) => scenarios(api, &body(req).await?),
        (&Method::POST, ["interceptors"]) => interceptors(api, &body(req).await?),
        _ => Err(target.no_route()),
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Encoding {
    Base64,
    Raw,
}

/// The query's `encoding`: `base64` (the default) or `raw`.
fn encoding(query: &str) -> Result<Encoding, Fail> {
    match param(query, "encoding")?.as_deref() {
        None | Some("base64") => Ok(Encoding::Base64),
        Some("raw") => Ok(Encoding::Raw),
        Some(other) => Err(Fail::bad(format!(
            "encoding: expected base64 or raw, found {:?}",
            crate::simulator::sim::notation::escape(other.as_bytes())
        ))),
    }
}

/// `connectionIds=a,b`: at least one.
fn connection_ids(query: &str) -> Result<Vec<String>, Fail> {
    let ids: Vec<String> = param(query, "connectionIds")?
        .unwrap_or_default()
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    if ids.is_empty() {
        return Err(Fail::bad(
            "connectionIds: at least one connection id is required",
        ));
    }
    Ok(ids)
}

/// The frame bytes a body or a JSON string stands for.
fn decode(data: &[u8], encoding: Encoding) -> Result<Vec<u8>, Fail> {
    match encoding {
        Encoding::Raw => Ok(data.to_vec()),
        Encoding::Base64 => base64(data).map_err(Fail::bad),
    }
}

/// Standard base64, `=` padding optional, whitespace ignored. Strict otherwise: the proxy's
/// decoder skips what is not base64 and sends what is left, which writes garbage into the
/// clients' connections; this one says what is wrong instead (docs/proxy-api.md).
fn base64(data: &[u8]) -> Result<Vec<u8>, String> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        } as u32)
    };
    let text: Vec<u8> = data
        .iter()
        .copied()
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    let trimmed = text
        .strip_suffix(b"==")
        .or_else(|| text.strip_suffix(b"="))
        .unwrap_or(&text);
    let mut out = Vec::with_capacity(trimmed.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for (i, &c) in trimmed.iter().enumerate() {
        let v = value(c).ok_or_else(|| {
            format!("the body is not base64 (byte {i}); send ?encoding=raw for raw bytes")
        })?;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    if trimmed.len() % 4 == 1 {
        return Err("the body is not base64 (its length is wrong)".into());
    }
    Ok(out)
}

fn node_ids(api: &Api) -> Vec<String> {
    api.lock().nodes.iter().map(|(id, _)| id.clone()).collect()
}

/// `POST /nodes`' body: the proxy takes a number or a numeric string for the ports.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct NewNode {
    listen_port: NumberOrText,
    #[serde(default)]
    listen_host: Option<String>,
    target_host: String,
    target_port: NumberOrText,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum NumberOrText {
    Number(u64),
    Text(String),
}

impl NumberOrText {
    fn port(&self, field: &str) -> Result<u16, Fail> {
        let n = match self {
            NumberOrText::Number(n) => Some(*n),
            NumberOrText::Text(t) => t.trim().parse().ok(),
        };
        n.and_then(|n| u16::try_from(n).ok())
            .ok_or_else(|| Fail::bad(format!("{field}: expected a port number")))
    }
}

async fn add_node(api: &Arc<Api>, body: &[u8]) -> Result<serde_json::Value, Fail> {
    let n: NewNode = parse_json(body)?;
    let listen_port = n.listen_port.port("listenPort")?;
    let target_port = n.target_port.port("targetPort")?;
    let host = n.listen_host.unwrap_or_else(|| "127.0.0.1".into());
    let ip: std::net::IpAddr = host
        .parse()
        .map_err(|_| Fail::bad("listenHost: expected an IP address"))?;
    let target = Upstream::parse(&format!("{}:{target_port}", n.target_host))
        .map_err(|e| Fail::bad(format!("targetHost: {e}")))?;
    api.add_node(std::net::SocketAddr::new(ip, listen_port), target)
        .await
        .map_err(Fail::bad)?;
    api.apply_defaults();
    Ok(serde_json::json!({
        "success": true,
        "cfg": {
            "listenPort": listen_port,
            "listenHost": host,
            "targetHost": n.target_host,
            "targetPort": target_port,
        }
    }))
}

#[derive(Deserialize)]
struct NewInterceptor {
    name: String,
    encoding: String,
    #[serde(rename = "match")]
    pattern: String,
    response: String,
}

/// JSON strings carry the bytes as code points below 256 in `raw` (the proxy's `binary`).
fn json_bytes(text: &str, encoding: &str, field: &str) -> Result<Vec<u8>, Fail> {
    match encoding {
        "raw" => text
            .chars()
            .map(|c| u8::try_from(u32::from(c)).ok())
            .collect::<Option<Vec<u8>>>()
            .ok_or_else(|| {
                Fail::bad(format!(
                    "{field}: a raw string holds bytes (\\u0000-\\u00ff)"
                ))
            }),
        "base64" => base64(text.as_bytes()).map_err(|e| Fail::bad(format!("{field}: {e}"))),
        other => Err(Fail::bad(format!(
            "encoding: expected base64 or raw, found {:?}",
            crate::simulator::sim::notation::escape(other.as_bytes())
        ))),
    }
}

fn interceptors(api: &Api, body: &[u8]) -> Result<serde_json::Value, Fail> {
    let i: NewInterceptor = parse_json(body)?;
    let pattern = json_bytes(&i.pattern, &i.encoding, "match")?;
    let response = json_bytes(&i.response, &i.encoding, "response")?;
    api.add_interceptor(Interceptor::new(
        i.name.clone(),
        Kind::Match { pattern, response },
    ));
    Ok(serde_json::json!({ "success": true, "name": i.name }))
}

#[derive(Deserialize)]
struct NewScenario {
    responses: Vec<String>,
    #[serde(default = "base64_name")]
    encoding: String,
}

fn base64_name() -> String {
    "base64".into()
}

fn scenarios(api: &Api, body: &[u8]) -> Result<serde_json::Value, Fail> {
    let s: NewScenario = parse_json(body)?;
    if s.responses.is_empty() {
        return Err(Fail::bad("responses: at least one response is required"));
    }
    let responses = s
        .responses
        .iter()
        .map(|r| json_bytes(r, &s.encoding, "responses"))
        .collect::<Result<Vec<_>, _>>()?;
    let total = responses.len();
    api.add_interceptor(Interceptor::new(
        "scenario-interceptor".into(),
        Kind::Queue { responses, next: 0 },
    ));
    Ok(serde_json::json!({ "success": true, "totalResponses": total }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_decodes_and_refuses_garbage() {
        assert_eq!(
            base64(b"KjENCiQ0DQpQSU5HDQo=").unwrap(),
            b"*1\r\n$4\r\nPING\r\n"
        );
        assert_eq!(
            base64(b"KjEN\nCiQ0DQpQSU5HDQo").unwrap(),
            b"*1\r\n$4\r\nPING\r\n"
        );
        assert!(base64(br#"{"data":"x"}"#).is_err());
    }

    #[test]
    fn a_raw_json_string_is_bytes() {
        assert_eq!(json_bytes("+OK\r\n", "raw", "m").unwrap(), b"+OK\r\n");
        assert!(json_bytes("\u{263a}", "raw", "m").is_err());
        assert!(json_bytes("x", "hex", "m").is_err());
    }
}
