//! An API answer as an in-process caller reads it (the console's pages,
//! bulk apply): status and JSON body, with the refusal in words.

use axum::http::StatusCode;
use serde_json::Value;

/// An API answer as a page needs it.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: StatusCode,
    pub body: Value,
}

impl Answer {
    pub fn ok(&self) -> bool {
        self.status.is_success()
    }

    /// The `data` of a success, or the whole body.
    pub fn data(&self) -> &Value {
        self.body.get("data").unwrap_or(&self.body)
    }

    /// The refusal in words: the message, then each field's problems.
    pub fn message(&self) -> String {
        let mut out = self
            .body
            .get("message")
            .or_else(|| self.body.get("error"))
            .and_then(Value::as_str)
            .unwrap_or("The request failed.")
            .to_owned();
        if let Some(fields) = self.body.get("errors").and_then(Value::as_object) {
            for (field, problems) in fields {
                let said: Vec<&str> = problems.as_array().into_iter().flatten().filter_map(Value::as_str).collect();
                if !said.is_empty() {
                    out.push_str(&format!(" {field}: {}.", said.join("; ")));
                }
            }
        }
        out
    }
}
