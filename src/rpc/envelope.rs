//! The JSON-RPC 2.0 envelope: validating request objects and building response objects.
//!
//! Rules (from the JSON-RPC 2.0 specification): a request is an object with `jsonrpc: "2.0"`, a
//! string `method`, optional structured `params` and an optional `id` (string, number or null);
//! a request without `id` is a notification and gets no response; a response carries either
//! `result` or `error`, and echoes `id` (null when the id could not be read).
//! By-name params (an object) reach a command as its single positional param.

use super::error::{ErrorCode, Outcome, RpcError};
use super::value::{Map, Value};

/// A validated request.
#[derive(Debug, PartialEq)]
pub struct Request {
    pub method: String,
    pub params: Vec<Value>,
    /// `None` for a notification.
    pub id: Option<Value>,
}

/// Validates one request object. On failure, returns the error response to send (or `None`
/// when the invalid object is a notification that still must get an answer: never — invalid
/// requests always get an answer, with `id: null` when the id is unreadable).
pub fn parse_request(value: Value) -> Result<Request, Value> {
    let mut map = match value {
        Value::Object(m) => m,
        other => {
            return Err(error_response(
                Value::Null,
                RpcError::new(
                    ErrorCode::InvalidRequest,
                    format!("Invalid Request: expected an object, got {}", other.kind()),
                ),
            ))
        }
    };
    let id = match map.remove("id") {
        None => None,
        Some(v @ (Value::String(_) | Value::Number(_) | Value::Null)) => Some(v),
        Some(other) => {
            return Err(invalid(
                Value::Null,
                format!(
                    "id must be a string, a number or null, got {}",
                    other.kind()
                ),
            ))
        }
    };
    let reply_id = id.clone().unwrap_or(Value::Null);
    match map.get("jsonrpc") {
        Some(Value::String(v)) if v == "2.0" => {}
        _ => return Err(invalid(reply_id, "jsonrpc must be exactly \"2.0\"".into())),
    }
    let method = match map.remove("method") {
        Some(Value::String(m)) => m,
        Some(other) => {
            return Err(invalid(
                reply_id,
                format!("method must be a string, got {}", other.kind()),
            ))
        }
        None => return Err(invalid(reply_id, "method is missing".into())),
    };
    let params = match map.remove("params") {
        None => Vec::new(),
        Some(Value::Array(items)) => items,
        Some(obj @ Value::Object(_)) => vec![obj],
        Some(other) => {
            return Err(invalid(
                reply_id,
                format!("params must be an array or an object, got {}", other.kind()),
            ))
        }
    };
    Ok(Request { method, params, id })
}

fn invalid(id: Value, why: String) -> Value {
    error_response(
        id,
        RpcError::new(ErrorCode::InvalidRequest, format!("Invalid Request: {why}")),
    )
}

/// `{ jsonrpc: "2.0", result | error, id }` for an outcome.
pub fn response(id: Value, outcome: Outcome) -> Value {
    match outcome {
        Ok(result) => {
            let mut m = Map::with_capacity(3);
            m.push_unique("jsonrpc".into(), "2.0".into());
            m.push_unique("result".into(), result);
            m.push_unique("id".into(), id);
            Value::Object(m)
        }
        Err(e) => error_response(id, e),
    }
}

pub fn error_response(id: Value, e: RpcError) -> Value {
    let mut err = Map::with_capacity(3);
    err.push_unique("code".into(), Value::Number(e.code.code() as f64));
    err.push_unique("message".into(), e.message.into());
    if let Some(data) = e.data {
        err.push_unique("data".into(), data);
    }
    let mut m = Map::with_capacity(3);
    m.push_unique("jsonrpc".into(), "2.0".into());
    m.push_unique("error".into(), Value::Object(err));
    m.push_unique("id".into(), id);
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::json::{parse, to_string};

    fn req(text: &str) -> Result<Request, String> {
        parse_request(parse(text).unwrap()).map_err(|v| to_string(&v))
    }

    #[test]
    fn valid_requests_and_notifications() {
        let r = req(r#"{"jsonrpc":"2.0","method":"echo","params":[1],"id":7}"#).unwrap();
        assert_eq!(r.method, "echo");
        assert_eq!(r.params, vec![Value::Number(1.0)]);
        assert_eq!(r.id, Some(Value::Number(7.0)));
        let n = req(r#"{"jsonrpc":"2.0","method":"echo"}"#).unwrap();
        assert_eq!(n.id, None);
        assert!(n.params.is_empty());
        let named = req(r#"{"jsonrpc":"2.0","method":"m","params":{"a":1},"id":null}"#).unwrap();
        assert_eq!(named.params.len(), 1);
        assert_eq!(named.id, Some(Value::Null));
    }

    #[test]
    fn invalid_requests_answer_with_minus_32600() {
        for (text, id) in [
            (r#"{"jsonrpc":"2.0","method":1,"id":3}"#, "3"),
            (r#"{"jsonrpc":"1.0","method":"a","id":"x"}"#, "\"x\""),
            (r#"{"jsonrpc":"2.0","method":"a","params":"p","id":1}"#, "1"),
            (r#"{"jsonrpc":"2.0","method":"a","id":{}}"#, "null"),
            (r#"1"#, "null"),
        ] {
            let out = req(text).unwrap_err();
            assert!(out.contains(r#""code":-32600"#), "{text} → {out}");
            assert!(out.ends_with(&format!(r#""id":{id}}}"#)), "{text} → {out}");
        }
    }

    #[test]
    fn response_carries_result_xor_error() {
        let ok = to_string(&response(Value::Number(1.0), Ok("x".into())));
        assert_eq!(ok, r#"{"jsonrpc":"2.0","result":"x","id":1}"#);
        let e = RpcError::method_not_found("nope");
        let err = to_string(&response(Value::Null, Err(e)));
        assert_eq!(
            err,
            r#"{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found: \"nope\": check the name against pool.methods()"},"id":null}"#
        );
    }
}
